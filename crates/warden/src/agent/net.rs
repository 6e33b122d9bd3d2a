//! Sockets: `socket`, `connect`, `bind`, and the sends that name a peer, each performed by the
//! agent on its own duplicate of the caller's socket with its own copy of the address (and
//! data), so nothing can change after it was checked.
//!
//! Where a socket lives decides what it can reach, so that is what the agent looks at first:
//! - The sandbox has a private network namespace whose only interface is its own loopback.
//!   Sockets there (every inet socket when the policy has no IP rule) reach only the sandbox,
//!   so their addresses need no rule.
//! - When the policy has `net-allow` IP rules ([`Network::Host`]), `socket(AF_INET*)` is
//!   delegated: the agent makes the socket in warden's namespace and hands it over. Every
//!   address given to such a socket is checked: `connect` and sends against `outgoing` rules
//!   (a UDP server may also answer a peer an `incoming` rule lets in), `bind` against the local
//!   ports of `incoming` rules. `accept` is performed by the agent, which closes connections
//!   from peers no `incoming` rule allows before the program sees them. UDP sockets get the
//!   policy's incoming filter ([`super::incoming`]), locked, so datagrams from other peers are
//!   dropped in the kernel and the receives stay direct calls. (TCP sockets cannot: since Linux
//!   6.17 a socket filter on TCP needs `CAP_NET_ADMIN`, which an unprivileged warden lacks, and
//!   a connected TCP socket hears only its peer anyway.)
//! - The agent tells the two apart by the socket's namespace cookie (`SO_NETNS_COOKIE`), so a
//!   socket that came from anywhere else (`--pass-fd`) is checked like the agent's own.
//!
//! Path-named unix sockets are looked up in the file system, so they are resolved like any
//! path: connecting needs `net-allow outgoing unix-domain` or `write` on the socket's path,
//! binding needs `net-allow incoming unix-domain` or `write` on the new name. Abstract unix
//! sockets belong to a network namespace too, and Landlock's scope confines them besides.

use super::call::{
    AcceptArgs, AddressArgs, Live, Message, SendArgs, Sends, SocketArgs, SocketNameArgs, Typed,
    MMSGHDR,
};
use super::decode::{endpoint, family};
use super::resolve::{Base, WalkFlags};
use super::{incoming, value, Answer, Client, Handled, Served};
use crate::sys::seccomp::Instruction;
use crate::sys::unotify::Reply;
use crate::syscalls::Network;
use rustix::io::Errno;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::OwnedFd;
use warden_policy::{Access, Direction, IpUse, NetAddr, NetTarget, Policy, Protocol};

/// Longest `sockaddr` the agent copies (`sizeof(struct sockaddr_storage)`).
pub const SOCKADDR_MAX: usize = 128;
/// Most data the agent copies for one message. A stream send of more is sent in part (as the
/// kernel may do); a datagram this large could not be sent anyway.
pub const SEND_MAX: usize = 256 * 1024;
/// Most the agent copies for one `sendmmsg` (data, control messages and addresses, all
/// messages together); later messages are left unsent, and the call returns how many were
/// sent, as the kernel may. The last message copied may pass it by one message's control data
/// and address.
pub const SENDMMSG_MAX: usize = 1024 * 1024;
/// Most control data of one message (the kernel's own default bound is smaller).
pub const CONTROL_MAX: usize = 64 * 1024;
/// `UIO_MAXIOV`: most iovecs per message and messages per `sendmmsg`.
pub const IOV_MAX: usize = 1024;

/// What the agent knows about the sandbox's network, fixed for the run.
pub struct Context {
    /// Whether inet sockets reach the host's network.
    pub mode: Network,
    ip: IpUse,
    myhost: Vec<IpAddr>,
    host_cookie: Option<u64>,
    udp_filter: Vec<Instruction>,
    /// The host sockets the sandbox holds, bounded by `limit-sockets` ([`super::held`]).
    pub held: super::held::Held,
    /// The paths the program gave the unix sockets the agent bound ([`super::unix_names`]).
    pub unix_names: super::unix_names::UnixNames,
}

