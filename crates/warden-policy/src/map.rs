//! `path-map`: what appears at a place in the sandbox's view other than the host's own tree at
//! the same path.
//!
//! ```text
//! path-map HOST SANDBOX [ro|rw]   the host's HOST appears at SANDBOX (read-only by default)
//! path-map HOST SANDBOX copy      a private copy: HOST appears at SANDBOX, and writes land in an
//!                                 overlay that never touches the host (`warden diff` lists them)
//! path-map tmpfs SANDBOX          an empty, private tmpfs at SANDBOX
//! ```
//!
//! A map only says *what is there*. Every path rule is written in the sandbox's paths (the
//! paths the program sees and names), so `path-allow read /src/*` is what lets the program read
//! through `path-map /home/me/proj /src`; the map's `ro` is a ceiling the kernel enforces on top
//! (`EROFS`), never a grant. A map needs the sandbox's own view (it is one mount in it).

use crate::diag::Span;
use crate::pattern::quote;
use std::fmt;

/// What appears at a map's sandbox path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MapSource {
    /// The host's path (absolute, normalized).
    Host(String),
    /// An empty tmpfs of the sandbox's own.
    Tmpfs,
}

/// What writes through a map do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MapMode {
    /// Refused by the kernel (`EROFS`): a read-only mount.
    ReadOnly,
    /// Reach the host's files (as far as the rules allow).
    ReadWrite,
    /// Land in a private overlay of the run's; the host's tree is never written.
    Copy,
}

impl MapMode {
    /// The policy word.
    pub fn name(self) -> &'static str {
        match self {
            MapMode::ReadOnly => "ro",
            MapMode::ReadWrite => "rw",
            MapMode::Copy => "copy",
        }
    }
}

/// One `path-map` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathMap {
    /// What appears.
    pub source: MapSource,
    /// Where, in the sandbox (absolute, normalized, never `/`, `/proc` or `/dev`; beneath `/dev`
    /// only a tmpfs, as `/dev/shm`).
    pub sandbox: String,
    /// What writes do (a tmpfs is always writable, as far as the rules allow).
    pub mode: MapMode,
    /// Where it was written (its first argument).
    pub span: Span,
}

impl fmt::Display for PathMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let esc = |p: &str| crate::escape::escape(p).into_owned();
        match &self.source {
            MapSource::Tmpfs => write!(f, "path-map tmpfs {}", esc(&self.sandbox)),
            MapSource::Host(h) => write!(
                f,
                "path-map {} {} {}",
                esc(h),
                esc(&self.sandbox),
                self.mode.name()
            ),
        }
    }
}

