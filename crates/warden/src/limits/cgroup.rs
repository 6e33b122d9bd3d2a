//! Control groups for one sandbox: memory and process limits for the whole tree, its CPU time and
//! its peak memory.
//!
//! warden creates a group of its own under the group it runs in, puts the sandbox's init into it
//! before the program starts (so everything the program starts is inside), reads the figures at
//! the end, and removes the group. Two layouts are supported:
//!
//! * **cgroup v2** with the `memory` and `pids` controllers delegated to warden's group (a
//!   systemd user slice, or root on a pure v2 host): `memory.max`, `memory.swap.max`,
//!   `pids.max`, `cpu.stat`, `memory.peak`, `memory.events`.
//! * **cgroup v1** with the `memory`, `pids` and `cpuacct` hierarchies mounted and writable (root
//!   on a v1 or hybrid host): `memory.limit_in_bytes`, `memory.memsw.limit_in_bytes`,
//!   `pids.max`, `cpuacct.usage`, `memory.max_usage_in_bytes`, `memory.oom_control`.
//!
//! Anything else (an unprivileged user without delegation) gets `None`, and the caller falls back
//! to rlimits and rusage.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which cgroup layout is in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// The unified hierarchy.
    V2,
    /// Separate memory, pids and cpuacct hierarchies.
    V1,
}

/// The sandbox's groups.
#[derive(Debug)]
pub struct Cgroup {
    version: Version,
    /// v2: one directory. v1: memory, pids, cpuacct, in that order.
    dirs: Vec<PathBuf>,
    /// Each directory's `cgroup.procs`, opened for writing when the group was made. The kernel
    /// checks a migration against the opener's credentials, so warden can still move the
    /// sandbox in after it has switched to `starting_uid`.
    procs: Vec<fs::File>,
    /// v2: the run's own group, which holds the sandbox's (`dirs[0]`) and the agent's side by
    /// side and carries the memory limit for both ([`Cgroup::charge_agent`]).
    run: Option<RunGroup>,
    /// v1: the memory group's `tasks`, and its parent's, opened for writing with the rest: the
    /// agent's workers join the first ([`Cgroup::memory_tasks`]) and leave through the second.
    tasks: Option<(fs::File, fs::File)>,
    /// Who removes the groups when warden itself no longer may ([`Cgroup::keep_removable`]).
    remover: std::sync::Mutex<Option<crate::sys::process::Remover>>,
}

/// A v2 run's groups: `top` (the memory limit), `top/sandbox` (the program's, with the process
/// limit) and `top/agent`, where warden moves itself while it serves the sandbox
/// ([`Cgroup::charge_agent`]), and from which it goes back to the group it was in when the
/// groups were made (its `origin`). Both `cgroup.procs` are opened when the groups are made:
/// the kernel checks a migration against the opener's credentials, and a root warden may have
/// become another user since.
#[derive(Debug)]
struct RunGroup {
    top: PathBuf,
    agent: PathBuf,
    /// The v2 mount's directory, to find warden's own group under.
    mount: Mount,
    /// `agent/cgroup.procs` and the origin's, opened by `configure`.
    agent_procs: Option<fs::File>,
    origin_procs: Option<fs::File>,
    /// Whether warden is in `agent` (and so must go back before the groups can go).
    charged: std::sync::atomic::AtomicBool,
    /// warden's `oom_score_adj` before it joined `agent`, when it could lower it there.
    oom_before: std::sync::Mutex<Option<Vec<u8>>>,
}

/// warden's own OOM score adjustment.
const OOM_SCORE_ADJ: &str = "/proc/self/oom_score_adj";

/// What limits to write into a new group.
#[derive(Clone, Copy, Debug, Default)]
pub struct CgroupLimits {
    /// Bytes of memory (and no swap beyond it).
    pub memory: Option<u64>,
    /// Tasks (processes and threads), warden's init included.
    pub tasks: Option<u64>,
}

/// One cgroup mount: its mount point, the part of the hierarchy it shows, and its type.
#[derive(Clone, Debug)]
struct Mount {
    point: PathBuf,
    root: String,
    v2: bool,
    options: String,
}