impl Context {
    /// The context for `policy`; fails if its rules do not fit in a socket filter.
    pub fn new(policy: &Policy) -> Result<Context, incoming::TooLarge> {
        let ip = policy.ip_use();
        let uses_myhost = policy.net_rules().iter().any(|r| {
            matches!(
                r.target,
                NetTarget::Ip {
                    addr: NetAddr::MyHost,
                    ..
                }
            )
        });
        let myhost = if uses_myhost {
            crate::sys::net::host_addresses()
        } else {
            Vec::new()
        };
        // warden's own namespace, as the cookie of a socket of ours.
        let host_cookie = rustix::net::socket(
            rustix::net::AddressFamily::UNIX,
            rustix::net::SocketType::STREAM,
            None,
        )
        .ok()
        .and_then(|s| crate::sys::net::netns_cookie(&s).ok());
        let udp_filter = if ip.udp {
            incoming::compile(policy, Protocol::Udp, &myhost)?
        } else {
            Vec::new()
        };
        Ok(Context {
            mode: if ip.any() {
                Network::Host { udp: ip.udp }
            } else {
                Network::Private
            },
            ip,
            myhost,
            host_cookie,
            udp_filter,
            held: super::held::Held::new(
                policy
                    .limits
                    .sockets
                    .unwrap_or(warden_policy::DEFAULT_SOCKETS),
            ),
            unix_names: Default::default(),
        })
    }

    /// Whether `sock` belongs to warden's own network namespace, so its addresses reach the
    /// host's network (when unsure: yes). The sandbox's private namespace has another cookie.
    fn reaches_out(&self, sock: &OwnedFd) -> bool {
        match (crate::sys::net::netns_cookie(sock), self.host_cookie) {
            (Ok(cookie), Some(host)) => cookie == host,
            _ => true,
        }
    }
}

/// How an address is used.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Use {
    Connect,
    Bind,
    Send,
}

/// Implements socket(2) for inet and inet6 when the policy allows IP traffic.
pub fn socket(c: &Client, call: Live<SocketArgs>) -> Served {
    let a = call.args();
    let proto =
        match (a.kind, a.protocol) {
            (libc::SOCK_STREAM, 0 | libc::IPPROTO_TCP) => Protocol::Tcp,
            (libc::SOCK_DGRAM, 0 | libc::IPPROTO_UDP) => Protocol::Udp,
            _ => return Err(Errno::from_raw_os_error(c.refuse(
                "socket",
                "only TCP and UDP sockets reach the network (raw, ICMP and other protocols do not)",
                libc::EACCES,
            ))),
        };
    let net = c.net();
    if !net.ip.allows(proto) {
        return Err(Errno::from_raw_os_error(c.refuse(
            &format!("{proto} socket"),
            &format!(
                "the policy has no net-allow {proto} rule; add one such as: \
                 net-allow outgoing {proto} ADDRESS PORT"
            ),
            libc::EACCES,
        )));
    }
    let mut sflags = rustix::net::SocketFlags::CLOEXEC;
    if a.nonblock {
        sflags |= rustix::net::SocketFlags::NONBLOCK;
    }
    let sock = rustix::net::socket_with(
        rustix::net::AddressFamily::from_raw(a.domain as u16),
        rustix::net::SocketType::from_raw(a.kind as u32),
        sflags,
        None,
    )?;
    if proto == Protocol::Udp {
        crate::sys::net::attach_locked_filter(&sock, &net.udp_filter).map_err(io_errno)?;
    }
    admit(c, &sock).typed()?;
    // Where pidfd_getfd is refused, the agent's own copy serves its later calls.
    c.keep_socket(&sock);
    Ok(Answer::Fd(sock, a.cloexec))
}

