//! Scrubbed sandbox start (libcapsicum's `lch_start` with its fdlist): a host program starts a
//! sandboxed program holding exactly a named list of descriptors with their rights, in a fresh
//! address space, in capability mode from its first instruction, with a unix socket to the host
//! for requests and for passing more capabilities later.
//!
//! # How
//!
//! [`Sandbox::start`] runs `warden run --capability-mode` as a child of the host through a
//! process descriptor ([`crate::process`]), with `--fd-inherited NAME=N:RIGHTS` for each named
//! descriptor and for the sandbox's end of the socket ([`HOST`]), and `--grant-socket N` for a
//! second socket on which warden's agent takes more capabilities from the host. warden opens no
//! path for them: it takes each descriptor as the host holds it, narrowed to its rights' access
//! mode ([`narrow`]), records its rights for its agent and passes exactly those descriptors to
//! the program (every other descriptor is closed at exec; stdio stays). The program is a new
//! `execve` (a fresh address space) under `--capability-mode`, so no instruction of it runs
//! outside the mode. It finds its descriptors by name in `WARDEN_FDLIST`
//! ([`crate::fdlist::lookup`]) and its socket with [`host`].
//!
//! # Passing capabilities later, with their rights
//!
//! Rights are kept by the sandbox's agent per object ([`crate::held`]); a descriptor the agent
//! has never seen holds no right it checks (lookups, create, fchmod, fexecve, ...), and the
//! kernel's access mode decides read and write. [`Sandbox::send`] therefore narrows each
//! descriptor to its rights' access mode, has the agent record its rights over the grant
//! socket (warden refuses a descriptor whose access mode is wider than its rights) and only
//! then sends it over the socket to the program (`SCM_RIGHTS`): it arrives with exactly its
//! rights. The program cannot reach the grant socket, and what it sends the host carries no
//! rights anyone trusts.
//!
//! # Ending it
//!
//! Dropping the [`Sandbox`] closes the process descriptor, which kills warden (`SIGKILL`), whose
//! death kills the sandbox (every process of it has `PR_SET_PDEATHSIG`, docs/design.md
//! invariant 7), and closes the socket (the program reads end of file). [`Sandbox::stop`] does
//! the same and waits.
//!
//! Messages are `SOCK_SEQPACKET` records of up to [`MAX_MESSAGE`] bytes and [`MAX_FDS`]
//! descriptors. While [`Sandbox::start`] runs, the descriptors it passes are open without
//! close-on-exec in the host (the child must inherit them): another thread of the host that
//! starts a program at that moment inherits them too.

use crate::process::{Exit, ProcessDescriptor};
use crate::rights::{Right, Rights};
use std::ffi::CString;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

/// The name of the sandbox's socket to its host in `WARDEN_FDLIST`.
pub const HOST: &str = "host";
/// The largest message on the socket.
pub const MAX_MESSAGE: usize = 65536;
/// The most descriptors one message carries.
pub const MAX_FDS: usize = 16;

/// One descriptor the sandbox starts with: its name in `WARDEN_FDLIST`, the host's descriptor
/// and the rights the sandbox gets to it.
#[derive(Clone, Copy, Debug)]
pub struct Named<'a> {
    /// The name the program asks for (letters, digits, `_` and `-`; not [`HOST`]).
    pub name: &'a str,
    /// The host's descriptor (the sandbox gets it narrowed to `rights`).
    pub fd: BorrowedFd<'a>,
    /// What the sandbox may do with it.
    pub rights: Rights,
}

/// A sandbox started by [`Sandbox::start`]: its process descriptor, the host's end of its
/// socket, and the socket to its agent for grants.
#[derive(Debug)]
pub struct Sandbox {
    process: ProcessDescriptor,
    socket: OwnedFd,
    grants: OwnedFd,
}

fn seqpacket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::SEQPACKET,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    )?)
}

/// A close-on-exec copy of `fd`, numbered 3 or above, for the child to inherit (it alone clears
/// the flag, [`ProcessDescriptor::spawn_keeping`]), and its number.
fn inheritable(fd: BorrowedFd<'_>) -> io::Result<(OwnedFd, i32)> {
    let copy = rustix::io::fcntl_dupfd_cloexec(fd, 3)?;
    let n = copy.as_raw_fd();
    Ok((copy, n))
}

