use super::*;
use std::collections::BTreeMap;

/// A host given as a table of paths.
pub(super) struct Table(pub(super) BTreeMap<&'static str, Node>);

impl Host for Table {
    /// As `lstat` answers: the directories on the way are followed when they are symlinks,
    /// the last component is not.
    fn node(&self, path: &str) -> Node {
        if path == "/" {
            return self.0.get("/").cloned().unwrap_or(Node::Missing);
        }
        let Some((dir, name)) = path.rsplit_once('/') else {
            return Node::Missing;
        };
        let parts: Vec<&str> = dir.split('/').filter(|c| !c.is_empty()).collect();
        let mut prefix = String::new();
        for (i, c) in parts.iter().enumerate() {
            prefix = format!("{prefix}/{c}");
            if let Some(Node::Symlink(t)) = self.0.get(prefix.as_str()) {
                let base = resolve_link(&prefix, t);
                let rest: Vec<&str> = parts[i + 1..].iter().copied().chain([name]).collect();
                return self.node(&format!(
                    "{}/{}",
                    base.trim_end_matches('/'),
                    rest.join("/")
                ));
            }
        }
        self.0
            .get(format!("{dir}/{name}").as_str())
            .cloned()
            .unwrap_or(Node::Missing)
    }

    fn list(&self, dir: &str) -> Vec<String> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        self.0
            .keys()
            .filter_map(|p| p.strip_prefix(prefix.as_str()))
            .filter(|rest| !rest.is_empty() && !rest.contains('/'))
            .map(str::to_string)
            .collect()
    }
}

fn host() -> Table {
    use Node::*;
    Table(BTreeMap::from([
        ("/", Dir),
        ("/usr", Dir),
        ("/usr/bin", Dir),
        ("/usr/lib", Dir),
        ("/bin", Symlink("usr/bin".into())),
        ("/lib", Symlink("usr/lib".into())),
        ("/etc", Dir),
        ("/etc/passwd", File),
        ("/etc/shadow", File),
        ("/etc/ssh", Dir),
        ("/etc/ssh/ssh_config", File),
        ("/etc/ssh/ssh_host_rsa_key", File),
        ("/etc/ssh/ssh_host_ed25519_key", File),
        ("/etc/sudoers.d", Dir),
        ("/etc/sudoers.d/x", File),
        ("/dev", Dir),
        ("/dev/null", Device),
        ("/dev/sda", Device),
        ("/dev/fd", Symlink("/proc/self/fd".into())),
        ("/home", Dir),
        ("/home/u", Dir),
        ("/home/u/p", Dir),
        ("/home/u/notes", File),
        ("/tmp", Dir),
        ("/tmp/s", Dir),
    ]))
}

fn plan(text: &str) -> ViewPlan {
    view_plan(&Policy::parse("t", text).expect("parses"), &host())
}

fn bind(path: &str, dir: bool, write: bool, exec: bool) -> Step {
    Step::Bind {
        path: path.into(),
        dir,
        flags: Flags { write, exec },
    }
}

#[test]
fn trees_are_bound_read_only_and_noexec_unless_the_policy_says_otherwise() {
    let p = plan(
        "path-allow read /usr/* /etc/*\npath-allow exec /usr/*\n\
         path-allow read /tmp/s/*\npath-allow write /tmp/s/*",
    );
    assert_eq!(
        p.steps,
        vec![
            bind("/etc", true, false, false),
            bind("/usr", true, false, true),
            bind("/tmp/s", true, true, false),
            Step::Symlink {
                path: "/bin".into(),
                target: "usr/bin".into()
            },
            Step::Symlink {
                path: "/lib".into(),
                target: "usr/lib".into()
            },
        ]
    );
}

#[test]
fn symlinks_stay_symlinks_and_their_targets_are_bound() {
    let p = plan("path-allow read /usr/* /bin/*\npath-allow exec /usr/* /bin/*");
    assert_eq!(
        p.steps,
        vec![
            bind("/usr", true, false, true),
            Step::Symlink {
                path: "/bin".into(),
                target: "usr/bin".into()
            },
            Step::Symlink {
                path: "/lib".into(),
                target: "usr/lib".into()
            },
        ],
        "/usr/bin is inside /usr, bound with the same flags; /lib leads into /usr"
    );
}

