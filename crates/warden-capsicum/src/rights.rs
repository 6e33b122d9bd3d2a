//! Descriptor rights (Capsicum's `cap_rights_t`), and who enforces each one on Linux.
//!
//! A right is enforced by one of three: the **kernel**, because the descriptor warden hands out
//! was opened with no more access than the rights allow (its access mode: `O_RDONLY`,
//! `O_WRONLY`, `O_RDWR` or `O_PATH`), so every call that needs more fails with the kernel's own
//! `EBADF`; the **agent**, because the call that needs the right is delegated to warden's agent
//! (seccomp user notification), which looks the descriptor's rights up and refuses with
//! [`crate::ENOTCAPABLE`]; or **nobody**, because the call is one seccomp lets through without
//! the agent and Linux has no per-descriptor switch for it. [`ENFORCEMENT`] says which, right
//! by right, and `docs/design.md` (section 9) repeats it.

use std::fmt;

/// One right.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Right {
    /// read, pread, readv, preadv, sendfile/splice/copy_file_range from it, getdents.
    Read,
    /// write, pwrite, writev, ftruncate, sendfile/splice/copy_file_range into it; utimensat
    /// (FreeBSD's `CAP_FUTIMES`).
    Write,
    /// lseek (and the implicit offset of pread/pwrite on FreeBSD).
    Seek,
    /// fstat and fstatat(fd, "", AT_EMPTY_PATH).
    Fstat,
    /// Lookups relative to the descriptor (`openat`, `fstatat`, ... with it as `dirfd`).
    Lookup,
    /// Creating names beneath it (`O_CREAT`, the target of `renameat` and `linkat`, `symlinkat`;
    /// both ends of a `RENAME_EXCHANGE`).
    Create,
    /// Creating directories beneath it (`mkdirat`).
    Mkdir,
    /// Removing names beneath it (`unlinkat`, the source of `renameat`, its target when it
    /// replaces a name there; both ends of a `RENAME_EXCHANGE`).
    Unlink,
    /// mmap.
    Mmap,
    /// fchmod, fchmodat(fd, "", AT_EMPTY_PATH).
    Fchmod,
    /// fchown.
    Fchown,
    /// ioctl.
    Ioctl,
    /// poll, select, epoll.
    Event,
    /// accept on a listening socket.
    Accept,
    /// connect by address.
    Connect,
    /// bind by address.
    Bind,
    /// fexecve (`execveat(fd, "", AT_EMPTY_PATH)`).
    Fexecve,
    /// Making FIFOs, sockets and empty files beneath it with `mknodat` (FreeBSD's
    /// `CAP_MKNODAT`, `CAP_MKFIFOAT`); device nodes never.
    Mknod,
}

/// Who enforces a right on Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enforcer {
    /// The kernel, by the descriptor's access mode.
    Kernel,
    /// warden's agent, on the delegated calls.
    Agent,
    /// Nobody: Linux cannot narrow it per descriptor, and the call is not delegated.
    Unenforced,
}

impl Right {
    /// Every right, in bit order.
    pub const ALL: [Right; 18] = [
        Right::Read,
        Right::Write,
        Right::Seek,
        Right::Fstat,
        Right::Lookup,
        Right::Create,
        Right::Mkdir,
        Right::Unlink,
        Right::Mmap,
        Right::Fchmod,
        Right::Fchown,
        Right::Ioctl,
        Right::Event,
        Right::Accept,
        Right::Connect,
        Right::Bind,
        Right::Fexecve,
        Right::Mknod,
    ];

