//! Which path rules the kernel can enforce by itself, exactly: the fast path's precondition.
//!
//! warden compiles every policy into a Landlock ruleset. Usually that ruleset is a backstop: the
//! agent decides every open, and Landlock only bounds what a call let through by mistake could
//! reach. When the ruleset says *exactly* what the policy says about opening files, the open
//! family can go straight to the kernel instead (the fast path), and only the calls Landlock
//! does not govern (stat, readlink, chdir, rename, exec, `O_PATH` opens, ...) stay delegated.
//!
//! "Exactly" is checked rule by rule, on the paths as they exist now, because Landlock rules
//! attach to existing directories and files and cover everything beneath them:
//! - `D/*` is exact when `D` exists, every path beneath `D` gets the same rights from the policy
//!   (no `path-deny` or narrower rule inside), and, for `read`, `D` itself may be listed (a rule
//!   on `D` lets `D` be listed too);
//! - an exact file is exact when it exists and is not a symlink to a path the policy does not
//!   allow by its own name;
//! - an exact directory with `read` is exact only when its whole tree is readable (a rule on a
//!   directory lets every directory beneath it be listed);
//! - `exec` needs `read` on the same paths (the kernel reads what it executes, and Landlock's
//!   execute right comes with the read right);
//! - `/proc/self/...`, name prefixes (`D/na*`), paths that do not exist yet and `path-deny`
//!   inside an allowed tree cannot be said in Landlock.
//!
//! Anything that cannot keeps the whole open family delegated: the choice is per policy, and
//! `warden check` shows it. This module is pure: the caller says what each path is now.

use crate::policy::{Access, Policy, RuleId};

/// What a path names on the file system now, as the caller found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// Nothing (or nothing Landlock can name, such as a link to a pipe).
    Missing,
    /// A directory, with its canonical path (symlinks resolved).
    Dir(String),
    /// Anything else that exists, with its canonical path.
    File(String),
}

/// How one path rule is enforced when the open family goes straight to the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Enforcer {
    /// Landlock decides the opens this rule is about, with the same answer as the policy.
    Kernel,
    /// The rule is only about calls the agent always performs (unlink, rename, rmdir, ...).
    Agent,
    /// Landlock refuses opens this rule allows (it cannot name the paths), and nothing more:
    /// the fast path is narrower here, never wider. The sentence says what fails.
    Narrower(String),
    /// Landlock cannot say this rule exactly; the sentence says why and what would.
    Blocks(String),
}

/// One rule's line in the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RulePlan {
    /// The rule ([`Policy::rule`]).
    pub rule: RuleId,
    /// Who enforces it on the fast path.
    pub enforcer: Enforcer,
}

/// The verdict for a whole policy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelPlan {
    /// One entry per path rule, in policy order.
    pub rules: Vec<RulePlan>,
}

impl KernelPlan {
    /// Whether Landlock can enforce every path rule exactly, so opens may skip the agent.
    pub fn exact(&self) -> bool {
        self.blockers().next().is_none()
    }

    /// The rules that keep opens delegated, each with its reason.
    pub fn blockers(&self) -> impl Iterator<Item = (RuleId, &str)> {
        self.rules.iter().filter_map(|r| match &r.enforcer {
            Enforcer::Blocks(why) => Some((r.rule, why.as_str())),
            _ => None,
        })
    }
}

/// Whether, in a view whose opens the kernel decides ([`kernel_plan_in_view`] exact), the
/// kernel also decides `execve` as `policy` does, so execs may skip the agent: no exec rule
/// names an exact path that does not exist now. For such a path (a program the build makes)
/// Landlock's execute right and the view's exec mount go to the nearest directory that does
/// exist, wider than the rule, and only the agent's check of each exec holds it to the file.
/// Every other exec rule the kernel says exactly or more narrowly (a tree that does not exist
/// is neither in the view nor in the ruleset).
pub fn exec_exact_in_view(policy: &Policy, find: &dyn Fn(&str) -> Found) -> bool {
    policy.path_rules().iter().all(|r| {
        r.access != Some(Access::Exec)
            || r.pattern.is_prefix()
            || r.pattern.per_process()
            || find(r.pattern.literal()) != Found::Missing
    })
}

/// Works out, rule by rule, whether `policy` (with `$SCRATCH` expanded, or `find` answering
/// for it) can be enforced on opens by Landlock alone. `find` says what a path is now.
pub fn kernel_plan(policy: &Policy, find: &dyn Fn(&str) -> Found) -> KernelPlan {
    plan(policy, find, false)
}

/// As [`kernel_plan`], for a sandbox in its own view (`crate::view`), where more can be said
/// exactly: a `path-deny` inside an allowed tree is masked, `/proc` is the sandbox's own procfs
/// (so `/proc/self/...` rules hold for every process of the sandbox and nothing outside it
/// exists), `/dev` holds only the devices and links the policy names, and listing a directory
/// shows only what the view brought in. Only name prefixes, devices under a prefix rule and
/// denials inside `/proc` (per process: no mount can hide them) stay blockers.
pub fn kernel_plan_in_view(policy: &Policy, find: &dyn Fn(&str) -> Found) -> KernelPlan {
    plan(policy, find, true)
}

