//! The sandbox's own file system view, planned from the policy: which host trees appear in it,
//! where, with which mount flags, and what is hidden.
//!
//! The view is a mount namespace whose root is an empty, read-only tmpfs. Every tree the policy
//! allows anything in is bind-mounted at its own path (`nosuid,nodev` always, read-only unless
//! the policy gives `write` somewhere in it, `noexec` unless it gives `exec`); a `path-deny`
//! inside such a tree is covered by an empty, unreadable file or directory (a *mask*); `/dev` is
//! a tmpfs holding only the devices the policy names exactly; `/proc` is a fresh procfs of the
//! sandbox's PID namespace with every entry the policy does not name masked. A path the policy
//! says nothing about does not exist in the view.
//!
//! The view decides *existence and mount flags*; Landlock (see [`crate::kernel`]) still decides
//! the rights inside it. Because a mount's `noexec` is checked by the kernel on every mapping, a
//! file the policy does not call executable cannot be run by `execve`, by `ld.so`, or by any
//! loader that maps it `PROT_EXEC`.
//!
//! This module is pure: [`view_plan`] turns a policy (with `$SCRATCH` expanded) and what a
//! [`Host`] says about its paths into a [`ViewPlan`], a list of steps that
//! `warden::confine::view` carries out in one place.

use crate::map::{at_or_beneath, MapMode, MapSource, PathMap};
use crate::policy::{Access, Policy, RuleId};
use std::collections::BTreeMap;

/// What the host has at a path, without following a final symlink.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// Nothing.
    Missing,
    /// A directory.
    Dir,
    /// A regular file (or a FIFO or socket: anything bindable that is not a device).
    File,
    /// A character device.
    Device,
    /// A symlink, with its target as written.
    Symlink(String),
}

/// What the planner may ask of the host. Implemented with `lstat`/`readlink`/`readdir` by the
/// launcher, and with tables by the tests.
pub trait Host {
    /// What `path` is (no final symlink followed).
    fn node(&self, path: &str) -> Node;
    /// The names in directory `dir` (empty when it is not one).
    fn list(&self, dir: &str) -> Vec<String>;
    /// Whether anything is mounted strictly beneath `dir` on the host. An overlay of `dir`
    /// ([`Step::Filtered`]) would show what lies under those mounts, not what is mounted there,
    /// so a tree with mounts in it keeps its bind. Unknown: assume so.
    fn mounted_beneath(&self, _dir: &str) -> bool {
        true
    }
}

/// Mount flags of one bind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flags {
    /// Writable (otherwise read-only).
    pub write: bool,
    /// Executable (otherwise `noexec`).
    pub exec: bool,
}

impl Flags {
    /// Both sets of rights.
    pub fn union(self, other: Flags) -> Flags {
        Flags {
            write: self.write || other.write,
            exec: self.exec || other.exec,
        }
    }
}

/// One step of building the view. Steps run in order; paths are absolute, in the view, and the
/// same on the host (the view never moves a tree).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Bind the host's `path` (with everything mounted beneath it) at `path`.
    Bind {
        /// Where, on the host and in the view.
        path: String,
        /// A directory (otherwise a single file).
        dir: bool,
        /// Its flags (`nosuid,nodev` always).
        flags: Flags,
    },
    /// A symlink as the host has it.
    Symlink {
        /// The link.
        path: String,
        /// Its target, as written.
        target: String,
    },
    /// An empty directory of the view's own at `path` (in the view's root tmpfs, never in a
    /// tree of the host's): the policy lets the program list a directory and names nothing in
    /// it, so it exists, holding nothing.
    Dir {
        /// Where.
        path: String,
    },
    /// Bind one host character device at its path (`nosuid,noexec`, read-only unless `write`).
    Device {
        /// The device node.
        path: String,
        /// Writable.
        write: bool,
    },
    /// A read-only tree of the host's at `path` with names hidden in it: an overlay whose upper
    /// lower layer is the view's own (`layer`: whiteouts, opaque directories, placeholders) and
    /// whose lower layer is the host's `path`. A hidden name does not exist in the view, whatever
    /// the host has or later makes there. Its objects are the overlay's, not the host's, so
    /// Landlock's one rule on its root (added in the view) covers it, and no rule on a host
    /// object is needed for it (`crate::kernel`).
    Filtered {
        /// Where, on the host and in the view.
        path: String,
        /// Its flags (never `write`: an overlay without an upper layer is read-only).
        flags: Flags,
        /// The view's own layer, parents before what they hold.
        layer: Vec<LayerEntry>,
    },
    /// Cover `path` with an empty file or directory nobody may read or change.
    Mask {
        /// What is hidden.
        path: String,
        /// A directory (otherwise a file).
        dir: bool,
    },
    /// `path-map HOST SANDBOX ro|rw`: bind the host's `from` (with everything mounted beneath
    /// it) at `path`, a place of the sandbox's.
    Map {
        /// The host's path.
        from: String,
        /// Where it appears in the view.
        path: String,
        /// A directory (otherwise a single file).
        dir: bool,
        /// Its flags (`write` only for an `rw` map whose rules give it).
        flags: Flags,
    },
    /// `path-map tmpfs SANDBOX`: an empty tmpfs of the sandbox's own (`nosuid,nodev`, mode
    /// 1777, read-only unless the rules give write in it, `noexec` unless they give exec).
    Tmpfs {
        /// Where.
        path: String,
        /// Its flags.
        flags: Flags,
    },
    /// `path-map HOST SANDBOX copy`: an overlay with the host's `from` as its lower layer and
    /// an upper and work directory of the run's ([`ViewPlan::copy_dir`]`/N`), so writes never
    /// reach the host.
    Copy {
        /// The host's tree (the lower layer, never written).
        from: String,
        /// Where it appears in the view.
        path: String,
        /// `N`, which names its directories under [`ViewPlan::copy_dir`].
        index: usize,
        /// Its flags.
        flags: Flags,
    },
    /// An empty tmpfs at `/dev` (before any device step).
    DevTmpfs,
    /// A fresh procfs of the sandbox's PID namespace at `/proc`, with everything outside `keep`
    /// masked (process directories are the sandbox's own, and stay).
    Proc {
        /// What the policy names in /proc.
        keep: Keep,
    },
}

