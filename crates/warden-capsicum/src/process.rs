//! Process descriptors (Capsicum's `pdfork`, `pdkill`, `pdwait`, `pdgetpid`) for Rust, the
//! same objects as the C library's (`c/capsicum.h`), so either side can use one made by the
//! other (passed over a unix socket, say).
//!
//! Linux cannot tell anyone when a pidfd's last copy closes, so a process descriptor is one end
//! of a unix socket pair whose own queue holds the child's pidfd and pid ([`ProcessDescriptor::kill`]
//! and [`ProcessDescriptor::wait`] peek at them). The child is made with `clone(CLONE_PIDFD)`
//! and no exit signal, so its parent gets no `SIGCHLD`, and keeps the other end across exec
//! with `O_ASYNC` and `F_SETSIG(SIGKILL)`: closing the last copy of the descriptor makes the
//! kernel kill it. When it exits, `poll` on the descriptor reports `POLLHUP`.
//!
//! Rust gets [`ProcessDescriptor::spawn`] (the child executes a program at once) rather than a
//! `pdfork` that returns in the child: a forked child of a multithreaded Rust program may only
//! make async-signal-safe calls, which no safe Rust API can promise. Limits are those of the C
//! library (docs/design.md, section 9).

use std::ffi::{CStr, CString};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
}

/// A process descriptor: closing its last copy kills the process.
#[derive(Debug)]
pub struct ProcessDescriptor {
    fd: OwnedFd,
}

/// `__WALL`: a child without an exit signal is a "clone" child to `waitid`.
const WALL: u32 = 0x4000_0000;

impl ProcessDescriptor {
    /// Starts `program` with `args` (`args[0]` is its name) and this process's environment,
    /// as a child whose process descriptor this is. The descriptor is close-on-exec.
    pub fn spawn(program: &CStr, args: &[&CStr]) -> io::Result<ProcessDescriptor> {
        Self::spawn_keeping(program, args, &[])
    }

    /// [`ProcessDescriptor::spawn`], the child inheriting `keep` (descriptors this process
    /// holds close-on-exec, which they stay here: a child another thread starts meanwhile
    /// inherits none of them).
    pub fn spawn_keeping(
        program: &CStr,
        args: &[&CStr],
        keep: &[BorrowedFd<'_>],
    ) -> io::Result<ProcessDescriptor> {
        let keep: Vec<i32> = keep.iter().map(AsRawFd::as_raw_fd).collect();
        let env: Vec<CString> = std::env::vars_os()
            .filter_map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                CString::new(kv).ok()
            })
            .collect();
        let argv: Vec<*const libc::c_char> = args
            .iter()
            .map(|a| a.as_ptr())
            .chain([std::ptr::null()])
            .collect();
        let envp: Vec<*const libc::c_char> = env
            .iter()
            .map(|e| e.as_ptr())
            .chain([std::ptr::null()])
            .collect();
        let (parent, child) = rustix::net::socketpair(
            rustix::net::AddressFamily::UNIX,
            rustix::net::SocketType::STREAM,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        )?;
        let (pid, pidfd) = warden_sys::process::spawn_descriptor(
            program,
            &argv,
            &envp,
            child.as_raw_fd(),
            parent.as_raw_fd(),
            &keep,
        )?;
        // The parent's end holds the pidfd and the pid in its own queue, sent from the child's
        // end (which this process then closes; the child keeps its own copy).
        let fds = [pidfd.as_fd()];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
        control.push(rustix::net::SendAncillaryMessage::ScmRights(&fds));
        let bytes = pid.to_ne_bytes();
        let sent = rustix::net::sendmsg(
            &child,
            &[io::IoSlice::new(&bytes)],
            &mut control,
            rustix::net::SendFlags::NOSIGNAL,
        );
        if sent != Ok(bytes.len()) {
            let _ = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL);
            return Err(sent
                .err()
                .map_or(io::ErrorKind::WriteZero.into(), Into::into));
        }
        Ok(ProcessDescriptor { fd: parent })
    }

    /// A process descriptor made elsewhere (by the C library's `pdfork`, or received over a
    /// unix socket).
    pub fn from_fd(fd: OwnedFd) -> ProcessDescriptor {
        ProcessDescriptor { fd }
    }

    /// The process's pidfd and pid (a new descriptor).
    fn peek(&self) -> io::Result<(OwnedFd, i32)> {
        let mut pid = [0u8; 4];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = rustix::net::RecvAncillaryBuffer::new(&mut space);
        let got = rustix::net::recvmsg(
            &self.fd,
            &mut [io::IoSliceMut::new(&mut pid)],
            &mut control,
            rustix::net::RecvFlags::PEEK
                | rustix::net::RecvFlags::DONTWAIT
                | rustix::net::RecvFlags::CMSG_CLOEXEC,
        )?;
        let pidfd = control.drain().find_map(|m| match m {
            rustix::net::RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
            _ => None,
        });
        match (got.bytes, pidfd) {
            (4, Some(pidfd)) => Ok((pidfd, i32::from_ne_bytes(pid))),
            _ => Err(io::Error::from_raw_os_error(libc::EBADF)),
        }
    }

    /// The process's pid (`pdgetpid`).
    pub fn pid(&self) -> io::Result<i32> {
        self.peek().map(|(_, pid)| pid)
    }

    /// Sends the process signal `signal` (`pdkill`).
    pub fn kill(&self, signal: i32) -> io::Result<()> {
        let (pidfd, _) = self.peek()?;
        let sig = rustix::process::Signal::from_named_raw(signal)
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        Ok(rustix::process::pidfd_send_signal(&pidfd, sig)?)
    }

    /// Waits for the process to end and reaps it (`pdwait`).
    pub fn wait(&self) -> io::Result<Exit> {
        let (pidfd, _) = self.peek()?;
        let options = rustix::process::WaitIdOptions::EXITED
            | rustix::process::WaitIdOptions::from_bits_retain(WALL);
        let status =
            rustix::process::waitid(rustix::process::WaitId::PidFd(pidfd.as_fd()), options)?
                .ok_or_else(|| io::Error::from_raw_os_error(libc::ECHILD))?;
        match (status.exit_status(), status.terminating_signal()) {
            (Some(code), _) => Ok(Exit::Code(code)),
            (None, Some(sig)) => Ok(Exit::Signal(sig)),
            _ => Err(io::Error::from_raw_os_error(libc::EINVAL)),
        }
    }
}

