//! The seccomp filter warden installs: the program `warden-filter` compiles from its table for a
//! profile, compiled by `build.rs` for every profile when warden is built, so that starting a
//! sandbox does not wait for libseccomp.

use crate::sys::seccomp::Instruction;
use crate::syscalls::Profile;

mod generated {
    use super::{Instruction, Profile};
    include!(concat!(env!("OUT_DIR"), "/filters.rs"));
}

/// The BPF program for `profile`.
pub fn program(profile: Profile) -> &'static [Instruction] {
    generated::PROGRAMS[profile.index()]
}

/// The second program, stacked on [`program`]'s: argument values refused whatever the profile
/// (`warden_filter::syscalls::ARGUMENT_DENIALS`).
pub fn argument_denials() -> &'static [Instruction] {
    generated::ARGUMENT_DENIALS
}

/// The program `warden run --wx` stacks as well: `shmat(SHM_EXEC)` refused
/// (`warden_filter::compile_wx_denials`).
pub fn wx_denials() -> &'static [Instruction] {
    generated::WX_DENIALS
}

/// The program a sandbox without namespaces stacks as well
/// (`warden_filter::compile_hostns_denials`): priorities, limits and scheduling of other
/// processes, System V IPC and message queues refused, and with a `private` network (no net
/// rule) every socket family but unix and netlink.
pub fn hostns_denials(private: bool) -> &'static [Instruction] {
    if private {
        generated::HOSTNS_DENIALS_PRIVATE
    } else {
        generated::HOSTNS_DENIALS_NET
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_hostns_denials_match_a_fresh_compile() {
        for private in [true, false] {
            let fresh = warden_filter::compile_hostns_denials(private).unwrap();
            let embedded = hostns_denials(private);
            assert_eq!(embedded.len(), fresh.len());
            for (a, b) in embedded.iter().zip(&fresh) {
                assert_eq!((a.code, a.jt, a.jf, a.k), (b.code, b.jt, b.jf, b.k));
            }
        }
    }

    #[test]
    fn embedded_wx_denials_match_a_fresh_compile() {
        let fresh = warden_filter::compile_wx_denials().unwrap();
        let embedded = wx_denials();
        assert_eq!(embedded.len(), fresh.len());
        for (a, b) in embedded.iter().zip(&fresh) {
            assert_eq!((a.code, a.jt, a.jf, a.k), (b.code, b.jt, b.jf, b.k));
        }
    }

    #[test]
    fn embedded_argument_denials_match_a_fresh_compile() {
        let fresh = warden_filter::compile_argument_denials().unwrap();
        let embedded = argument_denials();
        assert_eq!(embedded.len(), fresh.len());
        for (a, b) in embedded.iter().zip(&fresh) {
            assert_eq!((a.code, a.jt, a.jf, a.k), (b.code, b.jt, b.jf, b.k));
        }
    }

    /// The embedded programs are what libseccomp makes of the table now: a build that went
    /// stale (or a build script that wrote the wrong thing) fails here.
    #[test]
    fn embedded_programs_match_a_fresh_compile() {
        for profile in Profile::all() {
            let fresh = warden_filter::compile(profile).unwrap();
            let embedded = program(profile);
            assert_eq!(embedded.len(), fresh.len(), "{profile:?}");
            for (i, (a, b)) in embedded.iter().zip(&fresh).enumerate() {
                assert_eq!(
                    (a.code, a.jt, a.jf, a.k),
                    (b.code, b.jt, b.jf, b.k),
                    "{profile:?}, instruction {i}"
                );
            }
        }
    }
}