/// Counts a host socket about to be handed to the sandbox, or refuses it at `limit-sockets`
/// (see [`super::held`]); `EMFILE`, what a descriptor limit answers.
fn admit(c: &Client, sock: &OwnedFd) -> Result<(), i32> {
    let inode = rustix::fs::fstat(sock)
        .map_err(|e| e.raw_os_error())?
        .st_ino;
    let held = &c.net().held;
    let live = || {
        c.pid_namespace()
            .map(super::held::held_in_namespace)
            .unwrap_or_default()
    };
    if held.admit(inode, live) {
        return Ok(());
    }
    let max = held.max();
    Err(c.refuse(
        "socket",
        &format!(
            "the sandbox holds {max} sockets in the host's network, the most limit-sockets \
             allows; raise it with --sockets N or `limit-sockets N`"
        ),
        libc::EMFILE,
    ))
}

/// Implements connect(2) and bind(2).
pub fn socket_address(c: &Client, call: Live<AddressArgs>) -> Served {
    let a = call.args();
    if family(&a.addr) == libc::AF_UNIX {
        // The name is decided before the socket is taken: where pidfd_getfd is refused, a
        // name the policy refuses (or that is not there) is answered as anywhere else, and
        // only a connect or bind that would go ahead needs the caller's socket.
        return unix_address(c, &call, || c.fd(a.fd)).typed();
    }
    let sock = c.fd(a.fd).typed()?;
    let how = if a.connect { Use::Connect } else { Use::Bind };
    if c.net().reaches_out(&sock) {
        let served = match check_address(c, &call, &sock, &a.addr, how).typed()? {
            Some(concrete) => raw_call(&sock, &concrete, a.connect),
            None => raw_call(&sock, &a.addr, a.connect),
        };
        // A connection made, or under way (a nonblocking connect), needs the agent's copy no
        // more (kept only where pidfd_getfd is refused).
        if a.connect
            && matches!(served, Ok(_) | Err(libc::EINPROGRESS))
            && rustix::net::sockopt::socket_type(&sock) == Ok(rustix::net::SocketType::STREAM)
        {
            c.forget_socket(&sock);
        }
        return served.typed();
    }
    let result = raw_call(&sock, &a.addr, a.connect);
    match result {
        Err(errno) if a.connect => Err(Errno::from_raw_os_error(private_connect_failed(
            c, &sock, &a.addr, errno,
        ))),
        other => other.typed(),
    }
}

/// A connect in the sandbox's private network namespace (a policy with no `net-allow` rule)
/// failed with `errno`, as it does for every address but the sandbox's own loopback: logged as
/// a denial, with the rule that would let it through (`-v` said nothing). The program still
/// gets the kernel's answer.
fn private_connect_failed(c: &Client, sock: &OwnedFd, addr: &[u8], errno: i32) -> i32 {
    let Ok((ip, port)) = endpoint(family(addr), addr) else {
        return errno;
    };
    let proto = match rustix::net::sockopt::socket_type(sock) {
        Ok(rustix::net::SocketType::STREAM) => Protocol::Tcp,
        Ok(rustix::net::SocketType::DGRAM) => Protocol::Udp,
        _ => return errno,
    };
    let to = std::net::SocketAddr::new(plain(ip), port);
    let why = format!(
        "the sandbox has no network (no net-allow rule): its sockets live in a private network \
         namespace that reaches nothing but its own loopback; {}",
        c.policy()
            .explain_ip_denial(Direction::Outgoing, proto, plain(ip), port)
    );
    c.refuse(&format!("{proto} {to}"), &why, errno)
}

