//! Capsicum (USENIX Security 2010) on Linux: capability mode, descriptor rights, directory
//! capabilities and named descriptors, mapped onto what Linux has: access modes, `openat2`,
//! seccomp and warden's agent.
//!
//! One module per concept:
//! - [`mode`]: the rules of **capability mode** (`cap_enter`) and the verdict on each call;
//! - [`rights`]: **descriptor rights** (`cap_rights_t`), and who enforces each one;
//! - [`beneath`]: **directory capabilities**, lookups strictly beneath a directory descriptor;
//! - [`held`]: the rights of what a sandbox holds, kept by the agent;
//! - [`fdlist`]: descriptors **by name** (libcapsicum's fdlist), `--fd NAME=PATH:RIGHTS`;
//! - [`program`]: the **program side**, `cap_enter` and `cap_rights_limit` from inside a
//!   program (`warden run --capsicum`), and [`request`], how its requests reach the agent. C
//!   programs use `c/capsicum.h` and `c/capsicum.c`;
//! - [`process`]: **process descriptors** (`pdfork`, `pdkill`, `pdwait`);
//! - [`sandbox`]: **scrubbed sandbox start** (libcapsicum's `lch_start`): a host starts a
//!   program in capability mode holding exactly named descriptors and a socket to the host.
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
//! `msg_name`). Rights are kept per open file description for a file or directory limited
//! with [`program::cap_rights_limit`], and per object otherwise (see [`held`]); read and write
//! are the kernel's, per descriptor. Process descriptors are [`process`]'s.
#![deny(unsafe_code)]

pub mod beneath;
pub mod fdlist;
pub mod held;
pub mod mode;
pub mod process;
pub mod program;
pub mod request;
pub mod rights;
pub mod sandbox;

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

/// How a sandbox's processes come to be in capability mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// `warden run --capability-mode`: every process, from the program's first instruction.
    Warden,
    /// `warden run --capsicum`: a process that calls [`program::cap_enter`], and everything it
    /// starts afterwards.
    Program,
}

/// What `warden run --capability-mode` or `--capsicum` gives the agent: how processes enter
/// capability mode, and the objects the program holds and their rights.
#[derive(Debug)]
pub struct Session {
    /// How processes enter capability mode.
    pub entry: Entry,
    /// The rights of the objects the sandbox holds.
    pub held: Held,
    /// Whether the program's own `execve` (made by warden's launcher, before capability mode
    /// starts) has been answered: every later `execve` by path is refused.
    pub started: std::sync::atomic::AtomicBool,
    /// How many seccomp filters the program started with ([`Entry::Program`]): a process with
    /// more has entered capability mode (see [`program`]). Read at the program's own `execve`.
    pub base_filters: std::sync::OnceLock<u32>,
    /// Whether any process has asked to enter ([`request::Request::Enter`]). Until one has,
    /// no process is in capability mode whatever filters it installed for its own reasons, and
    /// the agent reads no filter count.
    pub entered: std::sync::atomic::AtomicBool,
    /// The host's grant socket (`warden run --grant-socket N`, [`sandbox::serve_grants`]),
    /// until warden starts serving it.
    pub grants: std::sync::Mutex<Option<std::os::fd::OwnedFd>>,
    /// Copies of the descriptors the program starts with (`--fd`, `--fd-inherited`) and their
    /// rights, for the Landlock layer narrowed to them under [`Entry::Warden`].
    pub roots: std::sync::Mutex<Vec<(std::os::fd::OwnedFd, Rights)>>,
}

impl Session {
    /// A session whose processes enter capability mode by `entry`. Under [`Entry::Warden`]
    /// only what warden hands out holds rights; under [`Entry::Program`] what a process held
    /// before it entered keeps every right until it limits it (as on FreeBSD).
    pub fn new(entry: Entry) -> Session {
        Session {
            entry,
            held: Held::with_default(match entry {
                Entry::Warden => Rights::NONE,
                Entry::Program => Rights::all(),
            }),
            started: std::sync::atomic::AtomicBool::new(false),
            base_filters: std::sync::OnceLock::new(),
            entered: std::sync::atomic::AtomicBool::new(false),
            grants: std::sync::Mutex::new(None),
            roots: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Whether the agent must look at a caller's filters to know if it is in capability mode:
    /// under [`Entry::Program`] once a process has asked to enter.
    pub fn any_entered(&self) -> bool {
        self.entry == Entry::Warden || self.entered.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether a process with `filters` seccomp filters (`None`: the kernel does not say) is
    /// in capability mode. Unknown counts are in it once the program has started: the safe
    /// side.
    pub fn in_mode(&self, filters: Option<u32>) -> bool {
        self.any_entered() && in_mode(self.entry, self.base_filters.get().copied(), filters)
    }
}

/// Whether a process with `filters` seccomp filters is in capability mode, in a sandbox whose
/// processes enter it by `entry` and whose program started with `base` filters (see
/// [`Session::in_mode`]; `warden inspect` asks the same from outside).
pub fn in_mode(entry: Entry, base: Option<u32>, filters: Option<u32>) -> bool {
    match entry {
        Entry::Warden => true,
        Entry::Program => match (base, filters) {
            (None, _) => false,
            (Some(base), Some(n)) => n > base,
            (Some(_), None) => true,
        },
    }
}

impl Entry {
    /// The entry's name in `warden inspect` (`warden`: `--capability-mode`; `program`:
    /// `--capsicum`).
    pub fn name(self) -> &'static str {
        match self {
            Entry::Warden => "warden",
            Entry::Program => "program",
        }
    }

    /// The entry named `name`.
    pub fn from_name(name: &str) -> Option<Entry> {
        match name {
            "warden" => Some(Entry::Warden),
            "program" => Some(Entry::Program),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_in_capability_mode_by_its_filters_once_the_program_started() {
        let warden = Session::new(Entry::Warden);
        assert!(warden.in_mode(None) && warden.in_mode(Some(0)));
        let program = Session::new(Entry::Program);
        // warden's own launcher, before the program's execve: not the program's.
        assert!(!program.in_mode(Some(5)));
        program.base_filters.set(1).unwrap();
        // A filter of the program's own, before anyone asked to enter: not the mode.
        assert!(!program.in_mode(Some(2)));
        program
            .entered
            .store(true, std::sync::atomic::Ordering::SeqCst);
        assert!(!program.in_mode(Some(1)));
        assert!(program.in_mode(Some(2)));
        assert!(program.in_mode(Some(7)));
        assert!(program.in_mode(None));
        assert_eq!(program.held.rights(1, 1), Rights::all());
        assert_eq!(warden.held.rights(1, 1), Rights::NONE);
    }

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
