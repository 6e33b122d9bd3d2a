//! The agent: the trusted server that performs every delegated call for the sandbox.
//!
//! Worker threads block in `SECCOMP_IOCTL_NOTIF_RECV` on the one listener, at most three at a
//! time; other idle workers park ([`pool`]). When the last listener picks up a request it wakes
//! a parked worker or starts another (up to [`MAX_WORKERS`]), so a request that blocks (a FIFO
//! open, a connect) never stalls the others. Each request goes through the same five
//! steps, whatever its family (see [`fs`] and [`net`]):
//!
//! 1. copy the arguments out of the client, once, with the row's decoder ([`call`]);
//! 2. confirm the request is still live (`NOTIF_ID_VALID`, [`Client::confirm`]), so a dead
//!    caller's recycled pid cannot make us act for somebody else;
//! 3. resolve paths by descriptor ([`resolve`]);
//! 4. check the policy on the path actually walked ([`Client::allow`]);
//! 5. act on our own descriptors, and reply: a value, an errno, or a descriptor injected with
//!    `ADDFD|SEND`.
//!
//! The agent is a server facing a hostile client (invariant 6): every size it allocates is
//! bounded by the agent, every error becomes an errno, and a panic in one request is caught and
//! answered with `EIO` rather than taking the sandbox's only agent down.

pub mod budget;
pub mod call;
pub use call::Client;
pub mod capsicum;
pub mod decode;
pub mod fs;
pub mod held;
pub mod hostpids;
pub mod incoming;
pub mod log;
pub mod net;
pub mod pool;
pub mod resolve;
pub mod restart;
pub mod stand_in;
pub mod unix_names;

use crate::confine::namespaces::IdMap;
use crate::sys::{mem, unotify};
use crate::syscalls::{self, Class, Family};
use log::Log;
use resolve::Resolver;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use warden_policy::{Access, Policy, Verdict};

/// Most worker threads one sandbox's agent runs at once (fewer under a small `--mem`: see
/// [`budget`]).
pub const MAX_WORKERS: usize = 64;
/// Workers started with the agent, all of them listening.
const FIRST_WORKERS: usize = pool::Pool::LISTENING;

/// What a handler answers.
pub enum Answer {
    /// A plain reply.
    Reply(unotify::Reply),
    /// A descriptor to install in the caller as the call's result.
    Fd(OwnedFd, bool),
    /// The same for a regular file open for writing: installed, our reference closed, and only
    /// then answered (see [`unotify::addfd`]). [`Agent::handle`] picks it; handlers answer `Fd`.
    WritableFd(OwnedFd, bool),
}

/// A helper's result inside a handler: an answer, or a raw errno (capability mode's handlers
/// and the network helpers speak it; the dispatch takes [`Served`]).
pub type Handled = Result<Answer, i32>;

/// A typed handler's result: an answer, or an [`rustix::io::Errno`].
pub type Served = Result<Answer, rustix::io::Errno>;

/// Shorthand for a successful call returning `v`.
pub fn value(v: i64) -> Handled {
    Ok(Answer::Reply(unotify::Reply::Value(v)))
}

/// The agent of one sandbox.
pub struct Agent {
    listener: OwnedFd,
    policy: Policy,
    net: net::Context,
    resolver: Resolver,
    ids: IdMap,
    log: Log,
    pool: pool::Pool,
    /// How many requests the agent serves at once for this sandbox, and what it may hold for it
    /// then: chosen from `--mem` ([`budget`]).
    pub budget: budget::Budget,
    /// Each worker's slot: the request it is serving, if any (see [`Slot`]). The list changes
    /// only when a worker starts or ends; a request touches its own worker's slot alone.
    in_flight: Mutex<Vec<Arc<Slot>>>,
    /// Requests taken whose [`stats`](Self::stats) are not counted yet. A request leaves its
    /// slot before the reply (for the watchdog) and is counted after it, when the caller may
    /// already have run on and ended: [`Agent::quiesce`] waits for this too, or the report
    /// could miss the last call (it did, under load: one of two sends).
    uncounted: AtomicUsize,
    /// Calls served per family, decisions, and time spent (for the run report).
    pub stats: log::Stats,
    /// The descriptors handed out and the rules that allowed them (for `warden inspect`).
    pub grants: Arc<crate::registry::Grants>,
    /// Where each path rule was written (`file:line:col`), by rule index, formatted once: a
    /// grant is recorded on every delegated open.
    rule_spans: Vec<Arc<str>>,
    /// Where each worker writes its thread id to join the sandbox's memory group, so the kernel
    /// objects it creates for the sandbox are charged to it ([`Agent::charge_workers_to`]).
    charge: std::sync::OnceLock<std::fs::File>,
    /// Whether the sandbox shares warden's controlling terminal (`--tty`). When it does not,
    /// the agent must not open warden's terminal for it: see [`Agent::handle`].
    terminal: bool,
    /// What the descriptors handed out for `O_PATH` opens of symlinks stand for.
    stand_ins: stand_in::Table,
    /// What Landlock lets the sandbox execute (see [`fs::exec`]).
    exec_rules: crate::confine::landlock::ExecRules,
    /// Capability mode (`--capability-mode`): every call is [`capsicum`]'s.
    capsicum: Option<Arc<warden_capsicum::Session>>,
    /// Without namespaces: the sandbox's init ([`Confinement::host_pids`]).
    host_pids: Option<i32>,
    /// [`Confinement::without_namespaces`].
    without_namespaces: bool,
    /// `--wx`: memfds are refused ([`Confinement::wx`]).
    wx: bool,
    /// [`Confinement::view_lists`].
    view_lists: bool,
    /// The rest of the first workers and the watchdog, started with the first request
    /// ([`Agent::start_rest`]).
    rest: std::sync::Once,
    /// How the agent reads and writes the program's memory.
    memory: MemoryRoute,
    /// How the agent takes the program's descriptors.
    descriptors: DescriptorRoute,
    /// [`Confinement::wait_killable`].
    wait_killable: bool,
    /// Without `wait_killable`: each thread's requests one at a time ([`restart`]).
    turns: restart::Turns,
}

/// How the agent takes the caller's descriptors: `pidfd_getfd` until the kernel refuses it
/// (EPERM from a container's seccomp profile: Docker's default without `CAP_SYS_PTRACE`;
/// ENOSYS before 5.6), then `/proc/<tid>/fd/N` for the rest of the run, said once on stderr.
///
/// That route opens the object a descriptor names (`O_PATH`), not the caller's open file
/// description: enough for every call that only looks a path up through the descriptor or
/// changes its file's metadata, and for reopening it (what the kernel does for the caller
/// through `/proc/self/fd`). A call that must act on the description itself (a socket's
/// `connect`, `bind`, `accept` or send, an inotify watch, a descriptor passed on with
/// `SCM_RIGHTS`, Capsicum's rights) is refused with `EPERM` there, never continued, except on
/// a socket the agent made itself (under `net-allow` IP rules): the agent keeps its copy of
/// those ([`DescriptorRoute::sockets`]) and finds it by the inode the caller's descriptor names.
#[derive(Default)]
struct DescriptorRoute {
    through_proc: std::sync::atomic::AtomicBool,
    /// On the `/proc` route, the agent's copies of the sockets it made for the sandbox, by
    /// inode: an unconnected or listening TCP socket, a UDP socket. A connected TCP socket is
    /// not kept (the agent's copy would keep the connection open after the program closes it:
    /// its peer would wait for an end that never comes); copies of sockets the sandbox no
    /// longer holds are dropped when there are more than [`KEPT_PRUNE_AT`].
    sockets: Mutex<std::collections::HashMap<u64, OwnedFd>>,
    /// Whether the run was told that a call on a descriptor's own object was refused.
    object_said: std::sync::atomic::AtomicBool,
}

