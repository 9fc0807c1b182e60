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
//! * objects are written in-process ([`odb`]: blobs are the files' bytes, trees and
//!   commits built from loopexec's own listing), never by git from a work tree; a
//!   snapshot of an unchanged tree writes nothing but its ref.
//!
//! What a snapshot holds: every regular file, executable bit and symlink below the
//! root, ignored files included, except
//! * `.git` entries at any depth (a repository's internals; a nested repository's
//!   *files* are included),
//! * `.loopexec` at any depth (loopexec's own state),
//! * the caches and dependency directories of [`Excludes`] (listed in `run_started`).
//!
//! Files are re-hashed only when their size, mtime, ctime, inode or mode changed since
//! the last scan, or when they changed within the racy window of it (a same-size write
//! in the same clock tick as a scan would otherwise be missed): [`RACY_WINDOW_FINE`]
//! for a file whose timestamps carry sub-second parts, [`RACY_WINDOW`] for one whose
//! do not (a filesystem that keeps whole seconds). Each scan also says
//! which paths changed since the scanner's previous scan ([`Scanned::changed`]), so the
//! guards re-measure only those.

use super::git::{self, GitError};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Name of the marker file that makes [`super::git::git_cmd`] treat a directory as a
/// snapshot store (isolated configuration, `GIT_DIR` set).
pub const STORE_MARKER: &str = "loopexec-snapshot-store";

/// Name of the file in a snapshot store that records the workdir it snapshots (its
/// path's bytes): what `loopexec gc --stores` reads to find stores of workdirs that
/// no longer exist.
pub const WORKDIR_RECORD: &str = "loopexec-workdir";

/// The stores under `stores_dir` (`<state>/stores`) whose recorded workdir
/// ([`WORKDIR_RECORD`]) no longer exists: `(store dir, workdir)` pairs, sorted, and how
/// many stores record no workdir (made before the record existed; never judged gone).
#[must_use]
pub fn abandoned_stores(stores_dir: &Path) -> (Vec<(PathBuf, PathBuf)>, usize) {
    let mut gone = Vec::new();
    let mut unknown = 0;
    let Ok(rd) = std::fs::read_dir(stores_dir) else {
        return (gone, unknown);
    };
    for e in rd.flatten() {
        let dir = e.path();
        if !dir.join(STORE_MARKER).is_file() {
            continue;
        }
        match std::fs::read(dir.join(WORKDIR_RECORD)) {
            Ok(bytes) => {
                let wd = PathBuf::from(std::ffi::OsString::from_vec(bytes));
                if !wd.exists() {
                    gone.push((dir, wd));
                }
            }
            Err(_) => unknown += 1,
        }
    }
    gone.sort();
    (gone, unknown)
}

/// A file changed this close (ctime or mtime) to the previous scan is hashed again,
/// whatever its stat data says, when its timestamps are whole seconds (a filesystem
/// with coarse timestamps: FAT keeps 2 s).
pub const RACY_WINDOW: Duration = Duration::from_secs(2);

/// The racy window of a file whose timestamps carry nanoseconds (ext4, xfs, btrfs,
/// tmpfs): their clock advances by a kernel tick (1–10 ms) or finer, so a change 100 ms
/// before a scan began can no longer share a timestamp with a change during it.
pub const RACY_WINDOW_FINE: Duration = Duration::from_millis(100);

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

/// What the message of [`StoreError::BadName`] says: a tree holding such a name
/// cannot be snapshotted, so nothing in it can be judged (`workspace_invalid`).
pub const BAD_NAME: &str = "cannot be snapshotted";

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
    /// A path that a tree cannot hold (newline, not UTF-8); its message holds
    /// [`BAD_NAME`].
    #[error("{0:?}: file names with a newline or that are not UTF-8 {BAD_NAME}; rename the file")]
    BadName(PathBuf),
}

