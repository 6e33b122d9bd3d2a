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
    assert!(!out.contains("memfd chmod allowed"), "{all}");
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

/// An exec rule for a program the run will make (`DIR/prog`, missing at the start) makes the
/// view's bind of `DIR` executable and gives Landlock's execute right to `DIR`, so it must not
/// open any other route: a file the program writes in a writable tree inside `DIR` runs
/// neither by execve (which then stays with the agent, the one check that holds the rule to
/// the file) nor through ld.so or a hand-written loader (the inner tree stays `noexec`).
fn made_later_routes(who: As) {
    let fx = Fixture::new("later", who);
    let (prog, bin) = program("view_exec");
    let dir = Fixture::s(&fx.dir);
    let sub = fx.dir.join("sub");
    if who == As::Nobody {
        common::chmod(&sub, 0o777);
    }
    let sub = Fixture::s(&sub);
    let script = format!(
        "cp /usr/bin/echo {sub}/x && echo copied; {sub}/x RAN-EXEC; \
         /lib64/ld-linux-x86-64.so.2 {sub}/x RAN-LDSO; {prog} {sub}/x; echo done"
    );
    let report = own_tmpdir("later", who).join("report");
    let run = |exec: &str| {
        let args = [
            "run",
            "--report",
            Fixture::s(&report),
            "--read",
            sub,
            "--write",
            &format!("{sub}/*"),
            "--read",
            &bin,
            "--exec",
            &bin,
            "--exec",
            exec,
            "--",
            "/bin/sh",
            "-c",
            &script,
        ];
        let o = run_warden(who, common::workdir(), &args);
        let execs = common::report_field(&report, "delegated-exec").unwrap_or_else(|| "0".into());
        (stdout(&o), common::stderr(&o), execs)
    };
    // Control: with the writable tree executable, every route runs the copy; every exec rule
    // is one the kernel says exactly, so the execs do not reach the agent.
    let (out, err, execs) = run(&format!("{sub}/*"));
    assert!(
        out.contains("RAN-EXEC") && out.contains("RAN-LDSO"),
        "control: {out}\n{err}"
    );
    assert!(out.contains("mmap ran"), "control: {out}\n{err}");
    // Where Landlock cannot enforce every rule exactly (below ABI 5), no run is view+exec:
    // every exec goes to the agent, which finds what the kernel would.
    if common::landlock_abi() >= 5 {
        assert_eq!(execs, "0", "execs reached the agent in a view+exec run");
    } else {
        common::skip(
            "an_exec_rule_for_a_program_made_later_opens_no_other_route (execs decided by the kernel)",
            common::Lack::LandlockAbi5,
            "Landlock below ABI 5: every exec goes to the agent",
        );
        assert_ne!(
            execs, "0",
            "control: no exec reached the agent:\n{out}\n{err}"
        );
    }

    let (out, err, execs) = run(&format!("{dir}/prog"));
    assert!(
        out.contains("copied") && out.contains("done"),
        "{out}\n{err}"
    );
    assert!(
        !out.contains("RAN") && !out.contains(" ran"),
        "ESCAPE: code ran from a file the policy does not call executable:\n{out}\n{err}"
    );
    assert!(out.contains("mmap refused EPERM"), "{out}\n{err}");
    // The exec rule for the missing program keeps every exec with the agent.
    assert_ne!(execs, "0", "no exec reached the agent:\n{out}\n{err}");
}

#[test]
fn an_exec_rule_for_a_program_made_later_opens_no_other_route() {
    each_user(
        "an_exec_rule_for_a_program_made_later_opens_no_other_route",
        made_later_routes,
    );
}

/// In a view that decides execs, the program's exec waits only for warden's word that it holds
/// the listener (the exec closes the program's copy). A program whose first call goes to the
/// agent, started again and again, must have it answered every time: before warden held the
/// listener, the filter would have none, and the call would fail with ENOSYS.
fn first_call_routes(who: As) {
    // Below Landlock ABI 5 no run is view+exec: the exec goes to the agent, and waits for it.
    let exec_waits = common::landlock_abi() < 5;
    if exec_waits {
        common::skip(
            "a_programs_first_call_is_answered_though_its_exec_does_not_wait_for_the_agent (an exec that does not wait)",
            common::Lack::LandlockAbi5,
            "Landlock below ABI 5: every exec goes to the agent",
        );
    }
    let (prog, bin) = program("first_call");
    let tmp = own_tmpdir("first-call", who);
    let report = tmp.join("report");
    for round in 0..30 {
        let o = run_warden(
            who,
            common::workdir(),
            &[
                "run",
                "--report",
                Fixture::s(&report),
                "--read",
                &bin,
                "--exec",
                &bin,
                "--",
                &prog,
            ],
        );
        let (out, err) = (stdout(&o), common::stderr(&o));
        assert_eq!(out, "first call ok\n", "round {round}:\n{err}");
        let text = std::fs::read_to_string(&report).unwrap();
        // The call reached the agent; the exec did not (where the kernel decides execs).
        let field = |key| common::report_field(&report, key);
        assert_eq!(
            field("delegated-memfd").as_deref(),
            Some("1"),
            "round {round}: {text}"
        );
        if exec_waits {
            assert_eq!(
                field("delegated-exec").as_deref(),
                Some("1"),
                "round {round}: {text}"
            );
        } else {
            assert_eq!(field("delegated-exec"), None, "round {round}: {text}");
        }
    }
}

