//! The git observer: snapshots of the working tree, their differences, and restores.
//!
//! Owns every call to the `git` CLI made by loopexec's guards. All calls go through
//! [`git_cmd`], which pins `core.quotepath=off`, disables prompts
//! (`GIT_TERMINAL_PROMPT=0`), optional locks and hooks, and drops inherited
//! `GIT_DIR`/`GIT_WORK_TREE`/`GIT_INDEX_FILE` so the repository is found from the
//! directory alone.
//!
//! Invariants:
//! * The user's index, HEAD, branches and stash are never written. Snapshots and
//!   restores work on a throw-away index file (`GIT_INDEX_FILE` in a temporary
//!   directory) seeded from a copy of the user's index (so unchanged files keep their
//!   cached stat data and are not re-hashed), or from `HEAD` when there is no index.
//! * A snapshot records the whole work tree of the repository (tracked, staged,
//!   unstaged, and untracked files that are not ignored). Any `.loopexec/` directory,
//!   at any depth, is always left out, so loopexec's own receipts never show up as a
//!   change. Identical working trees give identical tree ids.
//! * Snapshot commits are only reachable from `refs/loopexec/<run_id>/<label>`.
//! * Paths are repository-root relative, `/`-separated, as git prints them (with
//!   `-z`); paths that are not UTF-8 are converted lossily.

use super::store::odb;
use serde::{Deserialize, Serialize};
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Pathspec that leaves every `.loopexec/` directory (any depth) out of an operation.
pub const EXCLUDE_LOOPEXEC: &str = ":(top,exclude,glob)**/.loopexec/**";

/// Pathspec for the whole work tree, whatever the current directory.
const WHOLE_TREE: &str = ":/";

/// Identity written on snapshot commits, so they work without `user.name` configured.
const SNAPSHOT_NAME: &str = "loopexec";
const SNAPSHOT_EMAIL: &str = "loopexec@localhost";

/// Errors of the git observer.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// `git` could not be started (not installed, not on `PATH`).
    #[error("could not run git: {0}")]
    Spawn(#[source] std::io::Error),
    /// A git command exited non-zero.
    #[error("`git {args}` failed (exit {code:?}): {stderr}")]
    Failed {
        /// The sub-command and its arguments, space-joined.
        args: String,
        /// The exit code, `None` when killed by a signal.
        code: Option<i32>,
        /// The trimmed standard error (at most 2 KiB).
        stderr: String,
    },
    /// The directory is not inside a git work tree.
    #[error("{0} is not inside a git work tree")]
    NotARepo(PathBuf),
    /// A run id or label cannot be used as a ref name component.
    #[error("{0:?} cannot be used in a ref name (use letters, digits, '.', '_', '-')")]
    InvalidRefComponent(String),
    /// A path cannot be looked up (it contains a newline or NUL).
    #[error("path {0:?} cannot be looked up")]
    InvalidPath(String),
    /// The object at a path is not a file.
    #[error("{spec} is a {kind}, not a file")]
    NotABlob {
        /// The `<rev>:<path>` that was looked up.
        spec: String,
        /// The git object type found there (`tree`, `commit`).
        kind: String,
    },
    /// git printed something this module does not understand.
    #[error("unexpected git output: {0}")]
    BadOutput(String),
    /// Reading or writing a local file (the temporary index) failed.
    #[error("i/o error: {0}")]
    Io(#[source] std::io::Error),
}

/// A recorded working tree: the snapshot commit and its tree.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Snapshot {
    /// Full hex id of the snapshot commit (parent: HEAD at the time, if any).
    pub commit: String,
    /// Full hex id of its tree; equal trees mean byte-identical working trees.
    pub tree: String,
}

/// How one path differs between two trees (renames are reported as delete + add).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Present only in the newer tree.
    Added,
    /// Present only in the older tree.
    Deleted,
    /// Content or mode changed.
    Modified,
    /// The kind changed (file, symlink, submodule).
    TypeChanged,
}

/// One changed path between two trees.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PathChange {
    /// Repository-root relative path.
    pub path: String,
    /// What happened to it.
    pub status: ChangeKind,
}

