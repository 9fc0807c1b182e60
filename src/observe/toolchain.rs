//! The check's toolchain outside the workdir: what the check command resolves to on
//! `PATH`, and the Python start-up hooks of its interpreter.
//!
//! A check can be made to lie without touching the workdir: a shim put earlier on
//! `PATH`, a replaced runner executable, a `.pth` file or `sitecustomize.py` in the
//! interpreter's site directories (Python runs those at every start). loopexec records,
//! at t0 and after every exec (before the check):
//! * for every command word of the check (the first word of each `;`/`&&`/`||`/`|`
//!   part, after `VAR=value` assignments and `env`/`exec`/`time`/`nice`), the file it
//!   resolves to on the check's `PATH` and a digest of that file's stat data;
//! * for a Python interpreter among them, every `*.pth`, `sitecustomize.py` and
//!   `usercustomize.py` in its site directories, every installed distribution's
//!   `entry_points.txt` (pytest's `pytest11` plugins), and the names each site
//!   directory holds (`__pycache__` aside): a module or distribution added there.
//!
//! A difference from t0 is `hermeticity_violation` naming the file. Files are compared
//! by mode and content (blake3), so a version manager rewriting its shims with the same
//! bytes is no change.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The command words of a shell command line (see the module doc).
#[must_use]
pub fn command_words(check: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut normalized = check.to_string();
    for sep in ["&&", "||", ";", "|", "\n", "(", ")"] {
        normalized = normalized.replace(sep, "\u{1}");
    }
    for part in normalized.split('\u{1}') {
        let mut words = part.split_whitespace().map(|w| w.trim_matches(['\'', '"']));
        for w in words.by_ref() {
            if w.contains('=') && !w.starts_with('=') {
                continue;
            }
            if matches!(
                w,
                "env" | "exec" | "time" | "nice" | "command" | "timeout" | "!"
            ) {
                continue;
            }
            if w.starts_with('-')
                || w.chars()
                    .all(|c| c.is_ascii_digit() || c == '.' || c == 's')
            {
                continue;
            }
            if !w.is_empty() && !w.contains('/') && !w.starts_with('$') {
                out.push(w.to_string());
            } else if let Some(abs) = absolute_word(w) {
                // a program named by its path outside the tree (`/opt/venv/bin/python`,
                // `$VENV/bin/pytest`): measured as one found on `PATH` is (a fresh
                // review's `.pth` in such a virtual environment went unread)
                out.push(abs);
            }
            break;
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A command word naming a program by an absolute path, with a leading `$NAME` or
/// `${NAME}` expanded from loopexec's environment (the check's inherits it): `None`
/// for a relative path (a file of the tree, which the snapshot measures) or a
/// variable that is not set.
fn absolute_word(w: &str) -> Option<String> {
    let expanded = match w.strip_prefix('$') {
        Some(rest) => {
            let (name, tail) = match rest.strip_prefix('{') {
                Some(braced) => braced.split_once('}')?,
                None => rest.split_at(
                    rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(rest.len()),
                ),
            };
            format!("{}{tail}", std::env::var(name).ok()?)
        }
        None => w.to_string(),
    };
    (expanded.starts_with('/') && !expanded.contains('$')).then_some(expanded)
}

/// `name` resolved on `path` (a `PATH` value): the first executable file found; an
/// absolute `name` is itself when it is one.
#[must_use]
pub fn resolve(name: &str, path: &str) -> Option<PathBuf> {
    let executable =
        |p: &Path| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0);
    if name.starts_with('/') {
        return Some(PathBuf::from(name)).filter(|p| executable(p));
    }
    path.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(name))
        .find(|p| executable(p))
}

/// blake3 of the file's mode and content (a shim rewritten with the same bytes, as
/// version managers do on every package install, is the same file).
///
/// A toolchain binary is tens of megabytes and is measured at every snapshot: the
/// digest is kept per path with the file's stat data (size, mode, inode, mtime,
/// ctime) and reused while that is unchanged and the file had not been changed within
/// [`super::store::RACY_WINDOW`] of the hashing (the same rule as the snapshot
/// store's; ctime cannot be set back, so a rewrite is always seen).
fn content_digest(p: &Path) -> String {
    match std::fs::metadata(p) {
        Ok(m) => digest_with(p, &m).unwrap_or_else(|e| format!("unreadable ({e})")),
        Err(_) => "missing".into(),
    }
}

/// The digest of a regular file (symbolic links followed) as the toolchain's files
/// get it: blake3 of its mode and content, 16 hex digits, reused while its stat data
/// stands. `None` for a directory, a missing file or one that cannot be read.
#[must_use]
pub fn file_digest(p: &Path) -> Option<String> {
    let m = std::fs::metadata(p)
        .ok()
        .filter(std::fs::Metadata::is_file)?;
    digest_with(p, &m).ok()
}

/// The digest of `p`, whose stat data is `m`, from the cache while `m` stands.
fn digest_with(p: &Path, m: &std::fs::Metadata) -> std::io::Result<String> {
    type Key = (u64, u32, u64, i64, i64, i64, i64);
    static CACHE: std::sync::Mutex<Option<HashMap<PathBuf, (Key, String)>>> =
        std::sync::Mutex::new(None);
    let key: Key = (
        m.len(),
        m.mode(),
        m.ino(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    );
    if let Ok(c) = CACHE.lock() {
        if let Some((k, d)) = c.as_ref().and_then(|c| c.get(p)) {
            if *k == key {
                return Ok(d.clone());
            }
        }
    }
    let hashed_at = std::time::SystemTime::now();
    let mut h = blake3::Hasher::new();
    h.update(&u64::from(m.mode() & 0o7777).to_le_bytes());
    std::fs::File::open(p).and_then(|mut f| std::io::copy(&mut f, &mut h))?;
    let d = h.finalize().to_hex()[..16].to_string();
    if settled_before(m, hashed_at) {
        if let Ok(mut c) = CACHE.lock() {
            c.get_or_insert_with(HashMap::new)
                .insert(p.to_path_buf(), (key, d.clone()));
        }
    }
    Ok(d)
}

/// True when the file's mtime and ctime are older than `at` minus the racy window.
fn settled_before(m: &std::fs::Metadata, at: std::time::SystemTime) -> bool {
    settled_within(m, at, super::store::RACY_WINDOW)
}

/// True when the file's mtime and ctime are older than `at` minus `window`.
pub(crate) fn settled_within(
    m: &std::fs::Metadata,
    at: std::time::SystemTime,
    window: std::time::Duration,
) -> bool {
    let Ok(at) = at.duration_since(std::time::UNIX_EPOCH) else {
        return false;
    };
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    let limit = i128::try_from(at.saturating_sub(window).as_nanos()).unwrap_or(i128::MAX);
    ns(m.ctime(), m.ctime_nsec()) < limit && ns(m.mtime(), m.mtime_nsec()) < limit
}

/// Where a Python interpreter looks at start-up, as it reports when asked (once, at
/// t0; empty when it cannot tell).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PythonPaths {
    /// Its site directories (`site.getsitepackages()` and the user site).
    pub site_dirs: Vec<PathBuf>,
    /// What else decides what it runs at start-up: its standard library directories
    /// (`sysconfig`'s `stdlib` and `platstdlib`: a `sitecustomize.py` or a module
    /// added there is imported as the library's own) and the two places a
    /// `pyvenv.cfg` is looked for (beside the executable and one above: its `home`
    /// names the base interpreter whose library is loaded, and
    /// `include-system-site-packages` adds the system's site directory). A fresh review
    /// pointed a virtual environment's `home` at a directory of its own whose library
    /// held a `sitecustomize.py` that patched the code under test.
    pub startup: Vec<PathBuf>,
}

/// The script [`python_paths`] runs: one `site <dir>` or `startup <path>` per line.
const PYTHON_PATHS_SCRIPT: &str = "import os, site, sys, sysconfig
for d in site.getsitepackages() + [site.getusersitepackages()]:
    print('site', d)
paths = sysconfig.get_paths()
for k in ('stdlib', 'platstdlib'):
    print('startup', paths[k])
exe = os.path.dirname(os.path.abspath(sys.executable))
for d in (exe, os.path.dirname(exe)):
    print('startup', os.path.join(d, 'pyvenv.cfg'))
";

/// Asks the Python interpreter at `python` where it looks at start-up
/// ([`PythonPaths`]; each path once, in the order given).
#[must_use]
pub fn python_paths(python: &Path) -> PythonPaths {
    let out = std::process::Command::new(python)
        .args(["-c", PYTHON_PATHS_SCRIPT])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let mut paths = PythonPaths::default();
    if let Some(o) = out.ok().filter(|o| o.status.success()) {
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            let (kind, path) = line.split_once(' ').unwrap_or(("", line));
            let list = match kind {
                "site" => &mut paths.site_dirs,
                "startup" => &mut paths.startup,
                _ => continue,
            };
            let path = PathBuf::from(path);
            if !list.contains(&path) {
                list.push(path);
            }
        }
    }
    paths
}

