//! The clean room: the directory every check of a run executes in.
//!
//! The check never runs in the agent's working tree. Before each check run the clean
//! room is synced to the tree under judgment — the snapshot taken after the exec, with
//! the frozen oracle restored from t0 when `[oracle] on_edit = "restore"` — so only what
//! is in that snapshot exists for the check: no git-ignored shim, no forged `.pyc`, no
//! file a background process swaps in while the check runs. The sync is incremental
//! ([`TreeScanner::sync_to`]): unchanged files keep their mtimes, so build tools reuse
//! their work.
//!
//! Layout, under the user's state directory ([`state_dir`]), one per workdir (the
//! workdir lock makes it single-user):
//! ```text
//! <state>/cleanrooms/<workdir digest>/tree          the clean room (the check's cwd)
//! <state>/cleanrooms/<workdir digest>/home          HOME of the check, fresh per run
//! <state>/cleanrooms/<workdir digest>/cargo-target  CARGO_TARGET_DIR (whatever the user set)
//! <state>/cleanrooms/<workdir digest>/workdir       the workdir's path (for cleanup)
//! ```
//! Dependency directories (`node_modules`, a `.venv`) are not copied: they are linked
//! to the workdir's, hashed at t0 and before and after every check, and a change is
//! tampering (by the agent) or a hermeticity violation (by the check) unless
//! `[clean_room] dependencies = "agent"`.
//!
//! The check's environment is clean: `HOME` is the run's fresh home (toolchain homes
//! such as `CARGO_HOME`, `RUSTUP_HOME`, `GOPATH`, `PYTHONUSERBASE` keep pointing at the
//! user's), `PATH` loses entries that are relative or inside the workdir, `GIT_*`
//! variables are removed.

use crate::observe::store::{Excludes, SnapshotStore, StoreError, SyncStats, TreeScanner};
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The directory pytest would take as its rootdir when it lies above `workdir`, with
/// the configuration file that makes it so: the nearest directory, from `workdir`
/// up, holding `pytest.ini`, `.pytest.ini`, `pytest.toml`, `.pytest.toml`, a
/// `pyproject.toml` with `[tool.pytest.ini_options]` or `[tool.pytest]`, a `tox.ini`
/// with `[pytest]` or a `setup.cfg` with `[tool:pytest]` (pytest's own search). `None`
/// when `check` does not run pytest, or that directory is `workdir` or below, or
/// there is none. The clean room holds the workdir only: a check there would run
/// without that file and the `conftest.py` files beside it (a new user's review: a
/// fixture from the repository root's `conftest.py` was missing, and the run halted
/// 17 as if the agent were stuck).
#[must_use]
pub fn pytest_rootdir_above(workdir: &Path, check: &str) -> Option<(PathBuf, PathBuf)> {
    let words: Vec<&str> = check.split_whitespace().collect();
    let runs_pytest = words.iter().enumerate().any(|(i, w)| {
        let base = w.rsplit('/').next().unwrap_or(w);
        matches!(base, "pytest" | "py.test")
            || (*w == "-m" && words.get(i + 1).is_some_and(|m| *m == "pytest"))
    });
    // a configuration file or rootdir named on the command line is pytest's choice
    let chosen = words.iter().any(|w| {
        matches!(*w, "-c" | "--config-file" | "--rootdir")
            || w.starts_with("--config-file=")
            || w.starts_with("--rootdir=")
            || (w.starts_with("-c") && w.len() > 2 && !w.starts_with("--"))
    });
    if !runs_pytest || chosen {
        return None;
    }
    let has_section = |file: &Path, headers: &[&str]| {
        std::fs::read_to_string(file).is_ok_and(|t| t.lines().any(|l| headers.contains(&l.trim())))
    };
    let start = std::fs::canonicalize(workdir).ok()?;
    for dir in start.ancestors() {
        let found = ["pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml"]
            .iter()
            .map(|n| dir.join(n))
            .find(|f| f.is_file())
            .or_else(|| {
                [
                    (
                        "pyproject.toml",
                        &["[tool.pytest.ini_options]", "[tool.pytest]"][..],
                    ),
                    ("tox.ini", &["[pytest]"][..]),
                    ("setup.cfg", &["[tool:pytest]"][..]),
                ]
                .iter()
                .map(|(n, h)| (dir.join(n), h))
                .find(|(f, h)| has_section(f, h))
                .map(|(f, _)| f)
            });
        if let Some(file) = found {
            return (dir != start).then(|| (dir.to_path_buf(), file));
        }
    }
    None
}

/// The user's state directory for loopexec ([`crate::control::state_dir`]: from
/// `$LOOPEXEC_STATE_DIR`, `$XDG_STATE_HOME` or `$HOME`), else `<tmp>/loopexec-<uid>`
/// when none of those is set.
#[must_use]
pub fn state_dir() -> PathBuf {
    crate::control::state_dir().unwrap_or_else(|| {
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        std::env::temp_dir().join(format!("loopexec-{uid}"))
    })
}

/// `<state>/cleanrooms/<workdir digest>`: where the clean room of `workdir` lives.
#[must_use]
pub fn base_dir(state: &Path, workdir: &Path) -> PathBuf {
    let digest = blake3::hash(workdir.as_os_str().as_encoded_bytes()).to_hex();
    state.join("cleanrooms").join(&digest.as_str()[..16])
}

/// True when a live process of group `pgid` works in `workdir` or in its clean room:
/// the check before ending a group recorded by a run that is gone.
#[must_use]
pub fn group_works_for(pgid: i32, workdir: &Path) -> bool {
    crate::proc::supervise::group_works_in(pgid, workdir)
        || crate::proc::supervise::group_works_in(pgid, &base_dir(&state_dir(), workdir))
}

