//! Read-only trees with `path-deny`s inside, as overlays ([`Step::Filtered`]).
//!
//! Landlock cannot take a path out of a tree it allows, so a tree such as `/etc` with
//! `/etc/shadow` denied inside used to cost a Landlock rule on each entry of the host's tree
//! (some 140 for the default policy's `/etc`, each an open, a rule and a close at every start)
//! and a mask per denied name. As an overlay, the tree is the host's tree under a small layer of
//! the view's own: a whiteout for each denied name (the name does not exist in the view, what
//! ever the host has there now or makes later), an opaque directory for a directory whose names
//! are denied by how they start (only the names that do not match and exist now show, each bound
//! from the host onto a placeholder). The overlay's objects are its own, not the host's: one
//! Landlock rule on its root covers the tree in the view, and the host's objects of the tree get
//! none, so a descriptor of the host's tree reaching the sandbox later reaches nothing there
//! (stricter than the policy, never looser). That is why [`super::Hiding::Masks`] is asked for
//! whenever the program starts holding a directory of the host's.
//!
//! Only a tree the rules treat as one is filtered: bound read-only and not executable, named by
//! `read T/*` (and perhaps `read T`) alone, with no rule inside it but denials, no map at or
//! around it, and nothing mounted beneath it on the host (an overlay shows what lies under a
//! mount, not the mount). Any other keeps its bind and masks.

use super::{anchor_of, at_or_beneath, is_beneath, Access, Anchor, Host, LayerEntry, Node};
use super::{Policy, Step, ViewPlan};
use std::collections::{BTreeMap, BTreeSet};

/// Turns each bind of a tree that qualifies into a [`Step::Filtered`], followed by the binds of
/// its placeholders.
pub(super) fn filter_trees(
    policy: &Policy,
    host: &dyn Host,
    anchors: &[Anchor],
    plan: &mut ViewPlan,
) {
    let mut steps = Vec::with_capacity(plan.steps.len());
    for step in std::mem::take(&mut plan.steps) {
        let Step::Bind {
            path,
            dir: true,
            flags,
        } = &step
        else {
            steps.push(step);
            continue;
        };
        let layer = match (flags.write || flags.exec, host.mounted_beneath(path)) {
            (false, false) if uniform(policy, anchors, path) => layer(policy, host, path),
            _ => None,
        };
        let Some(layer) = layer else {
            steps.push(step);
            continue;
        };
        let binds: Vec<Step> = layer
            .iter()
            .filter_map(|e| match e {
                LayerEntry::Placeholder(rel, dir) => Some(Step::Bind {
                    path: format!("{path}/{rel}"),
                    dir: *dir,
                    flags: *flags,
                }),
                _ => None,
            })
            .collect();
        steps.push(Step::Filtered {
            path: path.clone(),
            flags: *flags,
            layer,
        });
        steps.extend(binds);
    }
    plan.steps = steps;
}

/// Whether every rule that reaches into `tree` gives all of it the same right, `read`: the
/// tree is named by `read tree/*` (and perhaps `read tree`), and no other rule anchors at,
/// inside or around it.
fn uniform(policy: &Policy, anchors: &[Anchor], tree: &str) -> bool {
    let whole = format!("{tree}/");
    let mut named = false;
    for rule in policy.path_rules() {
        let Some(access) = rule.access else { continue };
        if rule.pattern.per_process() {
            continue;
        }
        let Some((at, covers)) = anchor_of(&rule.pattern) else {
            continue;
        };
        let lit = rule.pattern.literal();
        if is_beneath(&at, tree) || (covers && is_beneath(tree, &at)) {
            return false;
        }
        if at == tree {
            match (access, rule.pattern.is_prefix()) {
                (Access::Read, true) if lit == whole => named = true,
                (Access::Read, false) => {}
                _ => return false,
            }
        }
    }
    // Unix sockets' directories and the like come in as anchors of their own.
    named
        && anchors
            .iter()
            .all(|a| !(is_beneath(&a.path, tree) || (a.path == tree && a.access != Access::Read)))
        && !policy
            .maps()
            .iter()
            .any(|m| at_or_beneath(&m.sandbox, tree) || at_or_beneath(tree, &m.sandbox))
}

