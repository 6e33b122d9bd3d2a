#!/usr/bin/env bash
# Boots Debian's own kernels under QEMU and runs a command of this machine in them: warden's
# test binaries, built here, run unchanged in a guest that sees this machine's files at the same
# paths. docs/guests.md says what each guest configuration is for.
#
#   bash scripts/guest.sh fetch [--refresh]
#       Downloads Debian 12's cloud kernels 6.1 (bookworm) and 6.12 (bookworm-backports) into
#       target/guests/kernel-VERSION/ (apt-get download and dpkg-deb -x: nothing is installed,
#       and a private apt configuration leaves this machine's sources and lists untouched), and
#       builds each one's initramfs: busybox and the modules the guest needs. Re-runs reuse what
#       is there (--refresh downloads anew).
#
#   bash scripts/guest.sh run --kernel 6.1|6.12 [--systemd] [--no-userns] [--no-landlock]
#                             [--ext4] [--mem 3G] [--cpus 2] [--timeout SECONDS]
#                             [--env NAME[=VALUE]]... [--log FILE] -- COMMAND [ARG]...
#       Boots a guest whose root is this machine's root, shared read-only (virtiofs) under a
#       tmpfs overlay for writes (or, with --ext4, a block-device ext4 root), runs COMMAND as
#       root in the caller's working directory, streams its stdout and stderr, and exits with its
#       status. A guest that fails to boot, oopses or outlives --timeout (default 1800 s) exits
#       non-zero (124 for a timeout, 125 for a guest that ended without the command's status)
#       with a message on stderr. --log FILE keeps the whole console (kernel, init, command).
#         --systemd      systemd is PID 1 (cgroup v2 only), COMMAND a systemd.run= unit
#                        (otherwise busybox init, cgroup2 at /sys/fs/cgroup, every controller on)
#         --no-userns    user.max_user_namespaces=0: user namespaces refused
#         --no-landlock  the kernel's lsm= list without landlock
#         --ext4         the root is an ext4 file system on a virtio-blk disk
#         --disk-tmp     (with --ext4) /tmp on that root, as Debian 12 installs it, not a tmpfs
#       Environment passed to COMMAND: PATH, TERM, RUST_TEST_THREADS, RUST_BACKTRACE, RUST_LOG,
#       RUST_MIN_STACK, every WARDEN_* variable of the caller, and each --env (NAME=VALUE, or
#       NAME for the caller's value).
set -euo pipefail
caller_cwd=$PWD
cd "$(dirname "$0")/.."
repo=$(pwd)
cache=${WARDEN_GUEST_CACHE:-$repo/target/guests}
here=$repo/scripts/guest

die() {
  echo "guest.sh: $*" >&2
  exit 2
}

# The kernels of the matrix: the name on the command line, the suite Debian ships it in, and
# how its package is found (the cloud flavour: virtio, virtiofs, overlay, no sound or drm).
kernel_suite() {
  case $1 in
    6.1) echo bookworm ;;
    6.12) echo bookworm-backports ;;
    *) die "unknown kernel '$1' (6.1 or 6.12)" ;;
  esac
}

# ---------------------------------------------------------------------------------------------
# fetch

# apt with a configuration of its own: its own source list, lists and cache under
# $cache/apt, so neither this machine's sources nor its package lists change.
apt_private() {
  local tool=$1
  shift
  "$tool" -o Dir::Etc::SourceList="$cache/apt/sources.list" \
    -o Dir::Etc::SourceParts="$cache/apt/sources.list.d" \
    -o Dir::State::Lists="$cache/apt/lists" \
    -o Dir::Cache="$cache/apt/cache" \
    -o Debug::NoLocking=1 -o APT::Sandbox::User=root "$@"
}

