//! `warden run --capability-mode --fd NAME=PATH:RIGHTS`: the descriptors the program starts
//! with, opened by warden with no more access than their rights, and named for the program in
//! `WARDEN_FDLIST` (libcapsicum's fdlist).

use std::os::fd::IntoRawFd;
use std::sync::Arc;
use warden_capsicum::fdlist::{self, FdSpec, InheritedSpec};
use warden_capsicum::{Entry, Right, Session};

/// What the run gets: descriptors to pass, the fdlist variable, and the agent's session.
pub struct Opened {
    pub pass_fds: Vec<i32>,
    pub env: (String, Option<String>),
    pub session: Arc<Session>,
}

/// Opens every `--fd` and takes every `--fd-inherited` and the `--grant-socket`, for a sandbox
/// whose processes enter capability mode by `entry`. A file given `write` that does not exist
/// is created (mode 0666 less the umask), never truncated; a directory is opened for reading
/// when it has `read`, else `O_PATH`. An inherited descriptor open wider than its rights is
/// opened again narrower (`warden_capsicum::sandbox::narrow`); a socket cannot be, and is
/// refused then.
pub fn open(
    specs: &[FdSpec],
    inherited: &[InheritedSpec],
    grant_socket: Option<i32>,
    entry: Entry,
) -> Result<Opened, String> {
    let session = Session::new(entry);
    let mut named = Vec::new();
    let twice = |named: &[(String, i32)], name: &str| {
        if named.iter().any(|(n, _)| n == name) {
            Err(format!("--fd {name}: the name is given twice"))
        } else {
            Ok(())
        }
    };
    if let Some(n) = grant_socket {
        let sock = warden::sys::process::take_inherited(n)
            .map_err(|e| format!("--grant-socket {n}: {e}"))?;
        *session
            .grants
            .lock()
            .map_err(|_| "--grant-socket: poisoned")? = Some(sock);
    }
    for spec in inherited {
        twice(&named, &spec.name)?;
        let what = format!("--fd-inherited {}={}", spec.name, spec.fd);
        let fd = warden::sys::process::take_inherited(spec.fd)
            .map_err(|e| format!("{what}: descriptor {} is not open in warden: {e}", spec.fd))?;
        let fd = warden_capsicum::sandbox::narrow(std::os::fd::AsFd::as_fd(&fd), spec.rights)
            .map_err(|e| format!("{what}: its access mode is wider than {} and it cannot be opened again narrower ({e}); a socket needs read,write", spec.rights))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| format!("{what}: {e}"))?;
        session.held.grant(st.st_dev, st.st_ino, spec.rights);
        session.held.limit(st.st_dev, st.st_ino, spec.rights);
        root(&session, &fd, spec.rights);
        named.push((spec.name.clone(), fd.into_raw_fd()));
    }
    for spec in specs {
        twice(&named, &spec.name)?;
        let shown = spec.path.display();
        let dir = std::fs::metadata(&spec.path).is_ok_and(|m| m.is_dir());
        let mut flags = spec.rights.access_mode() | libc::O_CLOEXEC;
        if dir {
            flags = libc::O_DIRECTORY
                | libc::O_CLOEXEC
                | if spec.rights.has(Right::Read) {
                    libc::O_RDONLY
                } else {
                    libc::O_PATH
                };
        } else if spec.rights.has(Right::Write) {
            flags |= libc::O_CREAT;
        }
        let fd = rustix::fs::open(
            &spec.path,
            rustix::fs::OFlags::from_bits_retain(flags as u32),
            rustix::fs::Mode::from_raw_mode(0o666),
        )
        .map_err(|e| format!("--fd {}: cannot open {shown}: {e}", spec.name))?;
        let st = rustix::fs::fstat(&fd).map_err(|e| format!("--fd {}: {e}", spec.name))?;
        // Under --capsicum, where an object never seen holds every right, the table must
        // still hold exactly the rights given.
        session.held.grant(st.st_dev, st.st_ino, spec.rights);
        session.held.limit(st.st_dev, st.st_ino, spec.rights);
        root(&session, &fd, spec.rights);
        named.push((spec.name.clone(), fd.into_raw_fd()));
    }
    let list = fdlist::encode(named.iter().map(|(n, fd)| (n.as_str(), *fd)));
    Ok(Opened {
        pass_fds: named.iter().map(|(_, fd)| *fd).collect(),
        env: (fdlist::ENV.to_owned(), Some(list)),
        session: Arc::new(session),
    })
}

/// Keeps a copy of a capability the program starts with, for the Landlock layer narrowed to
/// the capabilities (`--capability-mode`). A copy that cannot be made leaves the layer without
/// it: the kernel then refuses more, never less.
fn root(session: &Session, fd: &std::os::fd::OwnedFd, rights: warden_capsicum::Rights) {
    if let (Ok(copy), Ok(mut roots)) = (fd.try_clone(), session.roots.lock()) {
        roots.push((copy, rights));
    }
}