#[test]
fn denies_inside_a_tree_are_masked_and_prefix_denies_expand_to_what_exists() {
    let p = plan(
        "path-allow read /etc/*\npath-deny /etc/shadow /etc/sudoers.d /etc/sudoers.d/*\n\
         path-deny /etc/ssh/ssh_host_* /etc/nonexistent",
    );
    let masks: Vec<&Step> = p
        .steps
        .iter()
        .filter(|s| matches!(s, Step::Mask { .. }))
        .collect();
    assert_eq!(
        masks,
        vec![
            &Step::Mask {
                path: "/etc/shadow".into(),
                dir: false
            },
            &Step::Mask {
                path: "/etc/sudoers.d".into(),
                dir: true
            },
            &Step::Mask {
                path: "/etc/ssh/ssh_host_ed25519_key".into(),
                dir: false
            },
            &Step::Mask {
                path: "/etc/ssh/ssh_host_rsa_key".into(),
                dir: false
            },
        ]
    );
    assert!(p.notes.iter().any(|(_, n)| n.contains("ssh_host_*")));
}

#[test]
fn denies_outside_the_view_need_no_mask() {
    let p = plan("path-allow read /usr/*\npath-deny /etc/shadow");
    assert!(!p.steps.iter().any(|s| matches!(s, Step::Mask { .. })));
}

#[test]
fn a_writable_tree_inside_a_read_only_one_gets_its_own_bind_after_it() {
    let p = plan("path-allow read /home/u/*\npath-allow write /home/u/p/*");
    assert_eq!(
        p.steps,
        vec![
            bind("/home/u", true, false, false),
            bind("/home/u/p", true, true, false),
        ]
    );
}

#[test]
fn an_exec_file_inside_a_noexec_tree_gets_its_own_bind() {
    let p = plan("path-allow read /home/u/*\npath-allow exec /home/u/notes");
    assert_eq!(
        p.steps,
        vec![
            bind("/home/u", true, false, false),
            bind("/home/u/notes", false, false, true),
        ]
    );
}

