//! Path resolution by descriptor (brief invariant 2).
//!
//! A path is walked one component at a time from a directory descriptor the agent holds
//! (`O_PATH|O_NOFOLLOW`). Symlinks are read by the agent and followed by the agent, each hop
//! checked against the policy; `..` pops the stack of held directories, so it can never climb
//! out of where the walk actually went. The result is the parent directory's descriptor, the
//! final name, and the *logical* path that the policy is checked against: the path that was
//! walked is the path that is checked, and the final operation is done relative to the held
//! parent with no symlink following, so no concurrent rename or symlink swap can redirect it.
//!
//! Two more rules keep the walk from leaking what the policy hides:
//! - an error met on the way (`ENOENT`, `ENOTDIR`, ...) is reported as such only where the policy
//!   lets the program know about that path; elsewhere it becomes `EACCES`, the same answer a
//!   denied existing path gets, so existence cannot be probed;
//! - `/proc/self`, `/proc/thread-self` and `/proc/<the caller's own pid>` are translated to the
//!   calling process (the agent's `/proc/self` is the agent); other pids are not visible.

use super::Client;
use rustix::fs::{openat, readlinkat, AtFlags, FileType, Mode, OFlags};
use std::collections::VecDeque;
use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use warden_policy::Policy;

/// Longest symlink chain followed, as the kernel's `MAXSYMLINKS`.
const MAX_HOPS: usize = 40;

/// Where a relative path starts.
#[derive(Clone, Copy, Debug)]
pub enum Base {
    /// The calling thread's current directory (`AT_FDCWD`).
    Cwd,
    /// A directory descriptor of the caller.
    Fd(i32),
}

/// How to walk.
#[derive(Clone, Copy, Debug, Default)]
pub struct WalkFlags {
    /// Follow a symlink in the final component.
    pub follow: bool,
    /// Refuse every symlink (openat2 `RESOLVE_NO_SYMLINKS`).
    pub no_symlinks: bool,
    /// Stay beneath the starting directory (openat2 `RESOLVE_BENEATH`).
    pub beneath: bool,
}

/// A walked path.
pub struct Walked {
    /// The directory holding the final component (or the target itself when `name` is None).
    pub parent: OwnedFd,
    /// The final component; `None` when the path named a directory through `/`, `.` or `..`.
    pub name: Option<CString>,
    /// The logical absolute path, as checked against the policy.
    pub path: String,
    /// The final object's type, if it exists (not following a final symlink unless asked).
    pub kind: Option<FileType>,
}

impl Walked {
    /// The name to use with `*at` calls on `parent` ("." when the target is `parent`).
    pub fn at_name(&self) -> CString {
        self.name.clone().unwrap_or_else(|| c".".to_owned())
    }

