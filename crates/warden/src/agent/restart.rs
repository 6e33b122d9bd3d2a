//! Serving calls that a signal may interrupt: a filter installed without
//! `SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV` (kernels before 5.19; RHEL 9's 5.14).
//!
//! With the flag, once a worker has received a request only a fatal signal ends the caller's
//! wait. Without it, any signal does: the kernel drops the request (`ID_VALID` fails, and so
//! does the answer, with `ENOENT`), the caller runs its handler, and the call restarts as a
//! new request (or returns `EINTR` to a handler without `SA_RESTART`). What the agent did for
//! the first request is done: an `O_CREAT | O_EXCL` open would find its own file and answer
//! `EEXIST`, a `mkdir` likewise. Two things keep the answers right here:
//!
//! - [`Turns`]: the creating requests of one thread ([`may_create`]) are served one at a
//!   time, so the restarted request is served only after the interrupted one has finished (and
//!   been undone). A thread has one call at a time of its own, so this costs nothing but the
//!   restart's wait; the watchdog interrupts a worker blocked for a dropped request, so the
//!   wait is short. Only creating calls take turns: a thread id can change hands (`execve` in
//!   another thread gives it the leader's), and the new owner's calls must not wait behind a
//!   dead caller's long walk.
//! - [`Created`]: an open that created a file, or a `mkdir`, whose answer could not be given
//!   because the caller was interrupted, is undone: the name is removed again if it still
//!   names what the agent made. The restarted call then creates it as if for the first time.
//!
//! - [`interrupting`]: a plain answer (`SEND`) that races the signal can succeed and still be
//!   lost (the caller's wait broke before the answer landed, and it restarts the call), where
//!   `ADDFD | SEND` fails with `ESRCH`. Opens are answered with `ADDFD | SEND` here; a `mkdir`
//!   is not answered when a signal aimed at the caller's thread is pending (its wait will
//!   break, and the restart finds the directory unmade). A signal sent to the whole process,
//!   or arriving between that look and the answer, can still lose a `mkdir`'s answer: the
//!   restarted `mkdir` then fails with `EEXIST` for the directory the first one made.
//!
//! What is not undone (docs/fallbacks.md): a rename, unlink, link, symlink, bind or connect
//! done for an interrupted request stays done, and the restarted call gets the answer the
//! kernel would give now (`ENOENT`, `EEXIST`, `EISCONN`), as after a native call interrupted
//! once it had taken effect. Nothing is widened: every restarted request is checked again.

use std::collections::HashSet;
use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::sync::{Condvar, Mutex};

/// Whether the request may create a file or directory the agent would undo: an open with
/// `O_CREAT` (`openat2`'s flags are in memory: always), `creat`, `mkdir`, `mkdirat`.
pub fn may_create(notif: &crate::sys::unotify::Notification) -> bool {
    let creat = |flags: u64| flags & libc::O_CREAT as u64 != 0;
    match i64::from(notif.nr) {
        libc::SYS_open => creat(notif.args[1]),
        libc::SYS_openat => creat(notif.args[2]),
        libc::SYS_openat2 | libc::SYS_creat | libc::SYS_mkdir | libc::SYS_mkdirat => true,
        _ => false,
    }
}

/// The threads whose request a worker is serving (only without `WAIT_KILLABLE_RECV`).
#[derive(Default)]
pub struct Turns {
    busy: Mutex<HashSet<u32>>,
    free: Condvar,
}

/// Held while a worker serves thread `tid`'s request; dropping it lets the next one in.
pub struct Turn<'a> {
    turns: &'a Turns,
    tid: u32,
}

impl Turns {
    /// Waits until no worker serves `tid`, then claims it.
    pub fn take(&self, tid: u32) -> Turn<'_> {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        while busy.contains(&tid) {
            busy = self.free.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
        busy.insert(tid);
        Turn { turns: self, tid }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut busy = self.turns.busy.lock().unwrap_or_else(|e| e.into_inner());
        busy.remove(&self.tid);
        self.turns.free.notify_all();
    }
}

/// Whether thread `tid` has a signal pending for itself that it does not block: its wait for
/// an answer is interrupted then (a signal it ignores is never queued). A process-wide
/// pending signal does not count, since another thread may take it.
pub fn interrupting(tid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{tid}/status")) else {
        return false;
    };
    let mask = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .unwrap_or(0)
    };
    mask("SigPnd:") & !mask("SigBlk:") != 0
}

/// What a request created: the name `name` in the directory `parent`, the object
/// (`dev`, `ino`), a directory or not.
pub struct Created {
    parent: OwnedFd,
    name: CString,
    dev: u64,
    ino: u64,
    dir: bool,
}

impl Created {
    /// The object at `name` in `parent`, just created by the agent (`None` if it cannot be
    /// recorded; then nothing is undone).
    pub fn of(parent: &OwnedFd, name: &std::ffi::CStr, dir: bool) -> Option<Created> {
        let st = rustix::fs::statat(parent, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok()?;
        Some(Created {
            parent: parent.try_clone().ok()?,
            name: name.to_owned(),
            dev: st.st_dev,
            ino: st.st_ino,
            dir,
        })
    }

    /// Removes the name again, if it still names what was created (whatever was put there
    /// since stays).
    pub fn undo(self) {
        use rustix::fs::AtFlags;
        let Ok(st) = rustix::fs::statat(&self.parent, &self.name, AtFlags::SYMLINK_NOFOLLOW) else {
            return;
        };
        if (st.st_dev, st.st_ino) != (self.dev, self.ino) {
            return;
        }
        let flags = if self.dir {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        let _ = rustix::fs::unlinkat(&self.parent, &self.name, flags);
    }
}
