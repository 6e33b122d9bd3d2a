//! `warden learn` end to end: real workloads (a shell pipeline, a make build, python3, curl
//! against a local server) are learned, then run under the learned policy, which must allow
//! them and nothing more (every rule is needed, one more file is denied). Then the output
//! file's protection while learning, the warnings on risky grants, `--verify` and the exit
//! status, and the decision log's schema for every delegated call family.
//!
//! Each workload lives in a fresh directory D; the core tests run as whoever runs the tests and
//! as uid 65534 (D then belongs to 65534).

mod common;

use common::{stderr, stdout, As};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

const NOBODY: u32 = 65534;

fn s(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

/// A fresh directory for test `name` run as `who`, holding `files` (world-readable; owned by
/// uid 65534 when `who` is [`As::Nobody`], so that the program may write there too).
fn workload_dir(name: &str, who: As, files: &[(&str, &str)]) -> PathBuf {
    let dir = common::fresh_dir(&format!("learn-{name}-{who:?}"));
    for (rel, text) in files {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
            common::chmod(parent, 0o755);
        }
        common::write_file(&p, text, 0o644);
    }
    if who == As::Nobody {
        chown_tree(&dir, NOBODY);
    }
    dir
}

fn chown_tree(dir: &Path, uid: u32) {
    std::os::unix::fs::chown(dir, Some(uid), Some(uid)).unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() && !p.is_symlink() {
            chown_tree(&p, uid);
        } else {
            std::os::unix::fs::lchown(&p, Some(uid), Some(uid)).unwrap();
        }
    }
}

/// `warden ARGS...` as `who`, started from `cwd` (with `PWD` saying so, as a shell would), with
/// `env` added to its environment. The environment is otherwise [`common::warden_cmd`]'s plus
/// `HOME` only: what cargo adds (`LD_LIBRARY_PATH` into the toolchain) would send the dynamic
/// loader looking there, and the learned policies would say so.
fn warden_env(who: As, cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = common::warden_cmd(who);
    cmd.env_clear()
        .env("PATH", common::SYSTEM_PATH)
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .env("TMPDIR", std::env::temp_dir())
        .env("HOME", home());
    cmd.current_dir(cwd).env("PWD", cwd).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    common::finish(cmd, common::RUN_DEADLINE).0
}

/// The tests' home directory, which the programs see as `HOME`.
fn home() -> String {
    std::env::var("HOME").unwrap_or_else(|_| "/root".into())
}

fn warden(who: As, cwd: &Path, args: &[&str]) -> Output {
    warden_env(who, cwd, &[], args)
}

/// `warden learn -o POLICY [--verify] -- CMD...`.
fn learn(who: As, dir: &Path, policy: &Path, verify: bool, cmd: &[&str]) -> Output {
    let mut args = vec!["learn", "-o", s(policy)];
    if verify {
        args.push("--verify");
    }
    args.push("--");
    args.extend_from_slice(cmd);
    warden(who, dir, &args)
}

/// `warden run -v --policy POLICY -- CMD...`.
fn run_under(who: As, dir: &Path, policy: &Path, cmd: &[&str]) -> Output {
    let mut args = vec!["run", "-v", "--policy", s(policy), "--"];
    args.extend_from_slice(cmd);
    warden(who, dir, &args)
}

/// The rules of a policy text: its non-comment lines, without their trailing comments.
fn rules(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('#').next().unwrap().trim().to_owned())
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

/// Asserts a successful `warden learn --verify` whose replay found nothing to report.
fn assert_verified(o: &Output) {
    common::assert_ok(o);
    let err = stderr(o);
    assert!(
        err.contains(
            "warden learn: verify: the same command runs under the learned policy with no denial"
        ),
        "verify did not report a clean replay:\n{err}"
    );
    assert!(!err.contains("warden: denied"), "{err}");
}

/// Asserts a run with no denial that exited 0.
fn assert_clean_run(o: &Output) {
    common::assert_ok(o);
    assert!(
        !stderr(o).contains("warden: denied"),
        "a call was denied:\n{}",
        stderr(o)
    );
}

/// Asserts that the learned policy names nothing the workload never touched: no secret, nothing
/// of `$HOME`, none of `untouched` (paths in the workload's directory).
fn assert_no_stray_rule(policy: &str, untouched: &[PathBuf]) {
    let mut stray: Vec<String> = vec!["/etc/shadow".into(), "/root".into()];
    if home().len() > 1 {
        stray.push(home());
    }
    stray.extend(untouched.iter().map(|p| s(p).to_owned()));
    for r in rules(policy) {
        for bad in &stray {
            assert!(
                !r.split_whitespace().any(|w| w == bad || w.starts_with(&format!("{bad}/"))),
                "the learned policy has a rule for {bad}, which the workload never touched: {r}\n{policy}"
            );
        }
    }
}

/// The per-line removal check: for each rule line of `policy`, the workload run under the
/// policy without that line fails or has a call denied. `reset` runs before each run (to undo
/// what the previous one did). A rule learned only to read back what the run wrote or moved
/// (`# openat (written)`) is for the next run, from the state this one leaves: not checked.
fn assert_each_rule_needed(who: As, dir: &Path, policy: &Path, cmd: &[&str], reset: &dyn Fn()) {
    let text = read(policy);
    let lines: Vec<&str> = text.lines().collect();
    let policies = common::fresh_dir(&format!(
        "{}-without",
        dir.file_name().unwrap().to_str().unwrap()
    ));
    let mut checked = 0;
    for (i, line) in lines.iter().enumerate() {
        let read_back = line.split("    # ").nth(1).is_some_and(|calls| {
            calls
                .split(", ")
                .all(|c| c.contains(" (written)") || c.contains(" (moved)"))
        });
        if rules(line).is_empty() || read_back {
            continue;
        }
        let without: String = lines
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, l)| format!("{l}\n"))
            .collect();
        let p = policies.join(format!("without-{i}.policy"));
        common::write_file(&p, &without, 0o644);
        reset();
        let o = run_under(who, dir, &p, cmd);
        assert!(
            !o.status.success() || stderr(&o).contains("warden: denied"),
            "the rule `{line}` is not needed: without it the run succeeds with no denial\n\
             stdout:\n{}\nstderr:\n{}",
            stdout(&o),
            stderr(&o)
        );
        checked += 1;
    }
    assert!(checked > 0, "no rule to check in\n{text}");
}

// --- a. a shell pipeline ------------------------------------------------------------------------

const WORDS: &str = "pear\napple\nfig\nbanana\n";

fn shell_pipeline(who: As) {
    let d = workload_dir(
        "shell",
        who,
        &[
            ("in.txt", WORDS),
            ("extra.txt", "extra\n"),
            ("unrelated.txt", "unrelated\n"),
        ],
    );
    let ds = s(&d);
    let script = format!("cat {ds}/in.txt | tr a-z A-Z | sort > {ds}/out.txt; wc -l < {ds}/in.txt");
    let cmd = ["sh", "-c", script.as_str()];
    let policy = d.join("learned.policy");
    let out = d.join("out.txt");
    let want_out = "APPLE\nBANANA\nFIG\nPEAR\n";

    // 1. Learned, and replayed by --verify.
    let o = learn(who, &d, &policy, true, &cmd);
    assert_verified(&o);
    // Once while learning, once while verifying.
    assert_eq!(stdout(&o), "4\n4\n");
    assert_eq!(read(&out), want_out);
    let text = read(&policy);
    assert!(
        text.starts_with("# Learned by `warden learn` from: sh -c"),
        "{text}"
    );

    // 3. Exactly what it used: two rules, each needed, and the output read back by the next
    // run (it is there after this one).
    assert_eq!(
        sorted(rules(&text)),
        [
            format!("path-allow read {ds}/in.txt"),
            format!("path-allow read {ds}/out.txt"),
            format!("path-allow write {ds}/out.txt")
        ],
        "{text}"
    );
    assert_no_stray_rule(
        &text,
        &[
            d.join("extra.txt"),
            d.join("unrelated.txt"),
            d.join("learned.policy"),
        ],
    );

    // 2. Runs under the learned policy, with the same output and file.
    std::fs::remove_file(&out).unwrap();
    let o = run_under(who, &d, &policy, &cmd);
    assert_clean_run(&o);
    assert_eq!(stdout(&o), "4\n");
    assert_eq!(read(&out), want_out);

    assert_each_rule_needed(who, &d, &policy, &cmd, &|| {
        let _ = std::fs::remove_file(&out);
    });

    // 4. One more file is one file too many.
    let more = format!("{script}; cat {ds}/extra.txt");
    let o = run_under(who, &d, &policy, &["sh", "-c", &more]);
    assert!(!o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("warden: denied openat(\"{ds}/extra.txt\"")),
        "{err}"
    );
    assert!(!stdout(&o).contains("extra"), "{}", stdout(&o));
}

