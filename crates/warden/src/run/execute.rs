//! Making the run a [`Plan`] describes, in one place: the cgroup, the Landlock ruleset and the
//! filter, the sandbox, the agent, the registry entry, the limits' watchers; then waiting for
//! the program and measuring what it used. Every way out kills the sandbox and reaps its init
//! (it is owned by a [`launch::Sandbox`]), but for the end the program's: init reports it
//! with every other process reaped, and its exit is left to go on ([`launch::Exiting`]).

use super::plan::Plan;
use super::stdio::Captures;
use super::{failure, Failure, RunConfig, EXIT_CANNOT_EXEC, EXIT_NOT_FOUND, EXIT_WARDEN};
use crate::agent::{log::Log, Agent};
use crate::confine::landlock;
use crate::filter;
use crate::launch::{self, Command, LaunchError, Launched, Outcome, Stage};
use crate::limits::cgroup::{self, Cgroup};
use crate::limits::{self, CpuSource, KillReason, NamespaceCpu, Stoppable, Verdicts};
use crate::report::{Accounting, Measured};
use crate::sys::usage::Usage;
use crate::syscalls::Opens;
use rustix::process::Signal;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Signals that end warden end the sandbox.
const STOP: [Signal; 4] = [Signal::INT, Signal::TERM, Signal::HUP, Signal::QUIT];

/// A run the program has ended: its exit status (128+N for signal N), and the sandbox's init
/// when it is left exiting, not waited for (the program ended and init reaped the rest, and
/// no cgroup must be emptied first).
pub struct Ran {
    /// The exit status.
    pub status: i32,
    /// init, still exiting.
    pub exiting: Option<launch::Exiting>,
}