/// One entry of a recursive tree listing (`git ls-tree -r`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// Octal mode as git prints it: `100644`, `100755`, `120000` (symlink), `160000`.
    pub mode: String,
    /// Object type: `blob` or `commit` (submodule).
    pub kind: String,
    /// Object id (hex).
    pub oid: String,
    /// Repository-root relative path.
    pub path: String,
}

impl TreeEntry {
    /// True for regular files (executable or not); false for symlinks and submodules.
    #[must_use]
    pub fn is_regular_file(&self) -> bool {
        self.kind == "blob" && (self.mode == "100644" || self.mode == "100755")
    }
}

/// A `git` command for `dir` with loopexec's fixed settings (see the module doc).
#[must_use]
pub fn git_cmd(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .args(["-c", "core.quotepath=off", "-c", "core.hooksPath=/dev/null"])
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_PREFIX")
        .stdin(Stdio::null());
    let store = dir.join(super::store::STORE_MARKER).is_file();
    if !store {
        no_programs_of_the_repository(&mut c, dir);
    }
    if store {
        // loopexec's own snapshot store: nothing of the user's git configuration,
        // replace refs or attributes may change what an object holds.
        c.env("GIT_DIR", dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .env("GIT_ATTR_NOSYSTEM", "1");
        for v in [
            "GIT_CONFIG",
            "GIT_CONFIG_COUNT",
            "GIT_CONFIG_PARAMETERS",
            "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            "GIT_NAMESPACE",
            "GIT_REPLACE_REF_BASE",
        ] {
            c.env_remove(v);
        }
    }
    c
}

/// Keeps `cmd` from starting any program the repository's configuration names: the
/// file-system monitor (`core.fsmonitor`, run by `status`, `diff`, `add`) and every
/// filter driver (`filter.<driver>.clean`, `.smudge`, `.process`, run whenever git
/// reads or writes a work-tree file the attributes give it). Hooks are off through
/// `core.hooksPath`. Submodules are not entered (`diff.ignoreSubmodules=all`,
/// `submodule.recurse=false`): `git status` would run `git status` inside each, under
/// that repository's own configuration. An agent can write `.git/config` (a blocked path: the run halts),
/// but a configuration left behind must not run a program outside the sandbox the
/// next time loopexec asks git about the repository (before t0 is measured).
///
/// The overrides go in `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>`
/// (git 2.31 and later), which take any driver name, and are the last word over every
/// configuration file; git's own children (submodules) inherit them. The drivers are
/// listed with `git config --get-regexp`, which reads configuration and runs nothing;
/// when that cannot be asked, the listing is empty and only the monitor is turned off.
fn no_programs_of_the_repository(c: &mut Command, dir: &Path) {
    // submodules are never entered: a nested repository's own configuration names
    // its own monitor and filters, which the listing below does not see
    let mut overrides: Vec<(String, &str)> = vec![
        ("core.fsmonitor".into(), "false"),
        ("diff.ignoreSubmodules".into(), "all"),
        ("status.submoduleSummary".into(), "false"),
        ("submodule.recurse".into(), "false"),
    ];
    let listed = Command::new("git")
        .current_dir(dir)
        .args(["config", "--name-only", "-z", "--get-regexp", r"^filter\."])
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_CONFIG_COUNT")
        .env_remove("GIT_CONFIG_PARAMETERS")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let mut drivers: Vec<String> = listed
        .ok()
        .map(|o| {
            o.stdout
                .split(|b| *b == 0)
                .filter_map(|k| std::str::from_utf8(k).ok())
                // `filter.<driver>.<key>`: the driver is what lies between the first
                // and the last dot
                .filter_map(|k| Some(k.strip_prefix("filter.")?.rsplit_once('.')?.0))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    drivers.sort();
    drivers.dedup();
    for d in drivers {
        for (key, value) in [
            ("clean", ""),
            ("smudge", ""),
            ("process", ""),
            ("required", "false"),
        ] {
            overrides.push((format!("filter.{d}.{key}"), value));
        }
    }
    c.env_remove("GIT_CONFIG_PARAMETERS")
        .env("GIT_CONFIG_COUNT", overrides.len().to_string());
    for (i, (key, value)) in overrides.into_iter().enumerate() {
        c.env(format!("GIT_CONFIG_KEY_{i}"), key)
            .env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
}

fn describe(cmd: &Command) -> String {
    let args: Vec<String> = cmd
        .get_args()
        .map(OsStr::to_string_lossy)
        .map(|s| s.into_owned())
        .collect();
    // Skip the fixed `-c x -c y` prefix so messages show the sub-command.
    args.iter().skip(4).cloned().collect::<Vec<_>>().join(" ")
}

fn truncate_stderr(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    let s = s.trim();
    if s.len() <= 2048 {
        return s.to_string();
    }
    let mut end = 2048;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Runs `cmd`, returning its stdout on exit 0 and [`GitError::Failed`] otherwise.
pub(crate) fn run(cmd: &mut Command) -> Result<Vec<u8>, GitError> {
    let out = cmd
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .output()
        .map_err(GitError::Spawn)?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(GitError::Failed {
            args: describe(cmd),
            code: out.status.code(),
            stderr: truncate_stderr(&out.stderr),
        })
    }
}

/// Exit code (`None` when killed by a signal), stdout and stderr of a finished command.
type RawOutput = (Option<i32>, Vec<u8>, Vec<u8>);

/// Runs `cmd` and returns its [`RawOutput`] without judging the exit code.
fn run_status(cmd: &mut Command) -> Result<RawOutput, GitError> {
    let out = cmd
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .output()
        .map_err(GitError::Spawn)?;
    Ok((out.status.code(), out.stdout, out.stderr))
}

/// Runs `cmd` with `input` on stdin (written from a thread, so large inputs and
/// outputs cannot deadlock) and returns stdout on exit 0.
pub(crate) fn run_with_input(cmd: &mut Command, input: Vec<u8>) -> Result<Vec<u8>, GitError> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(GitError::Spawn)?;
    let stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(mut s) = stdin {
            // A write error means git exited early; its status tells why.
            let _ = s.write_all(&input);
        }
    });
    let out = child.wait_with_output().map_err(GitError::Io)?;
    let _ = writer.join();
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(GitError::Failed {
            args: describe(cmd),
            code: out.status.code(),
            stderr: truncate_stderr(&out.stderr),
        })
    }
}