fn mounts() -> Vec<Mount> {
    let Ok(text) = crate::sys::process::read_proc("/proc/self/mountinfo") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| {
            // id parent major:minor root mountpoint options [optional...] - fstype source super
            let (pre, post) = line.split_once(" - ")?;
            let pre: Vec<&str> = pre.split(' ').collect();
            let post: Vec<&str> = post.split(' ').collect();
            let fstype = *post.first()?;
            if fstype != "cgroup" && fstype != "cgroup2" {
                return None;
            }
            Some(Mount {
                point: PathBuf::from(unescape(pre.get(4)?)),
                root: unescape(pre.get(3)?),
                v2: fstype == "cgroup2",
                options: post.get(2).copied().unwrap_or("").to_owned(),
            })
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let oct = std::str::from_utf8(&b[i + 1..i + 4]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(oct, 8) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// warden's own group in each hierarchy: (controllers or "" for v2, path).
fn own_groups() -> Vec<(String, String)> {
    let Ok(text) = crate::sys::process::read_proc("/proc/self/cgroup") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let mut parts = l.splitn(3, ':');
            let _id = parts.next()?;
            let controllers = parts.next()?.to_owned();
            let path = parts.next()?.to_owned();
            Some((controllers, path))
        })
        .collect()
}

/// The directory of warden's own group in the hierarchy mounted at `m`.
fn own_dir(m: &Mount, group: &str) -> Option<PathBuf> {
    let rel = if m.root == "/" {
        group
    } else {
        group.strip_prefix(m.root.as_str())?
    };
    Some(m.point.join(rel.trim_start_matches('/')))
}

/// Where this process's groups are, for `warden doctor`: the cgroup v2 directory of its own
/// group (if a v2 hierarchy is mounted and the process is in it), and the v1 controllers that
/// have a hierarchy mounted.
pub fn own_layout() -> (Option<PathBuf>, Vec<String>) {
    let mounts = mounts();
    let groups = own_groups();
    let v2 = mounts.iter().find(|m| m.v2).and_then(|m| {
        let (_, group) = groups.iter().find(|(c, _)| c.is_empty())?;
        own_dir(m, group)
    });
    let mut v1: Vec<String> = Vec::new();
    for m in mounts.iter().filter(|m| !m.v2) {
        for option in m.options.split(',') {
            let known = [
                "memory", "pids", "cpuacct", "cpu", "cpuset", "devices", "freezer",
            ];
            if known.contains(&option) && !v1.iter().any(|c| c == option) {
                v1.push(option.to_owned());
            }
        }
    }
    (v2, v1)
}

impl Cgroup {
    /// Creates the sandbox's group with `limits`, trying v2 then v1. `Ok(None)`: no usable
    /// cgroups here (not an error: the caller falls back). `Err`: cgroups exist and were
    /// writable, but a limit could not be set.
    pub fn create(limits: CgroupLimits) -> io::Result<Option<Cgroup>> {
        let mounts = mounts();
        let groups = own_groups();
        let name = format!(
            "warden-{}-{:08x}",
            std::process::id(),
            crate::unique::rand32()
        );
        if let Some(cg) = Self::create_v2(&mounts, &groups, &name)? {
            return cg.configure(limits).map(Some);
        }
        if let Some(cg) = Self::create_v1(&mounts, &groups, &name)? {
            return cg.configure(limits).map(Some);
        }
        Ok(None)
    }

    fn create_v2(
        mounts: &[Mount],
        groups: &[(String, String)],
        name: &str,
    ) -> io::Result<Option<Cgroup>> {
        let Some(m) = mounts.iter().find(|m| m.v2) else {
            return Ok(None);
        };
        let Some((_, group)) = groups.iter().find(|(c, _)| c.is_empty()) else {
            return Ok(None);
        };
        let Some(parent) = own_dir(m, group).map(v2_parent) else {
            return Ok(None);
        };
        if enable_controllers(&parent).is_err() {
            return Ok(None);
        }
        remove_stale(&parent);
        let top = parent.join(name);
        match fs::create_dir(&top) {
            Ok(()) => {}
            Err(e) if is_unavailable(&e) => return Ok(None),
            Err(e) => return Err(e),
        }
        let cg = Cgroup {
            version: Version::V2,
            dirs: vec![top.join("sandbox")],
            procs: Vec::new(),
            run: Some(RunGroup {
                agent: top.join("agent"),
                top,
                mount: m.clone(),
                agent_procs: None,
                origin_procs: None,
                charged: Default::default(),
                oom_before: Default::default(),
            }),
            tasks: None,
            remover: Default::default(),
        };
        let made = (|| {
            let run = cg.run.as_ref().expect("just made");
            fs::write(run.top.join("cgroup.subtree_control"), "+memory +pids")?;
            fs::create_dir(&cg.dirs[0])?;
            fs::create_dir(&run.agent)
        })();
        match made {
            Ok(()) => Ok(Some(cg)),
            Err(e) => {
                cg.remove();
                Err(io::Error::new(
                    e.kind(),
                    format!(
                        "cannot make the run's cgroups under {}: {e}",
                        parent.display()
                    ),
                ))
            }
        }
    }

    fn create_v1(
        mounts: &[Mount],
        groups: &[(String, String)],
        name: &str,
    ) -> io::Result<Option<Cgroup>> {
        let mut dirs = Vec::new();
        for controller in ["memory", "pids", "cpuacct"] {
            let has = |list: &str| list.split(',').any(|c| c == controller);
            let Some(m) = mounts.iter().find(|m| !m.v2 && has(&m.options)) else {
                return Ok(None);
            };
            let Some((_, group)) = groups.iter().find(|(c, _)| has(c)) else {
                return Ok(None);
            };
            let Some(parent) = own_dir(m, group) else {
                return Ok(None);
            };
            remove_stale(&parent);
            let dir = parent.join(name);
            match fs::create_dir(&dir) {
                Ok(()) => dirs.push(dir),
                Err(e) => {
                    let cg = Cgroup {
                        version: Version::V1,
                        dirs,
                        procs: Vec::new(),
                        run: None,
                        tasks: None,
                        remover: Default::default(),
                    };
                    cg.remove();
                    return if is_unavailable(&e) { Ok(None) } else { Err(e) };
                }
            }
        }
        Ok(Some(Cgroup {
            version: Version::V1,
            dirs,
            procs: Vec::new(),
            run: None,
            tasks: None,
            remover: Default::default(),
        }))
    }

    fn configure(mut self, limits: CgroupLimits) -> io::Result<Cgroup> {
        let result = (|| {
            let for_writing = |p: PathBuf| fs::OpenOptions::new().write(true).open(p);
            for dir in &self.dirs {
                self.procs.push(for_writing(dir.join("cgroup.procs"))?);
            }
            if let Some(run) = &mut self.run {
                run.agent_procs = Some(for_writing(run.agent.join("cgroup.procs"))?);
                // Where warden is now: not necessarily the group it started in, which enabling
                // the controllers may have left for its leaf ([`LEAF`]).
                run.origin_procs = own_groups()
                    .into_iter()
                    .find(|(c, _)| c.is_empty())
                    .and_then(|(_, g)| own_dir(&run.mount, &g))
                    .and_then(|d| for_writing(d.join("cgroup.procs")).ok());
            }
            if self.version == Version::V1 {
                let memory = &self.dirs[0];
                if let Some(parent) = memory.parent() {
                    self.tasks = Some((
                        for_writing(memory.join("tasks"))?,
                        for_writing(parent.join("tasks"))?,
                    ));
                }
            }
            match self.version {
                Version::V2 => {
                    // The run's group: the sandbox's and the agent's work for it together.
                    let top = self.run.as_ref().map_or(&self.dirs[0], |r| &r.top);
                    if let Some(m) = limits.memory {
                        write(top, "memory.max", m)?;
                        // Swap is memory too; without this a hog would page out and go on.
                        let _ = write(top, "memory.swap.max", 0);
                    }
                    if let Some(n) = limits.tasks {
                        write(&self.dirs[0], "pids.max", n)?;
                    }
                }
                Version::V1 => {
                    if let Some(m) = limits.memory {
                        write(&self.dirs[0], "memory.limit_in_bytes", m)?;
                        // Absent when the kernel has no swap accounting; then there is no swap
                        // to escape to either.
                        let memsw = self.dirs[0].join("memory.memsw.limit_in_bytes");
                        if memsw.exists() {
                            fs::write(memsw, m.to_string())?;
                        }
                    }
                    if let Some(n) = limits.tasks {
                        write(&self.dirs[1], "pids.max", n)?;
                    }
                }
            }
            Ok(())
        })();
        match result {
            Ok(()) => Ok(self),
            Err(e) => {
                self.remove();
                Err(e)
            }
        }
    }

    /// Which layout is in use.
    pub fn version(&self) -> Version {
        self.version
    }

    /// Moves process `pid` (the sandbox's init, with everything it starts later) into the group.
    ///
    /// Init holds nothing, so it is made the OOM killer's last choice: `oom_score_adj` -1000
    /// where warden may lower it (`CAP_SYS_RESOURCE`), and the program raises its own to 1000
    /// before exec (`launch`) in any case, so a memory kill lands on a process of the program,
    /// never on init (whose death would end the sandbox with no verdict).
    pub fn attach(&self, pid: i32) -> io::Result<()> {
        use std::io::Write;
        for mut f in &self.procs {
            f.write_all(pid.to_string().as_bytes())?;
        }
        let _ = fs::write(format!("/proc/{pid}/oom_score_adj"), "-1000");
        Ok(())
    }

    /// The memory group's `tasks` file, opened for writing, where a *thread* can join the group
    /// on its own: cgroup v1 only (v2 keeps a process's threads together for memory).
    ///
    /// Agent workers join it (issue 18): the kernel charges a socket, an open file or a dentry
    /// to the memory group of the thread that creates it, and the agent creates them for the
    /// sandbox. Their own heap stays charged to warden (user memory follows the process's
    /// leader), and the OOM killer never picks warden (it looks at the group's processes, and
    /// warden's leader is not in it): at the limit, the agent's call fails with the kernel's
    /// ENOMEM, or the OOM killer ends a process of the sandbox.
    pub fn memory_tasks(&self) -> Option<fs::File> {
        self.tasks.as_ref().and_then(|(t, _)| t.try_clone().ok())
    }

    /// cgroup v2: moves warden's whole process (every thread of it) into the run's `agent`
    /// group, beside the sandbox's under the run's memory limit, until [`Cgroup::remove`]: the
    /// sockets, files and dentries the agent creates for the sandbox, and what warden
    /// allocates meanwhile, count against the sandbox's limit as on v1 ([`memory_tasks`]).
    /// At the limit the OOM killer looks in the run's group, where the program's processes
    /// are its first choice (`oom_score_adj` 1000, `launch`) and warden, with init, its last
    /// (-1000, where warden may lower its own: root). The process limit stays on the
    /// sandbox's group alone: warden's threads are not the program's. Call in warden's own
    /// process, after the sandbox is cloned (its init starts in the group warden is in).
    ///
    /// [`memory_tasks`]: Cgroup::memory_tasks
    pub fn charge_agent(&self) -> io::Result<()> {
        use std::io::Write;
        let Some(run) = &self.run else { return Ok(()) };
        let (Some(mut agent), Some(_)) = (run.agent_procs.as_ref(), run.origin_procs.as_ref())
        else {
            return Err(io::Error::other(
                "warden's own cgroup v2 group is not mounted here",
            ));
        };
        agent.write_all(b"0")?;
        run.charged.store(true, std::sync::atomic::Ordering::SeqCst);
        // Once the program's processes are killed, what they held may stay charged a while
        // (40,000 sockets close as the victim exits): a second kill then looked beside them
        // and took warden, and the run ended with no verdict. warden is the OOM killer's last
        // choice in the run's group, as init is, where it may lower its score (root); it goes
        // back to what it was when it leaves the group.
        let before = fs::read(OOM_SCORE_ADJ).ok();
        if fs::write(OOM_SCORE_ADJ, b"-1000").is_ok() {
            if let Ok(mut kept) = run.oom_before.lock() {
                *kept = before;
            }
        }
        Ok(())
    }

    /// Hands the groups' removal to a process that keeps this one's rights
    /// ([`crate::sys::process::spawn_remover`]): call as root before becoming another user
    /// (the policy's `starting_uid`, or uid 65534 without user namespaces), who may not remove
    /// root's groups. Everything else warden does to them later goes through descriptors
    /// opened now. If warden is killed, the remover removes them as the sandbox dies.
    pub fn keep_removable(&self) -> io::Result<()> {
        use std::os::unix::ffi::OsStrExt;
        let dirs = self
            .removal_order()
            .map(|d| std::ffi::CString::new(d.as_os_str().as_bytes()).map_err(io::Error::other))
            .collect::<io::Result<Vec<_>>>()?;
        let remover = crate::sys::process::spawn_remover(&dirs)?;
        *self.remover.lock().unwrap_or_else(|e| e.into_inner()) = Some(remover);
        Ok(())
    }

    /// The groups' directories, children before parents.
    fn removal_order(&self) -> impl Iterator<Item = &PathBuf> {
        let run = self.run.iter().flat_map(|r| [&r.agent, &r.top]);
        self.dirs.iter().rev().chain(run)
    }

    /// CPU time (user+sys) of everything that ran in the group.
    pub fn cpu_time(&self) -> Option<Duration> {
        match self.version {
            Version::V2 => {
                let stat = fs::read_to_string(self.dirs[0].join("cpu.stat")).ok()?;
                let usec = key_value(&stat, "usage_usec")?;
                Some(Duration::from_micros(usec))
            }
            Version::V1 => {
                let ns = read_u64(&self.dirs[2].join("cpuacct.usage"))?;
                Some(Duration::from_nanos(ns))
            }
        }
    }

    /// The group's peak memory use, bytes.
    pub fn peak_memory(&self) -> Option<u64> {
        match self.version {
            Version::V2 => read_u64(&self.memory_dir().join("memory.peak")),
            Version::V1 => read_u64(&self.dirs[0].join("memory.max_usage_in_bytes")),
        }
    }

    /// How many processes the kernel's OOM killer killed in the group.
    pub fn oom_kills(&self) -> Option<u64> {
        let (file, key) = match self.version {
            Version::V2 => ("memory.events", "oom_kill"),
            Version::V1 => ("memory.oom_control", "oom_kill"),
        };
        let text = fs::read_to_string(self.memory_dir().join(file)).ok()?;
        key_value(&text, key)
    }

    /// How many times the group's process limit refused a new process or thread (the `max` of
    /// `pids.events`, on v2 and on v1 kernels that have it; `None` where it is not there).
    pub fn process_limit_hits(&self) -> Option<u64> {
        let dir = match self.version {
            Version::V2 => &self.dirs[0],
            Version::V1 => self.dirs.get(1)?,
        };
        let text = fs::read_to_string(dir.join("pids.events")).ok()?;
        key_value(&text, "max")
    }

    /// Where the memory limit is: the run's group on v2, the sandbox's on v1.
    fn memory_dir(&self) -> &Path {
        self.run.as_ref().map_or(&self.dirs[0], |r| &r.top)
    }

    /// Removes the groups. Call after the sandbox's processes are gone; a group whose last task
    /// is still being torn down is retried for a moment.
    pub fn remove(&self) {
        // A half-made v1 group (its creation failed part way) may have no directory at all.
        use std::io::Write;
        if let (Some((_, parent)), Some(memory)) = (self.tasks.as_ref(), self.dirs.first()) {
            let mut parent = parent;
            // Agent workers that joined the memory group (see `memory_tasks`) go back to the
            // parent group, so it can be removed; their charges leave with the group.
            if let Ok(tasks) = fs::read_to_string(memory.join("tasks")) {
                for tid in tasks.lines() {
                    let _ = parent.write_all(tid.as_bytes());
                }
            }
        }
        if let Some(run) = &self.run {
            if run.charged.swap(false, std::sync::atomic::Ordering::SeqCst) {
                // Back where warden was (its leaf, or the root group), so the run's groups
                // can go.
                if let Some(mut origin) = run.origin_procs.as_ref() {
                    let _ = origin.write_all(b"0");
                }
                // Raising it again needs no privilege.
                let before = run.oom_before.lock().ok().and_then(|mut b| b.take());
                if let Some(before) = before {
                    let _ = fs::write(OOM_SCORE_ADJ, before.trim_ascii());
                }
            }
        }
        let remover = self
            .remover
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(remover) = remover {
            if let Err(left) = remover.remove() {
                let dirs = self
                    .removal_order()
                    .map(|d| warden_policy::escape::escape(d.as_os_str().as_encoded_bytes()));
                eprintln!(
                    "warden: {} of this run's cgroups could not be removed ({}); root's next \
                     run in the same group removes what is left once it is empty",
                    left.map_or("some".to_string(), |n| n.to_string()),
                    dirs.collect::<Vec<_>>().join(", ")
                );
            }
            return;
        }
        for dir in self.removal_order() {
            for _ in 0..50 {
                match fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                        std::thread::sleep(Duration::from_millis(2))
                    }
                    Err(_) => break,
                }
            }
        }
    }
}

