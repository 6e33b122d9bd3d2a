//! The run's private scratch directory (`$SCRATCH`): made for the sandbox's user, locked for
//! as long as the run lives, removed afterwards unless kept, and swept by later runs when a
//! killed warden could not remove it.

use super::{failure, Failure, EXIT_WARDEN};
use crate::confine::namespaces::IdMap;
use crate::tree;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;
use warden_policy::{Access, Policy};

/// The private scratch directory of one run: `$TMPDIR/warden-scratch-UID/warden-PID-RAND`.
///
/// Every run of a user keeps its scratch in that user's own directory ([`runs_dir`]), so the
/// sweep below lists only that user's runs, not all of `$TMPDIR` (which on a shared machine
/// holds hundreds of names, read on every start). Next to it, `NAME.lock` (warden's own, never
/// the sandbox's) is held with `flock` for as long as the run lives. A warden killed with
/// SIGKILL cannot remove its directory, but the kernel drops its lock; every later run sweeps
/// the directories whose lock it can take ([`sweep`]). A lock held is a live run, whatever its
/// pid (reused, or in another PID namespace), so a live run's directory is never swept. With
/// `--keep` the lock file says `keep`, and its directory stays even if warden is killed. A
/// directory that cannot be removed (see [`tree::remove_at`]) is said so once, and its lock
/// becomes `NAME.left`, which no sweep looks at again.
///
/// The directory is handed to the sandbox's user, who may write in it at once (another process
/// of that user's, before the program starts). So everything warden does there as root goes
/// through descriptors it opened itself, never a path looked up again: the runs' directory,
/// the scratch directory and the directories [`make_exec_dirs`] makes are each opened from the
/// one above (`O_NOFOLLOW | O_DIRECTORY`), and made, changed and removed relative to those.
pub struct Scratch {
    /// The directory (canonical).
    pub path: PathBuf,
    /// Its name in [`Runs`].
    name: OsString,
    /// The directory itself.
    dir: OwnedFd,
    runs: Runs,
    /// `NAME.lock`, locked.
    lock: Option<std::fs::File>,
    /// What it is, in messages: the scratch directory, or the private copies' directory.
    what: &'static str,
}

/// The directory a run keeps its scratch and lock in ([`runs_dir`]).
struct Runs {
    fd: OwnedFd,
    path: PathBuf,
    /// For a directory made for this run alone, because the usual one is not this user's
    /// own: `$TMPDIR` and its name there, to remove it after the run.
    own: Option<(OwnedFd, OsString)>,
}

/// A lock file this young may belong to a run that made it and has not locked it yet.
const SWEEP_AFTER: Duration = Duration::from_secs(10);

/// How many entries the sweep looks at in one killed run's directory before it leaves it (and
/// says so): the sweep is on the start's path.
const SWEEP_LIMIT: u64 = 100_000;

/// How many entries a run's own removal looks at before it leaves the rest (and says so).
const REMOVE_LIMIT: u64 = 10_000_000;

/// `O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC`: a directory, never through a link.
fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

fn shown(p: &Path) -> std::borrow::Cow<'_, str> {
    warden_policy::escape::escape(p.as_os_str().as_encoded_bytes())
}

