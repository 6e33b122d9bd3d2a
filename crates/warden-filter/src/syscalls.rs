//! The syscall table: the single place that says what warden does with every x86_64 system call.
//!
//! The BPF filter ([`crate::compile`]), the agent's dispatch (`warden::agent`) and the user
//! documentation (`warden check --syscalls`) are all derived from [`TABLE`], and so is what the
//! agent says of its privilege: which capabilities it uses for each call it performs, and why
//! ([`Entry::agent`]). A number that is not in the table is denied with `ENOSYS` by the filter's
//! default action (docs/design.md, invariant 4: a syscall warden does not know must not pass),
//! and so is every call made through another ABI (i386 `int $0x80`, x32 numbers with bit 30
//! set).
//!
//! Classes follow Ostia §4.2 (docs/design.md, section 4):
//! - [`Class::Direct`]: uses only descriptors the process already holds, or the process itself.
//! - [`Class::Delegated`]: names a resource; the agent performs it (see [`Family`]).
//! - [`Class::Denied`]: never allowed, with the errno libc and programs handle best.
//! - [`Class::Guarded`]: allowed or denied in BPF on the value of a register argument, which a
//!   racing thread cannot change (unlike memory), so the verdict needs no agent.

use libc::c_long;

/// A family of delegated calls: one agent handler each, whatever the individual call's argument
/// layout (the handler decodes it from the syscall number).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// open, openat, openat2, creat.
    Open,
    /// stat, lstat, newfstatat, statx.
    Stat,
    /// access, faccessat, faccessat2.
    Access,
    /// readlink, readlinkat.
    Readlink,
    /// mkdir, mkdirat.
    Mkdir,
    /// mknod, mknodat (device nodes are always refused).
    Mknod,
    /// unlink, unlinkat, rmdir.
    Unlink,
    /// rename, renameat, renameat2.
    Rename,
    /// link, linkat.
    Link,
    /// symlink, symlinkat.
    Symlink,
    /// chmod, fchmodat, fchmodat2.
    Chmod,
    /// chown, lchown, fchownat.
    Chown,
    /// truncate.
    Truncate,
    /// utime, utimes, futimesat, utimensat.
    Utime,
    /// chdir.
    Chdir,
    /// statfs.
    Statfs,
    /// getxattr, lgetxattr, listxattr, llistxattr, setxattr, lsetxattr, removexattr,
    /// lremovexattr.
    Xattr,
    /// inotify_add_watch.
    InotifyAddWatch,
    /// execve, execveat: checked, then continued under Landlock's execute right.
    Exec,
    /// connect, bind: performed by the agent on its own duplicate of the socket.
    SocketAddress,
    /// memfd_create: created by the agent, never executable.
    Memfd,
    /// fchmod, fchown, fsetxattr, fremovexattr: metadata changes through a descriptor, which
    /// need `write` on the descriptor's path even when it was opened read-only.
    FdMetadata,
    /// socket (inet and inet6, when the policy allows IP traffic): created by the agent in
    /// warden's network namespace, with the policy's incoming filter attached and locked.
    Socket,
    /// sendto with an address, sendmsg, sendmmsg (when the policy allows UDP): performed by the
    /// agent on its duplicate of the socket, with its own copy of the address and data.
    Send,
    /// accept, accept4 (when the policy allows IP traffic): performed by the agent, which
    /// closes connections from peers no `incoming` rule allows.
    Accept,
    /// getsockname, getpeername: the kernel answers, except for a unix socket the agent bound
    /// (or one connected to such a socket), whose name the agent gives back as the program
    /// wrote it: the agent binds by a short name from the directory it checked.
    SocketName,
    /// Calls warden otherwise runs directly but which capability mode restricts (signals and
    /// scheduling by pid, System V IPC, message queues, socket): the agent continues those on
    /// the caller itself and refuses the rest (`warden_capsicum::mode`). It performs none.
    CapabilityMode,
}

impl Family {
    /// Every family, in a fixed order ([`Family::index`] indexes it).
    pub const ALL: [Family; 27] = [
        Family::Open,
        Family::Stat,
        Family::Access,
        Family::Readlink,
        Family::Mkdir,
        Family::Mknod,
        Family::Unlink,
        Family::Rename,
        Family::Link,
        Family::Symlink,
        Family::Chmod,
        Family::Chown,
        Family::Truncate,
        Family::Utime,
        Family::Chdir,
        Family::Statfs,
        Family::Xattr,
        Family::InotifyAddWatch,
        Family::Exec,
        Family::SocketAddress,
        Family::Memfd,
        Family::FdMetadata,
        Family::Socket,
        Family::Send,
        Family::Accept,
        Family::SocketName,
        Family::CapabilityMode,
    ];

    /// Position in [`Family::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// A short lowercase name for reports, such as `open` or `socket-address`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Open => "open",
            Family::Stat => "stat",
            Family::Access => "access",
            Family::Readlink => "readlink",
            Family::Mkdir => "mkdir",
            Family::Mknod => "mknod",
            Family::Unlink => "unlink",
            Family::Rename => "rename",
            Family::Link => "link",
            Family::Symlink => "symlink",
            Family::Chmod => "chmod",
            Family::Chown => "chown",
            Family::Truncate => "truncate",
            Family::Utime => "utime",
            Family::Chdir => "chdir",
            Family::Statfs => "statfs",
            Family::Xattr => "xattr",
            Family::InotifyAddWatch => "inotify-add-watch",
            Family::Exec => "exec",
            Family::SocketAddress => "socket-address",
            Family::Memfd => "memfd",
            Family::FdMetadata => "fd-metadata",
            Family::Socket => "socket",
            Family::Send => "send",
            Family::Accept => "accept",
            Family::SocketName => "socket-name",
            Family::CapabilityMode => "capability-mode",
        }
    }
}

/// Argument-dependent verdicts decided in BPF (see [`crate::compile`] for the exact rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Guard {
    /// clone: no namespace flags.
    Clone,
    /// unshare: no namespace flags.
    Unshare,
    /// seccomp: no SECCOMP_FILTER_FLAG_NEW_LISTENER.
    Seccomp,
    /// personality: only the query and PER_LINUX.
    Personality,
    /// prctl: a list of options that only affect the caller.
    Prctl,
    /// socket: unix, inet, inet6 and netlink; unix datagram sockets refused.
    Socket,
    /// socketpair: unix stream and seqpacket only.
    Socketpair,
    /// fcntl in capability mode: `F_SETOWN` and `F_SETOWN_EX` (argument `.1`), which name the
    /// process a descriptor signals, go to the agent ([`Family::CapabilityMode`]); everything
    /// else is direct.
    CapabilityFcntl,
    /// ioctl in capability mode: `FIOSETOWN` and `SIOCSPGRP` (the ioctl forms of `F_SETOWN`)
    /// go to the agent ([`Family::CapabilityMode`]); everything else is direct (the terminal
    /// and inode-flag requests are refused by [`ARGUMENT_DENIALS`], in every profile).
    CapabilityIoctl,
    /// open and openat on the fast path: direct (Landlock decides), except `O_PATH` opens, which
    /// Landlock does not check, `O_TMPFILE` ones, which the agent names, `O_TRUNC` ones that do
    /// not open for writing, which would truncate under Landlock's `read_file` alone (the
    /// kernel-first ruleset leaves `truncate` unhandled), and those of access mode 3, of which
    /// Landlock asks nothing: those are delegated ([`Family::Open`]). The flags are argument
    /// `.0`.
    KernelOpen(u32),
    /// open and openat in a view with the kernel first: as [`Guard::KernelOpen`], but `O_PATH`
    /// opens go to the kernel too (the view decides what exists, and an `O_PATH` descriptor
    /// reads, writes and runs nothing: each of those reopens through Landlock, and the calls
    /// that change metadata through it are the agent's). `O_TMPFILE`, truncating reads and
    /// access mode 3 stay delegated.
    ViewOpen(u32),
    /// socket when the policy allows IP traffic: as [`Guard::Socket`], but inet and inet6
    /// sockets are made by the agent ([`Family::Socket`]).
    HostSocket,
    /// sendto, sendmsg, sendmmsg when the policy allows TCP only: allowed without
    /// `MSG_FASTOPEN` in the flags (argument `.0`), which would connect without `connect`.
    NoFastOpen(u32),
    /// sendto when the policy allows UDP: allowed without an address (and without
    /// `MSG_FASTOPEN`), delegated ([`Family::Send`]) with one.
    SendTo,
}

