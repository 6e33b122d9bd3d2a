//! The steps of a delegated call as types, each table row's argument decoder, and every errno
//! the agent answers on purpose.
//!
//! A request goes copy → check liveness → decide → act (docs/design.md, "The agent's steps"),
//! and the types make that order the only one that compiles, for every family the agent
//! serves (the file-system families, the network ones, capability mode's):
//!
//! - [`Copied`]: the call's arguments, typed, copied out of the caller once. Only the decoders
//!   of this module make one, one decoder per syscall ([`decoder`]): no number is read as
//!   another's layout, and a number with no decoder is `ENOSYS`. The request's raw registers
//!   and memory are private to this module ([`Client`]'s notification, `arg`, `path_arg`,
//!   `read`): a handler cannot reach them.
//! - [`Live`]: the same arguments after `SECCOMP_IOCTL_NOTIF_ID_VALID` said the request is
//!   still the caller's (its thread had not died and its id been reused while we copied).
//!   Only [`Client::confirm`] makes one, from a [`Copied`]; [`Client::copy`] does both steps
//!   and hands the dispatch a [`Call`], one `Live` per family. Handlers take a `Live`, never
//!   raw arguments.
//! - [`Allowed`]: the policy (or a network rule, or capability mode's rule) allowed an access
//!   for a live request. Only [`Client::allow`], [`Client::allow_metadata`],
//!   [`Client::allow_visible`], [`Client::allow_net`] and [`Client::allow_by`] make one, each
//!   given a `Live` request; the policy's checks that log are reachable no other way (the
//!   resolver's masking of errors goes through [`super::resolve::Caller`]).
//!
//! Capability mode's calls that name what they touch in registers (a pid, a socket family)
//! are decoded as their [`Registers`]: the kernel reads those again as they are.
//!
//! # Deliberate errnos
//!
//! Where the agent answers something other than what the kernel would have answered for the
//! same call on the same tree, on purpose (`bash scripts/docs.sh` generates docs/errnos.md from
//! this table; keep each row on one line):
//!
//! | errno | when | why |
//! |---|---|---|
//! | `EACCES` | the policy denies the access | the kernel's own answer for a permission refused |
//! | `EACCES` | a walk fails (`ENOENT`, `ENOTDIR`, ...) on a path the policy hides ([`super::resolve::mask`]) | a hidden path that exists and one that does not must answer alike |
//! | `ENOENT` | `/proc/<pid>` of any process but the caller's own | other processes are not visible by number |
//! | `ENAMETOOLONG` | a walk deeper than [`super::resolve::MAX_DEPTH`] directories, or a logical path past `PATH_MAX` | bounds what one request holds |
//! | `EINVAL` | `openat2` with `RESOLVE_IN_ROOT` | not supported yet: refused rather than resolved differently |
//! | `EXDEV` | `rename` that would widen what a name reaches (its new path has rights its old one lacked) | what `mv` takes for "another file system": it falls back to copy + unlink, each checked |
//! | `EACCES` | `link` that would widen what a name reaches | no fallback exists for a hard link, so the plain refusal |
//! | `EACCES` | a device node opened where no rule names it exactly | devices are granted by name only |
//! | `EACCES` | `O_TMPFILE` without `write` on new entries of the directory | what a refused create answers |
//! | `EACCES` | `execve` of a file Landlock was not told about at start | the kernel would refuse it anyway, with no sentence |
//! | `EACCES` | an executable `memfd_create` (`MFD_EXEC`) | a memfd could carry any readable file past `exec` rules |
//! | `EOPNOTSUPP` | setting or removing an extended attribute outside `user.` | what a file system without that namespace answers: copiers fall back |
//! | `ENXIO` | opening `/dev/tty` for a sandbox without `--tty` | the kernel's answer to a process with no controlling terminal |
//! | `EFBIG` | `truncate` past the policy's file-size limit | the agent is not bound by the caller's `RLIMIT_FSIZE` (no `SIGXFSZ`) |
//! | `EBADF` | `fchmod`/`fchown`/`fsetxattr` on a stand-in for an `O_PATH` symlink descriptor | as on the kernel's own `O_PATH` descriptor |
//! | `ENOENT` | the request is no longer live (its caller died) | nobody reads it; the kernel answers the same for a vanished request |
//! | `EIO` | a handler panicked | the one request fails; the agent, the sandbox's only one, stays up |
//! | `ENOSYS` | a call the agent does not serve (another architecture, a number with no decoder) | the kernel's answer for an unknown call |

use super::Ids;
use crate::syscalls::Family;
use rustix::io::Errno;
use warden_policy::Access;

/// One request being served: the notification plus lazily fetched facts about its caller.
///
/// The notification, and with it the call's raw arguments, is private to this module: the
/// handlers get the arguments through the decoders, typed and live ([`Client::copy`]).
pub struct Client<'a> {
    pub(super) agent: &'a super::Agent,
    notif: crate::sys::unotify::Notification,
    name: &'static str,
    pub(super) ids: std::cell::OnceCell<Ids>,
    /// The caller's `/proc/<tid>`, opened once ([`Client::proc_dir`]).
    pub(super) proc_dir: std::cell::OnceCell<std::os::fd::OwnedFd>,
    /// The caller's `/proc/<tid>/mem`, opened once per request where `process_vm_readv` is
    /// refused ([`Client::proc_mem`]).
    pub(super) proc_mem: std::cell::OnceCell<std::os::fd::OwnedFd>,
    /// When the agent received the call.
    start: std::time::Instant,
    /// The last path allowed and the rule that allowed it (a descriptor answered is theirs).
    pub(super) granted: std::cell::RefCell<Option<(String, warden_policy::RuleId)>>,
    /// Whether the call may answer with a descriptor of the path it allowed (an open), so
    /// that `granted` is worth keeping.
    pub(super) keeps_grant: bool,
    /// Whether the descriptor answered was opened for writing, when the handler knows (it
    /// spares asking the kernel).
    pub(super) writable: std::cell::Cell<Option<bool>>,
    /// What this request created, to be undone if its answer cannot be given (only without
    /// `WAIT_KILLABLE_RECV`: [`super::restart`]).
    pub(super) created: std::cell::RefCell<Option<super::restart::Created>>,
    /// For a connect or bind of a path-named unix socket: its direction and the name as the
    /// program gave it, so that a refusal anywhere in the call (the walk to the name, or the
    /// name itself) names the one rule the whole call needs ([`Client::names_unix_socket`]).
    pub(super) unix_socket: std::cell::RefCell<Option<(warden_policy::Direction, Vec<u8>)>>,
}

impl<'a> Client<'a> {
    /// The request `notif` (of the call `name`) received at `start`; `keeps_grant`: it may
    /// answer with a descriptor of the path it allowed.
    pub(super) fn new(
        agent: &'a super::Agent,
        notif: crate::sys::unotify::Notification,
        name: &'static str,
        start: std::time::Instant,
        keeps_grant: bool,
    ) -> Client<'a> {
        Client {
            agent,
            notif,
            name,
            ids: std::cell::OnceCell::new(),
            proc_dir: std::cell::OnceCell::new(),
            proc_mem: std::cell::OnceCell::new(),
            start,
            granted: std::cell::RefCell::new(None),
            keeps_grant,
            writable: std::cell::Cell::new(None),
            created: std::cell::RefCell::new(None),
            unix_socket: std::cell::RefCell::new(None),
        }
    }

    /// Says that this call connects to (`Outgoing`) or binds (`Incoming`) the unix socket
    /// `name`: its refusals then suggest `net-allow DIR unix-domain PATH`, which lets the walk
    /// and the call through at once, not the `read` and then the `write` each check would
    /// suggest in turn (a round each).
    pub fn names_unix_socket(&self, dir: warden_policy::Direction, name: &[u8]) {
        *self.unix_socket.borrow_mut() = Some((dir, name.to_vec()));
    }

    /// Records that this request made `name` in `parent` (a directory if `dir`), so that it
    /// is removed again should the caller be interrupted before it learns so (a filter without
    /// `WAIT_KILLABLE_RECV`: [`super::restart`]). Costs nothing otherwise.
    pub fn made(&self, parent: &std::os::fd::OwnedFd, name: &std::ffi::CStr, dir: bool) {
        if !self.agent.wait_killable {
            *self.created.borrow_mut() = super::restart::Created::of(parent, name, dir);
        }
    }

    /// The syscall's name.
    pub fn syscall(&self) -> &'static str {
        self.name
    }

    /// The calling thread.
    pub fn tid(&self) -> u32 {
        self.notif.pid
    }

    /// The notification's id.
    pub(super) fn id(&self) -> u64 {
        self.notif.id
    }

    /// Writes one decision to the log (with the call's raw arguments), if the log wants it.
    pub(super) fn log(
        &self,
        target: &str,
        access: Option<Access>,
        allowed: bool,
        rule: Option<String>,
        reason: String,
        errno: Option<i32>,
    ) {
        if !self.agent.log.wants(allowed) {
            return;
        }
        self.agent.log.write(&super::log::Decision {
            tid: self.tid(),
            pid: self.ids().ok().map(|i| i.tgid),
            syscall: self.name,
            args: self.notif.args,
            target,
            access,
            allowed,
            rule,
            reason,
            errno,
            latency: self.start.elapsed(),
        });
    }
}

