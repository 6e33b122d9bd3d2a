//! The Landlock backstop, derived from the policy (docs/design.md, invariant 5: two locks on
//! every door).
//!
//! The agent is the first lock: the client never opens a path itself. Landlock is the second:
//! it bounds what the client could reach if a call were ever let through, and it is the *only*
//! lock on `execve`, which the agent checks and then lets the kernel run (the kernel re-reads
//! the path, so only a kernel-enforced rule can make that safe).
//!
//! Landlock cannot say "this prefix except that file", nor "names starting with `py`", so each
//! policy rule is compiled to rules on the objects that exist *now*:
//! - `D/*` → a rule beneath `D`;
//! - an exact file → a rule on that file; an exact directory → only the right to list it (a
//!   Landlock directory rule covers the whole subtree, so listing is all it can safely get);
//! - `/proc/self/...` → nothing: the agent translates those paths per caller;
//! - `D/na*` → a rule on each existing entry of `D` whose name starts with `na`;
//! - a root with a `path-deny` inside → the root's entries one by one, skipping the denied ones
//!   and descending into the ones that contain a denied path.
//!
//! Objects created later under a `D/*` rule are covered; objects created later that only a
//! name-prefix rule would match are not (stricter than the policy, never looser).

use landlock::{
    Access as _, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};
use std::ffi::CStr;
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use warden_policy::kernel::Found;
use warden_policy::{Access, PathPattern, Policy};

/// The ABI warden is written against (Linux 6.15+); older kernels get what they support.
const TARGET_ABI: ABI = ABI::V7;
/// At most this many entries are enumerated for one rule before giving up on it (stricter).
const MAX_EXPANSION: usize = 4096;

/// A failure to prepare the Landlock ruleset.
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    /// The kernel refused a step.
    #[error("failed to prepare the Landlock ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    /// A path of the sandbox's view could not be opened for its rule.
    #[error("failed to add the view's Landlock rules: {0}")]
    ViewPath(#[from] landlock::PathFdError),
    /// The fast path needs every right enforced, and this kernel enforces fewer.
    #[error(
        "the kernel did not enforce every Landlock right, and opens were to go straight to it \
         (--fast-path); run with --fast-path=never"
    )]
    NotFullyEnforced,
    /// A second descriptor of the ruleset could not be had.
    #[error("failed to prepare the Landlock ruleset: {0}")]
    Descriptor(#[from] std::io::Error),
    /// Landlock was found when the run was planned and is not enforced now: the run was
    /// planned with Landlock's execute right behind every `execve`, and has nothing else.
    #[error(
        "this kernel did not enforce the sandbox's Landlock ruleset, which the run was planned \
         with: the agent checks an execve and then lets the kernel continue it, and only \
         Landlock's execute right keeps a path swapped in after the check from running what the \
         policy forbids"
    )]
    NoExecBackstop,
}

/// A ruleset built in the parent, to be applied by the sandbox's first process.
pub struct Prepared {
    ruleset: RulesetCreated,
    /// The file-system rights the ruleset handles; every rule is cut to them.
    handled: BitFlags<AccessFs>,
    /// How many rules were added (for `-v`).
    pub rules: usize,
    /// What the ruleset lets the sandbox execute (the agent explains an execve it would refuse).
    pub exec: ExecRules,
    /// The open family goes straight to the kernel: anything short of full enforcement must
    /// stop the sandbox from starting, since Landlock is then the only lock on opens.
    pub required: bool,
    /// The policy, when it maps paths: the rules at and beneath each map's sandbox path are
    /// added in the view ([`Prepared::allow_view`]).
    in_view: Option<Policy>,
    /// `--capability-mode`: the capabilities the program starts with (warden's copies), for a
    /// second layer ([`Prepared::with_capabilities`]).
    capabilities: Option<Vec<(std::os::fd::OwnedFd, warden_capsicum::Rights)>>,
    /// The kernel enforces no Landlock ([`enforces_exec`] false when it was created): the run
    /// goes without it (`crate::run::plan::without_landlock` said what holds instead), and
    /// [`Prepared::restrict_self`] expects nothing enforced.
    pub absent: bool,
}

/// How much of Landlock the kernel enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enforcement {
    /// Every requested right is enforced.
    Full,
    /// The kernel's ABI is older than warden's target: some rights are not enforced.
    Partial,
    /// No Landlock at all: only the agent stands between the program and the file system.
    None,
}

