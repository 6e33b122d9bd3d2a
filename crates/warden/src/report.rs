//! The run report: how the program ended, what it used, and what the sandbox cost.
//!
//! `--report FILE` writes isolate's meta file (`key:value` lines) and speaks only isolate's
//! words there, so that isolate's own callers read it right: `status` is one of `RE`, `SG`,
//! `TO`, `XX` (absent when the run was OK), and `cg-oom-killed:1` appears only when the OOM
//! killer struck (CMS takes the key's mere presence for a memory kill). `--report-json FILE`
//! writes the same keys as one JSON object with warden's finer status (`OK`, `RE`, `SG`, `TO`,
//! `ML`, `OL`, `XX`, always present) and `cg-oom-killed` as `0` or `1` under a cgroup.
//! Keys (isolate's first, then warden's own):
//!
//! | key | meaning |
//! | --- | --- |
//! | `time` | CPU seconds (user+sys) of every process of the sandbox, and of the agent's work for it (`agent-cpu`) |
//! | `time-wall` | wall-clock seconds from start to the program's end |
//! | `max-rss` | KiB, the largest resident size of any one process |
//! | `csw-voluntary`, `csw-forced` | context switches of every process |
//! | `exitcode` / `exitsig` | how the program ended (one of them) |
//! | `killed` | `1` when the sandbox killed the program for a limit (warden's kill, or the OOM killer under the memory limit) |
//! | `status` | see [`Status::meta_code`] (meta) and [`Status::code`] (JSON) |
//! | `message` | a sentence when not OK |
//! | `cg-mem`, `cg-oom-killed` | KiB peak of the sandbox's memory cgroup, and whether the OOM killer struck |
//! | `accounting` | `cgroup-v2`, `cgroup-v1` or `rusage`: where the figures come from; `none` when the program never ran |
//! | `ran` | `0` when the program never started (warden failed before or at its `execve`); absent when it did |
//! | `output` | bytes passed on, when `--output-limit` was in force |
//! | `delegated`, `delegated-FAMILY` | calls the agent performed, in all and per family |
//! | `denied` | calls the agent refused (policy decisions, and its other refusals: a device node, capability mode) |
//! | `denied-uncounted` | `1` when the kernel decided some calls alone (opens in the sandbox's view or under Landlock's exact rules, without `-v` or `--log`): those it refused are not in `denied`; absent otherwise |
//! | `agent-time` | seconds the agent spent on the calls, from receiving each to having its answer ready |
//! | `agent-cpu` | CPU seconds the agent's workers spent on the calls; included in `time` and in `--time` |
//! | `agent-mem` | KiB, warden's own peak resident size (the agent's memory, for this sandbox alone) |
//! | `agent-workers` | requests the agent serves at once for the sandbox: fewer under a small `--mem` (see `agent::budget`) |
//! | `agent-mem-bound` | KiB, the most the agent's state for the sandbox can take with that many (under `--mem`, no more than the limit) |
//! | `sockets` | with `net-allow` IP rules: the most sockets in the host's network held at once (`limit-sockets`) |
//! | `disk`, `disk-limit` | KiB the run's own disk held at the end (scratch, tmpfs maps, private copies' changes), and its size (`limit-disk`); only with a view |
//! | `log-dropped` | with `--log`: decisions not written to the log because it reached its bound (`--log-max`); its last line says so too |
//! | `view`, `view-reason` | `host-tree` when the sandbox's own view could not be built and the run went on the host's tree instead (`--view auto`), and what failed; absent otherwise |
//! | `mode`, `mode-reason` | `no-namespaces` when the host refused user namespaces and the run had none (docs/guide.md, "Without user namespaces"), `no-landlock` when the kernel enforced no Landlock (docs/no-landlock.md), and why; absent otherwise |
//! | `fallbacks` | the primitives this host lacked and that the run replaced by another route (docs/fallbacks.md), comma-separated: `pidfd_getfd`, `wait-killable-recv`; absent otherwise |

use crate::agent::log::StatsSnapshot;
use crate::launch::Outcome;
use crate::limits::KillReason;
use serde_json::{Map, Value};
use std::time::Duration;
use warden_policy::Limits;