/// Arguments copied out of the caller (step 1), not yet known to be the caller's.
pub struct Copied<A>(A);

/// Arguments of a request that was still live after they were copied (step 2): the only
/// input handlers decide on.
pub struct Live<A>(A);

impl<A> Live<A> {
    /// The arguments.
    pub fn args(&self) -> &A {
        &self.0
    }

    /// The arguments, taken.
    pub fn into_args(self) -> A {
        self.0
    }

    /// The arguments taken, and what is left of the request: proof that it was live, for
    /// the decisions after (a handler that must own its arguments).
    pub fn split(self) -> (Live<()>, A) {
        (Live(()), self.0)
    }
}

/// The policy allowed `access` to a path walked for a live request (step 4). Acting (step 5)
/// takes one.
#[derive(Debug)]
pub struct Allowed {
    access: Option<Access>,
}

impl Allowed {
    /// The access allowed; `None` when only the object's metadata may be shown.
    pub fn access(&self) -> Option<Access> {
        self.access
    }
}

impl Client<'_> {
    /// Step 2: `copied` becomes live if the request still is.
    pub fn confirm<A>(&self, copied: Copied<A>) -> Result<Live<A>, Errno> {
        self.live().map_err(Errno::from_raw_os_error)?;
        Ok(Live(copied.0))
    }

    /// Steps 1 and 2 for a request of `family`: its row's decoder copies the arguments, and
    /// they are confirmed live. A number whose decoder is of another family than the table
    /// says is `ENOSYS` (a unit test keeps the two together).
    pub fn copy(&self, family: Family) -> Result<Call, Errno> {
        use Decoder as D;
        /// Step 1 with the row's decoder, then step 2.
        macro_rules! live {
            ($copy:expr, $call:path) => {
                $call(self.confirm($copy(self)?)?)
            };
        }
        if family == Family::CapabilityMode {
            // Capability mode's checked calls name what they touch in registers, which the
            // kernel reads again as they are: the registers are the arguments.
            return Ok(Call::Checked(self.confirm(Copied(self.registers()))?));
        }
        Ok(match decoder(self.raw_nr()) {
            Some(d) if d.family() != family => return Err(Errno::NOSYS),
            None => return Err(Errno::NOSYS),
            Some(D::Open(copy)) => live!(copy, Call::Open),
            Some(D::Stat(copy)) => live!(copy, Call::Stat),
            Some(D::Access(copy)) => live!(copy, Call::Access),
            Some(D::Readlink(copy)) => live!(copy, Call::Readlink),
            Some(D::Mkdir(copy)) => live!(copy, Call::Mkdir),
            Some(D::Unlink(copy)) => live!(copy, Call::Unlink),
            Some(D::Mknod(copy)) => live!(copy, Call::Mknod),
            Some(D::Symlink(copy)) => live!(copy, Call::Symlink),
            Some(D::Rename(copy)) => live!(copy, Call::Rename),
            Some(D::Link(copy)) => live!(copy, Call::Link),
            Some(D::Chmod(copy)) => live!(copy, Call::Chmod),
            Some(D::Chown(copy)) => live!(copy, Call::Chown),
            Some(D::Utime(copy)) => live!(copy, Call::Utime),
            Some(D::Xattr(copy)) => live!(copy, Call::Xattr),
            Some(D::Inotify(copy)) => live!(copy, Call::Inotify),
            Some(D::Exec(copy)) => live!(copy, Call::Exec),
            Some(D::FdMetadata(copy)) => live!(copy, Call::FdMetadata),
            Some(D::Memfd(copy)) => live!(copy, Call::Memfd),
            Some(D::Statfs(copy)) => live!(copy, Call::Statfs),
            Some(D::Chdir(copy)) => live!(copy, Call::Chdir),
            Some(D::Truncate(copy)) => live!(copy, Call::Truncate),
            Some(D::SocketAddress(copy)) => live!(copy, Call::SocketAddress),
            Some(D::Socket(copy)) => live!(copy, Call::Socket),
            Some(D::Send(copy)) => live!(copy, Call::Send),
            Some(D::Accept(copy)) => live!(copy, Call::Accept),
            Some(D::SocketName(copy)) => live!(copy, Call::SocketName),
        })
    }

    /// Step 4: checks `access` to `path` (logging the decision) for the live request `_live`.
    pub fn allow<A>(&self, _live: &Live<A>, path: &str, access: Access) -> Result<Allowed, Errno> {
        self.decide(path, access)
            .map_err(Errno::from_raw_os_error)?;
        Ok(Allowed {
            access: Some(access),
        })
    }

    /// Step 4 for a call that only shows metadata of `path` (an object of type `kind`): some
    /// right on it, or a directory on the way to one ([`super::resolve::visible`]).
    pub fn allow_metadata<A>(
        &self,
        _live: &Live<A>,
        path: &str,
        kind: Option<rustix::fs::FileType>,
    ) -> Result<Allowed, Errno> {
        self.decide_metadata(path, kind)
            .map_err(Errno::from_raw_os_error)?;
        Ok(Allowed { access: None })
    }

    /// Step 4 for a call that needs some right on `path`, whichever (logged with the rule
    /// that gives it).
    pub fn allow_visible<A>(&self, _live: &Live<A>, path: &str) -> Result<Allowed, Errno> {
        self.decide_visible(path)
            .map_err(Errno::from_raw_os_error)?;
        Ok(Allowed { access: None })
    }

    /// Step 4 when a network rule of the policy (its span `rule`) allowed `what` (such as
    /// `tcp 10.0.0.1:443`) for the live request `_live`: logged.
    pub fn allow_net<A>(&self, _live: &Live<A>, what: &str, rule: String) -> Allowed {
        self.record_net(what, rule);
        Allowed { access: None }
    }

    /// Step 4 under capability mode: a rule of the mode (named `rule`), not the policy's,
    /// allowed `target` for the live request `_live`: logged.
    pub fn allow_by<A>(&self, _live: &Live<A>, target: &str, rule: &str) -> Allowed {
        self.record_by(target, rule);
        Allowed { access: None }
    }

    /// The caller's ids, once the request is live (the umask, for a create).
    pub fn ids_of<A>(&self, _live: &Live<A>) -> Result<Ids, Errno> {
        self.ids().map_err(Errno::from_raw_os_error)
    }

    // ---- the raw request, read by the decoders of this module alone ----

    /// Raw argument `i`.
    fn arg(&self, i: usize) -> u64 {
        self.notif.args[i]
    }

    /// Argument `i` as a C `int` (the kernel reads only the low 32 bits).
    fn int(&self, i: usize) -> i32 {
        self.notif.args[i] as u32 as i32
    }

    /// The syscall number.
    fn raw_nr(&self) -> i64 {
        self.notif.nr as i64
    }

    /// The call's number and six register arguments, as the kernel saw them.
    fn registers(&self) -> Registers {
        Registers {
            nr: self.raw_nr(),
            args: self.notif.args,
        }
    }

    /// Copies a NUL-terminated string argument at `addr` (bounded by `PATH_MAX`).
    ///
    /// Every failure to read it is the call's refusal (its errno: `EFAULT` for a bad pointer,
    /// `EPERM` where the caller's memory cannot be read at all), never a continue.
    fn path_arg(&self, addr: u64) -> Result<Vec<u8>, Errno> {
        crate::sys::mem::read_cstring_with(addr, |at, buf| self.read_memory(at, buf))
            .map_err(|e| Errno::from_raw_os_error(e.raw_os_error().unwrap_or(libc::EFAULT)))
    }

    /// The caller's `socklen_t` at `at`, for a handler that writes a name back only when it
    /// has one to give (the kernel answers otherwise): `None` where it cannot be read.
    pub fn read_socklen(&self, at: u64) -> Option<i32> {
        let mut len = [0u8; 4];
        self.read(at, &mut len).ok()?;
        Some(i32::from_ne_bytes(len))
    }

    /// Copies exactly `buf.len()` bytes from the caller; anything less refuses the call.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), Errno> {
        match self.read_memory(addr, buf) {
            Ok(n) if n == buf.len() => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => Err(Errno::PERM),
            _ => Err(Errno::FAULT),
        }
    }

    // ---- decisions, reached through the steps above (and the resolver's masking) alone ----

    /// Checks `access` to `path`, logs the decision, and turns a denial into `EACCES`.
    fn decide(&self, path: &str, access: Access) -> Result<(), i32> {
        let verdict = self.policy().check(path, access);
        self.record(path, access, &verdict);
        if verdict.is_allowed() {
            Ok(())
        } else {
            Err(libc::EACCES)
        }
    }

    /// Requires that metadata of `path` may be shown (see [`super::resolve::visible`]).
    fn decide_metadata(&self, path: &str, kind: Option<rustix::fs::FileType>) -> Result<(), i32> {
        if kind.is_none() && self.resolver().in_view() {
            // Not in the view: the kernel's answer there, whatever the rules (`-v` still names
            // the rule a path the host has would need).
            return Err(self.resolver().missing(self, self.policy(), path));
        }
        if self.policy().visible(path).is_none()
            && super::resolve::visible(self.policy(), path, kind)
        {
            return Ok(());
        }
        self.decide_visible(path)
    }

    /// Requires that some access to `path` is allowed.
    fn decide_visible(&self, path: &str) -> Result<(), i32> {
        let policy = self.policy();
        match policy.visible(path) {
            Some(rule) => {
                self.record(
                    path,
                    policy.rule(rule).access.unwrap_or(Access::Read),
                    &warden_policy::Verdict::Allowed(rule),
                );
                Ok(())
            }
            None => {
                let verdict = policy.check(path, Access::Read);
                self.record(path, Access::Read, &verdict);
                Err(libc::EACCES)
            }
        }
    }
}

