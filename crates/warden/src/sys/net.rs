//! connect(2)/bind(2) with a raw address buffer the agent owns.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// `connect(sock, addr)` or `bind(sock, addr)` with `addr` exactly as given.
pub fn address_call(sock: &OwnedFd, addr: &[u8], connect: bool) -> io::Result<()> {
    let len = addr.len() as libc::socklen_t;
    let ptr = addr.as_ptr().cast::<libc::sockaddr>();
    // SAFETY: `addr` is the agent's own buffer of `len` bytes, alive for the call; the kernel
    // only reads `len` bytes from it and validates the family and length itself.
    let rc = unsafe {
        if connect {
            libc::connect(sock.as_raw_fd(), ptr, len)
        } else {
            libc::bind(sock.as_raw_fd(), ptr, len)
        }
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
