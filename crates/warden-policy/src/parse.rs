//! Turning policy text into a [`Policy`], with every error reported.
//!
//! The grammar is line-based (one directive per line, `#` to end of line is
//! a comment, tokens separated by spaces or tabs), so the lexer is a split
//! and the parser a `match` on the first word. That simplicity is a safety
//! property: there is no quoting, escaping or nesting whose corner cases
//! could make the parser and a human read the same file differently.
//!
//! Two design choices shape this module:
//!
//! * **Report everything, stop at nothing.** A person fixing a policy wants
//!   all of its mistakes at once, so each line is checked independently and
//!   each bad token on a line gets its own [`Diagnostic`]. A policy with any
//!   error is rejected as a whole: a half-applied policy is a policy nobody
//!   wrote.
//! * **Errors teach.** Every message names the offending token, says what
//!   was expected, and where a near miss is likely (`path-alow`, `raed`,
//!   `read,write`) suggests the fix. Columns point at the token, or just past
//!   the end of the line when something is missing.
//!
//! The parser never panics, allocates in proportion to its input, and does
//! no I/O; `tests/proptest_parse.rs` feeds it arbitrary text to hold it to
//! that.

use std::sync::Arc;

use crate::diag::{Diagnostic, Span};
use crate::limits::{parse_limit, LimitKind};
use crate::net::{Direction, NetAddr, NetRule, NetTarget, PortMatch, Protocol};
use crate::pattern::{quote, PathPattern};
use crate::policy::{Access, IdRange, Policy};

/// The directives a line may start with.
pub(crate) const DIRECTIVES: [&str; 20] = [
    "starting_uid",
    "starting_gid",
    "map-ids",
    "starting_dir",
    "path-allow",
    "path-deny",
    "path-map",
    "net-allow",
    "ptrace-allow",
    "limit-time",
    "limit-wall-time",
    "limit-extra-time",
    "limit-mem",
    "limit-processes",
    "limit-fsize",
    "limit-stack",
    "limit-open-files",
    "limit-output",
    "limit-sockets",
    "limit-disk",
];

/// The protocol words of `net-allow` (tcp, udp and unix-domain).
const NET_PROTOCOLS: [&str; 3] = ["tcp", "udp", "unix-domain"];

/// One word of a line and the 1-based column (in characters) it starts at.
#[derive(Clone, Copy, Debug)]
struct Token<'a> {
    text: &'a str,
    col: u32,
}

/// Splits one line into tokens, stopping at `#`. Also returns the column
/// just past the last token, where "missing argument" errors point.
fn tokenize(line: &str) -> (Vec<Token<'_>>, u32) {
    let mut tokens = Vec::new();
    let mut col: u32 = 0;
    let mut end_col: u32 = 1;
    let mut start: Option<(usize, u32)> = None;
    for (i, c) in line.char_indices() {
        col = col.saturating_add(1);
        if c == ' ' || c == '\t' || c == '#' {
            if let Some((s, scol)) = start.take() {
                tokens.push(Token {
                    text: &line[s..i],
                    col: scol,
                });
                end_col = col;
            }
            if c == '#' {
                return (tokens, end_col);
            }
        } else if start.is_none() {
            start = Some((i, col));
        }
    }
    if let Some((s, scol)) = start {
        tokens.push(Token {
            text: &line[s..],
            col: scol,
        });
        end_col = col.saturating_add(1);
    }
    (tokens, end_col)
}

/// Parses a whole policy file. `file` names it in spans and diagnostics.
pub(crate) fn parse_policy(file: &str, text: &str) -> Result<Policy, Vec<Diagnostic>> {
    let mut p = Parser {
        file: Arc::from(file),
        policy: Policy::default(),
        errors: Vec::new(),
        uid_line: None,
        gid_line: None,
        dir_line: None,
        limit_lines: Vec::new(),
    };
    // An editor may have left a byte-order mark; it is not part of the text.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (index, raw) in text.split('\n').enumerate() {
        let line = u32::try_from(index).map_or(u32::MAX, |n| n.saturating_add(1));
        // Tolerate CRLF line ends; any other '\r' is an error in a token.
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let (tokens, end_col) = tokenize(raw);
        if let Some((first, args)) = tokens.split_first() {
            p.directive(line, *first, args, end_col);
        }
    }
    if p.errors.is_empty() {
        Ok(p.policy)
    } else {
        Err(p.errors)
    }
}

/// Which numeric id setting a line sets.
#[derive(Clone, Copy)]
enum IdKind {
    Uid,
    Gid,
}

struct Parser {
    file: Arc<str>,
    policy: Policy,
    errors: Vec<Diagnostic>,
    /// Lines where each setting was first given, to report repeats.
    uid_line: Option<u32>,
    gid_line: Option<u32>,
    dir_line: Option<u32>,
    limit_lines: Vec<(LimitKind, u32)>,
}

impl Parser {
    fn span(&self, line: u32, col: u32) -> Span {
        Span {
            file: self.file.clone(),
            line,
            col,
        }
    }

