#!/usr/bin/env bash
# Skipped tests, counted and checked (scripts/test.sh uses both commands).
#
#   bash scripts/skips.sh probe
#       Prints, comma-separated, the keys of what this machine has among the only reasons a test
#       may skip (`Lack` in crates/warden-cli/tests/common/mod.rs): root, nobody, i386, x32,
#       io_uring, memory-cgroup, second-cpu, program, jdk, xattrat, mdwe, landlock, landlock-abi5,
#       tmpfs-xattr. Each probe asks the machine the way the
#       tests do. test.sh passes the list to the tests as WARDEN_REQUIRE: a test that skips for
#       lack of one of them fails.
#
#   bash scripts/skips.sh summary DIR [CARGO_LOG]...
#       Reports the skips the tests recorded in DIR/skips.tsv (WARDEN_SKIP_DIR) and the ignored
#       tests (known limits) the cargo logs name, and fails if a test skipped for lack of
#       something WARDEN_REQUIRE says this machine has.
set -euo pipefail
cd "$(dirname "$0")/.."

probe() {
  local have=()
  local root=no
  if [ "$(id -u)" -eq 0 ]; then root=yes; have+=(root); fi
  if [ $root = yes ] && [ -x /usr/bin/setpriv ]; then have+=(nobody); fi
  if [ "$(uname -m)" = x86_64 ]; then
    # i386: `int $0x80` runs getpid (20) when the kernel emulates i386, and faults or fails
    # with ENOSYS when it does not.
    local tmp
    tmp=$(mktemp -d)
    printf '%s\n' 'int main(void) { long r = 20; __asm__ volatile("int $0x80" : "+a"(r) : : "memory"); return r > 0 ? 0 : 1; }' >"$tmp/i386.c"
    if cc -o "$tmp/i386" "$tmp/i386.c" 2>/dev/null && ( "$tmp/i386" ) 2>/dev/null; then
      have+=(i386)
    fi
    rm -rf "$tmp"
    # x32: getpid with the x32 bit (0x40000000 | 39) answers only where the kernel has x32.
    if /usr/bin/python3 -c 'import ctypes,sys; sys.exit(0 if ctypes.CDLL(None).syscall(0x40000000 | 39) > 0 else 1)' 2>/dev/null; then
      have+=(x32)
    fi
  fi
  if [ ! -e /proc/sys/kernel/io_uring_disabled ] || [ "$(cat /proc/sys/kernel/io_uring_disabled)" = 0 ]; then
    have+=(io_uring)
  fi
  if [ -e /sys/fs/cgroup/memory/memory.limit_in_bytes ] || [ -e /sys/fs/cgroup/cgroup.controllers ]; then
    have+=(memory-cgroup)
  fi
  if [ "$(nproc)" -ge 2 ]; then have+=(second-cpu); fi
  # mdwe: PR_GET_MDWE (66) answers where the kernel has memory-deny-write-execute (Linux 6.3).
  if /usr/bin/python3 -c 'import ctypes,sys; sys.exit(0 if ctypes.CDLL(None).prctl(66,0,0,0,0) >= 0 else 1)' 2>/dev/null; then
    have+=(mdwe)
  fi
  # xattrat: listxattrat (465, Linux 6.13) answers anything but ENOSYS where the kernel has it.
  if /usr/bin/python3 -c 'import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); r=l.syscall(465,-100,b"/",0,None,0); sys.exit(1 if r<0 and ctypes.get_errno()==38 else 0)' 2>/dev/null; then
    have+=(xattrat)
  fi
  # landlock-abi5: Landlock's ABI (landlock_create_ruleset's version query) is 5 or more.
  if /usr/bin/python3 -c 'import ctypes,sys; sys.exit(0 if ctypes.CDLL(None).syscall(444,None,0,1) >= 5 else 1)' 2>/dev/null; then
    have+=(landlock-abi5)
  fi
  # tmpfs-xattr: the kernel's tmpfs (a memfd's) takes a user.* extended attribute (Linux 6.6).
  if /usr/bin/python3 -c "import os; os.setxattr(os.memfd_create('p'), 'user.warden', b'y')" 2>/dev/null; then
    have+=(tmpfs-xattr)
  fi
  if [ -x /usr/bin/python3 ] && [ -x /usr/bin/curl ] && [ -x /usr/bin/strace ] &&
     [ -x /usr/bin/git ] && [ -x /usr/bin/xz ] && [ -x /usr/bin/sqlite3 ] &&
     [ -x /usr/sbin/nginx ] && [ -x /usr/bin/node ] && [ -x /usr/bin/uptime ]; then
    have+=(program)
  fi
  if [ -x /usr/bin/javac ] && [ -x /usr/bin/java ]; then have+=(jdk); fi
  # landlock: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) gives the ABI
  # version where the kernel enforces Landlock (not built in, or not in lsm=: an error).
  if /usr/bin/python3 -c 'import ctypes,sys; sys.exit(0 if ctypes.CDLL(None).syscall(444, None, 0, 1) >= 1 else 1)' 2>/dev/null; then
    have+=(landlock)
  fi
  local IFS=,
  echo "${have[*]}"
}

summary() {
  local dir=$1
  shift
  local required=",${WARDEN_REQUIRE:-},"
  local skipped=0 wrong=0 ignored=0 parts=0
  echo "== skipped and ignored tests"
  if [ -s "$dir/skips.tsv" ]; then
    # The adversarial suite runs twice (scripts/test.sh): the same skip is counted once.
    while IFS=$'\t' read -r key test reason; do
      skipped=$((skipped + 1))
      if [[ $required == *",$key,"* ]]; then
        wrong=$((wrong + 1))
        echo "SKIP $test [$key]: $reason -- SHOULD HAVE RUN: this machine has $key"
      else
        echo "SKIP $test [$key]: $reason"
      fi
    done < <(sort -u "$dir/skips.tsv")
  fi
  # libtest's own line for an #[ignore = "reason"] test: `test NAME ... ignored, REASON`.
  if [ $# -gt 0 ]; then
    # A test ignored because another test runs it (a sandboxed program's own half, started
    # by its test) is no limit: counted apart.
    while read -r line; do
      case $line in
        *": runs inside warden"* | *": the host, run by"* | *": the sandbox, started by"*)
          parts=$((parts + 1)) ;;
        *)
          ignored=$((ignored + 1))
          echo "IGNORED $line" ;;
      esac
    done < <(sed -n 's/^test \(.*\) \.\.\. ignored\(, \)\{0,1\}\(.*\)$/\1: \3/p' "$@" | sort -u)
  fi
  local verdict=ok
  [ $wrong -eq 0 ] || verdict=FAILED
  echo "skips: $skipped skipped ($wrong of them on a machine that has what they lack), $ignored ignored as known limits, $parts ignored as halves other tests run: $verdict"
  [ $wrong -eq 0 ]
}

case "${1:-}" in
  probe) probe ;;
  summary) shift; summary "$@" ;;
  *) echo "usage: $0 probe | summary DIR [CARGO_LOG]..." >&2; exit 2 ;;
esac