/// A value of one register argument for which a call the table otherwise allows is refused.
///
/// These are compiled into a second, small filter stacked on the table's
/// ([`crate::compile::compile_argument_denials`]): the kernel runs both and the refusal wins, so
/// the table's allow rules stay unconditional (and cached by the kernel) where they can, and a
/// refused value never needs the "every value but these" enumeration a single filter would.
#[derive(Clone, Copy, Debug)]
pub struct ArgumentDenial {
    /// The call (x86_64 number).
    pub nr: c_long,
    /// Which argument (0-5); compared on its low 32 bits, the width the kernel reads.
    pub arg: u32,
    /// The refused value.
    pub value: u64,
    /// The errno the call fails with.
    pub errno: i32,
    /// Why, for users (`warden check --syscalls`).
    pub note: &'static str,
}

/// `_IOW('f', 2, long)`: set inode flags (append-only, no-atime, no-COW, ...).
pub const FS_IOC_SETFLAGS: u64 = 0x4008_6602;
/// `_IOW('f', 2, int)`: the same through the 32-bit compat number.
pub const FS_IOC32_SETFLAGS: u64 = 0x4004_6602;
/// `_IOW('X', 32, struct fsxattr)`: set inode flags, project id and extent hints.
pub const FS_IOC_FSSETXATTR: u64 = 0x401c_5820;
/// `_IOW('v', 2, long)`: set the inode's generation number.
pub const FS_IOC_SETVERSION: u64 = 0x4008_7602;
/// `_IOW('v', 2, int)`: the same, 32-bit compat number.
pub const FS_IOC32_SETVERSION: u64 = 0x4004_7602;
/// `_IOW('f', 133, struct fsverity_enable_arg)`: make a file read-only forever (fs-verity).
pub const FS_IOC_ENABLE_VERITY: u64 = 0x4080_6685;
/// `_IOR('f', 19, struct fscrypt_policy_v1)`: set a directory's encryption policy.
pub const FS_IOC_SET_ENCRYPTION_POLICY: u64 = 0x800c_6613;

/// `TIOCSTI`: push a byte into a terminal's input, as if typed there.
pub const TIOCSTI: u64 = libc::TIOCSTI as u32 as u64;
/// `TIOCLINUX`: the virtual console's requests, one of which (paste the selection) also pushes
/// input into the terminal.
pub const TIOCLINUX: u64 = libc::TIOCLINUX as u32 as u64;

/// Calls refused for one argument value: requests that push input into a terminal the sandbox
/// shares with its user (typed into the shell that started warden, they would run outside),
/// and operations on a descriptor the program holds that change an inode's metadata or other
/// processes' behaviour, which the kernel allows to the file's owner whatever the descriptor's
/// access mode (a file the policy only lets it read, opened by the agent, is owned by the
/// program's mapped uid when warden runs as root).
pub const ARGUMENT_DENIALS: &[ArgumentDenial] = &[
    ArgumentDenial {
        nr: libc::SYS_ioctl,
        arg: 1,
        value: TIOCSTI,
        errno: libc::EPERM,
        note: "TIOCSTI: terminal input injection",
    },
    ArgumentDenial {
        nr: libc::SYS_ioctl,
        arg: 1,
        value: TIOCLINUX,
        errno: libc::EPERM,
        note: "TIOCLINUX: the console's paste is terminal input injection",
    },
    ArgumentDenial {
        nr: libc::SYS_ioctl,
        arg: 1,
        value: FS_IOC_SETFLAGS,
        errno: libc::EPERM,
        note: "FS_IOC_SETFLAGS: inode flags are metadata the policy's read right does not cover",
    },
    ArgumentDenial {
        nr: libc::SYS_ioctl,
        arg: 1,
        value: FS_IOC32_SETFLAGS,
        errno: libc::EPERM,
        note: "FS_IOC32_SETFLAGS: as FS_IOC_SETFLAGS",
    },
    ArgumentDenial {
        nr: libc::SYS_ioctl,
        arg: 1,
        value: FS_IOC_FSSETXATTR,
        errno: libc::EPERM,
        note: "FS_IOC_FSSETXATTR: inode flags and project ids",
    },
    ArgumentDenial {
        nr: libc::SYS_ioctl,
        arg: 1,
        value: FS_IOC_SETVERSION,
        errno: libc::EPERM,
        note: "FS_IOC_SETVERSION: the inode's generation number",
    },
    ArgumentDenial {
        nr: libc::SYS_ioctl,
        arg: 1,
        value: FS_IOC32_SETVERSION,
        errno: libc::EPERM,
        note: "FS_IOC32_SETVERSION: as FS_IOC_SETVERSION",
    },
    ArgumentDenial {
        nr: libc::SYS_ioctl,
        arg: 1,
        value: FS_IOC_ENABLE_VERITY,
        errno: libc::EPERM,
        note:
            "FS_IOC_ENABLE_VERITY: would make a host file immutable through a read-only descriptor",
    },
    ArgumentDenial {
        nr: libc::SYS_ioctl,
        arg: 1,
        value: FS_IOC_SET_ENCRYPTION_POLICY,
        errno: libc::EPERM,
        note: "FS_IOC_SET_ENCRYPTION_POLICY: a directory's encryption policy",
    },
    ArgumentDenial {
        nr: libc::SYS_fcntl,
        arg: 1,
        value: libc::F_SETLEASE as u64,
        errno: libc::EACCES,
        note: "F_SETLEASE: a lease stalls other processes' opens of a host file",
    },
];

/// Whether the sandbox reaches the host's network; it changes how a few calls are classed
/// ([`Entry::class_in`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Network {
    /// No IP rule in the policy: inet sockets are made in the sandbox's private network
    /// namespace, whose only interface is its own loopback, so they need no checks.
    #[default]
    Private,
    /// IP rules: the agent makes inet sockets in warden's namespace and checks every address
    /// given to them. `udp`: the policy allows UDP, whose `sendmsg` can name any peer, so those
    /// calls are delegated too (with TCP only, the kernel ignores a `sendmsg` address).
    Host {
        /// The policy has UDP rules.
        udp: bool,
    },
}

/// What warden does with one system call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Runs in the kernel unchecked.
    Direct,
    /// Sent to the agent, which performs it.
    Delegated(Family),
    /// Refused in BPF with this errno.
    Denied(i32),
    /// Decided in BPF on register arguments.
    Guarded(Guard),
}

/// A set of the capabilities an agent worker may use, as the kernel numbers them
/// (`include/uapi/linux/capability.h`: bit N is `CAP_*` number N, the layout of `capget(2)`
/// and of `CapEff` in `/proc/PID/status`).
///
/// Only the five a worker keeps have names here (warden's `confine::privileges::AGENT_KEEPS`,
/// which a test there checks against the union of the table's rows): a row cannot name a
/// capability the agent does not have.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Caps(u64);

impl Caps {
    /// No capability: what any process may do.
    pub const NONE: Caps = Caps(0);
    /// `CAP_CHOWN` (0).
    pub const CHOWN: Caps = Caps(1 << 0);
    /// `CAP_DAC_OVERRIDE` (1).
    pub const DAC_OVERRIDE: Caps = Caps(1 << 1);
    /// `CAP_FOWNER` (3).
    pub const FOWNER: Caps = Caps(1 << 3);
    /// `CAP_FSETID` (4).
    pub const FSETID: Caps = Caps(1 << 4);
    /// `CAP_NET_BIND_SERVICE` (10).
    pub const NET_BIND_SERVICE: Caps = Caps(1 << 10);

    /// Every named capability with its name, in the kernel's order.
    pub const NAMED: [(Caps, &'static str); 5] = [
        (Caps::CHOWN, "CAP_CHOWN"),
        (Caps::DAC_OVERRIDE, "CAP_DAC_OVERRIDE"),
        (Caps::FOWNER, "CAP_FOWNER"),
        (Caps::FSETID, "CAP_FSETID"),
        (Caps::NET_BIND_SERVICE, "CAP_NET_BIND_SERVICE"),
    ];

    /// The kernel's bit mask.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Both sets.
    pub const fn union(self, other: Caps) -> Caps {
        Caps(self.0 | other.0)
    }

    /// Whether every capability of `other` is in this set.
    pub const fn contains(self, other: Caps) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The names of the capabilities in the set (`CAP_DAC_OVERRIDE`, ...), in the kernel's order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Caps::NAMED
            .into_iter()
            .filter(move |(c, _)| self.contains(*c))
            .map(|(_, name)| name)
    }
}

