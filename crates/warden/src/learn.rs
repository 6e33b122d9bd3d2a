//! `warden learn`: turning what a run did into a policy that allows exactly that.
//!
//! The run itself is an ordinary `warden run` under a policy that allows every access, with the
//! decision log on ([`crate::agent::log`]), which records each decision as a typed, bounded
//! [`Observation`] ([`Observations`]); this module turns them into the policy's text
//! ([`learn`]; a `--log` file is read back with [`parse_log`]). Pure: observations in, policy
//! text out.
//!
//! What the learned policy contains, for each access the run made that the base policy (the one
//! it will be used with) does not already allow:
//! - a path opened, created, removed or executed: `path-allow ACCESS PATH`; when one directory
//!   had [`COLLAPSE_AT`] or more entries used with the same access, `path-allow ACCESS DIR/*`
//!   (never for `/`, the home directory or what holds it, nor over a path the default policy
//!   denies that the base does not), and no rule such a `DIR/*` already covers: a tree walk
//!   is `D` and `D/*`;
//! - a path written that is there after the run (and the source of a rename): `read` too, as
//!   the next run reads back what this one left;
//! - a path only looked at (stat, access, readlink, chdir, statfs, xattrs): `path-allow read`,
//!   unless another learned rule already makes it visible (a directory on the way to one);
//! - a TCP or UDP peer connected or sent to: `net-allow outgoing PROTO ADDR PORT`; a connection
//!   accepted: `net-allow incoming PROTO PEER PORT`; a port bound with no connection seen:
//!   `net-allow incoming PROTO 0/0 PORT`; a unix socket: `net-allow DIR unix-domain PATH`.
//!
//! Every line carries a comment saying which calls produced it, and risky grants get a
//! `WARNING` line above them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use warden_policy::escape::escape;
use warden_policy::{Access, PathPattern, Policy};

/// A directory with this many entries used with one access becomes a `DIR/*` rule.
pub const COLLAPSE_AT: usize = 5;

pub use crate::agent::log::{Observation, Observations};

/// Reads a decision log (JSON lines, schema 1, `warden run --log`). Lines that are not
/// decisions are skipped.
pub fn parse_log(text: &str) -> Observations {
    let mut out = Observations::default();
    for v in text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
    {
        let (Some(syscall), Some(target), Some(decision)) = (
            v["syscall"].as_str(),
            v["target"].as_str(),
            v["decision"].as_str(),
        ) else {
            continue;
        };
        let access = v["access"].as_str().and_then(Access::from_name);
        out.record(syscall, target, access, decision == "allow");
    }
    out
}

/// Calls that only look at a path (they need it visible, not a particular right).
const LOOKING: [&str; 16] = [
    "stat",
    "lstat",
    "newfstatat",
    "statx",
    "access",
    "faccessat",
    "faccessat2",
    "readlink",
    "readlinkat",
    "chdir",
    "statfs",
    "getxattr",
    "lgetxattr",
    "listxattr",
    "llistxattr",
    "inotify_add_watch",
];

/// Whether `syscall` only looks at a path (needs it visible, not a particular right).
pub fn is_lookup(syscall: &str) -> bool {
    LOOKING.contains(&syscall)
}

/// The programs the kernel itself opens to run `program`, which the agent never sees: the
/// interpreter of a `#!` script and the ELF interpreter (dynamic loader), recursively. `read`
/// gives a file's first bytes (the ELF headers fit in 4 KiB), or `None`.
pub fn interpreters(program: &str, read: &dyn Fn(&str) -> Option<Vec<u8>>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut next = vec![program.to_owned()];
    while let Some(p) = next.pop() {
        if out.len() > 8 {
            break;
        }
        let Some(head) = read(&p) else { continue };
        let found = if let Some(rest) = head.strip_prefix(b"#!") {
            let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
            let text = String::from_utf8_lossy(line);
            text.split_whitespace().next().map(str::to_owned)
        } else {
            elf_interpreter(&head)
        };
        if let Some(i) = found.filter(|i| i.starts_with('/') && !out.contains(i)) {
            out.push(i.clone());
            next.push(i);
        }
    }
    out
}

/// `PT_INTERP` of a 64-bit little-endian ELF file, from its first bytes.
fn elf_interpreter(head: &[u8]) -> Option<String> {
    if head.len() < 64 || &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| Some(u16::from_le_bytes(head.get(o..o + 2)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(head.get(o..o + 8)?.try_into().ok()?));
    let (phoff, phentsize, phnum) = (u64_at(32)? as usize, u16_at(54)? as usize, u16_at(56)?);
    for i in 0..phnum as usize {
        let ph = phoff + i * phentsize;
        let kind = u32::from_le_bytes(head.get(ph..ph + 4)?.try_into().ok()?);
        if kind == 3 {
            let (off, size) = (u64_at(ph + 8)? as usize, u64_at(ph + 32)? as usize);
            let raw = head.get(off..off + size)?;
            let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            return Some(String::from_utf8_lossy(&raw[..end]).into_owned());
        }
    }
    None
}

/// What the learning run is checked against.
pub struct Context<'a> {
    /// The policy the learned one will be added to (with `$SCRATCH` expanded as in the run).
    pub base: &'a Policy,
    /// The user's home directory, for warnings.
    pub home: Option<&'a str>,
    /// The program and its arguments, for the header.
    pub command: &'a str,
    /// Whether a path exists now: a lookup of a path that does not needs no rule (it failed
    /// while learning, and fails without a rule too, only with `EACCES` for `ENOENT`).
    pub exists: &'a dyn Fn(&str) -> bool,
    /// The learning run's scratch directory: paths in it are written `$SCRATCH/...` (the next
    /// run's has another name).
    pub scratch: Option<&'a str>,
    /// Where a path leads when it is a symlink now (every link on the way followed; `Some("")`
    /// when it leads nowhere), `None` when it is not one.
    pub link_target: &'a dyn Fn(&str) -> Option<String>,
}

/// One rule to write, with what produced it.
#[derive(Default)]
struct Grant {
    calls: BTreeMap<String, usize>,
    warnings: BTreeSet<String>,
    /// Why a directory rule stands for several paths.
    note: Option<String>,
    /// How many of the paths the run used a directory rule stands for (0: itself only).
    stands_for: usize,
}

impl Grant {
    fn add(&mut self, call: &str, times: u64) {
        *self.calls.entry(call.to_owned()).or_default() += times as usize;
    }
}

