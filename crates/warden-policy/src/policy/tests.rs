//! Unit tests of the decisions, merging, printing and the default policy.

use super::*;

fn parse(text: &str) -> Policy {
    Policy::parse("t", text).unwrap_or_else(|e| panic!("{e:?}"))
}

fn pat(s: &str) -> PathPattern {
    PathPattern::parse(s).unwrap()
}

fn set(accesses: &[Access]) -> AccessSet {
    accesses.iter().copied().collect()
}

use Access::*;

#[test]
fn access_and_access_set() {
    assert_eq!(
        Access::ALL.map(Access::name),
        ["read", "write", "unlink", "exec"]
    );
    assert_eq!(Access::from_name("unlink"), Some(Unlink));
    assert_eq!(Access::from_name("Read"), None);
    assert_eq!(Exec.to_string(), "exec");

    let mut s = AccessSet::EMPTY;
    assert!(s.is_empty());
    assert_eq!(s, AccessSet::default());
    s.insert(Write);
    let s = s.with(Read);
    assert!(s.contains(Read) && s.contains(Write) && !s.contains(Exec));
    assert_eq!(s.to_string(), "read,write");
    assert_eq!(s.iter().collect::<Vec<_>>(), [Read, Write]);
    assert!(s.is_subset(AccessSet::ALL));
    assert!(!AccessSet::ALL.is_subset(s));
    assert!(AccessSet::EMPTY.is_subset(s));
    assert_eq!(AccessSet::ALL.to_string(), "read,write,unlink,exec");
    assert_eq!(AccessSet::EMPTY.to_string(), "none");
    assert_eq!(set(&Access::ALL), AccessSet::ALL);
}

#[test]
fn check_allow_and_no_rule() {
    let p = parse("path-allow read /etc/*\npath-allow read /etc/passwd\npath-allow exec /usr/*");
    assert_eq!(p.check("/etc/passwd", Read), Verdict::Allowed(RuleId(0)));
    assert_eq!(
        p.check("/etc/passwd", Write),
        Verdict::Denied(Denial::NoRule)
    );
    // `/etc/*` lets /etc be listed (the first rule that grants it).
    assert_eq!(p.check("/etc", Read), Verdict::Allowed(RuleId(0)));
    assert_eq!(p.check("/usr", Read), Verdict::Denied(Denial::NoRule));
    assert_eq!(p.check("/usr/bin/ls", Exec), Verdict::Allowed(RuleId(2)));
    assert_eq!(
        p.check("/usr/bin/ls", Read),
        Verdict::Denied(Denial::NoRule)
    );
    assert!(p.check("/etc/hosts", Read).is_allowed());
    assert!(!p.check("/", Read).is_allowed());
    // An empty policy denies everything.
    assert_eq!(
        Policy::default().check("/", Read),
        Verdict::Denied(Denial::NoRule)
    );
}

#[test]
fn deny_beats_allow_whatever_the_order() {
    let p = parse("path-deny /etc/shadow\npath-allow read /etc/*\npath-allow read /etc/shadow");
    assert_eq!(
        p.check("/etc/shadow", Read),
        Verdict::Denied(Denial::DeniedBy(RuleId(0)))
    );
    let q = parse("path-allow read /etc/* /etc/shadow\npath-deny /etc/shadow");
    assert_eq!(
        q.check("/etc/shadow", Read),
        Verdict::Denied(Denial::DeniedBy(RuleId(2)))
    );
    assert_eq!(q.rights("/etc/shadow"), AccessSet::EMPTY);
    assert_eq!(q.visible("/etc/shadow"), None);
    assert_eq!(q.check("/etc/shadowx", Read), Verdict::Allowed(RuleId(0)));
    // The first matching deny is the one named.
    let r = parse("path-deny /a/* /a/b");
    assert_eq!(
        r.check("/a/b", Exec),
        Verdict::Denied(Denial::DeniedBy(RuleId(0)))
    );
}

#[test]
fn root_and_prefix_without_slash() {
    let p = parse("path-allow read /\npath-allow write /*\npath-allow exec /us*");
    assert_eq!(p.rights("/"), set(&[Read]));
    assert_eq!(p.rights("/etc"), set(&[Write]));
    assert_eq!(p.rights("/usr"), set(&[Write, Exec]));
    assert_eq!(p.rights("/usr/bin/ls"), set(&[Write, Exec]));
    assert_eq!(p.rights("/users"), set(&[Write, Exec]));
    assert_eq!(p.rights("/u"), set(&[Write]));
}

