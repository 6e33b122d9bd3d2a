//! What a run will be, decided before anything is made: the policy with `$SCRATCH` expanded,
//! the sandbox's view, the program and its command line, environment and starting directory,
//! who decides opens, the filter's profile and the cgroup the run needs. [`Plan::decide`] only
//! looks (at the policy, the command line and the host's tree); [`super::execute`] acts on
//! the plan in one place.

use super::{failure, EnvConfig, Failure, FastPath, RunConfig, ViewMode, EXIT_WARDEN};
use super::{EXIT_CANNOT_EXEC, EXIT_NOT_FOUND, MINIMAL_PATH};
use crate::confine::landlock;
use crate::confine::namespaces::IdMap;
use crate::confine::view::RememberedHost;
use crate::launch::Command;
use crate::limits::cgroup::CgroupLimits;
use crate::syscalls::{Opens, Profile};
use rustix::thread::CpuSet;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use warden_policy::view::Hiding;
use warden_policy::{Access, Policy};

/// A run, decided.
pub struct Plan {
    /// The policy, `$SCRATCH` expanded; its `limits` are the run's.
    pub policy: Policy,
    /// What the sandbox starts: program, argv, environment, directory, ids, view. Its stdio and
    /// rlimits are filled in when the run is made (they depend on what is opened and on
    /// whether a cgroup could be made).
    pub command: Command,
    /// The program as found, for messages.
    pub program: PathBuf,
    /// The cgroup the run needs (`None`: none, it is not counted or bounded as a whole).
    pub cgroup: Option<CgroupLimits>,
    /// Who decides opens.
    pub opens: Opens,
    /// The program's seccomp profile.
    pub profile: Profile,
    /// What the agent needs to decide network calls.
    pub net: crate::agent::net::Context,
    /// warden's own directory, when the program starts elsewhere that the user did not choose,
    /// and where it starts, in words.
    pub hidden_cwd: Option<HiddenCwd>,
}

