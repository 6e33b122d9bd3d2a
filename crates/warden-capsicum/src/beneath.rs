//! Lookups strictly beneath a directory descriptor (a directory capability).
//!
//! The kernel does the walk: `openat2` with `RESOLVE_BENEATH` refuses `..` above the starting
//! directory, absolute paths and symlinks that lead out (`EXDEV`), and `RESOLVE_NO_MAGICLINKS`
//! refuses `/proc/PID/fd`-style links. The check happens during the walk, inside the kernel, so
//! a rename that moves a directory out from under the capability while the walk runs cannot
//! lead the walk outside: the kernel restarts or fails a walk whose `..` crossed a rename
//! (`-EAGAIN`, retried here).

use rustix::fs::{Mode, OFlags, ResolveFlags};
use std::ffi::CStr;
use std::os::fd::{AsFd, OwnedFd};

/// How often a walk that raced with a rename is retried before giving up.
const RETRIES: usize = 16;

/// Opens `path` beneath `dir` with `flags` and `mode`, strictly beneath (see the module docs).
/// `EXDEV` means the path leaves `dir`.
pub fn open<Fd: AsFd>(
    dir: Fd,
    path: &CStr,
    flags: i32,
    mode: u32,
    resolve: ResolveFlags,
) -> rustix::io::Result<OwnedFd> {
    let flags = OFlags::from_bits_retain(flags as u32) | OFlags::CLOEXEC;
    let resolve = resolve | ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(dir.as_fd(), path, flags, Mode::from_raw_mode(mode), resolve) {
            Err(rustix::io::Errno::AGAIN) if tries < RETRIES => tries += 1,
            other => return other,
        }
    }
}

/// Splits `path` into the directory part and the final name, for calls that act on a name in a
/// directory (mkdirat, unlinkat): `("a/b", "c")` for `a/b/c`, `(".", "c")` for `c`. A final
/// `.` or `..`, or an empty name, cannot be created or removed: `None`.
pub fn split(path: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    let trimmed = {
        let mut p = path;
        while p.len() > 1 && p.ends_with(b"/") {
            p = &p[..p.len() - 1];
        }
        p
    };
    let (dir, name) = match trimmed.iter().rposition(|&b| b == b'/') {
        Some(i) => (&trimmed[..i.max(1)], &trimmed[i + 1..]),
        None => (&b"."[..], trimmed),
    };
    if name.is_empty() || name == b"." || name == b".." {
        return None;
    }
    Some((dir.to_vec(), name.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_names_the_last_component() {
        let s = |p: &[u8]| {
            split(p).map(|(d, n)| (String::from_utf8(d).unwrap(), String::from_utf8(n).unwrap()))
        };
        assert_eq!(s(b"a/b/c"), Some(("a/b".into(), "c".into())));
        assert_eq!(s(b"c"), Some((".".into(), "c".into())));
        assert_eq!(s(b"c/"), Some((".".into(), "c".into())));
        assert_eq!(s(b"a/.."), None);
        assert_eq!(s(b"."), None);
        assert_eq!(s(b""), None);
    }

    #[test]
    fn the_kernel_keeps_walks_beneath() {
        // The real kernel, on a real tree: dir/{f, in -> ../outside, abs -> /etc}.
        let base = std::env::temp_dir().join(format!("warden-capsicum-{}", std::process::id()));
        let dir = base.join("dir");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f"), b"x").unwrap();
        std::fs::write(base.join("outside"), b"secret").unwrap();
        let _ = std::os::unix::fs::symlink("../outside", dir.join("in"));
        let _ = std::os::unix::fs::symlink("/etc", dir.join("abs"));
        let d = rustix::fs::open(&dir, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let o = |p: &CStr| open(&d, p, libc::O_RDONLY, 0, ResolveFlags::empty()).map(drop);
        assert_eq!(o(c"f"), Ok(()));
        assert_eq!(o(c"../outside"), Err(rustix::io::Errno::XDEV));
        assert_eq!(o(c"in"), Err(rustix::io::Errno::XDEV));
        assert_eq!(o(c"abs/passwd"), Err(rustix::io::Errno::XDEV));
        assert_eq!(o(c"/etc/passwd"), Err(rustix::io::Errno::XDEV));
        assert_eq!(o(c"./f/../f"), Err(rustix::io::Errno::NOTDIR));
        let _ = std::fs::remove_dir_all(&base);
    }
}