fn trim_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .trim_end_matches(['\n', '\r'])
        .to_string()
}

/// Splits NUL-separated output into lossy UTF-8 strings (no empty trailing item).
fn split_z(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| *b == 0)
        .filter(|s| !s.is_empty())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect()
}

/// The top directory of the work tree containing `dir`, or `None` when `dir` is not
/// inside a work tree (or git cannot run).
#[must_use]
pub fn repo_root(dir: &Path) -> Option<PathBuf> {
    work_tree(dir).map(|(top, _)| top)
}

/// The work tree containing `dir` and its git directory, as
/// `(top directory, absolute git directory)`; `None` when `dir` is not inside a work
/// tree (or git cannot run).
///
/// [`git_cmd`] removes `GIT_DIR` and `GIT_WORK_TREE`, so git finds a repository only
/// through a `.git` entry (directory or `gitdir:` file) in `dir` or an ancestor:
/// where there is none, the answer is `None` without starting git (two processes a
/// run in a plain directory saved). Otherwise one `git rev-parse --show-toplevel
/// --absolute-git-dir` answers both.
#[must_use]
pub fn work_tree(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let abs = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if !abs
        .ancestors()
        .any(|a| a.join(".git").symlink_metadata().is_ok())
    {
        return None;
    }
    let out =
        run(git_cmd(dir).args(["rev-parse", "--show-toplevel", "--absolute-git-dir"])).ok()?;
    let text = String::from_utf8_lossy(&out);
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let top = lines.next()?;
    let git_dir = lines.next()?;
    Some((PathBuf::from(top), PathBuf::from(git_dir)))
}

pub(crate) fn require_root(dir: &Path) -> Result<PathBuf, GitError> {
    repo_root(dir).ok_or_else(|| GitError::NotARepo(dir.to_path_buf()))
}

