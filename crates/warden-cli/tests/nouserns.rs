//! warden on a host that refuses user namespaces (docs/guide.md, "Without user namespaces"): the
//! real binary under `tests/c/nouserns_wrap.c`, a seccomp filter that refuses namespaces as
//! Docker's default profile does (`docker`), or the user namespace alone as a security module
//! (`eperm`) or `user.max_user_namespaces=0` (`enospc`) do, or as Ubuntu's AppArmor restriction
//! looks to a sandbox (`nocaps`: namespaces made, the first privileged step in them refused). warden must then run the program
//! without namespaces, say so once, and keep it from every process, IPC object, abstract socket
//! and network endpoint outside the sandbox. Each test looks from outside too: the victim
//! process is alive (SIGUSR1 would have killed it), the listeners accepted nothing, warden
//! itself finished (a signal would have ended it).

mod common;

use common::report::Report;
use common::{each_user, who_tag, As};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The notice's start, which must be on stderr exactly once in this mode and never otherwise.
const NOTICE: &str = "warden: no user namespaces here (";

/// `warden run` of `nouserns_escape ARGS` as `who` under the wrapper in `mode`.
fn escape(who: As, mode: &str, args: &[&str]) -> Report {
    escape_env(who, mode, &[], args)
}

/// [`escape`] with more environment for warden.
fn escape_env(who: As, mode: &str, env: &[(&str, &str)], args: &[&str]) -> Report {
    let (prog, bin) = common::program("nouserns_escape");
    let mut cmd = common::warden_cmd_wrapped(who, Some(mode));
    cmd.envs(env.iter().copied());
    cmd.args(["run", "--read", &bin, "--exec", &bin, "--", &prog])
        .args(args);
    let (out, _) = common::finish(cmd, common::RUN_DEADLINE);
    Report::new(&format!("{mode} as {}", who_tag(who)), out)
}

/// A process outside the sandbox that the program's uid (65534) could signal natively: a
/// `sleep` of uid 65534 when the tests run as root (the program runs as 65534 then too).
fn victim() -> Child {
    let mut cmd = if is_root() {
        let mut c = Command::new("/usr/bin/setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "sleep",
            "120",
        ]);
        c
    } else {
        let mut c = Command::new("sleep");
        c.arg("120");
        c
    };
    cmd.stdin(Stdio::null()).spawn().expect("sleep starts")
}

fn assert_alive(v: &mut Child, r: &Report) {
    assert!(
        v.try_wait().unwrap().is_none(),
        "the victim outside died (a signal reached it)\n{}",
        r.dump()
    );
}

fn notices(r: &Report) -> usize {
    r.stderr().matches(NOTICE).count()
}

/// Every attempt that would act on a process outside failed. What may succeed: a signal to a
/// process group or to -1, which the kernel (Landlock's scope) or the agent delivers to the
/// sandbox's processes only and answers as the call's semantics say (the program ignores
/// SIGUSR1: warden, in that group on the host, finished, and the victim lives, so nothing
/// outside got it); and `pidfd_open`, whose descriptor can neither signal (Landlock's scope)
/// nor take descriptors (`pidfd_getfd` is refused) nor enter namespaces (`setns` is refused).
fn assert_only_inside(r: &Report) {
    for a in &r.attempts {
        let harmless = a.name.starts_with("kill-group-")
            || a.name == "kill-minus-1"
            || (a.name.starts_with("pidfd-") && !a.name.starts_with("pidfd-signal-"));
        if !harmless {
            assert!(!a.ok(), "{} reached outside\n{}", a.name, r.dump());
        }
    }
}

fn signals(who: As, mode: &str, env: &[(&str, &str)]) {
    let mut v = victim();
    let vpid = v.id().to_string();
    let r = escape_env(who, mode, env, &["signals", &vpid, "1"]);
    r.finished();
    assert_eq!(notices(&r), 1, "{}", r.dump());
    assert_only_inside(&r);
    assert_alive(&mut v, &r);
    let _ = v.kill();
    let _ = v.wait();
}

#[test]
fn signals_ptrace_and_priorities_stay_inside() {
    each_user("signals_ptrace_and_priorities_stay_inside", |who| {
        signals(who, "docker", &[])
    });
}