fn rights(access: Access) -> BitFlags<AccessFs> {
    let all = AccessFs::from_all(TARGET_ABI);
    let want = match access {
        Access::Read => AccessFs::ReadFile | AccessFs::ReadDir,
        Access::Write => {
            AccessFs::WriteFile
                | AccessFs::Truncate
                | AccessFs::MakeReg
                | AccessFs::MakeDir
                | AccessFs::MakeSym
                | AccessFs::MakeSock
                | AccessFs::MakeFifo
                | AccessFs::IoctlDev
        }
        Access::Unlink => AccessFs::RemoveFile | AccessFs::RemoveDir,
        // The kernel opens an executable for reading as well as executing.
        Access::Exec => AccessFs::Execute | AccessFs::ReadFile,
    };
    want & all
}

/// Who refuses to truncate what the policy lets the program only read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Truncation {
    /// Landlock's `truncate` right, handled, and granted where the policy gives `write`. Every
    /// open then looks for it (it is optional for an open), so a read's walk goes up to the
    /// root, counting references on every directory and crossing the view's mounts on the way.
    Landlock,
    /// The filter and the agent: the filter sends an `O_TRUNC` open that is not for writing to
    /// the agent (`truncate(2)` always goes there), and an open for writing needs `write_file`,
    /// which the policy gives only with `truncate`. The ruleset leaves `truncate` unhandled, so
    /// an open's walk stops at the first rule that grants what it opens for. For runs whose
    /// opens the kernel decides; capability mode's opens are the agent's, and so is this.
    Filter,
}

/// Whether this kernel enforces Landlock's execute right (ABI 1), which the `CONTINUE` of every
/// checked `execve` relies on.
pub fn enforces_exec() -> bool {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::Execute)
        .and_then(|r| r.create())
        .is_ok()
}

/// The ruleset for `policy`, its rules not added yet: [`Prepared::filler`] gives a second
/// descriptor of it to add them with, [`Filler::fill`]. A ruleset is one kernel object that
/// every descriptor of it names, so rules added through warden's descriptor after the sandbox
/// was cloned are in the ruleset the sandbox's copy of the descriptor applies; warden adds them
/// while the sandbox's init builds the view, and the program waits for them
/// (`crate::launch`). Whether the kernel enforces all of it is settled here, at creation:
/// every right a rule asks for is one the ruleset handles (rules are cut to what `truncation`
/// leaves handled). On a kernel that enforces part (an older ABI), the rights it lacks are the
/// agent's alone; on one that enforces none, the ruleset is an empty stand-in
/// ([`Prepared::absent`]), and only a run that holds without Landlock may use it
/// (`crate::run::plan::without_landlock`).
pub fn create(policy: &Policy, truncation: Truncation) -> Result<Prepared, LandlockError> {
    let absent = !enforces_exec();
    let abi = TARGET_ABI;
    let handled = match truncation {
        Truncation::Landlock => AccessFs::from_all(abi),
        Truncation::Filter => AccessFs::from_all(abi) & !AccessFs::Truncate,
    };
    let ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(handled)?
        // No TCP rule: the client never binds or connects itself; the agent does, on its behalf.
        .handle_access(AccessNet::from_all(abi))?
        .scope(Scope::from_all(abi))?
        .create()?;
    Ok(Prepared {
        ruleset,
        handled,
        rules: 0,
        exec: ExecRules::default(),
        required: false,
        in_view: (!policy.maps().is_empty()).then(|| policy.clone()),
        capabilities: None,
        absent,
    })
}

/// What a capability's rights let the kernel allow beneath it (or on it, for a file): lookups
/// are not Landlock's (it does not restrict walking), and the rest map one to one.
fn capability_access(rights: warden_capsicum::Rights, dir: bool) -> BitFlags<AccessFs> {
    use warden_capsicum::Right;
    let mut a = BitFlags::<AccessFs>::empty();
    for (right, access) in [
        (Right::Read, AccessFs::ReadFile | AccessFs::ReadDir),
        (Right::Write, AccessFs::WriteFile | AccessFs::Truncate),
        (Right::Create, AccessFs::MakeReg | AccessFs::MakeSym),
        (Right::Mkdir, AccessFs::MakeDir.into()),
        (Right::Unlink, AccessFs::RemoveFile | AccessFs::RemoveDir),
        (Right::Mknod, AccessFs::MakeFifo | AccessFs::MakeSock),
        (Right::Fexecve, AccessFs::Execute | AccessFs::ReadFile),
        (Right::Ioctl, AccessFs::IoctlDev.into()),
    ] {
        if rights.has(right) {
            a |= access;
        }
    }
    let a = a & AccessFs::from_all(TARGET_ABI);
    if dir {
        a
    } else {
        a & AccessFs::from_file(TARGET_ABI)
    }
}

/// A second descriptor of a [`Prepared`] ruleset, to add the policy's rules through.
pub struct Filler {
    ruleset: RulesetCreated,
    handled: BitFlags<AccessFs>,
}

