//! Path patterns: the one matching primitive of the file-system policy.
//!
//! Ostia's patterns are deliberately weak: a literal path, optionally followed
//! by a single `*` that means "every path starting with this text". There are
//! no globs in the middle, no character classes and no regular expressions.
//! That weakness is the point: a pattern is a *string prefix*, so deciding a
//! path is one `starts_with`, a policy can be reasoned about by reading it,
//! and questions such as "does this rule cover everything beneath /usr?"
//! (which the agent asks to hand whole subtrees to Landlock) have exact,
//! cheap answers.
//!
//! Because matching is textual, the *text* must be canonical on both sides.
//! Paths handed to [`PathPattern::matches`] are absolute and normalized by the
//! caller (the agent resolves them component by component); patterns are
//! normalized here when parsed: repeated `/` collapse, `.` components vanish,
//! a trailing `/` is dropped. A `..` component is refused rather than
//! resolved, since `/usr/../etc` would read as "under /usr" to a person while
//! meaning /etc.
//!
//! Note that `*` is textual, not per component: `/usr*` matches `/usr`,
//! `/usr/lib` *and* `/usrx`. Write `/usr/*` for "strictly beneath /usr". And
//! since directories are files, `/usr/*` does not match `/usr` itself; list
//! `/usr` too when the directory should be readable.
//!
//! The only variable is `$SCRATCH`, allowed as the first thing in a pattern;
//! it names the per-run scratch directory that exists only once warden runs.
//! Until [`PathPattern::expand_scratch`] replaces it, a pattern that uses it
//! begins with `$` and so can never match an absolute path: an unexpanded
//! policy fails closed.
//!
//! Patterns also refuse whitespace and `#`. Such characters cannot appear in a
//! policy file (they separate tokens and start comments), and refusing them in
//! [`PathPattern::parse`] too means that every pattern, even one built from a
//! command-line flag, prints back as policy text that parses to itself.

use std::fmt;

/// The scratch-directory variable, the only `$` variable patterns know.
pub(crate) const SCRATCH_VAR: &str = "$SCRATCH";

/// Longest pattern accepted, in bytes: Linux's `PATH_MAX` less the NUL. No
/// real path is longer, and the bound keeps hostile input cheap.
const MAX_PATTERN_LEN: usize = 4095;

/// A path pattern: an absolute literal path, optionally a prefix (written
/// with a trailing `*`), optionally rooted at `$SCRATCH`.
///
/// Displays as the canonical policy text, which [`PathPattern::parse`] turns
/// back into an equal pattern.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct PathPattern {
    /// The normalized literal text, without the `*`. Ends in `/` only for
    /// the root and for prefix patterns written as `DIR/*`.
    literal: String,
    /// Whether the pattern was written with a trailing `*`.
    prefix: bool,
}

/// What a suggestion says of a path no policy line can name exactly ([`PathPattern::names_exactly`]).
pub const UNNAMEABLE: &str = "this path cannot be named exactly in a policy (it contains \
     whitespace, `#`, `*`, `$` or a control character); a prefix pattern ending in `*` can cover it";

impl PathPattern {
    /// Whether a policy line can name `path` exactly: it parses as itself, with no `*`.
    pub fn names_exactly(path: &str) -> bool {
        PathPattern::parse(path).is_ok_and(|p| !p.is_prefix() && p.literal() == path)
    }