/// What a learning run used, sorted into what the policy will say.
#[derive(Default)]
struct Uses {
    /// Paths used, by access.
    paths: BTreeMap<Access, BTreeMap<String, Grant>>,
    /// Paths only looked at.
    looked: BTreeMap<String, Grant>,
    /// Paths no policy line can name.
    unexpressible: BTreeSet<String>,
    /// Lookups of paths that do not exist (PATH searches, probes).
    absent: BTreeSet<String>,
    /// Network rules.
    net: BTreeMap<String, Grant>,
}

/// The learned policy, as text: `observations` are each distinct decision of the learning run
/// with how many times it was made ([`Observations::counted`]).
pub fn learn(observations: &[(Observation, u64)], cx: &Context<'_>) -> String {
    let observations = leading_somewhere(observations, cx);
    let uses = gather(&observations, cx);
    let mut lines = path_lines(&uses, cx);
    warn(&mut lines, cx);
    render(cx, lines, &uses)
}

/// `observations` without the symlinks that led nowhere the run used. The agent decides every
/// link it follows (a view holds a link only where a rule names it), so a followed link is
/// learned where the run used what it leads to (`/lib` on the way to the libraries), and not
/// where it led to a name that does not exist (`/var/run` on the way to an absent nscd socket:
/// the lookup fails the same without a rule).
fn leading_somewhere(
    observations: &[(Observation, u64)],
    cx: &Context<'_>,
) -> Vec<(Observation, u64)> {
    // Looked at on the way (read); a link run (the program, its interpreter) is always kept:
    // the kernel, not the agent, opens what it leads to.
    let links: BTreeMap<&str, String> = observations
        .iter()
        .filter(|(o, _)| o.access == Some(Access::Read))
        .filter_map(|(o, _)| Some((o.target.as_str(), (cx.link_target)(&o.target)?)))
        .collect();
    // What the run reached (links on the way to more, too: `/lib64` leads to the link
    // `/usr/lib64/ld-linux-x86-64.so.2`).
    let used: Vec<&str> = observations
        .iter()
        .filter(|(o, _)| o.allowed && o.access.is_some())
        .map(|(o, _)| o.target.as_str())
        .filter(|t| (cx.exists)(t))
        .collect();
    let leads = |link: &str, to: &str| {
        !to.is_empty()
            && used
                .iter()
                .any(|u| *u != link && (*u == to || beneath(u, to)))
    };
    observations
        .iter()
        .filter(|(o, _)| match links.get(o.target.as_str()) {
            Some(to) if o.access == Some(Access::Read) => leads(&o.target, to),
            _ => true,
        })
        .cloned()
        .collect()
}

/// Sorts the allowed decisions into [`Uses`], leaving out what the base policy allows.
fn gather(observations: &[(Observation, u64)], cx: &Context<'_>) -> Uses {
    let mut uses = Uses::default();
    let mut bound: BTreeMap<(String, u16), Grant> = BTreeMap::new();
    let mut accepted_ports: BTreeSet<(String, u16)> = BTreeSet::new();
    for (o, times) in observations.iter().filter(|(o, _)| o.allowed) {
        if let Some(access) = o.access {
            path_use(&mut uses, o, access, *times, cx);
            continue;
        }
        if let Some((rule, port)) = net_rule(o) {
            if let Some(port) = port {
                bound.entry(port).or_default().add(&o.syscall, *times);
            } else {
                if o.syscall.starts_with("accept") {
                    if let Some(p) = accepted_port(&o.target) {
                        accepted_ports.insert(p);
                    }
                }
                uses.net.entry(rule).or_default().add(&o.syscall, *times);
            }
        }
    }
    for ((proto, port), grant) in bound {
        if !accepted_ports.contains(&(proto.clone(), port)) {
            uses.net
                .insert(format!("net-allow incoming {proto} 0/0 {port}"), grant);
        }
    }
    uses
}

/// Records one allowed path decision `o` (made `times` times) in `uses`.
fn path_use(uses: &mut Uses, o: &Observation, access: Access, times: u64, cx: &Context<'_>) {
    let base = cx.base;
    if !o.target.starts_with('/') {
        return;
    }
    if !PathPattern::names_exactly(&o.target) {
        uses.unexpressible.insert(o.target.clone());
        return;
    }
    // An exec of a name that is not there is a PATH search (execvp tries each directory), as
    // a lookup of one is.
    let probe = LOOKING.contains(&o.syscall.as_str()) || access == Access::Exec;
    // The scratch directory is gone after the run: what was in it cannot be looked for.
    let in_scratch = cx
        .scratch
        .is_some_and(|s| scratch_relative(&o.target, s).is_some());
    if probe && !in_scratch && !(cx.exists)(&o.target) {
        uses.absent.insert(o.target.clone());
        return;
    }
    // Per-run names (a temporary directory, a random suffix) as the pattern every run's name
    // matches; the scratch directory as `$SCRATCH` (its own name is per run too).
    let target = cx
        .scratch
        .and_then(|s| scratch_relative(&o.target, s))
        .unwrap_or_else(|| o.target.clone());
    // A path the command itself names (the program, an argument) is the same in every run of
    // that command: learned as it is, never widened to a pattern.
    let named = cx.command.split_whitespace().any(|w| w == o.target);
    let per_run = !named && (in_scratch || access != Access::Read || !(cx.exists)(&o.target));
    let target = match per_run.then(|| generalised(&target)).flatten() {
        // The sandbox's own shared memory starts empty in every run: what is in it is made
        // by the run (semaphores, segments with made-up names).
        _ if beneath(&target, SHM) => format!("{SHM}/*"),
        // A temporary file mkstemp made: new entries in its directory.
        Some(_) if access == Access::Write && made_up_name(&target) => {
            format!("{}/*", parent(&target))
        }
        Some(pattern) => pattern,
        // The run made what it runs in its scratch directory: the next run's file does not
        // exist when the sandbox is built, and Landlock can only be told about its directory
        // (which warden makes for a `DIR/*` exec rule before it starts).
        None if in_scratch && access == Access::Exec => format!("{}/*", parent(&target)),
        None => target,
    };
    // `access(R_OK|W_OK|X_OK)` asks for the right itself (the agent checks each bit asked), so
    // it is a use of that right, not a look.
    let asks = o.syscall.starts_with("access") || o.syscall.starts_with("faccessat");
    if LOOKING.contains(&o.syscall.as_str()) && !asks {
        if base.visible(&o.target).is_none() && !base.may_traverse(&o.target) {
            uses.looked
                .entry(target)
                .or_default()
                .add(&o.syscall, times);
        }
    } else if !base.check(&o.target, access).is_allowed() {
        // What the run wrote and left behind, the next run finds and reads (a lock file, a
        // build's fingerprints, a cache): the same name, or the same per-run pattern, is
        // learned readable too. Not what is gone after the run (a temporary file, anything
        // in the scratch directory), not a directory's `DIR/*` made for a temporary file
        // (that would read every name in it), nor what the base denies. What a rename moved
        // (`target.tmpXYZ` to `target`) is readable as well: a rename may not give its
        // destination a right its source lacks, and the destination is read back.
        let left = access == Access::Write && (cx.exists)(&o.target);
        let moved = access == Access::Unlink && o.syscall.starts_with("rename");
        // What it runs, the kernel reads (and an interpreter reads a script): learned readable
        // too, which is how Landlock's execute right comes, so that the kernel can hold the
        // rule; not a pattern, which would read more than what ran.
        let ran = access == Access::Exec && !target.ends_with('*');
        let read_back = (left || moved || ran)
            && !in_scratch
            && !target.ends_with("/*")
            && !base.check(&o.target, Access::Read).is_allowed()
            && !is_denied_by(base, &o.target);
        if read_back {
            let why = if moved {
                "moved"
            } else if ran {
                "run"
            } else {
                "written"
            };
            uses.paths
                .entry(Access::Read)
                .or_default()
                .entry(target.clone())
                .or_default()
                .add(&format!("{} ({why})", o.syscall), times);
        }
        uses.paths
            .entry(access)
            .or_default()
            .entry(target)
            .or_default()
            .add(&o.syscall, times);
    }
}

