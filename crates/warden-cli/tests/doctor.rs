//! `warden doctor`: it runs as root and as uid 65534, needs no privilege, and what it says
//! matches what the host does when asked directly.

mod common;

use common::As;
use std::process::Command;

fn doctor_json(who: As) -> serde_json::Value {
    let out = common::run_warden(who, common::workdir(), &["doctor", "--json"]);
    common::assert_ok(&out);
    serde_json::from_slice(&out.stdout).expect("doctor --json prints JSON")
}

/// `unshare -U true` as `who`: whether this user may make a user namespace.
fn unshare_user_works(who: As) -> bool {
    let mut cmd = match who {
        As::Me => Command::new("/usr/bin/unshare"),
        As::Nobody => {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
                "/usr/bin/unshare",
            ]);
            c
        }
    };
    cmd.args(["-U", "true"])
        .status()
        .expect("unshare runs")
        .success()
}

#[test]
fn doctor_facts_match_the_host() {
    common::each_user("doctor_facts_match_the_host", |who| {
        let v = doctor_json(who);
        let facts = &v["facts"];
        let expected_uid = match who {
            As::Me => rustix::process::geteuid().as_raw(),
            As::Nobody => 65534,
        };
        assert_eq!(facts["uid"], expected_uid, "{v:#}");
        // Landlock's ABI is the kernel's answer, whoever asks.
        let abi = warden::sys::probe::landlock_abi().ok();
        assert_eq!(
            facts["landlock"]["abi"].as_i64(),
            abi.map(i64::from),
            "{v:#}"
        );
        // A user namespace is creatable exactly when `unshare -U` can make one.
        assert_eq!(
            facts["namespaces"]["user"] == "yes",
            unshare_user_works(who),
            "{v:#}"
        );
        // The tests run under no supervisor: our own listener is allowed.
        assert_eq!(facts["seccomp"]["listener"], "yes", "{v:#}");
        // The agent reads its children's memory on this host (the escape suite depends on it).
        assert_eq!(facts["process"]["process_vm_readv"], "yes", "{v:#}");
        assert_eq!(facts["process"]["pidfd_getfd"], "yes", "{v:#}");
        assert_eq!(
            facts["mounts"]["overlayfs"],
            std::fs::read_to_string("/proc/filesystems")
                .unwrap()
                .contains("\toverlay\n"),
        );
        assert_eq!(v["modes"].as_array().map(Vec::len), Some(3), "{v:#}");
        assert!(v["advice"].is_array());

        // The text form says the same for a person.
        let out = common::run_warden(who, common::workdir(), &["doctor"]);
        common::assert_ok(&out);
        let text = common::stdout(&out);
        for heading in [
            "Namespaces",
            "Landlock",
            "Seccomp",
            "cgroups",
            "What each mode enforces here",
        ] {
            assert!(text.contains(heading), "{text}");
        }
        if let Some(abi) = abi {
            assert!(text.contains(&format!("ABI {abi}")), "{text}");
        }
    });
}

#[test]
fn doctor_leaves_no_cgroup_behind() {
    if !common::require_root("doctor_leaves_no_cgroup_behind") {
        return;
    }
    let groups = || -> Vec<String> {
        let mut found = Vec::new();
        for root in [
            "/sys/fs/cgroup",
            "/sys/fs/cgroup/memory",
            "/sys/fs/cgroup/unified",
        ] {
            if let Ok(entries) = std::fs::read_dir(root) {
                for e in entries.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if name.starts_with("warden-doctor-") {
                        found.push(format!("{root}/{name}"));
                    }
                }
            }
        }
        found
    };
    let before = groups();
    doctor_json(As::Me);
    assert_eq!(groups(), before);
}
