//! Starting the sandbox: one `clone` into fresh namespaces, then a tiny init that starts the
//! program and reports how it ended.
//!
//! ```text
//! warden (agent, outside)                     sandbox (new user/pid/ipc/uts/net namespaces)
//!   clone(NEW*, PIDFD) ───────────────────▶  init (pid 1): waits for "go"
//!   write uid_map/gid_map, send "go" ─────▶    builds the view, fork ─▶ program (pid 2):
//!   add the Landlock rules, send "ready" ──────────────────────────▶  chdir, close fds,
//!                                                       (waits for "ready") Landlock,
//!   recv listener  ◀──────────────────────────────────  no_new_privs, seccomp filter +
//!                                                       listener, send it
//!   start agent                                         execve (notified: agent checks, continues)
//!   recv "exit status" ◀────────────────────  init reaps everything, reports the program's status
//! ```
//!
//! Init has no seccomp filter but holds nothing: it closes every descriptor but its channel and
//! only waits. Unless asked to keep warden's terminal, init first gives up its controlling
//! terminal (`TIOCNOTTY`), so nothing in the sandbox has one. When it exits the kernel kills
//! every other process of the PID namespace, and it
//! has `PR_SET_PDEATHSIG(SIGKILL)`, so if warden dies the sandbox dies (invariant 7).

use crate::confine::landlock::Prepared;
use crate::confine::namespaces::{write_id_maps, IdMap, SANDBOX_NAMESPACES};
use crate::sys::process::{self, Cloned};
use crate::sys::seccomp::{self, Instruction};
use crate::sys::signals::SignalFd;
use crate::sys::usage::{Usage, USAGE_BYTES};
use rustix::net::{
    recvmsg, sendmsg, socketpair, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage,
    RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};
use rustix::process::Resource;
use rustix::thread::CpuSet;
use std::ffi::CString;
use std::io::{self, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::Arc;

/// What to run and as whom.
pub struct Command {
    /// Absolute path of the executable (looked up on PATH by the caller).
    pub program: CString,
    /// argv, including argv[0].
    pub argv: Vec<CString>,
    /// The environment, `NAME=VALUE` each.
    pub env: Vec<CString>,
    /// Starting directory.
    pub cwd: PathBuf,
    /// Ids inside and outside.
    pub ids: IdMap,
    /// Replacements for descriptors 0, 1 and 2 (`None`: warden's own is inherited).
    pub stdio: [Option<OwnedFd>; 3],
    /// Further descriptors of warden's that the program keeps, under the same numbers (3 and up;
    /// everything else is closed at exec).
    pub pass_fds: Vec<RawFd>,
    /// Resource limits set on the program before exec (every process it starts inherits them).
    pub rlimits: Vec<(Resource, u64)>,
    /// CPUs the whole sandbox runs on (`None`: wherever warden may).
    pub cpus: Option<CpuSet>,
    /// Keep warden's session and controlling terminal (`warden run --tty`). Otherwise the
    /// sandbox has no controlling terminal (it stays in warden's session), so `/dev/tty` (which would bypass
    /// `--stdout` and `--output-limit`) is `ENXIO` inside, as for any process without a terminal.
    pub keep_terminal: bool,
    /// `--wx`: the program and everything it starts may execute only what is mapped from a
    /// file on an exec mount. Set with `PR_SET_MDWE` (`PR_MDWE_REFUSE_EXEC_GAIN`, inherited
    /// across fork and exec, never cleared) before the filters, and a stacked filter refuses
    /// `shmat(SHM_EXEC)`; the agent refuses memfds ([`crate::agent::Confinement::wx`]), the
    /// one object that could be mapped both executable and writable through two mappings.
    pub deny_exec_memory: bool,
    /// The sandbox's own file system view, built by init in a fresh mount namespace before the
    /// program starts (`None`: the sandbox sees the host's tree, and the agent decides).
    pub view: Option<warden_policy::view::ViewPlan>,
    /// Whether the sandbox gets its namespaces. `false` on a host that refuses them
    /// (`crate::confine::hostns`): no new namespace at all, init is the subreaper of the
    /// sandbox's processes instead of a PID namespace's init, no id maps, no private network.
    pub namespaces: bool,
    /// Without namespaces, and without a net rule: no socket but unix and netlink
    /// ([`crate::filter::hostns_denials`]), as the private network namespace gave.
    pub no_network: bool,
}

/// Where a setup step in the sandbox failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Stage {
    /// Entering the starting directory.
    Chdir = 1,
    /// Applying Landlock.
    Landlock = 2,
    /// Setting no_new_privs.
    NoNewPrivs = 3,
    /// Installing the seccomp filter.
    Seccomp = 4,
    /// Sending the listener to warden.
    Handoff = 5,
    /// `execve` itself (the policy or the file said no).
    Exec = 6,
    /// Starting the program from init.
    Fork = 7,
    /// Setting up descriptors, resource limits or CPU affinity.
    Resources = 8,
    /// Building the sandbox's file system view.
    View = 9,
    /// Dropping the program's capabilities.
    Capabilities = 10,
    /// Making the sandbox's network namespace.
    Network = 11,
    /// Refusing executable memory (`--wx`).
    ExecMemory = 12,
}

impl Stage {
    fn from_u8(v: u8) -> Option<Stage> {
        Some(match v {
            1 => Stage::Chdir,
            2 => Stage::Landlock,
            3 => Stage::NoNewPrivs,
            4 => Stage::Seccomp,
            5 => Stage::Handoff,
            6 => Stage::Exec,
            7 => Stage::Fork,
            8 => Stage::Resources,
            9 => Stage::View,
            10 => Stage::Capabilities,
            11 => Stage::Network,
            12 => Stage::ExecMemory,
            _ => return None,
        })
    }
}

/// A failure to start the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// clone() with namespaces failed.
    #[error("cannot create the sandbox's namespaces: {0}{hint}", hint = clone_hint(.0))]
    Clone(#[source] io::Error),
    /// Writing the id maps failed.
    #[error("cannot write the user-namespace id maps: {0}")]
    IdMap(#[source] io::Error),
    /// The channel to the sandbox failed.
    #[error("lost contact with the sandbox while starting it: {0}")]
    Channel(#[source] io::Error),
    /// Adding the Landlock rules failed.
    #[error("{0}")]
    Ruleset(String),
    /// Moving the sandbox into its cgroup failed.
    #[error("cannot move the sandbox into its cgroup: {0}")]
    Cgroup(#[source] io::Error),
    /// A step inside the sandbox failed before the program ran.
    #[error("{stage:?} failed inside the sandbox: {}{source}", if detail.is_empty() { String::new() } else { format!("{detail}: ") })]
    Setup {
        /// Which step.
        stage: Stage,
        /// What the step was doing, when it said.
        detail: String,
        /// The errno it got.
        #[source]
        source: io::Error,
    },
}

fn clone_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::ENOSPC) => {
            "; unprivileged user namespaces may be disabled (check /proc/sys/user/max_user_namespaces \
             and kernel.unprivileged_userns_clone or the AppArmor userns restriction)"
        }
        _ => "",
    }
}

