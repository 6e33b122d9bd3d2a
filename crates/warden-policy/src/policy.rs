//! The policy as data, and the decisions it makes.
//!
//! A [`Policy`] is an ordered list of path rules (allow with one access, or
//! deny) and net rules, plus three scalar settings. Order matters in exactly
//! one way: a [`RuleId`] is an index into [`Policy::path_rules`], and
//! decisions name the *first* matching rule so that `warden` can tell a user
//! which line let something through. Merging appends, so ids stay valid.
//!
//! The decision semantics are deliberately simple enough to state in one
//! line each, because the agent, the Landlock translation and the user's
//! intuition must all agree on them:
//!
//! * an access is allowed iff some `path-allow` rule of that access matches
//!   and no `path-deny` rule matches (deny wins whatever the order);
//! * everything else is denied.
//!
//! The subtree questions ([`Policy::may_traverse`],
//! [`Policy::new_entry_rights`], [`Policy::subtree_rights`]) are derived
//! from the same semantics for whole sets of paths at once. They exist
//! because the agent must decide about paths that are only partly known: a
//! directory it walks through, a file about to be created, a subtree it may
//! hand to the kernel as one Landlock rule. Each answers conservatively in
//! the direction that keeps the policy's promise (a subtree is only called
//! uniform when it provably is).
//!
//! Rules are checked by a linear scan. Policies are tens of rules, a scan is
//! a few hundred nanoseconds, and a plain list keeps "first matching rule"
//! exact; an index can come later without changing any answer.

use std::collections::HashSet;
use std::fmt::{self, Write as _};

use crate::diag::{Diagnostic, Span};
use crate::limits::{LimitKind, Limits};
use crate::net::{Direction, NetRule, NetTarget, Protocol};
use crate::pattern::{PathPattern, SCRATCH_VAR, UNNAMEABLE};
use std::net::{IpAddr, SocketAddr};

/// The built-in default policy, as shipped (with its comments).
pub const DEFAULT_POLICY: &str = include_str!("../default.policy");

/// The file name spans of the default policy carry.
pub const DEFAULT_POLICY_NAME: &str = "<default>";

/// Where the built-in default gives the sandbox a private tmpfs of its own that gives way to
/// the user's own rules about it ([`Policy::names_tmp`], [`Policy::without_private_tmp`]).
pub const PRIVATE_TMP: &str = "/tmp";

/// What a refusal in the private `/tmp` ([`Policy::explain_private_tmp`]) says first.
pub const PRIVATE_TMP_NOTE: &str = "the host's /tmp has it, but the sandbox's /tmp is its own \
     (empty at the start): a rule of yours that names /tmp gives the run the host's /tmp instead";

/// One kind of file access a `path-allow` rule grants.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum Access {
    /// Open for reading, list a directory, stat, readlink.
    Read,
    /// Open for writing, create, truncate, change metadata.
    Write,
    /// Remove (unlink, rmdir, rename away).
    Unlink,
    /// Execute.
    Exec,
}

impl Access {
    /// Every access, in the order normalized policies list them.
    pub const ALL: [Access; 4] = [Access::Read, Access::Write, Access::Unlink, Access::Exec];

    /// The policy keyword: `read`, `write`, `unlink` or `exec`.
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Unlink => "unlink",
            Access::Exec => "exec",
        }
    }

    /// Parses the policy keyword.
    pub fn from_name(s: &str) -> Option<Access> {
        Access::ALL.into_iter().find(|a| a.name() == s)
    }

    fn bit(self) -> u8 {
        match self {
            Access::Read => 1,
            Access::Write => 2,
            Access::Unlink => 4,
            Access::Exec => 8,
        }
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`Access`]es, as a bit set.
///
/// Displays as a comma-separated list in [`Access::ALL`] order, such as
/// `read,write`, or `none` when empty.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
pub struct AccessSet(u8);

impl AccessSet {
    /// No access.
    pub const EMPTY: AccessSet = AccessSet(0);
    /// Every access.
    pub const ALL: AccessSet = AccessSet(0b1111);

    /// Whether `a` is in the set.
    pub fn contains(self, a: Access) -> bool {
        self.0 & a.bit() != 0
    }

    /// Adds `a`.
    pub fn insert(&mut self, a: Access) {
        self.0 |= a.bit();
    }

    /// The set with `a` added.
    pub fn with(self, a: Access) -> Self {
        AccessSet(self.0 | a.bit())
    }

