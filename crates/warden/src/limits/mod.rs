//! Enforcing a run's resource limits and measuring what the sandbox used.
//!
//! Limits live in three places, each the strongest this machine offers for that resource:
//!
//! | limit | enforced by |
//! | --- | --- |
//! | `--mem`, `--processes` | the sandbox's cgroup ([`cgroup`]); without one, `RLIMIT_AS` and `RLIMIT_NPROC` (a fresh user namespace makes the latter count only the sandbox) |
//! | `--time`, `--wall-time` | [`watch_time`]: warden samples the whole sandbox's CPU time and the clock and kills the sandbox at limit + grace; `RLIMIT_CPU` per process as a second lock |
//! | `--fsize`, `--stack`, `--open-files` | rlimits set on the program before exec, inherited by all it starts |
//! | `--output-limit` | [`output`]: stdout and stderr go through pipes that warden copies and counts |
//!
//! Nothing here trusts the program: the monitor and the copiers run in warden, the kill is of
//! the sandbox's init (whose death takes every process of the PID namespace with it), and the
//! figures come from the kernel (cgroup files, `/proc`, `wait4`).

pub mod cgroup;
pub mod output;

use cgroup::Cgroup;
use rustix::process::Resource;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use warden_policy::Limits;

/// Why warden killed the sandbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KillReason {
    /// CPU time over limit + grace.
    CpuTime,
    /// Wall-clock time over limit + grace.
    WallTime,
    /// More output than `--output-limit`.
    Output,
}

/// What ending a sandbox takes, as the limits see it (the launcher's [`crate::launch::Launched`]
/// is one): they only signal it, never own or reap it.
pub trait Stoppable: Send + Sync {
    /// Asks init to end every process and report (their CPU time is then counted).
    fn terminate(&self);
    /// Kills the whole sandbox outright.
    fn kill(&self);
    /// Waits until init has exited.
    fn wait_gone(&self);
}

/// Who may kill the sandbox for a limit, and what the first one said. Once the run is over
/// ([`Verdicts::close`]) late kills are ignored, so a limit that is reached just as the program
/// exits on its own cannot rewrite its result.
#[derive(Default)]
pub struct Verdicts {
    state: Mutex<(bool, Option<KillReason>)>,
}

impl Verdicts {
    /// Kills the sandbox for `reason`, unless the run is already over or another limit did.
    ///
    /// init is asked first (it kills and reaps every other process, so their CPU time is
    /// counted); if the sandbox has not ended a second later, init is killed outright.
    pub fn kill(&self, launched: &Arc<dyn Stoppable>, reason: KillReason) {
        if let Ok(mut s) = self.state.lock() {
            if s.0 || s.1.is_some() {
                return;
            }
            s.1 = Some(reason);
            launched.terminate();
            let launched = Arc::clone(launched);
            let _ = std::thread::Builder::new()
                .name("warden-kill".into())
                .spawn(move || {
                    std::thread::sleep(Duration::from_secs(1));
                    launched.kill();
                });
        }
    }

    /// Ends the run: no kill counts after this. Returns the reason of the kill, if any.
    pub fn close(&self) -> Option<KillReason> {
        match self.state.lock() {
            Ok(mut s) => {
                s.0 = true;
                s.1
            }
            Err(_) => None,
        }
    }

    /// Whether the run is over.
    pub fn closed(&self) -> bool {
        self.state.lock().map(|s| s.0).unwrap_or(true)
    }
}

/// Where the sandbox's CPU time is read while it runs.
pub enum CpuSource {
    /// The cgroup's counter (exact, covers every process that ever ran in it).
    Cgroup(Arc<Cgroup>),
    /// `/proc`: every process of the sandbox's PID namespace, plus the children each has reaped.
    Procfs(NamespaceCpu),
}

impl CpuSource {
    /// CPU time so far.
    pub fn sample(&self) -> Duration {
        match self {
            CpuSource::Cgroup(cg) => cg.cpu_time().unwrap_or_default(),
            CpuSource::Procfs(ns) => ns.sample(),
        }
    }
}

/// CPU time of the processes of one PID namespace, read from `/proc`.
///
/// A process's `utime+stime` plus its `cutime+cstime` (the children it has reaped) over every
/// live process of the namespace counts each CPU second once: a reaped child's time has moved
/// into its reaper's `cutime`, and the sandbox's init reaps every orphan. A process that exits
/// between two samples is missing from one sample at most; the final figure comes from `wait4`.
pub struct NamespaceCpu {
    ns: (u64, u64),
    tick: Duration,
}

impl NamespaceCpu {
    /// The namespace `init_pid` is in.
    pub fn new(init_pid: i32) -> std::io::Result<NamespaceCpu> {
        let st = rustix::fs::stat(format!("/proc/{init_pid}/ns/pid"))?;
        let hz = rustix::param::clock_ticks_per_second().max(1);
        Ok(NamespaceCpu {
            ns: (st.st_dev, st.st_ino),
            tick: Duration::from_nanos(1_000_000_000 / hz),
        })
    }

