//! The kernel's values of the open flags whose C library values differ from them.
//!
//! The `libc` crate gives the C library's: musl's `O_ACCMODE` also holds `O_PATH` (its
//! `O_SEARCH`), and glibc's `O_LARGEFILE` is 0 on 64-bit machines, where the kernel's bit still
//! exists (musl's `open` sets it on every call). The filter, the agent and the Capsicum library
//! read flags as the kernel passes them, whatever C library warden is built with (it is built
//! for musl, `.cargo/config.toml`), so they use these.

/// The access mode bits of the open flags: `O_RDONLY`, `O_WRONLY`, `O_RDWR` (and 3, which
/// Linux takes for no access but the right to ioctl).
pub const O_ACCMODE: i32 = 0o3;

/// `O_LARGEFILE` on x86_64.
pub const O_LARGEFILE: i32 = 0o100000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernels_bits() {
        // The access modes are the three values and nothing else (musl's holds O_PATH).
        assert_eq!(O_ACCMODE & libc::O_PATH, 0);
        assert_eq!(libc::O_RDONLY | libc::O_WRONLY | libc::O_RDWR, O_ACCMODE);
        // A 64-bit kernel marks every open file large: F_GETFL shows its bit.
        let fd = rustix::fs::memfd_create("abi", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        let flags = rustix::fs::fcntl_getfl(&fd).unwrap().bits() as i32;
        assert_ne!(flags & O_LARGEFILE, 0, "F_GETFL {flags:#o}");
    }
}
