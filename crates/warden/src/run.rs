//! `warden run`: everything between a parsed command line and the program's exit status.

use crate::agent::{log::Log, Agent};
use crate::confine::landlock;
use crate::confine::namespaces::IdMap;
use crate::filter;
use crate::launch::{self, Command, LaunchError, Outcome, Stage};
use crate::limits::cgroup::{self, Cgroup, CgroupLimits};
use crate::limits::output::{Budget, Capture};
use crate::limits::{self, CpuSource, KillReason, NamespaceCpu, Verdicts};
use crate::report::{self, Accounting, Measured};
use crate::syscalls::Opens;
use rustix::thread::CpuSet;
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use warden_policy::{Access, Limits, Policy};

/// Exit status for warden's own failures (bad usage, bad policy, no sandbox).
pub const EXIT_WARDEN: i32 = 125;
/// Exit status when the program was found but could not be executed.
pub const EXIT_CANNOT_EXEC: i32 = 126;
/// Exit status when the program was not found.
pub const EXIT_NOT_FOUND: i32 = 127;

/// Everything `warden run` needs.
#[derive(Default)]
pub struct RunConfig {
    /// The policy, `$SCRATCH` not yet expanded; its `limits` are the run's limits.
    pub policy: Policy,
    /// The program as given (a name looked up on PATH, or a path).
    pub program: String,
    /// Its arguments (argv[1..]).
    pub args: Vec<String>,
    /// Keep the scratch directory afterwards.
    pub keep: bool,
    /// Report denials on stderr.
    pub verbose: bool,
    /// JSON-lines log of every decision.
    pub log: Option<PathBuf>,
    /// Files for the program's stdin, stdout and stderr, opened by warden.
    pub stdio: [Option<PathBuf>; 3],
    /// The environment.
    pub env: EnvConfig,
    /// Starting directory (overrides the policy's `starting_dir`).
    pub chdir: Option<PathBuf>,
    /// CPUs to run the sandbox on.
    pub cpus: Option<Vec<usize>>,
    /// Descriptors of warden's the program keeps (3 and up).
    pub pass_fds: Vec<i32>,
    /// Where to write the `key:value` run report.
    pub report: Option<PathBuf>,
    /// Where to write the JSON run report.
    pub report_json: Option<PathBuf>,
    /// Told the scratch directory's path once it exists (`warden learn` reads the log with it).
    pub scratch_seen: Option<std::sync::Arc<std::sync::OnceLock<PathBuf>>>,
    /// Every decision also goes here, as JSON lines (for `warden learn`).
    pub log_memory: Option<std::sync::Arc<std::sync::Mutex<String>>>,
    /// Whether opens may go straight to the kernel.
    pub fast_path: FastPath,
    /// Whether the sandbox gets a file system view of its own (`warden run --view`).
    pub view: ViewMode,
    /// Keep warden's controlling terminal in the sandbox (`--tty`): `/dev/tty` then reaches the
    /// terminal, uncounted by the output limit. Otherwise the sandbox has no controlling
    /// terminal and `/dev/tty` is `ENXIO`.
    pub terminal: bool,
}

/// `warden run --view`: whether the sandbox sees a file system built from the policy (a mount
/// namespace holding only what the policy allows), or the host's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ViewMode {
    /// A view of its own where the kernel can build one (the new mount API, Linux 5.2+), the
    /// host's tree elsewhere.
    Auto,
    /// A view of its own, or no run.
    On,
    /// The host's tree; the agent and Landlock decide every path.
    #[default]
    Off,
}

/// The view `policy` (`$SCRATCH` expanded) gets under `cfg`, planned from the host as it is now.
fn view_for(cfg: &RunConfig, policy: &Policy) -> Option<warden_policy::view::ViewPlan> {
    if cfg.view == ViewMode::Off {
        return None;
    }
    if cfg.view == ViewMode::Auto && !crate::confine::view::supported() {
        if cfg.verbose {
            eprintln!(
                "warden: this kernel has no new mount API (fsopen, open_tree): the sandbox sees \
                 the host's tree, and the agent decides every path"
            );
        }
        return None;
    }
    let plan = warden_policy::view::view_plan(policy, &crate::confine::view::HostFs);
    if cfg.verbose {
        eprintln!(
            "warden: the sandbox's view: {} mount steps from the policy",
            plan.steps.len()
        );
        for step in &plan.steps {
            eprintln!("warden: view: {step}");
        }
        for (id, note) in &plan.notes {
            let rule = policy.rule(*id);
            eprintln!("warden: view: {}: {rule}: {note}", rule.span);
        }
    }
    Some(plan)
}

/// The starting directory when neither `--chdir` nor the policy names one: warden's own, or,
/// when the sandbox's view does not hold it, the view's root (a program started where it
/// cannot be would fail every relative path).
fn implicit_cwd(
    cfg: &RunConfig,
    view: Option<&warden_policy::view::ViewPlan>,
) -> Result<PathBuf, Failure> {
    let here = std::env::current_dir().map_err(|e| {
        failure(
            EXIT_WARDEN,
            format!("cannot read the current directory: {e}"),
        )
    })?;
    match (view, here.to_str()) {
        (Some(v), Some(text)) if !v.holds(text) => {
            if cfg.verbose {
                eprintln!(
                    "warden: {} is not in the sandbox's view (no rule allows it): starting in /",
                    warden_policy::escape::escape(text)
                );
            }
            Ok(PathBuf::from("/"))
        }
        _ => Ok(here),
    }
}

