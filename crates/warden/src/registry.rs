//! The registry of running sandboxes, for `warden ps` and `warden inspect`.
//!
//! Each `warden run` keeps one JSON file, `ID.json`, in its user's registry directory, rewrites
//! it twice a second with its counters and the descriptors its agent handed out (device, inode,
//! path and granting rule), and removes it when it ends. The directory is private to its user
//! (mode 0700, checked through its descriptor to be theirs), so a user lists only their own
//! sandboxes; root lists every user's. `/proc` does the rest: which processes are in the sandbox
//! (its PID namespace) and what each holds, readable only by whoever may trace them.
//!
//! What a user writes in their directory is theirs to say, and is shown as theirs, nothing more:
//! an entry counts only from a directory and a file owned by the user it names, and only while
//! the process it names is its warden (the same pid, start time and user) with its init as a
//! child. So nobody can list a sandbox as another user's, stand in for another user's sandbox,
//! or revive a dead one with a reused pid; and what a reader opens is a regular file, bounded.

use rustix::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::ffi::CStr;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use warden_policy::escape::escape;

/// Most descriptors remembered per sandbox (half are forgotten past this).
pub const MAX_GRANTS: usize = 8192;
/// Most bytes of paths remembered per sandbox (half the descriptors are forgotten past this):
/// the paths are the program's to choose, up to 4 KiB each, and 8,192 of those would be 32 MiB
/// of warden's memory, whatever the sandbox's `--mem` (`agent::budget`). 8,192 paths of 32
/// bytes fit.
pub const MAX_GRANT_BYTES: usize = 256 * 1024;

/// One running sandbox, as registered.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Entry {
    /// The run's id (as in the decision log).
    pub id: String,
    /// warden's pid.
    pub warden_pid: u32,
    /// When warden started, in clock ticks after boot (field 22 of `/proc/PID/stat`): with the
    /// pid, which process warden is (a pid is reused; a pid and its start time are not).
    #[serde(default)]
    pub warden_start: u64,
    /// The sandbox's init, in warden's PID namespace.
    pub init_pid: u32,
    /// The user who ran warden.
    pub uid: u32,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Seconds since the epoch when it started.
    pub started: f64,
    /// The policy files its rules came from (`<default>` for the built-in one).
    pub policies: Vec<String>,
    /// `private` (no network) or `host` (network through the agent).
    pub network: String,
    /// How file calls are enforced: `delegated` (the agent decides each).
    pub mode: String,
    /// Delegated calls so far.
    pub delegated: u64,
    /// Denials so far.
    pub denied: u64,
    /// Descriptors the agent handed out, with the rule that allowed each.
    pub grants: Vec<Grant>,
    /// Capability mode (`--capability-mode`, `--capsicum`): how processes enter it and the
    /// rights of what the sandbox holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capsicum: Option<Capsicum>,
    /// What the run does without where the host lacks a piece (no user namespaces, no
    /// Landlock, no view, a primitive replaced): `crate::report::Measured::degraded`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub degraded: Vec<String>,
}

/// A sandbox's capability mode, as registered.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Capsicum {
    /// `warden` (every process, `--capability-mode`) or `program` (a process that entered,
    /// `--capsicum`).
    pub entry: String,
    /// The seccomp filters the program started with: a process with more has entered.
    pub base_filters: Option<u32>,
    /// Whether any process has asked to enter (until then none is in the mode).
    #[serde(default)]
    pub entered: bool,
    /// What an object not in `rights` holds.
    pub default_rights: String,
    /// The rights of each object the agent knows of.
    pub rights: Vec<HeldRights>,
    /// Open file descriptions limited on their own (`cap_rights_limit` of a file or
    /// directory), which hold these rights whatever their object's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub descriptions: Vec<HeldDescription>,
}

/// An open file description limited on its own: the agent's descriptor of it, which `warden
/// inspect` compares with a program's (`kcmp`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct HeldDescription {
    /// The object's device.
    pub dev: u64,
    /// The object's inode.
    pub ino: u64,
    /// The agent's descriptor number of it, in warden's process.
    pub agent_fd: i32,
    /// The rights (`read,seek`).
    pub rights: String,
}

/// The rights the sandbox holds to one object.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct HeldRights {
    /// The object's device.
    pub dev: u64,
    /// The object's inode.
    pub ino: u64,
    /// The rights (`read,seek`).
    pub rights: String,
}

impl Capsicum {
    /// The state of `session` now.
    pub fn of(session: &warden_capsicum::Session) -> Capsicum {
        Capsicum {
            entry: session.entry.name().into(),
            base_filters: session.base_filters.get().copied(),
            entered: session.any_entered(),
            default_rights: session.held.default_rights().to_string(),
            rights: session
                .held
                .list()
                .into_iter()
                .map(|((dev, ino), r)| HeldRights {
                    dev,
                    ino,
                    rights: r.to_string(),
                })
                .collect(),
            descriptions: session
                .held
                .list_descriptions()
                .into_iter()
                .map(|((dev, ino), agent_fd, r)| HeldDescription {
                    dev,
                    ino,
                    agent_fd,
                    rights: r.to_string(),
                })
                .collect(),
        }
    }

    /// Whether a process with `filters` seccomp filters is in capability mode.
    fn in_mode(&self, filters: Option<u32>) -> bool {
        warden_capsicum::Entry::from_name(&self.entry).is_none_or(|e| {
            (self.entered || e == warden_capsicum::Entry::Warden)
                && warden_capsicum::in_mode(e, self.base_filters, filters)
        })
    }
}

/// A descriptor the agent opened for the sandbox.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Grant {
    /// The object's device.
    pub dev: u64,
    /// The object's inode.
    pub ino: u64,
    /// The logical path the program named.
    pub path: String,
    /// The rule that allowed it (`file:line:col`).
    pub rule: String,
}

/// An object by (device, inode).
type Object = (u64, u64);

/// What the agent remembers of the descriptors it handed out: the path each object was opened
/// as, and where the rule that allowed it was written (shared per rule, not formatted per open).
#[derive(Default)]
pub struct Grants(Mutex<GrantTable>);

#[derive(Default)]
struct GrantTable {
    map: HashMap<Object, (String, Arc<str>)>,
    /// The bytes of the paths in `map`.
    bytes: usize,
}

