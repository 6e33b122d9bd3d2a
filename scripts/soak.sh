#!/usr/bin/env bash
# A soak under hostile load (issue 17): many sandboxes at once, each running something written
# to hurt the agent, for MINUTES minutes (default 2), while the adversarial suite runs beside
# them. Checked from outside, after every sandbox and at the end:
#   - no crash and no hang: every warden ends by itself within its wall limit plus slack, with a
#     status its workload may end with (never 125, warden's own failure, never a signal);
#   - the agent stays bounded: each run's report (agent-mem) stays under AGENT_MEM_MAX KiB;
#   - nothing is left behind: no scratch directory, no cgroup, no registry entry, no process;
#   - no escape: the adversarial suite passes while the load runs (its terminal test included);
#   - the run's disk holds: a sandbox filling its scratch and /dev/shm stops at --disk, as the
#     report says, and nothing of it lands in TMPDIR;
#   - the registry holds: `warden ps` answers, bounded, beside a directory of another user's
#     flooded with junk, FIFOs and links.
#
# It looks only at what it made itself, so other warden runs on the machine (another test run,
# another checkout) can neither fail it nor hide a leftover of its own: everything it runs gets
# a TMPDIR of the soak's own, it enters cgroup-v1 groups of its own (its wardens make theirs
# beneath them), and a registry entry is its own when it names the soak's directory. It also
# pins what it soaks when it starts: warden, the adversarial suite's test binary and the C
# sources are copied, so the worktree may be rebuilt or edited while it runs.
#
#   bash scripts/soak.sh [MINUTES]      (run it after scripts/setup.sh; CI runs 2 minutes)
set -uo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-2}
# SOAK_SECONDS overrides, for a short check of the script itself.
deadline=$(( $(date +%s) + ${SOAK_SECONDS:-$(( minutes * 60 ))} ))
parallel=${SOAK_PARALLEL:-6}
agent_mem_max=${AGENT_MEM_MAX:-262144}
[ -x target/release/warden ] || { echo "soak: build first (bash scripts/setup.sh)" >&2; exit 2; }
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+uncommitted"

# /tmp, not $TMPDIR: uid 65534 (half of the adversarial suite) must reach it, and a private
# TMPDIR (mktemp -d) is not reachable.
work=$(mktemp -d /tmp/warden-soak.XXXXXX)
chmod 755 "$work"
bin=$work/bin
mkdir -p "$bin" "$work/reports" "$work/data" "$work/repo/tests"
# Everything the soak runs makes its scratch directories, registry (as nobody) and test
# directories here, and nowhere else.
mkdir -m 1777 "$work/tmp"
export TMPDIR=$work/tmp
for p in escape_agent threads_open limit_fork escape_deputy limit_agent_cpu deep_tree; do
  cc -O1 -Wall -o "$bin/$p" "tests/c/$p.c" -lpthread || exit 2
done
printf 'alpha\n' > "$work/data/a.txt"; printf 'bravo\n' > "$work/data/b.txt"
# A registry directory of another user's, flooded: junk entries, FIFOs, a link to /dev/zero
# and a large sparse file. `warden ps` must answer beside it, promptly and in bounded memory.
flood=$work/tmp/warden-run-65534
mkdir -m 700 "$flood"
for i in $(seq 1 3000); do printf '{"id":"%s","uid":0}' "$i" > "$flood/$i.json"; done
for i in $(seq 1 50); do mkfifo "$flood/fifo-$i.json"; done
ln -s /dev/zero "$flood/zero.json"
truncate -s 1G "$flood/sparse.json"
chown -R 65534:65534 "$flood"

# Pinned: the adversarial suite's test binary (built now, in the profile scripts/test.sh has
# just built, and run as it is in every round), the C programs it compiles, and the (release)
# warden both it and the workloads run.
suite_bin=$(cargo test --locked -p warden-cli --test escape --no-run \
  --message-format=json 2>/dev/null | grep '"kind":\["test"\]' | grep '"name":"escape"' |
  sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
[ -x "$suite_bin" ] || { echo "soak: cannot build the adversarial suite" >&2; exit 2; }
# (Not in $bin: the check for processes left behind looks for programs of $bin.)
pinned=$work/pinned
mkdir -p "$pinned"
cp "$suite_bin" "$pinned/escape-suite"
cp target/release/warden "$pinned/warden"
cp -r tests/c "$work/repo/tests/c"
warden=$pinned/warden
chmod -R a+rX "$work"

# The soak's own cgroup-v1 groups, one in each hierarchy where warden makes groups (memory,
# pids, cpuacct): its wardens make theirs under these, so no other warden on the machine adds
# or removes any there. (Under cgroup v2 a group with processes cannot pass controllers on, so
# the soak stays where it is and counts only groups of wardens that are gone.)
cg_dirs=()
while IFS=: read -r _ ctrl path; do
  case ",$ctrl," in *,memory,*|*,pids,*|*,cpuacct,*) ;; *) continue ;; esac
  dir=/sys/fs/cgroup/$ctrl${path%/}/warden-soak-$$
  if mkdir "$dir" 2>/dev/null && echo $$ >"$dir/cgroup.procs" 2>/dev/null; then
    cg_dirs+=("$dir")
  else
    rmdir "$dir" 2>/dev/null
  fi