/// Whether the program starts with a descriptor of a directory (its stdio or a `--pass-fd`):
/// one of the host's tree, outside its view, from which `fstatat` and the other calls a view
/// lets the kernel answer would look at what the view hides. Opens stay Landlock's either way.
fn inherits_a_directory(cmd: &Command) -> bool {
    let own = std::process::id();
    let numbers = (0..3)
        .filter(|i| cmd.stdio[*i as usize].is_none())
        .chain(cmd.pass_fds.iter().copied());
    let replaced = cmd
        .stdio
        .iter()
        .flatten()
        .map(std::os::fd::AsRawFd::as_raw_fd);
    numbers.chain(replaced).any(|n| {
        rustix::fs::stat(format!("/proc/{own}/fd/{n}")).is_ok_and(|st| {
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory
        })
    })
}

/// `warden run --fast-path`: who decides opens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FastPath {
    /// The kernel when Landlock can enforce every path rule exactly and no decision log is
    /// asked for; the agent otherwise.
    Auto,
    /// The kernel, or refuse to start and say which rules prevent it.
    Always,
    /// The agent, always (the default: the agent hides whether a path exists; the kernel's
    /// ENOENT/EACCES on an open does not).
    #[default]
    Never,
}

/// Decides who handles opens for `policy` (`$SCRATCH` expanded), and says why with `-v`.
/// In a view (`view`), the kernel also answers the calls that only look (stat, access,
/// readlink) and chdir ([`Opens::View`]) unless the program inherits a directory of the host's
/// tree (`lookers` false: those calls relative to it would see past the view), and `-v` keeps
/// every call with the agent, which is the one that can say which rule decided.
fn choose_opens(
    cfg: &RunConfig,
    policy: &Policy,
    view: bool,
    lookers: bool,
) -> Result<Opens, Failure> {
    if cfg.fast_path == FastPath::Never {
        return Ok(Opens::Agent);
    }
    let logged = cfg.log.is_some() || cfg.log_memory.is_some();
    // The cheap reasons first: the plan looks at every rule's path on disk.
    let why_not: Option<String> = if logged && cfg.fast_path == FastPath::Auto {
        Some("--log asks for every decision, and only the agent sees them all".into())
    } else if view && cfg.verbose && cfg.fast_path == FastPath::Auto {
        Some("-v names the rule behind every denial, and only the agent sees them all".into())
    } else if !landlock::enforces_everything() {
        Some("this kernel's Landlock does not enforce every right warden uses".into())
    } else {
        let plan = if view {
            warden_policy::kernel::kernel_plan_in_view(policy, &landlock::found)
        } else {
            warden_policy::kernel::kernel_plan(policy, &landlock::found)
        };
        (!plan.exact()).then(|| {
            let mut text = String::from("Landlock cannot enforce every path rule exactly:");
            for (id, why) in plan.blockers() {
                let rule = policy.rule(id);
                text.push_str(&format!("\n  {}: {rule}: {why}", rule.span));
            }
            text
        })
    };
    match (why_not, cfg.fast_path) {
        (None, _) => {
            if cfg.verbose {
                eprintln!(
                    "warden: opens go straight to the kernel: Landlock enforces every path rule \
                     exactly (--fast-path=never to delegate them)"
                );
            }
            if logged {
                eprintln!(
                    "warden: --log: opens are decided by the kernel (--fast-path=always) and are \
                     not in the log; every other decision is"
                );
            }
            if view && !lookers && cfg.verbose {
                eprintln!(
                    "warden: the program inherits a directory of the host's tree: stat, access, \
                     readlink and chdir stay with the agent"
                );
            }
            Ok(if view && lookers {
                Opens::View
            } else {
                Opens::Kernel
            })
        }
        (Some(why), FastPath::Always) => {
            Err(failure(EXIT_WARDEN, format!("--fast-path=always: {why}")))
        }
        (Some(why), _) => {
            if cfg.verbose && cfg.fast_path == FastPath::Auto {
                eprintln!("warden: opens are delegated to the agent: {why}");
            }
            Ok(Opens::Agent)
        }
    }
}

/// The program's environment.
#[derive(Clone, Debug, Default)]
pub struct EnvConfig {
    /// Start from a minimal environment (PATH, HOME, TMPDIR) instead of warden's.
    pub clear: bool,
    /// Variables to set, in order: `(NAME, Some(VALUE))`, or `(NAME, None)` to copy warden's.
    pub set: Vec<(String, Option<String>)>,
}

/// The PATH of a cleared environment.
pub const MINIMAL_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A user-facing failure: one sentence and the exit status that goes with it.
#[derive(Debug)]
pub struct Failure {
    /// 125, 126 or 127.
    pub status: i32,
    /// The sentence.
    pub message: String,
}

fn failure(status: i32, message: impl Into<String>) -> Failure {
    Failure {
        status,
        message: message.into(),
    }
}