/// How the run ended: warden's verdict (the JSON report's `status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Exit status 0.
    Ok,
    /// Nonzero exit status.
    RuntimeError,
    /// Killed by a signal.
    Signal,
    /// Over the CPU or wall-clock limit.
    Timeout,
    /// Killed by the OOM killer under the memory limit.
    MemoryLimit,
    /// Over the output limit.
    OutputLimit,
    /// warden could not run the program.
    Internal,
}

impl Status {
    /// The two-letter code of the JSON report (warden's own: `ML` and `OL` are not isolate's).
    pub fn code(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::RuntimeError => "RE",
            Status::Signal => "SG",
            Status::Timeout => "TO",
            Status::MemoryLimit => "ML",
            Status::OutputLimit => "OL",
            Status::Internal => "XX",
        }
    }

    /// The meta file's `status`: only isolate's four codes, and none for an OK run. A limit
    /// isolate has no status for is told by how the program ended: killed by a signal (the OOM
    /// killer's, or warden's kill at the output limit) is `SG`, with `exitsig`, `killed:1` and
    /// the message naming the limit; a program that ended by itself before the kill (its output
    /// cut at the limit, or a child of it OOM-killed) is `RE`, whatever its exit code, so that
    /// no caller takes the run for a success.
    pub fn meta_code(self, outcome: Option<Outcome>) -> Option<&'static str> {
        Some(match self {
            Status::Ok => return None,
            Status::RuntimeError => "RE",
            Status::Signal => "SG",
            Status::Timeout => "TO",
            Status::Internal => "XX",
            Status::MemoryLimit | Status::OutputLimit => match outcome {
                Some(Outcome::Signaled(_)) => "SG",
                Some(Outcome::Exited(_)) => "RE",
                _ => "XX",
            },
        })
    }
}

/// Which report the entries are for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `--report`: isolate's meta file, in isolate's words.
    Meta,
    /// `--report-json`: warden's finer view.
    Json,
}

/// Where the figures come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Accounting {
    /// A v2 cgroup.
    CgroupV2,
    /// v1 memory, pids and cpuacct cgroups.
    CgroupV1,
    /// rlimits and `wait4` rusage.
    #[default]
    Rusage,
}

impl Accounting {
    /// The report's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Accounting::CgroupV2 => "cgroup-v2",
            Accounting::CgroupV1 => "cgroup-v1",
            Accounting::Rusage => "rusage",
        }
    }
}

