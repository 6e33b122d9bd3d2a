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