impl super::resolve::Caller for Client<'_> {
    fn base(&self, base: super::resolve::Base) -> Result<(std::os::fd::OwnedFd, Vec<u8>), i32> {
        Client::base(self, base)
    }

    fn ids(&self) -> Result<Ids, i32> {
        Client::ids(self)
    }

    fn tid(&self) -> u32 {
        Client::tid(self)
    }

    fn is_stand_in(&self, fd: i32) -> bool {
        Client::is_stand_in(self, fd)
    }

    fn decide_visible(&self, path: &str) -> Result<(), i32> {
        Client::decide_visible(self, path)
    }

    fn refuse_hosts_tmp(&self, path: &str) {
        self.agent.stats.count(false);
        let reason = self.private_tmp_reason(path);
        self.log(
            path,
            Some(Access::Read),
            false,
            None,
            reason,
            Some(libc::ENOENT),
        );
    }
}

/// A live request's arguments, by the family that serves it: what a handler is given.
pub enum Call {
    /// An open.
    Open(Live<OpenArgs>),
    /// A stat.
    Stat(Live<StatArgs>),
    /// An access check.
    Access(Live<AccessArgs>),
    /// A readlink.
    Readlink(Live<ReadlinkArgs>),
    /// A mkdir.
    Mkdir(Live<PathArgs>),
    /// An unlink or rmdir.
    Unlink(Live<PathArgs>),
    /// A mknod.
    Mknod(Live<MknodArgs>),
    /// A symlink.
    Symlink(Live<SymlinkArgs>),
    /// A rename.
    Rename(Live<TwoPathArgs>),
    /// A link.
    Link(Live<TwoPathArgs>),
    /// A chmod.
    Chmod(Live<ChmodArgs>),
    /// A chown.
    Chown(Live<ChownArgs>),
    /// A utime.
    Utime(Live<UtimeArgs>),
    /// An xattr call on a path.
    Xattr(Live<XattrArgs>),
    /// inotify_add_watch.
    Inotify(Live<InotifyArgs>),
    /// An exec.
    Exec(Live<ExecArgs>),
    /// A metadata change through a descriptor.
    FdMetadata(Live<FdMetadataArgs>),
    /// memfd_create.
    Memfd(Live<MemfdArgs>),
    /// statfs.
    Statfs(Live<CwdPathArgs>),
    /// chdir.
    Chdir(Live<CwdPathArgs>),
    /// truncate.
    Truncate(Live<CwdPathArgs>),
    /// connect or bind.
    SocketAddress(Live<AddressArgs>),
    /// A socket the agent makes.
    Socket(Live<SocketArgs>),
    /// A send naming a peer.
    Send(Live<SendArgs>),
    /// An accept.
    Accept(Live<AcceptArgs>),
    /// getsockname or getpeername.
    SocketName(Live<SocketNameArgs>),
    /// A call capability mode checks by its register arguments.
    Checked(Live<Registers>),
}

/// Turns the agent's older `i32` errors into [`Errno`].
pub trait Typed<T> {
    /// The same result, with an [`Errno`].
    fn typed(self) -> Result<T, Errno>;
}

impl<T> Typed<T> for Result<T, i32> {
    fn typed(self) -> Result<T, Errno> {
        self.map_err(Errno::from_raw_os_error)
    }
}

/// Where a path is looked up from: `AT_FDCWD` or a descriptor of the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirFd(pub i32);

/// open(2), openat(2), openat2(2) and creat(2), decoded.
#[derive(Debug)]
pub struct OpenArgs {
    /// Where a relative path starts.
    pub dirfd: DirFd,
    /// The path, as copied (no NUL).
    pub path: Vec<u8>,
    /// `O_*` flags (the low 32 bits the kernel reads).
    pub flags: i32,
    /// The mode for a created file (permission bits only).
    pub mode: u32,
    /// openat2's `RESOLVE_*` flags (0 for the others).
    pub resolve: u64,
}

/// stat(2), lstat(2), newfstatat(2) and statx(2), decoded.
#[derive(Debug)]
pub struct StatArgs {
    /// Where a relative path starts.
    pub dirfd: DirFd,
    /// The path, as copied; empty for statx's NULL path with `AT_EMPTY_PATH`.
    pub path: Vec<u8>,
    /// `AT_*` flags.
    pub flags: i32,
    /// Where the result goes in the caller.
    pub buf: u64,
    /// statx's mask of fields asked for; `None` for the `struct stat` calls.
    pub statx_mask: Option<u32>,
}

/// access(2), faccessat(2), faccessat2(2), decoded.
#[derive(Debug)]
pub struct AccessArgs {
    /// Where a relative path starts.
    pub dirfd: DirFd,
    /// The path, as copied.
    pub path: Vec<u8>,
    /// `F_OK` or a mask of `R_OK`, `W_OK`, `X_OK` (checked: nothing else).
    pub mode: i32,
    /// `AT_*` flags (faccessat2 only).
    pub flags: i32,
}

/// readlink(2), readlinkat(2), decoded.
#[derive(Debug)]
pub struct ReadlinkArgs {
    /// Where a relative path starts.
    pub dirfd: DirFd,
    /// The path, as copied.
    pub path: Vec<u8>,
    /// Where the target goes in the caller.
    pub buf: u64,
    /// The room there (checked: positive).
    pub size: usize,
}

/// A call that names one path to create or remove: mkdir(2), mkdirat(2), unlink(2),
/// unlinkat(2), rmdir(2), decoded.
#[derive(Debug)]
pub struct PathArgs {
    /// Where a relative path starts.
    pub dirfd: DirFd,
    /// The path, as copied.
    pub path: Vec<u8>,
    /// mkdir: the mode; unlink: `AT_REMOVEDIR` or nothing (checked).
    pub bits: u32,
}

/// mknod(2), mknodat(2), decoded.
#[derive(Debug)]
pub struct MknodArgs {
    /// Where a relative path starts.
    pub dirfd: DirFd,
    /// The path, as copied.
    pub path: Vec<u8>,
    /// The file type and permission bits.
    pub mode: u32,
    /// The device number (refused for devices anyway).
    pub dev: u64,
}

/// symlink(2), symlinkat(2), decoded.
#[derive(Debug)]
pub struct SymlinkArgs {
    /// The link's text, as copied: free text, checked when followed.
    pub target: Vec<u8>,
    /// Where a relative path starts.
    pub dirfd: DirFd,
    /// The new link's path, as copied.
    pub path: Vec<u8>,
}

/// rename(2), renameat(2), renameat2(2), link(2) and linkat(2): two paths, decoded.
#[derive(Debug)]
pub struct TwoPathArgs {
    /// Where the old path starts.
    pub odir: DirFd,
    /// The old path, as copied.
    pub old: Vec<u8>,
    /// Where the new path starts.
    pub ndir: DirFd,
    /// The new path, as copied.
    pub new: Vec<u8>,
    /// rename: `RENAME_NOREPLACE` or `RENAME_EXCHANGE` (checked); link: `AT_*` flags.
    pub flags: u32,
}

/// chmod(2), fchmodat(2), fchmodat2(2), decoded.
#[derive(Debug)]
pub struct ChmodArgs {
    /// Where a relative path starts.
    pub dirfd: DirFd,
    /// The path, as copied.
    pub path: Vec<u8>,
    /// The new mode.
    pub mode: u32,
    /// `AT_*` flags (fchmodat2 only).
    pub flags: i32,
}

/// chown(2), lchown(2), fchownat(2), decoded.
#[derive(Debug)]
pub struct ChownArgs {
    /// Where a relative path starts.
    pub dirfd: DirFd,
    /// The path, as copied.
    pub path: Vec<u8>,
    /// The new owner, as the program's user namespace numbers it (`-1`: unchanged).
    pub uid: u32,
    /// The new group, likewise.
    pub gid: u32,
    /// `AT_*` flags.
    pub flags: i32,
}

/// utime(2), utimes(2), futimesat(2), utimensat(2), decoded.
#[derive(Debug)]
pub struct UtimeArgs {
    /// Where a relative path starts (utimensat with a NULL path: the descriptor itself).
    pub dirfd: DirFd,
    /// The path, as copied; `None` for a NULL path.
    pub path: Option<Vec<u8>>,
    /// Access and modification times as (seconds, nanoseconds), copied into utimensat's shape;
    /// `None` for "now".
    pub times: Option<[(i64, i64); 2]>,
    /// `AT_*` flags (utimensat only).
    pub flags: i32,
}

/// What an xattr call does.
#[derive(Debug)]
pub enum XattrOp {
    /// getxattr: into the caller's `buf`, of `size` (bounded by `XATTR_SIZE_MAX`).
    Get {
        /// Where.
        buf: u64,
        /// Room.
        size: usize,
    },
    /// listxattr, likewise.
    List {
        /// Where.
        buf: u64,
        /// Room.
        size: usize,
    },
    /// setxattr with this value and these flags.
    Set {
        /// The value, as copied.
        value: Vec<u8>,
        /// `XATTR_CREATE`, `XATTR_REPLACE`.
        flags: u32,
    },
    /// removexattr.
    Remove,
}

