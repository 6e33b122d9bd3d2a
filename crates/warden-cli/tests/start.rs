//! A run whose program never starts leaves nothing behind and says so; a report on warden's own
//! standard output does not cut off the program's.

mod common;

use common::As;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// Directories named `warden-PID-*` (a run's cgroup) anywhere in the cgroup hierarchies, three
/// levels down (warden's own group and its parent on systemd and hybrid hosts).
fn cgroups_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("warden-{pid}-");
    let mut found = Vec::new();
    let mut dirs = vec![(PathBuf::from("/sys/fs/cgroup"), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(&prefix) {
                found.push(e.path());
            } else if depth < 4 {
                dirs.push((e.path(), depth + 1));
            }
        }
    }
    found
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Runs warden as `who` with `args`, TMPDIR `tmp`, from `cwd`; returns its pid and output.
fn run_in(who: As, tmp: &Path, cwd: &Path, args: &[&str]) -> (u32, std::process::Output) {
    let mut cmd = common::warden_cmd(who);
    cmd.args(args)
        .current_dir(cwd)
        .env("TMPDIR", tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("warden starts");
    let pid = child.id();
    let out = child.wait_with_output().expect("warden ends");
    (pid, out)
}

#[test]
fn a_run_that_fails_before_its_program_starts_leaves_nothing() {
    common::each_user(
        "a_run_that_fails_before_its_program_starts_leaves_nothing",
        |who| {
            let tag = common::who_tag(who);
            let tmp = common::fresh_dir(&format!("failed-start-tmp-{tag}"));
            common::chmod(&tmp, 0o1777);
            let reports = common::fresh_dir(&format!("failed-start-reports-{tag}"));
            common::chmod(&reports, 0o777);
            let cwd = common::workdir();
            // A run that works first: whatever a user's first run makes to stay (its registry
            // directory) is there before the listing.
            let (_, ok) = run_in(who, &tmp, cwd, &["run", "--", "/bin/true"]);
            common::assert_ok(&ok);
            let before = listing(&tmp);
            let cases: [(&str, &[&str], i32); 3] = [
                // The starting directory is not in the view: init fails after the cgroup, the
                // scratch directory and the view's copies were made.
                (
                    "chdir",
                    &[
                        "--view",
                        "on",
                        "--chdir",
                        "/nonexistent-start-dir",
                        "--mem",
                        "256M",
                        "--processes",
                        "64",
                    ],
                    125,
                ),
                // A program that is not there.
                (
                    "missing",
                    &["--mem", "256M", "--", "/nonexistent-program"],
                    127,
                ),
                // A file that is no program.
                (
                    "not a program",
                    &["--mem", "256M", "--", "/etc/hostname"],
                    126,
                ),
            ];
            for (name, args, code) in cases {
                let report = reports.join(format!("{}.meta", name.replace(' ', "-")));
                let json = reports.join(format!("{}.json", name.replace(' ', "-")));
                let mut all = vec![
                    "run",
                    "--report",
                    report.to_str().unwrap(),
                    "--report-json",
                    json.to_str().unwrap(),
                ];
                all.extend_from_slice(args);
                if !args.contains(&"--") {
                    all.extend_from_slice(&["--", "/bin/true"]);
                }
                let (pid, out) = run_in(who, &tmp, cwd, &all);
                let ctx = format!("{name} as {tag}: {}", common::stderr(&out));
                assert_eq!(out.status.code(), Some(code), "{ctx}");
                // One sentence, no panic.
                assert!(common::stderr(&out).starts_with("warden: "), "{ctx}");
                assert_eq!(cgroups_of(pid), Vec::<PathBuf>::new(), "{ctx}");
                assert_eq!(listing(&tmp), before, "{ctx}");
                assert_eq!(
                    common::report_field(&report, "ran").as_deref(),
                    Some("0"),
                    "{ctx}"
                );
                assert_eq!(
                    common::report_field(&report, "accounting").as_deref(),
                    Some("none"),
                    "{ctx}"
                );
                assert_eq!(
                    common::report_field(&report, "status").as_deref(),
                    Some("XX"),
                    "{ctx}"
                );
                let v: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
                assert_eq!(v["ran"], 0, "{ctx}");
                assert_eq!(v["accounting"], "none", "{ctx}");
                assert_eq!(v["status"], "XX", "{ctx}");
            }
            // A run that did start says how it was counted, and no `ran`.
            let report = reports.join("ok.meta");
            let (pid, out) = run_in(
                who,
                &tmp,
                cwd,
                &[
                    "run",
                    "--mem",
                    "256M",
                    "--report",
                    report.to_str().unwrap(),
                    "--",
                    "/bin/true",
                ],
            );
            common::assert_ok(&out);
            assert_eq!(cgroups_of(pid), Vec::<PathBuf>::new());
            assert_eq!(common::report_field(&report, "ran"), None);
            assert_ne!(
                common::report_field(&report, "accounting").as_deref(),
                Some("none")
            );
        },
    );
}

#[test]
fn a_report_on_standard_output_comes_after_the_programs_output() {
    common::each_user(
        "a_report_on_standard_output_comes_after_the_programs_output",
        |who| {
            let dir = common::fresh_dir(&format!("report-stdout-{}", common::who_tag(who)));
            common::chmod(&dir, 0o777);
            for (report_flag, redirect) in [
                ("--report", ">"),
                ("--report-json", ">"),
                ("--report", ">>"),
            ] {
                let out_file = dir.join("out");
                std::fs::write(&out_file, "before\n").unwrap();
                common::chmod(&out_file, 0o666);
                // The shell opens the file, as a user's would; warden runs as `who`.
                let script = format!(
                "exec \"$@\" {report_flag} /dev/stdout -- /bin/sh -c 'echo one; echo two' {redirect} {}",
                out_file.display()
            );
                let cmd = common::warden_cmd(who);
                let program = cmd.get_program().to_owned();
                let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
                let mut sh = std::process::Command::new("/bin/sh");
                sh.arg("-c")
                    .arg(&script)
                    .arg("sh")
                    .arg(program)
                    .args(args)
                    .arg("run");
                sh.current_dir(&dir)
                    .env("TMPDIR", std::env::temp_dir())
                    .stdin(Stdio::null());
                let (out, _) = common::finish(sh, Duration::from_secs(60));
                common::assert_ok(&out);
                let text = std::fs::read_to_string(&out_file).unwrap();
                let expected_start = if redirect == ">>" {
                    "before\none\ntwo\n"
                } else {
                    "one\ntwo\n"
                };
                assert!(
                    text.starts_with(expected_start),
                    "{report_flag} {redirect}: the program's output was cut: {text:?}"
                );
                let report = &text[expected_start.len()..];
                let has_exit = if report_flag == "--report" {
                    report.contains("exitcode:0")
                } else {
                    report.contains("\"exitcode\": 0")
                };
                assert!(
                    has_exit,
                    "{report_flag} {redirect}: no report after the output: {text:?}"
                );
            }
        },
    );
}

/// The one line a refusal prints on stderr, after checking it is one line from warden. Under
/// warden, the outer run's closing line (its program, the inner warden, exited with status
/// 125) is not the refusal's.
fn one_sentence(out: &std::process::Output) -> String {
    let err = common::stderr(out);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("warden: the program exited with status 125; "))
        .collect();
    assert_eq!(lines.len(), 1, "one line expected: {err}");
    assert!(lines[0].starts_with("warden: "), "{err}");
    lines[0].to_owned()
}

