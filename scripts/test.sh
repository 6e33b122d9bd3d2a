#!/usr/bin/env bash
# The whole test suite: lint, unit and property tests, integration and adversarial tests on the
# real kernel, as root and (inside the tests) as uid 65534. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== kernel features"
echo "kernel $(uname -r); landlock ABI: $(/usr/bin/python3 -c 'import ctypes;l=ctypes.CDLL(None,use_errno=True);print(l.syscall(444,None,0,1))')"

echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy"
cargo clippy --locked --all-targets -q -- -D warnings

echo "== property tests of the policy parser (a brief fuzz run: 4000 cases each)"
PROPTEST_CASES=4000 cargo test --locked -q -p warden-policy --test proptest_parse

# Skips are counted, not silent: every test that cannot run here records why (a SKIP line on
# stderr and a line in $WARDEN_SKIP_DIR/skips.tsv), and may do so only for something this
# machine lacks. WARDEN_REQUIRE lists what the probes in scripts/skips.sh find here; a test that
# skips for lack of one of those fails. The summary at the end counts skips and known limits.
skipdir=$(mktemp -d "${TMPDIR:-/tmp}/warden-skips.XXXXXX")
trap 'rm -rf "$skipdir"' EXIT
export WARDEN_SKIP_DIR=$skipdir
WARDEN_REQUIRE=${WARDEN_REQUIRE-$(bash scripts/skips.sh probe)}
export WARDEN_REQUIRE
echo "== this machine has: ${WARDEN_REQUIRE:-nothing probed} (no test may skip for lack of these)"
failed=0

echo "== all tests"
# One sandbox at a time per test binary would be slow; the tests are written to run in
# parallel. RUST_TEST_THREADS keeps the 2-core machine from oversubscribing during races.
RUST_TEST_THREADS=${RUST_TEST_THREADS:-2} cargo test --locked --workspace --no-fail-fast 2>&1 \
  | tee "$skipdir/all.log" || failed=1

# The tests above run warden's default: each sandbox in a view of its own, built from its policy,
# with the kernel deciding opens, stat, access, readlink and chdir where the policy compiles
# exactly (--view auto, --fast-path unset). The passes below cover the other modes.

echo "== the adversarial suite again in views, the base policy Landlock enforces exactly (--fast-path=always)"
# Every escape program runs under tests/fast-path.policy with --fast-path=always: the kernel, not
# the agent, decides its opens, and the same attacks must fail (as root and as nobody).
WARDEN_TEST_FAST_PATH=1 RUST_TEST_THREADS=${RUST_TEST_THREADS:-2} cargo test --locked -p warden-cli --test escape 2>&1 \
  | tee "$skipdir/fast-path.log" || failed=1

echo "== the adversarial suite in views with every call sent to the agent (WARDEN_FAST_PATH=never)"
# What -v, --log and warden learn use: the agent decides every path the program names, in the view.
WARDEN_FAST_PATH=never RUST_TEST_THREADS=${RUST_TEST_THREADS:-2} cargo test --locked -p warden-cli \
  --test escape 2>&1 | tee "$skipdir/view-agent.log" || failed=1

echo "== the sandboxes again on the host's tree (WARDEN_VIEW=off), the agent deciding"
# warden run --view off: no view, every path decided by the agent and Landlock. The adversarial
# suite, the programs, the scratch, the network, limits and inspect suites must hold there too.
WARDEN_VIEW=off RUST_TEST_THREADS=${RUST_TEST_THREADS:-2} cargo test --locked -p warden-cli \
  --test escape --test programs --test scratch --test network --test limits --test inspect 2>&1 \
  | tee "$skipdir/host-tree.log" || failed=1

echo "== the adversarial suite on the host's tree with opens going to the kernel (WARDEN_VIEW=off, --fast-path=always)"
WARDEN_VIEW=off WARDEN_TEST_FAST_PATH=1 RUST_TEST_THREADS=${RUST_TEST_THREADS:-2} cargo test --locked \
  -p warden-cli --test escape 2>&1 | tee "$skipdir/host-tree-fast-path.log" || failed=1

