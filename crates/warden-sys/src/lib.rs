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
//! `mount_setattr(2)` for the view's mount flags, and `process_vm_readv(2)`/`process_vm_writev(2)` for the
//! bounded copy of a client's arguments and results; for Capsicum, `SECCOMP_ADDFD_FLAG_SETFD` (a
//! descriptor replaced in place by `cap_rights_limit`) and the `clone(CLONE_PIDFD)` without an
//! exit signal behind process descriptors (`process::spawn_descriptor`).
//!
//! Why some calls rustix also wraps are here: the agent hands the client the kernel's own bytes
//! (`struct stat`, `statx`, `statfs` for the stat family, the raw `sockaddr` of `accept`,
//! `getsockname` and a delegated `sendmsg`), exactly as the kernel would have written them into
//! the client's memory. rustix turns those into its own typed values (a `SocketAddrAny`, a
//! `Stat`), and getting the bytes back out of them needs the same `unsafe` as receiving them
//! here, once more. Calls that only need a result, not its bytes, use rustix (pidfd_getfd,
//! openat2, the mount API, sockets, signals where it can). Functions take descriptors as
//! `BorrowedFd`/`impl AsFd`; the only raw numbers turned into descriptors are the kernel's
//! fresh results (owned at once) and, in the sandbox's child, the `--pass-fd` numbers warden
//! was started with.

pub use warden_filter::abi;
pub mod fs;
pub mod mem;
pub mod mount;
pub mod net;
pub mod probe;
pub mod process;
pub mod seccomp;
pub mod signals;
pub mod unotify;
pub mod usage;
