//! Reporting the agent's decisions: one line on stderr per denial with `-v`, and JSON lines
//! with every delegated decision (allowed and denied) with `--log FILE`.
//!
//! The log grows at the program's pace (a program that tries 100,000 opens it may not make
//! writes 100,000 lines), so a run writes at most `--log-max` bytes to it
//! ([`DEFAULT_LOG_BOUND`] unless told): past that, decisions are counted and not written, and
//! at the end of the run one last line says how many (`"decision":"dropped"`), as does the run
//! report (`log-dropped`).

use crate::syscalls::Family;
use serde::Serialize;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use warden_policy::escape::escape;
use warden_policy::Access;

/// One decision, as logged.
pub struct Decision<'a> {
    /// Calling thread, in warden's PID namespace.
    pub tid: u32,
    /// Its process (thread group), if it could be read.
    pub pid: Option<u32>,
    /// Syscall name.
    pub syscall: &'static str,
    /// The call's six register arguments, as the agent received them.
    pub args: [u64; 6],
    /// What was checked: the logical path, or an endpoint such as `tcp 10.0.0.1:443`.
    pub target: &'a str,
    /// The access checked, if the decision was a path check.
    pub access: Option<Access>,
    /// Allowed or denied.
    pub allowed: bool,
    /// The deciding rule (`file:line:col`), if one matched.
    pub rule: Option<String>,
    /// For denials: why, and what to add.
    pub reason: String,
    /// The errno returned for a denial.
    pub errno: Option<i32>,
    /// From receiving the call to the decision.
    pub latency: std::time::Duration,
}

/// Version of the JSON line format ([`JsonLine`]); bumped when a key changes meaning or goes.
pub const SCHEMA_VERSION: u32 = 1;

/// One line of `--log FILE`. The keys, their types and meanings are documented in docs/guide.md
/// ("The decision log"); new keys may be added, existing ones keep their meaning within a
/// schema version.
#[derive(Serialize)]
struct JsonLine<'a> {
    v: u32,
    time: f64,
    sandbox: &'a str,
    pid: Option<u32>,
    tid: u32,
    comm: String,
    syscall: &'a str,
    args: [String; 6],
    flags: Option<String>,
    target: &'a str,
    access: Option<&'static str>,
    decision: &'static str,
    rule: Option<&'a str>,
    reason: &'a str,
    errno: Option<i32>,
    errno_name: Option<&'static str>,
    latency_us: f64,
}

/// One decision of a run, as `warden learn` needs it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Observation {
    /// The call.
    pub syscall: String,
    /// The logical path, or an endpoint (`tcp 1.2.3.4:80`, `unix /run/x.sock`,
    /// `tcp 1.2.3.4:5000 to local port 80`).
    pub target: String,
    /// The access checked, for path decisions.
    pub access: Option<Access>,
    /// Whether it was allowed.
    pub allowed: bool,
}

/// The decisions of a run, typed and bounded: each distinct [`Observation`] once, with how
/// many times it was made, up to [`Observations::MOST`] distinct ones (a run that makes more,
/// a program walking a huge tree, has the rest counted in [`Observations::dropped`] instead of
/// growing the agent without bound).
#[derive(Debug, Default)]
pub struct Observations {
    seen: std::collections::HashMap<Observation, u64>,
    dropped: u64,
}

impl Observations {
    /// Distinct observations kept (about 100 bytes each).
    pub const MOST: usize = 200_000;

    /// Records one decision.
    pub fn record(&mut self, syscall: &str, target: &str, access: Option<Access>, allowed: bool) {
        let o = Observation {
            syscall: syscall.to_owned(),
            target: target.to_owned(),
            access,
            allowed,
        };
        if let Some(n) = self.seen.get_mut(&o) {
            *n += 1;
        } else if self.seen.len() < Self::MOST {
            self.seen.insert(o, 1);
        } else {
            self.dropped += 1;
        }
    }

    /// Decisions not kept because [`Observations::MOST`] distinct ones were.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Each distinct observation, in no particular order (no copy; [`Observations::counted`]
    /// for a sorted list with the counts).
    pub fn iter(&self) -> impl Iterator<Item = &Observation> {
        self.seen.keys()
    }

    /// Each distinct observation with how many times it was made, in a stable order.
    pub fn counted(&self) -> Vec<(Observation, u64)> {
        let mut all: Vec<(Observation, u64)> =
            self.seen.iter().map(|(o, n)| (o.clone(), *n)).collect();
        all.sort();
        all
    }
}

/// What one run writes to its `--log` at most, unless `--log-max` says otherwise: about ten
/// thousand decisions.
pub const DEFAULT_LOG_BOUND: u64 = 4 << 20;