/// One entry of a [`Step::Filtered`] tree's own layer, at a path relative to the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayerEntry {
    /// A whiteout, for a denied name the host does not have now: the name does not exist in
    /// the view, as on the host, and what the host makes there later does not show.
    Hidden(String),
    /// A denied name the host has: an empty file, or directory (`true`, opaque), of mode 0, as
    /// a [`Step::Mask`] would cover it, so it is there and cannot be read, listed or changed.
    Masked(String, bool),
    /// A directory none of whose host entries show (an opaque directory), holding only the
    /// placeholders and links that follow it.
    Opaque(String),
    /// An empty file, or directory (`true`), onto which a later [`Step::Bind`] brings the
    /// host's entry of the same path.
    Placeholder(String, bool),
    /// A symlink, with the target the host's has.
    Link(String, String),
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let esc = |p: &str| crate::escape::escape(p).into_owned();
        match self {
            Step::Bind { path, flags, .. } => write!(
                f,
                "bind {} {},{}",
                esc(path),
                if flags.write { "rw" } else { "ro" },
                if flags.exec { "exec" } else { "noexec" }
            ),
            Step::Symlink { path, target } => write!(f, "link {} -> {}", esc(path), esc(target)),
            Step::Dir { path } => write!(f, "directory {} (empty)", esc(path)),
            Step::Device { path, write } => {
                write!(
                    f,
                    "device {} {}",
                    esc(path),
                    if *write { "rw" } else { "ro" }
                )
            }
            Step::Mask { path, .. } => write!(f, "hide {}", esc(path)),
            Step::Filtered { path, flags, layer } => {
                let hidden: Vec<String> = layer
                    .iter()
                    .filter_map(|e| match e {
                        LayerEntry::Hidden(rel) | LayerEntry::Masked(rel, _) => Some(esc(rel)),
                        LayerEntry::Opaque(rel) => {
                            Some(format!("{}/ (all but what it lists)", esc(rel)))
                        }
                        _ => None,
                    })
                    .collect();
                write!(
                    f,
                    "overlay {} ro,{} hiding {}",
                    esc(path),
                    if flags.exec { "exec" } else { "noexec" },
                    hidden.join(", ")
                )
            }
            Step::Map {
                from, path, flags, ..
            } => write!(
                f,
                "map {} at {} {},{}",
                esc(from),
                esc(path),
                if flags.write { "rw" } else { "ro" },
                if flags.exec { "exec" } else { "noexec" }
            ),
            Step::Tmpfs { path, flags } => write!(
                f,
                "tmpfs {} {},{}",
                esc(path),
                if flags.write { "rw" } else { "ro" },
                if flags.exec { "exec" } else { "noexec" }
            ),
            Step::Copy {
                from, path, flags, ..
            } => write!(
                f,
                "copy {} at {} (private: writes stay in the run's overlay) {}",
                esc(from),
                esc(path),
                if flags.exec { "exec" } else { "noexec" }
            ),
            Step::DevTmpfs => f.write_str("tmpfs /dev"),
            Step::Proc { keep } if keep.all => f.write_str("proc /proc"),
            Step::Proc { keep } => write!(
                f,
                "proc /proc (only the processes and {})",
                keep.children.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        }
    }
}

/// The part of a tree the policy names: everything, or some children.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Keep {
    /// The whole tree.
    pub all: bool,
    /// Named children, each with what is named beneath it.
    pub children: BTreeMap<String, Keep>,
}

impl Keep {
    fn add(&mut self, rest: &[&str]) {
        match rest.split_first() {
            None => self.all = true,
            Some((first, rest)) => self
                .children
                .entry((*first).to_string())
                .or_default()
                .add(rest),
        }
    }
}

/// The whole plan, and what it cannot say exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewPlan {
    /// The steps, in order: binds (outer before inner), symlinks, masks, `/dev`, `/proc`.
    pub steps: Vec<Step>,
    /// The policy lets `/` be listed and every tree the view binds be read: in the view `/`
    /// holds only what the steps bring in, so Landlock's one rule on it (which covers every
    /// directory beneath) says no more than the policy.
    pub lists_root: bool,
    /// Rules the view shows more of than the policy allows (the agent and Landlock still decide
    /// them) or cannot show, each with a sentence for `warden check --explain`.
    pub notes: Vec<(RuleId, String)>,
    /// Maps that cannot be placed as the host is now, each a sentence (`warden check` and
    /// `warden run` refuse the policy).
    pub errors: Vec<String>,
    /// Where the private copies keep their upper and work directories (`DIR/N/upper`,
    /// `DIR/N/work` for [`Step::Copy`] `N`): a directory of the run's outside the view, set by
    /// the caller before the view is built (the planner has no run).
    pub copy_dir: Option<String>,
    /// The run's own disk (`limit-disk`): one tmpfs holding the scratch directory, every
    /// [`Step::Tmpfs`] and the private copies' changes, each mounted at its place from a
    /// directory of its own, so that together they hold at most its size. `None`: each tmpfs
    /// is its own (unbounded but by memory), and copies keep their changes in `copy_dir`.
    pub disk: Option<Disk>,
}