/// Everything measured about one run.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// How the program ended, or `None` if warden failed before or while starting it.
    pub outcome: Option<Outcome>,
    /// warden's own failure, if any.
    pub failure: Option<String>,
    /// The limit the run went over, as warden saw it while the program ran (the kill may have
    /// come too late to matter: output over the limit from a program that had already exited).
    pub exceeded: Option<KillReason>,
    /// Whether warden's kill is what ended the program.
    pub killed: bool,
    /// CPU time of the whole sandbox.
    pub cpu: Duration,
    /// Wall-clock time.
    pub wall: Duration,
    /// Largest resident set of one process, KiB.
    pub max_rss_kib: u64,
    /// Voluntary context switches.
    pub csw_voluntary: u64,
    /// Involuntary context switches.
    pub csw_forced: u64,
    /// Where the figures come from.
    pub accounting: Accounting,
    /// Peak memory of the cgroup, bytes.
    pub cgroup_peak: Option<u64>,
    /// OOM kills in the cgroup.
    pub oom_kills: Option<u64>,
    /// Output bytes passed on, when `--output-limit` was in force.
    pub output: Option<u64>,
    /// What the agent did.
    pub agent: StatsSnapshot,
    /// warden's own peak resident size, KiB (the agent's memory; one warden per sandbox).
    pub agent_mem_kib: u64,
    /// The agent's bounds for the sandbox (workers, and what they may hold), chosen from
    /// `--mem`.
    pub agent_budget: Option<crate::agent::budget::Budget>,
    /// The most sockets in the host's network held at once, when the sandbox reaches it.
    pub sockets: Option<u64>,
    /// Where the run's private copies were kept (`--keep`; `warden diff` reads them).
    pub copies: Option<std::path::PathBuf>,
    /// Bytes the run's own disk held at the end, and its size (`limit-disk`), with a view.
    pub disk: Option<(u64, u64)>,
    /// With `--log`: the decisions not written to it because it reached its bound.
    pub log_dropped: Option<u64>,
    /// Why the run had no namespaces (the host refused them), when it had none.
    pub no_namespaces: Option<String>,
    /// The primitives this host lacked, for which the run took another route
    /// (docs/fallbacks.md): `pidfd_getfd`, `wait-killable-recv`.
    pub fallbacks: Vec<&'static str>,
    /// What held the run where the kernel enforces no Landlock, when it enforced none.
    pub no_landlock: Option<String>,
    /// Why building the view failed, when the run went on the host's tree instead.
    pub view_failed: Option<String>,
    /// The first few distinct calls the agent refused, for the run's closing line.
    pub refusals: Vec<crate::agent::log::Refusal>,
    /// Whether every call the agent refused only looked (a `stat`, an `access`).
    pub refused_only_looks: bool,
    /// Whether the kernel decided some calls alone (opens not delegated): what it refused is
    /// not in `agent.denied`.
    pub kernel_decides: bool,
    /// The directory warden was started in, when the program started elsewhere that the user
    /// did not choose (no `--here`, `--chdir` or `starting_dir` of theirs), and where it
    /// started, in words: a relative name the program failed to find was most likely there.
    pub hidden_cwd: Option<(std::path::PathBuf, &'static str)>,
    /// How many new processes or threads the process limit refused (the pids cgroup's
    /// `pids.events`), where it can be read.
    pub process_limit_hits: Option<u64>,
}

impl Measured {
    /// What this run does without, one phrase each, for `warden ps` and `warden inspect`: the
    /// same facts as the start's notices and the report's `mode`, `view` and `fallbacks`.
    pub fn degraded(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(reason) = &self.no_namespaces {
            out.push(format!("no user namespaces ({reason})"));
        }
        if self.no_landlock.is_some() {
            out.push("no Landlock (the agent decides every file call)".to_owned());
        }
        if let Some(reason) = &self.view_failed {
            out.push(format!("the host's tree, no view ({reason})"));
        }
        for f in &self.fallbacks {
            out.push(format!("no {f}"));
        }
        out
    }
}

/// Whether the program started: it exited, was killed, or its init was lost while it may have
/// run. `false` when warden failed before the program's `execve` or the `execve` itself failed.
pub fn program_ran(m: &Measured) -> bool {
    matches!(
        m.outcome,
        Some(Outcome::Exited(_)) | Some(Outcome::Signaled(_)) | Some(Outcome::Lost)
    )
}

/// The verdict: status and, when not OK, a sentence.
pub fn classify(m: &Measured, limits: &Limits) -> (Status, Option<String>) {
    if let Some(f) = &m.failure {
        return (Status::Internal, Some(f.clone()));
    }
    let over = |limit: Option<Duration>, used: Duration| limit.is_some_and(|l| used > l);
    if m.exceeded == Some(KillReason::Output) {
        let limit = limits.output.unwrap_or(0);
        return (
            Status::OutputLimit,
            Some(format!("Output limit exceeded ({limit} bytes)")),
        );
    }
    if m.exceeded == Some(KillReason::CpuTime) || over(limits.time, m.cpu) {
        return (Status::Timeout, Some("Time limit exceeded".into()));
    }
    if m.exceeded == Some(KillReason::WallTime) || over(limits.wall_time, m.wall) {
        return (
            Status::Timeout,
            Some("Time limit exceeded (wall clock)".into()),
        );
    }
    if m.oom_kills.unwrap_or(0) > 0 {
        return (Status::MemoryLimit, Some("Memory limit exceeded".into()));
    }
    match m.outcome {
        Some(Outcome::Exited(0)) => (Status::Ok, None),
        Some(Outcome::Exited(code)) => (
            Status::RuntimeError,
            Some(format!("Exited with error status {code}")),
        ),
        Some(Outcome::Signaled(sig)) => {
            let why = match sig {
                libc::SIGXFSZ => " (file size limit exceeded)",
                libc::SIGXCPU => " (CPU time limit exceeded)",
                _ => "",
            };
            (
                Status::Signal,
                Some(format!("Caught fatal signal {sig}{why}")),
            )
        }
        Some(Outcome::Failed(stage, errno)) => (
            Status::Internal,
            Some(format!(
                "{stage:?} failed: {}",
                std::io::Error::from_raw_os_error(errno)
            )),
        ),
        Some(Outcome::Lost) | None => (
            Status::Internal,
            Some("the sandbox's init was killed from outside".into()),
        ),
    }
}

