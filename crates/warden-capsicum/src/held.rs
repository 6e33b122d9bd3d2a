//! The rights of the objects a sandbox in capability mode holds descriptors to.
//!
//! Rights are kept per object (device and inode), not per descriptor number: a descriptor keeps
//! its rights through `dup`, `fork`, exec and `SCM_RIGHTS` because they travel with the object,
//! and the agent finds them from a duplicate of the caller's descriptor (`pidfd_getfd`), never
//! from a number the caller could have reused. Two capabilities to one object hold the union of
//! their rights: the sandbox holds both, and could use either.
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
use std::sync::Mutex;

/// The rights of every object a sandbox holds a capability to.
#[derive(Debug, Default)]
pub struct Held {
    table: Mutex<HashMap<(u64, u64), Rights>>,
    /// What an object not in the table holds.
    default: Rights,
}

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
