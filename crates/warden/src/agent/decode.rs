//! Decoding what a client hands the agent: pure functions over bytes the agent has already
//! copied out of the client, with no I/O, so that they can be unit-tested and fuzzed
//! (`fuzz/`, cargo-fuzz). A hostile client chooses every byte, every length and every count:
//! each function bounds what it reads by the buffer it is given and answers a malformed input
//! with the errno the kernel would, never with a panic.

use std::collections::VecDeque;
use std::ffi::CString;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::ops::Range;

/// The address family of a `sockaddr` (its first two bytes); `AF_UNSPEC` when too short.
pub fn family(addr: &[u8]) -> i32 {
    match addr {
        [a, b, ..] => i32::from(u16::from_ne_bytes([*a, *b])),
        _ => libc::AF_UNSPEC,
    }
}

/// The address and port of a `sockaddr_in` or `sockaddr_in6` laid out in `addr`.
pub fn endpoint(family: i32, addr: &[u8]) -> Result<(IpAddr, u16), i32> {
    let port = |a: &[u8]| u16::from_be_bytes([a[2], a[3]]);
    match family {
        libc::AF_INET if addr.len() >= 16 => {
            let o: [u8; 4] = addr[4..8].try_into().expect("4 bytes");
            Ok((IpAddr::V4(Ipv4Addr::from(o)), port(addr)))
        }
        // The kernel accepts the old 24-byte sockaddr_in6 (no scope id).
        libc::AF_INET6 if addr.len() >= 24 => {
            let o: [u8; 16] = addr[8..24].try_into().expect("16 bytes");
            Ok((IpAddr::V6(Ipv6Addr::from(o)), port(addr)))
        }
        _ => Err(libc::EINVAL),
    }
}

/// The path of a path-named `sockaddr_un` (up to its first NUL), or `None` for an abstract
/// (leading NUL) or unnamed (no path) socket address.
pub fn unix_path(addr: &[u8]) -> Option<&[u8]> {
    let path = addr.get(2..)?;
    if path.first().is_none_or(|&b| b == 0) {
        return None;
    }
    let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
    Some(&path[..end])
}

/// `struct open_how` (openat2(2)): flags, mode, resolve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenHow {
    /// `O_*` flags.
    pub flags: u64,
    /// The mode for a created file.
    pub mode: u64,
    /// `RESOLVE_*` flags.
    pub resolve: u64,
}

/// The sizes of `struct open_how` the agent copies: the kernel's first version (24 bytes) up
/// to a page, as the kernel accepts (`E2BIG` above, `EINVAL` below).
pub fn open_how_size(size: u64) -> Result<usize, i32> {
    match size {
        0..=23 => Err(libc::EINVAL),
        24..=4096 => Ok(size as usize),
        _ => Err(libc::E2BIG),
    }
}

/// Decodes an `open_how` of the size the caller gave: bytes past the 24 this kernel ABI knows
/// must be zero (`E2BIG` otherwise, as `copy_struct_from_user`).
pub fn open_how(bytes: &[u8]) -> Result<OpenHow, i32> {
    if bytes.len() < 24 {
        return Err(libc::EINVAL);
    }
    if bytes[24..].iter().any(|&b| b != 0) {
        return Err(libc::E2BIG);
    }
    let word = |i: usize| u64::from_ne_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    Ok(OpenHow {
        flags: word(0),
        mode: word(1),
        resolve: word(2),
    })
}

/// One control message of a `msghdr`'s control buffer: its level, type, and where its data
/// lies in the buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cmsg {
    /// `cmsg_level`.
    pub level: i32,
    /// `cmsg_type`.
    pub kind: i32,
    /// The data bytes (after the 16-byte header), within the buffer.
    pub data: Range<usize>,
}

/// The control messages in `control`, as the kernel walks them (`CMSG_NXTHDR`: each header's
/// length rounded up to 8). A header whose length is below the header's own or runs past the
/// buffer is `EINVAL`; trailing bytes too short for a header are ignored, as the kernel does.
pub fn cmsgs(control: &[u8]) -> Result<Vec<Cmsg>, i32> {
    /// `struct cmsghdr`: size_t len, int level, int type.
    const HDR: usize = 16;
    let mut out = Vec::new();
    let mut at = 0usize;
    while control.len().saturating_sub(at) >= HDR {
        let word = u64::from_ne_bytes(control[at..at + 8].try_into().expect("8 bytes"));
        let level = i32::from_ne_bytes(control[at + 8..at + 12].try_into().expect("4 bytes"));
        let kind = i32::from_ne_bytes(control[at + 12..at + 16].try_into().expect("4 bytes"));
        let len = usize::try_from(word).map_err(|_| libc::EINVAL)?;
        let end = at.checked_add(len).ok_or(libc::EINVAL)?;
        if len < HDR || end > control.len() {
            return Err(libc::EINVAL);
        }
        out.push(Cmsg {
            level,
            kind,
            data: at + HDR..end,
        });
        // The next header starts at the length rounded up to 8; past the end, the walk ends.
        let step = len.checked_add(7).ok_or(libc::EINVAL)? & !7;
        at = at.checked_add(step).ok_or(libc::EINVAL)?;
    }
    Ok(out)
}