done </proc/self/cgroup
v2=$(findmnt -n -t cgroup2 -o TARGET 2>/dev/null | head -1)$(sed -n 's/^0::\(.*\)/\1/p' /proc/self/cgroup)
leave_cgroups() {
  for dir in "${cg_dirs[@]}"; do
    echo $$ >"$(dirname "$dir")/cgroup.procs" 2>/dev/null
    rmdir "$dir"/warden-* "$dir" 2>/dev/null
  done
  cg_dirs=()
}
trap leave_cgroups EXIT

leftovers() {
  # Scratch directories (and their locks), cgroups and registry entries of the soak's wardens.
  { ls -d "$TMPDIR"/warden-scratch-*/* 2>/dev/null
    for dir in "${cg_dirs[@]}"; do ls -d "$dir"/warden-* 2>/dev/null; done
    for g in "${v2%/}"/warden-*; do
      pid=${g##*/warden-}; pid=${pid%%-*}
      [ -d "$g" ] && ! kill -0 "$pid" 2>/dev/null && echo "$g"
    done
    # Regular files only, and not the flooded directory (FIFOs, a 1 GiB file): grep would hang.
    find /run/warden "$TMPDIR"/warden-run-* -maxdepth 1 -type f -name '*.json' \
      ! -path "$flood/*" -exec grep -l -F "$work/" {} + 2>/dev/null |
      sed 's|^|registry: |'
  } | sort
}
before=$(leftovers)

# One workload: NAME, allowed exit statuses, wall limit, then warden's arguments.
# Each is hostile to the agent in its own way.
workload() {
  local i=$1 r="$work/reports/$1.json" rc=0
  local common=(--read "$bin" --exec "$bin" --report-json "$r")
  local name ok wall args
  case $(( i % 11 )) in
    0) name=bad-arguments;  ok="0";     wall=20; args=(--wall-time 20 -- "$bin/escape_agent" 80) ;;
    1) name=thread-storm;   ok="0";     wall=30; args=(--read "$work/data" --wall-time 30 -- "$bin/threads_open" "$work/data" 16 300) ;;
    2) name=fork-bomb;      ok="0 137"; wall=10; args=(--processes 64 --wall-time 5 -- "$bin/limit_fork" soak-marker bomb 5000) ;;
    3) name=deep-trees;     ok="0";     wall=20; args=(--wall-time 20 -- "$bin/escape_deputy" deep .) ;;
    4) name=agent-cpu;      ok="137";   wall=10; args=(--time 1 --wall-time 8 -- "$bin/limit_agent_cpu" 30) ;;
    5) name=killed-mid-call; ok="137";  wall=5;  args=(--wall-time 1 -- "$bin/threads_open" "$work/data" 32 1000000) ;;
    6) name=create-races;   ok="0";     wall=20; args=(--wall-time 20 -- "$bin/escape_deputy" tmpfile . /usr) ;;
    7) name=disk-fill;      ok="0";     wall=20; args=(--disk 48M --fsize 16M --wall-time 20 -- /bin/sh -c \
         'i=0; while [ $i -lt 64 ] && dd if=/dev/zero of=f$i bs=1M count=16 2>/dev/null; do i=$((i+1)); done;
          j=0; while [ $j -lt 8 ] && dd if=/dev/zero of=/dev/shm/g$j bs=1M count=16 2>/dev/null; do j=$((j+1)); done; exit 0') ;;
    8) name=registry-flood; ok="0";     wall=20; args=() ;;
    # A scratch tree 20,000 deep with mode-0 directories, in the view's disk and, with --keep
    # off and --view off, on the host's: both go with the run (the leftovers check).
    9) name=deep-scratch;   ok="0";     wall=30; args=(--wall-time 30 -- "$bin/deep_tree" 20000) ;;
    # On the host's tree every mkdir and rename is the agent's: 19-35 s of 30 beside the suite
    # on a loaded machine (one run of 48 went past it, 2026-11-29), so its bound is 60 s.
    10) name=deep-host;     ok="0";     wall=60; args=(--view off --wall-time 60 -- "$bin/deep_tree" 20000) ;;
  esac
  if [ "$name" = registry-flood ]; then
    # Not a sandbox: warden ps, as root, beside the flooded directory (and the live runs).
    local start=$(date +%s%N) out="$work/reports/$i.out"
    timeout -s KILL $(( wall + 30 )) "$warden" ps --json >"$out" 2>&1 || rc=$?
    local took=$(( ($(date +%s%N) - start) / 1000000 )) verdict=ok
    [ $rc -eq 0 ] || verdict="unexpected exit $rc"
    [ $(stat -c %s "$out") -lt 4194304 ] || verdict="ps printed $(stat -c %s "$out") bytes"
    echo "$i $name rc=$rc ms=$took agent-mem=0 $verdict"
    return
  fi
  local start=$(date +%s%N)
  timeout -s KILL $(( wall + 30 )) "$warden" run "${common[@]}" "${args[@]}" >"$work/reports/$i.out" 2>&1 || rc=$?
  local took=$(( ($(date +%s%N) - start) / 1000000 ))
  local verdict=ok
  if [ $rc -eq 137 ] && [ $took -ge $(( (wall + 30) * 1000 )) ]; then verdict="HANG (killed by timeout after ${took} ms)"
  elif ! [[ " $ok " == *" $rc "* ]]; then verdict="unexpected exit $rc"
  fi
  local mem=$(sed -n 's/.*"agent-mem": *\([0-9]*\).*/\1/p' "$r" 2>/dev/null)
  if [ "$name" = disk-fill ]; then
    # The disk held at most its size (48 MiB = 49152 KiB), and the report says so.
    local disk=$(sed -n 's/.*"disk": *\([0-9]*\).*/\1/p' "$r" 2>/dev/null)
    if [ -z "$disk" ] || [ "$disk" -gt 49152 ] || [ "$disk" -lt 32768 ]; then
      verdict="disk ${disk:-?} KiB, not at its 49152 KiB bound"
    fi
  fi
  if [ -z "$mem" ]; then verdict="$verdict; no report"
  elif [ "$mem" -gt "$agent_mem_max" ]; then verdict="agent-mem ${mem} KiB over $agent_mem_max"
  fi
  echo "$i $name rc=$rc ms=$took agent-mem=${mem:-?} $verdict"
}