/// Runs the program and returns its exit status (128+N for signal N). Writes the run report if
/// one was asked for, also when the program could not be run.
pub fn run(cfg: RunConfig) -> Result<i32, Failure> {
    // Before warden opens anything itself, so a passed number is one warden inherited.
    check_pass_fds(&cfg.pass_fds)?;
    let reports = Reports::open(&cfg)?;
    let euid = rustix::process::geteuid().as_raw();
    let egid = rustix::process::getegid().as_raw();
    let root = euid == 0;
    let ids = IdMap {
        inside_uid: cfg.policy.starting_uid.unwrap_or(euid),
        outside_uid: if root {
            cfg.policy.starting_uid.unwrap_or(0)
        } else {
            euid
        },
        inside_gid: cfg.policy.starting_gid.unwrap_or(egid),
        outside_gid: if root {
            cfg.policy.starting_gid.unwrap_or(0)
        } else {
            egid
        },
        // root keeps every id as it is; root with starting ids becomes them before building the
        // sandbox (below), which is then the same single-id case as any unprivileged user.
        identity: root
            && cfg.policy.starting_uid.unwrap_or(0) == 0
            && cfg.policy.starting_gid.unwrap_or(0) == 0,
        range: None,
    };
    let ids = with_id_range(ids, &cfg.policy)?;
    let mut measured = Measured::default();
    let result = match cfg.policy.uses_scratch() {
        true => Scratch::create(ids, cfg.keep).and_then(|s| {
            if let Some(seen) = &cfg.scratch_seen {
                let _ = seen.set(s.path.clone());
            }
            let result = run_in(&cfg, ids, Some(&s), &mut measured);
            if cfg.keep {
                eprintln!("warden: kept the scratch directory {}", s.path.display());
                s.keep();
            } else {
                s.remove();
            }
            result
        }),
        false => run_in(&cfg, ids, None, &mut measured),
    };
    if let Err(f) = &result {
        measured.failure = Some(f.message.clone());
    }
    reports.write(&measured, &cfg.policy.limits)?;
    result
}

/// The report files, created before the run so a bad path fails before the program runs.
struct Reports {
    meta: Option<(PathBuf, std::fs::File)>,
    json: Option<(PathBuf, std::fs::File)>,
}

impl Reports {
    fn open(cfg: &RunConfig) -> Result<Reports, Failure> {
        let open = |p: &Option<PathBuf>| -> Result<Option<(PathBuf, std::fs::File)>, Failure> {
            let Some(p) = p else { return Ok(None) };
            std::fs::File::create(p)
                .map(|f| Some((p.clone(), f)))
                .map_err(|e| {
                    failure(
                        EXIT_WARDEN,
                        format!("cannot create the report {}: {e}", p.display()),
                    )
                })
        };
        Ok(Reports {
            meta: open(&cfg.report)?,
            json: open(&cfg.report_json)?,
        })
    }

    fn write(self, m: &Measured, limits: &Limits) -> Result<(), Failure> {
        use std::io::Write;
        let entries = |format| report::entries(m, limits, format);
        for (file, text) in [
            (self.meta, report::to_meta(&entries(report::Format::Meta))),
            (self.json, report::to_json(&entries(report::Format::Json))),
        ] {
            if let Some((path, mut f)) = file {
                f.write_all(text.as_bytes()).map_err(|e| {
                    failure(
                        EXIT_WARDEN,
                        format!("cannot write the report {}: {e}", path.display()),
                    )
                })?;
            }
        }
        Ok(())
    }
}