impl AsFd for ProcessDescriptor {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl From<ProcessDescriptor> for OwnedFd {
    fn from(pd: ProcessDescriptor) -> OwnedFd {
        pd.fd
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// How `pid` (a child of ours without an exit signal) ended, waiting up to 20 s.
    fn ended(pid: i32) -> Option<Exit> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let pid = rustix::process::Pid::from_raw(pid)?;
        while Instant::now() < deadline {
            let options = rustix::process::WaitIdOptions::EXITED
                | rustix::process::WaitIdOptions::NOHANG
                | rustix::process::WaitIdOptions::from_bits_retain(WALL);
            if let Ok(Some(st)) =
                rustix::process::waitid(rustix::process::WaitId::Pid(pid), options)
            {
                if let Some(sig) = st.terminating_signal() {
                    return Some(Exit::Signal(sig));
                }
                if let Some(code) = st.exit_status() {
                    return Some(Exit::Code(code));
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    // The real kernel, natively (process descriptors need no warden): each test makes its own
    // children and waits only for them.

    #[test]
    fn closing_the_last_descriptor_kills_the_process_after_it_executed() {
        let pd = ProcessDescriptor::spawn(c"/bin/sleep", &[c"sleep", c"100"]).unwrap();
        let pid = pd.pid().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let copy = rustix::io::dup(&pd).unwrap();
        drop(pd);
        // A copy keeps it alive.
        std::thread::sleep(Duration::from_millis(100));
        let options = rustix::process::WaitIdOptions::EXITED
            | rustix::process::WaitIdOptions::NOHANG
            | rustix::process::WaitIdOptions::NOWAIT
            | rustix::process::WaitIdOptions::from_bits_retain(WALL);
        let running = rustix::process::waitid(
            rustix::process::WaitId::Pid(rustix::process::Pid::from_raw(pid).unwrap()),
            options,
        )
        .unwrap();
        assert!(running.is_none(), "died while a copy was open");
        drop(copy);
        assert_eq!(ended(pid), Some(Exit::Signal(libc::SIGKILL)));
    }

    #[test]
    fn wait_reports_the_exit_and_poll_reports_it_first() {
        let pd =
            ProcessDescriptor::spawn(c"/bin/sh", &[c"sh", c"-c", c"sleep 0.2; exit 7"]).unwrap();
        let mut fds = [rustix::event::PollFd::new(
            &pd,
            rustix::event::PollFlags::empty(),
        )];
        assert_eq!(
            rustix::event::poll(
                &mut fds,
                Some(&rustix::time::Timespec {
                    tv_sec: 0,
                    tv_nsec: 0
                })
            )
            .unwrap(),
            0
        );
        let n = rustix::event::poll(
            &mut fds,
            Some(&rustix::time::Timespec {
                tv_sec: 20,
                tv_nsec: 0,
            }),
        )
        .unwrap();
        assert_eq!(n, 1);
        assert!(fds[0].revents().contains(rustix::event::PollFlags::HUP));
        assert_eq!(pd.wait().unwrap(), Exit::Code(7));
    }

    #[test]
    fn kill_signals_through_the_descriptor() {
        let pd = ProcessDescriptor::spawn(c"/bin/sleep", &[c"sleep", c"100"]).unwrap();
        pd.kill(libc::SIGTERM).unwrap();
        assert_eq!(pd.wait().unwrap(), Exit::Signal(libc::SIGTERM));
        // Not a process descriptor: refused, nothing signalled.
        let (a, _b) = rustix::net::socketpair(
            rustix::net::AddressFamily::UNIX,
            rustix::net::SocketType::STREAM,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        )
        .unwrap();
        let other = ProcessDescriptor::from_fd(a);
        assert!(other.kill(libc::SIGTERM).is_err());
    }
}