/// getxattr(2), lgetxattr, listxattr, llistxattr, setxattr, lsetxattr, removexattr and
/// lremovexattr, decoded.
#[derive(Debug)]
pub struct XattrArgs {
    /// The path, as copied.
    pub path: Vec<u8>,
    /// Whether a final symlink is followed (the calls without `l`).
    pub follow: bool,
    /// The attribute's name (all but list), checked as the kernel checks it.
    pub name: Option<std::ffi::CString>,
    /// What to do.
    pub op: XattrOp,
}

/// inotify_add_watch(2), decoded.
#[derive(Debug)]
pub struct InotifyArgs {
    /// The caller's inotify descriptor.
    pub fd: i32,
    /// The path, as copied.
    pub path: Vec<u8>,
    /// The events asked for.
    pub mask: u32,
}

/// execve(2), execveat(2), decoded (the argument and environment vectors are the kernel's to
/// read: the call is continued).
#[derive(Debug)]
pub struct ExecArgs {
    /// Where a relative path starts.
    pub dirfd: DirFd,
    /// The path, as copied.
    pub path: Vec<u8>,
    /// `AT_*` flags (execveat only).
    pub flags: i32,
}

/// What a change through a descriptor does.
#[derive(Debug)]
pub enum FdChange {
    /// fchmod.
    Mode(u32),
    /// fchown: owner and group, as the program numbers them.
    Owner(u32, u32),
    /// fsetxattr.
    SetXattr {
        /// The name, checked.
        name: std::ffi::CString,
        /// The value, as copied.
        value: Vec<u8>,
        /// `XATTR_CREATE`, `XATTR_REPLACE`.
        flags: u32,
    },
    /// fremovexattr.
    RemoveXattr(std::ffi::CString),
}

/// fchmod(2), fchown(2), fsetxattr(2), fremovexattr(2), decoded.
#[derive(Debug)]
pub struct FdMetadataArgs {
    /// The caller's descriptor.
    pub fd: i32,
    /// The change.
    pub change: FdChange,
}

/// memfd_create(2), decoded.
#[derive(Debug)]
pub struct MemfdArgs {
    /// The name, as copied.
    pub name: Vec<u8>,
    /// `MFD_*` flags.
    pub flags: u32,
}

/// statfs(2), chdir(2) and truncate(2): a path from the cwd and one plain argument.
#[derive(Debug)]
pub struct CwdPathArgs {
    /// The path, as copied.
    pub path: Vec<u8>,
    /// statfs: where the result goes; truncate: the length; chdir: 0.
    pub arg: u64,
}

/// A call's number and register arguments, for capability mode's checks of calls that name
/// what they touch in registers (a pid, a socket family): the kernel reads them again as they
/// are, so the copy cannot differ from what it acts on.
#[derive(Clone, Copy, Debug)]
pub struct Registers {
    /// The syscall number.
    pub nr: i64,
    /// The six arguments.
    pub args: [u64; 6],
}

impl Registers {
    /// Argument `i` as a C `int` (the kernel reads only the low 32 bits).
    pub fn int(&self, i: usize) -> i32 {
        self.args[i] as u32 as i32
    }
}

/// connect(2) and bind(2), decoded.
#[derive(Debug)]
pub struct AddressArgs {
    /// The caller's socket.
    pub fd: i32,
    /// The address, as copied (at most [`super::net::SOCKADDR_MAX`] bytes).
    pub addr: Vec<u8>,
    /// connect (or bind).
    pub connect: bool,
}

/// socket(2), decoded: the kind and its flags apart.
#[derive(Debug)]
pub struct SocketArgs {
    /// `AF_*`.
    pub domain: i32,
    /// `SOCK_STREAM`, `SOCK_DGRAM`, ... (without the flags).
    pub kind: i32,
    /// The protocol.
    pub protocol: i32,
    /// `SOCK_NONBLOCK`.
    pub nonblock: bool,
    /// `SOCK_CLOEXEC`.
    pub cloexec: bool,
}

/// One message to send, copied out of the caller.
#[derive(Debug)]
pub struct Message {
    /// The peer's address, as copied.
    pub name: Option<Vec<u8>>,
    /// The data, up to the copy bound.
    pub data: Vec<u8>,
    /// The data the caller meant to send (more than `data` when over the copy bound).
    pub declared: usize,
    /// The control messages, as copied.
    pub control: Vec<u8>,
}

/// What a send call sends.
#[derive(Debug)]
pub enum Sends {
    /// sendto(2) or sendmsg(2): one message.
    One(Message),
    /// sendmmsg(2): messages, and where the caller's `struct mmsghdr` array is (each
    /// message's count sent goes back there).
    Many {
        /// The array's address.
        vec: u64,
        /// The messages copied (later ones left unsent past [`super::net::SENDMMSG_MAX`]).
        msgs: Vec<Message>,
    },
}

/// sendto(2) with an address, sendmsg(2), sendmmsg(2), decoded.
#[derive(Debug)]
pub struct SendArgs {
    /// The caller's socket.
    pub fd: i32,
    /// `MSG_*` flags.
    pub flags: i32,
    /// The messages.
    pub sends: Sends,
}

/// Size of a `struct mmsghdr`: a `msghdr` (56 bytes) and the count sent (4, padded to 8).
pub const MMSGHDR: u64 = 64;

/// accept(2), accept4(2), decoded.
#[derive(Debug)]
pub struct AcceptArgs {
    /// The caller's listening socket.
    pub fd: i32,
    /// Where the peer's address goes (`None`: nowhere), and the caller's `socklen_t` there.
    pub peer: Option<(u64, u64)>,
    /// The room the caller's `socklen_t` gave (checked: not negative).
    pub room: usize,
    /// `SOCK_NONBLOCK`, `SOCK_CLOEXEC` (checked: nothing else).
    pub flags: i32,
}

/// getsockname(2), getpeername(2), as the registers give them: nothing is read from the
/// caller until the agent has a name to give back (otherwise the kernel answers, with its own
/// errors).
#[derive(Debug)]
pub struct SocketNameArgs {
    /// The caller's socket.
    pub fd: i32,
    /// Where the name goes.
    pub addr_at: u64,
    /// Where the caller's `socklen_t` is.
    pub len_at: u64,
    /// getpeername (or getsockname).
    pub peer: bool,
}

/// A decoder of one syscall's arguments, by the family that serves it.
#[derive(Clone, Copy)]
pub enum Decoder {
    /// An open.
    Open(fn(&Client) -> Result<Copied<OpenArgs>, Errno>),
    /// A stat.
    Stat(fn(&Client) -> Result<Copied<StatArgs>, Errno>),
    /// An access check.
    Access(fn(&Client) -> Result<Copied<AccessArgs>, Errno>),
    /// A readlink.
    Readlink(fn(&Client) -> Result<Copied<ReadlinkArgs>, Errno>),
    /// A mkdir.
    Mkdir(fn(&Client) -> Result<Copied<PathArgs>, Errno>),
    /// An unlink or rmdir.
    Unlink(fn(&Client) -> Result<Copied<PathArgs>, Errno>),
    /// A mknod.
    Mknod(fn(&Client) -> Result<Copied<MknodArgs>, Errno>),
    /// A symlink.
    Symlink(fn(&Client) -> Result<Copied<SymlinkArgs>, Errno>),
    /// A rename.
    Rename(fn(&Client) -> Result<Copied<TwoPathArgs>, Errno>),
    /// A link.
    Link(fn(&Client) -> Result<Copied<TwoPathArgs>, Errno>),
    /// A chmod.
    Chmod(fn(&Client) -> Result<Copied<ChmodArgs>, Errno>),
    /// A chown.
    Chown(fn(&Client) -> Result<Copied<ChownArgs>, Errno>),
    /// A utime.
    Utime(fn(&Client) -> Result<Copied<UtimeArgs>, Errno>),
    /// An xattr call on a path.
    Xattr(fn(&Client) -> Result<Copied<XattrArgs>, Errno>),
    /// inotify_add_watch.
    Inotify(fn(&Client) -> Result<Copied<InotifyArgs>, Errno>),
    /// An exec.
    Exec(fn(&Client) -> Result<Copied<ExecArgs>, Errno>),
    /// A metadata change through a descriptor.
    FdMetadata(fn(&Client) -> Result<Copied<FdMetadataArgs>, Errno>),
    /// memfd_create.
    Memfd(fn(&Client) -> Result<Copied<MemfdArgs>, Errno>),
    /// statfs.
    Statfs(fn(&Client) -> Result<Copied<CwdPathArgs>, Errno>),
    /// chdir.
    Chdir(fn(&Client) -> Result<Copied<CwdPathArgs>, Errno>),
    /// truncate.
    Truncate(fn(&Client) -> Result<Copied<CwdPathArgs>, Errno>),
    /// connect or bind.
    SocketAddress(fn(&Client) -> Result<Copied<AddressArgs>, Errno>),
    /// socket.
    Socket(fn(&Client) -> Result<Copied<SocketArgs>, Errno>),
    /// A send naming a peer.
    Send(fn(&Client) -> Result<Copied<SendArgs>, Errno>),
    /// accept, accept4.
    Accept(fn(&Client) -> Result<Copied<AcceptArgs>, Errno>),
    /// getsockname, getpeername.
    SocketName(fn(&Client) -> Result<Copied<SocketNameArgs>, Errno>),
}