fn run_in(
    cfg: &RunConfig,
    ids: IdMap,
    scratch: Option<&Scratch>,
    measured: &mut Measured,
) -> Result<i32, Failure> {
    let policy = match scratch {
        Some(s) => cfg.policy.expand_scratch(
            s.path
                .to_str()
                .ok_or_else(|| failure(EXIT_WARDEN, "scratch path is not UTF-8"))?,
        ),
        None => cfg.policy.clone(),
    };
    let limits = policy.limits;
    // Before anything looks at what exists (the view's plan, the fast path's, the Landlock
    // rules).
    if let Some(s) = scratch {
        make_exec_dirs(&policy, s, ids)?;
    }
    let view = view_for(cfg, &policy);
    let cwd = match (&cfg.chdir, &policy.starting_dir) {
        (Some(dir), _) => std::path::absolute(dir).unwrap_or_else(|_| dir.clone()),
        (None, Some((dir, _))) => PathBuf::from(dir),
        (None, None) => implicit_cwd(cfg, view.as_ref())?,
    };
    let env = environment(&cfg.env, scratch, &policy, &cwd)?;
    // Looked up as the program's own execvp would: on the sandbox's PATH, from its directory,
    // past what the policy does not let it run.
    let search = env
        .iter()
        .find_map(|kv| kv.as_bytes().strip_prefix(b"PATH="))
        .map_or_else(
            || std::ffi::OsString::from(MINIMAL_PATH),
            |v| std::ffi::OsStr::from_bytes(v).to_owned(),
        );
    let program = find_program(&cfg.program, &search, &cwd, &policy)?;
    let cstr = |s: &str| {
        CString::new(s).map_err(|_| failure(EXIT_WARDEN, "arguments may not contain NUL bytes"))
    };
    let mut argv = vec![cstr(&cfg.program)?];
    for a in &cfg.args {
        argv.push(cstr(a)?);
    }
    let (stdio, mut captures) = stdio(cfg, limits.output)?;
    let cpus = cfg.cpus.as_deref().map(cpu_set).transpose()?;

    // The cgroup, when the run needs the whole sandbox counted or bounded.
    let cgroup = if limits.mem.is_some()
        || limits.processes.is_some()
        || limits.time.is_some()
        || cfg.report.is_some()
        || cfg.report_json.is_some()
    {
        let wanted = CgroupLimits {
            memory: limits.mem,
            tasks: limits.processes.map(|n| n + 1),
        };
        Cgroup::create(wanted)
            .map_err(|e| {
                failure(
                    EXIT_WARDEN,
                    format!("cannot set up the sandbox's cgroup: {e}"),
                )
            })?
            .map(Arc::new)
    } else {
        None
    };
    measured.accounting = match cgroup.as_ref().map(|c| c.version()) {
        Some(cgroup::Version::V2) => Accounting::CgroupV2,
        Some(cgroup::Version::V1) => Accounting::CgroupV1,
        None => Accounting::Rusage,
    };
    if cgroup.is_none() && limits.processes.is_some() && ids.outside_uid == 0 {
        // RLIMIT_NPROC does not bind uid 0, and without a pids cgroup nothing else would.
        return Err(failure(
            EXIT_WARDEN,
            "--processes needs a pids cgroup when the sandbox runs as root, and none is usable \
             here; run as another user (starting_uid) or give warden a cgroup",
        ));
    }

    let mut command = Command {
        program: CString::new(program.as_os_str().as_encoded_bytes())
            .map_err(|_| failure(EXIT_WARDEN, "bad program path"))?,
        argv,
        env,
        cwd,
        ids,
        stdio,
        pass_fds: cfg.pass_fds.clone(),
        rlimits: limits::rlimits(&limits, cgroup.is_some()),
        cpus,
        keep_terminal: cfg.terminal,
        view,
    };
    let log_file = match &cfg.log {
        Some(p) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| {
                    failure(
                        EXIT_WARDEN,
                        format!("cannot open the log {}: {e}", p.display()),
                    )
                })?,
        ),
        None => None,
    };
    let lookers = !inherits_a_directory(&command);
    let opens = choose_opens(cfg, &policy, command.view.is_some(), lookers)?;
    let mut ruleset =
        landlock::prepare(&policy).map_err(|e| failure(EXIT_WARDEN, e.to_string()))?;
    ruleset.required = opens != Opens::Agent;
    let exec_rules = ruleset.exec.clone();
    let net = crate::agent::net::Context::new(&policy)
        .map_err(|e| failure(EXIT_WARDEN, e.to_string()))?;
    let profile = crate::syscalls::Profile {
        network: net.mode,
        ptrace_inside: policy.ptrace_inside.is_some(),
        opens,
    };
    let program_filter = filter::program(profile);

    // Signals that end warden end the sandbox: block them now (the sandbox unblocks them before
    // exec), and take them synchronously on a thread once the sandbox exists.
    let stop = [
        rustix::process::Signal::INT,
        rustix::process::Signal::TERM,
        rustix::process::Signal::HUP,
        rustix::process::Signal::QUIT,
    ];
    crate::sys::signals::block(&stop);
    if rustix::process::geteuid().is_root() && !ids.identity {
        // root with starting_uid/starting_gid: become those ids first, so the sandbox's user
        // namespace belongs to them and the agent acts with exactly the program's credentials.
        crate::sys::process::become_ids(ids.outside_uid, ids.outside_gid).map_err(|e| {
            let (u, g) = (ids.outside_uid, ids.outside_gid);
            failure(
                EXIT_WARDEN,
                format!("cannot switch to uid {u} gid {g}: {e}"),
            )
        })?;
    }
    let attach = |pid: i32| match &cgroup {
        Some(cg) => cg.attach(pid),
        None => Ok(()),
    };
    let started = Instant::now();
    let launched = launch::launch(&command, ruleset, program_filter, &attach);
    // The program has its own copies of its stdio now; ours would keep captured pipes open.
    command.stdio = Default::default();
    let launched = Arc::new(launched.map_err(|e| launch_failure(&e, &command))?);

    let listener = launched
        .listener
        .try_clone()
        .map_err(|e| failure(EXIT_WARDEN, e.to_string()))?;
    let sandbox_id = format!("{}-{:08x}", std::process::id(), rand32());
    let sources = policy.sources();
    let log = Log::new(cfg.verbose, log_file, sandbox_id.clone())
        .with_memory(cfg.log_memory.clone())
        .with_scratch(scratch.and_then(|s| s.path.to_str()).map(str::to_owned));
    let agent_net_mode = net.mode;
    let view_root =
        match command.view {
            Some(_) => Some(launched.program_root().map_err(|e| {
                failure(EXIT_WARDEN, format!("cannot open the sandbox's view: {e}"))
            })?),
            None => None,
        };
    let confinement = crate::agent::Confinement {
        view_root,
        exec_rules,
    };
    let agent = Agent::new(listener, policy, net, ids, log, cfg.terminal, confinement)
        .map_err(|e| failure(EXIT_WARDEN, e.to_string()))?;
    if let Some(tasks) = cgroup.as_ref().and_then(|cg| cg.memory_tasks()) {
        agent.charge_workers_to(tasks);
    }
    agent.start();
    // `warden ps` and `warden inspect` find the sandbox here; without a registry directory they
    // just do not see it.
    let _registration = crate::registry::own_dir().ok().map(|dir| {
        let entry = crate::registry::Entry {
            id: sandbox_id,
            warden_pid: std::process::id(),
            init_pid: launched.init_pid as u32,
            uid: rustix::process::getuid().as_raw(),
            command: std::iter::once(cfg.program.clone())
                .chain(cfg.args.iter().cloned())
                .collect(),
            started: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
            policies: sources,
            network: match agent_net_mode {
                crate::syscalls::Network::Private => "private".into(),
                crate::syscalls::Network::Host { .. } => "host".into(),
            },
            mode: "delegated".into(),
            ..Default::default()
        };
        let a = Arc::clone(&agent);
        crate::registry::Registration::start(&dir, entry, Arc::clone(&agent.grants), move || {
            let s = a.stats.snapshot();
            (s.total, s.denied)
        })
    });

    let verdicts = Arc::new(Verdicts::default());
    let copiers = captures.start(&launched, &verdicts)?;
    if limits.time.is_some() || limits.wall_time.is_some() {
        let cpu = match &cgroup {
            Some(cg) => CpuSource::Cgroup(Arc::clone(cg)),
            None => match NamespaceCpu::new(launched.init_pid) {
                Ok(ns) => CpuSource::Procfs(ns),
                Err(e) => {
                    launched.kill();
                    launched.reap();
                    return Err(failure(
                        EXIT_WARDEN,
                        format!("cannot watch the sandbox's CPU time: {e}"),
                    ));
                }
            },
        };
        let a = Arc::clone(&agent);
        limits::watch_time(
            &limits,
            cpu,
            Arc::new(move || a.stats.cpu()),
            started,
            Arc::clone(&launched),
            Arc::clone(&verdicts),
        );
    }

    let caught = Arc::new(AtomicI32::new(0));
    {
        let (launched, caught) = (Arc::clone(&launched), Arc::clone(&caught));
        std::thread::spawn(move || {
            let sig = crate::sys::signals::wait(&stop);
            caught.store(sig, Ordering::SeqCst);
            launched.kill();
        });
    }
    let outcome = launched.wait();
    measured.wall = started.elapsed();
    measured.exceeded = verdicts.close();
    // Killing init for a limit kills the program with it, by SIGKILL; init has no time to say so.
    let outcome = match (outcome, measured.exceeded) {
        (Outcome::Lost, Some(_)) => Outcome::Signaled(libc::SIGKILL),
        (o, _) => o,
    };
    // A program that had ended on its own before the kill landed was not killed by it.
    measured.killed = measured.exceeded.is_some() && outcome == Outcome::Signaled(libc::SIGKILL);
    launched.kill();
    let usage = launched.reap();
    // Requests of callers that died mid-call finish before anything is cleaned up.
    agent.quiesce(Duration::from_secs(2));
    for c in copiers {
        let _ = c.join();
    }
    if captures.exceeded() && measured.exceeded.is_none() {
        measured.exceeded = Some(KillReason::Output);
    }
    measured.outcome = Some(outcome);
    measured.output = captures.used();
    if let Some(u) = usage {
        let tv = |t: libc::timeval| {
            Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
        };
        measured.cpu = tv(u.ru_utime) + tv(u.ru_stime);
        measured.max_rss_kib = u.ru_maxrss as u64;
        measured.csw_voluntary = u.ru_nvcsw as u64;
        measured.csw_forced = u.ru_nivcsw as u64;
    }
    if let Some(cg) = &cgroup {
        if let Some(cpu) = cg.cpu_time() {
            measured.cpu = cpu;
        }
        measured.cgroup_peak = cg.peak_memory();
        measured.oom_kills = cg.oom_kills();
        cg.remove();
    }
    measured.agent = agent.stats.snapshot();
    // What the agent did for the sandbox is the sandbox's time (report: `agent-cpu`).
    measured.cpu += measured.agent.cpu;
    measured.agent_mem_kib = crate::sys::process::peak_rss_kib();
    measured.agent_budget = Some(agent.budget);
    measured.sockets = agent.sockets_peak();
    if let sig @ 1.. = caught.load(Ordering::SeqCst) {
        return Ok(128 + sig);
    }
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