/// The report as ordered key/value pairs for `format` (the two differ only in `status` and
/// `cg-oom-killed`; see the module's documentation).
pub fn entries(m: &Measured, limits: &Limits, format: Format) -> Vec<(String, Value)> {
    let (status, message) = classify(m, limits);
    let oom = m.oom_kills.is_some_and(|n| n > 0);
    let secs = |d: Duration| Value::from((d.as_secs_f64() * 1000.0).round() / 1000.0);
    let mut out: Vec<(String, Value)> = Vec::new();
    let mut put = |k: &str, v: Value| out.push((k.to_owned(), v));
    put("time", secs(m.cpu));
    put("time-wall", secs(m.wall));
    put("max-rss", m.max_rss_kib.into());
    put("csw-voluntary", m.csw_voluntary.into());
    put("csw-forced", m.csw_forced.into());
    match m.outcome {
        Some(Outcome::Exited(code)) if m.failure.is_none() => put("exitcode", code.into()),
        Some(Outcome::Signaled(sig)) if m.failure.is_none() => put("exitsig", sig.into()),
        _ => {}
    }
    // The OOM killer's SIGKILL under the sandbox's memory limit is the sandbox killing it.
    let oom_killed =
        status == Status::MemoryLimit && m.outcome == Some(Outcome::Signaled(libc::SIGKILL));
    if m.killed || oom_killed {
        put("killed", 1.into());
    }
    match format {
        Format::Json => put("status", status.code().into()),
        Format::Meta => {
            if let Some(code) = status.meta_code(m.outcome) {
                put("status", code.into());
            }
        }
    }
    if let Some(message) = message {
        put("message", message.into());
    }
    if let Some(peak) = m.cgroup_peak {
        put("cg-mem", (peak / 1024).into());
    }
    // isolate writes the key only when the OOM killer struck, and its callers test presence.
    match format {
        Format::Json if m.oom_kills.is_some() => put("cg-oom-killed", u64::from(oom).into()),
        Format::Meta if oom => put("cg-oom-killed", 1.into()),
        _ => {}
    }
    if program_ran(m) {
        put("accounting", m.accounting.name().into());
    } else {
        // Nothing was counted: a cgroup made for a run that failed before its program started
        // was removed unused.
        put("accounting", "none".into());
        put("ran", 0.into());
    }
    if let Some(bytes) = m.output {
        put("output", bytes.into());
    }
    put("delegated", m.agent.total.into());
    put("denied", m.agent.denied.into());
    if m.kernel_decides && program_ran(m) {
        put("denied-uncounted", 1.into());
    }
    put(
        "agent-time",
        Value::from((m.agent.busy.as_secs_f64() * 1e6).round() / 1e6),
    );
    put(
        "agent-cpu",
        Value::from((m.agent.cpu.as_secs_f64() * 1e6).round() / 1e6),
    );
    put("agent-mem", m.agent_mem_kib.into());
    if let Some(b) = m.agent_budget {
        put("agent-workers", b.workers.into());
        put("agent-mem-bound", (b.bound / 1024).into());
    }
    if let Some(n) = m.sockets {
        put("sockets", n.into());
    }
    if let Some(n) = m.log_dropped {
        put("log-dropped", n.into());
    }
    if let Some(reason) = &m.no_namespaces {
        put("mode", "no-namespaces".into());
        put("mode-reason", reason.clone().into());
    }
    if !m.fallbacks.is_empty() {
        put("fallbacks", m.fallbacks.join(",").into());
    }
    if let Some(reason) = &m.no_landlock {
        put("mode", "no-landlock".into());
        put("mode-reason", reason.clone().into());
    }
    if let Some(reason) = &m.view_failed {
        put("view", "host-tree".into());
        put("view-reason", reason.clone().into());
    }
    if let Some(dir) = &m.copies {
        put("copies", dir.to_string_lossy().into_owned().into());
    }
    if let Some((used, limit)) = m.disk {
        put("disk", (used / 1024).into());
        put("disk-limit", (limit / 1024).into());
    }
    for &(family, n) in &m.agent.calls {
        put(&format!("delegated-{}", family.name()), n.into());
    }
    out
}

