//! Capability mode (`warden run --capability-mode --fd NAME=PATH:RIGHTS`), attacked from inside
//! and checked from outside: every global namespace refused (in threads, after fork and after
//! fexecve), directory capabilities held against `..`, symlinks, magic links and a rename race,
//! rights enforced by the kernel's access modes and by the agent, and the compartmentalised
//! decompressor of `examples/capsicum` refusing what its "exploited" input tries.

mod common;

use common::{each_user, run_warden, stdout, As};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const EPERM: &str = "errno=1"; // ECAPMODE
const EACCES: &str = "errno=13"; // ENOTCAPABLE
const EBADF: &str = "errno=9";

/// The program's `KEY VALUE` lines (one per attempt), by key.
fn answers(o: &std::process::Output) -> HashMap<String, String> {
    stdout(o)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// `base/{secret, cap/{f, sub/g, abs -> /etc/passwd, esc -> ../secret, in -> sub/g, a/b}}`,
/// readable by everyone; `cap` is the capability.
fn tree(name: &str, who: As) -> (PathBuf, PathBuf) {
    let base = common::fresh_dir(&format!("capsicum-{name}-{}", common::who_tag(who)));
    let cap = base.join("cap");
    std::fs::create_dir_all(cap.join("sub")).unwrap();
    std::fs::create_dir_all(cap.join("a/b")).unwrap();
    common::write_file(&base.join("secret"), "outside\n", 0o644);
    common::write_file(&cap.join("secret"), "inside-secret\n", 0o644);
    common::write_file(&cap.join("f"), "inside-f\n", 0o644);
    common::write_file(&cap.join("sub/g"), "inside-g\n", 0o644);
    std::os::unix::fs::symlink("/etc/passwd", cap.join("abs")).unwrap();
    std::os::unix::fs::symlink("../secret", cap.join("esc")).unwrap();
    std::os::unix::fs::symlink("sub/g", cap.join("in")).unwrap();
    for d in [&cap, &cap.join("sub"), &cap.join("a"), &cap.join("a/b")] {
        common::chmod(d, 0o777);
    }
    (base, cap)
}

/// Runs cap_probe in capability mode with `d` = `cap` (`rights`) and the given attempts;
/// returns each attempt's line (`NAME` -> the rest) and warden's stderr.
fn probe(
    who: As,
    cap: &Path,
    rights: &str,
    extra: &[&str],
    attempts: &[&str],
) -> (HashMap<String, String>, String) {
    let (prog, bin) = common::program("cap_probe");
    let fd = format!("d={}:{rights}", cap.display());
    let binfd = format!("bin={bin}:read,lookup,fexecve");
    let mut args = vec![
        "run",
        "-v",
        "--capability-mode",
        "--exec",
        &bin,
        "--fd",
        &fd,
        "--fd",
        &binfd,
    ];
    args.extend_from_slice(extra);
    args.push("--");
    args.push(&prog);
    args.extend_from_slice(attempts);
    let o = run_warden(who, common::workdir(), &args);
    let err = common::stderr(&o);
    assert!(o.status.success(), "{}\n{err}", stdout(&o));
    let lines = stdout(&o)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    (lines, err)
}

fn expect(lines: &HashMap<String, String>, name: &str, want: &str, err: &str) {
    let got = lines.get(name).map(String::as_str).unwrap_or("<no line>");
    assert!(
        got.starts_with(want),
        "{name}: got {got:?}, want {want:?}\nwarden said:\n{err}"
    );
}

fn global_namespaces_are_refused(who: As) {
    let (_, cap) = tree("global", who);
    let attempts = [
        "inside",
        "absolute",
        "absolute-at",
        "cwd",
        "proc-fd",
        "stat-abs",
        "chdir",
        "exec",
        "socket",
        "socket-unix",
        "socketpair",
        "kill-self",
        "kill-parent",
        "kill-all",
        "pidfd-open",
        "shmget",
        "raise",
        "fstat",
        "setown-parent",
        "setown-ex",
        "fiosetown",
        "setown-self",
        "fcntl-getfl",
    ];
    let (l, err) = probe(who, &cap, "read,lookup,fstat", &[], &attempts);
    expect(&l, "inside", "ok inside-f", &err);
    for name in [
        "absolute",
        "absolute-at",
        "cwd",
        "proc-fd",
        "stat-abs",
        "chdir",
        "exec",
        "socket",
        "socket-unix",
        "kill-parent",
        "kill-all",
        "pidfd-open",
        "shmget",
        "setown-parent",
        "setown-ex",
        "fiosetown",
    ] {
        expect(&l, name, EPERM, &err);
    }
    for name in [
        "socketpair",
        "kill-self",
        "raise",
        "fstat",
        "setown-self",
        "fcntl-getfl",
    ] {
        expect(&l, name, "ok", &err);
    }
    // -v names the rule that refused each.
    for rule in [
        "capability-mode:absolute-path",
        "capability-mode:current-directory",
        "capability-mode:exec-by-path",
        "capability-mode:socket-address",
        "capability-mode:other-process",
        "capability-mode:ipc",
    ] {
        assert!(err.contains(rule), "no {rule} in:\n{err}");
    }
    assert!(
        err.contains("denied openat(\"/etc/passwd\""),
        "-v does not say what was refused:\n{err}"
    );
}

fn directory_capabilities_hold(who: As) {
    let (_, cap) = tree("beneath", who);
    let attempts = [
        "dotdot",
        "dotdot-inside",
        "symlink-abs",
        "symlink-out",
        "symlink-in",
        "subdir",
        "subdir-dotdot",
        "stat-dotdot",
        "stat-inside",
    ];
    let (l, err) = probe(who, &cap, "read,lookup", &[], &attempts);
    for name in [
        "dotdot",
        "symlink-abs",
        "symlink-out",
        "subdir-dotdot",
        "stat-dotdot",
    ] {
        expect(&l, name, EACCES, &err);
    }
    expect(&l, "dotdot-inside", "ok inside-f", &err);
    expect(&l, "symlink-in", "ok inside-g", &err);
    expect(&l, "subdir", "ok inside-g", &err);
    expect(&l, "stat-inside", "ok", &err);
    assert!(err.contains("capability-mode:escape"), "{err}");
}

fn threads_fork_and_exec_keep_the_mode(who: As) {
    let (_, cap) = tree("inherit", who);
    let attempts = [
        "thread:absolute",
        "thread:dotdot",
        "fork:absolute",
        "fork:kill-parent",
        "fork:symlink-out",
        "fexecve:absolute",
    ];
    let (prog, _) = common::program("cap_probe");
    let out = {
        let (l, err) = probe(who, &cap, "read,lookup", &[], &attempts);
        (l, err)
    };
    let (l, err) = out;
    // Each attempt prints under its inner name: the last line of each name wins, and every
    // one of them must be a refusal.
    expect(&l, "absolute", EPERM, &err);
    expect(&l, "dotdot", EACCES, &err);
    expect(&l, "kill-parent", EPERM, &err);
    expect(&l, "symlink-out", EACCES, &err);
    // The exec'd program said it too (its pid differs from the first's in -v).
    let refusals = err
        .lines()
        .filter(|l| l.contains("openat(\"/etc/passwd\""))
        .count();
    assert!(
        refusals >= 3,
        "{refusals} refusals of /etc/passwd, want one per thread, fork and exec ({prog}):\n{err}"
    );
}

fn rights_narrow_what_descriptors_do(who: As) {
    let (base, cap) = tree("rights", who);
    let ro = base.join("ro");
    let wo = base.join("wo");
    common::write_file(&ro, "read-only\n", 0o666);
    common::write_file(&wo, "", 0o666);
    let rofd = format!("ro={}:read,seek", ro.display());
    let wofd = format!("wo={}:write", wo.display());
    let extra = ["--fd", rofd.as_str(), "--fd", wofd.as_str()];
    let (l, err) = probe(
        who,
        &cap,
        "read,lookup",
        &extra,
        &["rights-file", "write-ro", "create-ro", "mkdir"],
    );
    expect(&l, "ro-read", "ok", &err);
    for name in ["ro-write", "ro-pwrite", "ro-dup-write", "wo-read"] {
        expect(&l, name, EBADF, &err);
    }
    expect(&l, "ro-ftruncate", "errno=22", &err); // EINVAL: not open for writing
                                                  // mmap follows the access mode: the kernel answers EACCES.
    expect(&l, "ro-mmap-shared-write", EACCES, &err);
    expect(&l, "wo-mmap", EACCES, &err);
    expect(&l, "wo-write", "ok", &err);
    expect(&l, "ro-fchmod", EACCES, &err);
    expect(&l, "ro-fchown", EACCES, &err);
    expect(&l, "ro-reopen-rw", EPERM, &err);
    expect(&l, "write-ro", EACCES, &err);
    expect(&l, "create-ro", EACCES, &err);
    expect(&l, "mkdir", EACCES, &err);
    assert!(err.contains("capability-mode:rights"), "{err}");
    assert_eq!(std::fs::read_to_string(&ro).unwrap(), "read-only\n");
    assert_eq!(std::fs::read_to_string(&wo).unwrap(), "y");
    assert!(!cap.join("new").exists() && !cap.join("newdir").exists());
    // With the rights, the same calls work.
    let (l, err) = probe(
        who,
        &cap,
        "read,write,lookup,create,unlink,mkdir",
        &[],
        &["create", "mkdir", "unlink"],
    );
    for name in ["create", "mkdir", "unlink"] {
        expect(&l, name, "ok", &err);
    }
    assert!(cap.join("newdir").is_dir() && !cap.join("made").exists());
}

const BENEATH: [&str; 17] = [
    "readlink-in",
    "readlink-abs",
    "readlink-dotdot",
    "readlink-cwd",
    "rename-in",
    "rename-out",
    "rename-from-out",
    "rename-cwd",
    "link-in",
    "link-out",
    "link-follow",
    "symlinkat-in",
    "symlinkat-read",
    "chmod-in",
    "chmod-setuid",
    "chmod-out",
    "utimens-in",
];

/// readlinkat, renameat, linkat, symlinkat, fchmodat and utimensat beneath a directory
/// capability: performed beneath it with its rights, never out of it, checked from outside.
fn calls_beneath(who: As) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let (base, cap) = tree("beneath", who);
    // The files are the user's own, as a program's files would be: the kernel's own checks
    // (owner for chmod and explicit times, protected_hardlinks) then pass, and what is left to
    // refuse is the capability's.
    if who == As::Nobody {
        for e in [
            "", "f", "secret", "sub", "sub/g", "a", "a/b", "abs", "esc", "in",
        ] {
            std::os::unix::fs::lchown(cap.join(e), Some(65534), Some(65534)).unwrap();
        }
    }
    let secret_mode = || std::fs::metadata(base.join("secret")).unwrap().mode() & 0o7777;
    let before = secret_mode();
    let mut attempts = BENEATH.to_vec();
    attempts.extend(["utimens-out", "chmod-abs"]);
    // Without the rights: every change refused, nothing changed.
    let (l, err) = probe(who, &cap, "read,lookup", &[], &attempts);
    expect(&l, "readlink-in", "ok sub/g", &err);
    for name in [
        "rename-in",
        "link-in",
        "symlinkat-in",
        "chmod-in",
        "chmod-setuid",
        "utimens-in",
    ] {
        expect(&l, name, EACCES, &err);
    }
    assert!(!cap.join("f-link").exists() && cap.join("f").exists());
    assert!(std::fs::symlink_metadata(cap.join("sl")).is_err());
    // With them: inside works, out of the capability never.
    let (l, err) = probe(
        who,
        &cap,
        "read,write,lookup,create,unlink,fchmod",
        &[],
        &attempts,
    );
    for (name, want) in [
        ("readlink-in", "ok sub/g"),
        ("readlink-abs", "ok /etc/passwd"),
        ("rename-in", "ok"),
        ("link-in", "ok"),
        ("symlinkat-in", "ok"),
        ("chmod-in", "ok"),
        ("chmod-setuid", "ok"),
        ("utimens-in", "ok"),
    ] {
        expect(&l, name, want, &err);
    }
    for name in [
        "readlink-dotdot",
        "rename-out",
        "rename-from-out",
        "link-out",
        "link-follow",
        "symlinkat-read",
        "chmod-out",
        "utimens-out",
    ] {
        expect(&l, name, EACCES, &err);
    }
    for name in ["readlink-cwd", "rename-cwd", "chmod-abs"] {
        expect(&l, name, EPERM, &err);
    }
    // From outside.
    assert!(cap.join("sub/r2").exists() && !cap.join("r1").exists());
    assert!(!base.join("stolen").exists() && base.join("secret").exists());
    assert!(!cap.join("got").exists() && !cap.join("got2").exists() && !cap.join("got3").exists());
    let f = std::fs::metadata(cap.join("f")).unwrap();
    assert_eq!(
        f.ino(),
        std::fs::metadata(cap.join("f-link")).unwrap().ino()
    );
    assert_eq!(f.permissions().mode() & 0o7777, 0o600);
    assert_eq!(f.mtime(), 1);
    assert_eq!(
        std::fs::read_link(cap.join("sl")).unwrap(),
        Path::new("/etc/passwd")
    );
    // Set-id bits are never granted through a capability.
    assert_eq!(
        std::fs::metadata(cap.join("sub/g")).unwrap().mode() & 0o7777,
        0o755
    );
    assert_eq!(secret_mode(), before);
    assert_ne!(std::fs::metadata(base.join("secret")).unwrap().mtime(), 1);
}