#[test]
fn rights_and_visible() {
    let p = parse(
        "path-allow write /data/*\npath-allow read /data /data/*\npath-allow unlink /data/tmp/*",
    );
    assert_eq!(p.rights("/data"), set(&[Read]));
    assert_eq!(p.rights("/data/x"), set(&[Read, Write]));
    assert_eq!(p.rights("/data/tmp/y"), set(&[Read, Write, Unlink]));
    assert_eq!(p.rights("/other"), AccessSet::EMPTY);
    assert_eq!(p.visible("/data"), Some(RuleId(1)));
    assert_eq!(p.visible("/data/x"), Some(RuleId(0)));
    assert_eq!(p.visible("/other"), None);
    for path in ["/", "/data", "/data/x", "/data/tmp/y", "/other"] {
        let rights = p.rights(path);
        for a in Access::ALL {
            assert_eq!(
                rights.contains(a),
                p.check(path, a).is_allowed(),
                "{path} {a}"
            );
        }
        assert_eq!(p.visible(path).is_some(), !rights.is_empty(), "{path}");
    }
}

#[test]
fn may_traverse() {
    let p = parse("path-allow read /home/app/x\npath-allow exec /opt/tool*");
    // Intermediate directories of an allowed path may be walked through.
    assert!(p.may_traverse("/"));
    assert!(p.may_traverse("/home"));
    assert!(p.may_traverse("/home/app"));
    assert!(p.may_traverse("/opt"));
    // The allowed path itself is visible.
    assert!(p.may_traverse("/home/app/x"));
    // /opt/toolbox matches the prefix itself.
    assert!(p.may_traverse("/opt/toolbox"));
    // Not beneath anything allowed.
    assert!(!p.may_traverse("/home/other"));
    assert!(!p.may_traverse("/home/ap"));
    assert!(!p.may_traverse("/home/app/x/y"));
    assert!(!p.may_traverse("/etc"));
    // An empty policy lets nothing be traversed, not even "/".
    assert!(!Policy::default().may_traverse("/"));
    // `/*` makes everything traversable, including the root.
    let all = parse("path-allow read /*");
    assert!(all.may_traverse("/"));
    assert!(all.may_traverse("/a/b"));
    // A deny on the directory itself blocks traversal.
    let denied = parse("path-allow read /home/app/x\npath-deny /home");
    assert!(!denied.may_traverse("/home"));
    assert!(denied.may_traverse("/"));
    // Deny rules never make a directory traversable.
    let only_deny = parse("path-deny /home/app/x");
    assert!(!only_deny.may_traverse("/home"));
}

#[test]
fn new_entry_rights() {
    let p = parse(
        "path-allow read /w /w/*\npath-allow write /w/*\npath-allow unlink /w/tmp/*\n\
         path-allow exec /w/bin\npath-allow read /x/*\npath-deny /x/secret",
    );
    assert_eq!(p.new_entry_rights("/w"), set(&[Read, Write]));
    // Deeper directories inherit the prefix rules, plus their own.
    assert_eq!(p.new_entry_rights("/w/tmp"), set(&[Read, Write, Unlink]));
    // An exact rule for one child does not count for all children.
    assert!(!p.new_entry_rights("/w").contains(Exec));
    // A deny that could hit a new name means nothing is certain.
    assert_eq!(p.new_entry_rights("/x"), AccessSet::EMPTY);
    assert_eq!(p.new_entry_rights("/elsewhere"), AccessSet::EMPTY);
    // A deny on a grandchild does not affect children.
    let q = parse("path-allow write /d/*\npath-deny /d/sub/secret");
    assert_eq!(q.new_entry_rights("/d"), set(&[Write]));
    assert_eq!(q.new_entry_rights("/d/sub"), AccessSet::EMPTY);
    // A deny prefix like /d/.git* could match a child.
    let r = parse("path-allow write /d/*\npath-deny /d/.git*");
    assert_eq!(r.new_entry_rights("/d"), AccessSet::EMPTY);
    // Root.
    let s = parse("path-allow read /*\npath-allow write /tm*");
    assert_eq!(s.new_entry_rights("/"), set(&[Read]));
    assert_eq!(s.new_entry_rights("/tmp"), set(&[Read, Write]));
}

#[test]
fn denies_some_beneath() {
    let p = parse("path-allow read /srv/*\npath-deny /srv/db/* /etc/shadow");
    assert!(p.denies_some_beneath("/srv"));
    assert!(p.denies_some_beneath("/srv/db"));
    assert!(p.denies_some_beneath("/etc"));
    assert!(!p.denies_some_beneath("/srv/www"));
    // The denied path itself is not beneath itself.
    assert!(!p.denies_some_beneath("/etc/shadow"));
    assert!(!p.denies_some_beneath("/home"));
}

