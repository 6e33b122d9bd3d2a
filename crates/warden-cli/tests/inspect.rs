//! `warden ps` and `warden inspect` against live sandboxes: the right processes and descriptors
//! (with the rules that granted them), and nobody sees into another user's sandbox.

mod common;

use common::As;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A sandbox left running: `sh` holding FILE open on descriptor 5, with `sleep | cat` below it.
struct Live {
    child: Child,
    marker: String,
    opts: Vec<String>,
    /// The `TMPDIR` it runs with, and its `warden ps` is asked with (`None`: the tests' own).
    tmp: Option<PathBuf>,
    /// Where its stderr goes (removed on drop).
    stderr: PathBuf,
}

impl Live {
    fn start(who: As, dir: &Path, tag: &str) -> Live {
        Live::start_in(who, None, dir, tag)
    }

    /// [`Live::start`], with `TMPDIR` `tmp` when given ([`Live::run_in`]).
    fn start_in(who: As, tmp: Option<&Path>, dir: &Path, tag: &str) -> Live {
        let file = dir.join("held.txt");
        common::write_file(&file, "held\n", 0o644);
        // The granting rule of a descriptor is known for those the agent opened: the opens go
        // to it here (`never`), in a view too, where the kernel would otherwise open them
        // (and inspect shows no rule for those, docs/guide.md "What the default changed").
        Live::run_in(
            who,
            tmp,
            tag,
            &["--read", s(dir), "--fast-path=never"],
            |marker| format!("exec 5<{}; : {marker}; sleep 60 | cat", s(&file)),
        )
    }

    /// A sandbox running `sh -c SCRIPT` with the extra `warden run` options `opts`; `script`
    /// gets the marker that tells this sandbox apart in `warden ps` (it must appear in it).
    fn run(who: As, tag: &str, opts: &[&str], script: impl FnOnce(&str) -> String) -> Live {
        Live::run_in(who, None, tag, opts, script)
    }

    /// [`Live::run`], with `TMPDIR` set to `tmp` (and no `XDG_RUNTIME_DIR`) when given.
    fn run_in(
        who: As,
        tmp: Option<&Path>,
        tag: &str,
        opts: &[&str],
        script: impl FnOnce(&str) -> String,
    ) -> Live {
        let marker = format!("warden-inspect-{tag}-{}", std::process::id());
        let (stderr, err) = common::capture_file("stderr");
        let mut cmd = in_tmp(common::warden_cmd(who), tmp);
        let child = cmd
            .arg("run")
            .args(opts)
            .args(["--", "sh", "-c", &script(&marker)])
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .expect("warden starts");
        Live {
            child,
            marker,
            opts: opts.iter().map(|o| (*o).to_owned()).collect(),
            tmp: tmp.map(Path::to_path_buf),
            stderr,
        }
    }

    /// Waits until `warden ps --json` (as `who`) lists this sandbox; returns its entry.
    fn entry(&self, who: As) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(e) = ps_in(who, self.tmp.as_deref())
                .0
                .into_iter()
                .find(|e| self.is(e))
            {
                // Wait for the whole pipeline to be up: its opens reach the agent. A sandbox
                // in a view that does not send them there (the default) may never ask the
                // agent anything; the test waits for what it needs itself.
                let delegating = self.opts.iter().any(|o| o == "--fast-path=never");
                if !delegating || e["delegated"].as_u64().unwrap_or(0) > 0 {
                    std::thread::sleep(Duration::from_millis(300));
                    return e;
                }
            }
            assert!(
                Instant::now() < deadline,
                "the sandbox never showed up in `warden ps`"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn is(&self, e: &serde_json::Value) -> bool {
        e["command"].as_array().is_some_and(|c| {
            c.iter()
                .any(|a| a.as_str().is_some_and(|a| a.contains(&self.marker)))
        })
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.stderr);
    }
}

/// `cmd` with `TMPDIR` set to `tmp` and no `XDG_RUNTIME_DIR`, when `tmp` is given: its registry
/// (a user's, not root's, which is /run/warden) is then in `tmp`.
fn in_tmp(mut cmd: Command, tmp: Option<&Path>) -> Command {
    if let Some(t) = tmp {
        cmd.env("TMPDIR", t).env_remove("XDG_RUNTIME_DIR");
    }
    cmd
}

/// How long a `warden ps` or `warden inspect` may take before it counts as hung.
const LISTING_DEADLINE: Duration = Duration::from_secs(30);

