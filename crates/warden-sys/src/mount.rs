//! `mount_setattr(2)`, which `rustix` does not wrap (it has the rest of the new mount API).

use rustix::mount::MountAttrFlags;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// `struct mount_attr` (`include/uapi/linux/mount.h`, `MOUNT_ATTR_SIZE_VER0`).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Sets `set` on the mount `mount` refers to (an `open_tree`/`fsmount` descriptor, attached or
/// not), and on every mount beneath it when `recursive`. Flags can only be added here: the
/// kernel refuses to clear a flag a less privileged namespace inherited locked, and warden never
/// asks to.
pub fn set_attributes(
    mount: BorrowedFd<'_>,
    set: MountAttrFlags,
    recursive: bool,
) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: u64::from(set.bits()),
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = libc::AT_EMPTY_PATH | if recursive { libc::AT_RECURSIVE } else { 0 };
    // SAFETY: the path is a NUL-terminated empty string literal, and `attr` is a live
    // `struct mount_attr` whose size is passed with it; the kernel only reads both.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            mount.as_raw_fd(),
            c"".as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