/// fchownat, fchown and mknodat beneath a directory capability: each needs its right (fchown,
/// mknod) and lookup, stays strictly beneath, never makes a device node or a set-id bit; the
/// owner changes as warden's policy path changes it (through the sandbox's id map, as the
/// agent: nobody cannot give a file to root). Checked from outside.
fn owners_and_nodes(who: As) {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let (base, cap) = tree("owners", who);
    if who == As::Nobody {
        for e in [
            "", "f", "secret", "sub", "sub/g", "a", "a/b", "abs", "esc", "in",
        ] {
            std::os::unix::fs::lchown(cap.join(e), Some(65534), Some(65534)).unwrap();
        }
    }
    let owner = |p: &Path| std::fs::symlink_metadata(p).unwrap().uid();
    let secret_owner = owner(&base.join("secret"));
    let attempts = [
        "chown-in",
        "chown-root",
        "chown-out",
        "chown-esc",
        "chown-link",
        "chown-cwd",
        "chown-abs",
        "fchown-in",
        "mknod-fifo",
        "mknod-file",
        "mknod-dev",
        "mknod-out",
        "mknod-cwd",
    ];
    // Without the rights: nothing changes.
    let (l, err) = probe(who, &cap, "read,lookup", &[], &attempts);
    for name in [
        "chown-in",
        "chown-link",
        "fchown-in",
        "mknod-fifo",
        "mknod-file",
    ] {
        expect(&l, name, EACCES, &err);
    }
    for name in ["chown-cwd", "chown-abs", "mknod-dev", "mknod-cwd"] {
        expect(&l, name, EPERM, &err);
    }
    let untouched = if who == As::Nobody { 65534 } else { 0 };
    assert_eq!(owner(&cap.join("f")), untouched);
    assert!(!cap.join("fifo").exists() && !cap.join("node").exists());
    // With them: beneath works, out of the capability never.
    let (l, err) = probe(who, &cap, "read,lookup,fchown,mknod", &[], &attempts);
    for name in [
        "chown-in",
        "chown-link",
        "fchown-in",
        "mknod-fifo",
        "mknod-file",
    ] {
        expect(&l, name, "ok", &err);
    }
    for name in ["chown-out", "chown-esc", "mknod-out"] {
        expect(&l, name, EACCES, &err);
    }
    for name in ["chown-cwd", "chown-abs", "mknod-dev", "mknod-cwd"] {
        expect(&l, name, EPERM, &err);
    }
    assert!(err.contains("capability-mode:escape"), "{err}");
    // As nobody a file is not given to root: the sandbox's user namespace maps no id 0, and
    // the kernel's answer for an id it does not map is EINVAL (the agent, nobody too, could
    // not either).
    if who == As::Nobody {
        expect(&l, "chown-root", "errno=22", &err);
    }
    assert_eq!(owner(&cap.join("sub/g")), untouched);
    // From outside.
    assert_eq!(owner(&cap.join("f")), 65534);
    assert_eq!(owner(&cap.join("a")), 65534);
    assert_eq!(owner(&cap.join("esc")), 65534);
    assert_eq!(owner(&base.join("secret")), secret_owner);
    let fifo = std::fs::symlink_metadata(cap.join("fifo")).unwrap();
    assert!(fifo.file_type().is_fifo());
    assert_eq!(fifo.mode() & 0o7000, 0, "a set-id bit was made");
    assert!(std::fs::symlink_metadata(cap.join("node"))
        .unwrap()
        .is_file());
    assert!(!cap.join("null").exists() && !base.join("fifo").exists());
}

#[test]
fn fchown_fchownat_and_mknodat_stay_beneath_with_their_rights() {
    each_user(
        "fchown_fchownat_and_mknodat_stay_beneath_with_their_rights",
        owners_and_nodes,
    );
}

#[test]
fn readlink_rename_link_symlink_chmod_utimens_stay_beneath() {
    each_user(
        "readlink_rename_link_symlink_chmod_utimens_stay_beneath",
        calls_beneath,
    );
}

/// Every route to reading or writing, on descriptors without the right; and the rights of a
/// descriptor inherited by a child and passed over SCM_RIGHTS.
fn rights_hold_on_every_route_and_travel(who: As) {
    let (base, cap) = tree("routes", who);
    let ro = base.join("ro");
    let wo = base.join("wo");
    common::write_file(&ro, "read-only\n", 0o666);
    common::write_file(&wo, "write-only\n", 0o666);
    let rofd = format!("ro={}:read,seek", ro.display());
    let wofd = format!("wo={}:write", wo.display());
    let extra = ["--fd", rofd.as_str(), "--fd", wofd.as_str()];
    let (l, err) = probe(
        who,
        &cap,
        "read,lookup",
        &extra,
        &["rights-routes", "rights-passed"],
    );
    for name in [
        "wo-readv",
        "wo-preadv",
        "wo-sendfile",
        "wo-splice",
        "wo-copy-file-range",
        "ro-writev",
        "ro-pwritev",
        "ro-fallocate",
        "ro-sendfile",
        "ro-splice",
        "ro-copy-file-range",
        "inherit-write",
        "scm-write",
        "scm-dup-write",
    ] {
        expect(&l, name, EBADF, &err);
    }
    // The routes work where the right is there: the refusals are the rights'.
    expect(&l, "ro-sendfile-out", "ok", &err);
    expect(&l, "wo-sendfile-in", "ok", &err);
    // Checked by the agent in the child: the object's rights, however the child got it.
    expect(&l, "inherit-fchmod", EACCES, &err);
    expect(&l, "scm-send", "ok", &err);
    expect(&l, "scm-read", "ok", &err);
    expect(&l, "scm-fchmod", EACCES, &err);
    assert_eq!(std::fs::read_to_string(&ro).unwrap(), "read-only\n");
    // Only the route with the right wrote: "data" over the start.
    assert_eq!(std::fs::read_to_string(&wo).unwrap(), "datae-only\n");
}

#[test]
fn rights_hold_on_every_route_inherited_and_passed() {
    each_user(
        "rights_hold_on_every_route_inherited_and_passed",
        rights_hold_on_every_route_and_travel,
    );
}