/// Runs `plan` with the program's descriptors `stdio` (and `captures` behind them), `scratch`
/// being the run's scratch directory if it has one. Fills in `measured`. `teardown` is
/// warden's own, done once the program has ended and init has reaped the rest of the sandbox,
/// while init's exit goes on (after a kill, once init is gone).
pub fn execute(
    cfg: &RunConfig,
    plan: Plan,
    stdio: [Option<OwnedFd>; 3],
    mut captures: Captures,
    scratch: Option<&Path>,
    measured: &mut Measured,
    teardown: &mut dyn FnMut(),
) -> Result<Ran, Failure> {
    let mode = plan.mode();
    let Plan {
        policy,
        mut command,
        program,
        cgroup,
        opens,
        profile,
        net,
        hidden_cwd,
    } = plan;
    let limits = policy.limits;
    measured.hidden_cwd = hidden_cwd;
    // What the kernel refuses alone (opens not delegated) is not in the agent's count.
    measured.kernel_decides = opens != Opens::Agent;
    let cgroup = make_cgroup(cgroup.as_ref(), &command, measured)?;
    command.rlimits = limits::rlimits(&limits, cgroup.is_some());
    command.stdio = stdio;
    let log_file = open_log(cfg.log.as_deref())?;
    crate::timings::mark("cgroup, log");
    // The ruleset now, its rules while the sandbox's init builds the view (launch's `fill`).
    let (ruleset, filler) = ruleset(cfg, &policy, opens)?;
    let by_mounts = ruleset.absent;
    let mut filler = Some(filler);
    let mut exec_rules = landlock::ExecRules::default();
    let mut fill = || -> Result<(), String> {
        let Some(f) = filler.take() else {
            return Ok(());
        };
        // On warden's own thread: init builds the view on another CPU meanwhile
        // (crate::placement), and a thread of its own cost its start and a wake-up.
        // A tree's rule goes on the tree itself, around the view's masks, only where every
        // path the program opens is the view's: a directory of the host's tree it inherits
        // (`Opens::Kernel` in a view) reaches past the masks, and so would one a process of the
        // host's hands it over a unix socket a rule lets it reach; there the rule goes on the
        // entries around each denied path instead (narrower: nothing new in the tree).
        let masked = matches!(opens, Opens::View | Opens::ViewExec)
            && !policy
                .net_rules()
                .iter()
                .any(|r| matches!(r.target, warden_policy::NetTarget::Unix(_)));
        let (_, exec) = f
            .fill(&policy, command.view.as_ref(), masked)
            .map_err(|e| e.to_string())?;
        exec_rules = exec;
        exec_rules.by_mounts = by_mounts;
        Ok(())
    };
    crate::timings::mark("landlock ruleset");
    let program_filter = filter::program(profile);
    crate::timings::mark("seccomp filter");

    // Signals that end warden end the sandbox: block them now (the sandbox unblocks them before
    // exec, and every thread of warden's starts with them blocked), and take them from a
    // descriptor while waiting for the program.
    crate::sys::signals::block(&STOP);
    let stop = crate::sys::signals::SignalFd::new(&STOP)
        .map_err(|e| failure(EXIT_WARDEN, format!("cannot take signals: {e}")))?;
    become_starting_ids(&command)?;
    let attach = cgroup.as_deref().map(|cg| move |pid: i32| cg.attach(pid));
    let started = Instant::now();
    crate::timings::mark("starting ids");
    // Asked once: how the listener reaches warden, and how the agent takes descriptors.
    let takes_descriptors = crate::host::pidfd_getfd_here();
    if !takes_descriptors {
        measured.fallbacks.push("pidfd_getfd");
        eprintln!(
            "warden: pidfd_getfd is refused here (a container's seccomp profile): the agent \
             looks the program's descriptors up through /proc/PID/fd, and refuses (EPERM) the \
             calls that must act on a descriptor's own open file (connect, bind, accept or send \
             on a socket it did not make itself under a net-allow IP rule; inotify watches; \
             descriptors passed on); allow pidfd_getfd (`warden doctor` says more)"
        );
    }
    let sandbox = launch::launch(
        &command,
        ruleset,
        program_filter,
        profile.sends_in_kernel(),
        takes_descriptors,
        attach
            .as_ref()
            .map(|a| a as &dyn Fn(i32) -> std::io::Result<()>),
        &mut fill,
    );
    // The program has its own copies of its stdio now; ours would keep captured pipes open.
    command.stdio = Default::default();
    let sandbox = sandbox.map_err(|e| launch_failure(&e, &command))?;

    let sandbox_id = format!("{}-{:08x}", std::process::id(), crate::unique::rand32());
    let sources = policy.sources();
    let log = Log::new(cfg.verbose, log_file, sandbox_id.clone())
        .with_bound(cfg.log_max.unwrap_or(crate::agent::log::DEFAULT_LOG_BOUND))
        .with_observations(cfg.observations.clone())
        .with_scratch(scratch.and_then(Path::to_str).map(str::to_owned));
    let network = match net.mode {
        crate::syscalls::Network::Private => "private",
        crate::syscalls::Network::Host { .. } => "host",
    };
    let confinement = crate::agent::Confinement {
        view_root: None,
        exec_rules,
        capsicum: cfg.capsicum.clone(),
        wx: cfg.wx,
        // Only where the kernel cannot take the opens (Landlock below the ABI warden uses, or
        // none): there every run's opens are the agent's, and it lists what the kernel would.
        // Where the agent takes them by choice (`-v`, `--log`, `learn`), what it decides is the
        // policy's alone, so that `learn` writes the rules a run needs and `--log` names them.
        view_lists: command.view.as_ref().is_some_and(|v| v.lists_root)
            && !crate::confine::landlock::enforces_everything(),
        // Only where the filter sends them the calls that name processes (no Landlock scopes).
        host_pids: (!command.namespaces && profile.capability_mode).then_some(sandbox.init_pid),
        without_namespaces: !command.namespaces,
        wait_killable: sandbox.wait_killable,
        takes_descriptors,
    };
    if !sandbox.wait_killable {
        measured.fallbacks.push("wait-killable-recv");
        eprintln!(
            "warden: this kernel has no SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19+), so \
             a signal may interrupt a call the agent is serving: the agent serves each thread's \
             creating calls one at a time and removes a file or directory made for a call that \
             was interrupted; a rename, unlink or connect so interrupted stays done \
             (docs/fallbacks.md)"
        );
    }
    let served = Served {
        policy,
        net,
        log,
        confinement,
    };
    let agent = start_agent(cfg, &sandbox, &command, served, cgroup.as_deref())?;
    crate::timings::mark("agent started");
    let disk = run_disk(&sandbox, &command);
    let degraded = measured.degraded();
    let registration = register(
        cfg,
        &sandbox,
        &agent,
        sandbox_id,
        sources,
        (network, mode),
        degraded,
        command.namespaces && network == "private",
    );
    crate::timings::mark("registered");

    let verdicts = Arc::new(Verdicts::default());
    let target: Arc<dyn Stoppable> = sandbox.shared();
    let copiers = captures.start(&target, &verdicts)?;
    if limits.time.is_some() || limits.wall_time.is_some() {
        let cpu = cpu_source(cgroup.as_ref(), &sandbox)?;
        let a = Arc::clone(&agent);
        limits::watch_time(
            &limits,
            cpu,
            Arc::new(move || a.stats.cpu()),
            started,
            Arc::clone(&target),
            Arc::clone(&verdicts),
        );
    }
    crate::timings::mark("watchers");
    let launch::Ended {
        outcome,
        usage: reported,
        signal: caught,
    } = sandbox.wait(&stop);
    crate::timings::mark("program ran (exec to exit)");
    measured.wall = started.elapsed();
    measured.exceeded = verdicts.close();
    // Killing init for a limit kills the program with it, by SIGKILL; init has no time to say so.
    let outcome = match (outcome, measured.exceeded) {
        (Outcome::Lost, Some(_)) => Outcome::Signaled(libc::SIGKILL),
        (o, _) => o,
    };
    // A program that had ended on its own before the kill landed was not killed by it.
    measured.killed = measured.exceeded.is_some() && outcome == Outcome::Signaled(libc::SIGKILL);
    sandbox.kill();
    // Requests of callers that died mid-call finish before anything is cleaned up.
    let quiesce = |copiers: Vec<std::thread::JoinHandle<()>>| {
        agent.quiesce(Duration::from_secs(2));
        for c in copiers {
            let _ = c.join();
        }
    };
    let (usage, exiting) = if matches!(outcome, Outcome::Lost) {
        // init was killed: the rest of the sandbox dies with it, as it is reaped.
        let usage = sandbox.reap();
        quiesce(copiers);
        (usage, None)
    } else {
        // init reaped every other process of the sandbox before it said how the program
        // ended: nothing of the sandbox runs any more, and warden's own teardown goes first,
        // while init's exit takes its namespaces down (its mounts wait for RCU grace periods).
        quiesce(copiers);
        drop(registration);
        teardown();
        match reported {
            // What the sandbox used came with the status: init's exit is not waited for. A
            // cgroup, though, can only be removed once init has left it.
            Some(usage) if cgroup.is_none() => (Some(usage), Some(sandbox.exiting())),
            _ => (sandbox.reap(), None),
        }
    };
    if captures.exceeded() && measured.exceeded.is_none() {
        measured.exceeded = Some(KillReason::Output);
    }
    measured.outcome = Some(outcome);
    measured.interrupted = caught;
    measured.output = captures.used();
    measure(measured, usage, cgroup.as_deref(), &agent);
    measured.disk = disk.and_then(|(fd, limit)| {
        let st = rustix::fs::fstatvfs(&fd).ok()?;
        Some((st.f_blocks.saturating_sub(st.f_bfree) * st.f_frsize, limit))
    });
    crate::timings::mark("reaped, agent quiet");
    let status = match caught {
        Some(sig) => 128 + sig,
        None => status(outcome, &program)?,
    };
    Ok(Ran { status, exiting })
}

