//! The directory of a run's private copies (`path-map HOST SANDBOX copy`): the overlays'
//! upper and work directories, made for the sandbox's user outside its view once the plan is
//! decided, masked wherever the view would show them, removed or kept (`--keep`) when the run
//! ends, whichever way it ends.

use super::scratch::Scratch;
use super::{failure, Failure, RunConfig, EXIT_WARDEN};
use crate::confine::namespaces::IdMap;
use crate::report::Measured;

/// The directory of a run's private copies ([`crate::copies`]): removed when the run ends
/// (whatever way it ends), or kept with `--keep`.
pub struct CopyDir {
    dir: Option<Scratch>,
    keep: bool,
}

impl CopyDir {
    /// Makes the directory when `view` has copies, and tells the view where it is.
    pub fn for_view(
        cfg: &RunConfig,
        ids: IdMap,
        view: Option<&mut warden_policy::view::ViewPlan>,
        measured: &mut Measured,
    ) -> Result<CopyDir, Failure> {
        let none = CopyDir {
            dir: None,
            keep: cfg.keep,
        };
        let Some(view) = view else { return Ok(none) };
        let copies = crate::copies::of_plan(view);
        if copies.is_empty() {
            return Ok(none);
        }
        let dir = Scratch::create(ids, cfg.keep, "the private copies' directory")?;
        crate::copies::write_manifest(dir.fd(), &copies).map_err(|e| {
            failure(
                EXIT_WARDEN,
                format!("cannot write into {}: {e}", dir.path.display()),
            )
        })?;
        let path = dir
            .path
            .to_str()
            .ok_or_else(|| failure(EXIT_WARDEN, "the copy directory's path is not UTF-8"))?
            .to_owned();
        // Where a tree of the host's in the view shows it (`path-allow write /tmp/*`), it is
        // hidden: the program must not reach the overlay's own layers, which `warden diff`
        // reads.
        for at in shown_at(view, &path) {
            view.steps.push(warden_policy::view::Step::Mask {
                path: at,
                dir: true,
            });
        }
        view.copy_dir = Some(path);
        if cfg.keep {
            measured.copies = Some(dir.path.clone());
        }
        Ok(CopyDir {
            dir: Some(dir),
            keep: cfg.keep,
        })
    }
}

/// The places in `view` where the host's `path` can be seen: beneath a bind or a map of a
/// host tree holding it, unless a later mount covers that place.
fn shown_at(view: &warden_policy::view::ViewPlan, path: &str) -> Vec<String> {
    use warden_policy::map::at_or_beneath;
    use warden_policy::view::Step;
    let mut places = Vec::new();
    for (i, step) in view.steps.iter().enumerate() {
        let (from, at) = match step {
            Step::Bind {
                path: p, dir: true, ..
            } => (p.as_str(), p.as_str()),
            Step::Map {
                from,
                path: p,
                dir: true,
                ..
            } => (from.as_str(), p.as_str()),
            _ => continue,
        };
        if !at_or_beneath(path, from) {
            continue;
        }
        let place = format!(
            "{}{}",
            at.trim_end_matches('/'),
            &path[from.trim_end_matches('/').len()..]
        );
        let covered = view.steps[i + 1..].iter().any(|s| match s {
            Step::Bind { path: p, .. }
            | Step::Map { path: p, .. }
            | Step::Tmpfs { path: p, .. }
            | Step::Copy { path: p, .. } => at_or_beneath(&place, p),
            _ => false,
        });
        if !covered {
            places.push(place);
        }
    }
    places
}

impl Drop for CopyDir {
    fn drop(&mut self) {
        let Some(dir) = self.dir.take() else { return };
        if self.keep {
            // A name alone finds it in this user's runs' directory; elsewhere, its path.
            let name = match dir.path.file_name() {
                Some(n) if dir.in_usual_place() => n.to_string_lossy().into_owned(),
                _ => dir.path.display().to_string(),
            };
            eprintln!(
                "warden: kept the private copies in {} (`warden diff {name}` lists what the run \
                 changed)",
                dir.path.display()
            );
            dir.keep();
        } else {
            // Directories of mode 0 (the overlay's work directory) are opened up as it goes.
            dir.remove();
        }
    }
}
