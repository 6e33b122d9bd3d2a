#!/bin/sh
# warden benchmarks: native vs `warden run`, measured in the same run, interleaved, as medians and
# ratios to native.
#
#   bash bench/run.sh [--quick] [--json] [--only SECTIONS] [--warden PATH] [tuning options]
#
# Builds warden (cargo build --release) and the C programs in bench/ (cc), then runs, alternating
# native and sandboxed repetitions (which goes first alternates too):
#   micro     per-call cost, bench/microbench.c: geteuid, open+close of an allowed file, stat,
#             getcwd, an open the policy denies (it succeeds natively); natively, under warden
#             with the default policy (its own view, the kernel first), under `--view off` (the
#             host tree, every open and stat delegated), under `warden run --fast-path=always`,
#             under pure Landlock (bench/landlock-run.c), the fast path's baseline, and under
#             a one-instruction allow-all seccomp filter (bench/filter-floor.c), the kernel's
#             floor for any filter
#   startup   /bin/true against `warden run -- /bin/true` (and `--view off`, and bubblewrap as a
#             peer); then bench/clockstamp.c, which prints the clock as its main begins, split
#             into the time to the program's main and from there to the end
#   scaling   open+close of --scale-total files split over 1, 10, 25, 50, 100 processes
#             (bench/scale.c; Ostia T4): wall time, ratio, and the p100 ratio / the p1 ratio
#   gzip      gzip -d of a 30 MB .gz of deterministic text (bench/gentext.c) to /dev/null
#   build     ./configure && make && make check of a C project (bench/cproject/) in a fresh
#             directory granted with --read/--write/--unlink/--exec
#   net       loopback TCP, bench/netbench.c (jailer T1): the connect call to a native server,
#             and accept of connections from a native client, 1,000 connections per run, with
#             one net-allow rule for the port
#   reactive  a grader outside and a solution inside the sandbox, over pipes, one write+read per
#             query (bench/grader.c, bench/solution.c; Merry): the solution's own user+sys CPU
#             time, median and spread
#   agent     the agent's own work per call on walks (bench/walkbench.c): stat of a path 8
#             directories deep under `--view off` (every stat delegated), absolute, absolute through
#             `..`, relative to a deep cwd, relative through `..`, and relative 4 directories down
#             from a cwd 4 deep; the report's agent-time and
#             agent-cpu divided by the delegated stats, and the round trip, for this warden and,
#             with --base PATH, another build in the same runs (interleaved)
#   modes     the per-call cost (open+close, stat, geteuid) and the start of /bin/true in each mode
#             warden degrades to where a host lacks a primitive, each made here by the refusal
#             that causes it (a seccomp filter around warden: tests/c/nouserns_wrap.c,
#             tests/c/supervise.c, tests/c/no_landlock.c): the default, the host's tree, no user
#             namespaces, no Landlock, arguments read through /proc/PID/mem, no pidfd_getfd, no
#             WAIT_KILLABLE_RECV
#   capsicum  the Capsicum paper's figures (bench/capbench.c with warden's C library), natively
#             and under `warden run --capsicum`: cap_enter, a call with a rights check against
#             without (pread on a limited descriptor, openat beneath a directory capability),
#             pdfork against fork, sandbox creation + one RPC + destruction (in-process with
#             pdfork, and on the real path: a native host's lch_start of a program under
#             `warden run --capability-mode`, warden_capsicum::sandbox), and the
#             compartmentalised decompressor's start-up penalty per file for 1 B .. 16 MB;
#             the machine's load before and after is printed with them
#   policies  the per-call cost (open+close and stat of an allowed file, bench/microbench.c)
#             natively and under the policies users bring: the default (the program's directory
#             granted, as micro), `--exec DIR` alone, an Ostia-style hand-written policy
#             (bench/policies/ostia.policy, its work tree substituted) with --default-policy=no
#             and on top of the default, the policy `warden learn` writes for the program,
#             `--here` in a checkout-like tree, and each shipped profile (profiles/*.policy);
#             per row whether `warden check --explain` puts its opens in the kernel or with the
#             agent, and what the run report counted (delegated opens and stats); load before
#             and after
#   concurrent  N copies of /bin/true started at once (bench/concurrent.c), N = 1, 10, 50, 100,
#             natively, under `warden run` and under bubblewrap (the startup section's peer):
#             total wall time and each start's latency (p50, p99), warden/bubblewrap per N;
#             load before and after
# and prints a table (or one JSON object with --json). Output of every program goes to files.
# policies and concurrent run only when --only names them: at the default sizes they add about
# 3 minutes (most of it the policies whose every open and stat the agent decides, 20-50x
# native), and the 100 concurrent starts leave the load average at 10-20 for the next minute.
#
# Options:
#   --quick               reduced sizes and repetitions (under a minute)
#   --json                print all results as one JSON object
#   --only LIST           comma-separated sections from: micro,startup,net,scaling,gzip,build,
#                         reactive,agent,capsicum,modes,policies,concurrent (the default: all
#                         but policies and concurrent)
#   --warden PATH         use this warden binary instead of building target/release/warden
#   --base PATH           agent: also measure this warden binary (an older build), interleaved
#   --reps N              micro, policies: interleaved runs (7; quick 5; at least 5)
#   --iterations N        micro, policies: iterations per call (20000; quick 5000)
#   --startup-runs N      startup: runs of each (30; quick 10)
#   --connections N       net: connections per run (1000; quick 300)
#   --scale-total N       scaling: total open+close pairs per run (1000000; quick 30000)
#   --scale-reps N        scaling: runs per process count (3; quick 3)
#   --gzip-reps N         gzip: runs of each (7; quick 3)
#   --build-reps N        build: runs of each (5; quick 3)
#   --build-modules N     build: generated .c modules besides main.c (24; quick 8)
#   --build-jobs N        build: make -jN (1)
#   --queries N           reactive: queries per run (200000; quick 50000)
#   --reactive-runs N     reactive: runs of each (20; quick 5)
#   --reactive-cpus G,S   reactive: pin the grader to CPU G, the solution (and warden) to CPU S
#                         (default: not pinned)
#   --concurrent-reps N   concurrent: runs of each N (5; quick 3)
set -eu

