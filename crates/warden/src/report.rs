//! The run report: how the program ended, what it used, and what the sandbox cost.
//!
//! `--report FILE` writes `key:value` lines compatible with isolate's meta file (a judge that
//! parses isolate's output parses warden's); `--report-json FILE` writes the same keys as one
//! JSON object. Keys (isolate's first, then warden's own):
//!
//! | key | meaning |
//! | --- | --- |
//! | `time` | CPU seconds (user+sys) of every process of the sandbox |
//! | `time-wall` | wall-clock seconds from start to the program's end |
//! | `max-rss` | KiB, the largest resident size of any one process |
//! | `csw-voluntary`, `csw-forced` | context switches of every process |
//! | `exitcode` / `exitsig` | how the program ended (one of them) |
//! | `killed` | `1` when warden's kill for a limit is what ended the program |
//! | `status` | only when not OK, as isolate: `RE` nonzero exit, `SG` fatal signal, `TO` time limit, `ML` memory limit, `OL` output limit, `XX` warden could not run it (JSON: always, `OK` on success) |
//! | `message` | a sentence when not OK |
//! | `cg-mem`, `cg-oom-killed` | KiB peak of the sandbox's memory cgroup, and whether the OOM killer struck |
//! | `accounting` | `cgroup-v2`, `cgroup-v1` or `rusage`: where the figures come from |
//! | `delegated`, `delegated-FAMILY` | calls the agent performed, in all and per family |
//! | `denied` | policy decisions that refused a call |
//! | `agent-time` | seconds the agent spent on the calls, from receiving each to having its answer ready |

use crate::agent::log::StatsSnapshot;
use crate::launch::Outcome;
use crate::limits::KillReason;
use serde_json::{Map, Value};
use std::time::Duration;
use warden_policy::Limits;

/// How the run ended, in isolate's words.
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
    /// The two-letter code.
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

/// The report as ordered key/value pairs (shared by both formats).
pub fn entries(m: &Measured, limits: &Limits) -> Vec<(String, Value)> {
    let (status, message) = classify(m, limits);
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
    if m.killed {
        put("killed", 1.into());
    }
    put("status", status.code().into());
    if let Some(message) = message {
        put("message", message.into());
    }
    if let Some(peak) = m.cgroup_peak {
        put("cg-mem", (peak / 1024).into());
    }
    if let Some(kills) = m.oom_kills {
        put("cg-oom-killed", u64::from(kills > 0).into());
    }
    put("accounting", m.accounting.name().into());
    if let Some(bytes) = m.output {
        put("output", bytes.into());
    }
    put("delegated", m.agent.total.into());
    put("denied", m.agent.denied.into());
    put(
        "agent-time",
        Value::from((m.agent.busy.as_secs_f64() * 1e6).round() / 1e6),
    );
    for &(family, n) in &m.agent.calls {
        put(&format!("delegated-{}", family.name()), n.into());
    }
    out
}

/// isolate's meta format: `key:value` lines; `status` only when not OK.
pub fn to_meta(entries: &[(String, Value)]) -> String {
    let mut text = String::new();
    for (k, v) in entries {
        if k == "status" && v == "OK" {
            continue;
        }
        let v = match v {
            Value::String(s) => s.replace('\n', " "),
            // Seconds as isolate prints them (milliseconds), the agent's time to microseconds.
            Value::Number(n) if n.is_f64() => {
                let f = n.as_f64().unwrap_or(0.0);
                if k == "agent-time" {
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

/// The same keys as one JSON object; per-family counts gathered in `delegated-families`.
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
            },
        }
    }

    #[test]
    fn ok_run_meta_has_no_status() {
        let m = measured(Outcome::Exited(0));
        let meta = to_meta(&entries(&m, &Limits::default()));
        assert_eq!(
            meta,
            "time:1.234\ntime-wall:1.500\nmax-rss:2048\ncsw-voluntary:3\ncsw-forced:4\n\
             exitcode:0\ncg-mem:4096\ncg-oom-killed:0\naccounting:cgroup-v1\ndelegated:13\n\
             denied:1\nagent-time:0.000250\ndelegated-open:12\ndelegated-exec:1\n"
        );
        let json: Value = serde_json::from_str(&to_json(&entries(&m, &Limits::default()))).unwrap();
        assert_eq!(json["status"], "OK");
        assert_eq!(json["delegated-families"]["open"], 12);
        assert_eq!(json["time"], 1.234);
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
        let meta = to_meta(&entries(&m, &none));
        assert!(meta.contains("status:XX\nmessage:cannot run x\n"));
        assert!(!meta.contains("exitsig"));
    }
}
