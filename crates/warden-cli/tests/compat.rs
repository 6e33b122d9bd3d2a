//! Everyday programs under the default policy do what they do natively (issue 14's
//! compatibility suite, a first slice: the one-liners of the survey that the items
//! fixed, and the common tools around them).
//!
//! Each case is a bash script run twice from a fresh empty directory: natively, and under
//! `warden run` with the default policy (plus the flags the case names), where that directory
//! is the scratch directory. Both runs get `HOME` set to that directory, `PATH` the system's,
//! `LC_ALL=C` and `TZ=UTC`; the exit status and stdout must be the same. Scripts print what
//! they did in a form that does not depend on where or when they ran (no dates, owners or
//! temporary names).

mod common;

use common::As;
use std::path::Path;
use std::process::Command;

/// Runs `script` with bash from `dir`, natively; returns the exit status and stdout.
fn native(script: &str, dir: &Path) -> (Option<i32>, String) {
    let mut cmd = Command::new("bash");
    cmd.args(["-c", script])
        .current_dir(dir)
        .env("PATH", common::SYSTEM_PATH)
        .env("HOME", dir)
        .env("LC_ALL", "C")
        .env("TZ", "UTC");
    let o = common::finish(cmd, common::RUN_DEADLINE).0;
    (o.status.code(), common::stdout(&o))
}

/// Runs `script` with bash under `warden run FLAGS`, from the scratch directory; returns the
/// exit status, stdout and stderr.
fn sandboxed(script: &str, flags: &[&str]) -> (Option<i32>, String, String) {
    let script = format!("export HOME=$PWD; {script}");
    let mut cmd = common::warden_cmd(As::Me);
    cmd.arg("run")
        .args(flags)
        .args(["--", "bash", "-c", &script]);
    let o = common::finish(cmd, common::RUN_DEADLINE).0;
    (o.status.code(), common::stdout(&o), common::stderr(&o))
}

/// Whether every program in `needs` is installed; skips `test` otherwise.
fn installed(test: &str, needs: &[&str]) -> bool {
    for p in needs {
        if !Path::new(p).exists() {
            common::skip(
                test,
                common::Lack::Program,
                &format!("{p} is not installed (scripts/setup.sh installs it)"),
            );
            return false;
        }
    }
    true
}

