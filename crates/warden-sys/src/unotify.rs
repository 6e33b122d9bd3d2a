//! `seccomp_unotify(2)`: receiving a notification, checking that it is still live, answering it,
//! and installing a descriptor in the client with `SECCOMP_IOCTL_NOTIF_ADDFD`.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};

/// One notification as the kernel delivered it: a copy, so nothing here can change under us.
#[derive(Clone, Copy, Debug)]
pub struct Notification {
    /// Cookie identifying the request; answers and `ID_VALID` checks name it.
    pub id: u64,
    /// Thread id of the caller, in the agent's PID namespace.
    pub pid: u32,
    /// System call number (for `arch`).
    pub nr: i32,
    /// `AUDIT_ARCH_*` of the call.
    pub arch: u32,
    /// Instruction pointer at the call, for diagnostics.
    pub ip: u64,
    /// The six raw argument registers.
    pub args: [u64; 6],
}

/// Blocks until a notification arrives on `listener`.
///
/// `ENOENT` means the target died between the wake-up and the copy; callers retry.
pub fn recv(listener: BorrowedFd<'_>) -> io::Result<Notification> {
    // The kernel requires the buffer to be zeroed before RECV (it returns EINVAL otherwise).
    let mut raw: libc::seccomp_notif = zeroed_notif();
    // SAFETY: SECCOMP_IOCTL_NOTIF_RECV writes one `struct seccomp_notif` into the pointer it is
    // given; `raw` is such a struct, lives across the call and is not aliased.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV as _,
            &mut raw as *mut libc::seccomp_notif,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Notification {
        id: raw.id,
        pid: raw.pid,
        nr: raw.data.nr,
        arch: raw.data.arch,
        ip: raw.data.instruction_pointer,
        args: raw.data.args,
    })
}

/// Whether no task uses the filter any more (the whole sandbox has exited). From then on RECV
/// returns `ENOENT` at once, every time: a receiver that retried would spin.
pub fn orphaned(listener: BorrowedFd<'_>) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(&listener, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    poll(&mut fds, Some(&now)).is_ok() && fds[0].revents().contains(PollFlags::HUP)
}

fn zeroed_notif() -> libc::seccomp_notif {
    libc::seccomp_notif {
        id: 0,
        pid: 0,
        flags: 0,
        data: libc::seccomp_data {
            nr: 0,
            arch: 0,
            instruction_pointer: 0,
            args: [0; 6],
        },
    }
}

/// `SECCOMP_IOCTL_NOTIF_ID_VALID`: is the request `id` still waiting for an answer?
///
/// Called after reading client memory and before acting (docs/design.md, invariant 3), so that
/// a caller that died and whose pid was reused cannot make the agent act for somebody else.
pub fn id_valid(listener: BorrowedFd<'_>, id: u64) -> bool {
    // SAFETY: ID_VALID reads one u64 from the pointer; `id` is a live local u64.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID as _,
            &id as *const u64,
        )
    };
    rc == 0
}

/// How a notification is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The call returns this value (success).
    Value(i64),
    /// The call fails with this errno.
    Errno(i32),
    /// The kernel runs the call itself. Only for calls whose verdict no racing argument can
    /// change, or that a kernel-enforced rule backs (docs/design.md, invariant 1).
    Continue,
}