impl Filler {
    /// Adds `policy`'s rules on the host's objects; returns how many, and what they let the
    /// sandbox execute. The trees of `view` that it filters ([`Step::Filtered`]) get none:
    /// their objects are the view's overlays', whose rules [`Prepared::allow_view`] adds.
    ///
    /// [`Step::Filtered`]: warden_policy::view::Step::Filtered
    ///
    /// `masked`: the program reaches files only through the view, whose masks cover what a
    /// `path-deny` names (no directory of the host's tree inherited), so a tree's rule may go on
    /// the tree itself ([`targets`]).
    pub fn fill(
        mut self,
        policy: &Policy,
        view: Option<&warden_policy::view::ViewPlan>,
        masked: bool,
    ) -> Result<(usize, ExecRules), LandlockError> {
        let filtered: Vec<&str> = view.map_or_else(Vec::new, |v| v.filtered_trees().collect());
        let targets = targets(policy, None, &filtered, masked && view.is_some());
        let mut exec = ExecRules {
            // A tmpfs map's exec rules are learnt in the view instead ([`ExecRules::learn_in_view`]).
            maps: policy
                .maps()
                .iter()
                .filter(|m| m.source != warden_policy::map::MapSource::Tmpfs)
                .map(|m| m.sandbox.clone())
                .collect(),
            ..ExecRules::default()
        };
        let added = add_targets(&mut self.ruleset, self.handled, targets, &mut exec)?;
        Ok((added, exec))
    }
}

/// The objects `policy`'s rules name, with their rights. `within` `None`: every rule except
/// those at or beneath a `path-map`'s sandbox path, opened on the host's tree (the rules name
/// the sandbox's paths, and there the host has something else). `within` a map's sandbox path:
/// only what lies there, for [`Prepared::allow_view`] to open in the view, where the map's
/// objects are (a tmpfs's and an overlay's are not the host's at all: Landlock holds rules
/// on objects, and an overlay's are its own).
///
/// `masked`: in a view, which covers what a `path-deny` outside `/proc` names with a mask, so
/// a tree's rule is on the tree itself (a program may create in it what the policy allows),
/// not on its entries around the denied ones; what a mask cannot cover (a name created later)
/// keeps the run's opens with the agent (`warden_policy::kernel`).
fn targets(policy: &Policy, within: Option<&str>, filtered: &[&str], masked: bool) -> Vec<Target> {
    use warden_policy::map::at_or_beneath;
    let keep = |p: &str| match within {
        None => !policy.maps().iter().any(|m| at_or_beneath(p, &m.sandbox)),
        Some(w) => at_or_beneath(p, w),
    };
    let denies: Vec<&PathPattern> = policy
        .path_rules()
        .iter()
        .filter(|r| r.access.is_none() && (!masked || r.pattern.literal().starts_with("/proc/")))
        .map(|r| &r.pattern)
        .collect();
    let mut targets: Vec<Target> = Vec::new();
    for rule in policy.path_rules() {
        let Some(access) = rule.access else { continue };
        let lit = rule.pattern.literal();
        if rule.pattern.per_process() {
            // The agent's own /proc/self is not the program's; the agent translates these.
            continue;
        }
        if !rule.pattern.is_prefix() {
            if !keep(lit) {
                continue;
            }
            // An exact path. A directory rule in Landlock covers the whole subtree, so an exact
            // directory only gets the right to be listed (everything else stays the agent's):
            // cut when it is opened, which says what it is ([`Target::exact`]).
            let path = PathBuf::from(lit);
            if access == Access::Exec && std::fs::symlink_metadata(&path).is_err() {
                // A program the sandbox will build or receive (`make check` running what it
                // compiled): Landlock can only name what exists, so the nearest existing
                // directory above gets the execute right; the agent still checks the exact path
                // of every execve.
                if let Some(dir) = path.ancestors().skip(1).find(|a| a.is_dir()) {
                    if dir.to_str().is_some_and(keep) {
                        targets.push(Target::path(dir.to_path_buf(), rights(access)));
                    }
                }
                continue;
            }
            targets.push(Target::exact(path, rights(access)));
            continue;
        }
        let roots: Vec<(PathBuf, Object)> = match lit.strip_suffix('/') {
            // A filtered tree's rule is on its overlay, in the view.
            Some(dir) if filtered.contains(&dir) => Vec::new(),
            Some(dir) => {
                let dir = if dir.is_empty() { "/" } else { dir };
                match within {
                    _ if keep(dir) => vec![(PathBuf::from(dir), Object::Path(dir.into()))],
                    // A tree around the map covers all of it.
                    Some(w) if at_or_beneath(w, dir) => {
                        vec![(PathBuf::from(w), Object::Path(w.into()))]
                    }
                    _ => Vec::new(),
                }
            }
            None => name_prefix_matches(lit)
                .into_iter()
                .filter(|(p, _)| p.to_str().is_some_and(keep))
                .map(|(p, e)| (p, Object::Listed(e)))
                .collect(),
        };
        for (root, object) in roots {
            expand(&root, object, rights(access), &denies, &mut targets, 0);
        }
    }
    targets
}