#[test]
fn warden_inside_warden_refuses_in_one_sentence() {
    common::each_user("warden_inside_warden_refuses_in_one_sentence", |who| {
        let w = common::warden();
        let started = std::time::Instant::now();
        let out = common::run_warden_with_stdin(
            who,
            common::workdir(),
            &[
                "run",
                "--read",
                w,
                "--exec",
                w,
                "--",
                w,
                "run",
                "--",
                "/bin/true",
            ],
            Stdio::null(),
            Duration::from_secs(60),
        );
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "took {:?}",
            started.elapsed()
        );
        assert_eq!(out.status.code(), Some(125), "{}", common::stderr(&out));
        let line = one_sentence(&out);
        assert!(line.contains("seccomp filter above warden"), "{line}");
        assert!(line.contains("warden inside warden"), "{line}");
    });
}

#[test]
fn warden_under_another_supervisors_listener_refuses_in_one_sentence() {
    let supervise = common::c_program("supervise");
    common::each_user(
        "warden_under_another_supervisors_listener_refuses_in_one_sentence",
        |who| {
            let started = std::time::Instant::now();
            let mut cmd = common::warden_cmd(who);
            // setpriv (as nobody) or warden itself (as root) runs under the supervisor.
            let program = cmd.get_program().to_owned();
            let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
            cmd = std::process::Command::new(&supervise);
            cmd.arg(program)
                .args(args)
                .args(["run", "--", "/bin/true"])
                .current_dir(common::workdir())
                .stdin(Stdio::null())
                .env("TMPDIR", std::env::temp_dir());
            let (out, _) = common::finish(cmd, Duration::from_secs(60));
            assert!(started.elapsed() < Duration::from_secs(30));
            assert_eq!(out.status.code(), Some(125), "{}", common::stderr(&out));
            let line = one_sentence(&out);
            assert!(line.contains("listener is above warden"), "{line}");

            // `warden doctor` under it says so too.
            let cmd = common::warden_cmd(who);
            let program = cmd.get_program().to_owned();
            let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
            let mut cmd = std::process::Command::new(&supervise);
            cmd.arg(program)
                .args(args)
                .args(["doctor", "--json"])
                .current_dir(common::workdir())
                .stdin(Stdio::null());
            let (out, _) = common::finish(cmd, Duration::from_secs(60));
            common::assert_ok(&out);
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(v["facts"]["seccomp"]["listener"], "EBUSY", "{v:#}");
            assert!(
                v["facts"]["seccomp"]["filters"].as_u64() >= Some(1),
                "{v:#}"
            );
            assert!(
                v["advice"].to_string().contains("listener is above warden"),
                "{v:#}"
            );
        },
    );
}
