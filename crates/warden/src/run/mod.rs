//! `warden run`: everything between a parsed command line and the program's exit status.
//!
//! A run is decided, then made: [`plan::Plan::decide`] turns the command line and the policy
//! into a plan (only looking), and [`execute::execute`] makes it in one place. Around them:
//! the scratch directory ([`scratch`]), the program's stdio ([`stdio`]) and the reports.

mod closing;
mod copies;
mod execute;
mod listeners;
mod plan;
mod scratch;
mod stdio;
mod terminal;

pub use plan::Plan;

use crate::confine::namespaces::IdMap;
use crate::report::{self, Measured};
use scratch::Scratch;
use std::path::PathBuf;
use warden_policy::{Limits, Policy};

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
    /// The most the run writes to `log`, in bytes (`--log-max`; `None`: the default,
    /// [`crate::agent::log::DEFAULT_LOG_BOUND`]).
    pub log_max: Option<u64>,
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
    /// Every decision is also recorded here, typed and bounded (for `warden learn`).
    pub observations: Option<std::sync::Arc<std::sync::Mutex<crate::agent::log::Observations>>>,
    /// Whether opens may go straight to the kernel.
    pub fast_path: FastPath,
    /// Whether the sandbox gets a file system view of its own (`warden run --view`).
    pub view: ViewMode,
    /// Keep warden's controlling terminal in the sandbox (`--tty`): `/dev/tty` then reaches the
    /// terminal, uncounted by the output limit. Otherwise the sandbox has no controlling
    /// terminal, `/dev/tty` is `ENXIO`, and a standard descriptor that would be a terminal is
    /// a pipe warden relays (`terminal`).
    pub terminal: bool,
    /// `--wx`: no memory the program can both write and execute, and none that gains the right
    /// to execute after it is mapped (`launch::Command::deny_exec_memory`).
    pub wx: bool,
    /// `--capability-mode`: the program runs in capability mode holding the objects recorded
    /// here (docs/design.md, section 9); `None`: the policy decides.
    pub capsicum: Option<std::sync::Arc<warden_capsicum::Session>>,
    /// `--require`: what the run must have, or not run (a host that lacks it is refused with
    /// one sentence instead of the degraded mode warden would otherwise choose).
    pub require: Require,
}

/// `warden run --require userns,landlock,view`: the pieces a run must have.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Require {
    /// User namespaces (and so the PID, IPC, UTS and network namespaces): without them, no
    /// run rather than the no-namespace mode (`crate::confine::hostns`).
    pub userns: bool,
    /// Landlock enforcing every right and scope warden uses (ABI 6 and up).
    pub landlock: bool,
    /// The sandbox's own view (as `--view on`).
    pub view: bool,
}

impl Require {
    /// Parses `--require`'s comma list.
    pub fn parse(list: &str) -> Result<Require, String> {
        let mut r = Require::default();
        for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "userns" => r.userns = true,
                "landlock" => r.landlock = true,
                "view" => r.view = true,
                other => {
                    return Err(format!(
                        "--require: unknown piece `{other}` (known: userns, landlock, view)"
                    ))
                }
            }
        }
        Ok(r)
    }
}

/// `warden run --view`: whether the sandbox sees a file system built from the policy (a mount
/// namespace holding only what the policy allows), or the host's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ViewMode {
    /// A view of its own where the kernel can build one (the new mount API, Linux 5.2+), the
    /// host's tree elsewhere (the default).
    #[default]
    Auto,
    /// A view of its own, or no run.
    On,
    /// The host's tree; the agent and Landlock decide every path.
    Off,
}

/// `warden run --fast-path`: who decides opens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FastPath {
    /// [`FastPath::Auto`] in the sandbox's own view, [`FastPath::Never`] on the host's tree
    /// (the default). In a view a path the policy does not name is not there, so the kernel's
    /// answers tell nothing the policy hides; on the host's tree an open's ENOENT or EACCES
    /// would tell whether a hidden path exists, which the agent never does.
    #[default]
    InView,
    /// The kernel when Landlock can enforce every path rule exactly and no decision log is
    /// asked for (in a view, no `-v` either); the agent otherwise.
    Auto,
    /// The kernel, or refuse to start and say which rules prevent it.
    Always,
    /// The agent, always.
    Never,
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
    /// Building the sandbox's view failed, before anything of the program ran.
    view_failed: bool,
}

