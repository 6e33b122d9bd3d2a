//! Capability mode (`warden run --capability-mode`): the agent's half (the rules and rights are
//! `warden_capsicum`'s; docs/design.md, section 9).
//!
//! Every delegated call of a sandbox in capability mode comes here instead of the policy's
//! handlers. A path that names the global namespace (absolute, or relative to the current
//! directory) is refused with `ECAPMODE`, except the dynamic loader's read-only opens of
//! libraries. A path relative to a directory descriptor is walked by the kernel strictly beneath
//! the agent's duplicate of that descriptor (`openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS)`),
//! with the rights the descriptor's object holds. Every refusal is logged with its rule.
//!
//! Under `--capsicum` a process is in capability mode once it has entered it itself
//! (`warden_capsicum::program::cap_enter`): [`serve`] tells by the caller's seccomp filter count,
//! which the kernel keeps and only raises, and hands a caller outside the mode back to the
//! policy's handlers. The program's requests (`cap_getmode`, `cap_rights_limit`, ...) arrive as
//! `socket` calls of a family no kernel has (`warden_capsicum::request`), served by [`request`].

use super::call::{
    AccessArgs, Call, ChmodArgs, ChownArgs, ExecArgs, FdChange, FdMetadataArgs, Live, MknodArgs,
    OpenArgs, PathArgs, ReadlinkArgs, Registers, StatArgs, SymlinkArgs, TwoPathArgs, Typed,
    UtimeArgs,
};
use super::fs::io_errno;
use super::{value, Answer, Client, Handled, Served};
use crate::sys::fs as sysfs;
use crate::sys::fs::KernelStruct;
use crate::sys::unotify::Reply;
use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use warden_capsicum::held::Limit;
use warden_capsicum::request::Request;
use warden_capsicum::{beneath, mode, sandbox, Entry, Right, Rights, Rule, Session};
use warden_policy::{Access, Denial, Verdict};

/// Serves one call of a sandbox with capability mode (`--capability-mode` or `--capsicum`),
/// given its live arguments: `Err` hands them back when the caller is not in capability mode
/// and the call is the policy's to decide.
pub fn serve(c: &Client, s: &Session, call: Call) -> Result<Served, Call> {
    if let Call::Checked(live) = &call {
        if live.args().nr == libc::SYS_socket {
            if let Some(r) = Request::decode(&live.args().args) {
                return Ok(r.and_then(|r| request(c, s, live, r)).typed());
            }
        }
    }
    if matches!(call, Call::Exec(_)) && !s.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
        // The program's own execve, made by warden's launcher before the program ran a single
        // instruction: checked by the policy as without capability mode. The filters the
        // launcher installed are the program's starting count.
        if s.entry == Entry::Program {
            match c.ids() {
                Ok(ids) => {
                    if let Some(n) = ids.filters {
                        let _ = s.base_filters.set(n);
                    }
                }
                Err(e) => return Ok(Err(rustix::io::Errno::from_raw_os_error(e))),
            }
        }
        return Err(call);
    }
    match in_mode(c, s) {
        Err(e) => Ok(Err(rustix::io::Errno::from_raw_os_error(e))),
        Ok(true) => Ok(dispatch(c, s, call).typed()),
        Ok(false) => match call {
            Call::Checked(live) => Ok(as_without(c, live)),
            call => Err(call),
        },
    }
}

/// Whether the caller is in capability mode.
fn in_mode(c: &Client, s: &Session) -> Result<bool, i32> {
    match s.entry {
        Entry::Warden => Ok(true),
        // The count is read from the caller's /proc/<tid>, checked live after opening: it is
        // the caller's, and it can only have grown since.
        Entry::Program if !s.any_entered() => Ok(false),
        Entry::Program => Ok(s.in_mode(c.ids()?.filters)),
    }
}

/// A call only capability mode's profile sends to the agent, from a process not in
/// capability mode: answered as the profile without capability mode would (every such call is
/// direct there but `socket`, which is guarded: see `warden_filter::compile`'s `Guard::Socket`).
fn as_without(c: &Client, live: Live<Registers>) -> Served {
    use rustix::io::Errno;
    let continue_it = Ok(Answer::Reply(Reply::Continue));
    let r = *live.args();
    if r.nr != libc::SYS_socket {
        return continue_it;
    }
    let (domain, kind) = (r.int(0), r.int(1) & 0xf);
    match domain {
        libc::AF_UNIX if kind == libc::SOCK_STREAM || kind == libc::SOCK_SEQPACKET => continue_it,
        libc::AF_UNIX if kind == libc::SOCK_DGRAM => Err(Errno::ACCESS),
        libc::AF_NETLINK => continue_it,
        libc::AF_INET | libc::AF_INET6 => match c.net().mode {
            crate::syscalls::Network::Private => continue_it,
            crate::syscalls::Network::Host { .. } => super::net::socket(c, live.socket()?),
        },
        _ => Err(Errno::NOSYS),
    }
}

// ---- the program's requests ------------------------------------------------------------------

/// Serves a request of the program side (`warden_capsicum::program`, `c/capsicum.h`).
fn request(c: &Client, s: &Session, live: &Live<Registers>, r: Request) -> Handled {
    match r {
        Request::GetMode => value(i64::from(in_mode(c, s)?)),
        Request::Enter => {
            // The program installs its mark next; the agent can see it only where the kernel
            // counts filters and the program's starting count is known.
            if s.entry == Entry::Program && s.base_filters.get().is_none() {
                return Err(libc::ENOSYS);
            }
            c.live()?;
            // From now on every caller's filters are looked at (before the mark goes on).
            s.entered.store(true, std::sync::atomic::Ordering::SeqCst);
            c.allow_by(live, "cap_enter", "capability-mode:enter");
            value(0)
        }
        Request::Get { fd } => {
            let f = c.fd(fd)?;
            let st = rustix::fs::fstat(&f).map_err(errno)?;
            let (reads, writes) = sandbox::access_mode(f.as_fd()).map_err(io_errno)?;
            let mut held = s.held.rights_of(f.as_fd(), st.st_dev, st.st_ino);
            // What the access mode refuses, the descriptor cannot do, whatever the table says.
            if !reads {
                held = held.without(Right::Read);
            }
            if !writes {
                held = held.without(Right::Write);
            }
            value(held.bits() as i64)
        }
        Request::Limit { fd, rights } => limit(c, s, live, fd, rights),
    }
}