#[test]
fn shell_pipeline_round_trip() {
    shell_pipeline(As::Me);
}

#[test]
fn shell_pipeline_round_trip_as_nobody() {
    if common::can_run_as_nobody("shell_pipeline_round_trip") {
        shell_pipeline(As::Nobody);
    }
}

/// What `--base` already allows is not learned again, and `--verify` replays under the base and
/// the learned policy together.
#[test]
fn base_policy_rules_are_not_learned_again() {
    let d = workload_dir("base", As::Me, &[("in.txt", WORDS)]);
    let ds = s(&d);
    let base = d.join("base.policy");
    common::write_file(&base, format!("path-allow read {ds}/in.txt\n"), 0o644);
    let policy = d.join("learned.policy");
    let script = format!("sort {ds}/in.txt > {ds}/out.txt");
    let o = warden(
        As::Me,
        &d,
        &[
            "learn",
            "--base",
            s(&base),
            "-o",
            s(&policy),
            "--verify",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert_verified(&o);
    let text = read(&policy);
    assert_eq!(
        rules(&text),
        [
            format!("path-allow read {ds}/out.txt"),
            format!("path-allow write {ds}/out.txt")
        ],
        "{text}"
    );
    // Both together run it; the learned policy alone does not.
    std::fs::remove_file(d.join("out.txt")).unwrap();
    let o = warden(
        As::Me,
        &d,
        &[
            "run",
            "-v",
            "--policy",
            s(&base),
            "--policy",
            s(&policy),
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert_clean_run(&o);
    assert_eq!(read(&d.join("out.txt")), "apple\nbanana\nfig\npear\n");
    let o = run_under(As::Me, &d, &policy, &["sh", "-c", &script]);
    assert!(!o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.lines()
            .any(|l| l.starts_with("warden: denied ") && l.contains(&format!("(\"{ds}/in.txt\""))),
        "{err}"
    );
}

/// `--default-policy=no` learns everything the program needs: the policy learned that way,
/// used without the default policy, must run the program. (The dynamic loader is opened by
/// the kernel during execve, not through a delegated call, so the run never reports it; the
/// learned policy has no `exec` rule for it, and the program cannot start: status 126.)
#[test]
fn learning_from_nothing_gives_a_policy_that_runs_the_program() {
    let d = workload_dir("from-nothing", As::Me, &[("in.txt", WORDS)]);
    let ds = s(&d);
    let policy = d.join("learned.policy");
    let input = format!("{ds}/in.txt");
    let o = warden(
        As::Me,
        &d,
        &[
            "learn",
            "--default-policy=no",
            "-o",
            s(&policy),
            "--verify",
            "--",
            "/usr/bin/cat",
            &input,
        ],
    );
    let text = read(&policy);
    let r = rules(&text);
    assert!(
        r.contains(&"path-allow exec /usr/bin/cat".to_owned()),
        "{text}"
    );
    assert!(r.contains(&format!("path-allow read {input}")), "{text}");
    assert_no_stray_rule(&text, &[]);
    let err = stderr(&o);
    assert!(
        o.status.success() && err.contains("with no denial"),
        "the policy learned with --default-policy=no does not run the program it was learned \
         from:\nexit {:?}\nstderr:\n{err}\npolicy:\n{text}",
        o.status.code()
    );
    let o = warden(
        As::Me,
        &d,
        &[
            "run",
            "--default-policy=no",
            "--policy",
            s(&policy),
            "--",
            "/usr/bin/cat",
            &input,
        ],
    );
    assert_clean_run(&o);
    assert_eq!(stdout(&o), WORDS);
}

/// Learned from nothing, then run in the default view: a shell (`sh` is a symlink to `dash`),
/// Python's `multiprocessing.Pool` (its semaphores in `/dev/shm`; the libraries it loads are
/// symlinks to versioned files) and a program that only reads the directory it starts in.
/// The view holds a symlink only where a rule names it, so every link followed while learning
/// is learned; `/dev/shm` is learned as the sandbox's own (`path-map tmpfs /dev/shm`), never
/// the host's; the starting directory exists in the view.
fn from_nothing(who: As) {
    let d = workload_dir("from-nothing-view", who, &[("in.txt", WORDS)]);
    let pool = "import multiprocessing as m, os\nwith m.Pool(2) as p:\n    \
                print(sum(p.map(abs, range(-9, 9))))\nos.listdir('.'); print(os.getcwd())";
    let pool_out = format!("81\n{}\n", d.display());
    let cases: [(&str, &[&str], &str); 2] = [
        ("sh", &["sh", "-c", "echo from-nothing"], "from-nothing\n"),
        ("pool", &["/usr/bin/python3", "-c", pool], &pool_out),
    ];
    for (name, cmd, expected) in cases {
        if name == "pool" && !Path::new("/usr/bin/python3").exists() {
            common::skip(
                "learning_from_nothing_runs_links_shared_memory_and_the_start_directory",
                common::Lack::Program,
                "no /usr/bin/python3 (scripts/setup.sh installs it)",
            );
            continue;
        }
        let policy = d.join(format!("{name}.policy"));
        let mut args = vec![
            "learn",
            "--default-policy=no",
            "-o",
            s(&policy),
            "--verify",
            "--",
        ];
        args.extend_from_slice(cmd);
        let o = warden(who, &d, &args);
        let text = read(&policy);
        assert_verified(&o);
        if name == "pool" {
            assert!(
                rules(&text).contains(&"path-map tmpfs /dev/shm".to_owned()),
                "{text}"
            );
        }
        let mut args = vec!["run", "--default-policy=no", "--policy", s(&policy), "--"];
        args.extend_from_slice(cmd);
        let o = warden(who, &d, &args);
        assert_clean_run(&o);
        assert_eq!(stdout(&o), expected, "{name}: policy:\n{text}");
    }
}

/// `--verify` replays the command from the state it started from, not the one the learning
/// run left: a build learned from nothing in the project it stands in is built again (natively
/// the second `make` would do nothing), in a private copy, so the project is left as the
/// learning run left it. Checked from outside: the compiler ran twice, the project holds
/// exactly what one build makes.
fn replay(who: As) {
    let d = workload_dir(
        "replay",
        who,
        &[
            ("Makefile", "out: in.c\n\tcc -o out in.c\n"),
            ("in.c", "int main(void) { return 0; }\n"),
        ],
    );
    let policy = workload_dir("replay-policy", who, &[]).join("p.policy");
    let o = warden(
        who,
        &d,
        &[
            "learn",
            "--default-policy=no",
            "-o",
            s(&policy),
            "--verify",
            "--",
            "make",
        ],
    );
    assert_verified(&o);
    let built = stdout(&o).matches("cc -o out in.c").count();
    assert_eq!(
        built,
        2,
        "the verifying run did not build again:\n{}",
        stdout(&o)
    );
    let mut left: Vec<String> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["Makefile", "in.c", "out"]);
}

#[test]
fn verify_replays_from_the_state_the_program_started_in() {
    common::each_user(
        "verify_replays_from_the_state_the_program_started_in",
        replay,
    );
}

#[test]
fn learning_from_nothing_runs_links_shared_memory_and_the_start_directory() {
    common::each_user(
        "learning_from_nothing_runs_links_shared_memory_and_the_start_directory",
        from_nothing,
    );
}

// --- b. make of a small C project -----------------------------------------------------------------

const MAKEFILE: &str = "CC = cc
CFLAGS = -O0
OBJS = main.o a.o b.o c.o
prog: $(OBJS)
\t$(CC) $(CFLAGS) -o prog $(OBJS)
%.o: %.c lib.h
\t$(CC) $(CFLAGS) -c -o $@ $<
check: prog
\t./prog > result.txt
clean:
\trm -f prog result.txt $(OBJS)
.PHONY: check clean
";

/// What `make` builds, and what `make check` adds.
const BUILT: [&str; 5] = ["main.o", "a.o", "b.o", "c.o", "prog"];
const CHECKED: &str = "result.txt";

/// The project in a fresh directory, and a directory for the learned policy (not in the
/// project: see `learning_runs_programs_made_next_to_the_output`).
fn c_project(name: &str, who: As) -> (PathBuf, PathBuf) {
    let d = workload_dir(
        name,
        who,
        &[
            ("Makefile", MAKEFILE),
            ("lib.h", "int a(void);\nint b(void);\nint c(void);\n"),
            ("a.c", "#include \"lib.h\"\nint a(void) { return 20; }\n"),
            ("b.c", "#include \"lib.h\"\nint b(void) { return 20; }\n"),
            ("c.c", "#include \"lib.h\"\nint c(void) { return 2; }\n"),
            (
                "main.c",
                "#include <stdio.h>\n#include \"lib.h\"\n\
                 int main(void) { printf(\"%d\\n\", a() + b() + c()); return 0; }\n",
            ),
        ],
    );
    let out = common::fresh_dir(&format!("learn-{name}-{who:?}-out"));
    if who == As::Nobody {
        chown_tree(&out, NOBODY);
    }
    (d, out)
}

/// `make clean`, done by the test.
fn make_clean(d: &Path) {
    for f in BUILT.iter().chain([&CHECKED]) {
        let _ = std::fs::remove_file(d.join(f));
    }
}

fn assert_built(d: &Path) {
    for f in BUILT {
        assert!(d.join(f).exists(), "the build did not write {f}");
    }
    let native = std::process::Command::new(d.join("prog")).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&native.stdout), "42\n");
}

fn make_project(who: As) {
    let (d, out) = c_project("make", who);
    let ds = s(&d);
    let cmd = ["make", "-C", ds];
    let policy = out.join("learned.policy");

    let o = learn(who, &d, &policy, true, &cmd);
    assert_verified(&o);
    assert_built(&d);
    let text = read(&policy);

    // Five files written in D (four objects and the program): one D/* rule; the sources and
    // objects read: D/* again, which lets D itself be listed too (make lists it).
    assert_eq!(
        sorted(rules(&text)),
        [
            format!("path-allow read {ds}/*"),
            format!("path-allow write {ds}/*"),
        ],
        "{text}"
    );
    assert!(
        text.contains(&format!("path-allow write {ds}/*    # 5 entries of {ds}:")),
        "the write collapse does not say how many entries:\n{text}"
    );
    assert!(!text.contains("# WARNING:"), "{text}");
    assert_no_stray_rule(&text, &[]);

    // `make clean`, then the build under the learned policy does it all again.
    make_clean(&d);
    let o = run_under(who, &d, &policy, &cmd);
    assert_clean_run(&o);
    assert!(stdout(&o).contains("-o prog"), "{}", stdout(&o));
    assert_built(&d);

    assert_each_rule_needed(who, &d, &policy, &cmd, &|| make_clean(&d));
}

#[test]
fn make_round_trip() {
    make_project(As::Me);
}

#[test]
fn make_round_trip_as_nobody() {
    if common::can_run_as_nobody("make_round_trip") {
        make_project(As::Nobody);
    }
}

/// `make check` builds the program and runs it: the learned policy has `path-allow exec
/// D/prog` (with its warning), and after `make clean` the same build must run under it. (The
/// exec right is enforced by Landlock, whose rules are made for the files that exist when the
/// sandbox starts: a rule for an exact file that does not exist yet is dropped, and the
/// program then gets EACCES from the kernel, with no `warden: denied` line.)
#[test]
fn make_check_round_trip_runs_what_it_built() {
    let who = As::Me;
    let (d, out) = c_project("make-check", who);
    let ds = s(&d);
    let cmd = ["make", "-C", ds, "check"];
    let policy = out.join("learned.policy");

    let o = learn(who, &d, &policy, true, &cmd);
    assert_verified(&o);
    assert_built(&d);
    assert_eq!(read(&d.join(CHECKED)), "42\n");
    let text = read(&policy);
    assert_eq!(
        sorted(rules(&text)),
        [
            format!("path-allow exec {ds}/prog"),
            format!("path-allow read {ds}/*"),
            format!("path-allow write {ds}/*"),
        ],
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "# WARNING: executes from a place it may also write\npath-allow exec {ds}/prog"
        )),
        "{text}"
    );

    // With the program already built, the learned policy runs it.
    std::fs::remove_file(d.join(CHECKED)).unwrap();
    let o = run_under(who, &d, &policy, &cmd);
    assert_clean_run(&o);
    assert_eq!(read(&d.join(CHECKED)), "42\n");

    // After `make clean`, it must too: the policy allows executing D/prog.
    make_clean(&d);
    let o = run_under(who, &d, &policy, &cmd);
    assert!(
        o.status.success(),
        "after `make clean`, `make check` fails under the policy learned from it \
         (which allows exec of {ds}/prog):\nexit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(&o),
        stderr(&o)
    );
    assert_eq!(read(&d.join(CHECKED)), "42\n");
}

