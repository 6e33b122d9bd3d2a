//! The resolver on its own, against the kernel's own answers on the same trees.
//!
//! What the resolver promises (docs/design.md, "The agent's steps"): with a policy that allows
//! everything, a walk reaches the object (or fails with the errno) that a plain `openat(2)` by
//! the caller reaches, for a caller whose root directory is the walk's root (the sandbox's
//! view, or `/`) and whose cwd is the walk's base. For absolute paths that is
//! `openat2(root, path, RESOLVE_IN_ROOT)`; with `beneath` it is `RESOLVE_BENEATH`, with
//! `no_symlinks` `RESOLVE_NO_SYMLINKS`. The oracle is the kernel itself, in a thread that
//! `chroot`s into the tree (a thread's root is its own after `unshare(CLONE_FS)`).
//!
//! The answers compared: the object reached, as (device, inode) of an `O_PATH` descriptor
//! (the symlink itself when the final component is not followed), or the errno. A walk that
//! ends at a missing final component answers "no object", which a handler turns into
//! `ENOENT` (or `EACCES` where the policy hides the path): so does the test.
//!
//! Deliberate differences, tested below on their own: `/proc/<pid>` of any other process is
//! `ENOENT` (the kernel shows it); `RESOLVE_IN_ROOT` as an openat2 flag is the agent's `EINVAL`
//! (handled in `fs::open`, not here); paths the policy hides answer `EACCES` whatever the
//! kernel would say, so that existence cannot be probed.

use super::*;
use crate::testing::TempTree;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// The answer of a walk or of the kernel: the object reached, or an errno.
type Reached = Result<(u64, u64), i32>;

/// Prints and records a skip the way the integration suites do (docs/guide.md, "The test suite"),
/// and fails instead when `WARDEN_REQUIRE` says this machine has what is lacking.
fn skip(test: &str, key: &str, reason: &str) {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIP warden::{test} [{key}]: {reason}"
    );
    if let Some(dir) = std::env::var_os("WARDEN_SKIP_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        let line = format!("{key}\twarden::{test}\t{reason}\n");
        std::fs::create_dir_all(&dir)
            .and_then(|()| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join("skips.tsv"))?
                    .write_all(line.as_bytes())
            })
            .expect("record the skip");
    }
    let required = std::env::var("WARDEN_REQUIRE").unwrap_or_default();
    assert!(
        !required.split(',').any(|k| k.trim() == key),
        "{test} skipped for lack of `{key}` ({reason}), but WARDEN_REQUIRE={required} says this \
         machine has it"
    );
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The test itself as the resolver's caller: its cwd is `cwd` (a directory of the tree, with
/// its path from the tree's root), its ids are its own.
struct Me<'a> {
    cwd: (OwnedFd, Vec<u8>),
    policy: &'a Policy,
}

impl Caller for Me<'_> {
    fn base(&self, base: Base) -> Result<(OwnedFd, Vec<u8>), i32> {
        match base {
            Base::Cwd => Ok((
                self.cwd.0.try_clone().map_err(|_| libc::EMFILE)?,
                self.cwd.1.clone(),
            )),
            Base::Fd(_) => Err(libc::EBADF),
        }
    }

    fn ids(&self) -> Result<Ids, i32> {
        let pid = rustix::process::getpid().as_raw_nonzero().get() as u32;
        Ok(Ids {
            tgid: pid,
            ns_tgid: pid,
            umask: 0o022,
            filters: None,
        })
    }

    fn tid(&self) -> u32 {
        rustix::thread::gettid().as_raw_nonzero().get() as u32
    }

    fn is_stand_in(&self, _fd: i32) -> bool {
        false
    }

    fn decide_visible(&self, path: &str) -> Result<(), i32> {
        self.policy.visible(path).map(drop).ok_or(libc::EACCES)
    }

    // The resolver's unit tests walk the host's tree, never a view: nothing to log.
    fn refuse_hosts_tmp(&self, _path: &str) {}
}

fn allow_all() -> Policy {
    Policy::parse("test", "path-allow read /*\n").expect("policy")
}

fn id(fd: &OwnedFd) -> Reached {
    let st = rustix::fs::fstat(fd).map_err(|e| e.raw_os_error())?;
    Ok((st.st_dev, st.st_ino))
}