/// What the denials inside `tree` make of its layer; `None` when there are none, or when one
/// cannot be said by whiteouts and opaque directories (a link on the way, a denial at the
/// tree's own root, denials nested in a directory that is filtered by name).
fn layer(policy: &Policy, host: &dyn Host, tree: &str) -> Option<Vec<LayerEntry>> {
    let mut hidden: BTreeSet<String> = BTreeSet::new();
    // Directories filtered by name: the name starts they hide (empty: every name).
    let mut opaque: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for rule in policy.path_rules() {
        if rule.access.is_some() {
            continue;
        }
        let lit = rule.pattern.literal();
        if at_or_beneath(tree, lit.trim_end_matches('/'))
            || (rule.pattern.is_prefix() && tree.starts_with(lit))
        {
            // A denial of the tree itself, or of a tree around it.
            return None;
        }
        let Some(rel) = lit.strip_prefix(tree).and_then(|r| r.strip_prefix('/')) else {
            continue;
        };
        if !rule.pattern.is_prefix() {
            // An exact path: its name hidden, or the first missing directory on its way.
            match on_the_way(host, tree, rel)? {
                Some(missing) => {
                    hidden.insert(missing);
                }
                None => match host.node(&format!("{tree}/{rel}")) {
                    // A link is followed by whoever opens it: its target's own rules apply.
                    Node::Symlink(_) => {}
                    _ => {
                        hidden.insert(rel.to_string());
                    }
                },
            }
            continue;
        }
        let (dir, start) = match rel.strip_suffix('/') {
            // `D/*`: everything beneath D.
            Some(d) => (d, ""),
            None => match rel.rsplit_once('/') {
                Some((d, start)) => (d, start),
                // A name prefix in the tree's own root.
                None => return None,
            },
        };
        if dir.is_empty() {
            return None;
        }
        if let Some(missing) = on_the_way(host, tree, dir)? {
            hidden.insert(missing);
            continue;
        }
        match host.node(&format!("{tree}/{dir}")) {
            Node::Dir => opaque
                .entry(dir.to_string())
                .or_default()
                .push(start.to_string()),
            // Nothing there now: the whole name goes (stricter for the name itself).
            Node::Missing => {
                hidden.insert(dir.to_string());
            }
            _ => return None,
        }
    }
    // A hidden name hides everything beneath it.
    let all_hidden = hidden.clone();
    let under_hidden = |p: &str| all_hidden.iter().any(|h| is_beneath(p, h));
    hidden.retain(|h| !under_hidden(h));
    opaque.retain(|d, _| !under_hidden(d) && !all_hidden.contains(d));
    let mut layer = Vec::new();
    let mut shown: BTreeSet<String> = BTreeSet::new();
    for (dir, starts) in &opaque {
        if opaque.keys().any(|o| is_beneath(dir, o)) {
            return None;
        }
        layer.push(LayerEntry::Opaque(dir.clone()));
        for name in host.list(&format!("{tree}/{dir}")) {
            let rel = format!("{dir}/{name}");
            if hidden.contains(&rel) {
                continue;
            }
            if starts.iter().any(|s| name.starts_with(s.as_str())) {
                // Denied by how it starts, and there now: masked, as outside a layer.
                if let Some(entry) = masked(host, tree, &rel) {
                    layer.push(entry);
                }
                continue;
            }
            // Denials deeper inside a name that stays would need a layer of their own.
            if hidden.iter().any(|h| is_beneath(h, &rel)) {
                return None;
            }
            match host.node(&format!("{tree}/{rel}")) {
                Node::Dir => layer.push(LayerEntry::Placeholder(rel.clone(), true)),
                Node::File | Node::Device => {
                    layer.push(LayerEntry::Placeholder(rel.clone(), false))
                }
                Node::Symlink(target) => layer.push(LayerEntry::Link(rel.clone(), target)),
                Node::Missing => continue,
            }
            shown.insert(rel);
        }
    }
    for h in &hidden {
        if let Some(dir) = opaque.keys().find(|d| is_beneath(h, d)) {
            // One of the names of an opaque directory: left out of it above. Deeper: refused.
            if h.rsplit_once('/').map(|(d, _)| d) != Some(dir.as_str()) {
                return None;
            }
            continue;
        }
        layer.push(masked(host, tree, h).unwrap_or_else(|| LayerEntry::Hidden(h.clone())));
    }
    if layer.is_empty() {
        return None;
    }
    // Parents before what they hold: the executor makes each entry's directories as it goes.
    layer.sort_by(|a, b| entry_path(a).cmp(entry_path(b)));
    Some(layer)
}

