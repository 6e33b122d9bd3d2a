//! The paths the program gave the unix sockets the agent bound for it, so that getsockname(2)
//! and getpeername(2) answer them as the kernel would have ([`super::net::socket_name`]).
//!
//! The agent binds a unix socket by its bare name from the directory it walked and checked
//! (`net::unix_address`): binding by the program's path would have the kernel look that path
//! up again, as root, through directories another uid may write, where a symlink swapped in
//! after the check sends the socket anywhere. Resolving the path safely from a root or a mount
//! of the agent's own would need `CAP_SYS_CHROOT` or `CAP_SYS_ADMIN`, which agent workers
//! drop (`confine::privileges`). But the kernel records the string given to bind as the
//! socket's address: the program's getsockname would show the bare name, and a program that
//! hands its listener's name on (Python's `multiprocessing.Manager()`) would have its clients
//! connect to a name that is not there. This table maps the bare name back to the program's
//! path, for the socket bound and for sockets connected to it; everything else is the
//! kernel's own answer.
//!
//! Entries are keyed by the socket's inode and only used while the kernel's name for that
//! socket is still the bare name they were recorded with, so a recycled inode cannot borrow
//! another socket's path. An accepted connection is not seen by the agent (the kernel makes
//! it): its name is the listener's, found by the bare name when one path alone was bound
//! with it. The table is bounded; the oldest entries go first.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// At most this many entries are kept (each at most a sun_path, 108 bytes, twice).
const MAX: usize = 4096;

/// Which end of a socket an entry names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// A socket the agent bound: its own name.
    Bound,
    /// A socket the agent connected to one it bound: its peer's name.
    Peer,
}

#[derive(Debug)]
struct Entry {
    role: Role,
    /// The socket's inode (sockfs).
    sock: u64,
    /// The socket file's device and inode, where it was found after the bind.
    file: Option<(u64, u64)>,
    /// The name the kernel recorded (the last component, no `/`).
    bare: Vec<u8>,
    /// The path the program gave bind, as it gave it.
    path: Vec<u8>,
}

/// The table (see the module).
#[derive(Debug, Default)]
pub struct UnixNames {
    entries: Mutex<VecDeque<Entry>>,
    /// Whether anything was ever recorded: until then every getsockname is the kernel's.
    any: AtomicBool,
}

impl UnixNames {
    /// Whether nothing was recorded yet.
    pub fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Relaxed)
    }

    /// The agent bound socket `sock` by the bare name `bare` for the program's `path`; the
    /// socket file it made is `file` (device, inode).
    pub fn bound(&self, sock: u64, file: Option<(u64, u64)>, bare: &[u8], path: &[u8]) {
        if bare == path {
            // The kernel's name is already the program's.
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        entries.retain(|e| e.sock != sock && !(e.role == Role::Bound && e.path == path));
        push(
            &mut entries,
            Entry {
                role: Role::Bound,
                sock,
                file,
                bare: bare.to_vec(),
                path: path.to_vec(),
            },
        );
        self.any.store(true, Ordering::Relaxed);
    }

    /// The agent connected socket `sock` to the socket file `file` (device, inode): if the
    /// agent bound that one, its peer's name is the program's path.
    pub fn connected(&self, sock: u64, file: (u64, u64)) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let Some(listener) = entries
            .iter()
            .rev()
            .find(|e| e.role == Role::Bound && e.file == Some(file))
        else {
            return;
        };
        let (bare, path) = (listener.bare.clone(), listener.path.clone());
        entries.retain(|e| e.sock != sock);
        push(
            &mut entries,
            Entry {
                role: Role::Peer,
                sock,
                file: Some(file),
                bare,
                path,
            },
        );
    }

    /// The program's path for socket `sock` whose name (its peer's, for `peer`) the kernel
    /// gives as `kernel`; `None`: the kernel's answer is the right one.
    pub fn name(&self, sock: u64, peer: bool, kernel: &[u8]) -> Option<Vec<u8>> {
        if kernel.contains(&b'/') {
            // Not a name the agent bound (it binds bare names only).
            return None;
        }
        let role = if peer { Role::Peer } else { Role::Bound };
        let entries = self.entries.lock().ok()?;
        if let Some(e) = entries
            .iter()
            .find(|e| e.role == role && e.sock == sock && e.bare == kernel)
        {
            return Some(e.path.clone());
        }
        // A connection accepted from a listener the agent bound, or connected to it other
        // than through the agent: the listener's path, if only one was bound by this name.
        let mut paths = entries
            .iter()
            .filter(|e| e.role == Role::Bound && e.bare == kernel)
            .map(|e| &e.path);
        let first = paths.next()?;
        if paths.all(|p| p == first) {
            Some(first.clone())
        } else {
            None
        }
    }
}