/// The path rules: a directory with [`COLLAPSE_AT`] or more entries used with one access as
/// `DIR/*` where [`widens_safely`] allows, without the rules such a `DIR/*` (or any other
/// learned prefix) already covers, then `read` for what was only looked at and no other rule
/// makes visible.
fn path_lines(uses: &Uses, cx: &Context<'_>) -> Vec<(String, Grant)> {
    let mut lines: Vec<(String, Grant)> = Vec::new();
    for (access, paths) in &uses.paths {
        let mut by_dir: BTreeMap<String, Vec<&String>> = BTreeMap::new();
        for p in paths.keys() {
            by_dir.entry(parent(p).to_owned()).or_default().push(p);
        }
        let mut rules: Vec<(String, Grant)> = Vec::new();
        for (dir, entries) in by_dir {
            if entries.len() >= COLLAPSE_AT && widens_safely(&dir, cx) {
                let mut g = Grant {
                    note: Some(format!("{} entries of {dir}", entries.len())),
                    stands_for: entries.len(),
                    ..Grant::default()
                };
                for e in &entries {
                    for (c, n) in &paths[*e].calls {
                        *g.calls.entry(c.clone()).or_default() += n;
                    }
                }
                rules.push((format!("{dir}/*"), g));
            } else {
                for e in entries {
                    let mut g = Grant::default();
                    g.calls.clone_from(&paths[e].calls);
                    rules.push((e.clone(), g));
                }
            }
        }
        let mut kept = without_covered(rules);
        if *access == Access::Read {
            // Reading `D/*` lets `D` be listed too (`PathPattern::is_tree_of`): a rule for `D`
            // alone would say nothing more.
            let trees: Vec<String> = kept
                .iter()
                .filter_map(|(p, _)| p.strip_suffix("/*").map(str::to_owned))
                .collect();
            kept.retain(|(p, _)| !trees.contains(p));
        }
        for (path, g) in kept {
            lines.push((format!("path-allow {access} {path}"), g));
        }
    }
    // The learned path rules so far, to know what they already make visible.
    let mut learned = Policy::default();
    for (rule, _) in &lines {
        if let Ok(p) = Policy::parse("<learned>", &format!("{rule}\n")) {
            learned.merge(p);
        }
    }
    for (path, grant) in &uses.looked {
        if learned.visible(path).is_none() && !learned.may_traverse(path) {
            let mut g = Grant::default();
            g.calls.clone_from(&grant.calls);
            lines.push((format!("path-allow read {path}"), g));
        }
    }
    lines
}

/// `rules` (paths and prefixes of one access) without those another one's prefix covers (a
/// tree walk's `D/*` makes every rule beneath `D` say nothing more): each is folded into the
/// shortest prefix that covers it, which says how many it stands for. Never wider than
/// `rules`: a rule is only dropped where another matches every path it matches.
fn without_covered(mut rules: Vec<(String, Grant)>) -> Vec<(String, Grant)> {
    // Shortest first: the first prefix that covers a rule is the shortest one, and is not
    // itself covered (what would cover it covers the rule too, and is shorter).
    rules.sort_by(|a, b| a.0.len().cmp(&b.0.len()).then_with(|| a.0.cmp(&b.0)));
    let mut kept: Vec<(String, Grant, usize)> = Vec::new();
    for (path, grant) in rules {
        let stands_for = grant.stands_for.max(1);
        let literal = path.strip_suffix('*').unwrap_or(&path);
        let cover = kept.iter_mut().find(|(p, _, _)| {
            p.strip_suffix('*')
                .is_some_and(|prefix| *p != path && literal.starts_with(prefix))
        });
        match cover {
            Some((_, g, folded)) => {
                *folded += stands_for;
                for (c, n) in grant.calls {
                    *g.calls.entry(c).or_default() += n;
                }
            }
            None => kept.push((path, grant, 0)),
        }
    }
    kept.into_iter()
        .map(|(path, mut g, folded)| {
            let note = match (g.note.take(), folded) {
                (Some(n), 0) => format!("{n}:"),
                (Some(n), f) => format!("{n}, and {f} paths beneath them:"),
                (None, 0) => return (path, g),
                (None, f) => format!("{f} paths beneath it:"),
            };
            g.note = Some(note);
            (path, g)
        })
        .collect()
}

/// Whether a learned `DIR/*` may stand for the entries of `dir` used: not for `/`, the home
/// directory or a directory that holds it (where the secrets no policy lists live: keys,
/// tokens, histories), and not over a path the default policy denies (its credential paths)
/// unless the base denies it too, so that the learned rule reaches none of them even when
/// the base is not the default. The base's own `path-deny` rules beneath `dir` stay in force
/// (a denial wins over any allow rule).
fn widens_safely(dir: &str, cx: &Context<'_>) -> bool {
    if dir == "/" || !dir.starts_with(['/', '$']) {
        return false;
    }
    if let Some(home) = cx.home.map(|h| h.trim_end_matches('/')) {
        if home.is_empty() || home == dir || beneath(home, dir) {
            return false;
        }
    }
    let default = Policy::default_policy();
    default
        .path_rules()
        .iter()
        .filter(|r| r.access.is_none() && r.pattern.matches_some_beneath(dir))
        .all(|r| {
            // A path the rule denies, as the base's own check sees it.
            let probe = if r.pattern.is_prefix() {
                format!("{}x", r.pattern.literal())
            } else {
                r.pattern.literal().to_owned()
            };
            is_denied_by(cx.base, &probe)
        })
}

