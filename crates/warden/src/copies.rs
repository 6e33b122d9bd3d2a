//! Private copies (`path-map HOST SANDBOX copy`): where a run keeps what it changed, and
//! `warden diff`, which lists it.
//!
//! A run with copies gets a directory of its own next to scratch directories
//! (`$TMPDIR/warden-scratch-UID/warden-PID-RAND`, locked and swept the same way), outside the sandbox's view.
//! Copy `N` keeps its overlay's upper layer in `N/upper` (and the overlay's `N/work`);
//! `copies.json` says which sandbox path and host tree each `N` is. Without `--keep` the
//! directory goes when the run ends; with it, `warden diff NAME` reads the upper layers:
//! a file or directory there that the host's tree lacks was added, one it has was modified
//! (for a directory: its metadata, or an opaque directory, which replaced the host's), and a
//! whiteout (a 0/0 character device) is a deletion.

use serde::{Deserialize, Serialize};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The manifest's name in a copy directory.
const MANIFEST: &str = "copies.json";

/// One private copy of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Copy {
    /// `N`: its upper layer is `N/upper`.
    pub index: usize,
    /// Where the sandbox saw it.
    pub sandbox: String,
    /// The host's tree beneath it (never written).
    pub host: String,
}

/// The copies of `plan`, for the manifest.
pub fn of_plan(plan: &warden_policy::view::ViewPlan) -> Vec<Copy> {
    plan.steps
        .iter()
        .filter_map(|s| match s {
            warden_policy::view::Step::Copy {
                from, path, index, ..
            } => Some(Copy {
                index: *index,
                sandbox: path.clone(),
                host: from.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// Writes the manifest of `copies` into the directory `dir` (open): a new file, never through
/// a link (the directory may already be the sandbox's user's, and warden root).
pub fn write_manifest(dir: std::os::fd::BorrowedFd<'_>, copies: &[Copy]) -> io::Result<()> {
    use rustix::fs::{Mode, OFlags};
    use std::io::Write;
    let text = serde_json::to_string_pretty(copies).map_err(io::Error::other)?;
    let fd = rustix::fs::openat(
        dir,
        MANIFEST,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )?;
    std::fs::File::from(fd).write_all(text.as_bytes())
}

/// What a run did to one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The host's tree has nothing there.
    Added,
    /// The host's tree has it, and the run changed its contents or metadata (a directory
    /// marked opaque replaced the host's, whose entries are gone).
    Modified,
    /// The run removed the host's.
    Deleted,
}

impl Kind {
    /// The letter `warden diff` prints.
    pub fn letter(self) -> char {
        match self {
            Kind::Added => 'A',
            Kind::Modified => 'M',
            Kind::Deleted => 'D',
        }
    }
}

/// One change, at a path of the sandbox's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// What happened.
    pub kind: Kind,
    /// Where, as the sandbox saw it.
    pub path: PathBuf,
    /// The host's path it stands for.
    pub host: PathBuf,
}

/// The copy directory `id` names: a path, or a name as the run printed it, in this user's
/// runs' directory in `$TMPDIR` (or `/tmp`), or in `$TMPDIR` itself (where a run keeps it when
/// that directory cannot be used).
pub fn find(id: &str) -> Result<PathBuf, String> {
    let path = if id.contains('/') {
        PathBuf::from(id)
    } else {
        let tmp = std::env::var_os("TMPDIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        let runs = tmp
            .join(format!(
                "warden-scratch-{}",
                rustix::process::geteuid().as_raw()
            ))
            .join(id);
        if runs.join(MANIFEST).is_file() {
            runs
        } else {
            tmp.join(id)
        }
    };
    if path.join(MANIFEST).is_file() {
        Ok(path)
    } else {
        Err(format!(
            "{} holds no kept private copies (a run with `path-map ... copy` and --keep prints \
             the name to give)",
            warden_policy::escape::escape(path.as_os_str().as_encoded_bytes())
        ))
    }
}

/// Every change the run whose copy directory is `dir` made, in path order per copy.
pub fn diff(dir: &Path) -> io::Result<Vec<Change>> {
    let text = std::fs::read_to_string(dir.join(MANIFEST))?;
    let copies: Vec<Copy> = serde_json::from_str(&text).map_err(io::Error::other)?;
    let mut out = Vec::new();
    for c in copies {
        let upper = dir.join(c.index.to_string()).join("upper");
        walk(
            &upper,
            Path::new(&c.sandbox),
            Path::new(&c.host),
            true,
            &mut out,
        )?;
    }
    Ok(out)
}

fn is_whiteout(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_char_device() && meta.rdev() == 0
}

fn opaque(path: &Path) -> bool {
    xattr_is_y(path, "user.overlay.opaque") || xattr_is_y(path, "trusted.overlay.opaque")
}

fn xattr_is_y(path: &Path, name: &str) -> bool {
    let mut buf = [0u8; 4];
    matches!(rustix::fs::lgetxattr(path, name, &mut buf), Ok(1) if buf[0] == b'y')
}

/// Lists the changes in `upper` (a directory of the upper layer), which stands for `sandbox`
/// in the view and `host` in the host's tree. `lower` says whether the host's tree has the
/// directory at all (beneath an added one, everything is added).
fn walk(
    upper: &Path,
    sandbox: &Path,
    host: &Path,
    lower: bool,
    out: &mut Vec<Change>,
) -> io::Result<()> {
    let mut names: Vec<_> = std::fs::read_dir(upper)?
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    names.sort();
    for name in names {
        let at = upper.join(&name);
        let s = sandbox.join(&name);
        let h = host.join(&name);
        let meta = std::fs::symlink_metadata(&at)?;
        let on_host = lower && std::fs::symlink_metadata(&h).is_ok();
        if is_whiteout(&meta) {
            if on_host {
                out.push(Change {
                    kind: Kind::Deleted,
                    path: s,
                    host: h,
                });
            }
            continue;
        }
        let host_dir = on_host && std::fs::symlink_metadata(&h).is_ok_and(|m| m.is_dir());
        if meta.is_dir() {
            let replaced = on_host && (!host_dir || opaque(&at));
            if !on_host {
                out.push(Change {
                    kind: Kind::Added,
                    path: s.clone(),
                    host: h.clone(),
                });
            } else if replaced {
                out.push(Change {
                    kind: Kind::Modified,
                    path: s.clone(),
                    host: h.clone(),
                });
                // What the host had beneath it is gone.
                if host_dir {
                    for e in std::fs::read_dir(&h)?.filter_map(Result::ok) {
                        if std::fs::symlink_metadata(at.join(e.file_name())).is_err() {
                            out.push(Change {
                                kind: Kind::Deleted,
                                path: s.join(e.file_name()),
                                host: h.join(e.file_name()),
                            });
                        }
                    }
                }
            }
            walk(&at, &s, &h, host_dir && !replaced, out)?;
            continue;
        }
        out.push(Change {
            kind: if on_host { Kind::Modified } else { Kind::Added },
            path: s,
            host: h,
        });
    }
    Ok(())
}

/// The changes as `warden diff` prints them: a letter and the sandbox's path (escaped), one a
/// line.
pub fn render(changes: &[Change]) -> String {
    let mut text = String::new();
    for c in changes {
        text.push(c.kind.letter());
        text.push(' ');
        text.push_str(&warden_policy::escape::escape(
            c.path.as_os_str().as_encoded_bytes(),
        ));
        text.push('\n');
    }
    text
}
