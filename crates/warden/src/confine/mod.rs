//! Kernel-enforced confinement around the delegating agent, one file per mechanism: Landlock
//! (the backstop that makes the one `CONTINUE`d path call, `execve`, safe, and catches anything
//! a bug lets through) and the namespaces plus id maps the sandbox lives in.

pub mod landlock;
pub mod namespaces;
