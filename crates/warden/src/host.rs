//! What this host gives warden: namespaces, Landlock, seccomp user notification and its flags,
//! a supervisor's filter above us, the descriptor and memory calls the agent uses, the mount API
//! and cgroups. [`Probe::run`] asks the kernel once (each probe a few system calls, the ones
//! that cannot be undone in a short-lived child), and the rest of this module is pure: what each
//! run mode enforces with those facts ([`Probe::modes`]) and how to get what is missing
//! ([`Probe::advice`]). `warden doctor` prints both; other code may call [`Probe::run`] to
//! choose a route (it costs a few milliseconds: three forks).
//!
//! Every answer is an [`Answer`]: yes, or the errno the kernel gave, so a person or a script
//! can tell "not built into this kernel" (`ENOSYS`, `EINVAL` for an unknown flag) from
//! "refused here" (`EPERM` from a seccomp profile or AppArmor, `ENOSPC` from
//! `user.max_user_namespaces=0`, `EBUSY` from a supervisor's listener above).

use crate::sys::probe;
use serde::Serialize;
use std::os::fd::AsFd;

/// One fact: the kernel said yes, or refused with an errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The call worked.
    Yes,
    /// The call failed with this errno.
    No(i32),
    /// Not asked: what it depends on was missing (named with the fact).
    NotTried,
}

impl Answer {
    fn of<T, E: Into<std::io::Error>>(r: Result<T, E>) -> Answer {
        match r {
            Ok(_) => Answer::Yes,
            Err(e) => Answer::No(probe::errno(&e.into())),
        }
    }

    /// From a probe child's answer slot: 0 yes, -1 not asked, else the errno.
    fn from_slot(v: i32) -> Answer {
        match v {
            0 => Answer::Yes,
            -1 => Answer::NotTried,
            e => Answer::No(e),
        }
    }

    /// Whether the call worked.
    pub fn yes(self) -> bool {
        self == Answer::Yes
    }

    /// The errno's name (`EPERM`), for people and for `--json`.
    pub fn errno_name(self) -> Option<&'static str> {
        match self {
            Answer::No(e) => Some(errno_name(e)),
            _ => None,
        }
    }

    /// "yes", "no (EPERM)", "not tried".
    pub fn describe(self) -> String {
        match self {
            Answer::Yes => "yes".into(),
            Answer::No(e) => format!("no ({}, errno {e})", errno_name(e)),
            Answer::NotTried => "not tried".into(),
        }
    }
}

impl Serialize for Answer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Answer::Yes => s.serialize_str("yes"),
            Answer::No(e) => s.serialize_str(errno_name(*e)),
            Answer::NotTried => s.serialize_str("not-tried"),
        }
    }
}

/// The symbolic name of the errnos a probe meets.
pub fn errno_name(e: i32) -> &'static str {
    match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EACCES => "EACCES",
        libc::EBUSY => "EBUSY",
        libc::EINVAL => "EINVAL",
        libc::ENOSPC => "ENOSPC",
        libc::ENOSYS => "ENOSYS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EFAULT => "EFAULT",
        libc::ESRCH => "ESRCH",
        libc::EROFS => "EROFS",
        libc::EUSERS => "EUSERS",
        libc::ENODEV => "ENODEV",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EBADF => "EBADF",
        libc::EIO => "EIO",
        libc::ENOMEM => "ENOMEM",
        libc::EMFILE => "EMFILE",
        libc::EAGAIN => "EAGAIN",
        libc::EXDEV => "EXDEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::ELOOP => "ELOOP",
        libc::EEXIST => "EEXIST",
        _ => "an unnamed errno",
    }
}

/// Namespaces the probe could make, in a child of its own.
#[derive(Clone, Debug, Serialize)]
pub struct Namespaces {
    /// `unshare(CLONE_NEWUSER)`.
    pub user: Answer,
    /// `unshare(CLONE_NEWNS)`, inside the new user namespace when `user` is yes (where
    /// AppArmor's `apparmor_restrict_unprivileged_userns` shows itself: the user namespace is
    /// made, but has no capability to make more), else directly.
    pub mount: Answer,
    /// `unshare(CLONE_NEWPID)`, likewise.
    pub pid: Answer,
    /// `unshare(CLONE_NEWNET)`, likewise.
    pub net: Answer,
    /// The sysctls that decide `user`: `user.max_user_namespaces`,
    /// `kernel.unprivileged_userns_clone` (Debian's), and
    /// `kernel.apparmor_restrict_unprivileged_userns` (Ubuntu 23.10+), where present.
    pub max_user_namespaces: Option<u64>,
    /// `kernel.unprivileged_userns_clone`, where the kernel has it.
    pub unprivileged_userns_clone: Option<u64>,
    /// `kernel.apparmor_restrict_unprivileged_userns`, where the kernel has it.
    pub apparmor_restrict_unprivileged_userns: Option<u64>,
}