/// A process outside keeps moving `cap/a/b` out of the capability and back while the program
/// walks `a/b/../../secret`: every walk gives the capability's own secret or fails, never the
/// secret beside it.
fn rename_race_cannot_lead_out(who: As) {
    let (base, cap) = tree("race", who);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mover = {
        let stop = stop.clone();
        let (inside, outside) = (cap.join("a/b"), base.join("b"));
        std::thread::spawn(move || {
            let mut moves = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if std::fs::rename(&inside, &outside).is_ok() {
                    let _ = std::fs::rename(&outside, &inside);
                    moves += 1;
                }
            }
            moves
        })
    };
    let (l, err) = probe(who, &cap, "read,lookup", &[], &["race:3000"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let moves = mover.join().unwrap();
    let race = l.get("race").cloned().unwrap_or_default();
    assert!(race.contains("outside=0"), "{race}\n{err}");
    assert!(moves > 0, "the directory never moved");
    assert!(!race.contains("inside=0 "), "no walk succeeded: {race}");
}

#[test]
fn capability_mode_refuses_global_namespaces() {
    each_user(
        "capability_mode_refuses_global_namespaces",
        global_namespaces_are_refused,
    );
}

#[test]
fn directory_capabilities_resolve_strictly_beneath() {
    each_user(
        "directory_capabilities_resolve_strictly_beneath",
        directory_capabilities_hold,
    );
}

#[test]
fn threads_fork_and_fexecve_stay_in_capability_mode() {
    each_user(
        "threads_fork_and_fexecve_stay_in_capability_mode",
        threads_fork_and_exec_keep_the_mode,
    );
}

#[test]
fn rights_are_enforced_by_access_mode_and_agent() {
    each_user(
        "rights_are_enforced_by_access_mode_and_agent",
        rights_narrow_what_descriptors_do,
    );
}

#[test]
fn a_rename_race_cannot_lead_a_walk_out() {
    each_user(
        "a_rename_race_cannot_lead_a_walk_out",
        rename_race_cannot_lead_out,
    );
}

/// examples/capsicum/NAME.c, built with warden's C library and zlib.
fn example(name: &str) -> PathBuf {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let bin = common::workdir().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    common::chmod(&bin, 0o755);
    let out = bin.join(name);
    if !out.exists() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let lib = root.join("crates/warden-capsicum/c");
        let tmp = bin.join(format!("{name}.tmp{}", std::process::id()));
        let st = std::process::Command::new("cc")
            .args(["-O2", "-Wall", "-Werror", "-I"])
            .arg(&lib)
            .arg("-o")
            .arg(&tmp)
            .arg(root.join(format!("examples/capsicum/{name}.c")))
            .arg(lib.join("capsicum.c"))
            .arg("-lz")
            .status()
            .expect("cc runs");
        assert!(st.success(), "compiling examples/capsicum/{name}.c failed");
        std::fs::rename(&tmp, &out).unwrap();
        common::chmod(&out, 0o755);
    }
    out
}

fn gunzip() -> PathBuf {
    example("cap_gunzip")
}

fn decompressor(who: As) {
    let prog = gunzip();
    let bin = prog.parent().unwrap().to_str().unwrap().to_owned();
    let dir = common::fresh_dir(&format!("capsicum-gunzip-{}", common::who_tag(who)));
    common::chmod(&dir, 0o777);
    let run = |text: &str, name: &str| {
        let plain = dir.join(name);
        common::write_file(&plain, text, 0o666);
        let st = std::process::Command::new("gzip")
            .arg("-kf")
            .arg(&plain)
            .status()
            .unwrap();
        assert!(st.success());
        let gz = dir.join(format!("{name}.gz"));
        common::chmod(&gz, 0o666);
        let before = std::fs::read(&gz).unwrap();
        let out = dir.join(format!("{name}.out"));
        let infd = format!("in={}:read,seek", gz.display());
        let outfd = format!("out={}:write", out.display());
        let o = run_warden(
            who,
            &dir,
            &[
                "run",
                "-v",
                "--capability-mode",
                "--exec",
                &bin,
                "--fd",
                &infd,
                "--fd",
                &outfd,
                "--",
                prog.to_str().unwrap(),
            ],
        );
        common::assert_ok(&o);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
        // The input is as it was, whatever the decompressor tried.
        assert_eq!(std::fs::read(&gz).unwrap(), before);
        common::stderr(&o)
    };
    let body: String = (0..5000).map(|i| format!("line {i}\n")).collect();
    let err = run(&body, "plain");
    assert!(!err.contains("exploit:"), "{err}");
    let err = run(&format!("EXPLOIT\n{body}"), "evil");
    for want in [
        "exploit: open /etc/passwd: errno 1 ",
        "exploit: socket: errno 1 ",
        "exploit: connect 127.0.0.1:80: errno 1 ",
        "exploit: write to the input: errno 9 ",
    ] {
        assert!(err.contains(want), "no {want:?} in:\n{err}");
    }
    let succeeded: Vec<_> = err
        .lines()
        .filter(|l| l.ends_with(": succeeded") && !l.contains("socketpair"))
        .collect();
    assert!(succeeded.is_empty(), "{succeeded:?}");
    assert!(err.contains("capability-mode:absolute-path"), "{err}");
    assert!(err.contains("capability-mode:socket-address"), "{err}");
}

/// The decompressor as libcapsicum ran it: a host (cap_gunzip_host, run as `who` outside any
/// sandbox) opens each file and passes the pair to one sandbox started with lch_start, which
/// holds nothing else.
fn decompressor_with_a_host(who: As) {
    let prog = gunzip();
    let host = example("cap_gunzip_host");
    let bin = prog.parent().unwrap().to_str().unwrap().to_owned();
    let dir = common::fresh_dir(&format!("capsicum-gunzip-host-{}", common::who_tag(who)));
    common::chmod(&dir, 0o777);
    let body: String = (0..5000).map(|i| format!("line {i}\n")).collect();
    let mut gzs = Vec::new();
    for (name, text) in [
        ("plain", body.clone()),
        ("evil", format!("EXPLOIT\n{body}")),
    ] {
        let plain = dir.join(name);
        common::write_file(&plain, &text, 0o666);
        let st = std::process::Command::new("gzip")
            .arg("-f")
            .arg(&plain)
            .status()
            .unwrap();
        assert!(st.success());
        let gz = dir.join(format!("{name}.gz"));
        common::chmod(&gz, 0o666);
        gzs.push((gz, plain, text));
    }
    let mut cmd = match who {
        As::Me => std::process::Command::new(&host),
        As::Nobody => {
            let mut c = std::process::Command::new("/usr/bin/setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(&host);
            c
        }
    };
    cmd.arg(common::warden())
        .arg(&bin)
        .args(gzs.iter().map(|(gz, _, _)| gz))
        .current_dir(&dir)
        .stdin(std::process::Stdio::null());
    let befores: Vec<_> = gzs
        .iter()
        .map(|(gz, _, _)| std::fs::read(gz).unwrap())
        .collect();
    let (o, _) = common::finish(cmd, std::time::Duration::from_secs(240));
    let (out, err) = (stdout(&o), common::stderr(&o));
    assert!(o.status.success(), "{out}\n{err}");
    for ((gz, plain, text), before) in gzs.iter().zip(befores) {
        assert!(
            out.contains(&format!("{}: 0", gz.display())),
            "{out}\n{err}"
        );
        assert_eq!(&std::fs::read_to_string(plain).unwrap(), text);
        assert_eq!(std::fs::read(gz).unwrap(), before, "the input changed");
    }
    for want in [
        "exploit: open /etc/passwd: errno 1 ",
        "exploit: socket: errno 1 ",
        "exploit: connect 127.0.0.1:80: errno 1 ",
        "exploit: write to the input: errno 9 ",
    ] {
        assert_eq!(err.matches(want).count(), 1, "{want:?} once in:\n{err}");
    }
    let succeeded: Vec<_> = err
        .lines()
        .filter(|l| l.ends_with(": succeeded") && !l.contains("socketpair"))
        .collect();
    assert!(succeeded.is_empty(), "{succeeded:?}");
}

#[test]
fn a_host_started_decompressor_refuses_what_its_input_tries() {
    each_user(
        "a_host_started_decompressor_refuses_what_its_input_tries",
        decompressor_with_a_host,
    );
}

#[test]
fn compartmentalised_decompressor_refuses_what_its_input_tries() {
    each_user(
        "compartmentalised_decompressor_refuses_what_its_input_tries",
        decompressor,
    );
}

// ---- the program side: cap_enter, cap_getmode, cap_rights_limit, cap_rights_get ----------------

/// tests/c/NAME.c, built with warden's C library (crates/warden-capsicum/c) and zlib.
fn with_library(name: &str) -> PathBuf {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let bin = common::workdir().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    common::chmod(&bin, 0o755);
    let out = bin.join(name);
    if !out.exists() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let lib = root.join("crates/warden-capsicum/c");
        let tmp = bin.join(format!("{name}.tmp{}", std::process::id()));
        let st = std::process::Command::new("cc")
            .args(["-O1", "-Wall", "-Werror", "-I"])
            .arg(&lib)
            .arg("-o")
            .arg(&tmp)
            .arg(root.join(format!("tests/c/{name}.c")))
            .arg(lib.join("capsicum.c"))
            .args(["-lz", "-lpthread"])
            .status()
            .expect("cc runs");
        assert!(st.success(), "compiling {name} failed");
        std::fs::rename(&tmp, &out).unwrap();
        common::chmod(&out, 0o755);
    }
    out
}

fn cap_self() -> PathBuf {
    with_library("cap_self")
}

/// Runs `cap_self ARGS` under `warden run -v --capsicum`, reading and writing `dir`.
fn self_run(who: As, dir: &Path, args: &[&str]) -> (HashMap<String, String>, String) {
    let prog = cap_self();
    let bin = prog.parent().unwrap().to_str().unwrap().to_owned();
    let d = dir.to_str().unwrap();
    let mut all = vec![
        "run",
        "-v",
        "--capsicum",
        "--exec",
        &bin,
        "--read",
        d,
        "--write",
        d,
        "--",
    ];
    all.push(prog.to_str().unwrap());
    all.extend_from_slice(args);
    let o = run_warden(who, dir, &all);
    let err = common::stderr(&o);
    assert!(o.status.success(), "{}\n{err}", stdout(&o));
    let lines = stdout(&o)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    (lines, err)
}

