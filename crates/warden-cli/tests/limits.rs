//! Resource limits, redirection and the run report (issue #4), against the real `warden` binary
//! and the real kernel.
//!
//! Each limit is exercised twice: by a program built to exceed it (tests/c/limit_*.c), which
//! must be stopped the way the interface says (status, signal, exit code, what the `--report`
//! file says), and by one that stays just under it, which must run to its end untouched. Where a
//! limit could leave processes behind, the test looks from outside, in /proc, for every process
//! that carries the run's unique marker argument once warden has returned.
//!
//! The core tests run twice: as whoever runs the tests (root here: cgroup v1 accounting) and as
//! uid 65534 (rusage accounting with rlimits), the second only where the machine allows: each
//! is a function of who runs warden, and the table at the end of this file ([`both!`]) names
//! its two tests.

mod common;

use common::{finish_with, program, warden_cmd, who_tag, write_file, As, SYSTEM_PATH};
use std::collections::BTreeMap;
use std::fmt::{Debug, Display};
use std::io::{BufRead, BufReader, Read, Write};
use std::ops::RangeBounds;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long any one warden run may take before the harness kills it and the test fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// 1 MiB.
const MIB: u64 = 1 << 20;

// ---- programs, directories, markers ---------------------------------------------------------------

/// A fresh directory anyone may write: warden running as uid 65534 creates its report and the
/// program's redirected streams there. The policy never grants it.
fn open_dir(test: &str, who: As) -> PathBuf {
    let d = common::fresh_dir(&format!("limits-{test}-{}", who_tag(who)));
    common::chmod(&d, 0o777);
    d
}

fn s(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

fn seq() -> usize {
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// A command-line argument no other process on the machine has: all digits, so that `sleep`
/// takes it too.
fn marker() -> String {
    format!("9{:07}{:03}", std::process::id() % 10_000_000, seq() % 1000)
}

/// Pids of live processes with `marker` as one of their arguments.
fn pids_with_marker(marker: &str) -> Vec<i32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) {
            if cmdline.split(|b| *b == 0).any(|a| a == marker.as_bytes()) {
                pids.push(pid);
            }
        }
    }
    pids
}

/// A file's bytes, or none when it is not there.
fn read_bytes(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_default()
}

// ---- running warden ---------------------------------------------------------------------------

/// A finished `warden run` and its `--report` file, parsed.
struct Run {
    label: String,
    out: Output,
    elapsed: Duration,
    report_text: String,
    report: BTreeMap<String, String>,
}

fn parse_report(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The statuses isolate's documentation names: the only ones its callers know.
const ISOLATE_STATUSES: [&str; 4] = ["RE", "SG", "TO", "XX"];

/// What a caller of isolate concludes from a meta file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CmsVerdict {
    Ok,
    SandboxError,
    Timeout,
    TimeoutWall,
    MemoryLimit,
    Signal(i32),
    NonzeroReturn(i32),
}

/// Reads a meta file the way CMS does (`IsolateSandbox.get_exit_status` in
/// cms/grading/Sandbox.py): `XX` first, then `TO` (wall when the message says so), then `SG`,
/// which is a memory kill when the key `cg-oom-killed` is merely present, then `RE`; any other
/// status, or none, is a success.
fn cms_verdict(meta: &BTreeMap<String, String>) -> CmsVerdict {
    let num = |k: &str| meta.get(k).and_then(|v| v.parse().ok()).unwrap_or(-1);
    match meta.get("status").map(String::as_str) {
        Some("XX") => CmsVerdict::SandboxError,
        Some("TO") if meta.get("message").is_some_and(|m| m.contains("wall")) => {
            CmsVerdict::TimeoutWall
        }
        Some("TO") => CmsVerdict::Timeout,
        Some("SG") if meta.contains_key("cg-oom-killed") => CmsVerdict::MemoryLimit,
        Some("SG") => CmsVerdict::Signal(num("exitsig")),
        Some("RE") => CmsVerdict::NonzeroReturn(num("exitcode")),
        _ => CmsVerdict::Ok,
    }
}

fn clip(text: &str) -> String {
    if text.len() > 3000 {
        let mut end = 3000;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}... ({} bytes)", &text[..end], text.len())
    } else {
        text.to_owned()
    }
}

/// The checks a test makes on a [`Run`]: each fails showing what it wanted and [`Run::dump`],
/// and returns the run for the next.
impl Run {
    fn dump(&self) -> String {
        format!(
            "[{}] warden exit {:?} after {:.2?}\nreport:\n{}\nstdout:\n{}\nstderr:\n{}",
            self.label,
            self.out.status,
            self.elapsed,
            self.report_text,
            clip(&common::stdout(&self.out)),
            clip(&common::stderr(&self.out))
        )
    }

    fn stdout(&self) -> String {
        common::stdout(&self.out)
    }

    fn code(&self) -> Option<i32> {
        self.out.status.code()
    }

    /// Asserts `ok`, saying `what` (and showing the run) when it is not.
    fn ensure(&self, ok: bool, what: impl Display) -> &Self {
        assert!(ok, "{what}\n{}", self.dump());
        self
    }

    /// The report was written (it always has `time-wall`), and it is consistent: the program
    /// either exited (`exitcode`) or died of a signal (`exitsig`), warden's exit status says
    /// the same (N, or 128+N), and `killed:1` (warden killed it) comes with a signal.
    fn has_report(&self) -> &Self {
        self.ensure(
            self.report.contains_key("time-wall"),
            "no report (or no time-wall in it)",
        );
        if let Some(st) = self.opt("status") {
            self.ensure(
                ISOLATE_STATUSES.contains(&st),
                format_args!("status:{st} is not one of isolate's {ISOLATE_STATUSES:?}"),
            );
        }
        if self.opt("status") == Some("XX") {
            return self;
        }
        let ended = match (self.opt("exitcode"), self.opt("exitsig")) {
            (Some(c), None) => c.parse::<i32>().ok(),
            (None, Some(sig)) => sig.parse::<i32>().ok().map(|n| 128 + n),
            _ => None,
        };
        self.ensure(
            ended.is_some(),
            "the report must have exactly one of exitcode and exitsig",
        );
        self.ensure(
            self.code() == ended,
            "warden's exit status disagrees with its report",
        );
        if self.opt("killed").is_some() {
            self.ensure(
                self.opt("killed") == Some("1") && self.opt("exitsig").is_some(),
                "killed:1 says warden killed the program, but the report has it exit by itself",
            );
        }
        self
    }

    fn opt(&self, key: &str) -> Option<&str> {
        self.report.get(key).map(String::as_str)
    }

    fn key(&self, key: &str) -> &str {
        self.opt(key)
            .unwrap_or_else(|| panic!("no {key} in the report\n{}", self.dump()))
    }

    fn num(&self, key: &str) -> f64 {
        self.key(key)
            .parse()
            .unwrap_or_else(|_| panic!("{key} is not a number\n{}", self.dump()))
    }

    fn int(&self, key: &str) -> i64 {
        self.key(key)
            .parse()
            .unwrap_or_else(|_| panic!("{key} is not an integer\n{}", self.dump()))
    }

    /// `status`, "OK" when the report has none.
    fn status(&self) -> &str {
        self.has_report();
        self.opt("status").unwrap_or("OK")
    }

    /// The report has `KEY:WANT`.
    fn expect_key(&self, key: &str, want: &str) -> &Self {
        assert_eq!(self.opt(key), Some(want), "{key}\n{}", self.dump());
        self
    }

    /// The report has no `key`.
    fn expect_no_key(&self, key: &str) -> &Self {
        self.ensure(self.opt(key).is_none(), format_args!("{key} in the report"))
    }

    /// The report's `key` is a number in `range`.
    fn expect_num_in(&self, key: &str, range: impl RangeBounds<f64> + Debug) -> &Self {
        let v = self.num(key);
        self.ensure(
            range.contains(&v),
            format_args!("{key} {v}, want {range:?}"),
        )
    }

    /// The report's `key` is an integer in `range`.
    fn expect_int_in(&self, key: &str, range: impl RangeBounds<i64> + Debug) -> &Self {
        let v = self.int(key);
        self.ensure(
            range.contains(&v),
            format_args!("{key} {v}, want {range:?}"),
        )
    }

    /// warden's own exit status is `want`.
    fn expect_code(&self, want: i32) -> &Self {
        assert_eq!(
            self.code(),
            Some(want),
            "warden's exit status\n{}",
            self.dump()
        );
        self
    }

    /// Ran to its end and exited 0: no status, message, kill or signal; warden exits 0.
    fn expect_ok(&self) -> &Self {
        self.has_report();
        for k in ["status", "message", "killed", "exitsig"] {
            self.ensure(
                self.opt(k).is_none(),
                format_args!("want a clean run, but the report has {k}"),
            );
        }
        // isolate writes the key only when the OOM killer struck; its callers test presence.
        self.expect_no_key("cg-oom-killed")
            .expect_key("exitcode", "0")
            .expect_code(0)
    }

    /// `status:WANT` with a message.
    fn expect_status(&self, want: &str) -> &Self {
        assert_eq!(self.status(), want, "status\n{}", self.dump());
        self.ensure(
            self.opt("message").is_some_and(|m| !m.trim().is_empty()),
            format_args!("status {want} without a message"),
        )
    }

    /// warden killed the sandbox: `killed:1`, SIGKILL, and warden exits 137.
    fn expect_killed(&self) -> &Self {
        self.expect_key("killed", "1")
            .expect_key("exitsig", "9")
            .ensure(self.opt("exitcode").is_none(), "exitcode after a kill")
            .expect_code(137)
    }

    /// Died of signal `sig` by itself (not killed by warden); warden exits 128+sig.
    fn expect_signal(&self, sig: i32) -> &Self {
        self.expect_status("SG")
            .expect_key("exitsig", &sig.to_string())
            .expect_no_key("killed")
            .expect_code(128 + sig)
    }

    /// The run read the way CMS reads an isolate meta file gives `want`.
    fn expect_cms(&self, want: CmsVerdict) -> &Self {
        assert_eq!(
            cms_verdict(&self.report),
            want,
            "CMS's verdict\n{}",
            self.dump()
        );
        self
    }

    /// Killed by the OOM killer under the memory limit, in isolate's words: `SG` by SIGKILL,
    /// `killed:1`, `cg-oom-killed:1`, a message naming the memory limit; warden exits 137.
    fn expect_oom_kill(&self) -> &Self {
        self.expect_status("SG")
            .expect_killed()
            .expect_key("cg-oom-killed", "1")
            .ensure(
                self.key("message").contains("Memory limit exceeded"),
                "the message does not name the memory limit",
            )
            .expect_cms(CmsVerdict::MemoryLimit)
    }

    /// Stopped at the output limit, in isolate's words: warden's kill (`SG`, SIGKILL,
    /// `killed:1`) or, when the program had ended by itself before the kill landed, `RE` with
    /// its exit code; the message names the output limit either way.
    fn expect_output_limit(&self) -> &Self {
        let st = self.status();
        self.ensure(
            self.key("message").contains("Output limit exceeded"),
            "the message does not name the output limit",
        );
        match st {
            "SG" => self.expect_killed(),
            "RE" => self
                .expect_no_key("killed")
                .ensure(self.opt("exitcode").is_some(), "RE without an exit code"),
            _ => self.ensure(false, format_args!("status {st}, want SG or RE")),
        }
    }

    /// The program's output has the line `want`.
    fn expect_stdout_has(&self, want: &str) -> &Self {
        self.ensure(
            self.stdout().lines().any(|l| l == want),
            format_args!("no line {want:?} in the program's output"),
        )
    }

    /// The program's output is `want`.
    fn expect_stdout(&self, want: &str) -> &Self {
        assert_eq!(self.stdout(), want, "the program's output\n{}", self.dump());
        self
    }

    /// The program's output does not have `text` anywhere: `what` if it does.
    fn expect_stdout_lacks(&self, text: &str, what: &str) -> &Self {
        self.ensure(!self.stdout().contains(text), what)
    }

    /// The file at `p` (read after the run) holds `want`.
    fn expect_file(&self, p: &Path, want: &str) -> &Self {
        let got = std::fs::read_to_string(p).unwrap_or_default();
        assert_eq!(got, want, "{}\n{}", p.display(), self.dump());
        self
    }

    /// `got`, what reached `place` of a run stopped for its output, is what the program wrote,
    /// cut short: 1 byte to 1 MiB of it.
    fn expect_output_cut(&self, place: &str, got: &[u8]) -> &Self {
        let n = got.len();
        self.ensure(
            n > 0 && n as u64 <= MIB,
            format_args!("{n} bytes reached {place}, want 1..=1 MiB"),
        )
        .ensure(
            is_output_prefix(got),
            format_args!("what reached {place} is not a prefix of the output"),
        )
    }

    fn expect_accounting(&self, who: As) -> &Self {
        self.expect_key("accounting", expected_accounting(who))
    }

