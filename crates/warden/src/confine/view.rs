//! The sandbox's own file system view: carries out a [`ViewPlan`] (planned by
//! `warden_policy::view` from the policy) in the sandbox's fresh mount namespace, in one place.
//!
//! Runs in the sandbox's init, which holds every capability of the sandbox's user namespace and
//! so may mount in the mount namespace that user namespace owns. With the new mount API each
//! step works on descriptors, never on a path looked up twice:
//!
//! ```text
//! fsmount(tmpfs), pivot_root     the staging root, with the host's tree beneath it; init
//!                                chroot()s into the host's tree while the steps run
//! fsmount(tmpfs)                 the new root, empty             (nosuid,nodev; read-only last)
//! fsmount(tmpfs) + f, d          the masks: an empty file and directory, mode 0, read-only
//! open_tree_attr(CLONE) per bind host tree, recursive, with ro/noexec/nosuid/nodev (open_tree
//!                                and mount_setattr before Linux 6.15, or where refused)
//! move_mount onto a placeholder  in the new root, at the same path
//! open_tree(CLONE) per map        `path-map HOST SANDBOX`: the same, attached at SANDBOX
//! fsmount(tmpfs) per tmpfs map   `path-map tmpfs SANDBOX`: mode 1777, the sandbox's own
//! fsmount(overlay) per copy      `path-map HOST SANDBOX copy`: lower HOST, upper and work in
//!                                the run's copy directory (outside the view), userxattr
//! fsmount(proc)                  the PID namespace's own procfs, hidepid=ptraceable; masks on
//!                                every top entry the policy does not name; a directory named
//!                                in part covered by a tmpfs holding clones of what it names
//! pivot_root(".", OLD_ROOT)      the view is the root; the staging tmpfs (the host's tree in
//!                                it) detached by `seal`
//! ```
//!
//! Each of these mounts is held in the staging tmpfs (attached to the namespace) before
//! anything is mounted into it or cloned from it: kernels before 6.15 do neither on a detached
//! tree ([`Staging`]).
//!
//! The masks and binds are made before the host's tree goes, and the procfs is made while the
//! host's /proc is still in the namespace (the kernel lets a user namespace mount a procfs only
//! where a full one is already visible).

use rustix::fs::{self as rfs, Mode, OFlags};
use rustix::mount::{
    fsconfig_create, fsconfig_set_string, fsmount, fsopen, move_mount, open_tree, FsMountFlags,
    FsOpenFlags, MountAttrFlags, MountPropagationFlags, MoveMountFlags, OpenTreeFlags,
    UnmountFlags,
};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use warden_policy::view::{Disk, Flags, Host, Keep, LayerEntry, Node, Step, ViewPlan};

use crate::sys::mount::set_attributes;
use std::path::Path;

/// What the planner makes of an entry of type `ft` at `path` (its target read for a symlink).
fn node_of(ft: std::fs::FileType, path: &Path) -> Node {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_symlink() {
        match std::fs::read_link(path) {
            Ok(t) => Node::Symlink(t.to_string_lossy().into_owned()),
            Err(_) => Node::Missing,
        }
    } else if ft.is_dir() {
        Node::Dir
    } else if ft.is_char_device() {
        Node::Device
    } else if ft.is_block_device() {
        // Never bound: a block device is a disk.
        Node::Missing
    } else {
        Node::File
    }
}

/// The host as the planner sees it: `lstat`, `readlink`, `readdir`, and its mount table.
pub struct HostFs;

/// The mount points of warden's mount namespace (`/proc/self/mounts`' second field, its octal
/// escapes undone); `None` when the table cannot be read. The short table, not `mountinfo`:
/// the kernel writes it in two thirds of the time, on every start's plan, and it has the
/// mount points, escaped the same way.
fn mount_points() -> Option<Vec<String>> {
    let table = crate::sys::process::read_proc("/proc/self/mounts").ok()?;
    Some(
        table
            .lines()
            .filter_map(|line| line.split(' ').nth(1))
            .map(unescape_octal)
            .collect(),
    )
}