/// The program's environment: warden's own (or a minimal one), `TMPDIR` pointing at the
/// scratch directory, `PWD` at the directory the program starts in and no `OLDPWD` (never
/// warden's own, which a shell would otherwise look at first; a minimal environment has
/// neither), `HOME` at the scratch directory when the policy does not let the program write in
/// warden's `HOME`, then the `--env` settings in order.
fn environment(
    cfg: &EnvConfig,
    scratch: Option<&Scratch>,
    policy: &Policy,
    cwd: &Path,
) -> Result<Vec<CString>, Failure> {
    use std::ffi::{OsStr, OsString};
    let mut vars: Vec<(OsString, OsString)> = if cfg.clear {
        let home = scratch.map_or_else(|| OsString::from("/"), |s| s.path.clone().into());
        vec![("PATH".into(), MINIMAL_PATH.into()), ("HOME".into(), home)]
    } else {
        std::env::vars_os().collect()
    };
    let put = |vars: &mut Vec<(OsString, OsString)>, k: &OsStr, v: Option<OsString>| {
        vars.retain(|(name, _)| name != k);
        if let Some(v) = v {
            vars.push((k.to_owned(), v));
        }
    };
    if let Some(s) = scratch {
        // Temporary files go to the scratch directory, the one place the program can write.
        put(&mut vars, OsStr::new("TMPDIR"), Some(s.path.clone().into()));
        // A HOME the program may not write in makes every tool that keeps a cache or a
        // history there fail (and `learn` learn the host's home); the scratch directory is
        // the one the program has.
        let home = vars
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| v.clone());
        let usable = home.as_ref().and_then(|h| h.to_str()).is_some_and(|h| {
            let probe = format!("{}/.warden-home-probe", h.trim_end_matches('/'));
            policy.check(&probe, Access::Write).is_allowed()
        });
        if !usable {
            put(&mut vars, OsStr::new("HOME"), Some(s.path.clone().into()));
        }
    }
    if !cfg.clear {
        // warden's own PWD and OLDPWD (a shell looks at both when it starts) are not the
        // program's; a minimal environment has neither.
        put(
            &mut vars,
            OsStr::new("PWD"),
            Some(cwd.as_os_str().to_owned()),
        );
        put(&mut vars, OsStr::new("OLDPWD"), None);
    }
    for (name, value) in &cfg.set {
        let value = match value {
            Some(v) => Some(OsString::from(v)),
            None => std::env::var_os(name),
        };
        put(&mut vars, OsStr::new(name), value);
    }
    vars.into_iter()
        .map(|(k, v)| {
            let mut kv = k.into_encoded_bytes();
            kv.push(b'=');
            kv.extend(v.into_encoded_bytes());
            CString::new(kv).map_err(|_| {
                failure(
                    EXIT_WARDEN,
                    "environment variables may not contain NUL bytes",
                )
            })
        })
        .collect()
}

/// The program's stdout and stderr when `--output-limit` routes them through warden.
struct Captures {
    pipes: Vec<(Capture, std::fs::File)>,
    budget: Option<Arc<Budget>>,
}