/// Landlock.
#[derive(Clone, Debug, Serialize)]
pub struct Landlock {
    /// The ABI version (1 is Linux 5.13; 5 is 6.10, with the device-ioctl right; 6 adds scopes,
    /// 7 logging), or `None`.
    pub abi: Option<i32>,
    /// Why not: `EOPNOTSUPP` built in but not enabled (`lsm=` on the kernel's command line),
    /// `ENOSYS` not built, `EPERM`/other from a filter above.
    pub error: Option<Answer>,
}

/// Seccomp: the user-notification action, its flags, and filters above us.
#[derive(Clone, Debug, Serialize)]
pub struct Seccomp {
    /// `SECCOMP_GET_ACTION_AVAIL` of `SECCOMP_RET_USER_NOTIF`.
    pub user_notification: Answer,
    /// A filter with a listener and `SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV` (5.19+); `EINVAL`:
    /// flag unknown; `EBUSY`: a filter above already has a listener.
    pub wait_killable_recv: Answer,
    /// A filter with a listener and no other flag: `EBUSY` when a filter above has one (warden
    /// runs under another supervisor, or inside warden).
    pub listener: Answer,
    /// `SECCOMP_USER_NOTIF_FLAG_CONTINUE` (5.5+), asked of the listener.
    pub continue_flag: Answer,
    /// `SECCOMP_ADDFD_FLAG_SEND` (5.14+), asked of the listener.
    pub addfd_send: Answer,
    /// `Seccomp:` of `/proc/self/status`: 0 none, 1 strict, 2 filters above us.
    pub mode: Option<u32>,
    /// `Seccomp_filters:` of `/proc/self/status`: how many filters are above us.
    pub filters: Option<u32>,
}

/// The calls the agent uses to read a client's arguments and take its descriptors, each tried
/// on a child of the probe's own (as the agent does on its clients).
#[derive(Clone, Debug, Serialize)]
pub struct Process {
    /// `pidfd_open`.
    pub pidfd_open: Answer,
    /// `pidfd_getfd` (the agent takes a client's descriptors with it).
    pub pidfd_getfd: Answer,
    /// `pidfd_open(tid, PIDFD_THREAD)` (6.9+).
    pub pidfd_thread: Answer,
    /// `process_vm_readv` (the agent's copy of a client's arguments).
    pub process_vm_readv: Answer,
    /// A read of `/proc/PID/mem`: the agent's route when `process_vm_readv` is refused.
    pub proc_pid_mem: Answer,
}

/// The mount API and the file systems the view is built from.
#[derive(Clone, Debug, Serialize)]
pub struct Mounts {
    /// `openat2` (5.6+).
    pub openat2: Answer,
    /// `fsopen("tmpfs")` in the probe's own user and mount namespace (or, without user
    /// namespaces, here: `EPERM` without privilege still says the call exists).
    pub fsopen: Answer,
    /// `overlay` in `/proc/filesystems` (a module may still load on demand).
    pub overlayfs: bool,
    /// Whether a detached mount tree accepts mounts: in a user and mount namespace of its own,
    /// the probe `fsmount`s a tmpfs, `open_tree(OPEN_TREE_CLONE)`s `/` and `move_mount`s that
    /// into a directory of the detached tmpfs. Works on 6.15+; `EINVAL` before.
    pub detached_tree_accepts_mounts: Answer,
}

/// cgroups.
#[derive(Clone, Debug, Serialize)]
pub struct Cgroups {
    /// The unified hierarchy is mounted and this process is in it.
    pub v2: bool,
    /// v1 controllers with a hierarchy mounted.
    pub v1_controllers: Vec<String>,
    /// This process's own v2 group's directory.
    pub own: Option<String>,
    /// Its `cgroup.controllers`.
    pub controllers: Vec<String>,
    /// Its `cgroup.subtree_control`: what a child group of warden's gets.
    pub subtree_control: Vec<String>,
    /// Whether a child group may be made there (made and removed at once).
    pub may_create_child: Answer,
    /// What a run's limits and accounting would use here (`cgroup-v2`, `cgroup-v1`), found by
    /// making a run's group as `warden run` does and removing it; `None`: rlimits and rusage.
    pub warden_uses: Option<String>,
}

