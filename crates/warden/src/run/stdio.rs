//! The program's descriptors 0, 1 and 2: the files `--stdin`, `--stdout` and `--stderr` name
//! (opened by warden, outside the policy), the pipes through which `--output-limit` counts
//! what it writes, and the pipes that stand for a terminal unless `--tty` is given
//! ([`super::terminal`]).

use super::terminal::{self, InputRelay};
use super::{failure, Failure, RunConfig, EXIT_WARDEN};
use crate::limits::output::{Budget, Capture};
use crate::limits::{Stoppable, Verdicts};
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

/// Whether the program starts with a descriptor of a directory (its stdio or a `--pass-fd`):
/// one of the host's tree, outside its view, from which `fstatat` and the other calls a view
/// lets the kernel answer would look at what the view hides. Opens stay Landlock's either way.
pub fn inherits_a_directory(stdio: &[Option<OwnedFd>; 3], pass_fds: &[i32]) -> bool {
    let own = std::process::id();
    let numbers = (0..3)
        .filter(|i| stdio[*i as usize].is_none())
        .chain(pass_fds.iter().copied());
    let replaced = stdio.iter().flatten().map(std::os::fd::AsRawFd::as_raw_fd);
    numbers.chain(replaced).any(|n| {
        rustix::fs::stat(format!("/proc/{own}/fd/{n}")).is_ok_and(|st| {
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory
        })
    })
}

/// What the program would start holding of the host's tree that a view's mounts do not bind
/// (its stdio or a `--pass-fd`), said in a few words: a directory, or a file on a mount that
/// lets it run whose mode lets it run or which the policy lets the program change
/// (`writable`: it could then write a program into it and `chmod` it). Without Landlock, the
/// view's `noexec` mounts are the only lock on `execve`, and such a descriptor (`fexecve`,
/// `/proc/self/fd/N`, a path relative to it) is on none of them. A file with no execute bit
/// the program cannot change runs for no one, root included.
pub fn holds_host_object(
    stdio: &[Option<OwnedFd>; 3],
    pass_fds: &[i32],
    writable: &dyn Fn(&str) -> bool,
) -> Option<String> {
    use rustix::fs::{FileType, StatVfsMountFlags};
    let own = std::process::id();
    let inherited = (0..3)
        .filter(|i| stdio[*i as usize].is_none())
        .chain(pass_fds.iter().copied());
    let replaced = stdio.iter().enumerate().filter_map(|(i, f)| {
        f.as_ref()
            .map(|f| (i as i32, std::os::fd::AsRawFd::as_raw_fd(f)))
    });
    let numbers = inherited.map(|n| (n, n)).chain(replaced);
    for (theirs, ours) in numbers {
        let link = format!("/proc/{own}/fd/{ours}");
        let Ok(st) = rustix::fs::stat(&link) else {
            continue;
        };
        let path = std::fs::read_link(&link).unwrap_or_default();
        let name = warden_policy::escape::escape(path.as_os_str().as_encoded_bytes()).into_owned();
        match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => {
                return Some(format!("descriptor {theirs}, the host's directory {name}"))
            }
            FileType::RegularFile => {
                let mount_runs = rustix::fs::statvfs(&link)
                    .map_or(true, |v| !v.f_flag.contains(StatVfsMountFlags::NOEXEC));
                let mode_runs = st.st_mode & 0o111 != 0 || path.to_str().is_none_or(writable);
                if mount_runs && mode_runs {
                    return Some(format!(
                        "descriptor {theirs}, the host's file {name} (executable, or one the policy \
                         lets the program change) on a mount that lets it run"
                    ));
                }
            }
            _ => {}
        }
    }
    None
}

/// The program's stdout and stderr when `--output-limit` or a terminal routes them through
/// warden, and its stdin when that is a terminal.
pub struct Captures {
    pipes: Vec<(Capture, std::fs::File)>,
    budget: Option<Arc<Budget>>,
    input: Option<InputRelay>,
}

impl Captures {
    /// Starts the copiers; join them once the sandbox is gone.
    pub fn start(
        &mut self,
        launched: &Arc<dyn Stoppable>,
        verdicts: &Arc<Verdicts>,
    ) -> Result<Vec<std::thread::JoinHandle<()>>, Failure> {
        if let Some(input) = self.input.take() {
            input
                .start()
                .map_err(|e| failure(EXIT_WARDEN, format!("cannot relay the terminal: {e}")))?;
        }
        std::mem::take(&mut self.pipes)
            .into_iter()
            .map(|(capture, dest)| {
                capture
                    .start(
                        dest,
                        self.budget.clone(),
                        Arc::clone(launched),
                        Arc::clone(verdicts),
                    )
                    .map_err(|e| failure(EXIT_WARDEN, format!("cannot copy the output: {e}")))
            })
            .collect()
    }

    pub fn used(&self) -> Option<u64> {
        self.budget.as_ref().map(|b| b.used())
    }

    pub fn exceeded(&self) -> bool {
        self.budget.as_ref().is_some_and(|b| b.exceeded())
    }
}

/// Opens `--stdin`, `--stdout` and `--stderr` (as warden, outside the policy), and with an
/// output limit puts pipes between the program and its stdout and stderr. Without `--tty`, a
/// standard descriptor that would be a terminal becomes a pipe warden relays
/// ([`super::terminal`]).
pub fn open(
    cfg: &RunConfig,
    output_limit: Option<u64>,
) -> Result<([Option<OwnedFd>; 3], Captures), Failure> {
    use std::fs::OpenOptions;
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
        input: None,
    };
    // Which of the program's descriptors would be a terminal (warden's own, or a file named).
    let tty: [bool; 3] = std::array::from_fn(|i| {
        !cfg.terminal
            && match &files[i] {
                Some(f) => terminal::is_terminal(f.as_fd()),
                None => terminal::is_terminal(own(i)),
            }
    });
    if tty[0] {
        let term = match files[0].take() {
            Some(f) => f,
            None => dup_own(0)?,
        };
        let (relay, program_end) = InputRelay::new(term).map_err(relay_failed)?;
        files[0] = Some(File::from(program_end));
        captures.input = Some(relay);
    }
    if captures.budget.is_some() || tty[1] || tty[2] {
        // One pipe for both when both are the same terminal: what the program writes to the
        // two reaches it in the order it was written.
        let shared = captures.budget.is_none()
            && tty[1]
            && tty[2]
            && terminal::same_terminal(
                files[1].as_ref().map_or(own(1), |f| f.as_fd()),
                files[2].as_ref().map_or(own(2), |f| f.as_fd()),
            );
        for i in 1..3 {
            if captures.budget.is_none() && !tty[i] {
                continue;
            }
            if i == 2 && shared {
                let out = files[1].as_ref().map(File::try_clone).transpose();
                files[2] = out.map_err(relay_failed)?;
                continue;
            }
            let slot = &mut files[i];
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

/// warden's own descriptor `i` (0, 1 or 2).
fn own(i: usize) -> BorrowedFd<'static> {
    match i {
        0 => rustix::stdio::stdin(),
        1 => rustix::stdio::stdout(),
        _ => rustix::stdio::stderr(),
    }
}

/// A copy of warden's own descriptor `i`, for a relay.
fn dup_own(i: usize) -> Result<File, Failure> {
    rustix::io::fcntl_dupfd_cloexec(own(i), 3)
        .map(File::from)
        .map_err(|e| relay_failed(e.into()))
}

fn relay_failed(e: std::io::Error) -> Failure {
    failure(
        EXIT_WARDEN,
        format!("cannot put a pipe between the program and the terminal: {e}"),
    )
}
