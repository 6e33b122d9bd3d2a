//! Removing a directory tree that another process may have shaped, or may still be changing:
//! a run's scratch directory or private copies, which the program (hostile, see the design
//! brief §2) filled, and which warden may remove as root.
//!
//! Everything goes through descriptors this module opened itself: each directory is opened
//! from the one above it (`O_DIRECTORY | O_NOFOLLOW`, so a symlink planted where a directory
//! was is removed as a link, never followed), and each entry is removed relative to the
//! directory holding it. No path is looked up again.
//!
//! The work is bounded whatever the tree: at most [`HELD`] directories are held open at once (a
//! tree 25,000 directories deep, which `remove_dir_all` fails on for want of descriptors,
//! is flattened: a directory found that deep is moved up to the top of the tree, still
//! inside it, and removed from there), and at most `limit` entries are looked at before the
//! removal gives up and says so. A directory the program left without search or write
//! permission (mode 0) is opened up first when warden owns it.

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// How many directories are held open at once, the top included.
pub const HELD: usize = 32;

/// How many times in all a directory found not empty at its end is read again (entries made
/// meanwhile, or directories moved up to the top) before the removal gives up.
const REREADS: u64 = 100_000;

/// Why a tree was not removed: what was left, in words for the user.
#[derive(Debug)]
pub struct Left(pub String);

impl std::fmt::Display for Left {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One directory being emptied: its stream and its name in the directory above.
struct Level {
    dir: Dir,
    name: CString,
}

/// Removes `name` in `parent` and everything beneath it, looking at no more than `limit`
/// entries. Not there is removed; a non-directory is unlinked.
pub fn remove_at(parent: BorrowedFd<'_>, name: &OsStr, limit: u64) -> Result<(), Left> {
    let name = CString::new(name.as_bytes()).map_err(|_| Left("a name with a NUL".into()))?;
    // Most are empty by now: one rmdir.
    match rustix::fs::unlinkat(parent, &name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => return Ok(()),
        Err(Errno::NOTDIR) => return unlink(parent, &name),
        Err(_) => {}
    }
    let top = match open_dir(parent, &name) {
        Ok(Some(fd)) => fd,
        Ok(None) => return Ok(()),
        Err(Errno::NOTDIR) | Err(Errno::LOOP) => return unlink(parent, &name),
        Err(e) => return Err(left("cannot open it", e)),
    };
    let dev = rustix::fs::fstat(&top)
        .map_err(|e| left("cannot stat it", e))?
        .st_dev;
    let mut levels = vec![Level {
        dir: Dir::new(top).map_err(|e| left("cannot read it", e))?,
        name,
    }];
    let (mut seen, mut flattened, mut rereads) = (0u64, 0u64, 0u64);
    loop {
        let depth = levels.len();
        let Some(cur) = levels.last_mut() else {
            return Ok(());
        };
        let read = cur.dir.read();
        let entry = match read {
            Some(Ok(e)) => e,
            Some(Err(e)) => return Err(left("cannot read a directory in it", e)),
            None => {
                // Read to its end: remove it from the directory above.
                let Some(done) = levels.pop() else {
                    return Ok(());
                };
                let above = levels
                    .last()
                    .map_or(Ok(parent), |l| l.dir.fd())
                    .map_err(|e| left("lost a directory", e))?;
                match rustix::fs::unlinkat(above, &done.name, AtFlags::REMOVEDIR) {
                    Ok(()) | Err(Errno::NOENT) => {
                        if levels.is_empty() {
                            return Ok(());
                        }
                    }
                    // Something came in meanwhile (or was moved up here): read it again.
                    Err(Errno::NOTEMPTY) | Err(Errno::EXIST) => {
                        seen += 1;
                        rereads += 1;
                        if seen > limit {
                            return Err(Left(format!("more than {limit} entries")));
                        }
                        if rereads > REREADS {
                            return Err(Left("it keeps changing".into()));
                        }
                        let mut again = done;
                        again.dir.rewind();
                        levels.push(again);
                    }
                    Err(e) => return Err(left("cannot remove a directory in it", e)),
                }
                continue;
            }
        };
        let n = entry.file_name();
        if n == c"." || n == c".." {
            continue;
        }
        seen += 1;
        if seen > limit {
            return Err(Left(format!("more than {limit} entries")));
        }
        let n = n.to_owned();
        let is_dir = entry.file_type() == FileType::Directory;
        let here = levels[depth - 1]
            .dir
            .fd()
            .map_err(|e| left("lost a directory", e))?;
        if !is_dir {
            match rustix::fs::unlinkat(here, &n, AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) => continue,
                // A directory after all (a file system without types, or swapped meanwhile).
                Err(Errno::ISDIR) => {}
                Err(e) => return Err(left("cannot remove a file in it", e)),
            }
        }
        // An empty directory goes at once, as most leaves do.
        match rustix::fs::unlinkat(here, &n, AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => continue,
            Err(Errno::NOTDIR) => {
                unlink(here, &n)?;
                continue;
            }
            Err(_) => {}
        }
        let child = match open_dir(here, &n) {
            Ok(Some(fd)) => fd,
            Ok(None) => continue,
            Err(Errno::NOTDIR) | Err(Errno::LOOP) => {
                unlink(here, &n)?;
                continue;
            }
            Err(e) => return Err(left("cannot open a directory in it", e)),
        };
        let st = rustix::fs::fstat(&child).map_err(|e| left("cannot stat a directory", e))?;
        if st.st_dev != dev {
            return Err(Left("a file system is mounted in it".into()));
        }
        if depth < HELD {
            levels.push(Level {
                dir: Dir::new(child).map_err(|e| left("cannot read a directory in it", e))?,
                name: n,
            });
            continue;
        }
        // Held as deep as allowed: move this directory up to the top (a new name there), where
        // the top's stream, read again before the top goes, finds it. It stays in the tree.
        drop(child);
        let top = levels[0]
            .dir
            .fd()
            .map_err(|e| left("lost a directory", e))?;
        loop {
            let to = CString::new(format!(".warden-flat-{flattened}")).expect("no NUL");
            flattened += 1;
            match rustix::fs::renameat_with(here, &n, top, &to, RenameFlags::NOREPLACE) {
                Ok(()) | Err(Errno::NOENT) => break,
                Err(Errno::EXIST) => {
                    seen += 1;
                    if seen > limit {
                        return Err(Left(format!("more than {limit} entries")));
                    }
                }
                Err(e) => return Err(left("cannot move a deep directory up", e)),
            }
        }
    }
}

