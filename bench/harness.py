"""The measuring half of bench/run.sh (which builds everything and passes settings in BENCH_*
environment variables; run it through run.sh, see `bash bench/run.sh --help`).

Every benchmark runs natively and under `warden run` in the same process, alternating which of the
two goes first in each repetition, and reports medians and the ratio warden / native. Programs are
started with posix_spawn, stdin from /dev/null and stdout/stderr into files (never pipes), except
the reactive benchmark, whose point is the pipes between the grader and the sandboxed solution."""

import errno
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

env = os.environ
root = env["BENCH_ROOT"]
warden = env["BENCH_WARDEN"]
work = env["BENCH_WORK"]
as_json = env["BENCH_JSON"] == "1"
quick = env["BENCH_QUICK"] == "1"
sections = env["BENCH_ONLY"].split(",")
reps = int(env["BENCH_REPS"])
iterations = int(env["BENCH_ITERATIONS"])
startup_runs = int(env["BENCH_STARTUP_RUNS"])
scale_total = int(env["BENCH_SCALE_TOTAL"])
scale_reps = int(env["BENCH_SCALE_REPS"])
gzip_reps = int(env["BENCH_GZIP_REPS"])
build_reps = int(env["BENCH_BUILD_REPS"])
build_modules = int(env["BENCH_BUILD_MODULES"])
build_jobs = int(env["BENCH_BUILD_JOBS"])
queries = int(env["BENCH_QUERIES"])
reactive_runs = int(env["BENCH_REACTIVE_RUNS"])
reactive_cpus = env["BENCH_REACTIVE_CPUS"]  # "" (not pinned) or "G,S"
connections = int(env["BENCH_CONNECTIONS"])
base_warden = env.get("BENCH_BASE", "")
concurrent_reps = int(env["BENCH_CONCURRENT_REPS"])

SCALE_PROCS = [1, 10, 25, 50, 100]
SCALE_FILES = 100
GZIP_TEXT_BYTES = 56_000_000  # gzip -6 makes a 30.0 MB .gz of it

bindir = os.path.join(work, "bin")
out_path = os.path.join(work, "stdout")
err_path = os.path.join(work, "stderr")


def progress(msg):
    """One line of progress on stderr (the results go to stdout)."""
    print(f"run.sh: {msg}", file=sys.stderr, flush=True)


def spawn(argv, stdout=None):
    """Runs argv with stdin /dev/null and stdout/stderr in files (not pipes); returns
    (wall ns, exit status, rusage of the child and the descendants it waited for)."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, stdout or out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        (os.POSIX_SPAWN_OPEN, 2, err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
    ]
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
    _, status, ru = os.wait4(pid, 0)
    t1 = time.perf_counter_ns()
    return t1 - t0, os.waitstatus_to_exitcode(status), ru


def fail(what, argv, code):
    with open(err_path, errors="replace") as f:
        err = f.read()[-4000:]
    with open(out_path, errors="replace") as f:
        out = f.read()[-2000:]
    sys.exit(f"run.sh: {what} failed (exit {code}): {' '.join(argv)}\n{out}{err}")


def run_checked(what, argv, stdout=None):
    ns, code, ru = spawn(argv, stdout)
    if code != 0:
        fail(what, argv, code)
    return ns, ru


def read_out():
    with open(out_path) as f:
        return f.read()


def orders(r, modes=("native", "warden")):
    """Which mode goes first rotates between repetitions."""
    k = r % len(modes)
    return list(modes[k:]) + list(modes[:k])


def sandboxed(*flags):
    """`warden run FLAGS --` as an argv prefix."""
    return [warden, "run", *flags, "--"]


def spread(xs):
    return {
        "median": statistics.median(xs),
        "min": min(xs),
        "max": max(xs),
        "stdev": statistics.stdev(xs) if len(xs) > 1 else 0.0,
    }


def ratio(w, n):
    return round(w / n, 3) if n else None


def per_op_rows(keys, samples):
    """One result row per (key, label): medians in ns per operation, the ratio, the samples."""
    rows = []
    for key, label in keys:
        n = statistics.median(samples["native"][key])
        w = statistics.median(samples["warden"][key])
        rows.append({
            "name": key,
            "label": label,
            "native_ns_per_op": round(n, 1),
            "warden_ns_per_op": round(w, 1),
            "ratio": ratio(w, n),
            "native_samples": samples["native"][key],
            "warden_samples": samples["warden"][key],
        })
    return rows


# --- micro: per-call costs ---------------------------------------------------------------------

MICRO = [
    # (key, label, errno expected natively, errno expected under warden)
    ("geteuid", "geteuid", 0, 0),
    ("open_close", "open+close (allowed)", 0, 0),
    ("stat", "stat (allowed)", 0, 0),
    ("getcwd", "getcwd", 0, 0),
    ("open_denied", "open (denied by policy)", 0, errno.EACCES),
]


# The modes of the per-call benchmark:
#   native    the program alone
#   warden    `warden run` with the built-in default policy: the default, a view of its own with
#             the kernel first (opens, stat and the other lookers answered by the kernel)
#   fast      `warden run --view off --fast-path=always` on the exact base the adversarial suite's fast-path
#             pass uses (crates/warden-cli/tests/fast-path.policy): opens go straight to the kernel,
#             which Landlock confines; stat still goes to the agent
#   landlock  bench/landlock-run.c: Landlock alone (no seccomp, no agent), with read/exec rules
#             for what the program needs: the baseline of "within 10% of pure Landlock"
#   landlock-t  the same with the truncate right unhandled (landlock-run -t), as warden's
#             kernel-first runs leave it (their filter sends truncation to the agent): the same
#             Landlock walk as theirs
#   floor     bench/filter-floor.c: a one-instruction seccomp filter that allows everything, the
#             kernel's floor for any filter on a call it lets through (the slow syscall entry)
#   view      `warden run --view off` with the built-in default policy: the host's tree, every
#             open and stat decided by the agent (the default before views were)
MICRO_MODES = ("native", "warden", "fast", "view", "landlock", "landlock-t", "floor")
FAST_PATH_POLICY = os.path.join(root, "crates", "warden-cli", "tests", "fast-path.policy")


def bench_micro():
    allowed = os.path.join(work, "allowed")
    args = [os.path.join(bindir, "microbench"), os.path.join(allowed, "data.txt"),
            os.path.join(work, "denied.txt"), str(iterations)]
    system = [d for d in ("/usr", "/bin", "/lib", "/lib64") if os.path.isdir(d)
              and not os.path.islink(d)]
    landlock = [os.path.join(bindir, "landlock-run"), "-r", "/etc/ld.so.cache", "-r", allowed,
                "-x", bindir]
    for d in system:
        landlock += ["-x", d]
    grants = ["--read", allowed, "--read", bindir, "--exec", bindir]
    argv = {
        "native": args,
        "warden": sandboxed(*grants) + args,
        "fast": sandboxed("--view", "off", "--default-policy=no", "--policy", FAST_PATH_POLICY,
                          "--fast-path=always", *grants) + args,
        "view": sandboxed("--view", "off", *grants) + args,
        "landlock": landlock + ["--"] + args,
        "landlock-t": landlock[:1] + ["-t"] + landlock[1:] + ["--"] + args,
        "floor": [os.path.join(bindir, "filter-floor")] + args,
    }

    def once(mode):
        run_checked(f"the {mode} microbenchmark", argv[mode])
        result = {}
        for line in read_out().splitlines():
            name, ns, err = line.split()
            result[name] = (float(ns), int(err))
        for key, _label, want_native, want_confined in MICRO:
            # The floor filter confines nothing: calls end as they do natively.
            want = want_native if mode in ("native", "floor") else want_confined
            if mode == "warden" and key == "open_denied":
                # Outside the view (the default), the denied file is not there.
                want = errno.ENOENT
            if key not in result:
                sys.exit(f"run.sh: {mode} microbenchmark printed no {key} line")
            if result[key][1] != want:
                sys.exit(f"run.sh: {mode} {key}: the call ended with errno {result[key][1]}, "
                         f"expected {want}")
        return {k: v[0] for k, v in result.items()}

    samples = {m: {k: [] for k, *_ in MICRO} for m in MICRO_MODES}
    for m in MICRO_MODES:  # warm-up: page cache, dynamic linker, first scratch directory
        once(m)
    for r in range(reps):
        for m in orders(r, MICRO_MODES):
            for k, v in once(m).items():
                if k in samples[m]:
                    samples[m][k].append(v)
    delegated = per_op_rows([(k, label) for k, label, *_ in MICRO], samples)
    medians = {key: {m: statistics.median(samples[m][key]) for m in MICRO_MODES}
               for key, *_ in MICRO}
    fast = []
    for key, label, *_ in MICRO:
        med = medians[key]
        fast.append({
            "name": key,
            "label": label,
            "native_ns_per_op": round(med["native"], 1),
            "landlock_ns_per_op": round(med["landlock"], 1),
            "fast_ns_per_op": round(med["fast"], 1),
            "ratio": ratio(med["fast"], med["native"]),
            "ratio_to_landlock": ratio(med["fast"], med["landlock"]),
            "landlock_ratio": ratio(med["landlock"], med["native"]),
            "landlock_samples": samples["landlock"][key],
            "fast_samples": samples["fast"][key],
        })
    default = []
    for key, label, *_ in MICRO:
        med = medians[key]
        default.append({
            "name": key,
            "label": label,
            "landlock_ns_per_op": round(med["landlock"], 1),
            "landlock_t_ns_per_op": round(med["landlock-t"], 1),
            "warden_ns_per_op": round(med["warden"], 1),
            "ratio_to_landlock": ratio(med["warden"], med["landlock"]),
            "ratio_to_landlock_t": ratio(med["warden"], med["landlock-t"]),
            "landlock_t_samples": samples["landlock-t"][key],
        })
    floor = []
    for key, label, *_ in MICRO:
        n, f, w = (medians[key][m] for m in ("native", "floor", "warden"))
        floor.append({
            "name": key,
            "label": label,
            "floor_ns_per_op": round(f, 1),
            "floor_ratio": ratio(f, n),
            "warden_to_floor": ratio(w, f),
            "floor_samples": samples["floor"][key],
        })
    view = []
    for key, label, *_ in MICRO:
        med = medians[key]
        view.append({
            "name": key,
            "label": label,
            "native_ns_per_op": round(med["native"], 1),
            "landlock_ns_per_op": round(med["landlock"], 1),
            "view_ns_per_op": round(med["view"], 1),
            "ratio": ratio(med["view"], med["native"]),
            "ratio_to_landlock": ratio(med["view"], med["landlock"]),
            "view_samples": samples["view"][key],
        })
    return {"delegated": delegated, "fast": fast, "view": view, "default": default,
            "filter_floor": floor}


# --- startup -----------------------------------------------------------------------------------

def bubblewrap(program, binds=()):
    """The peer's argv for `program`: bubblewrap with the system's trees read-only (and
    `binds`), its own /proc and /dev, and every namespace unshared, as warden makes them; None
    without bubblewrap."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return None
    links = [a for d in ("bin", "lib", "lib64", "sbin") if os.path.islink("/" + d)
             for a in ("--symlink", os.readlink("/" + d), "/" + d)]
    bound = [a for b in binds for a in ("--ro-bind", b, b)]
    return [bwrap, "--ro-bind", "/usr", "/usr", *links, *bound, "--proc", "/proc",
            "--dev", "/dev", "--unshare-all", "--die-with-parent", program]


