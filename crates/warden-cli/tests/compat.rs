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
///
/// As the program runs under warden: with no capabilities. A sandboxed program never has any
/// (docs/design.md, the view), so root's override of file modes does not reach into the
/// sandbox, and a root-only directory of another owner (`/usr/share/polkit-1/rules.d`, 0700
/// polkitd) is "Permission denied" there; the native run as root without capabilities is the
/// same program with the same rights.
fn native(script: &str, dir: &Path) -> (Option<i32>, String) {
    let mut cmd = Command::new("/usr/bin/setpriv");
    cmd.args([
        "--bounding-set=-all",
        "--inh-caps=-all",
        "--",
        "bash",
        "-c",
        script,
    ])
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
            let (lack, how) = match *p {
                "/usr/bin/javac" | "/usr/bin/java" => (
                    common::Lack::Jdk,
                    "a JDK, e.g. apt-get install default-jdk-headless",
                ),
                _ => (common::Lack::Program, "scripts/setup.sh installs it"),
            };
            common::skip(test, lack, &format!("{p} is not installed ({how})"));
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

/// One case of the suite: a script, what it needs installed, and the flags it runs with.
struct Case {
    name: &'static str,
    /// What the case checks (and which item of issue 14 it keeps fixed).
    why: &'static str,
    needs: &'static [&'static str],
    flags: &'static [&'static str],
    script: &'static str,
}

/// Binds unix sockets by absolute and relative paths in the start directory and prints what
/// their names say (compared, not printed, where the path depends on the directory), then runs
/// a `multiprocessing.Manager()`, whose clients connect to the name its listener reports.
const UNIX_SOCKET_NAMES: &str = "mkdir d e && python3 - <<'EOF'
import multiprocessing as m, os, socket
U = socket.AF_UNIX
p = os.path.join(os.getcwd(), 'd', 's.sock')
s = socket.socket(U); s.bind(p); s.listen()
print('bound', s.getsockname() == p)
c = socket.socket(U); c.connect(p)
a, peer = s.accept()
print('peer', c.getpeername() == p, 'accepted', a.getsockname() == p, repr(peer), repr(c.getsockname()))
r = socket.socket(U); r.bind('d/r.sock'); r.listen(); print('relative', r.getsockname())
c2 = socket.socket(U); c2.connect('d/r.sock'); print('relative peer', c2.getpeername())
q = os.path.join(os.getcwd(), 'e', 's.sock')
t = socket.socket(U); t.bind(q); print('same last name', t.getsockname() == q, s.getsockname() == p)
print('kept', os.path.exists(p), sorted(os.listdir('d')))
mgr = m.Manager(); print('manager', mgr.list([1, 2]), mgr.dict(a=1)); mgr.shutdown()
EOF";