/// The commit id HEAD points to, or `None` on an unborn branch (fresh repository).
///
/// Errors: [`GitError::Failed`] when `dir` is not a repository.
pub fn head(dir: &Path) -> Result<Option<String>, GitError> {
    let mut cmd = git_cmd(dir);
    cmd.args(["rev-parse", "--verify", "-q", "HEAD^{commit}"]);
    let (code, stdout, stderr) = run_status(&mut cmd)?;
    match code {
        Some(0) => Ok(Some(trim_line(&stdout))),
        // `--verify -q` exits 1 quietly when the name does not resolve.
        Some(1) if stderr.is_empty() => Ok(None),
        _ => Err(GitError::Failed {
            args: describe(&cmd),
            code,
            stderr: truncate_stderr(&stderr),
        }),
    }
}

/// True when the work tree differs from HEAD: staged, unstaged or untracked
/// (not ignored) changes anywhere in the repository, `.loopexec/` excluded.
pub fn is_dirty(dir: &Path) -> Result<bool, GitError> {
    let out = run(git_cmd(dir).args([
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=normal",
        "--",
        WHOLE_TREE,
        EXCLUDE_LOOPEXEC,
    ]))?;
    Ok(!out.is_empty())
}

/// Checks one ref name component (run id or label): ASCII letters, digits, `.`, `_`,
/// `-`; not empty, not starting with `.` or `-`, no `..`, not ending in `.lock`.
fn check_component(s: &str) -> Result<(), GitError> {
    let ok = !s.is_empty()
        && s.len() <= 200
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && !s.starts_with('.')
        && !s.starts_with('-')
        && !s.contains("..")
        && !s.ends_with(".lock")
        && !s.ends_with('.');
    if ok {
        Ok(())
    } else {
        Err(GitError::InvalidRefComponent(s.to_string()))
    }
}

/// The ref a snapshot is stored under: `refs/loopexec/<run_id>/<label>`.
///
/// Errors: [`GitError::InvalidRefComponent`] for unusable components.
pub fn snapshot_ref(run_id: &str, label: &str) -> Result<String, GitError> {
    check_component(run_id)?;
    check_component(label)?;
    Ok(format!("refs/loopexec/{run_id}/{label}"))
}

/// The work tree top and the path of the user's index file, in one git call.
fn discover(dir: &Path) -> Result<(PathBuf, PathBuf), GitError> {
    let out = match run(git_cmd(dir).args(["rev-parse", "--show-toplevel", "--git-path", "index"]))
    {
        Ok(o) => o,
        Err(GitError::Failed { .. }) => return Err(GitError::NotARepo(dir.to_path_buf())),
        Err(e) => return Err(e),
    };
    let text = String::from_utf8_lossy(&out);
    let mut lines = text.lines();
    match (lines.next(), lines.next()) {
        // `--git-path` is relative to the directory git ran in (or absolute).
        (Some(top), Some(index)) if !top.is_empty() => Ok((PathBuf::from(top), dir.join(index))),
        _ => Err(GitError::NotARepo(dir.to_path_buf())),
    }
}

