//! The no-namespace mode's checks (`crate::confine::hostns`): without a PID namespace, a pid
//! the program names may be any process of the host, so every call that names one comes here
//! (the filter sends them: capability mode's profile, `warden_filter::syscalls::Profile::
//! CAPABILITY_CHECKED`) and is allowed only within the sandbox's own process tree: the
//! descendants of its init, which is the subreaper of all of them (an orphan stays in the tree).
//!
//! Signals are performed by the agent, through a pidfd it opened before checking the process
//! and that still names a live process after the check: a pid reused meanwhile cannot receive
//! them. The target's ancestry is read twice and must agree (a parent that died between two
//! reads has reparented its child, which the second read sees). `kill` of a process group, of
//! 0 or of -1 signals the sandbox's processes of that group (or all of them) one by one, never
//! the host's. Calls that only name the caller itself (0, its own pid or one of its threads)
//! are continued: the caller is blocked in the call, so its ids cannot be reused.
//!
//! System V IPC and POSIX message queues (the host's, with no IPC namespace) are refused, and
//! sockets of any family but unix and netlink when the policy has no net rule.

use super::call::{Live, Registers};
use super::{value, Answer, Client, Handled};
use crate::sys::signals::{pidfd_open, pidfd_send_signal, PIDFD_SIGNAL_THREAD, PIDFD_THREAD};
use crate::sys::unotify::Reply;
use std::os::fd::{AsFd, OwnedFd};

/// The deepest process tree walked: a longer chain of parents is refused.
const MAX_DEPTH: usize = 4096;
/// The most processes a `kill` of a group or of -1 signals.
const MAX_TARGETS: usize = 65536;

/// Serves one call that names another process (or IPC, or a socket family) for a sandbox
/// without namespaces whose init is `init`.
pub fn serve(c: &Client, init: i32, live: Live<Registers>) -> Handled {
    let r = *live.args();
    let own = c.ids()?.tgid as i32;
    let continue_it = Ok(Answer::Reply(Reply::Continue));
    match r.nr {
        libc::SYS_kill => kill(c, init, own, r.int(0), r.int(1)),
        libc::SYS_tkill => thread_signal(c, init, own, None, r.int(0), r.int(1)),
        libc::SYS_tgkill => thread_signal(c, init, own, Some(r.int(0)), r.int(1), r.int(2)),
        libc::SYS_rt_sigqueueinfo => queue(c, init, own, r.int(0), None, r.int(1), r.args[2]),
        libc::SYS_rt_tgsigqueueinfo => {
            queue(c, init, own, r.int(0), Some(r.int(1)), r.int(2), r.args[3])
        }
        libc::SYS_pidfd_open => open_pidfd(c, init, own, r.int(0), r.args[1] as u32),
        libc::SYS_prlimit64
        | libc::SYS_sched_setaffinity
        | libc::SYS_sched_setscheduler
        | libc::SYS_sched_setparam
        | libc::SYS_sched_setattr
        | libc::SYS_getpgid
        | libc::SYS_getsid => by_pid(c, init, own, r.int(0)),
        libc::SYS_setpgid => {
            let (pid, pgid) = (r.int(0), r.int(1));
            by_pid(c, init, own, pid)?;
            // A group to join: a new one (0, or the process's own pid) or one a process of
            // the sandbox leads.
            if pgid == 0 || pgid == pid || pgid == own {
                return continue_it;
            }
            by_pid(c, init, own, pgid)
        }
        libc::SYS_ptrace => match r.args[0] as u32 {
            // Requests on a tracee already attached, or the caller's own TRACEME.
            0 => continue_it,
            _ => by_pid(c, init, own, r.int(1)),
        },
        libc::SYS_process_vm_readv | libc::SYS_process_vm_writev => by_pid(c, init, own, r.int(0)),
        libc::SYS_fcntl => match r.int(1) {
            // F_SETOWN: a pid, or a process group as its negative.
            libc::F_SETOWN => owner(c, init, own, r.int(2)),
            // F_SETOWN_EX names its owner in memory the kernel reads again: refused.
            _ => Err(refuse(
                c,
                "descriptor owner in memory (F_SETOWN_EX)",
                libc::EPERM,
            )),
        },
        // FIOSETOWN, SIOCSPGRP: the owner in memory, as F_SETOWN_EX.
        libc::SYS_ioctl => Err(refuse(
            c,
            "descriptor owner in memory (FIOSETOWN)",
            libc::EPERM,
        )),
        libc::SYS_msgget
        | libc::SYS_msgsnd
        | libc::SYS_msgrcv
        | libc::SYS_msgctl
        | libc::SYS_semget
        | libc::SYS_semop
        | libc::SYS_semtimedop
        | libc::SYS_semctl
        | libc::SYS_shmget
        | libc::SYS_shmat
        | libc::SYS_shmctl
        | libc::SYS_mq_open
        | libc::SYS_mq_unlink => Err(c.refuse(
            c.syscall(),
            "System V IPC and POSIX message queues would be the host's: this host refuses \
             namespaces, so the sandbox has no IPC namespace of its own",
            libc::EPERM,
        )),
        libc::SYS_socket => socket(c, live),
        _ => Err(refuse(c, c.syscall(), libc::EPERM)),
    }
}

