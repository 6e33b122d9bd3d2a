//! The run's closing lines on stderr: a run that the sandbox refused anything, or that a limit
//! stopped, ends with one line that says so, so that neither looks like an ordinary error of
//! the program's (issue 39). A clean run ends with none.
//!
//! [`lines`] is a pure function of what was measured; [`super::Session::close`] prints its
//! answer for `warden run`, after the reports are written.

use crate::agent::log::{plural, Refusal};
use crate::launch::Outcome;
use crate::limits::KillReason;
use crate::report::{classify, program_ran, Accounting, Measured, Status};
use std::time::Duration;
use warden_policy::LimitValue;
use warden_policy::Limits;

/// How the run was asked to report, as far as the closing lines care.
#[derive(Clone, Copy, Debug, Default)]
pub struct Asked {
    /// `-v`: every refusal was named on stderr as it happened.
    pub verbose: bool,
    /// `--log FILE`: every decision was written there.
    pub logged: bool,
}

/// The closing lines of a run (at most two: what the sandbox refused, then what stopped the
/// program), each starting `warden: `. `program` is the program as given on the command line.
/// None for a clean run, nor for a run warden itself failed (its own message says why).
pub fn lines(m: &Measured, limits: &Limits, program: &str, asked: Asked) -> Vec<String> {
    if m.failure.is_some() || !program_ran(m) {
        return Vec::new();
    }
    let name = warden_policy::escape::escape(
        std::path::Path::new(program)
            .file_name()
            .map_or(program.as_bytes(), |n| n.as_encoded_bytes()),
    )
    .into_owned();
    let limit = limit_line(m, limits, &name);
    let refused = refused_line(m, asked, limit.is_some());
    refused.into_iter().chain(limit).collect()
}

/// `--time 0.5`, `--mem 50M`: the option and the limit's value as the user writes it.
fn option(flag: &str, value: LimitValue) -> String {
    format!("{flag} {value}")
}

fn time(d: Option<Duration>) -> String {
    LimitValue::Time(d.unwrap_or_default()).to_string()
}

fn amount(n: Option<u64>) -> String {
    LimitValue::Amount(n.unwrap_or_default()).to_string()
}