/// warden's own directory, and where the program starts instead, in words
/// ([`crate::report::Measured::hidden_cwd`]).
pub type HiddenCwd = (PathBuf, &'static str);

impl Plan {
    /// Decides the run of `cfg` with `policy` (`$SCRATCH` already expanded; scratch `scratch`
    /// if the policy uses one). `inherits_directory` says whether the program starts holding a
    /// directory of the host's tree (its stdio or a `--pass-fd`): then a view cannot let the
    /// kernel answer the calls that only look.
    pub fn decide(
        cfg: &RunConfig,
        policy: Policy,
        ids: IdMap,
        scratch: Option<&Path>,
        inherits_directory: bool,
    ) -> Result<Plan, Failure> {
        let limits = policy.limits;
        // A directory of the host's in the program's hands names the host's objects of a
        // tree, which only Landlock's rules on them can hold to the policy.
        let hiding = if inherits_directory
            || cfg.capsicum.is_some()
            || !crate::confine::view::filters_trees()
        {
            Hiding::Masks
        } else {
            Hiding::Overlay
        };
        // The host as the plans find it, asked once for both (the view's and the kernel's).
        let host = RememberedHost::default();
        // In a view the scratch directory is the run's own disk, not the host's: a tmpfs of
        // limit-disk's size (with --keep it stays the host's directory, which outlives the run).
        let mut policy = policy;
        let on_disk = scratch
            .and_then(Path::to_str)
            .filter(|_| !cfg.keep && wants_view(cfg, &policy));
        if let Some(at) = on_disk {
            policy.add_map(warden_policy::map::PathMap {
                source: warden_policy::map::MapSource::Tmpfs,
                sandbox: at.to_owned(),
                mode: warden_policy::map::MapMode::ReadWrite,
                span: warden_policy::Span::new("$SCRATCH", 1, 1),
            });
        }
        let mut view = view_for(cfg, &policy, hiding, &host)?;
        if view.is_none() && limits.disk.is_some() {
            return Err(failure(
                EXIT_WARDEN,
                "limit-disk (--disk) bounds the run's own disk, which only the sandbox's own view \
                 has; this run has none (--view off, or a kernel without the new mount API): \
                 remove --disk, or run with --view auto",
            ));
        }
        if view.is_some() && cfg.keep && limits.disk.is_some() {
            eprintln!(
                "warden: --keep: the scratch directory and the private copies stay on the host's \
                 disk, which --disk does not bound (it bounds the tmpfs maps and /dev/shm)"
            );
        }
        if let Some(view) = &mut view {
            view.disk = Some(warden_policy::view::Disk {
                size: limits.disk.unwrap_or(warden_policy::DEFAULT_DISK),
                scratch: on_disk.map(str::to_owned),
                owner: (ids.inside_uid, ids.inside_gid),
                dirs: warden_policy::kernel::made_in_tmpfs(&policy),
                copies: !cfg.keep,
            });
        }
        let policy = if view.is_none() {
            without_view(cfg, policy)
        } else {
            policy
        };
        if cfg.wx && !crate::sys::process::refuses_exec_gain_here() {
            return Err(failure(
                EXIT_WARDEN,
                "--wx needs the kernel's memory-deny-write-execute (PR_SET_MDWE, Linux 6.3), \
                 which this kernel does not have; run without --wx",
            ));
        }
        let (cwd, hidden_cwd) = match (&cfg.chdir, &policy.starting_dir) {
            (Some(dir), _) => (
                std::path::absolute(dir).unwrap_or_else(|_| dir.clone()),
                None,
            ),
            (None, Some((dir, span))) => {
                // The built-in default's `$SCRATCH`, not a place the user chose.
                let hidden = (&*span.file == warden_policy::DEFAULT_POLICY_NAME)
                    .then(|| std::env::current_dir().ok())
                    .flatten()
                    .filter(|here| here != Path::new(dir))
                    .map(|here| (here, "its own scratch directory"));
                (PathBuf::from(dir), hidden)
            }
            (None, None) => implicit_cwd(cfg, view.as_ref())?,
        };
        let env = environment(&cfg.env, scratch, &policy, &cwd, cfg.verbose)?;
        // Looked up as the program's own execvp would: on the sandbox's PATH, from its
        // directory, past what the policy does not let it run.
        let search = env
            .iter()
            .find_map(|kv| kv.as_bytes().strip_prefix(b"PATH="))
            .map_or_else(
                || std::ffi::OsString::from(MINIMAL_PATH),
                |v| std::ffi::OsStr::from_bytes(v).to_owned(),
            );
        let program = find_program(&cfg.program, &search, &cwd, &policy)?;
        let cstr = |s: &[u8]| {
            CString::new(s).map_err(|_| failure(EXIT_WARDEN, "arguments may not contain NUL bytes"))
        };
        let argv = std::iter::once(&cfg.program)
            .chain(&cfg.args)
            .map(|a| cstr(a.as_bytes()))
            .collect::<Result<Vec<_>, _>>()?;
        let cpus = cfg.cpus.as_deref().map(cpu_set).transpose()?;
        let cgroup = (limits.mem.is_some()
            || limits.processes.is_some()
            || limits.time.is_some()
            || cfg.report.is_some()
            || cfg.report_json.is_some())
        .then_some(CgroupLimits {
            memory: limits.mem,
            tasks: limits.processes.map(|n| n + 1),
        });
        let opens = choose_opens(cfg, &policy, view.is_some(), !inherits_directory, &host)?;
        let net = crate::agent::net::Context::new(&policy)
            .map_err(|e| failure(EXIT_WARDEN, e.to_string()))?;
        let profile = Profile {
            network: net.mode,
            ptrace_inside: policy.ptrace_inside.is_some(),
            opens,
            capability_mode: cfg.capsicum.is_some(),
        };
        let command = Command {
            program: cstr(program.as_os_str().as_bytes())?,
            argv,
            env,
            cwd,
            ids,
            stdio: Default::default(),
            pass_fds: cfg.pass_fds.clone(),
            rlimits: Vec::new(),
            cpus,
            keep_terminal: cfg.terminal,
            deny_exec_memory: cfg.wx,
            view,
            namespaces: true,
            no_network: false,
        };
        Ok(Plan {
            policy,
            command,
            program,
            cgroup,
            opens,
            profile,
            net,
            hidden_cwd,
        })
    }

    /// The run without namespaces (`crate::confine::hostns`): the sandbox is started with
    /// none, under a second filter for what the namespaces held ([`crate::filter::
    /// hostns_denials`]). Signals are then Landlock's (its signal scope holds them to the
    /// sandbox's domain); on a kernel whose Landlock has no scopes, the filter sends the calls
    /// that name other processes to the agent instead (capability mode's profile: the same
    /// calls), which holds them to the sandbox's own processes (`crate::agent::hostpids`).
    pub fn without_namespaces(&mut self) {
        self.command.namespaces = false;
        self.command.no_network = self.net.mode == crate::syscalls::Network::Private;
        // WARDEN_AGENT_SIGNALS=1 takes the agent's route on any kernel (for its tests, and
        // for a kernel whose scopes are not trusted).
        if !landlock::enforces_scopes() || std::env::var_os("WARDEN_AGENT_SIGNALS").is_some() {
            self.profile.capability_mode = true;
        }
    }

    /// How the registry and `warden ps` name who decides the program's file calls.
    pub fn mode(&self) -> &'static str {
        match self.opens {
            Opens::Agent => "delegated",
            Opens::Kernel => "kernel",
            Opens::View => "view",
            Opens::ViewExec => "view+exec",
        }
    }
}

