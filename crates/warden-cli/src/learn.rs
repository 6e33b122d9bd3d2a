//! `warden learn`: run a program with every access allowed but recorded, and write the policy
//! that allows exactly what it used (see `warden::learn`).

use clap::Args;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use warden::learn::{
    interpreters, is_lookup, learn, parse_log, Context, Observation, Observations,
};
use warden::run::{RunConfig, Session, EXIT_WARDEN};
use warden_policy::escape::escape;
use warden_policy::{Access, Policy};

#[derive(Args)]
pub struct LearnArgs {
    /// Write the learned policy to FILE (created before the program runs, and out of its
    /// reach while it does) instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// The policy the learned one will be used with, besides the default (repeatable): what it
    /// already allows is not learned.
    #[arg(long = "base", value_name = "POLICY")]
    base: Vec<PathBuf>,
    /// Start from the built-in default policy (`--default-policy=no`: learn everything).
    #[arg(long = "default-policy", value_name = "yes|no", default_value = "yes",
          value_parser = ["yes", "no"], num_args = 1, require_equals = false)]
    default_policy: String,
    /// Then run the same command under the learned policy and report every call it denies.
    #[arg(long)]
    verify: bool,
    /// Start the program in the directory you are standing in (a build learns its project, as
    /// `warden run --here` builds it); the learned policy starts its runs there
    /// (`starting_dir`).
    #[arg(long, conflicts_with = "chdir")]
    here: bool,
    /// Start the program in DIR; the learned policy starts its runs there (`starting_dir`).
    #[arg(long, value_name = "DIR")]
    chdir: Option<PathBuf>,
    /// The program and its arguments.
    #[arg(
        required = true,
        trailing_var_arg = true,
        value_name = "PROGRAM [ARGS]..."
    )]
    command: Vec<String>,
}