/// The resolver's answer for `path`, as a handler sees it: a missing final component is
/// `ENOENT` where the policy lets the program know, `EACCES` elsewhere.
fn resolved(
    resolver: &Resolver,
    me: &Me,
    policy: &Policy,
    base: Base,
    path: &[u8],
    flags: WalkFlags,
) -> Reached {
    let w = resolver.walk(me, policy, base, path, flags)?;
    if let Some(n) = w.descriptor {
        // One of our own descriptors that names no path (a pipe): the object is that one.
        return own_fd(n);
    }
    if w.kind.is_none() {
        return Err(mask(policy, &w.path, libc::ENOENT));
    }
    id(&w.object()?)
}

/// (device, inode) of our own descriptor `n`.
fn own_fd(n: i32) -> Reached {
    let path = format!("/proc/self/fd/{n}");
    let st = rustix::fs::stat(path.as_str()).map_err(|e| e.raw_os_error())?;
    Ok((st.st_dev, st.st_ino))
}

/// How the kernel is asked: the same three ways the resolver walks.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode2 {
    Plain,
    Beneath,
    NoSymlinks,
}

/// The kernel's answer, from the calling thread's root and cwd; or, given `in_root`, from that
/// directory as both (`RESOLVE_IN_ROOT`, which needs no privilege).
fn kernel_in(in_root: Option<&OwnedFd>, path: &[u8], follow: bool, how: Mode2) -> Reached {
    let mut flags = OFlags::PATH | OFlags::CLOEXEC;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    let resolve = match how {
        Mode2::Plain => rustix::fs::ResolveFlags::empty(),
        Mode2::Beneath => rustix::fs::ResolveFlags::BENEATH,
        Mode2::NoSymlinks => rustix::fs::ResolveFlags::NO_SYMLINKS,
    };
    let (dir, resolve) = match in_root {
        // BENEATH and IN_ROOT do not combine: beneath the root, `/` and `..` are EXDEV anyway.
        Some(root) if how == Mode2::Beneath => (root.as_fd(), resolve),
        Some(root) => (root.as_fd(), resolve | rustix::fs::ResolveFlags::IN_ROOT),
        None => (rustix::fs::CWD, resolve),
    };
    // openat2(2): with RESOLVE_BENEATH (or IN_ROOT), `..` fails with EAGAIN when a rename or
    // mount anywhere in the system raced with the lookup; the caller is to retry.
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(dir, path, flags, Mode::empty(), resolve) {
            Err(rustix::io::Errno::AGAIN) if tries < 100 => tries += 1,
            other => return id(&other.map_err(|e| e.raw_os_error())?),
        }
    }
}

/// Makes one level of the test tree in `dir`: a file, a directory (the next level, down to
/// `levels`), and symlinks of every kind a walk meets.
fn build(dir: &Path, level: usize, levels: usize) {
    std::fs::write(dir.join("f"), b"f").unwrap();
    for (name, target) in [
        ("l", "../d"), // relative, through `..` (at the root, `..` stays there)
        ("a", "/d"),   // absolute: back to the walk's root
        ("x", "n"),    // dangling
        ("p", "p"),    // a loop
        ("c", "l"),    // a chain
        ("s", "f/"),   // a file named as a directory
        ("e", "."),    // a target with no component
        ("r", "/"),    // the root itself
    ] {
        symlink(target, dir.join(name)).unwrap();
    }
    if level < levels {
        std::fs::create_dir(dir.join("d")).unwrap();
        build(&dir.join("d"), level + 1, levels);
    }
}

fn open_dir(path: &Path) -> OwnedFd {
    openat(
        rustix::fs::CWD,
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap()
}

/// Every path of `1..=max` components over `alphabet`, each joined by `/`, with its length.
fn paths(alphabet: &[&str], max: usize) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut layer = vec![String::new()];
    for len in 1..=max {
        layer = layer
            .iter()
            .flat_map(|p| {
                alphabet.iter().map(move |c| match p.is_empty() {
                    true => c.to_string(),
                    false => format!("{p}/{c}"),
                })
            })
            .collect();
        out.extend(layer.iter().map(|p| (p.clone(), len)));
    }
    out
}

/// The kernel's answer, from the calling thread's root and cwd.
fn kernel(path: &[u8], follow: bool, how: Mode2) -> Reached {
    kernel_in(None, path, follow, how)
}

