//! The `warden` command: a thin layer of argument parsing over the `warden` library.

mod capsicum;
mod check;
mod doctor;
mod learn;
mod ps;
mod run;

use clap::{Parser, Subcommand};

/// warden's allocator on musl (the build's target, `.cargo/config.toml`). musl's own returns
/// memory to the kernel eagerly: a start made about 120 `mmap` and `munmap` calls, and its
/// policy and plan took twice as long as with glibc's. mimalloc and jemalloc each added about
/// 0.2 ms to the start before `main` (their set-up); dlmalloc adds nothing there.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

/// Run untrusted programs under a policy, with a trusted agent performing every call that names
/// a file or endpoint on their behalf.
#[derive(Parser)]
#[command(name = "warden", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Commands,
}

/// Each subcommand's arguments are built only when it is the one run (or its help shown): `run`
/// alone has some forty, and a start should not build `learn`'s and the rest.
#[derive(Subcommand)]
#[command(defer = true)]
enum Commands {
    /// Run PROGRAM inside a sandbox and exit with its status.
    Run(Box<run::RunArgs>),
    /// Check policy files: print errors as file:line:col, or the normalized policy.
    Check(check::CheckArgs),
    /// Run PROGRAM with every access allowed but recorded, and write the policy it needs.
    Learn(Box<learn::LearnArgs>),
    /// List your running sandboxes (root: everyone's).
    Ps(ps::PsArgs),
    /// Show the processes of a running sandbox and every descriptor they hold.
    Inspect(ps::InspectArgs),
    /// List what a run changed in its private copies (`path-map HOST SANDBOX copy`, kept with
    /// `warden run --keep`): A added, M modified, D deleted, one sandbox path a line.
    Diff(check::DiffArgs),
    /// Say what this host gives warden (namespaces, Landlock, seccomp, cgroups), what each run
    /// mode enforces here, and how to get the rest. Needs no privilege.
    Doctor(doctor::DoctorArgs),
}

/// `Cli::try_parse`, without freeing the parser: clap's tree of some forty arguments and
/// their matches take about 20 microseconds of every start to free, memory the process gives
/// back at its exit anyway.
fn parse() -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let mut command = Cli::command();
    let matches = command.try_get_matches_from_mut(std::env::args_os())?;
    let cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command));
    std::mem::forget(matches);
    std::mem::forget(command);
    cli
}

fn main() {
    warden::timings::mark("start");
    let cli = match parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                warden::run::EXIT_WARDEN
            } else {
                0
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    if !matches!(cli.command, Commands::Run(_) | Commands::Learn(_)) {
        // Listings end quietly when their reader does (`warden check --explain | head`).
        warden::sys::signals::default_sigpipe();
    }
    let code = match cli.command {
        Commands::Run(args) => run::main(*args),
        Commands::Check(args) => check::main(args),
        Commands::Learn(args) => learn::main(*args),
        Commands::Ps(args) => ps::ps(args),
        Commands::Inspect(args) => ps::inspect(args),
        Commands::Diff(args) => check::diff(args),
        Commands::Doctor(args) => doctor::main(args),
    };
    std::process::exit(code);
}
