//! Shared harness for the integration tests: the real `warden` binary, real programs, real
//! kernel. C test programs under `tests/c/` are compiled with the system's `cc` into a
//! per-run directory that an unprivileged user can read and execute too.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The warden binary cargo built for these tests.
pub fn warden() -> &'static str {
    env!("CARGO_BIN_EXE_warden")
}

/// A world-readable work directory for this test binary (removed at exit is not needed: it
/// lives under the target directory's tmp, which CI throws away).
pub fn workdir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("warden-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        chmod(&dir, 0o755);
        dir
    })
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
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap()
        .to_path_buf()
}

/// Compiles `tests/c/NAME.c` (once per test binary) and returns the executable's path, in a
/// directory of its own (`<workdir>/bin`), so a test can allow exactly that directory.
pub fn c_program(name: &str) -> PathBuf {
    let bin = workdir().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    chmod(&bin, 0o755);
    let out = bin.join(name);
    if out.exists() {
        return out;
    }
    let src = repo_root().join("tests/c").join(format!("{name}.c"));
    // Unique per call: test threads may compile the same program at once.
    static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = bin.join(format!("{name}.tmp{}-{seq}", std::process::id()));
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

/// Who runs warden.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum As {
    /// Whoever runs the tests (root in CI).
    Me,
    /// uid/gid 65534 via setpriv, when we are root (skipped loudly otherwise).
    Nobody,
}

/// Whether [`As::Nobody`] is possible here; prints a SKIP line when it is not.
pub fn can_run_as_nobody(test: &str) -> bool {
    let root = rustix_is_root();
    let setpriv = Path::new("/usr/bin/setpriv").exists();
    if !(root && setpriv) {
        eprintln!(
            "SKIP {test} (as nobody): needs root and /usr/bin/setpriv to switch to uid 65534"
        );
    }
    root && setpriv
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

/// The `warden` command as `who` would start it (through setpriv for [`As::Nobody`]).
fn warden_command(who: As) -> Command {
    match who {
        As::Me => Command::new(warden()),
        As::Nobody => {
            let mut c = Command::new("/usr/bin/setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(warden());
            c
        }
    }
}

/// `warden ARGS...` as `who`, from `cwd`, with stdin closed. Returns the output.
pub fn run_warden(who: As, cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = warden_command(who);
    cmd.args(args).current_dir(cwd).stdin(Stdio::null());
    cmd.env("TMPDIR", std::env::temp_dir());
    cmd.output().expect("warden runs")
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

/// Like [`run_warden`], but with `stdin` as given, stdout/stderr captured through files (so
/// nothing needs reading while we wait), and a deadline: warden is killed after `timeout` (a
/// hung sandbox must fail a test, not hang the suite), and "TIMEOUT" is appended to its stderr.
pub fn run_warden_with_stdin(
    who: As,
    cwd: &Path,
    args: &[&str],
    stdin: Stdio,
    timeout: std::time::Duration,
) -> Output {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let n = SEQ.fetch_add(1, Ordering::SeqCst);
    let capture = workdir().join("capture");
    std::fs::create_dir_all(&capture).unwrap();
    let out_path = capture.join(format!("{n}.out"));
    let err_path = capture.join(format!("{n}.err"));
    let out_file = std::fs::File::create(&out_path).unwrap();
    let err_file = std::fs::File::create(&err_path).unwrap();
    let mut cmd = warden_command(who);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(stdin)
        .stdout(out_file)
        .stderr(err_file);
    cmd.env("TMPDIR", std::env::temp_dir());
    let mut child = cmd.spawn().expect("warden runs");
    let deadline = std::time::Instant::now() + timeout;
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait().expect("wait for warden") {
            break (status, false);
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            break (child.wait().expect("reap warden"), true);
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let stdout = std::fs::read(&out_path).unwrap_or_default();
    let mut stderr = std::fs::read(&err_path).unwrap_or_default();
    if timed_out {
        stderr
            .extend_from_slice(format!("\nTIMEOUT: warden killed after {timeout:?}\n").as_bytes());
    }
    let _ = std::fs::remove_file(&out_path);
    let _ = std::fs::remove_file(&err_path);
    Output {
        status,
        stdout,
        stderr,
    }
}

/// Whether the tests run as root; prints a SKIP line for `test` when they do not.
pub fn require_root(test: &str) -> bool {
    let root = rustix_is_root();
    if !root {
        eprintln!("SKIP {test}: needs root");
    }
    root
}
