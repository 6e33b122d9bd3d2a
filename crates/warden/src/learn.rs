//! `warden learn`: turning what a run did into a policy that allows exactly that.
//!
//! The run itself is an ordinary `warden run` under a policy that allows every access, with the
//! decision log on ([`crate::agent::log`]); this module reads that log back ([`parse_log`]) and
//! writes the policy ([`learn`]). Pure: log lines in, policy text out.
//!
//! What the learned policy contains, for each access the run made that the base policy (the one
//! it will be used with) does not already allow:
//! - a path opened, created, removed or executed: `path-allow ACCESS PATH`; when one directory
//!   had [`COLLAPSE_AT`] or more entries used with the same access, `path-allow ACCESS DIR/*`;
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

/// One allowed decision of the learning run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    /// The call.
    pub syscall: String,
    /// The logical path, or an endpoint (`tcp 1.2.3.4:80`, `unix /run/x.sock`,
    /// `tcp 1.2.3.4:5000 to local port 80`).
    pub target: String,
    /// The access checked, for path decisions.
    pub access: Option<Access>,
    /// Whether it was allowed.
    pub allowed: bool,
}

/// Reads the decision log (JSON lines, schema 1). Lines that are not decisions are skipped.
pub fn parse_log(text: &str) -> Vec<Observation> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            Some(Observation {
                syscall: v["syscall"].as_str()?.to_owned(),
                target: v["target"].as_str()?.to_owned(),
                access: v["access"].as_str().and_then(Access::from_name),
                allowed: v["decision"].as_str()? == "allow",
            })
        })
        .collect()
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
}

/// One rule to write, with what produced it.
#[derive(Default)]
struct Grant {
    calls: BTreeMap<String, usize>,
    warnings: BTreeSet<String>,
    /// Why a directory rule stands for several paths.
    note: Option<String>,
}

impl Grant {
    fn add(&mut self, call: &str) {
        *self.calls.entry(call.to_owned()).or_default() += 1;
    }
}

