//! Blocking and waiting for the signals that stop warden, and dropping privileges.

use rustix::process::Signal;
use std::io;

fn set(signals: &[Signal]) -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set we pass; sigaddset adds valid signal numbers.
    unsafe {
        let mut s: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut s);
        for sig in signals {
            libc::sigaddset(&mut s, sig.as_raw());
        }
        s
    }
}

/// Blocks `signals` in the calling thread (threads started later inherit the mask).
pub fn block(signals: &[Signal]) {
    let s = set(signals);
    // SAFETY: pthread_sigmask reads the initialised set; the old mask is not wanted (NULL).
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &s, std::ptr::null_mut()) };
}

/// Unblocks every signal in the calling thread (the program starts with an empty mask).
pub fn unblock_all() {
    // SAFETY: as in `block`, with an empty set replacing the mask.
    unsafe {
        let mut s: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut s);
        libc::pthread_sigmask(libc::SIG_SETMASK, &s, std::ptr::null_mut());
    }
}

/// Waits for one of `signals` (which must be blocked) and returns its number.
pub fn wait(signals: &[Signal]) -> i32 {
    let s = set(signals);
    loop {
        let mut sig = 0;
        // SAFETY: sigwait reads the set and writes one int.
        if unsafe { libc::sigwait(&s, &mut sig) } == 0 {
            return sig;
        }
    }
}

/// Drops every privilege of the whole process to `uid`/`gid` (no supplementary groups).
pub fn drop_to(uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: these calls take plain integers; glibc applies them to every thread.
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0
            || libc::setresgid(gid, gid, gid) != 0
            || libc::setresuid(uid, uid, uid) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