impl Grants {
    /// Remembers that the object `(dev, ino)` was opened as `path` under `rule`.
    pub fn record(&self, dev: u64, ino: u64, path: String, rule: Arc<str>) {
        if let Ok(mut t) = self.0.lock() {
            if t.map.len() >= MAX_GRANTS || t.bytes + path.len() > MAX_GRANT_BYTES {
                let keys: Vec<Object> = t.map.keys().take(t.map.len() / 2 + 1).copied().collect();
                for k in keys {
                    if let Some((p, _)) = t.map.remove(&k) {
                        t.bytes -= p.len();
                    }
                }
            }
            t.bytes += path.len();
            if let Some((old, _)) = t.map.insert((dev, ino), (path, rule)) {
                t.bytes -= old.len();
            }
        }
    }

    fn list(&self) -> Vec<Grant> {
        let Ok(t) = self.0.lock() else {
            return Vec::new();
        };
        t.map
            .iter()
            .map(|(&(dev, ino), (path, rule))| Grant {
                dev,
                ino,
                path: path.clone(),
                rule: rule.to_string(),
            })
            .collect()
    }
}

/// The largest entry written or read. A run's descriptors are bounded ([`MAX_GRANTS`],
/// [`MAX_GRANT_BYTES`]) to about a quarter of it; an entry that would be larger anyway (very long
/// rules or command lines) is written with fewer of them ([`serialize`]).
pub const MAX_ENTRY_BYTES: usize = 4 << 20;
/// The most names looked at in one user's registry directories, all together.
const MAX_NAMES: usize = 4096;
/// The most bytes of entries read from one user's registry directories, all together: whatever
/// a user puts in theirs, `warden ps` reads a bounded amount of it, and spends only that user's
/// share (nobody can make a directory that counts as another user's).
const MAX_USER_BYTES: usize = 64 << 20;
/// The most registry directories read of one user (a user has one, two with `$XDG_RUNTIME_DIR`,
/// and one more when another user made theirs first).
const MAX_USER_DIRS: usize = 16;
/// The most names looked at in `$TMPDIR` or `/run/user` for registry directories.
const MAX_TMP_NAMES: usize = 1 << 20;

/// A registry directory, and the user its name says it is of (`/run/warden` is root's,
/// `/run/user/UID/warden` and `$TMPDIR/warden-run-UID[.SUFFIX]` are UID's). Its entries are
/// believed only when that user owns it and them ([`list`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Source {
    /// Where it is.
    pub path: PathBuf,
    /// The user it claims to be of.
    pub uid: u32,
}

/// Why a registry directory is not believed (or not used).
#[derive(Debug)]
pub enum Untrusted {
    /// It does not exist.
    Missing,
    /// It is a symbolic link, or not a directory.
    NotDirectory,
    /// Another user owns it.
    Owner(u32),
    /// Its group or others have access: it is not private.
    Mode(u32),
    /// It could not be opened or examined.
    Io(io::Error),
}

impl Untrusted {
    /// What would make the directory usable, for a note after the reason (empty if nothing
    /// simple would).
    pub fn remedy(&self) -> &'static str {
        match self {
            Untrusted::Owner(_) | Untrusted::NotDirectory => " (its owner or root can remove it)",
            Untrusted::Mode(_) => " (`chmod 700` by its owner makes it private)",
            Untrusted::Missing | Untrusted::Io(_) => "",
        }
    }
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Untrusted::Missing => write!(f, "it does not exist"),
            Untrusted::NotDirectory => write!(f, "it is a symbolic link or not a directory"),
            Untrusted::Owner(uid) => write!(f, "it belongs to uid {uid}"),
            Untrusted::Mode(mode) => write!(f, "its mode is {mode:04o}, not 0700"),
            Untrusted::Io(e) => write!(f, "{e}"),
        }
    }
}

/// The registry directory a run of user `uid` uses (not created): root's `/run/warden`; a
/// user's `$XDG_RUNTIME_DIR/warden` when that directory is theirs, else `$TMPDIR/warden-run-UID`
/// (unless somebody else made that first: [`open_own`]).
pub fn dir_for(uid: u32) -> PathBuf {
    if uid == 0 {
        return PathBuf::from("/run/warden");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if Path::new(&d).is_absolute() && owned_by(Path::new(&d), uid) => {
            Path::new(&d).join("warden")
        }
        _ => std::env::temp_dir().join(format!("warden-run-{uid}")),
    }
}

fn owned_by(p: &Path, uid: u32) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.uid() == uid && m.is_dir())
}

/// Opens `path` as a registry directory of `uid`: the directory itself (a symbolic link is not
/// followed), owned by `uid`, with no access for group or others (an ACL that gives any shows in
/// the group bits). Everything done in it goes through the descriptor.
pub fn open_private_dir(path: &Path, uid: u32) -> Result<OwnedFd, Untrusted> {
    use rustix::io::Errno;
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::NOENT => Untrusted::Missing,
        Errno::LOOP | Errno::NOTDIR => Untrusted::NotDirectory,
        // Somebody else's, most likely: only to say whose.
        Errno::ACCESS => match rustix::fs::lstat(path) {
            Ok(st) if st.st_uid != uid => Untrusted::Owner(st.st_uid),
            _ => Untrusted::Io(e.into()),
        },
        e => Untrusted::Io(e.into()),
    })?;
    let st = rustix::fs::fstat(&fd).map_err(|e| Untrusted::Io(e.into()))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
        return Err(Untrusted::NotDirectory);
    }
    if st.st_uid != uid {
        return Err(Untrusted::Owner(st.st_uid));
    }
    if st.st_mode & 0o077 != 0 {
        return Err(Untrusted::Mode(st.st_mode & 0o7777));
    }
    Ok(fd)
}

/// [`open_private_dir`], made first (mode 0700) if it does not exist.
fn make_private_dir(path: &Path, uid: u32) -> Result<OwnedFd, Untrusted> {
    match rustix::fs::mkdir(path, Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => {}
        Err(e) => return Err(Untrusted::Io(e.into())),
    }
    open_private_dir(path, uid)
}

/// The caller's registry directory, open.
pub struct OwnDir {
    /// The directory.
    pub fd: OwnedFd,
    /// Where it is.
    pub path: PathBuf,
    /// The usual one ([`dir_for`]) and why it was not used, when it was not: somebody else made
    /// it first, or made it a link, or it is open to others (or it could not be made).
    pub passed_over: Option<(PathBuf, Untrusted)>,
}