fn plan(policy: &Policy, find: &dyn Fn(&str) -> Found, view: bool) -> KernelPlan {
    // In a view, a deny outside /proc is a mask: the trees around it are judged without it.
    let unmasked;
    let judged = if view {
        let mut p = policy.clone();
        p.path_rules
            .retain(|r| r.access.is_some() || r.pattern.literal().starts_with("/proc/"));
        unmasked = p;
        &unmasked
    } else {
        policy
    };
    let rules = policy
        .path_rules()
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let lit = r.pattern.literal();
            let enforcer = match r.access {
                None if view && !lit.starts_with("/proc/") => {
                    deny_in_view(policy, &r.pattern, find)
                }
                None => deny_plan(policy, lit, r.pattern.is_prefix()),
                Some(Access::Unlink) => Enforcer::Agent,
                Some(_) if view && in_views_own(lit, r.pattern.is_prefix()) => Enforcer::Kernel,
                Some(access) if view && r.pattern.is_prefix() && lit == "/dev/" => {
                    dev_tree_in_view(policy, access, find)
                }
                Some(_) if view && in_private_tmpfs(policy, lit) => in_tmpfs(policy, &r.pattern),
                Some(access) if view => match find(lit) {
                    _ if r.pattern.is_prefix() => absent_is_narrower(
                        allow_plan(
                            &without_nested_trees(judged, lit, find),
                            access,
                            &r.pattern,
                            find,
                        ),
                        lit,
                    ),
                    // Listing a directory lists the view's, which holds only what rules bring;
                    // Landlock can allow it only with a rule over everything beneath.
                    Found::Dir(_) if access == Access::Read => Enforcer::Narrower(format!(
                        "in the view, {lit} may be listed only when every tree the view holds \
                         may be read (one Landlock rule covers all beneath it); otherwise \
                         listing it fails with EACCES"
                    )),
                    _ => absent_is_narrower(allow_plan(judged, access, &r.pattern, find), lit),
                },
                Some(access) => allow_plan(policy, access, &r.pattern, find),
            };
            RulePlan {
                rule: RuleId(i),
                enforcer,
            }
        })
        .collect();
    KernelPlan { rules }
}

/// A `path-deny` in a view: the view covers what it names with a mask (a mount point the
/// program can neither open, remove nor move), and Landlock's rules then cover whole trees
/// (`crate::confine::landlock`). A mask covers only what exists at the start: a name the deny
/// matches that does not exist yet (a missing path, any new name under `D/*` or `D/na*`) could
/// be created in a tree the program may write, and no kernel rule would refuse it. There the
/// agent decides; in a tree nobody may write, nothing new appears.
fn deny_in_view(
    policy: &Policy,
    pattern: &crate::PathPattern,
    find: &dyn Fn(&str) -> Found,
) -> Enforcer {
    let lit = pattern.literal();
    if !pattern.is_prefix() && find(lit) != Found::Missing {
        return Enforcer::Kernel;
    }
    let writable = policy.path_rules().iter().any(|a| {
        matches!(a.access, Some(Access::Write))
            && (a.pattern.matches(lit)
                || (a.pattern.is_prefix() && lit.starts_with(a.pattern.literal()))
                || (pattern.is_prefix() && a.pattern.literal().starts_with(lit)))
    });
    if writable {
        Enforcer::Blocks(format!(
            "`path-deny {pattern}` names what may be created later in a tree the program may \
             write, where the view's masks (made at the start) cannot cover it"
        ))
    } else {
        Enforcer::Kernel
    }
}