impl Sandbox {
    /// Starts `program` (`program[0]` is the file to run, the rest its arguments) under
    /// `warden run --capability-mode`, with `warden_args` before the program (for instance
    /// `--exec DIR`, which the program's own `execve` needs) and exactly the descriptors `fds`
    /// with their rights, plus its socket to the host, named [`HOST`].
    pub fn start(
        warden: &Path,
        warden_args: &[&str],
        program: &[&str],
        fds: &[Named<'_>],
    ) -> io::Result<Sandbox> {
        if program.is_empty() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let (socket, theirs) = seqpacket_pair()?;
        let (grants, agents) = seqpacket_pair()?;
        let mut held = Vec::new();
        let mut args: Vec<String> = vec!["warden".into(), "run".into(), "--capability-mode".into()];
        args.extend(warden_args.iter().map(|a| (*a).to_owned()));
        for named in fds {
            if named.name == HOST {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{HOST:?} names the sandbox's socket to its host"),
                ));
            }
            let narrowed = narrow(named.fd, named.rights)?;
            let (copy, n) = inheritable(narrowed.as_fd())?;
            held.push(copy);
            args.push("--fd-inherited".into());
            args.push(format!("{}={n}:{}", named.name, named.rights));
        }
        let (copy, n) = inheritable(theirs.as_fd())?;
        held.push(copy);
        args.push("--fd-inherited".into());
        args.push(format!("{HOST}={n}:read,write,event"));
        let (copy, n) = inheritable(agents.as_fd())?;
        held.push(copy);
        args.push("--grant-socket".into());
        args.push(n.to_string());
        args.push("--".into());
        args.extend(program.iter().map(|a| (*a).to_owned()));
        let cargs = args
            .iter()
            .map(|a| CString::new(a.as_str()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let refs: Vec<&std::ffi::CStr> = cargs.iter().map(CString::as_c_str).collect();
        let path = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(warden.as_os_str()))
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        let keep: Vec<BorrowedFd<'_>> = held.iter().map(AsFd::as_fd).collect();
        let process = ProcessDescriptor::spawn_keeping(&path, &refs, &keep)?;
        // The child has its copies; ours (and our ends of theirs) close here.
        drop(held);
        Ok(Sandbox {
            process,
            socket,
            grants,
        })
    }

