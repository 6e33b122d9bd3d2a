//! Property tests for the policy crate.
//!
//! The parser faces text written by people and, through `warden check`, by
//! anyone; the decision functions are trusted by the agent. So the
//! properties here are the promises those callers rely on:
//!
//! * parsing never panics, whatever the input, and every diagnostic points
//!   inside the text it complains about;
//! * the normalized text of a policy parses back to an equivalent policy,
//!   and printing is idempotent;
//! * pattern matching agrees with a naive, component-by-component reference
//!   written independently of the string-prefix implementation;
//! * the subtree questions agree with brute force over enumerated paths.
//!
//! Each property runs proptest's default 256 cases; set `PROPTEST_CASES` to
//! run more.

use proptest::prelude::*;
use warden_policy::{Access, Denial, PathPattern, Policy, Span, Verdict};

// ---------------------------------------------------------------------------
// Strategies

/// Words a policy is made of, valid and not, to build "token soup".
const VOCABULARY: &[&str] = &[
    "starting_uid",
    "starting_gid",
    "starting_dir",
    "path-allow",
    "path-deny",
    "net-allow",
    "path-alow",
    "read",
    "write",
    "unlink",
    "exec",
    "raed",
    "read,write",
    "outgoing",
    "incoming",
    "tcp",
    "udp",
    "unix-domain",
    "MYHOST_ADDR",
    "0",
    "0/0",
    "80",
    "65536",
    "1.2.3.4/8",
    "255.255.255.0",
    "::1",
    "fe80::1/64",
    "::1/200",
    "/",
    "/*",
    "/usr",
    "/usr/*",
    "/usr*",
    "/a/../b",
    "/a/./b//",
    "$SCRATCH",
    "$SCRATCH/*",
    "$SCRATCH*",
    "$HOME",
    "relative",
    "*",
    "/a*b",
    "#",
    "# comment",
    "4294967295",
    "1000",
    "é",
    "\u{0}",
    "\r",
    "\u{feff}",
    "",
];

/// One line of token soup: vocabulary words and random short strings,
/// joined by spaces or tabs.
fn soup_line() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        4 => proptest::sample::select(VOCABULARY).prop_map(str::to_string),
        1 => "[ -~]{0,6}",
        1 => any::<String>().prop_map(|s| s.chars().take(6).collect()),
    ];
    (
        proptest::collection::vec(word, 0..7),
        proptest::collection::vec(prop_oneof![Just(" "), Just("\t"), Just("  ")], 7),
    )
        .prop_map(|(words, seps)| {
            let mut line = String::new();
            for (w, sep) in words.iter().zip(seps.iter().cycle()) {
                line.push_str(w);
                line.push_str(sep);
            }
            line
        })
}

fn soup() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(soup_line(), 0..12),
        prop_oneof![Just("\n"), Just("\r\n")],
    )
        .prop_map(|(lines, nl)| lines.join(nl))
}

/// Path components from a tiny alphabet, so that patterns and paths
/// collide often enough to exercise matching.
const NAMES: &[&str] = &["a", "b", "ab", "abc", "ba"];

fn name() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(NAMES)
}

/// An absolute normalized path over `NAMES`, depth 0..=3 ("/" at depth 0).
fn path() -> impl Strategy<Value = String> {
    proptest::collection::vec(name(), 0..4).prop_map(|c| join(&c))
}

fn join(components: &[&str]) -> String {
    if components.is_empty() {
        "/".to_string()
    } else {
        components.iter().map(|c| format!("/{c}")).collect()
    }
}

/// Raw pattern text: components (with some "" and "." noise that
/// normalization must remove), then optionally a `*` with a partial name.
#[derive(Clone, Debug)]
struct RawPattern {
    components: Vec<&'static str>,
    /// None: exact. Some(""): `DIR/*`. Some(p): `DIR/p*`.
    partial: Option<&'static str>,
    text: String,
}

fn raw_pattern() -> impl Strategy<Value = RawPattern> {
    let noisy = prop_oneof![
        6 => name(),
        1 => Just(""),
        1 => Just("."),
    ];
    (
        proptest::collection::vec(noisy, 0..4),
        prop_oneof![
            2 => Just(None),
            1 => Just(Some("")),
            1 => proptest::sample::select(&["a", "ab", "b", "."][..]).prop_map(Some),
        ],
        any::<bool>(),
    )
        .prop_map(|(components, partial, trailing_slash)| {
            let mut text: String = components.iter().map(|c| format!("/{c}")).collect();
            match partial {
                Some(p) => {
                    text.push('/');
                    text.push_str(p);
                    text.push('*');
                }
                None if text.is_empty() || trailing_slash => text.push('/'),
                None => {}
            }
            RawPattern {
                components: components
                    .into_iter()
                    .filter(|c| !c.is_empty() && *c != ".")
                    .collect(),
                partial,
                text,
            }
        })
}