/// `policy` without the trees nested strictly beneath tree `lit` (`D/`) that the view holds in
/// place, to judge `D/*` in a view: each such `D/sub/*` then adds its rights beneath `sub` to
/// `D`'s exactly as Landlock's rule on `sub` does, and is judged on its own. Held in place:
/// `sub` exists (a directory, by its own name), and either nothing in `D`'s mount can be
/// renamed (no `write` or `unlink` reaches `D`: a read-only bind), or `sub` is a mount point of
/// its own (`crate::view` binds a tree whose mount flags differ from the tree around it: it
/// gets `write` or `exec` that `D` does not), which cannot be moved or removed (EBUSY), and a
/// hard link between the two crosses a mount (EXDEV). Otherwise the program could rename
/// `sub` and carry its Landlock rule to another name, and the agent keeps `D`.
fn without_nested_trees<'p>(
    policy: &'p Policy,
    lit: &str,
    find: &dyn Fn(&str) -> Found,
) -> std::borrow::Cow<'p, Policy> {
    use crate::map::at_or_beneath;
    let Some(outer) = lit.strip_suffix('/') else {
        return std::borrow::Cow::Borrowed(policy);
    };
    // The bind's flags at `dir`: (writable, executable), from the rules on it and around it.
    let flags = |dir: &str| {
        let on = |r: &&crate::policy::PathRule| {
            let l = r.pattern.literal();
            r.access.is_some()
                && (l.trim_end_matches('/') == dir
                    || (r.pattern.is_prefix() && l.ends_with('/') && at_or_beneath(dir, l)))
        };
        let rules: Vec<_> = policy.path_rules().iter().filter(on).collect();
        (
            rules
                .iter()
                .any(|r| matches!(r.access, Some(Access::Write | Access::Unlink))),
            rules.iter().any(|r| r.access == Some(Access::Exec)),
        )
    };
    let nested = |r: &crate::policy::PathRule| {
        let inner = r.pattern.literal();
        r.access.is_some()
            && r.pattern.is_prefix()
            && inner.ends_with('/')
            && inner.len() > lit.len()
            && inner.starts_with(lit)
    };
    // Asked only when some tree is nested in this one: the plan judges every rule of the
    // policy, at every start.
    if !policy.path_rules().iter().any(nested) {
        return std::borrow::Cow::Borrowed(policy);
    }
    let outer_flags = flags(outer);
    // A program the run will make beneath `D` makes `D`'s bind executable later
    // (`crate::view`): its flags are not known from the rules alone.
    let made_later = policy.path_rules().iter().any(|r| {
        r.access == Some(Access::Exec)
            && !r.pattern.is_prefix()
            && r.pattern.literal().starts_with(lit)
            && find(r.pattern.literal()) == Found::Missing
    });
    let mut p = policy.clone();
    p.path_rules.retain(|r| {
        let dir = r.pattern.literal().trim_end_matches('/');
        !(nested(r)
            && (!outer_flags.0 || (!made_later && flags(dir) != outer_flags))
            && find(dir) == Found::Dir(dir.to_string()))
    });
    std::borrow::Cow::Owned(p)
}

/// In a view, a rule on a path that does not exist now is narrower, not a blocker: the view does
/// not hold the path either, so the kernel refuses what the rule allows there.
fn absent_is_narrower(enforcer: Enforcer, lit: &str) -> Enforcer {
    match enforcer {
        Enforcer::Blocks(why) if why.contains("does not exist now") => Enforcer::Narrower(format!(
            "{lit} does not exist now, so the view does not hold it, and what this rule allows \
             there fails until a run starts after it exists"
        )),
        other => other,
    }
}

/// In a view, `/proc/...` names the sandbox's own procfs (read under one Landlock rule on its
/// root, with the rest masked), and an exact name in `/dev` is a device or link the view binds.
/// `lit` lies at or beneath a `path-map tmpfs`: a place of the sandbox's own, holding only what
/// the run makes there (no device: the tmpfs is `nodev`), whose rules Landlock gets on the
/// view's own objects.
fn in_private_tmpfs(policy: &Policy, lit: &str) -> bool {
    policy.maps().iter().any(|m| {
        m.source == crate::map::MapSource::Tmpfs
            && crate::map::at_or_beneath(lit.trim_end_matches('/'), &m.sandbox)
    })
}

/// Who enforces a rule inside a private tmpfs: the kernel for a rule on a map's own root (`D`,
/// `D/*`), which exists when the run starts, and for a tree beneath it (`D/sub/*`), whose
/// directory the view makes in the tmpfs before the program starts ([`made_in_tmpfs`]). Not
/// for a name prefix, which Landlock cannot name, nor for a single name beneath the root: the
/// tmpfs starts empty, so there is nothing to attach a Landlock rule to, and the kernel would
/// refuse, for the whole run, what the agent allows once the run makes the file (`path-allow
/// write D/app.pid` could never be created).
fn in_tmpfs(policy: &Policy, pattern: &crate::PathPattern) -> Enforcer {
    let lit = pattern.literal().trim_end_matches('/');
    if pattern.is_prefix() && pattern.literal().ends_with('/') {
        Enforcer::Kernel
    } else if pattern.is_prefix() {
        Enforcer::Blocks(format!(
            "`{pattern}` matches names by how they start, which Landlock cannot name"
        ))
    } else if policy
        .maps()
        .iter()
        .any(|m| m.sandbox.trim_end_matches('/') == lit)
    {
        Enforcer::Kernel
    } else {
        Enforcer::Blocks(format!(
            "`{pattern}` names a place inside a private tmpfs, which starts empty: Landlock \
             can name only the map's own directory (`D` or `D/*`), not what the run makes in it"
        ))
    }
}

