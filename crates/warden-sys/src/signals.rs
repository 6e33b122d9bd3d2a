//! Blocking and waiting for the signals that stop warden, and dropping privileges.

use rustix::process::Signal;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

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

/// Unblocks `signals` in the calling thread.
pub fn unblock(signals: &[Signal]) {
    let s = set(signals);
    // SAFETY: as in `block`, removing the set from the mask.
    unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &s, std::ptr::null_mut()) };
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

/// A descriptor that is readable while one of its signals is pending (`signalfd(2)`), so a
/// thread that waits on other descriptors takes the signals too, with no thread of their own.
/// The signals must be blocked in every thread, or the kernel delivers them instead.
pub struct SignalFd(OwnedFd);

impl SignalFd {
    /// A descriptor for `signals` (close-on-exec, non-blocking).
    pub fn new(signals: &[Signal]) -> io::Result<SignalFd> {
        let s = set(signals);
        // SAFETY: signalfd reads the initialised set (its size is the kernel's sigset, which
        // libc passes); -1 asks for a new descriptor, owned at once.
        let fd = unsafe { libc::signalfd(-1, &s, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor the kernel just returned, owned by nobody else.
        Ok(SignalFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Takes one pending signal of the set and returns its number; `None` if none is pending.
    pub fn take(&self) -> Option<i32> {
        // SAFETY: signalfd_siginfo is plain data for which all-zero is valid.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let len = std::mem::size_of::<libc::signalfd_siginfo>();
        loop {
            // SAFETY: read writes at most `len` bytes into `info`, which is that large and
            // lives across the call.
            let n = unsafe {
                libc::read(
                    self.0.as_raw_fd(),
                    (&mut info as *mut libc::signalfd_siginfo).cast(),
                    len,
                )
            };
            if n == len as isize {
                return i32::try_from(info.ssi_signo).ok();
            }
            if n < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return None;
        }
    }
}

impl AsFd for SignalFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// Lets SIGPIPE end this process, as it ends any command-line program whose reader went away
/// (`warden check --explain | head`). Rust's runtime ignores it, so each later write fails with
/// `EPIPE` and `println!` panics. Only for commands that print and hold nothing: `warden run`
/// keeps ignoring it, so that a closed stderr never kills it before it has cleaned up.
pub fn default_sigpipe() {
    // SAFETY: signal(2) with SIG_DFL installs no handler and touches no memory of ours.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// Resets every signal's disposition to the default. Ignored signals survive `execve`, and
/// warden's own runtime ignores SIGPIPE (and glibc its reserved signals 32 and 33, which its
/// `sigaction` wrapper refuses to touch, hence the raw call): the program must start as it
/// would from a shell.
pub fn reset_dispositions() {
    /// The kernel's `struct sigaction` on x86_64.
    #[repr(C)]
    struct KernelSigaction {
        handler: usize,
        flags: u64,
        restorer: usize,
        mask: u64,
    }
    let dfl = KernelSigaction {
        handler: 0,
        flags: 0,
        restorer: 0,
        mask: 0,
    };
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: rt_sigaction reads one kernel sigaction (`dfl`, live, of the size the kernel
        // expects on x86_64 with an 8-byte mask) and writes nothing (old action NULL).
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                sig,
                &dfl as *const KernelSigaction,
                std::ptr::null_mut::<u8>(),
                8usize,
            )
        };
    }
}

/// The signal the agent's watchdog uses to interrupt a worker stuck in a blocking call for a
/// caller that has gone away.
pub const INTERRUPT: i32 = libc::SIGUSR2;

extern "C" fn ignore_interrupt(_: libc::c_int) {}

/// Installs a do-nothing handler for [`INTERRUPT`] without `SA_RESTART`, so that delivering it
/// to a thread makes the blocking call it is in (a FIFO open, a connect) fail with `EINTR`.
pub fn install_interrupt_handler() {
    // SAFETY: the sigaction struct is zeroed then filled with a valid handler (an extern "C"
    // function that touches nothing, so it is async-signal-safe) and an empty mask.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = ignore_interrupt as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(INTERRUPT, &act, std::ptr::null_mut());
    }
}

/// A thread that can be interrupted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadHandle(libc::pthread_t);

// SAFETY: a pthread_t only names a thread, for pthread_kill from any thread; glibc makes it an
// integer, musl a pointer that nothing here dereferences.
unsafe impl Send for ThreadHandle {}
// SAFETY: as above; a shared handle is only copied.
unsafe impl Sync for ThreadHandle {}

/// The calling thread.
pub fn current_thread() -> ThreadHandle {
    // SAFETY: pthread_self has no preconditions.
    ThreadHandle(unsafe { libc::pthread_self() })
}

/// Sends [`INTERRUPT`] to `thread`. The caller must know the thread is still alive (agent
/// workers never exit while the agent runs).
pub fn interrupt(thread: ThreadHandle) {
    // SAFETY: the handle came from pthread_self of a thread that is still running (see above);
    // the signal's handler is installed before any worker starts.
    unsafe { libc::pthread_kill(thread.0, INTERRUPT) };
}

/// The signal warden sends the sandbox's init to end the sandbox in an orderly way (see
/// [`install_terminate_handler`]). An init of a PID namespace receives from outside only the
/// signals it has a handler for, so nothing else can deliver it by accident.
pub const TERMINATE: Signal = Signal::TERM;

extern "C" fn kill_everyone_else(_: libc::c_int) {
    kill_all_others();
}

/// Set once by an init that runs without a PID namespace of its own ([`without_namespace`]).
static NO_NAMESPACE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// For a sandbox's init that has no PID namespace (warden's no-namespace mode): makes it the
/// subreaper of everything it starts (an orphan of the sandbox is reparented to it, not to the
/// host's init), and makes [`kill_all_others`] kill its children rather than `kill(-1)`, which
/// outside a PID namespace would reach every process of the user's (or, as root, of the host).
pub fn without_namespace() -> io::Result<()> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))?;
    NO_NAMESPACE.store(true, std::sync::atomic::Ordering::SeqCst);
    Ok(())
}