/// Errors preparing or syncing the clean room.
#[derive(Debug, thiserror::Error)]
pub enum CleanRoomError {
    #[error("clean room {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("clean room: {0}")]
    Store(#[from] StoreError),
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> CleanRoomError + '_ {
    move |source| CleanRoomError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One dependency directory linked into the clean room.
#[derive(Debug, Clone)]
struct Dependency {
    /// Root-relative path (`node_modules`, `web/node_modules`, `.venv`), or the
    /// absolute path of an outside cache (`external`).
    rel: String,
    /// A directory outside the tree the check reads and the exec may write (cargo's
    /// git checkouts, npx's packages, a virtual environment's site-packages):
    /// digested like a dependency directory, never linked into the room.
    external: bool,
    /// Per-file stat digest at t0 (path → digest).
    t0: BTreeMap<String, String>,
}

/// Every directory that holds one of `files` (relative paths), at any depth.
fn parent_dirs<'a>(files: impl Iterator<Item = &'a String>) -> std::collections::BTreeSet<&'a str> {
    let mut dirs = std::collections::BTreeSet::new();
    for f in files {
        let mut p = f.as_str();
        while let Some((parent, _)) = p.rsplit_once('/') {
            if !dirs.insert(parent) {
                break; // its parents are in already
            }
            p = parent;
        }
    }
    dirs
}

/// True when relative path `p` lies inside one of `dirs` (a directory that existed),
/// not only at the top level of the tree they are relative to.
fn inside_existing(p: &str, dirs: &std::collections::BTreeSet<&str>) -> bool {
    let mut q = p;
    while let Some((parent, _)) = q.rsplit_once('/') {
        if dirs.contains(parent) {
            return true;
        }
        q = parent;
    }
    false
}

/// The directory beside the room's tree that `TMPDIR` names for the check: its
/// temporary files and the caches tools keep there (jest's transform cache is
/// `$TMPDIR/jest_<uid>`) are the room's own, which the exec cannot write, and emptied
/// before a confirmation like the check's `HOME` (a fresh review rewrote jest's cached
/// copy of a test file in `/tmp` between two checks).
const CHECK_TMP: &str = "tmp";

/// The directory beside the room's tree that `CARGO_TARGET_DIR` names for the check
/// (unless the user set it): builds stay incremental across checks and runs.
const CARGO_TARGET: &str = "cargo-target";

/// The directory beside the room's tree that `GOCACHE` names for the check: go's
/// build cache of its own, which the exec cannot write (the user's `~/.cache/go-build`
/// it can: a planted cache entry is a compiled package go trusts).
const GO_CACHE: &str = "go-build";

/// The directory `CARGO_TARGET_DIR` names for a checkout confirmation (SPEC §3.9):
/// emptied before each, so that nothing the agent or an earlier check built is run,
/// and apart from the room's (cargo's fingerprints hold a package's path, so builds
/// of the room and of the workdir in one directory would undo each other).
const CHECKOUT_TARGET: &str = "checkout-target";

/// The clean room of one run.
pub struct CleanRoom {
    base: PathBuf,
    root: PathBuf,
    home: PathBuf,
    workdir: PathBuf,
    scanner: TreeScanner,
    deps: Vec<Dependency>,
}

impl CleanRoom {
    /// Prepares the clean room of `workdir` under `state` ([`state_dir`]; fresh `HOME`, the tree left as the last
    /// run left it so the first sync is incremental). `excludes` are the snapshot's;
    /// `dependencies` the root-relative dependency directories found at t0.
    ///
    /// # Errors
    /// The state directory cannot be written.
    pub fn prepare(
        state: &Path,
        workdir: &Path,
        excludes: Excludes,
        dependencies: &[String],
    ) -> Result<CleanRoom, CleanRoomError> {
        let all = state.join("cleanrooms");
        remove_abandoned(&all);
        let base = base_dir(state, workdir);
        let root = base.join("tree");
        let home = base.join("home");
        std::fs::create_dir_all(&root).map_err(io_err(&root))?;
        if home.exists() {
            std::fs::remove_dir_all(&home).map_err(io_err(&home))?;
        }
        std::fs::create_dir_all(&home).map_err(io_err(&home))?;
        // Whatever an earlier check left beside the room (a `pytest.ini` or
        // `conftest.py` in an ancestor, which runners read) goes: the next run's t0
        // must not measure it as part of the toolchain and freeze it. Only in the
        // directories loopexec owns (the state directory itself may be anything a
        // user named, and is never emptied).
        for dir in [base.as_path(), all.as_path()] {
            if let Ok(rd) = std::fs::read_dir(dir) {
                for e in rd.flatten() {
                    let name = e.file_name();
                    let keep = if dir == base.as_path() {
                        matches!(
                            name.to_str(),
                            Some("tree" | "home" | "workdir" | "go-build" | "private")
                        )
                    } else {
                        !crate::observe::toolchain::ancestor_names()
                            .any(|c| c.split('/').next() == name.to_str())
                    };
                    if !keep {
                        remove_entry(&e)?;
                    }
                }
            }
        }
        // The private directory holds one run's bytecode prefixes and witness outputs:
        // what a run that died left there goes.
        let private = base.join("private");
        if private.exists() {
            std::fs::remove_dir_all(&private).map_err(io_err(&private))?;
        }
        // (not kept above: a run starts with an empty one)
        let tmp = base.join(CHECK_TMP);
        std::fs::create_dir_all(&tmp).map_err(io_err(&tmp))?;
        let marker = base.join("workdir");
        std::fs::write(&marker, workdir.as_os_str().as_encoded_bytes()).map_err(io_err(&marker))?;
        let deps = dependencies
            .iter()
            .map(|rel| Dependency {
                rel: rel.clone(),
                external: false,
                t0: stat_digests(&workdir.join(rel)),
            })
            .collect();
        Ok(CleanRoom {
            scanner: TreeScanner::new(&root, excludes),
            base,
            root,
            home,
            workdir: workdir.to_path_buf(),
            deps,
        })
    }

