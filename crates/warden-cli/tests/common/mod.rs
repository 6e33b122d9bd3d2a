//! Shared harness for the integration tests: the real `warden` binary, real programs, real
//! kernel. C test programs under `tests/c/` are compiled with the system's `cc` into a
//! per-run directory that an unprivileged user can read and execute too.
#![allow(dead_code)]

pub mod report;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The warden binary cargo built for these tests.
pub fn warden() -> &'static str {
    // scripts/soak.sh runs a copy of this test binary against a copy of warden, both pinned
    // when it starts, so that a rebuild of the worktree meanwhile does not change what it soaks.
    static PATH: OnceLock<String> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::var("WARDEN_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_warden").to_owned())
    })
}

/// A world-readable work directory for this test binary, `$TMPDIR/warden-tests-PID`. A test
/// binary cannot remove its own at exit (Rust's harness has no hook for it), so the first call
/// removes those of test binaries that are gone ([`sweep_dead_workdirs`]).
pub fn workdir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        sweep_dead_workdirs(&std::env::temp_dir());
        let dir = std::env::temp_dir().join(format!("warden-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        chmod(&dir, 0o755);
        dir
    })
}

/// Removes `warden-tests-PID` directories in `tmp` whose process no longer exists: a developer's
/// `/tmp` otherwise gains one per test binary per run (over a thousand here). A directory whose
/// pid is alive stays, whoever has that pid now; what cannot be removed (another user's) stays.
fn sweep_dead_workdirs(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("warden-tests-"))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let gone = rustix::process::Pid::from_raw(pid)
            .is_some_and(|p| rustix::process::test_kill_process(p) == Err(rustix::io::Errno::SRCH));
        if gone && entry.file_type().is_ok_and(|t| t.is_dir()) {
            // rm, not remove_dir_all, which recurses: a tree 25,000 deep that a test binary
            // killed midway left (tests/scratch.rs) would overflow this thread's stack.
            let _ = Command::new("rm")
                .arg("-rf")
                .arg("--")
                .arg(entry.path())
                .status();
        }
    }
}

/// A fresh subdirectory of [`workdir`] (mode 0755).
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = workdir().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    chmod(&dir, 0o755);
    dir
}

pub fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn repo_root() -> PathBuf {
    // The soak's pinned copy of the C sources (see [`warden`]).
    if let Some(root) = std::env::var_os("WARDEN_TEST_REPO") {
        return PathBuf::from(root);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

/// Compiles `tests/c/NAME.c` (once per test binary) and returns the executable's path, in a
/// directory of its own (`<workdir>/bin`), so a test can allow exactly that directory.
/// Compilations are serialised: test threads asking for the same program wait for the first.
pub fn c_program(name: &str) -> PathBuf {
    static LOCK: Mutex<()> = Mutex::new(());
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let bin = workdir().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    chmod(&bin, 0o755);
    let out = bin.join(name);
    if out.exists() {
        return out;
    }
    let src = repo_root().join("tests/c").join(format!("{name}.c"));
    let tmp = bin.join(format!("{name}.tmp{}", std::process::id()));
    let status = Command::new("cc")
        .args(["-O1", "-g", "-Wall", "-o"])
        .arg(&tmp)
        .arg(&src)
        .arg("-lpthread")
        .status()
        .expect("cc runs");
    assert!(status.success(), "compiling {} failed", src.display());
    std::fs::rename(&tmp, &out).unwrap();
    chmod(&out, 0o755);
    out
}

/// [`c_program`] as text, with the directory that holds it (for `--read BIN --exec BIN`):
/// `(program, directory)`.
pub fn program(name: &str) -> (String, String) {
    let p = c_program(name);
    let bin = p.parent().unwrap().to_str().unwrap().to_owned();
    (p.to_str().unwrap().to_owned(), bin)
}

/// Writes `contents` to the file `p` and gives it `mode`.
pub fn write_file(p: &Path, contents: impl AsRef<[u8]>, mode: u32) {
    std::fs::write(p, contents).unwrap_or_else(|e| panic!("writing {}: {e}", p.display()));
    chmod(p, mode);
}

/// Who runs warden.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum As {
    /// Whoever runs the tests (root in CI).
    Me,
    /// uid/gid 65534 via setpriv, when we are root (skipped loudly otherwise).
    Nobody,
}

/// Whether [`As::Nobody`] is possible here; [`skip`]s `test`'s part as nobody when it is not.
pub fn can_run_as_nobody(test: &str) -> bool {
    let root = rustix_is_root();
    let setpriv = Path::new("/usr/bin/setpriv").exists();
    if !(root && setpriv) {
        skip(
            &format!("{test} (as nobody)"),
            Lack::Nobody,
            "needs root and /usr/bin/setpriv to switch to uid 65534",
        );
    }
    root && setpriv
}

/// What a machine can lack that makes a test (or part of one) impossible to run there: the only
/// reasons a test may [`skip`]. Each has a key, and `scripts/test.sh` probes for each key itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lack {
    /// The tests do not run as root.
    Root,
    /// No uid 65534 to switch to (not root, or no setpriv).
    Nobody,
    /// The kernel runs no i386 code (`int $0x80`).
    I386,
    /// The kernel has no x32 ABI.
    X32,
    /// io_uring is disabled (`kernel.io_uring_disabled`).
    IoUring,
    /// No memory cgroup controller.
    MemoryCgroup,
    /// Only one CPU is available to the tests.
    SecondCpu,
    /// A program the test drives is not installed (scripts/setup.sh installs them all).
    Program,
    /// No JDK (`javac`, `java`): large, so scripts/setup.sh does not install one.
    Jdk,
    /// No `*xattrat` system calls (`listxattrat` and the rest: Linux 6.13).
    XattrAt,
    /// No memory-deny-write-execute (`PR_SET_MDWE`, Linux 6.3), which `--wx` needs.
    Mdwe,
    /// No Landlock enforced (not built in, or not in `lsm=`; or `WARDEN_TEST_WRAP=no-landlock`):
    /// warden runs in its mode without Landlock, which refuses some runs by design (docs/guide.md,
    /// "Without Landlock").
    Landlock,
    /// Landlock below ABI 5 (truncate and device ioctl rights): the kernel cannot enforce every
    /// rule exactly, so opens and execs go to the agent ([`landlock_abi`]).
    LandlockAbi5,
    /// tmpfs without `user.*` extended attributes (Linux 6.6): no filtered trees, the view
    /// masks denied names one by one instead ([`tmpfs_user_xattrs`]).
    TmpfsXattr,
}

