//! Bounded copies to and from a client's memory (`process_vm_readv(2)`, `process_vm_writev(2)`).
//!
//! The agent copies each pointer argument exactly once and then works on its own copy
//! (docs/design.md, invariant 1). Sizes are bounded by the agent, never taken from the client
//! unchecked (invariant 6): strings stop at `PATH_MAX`, buffers at the caller's cap.

use std::io;

/// Longest path the kernel accepts, including its NUL.
pub const PATH_MAX: usize = 4096;

fn page_size() -> usize {
    4096
}

/// Reads up to `buf.len()` bytes at `addr` in process `pid`. Returns how many were read, which
/// is short only where the client's mapping ends.
pub fn read(pid: u32, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
    if buf.is_empty() {
        return Ok(0);
    }
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: the local iovec describes `buf`, which is writable for `buf.len()` bytes and
    // outlives the call; the remote iovec is only an address in the other process, which the
    // kernel checks itself (EFAULT). One iovec each, flags 0.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Writes `data` at `addr` in process `pid`, all or nothing as far as the kernel allows.
pub fn write(pid: u32, addr: u64, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    let local = libc::iovec {
        iov_base: data.as_ptr().cast_mut().cast(),
        iov_len: data.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: the local iovec describes `data`, readable for `data.len()` bytes for the whole
    // call (the kernel only reads it); the remote address is checked by the kernel.
    let n = unsafe { libc::process_vm_writev(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if n as usize != data.len() {
        return Err(io::Error::from_raw_os_error(libc::EFAULT));
    }
    Ok(())
}

/// Copies a NUL-terminated string of at most `PATH_MAX` bytes (NUL included) from the client.
///
/// Reads page by page so a string that ends just before an unmapped page is still read, as the
/// kernel's own `strncpy_from_user` would. Errors: `EFAULT` for a bad pointer, `ENAMETOOLONG`
/// when no NUL comes within `PATH_MAX`.
pub fn read_cstring(pid: u32, addr: u64) -> io::Result<Vec<u8>> {
    read_cstring_with(addr, |at, buf| read(pid, at, buf))
}

/// [`read_cstring`] through another reader of the client's memory (`/proc/PID/mem`, where
/// `process_vm_readv` is refused): `read(addr, buf)` reads what it can at `addr`, as [`read`].
pub fn read_cstring_with(
    addr: u64,
    mut read: impl FnMut(u64, &mut [u8]) -> io::Result<usize>,
) -> io::Result<Vec<u8>> {
    if addr == 0 {
        return Err(io::Error::from_raw_os_error(libc::EFAULT));
    }
    let mut out = Vec::with_capacity(256);
    let mut cursor = addr;
    let mut chunk = [0u8; 4096];
    while out.len() < PATH_MAX {
        let to_page_end = page_size() - (cursor as usize % page_size());
        let want = to_page_end.min(PATH_MAX - out.len());
        let got = match read(cursor, &mut chunk[..want]) {
            Ok(0) => 0,
            Ok(n) => n,
            Err(e) if out.is_empty() => return Err(e),
            Err(_) => 0,
        };
        if got == 0 {
            return Err(io::Error::from_raw_os_error(libc::EFAULT));
        }
        if let Some(nul) = chunk[..got].iter().position(|&b| b == 0) {
            out.extend_from_slice(&chunk[..nul]);
            return Ok(out);
        }
        out.extend_from_slice(&chunk[..got]);
        cursor = cursor.wrapping_add(got as u64);
    }
    Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG))
}

/// Reads up to `buf.len()` bytes at `addr` through a descriptor of the client's
/// `/proc/PID/mem`: the route when `process_vm_readv` is refused (ENOSYS, or EPERM from a
/// container's seccomp profile). An address the client has not mapped is `EFAULT`, as with
/// [`read`] (the file says `EIO`).
pub fn read_through(mem: impl std::os::fd::AsFd, addr: u64, buf: &mut [u8]) -> io::Result<usize> {
    match rustix::io::pread(mem, buf, addr) {
        Ok(n) => Ok(n),
        Err(rustix::io::Errno::IO) => Err(io::Error::from_raw_os_error(libc::EFAULT)),
        Err(e) => Err(e.into()),
    }
}

/// Writes `data` at `addr` through a descriptor of the client's `/proc/PID/mem`, all or
/// nothing as far as the kernel allows (the route when `process_vm_writev` is refused).
pub fn write_through(mem: impl std::os::fd::AsFd, addr: u64, data: &[u8]) -> io::Result<()> {
    match rustix::io::pwrite(mem, data, addr) {
        Ok(n) if n == data.len() => Ok(()),
        Ok(_) | Err(rustix::io::Errno::IO) => Err(io::Error::from_raw_os_error(libc::EFAULT)),
        Err(e) => Err(e.into()),
    }
}