/// `cap_rights_limit(n, rights)`. A regular file or directory gets an open file description of
/// its own (the object opened again, with no more access than the rights, put at the same
/// number) whose rights the table keeps apart from every other descriptor of the object
/// (`Held::limit_description`); a description limited before is narrowed in place. Anything
/// else (sockets, pipes, devices, `O_PATH`) is narrowed per object, and re-opened only when
/// read or write goes, so the kernel itself refuses what was taken away.
fn limit(c: &Client, s: &Session, live: &Live<Registers>, n: i32, rights: Rights) -> Handled {
    use rustix::fs::FileType;
    let target = format!("descriptor {n}");
    let fd = c.fd(n)?;
    let st = rustix::fs::fstat(&fd).map_err(errno)?;
    let (dev, ino) = (st.st_dev, st.st_ino);
    let held = s.held.rights_of(fd.as_fd(), dev, ino);
    if !rights.within(held) {
        return Err(refuse(
            c,
            &target,
            Rule::Rights,
            &format!(" (it has {held}; a limit narrows, never widens)"),
        ));
    }
    let (reads, writes) = sandbox::access_mode(fd.as_fd()).map_err(io_errno)?;
    let keep = (
        reads && rights.has(Right::Read),
        writes && rights.has(Right::Write),
    );
    // An O_PATH descriptor cannot be handed over (ADDFD takes only open files). A directory
    // keeps its read-only open (reading it lists names; what it names is the agent's, by
    // lookup); a file limited to neither read nor write is refused, unchanged.
    let kind = FileType::from_raw_mode(st.st_mode);
    let dir = kind == FileType::Directory;
    let keep = if keep == (false, false) && dir && !writes {
        (reads, writes)
    } else {
        keep
    };
    if keep == (false, false) && (reads || writes) {
        return Err(refuse(
            c,
            &target,
            Rule::Rights,
            " (Linux cannot hand over a file that neither reads nor writes: keep one)",
        ));
    }
    let per_description =
        matches!(kind, FileType::RegularFile | FileType::Directory) && (reads || writes);
    let tracked = per_description && s.held.is_limited(fd.as_fd(), dev, ino);
    let narrower = if keep != (reads, writes) || (per_description && !tracked) {
        Some(sandbox::reopen(fd.as_fd(), keep.0, keep.1).map_err(|e| {
            refuse(
                c,
                &target,
                Rule::Rights,
                &format!(" (the kernel cannot take read or write away from it: {e})"),
            )
        })?)
    } else {
        None
    };
    c.live()?;
    let outcome = if per_description {
        // The agent's reference to the description that will be at n: recorded before it is
        // put there, so no call through it meets the object's rights.
        let reference = narrower
            .as_ref()
            .unwrap_or(&fd)
            .try_clone()
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EMFILE))?;
        s.held
            .limit_description(reference, fd.as_fd(), dev, ino, rights)
    } else {
        s.held.limit(dev, ino, rights)
    };
    match outcome {
        Limit::Narrowed => {}
        Limit::Widens(held) => {
            return Err(refuse(
                c,
                &target,
                Rule::Rights,
                &format!(" (it has {held}; a limit narrows, never widens)"),
            ))
        }
        Limit::Full => return Err(libc::ENFILE),
    }
    if let Some(new) = narrower {
        let cloexec = c.fd_cloexec(n)?;
        c.replace_fd(new.as_fd(), n, cloexec)?;
    }
    c.allow_by(
        live,
        &format!("{target} to {rights}"),
        "capability-mode:limit",
    );
    value(0)
}

/// Serves one call of a process in capability mode.
fn dispatch(c: &Client, s: &Session, call: Call) -> Handled {
    match call {
        Call::Open(a) => open(c, s, a),
        Call::Stat(a) => stat(c, s, a),
        Call::Access(a) => access(c, s, a),
        Call::Mkdir(a) => mkdir(c, s, a),
        Call::Unlink(a) => unlink(c, s, a),
        Call::Exec(a) => exec(c, s, a),
        Call::FdMetadata(a) => fd_metadata(c, s, a),
        Call::Checked(a) => checked_call(c, a),
        // An anonymous file names nothing: the policy decides.
        Call::Memfd(a) => super::fs::memfd_create(c, a).map_err(errno),
        // Only in the host's network (IP rules): a connection on a socket the program holds.
        Call::Accept(a) => super::net::accept(c, a).map_err(errno),
        // Names the program's own socket: nothing to decide.
        Call::SocketName(a) => super::net::socket_name(c, a).map_err(errno),
        Call::SocketAddress(_) | Call::Socket(_) | Call::Send(_) => {
            Err(refuse(c, c.syscall(), Rule::SocketAddress, ""))
        }
        Call::Chdir(a) | Call::Statfs(a) | Call::Truncate(a) => global(c, &a.args().path),
        Call::Xattr(a) => global(c, &a.args().path),
        Call::Inotify(a) => global(c, &a.args().path),
        Call::Readlink(a) => readlink(c, s, a),
        Call::Rename(a) => rename(c, s, a),
        Call::Link(a) => link(c, s, a),
        Call::Symlink(a) => symlink(c, s, a),
        Call::Chmod(a) => chmod(c, s, a),
        Call::Utime(a) if c.syscall() == "utimensat" => utimensat(c, s, a),
        Call::Utime(_) if c.syscall() == "futimesat" => not_yet(c),
        Call::Utime(a) => global(c, a.args().path.as_deref().unwrap_or_default()),
        Call::Mknod(a) => mknod(c, s, a),
        Call::Chown(a) => chown(c, s, a),
    }
}

/// A path call with no directory descriptor: it names the global namespace.
fn global(c: &Client, path: &[u8]) -> Handled {
    let rule = mode::path_rule(libc::AT_FDCWD, path).unwrap_or(Rule::Global);
    Err(refuse(c, &text(path), rule, ""))
}

/// The path as text for logs (the log escapes it).
fn text(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}

/// Refuses with `rule`'s errno and logs why (`detail` adds to the rule's reason).
fn refuse(c: &Client, target: &str, rule: Rule, detail: &str) -> i32 {
    let why = format!("{}: {}{detail}", rule.name(), rule.why());
    c.refuse_by(target, rule.name(), &why, rule.errno())
}

/// Calls relative to a directory capability warden does not perform yet: refused, said so.
fn not_yet(c: &Client) -> Handled {
    Err(refuse(
        c,
        c.syscall(),
        Rule::Global,
        " (warden does not perform this call in capability mode yet)",
    ))
}

fn errno(e: rustix::io::Errno) -> i32 {
    e.raw_os_error()
}