#[test]
fn a_programs_first_call_is_answered_though_its_exec_does_not_wait_for_the_agent() {
    each_user(
        "a_programs_first_call_is_answered_though_its_exec_does_not_wait_for_the_agent",
        first_call_routes,
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
    // `ps` under the default policy: the sandbox's processes, by the sandbox's numbers, and
    // nothing of the host's (a process of the test's with a name of its own runs meanwhile).
    if !std::path::Path::new("/usr/bin/ps").exists() {
        common::skip(
            "proc_lists_only_the_sandboxs_own_processes",
            common::Lack::Program,
            "no ps (procps; scripts/setup.sh installs it)",
        );
        return;
    }
    let marker = format!("warden-ps-marker-{}", std::process::id());
    // bash: dash's exec has no -a, and the marker would never run.
    let mut host = std::process::Command::new("/bin/bash")
        .args(["-c", &format!("exec -a {marker} sleep 30")])
        .spawn()
        .unwrap();
    // Control: outside, ps lists it (once bash has exec'd it).
    let seen = (0..100).any(|_| {
        let ps = std::process::Command::new("/usr/bin/ps")
            .args(["-eo", "args="])
            .output()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        String::from_utf8_lossy(&ps.stdout).contains(&marker)
    });
    assert!(seen, "control: the marker process is not listed outside");
    let o = run_warden(
        who,
        common::workdir(),
        &[
            "run",
            "--",
            "/bin/sh",
            "-c",
            "sleep 30 & ps -eo pid=,comm=,args=; kill $!",
        ],
    );
    let _ = host.kill();
    let _ = host.wait();
    common::assert_ok(&o);
    let out = stdout(&o);
    let comms: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .collect();
    assert!(!out.contains(&marker), "{out}");
    // Below Landlock ABI 5 every open goes to the agent, which lets a process read only its
    // own /proc/PID (translated to warden's procfs, numbered as there): `ps` finds itself alone
    // (docs/guests.md, "Open on 6.1").
    if common::landlock_abi() < 5 {
        common::skip(
            "proc_lists_only_the_sandboxs_own_processes (ps lists the sandbox)",
            common::Lack::LandlockAbi5,
            "Landlock below ABI 5: the agent shows ps only its own process",
        );
        assert!(comms.iter().all(|c| *c == "ps"), "{out}");
        return;
    }
    assert_eq!(comms, ["sh", "sleep", "ps"], "{out}");
    assert!(
        out.lines()
            .filter_map(|l| l.split_whitespace().next()?.parse::<u32>().ok())
            .all(|p| (2..10).contains(&p)),
        "{out}"
    );
}

#[test]
fn proc_lists_only_the_sandboxs_own_processes() {
    each_user("proc_lists_only_the_sandboxs_own_processes", proc_lists);
}

/// The default policy names a few files of /proc and two places in /proc/sys: everything else
/// in the sandbox's procfs is unreadable by every route tried, /proc/sys and /proc/sys/vm list
/// only what is named (they are covered by an empty read-only tmpfs holding clones of the named
/// parts), nothing there can be written or made, and /proc lists no process of the host's.
fn proc_holds_only_what_is_named(who: As) {
    let unnamed = [
        "/proc/kallsyms",
        "/proc/version",
        "/proc/cmdline",
        "/proc/modules",
        "/proc/iomem",
        "/proc/zoneinfo",
        "/proc/vmstat",
        "/proc/partitions",
        "/proc/sys/vm/swappiness",
        "/proc/sys/kernel/../vm/swappiness",
        "/proc/sys/kernel/../../sys/fs/file-max",
        "/proc/sys/fs/file-max",
        "/proc/sys/net/core/somaxconn",
        "/proc/sys/vm/../../version",
        "/proc/self/root/proc/sys/vm/swappiness",
        "/proc/thread-self/root/proc/kallsyms",
        "/proc/1/root/proc/sys/vm/swappiness",
        "/proc/1/environ",
    ];
    let named = [
        "/proc/cpuinfo",
        "/proc/meminfo",
        "/proc/sys/vm/overcommit_memory",
        "/proc/sys/kernel/ostype",
        "/proc/self/status",
    ];
    let mut script = String::new();
    for p in unnamed.iter().chain(&named) {
        script.push_str(&format!(
            "if cat {p} >/dev/null 2>&1; then echo READ {p}; else echo DENIED {p}; fi; "
        ));
    }
    // Through a descriptor of the covered directory, and by changing into it.
    script.push_str(
        "exec 3</proc/sys; cat /proc/self/fd/3/vm/swappiness 2>/dev/null && echo READ fd3; \
         (cd /proc/sys/vm && cat swappiness 2>/dev/null && echo READ cd); \
         echo LIST-SYS $(ls /proc/sys); echo LIST-VM $(ls /proc/sys/vm); \
         (echo 1 > /proc/sys/vm/overcommit_memory) 2>/dev/null && echo WROTE overcommit; \
         (: > /proc/sys/x) 2>/dev/null && echo MADE file; mkdir /proc/sys/vm/d 2>/dev/null && \
         echo MADE dir; echo PIDS $(ls /proc | grep '^[0-9]'); echo end",
    );
    let before = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap();
    let o = run_warden(
        who,
        common::workdir(),
        &["run", "--view", "on", "--", "/bin/sh", "-c", &script],
    );
    common::assert_ok(&o);
    let out = stdout(&o);
    assert!(out.contains("end"), "{out}");
    for p in unnamed {
        assert!(
            out.contains(&format!("DENIED {p}\n")),
            "{p} is readable though the policy does not name it:\n{out}"
        );
    }
    for p in named {
        assert!(
            out.contains(&format!("READ {p}\n")),
            "{p} is not readable:\n{out}"
        );
    }
    for bad in ["READ fd3", "READ cd", "WROTE", "MADE"] {
        assert!(!out.contains(bad), "{bad}:\n{out}");
    }
    assert!(out.contains("LIST-SYS kernel vm\n"), "{out}");
    assert!(out.contains("LIST-VM overcommit_memory\n"), "{out}");
    // Checked from outside: the host's value is untouched, and no process of the host's is
    // listed inside (the sandbox's are numbered from 1 in its own namespace).
    assert_eq!(
        std::fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap(),
        before
    );
    let pids: Vec<u32> = out
        .lines()
        .find_map(|l| l.strip_prefix("PIDS "))
        .unwrap_or_default()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    // The shell, the subshell of `$(...)`, ls and grep, numbered past the ~40 processes the
    // script started before; init (1) is not listed, nor is any process outside.
    assert!(
        !pids.is_empty() && pids.len() <= 4 && pids.iter().all(|&p| (2..100).contains(&p)),
        "{pids:?}"
    );
}

#[test]
fn proc_holds_only_what_the_policy_names() {
    each_user(
        "proc_holds_only_what_the_policy_names",
        proc_holds_only_what_is_named,
    );
}

fn default_policy_programs(who: As) {
    // `ls -A`: dot names too (the host's tree hangs beneath the view at a dot name while init
    // seals it). Then every mount's device and root in the file system it comes from.
    let script = "ls -A / | tr '\\n' ' '; echo; find /sys | sort | tr '\\n' ' '; echo; \
                  awk '{printf \"%s=%s \", $3, $4} END {print \"\"}' /proc/self/mountinfo; \
                  cat /etc/shadow 2>&1 | head -c 0; \
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
                "bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "sys",
                "tmp", "usr"
            ]
            .contains(&name),
            "the view's / holds {name}, which the default policy does not bring in: {root}"
        );
    }
    // Of sysfs, the processor counts only (the default policy's three files).
    let cpu = "/sys/devices/system/cpu";
    assert_eq!(
        out.lines().nth(1).unwrap_or_default().trim_end(),
        format!(
            "/sys /sys/devices /sys/devices/system {cpu} {cpu}/online {cpu}/possible {cpu}/present"
        ),
        "{out}"
    );
    // The host's tree is gone from beneath the view before the program runs: no mount of the
    // host's root file system at its own root (the view binds only trees inside it).
    let host_root = std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .find(|f| f.get(4) == Some(&"/"))
        .and_then(|f| f.get(2).map(|d| d.to_string()))
        .expect("the host's root in /proc/self/mountinfo");
    let mounts = out.lines().nth(2).unwrap_or_default();
    assert!(
        mounts.split_whitespace().count() > 3,
        "no mounts read: {out}"
    );
    assert!(
        !mounts
            .split_whitespace()
            .any(|m| m == format!("{host_root}=/")),
        "the host's root file system ({host_root}) is mounted whole in the sandbox: {mounts}"
    );
    assert!(out.contains("hi\n") && out.contains("no-root"), "{out}");
}

#[test]
fn the_default_policy_runs_in_a_view_that_holds_only_what_it_allows() {
    each_user(
        "the_default_policy_runs_in_a_view_that_holds_only_what_it_allows",
        default_policy_programs,
    );
}

// ---- path-map: a host tree elsewhere, a private tmpfs, a private copy ----

/// A tree for the maps to show, owned by the sandbox's user (a copy keeps the host's owners and
/// modes, so the program may change only what that user may), and what it holds, byte by byte.
fn map_tree(name: &str, who: As) -> PathBuf {
    let dir = common::fresh_dir(&format!("map-{name}-{}", common::who_tag(who)));
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("sub/deep")).unwrap();
    common::write_file(&tree.join("a"), "alpha\n", 0o644);
    common::write_file(&tree.join("c"), "gamma\n", 0o644);
    common::write_file(&tree.join("keep"), "untouched\n", 0o644);
    common::write_file(&tree.join("sub/b"), "beta\n", 0o644);
    common::write_file(&tree.join("sub/deep/d"), "delta\n", 0o600);
    if who == As::Nobody {
        let st = std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(st.success());
    }
    tree
}

/// Every entry beneath `dir` with its type, mode, owner and contents (links: their target).
fn snapshot(dir: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let mut names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for p in names {
            let m = std::fs::symlink_metadata(&p).unwrap();
            let what = if m.file_type().is_symlink() {
                format!("-> {}", std::fs::read_link(&p).unwrap().display())
            } else if m.is_dir() {
                stack.push(p.clone());
                "dir".into()
            } else {
                String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned()
            };
            out.push(format!(
                "{} {:o} {}:{} {what}",
                p.display(),
                m.mode(),
                m.uid(),
                m.gid()
            ));
        }
    }
    out
}

/// A TMPDIR of the run's own, so that what a run leaves there can be counted.
fn own_tmpdir(name: &str, who: As) -> PathBuf {
    let dir = common::fresh_dir(&format!("tmpdir-{name}-{}", common::who_tag(who)));
    common::chmod(&dir, 0o1777);
    dir
}

fn warden_in(who: As, tmpdir: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = common::warden_cmd(who);
    cmd.env("TMPDIR", tmpdir).args(args);
    common::finish(cmd, common::RUN_DEADLINE).0
}

fn private_copy(who: As) {
    let tree = map_tree("copy", who);
    let host = Fixture::s(&tree).to_owned();
    let before = snapshot(&tree);
    let policy = tree.parent().unwrap().join("copy.policy");
    common::write_file(
        &policy,
        format!(
            "path-map {host} /work copy\npath-allow read /work /work/*\n\
             path-allow write /work/*\npath-allow unlink /work/*\npath-map tmpfs /tmp\n\
             path-allow read /tmp /tmp/*\npath-allow write /tmp/*\npath-allow unlink /tmp/*\n"
        ),
        0o644,
    );
    // An untrusted "installer": rewrites, deletes, adds, and tries every way out of the copy
    // to the host's tree beneath it.
    let script = format!(
        "cd /work && echo rewritten > a && rm c && rm -r sub && mkdir -p new/dir && \
         echo added > new/dir/f && echo more >> keep.not && chmod 600 keep.not; \
         echo OUT > {host}/a; echo OUT > /proc/self/root{host}/a; echo OUT > /work/../{host}/a; \
         ln -s {host}/keep /work/lnk; echo OUT > /work/lnk; \
         echo OUT > /proc/self/cwd/../{host}/keep; mv /work/keep /tmp/moved && \
         echo OUT > /tmp/moved; cat /work/a; ls /work; echo done"
    );
    let tmp = own_tmpdir("copy", who);
    let report = tmp.join("report.json");
    let o = warden_in(
        who,
        &tmp,
        &[
            "run",
            "--keep",
            "--report-json",
            Fixture::s(&report),
            "--policy",
            Fixture::s(&policy),
            "--",
            "/bin/sh",
            "-c",
            &script,
        ],
    );
    let (out, err) = (stdout(&o), common::stderr(&o));
    assert!(
        out.contains("rewritten") && out.contains("done"),
        "{out}\n{err}"
    );
    assert!(!out.contains("gamma"), "{out}\n{err}");
    assert_eq!(
        snapshot(&tree),
        before,
        "the host's tree changed:\n{out}\n{err}"
    );
    // The kept copy, as the run named it, and in its report.
    let name = err
        .split("`warden diff ")
        .nth(1)
        .and_then(|r| r.split('`').next())
        .unwrap_or_else(|| panic!("no copy named:\n{err}"))
        .to_owned();
    let json = std::fs::read_to_string(&report).unwrap();
    assert!(json.contains(&name), "{json}");
    let d = warden_in(who, &tmp, &["diff", &name]);
    common::assert_ok(&d);
    let listed: Vec<String> = stdout(&d).lines().map(str::to_owned).collect();
    assert_eq!(
        listed,
        [
            "M /work/a",
            "D /work/c",
            "D /work/keep",
            "A /work/keep.not",
            "A /work/lnk",
            "A /work/new",
            "A /work/new/dir",
            "A /work/new/dir/f",
            "D /work/sub",
        ],
        "{out}\n{err}"
    );

    // Without --keep nothing of the run is left in its TMPDIR.
    let tmp2 = own_tmpdir("copy-nokeep", who);
    let o = warden_in(
        who,
        &tmp2,
        &[
            "run",
            "--policy",
            Fixture::s(&policy),
            "--",
            "/bin/sh",
            "-c",
            "echo rewritten > /work/a && mkdir /work/m && chmod 0 /work/m && echo ok",
        ],
    );
    assert!(stdout(&o).contains("ok"), "{}", common::stderr(&o));
    // (The registry of an unprivileged user lives there too, and stays: it is no run's; so does
    // the directory a user's runs keep their scratch in, empty.)
    let left: Vec<_> = std::fs::read_dir(&tmp2)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            let empty_runs_dir = n.starts_with("warden-scratch-")
                && std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_none());
            !n.starts_with("warden-run-") && !empty_runs_dir
        })
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert_eq!(snapshot(&tree), before);
}

