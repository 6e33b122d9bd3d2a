//! connect(2) and bind(2), performed by the agent on its own duplicate of the caller's socket
//! with its own copy of the address, so no address can change after it was checked.
//!
//! The sandbox has a private network namespace, and a socket keeps the namespace it was created
//! in, so inet addresses reach only the sandbox's own loopback whoever connects. Path-named unix
//! sockets are looked up in the file system, so they are resolved like any path: connecting
//! needs `write` on the socket's path (sockets the sandbox created in its own writable
//! directories), binding needs `write` on the new name. Enforcing `net-allow` rules to reach
//! the outside network comes with the network issue.

use super::resolve::{Base, WalkFlags};
use super::{value, Client, Handled};
use warden_policy::Access;

/// Longest `sockaddr` the agent copies (`sizeof(struct sockaddr_storage)`).
const SOCKADDR_MAX: usize = 128;

/// Implements connect(2) and bind(2).
pub fn socket_address(c: &Client) -> Handled {
    let len = c.arg(2) as u32 as usize;
    if len > SOCKADDR_MAX {
        return Err(libc::EINVAL);
    }
    let mut addr = vec![0u8; len];
    c.read(c.arg(1), &mut addr)?;
    c.live()?;
    let sock = c.fd(c.int(0))?;
    let is_connect = c.nr() == libc::SYS_connect;
    let family = if len >= 2 {
        u16::from_ne_bytes([addr[0], addr[1]]) as i32
    } else {
        libc::AF_UNSPEC
    };
    let path = &addr[2.min(len)..];
    let named_unix = family == libc::AF_UNIX && path.first().is_some_and(|&b| b != 0);
    if !named_unix {
        // inet (private namespace), abstract and unnamed unix: the socket's own namespace decides.
        return raw_call(&sock, &addr, is_connect);
    }
    let end = path.iter().position(|&b| b == 0).unwrap_or(path.len());
    let w = c.resolver().walk(
        c,
        c.policy(),
        Base::Cwd,
        &path[..end],
        WalkFlags {
            follow: is_connect,
            ..WalkFlags::default()
        },
    )?;
    c.decide(&w.path, Access::Write)?;
    let name = w.name.as_deref().ok_or(libc::EISDIR)?.to_bytes();
    if name.len() >= 108 {
        return Err(libc::ENAMETOOLONG);
    }
    // This worker has its own cwd (unshare(CLONE_FS)): enter the held parent and use the bare
    // name, so the kernel's lookup starts from the directory we checked.
    rustix::process::fchdir(&w.parent).map_err(|e| e.raw_os_error())?;
    let mut local = vec![0u8; 2 + name.len() + 1];
    local[..2].copy_from_slice(&(libc::AF_UNIX as u16).to_ne_bytes());
    local[2..2 + name.len()].copy_from_slice(name);
    let result = raw_call(&sock, &local, is_connect);
    let _ = rustix::process::chdir("/");
    result
}

fn raw_call(sock: &std::os::fd::OwnedFd, addr: &[u8], connect: bool) -> Handled {
    crate::sys::net::address_call(sock, addr, connect)
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    value(0)
}
