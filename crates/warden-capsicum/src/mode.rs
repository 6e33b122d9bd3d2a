//! Capability mode's rules: what a process in capability mode may not name, and why.
//!
//! Each refusal names one [`Rule`]; warden's `-v` and `--log` print it, so an operator sees
//! which rule of capability mode refused which call. The decisions here are pure (they look at
//! register values and at the agent's own copy of a path); the agent acts on them.

/// A rule of capability mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// An absolute path names the global file namespace.
    AbsolutePath,
    /// A path relative to the current directory (`AT_FDCWD`, `open`, `stat`, `chdir`, ...):
    /// the current directory is not a capability.
    CurrentDirectory,
    /// A path relative to a directory descriptor leaves it (`..` above it, an absolute or
    /// escaping symlink, a magic link under `/proc`).
    Escape,
    /// The descriptor used as a directory is not a directory capability, or lacks a right.
    Rights,
    /// Executing a file by path (`fexecve` of a descriptor is allowed).
    ExecByPath,
    /// Binding, connecting or sending to an address, or making a new socket.
    SocketAddress,
    /// Naming another process by its pid (signals, scheduling, limits, pidfd_open).
    OtherProcess,
    /// System V IPC and POSIX message queues: keys and names of a global namespace.
    Ipc,
    /// A call that names a global object capability mode never allows (mounts, statfs of a
    /// path, inotify watches by path, ...).
    Global,
}

impl Rule {
    /// The rule's name in logs (`capability-mode:absolute-path`).
    pub fn name(self) -> &'static str {
        match self {
            Rule::AbsolutePath => "capability-mode:absolute-path",
            Rule::CurrentDirectory => "capability-mode:current-directory",
            Rule::Escape => "capability-mode:escape",
            Rule::Rights => "capability-mode:rights",
            Rule::ExecByPath => "capability-mode:exec-by-path",
            Rule::SocketAddress => "capability-mode:socket-address",
            Rule::OtherProcess => "capability-mode:other-process",
            Rule::Ipc => "capability-mode:ipc",
            Rule::Global => "capability-mode:global-namespace",
        }
    }

    /// Why, in one phrase, for `-v`.
    pub fn why(self) -> &'static str {
        match self {
            Rule::AbsolutePath => "an absolute path names the global file namespace",
            Rule::CurrentDirectory => {
                "a path relative to the current directory: only directory descriptors are capabilities"
            }
            Rule::Escape => "the path leaves the directory capability (.., an absolute or escaping symlink)",
            Rule::Rights => "the descriptor lacks the right",
            Rule::ExecByPath => "execve by path; use fexecve on a descriptor",
            Rule::SocketAddress => "sockets by address are the global network namespace",
            Rule::OtherProcess => "another process named by its pid; use a process descriptor",
            Rule::Ipc => "System V IPC and message queue names are global",
            Rule::Global => "a global namespace",
        }
    }

    /// The errno the refusal answers.
    pub fn errno(self) -> i32 {
        match self {
            Rule::Escape | Rule::Rights => crate::ENOTCAPABLE,
            _ => crate::ECAPMODE,
        }
    }
}

/// The rule that refuses a lookup of `path` relative to `dirfd` in capability mode, if one
/// does before the walk: absolute paths and the current directory. What remains (a relative
/// path from a directory descriptor) is decided by the walk beneath the descriptor.
pub fn path_rule(dirfd: i32, path: &[u8]) -> Option<Rule> {
    if path.first() == Some(&b'/') {
        Some(Rule::AbsolutePath)
    } else if dirfd == libc::AT_FDCWD {
        Some(Rule::CurrentDirectory)
    } else {
        None
    }
}

/// `fcntl`'s `F_SETOWN_EX` (include/uapi/asm-generic/fcntl.h).
pub const F_SETOWN_EX: i32 = 15;
/// `ioctl`'s `FIOSETOWN` and `SIOCSPGRP` (include/uapi/asm-generic/sockios.h): `F_SETOWN` by
/// another name.
pub const OWNER_IOCTLS: [u64; 2] = [0x8901, 0x8902];