/// The run's own disk ([`ViewPlan::disk`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Disk {
    /// Bytes it holds at most (and one inode per 4 KiB of it).
    pub size: u64,
    /// The scratch directory, when the policy has it as a [`Step::Tmpfs`] there: the
    /// program's own directory (mode 0700, owned by `owner`), not a shared 1777 one.
    /// (Without a disk, the tmpfs places are made the same way, each a tmpfs of its own.)
    pub scratch: Option<String>,
    /// The program's uid and gid as the view's builder sees them.
    pub owner: (u32, u32),
    /// Directories made in the tmpfs places before the program starts (absolute, parents
    /// first, owned by `owner`): `D` of every `D/*` rule beneath one
    /// (`crate::kernel::made_in_tmpfs`), which Landlock's rule needs to exist.
    pub dirs: Vec<String>,
    /// Private copies keep their changes on it too (otherwise in `copy_dir`, on the host's
    /// disk, as `--keep` and `warden diff` need).
    pub copies: bool,
}

impl ViewPlan {
    /// The trees the view brings in as overlays ([`Step::Filtered`]).
    pub fn filtered_trees(&self) -> impl Iterator<Item = &str> {
        self.steps.iter().filter_map(|s| match s {
            Step::Filtered { path, .. } => Some(path.as_str()),
            _ => None,
        })
    }

    /// Whether `path` (absolute, lexically clean) exists in the view as planned: inside a bound
    /// tree, or a directory the view creates on the way to one of its steps.
    pub fn holds(&self, path: &str) -> bool {
        self.steps.iter().any(|step| {
            let (at, tree) = match step {
                Step::Bind { path, dir, .. } => (path.as_str(), *dir),
                Step::Symlink { path, .. } | Step::Device { path, .. } => (path.as_str(), false),
                Step::Dir { path } => (path.as_str(), false),
                Step::Mask { .. } => return false,
                Step::Filtered { path, .. } => (path.as_str(), true),
                Step::Map { path, dir, .. } => (path.as_str(), *dir),
                Step::Tmpfs { path, .. } | Step::Copy { path, .. } => (path.as_str(), true),
                Step::DevTmpfs => ("/dev", true),
                Step::Proc { .. } => ("/proc", true),
            };
            at == path || path == "/" || is_beneath(at, path) || (tree && is_beneath(path, at))
        })
    }
}

impl ViewPlan {
    /// What the view's mounts alone would let run beyond what `policy` (`$SCRATCH` expanded)
    /// does, one sentence each: empty when the kernel's `noexec` holds every `execve` and
    /// executable mapping to the policy by itself (the mode without Landlock, where nothing
    /// else binds the path the kernel re-reads after the agent's check).
    ///
    /// A mount's exec flag covers its whole tree, so an executable tree must be one the policy
    /// lets run whole: a `D/*` (or wider) exec rule, and no `path-deny` beneath it unless the
    /// mount is read-only (then the view's masks hide what exists, and nothing new can appear).
    /// An executable file bind must be a file the policy lets run. A name-prefix exec rule
    /// (`D/na*`) or one for a file the run will make (its directory becomes the exec mount)
    /// is wider in the view than in the policy, and shows here.
    pub fn exec_beyond(&self, policy: &Policy) -> Vec<String> {
        let mut out = Vec::new();
        for step in &self.steps {
            let (path, dir, flags) = match step {
                Step::Bind { path, dir, flags }
                | Step::Map {
                    path, dir, flags, ..
                } => (path, *dir, *flags),
                Step::Filtered { path, flags, .. } => (path, true, *flags),
                Step::Tmpfs { path, flags } | Step::Copy { path, flags, .. } => {
                    // A tmpfs and a private copy are writable where the rules give write.
                    (path, true, *flags)
                }
                _ => continue,
            };
            if !flags.exec {
                continue;
            }
            let shown = crate::escape::escape(path);
            if !dir {
                if !policy.check(path, Access::Exec).is_allowed() {
                    out.push(format!(
                        "{shown} is an executable mount of the view, and the policy does not let \
                         it run"
                    ));
                }
                continue;
            }
            let inside = format!("{}/", path.trim_end_matches('/'));
            let whole = policy.path_rules().iter().any(|r| {
                r.access == Some(Access::Exec)
                    && r.pattern.is_prefix()
                    && inside.starts_with(r.pattern.literal())
            });
            if !whole {
                out.push(format!(
                    "{shown} is an executable mount of the view (a mount's exec flag covers its \
                     whole tree), and the policy lets only part of it run (an exec rule for a \
                     file not there yet, or for names starting with a prefix); give the whole \
                     tree: path-allow exec {}*",
                    crate::escape::escape(&inside)
                ));
                continue;
            }
            let writable = flags.write || matches!(step, Step::Tmpfs { .. } | Step::Copy { .. });
            let denied = policy.path_rules().iter().find(|r| {
                r.access.is_none() && at_or_beneath(r.pattern.literal(), path.trim_end_matches('/'))
            });
            if let (true, Some(d)) = (writable, denied) {
                out.push(format!(
                    "{shown} is a writable executable mount of the view, and `path-deny {}` \
                     inside it is more than a mount can hold (a name made there later would \
                     run)",
                    d.pattern
                ));
            }
        }
        out
    }
}