    /// Sends `bytes` and the descriptors `fds` to the program, each narrowed to its rights and
    /// recorded with them by the sandbox's agent first (see the module docs).
    pub fn send(&self, bytes: &[u8], fds: &[(BorrowedFd<'_>, Rights)]) -> io::Result<()> {
        let mut narrowed = Vec::with_capacity(fds.len());
        for (fd, rights) in fds {
            let n = narrow(*fd, *rights)?;
            grant(self.grants.as_fd(), n.as_fd(), *rights)?;
            narrowed.push(n);
        }
        let borrowed: Vec<BorrowedFd<'_>> = narrowed.iter().map(AsFd::as_fd).collect();
        send_message(self.socket.as_fd(), bytes, &borrowed)
    }

    /// The program's next message and the descriptors it carries; an empty message with no
    /// descriptor when the program closed its end (or ended).
    pub fn recv(&self) -> io::Result<(Vec<u8>, Vec<OwnedFd>)> {
        recv_message(self.socket.as_fd())
    }

    /// One request and its answer: [`Sandbox::send`], then [`Sandbox::recv`].
    pub fn call(
        &self,
        bytes: &[u8],
        fds: &[(BorrowedFd<'_>, Rights)],
    ) -> io::Result<(Vec<u8>, Vec<OwnedFd>)> {
        self.send(bytes, fds)?;
        self.recv()
    }

    /// The sandbox's process descriptor (warden's process: closing it ends the sandbox).
    pub fn process(&self) -> &ProcessDescriptor {
        &self.process
    }

    /// Ends the sandbox now and waits for warden: closing the socket, then killing warden,
    /// whose death kills every process of the sandbox.
    pub fn stop(self) -> io::Result<Exit> {
        let Sandbox {
            process,
            socket,
            grants,
        } = self;
        drop(socket);
        drop(grants);
        process.kill(libc::SIGKILL)?;
        process.wait()
    }
}

/// The program's socket to its host (the descriptor named [`HOST`]), taken over: its number in
/// `WARDEN_FDLIST` is closed and a close-on-exec copy returned.
pub fn host() -> io::Result<Host> {
    let n = crate::fdlist::lookup(HOST).ok_or_else(|| io::Error::from_raw_os_error(libc::EBADF))?;
    Ok(Host {
        socket: warden_sys::process::take_inherited(n)?,
    })
}

/// The program's end of its socket to the host.
#[derive(Debug)]
pub struct Host {
    socket: OwnedFd,
}

impl Host {
    /// The host's next message and the descriptors it carries (with the rights the host gave
    /// them); an empty message with no descriptor when the host closed its end.
    pub fn recv(&self) -> io::Result<(Vec<u8>, Vec<OwnedFd>)> {
        recv_message(self.socket.as_fd())
    }

    /// Sends `bytes` and `fds` to the host.
    pub fn send(&self, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
        send_message(self.socket.as_fd(), bytes, fds)
    }
}

impl AsFd for Host {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.socket.as_fd()
    }
}

/// Sends one message with descriptors on a `SOCK_SEQPACKET` socket.
pub fn send_message(
    socket: BorrowedFd<'_>,
    bytes: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    if bytes.len() > MAX_MESSAGE || fds.len() > MAX_FDS {
        return Err(io::Error::from_raw_os_error(libc::EMSGSIZE));
    }
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(rustix::net::SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::from_raw_os_error(libc::EMSGSIZE));
    }
    let sent = rustix::net::sendmsg(
        socket,
        &[io::IoSlice::new(bytes)],
        &mut control,
        rustix::net::SendFlags::NOSIGNAL,
    )?;
    if sent != bytes.len() {
        return Err(io::ErrorKind::WriteZero.into());
    }
    Ok(())
}

/// Receives one message with descriptors (close-on-exec) from a `SOCK_SEQPACKET` socket. A
/// message or its descriptors cut short is an error (`EMSGSIZE`), its descriptors closed.
pub fn recv_message(socket: BorrowedFd<'_>) -> io::Result<(Vec<u8>, Vec<OwnedFd>)> {
    let mut buf = vec![0u8; MAX_MESSAGE];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = rustix::net::RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(
        socket,
        &mut [io::IoSliceMut::new(&mut buf)],
        &mut control,
        rustix::net::RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fds = Vec::new();
    for m in control.drain() {
        if let rustix::net::RecvAncillaryMessage::ScmRights(received) = m {
            fds.extend(received);
        }
    }
    if got
        .flags
        .intersects(rustix::net::ReturnFlags::TRUNC | rustix::net::ReturnFlags::CTRUNC)
    {
        return Err(io::Error::from_raw_os_error(libc::EMSGSIZE));
    }
    buf.truncate(got.bytes);
    Ok((buf, fds))
}

/// Whether `fd` reads and writes, by its access mode (an `O_PATH` descriptor does neither).
pub fn access_mode(fd: BorrowedFd<'_>) -> io::Result<(bool, bool)> {
    use rustix::fs::OFlags;
    let fl = rustix::fs::fcntl_getfl(fd)?;
    if fl.contains(OFlags::PATH) {
        return Ok((false, false));
    }
    Ok(match fl & OFlags::RWMODE {
        m if m == OFlags::WRONLY => (false, true),
        m if m == OFlags::RDWR => (true, true),
        _ => (true, false),
    })
}

/// Why `fd` cannot stand for `rights`: its access mode lets it read or write where the rights
/// do not (a directory open for reading is the exception: reading it lists names, and what
/// they name is the agent's, by lookup).
pub fn wider_than(fd: BorrowedFd<'_>, rights: Rights) -> io::Result<Option<&'static str>> {
    let (reads, writes) = access_mode(fd)?;
    let st = rustix::fs::fstat(fd)?;
    let dir = rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory;
    Ok(if writes && !rights.has(Right::Write) {
        Some("it is open for writing and the rights have no write")
    } else if reads && !rights.has(Right::Read) && !dir {
        Some("it is open for reading and the rights have no read")
    } else {
        None
    })
}

/// A descriptor for the object of `fd` whose access mode is no wider than `rights` (see
/// [`wider_than`]): a close-on-exec copy of `fd` when it is not wider, else the object opened
/// again through `/proc/self/fd` with the narrower mode (status flags and offset kept; a file
/// left neither read nor write is an `O_PATH` descriptor). A socket, which cannot be opened
/// again, fails with `EOPNOTSUPP` then.
pub fn narrow(fd: BorrowedFd<'_>, rights: Rights) -> io::Result<OwnedFd> {
    use rustix::fs::FileType;
    if wider_than(fd, rights)?.is_none() {
        return Ok(rustix::io::fcntl_dupfd_cloexec(fd, 3)?);
    }
    let (reads, _) = access_mode(fd)?;
    let dir = FileType::from_raw_mode(rustix::fs::fstat(fd)?.st_mode) == FileType::Directory;
    reopen(
        fd,
        rights.has(Right::Read) || (dir && reads),
        rights.has(Right::Write),
    )
}

/// The object of `fd` opened again through this process's `/proc/self/fd`, reading and writing
/// only as `read` and `write` say (neither: an `O_PATH` descriptor), close-on-exec, with `fd`'s
/// status flags and, for a file, its offset. A socket cannot be opened again (`EOPNOTSUPP`).
/// The agent narrows the descriptors of programs in capability mode with it too.
pub fn reopen(fd: BorrowedFd<'_>, read: bool, write: bool) -> io::Result<OwnedFd> {
    use rustix::fs::{FileType, Mode, OFlags};
    let kind = FileType::from_raw_mode(rustix::fs::fstat(fd)?.st_mode);
    if kind == FileType::Socket {
        return Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP));
    }
    let mode = match (read, write) {
        (true, true) => OFlags::RDWR,
        (true, false) => OFlags::RDONLY,
        (false, true) => OFlags::WRONLY,
        (false, false) => OFlags::PATH,
    };
    let old = rustix::fs::fcntl_getfl(fd)?;
    let kept = old
        & (OFlags::APPEND
            | OFlags::NONBLOCK
            | OFlags::DIRECT
            | OFlags::NOATIME
            | OFlags::SYNC
            | OFlags::DSYNC);
    // Non-blocking for the open itself: a FIFO would otherwise wait for its other end.
    let new = rustix::fs::open(
        format!("/proc/self/fd/{}", fd.as_raw_fd()),
        mode | kept | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    if mode != OFlags::PATH {
        rustix::fs::fcntl_setfl(&new, kept)?;
    }
    if mode != OFlags::PATH && matches!(kind, FileType::RegularFile | FileType::BlockDevice) {
        let pos = rustix::fs::seek(fd, rustix::fs::SeekFrom::Current(0))?;
        rustix::fs::seek(&new, rustix::fs::SeekFrom::Start(pos))?;
    }
    Ok(new)
}

/// Asks the sandbox's agent, over its grant socket, to record `rights` for the object of `fd`
/// (which must be no wider than them, see [`narrow`]); returns once it has.
pub fn grant(grants: BorrowedFd<'_>, fd: BorrowedFd<'_>, rights: Rights) -> io::Result<()> {
    send_message(grants, &rights.bits().to_ne_bytes(), &[fd])?;
    let (answer, _) = recv_message(grants)?;
    match <[u8; 4]>::try_from(answer.as_slice()) {
        Ok(bytes) => match i32::from_ne_bytes(bytes) {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        },
        // The agent is gone (the sandbox ended).
        Err(_) => Err(io::Error::from_raw_os_error(libc::EPIPE)),
    }
}

/// Serves the grant socket of a sandbox (warden's side of [`grant`]) until the host closes it:
/// each message is a rights set and one descriptor; the descriptor's object is granted those
/// rights in `held` unless its access mode is wider than them (`EINVAL`) or the table is full
/// (`ENFILE`). The answer is 0 or the errno.
pub fn serve_grants(grants: OwnedFd, held: &crate::Held) {
    loop {
        let answer = match recv_message(grants.as_fd()) {
            Ok((bytes, fds)) if bytes.is_empty() && fds.is_empty() => return,
            Ok((bytes, fds)) => one_grant(&bytes, &fds, held),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => libc::EMSGSIZE,
            Err(_) => return,
        };
        if send_message(grants.as_fd(), &answer.to_ne_bytes(), &[]).is_err() {
            return;
        }
    }
}

fn one_grant(bytes: &[u8], fds: &[OwnedFd], held: &crate::Held) -> i32 {
    let (Ok(bits), [fd]) = (<[u8; 8]>::try_from(bytes), fds) else {
        return libc::EINVAL;
    };
    let Some(rights) = Rights::from_bits(u64::from_ne_bytes(bits)) else {
        return libc::EINVAL;
    };
    match wider_than(fd.as_fd(), rights) {
        Ok(None) => {}
        Ok(Some(_)) => return libc::EINVAL,
        Err(e) => return e.raw_os_error().unwrap_or(libc::EINVAL),
    }
    let Ok(st) = rustix::fs::fstat(fd) else {
        return libc::EBADF;
    };
    if held.grant(st.st_dev, st.st_ino, rights) {
        0
    } else {
        libc::ENFILE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrowing_takes_the_access_mode_down_to_the_rights() {
        let path = std::env::temp_dir().join(format!("warden-narrow-{}", std::process::id()));
        std::fs::write(&path, b"0123456789").unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        rustix::fs::seek(&f, rustix::fs::SeekFrom::Start(4)).unwrap();
        let read = Rights::of(&[Right::Read, Right::Seek]);
        assert!(wider_than(f.as_fd(), read).unwrap().is_some());
        let n = narrow(f.as_fd(), read).unwrap();
        assert_eq!(wider_than(n.as_fd(), read).unwrap(), None);
        assert_eq!(
            rustix::io::write(&n, b"x"),
            Err(rustix::io::Errno::BADF),
            "the narrowed descriptor writes"
        );
        let mut b = [0u8; 2];
        assert_eq!(rustix::io::read(&n, &mut b), Ok(2));
        assert_eq!(&b, b"45", "the offset was not kept");
        // The host's own descriptor keeps its rights.
        assert_eq!(rustix::io::pwrite(&f, b"y", 0), Ok(1));
        let path_only = narrow(f.as_fd(), Rights::of(&[Right::Fstat])).unwrap();
        assert_eq!(access_mode(path_only.as_fd()).unwrap(), (false, false));
        let (s, _t) = seqpacket_pair().unwrap();
        assert_eq!(
            narrow(s.as_fd(), read).unwrap_err().raw_os_error(),
            Some(libc::EOPNOTSUPP)
        );
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn grants_are_recorded_and_never_wider_than_the_descriptor() {
        let held = std::sync::Arc::new(crate::Held::default());
        let (host, agent) = seqpacket_pair().unwrap();
        let server = {
            let held = std::sync::Arc::clone(&held);
            std::thread::spawn(move || serve_grants(agent, &held))
        };
        let dir = std::fs::File::open(std::env::temp_dir()).unwrap();
        let lookup = Rights::of(&[Right::Lookup, Right::Read]);
        grant(host.as_fd(), dir.as_fd(), lookup).unwrap();
        let st = rustix::fs::fstat(&dir).unwrap();
        assert_eq!(held.rights(st.st_dev, st.st_ino), lookup);
        // A writable descriptor offered as read-only: refused, nothing recorded.
        let path = std::env::temp_dir().join(format!("warden-grant-{}", std::process::id()));
        let f = std::fs::File::create(&path).unwrap();
        let err = grant(host.as_fd(), f.as_fd(), Rights::of(&[Right::Read])).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
        let st = rustix::fs::fstat(&f).unwrap();
        assert_eq!(held.rights(st.st_dev, st.st_ino), Rights::NONE);
        // A malformed message is answered, not fatal.
        send_message(host.as_fd(), b"xy", &[]).unwrap();
        let (answer, _) = recv_message(host.as_fd()).unwrap();
        assert_eq!(answer, libc::EINVAL.to_ne_bytes());
        drop(host);
        server.join().unwrap();
        let _ = std::fs::remove_file(&path);
    }
}