    fn error(&mut self, line: u32, col: u32, message: impl Into<String>) {
        let span = self.span(line, col);
        self.errors.push(Diagnostic::new(&span, message));
    }

    fn directive(&mut self, line: u32, kw: Token<'_>, args: &[Token<'_>], end: u32) {
        match kw.text {
            "starting_uid" => self.id_setting(line, kw, args, end, IdKind::Uid),
            "starting_gid" => self.id_setting(line, kw, args, end, IdKind::Gid),
            "starting_dir" => self.starting_dir(line, kw, args, end),
            "map-ids" => self.map_ids(line, kw, args, end),
            "path-allow" => self.path_allow(line, args, end),
            "path-deny" => self.path_deny(line, args, end),
            "path-map" => self.path_map(line, args, end),
            "net-allow" => self.net_allow(line, args, end),
            "ptrace-allow" => self.ptrace_allow(line, kw, args, end),
            other if LimitKind::from_keyword(other).is_some() => {
                if let Some(kind) = LimitKind::from_keyword(other) {
                    self.limit(line, kw, kind, args, end);
                }
            }
            other => {
                let message = unknown_directive(other);
                self.error(line, kw.col, message);
            }
        }
    }

    /// Reports arguments past the `n` a directive takes; true if there were.
    fn extra_args(&mut self, line: u32, what: &str, args: &[Token<'_>], n: usize) -> bool {
        match args.get(n) {
            Some(extra) => {
                let message = format!(
                    "unexpected {}: {what} takes exactly {} (remove this and anything after it)",
                    quote(extra.text),
                    if n == 1 {
                        "one value".to_string()
                    } else {
                        format!("{n} values")
                    }
                );
                self.error(line, extra.col, message);
                true
            }
            None => false,
        }
    }

    fn id_setting(&mut self, line: u32, kw: Token<'_>, args: &[Token<'_>], end: u32, kind: IdKind) {
        let (name, what) = match kind {
            IdKind::Uid => ("starting_uid", "user id"),
            IdKind::Gid => ("starting_gid", "group id"),
        };
        let Some(arg) = args.first() else {
            self.error(
                line,
                end,
                format!("`{name}` needs a {what}, a number such as 1000"),
            );
            return;
        };
        self.extra_args(line, &format!("`{name}`"), args, 1);
        let value = match parse_id(arg.text, what) {
            Ok(v) => v,
            Err(message) => {
                self.error(line, arg.col, message);
                return;
            }
        };
        let first = match kind {
            IdKind::Uid => &mut self.uid_line,
            IdKind::Gid => &mut self.gid_line,
        };
        if let Some(first) = *first {
            let message = format!(
                "`{name}` is already set on line {first}; a policy file may set it only once"
            );
            self.error(line, kw.col, message);
            return;
        }
        *first = Some(line);
        match kind {
            IdKind::Uid => self.policy.starting_uid = Some(value),
            IdKind::Gid => self.policy.starting_gid = Some(value),
        }
    }

    /// `map-ids INSIDE OUTSIDE COUNT`: more user and group ids in the sandbox's user namespace,
    /// for a program that switches to them (a daemon's workers).
    fn map_ids(&mut self, line: u32, kw: Token<'_>, args: &[Token<'_>], end: u32) {
        if args.len() < 3 {
            self.error(
                line,
                end,
                "`map-ids` needs three numbers: the first id inside, the first id outside and                  how many, e.g. `map-ids 1 100001 65535`",
            );
            return;
        }
        self.extra_args(line, "`map-ids`", args, 3);
        let mut values = [0u32; 3];
        for (i, what) in ["user id", "user id", "count"].iter().enumerate() {
            match parse_id(args[i].text, what) {
                Ok(v) => values[i] = v,
                Err(message) => {
                    self.error(line, args[i].col, message);
                    return;
                }
            }
        }
        let [inside, outside, count] = values;
        if count == 0 {
            self.error(line, args[2].col, "`map-ids` maps at least one id");
            return;
        }
        if inside.checked_add(count).is_none() || outside.checked_add(count).is_none() {
            self.error(
                line,
                args[2].col,
                "the range runs past the largest id, 4294967294",
            );
            return;
        }
        if inside == 0 || outside == 0 {
            let col = if inside == 0 {
                args[0].col
            } else {
                args[1].col
            };
            self.error(
                line,
                col,
                "id 0 is the starting id's (starting_uid, starting_gid): `map-ids` adds ids                  from 1 inside, and never root's outside",
            );
            return;
        }
        if self.policy.map_ids.is_some() {
            self.error(
                line,
                kw.col,
                "`map-ids` is already set; a policy file may set it once",
            );
            return;
        }
        self.policy.map_ids = Some((
            IdRange {
                inside,
                outside,
                count,
            },
            self.span(line, kw.col),
        ));
    }

    /// `ptrace-allow inside`: the sandbox's processes may debug each other (the PID namespace
    /// and Landlock keep everything outside out of reach either way).
    fn ptrace_allow(&mut self, line: u32, kw: Token<'_>, args: &[Token<'_>], end: u32) {
        match args.first() {
            Some(arg) if arg.text == "inside" => {
                if !self.extra_args(line, "`ptrace-allow`", args, 1) {
                    self.policy.ptrace_inside = Some(self.span(line, kw.col));
                }
            }
            Some(arg) => self.error(
                line,
                arg.col,
                format!(
                    "{}: `ptrace-allow` takes only `inside` (processes of the sandbox may trace \
                     each other; nothing outside can ever be traced)",
                    quote(arg.text)
                ),
            ),
            None => self.error(
                line,
                end,
                "`ptrace-allow` needs `inside`: `ptrace-allow inside` lets processes of the \
                 sandbox trace each other (debuggers, strace)",
            ),
        }
    }

    fn starting_dir(&mut self, line: u32, kw: Token<'_>, args: &[Token<'_>], end: u32) {
        let Some(arg) = args.first() else {
            self.error(
                line,
                end,
                "`starting_dir` needs a directory, an absolute path or one starting with `$SCRATCH`",
            );
            return;
        };
        self.extra_args(line, "`starting_dir`", args, 1);
        let dir = match PathPattern::parse(arg.text) {
            Ok(p) if p.is_prefix() => {
                self.error(
                    line,
                    arg.col,
                    format!(
                        "{}: `starting_dir` names one directory, not a pattern; remove the `*`",
                        quote(arg.text)
                    ),
                );
                return;
            }
            Ok(p) => p.literal().to_string(),
            Err(message) => {
                self.error(line, arg.col, message);
                return;
            }
        };
        if let Some(first) = self.dir_line {
            self.error(
                line,
                kw.col,
                format!(
                    "`starting_dir` is already set on line {first}; a policy file may set it only once"
                ),
            );
            return;
        }
        self.dir_line = Some(line);
        self.policy.starting_dir = Some((dir, self.span(line, arg.col)));
    }

    fn limit(&mut self, line: u32, kw: Token<'_>, kind: LimitKind, args: &[Token<'_>], end: u32) {
        let name = kind.keyword();
        let Some(arg) = args.first() else {
            let example = match kind.unit() {
                crate::limits::Unit::Seconds => "a number of seconds such as 2 or 0.5",
                crate::limits::Unit::Bytes => "a size such as 256M",
                crate::limits::Unit::Count => "a count such as 16",
            };
            self.error(line, end, format!("`{name}` needs {example}"));
            return;
        };
        self.extra_args(line, &format!("`{name}`"), args, 1);
        let value = match parse_limit(kind, arg.text) {
            Ok(v) => v,
            Err(message) => {
                self.error(line, arg.col, message);
                return;
            }
        };
        if let Some(&(_, first)) = self.limit_lines.iter().find(|(k, _)| *k == kind) {
            self.error(
                line,
                kw.col,
                format!(
                    "`{name}` is already set on line {first}; a policy file may set it only once"
                ),
            );
            return;
        }
        self.limit_lines.push((kind, line));
        self.policy.limits.set(kind, value);
    }

    fn path_allow(&mut self, line: u32, args: &[Token<'_>], end: u32) {
        let Some((access_tok, patterns)) = args.split_first() else {
            self.error(
                line,
                end,
                "`path-allow` needs an access (read, write, unlink or exec) followed by one or more path patterns",
            );
            return;
        };
        let access = Access::from_name(access_tok.text);
        if access.is_none() {
            let message = bad_access(access_tok.text);
            self.error(line, access_tok.col, message);
            // If the "access" was really the first pattern, check it too so
            // that its own mistakes are reported in the same run.
            if looks_like_path(access_tok.text) {
                self.patterns(line, None, std::slice::from_ref(access_tok), false);
            }
        } else if patterns.is_empty() {
            self.error(
                line,
                end,
                format!(
                    "`path-allow {}` needs at least one path pattern after the access",
                    access_tok.text
                ),
            );
            return;
        }
        self.patterns(line, access, patterns, access.is_some());
    }

    fn path_deny(&mut self, line: u32, args: &[Token<'_>], end: u32) {
        let mut patterns = args;
        if let Some(first) = args.first() {
            if Access::from_name(first.text).is_some() {
                self.error(
                    line,
                    first.col,
                    format!(
                        "`path-deny` takes no access: it denies every access to the paths it names; remove `{}`",
                        first.text
                    ),
                );
                patterns = &args[1..];
            }
        }
        if args.is_empty() {
            self.error(
                line,
                end,
                "`path-deny` needs at least one path pattern, such as /etc/shadow",
            );
            return;
        }
        let ok = patterns.len() == args.len();
        self.patterns(line, None, patterns, ok);
    }

    /// `path-map HOST SANDBOX [ro|rw|copy]` or `path-map tmpfs SANDBOX` (see [`crate::map`]).
    fn path_map(&mut self, line: u32, args: &[Token<'_>], end: u32) {
        use crate::map::{MapMode, MapSource, PathMap};
        const USAGE: &str = "`path-map` needs what appears and where, as in \
             `path-map /home/me/proj /src ro`, `path-map /home/me/proj /src copy` or \
             `path-map tmpfs /tmp`";
        let (Some(from), Some(to)) = (args.first(), args.get(1)) else {
            self.error(line, end, USAGE);
            return;
        };
        let tmpfs = from.text == "tmpfs";
        let source = if tmpfs {
            Some(MapSource::Tmpfs)
        } else {
            match crate::map::map_path(from.text, "host path") {
                Ok(p) => Some(MapSource::Host(p)),
                Err(message) => {
                    self.error(line, from.col, message);
                    None
                }
            }
        };
        let sandbox = match crate::map::map_path(to.text, "sandbox path") {
            Ok(p) => match source
                .as_ref()
                .and_then(|s| crate::map::bad_sandbox_path(&p, s))
            {
                Some(message) => {
                    self.error(line, to.col, message);
                    None
                }
                None => Some(p),
            },
            Err(message) => {
                self.error(line, to.col, message);
                None
            }
        };
        const MODES: [&str; 3] = ["ro", "rw", "copy"];
        let mode = match args.get(2) {
            None => Some(MapMode::ReadOnly),
            Some(m) if tmpfs => {
                self.error(
                    line,
                    m.col,
                    format!(
                        "a tmpfs map takes no mode: it is the sandbox's own and always writable \
                         as far as the path rules allow; remove {}",
                        quote(m.text)
                    ),
                );
                None
            }
            Some(m) => match m.text {
                "ro" => Some(MapMode::ReadOnly),
                "rw" => Some(MapMode::ReadWrite),
                "copy" => Some(MapMode::Copy),
                other => {
                    let hint = match suggest(other, &MODES) {
                        Some(s) => format!("; did you mean `{s}`?"),
                        None => String::new(),
                    };
                    self.error(
                        line,
                        m.col,
                        format!(
                            "unknown map mode {}: `ro` (writes refused), `rw` (writes reach the \
                             host) or `copy` (writes land in a private copy){hint}",
                            quote(other)
                        ),
                    );
                    None
                }
            },
        };
        if self.extra_args(line, "`path-map`", args, 3) {
            return;
        }
        let (Some(source), Some(sandbox), Some(mode)) = (source, sandbox, mode) else {
            return;
        };
        let first = self
            .policy
            .maps
            .iter()
            .find(|m| m.sandbox == sandbox)
            .map(|m| m.span.line);
        if let Some(first) = first {
            self.error(
                line,
                to.col,
                format!(
                    "{} is already mapped on line {first}; a sandbox path shows one thing",
                    quote(&sandbox)
                ),
            );
            return;
        }
        let mode = if tmpfs { MapMode::ReadWrite } else { mode };
        let span = self.span(line, from.col);
        self.policy.maps.push(PathMap {
            source,
            sandbox,
            mode,
            span,
        });
    }

    /// Parses each pattern token; stores a rule per good one if `store`.
    fn patterns(&mut self, line: u32, access: Option<Access>, toks: &[Token<'_>], store: bool) {
        for tok in toks {
            match PathPattern::parse(tok.text) {
                Ok(pattern) if store => {
                    let span = self.span(line, tok.col);
                    self.policy.add_rule(access, pattern, span);
                }
                Ok(_) => {}
                Err(message) => self.error(line, tok.col, message),
            }
        }
    }

    fn net_allow(&mut self, line: u32, args: &[Token<'_>], end: u32) {
        const USAGE: &str = "`net-allow` needs a direction (outgoing or incoming), a protocol \
             (tcp, udp or unix-domain) and what to allow, as in `net-allow outgoing tcp 10.0.0.1 80`";
        let Some(dir_tok) = args.first() else {
            self.error(line, end, USAGE);
            return;
        };
        // A bad direction is reported but does not end the line: the rest is
        // still checked (rules are only stored when the direction is good).
        let direction = Direction::from_name(dir_tok.text);
        if direction.is_none() {
            let mut message = format!(
                "{} is not a direction; expected `outgoing` or `incoming`",
                quote(dir_tok.text)
            );
            if let Some(s) = suggest(dir_tok.text, &["outgoing", "incoming"]) {
                message.push_str(&format!(" (did you mean `{s}`?)"));
            }
            self.error(line, dir_tok.col, message);
        }
        let Some(proto_tok) = args.get(1) else {
            if direction.is_some() {
                self.error(line, end, USAGE);
            }
            return;
        };
        let rest = &args[2..];
        // Unix-domain rules name socket paths, one rule per pattern so each
        // keeps its own span; IP rules take exactly ADDRESS and PORT.
        if proto_tok.text == "unix-domain" {
            if rest.is_empty() {
                self.error(
                    line,
                    end,
                    "`net-allow ... unix-domain` needs at least one socket path pattern, such as /run/app.sock",
                );
                return;
            }
            for tok in rest {
                if tok.text.starts_with('@') {
                    // Abstract sockets live outside the file system; no
                    // path pattern can name them.
                    let message = format!(
                        "{} looks like an abstract socket name; only sockets with a path \
                         in the file system can be allowed, so write an absolute path pattern",
                        quote(tok.text)
                    );
                    self.error(line, tok.col, message);
                    continue;
                }
                match PathPattern::parse(tok.text) {
                    Ok(pattern) => {
                        if let Some(direction) = direction {
                            let span = self.span(line, tok.col);
                            self.policy.net_rules.push(NetRule {
                                direction,
                                target: NetTarget::Unix(pattern),
                                span,
                            });
                        }
                    }
                    Err(message) => self.error(line, tok.col, message),
                }
            }
            return;
        }
        let Some(protocol) = Protocol::from_name(proto_tok.text) else {
            let mut message = format!(
                "{} is not a protocol; expected `tcp`, `udp` or `unix-domain`",
                quote(proto_tok.text)
            );
            if let Some(s) = suggest(proto_tok.text, &NET_PROTOCOLS) {
                message.push_str(&format!(" (did you mean `{s}`?)"));
            }
            self.error(line, proto_tok.col, message);
            return;
        };
        let (Some(addr_tok), Some(port_tok)) = (rest.first(), rest.get(1)) else {
            self.error(
                line,
                end,
                format!(
                    "`net-allow ... {protocol}` needs an address and a port, such as \
                     `10.0.0.1 80`, or `0/0 0/0` for any address and any port"
                ),
            );
            return;
        };
        self.extra_args(line, &format!("`net-allow ... {protocol}`"), rest, 2);
        // Parse both halves before reporting, so that a line with a bad
        // address and a bad port gets both errors at once.
        let addr = NetAddr::parse(addr_tok.text);
        let port = PortMatch::parse(port_tok.text);
        match (addr, port) {
            (Ok(addr), Ok(port)) => {
                if let Some(direction) = direction {
                    let span = self.span(line, addr_tok.col);
                    self.policy.net_rules.push(NetRule {
                        direction,
                        target: NetTarget::Ip {
                            protocol,
                            addr,
                            port,
                        },
                        span,
                    });
                }
            }
            (addr, port) => {
                if let Err(message) = addr {
                    self.error(line, addr_tok.col, message);
                }
                if let Err(message) = port {
                    self.error(line, port_tok.col, message);
                }
            }
        }
    }
}

/// Parses a uid/gid: plain decimal digits, below `u32::MAX`.
fn parse_id(text: &str, what: &str) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{} is not a {what}; write a number from 0 to 4294967294",
            quote(text)
        ));
    }
    match text.parse::<u32>() {
        // (uid_t)-1 means "leave unchanged" to the kernel's id calls and
        // cannot be mapped into a user namespace.
        Ok(u32::MAX) => Err(format!(
            "4294967295 cannot be a {what}: the kernel reserves it to mean \"unchanged\"; use a smaller number"
        )),
        Ok(v) => Ok(v),
        Err(_) => Err(format!(
            "{} is too large for a {what}; the largest is 4294967294",
            quote(text)
        )),
    }
}

