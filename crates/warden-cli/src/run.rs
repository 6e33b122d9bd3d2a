//! `warden run`.

use clap::Args;
use std::path::{Path, PathBuf};
use warden::run::{EnvConfig, FastPath, RunConfig, ViewMode, EXIT_WARDEN};
use warden_capsicum::fdlist::{FdSpec, InheritedSpec};
use warden_policy::{
    parse_limit, Access, LimitKind, LimitValue, Limits, PathPattern, Policy, Span,
};

#[derive(Args)]
pub struct RunArgs {
    /// Policy file (repeatable; rules add up, on top of the default policy).
    #[arg(long = "policy", short = 'p', value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// A profile shipped with warden, by name (repeatable; added like a policy file): what a
    /// common program needs beyond the default policy (`profiles/NAME.policy`). Known: nginx.
    #[arg(long = "profile", value_name = "NAME")]
    profiles: Vec<String>,
    /// Use the built-in default policy as the base (`--default-policy=no` to start from nothing).
    #[arg(long = "default-policy", value_name = "yes|no", default_value = "yes", value_parser = ["yes", "no"])]
    default_policy: String,
    /// Allow reading PATH (a directory: it and everything beneath it).
    #[arg(long = "read", value_name = "PATH")]
    read: Vec<String>,
    /// Allow writing PATH (a directory: creating and changing anything beneath it).
    #[arg(long = "write", value_name = "PATH")]
    write: Vec<String>,
    /// Allow running PATH (a directory: everything beneath it): executing it and reading it,
    /// as the kernel and an interpreter do to run a program (and as the kernel's own execute
    /// right comes, so the run stays at the kernel's speed).
    #[arg(long = "exec", value_name = "PATH")]
    exec: Vec<String>,
    /// Allow removing PATH (a directory: anything beneath it).
    #[arg(long = "unlink", value_name = "PATH")]
    unlink: Vec<String>,
    /// Build the project you are standing in: the current directory and everything beneath it
    /// may be read, written, removed and run (its scripts, what it builds), and the program
    /// starts there. Nothing above or beside it is opened up.
    #[arg(long)]
    here: bool,
    /// Keep the scratch directory after the run (its path is printed).
    #[arg(long)]
    keep: bool,
    /// Report each denied call on stderr.
    #[arg(short, long)]
    verbose: bool,
    /// Write every delegated decision (allowed and denied) as JSON lines to FILE.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// The most the run writes to --log (a size such as 512K or 16M; default 4M), so that a
    /// program cannot fill the disk by failing calls: past it, decisions are counted and not
    /// written, and the log's last line and the run report (`log-dropped`) say how many.
    #[arg(long = "log-max", value_name = "SIZE", requires = "log", value_parser = log_size)]
    log_max: Option<u64>,
    /// Who decides the calls that name paths. Unset (the default): `auto` in the sandbox's own
    /// view, `never` on the host's tree. `never`: the agent, every one of them (every decision
    /// checked, logged and explained). `auto`: the kernel when it can enforce every path rule
    /// exactly (`warden check --explain` says which rules can) and no --log (in a view, no -v)
    /// is asked for; the agent otherwise. In a view the kernel then also answers stat, access,
    /// readlink and chdir, and a hidden path is simply not there (ENOENT); without one, an open
    /// of a hidden path tells whether it exists (ENOENT or EACCES), which the agent never does.
    /// `always`: the kernel, or refuse to start and say which rules prevent it.
    #[arg(long = "fast-path", env = "WARDEN_FAST_PATH", value_name = "auto|always|never", value_parser = ["auto", "always", "never"])]
    fast_path: Option<String>,
    /// Run the program in capability mode (Capsicum's cap_enter, docs/design.md section 9):
    /// no absolute path, no path from the current directory, no socket by address, no other
    /// process by pid, no System V IPC; only lookups strictly beneath the directories given
    /// with --fd. Refusals are EPERM (ECAPMODE) and EACCES (ENOTCAPABLE); -v names the rule.
    #[arg(
        long = "capability-mode",
        help_heading = "Capability mode",
        conflicts_with = "capsicum"
    )]
    capability_mode: bool,
    /// Let the program enter capability mode itself (Capsicum's cap_enter, from the Rust crate
    /// warden-capsicum or the C library in crates/warden-capsicum/c): a process that calls it,
    /// its threads and every process it starts afterwards are held to capability mode's rules,
    /// with no way back; cap_rights_limit narrows what a descriptor may do.
    #[arg(long = "capsicum", help_heading = "Capability mode")]
    capsicum: bool,
    /// Start the program holding PATH as the descriptor named NAME, with RIGHTS (comma-separated:
    /// read, write, seek, fstat, lookup, create, mkdir, unlink, mmap, fchmod, fexecve, ...).
    /// The program finds it in WARDEN_FDLIST=NAME=N,...; needs --capability-mode or --capsicum.
    #[arg(long = "fd", value_name = "NAME=PATH:RIGHTS", help_heading = "Capability mode", value_parser = FdSpec::parse)]
    fd: Vec<FdSpec>,
    /// Pass warden's inherited descriptor N to the program as the descriptor named NAME, with
    /// RIGHTS (as --fd, without opening a path): what a host starting a sandbox through
    /// warden_capsicum::sandbox (libcapsicum's lch_start) hands over. A descriptor open wider
    /// than its rights is opened again narrower; a socket must be given read and write.
    #[arg(long = "fd-inherited", value_name = "NAME=N:RIGHTS", help_heading = "Capability mode", value_parser = InheritedSpec::parse)]
    fd_inherited: Vec<InheritedSpec>,
    /// A unix socket (SOCK_SEQPACKET) inherited from the host as descriptor N, on which warden
    /// takes more capabilities for the program: each message a rights set and a descriptor,
    /// recorded before the host passes that descriptor to the program itself.
    #[arg(
        long = "grant-socket",
        value_name = "N",
        help_heading = "Capability mode"
    )]
    grant_socket: Option<i32>,
    /// Whether the sandbox sees a file system of its own, built from the policy: a mount
    /// namespace holding only what the policy allows, read-only where it gives no `write` and
    /// `noexec` where it gives no `exec` (so nothing else can be run, not even through `ld.so`),
    /// with a fresh /proc of the sandbox's own processes. `auto`: a view wherever the kernel has
    /// the mount API it needs (Linux 5.2+), the host's tree elsewhere (-v says so); `on`: a view
    /// or no run; `off`: the host's tree, with every path decided by the agent and Landlock.
    /// In a view, shared libraries and anything else mapped executable need `exec` too (the
    /// default policy gives it for the system's), a path the policy does not name is not there
    /// (ENOENT), and a write where the policy gives none is a read-only file system (EROFS).
    #[arg(long = "view", env = "WARDEN_VIEW", value_name = "auto|on|off", default_value = "auto", value_parser = ["auto", "on", "off"])]
    view: String,
    /// Pieces the run must have, or not run (exit 125 and one sentence), comma-separated:
    /// `userns` (user namespaces: without it, on a host that refuses them, warden runs without
    /// namespaces, degraded and saying so), `landlock` (Landlock enforcing every right and
    /// scope warden uses, ABI 6+), `view` (the sandbox's own view, as --view on).
    #[arg(long = "require", value_name = "userns,landlock,view", value_parser = warden::run::Require::parse)]
    require: Option<warden::run::Require>,

    /// CPU time limit, user+sys of every process of the sandbox (policy: limit-time).
    #[arg(long, value_name = "SEC", help_heading = "Limits", value_parser = limit(LimitKind::Time))]
    time: Option<LimitValue>,
    /// Wall-clock time limit (policy: limit-wall-time).
    #[arg(long = "wall-time", value_name = "SEC", help_heading = "Limits", value_parser = limit(LimitKind::WallTime))]
    wall_time: Option<LimitValue>,
    /// Grace after a time limit before the sandbox is killed; a run over the limit is still
    /// reported TO (policy: limit-extra-time).
    #[arg(long = "extra-time", value_name = "SEC", help_heading = "Limits", value_parser = limit(LimitKind::ExtraTime))]
    extra_time: Option<LimitValue>,
    /// Memory of the whole sandbox, e.g. 256M (policy: limit-mem).
    #[arg(long, value_name = "SIZE", help_heading = "Limits", value_parser = limit(LimitKind::Mem))]
    mem: Option<LimitValue>,
    /// Processes and threads of the sandbox (policy: limit-processes).
    #[arg(long, value_name = "N", help_heading = "Limits", value_parser = limit(LimitKind::Processes))]
    processes: Option<LimitValue>,
    /// The run's own disk: what the scratch directory, the tmpfs maps (/dev/shm too) and the
    /// private copies' changes hold together, in a tmpfs of this size (policy: limit-disk;
    /// default 1G). Past it, writes fail with ENOSPC ("No space left on device"). Its pages
    /// are memory, counted in --mem. Needs the sandbox's own view; with --keep the scratch
    /// directory (and the copies) stay on the host's disk, outside it.
    #[arg(long, value_name = "SIZE", help_heading = "Limits", value_parser = limit(LimitKind::Disk))]
    disk: Option<LimitValue>,
    /// Largest file the program may write (policy: limit-fsize).
    #[arg(long, value_name = "SIZE", help_heading = "Limits", value_parser = limit(LimitKind::Fsize))]
    fsize: Option<LimitValue>,
    /// Stack size (policy: limit-stack).
    #[arg(long, value_name = "SIZE", help_heading = "Limits", value_parser = limit(LimitKind::Stack))]
    stack: Option<LimitValue>,
    /// Open descriptors per process (policy: limit-open-files).
    #[arg(long = "open-files", value_name = "N", help_heading = "Limits", value_parser = limit(LimitKind::OpenFiles))]
    open_files: Option<LimitValue>,
    /// Bytes the program may write to stdout and stderr together; more kills the sandbox
    /// (policy: limit-output).
    #[arg(long = "output-limit", value_name = "SIZE", help_heading = "Limits", value_parser = limit(LimitKind::Output))]
    output_limit: Option<LimitValue>,
    /// Sockets in the host's network the sandbox may hold at once, with net-allow IP rules
    /// (policy: limit-sockets; default 4096).
    #[arg(long, value_name = "N", help_heading = "Limits", value_parser = limit(LimitKind::Sockets))]
    sockets: Option<LimitValue>,

    /// Read the program's stdin from FILE (opened by warden, outside the policy).
    #[arg(long, value_name = "FILE", help_heading = "Environment")]
    stdin: Option<PathBuf>,
    /// Write the program's stdout to FILE (created or truncated by warden).
    #[arg(long, value_name = "FILE", help_heading = "Environment")]
    stdout: Option<PathBuf>,
    /// Write the program's stderr to FILE (created or truncated by warden).
    #[arg(long, value_name = "FILE", help_heading = "Environment")]
    stderr: Option<PathBuf>,
    /// Set NAME to VALUE in the program's environment, or with no `=VALUE` copy warden's NAME.
    #[arg(long = "env", value_name = "NAME[=VALUE]", help_heading = "Environment", value_parser = env_setting)]
    env: Vec<(String, Option<String>)>,
    /// Start from a minimal environment (PATH, HOME, TMPDIR) instead of warden's.
    #[arg(long = "env-clear", help_heading = "Environment")]
    env_clear: bool,
    /// Start the program in DIR (overrides the policy's starting_dir).
    #[arg(long, value_name = "DIR", help_heading = "Environment")]
    chdir: Option<PathBuf>,
    /// Run the sandbox on these CPUs only, e.g. 0 or 0,2-3.
    #[arg(long, value_name = "LIST", help_heading = "Environment", value_parser = cpu_list)]
    cpu: Option<CpuList>,
    /// Keep warden's descriptor N open as N in the program (repeatable; by default only 0, 1 and
    /// 2 are passed).
    #[arg(long = "pass-fd", value_name = "N", help_heading = "Environment")]
    pass_fd: Vec<i32>,
    /// Let the program keep warden's controlling terminal (an interactive run): it can open
    /// /dev/tty, and what it writes there is not counted by --output-limit nor redirected by
    /// --stdout. Without it the sandbox has no controlling terminal, /dev/tty is ENXIO, and a
    /// standard stream that is a terminal reaches the program as a pipe warden relays (it can
    /// neither read the terminal through its output nor change its modes or size). Either way
    /// warden puts the terminal's modes and size back as it found them when the run ends.
    #[arg(long, alias = "interactive", help_heading = "Environment")]
    tty: bool,
    /// W^X: the program may execute only code mapped from files the policy calls executable.
    /// No memory is ever writable and executable, none becomes executable after it is mapped
    /// (PR_SET_MDWE, Linux 6.3), memfds are refused and SysV shared memory cannot be attached
    /// executable. For programs that need no JIT (compilers, shells, contest submissions):
    /// code they read from a file without an exec right cannot run by any route.
    #[arg(long)]
    wx: bool,

    /// Write a report of the run as isolate-style key:value lines to FILE.
    #[arg(long, alias = "meta", value_name = "FILE", help_heading = "Report")]
    report: Option<PathBuf>,
    /// Write the report of the run as JSON to FILE.
    #[arg(long = "report-json", value_name = "FILE", help_heading = "Report")]
    report_json: Option<PathBuf>,
    /// The program and its arguments.
    #[arg(
        required = true,
        trailing_var_arg = true,
        value_name = "PROGRAM [ARGS]..."
    )]
    command: Vec<String>,
}