/// A group is never left behind: a run that fails before its program starts (a starting
/// directory the view lacks, an agent that cannot start) drops its group on the way out, after
/// the sandbox's init (dropped first) has been killed and reaped. After an ordinary end the
/// group is already gone ([`Cgroup::remove`]) and this costs a failed `rmdir` per directory.
impl Drop for Cgroup {
    fn drop(&mut self) {
        self.remove();
    }
}

/// The controllers a sandbox's v2 group needs enabled by its parent.
const V2_CONTROLLERS: [&str; 2] = ["memory", "pids"];

/// Where warden moves itself, in a group delegated to it, so that the group may hold
/// sandboxes' groups: cgroup v2 lets a group that has processes of its own enable no
/// controller for its children (the "no internal processes" rule). Not `warden-*`, which
/// [`remove_stale`] takes for a sandbox's.
const LEAF: &str = "warden.supervisor";

/// Why `parent` (warden's own v2 group) cannot hold a sandbox's group with memory and pids
/// limits, after enabling them for its children where it may: a group delegated to warden
/// (systemd's `Delegate=yes`, a container's own cgroup, root on a pure v2 host) has them in
/// `cgroup.controllers`, and warden enables them in `cgroup.subtree_control`, first moving
/// the group's processes into a leaf ([`LEAF`]) when warden is the only one or systemd marked
/// the group delegated. A group shared with others and not delegated (a login session's
/// scope, a service of systemd's) is left as it is.
fn enable_controllers(parent: &Path) -> Result<(), String> {
    let read = |file: &str| fs::read_to_string(parent.join(file)).unwrap_or_default();
    let missing = |list: &str| -> Vec<&'static str> {
        V2_CONTROLLERS
            .into_iter()
            .filter(|c| !list.split_whitespace().any(|w| w == *c))
            .collect()
    };
    if missing(&read("cgroup.subtree_control")).is_empty() {
        return Ok(());
    }
    let absent = missing(&read("cgroup.controllers"));
    if !absent.is_empty() {
        return Err(format!(
            "warden's cgroup {} has no {} controller delegated to it",
            parent.display(),
            absent.join(" or ")
        ));
    }
    let enable = || fs::write(parent.join("cgroup.subtree_control"), "+memory +pids");
    match enable() {
        Ok(()) => return Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
        Err(e) => {
            return Err(format!(
                "cannot enable memory and pids for the children of warden's cgroup {}: {e}",
                parent.display()
            ))
        }
    }
    let me = std::process::id().to_string();
    let others = read("cgroup.procs")
        .lines()
        .filter(|p| p.trim() != me)
        .count();
    // Others' processes move only where the group is the user's to arrange: systemd marks a
    // group it delegates (`Delegate=yes`); a group it manages itself it would rearrange.
    if others > 0 && !delegated(parent) {
        return Err(format!(
            "warden's cgroup {} holds {others} other process{} and is not delegated (cgroup v2 \
             lets a group with processes of its own limit no child)",
            parent.display(),
            if others == 1 { "" } else { "es" }
        ));
    }
    let leaf = parent.join(LEAF);
    let moved = match fs::create_dir(&leaf) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
    .and_then(|()| move_all(parent, &leaf))
    .and_then(|()| enable());
    moved.map_err(|e| {
        format!(
            "cannot move the processes of warden's cgroup {} into {} to limit its children: {e}",
            parent.display(),
            leaf.display()
        )
    })
}