/// Marks the risky grants: writes in the user's home, exec where the program may also write,
/// reads of what the default policy carves out.
fn warn(lines: &mut [(String, Grant)], cx: &Context<'_>) {
    let writable: Vec<String> = lines
        .iter()
        .filter(|(r, _)| r.starts_with("path-allow write "))
        .map(|(r, _)| r["path-allow write ".len()..].to_owned())
        .collect();
    let default = Policy::default_policy();
    for (rule, grant) in lines.iter_mut() {
        let Some((kind, path)) = rule
            .strip_prefix("path-allow ")
            .and_then(|r| r.split_once(' '))
        else {
            continue;
        };
        let literal = path.trim_end_matches('*');
        if kind == "write" {
            if let Some(home) = cx.home.filter(|h| !h.is_empty() && *h != "/") {
                if literal == home || literal.starts_with(&format!("{home}/")) {
                    grant
                        .warnings
                        .insert(format!("writes in your home directory ({home})"));
                }
            }
        }
        if kind == "exec" && writable.iter().any(|w| covers(w, literal)) {
            grant
                .warnings
                .insert("executes from a place it may also write".into());
        }
        if kind == "read" && is_denied_by(&default, literal) {
            grant.warnings.insert(
                "a secret the default policy denies (path-deny); it stays denied unless you \
                 run with --default-policy=no"
                    .into(),
            );
        }
    }
}

/// The policy text: a header, the path rules (each with the calls that needed it and its
/// warnings), the network rules, then what needs no rule or cannot be written.
fn render(cx: &Context<'_>, mut lines: Vec<(String, Grant)>, uses: &Uses) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Learned by `warden learn` from: {}",
        escape(cx.command)
    );
    let _ = writeln!(
        out,
        "# Each rule says which calls needed it. Review the WARNING lines before using it."
    );
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(map) = shm_map(&lines, cx.base) {
        let _ = writeln!(out, "{map}");
    }
    for (rule, grant) in &lines {
        for w in grant.warnings.iter().filter(|w| !w.is_empty()) {
            let _ = writeln!(out, "# WARNING: {w}");
        }
        let _ = writeln!(out, "{rule}    # {}", grant_comment(grant));
    }
    for (rule, grant) in &uses.net {
        let _ = writeln!(out, "{rule}    # {}", grant_comment(grant));
    }
    if !uses.absent.is_empty() {
        let _ = writeln!(
            out,
            "# {} lookups of paths that do not exist need no rule (PATH searches and probes)",
            uses.absent.len()
        );
    }
    for path in &uses.unexpressible {
        let _ = writeln!(
            out,
            "# not expressible (whitespace, a control character, `#`, `*` or `$` in the name): {}",
            escape(path)
        );
    }
    out
}

/// `path` with its first per-run name (`tmp.oRf4Zw`, `tmpk3j2_x9a`, `foo-1a2b3c4d`) cut back
/// to the stem every run's name shares, as a name-prefix pattern (`/tmp/tmp.*`): what a
/// temporary directory or a build hash needs in the next run too. `None` when no name looks
/// made up.
pub fn generalised(path: &str) -> Option<String> {
    let mut at = 0;
    for name in path.split('/') {
        if let Some(stem) = per_run_stem(name) {
            return Some(format!("{}{stem}*", &path[..at]));
        }
        at += name.len() + 1;
    }
    None
}

/// The stem of a name that ends in a made-up part: `tmp` (and one `.`, `-` or `_` after it)
/// before six or more letters, digits or `_` (mktemp, Python's tempfile); or, after the name's
/// first `.`, `-` or `_` that starts one, six or more letters and digits with both a digit and
/// a letter.
fn per_run_stem(name: &str) -> Option<&str> {
    let word = |tail: &str, underscore: bool| {
        tail.len() >= 6
            && tail
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || (underscore && b == b'_'))
    };
    if let Some(tail) = name.strip_prefix("tmp") {
        let random = tail.trim_start_matches(['.', '-', '_']);
        if tail.len() - random.len() <= 1 && word(random, true) {
            // `_` is one of the letters of Python's `tempfile` names (`tmp` and 8 of
            // `[a-z0-9_]`): after `tmp` it may be the first random one, so the stem is `tmp`.
            let stem = if tail.starts_with('_') {
                3
            } else {
                name.len() - random.len()
            };
            return Some(&name[..stem]);
        }
    }
    if let Some(stem) = mkstemp_stem(name) {
        return Some(stem);
    }
    // Each part after a `.`, `-` or `_`, from the left: the first made-up one ends the stem.
    let mut start = 0;
    for (i, b) in name.bytes().enumerate().chain([(name.len(), b'.')]) {
        if matches!(b, b'.' | b'-' | b'_') {
            let part = &name[start..i];
            let mixed = part.bytes().any(|b| b.is_ascii_digit())
                && part.bytes().any(|b| b.is_ascii_alphabetic());
            if start > 1 && word(part, false) && mixed {
                return Some(&name[..start]);
            }
            start = i + 1;
        }
    }
    None
}

/// The stem of a name mkstemp made from `PREFIXXXXXXX`: a short lowercase stem, then six
/// made-up letters and digits with a capital among them (gcc's `ccFcao2V.o`).
fn mkstemp_stem(name: &str) -> Option<&str> {
    let base = name.split('.').next().unwrap_or(name);
    if !(7..=14).contains(&base.len()) || !base.is_ascii() {
        return None;
    }
    let (stem, random) = base.split_at(base.len() - 6);
    (stem.bytes().all(|b| b.is_ascii_lowercase())
        && random.bytes().all(|b| b.is_ascii_alphanumeric())
        && random.bytes().any(|b| b.is_ascii_uppercase())
        && random
            .bytes()
            .any(|b| b.is_ascii_digit() || b.is_ascii_lowercase()))
    .then_some(stem)
}

/// `target`'s final name is one mkstemp made: a program that makes its temporary files with
/// mkstemp in a directory asks first whether it may make entries there (gcc's
/// `access(DIR, W_OK)`), which only a tree rule on the directory allows.
fn made_up_name(target: &str) -> bool {
    target
        .rsplit_once('/')
        .is_some_and(|(_, name)| mkstemp_stem(name).is_some())
}