/// The caller's descriptor `dirfd` as a directory capability: its duplicate and the rights its
/// object holds. `path` is refused first if it names the global namespace.
fn capability(c: &Client, s: &Session, dirfd: i32, path: &[u8]) -> Result<(OwnedFd, Rights), i32> {
    if let Some(rule) = mode::path_rule(dirfd, path) {
        return Err(refuse(c, &text(path), rule, ""));
    }
    let dir = c.fd(dirfd)?;
    let st = rustix::fs::fstat(&dir).map_err(errno)?;
    let rights = s.held.rights_of(dir.as_fd(), st.st_dev, st.st_ino);
    Ok((dir, rights))
}

/// Requires `right` of a capability with `rights`.
fn need(c: &Client, path: &[u8], rights: Rights, right: Right) -> Result<(), i32> {
    if rights.has(right) {
        return Ok(());
    }
    let detail = if rights == Rights::NONE {
        " (the descriptor is not a capability the sandbox was given)".to_owned()
    } else {
        format!(" (it has {rights}, not {})", right.name())
    };
    Err(refuse(c, &text(path), Rule::Rights, &detail))
}

/// A walk beneath a capability failed: a path that leaves it is `Rule::Escape`, logged.
fn walk_error(c: &Client, path: &[u8], e: rustix::io::Errno) -> i32 {
    match e {
        rustix::io::Errno::XDEV => refuse(c, &text(path), Rule::Escape, ""),
        rustix::io::Errno::LOOP if path.starts_with(b"/proc") => {
            refuse(c, &text(path), Rule::Escape, " (a magic link)")
        }
        e => errno(e),
    }
}

fn cstring(path: &[u8]) -> Result<CString, i32> {
    CString::new(path).map_err(|_| libc::EINVAL)
}

/// The path of the object behind the agent's descriptor `fd`, as the kernel names it.
fn fd_path(fd: &impl AsFd) -> Result<String, i32> {
    let link = rustix::fs::readlinkat(
        rustix::fs::CWD,
        format!(
            "/proc/self/fd/{}",
            std::os::fd::AsRawFd::as_raw_fd(&fd.as_fd())
        ),
        Vec::new(),
    )
    .map_err(errno)?;
    Ok(String::from_utf8_lossy(link.as_bytes()).into_owned())
}

/// `name` in the directory behind the agent's descriptor `dir`, as a path.
fn child_path(dir: &impl AsFd, name: &std::ffi::CStr) -> Result<String, i32> {
    let d = fd_path(dir)?;
    let name = String::from_utf8_lossy(name.to_bytes());
    Ok(format!("{}/{name}", d.trim_end_matches('/')))
}

/// Under `--capsicum`, capability mode only takes away: what a walk beneath a directory
/// capability reaches is checked against the policy by its path, as every other call of the
/// sandbox is (a program must not gain by entering the mode). Under `--capability-mode` the
/// operator named the directories with `--fd`, and their trees are the grant beyond the
/// policy's allow rules, never past its `path-deny` ones (a `--fd` of `/etc` does not open
/// `/etc/shadow`, as `--read /etc` would not).
fn policy(c: &Client, s: &Session, live: &Live<()>, path: &str, access: Access) -> Result<(), i32> {
    match s.entry {
        Entry::Warden if !denied_by_a_rule(c, path, access) => Ok(()),
        _ => c.allow(live, path, access).map(drop).map_err(errno),
    }
}

/// Whether a `path-deny` rule of the policy refuses `access` to `path`.
fn denied_by_a_rule(c: &Client, path: &str, access: Access) -> bool {
    matches!(
        c.policy().check(path, access),
        Verdict::Denied(Denial::DeniedBy(_))
    )
}

/// [`policy`] for looking at `path`'s metadata (stat, access).
fn policy_visible(c: &Client, s: &Session, live: &Live<()>, path: &str) -> Result<(), i32> {
    match s.entry {
        // As [`policy`]: beneath a `--fd` directory only `path-deny` rules hold.
        Entry::Warden if !denied_by_a_rule(c, path, Access::Read) => Ok(()),
        _ => c.allow_visible(live, path).map(drop).map_err(errno),
    }
}

/// Records the rights of what a walk beneath a capability handed out.
fn grant(s: &Session, fd: &OwnedFd, rights: Rights) -> Result<(), i32> {
    let st = rustix::fs::fstat(fd).map_err(errno)?;
    if s.held.grant(st.st_dev, st.st_ino, rights) {
        Ok(())
    } else {
        Err(libc::ENFILE)
    }
}

// ---- open ---------------------------------------------------------------------------------------

/// Flags the loader's opens of libraries may carry.
const LOADER_FLAGS: i32 =
    libc::O_CLOEXEC | crate::sys::abi::O_LARGEFILE | libc::O_NOCTTY | libc::O_NONBLOCK;

fn open(c: &Client, s: &Session, call: Live<OpenArgs>) -> Handled {
    let (live, a) = call.split();
    let (dirfd, path, flags, mode, resolve) = (a.dirfd.0, a.path, a.flags, a.mode, a.resolve);
    let cloexec = flags & libc::O_CLOEXEC != 0;
    if mode::path_rule(dirfd, &path) == Some(Rule::AbsolutePath)
        && flags & !LOADER_FLAGS == libc::O_RDONLY
    {
        if let Some((dir, rest)) = warden_capsicum::library_path(&path) {
            return library(c, s, &live, &path, dir, rest, cloexec);
        }
    }
    let (dir, rights) = capability(c, s, dirfd, &path)?;
    let derived = match rights.open_through(flags) {
        Ok(r) => r,
        Err(right) => {
            need(c, &path, rights, right)?;
            rights
        }
    };
    let umask = c.ids()?.umask;
    let mode = if flags & (libc::O_CREAT | libc::O_TMPFILE) != 0 {
        mode & 0o7777 & !umask
    } else {
        0
    };
    let resolve = ResolveFlags::from_bits_retain(resolve);
    let how = (flags & !libc::O_CLOEXEC, mode, resolve);
    let fd = checked_open(c, s, &live, (&dir, &path), how)?;
    grant(s, &fd, derived)?;
    c.allow_by(&live, &text(&path), "capability-mode:beneath");
    c.opened_for_writing(
        flags & crate::sys::abi::O_ACCMODE != libc::O_RDONLY && flags & libc::O_PATH == 0,
    );
    Ok(Answer::Fd(fd, cloexec))
}

