//! Everyday commands in every mode warden runs in (issue 36): a shell pipeline, `make`, `python3`
//! and `curl` to an allowed address work alike in the full design and in each degraded mode, and
//! the one-line notice of a degraded mode appears exactly when the run is degraded.
//!
//! Each mode is made on this host by the refusal that causes it on another: a seccomp filter
//! around warden (`tests/c/nouserns_wrap.c` refuses namespaces as Docker's default profile does;
//! `tests/c/supervise.c` refuses the calls `SUPERVISE_DENY` names, as some container profiles
//! do). The kernel is real in every case: only what warden is allowed to use differs.

mod common;

use common::{each_user, who_tag, As};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A mode: how warden is started to be in it, and the notice it prints then (none for a run
/// that is not degraded).
struct Mode {
    name: &'static str,
    /// Wrapper program (a `tests/c` name) and its arguments, put before `warden`.
    wrap: Option<(&'static str, &'static [&'static str])>,
    /// Environment for the wrapper.
    env: &'static [(&'static str, &'static str)],
    /// Options of `warden run`.
    flags: &'static [&'static str],
    /// What the notice says, or `None`: then stderr carries no `warden:` line at all.
    notice: Option<&'static str>,
    /// What `warden ps --json` lists in the run's `degraded` (a phrase of it), or `None`: no
    /// `degraded` at all.
    degraded: Option<&'static str>,
    /// The notice comes with the first call that takes the other route, so a run may end
    /// without it (once at most), rather than at the start (exactly once).
    on_use: bool,
}

const MODES: &[Mode] = &[
    Mode {
        name: "full",
        wrap: None,
        env: &[],
        flags: &[],
        notice: None,
        degraded: None,
        on_use: false,
    },
    Mode {
        name: "host-tree",
        wrap: None,
        env: &[],
        flags: &["--view", "off"],
        notice: None,
        degraded: None,
        on_use: false,
    },
    Mode {
        name: "no-userns",
        wrap: Some(("nouserns_wrap", &["docker"])),
        env: &[],
        flags: &[],
        notice: Some("warden: no user namespaces here"),
        degraded: Some("no user namespaces"),
        on_use: false,
    },
    // Not weaker, another route: the agent reads arguments through /proc/PID/mem, and says so
    // the first time it does.
    Mode {
        name: "proc-mem",
        wrap: Some(("supervise", &[])),
        env: &[
            ("SUPERVISE_NO_LISTENER", "1"),
            ("SUPERVISE_DENY", "process_vm_readv,process_vm_writev"),
        ],
        flags: &[],
        notice: Some("warden: process_vm_readv is refused here"),
        degraded: None,
        on_use: true,
    },
    // A kernel without Landlock (not built in, or left out of lsm=): the agent decides every
    // file call, the view's noexec mounts hold execve (docs/no-landlock.md).
    Mode {
        name: "no-landlock",
        wrap: Some(("no_landlock", &[])),
        env: &[],
        flags: &[],
        notice: Some("warden: Landlock is not enforced here"),
        degraded: Some("no Landlock"),
        on_use: false,
    },
    // Docker's default profile without CAP_SYS_PTRACE: the agent reaches the program's
    // descriptors through /proc/TID/fd (docs/fallbacks.md).
    Mode {
        name: "no-pidfd_getfd",
        wrap: Some(("supervise", &[])),
        env: &[
            ("SUPERVISE_NO_LISTENER", "1"),
            ("SUPERVISE_DENY", "pidfd_getfd"),
        ],
        flags: &[],
        notice: Some("warden: pidfd_getfd is refused here"),
        degraded: Some("no pidfd_getfd"),
        on_use: false,
    },
    // A kernel before 5.19 (RHEL 9's 5.14).
    Mode {
        name: "no-wait-killable",
        wrap: Some(("supervise", &[])),
        env: &[
            ("SUPERVISE_NO_LISTENER", "1"),
            ("SUPERVISE_NO_WAIT_KILLABLE", "1"),
        ],
        flags: &[],
        notice: Some("warden: this kernel has no SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"),
        degraded: Some("no wait-killable-recv"),
        on_use: false,
    },
];

/// `warden` as `who` in `mode`, from `dir`.
fn warden_in(mode: &Mode, who: As, dir: &Path) -> Command {
    let mut prefix: Vec<std::ffi::OsString> = Vec::new();
    if let Some((prog, args)) = mode.wrap {
        prefix.push(common::c_program(prog).into_os_string());
        prefix.extend(args.iter().map(Into::into));
    }
    let mut cmd = common::warden_cmd_under(who, prefix);
    cmd.envs(mode.env.iter().copied()).current_dir(dir);
    cmd
}

/// Runs `script` under `sh -c` in `mode` with `extra` options; returns (status ok, stdout,
/// stderr).
fn run(mode: &Mode, who: As, dir: &Path, extra: &[&str], script: &str) -> (bool, String, String) {
    let mut cmd = warden_in(mode, who, dir);
    cmd.arg("run")
        .args(mode.flags)
        .args(extra)
        .args(["--", "/bin/sh", "-c", script]);
    let (out, _) = common::finish(cmd, common::RUN_DEADLINE);
    (
        out.status.success(),
        common::stdout(&out),
        common::stderr(&out),
    )
}

/// The notice, exactly when the mode is degraded: one line naming what is missing; none at all
/// otherwise.
/// The run's closing line (issue 39), which says what the sandbox refused; not a notice.
fn check_notice(mode: &Mode, stderr: &str, what: &str) {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warden:") && !l.starts_with("warden: the sandbox refused "))
        .collect();
    match mode.notice {
        None => assert!(
            lines.is_empty(),
            "{} ({what}): a run that is not degraded printed {lines:?}",
            mode.name
        ),
        Some(n) => {
            let seen = lines.iter().filter(|l| l.starts_with(n)).count();
            let want = if mode.on_use { 0..=1 } else { 1..=1 };
            assert!(
                want.contains(&seen) && seen == lines.len(),
                "{} ({what}): want the notice {n:?} {want:?} times and no other line, \
                 stderr:\n{stderr}",
                mode.name
            );
        }
    }
}

fn everyday(who: As) {
    // A server on the host, and a file it serves; the sandbox may connect to it by one rule.
    let served = common::fresh_dir(&format!("modes-served-{}", who_tag(who)));
    common::write_file(&served.join("hello.txt"), "hello from the host\n", 0o644);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let server = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            use std::io::{Read, Write};
            for conn in listener.incoming() {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let Ok(mut c) = conn else { continue };
                let mut buf = [0u8; 2048];
                let _ = c.read(&mut buf);
                let body = "hello from the host\n";
                let _ = write!(
                    c,
                    "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
        })
    };
    let dir = common::fresh_dir(&format!("modes-{}", who_tag(who)));
    let policy = dir.join("net.policy");
    common::write_file(
        &policy,
        format!("net-allow outgoing tcp 127.0.0.1 {port}\n"),
        0o644,
    );
    let policy = policy.to_str().unwrap().to_string();
    for mode in MODES {
        // A pipeline.
        let (ok, out, err) = run(
            mode,
            who,
            &dir,
            &[],
            "printf 'b\\na\\nc\\n' | sort | tr a-z A-Z | head -2",
        );
        assert!(
            ok && out == "A\nB\n",
            "{}: pipeline: {out:?}\n{err}",
            mode.name
        );
        check_notice(mode, &err, "pipeline");
        // make: a makefile written and built in the run's own scratch directory.
        let (ok, out, err) = run(
            mode,
            who,
            &dir,
            &[],
            "cd \"$(mktemp -d)\" && printf 'all: b\\n\\t@cat b\\nb: a\\n\\t@tr x y < a > b\\na:\\n\\t@echo xox > a\\n' > Makefile && make -s",
        );
        assert!(ok && out == "yoy\n", "{}: make: {out:?}\n{err}", mode.name);
        check_notice(mode, &err, "make");
        // python3, the system's.
        let (ok, out, err) = run(
            mode,
            who,
            &dir,
            &[],
            "/usr/bin/python3 -c 'import json, hashlib; print(json.dumps(hashlib.sha256(b\"x\").hexdigest()[:8]))'",
        );
        assert!(
            ok && out == "\"2d711642\"\n",
            "{}: python3: {out:?}\n{err}",
            mode.name
        );
        check_notice(mode, &err, "python3");
        // curl to the allowed address gets the page; to the same host's other port it does not.
        let other = if port == 65535 { 65534 } else { port + 1 };
        let script = format!(
            "/usr/bin/curl -sS --max-time 20 http://127.0.0.1:{port}/hello.txt; \
             /usr/bin/curl -sS --max-time 20 http://127.0.0.1:{other}/ >/dev/null 2>&1 && echo OTHER-REACHED; true",
        );
        let (ok, out, err) = run(mode, who, &dir, &["--policy", &policy], &script);
        assert!(
            ok && out == "hello from the host\n",
            "{}: curl: {out:?}\n{err}",
            mode.name
        );
        check_notice(mode, &err, "curl");
        // The refused connect is said at the end, in every mode.
        let refused = format!("connect(\"tcp 127.0.0.1:{other}\")");
        assert!(
            err.lines()
                .any(|l| l.starts_with("warden: the sandbox refused ") && l.contains(&refused)),
            "{}: curl: the closing line does not name {refused}:\n{err}",
            mode.name
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = std::net::TcpStream::connect(("127.0.0.1", port));
    server.join().unwrap();
}

/// `warden ps --json` and `warden inspect` say of a running sandbox what its mode does without,
/// exactly when it is degraded: the same facts as the notice.
fn listed(who: As) {
    let dir = common::fresh_dir(&format!("modes-ps-{}", who_tag(who)));
    for mode in MODES {
        let marker = format!("warden-modes-{}-{}", mode.name, std::process::id());
        let mut cmd = warden_in(mode, who, &dir);
        cmd.arg("run")
            .args(mode.flags)
            .args(["--", "/bin/sh", "-c", "sleep 60", &marker])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let deadline = std::time::Instant::now() + common::hang_bound(Duration::from_secs(20));
        let entry = loop {
            let out = common::warden_cmd(who)
                .args(["ps", "--json"])
                .output()
                .unwrap();
            let all: Vec<serde_json::Value> =
                serde_json::from_slice(&out.stdout).unwrap_or_default();
            let found = all.into_iter().find(|e| {
                e["command"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|a| a.as_str() == Some(marker.as_str())))
            });
            if let Some(e) = found {
                break e;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{}: the run never showed in warden ps",
                mode.name
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let id = entry["id"].as_str().unwrap().to_owned();
        let text = common::warden_cmd(who)
            .args(["inspect", &id])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&text.stdout).into_owned();
        let _ = child.kill();
        let _ = child.wait();
        // Only the sandbox's own processes, in every mode: without a PID namespace of its own,
        // the host's processes are in warden's, and must not be listed as the sandbox's.
        let listed: Vec<&str> = text.lines().filter(|l| l.starts_with("  pid ")).collect();
        assert!(
            !listed.is_empty()
                && listed
                    .iter()
                    .all(|l| l.contains("(sh)") || l.contains("(sleep)")),
            "{}: inspect lists other processes than the sandbox's:\n{text}",
            mode.name
        );
        let degraded: Vec<String> = entry["degraded"]
            .as_array()
            .map(|d| {
                d.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        match mode.degraded {
            None => {
                assert!(degraded.is_empty(), "{}: ps lists {degraded:?}", mode.name);
                assert!(
                    !text.contains("degraded:"),
                    "{}: inspect says\n{text}",
                    mode.name
                );
            }
            Some(want) => {
                assert!(
                    degraded.iter().any(|d| d.contains(want)),
                    "{}: ps lists {degraded:?}, want {want:?}",
                    mode.name
                );
                assert!(
                    text.lines()
                        .any(|l| l.starts_with("  degraded:") && l.contains(want)),
                    "{}: inspect says\n{text}",
                    mode.name
                );
            }
        }
    }
}

/// A signal the program sends to its own process group reaches nothing outside the sandbox, in
/// every mode: a shell in warden's process group (as a script that runs warden is) traps it and
/// says so. A PID namespace does not hold `kill(0, ...)`: the group is the caller's, wherever
/// its members are; before, only Landlock's signal scope (6.12+) kept it in, and without it
/// (Debian 12's 6.1, no Landlock) the program stopped warden and its caller with SIGTSTP.
fn group_signal(who: As) {
    let dir = common::fresh_dir(&format!("modes-pgrp-{}", who_tag(who)));
    for mode in MODES {
        let mut line: Vec<String> = Vec::new();
        if let Some((prog, args)) = mode.wrap {
            line.push(common::c_program(prog).to_str().unwrap().to_owned());
            line.extend(args.iter().map(|a| a.to_string()));
        }
        line.push(common::warden().to_owned());
        line.push("run".into());
        line.extend(mode.flags.iter().map(|f| f.to_string()));
        line.extend(
            [
                "--",
                "/bin/sh",
                "-c",
                "trap '' USR1 TERM; kill -USR1 0; kill -TERM 0; echo sent",
            ]
            .map(String::from),
        );
        let quoted: Vec<String> = line
            .iter()
            .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
            .collect();
        let script = format!(
            "trap 'echo OUTSIDE-USR1' USR1; trap 'echo OUTSIDE-TERM' TERM; {}; echo done",
            quoted.join(" ")
        );
        let mut cmd = common::warden_cmd_under(who, Vec::new());
        // The shell, as `who`, with warden's environment: not warden itself.
        let program = cmd.get_program().to_owned();
        let args: Vec<std::ffi::OsString> = cmd.get_args().map(|a| a.to_owned()).collect();
        let mut sh = Command::new(if args.is_empty() {
            std::ffi::OsString::from("/bin/sh")
        } else {
            program
        });
        if !args.is_empty() {
            // setpriv ... -- warden: replace warden by the shell.
            sh.args(&args[..args.len() - 1]).arg("/bin/sh");
        }
        sh.args(["-c", &script]);
        for (k, v) in cmd.get_envs() {
            if let Some(v) = v {
                sh.env(k, v);
            }
        }
        sh.envs(mode.env.iter().copied()).current_dir(&dir);
        cmd = sh;
        let (out, _) = common::finish(cmd, common::RUN_DEADLINE);
        let stdout = common::stdout(&out);
        assert!(
            stdout.contains("sent") && stdout.contains("done"),
            "{}: {stdout}\n{}",
            mode.name,
            common::stderr(&out)
        );
        assert!(
            !stdout.contains("OUTSIDE"),
            "{}: the sandbox's signal to its process group reached the shell outside: {stdout}",
            mode.name
        );
    }
}

#[test]
fn a_signal_to_the_programs_process_group_stays_in_the_sandbox() {
    each_user(
        "a_signal_to_the_programs_process_group_stays_in_the_sandbox",
        group_signal,
    );
}

#[test]
fn ps_and_inspect_say_what_a_degraded_run_does_without() {
    each_user(
        "ps_and_inspect_say_what_a_degraded_run_does_without",
        listed,
    );
}

#[test]
fn everyday_commands_work_in_every_mode_and_only_a_degraded_one_says_so() {
    each_user(
        "everyday_commands_work_in_every_mode_and_only_a_degraded_one_says_so",
        everyday,
    );
}
