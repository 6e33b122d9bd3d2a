//! Creating the sandbox's first process with `clone(2)` (namespaces and a pidfd in one call),
//! and the few process-level calls that have no safe wrapper.

use std::io;
use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// The result of [`clone_process`], as seen by each side.
pub enum Cloned {
    /// We are the new process, with one thread.
    Child(OneThread),
    /// We are the caller; the child has this pid and pidfd.
    Parent {
        /// The child's pid in our PID namespace.
        pid: i32,
        /// A pidfd for the child (`CLONE_PIDFD`), so it can be signalled and waited on without
        /// any risk of pid reuse.
        pidfd: OwnedFd,
    },
}

/// What the child of [`clone_process`] is given: it has exactly one thread, as `clone`
/// without `CLONE_THREAD` makes it, so it may [`fork`] without looking (which costs a lookup
/// in `/proc` on the start's critical path). Made only here, used up by [`fork`]; the child
/// must not start a thread while it holds it.
pub struct OneThread(());

/// Fails with `EDEADLK`-flavoured `Other` unless the calling process has exactly one thread.
///
/// Forking a multithreaded process and then running arbitrary code in the child can deadlock
/// on a lock another thread held (malloc's, say). Checking here, at run time, is what makes
/// [`clone_process`] safe to call.
fn ensure_single_threaded() -> io::Result<()> {
    // procfs counts a process's threads in its task directory's links (two plus one per
    // thread): one `stat` rather than a listing. Anything else is counted by listing, for the
    // message (and for a kernel that might not count so).
    if rustix::fs::stat("/proc/self/task").is_ok_and(|st| st.st_nlink == 3) {
        return Ok(());
    }
    let tasks = rustix::fs::open(
        "/proc/self/task",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    let dir = rustix::fs::Dir::read_from(&tasks)?;
    let mut threads = 0;
    for entry in dir {
        if !entry?.file_name().to_bytes().starts_with(b".") {
            threads += 1;
        }
    }
    if threads == 1 {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "cannot fork a process with {threads} threads"
        )))
    }
}

/// `clone(flags | CLONE_PIDFD | SIGCHLD)` without a new stack: fork-like, into new namespaces.
/// Refuses to run in a multithreaded process.
pub fn clone_process(flags: u64) -> io::Result<Cloned> {
    ensure_single_threaded()?;
    let mut pidfd: RawFd = -1;
    let all = flags | libc::CLONE_PIDFD as u64 | libc::SIGCHLD as u64;
    // SAFETY: x86_64 clone(flags, stack, parent_tid, child_tid, tls). A null stack means the
    // child runs on a copy of our stack, as with fork; with CLONE_PIDFD the kernel writes the
    // pidfd (an int) to parent_tid, which points at `pidfd`, live across the call. We checked
    // above that no other thread exists.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clone,
            all,
            std::ptr::null_mut::<libc::c_void>(),
            &mut pidfd as *mut RawFd,
            std::ptr::null_mut::<libc::c_void>(),
            0usize,
        )
    };
    match rc {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(Cloned::Child(OneThread(()))),
        pid => Ok(Cloned::Parent {
            pid: pid as i32,
            // SAFETY: CLONE_PIDFD succeeded, so `pidfd` is a new descriptor nobody else owns.
            pidfd: unsafe { OwnedFd::from_raw_fd(pidfd) },
        }),
    }
}

/// `clone(CLONE_FILES | CLONE_PARENT)` without a new stack: a fork-like process that shares
/// this process's descriptor table and is its parent's child (which reaps it), not ours. For the
/// program's process to hand its listener over without `pidfd_getfd`: the helper, started
/// before the listener's filter and so outside it, sends what the program's process puts in
/// their shared table. `None` in the helper. Refuses to run in a multithreaded process.
pub fn fork_sharing_files() -> io::Result<Option<i32>> {
    ensure_single_threaded()?;
    // SAFETY: we checked above that no other thread exists, so the child inherits no lock
    // held by another.
    unsafe { clone_like_fork((libc::CLONE_FILES | libc::CLONE_PARENT) as u64) }
}