/// Everything [`Probe::run`] learnt about this host.
#[derive(Clone, Debug, Serialize)]
pub struct Probe {
    /// `uname -r`.
    pub kernel: String,
    /// The probing process's effective uid.
    pub uid: u32,
    /// Namespaces.
    pub namespaces: Namespaces,
    /// Landlock.
    pub landlock: Landlock,
    /// Seccomp.
    pub seccomp: Seccomp,
    /// The agent's process calls.
    pub process: Process,
    /// The mount API.
    pub mounts: Mounts,
    /// cgroups.
    pub cgroups: Cgroups,
}

/// A byte the idle child holds at the same address as we do (it is a fork): what the memory
/// probes read.
static MARK: [u8; 8] = *b"warden!\0";

impl Probe {
    /// Asks the kernel. Needs no privilege; makes and removes at most one empty cgroup.
    pub fn run() -> Probe {
        let release = rustix::system::uname();
        let (namespaces, fsopen, detached) = namespaces();
        Probe {
            kernel: release.release().to_string_lossy().into_owned(),
            uid: rustix::process::geteuid().as_raw(),
            namespaces,
            landlock: match probe::landlock_abi() {
                Ok(abi) => Landlock {
                    abi: Some(abi),
                    error: None,
                },
                Err(e) => Landlock {
                    abi: None,
                    error: Some(Answer::No(probe::errno(&e))),
                },
            },
            seccomp: seccomp(),
            process: process(),
            mounts: mounts(fsopen, detached),
            cgroups: cgroups(),
        }
    }

    /// Whether warden can make the namespaces its sandbox needs (user, mount, PID).
    pub fn has_sandbox_namespaces(&self) -> bool {
        let n = &self.namespaces;
        n.user.yes() && n.mount.yes() && n.pid.yes()
    }

    /// Whether the agent can work here: user notification with a listener of our own, and
    /// the answer flags it relies on.
    pub fn has_agent(&self) -> bool {
        let s = &self.seccomp;
        s.user_notification.yes() && s.listener.yes() && s.continue_flag.yes() && s.addfd_send.yes()
    }

    /// Whether the agent can read a client's arguments by some route.
    pub fn reads_arguments(&self) -> bool {
        self.process.process_vm_readv.yes() || self.process.proc_pid_mem.yes()
    }

    /// Whether a view (the sandbox's own file system) can be built.
    pub fn has_view(&self) -> bool {
        self.has_sandbox_namespaces() && self.mounts.fsopen.yes()
    }

    /// What each run mode enforces on this host.
    pub fn modes(&self) -> Vec<Mode> {
        let landlock = match self.landlock.abi {
            Some(abi) if abi >= 6 => {
                format!("Landlock ABI {abi}: the kernel's second lock on files")
            }
            Some(abi) => {
                // What warden asks of Landlock (ABI 7) that this ABI lacks; the agent decides
                // those calls alone (and the fast path, which needs them all, is off).
                let lacks: Vec<&str> = [
                    (3, "truncate"),
                    (4, "TCP ports (the agent makes every socket anyway)"),
                    (5, "device ioctls"),
                    (6, "signal and abstract-socket scopes (the PID and network namespaces, or the agent)"),
                ]
                .iter()
                .filter(|(since, _)| abi < *since)
                .map(|(_, what)| *what)
                .collect();
                format!(
                    "Landlock ABI {abi}: the kernel's second lock on files, without {}; the \
                     agent decides every file call",
                    lacks.join(", ")
                )
            }
            None => "no Landlock: the agent decides every file call alone, and execve and \
                     executable mappings are held by the view's noexec mounts; a policy whose \
                     exec rules a mount cannot say, or a run handed a directory of the host's, \
                     is refused (--require landlock refuses every run)"
                .into(),
        };
        let landlock_missing = self.landlock.abi.is_none();
        let agent = if !self.has_agent() {
            "no agent: warden cannot start (it needs seccomp user notification with a listener of its own)".to_owned()
        } else if !self.reads_arguments() {
            "agent: every call naming a path or address is refused (neither process_vm_readv nor /proc/PID/mem reads the program's memory)".to_owned()
        } else {
            "agent: network, unix sockets, name patterns and what the kernel cannot decide"
                .to_owned()
        };
        let limits = match &self.cgroups.warden_uses {
            Some(v) => format!("limits and accounting: {v}"),
            None => "limits and accounting: rlimits and rusage (no delegated cgroup)".into(),
        };
        let net = if self.namespaces.net.yes() {
            "a private network namespace (loopback only unless the policy allows more)"
        } else {
            "no private network namespace"
        };
        let mut modes = Vec::new();
        let view_ok = self.has_view();
        modes.push(Mode {
            name: "default (a view of its own + Landlock + agent)".into(),
            available: view_ok && self.has_agent(),
            enforces: if view_ok {
                vec![
                    "a file system built from the policy (mount namespace): paths it does not name do not exist, noexec where it gives no exec".into(),
                    landlock.clone(),
                    agent.clone(),
                    "its own PID namespace: nothing outlives it".into(),
                    net.into(),
                    limits.clone(),
                ]
            } else {
                vec![format!(
                    "not here: {} (warden falls back to the host's tree, as --view off)",
                    self.view_missing()
                )]
            },
        });
        modes.push(Mode {
            name: "--view off (the host's tree + Landlock + agent)".into(),
            available: self.has_sandbox_namespaces() && self.has_agent() && !landlock_missing,
            enforces: if landlock_missing {
                vec![
                    "not here: no Landlock, and only a view's noexec mounts would hold execve; \
                      warden refuses a run without a view"
                        .into(),
                ]
            } else if self.has_sandbox_namespaces() {
                vec![
                    "the agent decides every path on the host's tree".into(),
                    landlock.clone(),
                    agent.clone(),
                    "its own PID namespace: nothing outlives it".into(),
                    net.into(),
                    limits.clone(),
                ]
            } else {
                vec![format!("not here: {}", self.userns_missing())]
            },
        });
        modes.push(Mode {
            name: "without user namespaces (a run mode being added; today warden needs them)"
                .into(),
            available: self.has_agent() && !landlock_missing,
            enforces: vec![
                "the agent decides every path and address on the host's tree".into(),
                landlock,
                agent,
                "no PID namespace: processes are tracked by pidfds and the cgroup".into(),
                "no private network namespace: the agent decides every socket call".into(),
                limits,
            ],
        });
        modes
    }

