#!/usr/bin/env bash
# Installs what warden needs on a Debian-like machine and builds it (release).
# Needs: root for apt-get (or the packages already present), a Rust toolchain (cargo).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
[ -e /usr/include/seccomp.h ] || need+=(libseccomp-dev)
# warden is built for musl (.cargo/config.toml); libseccomp is built for it from source
# (scripts/libseccomp-musl.sh), whose configure asks for gperf.
command -v musl-gcc >/dev/null || need+=(musl-tools)
command -v gperf >/dev/null || need+=(gperf)
command -v cc >/dev/null || need+=(gcc libc6-dev)
command -v make >/dev/null || need+=(make)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v setpriv >/dev/null || need+=(util-linux)
[ -x /usr/bin/python3 ] || need+=(python3)
[ -x /usr/bin/curl ] || need+=(curl)
[ -x /usr/bin/strace ] || need+=(strace)
# The benchmark's peer row (bench/run.sh startup: bubblewrap starting /bin/true).
[ -x /usr/bin/bwrap ] || need+=(bubblewrap)
# Programs the compatibility tests (crates/warden-cli/tests/compat.rs) drive.
[ -x /usr/bin/git ] || need+=(git)
[ -x /usr/bin/xz ] || need+=(xz-utils)
[ -x /usr/bin/sqlite3 ] || need+=(sqlite3)
# A daemon that drops privileges to its workers (compat.rs: nginx serving a file to curl).
[ -x /usr/sbin/nginx ] || need+=(nginx-light)
[ -x /usr/bin/node ] || need+=(nodejs)
[ -x /usr/bin/uptime ] || need+=(procps)
# The kernel matrix (scripts/guest.sh, scripts/matrix.sh): QEMU and its virtiofsd, busybox for
# the guests' initramfs, mkfs.ext4 for an ext4 root (apt-get download and dpkg-deb fetch the
# guests' Debian kernels without installing them). Without recommends: qemu-system-x86's
# would bring a graphical stack and firmware the guests do not use.
need_norec=()
[ -x /usr/bin/qemu-system-x86_64 ] && [ -x /usr/lib/qemu/virtiofsd ] || need_norec+=(qemu-system-x86)
[ -x /bin/busybox ] || need_norec+=(busybox-static)
[ -x /sbin/mkfs.ext4 ] || need_norec+=(e2fsprogs)
if [ ${#need[@]} -gt 0 ] || [ ${#need_norec[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages: ${need[*]} ${need_norec[*]}; install them as root (apt-get install ${need[*]}; apt-get install --no-install-recommends ${need_norec[*]})" >&2
    exit 1
  fi
  echo "setup: installing ${need[*]} ${need_norec[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  if [ ${#need[@]} -gt 0 ]; then apt-get install -y -qq "${need[@]}" >/dev/null; fi
  if [ ${#need_norec[@]} -gt 0 ]; then
    apt-get install -y -qq --no-install-recommends "${need_norec[@]}" >/dev/null
  fi
fi
if ! command -v cargo >/dev/null; then
  echo "setup: cargo not found; install Rust (rustup) first" >&2
  exit 1
fi
if ! rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl; then
  echo "setup: adding Rust's x86_64-unknown-linux-musl target" >&2
  rustup target add x86_64-unknown-linux-musl >/dev/null
fi
bash scripts/libseccomp-musl.sh
cargo build --release --locked -q
# .cargo/config.toml builds for musl by name, which puts the binary in
# target/x86_64-unknown-linux-musl/release; target/release/warden is where the README and the
# scripts run it from.
triple=x86_64-unknown-linux-musl
mkdir -p target/release
ln -sfn "../$triple/release/warden" target/release/warden
echo "setup: built $(pwd)/target/$triple/release/warden (linked from target/release/warden)" >&2
# warden is linked statically, against musl: no dynamic loader, no libgcc_s, and none of
# glibc's start-up probes of the CPU (cpuid, which traps to the hypervisor on a virtual
# machine: about 0.3 ms of every start, docs/benchmarks.md). warden names no user, host or
# locale, so nothing needs glibc's NSS or dlopen.
