//! loopexec's own snapshot store: what the guards and the clean room see of a tree.
//!
//! The store never asks the user's repository what the tree holds. loopexec walks the
//! directory itself, so `.gitignore`, global excludes files, `update-index
//! --skip-worktree/--assume-unchanged`, `git replace`, clean/smudge filters, hooks and
//! a nested repository cannot hide or disguise a file. git is used only as an object
//! database, in a private bare repository in loopexec's state directory
//! ([`crate::observe::tree::store_path`]) that works the
//! same whether or not the workdir is a git repository:
//!
//! * every command runs with `GIT_DIR` set to the store, the system and global git
//!   configuration off (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`), replace
//!   refs off (`GIT_NO_REPLACE_OBJECTS`), and `info/attributes` unsetting every
//!   content-changing attribute, so a blob is always the file's bytes
//!   ([`super::git::git_cmd`] recognises the store by its marker file);
//! * blobs are written with `hash-object --no-filters`; trees are built from a
//!   throw-away index fed with `update-index --index-info`, never from a work tree.
//!
//! What a snapshot holds: every regular file, executable bit and symlink below the
//! root, ignored files included, except
//! * `.git` entries at any depth (a repository's internals; a nested repository's
//!   *files* are included),
//! * `.loopexec` at any depth (loopexec's own state),
//! * the caches and dependency directories of [`Excludes`] (listed in `run_started`).
//!
//! Files are re-hashed only when their size, mtime, ctime, inode or mode changed since
//! the last scan, or when they changed within [`RACY_WINDOW`] of it (a same-size write
//! in the same clock tick as a scan would otherwise be missed).

use super::git::{self, GitError, TreeEntry};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Name of the marker file that makes [`super::git::git_cmd`] treat a directory as a
/// snapshot store (isolated configuration, `GIT_DIR` set).
pub const STORE_MARKER: &str = "loopexec-snapshot-store";

/// A file changed this close (ctime) to the previous scan is hashed again, whatever
/// its stat data says.
pub const RACY_WINDOW: Duration = Duration::from_secs(2);

/// Directory names excluded at any depth: caches that tools rebuild from the tree.
pub const CACHE_DIRS: &[&str] = &[
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    ".tox",
    ".nox",
    ".gradle",
    ".next",
    ".turbo",
    ".parcel-cache",
];

/// Dependency directories: excluded from snapshots, hashed at t0 and made available
/// to the clean room read-only (see [`crate::engine`]'s clean room). `node_modules`
/// at any depth; `.venv`/`venv` when they hold a `pyvenv.cfg`.
pub const DEPENDENCY_DIRS: &[&str] = &["node_modules", ".venv", "venv"];

