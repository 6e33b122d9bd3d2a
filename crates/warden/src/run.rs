//! `warden run`: everything between a parsed command line and the program's exit status.

use crate::agent::{log::Log, Agent};
use crate::confine::landlock;
use crate::confine::namespaces::IdMap;
use crate::filter;
use crate::launch::{self, Command, LaunchError, Outcome, Stage};
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use warden_policy::{Access, Policy};

/// Exit status for warden's own failures (bad usage, bad policy, no sandbox).
pub const EXIT_WARDEN: i32 = 125;
/// Exit status when the program was found but could not be executed.
pub const EXIT_CANNOT_EXEC: i32 = 126;
/// Exit status when the program was not found.
pub const EXIT_NOT_FOUND: i32 = 127;

/// Everything `warden run` needs.
pub struct RunConfig {
    /// The policy, `$SCRATCH` not yet expanded.
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
}

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

/// Runs the program and returns its exit status (128+N for signal N).
pub fn run(cfg: RunConfig) -> Result<i32, Failure> {
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
    };
    let scratch = if cfg.policy.uses_scratch() {
        Some(Scratch::create(ids)?)
    } else {
        None
    };
    let result = run_in(&cfg, ids, scratch.as_ref());
    if let Some(s) = scratch {
        if cfg.keep {
            eprintln!("warden: kept the scratch directory {}", s.path.display());
        } else {
            s.remove();
        }
    }
    result
}

fn run_in(cfg: &RunConfig, ids: IdMap, scratch: Option<&Scratch>) -> Result<i32, Failure> {
    let policy = match scratch {
        Some(s) => cfg.policy.expand_scratch(
            s.path
                .to_str()
                .ok_or_else(|| failure(EXIT_WARDEN, "scratch path is not UTF-8"))?,
        ),
        None => cfg.policy.clone(),
    };
    let program = find_program(&cfg.program)?;
    let real = std::fs::canonicalize(&program).unwrap_or_else(|_| program.clone());
    if let Some(real) = real.to_str() {
        if !policy.check(real, Access::Exec).is_allowed() {
            return Err(failure(
                EXIT_CANNOT_EXEC,
                format!(
                    "cannot run {}: {}",
                    program.display(),
                    policy.explain_denial(real, Access::Exec)
                ),
            ));
        }
    }
    let cwd = match &policy.starting_dir {
        Some((dir, _)) => PathBuf::from(dir),
        None => std::env::current_dir().map_err(|e| {
            failure(
                EXIT_WARDEN,
                format!("cannot read the current directory: {e}"),
            )
        })?,
    };
    let mut env: Vec<CString> = std::env::vars_os()
        .filter(|(k, _)| scratch.is_none() || k != "TMPDIR")
        .filter_map(|(k, v)| {
            let mut kv = k.into_encoded_bytes();
            kv.push(b'=');
            kv.extend(v.into_encoded_bytes());
            CString::new(kv).ok()
        })
        .collect();
    if let Some(s) = scratch {
        // Temporary files go to the scratch directory, the one place the program can write.
        env.push(CString::new(format!("TMPDIR={}", s.path.display())).expect("no NUL"));
    }
    let cstr = |s: &str| {
        CString::new(s).map_err(|_| failure(EXIT_WARDEN, "arguments may not contain NUL bytes"))
    };
    let mut argv = vec![cstr(&cfg.program)?];
    for a in &cfg.args {
        argv.push(cstr(a)?);
    }
    let command = Command {
        program: CString::new(program.as_os_str().as_encoded_bytes())
            .map_err(|_| failure(EXIT_WARDEN, "bad program path"))?,
        argv,
        env,
        cwd,
        ids,
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
    let ruleset = landlock::prepare(&policy).map_err(|e| failure(EXIT_WARDEN, e.to_string()))?;
    let program_filter = filter::compile().map_err(|e| failure(EXIT_WARDEN, e.to_string()))?;

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
    let launched = launch::launch(&command, ruleset, &program_filter)
        .map_err(|e| launch_failure(&e, &command))?;
    let launched = Arc::new(launched);

    let listener = launched
        .listener
        .try_clone()
        .map_err(|e| failure(EXIT_WARDEN, e.to_string()))?;
    let agent = Agent::new(listener, policy, ids, Log::new(cfg.verbose, log_file))
        .map_err(|e| failure(EXIT_WARDEN, e.to_string()))?;
    agent.start();

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
    launched.kill();
    launched.reap();
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

fn launch_failure(e: &LaunchError, cmd: &Command) -> Failure {
    match e {
        LaunchError::Setup {
            stage: Stage::Chdir,
            source,
        } => failure(
            EXIT_WARDEN,
            format!(
                "cannot enter the starting directory {}: {source}",
                cmd.cwd.display()
            ),
        ),
        other => failure(EXIT_WARDEN, other.to_string()),
    }
}

/// Looks `name` up like env(1): a name with a slash is a path, else each PATH entry in turn.
fn find_program(name: &str) -> Result<PathBuf, Failure> {
    let check = |p: PathBuf| -> Result<PathBuf, Failure> {
        let meta = std::fs::metadata(&p).map_err(|e| {
            let status = if e.kind() == std::io::ErrorKind::NotFound {
                EXIT_NOT_FOUND
            } else {
                EXIT_CANNOT_EXEC
            };
            failure(status, format!("{}: {e}", p.display()))
        })?;
        if meta.is_dir() || rustix::fs::access(&p, rustix::fs::Access::EXEC_OK).is_err() {
            return Err(failure(
                EXIT_CANNOT_EXEC,
                format!("{}: not an executable file", p.display()),
            ));
        }
        Ok(std::path::absolute(&p).unwrap_or(p))
    };
    if name.is_empty() {
        return Err(failure(EXIT_NOT_FOUND, "no program given"));
    }
    if name.contains('/') {
        return check(PathBuf::from(name));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    let mut found_unusable = None;
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(name);
        if candidate.exists() {
            match check(candidate) {
                Ok(p) => return Ok(p),
                Err(e) => found_unusable = found_unusable.or(Some(e)),
            }
        }
    }
    Err(found_unusable
        .unwrap_or_else(|| failure(EXIT_NOT_FOUND, format!("{name}: command not found"))))
}

/// The private scratch directory of one run.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn create(ids: IdMap) -> Result<Scratch, Failure> {
        let base = std::env::var_os("TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        for attempt in 0..16u32 {
            let name = format!("warden-{}-{:08x}", std::process::id(), rand32() ^ attempt);
            let path = base.join(name);
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    use std::os::unix::fs::PermissionsExt;
                    let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700));
                    if !ids.identity && rustix::process::geteuid().is_root() {
                        std::os::unix::fs::chown(
                            &path,
                            Some(ids.outside_uid),
                            Some(ids.outside_gid),
                        )
                        .map_err(|e| {
                            failure(
                                EXIT_WARDEN,
                                format!(
                                    "cannot hand the scratch directory to uid {}: {e}",
                                    ids.outside_uid
                                ),
                            )
                        })?;
                    }
                    let path = std::fs::canonicalize(&path).unwrap_or(path);
                    return Ok(Scratch { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(failure(
                        EXIT_WARDEN,
                        format!(
                            "cannot create a scratch directory in {}: {e}",
                            base.display()
                        ),
                    ))
                }
            }
        }
        Err(failure(
            EXIT_WARDEN,
            "cannot create a unique scratch directory",
        ))
    }

    fn remove(self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

fn rand32() -> u32 {
    let mut b = [0u8; 4];
    let _ = rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty());
    u32::from_ne_bytes(b)
}