/// `path` is `dir` or lies beneath it (both absolute and normalized).
pub fn at_or_beneath(path: &str, dir: &str) -> bool {
    let dir = dir.trim_end_matches('/');
    path == dir
        || dir.is_empty()
        || (path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/')
}

/// Checks one path argument of `path-map`: absolute, no `*`, no `$SCRATCH`; returns it
/// normalized. `what` names the argument in the message.
pub(crate) fn map_path(text: &str, what: &str) -> Result<String, String> {
    if text.starts_with('$') {
        return Err(format!(
            "the {what} of `path-map` is a fixed path; {} is not (the scratch directory is \
             already the sandbox's own: use it directly)",
            quote(text)
        ));
    }
    let pattern = crate::PathPattern::parse(text)?;
    if pattern.is_prefix() {
        return Err(format!(
            "the {what} of `path-map` is one path, not a pattern: remove the `*` from {}",
            quote(text)
        ));
    }
    Ok(pattern.literal().trim_end_matches('/').to_string())
}

/// Why `sandbox` cannot be a map's sandbox path for a map of `source`, if it cannot. `/dev` is
/// the sandbox's own: only a private tmpfs may appear beneath it (`/dev/shm`), never a tree of
/// the host's.
pub(crate) fn bad_sandbox_path(sandbox: &str, source: &MapSource) -> Option<String> {
    if sandbox.is_empty() || sandbox == "/" {
        return Some(
            "a map cannot replace the sandbox's `/`: map a directory beneath it".to_string(),
        );
    }
    let own = |dir: &str| {
        format!("{dir} is the sandbox's own (built from the path rules): it cannot be mapped")
    };
    if at_or_beneath(sandbox, "/proc") {
        return Some(own("/proc"));
    }
    if sandbox == "/dev" {
        return Some(own("/dev"));
    }
    if at_or_beneath(sandbox, "/dev") && *source != MapSource::Tmpfs {
        return Some(
            "/dev is the sandbox's own: only a private tmpfs can appear beneath it, as in \
             `path-map tmpfs /dev/shm`"
                .to_string(),
        );
    }
    None
}

/// What the host must have for the maps of a policy, checked by `warden check` and before a
/// run: each map's host path exists (a directory for `copy`), and each map's sandbox path can
/// be made without writing to the host (see [`crate::view::view_plan`]). `node` is the host's
/// `stat` (a final symlink followed, as the kernel follows it when it clones the tree).
pub fn host_problems(
    maps: &[PathMap],
    node: &dyn Fn(&str) -> crate::view::Node,
) -> Vec<(Span, String)> {
    use crate::view::Node;
    let mut out = Vec::new();
    for m in maps {
        let MapSource::Host(host) = &m.source else {
            continue;
        };
        let kind = node(host);
        let esc = crate::escape::escape(host);
        match kind {
            Node::Missing | Node::Symlink(_) => out.push((
                m.span.clone(),
                format!("{m}: {esc} does not exist on this host (nothing to map)"),
            )),
            Node::Device => out.push((
                m.span.clone(),
                format!("{m}: {esc} is a device; only files and directories can be mapped"),
            )),
            Node::File if m.mode == MapMode::Copy => out.push((
                m.span.clone(),
                format!("{m}: {esc} is a file; a private copy is of a directory"),
            )),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Policy;

    fn maps(text: &str) -> Vec<PathMap> {
        Policy::parse("t", text).unwrap().maps().to_vec()
    }

    fn error(text: &str) -> String {
        match Policy::parse("t", text) {
            Ok(p) => panic!("expected an error, got {p:?}"),
            Err(d) => d
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    #[test]
    fn the_three_kinds_parse() {
        let m = maps(
            "path-map /home/me/proj /src\npath-map /data/ /in rw\npath-map /x/y /y copy\n\
             path-map tmpfs /tmp\n",
        );
        assert_eq!(m.len(), 4);
        assert_eq!(m[0].source, MapSource::Host("/home/me/proj".into()));
        assert_eq!(
            (m[0].sandbox.as_str(), m[0].mode),
            ("/src", MapMode::ReadOnly)
        );
        assert_eq!(
            (m[1].sandbox.as_str(), m[1].mode),
            ("/in", MapMode::ReadWrite)
        );
        assert_eq!(m[1].source, MapSource::Host("/data".into()));
        assert_eq!(m[2].mode, MapMode::Copy);
        assert_eq!(m[3].source, MapSource::Tmpfs);
        assert_eq!(m[3].to_string(), "path-map tmpfs /tmp");
        assert_eq!(m[2].to_string(), "path-map /x/y /y copy");
    }

    #[test]
    fn mistakes_are_explained() {
        assert!(error("path-map /a\n").contains("needs"));
        assert!(error("path-map /a /b rww\n").contains("did you mean `rw`"));
        assert!(error("path-map /a /b ro extra\n").contains("extra"));
        assert!(error("path-map /a* /b\n").contains("not a pattern"));
        assert!(error("path-map /a $SCRATCH/b\n").contains("fixed path"));
        assert!(error("path-map /a /\n").contains("cannot replace"));
        assert!(error("path-map /a /proc/x\n").contains("/proc is the sandbox's own"));
        assert!(error("path-map tmpfs /dev\n").contains("/dev is the sandbox's own"));
        assert!(error("path-map /a /dev/shm\n").contains("only a private tmpfs"));
        assert_eq!(maps("path-map tmpfs /dev/shm\n")[0].sandbox, "/dev/shm");
        assert!(error("path-map tmpfs /tmp ro\n").contains("tmpfs"));
        assert!(error("path-map a /b\n").contains("absolute"));
        let twice = error("path-map /a /b\npath-map /c /b/\n");
        assert!(twice.contains("already mapped on line 1"), "{twice}");
    }

    #[test]
    fn host_problems_name_the_map() {
        use crate::view::Node;
        let m = maps("path-map /gone /a\npath-map /file /b copy\npath-map /dir /c copy\n");
        let node = |p: &str| match p {
            "/file" => Node::File,
            "/dir" => Node::Dir,
            _ => Node::Missing,
        };
        let found = host_problems(&m, &node);
        let text: Vec<String> = found.iter().map(|(s, t)| format!("{s}: {t}")).collect();
        assert_eq!(text.len(), 2, "{text:?}");
        assert!(text[0].contains("/gone does not exist"), "{text:?}");
        assert!(text[0].starts_with("t:1:"), "{text:?}");
        assert!(
            text[1].contains("a private copy is of a directory"),
            "{text:?}"
        );
    }

    #[test]
    fn beneath() {
        assert!(at_or_beneath("/a/b", "/a"));
        assert!(at_or_beneath("/a", "/a"));
        assert!(!at_or_beneath("/ab", "/a"));
        assert!(at_or_beneath("/x", "/"));
    }
}