/// An open beneath `dir`, checked against the policy ([`policy`]: all of it under
/// `--capsicum`, its `path-deny` rules under `--capability-mode`) before it has any effect: an existing object is found first (`O_PATH`, beneath), checked by its path, and then
/// opened through that very descriptor; a missing one is checked by its would-be path and
/// created in the directory found, never through a symlink put there meanwhile.
/// `(dir, path)`: where; `(flags, mode, resolve)`: how.
fn checked_open(
    c: &Client,
    s: &Session,
    live: &Live<()>,
    (dir, path): (&OwnedFd, &[u8]),
    (flags, mode, resolve): (i32, u32, ResolveFlags),
) -> Result<OwnedFd, i32> {
    let accesses = |flags: i32| -> Vec<Access> {
        if flags & libc::O_PATH != 0 {
            return vec![Access::Read];
        }
        let mut a = Vec::new();
        let acc = flags & crate::sys::abi::O_ACCMODE;
        if acc != libc::O_WRONLY {
            a.push(Access::Read);
        }
        if acc != libc::O_RDONLY || flags & libc::O_TRUNC != 0 {
            a.push(Access::Write);
        }
        a
    };
    let follow = if flags & libc::O_NOFOLLOW != 0 {
        libc::O_NOFOLLOW
    } else {
        0
    };
    let found = beneath::open(
        dir,
        &cstring(path)?,
        libc::O_PATH | follow | (flags & libc::O_DIRECTORY),
        0,
        resolve,
    );
    match found {
        Ok(obj) => {
            if flags & (libc::O_CREAT | libc::O_EXCL) == libc::O_CREAT | libc::O_EXCL {
                return Err(libc::EEXIST);
            }
            let p = fd_path(&obj)?;
            for a in accesses(flags) {
                policy(c, s, live, &p, a)?;
            }
            if flags & libc::O_PATH != 0 {
                return Ok(obj);
            }
            let of = OFlags::from_bits_retain(
                (flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW)) as u32,
            ) | OFlags::CLOEXEC;
            rustix::fs::open(
                format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&obj)),
                of,
                Mode::empty(),
            )
            .map_err(errno)
        }
        Err(rustix::io::Errno::NOENT) if flags & libc::O_CREAT != 0 => {
            let (p, name) = parent(c, dir, path)?;
            policy(c, s, live, &child_path(&p, &name)?, Access::Write)?;
            beneath::open(&p, &name, flags | libc::O_NOFOLLOW, mode, resolve)
                .map_err(|e| walk_error(c, path, e))
        }
        Err(e) => Err(walk_error(c, path, e)),
    }
}