/// Unlinks the non-directory `name` in `dir`.
fn unlink(dir: BorrowedFd<'_>, name: &CStr) -> Result<(), Left> {
    match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(left("cannot remove a file in it", e)),
    }
}

fn left(what: &str, e: Errno) -> Left {
    Left(format!("{what}: {}", io::Error::from(e)))
}

/// Opens the directory `name` in `dir` for reading, never through a symlink, and makes it
/// searchable and writable for its owner when warden is that owner and it is not (the program
/// may leave a directory mode 0; overlayfs leaves its work directory so). `None`: not there.
fn open_dir(dir: BorrowedFd<'_>, name: &CStr) -> Result<Option<OwnedFd>, Errno> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(Errno::ACCESS) => {
            // Not readable: open it as an object, give its owner rights through that
            // descriptor (chmod of /proc/self/fd/N acts on the object held, and no other), and
            // open it again through the same descriptor.
            let path = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let held = match rustix::fs::openat(dir, name, path, Mode::empty()) {
                Ok(fd) => fd,
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => return Err(e),
            };
            let st = rustix::fs::fstat(&held)?;
            if st.st_uid != rustix::process::geteuid().as_raw() {
                return Err(Errno::ACCESS);
            }
            let proc = format!("/proc/self/fd/{}", held.as_raw_fd());
            rustix::fs::chmod(&proc, Mode::from_raw_mode((st.st_mode & 0o7777) | 0o700))?;
            let fd = rustix::fs::open(&proc, flags & !OFlags::NOFOLLOW, Mode::empty())?;
            return Ok(Some(fd));
        }
        Err(e) => return Err(e),
    };
    // Readable, but its entries can only be removed if it is writable and searchable too.
    let st = rustix::fs::fstat(&fd)?;
    if st.st_mode & 0o300 != 0o300 && st.st_uid == rustix::process::geteuid().as_raw() {
        rustix::fs::fchmod(&fd, Mode::from_raw_mode((st.st_mode & 0o7777) | 0o700))?;
    }
    Ok(Some(fd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    fn fresh(name: &str) -> (tempdir::Dir, OwnedFd) {
        let d = tempdir::Dir::new(name);
        let fd = rustix::fs::open(
            &d.0,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        (d, fd)
    }

    mod tempdir {
        pub struct Dir(pub std::path::PathBuf);
        impl Dir {
            pub fn new(name: &str) -> Dir {
                let p = std::env::temp_dir()
                    .join(format!("warden-tree-test-{}-{name}", std::process::id()));
                let _ = std::fs::remove_dir_all(&p);
                std::fs::create_dir_all(&p).unwrap();
                Dir(p)
            }
        }
        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    /// A chain `depth` directories deep under `at`, each named `d`, made with mkdirat from the
    /// one above (no path grows with it).
    fn chain(at: &Path, depth: usize) {
        let mut cur = rustix::fs::open(
            at,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        for i in 0..depth {
            rustix::fs::mkdirat(&cur, "d", Mode::from_raw_mode(0o755)).unwrap();
            if i % 1000 == 0 {
                rustix::fs::mkdirat(&cur, "side", Mode::from_raw_mode(0o755)).unwrap();
                std::fs::write(format!("/proc/self/fd/{}/f", cur.as_raw_fd()), "x").unwrap();
            }
            cur = rustix::fs::openat(
                &cur,
                "d",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .unwrap();
        }
    }

    #[test]
    fn tree_removal_of_a_deep_chain() {
        let (d, fd) = fresh("deep");
        std::fs::create_dir(d.0.join("t")).unwrap();
        chain(&d.0.join("t"), 5000);
        remove_at(fd.as_fd(), OsStr::new("t"), 1_000_000).unwrap();
        assert!(!d.0.join("t").exists());
    }

    #[test]
    fn tree_removal_opens_up_mode_0_directories() {
        let (d, fd) = fresh("mode0");
        let t = d.0.join("t");
        std::fs::create_dir_all(t.join("a/b")).unwrap();
        std::fs::write(t.join("a/b/f"), "x").unwrap();
        std::fs::set_permissions(t.join("a/b"), std::fs::Permissions::from_mode(0o0)).unwrap();
        std::fs::set_permissions(t.join("a"), std::fs::Permissions::from_mode(0o500)).unwrap();
        remove_at(fd.as_fd(), OsStr::new("t"), 1000).unwrap();
        assert!(!t.exists());
    }

    #[test]
    fn tree_removal_unlinks_links_and_never_follows_them() {
        let (d, fd) = fresh("links");
        let outside = d.0.join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "x").unwrap();
        let t = d.0.join("t");
        std::fs::create_dir_all(t.join("a")).unwrap();
        std::os::unix::fs::symlink(&outside, t.join("a/link")).unwrap();
        std::os::unix::fs::symlink(&outside, t.join("top-link")).unwrap();
        remove_at(fd.as_fd(), OsStr::new("t"), 1000).unwrap();
        assert!(!t.exists());
        assert!(outside.join("keep").exists());
        // The name itself a link: the link goes, not what it names.
        std::os::unix::fs::symlink(&outside, d.0.join("l")).unwrap();
        remove_at(fd.as_fd(), OsStr::new("l"), 1000).unwrap();
        assert!(outside.join("keep").exists());
        assert!(std::fs::symlink_metadata(d.0.join("l")).is_err());
    }

    #[test]
    fn tree_removal_stops_at_its_limit() {
        let (d, fd) = fresh("limit");
        let t = d.0.join("t");
        std::fs::create_dir(&t).unwrap();
        for i in 0..50 {
            std::fs::write(t.join(i.to_string()), "").unwrap();
        }
        let e = remove_at(fd.as_fd(), OsStr::new("t"), 10).unwrap_err();
        assert!(e.0.contains("more than 10 entries"), "{e}");
        remove_at(fd.as_fd(), OsStr::new("t"), 100).unwrap();
        assert!(!t.exists());
    }
}
