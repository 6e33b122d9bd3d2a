//! The sandbox's own file system view (`warden run --view on`), attacked from inside and checked
//! from outside: what the policy does not call executable cannot run by any route, a denied
//! path cannot be reached by any route, the view cannot be changed, the program holds no
//! capability, and /proc lists only the sandbox.

mod common;

use common::{each_user, program, run_warden, stdout, As};
use std::path::{Path, PathBuf};

/// A directory of the test's own, readable by everyone, holding a copy of `echo` (an ELF the
/// policy will only let the program read) and a secret the policy denies.
struct Fixture {
    dir: PathBuf,
    elf: PathBuf,
    secret: PathBuf,
    secret_text: String,
}

impl Fixture {
    fn new(name: &str, who: As) -> Fixture {
        let dir = common::fresh_dir(&format!("view-{name}-{}", common::who_tag(who)));
        common::chmod(&dir, 0o755);
        let elf = dir.join("echo-copy");
        std::fs::copy("/usr/bin/echo", &elf).unwrap();
        common::chmod(&elf, 0o755);
        let secret_text = format!("view-secret-{}-{name}", std::process::id());
        let secret = dir.join("secret");
        common::write_file(&secret, format!("{secret_text}\n"), 0o644);
        std::fs::create_dir(dir.join("sub")).unwrap();
        common::chmod(&dir.join("sub"), 0o755);
        Fixture {
            dir,
            elf,
            secret,
            secret_text,
        }
    }

    fn s(p: &Path) -> &str {
        p.to_str().unwrap()
    }
}

fn view_run(who: As, view: &str, fx: &Fixture, extra: &[&str], cmd: &[&str]) -> (String, String) {
    let (_, bin) = program("view_exec");
    let dir = Fixture::s(&fx.dir);
    let mut args = vec![
        "run", "--view", view, "--read", dir, "--read", &bin, "--exec", &bin,
    ];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(cmd);
    let o = run_warden(who, common::workdir(), &args);
    (stdout(&o), common::stderr(&o))
}

fn no_exec_routes(who: As) {
    let fx = Fixture::new("noexec", who);
    let (prog, _) = program("view_exec");
    let elf = Fixture::s(&fx.elf);

    // Control: on the host's tree, the hand-written loader's mapping goes through, so the
    // check below can fail.
    let (out, err) = view_run(who, "off", &fx, &[], &[&prog, elf]);
    assert!(out.contains("mmap ran"), "control: {out}\n{err}");

    let (out, err) = view_run(who, "on", &fx, &[], &[&prog, elf]);
    let all = format!("{out}\n{err}");
    assert!(out.contains("mmap refused EPERM"), "{all}");
    assert!(out.contains("execveat refused"), "{all}");
    assert!(out.contains("memfd refused"), "{all}");
    assert!(!all.contains(" ran") && !all.contains("RAN"), "{all}");

    // ld.so on the read-only copy and on a copy in the (writable) scratch directory.
    let script = format!(
        "/lib64/ld-linux-x86-64.so.2 {elf} RAN-RO; cp {elf} ./t && /lib64/ld-linux-x86-64.so.2 \
         ./t RAN-SCRATCH; ./t RAN-DIRECT; echo done"
    );
    let (out, err) = view_run(who, "on", &fx, &[], &["/bin/sh", "-c", &script]);
    assert!(out.contains("done"), "{out}\n{err}");
    assert!(
        !out.contains("RAN"),
        "code ran from a file without exec:\n{out}\n{err}"
    );
    assert!(err.contains("failed to map segment"), "{err}");
}

#[test]
fn files_the_policy_does_not_call_executable_cannot_run_by_any_route() {
    each_user(
        "files_the_policy_does_not_call_executable_cannot_run_by_any_route",
        no_exec_routes,
    );
}