/// The toolchain measurement: key (`path:<word>` or a site hook file) → value
/// (`<resolved file> <stat digest>`, or a stat digest). `site_dirs` are the Python site
/// directories found at t0, `startup` the other start-up paths of its interpreters
/// ([`PythonPaths::startup`]): a directory among them is read as a site directory is,
/// a file digested (`missing` when absent).
#[must_use]
pub fn measure(
    words: &[String],
    path: &str,
    site_dirs: &[PathBuf],
    startup: &[PathBuf],
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for w in words {
        let v = match resolve(w, path) {
            Some(p) => {
                let real = std::fs::canonicalize(&p).unwrap_or(p);
                format!("{} {}", real.display(), content_digest(&real))
            }
            None => "not found".into(),
        };
        out.insert(format!("path:{w}"), v);
    }
    let (startup_dirs, startup_files): (Vec<&PathBuf>, Vec<&PathBuf>) =
        startup.iter().partition(|p| p.is_dir());
    for f in startup_files {
        out.insert(f.display().to_string(), content_digest(f));
    }
    for d in site_dirs.iter().chain(startup_dirs) {
        let Ok(rd) = std::fs::read_dir(d) else {
            continue;
        };
        let mut names = Vec::new();
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".pth") || name == "sitecustomize.py" || name == "usercustomize.py" {
                out.insert(e.path().display().to_string(), content_digest(&e.path()));
            }
            // an installed distribution's entry points: pytest loads every `pytest11`
            // plugin they name at start-up
            if name.ends_with(".dist-info") || name.ends_with(".egg-info") {
                let ep = e.path().join("entry_points.txt");
                if ep.is_file() {
                    out.insert(ep.display().to_string(), content_digest(&ep));
                }
            }
            // bytecode Python writes on import is no new module
            if name != "__pycache__" {
                names.push(name);
            }
        }
        // What the site directory holds: a module, package or distribution added
        // (a plugin with its entry point, a module shadowing another) changes what
        // the check imports.
        names.sort();
        out.insert(
            format!("{}/*", d.display()),
            blake3::hash(names.join("\n").as_bytes()).to_hex()[..16].to_string(),
        );
    }
    out
}