/// What the agent uses of its own privilege performing one delegated call, and why: the
/// per-call half of "the agent is a deputy, not a superuser" (docs/design.md, section 7). The
/// capabilities are those the kernel consults on the agent's way through the call when warden
/// runs as root; an unprivileged warden has none of them, and the call is then done with the
/// permissions of its user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Privilege {
    /// The capabilities used.
    pub caps: Caps,
    /// Why the call needs them (or, with none, why it needs nothing).
    pub why: &'static str,
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The libc constant's name (`SYS_openat`); see [`Entry::name`].
    sys: &'static str,
    /// x86_64 number.
    pub nr: c_long,
    /// What warden does.
    pub class: Class,
    /// Why, for users (`warden check --syscalls`).
    pub note: &'static str,
    /// For a call the agent performs (in some profile, see [`Entry::delegated_somewhere`]): the
    /// privilege it uses doing so. `None` for every call the agent never performs.
    pub agent: Option<Privilege>,
}

use Class::{Delegated as D, Denied as X, Direct as A, Guarded as G};
use Family as F;

const EPERM: i32 = libc::EPERM;
const ENOSYS: i32 = libc::ENOSYS;

macro_rules! e {
    ($sys:ident, $class:expr, $note:literal) => {
        Entry {
            sys: stringify!($sys),
            nr: libc::$sys,
            class: $class,
            note: $note,
            agent: None,
        }
    };
    // A call the agent performs: the capabilities it uses, and why.
    ($sys:ident, $class:expr, $note:literal, uses($($cap:ident),*), $why:literal) => {
        Entry {
            sys: stringify!($sys),
            nr: libc::$sys,
            class: $class,
            note: $note,
            agent: Some(Privilege {
                caps: Caps(0 $(| Caps::$cap.0)*),
                why: $why,
            }),
        }
    };
}

/// Everything in a policy that changes how calls are classed: the filter is compiled for one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Whether the sandbox reaches the host's network.
    pub network: Network,
    /// `ptrace-allow inside`: `ptrace` and `process_vm_*` are direct. The sandbox's PID namespace
    /// names only its own processes, and Landlock refuses tracing across domains, so a tracer
    /// reaches nothing outside; since Linux 4.8 seccomp re-checks a call a tracer rewrote.
    pub ptrace_inside: bool,
    /// Who decides opens.
    pub opens: Opens,
    /// `warden run --capability-mode`: the calls of [`Profile::CAPABILITY_CHECKED`] go to the
    /// agent ([`Family::CapabilityMode`]); path calls are the agent's in every profile.
    pub capability_mode: bool,
}

/// Who decides the open family (`warden run --fast-path`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Opens {
    /// The agent: every open is delegated, checked, logged and performed by it.
    #[default]
    Agent,
    /// The kernel: Landlock enforces every path rule exactly (`warden_policy::kernel`), so
    /// `open`, `openat` and `creat` go straight to it; `openat2` (whose flags BPF cannot read),
    /// `O_PATH` and `O_TMPFILE` opens stay delegated.
    Kernel,
    /// The kernel, in the sandbox's own view (`warden_policy::view`): opens as with
    /// [`Opens::Kernel`], and the calls that only look (stat, access, readlink, statfs) or move
    /// (chdir) go straight to it too. Landlock does not govern them, but the view does: what the
    /// policy does not name does not exist there, and what it denies inside an allowed tree is
    /// masked. `execve` stays with the agent: some exec rule is one the kernel would say more
    /// widely (a file that does not exist yet, backed by the nearest directory that does).
    View,
    /// As [`Opens::View`], and `execve`/`execveat` go straight to the kernel as well
    /// ([`Opens::VIEW_EXEC`]): every exec rule is one Landlock and the view say exactly.
    ViewExec,
}

impl Opens {
    /// Whether the sandbox has a view in which the kernel answers opens and the calls that
    /// only look.
    pub fn in_view(self) -> bool {
        matches!(self, Opens::View | Opens::ViewExec)
    }

    /// The calls a view lets the kernel answer by itself: they only look at what the view holds
    /// (metadata, a link's text, extended attributes: `ls -l` reads two per file), with the
    /// program's own credentials.
    pub const VIEW_DIRECT: [c_long; 15] = [
        libc::SYS_stat,
        libc::SYS_lstat,
        libc::SYS_newfstatat,
        libc::SYS_statx,
        libc::SYS_access,
        libc::SYS_faccessat,
        libc::SYS_faccessat2,
        libc::SYS_readlink,
        libc::SYS_readlinkat,
        libc::SYS_chdir,
        libc::SYS_statfs,
        libc::SYS_getxattr,
        libc::SYS_lgetxattr,
        libc::SYS_listxattr,
        libc::SYS_llistxattr,
    ];

    /// The execs [`Opens::ViewExec`] lets the kernel decide: the view holds nothing the policy
    /// does not name, mounts every tree `noexec` unless the policy gives `exec` there (single
    /// files get an exec bind of their own), and Landlock's execute right backs each exec rule
    /// exactly (the plan checked), so the agent's check would find what the kernel finds. The
    /// program's own first exec is checked by warden before the start, which says why it
    /// cannot run; `-v`, `--log` and `learn` keep execs with the agent, which names the rule
    /// behind each refusal.
    pub const VIEW_EXEC: [c_long; 2] = [libc::SYS_execve, libc::SYS_execveat];
}

impl Profile {
    /// The `fcntl` commands that set the process a descriptor signals (`F_SETOWN`,
    /// `F_SETOWN_EX`): capability mode's agent sees them ([`Guard::CapabilityFcntl`]).
    pub const OWNER_FCNTLS: [u64; 2] = [libc::F_SETOWN as u64, 15];
    /// The `ioctl` requests that do the same (`FIOSETOWN`, `SIOCSPGRP`, asm-generic/sockios.h).
    pub const OWNER_IOCTLS: [u64; 2] = [0x8901, 0x8902];

    /// The calls `ptrace-allow inside` lets through: capability mode sends them to the agent.
    pub const TRACING: [c_long; 3] = [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
    ];

    /// The calls capability mode sends to the agent that are direct otherwise: they name a
    /// process by pid, a System V IPC key or a message queue, or make a socket
    /// (`warden_capsicum::mode::checked_calls`, which a test in `warden` compares).
    pub const CAPABILITY_CHECKED: [c_long; 28] = [
        libc::SYS_kill,
        libc::SYS_tgkill,
        libc::SYS_rt_sigqueueinfo,
        libc::SYS_rt_tgsigqueueinfo,
        libc::SYS_prlimit64,
        libc::SYS_sched_setaffinity,
        libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam,
        libc::SYS_sched_setattr,
        libc::SYS_setpgid,
        libc::SYS_getpgid,
        libc::SYS_getsid,
        libc::SYS_pidfd_open,
        libc::SYS_tkill,
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
        libc::SYS_socket,
    ];

    /// The class of `entry` under this profile.
    /// Whether a `sendmsg` with no flags is the kernel's to perform in this profile (allowed
    /// in BPF, not delegated): the program's process can then hand warden a descriptor with
    /// `SCM_RIGHTS` once its filter is on, before any agent runs.
    pub fn sends_in_kernel(&self) -> bool {
        TABLE
            .iter()
            .find(|e| e.nr == libc::SYS_sendmsg)
            .is_some_and(|e| matches!(self.class(e), Class::Direct | G(Guard::NoFastOpen(_))))
    }