/// How many kept sockets make the agent look which the sandbox still holds.
const KEPT_PRUNE_AT: usize = 64;

impl DescriptorRoute {
    fn through_proc(&self) -> bool {
        self.through_proc.load(Ordering::Relaxed)
    }

    /// Whether errno `e` of `pidfd_getfd` says the call itself is refused here.
    fn refused(e: i32) -> bool {
        e == libc::EPERM || e == libc::ENOSYS
    }

    /// Takes `/proc/<tid>/fd` from now on, because `pidfd_getfd` failed with `e`.
    fn switch(&self, e: i32) {
        if !self.through_proc.swap(true, Ordering::Relaxed) {
            eprintln!(
                "warden: pidfd_getfd is refused here ({}); the agent looks descriptors up \
                 through /proc/PID/fd instead, and refuses (EPERM) the calls that must act on a \
                 descriptor's open file itself (connect, bind, accept or send on a socket it \
                 did not make itself; inotify; passing descriptors); allow pidfd_getfd in the \
                 container's seccomp profile for those (`warden doctor` says more)",
                crate::host::errno_name(e)
            );
        }
    }

    /// Says once that the call `name` was refused for want of `pidfd_getfd`.
    fn object_refused(&self, name: &str) {
        if !self.object_said.swap(true, Ordering::Relaxed) {
            eprintln!(
                "warden: {name} refused (EPERM): it acts on the program's own descriptor, which \
                 the agent cannot take without pidfd_getfd"
            );
        }
    }
}

/// How the agent reaches the program's memory: `process_vm_readv`/`process_vm_writev` until
/// the kernel refuses them (ENOSYS, or EPERM from a seccomp profile around warden), then
/// `/proc/<tid>/mem` for the rest of the run, said once on stderr.
#[derive(Default)]
struct MemoryRoute {
    through_proc: std::sync::atomic::AtomicBool,
    /// Whether the run was told that no route reads the program's memory.
    unreadable_said: std::sync::atomic::AtomicBool,
}

impl MemoryRoute {
    fn through_proc(&self) -> bool {
        self.through_proc.load(Ordering::Relaxed)
    }

    /// Whether `e` says the call itself is refused here (not a bad address or a dead caller).
    fn refused(e: &std::io::Error) -> bool {
        matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM))
    }

    /// Says once that `/proc/<tid>/mem` cannot be opened either (errno `e`): every call whose
    /// arguments the agent must copy is refused from now on.
    fn unreadable(&self, e: i32) {
        if !self.unreadable_said.swap(true, Ordering::Relaxed) {
            eprintln!(
                "warden: neither process_vm_readv nor /proc/PID/mem reads the program's memory \
                 here ({}), so every call naming a path or address is refused; allow \
                 process_vm_readv in the container's seccomp profile (`warden doctor` says more)",
                crate::host::errno_name(e)
            );
        }
    }

    /// Takes `/proc/<tid>/mem` from now on, because `call` failed with `e`.
    fn switch(&self, call: &str, e: &std::io::Error) {
        if !self.through_proc.swap(true, Ordering::Relaxed) {
            let errno = e.raw_os_error().map_or("?", crate::host::errno_name);
            eprintln!(
                "warden: {call} is refused here ({errno}); the agent reads and writes the \
                 program's memory through /proc/PID/mem instead"
            );
        }
    }
}

/// What the kernel confines the sandbox with, as far as the agent must know it.
pub struct Confinement {
    /// The root of the sandbox's own view, where walks start (`None`: the host's).
    pub view_root: Option<OwnedFd>,
    /// What the sandbox's Landlock ruleset lets it execute.
    pub exec_rules: crate::confine::landlock::ExecRules,
    /// Capability mode and what the sandbox holds in it (`None`: the policy decides).
    pub capsicum: Option<Arc<warden_capsicum::Session>>,
    /// `--wx`: memfds are refused (a memfd mapped executable and, again, writable is memory
    /// the program writes and runs; `launch::Command::deny_exec_memory` does the rest).
    pub wx: bool,
    /// The sandbox's view lets every directory it holds be listed (`ViewPlan::lists_root`:
    /// the policy lets `/` and every tree the view holds be read, so the view holds only
    /// what the policy brings in). Landlock's one rule on the view's root says so when the
    /// kernel decides opens; the agent answers a listing the same way ([`fs::open`]).
    pub view_lists: bool,
    /// Without namespaces (`crate::confine::hostns`), where the filter sends the agent the
    /// calls that name processes: the sandbox's init, whose descendants are the only processes
    /// those calls may name ([`hostpids`]).
    pub host_pids: Option<i32>,
    /// The sandbox has no namespaces (`crate::confine::hostns`): abstract unix socket names
    /// are the host's.
    pub without_namespaces: bool,
    /// The program's filter has `WAIT_KILLABLE_RECV`; without it a signal may interrupt a call
    /// the agent is serving ([`restart`]).
    pub wait_killable: bool,
    /// `pidfd_getfd` works here ([`crate::host::pidfd_getfd_here`]); without it the agent
    /// takes the other route from the start ([`DescriptorRoute`]).
    pub takes_descriptors: bool,
}

impl Agent {
    /// An agent for `policy` (with `$SCRATCH` expanded) serving `listener`, with the network
    /// context `net` made from the same policy; `terminal`: the sandbox shares warden's
    /// controlling terminal; `confinement`: what the kernel confines the sandbox with.
    pub fn new(
        listener: OwnedFd,
        policy: Policy,
        net: net::Context,
        ids: IdMap,
        log: Log,
        terminal: bool,
        confinement: Confinement,
    ) -> std::io::Result<Arc<Agent>> {
        // The agent applies the client's umask itself (read per call); its own must not interfere.
        rustix::process::umask(rustix::fs::Mode::empty());
        let budget = budget::for_sandbox(
            policy.limits.mem,
            matches!(net.mode, syscalls::Network::Host { udp: true }),
            net.held.max(),
        );
        Ok(Arc::new(Agent {
            listener,
            net,
            resolver: Resolver::new(confinement.view_root)?,
            ids,
            log,
            pool: pool::Pool::new(budget.workers, FIRST_WORKERS),
            budget,
            in_flight: Mutex::new(Vec::new()),
            uncounted: AtomicUsize::new(0),
            stats: log::Stats::default(),
            grants: Arc::default(),
            rule_spans: policy_spans(&policy),
            policy,
            charge: std::sync::OnceLock::new(),
            terminal,
            stand_ins: stand_in::Table::default(),
            exec_rules: confinement.exec_rules,
            capsicum: confinement.capsicum,
            host_pids: confinement.host_pids,
            without_namespaces: confinement.without_namespaces,
            wx: confinement.wx,
            view_lists: confinement.view_lists,
            rest: std::sync::Once::new(),
            memory: MemoryRoute::default(),
            descriptors: DescriptorRoute {
                through_proc: (!confinement.takes_descriptors).into(),
                ..DescriptorRoute::default()
            },
            wait_killable: confinement.wait_killable,
            turns: restart::Turns::default(),
        }))
    }

    /// At the end of the run: the `--log` file's last line, if decisions were dropped from it;
    /// how many were (`None` without `--log`). See [`Log::finish`].
    pub fn finish_log(&self) -> Option<u64> {
        self.log.summarize();
        self.log.finish()
    }

    /// The run's first few distinct refusals, for its closing line.
    pub fn first_refusals(&self) -> Vec<log::Refusal> {
        self.log.first_refusals()
    }

    /// Whether every call refused only looked (see [`log::Log::refused_only_looks`]).
    pub fn refused_only_looks(&self) -> bool {
        self.log.refused_only_looks()
    }