/// Runner configuration that tools look for in the ancestors of the directory they
/// run in (cargo, pytest, node): files outside the workdir that can change how the
/// check judges, recorded by [`measure_files`].
pub const ANCESTOR_CONFIG: &[&str] = &[
    ".cargo/config",
    ".cargo/config.toml",
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "conftest.py",
    "package.json",
    "node_modules",
    ".npmrc",
    ".babelrc",
    "babel.config.js",
    "jest.config.js",
    "vitest.config.ts",
    "vitest.config.js",
    // A workspace root above the package: cargo and go find it by walking up and
    // apply its `[patch]` / `replace` (an out-of-tree `[patch.crates-io]` swapped a
    // crate the tests assert through, in a fresh review).
    "Cargo.toml",
    "go.work",
];

/// Files that pick the toolchain a check runs with (version managers: pyenv, asdf,
/// nvm, rustup). Looked for in the ancestors like [`ANCESTOR_CONFIG`], and protected
/// in the tree like [`super::manifest::DEFAULT_PROTECTED`].
pub const VERSION_PINS: &[&str] = &[
    ".python-version",
    ".tool-versions",
    ".nvmrc",
    ".node-version",
    "rust-toolchain",
    "rust-toolchain.toml",
];

/// Every name looked for in the ancestors: [`ANCESTOR_CONFIG`] and [`VERSION_PINS`].
pub fn ancestor_names() -> impl Iterator<Item = &'static str> {
    ANCESTOR_CONFIG.iter().chain(VERSION_PINS).copied()
}