/// The run's Landlock ruleset, created (required unless the agent decides every open; with
/// capability mode's second layer), and what fills in its rules.
fn ruleset(
    cfg: &RunConfig,
    policy: &warden_policy::Policy,
    opens: Opens,
) -> Result<(landlock::Prepared, landlock::Filler), Failure> {
    // Where the kernel decides opens, the filter keeps truncation with the agent, and
    // Landlock's walk for an open ends at the first rule that grants it.
    let truncation = match opens {
        Opens::Agent => landlock::Truncation::Landlock,
        _ => landlock::Truncation::Filter,
    };
    let mut ruleset =
        landlock::create(policy, truncation).map_err(|e| failure(EXIT_WARDEN, e.to_string()))?;
    ruleset.required = opens != Opens::Agent;
    // --capability-mode: a second layer allowing only what the starting capabilities grant.
    if let Some(session) = cfg.capsicum.as_ref() {
        if session.entry == warden_capsicum::Entry::Warden {
            let roots = session.roots.lock().map(|mut r| std::mem::take(&mut *r));
            ruleset.with_capabilities(roots.unwrap_or_default());
        }
    }
    let filler = ruleset
        .filler()
        .map_err(|e| failure(EXIT_WARDEN, e.to_string()))?;
    Ok((ruleset, filler))
}

