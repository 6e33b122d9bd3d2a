//! The program's descriptors 0, 1 and 2: the files `--stdin`, `--stdout` and `--stderr` name
//! (opened by warden, outside the policy), and the pipes through which `--output-limit`
//! counts what it writes.

use super::{failure, Failure, RunConfig, EXIT_WARDEN};
use crate::limits::output::{Budget, Capture};
use crate::limits::{Stoppable, Verdicts};
use std::os::fd::OwnedFd;
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

/// The program's stdout and stderr when `--output-limit` routes them through warden.
pub struct Captures {
    pipes: Vec<(Capture, std::fs::File)>,
    budget: Option<Arc<Budget>>,
}

impl Captures {
    /// Starts the copiers; join them once the sandbox is gone.
    pub fn start(
        &mut self,
        launched: &Arc<dyn Stoppable>,
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

    pub fn used(&self) -> Option<u64> {
        self.budget.as_ref().map(|b| b.used())
    }

    pub fn exceeded(&self) -> bool {
        self.budget.as_ref().is_some_and(|b| b.exceeded())
    }
}

/// Opens `--stdin`, `--stdout` and `--stderr` (as warden, outside the policy), and with an
/// output limit puts pipes between the program and its stdout and stderr.
pub fn open(
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