#[test]
fn a_private_copy_leaves_the_host_tree_byte_identical_and_diff_names_exactly_the_changes() {
    each_user(
        "a_private_copy_leaves_the_host_tree_byte_identical_and_diff_names_exactly_the_changes",
        private_copy,
    );
}

fn tmpfs_map(who: As) {
    let marker = std::env::temp_dir().join(format!("view-tmpfs-marker-{}", std::process::id()));
    common::write_file(&marker, "host\n", 0o644);
    let o = run_warden(
        who,
        common::workdir(),
        &[
            "run",
            "--read",
            "/tmp",
            "--read",
            "/tmp/*",
            "--write",
            "/tmp/*",
            "--",
            "/bin/sh",
            "-c",
            "ls -A /tmp | grep -v '^warden-' | wc -l; echo mine > /tmp/made && cat /tmp/made",
        ],
    );
    // Control: without the map the host's /tmp shows.
    assert!(!stdout(&o).starts_with("0\n"), "{}", stdout(&o));
    let policy = common::workdir().join(format!("tmpfs-{}.policy", common::who_tag(who)));
    common::write_file(
        &policy,
        "path-map tmpfs /tmp\npath-allow read /tmp /tmp/*\npath-allow write /tmp/*\n",
        0o644,
    );
    let o = run_warden(
        who,
        common::workdir(),
        &[
            "run",
            "--policy",
            Fixture::s(&policy),
            "--",
            "/bin/sh",
            "-c",
            "ls -A /tmp; echo count $(ls -A /tmp | grep -vc '^warden-'); \
             echo mine > /tmp/made-in-view && cat /tmp/made-in-view; cat /tmp/view-tmpfs-marker-*",
        ],
    );
    let (out, err) = (stdout(&o), common::stderr(&o));
    assert!(out.contains("count 0"), "{out}\n{err}");
    assert!(out.contains("mine"), "{out}\n{err}");
    assert!(!out.contains("host"), "{out}\n{err}");
    assert!(!std::env::temp_dir().join("made-in-view").exists());
    let _ = std::fs::remove_file(marker);
}

#[test]
fn a_tmpfs_map_is_private_and_empty() {
    each_user("a_tmpfs_map_is_private_and_empty", tmpfs_map);
}

/// `/dev/shm` (POSIX shared memory and semaphores): in the default view it is the sandbox's own
/// empty tmpfs; the host's, which every other program shares, is reachable by no route, and
/// nothing the sandbox makes there reaches it. Without a view, `/dev/shm` is closed.
fn dev_shm(who: As) {
    let name = format!(
        "warden-shm-test-{}-{}",
        std::process::id(),
        common::who_tag(who)
    );
    let host = Path::new("/dev/shm").join(&name);
    let secret = format!("host-shm-secret-{name}");
    common::write_file(&host, format!("{secret}\n"), 0o666);
    let made = Path::new("/dev/shm").join(format!("made-{name}"));
    let script = format!(
        "echo entries $(ls -A /dev/shm | wc -l); \
         for p in /dev/shm/{name} /proc/self/root/dev/shm/{name} /dev/../dev/shm/{name} \
         /dev/shm/./{name}; do cat $p; done; ln -s /dev/shm/{name} l && cat l; \
         echo hello > /dev/shm/{name}; echo mine > /dev/shm/made-{name} && \
         cat /dev/shm/made-{name}; echo done"
    );
    let o = run_warden(
        who,
        common::workdir(),
        &["run", "--", "/bin/sh", "-c", &script],
    );
    let (out, err) = (stdout(&o), common::stderr(&o));
    assert!(out.contains("entries 0\n"), "{out}\n{err}");
    assert!(
        out.contains("mine\n") && out.ends_with("done\n"),
        "{out}\n{err}"
    );
    assert!(!out.contains(&secret), "the host's /dev/shm leaked: {out}");
    let o = run_warden(
        who,
        common::workdir(),
        &["run", "--view", "off", "--", "/bin/sh", "-c", &script],
    );
    let (off, err_off) = (stdout(&o), common::stderr(&o));
    assert!(!off.contains(&secret), "--view off leaked: {off}");
    assert!(!off.contains("mine"), "--view off wrote: {off}\n{err_off}");
    assert!(err_off.contains("Permission denied"), "{off}\n{err_off}");
    // From outside: the host's file is as it was, and nothing was made.
    assert_eq!(
        std::fs::read_to_string(&host).unwrap(),
        format!("{secret}\n")
    );
    assert!(!made.exists(), "{} reached the host", made.display());
    let _ = std::fs::remove_file(&host);
}

#[test]
fn dev_shm_is_the_sandboxs_own_and_closed_without_a_view() {
    each_user(
        "dev_shm_is_the_sandboxs_own_and_closed_without_a_view",
        dev_shm,
    );
}

/// git in a private copy of a repository, against the same script run natively on a copy of
/// it made with `cp -a`: the same output (dates and identity fixed, so the same commit ids),
/// and the host's repository byte-identical afterwards.
fn git_in_a_copy(who: As) {
    if !Path::new("/usr/bin/git").exists() {
        common::skip(
            "git_in_a_private_copy_runs_as_natively_and_leaves_the_repository",
            common::Lack::Program,
            "no git (scripts/setup.sh installs it)",
        );
        return;
    }
    let tree = map_tree("git", who);
    let env = "export HOME=/tmp GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=w GIT_AUTHOR_EMAIL=w@x \
               GIT_COMMITTER_NAME=w GIT_COMMITTER_EMAIL=w@x \
               GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' \
               GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'";
    let init = format!(
        "{env}; cd {} && git init -q -b main . && git add -A && git commit -qm first",
        tree.display()
    );
    let st = std::process::Command::new("/bin/sh")
        .args(["-c", &init])
        .status()
        .unwrap();
    assert!(st.success());
    if who == As::Nobody {
        let st = std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&tree)
            .status()
            .unwrap();
        assert!(st.success());
    }
    let before = snapshot(&tree);
    let work = "echo changed >> a && git rm -q c && echo new > n && git add -A && \
                git commit -qm second && git log --format='%H %s' && git status --short && \
                git gc -q && git fsck --no-progress 2>&1 | wc -l && cat a";
    // Natively, on a copy.
    let native_dir = tree.parent().unwrap().join("native");
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(&tree)
        .arg(&native_dir)
        .status()
        .unwrap();
    assert!(st.success());
    let native = std::process::Command::new("/bin/sh")
        .args([
            "-c",
            &format!("{env}; cd {} && {work}", native_dir.display()),
        ])
        .output()
        .unwrap();
    assert!(native.status.success(), "{native:?}");
    let policy = tree.parent().unwrap().join("git.policy");
    common::write_file(
        &policy,
        format!(
            "path-map {} /repo copy\npath-allow read /repo /repo/*\npath-allow write /repo/*\n\
             path-allow unlink /repo/*\npath-map tmpfs /tmp\npath-allow read /tmp /tmp/*\n\
             path-allow write /tmp/*\npath-allow unlink /tmp/*\n",
            tree.display()
        ),
        0o644,
    );
    let o = run_warden(
        who,
        common::workdir(),
        &[
            "run",
            "--policy",
            Fixture::s(&policy),
            "--",
            "/bin/sh",
            "-c",
            &format!("{env}; cd /repo && {work}"),
        ],
    );
    assert_eq!(
        stdout(&o),
        String::from_utf8_lossy(&native.stdout),
        "{}",
        common::stderr(&o)
    );
    assert_eq!(snapshot(&tree), before, "the host's repository changed");
}

#[test]
fn git_in_a_private_copy_runs_as_natively_and_leaves_the_repository() {
    each_user(
        "git_in_a_private_copy_runs_as_natively_and_leaves_the_repository",
        git_in_a_copy,
    );
}