#[test]
fn subtree_rights() {
    let p = parse(
        "path-allow read /usr /usr/*\npath-allow exec /usr/bin/*\n\
         path-allow read /usr/lib/x\npath-allow write /srv/*\npath-deny /srv/db/*",
    );
    // /usr/bin/* starts inside /usr with an access /usr lacks: not uniform.
    assert_eq!(p.subtree_rights("/usr"), None);
    assert_eq!(p.subtree_rights("/usr/bin"), Some(set(&[Read, Exec])));
    // /usr/lib/x is read, which all of /usr/lib already has: still uniform.
    assert_eq!(p.subtree_rights("/usr/lib"), Some(set(&[Read])));
    // Nothing at all beneath: uniform and empty.
    assert_eq!(p.subtree_rights("/home"), Some(AccessSet::EMPTY));
    // A deny starting inside breaks uniformity.
    assert_eq!(p.subtree_rights("/srv"), None);
    // Beneath a deny that covers everything: uniformly nothing.
    assert_eq!(p.subtree_rights("/srv/db"), Some(AccessSet::EMPTY));
    assert_eq!(p.subtree_rights("/srv/db/t"), Some(AccessSet::EMPTY));
    // The root is not uniform when any rule exists inside it.
    assert_eq!(p.subtree_rights("/"), None);
    let all = parse("path-allow read /*");
    assert_eq!(all.subtree_rights("/"), Some(set(&[Read])));
    // An exact rule on the directory itself does not concern its subtree.
    let q = parse("path-allow read /a\npath-allow write /a/*");
    assert_eq!(q.subtree_rights("/a"), Some(set(&[Write])));
    // A deny inside a subtree without rights changes nothing.
    let r = parse("path-deny /a/b");
    assert_eq!(r.subtree_rights("/a"), Some(AccessSet::EMPTY));
    // A prefix rule without slash that covers the directory covers its subtree.
    let s = parse("path-allow read /ab*\npath-allow write /abc/d");
    assert_eq!(s.subtree_rights("/abc/d"), Some(set(&[Read])));
    assert_eq!(s.subtree_rights("/abc"), None);
}

#[test]
fn subtree_rights_agree_with_rights() {
    // When subtree_rights says Some, every sampled path beneath agrees.
    let p = parse(
        "path-allow read /usr /usr/*\npath-allow exec /usr/bin/*\npath-allow read /usr/lib/x\n\
         path-allow write /srv/*\npath-deny /srv/db/*\npath-allow read /a*\npath-deny /ab/c",
    );
    let dirs = [
        "/", "/usr", "/usr/bin", "/usr/lib", "/srv", "/srv/db", "/a", "/ab", "/abc",
    ];
    let names = ["a", "b", "c", "bin", "lib", "x", "db", "ab", "abc"];
    for dir in dirs {
        if let Some(rights) = p.subtree_rights(dir) {
            for n1 in names {
                let child = if dir == "/" {
                    format!("/{n1}")
                } else {
                    format!("{dir}/{n1}")
                };
                assert_eq!(p.rights(&child), rights, "{child} under {dir}");
                for n2 in names {
                    let grandchild = format!("{child}/{n2}");
                    assert_eq!(p.rights(&grandchild), rights, "{grandchild} under {dir}");
                }
                // new_entry_rights is always a lower bound for children.
                assert!(p.new_entry_rights(dir).is_subset(p.rights(&child)));
            }
        }
    }
}

#[test]
fn merge_keeps_ids_and_overrides_settings() {
    let mut base = parse("starting_uid 1\nstarting_dir /a\npath-allow read /a /a/*");
    let before: Vec<PathRule> = base.path_rules().to_vec();
    let id = match base.check("/a/x", Read) {
        Verdict::Allowed(id) => id,
        v => panic!("{v:?}"),
    };
    let extra = Policy::parse(
        "user.policy",
        "starting_gid 5\npath-deny /a/x\npath-allow write /b",
    )
    .unwrap();
    base.merge(extra);
    assert_eq!(&base.path_rules()[..2], &before[..]);
    assert_eq!(base.rule(id).pattern, pat("/a/*"));
    assert_eq!(base.path_rules().len(), 4);
    assert_eq!(base.starting_uid, Some(1), "unset in other: kept");
    assert_eq!(base.starting_gid, Some(5), "set in other: taken");
    assert_eq!(base.starting_dir.as_ref().unwrap().0, "/a");
    assert_eq!(
        base.check("/a/x", Read),
        Verdict::Denied(Denial::DeniedBy(RuleId(2)))
    );
    assert_eq!(base.rule(RuleId(2)).span.to_string(), "user.policy:2:11");
    base.merge(parse("starting_uid 7\nstarting_dir /c"));
    assert_eq!(base.starting_uid, Some(7));
    assert_eq!(base.starting_dir.unwrap().0, "/c");
}