/// The group whose children the sandboxes' groups are, for warden in the v2 group `own`: the
/// group itself, or, when an earlier warden moved it into the [`LEAF`] of a group, that group.
fn v2_parent(own: PathBuf) -> PathBuf {
    match (own.file_name(), own.parent()) {
        (Some(name), Some(up)) if name == LEAF => up.to_path_buf(),
        _ => own,
    }
}

/// Whether systemd delegated the group at `dir` (`Delegate=yes`): it marks such a group with
/// the extended attribute `trusted.delegate` (system units) or `user.delegate` (a user's).
fn delegated(dir: &Path) -> bool {
    ["trusted.delegate", "user.delegate"].iter().any(|name| {
        let mut value = [0u8; 8];
        matches!(rustix::fs::getxattr(dir, *name, &mut value), Ok(n) if value[..n] == *b"1")
    })
}

/// Moves every process of the group `from` into `to`, warden's own first; a process forked
/// meanwhile lands in `from` and is moved on the next round.
fn move_all(from: &Path, to: &Path) -> io::Result<()> {
    // "0": the writer's whole process, every thread of it.
    fs::write(to.join("cgroup.procs"), "0")?;
    for _ in 0..100 {
        let pids = fs::read_to_string(from.join("cgroup.procs"))?;
        if pids.trim().is_empty() {
            return Ok(());
        }
        for pid in pids.lines() {
            match fs::write(to.join("cgroup.procs"), pid.trim()) {
                // Gone meanwhile.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                r => r?,
            }
        }
    }
    Err(io::Error::other("its processes kept forking"))
}