impl Scratch {
    /// Makes the directory; `what` names it in messages ("the scratch directory").
    pub fn create(ids: IdMap, keep: bool, what: &'static str) -> Result<Scratch, Failure> {
        let tmp = std::env::var_os("TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        let runs = runs_dir(&tmp)?;
        sweep(&runs);
        let cannot = |e: Errno| {
            failure(
                EXIT_WARDEN,
                format!(
                    "cannot create a scratch directory in {}: {}",
                    shown(&runs.path),
                    std::io::Error::from(e)
                ),
            )
        };
        let mut made = None;
        for attempt in 0..16u32 {
            let name = format!(
                "warden-{}-{:08x}",
                std::process::id(),
                crate::unique::rand32() ^ attempt
            );
            let lock_name = format!("{name}.lock");
            // The lock first: while its file exists, no other run takes the name, and a
            // sweeper that finds it unlocked only ever finds it so after the run is gone.
            let lock = match lock_file(runs.fd.as_fd(), &lock_name, keep) {
                Ok(lock) => Some(lock),
                Err(Errno::EXIST) => continue,
                // A TMPDIR without room for the lock: the run goes on, unswept if killed.
                Err(_) => None,
            };
            match rustix::fs::mkdirat(&runs.fd, &name, Mode::from_raw_mode(0o700)) {
                Ok(()) => {
                    made = Some((name, lock));
                    break;
                }
                Err(e) => {
                    if lock.is_some() {
                        let _ = rustix::fs::unlinkat(&runs.fd, &lock_name, AtFlags::empty());
                    }
                    if e != Errno::EXIST {
                        return Err(cannot(e));
                    }
                }
            }
        }
        let Some((name, lock)) = made else {
            return Err(failure(
                EXIT_WARDEN,
                "cannot create a unique scratch directory",
            ));
        };
        // Made by this user in a directory where no one else may remove or rename it: the
        // same directory, opened, made private and handed over through its descriptor.
        let dir =
            rustix::fs::openat(&runs.fd, &name, dir_flags(), Mode::empty()).map_err(cannot)?;
        rustix::fs::fchmod(&dir, Mode::from_raw_mode(0o700)).map_err(cannot)?;
        hand_over(dir.as_fd(), ids, what)?;
        let path = rustix::fs::readlink(format!("/proc/self/fd/{}", dir.as_raw_fd()), Vec::new())
            .ok()
            .and_then(|t| t.into_string().ok())
            .filter(|t| t.starts_with('/') && !t.ends_with(" (deleted)"))
            .map_or_else(|| runs.path.join(&name), PathBuf::from);
        Ok(Scratch {
            path,
            name: name.into(),
            dir,
            runs,
            lock,
            what,
        })
    }

    /// The directory, open.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    /// Whether the directory is in this user's usual runs' directory (not in one made for this
    /// run alone), where a name alone finds it.
    pub fn in_usual_place(&self) -> bool {
        self.runs.own.is_none()
    }

    pub fn remove(self) {
        let Scratch {
            path,
            name,
            dir,
            runs,
            lock,
            what,
        } = self;
        drop(dir);
        let mut removed = tree::remove_at(runs.fd.as_fd(), &name, REMOVE_LIMIT);
        // A second try for an entry made while the first ran (an agent worker finishing a
        // dead caller's create after Agent::quiesce gave up on it).
        if removed.is_err() {
            std::thread::sleep(Duration::from_millis(20));
            removed = tree::remove_at(runs.fd.as_fd(), &name, REMOVE_LIMIT);
        }
        match removed {
            Ok(()) => {
                let runs = Scratch::unlock(runs, &name, lock);
                if let Some((tmp, own)) = &runs.own {
                    drop(runs.fd);
                    let _ = rustix::fs::unlinkat(tmp, own.as_os_str(), AtFlags::REMOVEDIR);
                }
            }
            Err(why) => leave(&runs, &name, &path, &why, what),
        }
    }

    /// Leaves the directory for the user: only the lock goes.
    pub fn keep(self) {
        let Scratch {
            name, runs, lock, ..
        } = self;
        Scratch::unlock(runs, &name, lock);
    }

    /// Removes the lock file of `name` in `runs`.
    fn unlock(runs: Runs, name: &OsStr, lock: Option<std::fs::File>) -> Runs {
        if lock.is_some() {
            let mut lock_name = name.to_owned();
            lock_name.push(".lock");
            let _ = rustix::fs::unlinkat(&runs.fd, lock_name.as_os_str(), AtFlags::empty());
        }
        runs
    }
}

/// Says once that the directory `name` in `runs` (at `path`, which is `what`) could not be
/// removed, and why, and renames its lock to `NAME.left` so that no later run walks it again.
fn leave(runs: &Runs, name: &OsStr, path: &Path, why: &tree::Left, what: &str) {
    let (mut lock, mut left) = (name.to_owned(), name.to_owned());
    lock.push(".lock");
    left.push(".left");
    let marked = rustix::fs::renameat(&runs.fd, lock.as_os_str(), &runs.fd, left.as_os_str());
    eprintln!(
        "warden: cannot remove {what} {} ({why}){}; remove it yourself",
        shown(path),
        if marked.is_ok() {
            ", and later runs leave it alone"
        } else {
            ""
        }
    );
}

/// The directory of this user's runs in `tmp`: `warden-scratch-UID`, made by the first run.
/// An unprivileged user's is private (0700: the sandbox runs as that user). root's is 01733,
/// /tmp's own rules without the listing: root runs with `starting_uid` hand their scratch to
/// another user, who must reach it and, as warden once it has become that user, remove it (a
/// sticky directory lets each remove only its own entries), and no one but root lists it.
///
/// One that is not a directory of this user's with exactly those rights (made by someone else
/// first, or a link) is never used, nor is `tmp` itself, which others may list (and learn the
/// scratch's name, then write in it once it is handed to them): the run says so, and makes a
/// directory of its own with those rights, `warden-scratch-UID.RAND`, removed after it. A user
/// who squats another's name only makes that user's runs say so and keep their scratch
/// elsewhere, where the squatter cannot reach it. Killed runs' directories made so are swept by
/// later runs that find the name squatted too (they list `tmp`, which the usual start never
/// does).
fn runs_dir(tmp: &Path) -> Result<Runs, Failure> {
    let uid = rustix::process::geteuid().as_raw();
    let mode = if uid == 0 { 0o1733 } else { 0o700 };
    // The user's own TMPDIR, as named (links and all); O_PATH: one others may only write in
    // and search will do, as it did for mkdir.
    let tmp_fd = rustix::fs::open(
        tmp,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        failure(
            EXIT_WARDEN,
            format!(
                "cannot open the temporary directory {} (TMPDIR) for the scratch directory: {}",
                shown(tmp),
                std::io::Error::from(e)
            ),
        )
    })?;
    let name = format!("warden-scratch-{uid}");
    let path = tmp.join(&name);
    // Made with no more than 0700 (the umask only takes bits away), then given its mode.
    let made = match rustix::fs::mkdirat(&tmp_fd, &name, Mode::from_raw_mode(0o700)) {
        Ok(()) => true,
        Err(Errno::EXIST) => false,
        Err(e) => {
            return Err(failure(
                EXIT_WARDEN,
                format!(
                    "cannot make {} for the scratch directory: {}",
                    shown(&path),
                    std::io::Error::from(e)
                ),
            ))
        }
    };
    let why = match rustix::fs::openat(&tmp_fd, &name, dir_flags(), Mode::empty()) {
        Ok(fd) => match rustix::fs::fstat(&fd) {
            Ok(st) => {
                let mut has = st.st_mode & 0o7777;
                if made
                    && st.st_uid == uid
                    && has != mode
                    && rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode)).is_ok()
                {
                    has = mode;
                }
                if st.st_uid == uid && has == mode {
                    return Ok(Runs {
                        fd,
                        path,
                        own: None,
                    });
                }
                format!("it is uid {}'s, mode {has:o}", st.st_uid)
            }
            Err(e) => std::io::Error::from(e).to_string(),
        },
        Err(Errno::LOOP) | Err(Errno::NOTDIR) => "it is a link or not a directory".to_owned(),
        Err(e) => std::io::Error::from(e).to_string(),
    };
    eprintln!(
        "warden: {} is not this user's own directory of mode {mode:o} ({why}): this run keeps \
         its scratch directory in a new directory of its own instead; remove {0} to end this",
        shown(&path)
    );
    sweep_own(tmp, tmp_fd.as_fd(), uid);
    for attempt in 0..16u32 {
        let own = format!("{name}.{:08x}", crate::unique::rand32() ^ attempt);
        let path = tmp.join(&own);
        let cannot = |e: Errno| {
            failure(
                EXIT_WARDEN,
                format!(
                    "cannot make {} for the scratch directory: {}",
                    shown(&path),
                    std::io::Error::from(e)
                ),
            )
        };
        match rustix::fs::mkdirat(&tmp_fd, &own, Mode::from_raw_mode(0o700)) {
            Ok(()) => {}
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(cannot(e)),
        }
        let fd = rustix::fs::openat(&tmp_fd, &own, dir_flags(), Mode::empty()).map_err(cannot)?;
        let st = rustix::fs::fstat(&fd).map_err(cannot)?;
        if st.st_uid != uid {
            return Err(cannot(Errno::PERM));
        }
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode)).map_err(cannot)?;
        return Ok(Runs {
            fd,
            path,
            own: Some((tmp_fd, own.into())),
        });
    }
    Err(failure(
        EXIT_WARDEN,
        format!(
            "cannot make a unique directory in {} for the scratch directory",
            shown(tmp)
        ),
    ))
}