    /// Empties the room of what earlier checks left outside the judged tree: every
    /// directory the last walk excluded (caches, build outputs, dependency directories
    /// a check created) that is a real directory, not a link to the working tree's
    /// dependencies; beside the tree, cargo's target directory (`CARGO_TARGET_DIR`
    /// points there unless the user set it) and the check's `HOME`, made empty again.
    /// Run before a confirmation, so that a green that converges is reproduced without
    /// anything a check planted for a later one (a `conftest.py` in `target/`, a
    /// `node_modules` a link points into, a test binary rewritten in the cargo target
    /// that cargo still finds fresh, an `.npmrc` in `HOME`, a cache in `TMPDIR`). The
    /// next sync walks. Returns what was emptied (tree-relative, or `<cargo-target>`,
    /// `<home>`, `<tmp>`).
    ///
    /// # Errors
    /// A directory that cannot be removed or made again.
    pub fn clear_leftovers(&mut self) -> Result<Vec<String>, CleanRoomError> {
        let mut cleared = Vec::new();
        for rel in self.scanner.last_excluded() {
            let p = self.root.join(&rel);
            if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
                std::fs::remove_dir_all(&p).map_err(io_err(&p))?;
                cleared.push(rel);
            }
        }
        // emptied, not removed: the check's sandbox names these directories
        // themselves (`check_dirs`), and a rule of the kernel's holds the directory
        // it was made for, not one made again under the same name
        let target = self.base.join(CARGO_TARGET);
        let tmp = self.base.join(CHECK_TMP);
        for (dir, name) in [
            (&target, "<cargo-target>"),
            (&self.home, "<home>"),
            (&tmp, "<tmp>"),
        ] {
            if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
                empty_dir(dir)?;
                cleared.push(name.into());
            }
        }
        self.scanner.forget_watch();
        Ok(cleared)
    }

    /// The directory the check runs in.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directories of the room a check may write, each made if missing: its tree,
    /// `HOME`, private directory, `TMPDIR`, cargo target and Go build cache. Not the
    /// room's own directory that holds them: pytest puts the first directory above
    /// the tree without an `__init__.py` on `sys.path` (the room's, when the tree's
    /// root is a package), and a module a red check wrote there was imported by the
    /// next check (a fresh review's exit 10).
    ///
    /// # Errors
    /// A directory cannot be made.
    pub fn check_dirs(&self) -> Result<Vec<PathBuf>, CleanRoomError> {
        let dirs = vec![
            self.root.clone(),
            self.base.join("home"),
            self.private_dir(),
            self.base.join(CHECK_TMP),
            self.base.join(CARGO_TARGET),
            self.base.join(GO_CACHE),
        ];
        for d in &dirs {
            std::fs::create_dir_all(d).map_err(io_err(d))?;
        }
        Ok(dirs)
    }

    /// The directories a checkout confirmation may write besides the workdir, each
    /// made if missing: the private directory, its cargo target (emptied: the run is
    /// cold) and the Go build cache.
    ///
    /// # Errors
    /// A directory cannot be made or emptied.
    pub fn checkout_dirs(&self) -> Result<Vec<PathBuf>, CleanRoomError> {
        let dirs = vec![
            self.private_dir(),
            self.base.join(CHECKOUT_TARGET),
            self.base.join(GO_CACHE),
        ];
        for d in &dirs {
            std::fs::create_dir_all(d).map_err(io_err(d))?;
        }
        empty_dir(&dirs[1])?;
        Ok(dirs)
    }

    /// A directory beside the room's tree for the check's private files (its bytecode
    /// prefix, loopexec's witness outputs): in the state directory, so the check may
    /// write it and the exec, or anything the exec left running, may not.
    #[must_use]
    pub fn private_dir(&self) -> PathBuf {
        self.base.join("private")
    }

    /// Makes the clean room equal to `tree` and links the dependency directories.
    ///
    /// # Errors
    /// A store or file error.
    pub fn sync(&mut self, store: &SnapshotStore, tree: &str) -> Result<SyncStats, CleanRoomError> {
        let stats = self.scanner.sync_to(store, tree)?;
        // Nothing but the room's own directories lies beside the tree: a module a
        // check wrote there (where no sandbox kept it from writing) would be found
        // on `sys.path` by the next ([`Self::check_dirs`]).
        if let Ok(rd) = std::fs::read_dir(&self.base) {
            for e in rd.flatten() {
                let known = matches!(
                    e.file_name().to_str(),
                    Some(
                        "tree"
                            | "home"
                            | "workdir"
                            | "private"
                            | CHECK_TMP
                            | CARGO_TARGET
                            | GO_CACHE
                    )
                );
                if !known {
                    remove_entry(&e)?;
                }
            }
        }
        for d in self.deps.iter().filter(|d| !d.external) {
            let link = self.root.join(&d.rel);
            let target = self.workdir.join(&d.rel);
            if Path::new(&d.rel)
                .file_name()
                .is_some_and(|n| n == "node_modules")
            {
                link_node_modules(&target, &link, &self.workdir, &self.root)?;
                continue;
            }
            let ok = std::fs::read_link(&link).is_ok_and(|t| t == target);
            if !ok {
                if let Ok(m) = std::fs::symlink_metadata(&link) {
                    if m.is_dir() {
                        std::fs::remove_dir_all(&link).map_err(io_err(&link))?;
                    } else {
                        std::fs::remove_file(&link).map_err(io_err(&link))?;
                    }
                }
                if let Some(p) = link.parent() {
                    std::fs::create_dir_all(p).map_err(io_err(p))?;
                }
                std::os::unix::fs::symlink(&target, &link).map_err(io_err(&link))?;
            }
        }
        Ok(stats)
    }

    /// Lets a sync skip its walk when the room stayed quiet since the last scan
    /// ([`TreeScanner::watch_between_scans`]); `on` only when the exec cannot write
    /// the room (it runs sandboxed).
    pub fn watch_between_checks(&mut self, on: bool) {
        self.scanner
            .watch_between_scans(on.then_some(crate::observe::watch::QUIET_WATCH_FROM_FILES));
    }

    /// The clean room's tree as the check left it, and the files whose stat data moved
    /// since the sync wrote or last saw them ([`crate::observe::store::Scanned::restat`]).
    ///
    /// # Errors
    /// A store or file error.
    pub fn scan_after_check(
        &mut self,
        store: &SnapshotStore,
    ) -> Result<(String, std::collections::BTreeSet<String>), CleanRoomError> {
        let s = self.scanner.scan(store)?;
        Ok((s.tree, s.restat))
    }

    /// The working tree's dependency directories the room links to (absolute paths
    /// in the working tree: `.venv`, `web/node_modules`). What a check imports from
    /// them is read through the room's link from the working tree, on purpose: they
    /// are digested instead of snapshotted ([`Self::dependencies_changed`]).
    #[must_use]
    pub fn linked_dependencies(&self) -> Vec<PathBuf> {
        self.deps
            .iter()
            .filter(|d| !d.external)
            .map(|d| self.workdir.join(&d.rel))
            .collect()
    }

    /// Files of the dependency directories that differ from t0 (root-relative,
    /// sorted; at most 20 listed, then `… and N more`).
    #[must_use]
    pub fn dependencies_changed(&self) -> Vec<String> {
        self.changed_in(true)
    }

    /// [`Self::dependencies_changed`] in the tree's own dependency directories only:
    /// what a check wrote there is judged as its writes, while its fills of the
    /// caches outside (a first `npx`, cargo fetching a git checkout) are a package
    /// manager's job.
    #[must_use]
    pub fn dependency_dirs_changed(&self) -> Vec<String> {
        self.changed_in(false)
    }

    fn changed_in(&self, external: bool) -> Vec<String> {
        let mut out = Vec::new();
        for d in self.deps.iter().filter(|d| external || !d.external) {
            let now = stat_digests(&self.workdir.join(&d.rel));
            for (p, h) in &d.t0 {
                if now.get(p) != Some(h) {
                    out.push(format!("{}/{p}", d.rel));
                }
            }
            // In an outside cache, an addition at its top level is another package's
            // (an agent's `npx eslint` makes a new `_npx/<hash>/`, a `pip install` a
            // new module): the check reads what it filled itself at the baseline (a
            // new top-level module or plugin in a site directory is the toolchain
            // digests', §3.12; a new git dependency is named in `Cargo.toml`). An
            // addition inside a directory already there is the agent's reach into a
            // package the check reads (a fresh review added a `debug` package inside
            // npx's copy of mocha, which node found first).
            let t0_dirs = if d.external {
                parent_dirs(d.t0.keys())
            } else {
                std::collections::BTreeSet::new()
            };
            for p in now.keys().filter(|p| !d.t0.contains_key(*p)) {
                // (bytecode the exec's imports cached beside a package is never read
                // by the check: its Python caches under its own PYTHONPYCACHEPREFIX)
                let bytecode = p.split('/').any(|c| c == "__pycache__");
                if !d.external || (inside_existing(p, &t0_dirs) && !bytecode) {
                    out.push(format!("{}/{p}", d.rel));
                }
            }
        }
        out.sort();
        if out.len() > 20 {
            let more = out.len() - 20;
            out.truncate(20);
            out.push(format!("… and {more} more"));
        }
        out
    }

    /// Digests `dirs` (absolute, outside the tree) like the dependency directories from
    /// now on: caches the check reads that the exec may write. A change the check did
    /// not make is listed by [`Self::dependencies_changed`] as a changed dependency.
    pub fn watch_external(&mut self, dirs: &[PathBuf]) {
        for d in dirs {
            let rel = d.display().to_string();
            if d.is_dir() && !self.deps.iter().any(|x| x.rel == rel) {
                self.deps.push(Dependency {
                    t0: stat_digests(d),
                    rel,
                    external: true,
                });
            }
        }
    }

    /// The dependency directories of the working tree (`now`, root-relative, from
    /// its last snapshot) that the room does not link: made since t0. A check in the
    /// room does not see them, the checkout does, so code can be right in one and
    /// wrong in the other (a fresh review kept the wrong `add` in a new
    /// `impl/venv/` holding a `pyvenv.cfg`, behind an `ImportError` fallback).
    #[must_use]
    pub fn unlinked_dependencies(&self, now: &[String]) -> Vec<String> {
        now.iter()
            .filter(|rel| !self.deps.iter().any(|d| !d.external && d.rel == **rel))
            .cloned()
            .collect()
    }

    /// Links the dependency directories `rels` (root-relative, made since t0) into
    /// the room from the next sync on, digested from now, as under
    /// `[clean_room] dependencies = "agent"` the agent may install packages.
    pub fn adopt_dependencies(&mut self, rels: &[String]) {
        for rel in rels {
            self.deps.push(Dependency {
                t0: stat_digests(&self.workdir.join(rel)),
                rel: rel.clone(),
                external: false,
            });
        }
    }

    /// Accepts the dependency directories as they are now: after every check (its
    /// writes were judged as the check's), and before one when the agent may change
    /// them (`[clean_room] dependencies = "agent"`).
    pub fn rebase_dependencies(&mut self) {
        for d in &mut self.deps {
            d.t0 = stat_digests(&self.workdir.join(&d.rel));
        }
    }

    /// The environment changes of a check run: `(set, remove)`. `base` is loopexec's
    /// own environment.
    #[must_use]
    pub fn env(&self, base: &[(String, String)]) -> (Vec<(String, String)>, Vec<String>) {
        let get = |k: &str| base.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let mut set = vec![
            ("HOME".to_string(), self.home.display().to_string()),
            ("PWD".to_string(), self.root.display().to_string()),
        ];
        let mut remove = Vec::new();
        if let Some(home) = get("HOME") {
            let home = PathBuf::from(home);
            for (var, sub) in [
                ("CARGO_HOME", ".cargo"),
                ("RUSTUP_HOME", ".rustup"),
                ("GOPATH", "go"),
                ("PYTHONUSERBASE", ".local"),
                ("npm_config_cache", ".npm"),
            ] {
                if get(var).is_none() && home.join(sub).is_dir() {
                    set.push((var.to_string(), home.join(sub).display().to_string()));
                }
            }
        }
        // Build caches of the room's own, in the state directory, whatever the user
        // set: the exec may write `~/.cache/go-build` or a shared `CARGO_TARGET_DIR`
        // (a test binary replaced there is one cargo calls fresh).
        set.push((
            "GOCACHE".into(),
            self.base.join(GO_CACHE).display().to_string(),
        ));
        set.push((
            "CARGO_TARGET_DIR".into(),
            self.base.join(CARGO_TARGET).display().to_string(),
        ));
        set.push((
            "TMPDIR".into(),
            self.base.join(CHECK_TMP).display().to_string(),
        ));
        self.shared_env(base, &self.root, &mut set, &mut remove);
        (set, remove)
    }

    /// The environment of a checkout confirmation (SPEC §3.9), as [`Self::env`]
    /// gives the room's: the user's own (`HOME`, `TMPDIR`, the workdir's path: what
    /// the code under test sees when its user runs the check), with only the build
    /// caches loopexec must own — `CARGO_TARGET_DIR` (cold, [`Self::checkout_dirs`])
    /// and `GOCACHE` — cargo's runner, a `PATH` without entries in the workdir, and no
    /// `GIT_*` or `LOOPEXEC_*` variable.
    #[must_use]
    pub fn checkout_env(&self, base: &[(String, String)]) -> (Vec<(String, String)>, Vec<String>) {
        let mut set = vec![
            ("PWD".to_string(), self.workdir.display().to_string()),
            (
                "GOCACHE".into(),
                self.base.join(GO_CACHE).display().to_string(),
            ),
            (
                "CARGO_TARGET_DIR".into(),
                self.base.join(CHECKOUT_TARGET).display().to_string(),
            ),
        ];
        let mut remove = Vec::new();
        self.shared_env(base, &self.workdir, &mut set, &mut remove);
        (set, remove)
    }

    /// What the room's and the checkout's check environments share: loopexec as
    /// cargo's runner (its configuration read from `root`), `PATH` without entries
    /// in the workdir, `GIT_*` and `LOOPEXEC_*` removed.
    fn shared_env(
        &self,
        base: &[(String, String)],
        root: &Path,
        set: &mut Vec<(String, String)>,
        remove: &mut Vec<String>,
    ) {
        let get = |k: &str| base.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        // loopexec as cargo's runner: a test cannot rewrite the binaries cargo runs
        // after it (crate::proc::cargo_runner)
        if let Ok(exe) = std::env::current_exe() {
            let cargo_home = get("CARGO_HOME")
                .map(PathBuf::from)
                .or_else(|| get("HOME").map(|h| PathBuf::from(h).join(".cargo")));
            let mut configs = vec![root.join(".cargo/config.toml"), root.join(".cargo/config")];
            if let Some(c) = cargo_home {
                configs.push(c.join("config.toml"));
                configs.push(c.join("config"));
            }
            set.extend(crate::proc::cargo_runner::runner_env(&exe, base, &configs));
        }
        if let Some(path) = get("PATH") {
            let kept: Vec<&str> = path
                .split(':')
                .filter(|e| {
                    !e.is_empty()
                        && Path::new(e).is_absolute()
                        && !Path::new(e).starts_with(&self.workdir)
                })
                .collect();
            set.push(("PATH".into(), kept.join(":")));
        }
        for (k, _) in base {
            if k.starts_with("GIT_") || k.starts_with("LOOPEXEC_") {
                remove.push(k.clone());
            }
        }
    }
}