/// The mask for the host's `tree/rel` if the host has something there a mask can cover (a
/// link is left out: whoever opens it follows it, and its target's rules apply).
fn masked(host: &dyn Host, tree: &str, rel: &str) -> Option<LayerEntry> {
    match host.node(&format!("{tree}/{rel}")) {
        Node::Dir => Some(LayerEntry::Masked(rel.to_string(), true)),
        Node::File | Node::Device => Some(LayerEntry::Masked(rel.to_string(), false)),
        Node::Symlink(_) | Node::Missing => None,
    }
}

fn entry_path(e: &LayerEntry) -> &str {
    match e {
        LayerEntry::Hidden(p)
        | LayerEntry::Masked(p, _)
        | LayerEntry::Opaque(p)
        | LayerEntry::Placeholder(p, _)
        | LayerEntry::Link(p, _) => p,
    }
}

/// Checks the directories between `tree` and `rel`'s last name: `Some(Some(first))` names the
/// first one missing now (hiding it hides everything that could appear there later),
/// `Some(None)` says they all are real directories, `None` that one is a link or not a
/// directory (whose denials the layer cannot place).
fn on_the_way(host: &dyn Host, tree: &str, rel: &str) -> Option<Option<String>> {
    let Some((parents, _)) = rel.rsplit_once('/') else {
        return Some(None);
    };
    let mut at = String::new();
    for part in parents.split('/') {
        if !at.is_empty() {
            at.push('/');
        }
        at.push_str(part);
        match host.node(&format!("{tree}/{at}")) {
            Node::Dir => continue,
            Node::Missing => return Some(Some(at)),
            _ => return None,
        }
    }
    Some(None)
}

#[cfg(test)]
mod tests {
    use super::super::tests::Table;
    use super::super::{view_plan, view_plan_with, Flags, Hiding, Host, LayerEntry, Node, Step};
    use crate::Policy;
    use std::collections::BTreeMap;