#[test]
fn add_rule_and_net_rule() {
    let mut p = Policy::default();
    p.add_rule(Some(Read), pat("/srv/*"), Span::new("<command line>", 1, 1));
    p.add_rule(None, pat("/srv/secret"), Span::new("<command line>", 1, 2));
    assert_eq!(p.check("/srv/x", Read), Verdict::Allowed(RuleId(0)));
    assert_eq!(
        p.check("/srv/secret", Read),
        Verdict::Denied(Denial::DeniedBy(RuleId(1)))
    );
    let q = parse("net-allow outgoing tcp ::1 80");
    p.add_net_rule(q.net_rules()[0].clone());
    assert_eq!(p.net_rules().len(), 1);
}

#[test]
fn scratch_expansion() {
    let p = parse(
        "starting_dir $SCRATCH/work\npath-allow read $SCRATCH $SCRATCH/*\n\
         path-allow read /usr/*\nnet-allow incoming unix-domain $SCRATCH/sock",
    );
    assert!(p.uses_scratch());
    // Unexpanded scratch rules match nothing.
    assert_eq!(p.check("/tmp/s/f", Read), Verdict::Denied(Denial::NoRule));
    let e = p.expand_scratch("/tmp/s");
    assert!(!e.uses_scratch());
    assert_eq!(e.starting_dir.as_ref().unwrap().0, "/tmp/s/work");
    assert_eq!(e.check("/tmp/s", Read), Verdict::Allowed(RuleId(0)));
    assert_eq!(e.check("/tmp/s/f", Read), Verdict::Allowed(RuleId(1)));
    assert_eq!(e.check("/usr/lib", Read), Verdict::Allowed(RuleId(2)));
    assert!(e.net_rules()[0].matches_unix(Direction::Incoming, "/tmp/s/sock"));
    // Spans survive expansion.
    assert_eq!(e.path_rules()[1].span, p.path_rules()[1].span);
    let plain = parse("path-allow read /usr/*");
    assert!(!plain.uses_scratch());
    assert_eq!(plain.expand_scratch("/x"), plain);
    assert!(parse("starting_dir $SCRATCH").uses_scratch());
    assert!(parse("net-allow outgoing unix-domain $SCRATCH/*").uses_scratch());
}

#[test]
fn normalized_printing() {
    let text = "# comment\n\
        net-allow incoming unix-domain /run/b.sock\n\
        path-deny /etc/shadow\n\
        path-allow exec /usr/bin/*\n\
        path-allow read //usr/ /usr/* /usr\n\
        net-allow outgoing tcp 10.1.2.3/8 443\n\
        net-allow outgoing tcp 10.0.0.0/255.0.0.0 443\n\
        path-allow read /etc/./passwd\n\
        starting_dir $SCRATCH/\n\
        starting_gid 2\n\
        starting_uid 1\n\
        net-allow outgoing unix-domain /run/a.sock\n\
        net-allow incoming unix-domain /run/c*\n\
        path-allow write $SCRATCH/*\n";
    let p = parse(text);
    let norm = p.to_normalized_string();
    assert_eq!(
        norm,
        "starting_uid 1\n\
         starting_gid 2\n\
         starting_dir $SCRATCH\n\
         path-allow read /usr /usr/* /etc/passwd\n\
         path-allow write $SCRATCH/*\n\
         path-allow exec /usr/bin/*\n\
         path-deny /etc/shadow\n\
         net-allow outgoing tcp 10.0.0.0/8 443\n\
         net-allow outgoing unix-domain /run/a.sock\n\
         net-allow incoming unix-domain /run/b.sock /run/c*\n"
    );
    let again = parse(&norm);
    assert!(again.equivalent(&p));
    assert!(p.equivalent(&again));
    assert_eq!(again.to_normalized_string(), norm, "printing is idempotent");
    assert_eq!(Policy::default().to_normalized_string(), "");
    assert!(!p.equivalent(&Policy::default()));
    let mut q = again.clone();
    q.add_rule(Some(Unlink), pat("/x"), Span::new("t", 1, 1));
    assert!(!q.equivalent(&p));
}

#[test]
fn default_policy_round_trips() {
    let d = Policy::default_policy();
    let again = parse(&d.to_normalized_string());
    assert!(again.equivalent(&d));
}

#[test]
fn explain_denial() {
    let p = Policy::parse(
        "p.policy",
        "path-allow read /etc/*\npath-deny /etc/shadow\npath-allow write /tmp/*",
    )
    .unwrap();
    assert_eq!(
        p.explain_denial("/etc/shadow", Read),
        "path-deny /etc/shadow at p.policy:2:11 forbids it"
    );
    assert_eq!(
        p.explain_denial("/srv/data", Read),
        "no path-allow read rule matches; add: path-allow read /srv/data"
    );
    assert_eq!(
        p.explain_denial("/etc/hosts", Write),
        "no path-allow write rule matches; add: path-allow write /etc/hosts"
    );
    assert_eq!(
        p.explain_denial("/etc/hosts", Read),
        "not denied: path-allow read /etc/* at p.policy:1:17 allows it"
    );
    let odd = p.explain_denial("/srv/my file", Read);
    assert!(odd.contains("cannot be named exactly"), "{odd}");
    assert!(p
        .explain_denial("/srv/x*", Read)
        .contains("cannot be named exactly"));
}