/// Where a rule anchors in the view: the path whose bind makes the rule's paths appear.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Anchor {
    path: String,
    /// The rule covers the whole tree beneath `path`.
    tree: bool,
    access: Access,
}

/// The host as the sandbox will see it: a path at or beneath a map's sandbox path is what the
/// map shows there (the mapped host tree, or nothing in a fresh tmpfs). Every path rule is
/// written in the sandbox's paths, so the planner asks this, never the bare host.
struct Sandboxed<'a> {
    host: &'a dyn Host,
    maps: Vec<&'a PathMap>,
}

impl Sandboxed<'_> {
    /// The innermost map that shows `path`, and the host path it shows there (`None`: a tmpfs).
    fn mapped(&self, path: &str) -> Option<(&PathMap, Option<String>)> {
        let m = self
            .maps
            .iter()
            .filter(|m| at_or_beneath(path, &m.sandbox))
            .max_by_key(|m| m.sandbox.len())?;
        let rest = &path[m.sandbox.len()..];
        Some(match &m.source {
            MapSource::Tmpfs => (m, None),
            MapSource::Host(h) => (m, Some(format!("{h}{rest}"))),
        })
    }
}

impl Host for Sandboxed<'_> {
    fn mounted_beneath(&self, dir: &str) -> bool {
        // A map at or beneath `dir` is a mount of the view's there; one around it shows another
        // tree of the host's, whose mounts the bare host would have to be asked about.
        self.maps
            .iter()
            .any(|m| at_or_beneath(&m.sandbox, dir) || at_or_beneath(dir, &m.sandbox))
            || self.host.mounted_beneath(dir)
    }

    fn node(&self, path: &str) -> Node {
        match self.mapped(path) {
            None => self.host.node(path),
            Some((m, None)) if m.sandbox == path => Node::Dir,
            Some((_, None)) => Node::Missing,
            // The map's own root is what the kernel's clone follows to.
            Some((m, Some(h))) if m.sandbox == path => resolve(self.host, &h).1,
            Some((_, Some(h))) => self.host.node(&h),
        }
    }

    fn list(&self, dir: &str) -> Vec<String> {
        match self.mapped(dir) {
            None => self.host.list(dir),
            Some((_, None)) => Vec::new(),
            Some((_, Some(h))) => self.host.list(&h),
        }
    }
}

/// How the view hides a `path-deny` inside a read-only tree it brings in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hiding {
    /// Where it can, as an overlay of the tree ([`Step::Filtered`]): the hidden names do not
    /// exist, and Landlock needs one rule on the overlay rather than one on each host entry of
    /// the tree. Only for a sandbox that holds no directory of the host's tree, through which
    /// it could name the host's objects of the tree, which then have no rule.
    Overlay,
    /// Always with masks on the host's tree, which Landlock's rules name entry by entry.
    Masks,
}

/// Plans the view for `policy` (with `$SCRATCH` expanded). Every path the policy names is a
/// path of the sandbox's; its `path-map`s say where those differ from the host's.
pub fn view_plan(policy: &Policy, host: &dyn Host) -> ViewPlan {
    view_plan_with(policy, host, Hiding::Overlay)
}