pub fn main(args: RunArgs) -> i32 {
    let policy = match build_policy(&args) {
        Ok(p) => p,
        Err(messages) => {
            for m in messages {
                eprintln!("{m}");
            }
            return EXIT_WARDEN;
        }
    };
    warden::timings::mark("policy");
    let mut command = args.command.into_iter();
    let program = command.next().expect("clap requires a program");
    let view = match args.view.as_str() {
        "on" => ViewMode::On,
        "off" => ViewMode::Off,
        _ => ViewMode::Auto,
    };
    let mut env = args.env;
    let mut pass_fds = args.pass_fd;
    let entry = match (args.capability_mode, args.capsicum) {
        (true, _) => Some(warden_capsicum::Entry::Warden),
        (false, true) => Some(warden_capsicum::Entry::Program),
        (false, false) => None,
    };
    let named = args.fd.is_empty() && args.fd_inherited.is_empty() && args.grant_socket.is_none();
    let capsicum = match (entry, named) {
        (None, false) => {
            eprintln!("warden: --fd, --fd-inherited and --grant-socket give descriptors to a program in capability mode: add --capability-mode (or --capsicum)");
            return EXIT_WARDEN;
        }
        (None, true) => None,
        (Some(entry), _) => {
            match crate::capsicum::open(&args.fd, &args.fd_inherited, args.grant_socket, entry) {
                Ok(opened) => {
                    env.push(opened.env);
                    pass_fds.extend(opened.pass_fds);
                    Some(opened.session)
                }
                Err(e) => {
                    eprintln!("warden: {e}");
                    return EXIT_WARDEN;
                }
            }
        }
    };
    let cfg = RunConfig {
        policy,
        program,
        args: command.collect(),
        keep: args.keep,
        verbose: args.verbose,
        log: args.log,
        log_max: args.log_max,
        stdio: [args.stdin, args.stdout, args.stderr],
        env: EnvConfig {
            clear: args.env_clear,
            set: env,
        },
        chdir: match (args.chdir, args.here) {
            (Some(dir), _) => Some(dir),
            (None, true) => std::env::current_dir().ok(),
            (None, false) => None,
        },
        cpus: args.cpu.map(|c| c.0),
        pass_fds,
        capsicum,
        report: args.report,
        report_json: args.report_json,
        terminal: args.tty,
        wx: args.wx,
        fast_path: match args.fast_path.as_deref() {
            Some("always") => FastPath::Always,
            Some("auto") => FastPath::Auto,
            Some("never") => FastPath::Never,
            _ => FastPath::InView,
        },
        view,
        require: args.require.unwrap_or_default(),
        ..RunConfig::default()
    };
    match warden::run::run(cfg) {
        // warden's work ends here: the sandbox's init may still be exiting (run::Finished).
        Ok(finished) => finished.exit(),
        Err(f) => {
            eprintln!("warden: {}", f.message);
            f.status
        }
    }
}

