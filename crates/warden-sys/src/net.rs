//! Socket calls on buffers the agent owns: connect(2)/bind(2) with a raw address, sendmsg(2),
//! the incoming filter, the namespace cookie, and the host's addresses.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// `connect(sock, addr)` or `bind(sock, addr)` with `addr` exactly as given.
pub fn address_call(sock: &OwnedFd, addr: &[u8], connect: bool) -> io::Result<()> {
    let len = addr.len() as libc::socklen_t;
    let ptr = addr.as_ptr().cast::<libc::sockaddr>();
    // SAFETY: `addr` is the agent's own buffer of `len` bytes, alive for the call; the kernel
    // only reads `len` bytes from it and validates the family and length itself.
    let rc = unsafe {
        if connect {
            libc::connect(sock.as_fd().as_raw_fd(), ptr, len)
        } else {
            libc::bind(sock.as_fd().as_raw_fd(), ptr, len)
        }
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `SO_NETNS_COOKIE` (Linux 5.14): the cookie of the network namespace a socket belongs to.
const SO_NETNS_COOKIE: libc::c_int = 71;

/// The network namespace cookie of `sock`'s namespace.
pub fn netns_cookie(sock: impl AsFd) -> io::Result<u64> {
    let mut cookie = 0u64;
    let mut len = std::mem::size_of::<u64>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` (8) bytes into `cookie`, a live u64, and updates
    // `len`, a live socklen_t.
    let rc = unsafe {
        libc::getsockopt(
            sock.as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            SO_NETNS_COOKIE,
            (&mut cookie as *mut u64).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(cookie)
}

/// Attaches the classic-BPF `program` to `sock` and locks it (`SO_LOCK_FILTER`), so the
/// socket's holder can neither detach nor replace it.
pub fn attach_locked_filter(sock: impl AsFd, program: &[libc::sock_filter]) -> io::Result<()> {
    let prog = libc::sock_fprog {
        len: u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?,
        filter: program.as_ptr().cast_mut(),
    };
    let one: libc::c_int = 1;
    // SAFETY: SO_ATTACH_FILTER reads `prog.len` instructions from `prog.filter`, which points
    // into `program`, alive for the call (the kernel copies them). SO_LOCK_FILTER reads one int.
    let rc = unsafe {
        let rc = libc::setsockopt(
            sock.as_fd().as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            (&prog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        );
        if rc < 0 {
            rc
        } else {
            libc::setsockopt(
                sock.as_fd().as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LOCK_FILTER,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        }
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `sendmsg(sock)` of one buffer, with an optional destination and control data, all owned by
/// the agent. Returns the bytes sent.
pub fn send_message(
    sock: impl AsFd,
    name: Option<&[u8]>,
    data: &[u8],
    control: &[u8],
    flags: libc::c_int,
) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: data.as_ptr().cast_mut().cast(),
        iov_len: data.len(),
    };
    // SAFETY: an all-zero msghdr is valid (no name, no iovecs, no control).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    if let Some(name) = name {
        msg.msg_name = name.as_ptr().cast_mut().cast();
        msg.msg_namelen = name.len() as libc::socklen_t;
    }
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !control.is_empty() {
        msg.msg_control = control.as_ptr().cast_mut().cast();
        msg.msg_controllen = control.len() as _;
    }
    // SAFETY: every pointer in `msg` points into a live buffer of the agent of the stated
    // length (`name`, `data` through `iov`, `control`); the kernel only reads them.
    let rc = unsafe { libc::sendmsg(sock.as_fd().as_raw_fd(), &msg, flags) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc as usize)
}

/// The host's own IP addresses (for `MYHOST_ADDR`), from `getifaddrs(3)`.
pub fn host_addresses() -> Vec<std::net::IpAddr> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    let mut out = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list it allocated, freed below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return out;
    }
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs returned, not yet freed; `ifa_addr`
        // is null or points to a sockaddr of the family it states.
        unsafe {
            let addr = (*cur).ifa_addr;
            if !addr.is_null() {
                match i32::from((*addr).sa_family) {
                    libc::AF_INET => {
                        let sin = &*(addr as *const libc::sockaddr_in);
                        out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                            sin.sin_addr.s_addr,
                        ))));
                    }
                    libc::AF_INET6 => {
                        let sin6 = &*(addr as *const libc::sockaddr_in6);
                        out.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
                    }
                    _ => {}
                }
            }
            cur = (*cur).ifa_next;
        }
    }
    // SAFETY: `list` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    out
}

/// The local address of `sock` (`getsockname`), as raw sockaddr bytes.
pub fn local_address(sock: impl AsFd) -> io::Result<Vec<u8>> {
    socket_name(sock.as_fd(), libc::getsockname)
}

/// The address of the peer `sock` is connected to (`getpeername`), as raw sockaddr bytes.
pub fn peer_address(sock: impl AsFd) -> io::Result<Vec<u8>> {
    socket_name(sock.as_fd(), libc::getpeername)
}

/// `call` (`getsockname` or `getpeername`, which take the same arguments) on `sock`.
fn socket_name(
    sock: BorrowedFd<'_>,
    call: unsafe extern "C" fn(
        libc::c_int,
        *mut libc::sockaddr,
        *mut libc::socklen_t,
    ) -> libc::c_int,
) -> io::Result<Vec<u8>> {
    // SAFETY: an all-zero sockaddr_storage is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `call` is getsockname or getpeername: the kernel writes at most `len` bytes into
    // `storage`, a live sockaddr_storage, and stores the address's length in `len`.
    let rc = unsafe {
        call(
            sock.as_raw_fd(),
            (&mut storage as *mut libc::sockaddr_storage).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(bytes_of(&storage, len))
}

/// `accept4(sock)` with a close-on-exec result (and `O_NONBLOCK` if asked): the connection and
/// the peer's address as raw sockaddr bytes.
pub fn accept(sock: impl AsFd, nonblock: bool) -> io::Result<(OwnedFd, Vec<u8>)> {
    use std::os::fd::FromRawFd;
    // SAFETY: an all-zero sockaddr_storage is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    let flags = libc::SOCK_CLOEXEC | if nonblock { libc::SOCK_NONBLOCK } else { 0 };
    // SAFETY: as getsockname above; on success the kernel returns a new descriptor nothing else
    // owns.
    let fd = unsafe {
        libc::accept4(
            sock.as_fd().as_raw_fd(),
            (&mut storage as *mut libc::sockaddr_storage).cast(),
            &mut len,
            flags,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by accept4 and is owned by no one else.
    let conn = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok((conn, bytes_of(&storage, len)))
}

fn bytes_of(storage: &libc::sockaddr_storage, len: libc::socklen_t) -> Vec<u8> {
    let len = (len as usize).min(std::mem::size_of::<libc::sockaddr_storage>());
    // SAFETY: `storage` is a live sockaddr_storage of at least `len` bytes (clamped above).
    let raw = unsafe {
        std::slice::from_raw_parts((storage as *const libc::sockaddr_storage).cast::<u8>(), len)
    };
    raw.to_vec()
}