/// While learning, everything is allowed except the output file (and warden's private log
/// directory in `TMPDIR`): a program may build a tool and run it anywhere, as it would under
/// `warden run`. With `-o D/learned.policy`, a build in D that runs what it built (a `make
/// check`, a `./configure` running its conftest) must work as it does without warden.
#[test]
fn learning_runs_programs_made_next_to_the_output() {
    let d = workload_dir("exec-new", As::Me, &[]);
    let ds = s(&d);
    let policy = d.join("learned.policy");
    let tmp = std::env::temp_dir();
    let in_tmp = format!("{}/learn-new-tool-{}", s(&tmp), std::process::id());
    let mut failed = Vec::new();
    for (tool, output) in [
        // Next to the output.
        (format!("{ds}/tool"), policy.clone()),
        // In a new directory next to the output.
        (format!("{ds}/sub/tool"), policy.clone()),
        // Directly in TMPDIR, where warden keeps its private log directory.
        (
            in_tmp.clone(),
            common::workdir().join("learn-exec-new.policy"),
        ),
    ] {
        let script = format!(
            "mkdir -p $(dirname {tool}) && cp /bin/echo {tool} && {tool} ran; rm -f {tool}"
        );
        let o = learn(As::Me, &d, &output, false, &["sh", "-c", &script]);
        if stdout(&o) != "ran\n" || !o.status.success() {
            failed.push(format!(
                "{tool} (with -o {}): exit {:?}, stdout {:?}, stderr:\n{}",
                s(&output),
                o.status.code(),
                stdout(&o),
                stderr(&o)
            ));
        }
        let _ = std::fs::remove_file(&tool);
    }
    // The same programs run under `warden run` with the rights the learning run has.
    let o = warden(
        As::Me,
        &d,
        &[
            "run",
            "--read",
            ds,
            "--write",
            ds,
            "--unlink",
            ds,
            "--exec",
            ds,
            "--",
            "sh",
            "-c",
            &format!("cp /bin/echo {ds}/tool && {ds}/tool ran"),
        ],
    );
    assert_eq!(stdout(&o), "ran\n", "{}", stderr(&o));
    assert!(
        failed.is_empty(),
        "while learning, a program could not execute what it had just made:\n{}",
        failed.join("\n")
    );
}

// --- c. python3 and its standard library ---------------------------------------------------------

fn python_program(input: &str, extra: Option<&str>) -> String {
    let more = extra.map_or(String::new(), |e| format!("open(\"{e}\").read(); "));
    format!(
        "import json, collections, re, pathlib; {more}print(json.dumps(sorted(collections.Counter(open(\"{input}\").read().split()).items())))"
    )
}