fn push(entries: &mut VecDeque<Entry>, entry: Entry) {
    if entries.len() >= MAX {
        entries.pop_front();
    }
    entries.push_back(entry);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_socket_gets_its_path_back_while_its_name_is_the_bare_one() {
        let t = UnixNames::default();
        assert!(t.is_empty());
        t.bound(7, Some((1, 70)), b"s.sock", b"/tmp/d/s.sock");
        assert!(!t.is_empty());
        assert_eq!(t.name(7, false, b"s.sock"), Some(b"/tmp/d/s.sock".to_vec()));
        // Another name: not this entry's (a recycled inode, bound elsewhere since).
        assert_eq!(t.name(7, false, b"other"), None);
        // A full path is the kernel's own answer.
        assert_eq!(t.name(7, false, b"/run/x/s.sock"), None);
    }

    #[test]
    fn peers_and_accepted_connections() {
        let t = UnixNames::default();
        t.bound(7, Some((1, 70)), b"s.sock", b"/tmp/d/s.sock");
        t.connected(8, (1, 70));
        assert_eq!(t.name(8, true, b"s.sock"), Some(b"/tmp/d/s.sock".to_vec()));
        // An accepted socket (inode 9) the agent never saw: by the bare name.
        assert_eq!(t.name(9, false, b"s.sock"), Some(b"/tmp/d/s.sock".to_vec()));
        // A connect to a socket the agent did not bind records nothing.
        t.connected(10, (1, 71));
        assert_eq!(t.name(10, true, b"x"), None);
    }

    #[test]
    fn two_paths_by_one_bare_name_are_told_apart_only_by_socket() {
        let t = UnixNames::default();
        t.bound(7, Some((1, 70)), b"s", b"/a/s");
        t.bound(8, Some((1, 80)), b"s", b"/b/s");
        assert_eq!(t.name(7, false, b"s"), Some(b"/a/s".to_vec()));
        assert_eq!(t.name(8, false, b"s"), Some(b"/b/s".to_vec()));
        t.connected(9, (1, 80));
        assert_eq!(t.name(9, true, b"s"), Some(b"/b/s".to_vec()));
        // Accepted: ambiguous, so the kernel's bare name.
        assert_eq!(t.name(10, false, b"s"), None);
    }

    #[test]
    fn a_bare_name_bound_as_such_needs_nothing() {
        let t = UnixNames::default();
        t.bound(7, None, b"s", b"s");
        assert!(t.is_empty());
        assert_eq!(t.name(7, false, b"s"), None);
    }

    #[test]
    fn bounded() {
        let t = UnixNames::default();
        for i in 0..(MAX as u64 + 10) {
            t.bound(i, None, b"s", format!("/d{i}/s").as_bytes());
        }
        assert_eq!(t.entries.lock().unwrap().len(), MAX);
        assert_eq!(t.name(0, false, b"s"), None);
        assert_eq!(
            t.name(MAX as u64 + 9, false, b"s"),
            Some(format!("/d{}/s", MAX + 9).into_bytes())
        );
    }
}