/// One comparison's outcome, for the report of mismatches.
struct Case {
    path: String,
    follow: bool,
    how: Mode2,
    walked: Reached,
    kernel: Reached,
}

/// Compares the resolver with the kernel on every path of up to `max` components over
/// `alphabet` (plus every variant: absolute and relative, with and without a trailing slash,
/// following the final symlink or not, plain, beneath and with no symlinks), in a thread whose
/// root is `root` and whose cwd is `cwd` (a path from `root`). `long` paths of exactly `max`
/// components are compared in the plain way only. Returns how many were compared.
fn compare_all(
    root: &Path,
    cwd: &str,
    alphabet: &[&str],
    max: usize,
    prepare: impl FnOnce() + Send,
) -> usize {
    let root = root.to_owned();
    let cwd = cwd.to_owned();
    let alphabet: Vec<String> = alphabet.iter().map(|s| s.to_string()).collect();
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                prepare();
                let policy = allow_all();
                let resolver = Resolver::rooted(open_dir(&root)).unwrap();
                let me = Me {
                    cwd: (
                        open_dir(&root.join(cwd.trim_start_matches('/'))),
                        cwd.clone().into_bytes(),
                    ),
                    policy: &policy,
                };
                // As root, the kernel answers in a chroot of the tree; otherwise, from its root
                // only, by RESOLVE_IN_ROOT.
                let in_root = (!is_root()).then(|| {
                    assert_eq!(cwd, "/", "without root, walks start from the tree's root");
                    open_dir(&root)
                });
                if in_root.is_none() {
                    crate::sys::process::unshare_fs().unwrap();
                    rustix::process::chroot(&root).unwrap();
                    rustix::process::chdir(cwd.as_str()).unwrap();
                }
                let alphabet: Vec<&str> = alphabet.iter().map(String::as_str).collect();
                let mut bad = Vec::new();
                let mut count = 0;
                for (rel, len) in paths(&alphabet, max) {
                    let full = len < max;
                    for absolute in [true, false] {
                        for slash in [false, true] {
                            if slash && !full {
                                continue;
                            }
                            let mut text = if absolute {
                                format!("/{rel}")
                            } else {
                                rel.clone()
                            };
                            if slash {
                                text.push('/');
                            }
                            for follow in [true, false] {
                                for how in [Mode2::Plain, Mode2::Beneath, Mode2::NoSymlinks] {
                                    if how != Mode2::Plain && !full {
                                        continue;
                                    }
                                    let flags = WalkFlags {
                                        follow,
                                        no_symlinks: how == Mode2::NoSymlinks,
                                        beneath: how == Mode2::Beneath,
                                    };
                                    let walked = resolved(
                                        &resolver,
                                        &me,
                                        &policy,
                                        Base::Cwd,
                                        text.as_bytes(),
                                        flags,
                                    );
                                    let kernel =
                                        kernel_in(in_root.as_ref(), text.as_bytes(), follow, how);
                                    count += 1;
                                    if walked != kernel {
                                        bad.push(Case {
                                            path: text.clone(),
                                            follow,
                                            how,
                                            walked,
                                            kernel,
                                        });
                                    }
                                }
                            }
                        }
                    }
                }
                report(&bad, count);
                count
            })
            .join()
            .expect("comparison thread")
    })
}

fn report(bad: &[Case], count: usize) {
    if bad.is_empty() {
        return;
    }
    let name = |r: &Reached| match r {
        Ok((d, i)) => format!("object {d}:{i}"),
        Err(e) => format!("errno {e} ({})", std::io::Error::from_raw_os_error(*e)),
    };
    let lines: Vec<String> = bad
        .iter()
        .take(30)
        .map(|c| {
            format!(
                "  {:?} follow={} {:?}: resolver {}, kernel {}",
                c.path,
                c.follow,
                c.how,
                name(&c.walked),
                name(&c.kernel)
            )
        })
        .collect();
    panic!(
        "{} of {count} walks disagree with the kernel:\n{}",
        bad.len(),
        lines.join("\n")
    );
}