/// Caches outside the tree a check reads its dependencies' code from: cargo's git
/// checkouts and database (`$CARGO_HOME/git`, for a check that runs cargo or a
/// `workdir` with a `Cargo.toml`), npx's packages (`_npx` in npm's cache, for a check
/// that runs `npx`, npm, yarn or pnpm, whose scripts may run `npx`), and
/// the Python `site_dirs` the check's interpreters use (a virtual environment under
/// `~/.cache`, as poetry makes). Each is digested twice per check, so a check that
/// cannot read one does not pay for it. Existing directories only; the caller keeps
/// those the exec may write.
#[must_use]
pub fn external_caches(check: &str, workdir: &Path, site_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let words = crate::observe::toolchain::command_words(check);
    let runs = |w: &str| words.iter().any(|x| x == w);
    let cargo = runs("cargo") || workdir.join("Cargo.toml").is_file();
    let npx = ["npx", "npm", "yarn", "pnpm"].iter().any(|w| runs(w));
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let under = |var: &str, sub: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(sub)))
    };
    let mut out: Vec<PathBuf> = [
        under("CARGO_HOME", ".cargo")
            .map(|c| c.join("git"))
            .filter(|_| cargo),
        under("npm_config_cache", ".npm")
            .map(|c| c.join("_npx"))
            .filter(|_| npx),
    ]
    .into_iter()
    .flatten()
    .chain(site_dirs.iter().cloned())
    .filter(|d| d.is_dir())
    .collect();
    out.sort();
    out.dedup();
    out
}