/// isolate's meta format: `key:value` lines (from [`Format::Meta`] entries).
pub fn to_meta(entries: &[(String, Value)]) -> String {
    let mut text = String::new();
    for (k, v) in entries {
        let v = match v {
            Value::String(s) => s.replace('\n', " "),
            // Seconds as isolate prints them (milliseconds), the agent's time to microseconds.
            Value::Number(n) if n.is_f64() => {
                let f = n.as_f64().unwrap_or(0.0);
                if k == "agent-time" || k == "agent-cpu" {
                    format!("{f:.6}")
                } else {
                    format!("{f:.3}")
                }
            }
            other => other.to_string(),
        };
        text.push_str(k);
        text.push(':');
        text.push_str(&v);
        text.push('\n');
    }
    text
}

/// One JSON object (from [`Format::Json`] entries); per-family counts gathered in
/// `delegated-families`.
pub fn to_json(entries: &[(String, Value)]) -> String {
    let mut obj = Map::new();
    let mut families = Map::new();
    for (k, v) in entries {
        match k.strip_prefix("delegated-") {
            Some(family) => {
                families.insert(family.to_owned(), v.clone());
            }
            None => {
                obj.insert(k.clone(), v.clone());
            }
        }
    }
    obj.insert("delegated-families".into(), Value::Object(families));
    let mut text = serde_json::to_string_pretty(&Value::Object(obj)).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::Family;

    fn measured(outcome: Outcome) -> Measured {
        Measured {
            outcome: Some(outcome),
            failure: None,
            exceeded: None,
            killed: false,
            cpu: Duration::from_millis(1234),
            wall: Duration::from_millis(1500),
            max_rss_kib: 2048,
            csw_voluntary: 3,
            csw_forced: 4,
            accounting: Accounting::CgroupV1,
            cgroup_peak: Some(4 << 20),
            oom_kills: Some(0),
            output: None,
            agent: StatsSnapshot {
                calls: vec![(Family::Open, 12), (Family::Exec, 1)],
                total: 13,
                allowed: 12,
                denied: 1,
                busy: Duration::from_micros(250),
                cpu: Duration::from_micros(200),
            },
            copies: None,
            disk: Some((10 << 20, 1 << 30)),
            log_dropped: None,
            no_namespaces: None,
            fallbacks: Vec::new(),
            no_landlock: None,
            view_failed: None,
            agent_mem_kib: 3000,
            agent_budget: Some(crate::agent::budget::Budget {
                workers: 21,
                bound: 20 << 20,
            }),
            sockets: None,
            refusals: Vec::new(),
            refused_only_looks: false,
            kernel_decides: false,
            hidden_cwd: None,
            process_limit_hits: None,
        }
    }

    #[test]
    fn denied_says_when_the_kernel_decided_refusals_it_does_not_count() {
        let get = |m: &Measured| {
            let e = entries(m, &Limits::default(), Format::Meta);
            e.iter()
                .find(|(key, _)| key == "denied-uncounted")
                .map(|(_, v)| v.clone())
        };
        let agent_only = measured(Outcome::Exited(1));
        assert_eq!(get(&agent_only), None);
        let kernel = Measured {
            kernel_decides: true,
            ..measured(Outcome::Exited(1))
        };
        assert_eq!(get(&kernel), Some(1.into()));
        // No program ran: nothing was decided by anyone.
        let never = Measured {
            kernel_decides: true,
            ..Measured::default()
        };
        assert_eq!(get(&never), None);
    }

    #[test]
    fn a_run_without_landlock_says_so() {
        let m = Measured {
            no_landlock: Some("execve is held by the view's noexec mounts".into()),
            ..Measured::default()
        };
        let e = entries(&m, &Limits::default(), Format::Json);
        let get = |k: &str| e.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(get("mode"), Some("no-landlock".into()));
        assert!(get("mode-reason").is_some());
    }

    #[test]
    fn a_run_without_namespaces_says_so_and_others_do_not() {
        let limits = Limits::default();
        let plain = entries(&Measured::default(), &limits, Format::Json);
        assert!(!plain.iter().any(|(k, _)| k == "mode"));
        let m = Measured {
            no_namespaces: Some("clone(CLONE_NEWUSER): EPERM".into()),
            ..Measured::default()
        };
        let e = entries(&m, &limits, Format::Meta);
        let get = |k: &str| e.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(get("mode"), Some("no-namespaces".into()));
        assert_eq!(get("fallbacks"), None);
        let m = Measured {
            fallbacks: vec!["pidfd_getfd", "wait-killable-recv"],
            ..Measured::default()
        };
        let e = entries(&m, &limits, Format::Meta);
        assert!(e
            .iter()
            .any(|(k, v)| k == "fallbacks" && *v == "pidfd_getfd,wait-killable-recv"));
        assert_eq!(
            get("mode-reason"),
            Some("clone(CLONE_NEWUSER): EPERM".into())
        );
    }

    fn meta(m: &Measured, limits: &Limits) -> String {
        to_meta(&entries(m, limits, Format::Meta))
    }

    fn json(m: &Measured, limits: &Limits) -> Value {
        serde_json::from_str(&to_json(&entries(m, limits, Format::Json))).unwrap()
    }

    #[test]
    fn ok_run_meta_has_no_status_and_no_oom_key() {
        let m = measured(Outcome::Exited(0));
        assert_eq!(
            meta(&m, &Limits::default()),
            "time:1.234\ntime-wall:1.500\nmax-rss:2048\ncsw-voluntary:3\ncsw-forced:4\n\
             exitcode:0\ncg-mem:4096\naccounting:cgroup-v1\ndelegated:13\n\
             denied:1\nagent-time:0.000250\nagent-cpu:0.000200\nagent-mem:3000\n\
             agent-workers:21\nagent-mem-bound:20480\ndisk:10240\ndisk-limit:1048576\n\
             delegated-open:12\ndelegated-exec:1\n"
        );
        let json = json(&m, &Limits::default());
        assert_eq!(json["status"], "OK");
        // The JSON keeps `cg-oom-killed:0` under a cgroup, as it always has.
        assert_eq!(json["cg-oom-killed"], 0);
        assert_eq!(json["delegated-families"]["open"], 12);
        assert_eq!(json["time"], 1.234);
    }

    /// The meta file's `status` lines, `cg-oom-killed` and `killed` for each outcome.
    fn meta_keys(m: &Measured, limits: &Limits) -> Vec<String> {
        meta(m, limits)
            .lines()
            .filter(|l| {
                [
                    "status:",
                    "cg-oom-killed:",
                    "killed:",
                    "exitsig:",
                    "exitcode:",
                ]
                .iter()
                .any(|k| l.starts_with(k))
            })
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn meta_speaks_only_isolates_statuses() {
        let none = Limits::default();
        // A memory kill: SG by SIGKILL, killed, and the OOM key; the JSON keeps ML.
        let mut m = measured(Outcome::Signaled(libc::SIGKILL));
        m.oom_kills = Some(1);
        assert_eq!(
            meta_keys(&m, &none),
            ["exitsig:9", "killed:1", "status:SG", "cg-oom-killed:1"]
        );
        assert!(meta(&m, &none).contains("message:Memory limit exceeded\n"));
        let j = json(&m, &none);
        assert_eq!(
            (j["status"].as_str(), j["killed"].as_u64()),
            (Some("ML"), Some(1))
        );
        assert_eq!(j["cg-oom-killed"], 1);
        // A child OOM-killed, the program exited by itself: RE, never OK, and the key.
        let mut m = measured(Outcome::Exited(0));
        m.oom_kills = Some(2);
        assert_eq!(
            meta_keys(&m, &none),
            ["exitcode:0", "status:RE", "cg-oom-killed:1"]
        );
        assert_eq!(json(&m, &none)["status"], "ML");
        // A segfault: SG with its signal, and no OOM key at all.
        let m = measured(Outcome::Signaled(libc::SIGSEGV));
        assert_eq!(meta_keys(&m, &none), ["exitsig:11", "status:SG"]);
        // Output limit, killed by warden: SG, exitsig 9, killed; the JSON keeps OL.
        let mut m = measured(Outcome::Signaled(libc::SIGKILL));
        m.exceeded = Some(KillReason::Output);
        m.killed = true;
        let limits = Limits {
            output: Some(100),
            ..Limits::default()
        };
        assert_eq!(
            meta_keys(&m, &limits),
            ["exitsig:9", "killed:1", "status:SG"]
        );
        assert!(meta(&m, &limits).contains("message:Output limit exceeded (100 bytes)\n"));
        assert_eq!(json(&m, &limits)["status"], "OL");
        // Output limit, the program done before the kill: RE, whatever its exit code.
        let mut m = measured(Outcome::Exited(0));
        m.exceeded = Some(KillReason::Output);
        assert_eq!(meta_keys(&m, &limits), ["exitcode:0", "status:RE"]);
        // Never a status outside isolate's four in the meta file.
        for status in [
            Status::Ok,
            Status::RuntimeError,
            Status::Signal,
            Status::Timeout,
            Status::MemoryLimit,
            Status::OutputLimit,
            Status::Internal,
        ] {
            for outcome in [
                None,
                Some(Outcome::Exited(0)),
                Some(Outcome::Exited(1)),
                Some(Outcome::Signaled(9)),
                Some(Outcome::Lost),
                Some(Outcome::Failed(crate::launch::Stage::Exec, libc::ENOENT)),
            ] {
                let code = status.meta_code(outcome);
                assert!(
                    code.is_none_or(|c| ["RE", "SG", "TO", "XX"].contains(&c)),
                    "{status:?} {outcome:?}: {code:?}"
                );
                assert_eq!(code.is_none(), status == Status::Ok);
            }
        }
    }

    #[test]
    fn statuses() {
        let limits = Limits {
            time: Some(Duration::from_secs(1)),
            ..Limits::default()
        };
        // Over the CPU limit but exited within the grace: still TO, not killed.
        let (s, msg) = classify(&measured(Outcome::Exited(0)), &limits);
        assert_eq!(
            (s, msg.as_deref()),
            (Status::Timeout, Some("Time limit exceeded"))
        );
        let none = Limits::default();
        assert_eq!(
            classify(&measured(Outcome::Exited(3)), &none).0,
            Status::RuntimeError
        );
        let (s, msg) = classify(&measured(Outcome::Signaled(libc::SIGXFSZ)), &none);
        assert_eq!(s, Status::Signal);
        assert!(msg.unwrap().contains("file size"));
        let mut m = measured(Outcome::Signaled(9));
        m.oom_kills = Some(1);
        assert_eq!(classify(&m, &none).0, Status::MemoryLimit);
        m.exceeded = Some(KillReason::Output);
        assert_eq!(classify(&m, &none).0, Status::OutputLimit);
        m.exceeded = Some(KillReason::WallTime);
        let (s, msg) = classify(&m, &none);
        assert_eq!(s, Status::Timeout);
        assert!(msg.unwrap().contains("wall"));
        m.failure = Some("cannot run x".into());
        assert_eq!(classify(&m, &none).0, Status::Internal);
        let meta = meta(&m, &none);
        assert!(meta.contains("status:XX\nmessage:cannot run x\n"));
        assert!(!meta.contains("exitsig"));
    }
}
