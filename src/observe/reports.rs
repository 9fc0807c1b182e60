//! Report files a check writes (`--report PATH`, globs allowed): finding them.

use std::path::{Path, PathBuf};

/// Files under `root` matching the glob `pattern` (relative to `root`), sorted.
/// Walks the tree once, skipping `.git` and `.loopexec`.
#[must_use]
pub fn glob_files(root: &Path, pattern: &str) -> Vec<PathBuf> {
    let Ok(glob) = globset::Glob::new(pattern) else {
        return Vec::new();
    };
    let m = glob.compile_matcher();
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name();
            if name == ".git" || name == ".loopexec" {
                continue;
            }
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(root) {
                if m.is_match(rel) {
                    out.push(p.clone());
                }
            }
        }
    }
    out.sort();
    out
}