#[test]
fn a_unix_socket_denial_names_the_one_rule_the_whole_call_needs() {
    let p = parse("path-allow read /run/*\npath-deny /run/secret.sock");
    assert_eq!(
        p.explain_unix_denial(Direction::Outgoing, "/run/app.sock"),
        "no net-allow outgoing unix-domain rule matches /run/app.sock (nor a path-allow write); \
         add: net-allow outgoing unix-domain /run/app.sock"
    );
    assert!(p
        .explain_unix_denial(Direction::Incoming, "/srv/x.sock")
        .ends_with("add: net-allow incoming unix-domain /srv/x.sock"));
    assert_eq!(
        p.explain_unix_denial(Direction::Outgoing, "/run/secret.sock"),
        "path-deny /run/secret.sock at t:2:11 forbids it"
    );
    assert!(p
        .explain_unix_denial(Direction::Outgoing, "/srv/my sock")
        .contains("cannot be named exactly"));
    // The line it names lets the connect through.
    let fixed = parse("net-allow outgoing unix-domain /run/app.sock");
    assert!(fixed
        .check_unix(Direction::Outgoing, "/run/app.sock")
        .is_some());
    assert!(fixed.may_traverse("/run"));
}

#[test]
fn the_default_private_tmp_gives_way_to_any_rule_of_the_users_on_tmp() {
    let with = |text: &str| {
        let mut p = Policy::default_policy();
        p.merge(parse(text));
        p.names_tmp()
    };
    assert_eq!(Policy::default_policy().names_tmp(), None);
    for quiet in [
        "path-allow read /usr/*",
        "path-allow write $SCRATCH/*",
        "path-allow exec $SCRATCH/*",
        "path-allow read /tmpfoo",
        "path-allow read /",
        "net-allow incoming unix-domain $SCRATCH/sock",
        "path-map /tmp/data /data ro\npath-allow read /data /data/*",
    ] {
        assert_eq!(with(quiet), None, "{quiet}");
    }
    for names in [
        "path-allow read /tmp/foo",
        "path-allow write /tmp/*",
        "path-allow read /tmp",
        "path-allow read /*",
        "path-allow read /t*",
        "path-deny /tmp/secret",
        "path-map tmpfs /tmp",
        "path-map /srv /tmp/srv rw",
        "net-allow outgoing unix-domain /tmp/.X11-unix/X0",
        "starting_dir /tmp/work",
    ] {
        let said = with(names).unwrap_or_else(|| panic!("{names}: not seen"));
        assert!(said.starts_with("t:"), "{said}");
    }
    // Only the default's own rules and map go; the user's stay, in order.
    let mut p = Policy::default_policy();
    p.merge(parse("path-allow read /tmp/foo\npath-allow read /srv/*"));
    let without = p.without_private_tmp();
    assert!(without.maps().iter().all(|m| m.sandbox != "/tmp"));
    let on_tmp: Vec<String> = without
        .path_rules()
        .iter()
        .filter(|r| r.pattern.literal().starts_with("/tmp"))
        .map(|r| r.to_string())
        .collect();
    assert_eq!(on_tmp, ["path-allow read /tmp/foo"]);
    assert_eq!(
        without.path_rules().len(),
        p.path_rules().len() - 4,
        "the default's four /tmp rules"
    );
    assert!(without.check("/srv/x", Read).is_allowed());
    assert!(!without.check("/tmp/x", Write).is_allowed());
}

#[test]
fn reading_a_tree_lets_its_directory_be_listed_and_nothing_more() {
    let p = parse(
        "path-allow read /srv/data/*\npath-allow write /var/out/*\npath-allow exec /opt/bin/*\n\
         path-allow read /opt/lib*\npath-allow read /*\npath-deny /srv/data/secret\n\
         path-deny /home/*",
    );
    // `D/*` read: D itself may be listed and looked at, as a Landlock rule on D lists it.
    assert!(p.check("/srv/data", Read).is_allowed());
    assert!(p.rights("/srv/data").contains(Read));
    assert!(p.visible("/srv/data").is_some());
    // Reading only: a write or exec tree gives its directory nothing.
    assert!(!p.check("/var/out", Write).is_allowed());
    assert!(!p.check("/opt/bin", Exec).is_allowed());
    // Not a name prefix, nor a parent further up, nor a sibling that shares the prefix.
    assert!(!parse("path-allow read /opt/lib*")
        .check("/opt", Read)
        .is_allowed());
    assert!(!parse("path-allow read /srv/data/*")
        .check("/srv", Read)
        .is_allowed());
    assert!(!parse("path-allow read /srv/data/*")
        .check("/srv/dat", Read)
        .is_allowed());
    // `/*` lets `/` be listed.
    assert!(parse("path-allow read /*").check("/", Read).is_allowed());
    // A deny still wins, on the directory and inside it.
    assert!(!p.check("/srv/data/secret", Read).is_allowed());
    assert!(!p.check("/home/u", Read).is_allowed());
    assert!(!parse("path-allow read /srv/data/*\npath-deny /srv/data")
        .check("/srv/data", Read)
        .is_allowed());
}

