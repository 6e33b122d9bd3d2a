//! Where the processes of a start run, on a machine of few CPUs.
//!
//! After the clone, three pieces of work want a CPU at once: init builds the view, the
//! program's process makes its network namespace, and warden adds the Landlock rules. Left to
//! the scheduler, they queued on the CPU warden ran on while the other stayed idle (`perf sched
//! timehist`: init took warden's CPU at the clone, warden waited 1.2 ms to write the id maps,
//! and the idle CPU was not woken for it). So warden pins itself to its CPU for the start, puts
//! init on another right after the clone, and init puts the program's process back on
//! warden's: the view is built beside the rules and the network namespace. Without a view init
//! only waits, and the program's process goes to init's CPU instead, beside the rules. Once the
//! view is sealed, init moves the program's process to its own CPU for the rest of its setup and
//! its exec: warden starts the agent on its CPU meanwhile, and on that CPU the program waited
//! for it (about 0.2 ms of every start). Each gives the CPUs back as it found them before it runs
//! anything of the program's (the program inherits warden's affinity, as before), and nothing
//! is placed when the user chose the CPUs (`--cpu`) or warden may use only one.

use rustix::process::Pid;
use rustix::thread::{sched_getaffinity, sched_getcpu, sched_setaffinity, CpuSet};

/// The CPUs of a start: warden's own, and the one init goes to.
#[derive(Clone, Debug)]
pub struct Placement {
    /// What warden may use, which the sandbox's processes get back.
    original: CpuSet,
    warden: usize,
    init: usize,
}

impl Placement {
    /// Decided before the clone, from where warden runs now; `None` when warden may use only
    /// one CPU or the user chose the CPUs. Pins warden to its CPU for the start (the clone and
    /// the thread that adds the rules inherit it) until [`Placement::restore`].
    pub fn plan(user_chose: bool) -> Option<Placement> {
        if user_chose {
            return None;
        }
        let original = sched_getaffinity(None).ok()?;
        let warden = sched_getcpu();
        let init = (1..CpuSet::MAX_CPU)
            .map(|i| (warden + i) % CpuSet::MAX_CPU)
            .find(|&c| original.is_set(c))?;
        if !original.is_set(warden) {
            return None;
        }
        let placement = Placement {
            original,
            warden,
            init,
        };
        Self::pin(None, warden);
        Some(placement)
    }

    /// warden, right after the clone: init to a CPU of its own, before it first runs.
    pub fn place_init(&self, init: i32) {
        Self::pin(Pid::from_raw(init), self.init);
    }

    /// Init, right after forking the program's process: that process to warden's CPU when
    /// init builds a view on its own, else to init's (init then only waits, and warden adds
    /// the rules on its CPU).
    pub fn place_program(&self, program: i32, view: bool) {
        Self::pin(
            Pid::from_raw(program),
            if view { self.warden } else { self.init },
        );
    }

    /// Init, once the view is sealed: the program's process to init's CPU for the rest of its
    /// setup and its exec (init only waits from then on), so that it does not wait for warden,
    /// which starts the agent's threads and registers the run on its own CPU meanwhile. The
    /// process gives the CPUs back itself ([`Placement::restore`]) before its exec, and starts
    /// on this one.
    pub fn place_program_for_exec(&self, program: i32) {
        Self::pin(Pid::from_raw(program), self.init);
    }

    /// The calling process or thread back to what warden may use (before anything of the
    /// program's runs; warden's own before it starts the agent's threads).
    pub fn restore(&self) {
        // A hint: a refusal leaves the process where it is, which only costs time.
        let _ = sched_setaffinity(None, &self.original);
    }

    fn pin(pid: Option<Pid>, cpu: usize) {
        let mut set = CpuSet::new();
        set.set(cpu);
        let _ = sched_setaffinity(pid, &set);
    }
}
