//! The unsafe fence: every raw system call warden makes without a crate to wrap it lives here.
//!
//! # Safety
//!
//! Nothing outside this crate may use `unsafe`: the workspace forbids it (`unsafe_code =
//! "forbid"` in the root `Cargo.toml`), and only this crate does not take the workspace's lints.
//! `warden` re-exports it as `warden::sys`.
//! Each function below turns the kernel's raw values into owned, typed Rust values in the same
//! expression that receives them: a returned descriptor becomes an [`OwnedFd`](std::os::fd::OwnedFd)
//! at once, a filled struct is copied out before anything else runs, and every pointer handed to
//! the kernel points into a Rust object that outlives the call and is as large as the length
//! passed with it. Each `unsafe` block says which of these holds and why.
//!
//! Covered here because no crate wraps them: the seccomp user-notification ioctls
//! (`seccomp_unotify(2)`), installing a raw BPF program with `SECCOMP_FILTER_FLAG_NEW_LISTENER`,
//! `pidfd_getfd(2)` on a pidfd we hold, `mount_setattr(2)` for the view's mount flags, and `process_vm_readv(2)`/`process_vm_writev(2)` for the
//! bounded copy of a client's arguments and results; for Capsicum, `SECCOMP_ADDFD_FLAG_SETFD` (a
//! descriptor replaced in place by `cap_rights_limit`) and the `clone(CLONE_PIDFD)` without an
//! exit signal behind process descriptors (`process::spawn_descriptor`).

pub mod fs;
pub mod mem;
pub mod mount;
pub mod net;
pub mod process;
pub mod seccomp;
pub mod signals;
pub mod unotify;