fn refuse(c: &Client, target: &str, errno: i32) -> i32 {
    c.refuse(
        target,
        "names a process outside the sandbox's own tree (this host refuses namespaces, so the \
         agent decides by pid)",
        errno,
    )
}

/// socket(2): unix stream and seqpacket and netlink continue (unix datagram is refused as
/// everywhere); inet and inet6 are the agent's with net rules, and refused without: there is
/// no private network namespace to give them.
fn socket(c: &Client, live: Live<Registers>) -> Handled {
    let r = *live.args();
    let (domain, kind) = (r.int(0), r.int(1) & 0xf);
    match domain {
        libc::AF_UNIX if kind == libc::SOCK_STREAM || kind == libc::SOCK_SEQPACKET => {
            Ok(Answer::Reply(Reply::Continue))
        }
        libc::AF_UNIX => Err(libc::EACCES),
        libc::AF_NETLINK => Ok(Answer::Reply(Reply::Continue)),
        libc::AF_INET | libc::AF_INET6 => match c.net().mode {
            crate::syscalls::Network::Private => Err(c.refuse(
                &format!("socket family {domain}"),
                "no network: the policy has no net-allow rule, and this host refuses the \
                 private network namespace that would hold the sandbox's sockets",
                libc::EACCES,
            )),
            crate::syscalls::Network::Host { .. } => {
                super::net::socket(c, live.socket().map_err(|e| e.raw_os_error())?)
                    .map_err(|e| e.raw_os_error())
            }
        },
        _ => Err(c.refuse(
            &format!("socket family {domain}"),
            "only unix and netlink sockets without namespaces",
            libc::EAFNOSUPPORT,
        )),
    }
}

/// A call that names process `pid` and that the kernel then performs itself: continued when
/// it names the caller (0, its pid, one of its threads) or a process of the sandbox, refused
/// otherwise. For another process of the sandbox, a pid freed and reused between this check
/// and the kernel's use is the one race left (docs/guide.md, "Without user namespaces").
fn by_pid(c: &Client, init: i32, own: i32, pid: i32) -> Handled {
    if pid == 0 || pid == own || tgid_of(pid) == Some(own) {
        return Ok(Answer::Reply(Reply::Continue));
    }
    if pid > 0 && in_sandbox(init, pid) {
        return Ok(Answer::Reply(Reply::Continue));
    }
    Err(refuse(c, &format!("pid {pid}"), libc::EPERM))
}

/// F_SETOWN's owner: a process (positive) or a process group (negative), of the sandbox; a
/// group only when every member is the sandbox's (the kernel signals them all).
fn owner(c: &Client, init: i32, own: i32, who: i32) -> Handled {
    if who >= 0 {
        return by_pid(c, init, own, who);
    }
    let group = who.checked_neg().unwrap_or(0);
    if group > 0 && in_sandbox(init, group) && group_members_inside(init, group) {
        return Ok(Answer::Reply(Reply::Continue));
    }
    Err(refuse(c, &format!("process group {group}"), libc::EPERM))
}