/// The cases, each a test of its own (below), and each replayed by `learn --verify`.
const CASES: &[Case] = &[
    Case {
        name: "tar_round_trip_with_symlinks",
        why: "Item 2: extracting symlinks (`tar` sets their mode through an O_PATH descriptor).",
        needs: &["/usr/bin/tar"],
        flags: &[],
        script: "mkdir -p a/b && echo x > a/f && ln -s f a/l && ln -s ../f a/b/up && tar cf t.tar a && \
         mkdir o && tar xf t.tar -C o && find o -printf '%y %p %l\\n' | sort && cat o/a/b/up",
    },
    Case {
        name: "own_descriptors_by_name",
        // diff's stdin is a file: with a pipe, `diff - /dev/stdin` calls the two names one file
        // only if the pipe's times do not change between its two stats, and the writer may
        // still be writing then (natively too: 2 runs in 300 printed a difference).
        why: "Item 1: the program's own descriptors by name, and process substitution.",
        needs: &[],
        flags: &[],
        script: "echo in | cat /dev/stdin; (echo err > /dev/stderr) 2>&1 | cat; cat <(echo procsub); \
         echo same > same; diff - /dev/stdin < same && echo diff-ok; echo fd | cat /proc/self/fd/0",
    },
    Case {
        name: "errno_of_existing_and_missing_names",
        why: "Item 3: what `make clean` and `mkdir -p` rely on.",
        needs: &[],
        flags: &[],
        script: "mkdir -p d/e && mkdir -p d/e && rm -f missing && echo rm-ok; \
         test -x missing || echo not-executable; python3 -c \
         'import os; os.makedirs(\"d/e\", exist_ok=True); print(\"makedirs-ok\")'",
    },
    Case {
        name: "python_venv",
        why: "Item 4: a virtual environment made during the run, and its programs run.",
        needs: &["/usr/bin/python3"],
        flags: &["--exec", "$SCRATCH/ve/bin/*"],
        script: "python3 -m venv --without-pip ve && ve/bin/python -c \
         'import sys; print(sys.prefix != sys.base_prefix)' && printf '#!/bin/sh\\necho tool\\n' \
         > ve/bin/tool && chmod +x ve/bin/tool && ve/bin/tool",
    },
    Case {
        name: "compressors_round_trip",
        why: "Compressors, both ways.",
        needs: &["/usr/bin/gzip", "/usr/bin/xz"],
        flags: &[],
        script: "seq 1 20000 > n && gzip -k n && xz -k n && md5sum n && gzip -dc n.gz | md5sum && \
         xz -dc n.xz | md5sum && ls",
    },
    Case {
        name: "tree_walkers",
        why: "Walking a tree: ls -lAR (modes, file sizes, names: a directory's size and the \
              block totals are its file system's, and the run's scratch is a tmpfs), find, \
              grep -r, xargs -P.",
        needs: &[],
        flags: &[],
        script: "mkdir -p t/a/b t/c && echo hit > t/a/b/f && echo miss > t/c/g && ln -s a t/l && \
         ls -lAR t | awk '$1 != \"total\" {print $1, ($1 ~ /^-/ ? $5 : \"\"), $NF}' && find t | sort && grep -r hit t \
         && seq 1 50 | xargs -P 4 -n 5 echo | wc -l",
    },
    Case {
        name: "make_in_parallel",
        why: "A parallel make that writes, renames and removes files.",
        needs: &["/usr/bin/make"],
        flags: &[],
        script: "printf 'all: $(addprefix out/,$(addsuffix .txt,$(shell seq 1 20)))\\n\
         out/%%.txt:\\n\\t@mkdir -p out && echo $* > $@.tmp && mv $@.tmp $@\\n\
         clean:\\n\\t@rm -rf out\\n' > Makefile && make -s -j8 && cat out/*.txt | sort -n | md5sum && \
         make -s clean && make -s clean && ls",
    },
    Case {
        name: "git_repository",
        why: "git: init, commit, log, gc, fsck.",
        needs: &["/usr/bin/git"],
        flags: &[],
        script: "git init -q r && cd r && echo a > f && git add f && \
         git -c user.email=a@b -c user.name=n commit -q -m first && echo b >> f && \
         git -c user.email=a@b -c user.name=n commit -q -am second && git log --format=%s && \
         git gc -q && git fsck --no-progress && git cat-file -p HEAD:f",
    },
    Case {
        name: "sqlite_database",
        why: "sqlite3: a database file with its journal.",
        needs: &["/usr/bin/sqlite3"],
        flags: &[],
        script: "sqlite3 db 'create table t(x); insert into t values (1),(2),(3);' && \
         sqlite3 db 'select sum(x) from t;'",
    },
    Case {
        name: "python_subprocesses",
        why: "Python's multiprocessing over pipes (no semaphores in /dev/shm needed).",
        needs: &["/usr/bin/python3"],
        flags: &[],
        script: "python3 -c 'import subprocess, concurrent.futures as f\n\
         with f.ThreadPoolExecutor(4) as e:\n    print(sorted(e.map(lambda i: \
         subprocess.run([\"echo\", str(i)], capture_output=True, \
         text=True).stdout.strip(), range(8))))'",
    },
    Case {
        name: "python_pool",
        why: "Item 9: Python's multiprocessing.Pool, whose semaphores live in /dev/shm (the \
              sandbox's own).",
        needs: &["/usr/bin/python3"],
        flags: &[],
        script: "python3 -c 'import multiprocessing as m\n\
         with m.Pool(3) as p:\n    print(sum(p.map(abs, range(-50, 50))))\n\
         q = m.Queue(); q.put(7); print(q.get())'",
    },
    Case {
        name: "unix_socket_names",
        why: "Issue 39, item 8: a unix socket's name is the path it was bound to (getsockname, \
              a client's getpeername, an accepted connection's getsockname), though the agent \
              binds it by its last name; multiprocessing.Manager() hands that name to its \
              clients.",
        needs: &["/usr/bin/python3"],
        flags: &[],
        script: UNIX_SOCKET_NAMES,
    },
    Case {
        name: "cc_build_and_run",
        why: "Compiling and running a C program in the working directory (with an exec grant).",
        needs: &["/usr/bin/cc"],
        flags: &["--exec", "$SCRATCH/bin/*"],
        script: "mkdir -p bin && printf '#include <stdio.h>\\nint main(void){puts(\"built\");return 0;}\\n' \
         > m.c && cc -o bin/m m.c && bin/m",
    },
    Case {
        name: "build_then_run_in_the_scratch_directory",
        why: "Issue 39, item 5: the newcomer's `cc -o a a.c && ./a` (what make test, cargo test \
              and go test do) runs with the one flag the refusal names, `--exec '$SCRATCH'`: \
              the scratch directory given as a directory is its tree, as any directory is.",
        needs: &["/usr/bin/cc"],
        flags: &["--exec", "$SCRATCH"],
        script: "printf '#include <stdio.h>\\nint main(void){puts(\"ran\");return 0;}\\n' > a.c \
         && cc -o a a.c && ./a && mkdir -p sub && cp a sub/b && sub/b",
    },
    Case {
        name: "node_worker_threads",
        why: "node with four worker threads passing messages.",
        needs: &["/usr/bin/node"],
        flags: &[],
        script: "node -e \"const {Worker} = require('worker_threads'); let n = 0; const out = []; \
         for (let i = 0; i < 4; i++) { const w = new Worker('const {parentPort, workerData} = \
         require(\\\"worker_threads\\\"); let s = 0; for (let k = 0; k < 1e5; k++) s += k % \
         (workerData + 2); parentPort.postMessage([workerData, s]);', {eval: true, workerData: \
         i}); w.on('message', m => { out.push(m.join(':')); if (++n == 4) \
         console.log(out.sort().join(' ')); }); }\"",
    },
    Case {
        name: "metadata_heavy_walks",
        why: "The survey's metadata-heavy walks: ls -laR /usr/share/doc and find /usr, as natively \
              (without __pycache__, where a Python run as root elsewhere may add a file meanwhile).",
        needs: &[],
        flags: &[],
        script: "ls -laR /usr/share/doc 2>&1 | md5sum; find /usr -name __pycache__ -prune -o -print 2>&1 | md5sum; \
         find /usr -name '*.so*' | wc -l",
    },
    Case {
        name: "uptime_and_system_facts",
        why: "Item 9: uptime and the /proc files runtimes read to size themselves.",
        needs: &["/usr/bin/uptime"],
        flags: &[],
        script: "uptime > /dev/null && echo uptime-ok; wc -w < /proc/loadavg; \
         grep -c ^processor /proc/cpuinfo; grep -c ^MemTotal /proc/meminfo; nproc",
    },
    Case {
        name: "java_compile_and_run",
        why: "javac and java (the JVM's threads, its class data sharing archive, /proc facts).",
        needs: &["/usr/bin/javac", "/usr/bin/java"],
        flags: &[],
        script: "printf 'public class H { public static void main(String[] a) { \
         System.out.println(\"hi \" + Runtime.getRuntime().availableProcessors()); } }' > H.java \
         && javac H.java && java H",
    },
    Case {
        name: "tmp_is_writable",
        why: "Issue 39, point 4: a newcomer's `echo x > /tmp/x`, and `mktemp` without TMPDIR: \
              /tmp is writable (the sandbox's own, mode 1777), as natively.",
        needs: &["/usr/bin/mktemp"],
        flags: &[],
        script: "f=/tmp/warden-compat-$$; echo x > $f && cat $f && mkdir $f.d && echo y > $f.d/g \
         && ls $f.d && mv $f.d/g $f.g && cat $f.g && rm -r $f $f.d $f.g && echo removed; \
         t=$(env -u TMPDIR mktemp) && case $t in /tmp/tmp.*) echo mktemp-in-tmp;; esac && \
         rm $t; test -w /tmp && echo writable; stat -c %a /tmp",
    },
];

