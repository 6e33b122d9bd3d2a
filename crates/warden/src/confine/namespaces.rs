//! The namespaces a sandbox lives in, and the user-namespace id maps that give it
//! `starting_uid`/`starting_gid`.
//!
//! Every sandbox gets a user namespace (so even when warden runs as root the program's
//! capabilities stop at its own namespaces), a PID namespace (it sees and signals only its own
//! processes, and they all die with its init), IPC and UTS namespaces (no host SysV objects,
//! message queues or hostname), and a network namespace with only a loopback interface (no
//! network unless a later policy delegates it).

use std::io;

/// Flags for the `clone` that creates the sandbox's init.
pub const SANDBOX_NAMESPACES: u64 = (libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWNET) as u64;

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
}

impl IdMap {
    /// The id the program sees for an owner the agent sees (`stat` results): the mapped id,
    /// or the kernel's overflow id (65534) for everything a single-id map leaves out.
    pub fn uid_inside(&self, outside: u32) -> u32 {
        match () {
            _ if self.identity => outside,
            _ if outside == self.outside_uid => self.inside_uid,
            _ => OVERFLOW_ID,
        }
    }

    /// As [`IdMap::uid_inside`], for groups.
    pub fn gid_inside(&self, outside: u32) -> u32 {
        match () {
            _ if self.identity => outside,
            _ if outside == self.outside_gid => self.inside_gid,
            _ => OVERFLOW_ID,
        }
    }

    /// The id the agent uses for an id the program names (`chown`), `None` for -1 ("keep").
    pub fn uid_outside(&self, inside: u32) -> Result<Option<u32>, i32> {
        map_in(inside, self.identity, self.inside_uid, self.outside_uid)
    }

    /// As [`IdMap::uid_outside`], for groups.
    pub fn gid_outside(&self, inside: u32) -> Result<Option<u32>, i32> {
        map_in(inside, self.identity, self.inside_gid, self.outside_gid)
    }
}

/// The kernel's default overflow uid/gid (`/proc/sys/kernel/overflowuid`).
const OVERFLOW_ID: u32 = 65534;

fn map_in(
    inside: u32,
    identity: bool,
    map_inside: u32,
    map_outside: u32,
) -> Result<Option<u32>, i32> {
    match inside {
        u32::MAX => Ok(None),
        id if identity => Ok(Some(id)),
        id if id == map_inside => Ok(Some(map_outside)),
        // The kernel answers EINVAL for an id the namespace does not map.
        _ => Err(libc::EINVAL),
    }
}

/// Writes the single-id maps of process `pid`'s user namespace. Runs in the parent, while the
/// child waits. `setgroups` is denied first, as the kernel requires for an unprivileged writer
/// and as is wise anyway: a program must not drop groups to escape a negative group permission.
pub fn write_id_maps(pid: i32, map: IdMap) -> io::Result<()> {
    let base = format!("/proc/{pid}");
    std::fs::write(format!("{base}/setgroups"), "deny")?;
    std::fs::write(
        format!("{base}/gid_map"),
        format!("{} {} 1\n", map.inside_gid, map.outside_gid),
    )?;
    std::fs::write(
        format!("{base}/uid_map"),
        format!("{} {} 1\n", map.inside_uid, map.outside_uid),
    )?;
    Ok(())
}