/// A temporary index describing the current work tree (see the module doc).
struct WorktreeIndex {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl WorktreeIndex {
    fn cmd(&self, root: &Path) -> Command {
        let mut c = git_cmd(root);
        c.env("GIT_INDEX_FILE", &self.path);
        c
    }
}

/// Builds a temporary index equal to the work tree at `root` (`.loopexec/` excluded).
fn build_worktree_index(
    root: &Path,
    user_index: &Path,
    head: Option<&str>,
) -> Result<WorktreeIndex, GitError> {
    let tmp = tempfile::Builder::new()
        .prefix("loopexec-index")
        .tempdir()
        .map_err(GitError::Io)?;
    let path = tmp.path().join("index");
    let idx = WorktreeIndex { _dir: tmp, path };
    let seeded = match std::fs::copy(user_index, &idx.path) {
        Ok(_) => true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(GitError::Io(e)),
    };
    if seeded {
        // git trusts an entry's stat data only when the file is older than the index
        // file itself ("racy git"): a copy with a fresh mtime would make entries written
        // in the same second as the user's index look clean, and a same-size edit made
        // in that second would be missed. The copy keeps the original's mtime.
        let mtime = std::fs::metadata(user_index)
            .and_then(|m| m.modified())
            .map_err(GitError::Io)?;
        std::fs::File::options()
            .write(true)
            .open(&idx.path)
            .and_then(|f| f.set_modified(mtime))
            .map_err(GitError::Io)?;
    }
    if seeded {
        // A user index may hold `.loopexec/` entries (added before it was ignored).
        run(idx.cmd(root).args([
            "rm",
            "--cached",
            "-r",
            "-q",
            "--ignore-unmatch",
            "--",
            ":(top,glob)**/.loopexec/**",
        ]))?;
    } else if let Some(h) = head {
        run(idx.cmd(root).args(["read-tree", h]))?;
    }
    run(idx.cmd(root).args([
        "-c",
        "advice.addEmbeddedRepo=false",
        "-c",
        "advice.addIgnoredFile=false",
        "add",
        "-A",
        "--",
        WHOLE_TREE,
        EXCLUDE_LOOPEXEC,
    ]))?;
    Ok(idx)
}

/// Records the work tree of the repository containing `dir` as a commit under
/// `refs/loopexec/<run_id>/<label>` (overwriting an earlier ref of that name).
///
/// The commit's parent is HEAD (none on an unborn branch); its author and committer
/// are `loopexec <loopexec@localhost>`. The user's index, HEAD, branches and stash are
/// untouched. About seven git processes, none per file.
///
/// Errors: [`GitError::NotARepo`], [`GitError::InvalidRefComponent`], or a failing
/// git step (e.g. an unreadable file).
pub fn snapshot(dir: &Path, run_id: &str, label: &str) -> Result<Snapshot, GitError> {
    let refname = snapshot_ref(run_id, label)?;
    let (root, user_index) = discover(dir)?;
    let head = head(&root)?;
    let idx = build_worktree_index(&root, &user_index, head.as_deref())?;
    let tree = trim_line(&run(idx.cmd(&root).args(["write-tree"]))?);
    if tree.is_empty() {
        return Err(GitError::BadOutput("write-tree printed no id".into()));
    }
    let mut ct = git_cmd(&root);
    ct.args([
        "-c",
        "commit.gpgSign=false",
        "commit-tree",
        "--no-gpg-sign",
        &tree,
    ])
    .env("GIT_AUTHOR_NAME", SNAPSHOT_NAME)
    .env("GIT_AUTHOR_EMAIL", SNAPSHOT_EMAIL)
    .env("GIT_COMMITTER_NAME", SNAPSHOT_NAME)
    .env("GIT_COMMITTER_EMAIL", SNAPSHOT_EMAIL);
    if let Some(h) = &head {
        ct.args(["-p", h]);
    }
    ct.args(["-m", &format!("loopexec snapshot {run_id}/{label}")]);
    let commit = trim_line(&run(&mut ct)?);
    if commit.is_empty() {
        return Err(GitError::BadOutput("commit-tree printed no id".into()));
    }
    run(git_cmd(&root).args(["update-ref", &refname, &commit]))?;
    Ok(Snapshot { commit, tree })
}

/// Makes the work tree equal to the snapshot `snapshot_commit` (a commit or tree id,
/// or a ref such as `refs/loopexec/<run>/<label>`).
///
/// Files modified or deleted since are rewritten, files added since (and not ignored)
/// are removed; ignored files and `.loopexec/` are left alone, except an ignored file
/// at a path the snapshot holds, which is overwritten. The user's index and HEAD are
/// untouched (the index's cached stat data may then be stale, which git tolerates).
pub fn restore(dir: &Path, snapshot_commit: &str) -> Result<(), GitError> {
    let (root, user_index) = discover(dir)?;
    let head = head(&root)?;
    let idx = build_worktree_index(&root, &user_index, head.as_deref())?;
    let target = format!("{snapshot_commit}^{{tree}}");
    run(idx.cmd(&root).args(["read-tree", "--reset", "-u", &target]))?;
    Ok(())
}

/// The paths that differ between two trees (or commits), sorted by path.
///
/// Uses `git diff-tree -r -z --name-status --no-renames`: a rename is a `Deleted`
/// plus an `Added` entry, so a guard sees both sides.
///
/// In loopexec's snapshot store, two loose trees are compared in-process, skipping
/// identical subtrees by id.
pub fn changed_paths(
    dir: &Path,
    from_tree: &str,
    to_tree: &str,
) -> Result<Vec<PathChange>, GitError> {
    if let Some(odb) = in_store(dir) {
        if let (Some(a), Some(b)) = (store_tree(&odb, from_tree), store_tree(&odb, to_tree)) {
            let mut out = Vec::new();
            if a == b || store_diff(&odb, Some(&a), Some(&b), "", &mut out).is_some() {
                out.sort();
                return Ok(out);
            }
        }
    }
    let out = run(git_cmd(dir).args([
        "diff-tree",
        "-r",
        "-z",
        "--name-status",
        "--no-renames",
        "--no-ext-diff",
        from_tree,
        to_tree,
        "--",
    ]))?;
    let items = split_z(&out);
    let mut changes = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let Some(status) = it.next() {
        let path = it
            .next()
            .ok_or_else(|| GitError::BadOutput(format!("status {status} without a path")))?;
        let kind = match status.chars().next() {
            Some('A') => ChangeKind::Added,
            Some('D') => ChangeKind::Deleted,
            Some('M') => ChangeKind::Modified,
            Some('T') => ChangeKind::TypeChanged,
            _ => {
                return Err(GitError::BadOutput(format!(
                    "unknown diff status {status:?}"
                )))
            }
        };
        changes.push(PathChange { path, status: kind });
    }
    changes.sort();
    Ok(changes)
}

/// Every entry of `tree` (a tree or commit id), recursively, in git's order.
///
/// In loopexec's snapshot store, a loose tree is listed in-process.
pub fn ls_tree(dir: &Path, tree: &str) -> Result<Vec<TreeEntry>, GitError> {
    if let Some(odb) = in_store(dir) {
        if let Some(t) = store_tree(&odb, tree) {
            let mut out = Vec::new();
            if store_ls_tree(&odb, &t, "", &mut out).is_some() {
                return Ok(out);
            }
        }
    }
    let out = run(git_cmd(dir).args(["ls-tree", "-r", "-z", "--full-tree", tree]))?;
    let mut entries = Vec::new();
    for rec in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        // `<mode> SP <type> SP <oid> TAB <path>`
        let tab = rec
            .iter()
            .position(|b| *b == b'\t')
            .ok_or_else(|| GitError::BadOutput("ls-tree record without a tab".into()))?;
        let head = String::from_utf8_lossy(&rec[..tab]);
        let mut parts = head.split(' ');
        let (Some(mode), Some(kind), Some(oid)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(GitError::BadOutput(format!("ls-tree record {head:?}")));
        };
        entries.push(TreeEntry {
            mode: mode.to_string(),
            kind: kind.to_string(),
            oid: oid.to_string(),
            path: String::from_utf8_lossy(&rec[tab + 1..]).into_owned(),
        });
    }
    Ok(entries)
}