impl Decoder {
    /// The family of the calls this decoder serves, as the table names it.
    pub fn family(self) -> crate::syscalls::Family {
        use crate::syscalls::Family as F;
        match self {
            Decoder::Open(_) => F::Open,
            Decoder::Stat(_) => F::Stat,
            Decoder::Access(_) => F::Access,
            Decoder::Readlink(_) => F::Readlink,
            Decoder::Mkdir(_) => F::Mkdir,
            Decoder::Unlink(_) => F::Unlink,
            Decoder::Mknod(_) => F::Mknod,
            Decoder::Symlink(_) => F::Symlink,
            Decoder::Rename(_) => F::Rename,
            Decoder::Link(_) => F::Link,
            Decoder::Chmod(_) => F::Chmod,
            Decoder::Chown(_) => F::Chown,
            Decoder::Utime(_) => F::Utime,
            Decoder::Xattr(_) => F::Xattr,
            Decoder::Inotify(_) => F::InotifyAddWatch,
            Decoder::Exec(_) => F::Exec,
            Decoder::FdMetadata(_) => F::FdMetadata,
            Decoder::Memfd(_) => F::Memfd,
            Decoder::Statfs(_) => F::Statfs,
            Decoder::Chdir(_) => F::Chdir,
            Decoder::Truncate(_) => F::Truncate,
            Decoder::SocketAddress(_) => F::SocketAddress,
            Decoder::Socket(_) => F::Socket,
            Decoder::Send(_) => F::Send,
            Decoder::Accept(_) => F::Accept,
            Decoder::SocketName(_) => F::SocketName,
        }
    }
}

/// The decoder of syscall `nr`, if the agent serves it.
pub fn decoder(nr: i64) -> Option<Decoder> {
    use Decoder as D;
    Some(match nr {
        libc::SYS_open => D::Open(open),
        libc::SYS_creat => D::Open(creat),
        libc::SYS_openat => D::Open(openat),
        libc::SYS_openat2 => D::Open(openat2),
        libc::SYS_stat => D::Stat(stat),
        libc::SYS_lstat => D::Stat(lstat),
        libc::SYS_newfstatat => D::Stat(newfstatat),
        libc::SYS_statx => D::Stat(statx),
        libc::SYS_access => D::Access(access),
        libc::SYS_faccessat => D::Access(faccessat),
        libc::SYS_faccessat2 => D::Access(faccessat2),
        libc::SYS_readlink => D::Readlink(readlink),
        libc::SYS_readlinkat => D::Readlink(readlinkat),
        libc::SYS_mkdir => D::Mkdir(mkdir),
        libc::SYS_mkdirat => D::Mkdir(mkdirat),
        libc::SYS_unlink => D::Unlink(unlink),
        libc::SYS_unlinkat => D::Unlink(unlinkat),
        libc::SYS_rmdir => D::Unlink(rmdir),
        libc::SYS_mknod => D::Mknod(mknod),
        libc::SYS_mknodat => D::Mknod(mknodat),
        libc::SYS_symlink => D::Symlink(symlink),
        libc::SYS_symlinkat => D::Symlink(symlinkat),
        libc::SYS_rename => D::Rename(rename),
        libc::SYS_renameat => D::Rename(renameat),
        libc::SYS_renameat2 => D::Rename(renameat2),
        libc::SYS_link => D::Link(link),
        libc::SYS_linkat => D::Link(linkat),
        libc::SYS_chmod => D::Chmod(chmod),
        libc::SYS_fchmodat => D::Chmod(fchmodat),
        libc::SYS_fchmodat2 => D::Chmod(fchmodat2),
        libc::SYS_chown => D::Chown(chown),
        libc::SYS_lchown => D::Chown(lchown),
        libc::SYS_fchownat => D::Chown(fchownat),
        libc::SYS_utime => D::Utime(utime),
        libc::SYS_utimes => D::Utime(utimes),
        libc::SYS_futimesat => D::Utime(futimesat),
        libc::SYS_utimensat => D::Utime(utimensat),
        libc::SYS_getxattr => D::Xattr(getxattr),
        libc::SYS_lgetxattr => D::Xattr(lgetxattr),
        libc::SYS_listxattr => D::Xattr(listxattr),
        libc::SYS_llistxattr => D::Xattr(llistxattr),
        libc::SYS_setxattr => D::Xattr(setxattr),
        libc::SYS_lsetxattr => D::Xattr(lsetxattr),
        libc::SYS_removexattr => D::Xattr(removexattr),
        libc::SYS_lremovexattr => D::Xattr(lremovexattr),
        libc::SYS_inotify_add_watch => D::Inotify(inotify_add_watch),
        libc::SYS_execve => D::Exec(execve),
        libc::SYS_execveat => D::Exec(execveat),
        libc::SYS_fchmod => D::FdMetadata(fchmod),
        libc::SYS_fchown => D::FdMetadata(fchown),
        libc::SYS_fsetxattr => D::FdMetadata(fsetxattr),
        libc::SYS_fremovexattr => D::FdMetadata(fremovexattr),
        libc::SYS_memfd_create => D::Memfd(memfd_create),
        libc::SYS_statfs => D::Statfs(cwd_path),
        libc::SYS_chdir => D::Chdir(cwd_path),
        libc::SYS_truncate => D::Truncate(cwd_path),
        libc::SYS_connect => D::SocketAddress(connect),
        libc::SYS_bind => D::SocketAddress(bind),
        libc::SYS_socket => D::Socket(socket),
        libc::SYS_sendto => D::Send(sendto),
        libc::SYS_sendmsg => D::Send(sendmsg),
        libc::SYS_sendmmsg => D::Send(sendmmsg),
        libc::SYS_accept => D::Accept(accept),
        libc::SYS_accept4 => D::Accept(accept4),
        libc::SYS_getsockname => D::SocketName(getsockname),
        libc::SYS_getpeername => D::SocketName(getpeername),
        _ => return None,
    })
}

const CWD: DirFd = DirFd(libc::AT_FDCWD);

fn path(c: &Client, addr: u64) -> Result<Vec<u8>, Errno> {
    c.path_arg(addr)
}

fn open_args(
    c: &Client,
    dirfd: DirFd,
    addr: u64,
    flags: u64,
    mode: u64,
    resolve: u64,
) -> Result<Copied<OpenArgs>, Errno> {
    Ok(Copied(OpenArgs {
        dirfd,
        path: path(c, addr)?,
        flags: flags as u32 as i32,
        mode: (mode & 0o7777) as u32,
        resolve,
    }))
}

/// `open(path, flags, mode)`.
fn open(c: &Client) -> Result<Copied<OpenArgs>, Errno> {
    open_args(c, CWD, c.arg(0), c.arg(1), c.arg(2), 0)
}

/// `creat(path, mode)`: `open(path, O_CREAT | O_WRONLY | O_TRUNC, mode)`.
fn creat(c: &Client) -> Result<Copied<OpenArgs>, Errno> {
    let flags = (libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC) as u64;
    open_args(c, CWD, c.arg(0), flags, c.arg(1), 0)
}

/// `openat(dirfd, path, flags, mode)`.
fn openat(c: &Client) -> Result<Copied<OpenArgs>, Errno> {
    open_args(c, DirFd(c.int(0)), c.arg(1), c.arg(2), c.arg(3), 0)
}

/// `openat2(dirfd, path, how, size)`: `struct open_how { u64 flags, mode, resolve }`, of the
/// size the caller gives.
fn openat2(c: &Client) -> Result<Copied<OpenArgs>, Errno> {
    let size = super::decode::open_how_size(c.arg(3)).typed()?;
    let mut how = vec![0u8; size];
    c.read(c.arg(2), &mut how)?;
    let how = super::decode::open_how(&how).typed()?;
    if how.flags >> 32 != 0 {
        // Flags no open has: the kernel's EINVAL, never the low half taken alone.
        return Err(Errno::INVAL);
    }
    open_args(
        c,
        DirFd(c.int(0)),
        c.arg(1),
        how.flags,
        how.mode,
        how.resolve,
    )
}

fn stat_args(
    c: &Client,
    dirfd: DirFd,
    addr: u64,
    flags: i32,
    buf: u64,
    statx_mask: Option<u32>,
) -> Result<Copied<StatArgs>, Errno> {
    // statx accepts a NULL path with AT_EMPTY_PATH (Linux 6.11).
    let path = if addr == 0 && flags & libc::AT_EMPTY_PATH != 0 {
        Vec::new()
    } else {
        path(c, addr)?
    };
    Ok(Copied(StatArgs {
        dirfd,
        path,
        flags,
        buf,
        statx_mask,
    }))
}

/// `stat(path, buf)`.
fn stat(c: &Client) -> Result<Copied<StatArgs>, Errno> {
    stat_args(c, CWD, c.arg(0), 0, c.arg(1), None)
}

/// `lstat(path, buf)`.
fn lstat(c: &Client) -> Result<Copied<StatArgs>, Errno> {
    stat_args(c, CWD, c.arg(0), libc::AT_SYMLINK_NOFOLLOW, c.arg(1), None)
}

/// `newfstatat(dirfd, path, buf, flags)`.
fn newfstatat(c: &Client) -> Result<Copied<StatArgs>, Errno> {
    stat_args(c, DirFd(c.int(0)), c.arg(1), c.int(3), c.arg(2), None)
}