fn failure(status: i32, message: impl Into<String>) -> Failure {
    Failure {
        status,
        message: message.into(),
        view_failed: false,
    }
}

/// Runs the program and returns how it ended. Writes the run report if one was asked for,
/// also when the program could not be run.
pub fn run(cfg: RunConfig) -> Result<Finished, Failure> {
    let mut session = Session::open(cfg)?;
    session.closing_lines = true;
    let mut result = session.decide().and_then(|d| session.execute(d));
    if let Err(f) = &result {
        if session.without_view_after(f) {
            result = session.decide().and_then(|d| session.execute(d));
        }
    }
    session.close(result)
}

/// A finished run: the program's exit status, and the sandbox's init while its exit goes on.
///
/// When the program has ended, init has reaped every other process of the sandbox and said
/// so; what is left of its exit is the kernel taking its namespaces down, which waits for RCU
/// grace periods (several hundred microseconds, more than the rest of warden's end). Dropping
/// this waits for that and reaps init; [`Finished::exit`] ends warden without waiting, and
/// init's end is the system's reaper's (bubblewrap's ends the same way).
pub struct Finished {
    /// The exit status (128+N for signal N).
    pub status: i32,
    _exiting: Option<crate::launch::Exiting>,
}

impl Finished {
    /// Ends the process with the program's status, not waiting for init's exit.
    pub fn exit(self) -> ! {
        std::process::exit(self.status)
    }
}

/// One run, in the steps every caller takes (`warden run` through [`run`], `warden learn`
/// directly, reading the scratch directory's path on the way): [`Session::open`] makes what
/// the run needs before anything is decided (the report files, the id map, the scratch
/// directory), [`Session::decide`] turns the command line and the policy into a [`Plan`],
/// [`Session::execute`] makes it, and [`Session::close`] removes (or keeps) the scratch
/// directory and writes the reports, whatever became of the run.
pub struct Session {
    cfg: RunConfig,
    ids: IdMap,
    scratch: Option<Scratch>,
    reports: Reports,
    measured: Measured,
    exiting: Option<crate::launch::Exiting>,
    /// warden's terminal as the run found it, put back when it ends.
    terminal: Option<terminal::Saved>,
    /// Whether [`Session::close`] ends the run with its closing lines ([`closing`]):
    /// `warden run`'s, not `warden learn`'s, which says what it learned instead.
    closing_lines: bool,
}

/// What [`Session::decide`] made ready for [`Session::execute`]: the plan, the program's
/// stdio, and the copies the view shows (removed when this is dropped, after the run).
pub struct Decided {
    plan: Plan,
    stdio: [Option<std::os::fd::OwnedFd>; 3],
    captures: stdio::Captures,
    _copies: copies::CopyDir,
}

impl Decided {
    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }
}

