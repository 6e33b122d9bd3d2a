//! Paths as the kernel names them.

use std::os::fd::AsRawFd;

/// The canonical path of what `path` names (links followed) and what it is, in four calls
/// whatever its depth: an `O_PATH` descriptor of it and the kernel's name for that descriptor.
/// `realpath(3)` (`std::fs::canonicalize`) asks about every component of the path, a
/// `readlink` each, and a start asks this of some forty paths before the sandbox is made.
/// Where `/proc` cannot name the descriptor, as `realpath(3)` would.
pub fn canonical(path: impl AsRef<std::path::Path>) -> Option<(String, rustix::fs::Stat)> {
    use rustix::fs::{Mode, OFlags};
    let path = path.as_ref();
    let fd = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    let named = rustix::fs::readlink(format!("/proc/self/fd/{}", fd.as_raw_fd()), Vec::new())
        .ok()
        .and_then(|c| c.into_string().ok())
        // Only a path: not `pipe:[N]`, and not a file unlinked meanwhile (` (deleted)`).
        .filter(|t| t.starts_with('/') && !t.ends_with(" (deleted)"));
    let text = match named {
        Some(t) => t,
        None => std::fs::canonicalize(path).ok()?.to_str()?.to_owned(),
    };
    Some((text, st))
}

#[cfg(test)]
mod tests {
    use super::canonical;

    /// The kernel's name is realpath(3)'s: through links, `..` and `.`, for files and
    /// directories; nothing for what does not exist.
    #[test]
    fn the_kernels_name_is_realpaths() {
        let dir = crate::testing::TempTree::new("paths");
        std::fs::create_dir_all(dir.join("a/b")).unwrap();
        std::fs::write(dir.join("a/b/f"), "x").unwrap();
        std::os::unix::fs::symlink("a/b", dir.join("l")).unwrap();
        std::os::unix::fs::symlink(dir.join("l/f"), dir.join("lf")).unwrap();
        for p in ["a/b/f", "l/f", "lf", "l", "a/./b/../b", "l/../b"] {
            let p = dir.join(p);
            let want = std::fs::canonicalize(&p)
                .ok()
                .map(|c| c.to_str().unwrap().to_owned());
            assert_eq!(canonical(&p).map(|(c, _)| c), want, "{}", p.display());
        }
        assert_eq!(canonical(dir.join("missing")).map(|(c, _)| c), None);
    }
}