    /// Parses and normalizes one pattern.
    ///
    /// The error is a sentence fragment for the user (the parser prefixes
    /// nothing and adds the position), e.g. "`..` is not allowed in a path;
    /// write the path without it".
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.is_empty() {
            return Err("a path pattern may not be empty".to_string());
        }
        check_chars(s)?;
        // Split off the one `*` a pattern may have; any other is an error.
        let (body, prefix) = match s.strip_suffix('*') {
            Some(body) => (body, true),
            None => (s, false),
        };
        if body.contains('*') {
            return Err(format!(
                "{} has a `*` before its end; `*` may only be the last character \
                 of a pattern, where it means \"every path that starts with this text\"",
                quote(s)
            ));
        }
        let literal = normalize(s, body, prefix)?;
        if literal.len() > MAX_PATTERN_LEN {
            return Err(format!(
                "this pattern is {} bytes long, more than the longest path Linux accepts ({MAX_PATTERN_LEN} bytes)",
                literal.len()
            ));
        }
        Ok(PathPattern { literal, prefix })
    }

    /// The normalized literal text, without the trailing `*`.
    pub fn literal(&self) -> &str {
        &self.literal
    }

    /// Whether this is a prefix pattern (written with a trailing `*`).
    pub fn is_prefix(&self) -> bool {
        self.prefix
    }

    /// Whether `path` (absolute and normalized, which the caller guarantees)
    /// matches this pattern.
    ///
    /// A prefix pattern ending in `/` (`DIR/*`) matches only paths strictly
    /// beneath `DIR`; that matters for the root alone, where it keeps `/*`
    /// from granting `/` itself, just as `/usr/*` does not grant `/usr`.
    pub fn matches(&self, path: &str) -> bool {
        if self.prefix {
            path.starts_with(&self.literal)
                && (!self.literal.ends_with('/') || path.len() > self.literal.len())
        } else {
            path == self.literal
        }
    }

    /// Whether this is a tree, `D/*`, and `path` is `D` itself: the directory whose every name
    /// the tree's rule gives. Reading `D/*` lets `D` be listed and looked at too
    /// ([`crate::Policy::check`]): the listing shows names each of which the rule lets the
    /// program open anyway, and a Landlock rule on `D`, which is how the kernel holds `D/*`,
    /// lists `D` itself.
    pub fn is_tree_of(&self, path: &str) -> bool {
        self.prefix
            && self
                .literal
                .strip_suffix('/')
                .is_some_and(|d| d == path || (d.is_empty() && path == "/"))
    }

    /// Whether the pattern is about `/proc/self` or `/proc/thread-self` (or beneath): paths
    /// that name a different process to each caller, which the agent translates per caller and
    /// Landlock cannot name.
    pub fn per_process(&self) -> bool {
        ["/proc/self", "/proc/thread-self"]
            .iter()
            .any(|p| self.literal.starts_with(p))
    }

    /// Whether the pattern is rooted at `$SCRATCH`.
    pub fn uses_scratch(&self) -> bool {
        self.literal.starts_with(SCRATCH_VAR)
    }

    /// The pattern with `$SCRATCH` replaced by `scratch`, an absolute
    /// normalized directory path. Patterns without `$SCRATCH` come back
    /// unchanged.
    pub fn expand_scratch(&self, scratch: &str) -> PathPattern {
        let Some(rest) = self.literal.strip_prefix(SCRATCH_VAR) else {
            return self.clone();
        };
        // Be lenient about a trailing slash on the directory; "/" stays "/".
        let dir = match scratch.trim_end_matches('/') {
            "" => "/",
            d => d,
        };
        // `rest` is empty or starts with '/', so joining is concatenation,
        // except that the root must not produce "//".
        let literal = if rest.is_empty() {
            dir.to_string()
        } else if dir == "/" {
            rest.to_string()
        } else {
            format!("{dir}{rest}")
        };
        PathPattern {
            literal,
            prefix: self.prefix,
        }
    }

    // The three questions below are about the paths *strictly beneath* a
    // directory. They are what lets the agent decide about whole subtrees
    // (traversal, files not created yet, Landlock grants) without
    // enumerating paths. `dir` is absolute and normalized.

    /// Whether every path strictly beneath `dir` matches.
    pub(crate) fn matches_all_beneath(&self, dir: &str) -> bool {
        // Every path beneath `dir` starts with `base`; it matches exactly
        // when the literal is a prefix of `base`. (A literal ending in '/'
        // is then at most `base`, and paths beneath are strictly longer.)
        self.prefix && ChildBase(dir).starts_with(&self.literal)
    }

    /// Whether at least one path strictly beneath `dir` matches.
    pub fn matches_some_beneath(&self, dir: &str) -> bool {
        let base = ChildBase(dir);
        if self.prefix {
            // Either the pattern covers `base` entirely, or its literal sits
            // inside the subtree and `literal + "x"` is a path beneath.
            base.starts_with(&self.literal) || base.begins(&self.literal).is_some()
        } else {
            base.begins(&self.literal)
                .is_some_and(|rest| !rest.is_empty())
        }
    }

    /// Whether at least one direct child of `dir` (`dir/NAME`, NAME without
    /// `/`) matches.
    pub(crate) fn matches_some_child(&self, dir: &str) -> bool {
        let base = ChildBase(dir);
        if self.prefix && base.starts_with(&self.literal) {
            return true;
        }
        match base.begins(&self.literal) {
            // Exact: the literal must be one more component.
            Some(rest) if !self.prefix => !rest.is_empty() && !rest.contains('/'),
            // Prefix: `base + rest + "x"` is a child if `rest` has no '/'.
            Some(rest) => !rest.contains('/'),
            None => false,
        }
    }
}