/// The paths of all files (blobs and submodule links) in `tree`, in git's order.
pub fn list_files(dir: &Path, tree: &str) -> Result<Vec<String>, GitError> {
    let out = run(git_cmd(dir).args(["ls-tree", "-r", "-z", "--full-tree", "--name-only", tree]))?;
    Ok(split_z(&out))
}

/// Reads many objects in one `git cat-file --batch` process.
///
/// `specs` are object names (`<oid>` or `<rev>:<path>`); the result has one entry per
/// spec, in order: `Some(bytes)` for a blob, `None` when missing. A non-blob object is
/// [`GitError::NotABlob`]; a spec containing a newline is [`GitError::InvalidPath`].
///
/// In loopexec's snapshot store, loose objects named by id are read in-process
/// (`in_store`); only the others (packed objects, `<rev>:<path>` specs) cost a git
/// process.
pub fn cat_blobs(dir: &Path, specs: &[String]) -> Result<Vec<Option<Vec<u8>>>, GitError> {
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    let Some(odb) = in_store(dir) else {
        return cat_blobs_git(dir, specs);
    };
    let mut out: Vec<Option<Option<Vec<u8>>>> = Vec::with_capacity(specs.len());
    let mut rest = Vec::new();
    for s in specs {
        match odb::from_hex(s).and_then(|o| odb.read(&o)) {
            Some((kind, _)) if kind != "blob" => {
                return Err(GitError::NotABlob {
                    spec: s.clone(),
                    kind,
                })
            }
            Some((_, body)) => out.push(Some(Some(body))),
            None => {
                out.push(None);
                rest.push(s.clone());
            }
        }
    }
    let mut from_git = cat_blobs_git(dir, &rest)?.into_iter();
    Ok(out
        .into_iter()
        .map(|o| o.unwrap_or_else(|| from_git.next().flatten()))
        .collect())
}

