//! The agent's privileges: what a worker thread keeps of warden's own capabilities while it
//! performs calls for the sandbox (design: "the agent is a deputy, not a superuser").
//!
//! A root warden holds every capability of the host. Whatever the agent performs for the
//! program is checked by the kernel against the *agent's* credentials, so without this a
//! delegated `setxattr("security.capability")` leaves a file with capabilities behind
//! (`CAP_SETFCAP`), `trusted.*` attributes are set (`CAP_SYS_ADMIN`), a socket's control
//! messages carry `SO_MARK` or source routes (`CAP_NET_ADMIN`, `CAP_NET_RAW`), and devices open
//! with `CAP_SYS_RAWIO`. Capabilities are per thread in Linux, so each agent worker drops them
//! for itself when it starts ([`confine_agent_thread`]); warden's main thread keeps what it needs
//! to set up and tear down the sandbox, and nothing it does acts on the sandbox's requests.
//!
//! What a worker keeps, and why (which call uses which, and why, is written call by call in the
//! syscall table, `Entry::agent`, printed by `warden check --syscalls`; a test here checks that
//! the table's calls use exactly this set together):
//!
//! | capability | why the agent needs it |
//! | --- | --- |
//! | `CAP_DAC_OVERRIDE` | a root warden opens, creates and removes what the policy allows whoever owns it, as the program's root would on the host |
//! | `CAP_FOWNER` | chmod, utimes and xattrs (`user.*` only) on files the policy lets the program write but root does not own |
//! | `CAP_CHOWN` | chown to the ids mapped into the sandbox |
//! | `CAP_FSETID` | the set-group-ID bit of directories survives a chmod by the agent |
//! | `CAP_NET_BIND_SERVICE` | a `net-allow incoming` rule for a port below 1024 |
//!
//! Everything else goes, among them `CAP_SETFCAP`, `CAP_SYS_ADMIN`, `CAP_LINUX_IMMUTABLE`,
//! `CAP_LEASE`, `CAP_MKNOD`, `CAP_SYS_RAWIO`, `CAP_DAC_READ_SEARCH`, `CAP_NET_ADMIN`,
//! `CAP_NET_RAW`, `CAP_SYSLOG`, `CAP_SYS_PTRACE` and `CAP_KILL`. Reading a client's memory and
//! duplicating its descriptors need no capability: warden owns the sandbox's user namespace,
//! and the owner of a namespace has every capability inside it.

use rustix::thread::{CapabilitySet, CapabilitySets};
use std::io;

/// The capabilities an agent worker keeps (see the module's table).
pub const AGENT_KEEPS: CapabilitySet = CapabilitySet::DAC_OVERRIDE
    .union(CapabilitySet::FOWNER)
    .union(CapabilitySet::CHOWN)
    .union(CapabilitySet::FSETID)
    .union(CapabilitySet::NET_BIND_SERVICE);

/// Drops, for the calling thread only, every capability but [`AGENT_KEEPS`] from its effective
/// and permitted sets, and empties its inheritable set (which empties the ambient set too).
/// Dropped from the permitted set, they cannot come back to this thread.
pub fn confine_agent_thread() -> io::Result<()> {
    let have = rustix::thread::capabilities(None)?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: have.effective & AGENT_KEEPS,
            permitted: have.permitted & AGENT_KEEPS,
            inheritable: CapabilitySet::empty(),
        },
    )?;
    Ok(())
}