#[test]
fn default_policy_parses_and_decides() {
    let d = Policy::parse(DEFAULT_POLICY_NAME, DEFAULT_POLICY)
        .unwrap_or_else(|e| panic!("default policy: {e:#?}"));
    assert_eq!(d, Policy::default_policy());
    assert_eq!(DEFAULT_POLICY_NAME, "<default>");
    assert!(d.uses_scratch());
    assert!(d.net_rules().is_empty(), "no network by default");
    assert_eq!(d.starting_uid, None);
    assert_eq!(d.starting_dir.as_ref().unwrap().0, "$SCRATCH");

    let d = d.expand_scratch("/tmp/warden-1");
    assert_eq!(d.starting_dir.as_ref().unwrap().0, "/tmp/warden-1");
    // The sandbox's own /tmp: read, write, remove, never run. Without it (no view, or the
    // user's own rules on /tmp) the host's /tmp is private again, as below.
    assert_eq!(d.rights("/tmp/x"), set(&[Read, Write, Unlink]));
    assert_eq!(d.rights("/tmp"), set(&[Read]));
    assert!(d
        .maps()
        .iter()
        .any(|m| m.sandbox == "/tmp" && m.source == crate::map::MapSource::Tmpfs));
    let d = d.without_private_tmp();
    assert!(d.maps().iter().all(|m| m.sandbox != "/tmp"));
    assert!(d.maps().iter().any(|m| m.sandbox == "/dev/shm"));
    // Programs and libraries.
    assert!(d.check("/usr/bin/ls", Exec).is_allowed());
    assert!(d.check("/usr/bin/ls", Read).is_allowed());
    assert!(d.check("/lib64/ld-linux-x86-64.so.2", Exec).is_allowed());
    assert!(!d.check("/usr/bin/ls", Write).is_allowed());
    assert!(d.check("/", Read).is_allowed());
    assert!(d.check("/usr", Read).is_allowed());
    // /etc, minus secrets.
    assert!(d.check("/etc/passwd", Read).is_allowed());
    assert!(d.check("/etc", Read).is_allowed());
    assert!(!d.check("/etc/passwd", Write).is_allowed());
    for secret in [
        "/etc/shadow",
        "/etc/shadow-",
        "/etc/gshadow",
        "/etc/sudoers",
        "/etc/sudoers.d/README",
        "/etc/ssh/ssh_host_ed25519_key",
        "/etc/ssl/private/server.key",
        "/etc/credstore/x",
        "/etc/credstore.encrypted/y",
        "/etc/security/opasswd",
    ] {
        match d.check(secret, Read) {
            Verdict::Denied(Denial::DeniedBy(id)) => {
                assert_eq!(&*d.rule(id).span.file, "<default>");
            }
            v => panic!("{secret}: {v:?}"),
        }
        assert_eq!(d.rights(secret), AccessSet::EMPTY, "{secret}");
    }
    assert!(d
        .explain_denial("/etc/shadow", Read)
        .starts_with("path-deny /etc/shadow at <default>:"));
    assert!(d.check("/etc/ssh/ssh_config", Read).is_allowed());
    // Private places.
    for private in [
        "/home/x",
        "/root/.ssh/id_rsa",
        "/root",
        "/tmp/x",
        "/var/log/syslog",
        "/run/user/1000",
    ] {
        assert_eq!(d.rights(private), AccessSet::EMPTY, "{private}");
        assert_eq!(d.visible(private), None, "{private}");
    }
    assert!(!d.may_traverse("/home"));
    assert!(d.may_traverse("/"));
    assert!(d.may_traverse("/proc"));
    assert!(
        d.may_traverse("/tmp"),
        "on the way to the scratch directory"
    );
    assert!(!d.may_traverse("/tmp/other"));
    // Devices and /proc.
    assert!(d.check("/dev/null", Write).is_allowed());
    assert!(d.check("/dev/urandom", Read).is_allowed());
    assert!(!d.check("/dev/sda", Read).is_allowed());
    assert!(d.check("/proc/self/maps", Read).is_allowed());
    assert!(d.check("/proc/sys/kernel/osrelease", Read).is_allowed());
    assert!(!d.check("/proc/1/environ", Read).is_allowed());
    // The scratch directory.
    assert_eq!(d.rights("/tmp/warden-1"), set(&[Read]));
    assert_eq!(
        d.rights("/tmp/warden-1/out.txt"),
        set(&[Read, Write, Unlink])
    );
    assert_eq!(
        d.new_entry_rights("/tmp/warden-1"),
        set(&[Read, Write, Unlink])
    );
    assert_eq!(
        d.subtree_rights("/tmp/warden-1"),
        Some(set(&[Read, Write, Unlink]))
    );
    assert_eq!(d.subtree_rights("/usr"), Some(set(&[Read, Exec])));
    assert_eq!(d.subtree_rights("/etc"), None);
}

