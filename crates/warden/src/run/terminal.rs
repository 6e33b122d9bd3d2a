//! The user's terminal: kept out of the sandbox's reach unless `--tty` asks for it, and put back
//! as warden found it when the run ends.
//!
//! A terminal descriptor lets whoever holds it do more than its open mode says: read the
//! user's keystrokes (a terminal opened read-write once and handed on as stdout still reads),
//! and `ioctl` it whatever the mode (`tcsetattr` turning echo off, `TIOCSWINSZ`, `tcflow`
//! stopping its output). So when one of the program's standard descriptors would be a
//! terminal and `--tty` is not given, the program gets a pipe instead, and warden copies
//! between the pipe and the terminal: output as it comes ([`crate::limits::output`]'s
//! copier, with no budget), input through [`InputRelay`]. Nothing of this runs when no
//! standard descriptor is a terminal (a benchmark, a service, a test's captured output): the
//! only cost there is one `TCGETS` per descriptor.

use rustix::termios::{Termios, Winsize};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// Whether `fd` is a terminal.
pub fn is_terminal(fd: BorrowedFd<'_>) -> bool {
    rustix::termios::isatty(fd)
}

/// Whether `a` and `b` are the same terminal (so one pipe serves both, and what the program
/// writes to its stdout and stderr reaches the terminal in the order it wrote it).
pub fn same_terminal(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    match (rustix::fs::fstat(a), rustix::fs::fstat(b)) {
        (Ok(x), Ok(y)) => x.st_rdev == y.st_rdev,
        _ => false,
    }
}

/// Copies the user's keystrokes from the terminal into the pipe that is the program's stdin.
///
/// It reads only while warden's process group is the terminal's foreground (a background
/// warden that read would be stopped by `SIGTTIN`, where a program that never reads its
/// stdin would not), and ends when the program has no reader left, the terminal hangs up or
/// says end of file (which it passes on by closing the pipe). What the user types while the
/// program runs goes to the program, as it would natively; what the program has not read
/// when it ends is lost with the pipe.
pub struct InputRelay {
    terminal: File,
    pipe: OwnedFd,
}

impl InputRelay {
    /// A relay from `terminal`: the relay, and the pipe's read end for the program.
    pub fn new(terminal: File) -> io::Result<(InputRelay, OwnedFd)> {
        let (read_end, pipe) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        Ok((InputRelay { terminal, pipe }, read_end))
    }

    /// Starts the copying thread. It is not joined: it ends by itself once the program's end of
    /// the pipe is gone, and holds nothing warden waits for.
    pub fn start(self) -> io::Result<()> {
        std::thread::Builder::new()
            .name("warden-input".into())
            .spawn(move || self.run())
            .map(|_| ())
    }

    fn run(self) {
        use rustix::event::{poll, PollFd, PollFlags};
        let mut dest = File::from(self.pipe);
        let mut buf = vec![0u8; 4096];
        let ours = rustix::process::getpgrp();
        loop {
            let mut fds = [
                PollFd::new(&self.terminal, PollFlags::IN),
                // A write end polls POLLERR once every reader is gone.
                PollFd::new(&dest, PollFlags::empty()),
            ];
            match poll(&mut fds, None) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return,
            }
            if !fds[1].revents().is_empty() {
                return;
            }
            let ready = fds[0].revents();
            if ready.intersects(PollFlags::ERR | PollFlags::NVAL) {
                return;
            }
            if ready.is_empty() {
                continue;
            }
            // Another group is in the foreground (warden runs in the background): its input is
            // not ours, and reading would stop warden. A terminal that is not warden's
            // controlling terminal has no foreground to ask about (ENOTTY): read it.
            if rustix::termios::tcgetpgrp(&self.terminal).is_ok_and(|fg| fg != ours) {
                std::thread::sleep(std::time::Duration::from_millis(100));
                continue;
            }
            let n = match (&self.terminal).read(&mut buf) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(_) => return,
            };
            if dest.write_all(&buf[..n]).is_err() {
                return;
            }
        }
    }
}

/// The state of warden's terminal when the run started, put back when it ends
/// ([`Saved::restore`]): its modes (`tcgetattr`), its window size, and its foreground process
/// group. A program given the terminal (`--tty`, or a `--pass-fd`) may change all three, turn
/// echo off, resize it, stop its output, take the foreground, and die before it undoes any of
/// it.
pub struct Saved {
    fd: OwnedFd,
    modes: Termios,
    size: Option<Winsize>,
    /// The foreground group, when the terminal is warden's controlling terminal.
    foreground: Option<rustix::process::Pid>,
}

impl Saved {
    /// The state of the first of warden's stdin, stdout and stderr that is a terminal; `None`
    /// when none is.
    pub fn take() -> Option<Saved> {
        let std = [
            rustix::stdio::stdin(),
            rustix::stdio::stdout(),
            rustix::stdio::stderr(),
        ];
        std.into_iter().find_map(|fd| {
            let modes = rustix::termios::tcgetattr(fd).ok()?;
            Some(Saved {
                fd: rustix::io::fcntl_dupfd_cloexec(fd, 3).ok()?,
                modes,
                size: rustix::termios::tcgetwinsize(fd).ok(),
                foreground: rustix::termios::tcgetpgrp(fd).ok(),
            })
        })
    }

    /// Puts the terminal back as [`Saved::take`] found it, as far as it is still warden's to
    /// change: the foreground goes back to warden's group only if warden had it and the group
    /// holding it now has no process left (one the sandbox made); the modes, size and output
    /// flow only while warden is in the foreground (or the terminal is not warden's controlling
    /// terminal), so that a warden the user sent to the background does not undo what the
    /// foreground job set. `SIGTTOU` is blocked meanwhile: a change from a group that is not
    /// (yet) the foreground would stop warden otherwise.
    pub fn restore(&self) {
        use rustix::process::{getpgrp, test_kill_process_group, Signal};
        use rustix::termios::{tcgetattr, tcgetpgrp, tcsetattr, tcsetpgrp, OptionalActions};
        let fd = self.fd.as_fd();
        let ours = getpgrp();
        crate::sys::signals::block(&[Signal::TTOU]);
        if self.foreground == Some(ours) {
            if let Ok(now) = tcgetpgrp(fd) {
                let gone = test_kill_process_group(now) == Err(rustix::io::Errno::SRCH);
                if now != ours && gone {
                    let _ = tcsetpgrp(fd, ours);
                }
            }
        }
        let in_front = match tcgetpgrp(fd) {
            Ok(fg) => fg == ours,
            Err(_) => self.foreground.is_none(),
        };
        if in_front {
            let changed = tcgetattr(fd)
                .map(|now| format!("{now:?}") != format!("{:?}", self.modes))
                .unwrap_or(false);
            if changed {
                let _ = tcsetattr(fd, OptionalActions::Now, &self.modes);
            }
            if let Some(size) = self.size {
                if rustix::termios::tcgetwinsize(fd).is_ok_and(|now| now != size) {
                    let _ = rustix::termios::tcsetwinsize(fd, size);
                }
            }
            // Output stopped (tcflow TCOOFF, or the user's ^S) starts again.
            let _ = rustix::termios::tcflow(fd, rustix::termios::Action::OOn);
        }
        crate::sys::signals::unblock(&[Signal::TTOU]);
    }
}
