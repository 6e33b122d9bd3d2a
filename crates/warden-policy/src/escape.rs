//! Names that came from a sandbox, made safe to print on a terminal.
//!
//! A sandboxed program chooses the names of the files it creates, its own `argv` and its thread
//! name. A name can hold terminal escape sequences (`ESC ] 0 ; ... BEL` retitles the window,
//! `ESC [ 2 J` clears it, some terminals read U+009B as CSI), newlines that forge extra output
//! lines, or bytes that are not UTF-8 at all. Everything warden prints for a human (`warden
//! inspect`, `warden ps`, the `-v` denial lines, error messages) passes such a name through
//! [`escape`] first. JSON output needs no help: its encoder escapes control characters itself.
//!
//! The rendering, the same everywhere:
//!
//! * printable ASCII and printable non-ASCII characters stand for themselves;
//! * `\` is shown as `\\`, so that every escape below is unambiguous;
//! * newline, tab and carriage return as `\n`, `\t`, `\r`; every other C0 control byte and DEL
//!   as `\xNN` (ESC is `\x1b`);
//! * C1 controls (U+0080 to U+009F), the bidirectional-text controls (U+200E, U+200F,
//!   U+202A to U+202E, U+2066 to U+2069: they reorder what the operator reads) and the line and
//!   paragraph separators (U+2028, U+2029) as `\u{NN}`;
//! * a byte that is not part of valid UTF-8 as `\xNN`.
//!
//! The output never contains a control character, and the original bytes can be recovered from
//! it (the escapes are those of Rust's and bash's `$'...'` strings, give or take the braces).

use std::borrow::Cow;
use std::fmt::Write;

/// `name` as it may be shown on a terminal: unchanged (and not copied) when it is printable
/// UTF-8 without a backslash, escaped as the [module](self) says otherwise.
///
/// ```
/// use warden_policy::escape::escape;
///
/// assert_eq!(escape("/tmp/report.csv"), "/tmp/report.csv");
/// assert_eq!(escape("/tmp/\x1b]0;pwned\x07\n"), "/tmp/\\x1b]0;pwned\\x07\\n");
/// assert_eq!(escape(b"caf\xc3\xa9 \xff"), "café \\xff");
/// assert_eq!(escape("\u{9b}31m"), "\\u{9b}31m");
/// ```
pub fn escape<T: AsRef<[u8]> + ?Sized>(name: &T) -> Cow<'_, str> {
    let bytes = name.as_ref();
    if let Ok(text) = std::str::from_utf8(bytes) {
        if !text.chars().any(needs_escape) {
            return Cow::Borrowed(text);
        }
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            push_char(&mut out, c);
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    Cow::Owned(out)
}

/// Whether `c` is shown as an escape rather than as itself.
fn needs_escape(c: char) -> bool {
    c == '\\'
        || c.is_control()
        || matches!(
            c,
            '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
                | '\u{2028}' | '\u{2029}'
        )
}

