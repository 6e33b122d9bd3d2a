//! The steps of a delegated call as types, each table row's argument decoder, and every errno
//! the agent answers on purpose.
//!
//! A request goes copy → check liveness → decide → act (docs/design.md, "The agent's steps"),
//! and the types make that order the only one that compiles for the calls converted so far
//! (every file-system family; the network families, `connect`/`bind`, `socket`, `send*` and
//! `accept*`, still decode in their handlers):
//!
//! - [`Copied`]: the call's arguments, typed, copied out of the caller once. Only the decoders
//!   of this module make one, one decoder per syscall ([`decoder`]): no number is read as
//!   another's layout, and a number with no decoder is `ENOSYS`.
//! - [`Live`]: the same arguments after `SECCOMP_IOCTL_NOTIF_ID_VALID` said the request is
//!   still the caller's (its thread had not died and its id been reused while we copied).
//!   Only [`Client::confirm`] makes one, from a [`Copied`]; handlers take a `Live`, never raw
//!   arguments.
//! - [`Allowed`]: the policy allowed an access to the path walked. Only [`Client::allow`]
//!   makes one, and only with a `Live` request in hand; the acting step of a converted handler
//!   takes it.
//!
//! The network handlers (`connect`/`bind`, `socket`, `send*`, `accept*`) still take the
//! [`Client`], decode their own arguments and return a bare `i32`; [`super::Agent`]'s dispatch
//! turns those into an [`Errno`] at its boundary.
//!
//! # Deliberate errnos
//!
//! Where the agent answers something other than what the kernel would have answered for the
//! same call on the same tree, on purpose (also in docs/design.md, "Errnos the agent chooses"):
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

use super::{Client, Ids};
use rustix::io::Errno;
use warden_policy::Access;

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

    /// The caller's ids, once the request is live (the umask, for a create).
    pub fn ids_of<A>(&self, _live: &Live<A>) -> Result<Ids, Errno> {
        self.ids().map_err(Errno::from_raw_os_error)
    }
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
        }
    }
}

/// The decoder of syscall `nr`, if it is one of the converted calls.
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
        _ => return None,
    })
}

const CWD: DirFd = DirFd(libc::AT_FDCWD);

fn path(c: &Client, addr: u64) -> Result<Vec<u8>, Errno> {
    c.path_arg(addr).typed()
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
    c.read(c.arg(2), &mut how).typed()?;
    let how = super::decode::open_how(&how).typed()?;
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
    c.read(addr, &mut raw[..words * 8]).typed()?;
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
    c.read(addr, &mut v).typed()?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::{Class, Family, TABLE};

    /// Every row of the table the agent serves as an open or a stat has a decoder of that
    /// family, and no decoder serves a row of another: the table and the decoders cannot
    /// drift apart.
    #[test]
    fn each_row_has_its_decoder() {
        let mut rows = 0;
        for entry in TABLE {
            let family = match entry.class {
                Class::Delegated(f) => f,
                _ => {
                    assert!(decoder(entry.nr).is_none(), "{}", entry.name());
                    continue;
                }
            };
            let converted = [
                Family::Open,
                Family::Stat,
                Family::Access,
                Family::Readlink,
                Family::Mkdir,
                Family::Unlink,
                Family::Mknod,
                Family::Symlink,
                Family::Statfs,
                Family::Chdir,
                Family::Truncate,
                Family::Rename,
                Family::Link,
                Family::Chmod,
                Family::Chown,
                Family::Utime,
                Family::Xattr,
                Family::InotifyAddWatch,
                Family::Exec,
                Family::FdMetadata,
                Family::Memfd,
            ];
            match decoder(entry.nr) {
                Some(d) if d.family() == family => rows += 1,
                Some(_) => panic!("{} is decoded as another family", entry.name()),
                None if converted.contains(&family) => {
                    panic!("{} has no decoder", entry.name())
                }
                None => {}
            }
        }
        assert_eq!(rows, 56);
    }
}