/// What the agent of a run is given to decide with: the policy, the network's context, the
/// log, and what confines it.
struct Served {
    policy: warden_policy::Policy,
    net: crate::agent::net::Context,
    log: Log,
    confinement: crate::agent::Confinement,
}

/// The sandbox's agent, serving its listener (with the view's root, when there is a view),
/// its workers charged to the run's memory group; and capability mode's grant socket served.
/// One worker listens at first; the rest start with the first request ([`Agent::start`]).
fn start_agent(
    cfg: &RunConfig,
    sandbox: &launch::Sandbox,
    command: &Command,
    served: Served,
    cgroup: Option<&Cgroup>,
) -> Result<Arc<Agent>, Failure> {
    let Served {
        policy,
        net,
        log,
        mut confinement,
    } = served;
    if command.view.is_some() {
        let root = sandbox
            .program_root()
            .map_err(|e| failure(EXIT_WARDEN, format!("cannot open the sandbox's view: {e}")))?;
        confinement
            .exec_rules
            .learn_in_view(&policy, std::os::fd::AsFd::as_fd(&root));
        confinement.view_root = Some(root);
    }
    let listener = sandbox
        .listener
        .try_clone()
        .map_err(|e| failure(EXIT_WARDEN, e.to_string()))?;
    let agent = Agent::new(
        listener,
        policy,
        net,
        command.ids,
        log,
        cfg.terminal,
        confinement,
    )
    .map_err(|e| failure(EXIT_WARDEN, e.to_string()))?;
    if let Some(tasks) = cgroup.and_then(|cg| cg.memory_tasks()) {
        agent.charge_workers_to(tasks);
    }
    if let Some(cg) = cgroup {
        cg.charge_agent().map_err(|e| {
            failure(
                EXIT_WARDEN,
                format!("cannot move warden into the run's cgroup for its agent: {e}"),
            )
        })?;
    }
    agent.start();
    serve_grants(cfg.capsicum.as_ref());
    Ok(agent)
}