    pub fn class(&self, entry: &Entry) -> Class {
        if self.capability_mode && Self::CAPABILITY_CHECKED.contains(&entry.nr) {
            return D(F::CapabilityMode);
        }
        // A descriptor's owner is a process it signals (F_SETSIG can make that SIGKILL): a pid,
        // which capability mode does not let a process name.
        if self.capability_mode {
            match entry.nr {
                libc::SYS_fcntl => return G(Guard::CapabilityFcntl),
                libc::SYS_ioctl => return G(Guard::CapabilityIoctl),
                _ => {}
            }
        }
        if self.ptrace_inside && Self::TRACING.contains(&entry.nr) {
            // Tracing names another process by pid: capability mode's agent refuses it to a
            // process in the mode (which could otherwise take over one outside it).
            if self.capability_mode {
                return D(F::CapabilityMode);
            }
            return Class::Direct;
        }
        if self.opens.in_view() && Opens::VIEW_DIRECT.contains(&entry.nr) {
            return Class::Direct;
        }
        if self.opens == Opens::ViewExec && Opens::VIEW_EXEC.contains(&entry.nr) {
            return Class::Direct;
        }
        if self.opens.in_view() {
            match entry.nr {
                libc::SYS_open => return G(Guard::ViewOpen(1)),
                libc::SYS_openat => return G(Guard::ViewOpen(2)),
                _ => {}
            }
        }
        if self.opens != Opens::Agent {
            match entry.nr {
                libc::SYS_open => return G(Guard::KernelOpen(1)),
                libc::SYS_openat => return G(Guard::KernelOpen(2)),
                libc::SYS_creat => return Class::Direct,
                _ => {}
            }
        }
        entry.class_in(self.network)
    }

    /// How many profiles there are: every filter warden may install is one of them.
    pub const COUNT: usize = 48;

    /// This profile's position in `0..COUNT` ([`Profile::from_index`] is the inverse).
    pub fn index(&self) -> usize {
        let network = match self.network {
            Network::Private => 0,
            Network::Host { udp: false } => 1,
            Network::Host { udp: true } => 2,
        };
        let opens = match self.opens {
            Opens::Agent => 0,
            Opens::Kernel => 1,
            Opens::View => 2,
            Opens::ViewExec => 3,
        };
        usize::from(self.capability_mode) * 24
            + network * 8
            + usize::from(self.ptrace_inside) * 4
            + opens
    }

    /// The profile at `index` (`index < COUNT`).
    pub fn from_index(index: usize) -> Profile {
        assert!(index < Self::COUNT, "profile index {index} out of range");
        let capability_mode = index >= 24;
        let index = index % 24;
        Profile {
            capability_mode,
            network: match index / 8 {
                0 => Network::Private,
                n => Network::Host { udp: n == 2 },
            },
            ptrace_inside: !(index / 4).is_multiple_of(2),
            opens: match index % 4 {
                0 => Opens::Agent,
                1 => Opens::Kernel,
                2 => Opens::View,
                _ => Opens::ViewExec,
            },
        }
    }

    /// Every profile, in index order.
    pub fn all() -> impl Iterator<Item = Profile> {
        (0..Self::COUNT).map(Self::from_index)
    }
}

impl Entry {
    /// The call's name as in `syscalls(2)`.
    pub fn name(&self) -> &'static str {
        self.sys.trim_start_matches("SYS_")
    }

    /// Whether the agent performs this call under some profile: delegated outright, or
    /// notified by a guard for some of its arguments. Such a row says what privilege the agent
    /// uses ([`Entry::agent`]).
    pub fn delegated_somewhere(&self) -> bool {
        // Capability mode's checks continue or refuse a call; the agent performs none of them.
        Profile::all().any(|p| {
            matches!(
                p.class(self),
                D(F::Open
                    | F::Stat
                    | F::Access
                    | F::Readlink
                    | F::Mkdir
                    | F::Mknod
                    | F::Unlink
                    | F::Rename
                    | F::Link
                    | F::Symlink
                    | F::Chmod
                    | F::Chown
                    | F::Truncate
                    | F::Utime
                    | F::Chdir
                    | F::Statfs
                    | F::Xattr
                    | F::InotifyAddWatch
                    | F::Exec
                    | F::SocketAddress
                    | F::Memfd
                    | F::FdMetadata
                    | F::Socket
                    | F::Send
                    | F::Accept
                    | F::SocketName)
                    | G(Guard::HostSocket
                        | Guard::SendTo
                        | Guard::KernelOpen(_)
                        | Guard::ViewOpen(_))
            )
        })
    }

    /// The call's class when the sandbox's network is `net` ([`Entry::class`] is the class for
    /// [`Network::Private`]).
    pub fn class_in(&self, net: Network) -> Class {
        let Network::Host { udp } = net else {
            return self.class;
        };
        match self.nr {
            libc::SYS_socket => G(Guard::HostSocket),
            libc::SYS_accept | libc::SYS_accept4 => D(F::Accept),
            libc::SYS_sendto if udp => G(Guard::SendTo),
            libc::SYS_sendmsg | libc::SYS_sendmmsg if udp => D(F::Send),
            libc::SYS_sendto | libc::SYS_sendmmsg => G(Guard::NoFastOpen(3)),
            libc::SYS_sendmsg => G(Guard::NoFastOpen(2)),
            _ => self.class,
        }
    }

    /// Why, when the sandbox's network is `net`.
    pub fn note_in(&self, net: Network) -> &'static str {
        if self.class_in(net) == self.class {
            return self.note;
        }
        match self.class_in(net) {
            G(Guard::HostSocket) => "inet and inet6 sockets are made by the agent in warden's network namespace, with the policy's incoming filter locked on; unix stream and seqpacket, netlink direct",
            G(Guard::SendTo) => "without an address, direct; with one, performed by the agent after checking it",
            G(Guard::NoFastOpen(_)) => "direct (the kernel ignores an address on TCP), but not with MSG_FASTOPEN, a connect the agent would not see",
            D(F::Accept) => "performed by the agent, which closes connections from peers no net-allow incoming rule allows",
            _ => "performed by the agent on its duplicate of the socket, with its own copy of the address and data (a UDP message may name any peer)",
        }
    }
}

