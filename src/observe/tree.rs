//! The working tree as the loop observes it: the t0 baseline, a snapshot after every
//! exec and around every check, and the guard measurements of each snapshot.
//!
//! Snapshots are commit objects under `refs/loopexec/<run-id>/<label>` made through a
//! temporary index ([`super::git::snapshot`]): the user's index, branches, stash and
//! HEAD are never touched. Labels: `0` (t0, before the baseline check), `<i>` (after
//! the exec of iteration i), `<i>-check<k>` (after check run k of iteration i).
//!
//! Without git every method degrades to "unknown" (no tree ids, measurements marked
//! unavailable), and `run_started.guards_unavailable` says which guards cannot run —
//! they never pass silently.

use super::git::{self, ChangeKind};
use super::guards::{self, AssertionCache};
use crate::config::RunConfig;
use crate::detect::integrity::TreeMeasures;
use crate::receipt::events::GitState;
use crate::trajectory::Trajectory;
use std::path::{Path, PathBuf};

/// What one observation of the tree recorded.
pub struct TreeObs {
    pub tree: Option<String>,
    pub snapshot: Option<String>,
    /// [`TreeMeasures`] as JSON (`null` without git).
    pub measures: serde_json::Value,
}

/// Paths a check changed, split by what happened to them.
#[derive(Debug, Default, Clone)]
pub struct CheckWrites {
    /// Files that existed before the check and were modified or deleted by it.
    pub changed: Vec<String>,
    /// Files the check created (build outputs, lockfiles, reports): tolerated.
    pub created: Vec<String>,
}

/// Observes one run's working tree.
pub struct TreeObserver {
    dir: PathBuf,
    run_id: String,
    available: bool,
    note: Option<String>,
    test_globs: globset::GlobSet,
    protected: globset::GlobSet,
    cache: AssertionCache,
    t0_tree: Option<String>,
    t0_commit: Option<String>,
    last_tree: Option<String>,
    git_dir: Option<PathBuf>,
}

impl TreeObserver {
    /// Prepares observation of `workdir` for `run_id`.
    #[must_use]
    pub fn new(workdir: &Path, run_id: &str, cfg: &RunConfig) -> TreeObserver {
        let root = git::repo_root(workdir);
        let protected: Vec<String> = guards::DEFAULT_PROTECTED
            .iter()
            .map(|s| (*s).to_string())
            .chain(cfg.guards.protected.iter().cloned())
            .collect();
        TreeObserver {
            dir: workdir.to_path_buf(),
            run_id: run_id.to_string(),
            available: root.is_some(),
            note: root.is_none().then(|| "not a git work tree: snapshots, blocked paths, assertion counts, the protected manifest, hermeticity and the ratchet's revert cannot run".to_string()),
            test_globs: guards::build_globset(&cfg.guards.test_paths).unwrap_or_else(|_| globset::GlobSet::empty()),
            protected: guards::build_globset(&protected).unwrap_or_else(|_| globset::GlobSet::empty()),
            cache: AssertionCache::default(),
            t0_tree: None,
            t0_commit: None,
            last_tree: None,
            git_dir: None,
        }
    }

    /// Takes t0: git state, the baseline snapshot and its measurements, and the
    /// list of guards that cannot run here.
    pub fn baseline(&mut self) -> (GitState, serde_json::Value, Vec<String>) {
        if !self.available {
            let g = GitState {
                available: false,
                note: self.note.clone(),
                ..GitState::default()
            };
            return (
                g,
                serde_json::to_value(TreeMeasures::default()).unwrap_or_default(),
                vec![self.note.clone().unwrap_or_default()],
            );
        }
        let head = git::head(&self.dir).ok().flatten();
        let dirty = git::is_dirty(&self.dir).ok();
        match git::snapshot(&self.dir, &self.run_id, "0") {
            Ok(s) => {
                self.t0_tree = Some(s.tree.clone());
                self.t0_commit = Some(s.commit.clone());
                self.last_tree = Some(s.tree.clone());
                let m = self.measure(&s.tree, Vec::new());
                let g = GitState {
                    available: true,
                    head,
                    dirty,
                    baseline_snapshot: Some(s.commit),
                    baseline_tree: Some(s.tree),
                    note: None,
                };
                (g, serde_json::to_value(m).unwrap_or_default(), Vec::new())
            }
            Err(e) => {
                self.available = false;
                let note = format!("git snapshot failed ({e}): tree guards cannot run");
                let g = GitState {
                    available: false,
                    head,
                    dirty,
                    note: Some(note.clone()),
                    ..GitState::default()
                };
                (
                    g,
                    serde_json::to_value(TreeMeasures::default()).unwrap_or_default(),
                    vec![note],
                )
            }
        }
    }