impl Session {
    /// Checks the passed descriptors, creates the report files, chooses the id map and makes
    /// the scratch directory (when the policy uses one).
    pub fn open(cfg: RunConfig) -> Result<Session, Failure> {
        // Before warden opens anything itself, so a passed number is one warden inherited.
        check_pass_fds(&cfg.pass_fds)?;
        let reports = Reports::open(&cfg)?;
        let mut cfg = cfg;
        let no_namespaces = match without_namespaces(&mut cfg) {
            Ok(no) => no,
            Err(f) => {
                // The reports say why there was no run.
                let measured = Measured {
                    failure: Some(f.message.clone()),
                    ..Measured::default()
                };
                reports.write(&measured, &cfg.policy.limits)?;
                return Err(f);
            }
        };
        let ids = match &no_namespaces {
            Some(_) => no_namespace_ids(&cfg.policy)?,
            None => plan::with_id_range(id_map(&cfg.policy), &cfg.policy)?,
        };
        let scratch = match cfg.policy.uses_scratch() {
            true => match Scratch::create(ids, cfg.keep, "the scratch directory") {
                Ok(s) => {
                    crate::timings::mark("scratch made");
                    Some(s)
                }
                Err(f) => {
                    // The reports say why there was no run.
                    let measured = Measured {
                        failure: Some(f.message.clone()),
                        ..Measured::default()
                    };
                    reports.write(&measured, &cfg.policy.limits)?;
                    return Err(f);
                }
            },
            false => None,
        };
        Ok(Session {
            cfg,
            ids,
            scratch,
            reports,
            measured: Measured {
                no_namespaces: no_namespaces.map(|n| n.reason),
                ..Measured::default()
            },
            exiting: None,
            terminal: terminal::Saved::take(),
            closing_lines: false,
        })
    }

    /// The run's scratch directory, if the policy uses one.
    pub fn scratch(&self) -> Option<&std::path::Path> {
        self.scratch.as_ref().map(|s| s.path.as_path())
    }

    /// Expands the policy for the scratch directory, makes what must exist before the plan
    /// looks at the host, opens the program's stdio, then decides the run.
    pub fn decide(&mut self) -> Result<Decided, Failure> {
        let (cfg, ids) = (&self.cfg, self.ids);
        let policy = plan::private_tmp(cfg, &cfg.policy);
        let policy = match &self.scratch {
            Some(s) => {
                let path = s
                    .path
                    .to_str()
                    .ok_or_else(|| failure(EXIT_WARDEN, "scratch path is not UTF-8"))?;
                plan::scratch_on_top(policy.expand_scratch(path), path)
            }
            None => policy,
        };
        // Before anything looks at what exists (the view's plan, the fast path's, the Landlock
        // rules).
        if let Some(s) = &self.scratch {
            scratch::make_exec_dirs(&policy, s, ids)?;
        }
        let (stdio, captures) = stdio::open(cfg, policy.limits.output)?;
        crate::timings::mark("stdio");
        let inherits_directory = stdio::inherits_a_directory(&stdio, &cfg.pass_fds);
        let scratch = self.scratch.as_ref().map(|s| s.path.as_path());
        let mut plan = Plan::decide(cfg, policy, ids, scratch, inherits_directory)?;
        if self.measured.no_namespaces.is_some() {
            plan.without_namespaces();
        }
        if cfg.require.view && plan.command.view.is_none() {
            return Err(failure(
                EXIT_WARDEN,
                "--require view: this run would have no view of its own (--view off, or a \
                 kernel without the new mount API)",
            ));
        }
        if !crate::confine::landlock::enforces_exec() {
            use warden_policy::map::{at_or_beneath, MapSource};
            let policy = &plan.policy;
            let in_view = plan.command.view.is_some();
            // A host path `p` the policy lets the program write. In a view, rules beneath a map
            // (the private /tmp, say) are about what the map shows there, not the host's `p`,
            // unless the map shows the host's own path there (the scratch directory).
            let elsewhere = |p: &str| {
                in_view
                    && policy.maps().iter().any(|m| {
                        at_or_beneath(p, &m.sandbox)
                            && m.source != MapSource::Host(m.sandbox.clone())
                    })
            };
            let writable = |p: &str| {
                policy.check(p, warden_policy::Access::Write).is_allowed() && !elsewhere(p)
            };
            let held = stdio::holds_host_object(&stdio, &cfg.pass_fds, &writable);
            let notice = plan::without_landlock(cfg, &plan, held)?;
            eprintln!("{notice}");
            self.measured.no_landlock = Some(
                "this kernel does not enforce Landlock: execve is held by the view's noexec \
                 mounts, every file call by the agent alone"
                    .to_owned(),
            );
        }
        crate::timings::mark("plan");
        let copies =
            copies::CopyDir::for_view(cfg, ids, plan.command.view.as_mut(), &mut self.measured)?;
        Ok(Decided {
            plan,
            stdio,
            captures,
            _copies: copies,
        })
    }