/// The object database of loopexec's snapshot store when `dir` is one (its marker
/// file), for reading its loose objects without a git process.
fn in_store(dir: &Path) -> Option<odb::Odb> {
    dir.join(super::store::STORE_MARKER)
        .is_file()
        .then(|| odb::Odb::new(dir))
}

/// The tree named by `spec` (a tree or commit id) when the store holds it loose.
fn store_tree(odb: &odb::Odb, spec: &str) -> Option<odb::Oid> {
    let oid = odb::from_hex(spec)?;
    let (kind, body) = odb.read(&oid)?;
    match kind.as_str() {
        "tree" => Some(oid),
        "commit" => {
            let first = body.split(|b| *b == b'\n').next()?;
            odb::from_hex(std::str::from_utf8(first.strip_prefix(b"tree ")?).ok()?)
        }
        _ => None,
    }
}

/// The entries of a loose tree object of the store; `None` when it is not one.
fn store_tree_entries(odb: &odb::Odb, oid: &odb::Oid) -> Option<Vec<odb::RawEntry>> {
    let (kind, body) = odb.read(oid)?;
    if kind != "tree" {
        return None;
    }
    odb::decode_tree(&body)
}

/// `ls-tree -r` of a loose tree of the store, in git's order.
fn store_ls_tree(
    odb: &odb::Odb,
    tree: &odb::Oid,
    prefix: &str,
    out: &mut Vec<TreeEntry>,
) -> Option<()> {
    for e in store_tree_entries(odb, tree)? {
        let path = format!("{prefix}{}", e.name);
        if e.is_tree() {
            store_ls_tree(odb, &e.oid, &format!("{path}/"), out)?;
        } else {
            out.push(TreeEntry {
                kind: if e.mode == "160000" { "commit" } else { "blob" }.into(),
                mode: e.mode,
                oid: odb::to_hex(&e.oid),
                path,
            });
        }
    }
    Some(())
}

/// `diff-tree -r --no-renames` of two loose trees of the store; identical subtrees are
/// skipped by id.
fn store_diff(
    odb: &odb::Odb,
    a: Option<&odb::Oid>,
    b: Option<&odb::Oid>,
    prefix: &str,
    out: &mut Vec<PathChange>,
) -> Option<()> {
    use std::collections::BTreeMap;
    let list = |t: Option<&odb::Oid>| -> Option<BTreeMap<String, odb::RawEntry>> {
        Some(match t {
            Some(t) => store_tree_entries(odb, t)?
                .into_iter()
                .map(|e| (e.name.clone(), e))
                .collect(),
            None => BTreeMap::new(),
        })
    };
    let (la, lb) = (list(a)?, list(b)?);
    let class = |m: &str| match m {
        "120000" => 1,
        "160000" => 2,
        _ => 0,
    };
    let names: std::collections::BTreeSet<&String> = la.keys().chain(lb.keys()).collect();
    for name in names {
        let path = format!("{prefix}{name}");
        let sub = format!("{path}/");
        let push = |out: &mut Vec<PathChange>, status| {
            out.push(PathChange {
                path: path.clone(),
                status,
            });
        };
        match (la.get(name), lb.get(name)) {
            (Some(x), Some(y)) if x == y => {}
            (Some(x), Some(y)) if x.is_tree() && y.is_tree() => {
                store_diff(odb, Some(&x.oid), Some(&y.oid), &sub, out)?;
            }
            (Some(x), Some(y)) if !x.is_tree() && !y.is_tree() => push(
                out,
                if class(&x.mode) == class(&y.mode) {
                    ChangeKind::Modified
                } else {
                    ChangeKind::TypeChanged
                },
            ),
            (x, y) => {
                if let Some(x) = x {
                    if x.is_tree() {
                        store_diff(odb, Some(&x.oid), None, &sub, out)?;
                    } else {
                        push(out, ChangeKind::Deleted);
                    }
                }
                if let Some(y) = y {
                    if y.is_tree() {
                        store_diff(odb, None, Some(&y.oid), &sub, out)?;
                    } else {
                        push(out, ChangeKind::Added);
                    }
                }
            }
        }
    }
    Some(())
}