/// The profiles warden ships (`profiles/*.policy` in the source), by name.
pub const PROFILES: &[(&str, &str)] = &[("nginx", include_str!("../../../profiles/nginx.policy"))];

/// Default policy + files + profiles + shorthand flags, in that order.
fn build_policy(args: &RunArgs) -> Result<Policy, Vec<String>> {
    let mut policy = if args.default_policy == "yes" {
        Policy::default_policy()
    } else {
        Policy::default()
    };
    let mut errors = Vec::new();
    for file in &args.policies {
        match std::fs::read_to_string(file) {
            Ok(text) => match Policy::parse(&file.display().to_string(), &text) {
                Ok(p) => policy.merge(p),
                Err(diags) => errors.extend(diags.iter().map(ToString::to_string)),
            },
            Err(e) => errors.push(format!(
                "warden: cannot read policy {}: {e}",
                file.display()
            )),
        }
    }
    for name in &args.profiles {
        match PROFILES.iter().find(|(n, _)| n == name) {
            Some((_, text)) => match Policy::parse(&format!("<profile {name}>"), text) {
                Ok(p) => policy.merge(p),
                Err(diags) => errors.extend(diags.iter().map(ToString::to_string)),
            },
            None => errors.push(format!(
                "warden: --profile {}: no such profile; warden ships: {}",
                warden_policy::escape::escape(name),
                PROFILES
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
    let flags = [
        (&args.read, Access::Read, "--read"),
        (&args.write, Access::Write, "--write"),
        (&args.exec, Access::Exec, "--exec"),
        (&args.unlink, Access::Unlink, "--unlink"),
    ];
    for (paths, access, flag) in flags {
        // `--exec` reads what it runs: a script's interpreter opens it, and Landlock's execute
        // right holds only with the right to read.
        let accesses: &[Access] = match access {
            Access::Exec => &[Access::Read, Access::Exec],
            _ => std::slice::from_ref(&access),
        };
        for raw in paths.iter() {
            match flag_patterns(raw) {
                Ok(patterns) => {
                    for p in patterns {
                        for &a in accesses {
                            policy.add_rule(Some(a), p.clone(), Span::new(flag, 1, 1));
                        }
                    }
                }
                Err(e) => errors.push(format!("warden: {flag} {raw}: {e}")),
            }
        }
    }
    if args.here {
        // `--here`: the starting directory as a project the program builds.
        let home = std::env::var_os("HOME").and_then(|h| std::fs::canonicalize(h).ok());
        match std::env::current_dir().and_then(std::fs::canonicalize) {
            Ok(dir) if dir == Path::new("/") || Some(&dir) == home.as_ref() => {
                errors.push(format!(
                "warden: --here in {}: that would open everything beneath it (your whole home, \
                 or the whole machine) to the program; cd into the project first",
                warden_policy::escape::escape(dir.as_os_str().as_encoded_bytes())
            ))
            }
            Ok(dir) => match flag_patterns(&dir.to_string_lossy()) {
                Ok(patterns) => {
                    for access in [Access::Read, Access::Write, Access::Unlink, Access::Exec] {
                        for p in &patterns {
                            policy.add_rule(Some(access), p.clone(), Span::new("--here", 1, 1));
                        }
                    }
                }
                Err(e) => errors.push(format!("warden: --here: {e}")),
            },
            Err(e) => errors.push(format!("warden: --here: no current directory: {e}")),
        }
    }
    if args.tty {
        // An interactive run: the terminal the program already holds, by its own name, so
        // `tty` and ttyname(3) find it (they stat /dev/pts/N).
        for path in own_terminals() {
            if let Ok(p) = PathPattern::parse(&path) {
                for access in [Access::Read, Access::Write] {
                    policy.add_rule(Some(access), p.clone(), Span::new("--tty", 1, 1));
                }
            }
        }
    }
    // Flags override the policy's limits.
    let mut flags = Limits::default();
    for (kind, value) in [
        (LimitKind::Time, args.time),
        (LimitKind::WallTime, args.wall_time),
        (LimitKind::ExtraTime, args.extra_time),
        (LimitKind::Mem, args.mem),
        (LimitKind::Processes, args.processes),
        (LimitKind::Fsize, args.fsize),
        (LimitKind::Stack, args.stack),
        (LimitKind::OpenFiles, args.open_files),
        (LimitKind::Output, args.output_limit),
        (LimitKind::Sockets, args.sockets),
        (LimitKind::Disk, args.disk),
    ] {
        if let Some(v) = value {
            flags.set(kind, v);
        }
    }
    policy.limits.merge(&flags);
    if errors.is_empty() {
        Ok(policy)
    } else {
        Err(errors)
    }
}

/// The pseudo-terminals warden's stdin, stdout and stderr are (`/dev/pts/N`), each once.
fn own_terminals() -> Vec<String> {
    use std::os::unix::fs::FileTypeExt;
    let mut out: Vec<String> = Vec::new();
    for fd in 0..3 {
        let Ok(target) = std::fs::read_link(format!("/proc/self/fd/{fd}")) else {
            continue;
        };
        let Some(text) = target.to_str() else {
            continue;
        };
        let is_pts = text
            .strip_prefix("/dev/pts/")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        let is_char = std::fs::metadata(&target).is_ok_and(|m| m.file_type().is_char_device());
        if is_pts && is_char && !out.iter().any(|p| p == text) {
            out.push(text.to_owned());
        }
    }
    out
}

/// A clap parser for one limit flag, accepting what the policy keyword accepts.
fn limit(kind: LimitKind) -> impl Fn(&str) -> Result<LimitValue, String> + Clone {
    move |text| parse_limit(kind, text)
}

/// `--log-max`: a size that holds at least the log's last line.
fn log_size(text: &str) -> Result<u64, String> {
    let n = warden_policy::parse_size(text)?;
    if n < 4096 {
        return Err(format!("`{text}` is too small a log; give 4K or more"));
    }
    Ok(n)
}

/// `NAME=VALUE` or `NAME`.
fn env_setting(text: &str) -> Result<(String, Option<String>), String> {
    let (name, value) = match text.split_once('=') {
        Some((n, v)) => (n, Some(v.to_owned())),
        None => (text, None),
    };
    if name.is_empty() || name.contains('\0') || value.as_deref().is_some_and(|v| v.contains('\0'))
    {
        return Err(format!("`{text}` is not NAME=VALUE or NAME"));
    }
    Ok((name.to_owned(), value))
}

/// The CPUs of `--cpu`, sorted, each once.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CpuList(Vec<usize>);

/// A CPU list such as `0`, `0,2` or `0-3,6`.
fn cpu_list(text: &str) -> Result<CpuList, String> {
    let bad = || format!("`{text}` is not a CPU list such as 0, 0,2 or 0-3");
    let mut out = Vec::new();
    for part in text.split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let lo: usize = lo.parse().map_err(|_| bad())?;
        let hi: usize = hi.parse().map_err(|_| bad())?;
        if lo > hi || hi >= 1024 {
            return Err(bad());
        }
        out.extend(lo..=hi);
    }
    out.sort_unstable();
    out.dedup();
    Ok(CpuList(out))
}

/// A flag's path: made absolute against the current directory; an existing directory (given
/// without `*`) means the directory and everything beneath it.
///
/// The agent checks the paths a program walks: directories on the way with their symlinks
/// followed, and a final symlink both as itself (following it needs some right on it) and as
/// its target. So a flag names what it is given both ways: `--exec L` for a symlink `L` allows
/// `L` itself (its directories resolved) and what it leads to, and a program reached through
/// the link runs. With a `*`, the part before the last `/` is resolved and the rest kept as
/// written (`D/*` stays "beneath D", never the `D*` of every name that starts so).
fn flag_patterns(raw: &str) -> Result<Vec<PathPattern>, String> {
    let star = raw.ends_with('*');
    let bare = raw.trim_end_matches('*');
    if bare.starts_with("$SCRATCH") {
        // Expanded per run, once the scratch directory exists. The scratch directory itself is
        // one, so `--exec '$SCRATCH'` is the tree, as for any directory given without `*`.
        let mut out = vec![PathPattern::parse(raw)?];
        if !star && bare.trim_end_matches('/') == "$SCRATCH" {
            out.push(PathPattern::parse("$SCRATCH/*")?);
        }
        return Ok(out);
    }
    let abs = if bare.starts_with('/') {
        PathBuf::from(bare)
    } else {
        std::env::current_dir()
            .map_err(|e| e.to_string())?
            .join(bare)
    };
    let text = |p: &Path| p.to_string_lossy().into_owned();
    if star {
        // "D/" or "D/na": the directory resolved, the name part (maybe empty) as written.
        let whole = text(&abs);
        let (dir, tail) = whole.rsplit_once('/').unwrap_or(("", &whole));
        let dir = resolve_existing(Path::new(if dir.is_empty() { "/" } else { dir }));
        let dir = text(&dir);
        return Ok(vec![PathPattern::parse(&format!(
            "{}/{tail}*",
            dir.trim_end_matches('/')
        ))?]);
    }
    // The path itself: its directories resolved, its last name kept (a symlink stays itself).
    let itself = match (abs.parent(), abs.file_name()) {
        (Some(dir), Some(name)) => resolve_existing(dir).join(name),
        _ => resolve_existing(&abs),
    };
    let mut paths = vec![itself];
    if let Ok(target) = std::fs::canonicalize(&abs) {
        if target != paths[0] {
            paths.push(target);
        }
    }
    let mut out = Vec::new();
    for path in paths {
        out.push(PathPattern::parse(&text(&path))?);
        // A directory (not a symlink to one: nothing is ever reached beneath a link's own path).
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            out.push(PathPattern::parse(&format!(
                "{}/*",
                text(&path).trim_end_matches('/')
            ))?);
        }
    }
    Ok(out)
}

/// `path` with the part that exists resolved (symlinks, `.`, `..`): its longest existing
/// ancestor made canonical, then the names below it as written.
fn resolve_existing(path: &Path) -> PathBuf {
    let mut below = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            return below.iter().rev().fold(real, |p, name| p.join(name));
        }
        match (at.parent(), at.file_name()) {
            (Some(up), Some(name)) => {
                below.push(name.to_owned());
                at = up;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_profile_parses() {
        for (name, text) in PROFILES {
            assert!(Policy::parse(name, text).is_ok(), "profile {name}");
        }
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list("0"), Ok(CpuList(vec![0])));
        assert_eq!(cpu_list("2,0-1"), Ok(CpuList(vec![0, 1, 2])));
        assert_eq!(cpu_list("1,1"), Ok(CpuList(vec![1])));
        for bad in ["", "a", "1-0", "0,", "-1", "0-5000"] {
            assert!(cpu_list(bad).is_err(), "{bad:?}");
        }
    }

    fn texts(raw: &str) -> Vec<String> {
        flag_patterns(raw)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn flags_name_links_as_themselves_and_their_targets() {
        let dir = std::env::temp_dir().join(format!("warden-flags-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("real/sub")).unwrap();
        std::fs::write(dir.join("real/f"), "").unwrap();
        std::os::unix::fs::symlink(dir.join("real/f"), dir.join("lf")).unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("ld")).unwrap();
        let d = std::fs::canonicalize(&dir).unwrap();
        let d = d.to_str().unwrap();
        assert_eq!(
            texts(&format!("{d}/lf")),
            [format!("{d}/lf"), format!("{d}/real/f")]
        );
        assert_eq!(
            texts(&format!("{d}/ld")),
            [
                format!("{d}/ld"),
                format!("{d}/real"),
                format!("{d}/real/*")
            ]
        );
        assert_eq!(
            texts(&format!("{d}/real/")),
            [format!("{d}/real"), format!("{d}/real/*")]
        );
        // Directories on the way are resolved, names that do not exist yet kept.
        assert_eq!(texts(&format!("{d}/ld/new")), [format!("{d}/real/new")]);
        assert_eq!(texts(&format!("{d}/ld/sub/../f")), [format!("{d}/real/f")]);
        // `D/*` is beneath D (never `D*`), through a link too; `D/na*` keeps its name part.
        assert_eq!(texts(&format!("{d}/real/*")), [format!("{d}/real/*")]);
        assert_eq!(texts(&format!("{d}/ld/*")), [format!("{d}/real/*")]);
        assert_eq!(texts(&format!("{d}/ld/su*")), [format!("{d}/real/su*")]);
        assert_eq!(texts("$SCRATCH/ve/bin/*"), ["$SCRATCH/ve/bin/*"]);
        // The scratch directory is a directory: without `*`, itself and its tree.
        assert_eq!(texts("$SCRATCH"), ["$SCRATCH", "$SCRATCH/*"]);
        assert_eq!(texts("$SCRATCH/"), ["$SCRATCH", "$SCRATCH/*"]);
        assert_eq!(texts("$SCRATCH/a.out"), ["$SCRATCH/a.out"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn env_settings() {
        assert_eq!(
            env_setting("A=b=c"),
            Ok(("A".to_owned(), Some("b=c".to_owned())))
        );
        assert_eq!(env_setting("A"), Ok(("A".to_owned(), None)));
        assert_eq!(env_setting("A="), Ok(("A".to_owned(), Some(String::new()))));
        assert!(env_setting("=x").is_err());
    }

    #[test]
    fn a_tree_flag_stays_a_tree_and_never_becomes_a_name_prefix() {
        let dir = std::env::temp_dir();
        let d = std::fs::canonicalize(&dir).unwrap();
        let d = d.to_str().unwrap();
        let text = |raw: &str| -> Vec<String> {
            flag_patterns(raw)
                .unwrap()
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(text(&format!("{d}/*")), vec![format!("{d}/*")]);
        assert_eq!(text(&format!("{d}/na*")), vec![format!("{d}/na*")]);
        assert_eq!(text(d), vec![d.to_string(), format!("{d}/*")]);
    }
}