fn python(who: As) {
    let d = workload_dir(
        "python",
        who,
        &[("in.txt", "b a b c b a\n"), ("extra.txt", "extra\n")],
    );
    let ds = s(&d);
    let input = format!("{ds}/in.txt");
    let program = python_program(&input, None);
    let cmd = ["/usr/bin/python3", "-c", program.as_str()];
    let policy = d.join("learned.policy");
    let want = "[[\"a\", 2], [\"b\", 3], [\"c\", 1]]\n";

    let o = learn(who, &d, &policy, true, &cmd);
    assert_verified(&o);
    assert_eq!(stdout(&o), format!("{want}{want}"));
    let text = read(&policy);
    // Hundreds of files under /usr opened and looked at: the default policy allows them all.
    assert_eq!(rules(&text), [format!("path-allow read {input}")], "{text}");
    assert!(rules(&text).iter().all(|r| !r.contains("/usr/")), "{text}");
    assert_no_stray_rule(&text, &[d.join("extra.txt")]);

    let o = run_under(who, &d, &policy, &cmd);
    assert_clean_run(&o);
    assert_eq!(stdout(&o), want);

    assert_each_rule_needed(who, &d, &policy, &cmd, &|| {});

    let more = python_program(&input, Some(&format!("{ds}/extra.txt")));
    let o = run_under(who, &d, &policy, &["/usr/bin/python3", "-c", &more]);
    assert!(!o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("warden: denied openat(\"{ds}/extra.txt\"")),
        "{err}"
    );
    // In the view the file is not there: the program gets the kernel's answer (as without
    // -v), and -v names the rule that would bring it in.
    assert!(err.contains("FileNotFoundError"), "{err}");
    assert_eq!(stdout(&o), "");
}

#[test]
fn python_round_trip() {
    python(As::Me);
}

#[test]
fn python_round_trip_as_nobody() {
    if common::can_run_as_nobody("python_round_trip") {
        python(As::Nobody);
    }
}

// --- d. curl against a local server ----------------------------------------------------------------

const BODY: &str = "hello from the test server\n";

/// A TCP server on 127.0.0.1 answering every connection with one fixed HTTP response, and the
/// number of connections it accepted. Its thread lives as long as the test binary.
struct HttpServer {
    port: u16,
    accepted: Arc<AtomicUsize>,
}

fn http_server() -> HttpServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&accepted);
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            count.fetch_add(1, Ordering::SeqCst);
            answer(&mut conn);
        }
    });
    HttpServer { port, accepted }
}

fn answer(conn: &mut TcpStream) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let _ = write!(
        conn,
        "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
}

fn curl(who: As) {
    let server = http_server();
    let other = http_server();
    let d = workload_dir("curl", who, &[]);
    let url = format!("http://127.0.0.1:{}/x", server.port);
    let cmd = ["/usr/bin/curl", "-sS", url.as_str()];
    let policy = d.join("learned.policy");

    let o = learn(who, &d, &policy, true, &cmd);
    assert_verified(&o);
    assert_eq!(stdout(&o), format!("{BODY}{BODY}"));
    assert_eq!(server.accepted.load(Ordering::SeqCst), 2);
    let text = read(&policy);
    assert_eq!(
        rules(&text),
        [format!("net-allow outgoing tcp 127.0.0.1 {}", server.port)],
        "{text}"
    );
    assert_no_stray_rule(&text, &[]);

    let o = run_under(who, &d, &policy, &cmd);
    assert_clean_run(&o);
    assert_eq!(stdout(&o), BODY);
    assert_eq!(server.accepted.load(Ordering::SeqCst), 3);

    assert_each_rule_needed(who, &d, &policy, &cmd, &|| {});

    // Another port of the same host: denied, and the server there never hears of it.
    let elsewhere = format!("http://127.0.0.1:{}/x", other.port);
    let o = run_under(who, &d, &policy, &["/usr/bin/curl", "-sS", &elsewhere]);
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "warden: denied connect(\"tcp 127.0.0.1:{}\")",
            other.port
        )),
        "{err}"
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(other.accepted.load(Ordering::SeqCst), 0);
}

#[test]
fn curl_round_trip() {
    curl(As::Me);
}

#[test]
fn curl_round_trip_as_nobody() {
    if common::can_run_as_nobody("curl_round_trip") {
        curl(As::Nobody);
    }
}

// --- 5. the output is out of the program's reach -----------------------------------------------