    /// Waits (at most `limit`) until no request is being served or left to count. Call once
    /// the sandbox's processes are gone: no new request can come, but a worker may still be
    /// acting for a caller that died after it checked (creating a file in the scratch
    /// directory, say), and what it does must be done before warden cleans up after the
    /// sandbox; and a worker that has answered may not have counted the call yet.
    pub fn quiesce(&self, limit: std::time::Duration) {
        let deadline = std::time::Instant::now() + limit;
        while std::time::Instant::now() < deadline {
            match self.in_flight.lock() {
                Ok(slots)
                    if slots.iter().all(|s| s.serving().is_none())
                        && self.uncounted.load(Ordering::Acquire) == 0 =>
                {
                    return
                }
                Ok(_) => {}
                Err(_) => return,
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    /// Makes every worker join the memory group whose v1 `tasks` file this is, before it serves
    /// anything (call before [`Agent::start`]): sockets, files and dentries the agent creates
    /// for the sandbox are then charged to the sandbox's memory limit, not to warden's group.
    pub fn charge_workers_to(&self, tasks: std::fs::File) {
        let _ = self.charge.set(tasks);
    }

    /// Starts one worker; the pool counts [`FIRST_WORKERS`] listening, and the others and the
    /// watchdog start when the first request is taken ([`Agent::start_rest`]). In a view the
    /// kernel decides most calls, and many programs never ask the agent anything: their
    /// sandboxes then pay for one thread, not four (each costs tens of microseconds of a start,
    /// with the program's own exec competing for the same CPUs). They all run until the
    /// process exits.
    pub fn start(self: &Arc<Self>) {
        crate::sys::signals::install_interrupt_handler();
        self.start_worker();
    }

    /// The first workers counted but not started yet, and the watchdog; once. Until now the
    /// pool saw them as on their way to listening, which they now are, so a first request
    /// that blocks (a FIFO open) still leaves somebody listening; and with no request taken
    /// before, no worker can have been stuck for a caller that is gone.
    fn start_rest(self: &Arc<Self>) {
        self.rest.call_once(|| {
            for _ in 1..FIRST_WORKERS {
                self.start_worker();
            }
            let agent = Arc::clone(self);
            let _ = std::thread::Builder::new()
                .name("warden-watchdog".into())
                .spawn(move || agent.watchdog());
        });
    }

    /// Frees workers stuck for callers that are gone.
    ///
    /// Some delegated calls block in the agent for as long as the caller would have blocked (a
    /// FIFO opened before any writer, a connect). If the caller dies meanwhile, the worker would
    /// block forever, and enough of them would leave the sandbox without an agent (invariant 6:
    /// a dying client never blocks the others). Every 100 ms the watchdog asks the kernel which
    /// in-flight requests are no longer valid and interrupts their workers; the blocking call
    /// fails with EINTR and the worker moves on. A slot's lock is held while signalling its
    /// worker, and the worker clears its slot under the same lock, so a signal never hits a
    /// later request; a worker's slot leaves the list before the worker ends.
    fn watchdog(self: Arc<Self>) {
        loop {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let Ok(slots) = self.in_flight.lock() else {
                return;
            };
            for slot in slots.iter() {
                let Ok(serving) = slot.0.lock() else {
                    continue;
                };
                if let Some((id, thread)) = *serving {
                    if !unotify::id_valid(self.listener.as_fd(), id) {
                        crate::sys::signals::interrupt(thread);
                    }
                }
            }
        }
    }

    /// Starts a worker whose listening slot the pool has counted.
    fn start_worker(self: &Arc<Self>) {
        let agent = Arc::clone(self);
        // Named only once it holds no more than it needs (`worker`): a thread called
        // warden-agent never has warden's full capabilities, even for its first moments.
        let spawned = std::thread::Builder::new()
            .stack_size(budget::WORKER_STACK)
            .spawn(move || agent.worker());
        if spawned.is_err() {
            self.pool.not_started();
        }
    }

    fn worker(self: Arc<Self>) {
        // A worker acts for the sandbox with no capability the policy does not need
        // (confine::privileges). If it cannot shed them it must not serve: fail closed.
        if let Err(e) = crate::confine::privileges::confine_agent_thread() {
            eprintln!("warden: an agent worker cannot drop its capabilities ({e}); stopping");
            std::process::abort();
        }
        let _ = rustix::thread::set_name(c"warden-agent");
        if let Some(mut tasks) = self.charge.get() {
            use std::io::Write;
            // One write per worker, not per call (a migration takes a global lock). A worker
            // that cannot join serves all the same: the objects it makes are warden's.
            let _ = tasks.write_all(
                rustix::thread::gettid()
                    .as_raw_nonzero()
                    .to_string()
                    .as_bytes(),
            );
        }
        // Each worker gets its own cwd, so binding or connecting a unix socket by a short
        // relative name from a held directory cannot race with another worker.
        let _ = crate::sys::process::unshare_fs();
        let slot = SlotGuard::register(&self);
        loop {
            let notif = match unotify::recv(self.listener.as_fd()) {
                Ok(n) => n,
                // ENOENT: the caller died before we took its request, or (when the filter is
                // orphaned) nobody is left to ask anything.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                    if unotify::orphaned(self.listener.as_fd()) {
                        self.pool.end();
                        return;
                    }
                    continue;
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(_) => {
                    self.pool.end();
                    return;
                }
            };
            self.uncounted.fetch_add(1, Ordering::AcqRel);
            self.start_rest();
            if self.pool.took() == pool::Refill::Start {
                self.start_worker();
            }
            self.serve(notif, &slot.slot);
            self.uncounted.fetch_sub(1, Ordering::AcqRel);
            if !self.pool.served() {
                return;
            }
        }
    }

    fn serve(&self, notif: unotify::Notification, slot: &Slot) {
        // Only the acting phase may be interrupted by the watchdog: the entry leaves the table
        // (under the lock the watchdog signals with) before the reply, because during
        // ADDFD|SEND the kernel already counts the request as answered while we wait for the
        // descriptor to be installed, and interrupting that wait would lose the reply.
        // Without WAIT_KILLABLE_RECV, a restarted call waits until its interrupted first try is
        // finished and undone ([`restart`]).
        let _turn = (!self.wait_killable && restart::may_create(&notif))
            .then(|| self.turns.take(notif.pid));
        let start = std::time::Instant::now();
        let cpu_start = thread_cpu();
        slot.set(Some((notif.id, crate::sys::signals::current_thread())));
        let mut created = None;
        let family = delegated_family(
            &notif,
            self.net.mode,
            self.capsicum.is_some() || self.host_pids.is_some(),
        );
        let answer = match family {
            Some(family) => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.handle(notif, family, start, &mut created)
            }))
            .unwrap_or(Err(rustix::io::Errno::IO)),
            None => Err(rustix::io::Errno::NOSYS),
        };
        slot.set(None);
        // The agent's own work ends here; the reply below waits for the caller to wake (and, for
        // ADDFD, to install the descriptor), which is interposition, not service.
        let took = start.elapsed();
        let listener = self.listener.as_fd();
        // ENOENT from SEND or ADDFD means the caller is gone: nothing to answer, nothing leaked
        // (our descriptor is dropped here either way).
        let delivered = match answer {
            // A made object answered by a plain SEND, to a caller that a signal is about to
            // interrupt: not sent, so that the restart finds it unmade ([`restart`]).
            Ok(Answer::Reply(_)) if created.is_some() && restart::interrupting(notif.pid) => {
                Err(std::io::Error::from_raw_os_error(libc::ENOENT))
            }
            Ok(Answer::Reply(reply)) => unotify::send(listener, notif.id, reply),
            Ok(Answer::WritableFd(fd, cloexec)) => {
                // Two steps, our reference closed in between (see `unotify::addfd`).
                match unotify::addfd(listener, notif.id, fd.as_fd(), cloexec) {
                    Ok(n) => {
                        drop(fd);
                        unotify::send(listener, notif.id, unotify::Reply::Value(i64::from(n)))
                    }
                    Err(e) => unotify::send(
                        listener,
                        notif.id,
                        unotify::Reply::Errno(e.raw_os_error().unwrap_or(libc::EIO)),
                    ),
                }
            }
            Ok(Answer::Fd(fd, cloexec)) => {
                match unotify::addfd_send(listener, notif.id, fd.as_fd(), cloexec) {
                    // The caller could not take the descriptor (EMFILE under its RLIMIT_NOFILE, say):
                    // it must still get an answer, the one the kernel would have given.
                    Err(e) if e.raw_os_error() != Some(libc::ENOENT) => unotify::send(
                        listener,
                        notif.id,
                        unotify::Reply::Errno(e.raw_os_error().unwrap_or(libc::EIO)),
                    ),
                    other => other.map(drop),
                }
            }
            Err(errno) => unotify::send(
                listener,
                notif.id,
                unotify::Reply::Errno(errno.raw_os_error()),
            ),
        };
        // The caller was interrupted (no WAIT_KILLABLE_RECV) and never learnt what was made
        // for it: unmade, so that its restarted call makes it again ([`restart`]).
        if let (Err(e), Some(created)) = (&delivered, created) {
            if e.raw_os_error() == Some(libc::ENOENT) {
                created.undo();
            }
        }
        if let Some((family, _)) = family {
            self.stats.served(family, took);
        }
        // The sandbox's own work, done here: it counts in the sandbox's time (issue 18), so a
        // program cannot make the agent burn CPU its --time limit does not see.
        self.stats.worked(thread_cpu().saturating_sub(cpu_start));
    }

    fn handle(
        &self,
        notif: unotify::Notification,
        (family, name): (Family, &'static str),
        start: std::time::Instant,
        created: &mut Option<restart::Created>,
    ) -> Served {
        // Only an open answers with a descriptor of a path, the grant `warden inspect` shows:
        // the other calls need not copy the path they allowed.
        let client = Client::new(self, notif, name, start, family == Family::Open);
        let served = self.dispatch(&client, family);
        *created = client.created.take();
        let (fd, cloexec) = match served {
            Ok(Answer::Fd(fd, cloexec)) => (fd, cloexec),
            other => return other,
        };
        // One fstat serves both: the grant `warden inspect` shows, and how to install it.
        let Ok(st) = rustix::fs::fstat(&fd) else {
            return Ok(Answer::Fd(fd, cloexec));
        };
        // /dev/tty (5:0, under any name) opens the *opener's* controlling terminal, and the
        // opener is the agent, which shares warden's. A sandbox without a terminal of its own
        // gets the kernel's answer to such a process instead; the descriptor is closed unused.
        let tty = rustix::fs::makedev(5, 0);
        if !self.terminal
            && rustix::fs::FileType::from_raw_mode(st.st_mode)
                == rustix::fs::FileType::CharacterDevice
            && st.st_rdev == tty
        {
            return Err(rustix::io::Errno::NXIO);
        }
        if let Some((path, rule)) = client.granted.take() {
            if let Some(rule) = self.rule_spans.get(rule.0) {
                self.grants
                    .record(st.st_dev, st.st_ino, path, Arc::clone(rule));
            }
        }
        let regular = rustix::fs::FileType::from_raw_mode(st.st_mode).is_file();
        let writable = || {
            client.writable.get().unwrap_or_else(|| {
                rustix::fs::fcntl_getfl(&fd).is_ok_and(|f| {
                    f.intersects(rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::RDWR)
                })
            })
        };
        // Without WAIT_KILLABLE_RECV, in one step: a SEND racing the signal that interrupts its
        // caller may succeed and still be lost (the caller restarts the call), where ADDFD|SEND
        // fails with ESRCH, so that what the open made is undone ([`restart`]).
        if regular && writable() && self.wait_killable {
            Ok(Answer::WritableFd(fd, cloexec))
        } else {
            Ok(Answer::Fd(fd, cloexec))
        }
    }

    /// Steps 1 and 2 ([`Client::copy`]), then the family's handler on the live arguments:
    /// capability mode's ([`capsicum`]) when the caller is in it, the policy's otherwise.
    fn dispatch(&self, client: &Client<'_>, family: Family) -> Served {
        let mut call = client.copy(family)?;
        if let Some(session) = &self.capsicum {
            call = match capsicum::serve(client, session, call) {
                Ok(served) => return served,
                Err(call) => call,
            };
        }
        policy_serves(client, call)
    }
}

