//! Where `process_vm_readv` is refused (some container profiles), the agent reads the
//! program's arguments through `/proc/PID/mem`, and its path checks hold as before; where that
//! is refused too, every call whose argument it cannot copy is refused, never continued.
//!
//! The refusal is real: `tests/c/supervise.c` installs a seccomp filter around warden that
//! fails `process_vm_readv` and `process_vm_writev` (and, for the second case, `pread64` and
//! `pwrite64`, the calls behind `/proc/PID/mem`) with EPERM.

mod common;

use common::As;
use std::time::Duration;

/// `warden ARGS` as `who` under a filter refusing `deny` with EPERM (the filter goes on after
/// setpriv, a dynamically linked program whose loader reads with `pread64`).
fn under_refusal(who: As, deny: &str, args: &[&str]) -> std::process::Output {
    let supervise = common::c_program("supervise");
    let mut cmd = common::warden_cmd_under(who, vec![supervise.into_os_string()]);
    cmd.args(args)
        .env("SUPERVISE_NO_LISTENER", "1")
        .env("SUPERVISE_DENY", deny);
    common::finish(cmd, Duration::from_secs(120)).0
}

/// What the program does: reads an allowed file, then tries the secret by its path, through
/// `..`, through a symlink the program makes in its scratch directory, and reads the link
/// back (a result the agent writes into the program's memory).
const SCRIPT: &str = r#"
cat /etc/hostname
cat /etc/shadow 2>&1 >/dev/null | sed 's/^.*: //'
cd /usr && cat ../etc/shadow 2>&1 >/dev/null | sed 's/^.*: //'
ln -s /etc/shadow "$TMPDIR/link"
cat "$TMPDIR/link" 2>&1 >/dev/null | sed 's/^.*: //'
readlink "$TMPDIR/link"
"#;

#[test]
fn arguments_are_read_through_proc_mem_where_process_vm_readv_is_refused() {
    let hostname = std::fs::read_to_string("/etc/hostname").unwrap();
    common::each_user(
        "arguments_are_read_through_proc_mem_where_process_vm_readv_is_refused",
        |who| {
            // --view off: the agent decides every path, so every check reads an argument.
            let out = under_refusal(
                who,
                "process_vm_readv,process_vm_writev",
                &["run", "--view", "off", "--", "/bin/sh", "-c", SCRIPT],
            );
            let ctx = format!(
                "as {who:?}: {}\n{}",
                common::stdout(&out),
                common::stderr(&out)
            );
            common::assert_ok(&out);
            let expected = format!(
                "{hostname}Permission denied\nPermission denied\nPermission denied\n/etc/shadow\n"
            );
            assert_eq!(common::stdout(&out), expected, "{ctx}");
            let notices = common::stderr(&out)
                .lines()
                .filter(|l| l.contains("/proc/PID/mem instead"))
                .count();
            assert_eq!(notices, 1, "one notice: {ctx}");

            // `warden doctor` under the same filter says so.
            let out = under_refusal(who, "process_vm_readv", &["doctor", "--json"]);
            common::assert_ok(&out);
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v["facts"]["process"]["process_vm_readv"], "EPERM", "{v:#}");
            assert_eq!(v["facts"]["process"]["proc_pid_mem"], "yes", "{v:#}");
            assert!(v["advice"].to_string().contains("/proc/PID/mem"), "{v:#}");
        },
    );
}

#[test]
fn a_call_whose_arguments_cannot_be_read_is_refused() {
    common::each_user("a_call_whose_arguments_cannot_be_read_is_refused", |who| {
        // Neither route: the program's own execve (its path is an argument the agent checks)
        // is refused, and nothing runs.
        let out = under_refusal(
            who,
            "process_vm_readv,process_vm_writev,pread64,pwrite64",
            &["run", "--view", "off", "--", "/bin/sh", "-c", "echo ran"],
        );
        let ctx = format!("as {who:?}: {}", common::stderr(&out));
        assert_eq!(common::stdout(&out), "", "{ctx}");
        assert_eq!(out.status.code(), Some(126), "{ctx}");
        assert!(
            common::stderr(&out).contains("Operation not permitted"),
            "{ctx}"
        );
        // Said once, with what to do.
        let said = common::stderr(&out)
            .lines()
            .filter(|l| l.contains("neither process_vm_readv nor /proc/PID/mem"))
            .count();
        assert_eq!(said, 1, "{ctx}");
    });
}
