//! `warden learn`: run a program with every access allowed but recorded, and write the policy
//! that allows exactly what it used (see `warden::learn`).

use clap::Args;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use warden::learn::{learn, parse_log, Context, Observation};
use warden::run::{RunConfig, EXIT_WARDEN};
use warden_policy::Policy;

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
    /// The program and its arguments.
    #[arg(
        required = true,
        trailing_var_arg = true,
        value_name = "PROGRAM [ARGS]..."
    )]
    command: Vec<String>,
}

/// Everything allowed, for the learning run (still in namespaces, without privileges).
const EVERYTHING: &str = "\
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
    // The output is created now, by warden, and held open: whatever the program does to that
    // path while it runs (with write access everywhere else), the policy goes to this file.
    let mut output = match &args.output {
        Some(path) => Some(open_output(path)?),
        None => None,
    };
    let private = private_dir()?;
    let result = learn_in(
        &args,
        &base,
        output.as_ref().map(|(p, _)| p.as_path()),
        &private,
    );
    let _ = std::fs::remove_dir_all(&private);
    let (text, code) = result?;
    match &mut output {
        Some((path, file)) => {
            file.write_all(text.as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            eprintln!("warden learn: wrote {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(code)
}

fn learn_in(
    args: &LearnArgs,
    base: &Policy,
    output: Option<&Path>,
    private: &Path,
) -> Result<(String, i32), String> {
    let mut learning = settings_of(base);
    let mut everything = EVERYTHING.to_owned();
    // Neither the output nor warden's own log may be touched by the program.
    let mut hidden = vec![
        format!("{}/*", private.display()),
        private.display().to_string(),
    ];
    if let Some(out) = output {
        hidden.push(out.display().to_string());
    }
    everything.push_str(&format!("path-deny {}\n", hidden.join(" ")));
    learning.merge(
        Policy::parse("<learn>", &everything)
            .map_err(|d| format!("cannot build the learning policy: {d:?}"))?,
    );
    let log = private.join("learn.jsonl");
    let seen = Arc::new(OnceLock::new());
    let code = run(args, learning, &log, Some(&seen))?;
    let observations = read_log(&log)?;
    let scratch = seen.get().map(|p| p.display().to_string());
    let expanded = match &scratch {
        Some(s) => base.expand_scratch(s),
        None => base.clone(),
    };
    let home = std::env::var("HOME").ok();
    let command = args.command.join(" ");
    let text = learn(
        &observations,
        &Context {
            base: &expanded,
            home: home.as_deref(),
            command: &command,
            exists: &exists,
        },
    );
    eprintln!(
        "warden learn: the program exited with status {code}; {} decisions recorded",
        observations.len()
    );
    if !args.verify {
        return Ok((text, code));
    }
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
    verify
        .arg("--policy")
        .arg(&learned)
        .arg("--log")
        .arg(&log2)
        .arg("--");
    verify.args(&args.command);
    let status = verify
        .status()
        .map_err(|e| format!("cannot run warden for --verify: {e}"))?;
    let code2 = status.code().unwrap_or_else(|| {
        128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
    });
    // A lookup of a path that does not exist failed while learning too (ENOENT then, EACCES
    // now): the same outcome for the program.
    let denied: Vec<Observation> = read_log(&log2)?
        .into_iter()
        .filter(|o| !o.allowed && (!o.target.starts_with('/') || exists(&o.target)))
        .collect();
    for d in &denied {
        eprintln!(
            "warden learn: verify: {}(\"{}\") was allowed while learning and is denied now",
            d.syscall, d.target
        );
    }
    if code2 != code {
        eprintln!(
            "warden learn: verify: the program exited with {code2} under the learned policy, \
             {code} while learning"
        );
    }
    if denied.is_empty() && code2 == code {
        eprintln!(
            "warden learn: verify: the same command runs under the learned policy with no denial"
        );
        Ok((text, code))
    } else {
        Ok((text, 1))
    }
}

fn run(
    args: &LearnArgs,
    policy: Policy,
    log: &Path,
    seen: Option<&Arc<OnceLock<PathBuf>>>,
) -> Result<i32, String> {
    let mut command = args.command.iter().cloned();
    let cfg = RunConfig {
        policy,
        program: command.next().expect("clap requires a program"),
        args: command.collect(),
        log: Some(log.to_owned()),
        scratch_seen: seen.cloned(),
        ..RunConfig::default()
    };
    warden::run::run(cfg).map_err(|f| f.message)
}

fn exists(path: &str) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

fn read_log(path: &Path) -> Result<Vec<Observation>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the decision log {}: {e}", path.display()))?;
    Ok(parse_log(&text))
}

/// Only the base's settings (ids, starting directory, limits, ptrace), none of its rules.
fn settings_of(base: &Policy) -> Policy {
    let mut p = Policy::default();
    p.starting_uid = base.starting_uid;
    p.starting_gid = base.starting_gid;
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

/// A fresh directory only warden's user can enter, for the decision logs.
fn private_dir() -> Result<PathBuf, String> {
    let base = std::env::temp_dir();
    for _ in 0..16 {
        let dir = base.join(format!(
            "warden-learn-{}-{:08x}",
            std::process::id(),
            warden::run::rand32()
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