/// The cgroup the plan asks for (`wanted`), made; `None` when the run needs none or none can
/// be made here. Says in `measured` how the run is counted.
fn make_cgroup(
    wanted: Option<&cgroup::CgroupLimits>,
    command: &Command,
    measured: &mut Measured,
) -> Result<Option<Arc<Cgroup>>, Failure> {
    let cgroup = match wanted {
        Some(w) => Cgroup::create(*w)
            .map_err(|e| {
                failure(
                    EXIT_WARDEN,
                    format!("cannot set up the sandbox's cgroup: {e}"),
                )
            })?
            .map(Arc::new),
        None => None,
    };
    if let Some(cg) = &cgroup {
        // root about to become the program's user (become_starting_ids) may not remove root's
        // groups afterwards: a process that stays root does, when the run ends.
        if becomes_other_ids(command) {
            cg.keep_removable().map_err(|e| {
                failure(
                    EXIT_WARDEN,
                    format!("cannot start the remover of the sandbox's cgroups: {e}"),
                )
            })?;
        }
    }
    measured.accounting = match cgroup.as_ref().map(|c| c.version()) {
        Some(cgroup::Version::V2) => Accounting::CgroupV2,
        Some(cgroup::Version::V1) => Accounting::CgroupV1,
        None => Accounting::Rusage,
    };
    let tasks_bounded = wanted.is_some_and(|w| w.tasks.is_some());
    let memory_bounded = wanted.is_some_and(|w| w.memory.is_some());
    if cgroup.is_some() || !(tasks_bounded || memory_bounded) {
        return Ok(cgroup);
    }
    let why = cgroup::why_none();
    if tasks_bounded && command.ids.outside_uid == 0 {
        // RLIMIT_NPROC does not bind uid 0, and without a pids cgroup nothing else would.
        return Err(failure(
            EXIT_WARDEN,
            format!(
                "--processes needs a pids cgroup when the sandbox runs as root, and none is \
                 usable here: {why}. Run warden in a cgroup of its own with the controllers \
                 delegated (`systemd-run --scope -p Delegate=yes warden run ...`), or run the \
                 program as another user (starting_uid)"
            ),
        ));
    }
    // Never silently weaker: the limits hold per process, not for the sandbox as a whole.
    eprintln!(
        "warden: no cgroup for this run's limits ({why}): --mem and --processes hold per \
         process (rlimits), and a memory hog fails its allocations rather than being killed; \
         for limits on the whole sandbox run warden in a cgroup of its own with the \
         controllers delegated (`systemd-run --user --scope -p Delegate=yes warden run ...`)"
    );
    Ok(cgroup)
}

/// The `--log` file, opened for appending.
fn open_log(path: Option<&Path>) -> Result<Option<std::fs::File>, Failure> {
    let Some(p) = path else { return Ok(None) };
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(p)
        .map(Some)
        .map_err(|e| {
            failure(
                EXIT_WARDEN,
                format!("cannot open the log {}: {e}", p.display()),
            )
        })
}

/// Whether warden, root, becomes the program's ids before the start ([`become_starting_ids`]).
fn becomes_other_ids(command: &Command) -> bool {
    rustix::process::geteuid().is_root() && !command.ids.identity
}

/// root with starting_uid/starting_gid: becomes those ids first, so the sandbox's user
/// namespace belongs to them and the agent acts with exactly the program's credentials.
fn become_starting_ids(command: &Command) -> Result<(), Failure> {
    let ids = command.ids;
    if !becomes_other_ids(command) {
        return Ok(());
    }
    crate::sys::process::become_ids(ids.outside_uid, ids.outside_gid).map_err(|e| {
        let (u, g) = (ids.outside_uid, ids.outside_gid);
        failure(
            EXIT_WARDEN,
            format!("cannot switch to uid {u} gid {g}: {e}"),
        )
    })
}

/// Enters the run in the registry, where `warden ps` and `warden inspect` find it; without a
/// registry directory they just do not see it. The entry goes when the value is dropped. The
/// directory is found, made and checked on the registration's thread, not here. With
/// `own_network` (a private network namespace) that thread also says each TCP port a server of
/// the sandbox listens on, which nothing outside can reach ([`super::listeners`]).
#[allow(clippy::too_many_arguments)]
fn register(
    cfg: &RunConfig,
    sandbox: &Launched,
    agent: &Arc<Agent>,
    id: String,
    policies: Vec<String>,
    (network, mode): (&str, &str),
    degraded: Vec<String>,
    own_network: bool,
) -> Option<crate::registry::Registration> {
    let entry = crate::registry::Entry {
        id,
        warden_pid: std::process::id(),
        init_pid: sandbox.init_pid as u32,
        // The user who owns the registry directory and the entry (warden's files are made with
        // its effective uid), which readers check.
        uid: rustix::process::geteuid().as_raw(),
        command: std::iter::once(cfg.program.clone())
            .chain(cfg.args.iter().cloned())
            .collect(),
        started: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64()),
        policies,
        network: network.into(),
        mode: mode.into(),
        degraded,
        ..Default::default()
    };
    let a = Arc::clone(agent);
    // A server in the sandbox's own network is unreachable from outside: said as it starts,
    // each time the entry is written.
    let listeners = own_network.then(|| {
        let name = Path::new(&cfg.program)
            .file_name()
            .map_or(cfg.program.as_bytes(), |n| n.as_encoded_bytes());
        let name = warden_policy::escape::escape(name).into_owned();
        super::listeners::Listeners::new(sandbox.init_pid, name)
    });
    Some(crate::registry::Registration::start(
        crate::registry::Place::Own,
        entry,
        Arc::clone(&agent.grants),
        cfg.capsicum.clone(),
        move || {
            if let Some(l) = &listeners {
                l.look();
            }
            let s = a.stats.snapshot();
            (s.total, s.denied)
        },
    ))
}