echo "soak: $minutes min, $parallel sandboxes at once, commit $commit, work in $work"
# The adversarial suite, concurrently, for as long as the load runs.
escape_log=$work/escape.log
( escape_rc=0; rounds=0
  while [ "$(date +%s)" -lt "$deadline" ]; do
    # The *_control tests run the attacks natively to show they work without warden; races
    # among them need the CPU this load takes, so only the tests of warden run here.
    # A TMPDIR per round: a round's first test sweeps the work directories of test binaries
    # that are gone (tests/common), which would take a failed round's evidence with it.
    round_tmp=$work/tmp/escape-$rounds
    mkdir -m 1777 "$round_tmp"
    TMPDIR=$round_tmp RUST_TEST_THREADS=1 WARDEN_BIN=$warden WARDEN_TEST_REPO=$work/repo \
      "$pinned/escape-suite" -q --skip _control >>"$escape_log" 2>&1 || escape_rc=1
    rounds=$((rounds + 1))
  done
  echo "escape rounds=$rounds rc=$escape_rc" >>"$escape_log" ) &
suite=$!

results=$work/results.txt
n=0
while [ "$(date +%s)" -lt "$deadline" ]; do
  for _ in $(seq "$parallel"); do workload $n >>"$results" & n=$((n + 1)); done
  wait $(jobs -p | grep -v "^$suite\$") 2>/dev/null
  # Everything of the round is gone: no sandbox process outlives its warden.
  if pgrep -f "$bin/" >/dev/null; then echo "leftover-processes: $(pgrep -af "$bin/" | head -3)" >>"$results"; fi
done
wait "$suite"

after=$(leftovers)
leave_cgroups
fail=0
bad=$(grep -v " ok$" "$results")
if [ -n "$bad" ]; then echo "soak: failures:"; echo "$bad" | head -20; fail=1; fi
# Only what appeared counts: a run may sweep what killed wardens left before (issue 14).
left=$(comm -13 <(echo "$before") <(echo "$after"))
if [ -n "$left" ]; then
  echo "soak: left behind:"; echo "$left" | head; fail=1
fi
if ! grep -q "rc=0$" "$escape_log"; then
  echo "soak: the adversarial suite failed under load:"; grep -E "FAILED|panicked|ESCAPE" "$escape_log" | head; fail=1
fi
runs=$(wc -l <"$results")
maxmem=$(sed -n 's/.*agent-mem=\([0-9]*\).*/\1/p' "$results" | sort -n | tail -1)
echo "soak: $runs sandboxes in $minutes min ($(grep -c ' ok$' "$results") ok) on $commit, largest agent-mem ${maxmem:-?} KiB; $(tail -1 "$escape_log")"
for w in bad-arguments thread-storm fork-bomb deep-trees agent-cpu killed-mid-call create-races \
         disk-fill registry-flood deep-scratch deep-host; do
  printf '  %-16s %s runs\n' "$w" "$(grep -c " $w " "$results")"
done
if [ $fail -eq 0 ]; then echo "soak: ok"; rm -rf "$work"; else echo "soak: FAILED (kept $work)"; fi
exit $fail