/// An object to hold a rule, with its rights.
struct Target {
    object: Object,
    access: BitFlags<AccessFs>,
    /// A path the policy names exactly: a directory there gets only the right to be listed.
    exact: bool,
}

/// Where a [`Target`] is: a path the policy names, or an entry of a directory [`expand`]
/// listed, opened relative to that directory (one step of lookup, not the whole path again).
enum Object {
    Path(PathBuf),
    Listed(Entry),
}

impl Object {
    /// Opens the object with `flags`. A path the policy names has its links followed (as
    /// Landlock would name it). A listed entry that is a link is the link itself, which then
    /// gets no rule and is not listed into: a rule on its target would hold wherever the target
    /// lies, out of the tree the policy allows, and reachable there by other paths (`..` from a
    /// directory the program holds). Through the link, the target's own path decides, as in
    /// the tree.
    fn open(&self, flags: rustix::fs::OFlags) -> rustix::io::Result<OwnedFd> {
        use rustix::fs::{Mode, OFlags};
        match self {
            Object::Listed(e) => rustix::fs::openat(
                &*e.dir,
                e.name.as_c_str(),
                flags | OFlags::NOFOLLOW,
                Mode::empty(),
            ),
            Object::Path(path) => rustix::fs::open(path, flags, Mode::empty()),
        }
    }
}

/// A listed entry: the directory it was listed in, its name there, and its type as listed.
struct Entry {
    dir: std::rc::Rc<OwnedFd>,
    name: std::ffi::CString,
    kind: rustix::fs::FileType,
}

impl Target {
    fn path(path: PathBuf, access: BitFlags<AccessFs>) -> Target {
        Target {
            object: Object::Path(path),
            access,
            exact: false,
        }
    }

    /// `path` as the policy names it exactly: cut to the right to be listed if it turns out to
    /// be a directory ([`Target::rights_as`]).
    fn exact(path: PathBuf, access: BitFlags<AccessFs>) -> Target {
        Target {
            exact: true,
            ..Target::path(path, access)
        }
    }

    /// The rights of the object, a directory or not (`is_dir`).
    fn rights_as(&self, is_dir: bool) -> BitFlags<AccessFs> {
        if self.exact && is_dir {
            self.access & AccessFs::ReadDir
        } else {
            self.access
        }
    }

    /// The object as an `O_PATH` descriptor ([`Object::open`]).
    fn open(&self) -> rustix::io::Result<OwnedFd> {
        self.object
            .open(rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC)
    }

    /// Whether the object is a directory, when the listing says so reliably and nothing else
    /// is needed of it (its identity is, for an execute right): a file or a directory, not a
    /// link (which gets no rule) or an unknown type.
    fn listed_kind(&self) -> Option<bool> {
        use rustix::fs::FileType;
        let Object::Listed(e) = &self.object else {
            return None;
        };
        if self.access.contains(AccessFs::Execute) {
            return None;
        }
        match e.kind {
            FileType::Directory => Some(true),
            FileType::RegularFile => Some(false),
            _ => None,
        }
    }
}

/// Adds a rule per target that can hold one, cut to the `handled` rights; returns how many.
/// Targets of the same path the policy names become one rule with all their rights (the
/// default policy names `/usr` three times, for listing, reading and executing): Landlock
/// itself ORs the rights of every rule on one object, so the ruleset says the same with one
/// open, one rule and one close instead of three.
fn add_targets(
    ruleset: &mut RulesetCreated,
    handled: BitFlags<AccessFs>,
    targets: Vec<Target>,
    exec: &mut ExecRules,
) -> Result<usize, LandlockError> {
    let abi = TARGET_ABI;
    let mut added = 0;
    for same in by_object(targets) {
        let first = &same[0];
        // Opened first (links followed, as Landlock would), then asked what it is: one walk of
        // the path, not two, for each of the ~200 rules of the default policy; and not asked
        // at all when the listing it came from said.
        let Ok(fd) = first.open() else {
            continue;
        };
        // Its type from the listing when that says it reliably, else from the descriptor,
        // with its identity for the execute list.
        let (is_dir, id) = match first.listed_kind() {
            Some(dir) => (dir, None),
            None => {
                let Ok(st) = rustix::fs::fstat(&fd) else {
                    continue;
                };
                // Only objects of a real file system can carry a rule: /dev/stdout may lead to
                // a pipe or a socket, which Landlock refuses (EBADFD). Those need no rule:
                // nothing names them.
                let ft = rustix::fs::FileType::from_raw_mode(st.st_mode);
                let is_dir = ft == rustix::fs::FileType::Directory;
                if !is_dir && !holds_rule_raw(ft) {
                    continue;
                }
                (is_dir, Some((st.st_dev, st.st_ino)))
            }
        };
        let access = same
            .iter()
            .fold(BitFlags::empty(), |a, t| a | t.rights_as(is_dir));
        if let Some(id) = id.filter(|_| access.contains(AccessFs::Execute)) {
            exec.add_id(id, is_dir);
        }
        let access = handled
            & if is_dir {
                access
            } else {
                access & AccessFs::from_file(abi)
            };
        if access.is_empty() {
            continue;
        }
        ruleset.add_rule(PathBeneath::new(fd, access))?;
        added += 1;
    }
    Ok(added)
}

