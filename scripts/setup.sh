#!/usr/bin/env bash
# Installs what warden needs on a Debian-like machine and builds it (release).
# Needs: root for apt-get (or the packages already present), a Rust toolchain (cargo).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
[ -e /usr/include/seccomp.h ] || need+=(libseccomp-dev)
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
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages: ${need[*]}; install them as root (apt-get install ${need[*]})" >&2
    exit 1
  fi
  echo "setup: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! command -v cargo >/dev/null; then
  echo "setup: cargo not found; install Rust (rustup) first" >&2
  exit 1
fi
cargo build --release --locked -q
# .cargo/config.toml builds for the host by name (so that warden links statically), which puts
# the binary in target/<host>/release; target/release/warden is where the README and the
# scripts run it from.
host=$(rustc -vV | sed -n 's/^host: //p')
mkdir -p target/release
ln -sfn "../$host/release/warden" target/release/warden
echo "setup: built $(pwd)/target/$host/release/warden (linked from target/release/warden)" >&2