/// Room kept within the bound for the last line, which says how many decisions were dropped.
const LAST_LINE_ROOM: u64 = 512;

/// The `--log` file, and what this run wrote to it and dropped.
struct JsonLog {
    file: std::fs::File,
    /// Bytes this run wrote (a file appended to may hold more of other runs').
    written: u64,
    /// The most this run writes, its last line included.
    bound: u64,
    /// Decisions not written because the bound was reached.
    dropped: u64,
    /// Whether the last line was written.
    finished: bool,
}

/// The last line of a log that reached its bound (the `v`, `time` and `sandbox` of every line;
/// `decision` is `dropped`).
#[derive(Serialize)]
struct DroppedLine<'a> {
    v: u32,
    time: f64,
    sandbox: &'a str,
    decision: &'static str,
    dropped: u64,
    bound: u64,
    reason: String,
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |t| t.as_secs_f64())
}

/// A refusal the run's closing line names (`run::closing`): the call as `-v`
/// writes it (escaped) and its reason (escaped, with the rule or the line to add).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// `openat("/etc/x", O_WRONLY|O_CREAT|O_TRUNC)`.
    pub call: String,
    /// `no path-allow write rule matches; add: path-allow write /etc/x`.
    pub reason: String,
}

/// The first distinct refusals of a run, kept for its closing line whatever `-v` says: only
/// these few are explained (a program that is refused 100,000 opens costs the explanation of
/// [`FirstRefusals::KEPT`], and of at most [`FirstRefusals::LOOKED`] before they are found).
#[derive(Default)]
struct FirstRefusals {
    /// Each with whether its call only looked.
    kept: Mutex<Vec<(Refusal, bool)>>,
    looked: AtomicU64,
}

impl FirstRefusals {
    /// Distinct refusals kept.
    const KEPT: usize = 3;
    /// Refusals looked at, at most, to find them (a program retrying one path).
    const LOOKED: u64 = 64;

    /// Whether the next refusal may still be kept.
    fn open(&self) -> bool {
        self.looked.load(Ordering::Relaxed) < Self::LOOKED
    }

    /// Whether every refusal seen only looked: an act is always kept while [`Self::open`]
    /// (in place of a look if need be), and past [`Self::LOOKED`] refusals it cannot say.
    fn only_looks(&self) -> bool {
        self.open() && self.kept.lock().is_ok_and(|k| k.iter().all(|(_, l)| *l))
    }

    /// Keeps `r` (made by `syscall`) if it is new and there is room, or in place of the last
    /// kept call that only looked (a stat of each `PATH` directory, say) when `r` acts (an
    /// open, an exec): those say what the program was refused.
    fn keep(&self, syscall: &str, r: Refusal) {
        if self.looked.fetch_add(1, Ordering::Relaxed) >= Self::LOOKED {
            return;
        }
        let Ok(mut kept) = self.kept.lock() else {
            return;
        };
        if kept.iter().any(|(k, _)| *k == r) {
            return;
        }
        let looks = only_looks(syscall);
        if kept.len() < Self::KEPT {
            kept.push((r, looks));
        } else if !looks {
            if let Some(at) = kept.iter().rposition(|(_, l)| *l) {
                kept.remove(at);
                kept.push((r, looks));
            }
        }
        if kept.len() >= Self::KEPT && kept.iter().all(|(_, l)| !l) {
            self.looked.store(Self::LOOKED, Ordering::Relaxed);
        }
    }
}

/// Whether `syscall` only looks at a path (its refusal is often a search, such as a shell's
/// walk of `PATH`, that the program goes past).
fn only_looks(syscall: &str) -> bool {
    matches!(
        syscall,
        "stat"
            | "lstat"
            | "newfstatat"
            | "statx"
            | "access"
            | "faccessat"
            | "faccessat2"
            | "readlink"
            | "readlinkat"
            | "statfs"
            | "getxattr"
            | "lgetxattr"
    )
}

/// What `-v` prints of a run's refusals, so that a program refused the same thing thousands of
/// times (a build whose every compiler looks at `/lib`) prints tens of lines, not thousands,
/// and no distinct rule the user needs to add goes unsaid:
///
/// - each distinct refusal (call, target and reason, whatever the flags or the process) is
///   printed once, with its reason and the rule to add; its repeats are counted;
/// - past [`Grouper::SHOWN`] distinct targets in one directory refused for the same reason
///   (the reason with the target taken out: the same rule for each), the rest are counted;
///   the summary gives the one rule for the directory (`path-allow unlink DIR/*`);
/// - the first time either happens, one line says so, and at the end of the run
///   [`Grouper::summary`] gives the counts, the most repeated refusals and each directory's
///   rule.
///
/// It keeps at most [`Grouper::MOST`] distinct refusals; past that, new ones are counted and
/// not printed (the summary says how many; `--log` records each).
#[derive(Default)]
struct Grouper {
    /// Each distinct refusal (syscall, target, reason): its call as shown and how many times
    /// it was made.
    lines: std::collections::HashMap<(String, String, String), (String, u64)>,
    /// Per directory and reason template: the group.
    dirs: std::collections::HashMap<(String, String), DirGroup>,
    /// Refusals made again after they were printed.
    repeats: u64,
    /// Distinct refusals past [`Grouper::MOST`].
    past: u64,
    /// Whether the line saying repeats are counted was printed.
    said_repeats: bool,
    /// Whether the summary was given.
    summed: bool,
}