/// Drops every capability of the calling process for good, before the program runs: the
/// effective, permitted, inheritable, ambient and bounding sets are emptied, and the securebits
/// that would give root's capabilities back at `execve` or on a uid change are set and locked.
/// The program needs none of them (the agent performs what needs privilege), and each one it
/// held in its namespaces would be kernel attack surface (netfilter, mounts, namespaces' keys).
/// Runs in the program's process while it still holds `CAP_SETPCAP` in its user namespace, and
/// before its seccomp filter, which refuses these calls.
///
/// `switch_ids` (the policy's `map-ids`) keeps exactly `CAP_SETUID` and `CAP_SETGID` in the
/// sandbox's user namespace, in the ambient set so that they survive `execve` (the securebits
/// still give root nothing there), for a daemon that switches its workers to the mapped ids.
/// The kernel's set-uid fixup stays on (and locked so): a process whose ids all become non-zero
/// loses both, so a worker cannot switch back. They reach only the ids the namespace maps: the
/// starting ids and the range, which no user of the host has (`namespaces::check_range`).
pub fn drop_all_for_program(switch_ids: bool) -> io::Result<()> {
    use rustix::thread::CapabilitiesSecureBits as Bits;
    let keep = if switch_ids {
        SWITCH_IDS
    } else {
        CapabilitySet::empty()
    };
    let fixup = if switch_ids {
        Bits::NO_SETUID_FIXUP_LOCKED
    } else {
        Bits::NO_SETUID_FIXUP | Bits::NO_SETUID_FIXUP_LOCKED
    };
    let ambient = if switch_ids {
        Bits::NO_CAP_AMBIENT_RAISE_LOCKED
    } else {
        Bits::NO_CAP_AMBIENT_RAISE | Bits::NO_CAP_AMBIENT_RAISE_LOCKED
    };
    rustix::thread::set_capabilities_secure_bits(
        Bits::NO_ROOT | Bits::NO_ROOT_LOCKED | fixup | Bits::KEEP_CAPS_LOCKED | ambient,
    )?;
    for cap in CapabilitySet::all().iter() {
        if keep.contains(cap) {
            continue;
        }
        match rustix::thread::remove_capability_from_bounding_set(cap) {
            // A capability this kernel does not know.
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(e) => return Err(e.into()),
        }
    }
    rustix::thread::clear_ambient_capability_set()?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: keep,
            permitted: keep,
            inheritable: keep,
        },
    )?;
    for cap in keep.iter() {
        rustix::thread::configure_capability_in_ambient_set(cap, true)?;
    }
    Ok(())
}

/// What a program of a policy with `map-ids` keeps (see [`drop_all_for_program`]).
pub const SWITCH_IDS: CapabilitySet = CapabilitySet::SETUID.union(CapabilitySet::SETGID);

/// The calling thread's effective and permitted capabilities (for tests and `inspect`).
pub fn current() -> io::Result<(CapabilitySet, CapabilitySet)> {
    let have = rustix::thread::capabilities(None)?;
    Ok((have.effective, have.permitted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syscalls::{Caps, TABLE};

    /// A set of capabilities as the syscall table writes them (the kernel's bit numbers, as
    /// `CapabilitySet`'s).
    fn capability_set(caps: Caps) -> CapabilitySet {
        CapabilitySet::from_bits_retain(caps.bits())
    }

    /// The table's capability names are the kernel's: each is the `CapabilitySet` of its name.
    #[test]
    fn the_tables_capabilities_are_the_kernels() {
        for (caps, name) in Caps::NAMED {
            let set = capability_set(caps);
            let expected = match name {
                "CAP_CHOWN" => CapabilitySet::CHOWN,
                "CAP_DAC_OVERRIDE" => CapabilitySet::DAC_OVERRIDE,
                "CAP_FOWNER" => CapabilitySet::FOWNER,
                "CAP_FSETID" => CapabilitySet::FSETID,
                "CAP_NET_BIND_SERVICE" => CapabilitySet::NET_BIND_SERVICE,
                other => panic!("unknown capability {other}"),
            };
            assert_eq!(set, expected, "{name}");
        }
    }

    /// Every capability a worker keeps is used by some call of the table, and no call uses one
    /// it does not keep: the per-call table and the kept set say the same thing.
    #[test]
    fn the_calls_of_the_table_use_exactly_what_a_worker_keeps() {
        let mut used = CapabilitySet::empty();
        for e in TABLE {
            if let Some(p) = e.agent {
                let caps = capability_set(p.caps);
                assert!(
                    AGENT_KEEPS.contains(caps),
                    "{} uses {:?}, which a worker does not keep",
                    e.name(),
                    caps - AGENT_KEEPS
                );
                used |= caps;
            }
        }
        assert_eq!(
            used,
            AGENT_KEEPS,
            "kept but used by no call: {:?}",
            AGENT_KEEPS - used
        );
    }

    /// A thread that confines itself keeps at most the table's capabilities, and its siblings
    /// (warden's main thread) are untouched.
    #[test]
    fn a_confined_thread_keeps_only_the_agents_capabilities() {
        let before = current().unwrap();
        let inside = std::thread::spawn(|| {
            confine_agent_thread().unwrap();
            current().unwrap()
        })
        .join()
        .unwrap();
        assert!(AGENT_KEEPS.contains(inside.0), "{:?}", inside.0);
        assert!(AGENT_KEEPS.contains(inside.1), "{:?}", inside.1);
        assert!(!inside.1.contains(CapabilitySet::SETFCAP));
        assert!(!inside.1.contains(CapabilitySet::SYS_ADMIN));
        assert_eq!(
            current().unwrap(),
            before,
            "the main thread lost capabilities"
        );
        if rustix::process::geteuid().is_root() {
            assert_eq!(inside.1, AGENT_KEEPS & before.1);
        }
    }
}