/// Why no cgroup can bound a sandbox's memory and processes here, in a sentence for the user;
/// `None` when one can (or no cgroup is mounted at all, which [`Cgroup::create`] says by
/// itself). Looked at only after [`Cgroup::create`] found none.
pub fn why_none() -> String {
    let mounts = mounts();
    let groups = own_groups();
    let v2 = mounts.iter().find(|m| m.v2);
    let v2_group = groups.iter().find(|(c, _)| c.is_empty());
    let v2_reason = match (v2, v2_group) {
        (Some(m), Some((_, group))) => match own_dir(m, group).map(v2_parent) {
            Some(parent) => enable_controllers(&parent).err(),
            None => Some("warden's cgroup v2 group is outside the mounted hierarchy".into()),
        },
        _ => None,
    };
    let has_v1 = mounts.iter().any(|m| !m.v2);
    match (v2_reason, has_v1) {
        (Some(why), _) => why,
        (None, true) => "the memory, pids and cpuacct cgroup v1 hierarchies are not all mounted \
                         and writable by warden"
            .into(),
        (None, false) => "no cgroup file system is mounted".into(),
    }
}

fn write(dir: &Path, file: &str, value: u64) -> io::Result<()> {
    fs::write(dir.join(file), value.to_string()).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot set {}/{file}: {e}", dir.display()),
        )
    })
}