/// Distinct targets in one directory refused for one reason.
struct DirGroup {
    /// Printed.
    shown: usize,
    /// Counted, not printed.
    more: u64,
    /// The order it was made in, for the summary.
    order: usize,
}

/// What to print for one refusal.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// The refusal's line.
    Show,
    /// Nothing, or (the first time something is left out) this line saying so.
    Quiet(Option<String>),
}

/// Stands for the target in a reason's template.
const HOLE: char = '\0';

impl Grouper {
    /// Distinct targets of one directory and reason printed before the rest are counted.
    const SHOWN: usize = 3;
    /// Distinct refusals kept (a few hundred bytes each).
    const MOST: usize = 20_000;
    /// Repeated refusals the summary names.
    const NAMED: usize = 5;

    /// Sorts one refusal: `call` as shown (`openat("/lib")`), `target` (as shown in
    /// `reason`, the scratch directory written `$SCRATCH`) and its `reason`.
    fn see(&mut self, syscall: &str, call: &str, target: &str, reason: &str) -> Seen {
        let key = (syscall.to_owned(), target.to_owned(), reason.to_owned());
        if let Some((_, n)) = self.lines.get_mut(&key) {
            *n += 1;
            self.repeats += 1;
            if std::mem::replace(&mut self.said_repeats, true) {
                return Seen::Quiet(None);
            }
            return Seen::Quiet(Some(
                "warden: -v prints each distinct refusal once: repeats are counted, and summed \
                 up when the run ends (--log FILE records every one)"
                    .into(),
            ));
        }
        if self.lines.len() >= Self::MOST {
            self.past += 1;
            return Seen::Quiet(None);
        }
        self.lines.insert(key, (call.to_owned(), 1));
        let Some(dir) = parent(target) else {
            return Seen::Show;
        };
        let template = reason.replace(target, &HOLE.to_string());
        let order = self.dirs.len();
        let group = self
            .dirs
            .entry((dir.to_owned(), template))
            .or_insert(DirGroup {
                shown: 0,
                more: 0,
                order,
            });
        if group.shown < Self::SHOWN {
            group.shown += 1;
            return Seen::Show;
        }
        group.more += 1;
        if group.more > 1 {
            return Seen::Quiet(None);
        }
        Seen::Quiet(Some(format!(
            "warden: more refusals in {} for the same reason are counted, not printed (summed \
             up when the run ends)",
            escape(dir)
        )))
    }

    /// The lines that end the run's `-v` output: what was counted and not printed, once
    /// (nothing if nothing was left out).
    fn summary(&mut self) -> Vec<String> {
        if std::mem::replace(&mut self.summed, true) {
            return Vec::new();
        }
        let mut out = Vec::new();
        if self.repeats > 0 {
            let mut repeated: Vec<&(String, u64)> =
                self.lines.values().filter(|(_, n)| *n > 1).collect();
            repeated.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let named: Vec<String> = repeated
                .iter()
                .take(Self::NAMED)
                .map(|(call, n)| format!("{call} {}", plural(*n, "time", "times")))
                .collect();
            let others = repeated.len().saturating_sub(Self::NAMED);
            let rest = if others > 0 {
                format!(", and {}", plural(others as u64, "other", "others"))
            } else {
                String::new()
            };
            out.push(format!(
                "warden: -v left out {} of refusals it printed: {}{rest}",
                plural(self.repeats, "repeat", "repeats"),
                named.join(", ")
            ));
        }
        let mut groups: Vec<(&(String, String), &DirGroup)> =
            self.dirs.iter().filter(|(_, g)| g.more > 0).collect();
        groups.sort_by_key(|(_, g)| g.order);
        for ((dir, template), g) in groups {
            let all = format!("{dir}/*");
            let why = template.replace(HOLE, &all);
            let why = match why.rsplit_once("; add: ") {
                Some((head, rule)) if template.contains(HOLE) => {
                    format!("{head}; for them all add: {rule}")
                }
                _ => why,
            };
            out.push(format!(
                "warden: -v left out {} in {} refused for the same reason as the {} above: {}",
                plural(g.more, "more path", "more paths"),
                escape(dir),
                g.shown,
                escape(&why)
            ));
        }
        if self.past > 0 {
            out.push(format!(
                "warden: -v left out {}: it sorts {} at most (--log FILE records every one)",
                plural(self.past, "more distinct refusal", "more distinct refusals"),
                Self::MOST
            ));
        }
        out
    }
}