/// The dynamic loader's read-only open of a library or of its cache (see `warden_capsicum`):
/// strictly beneath the library directory, and only an ELF file there.
fn library(
    c: &Client,
    s: &Session,
    live: &Live<()>,
    path: &[u8],
    dir: &str,
    rest: &[u8],
    cloexec: bool,
) -> Handled {
    let d = rustix::fs::open(
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(errno)?;
    let fd = beneath::open(
        &d,
        &cstring(rest)?,
        libc::O_RDONLY,
        0,
        ResolveFlags::empty(),
    )
    .map_err(|e| walk_error(c, path, e))?;
    if dir != "/etc" {
        let mut magic = [0u8; 4];
        let elf =
            rustix::io::pread(&fd, &mut magic, 0).is_ok_and(|n| n == 4) && magic == *b"\x7fELF";
        if !elf {
            return Err(refuse(
                c,
                &text(path),
                Rule::AbsolutePath,
                " (beneath a library directory, but not a library)",
            ));
        }
    }
    policy(c, s, live, &fd_path(&fd)?, Access::Read)?;
    c.allow_by(live, &text(path), "capability-mode:library");
    Ok(Answer::Fd(fd, cloexec))
}

// ---- stat, access -------------------------------------------------------------------------------

fn stat(c: &Client, s: &Session, call: Live<StatArgs>) -> Handled {
    if call.args().path.is_empty() && call.args().flags & libc::AT_EMPTY_PATH != 0 {
        // fstat of a descriptor the caller holds (glibc's fstat): Linux cannot refuse fstat,
        // which is direct (warden_capsicum::rights::ENFORCEMENT). The policy decides.
        return super::fs::stat(c, call).map_err(errno);
    }
    let (live, a) = call.split();
    let (dirfd, path, flags, buf) = (a.dirfd.0, a.path, a.flags, a.buf);
    let (obj, _) = look_up(c, s, &live, dirfd, &path, flags)?;
    let at = libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH | (flags & libc::AT_STATX_SYNC_TYPE);
    let map = c.id_map();
    if let Some(mask) = a.statx_mask {
        let mut st = sysfs::statx(obj.as_fd(), c"", at, mask).map_err(io_errno)?;
        (st.stx_uid, st.stx_gid) = (map.uid_inside(st.stx_uid), map.gid_inside(st.stx_gid));
        c.write(buf, st.bytes())?;
    } else {
        let mut st =
            sysfs::fstatat(obj.as_fd(), c"", at & !libc::AT_STATX_SYNC_TYPE).map_err(io_errno)?;
        (st.st_uid, st.st_gid) = (map.uid_inside(st.st_uid), map.gid_inside(st.st_gid));
        c.write(buf, st.bytes())?;
    }
    value(0)
}

/// The object `path` names beneath the directory capability `dirfd` (the `lookup` right
/// needed), found `O_PATH` without following a last symlink when `flags` says
/// `AT_SYMLINK_NOFOLLOW`, and visible under the policy; with the capability's rights.
fn look_up(
    c: &Client,
    s: &Session,
    live: &Live<()>,
    dirfd: i32,
    path: &[u8],
    flags: i32,
) -> Result<(OwnedFd, Rights), i32> {
    let (dir, rights) = capability(c, s, dirfd, path)?;
    need(c, path, rights, Right::Lookup)?;
    let nofollow = if flags & libc::AT_SYMLINK_NOFOLLOW != 0 {
        libc::O_NOFOLLOW
    } else {
        0
    };
    let obj = beneath::open(
        &dir,
        &cstring(path)?,
        libc::O_PATH | nofollow,
        0,
        ResolveFlags::empty(),
    )
    .map_err(|e| walk_error(c, path, e))?;
    policy_visible(c, s, live, &fd_path(&obj)?)?;
    Ok((obj, rights))
}

fn access(c: &Client, s: &Session, call: Live<AccessArgs>) -> Handled {
    let (live, a) = call.split();
    let (dirfd, path, amode, flags) = (a.dirfd.0, a.path, a.mode, a.flags);
    let (obj, rights) = look_up(c, s, &live, dirfd, &path, flags)?;
    // What the descriptor's rights would allow, not only what the file's mode does.
    let wants = [
        (libc::R_OK, Right::Read),
        (libc::W_OK, Right::Write),
        (libc::X_OK, Right::Fexecve),
    ];
    for (bit, right) in wants {
        if amode & bit != 0 {
            need(c, &path, rights, right)?;
        }
    }
    rustix::fs::accessat(
        &obj,
        c"",
        rustix::fs::Access::from_bits_retain(amode as u32),
        AtFlags::EMPTY_PATH | AtFlags::EACCESS,
    )
    .map_err(errno)?;
    value(0)
}

// ---- mkdir, unlink ------------------------------------------------------------------------------

/// The directory holding the last component of `path` beneath the capability, and that name.
fn parent(c: &Client, dir: &OwnedFd, path: &[u8]) -> Result<(OwnedFd, CString), i32> {
    let (d, name) = beneath::split(path).ok_or(libc::EINVAL)?;
    let p = beneath::open(
        dir,
        &cstring(&d)?,
        libc::O_PATH | libc::O_DIRECTORY,
        0,
        ResolveFlags::empty(),
    )
    .map_err(|e| walk_error(c, path, e))?;
    Ok((p, cstring(&name)?))
}

fn mkdir(c: &Client, s: &Session, call: Live<PathArgs>) -> Handled {
    let (live, a) = call.split();
    let (dirfd, path, mode) = (a.dirfd.0, a.path, a.bits);
    let (dir, rights) = capability(c, s, dirfd, &path)?;
    need(c, &path, rights, Right::Lookup)?;
    need(c, &path, rights, Right::Mkdir)?;
    let (p, name) = parent(c, &dir, &path)?;
    policy(c, s, &live, &child_path(&p, &name)?, Access::Write)?;
    let umask = c.ids()?.umask;
    rustix::fs::mkdirat(&p, &name, Mode::from_raw_mode(mode & 0o1777 & !umask)).map_err(errno)?;
    c.allow_by(&live, &text(&path), "capability-mode:beneath");
    value(0)
}

fn unlink(c: &Client, s: &Session, call: Live<PathArgs>) -> Handled {
    let (live, a) = call.split();
    let (dirfd, path, flags) = (a.dirfd.0, a.path, a.bits as i32);
    let (dir, rights) = capability(c, s, dirfd, &path)?;
    need(c, &path, rights, Right::Lookup)?;
    need(c, &path, rights, Right::Unlink)?;
    let (p, name) = parent(c, &dir, &path)?;
    policy(c, s, &live, &child_path(&p, &name)?, Access::Unlink)?;
    not_a_mount_point(c, &p, &name)?;
    rustix::fs::unlinkat(
        &p,
        &name,
        AtFlags::from_bits_retain((flags & libc::AT_REMOVEDIR) as u32),
    )
    .map_err(errno)?;
    c.allow_by(&live, &text(&path), "capability-mode:beneath");
    value(0)
}

/// `EBUSY` for a name that is a mount point of the sandbox's view, as the kernel answers in
/// the sandbox's namespace but not in warden's, where the agent acts
/// ([`crate::agent::resolve::mount_point`]).
fn not_a_mount_point(c: &Client, p: &OwnedFd, name: &CString) -> Result<(), i32> {
    if !c.resolver().in_view() {
        return Ok(());
    }
    if crate::agent::resolve::mount_point(p.as_fd(), name)? {
        return Err(c.refuse_by(
            &name.to_string_lossy(),
            "view:mount-point",
            "a mount point of the sandbox's view (a path-map, the --here directory, a tree with \
             rights of its own or a hidden path's cover) cannot be removed, replaced or moved",
            libc::EBUSY,
        ));
    }
    Ok(())
}

// ---- readlink, rename, link, symlink, chmod, utimensat -----------------------------------------

fn readlink(c: &Client, s: &Session, call: Live<ReadlinkArgs>) -> Handled {
    let (live, a) = call.split();
    let (dirfd, path, buf, size) = (a.dirfd.0, a.path, a.buf, a.size);
    let (dir, rights) = capability(c, s, dirfd, &path)?;
    need(c, &path, rights, Right::Lookup)?;
    let obj = beneath::open(
        &dir,
        &cstring(&path)?,
        libc::O_PATH | libc::O_NOFOLLOW,
        0,
        ResolveFlags::empty(),
    )
    .map_err(|e| walk_error(c, &path, e))?;
    policy(c, s, &live, &fd_path(&obj)?, Access::Read)?;
    // readlinkat(fd, "") reads the symlink an O_PATH descriptor is; EINVAL for anything else.
    let target = rustix::fs::readlinkat(&obj, c"", Vec::new()).map_err(errno)?;
    let bytes = target.as_bytes();
    let n = bytes.len().min(size);
    c.write(buf, &bytes[..n])?;
    value(n as i64)
}

/// Refuses to link or move `what` from beneath a directory capability holding `from` to `to`
/// beneath one holding `rights`, when the object would gain a right there: found through the
/// new name, it would be opened with that capability's rights (`Rights::open_through`), and a
/// link or a move may not give an object rights it did not have.
fn no_gain(
    c: &Client,
    (what, from): (&[u8], Rights),
    (to, rights): (&[u8], Rights),
) -> Result<(), i32> {
    let gained = from.gained_by_moving_to(rights);
    if gained == Rights::NONE {
        return Ok(());
    }
    Err(refuse(
        c,
        &text(to),
        Rule::Rights,
        &format!(
            " ({} would gain {gained} beneath a capability with {rights}, which the capability \
             it comes from ({from}) does not grant)",
            text(what)
        ),
    ))
}

/// Why linking or moving the object at `from` (a directory when `dir`) to `to` would give it
/// rights the policy does not give it at `from`, as without capability mode (`fs::widening`);
/// under `--capability-mode`, where the `--fd` trees are the grant, a `path-deny` rule that
/// refuses an access at `from` and none at `to`, or, for a directory, one that may hold
/// beneath `from` (what it holds would leave the rule's reach).
fn policy_widening(c: &Client, s: &Session, from: &str, to: &str, dir: bool) -> Option<String> {
    match s.entry {
        Entry::Program => super::fs::widening(c, from, to, dir),
        Entry::Warden if dir && c.policy().denies_some_beneath(from) => Some(format!(
            "a path-deny rule holds beneath {from}, and what the directory holds would leave it"
        )),
        Entry::Warden => {
            let freed: Vec<&str> = Access::ALL
                .into_iter()
                .filter(|&a| denied_by_a_rule(c, from, a) && !denied_by_a_rule(c, to, a))
                .map(Access::name)
                .collect();
            (!freed.is_empty()).then(|| {
                format!(
                    "a path-deny rule refuses {} at {from}, and none does at {to}",
                    freed.join(", ")
                )
            })
        }
    }
}

/// Whether `name` in the directory `dir` is there, and a directory: `None` when it is not
/// there. Never follows a symlink.
fn kind_at(dir: &OwnedFd, name: &std::ffi::CStr) -> Result<Option<bool>, i32> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory,
        )),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(errno(e)),
    }
}

