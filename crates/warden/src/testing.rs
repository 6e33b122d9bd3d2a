//! What the unit tests of several modules share.

use std::path::{Path, PathBuf};

/// A fresh temporary directory of this test thread's, `$TMPDIR/warden-TAG-PID-TID`, removed
/// when dropped (a failing test's too).
pub struct TempTree(pub PathBuf);

impl TempTree {
    pub fn new(tag: &str) -> TempTree {
        let dir = std::env::temp_dir().join(format!(
            "warden-{tag}-{}-{}",
            std::process::id(),
            rustix::thread::gettid().as_raw_nonzero()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        TempTree(dir)
    }
}

impl std::ops::Deref for TempTree {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempTree {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