fn case_named(name: &str) -> &'static Case {
    CASES
        .iter()
        .find(|c| c.name == name)
        .expect("a case of CASES")
}

macro_rules! compat {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let c = case_named(stringify!($name));
                assert!(!c.why.is_empty());
                case(c.name, c.needs, c.flags, c.script);
            }
        )*
    };
}

compat!(
    tar_round_trip_with_symlinks,
    own_descriptors_by_name,
    errno_of_existing_and_missing_names,
    python_venv,
    compressors_round_trip,
    tree_walkers,
    make_in_parallel,
    git_repository,
    sqlite_database,
    python_subprocesses,
    python_pool,
    unix_socket_names,
    cc_build_and_run,
    build_then_run_in_the_scratch_directory,
    node_worker_threads,
    metadata_heavy_walks,
    uptime_and_system_facts,
    java_compile_and_run,
    tmp_is_writable,
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

/// Issue 39, item 8, as root and as uid 65534 (the compatibility case above runs as whoever
/// runs the tests): a unix socket the agent bound is named by the path the program gave, for
/// itself and for its peers, and `multiprocessing.Manager()` works.
#[test]
fn unix_socket_names_are_the_bound_paths_for_each_user() {
    let test = "unix_socket_names_are_the_bound_paths_for_each_user";
    if !installed(test, &["/usr/bin/python3"]) {
        return;
    }
    common::each_user(test, |who| {
        let mut cmd = common::warden_cmd(who);
        cmd.args(["run", "--", "bash", "-c", UNIX_SOCKET_NAMES]);
        let o = common::finish(cmd, common::RUN_DEADLINE).0;
        common::assert_ok(&o);
        assert_eq!(
            common::stdout(&o),
            "bound True\n\
             peer True accepted True '' ''\n\
             relative d/r.sock\n\
             relative peer d/r.sock\n\
             same last name True True\n\
             kept True ['r.sock', 's.sock']\n\
             manager [1, 2] {'a': 1}\n",
            "as {who:?}: {}",
            common::stderr(&o)
        );
    });
}

/// Issue 39, item 7, as root and as uid 65534: a program found on PATH after one the policy may
/// not run (a version manager's shim) runs, and one line says which ran instead of which, why,
/// and what brings the first in; once allowed, the first runs, and nothing is said.
#[test]
fn a_path_entry_the_policy_skips_is_named() {
    common::each_user("a_path_entry_the_policy_skips_is_named", |who| {
        let dir = common::fresh_dir(&format!("path-skip-{}", common::who_tag(who)));
        let shims = dir.join("shims");
        let system = dir.join("system");
        for (d, says) in [(&shims, "shim"), (&system, "system")] {
            std::fs::create_dir_all(d).unwrap();
            common::write_file(&d.join("tool"), format!("#!/bin/sh\necho {says}\n"), 0o755);
            common::chmod(d, 0o755);
        }
        common::chmod(&dir, 0o755);
        let (s, y) = (shims.to_str().unwrap(), system.to_str().unwrap());
        let path = format!("PATH={s}:{y}:/usr/bin:/bin");
        let run = |allow_shims: bool| {
            let mut cmd = common::warden_cmd(who);
            cmd.args(["run", "--env", &path, "--read", y, "--exec", y]);
            if allow_shims {
                cmd.args(["--read", s, "--exec", s]);
            }
            cmd.args(["--", "tool"]);
            common::finish(cmd, common::RUN_DEADLINE).0
        };
        let o = run(false);
        common::assert_ok(&o);
        assert_eq!(common::stdout(&o), "system\n", "as {who:?}");
        let err = common::stderr(&o);
        let said: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("warden: running "))
            .collect();
        assert_eq!(said.len(), 1, "as {who:?}: {err}");
        let line = said[0];
        for part in [
            format!("warden: running {y}/tool for tool: the PATH has {s}/tool first"),
            format!("add: path-allow exec {s}/tool"),
            format!("--exec {s}"),
        ] {
            assert!(line.contains(&part), "as {who:?}: {part:?} not in {line}");
        }
        let o = run(true);
        common::assert_ok(&o);
        assert_eq!(common::stdout(&o), "shim\n", "as {who:?}");
        assert!(
            !common::stderr(&o).contains("warden: running "),
            "as {who:?}: {}",
            common::stderr(&o)
        );
    });
}