/// The policy's handler of each family, given its live arguments.
fn policy_serves(client: &Client<'_>, call: call::Call) -> Served {
    use call::Call as C;
    match call {
        C::Open(a) => fs::open(client, a),
        C::Stat(a) => fs::stat(client, a),
        C::Access(a) => fs::access(client, a),
        C::Readlink(a) => fs::readlink(client, a),
        C::Mkdir(a) => fs::mkdir(client, a),
        C::Unlink(a) => fs::unlink(client, a),
        C::Mknod(a) => fs::mknod(client, a),
        C::Symlink(a) => fs::symlink(client, a),
        C::Rename(a) => fs::rename(client, a),
        C::Link(a) => fs::link(client, a),
        C::Chmod(a) => fs::chmod(client, a),
        C::Chown(a) => fs::chown(client, a),
        C::Utime(a) => fs::utime(client, a),
        C::Xattr(a) => fs::xattr(client, a),
        C::Inotify(a) => fs::inotify_add_watch(client, a),
        C::Exec(a) => fs::exec(client, a),
        C::FdMetadata(a) => fs::fd_metadata(client, a),
        C::Memfd(a) => fs::memfd_create(client, a),
        C::Statfs(a) => fs::statfs(client, a),
        C::Chdir(a) => fs::chdir(client, a),
        C::Truncate(a) => fs::truncate(client, a),
        C::SocketAddress(a) => net::socket_address(client, a),
        C::Socket(a) => net::socket(client, a),
        C::Send(a) => net::send(client, a),
        C::Accept(a) => net::accept(client, a),
        C::SocketName(a) => net::socket_name(client, a),
        // Only capability mode's profile sends these: [`capsicum`] answers them all, or, in a
        // sandbox without namespaces, [`hostpids`].
        C::Checked(a) => match client.agent.host_pids {
            Some(init) => {
                hostpids::serve(client, init, a).map_err(rustix::io::Errno::from_raw_os_error)
            }
            None => Err(rustix::io::Errno::NOSYS),
        },
    }
}

/// One worker's request in flight: its notification id and the worker's thread, for the
/// watchdog (`None` between requests).
#[derive(Default)]
struct Slot(Mutex<Option<(u64, crate::sys::signals::ThreadHandle)>>);

impl Slot {
    fn set(&self, serving: Option<(u64, crate::sys::signals::ThreadHandle)>) {
        if let Ok(mut s) = self.0.lock() {
            *s = serving;
        }
    }

    fn serving(&self) -> Option<u64> {
        self.0.lock().ok().and_then(|s| s.map(|(id, _)| id))
    }
}

/// A worker's slot in the agent's list, taken out again when the worker ends (however it
/// ends), so the watchdog never signals a thread that is gone.
struct SlotGuard<'a> {
    agent: &'a Agent,
    slot: Arc<Slot>,
}

impl SlotGuard<'_> {
    fn register(agent: &Agent) -> SlotGuard<'_> {
        let slot = Arc::new(Slot::default());
        if let Ok(mut slots) = agent.in_flight.lock() {
            slots.push(Arc::clone(&slot));
        }
        SlotGuard { agent, slot }
    }
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut slots) = self.agent.in_flight.lock() {
            slots.retain(|s| !Arc::ptr_eq(s, &self.slot));
        }
    }
}