/// [`view_plan`], hiding denied paths as `hiding` says.
pub fn view_plan_with(policy: &Policy, host: &dyn Host, hiding: Hiding) -> ViewPlan {
    let bare = host;
    let sandboxed = Sandboxed {
        host,
        maps: policy.maps().iter().collect(),
    };
    let host: &dyn Host = &sandboxed;
    let mut plan = ViewPlan {
        lists_root: policy.check("/", Access::Read).is_allowed(),
        ..ViewPlan::default()
    };
    let mut anchors: Vec<Anchor> = Vec::new();
    let mut proc_keep = Keep::default();
    let mut proc_named = false;
    let mut devices: BTreeMap<String, bool> = BTreeMap::new();
    let mut dev_links: Vec<(String, String)> = Vec::new();
    let mut dev_covered = false;
    let mut listed: Vec<String> = Vec::new();

    for (i, rule) in policy.path_rules().iter().enumerate() {
        let Some(access) = rule.access else { continue };
        let id = RuleId(i);
        let lit = rule.pattern.literal();
        if rule.pattern.is_prefix() && "/proc/".starts_with(lit) {
            // A tree around /proc (`/*`): all of the sandbox's own procfs, never the host's.
            proc_named = true;
            proc_keep.all = true;
        }
        if rule.pattern.is_prefix() && "/dev/".starts_with(lit) {
            // A tree around /dev: its devices still only where named exactly.
            dev_covered = true;
        }
        if lit == "/proc" || lit.starts_with("/proc/") {
            proc_named = true;
            proc_rule(&mut proc_keep, lit, rule.pattern.is_prefix(), &mut plan, id);
            continue;
        }
        let in_dev_map = policy
            .maps()
            .iter()
            .any(|m| in_dev(&m.sandbox) && at_or_beneath(lit.trim_end_matches('/'), &m.sandbox));
        if (lit == "/dev/" || lit.starts_with("/dev/")) && !in_dev_map {
            if rule.pattern.is_prefix() {
                plan.notes.push((
                    id,
                    format!(
                        "`{}`: the view's /dev holds only devices and links the policy names \
                         exactly, so nothing appears for this pattern",
                        rule.pattern
                    ),
                ));
                continue;
            }
            match host.node(lit) {
                Node::Device => {
                    let w = devices.entry(lit.to_string()).or_default();
                    *w |= access == Access::Write;
                }
                Node::Symlink(target) => dev_links.push((lit.to_string(), target)),
                _ => plan.notes.push((
                    id,
                    format!("{lit} is not a character device or a link on this host"),
                )),
            }
            continue;
        }
        match anchor_of(&rule.pattern) {
            Some((path, tree)) => {
                if !tree && matches!(host.node(&path), Node::Dir) && !rule.pattern.is_prefix() {
                    // `read DIR` alone lists DIR: the view shows the names it holds, which are
                    // the policy's own. Nothing to bind; the directory itself is there. (A map's
                    // own place shows what the map holds: nothing to say.)
                    if policy.maps().iter().any(|m| m.sandbox == path) {
                        continue;
                    }
                    plan.notes.push((
                        id,
                        format!(
                            "{path} is listed as the view has it: only the names other rules \
                             bring in appear"
                        ),
                    ));
                    listed.push(path);
                    continue;
                }
                if rule.pattern.is_prefix() && !lit.ends_with('/') {
                    plan.notes.push((
                        id,
                        format!(
                            "`{}` matches names by how they start: the whole of {path} appears \
                             in the view, and the agent and Landlock refuse the other names in it",
                            rule.pattern
                        ),
                    ));
                }
                anchors.push(Anchor { path, tree, access });
            }
            None => continue,
        }
    }

    unix_sockets(policy, &mut anchors);
    // What lies at or beneath a map's sandbox path comes in through the map.
    let on_host: Vec<Anchor> = anchors
        .iter()
        .filter(|a| {
            !policy
                .maps()
                .iter()
                .any(|m| at_or_beneath(&a.path, &m.sandbox))
        })
        .cloned()
        .collect();
    binds(host, &on_host, &mut plan);
    root_links(host, &mut plan);
    maps(policy, bare, &anchors, &mut plan, |m| !in_dev(&m.sandbox));
    empty_dirs(policy, host, listed, &mut plan);
    if hiding == Hiding::Overlay {
        filtered::filter_trees(policy, host, &anchors, &mut plan);
    }
    masks(policy, host, &plan.steps.clone(), &mut plan);
    let dev_maps = policy.maps().iter().any(|m| in_dev(&m.sandbox));
    if dev_covered || dev_maps || !devices.is_empty() || !dev_links.is_empty() {
        plan.steps.push(Step::DevTmpfs);
        for (path, write) in devices {
            plan.steps.push(Step::Device { path, write });
        }
        for (path, target) in dev_links {
            plan.steps.push(Step::Symlink { path, target });
        }
        // A private tmpfs in /dev (`/dev/shm`) is mounted on the view's /dev, so after it.
        maps(policy, bare, &anchors, &mut plan, |m| in_dev(&m.sandbox));
    }
    if proc_named {
        plan.steps.push(Step::Proc { keep: proc_keep });
    }
    // One Landlock rule on the view's root lets every directory in the view be listed: only
    // when the policy lets each tree the view holds be read.
    plan.lists_root = plan.lists_root
        && plan.steps.iter().all(|s| match s {
            Step::Bind {
                path, dir: true, ..
            }
            | Step::Map {
                path, dir: true, ..
            }
            | Step::Tmpfs { path, .. }
            | Step::Filtered { path, .. }
            | Step::Copy { path, .. } => {
                let inside = format!("{}/{}", path.trim_end_matches('/'), "\u{1}");
                policy.check(&inside, Access::Read).is_allowed()
            }
            _ => true,
        });
    plan
}

/// Unix-domain sockets the policy lets the program reach: their directories appear (a server
/// that restarts makes a new socket, which a bind of the old one would not show), writable
/// where the program may bind a socket of its own.
fn unix_sockets(policy: &Policy, anchors: &mut Vec<Anchor>) {
    for rule in policy.net_rules() {
        let crate::NetTarget::Unix(pattern) = &rule.target else {
            continue;
        };
        let lit = pattern.literal();
        let dir = match lit.rsplit_once('/') {
            Some(("", _)) => "/".to_string(),
            Some((d, _)) => d.to_string(),
            None => continue,
        };
        let access = match rule.direction {
            crate::Direction::Incoming => Access::Write,
            _ => Access::Read,
        };
        anchors.push(Anchor {
            path: dir,
            tree: true,
            access,
        });
    }
}

/// The path a pattern's paths live under, and whether the whole tree is covered.
fn anchor_of(pattern: &crate::PathPattern) -> Option<(String, bool)> {
    let lit = pattern.literal();
    if !pattern.is_prefix() {
        return Some((lit.to_string(), false));
    }
    // `D/*` covers D's tree; `D/na*` needs D in the view.
    let dir = match lit.rsplit_once('/') {
        Some(("", _)) => "/",
        Some((d, _)) => d,
        None => return None,
    };
    Some((dir.to_string(), true))
}