/// Errors of the snapshot store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A git step of the store failed.
    #[error(transparent)]
    Git(#[from] GitError),
    /// Reading the tree or writing the store failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A path that a tree cannot hold (newline, not UTF-8).
    #[error("{0:?}: file names with a newline or that are not UTF-8 cannot be snapshotted; rename the file")]
    BadName(PathBuf),
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The private object store of one workdir ([`crate::observe::tree::store_path`]).
#[derive(Debug, Clone)]
pub struct SnapshotStore {
    git_dir: PathBuf,
}

impl SnapshotStore {
    /// Opens the store at `git_dir`, creating it when absent.
    ///
    /// # Errors
    /// [`StoreError`] when git cannot create it or the directory is not writable.
    pub fn open(git_dir: &Path) -> Result<SnapshotStore, StoreError> {
        let marker = git_dir.join(STORE_MARKER);
        if !marker.is_file() {
            std::fs::create_dir_all(git_dir).map_err(io_err(git_dir))?;
            let mut init = std::process::Command::new("git");
            init.args(["init", "-q", "--bare"])
                .arg(git_dir)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env_remove("GIT_DIR")
                .env_remove("GIT_WORK_TREE")
                .env_remove("GIT_TEMPLATE_DIR")
                .arg("--template=");
            git::run(&mut init)?;
            let info = git_dir.join("info");
            std::fs::create_dir_all(&info).map_err(io_err(&info))?;
            let attrs = info.join("attributes");
            std::fs::write(
                &attrs,
                "* -text -eol -filter -ident -working-tree-encoding -diff -merge\n",
            )
            .map_err(io_err(&attrs))?;
            std::fs::write(&marker, "loopexec snapshot store\n").map_err(io_err(&marker))?;
        }
        Ok(SnapshotStore {
            git_dir: git_dir.to_path_buf(),
        })
    }

    /// The store's git dir; pass it as `dir` to the read functions of
    /// [`super::git`] (`ls_tree`, `cat_blobs`, `changed_paths`, `read_blob`).
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.git_dir
    }

    /// A commit for `tree` under `refs/loopexec/<run_id>/<label>` (no parent; the
    /// author is loopexec). Returns the commit id.
    ///
    /// # Errors
    /// A bad ref component or a failing git step.
    pub fn commit(&self, tree: &str, run_id: &str, label: &str) -> Result<String, StoreError> {
        let refname = git::snapshot_ref(run_id, label)?;
        let mut ct = git::git_cmd(&self.git_dir);
        ct.args(["commit-tree", "--no-gpg-sign", tree, "-m"])
            .arg(format!("loopexec snapshot {run_id}/{label}"))
            .env("GIT_AUTHOR_NAME", "loopexec")
            .env("GIT_AUTHOR_EMAIL", "loopexec@localhost")
            .env("GIT_COMMITTER_NAME", "loopexec")
            .env("GIT_COMMITTER_EMAIL", "loopexec@localhost")
            .env("GIT_AUTHOR_DATE", "1970-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "1970-01-01T00:00:00Z");
        let commit = String::from_utf8_lossy(&git::run(&mut ct)?)
            .trim()
            .to_string();
        if commit.is_empty() {
            return Err(GitError::BadOutput("commit-tree printed no id".into()).into());
        }
        git::run(git::git_cmd(&self.git_dir).args(["update-ref", &refname, &commit]))?;
        Ok(commit)
    }

    /// Builds the tree object of `entries` (path → entry) and returns its id.
    ///
    /// # Errors
    /// A failing git step.
    pub fn write_tree(&self, entries: &BTreeMap<String, FileEntry>) -> Result<String, StoreError> {
        let tmp = tempfile::Builder::new()
            .prefix("loopexec-tree")
            .tempdir()
            .map_err(io_err(Path::new("temporary index")))?;
        let index = tmp.path().join("index");
        let mut input = Vec::with_capacity(entries.len() * 64);
        for (path, e) in entries {
            write!(input, "{} {}\t{}\0", e.mode, e.oid, path).map_err(io_err(Path::new(path)))?;
        }
        let mut ui = git::git_cmd(&self.git_dir);
        ui.env("GIT_INDEX_FILE", &index)
            .args(["update-index", "--add", "-z", "--index-info"]);
        git::run_with_input(&mut ui, input)?;
        let mut wt = git::git_cmd(&self.git_dir);
        wt.env("GIT_INDEX_FILE", &index).arg("write-tree");
        let tree = String::from_utf8_lossy(&git::run(&mut wt)?)
            .trim()
            .to_string();
        if tree.is_empty() {
            return Err(GitError::BadOutput("write-tree printed no id".into()).into());
        }
        Ok(tree)
    }

    /// The entries of `tree` (regular files and symlinks), keyed by path.
    ///
    /// # Errors
    /// A failing git step.
    pub fn entries(&self, tree: &str) -> Result<BTreeMap<String, FileEntry>, StoreError> {
        Ok(git::ls_tree(&self.git_dir, tree)?
            .into_iter()
            .filter(|e: &TreeEntry| e.kind == "blob")
            .map(|e| {
                (
                    e.path,
                    FileEntry {
                        mode: e.mode,
                        oid: e.oid,
                    },
                )
            })
            .collect())
    }
}

/// One file of a snapshot: git mode (`100644`, `100755`, `120000`) and blob id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FileEntry {
    pub mode: String,
    pub oid: String,
}

/// What a scan leaves out of a snapshot.
#[derive(Debug, Clone, Default)]
pub struct Excludes {
    /// User globs (`[snapshot] exclude`), root-relative, matched against directories
    /// and files.
    pub globs: globset::GlobSet,
    /// The user globs as written (for `run_started`).
    pub patterns: Vec<String>,
}

