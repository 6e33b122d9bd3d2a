//! Path resolution by descriptor (docs/design.md, invariant 2).
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

mod bases;

use super::decode::{clean, Part, Pending, NAME_MAX};
use super::Ids;
use rustix::fs::{openat, readlinkat, AtFlags, FileType, Mode, OFlags};
use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use warden_policy::Policy;

/// Longest symlink chain followed, as the kernel's `MAXSYMLINKS`.
pub const MAX_HOPS: usize = 40;

/// Where a relative path starts.
#[derive(Clone, Copy, Debug)]
pub enum Base {
    /// The calling thread's current directory (`AT_FDCWD`).
    Cwd,
    /// A directory descriptor of the caller.
    Fd(i32),
}

/// What the resolver needs to know about the process it walks for: the agent's [`super::Client`],
/// or, in the unit tests, the test itself on a directory tree of its own.
pub trait Caller {
    /// The directory a relative path starts from, as the caller holds it (the real object),
    /// and its absolute path as the kernel names it (`/proc/self/fd/N`'s link, with the
    /// caller's own `/proc/<tgid>` written `/proc/self`). The walk re-walks that path from its
    /// root and requires it to reach the same object.
    fn base(&self, base: Base) -> Result<(OwnedFd, Vec<u8>), i32>;
    /// The caller's process ids.
    fn ids(&self) -> Result<Ids, i32>;
    /// The calling thread's id, in the agent's PID namespace.
    fn tid(&self) -> u32;
    /// Whether the caller's descriptor `fd` is a stand-in for a symlink ([`super::stand_in`]).
    fn is_stand_in(&self, fd: i32) -> bool;
    /// Requires (and logs) that some access to `path` is allowed: `EACCES` otherwise.
    fn decide_visible(&self, path: &str) -> Result<(), i32>;
    /// Logs (and counts) as refused a lookup of `path` that the sandbox's private `/tmp` does
    /// not have and the host's `/tmp` does ([`warden_policy::Policy::in_private_tmp`]).
    fn refuse_hosts_tmp(&self, path: &str);
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
    /// The path named one of the caller's own descriptors through `/proc/self/fd/N` (or
    /// `/dev/stdin`, `/dev/fd/N`, ...), and that descriptor is not a file on a path (a pipe, a
    /// socket): `Some(N)`, and `kind` is `None`. Its link names no path to walk; reopening what
    /// the program already holds is its own right ([`super::fs`]).
    pub descriptor: Option<i32>,
}

impl Walked {
    /// The name to use with `*at` calls on `parent` ("." when the target is `parent`).
    pub fn at_name(&self) -> CString {
        self.at_cstr().to_owned()
    }