def bench_startup():
    argv = {"native": ["/bin/true"], "warden": sandboxed() + ["/bin/true"],
            "view": sandboxed("--view", "off") + ["/bin/true"]}
    peer = bubblewrap("/bin/true")
    if peer:
        argv["bwrap"] = peer
    modes = tuple(argv)
    samples = {m: [] for m in argv}
    for m in argv:
        run_checked(f"startup ({m})", argv[m])
    for r in range(startup_runs):
        for m in orders(r, modes):
            ns, _ = run_checked(f"startup ({m})", argv[m])
            samples[m].append(ns / 1000)
    med = {m: statistics.median(samples[m]) for m in argv}
    n = med["native"]
    split = startup_split()
    return {
        "split": split,
        "name": "startup_true",
        "label": "startup: /bin/true (us per run)",
        "native_us": round(n, 1),
        "warden_us": round(med["warden"], 1),
        "ratio": ratio(med["warden"], n),
        "peers": {m: {"us": round(med[m], 1), "ratio": ratio(med[m], n)}
                  for m in argv if m not in ("native", "warden")},
        "runs": startup_runs,
        "native_samples_us": [round(x, 1) for x in samples["native"]],
        "warden_samples_us": [round(x, 1) for x in samples["warden"]],
    }


def startup_split():
    """bench/clockstamp.c natively, under warden (its directory granted) and under bubblewrap
    (bound): the medians of the time from the spawn to the program's main (it prints the
    monotonic clock as main begins) and from there to the caller's wait returning."""
    stamp = os.path.join(bindir, "clockstamp")
    argv = {"native": [stamp],
            "warden": sandboxed("--read", bindir, "--exec", bindir) + [stamp]}
    peer = bubblewrap(stamp, [bindir])
    if peer:
        argv["bwrap"] = peer
    modes = tuple(argv)
    parts = {m: ([], []) for m in argv}
    for m in argv:
        run_checked(f"startup split ({m})", argv[m])
    for r in range(startup_runs):
        for m in orders(r, modes):
            t0 = time.monotonic_ns()
            _, code, _ = spawn(argv[m])
            t1 = time.monotonic_ns()
            if code != 0:
                fail(f"startup split ({m})", argv[m], code)
            at_main = int(read_out())
            parts[m][0].append((at_main - t0) / 1000)
            parts[m][1].append((t1 - at_main) / 1000)
    return {m: {"to_main_us": round(statistics.median(parts[m][0]), 1),
                "main_to_end_us": round(statistics.median(parts[m][1]), 1),
                "total_us": round(statistics.median([a + b for a, b in zip(*parts[m])]), 1)}
            for m in argv}


# --- net: loopback connect and accept (jailer T1) ------------------------------------------------

NET = [
    # (key, label)
    ("connect", "connect, loopback (the call)"),
    ("connect_cycle", "socket+connect+close, loopback"),
    ("accept", "accept+close per connection, loopback"),
]


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_net():
    import signal
    netbench = os.path.join(bindir, "netbench")
    n = str(connections)

    def policy(direction, port):
        path = os.path.join(work, f"net-{direction}-{port}.policy")
        with open(path, "w") as f:
            f.write(f"net-allow {direction} tcp 127.0.0.1 {port}\n")
        return ["--policy", path, "--read", bindir, "--exec", bindir]

    def measured(mode, argv):
        run_checked(f"the {mode} network benchmark", argv)
        result = {}
        for line in read_out().splitlines():
            name, ns, err = line.split()
            if int(err) != 0:
                sys.exit(f"run.sh: netbench {name} failed with errno {err}")
            result[name] = float(ns)
        return result

    def connect_once(mode):
        port = free_port()
        server = subprocess.Popen([netbench, "serve", str(port), n], stdout=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL)
        server.stdout.readline()  # "ready"
        try:
            argv = [netbench, "connect", str(port), n]
            if mode == "warden":
                argv = sandboxed(*policy("outgoing", port)) + argv
            return measured(mode, argv)
        finally:
            server.send_signal(signal.SIGKILL)
            server.wait()

    def accept_once(mode):
        port = free_port()
        argv = [netbench, "accept", str(port), n]
        if mode == "warden":
            argv = sandboxed(*policy("incoming", port)) + argv
        client = subprocess.Popen([netbench, "dial", str(port), n], stdin=subprocess.DEVNULL)
        try:
            return measured(mode, argv)
        finally:
            if client.wait(timeout=60) != 0:
                sys.exit("run.sh: the network benchmark's client failed")

    def once(mode):
        r = connect_once(mode)
        r.update(accept_once(mode))
        return r

    samples = {m: {k: [] for k, _ in NET} for m in ("native", "warden")}
    for m in samples:
        once(m)
    for r in range(reps):
        for m in orders(r):
            for k, v in once(m).items():
                samples[m][k].append(v)
    return per_op_rows(NET, samples)


# --- scaling: open+close over 1..100 processes (Ostia T4) ----------------------------------------