impl Excludes {
    /// The built-in rules plus `patterns`.
    ///
    /// # Errors
    /// A pattern that is not a valid glob.
    pub fn new(patterns: &[String]) -> Result<Excludes, super::guards::GuardError> {
        Ok(Excludes {
            globs: super::guards::build_globset(patterns)?,
            patterns: patterns.to_vec(),
        })
    }

    /// Why a directory entry is left out, or `None` to keep it. `dir` is the absolute
    /// directory holding it, `rel` its root-relative path.
    #[must_use]
    pub fn why(&self, dir: &Path, name: &str, rel: &str, is_dir: bool) -> Option<&'static str> {
        if name == ".git" {
            return Some("git");
        }
        if name == ".loopexec" {
            return Some("loopexec");
        }
        if is_dir {
            if CACHE_DIRS.contains(&name) {
                return Some("cache");
            }
            if name == "target" && dir.join("Cargo.toml").is_file() {
                return Some("cache");
            }
            if is_dependency_dir(dir, name) {
                return Some("dependencies");
            }
        }
        if self.globs.is_match(rel) {
            return Some("declared");
        }
        None
    }
}

/// True for a dependency directory ([`DEPENDENCY_DIRS`]) named `name` inside `dir`.
#[must_use]
pub fn is_dependency_dir(dir: &Path, name: &str) -> bool {
    match name {
        "node_modules" => true,
        ".venv" | "venv" => dir.join(name).join("pyvenv.cfg").is_file(),
        _ => false,
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Stat {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    mode: u32,
}

impl Stat {
    fn of(m: &std::fs::Metadata) -> Stat {
        Stat {
            size: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
            ino: m.ino(),
            mode: m.mode(),
        }
    }
}

/// The result of one scan.
#[derive(Debug, Clone)]
pub struct Scanned {
    /// The tree object id.
    pub tree: String,
    /// Every file in it.
    pub entries: BTreeMap<String, FileEntry>,
    /// Directories left out, with the rule that excluded them (`cache`,
    /// `dependencies`, `declared`), root-relative; `.git` and `.loopexec` not listed.
    pub excluded: Vec<(String, &'static str)>,
}

/// Scans one directory tree into the store, re-hashing only what changed.
#[derive(Debug)]
pub struct TreeScanner {
    root: PathBuf,
    excludes: Excludes,
    cache: HashMap<String, (Stat, FileEntry)>,
    last_scan: Option<SystemTime>,
}

impl TreeScanner {
    /// A scanner of `root` with `excludes`.
    #[must_use]
    pub fn new(root: &Path, excludes: Excludes) -> TreeScanner {
        TreeScanner {
            root: root.to_path_buf(),
            excludes,
            cache: HashMap::new(),
            last_scan: None,
        }
    }

    /// The directory this scanner reads.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Walks the tree, writes new and changed blobs into `store` and returns the tree.
    ///
    /// # Errors
    /// An unreadable directory or file, an unusable file name, a failing git step.
    /// A file that cannot be read is an error, never a silent omission.
    pub fn scan(&mut self, store: &SnapshotStore) -> Result<Scanned, StoreError> {
        let started = SystemTime::now();
        let racy_from = self.last_scan.map(|t| {
            let t = t.checked_sub(RACY_WINDOW).unwrap_or(t);
            t.duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX))
        });
        let mut found: Vec<(String, Stat, bool)> = Vec::new();
        let mut excluded = Vec::new();
        walk(&self.root, "", &self.excludes, &mut found, &mut excluded)?;
        let mut entries = BTreeMap::new();
        let mut to_hash: Vec<(String, Stat, bool)> = Vec::new();
        for (rel, st, is_link) in found {
            let trusted = self.cache.get(&rel).filter(|(s, _)| {
                *s == st && racy_from.is_some_and(|r| st.ctime_ns < r && st.mtime_ns < r)
            });
            if let Some((_, e)) = trusted {
                entries.insert(rel, e.clone());
            } else {
                to_hash.push((rel, st, is_link));
            }
        }
        let (links, files): (Vec<_>, Vec<_>) = to_hash.into_iter().partition(|(_, _, l)| *l);
        if !files.is_empty() {
            let mut input = Vec::new();
            for (rel, _, _) in &files {
                input.extend_from_slice(rel.as_bytes());
                input.push(b'\n');
            }
            let mut cmd = git::git_cmd(&store.git_dir);
            cmd.current_dir(&self.root).args([
                "hash-object",
                "-w",
                "--no-filters",
                "--stdin-paths",
            ]);
            let out = git::run_with_input(&mut cmd, input)?;
            let oids: Vec<&str> = std::str::from_utf8(&out)
                .map_err(|_| GitError::BadOutput("hash-object printed non-UTF-8".into()))?
                .lines()
                .collect();
            if oids.len() != files.len() {
                return Err(GitError::BadOutput(format!(
                    "hash-object printed {} ids for {} files",
                    oids.len(),
                    files.len()
                ))
                .into());
            }
            for ((rel, st, _), oid) in files.into_iter().zip(oids) {
                let mode = if st.mode & 0o111 != 0 {
                    "100755"
                } else {
                    "100644"
                };
                let e = FileEntry {
                    mode: mode.into(),
                    oid: oid.to_string(),
                };
                self.cache.insert(rel.clone(), (st, e.clone()));
                entries.insert(rel, e);
            }
        }
        for (rel, st, _) in links {
            let full = self.root.join(&rel);
            let target = std::fs::read_link(&full).map_err(io_err(&full))?;
            let mut cmd = git::git_cmd(&store.git_dir);
            cmd.args(["hash-object", "-w", "--no-filters", "--stdin"]);
            let out = git::run_with_input(
                &mut cmd,
                std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str()).to_vec(),
            )?;
            let e = FileEntry {
                mode: "120000".into(),
                oid: String::from_utf8_lossy(&out).trim().to_string(),
            };
            self.cache.insert(rel.clone(), (st, e.clone()));
            entries.insert(rel, e);
        }
        self.cache.retain(|k, _| entries.contains_key(k));
        let tree = store.write_tree(&entries)?;
        self.last_scan = Some(started);
        Ok(Scanned {
            tree,
            entries,
            excluded,
        })
    }

    /// Makes the directory equal to `target` (a tree id in `store`): files that
    /// differ are rewritten, files that are not in it are removed, files that match
    /// are not touched (their mtimes stay, so build tools see no change). Excluded
    /// directories are left alone.
    ///
    /// # Errors
    /// A failing git step or file operation.
    pub fn sync_to(
        &mut self,
        store: &SnapshotStore,
        target: &str,
    ) -> Result<SyncStats, StoreError> {
        self.sync_impl(store, target, None)
    }

    /// Like [`Self::sync_to`], for `only` these paths: each is made as `target` holds
    /// it (written, or removed when `target` does not hold it); every other file is
    /// left as it is.
    ///
    /// # Errors
    /// A failing git step or file operation.
    pub fn sync_paths(
        &mut self,
        store: &SnapshotStore,
        target: &str,
        only: &std::collections::BTreeSet<String>,
    ) -> Result<SyncStats, StoreError> {
        self.sync_impl(store, target, Some(only))
    }

    fn sync_impl(
        &mut self,
        store: &SnapshotStore,
        target: &str,
        only: Option<&std::collections::BTreeSet<String>>,
    ) -> Result<SyncStats, StoreError> {
        let mut now = self.scan(store)?;
        let mut want = store.entries(target)?;
        if let Some(only) = only {
            now.entries.retain(|p, _| only.contains(p));
            want.retain(|p, _| only.contains(p));
        }
        let mut stats = SyncStats::default();
        for path in now.entries.keys().filter(|p| !want.contains_key(*p)) {
            let full = self.root.join(path);
            std::fs::remove_file(&full).map_err(io_err(&full))?;
            stats.removed += 1;
            prune_empty_parents(&self.root, &full);
        }
        let to_write: Vec<(&String, &FileEntry)> = want
            .iter()
            .filter(|(p, e)| now.entries.get(*p) != Some(*e))
            .collect();
        let blobs = git::cat_blobs(
            &store.git_dir,
            &to_write
                .iter()
                .map(|(_, e)| e.oid.clone())
                .collect::<Vec<_>>(),
        )?;
        for ((path, e), blob) in to_write.into_iter().zip(blobs) {
            let full = self.root.join(path);
            let bytes = blob.ok_or_else(|| {
                GitError::BadOutput(format!(
                    "blob {} of {path} is missing from the store",
                    e.oid
                ))
            })?;
            write_entry(&full, e, &bytes)?;
            stats.written += 1;
        }
        // The scan at the start stays the reference: files written since have a newer
        // ctime (and inode), so the next scan hashes exactly those again.
        Ok(stats)
    }
}