/// What stopped the program, if a limit did; the process limit's refusals are added to it.
fn limit_line(m: &Measured, limits: &Limits, name: &str) -> Option<String> {
    let (status, _) = classify(m, limits);
    let killed_by_us = m.killed && m.outcome == Some(Outcome::Signaled(libc::SIGKILL));
    let main = match status {
        Status::OutputLimit => {
            let opt = format!("--output-limit {}", amount(limits.output));
            let flag = "--output-limit";
            Some(if killed_by_us {
                format!(
                    "stopped: the program's output reached the sandbox's output limit ({opt}, \
                     stdout and stderr together); warden killed {name} and everything it \
                     started; raise {flag} if the output is expected"
                )
            } else {
                format!(
                    "the program's output went over the sandbox's output limit ({opt}, stdout \
                     and stderr together): what came after it was not passed on; raise it if \
                     the output is expected"
                )
            })
        }
        Status::Timeout => {
            let wall = m.exceeded == Some(KillReason::WallTime)
                || (m.exceeded != Some(KillReason::CpuTime)
                    && limits.time.is_none_or(|l| m.cpu <= l));
            let (what, flag, limit) = if wall {
                ("wall-clock time", "--wall-time", limits.wall_time)
            } else {
                ("CPU time", "--time", limits.time)
            };
            let opt = format!("{flag} {}", time(limit));
            Some(if killed_by_us {
                format!(
                    "stopped: the sandbox's {what} limit ({opt} seconds) was reached; warden \
                     killed {name} and everything it started; raise {flag} if it needs longer"
                )
            } else {
                format!(
                    "the sandbox used more than its {what} limit ({opt} seconds) before {name} \
                     ended, and the run counts as timed out; raise {flag} if it needs longer"
                )
            })
        }
        Status::MemoryLimit => {
            let opt = option("--mem", LimitValue::Amount(limits.mem.unwrap_or_default()));
            let kills = m.oom_kills.unwrap_or(0);
            Some(if m.outcome == Some(Outcome::Signaled(libc::SIGKILL)) {
                format!(
                    "stopped: the sandbox's memory limit ({opt}) was reached; the kernel's OOM \
                     killer killed {name}{}; raise --mem if it needs more",
                    if kills > 1 {
                        format!(" ({kills} processes of the sandbox in all)")
                    } else {
                        String::new()
                    }
                )
            } else {
                format!(
                    "the sandbox's memory limit ({opt}) was reached: the kernel's OOM killer \
                     killed {} of the sandbox, and {name} went on without; raise --mem if it \
                     needs more",
                    plural(kills, "process", "processes")
                )
            })
        }
        _ => None,
    };
    let hits = m.process_limit_hits.unwrap_or(0);
    let processes = (limits.processes.is_some() && hits > 0).then(|| {
        let opt = format!("--processes {}", amount(limits.processes));
        format!(
            "the sandbox's process limit ({opt}, processes and threads together) refused {} \
             (fork, clone or pthread_create failed with EAGAIN); raise --processes if it needs \
             more",
            plural(hits, "new process or thread", "new processes or threads")
        )
    });
    // Without a cgroup --mem and --processes are per-process rlimits: what they refused (an
    // allocation, a fork) is the program's error, and the kernel counts it nowhere.
    let uncounted = (main.is_none()
        && processes.is_none()
        && m.accounting == Accounting::Rusage
        && (limits.mem.is_some() || limits.processes.is_some())
        && !matches!(m.outcome, Some(Outcome::Exited(0)))
        && m.interrupted.is_none())
    .then(|| {
        let opts: Vec<String> = [
            limits.mem.map(|n| option("--mem", LimitValue::Amount(n))),
            limits.processes.map(|n| format!("--processes {n}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        format!(
            "{name} {}; without a cgroup here {} {} per process (rlimits), so a refused \
             allocation or fork is the program's own error and warden cannot count it: if it \
             failed for want of memory or processes, raise the limit (or run warden in a \
             cgroup of its own, `systemd-run --user --scope -p Delegate=yes warden run ...`, \
             where warden says which limit stopped it)",
            ended(m.outcome),
            opts.join(" and "),
            if opts.len() == 1 { "holds" } else { "hold" }
        )
    });
    let line = match (main, processes) {
        (Some(main), Some(p)) => Some(format!("{main}; {p}")),
        (Some(main), None) => Some(main),
        (None, Some(p)) => Some(p),
        (None, None) => uncounted,
    };
    line.map(|l| format!("warden: {l}"))
}

/// "exited with status 1", "was killed by signal 9".
fn ended(outcome: Option<Outcome>) -> String {
    match outcome {
        Some(Outcome::Exited(code)) => format!("exited with status {code}"),
        Some(Outcome::Signaled(sig)) => format!("was killed by signal {sig}"),
        _ => "ended".into(),
    }
}

/// What the sandbox refused: the agent's count and its first few refusals, or, for a program
/// that failed with none counted where the kernel decided calls alone, that those are not
/// counted. `limited`: a limit line follows, which explains the failure already.
fn refused_line(m: &Measured, asked: Asked, limited: bool) -> Option<String> {
    let denied = m.agent.denied;
    let uncounted = if m.kernel_decides {
        "; refusals the kernel decided alone (a path the sandbox's view does not show is \
         ENOENT, one Landlock refuses EACCES) are not counted, -v has warden decide those too"
    } else {
        ""
    };
    // A run the user stopped (Ctrl-C, `timeout`) failed because they stopped it: nothing to
    // explain, as natively, but what the sandbox did count.
    let failed = !matches!(m.outcome, Some(Outcome::Exited(0))) && m.interrupted.is_none();
    let clean = !failed && !limited;
    let mut hints = match &m.hidden_cwd {
        Some((dir, start)) if failed && !limited => cwd_hint(dir, start),
        _ => String::new(),
    };
    // A shell's "found, but could not run it": in a sandbox, most often what the program built.
    if m.outcome == Some(Outcome::Exited(126)) && !limited {
        hints.push_str(
            "; 126 is a shell's \"found but could not run\": only files an exec rule names \
             may run, so to run what it builds in its scratch directory add --exec '$SCRATCH' \
             (or build in your project with --here)",
        );
    }
    if denied > 0 && !(clean && m.refused_only_looks) {
        let first = first_refusals(&m.refusals);
        let rest = if asked.verbose {
            " (-v named each distinct one above)"
        } else if asked.logged {
            " (the --log file has each)"
        } else {
            " (rerun with -v to name each as it happens, or --log FILE to record them)"
        };
        let calls = plural(denied, "call", "calls");
        return Some(format!(
            "warden: the sandbox refused {calls}{first}{rest}{uncounted}{hints}"
        ));
    }
    if !failed || limited {
        return None;
    }
    if !m.kernel_decides {
        return (!hints.is_empty())
            .then(|| format!("warden: the program {}{hints}", ended(m.outcome)));
    }
    Some(format!(
        "warden: the program {}; refusals the kernel decided alone are not counted (a path \
         outside the sandbox's view is ENOENT, one Landlock refuses EACCES): rerun with -v to name \
         each with the rule to add{hints}",
        ended(m.outcome)
    ))
}

/// For a program that failed after starting in `start` (in words), not in warden's directory
/// `dir` (`bash ./t.sh`, `python3 t.py` find nothing there): the options that bring it in, as
/// they are typed.
fn cwd_hint(dir: &std::path::Path, start: &str) -> String {
    let shown = warden_policy::escape::escape(dir.as_os_str().as_encoded_bytes());
    format!(
        "; it started in {start}, not in {shown}: --here starts it there (read, write, run), \
         --read {shown} --chdir {shown} read-only"
    )
}

/// `, first openat("/etc/x", O_RDONLY) (why), then ...`.
fn first_refusals(kept: &[Refusal]) -> String {
    let mut out = String::new();
    for (i, r) in kept.iter().enumerate() {
        out.push_str(if i == 0 { ", first " } else { ", then " });
        out.push_str(&format!("{} ({})", r.call, r.reason));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::log::StatsSnapshot;

    fn ran(outcome: Outcome) -> Measured {
        Measured {
            outcome: Some(outcome),
            accounting: Accounting::CgroupV1,
            ..Measured::default()
        }
    }

    fn one(m: &Measured, limits: &Limits) -> String {
        let l = lines(m, limits, "/usr/bin/python3", Asked::default());
        assert_eq!(l.len(), 1, "{l:?}");
        l[0].clone()
    }

    #[test]
    fn a_run_the_user_stopped_is_not_explained_but_what_was_refused_is_said() {
        let none = Limits::default();
        let stopped = |outcome| Measured {
            interrupted: Some(libc::SIGINT),
            kernel_decides: true,
            hidden_cwd: Some((
                std::path::PathBuf::from("/home/u/p"),
                "its scratch directory",
            )),
            ..ran(outcome)
        };
        // Ctrl-C: the program died of SIGINT, or exited 130 on its own after it.
        for outcome in [Outcome::Signaled(libc::SIGINT), Outcome::Exited(130)] {
            assert!(
                lines(&stopped(outcome), &none, "sleep", Asked::default()).is_empty(),
                "{outcome:?}"
            );
        }
        // Without a cgroup, --mem's rlimit is not blamed for a stopped run either.
        let mem = Limits {
            mem: Some(1 << 30),
            ..Limits::default()
        };
        let m = Measured {
            accounting: Accounting::Rusage,
            ..stopped(Outcome::Signaled(libc::SIGTERM))
        };
        assert!(lines(&m, &mem, "sleep", Asked::default()).is_empty());
        // What the sandbox counted it still says: it is what the user may need to know.
        let mut m = stopped(Outcome::Signaled(libc::SIGINT));
        m.agent.denied = 2;
        let l = lines(&m, &none, "sleep", Asked::default());
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(
            l[0].starts_with("warden: the sandbox refused 2 calls"),
            "{l:?}"
        );
        assert!(!l[0].contains("--here"), "{l:?}");
        // The same run, not stopped, is explained.
        let m = Measured {
            interrupted: None,
            ..stopped(Outcome::Exited(130))
        };
        assert_eq!(lines(&m, &none, "sleep", Asked::default()).len(), 1);
    }

    #[test]
    fn a_clean_run_and_a_failure_of_wardens_end_with_no_line() {
        let none = Limits::default();
        assert!(lines(&ran(Outcome::Exited(0)), &none, "true", Asked::default()).is_empty());
        // An ordinary error where the agent decided everything and refused nothing.
        assert!(lines(&ran(Outcome::Exited(1)), &none, "false", Asked::default()).is_empty());
        let failed = Measured {
            failure: Some("cannot run x".into()),
            agent: StatsSnapshot {
                denied: 2,
                ..Default::default()
            },
            ..ran(Outcome::Exited(1))
        };
        assert!(lines(&failed, &none, "x", Asked::default()).is_empty());
        assert!(lines(&Measured::default(), &none, "x", Asked::default()).is_empty());
    }

    #[test]
    fn an_oom_kill_names_the_limit_the_program_and_what_to_change() {
        let limits = Limits {
            mem: Some(50 << 20),
            ..Limits::default()
        };
        let m = Measured {
            oom_kills: Some(1),
            ..ran(Outcome::Signaled(libc::SIGKILL))
        };
        let l = one(&m, &limits);
        assert!(
            l.starts_with("warden: stopped: the sandbox's memory limit (--mem 50M)"),
            "{l}"
        );
        assert!(
            l.contains("OOM killer killed python3; raise --mem if"),
            "{l}"
        );
        // A child killed, the program going on to fail by itself.
        let m = Measured {
            oom_kills: Some(2),
            ..ran(Outcome::Exited(1))
        };
        let l = one(&m, &limits);
        assert!(l.contains("killed 2 processes of the sandbox"), "{l}");
    }

    #[test]
    fn time_and_output_kills_name_their_option() {
        let limits = Limits {
            time: Some(Duration::from_millis(500)),
            wall_time: Some(Duration::from_secs(2)),
            output: Some(1 << 10),
            ..Limits::default()
        };
        let killed = |reason| Measured {
            exceeded: Some(reason),
            killed: true,
            ..ran(Outcome::Signaled(libc::SIGKILL))
        };
        let l = one(&killed(KillReason::CpuTime), &limits);
        assert!(
            l.contains("CPU time limit (--time 0.5 seconds) was reached; warden killed python3"),
            "{l}"
        );
        let l = one(&killed(KillReason::WallTime), &limits);
        assert!(
            l.contains("wall-clock time limit (--wall-time 2 seconds)"),
            "{l}"
        );
        let l = one(&killed(KillReason::Output), &limits);
        assert!(l.contains("output limit (--output-limit 1K"), "{l}");
        // Over the output limit, but the program had exited by itself.
        let m = Measured {
            exceeded: Some(KillReason::Output),
            ..ran(Outcome::Exited(0))
        };
        let l = one(&m, &limits);
        assert!(l.contains("was not passed on"), "{l}");
    }

    #[test]
    fn a_process_limit_hit_is_said_even_when_the_program_coped() {
        let limits = Limits {
            processes: Some(5),
            ..Limits::default()
        };
        let m = Measured {
            process_limit_hits: Some(3),
            ..ran(Outcome::Exited(0))
        };
        let l = one(&m, &limits);
        assert!(l.contains("process limit (--processes 5, processes and threads together) refused 3 new processes or threads"), "{l}");
        // Not hit: nothing.
        let m = Measured {
            process_limit_hits: Some(0),
            ..ran(Outcome::Exited(2))
        };
        assert!(lines(&m, &limits, "sh", Asked::default()).is_empty());
    }

    #[test]
    fn without_a_cgroup_a_failing_program_under_rlimits_is_told_what_cannot_be_counted() {
        let limits = Limits {
            mem: Some(50 << 20),
            processes: Some(5),
            ..Limits::default()
        };
        let m = Measured {
            accounting: Accounting::Rusage,
            ..ran(Outcome::Exited(1))
        };
        let l = one(&m, &limits);
        assert!(l.contains("python3 exited with status 1; without a cgroup here --mem 50M and --processes 5 hold per process"), "{l}");
        let ok = Measured {
            accounting: Accounting::Rusage,
            ..ran(Outcome::Exited(0))
        };
        assert!(lines(&ok, &limits, "x", Asked::default()).is_empty());
    }

    #[test]
    fn refusals_are_counted_and_the_first_named_with_their_rule() {
        let m = Measured {
            agent: StatsSnapshot {
                denied: 4,
                ..Default::default()
            },
            refusals: vec![
                Refusal {
                    call: "openat(\"/etc/shadow\", O_RDONLY)".into(),
                    reason: "path-deny /etc/shadow at <default>:41:11 forbids it".into(),
                },
                Refusal {
                    call: "openat(\"/etc/x\", O_WRONLY)".into(),
                    reason: "no path-allow write rule matches; add: path-allow write /etc/x".into(),
                },
            ],
            ..ran(Outcome::Exited(0))
        };
        let l = one(&m, &Limits::default());
        assert_eq!(
            l,
            "warden: the sandbox refused 4 calls, first openat(\"/etc/shadow\", O_RDONLY) \
             (path-deny /etc/shadow at <default>:41:11 forbids it), then openat(\"/etc/x\", \
             O_WRONLY) (no path-allow write rule matches; add: path-allow write /etc/x) (rerun \
             with -v to name each as it happens, or --log FILE to record them)"
        );
        let v = lines(
            &m,
            &Limits::default(),
            "x",
            Asked {
                verbose: true,
                logged: false,
            },
        );
        assert!(
            v[0].ends_with("(-v named each distinct one above)"),
            "{v:?}"
        );
        let k = Measured {
            kernel_decides: true,
            ..m
        };
        let l = one(&k, &Limits::default());
        assert!(l.contains("refusals the kernel decided alone"), "{l}");
    }

    #[test]
    fn a_search_refused_in_a_run_that_succeeded_makes_no_line() {
        let looked = Measured {
            agent: StatsSnapshot {
                denied: 4,
                ..Default::default()
            },
            refusals: vec![Refusal {
                call: "newfstatat(\"/root/lib/tls\")".into(),
                reason: "no path-allow read rule matches; add: path-allow read /root/lib/tls"
                    .into(),
            }],
            refused_only_looks: true,
            ..ran(Outcome::Exited(0))
        };
        assert!(lines(&looked, &Limits::default(), "true", Asked::default()).is_empty());
        // The same refusals in a run that failed may be why: said.
        let failed = Measured {
            outcome: Some(Outcome::Exited(1)),
            ..looked.clone()
        };
        let l = one(&failed, &Limits::default());
        assert!(
            l.starts_with("warden: the sandbox refused 4 calls, first newfstatat"),
            "{l}"
        );
        // And a refusal that acted is said even when the program succeeded.
        let acted = Measured {
            refused_only_looks: false,
            ..looked
        };
        assert!(one(&acted, &Limits::default()).contains("refused 4 calls"));
    }

    #[test]
    fn a_program_that_failed_away_from_a_hidden_directory_is_told_how_to_bring_it_in() {
        let dir = (std::path::PathBuf::from("/home/ann/proj\n"), "the view's /");
        // Failed, the agent deciding: only the directory's hint, escaped.
        let m = Measured {
            hidden_cwd: Some(dir.clone()),
            ..ran(Outcome::Exited(127))
        };
        let l = one(&m, &Limits::default());
        assert!(
            l.starts_with("warden: the program exited with status 127; it started in the view's /, not in /home/ann/proj\\n: --here starts it there"),
            "{l}"
        );
        assert!(
            l.contains("--read /home/ann/proj\\n --chdir /home/ann/proj\\n read-only"),
            "{l}"
        );
        // Where the kernel decides, after the uncounted refusals' words, on the same line.
        let k = Measured {
            kernel_decides: true,
            ..m
        };
        let v = lines(&k, &Limits::default(), "bash", Asked::default());
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].contains("are not counted"), "{v:?}");
        assert!(
            v[0].ends_with("--read /home/ann/proj\\n --chdir /home/ann/proj\\n read-only"),
            "{v:?}"
        );
        // A clean run says nothing of it.
        let ok = Measured {
            hidden_cwd: Some(dir),
            kernel_decides: true,
            ..ran(Outcome::Exited(0))
        };
        assert!(lines(&ok, &Limits::default(), "bash", Asked::default()).is_empty());
    }

    #[test]
    fn a_shell_that_could_not_run_a_file_is_told_the_flag_that_lets_it() {
        for kernel_decides in [false, true] {
            let m = Measured {
                kernel_decides,
                ..ran(Outcome::Exited(126))
            };
            let l = one(&m, &Limits::default());
            assert!(
                l.starts_with("warden: the program exited with status 126"),
                "{l}"
            );
            assert!(l.contains("add --exec '$SCRATCH'"), "{l}");
        }
        let other = ran(Outcome::Exited(2));
        assert!(lines(&other, &Limits::default(), "sh", Asked::default()).is_empty());
    }

    #[test]
    fn where_the_kernel_decides_a_failing_program_is_told_refusals_are_not_counted() {
        let m = Measured {
            kernel_decides: true,
            ..ran(Outcome::Exited(1))
        };
        let l = one(&m, &Limits::default());
        assert!(
            l.starts_with(
                "warden: the program exited with status 1; refusals the kernel decided alone are not counted"
            ),
            "{l}"
        );
        assert!(l.contains("rerun with -v"), "{l}");
        // A clean exit says nothing, and a limit line explains a failure by itself.
        let ok = Measured {
            kernel_decides: true,
            ..ran(Outcome::Exited(0))
        };
        assert!(lines(&ok, &Limits::default(), "x", Asked::default()).is_empty());
        let limits = Limits {
            mem: Some(50 << 20),
            ..Limits::default()
        };
        let oom = Measured {
            kernel_decides: true,
            oom_kills: Some(1),
            ..ran(Outcome::Signaled(libc::SIGKILL))
        };
        let l = lines(&oom, &limits, "x", Asked::default());
        assert_eq!(l.len(), 1, "{l:?}");
        assert!(l[0].contains("memory limit"), "{l:?}");
    }
}