/// The directories a view makes inside its private tmpfs places before the program starts,
/// parents first: `D` of every `D/*` rule (a grant, not a deny) beneath a `path-map tmpfs`,
/// with those between. Landlock's rule for `D/*` needs `D` to exist; the program could make it
/// itself under the same rule, so making it grants nothing the rule does not.
pub fn made_in_tmpfs(policy: &Policy) -> Vec<String> {
    let mut dirs: Vec<String> = Vec::new();
    for rule in policy.path_rules() {
        if rule.access.is_none() || !rule.pattern.is_prefix() {
            continue;
        }
        let Some(dir) = rule.pattern.literal().strip_suffix('/') else {
            continue;
        };
        let Some(map) = policy.maps().iter().find(|m| {
            m.source == crate::map::MapSource::Tmpfs
                && dir != m.sandbox.trim_end_matches('/')
                && crate::map::at_or_beneath(dir, &m.sandbox)
        }) else {
            continue;
        };
        let mut at = map.sandbox.trim_end_matches('/').to_owned();
        for part in dir[at.len()..].split('/').filter(|p| !p.is_empty()) {
            if part == "." || part == ".." {
                break;
            }
            at.push('/');
            at.push_str(part);
            if !dirs.contains(&at) {
                dirs.push(at.clone());
            }
        }
    }
    dirs
}

/// `D/*` on the view's own `/dev`, which holds only the devices and links the policy names
/// exactly (and the private tmpfs places mapped there, with their own rules): a Landlock rule on
/// it gives `access` to every device the view brought in, so it is exact when each of them is
/// named for `access` too (a device named only for writing is not read through `/dev/*`: the
/// agent opens a device only for a rule that names it). A link there leads elsewhere, where
/// its target's own rule decides.
fn dev_tree_in_view(policy: &Policy, access: Access, find: &dyn Fn(&str) -> Found) -> Enforcer {
    if !matches!(access, Access::Read | Access::Write) {
        return Enforcer::Blocks(format!(
            "`path-allow {access} /dev/*` would give the view's devices a right no device rule \
             names"
        ));
    }
    let unnamed = policy.path_rules().iter().find(|r| {
        let lit = r.pattern.literal();
        r.access.is_some()
            && !r.pattern.is_prefix()
            && lit.starts_with("/dev/")
            && !in_private_tmpfs(policy, lit)
            && matches!(find(lit), Found::File(ref canonical) if canonical == lit)
            && !policy.names_exactly(lit, access)
    });
    match unnamed {
        None => Enforcer::Kernel,
        Some(r) => Enforcer::Blocks(format!(
            "the view's /dev holds {dev}, which no rule names for {access}, and a Landlock rule \
             on /dev would give it; add `path-allow {access} {dev}` if it may be",
            dev = r.pattern.literal()
        )),
    }
}

fn in_views_own(lit: &str, prefix: bool) -> bool {
    lit == "/proc" || lit.starts_with("/proc/") || (!prefix && lit.starts_with("/dev/"))
}

fn allow_plan(
    policy: &Policy,
    access: Access,
    pattern: &crate::PathPattern,
    find: &dyn Fn(&str) -> Found,
) -> Enforcer {
    let lit = pattern.literal();
    if pattern.is_prefix() && "/proc/self".starts_with(lit) {
        // `/proc/*` or wider: also every other process's entries, which Landlock would allow.
        return Enforcer::Blocks(format!(
            "`{pattern}` covers /proc, whose entries Landlock cannot tell apart from the caller's \
             own /proc/self"
        ));
    }
    if pattern.is_prefix()
        && access != Access::Exec
        && ("/dev/".starts_with(lit) || lit.starts_with("/dev/"))
    {
        // A sandbox whose uid maps to root could open a disk through such a rule.
        return Enforcer::Blocks(format!(
            "`{pattern}` covers the device nodes in /dev, and Landlock cannot tell a device from a \
             file; the agent opens a device only where a rule names it exactly"
        ));
    }
    if pattern.per_process() {
        return Enforcer::Narrower(
            "Landlock has no rule for a path that means a different process to each caller, so \
             on the fast path opening paths under /proc/self fails with EACCES; readlink, stat \
             and the other calls the agent performs still follow this rule"
                .into(),
        );
    }
    if pattern.is_prefix() {
        let Some(dir) = lit.strip_suffix('/') else {
            let parent = lit
                .rsplit_once('/')
                .map_or("/", |(d, _)| if d.is_empty() { "/" } else { d });
            return Enforcer::Blocks(format!(
                "`{pattern}` matches names by how they start; Landlock grants whole files and \
                 directories, so a name created later in {parent} would be refused; write \
                 `{parent}/*` or list the paths"
            ));
        };
        let dir = if dir.is_empty() { "/" } else { dir };
        tree_plan(policy, access, dir, false, find)
    } else {
        match find(lit) {
            Found::Missing => Enforcer::Blocks(format!(
                "{lit} does not exist now, and Landlock can only name what exists; create it \
                 before the run or allow its directory with `/*`"
            )),
            Found::Dir(_) if access == Access::Read => tree_plan(policy, access, lit, true, find),
            // Landlock gives an exact directory nothing but listing; what write or exec on a
            // directory allows (chmod, utimes) is the agent's.
            Found::Dir(_) => Enforcer::Agent,
            Found::File(canonical) => file_plan(policy, access, lit, &canonical),
        }
    }
}