/// The learned policy, as text.
pub fn learn(observations: &[Observation], cx: &Context<'_>) -> String {
    let base = cx.base;
    // Path uses by access, and the paths only looked at.
    let mut uses: BTreeMap<Access, BTreeMap<String, Grant>> = BTreeMap::new();
    let mut looked: BTreeMap<String, Grant> = BTreeMap::new();
    let mut unexpressible: BTreeSet<String> = BTreeSet::new();
    let mut absent: BTreeSet<String> = BTreeSet::new();
    let mut net: BTreeMap<String, Grant> = BTreeMap::new();
    let mut bound: BTreeMap<(String, u16), Grant> = BTreeMap::new();
    let mut accepted_ports: BTreeSet<(String, u16)> = BTreeSet::new();
    for o in observations.iter().filter(|o| o.allowed) {
        if let Some(access) = o.access {
            if !o.target.starts_with('/') {
                continue;
            }
            if !expressible(&o.target) {
                unexpressible.insert(o.target.clone());
                continue;
            }
            // An exec of a name that is not there is a PATH search (execvp tries each
            // directory), as a lookup of one is.
            let probe = LOOKING.contains(&o.syscall.as_str()) || access == Access::Exec;
            // The scratch directory is gone after the run: what was in it cannot be looked for.
            let in_scratch = cx
                .scratch
                .is_some_and(|s| scratch_relative(&o.target, s).is_some());
            if probe && !in_scratch && !(cx.exists)(&o.target) {
                absent.insert(o.target.clone());
                continue;
            }
            // Per-run names (a temporary directory, a random suffix) as the pattern every run's
            // name matches; the scratch directory as `$SCRATCH`.
            // The scratch directory as `$SCRATCH` (its own name is per run too).
            let target = cx
                .scratch
                .and_then(|s| scratch_relative(&o.target, s))
                .unwrap_or_else(|| o.target.clone());
            let per_run = in_scratch || access != Access::Read || !(cx.exists)(&o.target);
            let target = match per_run.then(|| generalised(&target)).flatten() {
                Some(pattern) => pattern,
                // The run made what it runs in its scratch directory: the next run's file does
                // not exist when the sandbox is built, and Landlock can only be told about its
                // directory (which warden makes for a `DIR/*` exec rule before it starts).
                None if in_scratch && access == Access::Exec => format!("{}/*", parent(&target)),
                None => target,
            };
            if LOOKING.contains(&o.syscall.as_str()) {
                if base.visible(&o.target).is_none() && !base.may_traverse(&o.target) {
                    looked.entry(target).or_default().add(&o.syscall);
                }
            } else if !base.check(&o.target, access).is_allowed() {
                uses.entry(access)
                    .or_default()
                    .entry(target)
                    .or_default()
                    .add(&o.syscall);
            }
            continue;
        }
        if let Some((rule, port)) = net_rule(o) {
            if let Some(port) = port {
                bound.entry(port).or_default().add(&o.syscall);
            } else {
                if o.syscall.starts_with("accept") {
                    if let Some(p) = accepted_port(&o.target) {
                        accepted_ports.insert(p);
                    }
                }
                net.entry(rule).or_default().add(&o.syscall);
            }
        }
    }
    for ((proto, port), grant) in bound {
        if !accepted_ports.contains(&(proto.clone(), port)) {
            net.insert(format!("net-allow incoming {proto} 0/0 {port}"), grant);
        }
    }

    // Collapse directories with many entries of one access into DIR/*.
    let mut lines: Vec<(String, Grant)> = Vec::new();
    for (access, paths) in &uses {
        let mut by_dir: BTreeMap<String, Vec<&String>> = BTreeMap::new();
        for p in paths.keys() {
            by_dir.entry(parent(p).to_owned()).or_default().push(p);
        }
        for (dir, entries) in by_dir {
            if entries.len() >= COLLAPSE_AT && dir != "/" {
                let mut g = Grant {
                    note: Some(format!("{} entries of {dir}:", entries.len())),
                    ..Grant::default()
                };
                for e in &entries {
                    for (c, n) in &paths[*e].calls {
                        *g.calls.entry(c.clone()).or_default() += n;
                    }
                }
                lines.push((format!("path-allow {access} {dir}/*"), g));
            } else {
                for e in entries {
                    let mut g = Grant::default();
                    g.calls.clone_from(&paths[e].calls);
                    lines.push((format!("path-allow {access} {e}"), g));
                }
            }
        }
    }
    // The learned path rules so far, to know what they already make visible.
    let mut learned = Policy::default();
    for (rule, _) in &lines {
        if let Ok(p) = Policy::parse("<learned>", &format!("{rule}\n")) {
            learned.merge(p);
        }
    }
    for (path, grant) in looked {
        if learned.visible(&path).is_none() && !learned.may_traverse(&path) {
            lines.push((format!("path-allow read {path}"), grant));
        }
    }
    // Warnings on risky grants.
    let writable: Vec<String> = lines
        .iter()
        .filter(|(r, _)| r.starts_with("path-allow write "))
        .map(|(r, _)| r["path-allow write ".len()..].to_owned())
        .collect();
    let default = Policy::default_policy();
    for (rule, grant) in &mut lines {
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
    for (rule, grant) in &lines {
        for w in grant.warnings.iter().filter(|w| !w.is_empty()) {
            let _ = writeln!(out, "# WARNING: {w}");
        }
        let _ = writeln!(out, "{rule}    # {}", grant_comment(grant));
    }
    for (rule, grant) in &net {
        let _ = writeln!(out, "{rule}    # {}", grant_comment(grant));
    }
    if !absent.is_empty() {
        let _ = writeln!(
            out,
            "# {} lookups of paths that do not exist need no rule (PATH searches and probes)",
            absent.len()
        );
    }
    for path in unexpressible {
        let _ = writeln!(
            out,
            "# not expressible (whitespace, a control character, `#`, `*` or `$` in the name): {}",
            escape(&path)
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
            return Some(&name[..name.len() - random.len()]);
        }
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

/// A path a policy line can name exactly.
fn expressible(path: &str) -> bool {
    PathPattern::parse(path).is_ok_and(|p| !p.is_prefix() && p.literal() == path)
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
        return expressible(rest).then(|| (format!("net-allow {dir} unix-domain {rest}"), None));
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

    fn learned(o: &[Observation]) -> String {
        let base = Policy::default_policy().expand_scratch("/tmp/s");
        learn(
            o,
            &Context {
                base: &base,
                home: Some("/home/u"),
                command: "prog",
                exists: &|p| !p.contains("absent"),
                scratch: Some("/tmp/s"),
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
                "path-allow read /opt/app/conf"
            ]
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
        assert_eq!(
            rules(&text),
            ["path-allow read /w/one.c", "path-allow write /w/out/*"]
        );
        assert!(text.contains("5 entries of /w/out:"), "{text}");
        // One fewer stays file by file.
        let text = learned(&o[1..]);
        assert_eq!(rules(&text).len(), COLLAPSE_AT);
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
    fn parses_the_decision_log() {
        let log = r#"{"v":1,"syscall":"openat","target":"/a","access":"read","decision":"allow"}
not json
{"v":1,"syscall":"connect","target":"tcp 1.2.3.4:80","access":null,"decision":"deny"}
"#;
        let o = parse_log(log);
        assert_eq!(o.len(), 2);
        assert_eq!(o[0], obs("openat", "/a", Some(Access::Read)));
        assert!(!o[1].allowed && o[1].access.is_none());
    }

    #[test]
    fn per_run_names_become_the_pattern_every_run_matches() {
        for (path, pattern) in [
            ("/tmp/tmp.oRf4Zw9xYz", "/tmp/tmp.*"),
            ("/tmp/tmpza4s7w15/f", "/tmp/tmp*"),
            ("/tmp/tmp_a4s7_w1/f", "/tmp/tmp_*"),
            (
                "/w/target/debug/deps/foo-1a2b3c4d5e6f7a8b.d",
                "/w/target/debug/deps/foo-*",
            ),
            ("/dev/shm/sem.oRf4Z1", "/dev/shm/sem.*"),
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
        ] {
            assert_eq!(generalised(path), None, "{path}");
        }
    }

    #[test]
    fn per_run_paths_are_learned_as_every_run_needs_them() {
        // The scratch directory's own name looks made up: it is `$SCRATCH`, never `warden-*`.
        let base = Policy::default();
        let text = learn(
            &[obs(
                "openat",
                "/tmp/warden-4576-f3a2b1c9/tmp.aB3dE5/x",
                Some(Access::Write),
            )],
            &Context {
                base: &base,
                home: None,
                command: "prog",
                exists: &|_| false,
                scratch: Some("/tmp/warden-4576-f3a2b1c9"),
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
            &o,
            &Context {
                base: &base,
                home: None,
                command: "prog",
                exists: &|p| !p.contains("absent") && !p.contains("tmpza"),
                scratch: Some("/tmp/s"),
            },
        );
        assert_eq!(
            rules(&text),
            ["path-allow unlink /tmp/tmp*", "path-allow write /tmp/tmp*"],
            "{text}"
        );
        // In the scratch directory (with no base that gives it): `$SCRATCH/...`.
        let text = learn(
            &[obs("openat", "/tmp/s/out/a.txt", Some(Access::Write))],
            &Context {
                base: &base,
                home: None,
                command: "prog",
                exists: &|_| true,
                scratch: Some("/tmp/s"),
            },
        );
        assert_eq!(
            rules(&text),
            ["path-allow write $SCRATCH/out/a.txt"],
            "{text}"
        );
        // A program it made there and ran: its directory, which warden makes before Landlock.
        let text = learn(
            &[obs("execve", "/tmp/s/ve/bin/tool", Some(Access::Exec))],
            &Context {
                base: &base,
                home: None,
                command: "prog",
                exists: &|_| false,
                scratch: Some("/tmp/s"),
            },
        );
        assert_eq!(
            rules(&text),
            ["path-allow exec $SCRATCH/ve/bin/*"],
            "{text}"
        );
    }
}