#[test]
fn ip_use_reports_the_protocols_with_rules() {
    assert!(!parse("path-allow read /usr/*\n").ip_use().any());
    assert!(!parse("net-allow outgoing unix-domain /run/x.sock\n")
        .ip_use()
        .any());
    let p = parse("net-allow outgoing tcp 10.0.0.0/8 443\n");
    assert_eq!(
        p.ip_use(),
        IpUse {
            tcp: true,
            udp: false
        }
    );
    let p = parse("net-allow outgoing udp 1.1.1.1 53\nnet-allow incoming tcp 0/0 80\n");
    assert_eq!(
        p.ip_use(),
        IpUse {
            tcp: true,
            udp: true
        }
    );
}

#[test]
fn check_ip_finds_the_first_matching_rule() {
    let p = parse(
        "net-allow outgoing tcp 10.0.0.0/8 443\n\
         net-allow outgoing tcp ::1 8080\n\
         net-allow incoming tcp 192.168.0.0/16 8000\n",
    );
    let v4 = |s: &str| s.parse::<IpAddr>().unwrap();
    let out = Direction::Outgoing;
    let inc = Direction::Incoming;
    assert!(p
        .check_ip(out, Protocol::Tcp, v4("10.9.8.7"), 443, &[])
        .is_some());
    assert!(p
        .check_ip(out, Protocol::Tcp, v4("10.9.8.7"), 444, &[])
        .is_none());
    assert!(p
        .check_ip(out, Protocol::Udp, v4("10.9.8.7"), 443, &[])
        .is_none());
    // The mapped spelling of an IPv4 address is the same endpoint.
    assert!(p
        .check_ip(out, Protocol::Tcp, v4("::ffff:10.1.1.1"), 443, &[])
        .is_some());
    assert!(p
        .check_ip(out, Protocol::Tcp, v4("::1"), 8080, &[])
        .is_some());
    assert!(p
        .check_ip(out, Protocol::Tcp, v4("127.0.0.1"), 8080, &[])
        .is_none());
    // Directions do not mix.
    assert!(p
        .check_ip(inc, Protocol::Tcp, v4("10.9.8.7"), 443, &[])
        .is_none());
    assert!(p
        .check_ip(inc, Protocol::Tcp, v4("192.168.3.4"), 8000, &[])
        .is_some());
    assert!(p
        .check_ip(inc, Protocol::Tcp, v4("172.16.0.1"), 8000, &[])
        .is_none());
    let rule = p
        .check_ip(out, Protocol::Tcp, v4("10.0.0.1"), 443, &[])
        .unwrap();
    assert_eq!(rule.span.line, 1);
}

#[test]
fn check_local_port_ignores_the_peer_address() {
    let p = parse(
        "net-allow incoming tcp 192.168.0.0/16 8000\n\
         net-allow incoming udp 0/0 5000/65520\n\
         net-allow outgoing tcp 0/0 9000\n",
    );
    assert!(p.check_local_port(Protocol::Tcp, 8000).is_some());
    assert!(p.check_local_port(Protocol::Tcp, 8001).is_none());
    // Outgoing rules never let a port be bound.
    assert!(p.check_local_port(Protocol::Tcp, 9000).is_none());
    assert!(p.check_local_port(Protocol::Udp, 5000 & 0xfff0).is_some());
    assert!(p
        .check_local_port(Protocol::Udp, (5000 & 0xfff0) + 15)
        .is_some());
    assert!(p
        .check_local_port(Protocol::Udp, (5000 & 0xfff0) + 16)
        .is_none());
}

#[test]
fn check_unix_matches_patterns_by_direction() {
    let p = parse(
        "net-allow outgoing unix-domain /run/app/*\n\
         net-allow incoming unix-domain /tmp/srv.sock\n",
    );
    assert!(p
        .check_unix(Direction::Outgoing, "/run/app/x.sock")
        .is_some());
    assert!(p
        .check_unix(Direction::Incoming, "/run/app/x.sock")
        .is_none());
    assert!(p.check_unix(Direction::Incoming, "/tmp/srv.sock").is_some());
    assert!(p
        .check_unix(Direction::Outgoing, "/run/other.sock")
        .is_none());
}