/// Where POSIX shared memory and semaphores live: in the sandbox, a private tmpfs
/// (`path-map tmpfs /dev/shm`, as the default policy has it).
const SHM: &str = "/dev/shm";

/// `path` lies strictly beneath `dir`.
fn beneath(path: &str, dir: &str) -> bool {
    path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

/// The `path-map tmpfs /dev/shm` line the learned rules need when they name anything in
/// `/dev/shm` and the base has no such map: a program's shared memory is private to the
/// sandbox (a view cannot show rules beneath `/dev` otherwise, and the host's must not be
/// handed over).
fn shm_map(lines: &[(String, Grant)], base: &Policy) -> Option<&'static str> {
    let named = lines.iter().any(|(rule, _)| {
        rule.rsplit_once(' ')
            .is_some_and(|(_, p)| p == SHM || beneath(p, SHM))
    });
    let mapped = base.maps().iter().any(|m| m.sandbox == SHM);
    (named && !mapped).then_some(
        "path-map tmpfs /dev/shm    # the sandbox's own shared memory (never the host's)",
    )
}

/// `path` (or a pattern) in the scratch directory `scratch`, written `$SCRATCH/...`.
fn scratch_relative(path: &str, scratch: &str) -> Option<String> {
    let rest = path.strip_prefix(scratch.trim_end_matches('/'))?;
    (rest.is_empty() || rest.starts_with('/')).then(|| format!("$SCRATCH{rest}"))
}

fn grant_comment(g: &Grant) -> String {
    let calls: Vec<String> = g
        .calls
        .iter()
        .map(|(c, n)| {
            if *n > 1 {
                format!("{c} x{n}")
            } else {
                c.clone()
            }
        })
        .collect();
    match &g.note {
        Some(note) => format!("{note} {}", calls.join(", ")),
        None => calls.join(", "),
    }
}

fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// Whether write pattern `w` (a path, or a prefix ending in `/` after `*` was trimmed) covers
/// `path`.
fn covers(w: &str, path: &str) -> bool {
    match w.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => w == path || path.starts_with(&format!("{w}/")),
    }
}

fn is_denied_by(p: &Policy, path: &str) -> bool {
    matches!(
        p.check(path, Access::Read),
        warden_policy::Verdict::Denied(warden_policy::Denial::DeniedBy(_))
    )
}

/// The rule for a network observation; for a bind, instead the (protocol, port) bound.
#[allow(clippy::type_complexity)]
fn net_rule(o: &Observation) -> Option<(String, Option<(String, u16)>)> {
    let (proto, rest) = o.target.split_once(' ')?;
    if proto == "unix" {
        let dir = if o.syscall == "bind" {
            "incoming"
        } else {
            "outgoing"
        };
        return PathPattern::names_exactly(rest)
            .then(|| (format!("net-allow {dir} unix-domain {rest}"), None));
    }
    if proto != "tcp" && proto != "udp" {
        return None;
    }
    let endpoint = rest.split(" to local port ").next()?;
    let addr: std::net::SocketAddr = endpoint.parse().ok()?;
    if o.syscall == "bind" {
        return Some((String::new(), Some((proto.to_owned(), addr.port()))));
    }
    if o.syscall.starts_with("accept") {
        let local: u16 = rest.split(" to local port ").nth(1)?.parse().ok()?;
        return Some((
            format!("net-allow incoming {proto} {} {local}", addr.ip()),
            None,
        ));
    }
    Some((
        format!("net-allow outgoing {proto} {} {}", addr.ip(), addr.port()),
        None,
    ))
}

