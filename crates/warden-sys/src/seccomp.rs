//! Installing a compiled BPF program as a seccomp filter that reports to a user-notification
//! listener (`seccomp(2)`, `SECCOMP_FILTER_FLAG_NEW_LISTENER`).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

pub use warden_filter::{Instruction, AUDIT_ARCH_X86_64};

/// `seccomp(SECCOMP_SET_MODE_FILTER, flags, program)`: the raw return value (a listener
/// descriptor with `NEW_LISTENER`, else 0). Allocates nothing (it runs between fork and exec).
fn set_filter(program: &[Instruction], flags: libc::c_ulong) -> io::Result<i64> {
    let prog = libc::sock_fprog {
        len: u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: SECCOMP_SET_MODE_FILTER reads `prog.len` instructions from `prog.filter`, which
    // points into `program`, a live slice of exactly that many instructions; the kernel copies
    // them before returning and keeps no pointer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &prog as *const libc::sock_fprog,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}

/// Installs `program` on the calling thread (and so on everything it will fork and exec), with
/// no listener: a filter whose every verdict is an allow or an errno. The caller must have set
/// no_new_privs first.
pub fn install(program: &[Instruction]) -> io::Result<()> {
    set_filter(program, 0).map(drop)
}

/// Installs `program` on the calling thread (and so on everything it will fork and exec) and
/// returns the listener descriptor, and whether the caller's wait for an answer is killable
/// only (`SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV`, Linux 5.19). The caller must have set
/// no_new_privs first.
///
/// Without that flag (a kernel before 5.19 answers `EINVAL`: RHEL 9's 5.14) the filter is
/// installed plain: any signal then interrupts a caller whose request the agent already
/// received, and the call restarts as a new request; the agent must account for that
/// (docs/fallbacks.md).
///
/// Runs in the sandbox's first process between fork and exec: it allocates nothing.
pub fn install_with_listener(program: &[Instruction]) -> io::Result<(OwnedFd, bool)> {
    // WAIT_KILLABLE_RECV: once the agent has received a request, only a fatal signal
    // interrupts the caller's wait. Otherwise a signal would restart the call after the
    // agent had already performed it (creating a file twice, say).
    let listener = libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as libc::c_ulong;
    let killable = libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV as libc::c_ulong;
    let (rc, killable) = match set_filter(program, listener | killable) {
        Ok(rc) => (rc, true),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (set_filter(program, listener)?, false),
        Err(e) => return Err(e),
    };
    // SAFETY: with NEW_LISTENER, success returns a new descriptor that nothing else owns.
    Ok((unsafe { OwnedFd::from_raw_fd(rc as i32) }, killable))
}