pub mod odb;

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Lays out an empty bare repository at `git_dir` (gitrepository-layout(5)): `HEAD`,
/// `config`, `objects/{info,pack}` and `refs/{heads,tags}` — what `git init --bare
/// --template=` writes with no user or system configuration, without starting git
/// (a process start is most of what a first run in a workdir pays for its store).
/// Idempotent: a file already there is kept.
///
/// # Errors
/// A directory or file cannot be written.
fn init_bare(git_dir: &Path) -> Result<(), StoreError> {
    for dir in ["objects/info", "objects/pack", "refs/heads", "refs/tags"] {
        let d = git_dir.join(dir);
        std::fs::create_dir_all(&d).map_err(io_err(&d))?;
    }
    let files: [(&str, &str); 2] = [
        ("HEAD", "ref: refs/heads/master\n"),
        (
            "config",
            "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n",
        ),
    ];
    for (name, text) in files {
        let f = git_dir.join(name);
        // a file already there (a concurrent first run) is left as it is
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&f)
            .and_then(|mut file| std::io::Write::write_all(&mut file, text.as_bytes()));
        match written {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(io_err(&f)(e));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The private object store of one workdir ([`crate::observe::tree::store_path`]).
///
/// Objects are written and read in-process ([`odb`]); trees this process built are
/// remembered (the last [`TREE_MEMORY`]), so the clean room's sync and the guards do not
/// read them back.
#[derive(Debug, Clone)]
pub struct SnapshotStore {
    git_dir: PathBuf,
    odb: odb::Odb,
    trees: Arc<Mutex<Vec<(String, SharedEntries)>>>,
}

/// The files of a tree, shared between a scan and the store's memory.
pub type SharedEntries = Arc<BTreeMap<String, FileEntry>>;

/// The tree objects of one written tree's directories: directory (root-relative, `""`
/// the root) → tree id ([`SnapshotStore::write_tree_reusing`]).
pub type Subtrees = HashMap<String, odb::Oid>;

/// How many trees a [`SnapshotStore`] remembers the listing of.
pub const TREE_MEMORY: usize = 8;

impl SnapshotStore {
    /// Opens the store at `git_dir`, creating it when absent.
    ///
    /// # Errors
    /// [`StoreError`] when the directory is not writable.
    pub fn open(git_dir: &Path) -> Result<SnapshotStore, StoreError> {
        let marker = git_dir.join(STORE_MARKER);
        if !marker.is_file() {
            init_bare(git_dir)?;
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
            odb: odb::Odb::new(git_dir),
            trees: Arc::new(Mutex::new(Vec::new())),
        })
    }

    /// Records `workdir` as the tree this store snapshots ([`WORKDIR_RECORD`]), unless
    /// it already does.
    ///
    /// # Errors
    /// [`StoreError`] when the record cannot be written.
    pub fn record_workdir(&self, workdir: &Path) -> Result<(), StoreError> {
        let path = self.git_dir.join(WORKDIR_RECORD);
        let bytes = workdir.as_os_str().as_bytes();
        if std::fs::read(&path).is_ok_and(|b| b == bytes) {
            return Ok(());
        }
        std::fs::write(&path, bytes).map_err(io_err(&path))
    }

    /// The store's git dir; pass it as `dir` to the read functions of
    /// [`super::git`] (`ls_tree`, `cat_blobs`, `changed_paths`, `read_blob`).
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.git_dir
    }

    /// The store's object database.
    #[must_use]
    pub fn odb(&self) -> &odb::Odb {
        &self.odb
    }

    /// A commit for `tree` under `refs/loopexec/<run_id>/<label>` (no parent; the
    /// author is loopexec). Returns the commit id.
    ///
    /// # Errors
    /// A bad ref component, or the object or ref cannot be written.
    pub fn commit(&self, tree: &str, run_id: &str, label: &str) -> Result<String, StoreError> {
        let refname = git::snapshot_ref(run_id, label)?;
        let body = odb::encode_commit(tree, &format!("loopexec snapshot {run_id}/{label}"));
        let commit = self
            .odb
            .write("commit", &body)
            .map_err(io_err(&self.git_dir))?;
        let commit = odb::to_hex(&commit);
        self.set_ref(&refname, &commit)?;
        Ok(commit)
    }

    /// Points `refname` (`refs/…`) at `oid`: `<ref>.lock` written, then renamed over
    /// the ref, as git does. A loose ref overrides a packed one of the same name.
    ///
    /// # Errors
    /// The ref cannot be written (a ref being written by another process: its lock
    /// exists).
    pub fn set_ref(&self, refname: &str, oid: &str) -> Result<(), StoreError> {
        let path = self.git_dir.join(refname);
        let dir = path.parent().unwrap_or(&self.git_dir);
        let lock = path.with_file_name(format!(
            "{}.lock",
            path.file_name().and_then(|n| n.to_str()).unwrap_or("ref")
        ));
        let create = || {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&lock)
        };
        // The ref's directory exists from the run's second ref on: made only when the
        // lock cannot be created for want of it (a `mkdir` and a `stat` less per ref).
        let mut f = match create() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(dir).map_err(io_err(dir))?;
                create()
            }
            other => other,
        }
        .map_err(io_err(&lock))?;
        let written = std::io::Write::write_all(&mut f, format!("{oid}\n").as_bytes())
            .and_then(|()| std::fs::rename(&lock, &path));
        if let Err(e) = written {
            // Best effort: a lock left behind would block this ref for good.
            if std::fs::remove_file(&lock).is_err() {
                eprintln!("loopexec: warning: {} could not be removed", lock.display());
            }
            return Err(io_err(&path)(e));
        }
        Ok(())
    }

    /// Builds the tree object of `entries` (path → entry) and returns its id.
    ///
    /// # Errors
    /// An entry with a bad object id, or an object that cannot be written.
    pub fn write_tree(&self, entries: &BTreeMap<String, FileEntry>) -> Result<String, StoreError> {
        self.write_tree_shared(Arc::new(entries.clone()))
    }

    /// [`Self::write_tree`] of entries the caller shares with the store's memory.
    ///
    /// # Errors
    /// An entry with a bad object id, or an object that cannot be written.
    pub fn write_tree_shared(
        &self,
        entries: Arc<BTreeMap<String, FileEntry>>,
    ) -> Result<String, StoreError> {
        self.write_tree_reusing(entries, &mut Subtrees::new(), None)
    }

    /// [`Self::write_tree_shared`] that reuses the subtrees of the tree written before
    /// with `subtrees`: `changed` names every path added, removed or changed since
    /// then, and a directory holding none of them is that tree's subtree again, not
    /// rebuilt (a tree of 20,000 files in 200 directories whose exec changed one file
    /// writes two tree objects instead of 201). `subtrees` (directory, `""` the root →
    /// tree id) is updated to the tree written; with `changed` `None` every directory
    /// is built and `subtrees` filled anew.
    ///
    /// The caller vouches that `subtrees` describes the tree `changed` is relative to
    /// ([`TreeScanner`] keeps both with its last scan).
    ///
    /// # Errors
    /// An entry with a bad object id, or an object that cannot be written.
    pub fn write_tree_reusing(
        &self,
        entries: Arc<BTreeMap<String, FileEntry>>,
        subtrees: &mut Subtrees,
        changed: Option<&BTreeSet<String>>,
    ) -> Result<String, StoreError> {
        let dirty: Option<HashSet<&str>> = changed.map(|c| {
            let mut dirty = HashSet::from([""]);
            for p in c {
                let mut d = p.as_str();
                while let Some((parent, _)) = d.rsplit_once('/') {
                    if !dirty.insert(parent) {
                        break;
                    }
                    d = parent;
                }
            }
            dirty
        });
        if dirty.is_none() {
            subtrees.clear();
        }
        let items: Vec<(&str, &FileEntry)> = entries.iter().map(|(p, e)| (p.as_str(), e)).collect();
        let mut prefix = String::new();
        let oid = self.build_tree(&items, &mut prefix, dirty.as_ref(), subtrees)?;
        let tree = odb::to_hex(&oid);
        self.remember_tree(&tree, entries.clone());
        Ok(tree)
    }

    /// Writes the tree of `items` (paths relative to it, sorted) at directory `dir`
    /// (root-relative, `""` the root; restored on return) and its subtrees, reusing
    /// from `subtrees` every subtree not in `dirty` (see [`Self::write_tree_reusing`]).
    fn build_tree(
        &self,
        items: &[(&str, &FileEntry)],
        dir: &mut String,
        dirty: Option<&HashSet<&str>>,
        subtrees: &mut Subtrees,
    ) -> Result<odb::Oid, StoreError> {
        if dirty.is_some_and(|d| !d.contains(dir.as_str())) {
            if let Some(oid) = subtrees.get(dir.as_str()) {
                return Ok(*oid);
            }
        }
        let mut raw = Vec::new();
        let mut i = 0;
        while i < items.len() {
            let (path, e) = items[i];
            if let Some((name, _)) = path.split_once('/') {
                // Paths sharing `name/` are adjacent in byte order.
                let prefix_len = name.len() + 1;
                let mut j = i;
                while j < items.len()
                    && items[j].0.len() > prefix_len
                    && items[j].0.as_bytes()[..prefix_len] == path.as_bytes()[..prefix_len]
                {
                    j += 1;
                }
                let sub: Vec<(&str, &FileEntry)> = items[i..j]
                    .iter()
                    .map(|(p, e)| (&p[prefix_len..], *e))
                    .collect();
                let at = dir.len();
                if !dir.is_empty() {
                    dir.push('/');
                }
                dir.push_str(name);
                let oid = self.build_tree(&sub, dir, dirty, subtrees);
                dir.truncate(at);
                let oid = oid?;
                let dir = name;
                raw.push(odb::RawEntry {
                    mode: "40000".into(),
                    name: dir.to_string(),
                    oid,
                });
                i = j;
            } else {
                let oid = odb::from_hex(&e.oid).ok_or_else(|| {
                    GitError::BadOutput(format!("{path}: {:?} is not an object id", e.oid))
                })?;
                raw.push(odb::RawEntry {
                    mode: e.mode.clone(),
                    name: path.to_string(),
                    oid,
                });
                i += 1;
            }
        }
        let body = odb::encode_tree(&mut raw);
        let oid = self
            .odb
            .write("tree", &body)
            .map_err(io_err(&self.git_dir))?;
        subtrees.insert(dir.clone(), oid);
        Ok(oid)
    }

    fn remember_tree(&self, tree: &str, entries: Arc<BTreeMap<String, FileEntry>>) {
        if let Ok(mut t) = self.trees.lock() {
            t.retain(|(id, _)| id != tree);
            t.push((tree.to_string(), entries));
            if t.len() > TREE_MEMORY {
                t.remove(0);
            }
        }
    }

    /// The entries of `tree` (regular files and symlinks), keyed by path: from memory
    /// when this process built or read it recently, else read from the store.
    ///
    /// # Errors
    /// A failing read of the store.
    pub fn entries(&self, tree: &str) -> Result<BTreeMap<String, FileEntry>, StoreError> {
        Ok((*self.entries_shared(tree)?).clone())
    }

    /// [`Self::entries`] without a copy.
    ///
    /// # Errors
    /// A failing read of the store.
    pub fn entries_shared(
        &self,
        tree: &str,
    ) -> Result<Arc<BTreeMap<String, FileEntry>>, StoreError> {
        if let Ok(t) = self.trees.lock() {
            if let Some((_, e)) = t.iter().find(|(id, _)| id == tree) {
                return Ok(e.clone());
            }
        }
        let entries: BTreeMap<String, FileEntry> = git::ls_tree(&self.git_dir, tree)?
            .into_iter()
            .filter(|e| e.kind == "blob")
            .map(|e| {
                (
                    e.path,
                    FileEntry {
                        mode: e.mode,
                        oid: e.oid,
                    },
                )
            })
            .collect();
        let entries = Arc::new(entries);
        // Only an object id names the same tree for good (a ref can move).
        if odb::from_hex(tree).is_some() {
            self.remember_tree(tree, entries.clone());
        }
        Ok(entries)
    }
}