fn cat_blobs_git(dir: &Path, specs: &[String]) -> Result<Vec<Option<Vec<u8>>>, GitError> {
    if specs.is_empty() {
        return Ok(Vec::new());
    }
    let mut input = Vec::new();
    for s in specs {
        if s.contains('\n') || s.contains('\0') {
            return Err(GitError::InvalidPath(s.clone()));
        }
        input.extend_from_slice(s.as_bytes());
        input.push(b'\n');
    }
    let mut cmd = git_cmd(dir);
    cmd.args(["cat-file", "--batch"]);
    let out = run_with_input(&mut cmd, input)?;
    let mut reader = BufReader::new(out.as_slice());
    let mut result = Vec::with_capacity(specs.len());
    for spec in specs {
        let mut header = String::new();
        reader.read_line(&mut header).map_err(GitError::Io)?;
        let header = header.trim_end_matches('\n');
        if header.ends_with(" missing") || header.ends_with(" ambiguous") {
            result.push(None);
            continue;
        }
        let mut parts = header.rsplitn(3, ' ');
        let (Some(size), Some(kind)) = (parts.next(), parts.next()) else {
            return Err(GitError::BadOutput(format!("cat-file header {header:?}")));
        };
        let size: usize = size
            .parse()
            .map_err(|_| GitError::BadOutput(format!("cat-file header {header:?}")))?;
        let mut body = vec![0u8; size];
        reader.read_exact(&mut body).map_err(GitError::Io)?;
        let mut nl = [0u8; 1];
        reader.read_exact(&mut nl).map_err(GitError::Io)?;
        if kind != "blob" {
            return Err(GitError::NotABlob {
                spec: spec.clone(),
                kind: kind.to_string(),
            });
        }
        result.push(Some(body));
    }
    Ok(result)
}

/// The content of `path` in `tree_or_commit`, or `None` when the path is absent.
///
/// Errors: [`GitError::NotABlob`] when the path names a directory or submodule,
/// [`GitError::InvalidPath`] for a path with a newline.
pub fn read_blob(
    dir: &Path,
    tree_or_commit: &str,
    path: &str,
) -> Result<Option<Vec<u8>>, GitError> {
    let spec = format!("{tree_or_commit}:{path}");
    let mut v = cat_blobs(dir, &[spec])?;
    Ok(v.pop().flatten())
}

/// True when the full ref name exists (e.g. `refs/loopexec/<run>/t0`).
pub fn ref_exists(dir: &Path, refname: &str) -> Result<bool, GitError> {
    let mut cmd = git_cmd(dir);
    cmd.args(["show-ref", "--verify", "--quiet", refname]);
    let (code, _, stderr) = run_status(&mut cmd)?;
    match code {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => Err(GitError::Failed {
            args: describe(&cmd),
            code,
            stderr: truncate_stderr(&stderr),
        }),
    }
}

/// Deletes every `refs/loopexec/<run_id>/*` ref; returns how many were deleted.
/// The snapshot objects become unreachable and are collected by a later `git gc`.
pub fn delete_refs(dir: &Path, run_id: &str) -> Result<usize, GitError> {
    check_component(run_id)?;
    let prefix = format!("refs/loopexec/{run_id}/");
    let out = run(git_cmd(dir).args(["for-each-ref", "--format=%(refname)", &prefix]))?;
    let refs: Vec<String> = String::from_utf8_lossy(&out)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    if refs.is_empty() {
        return Ok(0);
    }
    let mut input = String::new();
    for r in &refs {
        input.push_str("delete ");
        input.push_str(r);
        input.push('\n');
    }
    run_with_input(
        git_cmd(dir).args(["update-ref", "--stdin"]),
        input.into_bytes(),
    )?;
    Ok(refs.len())
}

#[cfg(test)]
pub(crate) mod testutil;

#[cfg(test)]
mod tests;