/// Builds `room_nm`, the clean room's `node_modules`, from `work_nm`, the working
/// tree's: a real directory holding one link per entry (per package of a `@scope`),
/// so that
/// * a package is read from the working tree's `node_modules` (hashed as a
///   dependency directory);
/// * a link that leads back into the working tree outside any `node_modules` (npm
///   workspaces: `node_modules/calc -> ../packages/calc`) leads to the same place in
///   the room instead: the snapshot's copy, not the agent's live files;
/// * `.cache` (tools' caches, not hashed) is the room's own, emptied before every
///   check: nothing the agent, or an earlier check, left there is read.
///
/// Rebuilt only when `work_nm`'s entries changed (its stat data, kept in a marker
/// file), so a run of checks pays one `stat` per check.
///
/// # Errors
/// The room's directory cannot be written.
fn link_node_modules(
    work_nm: &Path,
    room_nm: &Path,
    workdir: &Path,
    room: &Path,
) -> Result<(), CleanRoomError> {
    use std::os::unix::fs::MetadataExt;
    let marker = room_nm.join(".loopexec-linked");
    let key = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| {
                format!(
                    "{} {} {} {} {}",
                    m.dev(),
                    m.ino(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime_nsec()
                )
            })
            .unwrap_or_default()
    };
    // the scopes' stat data too: a package added to `@scope/` moves only that directory
    let mut want = key(work_nm);
    if let Ok(rd) = std::fs::read_dir(work_nm) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with('@') {
                want.push('\n');
                want.push_str(&key(&e.path()));
            }
        }
    }
    let cache = room_nm.join(".cache");
    let real_dir = std::fs::symlink_metadata(room_nm).is_ok_and(|m| m.is_dir());
    if real_dir && std::fs::read_to_string(&marker).is_ok_and(|k| k == want) {
        // what an earlier check left in the room's cache is not read by this one
        if std::fs::read_dir(&cache).is_ok_and(|mut d| d.next().is_some()) {
            std::fs::remove_dir_all(&cache).map_err(io_err(&cache))?;
            std::fs::create_dir_all(&cache).map_err(io_err(&cache))?;
        }
        return Ok(());
    }
    if let Ok(m) = std::fs::symlink_metadata(room_nm) {
        if m.is_dir() {
            std::fs::remove_dir_all(room_nm).map_err(io_err(room_nm))?;
        } else {
            std::fs::remove_file(room_nm).map_err(io_err(room_nm))?;
        }
    }
    std::fs::create_dir_all(room_nm).map_err(io_err(room_nm))?;
    let real_work = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    let link_entries = |from: &Path, to: &Path| -> Result<(), CleanRoomError> {
        let Ok(rd) = std::fs::read_dir(from) else {
            return Ok(());
        };
        for e in rd.flatten() {
            let name = e.file_name();
            let text = name.to_string_lossy();
            if text == ".cache" || text == ".loopexec-linked" || text.starts_with('@') {
                continue;
            }
            let src = e.path();
            let dest = to.join(&name);
            // a link into the working tree (outside any node_modules) is re-pointed
            // at the room's copy of the same path
            let target = std::fs::canonicalize(&src)
                .ok()
                .and_then(|r| {
                    let rel = r.strip_prefix(&real_work).ok()?;
                    let inside_deps = rel.components().any(|c| c.as_os_str() == "node_modules");
                    (!inside_deps).then(|| room.join(rel))
                })
                .unwrap_or(src);
            std::os::unix::fs::symlink(&target, &dest).map_err(io_err(&dest))?;
        }
        Ok(())
    };
    link_entries(work_nm, room_nm)?;
    if let Ok(rd) = std::fs::read_dir(work_nm) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with('@') && e.path().is_dir() {
                let scope = room_nm.join(e.file_name());
                std::fs::create_dir_all(&scope).map_err(io_err(&scope))?;
                link_entries(&e.path(), &scope)?;
            }
        }
    }
    std::fs::create_dir_all(&cache).map_err(io_err(&cache))?;
    std::fs::write(&marker, want).map_err(io_err(&marker))?;
    Ok(())
}

