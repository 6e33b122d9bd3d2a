//! File-system calls whose results the agent copies byte for byte into a client's memory.
//!
//! The structs are zeroed before the kernel fills them, so every byte handed to the client
//! (padding and reserved fields included) is defined: nothing of the agent's own memory leaks.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// A kernel struct that may be copied out as bytes: plain C data, fully initialised.
pub trait KernelStruct: Copy + sealed::Sealed {
    /// Its bytes.
    fn bytes(&self) -> &[u8] {
        // SAFETY: implementors are C structs without references, created zeroed (so padding is
        // initialised) and then filled by the kernel; viewing `size_of::<Self>()` bytes of a
        // live value as u8 is valid for such types.
        unsafe {
            std::slice::from_raw_parts(
                (self as *const Self).cast::<u8>(),
                std::mem::size_of::<Self>(),
            )
        }
    }
}
mod sealed {
    pub trait Sealed {}
    impl Sealed for libc::stat {}
    impl Sealed for libc::statx {}
    impl Sealed for libc::statfs {}
}
impl KernelStruct for libc::stat {}
impl KernelStruct for libc::statx {}
impl KernelStruct for libc::statfs {}

fn zeroed<T: KernelStruct>() -> T {
    // SAFETY: all-zero bytes are a valid value of these plain C structs.
    unsafe { std::mem::zeroed() }
}

/// `fstatat(dir, name, flags)`.
pub fn fstatat(dir: BorrowedFd<'_>, name: &CStr, flags: i32) -> io::Result<libc::stat> {
    let mut st: libc::stat = zeroed();
    // SAFETY: `name` is NUL-terminated; the kernel writes one `struct stat` to `st`.
    let rc = unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), &mut st, flags) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// `statx(dir, name, flags, mask)`.
pub fn statx(dir: BorrowedFd<'_>, name: &CStr, flags: i32, mask: u32) -> io::Result<libc::statx> {
    let mut st: libc::statx = zeroed();
    // SAFETY: `name` is NUL-terminated; the kernel writes one `struct statx` to `st`.
    let rc = unsafe { libc::statx(dir.as_raw_fd(), name.as_ptr(), flags, mask, &mut st) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// `fstatfs(fd)`.
pub fn fstatfs(fd: BorrowedFd<'_>) -> io::Result<libc::statfs> {
    let mut st: libc::statfs = zeroed();
    // SAFETY: the kernel writes one `struct statfs` to `st`.
    let rc = unsafe { libc::fstatfs(fd.as_raw_fd(), &mut st) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// `inotify_add_watch(fd, path, mask)` with the mask passed through unchanged (the rustix
/// wrapper only knows the flags it names).
pub fn inotify_add_watch(fd: BorrowedFd<'_>, path: &CStr, mask: u32) -> io::Result<i32> {
    // SAFETY: `path` is NUL-terminated and outlives the call; no memory is written.
    let rc = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), path.as_ptr(), mask) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc)
}