    /// Makes the plan: runs the program to its end and returns its exit status.
    pub fn execute(&mut self, decided: Decided) -> Result<i32, Failure> {
        let Decided {
            plan,
            stdio,
            captures,
            _copies,
        } = decided;
        let path = self.scratch.as_ref().map(|s| s.path.clone());
        let (scratch, keep) = (&mut self.scratch, self.cfg.keep);
        let ran = execute::execute(
            &self.cfg,
            plan,
            stdio,
            captures,
            path.as_deref(),
            &mut self.measured,
            &mut || {
                if !keep {
                    if let Some(s) = scratch.take() {
                        s.remove();
                        crate::timings::mark("scratch removed");
                    }
                }
            },
        )?;
        self.exiting = ran.exiting;
        Ok(ran.status)
    }

    /// Whether the run goes again on the host's tree after `failed`: building the view failed
    /// (the kernel or the file system refused a mount step), which ended that start before
    /// anything of the program ran, and the view was warden's choice (`--view auto`, no
    /// `--require view`) for a policy that does not need one (no `path-map` of the host's
    /// trees). Then the sandbox, its agent, cgroup and copies are gone, and the next
    /// [`Session::decide`] plans the run afresh without a view: Landlock and the agent hold the
    /// program to the same policy. warden says so in one line, and the reports say so too.
    pub fn without_view_after(&mut self, failed: &Failure) -> bool {
        let maps = self
            .cfg
            .policy
            .maps()
            .iter()
            .any(|m| m.source != warden_policy::map::MapSource::Tmpfs);
        if !failed.view_failed || self.cfg.view != ViewMode::Auto || self.cfg.require.view || maps {
            return false;
        }
        self.cfg.view = ViewMode::Off;
        let reason = failed
            .message
            .strip_prefix("building the sandbox's view failed: ")
            .unwrap_or(&failed.message)
            .to_owned();
        eprintln!(
            "warden: the sandbox's own view could not be built here ({reason}): the program \
             runs on the host's tree, where Landlock and the agent hold it to the same policy \
             (--view on or --require view refuses instead)"
        );
        self.measured = Measured {
            no_namespaces: self.measured.no_namespaces.take(),
            view_failed: Some(reason),
            ..Measured::default()
        };
        true
    }

    /// Ends the run whose outcome is `result`: the scratch directory removed (or kept, and
    /// said so), the reports written (with the failure, if the run failed).
    pub fn close(mut self, result: Result<i32, Failure>) -> Result<Finished, Failure> {
        if let Some(t) = &self.terminal {
            t.restore();
        }
        if let Some(s) = self.scratch.take() {
            if self.cfg.keep {
                eprintln!("warden: kept the scratch directory {}", s.path.display());
                s.keep();
            } else {
                s.remove();
            }
            crate::timings::mark("scratch removed");
        }
        if let Err(f) = &result {
            self.measured.failure = Some(f.message.clone());
        }
        // The agent's peak memory (warden's own), once it is quiet, and only for a report:
        // reading /proc/self/status costs some tens of microseconds of every end.
        if self.reports.wanted() && self.measured.agent_budget.is_some() {
            self.measured.agent_mem_kib = crate::sys::process::peak_rss_kib();
        }
        self.reports
            .write(&self.measured, &self.cfg.policy.limits)?;
        if self.closing_lines {
            let asked = closing::Asked {
                verbose: self.cfg.verbose,
                logged: self.cfg.log.is_some(),
            };
            let limits = &self.cfg.policy.limits;
            for line in closing::lines(&self.measured, limits, &self.cfg.program, asked) {
                eprintln!("{line}");
            }
        }
        crate::timings::print();
        result.map(|status| Finished {
            status,
            _exiting: self.exiting.take(),
        })
    }
}