fn self_compartmentalised(who: As) {
    let dir = common::fresh_dir(&format!("capsicum-self-{}", common::who_tag(who)));
    common::chmod(&dir, 0o777);
    let body: String = (0..20000).map(|i| format!("line {i}\n")).collect();
    let text = format!("EXPLOIT\n{body}");
    let plain = dir.join("evil");
    common::write_file(&plain, &text, 0o666);
    let st = std::process::Command::new("gzip")
        .arg("-kf")
        .arg(&plain)
        .status()
        .unwrap();
    assert!(st.success());
    let gz = dir.join("evil.gz");
    common::chmod(&gz, 0o666);
    let before = std::fs::read(&gz).unwrap();
    let canary = dir.join("canary");
    common::write_file(&canary, "canary\n", 0o666);
    let out = dir.join("evil.out");
    let (l, err) = self_run(
        who,
        &dir,
        &[
            "gunzip",
            gz.to_str().unwrap(),
            out.to_str().unwrap(),
            canary.to_str().unwrap(),
        ],
    );
    // Before: outside the mode; the limits hold; after: in it.
    expect(&l, "mode-before", "ok 0", &err);
    expect(&l, "limit-in", "ok 0", &err);
    expect(&l, "limit-out", "ok 0", &err);
    expect(&l, "get-in", "ok 13", &err); // read|seek|fstat
    expect(&l, "get-out", "ok 10", &err); // write|fstat
    expect(&l, "enter", "ok 0", &err);
    expect(&l, "mode-after", "ok 1", &err);
    expect(&l, "decompressed", &format!("ok {}", text.len()), &err);
    // The exploited decompressor, in the process, a thread started before entering, one started
    // after, and a child forked after.
    for p in ["", "early-", "thread-", "child-"] {
        let e = |name: &str, want: &str| expect(&l, &format!("{p}{name}"), want, &err);
        for name in [
            "open-abs",
            "open-canary",
            "open-cwd",
            "unlink-canary",
            "socket-inet",
            "socket-unix",
            "kill-parent",
            "exec",
        ] {
            e(name, EPERM);
        }
        // Taken away by re-opening with a narrower access mode: the kernel's own EBADF (and
        // ftruncate's EINVAL on a descriptor not open for writing).
        for name in ["write-in", "pwrite-in", "read-out"] {
            e(name, EBADF);
        }
        e("ftruncate-in", "errno=22");
        e("pread-in", "ok 1");
        // Narrowed, never widened, however asked.
        e("widen-in", EACCES);
        e("forged-widen", EACCES);
        e("forged-nonsense", "errno=22");
        e("forged-bits", "errno=22");
        e("mode", "ok 1");
    }
    expect(&l, "child-exit", "ok 0", &err);
    // Checked from outside: the output is right, the input and the canary as they were.
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
    assert_eq!(std::fs::read(&gz).unwrap(), before);
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "canary\n");
    for rule in [
        "capability-mode:absolute-path",
        "capability-mode:current-directory",
        "capability-mode:socket-address",
        "capability-mode:other-process",
        "capability-mode:exec-by-path",
        "capability-mode:rights",
    ] {
        assert!(err.contains(rule), "no {rule} in:\n{err}");
    }
}

#[test]
fn a_program_compartmentalises_itself_with_cap_enter_and_rights() {
    each_user(
        "a_program_compartmentalises_itself_with_cap_enter_and_rights",
        self_compartmentalised,
    );
}

fn mode_is_the_processs(who: As) {
    let dir = common::fresh_dir(&format!("capsicum-split-{}", common::who_tag(who)));
    common::chmod(&dir, 0o777);
    let canary = dir.join("canary");
    common::write_file(&canary, "canary\n", 0o666);
    let (l, err) = self_run(who, &dir, &["split", canary.to_str().unwrap()]);
    expect(&l, "child-enter", "ok 0", &err);
    expect(&l, "child-mode", "ok 1", &err);
    expect(&l, "child-open-abs", EPERM, &err);
    // The parent never entered: everything the policy allows, it may still do.
    expect(&l, "parent-mode", "ok 0", &err);
    expect(&l, "parent-open-abs", "ok", &err);
    expect(&l, "parent-open-canary", "ok", &err);
    expect(&l, "parent-socket-unix", "ok", &err);
    expect(&l, "parent-kill-child", "ok 0", &err);
    expect(&l, "child-killed", "ok 9", &err);
}

fn tracing_is_refused_in_capability_mode(who: As) {
    let dir = common::fresh_dir(&format!("capsicum-trace-{}", common::who_tag(who)));
    common::chmod(&dir, 0o777);
    let policy = dir.join("trace.policy");
    common::write_file(&policy, "ptrace-allow inside\n", 0o644);
    let prog = cap_self();
    let bin = prog.parent().unwrap().to_str().unwrap().to_owned();
    let o = run_warden(
        who,
        &dir,
        &[
            "run",
            "-v",
            "--capsicum",
            "--policy",
            policy.to_str().unwrap(),
            "--exec",
            &bin,
            "--",
            prog.to_str().unwrap(),
            "trace",
        ],
    );
    let err = common::stderr(&o);
    assert!(o.status.success(), "{}\n{err}", stdout(&o));
    let l = answers(&o);
    expect(&l, "child-enter", "ok 0", &err);
    // In capability mode another process is no one to trace, parent or not.
    expect(&l, "child-vm-read-parent", EPERM, &err);
    expect(&l, "child-ptrace-parent", EPERM, &err);
    // Outside it, the policy's ptrace-allow inside holds (and shows the test can pass).
    expect(&l, "parent-vm-read-child", "ok 42", &err);
    assert!(err.contains("capability-mode:other-process"), "{err}");
}

#[test]
fn tracing_is_refused_in_capability_mode_even_with_ptrace_allow_inside() {
    each_user(
        "tracing_is_refused_in_capability_mode_even_with_ptrace_allow_inside",
        tracing_is_refused_in_capability_mode,
    );
}

#[test]
fn a_programs_own_seccomp_filter_is_not_capability_mode() {
    each_user(
        "a_programs_own_seccomp_filter_is_not_capability_mode",
        |who| {
            let dir = common::fresh_dir(&format!("capsicum-own-{}", common::who_tag(who)));
            common::chmod(&dir, 0o777);
            let (l, err) = self_run(who, &dir, &["ownfilter"]);
            expect(&l, "own-filter", "ok 0", &err);
            expect(&l, "own-mode", "ok 0", &err);
            expect(&l, "own-open-abs", "ok", &err);
            expect(&l, "enter", "ok 0", &err);
            expect(&l, "mode", "ok 1", &err);
            expect(&l, "open-abs", EPERM, &err);
        },
    );
}

#[test]
fn capability_mode_entered_by_a_child_is_the_childs_alone() {
    each_user(
        "capability_mode_entered_by_a_child_is_the_childs_alone",
        mode_is_the_processs,
    );
}

fn entering_gains_nothing(who: As) {
    // The secret is outside everything the run's policy allows, in a directory of its own.
    let dir = common::fresh_dir(&format!("capsicum-widen-{}", common::who_tag(who)));
    common::chmod(&dir, 0o777);
    let secret_dir = common::fresh_dir(&format!("capsicum-widen-secret-{}", common::who_tag(who)));
    common::chmod(&secret_dir, 0o777);
    let secret = secret_dir.join("secret");
    common::write_file(&secret, "secret\n", 0o666);
    let prog = cap_self();
    let bin = prog.parent().unwrap().to_str().unwrap().to_owned();
    let o = run_warden(
        who,
        &dir,
        &[
            "run",
            "-v",
            "--capsicum",
            "--exec",
            &bin,
            "--",
            prog.to_str().unwrap(),
            "widen",
            secret.to_str().unwrap(),
        ],
    );
    let err = common::stderr(&o);
    assert!(o.status.success(), "{}\n{err}", stdout(&o));
    let l = answers(&o);
    expect(&l, "root", "ok", &err);
    expect(&l, "enter", "ok 0", &err);
    // Whatever the policy refused before, a walk beneath "/" refuses after (as root, the agent
    // could otherwise open, create, truncate and remove anything).
    // Refused: EACCES where the agent names the rule, or ENOENT where the sandbox's own view
    // (the default) does not hold the path at all; never the object.
    let refused = |name: &str| {
        let got = l.get(name).map(String::as_str).unwrap_or("<no line>");
        assert!(
            got.starts_with(EACCES) || got.starts_with("errno=2"),
            "{name}: got {got:?}, want EACCES or ENOENT\nwarden said:\n{err}"
        );
    };
    for name in ["secret", "shadow", "create"] {
        refused(&format!("before-{name}"));
        refused(&format!("after-{name}"));
    }
    for name in [
        "after-trunc",
        "after-mkdir",
        "after-unlink",
        "after-stat-secret",
    ] {
        refused(name);
    }
    // What it allowed, it still allows.
    expect(&l, "before-passwd", "ok", &err);
    expect(&l, "after-passwd", "ok", &err);
    // A limit that would leave neither read nor write cannot be handed over: refused.
    expect(&l, "limit-none", EACCES, &err);
    expect(&l, "limit-dir-lookup", "ok 0", &err);
    expect(&l, "get-dir", "ok 24", &err); // fstat|lookup
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret\n");
    for made in ["/etc/warden-made", "/etc/warden-dir"] {
        let there = Path::new(made).exists();
        let _ = std::fs::remove_file(made);
        let _ = std::fs::remove_dir(made);
        assert!(!there, "{made} was made through a capability of /");
    }
}

#[test]
fn entering_capability_mode_gains_nothing_the_policy_refuses() {
    each_user(
        "entering_capability_mode_gains_nothing_the_policy_refuses",
        entering_gains_nothing,
    );
}