/// The route for kernels whose Landlock has no signal scope (before 6.12): the agent decides
/// every call that names a process, and performs signals through a pidfd it checked.
#[test]
fn signals_through_the_agent_stay_inside() {
    each_user("signals_through_the_agent_stay_inside", |who| {
        signals(who, "docker", &[("WARDEN_AGENT_SIGNALS", "1")])
    });
}

#[test]
fn user_namespace_refused_alone_eperm_and_enospc() {
    each_user("user_namespace_refused_alone_eperm_and_enospc", |who| {
        signals(who, "eperm", &[]);
        signals(who, "enospc", &[]);
        // The AppArmor shape: the namespace is made, its first privileged step refused.
        signals(who, "nocaps", &[]);
    });
}

/// `nouserns_escape ARGS` under warden, run by a shell that execs into the wrapper, so that
/// `$$` in `args` is warden's own pid.
fn naming_warden(who: As, args: &str) -> Report {
    let (prog, bin) = common::program("nouserns_escape");
    let wrap = common::c_program("nouserns_wrap");
    let line = format!(
        "exec {} docker {} run --read {bin} --exec {bin} -- {prog} {args}",
        wrap.display(),
        common::warden()
    );
    let mut cmd = match who {
        As::Me => Command::new("sh"),
        As::Nobody => {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
                "sh",
            ]);
            c
        }
    };
    cmd.current_dir(common::workdir())
        .stdin(Stdio::null())
        .args(["-c", &line]);
    let (out, _) = common::finish(cmd, common::RUN_DEADLINE);
    Report::new(&format!("warden as {}", who_tag(who)), out)
}

/// warden's own pid, its init (the program's parent) and process groups: no signal reaches
/// them (warden exits 0 with the program's DONE: neither warden nor init took SIGUSR1), and
/// warden's /proc (its environment, its memory) is not there.
#[test]
fn warden_and_init_cannot_be_signalled_or_read() {
    each_user("warden_and_init_cannot_be_signalled_or_read", |who| {
        let r = naming_warden(who, "signals $$");
        r.finished();
        assert_only_inside(&r);
        let r = naming_warden(
            who,
            "proc /proc/$$/environ /proc/$$/mem /proc/$$/cmdline /proc/$$/task/$$/environ",
        );
        r.finished();
        assert_eq!(r.attempts.len(), 4, "{}", r.dump());
        for a in &r.attempts {
            assert!(!a.ok(), "{} was read\n{}", a.field("path"), r.dump());
        }
    });
}

#[test]
fn other_processes_proc_is_not_there() {
    each_user("other_processes_proc_is_not_there", |who| {
        let mut v = victim();
        let p = v.id();
        let paths = [
            "/proc/1/cmdline".to_owned(),
            "/proc/1/environ".to_owned(),
            format!("/proc/{p}/environ"),
            format!("/proc/{p}/mem"),
            format!("/proc/{p}/task/{p}/environ"),
            format!("/proc/{p}/root/etc/hostname"),
            format!("/proc/{}/environ", std::process::id()),
        ];
        let mut args = vec!["proc", "/proc/self/status"];
        args.extend(paths.iter().map(String::as_str));
        let r = escape(who, "docker", &args);
        r.finished();
        let attempts: Vec<_> = r.attempts.iter().filter(|a| a.name == "proc").collect();
        assert_eq!(attempts.len(), args.len() - 1, "{}", r.dump());
        assert!(attempts[0].ok(), "its own /proc/self\n{}", r.dump());
        for a in &attempts[1..] {
            assert!(!a.ok(), "{} was read\n{}", a.field("path"), r.dump());
        }
        assert_alive(&mut v, &r);
        let _ = v.kill();
        let _ = v.wait();
    });
}

#[test]
fn system_v_ipc_and_message_queues_refused() {
    each_user("system_v_ipc_and_message_queues_refused", |who| {
        let r = escape(who, "docker", &["ipc"]);
        r.finished();
        assert!(!r.attempts.is_empty());
        for a in &r.attempts {
            assert!(!a.ok(), "{} succeeded\n{}", a.name, r.dump());
        }
    });
}

#[test]
fn abstract_socket_outside_refused() {
    use std::os::linux::net::SocketAddrExt;
    each_user("abstract_socket_outside_refused", |who| {
        let name = format!("warden-nouserns-{}-{}", std::process::id(), who_tag(who));
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
        let listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
        listener.set_nonblocking(true).unwrap();
        let r = escape(who, "docker", &["abstract", &name]);
        r.finished();
        r.denied("abstract-connect");
        r.denied("abstract-bind");
        r.denied("unix-dgram");
        assert!(
            listener.accept().is_err(),
            "the listener outside accepted a connection\n{}",
            r.dump()
        );
    });
}