/// Splits a path into components, dropping empty ones and `.`, except a `.` that ends the
/// path after a name (`a/.`): the kernel takes that path for the directory itself, not for
/// the name `a` in its parent (`rmdir("a/.")` is `EINVAL`, `rmdir("a/")` removes `a`).
pub fn components(path: &[u8]) -> VecDeque<Vec<u8>> {
    let mut out: VecDeque<Vec<u8>> = path
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .map(<[u8]>::to_vec)
        .collect();
    if !out.is_empty() && ends_in_dot(path) {
        out.push_back(b".".to_vec());
    }
    out
}

/// Whether the last component of `path` (trailing slashes aside) is `.`.
pub fn ends_in_dot(path: &[u8]) -> bool {
    let mut end = path.len();
    while end > 0 && path[end - 1] == b'/' {
        end -= 1;
    }
    let head = &path[..end];
    head == b"." || head.ends_with(b"/.")
}

/// A path's [`components`] joined by single slashes, in one buffer (`a//./b/` is `a/b`).
pub fn clean(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    for c in path
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
    {
        if !out.is_empty() {
            out.push(b'/');
        }
        out.extend_from_slice(c);
    }
    out
}

/// Whether `path` names a directory by its form: its last name is followed by `/` (`a/`,
/// `a//`), so that it must be a directory, followed if it is a symlink, as the kernel's
/// `LOOKUP_DIRECTORY`. (A path ending in `.` or `..` names the directory itself: see
/// [`components`]; `/`, `.` and the empty path have no name.)
pub fn names_directory(path: &[u8]) -> bool {
    let end = path.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
    end > 0
        && end < path.len()
        && !ends_in_dot(path)
        && &path[..end] != b".."
        && !path[..end].ends_with(b"/..")
}

/// Longest name of one component, as the kernel's `NAME_MAX`.
pub const NAME_MAX: usize = 255;

/// One component taken off a walk's queue, held inline (no allocation) up to [`NAME_MAX`]
/// bytes; longer ones, which the kernel refuses anyway, are kept on the heap.
pub struct Part {
    inline: [u8; NAME_MAX],
    len: usize,
    long: Option<Vec<u8>>,
    dir: bool,
}

impl Part {
    /// The component `bytes`; `dir`: it must be a directory.
    pub fn new(bytes: &[u8], dir: bool) -> Part {
        let mut part = Part {
            inline: [0; NAME_MAX],
            len: bytes.len(),
            long: None,
            dir,
        };
        match part.inline.get_mut(..bytes.len()) {
            Some(slot) => slot.copy_from_slice(bytes),
            None => part.long = Some(bytes.to_vec()),
        }
        part
    }

    /// The component was the last of a path that [`names_directory`]: it must be a directory
    /// (a symlink is followed to one).
    pub fn must_be_directory(&self) -> bool {
        self.dir
    }
}

impl std::ops::Deref for Part {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.long {
            Some(v) => v,
            None => &self.inline[..self.len],
        }
    }
}

impl std::fmt::Debug for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self))?;
        if self.dir {
            f.write_str("/")?;
        }
        Ok(())
    }
}

/// The components a walk has still to take: the path's own, with the target of each symlink
/// met on the way put in front. Each path is kept [`clean`] in one buffer and read a component
/// at a time, so a walk holds the bytes of its paths (at most one path and one target per
/// symlink followed, as the kernel's stack of nested links) and not an allocation per
/// component: a target of 2,000 one-letter components is 4 KiB here, where a queue of
/// components took 160 KiB, and a walk through 40 of them 6 MiB. Whether a path
/// [`names_directory`] is kept with it, for its last component.
#[derive(Debug, Default)]
pub struct Pending {
    /// The paths, the front one last, each with how far it has been read and whether its last
    /// component must be a directory.
    paths: Vec<(Vec<u8>, usize, bool)>,
}

impl Pending {
    /// The components of `path`.
    pub fn new(path: &[u8]) -> Pending {
        let mut p = Pending::default();
        p.push_front(path, false);
        p
    }