impl Captures {
    /// Starts the copiers; join them once the sandbox is gone.
    fn start(
        &mut self,
        launched: &Arc<launch::Launched>,
        verdicts: &Arc<Verdicts>,
    ) -> Result<Vec<std::thread::JoinHandle<()>>, Failure> {
        let Some(budget) = &self.budget else {
            return Ok(Vec::new());
        };
        std::mem::take(&mut self.pipes)
            .into_iter()
            .map(|(capture, dest)| {
                capture
                    .start(
                        dest,
                        Arc::clone(budget),
                        Arc::clone(launched),
                        Arc::clone(verdicts),
                    )
                    .map_err(|e| failure(EXIT_WARDEN, format!("cannot copy the output: {e}")))
            })
            .collect()
    }

    fn used(&self) -> Option<u64> {
        self.budget.as_ref().map(|b| b.used())
    }

    fn exceeded(&self) -> bool {
        self.budget.as_ref().is_some_and(|b| b.exceeded())
    }
}

/// Opens `--stdin`, `--stdout` and `--stderr` (as warden, outside the policy), and with an
/// output limit puts pipes between the program and its stdout and stderr.
fn stdio(
    cfg: &RunConfig,
    output_limit: Option<u64>,
) -> Result<([Option<OwnedFd>; 3], Captures), Failure> {
    use std::fs::{File, OpenOptions};
    let cannot = |what: &str, p: &std::path::Path, e: std::io::Error| {
        failure(
            EXIT_WARDEN,
            format!("cannot open {what} {}: {e}", p.display()),
        )
    };
    let mut files: [Option<File>; 3] = [None, None, None];
    if let Some(p) = &cfg.stdio[0] {
        files[0] = Some(File::open(p).map_err(|e| cannot("--stdin", p, e))?);
    }
    for (i, what) in [(1, "--stdout"), (2, "--stderr")] {
        let Some(p) = &cfg.stdio[i] else { continue };
        // The same file for both: one open file, so the two streams do not overwrite each other.
        if i == 2 && cfg.stdio[1].as_ref() == Some(p) {
            if let Some(out) = &files[1] {
                files[2] = Some(out.try_clone().map_err(|e| cannot(what, p, e))?);
                continue;
            }
        }
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(p)
            .map_err(|e| cannot(what, p, e))?;
        files[i] = Some(f);
    }
    let mut captures = Captures {
        pipes: Vec::new(),
        budget: output_limit.map(Budget::new),
    };
    if captures.budget.is_some() {
        for (i, slot) in files.iter_mut().enumerate().skip(1) {
            let dest = match slot.take() {
                Some(f) => f,
                None => {
                    let own = if i == 1 {
                        rustix::io::dup(std::io::stdout())
                    } else {
                        rustix::io::dup(std::io::stderr())
                    };
                    std::fs::File::from(own.map_err(|e| {
                        failure(EXIT_WARDEN, format!("cannot capture the output: {e}"))
                    })?)
                }
            };
            let (capture, program_end) = Capture::new()
                .map_err(|e| failure(EXIT_WARDEN, format!("cannot capture the output: {e}")))?;
            *slot = Some(File::from(program_end));
            captures.pipes.push((capture, dest));
        }
    }
    Ok((files.map(|f| f.map(OwnedFd::from)), captures))
}

/// `--pass-fd` numbers: 3 and up (0–2 have their own flags), each open in warden.
fn check_pass_fds(fds: &[i32]) -> Result<(), Failure> {
    for (i, &fd) in fds.iter().enumerate() {
        if fd < 3 {
            return Err(failure(
                EXIT_WARDEN,
                format!(
                    "--pass-fd {fd}: descriptors 0, 1 and 2 are always passed;                      use --stdin, --stdout or --stderr to redirect them"
                ),
            ));
        }
        if !crate::sys::process::fd_is_open(fd) {
            return Err(failure(
                EXIT_WARDEN,
                format!("--pass-fd {fd}: descriptor {fd} is not open in warden"),
            ));
        }
        if fds[..i].contains(&fd) {
            return Err(failure(
                EXIT_WARDEN,
                format!("--pass-fd {fd} is given twice"),
            ));
        }
    }
    Ok(())
}

/// The CPU set for `--cpu`, each CPU one this process may run on.
fn cpu_set(cpus: &[usize]) -> Result<CpuSet, Failure> {
    let allowed = rustix::thread::sched_getaffinity(None)
        .map_err(|e| failure(EXIT_WARDEN, format!("cannot read the CPU affinity: {e}")))?;
    let available: Vec<String> = (0..CpuSet::MAX_CPU)
        .filter(|&c| allowed.is_set(c))
        .map(|c| c.to_string())
        .collect();
    let mut set = CpuSet::new();
    for &cpu in cpus {
        if cpu >= CpuSet::MAX_CPU || !allowed.is_set(cpu) {
            return Err(failure(
                EXIT_WARDEN,
                format!(
                    "--cpu: CPU {cpu} is not available here; warden may use CPUs {}",
                    available.join(",")
                ),
            ));
        }
        set.set(cpu);
    }
    Ok(set)
}

fn launch_failure(e: &LaunchError, cmd: &Command) -> Failure {
    match e {
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
        other => failure(EXIT_WARDEN, other.to_string()),
    }
}