impl fmt::Display for PathPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.literal)?;
        if self.prefix {
            f.write_str("*")?;
        }
        Ok(())
    }
}

/// The text every path strictly beneath a directory starts with: `dir + "/"`, or `dir` when it
/// ends with `/` (the root). Compared in place, never built: the planners ask it of every rule
/// for every tree.
#[derive(Clone, Copy)]
struct ChildBase<'a>(&'a str);

impl ChildBase<'_> {
    /// Whether the base starts with `s`.
    fn starts_with(self, s: &str) -> bool {
        let dir = self.0;
        if s.len() <= dir.len() {
            dir.starts_with(s)
        } else {
            !dir.ends_with('/')
                && s.len() == dir.len() + 1
                && s.starts_with(dir)
                && s.ends_with('/')
        }
    }

    /// What follows the base in `s`, when `s` starts with it.
    fn begins(self, s: &str) -> Option<&str> {
        let rest = s.strip_prefix(self.0)?;
        if self.0.ends_with('/') {
            Some(rest)
        } else {
            rest.strip_prefix('/')
        }
    }
}

/// Shows user text in backticks, escaped as [`crate::escape`] does, so that an error message
/// never writes raw control bytes to a terminal.
pub(crate) fn quote(s: &str) -> String {
    format!("`{}`", crate::escape::escape(s))
}

/// Refuses characters that cannot be part of a pattern: control characters
/// (NUL cannot be in a path at all, the others are almost certainly
/// mistakes), and whitespace and `#`, which policy text cannot express.
fn check_chars(s: &str) -> Result<(), String> {
    for c in s.chars() {
        if c.is_control() {
            return Err(format!(
                "{} contains the control character {}, which a path pattern may not contain",
                quote(s),
                c.escape_unicode()
            ));
        }
        if c.is_whitespace() {
            return Err(format!(
                "{} contains whitespace, which separates words in a policy; \
                 a pattern cannot contain it (a prefix pattern such as `/dir/name*` can cover such names)",
                quote(s)
            ));
        }
        if c == '#' {
            return Err(format!(
                "{} contains `#`, which starts a comment in a policy; \
                 a pattern cannot contain it (a prefix pattern such as `/dir/name*` can cover such names)",
                quote(s)
            ));
        }
    }
    Ok(())
}

/// Normalizes the pattern text `body` (the whole pattern `whole` without its
/// `*`) into the stored literal.
fn normalize(whole: &str, body: &str, prefix: bool) -> Result<String, String> {
    // Find the root: "" for an absolute path, "$SCRATCH" for the scratch dir.
    let (root, rest) = if let Some(rest) = body.strip_prefix(SCRATCH_VAR) {
        if !rest.is_empty() && !rest.starts_with('/') {
            return Err(unknown_variable(body));
        }
        if rest.is_empty() && prefix {
            // `$SCRATCH*` would expand to `/tmp/warden-123*`, which also
            // matches sibling directories such as `/tmp/warden-1234`.
            return Err("`$SCRATCH*` would also match directories next to the scratch \
                 directory; write `$SCRATCH/*` for its contents (and `$SCRATCH` for the directory itself)"
                .to_string());
        }
        (SCRATCH_VAR, rest)
    } else if body.starts_with('/') {
        ("", body)
    } else if body.starts_with('$') {
        return Err(unknown_variable(body));
    } else if body.starts_with('"') || body.starts_with('\'') {
        return Err(format!(
            "{} starts with a quote, but policy text has no quoting; write the path without quotes",
            quote(whole)
        ));
    } else if body.starts_with('~') {
        return Err(format!(
            "{} is not an absolute path: `~` is not expanded in a policy; write the full path, such as /home/NAME/...",
            quote(whole)
        ));
    } else {
        return Err(format!(
            "{} is not an absolute path; a pattern must start with `/` or `$SCRATCH`",
            quote(whole)
        ));
    };
    if rest.contains('$') {
        return Err(format!(
            "{} uses `$` inside the path; the only variable is `$SCRATCH`, and only at the start of a pattern",
            quote(whole)
        ));
    }

    // With a `*` and no '/' right before it, the last segment is a partial
    // name ("/usr/li*"): kept verbatim, since even "." or ".." there are just
    // the first characters of longer names. Everything else is components.
    let (dirs, partial) = if prefix && !rest.is_empty() && !rest.ends_with('/') {
        match rest.rfind('/') {
            Some(i) => (&rest[..i], Some(&rest[i + 1..])),
            None => ("", Some(rest)),
        }
    } else {
        (rest, None)
    };

    let mut out = String::with_capacity(body.len());
    out.push_str(root);
    for comp in dirs.split('/') {
        match comp {
            "" | "." => {}
            ".." => {
                return Err(format!(
                    "{} contains a `..` component; write the path without it \
                     (patterns are matched as text, so `..` would not mean what it seems)",
                    quote(whole)
                ))
            }
            c => {
                out.push('/');
                out.push_str(c);
            }
        }
    }
    match partial {
        Some(name) => {
            out.push('/');
            out.push_str(name);
        }
        // `DIR/*` keeps its slash so that it means "strictly beneath DIR";
        // an exact pattern drops it, except the root itself.
        None if prefix || out.is_empty() => out.push('/'),
        None => {}
    }
    Ok(out)
}