/// `targets` grouped by the object they name, in the order each first appears: the targets of
/// one path the policy names (links followed alike) together, each listed entry alone (its
/// object is its directory's entry, opened without following a link).
fn by_object(targets: Vec<Target>) -> Vec<Vec<Target>> {
    use std::collections::hash_map::Entry;
    let mut groups: Vec<Vec<Target>> = Vec::with_capacity(targets.len());
    let mut at: std::collections::HashMap<PathBuf, usize> = std::collections::HashMap::new();
    for target in targets {
        let Object::Path(path) = &target.object else {
            groups.push(vec![target]);
            continue;
        };
        match at.entry(path.clone()) {
            Entry::Occupied(slot) => groups[*slot.get()].push(target),
            Entry::Vacant(slot) => {
                slot.insert(groups.len());
                groups.push(vec![target]);
            }
        }
    }
    groups
}

/// The objects a ruleset lets the sandbox execute, as they were when it was built: files, and
/// directories with everything beneath them. Landlock's execute right is what makes a checked
/// `execve` safe to continue, and it can only be given to objects that exist; an `exec` rule
/// for a directory made later allows what the kernel will still refuse.
#[derive(Clone, Debug, Default)]
pub struct ExecRules {
    files: Vec<(u64, u64)>,
    dirs: Vec<(u64, u64)>,
    /// The maps' sandbox paths: their rules are added in the view, where the agent's own list
    /// cannot see them, so there the kernel alone says whether an exec may run.
    maps: Vec<String>,
    /// No Landlock: the view's mounts alone say what runs ([`Prepared::absent`]), and this
    /// list holds nothing.
    pub by_mounts: bool,
}

impl ExecRules {
    /// Whether `path` (in the sandbox) lies in a `path-map`, whose execute rights this list
    /// does not hold (see the field).
    pub fn mapped(&self, path: &str) -> bool {
        self.maps
            .iter()
            .any(|m| warden_policy::map::at_or_beneath(path, m))
    }

    /// Learns the objects the view's Landlock rules give the execute right in the private tmpfs
    /// places, as [`Prepared::allow_view`] finds them there: the directory `D` of each `exec
    /// D/*` rule (which the view made before the program started), and for an exact `exec F`
    /// the file, or the nearest directory above it that exists (a program the run will make),
    /// all found from the view's `root` without following links. One the program has already
    /// replaced is learnt as it is now: the agent may then let the kernel refuse without saying
    /// why, never allow more (the kernel decides the exec).
    pub fn learn_in_view(&mut self, policy: &warden_policy::Policy, root: BorrowedFd<'_>) {
        use warden_policy::map::{at_or_beneath, MapSource};
        let open = |path: &str| {
            crate::confine::view::open_in_view(root, path)
                .and_then(|fd| Ok(rustix::fs::fstat(&fd)?))
        };
        for rule in policy.path_rules() {
            if rule.access != Some(Access::Exec) {
                continue;
            }
            let lit = rule.pattern.literal();
            let (path, exact) = match lit.strip_suffix('/') {
                Some(dir) if rule.pattern.is_prefix() => (dir, false),
                _ if !rule.pattern.is_prefix() => (lit, true),
                _ => continue,
            };
            let Some(map) = policy
                .maps()
                .iter()
                .find(|m| m.source == MapSource::Tmpfs && at_or_beneath(path, &m.sandbox))
            else {
                continue;
            };
            let mut at = path;
            loop {
                if let Ok(st) = open(at) {
                    let dir = rustix::fs::FileType::from_raw_mode(st.st_mode)
                        == rustix::fs::FileType::Directory;
                    if dir || exact {
                        self.add_id((st.st_dev, st.st_ino), dir);
                    }
                    break;
                }
                // Only an exact rule's missing file falls back, and never above its map.
                match at.rsplit_once('/') {
                    Some((up, _)) if exact && at_or_beneath(up, &map.sandbox) => at = up,
                    _ => break,
                }
            }
        }
    }