/// One file of a snapshot: git mode (`100644`, `100755`, `120000`) and blob id.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
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
        if self.declared(rel) {
            return Some("declared");
        }
        None
    }

    /// True when a user glob leaves `rel` out.
    #[must_use]
    pub fn declared(&self, rel: &str) -> bool {
        !self.globs.is_empty() && self.globs.is_match(rel)
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

/// True when a file's cached blob id may be reused: its stat data equals the cached
/// one and both its mtime and ctime are older than the previous scan's start
/// (`scan_start`, ns since the epoch; `None` before any scan) minus the file's racy
/// window ([`RACY_WINDOW_FINE`], or [`RACY_WINDOW`] for whole-second timestamps).
fn stat_trusted(cached: &Stat, now: &Stat, scan_start: Option<i128>) -> bool {
    const SECOND: i128 = 1_000_000_000;
    let coarse = now.ctime_ns % SECOND == 0 && now.mtime_ns % SECOND == 0;
    let window = if coarse {
        RACY_WINDOW
    } else {
        RACY_WINDOW_FINE
    };
    let window = i128::try_from(window.as_nanos()).unwrap_or(i128::MAX);
    *cached == *now
        && scan_start.is_some_and(|s| {
            let r = s - window;
            now.ctime_ns < r && now.mtime_ns < r
        })
}

/// The result of one scan.
#[derive(Debug, Clone)]
pub struct Scanned {
    /// The tree object id.
    pub tree: String,
    /// Every file in it (shared with the store's memory of the tree).
    pub entries: Arc<BTreeMap<String, FileEntry>>,
    /// Directories left out, with the rule that excluded them (`cache`,
    /// `dependencies`, `declared`), root-relative; `.git` and `.loopexec` not listed.
    pub excluded: Vec<(String, &'static str)>,
    /// Every directory the walk read, root-relative (`""` is the root; excluded ones
    /// not listed): what a watch must cover to see any change to the tree
    /// ([`crate::observe::watch::QuietWatch`]).
    pub dirs: Vec<String>,
    /// Paths added, removed or changed (content, mode, kind) since the scanner's
    /// previous scan; `None` for its first scan (everything is new).
    pub changed: Option<BTreeSet<String>>,
    /// Files whose stat data (size, mtime, ctime, inode, mode) moved since the scanner
    /// last saw or wrote them, whatever their content now: a file rewritten and put
    /// back still has a new ctime (no user can set it back). New files are not listed.
    pub restat: BTreeSet<String>,
}

/// Scans one directory tree into the store, re-hashing only what changed.
#[derive(Debug)]
pub struct TreeScanner {
    root: PathBuf,
    excludes: Excludes,
    /// Path → stat data, blob, and the scan that last saw it.
    cache: HashMap<String, (Stat, FileEntry, u64)>,
    /// The last scan's tree and files.
    last: Option<(String, Arc<BTreeMap<String, FileEntry>>)>,
    /// The subtrees of the last scan's tree, by directory
    /// ([`SnapshotStore::write_tree_reusing`]).
    subtrees: Subtrees,
    generation: u64,
    last_scan: Option<SystemTime>,
    /// Changes seen by scans whose result went to a sync, not to the caller: the
    /// next [`Self::scan`] reports them too (`Some(None)`: everything).
    unreported: Option<Option<BTreeSet<String>>>,
    /// From how many files [`Self::scan`] starts a watch the next sync may rely on;
    /// `None`: never ([`Self::watch_between_scans`]).
    quiet_from: Option<usize>,
    /// The last [`Self::scan`]'s result and the watch started right after it.
    quiet: Option<(Scanned, crate::observe::watch::QuietWatch)>,
    /// The directories the last walk excluded (root-relative).
    last_excluded: Vec<String>,
    /// Stat data of the files the last sync wrote, taken right after writing them:
    /// with the cache's (for files it left alone), what the next scan compares each
    /// file's stat with ([`Scanned::restat`]).
    written: HashMap<String, Stat>,
}

impl TreeScanner {
    /// A scanner of `root` with `excludes`.
    #[must_use]
    pub fn new(root: &Path, excludes: Excludes) -> TreeScanner {
        TreeScanner {
            root: root.to_path_buf(),
            excludes,
            cache: HashMap::new(),
            last: None,
            subtrees: Subtrees::new(),
            generation: 0,
            last_scan: None,
            unreported: None,
            quiet_from: None,
            quiet: None,
            last_excluded: Vec::new(),
            written: HashMap::new(),
        }
    }

    /// With `Some(n)`, each [`Self::scan`] that found at least `n` files starts a
    /// [`crate::observe::watch::QuietWatch`] over the directories it read (the engine
    /// passes [`crate::observe::watch::QUIET_WATCH_FROM_FILES`]: below it a walk costs
    /// less than the watch), and the next sync skips its walk when that watch
    /// stayed quiet: nothing under the tree changed since the scan, so the scan's
    /// result is the tree's state. Only for a tree no unwatched writer can reach: the
    /// engine turns it on for the clean room when the exec runs sandboxed (inotify
    /// does not report writes through a shared memory mapping, which the sandbox
    /// forbids the exec by denying it a writable descriptor).
    pub fn watch_between_scans(&mut self, from_files: Option<usize>) {
        self.quiet_from = from_files;
        self.quiet = None;
    }

    /// Drops the watch the next sync would rely on (the tree was changed on purpose,
    /// e.g. caches emptied): that sync walks.
    pub fn forget_watch(&mut self) {
        self.quiet = None;
    }

    /// The directories the last walk left out (root-relative): caches, dependency
    /// directories, declared exclusions.
    #[must_use]
    pub fn last_excluded(&self) -> Vec<String> {
        self.last_excluded.clone()
    }

    /// The directory this scanner reads.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Walks the tree, writes new and changed blobs into `store` and returns the tree.
    ///
    /// A file's cached blob id is reused only when its stat data (size, mtime, ctime,
    /// inode, mode) is unchanged since it was hashed *and* its mtime and ctime are
    /// older than the previous scan's start minus the racy window; every other file is
    /// read and hashed again.
    ///
    /// # Errors
    /// An unreadable directory or file, an unusable file name, a store that cannot be
    /// written. A file that cannot be read is an error, never a silent omission.
    pub fn scan(&mut self, store: &SnapshotStore) -> Result<Scanned, StoreError> {
        self.quiet = None;
        let mut s = self.scan_inner(store)?;
        if self.quiet_from.is_some_and(|n| s.entries.len() >= n) {
            if let Some(w) = crate::observe::watch::QuietWatch::start(&self.root, &s.dirs) {
                self.quiet = Some((s.clone(), w));
            }
        }
        match (self.unreported.take(), &mut s.changed) {
            (None, _) => {}
            (Some(None), c) => *c = None,
            (Some(Some(more)), Some(c)) => c.extend(more),
            (Some(Some(_)), None) => {}
        }
        Ok(s)
    }

    fn scan_inner(&mut self, store: &SnapshotStore) -> Result<Scanned, StoreError> {
        let started = SystemTime::now();
        let first = self.last_scan.is_none();
        let racy_from = self.last_scan.map(|t| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| i128::try_from(d.as_nanos()).unwrap_or(i128::MAX))
        });
        self.generation += 1;
        let generation = self.generation;
        let mut to_hash: Vec<(String, Stat, bool)> = Vec::new();
        let mut excluded = Vec::new();
        let mut dirs = Vec::new();
        let mut seen = 0usize;
        let mut restat = BTreeSet::new();
        // Threads pay for themselves from about a thousand files (the last scan's
        // count; a first scan does not know it and uses them).
        let workers = if first || self.cache.len() > 1000 {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
        } else {
            1
        };
        {
            let cache = &mut self.cache;
            let written = &self.written;
            let excludes = &self.excludes;
            let mut declared = Vec::new();
            let mut visit = |rel: &str, st: Stat, is_link: bool| {
                if let Some((cached, _, g)) = cache.get_mut(rel) {
                    // Known from an earlier scan: not excluded.
                    seen += 1;
                    *g = generation;
                    if *written.get(rel).unwrap_or(cached) != st {
                        restat.insert(rel.to_string());
                    }
                    if stat_trusted(cached, &st, racy_from) {
                        return;
                    }
                } else if excludes.declared(rel) {
                    declared.push(rel.to_string());
                    return;
                }
                to_hash.push((rel.to_string(), st, is_link));
            };
            walk(
                &self.root,
                excludes,
                workers,
                &mut visit,
                &mut excluded,
                &mut dirs,
            )?;
            excluded.extend(declared.into_iter().map(|p| (p, "declared")));
            excluded.sort();
        }
        let mut changed = BTreeSet::new();
        let mut updates: Vec<(String, Option<FileEntry>)> = Vec::new();
        // Paths of the previous scan this walk did not see are gone.
        let gone = self.cache.len() > seen;
        for (rel, st, is_link) in to_hash {
            let full = self.root.join(&rel);
            let (mode, bytes) = if is_link {
                let target = std::fs::read_link(&full).map_err(io_err(&full))?;
                (
                    "120000",
                    std::os::unix::ffi::OsStrExt::as_bytes(target.as_os_str()).to_vec(),
                )
            } else {
                let mode = if st.mode & 0o111 != 0 {
                    "100755"
                } else {
                    "100644"
                };
                (mode, std::fs::read(&full).map_err(io_err(&full))?)
            };
            let oid = store
                .odb
                .write("blob", &bytes)
                .map_err(io_err(&store.git_dir))?;
            let e = FileEntry {
                mode: mode.into(),
                oid: odb::to_hex(&oid),
            };
            if self.cache.get(&rel).map(|(_, old, _)| old) != Some(&e) {
                changed.insert(rel.clone());
                updates.push((rel.clone(), Some(e.clone())));
            }
            self.cache.insert(rel, (st, e, generation));
        }
        if gone {
            for (k, _) in self.cache.iter().filter(|(_, v)| v.2 != generation) {
                changed.insert(k.clone());
                updates.push((k.clone(), None));
            }
            self.cache.retain(|_, v| v.2 == generation);
        }
        let (tree, entries) = match self.last.take() {
            // Nothing changed: the previous tree, not rebuilt.
            Some((tree, entries)) if changed.is_empty() && !first => (tree, entries),
            Some((_, prev)) if !first => {
                let mut entries = Arc::unwrap_or_clone(prev);
                for (k, v) in updates {
                    match v {
                        Some(e) => entries.insert(k, e),
                        None => entries.remove(&k),
                    };
                }
                let entries = Arc::new(entries);
                let tree = store.write_tree_reusing(
                    entries.clone(),
                    &mut self.subtrees,
                    Some(&changed),
                )?;
                (tree, entries)
            }
            _ => {
                let entries: BTreeMap<String, FileEntry> = self
                    .cache
                    .iter()
                    .map(|(k, v)| (k.clone(), v.1.clone()))
                    .collect();
                let entries = Arc::new(entries);
                let tree = store.write_tree_reusing(entries.clone(), &mut self.subtrees, None)?;
                (tree, entries)
            }
        };
        self.last = Some((tree.clone(), entries.clone()));
        self.last_scan = Some(started);
        self.written.clear();
        self.last_excluded = excluded.iter().map(|(p, _)| p.clone()).collect();
        Ok(Scanned {
            tree,
            entries,
            excluded,
            dirs,
            changed: (!first).then_some(changed),
            restat,
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
        // The last scan stands when the watch started after it stayed quiet.
        let last = self
            .quiet
            .take()
            .and_then(|(last, mut w)| w.quiet().then_some(last));
        // A state the watch vouches for is a tree of the store: what to change is the
        // diff of two trees (identical subtrees skipped), not a pass over every file.
        let diff = match &last {
            Some(l) => Some(git::changed_paths(&store.git_dir, &l.tree, target)?),
            None => None,
        };
        self.written.clear();
        let mut now = match last {
            Some(last) => Scanned {
                changed: Some(BTreeSet::new()),
                ..last
            },
            None => self.scan_inner(store)?,
        };
        self.unreported = match (self.unreported.take(), now.changed.take()) {
            (Some(None), _) | (_, None) => Some(None),
            (Some(Some(mut a)), Some(b)) => {
                a.extend(b);
                Some(Some(a))
            }
            (None, Some(b)) => Some(Some(b)),
        };
        let want = store.entries_shared(target)?;
        let keep = |p: &String| only.map_or(true, |o| o.contains(p));
        let mut stats = SyncStats::default();
        let (gone, differ): (Vec<&String>, Vec<&String>) = match &diff {
            Some(d) => (
                d.iter()
                    .filter(|c| c.status == git::ChangeKind::Deleted)
                    .map(|c| &c.path)
                    .collect(),
                d.iter()
                    .filter(|c| c.status != git::ChangeKind::Deleted)
                    .map(|c| &c.path)
                    .collect(),
            ),
            None => (
                now.entries
                    .keys()
                    .filter(|p| !want.contains_key(*p))
                    .collect(),
                want.iter()
                    .filter(|(p, e)| now.entries.get(*p) != Some(*e))
                    .map(|(p, _)| p)
                    .collect(),
            ),
        };
        for path in gone.into_iter().filter(|p| keep(p)) {
            let full = self.root.join(path);
            std::fs::remove_file(&full).map_err(io_err(&full))?;
            stats.removed += 1;
            prune_empty_parents(&self.root, &full);
        }
        let mut to_write: Vec<(&String, &FileEntry)> = Vec::new();
        for p in differ.into_iter().filter(|p| keep(p)) {
            let kv = want.get_key_value(p).ok_or_else(|| {
                GitError::BadOutput(format!("{p} differs in tree {target} but is not in it"))
            })?;
            to_write.push(kv);
        }
        let blobs = git::cat_blobs(
            &store.git_dir,
            &to_write
                .iter()
                .map(|(_, e)| e.oid.clone())
                .collect::<Vec<_>>(),
        )?;
        // directories this sync found or made to be directories
        let mut dirs_ok = HashSet::new();
        for ((path, e), blob) in to_write.into_iter().zip(blobs) {
            let full = self.root.join(path);
            let bytes = blob.ok_or_else(|| {
                GitError::BadOutput(format!(
                    "blob {} of {path} is missing from the store",
                    e.oid
                ))
            })?;
            let st = write_entry(&full, e, &bytes, &mut dirs_ok)?;
            self.written.insert(path.clone(), st);
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

/// Writes one file (or symlink) of a tree at `full`, replacing whatever is there (a
/// file is unlinked first, never written through: it may be a hard link), and returns
/// its stat data as written. `dirs_ok` holds the parents already made or found to be
/// directories during this sync (a tree cannot need one of them as a file), so each is
/// checked once.
fn write_entry(
    full: &Path,
    e: &FileEntry,
    bytes: &[u8],
    dirs_ok: &mut HashSet<PathBuf>,
) -> Result<Stat, StoreError> {
    if let Some(parent) = full.parent().filter(|p| !dirs_ok.contains(*p)) {
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
        dirs_ok.insert(parent.to_path_buf());
    }
    // one unlink for what is usually absent or a file; a directory is removed whole
    match std::fs::remove_file(full) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => match std::fs::symlink_metadata(full) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(full).map_err(io_err(full))?,
            _ => return Err(io_err(full)(err)),
        },
    }
    let st = if e.mode == "120000" {
        let target: &std::ffi::OsStr = std::os::unix::ffi::OsStrExt::from_bytes(bytes);
        std::os::unix::fs::symlink(target, full).map_err(io_err(full))?;
        std::fs::symlink_metadata(full).map_err(io_err(full))?
    } else {
        let mode = if e.mode == "100755" { 0o755 } else { 0o644 };
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW)
            .open(full)
            .map_err(io_err(full))?;
        std::io::Write::write_all(&mut f, bytes).map_err(io_err(full))?;
        // the exact mode, whatever the umask took from it at creation
        f.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(io_err(full))?;
        f.metadata().map_err(io_err(full))?
    };
    Ok(Stat::of(&st))
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

/// One entry of a directory listing ([`list_dir`]), root-relative.
enum Item {
    /// A regular file or symbolic link, with its stat data; `true` for a link.
    File(String, Stat, bool),
    /// A directory to walk (its absolute path).
    Dir(String, PathBuf),
    /// A directory (or `.git`/`.loopexec`) a rule leaves out, and the rule.
    Excluded(String, &'static str),
}

/// Lists `dir` (root-relative path `rel`) in name order: its files with their stat
/// data, its directories to walk, and what the rules leave out (`.git` and
/// `.loopexec` silently). Sockets, FIFOs and devices are skipped: they hold no content
/// a check can read as a file.
///
/// # Errors
/// The directory cannot be read, an entry cannot be statted, or a name is not UTF-8
/// or holds a newline ([`StoreError::BadName`]).
fn list_dir(dir: &Path, rel: &str, ex: &Excludes) -> Result<Vec<Item>, StoreError> {
    let rd = std::fs::read_dir(dir).map_err(io_err(dir))?;
    let mut entries: Vec<(std::ffi::OsString, std::fs::DirEntry)> = Vec::new();
    for e in rd {
        let e = e.map_err(io_err(dir))?;
        entries.push((e.file_name(), e));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::with_capacity(entries.len());
    for (name_os, e) in entries {
        let Some(name) = name_os.to_str() else {
            return Err(StoreError::BadName(dir.join(&name_os)));
        };
        if name.contains('\n') {
            return Err(StoreError::BadName(dir.join(name)));
        }
        let path = if rel.is_empty() {
            name.to_string()
        } else {
            format!("{rel}/{name}")
        };
        // The type from the directory listing (no stat for directories); the stat
        // data is read relative to the open directory (no path lookup per file).
        let ft = e.file_type().map_err(io_err(dir))?;
        // A file's user globs are matched by the caller's `visit`, once per path and
        // run (the rules do not change while a scanner lives).
        let why = if ft.is_dir() || matches!(name, ".git" | ".loopexec") {
            ex.why(dir, name, &path, ft.is_dir())
        } else {
            None
        };
        if let Some(why) = why {
            if !matches!(why, "git" | "loopexec") {
                out.push(Item::Excluded(path, why));
            }
            continue;
        }
        if ft.is_dir() {
            out.push(Item::Dir(path, e.path()));
        } else if ft.is_symlink() || ft.is_file() {
            let meta = e.metadata().map_err(|err| io_err(&e.path())(err))?;
            // The entry may have been replaced between the listing and the stat.
            let ft = meta.file_type();
            if ft.is_dir() {
                out.push(Item::Dir(path, e.path()));
            } else if ft.is_symlink() || ft.is_file() {
                out.push(Item::File(path, Stat::of(&meta), ft.is_symlink()));
            }
        }
    }
    Ok(out)
}

/// Walks the tree under `root` in path order, calling `visit` for every regular file
/// and symlink that no rule excludes, and collecting what rules leave out and every
/// directory walked (root-relative, `""` for the root).
///
/// With `workers` > 1 the directories are listed and their files statted by that
/// many threads (a stat walk is bound by the kernel's per-file work, which threads
/// share out as `git status` does with its preloaded index); the visits are then made
/// in the same order as by one thread, from the listings.
///
/// # Errors
/// The first error of a listing, in path order ([`list_dir`]).
fn walk(
    root: &Path,
    ex: &Excludes,
    workers: usize,
    visit: &mut dyn FnMut(&str, Stat, bool),
    excluded: &mut Vec<(String, &'static str)>,
    dirs: &mut Vec<String>,
) -> Result<(), StoreError> {
    let mut listings = if workers > 1 {
        list_parallel(root, ex, workers)
    } else {
        HashMap::new()
    };
    let mut stack: Vec<(String, PathBuf)> = vec![(String::new(), root.to_path_buf())];
    while let Some((rel, abs)) = stack.pop() {
        let items = match listings.remove(&rel) {
            Some(l) => l?,
            None => list_dir(&abs, &rel, ex)?,
        };
        dirs.push(rel);
        // depth first, in name order: the directories go on the stack reversed
        let mut subdirs = Vec::new();
        for item in items {
            match item {
                Item::File(path, st, link) => visit(&path, st, link),
                Item::Dir(path, abs) => subdirs.push((path, abs)),
                Item::Excluded(path, why) => excluded.push((path, why)),
            }
        }
        stack.extend(subdirs.into_iter().rev());
    }
    Ok(())
}

/// Every directory's listing under `root`, made by `workers` threads sharing one
/// queue of directories; keyed by root-relative path.
fn list_parallel(
    root: &Path,
    ex: &Excludes,
    workers: usize,
) -> HashMap<String, Result<Vec<Item>, StoreError>> {
    use std::sync::{Condvar, Mutex};
    struct Queue {
        todo: Vec<(String, PathBuf)>,
        busy: usize,
        done: HashMap<String, Result<Vec<Item>, StoreError>>,
    }
    let q = Mutex::new(Queue {
        todo: vec![(String::new(), root.to_path_buf())],
        busy: 0,
        done: HashMap::new(),
    });
    let wake = Condvar::new();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let (rel, abs) = {
                    let Ok(mut g) = q.lock() else { return };
                    loop {
                        if let Some(next) = g.todo.pop() {
                            g.busy += 1;
                            break next;
                        }
                        if g.busy == 0 {
                            wake.notify_all();
                            return;
                        }
                        g = match wake.wait(g) {
                            Ok(g) => g,
                            Err(_) => return,
                        };
                    }
                };
                let listed = list_dir(&abs, &rel, ex);
                let Ok(mut g) = q.lock() else { return };
                if let Ok(items) = &listed {
                    for item in items {
                        if let Item::Dir(path, abs) = item {
                            g.todo.push((path.clone(), abs.clone()));
                        }
                    }
                }
                g.busy -= 1;
                g.done.insert(rel, listed);
                wake.notify_all();
            });
        }
    });
    // A worker that found the lock poisoned left its directory unlisted: the
    // caller lists what is missing itself.
    q.into_inner().map(|g| g.done).unwrap_or_default()
}

#[cfg(test)]
mod tests;