/// The calling thread's CPU time (user and system).
fn thread_cpu() -> std::time::Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn policy_spans(policy: &Policy) -> Vec<Arc<str>> {
    policy
        .path_rules()
        .iter()
        .map(|r| Arc::from(r.span.to_string()))
        .collect()
}

/// The family and name of a notified call, if it is one the agent serves (a native x86_64 call
/// the table delegates); anything else is answered ENOSYS.
fn delegated_family(
    notif: &unotify::Notification,
    net: syscalls::Network,
    capability_mode: bool,
) -> Option<(Family, &'static str)> {
    if notif.arch != crate::sys::seccomp::AUDIT_ARCH_X86_64 {
        return None;
    }
    let entry = syscalls::lookup(notif.nr as i64)?;
    if capability_mode
        && (syscalls::Profile::CAPABILITY_CHECKED.contains(&entry.nr)
            || matches!(entry.nr, libc::SYS_fcntl | libc::SYS_ioctl)
            || syscalls::Profile::TRACING.contains(&entry.nr))
    {
        return Some((Family::CapabilityMode, entry.name()));
    }
    match entry.class_in(net) {
        Class::Delegated(family) => Some((family, entry.name())),
        // Guards that notify for some arguments (an inet socket, a send with an address).
        Class::Guarded(syscalls::Guard::HostSocket) => Some((Family::Socket, entry.name())),
        Class::Guarded(syscalls::Guard::SendTo) => Some((Family::Send, entry.name())),
        _ => None,
    }
}

/// The caller's process ids, as read from `/proc/<tid>/status`.
#[derive(Clone, Copy, Debug)]
pub struct Ids {
    /// Thread-group id in the agent's PID namespace.
    pub tgid: u32,
    /// Thread-group id in the caller's own PID namespace.
    pub ns_tgid: u32,
    /// The caller's umask.
    pub umask: u32,
    /// How many seccomp filters the caller has (`Seccomp_filters`, Linux 5.9), which only
    /// grows: capability mode entered by the program is one more ([`capsicum`]).
    pub filters: Option<u32>,
}

