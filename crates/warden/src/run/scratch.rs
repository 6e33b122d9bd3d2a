//! The run's private scratch directory (`$SCRATCH`): made for the sandbox's user, locked for
//! as long as the run lives, removed afterwards unless kept, and swept by later runs when a
//! killed warden could not remove it.

use super::{failure, Failure, EXIT_WARDEN};
use crate::confine::namespaces::IdMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use warden_policy::{Access, Policy};

/// The private scratch directory of one run: `$TMPDIR/warden-scratch-UID/warden-PID-RAND`.
///
/// Every run of a user keeps its scratch in that user's own directory ([`runs_dir`]), so the
/// sweep below lists only that user's runs, not all of `$TMPDIR` (which on a shared machine
/// holds hundreds of names, read on every start). Next to it, `NAME.lock` (warden's own, never the sandbox's) is held with `flock` for as long
/// as the run lives. A warden killed with SIGKILL cannot remove its directory, but the kernel
/// drops its lock; every later run sweeps the directories whose lock it can take ([`sweep`]).
/// A lock held is a live run, whatever its pid (reused, or in another PID namespace), so a
/// live run's directory is never swept. With `--keep` the lock file says `keep`, and its
/// directory stays even if warden is killed.
pub struct Scratch {
    /// The directory (canonical).
    pub path: PathBuf,
    lock: Option<(PathBuf, std::fs::File)>,
}

/// A lock file this young may belong to a run that made it and has not locked it yet.
const SWEEP_AFTER: Duration = Duration::from_secs(10);

impl Scratch {
    pub fn create(ids: IdMap, keep: bool) -> Result<Scratch, Failure> {
        let tmp = std::env::var_os("TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        let base = runs_dir(&tmp);
        sweep(&base);
        for attempt in 0..16u32 {
            let name = format!(
                "warden-{}-{:08x}",
                std::process::id(),
                crate::unique::rand32() ^ attempt
            );
            let path = base.join(&name);
            // The lock first: while its file exists, no other run takes the name, and a
            // sweeper that finds it unlocked only ever finds it so after the run is gone.
            let lock = match lock_file(&base.join(format!("{name}.lock")), keep) {
                Ok(lock) => Some(lock),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                // A TMPDIR without room for the lock: the run goes on, unswept if killed.
                Err(_) => None,
            };
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    use std::os::unix::fs::PermissionsExt;
                    let scratch = Scratch { path, lock };
                    let _ = std::fs::set_permissions(
                        &scratch.path,
                        std::fs::Permissions::from_mode(0o700),
                    );
                    hand_over(&scratch.path, ids, "the scratch directory")?;
                    let path = crate::paths::canonical(&scratch.path)
                        .map_or_else(|| scratch.path.clone(), |(p, _)| p.into());
                    return Ok(Scratch { path, ..scratch });
                }
                Err(e) => {
                    if let Some((p, _)) = &lock {
                        let _ = std::fs::remove_file(p);
                    }
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        continue;
                    }
                    return Err(failure(
                        EXIT_WARDEN,
                        format!(
                            "cannot create a scratch directory in {}: {e}",
                            base.display()
                        ),
                    ));
                }
            }
        }
        Err(failure(
            EXIT_WARDEN,
            "cannot create a unique scratch directory",
        ))
    }

    pub fn remove(self) {
        let gone = |r: std::io::Result<()>| match r {
            Ok(()) => true,
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
        };
        // Most runs leave it empty: one rmdir, before the walk a full tree needs.
        let mut removed = gone(std::fs::remove_dir(&self.path));
        // A second try for an entry made while the first ran (an agent worker finishing a
        // dead caller's create after Agent::quiesce gave up on it).
        for _ in 0..3 {
            if removed {
                break;
            }
            removed = gone(std::fs::remove_dir_all(&self.path));
            if !removed {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        // A directory that would not go keeps its (soon unlocked) lock: a later run tries again.
        if removed {
            self.keep();
        }
    }

    /// Leaves the directory for the user: only the lock goes.
    pub fn keep(self) {
        if let Some((p, _)) = &self.lock {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// The directory of this user's runs in `tmp`: `warden-scratch-UID`, made by the first run.
/// An unprivileged user's is private (0700: the sandbox runs as that user). root's is 01733,
/// /tmp's own rules without the listing: root runs with `starting_uid` hand their scratch to
/// another user, who must reach it and, as warden once it has become that user, remove it (a
/// sticky directory lets each remove only its own entries), and no one but root lists it. One
/// that is not a directory of this user's with exactly those rights (made by someone else
/// first, or a link) is not used: the runs then keep their scratch in `tmp` itself, as the
/// sweep there still finds.
fn runs_dir(tmp: &Path) -> PathBuf {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let uid = rustix::process::geteuid().as_raw();
    let mode = if uid == 0 { 0o1733 } else { 0o700 };
    let dir = tmp.join(format!("warden-scratch-{uid}"));
    // Made with no more than 0700 (the umask only takes bits away), then given its mode.
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {
            use std::os::unix::fs::PermissionsExt;
            if std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).is_err() {
                return tmp.to_path_buf();
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return tmp.to_path_buf(),
    }
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() && m.uid() == uid && m.mode() & 0o7777 == mode => dir,
        _ => tmp.to_path_buf(),
    }
}

/// Creates the lock file `path` (exclusively, mode 0600) and locks it; it says `keep` when the
/// run keeps its directory.
fn lock_file(path: &Path, keep: bool) -> std::io::Result<(PathBuf, std::fs::File)> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
    if keep {
        file.write_all(b"keep\n")?;
    }
    Ok((path.to_path_buf(), file))
}

/// Removes, in `base`, the scratch directories of runs that are gone: each `warden-*.lock` of
/// this user older than [`SWEEP_AFTER`] whose lock can be taken, with the directory of the same
/// name (unless the lock file says `keep`). Taken locks are checked to be on the file that
/// still has the name, so two sweepers never remove anything of a run that came after.
fn sweep(base: &Path) {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    let uid = rustix::process::geteuid().as_raw();
    for entry in entries.flatten().take(4096) {
        let name = entry.file_name();
        let Some(stem) = name
            .to_str()
            .filter(|n| n.starts_with("warden-"))
            .and_then(|n| n.strip_suffix(".lock"))
        else {
            continue;
        };
        let lock = entry.path();
        let fresh = |m: &std::fs::Metadata| {
            m.modified()
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_none_or(|age| age < SWEEP_AFTER)
        };
        let Ok(meta) = std::fs::symlink_metadata(&lock) else {
            continue;
        };
        if !meta.is_file() || meta.uid() != uid || fresh(&meta) {
            continue;
        }
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&lock)
        else {
            continue;
        };
        if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
            continue; // a live run
        }
        let same = file
            .metadata()
            .is_ok_and(|m| m.dev() == meta.dev() && m.ino() == meta.ino());
        if !same {
            continue;
        }
        let kept = std::fs::read(&lock).is_ok_and(|t| t.starts_with(b"keep"));
        let dir = base.join(stem);
        if !kept && std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            let _ = std::fs::remove_dir_all(&dir);
        }
        if kept || !dir.exists() {
            let _ = std::fs::remove_file(&lock);
        }
    }
}

