#!/usr/bin/env bash
# warden's kernel-dependent test suites on the kernels its users run: Debian 12's 6.1 and 6.12,
# cgroup v2 alone (under systemd, as a real host, and without it), user namespaces refused,
# Landlock absent, a block-device ext4 root. The test binaries are built here, once; each guest
# (scripts/guest.sh, QEMU) runs them at the same paths, as root (the tests run parts as uid
# 65534 themselves). One summary line per guest and suite; full logs in target/guests/logs/.
#
#   bash scripts/matrix.sh                 the whole matrix (about 40 min under TCG, 2 cores)
#   MATRIX_ONLY=6.12-ext4 bash scripts/matrix.sh      one guest (a comma list of names)
#   MATRIX_SUITES=view bash scripts/matrix.sh         these suites in every guest instead
#   MATRIX_LOGS=DIR, MATRIX_SUITE_TIMEOUT=SECONDS (1200)  where the logs go, one suite's bound
#
# Exits 1 if a suite fails or a guest does not finish. docs/guests.md has the timings.
set -euo pipefail
cd "$(dirname "$0")/.."
# The guests run the suites at the checkout's own path on the host's root, shared in; /tmp,
# /run, /proc, /sys and /dev are the guest's own, so a checkout there is not found in them.
case "$PWD/" in
  /tmp/*|/run/*|/proc/*|/sys/*|/dev/*)
    echo "matrix: the checkout is under ${PWD%"${PWD#/*/}"}, which each guest has its own of: clone it elsewhere (e.g. under /work or /root) to run the matrix" >&2
    exit 1 ;;
esac

# The matrix. Each line: guest name | guest.sh run options | suites (tests/NAME.rs of warden-cli;
# NAME:off runs it on the host's tree, WARDEN_VIEW=off, as test.sh's host-tree pass does).
# NAME%SET runs only SET's tests of it (scripts/guest/suites.sh); under systemd each suite runs
# in a scope with Delegate=yes, as a service that runs warden is set up. Sized for CI (the whole
# of scripts/test.sh must end within 90 minutes on 2 cores): under TCG a suite runs 5-10x slower
# than on the host (escape about 4-5 min, view under 1 min on 6.12 and about 5 min on 6.1,
# where every open goes to the agent, the cgroup set of limits about 2 min); boots take 10 s
# (busybox init), 20 s (ext4 root) and 45-70 s (systemd). What each guest proves:
#   6.1-systemd       Debian 12 as installed: systemd, cgroup v2 alone, ext4 root with /tmp on it;
#                     the view on 6.1, and the sandbox's limits in a delegated cgroup v2 group
#   6.12-ext4         a current kernel, cgroup v2 without systemd, a block-device root: the view
#                     and the whole adversarial suite in it
#   6.12-no-userns    user namespaces refused (user.max_user_namespaces=0): the no-namespace mode
#                     and its adversarial tests, as root and as uid 65534
#   6.12-no-landlock  Landlock left out of lsm=: the mode without Landlock (the agent decides every
#                     file call, the view's noexec mounts hold execve) under the whole adversarial
#                     suite, as root and as uid 65534; doctor says what the mode enforces
matrix=(
  "6.1-systemd      | --kernel 6.1 --systemd --ext4 --disk-tmp | view%6.1 limits%cgroup"
  "6.12-ext4        | --kernel 6.12 --ext4                     | view escape"
  "6.12-no-userns   | --kernel 6.12 --no-userns                | nouserns"
  "6.12-no-landlock | --kernel 6.12 --no-landlock              | escape doctor"
)
# Bounds: one suite, and a whole guest beyond its suites' sum (boot, probes, power-off).
suite_timeout=${MATRIX_SUITE_TIMEOUT:-1200}
guest_slack=300

logs=${MATRIX_LOGS:-target/guests/logs}
mkdir -p "$logs"
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-2}