    /// Puts the components of `path` in front of those pending; `false` if it has none (`/`,
    /// `.`, the empty path). `directory`: its last component must be a directory even if the
    /// path does not say so itself (the target of a symlink that had to be one).
    pub fn push_front(&mut self, path: &[u8], directory: bool) -> bool {
        let mut clean = clean(path);
        if clean.is_empty() {
            return false;
        }
        if ends_in_dot(path) {
            // `a/.`: the directory itself, not the name `a` (see [`components`]).
            clean.extend_from_slice(b"/.");
        }
        self.paths
            .push((clean, 0, directory || names_directory(path)));
        true
    }

    /// Whether no component is left.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// The next component, taken off the front.
    pub fn pop_front(&mut self) -> Option<Part> {
        let (path, at, dir) = self.paths.last_mut()?;
        let rest = &path[*at..];
        let end = rest.iter().position(|&b| b == b'/').unwrap_or(rest.len());
        *at += end + 1;
        let done = *at >= path.len();
        let part = Part::new(&rest[..end], done && *dir);
        if done {
            self.paths.pop();
        }
        Some(part)
    }

    /// What is left, front first, as one relative path (for naming the whole path a walk was
    /// after when it stops early).
    pub fn remaining(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (path, at, _) in self.paths.iter().rev() {
            if let Some(rest) = path.get(*at..).filter(|r| !r.is_empty()) {
                if !out.is_empty() {
                    out.push(b'/');
                }
                out.extend_from_slice(rest);
            }
        }
        out
    }

    /// Bytes held for the pending paths.
    pub fn bytes(&self) -> usize {
        self.paths.iter().map(|(p, _, _)| p.capacity()).sum()
    }
}

/// An extended attribute's name as copied (up to its NUL): `EINVAL` for a name with no
/// characters, `ERANGE` for one longer than `XATTR_NAME_MAX` (255), as the kernel answers.
pub fn xattr_name(bytes: Vec<u8>) -> Result<CString, i32> {
    if bytes.is_empty() {
        return Err(libc::EINVAL);
    }
    if bytes.len() > 255 {
        return Err(libc::ERANGE);
    }
    CString::new(bytes).map_err(|_| libc::EINVAL)
}