/// A Landlock rule on directory `dir`, covering it and everything beneath: exact when the
/// policy treats the whole tree alike. `exact_dir`: the rule is `read DIR` (only listing).
fn tree_plan(
    policy: &Policy,
    access: Access,
    dir: &str,
    exact_dir: bool,
    find: &dyn Fn(&str) -> Found,
) -> Enforcer {
    let canonical = match find(dir) {
        Found::Dir(c) => c,
        Found::File(_) => {
            return Enforcer::Blocks(format!(
                "{dir} is not a directory, so `{dir}/*` names nothing Landlock can hold"
            ))
        }
        Found::Missing => {
            return Enforcer::Blocks(format!(
                "{dir} does not exist now, and Landlock can only name what exists; create it \
                 before the run"
            ))
        }
    };
    for name in std::iter::once(dir).chain((canonical != dir).then_some(canonical.as_str())) {
        let Some(rights) = policy.subtree_rights(name) else {
            let deny_inside = policy.path_rules().iter().any(|r| {
                r.access.is_none()
                    && (r
                        .pattern
                        .literal()
                        .starts_with(&format!("{}/", name.trim_end_matches('/')))
                        || r.pattern.matches(name))
            });
            return Enforcer::Blocks(if deny_inside {
                format!(
                    "a path-deny lies inside {name}: Landlock cannot take a path out of a tree \
                     it allows"
                )
            } else {
                format!(
                    "rules inside {name} give some paths more rights than others: a Landlock \
                     rule on {name} gives the whole tree the same rights"
                )
            });
        };
        if name != dir && !rights.contains(access) {
            let what = if exact_dir {
                name.to_string()
            } else {
                format!("{name}/*")
            };
            return Enforcer::Blocks(format!(
                "{dir} is a symlink to {name}, and Landlock would allow {name} by its own name \
                 too; add `path-allow {access} {what}`"
            ));
        }
        if exact_dir && !rights.contains(Access::Read) {
            return Enforcer::Blocks(format!(
                "a Landlock rule on the directory {dir} would let every directory beneath it be \
                 listed; add `path-allow read {dir}/*`, or drop this rule"
            ));
        }
        if !exact_dir && !rights.contains(access) {
            return Enforcer::Blocks(format!("a path-deny covers {dir}/*"));
        }
        if access == Access::Exec && !rights.contains(Access::Read) {
            return Enforcer::Blocks(format!(
                "Landlock's execute right comes with the right to read: add `path-allow read \
                 {name}/*` (the kernel reads what it executes anyway)"
            ));
        }
        if access == Access::Read && !policy.check(name, Access::Read).is_allowed() {
            return Enforcer::Blocks(format!(
                "a Landlock rule on {name} would also let {name} itself be listed; add \
                 `path-allow read {name}`"
            ));
        }
    }
    Enforcer::Kernel
}

/// A Landlock rule on one existing file.
fn file_plan(policy: &Policy, access: Access, lit: &str, canonical: &str) -> Enforcer {
    if !policy.check(lit, access).is_allowed() {
        return Enforcer::Blocks(format!(
            "a path-deny names {lit}, and Landlock cannot refuse a file it was told to allow"
        ));
    }
    if access == Access::Exec && !policy.check(lit, Access::Read).is_allowed() {
        return Enforcer::Blocks(format!(
            "Landlock's execute right comes with the right to read: add `path-allow read {lit}`"
        ));
    }
    if canonical != lit && !policy.check(canonical, access).is_allowed() {
        return Enforcer::Blocks(format!(
            "{lit} leads to {canonical}, and Landlock would allow {canonical} by its own name \
             too; add `path-allow {access} {canonical}`"
        ));
    }
    Enforcer::Kernel
}