started=$(date +%s.%N)
json=0
quick=0
only=micro,startup,net,scaling,gzip,build,reactive,agent,capsicum,modes
warden= base=
reps= iterations= startup_runs= scale_total= scale_reps= gzip_reps= build_reps= build_modules=
build_jobs=1 queries= reactive_runs= reactive_cpus= connections= concurrent_reps=
num() {
    case "$2" in
        ''|*[!0-9]*) echo "run.sh: $1 needs a positive number, not '$2'" >&2; exit 2 ;;
    esac
    [ "$2" -ge 1 ] || { echo "run.sh: $1 needs a positive number, not '$2'" >&2; exit 2; }
}
while [ $# -gt 0 ]; do
    case "$1" in
        --json) json=1 ;;
        --quick) quick=1 ;;
        -h|--help) sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --only|--warden|--base|--reps|--iterations|--startup-runs|--scale-total|--scale-reps|--gzip-reps|\
        --build-reps|--build-modules|--build-jobs|--queries|--reactive-runs|--reactive-cpus|\
        --connections|--concurrent-reps)
            [ $# -ge 2 ] || { echo "run.sh: $1 needs a value" >&2; exit 2; }
            case "$1" in
                --only) only=$2 ;;
                --warden) warden=$2 ;;
                --base) base=$2 ;;
                --reactive-cpus)
                    case "$2" in
                        [0-9]*,[0-9]*) reactive_cpus=$2 ;;
                        *) echo "run.sh: --reactive-cpus needs G,S (two CPU numbers)" >&2; exit 2 ;;
                    esac ;;
                *) num "$1" "$2"
                   case "$1" in
                       --reps) reps=$2 ;;
                       --iterations) iterations=$2 ;;
                       --startup-runs) startup_runs=$2 ;;
                       --connections) connections=$2 ;;
                       --scale-total) scale_total=$2 ;;
                       --scale-reps) scale_reps=$2 ;;
                       --gzip-reps) gzip_reps=$2 ;;
                       --build-reps) build_reps=$2 ;;
                       --build-modules) build_modules=$2 ;;
                       --build-jobs) build_jobs=$2 ;;
                       --queries) queries=$2 ;;
                       --reactive-runs) reactive_runs=$2 ;;
                       --concurrent-reps) concurrent_reps=$2 ;;
                   esac ;;
            esac
            shift ;;
        *) echo "run.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