fn ro_and_rw_maps(who: As) {
    let tree = map_tree("rorw", who);
    let host = Fixture::s(&tree).to_owned();
    let before = snapshot(&tree);
    let dir = tree.parent().unwrap();
    let policy = |mode: &str, write: bool| {
        let p = dir.join(format!("{mode}-{write}.policy"));
        let w = if write { "path-allow write /m/*\n" } else { "" };
        common::write_file(
            &p,
            format!("path-map {host} /m {mode}\npath-allow read /m/*\n{w}"),
            0o644,
        );
        p
    };
    let run = |p: &Path| {
        let o = run_warden(
            who,
            common::workdir(),
            &[
                "run",
                "--policy",
                Fixture::s(p),
                "--",
                "/bin/sh",
                "-c",
                "cat /m/a; echo new > /m/f; echo end",
            ],
        );
        (stdout(&o), common::stderr(&o))
    };
    // ro: the rules allow the write, the kernel's read-only mount refuses it.
    let (out, err) = run(&policy("ro", true));
    assert!(out.contains("alpha") && out.contains("end"), "{out}\n{err}");
    assert!(err.contains("Read-only file system"), "{out}\n{err}");
    assert_eq!(snapshot(&tree), before);
    // rw without a write rule: the map grants nothing.
    let (out, err) = run(&policy("rw", false));
    assert!(err.contains("Permission denied"), "{out}\n{err}");
    assert_eq!(snapshot(&tree), before);
    // rw with one: the write reaches the host.
    let (out, err) = run(&policy("rw", true));
    assert!(out.contains("end"), "{out}\n{err}");
    assert_eq!(
        std::fs::read_to_string(tree.join("f")).unwrap_or_default(),
        "new\n",
        "{out}\n{err}"
    );
    // The host's own path is not in the view.
    let o = run_warden(
        who,
        common::workdir(),
        &[
            "run",
            "--policy",
            Fixture::s(&policy("rw", true)),
            "--",
            "/bin/sh",
            "-c",
            &format!("cat {host}/a /proc/self/root{host}/a /m/../{host}/a; echo end"),
        ],
    );
    assert!(!stdout(&o).contains("alpha"), "{}", stdout(&o));
}

#[test]
fn a_read_only_map_refuses_writes_by_the_kernel_and_rw_writes_through() {
    each_user(
        "a_read_only_map_refuses_writes_by_the_kernel_and_rw_writes_through",
        ro_and_rw_maps,
    );
}

#[test]
fn a_map_the_host_cannot_hold_is_refused_by_check_and_run() {
    let dir = common::fresh_dir("map-missing");
    let policy = dir.join("missing.policy");
    let gone = dir.join("gone");
    common::write_file(
        &policy,
        format!("path-map {} /m\npath-allow read /m/*\n", gone.display()),
        0o644,
    );
    let o = run_warden(As::Me, &dir, &["check", Fixture::s(&policy)]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains(&format!(
            "{}:1:10: path-map {} /m ro: {} does not exist",
            policy.display(),
            gone.display(),
            gone.display()
        )),
        "{}",
        stdout(&o)
    );
    let o = run_warden(
        As::Me,
        &dir,
        &["run", "--policy", Fixture::s(&policy), "--", "/bin/true"],
    );
    assert_eq!(o.status.code(), Some(125));
    assert!(
        common::stderr(&o).contains("does not exist"),
        "{}",
        common::stderr(&o)
    );
    // A mount point warden would have to make in the host's tree.
    common::write_file(
        &policy,
        format!(
            "path-allow read {d}/*\npath-map /usr {d}/not-there\n",
            d = dir.display()
        ),
        0o644,
    );
    let o = run_warden(As::Me, &dir, &["check", Fixture::s(&policy)]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("warden makes nothing in the host's tree"),
        "{}",
        stdout(&o)
    );
}

/// The program inside a filtered tree (`T`, read whole, `T/secret` and `T/sub/key_*` denied):
/// connects to `SOCK`, receives a descriptor of the host's `T` there (after the host made new
/// denied names in `T`), then tries every way at the denied names: by path in the view, beneath
/// the host's descriptor, by `..` and `/proc/self/fd` from it, and by changing the overlay.
const FILTERED_PROBE: &str = r#"
import os, socket, stat, sys
T, SOCK = sys.argv[1], sys.argv[2]
def read(tag, path, dirfd=None):
    try:
        fd = os.open(path, os.O_RDONLY, dir_fd=dirfd)
        print(tag, "READ", os.read(fd, 4096)); os.close(fd)
    except OSError as e:
        print(tag, "ERR", e.errno)
def change(tag, f):
    try:
        f(); print(tag, "DONE")
    except OSError as e:
        print(tag, "ERR", e.errno)
s = socket.socket(socket.AF_UNIX); s.connect(SOCK)
msg, fds, _, _ = socket.recv_fds(s, 16, 1)
host = fds[0]
# A directory, and not the view's T (another device: the host's, not the overlay's).
print("got", msg, stat.S_ISDIR(os.fstat(host).st_mode), os.fstat(host).st_dev != os.stat(T).st_dev)
read("plain_view", T + "/plain.txt")
read("secret_view", T + "/secret")
read("keyold_view", T + "/sub/key_old")
read("keynew_view", T + "/sub/key_new")
read("keydir_view", T + "/sub/key_dir/x")
print("ls_sub", sorted(os.listdir(T + "/sub")))
read("plain_host", "plain.txt", host)
read("secret_host", "secret", host)
read("keynew_host", "sub/key_new", host)
read("dotdot_host", "../" + os.path.basename(T) + "/secret", host)
read("procfd_host", "/proc/self/fd/%d/secret" % host)
change("unlink_mask", lambda: os.unlink(T + "/secret"))
change("create", lambda: open(T + "/sub/new", "w"))
change("setxattr", lambda: os.setxattr(T + "/sub", "user.overlay.opaque", b"n"))
change("removexattr", lambda: os.removexattr(T + "/sub", "user.overlay.opaque"))
change("rename", lambda: os.rename(T + "/plain.txt", T + "/p2"))
print("end")
"#;

/// Outside: on the first connection, makes new denied names in the host's `T` (a key file and
/// a key directory under `T/sub`, `T/secret` replaced by a rename, as `passwd` replaces
/// /etc/shadow), then sends a descriptor of `T`.
const FILTERED_SERVER: &str = r#"
import os, socket, sys
T, SOCK, SECRET = sys.argv[1], sys.argv[2], sys.argv[3]
l = socket.socket(socket.AF_UNIX); l.bind(SOCK); os.chmod(SOCK, 0o777); l.listen(1)
print("listening", flush=True)
c, _ = l.accept()
open(T + "/sub/key_new", "w").write(SECRET + "-new\n")
os.mkdir(T + "/sub/key_dir"); open(T + "/sub/key_dir/x", "w").write(SECRET + "-dir\n")
open(T + "/.replacement", "w").write(SECRET + "-replaced\n"); os.rename(T + "/.replacement", T + "/secret")
for p in ("/sub/key_new", "/sub/key_dir/x", "/secret"): os.chmod(T + p, 0o644)
os.chmod(T + "/sub/key_dir", 0o755)
fd = os.open(T, os.O_RDONLY | os.O_DIRECTORY)
socket.send_fds(c, [b"T"], [fd])
c.close()
"#;

/// [`FILTERED_SERVER`] for `tree` at `sock`, listening when this returns.
fn filtered_server(tree: &str, sock: &Path, secret: &str) -> std::process::Child {
    let mut server = std::process::Command::new("/usr/bin/python3")
        .args(["-c", FILTERED_SERVER, tree, sock.to_str().unwrap(), secret])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "listening");
    server
}