/// Whether every process of group `group` is in the sandbox (so a signal to the group stays
/// inside): the group's leader is, and no process outside is in it. The host's processes are
/// many; the check reads only those of the user's own uid would be enough, but all are read.
fn group_members_inside(init: i32, group: i32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if group_of(pid) == Some(group) && !in_sandbox(init, pid) {
            return false;
        }
    }
    true
}

/// kill(2).
fn kill(c: &Client, init: i32, own: i32, pid: i32, sig: i32) -> Handled {
    if pid == own {
        return Ok(Answer::Reply(Reply::Continue));
    }
    if pid > 0 {
        return signal_process(c, init, pid, sig, None, false).map(|()| answer_zero());
    }
    // 0: the caller's group; -1: every process it may signal but itself; -N: group N. Of the
    // sandbox's processes only, each signalled as one process is.
    let group = match pid {
        0 => Some(group_of(own).ok_or(libc::ESRCH)?),
        -1 => None,
        n => Some(n.checked_neg().ok_or(libc::EINVAL)?),
    };
    let targets: Vec<i32> = sandbox_processes(init)
        .into_iter()
        .filter(|&p| match group {
            Some(g) => group_of(p) == Some(g),
            None => p != own,
        })
        .collect();
    let mut sent = false;
    let mut last = libc::ESRCH;
    // The caller itself, when kill(0) includes it, through its own pidfd as any other.
    for p in targets {
        match signal_process(c, init, p, sig, None, false) {
            Ok(()) => sent = true,
            Err(e) => last = e,
        }
    }
    if sent {
        value(0)
    } else {
        // Nothing of the group is in the sandbox: as if it had no member the caller may signal.
        let target = match group {
            Some(g) => format!("process group {g}"),
            None => "every process (-1)".to_owned(),
        };
        if last == libc::ESRCH && pid != -1 {
            Err(refuse(c, &target, libc::ESRCH))
        } else {
            Err(last)
        }
    }
}

fn answer_zero() -> Answer {
    Answer::Reply(Reply::Value(0))
}

/// tkill(tid, sig) and tgkill(tgid, tid, sig).
fn thread_signal(
    c: &Client,
    init: i32,
    own: i32,
    tgid: Option<i32>,
    tid: i32,
    sig: i32,
) -> Handled {
    if tid <= 0 || tgid.is_some_and(|g| g <= 0) {
        return Err(libc::EINVAL);
    }
    let group = tgid.or_else(|| tgid_of(tid)).ok_or(libc::ESRCH)?;
    if group == own && tgid_of(tid) == Some(own) {
        // One of the caller's own threads (a tid of its group cannot be reused while the
        // caller, blocked here, holds the group).
        return Ok(Answer::Reply(Reply::Continue));
    }
    if tgid_of(tid) != Some(group) {
        return Err(libc::ESRCH);
    }
    signal_process(c, init, tid, sig, None, true).map(|()| answer_zero())
}

/// rt_sigqueueinfo(tgid, sig, info) and rt_tgsigqueueinfo(tgid, tid, sig, info).
fn queue(
    c: &Client,
    init: i32,
    own: i32,
    tgid: i32,
    tid: Option<i32>,
    sig: i32,
    info_addr: u64,
) -> Handled {
    if tgid == own && tid.is_none_or(|t| tgid_of(t) == Some(own)) {
        // To the caller itself: the kernel reads the info again, which it may.
        return Ok(Answer::Reply(Reply::Continue));
    }
    let mut info = [0u8; 128];
    match crate::sys::mem::read(c.tid(), info_addr, &mut info) {
        Ok(128) => {}
        _ => return Err(libc::EFAULT),
    }
    c.live()?;
    match tid {
        None => signal_process(c, init, tgid, sig, Some(&info), false),
        Some(t) => {
            if tgid_of(t) != Some(tgid) {
                return Err(libc::ESRCH);
            }
            signal_process(c, init, t, sig, Some(&info), true)
        }
    }
    .map(|()| answer_zero())
}