    fn expect_elapsed_under(&self, limit: Duration) -> &Self {
        self.ensure(
            self.elapsed < limit,
            format_args!("warden took {:?}, want under {limit:?}", self.elapsed),
        )
    }

    /// [`Run::expect_elapsed_under`] for a run that must first use CPU time (a CPU limit
    /// reached): `limit` on an idle machine, stretched by how many runnable tasks share each
    /// CPU (the 1-minute load average over the CPUs warden may use, at the end of the run). On a
    /// shared machine at load 70 over two CPUs, a sandbox gets about a thirtieth of a CPU, and
    /// its 1 s of CPU time takes half a minute; the check is that it ends, not how fast.
    fn expect_cpu_bound_run_under(&self, limit: Duration) -> &Self {
        let stretch = load_per_cpu().max(1.0);
        let limit = limit.mul_f64(stretch);
        self.ensure(
            self.elapsed < limit,
            format_args!(
                "warden took {:?}, want under {limit:?} (stretched {stretch:.1}x for the load)",
                self.elapsed
            ),
        )
    }

    /// The value of `NAME=VALUE` on the program's output (limit_* programs).
    fn field(&self, name: &str) -> String {
        let out = self.stdout();
        for line in out.lines() {
            for kv in line.split_whitespace() {
                if let Some(v) = kv.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
                    return v.to_owned();
                }
            }
        }
        panic!("no {name}= in the program's output\n{}", self.dump())
    }

    fn field_int(&self, name: &str) -> i64 {
        self.field(name)
            .parse()
            .unwrap_or_else(|_| panic!("{name} is not an integer\n{}", self.dump()))
    }

    /// The program printed `NAME=WANT`.
    fn expect_field(&self, name: &str, want: impl Display) -> &Self {
        assert_eq!(
            self.field(name),
            want.to_string(),
            "{name}=\n{}",
            self.dump()
        );
        self
    }

    /// `NAME=VALUE` is in the environment `/usr/bin/env` printed (`want`: `None` when it must
    /// not be).
    fn expect_env(&self, name: &str, want: Option<&str>) -> &Self {
        let env = env_vars(&self.stdout());
        let got = env.get(name).map(String::as_str);
        assert_eq!(got, want, "{name} in the environment\n{}", self.dump());
        self
    }

    /// Once warden has returned, no process of the run (carrying `marker`) may be left (the
    /// kernel gets 2 s to reap what was killed). Survivors are killed so that a failing test
    /// leaves nothing behind.
    fn expect_none_left(&self, marker: &str) -> &Self {
        let t = Instant::now();
        loop {
            let left = pids_with_marker(marker);
            if left.is_empty() {
                return self;
            }
            if t.elapsed() > Duration::from_secs(2) {
                let mut desc = Vec::new();
                for pid in &left {
                    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
                        .unwrap_or_default()
                        .lines()
                        .filter(|l| l.starts_with("State:") || l.starts_with("Uid:"))
                        .collect::<Vec<_>>()
                        .join(" ");
                    desc.push(format!("{pid} ({status})"));
                    // A process carrying this run's unique marker.
                    if let Some(p) = rustix::process::Pid::from_raw(*pid) {
                        let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
                    }
                }
                panic!(
                    "processes of the sandbox survived warden: {}\n{}",
                    desc.join(", "),
                    self.dump()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// What `accounting` must say for `who` on this machine.
fn expected_accounting(who: As) -> &'static str {
    match who {
        As::Nobody => "rusage",
        As::Me if !is_root() => "rusage",
        As::Me if Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists() => "cgroup-v1",
        As::Me => "cgroup-v2",
    }
}

/// The 1-minute load average divided by the CPUs this process may run on.
fn load_per_cpu() -> f64 {
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    load / cpus as f64
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// `warden run --report R OPTS... -- CMD...` as `who`, with `timeout`, and `adjust` applied to
/// the command last (environment, descriptors).
fn sandbox_with(
    who: As,
    label: &str,
    opts: &[&str],
    cmd_args: &[&str],
    timeout: Duration,
    adjust: impl FnOnce(&mut Command),
) -> Run {
    let dir = common::workdir().join("limits-reports");
    std::fs::create_dir_all(&dir).unwrap();
    common::chmod(&dir, 0o777);
    let report = dir.join(format!("{}.report", seq()));
    let _ = std::fs::remove_file(&report);
    let mut cmd = warden_cmd(who);
    cmd.args(["run", "--report", s(&report)])
        .args(opts)
        .arg("--")
        .args(cmd_args);
    let (out, elapsed) = finish_with(cmd, timeout, adjust);
    let report_text = std::fs::read_to_string(&report).unwrap_or_default();
    let _ = std::fs::remove_file(&report);
    Run {
        label: format!("{label} as {who:?}"),
        out,
        elapsed,
        report: parse_report(&report_text),
        report_text,
    }
}

/// `warden run --report R OPTS... -- CMD...` as `who`.
fn sandbox_cmd(who: As, label: &str, opts: &[&str], cmd_args: &[&str]) -> Run {
    sandbox_with(who, label, opts, cmd_args, DEADLINE, |_| {})
}

/// `warden run --report R --read BIN --exec BIN OPTS... -- BIN/NAME ARGS...` as `who`.
fn sandbox(who: As, name: &str, opts: &[&str], args: &[&str]) -> Run {
    let (prog, bin) = program(name);
    let mut all: Vec<&str> = vec!["--read", &bin, "--exec", &bin];
    all.extend_from_slice(opts);
    let mut cmd_args: Vec<&str> = vec![&prog];
    cmd_args.extend_from_slice(args);
    let label = format!("{name} {} under warden {}", args.join(" "), opts.join(" "));
    sandbox_cmd(who, &label, &all, &cmd_args)
}

/// limit_info under warden with `opts`, which must run cleanly: its `NAME=VALUE` lines say what
/// the program found (rlimits, CPUs, descriptors, directory).
fn info(who: As, opts: &[&str]) -> Run {
    let r = sandbox(who, "limit_info", opts, &[]);
    r.expect_ok();
    r
}

/// `warden ARGS...` as whoever runs the tests (no report, no program of ours).
fn warden_out(args: &[&str]) -> Output {
    common::run_warden_with_stdin(As::Me, common::workdir(), args, Stdio::null(), DEADLINE)
}

/// Declares, for each `F: ME, NOBODY;`, the test `ME`, `F(As::Me)` (as whoever runs the tests),
/// and the test `NOBODY`, `F(As::Nobody)` (as uid 65534, or a [`common::skip`] where that cannot
/// be).
macro_rules! both {
    ($($f:ident: $me:ident, $nobody:ident;)*) => {
        $(
            #[test]
            fn $me() {
                $f(As::Me);
            }
            #[test]
            fn $nobody() {
                if common::can_run_as_nobody(stringify!($nobody)) {
                    $f(As::Nobody);
                }
            }
        )*
    };
}

// ---- 1. CPU time ------------------------------------------------------------------------------------

fn cpu_time_over_limit(who: As) {
    let opts = ["--time", "0.5", "--extra-time", "0.2"];
    sandbox(who, "limit_cpu", &opts, &["spin", "inf"])
        .expect_status("TO")
        .expect_killed()
        .expect_num_in("time", 0.5..1.5)
        .expect_cpu_bound_run_under(Duration::from_secs(5))
        .expect_stdout_lacks("spun", "the busy loop ended by itself?");
}

/// Issue 18, item 1: eight threads that only stat() a long path make warden's agent burn the
/// CPU. That time is the sandbox's: the run ends as a timeout long before its wall limit, and
/// the report counts the agent's share in `time` (before: `time:0.2`, status OK, 13 s of CPU in
/// warden, only `--wall-time` stopped it).
fn cpu_time_spent_by_the_agent(who: As) {
    // The agent's work is the subject: the calls go to it (`never`), in a view too.
    let opts = ["--time", "1", "--wall-time", "20", "--fast-path=never"];
    let r = sandbox(who, "limit_agent_cpu", &opts, &["15"]);
    r.expect_status("TO")
        .expect_killed()
        .expect_cpu_bound_run_under(Duration::from_secs(10))
        .expect_num_in("time", 1.0..4.0)
        .expect_num_in("agent-cpu", 0.3..4.0)
        .expect_stdout_lacks("calls=", "the storm ran to its end");
    assert!(r.num("agent-mem") > 0.0, "{}", r.dump());
}

fn cpu_time_under_limit(who: As) {
    sandbox(who, "limit_cpu", &["--time", "2"], &["spin", "0.2"])
        .expect_ok()
        .expect_stdout_has("spun 0.2")
        .expect_num_in("time", 0.19..1.0);
}

/// Over the limit but within the grace: the program finishes by itself and is still TO.
fn cpu_time_within_grace(who: As) {
    let opts = ["--time", "0.5", "--extra-time", "2"];
    sandbox(who, "limit_cpu", &opts, &["spin", "0.8"])
        .expect_status("TO")
        .expect_stdout_has("spun 0.8")
        .expect_no_key("killed")
        .expect_key("exitcode", "0")
        // warden's exit status is the program's.
        .expect_code(0)
        .expect_num_in("time", 0.8..2.5);
}

/// The CPU limit is the whole sandbox's: three processes spinning share one budget.
fn cpu_time_counts_every_process(who: As) {
    let opts = ["--time", "1", "--extra-time", "0"];
    sandbox(who, "limit_cpu", &opts, &["forkspin", "2", "inf"])
        .expect_status("TO")
        .expect_killed()
        .expect_num_in("time", 1.0..2.5)
        // (A per-process limit of 1 s would let the three spinning processes use 3 s together.)
        .expect_cpu_bound_run_under(Duration::from_secs(8));
}

/// CPU time of processes that are gone counts too: spinners of 0.1 s each, one after another,
/// reaped by the program or (orphaned) by the sandbox's init. No live process ever holds more
/// than 0.1 s, so only accounting that keeps the dead's time stops this before the wall limit.
fn cpu_time_of_dead_children(who: As) {
    for mode in ["forkchain", "orphanchain"] {
        // The wall limit only stops a run whose dead children's time is lost: on a loaded
        // machine the spinners need longer to use 1 s of CPU between them.
        let wall = format!("{:.0}", 8.0 * load_per_cpu().max(1.0));
        let opts = ["--time", "1", "--extra-time", "0.2", "--wall-time", &wall];
        let r = sandbox(who, "limit_cpu", &opts, &[mode, "0.1"]);
        r.expect_status("TO")
            .expect_killed()
            .ensure(
                !r.key("message").to_lowercase().contains("wall"),
                "stopped by the wall limit, not the CPU limit",
            )
            .expect_num_in("time", 1.0..2.0)
            .expect_cpu_bound_run_under(Duration::from_secs(6));
    }
}

// ---- 2. wall time -----------------------------------------------------------------------------------

fn wall_time_over_limit(who: As) {
    let m = marker();
    let r = sandbox_cmd(who, "sleep", &["--wall-time", "0.5"], &["/bin/sleep", &m]);
    r.expect_status("TO")
        .expect_killed()
        .ensure(
            r.key("message").to_lowercase().contains("wall"),
            "the message does not mention wall time",
        )
        .expect_num_in("time-wall", 0.5..2.5)
        // sleep uses no CPU.
        .expect_num_in("time", ..0.3)
        .expect_elapsed_under(Duration::from_secs(5))
        .expect_none_left(&m);
}

fn wall_time_under_limit(who: As) {
    sandbox_cmd(who, "sleep", &["--wall-time", "3"], &["/bin/sleep", "0.2"])
        .expect_ok()
        .expect_num_in("time-wall", 0.2..2.9);
}

/// A stopped program is killed at the wall limit all the same.
fn wall_time_stopped(who: As) {
    let stop = ["/bin/sh", "-c", "kill -STOP $$"];
    sandbox_cmd(who, "sh stopping itself", &["--wall-time", "0.5"], &stop)
        .expect_status("TO")
        .expect_killed()
        .expect_elapsed_under(Duration::from_secs(5));
}

// ---- 3. memory ----------------------------------------------------------------------------------------

/// Whether `test` can run here: it needs root and a memory cgroup ([`common::skip`] if not).
fn memory_cgroup(test: &str) -> bool {
    if !common::require_root(test) {
        return false;
    }
    let v1 = Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists();
    let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    if !(v1 || v2) {
        common::skip(
            test,
            common::Lack::MemoryCgroup,
            "no memory cgroup on this machine",
        );
    }
    v1 || v2
}

impl Run {
    /// limit_mem did not get all it asked for: it was stopped after touching 64..=128 MiB (the
    /// last "touched N" it printed) under a 128 MiB limit.
    fn expect_hog_stopped(&self) -> &Self {
        let touched: i64 = self
            .stdout()
            .lines()
            .filter_map(|l| l.strip_prefix("touched "))
            .filter_map(|n| n.trim().parse().ok())
            .next_back()
            .unwrap_or(0);
        self.expect_stdout_lacks("done", "the hog got all it asked for")
            .ensure(
                (64..=128).contains(&touched),
                format_args!("touched {touched} MiB before the limit, want 64..=128"),
            )
    }
}

#[test]
fn memory_hog_is_an_oom_kill_under_a_cgroup() {
    if !memory_cgroup("memory_hog_is_an_oom_kill_under_a_cgroup") {
        return;
    }
    // The OOM killer's SIGKILL: SG, killed, cg-oom-killed:1, which CMS reads as a memory kill.
    let (prog, bin) = program("limit_mem");
    let opts = ["--read", &bin, "--exec", &bin, "--mem", "128M"];
    let (r, v) = with_json(As::Me, "limit_mem 400", &opts, &[&prog, "400"]);
    r.expect_oom_kill()
        .expect_accounting(As::Me)
        .expect_hog_stopped()
        // 64 MiB .. 128 MiB (+5%), in KiB.
        .expect_int_in("cg-mem", 64 * 1024..=128 * 1024 * 105 / 100);
    // The JSON keeps warden's own word for it.
    assert_json_agrees(&r, &v);
    assert_eq!(v["status"].as_str(), Some("ML"), "JSON: {v}");
    assert_eq!(v["cg-oom-killed"].as_i64(), Some(1), "JSON: {v}");
}

/// The directories of the run groups warden `pid` made (`warden-PID-*`), under every cgroup
/// mount (v1 hierarchies, or the v2 tree down to a delegated scope).
fn run_groups_of(pid: u32) -> Vec<PathBuf> {
    run_groups_of_any()
        .into_iter()
        .filter(|(p, _)| *p == pid)
        .map(|(_, d)| d)
        .collect()
}

/// Every run group (`warden-PID-*`) under the cgroup mounts, with the pid in its name.
fn run_groups_of_any() -> Vec<(u32, PathBuf)> {
    all_run_groups()
        .into_iter()
        .filter_map(|d| {
            let name = d.file_name()?.to_str()?.to_owned();
            let pid = name
                .strip_prefix("warden-")?
                .split('-')
                .next()?
                .parse()
                .ok()?;
            Some((pid, d))
        })
        .collect()
}

fn all_run_groups() -> Vec<PathBuf> {
    fn walk(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if e.file_name().to_string_lossy().starts_with(prefix) {
                out.push(e.path());
            } else if depth > 0 {
                walk(&e.path(), prefix, depth - 1, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(Path::new("/sys/fs/cgroup"), "warden-", 6, &mut out);
    out
}

/// root with a `starting_uid`: warden becomes that user before the program starts, and root's
/// cgroups are no longer its to change or remove. The limits still hold (a memory hog is the
/// OOM killer's, 20 processes are the most), every group is gone when warden returns, and
/// also when warden is SIGKILLed in the middle of the run (a process that stayed root removes
/// them as the sandbox dies). Was: the run's groups were left behind for good, and on cgroup
/// v2 the run failed ("cannot move warden into the run's cgroup for its agent").
#[test]
fn root_with_starting_ids_keeps_its_cgroup_limits_and_leaves_no_group() {
    if !memory_cgroup("root_with_starting_ids_keeps_its_cgroup_limits_and_leaves_no_group") {
        return;
    }
    let dir = open_dir("starting-ids-cgroup", As::Me);
    let policy = dir.join("nobody.policy");
    write_file(&policy, "starting_uid 65534\nstarting_gid 65534\n", 0o644);
    let (prog, bin) = program("limit_mem");
    let opts = [
        "--policy",
        s(&policy),
        "--read",
        &bin,
        "--exec",
        &bin,
        "--mem",
        "128M",
        "--processes",
        "20",
    ];
    let (r, v) = with_json(As::Me, "limit_mem 400 as 65534", &opts, &[&prog, "400"]);
    r.expect_oom_kill().expect_hog_stopped();
    assert_eq!(v["cg-oom-killed"].as_i64(), Some(1), "JSON: {v}");

    // The process limit, for the same user: the program and 9 more.
    let m = marker();
    let mut opts = vec!["--policy", s(&policy)];
    opts.extend_from_slice(&TEN_PROCESSES);
    sandbox(As::Me, "limit_fork", &opts, &[&m, "bomb", "1000"])
        .expect_field("errno", "EAGAIN")
        .expect_field("forks", 9)
        .expect_code(0)
        .expect_none_left(&m);
    // Both runs ended: no group of a warden that is gone.
    let left: Vec<PathBuf> = run_groups_of_any()
        .into_iter()
        .filter(|(pid, _)| !Path::new(&format!("/proc/{pid}")).exists())
        .map(|(_, d)| d)
        .collect();
    assert_eq!(
        left,
        Vec::<PathBuf>::new(),
        "groups of wardens that have returned"
    );

    // Killed in the middle: nobody asks the remover, which removes the groups by itself.
    let mut child = warden_cmd(As::Me)
        .args([
            "run",
            "--policy",
            s(&policy),
            "--mem",
            "64M",
            "--",
            "/bin/sleep",
            "30",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    while run_groups_of(pid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!run_groups_of(pid).is_empty(), "warden {pid} made no group");
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    let _ = child.wait();
    let deadline = Instant::now() + common::hang_bound(Duration::from_secs(10));
    while !run_groups_of(pid).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        run_groups_of(pid),
        Vec::<PathBuf>::new(),
        "left by SIGKILLed warden {pid}"
    );
}

/// Issue 18, item 2: files the agent opens for the sandbox are charged to the sandbox's memory
/// group, not warden's. Six processes hold 114,000 descriptors of /dev/null that the agent
/// opened: under 256 MiB the group's peak counts them (was ~3 MiB: the files were warden's);
/// under 16 MiB they do not fit, and the run is a memory kill of the program (was: OK).
#[test]
fn files_the_agent_opens_count_against_the_memory_limit() {
    if !memory_cgroup("files_the_agent_opens_count_against_the_memory_limit") {
        return;
    }
    let (prog, bin) = program("limit_agent_mem");
    // The agent opens them (`never`): in the kernel-first run the program opens its own files,
    // which the kernel charges to the sandbox's group on any layout.
    let roomy = [
        "--read",
        &bin,
        "--exec",
        &bin,
        "--mem",
        "256M",
        "--fast-path=never",
    ];
    let r = sandbox_cmd(As::Me, "limit_agent_mem", &roomy, &[&prog, "6", "19000"]);
    r.expect_ok();
    let opened: i64 = r
        .stdout()
        .split_whitespace()
        .find_map(|w| w.strip_prefix("opened="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no opened= line\n{}", r.dump()));
    assert!(opened > 50_000, "{}", r.dump());
    // A struct file is 256 bytes of slab; count at least 100 bytes a descriptor (KiB).
    r.expect_int_in("cg-mem", opened / 10..=256 * 1024);
    let tight = [
        "--read",
        &bin,
        "--exec",
        &bin,
        "--mem",
        "16M",
        "--fast-path=never",
    ];
    // The OOM killer picks one of the program's processes (init never: Cgroup::attach); which
    // one decides between SG (the parent) and RE (a child; the parent then reports fewer).
    sandbox_cmd(As::Me, "limit_agent_mem", &tight, &[&prog, "6", "19000"])
        .expect_key("cg-oom-killed", "1")
        .expect_int_in("cg-mem", 12 * 1024..=17 * 1024)
        .expect_stdout_lacks("opened=114000", "the program held every file under 16 MiB");
}

/// The sockets the agent makes for the sandbox (with a `net-allow` rule, `socket` is the agent's)
/// are charged to the sandbox's memory limit on every cgroup layout: v1 by the agent's workers
/// joining the memory group, v2 by warden's process moving beside the sandbox's group under
/// the run's limit. A socket is kilobytes of kernel memory: 4,000 of them grow the group by
/// 4 MiB at least over the same program making none; under 48 MiB, 40,000 do not fit and the
/// run is stopped by the limit (an OOM kill of the program, or the kernel's ENOMEM), not by the
/// descriptor limit. Light enough for a guest under emulation, unlike 114,000 opens.
#[test]
fn sockets_the_agent_makes_count_against_the_memory_limit() {
    let test = "sockets_the_agent_makes_count_against_the_memory_limit";
    if !memory_cgroup(test) {
        return;
    }
    let dir = open_dir("agent-sockets", As::Me);
    let policy = dir.join("net.policy");
    std::fs::write(&policy, "net-allow outgoing tcp 127.0.0.1 9\n").unwrap();
    common::chmod(&policy, 0o644);
    let probe =
        "import resource, socket, sys\nsoft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n\
         resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))\n\
         held = []\ntry:\n    for _ in range(int(sys.argv[1])):\n        \
                 held.append(socket.socket())\nexcept OSError as e:\n    print('error', e.errno)\n\
                 print('made=%d' % len(held), flush=True)\n";
    let made = |mem: &str, n: &str| {
        let opts = ["--policy", s(&policy), "--mem", mem, "--sockets", "100000"];
        sandbox_cmd(
            As::Me,
            "agent sockets",
            &opts,
            &["/usr/bin/python3", "-c", probe, n],
        )
    };
    let none = made("256M", "0");
    none.expect_ok().expect_stdout_has("made=0");
    let some = made("256M", "4000");
    some.expect_ok().expect_stdout_has("made=4000");
    let grew = some.int("cg-mem") - none.int("cg-mem");
    some.ensure(
        grew >= 4000,
        format_args!(
            "4,000 sockets made by the agent grew the sandbox's group by {grew} KiB (want 4,000 at \
             least): they were not charged to it"
        ),
    );
    let tight = made("48M", "40000");
    tight
        .expect_stdout_lacks("made=40000", "40,000 sockets fit in 48 MiB")
        .expect_stdout_lacks(
            "error 24",
            "the descriptor limit stopped it, not the memory limit",
        )
        .expect_int_in("cg-mem", ..=48 * 1024 * 105 / 100);
    let killed = tight.report.get("cg-oom-killed").is_some_and(|v| v == "1");
    tight.ensure(
        killed || tight.stdout().contains("error 12"),
        "neither an OOM kill nor ENOMEM ended the run at the limit",
    );
}

/// Under a cgroup the limit is the whole sandbox's: three processes of 64 MiB each do not fit
/// in 128 MiB together (each would alone), and do in 256 MiB.
#[test]
fn memory_limit_covers_every_process_under_a_cgroup() {
    if !memory_cgroup("memory_limit_covers_every_process_under_a_cgroup") {
        return;
    }
    // A child is OOM-killed and the program exits 3 by itself: RE with the key, as isolate.
    sandbox(As::Me, "limit_mem", &["--mem", "128M"], &["64", "3"])
        .expect_status("RE")
        .expect_key("exitcode", "3")
        .expect_accounting(As::Me)
        .expect_key("cg-oom-killed", "1")
        .expect_stdout_lacks("all done", "the three processes all got their 64 MiB");
    sandbox(As::Me, "limit_mem", &["--mem", "256M"], &["64", "3"])
        .expect_ok()
        .expect_stdout_has("all done")
        // The three processes' 192 MiB at least, in KiB.
        .expect_int_in("cg-mem", 3 * 64 * 1024..);
}

/// The most `warden-agent` threads the warden whose command line carries `marker` has at once,
/// sampled from `/proc` until `done`.
fn agent_threads_while(
    marker: String,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> usize {
    let comm = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    let mut most = 0;
    while !done.load(Ordering::Relaxed) {
        for pid in pids_with_marker(&marker) {
            let proc = PathBuf::from(format!("/proc/{pid}"));
            if comm(proc.join("comm")).trim() != "warden" {
                continue;
            }
            let Ok(tasks) = std::fs::read_dir(proc.join("task")) else {
                continue;
            };
            let agents = tasks
                .flatten()
                .filter(|t| comm(t.path().join("comm")).trim() == "warden-agent")
                .count();
            most = most.max(agents);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    most
}

/// Issue 17: `--mem` bounds the agent's own state for the sandbox, not only the sandbox's
/// processes. Sixty-four threads keep the agent walking paths that hold 40 symlink targets each
/// (limit_agent_state). Under `--mem 16M` the agent serves at most `agent-workers` of them at
/// once, counted from outside (warden's `warden-agent` threads), and what warden grew by (its
/// `agent-mem` over a run without the storm) stays within `agent-mem-bound`, itself within the
/// limit; with room (`--mem 1G`) the same storm takes the whole pool. Before: 64 workers whatever
/// the limit, and warden grew by 55 MiB under `--mem 16M` (200 MiB with room), a walk holding
/// each pending component in an allocation of its own.
fn agent_state_within_memory_limit(who: As) {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    let dir = open_dir("agent-state", who);
    let d = s(&dir);
    let storm = |mem: &str, threads: &str| -> (Run, usize) {
        let marker = marker();
        let done = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (marker, done) = (marker.clone(), Arc::clone(&done));
            std::thread::spawn(move || agent_threads_while(marker, done))
        };
        // The agent's own state is the subject: its stats go to it (`never`), in a view too.
        let opts = ["--read", d, "--write", d, "--mem", mem, "--fast-path=never"];
        let r = sandbox(who, "limit_agent_state", &opts, &[d, threads, "3", &marker]);
        done.store(true, Ordering::Relaxed);
        (r, sampler.join().unwrap())
    };
    let (quiet, _) = storm("16M", "0");
    quiet.expect_ok();
    let (tight, seen) = storm("16M", "64");
    tight.expect_ok().expect_field("errno", "ENOENT");
    tight.ensure(tight.field_int("calls") > 0, "no stat came back");
    let workers = tight.int("agent-workers");
    let bound = tight.int("agent-mem-bound");
    tight
        .expect_int_in("agent-workers", 3..64)
        .expect_int_in("agent-mem-bound", ..=16 * 1024)
        .ensure(
            (3..=workers).contains(&(seen as i64)),
            format_args!("{seen} agent threads at once, want 3..={workers}"),
        );
    let grew = tight.int("agent-mem") - quiet.int("agent-mem");
    tight.ensure(
        grew <= bound,
        format_args!("warden grew by {grew} KiB under the storm, over agent-mem-bound {bound}"),
    );
    let (roomy, seen_roomy) = storm("1G", "64");
    roomy.expect_ok().expect_key("agent-workers", "64").ensure(
        seen_roomy as i64 > workers,
        format_args!(
            "with room the storm had {seen_roomy} agent threads at once, no more than the {workers} \
             of --mem 16M: the limit was not what bounded them"
        ),
    );
}

fn memory_under_limit(who: As) {
    let r = sandbox(who, "limit_mem", &["--mem", "128M"], &["32"]);
    r.expect_ok()
        .expect_stdout_has("done 32")
        .expect_accounting(who)
        // 32..128 MiB, in KiB.
        .expect_int_in("max-rss", 32 * 1024..128 * 1024);
    if expected_accounting(who).starts_with("cgroup") {
        r.expect_int_in("cg-mem", 32 * 1024..);
    }
}

/// Without a cgroup (uid 65534): RLIMIT_AS per process, so the hog's allocation fails.
#[test]
fn memory_hog_fails_under_rusage_as_nobody() {
    if !common::can_run_as_nobody("memory_hog_fails_under_rusage_as_nobody") {
        return;
    }
    let r = sandbox(As::Nobody, "limit_mem", &["--mem", "128M"], &["400"]);
    let st = r.status();
    r.ensure(
        st == "RE" || st == "SG",
        format_args!("status {st}, want RE or SG"),
    )
    .expect_status(st)
    .expect_accounting(As::Nobody)
    .expect_no_key("cg-oom-killed")
    .expect_hog_stopped();
    // And the limit is RLIMIT_AS as the interface says.
    info(As::Nobody, &["--mem", "128M"]).expect_field("as", 128 * MIB);
}

// ---- 3b. the closing line ---------------------------------------------------------------------

impl Run {
    /// warden's own lines on stderr (`warden: ...`), but for the notice at the start of a run
    /// without a cgroup (uid 65534's), which says the limits are rlimits.
    fn warden_lines(&self) -> Vec<String> {
        common::stderr(&self.out)
            .lines()
            .filter(|l| {
                l.starts_with("warden: ")
                    && !l.starts_with("warden: no cgroup for this run's limits")
            })
            .map(str::to_owned)
            .collect()
    }

    /// stderr ends with exactly one line of warden's, and it has every one of `parts`.
    fn expect_closing_line(&self, parts: &[&str]) -> &Self {
        let err = common::stderr(&self.out);
        let ours = self.warden_lines();
        let last = err.lines().last().unwrap_or_default();
        self.ensure(
            ours.len() == 1 && ours[0] == last,
            format_args!("want one warden line, the last on stderr; got {ours:?}"),
        );
        for p in parts {
            self.ensure(
                last.contains(p),
                format_args!("the closing line lacks {p:?}"),
            );
        }
        self
    }

    /// Nothing of warden's on stderr.
    fn expect_no_warden_line(&self) -> &Self {
        let ours = self.warden_lines();
        self.ensure(ours.is_empty(), format_args!("a clean run said {ours:?}"))
    }
}

/// Issue 39: a limit that stops the program is said in one line at the end of the run, naming
/// the limit and the option to change; a clean run under the same limits says nothing. As root
/// (a cgroup: the OOM killer, `pids.events`) and as uid 65534 (rlimits: the line says what
/// warden cannot count).
fn closing_line_names_the_limit(who: As) {
    let limits = ["--mem", "128M", "--processes", "50", "--time", "5"];
    sandbox_cmd(who, "true", &limits, &["/bin/true"])
        .expect_ok()
        .expect_no_warden_line();
    // The memory hog (the newcomer's `python3 -c 'x=bytearray(200<<20)'`, in C).
    let r = sandbox(who, "limit_mem", &["--mem", "128M"], &["400"]);
    if expected_accounting(who) == "rusage" {
        r.expect_closing_line(&[
            "warden: limit_mem ",
            "without a cgroup here --mem 128M holds per process (rlimits)",
            "raise the limit",
        ]);
    } else {
        r.expect_oom_kill().expect_closing_line(&[
            "warden: stopped: the sandbox's memory limit (--mem 128M) was reached; the \
             kernel's OOM killer killed limit_mem",
            "raise --mem",
        ]);
    }
    // The newcomer's fork loop: 1 shell and 7 sleeps under --processes 5.
    let script = "for i in 1 2 3 4 5 6 7; do sleep 1 & done; wait";
    let r = sandbox_cmd(
        who,
        "fork loop",
        &["--processes", "5"],
        &["/bin/sh", "-c", script],
    );
    r.ensure(
        r.code() != Some(0),
        "the shell forked 7 sleeps under --processes 5",
    );
    if expected_accounting(who) == "rusage" {
        r.expect_closing_line(&[
            "warden: sh exited with status ",
            "without a cgroup here --processes 5 holds per process (rlimits)",
        ]);
    } else {
        r.expect_closing_line(&[
            "warden: the sandbox's process limit (--processes 5, processes and threads \
             together) refused ",
            "failed with EAGAIN); raise --processes",
        ]);
    }
    // CPU time, wall-clock time, output: warden's own kills.
    sandbox(
        who,
        "limit_cpu",
        &["--time", "0.5", "--extra-time", "0.2"],
        &["spin", "inf"],
    )
    .expect_status("TO")
    .expect_closing_line(&[
        "warden: stopped: the sandbox's CPU time limit (--time 0.5 seconds) was reached; \
             warden killed limit_cpu and everything it started; raise --time",
    ]);
    sandbox_cmd(who, "sleep", &["--wall-time", "0.5"], &["/bin/sleep", "10"])
        .expect_status("TO")
        .expect_closing_line(&[
            "warden: stopped: the sandbox's wall-clock time limit (--wall-time 0.5 seconds) \
             was reached; warden killed sleep",
        ]);
    let r = sandbox_cmd(who, "yes", &["--output-limit", "1K"], &["/usr/bin/yes"]);
    r.expect_output_limit().expect_closing_line(&[
        "warden: stopped: the program's output reached the sandbox's output limit \
         (--output-limit 1K, stdout and stderr together); warden killed yes",
    ]);
}

// ---- 4. processes ---------------------------------------------------------------------------------

const TEN_PROCESSES: [&str; 2] = ["--processes", "10"];

/// limit_fork MARKER MODE N under warden with `opts` (which allow 10 processes): the program and
/// what it made are 10 (warden's init does not count), so `count` (`forks=`, `threads=`) stops
/// at 9 with EAGAIN, after which the program reports and exits 0; `also` checks more; and nothing
/// of the run is left.
fn ten_processes(who: As, opts: &[&str], mode: &str, n: &str, count: &str, also: fn(&Run)) {
    let m = marker();
    let r = sandbox(who, "limit_fork", opts, &[&m, mode, n]);
    r.expect_field("errno", "EAGAIN")
        .expect_field(count, 9)
        .expect_code(0);
    also(&r);
    r.expect_none_left(&m);
}

fn fork_bomb(who: As) {
    ten_processes(who, &TEN_PROCESSES, "bomb", "1000", "forks", |r| {
        r.has_report().expect_elapsed_under(Duration::from_secs(10));
    });
}

/// The main thread and 9 more.
fn threads_count(who: As) {
    ten_processes(who, &TEN_PROCESSES, "threads", "200", "threads", |_| {});
}

/// 5 children, and exactly at the limit: the program and 9 children.
fn few_children(who: As) {
    for n in ["5", "9"] {
        let m = marker();
        sandbox(who, "limit_fork", &TEN_PROCESSES, &[&m, "children", n])
            .expect_ok()
            .expect_stdout_has(&format!("children={n} ok"))
            .expect_none_left(&m);
    }
}

// ---- 5. a process tree that ignores SIGTERM ---------------------------------------------------------

fn sigterm_tree(who: As) {
    let m = marker();
    sandbox(who, "limit_sigterm", &["--wall-time", "1"], &[&m, "3"])
        .expect_status("TO")
        .expect_killed()
        .expect_stdout_has("started 7")
        .expect_num_in("time-wall", 1.0..3.0)
        .expect_elapsed_under(Duration::from_secs(6))
        .expect_none_left(&m);
}

// ---- 6. file size -------------------------------------------------------------------------------------

fn fsize_limit(who: As) {
    let fsize = |args: &[&str]| sandbox(who, "limit_fsize", &["--fsize", "1M"], args);
    fsize(&["2097152"])
        .expect_signal(25)
        .expect_stdout_lacks("wrote", "the write past the limit went through");
    // Under the limit, and exactly the limit, are allowed. truncate(2) on a path is performed
    // by the agent, outside the program's rlimits: it must not grow a file past the limit either.
    for (args, want) in [
        (&["524288"][..], "wrote 524288"),
        (&["1048576"], "wrote 1048576"),
        (&["truncate", "2097152"], "truncate=EFBIG size=0"),
        (&["truncate", "1048576"], "truncate=OK size=1048576"),
    ] {
        fsize(args).expect_ok().expect_stdout_has(want);
    }
    // SIZE: plain bytes and K/M/G suffixes, in binary units.
    for (flag, want) in [
        ("1M", MIB),
        ("64K", 64 << 10),
        ("5000", 5000),
        ("1G", 1 << 30),
    ] {
        info(who, &["--fsize", flag]).expect_field("fsize", want);
    }
}

// ---- 7. open files -------------------------------------------------------------------------------------

fn open_files_limit(who: As) {
    sandbox(who, "limit_nofile", &["--open-files", "32"], &["1000"])
        .expect_ok()
        .expect_field("errno", "EMFILE")
        // Descriptors 0..31, of which only 0, 1 and 2 are there at the start.
        .expect_field("maxfd", 31)
        .expect_field("opened", 29);
    info(who, &["--open-files", "32"]).expect_field("nofile", 32);
    sandbox(who, "limit_nofile", &["--open-files", "256"], &["100"])
        .expect_ok()
        .expect_field("opened", 100)
        .expect_field("errno", "none");
}

// ---- 8. stack ------------------------------------------------------------------------------------------

fn stack_limit(who: As) {
    let recurse =
        |stack: &str, depth: &str| sandbox(who, "limit_stack", &["--stack", stack], &[depth]);
    recurse("8M", "65536").expect_signal(11);
    recurse("8M", "1024")
        .expect_ok()
        .expect_stdout_has("recursed 1024 (0)");
    // The flag sets the limit (it is not merely the usual 8 MiB default): 256 MiB lets the deep
    // recursion through.
    recurse("256M", "65536")
        .expect_ok()
        .expect_stdout_has("recursed 65536 (0)");
    info(who, &["--stack", "8M"]).expect_field("stack", 8 * MIB);
}

// ---- 9. output limit --------------------------------------------------------------------------------

/// What limit_output writes: byte i is i % 251.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// Whether `got` is the start of what limit_output writes.
fn is_output_prefix(got: &[u8]) -> bool {
    got == pattern(got.len())
}

/// limit_output writing `bytes` under `--output-limit 1M --stdout FILE` (FILE in a fresh
/// directory named after `test`): the run, and what reached FILE.
fn output_to_file(who: As, test: &str, bytes: usize) -> (Run, Vec<u8>) {
    let f = open_dir(test, who).join("out");
    let opts = ["--output-limit", "1M", "--stdout", s(&f)];
    let r = sandbox(who, "limit_output", &opts, &[&bytes.to_string()]);
    let got = read_bytes(&f);
    (r, got)
}

fn output_over_limit(who: As) {
    let (r, got) = output_to_file(who, "output-over", 10 << 20);
    r.expect_output_limit()
        .expect_killed()
        .expect_output_cut("--stdout", &got)
        .ensure(
            r.out.stdout.is_empty(),
            "output went to warden's stdout too",
        );
}

/// Well under the limit, and the boundary: exactly the limit passes whole (one byte more is OL,
/// [`output_one_byte_over`]).
fn output_under_limit(who: As) {
    for n in [100_000, 1 << 20] {
        let (r, got) = output_to_file(who, "output-under", n);
        r.expect_ok().ensure(
            got == pattern(n),
            format_args!(
                "the file has {} bytes, want exactly the {n} written",
                got.len()
            ),
        );
    }
}

/// One byte over the output limit is OL. The program may well have written it all and exited
/// before warden acts on it: then the report must say so (no `killed`, its exit code) -- or
/// warden kills it first. Either way the report is consistent ([`Run::has_report`]).
fn output_one_byte_over(who: As) {
    let exact: usize = 1 << 20;
    let (r, got) = output_to_file(who, "output-one-over", exact + 1);
    r.expect_output_limit().ensure(
        got.len() <= exact && is_output_prefix(&got),
        format_args!("{} bytes reached the file", got.len()),
    );
}

/// `--stdout F --stderr F` (a judge's `2>&1`): both streams end up in F, in order, neither
/// overwriting the other. (The interface does not say this; docs/guide.md does: "the same file for
/// both is opened once".)
fn same_file_for_both(who: As) {
    let f = open_dir("same-file", who).join("both");
    let script = "echo one; echo two >&2; echo three; echo four >&2";
    let opts = ["--stdout", s(&f), "--stderr", s(&f)];
    sandbox_cmd(who, "sh", &opts, &["/bin/sh", "-c", script])
        .expect_ok()
        .expect_file(&f, "one\ntwo\nthree\nfour\n");
}

/// stdout and stderr share one budget.
fn output_both_streams(who: As) {
    let d = open_dir("output-both", who);
    let (o, e) = (d.join("out"), d.join("err"));
    let opts = ["--output-limit", "1M", "--stdout", s(&o), "--stderr", s(&e)];
    let r = sandbox(who, "limit_output", &opts, &["600000", "600000"]);
    let (out, err) = (read_bytes(&o), read_bytes(&e));
    // The two streams are two pipes read side by side: the last stdout bytes may still sit in
    // their pipe when stderr's fill the limit, so which stream is cut is the reader's race. What
    // holds: each file is the start of what was written to it, and together they are the limit.
    r.expect_output_limit()
        .expect_killed()
        .ensure(
            is_output_prefix(&out) && is_output_prefix(&err),
            format_args!("stdout or stderr is not the start of what was written"),
        )
        .ensure(
            (out.len() + err.len()) as u64 == MIB,
            format_args!(
                "stdout {} + stderr {} bytes, want 1 MiB together",
                out.len(),
                err.len()
            ),
        );
}

/// Without --stdout the limit holds on warden's own stdout too.
#[test]
fn output_limit_without_redirection() {
    let r = sandbox(
        As::Me,
        "limit_output",
        &["--output-limit", "1M"],
        &["10485760"],
    );
    r.expect_output_limit()
        .expect_killed()
        .expect_output_cut("warden's stdout", &r.out.stdout);
}

// ---- 9b. the controlling terminal -----------------------------------------------------------------

/// util-linux `script`, which runs a command with a fresh pseudo-terminal as its controlling
/// terminal and copies what reaches the terminal to its own stdout.
const SCRIPT: &str = "/usr/bin/script";

/// `text` quoted for `sh`.
fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `warden run --report R OPTS... -- CMD...` as `who`, with a pseudo-terminal of its own as its
/// controlling terminal (and warden's stdin, stdout and stderr). The run's stdout is what
/// reached the terminal, from warden or from the program.
fn under_terminal(who: As, label: &str, opts: &[&str], cmd_args: &[&str]) -> Run {
    let dir = common::workdir().join("limits-reports");
    std::fs::create_dir_all(&dir).unwrap();
    common::chmod(&dir, 0o777);
    let report = dir.join(format!("{}.report", seq()));
    let _ = std::fs::remove_file(&report);
    let mut line = vec![common::warden().to_owned(), "run".into(), "--report".into()];
    line.push(s(&report).to_owned());
    line.extend(opts.iter().map(|o| o.to_string()));
    line.push("--".into());
    line.extend(cmd_args.iter().map(|a| a.to_string()));
    let line: Vec<String> = line.iter().map(|a| sh_quote(a)).collect();
    // -q: no banner; -e: script exits with warden's status; -c: run this; /dev/null: no typescript.
    let script = [SCRIPT, "-qec", &line.join(" "), "/dev/null"];
    let mut cmd = match who {
        As::Me => Command::new(SCRIPT),
        As::Nobody => {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(SCRIPT);
            c
        }
    };
    cmd.args(&script[1..])
        .current_dir(common::workdir())
        .stdin(Stdio::null())
        .env("PATH", SYSTEM_PATH)
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .env("TMPDIR", std::env::temp_dir());
    let (out, elapsed) = finish_with(cmd, DEADLINE, |_| {});
    let report_text = std::fs::read_to_string(&report).unwrap_or_default();
    let _ = std::fs::remove_file(&report);
    Run {
        label: format!(
            "{label} under warden {} on a terminal as {who:?}",
            opts.join(" ")
        ),
        out,
        elapsed,
        report: parse_report(&report_text),
        report_text,
    }
}

/// Whether `test` can run here: it needs util-linux `script` (prints a SKIP line if not).
fn have_script(test: &str) -> bool {
    let there = Path::new(SCRIPT).exists();
    if !there {
        eprintln!("SKIP {test}: needs {SCRIPT} (util-linux) to give warden a terminal");
    }
    there
}

/// The sandbox has no controlling terminal: a program writing 200,000 bytes to /dev/tty under
/// `--output-limit 100` gets ENXIO (what the kernel tells any process without one), and nothing
/// of it reaches the terminal warden runs on. Programs that probe for a terminal behave as they
/// do natively without one, and a shell's background job still works.
fn tty_is_not_a_way_around_the_output_limit(who: As) {
    if !have_script("tty_is_not_a_way_around_the_output_limit") {
        return;
    }
    let (prog, bin) = program("limit_tty");
    let out = open_dir("tty", who).join("out");
    let opts = [
        "--read",
        &bin,
        "--exec",
        &bin,
        "--output-limit",
        "100",
        "--stdout",
        s(&out),
    ];
    let r = under_terminal(who, "limit_tty 200000", &opts, &[&prog, "200000"]);
    let terminal = r.stdout();
    r.expect_ok()
        .expect_file(&out, "tty=ENXIO\n")
        .expect_int_in("output", ..=100)
        .ensure(
            !terminal.contains('Z') && terminal.len() < 200,
            format_args!(
                "{} bytes reached the terminal, want nothing of the program's",
                terminal.len()
            ),
        );

    // Probes for a terminal, natively without one (a session of its own, stdin /dev/null) and
    // in the sandbox run on a terminal with stdin /dev/null.
    let probe = "tty; echo tty=$?; test -t 0; echo t0=$?; \
                 if (: >/dev/tty) 2>/dev/null; then echo ctty=yes; else echo ctty=no; fi; \
                 sleep 0.1 & wait $!; echo job=$?";
    let native = Command::new("/usr/bin/setsid")
        .args(["-w", "/bin/sh", "-c", probe])
        .stdin(Stdio::null())
        .output()
        .expect("setsid runs");
    let native = String::from_utf8_lossy(&native.stdout).into_owned();
    assert!(native.contains("ctty=no"), "natively: {native}");
    let out = open_dir("tty-probe", who).join("out");
    let opts = ["--stdin", "/dev/null", "--stdout", s(&out)];
    under_terminal(who, "sh probing", &opts, &["/bin/sh", "-c", probe])
        .expect_ok()
        .expect_file(&out, &native);
}

/// `--tty` (alias `--interactive`): the program keeps warden's terminal, and what it writes
/// there reaches it (and is not counted by `--output-limit`, as docs/guide.md says).
fn tty_flag_keeps_the_terminal(who: As) {
    if !have_script("tty_flag_keeps_the_terminal") {
        return;
    }
    let (prog, bin) = program("limit_tty");
    for flag in ["--tty", "--interactive"] {
        let out = open_dir("tty-kept", who).join("out");
        let opts = [
            flag,
            "--read",
            &bin,
            "--exec",
            &bin,
            "--output-limit",
            "100",
            "--stdout",
            s(&out),
        ];
        let r = under_terminal(who, "limit_tty 200000", &opts, &[&prog, "200000"]);
        let zs = r.out.stdout.iter().filter(|&&b| b == b'Z').count();
        r.expect_ok()
            .expect_file(&out, "tty=OK wrote=200000\n")
            .expect_int_in("output", ..=100)
            .ensure(
                zs == 200_000,
                format_args!("{zs} of the 200000 bytes reached the terminal"),
            );
    }
}

// ---- 10. redirection, environment, starting directory ---------------------------------------------

fn redirection(who: As) {
    // A directory the policy says nothing about: the sandboxed program could not open these.
    let d = open_dir("redirect", who);
    let (inp, out, err) = (d.join("in.txt"), d.join("out.txt"), d.join("err.txt"));
    let text = format!("line one\nline two {}\n", std::process::id());
    write_file(&inp, &text, 0o644);
    // Truncated, not appended to.
    let old = "old content that is longer than the new one\n".repeat(10);
    write_file(&out, old, 0o666);
    let opts = ["--stdin", s(&inp), "--stdout", s(&out), "--stderr", s(&err)];
    let r = sandbox_cmd(who, "sh", &opts, &["/bin/sh", "-c", "cat; echo err >&2"]);
    r.expect_ok()
        .expect_file(&out, &text)
        .expect_file(&err, "err\n")
        .ensure(r.out.stdout.is_empty(), "warden's own stdout got output");
    // The policy indeed denies these paths to the program itself.
    let denied = sandbox_cmd(who, "cat", &[], &["/bin/cat", s(&inp)]);
    denied
        .ensure(
            denied.code() != Some(0),
            "the program read an ungranted file",
        )
        .expect_stdout_lacks("line one", "the program read an ungranted file");
}

/// The file behind --stdin is opened by warden outside the policy, read-only: the program can
/// read it, but not change it (or its metadata) through the descriptor or through
/// /proc/self/fd/0.
fn stdin_file_unchanged(who: As) {
    use std::os::unix::fs::MetadataExt;
    let inp = open_dir("stdin-meta", who).join("in.txt");
    write_file(&inp, "precious\n", 0o644);
    let snap = |p: &Path| {
        let m = std::fs::metadata(p).unwrap();
        (
            std::fs::read(p).unwrap(),
            m.mode(),
            m.uid(),
            m.gid(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        )
    };
    let before = snap(&inp);
    let r = sandbox(who, "limit_fdmeta", &["--stdin", s(&inp)], &[]);
    r.expect_ok().expect_stdout_has("DONE");
    for line in r.stdout().lines().filter(|l| l.contains('=')) {
        r.ensure(
            !line.ends_with("=OK"),
            format_args!("the program changed its --stdin file: {line}"),
        );
    }
    r.ensure(snap(&inp) == before, "the --stdin file changed");
}

fn env_vars(out: &str) -> BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// `/usr/bin/env` under warden with `opts`, warden itself started with
/// `WARDEN_LIMITS_OUTSIDE=leaked` and `WARDEN_LIMITS_COPY=copied`; it must run cleanly.
fn env_under(who: As, opts: &[&str]) -> Run {
    let r = sandbox_with(who, "env", opts, &["/usr/bin/env"], DEADLINE, |c| {
        c.env("WARDEN_LIMITS_OUTSIDE", "leaked")
            .env("WARDEN_LIMITS_COPY", "copied");
    });
    r.expect_ok();
    r
}

fn environment(who: As) {
    // --env-clear: a minimal environment plus what --env adds.
    let opts = [
        "--env-clear",
        "--env",
        "FOO=bar",
        "--env",
        "WARDEN_LIMITS_COPY",
    ];
    let r = env_under(who, &opts);
    r.expect_env("FOO", Some("bar"))
        .expect_env("WARDEN_LIMITS_COPY", Some("copied"))
        .expect_env("PATH", Some(SYSTEM_PATH));
    // Nothing leaks through --env-clear.
    for leaked in ["WARDEN_LIMITS_OUTSIDE", "LC_ALL", "TZ"] {
        r.expect_env(leaked, None);
    }
    let env = env_vars(&r.stdout());
    r.ensure(env.contains_key("HOME"), "no HOME");
    let tmpdir = env.get("TMPDIR").cloned().unwrap_or_default();
    r.ensure(
        !tmpdir.is_empty() && Path::new(&tmpdir) != std::env::temp_dir(),
        "TMPDIR should be the scratch directory",
    );
    let allowed = ["PATH", "HOME", "TMPDIR", "FOO", "WARDEN_LIMITS_COPY"];
    let extra: Vec<&String> = env
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .collect();
    r.ensure(
        extra.is_empty(),
        format_args!("not a minimal environment: {extra:?}"),
    );

    // Without --env-clear: warden's environment, plus --env.
    env_under(who, &["--env", "FOO=bar"])
        .expect_env("FOO", Some("bar"))
        .expect_env("WARDEN_LIMITS_OUTSIDE", Some("leaked"));
    // --env NAME=VALUE overrides warden's own value.
    env_under(who, &["--env", "WARDEN_LIMITS_OUTSIDE=replaced"])
        .expect_env("WARDEN_LIMITS_OUTSIDE", Some("replaced"));
}

fn chdir(who: As) {
    let d = open_dir("chdir", who);
    write_file(&d.join("here.txt"), "x\n", 0o644);
    let real_d = d.canonicalize().unwrap();
    let pwd_ls = ["/bin/sh", "-c", "/bin/pwd -P; ls"];
    sandbox_cmd(who, "pwd", &["--read", s(&d), "--chdir", s(&d)], &pwd_ls)
        .expect_ok()
        .expect_stdout(&format!("{}\nhere.txt\n", real_d.display()));
    let (_, bin) = program("limit_info");
    let real = Path::new(&bin).canonicalize().unwrap();
    info(who, &["--chdir", &bin]).expect_field("cwd", real.display());
    // --chdir overrides the policy's starting_dir.
    let p = policy_file(&d, "start.policy", "starting_dir /usr\n");
    let opts = ["--policy", &p, "--read", s(&d), "--chdir", s(&d)];
    sandbox_cmd(who, "pwd", &opts, &["/bin/pwd", "-P"])
        .expect_ok()
        .expect_stdout(&format!("{}\n", real_d.display()));
    // (And the policy's starting_dir holds without it.)
    sandbox_cmd(who, "pwd", &["--policy", &p], &["/bin/pwd", "-P"])
        .expect_ok()
        .expect_stdout("/usr\n");
}

fn cpu_pinning(who: As) {
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cases = vec![("0", "0")];
    if ncpu >= 2 {
        cases.push(("1", "1"));
        cases.push(("0-1", "0,1"));
        cases.push(("0,1", "0,1"));
    } else {
        common::skip(
            &format!("cpu_pinning as {} (CPU 1 cases)", common::who_tag(who)),
            common::Lack::SecondCpu,
            "one CPU here",
        );
    }
    for (flag, want) in cases {
        info(who, &["--cpu", flag]).expect_field("cpus", want);
    }
    // Without --cpu the program may use every CPU warden may: the start's placement
    // (warden/src/placement.rs) pins its processes while the sandbox is made, and gives them
    // back before the program runs.
    let own = rustix::thread::sched_getaffinity(None).expect("sched_getaffinity");
    let want: Vec<String> = (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&c| own.is_set(c))
        .map(|c| c.to_string())
        .collect();
    info(who, &[]).expect_field("cpus", want.join(","));
}

// ---- 11. --pass-fd and an interactive task --------------------------------------------------------

/// A pipe, both ends close-on-exec and numbered 100 or more (clear of the numbers the tests
/// hand to the sandbox): (read end, write end).
fn pipe() -> (OwnedFd, OwnedFd) {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).expect("pipe2");
    let high = |fd: OwnedFd| {
        let n = rustix::io::fcntl_dupfd_cloexec(&fd, 100).expect("F_DUPFD_CLOEXEC");
        assert!(std::os::fd::AsRawFd::as_raw_fd(&n) >= 100);
        n
    };
    (high(r), high(w))
}

/// In the child, before exec: `fd` (ours, close-on-exec) becomes `target` (inherited).
/// The grader: sends `queries` numbers one line at a time, checks each answer (x*x mod
/// 1000000007) before sending the next, then closes the queries and expects end of answers.
fn grade(queries: OwnedFd, answers: OwnedFd, n: u64) -> Result<u64, String> {
    let mut to = std::fs::File::from(queries);
    let mut from = BufReader::new(std::fs::File::from(answers));
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut line = String::new();
    for i in 0..n {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let x = (state >> 33) % 1_000_000_000;
        to.write_all(format!("{x}\n").as_bytes())
            .map_err(|e| format!("query {i}: the solution stopped reading: {e}"))?;
        line.clear();
        match from.read_line(&mut line) {
            Ok(0) => return Err(format!("query {i}: no answer (end of output)")),
            Ok(_) => {}
            Err(e) => return Err(format!("query {i}: {e}")),
        }
        let want = x * x % 1_000_000_007;
        if line.trim_end().parse::<u64>() != Ok(want) {
            return Err(format!(
                "query {i}: wrong answer {line:?} to {x}, want {want}"
            ));
        }
    }
    drop(to);
    let mut rest = String::new();
    let _ = from.read_to_string(&mut rest);
    if !rest.is_empty() {
        return Err(format!("output after the last answer: {rest:?}"));
    }
    Ok(n)
}

impl Run {
    /// The grader got every one of its `n` answers right (`graded` is what it said).
    fn expect_graded(&self, graded: Result<u64, String>, n: u64) -> &Self {
        assert_eq!(
            graded,
            Ok(n),
            "the interactive exchange failed\n{}",
            self.dump()
        );
        self
    }
}

/// Runs limit_solution under warden as `who`, connected to a grader thread through two pipes:
/// through fds 5 and 7 with --pass-fd when `pass_fd`, else through stdin and stdout.
fn interactive(who: As, pass_fd: bool, n: u64) {
    let (prog, bin) = program("limit_solution");
    let (q_read, q_write) = pipe();
    let (a_read, a_write) = pipe();
    let mut opts: Vec<&str> = vec!["--read", &bin, "--exec", &bin];
    let mut args: Vec<&str> = vec![&prog];
    if pass_fd {
        opts.extend_from_slice(&["--pass-fd", "5", "--pass-fd", "7"]);
        args.extend_from_slice(&["5", "7"]);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let grader = std::thread::spawn(move || {
        let _ = tx.send(grade(q_write, a_read, n));
    });
    let (q_raw, a_raw) = {
        use std::os::fd::AsRawFd;
        (q_read.as_raw_fd(), a_write.as_raw_fd())
    };
    let mut child_ends = Some((q_read, a_write));
    let label = if pass_fd {
        "limit_solution over --pass-fd 5,7"
    } else {
        "limit_solution over stdio"
    };
    let r = sandbox_with(who, label, &opts, &args, Duration::from_secs(120), |c| {
        if pass_fd {
            common::pass_fds(c, &[(q_raw, 5), (a_raw, 7)]);
        } else {
            let (q, a) = child_ends.take().unwrap();
            c.stdin(Stdio::from(q)).stdout(Stdio::from(a));
        }
    });
    // Our copies of the sandbox's ends (when they were dup'ed rather than moved).
    drop(child_ends);
    let graded = rx
        .recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| Err("the grader never finished".into()));
    if graded.is_ok() {
        let _ = grader.join();
    }
    r.expect_graded(graded, n)
        .expect_ok()
        .expect_elapsed_under(Duration::from_secs(120));
}

/// 200,000 queries over two pipes on descriptors 5 and 7, passed with --pass-fd.
fn interactive_pass_fd(who: As) {
    interactive(who, true, 200_000);
}

/// The same over the solution's stdin and stdout.
#[test]
fn interactive_task_over_stdio() {
    interactive(As::Me, false, 200_000);
}

/// docs/guide.md's shell recipe: named pipes given as --stdin and --stdout, which warden opens
/// itself (stdin first, or the two opens deadlock against a grader opening them in that order).
fn interactive_fifos(who: As) {
    let d = open_dir("fifos", who);
    let (to_sol, from_sol) = (d.join("to-sol"), d.join("from-sol"));
    for p in [&to_sol, &from_sol] {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            p.as_path(),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o666),
            0,
        )
        .expect("mkfifo");
        common::chmod(p, 0o666);
    }
    let n = 20_000;
    let (tx, rx) = std::sync::mpsc::channel();
    let (t, f) = (to_sol.clone(), from_sol.clone());
    std::thread::spawn(move || {
        let res = (|| {
            let to = std::fs::OpenOptions::new()
                .write(true)
                .open(&t)
                .map_err(|e| e.to_string())?;
            let from = std::fs::File::open(&f).map_err(|e| e.to_string())?;
            grade(OwnedFd::from(to), OwnedFd::from(from), n)
        })();
        let _ = tx.send(res);
    });
    let (prog, bin) = program("limit_solution");
    let r = sandbox_with(
        who,
        "limit_solution over FIFOs",
        &[
            "--read",
            &bin,
            "--exec",
            &bin,
            "--stdin",
            s(&to_sol),
            "--stdout",
            s(&from_sol),
        ],
        &[&prog],
        Duration::from_secs(30),
        |_| {},
    );
    let graded = match rx.recv_timeout(Duration::from_secs(5)) {
        Ok(g) => g,
        Err(_) => {
            // Unblock the grader's opens and reads (O_RDWR on a FIFO never blocks), then let go.
            let fifos: Vec<_> = [&to_sol, &from_sol]
                .iter()
                .filter_map(|p| {
                    std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .open(p)
                        .ok()
                })
                .collect();
            std::thread::sleep(Duration::from_millis(200));
            drop(fifos);
            Err("the grader never finished (blocked opening or reading the FIFOs)".into())
        }
    };
    r.expect_graded(graded, n).expect_ok();
}

/// Only 0, 1 and 2 reach the program unless --pass-fd says otherwise.
fn pass_fd_is_needed(who: As) {
    let (q_read, _q_write) = pipe();
    let (_a_read, a_write) = pipe();
    let (q_raw, a_raw) = {
        use std::os::fd::AsRawFd;
        (q_read.as_raw_fd(), a_write.as_raw_fd())
    };
    let hook = |c: &mut Command| common::pass_fds(c, &[(q_raw, 5), (a_raw, 7)]);
    // limit_info with descriptors 5 and 7 open in warden: the descriptors the program has.
    let (prog, bin) = program("limit_info");
    for (pass, want) in [(&[][..], "0,1,2"), (&["--pass-fd", "5"], "0,1,2,5")] {
        let opts = [&["--read", &bin, "--exec", &bin][..], pass].concat();
        let label = format!("limit_info {}", pass.join(" "));
        sandbox_with(who, &label, &opts, &[&prog], DEADLINE, hook)
            .expect_ok()
            .expect_field("fds", want);
    }
    // And the solution fails cleanly without it.
    let (sol, sbin) = program("limit_solution");
    let r = sandbox_with(
        who,
        "limit_solution 5 7 without --pass-fd",
        &["--read", &sbin, "--exec", &sbin],
        &[&sol, "5", "7"],
        DEADLINE,
        hook,
    );
    r.expect_status("RE").expect_key("exitcode", "3").ensure(
        common::stderr(&r.out).contains("bad fd 5"),
        "no \"bad fd 5\" on stderr",
    );
}

// ---- 12. accuracy of the reported CPU time -----------------------------------------------------------

/// Iterations of limit_cpu's fixed computation: about half a second here.
const WORK: &str = "200000000";

/// Runs PROGRAM natively and returns its (and its waited-for children's) user+sys CPU seconds.
// The child is reaped with wait4(2), which std does not know about.
#[allow(clippy::zombie_processes)]
fn native_cpu(prog: &str, args: &[&str]) -> f64 {
    let child = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the program runs natively");
    let pid = child.id() as i32;
    let (status, usage) =
        warden::sys::process::wait_with_usage(pid).unwrap_or_else(|e| panic!("wait4: {e}"));
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{prog} {args:?} failed natively: {status:#x}"
    );
    usage.cpu.as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Checks the reported `time` of limit_cpu ARGS (which prints its own user+sys, children
/// included, as `cpu_us=`) two ways:
///
/// - against the CPU time the program measured itself in the same run: no noise between the
///   two, so every run must be within `own` (ratio reported/own);
/// - against the program run natively (wait4's rusage), median of 3 runs each, interleaved:
///   ratio of the medians within `native`. CPU time here varies by up to ~25% from run to run
///   under load (a 2-vCPU VM that others build on), so a round that misses is tried again, up to
///   3 rounds; a systematic error misses every round (and the same-run check above).
fn check_reported_time(who: As, args: &[&str], own: (f64, f64), native_range: (f64, f64)) {
    let (prog, _) = program("limit_cpu");
    let mut rounds = Vec::new();
    for _ in 0..3 {
        let (mut native, mut reported) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            native.push(native_cpu(&prog, args));
            let r = sandbox(who, "limit_cpu", &[], args);
            r.expect_ok();
            let rep = r.num("time");
            let own_s = r.field_int("cpu_us") as f64 / 1e6;
            let ratio = rep / own_s;
            assert!(
                (own.0..=own.1).contains(&ratio),
                "reported time {rep:.3} s vs {own_s:.3} s the program itself measured in the \
                 same run (ratio {ratio:.3}), want {:.2}..={:.2}\n{}",
                own.0,
                own.1,
                r.dump()
            );
            reported.push(rep);
        }
        let (n, rep) = (median(native.clone()), median(reported.clone()));
        let ratio = rep / n;
        rounds.push(format!(
            "native {native:.3?} reported {reported:.3?}: medians {n:.3} vs {rep:.3}, ratio {ratio:.3}"
        ));
        if (native_range.0..=native_range.1).contains(&ratio) {
            return;
        }
    }
    panic!(
        "reported time vs native, want a ratio of medians in {:.2}..={:.2} in one of 3 rounds:\n{}",
        native_range.0,
        native_range.1,
        rounds.join("\n")
    );
}

/// The program's own measure pins the report to 5%. Against separate native runs the band is
/// 10%: those runs are other processes at other moments, and on a shared 2-CPU machine a round
/// has come out at 1.05–1.19 with nothing wrong in the report.
fn report_time_accuracy(who: As) {
    check_reported_time(who, &["work", WORK], (0.95, 1.05), (0.90, 1.10));
}

/// A parent and two children each doing half: `time` covers all three (at least 90%).
fn report_time_all_processes(who: As) {
    check_reported_time(who, &["forkwork", WORK, "2"], (0.90, 1.05), (0.90, 1.10));
}

// ---- 13. the sandbox's own cost in the report, and --report-json ---------------------------------------

/// Runs `cmd_args` with both --report and --report-json; returns the run and the JSON.
fn with_json(who: As, label: &str, opts: &[&str], cmd_args: &[&str]) -> (Run, serde_json::Value) {
    let d = open_dir(&format!("json-{}", seq()), who);
    let json_path = d.join("report.json");
    let mut all = vec!["--report-json", s(&json_path)];
    all.extend_from_slice(opts);
    let r = sandbox_cmd(who, label, &all, cmd_args);
    let text = std::fs::read_to_string(&json_path)
        .unwrap_or_else(|e| panic!("no --report-json file ({e})\n{}", r.dump()));
    let v: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("--report-json is not JSON ({e}): {text}\n{}", r.dump()));
    assert!(v.is_object(), "--report-json is not an object: {text}");
    (r, v)
}

/// Every key:value of the report is in the JSON with the same value (numbers as numbers,
/// `delegated-FAMILY` in "delegated-families"), and `status` is always there.
fn assert_json_agrees(r: &Run, v: &serde_json::Value) {
    let ctx = format!("JSON: {v}\n{}", r.dump());
    for (k, val) in &r.report {
        if k == "status" {
            // Compared below: the two formats word it differently.
            continue;
        }
        let j = if let Some(fam) = k.strip_prefix("delegated-") {
            &v["delegated-families"][fam]
        } else {
            &v[k.as_str()]
        };
        assert!(!j.is_null(), "{k} missing from the JSON\n{ctx}");
        match val.parse::<f64>() {
            Ok(x) if k != "message" && k != "status" && k != "accounting" => {
                let y = j
                    .as_f64()
                    .unwrap_or_else(|| panic!("{k} is not a number in the JSON\n{ctx}"));
                assert!(
                    (x - y).abs() <= 0.0011 + 1e-6 * x.abs(),
                    "{k}: {x} vs {y} in the JSON\n{ctx}"
                );
            }
            _ => assert_eq!(j.as_str(), Some(val.as_str()), "{k}\n{ctx}"),
        }
    }
    // The JSON keeps warden's finer status; the meta file says what isolate would.
    let meta_status = r.opt("status").unwrap_or("OK");
    let json_status = v["status"].as_str().unwrap_or("none");
    let agree = match json_status {
        "ML" | "OL" => ["SG", "RE"].contains(&meta_status),
        other => other == meta_status,
    };
    assert!(
        agree,
        "status {json_status} in the JSON, {meta_status} in the meta file\n{ctx}"
    );
    // The JSON has cg-oom-killed (0 or 1) wherever a cgroup counted; the meta file only at 1.
    if r.opt("cg-oom-killed").is_none() {
        assert!(
            matches!(v["cg-oom-killed"].as_i64(), None | Some(0)),
            "cg-oom-killed\n{ctx}"
        );
    }
}

fn report_cost_keys(who: As) {
    let d = open_dir("cost", who);
    let f = d.join("data.txt");
    write_file(&f, "some data\n", 0o644);
    // Delegated calls are counted: the agent decides them (`never`), in a view too.
    let (r, v) = with_json(
        who,
        "cat",
        &["--read", s(&d), "--fast-path=never"],
        &["/bin/cat", s(&f)],
    );
    r.expect_ok().expect_stdout("some data\n");
    let open = r.int("delegated-open");
    r.expect_int_in("delegated-open", 1..)
        // delegated >= delegated-open
        .expect_int_in("delegated", open..)
        .expect_num_in("agent-time", 0.0..)
        .expect_int_in("denied", 0..)
        .expect_int_in("exitcode", 0..=0)
        .expect_num_in("time", 0.0..)
        .expect_int_in("max-rss", 1..)
        .expect_int_in("csw-voluntary", 0..)
        .expect_int_in("csw-forced", 0..)
        .expect_accounting(who);
    assert_json_agrees(&r, &v);
    assert_eq!(v["exitcode"].as_i64(), Some(0), "JSON exitcode: {v}");
    assert!(
        v["delegated-families"]["open"]
            .as_i64()
            .is_some_and(|n| n >= 1),
        "JSON: {v}"
    );

    // A denied call is counted.
    // The agent counts the denial: it decides the open (`never`); in a view the kernel would.
    let (r, v) = with_json(
        who,
        "cat /etc/shadow",
        &["--fast-path=never"],
        &["/bin/cat", "/etc/shadow"],
    );
    r.expect_status("RE")
        .expect_key("exitcode", "1")
        .expect_int_in("denied", 1..);
    assert_json_agrees(&r, &v);
    assert_eq!(v["exitcode"].as_i64(), Some(1), "JSON exitcode: {v}");
}

/// What isolate's callers conclude from warden's meta file, for each way a run ends: read as
/// CMS reads it, a segfault is a signal (not a memory kill), a timeout a timeout, a nonzero exit
/// a nonzero exit and a clean run a success (no `status` key at all, as isolate). The memory
/// kill is [`memory_hog_is_an_oom_kill_under_a_cgroup`] (it needs root and a memory cgroup).
fn isolate_callers_read_the_meta_file(who: As) {
    // SIGSEGV: SG with its signal, no cg-oom-killed key.
    sandbox(who, "limit_stack", &["--stack", "8M"], &["65536"])
        .expect_signal(libc::SIGSEGV)
        .expect_no_key("cg-oom-killed")
        .expect_cms(CmsVerdict::Signal(libc::SIGSEGV));
    // The CPU limit: TO, killed.
    sandbox(
        who,
        "limit_cpu",
        &["--time", "0.3", "--extra-time", "0.1"],
        &["spin", "inf"],
    )
    .expect_status("TO")
    .expect_killed()
    .expect_no_key("cg-oom-killed")
    .expect_cms(CmsVerdict::Timeout);
    // The wall-clock limit: TO, and the message says wall.
    sandbox_cmd(who, "sleep", &["--wall-time", "0.3"], &["/bin/sleep", "5"])
        .expect_status("TO")
        .expect_killed()
        .expect_cms(CmsVerdict::TimeoutWall);
    // A nonzero exit: RE with the code.
    sandbox_cmd(who, "exit 3", &[], &["/bin/sh", "-c", "exit 3"])
        .expect_status("RE")
        .expect_key("exitcode", "3")
        .expect_no_key("killed")
        .expect_no_key("cg-oom-killed")
        .expect_cms(CmsVerdict::NonzeroReturn(3));
    // A clean run: no status, no cg-oom-killed.
    sandbox_cmd(who, "true", &[], &["/bin/true"])
        .expect_ok()
        .expect_cms(CmsVerdict::Ok);
}

#[test]
fn report_json_agrees_on_signals_and_meta_is_an_alias() {
    let kill = ["/bin/sh", "-c", "kill -KILL $$"];
    let (r, v) = with_json(As::Me, "kill -KILL", &[], &kill);
    // SG, exitsig 9, not killed by warden, and warden exits 137.
    r.expect_signal(9);
    assert_json_agrees(&r, &v);
    assert_eq!(v["exitsig"].as_i64(), Some(9), "JSON: {v}");

    let (r, v) = with_json(As::Me, "exit 3", &[], &["/bin/sh", "-c", "exit 3"]);
    r.expect_status("RE")
        .expect_key("exitcode", "3")
        .expect_code(3);
    assert_json_agrees(&r, &v);

    // --meta FILE is --report FILE.
    let meta = open_dir("meta", As::Me).join("meta");
    let out = warden_out(&["run", "--meta", s(&meta), "--", "/bin/sh", "-c", "exit 4"]);
    assert_eq!(out.status.code(), Some(4), "{}", common::stderr(&out));
    let m = parse_report(&std::fs::read_to_string(&meta).unwrap_or_default());
    assert_eq!(
        m.get("status").map(String::as_str),
        Some("RE"),
        "{m:?}\n{}",
        common::stderr(&out)
    );
    assert_eq!(m.get("exitcode").map(String::as_str), Some("4"), "{m:?}");
    assert!(
        m.contains_key("time") && m.contains_key("time-wall"),
        "{m:?}"
    );
}

// ---- 14. limits from a policy file -----------------------------------------------------------------

/// Writes `text` to the policy file `dir/name` (world-readable); returns its path.
fn policy_file(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    write_file(&p, text, 0o644);
    s(&p).to_owned()
}

fn policy_limits(who: As) {
    let d = open_dir("policy", who);
    let half = policy_file(&d, "half.policy", "limit-time 0.5\nlimit-extra-time 0.2\n");
    sandbox(who, "limit_cpu", &["--policy", &half], &["spin", "inf"])
        .expect_status("TO")
        .expect_killed()
        .expect_num_in("time", 0.5..1.5);
    // The flag overrides the policy: upwards...
    let opts = ["--policy", &half, "--time", "3"];
    sandbox(who, "limit_cpu", &opts, &["spin", "1.0"])
        .expect_ok()
        .expect_stdout_has("spun 1.0");
    // ... and downwards.
    let five = policy_file(&d, "five.policy", "limit-time 5\n");
    let opts = ["--policy", &five, "--time", "0.5", "--extra-time", "0.2"];
    sandbox(who, "limit_cpu", &opts, &["spin", "inf"])
        .expect_status("TO")
        .expect_killed()
        .expect_num_in("time", ..1.5);

    let wall = policy_file(&d, "wall.policy", "limit-wall-time 0.5\n");
    let m = marker();
    sandbox_cmd(who, "sleep", &["--policy", &wall], &["/bin/sleep", &m])
        .expect_status("TO")
        .expect_killed()
        .expect_none_left(&m);

    // The rlimit keywords reach the program...
    let rlimits = "limit-fsize 1M\nlimit-stack 16M\nlimit-open-files 64\n";
    let rl = policy_file(&d, "rlimits.policy", rlimits);
    info(who, &["--policy", &rl])
        .expect_field("fsize", MIB)
        .expect_field("stack", 16 * MIB)
        .expect_field("nofile", 64);
    // ... and the flags override limit-open-files and limit-fsize.
    info(
        who,
        &["--policy", &rl, "--open-files", "40", "--fsize", "2M"],
    )
    .expect_field("nofile", 40)
    .expect_field("fsize", 2 * MIB)
    .expect_field("stack", 16 * MIB);

    // limit-processes and limit-output behave like their flags.
    let procs = policy_file(&d, "procs.policy", "limit-processes 10\nlimit-output 1M\n");
    ten_processes(who, &["--policy", &procs], "bomb", "1000", "forks", |_| {});
    sandbox(who, "limit_output", &["--policy", &procs], &["10485760"])
        .expect_output_limit()
        .expect_killed();
}

#[test]
fn memory_limit_from_a_policy_file() {
    let test = "memory_limit_from_a_policy_file";
    if !common::require_root(test) {
        return;
    }
    let d = open_dir("policy-mem", As::Me);
    let p = policy_file(&d, "mem.policy", "limit-mem 128M\n");
    sandbox(As::Me, "limit_mem", &["--policy", &p], &["400"]).expect_oom_kill();
    let opts = ["--policy", &p, "--mem", "512M"];
    sandbox(As::Me, "limit_mem", &opts, &["400"])
        .expect_ok()
        .expect_stdout_has("done 400");
}

#[test]
fn check_accepts_every_limit_keyword() {
    let d = open_dir("policy-check", As::Me);
    let p = policy_file(
        &d,
        "all.policy",
        "limit-time 2\nlimit-wall-time 5\nlimit-extra-time 0.5\nlimit-mem 256M\n\
         limit-processes 10\nlimit-fsize 1M\nlimit-stack 8M\nlimit-open-files 64\nlimit-output 1M\n",
    );
    let out = warden_out(&["check", &p]);
    let normalized = common::stdout(&out);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{normalized}\nstderr:\n{}",
        common::stderr(&out)
    );
    for kw in [
        "limit-time",
        "limit-mem",
        "limit-output",
        "limit-open-files",
    ] {
        assert!(
            normalized.contains(kw),
            "normalized policy lacks {kw}:\n{normalized}"
        );
    }
}

// ---- 15. bad input -----------------------------------------------------------------------------------

#[test]
fn bad_limit_values_are_125_and_name_the_flag() {
    for (flag, value) in [
        ("--mem", "12Q"),
        ("--time", "-1"),
        ("--cpu", "99"),
        ("--wall-time", "soon"),
        ("--processes", "-3"),
        ("--output-limit", "1X"),
    ] {
        let arg = format!("{flag}={value}");
        let out = warden_out(&["run", &arg, "--", "/bin/true"]);
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(125), "{arg}: exit status\n{err}");
        assert!(
            err.contains(flag),
            "{arg}: stderr does not name {flag}:\n{err}"
        );
        assert!(!err.contains("panicked"), "{arg}:\n{err}");
    }
    // A bad limit in a policy file: 125 with the file's position.
    let d = open_dir("bad-limit-policy", As::Me);
    let p = policy_file(&d, "bad.policy", "limit-time 1\nlimit-mem 12Q\n");
    let out = warden_out(&["run", "--policy", &p, "--", "/bin/true"]);
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(
        err.contains(&format!("{p}:2:")),
        "no position of the bad limit:\n{err}"
    );
}

// ---- the tests that run twice, as whoever runs the tests and as uid 65534 -------------------------

both! {
    // 1. CPU time
    cpu_time_over_limit: cpu_time_over_limit_is_to,
        cpu_time_over_limit_is_to_as_nobody;
    cpu_time_under_limit: cpu_time_under_limit_is_ok,
        cpu_time_under_limit_is_ok_as_nobody;
    cpu_time_within_grace: cpu_time_within_grace_is_to_but_not_killed,
        cpu_time_within_grace_is_to_but_not_killed_as_nobody;
    cpu_time_counts_every_process: cpu_time_counts_every_process_of_the_sandbox,
        cpu_time_counts_every_process_of_the_sandbox_as_nobody;
    cpu_time_of_dead_children: cpu_time_counts_reaped_and_orphaned_children,
        cpu_time_counts_reaped_and_orphaned_children_as_nobody;
    cpu_time_spent_by_the_agent: cpu_time_counts_the_agents_work,
        cpu_time_counts_the_agents_work_as_nobody;

    // 2. wall time
    wall_time_over_limit: wall_time_over_limit_is_to,
        wall_time_over_limit_is_to_as_nobody;
    wall_time_under_limit: wall_time_under_limit_is_ok,
        wall_time_under_limit_is_ok_as_nobody;
    wall_time_stopped: stopped_program_is_killed_at_the_wall_limit,
        stopped_program_is_killed_at_the_wall_limit_as_nobody;

    // 3. memory
    memory_under_limit: memory_under_limit_is_ok,
        memory_under_limit_is_ok_as_nobody;
    agent_state_within_memory_limit: agent_state_is_bounded_by_the_memory_limit,
        agent_state_is_bounded_by_the_memory_limit_as_nobody;

    // 3b. the closing line
    closing_line_names_the_limit: closing_line_names_the_limit_that_stopped_the_program,
        closing_line_names_the_limit_that_stopped_the_program_as_nobody;

    // 4. processes
    fork_bomb: fork_bomb_is_capped_and_cleaned_up,
        fork_bomb_is_capped_and_cleaned_up_as_nobody;
    threads_count: threads_count_toward_processes,
        threads_count_toward_processes_as_nobody;
    few_children: few_children_under_process_limit_are_ok,
        few_children_under_process_limit_are_ok_as_nobody;

    // 5. a process tree that ignores SIGTERM
    sigterm_tree: sigterm_ignoring_tree_is_killed_at_the_wall_limit,
        sigterm_ignoring_tree_is_killed_at_the_wall_limit_as_nobody;

    // 6. file size
    fsize_limit: fsize_limit_is_sigxfsz,
        fsize_limit_is_sigxfsz_as_nobody;

    // 7. open files
    open_files_limit: open_files_limit_is_emfile,
        open_files_limit_is_emfile_as_nobody;

    // 8. stack
    stack_limit: stack_limit_is_sigsegv,
        stack_limit_is_sigsegv_as_nobody;

    // 9. output limit
    output_over_limit: output_over_limit_is_ol,
        output_over_limit_is_ol_as_nobody;
    output_under_limit: output_under_limit_is_exact,
        output_under_limit_is_exact_as_nobody;
    output_one_byte_over: output_one_byte_over_the_limit_is_ol,
        output_one_byte_over_the_limit_is_ol_as_nobody;
    same_file_for_both: stdout_and_stderr_may_share_a_file,
        stdout_and_stderr_may_share_a_file_as_nobody;
    output_both_streams: output_limit_counts_stdout_and_stderr_together,
        output_limit_counts_stdout_and_stderr_together_as_nobody;

    // 9b. the controlling terminal
    tty_is_not_a_way_around_the_output_limit: dev_tty_is_enxio_without_tty_flag,
        dev_tty_is_enxio_without_tty_flag_as_nobody;
    tty_flag_keeps_the_terminal: tty_flag_keeps_the_controlling_terminal,
        tty_flag_keeps_the_controlling_terminal_as_nobody;

    // 10. redirection, environment, starting directory
    redirection: redirection_files_are_opened_by_warden,
        redirection_files_are_opened_by_warden_as_nobody;
    stdin_file_unchanged: stdin_file_cannot_be_changed_through_its_descriptor,
        stdin_file_cannot_be_changed_through_its_descriptor_as_nobody;
    environment: env_clear_and_env_shape_the_environment,
        env_clear_and_env_shape_the_environment_as_nobody;
    chdir: chdir_sets_the_starting_directory,
        chdir_sets_the_starting_directory_as_nobody;
    cpu_pinning: cpu_pins_the_sandbox,
        cpu_pins_the_sandbox_as_nobody;

    // ?
    interactive_pass_fd: interactive_task_over_pass_fd,
        interactive_task_over_pass_fd_as_nobody;
    interactive_fifos: interactive_task_over_fifos,
        interactive_task_over_fifos_as_nobody;
    pass_fd_is_needed: only_passed_descriptors_reach_the_program,
        only_passed_descriptors_reach_the_program_as_nobody;

    // 12. accuracy of the reported CPU time
    report_time_accuracy: report_time_matches_native_cpu_time,
        report_time_matches_native_cpu_time_as_nobody;
    report_time_all_processes: report_time_covers_every_process,
        report_time_covers_every_process_as_nobody;

    // 13. the sandbox's own cost in the report, and what isolate's callers read in it
    isolate_callers_read_the_meta_file: meta_file_reads_right_to_isolate_callers,
        meta_file_reads_right_to_isolate_callers_as_nobody;
    report_cost_keys: report_counts_the_sandbox_cost_and_json_agrees,
        report_counts_the_sandbox_cost_and_json_agrees_as_nobody;

    // 14. limits from a policy file
    policy_limits: limits_from_a_policy_file,
        limits_from_a_policy_file_as_nobody;
}

// ---- the run's own disk (limit-disk) ----

/// Fills the run's disk by every place it has (files of `--fsize` each in the scratch
/// directory, `/dev/shm`, a private copy), then says how many bytes each place took: with
/// `--disk 64M` they hold 64 MiB together, the rest is ENOSPC, and nothing of it reaches the
/// host's disk.
fn disk_budget(who: As) {
    let tmp = common::fresh_dir(&format!("disk-tmp-{}", who_tag(who)));
    common::chmod(&tmp, 0o1777);
    let tree = common::fresh_dir(&format!("disk-tree-{}", who_tag(who)));
    write_file(&tree.join("keep"), "host\n", 0o644);
    if who == As::Nobody {
        std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&tree)
            .status()
            .unwrap();
    }
    let policy = tmp.join("copy.policy");
    write_file(
        &policy,
        format!(
            "path-map {} /m copy\npath-allow read /m /m/*\npath-allow write /m/*\n",
            tree.display()
        ),
        0o644,
    );
    let report = tmp.join("report.json");
    // Each place: write 16 MiB files until one fails, and print the KiB it took.
    let fill = "fill() { i=0; while [ $i -lt 64 ]; do \
                  dd if=/dev/zero of=$1/f$i bs=1M count=16 2>/dev/null || break; i=$((i+1)); done; \
                  echo $2 $(du -sk $1 | cut -f1); }; \
                fill . scratch; fill /dev/shm shm; fill /m copy";
    let run = |extra: &[&str], script: &str| {
        let mut cmd = warden_cmd(who);
        cmd.env("TMPDIR", &tmp)
            .args(["run", "--fsize", "16M", "--disk", "64M"]);
        cmd.args(extra);
        cmd.arg("--report-json")
            .arg(&report)
            .args(["--", "/bin/sh", "-c", script]);
        common::finish(cmd, DEADLINE).0
    };
    // Without a view there is no disk of the run's own: said, and no run.
    let o = run(&["--view", "off"], "true");
    assert_eq!(o.status.code(), Some(125), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("limit-disk"),
        "{}",
        common::stderr(&o)
    );
    // A private copy is a mount of the view: this run has one in every mode.
    let o = run(&["--policy", policy.to_str().unwrap()], fill);
    let (out, err) = (common::stdout(&o), common::stderr(&o));
    let kib = |place: &str| -> u64 {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{place} ")))
            .unwrap_or_else(|| panic!("no {place} line: {out}\n{err}"))
            .trim()
            .parse()
            .unwrap()
    };
    let total = kib("scratch") + kib("shm") + kib("copy");
    // 64 MiB together (a directory's own blocks aside), the scratch first.
    assert!(total <= 64 * 1024 + 64, "{total} KiB: {out}\n{err}");
    assert!(kib("scratch") >= 48 * 1024, "{out}\n{err}");
    // From outside: the report says the disk was full, and the host's trees hold nothing of it.
    let text = std::fs::read_to_string(&report).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["disk-limit"], 64 * 1024, "{text}");
    assert!(v["disk"].as_u64().unwrap() >= 60 * 1024, "{text}");
    assert_eq!(
        std::fs::read_dir(&tree).unwrap().count(),
        1,
        "the host's tree behind the copy changed"
    );
    let mut left = Vec::new();
    let mut stack = vec![tmp.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else if m.len() > 1 << 20 {
                left.push(e.path());
            }
        }
    }
    assert!(left.is_empty(), "written to the host's disk: {left:?}");
    // --keep keeps the scratch on the host's disk, and says that --disk does not bound it.
    let o = run(&["--keep", "--policy", policy.to_str().unwrap()], "true");
    assert!(
        common::stderr(&o).contains("--disk does not bound"),
        "{}",
        common::stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn the_runs_own_disk_is_bounded_by_limit_disk_and_reported() {
    common::each_user(
        "the_runs_own_disk_is_bounded_by_limit_disk_and_reported",
        disk_budget,
    );
}

/// Under cgroup v2 warden moves itself beside the sandbox's group, under the run's memory
/// limit; there it is the OOM killer's last choice (`oom_score_adj` -1000, as init), so that a
/// second kill after the program's (what the victim held still charged while it exits) does
/// not take warden and leave the run with no verdict (seen in the 6.1 guest: python3 killed,
/// then warden 27 ms later). Read from outside while the run sleeps. Under cgroup v1 warden is
/// never in the group, and its score is untouched.
#[test]
fn warden_is_the_oom_killers_last_choice_beside_the_sandbox() {
    let test = "warden_is_the_oom_killers_last_choice_beside_the_sandbox";
    if !memory_cgroup(test) {
        return;
    }
    let dir = open_dir("oom-last", As::Me);
    let report = dir.join("report.txt");
    let mut child = warden_cmd(As::Me)
        .args(["run", "--mem", "64M", "--report"])
        .arg(&report)
        .args(["--", "sleep", "2"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let adj = format!("/proc/{}/oom_score_adj", child.id());
    let before = std::fs::read_to_string(&adj).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    while child.try_wait().unwrap().is_none() {
        if let Ok(v) = std::fs::read_to_string(&adj) {
            seen.insert(v.trim().to_owned());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let text = std::fs::read_to_string(&report).unwrap_or_else(|_| panic!("no report: {err}"));
    let v2 = text.lines().any(|l| l == "accounting:cgroup-v2");
    if v2 {
        assert!(
            seen.contains("-1000"),
            "warden beside the sandbox's group was never the OOM killer's last choice: {seen:?}"
        );
    } else {
        assert_eq!(
            seen.iter().collect::<Vec<_>>(),
            [before.trim()],
            "under cgroup v1 warden's score changed: {text}"
        );
    }
}