/// The naive reference: compare component lists, not strings.
fn reference_matches(p: &RawPattern, path: &str) -> bool {
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let k = p.components.len();
    let head_equal = comps.len() >= k && comps[..k] == p.components[..];
    match p.partial {
        None => head_equal && comps.len() == k,
        Some("") => head_equal && comps.len() > k,
        Some(partial) => head_equal && comps.len() > k && comps[k].starts_with(partial),
    }
}

/// A small valid policy over the `NAMES` alphabet, as text.
fn policy_text() -> impl Strategy<Value = String> {
    let path_line = (
        prop_oneof![
            Just("path-allow read"),
            Just("path-allow write"),
            Just("path-allow unlink"),
            Just("path-allow exec"),
            Just("path-deny"),
        ],
        proptest::collection::vec(raw_pattern(), 1..4),
    )
        .prop_map(|(head, pats)| {
            let texts: Vec<String> = pats.into_iter().map(|p| p.text).collect();
            format!("{head} {}", texts.join(" "))
        });
    let net_line = (
        prop_oneof![Just("outgoing"), Just("incoming")],
        prop_oneof![Just("tcp"), Just("udp")],
        prop_oneof![
            Just("0/0".to_string()),
            Just("MYHOST_ADDR".to_string()),
            (any::<[u8; 4]>(), 0u8..=32)
                .prop_map(|(a, m)| format!("{}.{}.{}.{}/{m}", a[0], a[1], a[2], a[3])),
            (any::<u128>(), 0u8..=128)
                .prop_map(|(a, m)| format!("{}/{m}", std::net::Ipv6Addr::from(a))),
        ],
        prop_oneof![
            any::<u16>().prop_map(|p| p.to_string()),
            (any::<u16>(), any::<u16>()).prop_map(|(p, m)| format!("{p}/{m}")),
        ],
    )
        .prop_map(|(d, proto, addr, port)| format!("net-allow {d} {proto} {addr} {port}"));
    let unix_line = (
        prop_oneof![Just("outgoing"), Just("incoming")],
        proptest::collection::vec(raw_pattern(), 1..3),
    )
        .prop_map(|(d, pats)| {
            let texts: Vec<String> = pats.into_iter().map(|p| p.text).collect();
            format!("net-allow {d} unix-domain {}", texts.join(" "))
        });
    let settings = (
        proptest::option::of(0u32..u32::MAX),
        proptest::option::of(0u32..u32::MAX),
        proptest::option::of(prop_oneof![
            path(),
            path().prop_map(|p| format!("$SCRATCH{}", p.trim_end_matches('/'))),
        ]),
    )
        .prop_map(|(uid, gid, dir)| {
            let mut s = String::new();
            if let Some(u) = uid {
                s.push_str(&format!("starting_uid {u}\n"));
            }
            if let Some(g) = gid {
                s.push_str(&format!("starting_gid {g}\n"));
            }
            if let Some(d) = dir {
                s.push_str(&format!("starting_dir {d}   # where to start\n"));
            }
            s
        });
    (
        settings,
        proptest::collection::vec(
            prop_oneof![6 => path_line, 1 => net_line, 1 => unix_line],
            0..10,
        ),
    )
        .prop_map(|(settings, lines)| format!("# generated\n{settings}{}\n", lines.join("\n")))
}

/// A small policy over `NAMES`, built directly.
fn small_policy() -> impl Strategy<Value = Policy> {
    let access = prop_oneof![
        Just(None),
        Just(Some(Access::Read)),
        Just(Some(Access::Write)),
        Just(Some(Access::Unlink)),
        Just(Some(Access::Exec)),
    ];
    proptest::collection::vec((access, raw_pattern()), 0..8).prop_map(|rules| {
        let mut p = Policy::default();
        for (i, (access, raw)) in rules.into_iter().enumerate() {
            let pattern = PathPattern::parse(&raw.text).expect("generated patterns are valid");
            p.add_rule(
                access,
                pattern,
                Span::new("gen", 1, u32::try_from(i).unwrap() + 1),
            );
        }
        p
    })
}

/// Every path strictly beneath `dir` down to two more levels, over `NAMES`
/// plus a name no rule mentions.
fn beneath(dir: &str) -> Vec<String> {
    let mut names: Vec<&str> = NAMES.to_vec();
    names.push("fresh");
    let base = if dir == "/" {
        String::new()
    } else {
        dir.to_string()
    };
    let mut out = Vec::new();
    for n1 in &names {
        let child = format!("{base}/{n1}");
        for n2 in &names {
            out.push(format!("{child}/{n2}"));
        }
        out.push(child);
    }
    out
}

// ---------------------------------------------------------------------------
// Properties

/// Checks that every diagnostic points at a real line and column of `text`.
fn diagnostics_in_range(text: &str, file: &str) -> Result<(), TestCaseError> {
    if let Err(diags) = Policy::parse(file, text) {
        prop_assert!(!diags.is_empty());
        let lines: Vec<&str> = text.split('\n').collect();
        for d in &diags {
            prop_assert_eq!(&*d.file, file);
            prop_assert!(d.line >= 1 && (d.line as usize) <= lines.len(), "{}", d);
            let len = lines[d.line as usize - 1].chars().count() as u32;
            prop_assert!(
                d.col >= 1 && d.col <= len + 1,
                "{} (line has {} chars)",
                d,
                len
            );
            prop_assert!(!d.message.is_empty());
            // Display is exactly "file:line:col: message".
            prop_assert_eq!(
                d.to_string(),
                format!("{}:{}:{}: {}", file, d.line, d.col, d.message)
            );
        }
    }
    Ok(())
}