/// pidfd_open(pid, flags): opened by the agent, checked, and installed in the caller: the
/// descriptor names the process that was checked, whatever becomes of the number.
fn open_pidfd(c: &Client, init: i32, own: i32, pid: i32, flags: u32) -> Handled {
    if pid <= 0 {
        return Err(libc::EINVAL);
    }
    let fd = pidfd_open(pid, flags).map_err(errno)?;
    let own_thread = pid == own || tgid_of(pid) == Some(own);
    if !own_thread && !in_sandbox(init, pid) {
        return Err(refuse(c, &format!("pid {pid}"), libc::EPERM));
    }
    alive(&fd)?;
    Ok(Answer::Fd(fd, true))
}

/// Sends `sig` (with the caller's `info`, if given) to process `pid` (the thread `pid`, with
/// `thread`) through a pidfd opened before the check and still naming a live process after it.
fn signal_process(
    c: &Client,
    init: i32,
    pid: i32,
    sig: i32,
    info: Option<&[u8; 128]>,
    thread: bool,
) -> Result<(), i32> {
    if !(0..=64).contains(&sig) {
        return Err(libc::EINVAL);
    }
    let flags = if thread { PIDFD_THREAD } else { 0 };
    let fd = pidfd_open(pid, flags).map_err(errno)?;
    if !in_sandbox(init, pid) {
        return Err(refuse(c, &format!("pid {pid}"), libc::EPERM));
    }
    // Alive now, so alive through the check: the pid read then was this process's.
    alive(&fd)?;
    if sig == 0 {
        return Ok(());
    }
    let send_flags = if thread { PIDFD_SIGNAL_THREAD } else { 0 };
    pidfd_send_signal(fd.as_fd(), sig, info, send_flags).map_err(errno)
}

/// Whether the process `fd` names is still alive (a zombie or gone: ESRCH).
fn alive(fd: &OwnedFd) -> Result<(), i32> {
    pidfd_send_signal(fd.as_fd(), 0, None, 0).map_err(errno)
}

fn errno(e: std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EPERM)
}

/// Fields of `/proc/<pid>/stat` after the command: state, ppid, pgrp, ...
fn stat(pid: i32) -> Option<Vec<String>> {
    let text = crate::sys::process::read_proc(&format!("/proc/{pid}/stat")).ok()?;
    crate::sys::process::stat_fields(&text).map(|f| f.into_iter().map(str::to_owned).collect())
}

fn parent_of(pid: i32) -> Option<i32> {
    stat(pid)?.get(1)?.parse().ok()
}

fn group_of(pid: i32) -> Option<i32> {
    stat(pid)?.get(2)?.parse().ok()
}

/// The thread group of thread `tid` (`/proc/<tid>/status`), for a tid of any process.
fn tgid_of(tid: i32) -> Option<i32> {
    if tid <= 0 {
        return None;
    }
    let text = crate::sys::process::read_proc(&format!("/proc/{tid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The chain of parents from `pid` up to `init` (exclusive), or `None` when it does not reach
/// `init`.
fn ancestry(init: i32, pid: i32) -> Option<Vec<i32>> {
    let mut chain = Vec::new();
    let mut at = pid;
    for _ in 0..MAX_DEPTH {
        if at == init {
            return (!chain.is_empty()).then_some(chain);
        }
        if at <= 1 {
            return None;
        }
        chain.push(at);
        at = parent_of(at)?;
    }
    None
}

/// Whether `pid` (a process or a thread) is a descendant of the sandbox's `init` (init itself
/// is not: it holds the sandbox's end). Read twice, the two chains equal: a process outside
/// whose parent died between the reads, its number taken by a process of the sandbox, has
/// been reparented by then, which the second read sees.
pub fn in_sandbox(init: i32, pid: i32) -> bool {
    let pid = tgid_of(pid).unwrap_or(pid);
    match (ancestry(init, pid), ancestry(init, pid)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// Every process of the sandbox now (init's descendants), read from each thread's
/// `children`; bounded by [`MAX_TARGETS`].
fn sandbox_processes(init: i32) -> Vec<i32> {
    let mut found = Vec::new();
    let mut queue = vec![init];
    while let Some(p) = queue.pop() {
        if found.len() >= MAX_TARGETS {
            break;
        }
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
                continue;
            };
            for child in text
                .split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok())
            {
                found.push(child);
                queue.push(child);
            }
        }
    }
    found
}