/// Whether a token looks like a path rather than a keyword.
fn looks_like_path(text: &str) -> bool {
    text.starts_with('/') || text.starts_with('$') || text.starts_with('~')
}

/// The message for a first word that is no directive.
fn unknown_directive(word: &str) -> String {
    if looks_like_path(word) {
        return format!(
            "a line must start with a directive, not the path {}; did you mean `path-allow read {}`?",
            quote(word),
            word.escape_default()
        );
    }
    if let Some(access) = Access::from_name(word) {
        return format!(
            "unknown directive {}; did you mean `path-allow {access} ...`?",
            quote(word)
        );
    }
    match suggest(word, &DIRECTIVES) {
        Some(s) => format!("unknown directive {}; did you mean `{s}`?", quote(word)),
        None => format!(
            "unknown directive {}; a line must start with one of starting_uid, starting_gid, \
             map-ids, starting_dir, path-allow, path-deny, path-map, net-allow, ptrace-allow or \
             a limit-* keyword",
            quote(word)
        ),
    }
}

/// The message for a word in the access position that is no access.
fn bad_access(word: &str) -> String {
    let names: Vec<&str> = Access::ALL.iter().map(|a| a.name()).collect();
    if looks_like_path(word) {
        return format!(
            "`path-allow` needs an access before its patterns: \
             `path-allow read|write|unlink|exec PATTERN...`, but found the path {}",
            quote(word)
        );
    }
    if word.contains(',') && word.split(',').all(|w| Access::from_name(w).is_some()) {
        return format!(
            "{} names several accesses, but `path-allow` takes exactly one; \
             write one line per access (path-allow read ..., path-allow write ...)",
            quote(word)
        );
    }
    let mut message = format!(
        "{} is not an access; expected exactly one of read, write, unlink or exec",
        quote(word)
    );
    if let Some(s) = suggest(word, &names) {
        message.push_str(&format!(" (did you mean `{s}`?)"));
    }
    message
}