#[test]
fn no_network_without_a_net_rule() {
    each_user("no_network_without_a_net_rule", |who| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port().to_string();
        let r = escape(who, "docker", &["tcp", &port]);
        r.finished();
        for name in ["tcp-socket", "udp-socket", "inet6-socket", "packet-socket"] {
            r.denied(name);
        }
        assert!(
            listener.accept().is_err(),
            "the listener outside accepted a connection\n{}",
            r.dump()
        );
    });
}

/// With a net rule, the agent decides as it always does: the allowed endpoint is reached, the
/// one beside it is not (from outside: its listener saw nothing).
#[test]
fn net_rules_hold_through_the_agent() {
    each_user("net_rules_hold_through_the_agent", |who| {
        let allowed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        other.set_nonblocking(true).unwrap();
        let (a, o) = (
            allowed.local_addr().unwrap().port(),
            other.local_addr().unwrap().port(),
        );
        let dir = common::fresh_dir(&format!("nouserns-net-{}", who_tag(who)));
        let policy = dir.join("net.policy");
        std::fs::write(&policy, format!("net-allow outgoing tcp 127.0.0.1 {a}\n")).unwrap();
        common::chmod(&policy, 0o644);
        let probe = format!(
            "import socket\nfor p in ({a}, {o}):\n    try:\n        \
             socket.create_connection(('127.0.0.1', p), 5)\n        print('connected', p)\n    \
             except OSError as e:\n        print('refused', p, e.errno)\n"
        );
        let mut cmd = common::warden_cmd_wrapped(who, Some("docker"));
        cmd.arg("run")
            .arg("--policy")
            .arg(&policy)
            .args(["--", "/usr/bin/python3", "-c", &probe]);
        let (out, _) = common::finish(cmd, common::RUN_DEADLINE);
        let stdout = common::stdout(&out);
        assert!(out.status.success(), "{stdout}\n{}", common::stderr(&out));
        assert!(stdout.contains(&format!("connected {a}")), "{stdout}");
        assert!(stdout.contains(&format!("refused {o}")), "{stdout}");
        allowed.set_nonblocking(true).unwrap();
        assert!(allowed.accept().is_ok(), "the allowed listener saw nothing");
        assert!(other.accept().is_err(), "the other listener was reached");
    });
}

#[test]
fn namespaces_mounts_and_keyrings_refused() {
    each_user("namespaces_mounts_and_keyrings_refused", |who| {
        let r = escape(who, "docker", &["unshare"]);
        r.finished();
        for a in &r.attempts {
            assert!(!a.ok(), "{} succeeded\n{}", a.name, r.dump());
        }
    });
}

/// As root, the program runs as 65534 with no capability and no_new_privs (and says so).
#[test]
fn root_runs_the_program_unprivileged() {
    each_user("root_runs_the_program_unprivileged", |who| {
        let r = escape(who, "docker", &["ids"]);
        r.finished();
        let ids = r.lines("IDS ").join("");
        assert!(ids.contains("uid=65534 euid=65534"), "{ids}\n{}", r.dump());
        assert!(ids.contains("CapEff:_0000000000000000"), "{ids}");
        assert!(ids.contains("CapPrm:_0000000000000000"), "{ids}");
        assert!(ids.contains("NoNewPrivs:_1"), "{ids}");
        r.denied("setuid-0");
        if who == As::Me && is_root() {
            assert!(
                r.stderr().contains("runs as uid 65534 with no capability"),
                "{}",
                r.dump()
            );
        }
    });
}

#[test]
fn a_policy_that_insists_on_root_is_refused() {
    if !common::require_root("a_policy_that_insists_on_root_is_refused") {
        return;
    }
    let dir = common::fresh_dir("nouserns-root-policy");
    let policy = dir.join("root.policy");
    std::fs::write(&policy, "starting_uid 0\nstarting_gid 0\n").unwrap();
    let mut cmd = common::warden_cmd_wrapped(As::Me, Some("docker"));
    cmd.arg("run")
        .arg("--policy")
        .arg(&policy)
        .args(["--", "/bin/true"]);
    let (out, _) = common::finish(cmd, common::RUN_DEADLINE);
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(err.contains("would run the program as root"), "{err}");
}

