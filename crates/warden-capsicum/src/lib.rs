//! Capsicum (USENIX Security 2010) on Linux: capability mode, descriptor rights, directory
//! capabilities and named descriptors, mapped onto what Linux has: access modes, `openat2`,
//! seccomp and warden's agent.
//!
//! One module per concept:
//! - [`mode`]: the rules of **capability mode** (`cap_enter`) and the verdict on each call;
//! - [`rights`]: **descriptor rights** (`cap_rights_t`), and who enforces each one;
//! - [`beneath`]: **directory capabilities**, lookups strictly beneath a directory descriptor;
//! - [`held`]: the rights of what a sandbox holds, kept by the agent;
//! - [`fdlist`]: descriptors **by name** (libcapsicum's fdlist), `--fd NAME=PATH:RIGHTS`.
//!
//! # How capability mode is enforced (`warden run --capability-mode`)
//!
//! Linux has no capability mode in its kernel, and seccomp's BPF cannot read a path, so an
//! absolute path, a `..` and a plain name look alike to it. Capability mode is therefore a mode
//! of warden's agent, on top of warden's usual confinement (namespaces, Landlock, the filter):
//!
//! - Every path call is delegated to the agent already (warden's agent profile). In capability
//!   mode the agent refuses those that name the global namespace: an absolute path, a path
//!   relative to the current directory, `chdir`, `statfs`, `truncate`, xattrs and inotify by
//!   path, and `execve` by path ([`mode::Rule`]). A call relative to a directory descriptor is
//!   performed by the agent with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` from its own
//!   duplicate of that very descriptor, with the rights the descriptor holds ([`held`]); the
//!   kernel walks, so `..`, absolute symlinks and renames racing with the walk cannot lead out.
//! - The calls warden otherwise lets run directly but that name a process by pid, a System V
//!   IPC key or a message queue name, or make a socket, are delegated to the agent too in
//!   capability mode (`warden_filter::syscalls::Family::CapabilityMode`): signals and scheduling
//!   calls on the caller itself are continued, everything else refused.
//! - `connect`, `bind` and `sendto`/`sendmsg` to an address are delegated in every profile;
//!   capability mode refuses connect and bind, and with `socket` refused the program has no
//!   socket to send from but the ones it was given.
//! - Mounts, ptrace and the rest stay refused in BPF as without capability mode (`EPERM`,
//!   which is [`ECAPMODE`]), and are not logged, as without it.
//!
//! The mode holds for every process of the sandbox from its first instruction after the loader
//! ran, through `fork` (the filter and the agent are the sandbox's) and exec (only `fexecve` of
//! a descriptor, with the [`rights::Right::Fexecve`] right).
//!
//! The dynamic loader is the one exception, as on FreeBSD, where `rtld` holds descriptors of
//! the library directories (`LD_LIBRARY_PATH_FDS`): a read-only open of an ELF file beneath
//! `/lib`, `/lib64`, `/usr/lib`, `/usr/lib64` or `/usr/local/lib`, or of `/etc/ld.so.cache`,
//! is performed (strictly beneath that directory) and logged as allowed by
//! `capability-mode:library`. An unmodified program cannot run otherwise.
//!
//! # Errors: `ECAPMODE` and `ENOTCAPABLE` on Linux
//!
//! FreeBSD's errno values (`ENOTCAPABLE` 93, `ECAPMODE` 94) are `EPROTONOSUPPORT` and
//! `ESOCKTNOSUPPORT` on Linux, and Linux has no spare errno programs print sensibly. warden
//! uses the two errnos every program already handles, one for each:
//!
//! | Capsicum | Linux | when |
//! |---|---|---|
//! | `ECAPMODE` | [`ECAPMODE`] = `EPERM` (1) | a global namespace named in capability mode ([`mode::Rule`]) |
//! | `ENOTCAPABLE` | [`ENOTCAPABLE`] = `EACCES` (13) | a descriptor lacks a right the agent checks, or a lookup leaves a directory capability |
//! | `ENOTCAPABLE` | `EBADF` (9) | a right the kernel enforces through the access mode (read on a write-only descriptor) |
//!
//! A program tells them apart from an ordinary permission error by the call it made (in
//! capability mode there is no other source of `EPERM` on a path call), and the operator by
//! `-v` and `--log`, which name the rule (`capability-mode:absolute-path`, ...).
//!
//! # What Linux cannot enforce
//!
//! See [`rights::ENFORCEMENT`]: seek, fstat, mmap, ioctl, event and accept are not enforced
//! per descriptor (the calls are direct, and Linux has no way to narrow them). A datagram
//! socket the program was given can still `sendmsg` to an address (BPF cannot read
//! `msg_name`). Rights are kept per object, so two descriptors of one file hold the same
//! rights. Process descriptors (`pdfork`) and `cap_rights_limit` from inside are not built yet.
#![deny(unsafe_code)]

pub mod beneath;
pub mod fdlist;
pub mod held;
pub mod mode;
pub mod rights;

pub use held::Held;
pub use mode::Rule;
pub use rights::{Right, Rights};

/// Capsicum's `ECAPMODE` on Linux: `EPERM`.
pub const ECAPMODE: i32 = libc::EPERM;
/// Capsicum's `ENOTCAPABLE` on Linux, when the agent refuses: `EACCES` (the kernel's own
/// refusals through the access mode are `EBADF`).
pub const ENOTCAPABLE: i32 = libc::EACCES;

/// The directories the dynamic loader reads libraries from in capability mode (see the crate
/// docs), and the loader's cache.
pub const LIBRARY_DIRS: [&str; 5] = ["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib"];
/// The loader's cache, readable in capability mode.
pub const LOADER_CACHE: &str = "/etc/ld.so.cache";

/// The library directory an absolute `path` lies beneath, and the rest of the path, if the
/// loader may read it in capability mode (see the crate docs).
pub fn library_path(path: &[u8]) -> Option<(&'static str, &[u8])> {
    if path == LOADER_CACHE.as_bytes() {
        return Some(("/etc", b"ld.so.cache"));
    }
    LIBRARY_DIRS.iter().find_map(|dir| {
        let rest = path.strip_prefix(dir.as_bytes())?.strip_prefix(b"/")?;
        (!rest.is_empty()).then_some((*dir, rest))
    })
}

/// What `warden run --capability-mode` gives the agent: the objects the program starts with
/// and their rights.
#[derive(Debug, Default)]
pub struct Session {
    /// The rights of the objects the sandbox holds.
    pub held: Held,
    /// Whether the program's own `execve` (made by warden's launcher, before capability mode
    /// starts) has been answered: every later `execve` by path is refused.
    pub started: std::sync::atomic::AtomicBool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_library_directories_and_the_cache_are_the_loaders() {
        assert_eq!(
            library_path(b"/usr/lib/x86_64-linux-gnu/libc.so.6"),
            Some(("/usr/lib", &b"x86_64-linux-gnu/libc.so.6"[..]))
        );
        assert_eq!(
            library_path(b"/etc/ld.so.cache"),
            Some(("/etc", &b"ld.so.cache"[..]))
        );
        assert_eq!(library_path(b"/usr/libexec/x"), None);
        assert_eq!(library_path(b"/usr/lib"), None);
        assert_eq!(library_path(b"/etc/passwd"), None);
        assert_eq!(
            library_path(b"/lib64/ld-linux-x86-64.so.2").unwrap().0,
            "/lib64"
        );
    }
}