impl Client<'_> {
    /// Says whether the descriptor this call answers with was opened for writing.
    pub fn opened_for_writing(&self, yes: bool) {
        self.writable.set(Some(yes));
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.agent.policy
    }

    /// Whether the sandbox runs without namespaces (`crate::confine::hostns`).
    pub fn without_namespaces(&self) -> bool {
        self.agent.without_namespaces
    }

    /// The network context.
    pub fn net(&self) -> &net::Context {
        &self.agent.net
    }

    /// The id map of the sandbox.
    pub fn id_map(&self) -> IdMap {
        self.agent.ids
    }

    /// Whether the run refuses executable memory (`--wx`).
    pub fn wx(&self) -> bool {
        self.agent.wx
    }

    /// Whether every directory of the sandbox's view may be listed ([`Confinement::view_lists`]).
    pub fn view_lists(&self) -> bool {
        self.agent.view_lists && self.resolver().in_view()
    }

    /// What Landlock lets the sandbox execute.
    pub fn exec_rules(&self) -> &crate::confine::landlock::ExecRules {
        &self.agent.exec_rules
    }

    /// The resolver.
    pub fn resolver(&self) -> &Resolver {
        &self.agent.resolver
    }

    /// Copies a result into the caller's memory (`process_vm_writev`, else through
    /// `/proc/<tid>/mem`, as [`Client::read_memory`]).
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), i32> {
        if !self.agent.memory.through_proc() {
            match mem::write(self.tid(), addr, data) {
                Err(e) if MemoryRoute::refused(&e) => {
                    self.agent.memory.switch("process_vm_writev", &e)
                }
                other => return other.map_err(|_| libc::EFAULT),
            }
        }
        let fd = self.proc_mem()?;
        // The kernel writes `/proc/PID/mem` with FOLL_FORCE, through the caller's page
        // protections, where process_vm_writev fails: the agent checks them itself, or a
        // result could land in the caller's code or read-only data (the escape suite's
        // `stat_into_readonly_memory`).
        if !self.mapped(addr, data.len(), b'w') {
            return Err(libc::EFAULT);
        }
        mem::write_through(fd, addr, data).map_err(|_| libc::EFAULT)
    }

    /// Whether every byte of `len` at `addr` lies in mappings of the caller that allow
    /// `perm` (`b'r'` or `b'w'`), as its `/proc/<tid>/maps` says now. For the `/proc/PID/mem`
    /// route only, which the kernel does not check so. A caller that changes a protection
    /// after this check changes only what it could change itself: making a page executable
    /// that was not is `mprotect`'s to refuse (`--wx`), not the agent's write's.
    fn mapped(&self, addr: u64, len: usize, perm: u8) -> bool {
        self.mapped_len(addr, len, perm) == len
    }

    /// How many bytes from `addr` on (at most `len`) lie in mappings that allow `perm`, one
    /// after another (see [`Client::mapped`]).
    fn mapped_len(&self, addr: u64, len: usize, perm: u8) -> usize {
        let end = addr.saturating_add(len as u64);
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{}/maps", self.tid())) else {
            return 0;
        };
        let mut at = addr;
        for line in maps.lines() {
            if at >= end {
                break;
            }
            let mut fields = line.split(' ');
            let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
                break;
            };
            let Some((lo, hi)) = range.split_once('-') else {
                break;
            };
            let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16))
            else {
                break;
            };
            if hi <= at {
                continue;
            }
            // The mappings are in address order: a gap before `at` is unmapped memory.
            if lo > at || !perms.as_bytes().contains(&perm) {
                break;
            }
            at = hi;
        }
        (at.min(end) - addr) as usize
    }

    /// Reads what it can of the caller's memory at `addr` (short only where its mapping ends):
    /// with `process_vm_readv`, or, where that is refused (ENOSYS; EPERM from a container's
    /// seccomp profile), through the caller's `/proc/<tid>/mem`. Where neither reads it the
    /// error is `EPERM` and the call is refused with it: an argument the agent cannot copy is
    /// never checked, and so never allowed (docs/design.md, invariant 1).
    pub(super) fn read_memory(&self, addr: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        if !self.agent.memory.through_proc() {
            match mem::read(self.tid(), addr, buf) {
                Err(e) if MemoryRoute::refused(&e) => {
                    self.agent.memory.switch("process_vm_readv", &e)
                }
                other => return other,
            }
        }
        let fd = self.proc_mem().map_err(|e| {
            if e != libc::ENOENT && e != libc::ESRCH {
                self.agent.memory.unreadable(e);
            }
            std::io::Error::from_raw_os_error(libc::EPERM)
        })?;
        // What process_vm_readv would read: the readable part of the mappings (the file reads
        // through page protections). A string that runs into memory it may not read ends there,
        // as [`mem::read_cstring_with`] expects of a short read.
        let readable = self.mapped_len(addr, buf.len(), b'r');
        if readable == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::EFAULT));
        }
        mem::read_through(fd, addr, &mut buf[..readable]).inspect_err(|e| {
            if MemoryRoute::refused(e) {
                self.agent
                    .memory
                    .unreadable(e.raw_os_error().unwrap_or(libc::EPERM));
            }
        })
    }

    /// The caller's `/proc/<tid>/mem`, opened once per request, then the request checked live,
    /// so the address space is the caller's (a `mem` descriptor keeps the address space it was
    /// opened on: were the caller's thread id taken over since, by a thread of its process
    /// that ran `execve`, the request would no longer be live).
    ///
    /// Opened by its own path, not from [`Client::proc_dir`]: a `/proc/<tid>` directory held
    /// from before the arguments were copied would follow the thread id to the thread that
    /// took it over (`execve`'s de_thread hands the leader's id on), and the caller's working
    /// directory is read through it after a walk (the escape suite's `tid_reuse` caught
    /// exactly that). Not kept across requests, for the same reason and because an `execve`
    /// replaces the address space (and a `CLONE_VM` sibling may keep the old one alive).
    fn proc_mem(&self) -> Result<BorrowedFd<'_>, i32> {
        if let Some(fd) = self.proc_mem.get() {
            return Ok(fd.as_fd());
        }
        use rustix::fs::{openat, Mode, OFlags, CWD};
        let fd = openat(
            CWD,
            format!("/proc/{}/mem", self.tid()),
            OFlags::RDWR | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| e.raw_os_error())?;
        self.live()?;
        Ok(self.proc_mem.get_or_init(|| fd).as_fd())
    }

    /// Step 2: the request is still live. Call after copying arguments, before acting.
    pub fn live(&self) -> Result<(), i32> {
        if unotify::id_valid(self.agent.listener.as_fd(), self.id()) {
            Ok(())
        } else {
            Err(libc::ENOENT)
        }
    }

    /// The calling thread's `/proc/<tid>` directory, opened once per request.
    ///
    /// A thread id names the caller only while the caller lives; once it dies, another thread
    /// may get the number. The directory is opened first and the request checked live after:
    /// a live request means the caller had not died when the directory was opened, so the
    /// descriptor names the caller's task then. It names the thread id, though, not the task:
    /// when another thread of the caller's process runs `execve`, the kernel hands the
    /// leader's id to it (de_thread), and the held directory shows the new image. What is read
    /// through it late in a request is checked live again after the read ([`Client::cwd`]).
    fn proc_dir(&self) -> Result<BorrowedFd<'_>, i32> {
        if let Some(fd) = self.proc_dir.get() {
            return Ok(fd.as_fd());
        }
        use rustix::fs::{openat, Mode, OFlags, CWD};
        let fd = openat(
            CWD,
            format!("/proc/{}", self.tid()),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|_| libc::ESRCH)?;
        self.live()?;
        Ok(self.proc_dir.get_or_init(|| fd).as_fd())
    }

    /// The caller's PID namespace, as the device and inode of its `/proc/<tid>/ns/pid`.
    pub fn pid_namespace(&self) -> Option<(u64, u64)> {
        let st = rustix::fs::statat(
            self.proc_dir().ok()?,
            c"ns/pid",
            rustix::fs::AtFlags::empty(),
        )
        .ok()?;
        Some((st.st_dev, st.st_ino))
    }

    /// The caller's ids (read once per request).
    pub fn ids(&self) -> Result<Ids, i32> {
        if let Some(ids) = self.ids.get() {
            return Ok(*ids);
        }
        let status = {
            use std::io::Read;
            let fd = rustix::fs::openat(
                self.proc_dir()?,
                c"status",
                rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .map_err(|_| libc::ESRCH)?;
            let mut text = String::new();
            std::fs::File::from(fd)
                .take(64 * 1024)
                .read_to_string(&mut text)
                .map_err(|_| libc::ESRCH)?;
            text
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
        };
        let tgid = field("Tgid:")
            .and_then(|v| v.parse().ok())
            .ok_or(libc::ESRCH)?;
        let ns_tgid = field("NStgid:")
            .and_then(|v| v.split_whitespace().last())
            .and_then(|v| v.parse().ok())
            .unwrap_or(tgid);
        let umask = field("Umask:")
            .and_then(|v| u32::from_str_radix(v, 8).ok())
            .unwrap_or(0o022);
        let filters = field("Seccomp_filters:").and_then(|v| v.parse().ok());
        Ok(*self.ids.get_or_init(|| Ids {
            tgid,
            ns_tgid,
            umask,
            filters,
        }))
    }

    /// Puts `fd` in the caller at the number `at`, replacing what is there (the caller is still
    /// waiting for its answer; see [`unotify::addfd_at`]).
    pub fn replace_fd(&self, fd: BorrowedFd<'_>, at: i32, cloexec: bool) -> Result<(), i32> {
        unotify::addfd_at(self.agent.listener.as_fd(), self.id(), fd, at, cloexec)
            .map(drop)
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    }

    /// Whether the caller's descriptor `fd` is close-on-exec (its `/proc/<tid>/fdinfo`).
    pub fn fd_cloexec(&self, fd: i32) -> Result<bool, i32> {
        Ok(self.fd_flags(fd)? & libc::O_CLOEXEC as u32 != 0)
    }

    /// The open flags of the caller's descriptor `fd` (its `/proc/<tid>/fdinfo`).
    fn fd_flags(&self, fd: i32) -> Result<u32, i32> {
        use std::io::Read;
        let name = std::ffi::CString::new(format!("fdinfo/{fd}")).map_err(|_| libc::EBADF)?;
        let f = rustix::fs::openat(
            self.proc_dir()?,
            &name,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(|_| libc::EBADF)?;
        let mut text = String::new();
        std::fs::File::from(f)
            .take(4096)
            .read_to_string(&mut text)
            .map_err(|_| libc::EBADF)?;
        let flags = text
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            .ok_or(libc::EBADF)?;
        Ok(flags)
    }

    /// The calling thread's current directory, as an `O_PATH` descriptor of the real object.
    ///
    /// The request is checked live after the open, not only when `/proc/<tid>` was opened: a
    /// held `/proc/<tid>` follows its thread id, and `execve` in another thread of the
    /// caller's process hands the leader's id to that thread (de_thread), whose new image has
    /// a directory of its own. Where `/proc/<tid>` was opened early in a request (reading its
    /// ids, say) and the directory is needed after a long walk, only this check tells the
    /// caller's directory from the new image's (the escape suite's `tid_reuse`).
    pub fn cwd(&self) -> Result<OwnedFd, i32> {
        use rustix::fs::{openat, Mode, OFlags};
        let cwd = openat(
            self.proc_dir()?,
            c"cwd",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| e.raw_os_error())?;
        self.live()?;
        Ok(cwd)
    }

    /// A duplicate of the caller's descriptor `fd` (`pidfd_getfd`): exactly the open file the
    /// caller names, never a path it could change. Where `pidfd_getfd` is refused
    /// ([`DescriptorRoute`]) the call is refused with `EPERM`: the callers need the open file
    /// itself (a socket, an inotify instance), which no other route gives.
    pub fn fd(&self, fd: i32) -> Result<OwnedFd, i32> {
        if !self.agent.descriptors.through_proc() {
            match self.fd_by_pidfd(fd) {
                Err(e) if DescriptorRoute::refused(e) => self.agent.descriptors.switch(e),
                other => return other,
            }
        }
        // A socket the agent made: its own copy, found by the inode the caller's names.
        let theirs = self.fd_object(fd)?;
        if let Ok(st) = rustix::fs::fstat(&theirs) {
            if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Socket {
                let kept = self.agent.descriptors.sockets.lock();
                if let Some(ours) = kept.ok().as_ref().and_then(|k| k.get(&st.st_ino)) {
                    let same = rustix::fs::fstat(ours).is_ok_and(|o| o.st_dev == st.st_dev);
                    if same {
                        return ours
                            .try_clone()
                            .map_err(|e| e.raw_os_error().unwrap_or(libc::EMFILE));
                    }
                }
            }
        }
        self.agent.descriptors.object_refused(self.syscall());
        Err(libc::EPERM)
    }

    /// The caller's descriptor `fd` through `pidfd_getfd`, or `None` where that fails or is
    /// refused (nothing logged, and the route unchanged): for a call the kernel can answer
    /// itself when the agent cannot see the descriptor.
    pub fn fd_if_reachable(&self, fd: i32) -> Option<OwnedFd> {
        if self.agent.descriptors.through_proc() {
            return None;
        }
        self.fd_by_pidfd(fd).ok()
    }

    /// On the `/proc` route ([`DescriptorRoute`]), keeps the agent's copy of `sock`, a socket
    /// it made for the sandbox, so that later calls on the caller's descriptor of it can be
    /// served. Costs nothing where `pidfd_getfd` works.
    pub fn keep_socket(&self, sock: &OwnedFd) {
        if !self.agent.descriptors.through_proc() {
            return;
        }
        let (Ok(st), Ok(copy)) = (rustix::fs::fstat(sock), sock.try_clone()) else {
            return;
        };
        let Ok(mut kept) = self.agent.descriptors.sockets.lock() else {
            return;
        };
        if kept.len() >= KEPT_PRUNE_AT {
            if let Some(ns) = self.pid_namespace() {
                let live = held::held_in_namespace(ns);
                kept.retain(|inode, _| live.contains(inode));
            }
        }
        kept.insert(st.st_ino, copy);
    }

    /// Drops the agent's kept copy of `sock` ([`Client::keep_socket`]): a TCP socket once
    /// connected needs the agent no more, and its copy would hold the connection open.
    pub fn forget_socket(&self, sock: &OwnedFd) {
        if let (Ok(st), Ok(mut kept)) = (
            rustix::fs::fstat(sock),
            self.agent.descriptors.sockets.lock(),
        ) {
            kept.remove(&st.st_ino);
        }
    }

    /// The object the caller's descriptor `fd` names, for a path looked up through it or its
    /// file's metadata: a duplicate ([`Client::fd`]), or where `pidfd_getfd` is refused, an
    /// `O_PATH` descriptor of the same object opened through `/proc/<tid>/fd/N`.
    ///
    /// That open goes by the path afresh and the request is checked live after it: the caller
    /// was alive throughout, so the thread id named the caller's task (a thread id changes
    /// hands only when its task has died, and a caller that dies ends its request), and the
    /// table read is the caller's own (`/proc/<tid>/fd` is the thread's, as `PIDFD_THREAD`).
    /// What stood at `fd` then is what the caller named; a descriptor swapped in meanwhile is
    /// one it holds too, and the call is checked on the object found, as with `pidfd_getfd`.
    fn fd_object(&self, fd: i32) -> Result<OwnedFd, i32> {
        if !self.agent.descriptors.through_proc() {
            match self.fd_by_pidfd(fd) {
                Err(e) if DescriptorRoute::refused(e) => self.agent.descriptors.switch(e),
                other => return other,
            }
        }
        if fd < 0 {
            return Err(libc::EBADF);
        }
        use rustix::fs::{openat, Mode, OFlags, CWD};
        let theirs = openat(
            CWD,
            format!("/proc/{}/fd/{fd}", self.tid()),
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e.raw_os_error() {
            libc::ENOENT => libc::EBADF,
            e => e,
        })?;
        self.live()?;
        Ok(theirs)
    }

    /// Whether the caller's descriptor `fd`, of which `ours` is the agent's copy, is an
    /// `O_PATH` one (on the `/proc` route, the copy always is: the caller's flags tell).
    fn fd_is_path(&self, fd: i32, ours: &OwnedFd) -> bool {
        if self.agent.descriptors.through_proc() {
            self.fd_flags(fd)
                .map_or(true, |f| f & libc::O_PATH as u32 != 0)
        } else {
            rustix::fs::fcntl_getfl(ours).is_ok_and(|f| f.contains(rustix::fs::OFlags::PATH))
        }
    }

    /// [`Client::fd`] by `pidfd_getfd`.
    ///
    /// The pidfd names the calling *thread* (`PIDFD_THREAD`, Linux 6.9), so no lookup of its
    /// process is needed; checking that the request is still live after opening it proves the
    /// thread id was not reused in between. Older kernels fall back to the process's pidfd.
    fn fd_by_pidfd(&self, fd: i32) -> Result<OwnedFd, i32> {
        if fd < 0 {
            return Err(libc::EBADF);
        }
        /// `PIDFD_THREAD` (include/uapi/linux/pidfd.h): the same bit as `O_EXCL`.
        const PIDFD_THREAD: u32 = libc::O_EXCL as u32;
        let pid = |id: u32| rustix::process::Pid::from_raw(id as i32).ok_or(libc::ESRCH);
        let flags = rustix::process::PidfdFlags::from_bits_retain(PIDFD_THREAD);
        let pidfd = match rustix::process::pidfd_open(pid(self.tid())?, flags) {
            Ok(p) => {
                self.live()?;
                p
            }
            Err(rustix::io::Errno::INVAL) => {
                let p = rustix::process::pidfd_open(
                    pid(self.ids()?.tgid)?,
                    rustix::process::PidfdFlags::empty(),
                )
                .map_err(|e| e.raw_os_error())?;
                // As above: still live after the open, so the pid was the caller's.
                self.live()?;
                p
            }
            Err(e) => return Err(e.raw_os_error()),
        };
        unotify::pidfd_getfd(pidfd.as_fd(), fd).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    }

    /// The caller's descriptor `fd` (its working directory for `AT_FDCWD`) and, when that is a
    /// stand-in for an `O_PATH` descriptor of a symlink ([`stand_in`]), the symlink.
    fn descriptor(&self, fd: i32) -> Result<(OwnedFd, Option<OwnedFd>), i32> {
        let theirs = if fd == libc::AT_FDCWD {
            self.cwd()?
        } else {
            self.fd_object(fd)?
        };
        let link = self.agent.stand_ins.link(&theirs);
        Ok((theirs, link))
    }

    /// The caller's descriptor `fd` as a path lookup through it sees it (`AT_EMPTY_PATH`,
    /// `readlinkat(fd, "")`, `/proc/self/fd/N`): a stand-in is the symlink it stands for.
    pub fn fd_looked_up(&self, fd: i32) -> Result<OwnedFd, i32> {
        let (theirs, link) = self.descriptor(fd)?;
        Ok(link.unwrap_or(theirs))
    }

    /// The caller's descriptor `fd` for a call that needs an open file (`fchmod`, `fchown`,
    /// `fsetxattr`): a stand-in is `EBADF`, as an `O_PATH` descriptor is to the kernel.
    pub fn fd_open_file(&self, fd: i32) -> Result<OwnedFd, i32> {
        match self.descriptor(fd)? {
            (_, Some(_)) => Err(libc::EBADF),
            // An `O_PATH` descriptor the kernel opened itself (in a view, with the kernel
            // first): as natively, fchmod, fchown and fsetxattr on it are EBADF.
            (theirs, None) if self.fd_is_path(fd, &theirs) => Err(libc::EBADF),
            (theirs, None) => Ok(theirs),
        }
    }

    /// Whether the caller's descriptor `fd` is a stand-in ([`stand_in`]).
    pub fn is_stand_in(&self, fd: i32) -> bool {
        self.agent.stand_ins.in_use() && matches!(self.descriptor(fd), Ok((_, Some(_))))
    }

    /// A stand-in for `link`, an `O_PATH | O_NOFOLLOW` descriptor of a symlink the caller may
    /// open so, to answer its open with ([`stand_in`]).
    pub fn stand_in(&self, link: OwnedFd) -> Result<OwnedFd, i32> {
        self.agent.stand_ins.issue(link)
    }

    /// Rewrites a kernel-produced path that starts with the caller's `/proc/<tgid>` into
    /// `/proc/self`, so the walk translates it back for this caller.
    pub fn logical_proc_path(&self, text: &[u8]) -> Result<Vec<u8>, i32> {
        let Some(rest) = text.strip_prefix(b"/proc/") else {
            return Ok(text.to_vec());
        };
        let tgid = self.ids()?.tgid.to_string();
        match rest.strip_prefix(tgid.as_bytes()) {
            Some(tail) if tail.is_empty() || tail.starts_with(b"/") => {
                Ok([b"/proc/self".as_slice(), tail].concat())
            }
            _ => Ok(text.to_vec()),
        }
    }

    /// Records a denial that is not a plain policy check (a device node, EXDEV on rename).
    pub fn refuse(&self, target: &str, why: &str, errno: i32) -> i32 {
        self.agent.stats.count(false);
        self.log(target, None, false, None, why.to_owned(), Some(errno));
        errno
    }

    /// Records a refusal by a named rule that is not a policy rule (capability mode's).
    pub fn refuse_by(&self, target: &str, rule: &str, why: &str, errno: i32) -> i32 {
        self.agent.stats.count(false);
        self.log(
            target,
            None,
            false,
            Some(rule.to_owned()),
            why.to_owned(),
            Some(errno),
        );
        errno
    }

    /// Records a use allowed by a named rule that is not a policy rule (capability mode's).
    fn record_by(&self, target: &str, rule: &str) {
        self.agent.stats.count(true);
        self.log(
            target,
            None,
            true,
            Some(rule.to_owned()),
            String::new(),
            None,
        );
    }

    /// Records an allowed network use (`what`, such as `tcp 10.0.0.1:443`) and its rule.
    fn record_net(&self, what: &str, rule: String) {
        self.agent.stats.count(true);
        self.log(what, None, true, Some(rule), String::new(), None);
    }

    fn record(&self, path: &str, access: Access, verdict: &Verdict) {
        let allowed = verdict.is_allowed();
        self.agent.stats.count(allowed);
        if let Verdict::Allowed(id) = verdict {
            if self.keeps_grant {
                *self.granted.borrow_mut() = Some((path.to_owned(), *id));
            }
        }
        if !self.agent.log.wants(allowed) {
            return;
        }
        let policy = &self.agent.policy;
        let rule = match verdict {
            Verdict::Allowed(id) => Some(policy.rule(*id).span.to_string()),
            Verdict::Denied(warden_policy::Denial::DeniedBy(id)) => {
                Some(policy.rule(*id).span.to_string())
            }
            Verdict::Denied(_) => None,
        };
        let reason = if allowed {
            String::new()
        } else {
            self.unix_socket_hint(path)
                .unwrap_or_else(|| policy.explain_denial(path, access))
        };
        let errno = (!allowed).then_some(libc::EACCES);
        self.log(path, Some(access), allowed, rule, reason, errno);
    }
}

impl Client<'_> {
    /// For a refusal of `path` in a connect or bind of a unix socket
    /// ([`Client::names_unix_socket`]): the rule the whole call needs, for the socket's name
    /// when `path` is it or a directory on the way to it (as the program wrote it, taken
    /// literally), for `path` itself otherwise (a symlink on the way led there).
    fn unix_socket_hint(&self, path: &str) -> Option<String> {
        let dir = self.unix_socket.borrow().as_ref()?.0;
        let socket = self.unix_socket_path();
        let on_the_way = socket.as_deref().is_some_and(|s| {
            s == path || path == "/" || s.strip_prefix(path).is_some_and(|r| r.starts_with('/'))
        });
        let target = match socket {
            Some(s) if on_the_way => s,
            _ => path.to_owned(),
        };
        Some(self.agent.policy.explain_unix_denial(dir, &target))
    }

    /// For a bind whose walk found a directory on the way missing: if the host has that
    /// directory (the policy hides it) and no rule gives the name, the refusal is recorded with
    /// the rule the bind needs ([`Client::unix_socket_hint`]). Returns `errno`, the answer.
    pub fn unix_name_hidden(&self, errno: i32) -> i32 {
        let Some(socket) = self.unix_socket_path() else {
            return errno;
        };
        let parent = match socket.rsplit_once('/') {
            Some(("", _)) => "/",
            Some((p, _)) => p,
            None => return errno,
        };
        let policy = &self.agent.policy;
        // In the default's private /tmp the rules that give its paths are about the sandbox's
        // own /tmp, which lacks the directory the host's has.
        let private_tmp = policy.in_private_tmp(&socket);
        let given = policy
            .check_unix(warden_policy::Direction::Incoming, &socket)
            .is_some()
            || policy.check(&socket, Access::Write).is_allowed();
        if (given && !private_tmp) || rustix::fs::lstat(parent).is_err() {
            return errno;
        }
        if private_tmp {
            return self.refuse(&socket, &self.private_tmp_reason(&socket), errno);
        }
        match self.unix_socket_hint(&socket) {
            Some(why) => self.refuse(&socket, &why, errno),
            None => errno,
        }
    }

    /// Why `path`, which the host's `/tmp` has, is not in the sandbox's private one, with the
    /// line to add: a unix socket's connect or bind needs its own rule (which names `/tmp` as
    /// well), any other call `path-allow read`.
    pub(super) fn private_tmp_reason(&self, path: &str) -> String {
        match self.unix_socket_hint(path) {
            Some(rule) => format!("{}; {rule}", warden_policy::PRIVATE_TMP_NOTE),
            None => self.agent.policy.explain_private_tmp(path, Access::Read),
        }
    }

    /// The unix socket this call names ([`Client::names_unix_socket`]), taken literally from
    /// the caller's directory: `None` for a name through `..` or not UTF-8.
    fn unix_socket_path(&self) -> Option<String> {
        let name = self.unix_socket.borrow().as_ref()?.1.clone();
        let name = String::from_utf8(name).ok()?;
        if name.starts_with('/') {
            literal_path("", &name)
        } else {
            let (_, cwd) = self.base(resolve::Base::Cwd).ok()?;
            literal_path(std::str::from_utf8(&cwd).ok()?, &name)
        }
    }

    /// The directory a relative path starts from and its logical path ([`resolve::Caller::base`]).
    fn base(&self, base: resolve::Base) -> Result<(OwnedFd, Vec<u8>), i32> {
        use std::os::fd::AsRawFd;
        let actual = match base {
            resolve::Base::Cwd => self.cwd()?,
            resolve::Base::Fd(fd) => self.fd_object(fd)?,
        };
        let text = rustix::fs::readlinkat(
            rustix::fs::CWD,
            format!("/proc/self/fd/{}", actual.as_raw_fd()),
            Vec::new(),
        )
        .map_err(|e| e.raw_os_error())?;
        let logical = self.logical_proc_path(text.to_bytes())?;
        Ok((actual, logical))
    }
}

