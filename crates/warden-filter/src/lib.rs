//! The system call table (what warden does with every call, per policy profile) and its
//! compilation to a seccomp BPF program with libseccomp.
//!
//! A crate of its own so that `warden`'s build script can compile the program for every
//! [`syscalls::Profile`] ahead of time: libseccomp takes milliseconds, a good part of what
//! `warden run` would otherwise spend starting. `warden` embeds those programs and a test there
//! checks them against a fresh compile.
#![forbid(unsafe_code)]

pub mod abi;
pub mod compile;
pub mod syscalls;

pub use compile::{
    compile, compile_argument_denials, compile_hostns_denials, compile_wx_denials, FilterError,
};

/// One classic-BPF instruction, as `struct sock_filter`.
pub type Instruction = libc::sock_filter;

/// `AUDIT_ARCH_X86_64` (`EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE`), the only ABI the
/// filter lets through.
pub const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
