//! `--output-limit`: the program's stdout and stderr go through pipes that warden copies to
//! their real destinations, counting the bytes of both together.
//!
//! At the limit warden writes exactly the bytes that fit, kills the sandbox, and reads the pipes
//! dry (discarding) until every writer is gone. Without `--output-limit` the program writes to
//! its destinations directly, except to a terminal, where the same copier runs without a
//! budget (`crate::run::terminal`: the program holds no descriptor of the user's terminal).

use super::Stoppable;
use super::{KillReason, Verdicts};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Output counted so far, shared by the stdout and stderr copiers.
pub struct Budget {
    limit: u64,
    used: AtomicU64,
    /// Set when some output did not fit. Recorded here as well as through the kill, because a
    /// program may write its last bytes and exit before warden reads them: the kill then comes
    /// after the run is over and counts for nothing, but the limit was still exceeded.
    over: AtomicBool,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub fn new(limit: u64) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            used: AtomicU64::new(0),
            over: AtomicBool::new(false),
        })
    }

    /// Takes up to `n` bytes; returns how many fit (fewer than `n` means the limit is reached).
    fn take(&self, n: u64) -> u64 {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let grant = n.min(self.limit.saturating_sub(used));
            match self.used.compare_exchange_weak(
                used,
                used + grant,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return grant,
                Err(now) => used = now,
            }
        }
    }

    /// Bytes passed on so far.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Whether output was refused for want of budget.
    pub fn exceeded(&self) -> bool {
        self.over.load(Ordering::Relaxed)
    }
}

/// The read end of a pipe whose write end becomes one of the program's standard descriptors.
pub struct Capture {
    read_end: OwnedFd,
}

impl Capture {
    /// A new pipe: the capture, and the end the program writes to (it goes into the sandbox,
    /// and warden must drop its own copy once the sandbox has started, or the copy never ends).
    pub fn new() -> io::Result<(Capture, OwnedFd)> {
        let (read_end, program_end) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        Ok((Capture { read_end }, program_end))
    }

    /// Starts copying into `dest` under `budget` (everything, without one). The thread ends
    /// when every writer has closed the pipe (the sandbox is gone); join it before reporting.
    pub fn start(
        self,
        mut dest: File,
        budget: Option<Arc<Budget>>,
        launched: Arc<dyn Stoppable>,
        verdicts: Arc<Verdicts>,
    ) -> io::Result<JoinHandle<()>> {
        let read_end = self.read_end;
        std::thread::Builder::new()
            .name("warden-output".into())
            .spawn(move || {
                let mut src = File::from(read_end);
                let mut buf = vec![0u8; 64 * 1024];
                let mut over = false;
                loop {
                    let n = match src.read(&mut buf) {
                        Ok(0) => return,
                        Ok(n) => n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(_) => return,
                    };
                    if over {
                        continue;
                    }
                    let Some(budget) = &budget else {
                        let _ = dest.write_all(&buf[..n]);
                        continue;
                    };
                    let fits = budget.take(n as u64) as usize;
                    // A destination that fails (a closed pipe) only loses the output, as it
                    // would for the program writing there itself.
                    let _ = dest.write_all(&buf[..fits]);
                    if fits < n {
                        over = true;
                        budget.over.store(true, Ordering::Relaxed);
                        verdicts.kill(&launched, KillReason::Output);
                        // Read nothing more until the sandbox is gone: draining now would let a
                        // writer blocked on the full pipe finish and exit before the kill lands.
                        launched.wait_gone();
                    }
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_grants_exactly_the_limit() {
        let b = Budget::new(10);
        assert_eq!(b.take(4), 4);
        assert_eq!(b.take(4), 4);
        assert!(!b.exceeded());
        assert_eq!(b.take(4), 2);
        assert_eq!(b.take(4), 0);
        assert_eq!(b.used(), 10);
    }
}