/// `\040` and the like, as the kernel writes space, tab, newline and backslash in the table.
fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], digits) {
            (b'\\', Some(d)) => {
                out.push(
                    d.iter()
                        .fold(0u8, |v, b| v.wrapping_mul(8).wrapping_add(b - b'0')),
                );
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether one of `points` lies strictly beneath `dir`; unknown (`None`) counts as yes.
fn any_beneath(points: Option<&[String]>, dir: &str) -> bool {
    let Some(points) = points else { return true };
    let dir = dir.trim_end_matches('/');
    points
        .iter()
        .any(|p| p.len() > dir.len() && p.starts_with(dir) && p.as_bytes()[dir.len()] == b'/')
}

impl Host for HostFs {
    fn mounted_beneath(&self, dir: &str) -> bool {
        any_beneath(mount_points().as_deref(), dir)
    }

    fn node(&self, path: &str) -> Node {
        match std::fs::symlink_metadata(path) {
            Ok(meta) => node_of(meta.file_type(), Path::new(path)),
            Err(_) => Node::Missing,
        }
    }

    fn list(&self, dir: &str) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        names
    }
}

/// [`HostFs`], asking the host once per path: the planner asks again and again about the
/// same few places (`/usr` for each of the rules around it), and each answer is a `statx`, and
/// a `readlink` for a link. One plan's worth: the answers are as the host was when first asked.
#[derive(Default)]
pub struct RememberedHost {
    nodes: std::cell::RefCell<std::collections::HashMap<String, Node>>,
    lists: std::cell::RefCell<std::collections::HashMap<String, Vec<String>>>,
    mounts: std::cell::OnceCell<Option<Vec<String>>>,
}

impl RememberedHost {
    /// The directory `path` (absolute) names with every link followed, as the kernel resolves
    /// it, from the remembered answers (each missing one asked of the host once): its path
    /// with no link left in it. `None` for anything but a directory, and for what the answers
    /// cannot settle (a loop of links), which the caller then asks the kernel about: the
    /// kernel plan asks this of the same trees the view's plan has just looked at.
    pub fn directory(&self, path: &str) -> Option<String> {
        let mut todo: Vec<String> = Vec::new();
        let push = |todo: &mut Vec<String>, p: &str| {
            todo.extend(
                p.split('/')
                    .rev()
                    .filter(|c| !c.is_empty())
                    .map(str::to_owned),
            );
        };
        if !path.starts_with('/') {
            return None;
        }
        push(&mut todo, path);
        // `at` is "" for the root, "/a/b" otherwise: links resolved, so its parent is lexical.
        let mut at = String::new();
        let mut links = 0;
        while let Some(c) = todo.pop() {
            match c.as_str() {
                "." => continue,
                ".." => {
                    at.truncate(at.rfind('/').unwrap_or(0));
                    continue;
                }
                _ => {}
            }
            let next = format!("{at}/{c}");
            match self.node(&next) {
                Node::Dir => at = next,
                Node::Symlink(target) => {
                    links += 1;
                    if links > 40 {
                        return None;
                    }
                    if target.starts_with('/') {
                        at.clear();
                    }
                    push(&mut todo, &target);
                }
                _ => return None,
            }
        }
        Some(if at.is_empty() { "/".to_owned() } else { at })
    }
}

impl Host for RememberedHost {
    fn mounted_beneath(&self, dir: &str) -> bool {
        any_beneath(self.mounts.get_or_init(mount_points).as_deref(), dir)
    }

    fn node(&self, path: &str) -> Node {
        if let Some(n) = self.nodes.borrow().get(path) {
            return n.clone();
        }
        let n = HostFs.node(path);
        self.nodes.borrow_mut().insert(path.to_owned(), n.clone());
        n
    }

    fn list(&self, dir: &str) -> Vec<String> {
        if let Some(l) = self.lists.borrow().get(dir) {
            return l.clone();
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut names = Vec::new();
        for e in entries.filter_map(Result::ok) {
            let Ok(name) = e.file_name().into_string() else {
                continue;
            };
            // What each entry is comes with the listing (the directory's d_type, an lstat only
            // where the file system does not say): the planner asks next about each name of
            // `/`, as HostFs::node would answer.
            let path = match dir {
                "/" => format!("/{name}"),
                d => format!("{}/{name}", d.trim_end_matches('/')),
            };
            let known = self.nodes.borrow().contains_key(&path);
            if let (false, Ok(ft)) = (known, e.file_type()) {
                let node = node_of(ft, &e.path());
                self.nodes.borrow_mut().insert(path, node);
            }
            names.push(name);
        }
        names.sort();
        self.lists
            .borrow_mut()
            .insert(dir.to_owned(), names.clone());
        names
    }
}

/// What the host has at `path` with a final symlink followed (a map's host path is cloned as
/// the kernel finds it), for [`warden_policy::map::host_problems`].
pub fn host_stat(path: &str) -> Node {
    match std::fs::canonicalize(path) {
        Ok(p) => p.to_str().map_or(Node::Missing, |p| HostFs.node(p)),
        Err(_) => Node::Missing,
    }
}

/// An `O_PATH` descriptor of the sandbox's absolute `path`, found from the view's `root` by the
/// kernel without following any link on the way or at the end (nor `..` above the root): what
/// warden's side opens in a view is the view's own object, never one a link planted there
/// points to.
pub fn open_in_view(root: BorrowedFd<'_>, path: &str) -> io::Result<OwnedFd> {
    let how = rfs::ResolveFlags::BENEATH
        | rfs::ResolveFlags::NO_SYMLINKS
        | rfs::ResolveFlags::NO_MAGICLINKS;
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rfs::openat2(
        root,
        path.trim_start_matches('/'),
        flags,
        Mode::empty(),
        how,
    )?)
}

/// Whether this kernel has the mount API the view is built with: `fsopen` answers anything but
/// `ENOSYS` (in warden's own namespace an unprivileged caller gets `EPERM`, which still says the
/// call exists).
pub fn supported() -> bool {
    !matches!(
        fsopen("tmpfs", FsOpenFlags::FSOPEN_CLOEXEC),
        Err(rustix::io::Errno::NOSYS)
    )
}

/// Whether this kernel can build a filtered tree ([`Step::Filtered`]): an overlay in a user
/// namespace (`userxattr`, Linux 5.11) over a tmpfs layer that holds `user.*` extended
/// attributes (its opaque directories' marks), which tmpfs does from Linux 6.6. Older kernels
/// get masks and Landlock's rules entry by entry (`warden_policy::view::Hiding::Masks`).
///
/// Asked of the feature, once per process, in a few microseconds and without privileges: a
/// tmpfs without `user.*` attributes has no handler for them, so asking one for such an
/// attribute fails with `EOPNOTSUPP`, where one with them answers `ENODATA`. Asked of
/// `/dev/shm` when it is a tmpfs (two calls), else of a memfd, a file of the kernel's own tmpfs,
/// given one (a memfd's making and closing cost some tens of microseconds).
pub fn filters_trees() -> bool {
    static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ANSWER.get_or_init(|| {
        const TMPFS_MAGIC: u64 = 0x0102_1994;
        let shm = rfs::statfs("/dev/shm").is_ok_and(|st| st.f_type as u64 == TMPFS_MAGIC);
        if shm {
            return match rfs::getxattr("/dev/shm", "user.warden", &mut [0u8; 0]) {
                Err(rustix::io::Errno::NODATA) | Ok(_) => true,
                Err(_) => false,
            };
        }
        let Ok(fd) =
            rustix::fs::memfd_create(c"warden-xattr-probe", rustix::fs::MemfdFlags::CLOEXEC)
        else {
            return false;
        };
        rfs::fsetxattr(&fd, "user.warden", b"y", rfs::XattrFlags::CREATE).is_ok()
    })
}

/// Where building the view failed, and on which path.
#[derive(Debug)]
pub struct ViewError {
    /// What was being done.
    pub what: String,
    /// The errno.
    pub source: io::Error,
}

impl ViewError {
    fn at(what: impl Into<String>) -> impl FnOnce(io::Error) -> ViewError {
        let what = what.into();
        move |source| ViewError { what, source }
    }
}

fn errno(e: rustix::io::Errno) -> io::Error {
    e.into()
}

/// Builds the view of `plan` and makes it the calling process's root. Call in a fresh mount
/// namespace, before anything of the program runs. What is left is [`Unsealed::seal`]'s: the
/// host's tree still hangs beneath the view, and the program may not exec before it is gone.
///
/// Every mount is made into a tree attached to this namespace, never into a detached one:
/// kernels before 6.15 refuse to mount into, or clone from, a tree that is not in the caller's
/// namespace (`EINVAL`), and overlayfs refuses a detached layer ("failed to clone lowerpath").
/// So the first step makes a staging tmpfs the namespace's root, with the host's tree beneath
/// it ([`Staging`]); the view's root, the masks, the run's disk and the filtered trees' layers
/// hang in it while the steps run, and the steps look up the host's paths in the host's tree
/// (init is `chroot`ed there meanwhile). The last step makes the view the root, with the
/// staging tmpfs (and the host's tree in it) beneath it until [`Unsealed::seal`] detaches both.
pub fn enter(plan: &ViewPlan) -> Result<Unsealed, ViewError> {
    // Nothing done here may reach back to the host's namespace.
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::PRIVATE | MountPropagationFlags::REC,
    )
    .map_err(|e| ViewError::at("making the mount namespace private")(errno(e)))?;
    let staging = Staging::enter().map_err(ViewError::at("staging the view"))?;
    // The root: the host's own tree when the policy binds all of it (`/*`), else an empty tmpfs
    // that only the steps fill.
    let (root, steps, tmpfs_root) = match plan.steps.split_first() {
        Some((Step::Bind { path, flags, .. }, rest)) if path == "/" => {
            let tree = clone_tree("/", true, bind_attributes(*flags))
                .map_err(ViewError::at("binding /"))?;
            (tree, rest, false)
        }
        _ => {
            let fs = tmpfs(
                "0755",
                MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NODEV,
            )
            .map_err(ViewError::at("creating the view's root"))?;
            (fs, plan.steps.as_slice(), true)
        }
    };
    staging
        .hold(root.as_fd())
        .map_err(ViewError::at("staging the view's root"))?;
    let masks = Masks {
        fs: mask_sources()
            .and_then(|fs| staging.hold(fs.as_fd()).map(|()| fs))
            .map_err(ViewError::at("creating the masks"))?,
        placed: Default::default(),
    };
    let mut has_dev = false;
    let mut held = Held::default();
    let disk = plan
        .disk
        .as_ref()
        .map(|d| RunDisk::new(d).and_then(|disk| staging.hold(disk.fs.as_fd()).map(|()| disk)))
        .transpose()
        .map_err(ViewError::at(
            "creating the run's disk (a tmpfs of limit-disk's size)",
        ))?;
    for step in steps {
        has_dev |= *step == Step::DevTmpfs;
        apply(
            step,
            root.as_fd(),
            &masks,
            plan.copy_dir.as_deref(),
            disk.as_ref(),
            &staging,
            &mut held,
        )?;
    }
    if let Some(disk) = disk {
        // Its places hold it; the mount itself goes with the staging tmpfs.
        held.layers.push(disk.fs);
    }
    // On an empty tmpfs root, the staging tmpfs (with the host's tree) goes to a directory of
    // its own, so that the view is the root at once and both are detached by `seal`, while the
    // program sets itself up (detaching waits for an RCU grace period: a few hundred
    // microseconds here).
    let old_root = tmpfs_root && rfs::mkdirat(root.as_fd(), OLD_ROOT, Mode::empty()).is_ok();
    staging
        .leave(root.as_fd(), old_root)
        .map_err(ViewError::at("entering the view (pivot_root)"))?;
    let unsealed = Unsealed {
        old_root,
        read_only: [("/dev", has_dev), ("/", tmpfs_root)],
        layers: held.layers,
        proc: held.proc,
        masks: Some(masks),
    };
    if old_root {
        return Ok(unsealed);
    }
    // The host's tree is already gone: the rest at once, and nothing left to seal.
    unsealed.seal()?;
    Ok(Unsealed {
        layers: unsealed.layers,
        ..Unsealed::default()
    })
}

