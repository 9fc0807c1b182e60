//! The directory a check's Python bytecode goes to (`PYTHONPYCACHEPREFIX`).
//!
//! Python and pytest's assertion rewriter read and write `.pyc` files under the prefix
//! instead of `__pycache__` next to the sources, so bytecode planted in a
//! `__pycache__` (by the exec in the working tree, or by an earlier check in the clean
//! room, where caches outlive syncs) is never loaded. Each check starts with the
//! directory empty: bytecode an earlier check wrote is not read by a later one either.
//!
//! The directory is made in `parent`: the clean room's own directory in the state
//! directory when the check runs there, which the exec cannot write (a process the
//! exec left behind could otherwise plant bytecode in a prefix under `/tmp` while the
//! check runs, a fresh review's fork chain did); the system's temporary directory for
//! a check in place, which reads the agent's tree anyway.
//!
//! One directory serves a run's checks while it stays empty (a check that imports no
//! Python writes nothing), so a run does not create and remove a directory per check;
//! as soon as a check leaves anything in it, or it is no longer the directory made for
//! the run (replaced, or swapped for a symbolic link), the next check gets a new one.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A run's bytecode directory, made at its first check.
#[derive(Debug, Default)]
pub(super) struct Pycache {
    /// The directory and the inode it was made with.
    dir: Option<(tempfile::TempDir, u64)>,
}

impl Pycache {
    /// An empty directory for the next check: the last one when it is still the real
    /// directory made for the run and holds nothing, else a new one (the old one is
    /// removed).
    ///
    /// # Errors
    /// The temporary directory cannot be created or inspected.
    pub(super) fn for_check(&mut self, parent: &Path) -> std::io::Result<&Path> {
        let reusable = self.dir.as_ref().is_some_and(|(d, ino)| {
            d.path().parent() == Some(parent) && still_empty(d.path(), *ino)
        });
        if !reusable {
            std::fs::create_dir_all(parent)?;
            let d = tempfile::Builder::new()
                .prefix("loopexec-pycache")
                .tempdir_in(parent)?;
            let ino = std::fs::symlink_metadata(d.path())?.ino();
            self.dir = Some((d, ino));
        }
        Ok(self
            .dir
            .as_ref()
            .map(|(d, _)| d.path())
            .unwrap_or(Path::new("")))
    }
}

/// True when `path` is a real directory (not a link) with inode `ino` and no entries.
fn still_empty(path: &Path, ino: u64) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir() && m.ino() == ino)
        && std::fs::read_dir(path).is_ok_and(|mut r| r.next().is_none())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unused_directory_is_reused_and_a_written_one_replaced() {
        let mut p = Pycache::default();
        let first = p.for_check(&std::env::temp_dir()).unwrap().to_path_buf();
        assert!(first.is_dir());
        assert_eq!(
            p.for_check(&std::env::temp_dir()).unwrap(),
            first,
            "nothing written: the same directory"
        );
        std::fs::create_dir_all(first.join("src")).unwrap();
        std::fs::write(first.join("src/planted.cpython-312.pyc"), b"x").unwrap();
        let second = p.for_check(&std::env::temp_dir()).unwrap().to_path_buf();
        assert_ne!(second, first, "bytecode left behind: a new directory");
        assert!(!first.exists(), "the written one is removed");
        assert_eq!(std::fs::read_dir(&second).unwrap().count(), 0);
    }

    #[test]
    fn a_directory_swapped_for_a_link_is_not_reused() {
        let mut p = Pycache::default();
        let first = p.for_check(&std::env::temp_dir()).unwrap().to_path_buf();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::remove_dir(&first).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), &first).unwrap();
        let second = p.for_check(&std::env::temp_dir()).unwrap().to_path_buf();
        assert_ne!(second, first);
        let _ = std::fs::remove_file(&first);
    }
}