/// Where Landlock is not enforced (not built in, or left out of `lsm=`): whether `plan` holds
/// without it, and the one line warden says at the start of such a run; otherwise the refusal,
/// in one sentence.
///
/// The agent decides every file call then (the fast path needs Landlock), and nothing is
/// Landlock's alone but `execve`: the agent checks the path and lets the kernel continue the
/// call, and the kernel reads the path again, which a racing thread may have changed. What
/// holds it is the view: the kernel refuses to run, or to map executable, any file on a
/// `noexec` mount, and the view mounts `noexec` every tree the policy does not let run whole
/// (`ViewPlan::exec_beyond` names what a mount cannot say). So the mode needs a view, no
/// descriptor of the host's tree the program could run through (`held`, from
/// `stdio::holds_host_object`), and no capability mode (its second layer is Landlock's).
pub fn without_landlock(
    cfg: &RunConfig,
    plan: &Plan,
    held: Option<String>,
) -> Result<String, Failure> {
    const ENABLE: &str = "or enable Landlock (Linux 5.13 or later, CONFIG_SECURITY_LANDLOCK=y, \
                          \"landlock\" in lsm=)";
    let refuse = |why: String| {
        failure(
            EXIT_WARDEN,
            format!(
                "this kernel does not enforce Landlock (not built in, or missing from the lsm= \
                 boot list); without it the agent checks an execve and lets the kernel run the \
                 path, which a racing thread may change after the check, and only the view's \
                 noexec mounts can keep what the policy does not let run from running: {why}"
            ),
        )
    };
    let Some(view) = &plan.command.view else {
        return Err(refuse(format!(
            "this run has no view of its own (--view off, no user namespaces, or a kernel \
             without the new mount API); run with --view auto where namespaces are allowed, \
             {ENABLE}"
        )));
    };
    if cfg.capsicum.is_some() {
        return Err(refuse(format!(
            "capability mode's second layer is a Landlock ruleset; run without it, {ENABLE}"
        )));
    }
    if cfg.terminal {
        // With --tty the program stays in warden's process group (the terminal's foreground
        // job), and only Landlock's signal scope keeps its signals to that group (kill(0, ...))
        // from reaching warden and the rest of the job.
        return Err(refuse(format!(
            "--tty keeps the program in warden's process group, where only Landlock's signal              scope keeps its signals from reaching warden; run without --tty, {ENABLE}"
        )));
    }
    if let Some(held) = held {
        return Err(refuse(format!(
            "the program would start holding {held}, outside every mount of the view, so \
             nothing would keep it from being run; give it through a pipe (cat FILE | warden \
             run ...) or a path the policy allows, {ENABLE}"
        )));
    }
    let beyond = view.exec_beyond(&plan.policy);
    if !beyond.is_empty() {
        return Err(refuse(format!("{}; {ENABLE}", beyond.join("; "))));
    }
    Ok(
        "warden: Landlock is not enforced here: the agent decides every file call, with no \
         kernel rule behind it; execve and executable mappings are held to the policy by the \
         view's noexec mounts, and fexecve by the mount of the descriptor's file; --require \
         landlock refuses such a run"
            .to_owned(),
    )
}

/// The view `policy` (`$SCRATCH` expanded) gets under `cfg`, planned from the host as it is now.
/// Whether [`view_for`] makes a view for `cfg` and `policy` (where it does not refuse).
fn wants_view(cfg: &RunConfig, policy: &Policy) -> bool {
    let maps = policy
        .maps()
        .iter()
        .any(|m| m.source != warden_policy::map::MapSource::Tmpfs);
    (cfg.view != ViewMode::Off || maps) && crate::confine::view::supported()
}

fn view_for(
    cfg: &RunConfig,
    policy: &Policy,
    hiding: Hiding,
    host: &RememberedHost,
) -> Result<Option<warden_policy::view::ViewPlan>, Failure> {
    // A map of the host's trees is a mount of the view: a policy with one always gets a view.
    // A tmpfs map alone does not ask for one: without a view its tree is closed
    // (`without_view`).
    let maps = policy
        .maps()
        .iter()
        .any(|m| m.source != warden_policy::map::MapSource::Tmpfs);
    if cfg.view == ViewMode::Off && !maps {
        return Ok(None);
    }
    if maps && !crate::confine::view::supported() {
        return Err(failure(
            EXIT_WARDEN,
            "the policy maps paths (path-map), which needs the sandbox's own view, and this \
             kernel has no new mount API (fsopen, open_tree)",
        ));
    }
    if cfg.view == ViewMode::Auto && !crate::confine::view::supported() {
        // Never silently weaker.
        eprintln!(
            "warden: this kernel has no new mount API (fsopen answers ENOSYS): no view of the \
             sandbox's own; the program runs on the host's tree, where Landlock and the agent \
             hold it to the same policy"
        );
        return Ok(None);
    }
    let mut problems: Vec<String> =
        warden_policy::map::host_problems(policy.maps(), &crate::confine::view::host_stat)
            .into_iter()
            .map(|(span, text)| format!("{span}: {text}"))
            .collect();
    let plan = warden_policy::view::view_plan_with(policy, host, hiding);
    problems.extend(plan.errors.iter().cloned());
    if !problems.is_empty() {
        return Err(failure(EXIT_WARDEN, problems.join("\n")));
    }
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
    Ok(Some(plan))
}

/// `policy` for a run on the host's tree: its private tmpfs maps cannot be made, so their trees
/// are closed rather than handed over as the host has them (the host's `/dev/shm` is every
/// other program's).
fn without_view(cfg: &RunConfig, policy: Policy) -> Policy {
    let (policy, closed) = policy.close_tmpfs_maps();
    if cfg.verbose {
        for m in &closed {
            eprintln!(
                "warden: {}: {m}: no view of the sandbox's own, so {} is closed (the host's is \
                 not the sandbox's)",
                m.span,
                warden_policy::escape::escape(&m.sandbox)
            );
        }
    }
    policy
}

/// The starting directory when neither `--chdir` nor the policy names one: warden's own, or,
/// when the sandbox's view does not hold it, the view's root (a program started where it
/// cannot be would fail every relative path), with warden's own as the second value.
fn implicit_cwd(
    cfg: &RunConfig,
    view: Option<&warden_policy::view::ViewPlan>,
) -> Result<(PathBuf, Option<HiddenCwd>), Failure> {
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
            Ok((PathBuf::from("/"), Some((here, "the view's /"))))
        }
        _ => Ok((here, None)),
    }
}