/// `statx(dirfd, path, flags, mask, buf)`.
fn statx(c: &Client) -> Result<Copied<StatArgs>, Errno> {
    let mask = c.arg(3) as u32;
    stat_args(c, DirFd(c.int(0)), c.arg(1), c.int(2), c.arg(4), Some(mask))
}

fn access_args(
    c: &Client,
    dirfd: DirFd,
    addr: u64,
    mode: i32,
    flags: i32,
) -> Result<Copied<AccessArgs>, Errno> {
    if mode & !(libc::R_OK | libc::W_OK | libc::X_OK) != 0 {
        return Err(Errno::INVAL);
    }
    Ok(Copied(AccessArgs {
        dirfd,
        path: path(c, addr)?,
        mode,
        flags,
    }))
}

/// `access(path, mode)`.
fn access(c: &Client) -> Result<Copied<AccessArgs>, Errno> {
    access_args(c, CWD, c.arg(0), c.int(1), 0)
}

/// `faccessat(dirfd, path, mode)` (the system call has no flags).
fn faccessat(c: &Client) -> Result<Copied<AccessArgs>, Errno> {
    access_args(c, DirFd(c.int(0)), c.arg(1), c.int(2), 0)
}

/// `faccessat2(dirfd, path, mode, flags)`.
fn faccessat2(c: &Client) -> Result<Copied<AccessArgs>, Errno> {
    access_args(c, DirFd(c.int(0)), c.arg(1), c.int(2), c.int(3))
}

fn readlink_args(
    c: &Client,
    dirfd: DirFd,
    addr: u64,
    buf: u64,
    size: u64,
) -> Result<Copied<ReadlinkArgs>, Errno> {
    let size = size as u32 as i32;
    if size <= 0 {
        return Err(Errno::INVAL);
    }
    Ok(Copied(ReadlinkArgs {
        dirfd,
        path: path(c, addr)?,
        buf,
        size: size as usize,
    }))
}

/// `readlink(path, buf, size)`.
fn readlink(c: &Client) -> Result<Copied<ReadlinkArgs>, Errno> {
    readlink_args(c, CWD, c.arg(0), c.arg(1), c.arg(2))
}

/// `readlinkat(dirfd, path, buf, size)`.
fn readlinkat(c: &Client) -> Result<Copied<ReadlinkArgs>, Errno> {
    readlink_args(c, DirFd(c.int(0)), c.arg(1), c.arg(2), c.arg(3))
}

fn path_args(c: &Client, dirfd: DirFd, addr: u64, bits: u32) -> Result<Copied<PathArgs>, Errno> {
    Ok(Copied(PathArgs {
        dirfd,
        path: path(c, addr)?,
        bits,
    }))
}

/// `mkdir(path, mode)`.
fn mkdir(c: &Client) -> Result<Copied<PathArgs>, Errno> {
    path_args(c, CWD, c.arg(0), c.arg(1) as u32)
}

/// `mkdirat(dirfd, path, mode)`.
fn mkdirat(c: &Client) -> Result<Copied<PathArgs>, Errno> {
    path_args(c, DirFd(c.int(0)), c.arg(1), c.arg(2) as u32)
}

/// `unlink(path)`.
fn unlink(c: &Client) -> Result<Copied<PathArgs>, Errno> {
    path_args(c, CWD, c.arg(0), 0)
}

/// `rmdir(path)`: `unlinkat(AT_FDCWD, path, AT_REMOVEDIR)`.
fn rmdir(c: &Client) -> Result<Copied<PathArgs>, Errno> {
    path_args(c, CWD, c.arg(0), libc::AT_REMOVEDIR as u32)
}

/// `unlinkat(dirfd, path, flags)`: `AT_REMOVEDIR` is the only flag.
fn unlinkat(c: &Client) -> Result<Copied<PathArgs>, Errno> {
    let flags = c.int(2);
    if flags & !libc::AT_REMOVEDIR != 0 {
        return Err(Errno::INVAL);
    }
    path_args(c, DirFd(c.int(0)), c.arg(1), flags as u32)
}

/// `mknod(path, mode, dev)`.
fn mknod(c: &Client) -> Result<Copied<MknodArgs>, Errno> {
    Ok(Copied(MknodArgs {
        dirfd: CWD,
        path: path(c, c.arg(0))?,
        mode: c.arg(1) as u32,
        dev: c.arg(2),
    }))
}

/// `mknodat(dirfd, path, mode, dev)`.
fn mknodat(c: &Client) -> Result<Copied<MknodArgs>, Errno> {
    Ok(Copied(MknodArgs {
        dirfd: DirFd(c.int(0)),
        path: path(c, c.arg(1))?,
        mode: c.arg(2) as u32,
        dev: c.arg(3),
    }))
}

/// `symlink(target, path)`.
fn symlink(c: &Client) -> Result<Copied<SymlinkArgs>, Errno> {
    Ok(Copied(SymlinkArgs {
        target: path(c, c.arg(0))?,
        dirfd: CWD,
        path: path(c, c.arg(1))?,
    }))
}

/// `symlinkat(target, dirfd, path)`.
fn symlinkat(c: &Client) -> Result<Copied<SymlinkArgs>, Errno> {
    Ok(Copied(SymlinkArgs {
        target: path(c, c.arg(0))?,
        dirfd: DirFd(c.int(1)),
        path: path(c, c.arg(2))?,
    }))
}

fn two_paths(
    c: &Client,
    odir: DirFd,
    oaddr: u64,
    ndir: DirFd,
    naddr: u64,
    flags: u32,
) -> Result<Copied<TwoPathArgs>, Errno> {
    Ok(Copied(TwoPathArgs {
        odir,
        old: path(c, oaddr)?,
        ndir,
        new: path(c, naddr)?,
        flags,
    }))
}

fn rename_args(
    c: &Client,
    odir: DirFd,
    oaddr: u64,
    ndir: DirFd,
    naddr: u64,
    flags: u32,
) -> Result<Copied<TwoPathArgs>, Errno> {
    if flags & !(libc::RENAME_NOREPLACE | libc::RENAME_EXCHANGE) != 0 {
        // RENAME_WHITEOUT makes a device node: never in a sandbox.
        return Err(Errno::INVAL);
    }
    two_paths(c, odir, oaddr, ndir, naddr, flags)
}

/// `rename(old, new)`.
fn rename(c: &Client) -> Result<Copied<TwoPathArgs>, Errno> {
    rename_args(c, CWD, c.arg(0), CWD, c.arg(1), 0)
}

/// `renameat(odir, old, ndir, new)`.
fn renameat(c: &Client) -> Result<Copied<TwoPathArgs>, Errno> {
    rename_args(c, DirFd(c.int(0)), c.arg(1), DirFd(c.int(2)), c.arg(3), 0)
}

/// `renameat2(odir, old, ndir, new, flags)`.
fn renameat2(c: &Client) -> Result<Copied<TwoPathArgs>, Errno> {
    let flags = c.arg(4) as u32;
    rename_args(
        c,
        DirFd(c.int(0)),
        c.arg(1),
        DirFd(c.int(2)),
        c.arg(3),
        flags,
    )
}

/// `link(old, new)`.
fn link(c: &Client) -> Result<Copied<TwoPathArgs>, Errno> {
    two_paths(c, CWD, c.arg(0), CWD, c.arg(1), 0)
}

/// `linkat(odir, old, ndir, new, flags)`.
fn linkat(c: &Client) -> Result<Copied<TwoPathArgs>, Errno> {
    let flags = c.int(4) as u32;
    two_paths(
        c,
        DirFd(c.int(0)),
        c.arg(1),
        DirFd(c.int(2)),
        c.arg(3),
        flags,
    )
}

fn chmod_args(
    c: &Client,
    dirfd: DirFd,
    addr: u64,
    mode: u64,
    flags: i32,
) -> Result<Copied<ChmodArgs>, Errno> {
    Ok(Copied(ChmodArgs {
        dirfd,
        path: path(c, addr)?,
        mode: mode as u32,
        flags,
    }))
}

/// `chmod(path, mode)`.
fn chmod(c: &Client) -> Result<Copied<ChmodArgs>, Errno> {
    chmod_args(c, CWD, c.arg(0), c.arg(1), 0)
}

/// `fchmodat(dirfd, path, mode)` (the system call has no flags).
fn fchmodat(c: &Client) -> Result<Copied<ChmodArgs>, Errno> {
    chmod_args(c, DirFd(c.int(0)), c.arg(1), c.arg(2), 0)
}

/// `fchmodat2(dirfd, path, mode, flags)`.
fn fchmodat2(c: &Client) -> Result<Copied<ChmodArgs>, Errno> {
    chmod_args(c, DirFd(c.int(0)), c.arg(1), c.arg(2), c.int(3))
}

fn chown_args(
    c: &Client,
    dirfd: DirFd,
    addr: u64,
    owner: [u64; 2],
    flags: i32,
) -> Result<Copied<ChownArgs>, Errno> {
    Ok(Copied(ChownArgs {
        dirfd,
        path: path(c, addr)?,
        uid: owner[0] as u32,
        gid: owner[1] as u32,
        flags,
    }))
}