/// The directory of an absolute path whose refusals may be grouped, or `None`: for a target
/// that is not a path (`tcp 10.0.0.1:443`), and for one directly in `/` (`/bin`, `/lib`,
/// `/tmp` are each a rule of their own, and `/*` would be everything).
fn parent(target: &str) -> Option<&str> {
    if !(target.starts_with('/') || target.starts_with("$SCRATCH/")) {
        return None;
    }
    match target.rsplit_once('/')? {
        ("", _) => None,
        (dir, _) => Some(dir),
    }
}

/// `1 call`, `2 calls`.
pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Where decisions go.
#[derive(Default)]
pub struct Log {
    verbose: bool,
    json: Option<Mutex<JsonLog>>,
    observations: Option<std::sync::Arc<Mutex<Observations>>>,
    sandbox: String,
    /// The run's scratch directory, written `$SCRATCH` in reasons and suggestions.
    scratch: Option<String>,
    first: FirstRefusals,
    /// What `-v` printed, to print each distinct refusal once.
    grouped: Mutex<Grouper>,
}

impl Log {
    /// `verbose`: denials to stderr; `json`: every decision to this file; `sandbox`: the run's
    /// id, in every JSON line.
    pub fn new(verbose: bool, json: Option<std::fs::File>, sandbox: String) -> Log {
        Log {
            verbose,
            json: json.map(|file| {
                Mutex::new(JsonLog {
                    file,
                    written: 0,
                    bound: DEFAULT_LOG_BOUND,
                    dropped: 0,
                    finished: false,
                })
            }),
            observations: None,
            sandbox,
            scratch: None,
            first: FirstRefusals::default(),
            grouped: Mutex::default(),
        }
    }

    /// At the end of the run, under `-v`: the lines saying what was counted and not printed
    /// (see [`Grouper`]), on stderr, once.
    pub fn summarize(&self) {
        if !self.verbose {
            return;
        }
        let Ok(mut grouped) = self.grouped.lock() else {
            return;
        };
        for line in grouped.summary() {
            eprintln!("{line}");
        }
    }

    /// The run's first few distinct refusals (see [`FirstRefusals`]), for its closing line.
    pub fn first_refusals(&self) -> Vec<Refusal> {
        self.first
            .kept
            .lock()
            .map(|k| k.iter().map(|(r, _)| r.clone()).collect())
            .unwrap_or_default()
    }

    /// Whether every call refused so far only looked (a `stat`, an `access`: a search the
    /// program goes past, such as the loader's walk of `LD_LIBRARY_PATH`). Past the refusals
    /// [`FirstRefusals`] looks at, it cannot say: then not.
    pub fn refused_only_looks(&self) -> bool {
        self.first.only_looks()
    }

    /// Writes at most `bound` bytes to the JSON log (`--log-max`), its last line included; past
    /// that, decisions are counted ([`Log::finish`]).
    pub fn with_bound(self, bound: u64) -> Log {
        if let Some(Ok(mut j)) = self.json.as_ref().map(Mutex::lock) {
            j.bound = bound;
        }
        self
    }

    /// At the end of the run: writes the JSON log's last line if decisions were dropped, and
    /// returns how many were (`None` without `--log`). Later decisions are dropped too.
    pub fn finish(&self) -> Option<u64> {
        let mut j = self.json.as_ref()?.lock().ok()?;
        if j.dropped > 0 && !j.finished {
            j.finished = true;
            let line = DroppedLine {
                v: SCHEMA_VERSION,
                time: now(),
                sandbox: &self.sandbox,
                decision: "dropped",
                dropped: j.dropped,
                bound: j.bound,
                reason: format!(
                    "the log reached its bound of {} bytes (--log-max): the {} decisions after \
                     it were not written",
                    j.bound, j.dropped
                ),
            };
            if let Ok(mut text) = serde_json::to_string(&line) {
                text.push('\n');
                let _ = j.file.write_all(text.as_bytes());
            }
        }
        Some(j.dropped)
    }

    /// Writes `dir`, the run's scratch directory, as `$SCRATCH` in reasons: a suggestion such
    /// as `add: path-allow exec $SCRATCH/a.out` then works when pasted into a policy for the
    /// next run, whose scratch directory has another name.
    pub fn with_scratch(mut self, dir: Option<String>) -> Log {
        self.scratch = dir.filter(|d| d.len() > 1);
        self
    }