/// A started sandbox: the program is running, or about to exec under the agent.
pub struct Launched {
    /// pid of the sandbox's init, in warden's PID namespace.
    pub init_pid: i32,
    /// pidfd of init.
    pub init_pidfd: OwnedFd,
    /// The listener for the program's notifications.
    pub listener: OwnedFd,
    /// The root directory the program's first process sees: opened through that process while
    /// it waited for [`MSG_TAKEN`] (its pid named it then; once it runs, it may be gone before
    /// anybody asks), or opened by that process and sent with its listener.
    program_root: OwnedFd,
    /// warden's end of the channel; [`Launched::wait`] reads the outcome from it.
    channel: OwnedFd,
    /// Whether init has been reaped (its pid may then name another process).
    reaped: std::sync::atomic::AtomicBool,
    /// Whether init is a PID namespace's, whose death kills every process of the sandbox
    /// (without namespaces it is only their subreaper: [`Launched::kill`]).
    namespaces: bool,
    /// Whether the program's filter waits killably (`WAIT_KILLABLE_RECV`, Linux 5.19): when
    /// not, a signal interrupts a call the agent is serving, and the call restarts
    /// ([`crate::sys::seccomp::install_with_listener`]).
    pub wait_killable: bool,
}

/// The owner of a started sandbox: dropping it kills the sandbox and reaps init, on every way
/// out of a run (an error return included), whoever else still holds the shared
/// [`Launched`] (the limits' watchers and the output copiers only signal it).
pub struct Sandbox(Arc<Launched>);

impl Sandbox {
    /// The sandbox, for those who signal it or wait on it.
    pub fn shared(&self) -> Arc<Launched> {
        Arc::clone(&self.0)
    }
}

impl std::ops::Deref for Sandbox {
    type Target = Launched;
    fn deref(&self) -> &Launched {
        &self.0
    }
}

impl Sandbox {
    /// The sandbox once init has reported the program's end with every other process of the
    /// sandbox reaped (and has been killed, or exits of itself after its report): only init's
    /// exit is left, which takes its namespaces down and waits on the kernel for that (each
    /// mount namespace's unmounting waits for RCU grace periods, several hundred microseconds
    /// in all).
    pub fn exiting(self) -> Exiting {
        Exiting { _sandbox: self }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.0.kill();
        let _ = self.0.reap();
    }
}

/// A sandbox whose init is exiting and holds nothing of the sandbox's any more
/// ([`Sandbox::exiting`]). Dropping it waits for init and reaps it; a process that ends while
/// it still holds it leaves init's end to the kernel: init, reparented to the system's
/// reaper (or the caller's subreaper), finishes its exit there, as bubblewrap's init does.
pub struct Exiting {
    _sandbox: Sandbox,
}

impl crate::limits::Stoppable for Launched {
    fn terminate(&self) {
        Launched::terminate(self);
    }
    fn kill(&self) {
        Launched::kill(self);
    }
    fn wait_gone(&self) {
        Launched::wait_gone(self);
    }
}

/// What [`Launched::wait`] saw.
#[derive(Clone, Copy, Debug)]
pub struct Ended {
    /// How the program ended.
    pub outcome: Outcome,
    /// What the whole sandbox used, when init reported the program's end: init's own usage
    /// and that of every process it reaped, which by then is every process but itself.
    pub usage: Option<Usage>,
    /// The first stop signal taken while waiting, if any (the sandbox was killed for it).
    pub signal: Option<i32>,
}

/// How the program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// exit(code).
    Exited(i32),
    /// Killed by a signal.
    Signaled(i32),
    /// A setup step or execve failed with this errno before the program ran.
    Failed(Stage, i32),
    /// init vanished without a report (killed from outside).
    Lost,
}

/// How long [`Launched::kill`] waits for an init without a PID namespace to end the sandbox's
/// processes itself before it is killed.
const KILL_GRACE_MS: i64 = 250;

const MSG_GO: u8 = b'G';
const MSG_READY: u8 = b'R';
const MSG_LISTENER: u8 = b'L';
/// warden holds the listener: the program may exec (an exec the kernel decides would
/// otherwise close the only copy, and every call the filter notifies would fail with ENOSYS).
/// Only when warden took it with `pidfd_getfd`; a listener sent with its message
/// (`SCM_RIGHTS`, with the root the program sees) is held by the message until warden reads it.
const MSG_TAKEN: u8 = b'T';
const MSG_FAILED: u8 = b'E';
/// The program's status (4 bytes), then what the sandbox used ([`Usage::to_bytes`]).
const MSG_STATUS: u8 = b'S';
const STATUS_LEN: usize = 5 + USAGE_BYTES;

/// The steps inside the sandbox whose end is read from the clock (`crate::timings`), in the
/// order they happen; the program's process sends the readings with its listener.
const SANDBOX_MARKS: [&str; 10] = [
    "init: go received",
    "init: terminal",
    "init: view built",
    "program: forked",
    "program: network namespace",
    "program: chdir, descriptors",
    "program: ruleset ready, view rules",
    "program: landlock restrict",
    "program: privileges dropped",
    "program: seccomp filters",
];
/// Where each reading goes in [`Child::marks`].
const GO: usize = 0;
const TERMINAL: usize = 1;
const VIEW: usize = 2;
const FORKED: usize = 3;
const NETWORK: usize = 4;
const DESCRIPTORS: usize = 5;
const LANDLOCK_VIEW: usize = 6;
const LANDLOCK: usize = 7;
const PRIVILEGES: usize = 8;
const FILTERS: usize = 9;
/// The listener message: the tag, the descriptor's number, the readings.
/// How the program's process hands its listener (and the root it sees) to warden.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handover {
    /// `filter` lets the kernel perform the program's `sendmsg` (no agent needed): the
    /// listener goes to warden with its message ([`send_with_descriptors`]), which holds it
    /// open until warden reads it, and the program need not wait for warden.
    Message,
    /// The program's `sendmsg` goes to the agent that this very listener is for: warden takes
    /// the listener with `pidfd_getfd` while the program's process waits for [`MSG_TAKEN`].
    Taken,
    /// As [`Handover::Taken`] where `pidfd_getfd` is refused (Docker's default seccomp profile
    /// without `CAP_SYS_PTRACE`): a helper started before the listener's filter, and so
    /// outside it, shares the program's process's descriptor table and sends the listener
    /// with the message ([`handover_helper`]). It costs a process for a moment (counted by a
    /// `--processes` limit), so it is the route only where the other is refused.
    Helper,
}

/// The listener's message: [`MSG_LISTENER`], its descriptor number (4 bytes), the marks (8 bytes
/// each), then whether its filter has `WAIT_KILLABLE_RECV` (1 byte).
const LISTENER_LEN: usize = 5 + 8 * SANDBOX_MARKS.len() + 1;