/// The registry directory of the caller (user `uid`), made if need be: [`dir_for`], when it is
/// a private directory of theirs; when it is not (another user made `/tmp/warden-run-UID`
/// first, to hide the caller's runs or show their own as the caller's), a private
/// `$TMPDIR/warden-run-UID.XXXXXXXX` of theirs, an earlier one or a new one, which readers find
/// as they find the usual one and believe for the same reason: `uid` owns it.
pub fn open_own(uid: u32) -> io::Result<OwnDir> {
    let usual = dir_for(uid);
    let why = match make_private_dir(&usual, uid) {
        Ok(fd) => {
            return Ok(OwnDir {
                fd,
                path: usual,
                passed_over: None,
            })
        }
        Err(why) => why,
    };
    let tmp = std::env::temp_dir();
    let prefix = format!("warden-run-{uid}.");
    let earlier = std::fs::read_dir(&tmp).into_iter().flatten().flatten();
    let found = earlier.take(MAX_TMP_NAMES).find_map(|e| {
        let path = e.path();
        let ours = e.file_name().to_str()?.starts_with(&prefix);
        ours.then(|| open_private_dir(&path, uid).ok().map(|fd| (fd, path)))?
    });
    let made = || {
        (0..16).find_map(|_| {
            let path = tmp.join(format!("{prefix}{:08x}", crate::unique::rand32()));
            match rustix::fs::mkdir(&path, Mode::from_raw_mode(0o700)) {
                Ok(()) => open_private_dir(&path, uid).ok().map(|fd| (fd, path)),
                Err(_) => None,
            }
        })
    };
    let (fd, path) = found.or_else(made).ok_or_else(|| {
        io::Error::other(format!(
            "{} is not a private directory of uid {uid} ({why}), and no other could be made",
            usual.display()
        ))
    })?;
    Ok(OwnDir {
        fd,
        path,
        passed_over: Some((usual, why)),
    })
}

/// The uid a registry directory's name in `$TMPDIR` says it is of: `warden-run-UID` or
/// `warden-run-UID.SUFFIX`.
fn tmp_dir_uid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("warden-run-")?;
    let digits = rest.split_once('.').map_or(rest, |(d, _)| d);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Every registry directory the caller may read: their own (the usual one, and any their runs
/// fell back to), and, for root, everyone's.
pub fn readable_dirs() -> Vec<Source> {
    let uid = rustix::process::geteuid().as_raw();
    let mut dirs = vec![Source {
        path: dir_for(uid),
        uid,
    }];
    if uid == 0 {
        let users = std::fs::read_dir("/run/user")
            .into_iter()
            .flatten()
            .flatten();
        for e in users.take(MAX_TMP_NAMES) {
            if let Some(n) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) {
                dirs.push(Source {
                    path: e.path().join("warden"),
                    uid: n,
                });
            }
        }
    }
    let tmp = std::fs::read_dir(std::env::temp_dir())
        .into_iter()
        .flatten()
        .flatten();
    for e in tmp.take(MAX_TMP_NAMES) {
        if let Some(n) = e.file_name().to_str().and_then(tmp_dir_uid) {
            if uid == 0 || n == uid {
                dirs.push(Source {
                    path: e.path(),
                    uid: n,
                });
            }
        }
    }
    dirs.sort();
    dirs.dedup();
    dirs
}

/// What [`list`] found.
#[derive(Debug, Default)]
pub struct Listing {
    /// The sandboxes running, oldest first.
    pub entries: Vec<Entry>,
    /// The caller's own registry directories that were not believed, and why.
    pub ignored: Vec<(PathBuf, Untrusted)>,
}

/// The sandboxes registered in `dirs` whose warden is still running. An entry is believed only
/// from a private directory its user owns ([`open_private_dir`]), as a regular file they own,
/// of at most [`MAX_ENTRY_BYTES`], that names them, and whose warden is that very process, run
/// by them ([`running`]). Nothing in a directory can make this block or read without bound:
/// links, FIFOs and devices are never opened for reading, and each user's directories give at
/// most [`MAX_USER_DIRS`] directories, [`MAX_NAMES`] names and [`MAX_USER_BYTES`] bytes.
pub fn list(dirs: &[Source]) -> Listing {
    /// What is left to read of one user's directories.
    struct Left {
        dirs: usize,
        names: usize,
        bytes: usize,
    }
    let me = rustix::process::geteuid().as_raw();
    let mut out = Listing::default();
    let mut seen = std::collections::HashSet::new();
    let mut left: HashMap<u32, Left> = HashMap::new();
    for src in dirs {
        let fd = match open_private_dir(&src.path, src.uid) {
            Ok(fd) => fd,
            Err(Untrusted::Missing) => continue,
            Err(why) => {
                if src.uid == me {
                    out.ignored.push((src.path.clone(), why));
                }
                continue;
            }
        };
        let Ok(st) = rustix::fs::fstat(&fd) else {
            continue;
        };
        if !seen.insert((st.st_dev, st.st_ino)) {
            continue;
        }
        let left = left.entry(src.uid).or_insert(Left {
            dirs: MAX_USER_DIRS,
            names: MAX_NAMES,
            bytes: MAX_USER_BYTES,
        });
        if left.dirs == 0 {
            continue;
        }
        left.dirs -= 1;
        let names = names(&fd, left.names);
        left.names -= names.len();
        for name in names.iter().filter(|n| is_entry_name(n)) {
            if let Some(entry) = read_entry(fd.as_fd(), name, src.uid, &mut left.bytes) {
                if running(&entry, src.uid) && init_is_its_child(&entry) {
                    out.entries.push(entry);
                }
            }
        }
    }
    out.entries.sort_by(|a, b| a.started.total_cmp(&b.started));
    out
}

/// The first `max` names in the directory `dir`.
fn names(dir: &OwnedFd, max: usize) -> Vec<std::ffi::CString> {
    let Ok(d) = rustix::fs::Dir::read_from(dir) else {
        return Vec::new();
    };
    d.take(max)
        .map_while(Result::ok)
        .map(|e| e.file_name().to_owned())
        .collect()
}

/// Whether `name` is an entry's (`ID.json`; temporary files start with a dot).
fn is_entry_name(name: &CStr) -> bool {
    let b = name.to_bytes();
    b.ends_with(b".json") && !b.starts_with(b".")
}

/// The contents of `name` in the directory `dir`, when it is a regular file (not a link, FIFO
/// or device, which are not even opened for reading) owned by `uid`, of at most `max` bytes.
fn read_regular(dir: BorrowedFd<'_>, name: &CStr, uid: u32, max: usize) -> Option<Vec<u8>> {
    let path = rustix::fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let st = rustix::fs::fstat(&path).ok()?;
    let size = usize::try_from(st.st_size).ok()?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile
        || st.st_uid != uid
        || size > max
    {
        return None;
    }
    // Opened for reading as the file just examined (its descriptor), not by its name again.
    let file = rustix::fs::open(
        format!("/proc/self/fd/{}", path.as_raw_fd()),
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let mut bytes = Vec::with_capacity(size);
    std::fs::File::from(file)
        .take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() <= max).then_some(bytes)
}