impl Lack {
    /// The key in skip records and in `WARDEN_REQUIRE`.
    pub fn key(self) -> &'static str {
        match self {
            Lack::Root => "root",
            Lack::Nobody => "nobody",
            Lack::I386 => "i386",
            Lack::X32 => "x32",
            Lack::IoUring => "io_uring",
            Lack::MemoryCgroup => "memory-cgroup",
            Lack::SecondCpu => "second-cpu",
            Lack::Program => "program",
            Lack::Jdk => "jdk",
            Lack::XattrAt => "xattrat",
            Lack::Mdwe => "mdwe",
            Lack::Landlock => "landlock",
            Lack::LandlockAbi5 => "landlock-abi5",
            Lack::TmpfsXattr => "tmpfs-xattr",
        }
    }
}

/// Whether warden's runs here have Landlock: the kernel enforces it (the probe of
/// scripts/skips.sh: `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)` gives
/// an ABI version), and the tests do not hide it (`WARDEN_TEST_WRAP=no-landlock`).
pub fn landlock_enforced() -> bool {
    static ENFORCED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if std::env::var("WARDEN_TEST_WRAP").is_ok_and(|w| w == "no-landlock") {
        return false;
    }
    *ENFORCED.get_or_init(|| {
        Command::new("/usr/bin/python3")
            .args([
                "-c",
                "import ctypes,sys; sys.exit(0 if ctypes.CDLL(None).syscall(444, None, 0, 1) >= 1 else 1)",
            ])
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// [`skip`]s `test` when warden's runs here have no Landlock ([`landlock_enforced`]), where
/// warden's mode without it refuses what the test does, for `why` (docs/guide.md, "Without
/// Landlock"); true when the test may go on.
pub fn needs_landlock(test: &str, why: &str) -> bool {
    if landlock_enforced() {
        return true;
    }
    skip(test, Lack::Landlock, why);
    false
}

/// Records that `test` (or the part of it named so) does not run here because the machine lacks
/// `lack`, and why. Every skip in the suites goes through here, so none is silent:
///
/// * a `SKIP <binary>::<test> [<key>]: <reason>` line goes straight to the process's stderr,
///   which cargo's output capture does not hold back;
/// * with `WARDEN_SKIP_DIR` set, the same is appended to `$WARDEN_SKIP_DIR/skips.tsv`
///   (`key<TAB>binary::test<TAB>reason`), which `scripts/test.sh` counts and reports;
/// * with `WARDEN_REQUIRE` naming the key (a comma list, as `scripts/test.sh` sets it from its
///   own probes of this machine), the skip is a test failure instead: the machine has what the
///   test says it lacks, so the test should have run.
///
/// The caller returns (or leaves out the part) after calling this.
pub fn skip(test: &str, lack: Lack, reason: &str) {
    use std::io::Write;
    let binary = env!("CARGO_CRATE_NAME");
    let key = lack.key();
    let _ = writeln!(
        std::io::stderr().lock(),
        "SKIP {binary}::{test} [{key}]: {reason}"
    );
    if let Some(dir) = std::env::var_os("WARDEN_SKIP_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        let line = format!("{key}\t{binary}::{test}\t{reason}\n");
        // One write per line on an O_APPEND file: lines from parallel tests do not interleave.
        let written = std::fs::create_dir_all(&dir).and_then(|()| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("skips.tsv"))?
                .write_all(line.as_bytes())
        });
        if let Err(e) = written {
            panic!("cannot record the skip of {test} in {}: {e}", dir.display());
        }
    }
    let required = std::env::var("WARDEN_REQUIRE").unwrap_or_default();
    if required.split(',').any(|k| k.trim() == key) {
        panic!(
            "{test} skipped for lack of `{key}` ({reason}), but WARDEN_REQUIRE={required} says \
             this machine has it: the test should have run"
        );
    }
}

fn rustix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// A PATH without the per-user shims of the machine running the tests (cargo, pyenv): commands
/// resolve straight to the system's, as they would for a service.
pub const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// With `WARDEN_TEST_FAST_PATH=1` (the suite's second pass, scripts/test.sh), the policy file
/// adversarial runs use instead of the default policy, with `--fast-path=always`: opens go
/// straight to the kernel, and the same attacks must fail there too.
pub fn fast_path_base() -> Option<String> {
    std::env::var_os("WARDEN_TEST_FAST_PATH").filter(|v| v == "1")?;
    Some(fast_path_base_file())
}

/// Whether the sandboxes of this run have views of their own: warden's default (`--view auto`)
/// wherever the kernel can build one, unless `WARDEN_VIEW=off` (the suite's host-tree pass,
/// scripts/test.sh), which warden reads as its `--view` default. Asked of warden itself once:
/// `-v` says whether it built a view.
pub fn view_on() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| match std::env::var("WARDEN_VIEW").as_deref() {
        Ok("off") => false,
        Ok("on") => true,
        _ => {
            let o = warden_cmd(As::Me)
                .args(["run", "-v", "--", "/bin/true"])
                .output()
                .expect("run warden");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            String::from_utf8_lossy(&o.stderr).contains("warden: the sandbox's view:")
        }
    })
}