/// Starts `cmd` in a new sandbox. The caller must be single-threaded (it forks). `attach`, when
/// given, is called with init's pid before "go" (to move it into a cgroup); the program's
/// process is then forked after it, so that it is in the cgroup too.
/// `fill` adds the rules of `landlock`'s ruleset through a descriptor of warden's
/// ([`Prepared::filler`]) once init has been told to go, so warden does it while init builds
/// the view; the program applies the ruleset only after warden says it is complete.
/// `pidfd_getfd`: warden may take descriptors so ([`crate::host::pidfd_getfd_here`]).
pub fn launch(
    cmd: &Command,
    landlock: Prepared,
    filter: &[Instruction],
    sends_in_kernel: bool,
    pidfd_getfd: bool,
    attach: Option<&dyn Fn(i32) -> io::Result<()>>,
    fill: &mut dyn FnMut() -> Result<(), String>,
) -> Result<Sandbox, LaunchError> {
    let (ours, theirs) = socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| LaunchError::Channel(e.into()))?;
    // Everything the child needs is computed before the clone, so the child only runs
    // straight-line code on memory it already has.
    let argv: Vec<*const libc::c_char> = cmd
        .argv
        .iter()
        .map(|a| a.as_ptr())
        .chain([std::ptr::null()])
        .collect();
    let envp: Vec<*const libc::c_char> = cmd
        .env
        .iter()
        .map(|a| a.as_ptr())
        .chain([std::ptr::null()])
        .collect();
    let cwd =
        CString::new(cmd.cwd.as_os_str().as_encoded_bytes()).map_err(|_| LaunchError::Setup {
            stage: Stage::Chdir,
            detail: String::new(),
            source: io::Error::from_raw_os_error(libc::EINVAL),
        })?;

    // warden calls launch before it starts any thread (the agent starts afterwards);
    // clone_process checks that.
    let namespaces = if !cmd.namespaces {
        0
    } else if cmd.view.is_some() {
        SANDBOX_NAMESPACES | libc::CLONE_NEWNS as u64
    } else {
        SANDBOX_NAMESPACES
    };
    let handover = if sends_in_kernel {
        Handover::Message
    } else if pidfd_getfd {
        Handover::Taken
    } else {
        Handover::Helper
    };
    let placement = crate::placement::Placement::plan(cmd.cpus.is_some());
    let cloned = process::clone_process(namespaces).map_err(|e| {
        if let Some(p) = &placement {
            p.restore();
        }
        LaunchError::Clone(e)
    });
    match cloned? {
        Cloned::Child(one_thread) => {
            drop(ours);
            let child = Child {
                placement,
                cmd,
                cwd: &cwd,
                argv: &argv,
                envp: &envp,
                landlock,
                filter,
                handover,
                joins_cgroup: attach.is_some(),
                marks: [0; SANDBOX_MARKS.len()],
            };
            sandbox_init(theirs, child, one_thread)
        }
        Cloned::Parent { pid, pidfd } => {
            if let Some(p) = &placement {
                p.place_init(pid);
            }
            crate::timings::mark("clone");
            drop(theirs);
            drop(landlock);
            let ids = cmd.namespaces.then_some(cmd.ids);
            let launched = parent_side(pid, pidfd, ours, ids, attach, fill);
            if let Some(p) = &placement {
                p.restore();
            }
            launched.map(|l| Sandbox(Arc::new(l)))
        }
    }
}

fn parent_side(
    pid: i32,
    pidfd: OwnedFd,
    channel: OwnedFd,
    ids: Option<IdMap>,
    attach: Option<&dyn Fn(i32) -> io::Result<()>>,
    fill: &mut dyn FnMut() -> Result<(), String>,
) -> Result<Launched, LaunchError> {
    let namespaces = ids.is_some();
    let kill = |pidfd: &OwnedFd| {
        let _ = rustix::process::pidfd_send_signal(pidfd, rustix::process::Signal::KILL);
    };
    if let Err(e) = ids.map(|ids| write_id_maps(pid, ids)).unwrap_or(Ok(())) {
        kill(&pidfd);
        return Err(LaunchError::IdMap(e));
    }
    crate::timings::mark("id maps");
    if let Err(e) = attach.map_or(Ok(()), |attach| attach(pid)) {
        kill(&pidfd);
        return Err(LaunchError::Cgroup(e));
    }
    crate::timings::mark("cgroup attach");
    // The kernel tells us who sent each message, so the listener can be fetched from the
    // program's process.
    rustix::net::sockopt::set_socket_passcred(&channel, true)
        .map_err(|e| LaunchError::Channel(e.into()))?;
    send(channel.as_fd(), &[MSG_GO]).map_err(LaunchError::Channel)?;
    // Init builds the view meanwhile; the program waits for "ready" before it applies the
    // ruleset (init has read "go" and reads nothing more, so "ready" is the program's).
    if let Err(e) = fill() {
        kill(&pidfd);
        return Err(LaunchError::Ruleset(e));
    }
    crate::timings::mark("landlock rules added");
    // A sandbox that failed meanwhile (its view, say) has said why and closed its end: the
    // reply below reads what it said, so a refused "ready" is not the error to report.
    let _ = send(channel.as_fd(), &[MSG_READY]);
    // No polling here: the program's process shares warden's CPU now (crate::placement), and
    // a warden spinning for the listener took that CPU from it.
    // A sandbox that failed closes its end with "ready" unread, and the kernel then reports
    // ECONNRESET to the next receive before the failure queued ahead of it (a pending socket
    // error comes first): it is consumed by that report, so the next receive reads what the
    // sandbox said.
    let (msg, sender, passed) = match recv(channel.as_fd()) {
        Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => recv(channel.as_fd()),
        got => got,
    }
    .map_err(LaunchError::Channel)?;
    // A listener that came without its descriptors is taken with pidfd_getfd, and the program
    // waits for warden's word that it was.
    let program_waits = passed.is_empty();
    let mut wait_killable = true;
    let listener = match (msg.first(), sender) {
        (Some(&MSG_LISTENER), Some(sender)) if msg.len() == LISTENER_LEN => {
            wait_killable = msg[LISTENER_LEN - 1] != 0;
            for (name, at) in SANDBOX_MARKS.iter().zip(msg[5..].chunks_exact(8)) {
                let at = u64::from_ne_bytes(at.try_into().unwrap_or_default());
                crate::timings::mark_at(name, at);
            }
            let fd = i32::from_ne_bytes([msg[1], msg[2], msg[3], msg[4]]);
            let taken = match <[OwnedFd; 2]>::try_from(passed) {
                Ok([listener, root]) => received(listener, root),
                Err(passed) if passed.is_empty() => take_from_program(pid, sender, fd),
                Err(_) => Err(io::Error::other(
                    "the listener's message came with other than its two descriptors",
                )),
            };
            Some(taken.map_err(|e| {
                kill(&pidfd);
                LaunchError::Channel(e)
            })?)
        }
        _ => None,
    };
    match (msg.first(), listener) {
        (Some(&MSG_LISTENER), Some((listener, program_root))) => {
            // A program whose listener warden took from it waits for this before its exec. If
            // it is gone, the wait below says how it ended.
            if program_waits {
                let _ = send(channel.as_fd(), &[MSG_TAKEN]);
            }
            crate::timings::mark("listener taken");
            Ok(Launched {
                init_pid: pid,
                init_pidfd: pidfd,
                listener,
                program_root,
                channel,
                reaped: Default::default(),
                namespaces,
                wait_killable,
            })
        }
        (Some(&MSG_FAILED), _) => {
            kill(&pidfd);
            let (stage, errno) = decode_failure(&msg);
            Err(LaunchError::Setup {
                stage,
                detail: String::from_utf8_lossy(msg.get(6..).unwrap_or_default()).into_owned(),
                source: io::Error::from_raw_os_error(errno),
            })
        }
        _ => {
            kill(&pidfd);
            Err(LaunchError::Channel(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the sandbox exited during setup",
            )))
        }
    }
}