/// A deny is said by Landlock when no allow rule reaches into it: everything Landlock is not
/// told to allow is refused.
fn deny_plan(policy: &Policy, lit: &str, prefix: bool) -> Enforcer {
    let overlaps = policy.path_rules().iter().any(|a| {
        a.access.is_some()
            && (a.pattern.matches(lit)
                || (prefix && a.pattern.literal().starts_with(lit))
                || (a.pattern.is_prefix() && lit.starts_with(a.pattern.literal())))
    });
    if overlaps {
        Enforcer::Blocks(format!(
            "{lit} lies inside what another rule allows, and Landlock cannot take a path out of \
             a rule's tree"
        ))
    } else {
        Enforcer::Kernel
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file system of directories and files given as lists; symlinks as (link, target).
    fn fs<'a>(
        dirs: &'a [&'a str],
        files: &'a [&'a str],
        links: &'a [(&'a str, &'a str)],
    ) -> impl Fn(&str) -> Found + 'a {
        move |p: &str| {
            let mut p = p.to_string();
            for (link, target) in links {
                if p == *link || p.starts_with(&format!("{link}/")) {
                    p = format!("{target}{}", &p[link.len()..]);
                }
            }
            if dirs.contains(&p.as_str()) {
                Found::Dir(p)
            } else if files.contains(&p.as_str()) {
                Found::File(p)
            } else {
                Found::Missing
            }
        }
    }

    fn plan(text: &str, find: &dyn Fn(&str) -> Found) -> KernelPlan {
        let policy = Policy::parse("t", text).expect("parses");
        kernel_plan(&policy, find)
    }

    fn reasons(p: &KernelPlan) -> Vec<String> {
        p.blockers().map(|(_, w)| w.to_string()).collect()
    }

    const DIRS: &[&str] = &[
        "/", "/usr", "/usr/lib", "/etc", "/etc/ssl", "/data", "/proc",
    ];
    const FILES: &[&str] = &["/etc/passwd", "/etc/shadow", "/usr/bin-tool", "/data/x"];

    #[test]
    fn execs_are_the_kernels_unless_an_exact_exec_rule_names_a_missing_file() {
        let find = fs(DIRS, FILES, &[]);
        let exact =
            |text: &str| exec_exact_in_view(&Policy::parse("t", text).expect("parses"), &find);
        // Trees, present or not (a missing one is in neither the view nor the ruleset), files
        // that exist, and rules on other rights.
        assert!(exact(
            "path-allow exec /usr/* /lib32/* /usr/bin-tool /data/x\npath-allow read /data/new"
        ));
        assert!(exact("path-allow exec /proc/self/exe"));
        // A program the run will make: Landlock and the view allow its directory.
        assert!(!exact("path-allow exec /usr/* /data/made-later"));
        assert!(!exact(
            "path-allow write /data/*\npath-allow exec /data/sub/prog"
        ));
    }

    #[test]
    fn rules_in_a_private_tmpfs_are_the_kernels_in_a_view() {
        let find = fs(DIRS, FILES, &[]);
        let policy = Policy::parse(
            "t",
            "path-map tmpfs /dev/shm\npath-map tmpfs /scratch2\n\
             path-allow read /dev/shm /dev/shm/* /scratch2/*\npath-allow write /dev/shm/*\n\
             path-allow write /scratch2/made*",
        )
        .expect("parses");
        let p = kernel_plan_in_view(&policy, &find);
        // A tree in /dev would cover devices, but a tmpfs map is `nodev` and the sandbox's own;
        // a rule there is the kernel's even where the host has nothing (/scratch2).
        for i in 0..4 {
            assert_eq!(p.rules[i].enforcer, Enforcer::Kernel, "rule {i}");
        }
        // A name prefix inside one stays a blocker.
        assert_eq!(reasons(&p).len(), 1, "{:?}", reasons(&p));
        assert!(reasons(&p)[0].contains("made*"), "{:?}", reasons(&p));
        // So does a name beneath a map's root: the tmpfs starts empty, and Landlock cannot
        // name a file the run has yet to make (the kernel would refuse it for the whole run).
        let policy = Policy::parse(
            "t",
            "path-map tmpfs /run
path-allow read /run
path-allow write /run/app.pid /run/d/*",
        )
        .expect("parses");
        let p = kernel_plan_in_view(&policy, &find);
        assert_eq!(p.rules[0].enforcer, Enforcer::Kernel);
        // A tree beneath the root is the kernel's: the view makes its directory first.
        assert_eq!(reasons(&p).len(), 1, "{:?}", reasons(&p));
        assert!(reasons(&p)[0].contains("/run/app.pid"), "{:?}", reasons(&p));
        assert_eq!(made_in_tmpfs(&policy), ["/run/d"]);
    }

    #[test]
    fn trees_with_their_roots_are_exact() {
        let find = fs(DIRS, FILES, &[]);
        let p = plan(
            "path-allow read /usr /usr/* /etc/passwd\npath-allow exec /usr/*\n\
             path-allow write /data/*\npath-allow unlink /data/*\npath-deny /home/*",
            &find,
        );
        assert!(p.exact(), "{:?}", reasons(&p));
        assert_eq!(
            p.rules[5].enforcer,
            Enforcer::Agent,
            "unlink is always the agent's"
        );
    }

    #[test]
    fn trees_over_dev_keep_opens_with_the_agent() {
        let dirs = ["/", "/dev", "/dev/pts"];
        let files = ["/dev/null", "/dev/loop0"];
        let find = fs(&dirs, &files, &[]);
        for text in [
            "path-allow read /dev /dev/*",
            "path-allow read /dev/pts /dev/pts/*",
            "path-allow write /dev/*",
        ] {
            let p = plan(text, &find);
            assert!(
                reasons(&p).iter().any(|r| r.contains("device nodes")),
                "{text}: {:?}",
                reasons(&p)
            );
        }
        // A device named exactly is a file rule, which Landlock can say.
        assert!(plan("path-allow read /dev/null", &find).exact());
    }

    #[test]
    fn read_tree_without_its_root_is_exact() {
        let find = fs(DIRS, FILES, &[]);
        // Reading `/usr/*` lets /usr be listed, as the Landlock rule on /usr does.
        assert!(plan("path-allow read /usr/*", &find).exact());
        // Write beneath a directory does not need the directory itself.
        assert!(plan("path-allow write /data/*", &find).exact());
    }

    #[test]
    fn deny_inside_an_allowed_tree_is_not_exact() {
        let find = fs(DIRS, FILES, &[]);
        let p = plan("path-allow read /etc /etc/*\npath-deny /etc/shadow", &find);
        let r = reasons(&p);
        assert!(
            r.iter().any(|w| w.contains("a path-deny lies inside /etc")),
            "{r:?}"
        );
        assert!(
            r.iter().any(|w| w.contains("/etc/shadow lies inside")),
            "{r:?}"
        );
    }

    #[test]
    fn narrower_rules_inside_a_tree_are_not_exact() {
        let find = fs(DIRS, FILES, &[]);
        let p = plan(
            "path-allow read /data /data/*\npath-allow write /data/x",
            &find,
        );
        assert!(!p.exact());
        assert!(
            reasons(&p)[0].contains("more rights than others"),
            "{:?}",
            reasons(&p)
        );
    }

    #[test]
    fn exact_directory_needs_its_tree() {
        let find = fs(DIRS, FILES, &[]);
        let p = plan("path-allow read /", &find);
        assert!(reasons(&p)[0].contains("every directory beneath it be listed"));
        assert!(plan("path-allow read /data /data/*", &find).exact());
        // write on an exact directory is only about calls the agent performs.
        assert_eq!(
            plan("path-allow write /data", &find).rules[0].enforcer,
            Enforcer::Agent
        );
    }

    #[test]
    fn what_landlock_cannot_name() {
        let find = fs(DIRS, FILES, &[]);
        for (text, why) in [
            ("path-allow read /proc/*", "/proc/self"),
            (
                "path-allow read /etc/pass*",
                "matches names by how they start",
            ),
            ("path-allow write /data/new.txt", "does not exist now"),
            ("path-allow read /nowhere /nowhere/*", "does not exist now"),
            ("path-allow read /etc/passwd/*", "is not a directory"),
            (
                "path-allow read /etc/shadow\npath-deny /etc/shadow",
                "a path-deny names",
            ),
        ] {
            let r = reasons(&plan(text, &find));
            assert!(r.iter().any(|w| w.contains(why)), "{text}: {r:?}");
        }
    }

    #[test]
    fn proc_self_is_narrower_not_blocking() {
        let find = fs(DIRS, FILES, &[]);
        let p = plan("path-allow read /proc/self /proc/self/*", &find);
        assert!(p.exact());
        assert!(matches!(p.rules[0].enforcer, Enforcer::Narrower(_)));
    }

    #[test]
    fn exec_needs_read() {
        let find = fs(DIRS, FILES, &[]);
        let r = reasons(&plan("path-allow exec /usr/*", &find));
        assert!(
            r[0].contains("execute right comes with the right to read"),
            "{r:?}"
        );
        let r = reasons(&plan("path-allow exec /usr/bin-tool", &find));
        assert!(
            r[0].contains("add `path-allow read /usr/bin-tool`"),
            "{r:?}"
        );
        assert!(plan(
            "path-allow read /usr/bin-tool\npath-allow exec /usr/bin-tool",
            &find
        )
        .exact());
    }

    #[test]
    fn symlinks_need_their_targets_allowed() {
        let find = fs(
            DIRS,
            FILES,
            &[("/lib", "/usr/lib"), ("/etc/pw", "/etc/passwd")],
        );
        let r = reasons(&plan("path-allow read /lib /lib/*", &find));
        assert!(
            r.iter().any(|w| w.contains("symlink to /usr/lib")) || !r.is_empty(),
            "{r:?}"
        );
        assert!(plan("path-allow read /lib /lib/* /usr /usr/*", &find).exact());
        let r = reasons(&plan("path-allow read /etc/pw", &find));
        assert!(r[0].contains("leads to /etc/passwd"), "{r:?}");
        assert!(plan("path-allow read /etc/pw /etc/passwd", &find).exact());
    }

    #[test]
    fn deny_outside_every_allow_is_exact() {
        let find = fs(DIRS, FILES, &[]);
        let p = plan(
            "path-allow read /usr /usr/*\npath-deny /etc/shadow /home/*",
            &find,
        );
        assert!(p.exact(), "{:?}", reasons(&p));
    }

    #[test]
    fn the_default_policy_is_not_exact_and_says_why() {
        let find = fs(DIRS, FILES, &[]);
        let p = kernel_plan(&Policy::default_policy(), &find);
        let r = reasons(&p);
        assert!(
            r.iter().any(|w| w.contains("a path-deny lies inside /etc")),
            "{r:?}"
        );
        assert!(p
            .rules
            .iter()
            .any(|r| matches!(&r.enforcer, Enforcer::Narrower(w) if w.contains("/proc/self"))));
    }

    #[test]
    fn a_dev_tree_in_the_view_is_the_kernels_when_every_device_is_named_for_it() {
        let dirs = [
            "/",
            "/dev",
            "/dev/pts",
            "/proc",
            "/proc/self",
            "/proc/self/fd",
        ];
        let files = ["/dev/null", "/dev/urandom", "/dev/loop0", "/dev/tty"];
        let find = fs(&dirs, &files, &[("/dev/stdin", "/proc/self/fd/0")]);
        let in_view = |text: &str| {
            let p = Policy::parse("t", text).expect("parses");
            let mut with = Policy::default_policy();
            with.merge(p);
            kernel_plan_in_view(&with, &find)
        };
        // The default names each of its devices for reading: `read /dev/*` adds nothing the
        // view's /dev does not already give, and the kernel holds it.
        let p = in_view("path-allow read /dev/*");
        assert!(p.exact(), "{:?}", reasons(&p));
        // /dev/urandom is named for reading only: a write tree would give it writing.
        let p = in_view("path-allow write /dev/*");
        let r = reasons(&p);
        assert!(
            r.iter()
                .any(|w| w.contains("/dev/urandom")
                    && w.contains("add `path-allow write /dev/urandom`")),
            "{r:?}"
        );
        // A device named for writing only is not read through the tree.
        let p = in_view("path-allow write /dev/loop0\npath-allow read /dev/*");
        let r = reasons(&p);
        assert!(r.iter().any(|w| w.contains("/dev/loop0")), "{r:?}");
        assert!(in_view("path-allow write /dev/loop0\npath-allow read /dev/loop0 /dev/*").exact());
        // Exec on the view's devices: nothing to give them.
        assert!(!in_view("path-allow exec /dev/*").exact());
        // On the host's tree the tree keeps every device of the host's: still the agent's.
        assert!(!kernel_plan(
            &Policy::parse("t", "path-allow read /dev/*").unwrap(),
            &find
        )
        .exact());
    }

    #[test]
    fn nested_trees_in_the_view_add_up_as_landlocks_rules_do() {
        let dirs = [
            "/", "/usr", "/usr/bin", "/usr/lib", "/w", "/w/bin", "/w/src",
        ];
        let find = fs(&dirs, &[], &[("/w/link", "/usr/bin")]);
        let view = |text: &str| kernel_plan_in_view(&Policy::parse("t", text).unwrap(), &find);
        // An exec tree inside a read tree: each directory's rule adds its rights beneath it.
        let p = view("path-allow read /usr /usr/*\npath-allow exec /usr/bin/*");
        assert!(p.exact(), "{:?}", reasons(&p));
        // An exec tree in a writable tree: a mount point of the view's, so it is the kernel's.
        let p = view(
            "path-allow read /w /w/*\npath-allow write /w/*\npath-allow unlink /w/*\n\
             path-allow exec /w/bin/*",
        );
        assert!(p.exact(), "{:?}", reasons(&p));
        // A tree with more rights but the same mount flags in a writable tree (unlink in a
        // writable tree): no mount of its own, so the program could rename it and carry its
        // rule; and a program made later beneath makes the flags unknown: the agent's.
        for text in [
            "path-allow read /w/*\npath-allow write /w/*\npath-allow unlink /w/src/*",
            "path-allow read /w/*\npath-allow write /w/*\npath-allow exec /w/bin/* /w/prog",
        ] {
            let p = view(text);
            assert!(
                p.blockers().any(|(_, w)| w.contains("rules inside /w")),
                "{text}: {:?}",
                reasons(&p)
            );
        }
        // On the host's tree nothing holds /w/bin in place: still the agent's.
        let host = kernel_plan(
            &Policy::parse(
                "t",
                "path-allow read /usr /usr/*\npath-allow exec /usr/bin/*",
            )
            .unwrap(),
            &find,
        );
        assert!(!host.exact());
        // A nested tree that does not exist (yet), or an exact path or a name prefix inside,
        // is no mount point: the tree around it stays the agent's.
        for inner in [
            "path-allow exec /w/out/*",
            "path-allow write /w/src/main.c",
            "path-allow exec /w/bi*",
            "path-allow exec /w/link/*",
        ] {
            let p = view(&format!("path-allow read /w /w/*\n{inner}"));
            assert!(
                p.blockers().any(|(_, w)| w.contains("rules inside /w")),
                "{inner}: {:?}",
                reasons(&p)
            );
        }
    }
}