/// What [`TreeScanner::sync_to`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncStats {
    /// Files written (new or different).
    pub written: usize,
    /// Files removed.
    pub removed: usize,
}

fn write_entry(full: &Path, e: &FileEntry, bytes: &[u8]) -> Result<(), StoreError> {
    if let Some(parent) = full.parent() {
        // A file where a directory must go (or the reverse) is replaced.
        let mut p = parent.to_path_buf();
        let mut chain = Vec::new();
        while !p.exists() {
            chain.push(p.clone());
            if !p.pop() {
                break;
            }
        }
        if let Ok(m) = std::fs::symlink_metadata(&p) {
            if !m.is_dir() {
                std::fs::remove_file(&p).map_err(io_err(&p))?;
            }
        }
        std::fs::create_dir_all(parent).map_err(io_err(parent))?;
    }
    match std::fs::symlink_metadata(full) {
        Ok(m) if m.is_dir() && !m.file_type().is_symlink() => {
            std::fs::remove_dir_all(full).map_err(io_err(full))?;
        }
        Ok(_) => std::fs::remove_file(full).map_err(io_err(full))?,
        Err(_) => {}
    }
    if e.mode == "120000" {
        let target: &std::ffi::OsStr = std::os::unix::ffi::OsStrExt::from_bytes(bytes);
        std::os::unix::fs::symlink(target, full).map_err(io_err(full))?;
    } else {
        std::fs::write(full, bytes).map_err(io_err(full))?;
        let mode = if e.mode == "100755" { 0o755 } else { 0o644 };
        std::fs::set_permissions(full, std::fs::Permissions::from_mode(mode))
            .map_err(io_err(full))?;
    }
    Ok(())
}

