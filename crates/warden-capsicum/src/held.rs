//! The rights of the objects a sandbox in capability mode holds descriptors to.
//!
//! Rights are kept at two levels, and the agent finds them from a duplicate of the caller's
//! descriptor (`pidfd_getfd`), never from a number the caller could have reused:
//!
//! - **per open file description**, for a regular file or directory limited with
//!   `cap_rights_limit`: the agent opens the object again (a description of its own, installed
//!   at the caller's number), keeps a reference to that very description, and recognises it by
//!   `kcmp(KCMP_FILE)` against its reference ([`Held::limit_description`],
//!   [`Held::rights_of`]). Its copies (`dup`, `fork`, exec, `SCM_RIGHTS`) are the same
//!   description and share the limit; another descriptor of the same file (opened before, or
//!   again through a directory) keeps its own rights. The reference lives as long as the
//!   sandbox (nothing tells the agent when the program's last copy closes, and dropping it
//!   while a copy is in flight in a socket would widen that copy), so such a description's
//!   `flock` and lease outlive the program's close, and an unlinked limited file keeps its
//!   space, until the sandbox ends; at most [`Held::MAX_DESCRIPTIONS`] are kept.
//! - **per object** (device and inode) for everything else: what `--fd` and a directory
//!   capability hand out, and sockets, pipes and devices (holding one of those would keep its
//!   peer from seeing end of file, and a process descriptor from killing on close). A
//!   descriptor keeps these through `dup`, `fork`, exec and `SCM_RIGHTS` because they travel
//!   with the object. Two capabilities to one object hold the union of their rights: the
//!   sandbox holds both, and could use either.
//!
//! An object the table has never seen holds the table's default: no right at all when warden
//! started the program in capability mode (`--capability-mode`: only the `--fd` descriptors are
//! capabilities), every right when the program enters capability mode itself (`cap_enter`: as
//! on FreeBSD, what it held before keeps every right until it limits it). A limit
//! ([`Held::limit`]) narrows what an object holds and never widens it.
//!
//! The table is bounded (the agent is a server facing a hostile client): past [`Held::MAX`]
//! objects, a new descriptor through a directory capability is refused with `ENFILE`.

use crate::rights::Rights;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Mutex;

/// The rights of every object a sandbox holds a capability to.
#[derive(Debug, Default)]
pub struct Held {
    table: Mutex<HashMap<(u64, u64), Rights>>,
    /// What an object not in the table holds.
    default: Rights,
    /// Limited open file descriptions, by object: the agent's reference to each, and its
    /// rights.
    descriptions: Mutex<HashMap<(u64, u64), Vec<Description>>>,
}

/// The agent's reference to a limited open file description, and its rights.
type Description = (OwnedFd, Rights);

/// What [`Held::limit`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The object now holds the rights asked for.
    Narrowed,
    /// The rights asked for are not all held (these are): nothing changed.
    Widens(Rights),
    /// The table is full: nothing changed.
    Full,
}

impl Held {
    /// A table in which an object never seen holds `default`.
    pub fn with_default(default: Rights) -> Held {
        Held {
            table: Mutex::default(),
            default,
            descriptions: Mutex::default(),
        }
    }

    /// The most limited open file descriptions one sandbox's table keeps (each is a descriptor
    /// of the agent's).
    pub const MAX_DESCRIPTIONS: usize = 4096;

    /// The rights of the caller's descriptor whose duplicate (in this process) is `fd`, on the
    /// object `(dev, ino)`: its open file description's if that was limited, else the
    /// object's. An error comparing descriptions answers no right (the safe side).
    pub fn rights_of(&self, fd: BorrowedFd<'_>, dev: u64, ino: u64) -> Rights {
        match self.description(fd, dev, ino) {
            Ok(Some(r)) => r,
            Ok(None) => self.rights(dev, ino),
            Err(_) => Rights::NONE,
        }
    }