/// `chown(path, uid, gid)`.
fn chown(c: &Client) -> Result<Copied<ChownArgs>, Errno> {
    chown_args(c, CWD, c.arg(0), [c.arg(1), c.arg(2)], 0)
}

/// `lchown(path, uid, gid)`.
fn lchown(c: &Client) -> Result<Copied<ChownArgs>, Errno> {
    let nofollow = libc::AT_SYMLINK_NOFOLLOW;
    chown_args(c, CWD, c.arg(0), [c.arg(1), c.arg(2)], nofollow)
}

/// `fchownat(dirfd, path, uid, gid, flags)`.
fn fchownat(c: &Client) -> Result<Copied<ChownArgs>, Errno> {
    chown_args(c, DirFd(c.int(0)), c.arg(1), [c.arg(2), c.arg(3)], c.int(4))
}

/// The times at `addr` (none when NULL), copied first, once, in `words` 64-bit words, and put
/// in utimensat's shape by `shape`.
fn times(
    c: &Client,
    addr: u64,
    words: usize,
    shape: fn([i64; 4]) -> [(i64, i64); 2],
) -> Result<Option<[(i64, i64); 2]>, Errno> {
    if addr == 0 {
        return Ok(None);
    }
    let mut raw = [0u8; 32];
    c.read(addr, &mut raw[..words * 8])?;
    let w: [i64; 4] = std::array::from_fn(|i| {
        i64::from_ne_bytes(raw[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
    });
    Ok(Some(shape(w)))
}

fn utime_args(
    c: &Client,
    dirfd: DirFd,
    addr: u64,
    times: Option<[(i64, i64); 2]>,
    flags: i32,
) -> Result<Copied<UtimeArgs>, Errno> {
    let path = if addr == 0 {
        None
    } else {
        Some(path(c, addr)?)
    };
    Ok(Copied(UtimeArgs {
        dirfd,
        path,
        times,
        flags,
    }))
}

/// `utime(path, struct utimbuf *)`: seconds only.
fn utime(c: &Client) -> Result<Copied<UtimeArgs>, Errno> {
    let t = times(c, c.arg(1), 2, |w| [(w[0], 0), (w[1], 0)])?;
    utime_args(c, CWD, c.arg(0), t, 0)
}

/// The shape of two `struct timeval`s.
fn timevals(w: [i64; 4]) -> [(i64, i64); 2] {
    [(w[0], w[1] * 1000), (w[2], w[3] * 1000)]
}

/// `utimes(path, struct timeval[2])`.
fn utimes(c: &Client) -> Result<Copied<UtimeArgs>, Errno> {
    let t = times(c, c.arg(1), 4, timevals)?;
    utime_args(c, CWD, c.arg(0), t, 0)
}

/// `futimesat(dirfd, path, struct timeval[2])`.
fn futimesat(c: &Client) -> Result<Copied<UtimeArgs>, Errno> {
    let t = times(c, c.arg(2), 4, timevals)?;
    utime_args(c, DirFd(c.int(0)), c.arg(1), t, 0)
}

/// `utimensat(dirfd, path, struct timespec[2], flags)`.
fn utimensat(c: &Client) -> Result<Copied<UtimeArgs>, Errno> {
    let t = times(c, c.arg(2), 4, |w| [(w[0], w[1]), (w[2], w[3])])?;
    utime_args(c, DirFd(c.int(0)), c.arg(1), t, c.int(3))
}

/// Largest xattr value or list the kernel handles (`XATTR_SIZE_MAX`).
pub const XATTR_SIZE_MAX: usize = 65536;

/// The attribute name at `addr`, checked as the kernel checks it.
fn xattr_name(c: &Client, addr: u64) -> Result<std::ffi::CString, Errno> {
    super::decode::xattr_name(path(c, addr)?).typed()
}

/// A set*xattr value: `size` bytes at `addr`, bounded by `XATTR_SIZE_MAX` (`E2BIG` above).
fn xattr_value(c: &Client, addr: u64, size: u64) -> Result<Vec<u8>, Errno> {
    let size = size as usize;
    if size > XATTR_SIZE_MAX {
        return Err(Errno::TOOBIG);
    }
    let mut v = vec![0u8; size];
    c.read(addr, &mut v)?;
    Ok(v)
}

/// Which xattr call: whether it follows a final symlink, and what it does.
#[derive(Clone, Copy)]
enum XattrCall {
    Get,
    List,
    Set,
    Remove,
}

fn xattr_args(c: &Client, follow: bool, call: XattrCall) -> Result<Copied<XattrArgs>, Errno> {
    let path = path(c, c.arg(0))?;
    let name = match call {
        XattrCall::List => None,
        _ => Some(xattr_name(c, c.arg(1))?),
    };
    let op = match call {
        XattrCall::Get => XattrOp::Get {
            buf: c.arg(2),
            size: (c.arg(3) as usize).min(XATTR_SIZE_MAX),
        },
        XattrCall::List => XattrOp::List {
            buf: c.arg(1),
            size: (c.arg(2) as usize).min(XATTR_SIZE_MAX),
        },
        XattrCall::Set => XattrOp::Set {
            value: xattr_value(c, c.arg(2), c.arg(3))?,
            flags: c.arg(4) as u32,
        },
        XattrCall::Remove => XattrOp::Remove,
    };
    Ok(Copied(XattrArgs {
        path,
        follow,
        name,
        op,
    }))
}

/// `getxattr(path, name, value, size)`.
fn getxattr(c: &Client) -> Result<Copied<XattrArgs>, Errno> {
    xattr_args(c, true, XattrCall::Get)
}

/// `lgetxattr(path, name, value, size)`.
fn lgetxattr(c: &Client) -> Result<Copied<XattrArgs>, Errno> {
    xattr_args(c, false, XattrCall::Get)
}

/// `listxattr(path, list, size)`.
fn listxattr(c: &Client) -> Result<Copied<XattrArgs>, Errno> {
    xattr_args(c, true, XattrCall::List)
}

/// `llistxattr(path, list, size)`.
fn llistxattr(c: &Client) -> Result<Copied<XattrArgs>, Errno> {
    xattr_args(c, false, XattrCall::List)
}

/// `setxattr(path, name, value, size, flags)`.
fn setxattr(c: &Client) -> Result<Copied<XattrArgs>, Errno> {
    xattr_args(c, true, XattrCall::Set)
}

/// `lsetxattr(path, name, value, size, flags)`.
fn lsetxattr(c: &Client) -> Result<Copied<XattrArgs>, Errno> {
    xattr_args(c, false, XattrCall::Set)
}

/// `removexattr(path, name)`.
fn removexattr(c: &Client) -> Result<Copied<XattrArgs>, Errno> {
    xattr_args(c, true, XattrCall::Remove)
}

/// `lremovexattr(path, name)`.
fn lremovexattr(c: &Client) -> Result<Copied<XattrArgs>, Errno> {
    xattr_args(c, false, XattrCall::Remove)
}

/// `inotify_add_watch(fd, path, mask)`.
fn inotify_add_watch(c: &Client) -> Result<Copied<InotifyArgs>, Errno> {
    Ok(Copied(InotifyArgs {
        fd: c.int(0),
        path: path(c, c.arg(1))?,
        mask: c.arg(2) as u32,
    }))
}

/// `execve(path, argv, envp)`.
fn execve(c: &Client) -> Result<Copied<ExecArgs>, Errno> {
    Ok(Copied(ExecArgs {
        dirfd: CWD,
        path: path(c, c.arg(0))?,
        flags: 0,
    }))
}

/// `execveat(dirfd, path, argv, envp, flags)`.
fn execveat(c: &Client) -> Result<Copied<ExecArgs>, Errno> {
    Ok(Copied(ExecArgs {
        dirfd: DirFd(c.int(0)),
        path: path(c, c.arg(1))?,
        flags: c.int(4),
    }))
}

fn fd_change(c: &Client, change: FdChange) -> Result<Copied<FdMetadataArgs>, Errno> {
    Ok(Copied(FdMetadataArgs {
        fd: c.int(0),
        change,
    }))
}

/// `fchmod(fd, mode)`.
fn fchmod(c: &Client) -> Result<Copied<FdMetadataArgs>, Errno> {
    fd_change(c, FdChange::Mode(c.arg(1) as u32))
}

/// `fchown(fd, uid, gid)`.
fn fchown(c: &Client) -> Result<Copied<FdMetadataArgs>, Errno> {
    fd_change(c, FdChange::Owner(c.arg(1) as u32, c.arg(2) as u32))
}

/// `fsetxattr(fd, name, value, size, flags)`.
fn fsetxattr(c: &Client) -> Result<Copied<FdMetadataArgs>, Errno> {
    let name = xattr_name(c, c.arg(1))?;
    let value = xattr_value(c, c.arg(2), c.arg(3))?;
    let flags = c.arg(4) as u32;
    fd_change(c, FdChange::SetXattr { name, value, flags })
}

/// `fremovexattr(fd, name)`.
fn fremovexattr(c: &Client) -> Result<Copied<FdMetadataArgs>, Errno> {
    let name = xattr_name(c, c.arg(1))?;
    fd_change(c, FdChange::RemoveXattr(name))
}

/// `memfd_create(name, flags)`.
fn memfd_create(c: &Client) -> Result<Copied<MemfdArgs>, Errno> {
    Ok(Copied(MemfdArgs {
        name: path(c, c.arg(0))?,
        flags: c.arg(1) as u32,
    }))
}

/// `statfs(path, buf)`, `chdir(path)`, `truncate(path, length)`.
fn cwd_path(c: &Client) -> Result<Copied<CwdPathArgs>, Errno> {
    Ok(Copied(CwdPathArgs {
        path: path(c, c.arg(0))?,
        arg: c.arg(1),
    }))
}

fn address_args(c: &Client, connect: bool) -> Result<Copied<AddressArgs>, Errno> {
    let len = c.arg(2) as u32 as usize;
    if len > super::net::SOCKADDR_MAX {
        return Err(Errno::INVAL);
    }
    let mut addr = vec![0u8; len];
    c.read(c.arg(1), &mut addr)?;
    Ok(Copied(AddressArgs {
        fd: c.int(0),
        addr,
        connect,
    }))
}

/// `connect(fd, addr, len)`.
fn connect(c: &Client) -> Result<Copied<AddressArgs>, Errno> {
    address_args(c, true)
}

/// `bind(fd, addr, len)`.
fn bind(c: &Client) -> Result<Copied<AddressArgs>, Errno> {
    address_args(c, false)
}

/// `socket(domain, type, protocol)`.
fn socket(c: &Client) -> Result<Copied<SocketArgs>, Errno> {
    socket_args(c.registers()).map(Copied)
}

/// `socket`'s registers, decoded (also for capability mode, which sees socket calls first).
fn socket_args(r: Registers) -> Result<SocketArgs, Errno> {
    let ty = r.int(1);
    let (kind, flags) = (ty & 0xf, ty & !0xf);
    if flags & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) != 0 {
        return Err(Errno::INVAL);
    }
    Ok(SocketArgs {
        domain: r.int(0),
        kind,
        protocol: r.int(2),
        nonblock: ty & libc::SOCK_NONBLOCK != 0,
        cloexec: ty & libc::SOCK_CLOEXEC != 0,
    })
}

impl Live<Registers> {
    /// A live `socket` call's registers as its arguments: decoded from what was confirmed
    /// live, with nothing copied from memory.
    pub fn socket(self) -> Result<Live<SocketArgs>, Errno> {
        socket_args(self.0).map(Live)
    }
}

/// A peer's address at `ptr` of `len` bytes (`None` for a NULL or empty one).
fn copy_name(c: &Client, ptr: u64, len: usize) -> Result<Option<Vec<u8>>, Errno> {
    if ptr == 0 || len == 0 {
        return Ok(None);
    }
    if len > super::net::SOCKADDR_MAX {
        return Err(Errno::INVAL);
    }
    let mut name = vec![0u8; len];
    c.read(ptr, &mut name)?;
    Ok(Some(name))
}

/// Copies a `struct msghdr` at `at` and everything it points to, data up to `cap` bytes.
fn copy_message(c: &Client, at: u64, cap: usize) -> Result<Message, Errno> {
    let mut hdr = [0u8; 56];
    c.read(at, &mut hdr)?;
    let word = |o: usize| u64::from_ne_bytes(hdr[o..o + 8].try_into().expect("8 bytes"));
    let half = |o: usize| u32::from_ne_bytes(hdr[o..o + 4].try_into().expect("4 bytes"));
    let name = copy_name(c, word(0), half(8) as usize)?;
    let (iov, iovlen) = (word(16), word(24) as usize);
    if iovlen > super::net::IOV_MAX {
        return Err(Errno::MSGSIZE);
    }
    let mut vecs = vec![0u8; iovlen * 16];
    c.read(iov, &mut vecs)?;
    let mut data = Vec::new();
    let mut declared = 0usize;
    for v in vecs.chunks_exact(16) {
        let base = u64::from_ne_bytes(v[..8].try_into().expect("8 bytes"));
        let len = u64::from_ne_bytes(v[8..].try_into().expect("8 bytes")) as usize;
        declared = declared.saturating_add(len);
        let take = len.min(cap - data.len());
        if take > 0 {
            let start = data.len();
            data.resize(start + take, 0);
            c.read(base, &mut data[start..])?;
        }
    }
    let (control_at, control_len) = (word(32), word(40) as usize);
    if control_len > super::net::CONTROL_MAX {
        return Err(Errno::NOBUFS);
    }
    let mut control = vec![0u8; if control_at == 0 { 0 } else { control_len }];
    c.read(control_at, &mut control)?;
    Ok(Message {
        name,
        data,
        declared,
        control,
    })
}

/// `sendto(fd, buf, len, flags, addr, addrlen)`.
fn sendto(c: &Client) -> Result<Copied<SendArgs>, Errno> {
    let declared = c.arg(2) as usize;
    let mut data = vec![0u8; declared.min(super::net::SEND_MAX)];
    c.read(c.arg(1), &mut data)?;
    let name = copy_name(c, c.arg(4), c.arg(5) as u32 as usize)?;
    Ok(Copied(SendArgs {
        fd: c.int(0),
        flags: c.int(3),
        sends: Sends::One(Message {
            name,
            data,
            declared,
            control: Vec::new(),
        }),
    }))
}

/// `sendmsg(fd, msg, flags)`.
fn sendmsg(c: &Client) -> Result<Copied<SendArgs>, Errno> {
    let msg = copy_message(c, c.arg(1), super::net::SEND_MAX)?;
    Ok(Copied(SendArgs {
        fd: c.int(0),
        flags: c.int(2),
        sends: Sends::One(msg),
    }))
}

/// `sendmmsg(fd, msgvec, vlen, flags)`: at most `UIO_MAXIOV` messages, and
/// [`super::net::SENDMMSG_MAX`] bytes copied for all of them.
fn sendmmsg(c: &Client) -> Result<Copied<SendArgs>, Errno> {
    use super::net::{IOV_MAX, SENDMMSG_MAX, SEND_MAX};
    let (vec, vlen) = (c.arg(1), (c.arg(2) as u32 as usize).min(IOV_MAX));
    let mut msgs = Vec::new();
    let mut budget = SENDMMSG_MAX;
    for i in 0..vlen as u64 {
        if budget == 0 {
            break;
        }
        let m = copy_message(c, vec + i * MMSGHDR, budget.min(SEND_MAX))?;
        // Control data counts too: 1,024 messages of 64 KiB of it each, and no data, were
        // 64 MiB held for one call.
        let held = m.data.len() + m.control.len() + m.name.as_ref().map_or(0, Vec::len);
        budget -= held.min(budget);
        msgs.push(m);
    }
    Ok(Copied(SendArgs {
        fd: c.int(0),
        flags: c.int(3),
        sends: Sends::Many { vec, msgs },
    }))
}

fn accept_args(c: &Client, flags: i32) -> Result<Copied<AcceptArgs>, Errno> {
    if flags & !(libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC) != 0 {
        return Err(Errno::INVAL);
    }
    let (addr_at, len_at) = (c.arg(1), c.arg(2));
    let room = if addr_at == 0 {
        0
    } else {
        let mut len = [0u8; 4];
        c.read(len_at, &mut len)?;
        i32::from_ne_bytes(len)
    };
    if room < 0 {
        return Err(Errno::INVAL);
    }
    Ok(Copied(AcceptArgs {
        fd: c.int(0),
        peer: (addr_at != 0).then_some((addr_at, len_at)),
        room: room as usize,
        flags,
    }))
}

/// `accept(fd, addr, addrlen)`.
fn accept(c: &Client) -> Result<Copied<AcceptArgs>, Errno> {
    accept_args(c, 0)
}

/// `accept4(fd, addr, addrlen, flags)`.
fn accept4(c: &Client) -> Result<Copied<AcceptArgs>, Errno> {
    accept_args(c, c.int(3))
}

fn socket_name_args(c: &Client, peer: bool) -> Result<Copied<SocketNameArgs>, Errno> {
    Ok(Copied(SocketNameArgs {
        fd: c.int(0),
        addr_at: c.arg(1),
        len_at: c.arg(2),
        peer,
    }))
}

/// `getsockname(fd, addr, addrlen)`.
fn getsockname(c: &Client) -> Result<Copied<SocketNameArgs>, Errno> {
    socket_name_args(c, false)
}

/// `getpeername(fd, addr, addrlen)`.
fn getpeername(c: &Client) -> Result<Copied<SocketNameArgs>, Errno> {
    socket_name_args(c, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::{Class, Family, TABLE};

    /// Every row of the table the agent serves, in any network, has a decoder of the family
    /// the table names, and no decoder serves a row of another: the table and the decoders
    /// cannot drift apart, and no handler is left to decode for itself.
    #[test]
    fn each_row_has_its_decoder() {
        use crate::syscalls::{Guard, Network};
        let mut rows = 0;
        for entry in TABLE {
            // The widest network: every socket family the agent serves is delegated there.
            let family = match entry.class_in(Network::Host { udp: true }) {
                Class::Delegated(f) => f,
                Class::Guarded(Guard::HostSocket) => Family::Socket,
                Class::Guarded(Guard::SendTo) => Family::Send,
                _ => {
                    assert!(decoder(entry.nr).is_none(), "{}", entry.name());
                    continue;
                }
            };
            match decoder(entry.nr) {
                Some(d) if d.family() == family => rows += 1,
                Some(_) => panic!("{} is decoded as another family", entry.name()),
                None => panic!("{} has no decoder", entry.name()),
            }
        }
        assert_eq!(rows, 66);
    }
}
