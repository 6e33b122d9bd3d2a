//! Reporting the agent's decisions: one line on stderr per denial with `-v`, and JSON lines
//! with every delegated decision (allowed and denied) with `--log FILE`.

use crate::syscalls::Family;
use serde::Serialize;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use warden_policy::Access;

/// One decision, as logged.
pub struct Decision<'a> {
    /// Calling thread, in warden's PID namespace.
    pub pid: u32,
    /// Syscall name.
    pub syscall: &'static str,
    /// The logical path checked.
    pub path: &'a str,
    /// The access checked, if the decision was a policy check.
    pub access: Option<Access>,
    /// Allowed or denied.
    pub allowed: bool,
    /// The deciding rule (`file:line:col`), if one matched.
    pub rule: Option<String>,
    /// For denials: why, and what to add.
    pub reason: String,
    /// The errno returned for a denial.
    pub errno: Option<i32>,
}

#[derive(Serialize)]
struct JsonLine<'a> {
    time: f64,
    pid: u32,
    comm: String,
    syscall: &'a str,
    path: &'a str,
    access: Option<&'static str>,
    decision: &'static str,
    rule: Option<&'a str>,
    reason: &'a str,
    errno: Option<i32>,
}

/// Where decisions go.
#[derive(Default)]
pub struct Log {
    verbose: bool,
    json: Option<Mutex<std::fs::File>>,
}

impl Log {
    /// `verbose`: denials to stderr; `json`: every decision to this file.
    pub fn new(verbose: bool, json: Option<std::fs::File>) -> Log {
        Log {
            verbose,
            json: json.map(Mutex::new),
        }
    }

    /// Whether allowed decisions are wanted at all (only by the JSON log).
    pub fn wants_allowed(&self) -> bool {
        self.json.is_some()
    }

    /// Writes one decision where it is wanted.
    pub fn write(&self, d: &Decision<'_>) {
        if !d.allowed && self.verbose {
            let comm = comm(d.pid);
            let what = d.access.map(|a| format!(" for {a}")).unwrap_or_default();
            eprintln!(
                "warden: denied {}(\"{}\"){what} by pid {} ({comm}): {}",
                d.syscall, d.path, d.pid, d.reason
            );
        }
        if let Some(file) = &self.json {
            let line = JsonLine {
                time: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |t| t.as_secs_f64()),
                pid: d.pid,
                comm: comm(d.pid),
                syscall: d.syscall,
                path: d.path,
                access: d.access.map(Access::name),
                decision: if d.allowed { "allow" } else { "deny" },
                rule: d.rule.as_deref(),
                reason: &d.reason,
                errno: d.errno,
            };
            if let Ok(mut text) = serde_json::to_vec(&line) {
                text.push(b'\n');
                if let Ok(mut f) = file.lock() {
                    let _ = f.write_all(&text);
                }
            }
        }
    }
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end().to_owned())
        .unwrap_or_else(|_| "?".into())
}

/// What the agent did during a run, for the run report: calls per family, decisions, and the
/// time spent serving them.
#[derive(Default)]
pub struct Stats {
    calls: [AtomicU64; Family::ALL.len()],
    allowed: AtomicU64,
    denied: AtomicU64,
    busy_ns: AtomicU64,
}

/// A copy of [`Stats`] at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Calls served per family, families with none left out, in [`Family::ALL`] order.
    pub calls: Vec<(Family, u64)>,
    /// Calls served in all.
    pub total: u64,
    /// Policy decisions that allowed.
    pub allowed: u64,
    /// Policy decisions that denied.
    pub denied: u64,
    /// Time from receiving each call to having its answer ready (before the reply's own
    /// wake-up of the caller), summed.
    pub busy: std::time::Duration,
}

impl Stats {
    /// Counts one policy decision.
    pub fn count(&self, allowed: bool) {
        let c = if allowed { &self.allowed } else { &self.denied };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one call served, and how long it took.
    pub fn served(&self, family: Family, took: std::time::Duration) {
        self.calls[family.index()].fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.busy_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// The figures so far.
    pub fn snapshot(&self) -> StatsSnapshot {
        let calls: Vec<(Family, u64)> = Family::ALL
            .iter()
            .map(|&f| (f, self.calls[f.index()].load(Ordering::Relaxed)))
            .filter(|&(_, n)| n > 0)
            .collect();
        StatsSnapshot {
            total: calls.iter().map(|&(_, n)| n).sum(),
            calls,
            allowed: self.allowed.load(Ordering::Relaxed),
            denied: self.denied.load(Ordering::Relaxed),
            busy: std::time::Duration::from_nanos(self.busy_ns.load(Ordering::Relaxed)),
        }
    }
}