    /// Whether `fd`'s open file description is one the table limited.
    pub fn is_limited(&self, fd: BorrowedFd<'_>, dev: u64, ino: u64) -> bool {
        matches!(self.description(fd, dev, ino), Ok(Some(_)))
    }

    /// The rights of `fd`'s open file description, if it is one the table limited.
    fn description(
        &self,
        fd: BorrowedFd<'_>,
        dev: u64,
        ino: u64,
    ) -> std::io::Result<Option<Rights>> {
        let Ok(d) = self.descriptions.lock() else {
            return Err(std::io::Error::from_raw_os_error(libc::EDEADLK));
        };
        let me = std::process::id() as i32;
        for (held, rights) in d.get(&(dev, ino)).into_iter().flatten() {
            if warden_sys::process::same_file(me, held.as_raw_fd(), me, fd.as_raw_fd())? {
                return Ok(Some(*rights));
            }
        }
        Ok(None)
    }

    /// Limits the open file description the agent holds as `fd` (of the object `(dev, ino)`)
    /// to `rights`, which must be within what the caller's descriptor `current` of it holds:
    /// a description the table already limited is narrowed in place (its reference `fd` is
    /// then dropped), a new one is kept.
    pub fn limit_description(
        &self,
        fd: OwnedFd,
        current: BorrowedFd<'_>,
        dev: u64,
        ino: u64,
        rights: Rights,
    ) -> Limit {
        let held = self.rights_of(current, dev, ino);
        if !rights.within(held) {
            return Limit::Widens(held);
        }
        let Ok(mut d) = self.descriptions.lock() else {
            return Limit::Full;
        };
        let me = std::process::id() as i32;
        let list = d.entry((dev, ino)).or_default();
        for (h, r) in list.iter_mut() {
            if warden_sys::process::same_file(me, h.as_raw_fd(), me, fd.as_raw_fd())
                .unwrap_or(false)
            {
                *r = r.intersect(rights);
                return Limit::Narrowed;
            }
        }
        let total: usize = d.values().map(Vec::len).sum();
        if total >= Self::MAX_DESCRIPTIONS {
            return Limit::Full;
        }
        d.entry((dev, ino)).or_default().push((fd, rights));
        Limit::Narrowed
    }

