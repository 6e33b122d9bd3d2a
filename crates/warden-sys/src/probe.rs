//! The raw calls behind `warden::host`'s probes of what this host gives: a short-lived child to
//! try what cannot be undone in warden itself (a namespace, a seccomp filter), Landlock's ABI
//! version, whether seccomp knows the user-notification action, and an allow-all filter with a
//! listener to ask the kernel which flags it knows.

use std::io;
use std::os::fd::{AsFd, FromRawFd, OwnedFd};

/// How many answers a probe child may give.
pub const ANSWERS: usize = 16;

/// Runs `f` in a forked child and returns what it wrote into its answers (each an errno, 0 or
/// a small number; unanswered ones stay `-1`). What the child does to itself (namespaces it
/// enters, a filter it installs) dies with it.
///
/// `f` runs in a child of a process that may have other threads: it must not allocate or take
/// locks (raw calls through rustix with short paths, no `format!`). A child that does not
/// answer within the kernel's own time (it is killed if it lives longer than five seconds)
/// gives `ETIMEDOUT` for the whole probe.
pub fn in_child(f: fn(&mut [i32; ANSWERS])) -> io::Result<[i32; ANSWERS]> {
    let (read_end, write_end) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    // SAFETY: fork in a possibly multithreaded process: the child only runs `f`, which the
    // caller promises does not allocate or lock, then writes to a pipe and `_exit`s (both
    // async-signal-safe).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        drop(read_end);
        // SAFETY: alarm is async-signal-safe; the child is killed by SIGALRM if `f` hangs.
        unsafe { libc::alarm(5) };
        let mut answers = [-1i32; ANSWERS];
        f(&mut answers);
        let mut bytes = [0u8; ANSWERS * 4];
        for (i, a) in answers.iter().enumerate() {
            bytes[i * 4..i * 4 + 4].copy_from_slice(&a.to_ne_bytes());
        }
        let _ = rustix::io::write(&write_end, &bytes);
        // SAFETY: `_exit` ends the child without running the parent's atexit handlers or
        // flushing its copied stdio buffers.
        unsafe { libc::_exit(0) };
    }
    drop(write_end);
    let mut bytes = [0u8; ANSWERS * 4];
    let mut got = 0;
    while got < bytes.len() {
        match rustix::io::read(&read_end, &mut bytes[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => {
                reap(pid);
                return Err(e.into());
            }
        }
    }
    reap(pid);
    if got < bytes.len() {
        return Err(io::Error::from_raw_os_error(libc::ETIMEDOUT));
    }
    let mut answers = [0i32; ANSWERS];
    for (i, a) in answers.iter_mut().enumerate() {
        *a = i32::from_ne_bytes(bytes[i * 4..i * 4 + 4].try_into().unwrap_or([0; 4]));
    }
    Ok(answers)
}

fn reap(pid: libc::pid_t) {
    let mut status = 0;
    // SAFETY: waits for our own child; `status` is a live int.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
        && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
    {}
}

/// The errno of an error, or `EIO` when it carries none.
pub fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`: the kernel's Landlock
/// ABI version. `EOPNOTSUPP`: built in but not enabled (not in `lsm=`); `ENOSYS`: not built.
pub fn landlock_abi() -> io::Result<i32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with the VERSION flag the kernel reads no attribute (null pointer, size 0) and
    // returns a number, not a descriptor.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc as i32)
}

/// `seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &SECCOMP_RET_USER_NOTIF)`: whether this kernel has
/// the user-notification action at all (5.0+).
pub fn user_notification_available() -> io::Result<()> {
    let action: u32 = libc::SECCOMP_RET_USER_NOTIF;
    // SAFETY: GET_ACTION_AVAIL reads one u32 from the pointer, which points at `action`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0,
            &action as *const u32,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Installs a filter that allows every call, with a listener and `flags` besides
/// `SECCOMP_FILTER_FLAG_NEW_LISTENER`, on the calling thread: for a probe child only (it is
/// permanent). Sets no_new_privs first. `EBUSY`: a filter above already has a listener.
pub fn install_allow_all_listener(flags: u32) -> io::Result<OwnedFd> {
    rustix::thread::set_no_new_privs(true)?;
    let program = [libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_ALLOW,
    }];
    let prog = libc::sock_fprog {
        len: 1,
        filter: program.as_ptr().cast_mut(),
    };
    let all = flags | libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as u32;
    // SAFETY: SECCOMP_SET_MODE_FILTER reads one instruction from `prog.filter`, which points
    // at `program`, live across the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            all as libc::c_ulong,
            &prog as *const libc::sock_fprog,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: with NEW_LISTENER, success returns a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(rc as i32) })
}

/// Whether the listener's kernel knows an answer flag, asked without a live notification: the
/// kernel checks the flags before it looks the id up, so `ENOENT` (no such notification) means
/// known and `EINVAL` unknown. `continue_flag`: `SECCOMP_USER_NOTIF_FLAG_CONTINUE` on
/// `NOTIF_SEND`; else `SECCOMP_ADDFD_FLAG_SEND` on `NOTIF_ADDFD`. Returns that errno.
pub fn answer_flag_errno(listener: impl AsFd, continue_flag: bool) -> i32 {
    let listener = listener.as_fd();
    // An id no notification has: the kernel numbers them from a random start, so any is as
    // unlikely as another; u64::MAX is what this probe uses.
    let id = u64::MAX;
    let result = if continue_flag {
        crate::unotify::send(listener, id, crate::unotify::Reply::Continue).map(drop)
    } else {
        crate::unotify::addfd_send(listener, id, listener, true).map(drop)
    };
    match result {
        Ok(()) => 0,
        Err(e) => errno(&e),
    }
}

/// Forks a child that only waits to be killed (for a probe that reads another process's
/// memory); returns its pid. The caller kills and reaps it with [`kill_and_reap`].
pub fn idle_child() -> io::Result<i32> {
    // SAFETY: the child only calls pause and _exit, both async-signal-safe.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: as above; alarm bounds the child's life if the parent never kills it.
        unsafe {
            libc::alarm(5);
            loop {
                libc::pause();
            }
        }
    }
    Ok(pid)
}

/// Kills and reaps a child from [`idle_child`].
pub fn kill_and_reap(pid: i32) {
    // SAFETY: `pid` is our own unreaped child, so the number cannot name another process.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    reap(pid);
}

/// `unshare(flags)` in a probe child of [`in_child`] (namespaces, for the probe to see whether
/// the host lets it make them). Not for warden's own process.
pub fn unshare_in_probe(flags: libc::c_int) -> io::Result<()> {
    // SAFETY: called only in a probe child, which runs no Rust runtime code that depends on its
    // namespaces, file-system state or credentials, and exits right after its probes.
    unsafe {
        rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::from_bits_retain(flags as u32))
    }?;
    Ok(())
}