/// `clone(flags)` without a new stack: the child runs on a copy of our stack and memory, as
/// with fork. `None` in the child, the child's pid in the caller.
///
/// # Safety
/// The child shares no lock state with threads it does not have: the caller either has one
/// thread, or makes the child call only async-signal-safe functions until it execs or exits.
unsafe fn clone_like_fork(flags: u64) -> io::Result<Option<i32>> {
    // SAFETY: x86_64 clone(flags, stack, parent_tid, child_tid, tls) with a null stack and no
    // CLONE_*TID or CLONE_SETTLS flag: no pointer is passed or written; the caller's for the rest.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clone,
            flags,
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_void>(),
            std::ptr::null_mut::<libc::c_void>(),
            0usize,
        )
    };
    match rc {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        pid => Ok(Some(pid as i32)),
    }
}

/// A close-on-exec duplicate of descriptor number `fd` of this process's table: for the
/// helper of [`fork_sharing_files`], to which the process sharing its table said a number.
/// A number that is not open is `EBADF`.
pub fn dup_number(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC takes the number as a plain integer (the kernel looks it up and
    // fails with EBADF if nothing is open there) and returns a new descriptor nobody owns.
    let rc = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor from F_DUPFD_CLOEXEC, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(rc) })
}

/// `fork(2)`, for the sandbox's init to start the program: a process of one thread, as
/// `proof` says.
pub fn fork(proof: OneThread) -> io::Result<Option<i32>> {
    let OneThread(()) = proof;
    // SAFETY: the caller is single-threaded (`proof`), so the child inherits no lock held by
    // another thread.
    match unsafe { libc::fork() } {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        pid => Ok(Some(pid)),
    }
}

