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

use super::{value, Answer, Client, Handled};
use crate::sys::fs as sysfs;
use crate::sys::fs::KernelStruct;
use crate::sys::unotify::Reply;
use crate::syscalls::Family;
use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use warden_capsicum::held::Limit;
use warden_capsicum::request::Request;
use warden_capsicum::{beneath, mode, Entry, Right, Rights, Rule, Session};
use warden_policy::{Access, Denial, Verdict};

/// Serves one call of a sandbox with capability mode (`--capability-mode` or `--capsicum`):
/// `None` when the caller is not in capability mode and the call is the policy's to decide.
pub fn serve(c: &Client, family: Family, s: &Session) -> Option<Handled> {
    if family == Family::CapabilityMode && c.nr() == libc::SYS_socket {
        let args = [0, 1, 2, 3, 4, 5].map(|i| c.arg(i));
        if let Some(r) = Request::decode(&args) {
            return Some(r.and_then(|r| request(c, s, r)));
        }
    }
    if family == Family::Exec && !s.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
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
                Err(e) => return Some(Err(e)),
            }
        }
        return Some(policy_decides(c, Family::Exec));
    }
    match in_mode(c, s) {
        Err(e) => Some(Err(e)),
        Ok(true) => Some(dispatch(c, family, s)),
        Ok(false) if family == Family::CapabilityMode => Some(as_without(c)),
        Ok(false) => None,
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
fn as_without(c: &Client) -> Handled {
    let continue_it = Ok(Answer::Reply(Reply::Continue));
    if c.nr() != libc::SYS_socket {
        return continue_it;
    }
    let (domain, kind) = (c.int(0), c.int(1) & 0xf);
    match domain {
        libc::AF_UNIX if kind == libc::SOCK_STREAM || kind == libc::SOCK_SEQPACKET => continue_it,
        libc::AF_UNIX if kind == libc::SOCK_DGRAM => Err(libc::EACCES),
        libc::AF_NETLINK => continue_it,
        libc::AF_INET | libc::AF_INET6 => match c.net().mode {
            crate::syscalls::Network::Private => continue_it,
            crate::syscalls::Network::Host { .. } => super::net::socket(c),
        },
        _ => Err(libc::ENOSYS),
    }
}

// ---- the program's requests ------------------------------------------------------------------

/// Serves a request of the program side (`warden_capsicum::program`, `c/capsicum.h`).
fn request(c: &Client, s: &Session, r: Request) -> Handled {
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
            c.allow_by("cap_enter", "capability-mode:enter");
            value(0)
        }
        Request::Get { fd } => {
            let f = c.fd(fd)?;
            let st = rustix::fs::fstat(&f).map_err(errno)?;
            let (reads, writes) = access_mode(&f)?;
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
        Request::Limit { fd, rights } => limit(c, s, fd, rights),
    }
}

/// Whether a descriptor reads and writes, by its access mode.
fn access_mode(f: &OwnedFd) -> Result<(bool, bool), i32> {
    let fl = rustix::fs::fcntl_getfl(f).map_err(errno)?;
    if fl.contains(OFlags::PATH) {
        return Ok((false, false));
    }
    Ok(match fl & OFlags::RWMODE {
        m if m == OFlags::WRONLY => (false, true),
        m if m == OFlags::RDWR => (true, true),
        _ => (true, false),
    })
}

