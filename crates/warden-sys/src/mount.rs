//! `mount_setattr(2)` and `open_tree_attr(2)`, which `rustix` does not wrap (it has the rest of
//! the new mount API).

use rustix::mount::{MountAttrFlags, OpenTreeFlags};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// `struct mount_attr` (`include/uapi/linux/mount.h`, `MOUNT_ATTR_SIZE_VER0`).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

impl MountAttr {
    /// Adds `set`, clears nothing, leaves propagation and the id mapping alone.
    fn adding(set: MountAttrFlags) -> MountAttr {
        MountAttr {
            attr_set: u64::from(set.bits()),
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        }
    }
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
    let attr = MountAttr::adding(set);
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

/// `open_tree_attr(2)`'s number on x86_64 (Linux 6.15; the `libc` crate names it for a few
/// architectures only).
const SYS_OPEN_TREE_ATTR: libc::c_long = 467;

/// Whether `open_tree_attr` is out of reach here (learnt from its first `ENOSYS` or `EPERM`).
static NO_OPEN_TREE_ATTR: AtomicBool = AtomicBool::new(false);

/// A detached clone of `path` beneath `dir` (with every mount beneath it when `recursive`),
/// with `set` added to each of its mounts: `open_tree(OPEN_TREE_CLONE)` and `set_attributes`
/// in one call where the kernel has `open_tree_attr` (the clone never exists without them, and
/// a start makes some fifteen), in two where it is missing or refused.
pub fn clone_with_attributes(
    dir: BorrowedFd<'_>,
    path: &std::ffi::CStr,
    recursive: bool,
    set: MountAttrFlags,
) -> io::Result<OwnedFd> {
    let mut flags = OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC;
    if recursive {
        flags |= OpenTreeFlags::AT_RECURSIVE;
    }
    if !NO_OPEN_TREE_ATTR.load(Ordering::Relaxed) {
        let attr = MountAttr::adding(set);
        // SAFETY: `path` is NUL-terminated and `attr` a live `struct mount_attr` whose size is
        // passed with it; the kernel only reads both, and returns a new descriptor or -1.
        let r = unsafe {
            libc::syscall(
                SYS_OPEN_TREE_ATTR,
                dir.as_raw_fd(),
                path.as_ptr(),
                flags.bits(),
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            )
        };
        if r >= 0 {
            let fd = i32::try_from(r).map_err(|_| io::Error::from_raw_os_error(libc::EBADF))?;
            // SAFETY: the call succeeded, so `fd` is a new descriptor nobody else owns.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd) });
        }
        let e = io::Error::last_os_error();
        // ENOSYS: a kernel before 6.15. EPERM: also what a container's seccomp profile answers
        // for a call it does not know (Docker's default); the two calls say whether the
        // clone itself is allowed.
        if !matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) {
            return Err(e);
        }
        NO_OPEN_TREE_ATTR.store(true, Ordering::Relaxed);
    }
    let tree = rustix::mount::open_tree(dir, path, flags)?;
    set_attributes(std::os::fd::AsFd::as_fd(&tree), set, recursive)?;
    Ok(tree)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a clone of `/` (recursive) made by [`clone_with_attributes`] shows in a fresh user and mount
    /// namespace (a forked child's, so the test process keeps its own): 0 when it is read-only
    /// and noexec as asked while the namespace's own `/` is not, else a code saying what was not.
    fn clone_in_child(how: How) -> i32 {
        // SAFETY: the child only makes system calls and `_exit`s; it takes no lock another
        // thread of the test harness could hold (no allocation, no output).
        match unsafe { libc::fork() } {
            0 => {
                match how {
                    How::OneCall => {}
                    How::TwoCalls => NO_OPEN_TREE_ATTR.store(true, Ordering::Relaxed),
                    How::Refused => {
                        if refuse_open_tree_attr().is_err() {
                            // SAFETY: ends the forked child at once.
                            unsafe { libc::_exit(9) }
                        }
                    }
                }
                let ns =
                    rustix::thread::UnshareFlags::NEWUSER | rustix::thread::UnshareFlags::NEWNS;
                // SAFETY: unsharing the calling (single-threaded, forked) process's namespaces.
                let code = if unsafe { rustix::thread::unshare_unsafe(ns) }.is_err() {
                    10
                } else {
                    let set = MountAttrFlags::MOUNT_ATTR_RDONLY | MountAttrFlags::MOUNT_ATTR_NOEXEC;
                    // Recursive: a namespace of a user namespace's own may not clone a mount
                    // without the mounts locked beneath it (EINVAL).
                    match clone_with_attributes(rustix::fs::CWD, c"/", true, set) {
                        Err(_) => 11,
                        Ok(tree) => {
                            use rustix::fs::StatVfsMountFlags as F;
                            let clone = rustix::fs::fstatvfs(&tree).map(|s| s.f_flag);
                            let own = rustix::fs::statvfs("/").map(|s| s.f_flag);
                            match (clone, own) {
                                (Ok(c), _) if !c.contains(F::RDONLY | F::NOEXEC) => 12,
                                (Ok(_), Ok(o)) if o.contains(F::NOEXEC) => 13,
                                (Ok(_), Ok(_)) => 0,
                                _ => 14,
                            }
                        }
                    }
                };
                // SAFETY: ends the forked child without running the harness's exit handlers.
                unsafe { libc::_exit(code) }
            }
            -1 => panic!("fork: {}", io::Error::last_os_error()),
            pid => {
                let mut status = 0;
                // SAFETY: waits for the child just forked, into a live int.
                assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
                assert!(libc::WIFEXITED(status), "child status {status:#x}");
                libc::WEXITSTATUS(status)
            }
        }
    }

    #[derive(Clone, Copy)]
    enum How {
        /// `open_tree_attr`.
        OneCall,
        /// `open_tree` and `mount_setattr`, as before Linux 6.15.
        TwoCalls,
        /// `open_tree_attr` refused with `EPERM` by a seccomp filter, as a container's profile
        /// refuses calls it does not know.
        Refused,
    }

    /// A filter that fails `open_tree_attr` with `EPERM` and allows everything else.
    fn refuse_open_tree_attr() -> io::Result<()> {
        let op = |code: u32, jf: u8, k: u32| crate::seccomp::Instruction {
            code: code as u16,
            jt: 0,
            jf,
            k,
        };
        let program = [
            op(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0, 0),
            op(
                libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
                1,
                SYS_OPEN_TREE_ATTR as u32,
            ),
            op(
                libc::BPF_RET | libc::BPF_K,
                0,
                libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
            ),
            op(libc::BPF_RET | libc::BPF_K, 0, libc::SECCOMP_RET_ALLOW),
        ];
        rustix::thread::set_no_new_privs(true)?;
        crate::seccomp::install(&program)
    }

    /// The clone has the flags asked for, and the mount it was cloned from does not gain them,
    /// with `open_tree_attr`, with the two calls older kernels need, and where a seccomp
    /// profile refuses `open_tree_attr` (the two calls then).
    #[test]
    fn a_clone_has_the_attributes_asked_for() {
        assert_eq!(clone_in_child(How::OneCall), 0, "open_tree_attr");
        assert_eq!(
            clone_in_child(How::TwoCalls),
            0,
            "open_tree + mount_setattr"
        );
        assert_eq!(
            clone_in_child(How::Refused),
            0,
            "open_tree_attr refused with EPERM"
        );
    }
}