#[test]
fn ip_denials_suggest_the_rule_to_add() {
    let p = Policy::default();
    let ip: IpAddr = "::ffff:127.0.0.1".parse().unwrap();
    let why = p.explain_ip_denial(Direction::Outgoing, Protocol::Tcp, ip, 80);
    assert_eq!(
        why,
        "no net-allow outgoing tcp rule matches to 127.0.0.1:80; \
         add: net-allow outgoing tcp 127.0.0.1 80"
    );
    // The suggestion parses and allows exactly the denied endpoint.
    let line = why.split("add: ").nth(1).unwrap();
    let fixed = parse(&format!("{line}\n"));
    assert!(fixed
        .check_ip(Direction::Outgoing, Protocol::Tcp, ip, 80, &[])
        .is_some());
    let why = p.explain_ip_denial(
        Direction::Incoming,
        Protocol::Udp,
        "::1".parse().unwrap(),
        53,
    );
    assert!(why.ends_with("add: net-allow incoming udp ::1 53"), "{why}");
    let why = p.explain_bind_denial(Protocol::Tcp, 8080);
    let line = why
        .split("add: ")
        .nth(1)
        .unwrap()
        .split(" (")
        .next()
        .unwrap();
    assert!(parse(&format!("{line}\n"))
        .check_local_port(Protocol::Tcp, 8080)
        .is_some());
}

#[test]
fn devices_are_named_only_by_exact_rules() {
    let p = Policy::parse(
        "t",
        "path-allow read /dev/* /dev/null\npath-allow write /dev/null\npath-deny /dev/zero\npath-allow read /dev/zero\n",
    )
    .unwrap();
    assert!(p.names_exactly("/dev/null", Access::Read));
    assert!(p.names_exactly("/dev/null", Access::Write));
    assert!(!p.names_exactly("/dev/sda", Access::Read));
    assert!(!p.names_exactly("/dev/sda", Access::Write));
    assert!(!p.names_exactly("/dev/zero", Access::Read), "a deny wins");
}

#[test]
fn without_a_view_a_tmpfs_map_closes_its_tree() {
    let p = Policy::parse(
        "t",
        "path-map tmpfs /dev/shm\npath-map /src /in ro\npath-allow read /dev/shm /dev/shm/*\n\
         path-allow write /dev/shm/*\npath-allow read /in/*\n",
    )
    .unwrap();
    let (closed, maps) = p.close_tmpfs_maps();
    assert_eq!(maps.len(), 1);
    assert_eq!(maps[0].sandbox, "/dev/shm");
    // The host map stays; rule ids are unchanged (the denials come after every rule).
    assert_eq!(closed.maps().len(), 1);
    assert_eq!(closed.rule(RuleId(0)), p.rule(RuleId(0)));
    for path in ["/dev/shm", "/dev/shm/sem.x", "/dev/shm/a/b"] {
        for access in [Access::Read, Access::Write] {
            assert!(!closed.check(path, access).is_allowed(), "{path} {access}");
        }
        assert!(closed.visible(path).is_none(), "{path}");
    }
    assert!(closed.check("/in/x", Access::Read).is_allowed());
    // The denial names the map's line.
    match closed.check("/dev/shm/x", Access::Read) {
        Verdict::Denied(Denial::DeniedBy(id)) => assert_eq!(closed.rule(id).span.line, 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_private_tmp_is_told_apart_and_its_line_gives_the_hosts_back() {
    let p = Policy::default_policy();
    assert!(p.in_private_tmp("/tmp"));
    assert!(p.in_private_tmp("/tmp/x/y"));
    assert!(!p.in_private_tmp("/tmpx"));
    assert!(!p.in_private_tmp("/var/tmp/x"));
    // Without the default's map (a rule of the user's names /tmp) nothing is private.
    assert!(!p.without_private_tmp().in_private_tmp("/tmp/x"));
    // A map of the user's within it is not the private /tmp.
    let mut q = Policy::default_policy();
    q.merge(parse("path-map /srv/data /tmp/data ro"));
    assert!(!q.in_private_tmp("/tmp/data/x"));
    let why = p.explain_private_tmp("/tmp/notes.txt", Read);
    assert!(
        why.ends_with("; add: path-allow read /tmp/notes.txt"),
        "{why}"
    );
    assert!(why.starts_with(crate::PRIVATE_TMP_NOTE), "{why}");
    // The line it offers, added, gives the run the host's /tmp.
    let mut r = Policy::default_policy();
    r.merge(parse("path-allow read /tmp/notes.txt"));
    assert!(r.names_tmp().is_some());
    let why = p.explain_private_tmp("/tmp/a b", Read);
    assert!(!why.contains("add:"), "{why}");
    assert!(why.contains("cannot be named exactly"), "{why}");
}