/// Per-file digests of a directory's stat data (path, size, mode, inode, mtime and
/// ctime — ctime moves on every write and cannot be set back), symlink targets
/// included. Missing directory: empty.
fn stat_digests(dir: &Path) -> BTreeMap<String, String> {
    // `node_modules/.cache` is where tools a check runs keep their caches (nyc, ava,
    // babel-loader, eslint): written by honest checks, it is no dependency.
    let skip_top = dir.file_name().is_some_and(|n| n == "node_modules");
    fn walk(dir: &Path, rel: &str, out: &mut BTreeMap<String, String>, skip_cache: bool) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if skip_cache && rel.is_empty() && name == ".cache" {
                continue;
            }
            let r = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let Ok(m) = std::fs::symlink_metadata(e.path()) else {
                continue;
            };
            if m.is_dir() {
                walk(&e.path(), &r, out, false);
                continue;
            }
            let link = std::fs::read_link(e.path())
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            let mut h = blake3::Hasher::new();
            for v in [m.len(), u64::from(m.mode()), m.ino()] {
                h.update(&v.to_le_bytes());
            }
            for v in [m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()] {
                h.update(&v.to_le_bytes());
            }
            h.update(link.as_bytes());
            out.insert(r, h.finalize().to_hex()[..16].to_string());
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, "", &mut out, skip_top);
    out
}