/// Whether, in this run, the kernel decides the opens and stats of a sandbox started with the
/// default policy (or the fast-path pass's base) and no `-v` or `--log`: in a view it does by
/// default (`--fast-path` unset is `auto` there), on the host's tree only in the fast-path
/// pass (and there stat stays the agent's). `WARDEN_FAST_PATH=never` (the suite's
/// all-to-the-agent pass in a view) sends them all to the agent.
pub fn kernel_first_in_view() -> bool {
    view_on() && std::env::var_os("WARDEN_FAST_PATH").is_none_or(|v| v != "never")
}

/// Whether `stderr` (of a shell or coreutils program run with the default policy, no `-v`)
/// shows the refusal of a path the policy does not name: "Permission denied" on the host's
/// tree; in the sandbox's own view, where such a path is not there, "No such file or
/// directory" (dash: "Directory nonexistent" for a file it would create).
pub fn unnamed_path_refused(stderr: &str) -> bool {
    stderr.contains("Permission denied")
        || (kernel_first_in_view()
            && (stderr.contains("No such file or directory")
                || stderr.contains("Directory nonexistent")))
}

/// tests/fast-path.policy: a base policy Landlock can enforce exactly.
pub fn fast_path_base_file() -> String {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fast-path.policy");
    base.to_str().expect("UTF-8 path").to_string()
}

/// How long [`run_warden`] lets one run take before it counts as hung.
pub const RUN_DEADLINE: Duration = Duration::from_secs(300);

