//! Reading what a test program reports: one `RESULT attempt=NAME ok=0|1 errno=E key=value...`
//! line per attempt (see `tests/c/escape_common.h`), and the assertions the adversarial suites
//! make on them.

use std::collections::BTreeMap;
use std::process::Output;

/// One `RESULT` line: `attempt=NAME ok=0|1 errno=E key=value...`.
#[derive(Clone, Debug)]
pub struct Attempt {
    pub name: String,
    pub fields: BTreeMap<String, String>,
}

impl Attempt {
    pub fn ok(&self) -> bool {
        self.field("ok") == "1"
    }
    pub fn errno(&self) -> &str {
        self.field("errno")
    }
    pub fn field(&self, key: &str) -> &str {
        self.fields.get(key).map(String::as_str).unwrap_or("?")
    }
    pub fn num(&self, key: &str) -> i64 {
        self.field(key)
            .parse()
            .unwrap_or_else(|_| panic!("{}: no number {key} in {:?}", self.name, self.fields))
    }
}

/// A finished run: its output and parsed attempts.
pub struct Report {
    pub out: Output,
    pub attempts: Vec<Attempt>,
    pub label: String,
}

impl Report {
    pub fn new(label: &str, out: Output) -> Report {
        let attempts = super::stdout(&out)
            .lines()
            .filter_map(|l| l.strip_prefix("RESULT "))
            .map(|l| {
                let fields: BTreeMap<String, String> = l
                    .split_whitespace()
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
                Attempt {
                    name: fields.get("attempt").cloned().unwrap_or_default(),
                    fields,
                }
            })
            .collect();
        Report {
            out,
            attempts,
            label: label.to_owned(),
        }
    }

    pub fn stdout(&self) -> String {
        super::stdout(&self.out)
    }

    pub fn stderr(&self) -> String {
        super::stderr(&self.out)
    }

    pub fn dump(&self) -> String {
        format!(
            "[{}] exit {:?}\nstdout:\n{}\nstderr:\n{}",
            self.label,
            self.out.status.code(),
            self.stdout(),
            tail(&self.stderr(), 40)
        )
    }

    pub fn get(&self, name: &str) -> &Attempt {
        self.attempts
            .iter()
            .find(|a| a.name == name)
            .unwrap_or_else(|| panic!("no attempt {name}\n{}", self.dump()))
    }

    /// Lines of stdout that start with `prefix` (`PEER`, `GOT`).
    pub fn lines(&self, prefix: &str) -> Vec<String> {
        self.stdout()
            .lines()
            .filter(|l| l.starts_with(prefix))
            .map(str::to_owned)
            .collect()
    }

    /// The program ran to its end and exited 0.
    pub fn finished(&self) -> &Self {
        assert!(
            self.out.status.success() && self.stdout().lines().any(|l| l == "DONE"),
            "the program did not finish\n{}",
            self.dump()
        );
        self
    }

    /// Every attempt named `benign*` succeeded; every other one failed, except `info*`
    /// attempts, which only report.
    pub fn benign_ok_rest_denied(&self) -> &Self {
        self.benign_ok_rest_denied_but(&[])
    }

    /// [`Report::benign_ok_rest_denied`], except that the benign attempts in `narrower` must
    /// fail: what a mode refuses on purpose (the fast path's opens under /proc/self, and what
    /// depends on them).
    pub fn benign_ok_rest_denied_but(&self, narrower: &[&str]) -> &Self {
        for name in narrower {
            self.denied(name);
        }
        assert!(
            !self.attempts.is_empty(),
            "no RESULT lines\n{}",
            self.dump()
        );
        for a in &self.attempts {
            if a.name.starts_with("info") || narrower.contains(&a.name.as_str()) {
                continue;
            }
            if a.name.starts_with("benign") {
                assert!(
                    a.ok(),
                    "benign attempt {} failed: {:?}\n{}",
                    a.name,
                    a.fields,
                    self.dump()
                );
            } else {
                assert!(
                    !a.ok(),
                    "ESCAPE: attempt {} succeeded: {:?}\n{}",
                    a.name,
                    a.fields,
                    self.dump()
                );
            }
        }
        self
    }

    pub fn ok(&self, name: &str) -> &Self {
        assert!(
            self.get(name).ok(),
            "attempt {name} should have succeeded\n{}",
            self.dump()
        );
        self
    }

    /// Whether warden ran without `pidfd_getfd` (a container's profile refuses it; warden says
    /// so at start): the calls on the program's own sockets are then refused, EPERM, on purpose
    /// (docs/fallbacks.md).
    pub fn own_sockets_refused(&self) -> bool {
        self.stderr().contains("pidfd_getfd is refused here")
    }

    /// `names`, attempts on the program's own sockets, where [`Report::own_sockets_refused`]:
    /// each must have failed with EPERM, and the names are returned for
    /// [`Report::benign_ok_rest_denied_but`]. Elsewhere, nothing.
    pub fn own_socket_calls<'a>(&self, names: &[&'a str]) -> Vec<&'a str> {
        if !self.own_sockets_refused() {
            return Vec::new();
        }
        for name in names {
            // A connect to the name a refused bind did not make is answered as anywhere else
            // (ENOENT): the agent decides the name before it needs the socket.
            let a = self.get(name);
            let want_enoent = name.contains("connect") && a.errno() == "ENOENT";
            if !want_enoent {
                self.errno(name, "EPERM");
            }
            assert!(!a.ok(), "attempt {name} succeeded\n{}", self.dump());
        }
        names.to_vec()
    }

    pub fn denied(&self, name: &str) -> &Self {
        assert!(
            !self.get(name).ok(),
            "ESCAPE: attempt {name} succeeded\n{}",
            self.dump()
        );
        self
    }

    pub fn errno(&self, name: &str, want: &str) -> &Self {
        let a = self.get(name);
        assert!(
            !a.ok() && (a.errno() == want || view_kernel_refusal(want, a.errno())),
            "attempt {name}: want failure with {want}, got {:?}\n{}",
            a.fields,
            self.dump()
        );
        self
    }

    pub fn errnos(&self, names: &[&str], want: &str) -> &Self {
        for name in names {
            self.errno(name, want);
        }
        self
    }

    /// warden's stderr (with `-v`) mentions `text`.
    pub fn says(&self, text: &str) -> &Self {
        assert!(
            self.stderr().contains(text),
            "stderr should mention {text:?}\n{}",
            self.dump()
        );
        self
    }

    /// The secret's content never appears in what the program printed.
    pub fn never_saw(&self, secret: &str) -> &Self {
        assert!(
            !super::stdout(&self.out).contains(secret),
            "ESCAPE: the secret's content reached the program\n{}",
            self.dump()
        );
        self
    }
}

/// The last `n` lines of `text` (warden -v can be chatty).
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let skip = lines.len().saturating_sub(n);
    let mut out = String::new();
    if skip > 0 {
        out.push_str(&format!("[... {skip} lines ...]\n"));
    }
    out.push_str(&lines[skip..].join("\n"));
    out
}

/// In a view, a path the view does not hold is not there (ENOENT) where the host's tree would
/// answer EACCES, whether the kernel or the agent answers (the agent answers for the view as
/// the kernel would). With the kernel first (the default, and the fast-path pass in a view), a
/// tree the policy gives no `write` is also a read-only mount (EROFS).
pub fn view_kernel_refusal(want: &str, got: &str) -> bool {
    want == "EACCES"
        && match got {
            "ENOENT" => super::view_on(),
            "EROFS" => super::kernel_first_in_view(),
            _ => false,
        }
}