    /// An `O_PATH|O_NOFOLLOW` descriptor of the final object, which must exist. Calls made
    /// through it (or through `/proc/self/fd/N`) act on exactly this object.
    pub fn object(&self) -> Result<OwnedFd, i32> {
        openat(
            &self.parent,
            self.at_name().as_c_str(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| e.raw_os_error())
    }
}

/// A directory on the walk's stack: our descriptor and its logical path.
struct Dir {
    fd: OwnedFd,
    path: String,
}

fn join(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Splits a path into components, dropping empty ones and `.`.
fn components(path: &[u8]) -> VecDeque<Vec<u8>> {
    path.split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
        .map(<[u8]>::to_vec)
        .collect()
}

/// The resolver's view of the world: the agent's root and procfs identity.
pub struct Resolver {
    root: OwnedFd,
    proc_dev_ino: (u64, u64),
}

impl Resolver {
    /// Opens the agent's root and notes which directory is procfs's root.
    pub fn new() -> std::io::Result<Resolver> {
        let root = openat(
            rustix::fs::CWD,
            "/",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let proc = rustix::fs::stat("/proc")?;
        Ok(Resolver {
            root,
            proc_dev_ino: (proc.st_dev, proc.st_ino),
        })
    }

    fn root_dir(&self) -> Result<Dir, i32> {
        let fd = openat(
            &self.root,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| e.raw_os_error())?;
        Ok(Dir {
            fd,
            path: "/".into(),
        })
    }

    fn is_proc_root(&self, fd: BorrowedFd<'_>) -> bool {
        rustix::fs::fstat(fd).is_ok_and(|st| (st.st_dev, st.st_ino) == self.proc_dev_ino)
    }

    /// The stack a walk starts from: root for absolute paths, else the caller's cwd or dirfd,
    /// re-walked from root by its path so that its logical path is one we walked ourselves.
    fn start(
        &self,
        client: &Client,
        policy: &Policy,
        base: Base,
        absolute: bool,
    ) -> Result<Vec<Dir>, i32> {
        let mut stack = vec![self.root_dir()?];
        if absolute {
            return Ok(stack);
        }
        let actual = match base {
            Base::Cwd => client.cwd()?,
            Base::Fd(fd) => client.fd(fd)?,
        };
        let st = rustix::fs::fstat(&actual).map_err(|e| e.raw_os_error())?;
        if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
            return Err(libc::ENOTDIR);
        }
        let text = readlinkat(
            rustix::fs::CWD,
            format!("/proc/self/fd/{}", raw(&actual)),
            Vec::new(),
        )
        .map_err(|e| e.raw_os_error())?;
        let text = text.to_bytes();
        if !text.starts_with(b"/") {
            return Err(libc::ENOENT);
        }
        let logical = client.logical_proc_path(text)?;
        let mut parts = components(&logical);
        let mut hops = 0;
        // Every component is a directory to enter (never "the final one"), so the stack ends
        // up holding the whole chain and `..` from the start climbs to the real parent.
        let flags = WalkFlags {
            follow: true,
            ..WalkFlags::default()
        };
        while let Some(part) = parts.pop_front() {
            if self
                .step(
                    client, policy, &mut stack, part, &mut parts, false, flags, &mut hops, 1,
                )?
                .is_some()
            {
                return Err(libc::ENOTDIR);
            }
        }
        let top = stack.last().expect("stack keeps root");
        let walked = rustix::fs::fstat(&top.fd).map_err(|e| e.raw_os_error())?;
        if (walked.st_dev, walked.st_ino) != (st.st_dev, st.st_ino) {
            // The directory is not reachable by its own path (deleted, or outside our view).
            return Err(libc::ENOENT);
        }
        Ok(stack)
    }

    /// Walks `path` for `client` from `base`.
    pub fn walk(
        &self,
        client: &Client,
        policy: &Policy,
        base: Base,
        path: &[u8],
        flags: WalkFlags,
    ) -> Result<Walked, i32> {
        if path.is_empty() {
            return Err(libc::ENOENT);
        }
        let absolute = path[0] == b'/';
        if flags.beneath && absolute {
            return Err(libc::EXDEV);
        }
        if absolute && !flags.beneath {
            if let Some(walked) = self.fast_walk(client, policy, path, flags)? {
                return Ok(walked);
            }
        }
        let mut stack = self.start(client, policy, base, absolute)?;
        let floor = if flags.beneath { stack.len() } else { 1 };
        // A trailing slash means "a directory", and follows a final symlink.
        let trailing_slash = path.ends_with(b"/");
        let flags = WalkFlags {
            follow: flags.follow || trailing_slash,
            ..flags
        };
        let mut parts = components(path);
        let mut hops = 0;
        while let Some(part) = parts.pop_front() {
            let last = parts.is_empty();
            if let Some(walked) = self.step(
                client, policy, &mut stack, part, &mut parts, last, flags, &mut hops, floor,
            )? {
                if trailing_slash
                    && walked.kind.is_some()
                    && walked.kind != Some(FileType::Directory)
                {
                    return Err(mask(policy, &walked.path, libc::ENOTDIR));
                }
                return Ok(walked);
            }
        }
        // The path ended in `/`, `.` or `..`: the target is the directory on top of the stack.
        let top = stack.pop().expect("stack keeps root");
        Ok(Walked {
            parent: top.fd,
            name: None,
            path: top.path,
            kind: Some(FileType::Directory),
        })
    }

    /// The common case in one call: an absolute path with no `..`, no symlink before its final
    /// component and no mount crossing. The kernel walks the directories with
    /// `openat2(RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)`, which refuses
    /// exactly what the component walk would treat specially (a symlink to read and check, a
    /// mount that may be procfs), so the directory it returns is the one the component walk
    /// would have reached by the same names, and the logical path is the text itself. The final
    /// component then goes through [`Resolver::step`] as usual. `None`: take the component walk
    /// (which also computes the masked errors, so a failure here is never reported as such).
    fn fast_walk(
        &self,
        client: &Client,
        policy: &Policy,
        path: &[u8],
        flags: WalkFlags,
    ) -> Result<Option<Walked>, i32> {
        if path.ends_with(b"/") {
            return Ok(None);
        }
        let mut parts = components(path);
        if parts.iter().any(|p| p == b"..") {
            return Ok(None);
        }
        let Some(last) = parts.pop_back() else {
            return Ok(None);
        };
        let dir = if parts.is_empty() {
            self.root_dir()?
        } else {
            let rel: Vec<u8> = parts.iter().fold(Vec::new(), |mut acc, p| {
                if !acc.is_empty() {
                    acc.push(b'/');
                }
                acc.extend_from_slice(p);
                acc
            });
            let how = rustix::fs::ResolveFlags::NO_SYMLINKS
                | rustix::fs::ResolveFlags::NO_MAGICLINKS
                | rustix::fs::ResolveFlags::NO_XDEV;
            let Ok(fd) = rustix::fs::openat2(
                &self.root,
                rel.as_slice(),
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
                how,
            ) else {
                return Ok(None);
            };
            let logical = format!("/{}", String::from_utf8_lossy(&rel));
            Dir { fd, path: logical }
        };
        let mut stack = vec![dir];
        let (mut rest, mut hops) = (VecDeque::new(), 0);
        // A final symlink to follow continues the walk from a stack we did not build (its
        // target may use `..`): leave that to the component walk.
        self.step(
            client, policy, &mut stack, last, &mut rest, true, flags, &mut hops, 1,
        )
    }

    /// One component. Returns `Some` when the walk ends here (the final component), `None` when
    /// it entered a directory or queued a symlink's target in front of `rest`.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        client: &Client,
        policy: &Policy,
        stack: &mut Vec<Dir>,
        part: Vec<u8>,
        rest: &mut VecDeque<Vec<u8>>,
        last: bool,
        flags: WalkFlags,
        hops: &mut usize,
        floor: usize,
    ) -> Result<Option<Walked>, i32> {
        if part == b".." {
            if stack.len() > floor {
                stack.pop();
            } else if flags.beneath {
                return Err(libc::EXDEV);
            }
            return Ok(None);
        }
        let top = stack.last().expect("stack keeps root");
        if let Some(mapped) = self.proc_component(client, top.fd.as_fd(), &part)? {
            for p in mapped.physical {
                let dir = stack.last().expect("non-empty");
                let fd = openat(
                    &dir.fd,
                    p.as_slice(),
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                )
                .map_err(|e| e.raw_os_error())?;
                stack.push(Dir {
                    fd,
                    path: String::new(),
                });
            }
            stack.last_mut().expect("non-empty").path = mapped.logical;
            return Ok(None);
        }
        let path = join(&top.path, &String::from_utf8_lossy(&part));
        let name = cstring(&part)?;
        let done = |stack: &mut Vec<Dir>, kind| {
            let parent = stack.pop().expect("non-empty").fd;
            Ok(Some(Walked {
                parent,
                name: Some(name.clone()),
                path: path.clone(),
                kind,
            }))
        };
        // The final component is only looked at (one fstatat), unless it is a symlink to
        // follow; a directory on the way is opened, to walk on from.
        let (kind, fd) = if last {
            match rustix::fs::statat(&top.fd, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => (FileType::from_raw_mode(st.st_mode), None),
                Err(rustix::io::Errno::NOENT) => return done(stack, None),
                Err(e) => return Err(mask(policy, &path, e.raw_os_error())),
            }
        } else {
            let fd = openat(
                &top.fd,
                name.as_c_str(),
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| mask(policy, &path, e.raw_os_error()))?;
            let st = rustix::fs::fstat(&fd).map_err(|e| e.raw_os_error())?;
            (FileType::from_raw_mode(st.st_mode), Some(fd))
        };
        match kind {
            FileType::Symlink if !last || flags.follow => {
                if flags.no_symlinks {
                    return Err(libc::ELOOP);
                }
                *hops += 1;
                if *hops > MAX_HOPS {
                    return Err(libc::ELOOP);
                }
                // Following a symlink reads it: the link itself must be visible.
                if policy.visible(&path).is_none() {
                    return Err(libc::EACCES);
                }
                // The link we looked at: through its descriptor on the way, by name at the
                // end (a link swapped in meanwhile is read instead, as if it had been there
                // first; its target is walked and checked all the same).
                let target = match &fd {
                    Some(fd) => readlinkat(fd, c"", Vec::new()),
                    None => readlinkat(&top.fd, name.as_c_str(), Vec::new()),
                }
                .map_err(|e| e.raw_os_error())?
                .into_bytes();
                if target.starts_with(b"/") {
                    if flags.beneath {
                        return Err(libc::EXDEV);
                    }
                    stack.truncate(1);
                }
                let mut front = components(&target);
                if front.is_empty() {
                    // "/" or ".": the target is the directory now on top.
                    front.push_back(b".".to_vec());
                    if last {
                        let top = stack.pop().expect("non-empty");
                        return Ok(Some(Walked {
                            parent: top.fd,
                            name: None,
                            path: top.path,
                            kind: Some(FileType::Directory),
                        }));
                    }
                }
                while let Some(p) = front.pop_back() {
                    if p != b"." {
                        rest.push_front(p);
                    }
                }
                Ok(None)
            }
            _ if last => done(stack, Some(kind)),
            FileType::Directory => {
                stack.push(Dir {
                    fd: fd.expect("opened on the way"),
                    path,
                });
                Ok(None)
            }
            _ => Err(mask(policy, &path, libc::ENOTDIR)),
        }
    }

    /// Translates `/proc/self`, `/proc/thread-self` and `/proc/<own pid>` for the caller.
    fn proc_component(
        &self,
        client: &Client,
        dir: BorrowedFd<'_>,
        part: &[u8],
    ) -> Result<Option<ProcMapping>, i32> {
        let is_self = part == b"self";
        let is_thread = part == b"thread-self";
        let is_pid = !part.is_empty() && part.iter().all(u8::is_ascii_digit);
        if !(is_self || is_thread || is_pid) || !self.is_proc_root(dir) {
            return Ok(None);
        }
        let ids = client.ids()?;
        if is_pid && part != ids.ns_tgid.to_string().as_bytes() {
            // Other processes, in or out of the sandbox, are not visible by number.
            return Err(libc::ENOENT);
        }
        let tgid = ids.tgid.to_string().into_bytes();
        Ok(Some(if is_thread {
            ProcMapping {
                physical: vec![
                    tgid,
                    b"task".to_vec(),
                    client.tid().to_string().into_bytes(),
                ],
                logical: "/proc/thread-self".into(),
            }
        } else {
            ProcMapping {
                physical: vec![tgid],
                logical: "/proc/self".into(),
            }
        }))
    }
}

struct ProcMapping {
    physical: Vec<Vec<u8>>,
    logical: String,
}

/// Whether metadata of `path` (an object of type `kind`) may be shown: some right on it, or it
/// is a directory the walk to an allowed path passes through (so `realpath`, `ls ..` and
/// `cd /tmp` on the way to `/tmp/work` behave; listing it still needs `read`).
pub fn visible(policy: &Policy, path: &str, kind: Option<FileType>) -> bool {
    policy.visible(path).is_some()
        || (kind == Some(FileType::Directory) && policy.may_traverse(path))
}

/// Reports `errno` for `path` only if the policy lets the program know about `path`.
pub fn mask(policy: &Policy, path: &str, errno: i32) -> i32 {
    if errno == libc::EACCES || policy.visible(path).is_some() || policy.may_traverse(path) {
        errno
    } else {
        libc::EACCES
    }
}

fn cstring(bytes: &[u8]) -> Result<CString, i32> {
    CString::new(bytes.to_vec()).map_err(|_| libc::EINVAL)
}

fn raw(fd: &OwnedFd) -> i32 {
    use std::os::fd::AsRawFd;
    fd.as_raw_fd()
}