/// renameat2's flags (include/uapi/linux/fs.h).
const RENAME_NOREPLACE: u32 = libc::RENAME_NOREPLACE;
const RENAME_EXCHANGE: u32 = libc::RENAME_EXCHANGE;

/// rename, renameat and renameat2 between directory capabilities. The name leaves the first
/// directory (lookup and unlink there, the policy's unlink) and appears in the second (lookup
/// and create there, the policy's write); an exchange is two moves, each way. Replacing a name
/// that is there removes it: unlink there too. Neither object may gain a right by the move:
/// not the capabilities' (`ENOTCAPABLE`), not the policy's (`EXDEV`, as without capability
/// mode, so that `mv` copies and every step is checked on its own).
fn rename(c: &Client, s: &Session, call: Live<TwoPathArgs>) -> Handled {
    let (live, a) = call.split();
    let (olddir, old, newdir, new, flags) = (a.odir.0, a.old, a.ndir.0, a.new, a.flags);
    // (RENAME_WHITEOUT, which leaves a device node behind, never comes here: decoding the
    // call refuses it with EINVAL.)
    let exchange = flags & RENAME_EXCHANGE != 0;
    if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE) != 0
        || (exchange && flags & RENAME_NOREPLACE != 0)
    {
        // As Linux answers.
        return Err(libc::EINVAL);
    }
    let (od, orights) = capability(c, s, olddir, &old)?;
    let (nd, nrights) = capability(c, s, newdir, &new)?;
    need(c, &old, orights, Right::Lookup)?;
    need(c, &old, orights, Right::Unlink)?;
    need(c, &new, nrights, Right::Lookup)?;
    need(c, &new, nrights, Right::Create)?;
    if exchange {
        need(c, &old, orights, Right::Create)?;
        need(c, &new, nrights, Right::Unlink)?;
    }
    no_gain(c, (&old, orights), (&new, nrights))?;
    if exchange {
        no_gain(c, (&new, nrights), (&old, orights))?;
    }
    let ((p1, n1), (p2, n2)) = (parent(c, &od, &old)?, parent(c, &nd, &new)?);
    let (from, to) = (child_path(&p1, &n1)?, child_path(&p2, &n2)?);
    policy(c, s, &live, &from, Access::Unlink)?;
    policy(c, s, &live, &to, Access::Write)?;
    if exchange {
        policy(c, s, &live, &to, Access::Unlink)?;
        policy(c, s, &live, &from, Access::Write)?;
    }
    let odir = kind_at(&p1, &n1)?.ok_or(libc::ENOENT)?;
    let mut there = kind_at(&p2, &n2)?;
    let why = policy_widening(c, s, &from, &to, odir).or_else(|| {
        exchange
            .then(|| policy_widening(c, s, &to, &from, there == Some(true)))
            .flatten()
    });
    if let Some(why) = why {
        return Err(c.refuse(
            &to,
            &format!(
                "moving {from} to {to}: {why}; refused with EXDEV (\"Invalid cross-device \
                 link\") so that mv copies instead, each step checked on its own"
            ),
            libc::EXDEV,
        ));
    }
    // Neither end may be a mount point of the view (no name becomes one meanwhile).
    not_a_mount_point(c, &p1, &n1)?;
    not_a_mount_point(c, &p2, &n2)?;
    // Whether a name is replaced is the kernel's to say at the rename itself, not a lookup's
    // before it that the program can race: with nothing there when warden looked, the rename
    // is made with RENAME_NOREPLACE, and a name made meanwhile fails it; then the name is
    // there, and replacing it needs unlink.
    let replaces = flags & (RENAME_NOREPLACE | RENAME_EXCHANGE) == 0;
    loop {
        let mut how = flags;
        if replaces {
            if there.is_some() {
                need(c, &new, nrights, Right::Unlink)?;
                policy(c, s, &live, &to, Access::Unlink)?;
            } else {
                how |= RENAME_NOREPLACE;
            }
        }
        let how = rustix::fs::RenameFlags::from_bits_retain(how);
        match rustix::fs::renameat_with(&p1, &n1, &p2, &n2, how) {
            // EINVAL: a file system without RENAME_NOREPLACE; the name may be there.
            Err(rustix::io::Errno::EXIST | rustix::io::Errno::INVAL)
                if replaces && there.is_none() =>
            {
                there = Some(false);
            }
            r => {
                r.map_err(errno)?;
                break;
            }
        }
    }
    c.allow_by(
        &live,
        &format!("{} -> {}", text(&old), text(&new)),
        "capability-mode:beneath",
    );
    value(0)
}

/// link and linkat between directory capabilities: lookup on both, create on the new one, the
/// policy's read of the file and write of the new name; and the file may gain no right by its
/// new name, neither the capabilities' (`ENOTCAPABLE`) nor the policy's (`EACCES`, as without
/// capability mode).
fn link(c: &Client, s: &Session, call: Live<TwoPathArgs>) -> Handled {
    let (live, a) = call.split();
    let (olddir, old, newdir, new) = (a.odir.0, a.old, a.ndir.0, a.new);
    let flags = a.flags as i32;
    if flags & !libc::AT_SYMLINK_FOLLOW != 0 {
        return Err(libc::EINVAL);
    }
    if flags & libc::AT_SYMLINK_FOLLOW != 0 {
        // The kernel would follow the last component without RESOLVE_BENEATH.
        return Err(refuse(
            c,
            &text(&old),
            Rule::Escape,
            " (AT_SYMLINK_FOLLOW is not followed beneath a capability)",
        ));
    }
    let (od, orights) = capability(c, s, olddir, &old)?;
    let (nd, nrights) = capability(c, s, newdir, &new)?;
    need(c, &old, orights, Right::Lookup)?;
    need(c, &new, nrights, Right::Lookup)?;
    need(c, &new, nrights, Right::Create)?;
    no_gain(c, (&old, orights), (&new, nrights))?;
    let ((p1, n1), (p2, n2)) = (parent(c, &od, &old)?, parent(c, &nd, &new)?);
    let (from, to) = (child_path(&p1, &n1)?, child_path(&p2, &n2)?);
    policy(c, s, &live, &from, Access::Read)?;
    policy(c, s, &live, &to, Access::Write)?;
    // (A directory cannot be linked: the kernel refuses it, EPERM.)
    if let Some(why) = policy_widening(c, s, &from, &to, false) {
        return Err(c.refuse(
            &to,
            &format!("a hard link at {to} to {from} may not grant rights its source does not have: {why}"),
            libc::EACCES,
        ));
    }
    rustix::fs::linkat(&p1, &n1, &p2, &n2, AtFlags::empty()).map_err(errno)?;
    c.allow_by(
        &live,
        &format!("{} -> {}", text(&new), text(&old)),
        "capability-mode:beneath",
    );
    value(0)
}

