//! Stand-ins for `O_PATH` descriptors of symlinks.
//!
//! `open(link, O_PATH | O_NOFOLLOW)` gives the kernel's caller a descriptor of the symlink
//! itself; glibc (before 2.39) does exactly that for `fchmodat(..., AT_SYMLINK_NOFOLLOW)`, which
//! `tar x` calls on every link it extracts, and then looks at the descriptor with
//! `fstatat(fd, "", AT_EMPTY_PATH)` to answer `EOPNOTSUPP` for a link. The agent cannot hand
//! such a descriptor over: `SECCOMP_IOCTL_NOTIF_ADDFD` refuses `O_PATH` files (`EBADF`), and
//! there is nothing else a symlink can be opened as (`ELOOP`). Continuing the call instead would
//! let the kernel re-read a path a racing thread can rewrite, and no kernel rule restricts what
//! an `O_PATH` open may reach (Landlock does not look at them).
//!
//! So the caller gets a *stand-in*: a fresh, empty memfd, sealed against writing, growing and
//! execution, reopened with access mode 3, so it can be neither read, written nor mapped
//! (`EBADF`, `EACCES`); and the agent remembers which symlink it stands for, holding its own
//! `O_PATH` descriptor of that link. Calls that look a path up *through* a descriptor reach the
//! agent, and there the stand-in is the link ([`Table::link`]): `fstatat`, `statx` and
//! `faccessat2` with `AT_EMPTY_PATH`, `readlinkat(fd, "")`, `fchownat`, `utimensat` and
//! `fchmodat2` with `AT_EMPTY_PATH` (each checked as the same call on the link's path is), and
//! `/proc/self/fd/N` followed (`stat` shows the link, an open is `ELOOP`, as for the kernel's
//! descriptor). Calls that need an open file (`fchmod`, `fchown`, `fsetxattr`) get `EBADF`, as
//! the kernel answers for an `O_PATH` descriptor; `linkat` of a descriptor is refused anyway.
//! What the stand-in still shows of itself (a raw `fstat` syscall, which glibc's `fstat` is not,
//! or `readlink` of `/proc/self/fd/N`) is an empty memfd: a stand-in never gives more than an
//! empty file the sandbox could make itself.
//!
//! The table is bounded ([`MOST`]): the oldest entry goes first, and its stand-in is from then
//! on just the empty file it is. Each entry holds the memfd (so its inode number, the key, is
//! not reused while the entry lives) and the link's `O_PATH` descriptor.

use rustix::fs::{FileType, Mode, OFlags};
use std::collections::VecDeque;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Most links one sandbox's stand-ins remember at once (two of the agent's descriptors each,
/// out of the 1024 warden usually may hold). Programs hold such descriptors for a call or two:
/// glibc closes its own right after the `fstatat`.
pub const MOST: usize = 64;

/// The memfd's name.
const NAME: &std::ffi::CStr = c"warden-symlink";
/// How the kernel shows a stand-in's `/proc/<pid>/fd/N` link: `/memfd:NAME (deleted)`.
pub const PROC_LINK: &[u8] = b"/memfd:warden-symlink ";

struct Entry {
    key: (u64, u64),
    /// Keeps the memfd's inode, and with it the key, alive.
    _memfd: OwnedFd,
    link: OwnedFd,
}

/// The stand-ins of one sandbox.
#[derive(Default)]
pub struct Table {
    /// Set once the first stand-in is made: until then no lookup costs anything.
    used: AtomicBool,
    entries: Mutex<VecDeque<Entry>>,
}

fn key(fd: &OwnedFd) -> Option<(u64, u64)> {
    rustix::fs::fstat(fd).ok().map(|st| (st.st_dev, st.st_ino))
}

impl Table {
    /// A stand-in for `link`, an `O_PATH | O_NOFOLLOW` descriptor of a symlink the caller may
    /// open so: the descriptor to install in the caller.
    pub fn issue(&self, link: OwnedFd) -> Result<OwnedFd, i32> {
        let errno = |e: rustix::io::Errno| e.raw_os_error();
        let memfd = super::fs::memfd_without_exec(
            NAME,
            rustix::fs::MemfdFlags::CLOEXEC | rustix::fs::MemfdFlags::ALLOW_SEALING,
        )
        .map_err(errno)?;
        rustix::fs::fcntl_add_seals(
            &memfd,
            rustix::fs::SealFlags::SEAL
                | rustix::fs::SealFlags::WRITE
                | rustix::fs::SealFlags::GROW
                | rustix::fs::SealFlags::SHRINK,
        )
        .map_err(errno)?;
        // Access mode 3: permission to read and write is checked, neither is granted, so the
        // descriptor can only be held, passed on and looked at, like an O_PATH one.
        let stand_in = rustix::fs::open(
            format!("/proc/self/fd/{}", memfd.as_raw_fd()),
            OFlags::from_bits_retain(crate::sys::abi::O_ACCMODE as u32) | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno)?;
        let key = key(&memfd).ok_or(libc::EIO)?;
        let mut entries = self.entries.lock().map_err(|_| libc::EIO)?;
        if entries.len() >= MOST {
            entries.pop_front();
        }
        entries.push_back(Entry {
            key,
            _memfd: memfd,
            link,
        });
        self.used.store(true, Ordering::Release);
        Ok(stand_in)
    }

    /// Whether any stand-in was ever made (until then no descriptor is one).
    pub fn in_use(&self) -> bool {
        self.used.load(Ordering::Acquire)
    }

    /// The symlink `fd` (a duplicate of one of the caller's descriptors) stands for, if it is a
    /// stand-in this table remembers: an `O_PATH` descriptor of the link.
    pub fn link(&self, fd: &OwnedFd) -> Option<OwnedFd> {
        if !self.in_use() {
            return None;
        }
        let st = rustix::fs::fstat(fd).ok()?;
        // Stand-ins are empty regular files; anything else is looked up no further.
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile || st.st_size != 0 {
            return None;
        }
        let entries = self.entries.lock().ok()?;
        let entry = entries.iter().find(|e| e.key == (st.st_dev, st.st_ino))?;
        entry.link.as_fd().try_clone_to_owned().ok()
    }
}
