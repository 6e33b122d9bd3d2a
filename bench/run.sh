#!/bin/sh
# Microbenchmarks: native vs `warden run`, medians of interleaved repetitions.
#
#   bench/run.sh [--json] [--reps N] [--iterations N] [--startup-runs N]
#
# Builds warden in release mode, compiles bench/microbench.c, then for each repetition runs the
# microbenchmark natively and under
#   warden run --read DIR --exec DIR -- DIR/microbench DIR/data.txt OUTSIDE/denied.txt N
# (alternating which goes first), and times `/bin/true` against `warden run -- /bin/true`
# (--startup-runs of each, interleaved). Prints a table of medians (or JSON with --json):
#   benchmark | native ns/op | warden ns/op | ratio
# The denied open is denied only under warden (natively the file opens); its row is the cost of
# a refusal against the cost of the real thing.
set -eu

json=0
reps=7
iterations=20000
startup_runs=30
while [ $# -gt 0 ]; do
    case "$1" in
        --json) json=1 ;;
        --reps) reps=$2; shift ;;
        --iterations) iterations=$2; shift ;;
        --startup-runs) startup_runs=$2; shift ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
if [ "$reps" -lt 5 ]; then
    echo "run.sh: --reps must be at least 5" >&2
    exit 2
fi

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cargo build --release -q -p warden-cli
warden="$root/target/release/warden"
[ -x "$warden" ] || { echo "run.sh: $warden was not built" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/warden-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
chmod 755 "$work"
mkdir "$work/allowed"
cc -O2 -Wall -o "$work/allowed/microbench" bench/microbench.c
echo "allowed data" > "$work/allowed/data.txt"
echo "not for the sandbox" > "$work/denied.txt"
chmod 755 "$work/allowed" "$work/allowed/microbench"
chmod 644 "$work/allowed/data.txt" "$work/denied.txt"

BENCH_WARDEN="$warden" BENCH_WORK="$work" BENCH_JSON="$json" BENCH_REPS="$reps" \
BENCH_ITERATIONS="$iterations" BENCH_STARTUP_RUNS="$startup_runs" \
/usr/bin/python3 - <<'PY'
import errno, json, os, platform, statistics, sys, time

warden = os.environ["BENCH_WARDEN"]
work = os.environ["BENCH_WORK"]
as_json = os.environ["BENCH_JSON"] == "1"
reps = int(os.environ["BENCH_REPS"])
iterations = os.environ["BENCH_ITERATIONS"]
startup_runs = int(os.environ["BENCH_STARTUP_RUNS"])

allowed = os.path.join(work, "allowed")
prog = os.path.join(allowed, "microbench")
bench_args = [prog, os.path.join(allowed, "data.txt"), os.path.join(work, "denied.txt"), iterations]
modes = {
    "native": bench_args,
    "warden": [warden, "run", "--read", allowed, "--exec", allowed, "--"] + bench_args,
}
# Benchmarks in output order: (key, label, errno expected natively, errno expected under warden).
benchmarks = [
    ("geteuid", "geteuid", 0, 0),
    ("open_close", "open+close (allowed)", 0, 0),
    ("stat", "stat (allowed)", 0, 0),
    ("open_denied", "open (denied by policy)", 0, errno.EACCES),
]
out_path = os.path.join(work, "stdout")
err_path = os.path.join(work, "stderr")


def spawn(argv):
    """Runs argv with stdin /dev/null and stdout/stderr in files (not pipes); returns
    (wall ns, exit status)."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        (os.POSIX_SPAWN_OPEN, 2, err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
    ]
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
    _, status = os.waitpid(pid, 0)
    t1 = time.perf_counter_ns()
    return t1 - t0, os.waitstatus_to_exitcode(status)


def fail(what, argv, code):
    with open(err_path) as f:
        err = f.read()
    sys.exit(f"run.sh: {what} failed (exit {code}): {' '.join(argv)}\n{err}")


def run_micro(mode):
    argv = modes[mode]
    _, code = spawn(argv)
    if code != 0:
        fail(f"the {mode} microbenchmark", argv, code)
    result = {}
    with open(out_path) as f:
        for line in f:
            name, ns, err = line.split()
            result[name] = (float(ns), int(err))
    for key, _label, want_native, want_warden in benchmarks:
        want = want_native if mode == "native" else want_warden
        got = result[key][1]
        if got != want:
            sys.exit(f"run.sh: {mode} {key}: the call ended with errno {got}, expected {want}")
    return {k: v[0] for k, v in result.items()}


samples = {m: {k: [] for k, *_ in benchmarks} for m in modes}
for m in modes:  # warm-up: page cache, dynamic linker, first scratch directory
    run_micro(m)
for r in range(reps):
    order = ["native", "warden"] if r % 2 == 0 else ["warden", "native"]
    for m in order:
        for k, v in run_micro(m).items():
            samples[m][k].append(v)

startup_argv = {"native": ["/bin/true"], "warden": [warden, "run", "--", "/bin/true"]}
startup = {m: [] for m in startup_argv}
for m in startup_argv:
    spawn(startup_argv[m])
for r in range(startup_runs):
    order = ["native", "warden"] if r % 2 == 0 else ["warden", "native"]
    for m in order:
        ns, code = spawn(startup_argv[m])
        if code != 0:
            fail(f"startup ({m})", startup_argv[m], code)
        startup[m].append(ns)

rows = []
for key, label, *_ in benchmarks:
    n = statistics.median(samples["native"][key])
    w = statistics.median(samples["warden"][key])
    rows.append({
        "name": key,
        "label": label,
        "native_ns_per_op": round(n, 1),
        "warden_ns_per_op": round(w, 1),
        "ratio": round(w / n, 2),
        "native_samples": samples["native"][key],
        "warden_samples": samples["warden"][key],
    })
sn = statistics.median(startup["native"]) / 1000
sw = statistics.median(startup["warden"]) / 1000
start_row = {
    "name": "startup_true",
    "label": "startup: /bin/true (us per run)",
    "native_us": round(sn, 1),
    "warden_us": round(sw, 1),
    "ratio": round(sw / sn, 2),
    "runs": startup_runs,
    "native_samples_us": [round(x / 1000, 1) for x in startup["native"]],
    "warden_samples_us": [round(x / 1000, 1) for x in startup["warden"]],
}
machine = {"cpus": os.cpu_count(), "kernel": platform.release(), "reps": reps, "iterations": int(iterations)}

if as_json:
    print(json.dumps({"machine": machine, "benchmarks": rows, "startup": start_row}, indent=2))
else:
    print(f"# {machine['cpus']} CPUs, Linux {machine['kernel']}; medians of {reps} interleaved runs "
          f"({iterations} iterations, geteuid x50); startup: median of {startup_runs} runs each")
    header = ("benchmark", "native ns/op", "warden ns/op", "ratio")
    table = [header] + [(r["label"], f"{r['native_ns_per_op']:.1f}", f"{r['warden_ns_per_op']:.1f}", f"{r['ratio']:.2f}x") for r in rows]
    table.append((start_row["label"], f"{sn:.1f}", f"{sw:.1f}", f"{start_row['ratio']:.2f}x"))
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    for i, row in enumerate(table):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        print("| " + " | ".join(cells) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
PY
