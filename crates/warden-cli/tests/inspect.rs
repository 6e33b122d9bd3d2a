//! `warden ps` and `warden inspect` against live sandboxes: the right processes and descriptors
//! (with the rules that granted them), and nobody sees into another user's sandbox.

mod common;

use common::As;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
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
}

impl Live {
    fn start(who: As, dir: &Path, tag: &str) -> Live {
        let file = dir.join("held.txt");
        common::write_file(&file, "held\n", 0o644);
        // The granting rule of a descriptor is known for those the agent opened: the opens go
        // to it here (`never`), in a view too, where the kernel would otherwise open them
        // (and inspect shows no rule for those, README "What the default changed").
        Live::run(
            who,
            tag,
            &["--read", s(dir), "--fast-path=never"],
            |marker| format!("exec 5<{}; : {marker}; sleep 60 | cat", s(&file)),
        )
    }

    /// A sandbox running `sh -c SCRIPT` with the extra `warden run` options `opts`; `script`
    /// gets the marker that tells this sandbox apart in `warden ps` (it must appear in it).
    fn run(who: As, tag: &str, opts: &[&str], script: impl FnOnce(&str) -> String) -> Live {
        let marker = format!("warden-inspect-{tag}-{}", std::process::id());
        let child = common::warden_cmd(who)
            .arg("run")
            .args(opts)
            .args(["--", "sh", "-c", &script(&marker)])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("warden starts");
        Live {
            child,
            marker,
            opts: opts.iter().map(|o| (*o).to_owned()).collect(),
        }
    }

    /// Waits until `warden ps --json` (as `who`) lists this sandbox; returns its entry.
    fn entry(&self, who: As) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(e) = ps(who).into_iter().find(|e| self.is(e)) {
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
    }
}

fn ps(who: As) -> Vec<serde_json::Value> {
    let o = common::warden_cmd(who)
        .args(["ps", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::stderr(&o));
    serde_json::from_slice::<Vec<serde_json::Value>>(&o.stdout)
        .unwrap_or_else(|e| panic!("ps --json: {e}: {}", common::stdout(&o)))
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