/// warden's ids outside and the program's inside: the policy's starting ids, or the caller's.
/// Whether the run goes without namespaces: the host refuses them
/// ([`crate::confine::hostns::probe`]), and `--require` does not ask for what they give. Then
/// the run has no view (`cfg.view` becomes [`ViewMode::Off`]), and warden says so once.
fn without_namespaces(
    cfg: &mut RunConfig,
) -> Result<Option<crate::confine::hostns::NoNamespaces>, Failure> {
    if cfg.require.landlock
        && !(crate::confine::landlock::enforces_everything()
            && crate::confine::landlock::enforces_scopes())
    {
        let why = if crate::confine::landlock::enforces_exec() {
            "this kernel's Landlock does not enforce every right and scope warden uses (ABI 6 \
             or later is needed)"
        } else {
            "this kernel does not enforce Landlock (not built in, or missing from the lsm= boot \
             list)"
        };
        return Err(failure(EXIT_WARDEN, format!("--require landlock: {why}")));
    }
    let Some(no) = crate::confine::hostns::probe() else {
        return Ok(None);
    };
    // Inside warden, or under another supervisor: the agent cannot exist here either, and
    // nothing weaker would be a sandbox.
    if let Err(e) = crate::host::listener_possible() {
        return Err(failure(
            EXIT_WARDEN,
            format!(
                "cannot start the sandbox: this host refuses user namespaces ({}) and a seccomp \
                 filter above warden refuses its agent's listener ({}; warden inside warden, or \
                 another sandbox that uses seccomp); run warden outside it (`warden doctor` says \
                 what this host gives)",
                no.reason,
                crate::host::errno_name(e)
            ),
        ));
    }
    if cfg.require.userns {
        return Err(failure(
            EXIT_WARDEN,
            format!(
                "--require userns: this host refuses user namespaces ({}), and the run would \
                 have none",
                no.reason
            ),
        ));
    }
    if cfg.require.view || cfg.view == ViewMode::On {
        return Err(failure(
            EXIT_WARDEN,
            format!(
                "the sandbox's own view needs namespaces, which this host refuses ({}); run \
                 without --view on / --require view to run on the host's tree",
                no.reason
            ),
        ));
    }
    if !crate::confine::landlock::enforces_exec() {
        return Err(failure(
            EXIT_WARDEN,
            format!(
                "this host refuses user namespaces ({}) and its kernel does not enforce \
                 Landlock: without a view of the sandbox's own (its noexec mounts) or Landlock's \
                 execute right, nothing would keep a path swapped in after the agent's check of \
                 an execve from running what the policy forbids; allow user namespaces or \
                 enable Landlock (`warden doctor` says how)",
                no.reason
            ),
        ));
    }
    cfg.view = ViewMode::Off;
    let root = rustix::process::geteuid().is_root();
    let uid = root.then(|| no_namespace_uid(&cfg.policy));
    eprintln!("{}", crate::confine::hostns::notice(&no, uid));
    Ok(Some(no))
}

/// The uid a root warden runs the program as without namespaces: `starting_uid` when the policy
/// names one other than 0, else 65534.
fn no_namespace_uid(policy: &Policy) -> u32 {
    policy.starting_uid.filter(|&u| u != 0).unwrap_or(65534)
}

