#!/usr/bin/env bash
# Runs test binaries one after the other inside a guest (scripts/matrix.sh starts it through
# `guest.sh run`), each bounded in time, between marker lines matrix.sh reads back:
#   ==> suite NAME start
#   ==> suite NAME end rc=N seconds=S
# Usage: suites.sh SUITE_TIMEOUT NAME=EXECUTABLE...
# NAME%SET runs only the tests of SET (see below).
# A NAME ending in :off runs its suite on the host's tree (WARDEN_VIEW=off, as scripts/test.sh's
# host-tree pass does), so what the kernel does to warden's other parts shows even where the
# view fails.
# Skips are counted as on the host (scripts/test.sh): WARDEN_REQUIRE is what this guest has,
# probed here by scripts/skips.sh, so a test may skip only for what the guest's kernel lacks.
set -euo pipefail
cd "$(dirname "$0")/../.."
limit=$1
shift
export RUST_TEST_THREADS=${RUST_TEST_THREADS:-2}
# Guest code runs 5-10x slower under TCG: the tests' hang deadlines (not what they assert about
# time) are scaled by this (crates/warden-cli/tests/common/mod.rs, hang_bound).
export WARDEN_TEST_TIME_SCALE=${WARDEN_TEST_TIME_SCALE:-6}
skipdir=$(mktemp -d /tmp/warden-skips.XXXXXX)
export WARDEN_SKIP_DIR=$skipdir
# Probed here always: a WARDEN_REQUIRE test.sh exported names what the host has, not the guest.
WARDEN_REQUIRE=$(bash scripts/skips.sh probe)
export WARDEN_REQUIRE
echo "==> guest $(uname -r); $(cat /proc/cmdline)"
echo "==> guest has: ${WARDEN_REQUIRE:-nothing probed}; cgroup: $(stat -fc %T /sys/fs/cgroup); own cgroup $(cut -d: -f3 /proc/self/cgroup)"
echo "==> user.max_user_namespaces=$(cat /proc/sys/user/max_user_namespaces); lsm=$(cat /sys/kernel/security/lsm 2>/dev/null || echo '?')"
failed=0
for suite in "$@"; do
  name=${suite%%=*}
  exe=${suite#*=}
  echo "==> suite $name start"
  start=$(date +%s)
  rc=0
  # --kill-after: a test binary that ignores SIGTERM (a hung sandbox) is killed all the same.
  # NAME%SET: only the tests of SET (below). Under systemd, a suite runs in a scope of its own
  # with Delegate=yes, as a service that runs warden is set up (docs/guests.md).
  filters=()
  case $name in
    *%cgroup) filters=(memory_hog_is_an_oom_kill_under_a_cgroup memory_limit_covers_every_process_under_a_cgroup
      memory_limit_from_a_policy_file memory_under_limit_is_ok fork_bomb_is_capped_and_cleaned_up
      threads_count_toward_processes few_children_under_process_limit_are_ok
      cpu_time_counts_every_process_of_the_sandbox sockets_the_agent_makes_count_against_the_memory_limit
      agent_state_is_bounded_by_the_memory_limit
      root_with_starting_ids_keeps_its_cgroup_limits_and_leaves_no_group
      warden_is_the_oom_killers_last_choice_beside_the_sandbox) ;;
    # The mode without Landlock's own tests (the matrix's no-Landlock guest runs all of escape).
    *%landlock) filters=(without_landlock) ;;
    # The view on 6.1: all of it but a_read_only_map_..._through_the_agent, the agent's part,
    # the same on every kernel and run on 6.12 in full, and past 900 s under TCG beside
    # another guest. (docs/guests.md, "On 6.1", says what 6.1 checks in a weaker form.)
    *%6.1)
      filters=(--skip a_read_only_map_cannot_be_moved_replaced_or_removed_through_the_agent)
      echo "==> skip view::a_read_only_map_cannot_be_moved_replaced_or_removed_through_the_agent: the agent's part, past the bound under TCG; runs on 6.12 and the host"
      ;;
    *%*) echo "suites.sh: unknown test set in $name" >&2; exit 2 ;;
    # Forks through the PID space until a thread id comes back, six times: minutes a round
    # under TCG, past any bound. It runs on the host in every CI run (scripts/test.sh).
    escape | escape:off)
      filters=(--skip tid_reuse_never_acts_on_another_threads_cwd)
      echo "==> skip escape::tid_reuse_never_acts_on_another_threads_cwd: cycles the PID space, minutes a round under TCG; runs on the host"
      ;;
  esac
  scope=()
  if [ -d /run/systemd/system ]; then
    scope=(systemd-run --quiet --scope -p Delegate=yes --)
  fi
  case $name in
    *:off*) WARDEN_VIEW=off timeout --kill-after=10 "$limit" "${scope[@]}" "$exe" "${filters[@]}" 2>&1 || rc=$? ;;
    *) timeout --kill-after=10 "$limit" "${scope[@]}" "$exe" "${filters[@]}" 2>&1 || rc=$? ;;
  esac
  echo "==> suite $name end rc=$rc seconds=$(($(date +%s) - start))"
  [ $rc -eq 0 ] || failed=1
done
if [ -s "$skipdir/skips.tsv" ]; then
  sort -u "$skipdir/skips.tsv" | sed 's/^/==> skip /'
fi
rm -rf "$skipdir"
exit $failed