/// Issue 39, item 12, as root and as uid 65534: a server in the sandbox's own network (no IP
/// rule) is told, once, while it runs, that nothing outside can reach its port, with the rule
/// that would serve it; a host server on another port is not the sandbox's and is not named;
/// with that rule the line is not said and the host reaches the server.
#[test]
fn a_server_nothing_can_reach_is_named_with_its_rule() {
    let test = "a_server_nothing_can_reach_is_named_with_its_rule";
    if !installed(test, &["/usr/bin/python3"]) {
        return;
    }
    common::each_user(test, |who| {
        // A server of the host's, listening while the sandbox runs.
        let host = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
        let host_port = host.local_addr().unwrap().port();
        let port = free_port();
        let serve = format!(
            "import socket, time\n\
             s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
             s.bind(('0.0.0.0', {port})); s.listen(); print('listening', flush=True)\n\
             s.settimeout(3)\n\
             try:\n    c, _ = s.accept(); c.sendall(b'hello'); c.close()\n\
             except socket.timeout:\n    pass\n"
        );
        let mut cmd = common::warden_cmd(who);
        cmd.args(["run", "--", "/usr/bin/python3", "-c", &serve]);
        let o = common::finish(cmd, common::RUN_DEADLINE).0;
        common::assert_ok(&o);
        let err = common::stderr(&o);
        let said: Vec<&str> = err
            .lines()
            .filter(|l| l.contains(" listens on TCP port "))
            .collect();
        assert_eq!(
            said,
            [format!(
                "warden: python3 listens on TCP port {port} in the sandbox's own network, which \
                 nothing outside the sandbox can reach; to serve it to the host, add the line \
                 `net-allow incoming tcp 0/0 {port}` to a policy file and give it with --policy \
                 FILE"
            )],
            "as {who:?}: {err}"
        );
        assert!(
            !err.contains(&format!("port {host_port} ")),
            "as {who:?}: {err}"
        );
        // With the rule: served to the host, and nothing said.
        let dir = common::fresh_dir(&format!("listen-{}", common::who_tag(who)));
        common::chmod(&dir, 0o755);
        let policy = dir.join("serve.policy");
        common::write_file(
            &policy,
            format!("net-allow incoming tcp 0/0 {port}\n"),
            0o644,
        );
        let mut cmd = common::warden_cmd(who);
        cmd.args(["run", "--policy", policy.to_str().unwrap(), "--"])
            .args(["/usr/bin/python3", "-c", &serve])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).unwrap();
        assert_eq!(line, "listening\n", "as {who:?}");
        let mut got = String::new();
        let mut c = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        std::io::Read::read_to_string(&mut c, &mut got).unwrap();
        assert_eq!(got, "hello", "as {who:?}");
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "as {who:?}");
        let err = common::stderr(&o);
        assert!(!err.contains(" listens on TCP port "), "as {who:?}: {err}");
        drop(host);
    });
}