/// A path-named unix socket is resolved like any path; abstract and unnamed ones are left to
/// the socket's own namespace (and Landlock's scope).
fn unix_address(
    c: &Client,
    call: &Live<AddressArgs>,
    sock: impl FnOnce() -> Result<OwnedFd, i32>,
) -> Handled {
    let (addr, is_connect) = (&call.args().addr, call.args().connect);
    let Some(path) = super::decode::unix_path(addr) else {
        // Abstract names are the network namespace's; without one of the sandbox's own
        // (`crate::confine::hostns`) they are the host's, and refused (an unnamed bind, an
        // address of the family alone, is not a name).
        if c.without_namespaces() && addr.len() > 2 {
            return Err(c.refuse(
                "abstract unix socket",
                "abstract unix socket names are the host's: this host refuses namespaces, so \
                 the sandbox has no network namespace of its own",
                libc::EPERM,
            ));
        }
        return raw_call(&sock()?, addr, is_connect);
    };
    let dir = if is_connect {
        Direction::Outgoing
    } else {
        Direction::Incoming
    };
    c.names_unix_socket(dir, path);
    let walked = c.resolver().walk(
        c,
        c.policy(),
        Base::Cwd,
        path,
        WalkFlags {
            follow: is_connect,
            ..WalkFlags::default()
        },
    );
    let w = match walked {
        // A bind names what is not there yet: a directory on the way the policy hides is
        // answered as missing, and named for -v with the rule that brings it in.
        Err(libc::ENOENT) if !is_connect => return Err(c.unix_name_hidden(libc::ENOENT)),
        other => other?,
    };
    let _allowed = match c.policy().check_unix(dir, &w.path) {
        Some(rule) => c.allow_net(call, &format!("unix {}", w.path), rule.span.to_string()),
        None => c
            .allow(call, &w.path, Access::Write)
            .map_err(|e| e.raw_os_error())?,
    };
    let name = w.name.as_deref().ok_or(libc::EISDIR)?;
    if is_connect {
        return connect_checked(c, sock, &w.parent, name, &w.path);
    }
    let sock = sock()?;
    let name = name.to_bytes();
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
    if result.is_ok() {
        // The kernel recorded the bare name: keep the program's, for getsockname.
        let file = rustix::fs::statat(&w.parent, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .map(|st| (st.st_dev, st.st_ino));
        if let Ok(st) = rustix::fs::fstat(&sock) {
            c.net().unix_names.bound(st.st_ino, file, name, path);
        }
    }
    let _ = rustix::process::chdir("/");
    result
}

/// Connects `sock` to the socket named `name` in the directory we walked and checked, through
/// the descriptor of the object we looked at, never through the name again.
///
/// `connect` follows symlinks, so connecting by name after the check would let a thread that
/// swaps a symlink in (`renameat2(RENAME_EXCHANGE)`) send the agent to any socket on the host,
/// where the server would see warden's credentials. Instead the agent opens the name with
/// `O_PATH|O_NOFOLLOW`, requires a socket, and connects to `/proc/self/fd/N`: the kernel's
/// lookup ends on exactly that inode.
fn connect_checked(
    c: &Client,
    sock: impl FnOnce() -> Result<OwnedFd, i32>,
    dir: &OwnedFd,
    name: &std::ffi::CStr,
    path: &str,
) -> Handled {
    use rustix::fs::{FileType, Mode, OFlags};
    use std::os::fd::AsRawFd;
    let obj = rustix::fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| e.raw_os_error())?;
    let st = rustix::fs::fstat(&obj).map_err(|e| e.raw_os_error())?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Socket => {}
        FileType::Symlink => {
            return Err(c.refuse(
                path,
                "the socket's name was replaced by a symlink after it was checked",
                libc::ECONNREFUSED,
            ))
        }
        // What the kernel answers for a name that is not a socket.
        _ => return Err(libc::ECONNREFUSED),
    }
    let target = format!("/proc/self/fd/{}", obj.as_raw_fd());
    let mut local = vec![0u8; 2 + target.len() + 1];
    local[..2].copy_from_slice(&(libc::AF_UNIX as u16).to_ne_bytes());
    local[2..2 + target.len()].copy_from_slice(target.as_bytes());
    // Taken last: a name that is not there or not a socket is answered without it.
    let sock = sock()?;
    let result = raw_call(&sock, &local, true);
    if result.is_ok() {
        if let Ok(ours) = rustix::fs::fstat(&sock) {
            c.net()
                .unix_names
                .connected(ours.st_ino, (st.st_dev, st.st_ino));
        }
    }
    result
}