fn denied_routes(who: As) {
    let fx = Fixture::new("deny", who);
    let (prog, _) = program("view_mounts");
    let secret = Fixture::s(&fx.secret);
    let dir = Fixture::s(&fx.dir);
    let policy = fx.dir.join("deny.policy");
    common::write_file(&policy, format!("path-deny {secret}\n"), 0o644);
    let deny = ["--policy", Fixture::s(&policy)];
    let script = format!(
        "cat {secret}; cat {dir}/sub/../secret; cat /proc/self/root{secret}; \
         (cd {dir} && cat secret; cat ./sub/../secret); ln {secret} ./l && cat ./l; \
         cat /proc/self/cwd/../../{secret}; exec 3<{dir} && cat /proc/self/fd/3/secret; echo done"
    );
    for view in ["on", "off"] {
        let (out, err) = view_run(who, view, &fx, &deny, &["/bin/sh", "-c", &script]);
        assert!(out.contains("done"), "{view}: {out}\n{err}");
        assert!(
            !out.contains(&fx.secret_text),
            "--view {view}: the denied file was read:\n{out}\n{err}"
        );
    }
    // The mask cannot be taken away from inside.
    let (out, err) = view_run(who, "on", &fx, &deny, &[&prog, secret]);
    assert!(!out.contains(&fx.secret_text), "{out}\n{err}");
    for call in [
        "umount",
        "remount",
        "mount",
        "pivot_root",
        "open_tree",
        "fsopen",
        "unshare",
    ] {
        assert!(
            out.contains(&format!("{call} refused")),
            "{call} was not refused:\n{out}\n{err}"
        );
    }
    assert!(out.contains("read refused"), "{out}\n{err}");
}

#[test]
fn a_denied_path_is_unreachable_by_every_route_and_the_view_cannot_be_changed() {
    each_user(
        "a_denied_path_is_unreachable_by_every_route_and_the_view_cannot_be_changed",
        denied_routes,
    );
}

fn capabilities(who: As) {
    for view in ["on", "off"] {
        let o = run_warden(
            who,
            common::workdir(),
            &[
                "run",
                "--view",
                view,
                "--",
                "/bin/grep",
                "^Cap",
                "/proc/self/status",
            ],
        );
        common::assert_ok(&o);
        let out = stdout(&o);
        let sets: Vec<&str> = out.lines().collect();
        assert_eq!(sets.len(), 5, "{out}");
        for line in sets {
            assert!(
                line.ends_with("0000000000000000"),
                "--view {view}: a capability set is not empty: {line}"
            );
        }
    }
}

#[test]
fn the_program_holds_no_capability_also_as_root() {
    each_user("the_program_holds_no_capability_also_as_root", capabilities);
}

fn proc_lists(who: As) {
    let o = run_warden(
        who,
        common::workdir(),
        &[
            "run",
            "--view",
            "on",
            "--read",
            "/proc",
            "--read",
            "/proc/*",
            "--",
            "/bin/sh",
            "-c",
            "ls /proc; echo end",
        ],
    );
    common::assert_ok(&o);
    let out = stdout(&o);
    let pids: Vec<u32> = out.lines().filter_map(|l| l.parse().ok()).collect();
    assert!(out.contains("end"), "{out}");
    // The shell and ls, numbered in the sandbox's namespace; init is not listed (it is not
    // dumpable, and hidepid=ptraceable hides what the caller may not inspect).
    assert!(!pids.is_empty() && pids.len() <= 3, "{pids:?}");
    assert!(pids.iter().all(|&p| (2..10).contains(&p)), "{pids:?}");
    assert!(!pids.contains(&std::process::id()));
}

#[test]
fn proc_lists_only_the_sandboxs_own_processes() {
    each_user("proc_lists_only_the_sandboxs_own_processes", proc_lists);
}

fn default_policy_programs(who: As) {
    let script = "ls / | tr '\\n' ' '; echo; cat /etc/shadow 2>&1 | head -c 0; \
                  echo hi > f && cat f; ls /root 2>/dev/null || echo no-root";
    let o = run_warden(
        who,
        common::workdir(),
        &["run", "--view", "on", "--", "/bin/sh", "-c", script],
    );
    common::assert_ok(&o);
    let out = stdout(&o);
    let root = out.lines().next().unwrap_or_default();
    for name in root.split_whitespace() {
        assert!(
            [
                "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "tmp",
                "usr"
            ]
            .contains(&name),
            "the view's / holds {name}, which the default policy does not bring in: {root}"
        );
    }
    assert!(out.contains("hi\n") && out.contains("no-root"), "{out}");
}

#[test]
fn the_default_policy_runs_in_a_view_that_holds_only_what_it_allows() {
    each_user(
        "the_default_policy_runs_in_a_view_that_holds_only_what_it_allows",
        default_policy_programs,
    );
}