fn symlink(c: &Client, s: &Session, call: Live<SymlinkArgs>) -> Handled {
    // The target is text: whatever it names, a walk beneath a capability never follows it out.
    let (live, a) = call.split();
    let (target, newdir, new) = (a.target, a.dirfd.0, a.path);
    let (dir, rights) = capability(c, s, newdir, &new)?;
    need(c, &new, rights, Right::Lookup)?;
    need(c, &new, rights, Right::Create)?;
    let (p, name) = parent(c, &dir, &new)?;
    policy(c, s, &live, &child_path(&p, &name)?, Access::Write)?;
    rustix::fs::symlinkat(cstring(&target)?.as_c_str(), &p, &name).map_err(errno)?;
    c.allow_by(&live, &text(&new), "capability-mode:beneath");
    value(0)
}

/// [`metadata_target`] for the `*at` calls whose `flags` may hold only `AT_SYMLINK_NOFOLLOW` and
/// `AT_EMPTY_PATH` (fchmodat2, fchownat): anything else is EINVAL, as Linux answers.
fn flagged_target(
    c: &Client,
    s: &Session,
    dirfd: i32,
    path: &[u8],
    flags: i32,
    right: Right,
) -> Result<OwnedFd, i32> {
    if flags & !(libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH) != 0 {
        return Err(libc::EINVAL);
    }
    let empty_path = flags & libc::AT_EMPTY_PATH != 0;
    let nofollow = flags & libc::AT_SYMLINK_NOFOLLOW != 0;
    metadata_target(c, s, dirfd, path, empty_path, nofollow, right)
}

/// The object `path` names beneath the capability `dirfd` (not following a last symlink when
/// `nofollow`), for a call that changes its metadata with `right`; or, for an empty path with
/// `AT_EMPTY_PATH`, the object of `dirfd` itself.
fn metadata_target(
    c: &Client,
    s: &Session,
    dirfd: i32,
    path: &[u8],
    empty_path: bool,
    nofollow: bool,
    right: Right,
) -> Result<OwnedFd, i32> {
    if path.is_empty() && empty_path {
        let fd = c.fd(dirfd)?;
        let st = rustix::fs::fstat(&fd).map_err(errno)?;
        need(
            c,
            b"(descriptor)",
            s.held.rights_of(fd.as_fd(), st.st_dev, st.st_ino),
            right,
        )?;
        return Ok(fd);
    }
    let (dir, rights) = capability(c, s, dirfd, path)?;
    need(c, path, rights, Right::Lookup)?;
    need(c, path, rights, right)?;
    beneath::open(
        &dir,
        &cstring(path)?,
        libc::O_PATH | if nofollow { libc::O_NOFOLLOW } else { 0 },
        0,
        ResolveFlags::empty(),
    )
    .map_err(|e| walk_error(c, path, e))
}

/// The agent's own path to the object of `fd` (its `/proc/self/fd` entry), through which a
/// path call acts on exactly that object.
fn by_descriptor(fd: &OwnedFd) -> String {
    format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(fd))
}

fn is_symlink(fd: &OwnedFd) -> Result<bool, i32> {
    let st = rustix::fs::fstat(fd).map_err(errno)?;
    Ok(rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink)
}

fn chmod(c: &Client, s: &Session, call: Live<ChmodArgs>) -> Handled {
    let (live, a) = call.split();
    let (dirfd, path, mode, flags) = (a.dirfd.0, a.path, a.mode, a.flags);
    let obj = flagged_target(c, s, dirfd, &path, flags, Right::Fchmod)?;
    if is_symlink(&obj)? {
        // As Linux answers lchmod.
        return Err(libc::EOPNOTSUPP);
    }
    policy(c, s, &live, &fd_path(&obj)?, Access::Write)?;
    // No set-id bits: a capability to change a mode is not one to grant privilege.
    rustix::fs::chmod(by_descriptor(&obj), Mode::from_raw_mode(mode & 0o1777)).map_err(errno)?;
    c.allow_by(&live, &text(&path), "capability-mode:beneath");
    value(0)
}

fn utimensat(c: &Client, s: &Session, call: Live<UtimeArgs>) -> Handled {
    let (live, a) = call.split();
    let flags = a.flags;
    if flags & !(libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH) != 0 {
        return Err(libc::EINVAL);
    }
    let stamp = |(tv_sec, tv_nsec): (i64, i64)| rustix::fs::Timespec {
        tv_sec,
        tv_nsec: tv_nsec as _,
    };
    let [atime, mtime] = a.times.unwrap_or([(0, rustix::fs::UTIME_NOW); 2]);
    let times = rustix::fs::Timestamps {
        last_access: stamp(atime),
        last_modification: stamp(mtime),
    };
    // futimens is utimensat(fd, NULL, ...): the descriptor itself.
    let null = a.path.is_none();
    let path = a.path.unwrap_or_default();
    let dirfd = a.dirfd.0;
    // Changing times is writing the file's metadata: the write right (FreeBSD's CAP_FUTIMES).
    let obj = metadata_target(
        c,
        s,
        dirfd,
        &path,
        null || flags & libc::AT_EMPTY_PATH != 0,
        flags & libc::AT_SYMLINK_NOFOLLOW != 0,
        Right::Write,
    )?;
    policy(c, s, &live, &fd_path(&obj)?, Access::Write)?;
    if is_symlink(&obj)? {
        rustix::fs::utimensat(
            &obj,
            c"",
            &times,
            AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW,
        )
    } else {
        rustix::fs::utimensat(
            rustix::fs::CWD,
            by_descriptor(&obj),
            &times,
            AtFlags::empty(),
        )
    }
    .map_err(errno)?;
    value(0)
}

// ---- exec, metadata through descriptors, calls by pid --------------------------------------------

fn exec(c: &Client, s: &Session, call: Live<ExecArgs>) -> Handled {
    // (The program's own execve never comes here: `serve` answers it.)
    let a = call.args();
    let (dirfd, path, flags) = (a.dirfd.0, &a.path, a.flags);
    if !(path.is_empty() && flags & libc::AT_EMPTY_PATH != 0) {
        return Err(refuse(c, &text(path), Rule::ExecByPath, ""));
    }
    let fd = c.fd(dirfd)?;
    let st = rustix::fs::fstat(&fd).map_err(errno)?;
    need(
        c,
        b"(fexecve)",
        s.held.rights_of(fd.as_fd(), st.st_dev, st.st_ino),
        Right::Fexecve,
    )?;
    // The descriptor is a register argument: the kernel execs the very file checked, under
    // Landlock's execute right.
    Ok(Answer::Reply(Reply::Continue))
}