/// The configuration files above `dirs` (each directory's ancestors, the directory
/// itself excluded) named in [`ancestor_names`], plus `extra` files (cargo's
/// `$CARGO_HOME/config*`): every candidate path, present or not.
#[must_use]
pub fn config_candidates(dirs: &[PathBuf], extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = extra.to_vec();
    for d in dirs {
        for a in d.ancestors().skip(1) {
            for name in ancestor_names() {
                out.push(a.join(name));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Key of [`measure_files`]'s entry for the candidates that are absent.
pub const ABSENT_KEY: &str = "config:absent";

/// Digests of `files`, keyed by path, for those present (a directory reads
/// `directory`); the absent ones are folded into one entry, [`ABSENT_KEY`] →
/// `<n> absent, <blake3 of their sorted paths>`, so a file that appears later is
/// still a change (that entry changes, and the file's own key is added) while a
/// receipt line does not carry one `absent` per candidate (every name of
/// [`ancestor_names`] per ancestor directory). The entry is there even when every candidate is present, so a
/// measured map is never empty.
#[must_use]
///
/// A candidate found absent is not statted again while its directory's stat data
/// (device, inode, mtime, ctime) stays as it was when it was found absent and that
/// directory had settled (no change within [`super::store::RACY_WINDOW`] before it was
/// statted): creating, removing or renaming an entry moves the directory's mtime, so
/// an absent name cannot appear without the directory changing.
pub fn measure_files(files: &[PathBuf]) -> BTreeMap<String, String> {
    measure_files_within(files, super::store::RACY_WINDOW)
}

/// [`measure_files`] with `window` as the racy window of the directories.
///
/// Candidates come grouped by directory ([`ancestor_names`] per ancestor): each group costs one
/// `stat` of its directory and one lookup of what the previous call found there; a
/// name that was absent from a directory still unchanged and settled is not statted.
fn measure_files_within(
    files: &[PathBuf],
    window: std::time::Duration,
) -> BTreeMap<String, String> {
    let at = std::time::SystemTime::now();
    if let Some(out) = memo_hit(files, at, window) {
        return out;
    }
    let mut out = BTreeMap::new();
    let mut absent = blake3::Hasher::new();
    let mut n_absent = 0usize;
    let known = ABSENT_IN
        .lock()
        .ok()
        .and_then(|mut m| m.take())
        .unwrap_or_default();
    let mut next = AbsentNames::new();
    let mut keys: HashMap<PathBuf, (Option<DirKey>, bool)> = HashMap::new();
    let mut present = Vec::new();
    let mut rest = files;
    while let Some(first) = rest.first() {
        let dir = first.parent().unwrap_or(Path::new(""));
        let len = rest
            .iter()
            .position(|f| f.parent().unwrap_or(Path::new("")) != dir)
            .unwrap_or(rest.len());
        let (group, tail) = rest.split_at(len);
        rest = tail;
        // a directory's candidates can come in more than one group (`/a/.npmrc` sorts
        // after `/a/.cargo/config`): its stat is taken once per call
        let (key, missing) = *keys
            .entry(dir.to_path_buf())
            .or_insert_with(|| dir_key(dir, at, window));
        let was_absent: &[std::ffi::OsString] = match (key, known.get(dir)) {
            (Some(k), Some((was, names))) if *was == k => names,
            _ => &[],
        };
        let mut found_absent = Vec::new();
        for f in group {
            let name = f.file_name().unwrap_or_default();
            // no entry can be in a directory that is not there
            let meta = if missing || was_absent.iter().any(|n| n == name) {
                Err(std::io::ErrorKind::NotFound.into())
            } else {
                std::fs::symlink_metadata(f)
            };
            match meta {
                Err(_) => {
                    n_absent += 1;
                    absent.update(f.as_os_str().as_encoded_bytes());
                    absent.update(b"\0");
                    found_absent.push(name.to_os_string());
                }
                Ok(m) if m.is_dir() => {
                    out.insert(f.display().to_string(), "directory".to_string());
                    present.push(f.clone());
                }
                Ok(_) => {
                    out.insert(f.display().to_string(), content_digest(f));
                    present.push(f.clone());
                }
            }
        }
        // only a directory that could be vouched for is remembered
        if let Some(k) = key {
            let e = next
                .entry(dir.to_path_buf())
                .or_insert_with(|| (k, Vec::new()));
            e.1.extend(found_absent);
        }
    }
    if let Ok(mut m) = ABSENT_IN.lock() {
        *m = Some(next);
    }
    let absent = format!("{n_absent} absent, {}", &absent.finalize().to_hex()[..16]);
    out.insert(ABSENT_KEY.to_string(), absent.clone());
    // Every directory vouched for (settled, or not there): the next call with the
    // same candidates can stat the directories and the present files only.
    let dirs: Option<Vec<(PathBuf, Option<DirKey>)>> = keys
        .into_iter()
        .map(|(d, (key, missing))| (key.is_some() || missing).then_some((d, key)))
        .collect();
    if let (Some(dirs), Ok(mut m)) = (dirs, MEMO.lock()) {
        *m = Some(Memo {
            files: files.to_vec(),
            dirs,
            present,
            absent,
        });
    }
    out
}

/// The last [`measure_files_within`] call's candidates, what their directories were
/// (a key, or `None`: not there) and what it found: while every directory stands, no
/// candidate can have appeared or gone (see [`measure_files`]), so only the present
/// files are measured again.
struct Memo {
    files: Vec<PathBuf>,
    dirs: Vec<(PathBuf, Option<DirKey>)>,
    present: Vec<PathBuf>,
    absent: String,
}

static MEMO: std::sync::Mutex<Option<Memo>> = std::sync::Mutex::new(None);

/// [`measure_files_within`]'s answer from [`MEMO`], when it was taken for `files` and
/// every directory is as it was then (settled, or still not there) and every present
/// candidate is still there.
fn memo_hit(
    files: &[PathBuf],
    at: std::time::SystemTime,
    window: std::time::Duration,
) -> Option<BTreeMap<String, String>> {
    let guard = MEMO.lock().ok()?;
    let memo = guard.as_ref().filter(|m| m.files == files)?;
    for (d, was) in &memo.dirs {
        let (key, missing) = dir_key(d, at, window);
        let stands = match was {
            Some(k) => key == Some(*k),
            None => missing,
        };
        if !stands {
            return None;
        }
    }
    let mut out = BTreeMap::new();
    for f in &memo.present {
        let m = std::fs::symlink_metadata(f).ok()?;
        let v = if m.is_dir() {
            "directory".to_string()
        } else {
            content_digest(f)
        };
        out.insert(f.display().to_string(), v);
    }
    out.insert(ABSENT_KEY.to_string(), memo.absent.clone());
    Some(out)
}

/// A directory's stat data: `(dev, ino, mtime s, mtime ns, ctime s, ctime ns)`.
type DirKey = (u64, u64, i64, i64, i64, i64);

/// Names known absent from a directory while it keeps a [`DirKey`], across calls of
/// [`measure_files`] (one process measures the same candidates every iteration).
static ABSENT_IN: std::sync::Mutex<Option<AbsentNames>> = std::sync::Mutex::new(None);

/// Names found absent, by directory, with the directory's key at the time.
type AbsentNames = HashMap<PathBuf, (DirKey, Vec<std::ffi::OsString>)>;

/// `dir`'s key, or `None` when it cannot be statted or changed within the racy window
/// before `at` (then nothing is vouched for: an entry made in the same clock tick as
/// the stat would leave the key unchanged); and whether `dir` does not exist. The
/// window is `window`, or [`super::store::RACY_WINDOW_FINE`] for a directory whose
/// times carry sub-second parts (and `window` is the default), as the snapshot store
/// decides.
fn dir_key(
    dir: &Path,
    at: std::time::SystemTime,
    window: std::time::Duration,
) -> (Option<DirKey>, bool) {
    let m = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) => return (None, e.kind() == std::io::ErrorKind::NotFound),
    };
    let window =
        if window == super::store::RACY_WINDOW && m.mtime_nsec() != 0 && m.ctime_nsec() != 0 {
            super::store::RACY_WINDOW_FINE
        } else {
            window
        };
    let key = (m.is_dir() && settled_within(&m, at, window)).then(|| {
        (
            m.dev(),
            m.ino(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        )
    });
    (key, false)
}

/// True when a command word is a Python interpreter (or pytest), by its file name:
/// `python3`, `python3.11`, `/opt/venv/bin/python` (a check that names a virtual
/// environment's interpreter by its path has that interpreter's start-up measured too;
/// a fresh review's check did).
#[must_use]
pub fn is_python(word: &str) -> bool {
    let word = word.rsplit('/').next().unwrap_or(word);
    word == "python"
        || word == "pytest"
        || word
            .strip_prefix("python")
            .is_some_and(|r| r.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_candidate_known_absent_is_seen_when_it_appears() {
        let d = tempfile::tempdir().unwrap();
        let files: Vec<PathBuf> = [".python-version", "pytest.ini", "setup.cfg"]
            .iter()
            .map(|n| d.path().join(n))
            .collect();
        let zero = std::time::Duration::ZERO;
        let before = measure_files_within(&files, zero);
        assert_eq!(before.len(), 1, "{before:?}");
        assert_eq!(
            measure_files_within(&files, zero),
            before,
            "nothing changed"
        );
        // (a timestamp tick may pass between the two measurements and the write)
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&files[1], "[pytest]\n").unwrap();
        let after = measure_files_within(&files, zero);
        assert!(
            after.contains_key(&files[1].display().to_string()),
            "the new file is measured: {after:?}"
        );
        assert!(after[ABSENT_KEY].starts_with("2 absent, "), "{after:?}");
        std::fs::remove_file(&files[1]).unwrap();
        assert_eq!(measure_files_within(&files, zero), before, "and gone again");
    }

    #[test]
    fn config_candidates_fold_absent_ones_and_see_one_appear() {
        let d = tempfile::tempdir().unwrap();
        let files: Vec<PathBuf> = ["a.ini", "b.toml", "sub"]
            .iter()
            .map(|n| d.path().join(n))
            .collect();
        let before = measure_files(&files);
        assert_eq!(before.len(), 1, "only the absent entry: {before:?}");
        assert!(before[ABSENT_KEY].starts_with("3 absent, "));
        std::fs::write(&files[1], "x").unwrap();
        std::fs::create_dir(&files[2]).unwrap();
        let after = measure_files(&files);
        assert!(after[ABSENT_KEY].starts_with("1 absent, "));
        assert_ne!(before[ABSENT_KEY], after[ABSENT_KEY]);
        assert_eq!(after[&files[2].display().to_string()], "directory");
        assert!(after.contains_key(&files[1].display().to_string()));
        // the same absent count over other paths is another digest
        std::fs::remove_file(&files[1]).unwrap();
        std::fs::write(&files[0], "x").unwrap();
        let swapped = measure_files(&files);
        assert_ne!(swapped[ABSENT_KEY], after[ABSENT_KEY]);
    }

    #[test]
    fn command_words_table() {
        let home_venv = format!(
            "{}/venv/bin/pytest",
            std::env::var("HOME").unwrap_or_default()
        );
        let table: &[(&str, &[&str])] = &[
            ("python3 -m pytest", &["python3"]),
            ("cargo test --offline", &["cargo"]),
            ("sh check.sh", &["sh"]),
            ("CI=1 npm test && node --test", &["node", "npm"]),
            ("env FOO=1 timeout 60 make test | tee log", &["make", "tee"]),
            ("./run.sh; ../x", &[]),
            ("test -f done", &["test"]),
            // a program outside the tree named by its path
            ("/opt/venv/bin/python -m pytest", &["/opt/venv/bin/python"]),
            ("${HOME}/venv/bin/pytest -q", &[&home_venv]),
            ("$LOOPEXEC_TEST_UNSET_VARIABLE/bin/pytest", &[]),
            (".venv/bin/python -m pytest", &[]),
        ];
        for (cmd, want) in table {
            assert_eq!(command_words(cmd), *want, "{cmd}");
        }
    }

    #[test]
    fn a_shim_earlier_on_path_changes_the_measurement() {
        let tmp = tempfile::tempdir().unwrap();
        let early = tmp.path().join("early");
        std::fs::create_dir_all(&early).unwrap();
        let path = format!("{}:/usr/bin:/bin", early.display());
        let words = vec!["sh".to_string()];
        let before = measure(&words, &path, &[], &[]);
        let shim = early.join("sh");
        std::fs::write(&shim, "#!/bin/true\n").unwrap();
        std::fs::set_permissions(&shim, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let after = measure(&words, &path, &[], &[]);
        assert_ne!(before["path:sh"], after["path:sh"]);
        assert!(after["path:sh"].starts_with(&shim.display().to_string()));
    }

    #[test]
    fn a_new_pth_file_is_seen() {
        let tmp = tempfile::tempdir().unwrap();
        let site = vec![tmp.path().to_path_buf()];
        let before = measure(&[], "", &site, &[]);
        std::fs::write(tmp.path().join("evil.pth"), "import os\n").unwrap();
        let after = measure(&[], "", &site, &[]);
        assert_eq!(before.len(), 1, "{before:?}");
        assert_eq!(after.len(), 2, "{after:?}");
    }

    /// A distribution planted in a site directory with a `pytest11` entry point (a
    /// fresh review's red check installed one into the user site; pytest loaded it in
    /// the next check) changes the measurement; so does editing an existing
    /// distribution's entry points. Bytecode Python writes on import does not.
    #[test]
    fn a_plugin_distribution_in_a_site_directory_is_seen() {
        let tmp = tempfile::tempdir().unwrap();
        let site = vec![tmp.path().to_path_buf()];
        let dist = tmp.path().join("honest-1.0.dist-info");
        std::fs::create_dir_all(&dist).unwrap();
        std::fs::write(
            dist.join("entry_points.txt"),
            "[console_scripts]\nh = h:main\n",
        )
        .unwrap();
        let t0 = measure(&[], "", &site, &[]);
        std::fs::create_dir_all(tmp.path().join("__pycache__")).unwrap();
        assert_eq!(
            measure(&[], "", &site, &[]),
            t0,
            "bytecode is no new module"
        );
        std::fs::write(
            dist.join("entry_points.txt"),
            "[pytest11]\nevil = evil_plugin\n",
        )
        .unwrap();
        assert_ne!(measure(&[], "", &site, &[]), t0, "an edited entry point");
        let planted = tmp.path().join("evil-1.0.dist-info");
        std::fs::create_dir_all(&planted).unwrap();
        std::fs::write(tmp.path().join("evil_plugin.py"), "").unwrap();
        let after = measure(&[], "", &site, &[]);
        assert_ne!(
            after[&format!("{}/*", tmp.path().display())],
            t0[&format!("{}/*", tmp.path().display())]
        );
    }

    /// A virtual environment's `pyvenv.cfg` and its interpreter's standard library are
    /// measured: a `home` pointed elsewhere, a `pyvenv.cfg` appearing beside an
    /// interpreter, a `sitecustomize.py` added to the library all change the measure.
    #[test]
    fn python_start_up_paths_are_measured() {
        let tmp = tempfile::tempdir().unwrap();
        let cfg = tmp.path().join("venv/pyvenv.cfg");
        let beside = tmp.path().join("venv/bin/pyvenv.cfg");
        let stdlib = tmp.path().join("lib/python3.11");
        std::fs::create_dir_all(beside.parent().unwrap()).unwrap();
        std::fs::create_dir_all(&stdlib).unwrap();
        std::fs::write(&cfg, "home = /usr/bin\n").unwrap();
        std::fs::write(stdlib.join("os.py"), "").unwrap();
        let startup = vec![stdlib.clone(), beside.clone(), cfg.clone()];
        let t0 = measure(&[], "", &[], &startup);
        assert_eq!(t0[&beside.display().to_string()], "missing");
        assert_eq!(measure(&[], "", &[], &startup), t0, "nothing changed");
        std::fs::write(&cfg, "home = /tmp/evil/bin\n").unwrap();
        assert_ne!(
            measure(&[], "", &[], &startup),
            t0,
            "home pointed elsewhere"
        );
        std::fs::write(&cfg, "home = /usr/bin\n").unwrap();
        assert_eq!(measure(&[], "", &[], &startup), t0, "put back");
        std::fs::write(&beside, "home = /tmp/evil/bin\n").unwrap();
        assert_ne!(measure(&[], "", &[], &startup), t0, "a pyvenv.cfg appeared");
        std::fs::remove_file(&beside).unwrap();
        std::fs::write(stdlib.join("sitecustomize.py"), "import calc\n").unwrap();
        let after = measure(&[], "", &[], &startup);
        assert!(after.contains_key(&stdlib.join("sitecustomize.py").display().to_string()));
        assert_ne!(after, t0, "a sitecustomize.py in the library");
    }

    #[test]
    fn python_interpreters_are_told_by_their_file_name() {
        for (word, python) in [
            ("python3", true),
            ("python3.11", true),
            ("/tmp/venv/bin/python3", true),
            (".venv/bin/python", true),
            ("pytest", true),
            ("python3-config", false),
            ("/usr/bin/pythonista", false),
            ("cargo", false),
        ] {
            assert_eq!(is_python(word), python, "{word}");
        }
    }

    /// A real interpreter reports its standard library and both `pyvenv.cfg` places.
    #[test]
    fn a_python_interpreter_reports_its_start_up_paths() {
        let Some(python) = resolve("python3", &std::env::var("PATH").unwrap_or_default()) else {
            eprintln!("skipped: no python3 on PATH");
            return;
        };
        let found = python_paths(&python);
        assert!(!found.site_dirs.is_empty(), "{found:?}");
        assert!(
            found.startup.iter().any(|p| p.join("os.py").is_file()),
            "the standard library: {found:?}"
        );
        assert_eq!(
            found
                .startup
                .iter()
                .filter(|p| p.ends_with("pyvenv.cfg"))
                .count(),
            2,
            "{found:?}"
        );
    }
}
