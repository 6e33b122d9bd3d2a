//! Installing a compiled BPF program as a seccomp filter that reports to a user-notification
//! listener (`seccomp(2)`, `SECCOMP_FILTER_FLAG_NEW_LISTENER`).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// One classic-BPF instruction, as `struct sock_filter`.
pub type Instruction = libc::sock_filter;

/// Installs `program` on the calling thread (and so on everything it will fork and exec) and
/// returns the listener descriptor. The caller must have set no_new_privs first.
///
/// Runs in the sandbox's first process between fork and exec: it allocates nothing.
pub fn install_with_listener(program: &[Instruction]) -> io::Result<OwnedFd> {
    let prog = libc::sock_fprog {
        len: u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: SECCOMP_SET_MODE_FILTER reads `prog.len` instructions from `prog.filter`, which
    // points into `program`, a live slice of exactly that many instructions; the kernel copies
    // them before returning and keeps no pointer.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            // WAIT_KILLABLE_RECV: once the agent has received a request, only a fatal signal
            // interrupts the caller's wait. Otherwise a signal would restart the call after the
            // agent had already performed it (creating a file twice, say).
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | libc::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
            &prog as *const libc::sock_fprog,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: with NEW_LISTENER, success returns a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(rc as i32) })
}

/// Decodes the byte stream `seccomp_export_bpf(3)` writes into instructions.
pub fn decode(bytes: &[u8]) -> Vec<Instruction> {
    bytes
        .chunks_exact(8)
        .map(|c| libc::sock_filter {
            code: u16::from_ne_bytes([c[0], c[1]]),
            jt: c[2],
            jf: c[3],
            k: u32::from_ne_bytes([c[4], c[5], c[6], c[7]]),
        })
        .collect()
}

/// `AUDIT_ARCH_X86_64` (`EM_X86_64 | __AUDIT_ARCH_64BIT | __AUDIT_ARCH_LE`), the only ABI the
/// filter lets through.
pub const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
