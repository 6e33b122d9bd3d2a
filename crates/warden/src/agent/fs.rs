//! Handlers for the delegated file-system calls, one per family (see
//! [`crate::syscalls::Family`]). Each is a thin decoder of its calls' argument layouts in front
//! of the same steps: copy, live, resolve, check, act, reply.
//!
//! Policy meanings (docs/policy.md): reading a file or listing a directory needs `read`; creating,
//! changing contents or metadata needs `write` on the path; removing needs `unlink`; `execve`
//! needs `exec`. Metadata calls (stat, access F_OK, readlink, statfs, xattr reads) need *some*
//! right on the path: a path the policy says nothing about is invisible.

use super::call::{
    AccessArgs, Allowed, ChmodArgs, ChownArgs, CwdPathArgs, ExecArgs, FdChange, FdMetadataArgs,
    InotifyArgs, Live, MemfdArgs, MknodArgs, OpenArgs, PathArgs, ReadlinkArgs, StatArgs,
    SymlinkArgs, TwoPathArgs, Typed, UtimeArgs, XattrArgs, XattrOp,
};
use super::resolve::{knowable, Base, WalkFlags, Walked};
use super::{Answer, Client, Handled, Served};
use crate::sys::fs as sysfs;
use crate::sys::fs::KernelStruct;
use crate::sys::unotify::Reply;
use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use warden_policy::{Access, AccessSet, RuleId, Verdict};

const AT_FDCWD: i32 = libc::AT_FDCWD;

fn base(dirfd: i32) -> Base {
    if dirfd == AT_FDCWD {
        Base::Cwd
    } else {
        Base::Fd(dirfd)
    }
}

fn walk(c: &Client, dirfd: i32, path: &[u8], follow: bool) -> Result<Walked, i32> {
    c.resolver().walk(
        c,
        c.policy(),
        base(dirfd),
        path,
        WalkFlags {
            follow,
            ..WalkFlags::default()
        },
    )
}

fn errno(e: rustix::io::Errno) -> i32 {
    e.raw_os_error()
}