    fn userns_missing(&self) -> String {
        let n = &self.namespaces;
        if !n.user.yes() {
            format!(
                "user namespaces are refused ({})",
                n.user.errno_name().unwrap_or("not tried")
            )
        } else if !n.mount.yes() || !n.pid.yes() {
            format!(
                "a user namespace is made but may not make more (mount: {}, PID: {})",
                n.mount.describe(),
                n.pid.describe()
            )
        } else {
            "nothing".into()
        }
    }

    fn view_missing(&self) -> String {
        if !self.has_sandbox_namespaces() {
            self.userns_missing()
        } else {
            format!(
                "the new mount API is missing (fsopen: {})",
                self.mounts.fsopen.describe()
            )
        }
    }

    /// How to get what this host does not give: one line each, for a person.
    pub fn advice(&self) -> Vec<String> {
        let mut out = Vec::new();
        let n = &self.namespaces;
        if !n.user.yes() {
            match n.user {
                Answer::No(libc::ENOSPC) => out.push(
                    "User namespaces are switched off (user.max_user_namespaces=0): \
                     `sysctl -w user.max_user_namespaces=15000` (and in /etc/sysctl.d to keep it)."
                        .into(),
                ),
                Answer::No(libc::EPERM) if n.unprivileged_userns_clone == Some(0) => out.push(
                    "Unprivileged user namespaces are off (kernel.unprivileged_userns_clone=0): \
                     `sysctl -w kernel.unprivileged_userns_clone=1`."
                        .into(),
                ),
                Answer::No(libc::EPERM) => out.push(
                    "A seccomp profile refuses user namespaces (Docker's and Kubernetes' default \
                     profiles do): run the container with `--security-opt seccomp=unconfined`, or \
                     a profile that allows clone/unshare with CLONE_NEWUSER, or with \
                     `--cap-add SYS_ADMIN`; in Kubernetes, a securityContext.seccompProfile of \
                     type Unconfined or a Localhost profile that allows them."
                        .into(),
                ),
                _ => out.push(format!(
                    "User namespaces cannot be made here ({}).",
                    n.user.describe()
                )),
            }
        } else if !n.mount.yes() || !n.pid.yes() {
            if n.apparmor_restrict_unprivileged_userns == Some(1) {
                out.push(
                    "AppArmor restricts unprivileged user namespaces \
                     (kernel.apparmor_restrict_unprivileged_userns=1, Ubuntu 23.10+): give warden \
                     a profile of its own (/etc/apparmor.d/warden: `abi <abi/4.0>, include \
                     <tunables/global> profile warden /usr/local/bin/warden flags=(unconfined) \
                     { userns, }`, then `apparmor_parser -r /etc/apparmor.d/warden`), or \
                     `sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`."
                        .into(),
                );
            } else {
                out.push(format!(
                    "A user namespace is made but cannot make more ({}); a seccomp profile or an \
                     LSM refuses it.",
                    self.userns_missing()
                ));
            }
        }
        match self.landlock.error {
            Some(Answer::No(libc::EOPNOTSUPP)) => out.push(
                "Landlock is built in but not enabled: add `landlock` to the kernel's `lsm=` \
                 (e.g. lsm=landlock,lockdown,yama,integrity,apparmor) and reboot."
                    .into(),
            ),
            Some(Answer::No(libc::ENOSYS)) => out.push(
                "This kernel has no Landlock (5.13+ with CONFIG_SECURITY_LANDLOCK); \
                 the agent decides files alone."
                    .into(),
            ),
            Some(a) => out.push(format!(
                "Landlock refused to answer ({}); a seccomp profile above warden may refuse \
                 landlock_* calls.",
                a.describe()
            )),
            None => {}
        }
        if self.seccomp.listener == Answer::No(libc::EBUSY)
            || self.seccomp.wait_killable_recv == Answer::No(libc::EBUSY)
        {
            out.push(
                "Another supervisor's seccomp listener is above warden (inside warden, or \
                 another sandbox using user notification): the kernel allows one listener per \
                 filter chain, so warden cannot start here. Run warden outside it."
                    .into(),
            );
        } else if self.seccomp.listener == Answer::No(libc::EPERM)
            && self.seccomp.filters.is_some_and(|n| n > 0)
        {
            out.push(
                "A seccomp filter above warden refuses seccomp filters with a listener (warden \
                 inside warden, or a container's profile): run warden outside it, or with a \
                 profile that allows seccomp(SECCOMP_SET_MODE_FILTER, \
                 SECCOMP_FILTER_FLAG_NEW_LISTENER)."
                    .into(),
            );
        } else if !self.seccomp.user_notification.yes() || !self.seccomp.listener.yes() {
            out.push(format!(
                "Seccomp user notification is missing (action: {}, listener: {}): warden needs \
                 Linux 5.14+ and a profile that allows seccomp(SECCOMP_SET_MODE_FILTER).",
                self.seccomp.user_notification.describe(),
                self.seccomp.listener.describe()
            ));
        }
        if !self.process.process_vm_readv.yes() && self.process.proc_pid_mem.yes() {
            out.push(format!(
                "process_vm_readv is refused ({}): the agent reads arguments through \
                 /proc/PID/mem instead.",
                self.process.process_vm_readv.describe()
            ));
        } else if !self.reads_arguments() {
            out.push(
                "Neither process_vm_readv nor /proc/PID/mem reads a child's memory here \
                 (a container profile, or Yama's ptrace_scope=3): every delegated call is \
                 refused. Allow process_vm_readv in the profile, or ptrace of children."
                    .into(),
            );
        }
        if !self.process.pidfd_getfd.yes() {
            out.push(format!(
                "pidfd_getfd is refused ({}): warden takes its listener from a helper instead, \
                 and the agent looks the program's descriptors up through /proc/PID/fd, which \
                 serves every call that looks a path up through a descriptor or changes its \
                 file, and sockets the agent made under net-allow IP rules; the other calls that \
                 act on a descriptor's own open file (connect, bind, accept or send on a unix \
                 socket or one of the private network, inotify watches, descriptors passed on) \
                 are refused. \
                 Allow pidfd_getfd in the container's seccomp profile for those (Docker's \
                 default allows it from 5.6 with CAP_SYS_PTRACE only: `--cap-add SYS_PTRACE`).",
                self.process.pidfd_getfd.describe()
            ));
        }
        if self.seccomp.wait_killable_recv == Answer::No(libc::EINVAL)
            && self.seccomp.listener.yes()
        {
            out.push(
                "This kernel has no SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19+): warden \
                 installs its listener without it, serves each thread's creating calls one at a \
                 time and undoes a file or directory made for a call a signal interrupted; a rename, \
                 unlink or connect so interrupted stays done (docs/fallbacks.md). A newer kernel \
                 gives the exact behaviour."
                    .into(),
            );
        }
        let no_cgroup = self.cgroups.warden_uses.is_none();
        if no_cgroup && self.cgroups.v2 && !self.cgroups.may_create_child.yes() {
            out.push(
                "warden's cgroup is not delegated to you, so limits fall back to rlimits: run it \
                 in a delegated unit, e.g. `systemd-run --user --scope -p Delegate=yes warden \
                 run ...`, or a service with `Delegate=yes`."
                    .into(),
            );
        } else if no_cgroup
            && self.cgroups.v2
            && !(self.cgroups.subtree_control.iter().any(|c| c == "memory")
                && self.cgroups.subtree_control.iter().any(|c| c == "pids"))
        {
            out.push(
                "warden's cgroup does not pass the memory and pids controllers to its children \
                 (cgroup.subtree_control): start warden in a unit with `Delegate=yes` \
                 (`systemd-run --user --scope -p Delegate=yes ...`) or a group of its own whose \
                 parent enables them."
                    .into(),
            );
        }
        if self.has_sandbox_namespaces() && !self.mounts.detached_tree_accepts_mounts.yes() {
            out.push(
                "A detached mount tree does not accept mounts before Linux 6.15: warden builds \
                 the view in its namespace instead (nothing to do)."
                    .into(),
            );
        }
        out
    }
}