/// Makes, in the scratch directory, each directory `D` of an `exec D/*` rule that lies there,
/// before the Landlock ruleset is built: Landlock can give the execute right only to what
/// exists, and a scratch directory starts empty, so `--exec '$SCRATCH/ve/bin/*'` would
/// otherwise allow what the kernel refuses (issue 14). The directories are made as the program
/// would make them (mode 0755, owned by the sandbox's user). Landlock's right stays with the
/// directory made here: one the program removes and makes anew has none (the agent says so).
pub fn make_exec_dirs(policy: &Policy, scratch: &Scratch, ids: IdMap) -> Result<(), Failure> {
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
        let mut at = scratch.path.clone();
        for part in rest.components() {
            at.push(part);
            match std::fs::create_dir(&at) {
                Ok(()) => {
                    use std::os::unix::fs::PermissionsExt;
                    let _ = std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o755));
                    hand_over(&at, ids, &at.display().to_string())?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && at.is_dir() => {}
                Err(e) => {
                    return Err(failure(
                        EXIT_WARDEN,
                        format!("cannot make {} for its exec rule: {e}", at.display()),
                    ))
                }
            }
        }
    }
    Ok(())
}

/// Gives `path`, which warden made, to the sandbox's user when warden is root and the sandbox
/// runs as another one (`what` names it in the error).
fn hand_over(path: &Path, ids: IdMap, what: &str) -> Result<(), Failure> {
    if ids.identity || !rustix::process::geteuid().is_root() {
        return Ok(());
    }
    std::os::unix::fs::chown(path, Some(ids.outside_uid), Some(ids.outside_gid)).map_err(|e| {
        failure(
            EXIT_WARDEN,
            format!("cannot hand {what} to uid {}: {e}", ids.outside_uid),
        )
    })
}