/// The listener and the root directory ([`Launched::program_root`]) the program's process
/// sent with its message, once they are what they should be (the program does not wait for
/// [`MSG_TAKEN`], and may have run and ended by now).
fn received(listener: OwnedFd, root: OwnedFd) -> io::Result<(OwnedFd, OwnedFd)> {
    if !crate::sys::unotify::is_listener(listener.as_fd()) {
        return Err(io::Error::other(
            "the descriptor sent as the listener is no seccomp listener",
        ));
    }
    let st = rustix::fs::fstat(&root)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory {
        return Err(io::Error::other(
            "the descriptor sent as the program's root is no directory",
        ));
    }
    Ok((listener, root))
}

/// Duplicates descriptor `fd` of `sender`, which must be init's child (the program's process,
/// waiting for [`MSG_TAKEN`] before its exec), and opens the root directory it sees: the
/// listener and [`Launched::program_root`], both from the process just checked.
fn take_from_program(init: i32, sender: i32, fd: RawFd) -> io::Result<(OwnedFd, OwnedFd)> {
    let pid = rustix::process::Pid::from_raw(sender).ok_or_else(|| io::Error::other("no pid"))?;
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())?;
    // With the pidfd held, the pid cannot be reused: check it names init's child.
    let stat = process::read_proc(&format!("/proc/{sender}/stat"))?;
    // Field 4, the parent.
    let ppid =
        process::stat_fields(&stat).and_then(|f| f.get(1).and_then(|p| p.parse::<i32>().ok()));
    if ppid != Some(init) {
        return Err(io::Error::other(
            "the listener came from a process that is not the program",
        ));
    }
    let root = rustix::fs::open(
        format!("/proc/{sender}/root"),
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )?;
    Ok((crate::sys::unotify::pidfd_getfd(pidfd.as_fd(), fd)?, root))
}

/// init's message that the program ended with wait status `status`, the sandbox having used
/// `usage`.
fn encode_end(status: i32, usage: Usage) -> [u8; STATUS_LEN] {
    let mut msg = [0u8; STATUS_LEN];
    msg[0] = MSG_STATUS;
    msg[1..5].copy_from_slice(&status.to_ne_bytes());
    msg[5..].copy_from_slice(&usage.to_bytes());
    msg
}

/// How the program ended, from init's message `msg` (empty: init is gone without a word);
/// `None` for a message that says nothing about the end.
fn decode_end(msg: &[u8]) -> Option<(Outcome, Option<Usage>)> {
    match msg.first() {
        None => Some((Outcome::Lost, None)),
        Some(&MSG_STATUS) if msg.len() == STATUS_LEN => {
            let status = i32::from_ne_bytes([msg[1], msg[2], msg[3], msg[4]]);
            let outcome = if libc::WIFSIGNALED(status) {
                Outcome::Signaled(libc::WTERMSIG(status))
            } else {
                Outcome::Exited(libc::WEXITSTATUS(status))
            };
            Some((outcome, Usage::from_bytes(&msg[5..])))
        }
        Some(&MSG_FAILED) => {
            let (stage, errno) = decode_failure(msg);
            Some((Outcome::Failed(stage, errno), None))
        }
        Some(_) => None,
    }
}

fn decode_failure(msg: &[u8]) -> (Stage, i32) {
    let stage = msg
        .get(1)
        .copied()
        .and_then(Stage::from_u8)
        .unwrap_or(Stage::Fork);
    let errno = msg
        .get(2..6)
        .map(|b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        .unwrap_or(libc::EIO);
    (stage, errno)
}

impl Launched {
    /// Waits until the program has ended (or its exec failed) and says how. Each signal
    /// `stop` takes meanwhile kills the sandbox (its outcome is then [`Outcome::Lost`]).
    /// The agent must be running, or a notified call (the program's exec, outside a view) would
    /// wait forever.
    pub fn wait(&self, stop: &SignalFd) -> Ended {
        use rustix::event::{poll, PollFd, PollFlags};
        let mut signal = None;
        loop {
            let mut fds = [
                PollFd::new(&self.channel, PollFlags::IN),
                PollFd::new(stop, PollFlags::IN),
            ];
            let (outcome, usage) = match poll(&mut fds, None) {
                Ok(_) => {
                    if !fds[1].revents().is_empty() {
                        while let Some(sig) = stop.take() {
                            signal.get_or_insert(sig);
                            self.kill();
                        }
                    }
                    if fds[0].revents().is_empty() {
                        continue;
                    }
                    match recv(self.channel.as_fd()) {
                        Ok((msg, _, _)) => match decode_end(&msg) {
                            Some(end) => end,
                            None => continue,
                        },
                        Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                        Err(_) => (Outcome::Lost, None),
                    }
                }
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => (Outcome::Lost, None),
            };
            return Ended {
                outcome,
                usage,
                signal,
            };
        }
    }

    /// The root directory the program sees (its view's, when it has one).
    pub fn program_root(&self) -> io::Result<OwnedFd> {
        self.program_root.try_clone()
    }

    /// The channel, for callers that poll it together with signals.
    pub fn channel(&self) -> BorrowedFd<'_> {
        self.channel.as_fd()
    }

    /// Ends the sandbox in order: init kills every other process and reaps them, so their CPU
    /// time is counted, then reports the program's status. Follow with [`Launched::kill`] after
    /// a moment in case init cannot (it is stopped, say).
    pub fn terminate(&self) {
        let _ =
            rustix::process::pidfd_send_signal(&self.init_pidfd, crate::sys::signals::TERMINATE);
    }

    /// Waits until init has exited (its pidfd becomes readable), without reaping it.
    pub fn wait_gone(&self) {
        let mut fds = [rustix::event::PollFd::new(
            &self.init_pidfd,
            rustix::event::PollFlags::IN,
        )];
        while let Err(rustix::io::Errno::INTR) = rustix::event::poll(&mut fds, None) {}
    }

    /// Kills the whole sandbox (init's death takes every process of the namespace with it).
    /// Without namespaces init's death would leave the others to the host's reaper: init is
    /// told to kill them first ([`Launched::terminate`]: it kills its children, and each orphan
    /// it inherits, until none is left, then exits), and killed after at most
    /// [`KILL_GRACE_MS`] if it has not exited by then.
    pub fn kill(&self) {
        if !self.namespaces && !self.reaped.load(std::sync::atomic::Ordering::SeqCst) {
            self.terminate();
            let mut fds = [rustix::event::PollFd::new(
                &self.init_pidfd,
                rustix::event::PollFlags::IN,
            )];
            let grace = rustix::time::Timespec {
                tv_sec: 0,
                tv_nsec: KILL_GRACE_MS * 1_000_000,
            };
            let _ = rustix::event::poll(&mut fds, Some(&grace));
        }
        let _ = rustix::process::pidfd_send_signal(&self.init_pidfd, rustix::process::Signal::KILL);
    }

    /// Reaps init, after [`Launched::wait`] or [`Launched::kill`]. Returns init's resource
    /// usage, which covers every process of the sandbox: init reaps each of them (the program,
    /// orphans, and on its own death the kernel reaps the rest for it), and a reaper's usage
    /// includes its reaped children's.
    /// Only the first call reaps; later ones return `None`.
    pub fn reap(&self) -> Option<Usage> {
        if self.reaped.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return None;
        }
        process::wait_with_usage(self.init_pid).ok().map(|(_, u)| u)
    }
}