/// The run's own disk (`limit-disk`), for the report: a descriptor of the scratch directory in
/// the view, which is one of the disk's places (so its file system's figures are the disk's),
/// opened while the view lives, and the limit. `None` without one.
fn run_disk(sandbox: &launch::Sandbox, command: &Command) -> Option<(OwnedFd, u64)> {
    let disk = command.view.as_ref()?.disk.as_ref()?;
    let rel = disk.scratch.as_deref()?;
    let root = sandbox.program_root().ok()?;
    let fd = crate::confine::view::open_in_view(std::os::fd::AsFd::as_fd(&root), rel).ok()?;
    Some((fd, disk.size))
}

/// Where the time limits read the sandbox's CPU time: its cgroup, or its processes in /proc.
fn cpu_source(cgroup: Option<&Arc<Cgroup>>, sandbox: &Launched) -> Result<CpuSource, Failure> {
    Ok(match cgroup {
        Some(cg) => CpuSource::Cgroup(Arc::clone(cg)),
        None => CpuSource::Procfs(NamespaceCpu::new(sandbox.init_pid).map_err(|e| {
            failure(
                EXIT_WARDEN,
                format!("cannot watch the sandbox's CPU time: {e}"),
            )
        })?),
    })
}

/// Serves the host's grant socket (`--grant-socket`, `warden_capsicum::sandbox`) on a thread of
/// its own, which holds the session's rights table; started after the launch, with the stop
/// signals blocked like every thread of warden's.
fn serve_grants(session: Option<&Arc<warden_capsicum::Session>>) {
    let Some(session) = session else { return };
    let sock = session.grants.lock().ok().and_then(|mut g| g.take());
    if let Some(sock) = sock {
        let session = Arc::clone(session);
        std::thread::spawn(move || warden_capsicum::sandbox::serve_grants(sock, &session.held));
    }
}

/// What the run used, from init's usage, the cgroup and the agent (its peak memory is read
/// for the report, [`super::Session::close`]).
fn measure(measured: &mut Measured, usage: Option<Usage>, cgroup: Option<&Cgroup>, agent: &Agent) {
    if let Some(u) = usage {
        measured.cpu = u.cpu;
        measured.max_rss_kib = u.max_rss_kib;
        measured.csw_voluntary = u.csw_voluntary;
        measured.csw_forced = u.csw_forced;
    }
    if let Some(cg) = cgroup {
        if let Some(cpu) = cg.cpu_time() {
            measured.cpu = cpu;
        }
        measured.cgroup_peak = cg.peak_memory();
        measured.oom_kills = cg.oom_kills();
        measured.process_limit_hits = cg.process_limit_hits();
        cg.remove();
    }
    measured.agent = agent.stats.snapshot();
    measured.refusals = agent.first_refusals();
    measured.refused_only_looks = agent.refused_only_looks();
    measured.log_dropped = agent.finish_log();
    // What the agent did for the sandbox is the sandbox's time (report: `agent-cpu`).
    measured.cpu += measured.agent.cpu;
    measured.agent_budget = Some(agent.budget);
    measured.sockets = agent.sockets_peak();
}