/// Finds the program to run: a name with a `/` is that path; any other is looked up on
/// `search`, the PATH the sandbox will have (relative entries from its directory `cwd`), as the
/// program's own `execvp` would, which goes past a file it is refused (`EACCES`): the first
/// candidate that exists, is executable and that the policy lets run. When none will do, the
/// failure names every path tried and why.
fn find_program(
    name: &str,
    search: &std::ffi::OsStr,
    cwd: &Path,
    policy: &Policy,
) -> Result<PathBuf, Failure> {
    use warden_policy::escape::escape;
    if name.is_empty() {
        return Err(failure(EXIT_NOT_FOUND, "no program given"));
    }
    if name.contains('/') {
        return runnable(Path::new(name), policy)
            .map_err(|(status, why)| failure(status, format!("cannot run {}", why)));
    }
    let mut tried = Vec::new();
    let mut status = EXIT_NOT_FOUND;
    for dir in std::env::split_paths(search) {
        let candidate = cwd.join(dir).join(name);
        if std::fs::symlink_metadata(&candidate).is_err() {
            continue;
        }
        match runnable(&candidate, policy) {
            Ok(p) => return Ok(p),
            Err((s, why)) => {
                status = s;
                tried.push(why);
            }
        }
    }
    let path = escape(search.as_encoded_bytes());
    if tried.is_empty() {
        return Err(failure(
            status,
            format!(
                "{}: command not found on the sandbox's PATH ({path})",
                escape(name)
            ),
        ));
    }
    Err(failure(
        status,
        format!(
            "cannot run {}: tried {} (the sandbox's PATH is {path}; --env PATH=... sets it)",
            escape(name),
            tried.join("; then ")
        ),
    ))
}

/// `path` if it can be run in the sandbox: it exists, is an executable file, and the policy
/// lets it run (its target, and the link itself when it is a symlink, as the agent checks).
/// Otherwise the exit status and "PATH: why".
fn runnable(path: &Path, policy: &Policy) -> Result<PathBuf, (i32, String)> {
    use warden_policy::escape::escape;
    let shown = escape(path.as_os_str().as_encoded_bytes());
    let meta = std::fs::metadata(path).map_err(|e| {
        let status = if e.kind() == std::io::ErrorKind::NotFound {
            EXIT_NOT_FOUND
        } else {
            EXIT_CANNOT_EXEC
        };
        (status, format!("{shown}: {e}"))
    })?;
    if meta.is_dir() || rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_err() {
        return Err((EXIT_CANNOT_EXEC, format!("{shown}: not an executable file")));
    }
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let denied = |why: String| (EXIT_CANNOT_EXEC, format!("{shown}: {}", escape(&why)));
    if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
        let link = std::fs::canonicalize(dir).map(|d| d.join(name));
        let is_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink());
        if let (true, Ok(link)) = (is_link, link) {
            let link = link.to_string_lossy();
            if policy.visible(&link).is_none() {
                return Err(denied(format!(
                    "it is a symlink, and following it needs some right on it; add: \
                     path-allow read {link}"
                )));
            }
        }
    }
    let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    if let Some(real) = real.to_str() {
        if !policy.check(real, Access::Exec).is_allowed() {
            return Err(denied(policy.explain_denial(real, Access::Exec)));
        }
    }
    Ok(path)
}

/// The private scratch directory of one run.
///
/// Next to it, `NAME.lock` (warden's own, never the sandbox's) is held with `flock` for as long
/// as the run lives. A warden killed with SIGKILL cannot remove its directory, but the kernel
/// drops its lock; every later run sweeps the directories whose lock it can take ([`sweep`]).
/// A lock held is a live run, whatever its pid (reused, or in another PID namespace), so a
/// live run's directory is never swept. With `--keep` the lock file says `keep`, and its
/// directory stays even if warden is killed.
struct Scratch {
    path: PathBuf,
    lock: Option<(PathBuf, std::fs::File)>,
}

/// A lock file this young may belong to a run that made it and has not locked it yet.
const SWEEP_AFTER: Duration = Duration::from_secs(10);

impl Scratch {
    fn create(ids: IdMap, keep: bool) -> Result<Scratch, Failure> {
        let base = std::env::var_os("TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        sweep(&base);
        for attempt in 0..16u32 {
            let name = format!("warden-{}-{:08x}", std::process::id(), rand32() ^ attempt);
            let path = base.join(&name);
            // The lock first: while its file exists, no other run takes the name, and a
            // sweeper that finds it unlocked only ever finds it so after the run is gone.
            let lock = match lock_file(&base.join(format!("{name}.lock")), keep) {
                Ok(lock) => Some(lock),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                // A TMPDIR without room for the lock: the run goes on, unswept if killed.
                Err(_) => None,
            };
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    use std::os::unix::fs::PermissionsExt;
                    let scratch = Scratch { path, lock };
                    let _ = std::fs::set_permissions(
                        &scratch.path,
                        std::fs::Permissions::from_mode(0o700),
                    );
                    hand_over(&scratch.path, ids, "the scratch directory")?;
                    let path = std::fs::canonicalize(&scratch.path)
                        .unwrap_or_else(|_| scratch.path.clone());
                    return Ok(Scratch { path, ..scratch });
                }
                Err(e) => {
                    if let Some((p, _)) = &lock {
                        let _ = std::fs::remove_file(p);
                    }
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        continue;
                    }
                    return Err(failure(
                        EXIT_WARDEN,
                        format!(
                            "cannot create a scratch directory in {}: {e}",
                            base.display()
                        ),
                    ));
                }
            }
        }
        Err(failure(
            EXIT_WARDEN,
            "cannot create a unique scratch directory",
        ))
    }

    fn remove(self) {
        // A second try for an entry made while the first ran (an agent worker finishing a
        // dead caller's create after Agent::quiesce gave up on it).
        for _ in 0..3 {
            if std::fs::remove_dir_all(&self.path).is_ok() || !self.path.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // A directory that would not go keeps its (soon unlocked) lock: a later run tries again.
        if !self.path.exists() {
            self.keep();
        }
    }

    /// Leaves the directory for the user: only the lock goes.
    fn keep(self) {
        if let Some((p, _)) = &self.lock {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Creates the lock file `path` (exclusively, mode 0600) and locks it; it says `keep` when the
/// run keeps its directory.
fn lock_file(path: &Path, keep: bool) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
    if keep {
        file.write_all(b"keep\n")?;
    }
    Ok((path.to_path_buf(), file))
}

/// Removes, in `base`, the scratch directories of runs that are gone: each `warden-*.lock` of
/// this user older than [`SWEEP_AFTER`] whose lock can be taken, with the directory of the same
/// name (unless the lock file says `keep`). Taken locks are checked to be on the file that
/// still has the name, so two sweepers never remove anything of a run that came after.
fn sweep(base: &Path) {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    let uid = rustix::process::geteuid().as_raw();
    for entry in entries.flatten().take(4096) {
        let name = entry.file_name();
        let Some(stem) = name
            .to_str()
            .filter(|n| n.starts_with("warden-"))
            .and_then(|n| n.strip_suffix(".lock"))
        else {
            continue;
        };
        let lock = entry.path();
        let fresh = |m: &std::fs::Metadata| {
            m.modified()
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_none_or(|age| age < SWEEP_AFTER)
        };
        let Ok(meta) = std::fs::symlink_metadata(&lock) else {
            continue;
        };
        if !meta.is_file() || meta.uid() != uid || fresh(&meta) {
            continue;
        }
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&lock)
        else {
            continue;
        };
        if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
            continue; // a live run
        }
        let same = file
            .metadata()
            .is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino());
        if !same {
            continue;
        }
        let kept = std::fs::read(&lock).is_ok_and(|t| t.starts_with(b"keep"));
        let dir = base.join(stem);
        if !kept && std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            let _ = std::fs::remove_dir_all(&dir);
        }
        if kept || !dir.exists() {
            let _ = std::fs::remove_file(&lock);
        }
    }
}