    /// Also records every decision in `observations` (`warden learn` reads its run's there,
    /// typed: a file would be within the reach of a program allowed to write everywhere, and
    /// text would only be parsed back).
    pub fn with_observations(
        mut self,
        observations: Option<std::sync::Arc<Mutex<Observations>>>,
    ) -> Log {
        self.observations = observations;
        self
    }

    /// Whether allowed decisions are wanted at all (only by the JSON log).
    pub fn wants_allowed(&self) -> bool {
        self.json.is_some() || self.observations.is_some()
    }

    /// Whether a decision that `allowed` or not is written anywhere (a refusal also while the
    /// run's first few are being kept for its closing line).
    pub fn wants(&self, allowed: bool) -> bool {
        self.wants_allowed() || (!allowed && (self.verbose || self.first.open()))
    }

    /// Writes one decision where it is wanted.
    pub fn write(&self, d: &Decision<'_>) {
        let flags = open_flags(d.syscall, &d.args);
        let reason = match &self.scratch {
            Some(dir) => scratch_relative(&d.reason, dir),
            None => d.reason.clone(),
        };
        if !d.allowed && (self.verbose || self.first.open()) {
            // The path, the thread's name and the reason (which repeats the path) are the
            // sandbox's choice: escaped, they cannot drive the operator's terminal.
            let target = escape(d.target);
            let call = match &flags {
                Some(f) => format!("{}(\"{target}\", {f})", d.syscall),
                None => format!("{}(\"{target}\")", d.syscall),
            };
            if self.verbose {
                let shown = match &self.scratch {
                    Some(dir) => scratch_relative(d.target, dir),
                    None => d.target.to_owned(),
                };
                let brief = format!("{}(\"{target}\")", d.syscall);
                if let Ok(mut grouped) = self.grouped.lock() {
                    match grouped.see(d.syscall, &brief, &shown, &reason) {
                        Seen::Show => eprintln!(
                            "warden: denied {call} for pid {} ({}): {}",
                            d.pid.unwrap_or(d.tid),
                            escape(&comm(d.tid)),
                            escape(&reason)
                        ),
                        Seen::Quiet(Some(note)) => eprintln!("{note}"),
                        Seen::Quiet(None) => {}
                    }
                }
            }
            self.first.keep(
                d.syscall,
                Refusal {
                    call,
                    reason: escape(&reason).into_owned(),
                },
            );
        }
        if let Some(Ok(mut o)) = self.observations.as_ref().map(|o| o.lock()) {
            o.record(d.syscall, d.target, d.access, d.allowed);
        }
        // Past the bound a decision is only counted: not even made into a line.
        let full = self
            .json
            .as_ref()
            .and_then(|j| j.lock().ok())
            .is_some_and(|mut j| j.count_if_full());
        if self.json.is_some() && !full {
            let line = JsonLine {
                v: SCHEMA_VERSION,
                time: now(),
                sandbox: &self.sandbox,
                pid: d.pid,
                tid: d.tid,
                comm: comm(d.tid),
                syscall: d.syscall,
                args: d.args.map(|a| format!("{a:#x}")),
                flags,
                target: d.target,
                access: d.access.map(Access::name),
                decision: if d.allowed { "allow" } else { "deny" },
                rule: d.rule.as_deref(),
                reason: &reason,
                errno: d.errno,
                errno_name: d.errno.and_then(errno_name),
                latency_us: (d.latency.as_nanos() as f64 / 1000.0 * 10.0).round() / 10.0,
            };
            if let Ok(mut text) = serde_json::to_string(&line) {
                text.push('\n');
                if let Some(Ok(mut j)) = self.json.as_ref().map(Mutex::lock) {
                    j.write(text.as_bytes());
                }
            }
        }
    }
}

impl JsonLog {
    /// Counts one decision dropped if the log stopped taking them; whether it did.
    fn count_if_full(&mut self) -> bool {
        let full = self.finished || self.dropped > 0;
        if full {
            self.dropped += 1;
        }
        full
    }

    /// Writes one decision's line, or counts it dropped when it would not leave room for the
    /// last line within the bound (or the last line is written already).
    fn write(&mut self, line: &[u8]) {
        let len = line.len() as u64;
        let room = self.bound.saturating_sub(LAST_LINE_ROOM);
        if self.finished || self.dropped > 0 || self.written + len > room {
            self.dropped += 1;
            return;
        }
        if self.file.write_all(line).is_ok() {
            self.written += len;
        }
    }
}