fn filtered_tree(who: As, extra: &[&str]) {
    let base = common::fresh_dir(&format!("view-filtered-{}", common::who_tag(who)));
    let tree = base.join("tree");
    let sub = tree.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    common::chmod(&tree, 0o755);
    common::chmod(&sub, 0o755);
    let secret = format!("filtered-secret-{}", std::process::id());
    common::write_file(&tree.join("plain.txt"), "PLAIN\n", 0o644);
    common::write_file(&tree.join("secret"), format!("{secret}\n"), 0o644);
    common::write_file(&sub.join("key_old"), format!("{secret}-old\n"), 0o644);
    common::write_file(&sub.join("ok.txt"), "OK\n", 0o644);
    let sockdir = base.join("sock");
    std::fs::create_dir(&sockdir).unwrap();
    common::chmod(&sockdir, 0o777);
    let sock = sockdir.join("s");
    let t = tree.to_str().unwrap();
    let policy = base.join("filtered.policy");
    common::write_file(
        &policy,
        format!(
            "path-deny {t}/secret {t}/sub/key_*\nnet-allow outgoing unix-domain {}\n",
            sock.display()
        ),
        0o644,
    );
    let mut server = filtered_server(t, &sock, &secret);
    let mut args = vec!["run", "--read", t, "--policy", policy.to_str().unwrap()];
    args.extend_from_slice(extra);
    let sock_s = sock.to_str().unwrap();
    args.extend(["--", "/usr/bin/python3", "-c", FILTERED_PROBE, t, sock_s]);
    let o = run_warden(who, common::workdir(), &args);
    let _ = server.kill();
    let _ = server.wait();
    let (out, err) = (stdout(&o), common::stderr(&o));
    let label = format!("{who:?} {extra:?}");
    assert!(
        out.contains("end"),
        "{label}: the probe did not finish:\n{out}\n{err}"
    );
    // Without user xattrs on tmpfs (before Linux 6.6) there is no filtered tree: the view binds
    // the host's tree and masks the names denied at the start, and Landlock and the agent
    // refuse the rest (docs/design.md, "Filtered trees"). Every denied name stays
    // unreadable by every route; what is weaker is that the names are listed, and a name made
    // later is refused (EACCES) rather than absent.
    let filters = common::tmpfs_user_xattrs();
    if !filters {
        common::skip(
            "a_filtered_tree_hides_what_the_host_makes_later_and_host_descriptors_reach_nothing_in_it (names hidden)",
            common::Lack::TmpfsXattr,
            "tmpfs without user xattrs (before Linux 6.6): denied names are masked, not hidden",
        );
    }
    assert!(
        out.contains(if filters {
            "got b'T' True True"
        } else {
            "got b'T' True "
        }),
        "{label}: no descriptor of the host's tree:\n{out}\n{err}"
    );
    assert!(
        !out.contains(&secret),
        "{label}: a denied name was read:\n{out}\n{err}"
    );
    let answer = |tag: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{tag} ")))
            .unwrap_or_else(|| panic!("{label}: no {tag}:\n{out}\n{err}"))
            .to_owned()
    };
    assert_eq!(
        answer("plain_view"),
        "READ b'PLAIN\\n'",
        "{label}\n{out}\n{err}"
    );
    // What the host made after the start does not show; what was denied then is masked.
    let later = if filters { "ERR 2" } else { "ERR 13" };
    assert_eq!(answer("keynew_view"), later, "{label}\n{out}");
    assert_eq!(answer("keydir_view"), later, "{label}\n{out}");
    assert_eq!(answer("secret_view"), "ERR 13", "{label}\n{out}");
    assert_eq!(answer("keyold_view"), "ERR 13", "{label}\n{out}");
    assert_eq!(
        answer("ls_sub"),
        if filters {
            "['key_old', 'ok.txt']"
        } else {
            "['key_dir', 'key_new', 'key_old', 'ok.txt']"
        },
        "{label}\n{out}"
    );
    // Beneath the host's descriptor nothing denied opens: with a filtered tree nothing at all
    // (no rule names the host's objects of it, and the agent finds no such path in the view);
    // without, the host's tree is the view's, under the same rules.
    if !filters {
        assert_eq!(answer("plain_host"), "READ b'PLAIN\\n'", "{label}\n{out}");
    }
    let host_routes: &[&str] = if filters {
        &[
            "plain_host",
            "secret_host",
            "keynew_host",
            "dotdot_host",
            "procfd_host",
        ]
    } else {
        &["secret_host", "keynew_host", "dotdot_host", "procfd_host"]
    };
    for &tag in host_routes {
        let a = answer(tag);
        assert!(
            a == "ERR 13" || a == "ERR 2",
            "{label}: {tag} {a}\n{out}\n{err}"
        );
    }
    for tag in ["unlink_mask", "create", "setxattr", "removexattr", "rename"] {
        assert!(
            answer(tag).starts_with("ERR "),
            "{label}: {tag} changed the view\n{out}"
        );
    }
    // Checked from outside: the host's tree holds what the server made, and nothing else moved.
    assert!(tree.join("plain.txt").exists() && !tree.join("p2").exists());
    assert!(!sub.join("new").exists());
    assert_eq!(
        std::fs::read_to_string(tree.join("secret")).unwrap(),
        format!("{secret}-replaced\n")
    );
}

/// Control: natively, every route the probe tries reaches the denied names.
#[test]
fn filtered_tree_control() {
    let base = common::fresh_dir("view-filtered-control");
    let tree = base.join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    common::write_file(&tree.join("plain.txt"), "PLAIN\n", 0o644);
    common::write_file(&tree.join("secret"), "S\n", 0o644);
    common::write_file(&tree.join("sub/key_old"), "K\n", 0o644);
    let sock = base.join("s");
    let t = tree.to_str().unwrap();
    let mut server = filtered_server(t, &sock, "NATIVE");
    let o = std::process::Command::new("/usr/bin/python3")
        .args(["-c", FILTERED_PROBE, t, sock.to_str().unwrap()])
        .output()
        .unwrap();
    let _ = server.wait();
    let out = stdout(&o);
    for tag in [
        "keynew_view",
        "keydir_view",
        "secret_host",
        "keynew_host",
        "dotdot_host",
        "procfd_host",
    ] {
        assert!(
            out.contains(&format!("{tag} READ b'NATIVE")),
            "natively {tag} should succeed:\n{out}\n{}",
            common::stderr(&o)
        );
    }
}

#[test]
fn a_filtered_tree_hides_what_the_host_makes_later_and_host_descriptors_reach_nothing_in_it() {
    let test =
        "a_filtered_tree_hides_what_the_host_makes_later_and_host_descriptors_reach_nothing_in_it";
    each_user(test, |who| {
        // The kernel deciding opens (the default), then the agent deciding every call.
        filtered_tree(who, &[]);
        filtered_tree(who, &["--fast-path=never"]);
    });
}

// ---- the agent honours the view: a map's mount point cannot be moved, replaced or removed ----

/// Every route by which a program could move, replace or remove a read-only map's mount point
/// (or reach the host's file it covers) through calls the agent performs: the agent acts on
/// the view's mounts from warden's own mount namespace, where the kernel does not see them as
/// mount points, so each of these reached the host before the agent checked (issue 35).
/// Printed: one line per attempt, `ROUTE ok` or `ROUTE errno`.
const MAP_ATTACKS: &str = r#"
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, EXCHANGE, NOREPLACE = -100, 2, 1
def attempt(route, f):
    try:
        r = f()
        if isinstance(r, int) and r < 0:
            print(route, os.strerror(ctypes.get_errno()), flush=True)
        else:
            print(route, "ok", flush=True)
    except OSError as e:
        print(route, e.strerror, flush=True)
def new(name, text="attacker\n"):
    with open(name, "w") as f:
        f.write(text)
new("f.lock")
attempt("rename-over-file", lambda: os.rename("f.lock", "a"))
attempt("replace-over-file", lambda: os.replace("f.lock", "a"))
attempt("rename-file-away", lambda: os.rename("a", "a.away"))
attempt("unlink-file", lambda: os.unlink("a"))
attempt("exchange-file", lambda: libc.renameat2(AT_FDCWD, b"f.lock", AT_FDCWD, b"a", EXCHANGE))
attempt("exchange-file-rev", lambda: libc.renameat2(AT_FDCWD, b"a", AT_FDCWD, b"f.lock", EXCHANGE))
os.mkdir("newdir")
attempt("rename-dir-away", lambda: os.rename("sub", "sub.away"))
attempt("rename-dir-over", lambda: os.rename("newdir", "sub"))
attempt("exchange-dir", lambda: libc.renameat2(AT_FDCWD, b"newdir", AT_FDCWD, b"sub", EXCHANGE))
attempt("rmdir-dir", lambda: os.rmdir("sub"))
attempt("unlink-in-dir", lambda: os.unlink("sub/b"))
attempt("rename-in-dir", lambda: os.rename("sub/b", "sub/b2"))
attempt("rename-out-of-dir", lambda: os.rename("sub/b", "b.out"))
os.symlink(".", "dot")
attempt("rename-over-via-symlink", lambda: os.rename("f.lock", "dot/a"))
attempt("unlink-via-proc-cwd", lambda: os.unlink("/proc/self/cwd/a"))
here = os.open(".", os.O_PATH | os.O_DIRECTORY)
attempt("renameat-via-dirfd", lambda: libc.renameat(here, b"f.lock", here, b"a"))
attempt("unlinkat-via-dirfd", lambda: libc.unlinkat(here, b"a", 0))
attempt("link-over-file", lambda: os.link("f.lock", "a"))
attempt("write-file", lambda: new("a"))
attempt("chmod-file", lambda: os.chmod("a", 0o777))
attempt("truncate-file", lambda: os.truncate("a", 0))
# A race: threads rename fresh files over the map while others try to move it away.
hits = []
def racer(i):
    for n in range(200):
        name = "race-%d-%d" % (i, n)
        new(name)
        for f in (lambda: os.rename(name, "a"), lambda: os.rename("a", name + ".x"),
                  lambda: os.rename("sub", name + ".d")):
            try:
                f(); hits.append(name)
            except OSError:
                pass
threads = [threading.Thread(target=racer, args=(i,)) for i in range(4)]
[t.start() for t in threads]; [t.join() for t in threads]
print("race", "ok" if hits else "refused", flush=True)
print("end", flush=True)
"#;