/// Decides who handles opens for `policy` (`$SCRATCH` expanded), and says why with `-v`.
/// In a view (`view`), the kernel also answers the calls that only look (stat, access,
/// readlink) and chdir ([`Opens::View`], and execs with [`Opens::ViewExec`] when the kernel
/// says every exec rule exactly) unless the program inherits a directory of the host's
/// tree (`lookers` false: those calls relative to it would see past the view), and `-v` keeps
/// every call with the agent, which is the one that can say which rule decided.
fn choose_opens(
    cfg: &RunConfig,
    policy: &Policy,
    view: bool,
    lookers: bool,
    host: &RememberedHost,
) -> Result<Opens, Failure> {
    let fast_path = match cfg.fast_path {
        FastPath::InView if view => FastPath::Auto,
        FastPath::InView => FastPath::Never,
        chosen => chosen,
    };
    if fast_path == FastPath::Never {
        return Ok(Opens::Agent);
    }
    // Capability mode is the agent's: an open the kernel answered alone would not be held to
    // it (an absolute path, a lookup from the current directory).
    if cfg.capsicum.is_some() {
        if cfg.fast_path == FastPath::Always {
            return Err(failure(
                EXIT_WARDEN,
                "--fast-path=always: in capability mode every open is the agent's (it refuses \
                 absolute paths and walks beneath directory capabilities); drop --fast-path",
            ));
        }
        return Ok(Opens::Agent);
    }
    let logged = cfg.log.is_some() || cfg.observations.is_some();
    // Whether the kernel says the exec rules exactly too (the plan below sets it).
    let mut exec_exact = false;
    // The first rule that keeps the run with the agent, for the one line a run without -v says.
    let mut first_blocker: Option<String> = None;
    // The cheap reasons first: the plan looks at every rule's path on disk.
    let why_not: Option<String> = if logged && fast_path == FastPath::Auto {
        Some("--log asks for every decision, and only the agent sees them all".into())
    } else if view && cfg.verbose && fast_path == FastPath::Auto {
        Some("-v names the rule behind every denial, and only the agent sees them all".into())
    } else if !landlock::enforces_everything() {
        Some("this kernel's Landlock does not enforce every right warden uses".into())
    } else if policy
        .maps()
        .iter()
        .any(|m| m.source != warden_policy::map::MapSource::Tmpfs)
    {
        Some(
            "the policy maps the host's paths (path-map): Landlock's rights belong to objects, \
             and a host tree shown at two places would carry the rights of both, so the agent \
             decides by the sandbox's paths"
                .into(),
        )
    } else {
        let seen = FoundOnce::new(host);
        let found = |path: &str| seen.get(path);
        let plan = if view {
            warden_policy::kernel::kernel_plan_in_view(policy, &found)
        } else {
            warden_policy::kernel::kernel_plan(policy, &found)
        };
        exec_exact = view && warden_policy::kernel::exec_exact_in_view(policy, &found);
        (!plan.exact()).then(|| {
            let mut text = String::from("Landlock cannot enforce every path rule exactly:");
            for (id, why) in plan.blockers() {
                let rule = policy.rule(id);
                text.push_str(&format!("\n  {}: {rule}: {why}", rule.span));
                first_blocker.get_or_insert_with(|| {
                    let more = plan.blockers().count() - 1;
                    format!(
                        "{}: {rule}: {why}{}",
                        rule.span,
                        match more {
                            0 => String::new(),
                            n => format!(" (and {n} more: `warden check --explain` lists them)"),
                        }
                    )
                });
            }
            text
        })
    };
    match (why_not, fast_path) {
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
            // Execs too, unless -v or --log want every refusal explained (only the agent can).
            Ok(
                if view && lookers && exec_exact && !cfg.verbose && !logged {
                    Opens::ViewExec
                } else if view && lookers {
                    Opens::View
                } else {
                    Opens::Kernel
                },
            )
        }
        (Some(why), FastPath::Always) => {
            Err(failure(EXIT_WARDEN, format!("--fast-path=always: {why}")))
        }
        (Some(why), _) => {
            if cfg.verbose && fast_path == FastPath::Auto {
                eprintln!("warden: opens are delegated to the agent: {why}");
            } else if let Some(rule) = first_blocker.filter(|_| view && !logged) {
                // A policy of the user's that costs every path call a trip to the agent: said
                // once, with the rule, since the user can usually change it.
                eprintln!(
                    "warden: every open and stat of this run goes to the agent (several times \
                     the kernel's cost), because Landlock and the view cannot say one rule \
                     exactly: {rule}"
                );
            }
            Ok(Opens::Agent)
        }
    }
}

/// What [`landlock::found`] says of each path, asked of the host once: the planner asks about
/// the same few trees for rule after rule, and about `D/` (a tree's rules) as about `D`. `D/`
/// is `D`'s answer when that is a directory and missing otherwise, as the kernel resolves a
/// trailing slash, links followed. A directory is resolved from the view plan's answers
/// ([`RememberedHost::directory`]), which have looked at the same trees already; the kernel is
/// asked about the rest.
struct FoundOnce<'h> {
    host: &'h RememberedHost,
    seen: std::cell::RefCell<std::collections::HashMap<String, warden_policy::kernel::Found>>,
}