    fn measure(&mut self, tree: &str, changed_since_t0: Vec<String>) -> TreeMeasures {
        let entries = git::ls_tree(&self.dir, tree).unwrap_or_default();
        let assertions =
            guards::assertion_total_in(&self.dir, &entries, &self.test_globs, &mut self.cache)
                .map(|a| a.files.into_iter().map(|(p, f)| (p, f.count)).collect())
                .unwrap_or_default();
        let manifest = super::manifest::manifest_in(&self.dir, &entries, &self.protected)
            .map(|m| m.files)
            .unwrap_or_default();
        TreeMeasures {
            changed_since_t0,
            assertions,
            manifest,
            available: true,
            git_internals: self.git_internals(),
            state_tampered: Vec::new(),
        }
    }

    /// blake3 of the repository's own configuration files (`config`, `hooks/*`,
    /// `info/*` of the git dir), keyed `.git/<path>`: what changes git's behaviour
    /// without appearing in any tree.
    fn git_internals(&mut self) -> std::collections::BTreeMap<String, String> {
        let mut out = std::collections::BTreeMap::new();
        if self.git_dir.is_none() {
            let out = git::git_cmd(&self.dir)
                .args(["rev-parse", "--absolute-git-dir"])
                .output();
            self.git_dir = out
                .ok()
                .filter(|o| o.status.success())
                .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        }
        let Some(gd) = &self.git_dir else { return out };
        let mut files = vec![gd.join("config")];
        for sub in ["hooks", "info"] {
            if let Ok(rd) = std::fs::read_dir(gd.join(sub)) {
                files.extend(rd.flatten().map(|e| e.path()).filter(|p| p.is_file()));
            }
        }
        for f in files {
            if let Ok(bytes) = std::fs::read(&f) {
                let rel = f
                    .strip_prefix(gd)
                    .unwrap_or(&f)
                    .to_string_lossy()
                    .into_owned();
                out.insert(
                    format!(".git/{rel}"),
                    blake3::hash(&bytes).to_hex().to_string(),
                );
            }
        }
        out
    }

    fn snap(&mut self, label: &str) -> Option<git::Snapshot> {
        if !self.available {
            return None;
        }
        let s = git::snapshot(&self.dir, &self.run_id, label).ok()?;
        self.last_tree = Some(s.tree.clone());
        Some(s)
    }

    /// Snapshot after the exec of iteration `it`, with its guard measurements.
    pub fn observe(&mut self, it: u32) -> TreeObs {
        let Some(s) = self.snap(&it.to_string()) else {
            return TreeObs {
                tree: None,
                snapshot: None,
                measures: serde_json::Value::Null,
            };
        };
        let changed = match &self.t0_tree {
            Some(t0) => git::changed_paths(&self.dir, t0, &s.tree)
                .map(|v| v.into_iter().map(|c| c.path).collect())
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let m = self.measure(&s.tree, changed);
        TreeObs {
            tree: Some(s.tree),
            snapshot: Some(s.commit),
            measures: serde_json::to_value(m).unwrap_or_default(),
        }
    }

    /// The tree the next check will run on (the last snapshot's).
    #[must_use]
    pub fn tree_before_check(&self) -> Option<String> {
        self.last_tree.clone()
    }

    /// Snapshot after a check run (labelled `<it>-check<attempt>`).
    pub fn after_check(&mut self, it: u32, attempt: u32) -> Option<String> {
        self.snap(&format!("{it}-check{attempt}")).map(|s| s.tree)
    }

    /// What a check changed between two trees.
    #[must_use]
    pub fn check_writes(&self, before: &str, after: &str) -> CheckWrites {
        let mut w = CheckWrites::default();
        for c in git::changed_paths(&self.dir, before, after).unwrap_or_default() {
            match c.status {
                ChangeKind::Added => w.created.push(c.path),
                ChangeKind::Deleted | ChangeKind::Modified | ChangeKind::TypeChanged => {
                    w.changed.push(c.path)
                }
            }
        }
        w
    }

    /// The snapshot commit holding iteration `it`'s tree (0 is t0).
    #[must_use]
    pub fn snapshot_of(&self, it: u32, t: &Trajectory) -> Option<String> {
        if it == 0 {
            return self
                .t0_commit
                .clone()
                .or_else(|| t.started.as_ref()?.git.baseline_snapshot.clone());
        }
        t.iterations
            .iter()
            .rev()
            .find(|i| i.iteration == it)?
            .exec
            .as_ref()?
            .snapshot
            .clone()
    }

    /// Makes the working tree equal to `snapshot` (the ratchet's revert).
    ///
    /// # Errors
    /// The git error, as text.
    pub fn restore(&mut self, snapshot: &str) -> Result<(), String> {
        if !self.available {
            return Err("git is not available".into());
        }
        git::restore(&self.dir, snapshot).map_err(|e| e.to_string())?;
        self.last_tree = None;
        Ok(())
    }

    /// Re-reads the tree after something outside the observer changed it (a revert,
    /// a resume), so the next check's `tree_before` is right.
    pub fn refresh(&mut self, label: &str) {
        let _ = self.snap(label);
    }

    /// When resuming, learn t0 from the receipt.
    pub fn adopt_baseline(&mut self, t: &Trajectory) {
        if let Some(s) = &t.started {
            self.t0_tree.clone_from(&s.git.baseline_tree);
            self.t0_commit.clone_from(&s.git.baseline_snapshot);
        }
    }
}