fn fd_metadata(c: &Client, s: &Session, call: Live<FdMetadataArgs>) -> Handled {
    let (live, a) = call.split();
    let fd = c.fd(a.fd)?;
    let st = rustix::fs::fstat(&fd).map_err(errno)?;
    let rights = s.held.rights_of(fd.as_fd(), st.st_dev, st.st_ino);
    match a.change {
        FdChange::Mode(mode) => {
            need(c, c.syscall().as_bytes(), rights, Right::Fchmod)?;
            policy(c, s, &live, &fd_path(&fd)?, Access::Write)?;
            // No set-id bits: a capability to change a mode is not one to grant privilege.
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode & 0o1777)).map_err(errno)?;
            value(0)
        }
        FdChange::Owner(uid, gid) => {
            need(c, c.syscall().as_bytes(), rights, Right::Fchown)?;
            policy(c, s, &live, &fd_path(&fd)?, Access::Write)?;
            let (uid, gid) = owner(c, uid, gid)?;
            rustix::fs::fchown(&fd, uid, gid).map_err(errno)?;
            value(0)
        }
        _ => not_yet(c),
    }
}

/// The owner and group a chown names (as the program numbers them, -1 keeping either), as the
/// agent names them: through the sandbox's id map, as warden's policy path does.
fn owner(
    c: &Client,
    uid: u32,
    gid: u32,
) -> Result<(Option<rustix::process::Uid>, Option<rustix::process::Gid>), i32> {
    let map = c.id_map();
    let uid = map.uid_outside(uid)?;
    let gid = map.gid_outside(gid)?;
    Ok((
        uid.map(rustix::process::Uid::from_raw),
        gid.map(rustix::process::Gid::from_raw),
    ))
}

/// chown, lchown (by path: refused) and fchownat beneath a directory capability: the object
/// found strictly beneath it with lookup and fchown, checked against the policy's write, its
/// owner changed through the agent's descriptor of it (a symlink itself with
/// `AT_SYMLINK_NOFOLLOW`).
fn chown(c: &Client, s: &Session, call: Live<ChownArgs>) -> Handled {
    let (live, a) = call.split();
    let (dirfd, path, flags) = (a.dirfd.0, a.path, a.flags);
    let obj = flagged_target(c, s, dirfd, &path, flags, Right::Fchown)?;
    policy(c, s, &live, &fd_path(&obj)?, Access::Write)?;
    let (uid, gid) = owner(c, a.uid, a.gid)?;
    rustix::fs::chownat(&obj, c"", uid, gid, AtFlags::EMPTY_PATH).map_err(errno)?;
    c.allow_by(&live, &text(&path), "capability-mode:beneath");
    value(0)
}

/// mknod (by path: refused) and mknodat beneath a directory capability, with lookup and mknod:
/// a FIFO, a socket or an empty file made in the directory found strictly beneath it; a device
/// node never.
fn mknod(c: &Client, s: &Session, call: Live<MknodArgs>) -> Handled {
    let (live, a) = call.split();
    let (dirfd, path, mode, dev) = (a.dirfd.0, a.path, a.mode, a.dev);
    let (dir, rights) = capability(c, s, dirfd, &path)?;
    let kind = mode & libc::S_IFMT;
    if kind == libc::S_IFCHR || kind == libc::S_IFBLK {
        return Err(refuse(
            c,
            &text(&path),
            Rule::Global,
            " (device nodes cannot be made in a sandbox)",
        ));
    }
    let file_type = match kind {
        0 | libc::S_IFREG => rustix::fs::FileType::RegularFile,
        libc::S_IFIFO => rustix::fs::FileType::Fifo,
        libc::S_IFSOCK => rustix::fs::FileType::Socket,
        _ => return Err(libc::EINVAL),
    };
    need(c, &path, rights, Right::Lookup)?;
    need(c, &path, rights, Right::Mknod)?;
    let (p, name) = parent(c, &dir, &path)?;
    policy(c, s, &live, &child_path(&p, &name)?, Access::Write)?;
    let umask = c.ids_of(&live).map_err(errno)?.umask;
    // No set-id bits: a capability to make a node is not one to grant privilege.
    let perm = Mode::from_raw_mode(mode & 0o1777 & !umask);
    rustix::fs::mknodat(&p, &name, file_type, perm, dev).map_err(errno)?;
    c.allow_by(&live, &text(&path), "capability-mode:beneath");
    value(0)
}

fn checked_call(c: &Client, call: Live<Registers>) -> Handled {
    let own = c.ids()?.ns_tgid;
    let r = call.args();
    match mode::call_rule(r.nr as libc::c_long, &r.args, own) {
        // A register argument naming the caller itself: the kernel re-reads the same value.
        None => Ok(Answer::Reply(Reply::Continue)),
        Some(rule) => {
            let target = match rule {
                Rule::OtherProcess if r.nr == libc::SYS_fcntl => {
                    format!("owner of descriptor {} (pid {})", r.int(0), r.int(2))
                }
                Rule::OtherProcess if r.nr == libc::SYS_ioctl => {
                    format!("owner of descriptor {}", r.int(0))
                }
                Rule::OtherProcess if r.nr == libc::SYS_ptrace => format!("pid {}", r.int(1)),
                Rule::OtherProcess => format!("pid {}", r.int(0)),
                Rule::SocketAddress => format!("socket family {}", r.int(0)),
                _ => c.syscall().to_owned(),
            };
            Err(refuse(c, &target, rule, ""))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filter_and_the_rules_name_the_same_calls() {
        let mut rules: Vec<_> = warden_capsicum::mode::checked_calls().collect();
        let mut filter = crate::syscalls::Profile::CAPABILITY_CHECKED.to_vec();
        rules.sort_unstable();
        filter.sort_unstable();
        assert_eq!(rules, filter);
        assert_eq!(
            crate::syscalls::Profile::OWNER_FCNTLS,
            [
                libc::F_SETOWN as u64,
                warden_capsicum::mode::F_SETOWN_EX as u64
            ]
        );
        assert_eq!(
            crate::syscalls::Profile::OWNER_IOCTLS,
            warden_capsicum::mode::OWNER_IOCTLS
        );
    }
}