apt_lists() {
  mkdir -p "$cache/apt/lists/partial" "$cache/apt/cache/archives/partial" \
    "$cache/apt/sources.list.d"
  local mirror=${WARDEN_GUEST_MIRROR:-http://deb.debian.org}
  cat >"$cache/apt/sources.list" <<EOF
deb $mirror/debian bookworm main
deb $mirror/debian bookworm-updates main
deb $mirror/debian-security bookworm-security main
deb $mirror/debian bookworm-backports main
EOF
  # A day-old list is good enough; apt-get update costs about 5 s and a download.
  if [ -z "$(find "$cache/apt/lists" -maxdepth 1 -name '*_Packages*' -mmin -1440 2>/dev/null)" ] ||
    [ "${refresh:-0}" = 1 ]; then
    echo "guest.sh: apt-get update (private lists in $cache/apt)" >&2
    apt_private apt-get update -qq >/dev/null || die "apt-get update failed (network? $mirror)"
  fi
}

# The package and version of the newest cloud kernel of a version, from the metapackage
# linux-image-cloud-amd64's dependencies: bookworm's for 6.1, bookworm-backports' (~bpo) for 6.12.
kernel_package() {
  local ver=$1 suite
  suite=$(kernel_suite "$ver")
  apt_private apt-cache show linux-image-cloud-amd64 | awk -v ver="$ver" -v suite="$suite" '
    /^Version:/ { v = $2 }
    /^Depends:/ {
      bpo = (v ~ /bpo/)
      if ((suite == "bookworm-backports") != bpo) next
      n = split($0, dep, /[ ,]+/)
      for (i = 1; i <= n; i++)
        if (dep[i] ~ ("^linux-image-" ver "[.-]") && dep[i] ~ /-cloud-amd64$/) print dep[i] "=" v
    }' | sort -V | tail -n 1
}

# Modules the initramfs loads, by config option: what the kernel builds as a module (=m) is
# found with the modules it depends on (modinfo's depends), in load order; built-in ones need
# nothing.
WANT_CONFIGS="CONFIG_VIRTIO_PCI CONFIG_VIRTIO_BLK CONFIG_FUSE_FS CONFIG_VIRTIO_FS CONFIG_OVERLAY_FS
CONFIG_EXT4_FS CONFIG_TMPFS"

module_name_for() {
  case $1 in
    CONFIG_VIRTIO_PCI) echo virtio_pci ;;
    CONFIG_VIRTIO_BLK) echo virtio_blk ;;
    CONFIG_FUSE_FS) echo fuse ;;
    CONFIG_VIRTIO_FS) echo virtiofs ;;
    CONFIG_OVERLAY_FS) echo overlay ;;
    CONFIG_EXT4_FS) echo ext4 ;;
    *) echo "" ;;
  esac
}

# Appends MODULE (after its dependencies) to $order, once.
resolve_module() {
  local name=$1 dir=$2 file dep
  case " $order " in *" $name "*) return 0 ;; esac
  file=$(find "$dir" -name "$name.ko*" -print -quit)
  if [ -z "$file" ]; then
    # Built in (modules.builtin names it), or the config lies: the guest will say.
    grep -q "/$name.ko\$" "$dir/modules.builtin" 2>/dev/null ||
      echo "guest.sh: warning: module $name not found under $dir" >&2
    return 0
  fi
  local plain=$work/$name.ko
  case $file in
    *.xz) busybox xzcat "$file" >"$plain" ;;
    *.zst) zstd -dq -o "$plain" "$file" ;;
    *.gz) gzip -dc "$file" >"$plain" ;;
    *) cp "$file" "$plain" ;;
  esac
  # The module's .modinfo section: NUL-separated key=value strings, among them depends=.
  for dep in $(tr '\0' '\n' <"$plain" | sed -n 's/^depends=//p' | tr ',' ' '); do
    resolve_module "$dep" "$dir"
  done
  order="$order $name"
}