fn output_protected(who: As) {
    let d = workload_dir("output", who, &[]);
    let ds = s(&d);
    let policy = d.join("learned.policy");
    // The program may write everywhere while learning (that is what learning is), so it aims
    // its link at a canary of ours, never at a system file.
    let canary_dir = common::fresh_dir(&format!("learn-canary-{who:?}"));
    common::chmod(&canary_dir, 0o777);
    let canary = canary_dir.join("canary");
    common::write_file(&canary, "canary\n", 0o666);
    let cs = s(&canary).to_owned();
    let script = format!(
        "echo PWNED > {ds}/learned.policy; rm -f {ds}/learned.policy; \
         ln -s {cs} {ds}/learned.policy; echo PWNED >> {ds}/learned.policy; \
         mv {ds}/learned.policy {ds}/moved; \
         mv {ds} {ds}.moved; mkdir -p {ds}; echo PWNED > {ds}/learned.policy; \
         echo done"
    );
    // The program may write everywhere while learning, so it can replace the output path; warden
    // then refuses to write through whatever is there now, and prints the policy instead.
    let o = learn(who, &d, &policy, false, &["sh", "-c", &script]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(125), "{err}");
    assert!(
        err.contains("was replaced or linked elsewhere while the program ran")
            && err.contains("the learned policy is on stdout instead"),
        "{err}"
    );
    let out = stdout(&o);
    assert!(out.starts_with("done\n# Learned by"), "{out}");
    // Nothing warden wrote went where the program pointed it.
    assert!(!read(&canary).contains("# Learned by"), "{}", read(&canary));
    if let Ok(text) = std::fs::read_to_string(&policy) {
        assert!(!text.contains("# Learned by"), "{text}");
    }
    for moved in [
        d.join("moved"),
        PathBuf::from(format!("{ds}.moved/learned.policy")),
    ] {
        if let Ok(text) = std::fs::read_to_string(&moved) {
            assert!(
                !text.contains("# Learned by"),
                "{}: {text}",
                moved.display()
            );
        }
    }
    // A program that leaves the output alone gets it written.
    let _ = std::fs::remove_file(&policy);
    let o = learn(who, &d, &policy, false, &["sh", "-c", "echo done"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(read(&policy).starts_with("# Learned by"));
    assert!(
        stderr(&o).contains(&format!("warden learn: wrote {ds}/learned.policy")),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(format!("{ds}.moved"));
}

#[test]
fn output_is_out_of_the_programs_reach() {
    output_protected(As::Me);
}

#[test]
fn output_is_out_of_the_programs_reach_as_nobody() {
    if common::can_run_as_nobody("output_is_out_of_the_programs_reach") {
        output_protected(As::Nobody);
    }
}

// --- 6. risky grants -----------------------------------------------------------------------------

/// Learns `sh -c 'echo hi > FILE'` with `HOME` set to `home`; returns the policy.
fn learn_home_write(who: As, d: &Path, home: &str, file: &str) -> String {
    let script = format!("echo hi > {file}");
    let o = warden_env(
        who,
        d,
        &[("HOME", home)],
        &["learn", "--", "sh", "-c", &script],
    );
    common::assert_ok(&o);
    assert_eq!(read(Path::new(file)), "hi\n");
    stdout(&o)
}

fn home_writes(who: As) {
    let d = workload_dir("home", who, &[("home/.keep", "")]);
    let home = format!("{}/home", s(&d));
    let text = learn_home_write(who, &d, &home, &format!("{home}/x"));
    assert!(
        text.contains(&format!(
            "# WARNING: writes in your home directory ({home})\npath-allow write {home}/x"
        )),
        "{text}"
    );
    // Outside the home directory: no warning.
    let text = learn_home_write(who, &d, &home, &format!("{}/y", s(&d)));
    assert!(!text.contains("# WARNING:"), "{text}");
}

#[test]
fn writes_in_home_are_flagged() {
    home_writes(As::Me);
}

#[test]
fn writes_in_home_are_flagged_as_nobody() {
    if common::can_run_as_nobody("writes_in_home_are_flagged") {
        home_writes(As::Nobody);
    }
}

/// `HOME` spelled with a trailing slash, or through a symbolic link, is still the home
/// directory: the program's writes there deserve the same warning.
#[test]
fn writes_in_home_are_flagged_however_home_is_spelled() {
    let d = workload_dir("home-spelled", As::Me, &[("real/home/.keep", "")]);
    let ds = s(&d);
    std::os::unix::fs::symlink(format!("{ds}/real/home"), d.join("home")).unwrap();
    let mut missed = Vec::new();
    for (home, file) in [
        (format!("{ds}/real/home/"), format!("{ds}/real/home/x")),
        (format!("{ds}/home"), format!("{ds}/home/y")),
    ] {
        let text = learn_home_write(As::Me, &d, &home, &file);
        if !text.contains("# WARNING: writes in your home directory") {
            missed.push(format!("HOME={home}, writing {file}:\n{text}"));
        }
    }
    assert!(
        missed.is_empty(),
        "no home-directory warning:\n{}",
        missed.join("\n")
    );
}

/// A program that keeps its configuration and state in `HOME`: it reads a config file there,
/// counts its runs in a cache file it writes there (and reads back in the next run), and asks
/// git for the user's name when git is installed.
const HOME_APP: &str = "set -e
cat \"$HOME/.config/app/conf\"
mkdir -p \"$HOME/.cache/app\"
n=$(cat \"$HOME/.cache/app/count\" 2>/dev/null || echo 0)
echo $((n + 1)) > \"$HOME/.cache/app/count\"
if [ -x /usr/bin/git ]; then /usr/bin/git config --global --get user.name; fi
echo \"home=$HOME\"
";

/// Learned with the user's `HOME`, the policy replays with it: `--verify` finds no denial, and
/// `warden run` with the learned policy keeps `HOME` (the rules name paths in it), so the
/// program reads the same configuration and reads back the state it wrote, in a first run and
/// in the next one. `HOME` spelled as it is, and through a symlink in one of its directories
/// (the learned rules name paths resolved).
fn home_replay(who: As) {
    let d = workload_dir(
        "home-replay",
        who,
        &[
            ("real/home/.config/app/conf", "colour=blue\n"),
            ("real/home/.gitconfig", "[user]\n\tname = Learner\n"),
            ("app.sh", HOME_APP),
        ],
    );
    let ds = s(&d).to_owned();
    std::os::unix::fs::symlink(format!("{ds}/real"), d.join("link")).unwrap();
    if who == As::Nobody {
        std::os::unix::fs::lchown(d.join("link"), Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let git = Path::new("/usr/bin/git").exists();
    let script = format!("{ds}/app.sh");
    let cmd = ["sh", script.as_str()];
    let count = d.join("real/home/.cache/app/count");
    for home in [format!("{ds}/real/home"), format!("{ds}/link/home")] {
        let _ = std::fs::remove_dir_all(d.join("real/home/.cache"));
        let policy = d.join("home.policy");
        let mut args = vec!["learn", "-o", s(&policy), "--verify", "--"];
        args.extend_from_slice(&cmd);
        let o = warden_env(who, &d, &[("HOME", &home)], &args);
        let text = read(&policy);
        assert_verified(&o);
        // The script and the files in HOME, named as they resolve; nothing of the scratch
        // directory the learning run had.
        for r in rules(&text) {
            assert!(r.contains(&format!(" {ds}/")), "HOME={home}: {r}\n{text}");
            assert!(!r.contains("/link/"), "HOME={home}: {r}\n{text}");
        }
        // Learned, then verified: two runs.
        assert_eq!(read(&count), "2\n", "HOME={home}\n{text}");

        // From the state before the learning run: the first run, then the next one, which
        // reads back what the first wrote.
        std::fs::remove_dir_all(d.join("real/home/.cache")).unwrap();
        let mut expected = "colour=blue\n".to_owned();
        if git {
            expected.push_str("Learner\n");
        }
        expected.push_str(&format!("home={home}\n"));
        for n in ["1\n", "2\n"] {
            let mut args = vec!["run", "-v", "--policy", s(&policy), "--"];
            args.extend_from_slice(&cmd);
            let o = warden_env(who, &d, &[("HOME", &home)], &args);
            assert_clean_run(&o);
            assert!(
                stderr(&o).contains(&format!("warden: HOME is yours, {home}")),
                "HOME={home}: {}\n{text}",
                stderr(&o)
            );
            assert_eq!(stdout(&o), expected, "HOME={home}\n{text}");
            assert_eq!(read(&count), n, "HOME={home}\n{text}");
        }
    }
}

#[test]
fn a_policy_learned_with_home_replays_with_it() {
    common::each_user("a_policy_learned_with_home_replays_with_it", home_replay);
}

/// A tree with `fanout` directories at the top, each holding two levels of two directories
/// with two files in each: below the top, no directory has enough entries for a `DIR/*` rule
/// of its own.
fn tree(fanout: usize) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for i in 0..fanout {
        for j in 0..2 {
            for k in 0..2 {
                for f in 0..2 {
                    files.push((
                        format!("tree/t{i}/a{j}/b{k}/f{f}"),
                        format!("{i}{j}{k}{f}\n"),
                    ));
                }
            }
        }
    }
    files.push(("tree/t3/secret".into(), "the secret\n".into()));
    files
}

/// A walk of a whole tree is learned as the directory and its tree (`D`, `D/*`), not one rule
/// per directory; the compacted policy runs the walk again, and a file the base denies inside
/// the tree stays refused.
fn tree_walk(who: As) {
    let files = tree(6);
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    let d = workload_dir("tree-walk", who, &refs);
    let top = format!("{}/tree", s(&d));
    let secret = format!("{top}/t3/secret");
    let out = workload_dir("tree-walk-policies", who, &[]);
    let base = out.join("base.policy");
    common::write_file(&base, format!("path-deny {secret}\n"), 0o644);
    let policy = out.join("learned.policy");
    let cmd = ["find", top.as_str()];
    let mut args = vec![
        "learn",
        "--base",
        s(&base),
        "-o",
        s(&policy),
        "--verify",
        "--",
    ];
    args.extend_from_slice(&cmd);
    let o = warden(who, &d, &args);
    assert_verified(&o);
    let text = read(&policy);
    // 6 + 12 + 24 directories walked; one rule each but for the top's, before compaction.
    let rules = rules(&text);
    // `{top}/*` lets {top} itself be listed too: no rule of its own.
    assert!(
        !rules.contains(&format!("path-allow read {top}"))
            && rules.contains(&format!("path-allow read {top}/*")),
        "{text}"
    );
    assert!(
        rules.len() <= 4,
        "a walk of 42 directories learned {} rules:\n{text}",
        rules.len()
    );
    assert!(
        text.contains(&format!("6 entries of {top}, and 36 paths beneath them")),
        "{text}"
    );

    // The walk runs again under the compacted policy: every directory and file, but the
    // denied one.
    let native = std::process::Command::new("find")
        .arg(&top)
        .output()
        .unwrap();
    let native: Vec<&str> = std::str::from_utf8(&native.stdout)
        .unwrap()
        .lines()
        .filter(|l| *l != secret)
        .collect();
    let run = |cmd: &[&str]| {
        let mut args = vec!["run", "--policy", s(&base), "--policy", s(&policy), "--"];
        args.extend_from_slice(cmd);
        warden(who, &d, &args)
    };
    let o = run(&cmd);
    assert_clean_run(&o);
    let walked = stdout(&o);
    for line in &native {
        assert!(
            walked.lines().any(|w| w == *line),
            "{line} not walked:\n{walked}"
        );
    }
    // A file in the tree reads; the denied one does not.
    let o = run(&["cat", &format!("{top}/t5/a1/b1/f1")]);
    assert_clean_run(&o);
    assert_eq!(stdout(&o), "5111\n");
    let o = run(&["cat", &secret]);
    assert!(
        !o.status.success(),
        "the denied file was read: {}",
        stdout(&o)
    );
    assert!(!stdout(&o).contains("the secret"));
}

#[test]
fn a_tree_walk_is_learned_as_the_directory_and_its_tree() {
    common::each_user(
        "a_tree_walk_is_learned_as_the_directory_and_its_tree",
        tree_walk,
    );
}

#[test]
fn reading_a_secret_is_flagged_and_verify_says_it_stays_denied() {
    if !common::require_root("reading_a_secret_is_flagged") {
        return;
    }
    let d = workload_dir("secret", As::Me, &[]);
    let policy = d.join("learned.policy");
    let o = warden(
        As::Me,
        &d,
        &[
            "learn",
            "--default-policy=yes",
            "-o",
            s(&policy),
            "--verify",
            "--",
            "cat",
            "/etc/shadow",
        ],
    );
    let text = read(&policy);
    assert!(
        text.contains(
            "# WARNING: a secret the default policy denies (path-deny); it stays denied unless \
             you run with --default-policy=no\npath-allow read /etc/shadow"
        ),
        "{text}"
    );
    assert_eq!(rules(&text), ["path-allow read /etc/shadow"], "{text}");
    // And so the replay is denied the file: --verify says so and exits 1.
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "warden learn: verify: openat(\"/etc/shadow\") is denied under the learned policy"
        ),
        "{err}"
    );
    assert!(
        err.contains("exited with 1 under the learned policy, 0 while learning"),
        "{err}"
    );
    assert!(!err.contains("with no denial"), "{err}");
}

// --- 7. exit status and --verify -----------------------------------------------------------------

#[test]
fn the_exit_status_is_the_programs() {
    let d = workload_dir("exit", As::Me, &[]);
    let policy = d.join("learned.policy");
    for verify in [false, true] {
        let o = learn(As::Me, &d, &policy, verify, &["sh", "-c", "exit 3"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "verify {verify}: {err}");
        assert!(err.contains("the program exited with status 3"), "{err}");
        assert_eq!(err.contains("with no denial"), verify, "{err}");
        let text = read(&policy);
        assert!(
            text.starts_with("# Learned by `warden learn` from: sh -c exit 3"),
            "{text}"
        );
    }
    // Without -o, the policy goes to stdout.
    let o = warden(As::Me, &d, &["learn", "--", "sh", "-c", "exit 4"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("# Learned by"), "{}", stdout(&o));
}

/// A program that does something else the second time (it leaves a marker behind while
/// learning): the replay reads a file it never read while learning, and --verify says so.
#[test]
fn verify_flags_a_run_that_needs_more_than_was_learned() {
    let d = workload_dir("verify-differs", As::Me, &[("secret.txt", "secret\n")]);
    let ds = s(&d);
    let policy = d.join("learned.policy");
    let script =
        format!("if [ -e {ds}/marker ]; then cat {ds}/secret.txt; else touch {ds}/marker; fi");
    let o = learn(As::Me, &d, &policy, true, &["sh", "-c", &script]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "warden learn: verify: openat(\"{ds}/secret.txt\")"
        )),
        "{err}"
    );
    assert!(
        err.contains("warden learn: verify: the program exited with 1 under the learned policy, 0 while learning"),
        "{err}"
    );
    assert!(!err.contains("with no denial"), "{err}");
    assert!(!stdout(&o).contains("secret"), "{}", stdout(&o));
    assert_eq!(
        rules(&read(&policy)),
        [
            format!("path-allow read {ds}/marker"),
            format!("path-allow write {ds}/marker")
        ]
    );
}

/// A program that writes a file with a new name each run (a timestamped log) and goes on when
/// it cannot: the replay's creation is denied, and --verify must say so, not report a clean
/// replay. (The filter meant for lookups of absent paths, which fail either way, also drops
/// denied creations, whose target does not exist precisely because they were denied.)
#[test]
fn verify_flags_a_denied_creation_of_a_new_name() {
    let d = workload_dir("verify-newname", As::Me, &[]);
    let ds = s(&d);
    let policy = d.join("learned.policy");
    let script = format!("echo data > {ds}/log.$(date +%s%N); echo done");
    let o = learn(As::Me, &d, &policy, true, &["sh", "-c", &script]);
    let err = stderr(&o);
    // The replay could not create its file...
    assert!(err.contains("Permission denied"), "{err}");
    let logs = std::fs::read_dir(&d)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("log.")
        })
        .count();
    assert_eq!(logs, 1, "only the learning run wrote its log");
    // ... and --verify must not call that a replay with no denial.
    assert!(
        !err.contains("with no denial"),
        "--verify reports a clean replay although the replay's openat(O_CREAT) of a new {ds}/log.* was denied:\n{err}"
    );
    assert!(
        err.contains(&format!("warden learn: verify: openat(\"{ds}/log.")),
        "{err}"
    );
    assert_eq!(o.status.code(), Some(1), "{err}");
}

// --- 8. the decision log's schema ----------------------------------------------------------------

/// Makes at least one delegated call of every family, allowed or (for the families whose
/// allowed calls take no policy decision: memfd, socket) refused, plus a few denials.
const DRIVER: &str = r#"
import ctypes, os, socket, subprocess, sys
P_UDP, P_TCP, P_DENIED = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
uid, gid = os.getuid(), os.getgid()
libc = ctypes.CDLL(None, use_errno=True)
done, failed = [], []
def step(name, f, fails=False):
    try:
        f()
        (failed if fails else done).append(name)
    except OSError as e:
        (done if fails else failed).append(name)
        if not fails:
            print(f"{name}: {e}", file=sys.stderr)
with open("f.txt", "w") as f:
    f.write("hello\n")
step("stat", lambda: os.stat("f.txt"))
step("access", lambda: os.access("f.txt", os.R_OK))
step("symlink", lambda: os.symlink("f.txt", "ln"))
step("readlink", lambda: os.readlink("ln"))
step("mkdir", lambda: os.mkdir("d"))
step("mknod", lambda: os.mkfifo("d/fifo"))
step("link", lambda: os.link("f.txt", "hard"))
step("rename", lambda: os.rename("hard", "hard2"))
step("chmod", lambda: os.chmod("f.txt", 0o640))
step("chown", lambda: os.chown("f.txt", uid, gid))
step("truncate", lambda: os.truncate("f.txt", 3))
step("utime", lambda: os.utime("f.txt", (1, 2)))
step("statfs", lambda: os.statvfs("."))
step("setxattr", lambda: os.setxattr("f.txt", "user.k", b"v"))
step("getxattr", lambda: os.getxattr("f.txt", "user.k"))
step("listxattr", lambda: os.listxattr("f.txt"))
def inotify():
    fd = libc.inotify_init1(0)
    if fd < 0 or libc.inotify_add_watch(fd, b"f.txt", 0x2) < 0:
        raise OSError(ctypes.get_errno(), "inotify")
    os.close(fd)
step("inotify", inotify)
def fdmeta():
    fd = os.open("f.txt", os.O_RDONLY)
    os.fchmod(fd, 0o600)
    os.fchown(fd, uid, gid)
    os.setxattr(fd, "user.j", b"w")
    os.close(fd)
step("fdmeta", fdmeta)
step("memfd", lambda: os.close(os.memfd_create("m")))
def memfd_exec():
    fd = libc.memfd_create(b"x", 0x10)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "memfd_create(MFD_EXEC)")