fn push_char(out: &mut String, c: char) {
    match c {
        '\\' => out.push_str("\\\\"),
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        '\0'..='\u{1f}' | '\u{7f}' => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c if needs_escape(c) => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
        c => out.push(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inverse of [`escape`], to show that nothing is lost or ambiguous.
    fn unescape(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let mut rest = s;
        while let Some(c) = rest.chars().next() {
            rest = &rest[c.len_utf8()..];
            if c != '\\' {
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                continue;
            }
            let e = rest.chars().next().expect("a complete escape");
            rest = &rest[1..];
            match e {
                '\\' => out.push(b'\\'),
                'n' => out.push(b'\n'),
                't' => out.push(b'\t'),
                'r' => out.push(b'\r'),
                'x' => {
                    out.push(u8::from_str_radix(&rest[..2], 16).unwrap());
                    rest = &rest[2..];
                }
                'u' => {
                    let end = rest.find('}').unwrap();
                    let c = char::from_u32(u32::from_str_radix(&rest[1..end], 16).unwrap());
                    out.extend_from_slice(c.unwrap().encode_utf8(&mut [0; 4]).as_bytes());
                    rest = &rest[end + 1..];
                }
                other => panic!("unknown escape \\{other} in {s:?}"),
            }
        }
        out
    }

    #[test]
    fn plain_names_are_borrowed_unchanged() {
        for name in [
            "/usr/bin/sh",
            "",
            "a b",
            "/tmp/日本語/ファイル",
            "emoji 🦀",
            "~!@#$%^&*()",
        ] {
            assert!(
                matches!(escape(name), Cow::Borrowed(n) if n == name),
                "{name}"
            );
        }
    }

    #[test]
    fn terminal_sequences_and_line_breaks_are_escaped() {
        assert_eq!(escape("a\x1b[2Jb"), "a\\x1b[2Jb");
        assert_eq!(escape("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
        assert_eq!(escape("l1\nl2\r\tx"), "l1\\nl2\\r\\tx");
        assert_eq!(escape("\0\x01\x7f"), "\\x00\\x01\\x7f");
        assert_eq!(
            escape("\u{80}\u{9b}\u{9f}\u{a0}"),
            "\\u{80}\\u{9b}\\u{9f}\u{a0}"
        );
        assert_eq!(escape("a\u{202e}b\u{2028}"), "a\\u{202e}b\\u{2028}");
        assert_eq!(escape("back\\slash"), "back\\\\slash");
        // A name that spells an escape is not confused with one.
        assert_eq!(escape("\\x1b"), "\\\\x1b");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_shown_as_bytes() {
        assert_eq!(escape(b"\xff\xfe"), "\\xff\\xfe");
        // A lone C1 byte is not UTF-8 either; the two-byte U+009B is a character.
        assert_eq!(escape(b"\x9b"), "\\x9b");
        assert_eq!(escape(b"\xc2\x9b"), "\\u{9b}");
        // A truncated sequence, then valid text again.
        assert_eq!(escape(b"\xe6\x97ok"), "\\xe6\\x97ok");
    }

    #[test]
    fn round_trips() {
        for name in [
            &b"a\x1b[0m\\x\n"[..],
            b"\xc2\x9b\xff",
            b"\\u{41}",
            b"\xe2\x80\xae",
        ] {
            assert_eq!(unescape(&escape(name)), name, "{name:?}");
        }
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn interesting_byte() -> impl Strategy<Value = u8> {
            prop_oneof![
                any::<u8>(),
                Just(0x1b),
                Just(b'\\'),
                Just(b'\n'),
                Just(0xc2),
                Just(0x9b),
                Just(b'a'),
            ]
        }

        proptest! {
            #[test]
            fn no_control_character_survives(bytes in prop::collection::vec(interesting_byte(), 0..64)) {
                let shown = escape(&bytes);
                prop_assert!(!shown.contains(|c: char| c != '\\' && needs_escape(c)), "{shown:?}");
                prop_assert!(!shown.chars().any(char::is_control), "{shown:?}");
                prop_assert!(!shown.bytes().any(|b| b < 0x20 || b == 0x7f), "{shown:?}");
            }

            #[test]
            fn nothing_is_lost(bytes in prop::collection::vec(interesting_byte(), 0..64)) {
                prop_assert_eq!(unescape(&escape(&bytes)), bytes);
            }

            #[test]
            fn any_text_round_trips(text in any::<String>()) {
                let shown = escape(&text);
                prop_assert!(!shown.chars().any(char::is_control), "{shown:?}");
                prop_assert_eq!(unescape(&shown), text.as_bytes());
            }

            #[test]
            fn printable_text_without_backslash_is_unchanged(text in "[ -\\[\\]-~é日🦀]{0,40}") {
                prop_assert_eq!(escape(&text), text.as_str());
            }
        }
    }
}
