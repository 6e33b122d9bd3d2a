//! What the agent may hold for one sandbox, and how many of its requests it serves at once, so
//! that `--mem` bounds the agent's state for the sandbox too (issue 17: "with `--mem` bounding
//! the agent's per-sandbox state too").
//!
//! The memory cgroup cannot count it: the agent's buffers are warden's user-space memory, and
//! the kernel charges a process's pages to the group of the process (warden's), even for the
//! worker threads that join the sandbox's group to charge the kernel objects they make. So
//! every piece of the agent's state for a sandbox has a bound written here, and the one thing
//! that multiplies it, the requests served at once, is chosen from `--mem`: the agent never
//! holds more for a sandbox than the sandbox itself may, and a hostile program gains no memory
//! by making warden hold it.
//!
//! | state | bound |
//! | --- | --- |
//! | one file request | [`FILE_REQUEST`]: two path arguments, a walk (its pending paths, at most one per symlink followed; its stack of directories; its logical paths), an xattr value, the caller's `status`, a log line |
//! | one send (UDP rules only) | [`SEND_REQUEST`]: what `sendmmsg` copies, bounded by `SENDMMSG_MAX` for data, control and addresses together |
//! | one worker | [`WORKER_STACK`] (its stack, set when it starts) and [`ARENA_SLACK`] (what the allocator may keep of a freed request) |
//! | the sandbox | [`GRANTS`] (what `warden inspect` shows, with its registry copies) and the host sockets it holds (`--sockets`, a few words each) |
//!
//! Workers: as many as `--mem` pays for, `(mem - fixed) / per worker`, within
//! [`Pool::LISTENING`](super::pool::Pool::LISTENING) and [`MAX_WORKERS`](super::MAX_WORKERS).
//! Below three workers the pool's design (a request that blocks never leaves the sandbox
//! without a listener) would not hold, so a limit too small for three (under about 6 MiB) gets
//! three, and the report's `agent-mem-bound` says what that allows. The figures are upper bounds taken
//! from the caps in the code (`PATH_MAX`, `MAX_DEPTH`, `MAX_HOPS`, `XATTR_SIZE_MAX`,
//! `SENDMMSG_MAX`, ...): a typical request holds a few KiB.

use super::net;
use super::resolve::{MAX_DEPTH, MAX_HOPS, PATH_MAX};

const KIB: u64 = 1024;

/// `NAME_MAX`: the longest name of one directory on a walk's stack.
const NAME_MAX: u64 = 255;
/// What the allocator adds to a block (glibc: a header, and 16-byte rounding).
const BLOCK: u64 = 32;

/// A walk: the path's and each followed symlink's pending components (one buffer each, at most
/// `MAX_HOPS + 1` of `PATH_MAX`), the directories it holds (a descriptor and a name each, at
/// most `MAX_DEPTH`), and its logical paths (the top's, a child's, one rebuilt, the result).
const WALK: u64 = (MAX_HOPS as u64 + 1) * (PATH_MAX as u64 + BLOCK)
    + MAX_DEPTH as u64 * (32 + NAME_MAX + BLOCK)
    + 4 * PATH_MAX as u64;

/// One delegated file call: two copied paths (rename, link, symlink), two walks alive at once
/// (the old name's result is held while the new one is walked: a walk's result is a logical
/// path and a name), an xattr value or buffer (`XATTR_SIZE_MAX`), the caller's `/proc/<tid>/status`
/// (read up to 64 KiB) and a decision-log line (a few paths).
pub const FILE_REQUEST: u64 = 2 * PATH_MAX as u64
    + WALK
    + (PATH_MAX as u64 + NAME_MAX)
    + 64 * KIB
    + 64 * KIB
    + 4 * PATH_MAX as u64;

/// One delegated send (only with UDP rules): `SENDMMSG_MAX` of data, control and addresses, the
/// last message's control and address past it, a message's iovec array, the bookkeeping of
/// `IOV_MAX` messages, and the caller's `status`.
pub const SEND_REQUEST: u64 = net::SENDMMSG_MAX as u64
    + net::CONTROL_MAX as u64
    + net::SOCKADDR_MAX as u64
    + 16 * net::IOV_MAX as u64
    + net::IOV_MAX as u64 * 128
    + 64 * KIB;

/// A worker's stack (the agent sets it when it starts a worker).
pub const WORKER_STACK: usize = 256 * 1024;

/// What a worker's allocator arena may keep of a request's freed memory before it gives it
/// back (glibc's `M_TRIM_THRESHOLD`).
pub const ARENA_SLACK: u64 = 128 * KIB;