fn map_mount_points(who: As) {
    let tree = map_tree("mountpoint", who);
    let host = Fixture::s(&tree).to_owned();
    let dir = tree.parent().unwrap();
    let policy = dir.join("maps.policy");
    common::write_file(
        &policy,
        format!("path-map {host}/a {host}/a ro\npath-map {host}/sub {host}/sub ro\n"),
        0o644,
    );
    // What the maps show, and the inode of each, from outside.
    let mapped = |t: &Path| {
        use std::os::unix::fs::MetadataExt;
        let mut s: Vec<String> = snapshot(t)
            .into_iter()
            .filter(|l| {
                l.starts_with(&format!("{host}/a ")) || l.starts_with(&format!("{host}/sub"))
            })
            .collect();
        for p in ["a", "sub", "sub/b"] {
            let m = std::fs::symlink_metadata(t.join(p)).unwrap();
            s.push(format!("{p} inode {} dev {}", m.ino(), m.dev()));
        }
        s
    };
    let before = mapped(&tree);
    for view in ["auto", "off"] {
        for agent in [false, true] {
            // What the last run made beside the maps goes (from outside, as root).
            for e in std::fs::read_dir(&tree).unwrap() {
                let e = e.unwrap();
                if !["a", "c", "keep", "sub"].contains(&e.file_name().to_str().unwrap()) {
                    let p = e.path();
                    if p.is_dir() && !p.is_symlink() {
                        std::fs::remove_dir_all(&p).unwrap();
                    } else {
                        std::fs::remove_file(&p).unwrap();
                    }
                }
            }
            let mut cmd = common::warden_cmd(who);
            cmd.current_dir(&tree);
            if agent {
                cmd.env("WARDEN_FAST_PATH", "never");
            }
            cmd.args([
                "run",
                "--view",
                view,
                "--here",
                "--policy",
                Fixture::s(&policy),
                "--",
                "/usr/bin/python3",
                "-c",
                MAP_ATTACKS,
            ]);
            let (o, _) = common::finish(cmd, common::RUN_DEADLINE);
            let (out, err) = (stdout(&o), common::stderr(&o));
            let what = format!("view {view}, all to the agent {agent}:\n{out}\n{err}");
            assert!(out.contains("\nend\n") || out.starts_with("end"), "{what}");
            for line in out.lines().filter(|l| *l != "end") {
                assert!(
                    !line.ends_with(" ok"),
                    "an attack succeeded: {line}\n{what}"
                );
            }
            // Each route got the kernel's own answer in the sandbox's namespace.
            for route in [
                "rename-over-file",
                "unlink-file",
                "rename-dir-away",
                "rmdir-dir",
            ] {
                assert!(
                    out.contains(&format!("{route} Device or resource busy")),
                    "{route}: {what}"
                );
            }
            assert_eq!(
                mapped(&tree),
                before,
                "the host's mapped files changed: {what}"
            );
            assert_eq!(
                std::fs::read_to_string(tree.join("a")).unwrap(),
                "alpha\n",
                "{what}"
            );
        }
    }
}

#[test]
fn a_read_only_map_cannot_be_moved_replaced_or_removed_through_the_agent() {
    each_user(
        "a_read_only_map_cannot_be_moved_replaced_or_removed_through_the_agent",
        map_mount_points,
    );
}

// ---- --wx: no code but what is mapped from an executable file ----

/// The routes `tests/wx_attack.py` tries that reach executable memory without a file (the
/// others map a file, which the view's `noexec` refuses).
const MEMORY_ROUTES: [&str; 7] = [
    "anon-rwx",
    "anon-mprotect",
    "pkey-mprotect",
    "shared-alias",
    "memfd",
    "memfd-two-maps",
    "shm-exec",
];

fn wx_routes(who: As) {
    let fx = Fixture::new("wx", who);
    // PR_GET_MDWE: EINVAL where the kernel has no memory-deny-write-execute (before 6.3). There
    // --wx must refuse to start, in a sentence, and the routes cannot be tried.
    let mdwe = std::process::Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import ctypes,sys; sys.exit(0 if ctypes.CDLL(None).prctl(66,0,0,0,0) >= 0 else 1)",
        ])
        .status()
        .unwrap()
        .success();
    if !mdwe {
        let args = ["run", "--wx", "--", "/bin/true"];
        let o = run_warden(who, common::workdir(), &args);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(125), "{err}");
        assert!(err.contains("PR_SET_MDWE"), "{err}");
        common::skip(
            "wx_leaves_no_route_to_code_that_is_not_an_executable_file (its routes)",
            common::Lack::Mdwe,
            "this kernel has no PR_SET_MDWE (Linux 6.3): --wx refuses to start, as checked",
        );
        return;
    }
    let script = fx.dir.join("wx_attack.py");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wx_attack.py"),
        &script,
    )
    .unwrap();
    common::chmod(&script, 0o644);
    let readable = fx.dir.join("readable-code");
    let made = std::process::Command::new("/usr/bin/python3")
        .arg(&script)
        .arg("--make")
        .arg(&readable)
        .status()
        .unwrap();
    assert!(made.success());
    common::chmod(&readable, 0o644);
    let dir = Fixture::s(&fx.dir);
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--read", dir];
        args.extend_from_slice(extra);
        args.extend_from_slice(&[
            "--",
            "/usr/bin/python3",
            Fixture::s(&script),
            Fixture::s(&readable),
        ]);
        let o = run_warden(who, common::workdir(), &args);
        let (out, err) = (stdout(&o), common::stderr(&o));
        assert!(out.contains("\nend\n"), "{extra:?}: {out}\n{err}");
        (out, err)
    };
    let ran = |out: &str, route: &str| out.contains(&format!("EXECUTED {route}\n"));
    // Without --wx, the routes are real: anonymous memory runs the code (JITs need it). In a
    // view, code in a file without an exec right does not run, whoever maps it.
    let (out, err) = run(&[]);
    assert!(ran(&out, "anon-rwx") && ran(&out, "memfd"), "{out}\n{err}");
    if common::view_on() {
        for route in ["readable-file", "cwd-file", "dev-shm-file"] {
            assert!(!ran(&out, route), "{route}: {out}\n{err}");
        }
    }
    // With --wx, in a view: nothing runs but what the policy's exec rules name.
    let (out, err) = run(&["--wx", "--view", "auto"]);
    if common::view_on() {
        assert!(!out.contains("EXECUTED"), "{out}\n{err}");
    }
    for route in MEMORY_ROUTES {
        assert!(!ran(&out, route), "{route}: {out}\n{err}");
        assert!(
            out.contains(&format!("refused {route} ")),
            "{route}: {out}\n{err}"
        );
    }
    // On the host's tree the memory routes are closed as well (a readable file's mapping is
    // the known limit of a run without a view: no mount says noexec).
    let (out, err) = run(&["--wx", "--view", "off"]);
    for route in MEMORY_ROUTES {
        assert!(!ran(&out, route), "{route}: {out}\n{err}");
    }
    // Ordinary programs run as before under --wx.
    let o = run_warden(
        who,
        common::workdir(),
        &[
            "run",
            "--wx",
            "--",
            "/bin/sh",
            "-c",
            "echo hi | cat; python3 -c 'import json; print(json.dumps([1]))'",
        ],
    );
    assert_eq!(stdout(&o), "hi\n[1]\n", "{}", common::stderr(&o));
}

#[test]
fn wx_leaves_no_route_to_code_that_is_not_an_executable_file() {
    each_user(
        "wx_leaves_no_route_to_code_that_is_not_an_executable_file",
        wx_routes,
    );
}

/// warden under a seccomp filter of another's (`tests/c/supervise.c`) that refuses `open_tree`
/// and `mount_setattr` with ENOSYS, as a kernel or a container profile without them would, with
/// `args` after `run`.
fn under_no_mount_api(who: As, args: &[&str]) -> std::process::Output {
    let supervise = common::c_program("supervise");
    let cmd = common::warden_cmd(who);
    let mut wrapped = std::process::Command::new(&supervise);
    wrapped
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .arg("run")
        .args(args)
        .current_dir(common::workdir())
        .stdin(std::process::Stdio::null())
        .env("SUPERVISE_NO_LISTENER", "1")
        .env("SUPERVISE_DENY", "open_tree,mount_setattr");
    common::finish(wrapped, common::RUN_DEADLINE).0
}

/// A view the kernel refuses to build (its mount steps fail inside the sandbox): with the
/// default `--view auto` the run goes on the host's tree, said in one line and in the report,
/// and the policy holds there all the same (checked from outside: the denied file's text never
/// comes out, the write outside what the policy allows makes nothing); `--view on` and
/// `--require view` refuse with 125, and the program never runs.
fn view_refused(who: As) {
    let fx = Fixture::new("refused", who);
    let tmp = own_tmpdir("view-refused", who);
    let report = tmp.join("report");
    let secret = Fixture::s(&fx.secret);
    let dir = Fixture::s(&fx.dir);
    let policy = fx.dir.join("deny.policy");
    common::write_file(&policy, format!("path-deny {secret}\n"), 0o644);
    let made = fx.dir.join("sub/made");
    let script = format!(
        "cat {secret}; cat {dir}/sub/../secret; cat /proc/self/root{secret}; \
         echo x > {made}; cat {dir}/echo-copy >/dev/null && echo READ-ALLOWED; echo ran",
        made = Fixture::s(&made)
    );
    let o = under_no_mount_api(
        who,
        &[
            "--report",
            Fixture::s(&report),
            "--policy",
            Fixture::s(&policy),
            "--read",
            dir,
            "--",
            "/bin/sh",
            "-c",
            &script,
        ],
    );
    let (out, err) = (stdout(&o), common::stderr(&o));
    common::assert_ok(&o);
    assert!(
        out.contains("READ-ALLOWED") && out.contains("ran"),
        "{out}\n{err}"
    );
    assert!(
        !out.contains(&fx.secret_text),
        "the denied file was read on the host's tree:\n{out}\n{err}"
    );
    assert!(
        !made.exists(),
        "a write the policy does not allow went through"
    );
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("warden: the sandbox's own view could not be built"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("Function not implemented") && lines[0].contains("host's tree"),
        "{err}"
    );
    assert_eq!(
        common::report_field(&report, "view").as_deref(),
        Some("host-tree")
    );
    assert!(common::report_field(&report, "view-reason").is_some());
    // Asked for, a view that cannot be built is no run.
    for asked in [&["--view", "on"][..], &["--require", "view"][..]] {
        let mut args = asked.to_vec();
        args.extend(["--", "/bin/sh", "-c", "echo ran"]);
        let o = under_no_mount_api(who, &args);
        assert_eq!(
            o.status.code(),
            Some(125),
            "{asked:?}: {}",
            common::stderr(&o)
        );
        assert!(!stdout(&o).contains("ran"), "{asked:?}");
        assert!(
            common::stderr(&o).contains("building the sandbox's view failed"),
            "{asked:?}: {}",
            common::stderr(&o)
        );
    }
}