    /// The name used on the command line (`read`, `fchmod`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Right::Read => "read",
            Right::Write => "write",
            Right::Seek => "seek",
            Right::Fstat => "fstat",
            Right::Lookup => "lookup",
            Right::Create => "create",
            Right::Mkdir => "mkdir",
            Right::Unlink => "unlink",
            Right::Mmap => "mmap",
            Right::Fchmod => "fchmod",
            Right::Fchown => "fchown",
            Right::Ioctl => "ioctl",
            Right::Event => "event",
            Right::Accept => "accept",
            Right::Connect => "connect",
            Right::Bind => "bind",
            Right::Fexecve => "fexecve",
            Right::Mknod => "mknod",
        }
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// Who enforces each right, and how (or why nobody can). The documentation of record: the
/// crate docs and `docs/design.md` quote it, and a test checks every right has a row.
pub const ENFORCEMENT: &[(Right, Enforcer, &str)] = &[
    (Right::Read, Enforcer::Kernel, "the descriptor is opened O_WRONLY or O_PATH without it (cap_rights_limit re-opens it so; a socket cannot be, and its limit fails): read, pread, readv, preadv2, getdents, mmap, sendfile, splice and copy_file_range from it fail with EBADF"),
    (Right::Write, Enforcer::Kernel, "the descriptor is opened O_RDONLY or O_PATH without it (cap_rights_limit re-opens it so; a socket cannot be, and its limit fails): write, pwrite, writev, ftruncate, fallocate, and sendfile, splice and copy_file_range into it fail with EBADF; a shared writable mapping fails with EACCES"),
    (Right::Seek, Enforcer::Unenforced, "lseek is a direct call on any descriptor and Linux cannot make a regular file unseekable"),
    (Right::Fstat, Enforcer::Unenforced, "fstat is a direct call; Linux has no descriptor that cannot be fstat'ed"),
    (Right::Lookup, Enforcer::Agent, "every *at call is delegated in capability mode; the agent refuses a dirfd without lookup, and resolves with openat2(RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS) from the descriptor itself"),
    (Right::Create, Enforcer::Agent, "O_CREAT beneath the directory, checked by the agent before it opens"),
    (Right::Mkdir, Enforcer::Agent, "mkdirat beneath the directory, performed by the agent"),
    (Right::Unlink, Enforcer::Agent, "unlinkat beneath the directory, performed by the agent"),
    (Right::Mmap, Enforcer::Unenforced, "mmap is direct; the kernel lets a mapping do what the access mode allows (a write-only descriptor cannot be mapped at all), but a readable descriptor cannot be kept from being mapped"),
    (Right::Fchmod, Enforcer::Agent, "fchmod and fchmodat are delegated; the agent looks the file's rights up (fchmodat also needs lookup on the directory) and never sets set-id bits"),
    (Right::Fchown, Enforcer::Agent, "fchown and fchownat are delegated; the agent looks the file's rights up (fchownat also needs lookup on the directory, and finds the file strictly beneath it), checks the policy's write, maps the ids through the sandbox's id map and changes the owner as warden's policy path does"),
    (Right::Ioctl, Enforcer::Unenforced, "ioctl is direct (only TIOCSTI, TIOCLINUX and inode-flag requests are refused, for every descriptor)"),
    (Right::Event, Enforcer::Unenforced, "poll, select and epoll are direct and take any descriptor"),
    (Right::Accept, Enforcer::Unenforced, "accept on a listening socket the program holds is direct"),
    (Right::Connect, Enforcer::Agent, "connect by address is refused in capability mode whatever the descriptor (ECAPMODE)"),
    (Right::Bind, Enforcer::Agent, "bind by address is refused in capability mode whatever the descriptor (ECAPMODE)"),
    (Right::Mknod, Enforcer::Agent, "mknodat beneath the directory (with lookup), performed by the agent in the directory found strictly beneath it; device nodes are refused whatever the rights"),
    (Right::Fexecve, Enforcer::Agent, "execveat(fd, \"\", AT_EMPTY_PATH) is delegated; the agent continues it only for a file with fexecve, and Landlock's execute right still applies"),
];

/// A set of rights.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Rights(u32);

impl Rights {
    /// No right at all.
    pub const NONE: Rights = Rights(0);

    /// The set holding exactly `rights`.
    pub fn of(rights: &[Right]) -> Rights {
        Rights(rights.iter().fold(0, |m, r| m | r.bit()))
    }

    /// Every right.
    pub fn all() -> Rights {
        Rights::of(&Right::ALL)
    }

    /// Whether `right` is in the set.
    pub fn has(self, right: Right) -> bool {
        self.0 & right.bit() != 0
    }

    /// The rights in both sets: narrowing never widens.
    pub fn intersect(self, other: Rights) -> Rights {
        Rights(self.0 & other.0)
    }

    /// The set without `right`.
    pub fn without(self, right: Right) -> Rights {
        Rights(self.0 & !right.bit())
    }

    /// The rights in either set.
    pub fn union(self, other: Rights) -> Rights {
        Rights(self.0 | other.0)
    }