/// `base/{ro/f, rw/secret, w/{decoy,pay,victim,rvictim,a,b}, box/existing, box2/existing2,
/// race/}` for tests/c/cap_move.c, the user's own (as a program's files would be: the kernel's
/// protected_hardlinks then lets the user link them, and what is left to refuse is warden's).
fn move_tree(name: &str, who: As) -> PathBuf {
    let base = common::fresh_dir(&format!("capsicum-{name}-{}", common::who_tag(who)));
    for d in ["ro", "m/rw", "m/w", "m/box", "m/box2", "m/race"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    for (f, text) in [
        ("ro/f", "ro-original\n"),
        ("m/rw/secret", "secret\n"),
        ("m/w/decoy", "decoy\n"),
        ("m/w/pay", "payload\n"),
        ("m/w/victim", "victim\n"),
        ("m/w/rvictim", "rvictim\n"),
        ("m/w/a", "a\n"),
        ("m/w/b", "b\n"),
        ("m/box/existing", "boxed\n"),
        ("m/box2/existing2", "boxed2\n"),
    ] {
        common::write_file(&base.join(f), text, 0o644);
    }
    if who == As::Nobody {
        let status = std::process::Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&base)
            .status()
            .unwrap();
        assert!(status.success());
    }
    base
}

/// Issue 35, findings 2 and 3: after cap_enter, a hard link or a rename between directory
/// capabilities gives the object no right its source did not have (neither the capability's
/// rights nor the policy's), an exchange is two moves, an overwrite an unlink (also when the
/// destination appears while warden checks), and moves within the rights still work. Checked
/// from outside.
fn moves_between_capabilities(who: As) {
    let base = move_tree("move", who);
    let prog = with_library("cap_move");
    let bin = prog.parent().unwrap().to_str().unwrap().to_owned();
    let b = |d: &str| base.join(d).to_str().unwrap().to_owned();
    let m = b("m");
    let base_s = base.to_str().unwrap();
    let mut args = vec!["run", "-v", "--capsicum", "--exec", &bin, "--read", base_s];
    args.extend(["--write", m.as_str(), "--unlink", m.as_str()]);
    let rounds = "1000";
    args.extend(["--", prog.to_str().unwrap(), base_s, rounds]);
    let o = run_warden(who, &base, &args);
    let err = common::stderr(&o);
    assert!(o.status.success(), "{}\n{err}", stdout(&o));
    let l = answers(&o);
    for name in [
        "limit-lookup",
        "limit-box",
        "limit-box2",
        "limit-race",
        "enter",
    ] {
        expect(&l, name, "ok 0", &err);
    }
    // Refused, whatever the errno (the kernel's own EXDEV between mounts of a view would do),
    // and checked from outside below.
    let refused = |name: &str| {
        let got = l.get(name).map(String::as_str).unwrap_or("<no line>");
        assert!(
            got.starts_with("errno="),
            "{name}: got {got:?}, want a refusal\nwarden said:\n{err}"
        );
    };
    refused("before-link-ro");
    // The policy's rights: ro/ is read-only, w/ writable.
    refused("link-ro");
    expect(&l, "write-ro-link", "errno=2", &err);
    // The capabilities' rights: a lookup-only capability linked into a writable one.
    expect(&l, "link-lookup", EACCES, &err);
    expect(&l, "write-secret-link", "errno=2", &err);
    // Out of a create-only box by exchange: no unlink there.
    expect(&l, "exchange-box", EACCES, &err);
    // Out of a box with unlink but no read or write, by exchange or rename: it would gain them.
    expect(&l, "exchange-box2", EACCES, &err);
    expect(&l, "rename-box2-out", EACCES, &err);
    expect(&l, "write-pulled", "errno=2", &err);
    // Over a file in the box: an unlink there, which the box does not grant.
    expect(&l, "overwrite-box", EACCES, &err);
    expect(&l, "noreplace-box", "errno=17", &err);
    // A whiteout is a device node left behind; an exchange cannot also not replace.
    expect(&l, "whiteout", "errno=22", &err);
    expect(&l, "exchange-noreplace", "errno=22", &err);
    // Within the rights: all of it works.
    for name in [
        "drop",
        "link-in",
        "link-into-box",
        "rename-in",
        "exchange-in",
        "overwrite-in",
        "noreplace-in",
        "into-box2",
        "box2-within",
    ] {
        expect(&l, name, "ok 0", &err);
    }
    // From outside: nothing refused happened, everything allowed did.
    let read = |p: &str| std::fs::read_to_string(base.join(p)).ok();
    let gone = |p: &str| std::fs::symlink_metadata(base.join(p)).is_err();
    assert_eq!(read("ro/f").as_deref(), Some("ro-original\n"), "{err}");
    assert_eq!(read("m/rw/secret").as_deref(), Some("secret\n"), "{err}");
    assert_eq!(read("m/box/existing").as_deref(), Some("boxed\n"), "{err}");
    assert_eq!(
        read("m/box2/existing2").as_deref(),
        Some("boxed2\n"),
        "{err}"
    );
    for p in [
        "m/w/ro-before",
        "m/w/ro-link",
        "m/w/secret-link",
        "m/w/pulled",
        "m/w/wo",
        "m/w/a",
        "m/w/b",
        "m/w/c",
    ] {
        assert!(gone(p), "{p} exists\n{err}");
    }
    assert_eq!(read("m/box/dropped").as_deref(), Some("payload\n"));
    assert_eq!(read("m/w/decoy").as_deref(), Some("a\n"));
    assert_eq!(read("m/w/moved").as_deref(), Some("decoy\n"));
    assert_eq!(read("m/box2/c2").as_deref(), Some("decoy\n"));
    let ino =
        |p: &str| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(base.join(p)).unwrap());
    assert_eq!(ino("m/box/victim-link"), ino("m/w/victim"));
    // The race: race/ has no unlink, so in every round exactly one of the rename and the link
    // made t-K, and no rename replaced a link.
    let race = l.get("race").cloned().unwrap_or_default();
    let field = |k: &str| -> usize {
        race.split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{k}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in race line {race:?}\n{err}"))
    };
    let n: usize = rounds.parse().unwrap();
    let (a, bn) = (field("a"), field("b"));
    assert_eq!(field("rounds"), n);
    assert_eq!(
        field("both"),
        0,
        "a rename replaced a name in race/: {race}\n{err}"
    );
    assert_eq!(a + bn, n, "{race}\n{err}");
    assert_eq!(
        (field("a-other"), field("b-other")),
        (0, 0),
        "{race}\n{err}"
    );
    let victim = std::fs::metadata(base.join("m/w/rvictim")).unwrap();
    let linked = (0..n)
        .filter(|k| {
            std::fs::symlink_metadata(base.join(format!("m/race/t-{k}"))).is_ok_and(|m| {
                std::os::unix::fs::MetadataExt::ino(&m)
                    == std::os::unix::fs::MetadataExt::ino(&victim)
            })
        })
        .count();
    let moved = (0..n).filter(|k| gone(&format!("m/w/pay-{k}"))).count();
    assert_eq!(linked, bn, "{race}");
    assert_eq!(
        std::os::unix::fs::MetadataExt::nlink(&victim) as usize,
        1 + bn,
        "{race}"
    );
    assert_eq!(moved, a, "{race}");
}

#[test]
fn links_and_renames_between_capabilities_never_widen() {
    each_user(
        "links_and_renames_between_capabilities_never_widen",
        moves_between_capabilities,
    );
}

/// [`moves_between_capabilities`] in a private copy of the tree (`path-map ... copy`): one
/// mount holds both the read-only and the writable directories, so only warden stands between
/// a hard link and a read-only file (the kernel's EXDEV between a view's mounts does not). The
/// copy, as `warden diff` shows it, and the host's tree are checked from outside.
fn moves_in_a_private_copy(who: As) {
    let base = move_tree("move-copy", who);
    let tag = common::who_tag(who);
    let prog = with_library("cap_move");
    let bin = prog.parent().unwrap().to_str().unwrap().to_owned();
    let policy = base.with_extension("policy");
    common::write_file(
        &policy,
        format!(
            "path-map {} /work copy\npath-allow read /work /work/*\n\
             path-allow write /work/m /work/m/*\npath-allow unlink /work/m/*\n",
            base.display()
        ),
        0o644,
    );
    let tmp = common::fresh_dir(&format!("capsicum-move-tmp-{tag}"));
    common::chmod(&tmp, 0o1777);
    let mut cmd = common::warden_cmd(who);
    cmd.env("TMPDIR", &tmp).args([
        "run",
        "-v",
        "--view",
        "on",
        "--keep",
        "--capsicum",
        "--exec",
        &bin,
        "--policy",
        policy.to_str().unwrap(),
        "--",
        prog.to_str().unwrap(),
        "/work",
        "100",
    ]);
    let o = common::finish(cmd, common::RUN_DEADLINE).0;
    let err = common::stderr(&o);
    assert!(o.status.success(), "{}\n{err}", stdout(&o));
    let l = answers(&o);
    expect(&l, "enter", "ok 0", &err);
    expect(&l, "before-link-ro", EACCES, &err);
    expect(&l, "link-ro", EACCES, &err);
    expect(&l, "write-ro-link", "errno=2", &err);
    expect(&l, "link-lookup", EACCES, &err);
    expect(&l, "exchange-box", EACCES, &err);
    expect(&l, "rename-box2-out", EACCES, &err);
    expect(&l, "overwrite-box", EACCES, &err);
    expect(&l, "link-into-box", "ok 0", &err);
    let name = err
        .split("`warden diff ")
        .nth(1)
        .and_then(|r| r.split('`').next())
        .unwrap_or_else(|| panic!("no copy named:\n{err}"))
        .to_owned();
    let mut cmd = common::warden_cmd(who);
    cmd.env("TMPDIR", &tmp).args(["diff", &name]);
    let d = common::finish(cmd, common::RUN_DEADLINE).0;
    common::assert_ok(&d);
    let diff = stdout(&d);
    // What the run changed in its copy: nothing read-only, nothing out of a box.
    for line in diff.lines() {
        let path = line.get(2..).unwrap_or_default();
        assert!(
            !path.starts_with("/work/ro")
                && !matches!(
                    path,
                    "/work/m/w/ro-link"
                        | "/work/m/w/secret-link"
                        | "/work/m/w/pulled"
                        | "/work/m/rw/secret"
                        | "/work/m/box/existing"
                        | "/work/m/box2/existing2"
                ),
            "{line}\n{diff}\n{err}"
        );
    }
    assert!(diff.contains("A /work/m/box/dropped"), "{diff}\n{err}");
    assert_eq!(
        std::fs::read_to_string(base.join("ro/f")).unwrap(),
        "ro-original\n"
    );
    assert!(
        !base.join("m/box/dropped").exists(),
        "the copy reached the host"
    );
}