fn prune_empty_parents(root: &Path, file: &Path) {
    let mut p = file.parent();
    while let Some(d) = p {
        if d == root || !d.starts_with(root) {
            break;
        }
        // Fails (and stops) at the first directory that is not empty.
        if std::fs::remove_dir(d).is_err() {
            break;
        }
        p = d.parent();
    }
}

fn walk(
    dir: &Path,
    rel: &str,
    ex: &Excludes,
    found: &mut Vec<(String, Stat, bool)>,
    excluded: &mut Vec<(String, &'static str)>,
) -> Result<(), StoreError> {
    let rd = std::fs::read_dir(dir).map_err(io_err(dir))?;
    let mut items: Vec<std::fs::DirEntry> = Vec::new();
    for e in rd {
        items.push(e.map_err(io_err(dir))?);
    }
    items.sort_by_key(std::fs::DirEntry::file_name);
    for e in items {
        let name_os = e.file_name();
        let Some(name) = name_os.to_str() else {
            return Err(StoreError::BadName(dir.join(&name_os)));
        };
        if name.contains('\n') {
            return Err(StoreError::BadName(dir.join(name)));
        }
        let child_rel = if rel.is_empty() {
            name.to_string()
        } else {
            format!("{rel}/{name}")
        };
        let path = e.path();
        let meta = std::fs::symlink_metadata(&path).map_err(io_err(&path))?;
        let ft = meta.file_type();
        if let Some(why) = ex.why(dir, name, &child_rel, ft.is_dir()) {
            if !matches!(why, "git" | "loopexec") {
                excluded.push((child_rel, why));
            }
            continue;
        }
        if ft.is_dir() {
            walk(&path, &child_rel, ex, found, excluded)?;
        } else if ft.is_symlink() {
            found.push((child_rel, Stat::of(&meta), true));
        } else if ft.is_file() {
            found.push((child_rel, Stat::of(&meta), false));
        }
        // Sockets, FIFOs and devices hold no content a check can read as a file.
    }
    Ok(())
}

#[cfg(test)]
mod tests;