/// `text` with every path at or beneath `dir` written from `$SCRATCH` (`dir` itself where a
/// path ends: at the end of the text or before a space, `;`, `,` or `)`).
fn scratch_relative(text: &str, dir: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(dir) {
        let after = &rest[at + dir.len()..];
        let ends = after.is_empty() || after.starts_with(['/', ' ', ';', ',', ')']);
        let starts = at == 0 || rest[..at].ends_with([' ', '(', '"']);
        out.push_str(&rest[..at]);
        out.push_str(if ends && starts { "$SCRATCH" } else { dir });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The open flags of an open-family call, spelled as in C (`O_WRONLY|O_CREAT`).
fn open_flags(syscall: &str, args: &[u64; 6]) -> Option<String> {
    let flags = match syscall {
        "open" => args[1] as i32,
        "openat" => args[2] as i32,
        "creat" => libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC,
        _ => return None,
    };
    let mut parts = vec![match flags & crate::sys::abi::O_ACCMODE {
        libc::O_RDONLY => "O_RDONLY",
        libc::O_WRONLY => "O_WRONLY",
        _ => "O_RDWR",
    }];
    let named = [
        (libc::O_CREAT, "O_CREAT"),
        (libc::O_EXCL, "O_EXCL"),
        (libc::O_TRUNC, "O_TRUNC"),
        (libc::O_APPEND, "O_APPEND"),
        (libc::O_NONBLOCK, "O_NONBLOCK"),
        (libc::O_DIRECTORY, "O_DIRECTORY"),
        (libc::O_NOFOLLOW, "O_NOFOLLOW"),
        (libc::O_CLOEXEC, "O_CLOEXEC"),
        (libc::O_PATH, "O_PATH"),
        (libc::O_TMPFILE & !libc::O_DIRECTORY, "O_TMPFILE"),
    ];
    for (bit, name) in named {
        if flags & bit == bit {
            parts.push(name);
        }
    }
    Some(parts.join("|"))
}

/// The symbolic name of the errnos the agent answers with.
fn errno_name(e: i32) -> Option<&'static str> {
    Some(match e {
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EXDEV => "EXDEV",
        libc::EFBIG => "EFBIG",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ECONNABORTED => "ECONNABORTED",
        libc::EINVAL => "EINVAL",
        _ => return None,
    })
}

fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end().to_owned())
        .unwrap_or_else(|_| "?".into())
}

/// What the agent did during a run, for the run report: calls per family, decisions, and the
/// time spent serving them.
#[derive(Default)]
pub struct Stats {
    calls: [AtomicU64; Family::ALL.len()],
    allowed: AtomicU64,
    denied: AtomicU64,
    busy_ns: AtomicU64,
    cpu_ns: AtomicU64,
}

/// A copy of [`Stats`] at one moment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Calls served per family, families with none left out, in [`Family::ALL`] order.
    pub calls: Vec<(Family, u64)>,
    /// Calls served in all.
    pub total: u64,
    /// Policy decisions that allowed.
    pub allowed: u64,
    /// Policy decisions that denied.
    pub denied: u64,
    /// Time from receiving each call to having its answer ready (before the reply's own
    /// wake-up of the caller), summed.
    pub busy: std::time::Duration,
    /// CPU time the agent's workers spent serving the sandbox's calls (their own thread CPU
    /// clocks, from receiving each call to having answered it): the sandbox's work done by the
    /// agent, counted in the sandbox's time and its limit.
    pub cpu: std::time::Duration,
}