/// `warden ARGS` as `who` with `TMPDIR` `tmp`, killed (and the test failed) if it hangs.
fn listing(who: As, tmp: Option<&Path>, args: &[&str]) -> std::process::Output {
    let mut cmd = in_tmp(common::warden_cmd(who), tmp);
    cmd.args(args);
    let (o, _) = common::finish(cmd, LISTING_DEADLINE);
    assert!(
        !common::stderr(&o).contains("TIMEOUT"),
        "warden {args:?} hung: {}",
        common::stderr(&o)
    );
    o
}

fn ps(who: As) -> Vec<serde_json::Value> {
    ps_in(who, None).0
}

/// `warden ps --json` as `who` with `TMPDIR` `tmp`: its entries, and its stderr.
fn ps_in(who: As, tmp: Option<&Path>) -> (Vec<serde_json::Value>, String) {
    let o = listing(who, tmp, &["ps", "--json"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let entries = serde_json::from_slice::<Vec<serde_json::Value>>(&o.stdout)
        .unwrap_or_else(|e| panic!("ps --json: {e}: {}", common::stdout(&o)));
    (entries, common::stderr(&o))
}

fn inspect(who: As, target: &str) -> std::process::Output {
    common::warden_cmd(who)
        .args(["inspect", "--json", target])
        .output()
        .unwrap()
}

fn as_uid(uid: u32, args: &[&str]) -> std::process::Output {
    Command::new("/usr/bin/setpriv")
        .args([
            &format!("--reuid={uid}"),
            &format!("--regid={uid}"),
            "--clear-groups",
            "--",
            common::warden(),
        ])
        .args(args)
        .env("TMPDIR", std::env::temp_dir())
        .current_dir(common::workdir())
        .output()
        .unwrap()
}

/// The inspection of `live` as `who` shows sh, sleep and cat, each holding the file on
/// descriptor 5 with the `--read` rule that granted it.
fn check_inspection(who: As, live: &Live, dir: &Path) -> serde_json::Value {
    let entry = live.entry(who);
    let id = entry["id"].as_str().unwrap().to_owned();
    // The registry is rewritten twice a second: wait until it has all three processes and the
    // descriptor's grant.
    let deadline = Instant::now() + Duration::from_secs(10);
    let doc = loop {
        let o = inspect(who, &id);
        assert!(o.status.success(), "{}", common::stderr(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let ready = doc["processes"].as_array().is_some_and(|ps| {
            ps.len() >= 3
                && ps.iter().all(|p| {
                    p["fds"]
                        .as_array()
                        .is_some_and(|fds| fds.iter().any(|d| d["fd"] == 5 && !d["rule"].is_null()))
                })
        });
        if ready || Instant::now() > deadline {
            break doc;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let procs = doc["processes"].as_array().unwrap();
    let comms: Vec<&str> = procs.iter().map(|p| p["comm"].as_str().unwrap()).collect();
    for want in ["sh", "sleep", "cat"] {
        assert!(comms.contains(&want), "{comms:?}\n{doc:#}");
    }
    let held = dir.join("held.txt");
    let meta = std::fs::metadata(&held).unwrap();
    use std::os::unix::fs::MetadataExt;
    for p in procs {
        let fd5 = p["fds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["fd"] == 5)
            .unwrap_or_else(|| panic!("no descriptor 5 in {p:#}"));
        assert_eq!(fd5["target"], s(&held), "{fd5}");
        assert_eq!(fd5["mode"], "r", "{fd5}");
        assert_eq!(fd5["kind"], "file", "{fd5}");
        assert_eq!(fd5["ino"], meta.ino(), "{fd5}");
        assert_eq!(fd5["dev"], meta.dev(), "{fd5}");
        assert_eq!(fd5["rule"], "--read:1:1", "{fd5}");
        assert!(p["cwd"].as_str().unwrap().contains("warden-"), "{p}");
    }
    // A pipe joins sleep and cat.
    let pipe = |comm: &str, fd: i64| {
        let p = procs.iter().find(|p| p["comm"] == comm).unwrap();
        p["fds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["fd"] == fd)
            .map(|d| (d["kind"].clone(), d["ino"].clone()))
    };
    let (sleep_out, cat_in) = (pipe("sleep", 1), pipe("cat", 0));
    assert!(
        sleep_out.is_some() && sleep_out == cat_in && sleep_out.as_ref().unwrap().0 == "pipe",
        "{doc:#}"
    );
    // Looking it up by the pid of a process inside gives the same sandbox.
    let cat_pid = procs.iter().find(|p| p["comm"] == "cat").unwrap()["pid"].to_string();
    let by_pid: serde_json::Value = serde_json::from_slice(&inspect(who, &cat_pid).stdout).unwrap();
    assert_eq!(by_pid["sandbox"]["id"], id.as_str());
    entry
}

#[test]
fn inspect_shows_processes_descriptors_and_rules() {
    let dir = common::fresh_dir("inspect-root");
    let live = Live::start(As::Me, &dir, "root");
    let entry = check_inspection(As::Me, &live, &dir);
    assert_eq!(entry["network"], "private");
    assert_eq!(entry["mode"], "delegated");
    assert!(
        entry["policies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "<default>"),
        "{entry}"
    );
    // The table form names the same things.
    let o = common::warden_cmd(As::Me).args(["ps"]).output().unwrap();
    assert!(
        common::stdout(&o).contains(entry["id"].as_str().unwrap()),
        "{}",
        common::stdout(&o)
    );
}

#[test]
fn nobody_cannot_see_into_root_sandboxes() {
    if !common::can_run_as_nobody("nobody_cannot_see_into_root_sandboxes") {
        return;
    }
    let dir = common::fresh_dir("inspect-private");
    let live = Live::start(As::Me, &dir, "private");
    let entry = live.entry(As::Me);
    let id = entry["id"].as_str().unwrap();
    assert!(
        !ps(As::Nobody).iter().any(|e| live.is(e)),
        "nobody's `warden ps` lists root's sandbox"
    );
    for target in [
        id.to_owned(),
        entry["warden_pid"].to_string(),
        entry["init_pid"].to_string(),
    ] {
        let o = inspect(As::Nobody, &target);
        assert!(
            !o.status.success() && o.stdout.is_empty(),
            "nobody inspected root's sandbox as {target}: {}",
            common::stdout(&o)
        );
        assert!(
            common::stderr(&o).contains("no running sandbox of yours"),
            "{}",
            common::stderr(&o)
        );
    }
}

#[test]
fn users_see_their_own_and_root_sees_everyone() {
    if !common::can_run_as_nobody("users_see_their_own_and_root_sees_everyone") {
        return;
    }
    let dir = common::fresh_dir("inspect-nobody");
    common::chmod(&dir, 0o755);
    let live = Live::start(As::Nobody, &dir, "nobody");
    // Its owner sees and inspects it ...
    check_inspection(As::Nobody, &live, &dir);
    // ... root too ...
    let entry = live.entry(As::Me);
    assert_eq!(entry["uid"], 65534);
    let id = entry["id"].as_str().unwrap();
    assert!(inspect(As::Me, id).status.success());
    // ... and another unprivileged user does not.
    let o = as_uid(65533, &["inspect", id]);
    assert!(!o.status.success(), "uid 65533 inspected nobody's sandbox");
    let o = as_uid(65533, &["ps", "--json"]);
    assert!(
        !common::stdout(&o).contains(&live.marker),
        "uid 65533 lists nobody's sandbox"
    );
}

/// A name with everything a terminal obeys: a window-title sequence (OSC ... BEL), a
/// clear-screen (CSI 2 J), a newline that would forge a line of output, a C1 CSI character, and a
/// byte that is not UTF-8.
const EVIL: &[u8] = b"evil\x1b]0;pwned\x07\x1b[2J\nFD 9 shadow\xc2\x9b31m\xff";
/// [`EVIL`] as warden must show it.
const EVIL_SHOWN: &str = "evil\\x1b]0;pwned\\x07\\x1b[2J\\nFD 9 shadow\\u{9b}31m\\xff";

/// Whether `hay` contains `needle`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The sandbox creates and holds open a file named [`EVIL`] (and has an ESC in its own command
/// line): `warden inspect` and `warden ps` show both escaped, and never write a raw ESC, the raw
/// name, or a C1 control to the operator's terminal.
#[test]
fn inspect_and_ps_escape_names_the_sandbox_chose() {
    let dir = common::fresh_dir("inspect-evil");
    let held = dir.join(std::ffi::OsStr::from_bytes(EVIL));
    // The script builds the name itself (printf's octal escapes), so it comes from the sandbox.
    let live = Live::run(As::Me, "evil", &["--write", s(&dir)], |marker| {
        format!(
            "name=$(printf 'evil\\033]0;pwned\\007\\033[2J\\nFD 9 shadow\\302\\23331m\\377'); \
             exec 5>\"{}/$name\"; : {marker} \x1b[2J; sleep 60",
            s(&dir)
        )
    });
    let entry = live.entry(As::Me);
    let id = entry["id"].as_str().unwrap().to_owned();
    // Wait until the file exists and a process holds it.
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let o = common::warden_cmd(As::Me)
            .args(["inspect", &id])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", common::stderr(&o));
        if contains(&o.stdout, EVIL_SHOWN.as_bytes()) || Instant::now() > deadline {
            break o.stdout;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(held.exists(), "the sandbox did not create {held:?}");
    let shown = String::from_utf8_lossy(&text);
    assert!(
        contains(&text, EVIL_SHOWN.as_bytes()),
        "inspect does not show the escaped name {EVIL_SHOWN}:\n{shown}"
    );
    assert!(!text.contains(&0x1b), "inspect wrote a raw ESC:\n{shown:?}");
    assert!(
        !contains(&text, EVIL),
        "inspect wrote the raw name:\n{shown:?}"
    );
    assert!(
        !contains(&text, "\u{9b}".as_bytes()),
        "inspect wrote a raw C1 CSI:\n{shown:?}"
    );
    assert!(
        shown.contains(&format!("{} \\x1b[2J", live.marker)),
        "inspect does not show the command line escaped:\n{shown}"
    );
    // The table of `warden ps` holds the command line, ESC included.
    let o = common::warden_cmd(As::Me).args(["ps"]).output().unwrap();
    let ps = String::from_utf8_lossy(&o.stdout);
    assert!(ps.contains(&format!("{} \\x1b[2J", live.marker)), "{ps}");
    assert!(!o.stdout.contains(&0x1b), "ps wrote a raw ESC:\n{ps:?}");
    // JSON keeps the name as data (serde escapes its control characters itself).
    let o = inspect(As::Me, &id);
    assert!(!o.stdout.contains(&0x1b), "inspect --json wrote a raw ESC");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let lossy = String::from_utf8_lossy(EVIL).into_owned();
    assert!(
        doc["processes"].as_array().unwrap().iter().any(|p| p["fds"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["target"].as_str().is_some_and(|t| t.ends_with(&lossy)))),
        "{doc:#}"
    );
}

/// A denied open of a file named [`EVIL`]: the `-v` line names it escaped, with no raw ESC.
#[test]
fn verbose_denials_escape_the_path() {
    let dir = common::fresh_dir("verbose-evil");
    let file = dir.join(std::ffi::OsStr::from_bytes(EVIL));
    common::write_file(&file, "secret\n", 0o644);
    let mut cmd = common::warden_cmd(As::Me);
    // The sandbox spells the name itself (warden's own arguments must be UTF-8).
    let script = format!(
        "cat \"{}/$(printf 'evil\\033]0;pwned\\007\\033[2J\\nFD 9 shadow\\302\\23331m\\377')\"",
        s(&dir)
    );
    cmd.args(["run", "-v", "--", "sh", "-c", &script]);
    let (o, _) = common::finish(cmd, common::RUN_DEADLINE);
    assert!(!o.status.success(), "cat read a file the policy denies");
    let err = common::stderr(&o);
    let line = err
        .lines()
        .find(|l| l.starts_with("warden: denied open"))
        .unwrap_or_else(|| panic!("no -v denial line:\n{err}"));
    assert!(
        line.contains("evil\\x1b]0;pwned\\x07\\x1b[2J\\nFD 9"),
        "{line}"
    );
    assert!(!o.stderr.contains(&0x1b), "-v wrote a raw ESC:\n{err:?}");
    assert!(
        !contains(&o.stderr, "\u{9b}".as_bytes()),
        "-v wrote a raw C1 CSI:\n{err:?}"
    );
}

/// A listing whose reader went away ends as `ls | head` does: killed by SIGPIPE, quietly,
/// never with a panic about a broken pipe (`warden check --explain | head`).
#[test]
fn listings_end_quietly_when_their_reader_is_gone() {
    use std::os::unix::process::ExitStatusExt;
    for args in [
        &["check", "--show-default", "--explain"][..],
        &["check", "--syscalls"],
        &["ps"],
    ] {
        let (reader, writer) = rustix::pipe::pipe().expect("pipe");
        drop(reader);
        let o = common::warden_cmd(As::Me)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(writer))
            .output()
            .expect("warden runs");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "warden {args:?}: {err}");
        // `ps` with nothing to list writes nothing, and exits 0.
        assert!(
            o.status.signal() == Some(libc::SIGPIPE) || (args == ["ps"] && o.status.success()),
            "warden {args:?}: {:?} {err}",
            o.status
        );
    }
}

/// A fresh directory for one test's `TMPDIR`, sticky and writable by everyone as /tmp is: uid
/// 65534 can make its registry there, and squat the names of others'.
fn private_tmp(name: &str) -> PathBuf {
    let dir = common::fresh_dir(name);
    common::chmod(&dir, 0o1777);
    dir
}

/// Runs `script` with `sh -e` as uid 65534, the attacker; the test fails if it does.
fn as_nobody_sh(script: &str) {
    let o = Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .args(["/bin/sh", "-ec", script])
        .current_dir("/")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "as nobody: {script}: {}",
        common::stderr(&o)
    );
}

/// `p` quoted for `sh`.
fn q(p: &Path) -> String {
    format!("'{}'", s(p).replace('\'', r"'\''"))
}

/// The start time of `pid` (field 22 of /proc/PID/stat), as a registry entry records it.
fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 1..];
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// A process of uid 65534's named `warden` (a copy of sleep by that name): what the registry
/// used to take as proof that an entry's warden runs.
struct Impostor {
    child: Child,
    pid: u32,
}

impl Impostor {
    fn start(stage: &Path) -> Impostor {
        let bin = stage.join("warden");
        std::fs::copy("/usr/bin/sleep", &bin).unwrap();
        common::chmod(&bin, 0o755);
        let child = Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&bin)
            .arg("60")
            .spawn()
            .unwrap();
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default() != "warden\n"
        {
            assert!(
                Instant::now() < deadline,
                "the impostor never became `warden`"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Impostor { child, pid }
    }
}

impl Drop for Impostor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether any entry of `entries` has a command line holding `marker`.
fn lists(entries: &[serde_json::Value], marker: &str) -> bool {
    entries
        .iter()
        .any(|e| e["command"].to_string().contains(marker))
}

/// Uid 65534 forges entries in its registry, to be believed by root: a copy of a running root
/// sandbox's entry (its id, pid, start time and init) claiming to be its own, the same claiming
/// uid 0 in a `warden-run-0` it made, an entry of pid 1 claiming uid 0, and entries for a
/// process of its own named `warden`, one pointing into root's sandbox and one without a start
/// time (as the registry wrote them before). Root's `warden ps` lists none of them, its
/// `warden inspect` of the sandbox's id or init shows the real sandbox with its real rules, and
/// the impostor is no sandbox; nobody's own `warden ps` believes none either.
#[test]
fn forged_entries_are_not_believed() {
    if !common::can_run_as_nobody("forged_entries_are_not_believed") {
        return;
    }
    let dir = common::fresh_dir("inspect-forged");
    let stage = common::fresh_dir("inspect-forged-stage");
    let tmp = private_tmp("inspect-forged-tmp");
    let live = Live::start(As::Me, &dir, "forged");
    let real = live.entry(As::Me);
    let id = real["id"].as_str().unwrap().to_owned();
    let init = real["init_pid"].as_u64().unwrap();
    let impostor = Impostor::start(&stage);
    let decoy = format!("warden-inspect-decoy-{}", std::process::id());
    use std::os::unix::fs::MetadataExt;
    let held = std::fs::metadata(dir.join("held.txt")).unwrap();
    let forge = |name: &str, edit: &dyn Fn(&mut serde_json::Value)| {
        let mut e = real.clone();
        e["command"] = serde_json::json!(["sh", "-c", decoy]);
        e["started"] = serde_json::json!(0.0);
        e["uid"] = serde_json::json!(65534);
        e["grants"] = serde_json::json!([{
            "dev": held.dev(), "ino": held.ino(), "path": "/decoy", "rule": "decoy:6:6"
        }]);
        edit(&mut e);
        std::fs::write(stage.join(name), serde_json::to_vec(&e).unwrap()).unwrap();
        common::chmod(&stage.join(name), 0o644);
    };
    let ipid = impostor.pid;
    forge("same", &|_| {});
    forge("root", &|e| e["uid"] = 0.into());
    forge("pid1", &|e| {
        e["id"] = "1-00000000".into();
        e["warden_pid"] = 1.into();
        e["warden_start"] = start_time(1).into();
        e["uid"] = 0.into();
    });
    forge("into", &|e| {
        e["id"] = format!("{ipid}-0000000d").into();
        e["warden_pid"] = ipid.into();
        e["warden_start"] = start_time(ipid).into();
    });
    forge("named", &|e| {
        e["id"] = format!("{ipid}-0000000e").into();
        e["warden_pid"] = ipid.into();
        e.as_object_mut().unwrap().remove("warden_start");
    });
    let (t, st) = (q(&tmp), q(&stage));
    as_nobody_sh(&format!(
        "umask 077; mkdir {t}/warden-run-65534 {t}/warden-run-0; \
         cp {st}/same {t}/warden-run-65534/{id}.json; cp {st}/root {t}/warden-run-0/{id}.json; \
         cp {st}/pid1 {t}/warden-run-65534/1-00000000.json; \
         cp {st}/into {t}/warden-run-65534/{ipid}-0000000d.json; \
         cp {st}/named {t}/warden-run-65534/{ipid}-0000000e.json"
    ));

    let (entries, err) = ps_in(As::Me, Some(&tmp));
    assert!(
        !lists(&entries, &decoy),
        "root lists a forged entry: {entries:#?}"
    );
    let ours: Vec<_> = entries.iter().filter(|e| e["id"] == id.as_str()).collect();
    assert!(
        ours.len() == 1 && live.is(ours[0]) && ours[0]["uid"] == 0,
        "{ours:#?}"
    );
    assert!(
        !entries.iter().any(|e| e["id"] == "1-00000000"),
        "root lists pid 1 as a sandbox: {entries:#?}"
    );
    // root is told the `warden-run-0` it did not make is not believed.
    assert!(
        err.contains(&format!("{}/warden-run-0", s(&tmp))) && err.contains("uid 65534"),
        "{err}"
    );
    let (entries, _) = ps_in(As::Nobody, Some(&tmp));
    assert!(
        !lists(&entries, &decoy),
        "nobody lists a forged entry: {entries:#?}"
    );

    // The sandbox root inspects is the real one, whichever way it is named.
    let deadline = Instant::now() + Duration::from_secs(10);
    let inspected = |target: &str| {
        let o = listing(As::Me, Some(&tmp), &["inspect", "--json", target]);
        assert!(o.status.success(), "{}", common::stderr(&o));
        assert!(
            !common::stdout(&o).contains("decoy"),
            "root inspected a forged entry: {}",
            common::stdout(&o)
        );
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let doc = loop {
        let doc = inspected(&id);
        let rule = doc["processes"].as_array().and_then(|ps| {
            ps.iter().find_map(|p| {
                p["fds"]
                    .as_array()?
                    .iter()
                    .find(|d| d["fd"] == 5)
                    .map(|d| d["rule"].clone())
            })
        });
        if rule.is_some_and(|r| !r.is_null()) || Instant::now() > deadline {
            break doc;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(live.is(&doc["sandbox"]), "{doc:#}");
    let fd5 = doc["processes"][0]["fds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["fd"] == 5)
        .cloned()
        .unwrap_or_else(|| panic!("no descriptor 5: {doc:#}"));
    assert_eq!(fd5["rule"], "--read:1:1", "{fd5}");
    assert_eq!(inspected(&init.to_string())["sandbox"]["id"], id.as_str());
    let o = listing(As::Me, Some(&tmp), &["inspect", &ipid.to_string()]);
    assert!(
        !o.status.success() && common::stderr(&o).contains("no running sandbox"),
        "root inspected the impostor: {}",
        common::stdout(&o)
    );
}

/// Uid 65534 fills its registry with what used to hang or grow `warden ps`: a FIFO, a link to
/// /dev/zero, a sparse 1 GiB file, and in place of registry directories a link to /dev/zero and
/// FIFOs (one named as root's). `warden ps` and `inspect`, as root and as nobody, end well
/// within the deadline, list none of it, and stay small.
#[test]
fn odd_files_in_a_registry_neither_hang_nor_grow_ps() {
    if !common::can_run_as_nobody("odd_files_in_a_registry_neither_hang_nor_grow_ps") {
        return;
    }
    let tmp = private_tmp("inspect-odd-tmp");
    let t = q(&tmp);
    as_nobody_sh(&format!(
        "umask 077; d={t}/warden-run-65534; mkdir $d; \
         mkfifo $d/1-00000001.json; ln -s /dev/zero $d/1-00000002.json; \
         truncate -s 1G $d/1-00000003.json; \
         ln -s /dev/zero {t}/warden-run-65534.zero; mkfifo {t}/warden-run-65534.fifo; \
         mkfifo {t}/warden-run-0"
    ));
    for who in [As::Me, As::Nobody] {
        for args in [&["ps", "--json"][..], &["ps"], &["inspect", "1"]] {
            let o = listing(who, Some(&tmp), args);
            assert!(
                o.status.success() || args[0] == "inspect",
                "{who:?} {args:?}: {}",
                common::stderr(&o)
            );
            assert!(
                !common::stdout(&o).contains("1-0000000"),
                "{who:?} {args:?} lists a planted file: {}",
                common::stdout(&o)
            );
        }
    }
    // The largest child this test binary has waited for: warden grew to 526 MB on /dev/zero.
    let rss = warden::sys::usage::Usage::of_self_and_reaped()
        .unwrap()
        .max_rss_kib;
    assert!(rss < 256 * 1024, "{rss} KiB");
}

/// Root makes uid 65534's usual registry directory (`$TMPDIR/warden-run-65534`) first, and puts
/// in it a copy of nobody's running sandbox's entry with another command. Nobody's run is not
/// hidden: it registers in a private directory of its own instead and says so; nobody's
/// `warden ps` lists it once, with its real command, and names the directory it ignored;
/// root's lists it once, as uid 65534's; the squatter's copy is listed by neither.
#[test]
fn a_squatted_registry_directory_hides_nothing() {
    if !common::can_run_as_nobody("a_squatted_registry_directory_hides_nothing") {
        return;
    }
    let dir = common::fresh_dir("inspect-squat");
    let tmp = private_tmp("inspect-squat-tmp");
    let squat = tmp.join("warden-run-65534");
    std::fs::create_dir(&squat).unwrap();
    common::chmod(&squat, 0o700);
    let live = Live::start_in(As::Nobody, Some(&tmp), &dir, "squat");
    let entry = live.entry(As::Nobody);
    let id = entry["id"].as_str().unwrap().to_owned();
    let decoy = format!("warden-inspect-squatter-{}", std::process::id());
    let mut copy = entry.clone();
    copy["command"] = serde_json::json!(["sh", "-c", decoy]);
    copy["started"] = serde_json::json!(0.0);
    std::fs::write(
        squat.join(format!("{id}.json")),
        serde_json::to_vec(&copy).unwrap(),
    )
    .unwrap();

    let (mine, err) = ps_in(As::Nobody, Some(&tmp));
    let listed: Vec<_> = mine.iter().filter(|e| e["id"] == id.as_str()).collect();
    assert!(listed.len() == 1 && live.is(listed[0]), "{mine:#?}");
    assert!(!lists(&mine, &decoy), "nobody lists the squatter's entry");
    assert!(
        err.contains(&format!("ignored {}", s(&squat))) && err.contains("uid 0"),
        "{err}"
    );
    let (all, _) = ps_in(As::Me, Some(&tmp));
    let listed: Vec<_> = all.iter().filter(|e| e["id"] == id.as_str()).collect();
    assert!(
        listed.len() == 1 && live.is(listed[0]) && listed[0]["uid"] == 65534,
        "{all:#?}"
    );
    assert!(!lists(&all, &decoy), "root lists the squatter's entry");
    let o = listing(As::Nobody, Some(&tmp), &["inspect", "--json", &id]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    // The run said where it went instead, and that is a private directory of nobody's.
    let said = std::fs::read_to_string(&live.stderr).unwrap();
    assert!(
        said.contains(&format!(
            "not registering this run in {}: it belongs to uid 0",
            s(&squat)
        )),
        "{said}"
    );
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let fallback: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("warden-run-65534.")
        })
        .map(|e| e.metadata().unwrap())
        .collect();
    assert!(
        fallback.len() == 1
            && fallback[0].uid() == 65534
            && fallback[0].permissions().mode() & 0o7777 == 0o700,
        "{fallback:?}"
    );
}