/// The candidate closest to `word` by edit distance, if close enough to be
/// a plausible typo: at most one edit for short words, two for longer ones.
/// Case is ignored, so `PATH-ALLOW` suggests `path-allow`.
pub(crate) fn suggest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    // Long words are not typos of short keywords; this also bounds the work.
    if word.chars().count() > 32 {
        return None;
    }
    let lower = word.to_lowercase();
    let limit = if lower.chars().count() <= 4 { 1 } else { 2 };
    candidates
        .iter()
        .map(|&c| (edit_distance(&lower, c), c))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Levenshtein distance over characters (insert, delete, substitute), with
/// adjacent transposition counted as one edit, since `raed` for `read` is
/// the typo people make.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j] = distance between a[..i] and b[..j]; three rows suffice.
    let mut prev2: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut d = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses text expected to be wrong; returns "line:col: message" lines.
    fn errors(text: &str) -> Vec<String> {
        match parse_policy("t.policy", text) {
            Ok(p) => panic!("expected errors, got {p:?}"),
            Err(diags) => diags
                .iter()
                .map(|d| {
                    assert_eq!(&*d.file, "t.policy");
                    format!("{}:{}: {}", d.line, d.col, d.message)
                })
                .collect(),
        }
    }

    /// Asserts exactly one error, at `line:col`, containing `fragment`.
    #[track_caller]
    fn one_error(text: &str, line: u32, col: u32, fragment: &str) {
        let errs = errors(text);
        assert_eq!(errs.len(), 1, "{errs:#?}");
        let prefix = format!("{line}:{col}: ");
        assert!(
            errs[0].starts_with(&prefix) && errs[0].contains(fragment),
            "expected {prefix}...{fragment}..., got {}",
            errs[0]
        );
    }

    #[test]
    fn ptrace_allow_inside() {
        let p = Policy::parse("t", "ptrace-allow inside\n").unwrap();
        assert_eq!(
            p.ptrace_inside.as_ref().map(|s| (s.line, s.col)),
            Some((1, 1))
        );
        assert!(p.to_normalized_string().contains("ptrace-allow inside\n"));
        assert!(Policy::parse("t", "path-allow read /a\n")
            .unwrap()
            .ptrace_inside
            .is_none());
        one_error("ptrace-allow outside", 1, 14, "takes only `inside`");
        one_error("ptrace-allow", 1, 13, "needs `inside`");
        one_error("ptrace-allow inside now", 1, 21, "unexpected `now`");
        one_error("ptrace-alow inside", 1, 1, "did you mean `ptrace-allow`?");
        // Merging keeps it, and a policy saying it differs from one that does not.
        let mut merged = Policy::default();
        merged.merge(p.clone());
        assert!(merged.ptrace_inside.is_some() && merged.equivalent(&p));
        assert!(!Policy::default().equivalent(&p));
    }

    #[test]
    fn limits() {
        let p = parse_policy(
            "t",
            "limit-time 1.5\nlimit-mem 256M\nlimit-processes 8\nlimit-output 0\n",
        )
        .unwrap();
        assert_eq!(p.limits.time, Some(std::time::Duration::from_millis(1500)));
        assert_eq!(p.limits.mem, Some(256 << 20));
        assert_eq!(p.limits.processes, Some(8));
        assert_eq!(p.limits.output, Some(0));
        assert_eq!(p.limits.wall_time, None);
        one_error("limit-mem 12Q", 1, 11, "`12Q` is not a size");
        one_error(
            "limit-time",
            1,
            11,
            "`limit-time` needs a number of seconds",
        );
        one_error("limit-time -1", 1, 12, "not a number of seconds");
        one_error("limit-processes 0", 1, 17, "above zero");
        one_error("limit-stack 8M 9M", 1, 16, "takes exactly one value");
        one_error(
            "limit-time 1\nlimit-time 2",
            2,
            1,
            "`limit-time` is already set on line 1",
        );
        one_error("limit-tme 1", 1, 1, "did you mean `limit-time`?");
        let printed = p.to_normalized_string();
        assert!(
            printed.contains("limit-time 1.5\nlimit-mem 256M\nlimit-processes 8\nlimit-output 0\n")
        );
        assert!(parse_policy("t", &printed).unwrap().equivalent(&p));
    }

    #[test]
    fn tokenizer_columns() {
        let (toks, end) = tokenize("  path-allow\tread  /a # comment /b");
        let got: Vec<(&str, u32)> = toks.iter().map(|t| (t.text, t.col)).collect();
        assert_eq!(got, [("path-allow", 3), ("read", 14), ("/a", 20)]);
        assert_eq!(end, 22);
        let (toks, end) = tokenize("a#b");
        assert_eq!(toks.len(), 1);
        assert_eq!(end, 2);
        let (toks, end) = tokenize("ab");
        assert_eq!((toks.len(), end), (1, 3));
        let (toks, end) = tokenize("");
        assert_eq!((toks.len(), end), (0, 1));
        // Columns count characters, not bytes.
        let (toks, _) = tokenize("é x");
        assert_eq!(toks[1].col, 3);
    }

    #[test]
    fn comments_blank_lines_crlf_bom() {
        let p = parse_policy(
            "t",
            "\u{feff}# a comment\r\n\r\n   \t \npath-allow read /a#trailing\r\npath-allow read /b # c\n",
        )
        .unwrap();
        let pats: Vec<String> = p
            .path_rules()
            .iter()
            .map(|r| r.pattern.to_string())
            .collect();
        assert_eq!(pats, ["/a", "/b"]);
        assert_eq!(p.path_rules()[1].span.to_string(), "t:5:17");
    }

    #[test]
    fn unknown_directive_suggestions() {
        one_error(
            "path-alow read /a",
            1,
            1,
            "unknown directive `path-alow`; did you mean `path-allow`?",
        );
        one_error("\n  path_deny /a", 2, 3, "did you mean `path-deny`?");
        one_error("starting-uid 5", 1, 1, "did you mean `starting_uid`?");
        one_error("PATH-ALLOW read /a", 1, 1, "did you mean `path-allow`?");
        one_error(
            "net-alow outgoing tcp 0 0",
            1,
            1,
            "did you mean `net-allow`?",
        );
        one_error("allow read /a", 1, 1, "must start with one of starting_uid");
        one_error(
            "/etc/passwd",
            1,
            1,
            "did you mean `path-allow read /etc/passwd`?",
        );
    }

    #[test]
    fn starting_ids() {
        let p = parse_policy("t", "map-ids 1 100001 65535\n").unwrap();
        let r = p.map_ids.as_ref().unwrap().0;
        assert_eq!((r.inside, r.outside, r.count), (1, 100001, 65535));
        assert_eq!(p.to_normalized_string(), "map-ids 1 100001 65535\n");
        one_error("map-ids 1 2", 1, 12, "needs three numbers");
        one_error("map-ids 0 100000 5", 1, 9, "id 0 is the starting id's");
        one_error("map-ids 1 0 5", 1, 11, "never root's outside");
        one_error("map-ids 1 2 0", 1, 13, "at least one id");
        one_error("map-ids 1 4294967290 10", 1, 22, "runs past the largest id");
        one_error("map-ids 1 2 3\nmap-ids 1 2 3", 2, 1, "already set");
        let p = parse_policy("t", "starting_uid 1000\nstarting_gid 0\n").unwrap();
        assert_eq!((p.starting_uid, p.starting_gid), (Some(1000), Some(0)));
        one_error("starting_uid", 1, 13, "`starting_uid` needs a user id");
        one_error(
            "starting_gid  # none",
            1,
            13,
            "`starting_gid` needs a group id",
        );
        one_error(
            "starting_uid 1 2",
            1,
            16,
            "unexpected `2`: `starting_uid` takes exactly one value",
        );
        one_error("starting_uid abc", 1, 14, "`abc` is not a user id");
        one_error("starting_uid -1", 1, 14, "`-1` is not a user id");
        one_error("starting_uid +1", 1, 14, "`+1` is not a user id");
        one_error("starting_gid 4294967296", 1, 14, "too large for a group id");
        one_error("starting_uid 4294967295", 1, 14, "reserves it");
        one_error(
            "starting_uid 1\nstarting_uid 2",
            2,
            1,
            "`starting_uid` is already set on line 1",
        );
    }

    #[test]
    fn starting_dir() {
        let p = parse_policy("t", "starting_dir /home//app/\n").unwrap();
        let (dir, span) = p.starting_dir.clone().unwrap();
        assert_eq!(dir, "/home/app");
        assert_eq!(span.to_string(), "t:1:14");
        let p = parse_policy("t", "starting_dir $SCRATCH/work").unwrap();
        assert_eq!(p.starting_dir.unwrap().0, "$SCRATCH/work");
        one_error("starting_dir", 1, 13, "`starting_dir` needs a directory");
        one_error("starting_dir home", 1, 14, "not an absolute path");
        one_error(
            "starting_dir /home/*",
            1,
            14,
            "not a pattern; remove the `*`",
        );
        one_error("starting_dir /a /b", 1, 17, "unexpected `/b`");
        one_error("starting_dir /a/../b", 1, 14, "`..`");
        one_error(
            "starting_dir /a\nstarting_dir /b",
            2,
            1,
            "already set on line 1",
        );
    }

    #[test]
    fn path_allow_errors() {
        one_error(
            "path-allow",
            1,
            11,
            "needs an access (read, write, unlink or exec)",
        );
        one_error(
            "path-allow read",
            1,
            16,
            "`path-allow read` needs at least one path pattern",
        );
        one_error("path-allow raed /a", 1, 12, "`raed` is not an access; expected exactly one of read, write, unlink or exec (did you mean `read`?)");
        one_error("path-allow exe /a", 1, 12, "did you mean `exec`?");
        one_error("path-allow delete /a", 1, 12, "`delete` is not an access");
        one_error("path-allow read,write /a", 1, 12, "names several accesses");
        one_error(
            "path-allow /usr/* /lib/*",
            1,
            12,
            "needs an access before its patterns",
        );
        one_error(
            "path-allow read usr/*",
            1,
            17,
            "`usr/*` is not an absolute path",
        );
        one_error(
            "path-allow read /usr/*/bin",
            1,
            17,
            "may only be the last character",
        );
        one_error(
            "path-allow read $HOME/x",
            1,
            17,
            "`$HOME` is not a known variable",
        );
        one_error("path-allow read /a/../b", 1, 17, "`..`");
        one_error("path-allow read /a\u{7}b", 1, 17, "control character");
    }

    #[test]
    fn all_errors_are_collected() {
        let text = "path-allow read /ok relative /a/*/b\n\
                    bogus\n\
                    path-allow /x/..\n\
                    starting_uid x\n\
                    path-allow write /fine\n";
        let errs = errors(text);
        assert_eq!(
            errs.iter()
                .map(|e| e.split(' ').next().unwrap())
                .collect::<Vec<_>>(),
            ["1:21:", "1:30:", "2:1:", "3:12:", "3:12:", "4:14:"],
            "{errs:#?}"
        );
        assert!(errs[4].contains("`..`"));
    }

    #[test]
    fn path_deny() {
        let p = parse_policy("t", "path-deny /etc/shadow /etc/ssh/ssh_host_*").unwrap();
        assert_eq!(p.path_rules().len(), 2);
        assert!(p.path_rules().iter().all(|r| r.access.is_none()));
        one_error(
            "path-deny",
            1,
            10,
            "`path-deny` needs at least one path pattern",
        );
        one_error(
            "path-deny read /etc/shadow",
            1,
            11,
            "`path-deny` takes no access",
        );
        one_error("path-deny etc", 1, 11, "not an absolute path");
        let errs = errors("path-deny read");
        assert_eq!(errs.len(), 1, "{errs:?}");
    }

    #[test]
    fn net_allow_ok() {
        let text = "net-allow outgoing tcp 128.36.31.50 80\n\
                    net-allow outgoing tcp MYHOST_ADDR 0/0\n\
                    net-allow incoming tcp 0.0.0.0/0 8080\n\
                    net-allow incoming unix-domain /var/* /run/a.sock\n\
                    net-allow outgoing udp ::1 53";
        let p = parse_policy("t", text).unwrap();
        let shown: Vec<String> = p.net_rules().iter().map(|r| r.to_string()).collect();
        assert_eq!(
            shown,
            [
                "net-allow outgoing tcp 128.36.31.50 80",
                "net-allow outgoing tcp MYHOST_ADDR 0/0",
                "net-allow incoming tcp 0.0.0.0/0 8080",
                "net-allow incoming unix-domain /var/*",
                "net-allow incoming unix-domain /run/a.sock",
                "net-allow outgoing udp ::1 53",
            ]
        );
        assert_eq!(p.net_rules()[0].span.to_string(), "t:1:24");
        assert_eq!(p.net_rules()[4].span.to_string(), "t:4:39");
    }

    #[test]
    fn net_allow_errors() {
        one_error(
            "net-allow",
            1,
            10,
            "needs a direction (outgoing or incoming)",
        );
        one_error("net-allow outgoing", 1, 19, "needs a direction");
        one_error(
            "net-allow outgoin tcp 0 0",
            1,
            11,
            "did you mean `outgoing`?",
        );
        one_error("net-allow out tcp 0 0", 1, 11, "`out` is not a direction");
        one_error("net-allow outgoing tpc 0 0", 1, 20, "did you mean `tcp`?");
        one_error(
            "net-allow outgoing icmp 0 0",
            1,
            20,
            "`icmp` is not a protocol",
        );
        one_error(
            "net-allow outgoing tcp",
            1,
            23,
            "needs an address and a port",
        );
        one_error(
            "net-allow outgoing tcp 1.2.3.4",
            1,
            31,
            "needs an address and a port",
        );
        one_error(
            "net-allow outgoing tcp 1.2.3.4 80 90",
            1,
            35,
            "unexpected `90`",
        );
        one_error(
            "net-allow outgoing tcp host 80",
            1,
            24,
            "`host` is not an IP address",
        );
        one_error(
            "net-allow outgoing tcp 1.2.3.4/40 80",
            1,
            24,
            "not a valid mask",
        );
        one_error(
            "net-allow outgoing tcp 1.2.3.4 99999",
            1,
            32,
            "is not a port",
        );
        one_error(
            "net-allow outgoing tcp 1.2.3.4 80/x",
            1,
            32,
            "is not a port mask",
        );
        one_error(
            "net-allow incoming unix-domain",
            1,
            31,
            "at least one socket path",
        );
        one_error(
            "net-allow incoming unix-domain rel",
            1,
            32,
            "not an absolute path",
        );
        // A bad address and a bad port on one line are both reported.
        assert_eq!(errors("net-allow outgoing tcp x y").len(), 2);
        // A bad direction does not hide a bad pattern.
        assert_eq!(errors("net-allow sideways unix-domain rel").len(), 2);
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("raed", &["read", "write"]), Some("read"));
        assert_eq!(suggest("wirte", &["read", "write"]), Some("write"));
        assert_eq!(suggest("rd", &["read", "write"]), None);
        assert_eq!(suggest("", &["read"]), None);
        assert_eq!(suggest(&"x".repeat(100), &["read"]), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("ab", "ba"), 1);
    }
}