#[test]
fn require_userns_refuses_with_one_sentence() {
    each_user("require_userns_refuses_with_one_sentence", |who| {
        let mut cmd = common::warden_cmd_wrapped(who, Some("docker"));
        cmd.args(["run", "--require", "userns,landlock", "--", "/bin/true"]);
        let (out, _) = common::finish(cmd, common::RUN_DEADLINE);
        let err = common::stderr(&out);
        assert_eq!(out.status.code(), Some(125), "{err}");
        assert!(err.contains("--require userns"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        // Where namespaces work, --require userns changes nothing (a host that refuses them,
        // as the kernel matrix's guest does, is the wrapped case above already).
        if !host_allows_user_namespaces() {
            return;
        }
        let mut cmd = common::warden_cmd(who);
        cmd.args(["run", "--require", "userns", "--", "/bin/true"]);
        let (out, _) = common::finish(cmd, common::RUN_DEADLINE);
        assert!(out.status.success(), "{}", common::stderr(&out));
    });
}

/// Controls: the program's own child can be signalled and waited for, through kill and a
/// pidfd; a shell pipeline, a make-like fork/exec loop and python3 work; the notice is there
/// once, and the reports say `no-namespaces`; a normal run has neither.
#[test]
fn controls_own_children_shells_and_python_work() {
    each_user("controls_own_children_shells_and_python_work", |who| {
        let r = escape(who, "docker", &["child"]);
        r.finished();
        for a in &r.attempts {
            assert!(a.ok(), "{} failed\n{}", a.name, r.dump());
        }
        assert_eq!(notices(&r), 1, "{}", r.dump());

        let dir = common::fresh_dir(&format!("nouserns-controls-{}", who_tag(who)));
        common::chmod(&dir, 0o777);
        let report = dir.join("report.json");
        let script = "echo one two three | wc -w; \
                      for i in 1 2 3; do sh -c 'exec /bin/echo step' & done; wait; \
                      python3 -c 'import subprocess,os; \
                      print(subprocess.run([\"echo\",\"py\"],capture_output=True).stdout.decode().strip(), \
                      os.getuid())'";
        let mut cmd = common::warden_cmd_wrapped(who, Some("docker"));
        cmd.arg("run")
            .arg("--report-json")
            .arg(&report)
            .args(["--", "/bin/sh", "-c", script]);
        let (out, _) = common::finish(cmd, common::RUN_DEADLINE);
        let (stdout, stderr) = (common::stdout(&out), common::stderr(&out));
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert!(stdout.starts_with("3\n"), "{stdout}");
        assert_eq!(stdout.matches("step").count(), 3, "{stdout}");
        assert!(stdout.contains("py 65534"), "{stdout}\n{stderr}");
        assert_eq!(stderr.matches(NOTICE).count(), 1, "{stderr}");
        let json = std::fs::read_to_string(&report).unwrap();
        assert!(json.contains("\"mode\": \"no-namespaces\""), "{json}");

        // Without the wrapper: namespaces, no notice, no mode (where the host allows them; a
        // host that refuses them gets the mode unwrapped too, checked above).
        if !host_allows_user_namespaces() {
            return;
        }
        let mut cmd = common::warden_cmd(who);
        cmd.arg("run")
            .arg("--report-json")
            .arg(&report)
            .args(["--", "/bin/sh", "-c", "echo ok"]);
        let (out, _) = common::finish(cmd, common::RUN_DEADLINE);
        assert!(out.status.success(), "{}", common::stderr(&out));
        assert!(!common::stderr(&out).contains(NOTICE));
        let json = std::fs::read_to_string(&report).unwrap();
        assert!(!json.contains("no-namespaces"), "{json}");
    });
}

/// A pid the sandbox knew (its own child's, reaped) given to a process outside before the
/// program signals it: the agent checks the process the number names at the time of the call
/// (and signals through the pidfd it checked), so the new owner gets nothing. The agent's
/// route (`WARDEN_AGENT_SIGNALS`): Landlock's scope decides at delivery, in the kernel, and
/// has no window between check and use at all.
#[test]
fn a_reused_pid_names_a_process_outside_and_is_refused() {
    if !common::require_root("a_reused_pid_names_a_process_outside_and_is_refused") {
        return;
    }
    for attempt in 0..5 {
        let dir = common::fresh_dir(&format!("nouserns-reuse-{attempt}"));
        common::chmod(&dir, 0o777);
        let (prog, bin) = common::program("nouserns_escape");
        let (out_path, out_file) = common::capture_file("reuse-stdout");
        let mut cmd = common::warden_cmd_wrapped(As::Me, Some("docker"));
        cmd.env("WARDEN_AGENT_SIGNALS", "1")
            .args(["run", "--read", &bin, "--exec", &bin, "--read"])
            .arg(&dir)
            .args(["--", &prog, "reuse"])
            .arg(&dir)
            .stdout(out_file)
            .stderr(Stdio::null());
        let mut warden = cmd.spawn().unwrap();
        let mut pid = None;
        for _ in 0..2000 {
            let text = std::fs::read_to_string(&out_path).unwrap_or_default();
            if let Some(p) = text
                .lines()
                .find_map(|l| l.strip_prefix("PID "))
                .and_then(|p| p.trim().parse::<i32>().ok())
            {
                pid = Some(p);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let pid = pid.expect("the program reported its child's pid");
        // The next pid the kernel gives is `pid`: a process outside, of the program's uid.
        let _ = std::fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string());
        let mut v = victim();
        std::fs::write(dir.join("go"), "").unwrap();
        let (status, timed_out) = common::wait_deadline(&mut warden, common::RUN_DEADLINE);
        let out = std::process::Output {
            status,
            stdout: std::fs::read(&out_path).unwrap_or_default(),
            stderr: Vec::new(),
        };
        assert!(!timed_out);
        let r = Report::new("reuse", out);
        r.finished();
        // Whoever has the number now (the victim, or nobody), nothing reached it.
        assert_only_inside(&r);
        assert_alive(&mut v, &r);
        let reused = v.id() as i32 == pid;
        let _ = v.kill();
        let _ = v.wait();
        if reused {
            return;
        }
    }
    eprintln!("note: the victim never got the reused pid (other processes took it first)");
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Whether `pid` still names a `sleep` (a process the sandbox left behind).
fn sleeping(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep\0"))
}

/// Nothing outlives the sandbox without a PID namespace: a daemon (`setsid`, orphaned) is gone
/// when the program ends, and when warden is told to stop while the program runs.
#[test]
fn nothing_outlives_the_sandbox() {
    each_user("nothing_outlives_the_sandbox", |who| {
        let pid_of = |path: &std::path::Path| -> Option<i32> {
            std::fs::read_to_string(path)
                .ok()?
                .lines()
                .next()?
                .trim()
                .parse()
                .ok()
        };
        for stop_warden in [false, true] {
            let (out_path, out_file) = common::capture_file("outlive-stdout");
            let script = if stop_warden {
                "setsid sleep 300 & echo $!; sleep 300"
            } else {
                "setsid sleep 300 & echo $!"
            };
            let mut cmd = common::warden_cmd_wrapped(who, Some("docker"));
            cmd.args(["run", "--", "/bin/sh", "-c", script])
                .stdout(out_file)
                .stderr(Stdio::null());
            let mut warden = cmd.spawn().unwrap();
            let mut daemon = None;
            for _ in 0..2000 {
                daemon = pid_of(&out_path);
                if daemon.is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            let daemon = daemon.expect("the program printed its daemon's pid");
            // The pid is the shell's child until it has exec'd setsid and sleep.
            for _ in 0..200 {
                if sleeping(daemon) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            if stop_warden {
                assert!(sleeping(daemon), "the daemon should run while warden does");
                common::signal(warden.id() as i32, libc::SIGTERM).unwrap();
            }
            let (_, timed_out) = common::wait_deadline(&mut warden, common::RUN_DEADLINE);
            assert!(!timed_out);
            // init reaps what it kills before it exits; give a last reap a moment.
            for _ in 0..100 {
                if !sleeping(daemon) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let left = sleeping(daemon);
            if left {
                let _ = common::signal(daemon, libc::SIGKILL);
            }
            assert!(
                !left,
                "the daemon {daemon} outlived the sandbox (warden stopped: {stop_warden})"
            );
        }
    });
}

/// Whether this host lets a user namespace be made (`unshare -U true`): the kernel matrix's guest
/// with `user.max_user_namespaces=0` does not, and there every run is the no-namespace mode.
fn host_allows_user_namespaces() -> bool {
    std::process::Command::new("/usr/bin/unshare")
        .args(["-U", "/bin/true"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
