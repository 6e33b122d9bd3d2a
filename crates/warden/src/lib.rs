//! warden: run an unmodified, untrusted program under a policy, with a trusted agent that
//! performs every call naming a resource on the program's behalf (Ostia's delegating
//! architecture, on stock Linux: seccomp user notification with descriptor injection, pidfds,
//! Landlock and namespaces). See `docs/design.md` for the threat model and invariants.
#![forbid(unsafe_code)]

pub mod agent;
pub mod confine;
pub mod copies;
pub mod explain;
pub mod filter;
pub mod host;
pub mod launch;
pub mod learn;
pub mod limits;
pub mod paths;
pub mod placement;
pub mod registry;
pub mod report;
pub mod run;
#[cfg(test)]
mod testing;
pub mod timings;
pub(crate) mod tree;
/// The raw system calls, fenced in their own crate.
pub use warden_sys as sys;
pub mod unique;
pub use warden_filter::syscalls;