/// `kill(-1, SIGKILL)`: from a PID namespace's init, every other process of the namespace.
/// Without one ([`without_namespace`]): every child of the caller, which is the subreaper of
/// all the sandbox started; their children, orphaned, become its children and are killed on the
/// next call (init calls this again each time it reaps one).
pub fn kill_all_others() {
    if NO_NAMESPACE.load(std::sync::atomic::Ordering::SeqCst) {
        kill_children();
        return;
    }
    // SAFETY: kill takes two integers and touches no memory; it is async-signal-safe.
    unsafe { libc::kill(-1, libc::SIGKILL) };
}

/// SIGKILL to every child of the calling (single-threaded) process, read from
/// `/proc/thread-self/children` with raw calls only (it runs in a signal handler). A child
/// that has not been reaped keeps its pid, so none of the pids read can name another process.
fn kill_children() {
    let mut buf = [0u8; 4096];
    // SAFETY: open, read and close are async-signal-safe; the path is a NUL-terminated literal
    // and `buf` is ours, valid for its length.
    let n = unsafe {
        let fd = libc::open(
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return;
        }
        let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        n
    };
    if n <= 0 {
        return;
    }
    let mut pid: i32 = 0;
    for &b in &buf[..n as usize] {
        if b.is_ascii_digit() {
            pid = pid.saturating_mul(10).saturating_add(i32::from(b - b'0'));
        } else {
            if pid > 0 {
                // SAFETY: as in the namespace case; `pid` is an unreaped child of ours.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            pid = 0;
        }
    }
    if pid > 0 {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Whether [`without_namespace`] was called in this process.
pub fn is_without_namespace() -> bool {
    NO_NAMESPACE.load(std::sync::atomic::Ordering::SeqCst)
}

/// For the sandbox's init: on [`TERMINATE`], kill every other process of the namespace, and
/// let init's wait loop reap them (so their CPU time is counted) and report. Also unblocks the
/// signal, which init inherited blocked from warden.
pub fn install_terminate_handler() {
    // SAFETY: as in `install_interrupt_handler`; the handler only calls kill(2).
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = kill_everyone_else as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(TERMINATE.as_raw(), &act, std::ptr::null_mut());
    }
    let s = set(&[TERMINATE]);
    // SAFETY: as in `block`.
    unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &s, std::ptr::null_mut()) };
}

/// Sends `sig` to thread `tid` of process `tgid` (ids in warden's PID namespace), as the kernel
/// would have sent it to the thread that made a call the agent performed (SIGPIPE).
pub fn thread_kill(tgid: u32, tid: u32, sig: libc::c_int) {
    // SAFETY: tgkill takes plain integers; a thread that is gone makes it fail with ESRCH, and
    // the tgid check keeps a recycled tid of another process from receiving it.
    unsafe {
        libc::syscall(
            libc::SYS_tgkill,
            tgid as libc::c_int,
            tid as libc::c_int,
            sig,
        )
    };
}

/// `PIDFD_THREAD` (Linux 6.9): a pidfd for one thread, which `pidfd_send_signal` then signals
/// alone.
pub const PIDFD_THREAD: u32 = libc::O_EXCL as u32;

/// `PIDFD_SIGNAL_THREAD` (Linux 6.9): `pidfd_send_signal` to the thread the pidfd names.
pub const PIDFD_SIGNAL_THREAD: u32 = 1;

/// `pidfd_open(pid, flags)`: a descriptor for the process (or, with [`PIDFD_THREAD`], the
/// thread) `pid` names now. Holding it does not keep the number from being reused once that
/// process is reaped, but every signal sent through it reaches that process or nothing.
pub fn pidfd_open(pid: i32, flags: u32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes two integers and returns a new descriptor or -1.
    let rc = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, flags) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us, and nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(rc as i32) })
}

/// `pidfd_send_signal(pidfd, sig, info, flags)`, `info` being a `siginfo_t` as copied from a
/// caller (the kernel checks its `si_signo` and `si_code` as for `rt_sigqueueinfo`).
pub fn pidfd_send_signal(
    pidfd: BorrowedFd<'_>,
    sig: i32,
    info: Option<&[u8; 128]>,
    flags: u32,
) -> io::Result<()> {
    let info_ptr = info.map_or(std::ptr::null(), |i| i.as_ptr());
    // SAFETY: the descriptor is borrowed for the call; `info` is null or points at 128 bytes
    // (sizeof(siginfo_t)) that live across it, which the kernel only reads.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            sig,
            info_ptr,
            flags,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A signal sent to this thread while blocked is pending on the descriptor, taken once.
    #[test]
    fn a_blocked_signal_is_taken_from_the_descriptor_once() {
        // Thread-directed (tgkill), so no other thread of the test harness can take it.
        block(&[Signal::USR2]);
        let fd = SignalFd::new(&[Signal::USR2]).expect("signalfd");
        assert_eq!(fd.take(), None);
        thread_kill(
            std::process::id(),
            rustix::thread::gettid().as_raw_nonzero().get() as u32,
            libc::SIGUSR2,
        );
        let mut ready = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        let n = rustix::event::poll(&mut ready, None).expect("poll");
        assert_eq!(n, 1);
        assert_eq!(fd.take(), Some(libc::SIGUSR2));
        assert_eq!(fd.take(), None);
        unblock_all();
    }
}