// ---- inside the sandbox ------------------------------------------------------------------------

/// What the sandbox's processes need, all prepared before the clone so they only run
/// straight-line code on memory they already have.
struct Child<'a> {
    /// The CPUs of the start ([`crate::placement`]).
    placement: Option<crate::placement::Placement>,
    cmd: &'a Command,
    cwd: &'a CString,
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
    landlock: Prepared,
    filter: &'a [Instruction],
    /// How the listener reaches warden.
    handover: Handover,
    /// warden moves init to a cgroup at "go": the program's process is forked after it.
    joins_cgroup: bool,
    /// The clock's readings at the end of each of [`SANDBOX_MARKS`] (0: not reached).
    marks: [u64; SANDBOX_MARKS.len()],
}

/// Init: waits for "go", starts the program, reaps every child, reports the program's status.
fn sandbox_init(channel: OwnedFd, child: Child<'_>, one_thread: process::OneThread) -> ! {
    let placement = child.placement.clone();
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    // Without a PID namespace, init is the subreaper of the sandbox's processes, and ends them
    // as its children (never kill(-1), which would reach the host's).
    if !child.cmd.namespaces {
        if let Err(e) = crate::sys::signals::without_namespace() {
            fail(channel.as_fd(), Stage::Fork, &e);
            process::exit_now(1);
        }
    }
    // The program's process starts before the view is built, and makes the sandbox's network
    // namespace while init builds it (the two are the dearest steps of a start, and
    // independent); it waits on `view` for init's word that the view is in place. It starts
    // even before "go" (the id maps) unless warden moves init to a cgroup at "go": a process
    // forked before would stay outside it.
    let (view_wait, view_done) = match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
        Ok(p) => p,
        Err(e) => {
            fail(channel.as_fd(), Stage::Fork, &e.into());
            process::exit_now(1)
        }
    };
    let (cmd, early) = (child.cmd, !child.joins_cgroup);
    // The terminal both give up, opened now, while init's root is the host's: the program's
    // process gives it up itself when it starts early, and by then init may have moved it
    // into the view (which has no /dev/tty to find it by).
    let tty = match cmd.keep_terminal {
        true => None,
        false => match process::controlling_terminal() {
            Ok(tty) => tty,
            Err(e) => {
                fail(channel.as_fd(), Stage::Resources, &e);
                process::exit_now(1)
            }
        },
    };
    let tty = tty.as_ref().map(AsFd::as_fd);
    // init's own readings; the program's process gets them with the view's word.
    let mut marks = child.marks;
    // init starts no thread: it forks as the clone made it.
    let mut child = Some((child, one_thread));
    let mut view_done = Some(view_done);
    let mut fork_program = |channel: &OwnedFd| {
        let (child, one_thread) = child.take().expect("the program's process is forked once");
        match process::fork(one_thread) {
            Ok(None) => {
                // Only init writes: the program's read ends if init goes without a word.
                drop(view_done.take());
                program_child(channel.as_fd(), child, &view_wait, tty)
            }
            Ok(Some(pid)) => {
                if let Some(p) = &placement {
                    p.place_program(pid, cmd.view.is_some());
                }
                pid
            }
            Err(e) => {
                fail(channel.as_fd(), Stage::Fork, &e);
                process::exit_now(1)
            }
        }
    };
    let early = early.then(|| fork_program(&channel));
    poll_briefly(channel.as_fd());
    match recv(channel.as_fd()) {
        Ok((m, _, _)) if m.first() == Some(&MSG_GO) => {}
        _ => process::exit_now(1),
    }
    marks[GO] = crate::timings::now();
    if let Err(e) = detach_and_pin(cmd, tty) {
        fail(channel.as_fd(), Stage::Resources, &e);
        process::exit_now(1);
    }
    marks[TERMINAL] = crate::timings::now();
    let program = early.unwrap_or_else(|| fork_program(&channel));
    drop(view_wait);
    let view_done = view_done.expect("init keeps the view's write end");
    // Last, once nothing of the host's tree is needed (the terminal is /dev/tty there).
    // Nothing in the sandbox may then inspect or write init's memory through its own /proc
    // (init has no seccomp filter and every capability of the sandbox's namespaces): Landlock
    // refuses ptrace access from a domain to a process outside it, which /proc/1/mem and the
    // rest need, and the view's procfs (hidepid=ptraceable) does not even list init.
    // pivot_root moves the program's process into the view with init: it moves every process
    // of the mount namespace whose root is the old one (the program checks that it was moved).
    let unsealed = cmd
        .view
        .as_ref()
        .map(|plan| match crate::confine::view::enter(plan) {
            Ok(unsealed) => unsealed,
            Err(e) => {
                fail_with(channel.as_fd(), Stage::View, &e.source, &e.what);
                process::exit_now(1);
            }
        });
    marks[VIEW] = crate::timings::now();
    // A message of VIEW_MSG_LEN bytes (under PIPE_BUF) into a fresh pipe is written whole.
    if let Err(e) = view_entered(&marks).and_then(|msg| Ok(rustix::io::write(&view_done, &msg)?)) {
        fail(channel.as_fd(), Stage::View, &e);
        process::exit_now(1);
    }
    // The program sets itself up meanwhile, and execs only after the word below: the host's
    // tree is gone from beneath the view by then.
    if let Some(Err(e)) = unsealed.as_ref().map(|u| u.seal()) {
        fail_with(channel.as_fd(), Stage::View, &e.source, &e.what);
        process::exit_now(1);
    }
    // init only waits from here on: the program's process finishes its setup and execs on
    // init's CPU, not behind warden starting the agent on its own. Placed by its parent, whose
    // unreaped child the pid names, and before the word it waits for before its exec.
    if let Some(p) = &placement {
        p.place_program_for_exec(program);
    }
    if let Err(e) = rustix::io::write(&view_done, &[VIEW_SEALED]) {
        fail(channel.as_fd(), Stage::View, &e.into());
        process::exit_now(1);
    }
    drop(view_done);
    // What the view held detached goes now, while the program goes on.
    drop(unsealed);
    if let Some(p) = &placement {
        p.restore();
    }
    // Hold nothing of the outside world: stdio and every inherited descriptor go.
    let channel = process::keep_only(channel);
    // From here on, warden's TERMINATE makes init kill everything else; the loop below reaps it.
    crate::sys::signals::install_terminate_handler();
    let mut program_status = None;
    loop {
        match process::wait_any() {
            Ok((pid, status)) if pid == program => {
                program_status = Some(status);
                // The program is done: so is the sandbox. Reaping the rest here, rather than
                // leaving them to the kernel when init exits, counts their CPU time in init's
                // (and so in warden's) resource usage.
                crate::sys::signals::kill_all_others();
            }
            // Without a PID namespace the orphans of a child just reaped are init's children
            // now: they go too.
            Ok(_) if program_status.is_some() && !cmd.namespaces => {
                crate::sys::signals::kill_all_others();
            }
            Ok(_) => continue,
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(_) => break,
        }
    }
    if let Some(status) = program_status {
        // Every other process of the sandbox has been reaped: init's usage and its children's
        // are the sandbox's, and warden need not wait for init's exit to learn them.
        let usage = Usage::of_self_and_reaped().unwrap_or_default();
        let _ = send(channel.as_fd(), &encode_end(status, usage));
    }
    process::exit_now(0)
}