#[test]
fn links_and_renames_in_a_private_copy_never_widen() {
    each_user(
        "links_and_renames_in_a_private_copy_never_widen",
        moves_in_a_private_copy,
    );
}

#[test]
fn without_capsicum_the_program_side_says_enosys() {
    // Under warden without --capsicum (and outside it, see warden-capsicum's unit tests) no
    // call pretends: cap_enter fails and nothing is confined by it.
    let dir = common::fresh_dir("capsicum-nocap");
    common::chmod(&dir, 0o777);
    let canary = dir.join("canary");
    common::write_file(&canary, "canary\n", 0o666);
    let prog = cap_self();
    let bin = prog.parent().unwrap().to_str().unwrap().to_owned();
    let d = dir.to_str().unwrap();
    let o = run_warden(
        As::Me,
        &dir,
        &[
            "run",
            "--exec",
            &bin,
            "--read",
            d,
            "--write",
            d,
            "--",
            prog.to_str().unwrap(),
            "split",
            canary.to_str().unwrap(),
        ],
    );
    let out = stdout(&o);
    assert!(out.contains("child-enter errno=38"), "{out}");
    assert!(out.contains("child-mode errno=38"), "{out}");
}

/// The Rust API, from inside warden: this test binary runs itself under `warden run
/// --capsicum` and the ignored test below does the work there.
#[test]
fn the_rust_api_enters_and_limits_from_inside() {
    each_user("the_rust_api_enters_and_limits_from_inside", |who| {
        let dir = common::fresh_dir(&format!("capsicum-rust-{}", common::who_tag(who)));
        common::chmod(&dir, 0o777);
        let file = dir.join("data");
        common::write_file(&file, "data\n", 0o666);
        if who == As::Nobody {
            // Its own file, whose mode it may change (fchmod through the allowed descriptors).
            std::os::unix::fs::lchown(&file, Some(65534), Some(65534)).unwrap();
        }
        let me = std::env::current_exe().unwrap();
        let deps = me.parent().unwrap().to_str().unwrap().to_owned();
        let d = dir.to_str().unwrap();
        let env = format!("WARDEN_CAPSICUM_RUST_FILE={}", file.display());
        let o = run_warden(
            who,
            &dir,
            &[
                "run",
                "-v",
                "--capsicum",
                "--exec",
                &deps,
                "--read",
                d,
                "--write",
                d,
                "--env",
                &env,
                "--",
                me.to_str().unwrap(),
                "--ignored",
                "--exact",
                "rust_api_inside_warden",
                "--nocapture",
                "--test-threads",
                "1",
            ],
        );
        let (out, err) = (stdout(&o), common::stderr(&o));
        assert!(o.status.success(), "{out}\n{err}");
        assert!(out.contains("rust-api: all held"), "{out}\n{err}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "data\n");
    });
}

#[test]
#[ignore = "runs inside warden, started by the_rust_api_enters_and_limits_from_inside"]
fn rust_api_inside_warden() {
    use std::io::{Read, Write};
    use warden_capsicum::program::{cap_enter, cap_getmode, cap_rights_get, cap_rights_limit};
    use warden_capsicum::{Right, Rights};
    let path = std::env::var("WARDEN_CAPSICUM_RUST_FILE").expect("run by the test above");
    assert!(!cap_getmode().unwrap());
    // A process descriptor made before entering, used after it.
    let pd = warden_capsicum::process::ProcessDescriptor::spawn(c"/bin/sleep", &[c"sleep", c"100"])
        .unwrap();
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    // Two more descriptors of the same file: another open, and a copy of f made before the
    // limit. Rights are per open file description: neither is narrowed by f's limit.
    let other = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let before = f.try_clone().unwrap();
    let read = Rights::of(&[Right::Read, Right::Fstat]);
    cap_rights_limit(&f, read).unwrap();
    assert_eq!(cap_rights_get(&f).unwrap(), read);
    let after = f.try_clone().unwrap();
    assert_eq!(cap_rights_get(&after).unwrap(), read);
    assert_eq!(cap_rights_get(&other).unwrap(), Rights::all());
    assert_eq!(cap_rights_get(&before).unwrap(), Rights::all());
    // Limiting the other one to fchmod alone leaves f as it was.
    let fchmod_only = Rights::of(&[Right::Read, Right::Write, Right::Fchmod]);
    cap_rights_limit(&other, fchmod_only).unwrap();
    assert_eq!(cap_rights_get(&f).unwrap(), read);
    assert_eq!(cap_rights_get(&other).unwrap(), fchmod_only);
    cap_enter().unwrap();
    assert!(cap_getmode().unwrap());
    let errno = |e: std::io::Error| e.raw_os_error();
    assert_eq!(
        errno(std::fs::File::open("/etc/passwd").unwrap_err()),
        Some(libc::EPERM)
    );
    assert_eq!(
        errno(std::fs::File::open(&path).unwrap_err()),
        Some(libc::EPERM)
    );
    assert_eq!(errno(f.write(b"x").unwrap_err()), Some(libc::EBADF));
    // The agent checks each description's own rights: fchmod through f and its later copy is
    // refused, through the others allowed (and the file's mode is put back).
    use std::os::unix::fs::PermissionsExt;
    let mode = |m: u32| std::fs::Permissions::from_mode(m);
    assert_eq!(
        errno(f.set_permissions(mode(0o600)).unwrap_err()),
        Some(libc::EACCES)
    );
    assert_eq!(
        errno(after.set_permissions(mode(0o600)).unwrap_err()),
        Some(libc::EACCES)
    );
    other.set_permissions(mode(0o600)).unwrap();
    before.set_permissions(mode(0o666)).unwrap();
    let mut s = String::new();
    f.read_to_string(&mut s).unwrap();
    assert_eq!(s, "data\n");
    assert_eq!(
        errno(cap_rights_limit(&f, Rights::of(&[Right::Read, Right::Write])).unwrap_err()),
        Some(libc::EACCES)
    );
    // The descriptor names the process; its pid does not, in capability mode.
    let pid = rustix::process::Pid::from_raw(pd.pid().unwrap()).unwrap();
    assert_eq!(
        rustix::process::kill_process(pid, rustix::process::Signal::TERM),
        Err(rustix::io::Errno::PERM)
    );
    pd.kill(libc::SIGTERM).unwrap();
    assert_eq!(
        pd.wait().unwrap(),
        warden_capsicum::process::Exit::Signal(libc::SIGTERM)
    );
    // A thread and a child are in it too.
    std::thread::spawn(|| assert!(cap_getmode().unwrap()))
        .join()
        .unwrap();
    let child = std::process::Command::new("/bin/true").status();
    assert_eq!(child.map_err(errno).unwrap_err(), Some(libc::EPERM));
    println!("rust-api: all held");
}

// ---- process descriptors ------------------------------------------------------------------------

fn process_descriptors(who: As) {
    let prog = with_library("cap_pd");
    let bin = prog.parent().unwrap().to_str().unwrap().to_owned();
    let dir = common::fresh_dir(&format!("capsicum-pd-{}", common::who_tag(who)));
    common::chmod(&dir, 0o777);
    let o = run_warden(
        who,
        &dir,
        &[
            "run",
            "-v",
            "--capsicum",
            "--exec",
            &bin,
            "--",
            prog.to_str().unwrap(),
        ],
    );
    let err = common::stderr(&o);
    assert!(o.status.success(), "{}\n{err}", stdout(&o));
    let l = answers(&o);
    for (name, want) in [
        ("getpid-matches", "ok 1"),
        // SIGKILL when the last descriptor closes, across the child's exec, not before.
        ("close-kills-exec", "ok 9"),
        ("enter", "ok 0"),
        ("dup-keeps-alive", "ok 1"),
        ("close-kills", "ok 9"),
        ("pdwait-pid-matches", "ok 1"),
        ("pdwait-exit", "ok 7"),
        // No SIGCHLD from a pdfork child; a fork child's comes (the counter can count).
        ("sigchld-after-pdfork", "ok 0"),
        ("sigchld-after-fork", "ok 1"),
        ("poll-running", "ok 0"),
        ("poll-exit", "ok 1"),
        ("poll-exit-status", "ok 3"),
        // In capability mode a pid names nothing; the descriptor does.
        ("kill-by-pid", EPERM),
        ("pdkill", "ok 0"),
        ("pdkill-status", "ok 15"),
        ("pdwait-not-pd", "errno="),
    ] {
        expect(&l, name, want, &err);
    }
    assert!(err.contains("capability-mode:other-process"), "{err}");
}

#[test]
fn process_descriptors_kill_on_close_send_no_sigchld_and_poll_for_exit() {
    each_user(
        "process_descriptors_kill_on_close_send_no_sigchld_and_poll_for_exit",
        process_descriptors,
    );
}

// ---- warden inspect ------------------------------------------------------------------------------

fn inspect_shows_mode_and_rights(who: As) {
    use std::io::BufRead;
    let dir = common::fresh_dir(&format!("capsicum-inspect-{}", common::who_tag(who)));
    common::chmod(&dir, 0o777);
    let file = dir.join("held");
    common::write_file(&file, "held\n", 0o666);
    let prog = cap_self();
    let bin = prog.parent().unwrap().to_str().unwrap().to_owned();
    let d = dir.to_str().unwrap();
    let mut child = common::warden_cmd(who)
        .args([
            "run",
            "--capsicum",
            "--exec",
            &bin,
            "--read",
            d,
            "--write",
            d,
            "--",
        ])
        .arg(&prog)
        .args(["hold", file.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("warden starts");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let out = child.stdout.take().unwrap();
    let child = Kill(child);
    let mut line = String::new();
    std::io::BufReader::new(out).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready", "the program did not get ready");
    let pid = child.0.id().to_string();
    let inspect = |json: bool| {
        let mut args = vec!["inspect", pid.as_str()];
        if json {
            args.push("--json");
        }
        // The run is registered 20 ms after it starts and rewritten every half second: wait
        // for it, and for the limit to show.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let o = run_warden(who, &dir, &args);
            if !o.status.success() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(50));
                continue;
            }
            common::assert_ok(&o);
            let text = stdout(&o);
            // The registry is rewritten every half second: the rights limit and the entry into
            // capability mode (the program's next call) can land in different rewrites.
            let entered = if json {
                serde_json::from_str::<serde_json::Value>(&text)
                    .ok()
                    .and_then(|d| {
                        d["processes"]
                            .as_array()
                            .map(|ps| ps.iter().any(|p| p["capability_mode"] == true))
                    })
                    .unwrap_or(false)
            } else {
                text.contains(", in capability mode")
            };
            if (text.contains("read,fstat") && entered) || std::time::Instant::now() > deadline {
                return text;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    };
    let doc: serde_json::Value = serde_json::from_str(&inspect(true)).unwrap();
    assert_eq!(doc["sandbox"]["capsicum"]["entry"], "program", "{doc:#}");
    let procs = doc["processes"].as_array().unwrap();
    let mine: Vec<_> = procs.iter().filter(|p| p["comm"] == "cap_self").collect();
    assert_eq!(mine.len(), 2, "{doc:#}");
    let inside: Vec<_> = mine
        .iter()
        .filter(|p| p["capability_mode"] == true)
        .collect();
    let outside: Vec<_> = mine
        .iter()
        .filter(|p| p["capability_mode"] == false)
        .collect();
    assert_eq!((inside.len(), outside.len()), (1, 1), "{doc:#}");
    let fd7 = |p: &serde_json::Value| {
        p["fds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["fd"] == 7)
            .cloned()
            .unwrap()
    };
    // Narrowed by cap_rights_limit: the rights, and the access mode the kernel enforces.
    assert_eq!(fd7(inside[0])["rights"], "read,fstat", "{doc:#}");
    assert_eq!(fd7(inside[0])["mode"], "r", "{doc:#}");
    let text = inspect(false);
    assert!(
        text.contains("capability mode: processes that entered it"),
        "{text}"
    );
    assert!(text.contains(", in capability mode"), "{text}");
    assert!(text.contains(", not in capability mode"), "{text}");
    assert!(
        text.contains("RIGHTS") && text.contains("read,fstat"),
        "{text}"
    );
    drop(child);
}

#[test]
fn inspect_shows_capability_mode_and_rights() {
    each_user(
        "inspect_shows_capability_mode_and_rights",
        inspect_shows_mode_and_rights,
    );
}

/// A directory named with `--fd` grants beyond the policy's allow rules, never past its
/// `path-deny` ones: with `/etc` as the capability, `/etc/shadow` (carved out by the default
/// policy) stays refused while `/etc/passwd` opens (the agent walks as root for a root run, so
/// only the policy stands between the program and the file).
#[test]
fn a_directory_capability_keeps_the_policys_denials() {
    each_user("a_directory_capability_keeps_the_policys_denials", |who| {
        let (l, err) = probe(
            who,
            Path::new("/etc"),
            "read,lookup",
            &[],
            &["etc-shadow", "etc-passwd"],
        );
        expect(&l, "etc-shadow", EACCES, &err);
        expect(&l, "etc-passwd", "ok", &err);
    });
}

/// Under `--capability-mode` a directory beneath which a `path-deny` rule holds does not move:
/// what it holds would leave the rule's reach (`EXDEV`, as for a rename that widens). One
/// beneath which none holds moves. Checked from outside.
#[test]
fn a_directory_under_a_denial_does_not_move_out_of_it() {
    each_user(
        "a_directory_under_a_denial_does_not_move_out_of_it",
        |who| {
            let (base, cap) = tree("move-deny", who);
            if who == As::Nobody {
                let st = std::process::Command::new("chown")
                    .args(["-R", "65534:65534"])
                    .arg(&cap)
                    .status()
                    .unwrap();
                assert!(st.success());
            }
            let policy = base.join("deny.policy");
            common::write_file(
                &policy,
                format!("path-deny {}/sub/*\n", cap.display()),
                0o644,
            );
            let (l, err) = probe(
                who,
                &cap,
                "read,lookup,create,unlink",
                &["--policy", policy.to_str().unwrap()],
                &["rename-dir-sub", "rename-dir-a"],
            );
            expect(&l, "rename-dir-sub", "errno=18", &err);
            expect(&l, "rename-dir-a", "ok", &err);
            assert!(cap.join("sub/g").exists() && !cap.join("sub-moved").exists());
            assert!(cap.join("a-moved/b").exists() && !cap.join("a").exists());
        },
    );
}

// ---- scrubbed sandbox start (libcapsicum's lch_start): warden_capsicum::sandbox ----------------

/// A host (this test binary, run as `who` outside any sandbox) starts a sandbox (this test
/// binary again, under `warden run --capability-mode`) with two named descriptors and passes two
/// more later over the socket; the sandbox reports what it can do, the host checks it and then
/// ends it, and sees from outside that every holder of a pipe given to it is gone.
#[test]
fn a_sandbox_started_by_a_host_holds_exactly_its_descriptors() {
    each_user(
        "a_sandbox_started_by_a_host_holds_exactly_its_descriptors",
        |who| {
            let dir = common::fresh_dir(&format!("capsicum-lch-{}", common::who_tag(who)));
            common::chmod(&dir, 0o777);
            std::fs::create_dir_all(dir.join("cap")).unwrap();
            common::chmod(&dir.join("cap"), 0o777);
            common::write_file(&dir.join("in"), "input\n", 0o666);
            common::write_file(&dir.join("later"), "later\n", 0o666);
            common::write_file(&dir.join("secret"), "secret\n", 0o666);
            common::write_file(&dir.join("cap/f"), "in-cap\n", 0o666);
            let me = std::env::current_exe().unwrap();
            let mut cmd = match who {
                As::Me => std::process::Command::new(&me),
                As::Nobody => {
                    let mut c = std::process::Command::new("/usr/bin/setpriv");
                    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                        .arg(&me);
                    c
                }
            };
            cmd.args([
                "--ignored",
                "--exact",
                "sandbox_host",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("WARDEN_TEST_WARDEN", common::warden())
            .env("WARDEN_TEST_DIR", &dir)
            .current_dir(&dir)
            .stdin(std::process::Stdio::null());
            let (o, _) = common::finish(cmd, std::time::Duration::from_secs(240));
            let (out, err) = (stdout(&o), common::stderr(&o));
            assert!(o.status.success(), "{out}\n{err}");
            assert!(out.contains("sandbox-host: all held"), "{out}\n{err}");
            // Nothing the sandbox was refused happened.
            assert!(!dir.join("cap/new").exists());
            assert_eq!(std::fs::read_to_string(dir.join("in")).unwrap(), "Input\n");
            assert_eq!(
                std::fs::read_to_string(dir.join("later")).unwrap(),
                "later\n"
            );
        },
    );
}

/// The kernel's wall behind the agent (`--capability-mode`): the sandbox's Landlock domain has
/// a layer allowing only what its starting capabilities grant (and the loader's directories).
/// A host (tests/c/cap_lch.c, through the C library) gives the sandbox /bin/true with read and
/// fexecve at the start, and a copy of it with the same rights later: the agent allows both
/// fexecve's (it recorded both rights), and the kernel runs only the first.
#[test]
fn the_kernel_executes_only_what_the_starting_capabilities_grant() {
    each_user(
        "the_kernel_executes_only_what_the_starting_capabilities_grant",
        |who| {
            let prog = with_library("cap_lch");
            let bin = prog.parent().unwrap().to_str().unwrap().to_owned();
            // A copy of true beside the program: allowed by the policy (--exec DIR), a file of
            // its own to Landlock.
            let late = prog.with_file_name(format!("late-true-{}", common::who_tag(who)));
            if !late.exists() {
                std::fs::copy("/bin/true", &late).unwrap();
                common::chmod(&late, 0o755);
            }
            let mut cmd = match who {
                As::Me => std::process::Command::new(&prog),
                As::Nobody => {
                    let mut c = std::process::Command::new("/usr/bin/setpriv");
                    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                        .arg(&prog);
                    c
                }
            };
            cmd.arg(common::warden())
                .arg(&bin)
                .arg(&late)
                .current_dir(common::workdir())
                .stdin(std::process::Stdio::null());
            let (o, _) = common::finish(cmd, std::time::Duration::from_secs(240));
            let (out, err) = (stdout(&o), common::stderr(&o));
            assert!(o.status.success(), "{out}\n{err}");
            let l = report(out.as_bytes());
            let fexecve = warden_capsicum::Rights::of(&[
                warden_capsicum::Right::Read,
                warden_capsicum::Right::Fexecve,
            ]);
            expect(&l, "tool-exec", "ok", &err);
            // The rights arrived (the agent lets it through), the kernel refuses.
            expect(&l, "late-rights", &format!("ok {}", fexecve.bits()), &err);
            expect(&l, "late-exec", EACCES, &err);
        },
    );
}

/// The lines `NAME RESULT` of a report, as a map.
fn report(bytes: &[u8]) -> HashMap<String, String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The descriptors a host hands a sandbox it starts are inherited by that sandbox alone: while
/// the host starts and stops sandboxes, another of its threads keeps starting programs (as a
/// library's host process would), and none of those ever holds the sandbox's socket or its
/// input. They did when the copies lost close-on-exec in the host before the spawn.
fn starting_leaks_nothing_to_other_children(warden: &Path, input: &std::fs::File) {
    use std::os::fd::AsFd;
    use warden_capsicum::sandbox::{Named, Sandbox};
    use warden_capsicum::{Right, Rights};
    let input_path = std::fs::read_link(format!(
        "/proc/self/fd/{}",
        std::os::fd::AsRawFd::as_raw_fd(input)
    ))
    .unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = std::sync::Arc::clone(&done);
    let spawner = std::thread::spawn(move || {
        let (mut runs, mut leaked) = (0, Vec::new());
        while !stop.load(std::sync::atomic::Ordering::SeqCst) || runs == 0 {
            let o = std::process::Command::new("/bin/ls")
                .args(["-l", "/proc/self/fd/"])
                .output()
                .unwrap();
            runs += 1;
            let held: Vec<String> = String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.contains("socket:") || l.contains(&*input_path.to_string_lossy()))
                .map(str::to_owned)
                .collect();
            if !held.is_empty() {
                leaked.push(held.join("\n"));
            }
        }
        (runs, leaked)
    });
    for _ in 0..200 {
        let sandbox = Sandbox::start(
            warden,
            &[],
            &["/bin/true"],
            &[Named {
                name: "in",
                fd: input.as_fd(),
                rights: Rights::of(&[Right::Read]),
            }],
        )
        .unwrap();
        sandbox.stop().unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let (runs, leaked) = spawner.join().unwrap();
    assert!(
        leaked.is_empty(),
        "{} of {runs} other children inherited a sandbox's descriptors:\n{}",
        leaked.len(),
        leaked.join("\n--\n")
    );
    println!("sandbox-host: {runs} other children, none inherited a sandbox's descriptor");
}

#[test]
#[ignore = "the host, run by a_sandbox_started_by_a_host_holds_exactly_its_descriptors"]
fn sandbox_host() {
    use std::os::fd::AsFd;
    use warden_capsicum::sandbox::{Named, Sandbox};
    use warden_capsicum::{Right, Rights};
    let warden = std::env::var("WARDEN_TEST_WARDEN").expect("run by the test above");
    let dir = PathBuf::from(std::env::var("WARDEN_TEST_DIR").unwrap());
    let me = std::env::current_exe().unwrap();
    let deps = me.parent().unwrap().to_str().unwrap().to_owned();
    // The host holds the input read-write; the sandbox gets it read-only.
    let input = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join("in"))
        .unwrap();
    starting_leaks_nothing_to_other_children(Path::new(&warden), &input);
    let (alive_r, alive_w) = rustix::pipe::pipe().unwrap();
    let read_seek = Rights::of(&[Right::Read, Right::Seek, Right::Fstat]);
    let sandbox = Sandbox::start(
        Path::new(&warden),
        &["--exec", &deps],
        &[
            me.to_str().unwrap(),
            "--ignored",
            "--exact",
            "sandbox_child",
            "--nocapture",
            "--test-threads",
            "1",
        ],
        &[
            Named {
                name: "in",
                fd: input.as_fd(),
                rights: read_seek,
            },
            Named {
                name: "alive",
                fd: alive_w.as_fd(),
                rights: Rights::of(&[Right::Write]),
            },
        ],
    )
    .unwrap();
    drop(alive_w);
    let expect = |l: &HashMap<String, String>, name: &str, want: &str| {
        let got = l.get(name).map(String::as_str).unwrap_or("<no line>");
        assert!(
            got.starts_with(want),
            "{name}: got {got:?}, want {want:?}\n{l:#?}"
        );
    };
    let (answer, fds) = sandbox.call(b"start", &[]).unwrap();
    assert!(fds.is_empty());
    let l = report(&answer);
    // stdio, in, alive and host: nothing else.
    expect(&l, "descriptors", "ok 6");
    expect(&l, "names", "ok alive,host,in");
    expect(&l, "in-read", "ok input");
    expect(&l, "in-write", EBADF);
    expect(&l, "in-rights", &format!("ok {}", read_seek.bits()));
    expect(&l, "mode", "ok 1");
    expect(&l, "open-abs", EPERM);
    expect(&l, "open-secret", EPERM);
    expect(&l, "socket", EPERM);
    expect(&l, "kill-1", EPERM);
    // More capabilities later: a directory (read, lookup) and a file the host holds read-write,
    // given read-only.
    let cap = std::fs::File::open(dir.join("cap")).unwrap();
    let later = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(dir.join("later"))
        .unwrap();
    let read_lookup = Rights::of(&[Right::Read, Right::Lookup]);
    let read = Rights::of(&[Right::Read]);
    let (answer, _) = sandbox
        .call(
            b"later",
            &[(cap.as_fd(), read_lookup), (later.as_fd(), read)],
        )
        .unwrap();
    let l = report(&answer);
    expect(&l, "received", "ok 2");
    expect(&l, "cap-open", "ok in-cap");
    expect(&l, "cap-create", EACCES);
    expect(&l, "cap-dotdot", EACCES);
    expect(&l, "cap-rights", &format!("ok {}", read_lookup.bits()));
    expect(&l, "later-read", "ok later");
    expect(&l, "later-write", EBADF);
    expect(&l, "later-fchmod", EACCES);
    expect(&l, "later-rights", &format!("ok {}", read.bits()));
    // A wider grant than the descriptor is refused by the host library before anything moves:
    // a socket cannot be narrowed to read-only.
    let (s1, _s2) = std::os::unix::net::UnixStream::pair().unwrap();
    assert_eq!(
        sandbox
            .send(b"x", &[(s1.as_fd(), read)])
            .unwrap_err()
            .raw_os_error(),
        Some(libc::EOPNOTSUPP)
    );
    // The host's own descriptors keep every right.
    rustix::io::pwrite(&input, b"I", 0).unwrap();
    // Closing the host's side ends the sandbox: every holder of the pipe's write end is gone.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut b = [0u8; 1];
        let _ = tx.send(rustix::io::read(&alive_r, &mut b));
    });
    drop(sandbox);
    let eof = rx.recv_timeout(std::time::Duration::from_secs(30));
    assert_eq!(eof, Ok(Ok(0)), "the sandbox outlived its host's side");
    println!("sandbox-host: all held");
}

#[test]
#[ignore = "the sandbox, started by sandbox_host"]
fn sandbox_child() {
    use std::io::Read;
    use std::os::fd::{AsFd, OwnedFd};
    use warden_capsicum::program::{cap_getmode, cap_rights_get};
    let host = warden_capsicum::sandbox::host().expect("started by sandbox_host");
    let res = |r: std::io::Result<String>| match r {
        Ok(s) => format!("ok {s}"),
        Err(e) => format!("errno={}", e.raw_os_error().unwrap_or(0)),
    };
    let rights = |fd: &OwnedFd| res(cap_rights_get(fd).map(|r| r.bits().to_string()));
    let read_all = |fd: &OwnedFd| {
        let mut f = std::fs::File::from(fd.try_clone()?);
        let mut s = String::new();
        f.read_to_string(&mut s)?;
        Ok(s.trim().to_owned())
    };
    let write = |fd: &OwnedFd| {
        rustix::io::write(fd, b"x")
            .map(|n| n.to_string())
            .map_err(Into::into)
    };
    let mut received: Vec<OwnedFd> = Vec::new();
    loop {
        let (msg, fds) = host.recv().unwrap();
        if msg.is_empty() && fds.is_empty() {
            return;
        }
        let mut lines = Vec::new();
        let mut line = |name: &str, r: String| lines.push(format!("{name} {r}"));
        match msg.as_slice() {
            b"start" => {
                let open: Vec<i32> = (0..1024)
                    .filter(|n| warden::sys::process::fd_is_open(*n))
                    .collect();
                line("descriptors", res(Ok(open.len().to_string())));
                let list = std::env::var(warden_capsicum::fdlist::ENV).unwrap_or_default();
                let mut names: Vec<&str> = list
                    .split(',')
                    .filter_map(|e| e.split_once('=').map(|(n, _)| n))
                    .collect();
                names.sort_unstable();
                line("names", res(Ok(names.join(","))));
                let n = warden_capsicum::fdlist::lookup("in").unwrap();
                let input = warden::sys::process::take_inherited(n).unwrap();
                line("in-read", res(read_all(&input)));
                line("in-write", res(write(&input)));
                line("in-rights", rights(&input));
                line("mode", res(cap_getmode().map(|m| u8::from(m).to_string())));
                line(
                    "open-abs",
                    res(std::fs::File::open("/etc/passwd").map(|_| String::new())),
                );
                let secret = std::env::var("WARDEN_TEST_DIR").unwrap_or_default() + "/secret";
                line(
                    "open-secret",
                    res(std::fs::File::open(secret).map(|_| String::new())),
                );
                line(
                    "socket",
                    res(std::os::unix::net::UnixDatagram::unbound().map(|_| String::new())),
                );
                line(
                    "kill-1",
                    res(rustix::process::kill_process(
                        rustix::process::Pid::from_raw(1).unwrap(),
                        rustix::process::Signal::TERM,
                    )
                    .map(|_| String::new())
                    .map_err(Into::into)),
                );
                received.push(input);
            }
            b"later" => {
                line("received", res(Ok(fds.len().to_string())));
                if let [cap, later] = fds.as_slice() {
                    let at = |p: &str, flags: rustix::fs::OFlags| {
                        rustix::fs::openat(cap, p, flags, rustix::fs::Mode::from_raw_mode(0o644))
                            .map_err(std::io::Error::from)
                    };
                    line(
                        "cap-open",
                        res(at("f", rustix::fs::OFlags::RDONLY).and_then(|f| read_all(&f))),
                    );
                    line(
                        "cap-create",
                        res(at(
                            "new",
                            rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CREATE,
                        )
                        .map(|_| String::new())),
                    );
                    line(
                        "cap-dotdot",
                        res(at("../secret", rustix::fs::OFlags::RDONLY).map(|_| String::new())),
                    );
                    line("cap-rights", rights(cap));
                    line("later-read", res(read_all(later)));
                    line("later-write", res(write(later)));
                    line(
                        "later-fchmod",
                        res(
                            rustix::fs::fchmod(later, rustix::fs::Mode::from_raw_mode(0o600))
                                .map(|_| String::new())
                                .map_err(Into::into),
                        ),
                    );
                    line("later-rights", rights(later));
                }
                received.extend(fds);
            }
            _ => line("unknown", "errno=22".into()),
        }
        host.send(lines.join("\n").as_bytes(), &[]).unwrap();
        let _ = host.as_fd();
    }
}
