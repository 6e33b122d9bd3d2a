//! The rights of the objects a sandbox in capability mode holds descriptors to.
//!
//! Rights are kept per object (device and inode), not per descriptor number: a descriptor keeps
//! its rights through `dup`, `fork`, exec and `SCM_RIGHTS` because they travel with the object,
//! and the agent finds them from a duplicate of the caller's descriptor (`pidfd_getfd`), never
//! from a number the caller could have reused. Two capabilities to one object hold the union of
//! their rights: the sandbox holds both, and could use either.
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
}

impl Held {
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

    /// The rights held to `(dev, ino)`: none if it is not a capability.
    pub fn rights(&self, dev: u64, ino: u64) -> Rights {
        self.table
            .lock()
            .ok()
            .and_then(|t| t.get(&(dev, ino)).copied())
            .unwrap_or(Rights::NONE)
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
}