fn accepted_port(target: &str) -> Option<(String, u16)> {
    let (proto, rest) = target.split_once(' ')?;
    let local: u16 = rest.split(" to local port ").nth(1)?.parse().ok()?;
    Some((proto.to_owned(), local))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(syscall: &str, target: &str, access: Option<Access>) -> Observation {
        Observation {
            syscall: syscall.into(),
            target: target.into(),
            access,
            allowed: true,
        }
    }

    fn once(o: &[Observation]) -> Vec<(Observation, u64)> {
        o.iter().map(|o| (o.clone(), 1)).collect()
    }

    fn learned(o: &[Observation]) -> String {
        let base = Policy::default_policy().expand_scratch("/tmp/s");
        let counted: Vec<(Observation, u64)> = o.iter().map(|o| (o.clone(), 1)).collect();
        learn(
            &counted,
            &Context {
                base: &base,
                home: Some("/home/u"),
                command: "prog",
                exists: &|p| !p.contains("absent"),
                scratch: Some("/tmp/s"),
                link_target: &|p| match p {
                    "/lnk" => Some("/usr/lib".into()),
                    "/var/run" => Some("/run".into()),
                    _ => None,
                },
            },
        )
    }

    fn rules(text: &str) -> Vec<String> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split("    #").next().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn links_are_learned_where_they_lead_to_what_was_used() {
        let text = learned(&[
            obs("openat", "/lnk", Some(Access::Read)),
            obs("openat", "/usr/lib/libz.so.1.2", Some(Access::Read)),
            // On the way to a socket that is not there (the agent records no use of it).
            obs("connect", "/var/run", Some(Access::Read)),
        ]);
        assert_eq!(rules(&text), ["path-allow read /lnk"], "{text}");
    }

    #[test]
    fn shared_memory_is_learned_as_the_sandboxs_own() {
        let base = Policy::default();
        let o = once(&[
            obs("openat", "/dev/shm/sem.Xa3kQz", Some(Access::Write)),
            obs("link", "/dev/shm/sem.mp-1", Some(Access::Read)),
            obs("unlink", "/dev/shm/sem.mp-1", Some(Access::Unlink)),
        ]);
        let cx = |base| Context {
            base,
            home: None,
            command: "prog",
            exists: &|_| false,
            scratch: None,
            link_target: &|_| None,
        };
        let text = learn(&o, &cx(&base));
        assert_eq!(
            rules(&text),
            [
                "path-map tmpfs /dev/shm",
                "path-allow read /dev/shm/*",
                "path-allow unlink /dev/shm/*",
                "path-allow write /dev/shm/*"
            ],
            "{text}"
        );
        // The learned policy parses, and a base that maps it already gets no second map.
        let learned = Policy::parse("t", &text).expect("the learned policy parses");
        assert_eq!(learned.maps().len(), 1);
        assert!(!learn(&o, &cx(&learned)).contains("path-map"));
    }

    #[test]
    fn only_what_the_base_does_not_allow() {
        let text = learned(&[
            obs("openat", "/usr/lib/x.so", Some(Access::Read)),
            obs("openat", "/tmp/s/out.txt", Some(Access::Write)),
            obs("openat", "/opt/app/conf", Some(Access::Read)),
            obs("openat", "/opt/app/conf", Some(Access::Read)),
            obs("execve", "/opt/app/bin/tool", Some(Access::Exec)),
        ]);
        assert_eq!(
            rules(&text),
            [
                "path-allow exec /opt/app/bin/tool",
                // What runs is read too (Landlock's execute right comes with reading).
                "path-allow read /opt/app/bin/tool",
                "path-allow read /opt/app/conf"
            ]
        );
        assert!(
            text.contains("path-allow read /opt/app/bin/tool    # execve (run)"),
            "{text}"
        );
        assert!(
            text.contains("path-allow read /opt/app/conf    # openat x2"),
            "{text}"
        );
        // It parses, and with the base allows each observed access.
        let p = Policy::parse("learned", &text).unwrap();
        let mut all = Policy::default_policy();
        all.merge(p);
        assert!(all.check("/opt/app/conf", Access::Read).is_allowed());
        assert!(!all.check("/opt/app/other", Access::Read).is_allowed());
    }

    #[test]
    fn many_entries_of_a_directory_collapse() {
        let mut o: Vec<Observation> = (0..COLLAPSE_AT)
            .map(|i| obs("openat", &format!("/w/out/f{i}.o"), Some(Access::Write)))
            .collect();
        o.push(obs("openat", "/w/one.c", Some(Access::Read)));
        let text = learned(&o);
        // What was written is read back by the next run (see below): readable too.
        assert_eq!(
            rules(&text),
            [
                "path-allow read /w/one.c",
                "path-allow read /w/out/*",
                "path-allow write /w/out/*"
            ]
        );
        assert!(text.contains("5 entries of /w/out:"), "{text}");
        // One fewer stays file by file.
        let text = learned(&o[1..]);
        assert_eq!(rules(&text).len(), 2 * (COLLAPSE_AT - 1) + 1, "{text}");
    }

    #[test]
    fn what_a_run_wrote_and_left_is_read_back() {
        let text = learned(&[
            obs("openat", "/w/Cargo.lock", Some(Access::Write)),
            // Gone after the run: a temporary file, nothing for the next run to read.
            obs("openat", "/w/absent.tmp", Some(Access::Write)),
            // In the scratch directory: the next run's starts empty.
            obs("openat", "/tmp/s/out", Some(Access::Write)),
            // Written under a made-up name, then moved into place: both readable.
            obs("rename", "/w/absent.Xa3kQz", Some(Access::Unlink)),
            obs("rename", "/w/index", Some(Access::Write)),
        ]);
        assert_eq!(
            rules(&text),
            [
                "path-allow read /w/Cargo.lock",
                "path-allow read /w/absent.*",
                "path-allow read /w/index",
                "path-allow unlink /w/absent.*",
                "path-allow write /w/Cargo.lock",
                "path-allow write /w/absent.tmp",
                "path-allow write /w/index",
            ],
            "{text}"
        );
        assert!(
            text.contains("path-allow read /w/absent.*    # rename (moved)"),
            "{text}"
        );
        assert!(
            text.contains("path-allow read /w/Cargo.lock    # openat (written)"),
            "{text}"
        );
        // A write the base denies reading is not read back.
        let base = Policy::parse("b", "path-allow write /w/*\npath-deny /w/secret").unwrap();
        let text = learn(
            &once(&[obs("openat", "/w/secret", Some(Access::Write))]),
            &Context {
                base: &base,
                home: None,
                command: "prog",
                exists: &|_| true,
                scratch: None,
                link_target: &|_| None,
            },
        );
        assert_eq!(rules(&text), ["path-allow write /w/secret"], "{text}");
    }

    /// A walk of a tree (`find D`, `ls -R D`): each directory opened and listed.
    fn walk(top: &str, fanout: usize, depth: usize) -> Vec<Observation> {
        let mut out = vec![obs("openat", top, Some(Access::Read))];
        if depth > 0 {
            for i in 0..fanout {
                out.extend(walk(&format!("{top}/d{i}"), fanout, depth - 1));
            }
        }
        out
    }

    #[test]
    fn a_tree_walk_is_the_directory_and_its_tree() {
        let o = walk("/srv/tree", 6, 3);
        assert_eq!(o.len(), 1 + 6 + 36 + 216);
        let base = Policy::default_policy();
        let cx = |base| Context {
            base,
            home: Some("/home/u"),
            command: "find /srv/tree",
            exists: &|_| true,
            scratch: None,
            link_target: &|_| None,
        };
        let text = learn(&once(&o), &cx(&base));
        assert_eq!(
            rules(&text),
            // `/srv/tree/*` lets /srv/tree be listed too.
            ["path-allow read /srv/tree/*"],
            "{text}"
        );
        assert!(
            text.contains("# 6 entries of /srv/tree, and 252 paths beneath them: openat x258"),
            "{text}"
        );
        // A path the base denies inside the tree stays denied with the learned rules.
        let mut base = Policy::default_policy();
        base.merge(Policy::parse("b", "path-deny /srv/tree/d1/secret").unwrap());
        let text = learn(&once(&o), &cx(&base));
        assert_eq!(rules(&text).len(), 1, "{text}");
        base.merge(Policy::parse("learned", &text).unwrap());
        assert!(base.check("/srv/tree/d1/d2", Access::Read).is_allowed());
        assert!(is_denied_by(&base, "/srv/tree/d1/secret"));
    }

    #[test]
    fn no_directory_rule_reaches_a_credential_path_or_the_home_directory() {
        let five = |dir: &str| -> Vec<Observation> {
            (0..COLLAPSE_AT)
                .map(|i| obs("openat", &format!("{dir}/f{i}"), Some(Access::Read)))
                .collect()
        };
        let with = |base: &Policy, o: &[Observation]| {
            rules(&learn(
                &once(o),
                &Context {
                    base,
                    home: Some("/home/u"),
                    command: "prog",
                    exists: &|_| true,
                    scratch: None,
                    link_target: &|_| None,
                },
            ))
        };
        // From nothing, /etc/* would reach /etc/shadow: the files stay one by one.
        let empty = Policy::default();
        assert_eq!(with(&empty, &five("/etc")).len(), COLLAPSE_AT);
        assert_eq!(with(&empty, &five("/etc/ssl")).len(), COLLAPSE_AT);
        // A base that denies what the default does: /etc/* reaches none of it.
        let base = Policy::parse("b", DENIES).unwrap();
        assert_eq!(with(&base, &five("/etc")), ["path-allow read /etc/*"]);
        // The home directory and what holds it: never; a directory inside it: as anywhere.
        assert_eq!(with(&empty, &five("/home/u")).len(), COLLAPSE_AT);
        let homes: Vec<Observation> = (0..COLLAPSE_AT)
            .map(|i| obs("openat", &format!("/home/h{i}"), Some(Access::Read)))
            .collect();
        assert_eq!(with(&empty, &homes).len(), COLLAPSE_AT);
        assert_eq!(
            with(&empty, &five("/home/u/.rustup/lib")),
            ["path-allow read /home/u/.rustup/lib/*"]
        );
    }

    /// The default policy's `path-deny` lines.
    const DENIES: &str = "path-deny /etc/shadow /etc/shadow- /etc/gshadow /etc/gshadow-
path-deny /etc/sudoers /etc/sudoers.d /etc/sudoers.d/*
path-deny /etc/ssh/ssh_host_*
path-deny /etc/security/opasswd
path-deny /etc/ssl/private /etc/ssl/private/*
path-deny /etc/credstore /etc/credstore/*
path-deny /etc/credstore.encrypted /etc/credstore.encrypted/*
";

    #[test]
    fn folding_covered_rules_never_widens() {
        let rules = [
            "/a/*",
            "/a/b/c",
            "/a/b/*",
            "/a",
            "/ab",
            "/x/foo-*",
            "/x/foo-1/y",
            "/x/fo",
        ];
        let grants = rules.iter().map(|p| (p.to_string(), Grant::default()));
        let kept: Vec<String> = without_covered(grants.collect())
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(kept, ["/a", "/ab", "/a/*", "/x/fo", "/x/foo-*"]);
        let policy = |paths: &[String]| {
            let text: String = paths
                .iter()
                .map(|p| format!("path-allow read {p}\n"))
                .collect();
            Policy::parse("t", &text).unwrap()
        };
        let before = policy(&rules.map(str::to_owned));
        let after = policy(&kept);
        for probe in [
            "/a", "/a/b", "/a/b/c", "/ab", "/abc", "/x/foo-2", "/x/fo", "/x/f", "/",
        ] {
            assert_eq!(
                before.check(probe, Access::Read).is_allowed(),
                after.check(probe, Access::Read).is_allowed(),
                "{probe}"
            );
        }
    }

    #[test]
    fn looking_needs_visibility_only_where_nothing_else_gives_it() {
        let text = learned(&[
            obs("openat", "/srv/data/a", Some(Access::Read)),
            // On the way to /srv/data/a: visible through it.
            obs("newfstatat", "/srv", Some(Access::Read)),
            obs("newfstatat", "/srv/data", Some(Access::Read)),
            // Only looked at.
            obs("access", "/opt/flag", Some(Access::Read)),
            // Looked for and not found: a PATH search.
            obs("newfstatat", "/opt/absent/cat", Some(Access::Read)),
        ]);
        assert_eq!(
            rules(&text),
            ["path-allow read /opt/flag", "path-allow read /srv/data/a"]
        );
        assert!(
            text.contains("# 1 lookups of paths that do not exist"),
            "{text}"
        );
    }

    #[test]
    fn network_rules_name_the_peers_and_ports_used() {
        let text = learned(&[
            obs("connect", "tcp 127.0.0.1:8080", None),
            obs("sendto", "udp 10.0.0.53:53", None),
            obs("bind", "tcp 0.0.0.0:9000", None),
            obs("bind", "tcp 0.0.0.0:9001", None),
            obs("accept4", "tcp 127.0.0.2:41000 to local port 9001", None),
            obs("connect", "unix /run/app.sock", None),
        ]);
        assert_eq!(
            rules(&text),
            [
                "net-allow incoming tcp 0/0 9000",
                "net-allow incoming tcp 127.0.0.2 9001",
                "net-allow outgoing tcp 127.0.0.1 8080",
                "net-allow outgoing udp 10.0.0.53 53",
                "net-allow outgoing unix-domain /run/app.sock",
            ]
        );
        Policy::parse("learned", &text).unwrap();
    }

    #[test]
    fn risky_grants_are_flagged() {
        let text = learned(&[
            obs("openat", "/home/u/notes", Some(Access::Write)),
            obs("openat", "/etc/shadow", Some(Access::Read)),
            obs("openat", "/data/run.sh", Some(Access::Write)),
            obs("execve", "/data/run.sh", Some(Access::Exec)),
        ]);
        assert!(text.contains("# WARNING: writes in your home directory (/home/u)\npath-allow write /home/u/notes"), "{text}");
        assert!(
            text.contains("# WARNING: a secret the default policy denies"),
            "{text}"
        );
        assert!(
            text.contains(
                "# WARNING: executes from a place it may also write\npath-allow exec /data/run.sh"
            ),
            "{text}"
        );
    }

    #[test]
    fn unexpressible_names_are_reported_not_written() {
        let text = learned(&[obs("openat", "/opt/a b", Some(Access::Read))]);
        assert!(rules(&text).is_empty(), "{text}");
        assert!(text.contains("# not expressible"), "{text}");
        // A name with terminal sequences is neither a rule nor raw in the comment.
        let text = learned(&[obs("openat", "/opt/\x1b[2J\u{9b}x", Some(Access::Read))]);
        assert!(rules(&text).is_empty(), "{text}");
        assert!(text.contains("/opt/\\x1b[2J\\u{9b}x"), "{text}");
        assert!(
            !text.contains(|c: char| c.is_control() && c != '\n'),
            "{text:?}"
        );
    }

    #[test]
    fn finds_the_interpreters_the_kernel_opens() {
        let read = |p: &str| {
            std::fs::read(p).ok().map(|mut v| {
                v.truncate(4096);
                v
            })
        };
        // /bin/sh is a dynamic ELF program here: its loader is an absolute path.
        let i = interpreters("/bin/sh", &read);
        assert!(i.iter().any(|p| p.contains("ld-linux")), "{i:?}");
        let fake = |p: &str| match p {
            "/s" => Some(b"#!/bin/sh -e\necho".to_vec()),
            other => read(other),
        };
        let i = interpreters("/s", &fake);
        assert_eq!(i[0], "/bin/sh");
        assert!(i.len() >= 2, "{i:?}");
        assert!(interpreters("/nonexistent", &read).is_empty());
    }

    #[test]
    fn observations_are_counted_once_each_and_bounded() {
        let mut o = Observations::default();
        for _ in 0..3 {
            o.record("openat", "/a", Some(Access::Read), true);
        }
        o.record("openat", "/a", Some(Access::Write), true);
        let c = o.counted();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0], (obs("openat", "/a", Some(Access::Read)), 3));
        // A run walking a huge tree: the distinct ones past the bound are only counted.
        for i in 0..Observations::MOST + 10 {
            o.record("stat", &format!("/t/{i}"), Some(Access::Read), true);
        }
        assert_eq!(o.counted().len(), Observations::MOST);
        assert_eq!(o.dropped(), 12);
        // One already kept still counts.
        o.record("openat", "/a", Some(Access::Read), true);
        assert!(o
            .counted()
            .contains(&(obs("openat", "/a", Some(Access::Read)), 4)));
    }

    #[test]
    fn parses_the_decision_log() {
        let log = r#"{"v":1,"syscall":"openat","target":"/a","access":"read","decision":"allow"}
not json
{"v":1,"syscall":"connect","target":"tcp 1.2.3.4:80","access":null,"decision":"deny"}
"#;
        let o = parse_log(log).counted();
        assert_eq!(o.len(), 2);
        let deny = o.iter().find(|(o, _)| !o.allowed).expect("the denial");
        assert!(deny.0.access.is_none() && deny.1 == 1);
        let open = o.iter().find(|(o, _)| o.allowed).expect("the open");
        assert_eq!(open, &(obs("openat", "/a", Some(Access::Read)), 1));
    }

    #[test]
    fn per_run_names_become_the_pattern_every_run_matches() {
        for (path, pattern) in [
            ("/tmp/tmp.oRf4Zw9xYz", "/tmp/tmp.*"),
            ("/tmp/tmpza4s7w15/f", "/tmp/tmp*"),
            // Python's tempfile draws `_` too, first as well: `tmp*` matches every run.
            ("/tmp/tmp_a4s7_w1/f", "/tmp/tmp*"),
            (
                "/w/target/debug/deps/foo-1a2b3c4d5e6f7a8b.d",
                "/w/target/debug/deps/foo-*",
            ),
            ("/dev/shm/sem.oRf4Z1", "/dev/shm/sem.*"),
            ("/tmp/ccFcao2V.o", "/tmp/cc*"),
            ("/tmp/cc13CCob.s", "/tmp/cc*"),
        ] {
            assert_eq!(generalised(path).as_deref(), Some(pattern), "{path}");
        }
        for path in [
            "/usr/lib/x86_64-linux-gnu/libc.so.6",
            "/usr/share/doc/README.Debian",
            "/usr/bin/python3.11",
            "/etc/tmpfiles.d/x.conf",
            "/w/build/sha256sums",
            "/w/ld-linux-x86-64.so.2",
            "/w/Makefile",
            "/w/config.status",
            "/w/libfoo.so",
            "/w/include",
        ] {
            assert_eq!(generalised(path), None, "{path}");
        }
    }

    #[test]
    fn a_path_the_command_names_is_learned_as_it_is() {
        // The program in a made-up directory (a benchmark's, a CI job's): the command names it,
        // so every run of that command runs the same file; learned exactly, read with its exec.
        let prog = "/tmp/warden-bench.bIYv7K/bin/microbench";
        let base = Policy::default();
        let o = [
            obs("execve", prog, Some(Access::Exec)),
            obs("execve", "/tmp/tmp.aB3dE5x/t", Some(Access::Exec)),
        ];
        let command = format!("{prog} /tmp/warden-bench.bIYv7K/data 200");
        let text = learn(
            &once(&o),
            &Context {
                base: &base,
                home: None,
                command: &command,
                exists: &|_| true,
                scratch: Some("/tmp/s"),
                link_target: &|_| None,
            },
        );
        assert_eq!(
            rules(&text),
            [
                "path-allow exec /tmp/tmp.*".to_string(),
                format!("path-allow exec {prog}"),
                format!("path-allow read {prog}"),
            ],
            "{text}"
        );
    }

    #[test]
    fn per_run_paths_are_learned_as_every_run_needs_them() {
        // The scratch directory's own name looks made up: it is `$SCRATCH`, never `warden-*`.
        let base = Policy::default();
        let text = learn(
            &once(&[obs(
                "openat",
                "/tmp/warden-4576-f3a2b1c9/tmp.aB3dE5/x",
                Some(Access::Write),
            )]),
            &Context {
                base: &base,
                home: None,
                command: "prog",
                exists: &|_| false,
                scratch: Some("/tmp/warden-4576-f3a2b1c9"),
                link_target: &|_| None,
            },
        );
        assert_eq!(rules(&text), ["path-allow write $SCRATCH/tmp.*"], "{text}");
        let o = [
            obs("mkdir", "/tmp/tmpza4s7w15", Some(Access::Write)),
            obs("openat", "/tmp/tmpza4s7w15/f", Some(Access::Write)),
            obs("unlink", "/tmp/tmpza4s7w15/f", Some(Access::Unlink)),
            obs("execve", "/opt/absent/tool", Some(Access::Exec)),
            obs("execve", "/usr/local/bin/absent", Some(Access::Exec)),
        ];
        let base = Policy::default();
        let text = learn(
            &once(&o),
            &Context {
                base: &base,
                home: None,
                command: "prog",
                exists: &|p| !p.contains("absent") && !p.contains("tmpza"),
                scratch: Some("/tmp/s"),
                link_target: &|_| None,
            },
        );
        assert_eq!(
            rules(&text),
            ["path-allow unlink /tmp/tmp*", "path-allow write /tmp/tmp*"],
            "{text}"
        );
        // In the scratch directory (with no base that gives it): `$SCRATCH/...`.
        let text = learn(
            &once(&[obs("openat", "/tmp/s/out/a.txt", Some(Access::Write))]),
            &Context {
                base: &base,
                home: None,
                command: "prog",
                exists: &|_| true,
                scratch: Some("/tmp/s"),
                link_target: &|_| None,
            },
        );
        assert_eq!(
            rules(&text),
            ["path-allow write $SCRATCH/out/a.txt"],
            "{text}"
        );
        // A program it made there and ran: its directory, which warden makes before Landlock.
        let text = learn(
            &once(&[obs("execve", "/tmp/s/ve/bin/tool", Some(Access::Exec))]),
            &Context {
                base: &base,
                home: None,
                command: "prog",
                exists: &|_| false,
                scratch: Some("/tmp/s"),
                link_target: &|_| None,
            },
        );
        assert_eq!(
            rules(&text),
            ["path-allow exec $SCRATCH/ve/bin/*"],
            "{text}"
        );
    }
}