/// Calls that name a process by pid, and which argument is the pid (`None`: every use is
/// refused). In capability mode they are allowed only on the caller itself (pid 0 or its own).
pub const BY_PID: &[(libc::c_long, Option<usize>)] = &[
    (libc::SYS_kill, Some(0)),
    (libc::SYS_tgkill, Some(0)),
    (libc::SYS_rt_sigqueueinfo, Some(0)),
    (libc::SYS_rt_tgsigqueueinfo, Some(0)),
    (libc::SYS_prlimit64, Some(0)),
    (libc::SYS_sched_setaffinity, Some(0)),
    (libc::SYS_sched_setscheduler, Some(0)),
    (libc::SYS_sched_setparam, Some(0)),
    (libc::SYS_sched_setattr, Some(0)),
    (libc::SYS_setpgid, Some(0)),
    (libc::SYS_getpgid, Some(0)),
    (libc::SYS_getsid, Some(0)),
    (libc::SYS_pidfd_open, None),
    // tkill takes a thread id, which the caller's own thread ids cannot be told from others'
    // by a register compare alone; glibc uses tgkill.
    (libc::SYS_tkill, None),
];

/// The signal calls of [`BY_PID`]: pid 0 is a process group there, not the caller.
const SIGNALS: [libc::c_long; 4] = [
    libc::SYS_kill,
    libc::SYS_tgkill,
    libc::SYS_rt_sigqueueinfo,
    libc::SYS_rt_tgsigqueueinfo,
];

/// System V IPC and POSIX message queue calls: refused in capability mode.
pub const IPC: &[libc::c_long] = &[
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semtimedop,
    libc::SYS_semctl,
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmctl,
    libc::SYS_mq_open,
    libc::SYS_mq_unlink,
];

/// Every call capability mode sends to the agent that warden otherwise lets run directly.
pub fn checked_calls() -> impl Iterator<Item = libc::c_long> {
    BY_PID
        .iter()
        .map(|(nr, _)| *nr)
        .chain(IPC.iter().copied())
        .chain([libc::SYS_socket])
}