pub(super) fn io_errno(e: std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// The object must exist; otherwise ENOENT where the policy lets the program know, else EACCES.
fn existing(c: &Client, w: &Walked) -> Result<FileType, i32> {
    w.kind
        .ok_or_else(|| c.resolver().missing(c, c.policy(), &w.path))
}

/// `/proc/self/fd/N` for one of the agent's descriptors: a path that reaches exactly that
/// object (procfs magic link), for calls that only take paths.
fn proc_path(fd: &OwnedFd) -> CString {
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("no NUL")
}

/// Whether the call names a descriptor rather than a path (`AT_EMPTY_PATH` with "").
fn empty_path(path: &[u8], flags: i32) -> bool {
    path.is_empty() && flags & libc::AT_EMPTY_PATH != 0
}

// ---- open, openat, openat2, creat ---------------------------------------------------------------

/// The `RESOLVE_*` flags the agent's walk honours.
const RESOLVE_KNOWN: u64 = libc::RESOLVE_NO_SYMLINKS
    | libc::RESOLVE_NO_MAGICLINKS
    | libc::RESOLVE_BENEATH
    | libc::RESOLVE_NO_XDEV
    | libc::RESOLVE_CACHED;

/// Implements open(2), openat(2), openat2(2) and creat(2), on arguments decoded by
/// [`super::call::decoder`].
pub fn open(c: &Client, call: Live<OpenArgs>) -> Served {
    let a = call.args();
    let flags = a.flags;
    if a.resolve & !RESOLVE_KNOWN != 0 {
        // RESOLVE_IN_ROOT is not supported yet; say so rather than resolve differently.
        return Err(Errno::INVAL);
    }
    let tmpfile = flags & libc::O_TMPFILE == libc::O_TMPFILE;
    let creat = flags & libc::O_CREAT != 0 && !tmpfile;
    let excl = creat && flags & libc::O_EXCL != 0;
    let wflags = WalkFlags {
        follow: flags & libc::O_NOFOLLOW == 0 && !excl,
        no_symlinks: a.resolve & libc::RESOLVE_NO_SYMLINKS != 0,
        beneath: a.resolve & libc::RESOLVE_BENEATH != 0,
    };
    let w = c
        .resolver()
        .walk(c, c.policy(), base(a.dirfd.0), &a.path, wflags)
        .typed()?;
    if let Some(n) = w.descriptor {
        return reopen(c, n, flags).typed();
    }
    // The caller's umask costs a read of /proc/<tid>/status: only creating opens pay it.
    let umask = if creat || tmpfile {
        c.ids_of(&call)?.umask
    } else {
        0
    };
    let mode = Mode::from_bits_retain(safe_mode(a.mode, false) & !umask);
    if tmpfile {
        return open_tmpfile(c, &call, &w, mode);
    }
    let (allowed, fresh) = match w.kind {
        None if creat => (c.allow(&call, &w.path, Access::Write)?, true),
        None => {
            return Err(Errno::from_raw_os_error(c.resolver().missing(
                c,
                c.policy(),
                &w.path,
            )))
        }
        Some(_) if excl => {
            c.allow_visible(&call, &w.path)?;
            return Err(Errno::EXIST);
        }
        Some(kind) => {
            let allowed = check_existing(c, &call, &w, kind)?;
            if flags & libc::O_PATH != 0 && kind == FileType::Symlink {
                // O_PATH descriptors cannot be injected (ADDFD refuses them), so O_PATH is
                // served as a read-only open and needs read permission (docs/limits.md: "O_PATH"); a
                // symlink, which cannot be opened so, gets a stand-in.
                return symlink_stand_in(c, &w, flags & libc::O_CLOEXEC != 0, allowed);
            }
            (allowed, false)
        }
    };
    open_walked(c, &call, &w, Create { fresh, mode }, allowed)
}

/// `O_TMPFILE` in the directory `w`: needs `write` on new entries of it.
fn open_tmpfile(c: &Client, call: &Live<OpenArgs>, w: &Walked, mode: Mode) -> Served {
    let flags = call.args().flags;
    let rights = c.policy().new_entry_rights(&w.path);
    if !rights.contains(Access::Write) {
        return Err(Errno::from_raw_os_error(c.refuse(
            &format!("{}/", w.path.trim_end_matches('/')),
            "O_TMPFILE needs write on new entries of the directory",
            libc::EACCES,
        )));
    }
    existing(c, w).typed()?;
    // The directory we checked, never a symlink swapped in for it since.
    let of = OFlags::from_bits_retain((flags & !libc::O_CLOEXEC) as u32)
        | OFlags::CLOEXEC
        | OFlags::NOFOLLOW;
    let fd = rustix::fs::openat(&w.parent, w.at_name().as_c_str(), of, mode)?;
    c.opened_for_writing(flags & crate::sys::abi::O_ACCMODE != libc::O_RDONLY);
    Ok(Answer::Fd(fd, flags & libc::O_CLOEXEC != 0))
}

/// How an open may create: `fresh` when only `write` on a missing name was checked (so it must
/// create, never open what appeared meanwhile), and the mode of a created file.
struct Create {
    fresh: bool,
    mode: Mode,
}

/// Step 5 of an open: opens the final component of `w` relative to the parent we walked, never
/// following a symlink (a swap after our check makes the open fail with `ELOOP` instead of
/// going elsewhere).
fn open_walked(
    c: &Client,
    call: &Live<OpenArgs>,
    w: &Walked,
    create: Create,
    _allowed: Allowed,
) -> Served {
    let flags = call.args().flags;
    let excl = flags & libc::O_CREAT != 0 && flags & libc::O_EXCL != 0;
    let mut of = flags & !(libc::O_CLOEXEC | libc::O_PATH);
    if flags & libc::O_PATH != 0 {
        of = (of & !crate::sys::abi::O_ACCMODE) | libc::O_RDONLY;
        of &= !(libc::O_CREAT | libc::O_TRUNC | libc::O_EXCL);
    }
    if create.fresh {
        of |= libc::O_EXCL;
    }
    let of =
        OFlags::from_bits_retain(of as u32) | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY;
    let name = w.at_cstr();
    let fd = match rustix::fs::openat(&w.parent, name, of, create.mode) {
        Err(Errno::EXIST) if create.fresh && !excl => {
            // The name was made (or linked) by someone else after we looked: it is an existing
            // file now, and gets the checks an existing file gets, on the object we open.
            let plain = of & !(OFlags::CREATE | OFlags::EXCL);
            let fd = rustix::fs::openat(&w.parent, name, plain, create.mode)?;
            let st = rustix::fs::fstat(&fd)?;
            check_existing(c, call, w, FileType::from_raw_mode(st.st_mode))?;
            fd
        }
        created => {
            let fd = created?;
            if create.fresh {
                c.made(&w.parent, name, false);
            }
            fd
        }
    };
    c.opened_for_writing(of.bits() as i32 & crate::sys::abi::O_ACCMODE != libc::O_RDONLY);
    Ok(Answer::Fd(fd, flags & libc::O_CLOEXEC != 0))
}

/// `open(link, O_PATH | O_NOFOLLOW)` of a symlink, checked as any `O_PATH` open: the kernel
/// gives a descriptor of the link itself, which ADDFD cannot install, so the caller gets a
/// stand-in that the agent takes for the link wherever a path is looked up through it
/// ([`super::stand_in`]). glibc's `fchmodat(AT_SYMLINK_NOFOLLOW)` opens links so (`tar x`).
fn symlink_stand_in(c: &Client, w: &Walked, cloexec: bool, _allowed: Allowed) -> Served {
    let link = w.object().typed()?;
    let st = rustix::fs::fstat(&link)?;
    if FileType::from_raw_mode(st.st_mode) != FileType::Symlink {
        // The link the walk found was replaced since: it is gone.
        return Err(Errno::NOENT);
    }
    c.opened_for_writing(false);
    Ok(Answer::Fd(c.stand_in(link).typed()?, cloexec))
}

/// Opens `/proc/self/fd/N` for a caller whose descriptor `N` is not a file on a path (a pipe,
/// a socket): what `cat /dev/stdin`, `> /dev/stderr` and `<(...)` do. The program already
/// holds the object, so reopening it is its own right (issue 14): the agent duplicates exactly
/// that descriptor (`pidfd_getfd`) and opens it anew through its own `/proc/self/fd`, with the
/// caller's flags, as the kernel does for the caller (a pipe opens again, in either direction;
/// a socket is `ENXIO`).
fn reopen(c: &Client, n: i32, flags: i32) -> Handled {
    // A stand-in is the symlink it stands for: opening it is ELOOP, as through the kernel's
    // O_PATH descriptor.
    let theirs = c.fd_looked_up(n).map_err(|_| libc::ENOENT)?;
    if flags & libc::O_TMPFILE == libc::O_TMPFILE {
        return Err(libc::ENOTDIR);
    }
    if flags & (libc::O_CREAT | libc::O_EXCL) == libc::O_CREAT | libc::O_EXCL {
        return Err(libc::EEXIST);
    }
    // The object exists: O_CREAT does nothing (`> /dev/stderr` asks for it). O_PATH is served
    // as a read-only open, as everywhere in the agent (ADDFD cannot install O_PATH files).
    let mut bits = flags & !(libc::O_CLOEXEC | libc::O_CREAT | libc::O_EXCL);
    if bits & libc::O_PATH != 0 {
        bits =
            (bits & !(libc::O_PATH | crate::sys::abi::O_ACCMODE | libc::O_TRUNC)) | libc::O_RDONLY;
    }
    let of = OFlags::from_bits_retain(bits as u32) | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::openat(
        rustix::fs::CWD,
        proc_path(&theirs).as_c_str(),
        of,
        Mode::empty(),
    )
    .map_err(errno)?;
    c.opened_for_writing(bits & crate::sys::abi::O_ACCMODE != libc::O_RDONLY);
    Ok(Answer::Fd(fd, flags & libc::O_CLOEXEC != 0))
}

/// The checks an open of an existing object of type `kind` at `w` gets: `read` and `write` as
/// its flags ask, no symlink unless `O_PATH`, and device nodes only where a rule names them.
fn check_existing(
    c: &Client,
    call: &Live<OpenArgs>,
    w: &Walked,
    kind: FileType,
) -> Result<Allowed, Errno> {
    let flags = call.args().flags;
    let opath = flags & libc::O_PATH != 0;
    let accmode = flags & crate::sys::abi::O_ACCMODE;
    let reads = opath || accmode == libc::O_RDONLY || accmode == libc::O_RDWR;
    let writes = !opath
        && (accmode == libc::O_WRONLY || accmode == libc::O_RDWR || flags & libc::O_TRUNC != 0);
    let mut allowed = None;
    // A listing of a directory the view holds, as Landlock's rule on the view's root allows it
    // when the kernel decides opens: so a run whose opens all go to the agent (Landlock below
    // ABI 5, `-v`, `--log`) lists what the default run lists (`ls /sys`, `ls /proc`). The view
    // holds only what the policy brings in; what is in the directory is checked as ever. A
    // directory a `path-deny` names stays refused (one the host made after the start in a
    // tree the view masks entry by entry is there, and its names are the policy's to refuse).
    let listing = reads && !writes && kind == FileType::Directory && !opath && c.view_lists();
    let verdict = listing.then(|| c.policy().check(&w.path, Access::Read));
    // The policy's own rule where it has one (the log names it); the view's where it has none.
    if matches!(
        &verdict,
        Some(Verdict::Denied(d)) if !matches!(d, warden_policy::Denial::DeniedBy(_))
    ) {
        allowed = Some(c.allow_by(
            call,
            &w.path,
            "the view: a directory it holds may be listed",
        ));
    } else if reads {
        allowed = Some(c.allow(call, &w.path, Access::Read)?);
    }
    if writes {
        allowed = Some(c.allow(call, &w.path, Access::Write)?);
    }
    if kind == FileType::Symlink && !opath {
        // Only reached with O_NOFOLLOW: what the kernel answers.
        return Err(Errno::LOOP);
    }
    if matches!(kind, FileType::CharacterDevice | FileType::BlockDevice) {
        let named = (!reads || c.policy().names_exactly(&w.path, Access::Read))
            && (!writes || c.policy().names_exactly(&w.path, Access::Write));
        if !named {
            return Err(Errno::from_raw_os_error(c.refuse(
                &w.path,
                &format!(
                    "device nodes are opened only where a rule names them exactly; add: \
                     path-allow {} {}",
                    if writes { "write" } else { "read" },
                    w.path
                ),
                libc::EACCES,
            )));
        }
    }
    // Every access mode reads or writes: `allowed` is set.
    allowed.ok_or(Errno::ACCESS)
}

// ---- stat family --------------------------------------------------------------------------------

/// Implements stat(2), lstat(2), newfstatat(2) and statx(2), on arguments decoded by
/// [`super::call::decoder`].
pub fn stat(c: &Client, call: Live<StatArgs>) -> Served {
    let a = call.args();
    let (dirfd, flags) = (a.dirfd.0, a.flags);
    let sync = flags & libc::AT_STATX_SYNC_TYPE;
    let (dir, name): (OwnedFd, CString) = if empty_path(&a.path, flags) {
        // A descriptor the caller holds: it may look at it (fstat is direct anyway).
        (c.fd_looked_up(dirfd).typed()?, CString::default())
    } else {
        let w = walk(c, dirfd, &a.path, flags & libc::AT_SYMLINK_NOFOLLOW == 0).typed()?;
        match w.descriptor {
            // stat of /dev/stdin on a pipe: the caller's own descriptor, as fstat would.
            Some(n) => (
                c.fd_looked_up(n).map_err(|_| Errno::NOENT)?,
                CString::default(),
            ),
            None => {
                c.allow_metadata(&call, &w.path, w.kind)?;
                existing(c, &w).typed()?;
                let name = w.at_name();
                (w.parent, name)
            }
        }
    };
    let at = libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH | sync;
    // Owners as the program's user namespace shows them, not as the agent sees them.
    let map = c.id_map();
    let io = |e: std::io::Error| Errno::from_io_error(&e).unwrap_or(Errno::IO);
    if let Some(mask) = a.statx_mask {
        let mut st = sysfs::statx(dir.as_fd(), &name, at, mask).map_err(io)?;
        (st.stx_uid, st.stx_gid) = (map.uid_inside(st.stx_uid), map.gid_inside(st.stx_gid));
        c.write(a.buf, st.bytes()).typed()?;
    } else {
        let mut st =
            sysfs::fstatat(dir.as_fd(), &name, at & !libc::AT_STATX_SYNC_TYPE).map_err(io)?;
        (st.st_uid, st.st_gid) = (map.uid_inside(st.st_uid), map.gid_inside(st.st_gid));
        c.write(a.buf, st.bytes()).typed()?;
    }
    Ok(Answer::Reply(Reply::Value(0)))
}

/// Implements statfs(2).
pub fn statfs(c: &Client, call: Live<CwdPathArgs>) -> Served {
    let a = call.args();
    let w = walk(c, AT_FDCWD, &a.path, true).typed()?;
    c.allow_metadata(&call, &w.path, w.kind)?;
    existing(c, &w).typed()?;
    let st = sysfs::fstatfs(w.object().typed()?.as_fd())
        .map_err(io_errno)
        .typed()?;
    c.write(a.arg, st.bytes()).typed()?;
    Ok(Answer::Reply(Reply::Value(0)))
}

// ---- access -------------------------------------------------------------------------------------

/// Implements access(2), faccessat(2) and faccessat2(2).
pub fn access(c: &Client, call: Live<AccessArgs>) -> Served {
    let a = call.args();
    let (dirfd, mode, flags) = (a.dirfd.0, a.mode, a.flags);
    if empty_path(&a.path, flags) {
        let fd = c.fd_looked_up(dirfd).typed()?;
        let m = rustix::fs::Access::from_bits_retain(mode as u32);
        rustix::fs::accessat(&fd, c"", m, rustix::fs::AtFlags::EMPTY_PATH)?;
        return Ok(Answer::Reply(Reply::Value(0)));
    }
    let w = walk(c, dirfd, &a.path, flags & libc::AT_SYMLINK_NOFOLLOW == 0).typed()?;
    // A missing file is ENOENT whatever the mode asks, where its absence is no secret.
    existing(c, &w).typed()?;
    let dir = w.kind == Some(FileType::Directory);
    if mode == libc::F_OK {
        c.allow_metadata(&call, &w.path, w.kind)?;
    }
    for (bit, access) in [
        (libc::R_OK, Access::Read),
        (libc::W_OK, Access::Write),
        (libc::X_OK, Access::Exec),
    ] {
        if mode & bit == 0 {
            continue;
        }
        match (dir, access) {
            // A writable directory is one new entries can be created in (gcc and mktemp ask).
            (true, Access::Write)
                if c.policy().new_entry_rights(&w.path).contains(Access::Write) => {}
            // Searching a directory is walking through it.
            (true, Access::Exec) => {
                c.allow_metadata(&call, &w.path, w.kind)?;
            }
            _ => {
                c.allow(&call, &w.path, access)?;
            }
        }
    }
    let mut at = rustix::fs::AtFlags::SYMLINK_NOFOLLOW;
    if flags & libc::AT_EACCESS != 0 {
        at |= rustix::fs::AtFlags::EACCESS;
    }
    let m = rustix::fs::Access::from_bits_retain(mode as u32);
    rustix::fs::accessat(&w.parent, w.at_cstr(), m, at)?;
    Ok(Answer::Reply(Reply::Value(0)))
}

// ---- readlink -----------------------------------------------------------------------------------

/// Implements readlink(2) and readlinkat(2).
pub fn readlink(c: &Client, call: Live<ReadlinkArgs>) -> Served {
    let a = call.args();
    let dirfd = a.dirfd.0;
    if a.path.is_empty() && dirfd != AT_FDCWD {
        // readlinkat(fd, ""): the link a descriptor the caller holds names (an O_PATH one,
        // here a stand-in); ENOENT for anything else, as the kernel answers.
        let fd = c.fd_looked_up(dirfd).typed()?;
        let target = rustix::fs::readlinkat(&fd, c"", Vec::new())?;
        return copy_out(c, a, target.as_bytes());
    }
    let w = walk(c, dirfd, &a.path, false).typed()?;
    c.allow_metadata(&call, &w.path, w.kind)?;
    let target = match w.kind {
        Some(FileType::Symlink) => rustix::fs::readlinkat(&w.parent, w.at_cstr(), Vec::new())?,
        // /proc/self itself reads as the caller's own pid, in its namespace.
        Some(FileType::Directory) if w.path == "/proc/self" => {
            CString::new(c.ids_of(&call)?.ns_tgid.to_string()).expect("digits")
        }
        Some(_) => return Err(Errno::INVAL),
        None => {
            return Err(Errno::from_raw_os_error(c.resolver().missing(
                c,
                c.policy(),
                &w.path,
            )))
        }
    };
    copy_out(c, a, target.as_bytes())
}

/// Copies a link's target into the caller's buffer, cut to its size (no NUL, as the kernel).
fn copy_out(c: &Client, a: &ReadlinkArgs, bytes: &[u8]) -> Served {
    let n = bytes.len().min(a.size);
    c.write(a.buf, &bytes[..n]).typed()?;
    Ok(Answer::Reply(Reply::Value(n as i64)))
}

// ---- creating: mkdir, mknod, symlink ------------------------------------------------------------

/// Implements mkdir(2) and mkdirat(2).
pub fn mkdir(c: &Client, call: Live<PathArgs>) -> Served {
    let a = call.args();
    let w = walk(c, a.dirfd.0, &a.path, false).typed()?;
    if w.kind.is_some() && knowable(c.policy(), &w.path) {
        // What the kernel answers first, and what `mkdir -p` and create_dir_all expect.
        return Err(Errno::EXIST);
    }
    c.allow(&call, &w.path, Access::Write)?;
    let name = w.name.as_deref().ok_or(Errno::EXIST)?;
    let mode = safe_mode(a.bits, true) & !c.ids_of(&call)?.umask;
    rustix::fs::mkdirat(&w.parent, name, Mode::from_bits_retain(mode))?;
    c.made(&w.parent, name, true);
    Ok(Answer::Reply(Reply::Value(0)))
}

/// Implements mknod(2) and mknodat(2). Device nodes are refused whatever the policy says.
pub fn mknod(c: &Client, call: Live<MknodArgs>) -> Served {
    let a = call.args();
    let w = walk(c, a.dirfd.0, &a.path, false).typed()?;
    let kind = a.mode & libc::S_IFMT;
    if kind == libc::S_IFCHR || kind == libc::S_IFBLK {
        return Err(Errno::from_raw_os_error(c.refuse(
            &w.path,
            "device nodes cannot be created in a sandbox",
            libc::EPERM,
        )));
    }
    c.allow(&call, &w.path, Access::Write)?;
    let name = w.name.as_deref().ok_or(Errno::EXIST)?;
    let file_type = if kind == 0 {
        FileType::RegularFile
    } else {
        FileType::from_raw_mode(kind)
    };
    let perm = safe_mode(a.mode, false) & !c.ids_of(&call)?.umask;
    let perm = Mode::from_bits_retain(perm);
    rustix::fs::mknodat(&w.parent, name, file_type, perm, a.dev)?;
    Ok(Answer::Reply(Reply::Value(0)))
}

/// Implements symlink(2) and symlinkat(2). The target is free text: it is checked when followed.
pub fn symlink(c: &Client, call: Live<SymlinkArgs>) -> Served {
    let a = call.args();
    let w = walk(c, a.dirfd.0, &a.path, false).typed()?;
    c.allow(&call, &w.path, Access::Write)?;
    let name = w.name.as_deref().ok_or(Errno::EXIST)?;
    let target = CString::new(a.target.as_slice()).map_err(|_| Errno::INVAL)?;
    rustix::fs::symlinkat(target.as_c_str(), &w.parent, name)?;
    Ok(Answer::Reply(Reply::Value(0)))
}

// ---- removing and moving -------------------------------------------------------------------------

/// Implements unlink(2), unlinkat(2) and rmdir(2).
pub fn unlink(c: &Client, call: Live<PathArgs>) -> Served {
    let a = call.args();
    let w = walk(c, a.dirfd.0, &a.path, false).typed()?;
    // Removing what is not there is ENOENT (so `rm -f` succeeds), where that is no secret.
    existing(c, &w).typed()?;
    let removedir = a.bits & libc::AT_REMOVEDIR as u32 != 0;
    let name = w
        .name
        .as_deref()
        .ok_or_else(|| no_name(&a.path, removedir))?;
    c.allow(&call, &w.path, Access::Unlink)?;
    not_a_mount_point(c, &w)?;
    let at = rustix::fs::AtFlags::from_bits_retain(a.bits);
    rustix::fs::unlinkat(&w.parent, name, at)?;
    Ok(Answer::Reply(Reply::Value(0)))
}

/// Refuses, with the kernel's `EBUSY`, to remove, replace or move `w` when it is a mount point
/// of the sandbox's view (a `path-map`, `--here`'s directory, an overmount of a hidden path):
/// the agent acts from warden's mount namespace, where the kernel would not refuse, and the
/// call would reach the host's file beneath the mount ([`super::resolve::mount_point`]). On
/// the host's tree the kernel refuses by itself.
fn not_a_mount_point(c: &Client, w: &Walked) -> Result<(), Errno> {
    let Some(name) = w.name.as_deref() else {
        return Ok(());
    };
    if !c.resolver().in_view() || w.kind.is_none() {
        return Ok(());
    }
    match super::resolve::mount_point(w.parent.as_fd(), name) {
        Ok(false) => Ok(()),
        Ok(true) => Err(refused(
            c,
            &w.path,
            &format!(
                "{} is a mount point of the sandbox's view (a path-map, the --here directory, a \
                 tree with rights of its own or a hidden path's cover): it cannot be removed, \
                 replaced or moved",
                w.path
            ),
            Errno::BUSY,
        )),
        Err(e) => Err(Errno::from_raw_os_error(e)),
    }
}

/// What the kernel answers an unlink or rmdir of a path that ends in `.`, `..` or `/` itself,
/// which names a directory but no entry to remove: unlink `EISDIR`; rmdir `EINVAL` for `.`,
/// `ENOTEMPTY` for `..`, `EBUSY` for the root.
fn no_name(path: &[u8], removedir: bool) -> Errno {
    if !removedir {
        return Errno::ISDIR;
    }
    let end = path.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    match path[..end].rsplit(|&b| b == b'/').next() {
        Some(b".") => Errno::INVAL,
        Some(b"..") => Errno::NOTEMPTY,
        _ => Errno::BUSY,
    }
}

/// Why moving (or linking) the object at `from` to `to` would give it rights it does not have
/// at `from` (for a directory, everything beneath it too), naming each right gained and the
/// rule that grants it at the new path; `None` when it would not. A move or link may not give
/// an object rights it did not have.
pub(super) fn widening(c: &Client, from: &str, to: &str, dir: bool) -> Option<String> {
    let p = c.policy();
    // Each right in `now` but not in `then`, with the rule that grants it (`rule_for`).
    let gained = |now: AccessSet, then: AccessSet, rule_for: &dyn Fn(Access) -> Option<RuleId>| {
        let grants = now
            .iter()
            .filter(|&a| !then.contains(a))
            .map(|a| match rule_for(a) {
                Some(id) => {
                    let rule = p.rule(id);
                    format!("{a} (path-allow {a} {} at {})", rule.pattern, rule.span)
                }
                None => a.to_string(),
            })
            .collect::<Vec<_>>();
        grants.join(", ")
    };
    let (old, new) = (p.rights(from), p.rights(to));
    if !new.is_subset(old) {
        let rule_for = |a| match p.check(to, a) {
            Verdict::Allowed(id) => Some(id),
            Verdict::Denied(_) => None,
        };
        return Some(format!(
            "it would gain {} at {to}, which it does not have at {from}",
            gained(new, old, &rule_for)
        ));
    }
    if !dir {
        return None;
    }
    match (p.subtree_rights(from), p.subtree_rights(to)) {
        (Some(old), Some(new)) if new.is_subset(old) => None,
        (Some(old), Some(new)) => Some(format!(
            "what the directory holds would gain {} beneath {to}, which it does not have \
             beneath {from}",
            gained(new, old, &|a| p.subtree_rule(to, a))
        )),
        _ => Some(format!(
            "the rules beneath {from} or {to} differ from entry to entry, so the move cannot be \
             shown to give what the directory holds no new rights"
        )),
    }
}

/// Implements rename(2), renameat(2) and renameat2(2).
///
/// Moving needs `unlink` on the old path and `write` on the new one (and `unlink` on it too if
/// it exists and is replaced, as the kernel finds it at the rename). A move that would give the object more rights than it had
/// (read-protected file into a readable directory, say) is refused with `EXDEV`, so `mv` falls
/// back to copy-and-delete, where every step is checked on its own.
pub fn rename(c: &Client, call: Live<TwoPathArgs>) -> Served {
    let a = call.args();
    let o = walk(c, a.odir.0, &a.old, false).typed()?;
    let n = walk(c, a.ndir.0, &a.new, false).typed()?;
    let exchange = a.flags & libc::RENAME_EXCHANGE != 0;
    c.allow(&call, &o.path, Access::Unlink)?;
    let allowed = c.allow(&call, &n.path, Access::Write)?;
    if n.kind.is_some() || exchange {
        c.allow(&call, &n.path, Access::Unlink)?;
    }
    if exchange {
        c.allow(&call, &o.path, Access::Write)?;
    }
    let okind = existing(c, &o).typed()?;
    not_a_mount_point(c, &o)?;
    not_a_mount_point(c, &n)?;
    let odirp = okind == FileType::Directory;
    let why = widening(c, &o.path, &n.path, odirp).or_else(|| {
        exchange
            .then(|| widening(c, &n.path, &o.path, n.kind == Some(FileType::Directory)))
            .flatten()
    });
    if let Some(why) = why {
        // EXDEV on purpose: `mv` (and most programs that move files) then copy and delete,
        // and every step of that is checked on its own. The log says so, and why.
        return Err(refused(
            c,
            &n.path,
            &format!(
                "moving {} to {}: {why}; refused with EXDEV (\"Invalid cross-device link\") \
                 so that mv copies instead, each step checked on its own",
                o.path, n.path
            ),
            Errno::XDEV,
        ));
    }
    // Whether a name is replaced (removed) is the kernel's to say at the rename itself, not the
    // walk's before it, which the program can race: with nothing there when it was walked, the
    // rename is made with RENAME_NOREPLACE, and a name made meanwhile fails it; then the name
    // is there, and replacing it needs `unlink`. (EINVAL: a file system without
    // RENAME_NOREPLACE; the name may be there.)
    let replaces = a.flags & (libc::RENAME_NOREPLACE | libc::RENAME_EXCHANGE) == 0;
    let mut unlink_checked = n.kind.is_some() || exchange;
    loop {
        let flags = if replaces && !unlink_checked {
            a.flags | libc::RENAME_NOREPLACE
        } else {
            a.flags
        };
        match rename_walked(&o, &n, flags, &allowed) {
            Err(Errno::EXIST | Errno::INVAL) if replaces && !unlink_checked => {
                c.allow(&call, &n.path, Access::Unlink)?;
                unlink_checked = true;
            }
            done => return done,
        }
    }
}

/// Step 5 of a rename: between the two parents we walked, by name.
fn rename_walked(o: &Walked, n: &Walked, flags: u32, _allowed: &Allowed) -> Served {
    let on = o.name.as_deref().ok_or(Errno::BUSY)?;
    let nn = n.name.as_deref().ok_or(Errno::BUSY)?;
    let flags = rustix::fs::RenameFlags::from_bits_retain(flags);
    rustix::fs::renameat_with(&o.parent, on, &n.parent, nn, flags)?;
    Ok(Answer::Reply(Reply::Value(0)))
}

/// Implements link(2) and linkat(2). The new name must not grant anything the old one does not.
pub fn link(c: &Client, call: Live<TwoPathArgs>) -> Served {
    let a = call.args();
    let flags = a.flags as i32;
    if empty_path(&a.old, flags) {
        return Err(refused(
            c,
            "",
            "linking a descriptor (AT_EMPTY_PATH) is not supported",
            Errno::ACCESS,
        ));
    }
    let o = walk(c, a.odir.0, &a.old, flags & libc::AT_SYMLINK_FOLLOW != 0).typed()?;
    let n = walk(c, a.ndir.0, &a.new, false).typed()?;
    c.allow_visible(&call, &o.path)?;
    let _allowed = c.allow(&call, &n.path, Access::Write)?;
    existing(c, &o).typed()?;
    if let Some(why) = widening(c, &o.path, &n.path, false) {
        return Err(refused(
            c,
            &n.path,
            &format!(
                "a hard link at {} to {} may not grant rights its source does not have: {why}",
                n.path, o.path
            ),
            Errno::ACCESS,
        ));
    }
    let on = o.name.as_deref().ok_or(Errno::PERM)?;
    let nn = n.name.as_deref().ok_or(Errno::EXIST)?;
    rustix::fs::linkat(&o.parent, on, &n.parent, nn, rustix::fs::AtFlags::empty())?;
    Ok(Answer::Reply(Reply::Value(0)))
}

// ---- changing metadata -----------------------------------------------------------------------------

/// Resolves a path argument for a metadata change: `write` on an existing object.
fn changed_object<A>(
    c: &Client,
    call: &Live<A>,
    dirfd: i32,
    path: &[u8],
    follow: bool,
) -> Result<(Walked, OwnedFd), Errno> {
    let w = walk(c, dirfd, path, follow).typed()?;
    c.allow(call, &w.path, Access::Write)?;
    existing(c, &w).typed()?;
    let obj = w.object().typed()?;
    Ok((w, obj))
}

/// The caller's descriptor `fd` (from [`Client::fd_looked_up`] or [`Client::fd_open_file`]),
/// for a metadata change made through it (fchmod, futimens, fchownat with AT_EMPTY_PATH, ...).
///
/// A descriptor opened for reading must not let the program change the file's mode, owner,
/// times or attributes where the policy grants no `write`. The agent finds the descriptor's
/// path, re-walks it (the object found must be the descriptor's own), and checks `write`.
/// Descriptors with no path (pipes, sockets, memfds) belong to the sandbox alone.
fn changed_descriptor<A>(c: &Client, call: &Live<A>, fd: OwnedFd) -> Result<OwnedFd, Errno> {
    let text = rustix::fs::readlinkat(rustix::fs::CWD, proc_path(&fd).as_c_str(), Vec::new())?;
    if !text.to_bytes().starts_with(b"/") {
        return Ok(fd);
    }
    let logical = c.logical_proc_path(text.to_bytes()).typed()?;
    let w = c
        .resolver()
        .walk(c, c.policy(), Base::Cwd, &logical, WalkFlags::default())
        .typed()?;
    c.allow(call, &w.path, Access::Write)?;
    let obj = w.object().typed()?;
    let (a, b) = (rustix::fs::fstat(&obj)?, rustix::fs::fstat(&fd)?);
    if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino) {
        return Err(refused(
            c,
            &w.path,
            "the descriptor's file is no longer at its path",
            Errno::ACCESS,
        ));
    }
    Ok(fd)
}