/// Implements getsockname(2) and getpeername(2): the kernel answers (the call goes on), except
/// for a unix socket named by a bind the agent made by a short name, whose name is given back
/// as the program wrote it ([`super::unix_names`]).
pub fn socket_name(c: &Client, call: Live<SocketNameArgs>) -> Served {
    let a = call.args();
    let kernel_answers = Ok(Answer::Reply(Reply::Continue));
    let names = &c.net().unix_names;
    if names.is_empty() {
        return kernel_answers;
    }
    let Some(sock) = c.fd_if_reachable(a.fd) else {
        return kernel_answers;
    };
    let Some(path) = program_name(names, &sock, a.peer) else {
        return kernel_answers;
    };
    // As the kernel writes a name: the caller's room read first (a negative one refused by
    // the kernel itself), at most that much written, the name's full length back.
    let Some(room) = c.read_socklen(a.len_at).filter(|&r| r >= 0) else {
        return kernel_answers;
    };
    let mut out = Vec::with_capacity(3 + path.len());
    out.extend_from_slice(&(libc::AF_UNIX as u16).to_ne_bytes());
    out.extend_from_slice(&path);
    out.push(0);
    let n = out.len().min(room as usize);
    if n > 0 {
        c.write(a.addr_at, &out[..n]).typed()?;
    }
    c.write(a.len_at, &(out.len() as u32).to_ne_bytes())
        .typed()?;
    value(0).typed()
}

/// The program's path for the name (or the peer's name) of `sock`, where the kernel's is a
/// bare name the agent bound for it.
fn program_name(
    names: &super::unix_names::UnixNames,
    sock: &OwnedFd,
    peer: bool,
) -> Option<Vec<u8>> {
    let st = rustix::fs::fstat(sock).ok()?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Socket {
        return None;
    }
    let addr = if peer {
        crate::sys::net::peer_address(sock)
    } else {
        crate::sys::net::local_address(sock)
    }
    .ok()?;
    if family(&addr) != libc::AF_UNIX {
        return None;
    }
    names.name(st.st_ino, peer, super::decode::unix_path(&addr)?)
}

/// Checks an address given to a socket outside the sandbox's namespace. Anything that is not
/// an inet address the policy allows is refused: such a socket never gets an address the
/// agent did not check.
///
/// `Some(address)`: use this address instead of the caller's. The unspecified destination
/// (`0.0.0.0`, `::`) means "this host" to the kernel, which sends it to the address the socket
/// is bound to (or loopback when it is not bound): the agent checks that address and then
/// names it itself, so a bind racing in between cannot send the connection somewhere else.
fn check_address<A>(
    c: &Client,
    live: &Live<A>,
    sock: &OwnedFd,
    addr: &[u8],
    how: Use,
) -> Result<Option<Vec<u8>>, i32> {
    let v4_layout = || endpoint(libc::AF_INET, addr);
    let (ip, port) = match family(addr) {
        libc::AF_INET | libc::AF_INET6 => endpoint(family(addr), addr)?,
        // AF_UNSPEC dissolves a connection ...
        libc::AF_UNSPEC if how == Use::Connect => return Ok(None),
        // ... but an inet bind or a UDP send reads it as AF_INET (an IPv6 send, as "no
        // address": the connected peer, which was checked).
        libc::AF_UNSPEC => match rustix::net::sockopt::socket_domain(sock) {
            Ok(rustix::net::AddressFamily::INET6) if how == Use::Send => return Ok(None),
            _ => v4_layout()?,
        },
        _ => return Err(libc::EAFNOSUPPORT),
    };
    let proto = protocol(c, sock)?;
    let policy = c.policy();
    let myhost = &c.net().myhost;
    // The unspecified address, as a destination, is this host: the socket's own bound address,
    // or loopback. Check it as that, and send it there by name (see above).
    let (ip, concrete) = if how == Use::Bind || !is_unspecified(ip) {
        (ip, None)
    } else {
        let to = destination(sock, ip);
        (to, Some(sockaddr(family(addr), to, port)))
    };
    let what = format!("{proto} {}", std::net::SocketAddr::new(plain(ip), port));
    let rule = match how {
        Use::Bind if port == 0 => return Ok(None),
        Use::Bind => policy.check_local_port(proto, port),
        Use::Connect | Use::Send => policy
            .check_ip(Direction::Outgoing, proto, ip, port, myhost)
            .or_else(|| {
                // A UDP server answers (or connects to) a client an incoming rule let in: the
                // peer's address and our local port, as the incoming filter checked them.
                let local = local_port(sock)?;
                (proto == Protocol::Udp)
                    .then(|| policy.check_ip(Direction::Incoming, proto, ip, local, myhost))
                    .flatten()
            }),
    };
    match rule {
        Some(rule) => {
            c.allow_net(live, &what, rule.span.to_string());
            Ok(concrete)
        }
        None => {
            let why = match how {
                Use::Bind => policy.explain_bind_denial(proto, port),
                _ => policy.explain_ip_denial(Direction::Outgoing, proto, ip, port),
            };
            Err(c.refuse(&what, &why, libc::EACCES))
        }
    }
}