fn read_u64(path: &Path) -> Option<u64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The value of `key` in a "key value" per line file.
fn key_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// Errors that mean "no cgroups for us here" rather than "something broke".
fn is_unavailable(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EACCES) | Some(libc::EPERM) | Some(libc::EROFS) | Some(libc::ENOENT)
    )
}

/// Removes empty groups left by warden processes that were killed before cleaning up.
fn remove_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix("warden-")) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            // Fails harmlessly (EBUSY) if processes are still inside. A v2 run's group goes
            // with its two children.
            for child in ["sandbox", "agent"] {
                let _ = fs::remove_dir(entry.path().join(child));
            }
            let _ = fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes() {
        assert_eq!(unescape("/a\\040b"), "/a b");
        assert_eq!(unescape("/plain"), "/plain");
        assert_eq!(unescape("/trailing\\"), "/trailing\\");
    }

    #[test]
    fn key_values() {
        let t = "usage_usec 1234\nuser_usec 1000\noom_kill 2\n";
        assert_eq!(key_value(t, "usage_usec"), Some(1234));
        assert_eq!(key_value(t, "oom_kill"), Some(2));
        assert_eq!(key_value(t, "missing"), None);
    }

    #[test]
    fn own_dir_strips_the_mount_root() {
        let m = Mount {
            point: "/sys/fs/cgroup/memory".into(),
            root: "/".into(),
            v2: false,
            options: "rw,memory".into(),
        };
        assert_eq!(
            own_dir(&m, "/a/b"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/a/b"))
        );
        let m = Mount {
            root: "/a".into(),
            ..m
        };
        assert_eq!(
            own_dir(&m, "/a/b"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/b"))
        );
        assert_eq!(own_dir(&m, "/c"), None);
    }
}