/// Every short path over a tree of symlinks (relative, absolute, dangling, loops, chains, to a
/// file with a trailing slash, to `.`), `..` and `.`, agrees with the kernel, from the root and
/// from two levels down.
#[test]
fn short_paths_agree_with_the_kernel() {
    let tree = TempTree::new("resolve-short");
    build(&tree.0, 0, 3);
    if !is_root() {
        // No chroot: the walks from the tree's root only, against RESOLVE_IN_ROOT.
        let alphabet = [
            "d", "f", "l", "a", "x", "p", "c", "s", "e", "r", "n", "..", ".",
        ];
        let n = compare_all(&tree.0, "/", &alphabet, 3, || {});
        assert!(n > 10_000, "{n}");
        return skip(
            "agent::resolve::tests::short_paths_agree_with_the_kernel (from a cwd below the root)",
            "root",
            "the kernel's answers from a cwd below the walk's root are taken in a chroot, which \
             needs root",
        );
    }
    let alphabet = [
        "d", "f", "l", "a", "x", "p", "c", "s", "e", "r", "n", "..", ".",
    ];
    let n = compare_all(&tree.0, "/d/d", &alphabet, 3, || {});
    assert!(n > 10_000, "{n}");
    // Four components, over the names that move the walk the most.
    let n = compare_all(
        &tree.0,
        "/d",
        &["d", "l", "a", "c", "e", "..", "f"],
        4,
        || {},
    );
    assert!(n > 5_000, "{n}");
}

/// Mount points on the way: a tmpfs and a bind mount of a directory of the tree, crossed down
/// and climbed out of with `..` (which leaves a mount's root for the directory it is mounted
/// on), in a mount namespace of the test thread's own.
#[test]
fn paths_across_mount_points_agree_with_the_kernel() {
    if !is_root() {
        return skip(
            "agent::resolve::tests::paths_across_mount_points_agree_with_the_kernel",
            "root",
            "mounting in a namespace of the test's own needs root",
        );
    }
    let tree = TempTree::new("resolve-mounts");
    build(&tree.0, 0, 2);
    let root = tree.0.clone();
    let prepare = move || {
        crate::sys::process::unshare_mounts().unwrap();
        rustix::mount::mount_change(
            "/",
            rustix::mount::MountPropagationFlags::PRIVATE
                | rustix::mount::MountPropagationFlags::REC,
        )
        .unwrap();
        let m = root.join("m");
        std::fs::create_dir(&m).unwrap();
        rustix::mount::mount(
            "none",
            &m,
            "tmpfs",
            rustix::mount::MountFlags::empty(),
            None,
        )
        .unwrap();
        std::fs::write(m.join("f"), b"m").unwrap();
        symlink("..", m.join("l")).unwrap();
        symlink("/m/f", m.join("a")).unwrap();
        std::fs::create_dir(m.join("d")).unwrap();
        let b = root.join("b");
        std::fs::create_dir(&b).unwrap();
        rustix::mount::mount_bind(root.join("d"), &b).unwrap();
    };
    let alphabet = ["m", "b", "d", "f", "l", "a", "..", "n"];
    let n = compare_all(&tree.0, "/m", &alphabet, 3, prepare);
    assert!(n > 3_000, "{n}");
}

/// A path ending in `.` names the directory itself, never the name before the `.` in its
/// parent (the kernel's `LAST_DOT`: `rmdir("d/.")` is `EINVAL`, and `rmdir("link/.")` must not
/// remove the link's target), while `name/` names `name`, which must be a directory.
#[test]
fn a_final_dot_is_the_directory_itself() {
    let tree = TempTree::new("resolve-dot");
    build(&tree.0, 0, 1);
    let policy = allow_all();
    let resolver = Resolver::rooted(open_dir(&tree.0)).unwrap();
    let me = Me {
        cwd: (open_dir(&tree.0), b"/".to_vec()),
        policy: &policy,
    };
    let d = id(&open_dir(&tree.0.join("d")));
    for path in ["d/.", "/d/.", "d/./", "l/.", "/l/.", "a/.", "c/./"] {
        let w = resolver
            .walk(
                &me,
                &policy,
                Base::Cwd,
                path.as_bytes(),
                WalkFlags::default(),
            )
            .unwrap();
        assert!(w.name.is_none(), "{path}: {:?}", w.name);
        assert_eq!(w.path, "/d", "{path}");
        assert_eq!(id(&w.object().unwrap()), d, "{path}");
    }
    for path in ["d/", "/d//"] {
        let w = resolver
            .walk(
                &me,
                &policy,
                Base::Cwd,
                path.as_bytes(),
                WalkFlags::default(),
            )
            .unwrap();
        assert_eq!(w.name.as_deref(), Some(c"d"), "{path}");
    }
}