/// Every system call warden classifies. Numbers come from the libc crate's x86_64 constants.
pub static TABLE: &[Entry] = &[
    e!(SYS_read, A, ""),
    e!(SYS_write, A, ""),
    e!(SYS_close, A, ""),
    e!(SYS_fstat, A, ""),
    e!(SYS_poll, A, ""),
    e!(SYS_lseek, A, ""),
    e!(SYS_mmap, A, ""),
    e!(SYS_mprotect, A, ""),
    e!(SYS_munmap, A, ""),
    e!(SYS_brk, A, ""),
    e!(SYS_rt_sigaction, A, ""),
    e!(SYS_rt_sigprocmask, A, ""),
    e!(SYS_rt_sigreturn, A, ""),
    e!(SYS_pread64, A, ""),
    e!(SYS_pwrite64, A, ""),
    e!(SYS_readv, A, ""),
    e!(SYS_writev, A, ""),
    e!(SYS_pipe, A, ""),
    e!(SYS_select, A, ""),
    e!(SYS_sched_yield, A, ""),
    e!(SYS_mremap, A, ""),
    e!(SYS_msync, A, ""),
    e!(SYS_mincore, A, ""),
    e!(SYS_madvise, A, ""),
    e!(SYS_shmget, A, "the sandbox has its own IPC namespace"),
    e!(SYS_shmat, A, ""),
    e!(SYS_shmctl, A, ""),
    e!(SYS_dup, A, ""),
    e!(SYS_dup2, A, ""),
    e!(SYS_pause, A, ""),
    e!(SYS_nanosleep, A, ""),
    e!(SYS_getitimer, A, ""),
    e!(SYS_alarm, A, ""),
    e!(SYS_setitimer, A, ""),
    e!(SYS_getpid, A, ""),
    e!(SYS_sendfile, A, ""),
    e!(SYS_accept, A, "", uses(), "accepts on the program's own listening socket"),
    e!(SYS_sendto, A, "unix datagram sockets cannot be created, so an address reaches only the private network namespace", uses(), "sends on the program's socket; control messages that would need a capability are not passed on"),
    e!(SYS_recvfrom, A, ""),
    e!(SYS_sendmsg, A, "as sendto", uses(), "sends on the program's socket; control messages that would need a capability are not passed on"),
    e!(SYS_recvmsg, A, ""),
    e!(SYS_shutdown, A, ""),
    e!(SYS_listen, A, ""),
    e!(SYS_getsockname, D(F::SocketName), "the kernel answers (the agent lets the call go on), but a unix socket the agent bound by a short name is named as the program bound it", uses(), "reads the name of its duplicate of the program's socket"),
    e!(SYS_getpeername, D(F::SocketName), "as getsockname: a peer the agent bound is named as the program bound it", uses(), "reads the name of its duplicate of the program's socket"),
    e!(SYS_setsockopt, A, ""),
    e!(SYS_getsockopt, A, ""),
    e!(SYS_fork, A, ""),
    e!(SYS_vfork, A, ""),
    e!(SYS_exit, A, ""),
    e!(SYS_wait4, A, ""),
    e!(SYS_kill, A, "confined to the sandbox by its PID namespace"),
    e!(SYS_uname, A, ""),
    e!(SYS_semget, A, "the sandbox has its own IPC namespace"),
    e!(SYS_semop, A, ""),
    e!(SYS_semctl, A, ""),
    e!(SYS_shmdt, A, ""),
    e!(SYS_msgget, A, "the sandbox has its own IPC namespace"),
    e!(SYS_msgsnd, A, ""),
    e!(SYS_msgrcv, A, ""),
    e!(SYS_msgctl, A, ""),
    e!(SYS_fcntl, A, "F_SETLEASE refused (ARGUMENT_DENIALS)"),
    e!(SYS_flock, A, ""),
    e!(SYS_fsync, A, ""),
    e!(SYS_fdatasync, A, ""),
    e!(SYS_ftruncate, A, ""),
    e!(SYS_getdents, A, ""),
    e!(SYS_getcwd, A, "reports the thread's own directory"),
    e!(SYS_fchdir, A, "the descriptor was opened by the agent or inherited"),
    e!(SYS_umask, A, ""),
    e!(SYS_gettimeofday, A, ""),
    e!(SYS_getrlimit, A, ""),
    e!(SYS_getrusage, A, ""),
    e!(SYS_sysinfo, A, ""),
    e!(SYS_times, A, ""),
    e!(SYS_getuid, A, ""),
    e!(SYS_getgid, A, ""),
    e!(SYS_setuid, A, "ids are those of the sandbox's user namespace"),
    e!(SYS_setgid, A, ""),
    e!(SYS_geteuid, A, ""),
    e!(SYS_getegid, A, ""),
    e!(SYS_setpgid, A, ""),
    e!(SYS_getppid, A, ""),
    e!(SYS_getpgrp, A, ""),
    e!(SYS_setsid, A, ""),
    e!(SYS_setreuid, A, ""),
    e!(SYS_setregid, A, ""),
    e!(SYS_getgroups, A, ""),
    e!(SYS_setgroups, A, ""),
    e!(SYS_setresuid, A, ""),
    e!(SYS_getresuid, A, ""),
    e!(SYS_setresgid, A, ""),
    e!(SYS_getresgid, A, ""),
    e!(SYS_getpgid, A, ""),
    e!(SYS_setfsuid, A, ""),
    e!(SYS_setfsgid, A, ""),
    e!(SYS_getsid, A, ""),
    e!(SYS_capget, A, ""),
    e!(SYS_capset, A, ""),
    e!(SYS_rt_sigpending, A, ""),
    e!(SYS_rt_sigtimedwait, A, ""),
    e!(SYS_rt_sigqueueinfo, A, "confined to the sandbox by its PID namespace"),
    e!(SYS_rt_sigsuspend, A, ""),
    e!(SYS_sigaltstack, A, ""),
    e!(SYS_fstatfs, A, ""),
    e!(SYS_getpriority, A, ""),
    e!(SYS_setpriority, A, ""),
    e!(SYS_sched_setparam, A, ""),
    e!(SYS_sched_getparam, A, ""),
    e!(SYS_sched_setscheduler, A, ""),
    e!(SYS_sched_getscheduler, A, ""),
    e!(SYS_sched_get_priority_max, A, ""),
    e!(SYS_sched_get_priority_min, A, ""),
    e!(SYS_sched_rr_get_interval, A, ""),
    e!(SYS_mlock, A, ""),
    e!(SYS_munlock, A, ""),
    e!(SYS_mlockall, A, ""),
    e!(SYS_munlockall, A, ""),
    e!(SYS_arch_prctl, A, ""),
    e!(SYS_setrlimit, A, ""),
    e!(SYS_sync, A, ""),
    e!(SYS_sethostname, A, "the sandbox has its own UTS namespace"),
    e!(SYS_setdomainname, A, "the sandbox has its own UTS namespace"),
    e!(SYS_gettid, A, ""),
    e!(SYS_readahead, A, ""),
    e!(SYS_fgetxattr, A, ""),
    e!(SYS_flistxattr, A, ""),
    e!(SYS_tkill, A, "confined to the sandbox by its PID namespace"),
    e!(SYS_time, A, ""),
    e!(SYS_futex, A, ""),
    e!(SYS_sched_setaffinity, A, ""),
    e!(SYS_sched_getaffinity, A, ""),
    e!(SYS_io_setup, A, ""),
    e!(SYS_io_destroy, A, ""),
    e!(SYS_io_getevents, A, ""),
    e!(SYS_io_submit, A, ""),
    e!(SYS_io_cancel, A, ""),
    e!(SYS_getdents64, A, ""),
    e!(SYS_set_tid_address, A, ""),
    e!(SYS_restart_syscall, A, ""),
    e!(SYS_semtimedop, A, ""),
    e!(SYS_fadvise64, A, ""),
    e!(SYS_timer_create, A, ""),
    e!(SYS_timer_settime, A, ""),
    e!(SYS_timer_gettime, A, ""),
    e!(SYS_timer_getoverrun, A, ""),
    e!(SYS_timer_delete, A, ""),
    e!(SYS_clock_gettime, A, ""),
    e!(SYS_clock_getres, A, ""),
    e!(SYS_clock_nanosleep, A, ""),
    e!(SYS_exit_group, A, ""),
    e!(SYS_epoll_wait, A, ""),
    e!(SYS_epoll_ctl, A, ""),
    e!(SYS_tgkill, A, "confined to the sandbox by its PID namespace"),
    e!(SYS_mbind, A, ""),
    e!(SYS_set_mempolicy, A, ""),
    e!(SYS_get_mempolicy, A, ""),
    e!(SYS_mq_open, A, "the sandbox has its own IPC namespace"),
    e!(SYS_mq_unlink, A, ""),
    e!(SYS_mq_timedsend, A, ""),
    e!(SYS_mq_timedreceive, A, ""),
    e!(SYS_mq_notify, A, ""),
    e!(SYS_mq_getsetattr, A, ""),
    e!(SYS_waitid, A, ""),
    e!(SYS_ioprio_set, A, ""),
    e!(SYS_ioprio_get, A, ""),
    e!(SYS_inotify_init, A, ""),
    e!(SYS_inotify_rm_watch, A, ""),
    e!(SYS_pselect6, A, ""),
    e!(SYS_ppoll, A, ""),
    e!(SYS_set_robust_list, A, ""),
    e!(SYS_get_robust_list, A, ""),
    e!(SYS_splice, A, ""),
    e!(SYS_tee, A, ""),
    e!(SYS_sync_file_range, A, ""),
    e!(SYS_vmsplice, A, ""),
    e!(SYS_epoll_pwait, A, ""),
    e!(SYS_signalfd, A, ""),
    e!(SYS_timerfd_create, A, ""),
    e!(SYS_eventfd, A, ""),
    e!(SYS_fallocate, A, ""),
    e!(SYS_timerfd_settime, A, ""),
    e!(SYS_timerfd_gettime, A, ""),
    e!(SYS_accept4, A, "", uses(), "accepts on the program's own listening socket"),
    e!(SYS_signalfd4, A, ""),
    e!(SYS_eventfd2, A, ""),
    e!(SYS_epoll_create, A, ""),
    e!(SYS_epoll_create1, A, ""),
    e!(SYS_dup3, A, ""),
    e!(SYS_pipe2, A, ""),
    e!(SYS_inotify_init1, A, ""),
    e!(SYS_preadv, A, ""),
    e!(SYS_pwritev, A, ""),
    e!(SYS_rt_tgsigqueueinfo, A, "confined to the sandbox by its PID namespace"),
    e!(SYS_recvmmsg, A, ""),
    e!(SYS_prlimit64, A, ""),
    e!(SYS_syncfs, A, ""),
    e!(SYS_sendmmsg, A, "as sendto", uses(), "sends on the program's socket; control messages that would need a capability are not passed on"),
    e!(SYS_getcpu, A, ""),
    e!(SYS_sched_setattr, A, ""),
    e!(SYS_sched_getattr, A, ""),
    e!(SYS_getrandom, A, ""),
    e!(SYS_membarrier, A, ""),
    e!(SYS_mlock2, A, ""),
    e!(SYS_copy_file_range, A, ""),
    e!(SYS_preadv2, A, ""),
    e!(SYS_pwritev2, A, ""),
    e!(SYS_pkey_mprotect, A, ""),
    e!(SYS_pkey_alloc, A, ""),
    e!(SYS_pkey_free, A, ""),

    e!(SYS_rseq, A, ""),
    e!(SYS_pidfd_send_signal, A, "pids name only processes of the sandbox's PID namespace"),
    e!(SYS_pidfd_open, A, "pids name only processes of the sandbox's PID namespace"),
    e!(SYS_close_range, A, ""),
    e!(SYS_epoll_pwait2, A, ""),
    e!(SYS_landlock_create_ruleset, A, ""),
    e!(SYS_landlock_add_rule, A, ""),
    e!(SYS_landlock_restrict_self, A, ""),
    e!(SYS_memfd_secret, A, ""),
    e!(SYS_futex_waitv, A, ""),
    e!(SYS_open, D(F::Open), "resolved and opened by the agent; the descriptor is injected", uses(DAC_OVERRIDE, FOWNER, FSETID), "opens and creates what the policy allows whoever owns it; O_NOATIME on a file root does not own; O_TRUNC keeps a set-group-ID file's bit"),
    e!(SYS_openat, D(F::Open), "resolved and opened by the agent; the descriptor is injected", uses(DAC_OVERRIDE, FOWNER, FSETID), "opens and creates what the policy allows whoever owns it; O_NOATIME on a file root does not own; O_TRUNC keeps a set-group-ID file's bit"),
    e!(SYS_openat2, D(F::Open), "resolved and opened by the agent; the descriptor is injected", uses(DAC_OVERRIDE, FOWNER, FSETID), "opens and creates what the policy allows whoever owns it; O_NOATIME on a file root does not own; O_TRUNC keeps a set-group-ID file's bit"),
    e!(SYS_creat, D(F::Open), "resolved and opened by the agent; the descriptor is injected", uses(DAC_OVERRIDE, FSETID), "creates or truncates what the policy allows whoever owns it; truncating keeps a set-group-ID file's bit"),
    e!(SYS_stat, D(F::Stat), "resolved by the agent; the result is copied back", uses(DAC_OVERRIDE), "searches the directories on the path whoever owns them"),
    e!(SYS_lstat, D(F::Stat), "resolved by the agent; the result is copied back", uses(DAC_OVERRIDE), "searches the directories on the path whoever owns them"),
    e!(SYS_newfstatat, D(F::Stat), "resolved by the agent; the result is copied back", uses(DAC_OVERRIDE), "searches the directories on the path whoever owns them"),
    e!(SYS_statx, D(F::Stat), "resolved by the agent; the result is copied back", uses(DAC_OVERRIDE), "searches the directories on the path whoever owns them"),
    e!(SYS_access, D(F::Access), "policy and permission checked by the agent", uses(DAC_OVERRIDE), "searches the path; the permission answered is the agent's own, for what the policy allows"),
    e!(SYS_faccessat, D(F::Access), "policy and permission checked by the agent", uses(DAC_OVERRIDE), "searches the path; the permission answered is the agent's own, for what the policy allows"),
    e!(SYS_faccessat2, D(F::Access), "policy and permission checked by the agent", uses(DAC_OVERRIDE), "searches the path; the permission answered is the agent's own, for what the policy allows"),
    e!(SYS_readlink, D(F::Readlink), "read by the agent; the target is copied back", uses(DAC_OVERRIDE), "searches the directories on the path whoever owns them"),
    e!(SYS_readlinkat, D(F::Readlink), "read by the agent; the target is copied back", uses(DAC_OVERRIDE), "searches the directories on the path whoever owns them"),
    e!(SYS_mkdir, D(F::Mkdir), "performed by the agent", uses(DAC_OVERRIDE), "creates in a directory the policy allows whoever owns it"),
    e!(SYS_mkdirat, D(F::Mkdir), "performed by the agent", uses(DAC_OVERRIDE), "creates in a directory the policy allows whoever owns it"),
    e!(SYS_mknod, D(F::Mknod), "performed by the agent; device nodes refused", uses(DAC_OVERRIDE), "creates in a directory the policy allows whoever owns it"),
    e!(SYS_mknodat, D(F::Mknod), "performed by the agent; device nodes refused", uses(DAC_OVERRIDE), "creates in a directory the policy allows whoever owns it"),
    e!(SYS_unlink, D(F::Unlink), "performed by the agent", uses(DAC_OVERRIDE, FOWNER), "removes from a directory the policy allows whoever owns it, and another user's entry from a sticky directory"),
    e!(SYS_unlinkat, D(F::Unlink), "performed by the agent", uses(DAC_OVERRIDE, FOWNER), "removes from a directory the policy allows whoever owns it, and another user's entry from a sticky directory"),
    e!(SYS_rmdir, D(F::Unlink), "performed by the agent", uses(DAC_OVERRIDE, FOWNER), "removes from a directory the policy allows whoever owns it, and another user's entry from a sticky directory"),
    e!(SYS_rename, D(F::Rename), "performed by the agent; EXDEV when the move would widen rights", uses(DAC_OVERRIDE, FOWNER), "moves between directories the policy allows whoever owns them, and another user's entry out of a sticky directory"),
    e!(SYS_renameat, D(F::Rename), "performed by the agent; EXDEV when the move would widen rights", uses(DAC_OVERRIDE, FOWNER), "moves between directories the policy allows whoever owns them, and another user's entry out of a sticky directory"),
    e!(SYS_renameat2, D(F::Rename), "performed by the agent; EXDEV when the move would widen rights", uses(DAC_OVERRIDE, FOWNER), "moves between directories the policy allows whoever owns them, and another user's entry out of a sticky directory"),
    e!(SYS_link, D(F::Link), "performed by the agent; the source must already have every right the new name gets", uses(DAC_OVERRIDE, FOWNER), "links into a directory the policy allows whoever owns it, and a set-ID file root does not own (protected_hardlinks)"),
    e!(SYS_linkat, D(F::Link), "performed by the agent; the source must already have every right the new name gets", uses(DAC_OVERRIDE, FOWNER), "links into a directory the policy allows whoever owns it, and a set-ID file root does not own (protected_hardlinks)"),
    e!(SYS_symlink, D(F::Symlink), "performed by the agent", uses(DAC_OVERRIDE), "creates in a directory the policy allows whoever owns it"),
    e!(SYS_symlinkat, D(F::Symlink), "performed by the agent", uses(DAC_OVERRIDE), "creates in a directory the policy allows whoever owns it"),
    e!(SYS_chmod, D(F::Chmod), "performed by the agent", uses(DAC_OVERRIDE, FOWNER, FSETID), "changes the mode of a file root does not own; a set-group-ID directory keeps its bit"),
    e!(SYS_fchmodat, D(F::Chmod), "performed by the agent", uses(DAC_OVERRIDE, FOWNER, FSETID), "changes the mode of a file root does not own; a set-group-ID directory keeps its bit"),
    e!(SYS_fchmodat2, D(F::Chmod), "performed by the agent", uses(DAC_OVERRIDE, FOWNER, FSETID), "changes the mode of a file root does not own; a set-group-ID directory keeps its bit"),
    e!(SYS_chown, D(F::Chown), "performed by the agent", uses(DAC_OVERRIDE, CHOWN, FSETID), "gives the file to ids mapped into the sandbox; a group-executable set-group-ID file keeps its bit"),
    e!(SYS_lchown, D(F::Chown), "performed by the agent", uses(DAC_OVERRIDE, CHOWN, FSETID), "gives the file to ids mapped into the sandbox; a group-executable set-group-ID file keeps its bit"),
    e!(SYS_fchownat, D(F::Chown), "performed by the agent", uses(DAC_OVERRIDE, CHOWN, FSETID), "gives the file to ids mapped into the sandbox; a group-executable set-group-ID file keeps its bit"),
    e!(SYS_truncate, D(F::Truncate), "performed by the agent", uses(DAC_OVERRIDE, FSETID), "writes a file the policy allows whoever owns it; a set-group-ID file keeps its bit"),
    e!(SYS_utime, D(F::Utime), "performed by the agent", uses(DAC_OVERRIDE, FOWNER), "sets the times to now on a file the policy allows writing, and explicit times on a file root does not own"),
    e!(SYS_utimes, D(F::Utime), "performed by the agent", uses(DAC_OVERRIDE, FOWNER), "sets the times to now on a file the policy allows writing, and explicit times on a file root does not own"),
    e!(SYS_futimesat, D(F::Utime), "performed by the agent", uses(DAC_OVERRIDE, FOWNER), "sets the times to now on a file the policy allows writing, and explicit times on a file root does not own"),
    e!(SYS_utimensat, D(F::Utime), "performed by the agent", uses(DAC_OVERRIDE, FOWNER), "sets the times to now on a file the policy allows writing, and explicit times on a file root does not own"),
    e!(SYS_chdir, D(F::Chdir), "checked by the agent, then continued (see docs/limits.md: residual race)", uses(DAC_OVERRIDE), "searches the path to check it; the chdir itself is the program's"),
    e!(SYS_statfs, D(F::Statfs), "performed by the agent", uses(DAC_OVERRIDE), "searches the directories on the path whoever owns them"),
    e!(SYS_getxattr, D(F::Xattr), "performed by the agent", uses(DAC_OVERRIDE), "reads the attributes of what the policy shows, whoever owns it"),
    e!(SYS_lgetxattr, D(F::Xattr), "performed by the agent", uses(DAC_OVERRIDE), "reads the attributes of what the policy shows, whoever owns it"),
    e!(SYS_listxattr, D(F::Xattr), "performed by the agent", uses(DAC_OVERRIDE), "reads the attributes of what the policy shows, whoever owns it"),
    e!(SYS_llistxattr, D(F::Xattr), "performed by the agent", uses(DAC_OVERRIDE), "reads the attributes of what the policy shows, whoever owns it"),
    e!(SYS_setxattr, D(F::Xattr), "performed by the agent", uses(DAC_OVERRIDE, FOWNER), "writes user.* attributes of a file the policy allows writing, and of a sticky directory root does not own"),
    e!(SYS_lsetxattr, D(F::Xattr), "performed by the agent", uses(DAC_OVERRIDE, FOWNER), "writes user.* attributes of a file the policy allows writing, and of a sticky directory root does not own"),
    e!(SYS_removexattr, D(F::Xattr), "performed by the agent", uses(DAC_OVERRIDE, FOWNER), "writes user.* attributes of a file the policy allows writing, and of a sticky directory root does not own"),
    e!(SYS_lremovexattr, D(F::Xattr), "performed by the agent", uses(DAC_OVERRIDE, FOWNER), "writes user.* attributes of a file the policy allows writing, and of a sticky directory root does not own"),
    e!(SYS_inotify_add_watch, D(F::InotifyAddWatch), "performed by the agent on its duplicate of the inotify descriptor", uses(DAC_OVERRIDE), "watches what the policy lets the program read, whoever owns it"),
    e!(SYS_execve, D(F::Exec), "checked by the agent, then continued under Landlock's execute right", uses(DAC_OVERRIDE), "searches the path to check it; the exec itself is the program's"),
    e!(SYS_execveat, D(F::Exec), "checked by the agent, then continued under Landlock's execute right", uses(DAC_OVERRIDE), "searches the path to check it; the exec itself is the program's"),
    e!(SYS_memfd_create, D(F::Memfd), "created by the agent with MFD_NOEXEC_SEAL: exec rules govern files, and Landlock cannot see memfds", uses(), "an anonymous file of the agent's own"),
    e!(SYS_fchmod, D(F::FdMetadata), "needs write on the descriptor's path", uses(DAC_OVERRIDE, FOWNER, FSETID), "changes the mode of a file root does not own; a set-group-ID directory keeps its bit"),
    e!(SYS_fchown, D(F::FdMetadata), "needs write on the descriptor's path", uses(DAC_OVERRIDE, CHOWN, FSETID), "gives the file to ids mapped into the sandbox; a group-executable set-group-ID file keeps its bit"),
    e!(SYS_fsetxattr, D(F::FdMetadata), "needs write on the descriptor's path", uses(DAC_OVERRIDE, FOWNER), "writes user.* attributes of a file the policy allows writing, and of a sticky directory root does not own"),
    e!(SYS_fremovexattr, D(F::FdMetadata), "needs write on the descriptor's path", uses(DAC_OVERRIDE, FOWNER), "writes user.* attributes of a file the policy allows writing, and of a sticky directory root does not own"),
    e!(SYS_connect, D(F::SocketAddress), "performed by the agent on its duplicate of the socket, with its own copy of the address", uses(DAC_OVERRIDE), "searches a unix socket's path and writes to its socket whoever owns them; an inet connect needs nothing"),
    e!(SYS_bind, D(F::SocketAddress), "performed by the agent on its duplicate of the socket, with its own copy of the address", uses(DAC_OVERRIDE, NET_BIND_SERVICE), "creates a unix socket's name in a directory the policy allows; binds an allowed port below 1024"),
    e!(SYS_ptrace, X(EPERM), "would reach into other processes"),
    e!(SYS_process_vm_readv, X(EPERM), "would read another process's memory"),
    e!(SYS_process_vm_writev, X(EPERM), "would write another process's memory"),
    e!(SYS_pidfd_getfd, X(EPERM), "would take another process's descriptors"),
    e!(SYS_kcmp, X(EPERM), "compares other processes' kernel objects"),
    e!(SYS_process_madvise, X(EPERM), "acts on another process's memory"),
    e!(SYS_process_mrelease, X(EPERM), "acts on another process"),
    e!(SYS_migrate_pages, X(EPERM), "moves another process's memory"),
    e!(SYS_move_pages, X(EPERM), "moves another process's memory"),
    e!(SYS_mount, X(EPERM), "mount family"),
    e!(SYS_umount2, X(EPERM), "mount family"),
    e!(SYS_pivot_root, X(EPERM), "mount family"),
    e!(SYS_chroot, X(EPERM), "would change the root the agent resolves against"),
    e!(SYS_open_tree, X(EPERM), "new mount API"),
    e!(SYS_move_mount, X(EPERM), "new mount API"),
    e!(SYS_fsopen, X(EPERM), "new mount API"),
    e!(SYS_fsconfig, X(EPERM), "new mount API"),
    e!(SYS_fsmount, X(EPERM), "new mount API"),
    e!(SYS_fspick, X(EPERM), "new mount API"),
    e!(SYS_mount_setattr, X(EPERM), "new mount API"),
    e!(SYS_swapon, X(EPERM), "system administration"),
    e!(SYS_swapoff, X(EPERM), "system administration"),
    e!(SYS_reboot, X(EPERM), "system administration"),
    e!(SYS_syslog, X(EPERM), "kernel log"),
    e!(SYS_acct, X(EPERM), "system administration"),
    e!(SYS_settimeofday, X(EPERM), "system clock"),
    e!(SYS_clock_settime, X(EPERM), "system clock"),
    e!(SYS_clock_adjtime, X(EPERM), "system clock"),
    e!(SYS_adjtimex, X(EPERM), "system clock"),
    e!(SYS_iopl, X(EPERM), "raw I/O ports"),
    e!(SYS_ioperm, X(EPERM), "raw I/O ports"),
    e!(SYS_modify_ldt, X(EPERM), "segment tricks"),
    e!(SYS_init_module, X(EPERM), "module loading"),
    e!(SYS_finit_module, X(EPERM), "module loading"),
    e!(SYS_delete_module, X(EPERM), "module loading"),
    e!(SYS_kexec_load, X(EPERM), "kexec"),
    e!(SYS_kexec_file_load, X(EPERM), "kexec"),
    e!(SYS_bpf, X(EPERM), "eBPF"),
    e!(SYS_perf_event_open, X(EPERM), "performance monitoring"),
    e!(SYS_io_uring_setup, X(EPERM), "io_uring would perform path calls outside the filter"),
    e!(SYS_io_uring_enter, X(EPERM), "io_uring"),
    e!(SYS_io_uring_register, X(EPERM), "io_uring"),
    e!(SYS_userfaultfd, X(EPERM), "userfaultfd widens kernel race windows"),
    e!(SYS_keyctl, X(EPERM), "kernel keyrings"),
    e!(SYS_add_key, X(EPERM), "kernel keyrings"),
    e!(SYS_request_key, X(EPERM), "kernel keyrings"),
    e!(SYS_setns, X(EPERM), "would join other namespaces"),
    e!(SYS_name_to_handle_at, X(EPERM), "file handles bypass path checks"),
    e!(SYS_open_by_handle_at, X(EPERM), "file handles bypass path checks"),
    e!(SYS_fanotify_init, X(EPERM), "file-system monitoring"),
    e!(SYS_fanotify_mark, X(EPERM), "names paths; not delegated"),
    e!(SYS_quotactl, X(EPERM), "system administration"),
    e!(SYS_quotactl_fd, X(EPERM), "system administration"),
    e!(SYS_uselib, X(EPERM), "obsolete; names a path"),
    e!(SYS_ustat, X(EPERM), "obsolete"),
    e!(SYS_sysfs, X(EPERM), "obsolete"),
    e!(SYS__sysctl, X(EPERM), "obsolete"),
    e!(SYS_vhangup, X(EPERM), "terminal administration"),
    e!(SYS_lookup_dcookie, X(EPERM), "profiling"),
    e!(SYS_nfsservctl, X(ENOSYS), "obsolete"),
    e!(SYS_clone3, X(ENOSYS), "its flags live in memory BPF cannot read; libc falls back to clone"),
    e!(SYS_remap_file_pages, X(ENOSYS), "deprecated"),
    e!(SYS_clone, G(Guard::Clone), "allowed without namespace flags"),
    e!(SYS_unshare, G(Guard::Unshare), "allowed without namespace flags"),
    e!(SYS_ioctl, A, "TIOCSTI and TIOCLINUX (terminal injection), inode-flag, fs-verity and encryption-policy requests refused (ARGUMENT_DENIALS)"),
    e!(SYS_seccomp, G(Guard::Seccomp), "a program may add filters, but not a listener of its own"),
    e!(SYS_personality, G(Guard::Personality), "only the query and PER_LINUX"),
    e!(SYS_prctl, G(Guard::Prctl), "options that affect only the caller"),
    e!(SYS_socket, G(Guard::Socket), "unix, inet, inet6, netlink; no unix datagram sockets (their sendmsg could name any path)", uses(), "a TCP or UDP socket in warden's namespace; the UDP filter is attached and locked without privilege"),
    e!(SYS_socketpair, G(Guard::Socketpair), "unix stream and seqpacket pairs"),
];