/// Runs one case both ways and compares.
fn case(test: &str, needs: &[&str], flags: &[&str], script: &str) {
    if !installed(test, needs) {
        return;
    }
    let dir = common::fresh_dir(&format!("compat-{test}"));
    let (code, out) = native(script, &dir);
    assert_eq!(code, Some(0), "natively the case itself fails:\n{out}");
    let (wcode, wout, werr) = sandboxed(script, flags);
    assert_eq!(
        (wcode, wout.as_str()),
        (code, out.as_str()),
        "under warden {flags:?} the script differs from native:\nnative:\n{out}\nwarden \
         stderr:\n{werr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

macro_rules! compat {
    ($(#[$doc:meta])* $name:ident, needs: [$($need:expr),*], flags: [$($flag:expr),*], $script:expr) => {
        $(#[$doc])*
        #[test]
        fn $name() {
            case(stringify!($name), &[$($need),*], &[$($flag),*], $script);
        }
    };
}

compat!(
    /// Item 2: extracting symlinks (`tar` sets their mode through an O_PATH descriptor).
    tar_round_trip_with_symlinks,
    needs: ["/usr/bin/tar"],
    flags: [],
    "mkdir -p a/b && echo x > a/f && ln -s f a/l && ln -s ../f a/b/up && tar cf t.tar a && \
     mkdir o && tar xf t.tar -C o && find o -printf '%y %p %l\\n' | sort && cat o/a/b/up"
);

compat!(
    /// Item 1: the program's own descriptors by name, and process substitution.
    own_descriptors_by_name,
    needs: [],
    flags: [],
    "echo in | cat /dev/stdin; (echo err > /dev/stderr) 2>&1 | cat; cat <(echo procsub); \
     echo same | diff - /dev/stdin && echo diff-ok; echo fd | cat /proc/self/fd/0"
);

compat!(
    /// Item 3: what `make clean` and `mkdir -p` rely on.
    errno_of_existing_and_missing_names,
    needs: [],
    flags: [],
    "mkdir -p d/e && mkdir -p d/e && rm -f missing && echo rm-ok; \
     test -x missing || echo not-executable; python3 -c \
     'import os; os.makedirs(\"d/e\", exist_ok=True); print(\"makedirs-ok\")'"
);

compat!(
    /// Item 4: a virtual environment made during the run, and its programs run.
    python_venv,
    needs: ["/usr/bin/python3"],
    flags: ["--exec", "$SCRATCH/ve/bin/*"],
    "python3 -m venv --without-pip ve && ve/bin/python -c \
     'import sys; print(sys.prefix != sys.base_prefix)' && printf '#!/bin/sh\\necho tool\\n' \
     > ve/bin/tool && chmod +x ve/bin/tool && ve/bin/tool"
);

compat!(
    /// Compressors, both ways.
    compressors_round_trip,
    needs: ["/usr/bin/gzip", "/usr/bin/xz"],
    flags: [],
    "seq 1 20000 > n && gzip -k n && xz -k n && md5sum n && gzip -dc n.gz | md5sum && \
     xz -dc n.xz | md5sum && ls"
);

compat!(
    /// Walking a tree: ls -lAR (modes, sizes, names), find, grep -r, xargs -P.
    tree_walkers,
    needs: [],
    flags: [],
    "mkdir -p t/a/b t/c && echo hit > t/a/b/f && echo miss > t/c/g && ln -s a t/l && \
     ls -lAR t | awk '{print $1, $5, $NF}' && find t | sort && grep -r hit t \
     && seq 1 50 | xargs -P 4 -n 5 echo | wc -l"
);

compat!(
    /// A parallel make that writes, renames and removes files.
    make_in_parallel,
    needs: ["/usr/bin/make"],
    flags: [],
    "printf 'all: $(addprefix out/,$(addsuffix .txt,$(shell seq 1 20)))\\n\
     out/%%.txt:\\n\\t@mkdir -p out && echo $* > $@.tmp && mv $@.tmp $@\\n\
     clean:\\n\\t@rm -rf out\\n' > Makefile && make -s -j8 && cat out/*.txt | sort -n | md5sum && \
     make -s clean && make -s clean && ls"
);

compat!(
    /// git: init, commit, log, gc, fsck.
    git_repository,
    needs: ["/usr/bin/git"],
    flags: [],
    "git init -q r && cd r && echo a > f && git add f && \
     git -c user.email=a@b -c user.name=n commit -q -m first && echo b >> f && \
     git -c user.email=a@b -c user.name=n commit -q -am second && git log --format=%s && \
     git gc -q && git fsck --no-progress && git cat-file -p HEAD:f"
);

compat!(
    /// sqlite3: a database file with its journal.
    sqlite_database,
    needs: ["/usr/bin/sqlite3"],
    flags: [],
    "sqlite3 db 'create table t(x); insert into t values (1),(2),(3);' && \
     sqlite3 db 'select sum(x) from t;'"
);

compat!(
    /// Python's multiprocessing over pipes (no semaphores in /dev/shm needed).
    python_subprocesses,
    needs: ["/usr/bin/python3"],
    flags: [],
    "python3 -c 'import subprocess, concurrent.futures as f
with f.ThreadPoolExecutor(4) as e:
    print(sorted(e.map(lambda i: subprocess.run([\"echo\", str(i)], capture_output=True, \
     text=True).stdout.strip(), range(8))))'"
);

compat!(
    /// Compiling and running a C program in the working directory (with an exec grant).
    cc_build_and_run,
    needs: ["/usr/bin/cc"],
    flags: ["--exec", "$SCRATCH/bin/*"],
    "mkdir -p bin && printf '#include <stdio.h>\\nint main(void){puts(\"built\");return 0;}\\n' \
     > m.c && cc -o bin/m m.c && bin/m"
);

/// Item 9: what a program finds without asking. `HOME` and `PWD` are places it may use (the
/// scratch directory it starts in, never warden's own, which it may not write or even see),
/// and the system facts `uptime` reads are there.
#[test]
fn home_pwd_and_uptime_are_there_by_default() {
    common::each_user("home_pwd_and_uptime_are_there_by_default", |who| {
        let mut cmd = common::warden_cmd(who);
        cmd.env("HOME", "/root").env("PWD", "/root").args([
            "run",
            "--",
            "sh",
            "-c",
            "echo \"$HOME\"; echo \"$PWD\"; pwd; touch \"$HOME/.history\" && echo home-ok; \
             uptime > /dev/null && echo uptime-ok; wc -w < /proc/loadavg",
        ]);
        let o = common::finish(cmd, common::RUN_DEADLINE).0;
        common::assert_ok(&o);
        let out = common::stdout(&o);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 6, "{out}\n{}", common::stderr(&o));
        assert!(lines[0].starts_with('/') && lines[0] != "/root", "{out}");
        assert_eq!((lines[1], lines[2]), (lines[0], lines[0]), "{out}");
        assert_eq!(&lines[3..], ["home-ok", "uptime-ok", "5"], "{out}");
    });
}

/// Item 9: `--here` builds the project the user stands in, and nothing beside it.
#[test]
fn here_builds_the_project_standing_in() {
    common::each_user("here_builds_the_project_standing_in", |who| {
        let top = common::fresh_dir(&format!("compat-here-{}", common::who_tag(who)));
        let project = top.join("project");
        std::fs::create_dir(&project).unwrap();
        common::chmod(&top, 0o777);
        common::chmod(&project, 0o777);
        common::write_file(
            &project.join("Makefile"),
            "all:\n\t@./gen.sh > out.txt && cat out.txt\nclean:\n\t@rm -f out.txt\n",
            0o666,
        );
        common::write_file(
            &project.join("gen.sh"),
            "#!/bin/sh\necho generated\n",
            0o777,
        );
        let o = common::run_warden(who, &project, &["run", "--here", "--", "make", "-s"]);
        common::assert_ok(&o);
        assert_eq!(common::stdout(&o), "generated\n");
        assert!(project.join("out.txt").exists());
        // Beside the project: nothing.
        let o = common::run_warden(
            who,
            &project,
            &["run", "--here", "--", "sh", "-c", "touch ../beside"],
        );
        assert!(!o.status.success(), "{}", common::stderr(&o));
        assert!(!top.join("beside").exists());
        // And without the flag the project is not the program's.
        let o = common::run_warden(who, &project, &["run", "--", "make", "-s", "clean"]);
        assert!(!o.status.success());
        assert!(project.join("out.txt").exists());
        let o = common::run_warden(
            who,
            &project,
            &["run", "--here", "--", "make", "-s", "clean"],
        );
        common::assert_ok(&o);
        assert!(!project.join("out.txt").exists());
        let _ = std::fs::remove_dir_all(&top);
    });
}

/// Item 9: an interactive run (`--tty`) may name its terminal, so `tty` knows it.
#[test]
fn an_interactive_run_knows_its_terminal() {
    if !installed(
        "an_interactive_run_knows_its_terminal",
        &["/usr/bin/script"],
    ) {
        return;
    }
    // script(1) gives warden a pseudo-terminal as its stdin, stdout and stderr.
    let run = |flags: &str| {
        let mut cmd = Command::new("/usr/bin/script");
        cmd.args([
            "-qec",
            &format!("{} run {flags} -- tty", common::warden()),
            "/dev/null",
        ])
        .current_dir(common::workdir())
        .env("PATH", common::SYSTEM_PATH);
        common::stdout(&common::finish(cmd, common::RUN_DEADLINE).0)
    };
    let out = run("--tty");
    assert!(out.trim().starts_with("/dev/pts/"), "{out:?}");
    let out = run("");
    assert_eq!(out.trim(), "not a tty", "without --tty: {out:?}");
}