step("memfd-exec-refused", memfd_exec, fails=True)
step("exec", lambda: subprocess.run(["/bin/true"], check=True))
def unix():
    s = socket.socket(socket.AF_UNIX); s.bind("sock"); s.listen()
    c = socket.socket(socket.AF_UNIX); c.connect("sock"); c.close(); s.close()
step("unix", unix)
step("raw-socket-refused", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP), fails=True)
def udp():
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(b"x", ("127.0.0.1", P_UDP)); u.close()
step("udp", udp)
def tcp():
    s = socket.socket(); s.bind(("127.0.0.1", P_TCP)); s.listen()
    c = socket.socket(); c.connect(("127.0.0.1", P_TCP))
    a, _ = s.accept(); a.close(); c.close(); s.close()
step("tcp", tcp)
step("connect-refused", lambda: socket.create_connection(("127.0.0.1", P_DENIED)), fails=True)
step("shadow-refused", lambda: open("/etc/shadow"), fails=True)
step("chdir", lambda: os.chdir("d"))
step("unlink", lambda: os.unlink("fifo"))
os.chdir("..")
step("rmdir", lambda: os.rmdir("d"))
print("done:" + "".join(" " + n for n in done))
print("failed:" + "".join(" " + n for n in failed))
"#;

/// The family of each delegated call, as in `crates/warden/src/syscalls.rs`.
fn family(syscall: &str) -> Option<&'static str> {
    Some(match syscall {
        "open" | "openat" | "openat2" | "creat" => "open",
        "stat" | "lstat" | "newfstatat" | "statx" => "stat",
        "access" | "faccessat" | "faccessat2" => "access",
        "readlink" | "readlinkat" => "readlink",
        "mkdir" | "mkdirat" => "mkdir",
        "mknod" | "mknodat" => "mknod",
        "unlink" | "unlinkat" | "rmdir" => "unlink",
        "rename" | "renameat" | "renameat2" => "rename",
        "link" | "linkat" => "link",
        "symlink" | "symlinkat" => "symlink",
        "chmod" | "fchmodat" | "fchmodat2" => "chmod",
        "chown" | "lchown" | "fchownat" => "chown",
        "truncate" => "truncate",
        "utime" | "utimes" | "futimesat" | "utimensat" => "utime",
        "chdir" => "chdir",
        "statfs" => "statfs",
        "getxattr" | "lgetxattr" | "listxattr" | "llistxattr" | "setxattr" | "lsetxattr"
        | "removexattr" | "lremovexattr" => "xattr",
        "inotify_add_watch" => "inotify-add-watch",
        "execve" | "execveat" => "exec",
        "connect" | "bind" => "socket-address",
        "memfd_create" => "memfd",
        "fchmod" | "fchown" | "fsetxattr" | "fremovexattr" => "fd-metadata",
        "socket" => "socket",
        "sendto" | "sendmsg" | "sendmmsg" => "send",
        "accept" | "accept4" => "accept",
        _ => return None,
    })
}