/// The transport protocol of a socket outside the sandbox.
fn protocol(c: &Client, sock: &OwnedFd) -> Result<Protocol, i32> {
    match rustix::net::sockopt::socket_type(sock) {
        Ok(rustix::net::SocketType::STREAM) => Ok(Protocol::Tcp),
        Ok(rustix::net::SocketType::DGRAM) => Ok(Protocol::Udp),
        _ => Err(c.refuse(
            "socket",
            "only TCP and UDP sockets reach the network",
            libc::EACCES,
        )),
    }
}

fn is_unspecified(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_unspecified(),
        IpAddr::V6(v6) => {
            v6.is_unspecified() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_unspecified())
        }
    }
}

/// Where the kernel sends a packet for the unspecified address `ip` on `sock`: to the address
/// the socket is bound to, or, when it is bound to none, to loopback (`::1`, or `127.0.0.1`
/// for IPv4 and IPv4-mapped addresses).
fn destination(sock: &OwnedFd, ip: IpAddr) -> IpAddr {
    let bound = crate::sys::net::local_address(sock)
        .ok()
        .and_then(|name| endpoint(family(&name), &name).ok())
        .map(|(local, _)| local)
        .filter(|local| !is_unspecified(*local));
    if let Some(local) = bound {
        return local;
    }
    match ip {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some() => {
            IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped())
        }
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
    }
}

/// A `sockaddr_in` (for `AF_INET` and the `AF_UNSPEC` that inet sockets read as it) or
/// `sockaddr_in6` naming `ip` and `port`; an IPv4 address in an IPv6 one is IPv4-mapped.
fn sockaddr(family: i32, ip: IpAddr, port: u16) -> Vec<u8> {
    let v4 = match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(_) => None,
    };
    match (family, v4) {
        (libc::AF_INET6, _) | (_, None) => {
            let v6 = match ip {
                IpAddr::V4(v4) => v4.to_ipv6_mapped(),
                IpAddr::V6(v6) => v6,
            };
            let mut a = vec![0u8; 28];
            a[..2].copy_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
            a[2..4].copy_from_slice(&port.to_be_bytes());
            a[8..24].copy_from_slice(&v6.octets());
            a
        }
        (_, Some(v4)) => {
            let mut a = vec![0u8; 16];
            a[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
            a[2..4].copy_from_slice(&port.to_be_bytes());
            a[4..8].copy_from_slice(&v4.octets());
            a
        }
    }
}

/// The local port `sock` is bound to, if any.
fn local_port(sock: &OwnedFd) -> Option<u16> {
    let name = crate::sys::net::local_address(sock).ok()?;
    endpoint(family(&name), &name).ok().map(|(_, p)| p)
}