/// For any policy that parses, printing and re-parsing is faithful.
fn round_trips(text: &str) -> Result<(), TestCaseError> {
    if let Ok(p) = Policy::parse("in", text) {
        let norm = p.to_normalized_string();
        let again = Policy::parse("norm", &norm)
            .map_err(|e| TestCaseError::fail(format!("normalized text failed: {e:?}\n{norm}")))?;
        prop_assert!(
            again.equivalent(&p),
            "not equivalent:\n{}\n---\n{}",
            text,
            norm
        );
        prop_assert_eq!(again.to_normalized_string(), norm);
    }
    Ok(())
}

proptest! {
    #[test]
    fn parser_never_panics_on_arbitrary_text(text in any::<String>()) {
        diagnostics_in_range(&text, "arb")?;
        round_trips(&text)?;
    }

    #[test]
    fn parser_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let text = String::from_utf8_lossy(&bytes);
        diagnostics_in_range(&text, "bytes")?;
    }

    #[test]
    fn parser_never_panics_on_token_soup(text in soup()) {
        diagnostics_in_range(&text, "soup")?;
        round_trips(&text)?;
    }

    #[test]
    fn generated_policies_parse_and_round_trip(text in policy_text()) {
        let p = Policy::parse("gen", &text);
        prop_assert!(p.is_ok(), "{:?}\n{}", p, text);
        round_trips(&text)?;
    }

    #[test]
    fn pattern_parse_never_panics(s in any::<String>()) {
        if let Ok(p) = PathPattern::parse(&s) {
            // Whatever parses prints back to itself.
            prop_assert_eq!(PathPattern::parse(&p.to_string()), Ok(p.clone()));
            let _ = p.matches(&s);
            let _ = p.expand_scratch("/tmp/s");
        }
    }

    #[test]
    fn pattern_matching_agrees_with_reference(raw in raw_pattern(), path in path()) {
        let pattern = PathPattern::parse(&raw.text)
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", raw.text)))?;
        prop_assert_eq!(
            pattern.matches(&path),
            reference_matches(&raw, &path),
            "pattern {} (normalized {}) vs path {}", raw.text, pattern, path
        );
        // Expanding $SCRATCH in front agrees with prefixing the path.
        let scratch_pattern = PathPattern::parse(&format!("$SCRATCH{}", raw.text))
            .map_err(TestCaseError::fail)?;
        let expanded = scratch_pattern.expand_scratch("/s/t");
        let moved = if path == "/" { "/s/t".to_string() } else { format!("/s/t{path}") };
        prop_assert_eq!(expanded.matches(&moved), pattern.matches(&path), "{}", expanded);
    }

    #[test]
    fn decisions_are_consistent(p in small_policy(), path in path()) {
        let rights = p.rights(&path);
        for a in Access::ALL {
            prop_assert_eq!(rights.contains(a), p.check(&path, a).is_allowed());
        }
        prop_assert_eq!(p.visible(&path).is_some(), !rights.is_empty());
        if let Some(id) = p.visible(&path) {
            let rule = p.rule(id);
            prop_assert!(rule.access.is_some_and(|a| rule.grants(&path, a)));
            prop_assert!(rule.pattern.matches(&path) || rule.pattern.is_tree_of(&path));
        }
        // Visible paths are traversable.
        if p.visible(&path).is_some() {
            prop_assert!(p.may_traverse(&path));
        }
    }

    #[test]
    fn subtree_questions_agree_with_brute_force(p in small_policy(), dir in path()) {
        let below = beneath(&dir);
        let dir_denied = matches!(p.check(&dir, Access::Read), Verdict::Denied(Denial::DeniedBy(_)));
        // subtree_rights: Some(s) means every path beneath has exactly s.
        if let Some(s) = p.subtree_rights(&dir) {
            for q in &below {
                prop_assert_eq!(p.rights(q), s, "{} beneath {}", q, dir);
            }
        }
        // new_entry_rights is a lower bound for every child.
        let fresh = p.new_entry_rights(&dir);
        let base = if dir == "/" { String::new() } else { dir.clone() };
        for n in NAMES.iter().chain(["fresh"].iter()) {
            let child = format!("{base}/{n}");
            prop_assert!(fresh.is_subset(p.rights(&child)), "{} vs {}", child, fresh);
        }
        // may_traverse is complete: if something beneath is visible and the
        // directory is not denied, the walk may pass.
        if !dir_denied && below.iter().any(|q| p.visible(q).is_some()) {
            prop_assert!(p.may_traverse(&dir), "{}", dir);
        }
        // ... and a denied directory is never traversed.
        if dir_denied {
            prop_assert!(!p.may_traverse(&dir));
        }
    }
}