    fn add_id(&mut self, id: (u64, u64), dir: bool) {
        if dir {
            self.dirs.push(id);
        } else {
            self.files.push(id);
        }
    }

    /// Whether Landlock lets the sandbox execute `name` in the directory `dir` (no symlink
    /// followed): a rule on the file, or on a directory it is beneath. Walks up through `..`
    /// as Landlock does, at most `max_depth` levels (deeper: not covered, as the kernel would
    /// not be asked to find out).
    pub fn covers(&self, dir: BorrowedFd<'_>, name: &CStr, max_depth: usize) -> bool {
        use rustix::fs::{openat, statat, AtFlags, Mode, OFlags};
        let id = |st: &rustix::fs::Stat| (st.st_dev, st.st_ino);
        if statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| self.files.contains(&id(&st)))
        {
            return true;
        }
        let up = |fd: BorrowedFd<'_>, name: &CStr| {
            openat(
                fd,
                name,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
        };
        let Ok(mut at) = up(dir, c".") else {
            return false;
        };
        for _ in 0..max_depth {
            let Ok(here) = rustix::fs::fstat(&at) else {
                return false;
            };
            if self.dirs.contains(&id(&here)) {
                return true;
            }
            let Ok(parent) = up(at.as_fd(), c"..") else {
                return false;
            };
            if rustix::fs::fstat(&parent).is_ok_and(|p| id(&p) == id(&here)) {
                // The root: its parent is itself.
                return false;
            }
            at = parent;
        }
        false
    }
}

/// Whether a non-directory of type `ft` can carry a Landlock rule: objects of a real file
/// system. A pipe or socket (where /dev/stdout may lead) cannot (EBADFD).
fn holds_rule_raw(ft: rustix::fs::FileType) -> bool {
    use rustix::fs::FileType;
    matches!(
        ft,
        FileType::RegularFile | FileType::CharacterDevice | FileType::BlockDevice
    )
}

/// What `path` names now, for [`warden_policy::kernel::kernel_plan`]: its canonical path (links
/// resolved) and whether it is a directory. Only objects Landlock can hold a rule on count: a
/// link to a pipe (`/dev/stdin`) is missing.
pub fn found(path: &str) -> Found {
    let Some((text, st)) = crate::paths::canonical(path) else {
        return Found::Missing;
    };
    let ft = rustix::fs::FileType::from_raw_mode(st.st_mode);
    if ft == rustix::fs::FileType::Directory {
        Found::Dir(text)
    } else if holds_rule_raw(ft) {
        Found::File(text)
    } else {
        Found::Missing
    }
}

/// Whether this kernel's Landlock scopes a domain's signals and abstract unix sockets to the
/// domain (ABI 6, Linux 6.12): in warden's no-namespace mode, the kernel's lock on both.
pub fn enforces_scopes() -> bool {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .scope(Scope::Signal | Scope::AbstractUnixSocket)
        .and_then(|r| r.create())
        .is_ok()
}

/// Whether this kernel's Landlock enforces every right the fast path relies on (ABI 5: the
/// truncate and device-ioctl rights; warden asks for all of its target ABI).
pub fn enforces_everything() -> bool {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .and_then(|r| r.create())
        .is_ok()
}

/// Existing entries of `D` whose names start with `na`, for a pattern `D/na*`, as listed.
fn name_prefix_matches(lit: &str) -> Vec<(PathBuf, Entry)> {
    let (dir, stem) = lit.rsplit_once('/').unwrap_or(("/", lit));
    let dir = if dir.is_empty() { "/" } else { dir };
    let flags =
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC;
    let Ok(fd) = rustix::fs::open(dir, flags, rustix::fs::Mode::empty()) else {
        return Vec::new();
    };
    listed(Path::new(dir), fd)
        .into_iter()
        .filter(|(_, e)| e.name.as_bytes().starts_with(stem.as_bytes()))
        .collect()
}

/// The entries of the directory `dir` (at `path`), each with its path, named by the
/// descriptor they were listed through.
fn listed(path: &Path, dir: OwnedFd) -> Vec<(PathBuf, Entry)> {
    let Ok(listing) = rustix::io::fcntl_dupfd_cloexec(&dir, 0).and_then(rustix::fs::Dir::new)
    else {
        return Vec::new();
    };
    let names: Vec<(std::ffi::CString, rustix::fs::FileType)> = listing
        .filter_map(Result::ok)
        .filter(|e| !matches!(e.file_name().to_bytes(), b"." | b".."))
        .take(MAX_EXPANSION)
        .map(|e| (e.file_name().to_owned(), e.file_type()))
        .collect();
    let dir = std::rc::Rc::new(dir);
    names
        .into_iter()
        .map(|(name, kind)| {
            let entry_path = path.join(std::ffi::OsStr::from_bytes(name.to_bytes()));
            let entry = Entry {
                dir: std::rc::Rc::clone(&dir),
                name,
                kind,
            };
            (entry_path, entry)
        })
        .collect()
}