/// The one `warden` command builder: `warden` as `who` (through setpriv for [`As::Nobody`]),
/// from [`workdir`], with stdin closed and a plain environment ([`SYSTEM_PATH`], `LC_ALL=C`,
/// `TZ=UTC`, and the tests' own `TMPDIR`). Callers add the arguments and may change any of that.
///
/// With `WARDEN_TEST_WRAP=MODE` (docker, eperm or enospc), warden runs under
/// `tests/c/nouserns_wrap.c` in that mode: a seccomp filter that refuses namespaces as such a
/// host does, so any suite can be run against warden's no-namespace mode; with
/// `WARDEN_TEST_WRAP=no-landlock`, under `tests/c/no_landlock.c`, against its mode without Landlock.
pub fn warden_cmd(who: As) -> Command {
    let wrap = std::env::var("WARDEN_TEST_WRAP")
        .ok()
        .filter(|m| !m.is_empty());
    warden_cmd_wrapped(who, wrap.as_deref())
}

/// [`warden_cmd`], under `nouserns_wrap MODE` when `wrap` names a mode, or under
/// tests/c/no_landlock.c (a kernel that looks as if it had no Landlock) for `no-landlock`.
pub fn warden_cmd_wrapped(who: As, wrap: Option<&str>) -> Command {
    let mut prefix: Vec<std::ffi::OsString> = Vec::new();
    match wrap {
        Some("no-landlock") => prefix.push(c_program("no_landlock").into_os_string()),
        Some(mode) => {
            prefix.push(c_program("nouserns_wrap").into_os_string());
            prefix.push(mode.into());
        }
        None => {}
    }
    warden_cmd_under(who, prefix)
}

/// [`warden_cmd`] with `prefix` (a wrapper program and its arguments) before `warden`, the
/// whole line run as `who`.
pub fn warden_cmd_under(who: As, prefix: Vec<std::ffi::OsString>) -> Command {
    let mut line = prefix;
    line.push(warden().into());
    let mut cmd = match who {
        As::Me => {
            let mut c = Command::new(&line[0]);
            c.args(&line[1..]);
            c
        }
        As::Nobody => {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .args(&line);
            c
        }
    };
    cmd.current_dir(workdir())
        .stdin(Stdio::null())
        .env("PATH", SYSTEM_PATH)
        .env("LC_ALL", "C")
        .env("TZ", "UTC")
        .env("TMPDIR", std::env::temp_dir())
        // cargo runs tests with LD_LIBRARY_PATH into its target and toolchain: a program's
        // loader would probe those first, and where warden decides opens itself each probe is
        // a refusal the run's closing line names. A user's shell has no such variable.
        .env_remove("LD_LIBRARY_PATH");
    cmd
}

/// A fresh file under [`workdir`] to hold one stream (`what`) of one run: its path and the file.
pub fn capture_file(what: &str) -> (PathBuf, File) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = workdir().join("captured");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{}.{what}", N.fetch_add(1, Ordering::Relaxed)));
    let f = File::create(&p).unwrap();
    (p, f)
}