/// Issue 39, item 6, as root and as uid 65534: with no rule in the user's home, `HOME` is the
/// scratch directory and git finds no identity there; a rule that names a file in it (`--read
/// ~/.gitconfig`) keeps `HOME` the user's, and git finds the identity as natively, while the
/// home's other files stay refused.
#[test]
fn a_rule_in_home_keeps_home_and_its_configuration() {
    let test = "a_rule_in_home_keeps_home_and_its_configuration";
    if !installed(test, &["/usr/bin/git"]) {
        return;
    }
    common::each_user(test, |who| {
        let home = common::fresh_dir(&format!("home-{}", common::who_tag(who)));
        common::write_file(
            &home.join(".gitconfig"),
            "[user]\n\tname = Ann Example\n",
            0o644,
        );
        common::write_file(&home.join("secret"), "secret\n", 0o644);
        common::chmod(&home, 0o755);
        let h = home.to_str().unwrap();
        let run = |flags: &[&str]| {
            let mut cmd = common::warden_cmd(who);
            cmd.env("HOME", h)
                .args(["run"])
                .args(flags)
                .args(["--", "sh", "-c"])
                .arg("echo \"$HOME\"; git config user.name; cat \"$HOME/secret\" 2>/dev/null || echo refused");
            common::finish(cmd, common::RUN_DEADLINE).0
        };
        let o = run(&[]);
        let out = common::stdout(&o);
        let lines: Vec<&str> = out.lines().collect();
        assert_ne!(lines.first(), Some(&h), "as {who:?}: {out}");
        assert_eq!(
            lines.get(1),
            Some(&"refused"),
            "as {who:?}: no identity: {out}"
        );
        let gitconfig = format!("{h}/.gitconfig");
        let o = run(&["--read", &gitconfig]);
        assert_eq!(
            common::stdout(&o),
            format!("{h}\nAnn Example\nrefused\n"),
            "as {who:?}: {}",
            common::stderr(&o)
        );
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
        // Not from / nor from the home directory itself: that is not a project.
        let o = common::run_warden(who, Path::new("/"), &["run", "--here", "--", "true"]);
        assert_eq!(o.status.code(), Some(125), "{}", common::stderr(&o));
        let mut cmd = common::warden_cmd(who);
        cmd.current_dir(&project)
            .env("HOME", &project)
            .args(["run", "--here", "--", "true"]);
        let o = common::finish(cmd, common::RUN_DEADLINE).0;
        assert!(
            common::stderr(&o).contains("cd into the project"),
            "{}",
            common::stderr(&o)
        );
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
    // tty fails (status 1), and warden's closing line follows on the same terminal.
    let program: Vec<&str> = out
        .lines()
        .filter(|l| !l.starts_with("warden: the program exited with status 1"))
        .collect();
    assert_eq!(program, ["not a tty"], "without --tty: {out:?}");
}

/// A fresh directory with an nginx configuration that serves `index.html` on `port` with two
/// workers switched to `user` (if any), and a policy for it (with `extra` lines).
fn nginx_site(name: &str, port: u16, user: Option<&str>, extra: &str) -> std::path::PathBuf {
    let d = common::fresh_dir(name);
    std::fs::create_dir_all(d.join("www")).unwrap();
    std::fs::create_dir_all(d.join("tmp")).unwrap();
    common::write_file(&d.join("www/index.html"), "hello from nginx\n", 0o644);
    let ds = d.display();
    let user = user.map_or_else(String::new, |u| format!("user {u};\n"));
    let conf = format!(
        "daemon off;\nmaster_process on;\nworker_processes 2;\n{user}pid {ds}/nginx.pid;\n\
         error_log stderr;\nevents {{ worker_connections 64; }}\nhttp {{\n  access_log off;\n  \
         client_body_temp_path {ds}/tmp;\n  proxy_temp_path {ds}/tmp;\n  fastcgi_temp_path \
         {ds}/tmp;\n  uwsgi_temp_path {ds}/tmp;\n  scgi_temp_path {ds}/tmp;\n  server {{ listen \
         127.0.0.1:{port}; root {ds}/www; }}\n}}\n"
    );
    common::write_file(&d.join("nginx.conf"), conf, 0o644);
    let policy = format!(
        "{extra}path-allow read {ds} {ds}/*\npath-allow write {ds}/*\npath-allow unlink {ds}/*\n\
         net-allow incoming tcp 127.0.0.1 {port}\nnet-allow outgoing tcp 127.0.0.1 {port}\n"
    );
    common::write_file(&d.join("nginx.policy"), policy, 0o644);
    for sub in ["", "www", "tmp"] {
        common::chmod(&d.join(sub), 0o777);
    }
    d
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Item 10: nginx with its usual `user nobody nogroup`: the master (root in the sandbox) switches
/// its workers to uid/gid 65534, which `map-ids` maps to ids no host user has. Checked from
/// outside: curl on the host gets the file, and each worker runs as the mapped outside id
/// (100001 + 65534 - 1) with no capability left, the master as root with only CAP_SETUID and
/// CAP_SETGID (of the sandbox's user namespace).
#[test]
fn nginx_workers_switch_to_mapped_ids_and_serve() {
    let test = "nginx_workers_switch_to_mapped_ids_and_serve";
    if !installed(test, &["/usr/sbin/nginx", "/usr/bin/curl"]) || !common::require_root(test) {
        return;
    }
    let port = free_port();
    let d = nginx_site(
        "compat-nginx",
        port,
        Some("nobody nogroup"),
        "map-ids 1 100001 65535\n",
    );
    let mut cmd = common::warden_cmd(As::Me);
    cmd.args(["run", "--wall-time", "60", "-p"])
        .arg(d.join("nginx.policy"))
        .args(["--", "/usr/sbin/nginx", "-c"])
        .arg(d.join("nginx.conf"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut warden = cmd.spawn().unwrap();
    let url = format!("http://127.0.0.1:{port}/");
    let mut body = String::new();
    for _ in 0..300 {
        let o = Command::new("/usr/bin/curl")
            .args(["-s", &url])
            .output()
            .unwrap();
        body = String::from_utf8_lossy(&o.stdout).into_owned();
        if o.status.success() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Every nginx process of this sandbox (the master names our directory, the workers are its
    // children): its ids and capabilities, from the host's /proc.
    let status_of =
        |pid: &str| std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |status: &str, k: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .unwrap_or_default()
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    let pids: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    let masters: Vec<&String> = pids
        .iter()
        .filter(|p| {
            let cmdline = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            status_of(p).starts_with("Name:\tnginx")
                && String::from_utf8_lossy(&cmdline).contains(&*d.display().to_string())
        })
        .collect();
    let mut seen = Vec::new();
    for p in &pids {
        let status = status_of(p);
        let ppid = field(&status, "PPid:");
        if status.starts_with("Name:\tnginx") && (masters.contains(&p) || masters.contains(&&ppid))
        {
            seen.push((
                field(&status, "Uid:"),
                field(&status, "Gid:"),
                field(&status, "CapEff:"),
                field(&status, "CapPrm:"),
            ));
        }
    }
    let _ = warden.kill();
    let out = warden.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(body, "hello from nginx\n", "warden's stderr:\n{err}");
    seen.sort();
    let worker = (
        "165534".to_owned(),
        "165534".to_owned(),
        "0".repeat(16),
        "0".repeat(16),
    );
    let master = (
        "0".to_owned(),
        "0".to_owned(),
        format!("{:016x}", 0xc0),
        format!("{:016x}", 0xc0),
    );
    assert_eq!(seen, [master, worker.clone(), worker], "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Item 10, the other side: as an unprivileged user `map-ids` is refused at the start with the
/// reason, and so is a range that holds an id a user or group of this host has.
#[test]
fn map_ids_is_refused_where_it_cannot_be_mapped() {
    let test = "map_ids_is_refused_where_it_cannot_be_mapped";
    let d = common::fresh_dir("compat-map-ids-refused");
    common::chmod(&d, 0o755);
    if common::can_run_as_nobody(test) {
        common::write_file(&d.join("map.policy"), "map-ids 1 100001 65535\n", 0o644);
        let o = common::run_warden(As::Nobody, &d, &["run", "-p", "map.policy", "--", "true"]);
        assert_eq!(o.status.code(), Some(125));
        let err = common::stderr(&o);
        assert!(
            err.contains("newuidmap") && err.contains("no setuid helper"),
            "{err}"
        );
    }
    // A range holding a user of this host is refused.
    common::write_file(&d.join("bad.policy"), "map-ids 1 1 65535\n", 0o644);
    let o = common::run_warden(As::Me, &d, &["run", "-p", "bad.policy", "--", "true"]);
    if common::require_root(test) {
        assert_eq!(o.status.code(), Some(125), "{}", common::stderr(&o));
        assert!(
            common::stderr(&o).contains("of this host"),
            "{}",
            common::stderr(&o)
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// Item 10, adversarial: a process that switched to a mapped id cannot switch back (its
/// capabilities went with its ids) nor reach an id outside the map.
#[test]
fn a_switched_process_cannot_switch_back() {
    let test = "a_switched_process_cannot_switch_back";
    if !installed(test, &["/usr/bin/python3"]) || !common::require_root(test) {
        return;
    }
    let d = common::fresh_dir("compat-switch-back");
    common::chmod(&d, 0o777);
    let ds = d.display();
    common::write_file(
        &d.join("p.policy"),
        format!("map-ids 1 100001 65535\npath-allow read {ds} {ds}/*\npath-allow write {ds}/*\n"),
        0o644,
    );
    let script = format!(
        "import os\n\
         try:\n    os.setuid(70000)\nexcept OSError as e:\n    print('unmapped', e.errno)\n\
         os.setgroups([]); os.setgid(65534); os.setuid(65534)\n\
         open('{ds}/made', 'w').write('x')\n\
         for f, a in ((os.setuid, 0), (os.setgid, 0), (os.seteuid, 0), (os.setuid, 1000)):\n    \
         try:\n        f(a); print('switched back', f.__name__, a)\n    \
         except OSError as e:\n        print('refused', e.errno)\n\
         print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])\n"
    );
    let o = common::run_warden(
        As::Me,
        &d,
        &[
            "run",
            "-p",
            "p.policy",
            "--",
            "/usr/bin/python3",
            "-c",
            &script,
        ],
    );
    common::assert_ok(&o);
    assert_eq!(
        common::stdout(&o),
        "unmapped 22\nrefused 1\nrefused 1\nrefused 1\nrefused 1\n0000000000000000\n",
        "{}",
        common::stderr(&o)
    );
    // Made through the agent, which creates as warden's user (see docs/policy.md, map-ids: what a switched
    // process may do is the policy's, whatever its ids).
    assert!(d.join("made").exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// The suite's other half (issue 14): for each case, `warden learn --verify` from a clean state
/// (learning and the replay each start in a fresh scratch directory, with the default policy
/// as the base, as its own test runs) learns a policy under which the case runs again with no
/// denial, and the case's output under that policy is the native one.
#[test]
fn learn_verify_runs_every_case_again() {
    for c in CASES {
        let test = format!("learn_verify_runs_every_case_again ({})", c.name);
        if !installed(&test, c.needs) {
            continue;
        }
        let dir = common::fresh_dir(&format!("compat-learn-{}", c.name));
        let (code, native_out) = native(c.script, &dir);
        assert_eq!(
            code,
            Some(0),
            "{}: natively the case fails:\n{native_out}",
            c.name
        );
        let policy = dir.join("learned.policy");
        let script = format!("export HOME=$PWD; {}", c.script);
        let o = common::run_warden(
            As::Me,
            &dir,
            &[
                "learn",
                "-o",
                policy.to_str().unwrap(),
                "--verify",
                "--",
                "bash",
                "-c",
                &script,
            ],
        );
        let err = common::stderr(&o);
        assert!(
            o.status.success()
                && err.contains(
                    "verify: the same command runs under the learned policy with no denial"
                ),
            "{}: learn --verify failed ({:?}):\n{err}",
            c.name,
            o.status.code()
        );
        // And the learned policy runs it as natively, without the case's own flags.
        let (wcode, wout, werr) = sandboxed(c.script, &["-p", policy.to_str().unwrap()]);
        assert_eq!(
            (wcode, wout.as_str()),
            (code, native_out.as_str()),
            "{}: under the learned policy:\n{werr}\npolicy:\n{}",
            c.name,
            std::fs::read_to_string(&policy).unwrap_or_default()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A shipped profile by name: `--profile nginx` lets Debian's nginx check its own
/// configuration (its files, logs and pid file) as it does natively; an unknown name is refused
/// with the list of profiles.
#[test]
fn the_nginx_profile_checks_its_configuration() {
    let test = "the_nginx_profile_checks_its_configuration";
    let d = common::fresh_dir("compat-profile");
    let o = common::run_warden(As::Me, &d, &["run", "--profile", "no-such", "--", "true"]);
    assert_eq!(o.status.code(), Some(125));
    assert!(
        common::stderr(&o).contains("warden ships: nginx"),
        "{}",
        common::stderr(&o)
    );
    if !installed(test, &["/usr/sbin/nginx"]) || !common::require_root(test) {
        return;
    }
    let native = Command::new("/usr/sbin/nginx").arg("-t").output().unwrap();
    assert!(
        native.status.success(),
        "natively: {}",
        common::stderr(&native)
    );
    let o = common::run_warden(
        As::Me,
        &d,
        &["run", "--profile", "nginx", "--", "/usr/sbin/nginx", "-t"],
    );
    common::assert_ok(&o);
    assert_eq!(common::stderr(&o), common::stderr(&native));
    let _ = std::fs::remove_dir_all(&d);
}

/// Finding 8: `--profile nginx` gives nginx a pid file of the run's own, never the host's
/// /run/nginx.pid, which root outside reads and signals the pid in, or writes through. As root
/// (the profile maps ids), a program under the profile writes the pid file, then replaces it
/// with a symlink to /etc/passwd; from outside, the host's pid file (a sentinel put there for
/// the test, the host's own put back after) is the same file with the same contents. In a
/// view the program's writes succeed in its private /run, which does not show the host's
/// file; with `--view off` the private /run cannot be made, and /run is closed instead.
#[test]
fn the_nginx_profile_keeps_the_hosts_pid_file() {
    use std::os::unix::fs::MetadataExt;
    let test = "the_nginx_profile_keeps_the_hosts_pid_file";
    if !common::require_root(test) {
        return;
    }
    /// Puts the host's /run/nginx.pid back as it was (or removes the sentinel), even when an
    /// assertion fails.
    struct Restore(Option<Vec<u8>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let pid = Path::new("/run/nginx.pid");
            let _ = std::fs::remove_file(pid);
            if let Some(old) = &self.0 {
                let _ = std::fs::write(pid, old);
            }
        }
    }
    let pid = Path::new("/run/nginx.pid");
    let _restore = Restore(std::fs::read(pid).ok());
    let _ = std::fs::remove_file(pid);
    std::fs::write(pid, "sentinel 4242\n").unwrap();
    let before = std::fs::symlink_metadata(pid).unwrap();
    let d = common::fresh_dir("compat-nginx-pid");
    let script = "cat /run/nginx.pid 2>/dev/null && echo saw-the-hosts; \
                  echo 1 > /run/nginx.pid && cat /run/nginx.pid; \
                  rm -f /run/nginx.pid; ln -s /etc/passwd /run/nginx.pid && echo linked; true";
    for view in ["on", "off"] {
        let o = common::run_warden(
            As::Me,
            &d,
            &[
                "run",
                "--view",
                view,
                "--profile",
                "nginx",
                "--",
                "/bin/sh",
                "-c",
                script,
            ],
        );
        common::assert_ok(&o);
        let after = std::fs::symlink_metadata(pid).unwrap();
        assert!(after.file_type().is_file(), "--view {view}: replaced");
        assert_eq!(
            (after.dev(), after.ino()),
            (before.dev(), before.ino()),
            "--view {view}"
        );
        assert_eq!(
            std::fs::read_to_string(pid).unwrap(),
            "sentinel 4242\n",
            "--view {view}"
        );
        let out = common::stdout(&o);
        assert!(!out.contains("saw-the-hosts"), "--view {view}: {out}");
        if view == "on" {
            // The sandbox's own /run takes both writes.
            assert_eq!(out, "1\nlinked\n", "{}", common::stderr(&o));
        } else {
            // No private /run without a view: closed, not the host's.
            assert_eq!(out, "", "{}", common::stderr(&o));
            assert!(
                common::stderr(&o).contains("Permission denied"),
                "{}",
                common::stderr(&o)
            );
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// nginx and curl through `learn --verify` (as root, with `map-ids` from the base policy, which
/// the learning run keeps): the learned policy serves the file again, and names the port both
/// ways and no UDP peer.
#[test]
fn learn_verify_runs_nginx_and_curl_again() {
    let test = "learn_verify_runs_nginx_and_curl_again";
    if !installed(test, &["/usr/sbin/nginx", "/usr/bin/curl"]) || !common::require_root(test) {
        return;
    }
    let port = free_port();
    let d = nginx_site("compat-learn-nginx", port, Some("nobody nogroup"), "");
    common::write_file(&d.join("base.policy"), "map-ids 1 100001 65535\n", 0o644);
    let script = format!(
        "/usr/sbin/nginx -c {}/nginx.conf & for i in $(seq 1 100); do sleep 0.2; \
         /usr/bin/curl -s http://127.0.0.1:{port}/ && break; done; kill $!; wait",
        d.display()
    );
    let o = common::run_warden(
        As::Me,
        &d,
        &[
            "learn",
            "--base",
            "base.policy",
            "-o",
            "learned.policy",
            "--verify",
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    let err = common::stderr(&o);
    common::assert_ok(&o);
    assert_eq!(
        common::stdout(&o),
        "hello from nginx\nhello from nginx\n",
        "{err}"
    );
    assert!(
        err.contains("runs under the learned policy with no denial"),
        "{err}"
    );
    let learned = std::fs::read_to_string(d.join("learned.policy")).unwrap();
    assert!(
        learned.contains(&format!("net-allow incoming tcp 127.0.0.1 {port}")),
        "{learned}"
    );
    assert!(!learned.contains(" udp "), "{learned}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Issue 39, point 3: the default run starts the program in its own scratch directory, not
/// where the user stands, so the newcomer's `warden run -- bash ./t.sh` finds no `./t.sh`. It
/// fails as bash does there (127), and warden's last line names the directory and the options
/// that bring it in; `--here`, the first of them, runs it as natively; a program that ends well
/// there gets no line; `--chdir` to a readable place (the user's own choice) gets no hint.
#[test]
fn a_program_started_away_from_the_users_directory_is_told_how_to_bring_it_in() {
    common::each_user("a_program_started_away_from_the_users_directory", |who| {
        let d = common::fresh_dir(&format!("compat-here-{}", common::who_tag(who)));
        common::chmod(&d, 0o777);
        let script = d.join("t.sh");
        std::fs::write(&script, "echo hi from t.sh\n").unwrap();
        common::chmod(&script, 0o644);
        let dir = d.to_str().unwrap();
        let native = Command::new("/bin/bash")
            .arg("./t.sh")
            .current_dir(&d)
            .output()
            .unwrap();
        assert_eq!(common::stdout(&native), "hi from t.sh\n");

        let o = common::run_warden(who, &d, &["run", "--", "/bin/bash", "./t.sh"]);
        let err = common::stderr(&o);
        assert_eq!(o.status.code(), Some(127), "{err}");
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("warden: the program exited with status 127;")
                && last.contains(&format!(
                    "it started in its own scratch directory, not in {dir}: --here starts it \
                     there"
                ))
                && last.contains(&format!("--read {dir} --chdir {dir} read-only")),
            "{err}"
        );

        let o = common::run_warden(who, &d, &["run", "--here", "--", "/bin/bash", "./t.sh"]);
        assert_eq!(
            common::stdout(&o),
            common::stdout(&native),
            "{}",
            common::stderr(&o)
        );
        assert!(o.status.success());
        assert!(
            !common::stderr(&o).contains("warden: "),
            "{}",
            common::stderr(&o)
        );

        let o = common::run_warden(
            who,
            &d,
            &[
                "run",
                "--read",
                dir,
                "--chdir",
                dir,
                "--",
                "/bin/bash",
                "./t.sh",
            ],
        );
        assert_eq!(
            common::stdout(&o),
            common::stdout(&native),
            "{}",
            common::stderr(&o)
        );
        let o = common::run_warden(
            who,
            &d,
            &[
                "run", "--read", dir, "--chdir", dir, "--", "/bin/sh", "-c", "exit 3",
            ],
        );
        assert_eq!(o.status.code(), Some(3));
        assert!(
            !common::stderr(&o).contains("--here"),
            "{}",
            common::stderr(&o)
        );
        let _ = std::fs::remove_dir_all(&d);
    });
}

/// Issue 39, point 1: a refusal does not look like an ordinary error. The newcomer's `warden
/// run -- cat ~/.bashrc` (here a file of the host's the default policy does not grant, which
/// the user may read natively) fails as `cat` fails, and warden's last line on stderr says the
/// sandbox is why: the refusals the agent counted, first of them this open with the rule to
/// add, or, where the kernel decided the open alone (the report's `denied-uncounted`), that
/// such refusals are not counted and `-v` names them. With `-v` the line names this open with
/// its rule. A clean run ends with no line.
#[test]
fn a_refusal_is_said_at_the_end_of_the_run() {
    common::each_user("a_refusal_is_said_at_the_end_of_the_run", |who| {
        let d = common::fresh_dir(&format!("compat-refusal-{}", common::who_tag(who)));
        common::chmod(&d, 0o777);
        // Outside /tmp, which the default run has a private one of: a file there would just
        // not be in the sandbox (ENOENT), allowed by the policy and refused by nothing.
        let outside = std::path::PathBuf::from(format!(
            "/var/tmp/warden-compat-refusal-{}-{}",
            std::process::id(),
            common::who_tag(who)
        ));
        std::fs::create_dir_all(&outside).unwrap();
        common::chmod(&outside, 0o755);
        let file = outside.join("bashrc");
        std::fs::write(&file, "alias ll='ls -l'\n").unwrap();
        common::chmod(&file, 0o644);
        let f = file.to_str().unwrap();
        let report = d.join("report");
        let r = report.to_str().unwrap();
        let field = |key: &str| common::report_field(&report, key);
        let last_line = |o: &std::process::Output| {
            let err = common::stderr(o);
            let last = err.lines().last().unwrap_or_default().to_owned();
            let ours = err.lines().filter(|l| l.starts_with("warden: ")).count();
            (err, last, ours)
        };
        let named = format!(
            "openat(\"{f}\", O_RDONLY) (no path-allow read rule matches; add: path-allow read {f})"
        );

        let o = common::run_warden(who, &d, &["run", "--report", r, "--", "cat", f]);
        let (err, last, ours) = last_line(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert_eq!(ours, 1, "one line of warden's:\n{err}");
        let denied: u64 = field("denied").unwrap().parse().unwrap();
        if field("denied-uncounted").as_deref() == Some("1") {
            assert_eq!(denied, 0, "the kernel decided the open:\n{err}");
            assert!(
                last.starts_with(
                    "warden: the program exited with status 1; refusals the kernel decided \
                     alone are not counted"
                ) && last.contains("rerun with -v"),
                "{err}"
            );
        } else {
            assert!(denied >= 1, "the agent decided the open:\n{err}");
            assert!(
                last.starts_with("warden: the sandbox refused ") && last.contains(&named),
                "{err}"
            );
        }

        let o = common::run_warden(who, &d, &["run", "-v", "--report", r, "--", "cat", f]);
        let (err, last, _) = last_line(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        let denied: u64 = field("denied").unwrap().parse().unwrap();
        assert!(denied >= 1, "-v has the agent decide every open:\n{err}");
        let calls = if denied == 1 { "call" } else { "calls" };
        assert!(
            last.starts_with(&format!(
                "warden: the sandbox refused {denied} {calls}, first "
            )) && last.contains(&named)
                // Then, as the program failed, where it started (run from `d`: point 3).
                && last.contains("(-v named each distinct one above); it started in its own scratch directory"),
            "{err}"
        );

        // A clean run: no closing line (and, on a host warden needs no fallback on, nothing).
        let o = common::run_warden(who, &d, &["run", "--report", r, "--", "true"]);
        common::assert_ok(&o);
        let err = common::stderr(&o);
        assert!(
            !err.contains("refused") && !err.contains("stopped:"),
            "a clean run said:\n{err}"
        );
        let degraded = ["mode", "view", "fallbacks"]
            .iter()
            .any(|k| field(k).is_some());
        if !degraded {
            assert_eq!(err, "", "a clean run said something");
        }
        let _ = std::fs::remove_dir_all(&outside);
        let _ = std::fs::remove_dir_all(&d);
    });
}