/// Adds `root` (`object`: the policy's path, or an entry as listed in its parent) with
/// `access`, or, when a denied path lies inside it, its entries one by one.
fn expand(
    root: &Path,
    object: Object,
    access: BitFlags<AccessFs>,
    denies: &[&PathPattern],
    out: &mut Vec<Target>,
    depth: usize,
) {
    let Some(root_str) = root.to_str() else {
        return;
    };
    if denies.iter().any(|d| d.matches(root_str)) {
        return;
    }
    let inside = format!("{}/", root_str.trim_end_matches('/'));
    let contains_deny = denies.iter().any(|d| d.literal().starts_with(&inside));
    if !contains_deny {
        out.push(Target {
            object,
            access,
            exact: false,
        });
        return;
    }
    if depth > 8 {
        return;
    }
    // Listed through the descriptor its entries are then opened from: the names and the
    // objects come from one directory. Not a directory (ENOTDIR): nothing lies inside.
    use rustix::fs::OFlags;
    let Ok(dir) = object.open(OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC) else {
        return;
    };
    for (path, entry) in listed(root, dir) {
        expand(&path, Object::Listed(entry), access, denies, out, depth + 1);
    }
}

impl Prepared {
    /// A second descriptor of this ruleset, to add the policy's rules with [`Filler::fill`].
    pub fn filler(&self) -> Result<Filler, LandlockError> {
        Ok(Filler {
            ruleset: self.ruleset.try_clone()?,
            handled: self.handled,
        })
    }

    /// Adds the rules only the sandbox's own view can name, once it is the caller's root: the
    /// view's `/` may be listed when the policy lets `/` be listed (it holds nothing but what
    /// the policy brings in), and its fresh `/proc` may be read when the policy lets the
    /// process read its own entries (it holds only the sandbox's processes and the entries the
    /// policy names; the rest are masked); and the rules at and beneath each `path-map`'s
    /// sandbox path, opened where the map put them. Runs in the program's process, before
    /// [`Prepared::restrict_self`].
    pub fn allow_view(
        &mut self,
        plan: &warden_policy::view::ViewPlan,
    ) -> Result<(), LandlockError> {
        use warden_policy::view::Step;
        if plan.lists_root {
            let fd = PathFd::new("/")?;
            (&mut self.ruleset).add_rule(PathBeneath::new(fd, AccessFs::ReadDir))?;
            self.rules += 1;
        }
        if let Some(policy) = &self.in_view {
            let mut exec = ExecRules::default();
            for m in policy.maps() {
                let targets = targets(policy, Some(&m.sandbox), &[], false);
                self.rules += add_targets(&mut self.ruleset, self.handled, targets, &mut exec)?;
            }
        }
        // A filtered tree: one rule on its overlay's root, the only object of it the sandbox
        // can name (its planner took only trees the policy lets the program read whole).
        for tree in plan.filtered_trees() {
            let fd = PathFd::new(tree)?;
            (&mut self.ruleset).add_rule(PathBeneath::new(fd, rights(Access::Read)))?;
            self.rules += 1;
        }
        let Some(keep) = plan.steps.iter().find_map(|s| match s {
            Step::Proc { keep } => Some(keep),
            _ => None,
        }) else {
            return Ok(());
        };
        let own = keep.all
            || ["self", "thread-self"]
                .iter()
                .any(|n| keep.children.contains_key(*n));
        let paths: Vec<String> = if own {
            vec!["/proc".into()]
        } else {
            keep.children.keys().map(|n| format!("/proc/{n}")).collect()
        };
        for path in paths {
            let fd = PathFd::new(&path)?;
            (&mut self.ruleset).add_rule(PathBeneath::new(fd, rights(Access::Read)))?;
            self.rules += 1;
        }
        Ok(())
    }

    /// Narrows the domain further, for `--capability-mode`: a second layer (the kernel
    /// allows only what every layer allows) handling every file-system access and allowing
    /// only what the capabilities `caps` grant beneath them, the library directories (read and
    /// execute, for the loader), and the program's own executable. Lookups beneath a capability
    /// are the agent's, performed outside the domain; this layer binds what the kernel does for
    /// the program itself: the launcher's `execve` and what the agent continues (`fexecve`).
    pub fn with_capabilities(
        &mut self,
        caps: Vec<(std::os::fd::OwnedFd, warden_capsicum::Rights)>,
    ) {
        self.capabilities = Some(caps);
    }