def bench_scaling():
    files = os.path.join(work, "files")
    os.mkdir(files)
    for i in range(SCALE_FILES):
        with open(os.path.join(files, f"f{i}"), "w") as f:
            f.write(f"file {i}\n")
    os.chmod(files, 0o755)
    scale = os.path.join(bindir, "scale")
    prefix = {"native": [], "warden": sandboxed("--read", files, "--read", bindir, "--exec", bindir)}

    def once(mode, procs, total):
        argv = prefix[mode] + [scale, files, str(SCALE_FILES), str(procs), str(total)]
        run_checked(f"scaling ({mode}, {procs} processes)", argv)
        ns, opens = (int(x) for x in read_out().split())
        return ns, opens

    for m in prefix:  # warm-up
        once(m, 10, min(scale_total, 10000))
    samples = {p: {m: [] for m in prefix} for p in SCALE_PROCS}
    opens = {}
    for r in range(scale_reps):
        for j, p in enumerate(SCALE_PROCS):
            progress(f"scaling: run {r + 1}/{scale_reps}, {p} processes")
            for m in orders(r * len(SCALE_PROCS) + j):
                ns, opens[p] = once(m, p, scale_total)
                samples[p][m].append(ns / 1e9)
    rows = []
    for p in SCALE_PROCS:
        n = statistics.median(samples[p]["native"])
        w = statistics.median(samples[p]["warden"])
        rows.append({
            "processes": p,
            "opens": opens[p],
            "native_s": round(n, 6),
            "warden_s": round(w, 6),
            "ratio": ratio(w, n),
            "native_us_per_open": round(n * 1e6 / opens[p], 3),
            "warden_us_per_open": round(w * 1e6 / opens[p], 3),
            "native_samples_s": [round(x, 4) for x in samples[p]["native"]],
            "warden_samples_s": [round(x, 4) for x in samples[p]["warden"]],
        })
    first, last = rows[0], rows[-1]
    return {
        "total_opens": scale_total,
        "files": SCALE_FILES,
        "reps": scale_reps,
        "rows": rows,
        "p100_ratio_over_p1_ratio": round(last["ratio"] / first["ratio"], 3),
    }


# --- gzip -d of ~30 MB (Ostia T3) --------------------------------------------------------------

def gzip_data():
    """The .gz file: gentext's deterministic text compressed with gzip -6, cached in
    target/bench-data/ under a name that changes with gentext.c and the size."""
    with open(os.path.join(root, "bench", "gentext.c"), "rb") as f:
        tag = hashlib.sha256(f.read()).hexdigest()[:12]
    cache_dir = os.path.join(root, "target", "bench-data")
    cached = os.path.join(cache_dir, f"text-{GZIP_TEXT_BYTES}-{tag}.gz")
    if not os.path.exists(cached):
        progress(f"gzip: generating {cached}")
        os.makedirs(cache_dir, exist_ok=True)
        tmp = cached + ".tmp"
        with open(tmp, "wb") as out:
            gen = subprocess.Popen([os.path.join(bindir, "gentext"), str(GZIP_TEXT_BYTES)],
                                   stdout=subprocess.PIPE)
            gz = subprocess.run(["gzip", "-6", "-n", "-c"], stdin=gen.stdout, stdout=out)
            gen.stdout.close()
            if gen.wait() != 0 or gz.returncode != 0:
                sys.exit("run.sh: could not generate the gzip benchmark's data")
        os.rename(tmp, cached)
    data = os.path.join(work, "data")
    os.mkdir(data)
    os.chmod(data, 0o755)
    dest = os.path.join(data, "text.gz")
    try:
        os.link(cached, dest)
    except OSError:
        shutil.copyfile(cached, dest)
    os.chmod(dest, 0o644)
    return data, dest


def bench_gzip():
    data, gz = gzip_data()
    gzip = shutil.which("gzip") or "/usr/bin/gzip"
    args = [gzip, "-d", "-c", gz]
    argv = {"native": args, "warden": sandboxed("--read", data) + args}
    samples = {m: [] for m in argv}
    for m in argv:  # warm-up: the file in the page cache
        run_checked(f"gzip -d ({m})", argv[m], stdout="/dev/null")
    for r in range(gzip_reps):
        for m in orders(r):
            ns, _ = run_checked(f"gzip -d ({m})", argv[m], stdout="/dev/null")
            samples[m].append(ns / 1e9)
    return macro_row("gzip", f"gzip -d of {os.path.getsize(gz) / 1e6:.1f} MB .gz (s)", samples,
                     {"gz_bytes": os.path.getsize(gz), "text_bytes": GZIP_TEXT_BYTES})


def macro_row(name, label, samples, extra):
    n = statistics.median(samples["native"])
    w = statistics.median(samples["warden"])
    row = {
        "name": name,
        "label": label,
        "native_s": round(n, 6),
        "warden_s": round(w, 6),
        "ratio": ratio(w, n),
        "overhead_pct": round((w / n - 1) * 100, 1),
        "runs": len(samples["native"]),
        "native": {k: round(v, 4) for k, v in spread(samples["native"]).items()},
        "warden": {k: round(v, 4) for k, v in spread(samples["warden"]).items()},
        "native_samples_s": [round(x, 4) for x in samples["native"]],
        "warden_samples_s": [round(x, 4) for x in samples["warden"]],
    }
    row.update(extra)
    return row


# --- configure + make of a C project (Ostia T3, jailer T3) --------------------------------------

def make_project(dest):
    """Writes the project: configure, Makefile, main.c, project.h from bench/cproject, and
    mod_00.c .. from module.c.in, with modules.h listing them."""
    src = os.path.join(root, "bench", "cproject")
    os.mkdir(dest)
    for name in ("configure", "Makefile", "main.c", "project.h"):
        shutil.copy2(os.path.join(src, name), os.path.join(dest, name))
    with open(os.path.join(src, "module.c.in")) as f:
        template = f.read()
    ids = [f"{i:02d}" for i in range(build_modules)]
    for i, mid in enumerate(ids):
        with open(os.path.join(dest, f"mod_{mid}.c"), "w") as f:
            f.write(template.replace("@ID@", mid).replace("@N@", str(i)))
    with open(os.path.join(dest, "modules.h"), "w") as f:
        f.write("#define MODULES " + " ".join(f"X({mid})" for mid in ids) + "\n")


def bench_build():
    pristine = os.path.join(work, "cproject")
    make_project(pristine)
    script = f"./configure && make -j{build_jobs} && make check"
    count = [0]

    def once(mode):
        count[0] += 1
        tree = os.path.join(work, f"build-{mode}-{count[0]}")
        shutil.copytree(pristine, tree)
        os.chmod(tree, 0o755)
        args = ["/bin/sh", "-c", f"cd {tree} && {script}"]
        argv = args if mode == "native" else (
            sandboxed("--read", tree, "--write", tree, "--unlink", tree, "--exec", tree) + args)
        ns, ru = run_checked(f"the build ({mode})", argv)
        with open(os.path.join(tree, "app.out")) as f:
            if not f.read().startswith("ok "):
                sys.exit(f"run.sh: the {mode} build's program did not print ok")
        shutil.rmtree(tree)
        return ns / 1e9, ru.ru_utime + ru.ru_stime

    # Warm-up: the compiler and headers in the page cache, once each way.
    for m in ("native", "warden"):
        tree = os.path.join(work, f"warm-{m}")
        shutil.copytree(pristine, tree)
        args = ["/bin/sh", "-c", f"cd {tree} && ./configure && cc -c -O2 main.c mod_00.c"]
        argv = args if m == "native" else (
            sandboxed("--read", tree, "--write", tree, "--unlink", tree, "--exec", tree) + args)
        run_checked(f"the build warm-up ({m})", argv)
        shutil.rmtree(tree)
    samples = {"native": [], "warden": []}
    cpu = {"native": [], "warden": []}
    for r in range(build_reps):
        progress(f"build: run {r + 1}/{build_reps}")
        for m in orders(r):
            s, c = once(m)
            samples[m].append(s)
            cpu[m].append(c)
    return macro_row("build", f"configure + make, {build_modules + 1} .c files (s)", samples, {
        "modules": build_modules + 1,
        "make_jobs": build_jobs,
        "cpu_s": {m: round(statistics.median(v), 4) for m, v in cpu.items()},
    })


# --- reactive task over pipes (Merry) ----------------------------------------------------------

def bench_reactive():
    grader = os.path.join(bindir, "grader")
    solution = os.path.join(bindir, "solution")
    pin = ["-c", reactive_cpus] if reactive_cpus else []
    argv = {
        "native": [grader, *pin, "QUERIES", solution],
        "warden": [grader, *pin, "QUERIES"] + sandboxed("--read", bindir, "--exec", bindir)
                  + [solution],
    }

    def once(mode, q):
        a = [str(q) if x == "QUERIES" else x for x in argv[mode]]
        run_checked(f"the reactive task ({mode})", a)
        wall_ns, total_us, main_us = (int(x) for x in read_out().split())
        return wall_ns / 1e6, total_us / 1000, main_us / 1000

    for m in argv:  # warm-up
        once(m, min(queries, 10000))
    cpu = {m: [] for m in argv}
    cpu_main = {m: [] for m in argv}
    wall = {m: [] for m in argv}
    for r in range(reactive_runs):
        for m in orders(r):
            w, c, cm = once(m, queries)
            wall[m].append(w)
            cpu[m].append(c)
            cpu_main[m].append(cm)
    n = spread(cpu["native"])
    w = spread(cpu["warden"])
    return {
        "name": "reactive",
        "label": f"reactive: solution user+sys CPU, {queries} queries (ms)",
        "queries": queries,
        "runs": reactive_runs,
        "cpus": reactive_cpus or "not pinned",
        "native_cpu_ms": {k: round(v, 2) for k, v in n.items()},
        "warden_cpu_ms": {k: round(v, 2) for k, v in w.items()},
        "ratio": ratio(w["median"], n["median"]),
        "overhead_pct": round((w["median"] / n["median"] - 1) * 100, 1),
        "stdev_ratio": ratio(w["stdev"], n["stdev"]),
        "native_cpu_in_main_ms": round(statistics.median(cpu_main["native"]), 2),
        "warden_cpu_in_main_ms": round(statistics.median(cpu_main["warden"]), 2),
        "native_wall_ms": round(statistics.median(wall["native"]), 2),
        "warden_wall_ms": round(statistics.median(wall["warden"]), 2),
        "native_cpu_samples_ms": cpu["native"],
        "warden_cpu_samples_ms": cpu["warden"],
    }