    /// Every limited open file description: its object, the agent's descriptor number for it
    /// (for `warden inspect`, which compares it with the program's by `kcmp`) and its rights.
    pub fn list_descriptions(&self) -> Vec<((u64, u64), i32, Rights)> {
        match self.descriptions.lock() {
            Ok(d) => d
                .iter()
                .flat_map(|(k, v)| v.iter().map(|(fd, r)| (*k, fd.as_raw_fd(), *r)))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Narrows what the object `(dev, ino)` holds to `rights`, which must all be held already
    /// (Capsicum's `cap_rights_limit`: narrowed, never widened).
    pub fn limit(&self, dev: u64, ino: u64, rights: Rights) -> Limit {
        let Ok(mut t) = self.table.lock() else {
            return Limit::Full;
        };
        let current = t.get(&(dev, ino)).copied().unwrap_or(self.default);
        if !rights.within(current) {
            return Limit::Widens(current);
        }
        if !t.contains_key(&(dev, ino)) && t.len() >= Self::MAX {
            return Limit::Full;
        }
        t.insert((dev, ino), rights);
        Limit::Narrowed
    }

    /// The most objects one sandbox's table holds.
    pub const MAX: usize = 65536;

    /// Records that the sandbox holds `rights` to the object `(dev, ino)`; false when the
    /// table is full.
    pub fn grant(&self, dev: u64, ino: u64, rights: Rights) -> bool {
        let Ok(mut t) = self.table.lock() else {
            return false;
        };
        if let Some(r) = t.get_mut(&(dev, ino)) {
            *r = r.union(rights);
            return true;
        }
        if t.len() >= Self::MAX {
            return false;
        }
        t.insert((dev, ino), rights);
        true
    }

    /// The rights held to `(dev, ino)`: the table's default if it has never seen it.
    pub fn rights(&self, dev: u64, ino: u64) -> Rights {
        match self.table.lock() {
            Ok(t) => t.get(&(dev, ino)).copied().unwrap_or(self.default),
            Err(_) => Rights::NONE,
        }
    }

    /// Every object the table holds rights to, with them (for `warden inspect`).
    pub fn list(&self) -> Vec<((u64, u64), Rights)> {
        match self.table.lock() {
            Ok(t) => t.iter().map(|(k, v)| (*k, *v)).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// What an object the table has never seen holds.
    pub fn default_rights(&self) -> Rights {
        self.default
    }

    /// How many objects are held.
    pub fn len(&self) -> usize {
        self.table.lock().map_or(0, |t| t.len())
    }

    /// Whether no object is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rights::Right;

    #[test]
    fn rights_add_up_per_object_and_unknown_objects_have_none() {
        let h = Held::default();
        assert!(h.grant(1, 2, Rights::of(&[Right::Read])));
        assert!(h.grant(1, 2, Rights::of(&[Right::Lookup])));
        assert_eq!(h.rights(1, 2), Rights::of(&[Right::Read, Right::Lookup]));
        assert_eq!(h.rights(1, 3), Rights::NONE);
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn a_limited_description_has_its_own_rights_and_its_copies_share_them() {
        use std::os::fd::AsFd;
        let h = Held::with_default(Rights::all());
        let path = std::env::temp_dir().join(format!("warden-held-{}", std::process::id()));
        std::fs::write(&path, b"x").unwrap();
        let a = std::fs::File::open(&path).unwrap();
        let b = std::fs::File::open(&path).unwrap();
        let a_copy = a.try_clone().unwrap();
        let st = rustix::fs::fstat(&a).unwrap();
        let (dev, ino) = (st.st_dev, st.st_ino);
        let read = Rights::of(&[Right::Read]);
        let mine = OwnedFd::from(a.try_clone().unwrap());
        assert_eq!(
            h.limit_description(mine, a.as_fd(), dev, ino, read),
            Limit::Narrowed
        );
        assert_eq!(h.rights_of(a.as_fd(), dev, ino), read);
        assert_eq!(h.rights_of(a_copy.as_fd(), dev, ino), read);
        // Another description of the same file keeps the object's rights.
        assert_eq!(h.rights_of(b.as_fd(), dev, ino), Rights::all());
        // Never widened, and narrowed in place.
        let again = OwnedFd::from(a.try_clone().unwrap());
        assert_eq!(
            h.limit_description(again, a.as_fd(), dev, ino, Rights::all()),
            Limit::Widens(read)
        );
        let again = OwnedFd::from(a.try_clone().unwrap());
        assert_eq!(
            h.limit_description(again, a.as_fd(), dev, ino, Rights::NONE),
            Limit::Narrowed
        );
        assert_eq!(h.rights_of(a.as_fd(), dev, ino), Rights::NONE);
        assert_eq!(h.list_descriptions().len(), 1);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn limits_narrow_and_never_widen() {
        let h = Held::with_default(Rights::all());
        let read = Rights::of(&[Right::Read]);
        let rs = Rights::of(&[Right::Read, Right::Seek]);
        assert_eq!(h.rights(1, 2), Rights::all());
        assert_eq!(h.limit(1, 2, rs), Limit::Narrowed);
        assert_eq!(h.rights(1, 2), rs);
        assert_eq!(h.limit(1, 2, read), Limit::Narrowed);
        assert_eq!(h.limit(1, 2, rs), Limit::Widens(read));
        assert_eq!(h.rights(1, 2), read);
        // Another object is untouched; with no default, nothing can be limited into being.
        assert_eq!(h.rights(1, 3), Rights::all());
        let none = Held::default();
        assert_eq!(none.limit(1, 2, read), Limit::Widens(Rights::NONE));
        assert_eq!(none.limit(1, 2, Rights::NONE), Limit::Narrowed);
    }
}