/// Waits for any child; returns (pid, raw wait status). Retries on EINTR.
pub fn wait_any() -> io::Result<(i32, i32)> {
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes one int to `status`, a live local.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
        if pid >= 0 {
            return Ok((pid, status));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// `execve(2)`. Returns only on failure.
pub fn execve(
    path: &std::ffi::CStr,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
) -> io::Error {
    debug_assert!(
        argv.last().is_some_and(|p| p.is_null()) && envp.last().is_some_and(|p| p.is_null())
    );
    // SAFETY: `path` is NUL-terminated; `argv` and `envp` are NULL-terminated arrays (asserted
    // by the builder in launch.rs) of pointers into CStrings that the caller keeps alive.
    unsafe { libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    io::Error::last_os_error()
}

/// `_exit(2)`: leaves a forked child without running the parent's atexit handlers or
/// flushing buffers that belong to the parent.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit has no preconditions and does not return.
    unsafe { libc::_exit(code) }
}

/// `prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN)`: from now on the caller and every process
/// it starts (the setting is inherited across fork and execve and cannot be cleared) may not
/// map memory writable and executable at once, nor make a mapping executable that was not
/// (mprotect, pkey_mprotect). Executable code then comes only from file mappings, which the
/// kernel allows only from mounts without `noexec`.
pub fn refuse_exec_gain() -> io::Result<()> {
    const PR_SET_MDWE: libc::c_int = 65;
    const PR_MDWE_REFUSE_EXEC_GAIN: libc::c_ulong = 1;
    // SAFETY: PR_SET_MDWE reads only its integer arguments and changes only the calling
    // process's memory policy (no pointer is passed, no memory of ours is touched).
    let r = unsafe {
        libc::prctl(
            PR_SET_MDWE,
            PR_MDWE_REFUSE_EXEC_GAIN,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EINVAL) {
        return Err(io::Error::other(
            "--wx needs the kernel's memory-deny-write-execute (PR_SET_MDWE, Linux 6.3), \
             which this kernel does not have; run without --wx",
        ));
    }
    Err(e)
}

/// Whether this kernel has [`refuse_exec_gain`]'s prctl: `PR_GET_MDWE` answers anything but
/// `EINVAL` (Linux 6.3). Asked by warden before a `--wx` run, so that the refusal is said in a
/// sentence before anything starts.
pub fn refuses_exec_gain_here() -> bool {
    const PR_GET_MDWE: libc::c_int = 66;
    // SAFETY: PR_GET_MDWE takes no pointer and changes nothing; it returns the caller's flags.
    let r = unsafe {
        libc::prctl(
            PR_GET_MDWE,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    r >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
}

/// `unshare(CLONE_NEWNET)`: the caller (the sandbox's program process, before it runs
/// anything) gets a network namespace of its own, owned by its user namespace, with only a
/// loopback interface, still down ([`loopback_up`]).
pub fn private_network() -> io::Result<()> {
    // SAFETY: CLONE_NEWNET moves only the caller's network namespace: no memory, descriptor,
    // cwd or root is unshared, and nothing in the Rust runtime depends on the namespace.
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNET) }?;
    Ok(())
}

/// Brings the loopback interface of the current (new, private) network namespace up, so
/// programs in the sandbox can talk to each other over 127.0.0.1 and ::1.
pub fn loopback_up() -> io::Result<()> {
    let sock = rustix::net::socket(
        rustix::net::AddressFamily::INET,
        rustix::net::SocketType::DGRAM,
        None,
    )?;
    use std::os::fd::AsRawFd;
    // SAFETY: ifreq is a plain C struct for which all-zero bytes are valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write one `struct ifreq`, which `req` is, live
    // across both calls.
    unsafe {
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS as _, &mut req) < 0 {
            return Err(io::Error::last_os_error());
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS as _, &req) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Closes every descriptor except `keep`, which ends up as descriptor 3. For init, which must
/// hold nothing of the outside world (stdio included) while it waits.
pub fn keep_only(keep: OwnedFd) -> OwnedFd {
    use std::os::fd::{AsRawFd, IntoRawFd};
    let raw = keep.into_raw_fd();
    // SAFETY: dup3 duplicates `raw`, which we own, onto 3; if they are equal we keep `raw`.
    // close_range then closes descriptors we no longer reference: 0-2 and everything from 4,
    // none of which is owned by a live Rust object in this single-threaded child (init drops
    // its objects before calling this, and the process only waits afterwards).
    unsafe {
        if raw != 3 {
            libc::dup3(raw, 3, libc::O_CLOEXEC);
            libc::close(raw);
        }
        close_range(0, 2, 0);
        close_range(4, u32::MAX, 0);
        let fd = OwnedFd::from_raw_fd(3);
        debug_assert_eq!(fd.as_raw_fd(), 3);
        fd
    }
}

/// Marks every descriptor from `first` on close-on-exec, so the program starts with stdio only.
pub fn cloexec_from(first: u32) {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag; it closes nothing and
    // touches no memory.
    unsafe { close_range(first, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) };
}

/// close_range(2) by its number: the libc crate declares no wrapper for musl.
///
/// # Safety
/// Without `CLOSE_RANGE_CLOEXEC` it closes descriptors: none in the range may be owned by a live
/// object that will use or close it again.
unsafe fn close_range(first: u32, last: u32, flags: u32) {
    // SAFETY: the caller's; the call takes three integers and touches no memory.
    unsafe { libc::syscall(libc::SYS_close_range, first, last, flags) };
}

/// Whether descriptor `fd` is open in this process.
pub fn fd_is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD only reads the descriptor's flags; on a closed number it fails with EBADF.
    unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
}

/// Takes descriptor `fd`, inherited from warden's parent (`--fd-inherited NAME=N:RIGHTS`), as
/// an owned descriptor: a close-on-exec duplicate (3 or above) of the same open file
/// description, the number `fd` closed. `EBADF` if it is not open or is 0, 1 or 2.
pub fn take_inherited(fd: RawFd) -> io::Result<OwnedFd> {
    if fd < 3 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: F_DUPFD_CLOEXEC on a number that is not open fails with EBADF and touches
    // nothing; on success it returns a new descriptor nobody else owns. `fd` was inherited and
    // no Rust object owns it (the caller names it from the command line), so closing it after
    // duplicating it invalidates no one's handle.
    unsafe {
        let new = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3);
        if new < 0 {
            return Err(io::Error::last_os_error());
        }
        libc::close(fd);
        Ok(OwnedFd::from_raw_fd(new))
    }
}

/// Whether descriptor `fd1` of process `pid1` and descriptor `fd2` of process `pid2` are one
/// open file description (`kcmp(KCMP_FILE)`: the kernel compares its own file objects). Needs
/// ptrace read access to both processes (always there for this process's own descriptors).
pub fn same_file(pid1: i32, fd1: RawFd, pid2: i32, fd2: RawFd) -> io::Result<bool> {
    const KCMP_FILE: libc::c_long = 0;
    // SAFETY: kcmp takes five integers and reads nothing from this process's memory; it only
    // compares kernel objects and answers 0 (the same), 1 or 2 (ordered), or fails.
    let r = unsafe {
        libc::syscall(
            libc::SYS_kcmp,
            pid1 as libc::c_long,
            pid2 as libc::c_long,
            KCMP_FILE,
            fd1 as libc::c_long,
            fd2 as libc::c_long,
        )
    };
    match r {
        -1 => Err(io::Error::last_os_error()),
        r => Ok(r == 0),
    }
}

/// Clears close-on-exec on descriptor `fd`, which the caller promises is open (`EBADF`
/// otherwise), so the program inherits it.
pub fn keep_across_exec(fd: RawFd) -> io::Result<()> {
    // SAFETY: the descriptor is only borrowed for one fcntl that changes its flags; if `fd` is
    // not open the call fails with EBADF and nothing else is touched.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
    Ok(())
}

/// The exit status and resource usage of child `pid` (and of every descendant it reaped),
/// waiting for it to end.
pub fn wait_with_usage(pid: i32) -> io::Result<(i32, crate::usage::Usage)> {
    let mut status = 0;
    // SAFETY: rusage is plain data for which all-zero is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 writes an int and a struct rusage through pointers to live locals.
        let rc = unsafe { libc::wait4(pid, &mut status, libc::__WALL, &mut usage) };
        if rc == pid {
            return Ok((status, crate::usage::Usage::from_rusage(&usage)));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// `unshare(CLONE_FS)` for the calling thread: gives an agent worker a cwd of its own.
pub fn unshare_fs() -> io::Result<()> {
    // SAFETY: CLONE_FS only detaches this thread's cwd/root/umask from its siblings; Rust's
    // runtime keeps no state that depends on sharing them, and the agent never relies on a
    // shared cwd (it resolves everything from descriptors).
    unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::FS) }?;
    Ok(())
}

/// `unshare(CLONE_NEWNS | CLONE_FS)` for the calling thread: a mount namespace (and root and
/// cwd) of its own, where a test mounts and chroots without touching the rest of the process
/// (the resolver's unit tests). Not `cfg(test)`, so that it stays visible to those tests when
/// this module lives in a crate of its own.
pub fn unshare_mounts() -> io::Result<()> {
    // SAFETY: as `unshare_fs`: the flags detach only this thread's mount namespace and
    // cwd/root/umask; no memory or descriptor table is affected, and nothing in the Rust runtime
    // depends on the thread sharing them.
    unsafe {
        rustix::thread::unshare_unsafe(
            rustix::thread::UnshareFlags::NEWNS | rustix::thread::UnshareFlags::FS,
        )
    }?;
    Ok(())
}

/// Switches the whole process to `uid`/`gid` with no supplementary groups. Dropping the groups
/// may be refused (an unprivileged user namespace denies setgroups); that is not an error, as
/// such a namespace has no other groups mapped.
pub fn become_ids(uid: u32, gid: u32) -> io::Result<()> {
    // SAFETY: these calls take plain integers and a NULL list of length 0; glibc applies them to
    // every thread of the process.
    unsafe {
        let _ = libc::setgroups(0, std::ptr::null());
        if libc::setresgid(gid, gid, gid) != 0 || libc::setresuid(uid, uid, uid) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    // Changing ids makes the process non-dumpable, which would make its children's /proc files
    // root's and keep us from writing their id maps. Nothing in a sandbox can reach us anyway
    // (ptrace and process_vm_* are denied; we are outside its PID namespace).
    rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::Dumpable)?;
    Ok(())
}

/// The text of a file of `/proc` (or `/sys`), read in large pieces. Such a file says its size
/// is 0, so a reader that sizes its buffer from it (`read_to_string`) starts at 32 bytes and
/// grows, one `read` each time: eight for the mount table of a start's plan, where this makes
/// two.
pub fn read_proc(path: &str) -> io::Result<String> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    let mut text = Vec::with_capacity(16 * 1024);
    loop {
        if text.len() == text.capacity() {
            text.reserve(text.capacity());
        }
        match rustix::io::read(&fd, rustix::buffer::spare_capacity(&mut text)) {
            Ok(0) => break,
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    String::from_utf8(text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// The fields of a `/proc/PID/stat` line after the command name, which may hold spaces and
/// parentheses (so they are counted from the last `)`): field N of proc(5) is at index N-3.
pub fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    Some(stat[stat.rfind(')')? + 1..].split_whitespace().collect())
}

/// This process's peak resident size in KiB (`VmHWM` of `/proc/self/status`), 0 if unreadable.
pub fn peak_rss_kib() -> u64 {
    read_proc("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// The calling process's controlling terminal, opened through `/dev/tty` (`O_NOCTTY`), for
/// [`give_up_controlling_terminal`]; `None` when it has none (`ENXIO`) or there is no
/// `/dev/tty` to open. Open it while the process's root is the host's: in a root of the
/// sandbox's own there may be no `/dev/tty`, and a process that found none would keep its
/// terminal.
///
/// Runs in the sandbox's init between clone and exec: it allocates nothing.
pub fn controlling_terminal() -> io::Result<Option<OwnedFd>> {
    use rustix::fs::{Mode, OFlags};
    match rustix::fs::open(
        c"/dev/tty",
        OFlags::RDWR | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(Some(fd)),
        Err(rustix::io::Errno::NXIO | rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Gives up the calling process's controlling terminal `tty` ([`controlling_terminal`], opened
/// by this process or a parent it was forked from) while staying in its session and process
/// group (`TIOCNOTTY` from a process that is not a session leader clears only its own
/// `signal->tty`). Everything it forks afterwards has no controlling terminal either, so
/// `/dev/tty` is `ENXIO` for them. `ENOTTY`: the terminal is not this process's controlling
/// terminal (any more), which is what was wanted.
///
/// Unlike `setsid`, this makes no new session, so no new scheduler autogroup
/// (`kernel.sched_autogroup_enabled`): with the sandbox in an autogroup of its own, every
/// delegated call's round trip between it and the agent cost 20-40% more here.
///
/// Runs in the sandbox's init between clone and exec: it allocates nothing.
pub fn give_up_controlling_terminal(tty: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: TIOCNOTTY takes no argument (tty_ioctl(4)); `tty` is an open descriptor borrowed
    // for the duration of the call; the kernel reads and writes no memory of ours.
    let rc = unsafe { libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(&tty), libc::TIOCNOTTY) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOTTY) {
            return Ok(());
        }
        return Err(e);
    }
    Ok(())
}

/// Sets the calling process's `oom_score_adj` to 1000, the OOM killer's first choice (raising
/// it needs no privilege). Best effort, allocation-free: it runs between fork and exec. False
/// when `/proc/self/oom_score_adj` could not be written (no procfs at the caller's root).
pub fn prefer_for_oom() -> bool {
    use rustix::fs::{Mode, OFlags};
    match rustix::fs::open(
        c"/proc/self/oom_score_adj",
        OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => rustix::io::write(&fd, b"1000").is_ok(),
        Err(_) => false,
    }
}

/// The processes whose PID namespace is `ns` (the device and inode of `/proc/PID/ns/pid`), by
/// their pids in warden's namespace: the sandbox's processes, found from outside.
pub fn pids_in_namespace(ns: (u64, u64)) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            rustix::fs::stat(format!("/proc/{pid}/ns/pid"))
                .is_ok_and(|st| (st.st_dev, st.st_ino) == ns)
        })
        .collect()
}

/// Makes the child `cmd` starts see each `(ours, theirs)` pair's descriptor `ours` as number
/// `theirs` (at most 8 pairs).
///
/// Every source is first copied above all targets (close-on-exec), then `dup2`ed onto its
/// target. That way a source whose number is already its target still loses close-on-exec
/// (`dup2(fd, fd)` alone does nothing, and the descriptor would vanish at exec), and a source
/// whose number is another pair's target is not overwritten before it is copied.
pub fn pass_fds(cmd: &mut std::process::Command, pairs: &[(RawFd, RawFd)]) {
    use std::os::unix::process::CommandExt;
    const MOST: usize = 8;
    assert!(pairs.len() <= MOST, "pass_fds: at most {MOST} descriptors");
    let pairs = pairs.to_vec();
    let above = pairs.iter().map(|&(_, t)| t).max().unwrap_or(2) + 1;
    // SAFETY: only fcntl(2) and dup2(2), async-signal-safe, between fork and exec; the
    // closure allocates nothing and cannot panic (the size is checked before the fork).
    unsafe {
        cmd.pre_exec(move || {
            let mut copies = [-1; MOST];
            for (copy, &(fd, _)) in copies.iter_mut().zip(&pairs) {
                *copy = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, above);
                if *copy < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            for (&copy, &(_, target)) in copies.iter().zip(&pairs) {
                if libc::dup2(copy, target) < 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// The kernel half of a process descriptor (Capsicum's `pdfork`, `warden_capsicum::program`):
/// `clone(CLONE_PIDFD)` with no exit signal (no `SIGCHLD` to the parent), the child executing
/// `path` with `argv` and `envp` (NULL-terminated arrays of pointers into strings the caller
/// keeps alive). Before it executes, the child closes `parent_end` and sets `child_end` (kept
/// across exec) to send it `SIGKILL` when its peer hangs up (`O_ASYNC`, `F_SETSIG`, itself as
/// owner), so closing the last copy of `parent_end` kills it. The descriptors `keep` (the
/// caller's close-on-exec ones) lose close-on-exec in the child alone, so the program inherits
/// them and no other child the caller's threads start meanwhile can. Returns the child's pid
/// and pidfd.
///
/// Safe in a multithreaded process: the child runs only async-signal-safe system calls on
/// values prepared before the clone, then executes or exits.
pub fn spawn_descriptor(
    path: &std::ffi::CStr,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    child_end: RawFd,
    parent_end: RawFd,
    keep: &[RawFd],
) -> io::Result<(i32, OwnedFd)> {
    if !(argv.last().is_some_and(|p| p.is_null()) && envp.last().is_some_and(|p| p.is_null())) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut pidfd: RawFd = -1;
    // SAFETY: x86_64 clone(flags, stack, parent_tid, child_tid, tls), fork-like (null stack:
    // the child runs on a copy of ours). With CLONE_PIDFD the kernel writes an int to
    // parent_tid, which points at `pidfd`, live across the call. No exit signal: the low byte
    // of the flags is 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::CLONE_PIDFD as u64,
            std::ptr::null_mut::<libc::c_void>(),
            &mut pidfd as *mut RawFd,
            std::ptr::null_mut::<libc::c_void>(),
            0usize,
        )
    };
    match rc {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            // The child: only raw, async-signal-safe calls from here to execve or _exit.
            // SAFETY: close, fcntl, getpid, poll, kill, execve and _exit take plain values and
            // pointers prepared before the clone (`path`, `argv`, `envp`, the `keep` slice, the
            // local `pfd`); none allocates or takes a lock another thread of the parent could
            // have held.
            unsafe {
                libc::close(parent_end);
                for &fd in keep {
                    if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                        libc::_exit(127);
                    }
                }
                let ok = libc::fcntl(child_end, libc::F_SETFD, 0) == 0
                    && libc::fcntl(child_end, libc::F_SETOWN, libc::getpid()) == 0
                    && libc::fcntl(child_end, 10 /* F_SETSIG */, libc::SIGKILL) == 0
                    && libc::fcntl(
                        child_end,
                        libc::F_SETFL,
                        libc::fcntl(child_end, libc::F_GETFL) | libc::O_ASYNC,
                    ) == 0;
                if !ok {
                    libc::_exit(127);
                }
                // Hung up before the above took hold: no signal came, so act on it now.
                let mut pfd = libc::pollfd {
                    fd: child_end,
                    events: libc::POLLIN,
                    revents: 0,
                };
                if libc::poll(&mut pfd, 1, 0) == 1 && pfd.revents & libc::POLLHUP != 0 {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                }
                libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
                libc::_exit(127)
            }
        }
        // SAFETY: CLONE_PIDFD succeeded, so `pidfd` is a new descriptor nobody else owns.
        pid => Ok((pid as i32, unsafe { OwnedFd::from_raw_fd(pidfd) })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The threads of this process, listed and as the task directory's links count them (what
    /// [`ensure_single_threaded`] trusts when they say one), read when no test thread of the
    /// harness came or went meanwhile.
    fn threads_both_ways() -> (u64, u64) {
        let listed = || {
            std::fs::read_dir("/proc/self/task")
                .expect("listing /proc/self/task")
                .count() as u64
        };
        let linked = || {
            rustix::fs::stat("/proc/self/task")
                .expect("stat of /proc/self/task")
                .st_nlink
        };
        for _ in 0..1000 {
            let (a, links, b) = (listed(), linked(), listed());
            if a == b {
                return (a, links - 2);
            }
        }
        panic!("the harness's threads never stood still");
    }

    /// The links count the threads as threads come and go, and a process of several threads
    /// is refused.
    #[test]
    fn the_task_directory_links_count_threads() {
        let (listed, linked) = threads_both_ways();
        assert_eq!(linked, listed);
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let stopped = std::sync::Arc::new(std::sync::Mutex::new(stopped));
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let s = std::sync::Arc::clone(&stopped);
                std::thread::spawn(move || {
                    let _ = s.lock().map(|r| r.recv());
                })
            })
            .collect();
        let (listed, linked) = threads_both_ways();
        assert_eq!(linked, listed);
        // This test's thread and the three.
        assert!(linked >= 4, "{linked} threads");
        let e = ensure_single_threaded().expect_err("several threads");
        assert!(e.to_string().contains("threads"), "{e}");
        drop(stop);
        for t in threads {
            t.join().expect("thread");
        }
        let (listed, linked) = threads_both_ways();
        assert_eq!(linked, listed);
    }
}

/// Whether this process runs under a seccomp filter (`PR_GET_SECCOMP` says 2): a container
/// engine's profile, another supervisor's, a test's. Such a filter may refuse the namespaces
/// warden makes, which only trying tells ([`probe_namespaces`]).
pub fn under_seccomp_filter() -> bool {
    // SAFETY: PR_GET_SECCOMP takes no pointer and returns the mode (0, 1 or 2), or -1; a filter
    // that refuses prctl makes it -1 with an errno, which counts as a filter.
    let rc = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    rc != 0
}

/// Why a probe of the sandbox's namespaces failed.
#[derive(Debug)]
pub enum NamespaceRefusal {
    /// The `clone` that makes them failed with this error (a seccomp profile's EPERM,
    /// `user.max_user_namespaces=0`'s ENOSPC, a kernel without them: EINVAL).
    Clone(io::Error),
    /// The user namespace was made, but the capabilities in it are refused (Ubuntu's AppArmor
    /// restriction): its first privileged step, making a network namespace, failed with this.
    Capabilities(io::Error),
}

/// Tries the sandbox's `clone` with `flags` (a user namespace and the others), and in the child
/// the first step that needs the namespace's capabilities (`unshare(CLONE_NEWNET)`); the child
/// exits at once. The caller must be single-threaded (see [`clone_process`]). Costs one clone
/// and a network namespace: only for hosts that may refuse them.
pub fn probe_namespaces(flags: u64) -> Result<(), NamespaceRefusal> {
    match clone_process(flags).map_err(NamespaceRefusal::Clone)? {
        Cloned::Child(_) => {
            let code = match private_network() {
                Ok(()) => 0,
                // An exit code carries the errno (they all fit in 8 bits).
                Err(e) => e.raw_os_error().unwrap_or(libc::EPERM) & 0xff,
            };
            exit_now(code)
        }
        Cloned::Parent { pid, pidfd } => {
            drop(pidfd);
            let (status, _) = wait_with_usage(pid).map_err(NamespaceRefusal::Clone)?;
            match libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)) {
                Some(0) => Ok(()),
                Some(errno) => Err(NamespaceRefusal::Capabilities(
                    io::Error::from_raw_os_error(errno),
                )),
                None => Err(NamespaceRefusal::Capabilities(io::Error::other(
                    "the probe's child was killed",
                ))),
            }
        }
    }
}

/// A process that removes directories for its parent, later, with the rights the parent has
/// now: for a root warden that is about to become another user (`starting_uid`, or uid 65534
/// without user namespaces) and has just made cgroups that only root may remove. Made by
/// [`spawn_remover`]; [`Remover::remove`] asks for the removal and waits for it.
#[derive(Debug)]
pub struct Remover {
    sock: OwnedFd,
    pid: i32,
}

/// The remover's answer: every directory removed (or already gone).
const REMOVED: u8 = 0;

/// Starts a [`Remover`] for `dirs`, which it removes in that order when asked, or by itself
/// when this process ends without asking (a SIGKILL), retrying a directory that is busy (the
/// sandbox's last processes are still being torn down) for up to ten seconds. It is the
/// caller's child, in a session of its own, with every signal blocked and no descriptor but
/// its end of a socket pair: a signal to warden's process group or terminal does not stop it,
/// and it holds nothing the sandbox could reach. Safe in a multithreaded process: the child
/// makes system calls only (no allocation, no lock) on memory prepared here.
pub fn spawn_remover(dirs: &[std::ffi::CString]) -> io::Result<Remover> {
    use rustix::net::{socketpair, AddressFamily, SocketFlags, SocketType};
    use std::os::fd::AsRawFd;
    let (ours, theirs) = socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?;
    let ptrs: Vec<*const libc::c_char> = dirs.iter().map(|d| d.as_ptr()).collect();
    let sock = theirs.as_raw_fd();
    // SAFETY: flags 0 (no new namespace, exit signal none, so only a waitpid with __WALL for
    // this pid reaps it and no SIGCHLD reaches warden's handlers). The child calls only
    // async-signal-safe system calls on `ptrs` (pointers into `dirs`, NUL-terminated, alive in
    // its copy) and `sock`, and leaves with _exit: no lock another thread may have held is
    // touched.
    match unsafe { clone_like_fork(0) }? {
        // SAFETY: the child of the clone above (see there).
        None => unsafe { remover_main(sock, &ptrs) },
        Some(pid) => Ok(Remover { sock: ours, pid }),
    }
}

/// The remover's whole life. Never returns.
///
/// # Safety
/// Only in the child of [`spawn_remover`]'s clone: it closes every descriptor but `sock`.
unsafe fn remover_main(sock: RawFd, dirs: &[*const libc::c_char]) -> ! {
    // SAFETY: plain system calls on integers and on memory of this process: a full signal set
    // on our stack, the pointers the caller prepared (NUL-terminated paths), a one-byte
    // buffer and a timespec on our stack. Nothing here allocates or takes a lock.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
        libc::setsid();
        if sock > 0 {
            close_range(0, (sock - 1) as u32, 0);
        }
        close_range(sock as u32 + 1, u32::MAX, 0);
        let mut byte = 0u8;
        let asked = loop {
            let n = libc::read(sock, (&mut byte as *mut u8).cast(), 1);
            if n >= 0 {
                break n == 1;
            }
            if *libc::__errno_location() != libc::EINTR {
                break false;
            }
        };
        // Asked: the groups are empty but for a last task still leaving (0.1 s). Orphaned:
        // the sandbox is being killed as warden's death reaches it (10 s).
        let tries = if asked { 50 } else { 5000 };
        let pause = libc::timespec {
            tv_sec: 0,
            tv_nsec: 2_000_000,
        };
        let mut left = 0u8;
        for &dir in dirs {
            let mut n = 0;
            while libc::rmdir(dir) != 0 {
                let e = *libc::__errno_location();
                if e == libc::ENOENT {
                    break;
                }
                n += 1;
                if e != libc::EBUSY || n >= tries {
                    left = left.saturating_add(1);
                    break;
                }
                libc::nanosleep(&pause, std::ptr::null_mut());
            }
        }
        let answer = if left == 0 { REMOVED } else { left };
        libc::write(sock, (&answer as *const u8).cast(), 1);
        libc::_exit(0)
    }
}

impl Remover {
    /// Asks for the removal, waits for it, and reaps the remover: `Ok` when every directory is
    /// gone, else how many are left (`None`: the remover did not answer).
    pub fn remove(self) -> Result<(), Option<u8>> {
        use std::os::fd::AsFd;
        let _ = rustix::io::write(self.sock.as_fd(), &[1]);
        let mut answer = [0xffu8];
        let got = loop {
            match rustix::io::read(self.sock.as_fd(), &mut answer) {
                Err(rustix::io::Errno::INTR) => continue,
                r => break r,
            }
        };
        reap(self.pid);
        match got {
            Ok(1) if answer[0] == REMOVED => Ok(()),
            Ok(1) => Err(Some(answer[0])),
            _ => Err(None),
        }
    }
}

/// Waits for child `pid` (of any exit signal).
fn reap(pid: i32) {
    let mut status = 0;
    // SAFETY: waitpid writes one int to `status`, a live local.
    while unsafe { libc::waitpid(pid, &mut status, libc::__WALL) } < 0
        && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
    {}
}