/// Whether the agent sets or removes an attribute of this name for a sandbox: the `user.`
/// namespace only (see `fs::settable_xattr`).
pub fn is_user_xattr(name: &[u8]) -> bool {
    name.starts_with(b"user.") && name.len() > 5
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_messages_are_walked_as_the_kernel_does() {
        let mut buf = Vec::new();
        for (level, kind, data) in [(1i32, 1i32, &[1u8, 0, 0, 0][..]), (0, 1, &[7u8][..])] {
            let len = 16 + data.len();
            buf.extend_from_slice(&(len as u64).to_ne_bytes());
            buf.extend_from_slice(&level.to_ne_bytes());
            buf.extend_from_slice(&kind.to_ne_bytes());
            buf.extend_from_slice(data);
            buf.resize(buf.len().div_ceil(8) * 8, 0);
        }
        let got = cmsgs(&buf).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].data, 16..20);
        assert_eq!(got[1].level, 0);
        // A length that wraps the buffer's arithmetic is refused, not a panic.
        let mut bad = vec![0u8; 32];
        bad[16..24].copy_from_slice(&(u64::MAX - 15).to_ne_bytes());
        bad[..8].copy_from_slice(&16u64.to_ne_bytes());
        assert_eq!(cmsgs(&bad), Err(libc::EINVAL));
        let mut short = vec![0u8; 16];
        short[..8].copy_from_slice(&8u64.to_ne_bytes());
        assert_eq!(cmsgs(&short), Err(libc::EINVAL));
    }

    #[test]
    fn open_how_follows_copy_struct_from_user() {
        assert_eq!(open_how_size(23), Err(libc::EINVAL));
        assert_eq!(open_how_size(4097), Err(libc::E2BIG));
        let mut how = vec![0u8; 32];
        how[..8].copy_from_slice(&(libc::O_RDONLY as u64).to_ne_bytes());
        how[16..24].copy_from_slice(&4u64.to_ne_bytes());
        assert_eq!(open_how(&how).unwrap().resolve, 4);
        how[31] = 1;
        assert_eq!(open_how(&how), Err(libc::E2BIG));
    }

    #[test]
    fn addresses() {
        let mut v4 = vec![0u8; 16];
        v4[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        v4[2..4].copy_from_slice(&80u16.to_be_bytes());
        v4[4..8].copy_from_slice(&[127, 0, 0, 1]);
        assert_eq!(
            endpoint(family(&v4), &v4),
            Ok((IpAddr::V4(Ipv4Addr::LOCALHOST), 80))
        );
        assert_eq!(endpoint(libc::AF_INET, &v4[..15]), Err(libc::EINVAL));
        let mut un = (libc::AF_UNIX as u16).to_ne_bytes().to_vec();
        assert_eq!(unix_path(&un), None);
        un.extend_from_slice(b"/run/x\0garbage");
        assert_eq!(unix_path(&un), Some(&b"/run/x"[..]));
        un[2] = 0;
        assert_eq!(unix_path(&un), None, "abstract");
    }

    fn drain(mut p: Pending) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(c) = p.pop_front() {
            out.push(c.to_vec());
        }
        assert!(p.is_empty());
        out
    }

    #[test]
    fn pending_yields_the_components_with_targets_in_front() {
        for path in [
            &b"/usr//bin/./ls/"[..],
            b"a",
            b"",
            b"/",
            b"./.",
            b"../x/..",
            b"a/b/c",
        ] {
            assert_eq!(
                drain(Pending::new(path)),
                Vec::from(components(path)),
                "{:?}",
                String::from_utf8_lossy(path)
            );
            assert_eq!(Pending::new(path).is_empty(), components(path).is_empty());
        }
        // A symlink met after "a" in "a/link/c": its target's components come before "c".
        let mut p = Pending::new(b"a/link/c");
        assert_eq!(&*p.pop_front().unwrap(), b"a");
        assert_eq!(&*p.pop_front().unwrap(), b"link");
        assert!(p.push_front(b"../t1/./t2//", false));
        assert!(
            !p.push_front(b"/./", false),
            "a target of no components adds nothing"
        );
        assert_eq!(drain(p), [&b".."[..], b"t1", b"t2", b"c"]);
        // The last component of a target is the walk's last only if nothing follows it.
        let mut p = Pending::new(b"link");
        p.pop_front();
        p.push_front(b"x", false);
        assert_eq!(&*p.pop_front().unwrap(), b"x");
        assert!(p.is_empty());
    }

    #[test]
    fn pending_says_what_remains_front_first() {
        let mut p = Pending::new(b"/a/b/c");
        assert_eq!(p.pop_front().as_deref(), Some(&b"a"[..]));
        p.push_front(b"x/y", false);
        assert_eq!(p.remaining(), b"x/y/b/c".to_vec());
        assert_eq!(p.pop_front().as_deref(), Some(&b"x"[..]));
        assert_eq!(p.remaining(), b"y/b/c".to_vec());
        while p.pop_front().is_some() {}
        assert!(p.remaining().is_empty());
    }

    #[test]
    fn pending_holds_bytes_not_an_allocation_per_component() {
        let target = "a/".repeat(2000);
        let mut p = Pending::new(target.as_bytes());
        for _ in 0..39 {
            p.pop_front();
            p.push_front(target.as_bytes(), false);
        }
        // 40 paths of 4,000 bytes, each with its buffer.
        assert!(p.bytes() <= 40 * 4000, "{}", p.bytes());
    }

    #[test]
    fn a_path_names_a_directory_by_a_trailing_slash_or_dot() {
        for (path, dir) in [
            (&b"a/"[..], true),
            (b"a//", true),
            (b"/a/b/", true),
            (b"a/.", false),
            (b"a/./", false),
            (b"a/../", false),
            (b"a", false),
            (b"./a", false),
            (b"a/..", false),
            (b"/", false),
            (b".", false),
            (b"./", false),
            (b"", false),
        ] {
            assert_eq!(
                names_directory(path),
                dir,
                "{:?}",
                String::from_utf8_lossy(path)
            );
        }
        // Only the last component of such a path carries the mark, and a target that must be
        // a directory passes it on to its own last component.
        let mut p = Pending::new(b"a/b/");
        assert!(!p.pop_front().unwrap().must_be_directory());
        assert!(p.pop_front().unwrap().must_be_directory());
        // A final `.` stays: the path names the directory itself.
        assert_eq!(drain(Pending::new(b"a/./b/./")), [&b"a"[..], b"b", b"."]);
        assert_eq!(drain(Pending::new(b"./.")), Vec::<Vec<u8>>::new());
        p.push_front(b"t/u", true);
        assert!(!p.pop_front().unwrap().must_be_directory());
        assert!(p.pop_front().unwrap().must_be_directory());
        // A name longer than NAME_MAX is kept whole (the walk refuses it).
        let long = vec![b'x'; NAME_MAX + 1];
        assert_eq!(&*Pending::new(&long).pop_front().unwrap(), &long[..]);
    }

    #[test]
    fn xattr_names() {
        assert_eq!(xattr_name(Vec::new()), Err(libc::EINVAL));
        assert_eq!(xattr_name(vec![b'a'; 256]), Err(libc::ERANGE));
        assert!(is_user_xattr(b"user.x"));
        assert!(!is_user_xattr(b"user."));
        assert!(!is_user_xattr(b"security.capability"));
        assert!(!is_user_xattr(b"trusted.user.x"));
    }
}
