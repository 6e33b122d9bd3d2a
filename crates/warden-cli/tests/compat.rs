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