echo "== the adversarial suite on the host's tree with process_vm_readv refused around warden (WARDEN_VIEW=off)"
# Some container profiles refuse process_vm_readv: the agent then reads the program's arguments
# through /proc/PID/mem, and every check must hold as before. tests/c/supervise.c puts a seccomp
# filter refusing process_vm_readv and process_vm_writev (EPERM) around the warden the tests run.
refusal=$(mktemp -d)
chmod 755 "$refusal"
cc -O1 -Wall -o "$refusal/supervise" tests/c/supervise.c
printf '#!/bin/sh\nSUPERVISE_NO_LISTENER=1 SUPERVISE_DENY=process_vm_readv,process_vm_writev exec %s %s "$@"\n' \
  "$refusal/supervise" "$PWD/target/x86_64-unknown-linux-musl/debug/warden" > "$refusal/warden"
chmod 755 "$refusal/warden"
WARDEN_BIN=$refusal/warden WARDEN_VIEW=off RUST_TEST_THREADS=${RUST_TEST_THREADS:-2} cargo test --locked \
  -p warden-cli --test escape 2>&1 | tee "$skipdir/memory-route.log" || failed=1
rm -rf -- "$refusal"

echo "== the adversarial suite on the host's tree with pidfd_getfd refused and no WAIT_KILLABLE_RECV (WARDEN_VIEW=off)"
# Docker's default profile refuses pidfd_getfd (without CAP_SYS_PTRACE) and kernels before 5.19
# have no SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV: warden takes its listener from a helper, the
# agent looks descriptors up through /proc/PID/fd and refuses the calls that need a socket's own
# open file, and it serves each thread's calls one at a time (docs/fallbacks.md). Every check
# must hold as before. supervise.c refuses pidfd_getfd (EPERM) and the flag (EINVAL) around the
# warden the tests run. About as long as the escape suite itself (~1 min on 2 cores).
refusal=$(mktemp -d)
chmod 755 "$refusal"
cc -O1 -Wall -o "$refusal/supervise" tests/c/supervise.c
printf '#!/bin/sh\nSUPERVISE_NO_LISTENER=1 SUPERVISE_DENY=pidfd_getfd SUPERVISE_NO_WAIT_KILLABLE=1 exec %s %s "$@"\n' \
  "$refusal/supervise" "$PWD/target/x86_64-unknown-linux-musl/debug/warden" > "$refusal/warden"
chmod 755 "$refusal/warden"
WARDEN_BIN=$refusal/warden WARDEN_VIEW=off RUST_TEST_THREADS=${RUST_TEST_THREADS:-2} cargo test --locked \
  -p warden-cli --test escape 2>&1 | tee "$skipdir/descriptor-route.log" || failed=1
rm -rf -- "$refusal"

echo "== the adversarial suite in the mode without Landlock (tests/c/no_landlock.c makes Landlock's calls ENOSYS around warden)"
# The no-Landlock guest of the matrix runs it on a kernel booted without Landlock; this pass runs
# it on every CI host, where the agent decides every file call and the view's noexec mounts
# hold execve.
WARDEN_TEST_WRAP=no-landlock RUST_TEST_THREADS=${RUST_TEST_THREADS:-2} cargo test --locked \
  -p warden-cli --test escape 2>&1 | tee "$skipdir/no-landlock.log" || failed=1

echo "== fuzzing the agent's request decoding (cargo-fuzz, 30 s per target)"
bash scripts/fuzz.sh "${FUZZ_SECONDS:-30}" || failed=1

echo "== soak: many hostile sandboxes at once for 2 minutes, the adversarial suite beside them"
# scripts/soak.sh checks from outside: no crash or hang, the agent's memory bounded, nothing left
# in /tmp, the cgroups or the registry, and no escape under load.
bash scripts/soak.sh "${SOAK_MINUTES:-2}" || failed=1

if [ "${WARDEN_MATRIX:-1}" != 0 ]; then
  echo "== the kernel matrix: the kernel-dependent suites in QEMU guests (Debian 6.1 and 6.12, cgroup v2, no user namespaces, no Landlock, an ext4 root; WARDEN_MATRIX=0 skips it)"
  # scripts/matrix.sh: about 25 minutes under TCG on 2 cores, one guest at a time; logs in
  # target/guests/logs/ (docs/guests.md).
  bash scripts/matrix.sh || failed=1
fi

bash scripts/skips.sh summary "$skipdir" "$skipdir/all.log" "$skipdir/fast-path.log" \
  "$skipdir/view-agent.log" "$skipdir/host-tree.log" "$skipdir/host-tree-fast-path.log" || failed=1
if [ $failed -ne 0 ]; then
  echo "test.sh: FAILED (see the failures above)"
  exit 1
fi
echo "test.sh: ok"