/// The ids of a run without namespaces: no map, the program's ids are the kernel's. As root,
/// an unprivileged uid ([`no_namespace_uid`]), which warden becomes before the start (the agent
/// acts with exactly the program's credentials); a policy that insists on uid 0, or on ids
/// other than an unprivileged user's own, cannot be run.
fn no_namespace_ids(policy: &Policy) -> Result<IdMap, Failure> {
    let euid = rustix::process::geteuid().as_raw();
    let egid = rustix::process::getegid().as_raw();
    if policy.map_ids.is_some() {
        return Err(failure(
            EXIT_WARDEN,
            "map-ids maps ids in the sandbox's user namespace, which this host refuses",
        ));
    }
    let (uid, gid) = if euid == 0 {
        if policy.starting_uid == Some(0) || policy.starting_gid == Some(0) {
            return Err(failure(
                EXIT_WARDEN,
                "the policy's starting_uid/starting_gid 0 would run the program as root on the \
                 host itself: this host refuses user namespaces, so warden will not; remove \
                 them (the program then runs as uid 65534)",
            ));
        }
        let uid = no_namespace_uid(policy);
        (uid, policy.starting_gid.unwrap_or(65534))
    } else {
        if policy.starting_uid.is_some_and(|u| u != euid)
            || policy.starting_gid.is_some_and(|g| g != egid)
        {
            return Err(failure(
                EXIT_WARDEN,
                "the policy's starting_uid/starting_gid need a user namespace to map, which this \
                 host refuses: without one the program runs with warden's own ids",
            ));
        }
        (euid, egid)
    };
    Ok(IdMap {
        inside_uid: uid,
        outside_uid: uid,
        inside_gid: gid,
        outside_gid: gid,
        identity: false,
        range: None,
    })
}

fn id_map(policy: &Policy) -> IdMap {
    let euid = rustix::process::geteuid().as_raw();
    let egid = rustix::process::getegid().as_raw();
    let root = euid == 0;
    IdMap {
        inside_uid: policy.starting_uid.unwrap_or(euid),
        outside_uid: if root {
            policy.starting_uid.unwrap_or(0)
        } else {
            euid
        },
        inside_gid: policy.starting_gid.unwrap_or(egid),
        outside_gid: if root {
            policy.starting_gid.unwrap_or(0)
        } else {
            egid
        },
        // root keeps every id as it is; root with starting ids becomes them before building the
        // sandbox, which is then the same single-id case as any unprivileged user.
        identity: root
            && policy.starting_uid.unwrap_or(0) == 0
            && policy.starting_gid.unwrap_or(0) == 0,
        range: None,
    }
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
            open_report(p).map(|f| Some((p.clone(), f))).map_err(|e| {
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

    /// Whether any report was asked for.
    fn wanted(&self) -> bool {
        self.meta.is_some() || self.json.is_some()
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

/// Opens a report file for writing. A report may name warden's own standard output or error
/// (`warden run --report /dev/stdout -- prog > file`): a new open of that file would truncate
/// what the shell's redirection already holds and then write over the program's output from
/// the start. The same file is written through warden's own descriptor instead, so the report
/// comes after what the program wrote. Any other path is created (or truncated) as usual.
fn open_report(p: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsFd;
    if let Ok(st) = rustix::fs::stat(p) {
        let stdout = std::io::stdout();
        let stderr = std::io::stderr();
        for fd in [stdout.as_fd(), stderr.as_fd()] {
            if rustix::fs::fstat(fd).is_ok_and(|s| s.st_dev == st.st_dev && s.st_ino == st.st_ino) {
                return Ok(std::fs::File::from(fd.try_clone_to_owned()?));
            }
        }
    }
    std::fs::File::create(p)
}

/// `--pass-fd` numbers: 3 and up (0–2 have their own flags), each open in warden.
fn check_pass_fds(fds: &[i32]) -> Result<(), Failure> {
    for (i, &fd) in fds.iter().enumerate() {
        if fd < 3 {
            return Err(failure(
                EXIT_WARDEN,
                format!(
                    "--pass-fd {fd}: descriptors 0, 1 and 2 are always passed; use --stdin, --stdout or --stderr to redirect them"
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

#[cfg(test)]
mod require_tests {
    use super::Require;

    #[test]
    fn require_reads_its_comma_list_and_names_what_it_does_not_know() {
        assert_eq!(Require::parse(""), Ok(Require::default()));
        let r = Require::parse("userns, view").unwrap();
        assert!(r.userns && r.view && !r.landlock);
        assert!(Require::parse("userns,landlock,view").unwrap().landlock);
        let e = Require::parse("userns,pidns").unwrap_err();
        assert!(
            e.contains("`pidns`") && e.contains("known: userns, landlock, view"),
            "{e}"
        );
    }
}