/// The verdict on a call of [`checked_calls`] by the process whose pid (in its own namespace)
/// is `own`: `None` lets it run, `Some(rule)` refuses it.
pub fn call_rule(nr: libc::c_long, args: &[u64; 6], own: u32) -> Option<Rule> {
    // A descriptor's owner is the process its I/O signals (with F_SETSIG, any signal): only
    // the caller itself may be named, and only by a register value (F_SETOWN_EX, FIOSETOWN and
    // SIOCSPGRP pass it in memory, which could change after the check).
    if nr == libc::SYS_fcntl {
        return match args[1] as u32 as i32 {
            libc::F_SETOWN if args[2] as u32 as i32 == own as i32 => None,
            libc::F_SETOWN | F_SETOWN_EX => Some(Rule::OtherProcess),
            _ => None,
        };
    }
    // Tracing (allowed inside the sandbox by `ptrace-allow inside`): another process, by pid.
    if matches!(
        nr,
        libc::SYS_ptrace | libc::SYS_process_vm_readv | libc::SYS_process_vm_writev
    ) {
        return Some(Rule::OtherProcess);
    }
    if nr == libc::SYS_ioctl {
        return OWNER_IOCTLS
            .contains(&(args[1] as u32 as u64))
            .then_some(Rule::OtherProcess);
    }
    if IPC.contains(&nr) {
        return Some(Rule::Ipc);
    }
    if nr == libc::SYS_socket {
        return Some(Rule::SocketAddress);
    }
    match BY_PID.iter().find(|(n, _)| *n == nr) {
        Some((_, Some(i))) => {
            // pid_t is an int: the kernel reads the low 32 bits. For the signal calls 0 is the
            // caller's process group (others); for the rest it is the caller.
            let pid = args[*i] as u32 as i32;
            let self_by_zero = !SIGNALS.contains(&nr);
            if pid == own as i32 || (pid == 0 && self_by_zero) {
                None
            } else {
                Some(Rule::OtherProcess)
            }
        }
        Some((_, None)) => Some(Rule::OtherProcess),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_lookups_are_refused_before_any_walk() {
        assert_eq!(path_rule(3, b"/etc/passwd"), Some(Rule::AbsolutePath));
        assert_eq!(
            path_rule(libc::AT_FDCWD, b"/etc/passwd"),
            Some(Rule::AbsolutePath)
        );
        assert_eq!(
            path_rule(libc::AT_FDCWD, b"passwd"),
            Some(Rule::CurrentDirectory)
        );
        assert_eq!(path_rule(3, b"a/../b"), None);
        assert_eq!(path_rule(3, b""), None);
    }

    #[test]
    fn a_descriptor_may_signal_only_its_own_process() {
        let fcntl = |cmd: i32, pid: i64| {
            call_rule(libc::SYS_fcntl, &[3, cmd as u64, pid as u64, 0, 0, 0], 7)
        };
        assert_eq!(fcntl(libc::F_SETOWN, 7), None);
        assert_eq!(fcntl(libc::F_SETOWN, 8), Some(Rule::OtherProcess));
        assert_eq!(fcntl(libc::F_SETOWN, -7), Some(Rule::OtherProcess));
        assert_eq!(fcntl(F_SETOWN_EX, 0), Some(Rule::OtherProcess));
        assert_eq!(fcntl(libc::F_GETFL, 0), None);
        let ioctl = |req: u64| call_rule(libc::SYS_ioctl, &[3, req, 0, 0, 0, 0], 7);
        assert_eq!(ioctl(0x8901), Some(Rule::OtherProcess));
        assert_eq!(ioctl(0x8902), Some(Rule::OtherProcess));
        assert_eq!(ioctl(libc::FIONREAD as u32 as u64), None);
    }

    #[test]
    fn only_the_caller_itself_may_be_named_by_pid() {
        let args = |pid: i64| [pid as u64, 0, 0, 0, 0, 0];
        assert_eq!(call_rule(libc::SYS_kill, &args(7), 7), None);
        assert_eq!(
            call_rule(libc::SYS_kill, &args(0), 7),
            Some(Rule::OtherProcess)
        );
        assert_eq!(call_rule(libc::SYS_setpgid, &args(0), 7), None);
        assert_eq!(
            call_rule(libc::SYS_prlimit64, &args(1), 7),
            Some(Rule::OtherProcess)
        );
        assert_eq!(
            call_rule(libc::SYS_kill, &args(8), 7),
            Some(Rule::OtherProcess)
        );
        // -1 (every process) and a process group are others.
        assert_eq!(
            call_rule(libc::SYS_kill, &args(-1), 7),
            Some(Rule::OtherProcess)
        );
        assert_eq!(
            call_rule(libc::SYS_kill, &args(-7), 7),
            Some(Rule::OtherProcess)
        );
        // Garbage in the upper half is ignored, as the kernel ignores it.
        assert_eq!(
            call_rule(libc::SYS_tgkill, &[0xdead_0000_0000_0007, 9, 0, 0, 0, 0], 7),
            None
        );
        assert_eq!(
            call_rule(libc::SYS_pidfd_open, &args(7), 7),
            Some(Rule::OtherProcess)
        );
        assert_eq!(call_rule(libc::SYS_shmget, &args(0), 7), Some(Rule::Ipc));
        assert_eq!(
            call_rule(libc::SYS_socket, &args(2), 7),
            Some(Rule::SocketAddress)
        );
        assert_eq!(call_rule(libc::SYS_read, &args(0), 7), None);
    }

    #[test]
    fn capability_errors_are_the_documented_ones() {
        assert_eq!(Rule::AbsolutePath.errno(), crate::ECAPMODE);
        assert_eq!(Rule::Escape.errno(), crate::ENOTCAPABLE);
        assert_ne!(crate::ECAPMODE, crate::ENOTCAPABLE);
    }
}