/// `SECCOMP_IOCTL_NOTIF_SEND`. `ENOENT` means the caller is gone (killed or interrupted), which
/// is not the agent's failure.
pub fn send(listener: BorrowedFd<'_>, id: u64, reply: Reply) -> io::Result<()> {
    let (val, error, flags) = match reply {
        Reply::Value(v) => (v, 0, 0),
        Reply::Errno(e) => (0, -e, 0),
        Reply::Continue => (0, 0, libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32),
    };
    let mut resp = libc::seccomp_notif_resp {
        id,
        val,
        error,
        flags,
    };
    // SAFETY: NOTIF_SEND reads one `struct seccomp_notif_resp` from the pointer; `resp` is one,
    // fully initialised, and outlives the call.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND as _,
            &mut resp as *mut libc::seccomp_notif_resp,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `SECCOMP_IOCTL_NOTIF_ADDFD` with `SECCOMP_ADDFD_FLAG_SEND`: installs `fd` in the caller and
/// answers the call with the new descriptor number, atomically, so the client can never observe
/// the descriptor without the answer or the answer without the descriptor. Returns that number.
///
/// The agent's own `fd` stays the agent's: the kernel installs a new reference, and the caller
/// drops ours afterwards, so every descriptor the agent opens is closed exactly once.
pub fn addfd_send(
    listener: BorrowedFd<'_>,
    id: u64,
    fd: BorrowedFd<'_>,
    cloexec: bool,
) -> io::Result<RawFd> {
    addfd_with(
        listener,
        id,
        fd,
        cloexec,
        libc::SECCOMP_ADDFD_FLAG_SEND as u32,
    )
}

/// `SECCOMP_IOCTL_NOTIF_ADDFD` alone: installs `fd` in the caller, which keeps waiting for its
/// answer ([`send`] the returned number). For a file open for writing, the agent closes its own
/// reference in between: a caller that closes the file and executes it at once would otherwise
/// race the agent's close and get `ETXTBSY` (a build running what it just linked).
pub fn addfd(
    listener: BorrowedFd<'_>,
    id: u64,
    fd: BorrowedFd<'_>,
    cloexec: bool,
) -> io::Result<RawFd> {
    addfd_with(listener, id, fd, cloexec, 0)
}

/// `SECCOMP_IOCTL_NOTIF_ADDFD` with `SECCOMP_ADDFD_FLAG_SETFD`: puts `fd` in the caller at the
/// number `at`, closing what was there (as `dup2` would); the caller keeps waiting for its
/// answer. Capsicum's `cap_rights_limit` replaces a descriptor with a narrower one this way.
pub fn addfd_at(
    listener: BorrowedFd<'_>,
    id: u64,
    fd: BorrowedFd<'_>,
    at: RawFd,
    cloexec: bool,
) -> io::Result<RawFd> {
    let at = u32::try_from(at).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
    addfd_full(
        listener,
        id,
        fd,
        cloexec,
        libc::SECCOMP_ADDFD_FLAG_SETFD as u32,
        at,
    )
}

fn addfd_with(
    listener: BorrowedFd<'_>,
    id: u64,
    fd: BorrowedFd<'_>,
    cloexec: bool,
    flags: u32,
) -> io::Result<RawFd> {
    addfd_full(listener, id, fd, cloexec, flags, 0)
}

fn addfd_full(
    listener: BorrowedFd<'_>,
    id: u64,
    fd: BorrowedFd<'_>,
    cloexec: bool,
    flags: u32,
    newfd: u32,
) -> io::Result<RawFd> {
    let addfd = libc::seccomp_notif_addfd {
        id,
        flags,
        srcfd: fd.as_raw_fd() as u32,
        newfd,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    // SAFETY: NOTIF_ADDFD reads one `struct seccomp_notif_addfd`; `addfd` is one and lives
    // across the call. `srcfd` is a descriptor borrowed for the duration of the call.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ADDFD as _,
            &addfd as *const libc::seccomp_notif_addfd,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}

/// `pidfd_getfd(2)`: a duplicate of descriptor `target` of the process behind `pidfd`.
///
/// The agent uses it to see exactly the object a client's `dirfd` argument names, never a path
/// string the client could change.
pub fn pidfd_getfd(pidfd: BorrowedFd<'_>, target: i32) -> io::Result<OwnedFd> {
    Ok(rustix::process::pidfd_getfd(
        pidfd,
        target,
        rustix::process::PidfdGetfdFlags::empty(),
    )?)
}

/// Whether `fd` is a seccomp user-notification listener (what the kernel names it in
/// `/proc/self/fd`: `anon_inode:seccomp notify`).
pub fn is_listener(fd: BorrowedFd<'_>) -> bool {
    let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
    rustix::fs::readlink(link.as_str(), Vec::new())
        .is_ok_and(|name| name.as_bytes() == b"anon_inode:seccomp notify")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// A listener is one; a memfd and a socket are not.
    #[test]
    fn a_listener_is_known_by_its_name() {
        let memfd =
            rustix::fs::memfd_create("not a listener", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        assert!(!is_listener(memfd.as_fd()));
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(!is_listener(a.as_fd()));
        // A filter is the installing thread's alone (no TSYNC): a thread of its own, with its
        // own no_new_privs, installs an allow-everything filter with a listener.
        let known = std::thread::spawn(|| {
            rustix::thread::set_no_new_privs(true).unwrap();
            let allow = [crate::seccomp::Instruction {
                code: (libc::BPF_RET | libc::BPF_K) as u16,
                jt: 0,
                jf: 0,
                k: libc::SECCOMP_RET_ALLOW,
            }];
            let (listener, _) = crate::seccomp::install_with_listener(&allow).unwrap();
            is_listener(listener.as_fd())
        })
        .join()
        .unwrap();
        assert!(known);
    }
}