#[test]
fn a_program_made_later_makes_its_directory_exec_but_not_the_trees_bound_inside_it() {
    // /home/u/prog does not exist yet: its directory comes in, executable, so the program can
    // run once made there. The writable tree inside it is bound on its own and stays noexec:
    // with the outer bind's exec it would run (through ld.so) whatever the program writes.
    let p = plan(
        "path-allow read /home/u/p/*
path-allow write /home/u/p/*
path-allow exec /home/u/prog",
    );
    assert_eq!(
        p.steps,
        vec![
            bind("/home/u", true, false, true),
            bind("/home/u/p", true, true, false),
        ]
    );
    // A tree the policy makes executable as a whole still passes it on.
    let p = plan(
        "path-allow exec /home/u/* /home/u/prog
path-allow write /home/u/p/*",
    );
    assert!(p
        .steps
        .iter()
        .all(|s| matches!(s, Step::Bind { flags, .. } if flags.exec)));
}

#[test]
fn devices_only_when_named_exactly_and_links_as_links() {
    let p = plan(
        "path-allow read /dev/null /dev/fd\npath-allow write /dev/null\n\
         path-allow read /dev/*",
    );
    assert_eq!(
        p.steps,
        vec![
            Step::DevTmpfs,
            Step::Device {
                path: "/dev/null".into(),
                write: true
            },
            Step::Symlink {
                path: "/dev/fd".into(),
                target: "/proc/self/fd".into()
            },
        ]
    );
    assert!(p.notes.iter().any(|(_, n)| n.contains("/dev/*")));
}

#[test]
fn proc_keeps_what_the_policy_names() {
    let p = plan(
        "path-allow read /proc/self /proc/self/* /proc/cpuinfo /proc/sys/kernel/*\n\
         path-allow read /proc/sys/vm/overcommit_memory",
    );
    let Some(Step::Proc { keep }) = p.steps.last() else {
        panic!("no procfs: {:?}", p.steps)
    };
    assert!(keep.children["self"].all);
    assert!(keep.children["cpuinfo"].all);
    assert!(!keep.children["sys"].all);
    assert!(keep.children["sys"].children["kernel"].all);
    assert!(keep.children["sys"].children["vm"].children["overcommit_memory"].all);
    assert!(!keep.children.contains_key("kcore"));
}

#[test]
fn a_policy_without_proc_or_dev_gets_neither() {
    let p = plan("path-allow read /usr/*");
    assert!(!p
        .steps
        .iter()
        .any(|s| matches!(s, Step::DevTmpfs | Step::Proc { .. } | Step::Device { .. })));
}

#[test]
fn a_lone_directory_rule_binds_nothing() {
    let p = plan("path-allow read /\npath-allow read /home/u/notes");
    assert_eq!(p.steps, vec![bind("/home/u/notes", false, false, false)]);
}

#[test]
fn link_resolution_is_lexical_and_stays_absolute() {
    assert_eq!(resolve_link("/bin", "usr/bin"), "/usr/bin");
    assert_eq!(resolve_link("/a/b/c", "../../x"), "/x");
    assert_eq!(resolve_link("/a", "../../../x"), "/x");
    assert_eq!(resolve_link("/dev/fd", "/proc/self/fd"), "/proc/self/fd");
}

#[test]
fn the_default_policy_plans_without_surprises() {
    let policy = Policy::default_policy().expand_scratch("/tmp/s");
    let p = view_plan(&policy, &host());
    // /tmp is the sandbox's own, writable and never executable, and none of the host's shows.
    assert!(p.steps.contains(&Step::Tmpfs {
        path: "/tmp".into(),
        flags: Flags {
            write: true,
            exec: false
        }
    }));
    assert!(!p
        .steps
        .iter()
        .any(|s| matches!(s, Step::Bind { path, .. } if path.starts_with("/tmp"))));
    // An exec rule in the scratch directory (its own map inside /tmp, as a run adds it) leaves
    // /tmp noexec.
    let mut exec = Policy::default_policy();
    exec.merge(Policy::parse("t", "path-allow exec $SCRATCH/*").expect("parses"));
    let mut exec = exec.expand_scratch("/tmp/s");
    exec.add_map(crate::map::PathMap {
        source: MapSource::Tmpfs,
        sandbox: "/tmp/s".into(),
        mode: crate::map::MapMode::ReadWrite,
        span: crate::Span::new("$SCRATCH", 1, 1),
    });
    let at: Vec<String> = view_plan(&exec, &host())
        .steps
        .iter()
        .map(|s| s.to_string())
        .filter(|s| s.starts_with("tmpfs /tmp"))
        .collect();
    assert_eq!(at, ["tmpfs /tmp rw,noexec", "tmpfs /tmp/s rw,exec"]);
    // Without the private /tmp (no view, or the user's rules on /tmp), the scratch directory
    // is the host's, bound.
    let policy = Policy::default_policy()
        .without_private_tmp()
        .expand_scratch("/tmp/s");
    let p = view_plan(&policy, &host());
    assert!(p.steps.contains(&bind("/tmp/s", true, true, false)));
    assert!(p.steps.contains(&bind("/etc", true, false, false)));
    assert!(p.steps.contains(&Step::Mask {
        path: "/etc/shadow".into(),
        dir: false
    }));
    assert!(!p
        .steps
        .iter()
        .any(|s| matches!(s, Step::Device { path, .. } if path == "/dev/sda")));
    assert!(matches!(p.steps.last(), Some(Step::Proc { .. })));
}

#[test]
fn a_tree_around_proc_and_dev_gets_the_sandboxs_own() {
    let p = plan("path-allow read /*\npath-deny /proc/self/environ");
    assert_eq!(p.steps[0], bind("/", true, false, false));
    assert!(p.steps.contains(&Step::DevTmpfs));
    let Some(Step::Proc { keep }) = p.steps.last() else {
        panic!("{:?}", p.steps)
    };
    assert!(keep.all);
    assert!(!p.steps.iter().any(|s| matches!(s, Step::Mask { .. })));
    assert!(p
        .notes
        .iter()
        .any(|(_, n)| n.contains("/proc/self/environ")));
}

#[test]
fn the_plan_says_which_paths_the_view_holds() {
    let p = plan("path-allow read /home/u/* /usr/*");
    for held in ["/", "/home", "/home/u", "/home/u/p", "/usr/bin/x"] {
        assert!(p.holds(held), "{held}");
    }
    for absent in ["/etc", "/home/v", "/tmp", "/us"] {
        assert!(!p.holds(absent), "{absent}");
    }
}

#[test]
fn an_inner_bind_is_never_narrower_than_the_tree_it_lands_in() {
    // `/bin` is a link into /usr, which `exec /usr/*` makes executable: the exact rule on the
    // link must not bind /usr/bin again without exec.
    let p = plan("path-allow read /usr/* /bin\npath-allow exec /usr/*");
    assert!(!p
        .steps
        .iter()
        .any(|s| matches!(s, Step::Bind { flags, .. } if !flags.exec)));
}

#[test]
fn links_in_the_root_that_lead_into_the_view_come_along() {
    // The kernel follows /lib for an ELF interpreter named /lib64/...: no rule is asked.
    let p = plan("path-allow read /usr/*\npath-allow exec /usr/*");
    assert!(p.steps.contains(&Step::Symlink {
        path: "/lib".into(),
        target: "usr/lib".into()
    }));
    let p = plan("path-allow read /etc/*");
    assert!(!p.steps.iter().any(|s| matches!(s, Step::Symlink { .. })));
}

#[test]
fn the_root_is_listed_only_when_every_tree_in_the_view_may_be_read() {
    assert!(plan("path-allow read / /usr/*").lists_root);
    assert!(!plan("path-allow read /usr/*").lists_root);
    assert!(!plan("path-allow read /\npath-allow write /tmp/s/*").lists_root);
}

#[test]
fn a_file_to_be_created_brings_its_directory_in_writable() {
    let p = plan("path-allow read /home/u/notes\npath-allow write /home/u/new.txt");
    assert!(
        p.steps.contains(&bind("/home/u", true, true, false)),
        "{:?}",
        p.steps
    );
}

#[test]
fn a_map_shows_a_host_tree_elsewhere_with_the_rules_of_its_sandbox_path() {
    let p = plan(
        "path-map /home/u/p /src rw\npath-allow read /src/*\npath-allow write /src/out/*\n\
         path-map /home/u/notes /notes.txt\npath-allow read /notes.txt\n",
    );
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    assert_eq!(
        p.steps,
        vec![
            Step::Map {
                from: "/home/u/notes".into(),
                path: "/notes.txt".into(),
                dir: false,
                flags: Flags::default(),
            },
            Step::Map {
                from: "/home/u/p".into(),
                path: "/src".into(),
                dir: true,
                flags: Flags {
                    write: true,
                    exec: false
                },
            },
        ]
    );
    // Nothing of /home/u itself: the rules name /src, not the host's path.
    assert!(!p.holds("/home/u"));
    assert!(p.holds("/src/out/x"));
}

#[test]
fn a_read_only_map_is_read_only_whatever_the_rules_say() {
    let p = plan("path-map /home/u/p /src\npath-allow write /src/*\n");
    assert!(matches!(
        &p.steps[..],
        [Step::Map {
            flags: Flags { write: false, .. },
            ..
        }]
    ));
}

#[test]
fn tmpfs_and_copy_maps_and_the_binds_they_replace() {
    let p = plan(
        "path-allow read /tmp/* /usr/*\npath-allow write /tmp/*\npath-map tmpfs /tmp\n\
         path-map /home/u /home/u copy\npath-allow read /home/u/*\npath-allow write /home/u/*\n\
         path-allow exec /home/u/p/*\n",
    );
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    let rw = Flags {
        write: true,
        exec: false,
    };
    assert_eq!(
        p.steps,
        vec![
            bind("/usr", true, false, false),
            Step::Symlink {
                path: "/bin".into(),
                target: "usr/bin".into()
            },
            Step::Symlink {
                path: "/lib".into(),
                target: "usr/lib".into()
            },
            Step::Tmpfs {
                path: "/tmp".into(),
                flags: rw
            },
            Step::Copy {
                from: "/home/u".into(),
                path: "/home/u".into(),
                index: 1,
                flags: Flags {
                    write: true,
                    exec: true
                },
            },
        ],
        "no bind of the host's /tmp or /home/u"
    );
    assert_eq!(
        p.steps[3].to_string(),
        "tmpfs /tmp rw,noexec",
        "printed for -v"
    );
}

#[test]
fn denies_inside_a_map_are_masked_at_their_sandbox_paths() {
    let p = plan(
        "path-map /etc /conf\npath-allow read /conf/*\npath-deny /conf/shadow /conf/ssh/ssh_host*\n",
    );
    let masks: Vec<&Step> = p
        .steps
        .iter()
        .filter(|s| matches!(s, Step::Mask { .. }))
        .collect();
    assert_eq!(
        masks,
        vec![
            &Step::Mask {
                path: "/conf/shadow".into(),
                dir: false
            },
            &Step::Mask {
                path: "/conf/ssh/ssh_host_ed25519_key".into(),
                dir: false
            },
            &Step::Mask {
                path: "/conf/ssh/ssh_host_rsa_key".into(),
                dir: false
            },
        ]
    );
}

#[test]
fn a_map_inside_a_host_tree_needs_its_mount_point_there() {
    // /home/u/p exists in the bound /home: fine. /home/u/new does not: warden would have to
    // make it in the host's tree, so the plan refuses.
    let ok = plan("path-allow read /home/*\npath-map /usr /home/u/p\n");
    assert!(ok.errors.is_empty(), "{:?}", ok.errors);
    assert_eq!(ok.steps.len(), 2);
    let bad = plan("path-allow read /home/*\npath-map /usr /home/u/new\n");
    assert_eq!(bad.errors.len(), 1);
    assert!(
        bad.errors[0].contains("/home/u/new is not a directory in /home"),
        "{:?}",
        bad.errors
    );
    assert!(!bad.steps.iter().any(|s| matches!(s, Step::Map { .. })));
    // A file over a directory is refused the same way.
    let kind = plan("path-allow read /home/*\npath-map /etc/passwd /home/u/p\n");
    assert!(
        kind.errors[0].contains("is not a file"),
        "{:?}",
        kind.errors
    );
    // In a tmpfs map, or in the view's own root, the mount point is made.
    let made = plan("path-map tmpfs /work\npath-map /usr /work/new/usr\n");
    assert!(made.errors.is_empty(), "{:?}", made.errors);
}

#[test]
fn maps_nest_outer_first_and_rules_beneath_an_inner_map_go_to_it() {
    let p = plan(
        "path-map /home/u/p /w/p copy\npath-map tmpfs /w\npath-allow read /w/* \n\
         path-allow write /w/p/*\n",
    );
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    let at: Vec<String> = p.steps.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        at,
        vec![
            "tmpfs /w rw,noexec",
            "copy /home/u/p at /w/p (private: writes stay in the run's overlay) noexec"
        ]
    );
}

/// A file reached through an absolute link whose target passes through another link
/// (`/usr/lib64/ld.so -> /lib/x86_64-linux-gnu/ld.so`, `/lib -> usr/lib`): the bind lands
/// where the file is, and `/lib` stays a link, so the rest of `/usr/lib` shows through it.
#[test]
fn a_link_through_a_linked_directory_binds_where_the_file_is() {
    use Node::*;
    let mut h = host();
    h.0.insert("/usr/lib/x86_64-linux-gnu", Dir);
    h.0.insert("/usr/lib/x86_64-linux-gnu/ld.so", File);
    h.0.insert("/usr/lib/x86_64-linux-gnu/libc.so.6", File);
    h.0.insert("/usr/lib64", Dir);
    h.0.insert(
        "/usr/lib64/ld.so",
        Symlink("/lib/x86_64-linux-gnu/ld.so".into()),
    );
    let p = view_plan(
        &Policy::parse(
            "t",
            "path-allow exec /usr/lib64/ld.so\npath-allow read /usr/lib/*\n",
        )
        .expect("parses"),
        &h,
    );
    let binds: Vec<&str> = p
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Bind { path, .. } => Some(path.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        !binds.iter().any(|b| b.starts_with("/lib/")),
        "a bind through the /lib link: {binds:?}"
    );
    assert!(
        p.steps
            .iter()
            .any(|s| matches!(s, Step::Symlink { path, .. } if path == "/lib")),
        "{:?}",
        p.steps
    );
    assert!(p.holds("/usr/lib/x86_64-linux-gnu/ld.so"));
    assert!(p.holds("/usr/lib/x86_64-linux-gnu/libc.so.6"));
}

#[test]
fn a_private_tmpfs_in_dev_is_mounted_on_the_views_dev_with_its_rules() {
    let p = plan(
        "path-map tmpfs /dev/shm\npath-allow read /dev/shm /dev/shm/* /dev/null\n\
         path-allow write /dev/shm/*",
    );
    let at = |want: &Step| p.steps.iter().position(|s| s == want);
    let dev = at(&Step::DevTmpfs).expect("a /dev tmpfs");
    let shm = at(&Step::Tmpfs {
        path: "/dev/shm".into(),
        flags: Flags {
            write: true,
            exec: false,
        },
    })
    .expect("a /dev/shm tmpfs");
    // On the view's /dev, so after it; the host's /dev/shm is never bound.
    assert!(dev < shm, "{:?}", p.steps);
    assert!(!p
        .steps
        .iter()
        .any(|s| matches!(s, Step::Bind { path, .. } if path.starts_with("/dev"))));
    assert!(p.holds("/dev/shm/sem.x"));
    // The default policy has it too.
    let d = view_plan(&Policy::default_policy().expand_scratch("/tmp/s"), &host());
    assert!(d
        .steps
        .iter()
        .any(|s| matches!(s, Step::Tmpfs { path, .. } if path == "/dev/shm")));
}

#[test]
fn a_directory_only_listed_exists_empty_and_never_in_a_hosts_tree() {
    let p = plan("path-allow read /home/u/p\npath-allow read /usr/*\npath-allow read /usr/bin");
    assert!(p.holds("/home/u/p"));
    // /usr/bin lies in the bound /usr: nothing is made there.
    assert_eq!(
        p.steps
            .iter()
            .filter(|s| matches!(s, Step::Dir { .. }))
            .collect::<Vec<_>>(),
        vec![&Step::Dir {
            path: "/home/u/p".into()
        }]
    );
    // Through a host symlink (/lib -> usr/lib): not made (the link's place is the link's).
    let mut h = host();
    h.0.insert("/usr/lib/x", Node::Dir);
    let p = view_plan(&Policy::parse("t", "path-allow read /lib/x").unwrap(), &h);
    assert!(
        !p.steps.iter().any(|s| matches!(s, Step::Dir { .. })),
        "{:?}",
        p.steps
    );
}

/// Without Landlock the view's mounts alone hold `execve`: an exec mount must be a tree the
/// policy lets run whole (or a file it lets run), and a writable one must have no `path-deny`
/// inside. The default policy's system trees pass; a program made later (its directory becomes
/// the exec mount), a name prefix and a deny in a writable exec tree do not.
#[test]
fn exec_mounts_beyond_the_policy_are_named() {
    let check = |text: &str| {
        let policy = Policy::parse("t", text).expect("parses");
        plan(text).exec_beyond(&policy)
    };
    assert_eq!(
        check("path-allow read /usr /usr/*\npath-allow exec /usr/*"),
        Vec::<String>::new()
    );
    assert_eq!(
        check("path-allow read /home/u/*\npath-allow exec /home/u/notes"),
        Vec::<String>::new()
    );
    let later = check("path-allow read /home/u/p/*\npath-allow exec /home/u/prog");
    assert_eq!(later.len(), 1, "{later:?}");
    assert!(
        later[0].starts_with("/home/u is an executable mount"),
        "{later:?}"
    );
    let prefix = check("path-allow read /usr/*\npath-allow exec /usr/bin/py*");
    assert!(prefix.iter().any(|s| s.contains("/usr/bin")), "{prefix:?}");
    let deny = check(
        "path-allow read /home/u/*\npath-allow write /home/u/*\npath-allow exec /home/u/*\n\
         path-deny /home/u/secret*",
    );
    assert!(
        deny.iter().any(|s| s.contains("path-deny /home/u/secret*")),
        "{deny:?}"
    );
    // Read-only, the same deny is a mask: nothing named so can appear.
    let masked =
        check("path-allow read /home/u/*\npath-allow exec /home/u/*\npath-deny /home/u/secret");
    assert_eq!(masked, Vec::<String>::new());
}