/// Every family the driver exercises: all of them.
const FAMILIES: [&str; 25] = [
    "open",
    "stat",
    "access",
    "readlink",
    "mkdir",
    "mknod",
    "unlink",
    "rename",
    "link",
    "symlink",
    "chmod",
    "chown",
    "truncate",
    "utime",
    "chdir",
    "statfs",
    "xattr",
    "inotify-add-watch",
    "exec",
    "socket-address",
    "memfd",
    "fd-metadata",
    "socket",
    "send",
    "accept",
];

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `file:line:col`.
fn is_rule_span(r: &str) -> bool {
    let mut parts = r.rsplitn(3, ':');
    let col = parts.next().unwrap_or("");
    let line = parts.next().unwrap_or("");
    let file = parts.next().unwrap_or("");
    !file.is_empty()
        && [line, col]
            .iter()
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Checks one log line against the schema in docs/guide.md; returns its syscall and decision.
fn check_line(line: &str, sandbox: &mut Option<String>) -> Result<(String, bool), String> {
    use serde_json::Value;
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON ({e})"))?;
    let o = v.as_object().ok_or("not an object")?;
    let documented = [
        "v",
        "time",
        "sandbox",
        "pid",
        "tid",
        "comm",
        "syscall",
        "args",
        "flags",
        "target",
        "access",
        "decision",
        "rule",
        "reason",
        "errno",
        "errno_name",
        "latency_us",
    ];
    for k in documented {
        if !o.contains_key(k) {
            return Err(format!("no key {k}"));
        }
    }
    let str_of = |k: &str| v[k].as_str().ok_or(format!("{k} is not a string"));
    if v["v"].as_u64() != Some(1) {
        return Err("v is not 1".into());
    }
    if !v["time"].as_f64().is_some_and(|t| t > 1.0e9) {
        return Err("time is not seconds since the epoch".into());
    }
    let sb = str_of("sandbox")?;
    let (pid, rand) = sb
        .split_once('-')
        .ok_or("sandbox is not WARDENPID-RANDOM")?;
    if pid.parse::<u32>().is_err() || rand.is_empty() {
        return Err("sandbox is not WARDENPID-RANDOM".into());
    }
    match sandbox {
        Some(first) if first != sb => return Err(format!("sandbox {sb}, not {first}")),
        Some(_) => {}
        None => *sandbox = Some(sb.to_owned()),
    }
    if !(v["pid"].is_null() || v["pid"].is_u64()) {
        return Err("pid is neither a number nor null".into());
    }
    if !v["tid"].is_u64() {
        return Err("tid is not a number".into());
    }
    str_of("comm")?;
    let syscall = str_of("syscall")?.to_owned();
    let args = v["args"].as_array().ok_or("args is not an array")?;
    if args.len() != 6
        || !args.iter().all(|a| {
            a.as_str()
                .and_then(|a| a.strip_prefix("0x"))
                .is_some_and(|h| u64::from_str_radix(h, 16).is_ok())
        })
    {
        return Err("args is not 6 hex strings".into());
    }
    let open_family = ["open", "openat", "creat"].contains(&syscall.as_str());
    match &v["flags"] {
        serde_json::Value::Null if !open_family => {}
        serde_json::Value::String(f) if open_family && f.starts_with("O_") => {}
        other => return Err(format!("flags {other} for {syscall}")),
    }
    str_of("target")?;
    match &v["access"] {
        Value::Null => {}
        Value::String(a) if ["read", "write", "unlink", "exec"].contains(&a.as_str()) => {}
        other => return Err(format!("access {other}")),
    }
    let allowed = match str_of("decision")? {
        "allow" => true,
        "deny" => false,
        other => return Err(format!("decision {other}")),
    };
    match &v["rule"] {
        Value::Null if !allowed => {}
        Value::String(r) if is_rule_span(r) => {}
        other => return Err(format!("rule {other} (decision allow needs one)")),
    }
    let reason = str_of("reason")?;
    if allowed != reason.is_empty() {
        return Err("a reason for an allowed call, or none for a denial".into());
    }
    match (&v["errno"], &v["errno_name"]) {
        (Value::Null, Value::Null) if allowed => {}
        (Value::Number(n), Value::String(name)) if !allowed && n.is_u64() => {
            if name.is_empty() || !name.starts_with('E') {
                return Err(format!("errno_name {name}"));
            }
        }
        (Value::Number(n), Value::Null) if !allowed && n.is_u64() => {}
        (e, n) => return Err(format!("errno {e}, errno_name {n}")),
    }
    if !v["latency_us"].as_f64().is_some_and(|l| l >= 0.0) {
        return Err("latency_us is not a number >= 0".into());
    }
    Ok((syscall, allowed))
}

fn decision_log(who: As) {
    let d = workload_dir("log", who, &[]);
    let (udp, tcp, denied) = (free_port(), free_port(), free_port());
    let net = d.join("net.policy");
    common::write_file(
        &net,
        format!(
            "net-allow outgoing udp 127.0.0.1 {udp}\n\
             net-allow incoming tcp 127.0.0.1 {tcp}\n\
             net-allow outgoing tcp 127.0.0.1 {tcp}\n"
        ),
        0o644,
    );
    let log = d.join("log.jsonl");
    let (u, t, x) = (udp.to_string(), tcp.to_string(), denied.to_string());
    let o = warden(
        who,
        &d,
        &[
            "run",
            "--policy",
            s(&net),
            "--log",
            s(&log),
            "--",
            "/usr/bin/python3",
            "-c",
            DRIVER,
            &u,
            &t,
            &x,
        ],
    );
    common::assert_ok(&o);
    let out = stdout(&o);
    assert!(
        out.lines().any(|l| l == "failed:"),
        "some calls of the driver failed:\n{out}\n{}",
        stderr(&o)
    );

    let text = read(&log);
    let mut sandbox = None;
    let mut seen: std::collections::BTreeMap<&'static str, Vec<String>> = Default::default();
    let (mut allows, mut denials) = (0, 0);
    let mut bad = Vec::new();
    for (n, line) in text.lines().enumerate() {
        match check_line(line, &mut sandbox) {
            Ok((syscall, allowed)) => {
                if allowed {
                    allows += 1;
                } else {
                    denials += 1;
                }
                match family(&syscall) {
                    Some(f) => seen.entry(f).or_default().push(syscall),
                    None => bad.push(format!("line {}: {syscall} is not a delegated call", n + 1)),
                }
            }
            Err(e) => bad.push(format!("line {}: {e}: {line}", n + 1)),
        }
    }
    assert!(
        bad.is_empty(),
        "log lines off the schema:\n{}",
        bad.join("\n")
    );
    assert!(
        allows > 0 && denials >= 4,
        "{allows} allowed, {denials} denied"
    );
    let missing: Vec<&str> = FAMILIES
        .iter()
        .copied()
        .filter(|f| !seen.contains_key(f))
        .collect();
    assert!(
        missing.is_empty(),
        "no log line for the families {missing:?}; seen: {:?}",
        seen.keys().collect::<Vec<_>>()
    );
}

#[test]
fn the_decision_log_follows_its_schema_for_every_family() {
    decision_log(As::Me);
}

#[test]
fn the_decision_log_follows_its_schema_for_every_family_as_nobody() {
    if common::can_run_as_nobody("the_decision_log_follows_its_schema_for_every_family") {
        decision_log(As::Nobody);
    }
}

/// Issue 14 item 6: what every learned policy used to get wrong, each learned with `--verify`
/// from a clean state, as both users.
/// - `sh` is a symlink (to dash): warden starts the program itself, so the learned policy must
///   name the link and its target, or it cannot start it at all (`--default-policy=no`);
/// - `env true` searches PATH with execve: the tries that find nothing are not exec rules;
/// - the host's `PWD` and `OLDPWD` (which a shell looks at) are not the program's;
/// - `> /dev/null` works while learning (device nodes need rules of their own);
/// - a temporary directory with a random name is learned as the pattern every run's matches.
#[test]
fn learned_policies_start_the_program_and_hold_no_per_run_names() {
    common::each_user(
        "learned_policies_start_the_program_and_hold_no_per_run_names",
        |who| {
            let d = workload_dir("per-run", who, &[]);
            let elsewhere = common::fresh_dir(&format!("learn-elsewhere-{who:?}"));
            let policy = d.join("p.policy");
            let env = [("OLDPWD", s(&elsewhere))];
            let learn_with = |base: &str, cmd: &[&str]| {
                let mut args = vec![
                    "learn",
                    "--default-policy",
                    base,
                    "-o",
                    s(&policy),
                    "--verify",
                ];
                args.push("--");
                args.extend_from_slice(cmd);
                let o = warden_env(who, &d, &env, &args);
                assert_verified(&o);
                read(&policy)
            };
            // From nothing: the program through its link.
            let text = learn_with("no", &["sh", "-c", "echo hi"]);
            let r = rules(&text);
            assert!(
                r.contains(&"path-allow exec /usr/bin/sh".to_owned()),
                "{text}"
            );
            // A PATH search: no rule for the directories where `true` is not.
            let text = learn_with("no", &["env", "true"]);
            assert!(!text.contains("/usr/local/bin/true"), "{text}");
            // With the default policy a shell needs nothing of the host's directories.
            let text = learn_with(
                "yes",
                &["bash", "-c", "echo > /dev/null; cd /; cd - >/dev/null"],
            );
            assert_eq!(rules(&text), Vec::<String>::new(), "{text}");
            assert!(
                !text.contains(s(&d)) && !text.contains(s(&elsewhere)),
                "{text}"
            );
            // A temporary directory of its own in /tmp: with the default policy, in the
            // sandbox's own /tmp, which needs no rule; from nothing, a rule for its kind of name.
            let own_tmp = [
                "/usr/bin/python3",
                "-c",
                "import tempfile, os\n\
                 d = tempfile.mkdtemp(dir='/tmp')\n\
                 open(d + '/f', 'w').write('x')\n\
                 os.remove(d + '/f'); os.rmdir(d)",
            ];
            let text = learn_with("yes", &own_tmp);
            assert!(rules(&text).iter().all(|l| !l.contains("/tmp")), "{text}");
            let text = learn_with("no", &own_tmp);
            let r = rules(&text);
            assert!(
                r.contains(&"path-allow write /tmp/tmp*".to_owned()),
                "{text}"
            );
            assert!(
                r.iter()
                    .all(|l| !l.contains("/tmp/tmp") || l.ends_with("/tmp/tmp*")),
                "{text}"
            );
            let _ = std::fs::remove_dir_all(&d);
            let _ = std::fs::remove_dir_all(&elsewhere);
        },
    );
}

/// `warden learn -- make` from a project, with the default policy: the program starts in its
/// own scratch directory, fails there, and learn says so and names `--here`; `--verify` says the
/// program failed both times rather than only "no denial". `learn --here` learns the project:
/// the learned policy starts its runs there (`starting_dir`), `--verify` builds it again, and
/// `warden run` with that policy, started anywhere, builds the project from a clean state.
fn learn_here(who: As) {
    let d = workload_dir(
        "here",
        who,
        &[
            ("Makefile", "out: in.c\n\tcc -o out in.c\n"),
            ("in.c", "int main(void) { return 0; }\n"),
        ],
    );
    let policy = workload_dir("here-policy", who, &[]).join("p.policy");
    let o = warden(
        who,
        &d,
        &["learn", "-o", s(&policy), "--verify", "--", "make"],
    );
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "warden learn: it started in its own scratch directory, not in {}: --here learns it",
            s(&d)
        )),
        "{err}"
    );
    assert!(
        err.contains("no denial (it exited with status 2 both times"),
        "{err}"
    );
    assert!(
        !d.join("out").exists(),
        "the scratch run built in the project"
    );
    let o = warden(
        who,
        &d,
        &[
            "learn",
            "--here",
            "-o",
            s(&policy),
            "--verify",
            "--",
            "make",
        ],
    );
    assert_verified(&o);
    assert_eq!(
        stdout(&o).matches("cc -o out in.c").count(),
        2,
        "{}",
        stdout(&o)
    );
    let text = read(&policy);
    assert!(
        rules(&text).contains(&format!("starting_dir {}", s(&d))),
        "{text}"
    );
    // From elsewhere, on a clean project: the run starts in it and builds it.
    std::fs::remove_file(d.join("out")).unwrap();
    let elsewhere = workload_dir("here-elsewhere", who, &[]);
    let o = warden(
        who,
        &elsewhere,
        &["run", "--policy", s(&policy), "--", "make"],
    );
    assert_clean_run(&o);
    assert_eq!(stdout(&o), "cc -o out in.c\n", "{}", stderr(&o));
    assert!(
        d.join("out").exists(),
        "the run did not build in the project"
    );
    // --here and --chdir are one choice.
    let o = warden(
        who,
        &d,
        &["learn", "--here", "--chdir", s(&d), "--", "true"],
    );
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("'--here' cannot be used with '--chdir"),
        "{}",
        stderr(&o)
    );
    // The learned --here is the project's whole tree, as `warden run --here` gives it.
    for access in ["read", "write", "unlink", "exec"] {
        assert!(
            rules(&text).contains(&format!("path-allow {access} {}/*", s(&d))),
            "{text}"
        );
    }
}

#[test]
fn learn_here_learns_the_project_and_its_runs_start_there() {
    common::each_user(
        "learn_here_learns_the_project_and_its_runs_start_there",
        learn_here,
    );
}