fn unknown_variable(body: &str) -> String {
    let name: String = body.chars().take_while(|&c| c != '/').collect();
    format!(
        "{} is not a known variable; the only variable is `$SCRATCH` (the sandbox's scratch directory)",
        quote(&name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> PathPattern {
        PathPattern::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn err(s: &str) -> String {
        PathPattern::parse(s).expect_err(s)
    }

    #[test]
    fn normalization() {
        let cases = [
            ("/", "/", false),
            ("//", "/", false),
            ("/.", "/", false),
            ("/usr", "/usr", false),
            ("/usr/", "/usr", false),
            ("//usr//bin/", "/usr/bin", false),
            ("/usr/./bin/.", "/usr/bin", false),
            ("/usr/*", "/usr/", true),
            ("/usr//*", "/usr/", true),
            ("/usr/./*", "/usr/", true),
            ("/usr*", "/usr", true),
            ("/usr/li*", "/usr/li", true),
            ("//usr/li*", "/usr/li", true),
            ("/usr/.*", "/usr/.", true),
            ("/usr/..*", "/usr/..", true),
            ("/*", "/", true),
            ("/a*", "/a", true),
            ("$SCRATCH", "$SCRATCH", false),
            ("$SCRATCH/", "$SCRATCH", false),
            ("$SCRATCH/*", "$SCRATCH/", true),
            ("$SCRATCH//a/./b", "$SCRATCH/a/b", false),
            ("$SCRATCH/a*", "$SCRATCH/a", true),
            ("/héllo/wörld", "/héllo/wörld", false),
        ];
        for (input, literal, prefix) in cases {
            let pat = p(input);
            assert_eq!(pat.literal(), literal, "{input}");
            assert_eq!(pat.is_prefix(), prefix, "{input}");
            // Display re-parses to the same pattern.
            assert_eq!(p(&pat.to_string()), pat, "{input}");
        }
    }

    #[test]
    fn errors() {
        assert!(err("").contains("empty"));
        assert!(err("usr/bin").contains("not an absolute path"));
        assert!(err("*").contains("not an absolute path"));
        assert!(err("~/x").contains("`~` is not expanded"));
        assert!(err("\"/x\"").contains("no quoting"));
        assert!(err("'/x'").contains("no quoting"));
        assert!(err("/usr/*/bin").contains("may only be the last character"));
        assert!(err("/usr/**").contains("may only be the last character"));
        assert!(err("/usr/../etc").contains("`..`"));
        assert!(err("/..").contains("`..`"));
        assert!(err("/a/../*").contains("`..`"));
        assert!(err("/a\0b").contains("control character"));
        assert!(err("/a\u{1b}b").contains("\\u{1b}"));
        assert!(err("/a b").contains("whitespace"));
        assert!(err("/a#b").contains("comment"));
        assert!(err("$HOME/x").contains("`$HOME` is not a known variable"));
        assert!(err("$SCRATCHY").contains("`$SCRATCHY` is not a known variable"));
        assert!(err("$SCRATCH*").contains("`$SCRATCH/*`"));
        assert!(err("/home/$USER").contains("only variable"));
        assert!(err(&format!("/{}", "a".repeat(5000))).contains("longest path"));
    }

    #[test]
    fn exact_matching() {
        let pat = p("/etc/passwd");
        assert!(pat.matches("/etc/passwd"));
        assert!(!pat.matches("/etc/passwd2"));
        assert!(!pat.matches("/etc/passwd/x"));
        assert!(!pat.matches("/etc"));
        let root = p("/");
        assert!(root.matches("/"));
        assert!(!root.matches("/etc"));
    }

    #[test]
    fn prefix_matching() {
        let dir = p("/usr/*");
        assert!(dir.matches("/usr/bin"));
        assert!(dir.matches("/usr/bin/ls"));
        assert!(!dir.matches("/usr"));
        assert!(!dir.matches("/usrx"));
        let text = p("/usr*");
        assert!(text.matches("/usr"));
        assert!(text.matches("/usrx"));
        assert!(text.matches("/usr/lib"));
        assert!(!text.matches("/us"));
        // `/*` covers everything except the root itself.
        let all = p("/*");
        assert!(all.matches("/etc"));
        assert!(all.matches("/a/b/c"));
        assert!(!all.matches("/"));
        let partial = p("/etc/ssh/ssh_host_*");
        assert!(partial.matches("/etc/ssh/ssh_host_rsa_key"));
        assert!(!partial.matches("/etc/ssh/sshd_config"));
    }

    #[test]
    fn scratch() {
        let pat = p("$SCRATCH/*");
        assert!(pat.uses_scratch());
        // Unexpanded, it matches no absolute path (fails closed).
        assert!(!pat.matches("/tmp/x"));
        let e = pat.expand_scratch("/tmp/w-1");
        assert_eq!(e.to_string(), "/tmp/w-1/*");
        assert!(e.matches("/tmp/w-1/f"));
        assert!(!e.matches("/tmp/w-1"));
        assert!(!e.matches("/tmp/w-12"));
        assert!(!e.uses_scratch());
        assert_eq!(
            p("$SCRATCH").expand_scratch("/tmp/w-1/").to_string(),
            "/tmp/w-1"
        );
        assert_eq!(p("$SCRATCH/a").expand_scratch("/").to_string(), "/a");
        assert_eq!(p("$SCRATCH/*").expand_scratch("/").to_string(), "/*");
        assert_eq!(p("$SCRATCH").expand_scratch("/").to_string(), "/");
        assert_eq!(p("/usr/*").expand_scratch("/tmp/x"), p("/usr/*"));
        assert!(!p("/usr").uses_scratch());
    }

    #[test]
    fn subtree_questions() {
        let usr_all = p("/usr/*");
        assert!(usr_all.matches_all_beneath("/usr"));
        assert!(usr_all.matches_all_beneath("/usr/lib"));
        assert!(!usr_all.matches_all_beneath("/"));
        assert!(usr_all.matches_some_beneath("/"));
        assert!(usr_all.matches_some_child("/usr"));
        assert!(!usr_all.matches_some_child("/"));

        let text = p("/usr*");
        assert!(text.matches_all_beneath("/usr"));
        assert!(!text.matches_all_beneath("/"));
        assert!(text.matches_some_child("/"));

        let exact = p("/home/app/x");
        assert!(exact.matches_some_beneath("/"));
        assert!(exact.matches_some_beneath("/home"));
        assert!(exact.matches_some_beneath("/home/app"));
        assert!(!exact.matches_some_beneath("/home/app/x"));
        assert!(!exact.matches_some_beneath("/home/ap"));
        assert!(exact.matches_some_child("/home/app"));
        assert!(!exact.matches_some_child("/home"));
        assert!(!exact.matches_all_beneath("/home"));

        let root = p("/");
        assert!(!root.matches_some_beneath("/"));
        assert!(!root.matches_some_child("/"));
        let all = p("/*");
        assert!(all.matches_all_beneath("/"));
        assert!(all.matches_some_child("/"));

        let deep_prefix = p("/a/b/c*");
        assert!(deep_prefix.matches_some_beneath("/a"));
        assert!(!deep_prefix.matches_some_child("/a"));
        assert!(deep_prefix.matches_some_child("/a/b"));
    }

    #[test]
    fn quote_escapes_controls() {
        assert_eq!(quote("a\nb"), "`a\\nb`");
        assert_eq!(quote("x"), "`x`");
    }

    proptest::proptest! {
        /// The base compared in place answers as the text `dir + "/"` (or `dir` ending in `/`)
        /// does, for paths and patterns made of a few components.
        #[test]
        fn child_base_compares_as_its_text(
            dir in "/|(/[ab]{0,2}){1,3}/?",
            s in "(/?[ab]{0,2}){0,4}/?",
        ) {
            let text = if dir.ends_with('/') { dir.clone() } else { format!("{dir}/") };
            let base = ChildBase(&dir);
            proptest::prop_assert_eq!(base.starts_with(&s), text.starts_with(&s));
            proptest::prop_assert_eq!(base.begins(&s), s.strip_prefix(text.as_str()));
        }
    }
}