/// Records a refusal that is not a plain policy check ([`Client::refuse`]), as an [`Errno`].
fn refused(c: &Client, target: &str, why: &str, errno: Errno) -> Errno {
    Errno::from_raw_os_error(c.refuse(target, why, errno.raw_os_error()))
}

fn is_dir(fd: &OwnedFd) -> bool {
    rustix::fs::fstat(fd).is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
}

/// Permission bits the agent sets on the program's behalf: never set-user-ID, and set-group-ID
/// only on directories (group inheritance). A program must not leave a set-user-ID binary
/// behind for someone outside the sandbox to run, least of all when the agent acts as root.
fn safe_mode(mode: u32, dir: bool) -> u32 {
    let mode = mode & 0o7777 & !libc::S_ISUID;
    if dir {
        mode
    } else {
        mode & !libc::S_ISGID
    }
}

/// Implements chmod(2), fchmodat(2) and fchmodat2(2).
pub fn chmod(c: &Client, call: Live<ChmodArgs>) -> Served {
    let a = call.args();
    let (obj, dir) = if empty_path(&a.path, a.flags) {
        let fd = changed_descriptor(c, &call, c.fd_looked_up(a.dirfd.0).typed()?)?;
        let dir = is_dir(&fd);
        (fd, dir)
    } else {
        let follow = a.flags & libc::AT_SYMLINK_NOFOLLOW == 0;
        let (w, obj) = changed_object(c, &call, a.dirfd.0, &a.path, follow)?;
        if w.kind == Some(FileType::Symlink) {
            return Err(Errno::OPNOTSUPP);
        }
        (obj, w.kind == Some(FileType::Directory))
    };
    rustix::fs::chmodat(
        rustix::fs::CWD,
        proc_path(&obj).as_c_str(),
        Mode::from_bits_retain(safe_mode(a.mode, dir)),
        rustix::fs::AtFlags::empty(),
    )?;
    Ok(Answer::Reply(Reply::Value(0)))
}