/// The exit status of a run that ended with `outcome`, or the failure that says why the
/// program `program` never ran.
fn status(outcome: Outcome, program: &Path) -> Result<i32, Failure> {
    match outcome {
        Outcome::Exited(code) => Ok(code),
        Outcome::Signaled(sig) => Ok(128 + sig),
        Outcome::Failed(Stage::Exec, errno) => {
            let e = std::io::Error::from_raw_os_error(errno);
            let status = if errno == libc::ENOENT {
                EXIT_NOT_FOUND
            } else {
                EXIT_CANNOT_EXEC
            };
            let hint = if errno == libc::EACCES {
                " (the policy must allow exec of the program, of its interpreter and of the dynamic \
                 loader, e.g. /lib64/ld-linux-x86-64.so.2 via the /lib64 symlink; -v names the denied path)"
            } else {
                ""
            };
            Err(failure(
                status,
                format!("cannot run {}: {e}{hint}", program.display()),
            ))
        }
        Outcome::Failed(Stage::View, errno) => Err(view_failure(format!(
            "building the sandbox's view failed: {}",
            std::io::Error::from_raw_os_error(errno)
        ))),
        Outcome::Failed(stage, errno) => Err(failure(
            EXIT_WARDEN,
            format!(
                "the sandbox could not be set up ({stage:?}): {}",
                std::io::Error::from_raw_os_error(errno)
            ),
        )),
        Outcome::Lost => Err(failure(
            EXIT_WARDEN,
            "the sandbox's init was killed from outside",
        )),
    }
}

/// A failure to build the view, before anything of the program ran (it waits for the view
/// before its exec): [`super::run`] may run it again without a view.
fn view_failure(message: String) -> Failure {
    Failure {
        view_failed: true,
        ..failure(EXIT_WARDEN, message)
    }
}

fn launch_failure(e: &LaunchError, cmd: &Command) -> Failure {
    match e {
        LaunchError::Setup {
            stage: Stage::View,
            detail,
            source,
        } => view_failure(if detail.is_empty() {
            format!("building the sandbox's view failed: {source}")
        } else {
            format!("building the sandbox's view failed: {detail}: {source}")
        }),
        LaunchError::Setup {
            stage: Stage::Chdir,
            source,
            ..
        } => failure(
            EXIT_WARDEN,
            format!(
                "cannot enter the starting directory {}: {source}{}",
                warden_policy::escape::escape(cmd.cwd.as_os_str().as_encoded_bytes()),
                if cmd.view.is_some() && source.raw_os_error() == Some(libc::ENOENT) {
                    " (the sandbox's view holds only what the policy allows: add a rule for \
                     it, or start elsewhere with --chdir)"
                } else {
                    ""
                }
            ),
        ),
        // A supervisor's listener above warden (warden inside warden, or under another
        // sandbox that uses seccomp user notification): the kernel allows one listener per
        // filter chain, so the agent cannot exist here, whatever the mode.
        LaunchError::Setup {
            stage: Stage::Seccomp,
            source,
            ..
        } if source.raw_os_error() == Some(libc::EBUSY) => failure(
            EXIT_WARDEN,
            format!(
                "cannot start the sandbox's agent: another supervisor's seccomp listener is \
                 above warden ({}; warden inside warden, or another sandbox that uses seccomp \
                 user notification), and the kernel allows one per process; run warden outside \
                 it (`warden doctor` says what this host gives)",
                filters_above()
            ),
        ),
        // The namespaces refused by a seccomp filter above warden (warden's own, when warden
        // runs inside warden; a container's profile), not by the host's sysctls.
        LaunchError::Clone(source)
            if source.raw_os_error() == Some(libc::EPERM)
                && crate::host::seccomp_filters_above().is_some_and(|n| n > 0) =>
        {
            failure(
                EXIT_WARDEN,
                format!(
                    "cannot create the sandbox's namespaces: a seccomp filter above warden \
                     refuses them ({}; warden inside warden, or a container whose seccomp \
                     profile refuses user namespaces); run warden outside it, or see `warden \
                     doctor` for the container's flags",
                    filters_above()
                ),
            )
        }
        other => failure(EXIT_WARDEN, other.to_string()),
    }
}

/// "N seccomp filters above it", from `/proc/self/status`.
fn filters_above() -> String {
    match crate::host::seccomp_filters_above() {
        Some(1) => "1 seccomp filter is installed above it".to_owned(),
        Some(n) => format!("{n} seccomp filters are installed above it"),
        None => "a seccomp filter is installed above it".to_owned(),
    }
}
