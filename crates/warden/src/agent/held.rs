//! The sockets a sandbox holds in the host's network, bounded (`limit-sockets`, issue 18).
//!
//! Every inet socket of a sandbox with `net-allow` IP rules is made (or accepted) by the agent
//! in warden's network namespace, so each one takes a port or a connection from the host's
//! tables: a program that binds 28,000 sockets to port 0 leaves the host no ephemeral port
//! until it exits. The agent records the inode of each socket it hands over and refuses a new
//! one (`EMFILE`, as at a descriptor limit) while the sandbox holds the limit's worth.
//!
//! The sandbox closes its sockets without the agent seeing it, so the count is made true again
//! only when it reaches the limit: the agent then keeps just the inodes that some process of
//! the sandbox's PID namespace still holds (`/proc/PID/fd`). That walk costs the agent CPU,
//! which is counted in the sandbox's time.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The sockets handed over and still believed open.
pub struct Held {
    max: u64,
    inodes: Mutex<HashSet<u64>>,
    peak: AtomicU64,
}

impl Held {
    /// A table bounded by `max` sockets at once.
    pub fn new(max: u64) -> Held {
        Held {
            max,
            inodes: Mutex::new(HashSet::new()),
            peak: AtomicU64::new(0),
        }
    }

    /// The limit.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// The most sockets held at once so far (for the report).
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    /// Records the socket `inode` about to be handed over, unless the sandbox already holds
    /// the limit's worth: `live` answers which inodes it still holds (called only at the limit).
    pub fn admit(&self, inode: u64, live: impl FnOnce() -> HashSet<u64>) -> bool {
        let Ok(mut held) = self.inodes.lock() else {
            return false;
        };
        if held.len() as u64 >= self.max {
            let still = live();
            held.retain(|i| still.contains(i));
        }
        if held.len() as u64 >= self.max {
            return false;
        }
        held.insert(inode);
        self.peak.fetch_max(held.len() as u64, Ordering::Relaxed);
        true
    }
}

/// The socket inodes the processes of the PID namespace `ns` (device, inode of
/// `/proc/PID/ns/pid`) hold open, read from `/proc/PID/fd`.
pub fn held_in_namespace(ns: (u64, u64)) -> HashSet<u64> {
    let mut out = HashSet::new();
    for pid in crate::sys::process::pids_in_namespace(ns) {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Some(inode) = std::fs::read_link(fd.path())
                .ok()
                .and_then(|t| socket_inode(t.to_str()?))
            {
                out.insert(inode);
            }
        }
    }
    out
}

/// The inode in a descriptor link's text `socket:[N]`.
fn socket_inode(text: &str) -> Option<u64> {
    text.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_holds_and_closed_sockets_make_room() {
        let held = Held::new(2);
        assert!(held.admit(1, HashSet::new));
        assert!(held.admit(2, HashSet::new));
        // At the limit, and both still open: refused.
        assert!(!held.admit(3, || HashSet::from([1, 2])));
        // One was closed meanwhile: room again.
        assert!(held.admit(3, || HashSet::from([2])));
        assert_eq!(held.peak(), 2);
        assert!(!held.admit(4, || HashSet::from([2, 3])));
    }

    #[test]
    fn socket_links_name_inodes() {
        assert_eq!(socket_inode("socket:[12345]"), Some(12345));
        assert_eq!(socket_inode("pipe:[1]"), None);
        assert_eq!(socket_inode("/dev/null"), None);
    }

    #[test]
    fn this_process_holds_its_sockets() {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let ino = {
            use std::os::fd::AsFd;
            rustix::fs::fstat(s.as_fd()).unwrap().st_ino
        };
        let st = rustix::fs::stat("/proc/self/ns/pid").unwrap();
        assert!(held_in_namespace((st.st_dev, st.st_ino)).contains(&ino));
    }
}