/// Implements chown(2), lchown(2) and fchownat(2).
pub fn chown(c: &Client, call: Live<ChownArgs>) -> Served {
    let a = call.args();
    let map = c.id_map();
    let uid = map.uid_outside(a.uid).typed()?;
    let gid = map.gid_outside(a.gid).typed()?;
    let obj = if empty_path(&a.path, a.flags) {
        changed_descriptor(c, &call, c.fd_looked_up(a.dirfd.0).typed()?)?
    } else {
        let follow = a.flags & libc::AT_SYMLINK_NOFOLLOW == 0;
        changed_object(c, &call, a.dirfd.0, &a.path, follow)?.1
    };
    let uid = uid.map(rustix::process::Uid::from_raw);
    let gid = gid.map(rustix::process::Gid::from_raw);
    rustix::fs::chownat(&obj, c"", uid, gid, rustix::fs::AtFlags::EMPTY_PATH)?;
    Ok(Answer::Reply(Reply::Value(0)))
}

/// Implements truncate(2).
pub fn truncate(c: &Client, call: Live<CwdPathArgs>) -> Served {
    let a = call.args();
    let len = a.arg as i64;
    if len < 0 {
        return Err(Errno::INVAL);
    }
    let w = walk(c, AT_FDCWD, &a.path, true).typed()?;
    let _allowed = c.allow(&call, &w.path, Access::Write)?;
    match existing(c, &w).typed()? {
        FileType::Directory => return Err(Errno::ISDIR),
        FileType::RegularFile => {}
        _ => return Err(Errno::INVAL),
    }
    // The agent is not bound by the program's RLIMIT_FSIZE, so it applies the limit itself
    // (as EFBIG; the kernel would also raise SIGXFSZ).
    if c.policy().limits.fsize.is_some_and(|max| len as u64 > max) {
        return Err(Errno::FBIG);
    }
    let fd = rustix::fs::openat(
        &w.parent,
        w.at_cstr(),
        OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rustix::fs::ftruncate(&fd, len as u64)?;
    Ok(Answer::Reply(Reply::Value(0)))
}

/// Implements utime(2), utimes(2), futimesat(2) and utimensat(2).
pub fn utime(c: &Client, call: Live<UtimeArgs>) -> Served {
    let a = call.args();
    let stamp = |(tv_sec, tv_nsec): (i64, i64)| rustix::fs::Timespec {
        tv_sec,
        tv_nsec: tv_nsec as _,
    };
    let now = (0, libc::UTIME_NOW);
    let [atime, mtime] = a.times.unwrap_or([now, now]);
    let ts = rustix::fs::Timestamps {
        last_access: stamp(atime),
        last_modification: stamp(mtime),
    };
    let obj = match &a.path {
        // utimensat(fd, NULL, ...) is futimens.
        None => changed_descriptor(c, &call, c.fd_open_file(a.dirfd.0).typed()?)?,
        Some(path) if empty_path(path, a.flags) => {
            changed_descriptor(c, &call, c.fd_looked_up(a.dirfd.0).typed()?)?
        }
        Some(path) => {
            let follow = a.flags & libc::AT_SYMLINK_NOFOLLOW == 0;
            changed_object(c, &call, a.dirfd.0, path, follow)?.1
        }
    };
    let at = rustix::fs::AtFlags::empty();
    rustix::fs::utimensat(rustix::fs::CWD, proc_path(&obj).as_c_str(), &ts, at)?;
    Ok(Answer::Reply(Reply::Value(0)))
}

// ---- xattrs -----------------------------------------------------------------------------------------

/// Extended attributes the agent sets or removes for the program: the `user.` namespace only.
///
/// The others belong to the kernel and the administrator: `security.capability` gives a file
/// capabilities (anyone who runs it later gets them, like a set-user-ID binary),
/// `trusted.*` and `security.*` are read by other software as facts only root could set, and
/// `system.posix_acl_*` grants access to other users. The agent would set them with warden's
/// credentials, not the program's; a program in a user namespace could set none of them on a
/// host file itself.
fn settable_xattr(c: &Client, target: &str, name: &CStr) -> Result<(), Errno> {
    if super::decode::is_user_xattr(name.to_bytes()) {
        return Ok(());
    }
    Err(refused(
        c,
        target,
        &format!(
            "only user.* extended attributes can be set or removed in a sandbox, not {:?}",
            String::from_utf8_lossy(name.to_bytes())
        ),
        // What a file system without that namespace answers: copiers (install, cp -a, tar,
        // rsync -X) then fall back to chmod or skip the attribute, as they do there.
        Errno::OPNOTSUPP,
    ))
}

/// Implements getxattr(2), lgetxattr, listxattr, llistxattr, setxattr, lsetxattr, removexattr
/// and lremovexattr.
pub fn xattr(c: &Client, call: Live<XattrArgs>) -> Served {
    let a = call.args();
    let w = walk(c, AT_FDCWD, &a.path, a.follow).typed()?;
    let name = a.name.as_deref();
    if matches!(a.op, XattrOp::Set { .. } | XattrOp::Remove) {
        c.allow(&call, &w.path, Access::Write)?;
        settable_xattr(c, &w.path, name.expect("set and remove name one"))?;
    } else {
        c.allow_visible(&call, &w.path)?;
    }
    existing(c, &w).typed()?;
    let obj = w.object().typed()?;
    let target = proc_path(&obj);
    let target: &CStr = target.as_c_str();
    let name = || name.expect("only list names none");
    let n = match &a.op {
        XattrOp::Get { buf, size } => {
            let mut into = vec![0u8; *size];
            let n = rustix::fs::getxattr(target, name(), &mut into[..])?;
            if *size > 0 {
                c.write(*buf, &into[..n]).typed()?;
            }
            n
        }
        XattrOp::List { buf, size } => {
            let mut into = vec![0u8; *size];
            let n = rustix::fs::listxattr(target, &mut into[..])?;
            if *size > 0 {
                c.write(*buf, &into[..n]).typed()?;
            }
            n
        }
        XattrOp::Set { value, flags } => {
            let flags = rustix::fs::XattrFlags::from_bits_retain(*flags);
            rustix::fs::setxattr(target, name(), value, flags)?;
            0
        }
        XattrOp::Remove => {
            rustix::fs::removexattr(target, name())?;
            0
        }
    };
    Ok(Answer::Reply(Reply::Value(n as i64)))
}

// ---- inotify, chdir, exec ---------------------------------------------------------------------------

/// Implements inotify_add_watch(2) on the agent's duplicate of the caller's inotify descriptor.
pub fn inotify_add_watch(c: &Client, call: Live<InotifyArgs>) -> Served {
    let a = call.args();
    let w = walk(c, AT_FDCWD, &a.path, a.mask & libc::IN_DONT_FOLLOW == 0).typed()?;
    c.allow(&call, &w.path, Access::Read)?;
    existing(c, &w).typed()?;
    let obj = w.object().typed()?;
    let inotify = c.fd(a.fd).typed()?;
    let mask = a.mask & !libc::IN_DONT_FOLLOW;
    let wd = sysfs::inotify_add_watch(inotify.as_fd(), &proc_path(&obj), mask)
        .map_err(io_errno)
        .typed()?;
    Ok(Answer::Reply(Reply::Value(wd as i64)))
}

/// Implements chdir(2): checked by the agent, then continued.
///
/// No kernel mechanism lets the agent change another process's directory, and Landlock does
/// not cover chdir, so this is the one path call answered with CONTINUE without a kernel lock
/// behind it. A thread racing to rewrite the path can land in a directory the policy hides;
/// it learns that the directory exists, but nothing more: every later call made there is
/// resolved and checked by the agent from the directory's real path (docs/limits.md).
pub fn chdir(c: &Client, call: Live<CwdPathArgs>) -> Served {
    let w = walk(c, AT_FDCWD, &call.args().path, true).typed()?;
    c.allow_metadata(&call, &w.path, w.kind)?;
    match existing(c, &w).typed()? {
        FileType::Directory => Ok(Answer::Reply(Reply::Continue)),
        _ => Err(Errno::NOTDIR),
    }
}

/// Implements execve(2) and execveat(2): checked, then continued. The kernel re-reads the path,
/// so the decision that counts is Landlock's execute right, compiled from the same policy; the
/// agent's check gives the user a clear denial and a log line. Where the kernel enforces no
/// Landlock, it is the view's mounts' `noexec` instead, planned so that no mount lets more run
/// than the policy (`crate::run::plan::without_landlock`); a fexecve is then held by the mount
/// of the descriptor's file, every file the program can hold being one of the view's.
///
/// Landlock can give the right only to what exists when the sandbox starts, so an `exec` rule
/// for a directory made later (`DIR/*` with no DIR yet) allows what the kernel still refuses.
/// The agent says so instead of continuing into a bare `EACCES` (warden creates such a
/// directory itself when it lies in the scratch directory, so there the rule works).
pub fn exec(c: &Client, call: Live<ExecArgs>) -> Served {
    let a = call.args();
    if empty_path(&a.path, a.flags) {
        // fexecve: the descriptor's file is checked by Landlock when the kernel opens it.
        return Ok(Answer::Reply(Reply::Continue));
    }
    let follow = a.flags & libc::AT_SYMLINK_NOFOLLOW == 0;
    let w = walk(c, a.dirfd.0, &a.path, follow).typed()?;
    c.allow(&call, &w.path, Access::Exec)?;
    existing(c, &w).typed()?;
    if !c.exec_rules().by_mounts
        && !c.exec_rules().mapped(&w.path)
        && !c
            .exec_rules()
            .covers(w.parent.as_fd(), w.at_cstr(), super::resolve::MAX_DEPTH)
    {
        let rule = match c.policy().check(&w.path, Access::Exec) {
            Verdict::Allowed(id) => {
                let r = c.policy().rule(id);
                format!("path-allow exec {} at {}", r.pattern, r.span)
            }
            Verdict::Denied(_) => "the policy".to_owned(),
        };
        return Err(refused(
            c,
            &w.path,
            &format!(
                "{rule} allows it, but the kernel would refuse it: Landlock, which backs every \
                 execve, could give the execute right only to what existed when the sandbox \
                 started, and neither this file nor a directory above it held that right then \
                 (a directory made during the run, or made anew); name a directory that exists \
                 before the run (warden makes the directory of an exec rule DIR/* itself when it \
                 lies in $SCRATCH)"
            ),
            Errno::ACCESS,
        ));
    }
    Ok(Answer::Reply(Reply::Continue))
}

/// Implements fchmod(2), fchown(2), fsetxattr(2) and fremovexattr(2).
///
/// A descriptor opened for reading must not let the program change the file's mode, owner or
/// attributes where the policy grants no `write`. The agent finds the descriptor's path,
/// re-walks it (the object found must be the descriptor's own), checks `write`, and acts on its
/// duplicate. Descriptors with no path (pipes, sockets, memfds) belong to the sandbox alone.
pub fn fd_metadata(c: &Client, call: Live<FdMetadataArgs>) -> Served {
    let a = call.args();
    let fd = changed_descriptor(c, &call, c.fd_open_file(a.fd).typed()?)?;
    match &a.change {
        FdChange::Mode(mode) => {
            rustix::fs::chmodat(
                rustix::fs::CWD,
                proc_path(&fd).as_c_str(),
                Mode::from_bits_retain(safe_mode(*mode, is_dir(&fd))),
                rustix::fs::AtFlags::empty(),
            )?;
        }
        FdChange::Owner(uid, gid) => {
            let map = c.id_map();
            let uid = map.uid_outside(*uid).typed()?;
            let gid = map.gid_outside(*gid).typed()?;
            let uid = uid.map(rustix::process::Uid::from_raw);
            let gid = gid.map(rustix::process::Gid::from_raw);
            rustix::fs::fchown(&fd, uid, gid)?;
        }
        FdChange::SetXattr { name, value, flags } => {
            settable_xattr(c, &format!("descriptor {}", a.fd), name)?;
            let flags = rustix::fs::XattrFlags::from_bits_retain(*flags);
            rustix::fs::fsetxattr(&fd, name.as_c_str(), value, flags)?;
        }
        FdChange::RemoveXattr(name) => {
            settable_xattr(c, &format!("descriptor {}", a.fd), name)?;
            rustix::fs::fremovexattr(&fd, name.as_c_str())?;
        }
    }
    Ok(Answer::Reply(Reply::Value(0)))
}

/// Implements memfd_create(2): the agent creates the memfd with `MFD_NOEXEC_SEAL` and injects
/// it.
///
/// `exec` rules say which files may be executed, and Landlock enforces them for files on
/// paths; a memfd has no path Landlock can see, so a program could otherwise copy any file it
/// may read but not execute into one and `fexecve` it. A memfd that can never gain an execute
/// bit is refused by the kernel itself, whatever descriptor games a racing thread plays.
/// Mapping it `PROT_EXEC` still works (JITs), as does everything else a memfd is used for.
pub fn memfd_create(c: &Client, call: Live<MemfdArgs>) -> Served {
    let a = call.args();
    // MFD_NOEXEC_SEAL and MFD_EXEC from linux/memfd.h (Linux 6.3).
    const MFD_NOEXEC_SEAL: u32 = 0x8;
    const MFD_EXEC: u32 = 0x10;
    if a.name.len() > 249 {
        return Err(Errno::INVAL);
    }
    if c.wx() {
        return Err(refused(
            c,
            "memfd:",
            "--wx: a memfd could be mapped executable and writable at once (two mappings); \
             run without --wx if the program needs one",
            Errno::ACCESS,
        ));
    }
    if a.flags & MFD_EXEC != 0 {
        return Err(refused(
            c,
            "memfd:",
            "executable memfds are not allowed in a sandbox",
            Errno::ACCESS,
        ));
    }
    // The program's own MFD_NOEXEC_SEAL is ours anyway.
    let name = CString::new(a.name.as_slice()).map_err(|_| Errno::INVAL)?;
    let flags =
        rustix::fs::MemfdFlags::from_bits_retain(a.flags & !(libc::MFD_CLOEXEC | MFD_NOEXEC_SEAL))
            | rustix::fs::MemfdFlags::CLOEXEC;
    let fd = memfd_without_exec(name.as_c_str(), flags)?;
    Ok(Answer::Fd(fd, a.flags & libc::MFD_CLOEXEC != 0))
}

/// Whether this kernel has `MFD_NOEXEC_SEAL` (Linux 6.3): asked once, by the first memfd made.
static NOEXEC_SEAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

/// A memfd that never gains an execute bit, made by the agent (whose own filter sends it no
/// call): with `MFD_NOEXEC_SEAL` where the kernel has it (the kernel then refuses `chmod` of an
/// execute bit, `F_SEAL_EXEC`). Before Linux 6.3, a plain memfd whose execute bits the agent
/// takes away at once, before anyone else holds it: an exec of it is then refused by the kernel
/// (no execute bit), and giving the bits back needs `fchmod`, `chmod` of `/proc/self/fd/N` or a
/// `setxattr` of an ACL, which the filter sends to the agent, and the agent changes a
/// descriptor's file only where the policy lets the caller write its path, which a memfd's is
/// not ([`changed_descriptor`]). `flags` must not hold `MFD_NOEXEC_SEAL` (which implies
/// `MFD_ALLOW_SEALING`: add that where seals are wanted).
pub fn memfd_without_exec(
    name: &CStr,
    flags: rustix::fs::MemfdFlags,
) -> rustix::io::Result<OwnedFd> {
    let sealed = flags | rustix::fs::MemfdFlags::NOEXEC_SEAL;
    match NOEXEC_SEAL.get() {
        Some(true) => return rustix::fs::memfd_create(name, sealed),
        Some(false) => {}
        None => match rustix::fs::memfd_create(name, sealed) {
            // An older kernel refuses the unknown flag; any other answer says it knows it.
            Err(Errno::INVAL) => {
                let known = rustix::fs::memfd_create(
                    name,
                    rustix::fs::MemfdFlags::CLOEXEC | rustix::fs::MemfdFlags::NOEXEC_SEAL,
                );
                let _ = NOEXEC_SEAL.set(known.is_ok());
                if known.is_ok() {
                    return Err(Errno::INVAL);
                }
            }
            made => {
                let _ = NOEXEC_SEAL.set(true);
                return made;
            }
        },
    }
    let fd = rustix::fs::memfd_create(name, flags)?;
    // A memfd is made 0777 (no umask applies), and an MFD_NOEXEC_SEAL one 0666.
    rustix::fs::fchmod(&fd, Mode::from_bits_truncate(0o666))?;
    Ok(fd)
}
