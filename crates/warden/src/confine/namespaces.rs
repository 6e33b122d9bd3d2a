//! The namespaces a sandbox lives in, and the user-namespace id maps that give it
//! `starting_uid`/`starting_gid`.
//!
//! Every sandbox gets a user namespace (so even when warden runs as root the program's
//! capabilities stop at its own namespaces), a PID namespace (it sees and signals only its own
//! processes, and they all die with its init), IPC and UTS namespaces (no host SysV objects,
//! message queues or hostname), and a network namespace with only a loopback interface (no
//! network unless a later policy delegates it).
//!
//! The network namespace is not made by the `clone`: making one is the dearest step of a start
//! (about 400 µs here, in the kernel's per-namespace setup), so the program's process makes it
//! itself (`unshare`), first thing, while init builds the view (`crate::launch`). Everything
//! the sandbox runs descends from that process and shares its namespace; init, which runs
//! nothing and holds no socket but its channel to warden, stays in warden's.

use std::io;
use warden_policy::IdRange;

/// Flags for the `clone` that creates the sandbox's init.
pub const SANDBOX_NAMESPACES: u64 =
    (libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS) as u64;

/// Ids inside and outside the sandbox's user namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdMap {
    /// The program's uid as it sees it.
    pub inside_uid: u32,
    /// The uid the kernel and the agent use for it outside.
    pub outside_uid: u32,
    /// The program's gid as it sees it.
    pub inside_gid: u32,
    /// The gid outside.
    pub outside_gid: u32,
    /// Map every id to itself (warden runs as root): inside and outside ids are the same, and
    /// the sandbox switches to the starting ids itself. Otherwise a single id is mapped, the
    /// only map an unprivileged user may write.
    pub identity: bool,
    /// `map-ids`: more ids, the same for users and groups (only when warden is root, which may
    /// write a map of several lines; an unprivileged user needs the setuid helpers
    /// newuidmap/newgidmap for that, and warden uses no setuid helper).
    pub range: Option<IdRange>,
}

impl IdMap {
    /// The id the program sees for an owner the agent sees (`stat` results): the mapped id,
    /// or the kernel's overflow id (65534) for everything a single-id map leaves out.
    pub fn uid_inside(&self, outside: u32) -> u32 {
        if outside == self.outside_uid {
            self.inside_uid
        } else if let Some(id) = range_inside(self.range, outside) {
            id
        } else if self.identity {
            outside
        } else {
            OVERFLOW_ID
        }
    }

    /// As [`IdMap::uid_inside`], for groups.
    pub fn gid_inside(&self, outside: u32) -> u32 {
        if outside == self.outside_gid {
            self.inside_gid
        } else if let Some(id) = range_inside(self.range, outside) {
            id
        } else if self.identity {
            outside
        } else {
            OVERFLOW_ID
        }
    }

    /// The id the agent uses for an id the program names (`chown`), `None` for -1 ("keep").
    pub fn uid_outside(&self, inside: u32) -> Result<Option<u32>, i32> {
        map_in(inside, self, self.inside_uid, self.outside_uid)
    }

    /// As [`IdMap::uid_outside`], for groups.
    pub fn gid_outside(&self, inside: u32) -> Result<Option<u32>, i32> {
        map_in(inside, self, self.inside_gid, self.outside_gid)
    }
}

/// The kernel's default overflow uid/gid (`/proc/sys/kernel/overflowuid`).
const OVERFLOW_ID: u32 = 65534;

/// The inside id of `outside` when `range` maps it.
fn range_inside(range: Option<IdRange>, outside: u32) -> Option<u32> {
    let r = range?;
    (outside >= r.outside && outside - r.outside < r.count)
        .then(|| r.inside + (outside - r.outside))
}

fn map_in(inside: u32, map: &IdMap, map_inside: u32, map_outside: u32) -> Result<Option<u32>, i32> {
    let ranged = map.range.and_then(|r| {
        (inside >= r.inside && inside - r.inside < r.count).then(|| r.outside + (inside - r.inside))
    });
    match inside {
        u32::MAX => Ok(None),
        id if id == map_inside => Ok(Some(map_outside)),
        _ if ranged.is_some() => Ok(ranged),
        id if map.identity => Ok(Some(id)),
        // The kernel answers EINVAL for an id the namespace does not map.
        _ => Err(libc::EINVAL),
    }
}