/// The entry for syscall number `nr`, if warden knows it.
pub fn lookup(nr: i64) -> Option<&'static Entry> {
    // Indexed by number (x86_64 numbers are dense below 512), built once: the agent looks up
    // every notification.
    static INDEX: std::sync::OnceLock<Vec<Option<&'static Entry>>> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let size = TABLE.iter().map(|e| e.nr).max().unwrap_or(0) as usize + 1;
        let mut v = vec![None; size];
        for e in TABLE {
            v[e.nr as usize] = Some(e);
        }
        v
    });
    usize::try_from(nr)
        .ok()
        .and_then(|i| index.get(i).copied().flatten())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn lookup_agrees_with_the_table() {
        for nr in -5..1024 {
            let linear = TABLE.iter().find(|e| e.nr == nr);
            assert_eq!(lookup(nr).map(|e| e.nr), linear.map(|e| e.nr), "{nr}");
        }
        assert!(lookup(i64::MAX).is_none());
    }

    #[test]
    fn profiles_are_numbered_one_to_one() {
        let all: Vec<Profile> = Profile::all().collect();
        for (i, p) in all.iter().enumerate() {
            assert_eq!(p.index(), i, "{p:?}");
        }
        // Every combination of the fields appears exactly once.
        let distinct: HashSet<String> = all.iter().map(|p| format!("{p:?}")).collect();
        assert_eq!(distinct.len(), Profile::COUNT);
        for network in [
            Network::Private,
            Network::Host { udp: false },
            Network::Host { udp: true },
        ] {
            for ptrace_inside in [false, true] {
                for opens in [Opens::Agent, Opens::Kernel] {
                    for capability_mode in [false, true] {
                        let p = Profile {
                            network,
                            ptrace_inside,
                            opens,
                            capability_mode,
                        };
                        assert_eq!(Profile::from_index(p.index()), p);
                    }
                }
            }
        }
    }

    #[test]
    fn capability_mode_sends_its_calls_to_the_agent_and_nothing_else_changes() {
        let cap = Profile {
            capability_mode: true,
            ..Profile::default()
        };
        for e in TABLE {
            let checked = Profile::CAPABILITY_CHECKED.contains(&e.nr);
            let traced = Profile {
                ptrace_inside: true,
                ..cap
            };
            if Profile::TRACING.contains(&e.nr) {
                assert_eq!(traced.class(e), D(F::CapabilityMode), "{}", e.name());
                assert_eq!(cap.class(e), Profile::default().class(e), "{}", e.name());
            } else if e.nr == libc::SYS_fcntl {
                assert_eq!(cap.class(e), G(Guard::CapabilityFcntl));
            } else if e.nr == libc::SYS_ioctl {
                assert_eq!(cap.class(e), G(Guard::CapabilityIoctl));
            } else if checked {
                assert_eq!(cap.class(e), D(F::CapabilityMode), "{}", e.name());
                // Otherwise direct or guarded: capability mode is what sends them.
                assert!(!matches!(Profile::default().class(e), D(_)), "{}", e.name());
            } else {
                assert_eq!(cap.class(e), Profile::default().class(e), "{}", e.name());
            }
        }
        for nr in Profile::CAPABILITY_CHECKED {
            assert!(lookup(nr).is_some(), "{nr} is not in the table");
        }
    }

    #[test]
    fn family_index_matches_all() {
        for (i, f) in Family::ALL.iter().enumerate() {
            assert_eq!(f.index(), i, "{f:?}");
        }
    }

    #[test]
    fn every_number_is_classified_once() {
        let mut seen = HashSet::new();
        for e in TABLE {
            assert!(seen.insert(e.nr), "{} ({}) appears twice", e.name(), e.nr);
        }
    }

    #[test]
    fn highest_known_number_is_covered() {
        // The table reaches the newest calls libc knows; anything newer is denied by default.
        assert!(TABLE.iter().any(|e| e.nr >= libc::SYS_futex_waitv));
    }

    #[test]
    fn every_call_the_agent_performs_names_the_privilege_it_uses() {
        let mut performed = 0;
        for e in TABLE {
            match (e.delegated_somewhere(), e.agent) {
                (true, Some(p)) => {
                    performed += 1;
                    assert!(!p.why.is_empty(), "{}: a privilege without a why", e.name());
                }
                (true, None) => panic!(
                    "{} is performed by the agent but names no privilege",
                    e.name()
                ),
                (false, Some(_)) => panic!(
                    "{} is never performed by the agent, yet names a privilege",
                    e.name()
                ),
                (false, None) => {}
            }
        }
        // The 60 delegated calls (getsockname and getpeername among them), and the 6 the agent
        // performs when the policy has IP rules (socket, accept, accept4, sendto, sendmsg,
        // sendmmsg).
        assert_eq!(performed, 66);
        // Spot checks of what only some calls use.
        let uses = |name: &str| {
            TABLE
                .iter()
                .find(|e| e.name() == name)
                .unwrap()
                .agent
                .unwrap()
                .caps
        };
        assert_eq!(
            uses("bind"),
            Caps::DAC_OVERRIDE.union(Caps::NET_BIND_SERVICE)
        );
        assert!(uses("fchown").contains(Caps::CHOWN));
        assert!(uses("memfd_create").is_empty());
        assert!(!uses("connect").contains(Caps::NET_BIND_SERVICE));
    }

    #[test]
    fn capability_names_are_the_kernels_bits() {
        let mut all = Caps::NONE;
        for (i, (c, name)) in Caps::NAMED.iter().enumerate() {
            assert_eq!(c.bits().count_ones(), 1, "{name}");
            assert!(!all.contains(*c), "{name} twice");
            all = all.union(*c);
            assert_eq!(c.names().collect::<Vec<_>>(), [*name]);
            if let Some((next, _)) = Caps::NAMED.get(i + 1) {
                assert!(c.bits() < next.bits(), "{name} out of the kernel's order");
            }
        }
        // CapEff of an agent worker thread (docs/design.md: "What the agent may do for a sandbox").
        assert_eq!(all.bits(), 0x41b);
    }

    #[test]
    fn path_bearing_calls_are_never_direct() {
        for name in [
            "open", "openat", "openat2", "stat", "execve", "chdir", "rename", "connect", "bind",
            "truncate",
        ] {
            let e = TABLE.iter().find(|e| e.name() == name).unwrap();
            assert!(matches!(e.class, Class::Delegated(_)), "{name}");
        }
    }
}