/// Whether this process may take a descriptor with `pidfd_getfd`, asked of itself: a seccomp
/// profile that refuses the call (Docker's default without `CAP_SYS_PTRACE`) refuses it
/// whatever the target, and the kernel lets a process take its own. Three system calls, for a
/// run's start ([`Process::pidfd_getfd`] asks a child, for `warden doctor`).
pub fn pidfd_getfd_here() -> bool {
    use rustix::process::{getpid, pidfd_open, PidfdFlags};
    let Ok(me) = pidfd_open(getpid(), PidfdFlags::empty()) else {
        return false;
    };
    crate::sys::unotify::pidfd_getfd(me.as_fd(), std::os::fd::AsRawFd::as_raw_fd(&me)).is_ok()
}

/// How many seccomp filters this process runs under (`Seccomp_filters:` of `/proc/self/status`;
/// with an older kernel that lacks the field, 1 when `Seccomp:` says filter mode). One read, for
/// a failure's message.
pub fn seccomp_filters_above() -> Option<u32> {
    let status = crate::sys::process::read_proc("/proc/self/status").ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u32>().ok())
    };
    field("Seccomp_filters:").or_else(|| field("Seccomp:").map(|m| u32::from(m == 2)))
}

/// One run mode and what it enforces here.
#[derive(Clone, Debug, Serialize)]
pub struct Mode {
    /// The mode, as a person asks for it.
    pub name: String,
    /// Whether warden can run in it here.
    pub available: bool,
    /// What it enforces, one line each (or why it is not here).
    pub enforces: Vec<String>,
}