/// The entry in the file `name` of `uid`'s directory `dir`, read within `budget` (which it
/// spends): well-formed, named after its id, whose id begins with its warden's pid, and which
/// names `uid` as its user.
fn read_entry(dir: BorrowedFd<'_>, name: &CStr, uid: u32, budget: &mut usize) -> Option<Entry> {
    let bytes = read_regular(dir, name, uid, MAX_ENTRY_BYTES.min(*budget))?;
    *budget -= bytes.len();
    let entry: Entry = serde_json::from_slice(&bytes).ok()?;
    let id = name.to_str().ok()?.strip_suffix(".json")?;
    let pid = entry.id.split_once('-').map(|(p, _)| p);
    (id == entry.id && pid == Some(&*entry.warden_pid.to_string()) && entry.uid == uid)
        .then_some(entry)
}

/// What `/proc/PID` says of a process.
#[derive(Debug, PartialEq, Eq)]
struct Facts {
    /// Its parent.
    ppid: u32,
    /// When it started, in clock ticks after boot (field 22 of `/proc/PID/stat`).
    start: u64,
    /// Its effective uid.
    euid: u32,
}

/// [`Facts`] of `pid`, from one open `/proc/PID`.
fn facts(pid: u32) -> Option<Facts> {
    let dir = rustix::fs::open(
        format!("/proc/{pid}"),
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    let read = |name: &str| {
        let fd =
            rustix::fs::openat(&dir, name, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).ok()?;
        let mut text = String::new();
        std::fs::File::from(fd)
            .take(64 * 1024)
            .read_to_string(&mut text)
            .ok()?;
        Some(text)
    };
    let (ppid, start) = parse_stat(&read("stat")?)?;
    let status = read("status")?;
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        .and_then(|u| u.parse().ok())?;
    Some(Facts { ppid, start, euid })
}

/// The parent and start time in `/proc/PID/stat` (fields 4 and 22; the name before them, in
/// parentheses, may hold spaces and parentheses of its own).
fn parse_stat(stat: &str) -> Option<(u32, u64)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some((fields.get(1)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}

/// Whether `entry`'s warden is running as user `uid`: its pid is a process of `uid`'s that
/// started when the entry says. A pid reused since is another start time; a process that only
/// calls itself `warden` has its own; one of another user's is not `uid`'s. The process is held
/// by a pidfd while `/proc` is read, and is still running after: so what was read is its.
fn running(entry: &Entry, uid: u32) -> bool {
    let Some(pid) = i32::try_from(entry.warden_pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    if entry.warden_start == 0 {
        return false;
    }
    let Ok(pidfd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) else {
        return false;
    };
    let Some(f) = facts(entry.warden_pid) else {
        return false;
    };
    if f.start != entry.warden_start || f.euid != uid {
        return false;
    }
    // A pidfd is readable once its process has ended.
    let mut poll = [rustix::event::PollFd::new(
        &pidfd,
        rustix::event::PollFlags::IN,
    )];
    let zero = rustix::time::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    rustix::event::poll(&mut poll, Some(&zero)) == Ok(0)
}

/// Whether `entry`'s init is a child of its warden (a running warden's children keep their
/// pids): an entry cannot point into somebody else's sandbox.
fn init_is_its_child(entry: &Entry) -> bool {
    facts(entry.init_pid).is_some_and(|f| f.ppid == entry.warden_pid)
}

/// `entry` as the registry keeps it: at most [`MAX_ENTRY_BYTES`], which readers take. What
/// would not fit goes, least needed first: descriptors, then rights, then the command's
/// last arguments.
fn serialize(entry: &mut Entry) -> Option<Vec<u8>> {
    loop {
        let text = serde_json::to_vec(entry).ok()?;
        if text.len() <= MAX_ENTRY_BYTES {
            return Some(text);
        }
        let capsicum = entry.capsicum.as_mut();
        if !entry.grants.is_empty() {
            entry.grants.truncate(entry.grants.len() / 2);
        } else if let Some(c) =
            capsicum.filter(|c| !c.rights.is_empty() || !c.descriptions.is_empty())
        {
            c.rights.truncate(c.rights.len() / 2);
            c.descriptions.truncate(c.descriptions.len() / 2);
        } else if entry.command.len() > 1 {
            entry.command.truncate(entry.command.len() / 2);
            entry.command.push("...".into());
        } else {
            return None;
        }
    }
}

/// Writes `text` as `id`'s entry in `dir`, whole or not at all: into a new temporary file,
/// renamed over the entry, so a reader sees the old entry or the new one.
fn write_entry(dir: &OwnedFd, id: &str, text: &[u8]) -> io::Result<()> {
    let tmp = format!(".{id}.tmp");
    let create = || {
        rustix::fs::openat(
            dir,
            &*tmp,
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
    };
    let fd = match create() {
        Err(rustix::io::Errno::EXIST) => {
            // Left by a warden that had this pid and was killed.
            let _ = rustix::fs::unlinkat(dir, &*tmp, AtFlags::empty());
            create()?
        }
        r => r?,
    };
    let written = std::fs::File::from(fd)
        .write_all(text)
        .and_then(|()| Ok(rustix::fs::renameat(dir, &*tmp, dir, format!("{id}.json"))?));
    if written.is_err() {
        let _ = rustix::fs::unlinkat(dir, &*tmp, AtFlags::empty());
    }
    written
}

/// Removes from `uid`'s directory `dir` the entries of wardens that are gone (killed with
/// SIGKILL, they could not clean up), and their temporary files.
fn remove_stale(dir: &OwnedFd, uid: u32) {
    for name in names(dir, MAX_NAMES) {
        let b = name.to_bytes();
        let stale = if is_entry_name(&name) {
            let mut budget = usize::MAX;
            read_entry(dir.as_fd(), &name, uid, &mut budget).is_none_or(|e| !running(&e, uid))
        } else if b.starts_with(b".") && b.ends_with(b".tmp") {
            let pid = std::str::from_utf8(&b[1..])
                .ok()
                .and_then(|s| s.split('-').next())
                .and_then(|p| p.parse::<i32>().ok())
                .and_then(rustix::process::Pid::from_raw);
            pid.is_some_and(|p| {
                rustix::process::test_kill_process(p) == Err(rustix::io::Errno::SRCH)
            })
        } else {
            false
        };
        if stale {
            let _ = rustix::fs::unlinkat(dir, &*name, AtFlags::empty());
        }
    }
}

/// Where a [`Registration`] keeps its entry.
pub enum Place {
    /// The caller's registry directory ([`open_own`]); when it falls back from the usual one,
    /// it says so on stderr.
    Own,
    /// This private directory of the caller's.
    Dir(PathBuf),
}

/// A registration: the file is written and kept up to date by a thread and removed on drop.
/// The first write waits [`FIRST_WRITE`]: a run that ends sooner (most of a build's commands)
/// never has an entry, and neither writes nor removes one. Finding and opening the directory
/// is the thread's too.
pub struct Registration {
    id: String,
    /// The thread writes only while holding the lock and seeing `stopped` unset, so no write
    /// lands after the removal; it waits on the condition between writes, and so ends as soon
    /// as `stopped` is set.
    state: Arc<(std::sync::Mutex<State>, std::sync::Condvar)>,
}

#[derive(Default)]
struct State {
    /// The registration has ended.
    stopped: bool,
    /// The directory, once the entry has been written in it (so there is one to remove).
    written: Option<Arc<OwnedFd>>,
}

/// How often the entry's counters are written again.
const REFRESH: std::time::Duration = std::time::Duration::from_millis(500);

/// How long a run lives before its entry is first written. `warden ps` and `warden inspect`
/// see a run this long after it starts; one that has ended by then never cost the registry a
/// file (a write and a rename at its start, a removal at its end, where warden's exit waited
/// for it).
const FIRST_WRITE: std::time::Duration = std::time::Duration::from_millis(20);

/// The directory `place` names, open.
fn open_place(place: &Place, uid: u32) -> Option<OwnedFd> {
    match place {
        Place::Own => {
            let own = open_own(uid).ok()?;
            if let Some((usual, why)) = &own.passed_over {
                let shown = |p: &Path| escape(p.as_os_str().as_encoded_bytes()).into_owned();
                eprintln!(
                    "warden: not registering this run in {}: {why}{}; `warden ps` finds it in {} \
                     instead",
                    shown(usual),
                    why.remedy(),
                    shown(&own.path),
                );
            }
            Some(own.fd)
        }
        Place::Dir(p) => open_private_dir(p, uid).ok(),
    }
}

impl Registration {
    /// Writes `entry` in `place` after [`FIRST_WRITE`] and every [`REFRESH`] then, with fresh
    /// counters from `snapshot`, until dropped.
    pub fn start(
        place: Place,
        entry: Entry,
        grants: Arc<Grants>,
        capsicum: Option<Arc<warden_capsicum::Session>>,
        snapshot: impl Fn() -> (u64, u64) + Send + 'static,
    ) -> Registration {
        let id = entry.id.clone();
        let state = Arc::new((
            std::sync::Mutex::new(State::default()),
            std::sync::Condvar::new(),
        ));
        let s = Arc::clone(&state);
        let write = move |dir: &OwnedFd, entry: &mut Entry| {
            let (delegated, denied) = snapshot();
            entry.delegated = delegated;
            entry.denied = denied;
            entry.grants = grants.list();
            entry.capsicum = capsicum.as_deref().map(Capsicum::of);
            // Under the lock: whatever is left of a failed write goes before the removal can
            // look.
            serialize(entry).is_some_and(|text| write_entry(dir, &entry.id, &text).is_ok())
        };
        let mut entry = entry;
        // All of it on the thread: a run's start does not wait for the registry.
        let _ = std::thread::Builder::new()
            .name("warden-registry".into())
            .spawn(move || {
                let (lock, changed) = &*s;
                let wait = |state, time| {
                    changed
                        .wait_timeout_while(state, time, |s: &mut State| !s.stopped)
                        .map_or_else(|e| e.into_inner().0, |(g, _)| g)
                };
                let state = wait(lock.lock().unwrap_or_else(|e| e.into_inner()), FIRST_WRITE);
                if state.stopped {
                    return;
                }
                drop(state);
                let uid = rustix::process::geteuid().as_raw();
                let Some(dir) = open_place(&place, uid).map(Arc::new) else {
                    return;
                };
                let Some(me) = facts(std::process::id()) else {
                    return;
                };
                entry.warden_start = me.start;
                remove_stale(&dir, uid);
                let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
                while !state.stopped {
                    if write(&dir, &mut entry) && state.written.is_none() {
                        state.written = Some(Arc::clone(&dir));
                    }
                    state = wait(state, REFRESH);
                }
            });
        Registration { id, state }
    }
}

impl Drop for Registration {
    /// Removes the entry, if it was written, and wakes the thread, which ends on its own
    /// meanwhile (warden's other teardown goes on beside it).
    fn drop(&mut self) {
        let (lock, changed) = &*self.state;
        let written = {
            let mut state = lock.lock().unwrap_or_else(|e| e.into_inner());
            state.stopped = true;
            state.written.take()
        };
        changed.notify_one();
        if let Some(dir) = written {
            let _ = rustix::fs::unlinkat(&*dir, format!("{}.json", self.id), AtFlags::empty());
        }
    }
}

/// One process of a sandbox, as `/proc` shows it.
#[derive(Clone, Debug, Serialize)]
pub struct Process {
    /// Its pid in warden's namespace.
    pub pid: u32,
    /// Its name.
    pub comm: String,
    /// Its working directory.
    pub cwd: String,
    /// The same, as the kernel's bytes (which need not be UTF-8): for printing, escaped.
    #[serde(skip)]
    pub cwd_bytes: Vec<u8>,
    /// Its descriptors.
    pub fds: Vec<Descriptor>,
    /// Whether it is in capability mode (`None`: the sandbox has no capability mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capability_mode: Option<bool>,
}

/// One descriptor of a sandboxed process.
#[derive(Clone, Debug, Serialize)]
pub struct Descriptor {
    /// The number.
    pub fd: i32,
    /// `file`, `dir`, `socket`, `pipe`, `char`, `block`, `fifo`, `anon` ...
    pub kind: String,
    /// What it names: a path, `socket:[ino]`, `pipe:[ino]`, `anon_inode:...`.
    pub target: String,
    /// The same, as the kernel's bytes (which need not be UTF-8): for printing, escaped.
    #[serde(skip)]
    pub target_bytes: Vec<u8>,
    /// `r`, `w` or `rw`.
    pub mode: String,
    /// The object's device and inode.
    pub dev: u64,
    /// The object's inode.
    pub ino: u64,
    /// The rule that allowed it, when the agent opened it.
    pub rule: Option<String>,
    /// Its rights, in a sandbox with capability mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rights: Option<String>,
}

/// `init` and every process below it now, from each process's parent in `/proc/PID/stat`.
fn descendants(init: u32) -> std::collections::HashSet<u32> {
    let mut parent = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let ppid = crate::sys::process::read_proc(&format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    crate::sys::process::stat_fields(&s)
                        .and_then(|f| f.get(1).and_then(|p| p.parse::<u32>().ok()))
                });
            if let Some(ppid) = ppid {
                parent.insert(pid, ppid);
            }
        }
    }
    let mut tree = std::collections::HashSet::from([init]);
    // Parents before children is not guaranteed: go round until nothing more joins.
    loop {
        let before = tree.len();
        for (&pid, ppid) in &parent {
            if tree.contains(ppid) {
                tree.insert(pid);
            }
        }
        if tree.len() == before {
            return tree;
        }
    }
}

/// The processes of `entry`'s sandbox (every process in its PID namespace, or below its init
/// where it has none) and what they hold.
/// Fails with `EACCES`/`EPERM` for a sandbox the caller may not trace.
pub fn processes(entry: &Entry) -> io::Result<Vec<Process>> {
    let ns = std::fs::read_link(format!("/proc/{}/ns/pid", entry.init_pid))?;
    let grants: HashMap<(u64, u64), &Grant> =
        entry.grants.iter().map(|g| ((g.dev, g.ino), g)).collect();
    let rights: HashMap<(u64, u64), &str> = entry
        .capsicum
        .iter()
        .flat_map(|c| &c.rights)
        .map(|r| ((r.dev, r.ino), r.rights.as_str()))
        .collect();
    // Socket endpoints, by inode: the sandbox's own namespace and warden's (where the agent
    // makes the sockets of a policy with network rules).
    let mut endpoints = sockets(entry.warden_pid);
    endpoints.extend(sockets(entry.init_pid));
    // A sandbox without namespaces (the host refused them) shares the host's PID namespace:
    // its processes are then init's descendants (init is their subreaper), not the namespace's.
    let shared =
        std::fs::read_link(format!("/proc/{}/ns/pid", entry.warden_pid)).ok() == Some(ns.clone());
    let tree = shared.then(|| descendants(entry.init_pid));
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == entry.init_pid {
            continue; // warden's own init, which holds nothing of the program's
        }
        if let Some(tree) = &tree {
            if !tree.contains(&pid) {
                continue;
            }
        } else if std::fs::read_link(format!("/proc/{pid}/ns/pid"))
            .ok()
            .as_ref()
            != Some(&ns)
        {
            continue;
        }
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|s| s.trim_end().to_owned())
            .unwrap_or_default();
        let cwd_bytes = std::fs::read_link(format!("/proc/{pid}/cwd"))?
            .into_os_string()
            .into_vec();
        let cwd = String::from_utf8_lossy(&cwd_bytes).into_owned();
        let mut fds = Vec::new();
        for f in std::fs::read_dir(format!("/proc/{pid}/fd"))?.flatten() {
            let Some(fd) = f.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(target) = std::fs::read_link(f.path()) else {
                continue;
            };
            let mut target_bytes = target.into_os_string().into_vec();
            let mut target = String::from_utf8_lossy(&target_bytes).into_owned();
            let meta = std::fs::metadata(f.path()).ok();
            if let Some(end) = target
                .strip_prefix("socket:[")
                .and_then(|i| i.trim_end_matches(']').parse::<u64>().ok())
                .and_then(|i| endpoints.get(&i))
            {
                target = end.clone();
                target_bytes = target.clone().into_bytes();
            }
            let (dev, ino) = meta.as_ref().map_or((0, 0), |m| (m.dev(), m.ino()));
            let kind = kind_of(meta.as_ref(), &target);
            let flags = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}"))
                .ok()
                .and_then(|t| {
                    t.lines()
                        .find_map(|l| l.strip_prefix("flags:"))
                        .and_then(|v| i32::from_str_radix(v.trim(), 8).ok())
                })
                .unwrap_or(0);
            let mode = match flags & crate::sys::abi::O_ACCMODE {
                libc::O_RDONLY => "r",
                libc::O_WRONLY => "w",
                _ => "rw",
            };
            fds.push(Descriptor {
                fd,
                kind,
                target,
                target_bytes,
                mode: mode.into(),
                dev,
                ino,
                rule: grants.get(&(dev, ino)).map(|g| g.rule.clone()),
                rights: entry.capsicum.as_ref().map(|c| {
                    // A description limited on its own holds its rights; the agent's copy of
                    // it is the same kernel file.
                    let own = c.descriptions.iter().find(|d| {
                        (d.dev, d.ino) == (dev, ino)
                            && crate::sys::process::same_file(
                                entry.warden_pid as i32,
                                d.agent_fd,
                                pid as i32,
                                fd,
                            )
                            .unwrap_or(false)
                    });
                    let held = own.map(|d| d.rights.as_str()).unwrap_or_else(|| {
                        rights
                            .get(&(dev, ino))
                            .copied()
                            .unwrap_or(c.default_rights.as_str())
                    });
                    descriptor_rights(held, mode)
                }),
            });
        }
        fds.sort_by_key(|d| d.fd);
        let filters = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("Seccomp_filters:"))
                    .and_then(|v| v.trim().parse().ok())
            });
        out.push(Process {
            pid,
            comm,
            cwd,
            cwd_bytes,
            fds,
            capability_mode: entry.capsicum.as_ref().map(|c| c.in_mode(filters)),
        });
    }
    out.sort_by_key(|p| p.pid);
    Ok(out)
}

