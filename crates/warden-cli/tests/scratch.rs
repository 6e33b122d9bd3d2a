//! The scratch directory against its own user (issue 35): what root does in a scratch it has
//! handed to another user, a squatted runs' directory, and trees made to outlast their run.
//! Each test runs warden with a TMPDIR of its own and checks from outside, as root, what is
//! left where: never the program's or warden's word for it.

mod common;

use common::As;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;

fn s(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

/// A TMPDIR of the test's own (mode 01777, as /tmp), so that what runs leave there can be
/// listed. It goes with `rm -rf` when the test ends, pass or fail: a tree 25,000 deep left in
/// the work directory would overflow the stack of the next test binary's sweep
/// (`remove_dir_all` recurses).
struct Tmp(PathBuf);

impl std::ops::Deref for Tmp {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        clean(&self.0);
    }
}

fn own_tmpdir(name: &str, who: As) -> Tmp {
    let dir = common::fresh_dir(&format!("scratch-{name}-{}", common::who_tag(who)));
    common::chmod(&dir, 0o1777);
    Tmp(dir)
}

fn uid_of(who: As) -> u32 {
    match who {
        As::Nobody => NOBODY,
        As::Me => rustix::process::geteuid().as_raw(),
    }
}

/// `warden ARGS...` as `who` with TMPDIR `tmp`.
fn warden_in(who: As, tmp: &Path, args: &[&str]) -> Output {
    let mut cmd = common::warden_cmd(who);
    cmd.env("TMPDIR", tmp).args(args);
    common::finish(cmd, common::RUN_DEADLINE).0
}