/// 40 symlinks in a chain are followed, 41 are `ELOOP`, as the kernel's `MAXSYMLINKS`.
#[test]
fn symlink_chains_stop_where_the_kernel_stops() {
    let tree = TempTree::new("resolve-chain");
    std::fs::write(tree.0.join("f"), b"f").unwrap();
    symlink("f", tree.0.join("c0")).unwrap();
    for i in 1..=MAX_HOPS {
        symlink(format!("c{}", i - 1), tree.0.join(format!("c{i}"))).unwrap();
    }
    let policy = allow_all();
    let resolver = Resolver::rooted(open_dir(&tree.0)).unwrap();
    let me = Me {
        cwd: (open_dir(&tree.0), b"/".to_vec()),
        policy: &policy,
    };
    let follow = WalkFlags {
        follow: true,
        ..WalkFlags::default()
    };
    let root = open_dir(&tree.0);
    let kernel_in_root = |path: &str| -> Reached {
        let fd = rustix::fs::openat2(
            &root,
            path,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            rustix::fs::ResolveFlags::IN_ROOT,
        )
        .map_err(|e| e.raw_os_error())?;
        id(&fd)
    };
    for path in [format!("/c{}", MAX_HOPS - 1), format!("/c{MAX_HOPS}")] {
        let walked = resolved(&resolver, &me, &policy, Base::Cwd, path.as_bytes(), follow);
        assert_eq!(walked, kernel_in_root(&path), "{path}");
    }
    assert_eq!(
        resolved(
            &resolver,
            &me,
            &policy,
            Base::Cwd,
            format!("/c{MAX_HOPS}").as_bytes(),
            follow
        ),
        Err(libc::ELOOP)
    );
}

/// `/proc/self`, `/proc/thread-self` and `/proc/<own pid>` are the caller's, `..` from them
/// climbs where the kernel's does, `/proc/self/fd/N` reaches what descriptor `N` is (a file by
/// its path, a pipe as the descriptor itself), and other processes' entries are `ENOENT`.
#[test]
fn proc_self_is_the_caller() {
    let tree = TempTree::new("resolve-proc");
    std::fs::write(tree.0.join("file"), b"x").unwrap();
    let file = std::fs::File::open(tree.0.join("file")).unwrap();
    let (pipe, _w) = rustix::pipe::pipe().unwrap();
    let policy = allow_all();
    let resolver = Resolver::new(None).unwrap();
    let cwd = std::env::current_dir().unwrap();
    let me = Me {
        cwd: (open_dir(&cwd), cwd.as_os_str().as_bytes().to_vec()),
        policy: &policy,
    };
    let pid = std::process::id();
    let tid = rustix::thread::gettid().as_raw_nonzero();
    let (f, p) = (file.as_raw_fd(), pipe.as_raw_fd());
    let follow = WalkFlags {
        follow: true,
        ..WalkFlags::default()
    };
    let kernel_follow = |path: &[u8]| kernel(path, true, Mode2::Plain);
    let mut checked = 0;
    for path in [
        "/proc/self".to_owned(),
        "/proc/self/".to_owned(),
        "/proc/self/..".to_owned(),
        "/proc/self/fd".to_owned(),
        "/proc/self/fd/..".to_owned(),
        format!("/proc/self/fd/{f}"),
        format!("/proc/self/fd/{p}"),
        format!("/proc/thread-self/fd/{f}"),
        "/proc/thread-self".to_owned(),
        "/proc/thread-self/..".to_owned(),
        "/proc/thread-self/../..".to_owned(),
        format!("/proc/self/task/{tid}"),
        format!("/proc/self/task/{tid}/../.."),
        format!("/proc/{pid}"),
        format!("/proc/{pid}/status"),
        "/proc/self/cwd".to_owned(),
        "/proc/self/root".to_owned(),
        "/proc/self/root/proc/self".to_owned(),
        "/proc/self/exe".to_owned(),
        "/proc/nonexistent".to_owned(),
        "/proc/self/nonexistent".to_owned(),
    ] {
        for follow in [follow, WalkFlags::default()] {
            let walked = resolved(&resolver, &me, &policy, Base::Cwd, path.as_bytes(), follow);
            let kernel = kernel(path.as_bytes(), follow.follow, Mode2::Plain);
            if !follow.follow
                && (path.ends_with("/proc/self") || path.ends_with("/proc/thread-self"))
            {
                // Deliberately: the caller's own entry is its directory, even where the kernel
                // would show the symlink (the agent's own `/proc/self` link is the agent).
                let followed = kernel_follow(path.as_bytes());
                assert_eq!(walked, followed, "{path} follow=false");
                continue;
            }
            assert_eq!(walked, kernel, "{path} follow={}", follow.follow);
            checked += 1;
        }
    }
    assert!(checked > 20, "{checked}");
    // Deliberately: other processes are not visible by number, in the walk or through it.
    for path in ["/proc/1", "/proc/1/root", "/proc/1/.."] {
        assert_eq!(
            resolved(&resolver, &me, &policy, Base::Cwd, path.as_bytes(), follow),
            Err(libc::ENOENT),
            "{path}"
        );
    }
    // A descriptor that names no path is the walk's answer, not a path to walk.
    let w = resolver
        .walk(
            &me,
            &policy,
            Base::Cwd,
            format!("/proc/self/fd/{p}").as_bytes(),
            follow,
        )
        .unwrap();
    assert_eq!(w.descriptor, Some(p));
    assert_eq!(w.path, format!("/proc/self/fd/{p}"));
}