    /// The same, borrowed.
    pub fn at_cstr(&self) -> &std::ffi::CStr {
        self.name.as_deref().unwrap_or(c".")
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

/// Whether `name` in `parent` is a mount point of the tree `parent` belongs to: the object the
/// name reaches lies on another mount than `parent` itself (a name that is not there is none).
///
/// The agent acts on the sandbox's view through descriptors, from warden's own mount namespace,
/// and the kernel's refusal to unlink, rmdir, rename or replace a mount point (`EBUSY`) looks
/// at the *caller's* namespace: there the view's mounts are not mount points, and a call the
/// kernel refuses the program would reach the host's file hidden beneath a read-only map or an
/// overmount. So the agent asks the mount identity itself, and refuses as the kernel would in
/// the sandbox. The answer cannot go stale between this check and the call: the program cannot
/// mount, and no call the agent or the kernel performs moves a mount point's name.
pub fn mount_point(parent: BorrowedFd<'_>, name: &std::ffi::CStr) -> Result<bool, i32> {
    use rustix::fs::StatxFlags;
    let mount = |fd: BorrowedFd<'_>, name: &std::ffi::CStr, flags: AtFlags| {
        let st =
            rustix::fs::statx(fd, name, flags, StatxFlags::MNT_ID).map_err(|e| e.raw_os_error())?;
        // Every kernel warden runs on (5.14+) answers STATX_MNT_ID (5.8); one that does not
        // cannot show the call safe.
        if st.stx_mask & StatxFlags::MNT_ID.bits() == 0 {
            return Err(libc::EBUSY);
        }
        Ok(st.stx_mnt_id)
    };
    let here = mount(parent, c"", AtFlags::EMPTY_PATH)?;
    match mount(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(there) => Ok(there != here),
        Err(libc::ENOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Longest logical path the agent checks, as the kernel's `PATH_MAX` (with its NUL): a walk
/// whose logical path grows past it fails with `ENAMETOOLONG`.
pub const PATH_MAX: usize = 4096;
/// Most directories one walk holds at once. The kernel holds none; the agent holds one
/// descriptor per level so that `..` climbs where the walk actually went. Deeper walks fail with
/// `ENAMETOOLONG`, which bounds a request's descriptors and memory however deep a tree the
/// program builds (design: the agent is a server facing a hostile client).
pub const MAX_DEPTH: usize = 256;

/// How a directory on the walk's stack got its logical path.
enum Name {
    /// The walk's root, `/`.
    Root,
    /// Entered by this name from the directory below it on the stack.
    Child(Box<str>),
    /// A translated `/proc` entry whose logical path is not its parent's plus a name
    /// (`/proc/thread-self` sits on `/proc/self/task`).
    Mapped(Box<str>),
    /// Reached by the kernel's walk of this logical path from the root, right above it on the
    /// stack ([`Resolver::fast_start`]): its parents were never held, and `..` opens them the
    /// same way ([`Stack::pop`]).
    Walked(Box<str>),
}

/// A directory on the walk's stack: our descriptor and how its logical path was made.
struct Dir {
    fd: OwnedFd,
    name: Name,
}

/// The directories a walk holds, root first, and the logical path of the top one.
///
/// Memory is linear in the path: each level keeps only its own name, and the one `String` is
/// the top's path, rebuilt from the names (not kept per level) when a pop crosses a mapped
/// `/proc` entry. Both the path and the depth are bounded ([`PATH_MAX`], [`MAX_DEPTH`]).
struct Stack {
    dirs: Vec<Dir>,
    path: String,
    /// The directories a [`Name::Walked`] entry stands for besides itself (its ancestors, not
    /// held): they count towards [`MAX_DEPTH`] as the component walk's would.
    unheld: usize,
}

impl Stack {
    fn new(root: OwnedFd) -> Stack {
        Stack {
            dirs: vec![Dir {
                fd: root,
                name: Name::Root,
            }],
            path: "/".into(),
            unheld: 0,
        }
    }

    /// A stack of one directory whose logical path is `path`.
    fn at(fd: OwnedFd, path: String) -> Stack {
        Stack {
            dirs: vec![Dir {
                fd,
                name: Name::Mapped(path.as_str().into()),
            }],
            path,
            unheld: 0,
        }
    }

    /// How deep the walk is: the directories held, and those a [`Name::Walked`] one stands for.
    fn len(&self) -> usize {
        self.dirs.len() + self.unheld
    }

    fn top(&self) -> BorrowedFd<'_> {
        self.dirs.last().expect("stack keeps root").fd.as_fd()
    }

    /// The logical path of `name` in the top directory (checked against the bound).
    fn child_path(&self, name: &str) -> Result<String, i32> {
        let path = join(&self.path, name);
        if path.len() >= PATH_MAX {
            return Err(libc::ENAMETOOLONG);
        }
        Ok(path)
    }

    /// Enters `fd`, a translated `/proc` entry whose logical path is `path`.
    fn push_mapped(&mut self, fd: OwnedFd, path: &str) -> Result<(), i32> {
        if self.len() >= MAX_DEPTH {
            return Err(libc::ENAMETOOLONG);
        }
        self.dirs.push(Dir {
            fd,
            name: Name::Mapped(path.into()),
        });
        self.path = path.to_owned();
        Ok(())
    }

    /// Enters `fd`, the directory `name` in the top one, whose logical path (from
    /// [`Stack::child_path`]) is `path`.
    fn push_child(&mut self, fd: OwnedFd, name: &str, path: String) -> Result<(), i32> {
        if self.len() >= MAX_DEPTH {
            return Err(libc::ENAMETOOLONG);
        }
        self.dirs.push(Dir {
            fd,
            name: Name::Child(name.into()),
        });
        self.path = path;
        Ok(())
    }

    /// `..`: removes the top directory (never the root), and the logical path becomes its
    /// parent's (cut in place for a child). The parent of a [`Name::Walked`] directory is
    /// opened as it was: the kernel walks its logical path from the root, refusing symlinks and
    /// mount crossings, so it is the directory that path names now.
    fn pop(&mut self) -> Result<(), i32> {
        if self.dirs.len() <= 1 {
            return Ok(());
        }
        let dir = self.dirs.pop().expect("more than the root");
        match &dir.name {
            Name::Child(n) => {
                // "/a" keeps "/", "/x/a" keeps "/x".
                let keep = self.path.len() - n.len() - 1;
                self.path.truncate(keep.max(1));
            }
            Name::Walked(p) => {
                let parent = &p[..p.rfind('/').unwrap_or(0)];
                if !parent.is_empty() {
                    let fd = kernel_walk(self.dirs[0].fd.as_fd(), &parent.as_bytes()[1..])?;
                    self.dirs.push(Dir {
                        fd,
                        name: Name::Walked(parent.into()),
                    });
                    self.unheld -= 1;
                }
                self.path = self.rebuild();
            }
            _ => self.path = self.rebuild(),
        }
        Ok(())
    }

    /// The top's logical path from the names: the last root or mapped entry, then the children.
    fn rebuild(&self) -> String {
        let base = self
            .dirs
            .iter()
            .rposition(|d| !matches!(d.name, Name::Child(_)))
            .unwrap_or(0);
        let mut path = match &self.dirs[base].name {
            Name::Mapped(p) | Name::Walked(p) => p.to_string(),
            _ => "/".to_owned(),
        };
        for d in &self.dirs[base + 1..] {
            if let Name::Child(n) = &d.name {
                path = join(&path, n);
            }
        }
        path
    }

    /// Back to the root alone (an absolute symlink target).
    fn back_to_root(&mut self) {
        self.dirs.truncate(1);
        self.unheld = 0;
        self.path = self.rebuild();
    }

    /// The walk ends at `name` in the top directory, whose logical path is `path`: the top
    /// directory leaves the stack, which is done with.
    fn found(&mut self, name: CString, path: String, kind: Option<FileType>) -> Walked {
        let parent = self.dirs.pop().expect("stack keeps root").fd;
        Walked {
            parent,
            name: Some(name),
            path,
            kind,
            descriptor: None,
        }
    }

    /// The walk ends at the top directory itself (a path ending in `/`, `.` or `..`): it
    /// leaves the stack, with its logical path, and the stack is done with.
    fn take_top(&mut self) -> Walked {
        let parent = self.dirs.pop().expect("stack keeps root").fd;
        let path = std::mem::take(&mut self.path);
        Walked {
            parent,
            name: None,
            path,
            kind: Some(FileType::Directory),
            descriptor: None,
        }
    }
}

/// One walk's state: the directories it holds, the components it has still to take, the
/// symlinks it followed, how to walk, and the lowest level `..` may climb to.
struct Walk {
    stack: Stack,
    rest: Pending,
    hops: usize,
    flags: WalkFlags,
    floor: usize,
    /// The stack starts at the final component's parent ([`Resolver::fast_walk`]), not at the
    /// root: a symlink to follow ends the fast walk (its target may be `/`, or use `..`).
    fast: bool,
}

impl Walk {
    fn new(stack: Stack, rest: Pending, flags: WalkFlags, floor: usize) -> Walk {
        Walk {
            stack,
            rest,
            hops: 0,
            flags,
            floor,
            fast: false,
        }
    }
}

/// A symlink the walk met: our descriptor of it (on the way; `None` at the end, where it was
/// only looked at), its name in the top directory, its logical path, and whether it was the
/// walk's final component.
struct Link {
    fd: Option<OwnedFd>,
    name: CString,
    path: String,
    last: bool,
}

fn join(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The resolver's view of the world: the agent's root and procfs identity.
pub struct Resolver {
    root: OwnedFd,
    proc_dev_ino: (u64, u64),
    /// With a view: its own procfs's root (process entries are entered from warden's
    /// procfs instead, where the agent's pids name them).
    view_proc_dev_ino: Option<(u64, u64)>,
    host_proc: OwnedFd,
    /// Walks start from the sandbox's view.
    in_view: bool,
    /// Relative walks' starting directories walked before ([`bases`]): only for walks from
    /// the agent's own root, whose mounts the agent can watch.
    bases: Option<bases::Bases>,
}

impl Resolver {
    /// Opens the root walks start from (the sandbox's view, `view_root`, when it has one; else
    /// the agent's own) and notes which directories are procfs roots.
    pub fn new(view_root: Option<OwnedFd>) -> std::io::Result<Resolver> {
        let dir = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let host_proc = openat(rustix::fs::CWD, "/proc", dir, Mode::empty())?;
        let proc = rustix::fs::fstat(&host_proc)?;
        let in_view = view_root.is_some();
        let (root, view_proc_dev_ino) = match view_root {
            Some(root) => {
                let view_proc =
                    rustix::fs::statat(&root, "proc", rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                        .ok()
                        .map(|st| (st.st_dev, st.st_ino));
                (root, view_proc)
            }
            None => (openat(rustix::fs::CWD, "/", dir, Mode::empty())?, None),
        };
        Ok(Resolver {
            root,
            proc_dev_ino: (proc.st_dev, proc.st_ino),
            view_proc_dev_ino,
            host_proc,
            bases: if in_view { None } else { bases::Bases::new() },
            in_view,
        })
    }

    /// A resolver whose walks start at `root`, as the host's own root (no view): for the unit
    /// tests, which walk temporary trees.
    #[cfg(test)]
    fn rooted(root: OwnedFd) -> std::io::Result<Resolver> {
        let mut resolver = Resolver::new(None)?;
        resolver.root = root;
        Ok(resolver)
    }

    fn root_dir(&self) -> Result<OwnedFd, i32> {
        openat(
            &self.root,
            ".",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| e.raw_os_error())
    }

    /// The answer when directory `path`, on the way to `rest`, cannot be entered: `mask`'s.
    /// In a view, a directory the policy hides is simply not there: `ENOENT`, with the rule
    /// the whole path would need logged, so `-v` and the log still say which rule is missing.
    fn missing_on_the_way(
        &self,
        client: &impl Caller,
        policy: &Policy,
        path: &str,
        rest: &Pending,
        errno: i32,
    ) -> i32 {
        if !self.in_view || errno != libc::ENOENT {
            return mask(policy, path, errno);
        }
        // In a view the answer is the kernel's in the same view: the directory is not there,
        // whatever the host has. So a run whose calls all go to the agent (`-v`, `--log`,
        // `learn`'s verifying run) gets what the default run gets (a compiler ignores a missing
        // include directory, and fails on EACCES), and nothing of the host's shows. The host
        // is asked only so that `-v` and the log name the rule that would bring the path in;
        // beneath a `path-map` it is not what the sandbox has there, and is never asked, but
        // for the default's private `/tmp`: a newcomer's `cat /tmp/notes` is told the host's
        // `/tmp` has it and which line gives the run the host's `/tmp`.
        let private_tmp = policy.in_private_tmp(path);
        if private_tmp || !mapped(policy, path) {
            let mut whole = path.to_owned();
            let mut bytes = path.as_bytes().to_vec();
            let rest = rest.remaining();
            if !rest.is_empty() {
                whole.push('/');
                whole.push_str(&String::from_utf8_lossy(&rest));
                bytes.push(b'/');
                bytes.extend_from_slice(&rest);
            }
            // The host asked by the bytes the program gave (a name need not be UTF-8).
            let on_host = std::ffi::CString::new(bytes)
                .is_ok_and(|name| rustix::fs::lstat(name.as_c_str()).is_ok());
            if on_host && private_tmp {
                client.refuse_hosts_tmp(&whole);
            } else if on_host {
                let _ = client.decide_visible(&whole);
            }
        }
        libc::ENOENT
    }

    /// The answer when the object `path` itself is not there (the walk reached its directory):
    /// `mask`'s on the host's tree. In a view, `ENOENT`, as the kernel answers in the same view
    /// (see [`Self::missing_on_the_way`]); a path the host has is one the policy hides, and its
    /// rule is logged for `-v`.
    pub fn missing(&self, client: &super::Client, policy: &Policy, path: &str) -> i32 {
        if !self.in_view {
            return mask(policy, path, libc::ENOENT);
        }
        if policy.in_private_tmp(path) {
            if rustix::fs::lstat(path).is_ok() {
                Caller::refuse_hosts_tmp(client, path);
            }
        } else if !mapped(policy, path) && rustix::fs::lstat(path).is_ok() {
            let _ = client.decide_visible(path);
        }
        libc::ENOENT
    }

    /// Whether walks start from the sandbox's own view.
    pub fn in_view(&self) -> bool {
        self.in_view
    }

    fn is_proc_root(&self, fd: BorrowedFd<'_>) -> bool {
        rustix::fs::fstat(fd).is_ok_and(|st| {
            let id = (st.st_dev, st.st_ino);
            id == self.proc_dev_ino || Some(id) == self.view_proc_dev_ino
        })
    }

    /// The stack a walk starts from: root for absolute paths, else the caller's cwd or dirfd,
    /// re-walked from root by its path so that its logical path is one we walked ourselves.
    fn start(
        &self,
        client: &impl Caller,
        policy: &Policy,
        base: Base,
        absolute: bool,
    ) -> Result<Stack, i32> {
        let stack = Stack::new(self.root_dir()?);
        if absolute {
            return Ok(stack);
        }
        let (actual, logical) = client.base(base)?;
        let st = identity(actual.as_fd())?;
        if FileType::from_raw_mode(u32::from(st.stx_mode)) != FileType::Directory {
            return Err(libc::ENOTDIR);
        }
        if !logical.starts_with(b"/") {
            return Err(libc::ENOENT);
        }
        let stack = match self.fast_start(policy, stack, actual, &logical, same_object(&st))? {
            Ok(walked) => return Ok(walked),
            Err(stack) => stack,
        };
        // Every component is a directory to enter (never "the final one"), so the stack ends
        // up holding the whole chain and `..` from the start climbs to the real parent.
        let flags = WalkFlags {
            follow: true,
            ..WalkFlags::default()
        };
        let mut walk = Walk::new(stack, Pending::new(&logical), flags, 1);
        while let Some(part) = walk.rest.pop_front() {
            if self
                .step(client, policy, &mut walk, &part, false)?
                .is_some()
            {
                return Err(libc::ENOTDIR);
            }
        }
        let walked = identity(walk.stack.top())?;
        let (dev, ino, _) = same_object(&st);
        if same_object(&walked).0 != dev || walked.stx_ino != ino {
            // The directory is not reachable by its own path (deleted, or outside our view).
            return Err(libc::ENOENT);
        }
        Ok(walk.stack)
    }

    /// The common case of a relative walk's start, in one call: the base's logical path is
    /// the kernel's own name for it (no symlink, no `..`), so the kernel walks it from the root
    /// (`openat2(RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)`), which
    /// refuses exactly what the component walk would treat specially (a symlink to check, a
    /// mount that may be procfs), and the directory it reaches must be the base itself, the
    /// same object on the same mount (`base`: device, inode, mount id). Every directory on the
    /// way must be one the policy lets a walk enter, as the component walk requires. The stack
    /// holds the root and that directory alone ([`Name::Walked`]); a `..` opens its parents the
    /// same way. `Err`: the stack back, for the component walk (which also computes the masked
    /// errors, so a failure here is never reported as such).
    ///
    /// A base walked before by the same path, under the same mount table ([`bases`]), is not
    /// walked again: the caller's own descriptor of it (`actual`) is the stack's top.
    fn fast_start(
        &self,
        policy: &Policy,
        mut stack: Stack,
        actual: OwnedFd,
        logical: &[u8],
        base: bases::Identity,
    ) -> Result<Result<Stack, Stack>, i32> {
        let Ok(text) = std::str::from_utf8(logical) else {
            return Ok(Err(stack));
        };
        if text == "/" {
            return Ok(Err(stack));
        }
        if !is_clean(logical) || text.len() >= PATH_MAX {
            return Ok(Err(stack));
        }
        let generation = match self.bases.as_ref().map(|b| b.lookup(base, logical)) {
            Some(bases::Lookup::Known) => {
                let depth = text.bytes().filter(|&b| b == b'/').count();
                stack.dirs.push(Dir {
                    fd: actual,
                    name: Name::Walked(text.into()),
                });
                stack.unheld = depth - 1;
                stack.path = text.to_owned();
                return Ok(Ok(stack));
            }
            Some(bases::Lookup::Unknown(generation)) => Some(generation),
            None => None,
        };
        // The directories the component walk would enter, each checked as it checks them; it
        // would refuse a walk deeper than MAX_DEPTH.
        let mut depth = 1;
        for (i, c) in text.char_indices().skip(1) {
            if c == '/' {
                depth += 1;
                if !visible(policy, &text[..i], Some(FileType::Directory)) {
                    return Ok(Err(stack));
                }
            }
        }
        if text.split('/').any(|c| c == "..")
            || depth + 1 > MAX_DEPTH
            || !visible(policy, text, Some(FileType::Directory))
        {
            return Ok(Err(stack));
        }
        let Ok(fd) = kernel_walk(stack.top(), &logical[1..]) else {
            return Ok(Err(stack));
        };
        match identity(fd.as_fd()) {
            Ok(st) if same_object(&st) == base => {}
            _ => return Ok(Err(stack)),
        }
        if let (Some(bases), Some(generation)) = (&self.bases, generation) {
            bases.record(base, logical, generation);
        }
        stack.dirs.push(Dir {
            fd,
            name: Name::Walked(text.into()),
        });
        stack.unheld = depth - 1;
        stack.path = text.to_owned();
        Ok(Ok(stack))
    }

    /// Walks `path` for `client` from `base`.
    pub fn walk(
        &self,
        client: &impl Caller,
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
        let stack = self.start(client, policy, base, absolute)?;
        if !absolute && !flags.beneath {
            if let Some(walked) = self.fast_descent(client, policy, &stack, path, flags)? {
                return Ok(walked);
            }
        }
        let floor = if flags.beneath { stack.len() } else { 1 };
        // A trailing slash (or `.`) means "a directory", and follows a final symlink: the
        // queue marks the component ([`Part::must_be_directory`]).
        let mut walk = Walk::new(stack, Pending::new(path), flags, floor);
        while let Some(part) = walk.rest.pop_front() {
            let last = walk.rest.is_empty();
            if let Some(walked) = self.step(client, policy, &mut walk, &part, last)? {
                return Ok(walked);
            }
        }
        // The path ended in `/`, `.` or `..`: the target is the directory on top of the stack.
        Ok(walk.stack.take_top())
    }

    /// The common case in one call: an absolute path with no symlink before its final component
    /// and no mount crossing. The kernel walks the directories with
    /// `openat2(RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)`, which refuses
    /// exactly what the component walk would treat specially (a symlink to read and check, a
    /// mount that may be procfs), so the directory it returns is the one the component walk
    /// would have reached by the same names, and the logical path is the text itself. The final
    /// component then goes through [`Resolver::step`] as usual. `None`: take the component walk
    /// (which also computes the masked errors, so a failure here is never reported as such).
    ///
    /// A path through `..` (`/a/b/../c/f`) too, where no symlink and no mount is on the way:
    /// there the kernel's `..` is the parent the name was entered from, as the component walk's
    /// logical `..` is, so the logical path is the text with each `x/..` taken out
    /// ([`dotdot_path`], which also checks every directory entered, as the component walk does,
    /// `hidden/../visible` included), and `RESOLVE_BENEATH` refuses a `..` above the root.
    fn fast_walk(
        &self,
        client: &impl Caller,
        policy: &Policy,
        path: &[u8],
        flags: WalkFlags,
    ) -> Result<Option<Walked>, i32> {
        if path.ends_with(b"/") || path.ends_with(b"/.") {
            // A name that must be a directory, or the directory itself: the component walk.
            return Ok(None);
        }
        // Most paths programs pass are clean already (`/usr/lib/x`): no copy for those.
        let cleaned;
        let path = if is_clean(path) {
            &path[1..]
        } else {
            cleaned = clean(path);
            &cleaned[..]
        };
        if path.is_empty() {
            return Ok(None);
        }
        let (rel, last) = match path.iter().rposition(|&b| b == b'/') {
            Some(i) => (&path[..i], &path[i + 1..]),
            None => (&path[..0], path),
        };
        let dotdot = rel.split(|&b| b == b'/').any(|p| p == b"..");
        if last == b".." {
            return Ok(None);
        }
        let stack = if rel.is_empty() {
            Stack::new(self.root_dir()?)
        } else {
            if rel.len() + 1 >= PATH_MAX {
                return Ok(None);
            }
            let logical = if dotdot {
                match dotdot_path(policy, rel) {
                    Some(logical) => logical,
                    None => return Ok(None),
                }
            } else {
                format!("/{}", String::from_utf8_lossy(rel))
            };
            let mut how = rustix::fs::ResolveFlags::NO_SYMLINKS
                | rustix::fs::ResolveFlags::NO_MAGICLINKS
                | rustix::fs::ResolveFlags::NO_XDEV;
            if dotdot {
                how |= rustix::fs::ResolveFlags::BENEATH;
            }
            let Ok(fd) = rustix::fs::openat2(
                &self.root,
                rel,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
                how,
            ) else {
                return Ok(None);
            };
            if logical == "/" {
                Stack::new(fd)
            } else {
                Stack::at(fd, logical)
            }
        };
        // A final symlink to follow continues the walk from a stack we did not build (its
        // target may use `..`): leave that to the component walk.
        let mut walk = Walk::new(stack, Pending::default(), flags, 1);
        walk.fast = true;
        let last = Part::new(last, false);
        self.step(client, policy, &mut walk, &last, true)
    }

    /// [`Resolver::fast_walk`] for a relative path that only descends (`src/lib/x.c`, no `..`)
    /// from the start `from`: the kernel walks its directories from the top of `from` in one
    /// `openat2(RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)`, and the final
    /// component goes through [`Resolver::step`]. Not from inside `/proc` (whose names the walk
    /// translates). `None`: take the component walk from `from`.
    fn fast_descent(
        &self,
        client: &impl Caller,
        policy: &Policy,
        from: &Stack,
        path: &[u8],
        flags: WalkFlags,
    ) -> Result<Option<Walked>, i32> {
        if path.ends_with(b"/") || path.ends_with(b"/.") || from.path.starts_with("/proc") {
            return Ok(None);
        }
        let cleaned = clean(path);
        let Some(i) = cleaned.iter().rposition(|&b| b == b'/') else {
            // One name: one step from `from` either way.
            return Ok(None);
        };
        let (rel, last) = (&cleaned[..i], &cleaned[i + 1..]);
        if rel.split(|&b| b == b'/').any(|c| c == b"..") || last == b".." {
            return Ok(None);
        }
        let Ok(text) = std::str::from_utf8(rel) else {
            return Ok(None);
        };
        let logical = join(&from.path, text);
        // The bounds the component walk would meet on the way.
        let entered = rel.split(|&b| b == b'/').count();
        if logical.len() + 1 >= PATH_MAX || from.len() + entered > MAX_DEPTH {
            return Ok(None);
        }
        let Ok(fd) = kernel_walk(from.top(), rel) else {
            return Ok(None);
        };
        let mut walk = Walk::new(Stack::at(fd, logical), Pending::default(), flags, 1);
        walk.fast = true;
        self.step(client, policy, &mut walk, &Part::new(last, false), true)
    }

    /// One component. Returns `Some` when the walk ends here (the final component), `None` when
    /// it entered a directory or queued a symlink's target in front of what remains.
    fn step(
        &self,
        client: &impl Caller,
        policy: &Policy,
        walk: &mut Walk,
        part: &Part,
        last: bool,
    ) -> Result<Option<Walked>, i32> {
        if part.len() > NAME_MAX {
            // The kernel's answer for such a name, wherever it is.
            return Err(libc::ENAMETOOLONG);
        }
        if **part == *b"." {
            // Only ever last (`a/.`): the directory on top is the target itself.
            return Ok(last.then(|| walk.stack.take_top()));
        }
        if **part == *b".." {
            if walk.stack.len() > walk.floor {
                walk.stack.pop()?;
            } else if walk.flags.beneath {
                return Err(libc::EXDEV);
            }
            return Ok(None);
        }
        if let Some(mapped) = self.proc_component(client, walk.stack.top(), part)? {
            self.enter_proc(&mut walk.stack, mapped)?;
            return Ok(None);
        }
        let text = String::from_utf8_lossy(part);
        let path = walk.stack.child_path(&text)?;
        // The name is handed to the kernel as bytes (no copy of its own); a walk that ends here
        // makes the one owned copy its answer keeps.
        let name: &[u8] = part;
        // A name that must be a directory (`name/`, `name/.`) is followed if it is a symlink.
        let follow = walk.flags.follow || part.must_be_directory();
        let top = walk.stack.top();
        // The final component is only looked at (one fstatat), unless it is a symlink to
        // follow; a directory on the way is opened, to walk on from.
        let (kind, fd) = if last {
            match rustix::fs::statat(top, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => (FileType::from_raw_mode(st.st_mode), None),
                Err(rustix::io::Errno::NOENT) => {
                    return Ok(Some(walk.stack.found(cstring(name)?, path, None)))
                }
                Err(e) => return Err(mask(policy, &path, e.raw_os_error())),
            }
        } else {
            let fd = openat(
                top,
                name,
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| {
                self.missing_on_the_way(client, policy, &path, &walk.rest, e.raw_os_error())
            })?;
            let st = rustix::fs::fstat(&fd).map_err(|e| e.raw_os_error())?;
            (FileType::from_raw_mode(st.st_mode), Some(fd))
        };
        match kind {
            FileType::Symlink if !last || follow => {
                let link = Link {
                    fd,
                    name: cstring(name)?,
                    path,
                    last,
                };
                self.follow(client, walk, link, part)
            }
            FileType::Directory | FileType::Symlink if last => {
                Ok(Some(walk.stack.found(cstring(name)?, path, Some(kind))))
            }
            _ if last && part.must_be_directory() => Err(mask(policy, &path, libc::ENOTDIR)),
            _ if last => Ok(Some(walk.stack.found(cstring(name)?, path, Some(kind)))),
            FileType::Directory => {
                // A directory the policy hides is not entered, whether or not it exists or the
                // walk would only pass through it (`hidden/../allowed`): otherwise the answer
                // would tell a hidden directory that exists from one that does not.
                if !visible(policy, &path, Some(FileType::Directory)) {
                    return Err(libc::EACCES);
                }
                let fd = fd.expect("opened on the way");
                walk.stack.push_child(fd, &text, path)?;
                Ok(None)
            }
            _ => Err(mask(policy, &path, libc::ENOTDIR)),
        }
    }

    /// Enters the directories a translated `/proc` name stands for.
    fn enter_proc(&self, stack: &mut Stack, mapped: Vec<ProcDir>) -> Result<(), i32> {
        for (i, (p, logical)) in mapped.into_iter().enumerate() {
            // The first is a process entry: entered from warden's procfs, where the pid is
            // the agent's (the view's procfs numbers the sandbox's own way).
            let from = if i == 0 {
                self.host_proc.as_fd()
            } else {
                stack.top()
            };
            let fd = openat(
                from,
                p.as_slice(),
                OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| e.raw_os_error())?;
            stack.push_mapped(fd, &logical)?;
        }
        Ok(())
    }

    /// Follows the symlink `link` met by the walk: checks it, reads it, and queues its target
    /// in front of what remains (or ends the walk, for a target that names the directory on
    /// top, or one of the caller's own descriptors that has no path).
    fn follow(
        &self,
        client: &impl Caller,
        walk: &mut Walk,
        link: Link,
        part: &Part,
    ) -> Result<Option<Walked>, i32> {
        if walk.flags.no_symlinks {
            return Err(libc::ELOOP);
        }
        if walk.fast {
            // The component walk follows it from a stack of its own.
            return Ok(None);
        }
        walk.hops += 1;
        if walk.hops > MAX_HOPS {
            return Err(libc::ELOOP);
        }
        // Following a symlink reads it: the link itself must be visible. Decided through the
        // caller, so the decision is logged: `learn` learns the link as well as where it leads
        // (a view holds a link only where a rule names it), and `-v` names a refused one.
        client.decide_visible(&link.path)?;
        // The link we looked at: through its descriptor on the way, by name at the end (a link
        // swapped in meanwhile is read instead, as if it had been there first; its target is
        // walked and checked all the same).
        let target = match &link.fd {
            Some(fd) => readlinkat(fd, c"", Vec::new()),
            None => readlinkat(walk.stack.top(), link.name.as_c_str(), Vec::new()),
        }
        .map_err(|e| e.raw_os_error())?
        .into_bytes();
        if link.last {
            if let Some(n) = own_descriptor(&walk.stack.path, part)
                .filter(|&n| !target.starts_with(b"/") || stands_in(client, &target, n))
            {
                // `pipe:[N]`, `socket:[N]`, `anon_inode:...`: no path to walk; a stand-in for
                // an O_PATH descriptor of a symlink is that symlink.
                let mut walked = walk.stack.found(link.name, link.path, None);
                walked.descriptor = Some(n);
                return Ok(Some(walked));
            }
        }
        if target.starts_with(b"/") {
            if walk.flags.beneath {
                return Err(libc::EXDEV);
            }
            walk.stack.back_to_root();
        }
        // The target of a final name that must be a directory must be one too.
        let directory = link.last && part.must_be_directory();
        if !walk.rest.push_front(&target, directory) && link.last {
            // "/" or ".": the target is the directory now on top.
            return Ok(Some(walk.stack.take_top()));
        }
        Ok(None)
    }

    /// Translates `/proc/self`, `/proc/thread-self` and `/proc/<own pid>` for the caller: the
    /// directories to enter from procfs's root, each with its logical path.
    ///
    /// `/proc/thread-self` is `/proc/<tgid>/task/<tid>`: its parents on the stack are
    /// `/proc/self` and `/proc/self/task`, so `..` from it climbs where the kernel's would, and
    /// every path checked below it is a real one (never an empty prefix).
    fn proc_component(
        &self,
        client: &impl Caller,
        dir: BorrowedFd<'_>,
        part: &[u8],
    ) -> Result<Option<Vec<ProcDir>>, i32> {
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
        let mut dirs = vec![(tgid, "/proc/self".to_owned())];
        if is_thread {
            dirs.push((b"task".to_vec(), "/proc/self/task".to_owned()));
            dirs.push((
                client.tid().to_string().into_bytes(),
                "/proc/thread-self".to_owned(),
            ));
        }
        Ok(Some(dirs))
    }
}

/// `N` when `name` is entry `N` of the caller's own descriptor directory `dir` (logical path
/// `/proc/self/fd` or `/proc/thread-self/fd`, which the walk only reaches by translation).
fn own_descriptor(dir: &str, name: &[u8]) -> Option<i32> {
    if dir != "/proc/self/fd" && dir != "/proc/thread-self/fd" {
        return None;
    }
    std::str::from_utf8(name).ok()?.parse().ok()
}

/// Whether the caller's descriptor `n`, whose `/proc` link reads `target`, is a stand-in for an
/// `O_PATH` descriptor of a symlink ([`super::stand_in`]), which names no path of its own.
fn stands_in(client: &impl Caller, target: &[u8], n: i32) -> bool {
    target.starts_with(super::stand_in::PROC_LINK) && client.is_stand_in(n)
}

/// A directory to enter for a translated `/proc` name: its name in the one above, and its
/// logical path.
type ProcDir = (Vec<u8>, String);

/// Whether metadata of `path` (an object of type `kind`) may be shown: some right on it, or it
/// is a directory the walk to an allowed path passes through (so `realpath`, `ls ..` and
/// `cd /tmp` on the way to `/tmp/work` behave; listing it still needs `read`).
pub fn visible(policy: &Policy, path: &str, kind: Option<FileType>) -> bool {
    policy.visible(path).is_some()
        || (kind == Some(FileType::Directory) && policy.may_traverse(path))
}

/// Reports `errno` for `path` only if the policy lets the program know about `path`.
pub fn mask(policy: &Policy, path: &str, errno: i32) -> i32 {
    if errno == libc::EACCES || knowable(policy, path) {
        errno
    } else {
        libc::EACCES
    }
}

/// Whether `path` is at or beneath a `path-map`'s place in the sandbox, where the sandbox's
/// tree is not the host's.
fn mapped(policy: &Policy, path: &str) -> bool {
    policy
        .maps()
        .iter()
        .any(|m| warden_policy::map::at_or_beneath(path, &m.sandbox))
}

/// Whether the program may already know if `path` exists: it has some right on it, a walk may
/// pass through it, or it may list the directory that holds it. There the agent answers with
/// the kernel's own errno (`ENOENT`, `EEXIST`), so `rm -f`, `mkdir -p` and `access` probes
/// behave as they do natively; elsewhere every answer is `EACCES`.
pub fn knowable(policy: &Policy, path: &str) -> bool {
    policy.visible(path).is_some()
        || policy.may_traverse(path)
        || path
            .rsplit_once('/')
            .map(|(dir, _)| if dir.is_empty() { "/" } else { dir })
            .is_some_and(|dir| {
                dir != path && policy.check(dir, warden_policy::Access::Read).is_allowed()
            })
}

/// Whether absolute `path` is [`clean`] after its leading `/`: no empty or `.` component.
/// The logical path of the directory `rel` names from the root (clean, relative to it, with
/// `..`), as the component walk makes it: each `..` leaves the directory entered last. `None`
/// where the component walk would stop or answer otherwise: a `..` at the root, a directory on
/// the way the policy does not let a walk enter (even one a `..` leaves again), a walk deeper
/// than [`MAX_DEPTH`] or a logical path past [`PATH_MAX`], a name that is not UTF-8.
fn dotdot_path(policy: &Policy, rel: &[u8]) -> Option<String> {
    let mut path = String::with_capacity(rel.len() + 1);
    let mut depth = 1;
    for c in rel.split(|&b| b == b'/') {
        if c == b".." {
            let cut = path.rfind('/')?;
            path.truncate(cut);
            depth -= 1;
            continue;
        }
        path.push('/');
        path.push_str(std::str::from_utf8(c).ok()?);
        depth += 1;
        if depth > MAX_DEPTH
            || path.len() >= PATH_MAX
            || !visible(policy, &path, Some(FileType::Directory))
        {
            return None;
        }
    }
    if path.is_empty() {
        path.push('/');
    }
    Some(path)
}

/// The directory `rel` names beneath `root`, walked by the kernel with no symlink, magic link
/// or mount crossing on the way.
fn kernel_walk(root: BorrowedFd<'_>, rel: &[u8]) -> Result<OwnedFd, i32> {
    let how = rustix::fs::ResolveFlags::NO_SYMLINKS
        | rustix::fs::ResolveFlags::NO_MAGICLINKS
        | rustix::fs::ResolveFlags::NO_XDEV;
    rustix::fs::openat2(
        root,
        rel,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        how,
    )
    .map_err(|e| e.raw_os_error())
}

/// The type, device, inode and mount of the object behind `fd`.
fn identity(fd: BorrowedFd<'_>) -> Result<rustix::fs::Statx, i32> {
    use rustix::fs::StatxFlags;
    rustix::fs::statx(
        fd,
        c"",
        AtFlags::EMPTY_PATH,
        StatxFlags::TYPE | StatxFlags::INO | StatxFlags::MNT_ID,
    )
    .map_err(|e| e.raw_os_error())
}

/// What makes two descriptors name the same directory as the walk sees it: device, inode
/// and mount.
fn same_object(st: &rustix::fs::Statx) -> bases::Identity {
    (
        rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
        st.stx_ino,
        st.stx_mnt_id,
    )
}

fn is_clean(path: &[u8]) -> bool {
    path.len() > 1
        && path[1..]
            .split(|&b| b == b'/')
            .all(|c| !c.is_empty() && c != b".")
}

fn cstring(bytes: &[u8]) -> Result<CString, i32> {
    CString::new(bytes.to_vec()).map_err(|_| libc::EINVAL)
}

#[cfg(test)]
mod tests;