/// What a descriptor may do: the rights its object holds, with read and write as its access
/// mode says (the kernel's, per descriptor: a duplicate made before a limit keeps its mode).
fn descriptor_rights(held: &str, mode: &str) -> String {
    use warden_capsicum::{Right, Rights};
    // "none" (no right) is what Rights displays for the empty set.
    let mut r = Rights::parse(held).unwrap_or(Rights::NONE);
    for (right, letter) in [(Right::Read, 'r'), (Right::Write, 'w')] {
        r = if mode.contains(letter) {
            r.union(Rights::of(&[right]))
        } else {
            r.without(right)
        };
    }
    if r == Rights::all() {
        "all".into()
    } else {
        r.to_string()
    }
}

/// Socket inode → endpoint text (`tcp 127.0.0.1:8000 -> 10.0.0.1:443`, `unix /run/x.sock`),
/// from `/proc/PID/net/*` of the network namespace `pid` is in.
fn sockets(pid: u32) -> HashMap<u64, String> {
    let mut out = HashMap::new();
    for proto in ["tcp", "tcp6", "udp", "udp6"] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/{proto}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(remote), Some(inode)) = (f.get(1), f.get(2), f.get(9)) else {
                continue;
            };
            let Ok(inode) = inode.parse::<u64>() else {
                continue;
            };
            let (Some(l), Some(r)) = (hex_endpoint(local), hex_endpoint(remote)) else {
                continue;
            };
            let name = proto.trim_end_matches('6');
            let text = if r.port() == 0 {
                format!("{name} {l} (listening or unconnected)")
            } else {
                format!("{name} {l} -> {r}")
            };
            out.insert(inode, text);
        }
    }
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/net/unix")) {
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if let Some(Ok(inode)) = f.get(6).map(|i| i.parse::<u64>()) {
                let path = f.get(7).map_or("(unnamed)", |p| p);
                out.insert(inode, format!("unix {path}"));
            }
        }
    }
    out
}