fn read_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The namespaces, and the same child's answers for `fsopen` and the detached tree (slots).
fn namespaces() -> (Namespaces, i32, i32) {
    // Slots: user, mount, pid, net, fsopen, detached tree.
    let answers = probe::in_child(|a| {
        let uid = rustix::process::geteuid().as_raw();
        let gid = rustix::process::getegid().as_raw();
        let user = probe::unshare_in_probe(libc::CLONE_NEWUSER);
        if user.is_ok() {
            // Map our ids, as warden does: files made in the namespace (the detached tree's
            // directory) need an owner that maps (EOVERFLOW otherwise).
            let _ = write_map("/proc/self/setgroups", b"deny", 0);
            let _ = write_map("/proc/self/uid_map", b"0 ", uid);
            let _ = write_map("/proc/self/gid_map", b"0 ", gid);
        }
        a[0] = slot(user);
        for (i, flag) in [libc::CLONE_NEWNS, libc::CLONE_NEWPID, libc::CLONE_NEWNET]
            .into_iter()
            .enumerate()
        {
            a[1 + i] = slot(probe::unshare_in_probe(flag));
        }
        a[4] = slot(rustix::mount::fsopen(
            "tmpfs",
            rustix::mount::FsOpenFlags::FSOPEN_CLOEXEC,
        ));
        if a[1] == 0 && a[4] == 0 {
            a[5] = slot(detached_tree());
        }
    });
    let a = answers.unwrap_or([libc::ETIMEDOUT; probe::ANSWERS]);
    let namespaces = Namespaces {
        user: Answer::from_slot(a[0]),
        mount: Answer::from_slot(a[1]),
        pid: Answer::from_slot(a[2]),
        net: Answer::from_slot(a[3]),
        max_user_namespaces: read_number("/proc/sys/user/max_user_namespaces"),
        unprivileged_userns_clone: read_number("/proc/sys/kernel/unprivileged_userns_clone"),
        apparmor_restrict_unprivileged_userns: read_number(
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
        ),
    };
    (namespaces, a[4], a[5])
}

/// A probe child's answer slot: 0, or the errno (an `io::Error` from a raw errno allocates
/// nothing).
fn slot<T, E: Into<std::io::Error>>(r: Result<T, E>) -> i32 {
    match r {
        Ok(_) => 0,
        Err(e) => probe::errno(&e.into()),
    }
}