impl Stats {
    /// Counts one policy decision.
    pub fn count(&self, allowed: bool) {
        let c = if allowed { &self.allowed } else { &self.denied };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one call served, and how long it took.
    pub fn served(&self, family: Family, took: std::time::Duration) {
        self.calls[family.index()].fetch_add(1, Ordering::Relaxed);
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        self.busy_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Adds CPU time a worker spent on one request (served or refused).
    pub fn worked(&self, cpu: std::time::Duration) {
        let ns = u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX);
        self.cpu_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// CPU time the workers spent so far (see [`StatsSnapshot::cpu`]).
    pub fn cpu(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.cpu_ns.load(Ordering::Relaxed))
    }

    /// The figures so far.
    pub fn snapshot(&self) -> StatsSnapshot {
        let calls: Vec<(Family, u64)> = Family::ALL
            .iter()
            .map(|&f| (f, self.calls[f.index()].load(Ordering::Relaxed)))
            .filter(|&(_, n)| n > 0)
            .collect();
        StatsSnapshot {
            total: calls.iter().map(|&(_, n)| n).sum(),
            calls,
            allowed: self.allowed.load(Ordering::Relaxed),
            denied: self.denied.load(Ordering::Relaxed),
            busy: std::time::Duration::from_nanos(self.busy_ns.load(Ordering::Relaxed)),
            cpu: self.cpu(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_log_stops_at_its_bound_and_says_what_it_dropped() {
        let path = std::env::temp_dir().join(format!("warden-log-bound-{}", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        let log = Log::new(false, Some(file), "test".into()).with_bound(4096);
        let args = [0u64; 6];
        let d = Decision {
            tid: std::process::id(),
            pid: None,
            syscall: "openat",
            args,
            target: "/nonexistent/flood",
            access: Some(Access::Read),
            allowed: false,
            rule: None,
            reason: "no path-allow read rule matches".into(),
            errno: Some(libc::EACCES),
            latency: std::time::Duration::ZERO,
        };
        for _ in 0..1000 {
            log.write(&d);
        }
        let dropped = log.finish().unwrap();
        // Once only.
        assert_eq!(log.finish(), Some(dropped));
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(text.len() <= 4096, "{}", text.len());
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let last = lines.last().unwrap();
        assert_eq!(last["decision"], "dropped");
        assert_eq!(last["dropped"], dropped);
        assert_eq!(lines.len() as u64 - 1 + dropped, 1000);
        assert!(dropped > 900);
        // Without --log nothing is counted.
        assert_eq!(Log::new(false, None, "test".into()).finish(), None);
    }

    #[test]
    fn the_first_refusals_are_kept_few_distinct_and_acts_before_looks() {
        let r = |call: &str| Refusal {
            call: call.into(),
            reason: "no rule".into(),
        };
        let calls = |first: &FirstRefusals| -> Vec<String> {
            let kept = first.kept.lock().unwrap();
            kept.iter().map(|(k, _)| k.call.clone()).collect()
        };
        let first = FirstRefusals::default();
        for dir in ["/a", "/b", "/c", "/d"] {
            first.keep("newfstatat", r(dir));
        }
        first.keep("newfstatat", r("/a"));
        assert!(first.open(), "only looks kept: an open may still come");
        assert!(first.only_looks());
        first.keep("openat", r("/etc/x"));
        assert!(!first.only_looks(), "an open acts");
        first.keep("openat", r("/etc/x"));
        first.keep("execve", r("/bin/y"));
        let kept = calls(&first);
        assert_eq!(kept, ["/a", "/etc/x", "/bin/y"]);
        first.keep("openat", r("/etc/z"));
        assert!(!first.open(), "three acts kept: no more are explained");
        let kept = calls(&first);
        assert_eq!(kept, ["/etc/x", "/bin/y", "/etc/z"]);
        // A program retrying one refused path stops being explained after LOOKED tries.
        let retry = FirstRefusals::default();
        for _ in 0..FirstRefusals::LOOKED {
            retry.keep("newfstatat", r("/same"));
        }
        assert!(!retry.open());
        assert!(!retry.only_looks(), "past what it looked at, it cannot say");
    }

    #[test]
    fn repeated_refusals_print_once_and_are_summed_up() {
        let mut g = Grouper::default();
        let why = "no path-allow read rule matches; add: path-allow read /lib";
        assert_eq!(g.see("openat", "openat(\"/lib\")", "/lib", why), Seen::Show);
        let Seen::Quiet(Some(note)) = g.see("openat", "openat(\"/lib\")", "/lib", why) else {
            panic!("the first repeat says repeats are counted");
        };
        assert!(note.contains("once"), "{note}");
        for _ in 0..1000 {
            assert_eq!(
                g.see("openat", "openat(\"/lib\")", "/lib", why),
                Seen::Quiet(None)
            );
        }
        // Another call on the same path is another line, as is another reason.
        assert_eq!(
            g.see("newfstatat", "newfstatat(\"/lib\")", "/lib", why),
            Seen::Show
        );
        let deny = "path-deny /lib at p:1:11 forbids it";
        assert_eq!(
            g.see("openat", "openat(\"/lib\")", "/lib", deny),
            Seen::Show
        );
        let sum = g.summary();
        assert_eq!(sum.len(), 1, "{sum:?}");
        assert_eq!(
            sum[0],
            "warden: -v left out 1001 repeats of refusals it printed: openat(\"/lib\") 1002 times"
        );
        assert!(g.summary().is_empty(), "once");
        assert!(
            Grouper::default().summary().is_empty(),
            "nothing left out, nothing said"
        );
    }

    #[test]
    fn many_paths_of_one_directory_and_reason_are_counted_with_the_rule_for_them_all() {
        let mut g = Grouper::default();
        let mut shown = 0;
        let mut notes = 0;
        for i in 0..60 {
            let path = format!("/src/p/cc{i}.s");
            let why = format!("no path-allow unlink rule matches; add: path-allow unlink {path}");
            match g.see("unlink", &format!("unlink(\"{path}\")"), &path, &why) {
                Seen::Show => shown += 1,
                Seen::Quiet(Some(_)) => notes += 1,
                Seen::Quiet(None) => {}
            }
        }
        assert_eq!((shown, notes), (Grouper::SHOWN, 1));
        // The same directory for another reason is another rule: printed.
        let why = "no path-allow write rule matches; add: path-allow write /src/p/a.o";
        assert_eq!(
            g.see("openat", "openat(\"/src/p/a.o\")", "/src/p/a.o", why),
            Seen::Show
        );
        // Names directly in / are each a rule of their own.
        for dir in ["/bin", "/sbin", "/lib", "/lib64", "/tmp"] {
            let why = format!("no path-allow read rule matches; add: path-allow read {dir}");
            assert_eq!(g.see("newfstatat", dir, dir, &why), Seen::Show, "{dir}");
        }
        // Targets that are not paths are never grouped.
        for ip in 1..10 {
            let t = format!("tcp 10.0.0.{ip}:80");
            assert_eq!(g.see("connect", &t, &t, "no net-allow"), Seen::Show);
        }
        let sum = g.summary();
        assert_eq!(
            sum,
            [
                "warden: -v left out 57 more paths in /src/p refused for the same reason as the 3 \
              above: no path-allow unlink rule matches; for them all add: path-allow unlink \
              /src/p/*"
            ]
        );
        // In the scratch directory, the rule names it as a variable.
        let mut g = Grouper::default();
        for i in 0..5 {
            let path = format!("$SCRATCH/o/{i}");
            let why = format!("no path-allow exec rule matches; add: path-allow exec {path}");
            g.see("execve", &path, &path, &why);
        }
        let sum = g.summary();
        assert!(
            sum[0].ends_with("add: path-allow exec $SCRATCH/o/*"),
            "{sum:?}"
        );
    }

    #[test]
    fn the_grouper_keeps_a_bounded_number_of_refusals_and_names_a_directory_escaped() {
        let mut g = Grouper::default();
        for i in 0..Grouper::MOST + 10 {
            let path = format!("/d{}/f", i);
            g.see("openat", &path, &path, "no rule");
        }
        assert_eq!(g.lines.len(), Grouper::MOST);
        let sum = g.summary();
        assert!(
            sum.iter()
                .any(|l| l.contains("left out 10 more distinct refusals")),
            "{sum:?}"
        );
        let mut g = Grouper::default();
        for i in 0..5 {
            let path = format!("/x\x1b[2J/{i}");
            let why = format!("no path-allow read rule matches; add: path-allow read {path}");
            g.see("openat", &path, &path, &why);
        }
        let sum = g.summary().join("\n");
        assert!(!sum.contains('\x1b'), "{sum:?}");
    }

    #[test]
    fn suggestions_name_the_scratch_directory_as_a_variable() {
        let d = "/tmp/warden-7-0000abcd";
        assert_eq!(
            scratch_relative(&format!("add: path-allow exec {d}/a.out"), d),
            "add: path-allow exec $SCRATCH/a.out"
        );
        assert_eq!(
            scratch_relative(&format!("add: path-allow read {d}; or ({d}/x, {d})"), d),
            "add: path-allow read $SCRATCH; or ($SCRATCH/x, $SCRATCH)"
        );
        // Only whole paths: a longer name, or the text inside another path, stays.
        assert_eq!(
            scratch_relative(&format!("{d}0/x /srv{d}/y"), d),
            format!("{d}0/x /srv{d}/y")
        );
    }

    #[test]
    fn open_flags_read_like_c() {
        let args = |f: i32| [0, 0, f as u64, 0, 0, 0];
        assert_eq!(
            open_flags("openat", &args(libc::O_RDONLY)).unwrap(),
            "O_RDONLY"
        );
        assert_eq!(
            open_flags(
                "openat",
                &args(libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC)
            )
            .unwrap(),
            "O_WRONLY|O_CREAT|O_CLOEXEC"
        );
        assert_eq!(
            open_flags("open", &[0, libc::O_RDWR as u64, 0, 0, 0, 0]).unwrap(),
            "O_RDWR"
        );
        assert_eq!(
            open_flags("creat", &[0; 6]).unwrap(),
            "O_WRONLY|O_CREAT|O_TRUNC"
        );
        // O_TMPFILE includes O_DIRECTORY's bit: a plain O_DIRECTORY open is not O_TMPFILE.
        assert_eq!(
            open_flags("openat", &args(libc::O_DIRECTORY)).unwrap(),
            "O_RDONLY|O_DIRECTORY"
        );
        assert!(open_flags("stat", &[0; 6]).is_none());
    }
}