/// `0100007F:1F90` (as `/proc/net/tcp` writes it) as a socket address.
fn hex_endpoint(text: &str) -> Option<std::net::SocketAddr> {
    let (addr, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let ip: std::net::IpAddr = match addr.len() {
        8 => std::net::Ipv4Addr::from(u32::from_str_radix(addr, 16).ok()?.swap_bytes()).into(),
        32 => {
            let mut o = [0u8; 16];
            for (i, chunk) in o.chunks_mut(4).enumerate() {
                let word = u32::from_str_radix(&addr[8 * i..8 * i + 8], 16).ok()?;
                chunk.copy_from_slice(&word.to_le_bytes());
            }
            std::net::Ipv6Addr::from(o).into()
        }
        _ => return None,
    };
    Some(std::net::SocketAddr::new(ip, port))
}

fn kind_of(meta: Option<&std::fs::Metadata>, target: &str) -> String {
    use std::os::unix::fs::FileTypeExt;
    if target.starts_with("anon_inode:") {
        return "anon".into();
    }
    let Some(m) = meta else {
        return "?".into();
    };
    let t = m.file_type();
    let kind = if t.is_socket() {
        "socket"
    } else if t.is_fifo() {
        if target.starts_with("pipe:") {
            "pipe"
        } else {
            "fifo"
        }
    } else if t.is_dir() {
        "dir"
    } else if t.is_char_device() {
        "char"
    } else if t.is_block_device() {
        "block"
    } else {
        "file"
    };
    kind.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_bounded_and_listed() {
        let g = Grants::default();
        for i in 0..(MAX_GRANTS as u64 + 10) {
            g.record(1, i, format!("/f{i}"), "p:1:1".into());
        }
        let l = g.list();
        assert!(l.len() <= MAX_GRANTS, "{}", l.len());
        assert!(l.iter().any(|x| x.ino == MAX_GRANTS as u64 + 9));
        // Long paths: bounded by their bytes, well before the count.
        let g = Grants::default();
        let long = "/d".repeat(2000);
        for i in 0..1000 {
            g.record(1, i, format!("{long}{i}"), "p:1:1".into());
            g.record(1, i, format!("{long}{i}"), "p:1:1".into());
        }
        let l = g.list();
        let bytes: usize = l.iter().map(|x| x.path.len()).sum();
        assert!(bytes <= MAX_GRANT_BYTES, "{bytes}");
        assert!(l.iter().any(|x| x.ino == 999), "the newest is kept");
        assert_eq!(
            g.0.lock().unwrap().bytes,
            bytes,
            "the count of bytes is exact"
        );
    }

    #[test]
    fn a_descriptors_rights_read_and_write_are_its_access_modes() {
        assert_eq!(descriptor_rights("read,fstat", "r"), "read,fstat");
        // Opened for writing before the limit: the kernel still lets it write.
        assert_eq!(descriptor_rights("read,fstat", "rw"), "read,write,fstat");
        assert_eq!(descriptor_rights("read,write,seek", "w"), "write,seek");
        assert_eq!(descriptor_rights("all", "rw"), "all");
        assert_eq!(descriptor_rights("none", "r"), "read");
    }

    #[test]
    fn entries_round_trip_as_json() {
        let e = Entry {
            id: "1-2".into(),
            command: vec!["sh".into()],
            grants: vec![Grant {
                dev: 1,
                ino: 2,
                path: "/a".into(),
                rule: "p:1:1".into(),
            }],
            ..Entry::default()
        };
        let back: Entry = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert_eq!(back.grants, e.grants);
        assert_eq!(back.command, e.command);
    }

    #[test]
    fn proc_net_addresses_parse() {
        assert_eq!(
            hex_endpoint("0100007F:1F90"),
            Some("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(
            hex_endpoint("00000000000000000000000001000000:0050"),
            Some("[::1]:80".parse().unwrap())
        );
        assert_eq!(hex_endpoint("zz:1"), None);
    }

    /// The threads of this process named `name`.
    fn threads_named(name: &str) -> usize {
        std::fs::read_dir("/proc/self/task")
            .expect("/proc/self/task")
            .flatten()
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name)
            })
            .count()
    }

    /// The entry is written by the thread, kept up to date, and gone with the registration;
    /// nothing else is left in the directory, and the thread ends. A registration that ends
    /// before the first write never has a file.
    #[test]
    fn an_entry_lives_as_long_as_its_registration() {
        // Entry `n` of this process, and a snapshot that counts its calls in `calls` (the
        // count is the entry's `delegated`).
        let entry = |n: u32| Entry {
            id: format!("{}-{n:08x}", std::process::id()),
            command: vec!["true".into()],
            ..Entry::default()
        };
        let counting = |calls: &Arc<std::sync::atomic::AtomicU64>| {
            let calls = Arc::clone(calls);
            move || {
                (
                    calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1,
                    0,
                )
            }
        };
        let dir = crate::testing::TempTree::new("registry");
        std::fs::set_permissions(&*dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .unwrap();
        let place = || Place::Dir(dir.to_path_buf());
        let asked = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let started = std::time::Instant::now();
        let reg = Registration::start(place(), entry(0), Arc::default(), None, counting(&asked));
        // Long enough for a thread that writes at once to have written, well before the first
        // write is due.
        std::thread::sleep(FIRST_WRITE / 4);
        drop(reg);
        if started.elapsed() < FIRST_WRITE {
            assert_eq!(
                asked.load(std::sync::atomic::Ordering::SeqCst),
                0,
                "written at once"
            );
        }
        let deadline = std::time::Instant::now() + 20 * REFRESH;
        while threads_named("warden-registry") > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the short one's thread goes on"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::thread::sleep(3 * FIRST_WRITE);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "a short run wrote"
        );
        let calls = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let reg = Registration::start(place(), entry(1), Arc::default(), None, counting(&calls));
        let path = dir.join(format!("{}-00000001.json", std::process::id()));
        let deadline = std::time::Instant::now() + 20 * REFRESH;
        // Written, then written again with fresh counters.
        let mut seen = 0;
        while seen < 2 {
            assert!(std::time::Instant::now() < deadline, "no second write");
            if let Ok(text) = std::fs::read_to_string(&path) {
                if let Ok(e) = serde_json::from_str::<Entry>(&text) {
                    seen = seen.max(e.delegated);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(threads_named("warden-registry"), 1);
        drop(reg);
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        while threads_named("warden-registry") > 0 {
            assert!(std::time::Instant::now() < deadline, "the thread goes on");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let written = calls.load(std::sync::atomic::Ordering::SeqCst);
        std::thread::sleep(2 * REFRESH);
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), written);
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn proc_stat_is_read_past_any_name() {
        let tail: String = (4..=30).map(|n| format!(" {n}")).collect();
        // A name with spaces and parentheses of its own.
        let stat = format!("42 (a) b) (c ) S{tail}\n");
        assert_eq!(parse_stat(&stat), Some((4, 22)));
        assert_eq!(parse_stat("42 (x) S 1 2"), None);
        let me = facts(std::process::id()).unwrap();
        assert_eq!(me.euid, rustix::process::geteuid().as_raw());
        assert!(me.start > 0);
    }

    #[test]
    fn registry_directory_names_say_whose() {
        assert_eq!(tmp_dir_uid("warden-run-1000"), Some(1000));
        assert_eq!(tmp_dir_uid("warden-run-1000.5d07d6ef"), Some(1000));
        for not in [
            "warden-run-",
            "warden-run-+1",
            "warden-run-1x",
            "warden-run-.1",
            "x-1",
        ] {
            assert_eq!(tmp_dir_uid(not), None, "{not}");
        }
    }

    /// A child that lives until dropped, for an entry's init.
    struct Child(std::process::Child);

    impl Drop for Child {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// An entry for this process, as its registration would write it, with `init` for init.
    fn own_entry(init: &Child) -> Entry {
        Entry {
            id: format!("{}-00000001", std::process::id()),
            warden_pid: std::process::id(),
            warden_start: facts(std::process::id()).unwrap().start,
            init_pid: init.0.id(),
            uid: rustix::process::geteuid().as_raw(),
            command: vec!["true".into()],
            ..Entry::default()
        }
    }

    fn sleeper() -> Child {
        Child(
            std::process::Command::new("sleep")
                .arg("60")
                .spawn()
                .unwrap(),
        )
    }

    /// Running is this very process, of this user, with its init as a child: not a pid alone.
    #[test]
    fn an_entry_runs_only_as_its_own_process() {
        let init = sleeper();
        let e = own_entry(&init);
        let uid = e.uid;
        assert!(running(&e, uid) && init_is_its_child(&e));
        assert!(!running(&e, uid + 1), "another user's process");
        let other = |f: &dyn Fn(&mut Entry)| {
            let mut e = own_entry(&init);
            f(&mut e);
            e
        };
        assert!(
            !running(&other(&|e| e.warden_start += 1), uid),
            "a reused pid"
        );
        assert!(
            !running(&other(&|e| e.warden_start = 0), uid),
            "no start time"
        );
        assert!(
            !init_is_its_child(&other(&|e| e.init_pid = 1)),
            "init elsewhere"
        );
        let mut dead = sleeper();
        let gone = other(&|e| e.warden_pid = dead.0.id());
        let _ = dead.0.kill();
        let _ = dead.0.wait();
        assert!(!running(&gone, uid), "a pid that is gone");
    }

    /// In a registry directory, only a regular file of its owner's, small enough, is read; a
    /// FIFO, a link and an oversized file are passed over at once; a directory open to others,
    /// or reached through a link, is not read at all.
    #[test]
    fn only_regular_small_files_of_the_owner_are_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = crate::testing::TempTree::new("registry-odd");
        std::fs::set_permissions(&*dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let init = sleeper();
        let e = own_entry(&init);
        std::fs::write(
            dir.join(format!("{}.json", e.id)),
            serde_json::to_vec(&e).unwrap(),
        )
        .unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.join("1-fifo.json"),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("1-zero.json")).unwrap();
        std::fs::File::create(dir.join("1-big.json"))
            .unwrap()
            .set_len(MAX_ENTRY_BYTES as u64 + 1)
            .unwrap();
        let src = [Source {
            path: dir.to_path_buf(),
            uid: e.uid,
        }];
        let started = std::time::Instant::now();
        let l = list(&src);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert_eq!(l.entries.len(), 1, "{l:?}");
        assert_eq!(l.entries[0].id, e.id);
        assert!(l.ignored.is_empty());
        // Another user's name on it: not believed.
        let theirs = [Source {
            path: dir.to_path_buf(),
            uid: e.uid + 1,
        }];
        assert!(list(&theirs).entries.is_empty());
        // A link to it: not followed.
        let link = dir.with_extension("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&*dir, &link).unwrap();
        let linked = [Source {
            path: link.clone(),
            uid: e.uid,
        }];
        let l = list(&linked);
        std::fs::remove_file(&link).unwrap();
        assert!(l.entries.is_empty());
        assert!(
            matches!(l.ignored[..], [(_, Untrusted::NotDirectory)]),
            "{l:?}"
        );
        std::fs::set_permissions(&*dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let l = list(&src);
        assert!(l.entries.is_empty());
        assert!(
            matches!(l.ignored[..], [(_, Untrusted::Mode(0o755))]),
            "{l:?}"
        );
        std::fs::remove_dir_all(&*dir).unwrap();
    }

    /// An entry too large to be read back is written smaller, descriptors first.
    #[test]
    fn entries_are_written_within_the_bound() {
        let grant = |i: u64| Grant {
            dev: 1,
            ino: i,
            path: format!("/{}", "p".repeat(1000)),
            rule: "p:1:1".into(),
        };
        let mut e = Entry {
            command: vec!["cmd".into(), "arg".into()],
            grants: (0..8192).map(grant).collect(),
            ..Entry::default()
        };
        let text = serialize(&mut e).unwrap();
        assert!(text.len() <= MAX_ENTRY_BYTES, "{}", text.len());
        assert!(!e.grants.is_empty() && e.grants.len() < 8192);
        assert_eq!(e.command, ["cmd", "arg"]);
    }

    #[test]
    fn registry_directories_are_per_user() {
        assert_eq!(dir_for(0), PathBuf::from("/run/warden"));
        assert_ne!(dir_for(1000), dir_for(1001));
    }
}