    /// The capability layer of [`Prepared::with_capabilities`], applied to the calling thread.
    fn restrict_to_capabilities(
        caps: &[(std::os::fd::OwnedFd, warden_capsicum::Rights)],
        program: &CStr,
    ) -> Result<(), LandlockError> {
        let mut layer = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(TARGET_ABI))?
            .create()?;
        let loader = AccessFs::ReadFile | AccessFs::ReadDir | AccessFs::Execute;
        for dir in warden_capsicum::LIBRARY_DIRS {
            if let Ok(fd) = PathFd::new(dir) {
                (&mut layer).add_rule(PathBeneath::new(fd, loader))?;
            }
        }
        if let Ok(fd) = PathFd::new(warden_capsicum::LOADER_CACHE) {
            (&mut layer).add_rule(PathBeneath::new(fd, AccessFs::ReadFile))?;
        }
        let program = PathFd::new(program.to_string_lossy().as_ref())?;
        (&mut layer).add_rule(PathBeneath::new(
            program,
            AccessFs::ReadFile | AccessFs::Execute,
        ))?;
        for (fd, rights) in caps {
            // Rules name objects in the file system: sockets, pipes and devices have none here
            // (their rights are the agent's and their access mode's).
            use rustix::fs::FileType;
            let dir = match rustix::fs::fstat(fd).map(|st| FileType::from_raw_mode(st.st_mode)) {
                Ok(FileType::Directory) => true,
                Ok(FileType::RegularFile) => false,
                _ => continue,
            };
            let access = capability_access(*rights, dir);
            if !access.is_empty() {
                (&mut layer).add_rule(PathBeneath::new(fd, access))?;
            }
        }
        layer.restrict_self()?;
        Ok(())
    }

    /// Applies the ruleset to the calling thread (and sets no_new_privs), and the capability
    /// layer when there is one ([`Prepared::with_capabilities`]; `program` is what the thread
    /// executes next). Runs in the sandbox's first process, after fork, before exec.
    pub fn restrict_self(self, program: &CStr) -> Result<Enforcement, LandlockError> {
        let (required, absent) = (self.required, self.absent);
        if absent && self.capabilities.is_some() {
            // Capability mode's second layer is Landlock's alone (the plan refuses it).
            return Err(LandlockError::NoExecBackstop);
        }
        let status = self.ruleset.restrict_self()?;
        if let Some(caps) = &self.capabilities {
            Self::restrict_to_capabilities(caps, program)?;
        }
        if required && status.ruleset != RulesetStatus::FullyEnforced {
            return Err(LandlockError::NotFullyEnforced);
        }
        if status.ruleset == RulesetStatus::NotEnforced && !absent {
            // Planned with Landlock: this is the lock on the door itself.
            return Err(LandlockError::NoExecBackstop);
        }
        Ok(match status.ruleset {
            RulesetStatus::FullyEnforced => Enforcement::Full,
            RulesetStatus::PartiallyEnforced => Enforcement::Partial,
            RulesetStatus::NotEnforced => Enforcement::None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str, access: BitFlags<AccessFs>) -> Target {
        Target::path(PathBuf::from(p), access)
    }

    /// Targets of one path go together, in the order each path first appears, however many
    /// rules name it; other paths stay apart.
    #[test]
    fn targets_of_one_path_are_one_object() {
        let read = AccessFs::ReadFile | AccessFs::ReadDir;
        let groups = by_object(vec![
            Target::exact(PathBuf::from("/usr"), read),
            path("/etc", read),
            path("/usr", read | AccessFs::Execute),
            path("/usr/bin", read),
            path("/usr", AccessFs::ReadDir.into()),
        ]);
        let shape: Vec<(String, usize)> = groups
            .iter()
            .map(|g| match &g[0].object {
                Object::Path(p) => (p.display().to_string(), g.len()),
                Object::Listed(_) => unreachable!(),
            })
            .collect();
        assert_eq!(
            shape,
            [
                ("/usr".into(), 3),
                ("/etc".into(), 1),
                ("/usr/bin".into(), 1)
            ]
        );
    }

    /// A directory named exactly gets only the right to be listed, whatever else a tree rule on
    /// the same directory gives it; a file named exactly keeps its rights: the union is taken
    /// of each rule's own rights, as Landlock does with separate rules on one object.
    #[test]
    fn each_rule_keeps_its_own_cut_in_the_union() {
        let read = AccessFs::ReadFile | AccessFs::ReadDir;
        let exact = Target::exact(PathBuf::from("/usr"), read | AccessFs::Execute);
        let tree = path("/usr", read);
        let union = |is_dir| exact.rights_as(is_dir) | tree.rights_as(is_dir);
        assert_eq!(union(true), read);
        assert_eq!(union(false), read | AccessFs::Execute);
        assert_eq!(exact.rights_as(true), BitFlags::from(AccessFs::ReadDir));
    }
}
