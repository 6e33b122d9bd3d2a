//! The relative walks' starting directories the resolver has already walked to, by (device,
//! inode, mount id), so that a program working in one directory does not have its cwd walked
//! again on every call ([`super::Resolver::fast_start`]).
//!
//! An entry says: the kernel's walk of this logical path from the root, refusing symlinks and
//! mount crossings, reached the directory with this identity, and every directory on the way
//! was one the policy lets a walk enter. It is used only for a base the agent holds (the
//! caller's cwd or dirfd, an `O_PATH` descriptor of the real object) whose identity is the
//! entry's *and* whose path, as the kernel names it now, is the entry's path, never by name
//! alone:
//!
//! - the kernel's name for a directory (`/proc/self/fd/N`) is built from its current parents:
//!   when the name is the entry's, the directory sits at that path now; a rename of it or of
//!   any directory above it makes the names differ, and the walk is taken again;
//! - a mount or unmount anywhere in the agent's mount namespace could put another directory at
//!   that path with nothing renamed: the agent watches its mount table (`poll` on
//!   `/proc/thread-self/mountinfo` reports every change once) and forgets every entry when it
//!   changes, and an entry walked before a change the agent saw is never kept (generations).
//!
//! Only for walks from the agent's own root, in the agent's mount namespace (`--view off`, the
//! delegated path): a view's mounts are another namespace's, which this watch does not see.

use rustix::event::{PollFd, PollFlags};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::Mutex;

/// Most entries kept; past it the table starts again empty.
const MOST: usize = 256;

/// A base directory's identity: device, inode and mount id.
pub type Identity = (u64, u64, u64);

/// The table.
pub struct Bases {
    /// The mount table of the thread that made the resolver (the agent: the process's), polled
    /// for changes.
    mounts: OwnedFd,
    state: Mutex<State>,
}

struct State {
    /// Counts the mount table's changes seen.
    generation: u64,
    entries: HashMap<Identity, Box<[u8]>>,
}

/// What a look-up found: a base walked before, or the generation to record a new walk under.
pub enum Lookup {
    /// The base is at that path, walked before under the same mount table.
    Known,
    /// Walk it; [`Bases::record`] keeps the walk if the mount table has not changed since.
    Unknown(u64),
}

impl Bases {
    /// A table watching the agent's mount table; `None` when it cannot be watched (no entry is
    /// ever kept then).
    pub fn new() -> Option<Bases> {
        let mounts = rustix::fs::open(
            "/proc/thread-self/mountinfo",
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .ok()?;
        let bases = Bases {
            mounts,
            state: Mutex::new(State {
                generation: 0,
                entries: HashMap::new(),
            }),
        };
        // Whatever it may report already is before any entry.
        bases.mounts_changed();
        Some(bases)
    }

    /// Whether the mount table changed since the last call (on any error: yes).
    fn mounts_changed(&self) -> bool {
        let mut fds = [PollFd::new(&self.mounts, PollFlags::PRI)];
        let zero = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        match rustix::event::poll(&mut fds, Some(&zero)) {
            Ok(0) => false,
            Ok(_) | Err(_) => true,
        }
    }

    /// The state, brought up to date with the mount table: forgotten if it changed.
    fn current(&self) -> Option<std::sync::MutexGuard<'_, State>> {
        let mut state = self.state.lock().ok()?;
        if self.mounts_changed() {
            state.generation += 1;
            state.entries.clear();
        }
        Some(state)
    }

    /// Whether the base `id`, which the kernel names `path` now, was walked to by that path.
    pub fn lookup(&self, id: Identity, path: &[u8]) -> Lookup {
        let Some(state) = self.current() else {
            return Lookup::Unknown(u64::MAX);
        };
        match state.entries.get(&id) {
            Some(known) if **known == *path => Lookup::Known,
            _ => Lookup::Unknown(state.generation),
        }
    }

    /// Keeps a walk of `path` to the base `id` made after [`Bases::lookup`] answered
    /// `Unknown(generation)`, unless the mount table changed since.
    pub fn record(&self, id: Identity, path: &[u8], generation: u64) {
        let Some(mut state) = self.current() else {
            return;
        };
        if state.generation != generation {
            return;
        }
        if state.entries.len() >= MOST {
            state.entries.clear();
        }
        state.entries.insert(id, path.into());
    }
}