/// Writes `prefix`, then (unless `prefix` is `deny`) `id` and " 1", into a `/proc/self` id-map
/// file: on the stack, for a probe child that must not allocate.
fn write_map(path: &str, prefix: &[u8], id: u32) -> Result<(), rustix::io::Errno> {
    let mut buf = [0u8; 32];
    let mut len = prefix.len();
    buf[..len].copy_from_slice(prefix);
    if prefix != b"deny" {
        let mut digits = [0u8; 10];
        let mut n = id;
        let mut count = 0;
        loop {
            digits[count] = b'0' + (n % 10) as u8;
            count += 1;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for d in digits[..count].iter().rev() {
            buf[len] = *d;
            len += 1;
        }
        buf[len..len + 2].copy_from_slice(b" 1");
        len += 2;
    }
    let fd = rustix::fs::open(
        path,
        rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    rustix::io::write(&fd, &buf[..len]).map(drop)
}

/// In a child with its own user and mount namespace: a detached tmpfs, a clone of `/`, and a
/// `move_mount` of the clone into the tmpfs.
fn detached_tree() -> Result<(), rustix::io::Errno> {
    use rustix::mount::{
        fsconfig_create, fsmount, fsopen, move_mount, open_tree, FsMountFlags, FsOpenFlags,
        MountAttrFlags, MoveMountFlags, OpenTreeFlags,
    };
    let fs = fsopen("tmpfs", FsOpenFlags::FSOPEN_CLOEXEC)?;
    fsconfig_create(&fs)?;
    let root = fsmount(&fs, FsMountFlags::FSMOUNT_CLOEXEC, MountAttrFlags::empty())?;
    rustix::fs::mkdirat(&root, "d", rustix::fs::Mode::from_raw_mode(0o755))?;
    let tree = open_tree(
        rustix::fs::CWD,
        "/",
        OpenTreeFlags::OPEN_TREE_CLONE
            | OpenTreeFlags::AT_RECURSIVE
            | OpenTreeFlags::OPEN_TREE_CLOEXEC,
    )?;
    move_mount(
        &tree,
        "",
        &root,
        "d",
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )
}

/// Whether a filter with a listener can be installed here (tried in a child): `Err` with the
/// kernel's errno when not (`EBUSY`: a supervisor's listener above warden; `EPERM`: a filter
/// above refuses filters, as warden's own does inside warden). Without it no mode of warden can
/// start; asked only where a start is already degraded ([`crate::confine::hostns`]).
pub fn listener_possible() -> Result<(), i32> {
    let answers = probe::in_child(|a| {
        a[0] = match probe::install_allow_all_listener(0) {
            Ok(_) => 0,
            Err(e) => probe::errno(&e),
        }
    });
    match answers.map(|a| a[0]) {
        Ok(0) => Ok(()),
        Ok(e) => Err(e),
        Err(_) => Err(libc::ETIMEDOUT),
    }
}

fn seccomp() -> Seccomp {
    // Slots: wait-killable-recv, listener, continue, addfd-send.
    let answers = probe::in_child(|a| {
        let flag = libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV as u32;
        let (wkr, listener) = match probe::install_allow_all_listener(flag) {
            Ok(fd) => (0, Ok(fd)),
            Err(e) => {
                let wkr = probe::errno(&e);
                (wkr, probe::install_allow_all_listener(0))
            }
        };
        a[0] = wkr;
        match listener {
            Ok(fd) => {
                a[1] = 0;
                a[2] = probe::answer_flag_errno(fd.as_fd(), true);
                a[3] = probe::answer_flag_errno(fd.as_fd(), false);
            }
            Err(e) => a[1] = probe::errno(&e),
        }
    });
    let a = answers.unwrap_or([libc::ETIMEDOUT; probe::ANSWERS]);
    // ENOENT (no such notification) is the kernel's yes for the answer flags.
    let flag = |v: i32| match v {
        libc::ENOENT => Answer::Yes,
        0 => Answer::Yes,
        v => Answer::from_slot(v),
    };
    let status = crate::sys::process::read_proc("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u32>().ok())
    };
    Seccomp {
        user_notification: Answer::of(probe::user_notification_available()),
        wait_killable_recv: Answer::from_slot(a[0]),
        listener: Answer::from_slot(a[1]),
        continue_flag: flag(a[2]),
        addfd_send: flag(a[3]),
        mode: field("Seccomp:"),
        filters: field("Seccomp_filters:"),
    }
}

fn process() -> Process {
    use rustix::process::{pidfd_open, Pid, PidfdFlags};
    let tid = rustix::thread::gettid();
    let thread_flag = PidfdFlags::from_bits_retain(libc::O_EXCL as u32);
    let pidfd_thread = Answer::of(pidfd_open(tid, thread_flag));
    // A descriptor the child inherits at a number we know.
    let Ok(marker) = rustix::fs::open(
        "/",
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) else {
        return Process {
            pidfd_open: Answer::NotTried,
            pidfd_getfd: Answer::NotTried,
            pidfd_thread,
            process_vm_readv: Answer::NotTried,
            proc_pid_mem: Answer::NotTried,
        };
    };
    let child = match probe::idle_child() {
        Ok(pid) => pid,
        Err(e) => {
            let no = Answer::No(probe::errno(&e));
            return Process {
                pidfd_open: no,
                pidfd_getfd: no,
                pidfd_thread,
                process_vm_readv: no,
                proc_pid_mem: no,
            };
        }
    };
    let pid = Pid::from_raw(child).expect("a child's pid is positive");
    let pidfd = pidfd_open(pid, PidfdFlags::empty());
    let pidfd_getfd = match &pidfd {
        Ok(p) => Answer::of(crate::sys::unotify::pidfd_getfd(
            p.as_fd(),
            std::os::fd::AsRawFd::as_raw_fd(&marker),
        )),
        Err(_) => Answer::NotTried,
    };
    let addr = MARK.as_ptr() as u64;
    let mut buf = [0u8; 8];
    let process_vm_readv = match crate::sys::mem::read(child as u32, addr, &mut buf) {
        Ok(8) if buf == MARK => Answer::Yes,
        Ok(_) => Answer::No(libc::EFAULT),
        Err(e) => Answer::No(probe::errno(&e)),
    };
    let mut buf = [0u8; 8];
    let path = format!("/proc/{child}/mem");
    let proc_pid_mem = match std::fs::File::open(&path)
        .and_then(|f| crate::sys::mem::read_through(&f, addr, &mut buf))
    {
        Ok(8) if buf == MARK => Answer::Yes,
        Ok(_) => Answer::No(libc::EFAULT),
        Err(e) => Answer::No(probe::errno(&e)),
    };
    probe::kill_and_reap(child);
    Process {
        pidfd_open: Answer::of(pidfd),
        pidfd_getfd,
        pidfd_thread,
        process_vm_readv,
        proc_pid_mem,
    }
}

fn mounts(fsopen_in_child: i32, detached: i32) -> Mounts {
    // Without a mount namespace of its own the probe asks here: EPERM still says the call
    // exists.
    let fsopen = if fsopen_in_child == -1 {
        Answer::of(rustix::mount::fsopen(
            "tmpfs",
            rustix::mount::FsOpenFlags::FSOPEN_CLOEXEC,
        ))
    } else {
        Answer::from_slot(fsopen_in_child)
    };
    Mounts {
        openat2: Answer::of(rustix::fs::openat2(
            rustix::fs::CWD,
            "/",
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
            rustix::fs::ResolveFlags::empty(),
        )),
        fsopen,
        overlayfs: std::fs::read_to_string("/proc/filesystems").is_ok_and(|t| {
            t.lines()
                .any(|l| l.split_whitespace().last() == Some("overlay"))
        }),
        detached_tree_accepts_mounts: Answer::from_slot(detached),
    }
}

fn words(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn cgroups() -> Cgroups {
    use crate::limits::cgroup::{Cgroup, CgroupLimits, Version};
    let warden_uses = match Cgroup::create(CgroupLimits::default()) {
        Ok(Some(cg)) => {
            cg.remove();
            Some(match cg.version() {
                Version::V2 => "cgroup-v2".to_owned(),
                Version::V1 => "cgroup-v1".to_owned(),
            })
        }
        _ => None,
    };
    let (own, v1_controllers) = crate::limits::cgroup::own_layout();
    let Some(dir) = own else {
        return Cgroups {
            v2: false,
            v1_controllers,
            own: None,
            controllers: Vec::new(),
            subtree_control: Vec::new(),
            may_create_child: Answer::NotTried,
            warden_uses,
        };
    };
    let child = dir.join(format!(
        "warden-doctor-{}-{:08x}",
        std::process::id(),
        crate::unique::rand32()
    ));
    let may_create_child = Answer::of(std::fs::create_dir(&child));
    if may_create_child.yes() {
        let _ = std::fs::remove_dir(&child);
    }
    Cgroups {
        v2: true,
        v1_controllers,
        controllers: words(&dir.join("cgroup.controllers")),
        subtree_control: words(&dir.join("cgroup.subtree_control")),
        own: Some(dir.to_string_lossy().into_owned()),
        may_create_child,
        warden_uses,
    }
}

#[cfg(test)]
mod tests;