/// The names in `dir` (sorted), or none when it cannot be read.
fn names(dir: &Path) -> Vec<String> {
    let Ok(d) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<String> = d
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Removes `dir` as root, whatever the runs left in it.
fn clean(dir: &Path) {
    let _ = std::process::Command::new("rm")
        .args(["-rf", "--"])
        .arg(dir)
        .status();
}

/// A policy file in `dir` that runs the program as uid and gid 65534 (warden, root, becomes
/// them, and hands them the scratch directory).
fn as_nobody_policy(dir: &Path) -> PathBuf {
    let policy = dir.join("nobody.policy");
    common::write_file(&policy, "starting_uid 65534\nstarting_gid 65534\n", 0o644);
    policy
}

// --- finding 1: root makes the exec-rule directories through descriptors ------------------------

/// A root run with `starting_uid 65534` and `--exec '$SCRATCH/a/b/bin/*'` makes those
/// directories in a scratch it has already handed to uid 65534. Here uid 65534's stand-in (the
/// test) stops warden the moment the scratch appears (inotify, then SIGSTOP), plants links to a
/// root-owned directory where warden will make `a` (or, with `a` a real directory, `a/b`), and
/// lets warden go on. Before, root followed the link: it made `b/bin` in the target directory and
/// gave them to uid 65534. Now it refuses the link, says which directory it could not make, and
/// nothing appears in or changes about the target. Attempts where warden had already made the
/// directories when it was stopped plant nothing and are not counted; at least one must plant.
#[test]
fn exec_dirs_in_a_handed_over_scratch_never_follow_a_planted_link() {
    let test = "exec_dirs_in_a_handed_over_scratch_never_follow_a_planted_link";
    if !common::require_root(test) {
        return;
    }
    let tmp = own_tmpdir("exec-swap", As::Me);
    let work = common::fresh_dir("scratch-exec-swap-work");
    let policy = as_nobody_policy(&work);
    let target = work.join("target");
    std::fs::create_dir(&target).unwrap();
    common::chmod(&target, 0o755);
    // The first run makes root's runs' directory, which the test then watches.
    let o = warden_in(As::Me, &tmp, &["run", "--", "true"]);
    common::assert_ok(&o);
    let runs = tmp.join("warden-scratch-0");
    assert!(runs.is_dir(), "{:?}", names(&tmp));
    let (mut planted, mut attempts) = (0, 0);
    while planted < 4 && attempts < 40 {
        attempts += 1;
        let shape = attempts % 2;
        let inotify = rustix::fs::inotify::init(rustix::fs::inotify::CreateFlags::CLOEXEC).unwrap();
        rustix::fs::inotify::add_watch(&inotify, &runs, rustix::fs::inotify::WatchFlags::CREATE)
            .unwrap();
        let mut cmd = common::warden_cmd(As::Me);
        cmd.env("TMPDIR", &*tmp)
            .args([
                "run",
                "--policy",
                s(&policy),
                "--exec",
                "$SCRATCH/a/b/bin/*",
                "--",
                "true",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let scratch = created_dir(&inotify, &runs);
        common::signal(child.id() as i32, libc::SIGSTOP).unwrap();
        let made = plant(&scratch, &target, shape);
        common::signal(child.id() as i32, libc::SIGCONT).unwrap();
        let (status, timed_out) = common::wait_deadline(&mut child, common::RUN_DEADLINE);
        assert!(!timed_out, "warden hung");
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        // From outside: the target is as it was, empty, root's, 0755.
        let m = std::fs::symlink_metadata(&target).unwrap();
        assert_eq!(
            (m.uid(), m.gid(), m.mode() & 0o7777),
            (0, 0, 0o755),
            "the target changed\n{err}"
        );
        assert_eq!(names(&target), Vec::<String>::new(), "{err}");
        if made {
            planted += 1;
            assert_eq!(status.code(), Some(125), "{err}");
            assert!(
                err.contains("cannot make") && err.contains("for its exec rule"),
                "{err}"
            );
        }
        clean(&scratch);
    }
    assert!(
        planted > 0,
        "warden was never stopped before it made the directories ({attempts} attempts)"
    );
    // Nothing beneath the test's directories became uid 65534's (but the registry of the runs
    // as 65534, which warden keeps in their TMPDIR).
    for dir in [work.as_path(), &tmp] {
        let out = std::process::Command::new("find")
            .arg(dir)
            .args([
                "-name",
                "warden-run-*",
                "-prune",
                "-o",
                "-uid",
                "65534",
                "-print",
            ])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "", "owned by 65534");
    }
    clean(&tmp);
    clean(&work);
}

/// The path of the next directory created in `runs` (the watch on `inotify`).
fn created_dir(inotify: &std::os::fd::OwnedFd, runs: &Path) -> PathBuf {
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
    let mut reader = rustix::fs::inotify::Reader::new(inotify, &mut buf);
    loop {
        let ev = reader.next().expect("an inotify event");
        if !ev.events().contains(rustix::fs::inotify::ReadFlags::ISDIR) {
            continue;
        }
        if let Some(name) = ev.file_name() {
            return runs.join(name.to_str().unwrap());
        }
    }
}

/// Plants in `scratch`, as uid 65534 would: `a`, a link to `target` (shape 0), or `a`, a
/// directory of 65534's, holding `b`, a link to `target` (shape 1). Whether it planted: not
/// when warden had made `a` already.
fn plant(scratch: &Path, target: &Path, shape: i32) -> bool {
    let a = scratch.join("a");
    let link = if shape == 0 {
        a.clone()
    } else {
        if std::fs::create_dir(&a).is_err() {
            return false;
        }
        std::os::unix::fs::chown(&a, Some(NOBODY), Some(NOBODY)).unwrap();
        a.join("b")
    };
    if std::os::unix::fs::symlink(target, &link).is_err() {
        return false;
    }
    std::os::unix::fs::lchown(&link, Some(NOBODY), Some(NOBODY)).unwrap();
    true
}

// --- finding 1: a squatted runs' directory ------------------------------------------------------

/// `$TMPDIR/warden-scratch-UID` made first by someone else (a directory of theirs, or a link
/// to one): before, root's runs then kept their scratch in `$TMPDIR` itself, where anyone lists
/// its name. Now a run says so, naming the squatted path, and keeps its scratch in a directory
/// of its own, `warden-scratch-UID.RAND` (the user's, with the usual mode), which the squatter
/// can neither list nor enter; the squatted directory gets nothing, and after a run without
/// `--keep` nothing of it is left. The same for uid 65534 when root squatted its name.
fn squatted_runs_dir(who: As) {
    let uid = uid_of(who);
    let squatter = if uid == 0 { NOBODY } else { 0 };
    let mode = if uid == 0 { 0o1733 } else { 0o700 };
    for shape in ["dir", "link"] {
        let tmp = own_tmpdir(&format!("squat-{shape}"), who);
        let usual = tmp.join(format!("warden-scratch-{uid}"));
        let theirs = tmp.join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        common::chmod(&theirs, 0o777);
        std::os::unix::fs::chown(&theirs, Some(squatter), Some(squatter)).unwrap();
        if shape == "dir" {
            std::fs::create_dir(&usual).unwrap();
            common::chmod(&usual, 0o777);
            std::os::unix::fs::chown(&usual, Some(squatter), Some(squatter)).unwrap();
        } else {
            std::os::unix::fs::symlink(&theirs, &usual).unwrap();
            std::os::unix::fs::lchown(&usual, Some(squatter), Some(squatter)).unwrap();
        }
        let o = warden_in(
            who,
            &tmp,
            &["run", "--keep", "--", "sh", "-c", "echo \"$PWD\""],
        );
        common::assert_ok(&o);
        let err = common::stderr(&o);
        assert!(
            err.contains(&format!(
                "warden: {} is not this user's own directory",
                s(&usual)
            )),
            "{shape}: {err}"
        );
        let scratch = PathBuf::from(common::stdout(&o).trim());
        let own = scratch.parent().unwrap().to_path_buf();
        let own_name = own.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(own.parent(), Some(&*tmp), "{shape}: {}", scratch.display());
        assert!(
            own_name.starts_with(&format!("warden-scratch-{uid}.")),
            "{shape}: {own_name}"
        );
        // Not in the listable TMPDIR itself, nor in what the squatter made.
        assert!(!names(&tmp).contains(&scratch.file_name().unwrap().to_string_lossy().into_owned()));
        assert_eq!(names(&theirs), Vec::<String>::new(), "{shape}");
        if shape == "dir" {
            assert_eq!(names(&usual), Vec::<String>::new(), "{shape}");
        }
        let m = std::fs::symlink_metadata(&own).unwrap();
        assert!(
            m.is_dir() && m.uid() == uid && m.mode() & 0o7777 == mode,
            "{shape}: {m:?}"
        );
        let m = std::fs::symlink_metadata(&scratch).unwrap();
        assert!(
            m.is_dir() && m.uid() == uid && m.mode() & 0o777 == 0o700,
            "{m:?}"
        );
        clean(&own);
        // Without --keep, nothing of the run stays.
        let before = names(&tmp);
        let o = warden_in(
            who,
            &tmp,
            &["run", "--", "sh", "-c", "echo hi > f; mkdir -p x/y"],
        );
        common::assert_ok(&o);
        assert!(common::stderr(&o).contains("is not this user's own directory"));
        // (The user's registry directory may appear: a run that lives past 20 ms registers
        // there, as on the host's tree; it is the user's, kept across runs.)
        let run_only = |v: Vec<String>| -> Vec<String> {
            v.into_iter()
                .filter(|n| !n.starts_with("warden-run-"))
                .collect()
        };
        assert_eq!(
            run_only(names(&tmp)),
            run_only(before),
            "{shape}: {}",
            common::stderr(&o)
        );
        clean(&tmp);
    }
}

#[test]
fn a_squatted_runs_dir_is_never_replaced_by_the_shared_tmpdir() {
    let test = "a_squatted_runs_dir_is_never_replaced_by_the_shared_tmpdir";
    if common::require_root(test) {
        common::each_user(test, squatted_runs_dir);
    }
}

// --- findings 5 and 6: trees made to outlast the run --------------------------------------------

/// How deep the tree the program makes is: past what a walk holding a descriptor per level can
/// remove (the probe made 21,000 levels).
const DEPTH: &str = "25000";

/// Runs `deep_tree DEPTH` (a tree DEPTH deep made by nested renames, and directories of mode 0)
/// in the scratch of a run as `who` (with `policy`, if any), and returns its output.
fn run_deep_tree(who: As, tmp: &Path, policy: Option<&Path>, wait: bool) -> Output {
    let (prog, bin) = common::program("deep_tree");
    let mut args = vec!["run", "--read", &bin, "--exec", &bin];
    if let Some(p) = policy {
        args.extend(["--policy", s(p)]);
    }
    args.extend(["--", &prog, DEPTH]);
    if wait {
        args.push("wait");
    }
    warden_in(who, tmp, &args)
}

/// The entries of the runs' directory that are directories (scratch directories).
fn scratch_dirs(runs: &Path) -> Vec<String> {
    names(runs)
        .into_iter()
        .filter(|n| runs.join(n).is_dir())
        .collect()
}

/// A scratch holding a tree 25,000 directories deep and directories of mode 0 is removed when
/// its run ends: as root, as uid 65534, and as root with `starting_uid 65534` (warden removes it
/// as 65534, which it has become). Before, the removal ran out of descriptors (finding 5) or
/// could not enter a mode-0 directory of an unprivileged run (finding 6), and the scratch stayed.
fn deep_tree_removed_after_the_run(who: As, starting_nobody: bool) {
    let tag = if starting_nobody {
        "deep-start"
    } else {
        "deep"
    };
    let tmp = own_tmpdir(tag, who);
    let policy = starting_nobody.then(|| as_nobody_policy(&tmp));
    let o = run_deep_tree(who, &tmp, policy.as_deref(), false);
    common::assert_ok(&o);
    assert_eq!(common::stdout(&o), format!("made {DEPTH}\n"));
    let err = common::stderr(&o);
    assert!(!err.contains("cannot remove"), "{err}");
    let runs = tmp.join(format!("warden-scratch-{}", uid_of(who)));
    assert_eq!(scratch_dirs(&runs), Vec::<String>::new(), "{err}");
    clean(&tmp);
}

#[test]
fn a_deep_tree_and_mode_0_directories_leave_no_scratch() {
    common::each_user(
        "a_deep_tree_and_mode_0_directories_leave_no_scratch",
        |who| deep_tree_removed_after_the_run(who, false),
    );
}

#[test]
fn a_deep_tree_in_a_scratch_handed_to_another_user_is_removed() {
    if common::require_root("a_deep_tree_in_a_scratch_handed_to_another_user_is_removed") {
        deep_tree_removed_after_the_run(As::Me, true);
    }
}

/// Starts `deep_tree DEPTH wait` as `who` with TMPDIR `tmp`, waits until it has made its tree,
/// kills warden with SIGKILL (the sandbox dies with it), and returns the scratch's name.
fn killed_with_a_deep_tree(who: As, tmp: &Path) -> String {
    let (prog, bin) = common::program("deep_tree");
    let (out_path, out) = common::capture_file("deep-tree-out");
    let mut cmd = common::warden_cmd(who);
    cmd.env("TMPDIR", tmp)
        .args([
            "run", "--read", &bin, "--exec", &bin, "--", &prog, DEPTH, "wait",
        ])
        .stdout(out)
        .stderr(Stdio::null());
    let mut child: Child = cmd.spawn().unwrap();
    let t = Instant::now();
    while !std::fs::read_to_string(&out_path).unwrap().contains("made") {
        if t.elapsed() > Duration::from_secs(240) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the tree was never made");
        }
        assert!(child.try_wait().unwrap().is_none(), "warden ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let runs = tmp.join(format!("warden-scratch-{}", uid_of(who)));
    let dirs = scratch_dirs(&runs);
    assert_eq!(dirs.len(), 1, "{:?}", names(&runs));
    aged_once_unlocked(&runs.join(format!("{}.lock", dirs[0])));
    dirs[0].clone()
}

/// Ages the lock file `lock` of a killed run (a lock younger than 10 s may not be locked yet, so
/// the sweep leaves it), once no process of that run holds it any more: the sandbox's processes
/// die just after warden.
fn aged_once_unlocked(lock: &Path) {
    let f = std::fs::File::options().write(true).open(lock).unwrap();
    let t = Instant::now();
    while rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{} stays locked",
            lock.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    rustix::fs::flock(&f, rustix::fs::FlockOperation::Unlock).unwrap();
    f.set_modified(std::time::SystemTime::now() - Duration::from_secs(60))
        .unwrap();
}

/// A warden killed with its scratch holding a tree 25,000 deep and mode-0 directories: the next
/// run's sweep removes it all, scratch and lock, and says nothing. Before, the sweep ran out of
/// descriptors and every later start walked the tree again.
fn killed_deep_tree_is_swept(who: As) {
    let tmp = own_tmpdir("killed-deep", who);
    let name = killed_with_a_deep_tree(who, &tmp);
    let runs = tmp.join(format!("warden-scratch-{}", uid_of(who)));
    let o = warden_in(who, &tmp, &["run", "--", "true"]);
    common::assert_ok(&o);
    assert_eq!(common::stderr(&o), "");
    let left = names(&runs);
    assert!(!left.iter().any(|n| n.starts_with(&name)), "{left:?}");
    clean(&tmp);
}

#[test]
fn a_killed_runs_deep_tree_is_swept_by_the_next_start() {
    common::each_user(
        "a_killed_runs_deep_tree_is_swept_by_the_next_start",
        killed_deep_tree_is_swept,
    );
}

/// What a sweep cannot remove (here, a directory of root's in a killed run of uid 65534's, which
/// 65534 may not empty) is said once, naming the scratch, and its lock becomes `NAME.left`; the
/// next start says nothing and leaves it as it is (it does not walk it again); once it is gone,
/// the mark goes.
#[test]
fn an_unremovable_leftover_is_reported_once_and_left_alone() {
    let test = "an_unremovable_leftover_is_reported_once_and_left_alone";
    if !common::can_run_as_nobody(test) {
        return;
    }
    let who = As::Nobody;
    let tmp = own_tmpdir("leftover", who);
    let name = killed_with_a_deep_tree(who, &tmp);
    let runs = tmp.join(format!("warden-scratch-{NOBODY}"));
    let scratch = runs.join(&name);
    let roots = scratch.join("roots");
    std::fs::create_dir(&roots).unwrap();
    std::fs::write(roots.join("f"), "root's").unwrap();
    let o = warden_in(who, &tmp, &["run", "--", "true"]);
    common::assert_ok(&o);
    let err = common::stderr(&o);
    let said = format!(
        "warden: cannot remove a killed run's directory {}",
        s(&scratch)
    );
    assert_eq!(err.matches(&said).count(), 1, "{err}");
    assert!(err.contains("later runs leave it alone"), "{err}");
    let left = names(&runs);
    assert!(left.contains(&format!("{name}.left")), "{left:?}");
    assert!(!left.contains(&format!("{name}.lock")), "{left:?}");
    assert!(roots.join("f").exists());
    let o = warden_in(who, &tmp, &["run", "--", "true"]);
    common::assert_ok(&o);
    assert_eq!(common::stderr(&o), "");
    assert_eq!(names(&runs), left);
    // Once the user has removed it, the mark goes too.
    clean(&scratch);
    let o = warden_in(who, &tmp, &["run", "--", "true"]);
    common::assert_ok(&o);
    let after = names(&runs);
    assert!(!after.iter().any(|n| n.starts_with(&name)), "{after:?}");
    clean(&tmp);
}

/// A private copy (`path-map HOST /work copy`) in which the program leaves a tree 25,000 deep
/// and directories of mode 0: its directory (the overlay's upper and work directories) goes when
/// the run ends, as the scratch does, and the host's tree is untouched. As root, as uid 65534,
/// and as root with `starting_uid 65534`.
fn deep_tree_in_a_copy(who: As, starting_nobody: bool) {
    let tag = if starting_nobody {
        "copy-start"
    } else {
        "copy"
    };
    let tmp = own_tmpdir(tag, who);
    let host = common::fresh_dir(&format!("scratch-{tag}-host-{}", common::who_tag(who)));
    common::write_file(&host.join("f"), "host\n", 0o644);
    let policy = tmp.join("copy.policy");
    let mut text = format!(
        "path-map {} /work copy\npath-allow read /work /work/*\npath-allow write /work/*\n\
         path-allow unlink /work/*\n",
        s(&host)
    );
    if starting_nobody {
        text.push_str("starting_uid 65534\nstarting_gid 65534\n");
    }
    common::write_file(&policy, text, 0o644);
    let (prog, bin) = common::program("deep_tree");
    let o = warden_in(
        who,
        &tmp,
        &[
            "run",
            "--read",
            &bin,
            "--exec",
            &bin,
            "--policy",
            s(&policy),
            "--",
            "/bin/sh",
            "-c",
            &format!("cd /work && {prog} {DEPTH} && ls /work"),
        ],
    );
    common::assert_ok(&o);
    let err = common::stderr(&o);
    assert_eq!(
        common::stdout(&o),
        format!("made {DEPTH}\nd\nf\nm\n"),
        "{err}"
    );
    assert!(!err.contains("cannot remove"), "{err}");
    let runs = tmp.join(format!("warden-scratch-{}", uid_of(who)));
    assert_eq!(scratch_dirs(&runs), Vec::<String>::new(), "{err}");
    assert_eq!(names(&host), ["f"]);
    clean(&tmp);
}

#[test]
fn a_deep_tree_in_a_private_copy_leaves_nothing() {
    common::each_user("a_deep_tree_in_a_private_copy_leaves_nothing", |who| {
        deep_tree_in_a_copy(who, false)
    });
}

#[test]
fn a_deep_tree_in_a_private_copy_handed_to_another_user_leaves_nothing() {
    let test = "a_deep_tree_in_a_private_copy_handed_to_another_user_leaves_nothing";
    if common::require_root(test) {
        deep_tree_in_a_copy(As::Me, true);
    }
}

/// A run killed while the usual runs' directory is squatted leaves its own
/// `warden-scratch-UID.RAND` (scratch, lock and all): the next run that finds the name squatted
/// sweeps it, as it sweeps the usual one, and removes it. Nothing of either run stays.
fn killed_in_a_squatted_tmpdir(who: As) {
    let uid = uid_of(who);
    let tmp = own_tmpdir("squat-killed", who);
    let usual = tmp.join(format!("warden-scratch-{uid}"));
    std::os::unix::fs::symlink("/", &usual).unwrap();
    let own_dirs = || -> Vec<String> {
        names(&tmp)
            .into_iter()
            .filter(|n| n.starts_with(&format!("warden-scratch-{uid}.")))
            .collect()
    };
    let mut cmd = common::warden_cmd(who);
    cmd.env("TMPDIR", &*tmp)
        .args(["run", "--", "sleep", "600"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let t = Instant::now();
    let own = loop {
        if let [own] = &own_dirs()[..] {
            if scratch_dirs(&tmp.join(own)).len() == 1 {
                break tmp.join(own);
            }
        }
        if t.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no scratch appeared: {:?}", names(&tmp));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    // Old enough to be swept, the lock and the directory holding it.
    let old = std::time::SystemTime::now() - Duration::from_secs(60);
    for n in names(&own) {
        if n.ends_with(".lock") {
            aged_once_unlocked(&own.join(n));
        }
    }
    std::fs::File::open(&own)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let o = warden_in(who, &tmp, &["run", "--", "true"]);
    common::assert_ok(&o);
    assert!(common::stderr(&o).contains("is not this user's own directory"));
    assert_eq!(own_dirs(), Vec::<String>::new(), "{:?}", names(&own));
}

#[test]
fn a_killed_run_in_a_squatted_tmpdir_is_swept() {
    let test = "a_killed_run_in_a_squatted_tmpdir_is_swept";
    if common::require_root(test) {
        common::each_user(test, killed_in_a_squatted_tmpdir);
    }
}