/// The mount namespace's root while the view is built: a tmpfs holding the host's tree at
/// [`Staging::HOST`] and, each in a directory of its own, the mounts the steps work on (the
/// view's root, the masks, the run's disk, the filtered trees' layers), so that every one of
/// them is attached to the namespace. The caller's root meanwhile is the host's tree, so that
/// the steps' host paths resolve as they do on the host (absolute links included).
struct Staging {
    fs: OwnedFd,
    next: std::cell::Cell<usize>,
}

impl Staging {
    /// Where the host's tree hangs in the staging tmpfs.
    const HOST: &'static str = "host";

    /// Makes a staging tmpfs the namespace's root, with the host's tree beneath it, and
    /// `chroot`s the caller into the host's tree.
    fn enter() -> io::Result<Staging> {
        let fs = tmpfs(
            "0700",
            MountAttrFlags::MOUNT_ATTR_NOSUID
                | MountAttrFlags::MOUNT_ATTR_NODEV
                | MountAttrFlags::MOUNT_ATTR_NOEXEC,
        )?;
        rfs::mkdirat(fs.as_fd(), Self::HOST, Mode::from_bits_truncate(0o700))?;
        // pivot_root needs the new root attached; the host's /tmp serves for the moment it
        // takes (a mount of this namespace's own, stacked there and moved away by the pivot).
        move_mount(
            fs.as_fd(),
            "",
            rfs::CWD,
            "/tmp",
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )?;
        rustix::process::fchdir(fs.as_fd())?;
        rustix::process::pivot_root(".", Self::HOST)?;
        rustix::process::chdir(Self::HOST)?;
        rustix::process::chroot(".")?;
        rustix::process::chdir("/")?;
        Ok(Staging {
            fs,
            next: std::cell::Cell::new(0),
        })
    }

    /// Attaches the detached `mount` to a new directory of the staging tmpfs: from then on it
    /// is in the namespace, to mount into and clone from on every kernel.
    fn hold(&self, mount: BorrowedFd<'_>) -> io::Result<()> {
        let n = self.next.get();
        self.next.set(n + 1);
        let name = format!("m{n}");
        rfs::mkdirat(
            self.fs.as_fd(),
            name.as_str(),
            Mode::from_bits_truncate(0o700),
        )?;
        move_mount(
            mount,
            "",
            self.fs.as_fd(),
            name.as_str(),
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )?;
        Ok(())
    }

    /// Makes `root` (held in the staging tmpfs) the root of every process whose root the
    /// staging tmpfs is (init and the program's process, which the first pivot moved there).
    /// With `old_root`, the staging tmpfs and all in it go to [`OLD_ROOT`] beneath the view,
    /// for [`Unsealed::seal`]; without, they are stacked on the new root and detached at once.
    fn leave(self, root: BorrowedFd<'_>, old_root: bool) -> io::Result<()> {
        rustix::process::fchdir(self.fs.as_fd())?;
        rustix::process::chroot(".")?;
        rustix::process::fchdir(root)?;
        if old_root {
            rustix::process::pivot_root(".", OLD_ROOT)?;
        } else {
            rustix::process::pivot_root(".", ".")?;
            // The staging tmpfs now sits on top of the new root at "/": detach it and all
            // beneath it.
            rustix::mount::unmount(".", UnmountFlags::DETACH)?;
        }
        rustix::process::chdir("/")?;
        Ok(())
    }
}

/// Where the host's tree hangs beneath a tmpfs root between [`enter`] and [`Unsealed::seal`].
const OLD_ROOT: &str = ".warden-host-root";