/// How long the program's process and its handover helper wait for each other's word.
const HELPER_WAIT_SECONDS: i64 = 30;

/// Starts [`handover_helper`], sharing our descriptor table; returns our ends of the two pipes
/// (to it, from it).
fn start_helper(channel: BorrowedFd<'_>, root: BorrowedFd<'_>) -> io::Result<(OwnedFd, OwnedFd)> {
    let cloexec = rustix::pipe::PipeFlags::CLOEXEC;
    let (helper_reads, to_helper) = rustix::pipe::pipe_with(cloexec)?;
    let (from_helper, helper_writes) = rustix::pipe::pipe_with(cloexec)?;
    match process::fork_sharing_files()? {
        None => handover_helper(channel, root, helper_reads.as_fd(), helper_writes.as_fd()),
        // Ends the helper's are left open: the table is shared, and the helper reads and
        // writes them after this returns.
        Some(_) => {
            std::mem::forget((helper_reads, helper_writes));
            Ok((to_helper, from_helper))
        }
    }
}

/// Whether `fd` became readable within [`HELPER_WAIT_SECONDS`].
fn readable_in_time(fd: BorrowedFd<'_>) -> bool {
    let wait = rustix::time::Timespec {
        tv_sec: HELPER_WAIT_SECONDS,
        tv_nsec: 0,
    };
    let mut fds = [rustix::event::PollFd::new(
        &fd,
        rustix::event::PollFlags::IN,
    )];
    rustix::event::poll(&mut fds, Some(&wait)).is_ok_and(|n| n > 0)
}

/// The program's process: gives the helper the listener's message and waits for its word that
/// it was sent.
fn helper_sent(to_helper: &OwnedFd, from_helper: &OwnedFd, msg: &[u8; LISTENER_LEN]) -> bool {
    if !rustix::io::write(to_helper, msg).is_ok_and(|n| n == msg.len()) {
        return false;
    }
    let mut word = [0u8; 1];
    readable_in_time(from_helper.as_fd())
        && rustix::io::read(from_helper, &mut word).is_ok_and(|n| n == 1)
        && word[0] == MSG_TAKEN
}

/// The handover helper ([`Handover::Helper`]): a process outside the listener's filter that
/// shares the program's process's descriptor table. It reads the listener's message, sends it
/// to warden with the listener (named by its number in the message) and `root`, says so, and
/// exits; init reaps it. Nothing it holds is closed before it exits: the table is shared.
fn handover_helper(
    channel: BorrowedFd<'_>,
    root: BorrowedFd<'_>,
    from_program: BorrowedFd<'_>,
    to_program: BorrowedFd<'_>,
) -> ! {
    let mut msg = [0u8; LISTENER_LEN];
    let got = readable_in_time(from_program)
        && rustix::io::read(from_program, &mut msg).is_ok_and(|n| n == LISTENER_LEN);
    if !got {
        process::exit_now(1);
    }
    let number = i32::from_ne_bytes([msg[1], msg[2], msg[3], msg[4]]);
    // warden checks that what arrives is a listener (`received`).
    let sent = process::dup_number(number)
        .and_then(|listener| send_with_descriptors(channel, &msg, [listener.as_fd(), root]));
    match sent {
        Ok(()) => {
            let _ = rustix::io::write(to_program, &[MSG_TAKEN]);
            process::exit_now(0)
        }
        Err(e) => {
            fail(channel, Stage::Handoff, &e);
            let _ = rustix::io::write(to_program, &[MSG_FAILED]);
            process::exit_now(1)
        }
    }
}

/// Init's second word to the program's process, after the view's: the view is sealed
/// ([`crate::confine::view::Unsealed::seal`]), and the program may exec.
const VIEW_SEALED: u8 = b'V';

/// Init's marks that the program's process reports (it may have been forked before them).
const INIT_MARKS: [usize; 3] = [GO, TERMINAL, VIEW];

/// Init's word to the program's process that the view is in place: the clock's readings of
/// [`INIT_MARKS`], and the device and inode of the root the program must now have.
const VIEW_MSG_LEN: usize = 8 * (INIT_MARKS.len() + 2);

/// The message [`VIEW_MSG_LEN`] describes, for init's root now.
fn view_entered(marks: &[u64; SANDBOX_MARKS.len()]) -> io::Result<[u8; VIEW_MSG_LEN]> {
    let root = rustix::fs::stat("/")?;
    let mut msg = [0u8; VIEW_MSG_LEN];
    let words = INIT_MARKS
        .iter()
        .map(|&m| marks[m])
        .chain([root.st_dev, root.st_ino]);
    for (slot, word) in msg.chunks_exact_mut(8).zip(words) {
        slot.copy_from_slice(&word.to_ne_bytes());
    }
    Ok(msg)
}

/// No controlling terminal (unless `--tty`), and the CPUs `--cpus` names: for init and, since
/// it may be forked before init did this, the program's process too.
fn detach_and_pin(cmd: &Command, tty: Option<BorrowedFd<'_>>) -> io::Result<()> {
    if !cmd.keep_terminal {
        // A process group of its own: a signal to the caller's group (`kill(0, ...)`,
        // `killpg(getpgrp(), ...)`) would otherwise reach warden's group, outside the sandbox,
        // which a PID namespace does not stop and only Landlock's signal scope (6.12+) did.
        // Same session, so no autogroup of its own (give_up_controlling_terminal). With
        // --tty the sandbox is the terminal's foreground job, and Ctrl-Z its to stop.
        rustix::process::setpgid(None, None)?;
    }
    if let Some(tty) = tty {
        // No controlling terminal, for init and all it starts; init stays in warden's session
        // (a new session would put the sandbox in a scheduler autogroup of its own, which made
        // every delegated call slower: see give_up_controlling_terminal).
        process::give_up_controlling_terminal(tty)?;
    }
    if let Some(cpus) = &cmd.cpus {
        // The program and everything it starts inherit it.
        rustix::thread::sched_setaffinity(None, cpus)?;
    }
    Ok(())
}

/// The program's process, until the view is in place: its own network namespace with
/// loopback up, then init's word; fills in init's marks, or says why not (`None`: init went
/// without a word, and says why itself).
fn network_and_view(
    namespaces: bool,
    view: BorrowedFd<'_>,
    marks: &mut [u64; SANDBOX_MARKS.len()],
) -> Result<(), Option<(Stage, io::Error)>> {
    if namespaces {
        process::private_network().map_err(|e| Some((Stage::Network, e)))?;
        // Loopback starts down; up, processes of the sandbox can talk to each other. Failure
        // only costs that, so it is not fatal.
        let _ = process::loopback_up();
    }
    let mut msg = [0u8; VIEW_MSG_LEN];
    let mut got = 0;
    poll_briefly(view);
    while got < msg.len() {
        match rustix::io::read(view, &mut msg[got..]) {
            Ok(0) => return Err(None),
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(Some((Stage::View, e.into()))),
        }
    }
    let words: Vec<u64> = msg
        .chunks_exact(8)
        .map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")))
        .collect();
    let (init_marks, root_id) = words.split_at(INIT_MARKS.len());
    // pivot_root moved this process's root with init's; never run on in the host's tree if it
    // did not.
    let root = rustix::fs::stat("/").map_err(|e| Some((Stage::View, e.into())))?;
    if [root.st_dev, root.st_ino] != root_id {
        return Err(Some((
            Stage::View,
            io::Error::from_raw_os_error(libc::EXDEV),
        )));
    }
    for (&m, &at) in INIT_MARKS.iter().zip(init_marks) {
        marks[m] = at;
    }
    Ok(())
}