/// With deny rules: a path the policy hides answers `EACCES` whether or not it exists, so
/// existence cannot be probed; a path whose directory the program may list answers as the
/// kernel would; a symlink out of the visible tree is not followed into the hidden one; a
/// hidden directory is not passed through (`hidden/../visible`).
#[test]
fn hidden_paths_answer_eacces_whatever_exists() {
    let tree = TempTree::new("resolve-deny");
    build(&tree.0, 0, 1);
    std::fs::create_dir(tree.0.join("h")).unwrap();
    std::fs::write(tree.0.join("h/f"), b"h").unwrap();
    symlink("../h/f", tree.0.join("d/y")).unwrap();
    symlink("/h", tree.0.join("d/z")).unwrap();
    let policy = Policy::parse("test", "path-allow read /d /d/*\n").unwrap();
    let resolver = Resolver::rooted(open_dir(&tree.0)).unwrap();
    let me = Me {
        cwd: (open_dir(&tree.0.join("d")), b"/d".to_vec()),
        policy: &policy,
    };
    let follow = WalkFlags {
        follow: true,
        ..WalkFlags::default()
    };
    // As a metadata call (stat) answers: the walk, then some right on what it reached.
    let walk = |path: &str, flags: WalkFlags| -> Reached {
        let w = resolver.walk(&me, &policy, Base::Cwd, path.as_bytes(), flags)?;
        if w.kind.is_some() && !visible(&policy, &w.path, w.kind) {
            return Err(libc::EACCES);
        }
        resolved(&resolver, &me, &policy, Base::Cwd, path.as_bytes(), flags)
    };
    let file = |p: &str| id(&open_dir_or_file(&tree.0.join(p)));
    for hidden in [
        "/h/f",
        "/h/n",
        "/n/f",
        "/h",
        "/d/y",
        "/d/z/f",
        "/h/../d/f",
        "y",
        "z/f",
        "../h/f",
    ] {
        assert_eq!(walk(hidden, follow), Err(libc::EACCES), "{hidden}");
    }
    // Where the program may list the directory, missing is missing.
    assert_eq!(walk("/d/n", follow), Err(libc::ENOENT));
    assert_eq!(walk("n", follow), Err(libc::ENOENT));
    assert_eq!(walk("/d/f/x", follow), Err(libc::ENOTDIR));
    // The root may be passed through on the way to /d, and `..` climbs back to it.
    assert_eq!(walk("/d/../d/f", follow), file("d/f"));
    assert_eq!(walk("../d/f", follow), file("d/f"));
    // Not followed, the link itself is the answer (its right to be seen is decided by the
    // handler, on its own path).
    assert_eq!(walk("/d/y", WalkFlags::default()), file("d/y"));
}