    /// A host of paths (the planner's tests' table), with mount points of its own.
    struct Mounted(Table, Vec<&'static str>);

    impl Host for Mounted {
        fn node(&self, path: &str) -> Node {
            self.0.node(path)
        }
        fn list(&self, dir: &str) -> Vec<String> {
            self.0.list(dir)
        }
        fn mounted_beneath(&self, dir: &str) -> bool {
            self.1.iter().any(|m| m.starts_with(&format!("{dir}/")))
        }
    }

    fn host(mounts: Vec<&'static str>) -> Mounted {
        use Node::*;
        Mounted(
            Table(BTreeMap::from([
                ("/", Dir),
                ("/etc", Dir),
                ("/etc/passwd", File),
                ("/etc/shadow", File),
                ("/etc/motd", Symlink("/run/motd".into())),
                ("/etc/ssh", Dir),
                ("/etc/ssh/ssh_config", File),
                ("/etc/ssh/ssh_config.d", Dir),
                ("/etc/ssh/moduli", Symlink("../moduli".into())),
                ("/etc/ssh/ssh_host_rsa_key", File),
                ("/etc/ssl", Dir),
                ("/etc/ssl/private", Dir),
                ("/etc/ssl/private/k", File),
                ("/etc/ssl/certs", Dir),
                ("/usr", Dir),
            ])),
            mounts,
        )
    }

    const DEFAULTISH: &str = "path-allow read /etc /etc/*\n\
         path-deny /etc/shadow /etc/gshadow /etc/motd\n\
         path-deny /etc/ssh/ssh_host_*\n\
         path-deny /etc/ssl/private /etc/ssl/private/*\n\
         path-deny /etc/credstore/key\n";

    fn plan_of(text: &str, host: &Mounted) -> Vec<Step> {
        view_plan(&Policy::parse("t", text).expect("parses"), host).steps
    }

    fn ro() -> Flags {
        Flags::default()
    }

    #[test]
    fn a_read_only_tree_with_denials_is_an_overlay_that_hides_them_by_name() {
        let steps = plan_of(DEFAULTISH, &host(vec![]));
        use LayerEntry::*;
        assert_eq!(
            steps,
            vec![
                Step::Filtered {
                    path: "/etc".into(),
                    flags: ro(),
                    layer: vec![
                        // Its parent is missing: the first missing name goes, whatever is
                        // made beneath it later.
                        Hidden("credstore".into()),
                        // Missing now: a whiteout, as the host has nothing there.
                        Hidden("gshadow".into()),
                        // There now: masked, as a mask would.
                        Masked("shadow".into(), false),
                        // A directory denied by how its names start: only the others show,
                        // the links as links, the rest bound from the host.
                        Opaque("ssh".into()),
                        Link("ssh/moduli".into(), "../moduli".into()),
                        Placeholder("ssh/ssh_config".into(), false),
                        Placeholder("ssh/ssh_config.d".into(), true),
                        Masked("ssh/ssh_host_rsa_key".into(), false),
                        Masked("ssl/private".into(), true),
                    ],
                },
                Step::Bind {
                    path: "/etc/ssh/ssh_config".into(),
                    dir: false,
                    flags: ro()
                },
                Step::Bind {
                    path: "/etc/ssh/ssh_config.d".into(),
                    dir: true,
                    flags: ro()
                },
            ],
            "a denied link (/etc/motd) is followed by whoever opens it, as a mask would leave it"
        );
    }

    #[test]
    fn a_tree_is_bound_and_masked_as_before_where_an_overlay_would_not_say_the_same() {
        let masked = |steps: &[Step]| {
            !steps.iter().any(|s| matches!(s, Step::Filtered { .. }))
                && steps
                    .iter()
                    .any(|s| matches!(s, Step::Mask { path, .. } if path == "/etc/shadow"))
        };
        // Something mounted inside it: an overlay would show what lies under the mount.
        assert!(masked(&plan_of(DEFAULTISH, &host(vec!["/etc/hosts"]))));
        // Writable, or executable: not a read-only overlay's.
        for extra in ["path-allow write /etc/*", "path-allow exec /etc/*"] {
            assert!(
                masked(&plan_of(&format!("{DEFAULTISH}{extra}\n"), &host(vec![]))),
                "{extra}"
            );
        }
        // A rule inside it, or around it: the tree is not one right.
        for extra in ["path-allow write /etc/ssl/certs/*", "path-allow read /*"] {
            let steps = plan_of(&format!("{DEFAULTISH}{extra}\n"), &host(vec![]));
            assert!(
                !steps.iter().any(|s| matches!(s, Step::Filtered { .. })),
                "{extra}: {steps:?}"
            );
        }
        // A name prefix at the tree's own root cannot be an opaque directory.
        assert!(masked(&plan_of(
            &format!("{DEFAULTISH}path-deny /etc/pass*\n"),
            &host(vec![])
        )));
        // The program holds a directory of the host's: its rules must name the host's objects.
        let policy = Policy::parse("t", DEFAULTISH).expect("parses");
        assert!(masked(
            &view_plan_with(&policy, &host(vec![]), Hiding::Masks).steps
        ));
    }

    #[test]
    fn a_link_on_the_way_to_a_denial_keeps_the_bind() {
        let mut h = host(vec![]);
        h.0 .0.insert("/etc/ssl", Node::Symlink("/usr/ssl".into()));
        let steps = plan_of(DEFAULTISH, &h);
        assert!(
            !steps.iter().any(|s| matches!(s, Step::Filtered { .. })),
            "{steps:?}"
        );
    }
}