#[test]
fn a_view_the_kernel_refuses_gives_a_run_on_the_hosts_tree_said_in_one_line() {
    each_user(
        "a_view_the_kernel_refuses_gives_a_run_on_the_hosts_tree_said_in_one_line",
        view_refused,
    );
}

/// `/tmp` in the default view (issue 39): the sandbox's own, empty and writable (mode 1777),
/// none of the host's `/tmp` in it and nothing of it on the host; another sandbox running at
/// the same time has its own; and it is on the run's disk, so `--disk` bounds it together with
/// the scratch directory. warden runs from `/`, outside the host's `/tmp`.
fn private_tmp(who: As) {
    let name = format!(
        "warden-private-tmp-{}-{}",
        std::process::id(),
        common::who_tag(who)
    );
    let host = Path::new("/tmp").join(format!("{name}-host"));
    let secret = format!("host-tmp-secret-{name}");
    common::write_file(&host, format!("{secret}\n"), 0o644);
    let made = Path::new("/tmp").join(format!("{name}-made"));
    let script = format!(
        "echo entries $(ls -A /tmp | grep -vc '^warden-scratch-'); stat -c 'mode %a' /tmp; \
         for p in /tmp/{name}-host /proc/self/root/tmp/{name}-host /tmp/../tmp/{name}-host; do \
         cat $p; done; echo mine > /tmp/{name}-made && cat /tmp/{name}-made; \
         mkdir -p /tmp/d/e && echo deep > /tmp/d/e/f && mv /tmp/d/e/f /tmp/g && cat /tmp/g && \
         rm -r /tmp/d /tmp/g && echo done"
    );
    let o = run_warden(
        who,
        Path::new("/"),
        &["run", "--", "/bin/sh", "-c", &script],
    );
    let (out, err) = (stdout(&o), common::stderr(&o));
    assert!(out.starts_with("entries 0\nmode 1777\n"), "{out}\n{err}");
    assert!(
        out.contains("mine\n") && out.contains("deep\n") && out.ends_with("done\n"),
        "{out}\n{err}"
    );
    assert!(!out.contains(&secret), "the host's /tmp leaked: {out}");
    // From outside: the host's file is as it was, and nothing the sandbox made is there.
    assert_eq!(
        std::fs::read_to_string(&host).unwrap(),
        format!("{secret}\n")
    );
    assert!(!made.exists(), "{} reached the host", made.display());

    // Two sandboxes at once: each /tmp is its own. The first writes, says so, and waits (at
    // most a minute) for the second to have looked.
    let first = format!(
        "echo first-{name} > /tmp/{name}-a && echo ready && read -r _ ; cat /tmp/{name}-a; \
         cat /tmp/{name}-b; echo first-done"
    );
    let mut a = common::warden_cmd(who);
    a.current_dir("/")
        .args(["run", "--", "/bin/bash", "-c", &first])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut a = a.spawn().unwrap();
    let mut a_out = std::io::BufReader::new(a.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut a_out, &mut line).unwrap();
    assert_eq!(line, "ready\n", "the first sandbox did not start");
    let second = format!(
        "ls -A /tmp | grep -v '^warden-scratch-'; cat /tmp/{name}-a; echo second-{name} > \
         /tmp/{name}-b && echo second-done"
    );
    let b = run_warden(
        who,
        Path::new("/"),
        &["run", "--", "/bin/sh", "-c", &second],
    );
    let mut a_in = a.stdin.take().unwrap();
    std::io::Write::write_all(&mut a_in, b"go\n").unwrap();
    drop(a_in);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut a_out, &mut rest).unwrap();
    let (status, killed) = common::wait_deadline(&mut a, common::RUN_DEADLINE);
    assert!(!killed && status.success(), "the first sandbox: {status:?}");
    let (b_out, b_err) = (stdout(&b), common::stderr(&b));
    assert_eq!(
        b_out, "second-done\n",
        "the second sandbox saw: {b_out}\n{b_err}"
    );
    assert!(
        b_err.contains(&format!("/tmp/{name}-a: No such file")),
        "{b_err}"
    );
    assert!(
        rest.starts_with(&format!("first-{name}\n")) && rest.ends_with("first-done\n"),
        "{rest}"
    );
    assert!(
        !rest.contains("second-"),
        "the first saw the second's /tmp: {rest}"
    );
    for n in ["a", "b"] {
        assert!(!Path::new("/tmp").join(format!("{name}-{n}")).exists());
    }

    // The run's disk holds /tmp and the scratch directory together: 700 KB fit in /tmp alone
    // under --disk 1M, and not once the scratch directory holds 700 KB too.
    let fill = "head -c 700000 /dev/zero > /tmp/a && echo tmp-alone-ok && rm /tmp/a && \
                head -c 700000 /dev/zero > s && echo scratch-ok && \
                head -c 700000 /dev/zero > /tmp/b; echo status $?";
    let o = run_warden(
        who,
        Path::new("/"),
        &["run", "--disk", "1M", "--", "/bin/sh", "-c", fill],
    );
    let (out, err) = (stdout(&o), common::stderr(&o));
    assert_eq!(out, "tmp-alone-ok\nscratch-ok\nstatus 1\n", "{err}");
    assert!(err.contains("No space left on device"), "{out}\n{err}");
    let _ = std::fs::remove_file(&host);
}

#[test]
fn tmp_is_the_sandboxs_own_on_its_disk_and_not_shared() {
    each_user(
        "tmp_is_the_sandboxs_own_on_its_disk_and_not_shared",
        private_tmp,
    );
}

/// Nothing written to the private `/tmp` runs, by any route (issue 39: it adds no exec path):
/// a copy of `echo` there, run directly, through the dynamic loader (which only the mount's
/// `noexec` stops), through a symlink or a hard link from the scratch directory, even when the
/// scratch directory's own files may run (`--exec '$SCRATCH/*'`, its own mount inside `/tmp`).
/// The control: the same copy, copied into the scratch directory, runs. With `--keep` the
/// scratch directory is the host's, and no hard link from `/tmp` lands there; checked from
/// outside.
fn tmp_never_runs(who: As) {
    let name = format!(
        "warden-tmp-exec-{}-{}",
        std::process::id(),
        common::who_tag(who)
    );
    let x = format!("/tmp/{name}");
    let script = format!(
        "cp /usr/bin/echo {x} && chmod 755 {x} && echo copied; {x} PAYLOAD_RAN_direct; \
         /lib64/ld-linux-x86-64.so.2 {x} PAYLOAD_RAN_ldso; ln -s {x} l && ./l PAYLOAD_RAN_symlink; \
         ln {x} h && ./h PAYLOAD_RAN_hardlink; (cd /tmp && ./{name} PAYLOAD_RAN_relative); \
         cp {x} c && ./c CONTROL_RAN; echo done"
    );
    for keep in [false, true] {
        let tmpdir = common::fresh_dir(&format!("tmp-exec-{}-{keep}", common::who_tag(who)));
        common::chmod(&tmpdir, 0o1777);
        let mut args = vec!["run", "--exec", "$SCRATCH/*"];
        if keep {
            args.push("--keep");
        }
        args.extend(["--", "/bin/sh", "-c", &script]);
        let mut cmd = common::warden_cmd(who);
        cmd.current_dir("/").env("TMPDIR", &tmpdir).args(&args);
        let o = common::finish(cmd, common::RUN_DEADLINE).0;
        let (out, err) = (stdout(&o), common::stderr(&o));
        let all = format!("keep {keep}:\n{out}\n{err}");
        assert!(out.starts_with("copied\n"), "{all}");
        assert!(
            out.contains("CONTROL_RAN\n") && out.ends_with("done\n"),
            "control: {all}"
        );
        assert!(
            !out.contains("PAYLOAD_RAN"),
            "ESCAPE: a copy in /tmp ran: {all}"
        );
        assert!(err.contains("failed to map segment"), "ld.so: {all}");
        // From outside: nothing reached the host's /tmp, and the kept scratch directory holds
        // the control's copy and no hard link to the one in /tmp.
        assert!(!Path::new(&x).exists(), "{x} reached the host");
        if keep {
            let found = std::process::Command::new("find")
                .arg(&tmpdir)
                .args(["-name", "c", "-o", "-name", "h"])
                .output()
                .unwrap();
            let found = stdout(&found);
            assert!(found.contains("/c\n"), "the kept copy: {found}\n{all}");
            assert!(
                !found.contains("/h\n"),
                "a hard link out of /tmp: {found}\n{all}"
            );
        }
        let _ = std::process::Command::new("rm")
            .arg("-rf")
            .arg(&tmpdir)
            .status();
    }
}

#[test]
fn nothing_in_tmp_runs_by_any_route() {
    each_user("nothing_in_tmp_runs_by_any_route", tmp_never_runs);
}