/// Removes clean rooms whose workdir no longer exists (temporary workdirs of tests and
/// scripts), so the state directory does not grow without bound.
/// Removes everything inside `dir`, keeping `dir` itself.
///
/// # Errors
/// An entry that cannot be removed.
fn empty_dir(dir: &Path) -> Result<(), CleanRoomError> {
    let rd = std::fs::read_dir(dir).map_err(io_err(dir))?;
    for e in rd {
        remove_entry(&e.map_err(io_err(dir))?)?;
    }
    Ok(())
}

/// Removes one directory entry: a directory with all it holds, anything else as a
/// file (a link is removed, not followed).
///
/// # Errors
/// The entry cannot be removed.
fn remove_entry(e: &std::fs::DirEntry) -> Result<(), CleanRoomError> {
    let p = e.path();
    let gone = if e.file_type().is_ok_and(|t| t.is_dir()) {
        std::fs::remove_dir_all(&p)
    } else {
        std::fs::remove_file(&p)
    };
    gone.map_err(io_err(&p))
}

fn remove_abandoned(all: &Path) {
    let Ok(rd) = std::fs::read_dir(all) else {
        return;
    };
    for e in rd.flatten() {
        let marker = e.path().join("workdir");
        let Ok(bytes) = std::fs::read(&marker) else {
            continue;
        };
        let wd = PathBuf::from(String::from_utf8_lossy(&bytes).into_owned());
        if !wd.exists() {
            // Best effort: a clean room that cannot be removed now is retried next run.
            if std::fs::remove_dir_all(e.path()).is_err() {
                continue;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pytest's rootdir above the workdir is found as pytest finds it, unless the
    /// check names its own configuration file or rootdir.
    #[test]
    fn a_pytest_rootdir_above_the_workdir_is_found_unless_the_check_names_one() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        let svc = root.join("svc");
        std::fs::create_dir_all(&svc).unwrap();
        std::fs::write(root.join("pytest.ini"), "[pytest]\n").unwrap();
        let rows: &[(&str, bool)] = &[
            ("python3 -m pytest -q", true),
            ("pytest", true),
            ("cd sub && .venv/bin/pytest", true),
            ("python3 -m pytest -c pytest-ci.ini", false),
            ("pytest --rootdir=.", false),
            ("pytest -cci.ini", false),
            ("python3 -m unittest", false),
            ("cargo test", false),
        ];
        for (check, above) in rows {
            assert_eq!(
                pytest_rootdir_above(&svc, check).is_some(),
                *above,
                "{check}"
            );
        }
        // the workdir's own configuration is the rootdir
        std::fs::write(svc.join("tox.ini"), "[pytest]\naddopts = -q\n").unwrap();
        assert!(pytest_rootdir_above(&svc, "pytest").is_none());
    }

    #[test]
    fn env_drops_workdir_path_entries_and_git_variables_and_keeps_toolchains() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        std::fs::create_dir_all(home.join(".cargo")).unwrap();
        let wd = tmp.path().join("wd");
        std::fs::create_dir_all(&wd).unwrap();
        let room =
            CleanRoom::prepare(&tmp.path().join("state"), &wd, Excludes::default(), &[]).unwrap();
        let base = vec![
            ("HOME".to_string(), home.display().to_string()),
            (
                "PATH".to_string(),
                format!("{}/bin:/usr/bin:bin::./x", wd.display()),
            ),
            ("GIT_DIR".to_string(), "/x".to_string()),
            ("LOOPEXEC_RUN_ID".to_string(), "r".to_string()),
        ];
        let (set, remove) = room.env(&base);
        let get = |k: &str| set.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("PATH").as_deref(), Some("/usr/bin"));
        assert_eq!(
            get("CARGO_HOME"),
            Some(home.join(".cargo").display().to_string())
        );
        assert_ne!(get("HOME"), Some(home.display().to_string()));
        assert!(get("CARGO_TARGET_DIR").is_some());
        assert_eq!(
            remove,
            vec!["GIT_DIR".to_string(), "LOOPEXEC_RUN_ID".to_string()]
        );
    }

    #[test]
    fn dependency_changes_are_listed() {
        let tmp = tempfile::tempdir().unwrap();
        let wd = tmp.path().join("wd");
        std::fs::create_dir_all(wd.join("node_modules/.bin")).unwrap();
        std::fs::write(wd.join("node_modules/.bin/jest"), "real").unwrap();
        let room = CleanRoom::prepare(
            &tmp.path().join("state"),
            &wd,
            Excludes::default(),
            &["node_modules".to_string()],
        )
        .unwrap();
        assert!(room.dependencies_changed().is_empty());
        std::fs::write(wd.join("node_modules/.bin/jest"), "shim").unwrap();
        std::fs::write(wd.join("node_modules/.bin/vitest"), "new").unwrap();
        // tools' caches are no dependency (nyc, babel-loader, ava write there)
        std::fs::create_dir_all(wd.join("node_modules/.cache/nyc")).unwrap();
        std::fs::write(wd.join("node_modules/.cache/nyc/x.json"), "{}").unwrap();
        assert_eq!(
            room.dependencies_changed(),
            vec!["node_modules/.bin/jest", "node_modules/.bin/vitest"]
        );
    }

    /// In a cache outside the tree, a new top-level entry is another package's (an
    /// agent's `npx eslint`), accepted; an addition inside a directory already there
    /// is named (ninth review: a `debug` package added inside npx's copy of mocha),
    /// except bytecode the exec's imports cached.
    #[test]
    fn an_outside_cache_names_additions_inside_existing_packages() {
        let tmp = tempfile::tempdir().unwrap();
        let wd = tmp.path().join("wd");
        std::fs::create_dir_all(&wd).unwrap();
        let npx = tmp.path().join("npx");
        std::fs::create_dir_all(npx.join("a1/node_modules/mocha/lib")).unwrap();
        std::fs::write(npx.join("a1/node_modules/mocha/lib/runner.js"), "real").unwrap();
        let mut room =
            CleanRoom::prepare(&tmp.path().join("state"), &wd, Excludes::default(), &[]).unwrap();
        room.watch_external(std::slice::from_ref(&npx));
        // another package's npx directory, and bytecode beside a package: accepted
        std::fs::create_dir_all(npx.join("b2/node_modules/eslint")).unwrap();
        std::fs::write(npx.join("b2/node_modules/eslint/index.js"), "x").unwrap();
        std::fs::create_dir_all(npx.join("a1/node_modules/mocha/lib/__pycache__")).unwrap();
        std::fs::write(npx.join("a1/node_modules/mocha/lib/__pycache__/x.pyc"), "x").unwrap();
        assert_eq!(room.dependencies_changed(), Vec::<String>::new());
        // a package planted inside mocha's directory: named
        let shim = npx.join("a1/node_modules/mocha/node_modules/debug");
        std::fs::create_dir_all(&shim).unwrap();
        std::fs::write(shim.join("index.js"), "shim").unwrap();
        assert_eq!(
            room.dependencies_changed(),
            vec![format!(
                "{}/a1/node_modules/mocha/node_modules/debug/index.js",
                npx.display()
            )]
        );
    }

    /// Seventh review: a test binary rewrote itself in the room's cargo target during a
    /// red check, and the next checks (the confirmation too) ran it as fresh. Before a
    /// confirmation the cargo target and the check's `HOME` are emptied as well as the
    /// caches inside the tree.
    #[test]
    fn a_confirmation_starts_without_the_cargo_target_or_home_a_check_left() {
        let tmp = tempfile::tempdir().unwrap();
        let wd = tmp.path().join("wd");
        std::fs::create_dir_all(&wd).unwrap();
        let mut room =
            CleanRoom::prepare(&tmp.path().join("state"), &wd, Excludes::default(), &[]).unwrap();
        let planted = room.base.join(CARGO_TARGET).join("debug/deps/calc-0123");
        std::fs::create_dir_all(planted.parent().unwrap()).unwrap();
        std::fs::write(&planted, "#!/bin/sh\necho 'test result: ok. 1 passed'\n").unwrap();
        std::fs::write(room.home.join(".npmrc"), "node-options=--require /x.js\n").unwrap();
        // the check's TMPDIR is the room's, and a cache a red check left there goes too
        let (set, _) = room.env(&[]);
        let tmpdir = set.iter().find(|(k, _)| k == "TMPDIR").unwrap().1.clone();
        assert_eq!(PathBuf::from(&tmpdir), room.base.join(CHECK_TMP));
        std::fs::create_dir_all(room.base.join("tmp/jest_0")).unwrap();
        std::fs::write(
            room.base.join("tmp/jest_0/calc.test.js"),
            "expect(5).toBe(5)",
        )
        .unwrap();
        let cleared = room.clear_leftovers().unwrap();
        assert_eq!(
            cleared,
            vec![
                "<cargo-target>".to_string(),
                "<home>".to_string(),
                "<tmp>".to_string()
            ]
        );
        assert!(room.base.join(CHECK_TMP).is_dir(), "TMPDIR is made again");
        assert!(!planted.exists());
        assert!(room.home.is_dir(), "HOME is made again, empty");
        assert_eq!(std::fs::read_dir(&room.home).unwrap().count(), 0);
        // nothing left: nothing to clear
        assert!(room.clear_leftovers().unwrap().is_empty());
    }

    /// The room's `node_modules`: a package is linked to the workdir's, a workspace
    /// link into the tree leads to the room's copy, `.cache` is the room's own and
    /// emptied before every check, and a package added later is linked at the next.
    #[test]
    fn node_modules_links_lead_to_the_room() {
        let tmp = tempfile::tempdir().unwrap();
        let wd = tmp.path().join("wd");
        let room = tmp.path().join("room");
        std::fs::create_dir_all(wd.join("node_modules/left-pad")).unwrap();
        std::fs::create_dir_all(wd.join("node_modules/@s/x")).unwrap();
        std::fs::create_dir_all(wd.join("node_modules/.cache")).unwrap();
        std::fs::write(wd.join("node_modules/.cache/planted.js"), "x").unwrap();
        std::fs::create_dir_all(wd.join("packages/calc")).unwrap();
        std::os::unix::fs::symlink("../packages/calc", wd.join("node_modules/calc")).unwrap();
        std::fs::create_dir_all(&room).unwrap();
        let (wnm, rnm) = (wd.join("node_modules"), room.join("node_modules"));
        link_node_modules(&wnm, &rnm, &wd, &room).unwrap();
        let real = |p: &Path| std::fs::canonicalize(p).unwrap();
        assert_eq!(
            std::fs::read_link(rnm.join("left-pad")).unwrap(),
            wnm.join("left-pad")
        );
        assert_eq!(
            std::fs::read_link(rnm.join("@s/x")).unwrap(),
            wnm.join("@s/x")
        );
        assert_eq!(
            std::fs::read_link(rnm.join("calc")).unwrap(),
            room.join("packages/calc"),
            "the workspace link leads to the room's copy, not {}",
            real(&wnm.join("calc")).display()
        );
        assert_eq!(std::fs::read_dir(rnm.join(".cache")).unwrap().count(), 0);
        // a check's cache is gone before the next check
        std::fs::write(rnm.join(".cache/left.js"), "x").unwrap();
        link_node_modules(&wnm, &rnm, &wd, &room).unwrap();
        assert_eq!(std::fs::read_dir(rnm.join(".cache")).unwrap().count(), 0);
        // a package installed later is linked
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::create_dir_all(wnm.join("new-dep")).unwrap();
        link_node_modules(&wnm, &rnm, &wd, &room).unwrap();
        assert!(std::fs::read_link(rnm.join("new-dep")).is_ok());
    }
}