/// Makes, in the scratch directory, each directory `D` of an `exec D/*` rule that lies there,
/// before the Landlock ruleset is built: Landlock can give the execute right only to what
/// exists, and a scratch directory starts empty, so `--exec '$SCRATCH/ve/bin/*'` would
/// otherwise allow what the kernel refuses (issue 14). The directories are made as the program
/// would make them (mode 0755, owned by the sandbox's user). Landlock's right stays with the
/// directory made here: one the program removes and makes anew has none (the agent says so).
fn make_exec_dirs(policy: &Policy, scratch: &Scratch, ids: IdMap) -> Result<(), Failure> {
    for rule in policy.path_rules() {
        if rule.access != Some(Access::Exec) || !rule.pattern.is_prefix() {
            continue;
        }
        let Some(dir) = rule.pattern.literal().strip_suffix('/') else {
            continue;
        };
        let Ok(rest) = Path::new(dir).strip_prefix(&scratch.path) else {
            continue;
        };
        let mut at = scratch.path.clone();
        for part in rest.components() {
            at.push(part);
            match std::fs::create_dir(&at) {
                Ok(()) => {
                    use std::os::unix::fs::PermissionsExt;
                    let _ = std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o755));
                    hand_over(&at, ids, &at.display().to_string())?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && at.is_dir() => {}
                Err(e) => {
                    return Err(failure(
                        EXIT_WARDEN,
                        format!("cannot make {} for its exec rule: {e}", at.display()),
                    ))
                }
            }
        }
    }
    Ok(())
}

/// `ids` with the policy's `map-ids` range, when warden may map it: as root, for a program
/// that starts as root (the writer of a map of several lines needs `CAP_SETUID`/`CAP_SETGID`
/// over the namespace's parent, which only root has here; an unprivileged user would need the
/// setuid helpers newuidmap/newgidmap, and warden uses no setuid helper).
fn with_id_range(mut ids: IdMap, policy: &Policy) -> Result<IdMap, Failure> {
    let Some((range, span)) = &policy.map_ids else {
        return Ok(ids);
    };
    if !ids.identity {
        let why = if rustix::process::geteuid().is_root() {
            "it maps more ids only for a program that starts as root (no starting_uid or \
             starting_gid other than 0)"
        } else {
            "only root may map more than its own id into a user namespace; an unprivileged \
             user needs the setuid helpers newuidmap/newgidmap and /etc/subuid, and warden uses \
             no setuid helper. Run the daemon without switching users (for nginx: no `user` \
             line, it then keeps the starting id), or run warden as root"
        };
        return Err(failure(EXIT_WARDEN, format!("{span}: map-ids: {why}")));
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let group = std::fs::read_to_string("/etc/group").unwrap_or_default();
    crate::confine::namespaces::check_range(&ids, *range, &passwd, &group)
        .map_err(|e| failure(EXIT_WARDEN, format!("{span}: {e}")))?;
    ids.range = Some(*range);
    Ok(ids)
}

/// Gives `path`, which warden made, to the sandbox's user when warden is root and the sandbox
/// runs as another one (`what` names it in the error).
fn hand_over(path: &Path, ids: IdMap, what: &str) -> Result<(), Failure> {
    if ids.identity || !rustix::process::geteuid().is_root() {
        return Ok(());
    }
    std::os::unix::fs::chown(path, Some(ids.outside_uid), Some(ids.outside_gid)).map_err(|e| {
        failure(
            EXIT_WARDEN,
            format!("cannot hand {what} to uid {}: {e}", ids.outside_uid),
        )
    })
}

/// A random number, for unique names.
pub fn rand32() -> u32 {
    let mut b = [0u8; 4];
    let _ = rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty());
    u32::from_ne_bytes(b)
}