if [ "$quick" = 1 ]; then
    : "${reps:=5}" "${iterations:=5000}" "${startup_runs:=10}" "${scale_total:=30000}" \
      "${scale_reps:=3}" "${gzip_reps:=3}" "${build_reps:=3}" "${build_modules:=8}" \
      "${queries:=50000}" "${reactive_runs:=5}" "${connections:=300}" "${concurrent_reps:=3}"
else
    : "${reps:=7}" "${iterations:=20000}" "${startup_runs:=30}" "${scale_total:=1000000}" \
      "${scale_reps:=3}" "${gzip_reps:=7}" "${build_reps:=5}" "${build_modules:=24}" \
      "${queries:=200000}" "${reactive_runs:=20}" "${connections:=1000}" "${concurrent_reps:=5}"
fi
if [ "$reps" -lt 5 ]; then
    echo "run.sh: --reps must be at least 5" >&2
    exit 2
fi
if [ "$scale_total" -lt 100 ]; then
    echo "run.sh: --scale-total must be at least 100 (the largest process count)" >&2
    exit 2
fi
if [ "$build_modules" -gt 99 ]; then
    echo "run.sh: --build-modules must be at most 99" >&2
    exit 2
fi
for s in $(echo "$only" | tr ',' ' '); do
    case "$s" in
        micro|startup|net|scaling|gzip|build|reactive|agent|capsicum|modes|policies|concurrent) ;;
        *) echo "run.sh: unknown section '$s' in --only (micro,startup,net,scaling,gzip,build,reactive,agent,capsicum,modes,policies,concurrent)" >&2
           exit 2 ;;
    esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ -z "$warden" ]; then
    # Where cargo put it (.cargo/config.toml builds for the host by name: target/<host>/release).
    warden=$(cargo build --release -q -p warden-cli --message-format=json \
        | sed -n 's/.*"executable":"\([^"]*\/warden\)".*/\1/p' | tail -1)
fi
[ -x "$warden" ] || { echo "run.sh: $warden is not an executable" >&2; exit 1; }
warden=$(cd "$(dirname "$warden")" && pwd)/$(basename "$warden")
if [ -n "$base" ]; then
    [ -x "$base" ] || { echo "run.sh: --base $base is not an executable" >&2; exit 1; }
    base=$(cd "$(dirname "$base")" && pwd)/$(basename "$base")
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/warden-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
chmod 755 "$work"
mkdir "$work/bin" "$work/allowed"
for p in microbench netbench scale grader solution gentext landlock-run filter-floor walkbench clockstamp concurrent; do
    cc -O2 -Wall -o "$work/bin/$p" "bench/$p.c"
done
# The modes section's wrappers: the refusals of a container profile or a locked-down host.
for p in supervise nouserns_wrap no_landlock; do
    cc -O2 -Wall -o "$work/bin/$p" "tests/c/$p.c"
done
cc -O2 -Wall -I crates/warden-capsicum/c -o "$work/bin/capbench" bench/capbench.c \
    crates/warden-capsicum/c/capsicum.c -lz
echo "allowed data" > "$work/allowed/data.txt"
echo "not for the sandbox" > "$work/denied.txt"
chmod 755 "$work/bin" "$work/bin"/* "$work/allowed"
chmod 644 "$work/allowed/data.txt" "$work/denied.txt"

BENCH_STARTED="$started" BENCH_ROOT="$root" BENCH_WARDEN="$warden" BENCH_WORK="$work" \
BENCH_JSON="$json" BENCH_QUICK="$quick" BENCH_ONLY="$only" BENCH_REPS="$reps" \
BENCH_ITERATIONS="$iterations" BENCH_STARTUP_RUNS="$startup_runs" BENCH_SCALE_TOTAL="$scale_total" \
BENCH_SCALE_REPS="$scale_reps" BENCH_GZIP_REPS="$gzip_reps" BENCH_BUILD_REPS="$build_reps" \
BENCH_BUILD_MODULES="$build_modules" BENCH_BUILD_JOBS="$build_jobs" BENCH_QUERIES="$queries" \
BENCH_REACTIVE_RUNS="$reactive_runs" BENCH_REACTIVE_CPUS="$reactive_cpus" \
BENCH_CONNECTIONS="$connections" BENCH_BASE="$base" BENCH_CONCURRENT_REPS="$concurrent_reps" \
/usr/bin/python3 "$root/bench/harness.py"
