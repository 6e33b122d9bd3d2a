//! `warden run`.

use clap::Args;
use std::path::PathBuf;
use warden::run::{RunConfig, EXIT_WARDEN};
use warden_policy::{Access, PathPattern, Policy, Span};

#[derive(Args)]
pub struct RunArgs {
    /// Policy file (repeatable; rules add up, on top of the default policy).
    #[arg(long = "policy", short = 'p', value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// Use the built-in default policy as the base (`--default-policy=no` to start from nothing).
    #[arg(long = "default-policy", value_name = "yes|no", default_value = "yes", value_parser = ["yes", "no"])]
    default_policy: String,
    /// Allow reading PATH (a directory: it and everything beneath it).
    #[arg(long = "read", value_name = "PATH")]
    read: Vec<String>,
    /// Allow writing PATH (a directory: creating and changing anything beneath it).
    #[arg(long = "write", value_name = "PATH")]
    write: Vec<String>,
    /// Allow executing PATH (a directory: everything beneath it).
    #[arg(long = "exec", value_name = "PATH")]
    exec: Vec<String>,
    /// Allow removing PATH (a directory: anything beneath it).
    #[arg(long = "unlink", value_name = "PATH")]
    unlink: Vec<String>,
    /// Keep the scratch directory after the run (its path is printed).
    #[arg(long)]
    keep: bool,
    /// Report each denied call on stderr.
    #[arg(short, long)]
    verbose: bool,
    /// Write every delegated decision (allowed and denied) as JSON lines to FILE.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
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
    let mut command = args.command.into_iter();
    let program = command.next().expect("clap requires a program");
    let cfg = RunConfig {
        policy,
        program,
        args: command.collect(),
        keep: args.keep,
        verbose: args.verbose,
        log: args.log,
    };
    match warden::run::run(cfg) {
        Ok(code) => code,
        Err(f) => {
            eprintln!("warden: {}", f.message);
            f.status
        }
    }
}

/// Default policy + files + shorthand flags, in that order.
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
    let flags = [
        (&args.read, Access::Read, "--read"),
        (&args.write, Access::Write, "--write"),
        (&args.exec, Access::Exec, "--exec"),
        (&args.unlink, Access::Unlink, "--unlink"),
    ];
    for (paths, access, flag) in flags {
        for raw in paths.iter() {
            match flag_patterns(raw) {
                Ok(patterns) => {
                    for p in patterns {
                        policy.add_rule(Some(access), p, Span::new(flag, 1, 1));
                    }
                }
                Err(e) => errors.push(format!("warden: {flag} {raw}: {e}")),
            }
        }
    }
    if errors.is_empty() {
        Ok(policy)
    } else {
        Err(errors)
    }
}

/// A flag's path: made absolute against the current directory; an existing directory (given
/// without `*`) means the directory and everything beneath it.
fn flag_patterns(raw: &str) -> Result<Vec<PathPattern>, String> {
    let star = raw.ends_with('*');
    let bare = raw.trim_end_matches('*');
    let abs = if bare.starts_with('/') || bare.starts_with("$SCRATCH") {
        bare.to_owned()
    } else {
        let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
        cwd.join(bare).to_string_lossy().into_owned()
    };
    let abs = if abs.starts_with('/') {
        std::fs::canonicalize(&abs)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or(abs)
    } else {
        abs
    };
    if star {
        return Ok(vec![PathPattern::parse(&format!("{abs}*"))?]);
    }
    let mut out = vec![PathPattern::parse(&abs)?];
    if std::path::Path::new(&abs).is_dir() {
        out.push(PathPattern::parse(&format!(
            "{}/*",
            abs.trim_end_matches('/')
        ))?);
    }
    Ok(out)
}