fn proc_rule(keep: &mut Keep, lit: &str, prefix: bool, plan: &mut ViewPlan, id: RuleId) {
    let rest = lit.trim_start_matches("/proc").trim_start_matches('/');
    let mut parts: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    if prefix && !lit.ends_with('/') {
        // `/proc/sys/ker*`: keep the directory it names names in.
        parts.pop();
        plan.notes.push((
            id,
            format!("`{lit}*` matches names by how they start: all of its directory appears"),
        ));
    }
    match parts.first() {
        // The process's own entries are its own processes' in the view's procfs.
        Some(&"self") | Some(&"thread-self") => {
            keep.children.entry(parts[0].to_string()).or_default().all = true;
        }
        _ => keep.add(&parts),
    }
}

/// The rights a bind at `path` needs: every access of a rule on `path` itself or on a tree
/// around it, and of rules on paths beneath it that do not exist yet (`missing`), which can only
/// appear through this bind.
///
/// Returns the rights of everything the bind shows, and (second) those it needs only for the
/// missing paths beneath it. A bind placed inside this one inherits the first alone: an exec
/// rule for a program the run will make at `DIR/prog` makes `DIR` an exec mount, but must not
/// make a writable `DIR/sub` one, where `ld.so` could then map any file the program writes.
fn flags_at(anchors: &[Anchor], path: &str, tree: bool, missing: &[String]) -> (Flags, Flags) {
    let (mut all, mut later) = (Flags::default(), Flags::default());
    for a in anchors {
        let here = a.path == path;
        let covers = a.tree && is_beneath(path, &a.path);
        let made_later = tree && is_beneath(&a.path, path) && missing.contains(&a.path);
        let flags = match (here || covers, made_later) {
            (true, _) => &mut all,
            (false, true) => &mut later,
            (false, false) => continue,
        };
        match a.access {
            // Removing an entry changes its directory: a read-only mount refuses it.
            Access::Write | Access::Unlink => flags.write = true,
            Access::Exec => flags.exec = true,
            _ => {}
        }
    }
    (all, later)
}

/// A bind planned: where, its mount's flags, the part of them that holds for everything it
/// shows (what a bind inside it inherits), and whether it is a tree.
struct Placed {
    at: String,
    flags: Flags,
    all: Flags,
    tree: bool,
}

/// `path` is strictly beneath `dir`.
fn is_beneath(path: &str, dir: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/'
}

/// One anchored path as the host has it.
struct Resolved {
    /// The path the rules name.
    logical: String,
    /// Where symlinks along it lead.
    at: String,
    dir: bool,
    tree: bool,
    links: Vec<(String, String)>,
}

/// Where `path` leads on the host: every symlink on the way followed, the last component's
/// and every directory's (`/lib/x` with `/lib -> usr/lib` is `/usr/lib/x`), as the kernel
/// would. A bind must land at that path: landing it at a path through a symlink would make the
/// link's name a directory of the view, and the link (planned too) would lose its place.
/// Returns the path, what is there, and each symlink followed with its target.
fn resolve(host: &dyn Host, path: &str) -> (String, Node, Vec<(String, String)>) {
    let mut at = path.to_string();
    let mut links = Vec::new();
    'follow: for _ in 0..16 {
        let parts: Vec<&str> = at.split('/').filter(|c| !c.is_empty()).collect();
        let mut prefix = String::new();
        for (i, name) in parts.iter().enumerate() {
            prefix.push('/');
            prefix.push_str(name);
            if let Node::Symlink(target) = host.node(&prefix) {
                let next = resolve_link(&prefix, &target);
                let rest = parts[i + 1..].join("/");
                links.push((prefix, target));
                at = if rest.is_empty() {
                    next
                } else {
                    format!("{}/{rest}", next.trim_end_matches('/'))
                };
                continue 'follow;
            }
        }
        let node = host.node(&at);
        return (at, node, links);
    }
    (at, Node::Missing, links)
}

fn binds(host: &dyn Host, anchors: &[Anchor], plan: &mut ViewPlan) {
    let mut paths: Vec<(String, bool)> = Vec::new();
    for a in anchors {
        match paths.iter_mut().find(|(p, _)| *p == a.path) {
            Some((_, tree)) => *tree |= a.tree,
            None => paths.push((a.path.clone(), a.tree)),
        }
    }
    let mut missing = Vec::new();
    let mut found: Vec<Resolved> = Vec::new();
    for (logical, tree) in paths {
        let (at, node, links) = resolve(host, &logical);
        let dir = match node {
            Node::Dir => true,
            Node::File => false,
            // Missing now: it can only be created in its directory, which comes in (the
            // agent and Landlock still refuse the other names in it). A device outside /dev or
            // a loop: nothing to bind.
            Node::Missing => {
                let parent = logical.rsplit_once('/').map_or("", |(d, _)| d).to_string();
                missing.push(logical);
                if !parent.is_empty() {
                    let (at, node, links) = resolve(host, &parent);
                    if node == Node::Dir && at != "/" {
                        found.push(Resolved {
                            logical: parent,
                            at,
                            dir: true,
                            tree: true,
                            links,
                        });
                    }
                }
                continue;
            }
            _ => continue,
        };
        found.push(Resolved {
            logical,
            at,
            dir,
            tree,
            links,
        });
    }
    // Outer before inner, by where the binds land.
    found.sort_by(|a, b| {
        (a.at.matches('/').count(), &a.at).cmp(&(b.at.matches('/').count(), &b.at))
    });
    let mut placed: Vec<Placed> = Vec::new();
    let mut links_done: Vec<String> = Vec::new();
    for r in found {
        for (link, target) in r.links {
            let inside = placed.iter().any(|p| p.tree && is_beneath(&link, &p.at));
            if !inside && !links_done.contains(&link) {
                links_done.push(link.clone());
                plan.steps.push(Step::Symlink { path: link, target });
            }
        }
        // What the rules say of the path by either name, and never less than the tree it
        // lands in: the bind replaces that tree's view of it.
        let (all, later) = flags_at(anchors, &r.logical, r.tree, &missing);
        let (all_at, later_at) = flags_at(anchors, &r.at, r.tree, &missing);
        let mut all = all.union(all_at);
        for p in &placed {
            if p.tree && is_beneath(&r.at, &p.at) {
                all = all.union(p.all);
            }
        }
        let flags = all.union(later).union(later_at);
        // Visible with the same flags through an outer tree bound earlier.
        let covered = placed
            .iter()
            .rev()
            .find(|p| p.at == r.at || (p.tree && is_beneath(&r.at, &p.at)))
            .is_some_and(|p| p.flags == flags);
        if covered {
            continue;
        }
        plan.steps.push(Step::Bind {
            path: r.at.clone(),
            dir: r.dir,
            flags,
        });
        placed.push(Placed {
            at: r.at,
            flags,
            all,
            tree: r.dir && r.tree,
        });
    }
}