trim() {
  local s=$1
  s=${s#"${s%%[![:space:]]*}"}
  echo "${s%"${s##*[![:space:]]}"}"
}

# Every suite any guest runs, built once, here.
declare -A exe
suites_all=()
for line in "${matrix[@]}"; do
  for s in ${MATRIX_SUITES:-$(trim "${line##*|}")}; do
    s=${s%%[:%]*}
    [[ " ${suites_all[*]} " == *" $s "* ]] || suites_all+=("$s")
  done
done
echo "== matrix: building the test binaries (${suites_all[*]})"
test_args=()
for s in "${suites_all[@]}"; do test_args+=(--test "$s"); done
build_json=$(mktemp)
trap 'rm -f "$build_json"' EXIT
if ! cargo test --locked --no-run --message-format=json -p warden-cli "${test_args[@]}" >"$build_json"; then
  echo "matrix: building the test binaries failed" >&2
  exit 1
fi
while IFS=$'\t' read -r name path; do
  exe[$name]=$path
done < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "test" in m["target"]["kind"]:
        print(m["target"]["name"] + "\t" + m["executable"])
' "$build_json")
for s in "${suites_all[@]}"; do
  [ -n "${exe[$s]:-}" ] || { echo "matrix: no test executable for suite $s" >&2; exit 1; }
done

bash scripts/guest.sh fetch

# One summary line of SUITE in guest NAME from its log.
summarize() {
  local name=$1 suite=$2 log=$3 block result end rc secs
  block=$(sed -n "/^==> suite $suite start\$/,/^==> suite $suite end /p" "$log")
  end=$(grep -a "^==> suite $suite end " <<<"$block" || true)
  if [ -z "$end" ]; then
    printf 'matrix: %-17s %-10s NOT RUN (the guest ended first)\n' "$name" "$suite"
    return 1
  fi
  rc=$(sed 's/.* rc=\([0-9]*\).*/\1/' <<<"$end")
  secs=$(sed 's/.* seconds=\([0-9]*\).*/\1/' <<<"$end")
  result=$(grep -a '^test result: ' <<<"$block" | tail -n 1 || true)
  if [ -z "$result" ]; then
    local why="crashed"
    [ "$rc" = 124 ] || [ "$rc" = 137 ] && why="timed out after ${suite_timeout}s"
    printf 'matrix: %-17s %-10s %s (rc=%s), %4ss\n' "$name" "$suite" "$why" "$rc" "$secs"
    return 1
  fi
  # test result: FAILED. 80 passed; 6 failed; 0 ignored; 0 measured; 0 filtered out; ...
  local verdict passed failed ignored
  verdict=$(sed 's/^test result: \([A-Za-z]*\)\..*/\1/' <<<"$result")
  passed=$(sed 's/.* \([0-9]*\) passed.*/\1/' <<<"$result")
  failed=$(sed 's/.* \([0-9]*\) failed.*/\1/' <<<"$result")
  ignored=$(sed 's/.* \([0-9]*\) ignored.*/\1/' <<<"$result")
  printf 'matrix: %-17s %-10s %-6s %3s passed %3s failed %3s ignored %5ss\n' \
    "$name" "$suite" "$verdict" "$passed" "$failed" "$ignored" "$secs"
  [ "$rc" = 0 ]
}

failed=0
summary=()
for line in "${matrix[@]}"; do
  IFS='|' read -r name opts suites <<<"$line"
  name=$(trim "$name")
  opts=$(trim "$opts")
  suites=${MATRIX_SUITES:-$(trim "$suites")}
  if [ -n "${MATRIX_ONLY:-}" ] && [[ ",$MATRIX_ONLY," != *",$name,"* ]]; then continue; fi
  args=()
  n=0
  for s in $suites; do
    args+=("$s=${exe[${s%%[:%]*}]}")
    n=$((n + 1))
  done
  log=$logs/$name.log
  echo "== matrix: $name (guest.sh run $opts): $suites"
  start=$SECONDS
  rc=0
  # shellcheck disable=SC2086
  bash scripts/guest.sh run $opts --timeout $((n * suite_timeout + guest_slack)) \
    --log "$logs/$name.console.log" -- \
    bash scripts/guest/suites.sh "$suite_timeout" "${args[@]}" >"$log" 2>&1 || rc=$?
  echo "== matrix: $name: guest exit $rc after $((SECONDS - start))s (log: $log)"
  if [ $rc -ne 0 ] && ! grep -q '^==> suite ' "$log"; then
    # Not one suite started: the guest itself failed (boot, oops, timeout); guest.sh said why.
    tail -n 20 "$log" | sed 's/^/  /'
  fi
  [ $rc -eq 0 ] || failed=1
  for s in $suites; do
    out=$(summarize "$name" "$s" "$log") || failed=1
    echo "$out"
    summary+=("$out")
    # The failing tests' names, from libtest's closing list.
    sed -n "/^==> suite $s start\$/,/^==> suite $s end /p" "$log" |
      awk '/^failures:$/ { n = 0; list = 1; next } /^test result:/ { list = 0 }
           list && /^    / { names[n++] = $1 } END { for (i = 0; i < n; i++) print "  failed: " names[i] }' || true
  done
done

echo "== matrix: summary"
printf '%s\n' "${summary[@]}"
if [ $failed -ne 0 ]; then
  echo "matrix: FAILED (logs in $logs/)"
  exit 1
fi
echo "matrix: ok"