/// `cap_rights_limit(n, rights)`. A regular file or directory gets an open file description of
/// its own (the object opened again, with no more access than the rights, put at the same
/// number) whose rights the table keeps apart from every other descriptor of the object
/// (`Held::limit_description`); a description limited before is narrowed in place. Anything
/// else (sockets, pipes, devices, `O_PATH`) is narrowed per object, and re-opened only when
/// read or write goes, so the kernel itself refuses what was taken away.
fn limit(c: &Client, s: &Session, n: i32, rights: Rights) -> Handled {
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
    let (reads, writes) = access_mode(&fd)?;
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
        Some(reopen(&fd, &st, keep).map_err(|e| {
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
    c.allow_by(&format!("{target} to {rights}"), "capability-mode:limit");
    value(0)
}

/// The object of `fd` opened again through the agent's own `/proc/self/fd`, reading and
/// writing only as `keep` says, with `fd`'s status flags and offset. A socket cannot be opened
/// again (`EOPNOTSUPP`).
fn reopen(fd: &OwnedFd, st: &rustix::fs::Stat, keep: (bool, bool)) -> Result<OwnedFd, String> {
    use rustix::fs::FileType;
    let kind = FileType::from_raw_mode(st.st_mode);
    if kind == FileType::Socket {
        return Err("a socket cannot be opened again with fewer rights".into());
    }
    let old = rustix::fs::fcntl_getfl(fd).map_err(|e| e.to_string())?;
    let mode = match keep {
        (true, true) => OFlags::RDWR,
        (true, false) => OFlags::RDONLY,
        (false, true) => OFlags::WRONLY,
        (false, false) => OFlags::PATH,
    };
    let kept = old
        & (OFlags::APPEND
            | OFlags::NONBLOCK
            | OFlags::DIRECT
            | OFlags::NOATIME
            | OFlags::SYNC
            | OFlags::DSYNC);
    // Non-blocking for the open itself: a FIFO would otherwise wait for its other end.
    let new = rustix::fs::open(
        format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(fd)),
        mode | kept | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| e.to_string())?;
    if mode != OFlags::PATH {
        rustix::fs::fcntl_setfl(&new, kept).map_err(|e| e.to_string())?;
    }
    if matches!(kind, FileType::RegularFile | FileType::BlockDevice) {
        let pos =
            rustix::fs::seek(fd, rustix::fs::SeekFrom::Current(0)).map_err(|e| e.to_string())?;
        rustix::fs::seek(&new, rustix::fs::SeekFrom::Start(pos)).map_err(|e| e.to_string())?;
    }
    Ok(new)
}

/// Serves one call of a process in capability mode.
pub fn dispatch(c: &Client, family: Family, s: &Session) -> Handled {
    match family {
        Family::Open => open(c, s),
        Family::Stat => stat(c, s),
        Family::Access => access(c, s),
        Family::Mkdir => mkdir(c, s),
        Family::Unlink => unlink(c, s),
        Family::Exec => exec(c, s),
        Family::FdMetadata => fd_metadata(c, s),
        Family::CapabilityMode => checked_call(c),
        // An anonymous file names nothing.
        Family::Memfd => policy_decides(c, Family::Memfd),
        // Only in the host's network (IP rules): a connection on a socket the program holds.
        Family::Accept => super::net::accept(c),
        Family::SocketAddress | Family::Socket | Family::Send => {
            Err(refuse(c, c.syscall(), Rule::SocketAddress, ""))
        }
        Family::Chdir
        | Family::Statfs
        | Family::Truncate
        | Family::Xattr
        | Family::InotifyAddWatch => {
            let path = c.path_arg(c.arg(0)).unwrap_or_default();
            let rule = mode::path_rule(libc::AT_FDCWD, &path).unwrap_or(Rule::Global);
            Err(refuse(c, &text(&path), rule, ""))
        }
        Family::Readlink => readlink(c, s),
        Family::Rename => rename(c, s),
        Family::Link => link(c, s),
        Family::Symlink => symlink(c, s),
        Family::Chmod => chmod(c, s),
        Family::Utime if c.nr() == libc::SYS_utimensat => utimensat(c, s),
        Family::Utime if c.nr() == libc::SYS_futimesat => not_yet(c),
        Family::Utime => {
            let path = c.path_arg(c.arg(0)).unwrap_or_default();
            let rule = mode::path_rule(libc::AT_FDCWD, &path).unwrap_or(Rule::Global);
            Err(refuse(c, &text(&path), rule, ""))
        }
        Family::Mknod => mknod(c, s),
        Family::Chown => chown(c, s),
    }
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
fn policy(c: &Client, s: &Session, path: &str, access: Access) -> Result<(), i32> {
    match s.entry {
        Entry::Warden if !denied_by_a_rule(c, path, access) => Ok(()),
        _ => c.decide(path, access),
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
fn policy_visible(c: &Client, s: &Session, path: &str) -> Result<(), i32> {
    match s.entry {
        // As [`policy`]: beneath a `--fd` directory only `path-deny` rules hold.
        Entry::Warden if !denied_by_a_rule(c, path, Access::Read) => Ok(()),
        _ => c.decide_visible(path),
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
const LOADER_FLAGS: i32 = libc::O_CLOEXEC | libc::O_LARGEFILE | libc::O_NOCTTY | libc::O_NONBLOCK;

fn open(c: &Client, s: &Session) -> Handled {
    let (dirfd, path_addr, flags, mode, resolve) = match c.nr() {
        libc::SYS_open => (libc::AT_FDCWD, c.arg(0), c.int(1), c.arg(2) as u32, 0),
        libc::SYS_creat => (
            libc::AT_FDCWD,
            c.arg(0),
            libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
            c.arg(1) as u32,
            0,
        ),
        libc::SYS_openat => (c.int(0), c.arg(1), c.int(2), c.arg(3) as u32, 0),
        _ => {
            // openat2: struct open_how { u64 flags, mode, resolve }.
            if c.arg(3) < 24 {
                return Err(libc::EINVAL);
            }
            let mut how = [0u8; 24];
            c.read(c.arg(2), &mut how)?;
            let word = |i: usize| u64::from_ne_bytes(how[i * 8..i * 8 + 8].try_into().unwrap());
            if word(0) >> 32 != 0 {
                return Err(libc::EINVAL);
            }
            (c.int(0), c.arg(1), word(0) as i32, word(1) as u32, word(2))
        }
    };
    let path = c.path_arg(path_addr)?;
    c.live()?;
    let cloexec = flags & libc::O_CLOEXEC != 0;
    if mode::path_rule(dirfd, &path) == Some(Rule::AbsolutePath)
        && flags & !LOADER_FLAGS == libc::O_RDONLY
    {
        if let Some((dir, rest)) = warden_capsicum::library_path(&path) {
            return library(c, s, &path, dir, rest, cloexec);
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
    let fd = checked_open(c, s, &dir, &path, flags & !libc::O_CLOEXEC, mode, resolve)?;
    grant(s, &fd, derived)?;
    c.allow_by(&text(&path), "capability-mode:beneath");
    c.opened_for_writing(flags & libc::O_ACCMODE != libc::O_RDONLY && flags & libc::O_PATH == 0);
    Ok(Answer::Fd(fd, cloexec))
}

/// An open beneath `dir`, checked against the policy ([`policy`]: all of it under
/// `--capsicum`, its `path-deny` rules under `--capability-mode`) before it has any effect: an existing object is found first (`O_PATH`, beneath), checked by its path, and then
/// opened through that very descriptor; a missing one is checked by its would-be path and
/// created in the directory found, never through a symlink put there meanwhile.
fn checked_open(
    c: &Client,
    s: &Session,
    dir: &OwnedFd,
    path: &[u8],
    flags: i32,
    mode: u32,
    resolve: ResolveFlags,
) -> Result<OwnedFd, i32> {
    let accesses = |flags: i32| -> Vec<Access> {
        if flags & libc::O_PATH != 0 {
            return vec![Access::Read];
        }
        let mut a = Vec::new();
        let acc = flags & libc::O_ACCMODE;
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
                policy(c, s, &p, a)?;
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
            policy(c, s, &child_path(&p, &name)?, Access::Write)?;
            beneath::open(&p, &name, flags | libc::O_NOFOLLOW, mode, resolve)
                .map_err(|e| walk_error(c, path, e))
        }
        Err(e) => Err(walk_error(c, path, e)),
    }
}

/// The dynamic loader's read-only open of a library or of its cache (see `warden_capsicum`):
/// strictly beneath the library directory, and only an ELF file there.
fn library(c: &Client, s: &Session, path: &[u8], dir: &str, rest: &[u8], cloexec: bool) -> Handled {
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
    policy(c, s, &fd_path(&fd)?, Access::Read)?;
    c.allow_by(&text(path), "capability-mode:library");
    Ok(Answer::Fd(fd, cloexec))
}

// ---- stat, access -------------------------------------------------------------------------------

fn stat(c: &Client, s: &Session) -> Handled {
    let (dirfd, path_addr, flags, buf) = match c.nr() {
        libc::SYS_stat => (libc::AT_FDCWD, c.arg(0), 0, c.arg(1)),
        libc::SYS_lstat => (
            libc::AT_FDCWD,
            c.arg(0),
            libc::AT_SYMLINK_NOFOLLOW,
            c.arg(1),
        ),
        libc::SYS_newfstatat => (c.int(0), c.arg(1), c.int(3), c.arg(2)),
        _ => (c.int(0), c.arg(1), c.int(2), c.arg(4)),
    };
    let path = if path_addr == 0 && flags & libc::AT_EMPTY_PATH != 0 {
        Vec::new()
    } else {
        c.path_arg(path_addr)?
    };
    if path.is_empty() && flags & libc::AT_EMPTY_PATH != 0 {
        // fstat of a descriptor the caller holds (glibc's fstat): Linux cannot refuse fstat,
        // which is direct (warden_capsicum::rights::ENFORCEMENT).
        return policy_decides(c, Family::Stat);
    }
    c.live()?;
    let (obj, _) = look_up(c, s, dirfd, &path, flags)?;
    let at = libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH | (flags & libc::AT_STATX_SYNC_TYPE);
    let map = c.id_map();
    if c.nr() == libc::SYS_statx {
        let mut st = sysfs::statx(obj.as_fd(), c"", at, c.arg(3) as u32)
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
        (st.stx_uid, st.stx_gid) = (map.uid_inside(st.stx_uid), map.gid_inside(st.stx_gid));
        c.write(buf, st.bytes())?;
    } else {
        let mut st = sysfs::fstatat(obj.as_fd(), c"", at & !libc::AT_STATX_SYNC_TYPE)
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
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
    policy_visible(c, s, &fd_path(&obj)?)?;
    Ok((obj, rights))
}

fn access(c: &Client, s: &Session) -> Handled {
    let (dirfd, path_addr, amode, flags) = match c.nr() {
        libc::SYS_access => (libc::AT_FDCWD, c.arg(0), c.int(1), 0),
        libc::SYS_faccessat => (c.int(0), c.arg(1), c.int(2), 0),
        _ => (c.int(0), c.arg(1), c.int(2), c.int(3)),
    };
    let path = c.path_arg(path_addr)?;
    c.live()?;
    let (obj, rights) = look_up(c, s, dirfd, &path, flags)?;
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

fn mkdir(c: &Client, s: &Session) -> Handled {
    let (dirfd, path_addr, mode) = match c.nr() {
        libc::SYS_mkdir => (libc::AT_FDCWD, c.arg(0), c.arg(1) as u32),
        _ => (c.int(0), c.arg(1), c.arg(2) as u32),
    };
    let path = c.path_arg(path_addr)?;
    c.live()?;
    let (dir, rights) = capability(c, s, dirfd, &path)?;
    need(c, &path, rights, Right::Lookup)?;
    need(c, &path, rights, Right::Mkdir)?;
    let (p, name) = parent(c, &dir, &path)?;
    policy(c, s, &child_path(&p, &name)?, Access::Write)?;
    let umask = c.ids()?.umask;
    rustix::fs::mkdirat(&p, &name, Mode::from_raw_mode(mode & 0o1777 & !umask)).map_err(errno)?;
    c.allow_by(&text(&path), "capability-mode:beneath");
    value(0)
}

fn unlink(c: &Client, s: &Session) -> Handled {
    let (dirfd, path_addr, flags) = match c.nr() {
        libc::SYS_unlink => (libc::AT_FDCWD, c.arg(0), 0),
        libc::SYS_rmdir => (libc::AT_FDCWD, c.arg(0), libc::AT_REMOVEDIR),
        _ => (c.int(0), c.arg(1), c.int(2)),
    };
    let path = c.path_arg(path_addr)?;
    c.live()?;
    let (dir, rights) = capability(c, s, dirfd, &path)?;
    need(c, &path, rights, Right::Lookup)?;
    need(c, &path, rights, Right::Unlink)?;
    let (p, name) = parent(c, &dir, &path)?;
    policy(c, s, &child_path(&p, &name)?, Access::Unlink)?;
    rustix::fs::unlinkat(
        &p,
        &name,
        AtFlags::from_bits_retain((flags & libc::AT_REMOVEDIR) as u32),
    )
    .map_err(errno)?;
    c.allow_by(&text(&path), "capability-mode:beneath");
    value(0)
}

// ---- readlink, rename, link, symlink, chmod, utimensat -----------------------------------------

fn readlink(c: &Client, s: &Session) -> Handled {
    let (dirfd, path_addr, buf, size) = match c.nr() {
        libc::SYS_readlink => (libc::AT_FDCWD, c.arg(0), c.arg(1), c.int(2)),
        _ => (c.int(0), c.arg(1), c.arg(2), c.int(3)),
    };
    if size <= 0 {
        return Err(libc::EINVAL);
    }
    let path = c.path_arg(path_addr)?;
    c.live()?;
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
    policy(c, s, &fd_path(&obj)?, Access::Read)?;
    // readlinkat(fd, "") reads the symlink an O_PATH descriptor is; EINVAL for anything else.
    let target = rustix::fs::readlinkat(&obj, c"", Vec::new()).map_err(errno)?;
    let bytes = target.as_bytes();
    let n = bytes.len().min(size as usize);
    c.write(buf, &bytes[..n])?;
    value(n as i64)
}

/// A name in a directory beneath a capability: the directory and the name.
type Named = (OwnedFd, CString);

/// Both ends of a two-path call (rename, link): each a directory capability and a name in a
/// directory beneath it, with the rights each needs.
fn two_ends(
    c: &Client,
    s: &Session,
    (olddir, old): (i32, &[u8]),
    (newdir, new): (i32, &[u8]),
    (old_right, new_right): (Right, Right),
) -> Result<(Named, Named), i32> {
    let (od, orights) = capability(c, s, olddir, old)?;
    let (nd, nrights) = capability(c, s, newdir, new)?;
    need(c, old, orights, Right::Lookup)?;
    need(c, old, orights, old_right)?;
    need(c, new, nrights, Right::Lookup)?;
    need(c, new, nrights, new_right)?;
    Ok((parent(c, &od, old)?, parent(c, &nd, new)?))
}

fn rename(c: &Client, s: &Session) -> Handled {
    let (olddir, old_addr, newdir, new_addr, flags) = match c.nr() {
        libc::SYS_rename => (libc::AT_FDCWD, c.arg(0), libc::AT_FDCWD, c.arg(1), 0),
        libc::SYS_renameat => (c.int(0), c.arg(1), c.int(2), c.arg(3), 0),
        _ => (c.int(0), c.arg(1), c.int(2), c.arg(3), c.arg(4) as u32),
    };
    let old = c.path_arg(old_addr)?;
    let new = c.path_arg(new_addr)?;
    c.live()?;
    // The name leaves the first directory (unlink) and appears in the second (create).
    let ((p1, n1), (p2, n2)) = two_ends(
        c,
        s,
        (olddir, &old),
        (newdir, &new),
        (Right::Unlink, Right::Create),
    )?;
    let (from, to) = (child_path(&p1, &n1)?, child_path(&p2, &n2)?);
    policy(c, s, &from, Access::Unlink)?;
    policy(c, s, &to, Access::Write)?;
    if flags & libc::RENAME_EXCHANGE != 0 {
        policy(c, s, &to, Access::Unlink)?;
        policy(c, s, &from, Access::Write)?;
    }
    rustix::fs::renameat_with(
        &p1,
        &n1,
        &p2,
        &n2,
        rustix::fs::RenameFlags::from_bits_retain(flags),
    )
    .map_err(errno)?;
    c.allow_by(
        &format!("{} -> {}", text(&old), text(&new)),
        "capability-mode:beneath",
    );
    value(0)
}

fn link(c: &Client, s: &Session) -> Handled {
    let (olddir, old_addr, newdir, new_addr, flags) = match c.nr() {
        libc::SYS_link => (libc::AT_FDCWD, c.arg(0), libc::AT_FDCWD, c.arg(1), 0),
        _ => (c.int(0), c.arg(1), c.int(2), c.arg(3), c.int(4)),
    };
    let old = c.path_arg(old_addr)?;
    let new = c.path_arg(new_addr)?;
    c.live()?;
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
    let ((p1, n1), (p2, n2)) = two_ends(
        c,
        s,
        (olddir, &old),
        (newdir, &new),
        (Right::Lookup, Right::Create),
    )?;
    policy(c, s, &child_path(&p1, &n1)?, Access::Read)?;
    policy(c, s, &child_path(&p2, &n2)?, Access::Write)?;
    rustix::fs::linkat(&p1, &n1, &p2, &n2, AtFlags::empty()).map_err(errno)?;
    c.allow_by(
        &format!("{} -> {}", text(&new), text(&old)),
        "capability-mode:beneath",
    );
    value(0)
}

fn symlink(c: &Client, s: &Session) -> Handled {
    let (target_addr, newdir, new_addr) = match c.nr() {
        libc::SYS_symlink => (c.arg(0), libc::AT_FDCWD, c.arg(1)),
        _ => (c.arg(0), c.int(1), c.arg(2)),
    };
    // The target is text: whatever it names, a walk beneath a capability never follows it out.
    let target = c.path_arg(target_addr)?;
    let new = c.path_arg(new_addr)?;
    c.live()?;
    let (dir, rights) = capability(c, s, newdir, &new)?;
    need(c, &new, rights, Right::Lookup)?;
    need(c, &new, rights, Right::Create)?;
    let (p, name) = parent(c, &dir, &new)?;
    policy(c, s, &child_path(&p, &name)?, Access::Write)?;
    rustix::fs::symlinkat(cstring(&target)?.as_c_str(), &p, &name).map_err(errno)?;
    c.allow_by(&text(&new), "capability-mode:beneath");
    value(0)
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

fn chmod(c: &Client, s: &Session) -> Handled {
    let (dirfd, path_addr, mode, flags) = match c.nr() {
        libc::SYS_chmod => (libc::AT_FDCWD, c.arg(0), c.arg(1) as u32, 0),
        libc::SYS_fchmodat => (c.int(0), c.arg(1), c.arg(2) as u32, 0),
        _ => (c.int(0), c.arg(1), c.arg(2) as u32, c.int(3)),
    };
    if flags & !(libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH) != 0 {
        return Err(libc::EINVAL);
    }
    let path = c.path_arg(path_addr)?;
    c.live()?;
    let obj = metadata_target(
        c,
        s,
        dirfd,
        &path,
        flags & libc::AT_EMPTY_PATH != 0,
        flags & libc::AT_SYMLINK_NOFOLLOW != 0,
        Right::Fchmod,
    )?;
    if is_symlink(&obj)? {
        // As Linux answers lchmod.
        return Err(libc::EOPNOTSUPP);
    }
    policy(c, s, &fd_path(&obj)?, Access::Write)?;
    // No set-id bits: a capability to change a mode is not one to grant privilege.
    rustix::fs::chmod(by_descriptor(&obj), Mode::from_raw_mode(mode & 0o1777)).map_err(errno)?;
    c.allow_by(&text(&path), "capability-mode:beneath");
    value(0)
}

fn utimensat(c: &Client, s: &Session) -> Handled {
    let (dirfd, path_addr, times_addr, flags) = (c.int(0), c.arg(1), c.arg(2), c.int(3));
    if flags & !(libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH) != 0 {
        return Err(libc::EINVAL);
    }
    let times = if times_addr == 0 {
        let now = rustix::fs::Timespec {
            tv_sec: 0,
            tv_nsec: rustix::fs::UTIME_NOW,
        };
        rustix::fs::Timestamps {
            last_access: now,
            last_modification: now,
        }
    } else {
        let mut raw = [0u8; 32];
        c.read(times_addr, &mut raw)?;
        let word = |i: usize| i64::from_ne_bytes(raw[i * 8..i * 8 + 8].try_into().unwrap());
        rustix::fs::Timestamps {
            last_access: rustix::fs::Timespec {
                tv_sec: word(0),
                tv_nsec: word(1) as _,
            },
            last_modification: rustix::fs::Timespec {
                tv_sec: word(2),
                tv_nsec: word(3) as _,
            },
        }
    };
    // futimens is utimensat(fd, NULL, ...): the descriptor itself.
    let path = if path_addr == 0 {
        Vec::new()
    } else {
        c.path_arg(path_addr)?
    };
    c.live()?;
    // Changing times is writing the file's metadata: the write right (FreeBSD's CAP_FUTIMES).
    let obj = metadata_target(
        c,
        s,
        dirfd,
        &path,
        path_addr == 0 || flags & libc::AT_EMPTY_PATH != 0,
        flags & libc::AT_SYMLINK_NOFOLLOW != 0,
        Right::Write,
    )?;
    policy(c, s, &fd_path(&obj)?, Access::Write)?;
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

fn exec(c: &Client, s: &Session) -> Handled {
    // (The program's own execve never comes here: `serve` answers it.)
    let (dirfd, path_addr, flags) = match c.nr() {
        libc::SYS_execve => (libc::AT_FDCWD, c.arg(0), 0),
        _ => (c.int(0), c.arg(1), c.int(4)),
    };
    let path = c.path_arg(path_addr)?;
    c.live()?;
    if !(path.is_empty() && flags & libc::AT_EMPTY_PATH != 0) {
        return Err(refuse(c, &text(&path), Rule::ExecByPath, ""));
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

fn fd_metadata(c: &Client, s: &Session) -> Handled {
    let fd = c.fd(c.int(0))?;
    let st = rustix::fs::fstat(&fd).map_err(errno)?;
    let rights = s.held.rights_of(fd.as_fd(), st.st_dev, st.st_ino);
    match c.nr() {
        libc::SYS_fchmod => {
            need(c, c.syscall().as_bytes(), rights, Right::Fchmod)?;
            policy(c, s, &fd_path(&fd)?, Access::Write)?;
            // No set-id bits: a capability to change a mode is not one to grant privilege.
            let mode = c.arg(1) as u32 & 0o1777;
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode)).map_err(errno)?;
            value(0)
        }
        libc::SYS_fchown => {
            need(c, c.syscall().as_bytes(), rights, Right::Fchown)?;
            policy(c, s, &fd_path(&fd)?, Access::Write)?;
            let (uid, gid) = owner(c, c.arg(1), c.arg(2))?;
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
    uid: u64,
    gid: u64,
) -> Result<(Option<rustix::process::Uid>, Option<rustix::process::Gid>), i32> {
    let map = c.id_map();
    let uid = map.uid_outside(uid as u32)?;
    let gid = map.gid_outside(gid as u32)?;
    Ok((
        uid.map(rustix::process::Uid::from_raw),
        gid.map(rustix::process::Gid::from_raw),
    ))
}

/// chown, lchown (by path: refused) and fchownat beneath a directory capability: the object
/// found strictly beneath it with lookup and fchown, checked against the policy's write, its
/// owner changed through the agent's descriptor of it (a symlink itself with
/// `AT_SYMLINK_NOFOLLOW`).
fn chown(c: &Client, s: &Session) -> Handled {
    let (dirfd, path_addr, uid, gid, flags) = match c.nr() {
        libc::SYS_chown => (libc::AT_FDCWD, c.arg(0), c.arg(1), c.arg(2), 0),
        libc::SYS_lchown => (
            libc::AT_FDCWD,
            c.arg(0),
            c.arg(1),
            c.arg(2),
            libc::AT_SYMLINK_NOFOLLOW,
        ),
        _ => (c.int(0), c.arg(1), c.arg(2), c.arg(3), c.int(4)),
    };
    if flags & !(libc::AT_SYMLINK_NOFOLLOW | libc::AT_EMPTY_PATH) != 0 {
        return Err(libc::EINVAL);
    }
    let path = c.path_arg(path_addr)?;
    c.live()?;
    let obj = metadata_target(
        c,
        s,
        dirfd,
        &path,
        flags & libc::AT_EMPTY_PATH != 0,
        flags & libc::AT_SYMLINK_NOFOLLOW != 0,
        Right::Fchown,
    )?;
    policy(c, s, &fd_path(&obj)?, Access::Write)?;
    let (uid, gid) = owner(c, uid, gid)?;
    rustix::fs::chownat(&obj, c"", uid, gid, AtFlags::EMPTY_PATH).map_err(errno)?;
    c.allow_by(&text(&path), "capability-mode:beneath");
    value(0)
}

/// mknod (by path: refused) and mknodat beneath a directory capability, with lookup and mknod:
/// a FIFO, a socket or an empty file made in the directory found strictly beneath it; a device
/// node never.
fn mknod(c: &Client, s: &Session) -> Handled {
    let (dirfd, path_addr, mode, dev) = match c.nr() {
        libc::SYS_mknod => (libc::AT_FDCWD, c.arg(0), c.arg(1) as u32, c.arg(2)),
        _ => (c.int(0), c.arg(1), c.arg(2) as u32, c.arg(3)),
    };
    let path = c.path_arg(path_addr)?;
    c.live()?;
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
    policy(c, s, &child_path(&p, &name)?, Access::Write)?;
    let umask = c.ids()?.umask;
    // No set-id bits: a capability to make a node is not one to grant privilege.
    let perm = Mode::from_raw_mode(mode & 0o1777 & !umask);
    rustix::fs::mknodat(&p, &name, file_type, perm, dev).map_err(errno)?;
    c.allow_by(&text(&path), "capability-mode:beneath");
    value(0)
}

fn checked_call(c: &Client) -> Handled {
    let own = c.ids()?.ns_tgid;
    let args = [0, 1, 2, 3, 4, 5].map(|i| c.arg(i));
    match mode::call_rule(c.nr() as libc::c_long, &args, own) {
        // A register argument naming the caller itself: the kernel re-reads the same value.
        None => Ok(Answer::Reply(Reply::Continue)),
        Some(rule) => {
            let target = match rule {
                Rule::OtherProcess if c.nr() == libc::SYS_fcntl => {
                    format!("owner of descriptor {} (pid {})", c.int(0), c.int(2))
                }
                Rule::OtherProcess if c.nr() == libc::SYS_ioctl => {
                    format!("owner of descriptor {}", c.int(0))
                }
                Rule::OtherProcess if c.nr() == libc::SYS_ptrace => format!("pid {}", c.int(1)),
                Rule::OtherProcess => format!("pid {}", c.int(0)),
                Rule::SocketAddress => format!("socket family {}", c.int(0)),
                _ => c.syscall().to_owned(),
            };
            Err(refuse(c, &target, rule, ""))
        }
    }
}

/// A call capability mode lets through, decided and performed as without it (the policy's
/// typed steps).
fn policy_decides(c: &Client, family: Family) -> Handled {
    super::dispatch_typed(c, family).map_err(|e| e.raw_os_error())
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