/// Waits for `child` for up to `timeout`, then kills (and reaps) it. Returns its status and
/// whether it had to be killed.
pub fn wait_deadline(child: &mut Child, timeout: Duration) -> (ExitStatus, bool) {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(st) = child.try_wait().expect("wait for warden") {
            return (st, false);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            return (child.wait().expect("reap warden"), true);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `bound`, a deadline that only tells a hung sandbox from a slow one, times
/// `WARDEN_TEST_TIME_SCALE` (default 1): the kernel matrix's guests run under QEMU's TCG, 5-10x
/// slower than the host (scripts/guest/suites.sh sets it there). What a test asserts about time
/// is its own and is not scaled.
pub fn hang_bound(bound: Duration) -> Duration {
    let scale = std::env::var("WARDEN_TEST_TIME_SCALE")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(1);
    bound * scale
}

/// Runs `cmd` with its stdout and stderr captured through files (not pipes: nothing needs
/// reading while we wait, and whether warden copes with pipes is a test's subject of its own)
/// and a deadline: it is killed after `timeout` (a hung sandbox must fail a test, not hang the
/// suite), and a TIMEOUT line is appended to its stderr. Returns its output and how long it took.
pub fn finish(cmd: Command, timeout: Duration) -> (Output, Duration) {
    finish_with(cmd, timeout, |_| {})
}

/// [`finish`], with `adjust` applied to the command last (it may replace the captured streams).
pub fn finish_with(
    mut cmd: Command,
    timeout: Duration,
    adjust: impl FnOnce(&mut Command),
) -> (Output, Duration) {
    let timeout = hang_bound(timeout);
    let (out_path, out) = capture_file("stdout");
    let (err_path, err) = capture_file("stderr");
    cmd.stdout(out).stderr(err);
    adjust(&mut cmd);
    let started = Instant::now();
    let mut child = cmd.spawn().expect("warden runs");
    // Our copies of descriptors `adjust` handed to the child are closed here, not at the end.
    drop(cmd);
    let (status, timed_out) = wait_deadline(&mut child, timeout);
    let elapsed = started.elapsed();
    let stdout = std::fs::read(&out_path).unwrap_or_default();
    let mut stderr = std::fs::read(&err_path).unwrap_or_default();
    if timed_out {
        stderr
            .extend_from_slice(format!("\nTIMEOUT: warden killed after {timeout:?}\n").as_bytes());
    }
    let _ = std::fs::remove_file(out_path);
    let _ = std::fs::remove_file(err_path);
    (
        Output {
            status,
            stdout,
            stderr,
        },
        elapsed,
    )
}

/// Makes the child see each `(ours, theirs)` pair's descriptor `ours` as number `theirs`.
///
/// Every source is first copied above all targets (close-on-exec), then `dup2`ed onto its
/// target. That way a source whose number is already its target still loses close-on-exec
/// (`dup2(fd, fd)` alone does nothing, and the descriptor would vanish at exec), and a source
/// whose number is another pair's target is not overwritten before it is copied.
pub fn pass_fds(cmd: &mut Command, pairs: &[(std::os::fd::RawFd, std::os::fd::RawFd)]) {
    warden::sys::process::pass_fds(cmd, pairs);
}

/// `warden ARGS...` as `who`, from `cwd`, with stdin closed, through [`finish`] with
/// [`RUN_DEADLINE`]. Returns the output.
pub fn run_warden(who: As, cwd: &Path, args: &[&str]) -> Output {
    run_warden_with_stdin(who, cwd, args, Stdio::null(), RUN_DEADLINE)
}

/// [`run_warden`], with `stdin` as given and the deadline `timeout`.
pub fn run_warden_with_stdin(
    who: As,
    cwd: &Path,
    args: &[&str],
    stdin: Stdio,
    timeout: Duration,
) -> Output {
    let mut cmd = warden_cmd(who);
    cmd.args(args).current_dir(cwd).stdin(stdin);
    finish(cmd, timeout).0
}

/// The value of `KEY` in the key:value run report at `path` (`--report`), if it has one.
pub fn report_field(path: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let prefix = format!("{key}:");
    text.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .map(|v| v.trim().to_owned())
}

/// Shorthand: stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Shorthand: stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts a zero exit, showing both streams otherwise.
pub fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

/// Whether the tests run as root; [`skip`]s `test` when they do not.
pub fn require_root(test: &str) -> bool {
    let root = rustix_is_root();
    if !root {
        skip(test, Lack::Root, "needs root");
    }
    root
}

/// A short name for `who`, for directory names.
pub fn who_tag(who: As) -> &'static str {
    match who {
        As::Me => "me",
        As::Nobody => "nobody",
    }
}

/// Runs `f` as both users, the second only where possible.
pub fn each_user(test: &str, mut f: impl FnMut(As)) {
    f(As::Me);
    if can_run_as_nobody(test) {
        f(As::Nobody);
    }
}

/// Sends signal number `sig` to process `pid` (a child of the test or a process it found by a
/// marker of its own).
pub fn signal(pid: i32, sig: i32) -> std::io::Result<()> {
    let pid = rustix::process::Pid::from_raw(pid).ok_or(std::io::ErrorKind::InvalidInput)?;
    let sig =
        rustix::process::Signal::from_named_raw(sig).ok_or(std::io::ErrorKind::InvalidInput)?;
    Ok(rustix::process::kill_process(pid, sig)?)
}

/// This kernel's Landlock ABI (0 without Landlock), asked as `scripts/skips.sh` asks it.
pub fn landlock_abi() -> i64 {
    static ABI: OnceLock<i64> = OnceLock::new();
    *ABI.get_or_init(|| {
        // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)
        let out = Command::new("/usr/bin/python3")
            .args([
                "-c",
                "import ctypes; print(max(ctypes.CDLL(None).syscall(444, None, 0, 1), 0))",
            ])
            .output()
            .expect("python3 for the Landlock probe");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0)
    })
}

/// Whether the kernel's tmpfs holds `user.*` extended attributes (Linux 6.6), which a view's
/// filtered trees need: asked of a memfd, as warden asks it (`confine::view::filters_trees`).
pub fn tmpfs_user_xattrs() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        Command::new("/usr/bin/python3")
            .args([
                "-c",
                "import os; os.setxattr(os.memfd_create('p'), 'user.warden', b'y')",
            ])
            .stderr(Stdio::null())
            .status()
            .expect("python3 for the tmpfs probe")
            .success()
    })
}
