//! Source positions and user-facing error reports.
//!
//! A policy is written by a person and read back by `warden check`, so every
//! error must say *where* (file, line, column of the offending token) and
//! *what to do* in one plain sentence. Both types here are deliberately dumb
//! data: the parser fills them in, the CLI prints them, and nothing in between
//! needs to interpret them.
//!
//! The file name is an `Arc<str>` because every rule of a file carries a span
//! naming that file; sharing one allocation keeps a large policy cheap to
//! clone and merge.

use std::fmt;
use std::sync::Arc;

/// Where something was written: a file (or a pseudo-name such as
/// `<default>` or `<command line>`), a 1-based line and a 1-based column.
///
/// Columns count characters, not bytes, so they line up with what an editor
/// shows even when a path contains non-ASCII names. Displays as
/// `file:line:col`, the form editors and terminals turn into links.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Span {
    /// Name of the policy file, or a pseudo-name in angle brackets.
    pub file: Arc<str>,
    /// 1-based line number.
    pub line: u32,
    /// 1-based column (in characters) of the token this span points at.
    pub col: u32,
}

impl Span {
    /// Builds a span; a convenience for callers that create rules outside a
    /// policy file (for example `--read PATH` flags on the command line).
    pub fn new(file: impl Into<Arc<str>>, line: u32, col: u32) -> Self {
        Span {
            file: file.into(),
            line,
            col,
        }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// One error found in a policy, addressed to the person who wrote it.
///
/// Displays as `file:line:col: message`, where the message is one sentence
/// that names the problem and, where possible, the fix ("did you mean ...",
/// "expected ...").
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Diagnostic {
    /// Name of the policy file the error is in.
    pub file: Arc<str>,
    /// 1-based line number.
    pub line: u32,
    /// 1-based column (in characters) of the offending token, or of the
    /// place just past the end of the line when something is missing.
    pub col: u32,
    /// The sentence explaining the problem.
    pub message: String,
}

impl Diagnostic {
    /// Builds a diagnostic at `span`.
    pub fn new(span: &Span, message: impl Into<String>) -> Self {
        Diagnostic {
            file: span.file.clone(),
            line: span.line,
            col: span.col,
            message: message.into(),
        }
    }

    /// The position this diagnostic points at.
    pub fn span(&self) -> Span {
        Span {
            file: self.file.clone(),
            line: self.line,
            col: self.col,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.col, self.message
        )
    }
}

impl std::error::Error for Diagnostic {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_and_diagnostic_display() {
        let span = Span::new("p.policy", 3, 17);
        assert_eq!(span.to_string(), "p.policy:3:17");
        let d = Diagnostic::new(&span, "something is wrong");
        assert_eq!(d.to_string(), "p.policy:3:17: something is wrong");
        assert_eq!(d.span(), span);
        // It is a real error type, usable with `?` and `Box<dyn Error>`.
        let boxed: Box<dyn std::error::Error> = Box::new(d);
        assert!(boxed.to_string().ends_with("something is wrong"));
    }
}