fn open_dir_or_file(path: &Path) -> OwnedFd {
    openat(
        rustix::fs::CWD,
        path,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .unwrap()
}

/// A relative walk's start taken by the kernel in one call ([`Resolver::fast_start`]) answers
/// what the component walk answers: a base inside a directory the policy hides is not passed
/// through, so `..` from it reaches nothing; a `..` past the base climbs to the directories its
/// path names (opened then, by that path: after a rename, the directory now at that path, never
/// the one the base came from); a base that is no longer at its path is `ENOENT`.
#[test]
fn a_base_walked_by_the_kernel_is_checked_as_the_component_walk_checks_it() {
    let tree = TempTree::new("resolve-base");
    for d in ["h/s", "v/a/b", "w"] {
        std::fs::create_dir_all(tree.0.join(d)).unwrap();
    }
    std::fs::write(tree.0.join("v/f"), b"v").unwrap();
    std::fs::write(tree.0.join("v/a/f"), b"a").unwrap();
    let policy = Policy::parse("test", "path-allow read /v /v/* /w /w/*\n").unwrap();
    let resolver = Resolver::rooted(open_dir(&tree.0)).unwrap();
    let follow = WalkFlags {
        follow: true,
        ..WalkFlags::default()
    };
    let from = |cwd: &str, path: &str| -> Reached {
        let me = Me {
            cwd: (
                open_dir(&tree.0.join(cwd.trim_start_matches('/'))),
                cwd.as_bytes().to_vec(),
            ),
            policy: &policy,
        };
        resolved(&resolver, &me, &policy, Base::Cwd, path.as_bytes(), follow)
    };
    let file = |p: &str| id(&open_dir_or_file(&tree.0.join(p)));
    // Visible bases: the kernel's walk, `..` opening the parents by their paths.
    assert_eq!(from("/v/a/b", "../f"), file("v/a/f"));
    assert_eq!(from("/v/a/b", "../../f"), file("v/f"));
    assert_eq!(from("/v/a/b", "../../../v/f"), file("v/f"));
    assert_eq!(from("/v/a/b", "../../../../../v/a/f"), file("v/a/f"));
    // A hidden base is not passed through, whatever `..` climbs to.
    assert_eq!(from("/h/s", "../../v/f"), Err(libc::EACCES));
    assert_eq!(from("/h", "../v/f"), Err(libc::EACCES));
    // The base's path names another directory now: not the base, so no walk from it.
    let me = Me {
        cwd: (open_dir(&tree.0.join("v/a/b")), b"/v/a/b".to_vec()),
        policy: &policy,
    };
    std::fs::rename(tree.0.join("v/a"), tree.0.join("w/a")).unwrap();
    std::fs::create_dir_all(tree.0.join("v/a/b")).unwrap();
    let walk = |path: &str| resolved(&resolver, &me, &policy, Base::Cwd, path.as_bytes(), follow);
    assert_eq!(walk("../f"), Err(libc::ENOENT));
    // Told its new path, the base walks from there, and `..` climbs the new parents.
    assert_eq!(from("/w/a/b", "../f"), file("w/a/f"));
    // The new directory at the old path is a base of its own, whose `..` is the new parent.
    std::fs::write(tree.0.join("v/a/f"), b"new").unwrap();
    assert_eq!(from("/v/a/b", "../f"), file("v/a/f"));
}

/// A base the kernel walked counts as deep as the component walk would have held it: the
/// bound of [`MAX_DEPTH`] directories holds from a deep cwd as from the root.
#[test]
fn a_kernel_walked_base_counts_its_depth() {
    let tree = TempTree::new("resolve-depth");
    let base = "/d".repeat(250);
    std::fs::create_dir_all(tree.0.join(&format!("{base}/d/d/d/d/d/d/d/d")[1..])).unwrap();
    let policy = allow_all();
    let resolver = Resolver::rooted(open_dir(&tree.0)).unwrap();
    let me = Me {
        cwd: (
            open_dir(&tree.0.join(&base[1..])),
            base.clone().into_bytes(),
        ),
        policy: &policy,
    };
    let walk = |path: &str| {
        resolver
            .walk(
                &me,
                &policy,
                Base::Cwd,
                path.as_bytes(),
                WalkFlags::default(),
            )
            .map(|w| w.path)
    };
    assert_eq!(walk("d/d/d/d"), Ok(format!("{base}/d/d/d/d")));
    assert_eq!(walk("d/d/d/d/d/d/d/d"), Err(libc::ENAMETOOLONG));
    // Climbing first frees as many levels as it climbs.
    assert_eq!(
        walk("../../d/d/d/d/d/d"),
        Ok(format!("{}/d/d/d/d/d/d", "/d".repeat(248)))
    );
}

/// The starting directories kept between walks ([`bases`]) are used only while they are what
/// their path names: renamed, the base is walked again by its new path, and another directory
/// at the old path is not the base; and after a mount on the way (which renames nothing, and
/// leaves the base's own name for itself unchanged) the base is walked again and found hidden.
#[test]
fn a_kept_base_holds_only_while_its_path_and_the_mounts_hold() {
    if !is_root() {
        return skip(
            "agent::resolve::tests::a_kept_base_holds_only_while_its_path_and_the_mounts_hold",
            "root",
            "mounting in a namespace of the test's own needs root",
        );
    }
    let tree = TempTree::new("resolve-kept");
    for d in ["v/a/b", "w", "h"] {
        std::fs::create_dir_all(tree.0.join(d)).unwrap();
    }
    std::fs::write(tree.0.join("v/a/b/f"), b"old").unwrap();
    let root = tree.0.clone();
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                crate::sys::process::unshare_mounts().unwrap();
                rustix::mount::mount_change(
                    "/",
                    rustix::mount::MountPropagationFlags::PRIVATE
                        | rustix::mount::MountPropagationFlags::REC,
                )
                .unwrap();
                let policy = Policy::parse("test", "path-allow read /v /v/* /w /w/*\n").unwrap();
                // Made in this thread: it watches this thread's mount table.
                let resolver = Resolver::rooted(open_dir(&root)).unwrap();
                assert!(resolver.bases.is_some());
                let old = open_dir(&root.join("v/a/b"));
                let from = |fd: &OwnedFd, text: &str, path: &str| {
                    let me = Me {
                        cwd: (fd.try_clone().unwrap(), text.as_bytes().to_vec()),
                        policy: &policy,
                    };
                    resolved(
                        &resolver,
                        &me,
                        &policy,
                        Base::Cwd,
                        path.as_bytes(),
                        follow(),
                    )
                };
                let file = |p: &str| id(&open_dir_or_file(&root.join(p)));
                let before = file("v/a/b/f");
                // Walked, then kept: the same answers.
                assert_eq!(from(&old, "/v/a/b", "f"), before);
                assert_eq!(from(&old, "/v/a/b", "f"), before);
                assert_eq!(from(&old, "/v/a/b", "../../a/b/f"), before);
                // Renamed: by its new name it is walked again; a new directory at the old
                // path is another base.
                std::fs::rename(root.join("v/a"), root.join("w/a")).unwrap();
                std::fs::create_dir_all(root.join("v/a/b")).unwrap();
                std::fs::write(root.join("v/a/b/f"), b"new").unwrap();
                assert_eq!(from(&old, "/w/a/b", "f"), before);
                let new = open_dir(&root.join("v/a/b"));
                assert_eq!(from(&new, "/v/a/b", "f"), file("v/a/b/f"));
                // Kept again under its new name; moved where the policy hides it, it is walked
                // again by that name and refused, as the component walk refuses it.
                assert_eq!(from(&old, "/w/a/b", "f"), before);
                std::fs::rename(root.join("w/a/b"), root.join("h/b")).unwrap();
                assert_eq!(from(&old, "/h/b", "f"), Err(libc::EACCES));
                std::fs::rename(root.join("h/b"), root.join("w/a/b")).unwrap();
                // A tmpfs on /w hides it, its name for itself unchanged: walked again, the path
                // reaches another directory (none).
                assert_eq!(from(&old, "/w/a/b", "f"), before);
                rustix::mount::mount(
                    "none",
                    root.join("w"),
                    "tmpfs",
                    rustix::mount::MountFlags::empty(),
                    None,
                )
                .unwrap();
                assert_eq!(from(&old, "/w/a/b", "f"), Err(libc::ENOENT));
            })
            .join()
            .unwrap();
    });
}

fn follow() -> WalkFlags {
    WalkFlags {
        follow: true,
        ..WalkFlags::default()
    }
}