    /// Whether every right of `self` is in `other`.
    pub fn within(self, other: Rights) -> bool {
        self.0 & !other.0 == 0
    }

    /// The rights that concern the names in a directory rather than an object found there:
    /// looking names up, making them (create, mkdir, mknod) and removing them (unlink).
    pub fn entries() -> Rights {
        Rights::of(&[
            Right::Lookup,
            Right::Create,
            Right::Mkdir,
            Right::Unlink,
            Right::Mknod,
        ])
    }

    /// The rights an object gains when it is linked or moved from beneath a directory
    /// capability holding `self` to beneath one holding `to`: through `to` it would be opened
    /// with `to`'s rights ([`Rights::open_through`]), so every right of `to` that `self` lacks,
    /// but the [entry rights](Rights::entries). Those add nothing to what the object already
    /// is: a file has no names, and of a moved directory's names, lookup is needed on both
    /// sides and unlink on the source (so neither is gained), and making new names beneath it
    /// is what `to` grants beneath itself anyway, never a right over an object it held.
    pub fn gained_by_moving_to(self, to: Rights) -> Rights {
        Rights(to.0 & !self.0 & !Rights::entries().0)
    }

    /// The set as the bits of the program-side API (`CAP_READ` is bit 0, in the order of
    /// [`Right::ALL`]; `c/capsicum.h` repeats them).
    pub fn bits(self) -> u64 {
        u64::from(self.0)
    }

    /// The set whose bits are `bits`; `None` when a bit names no right.
    pub fn from_bits(bits: u64) -> Option<Rights> {
        let known = u64::from(Rights::all().0);
        (bits & !known == 0).then_some(Rights(bits as u32))
    }

    /// The rights in the set, in bit order.
    pub fn iter(self) -> impl Iterator<Item = Right> {
        Right::ALL.into_iter().filter(move |r| self.has(*r))
    }

    /// Parses a comma-separated list of right names (`read,seek`). `rw` and `all` are
    /// shorthands for `read,write` and every right.
    pub fn parse(text: &str) -> Result<Rights, String> {
        let mut set = Rights::NONE;
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            set = set.union(match word {
                "all" => Rights::all(),
                "rw" => Rights::of(&[Right::Read, Right::Write]),
                _ => match Right::ALL.into_iter().find(|r| r.name() == word) {
                    Some(r) => Rights::of(&[r]),
                    None => {
                        let names: Vec<_> = Right::ALL.iter().map(|r| r.name()).collect();
                        return Err(format!(
                            "unknown right {word:?} (rights: {}, or rw, all)",
                            names.join(", ")
                        ));
                    }
                },
            });
        }
        if set == Rights::NONE {
            return Err("no rights given (for example read,seek)".into());
        }
        Ok(set)
    }

    /// The access mode a descriptor with these rights is opened with, so that the kernel itself
    /// refuses what the rights do not allow: `O_RDWR`, `O_RDONLY`, `O_WRONLY`, or `O_PATH`
    /// when neither read nor write is given.
    pub fn access_mode(self) -> i32 {
        match (self.has(Right::Read), self.has(Right::Write)) {
            (true, true) => libc::O_RDWR,
            (true, false) => libc::O_RDONLY,
            (false, true) => libc::O_WRONLY,
            (false, false) => libc::O_PATH,
        }
    }

    /// The rights a descriptor opened through a directory with these rights may have, given
    /// the open's `flags`; or the right missing for it. A descriptor opened for reading needs
    /// `read`, for writing `write`, `O_CREAT` needs `create`, `O_TRUNC` needs `write`; every
    /// open through a directory needs `lookup`. The new descriptor gets the directory's rights
    /// (as on FreeBSD, where `openat` derives them from the directory's).
    pub fn open_through(self, flags: i32) -> Result<Rights, Right> {
        if !self.has(Right::Lookup) {
            return Err(Right::Lookup);
        }
        if flags & libc::O_PATH == 0 {
            let (read, write) = match flags & warden_sys::abi::O_ACCMODE {
                libc::O_RDONLY => (true, false),
                libc::O_WRONLY => (false, true),
                _ => (true, true),
            };
            if read && !self.has(Right::Read) {
                return Err(Right::Read);
            }
            if (write || flags & libc::O_TRUNC != 0) && !self.has(Right::Write) {
                return Err(Right::Write);
            }
        }
        if flags & libc::O_CREAT != 0 && !self.has(Right::Create) {
            return Err(Right::Create);
        }
        Ok(self)
    }
}

