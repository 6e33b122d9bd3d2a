//! Real programs under the real `warden`: coreutils, shell scripts, a multithreaded C program,
//! a configure + make build, python3, exit codes, policy flags, `warden check`, and what happens
//! to the sandbox when warden is interrupted or killed.
//!
//! Each test asserts what the program actually did (its output, and where it makes sense what it
//! left behind in a `--keep`'d scratch directory or in a directory the test granted), not merely
//! that it exited 0. The core ones run twice: as whoever runs the tests and as uid 65534.

mod common;

use common::{capture_file, warden_cmd, As};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `warden ARGS...` as `who`, from the work directory; returns its output.
///
/// stdout and stderr go to files, not pipes: whether warden copes with pipes (and sockets) as
/// the program's standard streams is the business of `stdio_may_be_pipes_and_sockets`, and this
/// way every other test checks its own subject.
fn warden(who: As, args: &[&str]) -> Output {
    common::run_warden(who, common::workdir(), args)
}

/// `warden run ARGS...` as `who`.
fn run(who: As, args: &[&str]) -> Output {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    warden(who, &all)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

/// A scratch directory kept with `--keep`; removed when the test is done with it, pass or fail.
struct Kept(PathBuf);

impl std::ops::Deref for Kept {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The scratch directory `--keep` reported on stderr.
fn kept_scratch(o: &Output) -> Kept {
    let err = common::stderr(o);
    let line = err
        .lines()
        .find_map(|l| {
            l.split_once("kept the scratch directory ")
                .map(|(_, p)| p.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("--keep did not report the scratch directory; stderr:\n{err}"));
    Kept(PathBuf::from(line))
}

/// A fresh test directory named after the test and the user, holding `files` (world-readable,
/// so uid 65534 passes the kernel's own permission checks too).
fn data_dir(name: &str, who: As, files: &[(&str, &str)]) -> PathBuf {
    let dir = common::fresh_dir(&format!("{name}-{who:?}"));
    for (rel, text) in files {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
            common::chmod(parent, 0o755);
        }
        std::fs::write(&p, text).unwrap();
        common::chmod(&p, 0o644);
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

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o7777
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("reading {}: {e}", p.display()))
}

/// Runs `f` as uid 65534 when that is possible here ([`common::skip`] otherwise).
fn as_nobody(test: &str, f: impl FnOnce(As)) {
    if common::can_run_as_nobody(test) {
        f(As::Nobody);
    }
}

// --- coreutils --------------------------------------------------------------------------------

const HELLO: &str = "hello\nworld\n";
const NUMBERS: &str = "3\n1\n10\n2\n";

fn coreutils_read_only(who: As) {
    let d = data_dir(
        "coreutils-ro",
        who,
        &[
            ("hello.txt", HELLO),
            ("numbers.txt", NUMBERS),
            ("sub/inner.txt", "inner\n"),
        ],
    );
    let ds = s(&d);
    let file = |n: &str| format!("{ds}/{n}");
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["ls".into(), "-1".into(), ds.into()],
            "hello.txt\nnumbers.txt\nsub\n".into(),
        ),
        (
            vec!["cat".into(), file("hello.txt"), file("sub/inner.txt")],
            format!("{HELLO}inner\n"),
        ),
        (
            vec!["sort".into(), "-n".into(), file("numbers.txt")],
            "1\n2\n3\n10\n".into(),
        ),
        (
            vec!["wc".into(), "-l".into(), file("numbers.txt")],
            format!("4 {}\n", file("numbers.txt")),
        ),
        (
            vec!["head".into(), "-n".into(), "1".into(), file("hello.txt")],
            "hello\n".into(),
        ),
        (
            vec!["tail".into(), "-n".into(), "1".into(), file("numbers.txt")],
            "2\n".into(),
        ),
        (
            vec![
                "stat".into(),
                "-c".into(),
                "%s %a %F".into(),
                file("hello.txt"),
            ],
            "12 644 regular file\n".into(),
        ),
        (
            vec!["du".into(), "-b".into(), file("hello.txt")],
            format!("12\t{}\n", file("hello.txt")),
        ),
        (
            vec![
                "find".into(),
                ds.into(),
                "-type".into(),
                "f".into(),
                "-name".into(),
                "*.txt".into(),
            ],
            String::new(),
        ),
        (
            vec!["realpath".into(), format!("{ds}/sub/../hello.txt")],
            format!("{}\n", file("hello.txt")),
        ),
    ];
    let mut failures = Vec::new();
    for (argv, mut want) in cases {
        let mut args = vec!["--read", ds, "--"];
        args.extend(argv.iter().map(String::as_str));
        let o = run(who, &args);
        let mut got = common::stdout(&o);
        if argv[0] == "find" {
            let mut lines: Vec<&str> = got.lines().collect();
            lines.sort();
            got = lines.iter().map(|l| format!("{l}\n")).collect();
            want = [
                file("hello.txt"),
                file("numbers.txt"),
                file("sub/inner.txt"),
            ]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect();
        }
        if !o.status.success() || got != want {
            failures.push(format!(
                "{argv:?}: exit {:?}, stdout {got:?} (want {want:?}), stderr {:?}",
                o.status.code(),
                common::stderr(&o)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of the programs misbehaved:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn coreutils_scratch(who: As) {
    let d = data_dir(
        "coreutils-rw",
        who,
        &[
            ("hello.txt", HELLO),
            ("numbers.txt", NUMBERS),
            ("sub/inner.txt", "inner\n"),
        ],
    );
    let ds = s(&d);
    let script = format!(
        r#"set -e
D={ds}
cp "$D/hello.txt" a.txt
mkdir -p x/y/z
mv a.txt x/y/z/b.txt
test ! -e a.txt
cp -r "$D/sub" copied
ln -s x/y/z/b.txt link
echo "readlink: $(readlink link)"
echo "readlink -f: $(readlink -f link)"
echo "realpath: $(realpath link)"
echo "pwd: $PWD"
chmod 640 x/y/z/b.txt
echo "stat: $(stat -c '%s %a' x/y/z/b.txt)"
touch -d @981173106 stamp
touch fresh
echo "mtime: $(stat -c %Y stamp)"
truncate -s 1000 big
echo "du: $(du -b big)"
install -D -m 755 "$D/hello.txt" bin/tool
tar -cf arch.tar x copied
mkdir ex
tar -xf arch.tar -C ex
cmp ex/x/y/z/b.txt x/y/z/b.txt
echo "tar: $(tar -tf arch.tar | sort | tr '\n' ' ')"
seq 1 50000 > s.txt
gzip -9 -k s.txt
gzip -t s.txt.gz
cp s.txt s.orig
rm s.txt
gunzip s.txt.gz
cmp s.txt s.orig
echo "gzip: $(wc -l < s.txt)"
touch gone
mkdir -p tree/a/b
rm gone
rm -r tree
test ! -e gone && test ! -e tree
echo "sorted: $(sort -n "$D/numbers.txt" | tr '\n' ' ')"
echo "ls: $(ls | tr '\n' ' ')"
find . -name '*.txt' | sort
"#
    );
    let o = run(who, &["--keep", "--read", ds, "--", "sh", "-c", &script]);
    let scratch = kept_scratch(&o);
    common::assert_ok(&o);
    let out = common::stdout(&o);
    let sp = s(&scratch);
    let want = format!(
        "readlink: x/y/z/b.txt
readlink -f: {sp}/x/y/z/b.txt
realpath: {sp}/x/y/z/b.txt
pwd: {sp}
stat: 12 640
mtime: 981173106
du: 1000\tbig
tar: copied/ copied/inner.txt x/ x/y/ x/y/z/ x/y/z/b.txt 
gzip: 50000
sorted: 1 2 3 10 
ls: arch.tar big bin copied ex fresh link s.orig s.txt stamp x 
./copied/inner.txt
./ex/copied/inner.txt
./ex/x/y/z/b.txt
./s.txt
./x/y/z/b.txt
"
    );
    assert_eq!(out, want, "stderr:\n{}", common::stderr(&o));

    // From outside: what the programs left behind is really there, with the right metadata.
    assert_eq!(read(&scratch.join("x/y/z/b.txt")), HELLO);
    assert_eq!(mode(&scratch.join("x/y/z/b.txt")), 0o640);
    assert_eq!(
        std::fs::read_link(scratch.join("link")).unwrap(),
        Path::new("x/y/z/b.txt")
    );
    assert_eq!(
        std::fs::metadata(scratch.join("stamp")).unwrap().mtime(),
        981_173_106
    );
    assert_eq!(std::fs::metadata(scratch.join("big")).unwrap().len(), 1000);
    assert_eq!(read(&scratch.join("bin/tool")), HELLO);
    assert_eq!(mode(&scratch.join("bin/tool")), 0o755);
    assert_eq!(read(&scratch.join("copied/inner.txt")), "inner\n");
    assert_eq!(read(&scratch.join("ex/copied/inner.txt")), "inner\n");
    assert!(
        !scratch.join("gone").exists()
            && !scratch.join("tree").exists()
            && !scratch.join("s.txt.gz").exists()
    );
    let seq: String = (1..=50000).map(|i| format!("{i}\n")).collect();
    assert_eq!(read(&scratch.join("s.txt")), seq);
    let listing = Command::new("tar")
        .arg("-tf")
        .arg(scratch.join("arch.tar"))
        .output()
        .unwrap();
    assert!(
        common::stdout(&listing).lines().any(|l| l == "x/y/z/b.txt"),
        "{}",
        common::stdout(&listing)
    );
    // The files belong to whoever ran warden: no id games behind the user's back.
    let uid = if who == As::Nobody {
        65534
    } else {
        std::fs::metadata("/proc/self").unwrap().uid()
    };
    assert_eq!(
        std::fs::metadata(scratch.join("x/y/z/b.txt"))
            .unwrap()
            .uid(),
        uid
    );
    // Nothing leaked into the granted (read-only) directory.
    let mut names: Vec<_> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["hello.txt", "numbers.txt", "sub"]);
}

#[test]
fn coreutils_on_granted_files() {
    coreutils_read_only(As::Me);
}

#[test]
fn coreutils_on_granted_files_as_nobody() {
    as_nobody("coreutils_on_granted_files_as_nobody", coreutils_read_only);
}

#[test]
fn coreutils_in_scratch() {
    coreutils_scratch(As::Me);
}

#[test]
fn coreutils_in_scratch_as_nobody() {
    as_nobody("coreutils_in_scratch_as_nobody", coreutils_scratch);
}

#[test]
fn scratch_is_removed_without_keep() {
    let o = run(
        As::Me,
        &[
            "--",
            "sh",
            "-c",
            "echo data > f; mkdir -p a/b; echo more > a/b/g; echo $PWD",
        ],
    );
    common::assert_ok(&o);
    let scratch = PathBuf::from(common::stdout(&o).trim());
    assert!(
        scratch.is_absolute() && scratch.starts_with(std::env::temp_dir()),
        "{}",
        scratch.display()
    );
    assert!(
        !scratch.exists(),
        "scratch {} survived a run without --keep",
        scratch.display()
    );
    assert!(
        !common::stderr(&o).contains("kept"),
        "{}",
        common::stderr(&o)
    );
}

#[test]
fn scratch_is_the_cwd_and_tmpdir_and_is_private() {
    let o = run(
        As::Me,
        &[
            "--keep",
            "--",
            "sh",
            "-c",
            r#"echo "$PWD"; echo "$TMPDIR"; stat -c %a ."#,
        ],
    );
    common::assert_ok(&o);
    let scratch = kept_scratch(&o);
    let out = common::stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, [s(&scratch), s(&scratch), "700"]);
}

/// `test -w "$TMPDIR"` (access(2) with W_OK on the scratch directory) must agree with what the
/// program can actually do there: create files. gcc, for one, probes its temporary directory
/// this way and falls back to other places when the answer is no.
#[test]
fn scratch_dir_reports_writable() {
    let o = run(
        As::Me,
        &[
            "--",
            "sh",
            "-c",
            r#"touch "$TMPDIR/probe" && echo created; test -w "$TMPDIR" && echo tmpdir-writable; test -w . && echo cwd-writable"#,
        ],
    );
    assert_eq!(
        common::stdout(&o),
        "created\ntmpdir-writable\ncwd-writable\n",
        "stderr:\n{}",
        common::stderr(&o)
    );
}

/// `..` in a relative path climbs from the directory the program is in, as it does outside.
#[test]
fn dotdot_in_relative_paths() {
    let script = "mkdir -p a/b; echo top > t; cd a/b && cat ../../t && ls .. && cat ./../b/../../t && ls -d ../../a";
    let o = run(As::Me, &["--", "sh", "-c", script]);
    assert_eq!(
        common::stdout(&o),
        "top\nb\ntop\n../../a\n",
        "stderr:\n{}",
        common::stderr(&o)
    );
    assert_eq!(o.status.code(), Some(0));
}

/// A path that ends in `.`, `..` or a slash answers as it does outside: `rmdir d/.` is refused
/// (`EINVAL`) rather than removing `d`, `cat f/.` is `ENOTDIR` rather than reading `f`,
/// `rmdir l/.` does not remove the directory the link names, and `rmdir e/` removes `e`.
#[test]
fn trailing_dots_and_slashes_answer_as_natively() {
    let script = "mkdir d e; echo x > f; ln -s d l; ln -s f s; \
                  for c in 'rmdir d/.' 'rmdir d/..' 'unlink d/.' 'rmdir l/.' 'cat f/.' \
                  'cat f/' 'cat s/' 'cat s/.' 'ls l/.' 'ls -d l/' 'rmdir e/'; do \
                  sh -c \"$c\" >/dev/null 2>err; echo \"$c: $? $(sed 's/.*: //' err)\"; done; \
                  rm err; ls";
    let native_dir = common::fresh_dir("trailing-dots-native");
    let native = Command::new("sh")
        .args(["-c", script])
        .current_dir(&native_dir)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&native_dir);
    let want = common::stdout(&native);
    assert!(want.contains("rmdir d/.: 1 Invalid argument"), "{want}");
    let o = run(As::Me, &["--", "sh", "-c", script]);
    assert_eq!(common::stdout(&o), want, "stderr:\n{}", common::stderr(&o));
}

/// The program starts with every signal at its default disposition and nothing blocked,
/// whatever warden's own runtime did (Rust ignores SIGPIPE) or inherited from its caller.
#[test]
fn program_starts_with_default_signal_dispositions() {
    let script = "grep -E '^Sig(Ign|Blk):' /proc/self/status; yes | head -n 1";
    let o = run(As::Me, &["--", "sh", "-c", script]);
    common::assert_ok(&o);
    assert_eq!(
        common::stdout(&o),
        "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\ny\n"
    );
    assert_eq!(common::stderr(&o), "", "yes must die of SIGPIPE silently");
}

// --- sh -c scripts ----------------------------------------------------------------------------

const SHELL_SCRIPT: &str = r#"set -e
start=$PWD
printf 'one\ntwo\nthree\n' > x
mkdir sub
cd sub && cat ../x | tr a-z A-Z | sort -r > ../upper
cd "$start"
cat upper
cat > here.txt <<EOF
here: $(echo substituted) $((6 * 7)) ${start##*/warden-*}end
EOF
cat here.txt
cat <<'EOF'
quoted: $(not run) $HOME
EOF
(cd sub && echo "subshell in $(basename "$(pwd)")")
test "$PWD" = "$start" && echo "parent still in start"
for i in 1 2 3; do echo "iter $i" >> loop.txt; done
echo "loop lines: $(wc -l < loop.txt)"
i=0
while [ "$i" -lt 50 ]; do i=$((i + 1)); done
echo "while: $i"
(sleep 0.2; echo slow > bg1.txt) &
(echo fast > bg2.txt) &
wait
echo "background: $(cat bg1.txt) $(cat bg2.txt)"
ls ./nonexistent-warden-test 2> err.txt || echo "ls failed, stderr lines: $(wc -l < err.txt)"
exec 3> fd3.txt
echo via-fd3 >&3
exec 3>&-
cat fd3.txt
echo "yes|head: $(yes | head -n 1000 | wc -l)"
echo appended >> x
echo "x lines: $(wc -l < x)"
n=$(ls | wc -l)
echo "files: $n"
case "$(cat x | head -n 1)" in one) echo "case: matched" ;; *) echo "case: no" ;; esac
f() { echo "function got $# args: $*"; }
f a "b c" d
echo "exit status of false: $(false || echo $?)"
echo stderr-line >&2
"#;

fn shell_script(who: As) {
    let o = run(who, &["--keep", "--", "sh", "-c", SHELL_SCRIPT]);
    let scratch = kept_scratch(&o);
    common::assert_ok(&o);
    let want = "TWO
THREE
ONE
here: substituted 42 end
quoted: $(not run) $HOME
subshell in sub
parent still in start
loop lines: 3
while: 50
background: slow fast
ls failed, stderr lines: 1
via-fd3
yes|head: 1000
x lines: 4
files: 9
case: matched
function got 3 args: a b c d
exit status of false: 1
";
    assert_eq!(common::stdout(&o), want, "stderr:\n{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(err.contains("stderr-line"), "{err}");
    // `yes` dies quietly of SIGPIPE when `head` is done, as it does outside.
    assert!(!err.contains("Broken pipe"), "{err}");
    assert_eq!(read(&scratch.join("upper")), "TWO\nTHREE\nONE\n");
    assert_eq!(read(&scratch.join("x")), "one\ntwo\nthree\nappended\n");
    assert_eq!(read(&scratch.join("fd3.txt")), "via-fd3\n");
    assert!(read(&scratch.join("err.txt")).contains("No such file or directory"));
}

#[test]
fn shell_scripts() {
    shell_script(As::Me);
}

#[test]
fn shell_scripts_as_nobody() {
    as_nobody("shell_scripts_as_nobody", shell_script);
}

// --- a multithreaded C program ----------------------------------------------------------------

fn threads(who: As) {
    let bin = common::c_program("threads_open");
    let d = data_dir(
        "threads",
        who,
        &[("a.txt", "alpha\n"), ("b.txt", "bravo\n")],
    );
    let bindir = bin.parent().unwrap();
    let o = run(
        who,
        &[
            "--keep",
            "--read",
            s(&d),
            "--exec",
            s(bindir),
            "--",
            s(&bin),
            s(&d),
            "8",
            "2000",
        ],
    );
    let scratch = kept_scratch(&o);
    common::assert_ok(&o);
    assert_eq!(
        common::stdout(&o),
        "threads=8 opens=16000 reads=16000 creates=16000 unlinks=16000 denied=160 errors=0\n",
        "stderr:\n{}",
        common::stderr(&o)
    );
    // Every file created was unlinked: the scratch directory is empty again.
    assert_eq!(std::fs::read_dir(&*scratch).unwrap().count(), 0);
}

#[test]
fn threads_open() {
    threads(As::Me);
}

#[test]
fn threads_open_as_nobody() {
    as_nobody("threads_open_as_nobody", threads);
}

// --- configure + make -------------------------------------------------------------------------

const CONFIGURE: &str = r##"#!/bin/sh
# A configure-like probe: find the compiler, test a feature, write config.h.
set -e
CC=${CC:-cc}
ver=$($CC --version | head -n 1)
[ -n "$ver" ] || { echo "configure: no working $CC" >&2; exit 1; }
echo "checking for $CC... $ver"
cat > conftest.c <<'EOT'
#include <stdint.h>
int main(void) { uint32_t x = 1; return (int)x - 1; }
EOT
if $CC -o conftest conftest.c && ./conftest; then have_stdint=1; else have_stdint=0; fi
rm -f conftest conftest.c
echo "checking for stdint.h... $have_stdint"
{
  echo "/* generated by configure */"
  echo "#define CC_VERSION \"$ver\""
  echo "#define HAVE_STDINT_H $have_stdint"
  echo "#define GREETING \"hello from make\""
} > config.h
echo "config.h written"
"##;

const MAKEFILE: &str = "CC ?= cc
CFLAGS = -O1 -Wall -Werror
OBJS = main.o greet.o mathx.o

hello: $(OBJS)
\t$(CC) $(CFLAGS) -o $@ $(OBJS)

%.o: %.c proj.h config.h
\t$(CC) $(CFLAGS) -c -o $@ $<

clean:
\trm -f hello $(OBJS)
.PHONY: clean
";

const PROJ_H: &str = "#ifndef PROJ_H
#define PROJ_H
#include \"config.h\"
const char *greeting(void);
long triangle(long n);
long fib(int n);
#endif
";

const MAIN_C: &str = r##"#include <stdio.h>
#include "proj.h"
int main(int argc, char **argv) {
    (void)argv;
    printf("%s\n", greeting());
    printf("triangle(100)=%ld fib(30)=%ld args=%d\n", triangle(100), fib(30), argc - 1);
    printf("stdint=%d\n", HAVE_STDINT_H);
    printf("cc=%s\n", CC_VERSION);
    return 0;
}
"##;

const GREET_C: &str = "#include \"proj.h\"\nconst char *greeting(void) { return GREETING; }\n";

const MATHX_C: &str = "#include \"proj.h\"
long triangle(long n) { return n * (n + 1) / 2; }
long fib(int n) { long a = 0, b = 1; while (n-- > 0) { long t = a + b; a = b; b = t; } return a; }
";

fn project(name: &str, who: As) -> PathBuf {
    let d = data_dir(
        name,
        who,
        &[
            ("configure", CONFIGURE),
            ("Makefile", MAKEFILE),
            ("proj.h", PROJ_H),
            ("main.c", MAIN_C),
            ("greet.c", GREET_C),
            ("mathx.c", MATHX_C),
        ],
    );
    common::chmod(&d.join("configure"), 0o755);
    d
}

fn native_cc_version() -> String {
    let o = Command::new("cc")
        .arg("--version")
        .output()
        .expect("cc runs");
    common::stdout(&o).lines().next().unwrap().to_owned()
}

fn expected_hello(args: usize) -> String {
    format!(
        "hello from make\ntriangle(100)=5050 fib(30)=832040 args={args}\nstdint=1\ncc={}\n",
        native_cc_version()
    )
}

/// Builds in a directory the test wrote and granted (read, write, unlink, exec).
fn make_in_granted_dir(who: As) {
    let d = project("make-granted", who);
    if who == As::Nobody {
        chown_tree(&d, 65534);
    }
    let ds = s(&d);
    let script = format!("cd {ds} && ./configure && make -j2 && ./hello a b");
    let o = run(
        who,
        &[
            "--read", ds, "--write", ds, "--unlink", ds, "--exec", ds, "--", "sh", "-c", &script,
        ],
    );
    common::assert_ok(&o);
    let out = common::stdout(&o);
    assert!(
        out.contains(&format!("checking for cc... {}\n", native_cc_version())),
        "{out}"
    );
    assert!(out.contains("checking for stdint.h... 1\n"), "{out}");
    for obj in ["main", "greet", "mathx"] {
        assert!(out.contains(&format!("-c -o {obj}.o {obj}.c")), "{out}");
        assert!(d.join(format!("{obj}.o")).is_file());
    }
    assert!(
        out.ends_with(&expected_hello(2)),
        "{out}\nstderr:\n{}",
        common::stderr(&o)
    );
    // From outside: config.h and the binary are real, and the binary works natively too.
    let config = read(&d.join("config.h"));
    assert!(config.contains("#define HAVE_STDINT_H 1"), "{config}");
    assert!(!d.join("conftest").exists() && !d.join("conftest.c").exists());
    let native = Command::new(d.join("hello")).arg("x").output().unwrap();
    assert_eq!(common::stdout(&native), expected_hello(1));
}

/// Copies the sources into the scratch directory with the sandboxed program itself, builds and
/// runs there (exec granted on the scratch directory only).
fn make_in_scratch(who: As) {
    let d = project("make-scratch", who);
    let ds = s(&d);
    let script =
        format!("cp -r {ds} proj && cd proj && ./configure >/dev/null && make && ./hello one");
    let o = run(
        who,
        &[
            "--keep",
            "--read",
            ds,
            "--exec",
            "$SCRATCH/*",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    let scratch = kept_scratch(&o);
    common::assert_ok(&o);
    assert!(
        common::stdout(&o).ends_with(&expected_hello(1)),
        "{}\nstderr:\n{}",
        common::stdout(&o),
        common::stderr(&o)
    );
    let built = scratch.join("proj/hello");
    let native = Command::new(&built).output().unwrap();
    assert_eq!(common::stdout(&native), expected_hello(0));
    // The source directory was only read.
    assert!(!d.join("hello").exists() && !d.join("config.h").exists());
}

#[test]
fn make_c_project() {
    make_in_granted_dir(As::Me);
    make_in_scratch(As::Me);
}

#[test]
fn make_c_project_as_nobody() {
    as_nobody("make_c_project_as_nobody", |who| {
        make_in_granted_dir(who);
        make_in_scratch(who);
    });
}

/// Without exec on the scratch directory, a program built there cannot run.
#[test]
fn built_binary_needs_exec_grant() {
    let d = project("make-noexec", As::Me);
    let ds = s(&d);
    let script = format!("cp -r {ds} proj && cd proj && sh ./configure >/dev/null && make >/dev/null && test -f hello && echo built; ./hello; echo \"status $?\"");
    let o = run(As::Me, &["--read", ds, "--", "sh", "-c", &script]);
    let out = common::stdout(&o);
    assert!(
        out.contains("built\n"),
        "{out}\nstderr:\n{}",
        common::stderr(&o)
    );
    assert!(
        out.ends_with("status 126\n"),
        "{out}\nstderr:\n{}",
        common::stderr(&o)
    );
    assert!(
        common::stderr(&o).contains("Permission denied"),
        "{}",
        common::stderr(&o)
    );
}

// --- python3 ----------------------------------------------------------------------------------

const PY_SCRIPT: &str = r#"
import json, os, re, subprocess, tempfile, threading

echo = subprocess.run(["echo", "hello from echo"], capture_output=True, text=True, check=True).stdout.strip()

lock = threading.Lock()
squares = []
def work(i):
    with lock:
        squares.append(i * i)
threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()

with tempfile.NamedTemporaryFile("w", delete=False, suffix=".txt") as f:
    f.write("alpha beta 42\n")
    name = f.name
with open(name) as f:
    data = f.read()
number = int(re.search(r"(\d+)", data).group(1))
os.unlink(name)

with open("kept.json", "w") as f:
    json.dump({"written": True}, f)

try:
    open("/etc/shadow").read()
    shadow = "readable"
except PermissionError:
    shadow = "denied"

print(json.dumps({
    "echo": echo,
    "squares": sum(squares),
    "number": number,
    "tmp_in_scratch": os.path.dirname(name) == os.getcwd(),
    "tmpdir": tempfile.gettempdir(),
    "cwd": os.getcwd(),
    "unlinked": not os.path.exists(name),
    "shadow": shadow,
    "listing": sorted(os.listdir(".")),
}))
"#;

fn python(who: As) {
    let d = data_dir("python", who, &[("script.py", PY_SCRIPT)]);
    let script = d.join("script.py");
    let o = run(
        who,
        &[
            "--keep",
            "--read",
            s(&d),
            "--",
            "/usr/bin/python3",
            s(&script),
        ],
    );
    let scratch = kept_scratch(&o);
    common::assert_ok(&o);
    let v: serde_json::Value = serde_json::from_str(common::stdout(&o).trim())
        .unwrap_or_else(|e| panic!("{e}: {}", common::stdout(&o)));
    assert_eq!(v["echo"], "hello from echo");
    assert_eq!(v["squares"], 140);
    assert_eq!(v["number"], 42);
    assert_eq!(v["tmp_in_scratch"], true);
    assert_eq!(v["tmpdir"], s(&scratch));
    assert_eq!(v["cwd"], s(&scratch));
    assert_eq!(v["unlinked"], true);
    assert_eq!(v["shadow"], "denied");
    assert_eq!(v["listing"], serde_json::json!(["kept.json"]));
    let kept: serde_json::Value = serde_json::from_str(&read(&scratch.join("kept.json"))).unwrap();
    assert_eq!(kept, serde_json::json!({"written": true}));
}

#[test]
fn python3() {
    python(As::Me);
}

#[test]
fn python3_as_nobody() {
    as_nobody("python3_as_nobody", python);
}

// --- exit codes -------------------------------------------------------------------------------

#[test]
fn exit_status_is_the_programs() {
    let o = run(As::Me, &["--", "sh", "-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7), "{}", common::stderr(&o));
    let o = run(As::Me, &["--", "true"]);
    assert_eq!(o.status.code(), Some(0));
    let o = run(As::Me, &["--", "false"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn killed_by_signal_is_128_plus_n() {
    let o = run(As::Me, &["--", "sh", "-c", "kill -KILL $$"]);
    assert_eq!(o.status.code(), Some(137), "{}", common::stderr(&o));
    let o = run(As::Me, &["--", "sh", "-c", "kill -TERM $$"]);
    assert_eq!(o.status.code(), Some(143), "{}", common::stderr(&o));
}

fn assert_one_sentence(o: &Output, mentions: &str) {
    let err = common::stderr(o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "want one line on stderr, got:\n{err}");
    assert!(
        lines[0].starts_with("warden: ") && lines[0].contains(mentions),
        "{err}"
    );
    assert!(
        !err.contains("panicked") && !err.contains("Error {"),
        "{err}"
    );
}

#[test]
fn nonexistent_program_is_127() {
    let o = run(As::Me, &["--", "/nonexistent/warden-test-program"]);
    assert_eq!(o.status.code(), Some(127), "{}", common::stderr(&o));
    assert_one_sentence(&o, "/nonexistent/warden-test-program");
    let o = run(As::Me, &["--", "warden-test-no-such-command"]);
    assert_eq!(o.status.code(), Some(127), "{}", common::stderr(&o));
    assert_one_sentence(&o, "warden-test-no-such-command");
}

#[test]
fn non_executable_is_126() {
    let d = data_dir(
        "noexec",
        As::Me,
        &[("script.sh", "#!/bin/sh\necho should not run\n")],
    );
    let f = d.join("script.sh");
    let o = run(As::Me, &["--read", s(&d), "--exec", s(&d), "--", s(&f)]);
    assert_eq!(o.status.code(), Some(126), "{}", common::stderr(&o));
    assert_eq!(common::stdout(&o), "");
    assert_one_sentence(&o, s(&f));
}

#[test]
fn exec_denied_by_policy_is_126() {
    let o = run(
        As::Me,
        &["--default-policy=no", "--read", "/", "--", "/bin/true"],
    );
    assert_eq!(o.status.code(), Some(126), "{}", common::stderr(&o));
    assert_one_sentence(&o, "exec");
    // And with the default policy, a program outside every exec rule.
    let d = data_dir(
        "exec-denied",
        As::Me,
        &[("tool.sh", "#!/bin/sh\necho ran\n")],
    );
    let f = d.join("tool.sh");
    common::chmod(&f, 0o755);
    let o = run(As::Me, &["--read", s(&d), "--", s(&f)]);
    assert_eq!(o.status.code(), Some(126), "{}", common::stderr(&o));
    assert_eq!(common::stdout(&o), "");
    let o = run(As::Me, &["--read", s(&d), "--exec", s(&d), "--", s(&f)]);
    common::assert_ok(&o);
    assert_eq!(common::stdout(&o), "ran\n");
}

#[test]
fn bad_policy_file_is_125() {
    let d = common::fresh_dir("bad-policy-run");
    let p = d.join("bad.policy");
    std::fs::write(&p, "path-allow read /usr/*\npath-allow frobnicate /x\n").unwrap();
    let o = run(As::Me, &["--policy", s(&p), "--", "/bin/true"]);
    assert_eq!(o.status.code(), Some(125), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains(&format!("{}:2:12: ", p.display())),
        "{}",
        common::stderr(&o)
    );
    assert_eq!(common::stdout(&o), "");
    // Bad usage is 125 too.
    let o = warden(As::Me, &["run", "--no-such-flag", "--", "/bin/true"]);
    assert_eq!(o.status.code(), Some(125), "{}", common::stderr(&o));
    let o = warden(
        As::Me,
        &["run", "--default-policy=maybe", "--", "/bin/true"],
    );
    assert_eq!(o.status.code(), Some(125), "{}", common::stderr(&o));
}

#[test]
fn minimal_policy_without_default_runs_true() {
    let d = common::fresh_dir("minimal-policy");
    let p = d.join("min.policy");
    // /bin and /lib64 are symlinks into /usr on merged-/usr systems: following them needs read.
    std::fs::write(
        &p,
        "# just enough for /bin/true\npath-allow read /usr/* /bin /lib64\npath-allow exec /usr/*\n",
    )
    .unwrap();
    let o = run(
        As::Me,
        &["--default-policy=no", "--policy", s(&p), "--", "/bin/true"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    // Nothing else comes along: no /etc, no scratch directory to write in.
    let o = run(
        As::Me,
        &[
            "--default-policy=no",
            "--policy",
            s(&p),
            "--",
            "/bin/cat",
            "/etc/hostname",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("/etc/hostname"),
        "{}",
        common::stderr(&o)
    );
}

// --- policy flags -----------------------------------------------------------------------------

#[test]
fn read_flag_grants_and_its_absence_denies() {
    let d = data_dir("flag-read", As::Me, &[("data.txt", "granted data\n")]);
    let f = d.join("data.txt");
    let o = run(As::Me, &["--", "cat", s(&f)]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(common::stdout(&o), "");
    assert!(
        common::unnamed_path_refused(&common::stderr(&o)),
        "{}",
        common::stderr(&o)
    );
    let o = run(As::Me, &["--read", s(&d), "--", "cat", s(&f)]);
    common::assert_ok(&o);
    assert_eq!(common::stdout(&o), "granted data\n");
    // A single file may be granted too, and then only that file.
    let other = d.join("other.txt");
    std::fs::write(&other, "other\n").unwrap();
    let o = run(
        As::Me,
        &[
            "--read",
            s(&f),
            "--",
            "sh",
            "-c",
            &format!("cat {} {}", s(&f), s(&other)),
        ],
    );
    assert_eq!(common::stdout(&o), "granted data\n");
    let err = common::stderr(&o);
    assert!(
        err.contains(&format!("{}: ", s(&other))) && common::unnamed_path_refused(&err),
        "{err}"
    );
}

#[test]
fn write_flag_grants_and_its_absence_denies() {
    let d = common::fresh_dir("flag-write-Me");
    let out = d.join("out.txt");
    let script = format!("echo written > {}", s(&out));
    let o = run(As::Me, &["--", "sh", "-c", &script]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        common::unnamed_path_refused(&common::stderr(&o)),
        "{}",
        common::stderr(&o)
    );
    assert!(!out.exists(), "the write went through without --write");
    let o = run(As::Me, &["--write", s(&d), "--", "sh", "-c", &script]);
    common::assert_ok(&o);
    assert_eq!(read(&out), "written\n");
    // --write does not grant unlink.
    let o = run(As::Me, &["--write", s(&d), "--", "rm", "-f", s(&out)]);
    assert_ne!(o.status.code(), Some(0));
    assert!(
        common::stderr(&o).contains("Permission denied"),
        "{}",
        common::stderr(&o)
    );
    assert!(out.exists());
    let o = run(As::Me, &["--unlink", s(&d), "--", "rm", "-f", s(&out)]);
    common::assert_ok(&o);
    assert!(!out.exists());
}

/// Issue 35, finding 9: `--log` grows at the program's pace no more. 100,000 denied opens
/// (as root, with the default bound; as nobody 20,000 with `--log-max 64K`, for time): the file
/// stays within the bound, its last line says how many decisions were dropped, and the run
/// report says the same. Everything before the bound was written, one line per decision.
fn log_bound(who: As) {
    let d = data_dir("log-bound", who, &[("secret", "secret\n")]);
    common::chmod(&d, 0o777);
    let (prog, bin) = common::program("log_flood");
    // A file that is there, which the policy does not name.
    let secret = d.join("secret");
    let flood = s(&secret);
    let (n, max, bound): (u64, _, u64) = match who {
        As::Me => (100_000, None, 4 << 20),
        As::Nobody => (20_000, Some("64K"), 64 << 10),
    };
    let count = n.to_string();
    let tag = max.unwrap_or("default");
    let log = d.join(format!("flood-{tag}.jsonl"));
    let report = d.join(format!("report-{tag}.meta"));
    let mut args = vec!["--log", s(&log), "--report", s(&report)];
    if let Some(m) = max {
        args.extend(["--log-max", m]);
    }
    args.extend(["--exec", &bin, "--read", &bin, "--", &prog, flood, &count]);
    let o = run(who, &args);
    common::assert_ok(&o);
    assert_eq!(
        common::stdout(&o),
        format!("denied={n} other=0\n"),
        "{}",
        common::stderr(&o)
    );
    let size = std::fs::metadata(&log).unwrap().len();
    assert!(
        size <= bound,
        "{tag}: the log holds {size} bytes, bound {bound}"
    );
    let text = read(&log);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let last = lines.last().unwrap();
    assert_eq!(last["decision"], "dropped", "{tag}: {last}");
    assert_eq!(last["bound"], bound, "{last}");
    let dropped = last["dropped"].as_u64().unwrap();
    let written = lines
        .iter()
        .filter(|l| l["target"] == flood && l["decision"] == "deny")
        .count() as u64;
    // Every decision of the flood is either written or counted (the program's own start
    // and exit add a few of their own to the count).
    assert!(
        written + dropped >= n && written + dropped < n + 100,
        "{tag}: {written} written, {dropped} dropped of {n}"
    );
    assert!(written > 0 && dropped > 0, "{tag}: {written}, {dropped}");
    assert_eq!(
        common::report_field(&report, "log-dropped").as_deref(),
        Some(dropped.to_string().as_str()),
        "{}",
        read(&report)
    );
    // A log too small for its last line is refused before the run.
    let o = run(
        who,
        &[
            "--log",
            s(&d.join("tiny")),
            "--log-max",
            "100",
            "--",
            "true",
        ],
    );
    assert!(!o.status.success(), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("too small a log"),
        "{}",
        common::stderr(&o)
    );
}

#[test]
fn the_log_is_bounded_and_counts_what_it_dropped() {
    common::each_user("the_log_is_bounded_and_counts_what_it_dropped", log_bound);
}

#[test]
fn log_file_holds_json_lines_with_allow_and_deny() {
    let d = data_dir("log", As::Me, &[("ok.txt", "ok\n")]);
    let log = d.join("decisions.jsonl");
    let ok = d.join("ok.txt");
    let script = format!("cat {}; cat /etc/shadow; true", s(&ok));
    let o = run(
        As::Me,
        &[
            "--log",
            s(&log),
            "--read",
            s(&ok),
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    common::assert_ok(&o);
    assert_eq!(common::stdout(&o), "ok\n");
    let text = read(&log);
    let entries: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    assert!(entries.len() >= 3, "{text}");
    assert!(
        entries
            .iter()
            .all(|e| e["decision"] == "allow" || e["decision"] == "deny"),
        "{text}"
    );
    let allowed = entries
        .iter()
        .find(|e| e["decision"] == "allow" && e["target"] == s(&ok));
    assert!(
        allowed.is_some(),
        "no allow entry for {}:\n{text}",
        ok.display()
    );
    let denied = entries
        .iter()
        .find(|e| e["decision"] == "deny" && e["target"] == "/etc/shadow");
    let denied = denied.unwrap_or_else(|| panic!("no deny entry for /etc/shadow:\n{text}"));
    assert_eq!(denied["errno"], 13, "{denied}");
    assert_eq!(denied["errno_name"], "EACCES", "{denied}");
    assert_eq!(denied["access"], "read", "{denied}");
    assert_eq!(denied["v"], 1, "{denied}");
    assert!(
        denied["flags"]
            .as_str()
            .is_some_and(|f| f.starts_with("O_RDONLY")),
        "{denied}"
    );
    // One sandbox id for the whole run.
    let ids: std::collections::HashSet<String> =
        entries.iter().map(|e| e["sandbox"].to_string()).collect();
    assert_eq!(ids.len(), 1, "{text}");
}

#[test]
fn verbose_names_the_denied_path_and_the_rule_to_add() {
    let d = data_dir("verbose", As::Me, &[("hidden.txt", "hidden\n")]);
    let f = d.join("hidden.txt");
    let o = run(As::Me, &["-v", "--", "cat", s(&f)]);
    assert_eq!(o.status.code(), Some(1));
    let err = common::stderr(&o);
    let line = err
        .lines()
        .find(|l| l.starts_with("warden: denied") && l.contains(s(&f)))
        .unwrap_or_else(|| panic!("no `warden: denied` line naming {}:\n{err}", f.display()));
    assert!(
        line.contains(&format!("path-allow read {}", s(&f))),
        "{line}"
    );
    // The call as C would spell it, and who made it. The test's files live in the host's /tmp,
    // which the default view's private /tmp does not show: the line says so; on the host's
    // tree (no view, and /tmp closed) no rule allows the file.
    let why = if common::view_on() {
        " (cat): the host's /tmp has it, but the sandbox's /tmp is its own"
    } else {
        " (cat): no path-allow read rule matches; add: "
    };
    assert!(
        line.starts_with(&format!("warden: denied openat(\"{}\", O_RDONLY", s(&f)))
            && line.contains(" for pid ")
            && line.contains(why),
        "{line}"
    );
    // The line it offers, pasted as a flag, gives the run the host's /tmp and the file.
    let o = run(As::Me, &["--read", s(&f), "--", "cat", s(&f)]);
    assert_eq!(common::stdout(&o), "hidden\n", "{}", common::stderr(&o));
    // Without -v the program's own message is all there is.
    let o = run(As::Me, &["--", "cat", s(&f)]);
    assert!(
        !common::stderr(&o).contains("warden: denied"),
        "{}",
        common::stderr(&o)
    );
}

// --- warden check -----------------------------------------------------------------------------

#[test]
fn check_good_file_prints_normalized_policy() {
    let d = common::fresh_dir("check-good");
    let p = d.join("good.policy");
    std::fs::write(
        &p,
        "# comment\npath-allow read /usr/* /lib/*\n\npath-allow exec /usr/bin/true\npath-allow   read    /etc/ld.so.cache   # trailing\npath-deny /etc/shadow\n",
    )
    .unwrap();
    let o = warden(As::Me, &["check", s(&p)]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        common::stdout(&o),
        common::stderr(&o)
    );
    assert_eq!(common::stdout(&o), "path-allow read /usr/* /lib/* /etc/ld.so.cache\npath-allow exec /usr/bin/true\npath-deny /etc/shadow\n");
    // `D/*` lets `D` be listed too (what a linker searching /usr needs): nothing to warn of.
    assert_eq!(common::stderr(&o), "");
    // The normalized form is itself a good policy that normalizes to itself.
    let again = d.join("again.policy");
    std::fs::write(&again, o.stdout).unwrap();
    let o2 = warden(As::Me, &["check", s(&again)]);
    assert_eq!(o2.status.code(), Some(0));
    assert_eq!(common::stdout(&o2), read(&again));
}

#[test]
fn check_explain_says_who_enforces_each_rule_and_warns() {
    let d = common::fresh_dir("check-explain");
    let p = d.join("risky.policy");
    std::fs::write(
        &p,
        "path-allow read /*\npath-allow write /srv/app/*\npath-allow exec /srv/app/run\n\
         net-allow outgoing unix-domain /run/*\nnet-allow incoming tcp 0/0 8080\n",
    )
    .unwrap();
    let o = warden(As::Me, &["check", "--explain", s(&p)]);
    let out = common::stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", common::stderr(&o));
    let at = |line: u32, col: u32| format!("{}:{line}:{col}", s(&p));
    for (rule, enforcement, warning) in [
        (
            format!("{}  path-allow read /*", at(1, 17)),
            "beneath / as a second lock",
            Some("whole file system"),
        ),
        (
            format!("{}  path-allow write /srv/app/*", at(2, 18)),
            "beneath /srv/app",
            Some("may also execute"),
        ),
        (
            format!("{}  path-allow exec /srv/app/run", at(3, 17)),
            "execute right",
            None,
        ),
        (
            format!("{}  net-allow outgoing unix-domain /run/*", at(4, 32)),
            "resolves the socket's path",
            Some("/run/docker.sock"),
        ),
        (
            format!("{}  net-allow incoming tcp 0.0.0.0/0 8080", at(5, 24)),
            "performs accept",
            Some("any address on port 8080"),
        ),
    ] {
        let block = out
            .split("\n\n")
            .find(|b| b.starts_with(&rule))
            .unwrap_or_else(|| panic!("no block for {rule}:\n{out}"));
        assert!(block.contains(enforcement), "{block}");
        match warning {
            Some(w) => assert!(block.contains("WARNING: ") && block.contains(w), "{block}"),
            None => assert!(!block.contains("WARNING"), "{block}"),
        }
    }
    assert!(out.contains("4 warning(s)"), "{out}");
    assert!(
        out.starts_with("network: the sandbox's TCP/UDP sockets are made by the agent"),
        "{out}"
    );
}

#[test]
fn check_bad_file_reports_every_error_with_position() {
    let d = common::fresh_dir("check-bad");
    let p = d.join("bad.policy");
    std::fs::write(&p, "path-allow read /usr/*\npath-allow frobnicate /x\nbogus-keyword 1\npath-allow read relative/path\n").unwrap();
    let o = warden(As::Me, &["check", s(&p)]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}{}",
        common::stdout(&o),
        common::stderr(&o)
    );
    let all = format!("{}{}", common::stdout(&o), common::stderr(&o));
    let prefix = format!("{}:", p.display());
    let mut positions = Vec::new();
    for line in all.lines() {
        let rest = line
            .strip_prefix(&prefix)
            .unwrap_or_else(|| panic!("not file:line:col: {line}"));
        let mut parts = rest.splitn(3, ':');
        let l: u32 = parts
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("{line}"));
        let c: u32 = parts
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("{line}"));
        let msg = parts.next().unwrap_or("").trim();
        assert!(!msg.is_empty(), "{line}");
        positions.push((l, c));
    }
    assert_eq!(positions, [(2, 12), (3, 1), (4, 17)], "{all}");
}

#[test]
fn check_show_default_prints_the_shipped_default() {
    let o = warden(As::Me, &["check", "--show-default"]);
    common::assert_ok(&o);
    assert_eq!(
        common::stdout(&o),
        include_str!("../../warden-policy/default.policy")
    );
}

/// `check --syscalls` says, under every call the agent performs, which of its capabilities it
/// uses and why; calls it never performs say nothing of the kind.
#[test]
fn check_syscalls_names_the_agents_privilege_call_by_call() {
    let o = warden(As::Me, &["check", "--syscalls"]);
    common::assert_ok(&o);
    let out = common::stdout(&o);
    // One block per call: its row, then indented lines (other classes, the privilege).
    let mut blocks: Vec<Vec<&str>> = Vec::new();
    for line in out.lines() {
        if line.starts_with(' ') {
            blocks.last_mut().expect("a row first").push(line);
        } else {
            blocks.push(vec![line]);
        }
    }
    let mut performed = 0;
    for b in &blocks {
        let name = b[0].split_whitespace().next().unwrap();
        let agent = b.iter().any(|l| {
            ["Delegated(", "Guarded(HostSocket)", "Guarded(SendTo)"]
                .iter()
                .any(|c| l.contains(c))
        });
        let privilege: Vec<&&str> = b.iter().filter(|l| l.contains("agent privilege")).collect();
        if agent {
            performed += 1;
            assert_eq!(privilege.len(), 1, "{name}: {b:#?}");
            let (caps, why) = privilege[0]
                .split_once("agent privilege")
                .unwrap()
                .1
                .trim()
                .split_once(": ")
                .unwrap_or_else(|| panic!("{name}: no why: {b:#?}"));
            assert!(!why.trim().is_empty(), "{name}");
            for cap in caps.split(", ") {
                assert!(
                    cap == "no capability" || cap.starts_with("CAP_"),
                    "{name}: {cap}"
                );
            }
        } else {
            assert!(privilege.is_empty(), "{name} is not the agent's: {b:#?}");
        }
    }
    assert_eq!(performed, 66, "{out}");
    let row = |name: &str| {
        blocks
            .iter()
            .find(|b| b[0].split_whitespace().next() == Some(name))
            .unwrap()
            .join("\n")
    };
    assert!(row("bind").contains("CAP_NET_BIND_SERVICE"));
    assert!(row("fchownat").contains("CAP_CHOWN"));
    assert!(!row("openat").contains("CAP_CHOWN"));
    assert!(row("memfd_create").contains("no capability"));
}

// --- standard streams -----------------------------------------------------------------------

/// The program's stdin, stdout and stderr may be pipes, as in `producer | warden run -- filter |
/// consumer` or when a test harness captures output.
#[test]
fn stdio_may_be_pipes_and_sockets() {
    let script = "cat; echo out; echo err >&2";
    let mut child = warden_cmd(As::Me)
        .args(["run", "--", "sh", "-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"in\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", common::stderr(&o));
    assert_eq!(common::stdout(&o), "in\nout\n");
    assert_eq!(common::stderr(&o), "err\n");

    // Sockets too (inetd-style services, `ssh host warden run ...`).
    let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let theirs_out = theirs.try_clone().unwrap();
    let (err_path, err) = capture_file("stderr");
    let mut child = warden_cmd(As::Me)
        .args(["run", "--", "sh", "-c", "read line; echo \"got $line\""])
        .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs_out)))
        .stderr(err)
        .spawn()
        .unwrap();
    ours.write_all(b"ping\n").unwrap();
    let (status, killed) = common::wait_deadline(&mut child, Duration::from_secs(10));
    assert!(!killed, "warden with socket stdio did not finish");
    assert_eq!(status.code(), Some(0), "stderr:\n{}", read(&err_path));
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    let mut reply = String::new();
    ours.read_to_string(&mut reply).unwrap();
    assert_eq!(reply, "got ping\n");
}

// --- interrupting and killing warden ----------------------------------------------------------

/// A number no other process on the machine will have as `sleep`'s argument.
fn unique_sleep(k: u32) -> String {
    format!("9{:07}{k}", std::process::id() % 10_000_000)
}

/// Pids of processes whose command line is exactly `sleep ARG`.
fn sleeps_with(arg: &str) -> Vec<i32> {
    let want = format!("sleep\0{arg}\0").into_bytes();
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want) {
            pids.push(pid);
        }
    }
    pids
}

/// Starts `warden run -- sh -c 'echo $PWD; sleep A & sleep B & wait'`, waits until both sleeps
/// run (at least 0.5 s), and returns the child, its scratch directory and the two arguments.
fn start_sleepers(k: u32) -> (Child, PathBuf, [String; 2], PathBuf) {
    let args = [unique_sleep(k), unique_sleep(k + 1)];
    let script = format!("echo $PWD; sleep {} & sleep {} & wait", args[0], args[1]);
    let started = Instant::now();
    let (out_path, out) = capture_file("stdout");
    let (err_path, err) = capture_file("stderr");
    let mut child = warden_cmd(As::Me)
        .args(["run", "--", "sh", "-c", &script])
        .stdout(out)
        .stderr(err)
        .spawn()
        .unwrap();
    let scratch = loop {
        let text = std::fs::read_to_string(&out_path).unwrap();
        if let Some((line, _)) = text.split_once('\n') {
            break PathBuf::from(line);
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!("warden exited early ({st:?}): {}", read(&err_path));
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the script never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    while sleeps_with(&args[0]).is_empty() || sleeps_with(&args[1]).is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the sleeps never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Some(rest) = Duration::from_millis(500).checked_sub(started.elapsed()) {
        std::thread::sleep(rest);
    }
    (child, scratch, args, err_path)
}

/// Asserts that no `sleep ARG` survives (allowing `grace` for the kernel to reap them); kills
/// any survivor so a failing test leaves nothing behind.
fn assert_sleepers_gone(args: &[String; 2], grace: Duration) {
    let t = Instant::now();
    loop {
        let left: Vec<i32> = args.iter().flat_map(|a| sleeps_with(a)).collect();
        if left.is_empty() {
            return;
        }
        if t.elapsed() > grace {
            for pid in &left {
                // A pid we just found running our own unique `sleep`.
                let _ = common::signal(*pid, libc::SIGKILL);
            }
            panic!("sandboxed processes survived warden: {left:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal_warden(sig: i32, k: u32, want_code: i32) {
    let (mut child, scratch, args, err) = start_sleepers(k);
    let sent = Instant::now();
    // A child we spawned and have not yet reaped.
    common::signal(child.id() as i32, sig).expect("kill");
    let (status, killed) = common::wait_deadline(&mut child, Duration::from_secs(5));
    if killed {
        assert_sleepers_gone(&args, Duration::ZERO);
        panic!("warden did not exit within 5 s of signal {sig}");
    }
    assert!(sent.elapsed() < Duration::from_secs(5));
    assert_eq!(status.code(), Some(want_code), "status {status:?}");
    assert_sleepers_gone(&args, Duration::from_secs(1));
    assert!(
        !scratch.exists(),
        "scratch {} survived signal {sig}",
        scratch.display()
    );
    // The user stopped the run: warden does not explain the program's failure (it refused
    // nothing here, and the program started in its scratch directory, which a failed run
    // would be told of), as a native run prints nothing.
    let err = read(&err);
    assert!(
        !err.lines().any(|l| l.starts_with("warden:")),
        "a stopped run ended with a line of warden's:\n{err}"
    );
}

#[test]
fn sigint_stops_warden_and_the_whole_sandbox() {
    signal_warden(libc::SIGINT, 1, 130);
}

#[test]
fn sigterm_stops_warden_and_the_whole_sandbox() {
    signal_warden(libc::SIGTERM, 3, 143);
}

#[test]
fn sigkill_of_warden_takes_the_sandbox_down() {
    let (mut child, scratch, args, _) = start_sleepers(5);
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    std::thread::sleep(Duration::from_secs(1));
    assert_sleepers_gone(&args, Duration::from_secs(1));
    // warden had no chance to clean up; do it for it (a later run would sweep both).
    let _ = std::fs::remove_dir_all(&scratch);
    let _ = std::fs::remove_file(scratch.with_extension("lock"));
}

/// `warden run ARGS` as `who`, under `tests/c/subreaper.c`: what the subreaper saw end
/// (warden's status, and every process warden left behind, by name), sorted: warden and what
/// it left may end in either order.
fn under_subreaper(who: As, args: &[&str]) -> Vec<String> {
    let warden = warden_cmd(who);
    let mut cmd = Command::new(common::c_program("subreaper"));
    cmd.arg(warden.get_program())
        .args(warden.get_args())
        .arg("run")
        .args(args)
        .current_dir(common::workdir())
        .stdin(Stdio::null());
    for (k, v) in warden.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let (o, _) = common::finish(cmd, common::RUN_DEADLINE);
    assert!(o.status.success(), "subreaper: {o:?}");
    let mut ended: Vec<String> = common::stdout(&o).lines().map(str::to_owned).collect();
    ended.sort();
    ended
}

/// When the program has ended, init has reaped every other process of the sandbox and said
/// so, and warden exits without waiting for init's own exit (the kernel taking the sandbox's
/// namespaces down): init, and nothing else, is left to the reaper above warden, and ends.
/// So also when a limit ends the run (init kills the rest and reports). With a cgroup, warden
/// waits for init, which must have left the cgroup before warden can remove it.
fn init_outlives_warden_alone(who: As) {
    let ended = under_subreaper(
        who,
        &["--", "sh", "-c", "sleep 0.1 & sleep 0.2 & echo out; exit 3"],
    );
    assert_eq!(ended, ["exit 3", "orphan warden", "out"], "as {who:?}");
    let limited = under_subreaper(who, &["--wall-time", "0.3", "--", "sleep", "10"]);
    assert_eq!(limited, ["exit 137", "orphan warden"], "as {who:?}");
    let dir = common::fresh_dir(&format!("subreaper-{}", common::who_tag(who)));
    common::chmod(&dir, 0o777);
    let report = dir.join("report");
    let grouped = under_subreaper(
        who,
        &["--mem", "256M", "--report", s(&report), "--", "true"],
    );
    let accounting = common::report_field(&report, "accounting").expect("accounting reported");
    if accounting.starts_with("cgroup") {
        assert_eq!(grouped, ["exit 0"], "as {who:?}, {accounting}");
    } else {
        assert_eq!(
            grouped,
            ["exit 0", "orphan warden"],
            "as {who:?}, {accounting}"
        );
    }
}

#[test]
fn init_alone_outlives_warden_and_ends() {
    common::each_user(
        "init_alone_outlives_warden_and_ends",
        init_outlives_warden_alone,
    );
}

// --- starting_uid / starting_gid -----------------------------------------------------------------

/// `starting_uid`/`starting_gid` set the ids the program sees; from outside, its files belong
/// to those ids when warden runs as root (it becomes them), and to the calling user when it
/// does not (a single-id user-namespace map).
fn starting_ids(who: As, outside: u32) {
    let dir = common::fresh_dir(&format!("ids-{who:?}"));
    let policy = dir.join("ids.policy");
    std::fs::write(&policy, "starting_uid 1000\nstarting_gid 1000\n").unwrap();
    common::chmod(&policy, 0o644);
    let policy = policy.to_str().unwrap();
    let o = run(
        who,
        &[
            "--keep",
            "--policy",
            policy,
            "--",
            "sh",
            "-c",
            "id -u; id -g; echo hi > mine; stat -c %u:%g mine",
        ],
    );
    let scratch = kept_scratch(&o);
    common::assert_ok(&o);
    assert_eq!(common::stdout(&o), "1000\n1000\n1000:1000\n");
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(scratch.join("mine")).unwrap();
    assert_eq!(
        (meta.uid(), meta.gid()),
        (outside, outside),
        "owner seen from outside"
    );
}

#[test]
fn starting_ids_as_root_become_the_programs_ids() {
    if common::require_root("starting_ids_as_root_become_the_programs_ids") {
        starting_ids(As::Me, 1000);
    }
}

#[test]
fn starting_ids_as_nobody_map_onto_the_caller() {
    if common::can_run_as_nobody("starting_ids_as_nobody_map_onto_the_caller") {
        starting_ids(As::Nobody, 65534);
    }
}

/// A build writes a program and runs it at once (configure's conftest, `make check`): the agent
/// must have closed its own reference to the written file before the writer can go on, or the
/// exec finds it busy (ETXTBSY). Four loops at once (the agent's workers then compete for the
/// CPUs, which is when the race showed), 150 rounds each of write, close, exec.
#[test]
fn a_file_just_written_can_be_executed_at_once() {
    let d = data_dir("write-then-exec", As::Me, &[]);
    common::chmod(&d, 0o777);
    let script = format!(
        "cd {0} && for j in 1 2 3 4; do ( for i in $(seq 150); do cp /bin/true t$j.$i && ./t$j.$i \
         || {{ echo failed at $j.$i; exit 1; }}; rm -f t$j.$i; done ) & done; \
         ok=ok; for j in 1 2 3 4; do wait %$j || ok=failed; done; echo $ok",
        s(&d)
    );
    let o = run(
        As::Me,
        &[
            "--write",
            s(&d),
            "--exec",
            s(&d),
            "--unlink",
            s(&d),
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert_eq!(common::stdout(&o), "ok\n", "{}", common::stderr(&o));
}

/// The open counter of a `--report-json` report (0 when no open was delegated).
fn delegated_opens(report: &Path) -> u64 {
    let text = std::fs::read_to_string(report).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["delegated-families"]["open"].as_u64().unwrap_or(0)
}

#[test]
fn fast_path_sends_opens_to_the_kernel_which_enforces_the_policy() {
    common::each_user("fast_path_opens", |who| {
        let d = common::fresh_dir(&format!("fast-path-{}", common::who_tag(who)));
        // nobody writes the reports here.
        common::chmod(&d, 0o777);
        let allowed = d.join("allowed");
        std::fs::create_dir(&allowed).unwrap();
        common::chmod(&allowed, 0o755);
        common::write_file(&allowed.join("ok.txt"), "ALLOWED-FAST\n", 0o644);
        let secret = d.join("secret.txt");
        common::write_file(&secret, "SECRET-FAST\n", 0o644);
        let base = common::fast_path_base_file();
        let script = format!(
            "cat {0}/ok.txt; cat {1} && echo LEAKED; echo x > {0}/new.txt && echo WROTE",
            s(&allowed),
            s(&secret)
        );
        for mode in ["always", "never"] {
            let report = d.join(format!("report-{mode}.json"));
            let fast = format!("--fast-path={mode}");
            let o = warden(
                who,
                &[
                    "run",
                    "--default-policy=no",
                    "--policy",
                    &base,
                    "--read",
                    s(&allowed),
                    &fast,
                    "--report-json",
                    s(&report),
                    "--",
                    "/bin/sh",
                    "-c",
                    &script,
                ],
            );
            let (out, err) = (common::stdout(&o), common::stderr(&o));
            assert!(out.contains("ALLOWED-FAST"), "{mode}: {out}{err}");
            assert!(
                !out.contains("SECRET-FAST") && !out.contains("LEAKED"),
                "{mode}: {out}"
            );
            // Read-only: the write is refused by Landlock (fast) or the agent, and nothing is made.
            assert!(!out.contains("WROTE"), "{mode}: {out}");
            assert!(!allowed.join("new.txt").exists(), "{mode}: a file appeared");
            if common::view_on() && mode == "always" {
                // In a view, the kernel finds no secret (it is not there) and a read-only mount.
                assert!(
                    err.contains("No such file") && err.contains("Read-only file system"),
                    "{mode}: {err}"
                );
            } else {
                assert!(err.contains("Permission denied"), "{mode}: {err}");
            }
            let opens = delegated_opens(&report);
            match mode {
                "always" => assert_eq!(opens, 0, "{mode}: opens reached the agent"),
                _ => assert!(opens > 0, "{mode}: no open was delegated"),
            }
        }
    });
}

/// In a view the same default policy is exact: its denials inside /etc are masks, /proc is the
/// sandbox's own, and the kernel answers opens, stat, access, readlink and chdir by itself.
#[test]
fn in_a_view_the_default_policy_goes_to_the_kernel_and_still_holds() {
    common::each_user("in_a_view_the_default_policy_goes_to_the_kernel", |who| {
        let d = common::fresh_dir(&format!("view-kernel-{}", common::who_tag(who)));
        common::chmod(&d, 0o777);
        let report = d.join("report.json");
        let script = "cat /etc/passwd > /dev/null && echo PASSWD; cat /etc/shadow && echo LEAKED; \
                      stat /etc/shadow >/dev/null; ls /root; cat /proc/self/status > /dev/null && \
                      echo PROC; echo x > f && cat f";
        let o = warden(
            who,
            &[
                "run",
                "--view=on",
                "--fast-path=always",
                "--report-json",
                s(&report),
                "--",
                "/bin/sh",
                "-c",
                script,
            ],
        );
        let (out, err) = (common::stdout(&o), common::stderr(&o));
        assert!(
            out.contains("PASSWD") && out.contains("PROC") && out.contains('x'),
            "{out}{err}"
        );
        assert!(!out.contains("LEAKED") && !out.contains("root:"), "{out}");
        assert!(err.contains("/etc/shadow: Permission denied"), "{err}");
        assert!(
            err.contains("/root") && err.contains("No such file"),
            "{err}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        for family in ["open", "stat"] {
            assert_eq!(
                json["delegated-families"][family].as_u64().unwrap_or(0),
                0,
                "{family} calls reached the agent: {json:#}"
            );
        }
    });
}

#[test]
fn fast_path_always_refuses_a_policy_landlock_cannot_say_exactly() {
    // On the host's tree, the default policy denies paths inside /etc, which it allows: only
    // the agent can.
    let o = warden(
        As::Me,
        &["run", "--view=off", "--fast-path=always", "--", "/bin/true"],
    );
    assert_eq!(o.status.code(), Some(125), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(
        err.contains("--fast-path=always: Landlock cannot enforce every path rule exactly"),
        "{err}"
    );
    assert!(
        err.contains("<default>:") && err.contains("a path-deny lies inside /etc"),
        "{err}"
    );
    // auto falls back to the agent, and says why with -v.
    let o = warden(
        As::Me,
        &[
            "run",
            "--view=off",
            "-v",
            "--fast-path=auto",
            "--",
            "/bin/true",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains("opens are delegated to the agent"),
        "{}",
        common::stderr(&o)
    );
}

#[test]
fn check_explain_shows_the_fast_path_rule_by_rule() {
    let d = common::fresh_dir("check-fast-path");
    let exact = common::fast_path_base_file();
    let o = warden(As::Me, &["check", "--explain", &exact]);
    let out = common::stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("on the host's tree (--view off), opens: the agent's, or straight to the kernel with --fast-path=auto or always with --default-policy=no"),
        "{out}"
    );
    assert!(
        out.contains("opens in the sandbox's own view (the default): straight to the kernel"),
        "{out}"
    );
    assert!(out.contains("fast path: kernel-enforced"), "{out}");
    assert!(
        out.contains("fast path: narrower: ") && out.contains("/proc/self fails with EACCES"),
        "{out}"
    );
    assert!(!out.contains("keeps opens delegated"), "{out}");
    let p = d.join("etc.policy");
    std::fs::write(&p, "path-allow read /etc /etc/*\npath-deny /etc/shadow\npath-allow read /usr/lib/x86_64-linux-gn*\n").unwrap();
    let out = common::stdout(&warden(As::Me, &["check", "--explain", s(&p)]));
    assert!(
        out.contains("on the host's tree (--view off), opens: delegated to the agent: 4 rule(s)"),
        "{out}"
    );
    // In a view the deny is a mask, but the name prefix still cannot be said exactly.
    assert!(
        out.contains(
            "opens in the sandbox's own view (the default): decided by the agent: 1 rule(s), with the default policy's"
        ),
        "{out}"
    );
    assert!(
        out.contains("keeps opens delegated: a path-deny lies inside /etc"),
        "{out}"
    );
    assert!(out.contains("matches names by how they start"), "{out}");
}

// --- errno fidelity where the program may already know (issue 14, item 3) ------------------------

/// Where the program may list a directory, whether a name in it exists is no secret, and the
/// agent answers as the kernel would: `mkdir` of an existing directory is EEXIST (not EACCES:
/// Rust's create_dir_all and so cargo failed), `unlink` and `access` of a missing file are
/// ENOENT (`rm -f` of a missing file failed, and `make clean` with it). Paths the policy hides
/// answer alike whether or not they exist: EACCES on the host's tree, ENOENT in a view.
fn errno_fidelity(who: As) {
    let dir = common::fresh_dir(&format!("errno-{who:?}"));
    std::fs::create_dir(dir.join("sub")).unwrap();
    common::chmod(&dir.join("sub"), 0o755);
    let hidden = common::fresh_dir(&format!("errno-hidden-{who:?}"));
    std::fs::create_dir(hidden.join("there")).unwrap();
    let script = format!(
        "import ctypes, errno, os\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         def call(name, *args):\n\
         \x20   rc = getattr(libc, name)(*args)\n\
         \x20   print(name, args[0].decode(), 'ok' if rc == 0 else errno.errorcode[ctypes.get_errno()])\n\
         d, h = b'{d}', b'{h}'\n\
         call('mkdir', d + b'/sub', 0o755)\n\
         call('unlink', d + b'/missing')\n\
         call('access', d + b'/missing', os.X_OK)\n\
         call('access', d + b'/missing', os.W_OK)\n\
         call('mkdir', h + b'/there', 0o755)\n\
         call('mkdir', h + b'/absent', 0o755)\n\
         call('unlink', h + b'/absent')\n\
         call('access', h + b'/absent', os.X_OK)\n",
        d = s(&dir),
        h = s(&hidden)
    );
    let o = run(who, &["--read", s(&dir), "--", "python3", "-c", &script]);
    common::assert_ok(&o);
    let out = common::stdout(&o);
    let d = s(&dir);
    let h = s(&hidden);
    // In a view the hidden directory is not there at all, for the kernel and the agent alike:
    // the same answer whether it exists on the host or not.
    let hidden_errno = if common::view_on() {
        "ENOENT"
    } else {
        "EACCES"
    };
    for want in [
        format!("mkdir {d}/sub EEXIST"),
        format!("unlink {d}/missing ENOENT"),
        format!("access {d}/missing ENOENT"),
        format!("mkdir {h}/there {hidden_errno}"),
        format!("mkdir {h}/absent {hidden_errno}"),
        format!("unlink {h}/absent {hidden_errno}"),
        format!("access {h}/absent {hidden_errno}"),
    ] {
        assert!(out.lines().any(|l| l == want), "want {want:?}\n{out}");
    }
    // W_OK of a missing file: ENOENT as well (the kernel looks the name up first).
    assert!(
        out.lines()
            .any(|l| l == format!("access {d}/missing ENOENT")),
        "{out}"
    );
    assert!(!hidden.join("absent").exists() && dir.join("sub").is_dir());
}

#[test]
fn errno_fidelity_where_existence_is_no_secret() {
    errno_fidelity(As::Me);
}

#[test]
fn errno_fidelity_where_existence_is_no_secret_as_nobody() {
    as_nobody(
        "errno_fidelity_where_existence_is_no_secret_as_nobody",
        errno_fidelity,
    );
}

// --- the program's own descriptors by name (issue 14, item 1) -----------------------------------

/// `/dev/stdin`, `/dev/stderr`, `/proc/self/fd/N` and bash's `<(...)` on pipes: reopening a
/// descriptor the program holds is its own right (they failed with ENOENT and EACCES, with a
/// suggestion to allow `/proc/self/fd/pipe:[N]`). A file descriptor's link still leads to its
/// path, where the policy decides as before; a socket is ENXIO, as natively.
fn own_descriptors(who: As) {
    // stderr a pipe, as under `2>&1 | less` (the harness's own stderr is a file, whose path
    // the policy decides: the agent follows a file descriptor's link to its path).
    let script = "echo in | cat /dev/stdin; (echo err > /dev/stderr) 2>&1 | cat; \
                  (echo tee | tee /dev/stderr > /dev/null) 2>&1 | cat; \
                  echo fd | cat /proc/self/fd/0; cat <(echo procsub); \
                  echo same | python3 -c 'import os; a = os.fstat(0); b = os.stat(\"/dev/stdin\"); \
                  c = os.fstat(os.open(\"/dev/stdin\", os.O_RDONLY)); \
                  print(\"same-pipe\" if (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino) == (c.st_dev, c.st_ino) else \"other\")'; \
                  exec 3<>/dev/null; python3 -c 'import socket,os; a,b=socket.socketpair(); \
                  print(os.open(\"/proc/self/fd/%d\" % a.fileno(), os.O_RDWR))' 2>&1 | tail -1";
    let o = run(who, &["--", "bash", "-c", script]);
    let out = common::stdout(&o);
    let err = common::stderr(&o);
    // `/dev/stdin` on a pipe is that pipe (by stat and by open). Not `diff - /dev/stdin`:
    // diff takes the two for one file only when their times agree too, and echo's write may
    // land between its two stats, natively as well (3 in 300 here).
    for want in ["in", "err", "tee", "fd", "procsub", "same-pipe"] {
        assert!(
            out.lines().any(|l| l == want),
            "{want:?} missing\n{out}\n{err}"
        );
    }
    // A socket cannot be opened by path, here as natively.
    assert!(out.contains("No such device or address"), "{out}");
    assert!(!err.contains("pipe:["), "{err}");
}

#[test]
fn own_descriptors_by_name() {
    own_descriptors(As::Me);
}

#[test]
fn own_descriptors_by_name_as_nobody() {
    as_nobody("own_descriptors_by_name_as_nobody", own_descriptors);
}

// --- O_PATH descriptors of symlinks (issue 14, item 2) ------------------------------------------

/// `open(link, O_PATH | O_NOFOLLOW)` succeeds as natively (it was ELOOP, so glibc's
/// `fchmodat(AT_SYMLINK_NOFOLLOW)` said ELOOP instead of EOPNOTSUPP and `tar x` of an archive
/// with a symlink exited 2). The descriptor is a stand-in the agent takes for the link: looking
/// through it shows the link, and it grants nothing a path would not: a change through it needs
/// `write` on the link, a link the policy hides is not opened, linking it is refused.
fn o_path_symlinks(who: As) {
    let ro = data_dir("o-path-ro", who, &[("target", "t\n")]);
    std::os::unix::fs::symlink("target", ro.join("l")).unwrap();
    let hidden = data_dir("o-path-hidden", who, &[]);
    std::os::unix::fs::symlink("x", hidden.join("l")).unwrap();
    let probe = "import ctypes, errno, os, stat, sys\n\
        libc = ctypes.CDLL(None, use_errno=True)\n\
        E = lambda rc: 'ok' if rc == 0 else errno.errorcode[ctypes.get_errno()]\n\
        def opath(p):\n\
        \x20   try:\n\
        \x20       return os.open(p, os.O_PATH | os.O_NOFOLLOW)\n\
        \x20   except OSError as e:\n\
        \x20       print('open', p, errno.errorcode[e.errno]); return None\n\
        fd = opath('o/a/l')\n\
        print('islnk', stat.S_ISLNK(os.fstat(fd).st_mode), stat.S_ISLNK(os.stat('/proc/self/fd/%d' % fd).st_mode))\n\
        b = ctypes.create_string_buffer(64); n = libc.readlinkat(fd, b'', b, 64)\n\
        print('readlinkat', b.value[:n].decode())\n\
        print('lchmod', E(libc.fchmodat(-100, b'o/a/l', 0o600, 0x100)))\n\
        print('fchownat', E(libc.fchownat(fd, b'', os.getuid(), -1, 0x1000)))\n\
        try:\n\
        \x20   os.read(fd, 1)\n\
        except OSError as e:\n\
        \x20   print('read', errno.errorcode[e.errno])\n\
        try:\n\
        \x20   os.open('/proc/self/fd/%d' % fd, os.O_RDONLY)\n\
        except OSError as e:\n\
        \x20   print('reopen', errno.errorcode[e.errno])\n\
        ro = opath(sys.argv[1] + '/l')\n\
        print('ro fchownat', E(libc.fchownat(ro, b'', os.getuid(), -1, 0x1000)))\n\
        print('ro utimensat', E(libc.utimensat(ro, b'', None, 0x1000)))\n\
        print('ro linkat', E(libc.linkat(ro, b'', -100, b'copy', 0x1000)))\n\
        opath(sys.argv[2] + '/l')\n";
    let script = format!(
        "mkdir a && ln -s f a/l && tar cf t.tar a && mkdir o && tar xf t.tar -C o && \
         echo tar-ok && readlink o/a/l && python3 -c \"$PROBE\" {} {}",
        s(&ro),
        s(&hidden)
    );
    let mut cmd = common::warden_cmd(who);
    cmd.args(["run", "--read", s(&ro), "--", "sh", "-c", &script])
        .env("PROBE", probe);
    let o = common::finish(cmd, common::RUN_DEADLINE).0;
    common::assert_ok(&o);
    let out = common::stdout(&o);
    let (r, h) = (s(&ro), s(&hidden));
    for want in [
        "tar-ok".to_owned(),
        "f".into(),
        "islnk True True".into(),
        "readlinkat f".into(),
        // EOPNOTSUPP (Python names it ENOTSUP): what the kernel answers for a symlink's mode,
        // found by glibc through the descriptor.
        "lchmod ENOTSUP".into(),
        "fchownat ok".into(),
        "read EBADF".into(),
        "reopen ELOOP".into(),
        "ro fchownat EACCES".into(),
        "ro utimensat EACCES".into(),
        "ro linkat EACCES".into(),
        // A path the policy does not name: refused by the agent on the host's tree, not
        // there in the sandbox's own view (the kernel answers the open).
        format!(
            "open {h}/l {}",
            if common::kernel_first_in_view() {
                "ENOENT"
            } else {
                "EACCES"
            }
        ),
    ] {
        assert!(
            out.lines().any(|l| l == want),
            "want {want:?}\n{out}\n{}",
            common::stderr(&o)
        );
    }
    assert!(!out.contains(&format!("open {r}/l")), "{out}");
}

#[test]
fn o_path_opens_of_symlinks() {
    o_path_symlinks(As::Me);
}

#[test]
fn o_path_opens_of_symlinks_as_nobody() {
    as_nobody("o_path_opens_of_symlinks_as_nobody", o_path_symlinks);
}

// --- a rename refused because it would widen rights says why (issue 14, item 12) -----------------

/// A move that would give a file rights it does not have at its old path is refused with EXDEV
/// on purpose (`mv` then copies, each step checked), which the program reports as "Invalid
/// cross-device link"; `-v` and the log say which right it would gain, the rule that grants it
/// there, and why EXDEV. A directory whose contents would gain a right is explained too.
#[test]
fn rename_that_would_widen_rights_says_why() {
    let d = data_dir("rename-widens", As::Me, &[("closed/f", "x\n")]);
    std::fs::create_dir(d.join("closed/sub")).unwrap();
    std::fs::create_dir(d.join("open")).unwrap();
    let (ds, log) = (s(&d), d.join("decisions.jsonl"));
    // Directories given without `*`: each stands for itself and everything beneath it.
    let open_all = format!("{ds}/open");
    let closed_all = format!("{ds}/closed");
    let script = format!(
        "import os\n\
         for name in ('f', 'sub'):\n\
         \x20   try:\n\
         \x20       os.rename('{ds}/closed/' + name, '{ds}/open/' + name); print(name, 'moved')\n\
         \x20   except OSError as e:\n\
         \x20       print(name, e.strerror)\n"
    );
    // Contents that would gain a right while the directory itself would not.
    std::fs::create_dir(d.join("closed/sub/deep")).unwrap();
    std::fs::create_dir(d.join("other")).unwrap();
    let inner = format!("{ds}/other/inner");
    let inner_all = format!("{ds}/other/inner/*");
    let script = format!(
        "{script}try:\n\
         \x20   os.rename('{ds}/closed/sub/deep', '{inner}'); print('deep moved')\n\
         except OSError as e:\n\
         \x20   print('deep', e.strerror)\n"
    );
    // What the contents gain and the directory itself does not (reading `D/*` would let `D`
    // be listed too): running.
    let gains = d.join("gains.policy");
    common::write_file(&gains, format!("path-allow exec {inner_all}\n"), 0o644);
    let o = run(
        As::Me,
        &[
            "-v",
            "--log",
            s(&log),
            "--write",
            &inner,
            "--unlink",
            &inner,
            "--write",
            &inner_all,
            "--unlink",
            &inner_all,
            "-p",
            s(&gains),
            "--read",
            &open_all,
            "--write",
            &open_all,
            "--unlink",
            &open_all,
            "--write",
            &closed_all,
            "--unlink",
            &closed_all,
            "--",
            "python3",
            "-c",
            &script,
        ],
    );
    common::assert_ok(&o);
    let (out, err) = (common::stdout(&o), common::stderr(&o));
    assert_eq!(
        out,
        "f Invalid cross-device link\nsub Invalid cross-device link\n\
         deep Invalid cross-device link\n",
        "{err}"
    );
    let beneath = format!(
        "moving {ds}/closed/sub/deep to {inner}: what the directory holds would gain exec \
         (path-allow exec {inner_all} at {}:1:17) beneath {inner}",
        s(&gains)
    );
    assert!(err.contains(&beneath), "want {beneath:?} in\n{err}");
    let why = format!(
        "moving {ds}/closed/f to {ds}/open/f: it would gain read (path-allow read {open_all}/* \
         at --read:1:1) at {ds}/open/f, which it does not have at {ds}/closed/f; refused with \
         EXDEV"
    );
    assert!(err.contains(&why), "want {why:?} in\n{err}");
    assert!(
        err.contains(&format!(
            "moving {ds}/closed/sub to {ds}/open/sub: it would gain read"
        )),
        "{err}"
    );
    assert!(err.contains("so that mv copies instead"), "{err}");
    assert!(read(&log).contains(&why), "{}", read(&log));
    assert!(d.join("closed/f").exists() && d.join("closed/sub").is_dir());
}

// --- shorthand flags name a symlink as itself and as its target (issue 14, item 5) ---------------

/// `--read L --exec L` for a symlink `L` allows the link itself as well as what it leads to, so
/// a program reached through the link runs (cargo is a link to rustup); before, the flags were
/// resolved to the target alone and following the link was refused (126). `--read L` alone
/// still does not let it run, and `D/*` stays "beneath D": `D-secret` next to it is not granted.
fn flags_name_links(who: As) {
    let d = data_dir("flag-links", who, &[("dir/data.txt", "through the link\n")]);
    // A program of its own (the default policy lets everything in /usr/bin run).
    let prog = d.join("prog");
    std::fs::copy("/usr/bin/true", &prog).unwrap();
    common::chmod(&prog, 0o755);
    let link = d.join("l");
    std::os::unix::fs::symlink(&prog, &link).unwrap();
    let dir_link = d.join("dl");
    std::os::unix::fs::symlink(d.join("dir"), &dir_link).unwrap();
    let o = run(
        who,
        &["--read", s(&link), "--exec", s(&link), "--", s(&link)],
    );
    common::assert_ok(&o);
    let o = run(who, &["--read", s(&link), "--", s(&link)]);
    assert_eq!(o.status.code(), Some(126), "{}", common::stderr(&o));
    let data = dir_link.join("data.txt");
    let o = run(who, &["--read", s(&dir_link), "--", "cat", s(&data)]);
    common::assert_ok(&o);
    assert_eq!(common::stdout(&o), "through the link\n");
    // `--read D/*` is what is beneath D, not every name that starts with D (it was `D*`).
    let dir = data_dir("flag-star", who, &[("in.txt", "in\n")]);
    let next_to = data_dir(
        &format!("flag-star-{who:?}-secret"),
        who,
        &[("x", "secret\n")],
    );
    assert!(s(&next_to).starts_with(s(&dir)));
    let script = format!("cat {}/in.txt; cat {}/x", s(&dir), s(&next_to));
    let star = format!("{}/*", s(&dir));
    let o = run(who, &["--read", &star, "--", "sh", "-c", &script]);
    assert_eq!(common::stdout(&o), "in\n", "{}", common::stderr(&o));
    assert!(
        common::unnamed_path_refused(&common::stderr(&o)),
        "{}",
        common::stderr(&o)
    );
}

#[test]
fn flags_allow_a_symlink_and_its_target() {
    flags_name_links(As::Me);
}

#[test]
fn flags_allow_a_symlink_and_its_target_as_nobody() {
    as_nobody(
        "flags_allow_a_symlink_and_its_target_as_nobody",
        flags_name_links,
    );
}

// --- exec rules for directories made during the run (issue 14, item 4) ----------------------------

/// `--exec '$SCRATCH/ve/bin/*'` lets programs the run puts there run (`python3 -m venv ve`,
/// then `ve/bin/pip`): Landlock, which backs every execve, can only give the right to what
/// exists, so warden makes that directory in the scratch directory before the program starts.
/// Before, the agent allowed the execve and the kernel refused it, with nothing on `-v`.
/// Nothing else in scratch may run; a directory made anew, or one outside scratch made during
/// the run, still cannot run anything, and `-v` now says why.
fn exec_dirs_made_during_the_run(who: As) {
    let d = data_dir("exec-later", who, &[]);
    if who == As::Nobody {
        chown_tree(&d, 65534);
    }
    let later = format!("{}/new", s(&d));
    let script = "mkdir -p ve/bin && cp /usr/bin/true ve/bin/t && ./ve/bin/t && echo ran; \
                  cp /usr/bin/true t2; ./t2 || echo other-refused; \
                  rm -rf ve; mkdir -p ve/bin; cp /usr/bin/true ve/bin/t; ./ve/bin/t || \
                  echo remade-refused; \
                  mkdir -p \"$LATER\" && cp /usr/bin/true \"$LATER/t\" && \"$LATER/t\" || \
                  echo outside-refused";
    let mut cmd = common::warden_cmd(who);
    cmd.args([
        "run",
        "-v",
        "--exec",
        "$SCRATCH/ve/bin/*",
        "--read",
        s(&d),
        "--write",
        s(&d),
        "--exec",
        &format!("{later}/*"),
        "--",
        "sh",
        "-c",
        script,
    ])
    .env("LATER", &later);
    let o = common::finish(cmd, common::RUN_DEADLINE).0;
    let (out, err) = (common::stdout(&o), common::stderr(&o));
    assert_eq!(
        out, "ran\nother-refused\nremade-refused\noutside-refused\n",
        "{err}"
    );
    let why = "allows it, but the kernel would refuse it: Landlock";
    let denied = |l: &&str| l.starts_with("warden: denied ") && l.contains(why);
    assert_eq!(err.lines().filter(denied).count(), 2, "{err}");
    assert!(
        err.contains(&format!("denied execve(\"{later}/t\")")),
        "{err}"
    );
    assert!(err.contains("/t2\") for pid") && err.contains("no path-allow exec rule matches"));
}

#[test]
fn exec_rule_for_a_directory_made_during_the_run() {
    exec_dirs_made_during_the_run(As::Me);
}

#[test]
fn exec_rule_for_a_directory_made_during_the_run_as_nobody() {
    as_nobody(
        "exec_rule_for_a_directory_made_during_the_run_as_nobody",
        exec_dirs_made_during_the_run,
    );
}

// --- the program is looked up on the sandbox's PATH (issue 14, item 8) --------------------------

/// `warden run -- NAME` looks NAME up as the program's own `execvp` would: on the PATH the
/// sandbox will have (`--env PATH=...` included), past a file the policy will not let it run
/// (a pyenv shim in the user's PATH before /usr/bin). Before, warden's own PATH was searched
/// and its first hit taken, so the shim failed with 126. When nothing will do, the one line
/// says which paths were tried and why.
fn sandbox_path_lookup(who: As) {
    let d = data_dir(
        "path-lookup",
        who,
        &[
            ("shims/tool", "#!/bin/sh\necho shim\n"),
            ("real/tool", "#!/bin/sh\necho real\n"),
        ],
    );
    let (shims, real) = (d.join("shims"), d.join("real"));
    common::chmod(&shims.join("tool"), 0o755);
    common::chmod(&real.join("tool"), 0o755);
    let path = |dirs: &[&Path]| {
        let mut all: Vec<&str> = dirs.iter().map(|p| s(p)).collect();
        all.push(common::SYSTEM_PATH);
        all.join(":")
    };
    let run_with = |warden_path: &str, args: &[&str]| {
        let mut cmd = common::warden_cmd(who);
        cmd.env("PATH", warden_path).arg("run").args(args);
        common::finish(cmd, common::RUN_DEADLINE).0
    };
    let grant = ["--read", s(&real), "--exec", s(&real)];
    let o = run_with(
        &path(&[&shims, &real]),
        &[&grant[..], &["--", "tool"]].concat(),
    );
    common::assert_ok(&o);
    assert_eq!(common::stdout(&o), "real\n");
    // The sandbox's PATH, not warden's.
    let env = format!("PATH={}", path(&[&real]));
    let o = run_with(
        common::SYSTEM_PATH,
        &[&grant[..], &["--env", &env, "--", "tool"]].concat(),
    );
    common::assert_ok(&o);
    assert_eq!(common::stdout(&o), "real\n");
    let o = run_with(&path(&[&shims]), &["--", "tool"]);
    assert_eq!(o.status.code(), Some(126), "{}", common::stderr(&o));
    assert_one_sentence(
        &o,
        &format!(
            "cannot run tool: tried {}/tool: no path-allow exec rule matches",
            s(&shims)
        ),
    );
    let o = run_with(common::SYSTEM_PATH, &["--", "tool"]);
    assert_eq!(o.status.code(), Some(127), "{}", common::stderr(&o));
    assert_one_sentence(&o, "tool: command not found on the sandbox's PATH");
}

#[test]
fn program_is_looked_up_on_the_sandbox_path() {
    sandbox_path_lookup(As::Me);
}

#[test]
fn program_is_looked_up_on_the_sandbox_path_as_nobody() {
    as_nobody(
        "program_is_looked_up_on_the_sandbox_path_as_nobody",
        sandbox_path_lookup,
    );
}

// --- scratch directories of killed wardens are swept (issue 14, item 11) -------------------------

/// A warden killed with SIGKILL cannot remove its scratch directory; the next run removes it.
/// Each run holds a lock (`flock`) on a file next to its directory for as long as it lives, so
/// the sweep never touches a live run's directory, whatever its pid, nor one kept with
/// `--keep` (even by a warden killed so). A user's runs keep their scratch in
/// `$TMPDIR/warden-scratch-UID`, which is all a run lists to sweep.
fn sweep_killed_scratch(who: As) {
    let tmp = common::fresh_dir(&format!("sweep-{who:?}"));
    common::chmod(&tmp, 0o1777);
    let uid = match who {
        As::Nobody => 65534,
        _ => rustix::process::geteuid().as_raw(),
    };
    let runs = tmp.join(format!("warden-scratch-{uid}"));
    // Scratch directories and their locks.
    let entries = || -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(&runs) else {
            return Vec::new();
        };
        let mut v: Vec<String> = dir
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| {
                n.strip_prefix("warden-")
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
            })
            .collect();
        v.sort();
        v
    };
    // Starts `warden run [--keep] -- sleep ARG` and returns it with the scratch it made.
    let start = |keep: bool, arg: String| -> (Child, String) {
        let before = entries();
        let mut cmd = warden_cmd(who);
        cmd.env("TMPDIR", &tmp).arg("run");
        if keep {
            cmd.arg("--keep");
        }
        let mut child = cmd
            .args(["--", "sleep", &arg])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(20) {
            let new: Vec<String> = entries()
                .into_iter()
                .filter(|e| !before.contains(e) && !e.ends_with(".lock"))
                .collect();
            if let [dir] = &new[..] {
                if !sleeps_with(&arg).is_empty() {
                    return (child, dir.clone());
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("no scratch appeared: {:?}", entries());
    };
    let k = if who == As::Me { 20 } else { 30 };
    let args = [unique_sleep(k), unique_sleep(k + 1), unique_sleep(k + 2)];
    let (mut dead, dead_dir) = start(false, args[0].clone());
    let (mut kept, kept_dir) = start(true, args[1].clone());
    for child in [&mut dead, &mut kept] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let (mut live, live_dir) = start(false, args[2].clone());
    // Old enough to be swept (a lock file younger than 10 s may not be locked yet).
    for e in entries() {
        let f = std::fs::File::options().write(true).open(runs.join(&e));
        if let Ok(f) = f {
            let _ = f.set_modified(std::time::SystemTime::now() - Duration::from_secs(60));
        }
    }
    assert!(runs.join(&dead_dir).is_dir(), "{:?}", entries());
    // The runs' directory is its user's: private for nobody; root's is sticky and unlistable by
    // others (its runs with starting_uid hand their scratch to another user, who removes it).
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::symlink_metadata(&runs).unwrap();
        let mode = if uid == 0 { 0o1733 } else { 0o700 };
        assert!(
            m.is_dir() && m.uid() == uid && m.mode() & 0o7777 == mode,
            "{m:?}"
        );
    }
    let mut cmd = warden_cmd(who);
    cmd.env("TMPDIR", &tmp).args(["run", "--", "true"]);
    let o = common::finish(cmd, common::RUN_DEADLINE).0;
    common::assert_ok(&o);
    let left = entries();
    assert!(
        !left.contains(&dead_dir),
        "the killed run's scratch is still there: {left:?}"
    );
    assert!(!left.contains(&format!("{dead_dir}.lock")), "{left:?}");
    assert!(
        left.contains(&kept_dir),
        "the kept scratch was swept: {left:?}"
    );
    assert!(
        left.contains(&live_dir),
        "a live run's scratch was swept: {left:?}"
    );
    assert!(left.contains(&format!("{live_dir}.lock")), "{left:?}");
    assert!(runs.join(&live_dir).is_dir());
    // A child we spawned and have not yet reaped.
    common::signal(live.id() as i32, libc::SIGTERM).expect("kill");
    live.wait().unwrap();
    assert_sleepers_gone(&[args[0].clone(), args[2].clone()], Duration::from_secs(2));
    assert_sleepers_gone(&[args[1].clone(), args[1].clone()], Duration::from_secs(2));
    assert_eq!(entries(), vec![kept_dir], "only the kept scratch stays");
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn scratch_of_a_killed_warden_is_swept_by_the_next_run() {
    sweep_killed_scratch(As::Me);
}

#[test]
fn scratch_of_a_killed_warden_is_swept_by_the_next_run_as_nobody() {
    as_nobody(
        "scratch_of_a_killed_warden_is_swept_by_the_next_run_as_nobody",
        sweep_killed_scratch,
    );
}

// --- -v suggestions that work when pasted (issue 14, item 7) --------------------------------------

/// `-v` under a policy that refuses a repetitive workload 400 times prints each distinct
/// refusal once, counts the repeats, and sums up fifty paths of one directory refused for one
/// reason with the one rule for them all: a bounded number of lines, in which every rule the
/// program needs is named, and those rules, pasted into a policy, let the same run through.
fn verbose_groups_repeated_refusals(who: As) {
    let d = common::fresh_dir(&format!("grouped-{who:?}"));
    let (files, hidden) = (d.join("files"), d.join("hidden"));
    std::fs::create_dir(&files).unwrap();
    std::fs::create_dir(&hidden).unwrap();
    common::chmod(&files, 0o755);
    common::chmod(&hidden, 0o755);
    for i in 0..50 {
        common::write_file(&files.join(format!("f{i}")), "", 0o666);
    }
    common::write_file(&hidden.join("secret"), "s\n", 0o644);
    let script = format!(
        "fails=0; i=0; while [ $i -lt 200 ]; do \
         {{ read x < {h}/secret; }} 2>/dev/null || fails=$((fails+1)); \
         {{ true > {f}/f$((i%50)); }} 2>/dev/null || fails=$((fails+1)); \
         i=$((i+1)); done; echo fails=$fails",
        h = s(&hidden),
        f = s(&files)
    );
    let o = run(who, &["-v", "--read", s(&files), "--", "sh", "-c", &script]);
    common::assert_ok(&o);
    assert_eq!(common::stdout(&o), "fails=400\n");
    let err = common::stderr(&o);
    let lines = err.lines().count();
    // The view's own lines (about 30 under the default policy) and the refusals': tens, where
    // a line per refusal was over 400.
    assert!(lines <= 60, "{lines} lines of -v for 400 refusals:\n{err}");
    let denied: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("warden: denied"))
        .collect();
    assert_eq!(denied.len(), 4, "{err}");
    let secret = format!("add: path-allow read {}/secret", s(&hidden));
    assert_eq!(
        denied.iter().filter(|l| l.ends_with(&secret)).count(),
        1,
        "the repeated refusal once, with its rule:\n{err}"
    );
    assert!(err.contains("repeats of refusals it printed"), "{err}");
    let all = format!("for them all add: path-allow write {}/*", s(&files));
    let summed = err
        .lines()
        .find(|l| l.ends_with(&all))
        .unwrap_or_else(|| panic!("no line with {all:?} in\n{err}"));
    assert!(summed.contains("47 more paths"), "{summed}");
    assert!(err.contains("(-v named each distinct one above)"), "{err}");

    let rules = [
        secret.trim_start_matches("add: ").to_owned(),
        all.trim_start_matches("for them all add: ").to_owned(),
    ];
    let policy = d.join("suggested.policy");
    std::fs::write(&policy, rules.join("\n") + "\n").unwrap();
    let o = run(
        who,
        &[
            "--policy",
            s(&policy),
            "--read",
            s(&files),
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    common::assert_ok(&o);
    assert_eq!(common::stdout(&o), "fails=0\n", "{}", common::stderr(&o));
}

#[test]
fn verbose_prints_each_distinct_refusal_once() {
    verbose_groups_repeated_refusals(As::Me);
}

#[test]
fn verbose_prints_each_distinct_refusal_once_as_nobody() {
    as_nobody(
        "verbose_prints_each_distinct_refusal_once_as_nobody",
        verbose_groups_repeated_refusals,
    );
}

/// A connect to a unix socket served outside the sandbox, and a bind of one, refused: `-v`
/// names in one round the one rule each call needs (`net-allow outgoing|incoming unix-domain
/// PATH`), where it named `path-allow read` and then, once that was added, `path-allow write`;
/// the rule, pasted into a policy, lets the call through.
fn verbose_names_the_whole_unix_socket_rule(who: As) {
    use std::os::unix::net::UnixListener;
    let d = common::fresh_dir(&format!("unix-rule-{who:?}"));
    let served = d.join("served.sock");
    let listener = UnixListener::bind(&served).unwrap();
    common::chmod(&served, 0o777);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut conn = conn;
            let _ = conn.write_all(b"hello");
        }
    });
    let client = "import socket, sys\n\
                  s = socket.socket(socket.AF_UNIX)\n\
                  s.connect(sys.argv[1])\n\
                  print(s.recv(5).decode())\n";
    let binds = d.join("binds");
    std::fs::create_dir(&binds).unwrap();
    common::chmod(&binds, 0o777);
    let bound = binds.join("b.sock");
    let server = "import socket, sys\n\
                  s = socket.socket(socket.AF_UNIX)\n\
                  s.bind(sys.argv[1])\n\
                  print('bound')\n";
    let policy = d.join("suggested.policy");
    for (program, path, direction, out) in [
        (client, &served, "outgoing", "hello\n"),
        (server, &bound, "incoming", "bound\n"),
    ] {
        let o = run(who, &["-v", "--", "python3", "-c", program, s(path)]);
        assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
        let err = common::stderr(&o);
        let denied: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("warden: denied") && l.contains(s(path)))
            .collect();
        assert_eq!(denied.len(), 1, "one refusal, one rule:\n{err}");
        let (_, rule) = denied[0].rsplit_once("add: ").expect("a suggestion");
        assert_eq!(
            rule,
            format!("net-allow {direction} unix-domain {}", s(path))
        );
        std::fs::write(&policy, format!("{rule}\n")).unwrap();
        let o = run(
            who,
            &[
                "--policy",
                s(&policy),
                "--",
                "python3",
                "-c",
                program,
                s(path),
            ],
        );
        common::assert_ok(&o);
        assert_eq!(common::stdout(&o), out, "{}", common::stderr(&o));
    }
}

#[test]
fn verbose_names_the_whole_unix_socket_rule_at_once() {
    verbose_names_the_whole_unix_socket_rule(As::Me);
}

#[test]
fn verbose_names_the_whole_unix_socket_rule_at_once_as_nobody() {
    as_nobody(
        "verbose_names_the_whole_unix_socket_rule_at_once_as_nobody",
        verbose_names_the_whole_unix_socket_rule,
    );
}

/// The rule `-v` suggests for a path in the scratch directory names it `$SCRATCH/...` (it named
/// this run's directory, which the next run does not have), so pasted into a policy it lets the
/// next run do it; and a connect with no network rule at all, which `-v` passed over in
/// silence, gets its line and the rule to add.
#[test]
fn verbose_suggestions_work_when_pasted() {
    let d = common::fresh_dir("pasted");
    let suggested = |err: &str, start: &str| -> String {
        let line = err
            .lines()
            .find(|l| l.contains(start))
            .unwrap_or_else(|| panic!("no {start:?} line in\n{err}"));
        let (_, rule) = line.rsplit_once("add: ").expect("a suggestion");
        rule.to_owned()
    };
    let script = "cp /bin/true t && ./t && echo ran";
    let o = run(As::Me, &["-v", "--", "sh", "-c", script]);
    assert_eq!(o.status.code(), Some(126), "{}", common::stderr(&o));
    let rule = suggested(&common::stderr(&o), "denied execve(");
    assert_eq!(rule, "path-allow exec $SCRATCH/t");
    let policy = d.join("pasted.policy");
    std::fs::write(&policy, format!("{rule}\n")).unwrap();
    let o = run(As::Me, &["--policy", s(&policy), "--", "sh", "-c", script]);
    common::assert_ok(&o);
    assert_eq!(common::stdout(&o), "ran\n");

    let connect = "import socket\n\
                   try:\n\
                   \x20   socket.create_connection(('192.0.2.7', 8443), timeout=5)\n\
                   except OSError as e:\n\
                   \x20   print(e.strerror)\n";
    let o = run(As::Me, &["-v", "--", "python3", "-c", connect]);
    common::assert_ok(&o);
    assert_eq!(common::stdout(&o), "Network is unreachable\n");
    let err = common::stderr(&o);
    assert!(
        err.contains("denied connect(\"tcp 192.0.2.7:8443\")") && err.contains("has no network"),
        "{err}"
    );
    let rule = suggested(&err, "denied connect(");
    assert_eq!(rule, "net-allow outgoing tcp 192.0.2.7 8443");
    std::fs::write(&policy, format!("{rule}\n")).unwrap();
    let o = warden(As::Me, &["check", s(&policy)]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
}