/// Borrow helper: the agent's listener, for tests.
impl Agent {
    /// The most sockets in the host's network the sandbox held at once (`None` when its
    /// sockets stay in its own network namespace).
    pub fn sockets_peak(&self) -> Option<u64> {
        match self.net.mode {
            syscalls::Network::Host { .. } => Some(self.net.held.peak()),
            syscalls::Network::Private => None,
        }
    }

    /// The listener descriptor.
    pub fn listener(&self) -> BorrowedFd<'_> {
        self.listener.as_fd()
    }
}

/// `name` taken literally from the directory `base` (when relative): `.` and empty
/// components dropped; `None` for a name through `..`, which only a walk can place.
fn literal_path(base: &str, name: &str) -> Option<String> {
    let mut out = String::new();
    for part in base.split('/').chain(name.split('/')) {
        match part {
            "" | "." => {}
            ".." => return None,
            p => {
                out.push('/');
                out.push_str(p);
            }
        }
    }
    if out.is_empty() {
        out.push('/');
    }
    Some(out)
}

#[cfg(test)]
mod literal_tests {
    use super::literal_path;

    #[test]
    fn a_socket_name_is_placed_literally_or_not_at_all() {
        assert_eq!(
            literal_path("", "/run//app/./s.sock").unwrap(),
            "/run/app/s.sock"
        );
        assert_eq!(literal_path("/home/u", "s.sock").unwrap(), "/home/u/s.sock");
        assert_eq!(literal_path("/", "./s").unwrap(), "/s");
        assert_eq!(literal_path("", "/").unwrap(), "/");
        assert!(literal_path("/home/u", "../s").is_none());
    }
}
