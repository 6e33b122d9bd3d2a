//! Kernel-enforced confinement around the delegating agent, one file per mechanism: Landlock
//! (the backstop that makes the one `CONTINUE`d path call, `execve`, safe, and catches anything
//! a bug lets through), the namespaces plus id maps the sandbox lives in, and the privileges the
//! agent keeps while it acts for the sandbox.

pub mod hostns;
pub mod landlock;
pub mod namespaces;
pub mod privileges;
pub mod view;