/// The rule shapes a policy of the user's brings, which the view and Landlock now hold
/// together so that the kernel decides the opens (issue 40): an exec tree nested in a writable
/// tree (a mount point of the view's own, which cannot be moved), a tree's directory listed
/// under `D/*`, and `/dev/*` over the view's own `/dev`. The program renames, removes,
/// hard-links, copies and re-creates its way around the exec rule, in the kernel's mode and in
/// the agent's, and gets the same, and nothing the policy does not grant; checked from outside
/// too (the host's tree is as it was, and the kernel's run delegated no open).
fn nested_trees(who: As) {
    let w = common::fresh_dir(&format!("view-nested-{}", common::who_tag(who)));
    common::chmod(&w, 0o777);
    let bin = w.join("bin");
    std::fs::create_dir(&bin).unwrap();
    common::chmod(&bin, 0o777);
    std::fs::copy("/usr/bin/true", bin.join("prog")).unwrap();
    common::chmod(&bin.join("prog"), 0o755);
    std::fs::create_dir(w.join("data")).unwrap();
    common::chmod(&w.join("data"), 0o777);
    common::write_file(&w.join("data/x"), "x\n", 0o644);
    common::write_file(&w.join("data/secret"), "nested-secret\n", 0o644);
    let d = Fixture::s(&w);
    let policy = w.join("nested.policy");
    common::write_file(
        &policy,
        format!(
            "path-allow read {d}/*\npath-allow write {d}/*\npath-allow unlink {d}/*\n\
             path-allow read {d}/bin/*\npath-allow exec {d}/bin/*\npath-allow read /dev/*\n\
             path-deny {d}/data/secret\n"
        ),
        0o644,
    );
    let policy = Fixture::s(&policy);
    // Who decides: the view and Landlock hold every rule, so the kernel does.
    let o = run_warden(who, common::workdir(), &["check", "--explain", policy]);
    assert!(
        stdout(&o)
            .contains("opens in the sandbox's own view (the default): straight to the kernel"),
        "{}{}",
        stdout(&o),
        common::stderr(&o)
    );
    let script = format!(
        "cd {d} || exit 9; ./bin/prog && echo RAN-BIN; ls . | tr '\\n' ' '; echo LISTED; \
         mv bin moved && echo MOVED; \
         ln bin/prog linked && echo LINKED; cp bin/prog copy && ./copy && echo RAN-COPY; \
         mkdir -p bin2 && cp bin/prog bin2/prog && ./bin2/prog && echo RAN-BIN2; \
         ln -s bin alias && ./alias/prog && echo RAN-ALIAS; \
         /lib64/ld-linux-x86-64.so.2 ./copy && echo RAN-LDSO; \
         cat data/secret && echo READ-SECRET; ls data | tr '\\n' ' '; echo DATA-LISTED; \
         head -c1 /dev/urandom >/dev/null && echo READ-URANDOM; \
         echo x >/dev/urandom && echo WROTE-URANDOM; ls /dev | tr '\\n' ' '; echo DEV-LISTED; \
         mv bin/prog data/prog2; ./data/prog2 && echo RAN-MOVED-PROG; echo done"
    );
    let report = own_tmpdir("nested", who).join("report");
    let run = |fast: &str| {
        let _ = std::fs::remove_dir_all(w.join("bin2"));
        for f in ["copy", "alias", "linked", "moved", "data/prog2"] {
            let _ = std::fs::remove_file(w.join(f));
        }
        // The policy lets the program move its program out of bin/ (a copy and an unlink
        // across the mount): the last step of each run does, and runs it nowhere.
        std::fs::copy("/usr/bin/true", bin.join("prog")).unwrap();
        common::chmod(&bin.join("prog"), 0o755);
        let o = run_warden(
            who,
            common::workdir(),
            &[
                "run",
                "--view",
                "on",
                "--fast-path",
                fast,
                "--report",
                Fixture::s(&report),
                "-p",
                policy,
                "--",
                "/bin/sh",
                "-c",
                &script,
            ],
        );
        let opens = common::report_field(&report, "delegated-open").unwrap_or_else(|| "0".into());
        assert!(report.exists(), "no report");
        (stdout(&o), common::stderr(&o), opens)
    };
    let mut seen = Vec::new();
    for fast in ["auto", "never"] {
        let (out, err, opens) = run(fast);
        let all = format!("--fast-path={fast}:\n{out}\n{err}");
        assert!(out.contains("done"), "{all}");
        for granted in [
            "RAN-BIN",
            "LISTED",
            "RAN-ALIAS",
            "DATA-LISTED",
            "READ-URANDOM",
        ] {
            assert!(out.contains(granted), "{granted} missing: {all}");
        }
        assert!(out.contains("bin data"), "{all}");
        assert!(out.contains("null") && out.contains("urandom"), "{all}");
        for escape in [
            "MOVED",
            "LINKED",
            "RAN-COPY",
            "RAN-BIN2",
            "RAN-LDSO",
            "READ-SECRET",
            "nested-secret",
            "WROTE-URANDOM",
            "RAN-MOVED-PROG",
        ] {
            assert!(!out.contains(escape), "ESCAPE: {escape}: {all}");
        }
        // From outside: the exec tree is where the rule names it, with its program.
        assert!(bin.is_dir() && !w.join("moved").exists(), "{all}");
        assert!(!w.join("linked").exists(), "{all}");
        // What the policy lets it write, it wrote (so the refusals to run it above count).
        assert!(
            w.join("copy").is_file() && w.join("bin2/prog").is_file(),
            "{all}"
        );
        if fast == "auto" && common::landlock_abi() >= 5 {
            assert_eq!(opens, "0", "the kernel's run delegated opens: {all}");
        }
        if fast == "never" {
            assert_ne!(
                opens, "0",
                "control: the agent's run delegated no open: {all}"
            );
        }
        seen.push(out);
    }
    assert_eq!(seen[0], seen[1], "the kernel and the agent differ");
}

#[test]
fn nested_trees_listed_directories_and_dev_are_the_kernels_and_hold_against_moves_and_links() {
    each_user(
        "nested_trees_listed_directories_and_dev_are_the_kernels_and_hold_against_moves_and_links",
        nested_trees,
    );
}

/// A directory of the host's handed to the program over a unix socket its policy lets it reach
/// (`SCM_RIGHTS` from a process outside) lies outside the view, where no mask covers what a
/// `path-deny` names: the kernel's rules must still refuse the denied file beneath it, as for
/// a directory the program inherits. Checked as root and as 65534, in the kernel's mode and the
/// agent's; the handed descriptor is shown to work (an allowed file is read through it).
fn handed_directory(who: As) {
    let d = common::fresh_dir(&format!("view-handed-{}", common::who_tag(who)));
    common::chmod(&d, 0o755);
    let tree = d.join("tree");
    std::fs::create_dir(&tree).unwrap();
    common::chmod(&tree, 0o755);
    common::write_file(&tree.join("ok"), "handed-ok\n", 0o644);
    common::write_file(&tree.join("secret"), "handed-secret\n", 0o644);
    let t = Fixture::s(&tree);
    for fast in ["auto", "never"] {
        let sock = d.join(format!("hand-{fast}.sock"));
        let s = Fixture::s(&sock);
        // The host's side: one connection, one descriptor of the tree, then gone.
        let server = format!(
            "import os, socket\n\
             l = socket.socket(socket.AF_UNIX); l.bind('{s}'); os.chmod('{s}', 0o777); l.listen(1)\n\
             c, _ = l.accept()\n\
             socket.send_fds(c, [b'd'], [os.open('{t}', os.O_RDONLY | os.O_DIRECTORY)])\n\
             c.recv(1)\n"
        );
        let mut host = std::process::Command::new("python3")
            .args(["-c", &server])
            .spawn()
            .expect("python3");
        // Python's start takes seconds in an emulated guest: wait for the socket as long as a
        // run may take there.
        let until = std::time::Instant::now() + common::hang_bound(common::RUN_DEADLINE);
        while !sock.exists() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let policy = d.join(format!("handed-{fast}.policy"));
        common::write_file(
            &policy,
            format!(
                "path-allow read {t}/*\npath-deny {t}/secret\n\
                 net-allow outgoing unix-domain {s}\n"
            ),
            0o644,
        );
        let client = format!(
            "import os, socket\n\
             c = socket.socket(socket.AF_UNIX); c.connect('{s}')\n\
             _, fds, _, _ = socket.recv_fds(c, 1, 1)\n\
             print('FDS', len(fds))\n\
             for name in ('ok', 'secret'):\n\
             \x20   try:\n\
             \x20       f = os.open(name, os.O_RDONLY, dir_fd=fds[0]); print(name, os.read(f, 64))\n\
             \x20   except OSError as e:\n\
             \x20       print(name, 'refused', e.errno)\n"
        );
        let o = run_warden(
            who,
            common::workdir(),
            &[
                "run",
                "--view",
                "on",
                "--fast-path",
                fast,
                "-p",
                Fixture::s(&policy),
                "--",
                "python3",
                "-c",
                &client,
            ],
        );
        let _ = host.kill();
        let _ = host.wait();
        let (out, err) = (stdout(&o), common::stderr(&o));
        let all = format!("--fast-path={fast}:\n{out}\n{err}");
        assert!(
            out.contains("FDS 1"),
            "control: no descriptor arrived: {all}"
        );
        assert!(
            out.contains("handed-ok"),
            "control: the handed directory: {all}"
        );
        assert!(
            !out.contains("handed-secret"),
            "ESCAPE: the denied file through a handed directory: {all}"
        );
        assert!(out.contains("secret refused"), "{all}");
    }
}

#[test]
fn a_host_directory_handed_over_a_unix_socket_reaches_no_denied_file() {
    each_user(
        "a_host_directory_handed_over_a_unix_socket_reaches_no_denied_file",
        handed_directory,
    );
}