    /// CPU time so far.
    pub fn sample(&self) -> Duration {
        let ticks: u64 = crate::sys::process::pids_in_namespace(self.ns)
            .into_iter()
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
            .map(|stat| stat_cpu_ticks(&stat).unwrap_or(0))
            .sum();
        self.tick * u32::try_from(ticks).unwrap_or(u32::MAX)
    }
}

/// utime+stime+cutime+cstime from a `/proc/PID/stat` line (fields 14–17; the command name in
/// field 2 may hold spaces and parentheses, so fields are counted after the last `)`).
fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let fields = crate::sys::process::stat_fields(stat)?;
    (11..=14)
        .map(|i| fields.get(i)?.parse::<u64>().ok())
        .sum::<Option<u64>>()
}

/// CPU time spent for the sandbox outside it (by warden's agent), counted with its own.
pub type ExtraCpu = Arc<dyn Fn() -> Duration + Send + Sync>;

/// Starts a thread that samples CPU and wall time and kills the sandbox at limit + grace (call
/// only when `limits` has a time limit). It stops by itself once `verdicts` is closed. The CPU
/// limit counts `cpu` and `extra` together.
pub fn watch_time(
    limits: &Limits,
    cpu: CpuSource,
    extra: ExtraCpu,
    started: Instant,
    launched: Arc<dyn Stoppable>,
    verdicts: Arc<Verdicts>,
) {
    let grace = limits.extra_time.unwrap_or_default();
    let cpu_limit = limits.time.map(|t| t + grace);
    let wall_limit = limits.wall_time.map(|t| t + grace);
    // /proc walks cost more than one cgroup read, so they are made less often.
    let period = match cpu {
        CpuSource::Cgroup(_) => Duration::from_millis(20),
        CpuSource::Procfs(_) => Duration::from_millis(50),
    };
    let _ = std::thread::Builder::new()
        .name("warden-limits".into())
        .spawn(move || loop {
            std::thread::sleep(period);
            if verdicts.closed() {
                return;
            }
            if wall_limit.is_some_and(|w| started.elapsed() >= w) {
                verdicts.kill(&launched, KillReason::WallTime);
                return;
            }
            if cpu_limit.is_some_and(|c| cpu.sample() + extra() >= c) {
                verdicts.kill(&launched, KillReason::CpuTime);
                return;
            }
        });
}

/// The rlimits the program gets (inherited by every process it starts). `counted` says whether a
/// cgroup already enforces memory and processes for the whole sandbox.
pub fn rlimits(limits: &Limits, counted: bool) -> Vec<(Resource, u64)> {
    let mut out = Vec::new();
    if let Some(n) = limits.fsize {
        out.push((Resource::Fsize, n));
    }
    if let Some(n) = limits.stack {
        out.push((Resource::Stack, n));
    }
    if let Some(n) = limits.open_files {
        out.push((Resource::Nofile, n));
    }
    if let Some(t) = limits.time {
        // A second lock behind the monitor: no single process outlives the limit and grace by
        // more than a second even if warden were descheduled.
        let grace = limits.extra_time.unwrap_or_default();
        out.push((Resource::Cpu, (t + grace).as_secs() + 2));
    }
    if !counted {
        if let Some(m) = limits.mem {
            out.push((Resource::As, m));
        }
        if let Some(n) = limits.processes {
            // The sandbox's init shares the program's user namespace and uid, so it counts.
            out.push((Resource::Nproc, n + 1));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields() {
        let line = "42 (a (weird) name) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 20 10 20 0 1 0";
        assert_eq!(stat_cpu_ticks(line), Some(7 + 3 + 20 + 10));
        assert_eq!(stat_cpu_ticks("garbage"), None);
    }

    #[test]
    fn rlimits_follow_the_accounting() {
        let limits = Limits {
            mem: Some(1 << 20),
            processes: Some(4),
            fsize: Some(10),
            time: Some(Duration::from_millis(1500)),
            extra_time: Some(Duration::from_millis(500)),
            ..Limits::default()
        };
        let with_cgroup = rlimits(&limits, true);
        assert!(with_cgroup.contains(&(Resource::Fsize, 10)));
        assert!(with_cgroup.contains(&(Resource::Cpu, 4)));
        assert!(!with_cgroup.iter().any(|(r, _)| *r == Resource::As));
        let without = rlimits(&limits, false);
        assert!(without.contains(&(Resource::As, 1 << 20)));
        assert!(without.contains(&(Resource::Nproc, 5)));
    }

    #[test]
    fn procfs_sees_this_process() {
        // Burn a little CPU, then find ourselves in our own namespace's total.
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        assert_ne!(x, 1);
        let ns = NamespaceCpu::new(std::process::id() as i32).unwrap();
        assert!(ns.sample() >= Duration::from_millis(10));
    }
}