/// The program's process: confine itself, hand the listener to warden, exec.
fn program_child(
    channel: BorrowedFd<'_>,
    mut child: Child<'_>,
    view: &OwnedFd,
    tty: Option<BorrowedFd<'_>>,
) -> ! {
    child.marks[FORKED] = crate::timings::now();
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    // The program and all it starts come before init in the OOM killer's choice: init holds
    // nothing, and its death would end the sandbox with no verdict (Cgroup::attach).
    let preferred = process::prefer_for_oom();
    if let Err(e) = detach_and_pin(child.cmd, tty) {
        fail(channel, Stage::Resources, &e);
        process::exit_now(125);
    }
    match network_and_view(child.cmd.namespaces, view.as_fd(), &mut child.marks) {
        Ok(()) => {
            // Started early, this process may have been moved out of the host's tree (by
            // init's first pivot) before it found the host's /proc: the view's own serves.
            if !preferred {
                process::prefer_for_oom();
            }
            child.marks[NETWORK] = crate::timings::now()
        }
        Err(None) => process::exit_now(125),
        Err(Some((stage, e))) => {
            fail(channel, stage, &e);
            process::exit_now(125);
        }
    }
    if let Err(e) = rustix::process::chdir(child.cwd.as_c_str()) {
        fail(channel, Stage::Chdir, &e.into());
        process::exit_now(125);
    }
    if let Err(e) = descriptors(child.cmd) {
        fail(channel, Stage::Resources, &e);
        process::exit_now(125);
    }
    child.marks[DESCRIPTORS] = crate::timings::now();
    // The ruleset is complete once warden says so.
    poll_briefly(channel);
    match recv(channel) {
        Ok((m, _, _)) if m.first() == Some(&MSG_READY) => {}
        _ => process::exit_now(125),
    }
    let mut landlock = child.landlock;
    if let Some(plan) = &child.cmd.view {
        if let Err(e) = landlock.allow_view(plan) {
            fail(channel, Stage::Landlock, &io::Error::other(e.to_string()));
            process::exit_now(125);
        }
    }
    child.marks[LANDLOCK_VIEW] = crate::timings::now();
    if let Err(e) = landlock.restrict_self(&child.cmd.program) {
        fail(channel, Stage::Landlock, &io::Error::other(e.to_string()));
        process::exit_now(125);
    }
    child.marks[LANDLOCK] = crate::timings::now();
    if let Err(e) = rustix::thread::set_no_new_privs(true) {
        fail(channel, Stage::NoNewPrivs, &e.into());
        process::exit_now(125);
    }
    // Every capability goes before the filter that would refuse the calls that drop them.
    // Without namespaces the program's process holds none (warden as root became an
    // unprivileged uid first), and may not change its securebits: no_new_privs is its lock.
    if let Err(e) = crate::confine::privileges::drop_all_for_program(child.cmd.ids.range.is_some())
        .or_else(|e| {
            if child.cmd.namespaces || holds_capabilities() {
                Err(e)
            } else {
                Ok(())
            }
        })
    {
        fail(channel, Stage::Capabilities, &e);
        process::exit_now(125);
    }
    child.marks[PRIVILEGES] = crate::timings::now();
    if child.cmd.deny_exec_memory {
        if let Err(e) = crate::sys::process::refuse_exec_gain()
            .and_then(|()| seccomp::install(crate::filter::wx_denials()))
        {
            fail(channel, Stage::ExecMemory, &e);
            process::exit_now(125);
        }
    }
    // The argument denials first (a filter with no listener); the kernel runs both programs on
    // every call and the stricter verdict wins.
    if let Err(e) = seccomp::install(crate::filter::argument_denials()).and_then(|()| {
        match child.cmd.namespaces {
            true => Ok(()),
            false => seccomp::install(crate::filter::hostns_denials(child.cmd.no_network)),
        }
    }) {
        fail(channel, Stage::Seccomp, &e);
        process::exit_now(125);
    }
    // The root this process sees, for the listener's message: opened before the filter, which
    // may send opens to the agent.
    let root = match (child.handover != Handover::Taken).then(|| {
        rustix::fs::open(
            "/",
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
    }) {
        None => None,
        Some(Ok(root)) => Some(root),
        Some(Err(e)) => {
            fail(channel, Stage::Handoff, &e.into());
            process::exit_now(125);
        }
    };
    // The helper starts before the listener's filter, so that its sendmsg is the kernel's.
    let helper = match (child.handover, &root) {
        (Handover::Helper, Some(root)) => match start_helper(channel, root.as_fd()) {
            Ok(pipes) => Some(pipes),
            Err(e) => {
                fail(channel, Stage::Handoff, &e);
                process::exit_now(125);
            }
        },
        _ => None,
    };
    let (listener, wait_killable) = match seccomp::install_with_listener(child.filter) {
        Ok(l) => l,
        Err(e) => {
            fail(channel, Stage::Seccomp, &e);
            process::exit_now(125);
        }
    };
    child.marks[FILTERS] = crate::timings::now();
    let mut msg = [0u8; LISTENER_LEN];
    msg[0] = MSG_LISTENER;
    msg[1..5].copy_from_slice(&listener.as_raw_fd().to_ne_bytes());
    for (slot, at) in msg[5..].chunks_exact_mut(8).zip(child.marks) {
        slot.copy_from_slice(&at.to_ne_bytes());
    }
    msg[LISTENER_LEN - 1] = u8::from(wait_killable);
    if let Some((to_helper, from_helper)) = helper {
        // The helper sends the listener from the table we share; it has said why if it could
        // not. Ours closes once it has (the message holds the listener then).
        if !helper_sent(&to_helper, &from_helper, &msg) {
            process::exit_now(125);
        }
        drop((listener, root, to_helper, from_helper));
    } else if let Some(root) = root {
        // The kernel performs this sendmsg: the listener goes with the message, which holds it
        // open until warden reads it, and the program need not wait for warden.
        if let Err(e) = send_with_descriptors(channel, &msg, [listener.as_fd(), root.as_fd()]) {
            fail(channel, Stage::Handoff, &e);
            process::exit_now(125);
        }
        drop((listener, root));
    } else {
        // This sendmsg could be delegated to the agent that this very listener is for: warden
        // takes the listener with pidfd_getfd instead. It stays open here until exec closes
        // it, so the exec waits for warden's word that it has its own copy (in a view the exec
        // is the kernel's alone, and may not wait for the agent).
        if let Err(e) = send(channel, &msg) {
            fail(channel, Stage::Handoff, &e);
            process::exit_now(125);
        }
        std::mem::forget(listener);
        poll_briefly(channel);
        match recv(channel) {
            Ok((m, _, _)) if m.first() == Some(&MSG_TAKEN) => {}
            _ => process::exit_now(125),
        }
    }
    if !view_sealed(view.as_fd()) {
        // init went without the word, and says why itself.
        process::exit_now(125);
    }
    if let Some(p) = &child.placement {
        p.restore();
    }
    if let Err(e) = apply_rlimits(child.cmd) {
        fail(channel, Stage::Resources, &e);
        process::exit_now(125);
    }
    crate::sys::signals::reset_dispositions();
    crate::sys::signals::unblock_all();
    let err = process::execve(&child.cmd.program, child.argv, child.envp);
    fail(channel, Stage::Exec, &err);
    process::exit_now(if err.raw_os_error() == Some(libc::ENOENT) {
        127
    } else {
        126
    })
}

/// Whether the calling process holds any capability (effective or permitted).
fn holds_capabilities() -> bool {
    crate::confine::privileges::current().map_or(true, |(effective, permitted)| {
        !effective.is_empty() || !permitted.is_empty()
    })
}

/// Waits for init's [`VIEW_SEALED`]; false if init closed the pipe without it.
fn view_sealed(view: BorrowedFd<'_>) -> bool {
    poll_briefly(view);
    let mut word = [0u8; 1];
    loop {
        match rustix::io::read(view, &mut word) {
            Ok(1) => return word[0] == VIEW_SEALED,
            Err(rustix::io::Errno::INTR) => continue,
            _ => return false,
        }
    }
}

/// Puts the program's descriptors in place: stdio replacements, passed descriptors, everything
/// else closed at exec.
fn descriptors(cmd: &Command) -> io::Result<()> {
    let dups = [
        rustix::stdio::dup2_stdin::<BorrowedFd<'_>>,
        rustix::stdio::dup2_stdout::<BorrowedFd<'_>>,
        rustix::stdio::dup2_stderr::<BorrowedFd<'_>>,
    ];
    for (fd, dup) in cmd.stdio.iter().zip(dups) {
        if let Some(fd) = fd {
            dup(fd.as_fd())?;
        }
    }
    // Every inherited descriptor but stdio and the passed ones closes at exec.
    process::cloexec_from(3);
    for &fd in &cmd.pass_fds {
        process::keep_across_exec(fd)?;
    }
    Ok(())
}

/// Sets the program's resource limits. Last thing before exec, so the setup steps (which need a
/// few descriptors of their own) are not bound by them.
fn apply_rlimits(cmd: &Command) -> io::Result<()> {
    for &(resource, value) in &cmd.rlimits {
        let limit = rustix::process::Rlimit {
            current: Some(value),
            maximum: Some(value),
        };
        rustix::process::setrlimit(resource, limit)?;
    }
    Ok(())
}

fn fail(channel: BorrowedFd<'_>, stage: Stage, e: &io::Error) {
    fail_with(channel, stage, e, "");
}

/// As [`fail`], with a few words on what was being done (at most [`DETAIL_MAX`] bytes reach
/// warden).
fn fail_with(channel: BorrowedFd<'_>, stage: Stage, e: &io::Error, detail: &str) {
    let mut msg = vec![MSG_FAILED, stage as u8];
    msg.extend_from_slice(&e.raw_os_error().unwrap_or(libc::EIO).to_ne_bytes());
    let detail = detail.as_bytes();
    msg.extend_from_slice(&detail[..detail.len().min(DETAIL_MAX)]);
    let _ = send(channel, &msg);
}

/// The longest detail a setup failure carries.
const DETAIL_MAX: usize = 200;

/// A plain send: never `sendmsg`, which the program's filter may delegate (with UDP rules),
/// and there is no agent yet while the program sets itself up.
fn send(channel: BorrowedFd<'_>, msg: &[u8]) -> io::Result<()> {
    rustix::net::send(channel, msg, SendFlags::NOSIGNAL)?;
    Ok(())
}

/// Sends `msg` with copies of `fds` (`SCM_RIGHTS`).
fn send_with_descriptors(
    channel: BorrowedFd<'_>,
    msg: &[u8],
    fds: [BorrowedFd<'_>; 2],
) -> io::Result<()> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("no room for the descriptor"));
    }
    let sent = sendmsg(
        channel,
        &[std::io::IoSlice::new(msg)],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    if sent != msg.len() {
        return Err(io::Error::other("the message went short"));
    }
    Ok(())
}