/// An IPv4-mapped IPv6 address in its IPv4 spelling, for messages.
fn plain(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn raw_call(sock: &OwnedFd, addr: &[u8], connect: bool) -> Handled {
    crate::sys::net::address_call(sock, addr, connect)
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    value(0)
}

fn io_errno(e: std::io::Error) -> Errno {
    Errno::from_raw_os_error(e.raw_os_error().unwrap_or(libc::EIO))
}

/// Implements sendto(2) with an address, sendmsg(2) and sendmmsg(2) (when the policy allows
/// UDP, whose messages may each name a peer).
pub fn send(c: &Client, call: Live<SendArgs>) -> Served {
    let (live, a) = call.split();
    let sock = c.fd(a.fd).typed()?;
    match a.sends {
        Sends::One(msg) => {
            let n = send_one(c, &live, &sock, msg, a.flags).typed()?;
            Ok(Answer::Reply(Reply::Value(n as i64)))
        }
        Sends::Many { vec, msgs } => {
            let mut sent = 0u64;
            for m in msgs {
                match send_one(c, &live, &sock, m, a.flags) {
                    Ok(n) => {
                        c.write(vec + sent * MMSGHDR + 56, &(n as u32).to_ne_bytes())
                            .typed()?;
                        sent += 1;
                    }
                    Err(e) if sent == 0 => return Err(Errno::from_raw_os_error(e)),
                    Err(_) => break,
                }
            }
            Ok(Answer::Reply(Reply::Value(sent as i64)))
        }
    }
}

/// Sends one copied message on the agent's duplicate `sock`, after checking its address.
fn send_one(
    c: &Client,
    live: &Live<()>,
    sock: &OwnedFd,
    mut msg: Message,
    flags: i32,
) -> Result<usize, i32> {
    if flags & libc::MSG_FASTOPEN != 0 {
        return Err(libc::EOPNOTSUPP);
    }
    let stream = matches!(
        rustix::net::sockopt::socket_type(sock),
        Ok(rustix::net::SocketType::STREAM)
    );
    if msg.declared > msg.data.len() && !stream {
        return Err(libc::EMSGSIZE);
    }
    if let Some(name) = &msg.name {
        if family(name) == libc::AF_UNIX {
            // Unix datagram sockets cannot be made in the sandbox; a stream socket refuses an
            // address itself.
            if !stream {
                return Err(c.refuse(
                    "unix datagram",
                    "unix datagram sockets are not delegated",
                    libc::EACCES,
                ));
            }
        } else if c.net().reaches_out(sock) {
            if let Some(concrete) = check_address(c, live, sock, name, Use::Send)? {
                msg.name = Some(concrete);
            }
        }
    }
    // Descriptors passed along are the caller's numbers: send our duplicates of them.
    let _held = translate_rights(c, &mut msg.control)?;
    let result = crate::sys::net::send_message(
        sock,
        msg.name.as_deref(),
        &msg.data,
        &msg.control,
        flags | libc::MSG_NOSIGNAL,
    );
    match result {
        Ok(n) => Ok(n),
        Err(e) => {
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            if errno == libc::EPIPE && flags & libc::MSG_NOSIGNAL == 0 {
                // The kernel would have raised SIGPIPE in the sender.
                let tgid = c.ids()?.tgid;
                crate::sys::signals::thread_kill(tgid, c.tid(), libc::SIGPIPE);
            }
            Err(errno)
        }
    }
}

/// Control messages the agent passes to the kernel with a send: descriptors (translated) and
/// the per-packet settings any unprivileged process may set. Everything else is refused.
fn forwardable(level: i32, kind: i32) -> bool {
    /// `UDP_SEGMENT` (linux/udp.h): the GSO segment size of a UDP send.
    const UDP_SEGMENT: i32 = 103;
    matches!(
        (level, kind),
        (libc::SOL_SOCKET, libc::SCM_RIGHTS)
            | (libc::IPPROTO_IP, libc::IP_TOS | libc::IP_TTL)
            | (libc::IPPROTO_IPV6, libc::IPV6_HOPLIMIT | libc::IPV6_TCLASS)
            | (libc::IPPROTO_UDP, UDP_SEGMENT)
    )
}

/// Rewrites the `SCM_RIGHTS` descriptors in `control` (the caller's numbers) into duplicates
/// the agent holds, returned so they stay open until the message is sent. Other control
/// messages must be [`forwardable`]: the kernel would check them against the agent.
fn translate_rights(c: &Client, control: &mut [u8]) -> Result<Vec<OwnedFd>, i32> {
    use std::os::fd::AsRawFd;
    let mut held = Vec::new();
    for m in super::decode::cmsgs(control)? {
        if !forwardable(m.level, m.kind) {
            // The kernel checks a control message against the sender's credentials, and the
            // sender is the agent: credentials, IP options (source routes), marks and
            // priorities would be set with warden's privileges, not the program's.
            return Err(c.refuse(
                &format!("control message level {} type {}", m.level, m.kind),
                "only descriptors (SCM_RIGHTS) and the TOS, TTL, hop limit, traffic class and \
                 GSO segment size are forwarded by the agent",
                libc::EOPNOTSUPP,
            ));
        }
        if m.level == libc::SOL_SOCKET && m.kind == libc::SCM_RIGHTS {
            for slot in control[m.data].chunks_exact_mut(4) {
                let theirs = i32::from_ne_bytes(slot.try_into().expect("4 bytes"));
                let ours = c.fd(theirs)?;
                slot.copy_from_slice(&ours.as_raw_fd().to_ne_bytes());
                held.push(ours);
            }
        }
    }
    Ok(held)
}

/// Implements accept(2) and accept4(2) when the policy allows IP traffic: the agent accepts on
/// its duplicate of the listening socket, and a connection from an inet peer no `incoming`
/// rule allows is closed there (and the next one taken), so the program never holds it.
pub fn accept(c: &Client, call: Live<AcceptArgs>) -> Served {
    let a = call.args();
    let listener = c.fd(a.fd).typed()?;
    let checked = c.net().reaches_out(&listener);
    loop {
        let (conn, peer) = crate::sys::net::accept(&listener, a.flags & libc::SOCK_NONBLOCK != 0)
            .map_err(io_errno)?;
        if checked && !incoming_allowed(c, &call, &conn, &peer) {
            // Closed here: the peer sees its connection reset, the program sees nothing.
            continue;
        }
        if checked {
            admit(c, &conn).typed()?;
        }
        if let Some((addr_at, len_at)) = a.peer {
            let n = peer.len().min(a.room);
            c.write(addr_at, &peer[..n]).typed()?;
            c.write(len_at, &(peer.len() as u32).to_ne_bytes())
                .typed()?;
        }
        return Ok(Answer::Fd(conn, a.flags & libc::SOCK_CLOEXEC != 0));
    }
}

/// Whether an accepted connection from `peer` may reach the program (logged either way).
fn incoming_allowed(c: &Client, call: &Live<AcceptArgs>, conn: &OwnedFd, peer: &[u8]) -> bool {
    let (Ok((ip, peer_port)), Some(local)) = (endpoint(family(peer), peer), local_port(conn))
    else {
        // Not an inet connection (a unix socket's): nothing to check.
        return !matches!(family(peer), libc::AF_INET | libc::AF_INET6);
    };
    let policy = c.policy();
    let what = format!(
        "tcp {} to local port {local}",
        std::net::SocketAddr::new(plain(ip), peer_port)
    );
    match policy.check_ip(
        Direction::Incoming,
        Protocol::Tcp,
        ip,
        local,
        &c.net().myhost,
    ) {
        Some(rule) => {
            c.allow_net(call, &what, rule.span.to_string());
            true
        }
        None => {
            let why = policy.explain_ip_denial(Direction::Incoming, Protocol::Tcp, ip, local);
            c.refuse(&what, &why, libc::ECONNABORTED);
            false
        }
    }
}