/// The symlinks in the host's `/` that lead into the view (`/lib -> usr/lib` on a merged-/usr
/// system): the kernel follows them where no rule is asked (an ELF's interpreter path,
/// `/lib64/ld-linux-x86-64.so.2 -> /lib/...`), and they show nothing the view does not hold.
fn root_links(host: &dyn Host, plan: &mut ViewPlan) {
    let placed = |plan: &ViewPlan, p: &str| {
        plan.steps
            .iter()
            .any(|s| matches!(s, Step::Symlink { path, .. } | Step::Bind { path, .. } if path == p))
    };
    for name in host.list("/") {
        let path = format!("/{name}");
        let Node::Symlink(target) = host.node(&path) else {
            continue;
        };
        let (at, node, _) = resolve(host, &path);
        if matches!(node, Node::Missing) || placed(plan, &path) || !plan.holds(&at) || at == "/" {
            continue;
        }
        plan.steps.push(Step::Symlink { path, target });
    }
}

/// The absolute path a symlink at `link` with `target` names (lexically, one hop).
fn resolve_link(link: &str, target: &str) -> String {
    let base = if target.starts_with('/') {
        String::new()
    } else {
        link.rsplit_once('/').map_or("", |(d, _)| d).to_string()
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in base.split('/').chain(target.split('/')) {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

/// The maps, outer before inner, after the binds they may land in: each with the rights of the
/// rules at, around or beneath its sandbox path (beneath: those paths appear only through it),
/// `write` never beyond what its mode allows. A map lands on a mount point: in the view's own
/// tmpfs (or a tmpfs map) warden makes it; in a tree of the host's (a bind, an `rw`/`ro` map
/// or a copy) it must exist already, since warden makes nothing in the host's tree.
/// A [`Step::Dir`] for each directory in `listed` (named by a `read DIR` rule alone) that the
/// view would not hold otherwise: only where no symlink of the host's leads (the directory is
/// made at exactly that path in the view's own root), nothing bound or mapped holds it (a
/// tree of the host's is never written), and not in /dev, /proc or a map (their own mounts).
fn empty_dirs(policy: &Policy, host: &dyn Host, listed: Vec<String>, plan: &mut ViewPlan) {
    let own = |p: &str| {
        at_or_beneath(p, "/dev")
            || at_or_beneath(p, "/proc")
            || policy.maps().iter().any(|m| at_or_beneath(p, &m.sandbox))
    };
    for path in listed.into_iter().filter(|p| !own(p)) {
        let (at, node, links) = resolve(host, &path);
        if node == Node::Dir && links.is_empty() && !plan.holds(&at) {
            plan.steps.push(Step::Dir { path: at });
        }
    }
}

/// `path` lies strictly beneath `/dev`, the view's own tmpfs (where only tmpfs maps may be).
fn in_dev(path: &str) -> bool {
    is_beneath(path, "/dev")
}

/// The steps of the maps `which` selects, outer before inner.
fn maps(
    policy: &Policy,
    bare: &dyn Host,
    anchors: &[Anchor],
    plan: &mut ViewPlan,
    which: impl Fn(&PathMap) -> bool,
) {
    let mut order: Vec<&PathMap> = policy.maps().iter().filter(|m| which(m)).collect();
    order.sort_by_key(|m| (m.sandbox.matches('/').count(), m.sandbox.clone()));
    let mut copies = 0;
    for m in order {
        let mut flags = Flags::default();
        // A path beneath a map inside this one runs through that map, not this one: the
        // scratch directory's exec rule must not make a tmpfs `/tmp` around it executable.
        // (Its write rules still make this one writable, as they always did.)
        let inner = |p: &str| {
            policy
                .maps()
                .iter()
                .any(|o| is_beneath(&o.sandbox, &m.sandbox) && at_or_beneath(p, &o.sandbox))
        };
        for a in anchors {
            if at_or_beneath(&a.path, &m.sandbox) || (a.tree && is_beneath(&m.sandbox, &a.path)) {
                match a.access {
                    Access::Write | Access::Unlink => flags.write = true,
                    Access::Exec if !inner(&a.path) => flags.exec = true,
                    _ => {}
                }
            }
        }
        if m.mode == MapMode::ReadOnly {
            flags.write = false;
        }
        // The tree it lands in: the innermost step that holds its parent.
        let parent = m.sandbox.rsplit_once('/').map_or("/", |(d, _)| d);
        let parent = if parent.is_empty() { "/" } else { parent };
        let landing = plan.steps.iter().rev().find_map(|s| match s {
            Step::Bind {
                path, dir: true, ..
            }
            | Step::Map {
                path, dir: true, ..
            }
            | Step::Copy { path, .. }
                if at_or_beneath(parent, path) =>
            {
                Some(Some(path.clone()))
            }
            Step::Tmpfs { path, .. } if at_or_beneath(parent, path) => Some(None),
            _ => None,
        });
        let dir = match &m.source {
            MapSource::Tmpfs => true,
            MapSource::Host(h) => !matches!(resolve(bare, h).1, Node::File),
        };
        if let Some(Some(tree)) = landing {
            // What the view has there without this map: the host's, or an outer map's.
            let without = Sandboxed {
                host: bare,
                maps: policy
                    .maps()
                    .iter()
                    .filter(|o| o.sandbox != m.sandbox)
                    .collect(),
            };
            let there = without.node(&m.sandbox);
            let fits = match there {
                Node::Dir => dir,
                Node::File => !dir,
                _ => false,
            };
            if !fits {
                plan.errors.push(format!(
                    "{m} (at {}): {} is not a {} in {} (a tree of the host's in the view), and \
                     warden makes nothing in the host's tree; create it there, or map to a \
                     place outside {}",
                    m.span,
                    crate::escape::escape(&m.sandbox),
                    if dir { "directory" } else { "file" },
                    crate::escape::escape(&tree),
                    crate::escape::escape(&tree),
                ));
                continue;
            }
        }
        plan.steps.push(match &m.source {
            MapSource::Tmpfs => Step::Tmpfs {
                path: m.sandbox.clone(),
                flags,
            },
            MapSource::Host(h) if m.mode == MapMode::Copy => {
                copies += 1;
                Step::Copy {
                    from: h.clone(),
                    path: m.sandbox.clone(),
                    index: copies,
                    flags,
                }
            }
            MapSource::Host(h) => Step::Map {
                from: h.clone(),
                path: m.sandbox.clone(),
                dir,
                flags,
            },
        });
    }
}

/// Masks for every `path-deny` that lies inside a bound or mapped tree, as the host has it now.
fn masks(policy: &Policy, host: &dyn Host, steps: &[Step], plan: &mut ViewPlan) {
    let trees: Vec<&str> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Bind {
                path, dir: true, ..
            }
            | Step::Map {
                path, dir: true, ..
            }
            | Step::Tmpfs { path, .. }
            | Step::Copy { path, .. } => Some(path.as_str()),
            _ => None,
        })
        .collect();
    let filtered: Vec<&str> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Filtered { path, .. } => Some(path.as_str()),
            _ => None,
        })
        .collect();
    // A filtered tree's denials are its layer's.
    let bound = |p: &str| {
        trees.iter().any(|t| is_beneath(p, t)) && !filtered.iter().any(|t| at_or_beneath(p, t))
    };
    let mut hidden: Vec<String> = Vec::new();
    for (i, rule) in policy.path_rules().iter().enumerate() {
        if rule.access.is_some() {
            continue;
        }
        let lit = rule.pattern.literal();
        if lit.starts_with("/proc/") || lit.starts_with("/dev/") {
            // /dev holds only what is named; /proc is the sandbox's own, and a deny inside
            // /proc/self names an entry of every process, which no mount can cover: the agent
            // decides it.
            if lit.starts_with("/proc/") {
                plan.notes.push((
                    RuleId(i),
                    format!(
                        "`{}` lies in the sandbox's own /proc, where each process has its own \
                         entries: no mount can hide it, so the agent decides it",
                        rule.pattern
                    ),
                ));
            }
            continue;
        }
        let candidates: Vec<String> = if !rule.pattern.is_prefix() {
            vec![lit.to_string()]
        } else if let Some(dir) = lit.strip_suffix('/') {
            // `D/*`: hiding D's entries is hiding D's contents; D itself stays when allowed.
            host.list(dir)
                .into_iter()
                .map(|n| format!("{dir}/{n}"))
                .collect()
        } else {
            let (dir, start) = lit.rsplit_once('/').unwrap_or(("", lit));
            let dir = if dir.is_empty() { "/" } else { dir };
            let names = host.list(dir);
            if !names.is_empty() {
                plan.notes.push((
                    RuleId(i),
                    format!(
                        "`{}`: the names that exist at the start are hidden; one created later \
                         is refused by Landlock and the agent, but appears in the view",
                        rule.pattern
                    ),
                ));
            }
            names
                .into_iter()
                .filter(|n| n.starts_with(start))
                .map(|n| format!("{}/{n}", dir.trim_end_matches('/')))
                .collect()
        };
        for path in candidates {
            if !bound(&path) || hidden.iter().any(|h| *h == path || is_beneath(&path, h)) {
                continue;
            }
            let dir = match host.node(&path) {
                Node::Dir => true,
                Node::File | Node::Device => false,
                // A link is followed by whoever opens it: its target's own rules apply.
                Node::Symlink(_) | Node::Missing => continue,
            };
            hidden.push(path.clone());
            plan.steps.push(Step::Mask { path, dir });
        }
    }
}

mod filtered;

#[cfg(test)]
mod tests;