/// `warden inspect`'s table of descriptors handed out: its paths (`MAX_GRANT_BYTES`) and
/// entries (`MAX_GRANTS`), and the copies the registry makes of them every second (a list, and
/// its JSON with every path escaped at worst six bytes for one).
pub const GRANTS: u64 = crate::registry::MAX_GRANT_BYTES as u64 * (1 + 1 + 6)
    + crate::registry::MAX_GRANTS as u64 * (64 + 80 + 64);

/// One host socket the sandbox holds, in the agent's table of them (an inode in a hash set).
const HELD_SOCKET: u64 = 32;

/// The agent's bounds for one sandbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// Requests served at once (worker threads).
    pub workers: usize,
    /// The most the agent's state for the sandbox takes, bytes: `fixed + workers * per_worker`.
    pub bound: u64,
}

/// The most one worker holds: its stack, its arena's slack and its request.
pub fn per_worker(udp: bool) -> u64 {
    let request = if udp {
        FILE_REQUEST.max(SEND_REQUEST)
    } else {
        FILE_REQUEST
    };
    WORKER_STACK as u64 + ARENA_SLACK + request
}

/// What the agent holds for a sandbox whatever its requests: the table of descriptors handed
/// out, and of the `sockets` host sockets it may hold.
pub fn fixed(sockets: u64) -> u64 {
    GRANTS.saturating_add(sockets.saturating_mul(HELD_SOCKET))
}

/// The workers a sandbox gets under the memory limit `mem` (bytes; `None`: no limit), with
/// UDP rules (`udp`) or not, holding at most `sockets` host sockets.
pub fn for_sandbox(mem: Option<u64>, udp: bool, sockets: u64) -> Budget {
    let (fixed, each) = (fixed(sockets), per_worker(udp));
    let most = super::MAX_WORKERS;
    let least = super::pool::Pool::LISTENING;
    let workers = match mem {
        None => most,
        Some(mem) => {
            let paid = mem.saturating_sub(fixed) / each;
            usize::try_from(paid).unwrap_or(most).clamp(least, most)
        }
    };
    Budget {
        workers,
        bound: fixed.saturating_add(workers as u64 * each),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const MIB: u64 = 1024 * 1024;

    #[test]
    fn the_agent_holds_no_more_than_the_limit_pays_for() {
        for udp in [false, true] {
            let mut last = 0;
            for mib in [1, 3, 4, 8, 16, 32, 64, 100, 128, 256, 1024, 1 << 20] {
                let b = for_sandbox(Some(mib * MIB), udp, 4096);
                assert!(b.workers >= last, "more memory, fewer workers at {mib} MiB");
                last = b.workers;
                assert!((3..=64).contains(&b.workers), "{b:?}");
                if b.workers > 3 {
                    assert!(b.bound <= mib * MIB, "{mib} MiB: {b:?}");
                }
            }
            assert_eq!(for_sandbox(None, udp, 4096).workers, 64);
            // Every byte of the limit spent on a table of sockets: the pool's least.
            assert_eq!(for_sandbox(Some(64 * MIB), udp, u64::MAX).workers, 3);
        }
        // What a judge's limits give (file calls only): a dozen requests at once at 16 MiB,
        // a few dozen at 32 MiB, the whole pool from 64 MiB, and the pool's least under 6 MiB.
        assert!((10..20).contains(&for_sandbox(Some(16 * MIB), false, 4096).workers));
        assert!((30..50).contains(&for_sandbox(Some(32 * MIB), false, 4096).workers));
        assert_eq!(for_sandbox(Some(64 * MIB), false, 4096).workers, 64);
        assert_eq!(for_sandbox(Some(4 * MIB), false, 4096).workers, 3);
        // A send copies more than a file call: UDP rules get fewer workers for the same limit.
        assert!(
            for_sandbox(Some(32 * MIB), true, 4096).workers
                < for_sandbox(Some(32 * MIB), false, 4096).workers
        );
    }

    #[test]
    fn the_bounds_cover_the_caps_they_come_from() {
        // A walk holds a pending path per symlink followed, each up to PATH_MAX.
        assert!(WALK >= (MAX_HOPS as u64 + 1) * PATH_MAX as u64);
        // A send holds what sendmmsg copies.
        assert!(SEND_REQUEST >= net::SENDMMSG_MAX as u64 + net::CONTROL_MAX as u64);
        // Both fit in a few MiB: the figures docs/design.md gives.
        assert!(
            FILE_REQUEST < MIB && per_worker(false) < MIB,
            "{FILE_REQUEST}"
        );
        assert!(per_worker(true) < 2 * MIB);
    }
}