/// A view that is the caller's root, with its last steps to come: the host's tree detached
/// from beneath it, and the tmpfs mounts the steps wrote into made read-only.
#[must_use = "the host's tree stays beneath the view until it is sealed"]
#[derive(Default)]
pub struct Unsealed {
    old_root: bool,
    read_only: [(&'static str, bool); 2],
    /// The filtered trees' layers, detached: closing the last descriptor of a detached mount
    /// dissolves it, which waits for an RCU grace period. Held until the caller drops this,
    /// after the program may go on (init's own exit then leaves them to a worker of the
    /// kernel's).
    layers: Vec<OwnedFd>,
    /// The procfs's entries to mask, and the masks.
    proc: Option<ProcMasks>,
    masks: Option<Masks>,
}

impl Unsealed {
    /// Detaches the host's tree and makes the view's own tmpfs mounts read-only. Nothing of
    /// the program may run before this returns.
    pub fn seal(&self) -> Result<(), ViewError> {
        // The masks first (CPU work), then the detach (which only waits for an RCU grace
        // period).
        if let (Some(p), Some(m)) = (&self.proc, &self.masks) {
            p.hide(m).map_err(ViewError::at("hiding /proc's entries"))?;
        }
        if self.old_root {
            let at = format!("/{OLD_ROOT}");
            rustix::mount::unmount(at.as_str(), UnmountFlags::DETACH)
                .map_err(|e| ViewError::at("detaching the host's tree")(errno(e)))?;
            rfs::unlinkat(rfs::CWD, at.as_str(), rfs::AtFlags::REMOVEDIR)
                .map_err(|e| ViewError::at("removing the host tree's mount point")(errno(e)))?;
        }
        // Attached now: the tmpfs mounts the steps wrote into become read-only.
        for (path, needed) in self.read_only {
            if needed {
                read_only(path).map_err(ViewError::at(format!("making {path} read-only")))?;
            }
        }
        Ok(())
    }
}

/// Makes the mount at `path` (not those beneath it) read-only.
fn read_only(path: &str) -> io::Result<()> {
    let mount = open_tree(rfs::CWD, path, OpenTreeFlags::OPEN_TREE_CLOEXEC)?;
    set_attributes(mount.as_fd(), MountAttrFlags::MOUNT_ATTR_RDONLY, false)
}

fn apply(
    step: &Step,
    root: BorrowedFd<'_>,
    masks: &Masks,
    copy_dir: Option<&str>,
    disk: Option<&RunDisk>,
    staging: &Staging,
    held: &mut Held,
) -> Result<(), ViewError> {
    match step {
        Step::Filtered { path, flags, layer } => {
            let (fs, own) = filtered(path, layer, bind_attributes(*flags), staging)
                .map_err(ViewError::at(format!("filtering {path}")))?;
            held.layers.push(own);
            attach(root, relative(path), fs.as_fd(), true)
                .map_err(ViewError::at(format!("mounting the filtered {path}")))
        }
        Step::Map {
            from,
            path,
            dir,
            flags,
        } => {
            let tree = clone_tree(from, *dir, bind_attributes(*flags))
                .map_err(ViewError::at(format!("mapping {from}")))?;
            attach(root, relative(path), tree.as_fd(), *dir)
                .map_err(ViewError::at(format!("mapping {from} at {path}")))
        }
        Step::Tmpfs { path, flags } => {
            let fs = match disk {
                Some(disk) => disk.place(path, bind_attributes(*flags)),
                None => tmpfs("1777", bind_attributes(*flags)),
            }
            .map_err(ViewError::at(format!("creating the tmpfs {path}")))?;
            attach(root, relative(path), fs.as_fd(), true)
                .map_err(ViewError::at(format!("mounting the tmpfs {path}")))
        }
        Step::Copy {
            from,
            path,
            index,
            flags,
        } => {
            let dir = match (disk, copy_dir) {
                (Some(disk), _) if disk.plan.copies => disk.copy_dir(),
                (_, Some(dir)) => dir.to_owned(),
                _ => {
                    return Err(ViewError::at(format!("copying {from}"))(io::Error::other(
                        "no directory for the private copies",
                    )))
                }
            };
            let fs = overlay(from, &format!("{dir}/{index}"), bind_attributes(*flags))
                .map_err(ViewError::at(format!("making the private copy of {from}")))?;
            attach(root, relative(path), fs.as_fd(), true).map_err(ViewError::at(format!(
                "mounting the private copy at {path}"
            )))
        }
        Step::Bind { path, dir, flags } => bind(root, path, *dir, bind_attributes(*flags))
            .map_err(ViewError::at(format!("binding {path}"))),
        Step::Device { path, write } => {
            let mut set = MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NOEXEC;
            if !write {
                set |= MountAttrFlags::MOUNT_ATTR_RDONLY;
            }
            bind(root, path, false, set).map_err(ViewError::at(format!("binding {path}")))
        }
        Step::Symlink { path, target } => {
            let rel = relative(path);
            let link = || rfs::symlinkat(target.as_str(), root, rel);
            match with_parents(root, rel, link).map_err(ViewError::at(format!("placing {path}")))? {
                Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
                Err(e) => Err(ViewError::at(format!("linking {path}"))(errno(e))),
            }
        }
        Step::Dir { path } => placeholder(root, relative(path), true)
            .map_err(ViewError::at(format!("making the directory {path}"))),
        Step::Mask { path, dir } => masks
            .hide(root, relative(path), *dir, path)
            .map_err(ViewError::at(format!("hiding {path}"))),
        Step::DevTmpfs => {
            let fs = tmpfs(
                "0755",
                MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NOEXEC,
            )
            .map_err(ViewError::at("creating /dev"))?;
            attach(root, "dev", fs.as_fd(), true).map_err(ViewError::at("mounting /dev"))
        }
        Step::Proc { keep } => {
            held.proc = proc(root, keep, staging)?;
            Ok(())
        }
    }
}

/// The run's own disk ([`Disk`]): one tmpfs of the limit's size, whose directories are mounted
/// where the view has a tmpfs (the scratch directory, `path-map tmpfs`, `/dev/shm`) and hold
/// the private copies' changes, so that together they hold at most its size. Made and filled
/// before anything of the program runs: nothing races what is made in it.
struct RunDisk {
    fs: OwnedFd,
    plan: Disk,
    next: std::cell::Cell<usize>,
}

impl RunDisk {
    fn new(plan: &Disk) -> io::Result<RunDisk> {
        let fs = fsopen("tmpfs", FsOpenFlags::FSOPEN_CLOEXEC)?;
        fsconfig_set_string(fs.as_fd(), "mode", "0711")?;
        fsconfig_set_string(fs.as_fd(), "size", plan.size.to_string())?;
        // Inodes cost memory too, and tmpfs counts none of it in `size`.
        fsconfig_set_string(
            fs.as_fd(),
            "nr_inodes",
            (plan.size / 4096).max(1024).to_string(),
        )?;
        fsconfig_create(fs.as_fd())?;
        // Mounted nowhere itself: each place is a clone that adds its own flags (`ro`,
        // `noexec`) to these, and a flag set here could not be taken away there.
        let attrs = MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NODEV;
        Ok(RunDisk {
            fs: fsmount(fs.as_fd(), FsMountFlags::FSMOUNT_CLOEXEC, attrs)?,
            plan: plan.clone(),
            next: std::cell::Cell::new(0),
        })
    }

    /// A new directory of the disk for the tmpfs at `path`, detached and cloned with `attrs`:
    /// the program's own (0700) for the scratch directory, with the exec rules' directories
    /// made in it; shared (1777, as a tmpfs of its own would be) for any other.
    fn place(&self, path: &str, attrs: MountAttrFlags) -> io::Result<OwnedFd> {
        let n = self.next.get();
        self.next.set(n + 1);
        let name = format!("t{n}");
        let scratch = self.plan.scratch.as_deref() == Some(path);
        let mode = if scratch { 0o700 } else { 0o1777 };
        rfs::mkdirat(&self.fs, name.as_str(), Mode::from_raw_mode(mode))?;
        rfs::chmodat(
            &self.fs,
            name.as_str(),
            Mode::from_raw_mode(mode),
            rfs::AtFlags::empty(),
        )?;
        let (uid, gid) = self.plan.owner;
        let own = |rel: &str| {
            rfs::chownat(
                &self.fs,
                rel,
                Some(rustix::process::Uid::from_raw(uid)),
                Some(rustix::process::Gid::from_raw(gid)),
                rfs::AtFlags::SYMLINK_NOFOLLOW,
            )
        };
        if scratch {
            own(&name)?;
        }
        // The directories of the rules' trees beneath this place, as the program would make
        // them (0755, its own).
        let beneath = format!("{}/", path.trim_end_matches('/'));
        for dir in &self.plan.dirs {
            if let Some(rest) = dir.strip_prefix(&beneath) {
                let rel = format!("{name}/{rest}");
                rfs::mkdirat(&self.fs, rel.as_str(), Mode::from_raw_mode(0o755))?;
                own(&rel)?;
            }
        }
        let name = std::ffi::CString::new(name).expect("no NUL");
        crate::sys::mount::clone_with_attributes(self.fs.as_fd(), &name, true, attrs)
    }

    /// Where the private copies keep their changes: a directory of the disk, by a path the
    /// overlay can be given (the disk is mounted nowhere).
    fn copy_dir(&self) -> String {
        let dir = "copies";
        // Made for an earlier copy if it fails; any other failure shows when the overlay is.
        let _ = rfs::mkdirat(&self.fs, dir, Mode::from_raw_mode(0o755));
        format!("/proc/self/fd/{}/{dir}", self.fs.as_raw_fd())
    }
}

/// A detached tmpfs with root mode `mode`.
fn tmpfs(mode: &str, attrs: MountAttrFlags) -> io::Result<OwnedFd> {
    let fs = fsopen("tmpfs", FsOpenFlags::FSOPEN_CLOEXEC)?;
    fsconfig_set_string(fs.as_fd(), "mode", mode)?;
    fsconfig_create(fs.as_fd())?;
    Ok(fsmount(fs.as_fd(), FsMountFlags::FSMOUNT_CLOEXEC, attrs)?)
}

/// A detached overlay of the host's `lower` whose changes go to `dir/upper` (made here, with
/// its `dir/work`): the host's tree is only ever read. `userxattr`: the overlay's own marks
/// (opaque directories) are `user.overlay.*`, which a user namespace may set; deletions are
/// whiteouts (0/0 character devices), which any user may make. The kernel's own words on a
/// refusal (it keeps them in the context) are added to the error.
fn overlay(lower: &str, dir: &str, attrs: MountAttrFlags) -> io::Result<OwnedFd> {
    for sub in ["", "/upper", "/work"] {
        rfs::mkdirat(
            rfs::CWD,
            format!("{dir}{sub}"),
            Mode::from_bits_truncate(0o755),
        )?;
    }
    let fs = fsopen("overlay", FsOpenFlags::FSOPEN_CLOEXEC)?;
    let said = |e: rustix::io::Errno| -> io::Error {
        let mut buf = [0u8; 256];
        match rustix::io::read(fs.as_fd(), &mut buf) {
            Ok(n) if n > 0 => io::Error::new(
                io::Error::from(e).kind(),
                format!(
                    "{} ({})",
                    io::Error::from(e),
                    String::from_utf8_lossy(&buf[..n]).trim()
                ),
            ),
            _ => e.into(),
        }
    };
    // One layer: `lowerdir`, which every kernel with overlayfs in a user namespace takes
    // (`lowerdir+` came with Linux 6.8), its separator and escape character escaped.
    fsconfig_set_string(fs.as_fd(), "lowerdir", one_layer(lower)).map_err(&said)?;
    fsconfig_set_string(fs.as_fd(), "upperdir", format!("{dir}/upper")).map_err(&said)?;
    fsconfig_set_string(fs.as_fd(), "workdir", format!("{dir}/work")).map_err(&said)?;
    rustix::mount::fsconfig_set_flag(fs.as_fd(), "userxattr").map_err(&said)?;
    fsconfig_create(fs.as_fd()).map_err(&said)?;
    fsmount(fs.as_fd(), FsMountFlags::FSMOUNT_CLOEXEC, attrs).map_err(&said)
}

/// `path` as overlayfs's `lowerdir` reads one layer: `:` separates layers and `\\` escapes.
fn one_layer(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, ':' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The host's read-only `path` under a layer of the view's own ([`Step::Filtered`]): a tmpfs
/// holding `layer` (whiteouts, opaque directories, placeholders, links; its directories with
/// the host's modes), then a read-only overlay of it over the host's tree, with `attrs`.
/// Returns the overlay and the layer, which the caller keeps open (see [`Unsealed`]).
fn filtered(
    path: &str,
    layer: &[LayerEntry],
    attrs: MountAttrFlags,
    staging: &Staging,
) -> io::Result<(OwnedFd, OwnedFd)> {
    let mode = |rel: &str| -> io::Result<Mode> {
        let at = if rel.is_empty() {
            path.to_owned()
        } else {
            format!("{path}/{rel}")
        };
        Ok(Mode::from_raw_mode(rfs::stat(at.as_str())?.st_mode) & Mode::from_bits_truncate(0o7777))
    };
    let fs = tmpfs(
        &format!("{:04o}", mode("")?.bits()),
        MountAttrFlags::empty(),
    )?;
    // The layer's directories made so far: several entries share a directory on the way.
    let made = std::cell::RefCell::new(std::collections::BTreeSet::<String>::new());
    let dir_like_host = |rel: &str| -> io::Result<()> {
        if made.borrow().contains(rel) {
            return Ok(());
        }
        match rfs::mkdirat(fs.as_fd(), rel, mode(rel)?) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {
                made.borrow_mut().insert(rel.to_owned());
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    };
    for entry in layer {
        let (LayerEntry::Hidden(rel)
        | LayerEntry::Masked(rel, _)
        | LayerEntry::Opaque(rel)
        | LayerEntry::Placeholder(rel, _)
        | LayerEntry::Link(rel, _)) = entry;
        // The directories on the way, as the host has them (the overlay shows the layer's).
        let mut end = 0;
        while let Some(i) = rel[end..].find('/') {
            end += i;
            dir_like_host(&rel[..end])?;
            end += 1;
        }
        match entry {
            // A whiteout: a character device 0/0, which any user may make.
            LayerEntry::Hidden(rel) => rfs::mknodat(
                fs.as_fd(),
                rel.as_str(),
                rfs::FileType::CharacterDevice,
                Mode::empty(),
                0,
            )?,
            LayerEntry::Opaque(rel) => {
                dir_like_host(rel)?;
                opaque(fs.as_fd(), rel)?;
            }
            // As the masks: empty, mode 0, on a mount no one in the sandbox may change.
            LayerEntry::Masked(rel, true) => {
                rfs::mkdirat(fs.as_fd(), rel.as_str(), Mode::empty())?;
                opaque(fs.as_fd(), rel)?;
            }
            LayerEntry::Masked(rel, false) => drop(rfs::openat(
                fs.as_fd(),
                rel.as_str(),
                OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )?),
            LayerEntry::Placeholder(rel, dir) => placeholder(fs.as_fd(), rel, *dir)?,
            LayerEntry::Link(rel, target) => {
                rfs::symlinkat(target.as_str(), fs.as_fd(), rel.as_str())?
            }
        }
    }
    // overlayfs clones its layers, which a kernel before 6.15 does only for a mount of the
    // caller's namespace.
    staging.hold(fs.as_fd())?;
    let overlay = fsopen("overlay", FsOpenFlags::FSOPEN_CLOEXEC)?;
    // The layer is mounted in the staging tmpfs, out of the host tree's reach: its path is
    // its descriptor's.
    // Both layers in one `lowerdir` (`lowerdir+`, one by one, came with Linux 6.8; the
    // layers' tmpfs with 6.6), the host's path escaped.
    let layers = format!("/proc/self/fd/{}:{}", fs.as_raw_fd(), one_layer(path));
    fsconfig_set_string(overlay.as_fd(), "lowerdir", layers.as_str())?;
    rustix::mount::fsconfig_set_flag(overlay.as_fd(), "userxattr")?;
    fsconfig_create(overlay.as_fd())?;
    let mounted = fsmount(overlay.as_fd(), FsMountFlags::FSMOUNT_CLOEXEC, attrs)?;
    Ok((mounted, fs))
}

/// Marks the layer's directory `rel` (beneath `layer`) opaque: none of the host's entries of
/// it show through. `userxattr` ([`filtered`]): the overlay's marks are `user.overlay.*`.
fn opaque(layer: BorrowedFd<'_>, rel: &str) -> io::Result<()> {
    let dir = rfs::openat(
        layer,
        rel,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    rfs::fsetxattr(&dir, "user.overlay.opaque", b"y", rfs::XattrFlags::CREATE)?;
    Ok(())
}

/// The two masks: `f`, an empty file, and `d`, an empty directory, both mode 0 on a read-only
/// mount, so that no one in the sandbox may read, list or change them (the program holds no
/// capability to override that).
fn mask_sources() -> io::Result<OwnedFd> {
    let fs = tmpfs(
        "0000",
        MountAttrFlags::MOUNT_ATTR_NOSUID
            | MountAttrFlags::MOUNT_ATTR_NODEV
            | MountAttrFlags::MOUNT_ATTR_NOEXEC,
    )?;
    drop(rfs::openat(
        fs.as_fd(),
        "f",
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )?);
    rfs::mkdirat(fs.as_fd(), "d", Mode::empty())?;
    set_attributes(fs.as_fd(), MountAttrFlags::MOUNT_ATTR_RDONLY, false)?;
    Ok(fs)
}

/// `/a/b` as `a/b`, for lookups beneath the view's root descriptor.
fn relative(path: &str) -> &str {
    match path.trim_start_matches('/') {
        "" => ".",
        rel => rel,
    }
}

/// Creates the directories leading to `rel` beneath `root` (those that exist are fine).
fn make_parents(root: BorrowedFd<'_>, rel: &str) -> io::Result<()> {
    let mut end = 0;
    while let Some(i) = rel[end..].find('/') {
        end += i;
        match rfs::mkdirat(root, &rel[..end], Mode::from_bits_truncate(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        end += 1;
    }
    Ok(())
}

/// `make` (which creates `rel` beneath `root`), and once more after [`make_parents`] if a
/// directory on the way was missing: most of the view's entries go where an earlier one has
/// already made the way (`dev/null` after `dev`), and asking for each directory on the way
/// first cost a failed `mkdirat` per directory per entry. The error is `make`'s.
fn with_parents(
    root: BorrowedFd<'_>,
    rel: &str,
    make: impl Fn() -> rustix::io::Result<()>,
) -> io::Result<rustix::io::Result<()>> {
    match make() {
        Err(rustix::io::Errno::NOENT) if rel.contains('/') => {
            make_parents(root, rel)?;
            Ok(make())
        }
        made => Ok(made),
    }
}

/// Creates the mount point `rel` beneath `root`: a directory or an empty file.
fn placeholder(root: BorrowedFd<'_>, rel: &str, dir: bool) -> io::Result<()> {
    let make = || {
        if dir {
            rfs::mkdirat(root, rel, Mode::from_bits_truncate(0o755))
        } else {
            rfs::openat(
                root,
                rel,
                OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
                Mode::from_bits_truncate(0o644),
            )
            .map(drop)
        }
    };
    match with_parents(root, rel, make)? {
        Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Moves the detached mount `mount` onto `rel` beneath `root`, creating the mount point.
fn attach(root: BorrowedFd<'_>, rel: &str, mount: BorrowedFd<'_>, dir: bool) -> io::Result<()> {
    placeholder(root, rel, dir)?;
    move_mount(
        mount,
        "",
        root,
        rel,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )?;
    Ok(())
}

/// The mount flags of a bind with `flags`: `nosuid,nodev` always, `ro` and `noexec` unless the
/// policy gives `write` and `exec` there.
fn bind_attributes(flags: Flags) -> MountAttrFlags {
    let mut set = MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NODEV;
    if !flags.write {
        set |= MountAttrFlags::MOUNT_ATTR_RDONLY;
    }
    if !flags.exec {
        set |= MountAttrFlags::MOUNT_ATTR_NOEXEC;
    }
    set
}

/// A detached clone of the host's `path` (with its submounts when `dir`), with `set` added to
/// every mount of it.
fn clone_tree(path: &str, dir: bool, set: MountAttrFlags) -> io::Result<OwnedFd> {
    let path =
        std::ffi::CString::new(path).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    crate::sys::mount::clone_with_attributes(rfs::CWD, &path, dir, set)
}

/// Clones the host's `path` and attaches it at the same path in the view.
fn bind(root: BorrowedFd<'_>, path: &str, dir: bool, set: MountAttrFlags) -> io::Result<()> {
    let tree = clone_tree(path, dir, set)?;
    attach(root, relative(path), tree.as_fd(), dir)
}

/// The masks' tmpfs ([`mask_sources`]). The first directory it hides is hidden by the tmpfs's
/// own root (mode 0, so its `f` and `d` cannot be listed or reached either), which attaches it:
/// a detached mount is dissolved when its last descriptor closes, and dissolving waits for an
/// RCU grace period, which on a loaded machine took milliseconds of every start.
struct Masks {
    fs: OwnedFd,
    /// Where in the view the tmpfs hides its first directory, once it does.
    placed: std::cell::RefCell<Option<String>>,
}

impl Masks {
    /// Covers `rel` beneath `base`, which is `at` in the view, with an empty file or directory
    /// of mode 0.
    fn hide(&self, base: BorrowedFd<'_>, rel: &str, dir: bool, at: &str) -> io::Result<()> {
        if dir && self.placed.borrow().is_none() {
            move_mount(
                self.fs.as_fd(),
                "",
                base,
                rel,
                MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
            )?;
            *self.placed.borrow_mut() = Some(at.to_owned());
            return Ok(());
        }
        let source = open_tree(
            self.fs.as_fd(),
            if dir { "d" } else { "f" },
            OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC,
        )?;
        move_mount(
            source.as_fd(),
            "",
            base,
            rel,
            MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
        )?;
        Ok(())
    }
}

/// A procfs of the caller's PID namespace at `/proc`; what `keep` does not name is returned, to
/// be masked by [`Unsealed::seal`] (`None`: nothing to mask).
fn proc(
    root: BorrowedFd<'_>,
    keep: &Keep,
    staging: &Staging,
) -> Result<Option<ProcMasks>, ViewError> {
    let make = || -> io::Result<OwnedFd> {
        let fs = fsopen("proc", FsOpenFlags::FSOPEN_CLOEXEC)?;
        // Processes the caller may not inspect (init, once it is not dumpable) are not listed, whatever group the caller is in.
        fsconfig_set_string(fs.as_fd(), "hidepid", "ptraceable")?;
        fsconfig_create(fs.as_fd())?;
        Ok(fsmount(
            fs.as_fd(),
            FsMountFlags::FSMOUNT_CLOEXEC,
            MountAttrFlags::MOUNT_ATTR_NOSUID
                | MountAttrFlags::MOUNT_ATTR_NODEV
                | MountAttrFlags::MOUNT_ATTR_NOEXEC,
        )?)
    };
    let procfs = make().map_err(ViewError::at("mounting a procfs"))?;
    attach(root, "proc", procfs.as_fd(), true).map_err(ViewError::at("mounting /proc"))?;
    if keep.all {
        return Ok(None);
    }
    let names = hide_unnamed(procfs.as_fd(), keep, staging)?;
    Ok(Some(ProcMasks { procfs, names }))
}

/// The entries of the procfs's top directory left to mask, each with whether it is a
/// directory ([`hide_unnamed`]).
struct ProcMasks {
    procfs: OwnedFd,
    names: Vec<(String, bool)>,
}

impl ProcMasks {
    /// Masks them, the view being the caller's root: once the masks' tmpfs hides a directory
    /// of the view, each with one `mount(2)` bind of its `f` or `d` (a clone would be three
    /// calls and a namespace of its own for the moment it is detached).
    fn hide(&self, masks: &Masks) -> io::Result<()> {
        for (name, dir) in &self.names {
            let at = format!("/proc/{name}");
            let placed = masks.placed.borrow().clone();
            match placed {
                Some(from) => {
                    let source = format!("{from}/{}", if *dir { "d" } else { "f" });
                    rustix::mount::mount_bind(source.as_str(), at.as_str())?;
                }
                None => masks.hide(self.procfs.as_fd(), name, *dir, &at)?,
            }
        }
        Ok(())
    }
}

/// What building the view leaves for [`Unsealed`]: the filtered trees' layers and the
/// procfs's masks.
#[derive(Default)]
struct Held {
    layers: Vec<OwnedFd>,
    proc: Option<ProcMasks>,
}

/// Masks every entry of the procfs's top directory (`base`) that `keep` does not name: the
/// process directories are the sandbox's own and stay, so this one directory cannot be
/// replaced. A directory named in part (`sys` for `/proc/sys/kernel/*`) is covered with an
/// empty tmpfs that holds only what is named in it ([`cover`]): a few mounts for what is named
/// rather than one per name that is not, and its listing shows only the policy's names.
fn hide_unnamed(
    base: BorrowedFd<'_>,
    keep: &Keep,
    staging: &Staging,
) -> Result<Vec<(String, bool)>, ViewError> {
    let dir = rfs::openat(
        base,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| ViewError::at("listing /proc")(errno(e)))?;
    let mut names = Vec::new();
    let entries =
        rfs::Dir::read_from(&dir).map_err(|e| ViewError::at("listing /proc")(errno(e)))?;
    for entry in entries {
        let Ok(entry) = entry else { break };
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "." || name == ".." || name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        names.push((name, entry.file_type()));
    }
    let mut hide = Vec::new();
    for (name, ft) in names {
        match keep.children.get(&name) {
            Some(k) if k.all => continue,
            Some(k) if ft == rfs::FileType::Directory => {
                cover(base, &name, k, staging)?;
                continue;
            }
            _ => {}
        }
        // A link leads into /proc/self (`mounts`, `net`), whose own rules apply.
        if ft == rfs::FileType::Symlink {
            continue;
        }
        hide.push((name, ft == rfs::FileType::Directory));
    }
    // A directory first: the masks' tmpfs goes there, and the rest are bound from it.
    hide.sort_by_key(|(_, dir)| !dir);
    Ok(hide)
}

/// Covers the procfs directory `rel` (beneath `base`) with an empty tmpfs, read-only once it
/// holds what `keep` names there: each named tree is a clone of the procfs's own, attached
/// at its name; a directory named in part is a directory of the tmpfs, filled the same way.
/// What the policy does not name is not there at all, neither readable nor listed.
fn cover(base: BorrowedFd<'_>, rel: &str, keep: &Keep, staging: &Staging) -> Result<(), ViewError> {
    let at = |what: &str| ViewError::at(format!("{what} /proc/{rel}"));
    // The clones first: once the tmpfs is on top, the procfs's names are out of reach.
    let mut named = Vec::new();
    clones(base, rel, "", keep, &mut named).map_err(at("keeping the named parts of"))?;
    let fs = tmpfs(
        "0555",
        MountAttrFlags::MOUNT_ATTR_NOSUID
            | MountAttrFlags::MOUNT_ATTR_NODEV
            | MountAttrFlags::MOUNT_ATTR_NOEXEC,
    )
    .map_err(at("creating the cover of"))?;
    // Filled while held in the staging tmpfs (attached: the clones may be mounted in it on
    // every kernel), made read-only, then moved over the directory.
    staging
        .hold(fs.as_fd())
        .map_err(at("staging the cover of"))?;
    for (path, tree) in named {
        match tree {
            Named::Dir => {
                // Directories come before what they hold (`clones` goes depth first).
                match rfs::mkdirat(fs.as_fd(), &path, Mode::from_bits_truncate(0o555)) {
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(at("filling the cover of")(errno(e))),
                }
            }
            Named::Link(target) => match rfs::symlinkat(target.as_str(), fs.as_fd(), &path) {
                Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                Err(e) => return Err(at("filling the cover of")(errno(e))),
            },
            Named::Mount(tree, dir) => {
                attach(fs.as_fd(), &path, tree.as_fd(), dir).map_err(at("filling the cover of"))?
            }
        }
    }
    set_attributes(fs.as_fd(), MountAttrFlags::MOUNT_ATTR_RDONLY, false)
        .map_err(at("making read-only the cover of"))?;
    move_mount(
        fs.as_fd(),
        "",
        base,
        rel,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )
    .map_err(|e| at("covering")(errno(e)))?;
    Ok(())
}

/// One thing a [`cover`] holds, at its path beneath the covered directory.
enum Named {
    /// A directory named in part, made in the tmpfs.
    Dir,
    /// A link, as the procfs has it.
    Link(String),
    /// A clone of the procfs's tree (a directory when true) to attach.
    Mount(OwnedFd, bool),
}

/// The parts of the procfs's `dir/sub` that `keep` names, in the order [`cover`] makes them
/// (a directory before its contents). A name the procfs lacks is left out.
fn clones(
    base: BorrowedFd<'_>,
    dir: &str,
    sub: &str,
    keep: &Keep,
    out: &mut Vec<(String, Named)>,
) -> io::Result<()> {
    for (name, k) in &keep.children {
        let path = if sub.is_empty() {
            name.clone()
        } else {
            format!("{sub}/{name}")
        };
        let full = format!("{dir}/{path}");
        let Ok(st) = rfs::statat(base, &full, rfs::AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        let ft = rfs::FileType::from_raw_mode(st.st_mode);
        if ft == rfs::FileType::Symlink {
            let target = rfs::readlinkat(base, &full, Vec::new())?;
            out.push((path, Named::Link(target.to_string_lossy().into_owned())));
        } else if k.all {
            let is_dir = ft == rfs::FileType::Directory;
            let mut flags = OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC;
            if is_dir {
                flags |= OpenTreeFlags::AT_RECURSIVE;
            }
            let tree = open_tree(base, &full, flags)?;
            out.push((path, Named::Mount(tree, is_dir)));
        } else if ft == rfs::FileType::Directory {
            out.push((path.clone(), Named::Dir));
            clones(base, dir, &path, k, out)?;
        }
        // A file named in part (`/proc/cpuinfo/x`) names nothing that exists.
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use warden_policy::Policy;

    /// The short mount table names the mount points `mountinfo` does, octal escapes and all
    /// (a mount point with a space in its name is made here, in a namespace of this test's own).
    #[test]
    fn the_mount_points_are_mountinfos() {
        let from_mountinfo = || -> Vec<String> {
            std::fs::read_to_string("/proc/self/mountinfo")
                .unwrap()
                .lines()
                .filter_map(|l| l.split(' ').nth(4))
                .map(unescape_octal)
                .collect()
        };
        let points = mount_points().expect("the table reads");
        assert!(points.iter().any(|p| p == "/proc"), "{points:?}");
        assert_eq!(points, from_mountinfo());
        // A name the kernel escapes, in a child of this test's own (a new mount namespace).
        let dir = crate::testing::TempTree::new("mount points");
        let odd = dir.join("a b\\c");
        std::fs::create_dir(&odd).unwrap();
        let odd = odd.to_str().unwrap().to_owned();
        let status = std::process::Command::new("unshare")
            .args([
                "--mount",
                "--map-root-user",
                "--propagation",
                "private",
                "sh",
                "-c",
            ])
            .arg("mount -t tmpfs none \"$1\" && cat /proc/self/mounts")
            .args(["sh", &odd])
            .output()
            .unwrap();
        assert!(status.status.success(), "{status:?}");
        let table = String::from_utf8(status.stdout).unwrap();
        let listed: Vec<String> = table
            .lines()
            .filter_map(|l| l.split(' ').nth(1))
            .map(unescape_octal)
            .collect();
        assert!(listed.contains(&odd), "{odd:?} not in {listed:?}");
    }

    /// The remembered host answers as the host does: the same plan for the default policy on
    /// this machine's real tree (its listing's types come from d_type, the rest from lstat).
    #[test]
    fn the_remembered_host_plans_as_the_host() {
        let policy = Policy::default_policy().expand_scratch("/tmp");
        let direct = warden_policy::view::view_plan(&policy, &HostFs);
        let remembered = warden_policy::view::view_plan(&policy, &RememberedHost::default());
        assert_eq!(direct, remembered);
        let host = RememberedHost::default();
        for name in host.list("/") {
            let path = format!("/{name}");
            assert_eq!(host.node(&path), HostFs.node(&path), "{path}");
        }
    }

    /// A directory resolved from the remembered answers has the kernel's name for it, through
    /// links absolute and relative, `.` and `..`; anything else is left to the kernel.
    #[test]
    fn a_remembered_directory_has_the_kernels_name() {
        let dir = crate::testing::TempTree::new("remembered");
        std::fs::create_dir_all(dir.join("a/b/c")).unwrap();
        std::fs::write(dir.join("a/f"), "x").unwrap();
        std::os::unix::fs::symlink("a/b", dir.join("rel")).unwrap();
        std::os::unix::fs::symlink(dir.join("a"), dir.join("abs")).unwrap();
        std::os::unix::fs::symlink("../a/b/c", dir.join("a/up")).unwrap();
        std::os::unix::fs::symlink("rel/../..", dir.join("back")).unwrap();
        std::os::unix::fs::symlink("loop", dir.join("loop")).unwrap();
        std::os::unix::fs::symlink("a/f", dir.join("to-file")).unwrap();
        let base = dir.to_str().unwrap();
        let host = RememberedHost::default();
        for name in [
            "",
            "a",
            "a/b/c",
            "rel",
            "rel/c",
            "abs/b",
            "a/up",
            "abs/up/..",
            "back",
            "./a/./b",
            "a/b/../b",
            "rel/..",
        ] {
            let path = format!("{base}/{name}");
            let kernel = crate::paths::canonical(&path).map(|(c, _)| c);
            assert!(kernel.is_some(), "{path}");
            assert_eq!(host.directory(&path), kernel, "{path}");
        }
        for name in ["a/f", "to-file", "loop", "missing", "a/f/x", "rel/missing"] {
            assert_eq!(host.directory(&format!("{base}/{name}")), None, "{name}");
        }
        assert_eq!(host.directory("/"), Some("/".to_owned()));
        assert_eq!(host.directory("relative/path"), None);
    }
}