# --- capsicum: the Capsicum paper's figures (section 5) -----------------------------------------

CAP_CALLS = [
    # (key, label)
    ("pread_unlimited", "pread 1 B, descriptor with every right"),
    ("pread_limited", "pread 1 B, descriptor limited to read (kernel's access mode)"),
    ("openat_policy", "openat+close through a directory, outside capability mode"),
    ("openat_beneath", "openat+close beneath a directory capability (rights checked)"),
    ("fork", "fork + exit + waitpid"),
    ("pdfork", "pdfork + exit + pdwait"),
    ("sandbox_rpc", "pdfork sandbox (cap_enter) + one RPC + destruction, in-process"),
    ("enter", "cap_enter"),
]
CAP_SIZES = [1, 1024, 64 * 1024, 1024 * 1024, 16 * 1024 * 1024]


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def bench_capsicum():
    load_before = loadavg()
    capdir = os.path.join(work, "capsicum")
    os.mkdir(capdir)
    os.chmod(capdir, 0o777)
    with open(os.path.join(capdir, "f"), "w") as f:
        f.write("capsicum\n")
    os.chmod(os.path.join(capdir, "f"), 0o666)
    capbench = os.path.join(bindir, "capbench")
    n = str(max(iterations // 4, 1000))
    grants = ["--capsicum", "--read", work, "--write", capdir, "--exec", bindir]
    args = [capbench, "calls", capdir, n]
    argv = {"native": args, "warden": sandboxed(*grants) + args}

    def once(mode):
        run_checked(f"capbench ({mode})", argv[mode])
        got = {}
        for line in read_out().splitlines():
            name, ns, err = line.split()
            # Natively cap_enter and cap_rights_limit are ENOSYS (no warden): the calls that
            # depend on them still run, without the mode.
            if int(err) != 0 and not (mode == "native" and name == "enter"):
                sys.exit(f"run.sh: capbench ({mode}) {name} failed with errno {err}")
            got[name] = float(ns)
        return got

    samples = {m: {k: [] for k, _ in CAP_CALLS} for m in argv}
    for m in argv:
        once(m)
    for r in range(reps):
        for m in orders(r):
            for k, v in once(m).items():
                samples[m][k].append(v)
    rows = per_op_rows(CAP_CALLS, samples)
    med = {m: {k: statistics.median(v) for k, v in samples[m].items()} for m in argv}
    within = {
        "rights_check_pread": ratio(med["warden"]["pread_limited"], med["warden"]["pread_unlimited"]),
        "rights_check_openat": ratio(med["warden"]["openat_beneath"], med["warden"]["openat_policy"]),
        "pdfork_over_fork_native": ratio(med["native"]["pdfork"], med["native"]["fork"]),
        "pdfork_over_fork_warden": ratio(med["warden"]["pdfork"], med["warden"]["fork"]),
    }

    # The paper's "sandbox creation + one RPC + destruction" on the real path: the host runs
    # natively and starts each sandbox with lch_start (warden run --capability-mode).
    lch_n = "5" if quick else "20"
    lch = []
    for r in range(reps):
        run_checked("capbench lch", [capbench, "lch", warden, bindir, lch_n])
        name, ns, err = read_out().split()
        if int(err) != 0:
            sys.exit(f"run.sh: capbench lch failed with errno {err}")
        lch.append(float(ns))

    # The compartmentalised decompressor's start-up penalty per file: the same program,
    # decompressing in-process (plain) or in a sandboxed child (sandbox), under warden.
    texts = os.path.join(work, "captext")
    os.mkdir(texts)
    os.chmod(texts, 0o777)
    gz_rows = []
    gz_reps = max(gzip_reps, 5)
    for size in CAP_SIZES:
        plain_path = os.path.join(texts, f"t{size}")
        with open(plain_path, "wb") as out:
            gen = subprocess.run([os.path.join(bindir, "gentext"), str(size)], capture_output=True)
            out.write(gen.stdout[:size])
        subprocess.run(["gzip", "-6", "-n", "-f", "-k", plain_path], check=True)
        gz = plain_path + ".gz"
        os.chmod(gz, 0o644)
        dest = os.path.join(texts, f"out{size}")
        kinds = {}
        for how in ("plain", "sandbox"):
            a = [capbench, "gunzip", gz, dest, how]
            kinds[f"native_{how}"] = a
            kinds[f"warden_{how}"] = sandboxed("--capsicum", "--read", work, "--write", texts,
                                               "--exec", bindir) + a
        t = {k: [] for k in kinds}
        for r in range(gz_reps + 1):
            for k in orders(r, tuple(kinds)):
                run_checked(f"capbench gunzip ({k}, {size} B)", kinds[k])
                name, ns, _ = read_out().split()
                if r:  # the first round warms up
                    t[k].append(float(ns) / 1000)
        m = {k: statistics.median(v) for k, v in t.items()}
        gz_rows.append({
            "bytes": size,
            "native_plain_us": round(m["native_plain"], 1),
            "native_sandbox_us": round(m["native_sandbox"], 1),
            "warden_plain_us": round(m["warden_plain"], 1),
            "warden_sandbox_us": round(m["warden_sandbox"], 1),
            "penalty_us": round(m["warden_sandbox"] - m["warden_plain"], 1),
            "ratio": ratio(m["warden_sandbox"], m["warden_plain"]),
        })
    return {"calls": rows, "within": within, "gunzip": gz_rows,
            "lch": {"ns_per_op": round(statistics.median(lch), 1), "samples": lch,
                    "per_run": int(lch_n)},
            "load": {"before": load_before, "after": loadavg()}}


# --- agent: the agent's own work per call on walks ----------------------------------------------

AGENT_SHAPES = [
    # (key, label, cwd below the tree ("" for /), path; DEEP is the 8-directory path)
    ("absolute", "stat /…/d8/file (absolute)", "", "{tree}/DEEP/file"),
    ("dotdot", "stat /…/d2/../d2/…/d4/../d4/…/file (absolute, ..)", "",
     "{tree}/d1/d2/../d2/d3/d4/../d4/d5/d6/d7/d8/file"),
    ("relative", "stat file (cwd 8 deep)", "DEEP", "file"),
    ("relative_dotdot", "stat ../../d7/d8/file (cwd 8 deep)", "DEEP", "../../d7/d8/file"),
    ("relative_down", "stat d5/d6/d7/d8/file (cwd 4 deep)", "d1/d2/d3/d4", "d5/d6/d7/d8/file"),
]


def report_values(path):
    values = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.strip().partition(":")
            values[key] = value
    return values


def bench_agent():
    """Each shape under `warden run --view off` (every stat delegated to the agent), for this
    warden and the --base one, interleaved: the agent's own time and CPU per call (from the run
    report, divided by the delegated stats) and the round trip the program sees."""
    tree = os.path.join(work, "walk")
    deep = "d1/d2/d3/d4/d5/d6/d7/d8"
    os.makedirs(os.path.join(tree, deep))
    with open(os.path.join(tree, deep, "file"), "w") as f:
        f.write("x")
    for d, _, _ in os.walk(tree):
        os.chmod(d, 0o755)
    report = os.path.join(work, "walk-report")
    builds = {"warden": warden}
    if base_warden:
        builds["base"] = base_warden

    def once(build, shape):
        _key, _label, cwd, path = shape
        path = path.format(tree=tree).replace("DEEP", deep)
        chdir = os.path.join(tree, cwd.replace("DEEP", deep)) if cwd else "/"
        argv = [builds[build], "run", "--view", "off", "--read", tree, "--read", bindir,
                "--exec", bindir, "--chdir", chdir, "--report", report, "--",
                os.path.join(bindir, "walkbench"), path, str(iterations)]
        run_checked(f"the {build} walk benchmark", argv)
        name, ns, err = read_out().split()
        if int(err) != 0:
            sys.exit(f"run.sh: {build} walkbench {path}: errno {err}")
        r = report_values(report)
        calls = int(r.get("delegated-stat", "0"))
        if calls < iterations:
            sys.exit(f"run.sh: {build} walkbench {path}: {calls} delegated stats, expected "
                     f"at least {iterations}")
        return (float(ns), float(r["agent-time"]) / calls * 1e9,
                float(r["agent-cpu"]) / calls * 1e9)

    samples = {b: {s[0]: [] for s in AGENT_SHAPES} for b in builds}
    for b in builds:  # warm-up
        once(b, AGENT_SHAPES[0])
    load_before = loadavg()
    for r in range(reps):
        for shape in AGENT_SHAPES:
            for b in orders(r, tuple(builds)):
                samples[b][shape[0]].append(once(b, shape))
    rows = []
    for key, label, *_ in AGENT_SHAPES:
        row = {"name": key, "label": label}
        for b in builds:
            xs = samples[b][key]
            row[b] = {
                "round_trip_ns": round(statistics.median(x[0] for x in xs), 1),
                "agent_time_ns": round(statistics.median(x[1] for x in xs), 1),
                "agent_cpu_ns": round(statistics.median(x[2] for x in xs), 1),
                "agent_cpu_samples_ns": [round(x[2], 1) for x in xs],
            }
        if "base" in builds:
            row["agent_cpu_ratio"] = ratio(row["warden"]["agent_cpu_ns"],
                                           row["base"]["agent_cpu_ns"])
        rows.append(row)
    return {"rows": rows, "base": base_warden or None,
            "load": {"before": load_before, "after": loadavg()}}


# --- modes: the degraded modes issue 36 added, each on this host by the refusal that causes it --

# Each mode: (key, label, argv prefix before `warden run`, warden flags). The refusals are made
# by a seccomp filter around warden, as a container profile or a locked-down host makes them
# (run.sh builds the wrappers from tests/c): the run is then in the mode a host without the
# primitive gives.
def mode_prefixes():
    wrap = os.path.join(bindir, "nouserns_wrap")
    supervise = os.path.join(bindir, "supervise")
    deny = lambda calls: ["/usr/bin/env", "SUPERVISE_NO_LISTENER=1", f"SUPERVISE_DENY={calls}",
                          supervise]
    return [
        ("default", "default (a view, user namespaces, Landlock)", [], []),
        ("host_tree", "host's tree (--view off)", [], ["--view", "off"]),
        ("nouserns", "no user namespaces (Docker's default profile)", [wrap, "docker"], []),
        ("no_landlock", "no Landlock (the agent decides every file call)",
         [os.path.join(bindir, "no_landlock")], []),
        ("proc_mem", "arguments read through /proc/PID/mem (process_vm_readv refused)",
         deny("process_vm_readv,process_vm_writev"), []),
        ("no_pidfd_getfd", "descriptors through /proc/TID/fd (pidfd_getfd refused)",
         deny("pidfd_getfd"), []),
        ("no_wait_killable", "no WAIT_KILLABLE_RECV (a kernel before 5.19)",
         ["/usr/bin/env", "SUPERVISE_NO_LISTENER=1", "SUPERVISE_NO_WAIT_KILLABLE=1", supervise], []),
    ]


def bench_modes():
    """Per-call cost (bench/microbench.c) and the start (/bin/true) in each mode, interleaved
    with native in the same runs."""
    allowed = os.path.join(work, "allowed")
    args = [os.path.join(bindir, "microbench"), os.path.join(allowed, "data.txt"),
            os.path.join(work, "denied.txt"), str(iterations)]
    grants = ["--read", allowed, "--read", bindir, "--exec", bindir]
    modes = mode_prefixes()
    micro_argv = {"native": args}
    start_argv = {"native": ["/bin/true"]}
    for key, _label, prefix, flags in modes:
        micro_argv[key] = prefix + sandboxed(*flags, *grants) + args
        start_argv[key] = prefix + sandboxed(*flags) + ["/bin/true"]
    names = tuple(micro_argv)

    def once(mode):
        run_checked(f"the {mode} microbenchmark", micro_argv[mode])
        result = {}
        for line in read_out().splitlines():
            name, ns, err = line.split()
            result[name] = (float(ns), int(err))
        for key, _label, want_native, want_confined in MICRO:
            if key not in result:
                sys.exit(f"run.sh: {mode} microbenchmark printed no {key} line")
            got = result[key][1]
            if mode == "native":
                ok = got == want_native
            elif key == "open_denied":
                # Refused: by the agent or Landlock (EACCES), or absent from a view (ENOENT).
                ok = got in (errno.EACCES, errno.ENOENT)
            else:
                ok = got == want_confined
            if not ok:
                sys.exit(f"run.sh: modes: {mode} {key}: the call ended with errno {got}")
        return {k: v[0] for k, v in result.items()}

    micro = {m: {k: [] for k, *_ in MICRO} for m in names}
    start = {m: [] for m in names}
    for m in names:  # warm-up
        once(m)
        run_checked(f"startup ({m})", start_argv[m])
    for r in range(reps):
        for m in orders(r, names):
            for k, v in once(m).items():
                if k in micro[m]:
                    micro[m][k].append(v)
    for r in range(startup_runs):
        for m in orders(r, names):
            ns, _ = run_checked(f"startup ({m})", start_argv[m])
            start[m].append(ns / 1000)
    rows = []
    for key, label, _prefix, _flags in modes:
        row = {"mode": key, "label": label}
        for k, *_ in MICRO:
            n = statistics.median(micro["native"][k])
            w = statistics.median(micro[key][k])
            row[k] = {"ns_per_op": round(w, 1), "ratio": ratio(w, n)}
        n = statistics.median(start["native"])
        w = statistics.median(start[key])
        row["startup"] = {"us": round(w, 1), "ratio": ratio(w, n)}
        rows.append(row)
    native = {k: round(statistics.median(micro["native"][k]), 1) for k, *_ in MICRO}
    native["startup_us"] = round(statistics.median(start["native"]), 1)
    return {"rows": rows, "native": native, "load": loadavg()}


# --- policies: the per-call cost under the policies users write ---------------------------------

POLICY_CALLS = [("open_close", "open+close"), ("stat", "stat")]


def grant_rules(grants):
    """The policy lines `warden run` makes of --read/--write/--unlink/--exec PATH (a directory:
    it and everything beneath it), for `warden check --explain`, which takes only files. Written
    here, not asked of warden: if run's expansion of the flags changes, the table's explain
    column and the run report's disagree ("differs") until this follows."""
    lines = []
    for flag, path in zip(grants[::2], grants[1::2]):
        pats = [path, path + "/*"] if os.path.isdir(path) else [path]
        # --exec reads what it runs too.
        for access in (["read", "exec"] if flag == "--exec" else [flag[2:]]):
            lines.append(f"path-allow {access} {' '.join(pats)}")
    return lines


def explain_opens(files, alone=False):
    """`warden check --explain FILES`: whether opens in the sandbox's own view go "straight to
    the kernel" or are "decided by the agent" (its line "opens in the sandbox's own view"), for
    a run on top of the default policy or, with `alone`, with --default-policy=no (the line
    adds "with --default-policy=no the agent decides them" when only the default makes the rules
    exact); the line itself as the second value."""
    argv = [warden, "check", "--explain", *files]
    run_checked("warden check --explain", argv)
    for line in read_out().splitlines():
        if line.startswith("opens in the sandbox's own view"):
            if "straight to the kernel" in line:
                if alone and "with --default-policy=no the agent decides them" in line:
                    return "agent", line
                return "kernel", line
            if "decided by the agent" in line:
                return "agent", line
            return "?", line
    sys.exit(f"run.sh: `{' '.join(argv)}` printed no \"opens in the sandbox's own view\" line")


def bench_policies():
    """bench/microbench.c natively and under `warden run` with each policy a user brings (the
    default with the program's directory granted, --exec DIR alone, an Ostia-style hand-written
    policy with and without the default, the policy `warden learn` writes, --here, each shipped
    profile), interleaved in the same runs; for each, whether `warden check --explain` says its
    opens go to the kernel, and what the run report counted (delegated opens and stats)."""
    load_before = loadavg()
    pol = os.path.join(work, "policies")
    # The work tree: a checkout-like directory (the Ostia policy's DIR, --here's project) with
    # the program in bin/ and the file it opens in allowed/, which every row opens.
    proj = os.path.join(pol, "proj")
    for d in ("bin", "allowed", "src", ".git", ".git/hooks", ".git/refs/heads"):
        os.makedirs(os.path.join(proj, d))
    with open(os.path.join(proj, ".git", "HEAD"), "w") as f:
        f.write("ref: refs/heads/main\n")
    with open(os.path.join(proj, ".git", "config"), "w") as f:
        f.write("[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
    with open(os.path.join(proj, "src", "main.c"), "w") as f:
        f.write("int main(void) { return 0; }\n")
    data = os.path.join(proj, "allowed", "data.txt")
    with open(data, "w") as f:
        f.write("allowed data\n")
    micro = os.path.join(bindir, "microbench")
    shutil.copy2(micro, os.path.join(proj, "bin", "microbench"))
    # --exec DIR: a fresh directory outside the default trees, holding only the program.
    exec_dir = os.path.join(pol, "exec")
    os.mkdir(exec_dir)
    shutil.copy2(micro, os.path.join(exec_dir, "microbench"))
    for d, _, names in os.walk(pol):
        os.chmod(d, 0o755)
        for n in names:
            os.chmod(os.path.join(d, n), 0o755 if n == "microbench" else 0o644)
    denied = os.path.join(work, "denied.txt")

    def args(prog):
        return [prog, data, denied, str(iterations)]

    def policy_file(name, lines):
        path = os.path.join(pol, name)
        with open(path, "w") as f:
            f.write("".join(line + "\n" for line in lines))
        return path

    # The Ostia-style policy, with the work tree substituted.
    with open(os.path.join(root, "bench", "policies", "ostia.policy")) as f:
        ostia = policy_file("ostia.policy", [line.replace("@DIR@", proj)
                                             for line in f.read().splitlines()])
    # The policy `warden learn` writes for the program (learned once per benchmark run, from a
    # short run of the same command).
    learned = os.path.join(pol, "learned.policy")
    run_checked("warden learn", [warden, "learn", "-o", learned, "--"]
                + [micro, data, denied, "200"])

    grants = ["--read", os.path.dirname(data), "--read", bindir, "--exec", bindir]
    exec_grants = ["--read", os.path.dirname(data), "--exec", exec_dir]
    here_rules = [f"path-allow {a} {proj} {proj}/*" for a in ("read", "write", "unlink", "exec")]
    # (key, label, warden flags, program, cwd, the policy files `warden check --explain` reads)
    rows = [
        ("default", "default policy (+ --read/--exec of the program's directory, as micro)",
         grants, micro, None, [policy_file("default.policy", grant_rules(grants))]),
        ("exec", "--exec DIR (the program's own directory, no --read of it)", exec_grants,
         os.path.join(exec_dir, "microbench"), None,
         [policy_file("exec.policy", grant_rules(exec_grants))]),
        ("ostia_alone", "Ostia-style, --default-policy=no",
         ["--default-policy=no", "--policy", ostia], os.path.join(proj, "bin", "microbench"),
         None, [ostia]),
        ("ostia", "Ostia-style, on top of the default policy", ["--policy", ostia],
         os.path.join(proj, "bin", "microbench"), None, [ostia]),
        ("learned", "learned (`warden learn -o FILE`, then --policy FILE)", ["--policy", learned],
         micro, None, [learned]),
        ("here", "--here (from the checkout-like work tree)", ["--here"],
         os.path.join(proj, "bin", "microbench"), proj,
         [policy_file("here.policy", here_rules)]),
    ]
    profiles_dir = os.path.join(root, "profiles")
    for name in sorted(os.listdir(profiles_dir)):
        if name.endswith(".policy"):
            profile = name[:-len(".policy")]
            rows.append((f"profile_{profile}", f"--profile {profile} (+ the default row's grants)",
                         ["--profile", profile, *grants], micro, None,
                         [os.path.join(profiles_dir, name), policy_file(f"profile-{profile}-grants.policy",
                                                                        grant_rules(grants))]))
    argv = {"native": (args(micro), None)}
    for key, _label, flags, prog, cwd, _files in rows:
        argv[key] = (sandboxed(*flags) + args(prog), cwd)
    modes = tuple(argv)
    verdicts = {key: explain_opens(files, alone="--default-policy=no" in flags)
                for key, _l, flags, _p, _c, files in rows}
    report = os.path.join(pol, "report")

    def once(mode, with_report=False):
        a, cwd = argv[mode]
        if with_report:
            a = a[:2] + ["--report", report] + a[2:]
        here = os.getcwd()
        if cwd:
            os.chdir(cwd)
        try:
            run_checked(f"the microbenchmark under the {mode} policy", a)
        finally:
            os.chdir(here)
        result = {}
        for line in read_out().splitlines():
            name, ns, err = line.split()
            result[name] = (float(ns), int(err))
        for key, _label in POLICY_CALLS:
            if key not in result:
                sys.exit(f"run.sh: policies: {mode}: the microbenchmark printed no {key} line")
            if result[key][1] != 0:
                sys.exit(f"run.sh: policies: {mode} {key}: the call ended with errno "
                         f"{result[key][1]}")
        return {k: v[0] for k, v in result.items()}

    # Warm-up, with the run report: what the agent was asked (delegated opens and stats). A
    # policy under which the program does not run is a finding, not the end of the section: its
    # row says why, and it is left out of the timed runs.
    delegated = {}
    failed = {}
    for m in modes:
        if m == "native":
            once(m)
            continue
        try:
            once(m, with_report=True)
        except SystemExit as e:
            failed[m] = str(e).strip().splitlines()[-1] if str(e).strip() else "failed"
            progress(f"policies: {m}: the program did not run: {failed[m]}")
            continue
        r = report_values(report)
        delegated[m] = {k: int(r.get(f"delegated-{k}", "0")) for k in ("open", "stat")}
    modes = tuple(m for m in modes if m not in failed)
    samples = {m: {k: [] for k, _ in POLICY_CALLS} for m in modes}
    for r in range(reps):
        progress(f"policies: run {r + 1}/{reps}")
        for m in orders(r, modes):
            for k, v in once(m).items():
                if k in samples[m]:
                    samples[m][k].append(v)
    native = {k: statistics.median(samples["native"][k]) for k, _ in POLICY_CALLS}
    out = []
    for key, label, flags, _prog, _cwd, _files in rows:
        row = {"name": key, "label": label, "flags": flags,
               "explain": verdicts[key][0], "explain_line": verdicts[key][1]}
        if key in failed:
            row["failed"] = failed[key]
            out.append(row)
            continue
        row.update({"delegated": delegated[key],
               # The run's own answer: the agent was asked at least once per iteration.
               "measured": ("agent" if delegated[key]["open"] + delegated[key]["stat"]
                            >= iterations else "kernel")})
        for k, _ in POLICY_CALLS:
            w = statistics.median(samples[key][k])
            row[k] = {"ns_per_op": round(w, 1), "ratio": ratio(w, native[k]),
                      "samples": samples[key][k]}
        out.append(row)
    with open(learned) as f:
        learned_text = f.read()
    return {"rows": out,
            "native": {k: {"ns_per_op": round(v, 1), "samples": samples["native"][k]}
                       for k, v in native.items()},
            "learned_policy": learned_text,
            "load": {"before": load_before, "after": loadavg()}}


# --- concurrent: many sandboxes started at once -----------------------------------------------

CONCURRENT_COUNTS = [1, 10, 50, 100]


def percentile(xs, p):
    """The nearest-rank percentile p (0..100) of xs."""
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, -(-len(s) * p // 100) - 1))]


def bench_concurrent():
    """N copies of /bin/true started at once (bench/concurrent.c forks them all, then releases
    them together and times each from the release to its exit), natively, under `warden run` and
    under bubblewrap as the startup section runs it, for N in CONCURRENT_COUNTS; which goes first
    rotates. Per N: the median over the repetitions of the total wall time and of each run's p50
    and p99 start latency."""
    load_before = loadavg()
    launcher = os.path.join(bindir, "concurrent")
    children = os.path.join(work, "concurrent-children")  # the N programs' stdout and stderr
    commands = {"native": ["/bin/true"], "warden": sandboxed() + ["/bin/true"]}
    peer = bubblewrap("/bin/true")
    if peer:
        commands["bwrap"] = peer
    modes = tuple(commands)

    def once(mode, n):
        argv = [launcher, str(n), children] + commands[mode]
        run_checked(f"{n} concurrent starts ({mode}; their output is in {children})", argv)
        lines = read_out().split()
        if lines[0] != "total" or len(lines) != n + 2:
            sys.exit(f"run.sh: concurrent ({mode}, {n}): unexpected output from {launcher}")
        lat = [int(x) / 1e6 for x in lines[2:]]
        return int(lines[1]) / 1e6, percentile(lat, 50), percentile(lat, 99)

    for m in modes:  # warm-up
        once(m, 10)
    samples = {n: {m: [] for m in modes} for n in CONCURRENT_COUNTS}
    for r in range(concurrent_reps):
        progress(f"concurrent: run {r + 1}/{concurrent_reps}")
        for j, n in enumerate(CONCURRENT_COUNTS):
            for m in orders(r * len(CONCURRENT_COUNTS) + j, modes):
                samples[n][m].append(once(m, n))
    rows = []
    for n in CONCURRENT_COUNTS:
        row = {"n": n}
        for m in modes:
            xs = samples[n][m]
            row[m] = {"total_ms": round(statistics.median(x[0] for x in xs), 2),
                      "p50_ms": round(statistics.median(x[1] for x in xs), 2),
                      "p99_ms": round(statistics.median(x[2] for x in xs), 2),
                      "total_samples_ms": [round(x[0], 2) for x in xs]}
        row["warden_over_native"] = ratio(row["warden"]["total_ms"], row["native"]["total_ms"])
        if "bwrap" in row:
            row["bwrap_over_native"] = ratio(row["bwrap"]["total_ms"], row["native"]["total_ms"])
            row["warden_over_bwrap"] = ratio(row["warden"]["total_ms"], row["bwrap"]["total_ms"])
        rows.append(row)
    return {"rows": rows, "reps": concurrent_reps, "bwrap": peer,
            "load": {"before": load_before, "after": loadavg()}}


# --- main --------------------------------------------------------------------------------------

results = {}
for section, fn in [("micro", bench_micro), ("startup", bench_startup), ("net", bench_net),
                   ("scaling", bench_scaling),
                   ("gzip", bench_gzip), ("build", bench_build), ("reactive", bench_reactive),
                   ("agent", bench_agent), ("capsicum", bench_capsicum), ("modes", bench_modes),
                   ("policies", bench_policies), ("concurrent", bench_concurrent)]:
    if section in sections:
        progress(f"{section}...")
        results[section] = fn()

elapsed = time.time() - float(env["BENCH_STARTED"])
try:
    version = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"],
                             capture_output=True, text=True).stdout.strip()
except OSError:
    version = ""
# A --warden binary is not necessarily the checkout's build: name it, not the checkout's commit.
if os.path.realpath(warden) != os.path.realpath(os.path.join(root, "target/release/warden")):
    version = f"{warden} (given with --warden; the checkout is at {version or '?'})"
machine = {
    "cpus": os.cpu_count(),
    "kernel": platform.release(),
    "warden": warden,
    "git": version,
    "mode": "quick" if quick else "full",
}
settings = {
    "reps": reps, "iterations": iterations, "startup_runs": startup_runs,
    "scale_total": scale_total, "scale_reps": scale_reps, "gzip_reps": gzip_reps,
    "build_reps": build_reps, "build_modules": build_modules, "build_jobs": build_jobs,
    "queries": queries, "reactive_runs": reactive_runs, "reactive_cpus": reactive_cpus,
    "connections": connections, "concurrent_reps": concurrent_reps,
}

if as_json:
    doc = {"machine": machine, "settings": settings}
    if "micro" in results:
        doc["benchmarks"] = results["micro"]["delegated"]
        doc["fast_path"] = results["micro"]["fast"]
        doc["view"] = results["micro"]["view"]
        doc["filter_floor"] = results["micro"]["filter_floor"]
    if "startup" in results:
        doc["startup"] = results["startup"]
    if "net" in results:
        doc["net"] = results["net"]
    if "scaling" in results:
        doc["scaling"] = results["scaling"]
    macro = {k: results[k] for k in ("gzip", "build", "reactive") if k in results}
    if macro:
        doc["macro"] = macro
    if "agent" in results:
        doc["agent"] = results["agent"]
    if "capsicum" in results:
        doc["capsicum"] = results["capsicum"]
    if "modes" in results:
        doc["modes"] = results["modes"]
    if "policies" in results:
        doc["policies"] = results["policies"]
    if "concurrent" in results:
        doc["concurrent"] = results["concurrent"]
    doc["elapsed_s"] = round(elapsed, 1)
    print(json.dumps(doc, indent=2))
    sys.exit(0)


def table(title, header, rows):
    print()
    print(f"## {title}")
    t = [header] + rows
    widths = [max(len(r[i]) for r in t) for i in range(len(header))]
    for i, row in enumerate(t):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        print("| " + " | ".join(cells) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def x(r):
    return f"{r:.2f}x" if r is not None else "-"


def pct(r):
    return f"{(r - 1) * 100:+.1f}%"


print(f"# warden benchmarks ({machine['mode']}): {machine['cpus']} CPUs, Linux {machine['kernel']}, "
      f"warden {version or '?'}; native and warden interleaved in one run; "
      f"ratio = warden / native; took {elapsed:.0f} s")
if "micro" in results or "startup" in results:
    rows = []
    for r in results["micro"]["delegated"] if "micro" in results else []:
        rows.append((r["label"], f"{r['native_ns_per_op']:.1f}", f"{r['warden_ns_per_op']:.1f}",
                     x(r["ratio"])))
    if "startup" in results:
        s = results["startup"]
        rows.append((s["label"], f"{s['native_us']:.1f}", f"{s['warden_us']:.1f}", x(s["ratio"])))
        for peer, label in (("view", "startup on the host's tree (--view off)"),
                            ("bwrap", "startup: bubblewrap (peer)")):
            if peer in s["peers"]:
                p = s["peers"][peer]
                rows.append((label, f"{s['native_us']:.1f}", f"{p['us']:.1f}", x(p["ratio"])))
    what = []
    if "micro" in results:
        what.append(f"per call: medians of {reps} runs of {iterations} iterations (geteuid x50)")
    if "startup" in results:
        what.append(f"startup: median of {startup_runs} runs")
    table("; ".join(what), ("benchmark", "native ns/op", "warden ns/op", "ratio"), rows)
if "startup" in results:
    split = results["startup"]["split"]
    rows = [(label, f"{split[m]['to_main_us']:.1f}", f"{split[m]['main_to_end_us']:.1f}",
             f"{split[m]['total_us']:.1f}")
            for m, label in (("native", "native"), ("warden", "warden run"),
                             ("bwrap", "bubblewrap (peer)")) if m in split]
    table(f"startup, split where the program's main begins (bench/clockstamp.c): medians of "
          f"{startup_runs} runs, us", ("", "to main", "main to end", "total"), rows)
if "micro" in results:
    rows = [(r["label"], f"{r['landlock_ns_per_op']:.1f}", f"{r['landlock_t_ns_per_op']:.1f}",
             f"{r['warden_ns_per_op']:.1f}", x(r["ratio_to_landlock"]),
             x(r["ratio_to_landlock_t"]))
            for r in results["micro"]["default"] if r["name"] != "open_denied"]
    table("default: `warden run` (a view, the kernel first) against pure Landlock, every right "
          "handled (bench/landlock-run.c) and truncate unhandled as in warden (-t), same runs",
          ("benchmark", "Landlock ns/op", "Landlock -t ns/op", "warden ns/op",
           "warden/Landlock", "warden/Landlock -t"), rows)
    rows = [(r["label"], f"{r['native_ns_per_op']:.1f}", f"{r['landlock_ns_per_op']:.1f}",
             f"{r['fast_ns_per_op']:.1f}", x(r["ratio"]), x(r["ratio_to_landlock"]))
            for r in results["micro"]["fast"]]
    table("fast path: `warden run --fast-path=always` (opens go to the kernel; stat still to the "
          "agent) against pure Landlock (bench/landlock-run.c), same runs",
          ("benchmark", "native ns/op", "Landlock ns/op", "fast ns/op", "fast/native",
           "fast/Landlock"), rows)
    rows = [(r["label"], f"{r['native_ns_per_op']:.1f}", f"{r['landlock_ns_per_op']:.1f}",
             f"{r['view_ns_per_op']:.1f}", x(r["ratio"]), x(r["ratio_to_landlock"]))
            for r in results["micro"]["view"]]
    table("host's tree: `warden run --view off`, the default policy (every open and stat "
          "delegated to the agent), same runs",
          ("benchmark", "native ns/op", "Landlock ns/op", "--view off ns/op", "off/native",
           "off/Landlock"), rows)
    floor = {r["name"]: r for r in results["micro"]["filter_floor"]}
    rows = [(floor[k]["label"], f"{floor[k]['floor_ns_per_op']:.1f}", x(floor[k]["floor_ratio"]),
             x(floor[k]["warden_to_floor"]))
            for k in ("geteuid", "getcwd")]
    table("kernel floor: a one-instruction allow-all seccomp filter (bench/filter-floor.c), same "
          "runs", ("benchmark", "floor ns/op", "floor/native", "warden/floor"), rows)
if "net" in results:
    rows = [(r["label"], f"{r['native_ns_per_op']:.1f}", f"{r['warden_ns_per_op']:.1f}", x(r["ratio"]))
            for r in results["net"]]
    table(f"network (jailer T1): {connections} connections per run, medians of {reps} runs; "
          "the peer runs natively", ("benchmark", "native ns/op", "warden ns/op", "ratio"), rows)
if "scaling" in results:
    s = results["scaling"]
    rows = [(f"{r['processes']} process{'es' if r['processes'] > 1 else ''}",
             f"{r['native_s']:.3f}", f"{r['warden_s']:.3f}", x(r["ratio"]))
            for r in s["rows"]]
    rows.append(("p100 ratio / p1 ratio", "", "", f"{s['p100_ratio_over_p1_ratio']:.2f}"))
    table(f"scaling (Ostia T4): open+close of {s['total_opens']} files in total, split over N "
          f"processes; wall s, median of {s['reps']}", ("processes", "native s", "warden s", "ratio"),
          rows)
macro_rows = []
for k in ("gzip", "build"):
    if k in results:
        r = results[k]
        macro_rows.append((r["label"], f"{r['native_s']:.3f}", f"{r['warden_s']:.3f}",
                           f"{x(r['ratio'])} ({pct(r['ratio'])})"))
        macro_rows.append(("  min .. max", f"{r['native']['min']:.3f} .. {r['native']['max']:.3f}",
                           f"{r['warden']['min']:.3f} .. {r['warden']['max']:.3f}", ""))
if "reactive" in results:
    r = results["reactive"]
    n, w = r["native_cpu_ms"], r["warden_cpu_ms"]
    macro_rows.append((r["label"], f"{n['median']:.1f}", f"{w['median']:.1f}",
                       f"{x(r['ratio'])} ({pct(r['ratio'])})"))
    macro_rows.append(("  min .. max", f"{n['min']:.1f} .. {n['max']:.1f}",
                       f"{w['min']:.1f} .. {w['max']:.1f}", ""))
    macro_rows.append(("  stdev (ratio: warden / native)", f"{n['stdev']:.2f}", f"{w['stdev']:.2f}",
                       x(r["stdev_ratio"])))
    macro_rows.append(("  grader's wall time (ms)", f"{r['native_wall_ms']:.1f}",
                       f"{r['warden_wall_ms']:.1f}",
                       x(ratio(r["warden_wall_ms"], r["native_wall_ms"]))))
if macro_rows:
    runs = []
    if "gzip" in results:
        runs.append(f"gzip {gzip_reps}")
    if "build" in results:
        runs.append(f"build {build_reps} (make -j{build_jobs})")
    if "reactive" in results:
        runs.append(f"reactive {reactive_runs}, "
                    + (f"grader, solution on CPUs {reactive_cpus}" if reactive_cpus else "not pinned"))
    table(f"macro: medians (runs of each: {'; '.join(runs)})", ("benchmark", "native", "warden", "ratio"),
          macro_rows)
if "agent" in results:
    a = results["agent"]
    rows = []
    for r in a["rows"]:
        for b in ("warden", "base"):
            if b in r:
                m = r[b]
                rows.append((r["label"] if b == "warden" else "", b,
                             f"{m['round_trip_ns'] / 1000:.2f}", f"{m['agent_time_ns'] / 1000:.2f}",
                             f"{m['agent_cpu_ns'] / 1000:.2f}",
                             x(r["agent_cpu_ratio"]) if b == "warden" and "agent_cpu_ratio" in r
                             else ""))
    table(f"agent: its own work per delegated stat under `--view off`, medians of {reps} runs of "
          f"{iterations} stats, builds interleaved; load {a['load']['before']:.1f} .. "
          f"{a['load']['after']:.1f}" + (f"; base {a['base']}" if a["base"] else ""),
          ("walk", "build", "round trip us", "agent time us", "agent CPU us", "CPU / base"), rows)
if "capsicum" in results:
    c = results["capsicum"]
    rows = [(r["label"], f"{r['native_ns_per_op']:.1f}", f"{r['warden_ns_per_op']:.1f}",
             x(r["ratio"])) for r in c["calls"]]
    w = c["within"]
    rows.append(("rights check on pread (limited / unlimited, warden)", "", "",
                 x(w["rights_check_pread"])))
    rows.append(("rights check on openat (beneath / policy, warden)", "", "",
                 x(w["rights_check_openat"])))
    rows.append(("pdfork / fork", x(w["pdfork_over_fork_native"]), x(w["pdfork_over_fork_warden"]),
                 ""))
    rows.append(("lch_start (warden run --capability-mode) + one RPC + lch_stop, host native",
                 "", f"{c['lch']['ns_per_op']:.1f}", ""))
    table(f"capsicum (the paper's section 5): native vs `warden run --capsicum`, medians of {reps} "
          f"runs (natively cap_enter is ENOSYS and the rest runs without the mode); load "
          f"{c['load']['before']:.1f} .. {c['load']['after']:.1f}",
          ("benchmark", "native ns/op", "warden ns/op", "ratio"), rows)
    rows = [(f"{r['bytes']} B", f"{r['native_plain_us']:.0f}", f"{r['native_sandbox_us']:.0f}",
             f"{r['warden_plain_us']:.0f}", f"{r['warden_sandbox_us']:.0f}",
             f"{r['penalty_us']:.0f}", x(r["ratio"])) for r in c["gunzip"]]
    table("capsicum: the compartmentalised decompressor per file (bench/capbench.c gunzip), us; "
          "penalty = sandboxed - plain under warden (paper: 2.37 ms)",
          ("file", "native plain", "native pdfork", "warden plain", "warden sandboxed",
           "penalty us", "sandboxed/plain"), rows)
if "modes" in results:
    m = results["modes"]
    nat = m["native"]
    keys = [("open_close", "open+close"), ("stat", "stat"), ("geteuid", "geteuid x50")]
    rows = [("native", *(f"{nat[k]:.0f} ns" for k, _ in keys), f"{nat['startup_us']:.0f} us")]
    for r in m["rows"]:
        rows.append((r["label"], *(f"{r[k]['ns_per_op']:.0f} ({x(r[k]['ratio'])})" for k, _ in keys),
                     f"{r['startup']['us']:.0f} ({x(r['startup']['ratio'])})"))
    table(f"modes: each degraded mode on this host, made by the refusal that causes it (a seccomp "
          f"filter around warden); per call: medians of {reps} runs of {iterations} iterations, "
          f"startup: median of {startup_runs} runs of /bin/true; load {m['load']:.1f}",
          ("mode", *(label for _, label in keys), "startup"), rows)
if "policies" in results:
    p = results["policies"]
    nat = p["native"]
    rows = [("native", *(f"{nat[k]['ns_per_op']:.0f}" for k, _ in POLICY_CALLS), "", "")]
    for r in p["rows"]:
        if "failed" in r:
            rows.append((r["label"], "did not run", "", r["explain"], r["failed"][:60]))
            continue
        d = r["delegated"]
        rows.append((r["label"],
                     *(f"{r[k]['ns_per_op']:.0f} ({x(r[k]['ratio'])})" for k, _ in POLICY_CALLS),
                     r["explain"] + (" (differs)" if r["explain"] != r["measured"] else ""),
                     f"{r['measured']} ({d['open']} opens, {d['stat']} stats)"))
    table(f"policies: per call under each policy, ns (ratio to native, same runs); medians of "
          f"{reps} runs of {iterations} iterations; `warden check --explain`'s verdict on opens in "
          f"the view (for flags, on the rules they expand to) and the warm-up run's report "
          f"(delegated calls: agent if at least one per iteration); load "
          f"{p['load']['before']:.1f} .. {p['load']['after']:.1f}",
          ("policy", *(label for _, label in POLICY_CALLS), "check --explain", "run report"), rows)
if "concurrent" in results:
    c = results["concurrent"]
    peers = [m for m in ("native", "warden", "bwrap") if m in c["rows"][0]]
    rows = []
    for r in c["rows"]:
        rows.append((str(r["n"]),
                     *(f"{r[m]['total_ms']:.1f} / {r[m]['p50_ms']:.1f} / {r[m]['p99_ms']:.1f}"
                       for m in peers),
                     x(r.get("warden_over_bwrap")), x(r["warden_over_native"])))
    table(f"concurrent: N copies of /bin/true started at once (bench/concurrent.c), ms: total / "
          f"p50 / p99 of each start (launch to exit); medians of {c['reps']} runs; load "
          f"{c['load']['before']:.1f} .. {c['load']['after']:.1f}",
          ("N", *("bubblewrap" if m == "bwrap" else m for m in peers), "warden/bwrap total", "warden/native total"), rows)