/// Everything allowed, for the learning run (still in namespaces, without privileges). Device
/// nodes open only where a rule names them exactly: the harmless ones are named.
const EVERYTHING: &str = "\
path-allow read /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty
path-allow write /dev/null /dev/zero /dev/full /dev/tty
path-allow read / /*
path-allow write /*
path-allow unlink /*
path-allow exec /*
net-allow outgoing tcp 0/0 0/0
net-allow outgoing tcp ::/0 0/0
net-allow outgoing udp 0/0 0/0
net-allow outgoing udp ::/0 0/0
net-allow incoming tcp 0/0 0/0
net-allow incoming tcp ::/0 0/0
net-allow incoming udp 0/0 0/0
net-allow incoming udp ::/0 0/0
net-allow outgoing unix-domain /*
net-allow incoming unix-domain /*
";

pub fn main(args: LearnArgs) -> i32 {
    match learn_main(args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("warden learn: {message}");
            EXIT_WARDEN
        }
    }
}

fn learn_main(args: LearnArgs) -> Result<i32, String> {
    let base = base_policy(&args)?;
    // The output is created now, by warden, and held open; afterwards it is written only if the
    // path still names that very file (the program, allowed to write everywhere, may have
    // replaced it with a link to something else).
    let output = match &args.output {
        Some(path) => Some(open_output(path)?),
        None => None,
    };
    let private = private_dir()?;
    let result = learn_in(&args, &base, &private);
    let _ = std::fs::remove_dir_all(&private);
    let (text, code) = result?;
    match output {
        Some((path, file)) => match write_output(&path, &file, &text) {
            Ok(()) => eprintln!("warden learn: wrote {}", path.display()),
            Err(e) => {
                print!("{text}");
                return Err(format!(
                    "{e}; the learned policy is on stdout instead (review what the program did)"
                ));
            }
        },
        None => print!("{text}"),
    }
    Ok(code)
}

/// Where `--here` or `--chdir` start the program, resolved: a directory whose name a policy
/// line can hold (it goes in the learned policy's `starting_dir`). `None` without either.
fn start_dir(args: &LearnArgs) -> Result<Option<PathBuf>, String> {
    let (flag, dir) = match (&args.chdir, args.here) {
        (Some(dir), _) => ("--chdir", dir.clone()),
        (None, true) => (
            "--here",
            std::env::current_dir().map_err(|e| format!("--here: no current directory: {e}"))?,
        ),
        (None, false) => return Ok(None),
    };
    let shown = escape(&dir.display().to_string()).into_owned();
    let dir = std::fs::canonicalize(&dir).map_err(|e| format!("{flag} {shown}: {e}"))?;
    if !dir.is_dir() {
        return Err(format!("{flag} {shown}: not a directory"));
    }
    let home = std::env::var_os("HOME").and_then(|h| std::fs::canonicalize(h).ok());
    if args.here && (dir == Path::new("/") || Some(&dir) == home.as_ref()) {
        return Err(format!(
            "--here in {shown}: the learned policy would open everything beneath it (your whole \
             home, or the whole machine) to its runs; cd into the project first"
        ));
    }
    match dir.to_str() {
        Some(t) if warden_policy::PathPattern::names_exactly(t) => Ok(Some(dir)),
        _ => Err(format!(
            "{flag} {shown}: the learned policy's starting_dir could not name it: {}",
            warden_policy::UNNAMEABLE
        )),
    }
}

/// What `--here` gives in `dir`: every access to it and everything beneath it.
fn here_rules(dir: &Path) -> Result<Vec<(Access, warden_policy::PathPattern)>, String> {
    let d = dir.display().to_string();
    let patterns = [d.clone(), format!("{d}/*")]
        .iter()
        .map(|p| warden_policy::PathPattern::parse(p).map_err(|e| format!("--here: {e}")))
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Access::ALL
        .iter()
        .flat_map(|a| patterns.iter().map(move |p| (*a, p.clone())))
        .collect())
}

fn learn_in(args: &LearnArgs, base: &Policy, private: &Path) -> Result<(String, i32), String> {
    let start_dir = start_dir(args)?;
    let mut learning = settings_of(base);
    learning.merge(
        Policy::parse("<learn>", EVERYTHING)
            .map_err(|d| format!("cannot build the learning policy: {d:?}"))?,
    );
    // The decisions stay in warden's memory, typed: a file would be within the program's reach.
    let recorded = Arc::new(std::sync::Mutex::new(Observations::default()));
    // The state the program starts from, kept for the verifying run (the learning run changes
    // it: a build is not rebuilt the second time).
    let start = if args.verify {
        starting_state(base, start_dir.as_deref(), private)
    } else {
        None
    };
    let (code, scratch) = run(args, learning, start_dir.clone(), &recorded)?;
    let mut observations = std::mem::take(&mut *recorded.lock().map_err(|_| "a poisoned lock")?);
    // warden itself starts the program (the agent sees no execve for it): the path it was
    // found at, a symlink as itself, and what that leads to, as the verify run will check them.
    for target in program_paths(&args.command[0]) {
        observations.record("execve (the program)", &target, Some(Access::Exec), true);
    }
    // The kernel opens a script's interpreter and a program's dynamic loader itself: the agent
    // never sees them, and the policy needs them.
    let interpreted: Vec<String> = observations
        .iter()
        .filter(|o| o.allowed && o.access == Some(Access::Exec))
        .flat_map(|o| interpreters(&o.target, &head))
        .collect();
    for target in interpreted {
        observations.record("execve (interpreter)", &target, Some(Access::Exec), true);
    }
    // A shared library is opened for reading, then mapped executable by the loader, which the
    // agent does not see; in the sandbox's own view (the default of `warden run`) a file mapped
    // executable needs `exec` (its mount is `noexec` otherwise).
    let libraries: Vec<String> = observations
        .iter()
        .filter(|o| o.allowed && o.access == Some(Access::Read) && o.syscall.starts_with("open"))
        .filter(|o| head(&o.target).is_some_and(|h| is_shared_object(&h)))
        .map(|o| o.target.clone())
        .collect();
    for target in libraries {
        observations.record("mmap (shared library)", &target, Some(Access::Exec), true);
    }
    if observations.dropped() > 0 {
        eprintln!(
            "warden learn: the run made more than {} distinct decisions; {} more were not kept, \
             and the policy may miss what they needed",
            Observations::MOST,
            observations.dropped()
        );
    }
    let observations = observations.counted();
    let scratch = scratch.map(|p| p.display().to_string());
    let expanded = match &scratch {
        Some(s) => base.expand_scratch(s),
        None => base.clone(),
    };
    // The built-in default's private /tmp holds what the program makes there for itself, and
    // the learned policy needs no rule for that. A file of the host's that it opened in /tmp
    // (made before the run) does: then its rules decide /tmp in the learned policy's runs (the
    // private /tmp gives way to them), so every /tmp decision of the run is learned.
    let mut expanded = if uses_hosts_tmp(&observations, scratch.as_deref()) {
        expanded.without_private_tmp()
    } else {
        expanded
    };
    // `--here`: the project as `warden run --here` gives it (read, write, remove and run all
    // of it, files it makes included), written once; nothing in it is learned one by one.
    let here = match (&start_dir, args.here) {
        (Some(dir), true) => here_rules(dir)?,
        _ => Vec::new(),
    };
    for (access, pattern) in &here {
        expanded.add_rule(
            Some(*access),
            pattern.clone(),
            warden_policy::Span::new("--here", 1, 1),
        );
    }
    // As the logged paths are: resolved, without a trailing slash.
    let home = std::env::var("HOME")
        .ok()
        .and_then(|h| std::fs::canonicalize(h).ok())
        .map(|h| h.display().to_string());
    let command = args.command.join(" ");
    let mut text = learn(
        &observations,
        &Context {
            base: &expanded,
            home: home.as_deref(),
            command: &command,
            exists: &exists,
            scratch: scratch.as_deref(),
            link_target: &link_target,
        },
    );
    // The runs of the learned policy start where this one did: what it learned of the
    // starting directory is named from there.
    if let Some(dir) = &start_dir {
        let flag = if args.here { "--here" } else { "--chdir" };
        if !here.is_empty() {
            text.push_str("# --here: the project, as `warden run --here` gives it\n");
        }
        for (access, pattern) in &here {
            text.push_str(&format!("path-allow {access} {pattern}\n"));
        }
        text.push_str(&format!(
            "starting_dir {}    # {flag}: where the program started while learning\n",
            dir.display()
        ));
    }
    eprintln!(
        "warden learn: the program exited with status {code}; {} decisions recorded",
        observations.iter().map(|(_, n)| n).sum::<u64>()
    );
    // A program that failed in its own scratch directory most often looked for its project
    // there (`warden learn -- make` learns nothing of it).
    let in_scratch = start_dir.is_none()
        && base
            .starting_dir
            .as_ref()
            .is_some_and(|(dir, _)| dir.starts_with("$SCRATCH"));
    if code != 0 && in_scratch {
        if let Ok(here) = std::env::current_dir() {
            eprintln!(
                "warden learn: it started in its own scratch directory, not in {}: --here \
                 learns it there (and the learned policy starts its runs there), --chdir DIR \
                 elsewhere",
                escape(&here.display().to_string())
            );
        }
    }
    if !args.verify {
        return Ok((text, code));
    }
    verify(args, text, code, private, start.as_ref())
}

/// Whether the learning run used something of the host's in `/tmp`, outside the run's scratch
/// directory (`scratch`), `/tmp` itself aside: a file there it opened or ran and did not write
/// itself, or anything beneath a directory of `/tmp` it did not make (a project or a socket
/// directory of the host's, where what it creates must land on the host again).
fn uses_hosts_tmp(observations: &[(Observation, u64)], scratch: Option<&str>) -> bool {
    let prefix = format!("{}/", warden_policy::PRIVATE_TMP);
    let written = |target: &str| {
        observations
            .iter()
            .any(|(o, _)| o.target == target && o.access == Some(Access::Write))
    };
    let made = |dir: &str| {
        observations
            .iter()
            .any(|(o, _)| o.allowed && o.target == dir && o.syscall.starts_with("mkdir"))
    };
    observations.iter().any(|(o, _)| {
        let Some(rel) = o.target.strip_prefix(&prefix) else {
            return false;
        };
        if !o.allowed
            || scratch.is_some_and(|s| o.target == s || o.target.starts_with(&format!("{s}/")))
        {
            return false;
        }
        match rel.split_once('/') {
            Some((top, _)) => !made(&format!("{prefix}{top}")),
            None => {
                matches!(o.access, Some(Access::Read) | Some(Access::Exec))
                    && (o.syscall.starts_with("open") || o.syscall.starts_with("exec"))
                    && !written(&o.target)
            }
        }
    })
}

/// The learning run's starting directory, when it is not a fresh scratch directory, copied
/// (`cp -a`: modes, times, links) into `private` before the program changes it: `(where it
/// is, the copy)`. `None`, with a sentence, where a copy would be unwise (`/`, the home
/// directory itself, more than [`START_MOST`] entries or bytes) or cannot be made.
fn starting_state(
    base: &Policy,
    start_dir: Option<&Path>,
    private: &Path,
) -> Option<(PathBuf, PathBuf)> {
    // A fresh scratch directory (the default's `starting_dir $SCRATCH`) has nothing to keep;
    // without any starting_dir the program starts where warden does.
    let start = match (start_dir, &base.starting_dir) {
        (Some(dir), _) => dir.to_path_buf(),
        (None, Some((dir, _))) if dir.starts_with("$SCRATCH") => return None,
        (None, Some((dir, _))) => PathBuf::from(dir),
        (None, None) => std::env::current_dir().ok()?,
    };
    let start = std::fs::canonicalize(&start).ok()?;
    let home = std::env::var_os("HOME").and_then(|h| std::fs::canonicalize(h).ok());
    let plain = start
        .to_str()
        .is_some_and(warden_policy::PathPattern::names_exactly);
    let (entries, bytes) = tree_size(&start, START_MOST);
    let why_not = if start == Path::new("/") || Some(&start) == home.as_ref() {
        Some("it is / or your home directory".to_string())
    } else if !plain {
        Some("its name cannot be written in a policy".to_string())
    } else if entries > START_MOST || bytes > START_MOST * 4096 {
        Some(format!(
            "it holds more than {START_MOST} entries or {} MiB",
            (START_MOST * 4096) >> 20
        ))
    } else {
        None
    };
    let copy = private.join("start");
    let copied = why_not.is_none()
        && std::process::Command::new("cp")
            .arg("-a")
            .arg("--")
            .arg(&start)
            .arg(&copy)
            .status()
            .is_ok_and(|s| s.success());
    if !copied {
        eprintln!(
            "warden learn: verify runs on the state the learning run leaves in {} ({})",
            escape(&start.display().to_string()),
            why_not.as_deref().unwrap_or("it could not be copied")
        );
        return None;
    }
    Some((start, copy))
}

/// Entries and bytes beneath `dir`, counted up to a little past `most` entries.
fn tree_size(dir: &Path, most: u64) -> (u64, u64) {
    let (mut entries, mut bytes) = (0u64, 0u64);
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(list) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in list.flatten() {
            entries += 1;
            if entries > most {
                return (entries, bytes);
            }
            match e.metadata() {
                Ok(m) if m.is_dir() => todo.push(e.path()),
                Ok(m) => bytes += m.len(),
                Err(_) => {}
            }
        }
    }
    (entries, bytes)
}

/// How large a starting directory `--verify` copies: entries, and 4 KiB times that in bytes.
const START_MOST: u64 = 100_000;

/// Runs the command again under the base and the `text` learned (whose run exited `code`),
/// from `start`'s copy when there is one, and reports every denial.
fn verify(
    args: &LearnArgs,
    text: String,
    code: i32,
    private: &Path,
    start: Option<&(PathBuf, PathBuf)>,
) -> Result<(String, i32), String> {
    // A second sandbox needs a fresh process (this one has the first agent's threads): run
    // `warden run` with the base and the learned policy.
    let learned = private.join("learned.policy");
    std::fs::write(&learned, &text)
        .map_err(|e| format!("cannot write {}: {e}", learned.display()))?;
    Policy::parse("<learned>", &text)
        .map_err(|d| format!("the learned policy does not parse (a bug): {d:?}"))?;
    let log2 = private.join("verify.jsonl");
    let exe = std::env::current_exe().map_err(|e| format!("cannot find warden itself: {e}"))?;
    let mut verify = std::process::Command::new(exe);
    verify.args(["run", "--default-policy", &args.default_policy]);
    for b in &args.base {
        verify.arg("--policy").arg(b);
    }
    verify.arg("--policy").arg(&learned);
    if let Some((at, copy)) = start {
        // The starting directory as it was before the learning run, in a private copy of the
        // verifying run's own (its writes land in an overlay that is dropped).
        let map = private.join("start.policy");
        std::fs::write(
            &map,
            format!("path-map {} {} copy\n", copy.display(), at.display()),
        )
        .map_err(|e| format!("cannot write {}: {e}", map.display()))?;
        verify.arg("--policy").arg(&map);
    }
    // Every denial must be seen: a bound far above a run's usual log (--log-max), and a log
    // that reached it fails the verification.
    verify
        .arg("--log")
        .arg(&log2)
        .args(["--log-max", "256M", "--"]);
    verify.args(&args.command);
    let status = verify
        .status()
        .map_err(|e| format!("cannot run warden for --verify: {e}"))?;
    let code2 = status.code().unwrap_or_else(|| {
        128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
    });
    // A lookup (or an exec: a PATH search) of a path that does not exist failed while learning
    // too (ENOENT then, EACCES now): the same outcome for the program.
    let denied: Vec<Observation> = read_log(&log2)?
        .counted()
        .into_iter()
        .map(|(o, _)| o)
        .filter(|o| {
            let probe = is_lookup(&o.syscall) || o.access == Some(Access::Exec);
            !o.allowed && (!probe || exists(&o.target))
        })
        .collect();
    let dropped = dropped_from_log(&log2);
    if dropped > 0 {
        eprintln!(
            "warden learn: verify: the decision log reached its bound; {dropped} decisions were \
             not checked"
        );
    }
    for d in &denied {
        eprintln!(
            "warden learn: verify: {}(\"{}\") is denied under the learned policy",
            escape(&d.syscall),
            escape(&d.target)
        );
    }
    if code2 != code {
        eprintln!(
            "warden learn: verify: the program exited with {code2} under the learned policy, \
             {code} while learning"
        );
    }
    if denied.is_empty() && code2 == code && dropped == 0 {
        // A program that failed while learning fails the same way: no denial, and nothing
        // learned of what it never reached.
        let failed = if code == 0 {
            String::new()
        } else {
            format!(" (it exited with status {code} both times: the policy has nothing of what it did not reach)")
        };
        eprintln!(
            "warden learn: verify: the same command runs under the learned policy with no \
             denial{failed}"
        );
        Ok((text, code))
    } else {
        Ok((text, 1))
    }
}

/// The learning run: opened, decided and made as `warden run` makes one
/// ([`warden::run::Session`]); returns the program's exit status and the scratch directory's
/// path (the log names paths in it, learned relative to `$SCRATCH`).
fn run(
    args: &LearnArgs,
    policy: Policy,
    chdir: Option<PathBuf>,
    recorded: &Arc<std::sync::Mutex<Observations>>,
) -> Result<(i32, Option<PathBuf>), String> {
    let mut command = args.command.iter().cloned();
    let cfg = RunConfig {
        policy,
        chdir,
        program: command.next().expect("clap requires a program"),
        args: command.collect(),
        observations: Some(Arc::clone(recorded)),
        // Learning needs every decision, and only the agent sees them all; on the host's tree,
        // as the program would run without warden (the verifying run has the default view).
        fast_path: warden::run::FastPath::Never,
        view: warden::run::ViewMode::Off,
        ..RunConfig::default()
    };
    let mut session = Session::open(cfg).map_err(|f| f.message)?;
    let scratch = session.scratch().map(Path::to_owned);
    let result = session.decide().and_then(|plan| session.execute(plan));
    // Dropped at once: init is reaped before anything else runs.
    let code = session.close(result).map_err(|f| f.message)?.status;
    Ok((code, scratch))
}

/// Where `warden run` will find `name` (on `PATH`, as `execvp` would, when it has no `/`): the
/// path with its directories resolved and its own name kept (a symlink stays itself), then its
/// target when that differs. Empty when it is not found.
fn program_paths(name: &str) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if name.contains('/') {
        Some(PathBuf::from(name)).filter(|p| p.is_absolute() && runnable(p))
    } else {
        let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_absolute() && runnable(p))
    };
    let Some(found) = found else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let (Some(dir), Some(file)) = (found.parent(), found.file_name()) {
        if let Ok(dir) = std::fs::canonicalize(dir) {
            out.push(dir.join(file).display().to_string());
        }
    }
    if let Ok(target) = std::fs::canonicalize(&found) {
        let target = target.display().to_string();
        if !out.contains(&target) {
            out.push(target);
        }
    }
    out
}

/// The first 4 KiB of a file (enough for `#!` and the ELF headers).
fn head(path: &str) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut buf = vec![0u8; 4096];
    let mut f = std::fs::File::open(path).ok()?;
    let n = f.read(&mut buf).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// Whether `head` (a file's first bytes) is an ELF shared object (`ET_DYN`: a library, or a
/// position-independent program), which a loader maps executable.
fn is_shared_object(head: &[u8]) -> bool {
    head.len() >= 18 && head.starts_with(b"\x7fELF") && {
        let e_type = [head[16], head[17]];
        // EI_DATA: 1 little-endian, 2 big-endian; ET_DYN is 3.
        match head[5] {
            1 => u16::from_le_bytes(e_type) == 3,
            2 => u16::from_be_bytes(e_type) == 3,
            _ => false,
        }
    }
}

/// Where `path` leads when it is a symlink now: its canonical path, or "" when it leads
/// nowhere; `None` when it is not a symlink, or is in /proc (`/proc/net` leads to warden's own
/// `/proc/PID/net` here, and to the program's `/proc/self/net` there).
fn link_target(path: &str) -> Option<String> {
    if path == "/proc" || path.starts_with("/proc/") {
        return None;
    }
    let meta = std::fs::symlink_metadata(path).ok()?;
    meta.file_type().is_symlink().then(|| {
        std::fs::canonicalize(path)
            .ok()
            .and_then(|p| p.to_str().map(str::to_owned))
            .unwrap_or_default()
    })
}

fn exists(path: &str) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// How many decisions a decision log says it dropped (its last line, when it reached its
/// bound).
fn dropped_from_log(path: &Path) -> u64 {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["decision"] == "dropped")
        .and_then(|v| v["dropped"].as_u64())
        .unwrap_or(0)
}

fn read_log(path: &Path) -> Result<Observations, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the decision log {}: {e}", path.display()))?;
    Ok(parse_log(&text))
}

/// Only the base's settings (ids and `map-ids`, starting directory, limits, ptrace), none of
/// its rules.
fn settings_of(base: &Policy) -> Policy {
    let mut p = Policy::default();
    p.starting_uid = base.starting_uid;
    p.starting_gid = base.starting_gid;
    p.map_ids.clone_from(&base.map_ids);
    p.starting_dir.clone_from(&base.starting_dir);
    p.limits = base.limits;
    p.ptrace_inside.clone_from(&base.ptrace_inside);
    p
}

fn base_policy(args: &LearnArgs) -> Result<Policy, String> {
    let mut policy = if args.default_policy == "yes" {
        Policy::default_policy()
    } else {
        Policy::default()
    };
    for file in &args.base {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read policy {}: {e}", file.display()))?;
        let p = Policy::parse(&file.display().to_string(), &text).map_err(|d| {
            d.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        })?;
        policy.merge(p);
    }
    Ok(policy)
}

/// Creates (or truncates) the output file, never through a symlink, and returns its absolute
/// path and the open file.
fn open_output(path: &Path) -> Result<(PathBuf, std::fs::File), String> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let abs = std::fs::canonicalize(path)
        .map_err(|e| format!("cannot resolve {}: {e}", path.display()))?;
    Ok((abs, file))
}

/// Writes `text` into `file` (created before the run) if `path` still names it, with no
/// symlink on the way and no other name for it.
fn write_output(path: &Path, file: &std::fs::File, text: &str) -> Result<(), String> {
    use std::os::unix::fs::{FileExt, MetadataExt};
    let ours = file
        .metadata()
        .map_err(|e| format!("cannot stat {}: {e}", path.display()))?;
    let now = rustix::fs::openat2(
        rustix::fs::CWD,
        path,
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
        rustix::fs::ResolveFlags::NO_SYMLINKS,
    )
    .and_then(|fd| rustix::fs::fstat(&fd))
    .map_err(|e| format!("{} changed while the program ran ({e})", path.display()))?;
    if (now.st_dev, now.st_ino) != (ours.dev(), ours.ino()) || ours.nlink() != 1 {
        return Err(format!(
            "{} was replaced or linked elsewhere while the program ran",
            path.display()
        ));
    }
    file.set_len(0)
        .and_then(|()| file.write_all_at(text.as_bytes(), 0))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A fresh directory only warden's user can enter, for the decision logs.
fn private_dir() -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    for _ in 0..16 {
        let dir = base.join(format!(
            "warden-learn-{}-{:08x}",
            std::process::id(),
            warden::unique::rand32()
        ));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(format!(
                    "cannot create a directory in {}: {e}",
                    base.display()
                ))
            }
        }
    }
    Err("cannot create a unique private directory".into())
}

#[cfg(test)]
mod tests {
    use super::is_shared_object;

    #[test]
    fn the_hosts_tmp_is_used_by_what_the_program_did_not_make_there() {
        use super::{uses_hosts_tmp, Access, Observation};
        let o = |syscall: &str, target: &str, access: Access| {
            (
                Observation {
                    syscall: syscall.into(),
                    target: target.into(),
                    access: Some(access),
                    allowed: true,
                },
                1,
            )
        };
        let own = [
            o("mkdir", "/tmp/tmpab12", Access::Write),
            o("openat", "/tmp/tmpab12/f", Access::Write),
            o("openat", "/tmp/tmpab12/f", Access::Read),
            o("openat", "/tmp/x.tmp", Access::Write),
            o("openat", "/tmp/x.tmp", Access::Read),
            o("openat", "/tmp/warden-1/scratch/a", Access::Read),
        ];
        assert!(!uses_hosts_tmp(&own, Some("/tmp/warden-1/scratch")));
        for hosts in [
            // A file of the host's, read.
            o("openat", "/tmp/nginx.conf", Access::Read),
            // Something made in a directory of the host's.
            o("openat", "/tmp/project/marker", Access::Write),
            o("mkdir", "/tmp/project/build", Access::Write),
        ] {
            let mut all = own.to_vec();
            all.push(hosts.clone());
            assert!(
                uses_hosts_tmp(&all, Some("/tmp/warden-1/scratch")),
                "{:?}",
                hosts.0
            );
        }
    }

    #[test]
    fn shared_objects_are_elf_files_of_type_dyn() {
        let elf = |data: u8, e_type: [u8; 2]| {
            let mut h = vec![0u8; 64];
            h[..4].copy_from_slice(b"\x7fELF");
            h[4] = 2;
            h[5] = data;
            h[16..18].copy_from_slice(&e_type);
            h
        };
        assert!(is_shared_object(&elf(1, [3, 0])));
        assert!(is_shared_object(&elf(2, [0, 3])));
        // A relocatable object, a static executable, a core file: not mapped by a loader.
        assert!(!is_shared_object(&elf(1, [1, 0])));
        assert!(!is_shared_object(&elf(1, [2, 0])));
        assert!(!is_shared_object(&elf(1, [4, 0])));
        assert!(!is_shared_object(&elf(1, [0, 3])));
        assert!(!is_shared_object(b"#!/bin/sh\n"));
        assert!(!is_shared_object(b"\x7fELF"));
    }
}