impl fmt::Display for Rights {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<_> = self.iter().map(Right::name).collect();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join(","))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_right_says_who_enforces_it() {
        for r in Right::ALL {
            let rows: Vec<_> = ENFORCEMENT.iter().filter(|(x, _, _)| *x == r).collect();
            assert_eq!(rows.len(), 1, "{}", r.name());
            assert!(!rows[0].2.is_empty());
        }
    }

    #[test]
    fn parse_and_display_round_trip() {
        let r = Rights::parse("read, seek,fstat").unwrap();
        assert_eq!(r.to_string(), "read,seek,fstat");
        assert_eq!(Rights::parse(&r.to_string()).unwrap(), r);
        assert_eq!(Rights::parse("all").unwrap(), Rights::all());
        assert!(Rights::parse("read,frobnicate")
            .unwrap_err()
            .contains("frobnicate"));
        assert!(Rights::parse("").is_err());
    }

    #[test]
    fn access_mode_never_exceeds_the_rights() {
        let m = |s| Rights::parse(s).unwrap().access_mode();
        assert_eq!(m("read,seek"), libc::O_RDONLY);
        assert_eq!(m("write"), libc::O_WRONLY);
        assert_eq!(m("rw"), libc::O_RDWR);
        assert_eq!(m("lookup,create"), libc::O_PATH);
    }

    #[test]
    fn opens_through_a_directory_need_the_matching_right() {
        let ro = Rights::parse("read,lookup").unwrap();
        assert_eq!(ro.open_through(libc::O_RDONLY), Ok(ro));
        assert_eq!(ro.open_through(libc::O_WRONLY), Err(Right::Write));
        assert_eq!(ro.open_through(libc::O_RDWR), Err(Right::Write));
        assert_eq!(
            ro.open_through(libc::O_RDONLY | libc::O_TRUNC),
            Err(Right::Write)
        );
        assert_eq!(ro.open_through(libc::O_PATH), Ok(ro));
        let w = Rights::parse("write,lookup").unwrap();
        assert_eq!(
            w.open_through(libc::O_WRONLY | libc::O_CREAT),
            Err(Right::Create)
        );
        assert_eq!(w.open_through(libc::O_RDONLY), Err(Right::Read));
        let none = Rights::parse("read").unwrap();
        assert_eq!(none.open_through(libc::O_RDONLY), Err(Right::Lookup));
    }

    #[test]
    fn bits_round_trip_and_unknown_bits_are_refused() {
        for r in Right::ALL {
            let one = Rights::of(&[r]);
            assert_eq!(one.bits(), 1 << (r as u32));
            assert_eq!(Rights::from_bits(one.bits()), Some(one));
        }
        assert_eq!(Rights::from_bits(Rights::all().bits()), Some(Rights::all()));
        assert_eq!(Rights::from_bits(1 << 18), None);
        assert_eq!(Rights::from_bits(1 << 40), None);
    }

    #[test]
    fn a_move_gains_the_object_rights_the_source_lacks() {
        let p = |s| Rights::parse(s).unwrap();
        // Out of a lookup-only capability into a writable one: read and write gained.
        assert_eq!(
            p("lookup").gained_by_moving_to(p("lookup,create,read,write")),
            p("read,write")
        );
        // Into a drop box (create only), or between equals: nothing.
        assert_eq!(
            p("lookup,read,write,unlink").gained_by_moving_to(p("lookup,create")),
            Rights::NONE
        );
        assert_eq!(
            Rights::all().gained_by_moving_to(Rights::all()),
            Rights::NONE
        );
        // The entry rights are not the object's.
        assert_eq!(
            p("lookup,unlink,read").gained_by_moving_to(p("lookup,create,mkdir,mknod,read")),
            Rights::NONE
        );
        assert_eq!(
            p("lookup,unlink").gained_by_moving_to(p("lookup,create,fchmod,fexecve")),
            p("fchmod,fexecve")
        );
    }

    #[test]
    fn narrowing_never_widens() {
        let all = Rights::all();
        for r in Right::ALL {
            let one = Rights::of(&[r]);
            assert!(all.intersect(one).within(one));
            assert!(one.intersect(all).within(one));
        }
    }
}