/// How long a step of the start polls for the other side's word before it sleeps.
const POLL_NS: u64 = 400_000;

/// Returns once `fd` is readable or [`POLL_NS`] have passed, yielding the CPU in between:
/// for the hand-offs of a start, where the other side answers within a few hundred
/// microseconds. A task that sleeps instead pays a wake-up that costs tens of microseconds on a
/// virtual CPU, on each of the start's four hand-offs.
fn poll_briefly(fd: BorrowedFd<'_>) {
    let zero = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let until = crate::timings::now() + POLL_NS;
    loop {
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        if rustix::event::poll(&mut fds, Some(&zero)).is_ok_and(|n| n > 0)
            || crate::timings::now() > until
        {
            return;
        }
        rustix::thread::sched_yield();
    }
}

/// Receives one message, the sender's pid in warden's namespace when the kernel attached it
/// (`SO_PASSCRED` on warden's end), and the descriptors sent with it (two at most: more are
/// closed by the kernel, `MSG_CTRUNC`).
fn recv(channel: BorrowedFd<'_>) -> io::Result<(Vec<u8>, Option<i32>, Vec<OwnedFd>)> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmCredentials(1), ScmRights(2))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut buf = [0u8; 8 + DETAIL_MAX];
    let got = recvmsg(
        channel,
        &mut [IoSliceMut::new(&mut buf)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    let (mut pid, mut passed) = (None, Vec::new());
    for message in control.drain() {
        match message {
            RecvAncillaryMessage::ScmCredentials(cred) => {
                pid = Some(cred.pid.as_raw_nonzero().get());
            }
            RecvAncillaryMessage::ScmRights(fds) => passed.extend(fds),
            _ => {}
        }
    }
    Ok((buf[..got.bytes].to_vec(), pid, passed))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The end init reports reads back as it was: an exit code or a signal, with the usage.
    #[test]
    fn the_reported_end_reads_back() {
        let usage = Usage {
            cpu: std::time::Duration::from_micros(1_500),
            max_rss_kib: 4_096,
            csw_voluntary: 3,
            csw_forced: 9,
        };
        // Wait statuses: exit(3), and killed by SIGTERM.
        let exited = decode_end(&encode_end(3 << 8, usage));
        assert_eq!(exited, Some((Outcome::Exited(3), Some(usage))));
        let killed = decode_end(&encode_end(libc::SIGTERM, Usage::default()));
        assert_eq!(
            killed,
            Some((Outcome::Signaled(libc::SIGTERM), Some(Usage::default())))
        );
        // init gone without a word; a status cut short is not one.
        assert_eq!(decode_end(&[]), Some((Outcome::Lost, None)));
        assert_eq!(decode_end(&encode_end(0, usage)[..5]), None);
    }
}