/// Writes the single-id maps of process `pid`'s user namespace. Runs in the parent, while the
/// child waits. `setgroups` is denied first, as the kernel requires for an unprivileged writer
/// and as is wise anyway: a program must not drop groups to escape a negative group permission.
///
/// With `map-ids` (root only) the range is a second line of each map, and `setgroups` stays
/// allowed: a daemon's worker calls `initgroups` when it switches to its user, and fails
/// without it. The groups it can then drop are warden's own supplementary groups.
pub fn write_id_maps(pid: i32, map: IdMap) -> io::Result<()> {
    let base = format!("/proc/{pid}");
    let setgroups = if map.range.is_some() { "allow" } else { "deny" };
    std::fs::write(format!("{base}/setgroups"), setgroups)?;
    let extra = map.range.map_or_else(String::new, |r| {
        format!("{} {} {}\n", r.inside, r.outside, r.count)
    });
    std::fs::write(
        format!("{base}/gid_map"),
        format!("{} {} 1\n{extra}", map.inside_gid, map.outside_gid),
    )?;
    std::fs::write(
        format!("{base}/uid_map"),
        format!("{} {} 1\n{extra}", map.inside_uid, map.outside_uid),
    )?;
    Ok(())
}

/// Why `range` cannot be mapped: it overlaps the starting ids inside, or holds an id outside
/// that a user (`passwd`, the text of /etc/passwd) or a group (`group`, /etc/group) of this host
/// has, which the sandbox could then act as.
pub fn check_range(map: &IdMap, range: IdRange, passwd: &str, group: &str) -> Result<(), String> {
    let inside = |id: u32| id >= range.inside && id - range.inside < range.count;
    let outside = |id: u32| id >= range.outside && id - range.outside < range.count;
    if inside(map.inside_uid) || inside(map.inside_gid) {
        return Err(format!(
            "map-ids {} {} {}: the range inside holds the starting ids ({} {})",
            range.inside, range.outside, range.count, map.inside_uid, map.inside_gid
        ));
    }
    for (text, what) in [(passwd, "user"), (group, "group")] {
        for line in text.lines() {
            let mut fields = line.split(':');
            let (Some(name), Some(id)) = (fields.next(), fields.nth(1)) else {
                continue;
            };
            if let Ok(id) = id.parse::<u32>() {
                if outside(id) {
                    return Err(format!(
                        "map-ids {} {} {}: outside id {id} is the {what} {name} of this host;                          map ids no user or group has (a subordinate range such as                          `map-ids 1 100001 65535`)",
                        range.inside, range.outside, range.count
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod range_tests {
    use super::*;

    fn root_with(range: Option<IdRange>) -> IdMap {
        IdMap {
            inside_uid: 0,
            outside_uid: 0,
            inside_gid: 0,
            outside_gid: 0,
            identity: true,
            range,
        }
    }

    const RANGE: IdRange = IdRange {
        inside: 1,
        outside: 100_001,
        count: 65_535,
    };

    #[test]
    fn a_range_maps_both_ways_and_comes_before_identity() {
        let m = root_with(Some(RANGE));
        assert_eq!(m.uid_inside(165_534), 65_534);
        assert_eq!(m.gid_inside(100_001), 1);
        assert_eq!(m.uid_inside(0), 0);
        assert_eq!(m.uid_outside(65_534), Ok(Some(165_534)));
        assert_eq!(m.gid_outside(0), Ok(Some(0)));
        assert_eq!(m.uid_outside(u32::MAX), Ok(None));
        let single = IdMap {
            identity: false,
            ..m
        };
        assert_eq!(single.uid_outside(65_536), Err(libc::EINVAL));
        assert_eq!(single.uid_inside(5), OVERFLOW_ID);
    }

    #[test]
    fn a_range_must_hold_no_host_id_nor_the_starting_ones() {
        let m = root_with(None);
        let passwd = "root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n";
        let group = "root:x:0:\nnogroup:x:65534:\n";
        assert_eq!(check_range(&m, RANGE, passwd, group), Ok(()));
        let e = check_range(
            &m,
            IdRange {
                outside: 1,
                ..RANGE
            },
            passwd,
            group,
        )
        .unwrap_err();
        assert!(e.contains("the user nobody"), "{e}");
        let e = check_range(
            &m,
            IdRange {
                outside: 65_534,
                count: 1,
                ..RANGE
            },
            "",
            group,
        )
        .unwrap_err();
        assert!(e.contains("the group nogroup"), "{e}");
        let e = check_range(&m, IdRange { inside: 0, ..RANGE }, "", "").unwrap_err();
        assert!(e.contains("starting ids"), "{e}");
    }
}