/// Sweeps the runs' directories of this user's that runs made for themselves alone
/// ([`runs_dir`]) in `tmp` (open as `tmp_fd`), and removes those left empty.
fn sweep_own(tmp: &Path, tmp_fd: BorrowedFd<'_>, uid: u32) {
    // `tmp_fd` is O_PATH: the listing needs a descriptor of its own, open for reading.
    let listing = rustix::fs::openat(
        tmp_fd,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    );
    let Ok(dir) = listing.and_then(rustix::fs::Dir::new) else {
        return;
    };
    let prefix = format!("warden-scratch-{uid}.");
    for entry in dir.take(65536).flatten() {
        let name = entry.file_name();
        if !name.to_bytes().starts_with(prefix.as_bytes()) {
            continue;
        }
        let Ok(st) = rustix::fs::statat(tmp_fd, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        if FileType::from_raw_mode(st.st_mode) != FileType::Directory
            || st.st_uid != uid
            || young(&st)
        {
            continue;
        }
        let Ok(fd) = rustix::fs::openat(tmp_fd, name, dir_flags(), Mode::empty()) else {
            continue;
        };
        let name = OsStr::from_bytes(name.to_bytes());
        let runs = Runs {
            fd,
            path: tmp.join(name),
            own: None,
        };
        sweep(&runs);
        drop(runs);
        let _ = rustix::fs::unlinkat(tmp_fd, name, AtFlags::REMOVEDIR);
    }
}

use rustix::fs::FileType;
use std::os::unix::ffi::OsStrExt;

/// Whether `st` was modified less than [`SWEEP_AFTER`] ago (or in the future).
fn young(st: &rustix::fs::Stat) -> bool {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    now - st.st_mtime < SWEEP_AFTER.as_secs() as i64
}

/// Creates the lock file `name` in `runs` (exclusively, mode 0600) and locks it; it says
/// `keep` when the run keeps its directory.
fn lock_file(runs: BorrowedFd<'_>, name: &str, keep: bool) -> Result<std::fs::File, Errno> {
    use std::io::Write;
    let fd = rustix::fs::openat(
        runs,
        name,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )?;
    rustix::fs::flock(&fd, rustix::fs::FlockOperation::LockExclusive)?;
    let mut file = std::fs::File::from(fd);
    if keep {
        file.write_all(b"keep\n").map_err(|_| Errno::IO)?;
    }
    Ok(file)
}

/// Removes, in `runs`, the scratch directories of runs that are gone: each `warden-*.lock` of
/// this user older than [`SWEEP_AFTER`] whose lock can be taken, with the directory of the same
/// name (unless the lock file says `keep`). Taken locks are checked to be on the file that
/// still has the name, so two sweepers never remove anything of a run that came after. A
/// directory that will not go within [`SWEEP_LIMIT`] entries is left, said so once, and its
/// lock renamed `NAME.left`: later starts do not walk it again (and remove the mark once the
/// directory is gone).
fn sweep(runs: &Runs) {
    let Ok(entries) = rustix::fs::Dir::read_from(&runs.fd) else {
        return;
    };
    let uid = rustix::process::geteuid().as_raw();
    for entry in entries.take(4096).flatten() {
        let name = entry.file_name();
        let Some(text) = name.to_str().ok().filter(|n| n.starts_with("warden-")) else {
            continue;
        };
        // The mark of a directory left (not walked): gone once the user removed the directory.
        if let Some(stem) = text.strip_suffix(".left") {
            let gone = rustix::fs::statat(&runs.fd, stem, AtFlags::SYMLINK_NOFOLLOW)
                .err()
                .is_some_and(|e| e == Errno::NOENT);
            if gone {
                let _ = rustix::fs::unlinkat(&runs.fd, name, AtFlags::empty());
            }
            continue;
        }
        let Some(stem) = text.strip_suffix(".lock") else {
            continue;
        };
        let Ok(meta) = rustix::fs::statat(&runs.fd, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        if FileType::from_raw_mode(meta.st_mode) != FileType::RegularFile
            || meta.st_uid != uid
            || young(&meta)
        {
            continue;
        }
        let Ok(fd) = rustix::fs::openat(
            &runs.fd,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            continue;
        };
        if rustix::fs::flock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
            continue; // a live run
        }
        let same = rustix::fs::fstat(&fd)
            .is_ok_and(|m| m.st_dev == meta.st_dev && m.st_ino == meta.st_ino);
        if !same {
            continue;
        }
        let mut head = [0u8; 4];
        let kept = rustix::io::read(&fd, &mut head).is_ok_and(|n| &head[..n] == b"keep");
        if !kept {
            if let Err(why) = tree::remove_at(runs.fd.as_fd(), OsStr::new(stem), SWEEP_LIMIT) {
                leave(
                    runs,
                    OsStr::new(stem),
                    &runs.path.join(stem),
                    &why,
                    "a killed run's directory",
                );
                continue;
            }
        }
        let _ = rustix::fs::unlinkat(&runs.fd, name, AtFlags::empty());
    }
}

/// Makes, in the scratch directory, each directory `D` of an `exec D/*` rule that lies there,
/// before the Landlock ruleset is built: Landlock can give the execute right only to what
/// exists, and a scratch directory starts empty, so `--exec '$SCRATCH/ve/bin/*'` would
/// otherwise allow what the kernel refuses (issue 14). The directories are made as the program
/// would make them (mode 0755, owned by the sandbox's user). Landlock's right stays with the
/// directory made here: one the program removes and makes anew has none (the agent says so).
pub fn make_exec_dirs(policy: &Policy, scratch: &Scratch, ids: IdMap) -> Result<(), Failure> {
    let mut dev = None;
    for rule in policy.path_rules() {
        if rule.access != Some(Access::Exec) || !rule.pattern.is_prefix() {
            continue;
        }
        let Some(dir) = rule.pattern.literal().strip_suffix('/') else {
            continue;
        };
        let Ok(rest) = Path::new(dir).strip_prefix(&scratch.path) else {
            continue;
        };
        let dev = match dev {
            Some(d) => d,
            None => {
                let d = rustix::fs::fstat(&scratch.dir)
                    .map_err(|e| exec_dir_failure(&scratch.path, e))?
                    .st_dev;
                *dev.insert(d)
            }
        };
        let mut at = scratch.path.clone();
        let mut held: Option<OwnedFd> = None;
        for part in rest.components() {
            let std::path::Component::Normal(part) = part else {
                return Err(failure(
                    EXIT_WARDEN,
                    format!(
                        "cannot make {} for its exec rule: not a plain path",
                        shown(Path::new(dir))
                    ),
                ));
            };
            at.push(part);
            let above = held.as_ref().map_or(scratch.dir.as_fd(), |f| f.as_fd());
            let made = match rustix::fs::mkdirat(above, part, Mode::from_raw_mode(0o755)) {
                Ok(()) => true,
                Err(Errno::EXIST) => false,
                Err(e) => return Err(exec_dir_failure(&at, e)),
            };
            // The directory just made (or there already), never through a link: what the
            // sandbox's user put there meanwhile is refused, not followed.
            let fd = rustix::fs::openat(above, part, dir_flags(), Mode::empty())
                .map_err(|e| exec_dir_failure(&at, e))?;
            let st = rustix::fs::fstat(&fd).map_err(|e| exec_dir_failure(&at, e))?;
            if st.st_dev != dev {
                return Err(exec_dir_failure(&at, Errno::XDEV));
            }
            if made {
                // Made here and still warden's own: as the program would have made it.
                if st.st_uid != rustix::process::geteuid().as_raw() {
                    return Err(exec_dir_failure(&at, Errno::PERM));
                }
                rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o755))
                    .map_err(|e| exec_dir_failure(&at, e))?;
                hand_over(fd.as_fd(), ids, &shown(&at))?;
            }
            held = Some(fd);
        }
    }
    Ok(())
}

fn exec_dir_failure(at: &Path, e: Errno) -> Failure {
    failure(
        EXIT_WARDEN,
        format!(
            "cannot make {} for its exec rule: {}",
            shown(at),
            std::io::Error::from(e)
        ),
    )
}

/// Gives the directory `fd`, which warden made, to the sandbox's user when warden is root and
/// the sandbox runs as another one (`what` names it in the error).
fn hand_over(fd: BorrowedFd<'_>, ids: IdMap, what: &str) -> Result<(), Failure> {
    if ids.identity || !rustix::process::geteuid().is_root() {
        return Ok(());
    }
    let (uid, gid) = (
        rustix::process::Uid::from_raw(ids.outside_uid),
        rustix::process::Gid::from_raw(ids.outside_gid),
    );
    rustix::fs::fchown(fd, Some(uid), Some(gid)).map_err(|e| {
        failure(
            EXIT_WARDEN,
            format!(
                "cannot hand {what} to uid {}: {}",
                ids.outside_uid,
                std::io::Error::from(e)
            ),
        )
    })
}