impl<'h> FoundOnce<'h> {
    fn new(host: &'h RememberedHost) -> FoundOnce<'h> {
        FoundOnce {
            host,
            seen: Default::default(),
        }
    }

    fn get(&self, path: &str) -> warden_policy::kernel::Found {
        use warden_policy::kernel::Found;
        if let Some(f) = self.seen.borrow().get(path) {
            return f.clone();
        }
        let f = match path.strip_suffix('/') {
            Some(dir) if !dir.is_empty() && !dir.ends_with('/') => match self.get(dir) {
                Found::Dir(d) => Found::Dir(d),
                _ => Found::Missing,
            },
            _ => match self.host.directory(path) {
                Some(dir) => Found::Dir(dir),
                None => landlock::found(path),
            },
        };
        self.seen.borrow_mut().insert(path.to_owned(), f.clone());
        f
    }
}

/// The program's environment: warden's own (or a minimal one), `TMPDIR` pointing at the
/// scratch directory, `PWD` at the directory the program starts in (never warden's own, which
/// a shell would otherwise look at first), `HOME` at the scratch directory when the policy does
/// not let the program write in warden's `HOME`, then the `--env` settings in order.
fn environment(
    cfg: &EnvConfig,
    scratch: Option<&Path>,
    policy: &Policy,
    cwd: &Path,
    verbose: bool,
) -> Result<Vec<CString>, Failure> {
    use std::ffi::{OsStr, OsString};
    let mut vars: Vec<(OsString, OsString)> = if cfg.clear {
        let home = scratch.map_or_else(|| OsString::from("/"), |s| s.as_os_str().to_owned());
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
        put(
            &mut vars,
            OsStr::new("TMPDIR"),
            Some(s.as_os_str().to_owned()),
        );
        // A HOME the program may not write in makes every tool that keeps a cache or a
        // history there fail (and `learn` learn the host's home); the scratch directory is
        // the one the program has. Unless the policy names something in the user's HOME
        // (`--read ~/.gitconfig`, `--read ~/.rustup`): that is found through HOME, so HOME
        // stays, and what the policy does not allow there is refused as anywhere else.
        let home = vars
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| v.clone());
        // As spelled, or as it resolves: `learn` names the paths a run used resolved, so a
        // HOME spelled through a symlink (`/home` a link elsewhere) is named by its target.
        let kept = home.as_ref().and_then(|h| h.to_str()).and_then(|h| {
            home_kept(policy, h).or_else(|| {
                let resolved = std::fs::canonicalize(h).ok()?;
                let resolved = resolved.to_str().filter(|r| *r != h)?;
                home_kept(policy, resolved).map(|why| format!("{why} (HOME is {resolved})"))
            })
        });
        if verbose {
            let shown =
                |p: &OsStr| warden_policy::escape::escape(p.as_encoded_bytes()).into_owned();
            match (&kept, &home) {
                (Some(why), Some(h)) => {
                    eprintln!("warden: HOME is yours, {}: {why}", shown(h))
                }
                (None, Some(h)) => eprintln!(
                    "warden: HOME is the scratch directory, not {}: no rule of the policy names \
                     anything in it, so the program reads none of your dot-files (git's \
                     identity, toolchains, caches); a rule that names one (--read \
                     {}/.gitconfig) keeps HOME yours",
                    shown(h),
                    shown(h).trim_end_matches('/')
                ),
                _ => {}
            }
        }
        if kept.is_none() {
            put(
                &mut vars,
                OsStr::new("HOME"),
                Some(s.as_os_str().to_owned()),
            );
        }
    }
    if !cfg.clear {
        // warden's own PWD and OLDPWD would name its directories, which a shell looks at first
        // when it starts; a cleared environment has neither, and the shell finds its own.
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
            .map_err(|(status, why, _)| failure(status, format!("cannot run {}", why)));
    }
    let mut tried = Vec::new();
    let mut refused = Vec::new();
    let mut status = EXIT_NOT_FOUND;
    for dir in std::env::split_paths(search) {
        let candidate = cwd.join(dir).join(name);
        if std::fs::symlink_metadata(&candidate).is_err() {
            continue;
        }
        match runnable(&candidate, policy) {
            Ok(p) => {
                // The user's shell would have run the first of those the policy refused (a
                // version manager's shim, a tool of their own): say which ran instead.
                if !refused.is_empty() {
                    eprintln!("{}", skipped_on_path(name, &refused, &p));
                }
                return Ok(p);
            }
            Err((s, why, by_policy)) => {
                status = s;
                if by_policy {
                    refused.push((candidate.clone(), why.clone()));
                }
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

/// Why the user's `home` stays the program's `HOME`, if it does: the policy lets the program
/// write there, or one of its allow rules names a path in it. `None` for `/` (every path is in
/// it) and for a relative or empty `HOME`.
fn home_kept(policy: &Policy, home: &str) -> Option<String> {
    use warden_policy::map::at_or_beneath;
    let home = home.trim_end_matches('/');
    if !home.starts_with('/') {
        return None;
    }
    // In the default's private /tmp the host's home is not there at all: the rules that let
    // the program write in that /tmp are about the sandbox's own.
    if policy.in_private_tmp(home) {
        return None;
    }
    let probe = format!("{home}/.warden-home-probe");
    if policy.check(&probe, Access::Write).is_allowed() {
        return Some("the policy lets the program write in it".into());
    }
    policy
        .path_rules()
        .iter()
        .find(|r| {
            r.access.is_some()
                && !r.pattern.uses_scratch()
                && at_or_beneath(r.pattern.literal().trim_end_matches('/'), home)
        })
        .map(|r| format!("{}: {r} names a path in it", r.span))
}

/// The one line said when the program found on PATH is not the first one there, because the
/// policy refused those before it: `refused` holds each (path, "PATH: why").
fn skipped_on_path(name: &str, refused: &[(PathBuf, String)], ran: &Path) -> String {
    use warden_policy::escape::escape;
    let shown = |p: &Path| escape(p.as_os_str().as_encoded_bytes()).into_owned();
    let first = &refused[0].0;
    let dir = first.parent().map_or_else(String::new, shown);
    let others = match refused.len() {
        1 => String::new(),
        n => format!(" ({} more before it, likewise)", n - 1),
    };
    format!(
        "warden: running {} for {}: the PATH has {} first, which the sandbox may not run \
         ({}){others}; to run it, allow it and what it runs (on the command line: --exec {dir}, \
         with --read for what it reads)",
        shown(ran),
        escape(name.as_bytes()),
        shown(first),
        refused[0]
            .1
            .strip_prefix(&format!("{}: ", shown(first)))
            .unwrap_or(&refused[0].1),
    )
}

/// `path` if it can be run in the sandbox: it exists, is an executable file, and the policy
/// lets it run (its target, and the link itself when it is a symlink, as the agent checks).
/// Otherwise the exit status, "PATH: why", and whether the policy (not the file) refused it.
fn runnable(path: &Path, policy: &Policy) -> Result<PathBuf, (i32, String, bool)> {
    use warden_policy::escape::escape;
    let shown = escape(path.as_os_str().as_encoded_bytes());
    let meta = std::fs::metadata(path).map_err(|e| {
        let status = if e.kind() == std::io::ErrorKind::NotFound {
            EXIT_NOT_FOUND
        } else {
            EXIT_CANNOT_EXEC
        };
        (status, format!("{shown}: {e}"), false)
    })?;
    if meta.is_dir() || rustix::fs::access(path, rustix::fs::Access::EXEC_OK).is_err() {
        return Err((
            EXIT_CANNOT_EXEC,
            format!("{shown}: not an executable file"),
            false,
        ));
    }
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let denied = |why: String| (EXIT_CANNOT_EXEC, format!("{shown}: {}", escape(&why)), true);
    if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
        let is_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink());
        let link = is_link
            .then(|| crate::paths::canonical(dir).map(|(d, _)| Path::new(&d).join(name)))
            .flatten();
        if let Some(link) = link {
            let link = link.to_string_lossy();
            if policy.visible(&link).is_none() {
                return Err(denied(format!(
                    "it is a symlink, and following it needs some right on it; add: \
                     path-allow read {link}"
                )));
            }
        }
    }
    let real = crate::paths::canonical(&path).map_or_else(|| path.clone(), |(r, _)| r.into());
    if let Some(real) = real.to_str() {
        if !policy.check(real, Access::Exec).is_allowed() {
            return Err(denied(policy.explain_denial(real, Access::Exec)));
        }
    }
    Ok(path)
}

/// `policy` (`$SCRATCH` not yet expanded) with the built-in default's private `/tmp` where it
/// can be and nothing else decides `/tmp`, else without it: a run without a view of its own
/// cannot make it (the host's `/tmp` stays closed, as it always was there), and a rule, map or
/// flag of the user's that names `/tmp` decides it as it did before the default had one.
pub fn private_tmp(cfg: &RunConfig, policy: &Policy) -> Policy {
    // (A map of the user's at /tmp has replaced the default's; the default's rules stay until
    // they go here.)
    if !wants_view(cfg, policy) {
        return policy.without_private_tmp();
    }
    match policy.names_tmp() {
        None => policy.clone(),
        Some(rule) => {
            if cfg.verbose {
                eprintln!(
                    "warden: /tmp is not the sandbox's own in this run: {rule} names it, so the \
                     policy's rules decide /tmp (the host's, as far as they allow)"
                );
            }
            policy.without_private_tmp()
        }
    }
}

/// `policy` with the scratch directory `scratch` mapped onto itself when a map would cover it
/// (a tmpfs `/tmp`): it is the run's own, on the host, and must stay visible.
pub fn scratch_on_top(mut policy: Policy, scratch: &str) -> Policy {
    use warden_policy::map::{at_or_beneath, MapMode, MapSource, PathMap};
    if policy
        .maps()
        .iter()
        .any(|m| at_or_beneath(scratch, &m.sandbox))
    {
        policy.add_map(PathMap {
            source: MapSource::Host(scratch.to_owned()),
            sandbox: scratch.to_owned(),
            mode: MapMode::ReadWrite,
            span: warden_policy::Span::new("<scratch>", 1, 1),
        });
    }
    policy
}

/// `ids` with the policy's `map-ids` range, when warden may map it: as root, for a program
/// that starts as root (the writer of a map of several lines needs `CAP_SETUID`/`CAP_SETGID`
/// over the namespace's parent, which only root has here; an unprivileged user would need the
/// setuid helpers newuidmap/newgidmap, and warden uses no setuid helper).
pub fn with_id_range(mut ids: IdMap, policy: &Policy) -> Result<IdMap, Failure> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_stays_the_users_when_the_policy_names_something_in_it() {
        let with = |text: &str| {
            let mut p = Policy::default_policy();
            p.merge(Policy::parse("t", text).unwrap());
            p.expand_scratch("/tmp/warden-1")
        };
        assert_eq!(home_kept(&with(""), "/home/ann"), None);
        assert_eq!(
            home_kept(&with("path-allow read /home/annex/*"), "/home/ann"),
            None
        );
        assert_eq!(
            home_kept(&with("path-deny /home/ann/.ssh"), "/home/ann"),
            None
        );
        let why = home_kept(&with("path-allow read /home/ann/.gitconfig"), "/home/ann/").unwrap();
        assert!(why.starts_with("t:1:"), "{why}");
        assert!(home_kept(&with("path-allow read /home/ann/.rustup/*"), "/home/ann").is_some());
        assert!(home_kept(&with("path-allow write /home/*"), "/home/ann").is_some());
        // `/` and a relative HOME are never kept for a rule in them.
        assert_eq!(home_kept(&with("path-allow read /srv/x"), "/"), None);
        // A home in the host's /tmp, which the default's private /tmp does not show.
        assert_eq!(home_kept(&with(""), "/tmp/ann"), None);
        assert_eq!(home_kept(&with("path-allow read /srv/x"), "srv"), None);
    }

    #[test]
    fn a_skipped_path_entry_is_said_in_one_line_with_the_rule_and_the_flag() {
        let refused = vec![
            (
                PathBuf::from("/home/u/.pyenv/shims/python3"),
                "/home/u/.pyenv/shims/python3: no path-allow exec rule matches; add: \
                 path-allow exec /home/u/.pyenv/shims/python3"
                    .to_owned(),
            ),
            (
                PathBuf::from("/opt/x\ny/python3"),
                "/opt/x\\ny/python3: ...".to_owned(),
            ),
        ];
        let line = skipped_on_path("python3", &refused, Path::new("/usr/bin/python3"));
        assert_eq!(line.lines().count(), 1, "{line}");
        assert_eq!(
            line,
            "warden: running /usr/bin/python3 for python3: the PATH has \
             /home/u/.pyenv/shims/python3 first, which the sandbox may not run (no path-allow \
             exec rule matches; add: path-allow exec /home/u/.pyenv/shims/python3) (1 more \
             before it, likewise); to run it, allow it and what it runs (on the command line: \
             --exec /home/u/.pyenv/shims, with --read for what it reads)"
        );
        let odd = skipped_on_path("t", &refused[1..], Path::new("/usr/bin/t"));
        assert_eq!(odd.lines().count(), 1, "{odd}");
    }

    fn ids() -> IdMap {
        IdMap {
            inside_uid: 0,
            outside_uid: 0,
            inside_gid: 0,
            outside_gid: 0,
            identity: true,
            range: None,
        }
    }

    fn config(program: &str, args: &[&str]) -> RunConfig {
        RunConfig {
            policy: Policy::default_policy(),
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: EnvConfig {
                clear: true,
                set: Vec::new(),
            },
            ..Default::default()
        }
    }

    fn decide(cfg: &RunConfig, scratch: Option<&Path>) -> Result<Plan, Failure> {
        Plan::decide(cfg, cfg.policy.clone(), ids(), scratch, false)
    }

    #[test]
    fn the_default_run_has_a_view_with_the_kernel_first_where_the_kernel_can() {
        let cfg = config("true", &[]);
        let plan = decide(&cfg, Some(Path::new("/tmp/warden-x"))).unwrap();
        let can = crate::confine::view::supported() && landlock::enforces_everything();
        assert_eq!(
            plan.command.view.is_some(),
            crate::confine::view::supported()
        );
        assert_eq!(plan.opens, if can { Opens::ViewExec } else { Opens::Agent });
        // -v and --log keep every call with the agent, which names the rules.
        let mut cfg = config("true", &[]);
        cfg.verbose = true;
        assert_eq!(decide(&cfg, None).unwrap().opens, Opens::Agent);
        let mut cfg = config("true", &[]);
        cfg.fast_path = FastPath::Never;
        assert_eq!(decide(&cfg, None).unwrap().opens, Opens::Agent);
    }

    #[test]
    fn on_the_hosts_tree_the_default_run_is_delegated_uncounted_and_finds_the_program() {
        let mut cfg = config("true", &["a b", ""]);
        cfg.view = ViewMode::Off;
        let plan = decide(&cfg, Some(Path::new("/tmp/warden-x"))).unwrap();
        assert!(plan.program.is_absolute() && plan.program.ends_with("true"));
        assert_eq!(
            plan.command.program.as_bytes(),
            plan.program.as_os_str().as_bytes()
        );
        let argv: Vec<&[u8]> = plan.command.argv.iter().map(|a| a.as_bytes()).collect();
        assert_eq!(argv, [&b"true"[..], b"a b", b""]);
        assert_eq!(plan.opens, Opens::Agent);
        assert_eq!(plan.mode(), "delegated");
        assert!(plan.cgroup.is_none());
        assert!(plan.command.view.is_none());
        assert!(plan.command.stdio.iter().all(Option::is_none));
        let env: Vec<&[u8]> = plan.command.env.iter().map(|v| v.as_bytes()).collect();
        assert!(env.contains(&&b"TMPDIR=/tmp/warden-x"[..]), "{env:?}");
        assert!(env.contains(&&b"HOME=/tmp/warden-x"[..]), "{env:?}");
        assert!(
            env.contains(&format!("PATH={MINIMAL_PATH}").as_bytes()),
            "{env:?}"
        );
    }

    #[test]
    fn limits_that_need_the_whole_sandbox_counted_ask_for_a_cgroup() {
        let mut cfg = config("true", &[]);
        cfg.policy.limits.mem = Some(64 << 20);
        cfg.policy.limits.processes = Some(10);
        let plan = decide(&cfg, None).unwrap();
        let cg = plan.cgroup.expect("a cgroup");
        assert_eq!(cg.memory, Some(64 << 20));
        // init counts as one of the sandbox's tasks.
        assert_eq!(cg.tasks, Some(11));
        let mut cfg = config("true", &[]);
        cfg.report = Some("/dev/null".into());
        assert!(decide(&cfg, None).unwrap().cgroup.is_some());
    }

    #[test]
    fn a_program_that_is_not_there_is_127_and_names_the_path_searched() {
        let cfg = config("warden-no-such-program", &[]);
        let f = decide(&cfg, None).err().expect("no plan");
        assert_eq!(f.status, EXIT_NOT_FOUND);
        assert!(f.message.contains(MINIMAL_PATH), "{}", f.message);
        let mut cfg = config("true", &[]);
        cfg.env
            .set
            .push(("PATH".into(), Some("/nonexistent".into())));
        let f = decide(&cfg, None).err().expect("no plan");
        assert!(f.message.contains("/nonexistent"), "{}", f.message);
    }

    #[test]
    fn nul_bytes_in_arguments_are_refused_before_anything_is_made() {
        let cfg = config("true", &["a\0b"]);
        let f = decide(&cfg, None).err().expect("no plan");
        assert_eq!(f.status, EXIT_WARDEN);
        assert!(f.message.contains("NUL"), "{}", f.message);
    }

    #[test]
    fn fast_path_always_refuses_a_policy_landlock_cannot_enforce_exactly_and_names_the_rule() {
        let mut cfg = config("true", &[]);
        cfg.fast_path = FastPath::Always;
        cfg.view = ViewMode::Off;
        match decide(&cfg, None) {
            // On the host's tree, the default policy carves files out of /etc, which Landlock
            // cannot express (in a view those are masks).
            Err(f) => {
                assert_eq!(f.status, EXIT_WARDEN);
                assert!(f.message.starts_with("--fast-path=always"), "{}", f.message);
            }
            Ok(p) => panic!("planned opens {:?} for the default policy", p.opens),
        }
    }

    #[test]
    fn capability_mode_keeps_every_open_with_the_agent() {
        let session = || {
            Some(std::sync::Arc::new(warden_capsicum::Session::new(
                warden_capsicum::Entry::Program,
            )))
        };
        let mut cfg = config("true", &[]);
        cfg.capsicum = session();
        cfg.fast_path = FastPath::Auto;
        let p = decide(&cfg, None).unwrap();
        assert_eq!(p.opens, Opens::Agent);
        assert!(p.profile.capability_mode);
        cfg.fast_path = FastPath::Always;
        let f = decide(&cfg, None).err().expect("no plan");
        assert!(f.message.contains("capability mode"), "{}", f.message);
    }

    #[test]
    fn chdir_wins_over_the_policys_starting_directory() {
        let mut cfg = config("true", &[]);
        cfg.policy.starting_dir = Some(("/usr".into(), warden_policy::Span::new("test", 1, 1)));
        assert_eq!(decide(&cfg, None).unwrap().command.cwd, Path::new("/usr"));
        cfg.chdir = Some("/etc".into());
        assert_eq!(decide(&cfg, None).unwrap().command.cwd, Path::new("/etc"));
    }

    /// A trailing slash answered from the path without it says what the host would: the same
    /// directory (through a link too), and nothing for a file, a link to one, or a dangling one.
    #[test]
    fn a_trailing_slash_is_answered_as_the_host_resolves_it() {
        let dir = crate::testing::TempTree::new("found");
        std::fs::create_dir_all(dir.join("d")).unwrap();
        std::fs::write(dir.join("f"), "x").unwrap();
        std::os::unix::fs::symlink(dir.join("d"), dir.join("to-d")).unwrap();
        std::os::unix::fs::symlink(dir.join("f"), dir.join("to-f")).unwrap();
        std::os::unix::fs::symlink(dir.join("none"), dir.join("dangling")).unwrap();
        let base = dir.to_str().unwrap();
        let host = RememberedHost::default();
        let seen = FoundOnce::new(&host);
        for name in ["d", "f", "to-d", "to-f", "dangling", "none"] {
            let path = format!("{base}/{name}");
            // The plain path first, so that the slash's answer comes from it.
            assert_eq!(seen.get(&path), landlock::found(&path), "{path}");
            let slash = format!("{path}/");
            assert_eq!(seen.get(&slash), landlock::found(&slash), "{slash}");
        }
        assert!(matches!(
            seen.get(&format!("{base}/to-d/")),
            warden_policy::kernel::Found::Dir(_)
        ));
    }
}