build_initramfs() {
  local kdir=$1 kver=$2 config=$3 opt value
  work=$(mktemp -d "$cache/initramfs.XXXXXX")
  local root=$work/root
  mkdir -p "$root/bin" "$root/lib/modules" "$root/proc" "$root/sys" "$root/dev" "$root/newroot"
  cp /bin/busybox "$root/bin/busybox"
  order=""
  for opt in $WANT_CONFIGS; do
    value=$(grep -E "^$opt=" "$config" | cut -d= -f2 || true)
    if [ "$value" = m ]; then
      resolve_module "$(module_name_for "$opt")" "$kdir/tree/lib/modules/$kver"
    elif [ "$value" != y ]; then
      echo "guest.sh: warning: $kver has $opt=${value:-unset}" >&2
    fi
  done
  local m
  for m in $order; do mv "$work/$m.ko" "$root/lib/modules/"; done
  echo "$order" >"$root/lib/modules/order"
  cp "$here/init" "$root/init"
  chmod 755 "$root/init" "$root/bin/busybox"
  (cd "$root" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 >"$kdir/initramfs.gz.tmp"
  mv "$kdir/initramfs.gz.tmp" "$kdir/initramfs.gz"
  rm -rf "$work"
  echo "guest.sh: $kver: initramfs with modules:${order:- none}" >&2
}

cmd_fetch() {
  refresh=0
  while [ $# -gt 0 ]; do
    case $1 in
      --refresh) refresh=1 ;;
      *) die "fetch: unknown option $1" ;;
    esac
    shift
  done
  command -v busybox >/dev/null || die "busybox not found (bash scripts/setup.sh installs busybox-static)"
  mkdir -p "$cache"
  local ver pkg kdir deb kver
  for ver in 6.1 6.12; do
    kdir=$cache/kernel-$ver
    if [ $refresh = 0 ] && [ -s "$kdir/package" ] && [ -e "$kdir/vmlinuz" ]; then
      # The initramfs follows scripts/guest/init: rebuilt when that changes.
      if [ ! -e "$kdir/initramfs.gz" ] || [ "$here/init" -nt "$kdir/initramfs.gz" ] ||
        [ "$0" -nt "$kdir/initramfs.gz" ]; then
        build_initramfs "$kdir" "$(cat "$kdir/kver")" "$kdir/config"
      fi
      echo "guest.sh: kernel $ver: $(cat "$kdir/package") (cached)" >&2
      continue
    fi
    apt_lists
    pkg=$(kernel_package "$ver")
    [ -n "$pkg" ] || die "no linux-image-$ver cloud kernel in $(kernel_suite "$ver")"
    echo "guest.sh: kernel $ver: downloading $pkg" >&2
    rm -rf "$kdir"
    mkdir -p "$kdir/deb"
    (cd "$kdir/deb" && apt_private apt-get download -qq "$pkg" >/dev/null) ||
      die "apt-get download $pkg failed"
    deb=$(ls "$kdir/deb"/*.deb)
    dpkg-deb -x "$deb" "$kdir/tree"
    rm -f "$deb"
    kver=$(ls "$kdir/tree/lib/modules")
    ln -sfn "tree/boot/vmlinuz-$kver" "$kdir/vmlinuz"
    ln -sfn "tree/boot/config-$kver" "$kdir/config"
    echo "$kver" >"$kdir/kver"
    build_initramfs "$kdir" "$kver" "$kdir/config"
    echo "$pkg" >"$kdir/package"
  done
}

# ---------------------------------------------------------------------------------------------
# run

# Single-quoted for sh (dash and busybox read the job's files, so no bash $'..').
shq() {
  local s=${1//\'/\'\\\'\'}
  printf "'%s'" "$s"
}

# PVM (a paravirtual KVM, /sys/module/kvm_pvm) runs no ordinary guest kernel: TCG there, and
# wherever /dev/kvm is missing or refused. Real KVM (vmx or svm) is the fast path.
accel_kind() {
  if [ "${WARDEN_GUEST_ACCEL:-}" = tcg ] || [ -e /sys/module/kvm_pvm ] || [ ! -w /dev/kvm ] ||
    ! grep -qwE 'vmx|svm' /proc/cpuinfo; then
    echo tcg
  else
    echo kvm
  fi
}

accel_args() {
  if [ "$accel" = tcg ]; then
    # QEMU 7.2's TCG miscomputes the flags of a gs-prefixed cmpxchg16b, which 6.12's per-CPU
    # slab fast path uses: that guest oopses within seconds of most boots without cx16. 6.1 does
    # not use it and keeps the CPU model whole.
    local cpu=max
    [ "$kernel" = 6.1 ] || cpu=max,-cx16
    echo -accel tcg,thread=multi -cpu $cpu
  else
    echo -accel kvm -cpu host
  fi
}

cleanup() {
  local pid
  for pid in ${qemu_pid:-} ${vfs_pid:-}; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in ${qemu_pid:-} ${vfs_pid:-} ${cat_pids:-}; do
    # A QEMU that ignores SIGTERM for 5 s gets SIGKILL.
    local i=0
    while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  qemu_pid="" vfs_pid="" cat_pids=""
  # --log keeps the console of a guest stopped early too.
  if [ -n "${log:-}" ] && [ -n "${tmp:-}" ] && [ -f "$tmp/console" ]; then
    cp "$tmp/console" "$log" 2>/dev/null || true
  fi
  if [ -n "${tmp:-}" ] && [ -d "$tmp" ]; then
    # Nothing was mounted on the host: virtiofsd's bind of / lived in its own mount namespace.
    rm -rf "$tmp"
  fi
}

cmd_run() {
  kernel="" systemd=0 no_userns=0 no_landlock=0 ext4=0 disk_tmp=0 mem=3G cpus=2 timeout=1800 log=""
  local envs=()
  while [ $# -gt 0 ]; do
    case $1 in
      --kernel) kernel=${2:?--kernel needs 6.1 or 6.12}; shift ;;
      --systemd) systemd=1 ;;
      --no-userns) no_userns=1 ;;
      --no-landlock) no_landlock=1 ;;
      --ext4) ext4=1 ;;
      --disk-tmp) disk_tmp=1 ;;
      --mem) mem=${2:?--mem needs a size}; shift ;;
      --cpus) cpus=${2:?--cpus needs a count}; shift ;;
      --timeout) timeout=${2:?--timeout needs seconds}; shift ;;
      --env) envs+=("${2:?--env needs NAME or NAME=VALUE}"); shift ;;
      --log) log=${2:?--log needs a file}; shift ;;
      --) shift; break ;;
      *) die "run: unknown option '$1' (the command goes after --)" ;;
    esac
    shift
  done
  [ $# -gt 0 ] || die "run: no command (guest.sh run --kernel 6.1 -- COMMAND ARGS...)"
  [ -n "$kernel" ] || die "run: --kernel 6.1 or --kernel 6.12"
  [ $disk_tmp = 0 ] || [ $ext4 = 1 ] || die "run: --disk-tmp puts /tmp on the ext4 root: it needs --ext4"
  kernel_suite "$kernel" >/dev/null
  [[ $timeout =~ ^[0-9]+$ ]] || die "run: --timeout takes whole seconds"
  local kdir=$cache/kernel-$kernel
  [ -e "$kdir/initramfs.gz" ] && [ -e "$kdir/vmlinuz" ] ||
    die "run: kernel $kernel not fetched (bash scripts/guest.sh fetch)"
  [ ! "$here/init" -nt "$kdir/initramfs.gz" ] || die "run: scripts/guest/init changed: bash scripts/guest.sh fetch rebuilds the initramfs"
  local qemu=${WARDEN_GUEST_QEMU:-qemu-system-x86_64}
  local virtiofsd=${WARDEN_GUEST_VIRTIOFSD:-/usr/lib/qemu/virtiofsd}
  command -v "$qemu" >/dev/null || die "run: $qemu not found (bash scripts/setup.sh installs qemu-system-x86)"
  [ -x "$virtiofsd" ] || die "run: $virtiofsd not found (qemu-system-x86 ships it)"
  [ "$(id -u)" -eq 0 ] || die "run: needs root (virtiofsd shares / and binds it in a mount namespace)"

  tmp=$(mktemp -d "${TMPDIR:-/tmp}/warden-guest.XXXXXX")
  trap cleanup EXIT
  trap 'echo "guest.sh: interrupted; stopping the guest" >&2; exit 130' INT TERM HUP

  # The job: what the runner reads in the guest (/run/warden-guest), appended to the
  # initramfs as a second cpio archive.
  local job=$tmp/job/job name value
  mkdir -p "$job"
  cp "$here/runner" "$job/runner"
  chmod 755 "$job/runner"
  printf '%s\n' "$caller_cwd" >"$job/cwd"
  {
    echo "export HOME=/root"
    for name in PATH TERM RUST_TEST_THREADS RUST_BACKTRACE RUST_LOG RUST_MIN_STACK $(compgen -e | grep '^WARDEN_' || true); do
      case $name in WARDEN_GUEST_*) continue ;; esac
      if [ -n "${!name+set}" ]; then echo "export $name=$(shq "${!name}")"; fi
    done
    for value in "${envs[@]}"; do
      name=${value%%=*}
      [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "run: --env '$value': not NAME or NAME=VALUE"
      if [[ $value == *=* ]]; then
        echo "export $name=$(shq "${value#*=}")"
      elif [ -n "${!name+set}" ]; then
        echo "export $name=$(shq "${!name}")"
      fi
    done
  } >"$job/env"
  {
    printf 'set --'
    local a
    for a in "$@"; do printf ' %s' "$(shq "$a")"; done
    echo
  } >"$job/argv"
  : >"$job/mounts"

  local append="console=ttyS0 quiet panic=-1 oops=panic rdinit=/init mitigations=off"
  # mitigations=off: speculation mitigations cost TCG much (page-table isolation on every
  # syscall) and change nothing warden relies on.
  if [ $systemd = 1 ]; then
    append+=" warden.init=systemd systemd.unified_cgroup_hierarchy=1"
    append+=" systemd.run=/run/warden-guest/runner"
    append+=" systemd.run_success_action=poweroff systemd.run_failure_action=poweroff"
    append+=" systemd.show_status=false systemd.log_level=warning"
  fi
  [ $no_userns = 1 ] && append+=" sysctl.user.max_user_namespaces=0"
  if [ $no_landlock = 1 ]; then
    local lsm
    lsm=$(sed -n 's/^CONFIG_LSM="\(.*\)"$/\1/p' "$kdir/config" | tr ',' '\n' | grep -vx landlock | paste -sd, -)
    append+=" lsm=$lsm"
  fi

  # Extra kernel parameters, for debugging a guest (e.g. systemd.log_level=info).
  append+=${WARDEN_GUEST_APPEND:+ $WARDEN_GUEST_APPEND}

  local drive=()
  if [ $ext4 = 1 ]; then
    append+=" warden.root=ext4"
    [ $disk_tmp = 0 ] || append+=" warden.tmp=disk"
    make_ext4_root "$tmp/root.ext4" "$job/mounts"
    drive=(-drive "file=$tmp/root.ext4,format=raw,if=virtio,cache=unsafe")
  fi

  (cd "$tmp/job" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 >"$tmp/job.cpio.gz"
  cat "$kdir/initramfs.gz" "$tmp/job.cpio.gz" >"$tmp/initrd"

  # virtiofsd serves a read-only, non-recursive bind of / made in a mount namespace of its
  # own: the guest sees the host's root file system and none of /proc, /sys, /dev or other
  # mounts; the bind ends with virtiofsd. (QEMU 7.2's virtiofsd has no read-only option.)
  mkdir -p "$tmp/share"
  unshare --mount --propagation private sh -c '
    mount --bind / "$1" && mount -o remount,bind,ro "$1" || exit 1
    exec "$2" --socket-path="$3" -o source="$1" -o cache=always -o sandbox=chroot -o log_level=err
  ' sh "$tmp/share" "$virtiofsd" "$tmp/vfs.sock" >"$tmp/virtiofsd.log" 2>&1 &
  vfs_pid=$!
  local i=0
  while [ ! -S "$tmp/vfs.sock" ]; do
    kill -0 $vfs_pid 2>/dev/null || die "run: virtiofsd failed: $(cat "$tmp/virtiofsd.log")"
    i=$((i + 1))
    [ $i -lt 100 ] || die "run: virtiofsd did not start in 10 s"
    sleep 0.1
  done

  local accel_opts
  accel=$(accel_kind)
  accel_opts=$(accel_args)
  : >"$tmp/status"
  : >"$tmp/console"
  # ttyS0: the kernel's console (kept, shown on failure); ttyS1, ttyS2: the command's stdout and
  # stderr, through fifos to a cat each that writes to ours (QEMU writing to a file of ours
  # would open it anew, with an offset of its own); ttyS3: status.
  mkfifo "$tmp/stdout.in" "$tmp/stdout.out" "$tmp/stderr.in" "$tmp/stderr.out"
  cat "$tmp/stdout.out" &
  cat_pids="$!"
  cat "$tmp/stderr.out" >&2 &
  cat_pids+=" $!"
  # shellcheck disable=SC2086
  "$qemu" -nodefaults -no-user-config -display none -no-reboot \
    -machine q35 $accel_opts -smp "$cpus" -m "$mem" \
    -object "memory-backend-memfd,id=mem,size=$mem,share=on" -numa node,memdev=mem \
    -kernel "$kdir/vmlinuz" -initrd "$tmp/initrd" -append "$append" \
    -chardev "socket,id=vfs,path=$tmp/vfs.sock" -device vhost-user-fs-pci,chardev=vfs,tag=host \
    "${drive[@]}" \
    -chardev "file,id=s0,path=$tmp/console" -serial chardev:s0 \
    -chardev "pipe,id=s1,path=$tmp/stdout" -serial chardev:s1 \
    -chardev "pipe,id=s2,path=$tmp/stderr" -serial chardev:s2 \
    -chardev "file,id=s3,path=$tmp/status" -serial chardev:s3 \
    </dev/null >"$tmp/qemu.log" 2>&1 &
  qemu_pid=$!
  local start=$SECONDS timed_out=0
  while kill -0 $qemu_pid 2>/dev/null; do
    if [ $((SECONDS - start)) -ge "$timeout" ]; then
      timed_out=1
      break
    fi
    sleep 1
  done
  local qemu_rc=0
  if [ $timed_out = 1 ]; then
    kill $qemu_pid 2>/dev/null || true
  fi
  wait $qemu_pid 2>/dev/null || qemu_rc=$?
  qemu_pid=""
  # QEMU gone, the fifos have no writer: the cats end when they have passed on the rest.
  wait $cat_pids 2>/dev/null || true
  cat_pids=""
  local elapsed=$((SECONDS - start))
  if [ -n "$log" ]; then cp "$tmp/console" "$log"; fi

  local status rc
  status=$(tail -n 1 "$tmp/status" | tr -d '\r')
  local oops=""
  oops=$(grep -aE 'Kernel panic|Oops:|BUG:|general protection fault|kernel BUG at' "$tmp/console" | head -n 3 || true)
  if [ $timed_out = 1 ]; then
    echo "guest.sh: TIMEOUT: the $kernel guest ran past --timeout $timeout s (last state: ${status:-none}); killed" >&2
    tail -n 30 "$tmp/console" | sed 's/^/guest console: /' >&2
    exit 124
  fi
  if [ -n "$oops" ]; then
    echo "guest.sh: the $kernel guest's kernel oopsed or panicked after ${elapsed}s:" >&2
    grep -aE -A 30 'Kernel panic|Oops:|BUG:|general protection fault|kernel BUG at' "$tmp/console" | head -n 60 | sed 's/^/guest console: /' >&2
    exit 125
  fi
  case $status in
    "status=exited rc="*)
      rc=${status#status=exited rc=}
      [ -z "${WARDEN_GUEST_VERBOSE:-}" ] || echo "guest.sh: $kernel guest ($accel): $elapsed s, exit $rc" >&2
      exit "$rc"
      ;;
  esac
  echo "guest.sh: the $kernel guest ended without the command's status after ${elapsed}s (state: ${status:-never booted}; QEMU exit $qemu_rc)" >&2
  sed 's/^/qemu: /' "$tmp/qemu.log" >&2
  tail -n 40 "$tmp/console" | sed 's/^/guest console: /' >&2
  exit 125
}

# An ext4 root for --ext4: a sparse image made with mkfs.ext4 -d from a staging tree that holds
# what is the root's own (a copy of /etc, /var's skeleton, /root, mount points) and lists in
# MOUNTS what the guest's init mounts from the share: /usr read-only, every other top-level
# directory of the host as an overlay with its upper layer on this disk.
make_ext4_root() {
  local image=$1 mounts=$2 st=$tmp/ext4root entry name
  mkdir -p "$st"/{proc,sys,dev,run,tmp,mnt,media,srv,home,root,boot,var/{tmp,log,cache,lib,spool}}
  chmod 1777 "$st/tmp" "$st/var/tmp"
  chmod 700 "$st/root"
  ln -s /run "$st/var/run"
  ln -s /run/lock "$st/var/lock"
  cp -a /etc "$st/etc"
  for entry in /*; do
    name=${entry#/}
    if [ -L "$entry" ]; then
      # bin -> usr/bin and the like (merged /usr): the same links.
      [ -e "$st/$name" ] || cp -a "$entry" "$st/$name"
      continue
    fi
    [ -d "$entry" ] || continue
    case $name in
      proc | sys | dev | run | tmp | etc | var | root | boot | lost+found | mnt | media | old_root) continue ;;
      usr) echo "bind $name" >>"$mounts" ;;
      *) echo "overlay $name" >>"$mounts" ;;
    esac
    mkdir -p "$st/$name"
  done
  rm -f "$st/.dockerenv"
  truncate -s 8G "$image"
  mkfs.ext4 -q -F -L guest-root -d "$st" "$image" ||
    die "run: mkfs.ext4 -d failed"
  rm -rf "$st"
}

case ${1:-} in
  fetch) shift; cmd_fetch "$@" ;;
  run) shift; cmd_run "$@" ;;
  *) die "usage: guest.sh fetch [--refresh] | guest.sh run --kernel 6.1|6.12 [options] -- COMMAND..." ;;
esac