    /// Whether every access in `self` is in `other`.
    pub fn is_subset(self, other: AccessSet) -> bool {
        self.0 & !other.0 == 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The accesses in the set, in [`Access::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Access> {
        Access::ALL.into_iter().filter(move |&a| self.contains(a))
    }
}

impl FromIterator<Access> for AccessSet {
    fn from_iter<I: IntoIterator<Item = Access>>(iter: I) -> Self {
        iter.into_iter().fold(AccessSet::EMPTY, AccessSet::with)
    }
}

impl fmt::Display for AccessSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        for (i, a) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(a.name())?;
        }
        Ok(())
    }
}

/// One path rule: `path-allow ACCESS PATTERN` or `path-deny PATTERN`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathRule {
    /// The access allowed, or `None` for a `path-deny` rule.
    pub access: Option<Access>,
    /// The paths the rule is about.
    pub pattern: PathPattern,
    /// Where the rule was written (its pattern token).
    pub span: Span,
}

impl PathRule {
    /// Whether this is a `path-allow` of `access` that gives it to `path`: its pattern matches
    /// `path`, or it reads a tree `D/*` and `path` is `D`, which may then be listed and looked
    /// at ([`PathPattern::is_tree_of`]: the names it shows are the rule's own).
    pub fn grants(&self, path: &str, access: Access) -> bool {
        self.access == Some(access)
            && (self.pattern.matches(path)
                || (access == Access::Read && self.pattern.is_tree_of(path)))
    }
}

impl fmt::Display for PathRule {
    /// The rule as a one-pattern policy line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.access {
            Some(a) => write!(f, "path-allow {a} {}", self.pattern),
            None => write!(f, "path-deny {}", self.pattern),
        }
    }
}

/// Names a rule: an index into [`Policy::path_rules`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RuleId(pub usize);

/// The answer to "may this access happen to this path?".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed by this rule (the first matching `path-allow` of the access).
    Allowed(RuleId),
    /// Denied, and why.
    Denied(Denial),
}

impl Verdict {
    /// Whether the verdict is [`Verdict::Allowed`].
    pub fn is_allowed(&self) -> bool {
        matches!(self, Verdict::Allowed(_))
    }
}

/// Why an access was denied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Denial {
    /// No `path-allow` rule of that access matches the path.
    NoRule,
    /// This `path-deny` rule matches the path (the first one that does).
    DeniedBy(RuleId),
}

/// `map-ids INSIDE OUTSIDE COUNT`: ids `INSIDE..INSIDE+COUNT` in the sandbox are
/// `OUTSIDE..OUTSIDE+COUNT` outside, for users and groups alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdRange {
    /// The first id inside.
    pub inside: u32,
    /// The first id outside.
    pub outside: u32,
    /// How many.
    pub count: u32,
}

/// A parsed policy: settings, path rules and net rules.
///
/// Build one with [`Policy::parse`] or [`Policy::default_policy`], combine
/// with [`Policy::merge`] and [`Policy::add_rule`], then replace `$SCRATCH`
/// with [`Policy::expand_scratch`] before asking for decisions (until then,
/// scratch rules match nothing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// `starting_uid`: the user id the program runs as, if set.
    pub starting_uid: Option<u32>,
    /// `starting_gid`: the group id the program runs as, if set.
    pub starting_gid: Option<u32>,
    /// `map-ids`: more user and group ids mapped into the sandbox (beyond the starting ones),
    /// and where it was said.
    pub map_ids: Option<(IdRange, Span)>,
    /// `starting_dir`: the normalized directory the program starts in (may
    /// begin with `$SCRATCH`), and where it was set.
    pub starting_dir: Option<(String, Span)>,
    /// `limit-*`: resource limits of the run.
    pub limits: Limits,
    /// `ptrace-allow inside`: processes of the sandbox may trace (debug) each other; where it
    /// was said.
    pub ptrace_inside: Option<Span>,
    pub(crate) path_rules: Vec<PathRule>,
    pub(crate) net_rules: Vec<NetRule>,
    /// `path-map`: what the sandbox's view shows at paths other than the host's own.
    pub(crate) maps: Vec<crate::map::PathMap>,
}

impl Policy {
    /// Parses policy text. `file` names it in spans and diagnostics. On
    /// failure returns every error found, in file order.
    pub fn parse(file: &str, text: &str) -> Result<Policy, Vec<Diagnostic>> {
        crate::parse::parse_policy(file, text)
    }

    /// The built-in default policy ([`DEFAULT_POLICY`]), named
    /// [`DEFAULT_POLICY_NAME`] in spans.
    pub fn default_policy() -> Policy {
        // The text is compiled in and a unit test parses it, so this cannot
        // fail in a tested build; should it ever, fail closed (an empty
        // policy allows nothing) rather than panic in the agent.
        Policy::parse(DEFAULT_POLICY_NAME, DEFAULT_POLICY).unwrap_or_default()
    }

    /// Adds `other` to `self`: its rules are appended (so every [`RuleId`]
    /// of `self` keeps its meaning), and each of its settings that is set
    /// replaces the one in `self`.
    pub fn merge(&mut self, other: Policy) {
        if other.starting_uid.is_some() {
            self.starting_uid = other.starting_uid;
        }
        if other.starting_gid.is_some() {
            self.starting_gid = other.starting_gid;
        }
        if other.starting_dir.is_some() {
            self.starting_dir = other.starting_dir;
        }
        if other.map_ids.is_some() {
            self.map_ids = other.map_ids;
        }
        self.limits.merge(&other.limits);
        if other.ptrace_inside.is_some() {
            self.ptrace_inside = other.ptrace_inside;
        }
        self.path_rules.extend(other.path_rules);
        self.net_rules.extend(other.net_rules);
        for map in other.maps {
            // A later file's map of the same sandbox path replaces the earlier one.
            self.maps.retain(|m| m.sandbox != map.sandbox);
            self.maps.push(map);
        }
    }

    /// Adds a map the run itself needs (warden's scratch directory inside a mapped tree keeps
    /// its own place: `path-map SCRATCH SCRATCH rw`).
    pub fn add_map(&mut self, map: crate::map::PathMap) {
        self.maps.retain(|m| m.sandbox != map.sandbox);
        self.maps.push(map);
    }

    /// The policy as it stands without a view of the sandbox's own (`--view off`, or a kernel
    /// with no new mount API): a `path-map tmpfs` cannot be made there, and the host's tree at
    /// its path is never what it promised (a private place), so its tree is closed instead:
    /// each tmpfs map becomes `path-deny SANDBOX SANDBOX/*`, written where the map was, after
    /// every other rule (so every [`RuleId`] is unchanged). Returns the policy and the maps
    /// closed. Maps of the host's trees stay (they need a view, which the caller refuses or
    /// makes).
    pub fn close_tmpfs_maps(&self) -> (Policy, Vec<crate::map::PathMap>) {
        let mut out = self.clone();
        let (closed, kept): (Vec<_>, Vec<_>) = out
            .maps
            .drain(..)
            .partition(|m| m.source == crate::map::MapSource::Tmpfs);
        out.maps = kept;
        for m in &closed {
            for text in [m.sandbox.clone(), format!("{}/*", m.sandbox)] {
                if let Ok(pattern) = PathPattern::parse(&text) {
                    out.add_rule(None, pattern, m.span.clone());
                }
            }
        }
        (out, closed)
    }

    /// What decides `/tmp` besides the built-in default's private `/tmp` ([`PRIVATE_TMP`]): the
    /// first rule, map, socket rule or starting directory not of the default that names
    /// `/tmp`, a path in it, or a tree around it (`/*`), as "FILE:LINE: RULE". `$SCRATCH` is the
    /// run's own, wherever it lies, and names nothing here. Asked before `$SCRATCH` is expanded.
    pub fn names_tmp(&self) -> Option<String> {
        use crate::map::at_or_beneath;
        let names = |p: &PathPattern| {
            let lit = p.literal();
            !p.uses_scratch()
                && (at_or_beneath(lit.trim_end_matches('/'), PRIVATE_TMP)
                    || (p.is_prefix() && format!("{PRIVATE_TMP}/").starts_with(lit)))
        };
        let theirs = |span: &Span| &*span.file != DEFAULT_POLICY_NAME;
        if let Some(r) = self
            .path_rules
            .iter()
            .find(|r| theirs(&r.span) && names(&r.pattern))
        {
            return Some(format!("{}: {r}", r.span));
        }
        if let Some(m) = self.maps.iter().find(|m| {
            theirs(&m.span)
                && (at_or_beneath(&m.sandbox, PRIVATE_TMP)
                    || at_or_beneath(PRIVATE_TMP, &m.sandbox))
        }) {
            return Some(format!("{}: {m}", m.span));
        }
        if let Some(r) = self
            .net_rules
            .iter()
            .find(|r| theirs(&r.span) && matches!(&r.target, NetTarget::Unix(p) if names(p)))
        {
            return Some(format!("{}: {r}", r.span));
        }
        match &self.starting_dir {
            Some((dir, span)) if theirs(span) && at_or_beneath(dir, PRIVATE_TMP) => {
                Some(format!("{span}: starting_dir {dir}"))
            }
            _ => None,
        }
    }

    /// The policy without the built-in default's private `/tmp` ([`PRIVATE_TMP`]): its
    /// `path-map tmpfs /tmp` and its rules on `/tmp` and `/tmp/*` go. For a run whose own rules
    /// decide `/tmp` ([`Policy::names_tmp`]), and for one without a view of its own, which could
    /// not make it (there the host's `/tmp` stays closed, as it always was). The rules after
    /// those removed move up: call it before any [`RuleId`] is handed out.
    pub fn without_private_tmp(&self) -> Policy {
        let default = |span: &Span| &*span.file == DEFAULT_POLICY_NAME;
        let mut out = self.clone();
        // `/tmp` and `/tmp/*` alone: the default's `$SCRATCH` rules, expanded, may lie beneath.
        out.path_rules.retain(|r| {
            !(default(&r.span) && r.pattern.literal().trim_end_matches('/') == PRIVATE_TMP)
        });
        out.maps
            .retain(|m| !(default(&m.span) && m.sandbox == PRIVATE_TMP));
        out
    }

    /// Whether `path` lies in the built-in default's private `/tmp` ([`PRIVATE_TMP`]), and in
    /// no other map within it: there the sandbox's own (empty at the start) tmpfs is all it
    /// sees, whatever the host's `/tmp` has at that path.
    pub fn in_private_tmp(&self, path: &str) -> bool {
        use crate::map::at_or_beneath;
        let default = |m: &crate::map::PathMap| &*m.span.file == DEFAULT_POLICY_NAME;
        at_or_beneath(path, PRIVATE_TMP)
            && self
                .maps
                .iter()
                .any(|m| default(m) && m.sandbox == PRIVATE_TMP)
            && !self
                .maps
                .iter()
                .any(|m| m.sandbox != PRIVATE_TMP && at_or_beneath(path, &m.sandbox))
    }

    /// Why a run that looked up `path` in its private `/tmp` ([`Policy::in_private_tmp`]) was
    /// told it is not there while the host's `/tmp` has it, and the line that would give it
    /// the host's (any rule of the user's that names `/tmp` does: [`Policy::names_tmp`]):
    /// [`PRIVATE_TMP_NOTE`], then `add: ` and the line, last, as it is pasted.
    pub fn explain_private_tmp(&self, path: &str, access: Access) -> String {
        if PathPattern::names_exactly(path) {
            format!("{PRIVATE_TMP_NOTE}; add: path-allow {access} {path}")
        } else {
            format!("{PRIVATE_TMP_NOTE}; {UNNAMEABLE}")
        }
    }

    /// Every `path-map`, in order.
    pub fn maps(&self) -> &[crate::map::PathMap] {
        &self.maps
    }

    /// Appends one path rule (`access` `None` = `path-deny`); used for
    /// command-line flags such as `--read PATH`.
    pub fn add_rule(&mut self, access: Option<Access>, pattern: PathPattern, span: Span) {
        self.path_rules.push(PathRule {
            access,
            pattern,
            span,
        });
    }

    /// Appends one net rule.
    pub fn add_net_rule(&mut self, rule: NetRule) {
        self.net_rules.push(rule);
    }

    /// Every path rule, in order; a [`RuleId`] indexes this.
    pub fn path_rules(&self) -> &[PathRule] {
        &self.path_rules
    }

    /// The files the rules came from, in first-use order (`<default>` for the built-in one,
    /// `--read` and the like for the shorthand flags).
    pub fn sources(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let spans = self
            .path_rules
            .iter()
            .map(|r| &r.span)
            .chain(self.net_rules.iter().map(|r| &r.span));
        for span in spans {
            if !out.iter().any(|f| **f == *span.file) {
                out.push(span.file.to_string());
            }
        }
        out
    }

    /// Every net rule, in order.
    pub fn net_rules(&self) -> &[NetRule] {
        &self.net_rules
    }

    /// The rule `id` names.
    ///
    /// # Panics
    ///
    /// If `id` does not come from this policy (or one it was merged into).
    pub fn rule(&self, id: RuleId) -> &PathRule {
        &self.path_rules[id.0]
    }

    /// Whether any pattern or the starting directory mentions `$SCRATCH`,
    /// i.e. whether the run needs a scratch directory.
    pub fn uses_scratch(&self) -> bool {
        self.path_rules.iter().any(|r| r.pattern.uses_scratch())
            || self.net_rules.iter().any(NetRule::uses_scratch)
            || self
                .starting_dir
                .as_ref()
                .is_some_and(|(d, _)| d.starts_with(SCRATCH_VAR))
    }

    /// The policy with `$SCRATCH` replaced by `scratch` (an absolute,
    /// normalized path) in every pattern and in the starting directory.
    /// Rule order, and so every [`RuleId`], is unchanged.
    pub fn expand_scratch(&self, scratch: &str) -> Policy {
        let starting_dir = self.starting_dir.as_ref().map(|(dir, span)| {
            // The directory was normalized like an exact pattern, so
            // expanding it as one gives the same joining rules.
            let expanded = match PathPattern::parse(dir) {
                Ok(p) => p.expand_scratch(scratch).literal().to_string(),
                Err(_) => dir.clone(),
            };
            (expanded, span.clone())
        });
        Policy {
            starting_uid: self.starting_uid,
            starting_gid: self.starting_gid,
            map_ids: self.map_ids.clone(),
            starting_dir,
            limits: self.limits,
            ptrace_inside: self.ptrace_inside.clone(),
            path_rules: self
                .path_rules
                .iter()
                .map(|r| PathRule {
                    access: r.access,
                    pattern: r.pattern.expand_scratch(scratch),
                    span: r.span.clone(),
                })
                .collect(),
            net_rules: self
                .net_rules
                .iter()
                .map(|r| r.expand_scratch(scratch))
                .collect(),
            maps: self.maps.clone(),
        }
    }

    /// Ids and rules, for the scans below.
    fn rules(&self) -> impl Iterator<Item = (RuleId, &PathRule)> {
        self.path_rules
            .iter()
            .enumerate()
            .map(|(i, r)| (RuleId(i), r))
    }

    /// The first `path-deny` rule matching `path`.
    fn denied_by(&self, path: &str) -> Option<RuleId> {
        self.rules()
            .find(|(_, r)| r.access.is_none() && r.pattern.matches(path))
            .map(|(id, _)| id)
    }

    /// Decides one access to one path (absolute, normalized). A matching
    /// `path-deny` wins over every `path-allow`; otherwise the first
    /// `path-allow` of that access that grants it ([`PathRule::grants`]) allows it.
    pub fn check(&self, path: &str, access: Access) -> Verdict {
        if let Some(id) = self.denied_by(path) {
            return Verdict::Denied(Denial::DeniedBy(id));
        }
        match self.rules().find(|(_, r)| r.grants(path, access)) {
            Some((id, _)) => Verdict::Allowed(id),
            None => Verdict::Denied(Denial::NoRule),
        }
    }

    /// Whether [`Policy::check`] allows `access` to `path` and some allow rule for it names
    /// `path` itself, not a prefix (`/dev/sda` under `/dev/*` is not named). Device nodes are
    /// opened only for such rules: a directory rule must never hand out a disk.
    pub fn names_exactly(&self, path: &str, access: Access) -> bool {
        self.check(path, access).is_allowed()
            && self.path_rules.iter().any(|r| {
                r.access == Some(access) && !r.pattern.is_prefix() && r.pattern.matches(path)
            })
    }

    /// Every access [`Policy::check`] would allow on `path`.
    pub fn rights(&self, path: &str) -> AccessSet {
        if self.denied_by(path).is_some() {
            return AccessSet::EMPTY;
        }
        Access::ALL
            .into_iter()
            .filter(|&a| self.path_rules.iter().any(|r| r.grants(path, a)))
            .collect()
    }

    /// Whether some access to `path` is allowed; if so, the first allow rule
    /// that matches it. A path that is not visible should look absent.
    pub fn visible(&self, path: &str) -> Option<RuleId> {
        if self.denied_by(path).is_some() {
            return None;
        }
        self.rules()
            .find(|(_, r)| r.access.is_some_and(|a| r.grants(path, a)))
            .map(|(id, _)| id)
    }

    /// Whether a path walk may pass through directory `dir`: it is visible
    /// itself, or some allow rule can match a path strictly beneath it (so
    /// `/home` may be traversed to reach an allowed `/home/app/x`, and `/`
    /// whenever anything is allowed); a `net-allow ... unix-domain` pattern
    /// beneath it counts too. A `path-deny` on `dir` itself blocks traversal.
    pub fn may_traverse(&self, dir: &str) -> bool {
        if self.denied_by(dir).is_some() {
            return false;
        }
        self.visible(dir).is_some()
            || self
                .path_rules
                .iter()
                .any(|r| r.access.is_some() && r.pattern.matches_some_beneath(dir))
            || self
                .net_rules
                .iter()
                .any(|r| matches!(&r.target, NetTarget::Unix(p) if p.matches_some_beneath(dir)))
    }

    /// The rights that any name not yet in directory `dir` would get once
    /// created: the accesses of allow rules that match *every* child of
    /// `dir`, or nothing at all if some `path-deny` could match a child.
    /// Lets the agent decide a create without knowing the name's fate.
    pub fn new_entry_rights(&self, dir: &str) -> AccessSet {
        if self
            .path_rules
            .iter()
            .any(|r| r.access.is_none() && r.pattern.matches_some_child(dir))
        {
            return AccessSet::EMPTY;
        }
        self.path_rules
            .iter()
            .filter(|r| r.pattern.matches_all_beneath(dir))
            .filter_map(|r| r.access)
            .collect()
    }

    /// `Some(set)` if every path strictly beneath `dir` gets exactly the
    /// rights `set`, so the whole subtree can be granted (for example as one
    /// Landlock rule) without looking at names; `None` if paths beneath
    /// `dir` are treated differently.
    ///
    /// A rule that starts inside the subtree breaks uniformity unless it
    /// cannot change anything: an allow whose access the whole subtree
    /// already has, or a deny inside a subtree that has no rights anyway.
    pub fn subtree_rights(&self, dir: &str) -> Option<AccessSet> {
        let mut all = AccessSet::EMPTY;
        let mut partial_allow = AccessSet::EMPTY;
        let mut partial_deny = false;
        for r in &self.path_rules {
            let covers_all = r.pattern.matches_all_beneath(dir);
            let covers_some = covers_all || r.pattern.matches_some_beneath(dir);
            match (r.access, covers_all, covers_some) {
                // A deny over the whole subtree settles it.
                (None, true, _) => return Some(AccessSet::EMPTY),
                (None, false, true) => partial_deny = true,
                (Some(a), true, _) => all.insert(a),
                (Some(a), false, true) => partial_allow.insert(a),
                (_, _, false) => {}
            }
        }
        let uniform = partial_allow.is_subset(all) && (!partial_deny || all.is_empty());
        uniform.then_some(all)
    }

    /// Whether some `path-deny` rule can match a path strictly beneath `dir`:
    /// what a directory moved away from `dir` would carry out of its reach.
    pub fn denies_some_beneath(&self, dir: &str) -> bool {
        self.path_rules
            .iter()
            .any(|r| r.access.is_none() && r.pattern.matches_some_beneath(dir))
    }

    /// The first rule that grants `access` to every path strictly beneath
    /// `dir` (what [`Policy::subtree_rights`] found it by), for explanations.
    pub fn subtree_rule(&self, dir: &str, access: Access) -> Option<RuleId> {
        self.path_rules
            .iter()
            .position(|r| r.access == Some(access) && r.pattern.matches_all_beneath(dir))
            .map(RuleId)
    }

    /// The canonical text of the policy: settings, then one `path-allow`
    /// line per access (patterns in first-seen order, duplicates dropped),
    /// one `path-deny` line, then the `net-allow` lines (IP rules one per
    /// line, unix-domain patterns one line per direction). Comments and
    /// spans are not kept. Parsing the result gives an
    /// [`equivalent`](Policy::equivalent) policy.
    pub fn to_normalized_string(&self) -> String {
        let mut out = String::new();
        if let Some(uid) = self.starting_uid {
            let _ = writeln!(out, "starting_uid {uid}");
        }
        if let Some(gid) = self.starting_gid {
            let _ = writeln!(out, "starting_gid {gid}");
        }
        if let Some((r, _)) = &self.map_ids {
            let _ = writeln!(out, "map-ids {} {} {}", r.inside, r.outside, r.count);
        }
        if let Some((dir, _)) = &self.starting_dir {
            let _ = writeln!(out, "starting_dir {dir}");
        }
        for kind in LimitKind::ALL {
            if let Some(v) = self.limits.get(kind) {
                let _ = writeln!(out, "{} {v}", kind.keyword());
            }
        }
        if self.ptrace_inside.is_some() {
            out.push_str("ptrace-allow inside\n");
        }
        let groups = Access::ALL
            .iter()
            .map(|&a| (Some(a), format!("path-allow {a}")))
            .chain(std::iter::once((None, "path-deny".to_string())));
        for (access, head) in groups {
            let patterns = self
                .path_rules
                .iter()
                .filter(|r| r.access == access)
                .map(|r| &r.pattern);
            write_line(&mut out, &head, patterns);
        }
        let mut seen = HashSet::new();
        for rule in &self.net_rules {
            if matches!(rule.target, NetTarget::Ip { .. })
                && seen.insert((rule.direction, &rule.target))
            {
                let _ = writeln!(out, "{rule}");
            }
        }
        for dir in Direction::ALL {
            let patterns = self.net_rules.iter().filter_map(|r| match &r.target {
                NetTarget::Unix(p) if r.direction == dir => Some(p),
                _ => None,
            });
            write_line(&mut out, &format!("net-allow {dir} unix-domain"), patterns);
        }
        for map in &self.maps {
            let _ = writeln!(out, "{map}");
        }
        out
    }

    /// Whether `other` has the same settings and the same rules as `self`,
    /// ignoring spans, rule order and duplicates. This is the equality
    /// [`Policy::to_normalized_string`] preserves.
    pub fn equivalent(&self, other: &Policy) -> bool {
        fn path_set(p: &Policy) -> HashSet<(Option<Access>, &PathPattern)> {
            p.path_rules
                .iter()
                .map(|r| (r.access, &r.pattern))
                .collect()
        }
        fn net_set(p: &Policy) -> HashSet<(Direction, &NetTarget)> {
            p.net_rules
                .iter()
                .map(|r| (r.direction, &r.target))
                .collect()
        }
        self.starting_uid == other.starting_uid
            && self.starting_gid == other.starting_gid
            && self.map_ids.as_ref().map(|(r, _)| r) == other.map_ids.as_ref().map(|(r, _)| r)
            && self.starting_dir.as_ref().map(|(d, _)| d)
                == other.starting_dir.as_ref().map(|(d, _)| d)
            && self.limits == other.limits
            && self.ptrace_inside.is_some() == other.ptrace_inside.is_some()
            && path_set(self) == path_set(other)
            && net_set(self) == net_set(other)
            && self.maps.len() == other.maps.len()
            && self.maps.iter().all(|m| {
                other
                    .maps
                    .iter()
                    .any(|o| (&o.source, &o.sandbox, o.mode) == (&m.source, &m.sandbox, m.mode))
            })
    }

    /// One sentence telling a user why `access` to `path` is denied and what
    /// to change, e.g. `no path-allow read rule matches; add: path-allow
    /// read /srv/data` or `path-deny /etc/shadow at <default>:12:11 forbids
    /// it`.
    pub fn explain_denial(&self, path: &str, access: Access) -> String {
        match self.check(path, access) {
            Verdict::Allowed(id) => {
                let rule = self.rule(id);
                format!(
                    "not denied: path-allow {access} {} at {} allows it",
                    rule.pattern, rule.span
                )
            }
            Verdict::Denied(Denial::DeniedBy(id)) => {
                let rule = self.rule(id);
                format!("path-deny {} at {} forbids it", rule.pattern, rule.span)
            }
            Verdict::Denied(Denial::NoRule) => {
                // Suggest a rule only if the path can be written as one.
                if PathPattern::names_exactly(path) {
                    format!("no path-allow {access} rule matches; add: path-allow {access} {path}")
                } else {
                    format!("no path-allow {access} rule matches, and {UNNAMEABLE}")
                }
            }
        }
    }
}

/// Writes `head` followed by each distinct pattern, as one line, if there is
/// at least one pattern.
fn write_line<'a>(out: &mut String, head: &str, patterns: impl Iterator<Item = &'a PathPattern>) {
    let mut seen = HashSet::new();
    let mut line = head.to_string();
    for p in patterns {
        if seen.insert(p) {
            line.push(' ');
            let _ = write!(line, "{p}");
        }
    }
    if !seen.is_empty() {
        out.push_str(&line);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests;

/// Which kinds of IP traffic a policy allows at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IpUse {
    /// Some `net-allow ... tcp` rule exists.
    pub tcp: bool,
    /// Some `net-allow ... udp` rule exists.
    pub udp: bool,
}

impl IpUse {
    /// Whether the policy allows any IP traffic (and so the host's network is reachable).
    pub fn any(self) -> bool {
        self.tcp || self.udp
    }

    /// Whether `proto` has rules.
    pub fn allows(self, proto: Protocol) -> bool {
        match proto {
            Protocol::Tcp => self.tcp,
            Protocol::Udp => self.udp,
        }
    }
}

impl Policy {
    /// Which IP protocols have `net-allow` rules.
    pub fn ip_use(&self) -> IpUse {
        let mut u = IpUse::default();
        for r in &self.net_rules {
            if let NetTarget::Ip { protocol, .. } = r.target {
                match protocol {
                    Protocol::Tcp => u.tcp = true,
                    Protocol::Udp => u.udp = true,
                }
            }
        }
        u
    }

    /// The first `net-allow` rule that lets `proto` traffic go `dir` with the endpoint
    /// `ip`:`port` (the peer for `outgoing`; for `incoming`, the peer's address and the local
    /// port). `myhost` lists the host's own addresses for `MYHOST_ADDR`.
    pub fn check_ip(
        &self,
        dir: Direction,
        proto: Protocol,
        ip: IpAddr,
        port: u16,
        myhost: &[IpAddr],
    ) -> Option<&NetRule> {
        self.net_rules
            .iter()
            .find(|r| r.matches_ip(dir, proto, ip, port, myhost))
    }

    /// The first `net-allow incoming` rule of `proto` whose port range contains the local port
    /// `port`, whatever its address: what binding that port needs (the peers are checked as
    /// their packets arrive).
    pub fn check_local_port(&self, proto: Protocol, port: u16) -> Option<&NetRule> {
        self.net_rules.iter().find(|r| {
            r.direction == Direction::Incoming
                && matches!(&r.target, NetTarget::Ip { protocol, port: p, .. }
                    if *protocol == proto && p.matches(port))
        })
    }

    /// The first `net-allow DIR unix-domain` rule matching the socket path `path`.
    pub fn check_unix(&self, dir: Direction, path: &str) -> Option<&NetRule> {
        self.net_rules.iter().find(|r| r.matches_unix(dir, path))
    }

    /// Why a connect (`Outgoing`) or bind (`Incoming`) of the unix socket named `path` was
    /// denied, with the one line that lets the whole call through: the `net-allow DIR
    /// unix-domain` rule both gives the name (and lets the walk pass the directories on the way
    /// to it) and allows the connect or bind, where path rules would take a `write` on the
    /// name and a round each to learn. A `path-deny` on the name is named instead (a unix rule
    /// would not reach through it).
    pub fn explain_unix_denial(&self, dir: Direction, path: &str) -> String {
        if let Some(id) = self.denied_by(path) {
            let rule = self.rule(id);
            return format!("path-deny {} at {} forbids it", rule.pattern, rule.span);
        }
        if PathPattern::names_exactly(path) {
            format!(
                "no net-allow {dir} unix-domain rule matches {path} (nor a path-allow write); \
                 add: net-allow {dir} unix-domain {path}"
            )
        } else {
            format!(
                "no net-allow {dir} unix-domain rule matches (nor a path-allow write), and \
                 {UNNAMEABLE}"
            )
        }
    }

    /// Why IP traffic was denied, with the rule that would allow it.
    pub fn explain_ip_denial(
        &self,
        dir: Direction,
        proto: Protocol,
        ip: IpAddr,
        port: u16,
    ) -> String {
        let addr = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let whom = match dir {
            Direction::Outgoing => format!("to {}", SocketAddr::new(addr, port)),
            Direction::Incoming => format!("on local port {port} from {addr}"),
        };
        format!("no net-allow {dir} {proto} rule matches {whom}; add: net-allow {dir} {proto} {addr} {port}")
    }

    /// Why binding local port `port` was denied, with the rule that would allow it.
    pub fn explain_bind_denial(&self, proto: Protocol, port: u16) -> String {
        format!(
            "no net-allow incoming {proto} rule covers local port {port}; add: \
             net-allow incoming {proto} 0/0 {port} (or narrower peers)"
        )
    }
}
