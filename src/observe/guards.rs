//! Integrity-guard measurements over snapshot trees: blocked paths and assertion counts.
//!
//! Everything here measures; nothing decides. The lead compares the measurements of
//! each iteration against the immutable baseline t0 and picks the halt reason.
//!
//! * [`BlockedPaths`]: globs for paths an agent must never touch (VCS internals,
//!   loopexec's own state and policy, secrets, CI configuration). Any change to one of
//!   them, in any direction (added, modified, deleted), is reported.
//! * Test files ([`is_test_file`], [`is_rust_test_source`]) by each language's
//!   convention plus user globs, and [`assertion_total`]: per-file assertion counts
//!   (rules in [`crate::observe::assertions`]) over the test files of a tree.
//!
//! Globs (here and in [`crate::observe::manifest`]) are matched against
//! repository-root relative paths with `/` separators; `*` and `?` do not cross a
//! `/`, `**` does, and `**/x` also matches `x` at the root (see [`build_globset`]).

pub use super::assertions::count_assertions;
pub use super::lex::Lang;
pub use super::manifest::{
    manifest, manifest_in, Manifest, ManifestChange, ManifestChangeKind, DEFAULT_PROTECTED,
};

use super::git::{self, GitError, PathChange};
use super::lex::mask;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::OnceLock;

/// Errors building guard configuration.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// A glob could not be compiled.
    #[error("invalid glob {pattern:?}: {source}")]
    Glob {
        /// The glob as written.
        pattern: String,
        /// What globset said.
        #[source]
        source: globset::Error,
    },
}

/// Paths no iteration may change (repository-root relative globs).
///
/// `.git/**` and `.loopexec/**` never appear in a snapshot tree (git refuses the
/// first, snapshots exclude the second); they are listed so that the same set can
/// guard paths reported by other means. `.env` files hold secrets; the CI entries are
/// the configuration files of the common hosted CI services, which decide what
/// "the tests passed" means outside the loop.
pub const DEFAULT_BLOCKED: &[&str] = &[
    ".git/**",
    "**/.loopexec/**",
    "**/loop.toml",
    "**/.env",
    "**/.env.*",
    ".github/workflows/**",
    ".github/actions/**",
    ".gitlab-ci.yml",
    ".gitlab/ci/**",
    ".circleci/**",
    "azure-pipelines.yml",
    ".azure-pipelines/**",
    "Jenkinsfile",
    ".buildkite/**",
    ".travis.yml",
    "bitbucket-pipelines.yml",
    ".drone.yml",
    ".woodpecker.yml",
    ".woodpecker/**",
    "appveyor.yml",
    ".appveyor.yml",
];

/// Compiles globs with the module's matching rules (`*` stays within one path
/// component). Errors: [`GuardError::Glob`] naming the first bad pattern.
pub fn build_globset<S: AsRef<str>>(globs: &[S]) -> Result<GlobSet, GuardError> {
    globset_with_case(globs, false)
}

/// As [`build_globset`], matching without regard to case: for protected files, where
/// a differently cased name is still found by the tool that reads it (Python's
/// `importlib.metadata` lower-cases `X.DIST-INFO`; case-insensitive file systems).
///
/// # Errors
/// [`GuardError::Glob`] naming a pattern that does not parse.
pub fn build_globset_ignoring_case<S: AsRef<str>>(globs: &[S]) -> Result<GlobSet, GuardError> {
    globset_with_case(globs, true)
}

fn globset_with_case<S: AsRef<str>>(globs: &[S], ignore_case: bool) -> Result<GlobSet, GuardError> {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        let pattern = g.as_ref();
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .case_insensitive(ignore_case)
            .build()
            .map_err(|source| GuardError::Glob {
                pattern: pattern.to_string(),
                source,
            })?;
        b.add(glob);
    }
    b.build().map_err(|source| GuardError::Glob {
        pattern: String::new(),
        source,
    })
}

/// A compiled set of blocked-path globs.
#[derive(Debug, Clone)]
pub struct BlockedPaths {
    globs: Vec<String>,
    set: GlobSet,
}

impl BlockedPaths {
    /// Blocks exactly `globs`. Errors: [`GuardError::Glob`].
    pub fn new<S: AsRef<str>>(globs: &[S]) -> Result<Self, GuardError> {
        Ok(BlockedPaths {
            globs: globs.iter().map(|g| g.as_ref().to_string()).collect(),
            set: build_globset(globs)?,
        })
    }

    /// [`DEFAULT_BLOCKED`] plus `extra` (e.g. `[guards] blocked_paths` from `loop.toml`).
    pub fn with_defaults<S: AsRef<str>>(extra: &[S]) -> Result<Self, GuardError> {
        let mut all: Vec<String> = DEFAULT_BLOCKED.iter().map(|s| (*s).to_string()).collect();
        all.extend(extra.iter().map(|s| s.as_ref().to_string()));
        Self::new(&all)
    }

    /// [`Self::with_defaults`], compiled once per distinct `extra` per process: `decide`
    /// judges every iteration against the same `[guards] blocked_paths`, and building
    /// the glob set is the costly part (regex compilation).
    ///
    /// # Errors
    /// [`GuardError::Glob`], as [`Self::with_defaults`] (errors are not cached).
    pub fn cached<S: AsRef<str>>(extra: &[S]) -> Result<std::sync::Arc<Self>, GuardError> {
        type Cache = Vec<(Vec<String>, std::sync::Arc<BlockedPaths>)>;
        static CACHE: std::sync::Mutex<Cache> = std::sync::Mutex::new(Vec::new());
        let key: Vec<String> = extra.iter().map(|s| s.as_ref().to_string()).collect();
        let mut cache = CACHE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, b)) = cache.iter().find(|(k, _)| *k == key) {
            return Ok(b.clone());
        }
        let b = std::sync::Arc::new(Self::with_defaults(&key)?);
        // a handful of configurations per process at most (tests build many)
        if cache.len() >= 16 {
            cache.remove(0);
        }
        cache.push((key, b.clone()));
        Ok(b)
    }

    /// The globs, as given.
    #[must_use]
    pub fn globs(&self) -> &[String] {
        &self.globs
    }

    /// True when `path` is blocked.
    #[must_use]
    pub fn is_blocked(&self, path: &str) -> bool {
        self.set.is_match(path)
    }

    /// The blocked paths among `changes` (any status), sorted and de-duplicated.
    #[must_use]
    pub fn blocked_changes(&self, changes: &[PathChange]) -> Vec<String> {
        let mut out: Vec<String> = changes
            .iter()
            .filter(|c| self.is_blocked(&c.path))
            .map(|c| c.path.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// The language of a test file recognised by its path, or `None`.
///
/// Conventions (any directory depth; nothing under `node_modules/` counts):
/// * Rust: `*.rs` inside a `tests/` directory. Other `.rs` files are test files when
///   their content holds a test attribute, see [`is_rust_test_source`].
/// * Python: `test_*.py`, `*_test.py`, any `*.py` inside a `tests/` or `test/`
///   directory; `conftest.py` is fixtures, not tests (the manifest protects it).
/// * JS/TS: `*.test.<ext>`, `*.spec.<ext>`, and any such-extension file inside
///   `__tests__/`, for `ext` in `js jsx mjs cjs ts tsx mts cts`.
/// * Go: `*_test.go`.
/// * Any path matching `extra_globs` (`[guards] test_paths`), with the language from
///   its extension ([`Lang::Other`] when unknown).
#[must_use]
pub fn is_test_file(path: &str, extra_globs: &GlobSet) -> Option<Lang> {
    if extra_globs.is_match(path) {
        return Some(Lang::from_path(path));
    }
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop()?;
    if parts.contains(&"node_modules") {
        return None;
    }
    let in_dir = |d: &str| parts.contains(&d);
    match Lang::from_path(name) {
        Lang::Rust if in_dir("tests") => Some(Lang::Rust),
        Lang::Python => {
            let stem = name.strip_suffix(".py").unwrap_or(name);
            if name == "conftest.py" || !name.ends_with(".py") {
                None
            } else if stem.starts_with("test_")
                || stem.ends_with("_test")
                || in_dir("tests")
                || in_dir("test")
            {
                Some(Lang::Python)
            } else {
                None
            }
        }
        Lang::JsTs => {
            let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
            if stem.ends_with(".test") || stem.ends_with(".spec") || in_dir("__tests__") {
                Some(Lang::JsTs)
            } else {
                None
            }
        }
        Lang::Go if name.ends_with("_test.go") => Some(Lang::Go),
        _ => None,
    }
}

fn rust_test_attr() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"#\s*\[\s*(?:cfg\s*\(\s*test\s*\)|(?:[A-Za-z_][A-Za-z0-9_]*\s*::\s*)*test\s*[\](])",
        )
        .unwrap_or_else(|e| panic!("invalid built-in pattern: {e}"))
    })
}

/// True when Rust source holds tests: a `#[test]` (or `#[<path>::test]`, such as
/// `#[tokio::test]`) or `#[cfg(test)]` attribute outside comments and strings.
#[must_use]
pub fn is_rust_test_source(source: &str) -> bool {
    rust_test_attr().is_match(&mask(Lang::Rust, source))
}

/// Assertions in one test file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileAssertions {
    /// The language whose rules counted it.
    pub lang: Lang,
    /// Assertion calls found.
    pub count: u64,
}

/// Assertion counts over the test files of one tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssertionCount {
    /// Sum of all per-file counts.
    pub total: u64,
    /// Per test file (repository-root relative path), including files with 0.
    pub files: BTreeMap<String, FileAssertions>,
}

/// A test file whose assertion count went down between two trees.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssertionDrop {
    /// Repository-root relative path.
    pub path: String,
    /// Count in the earlier tree.
    pub before: u64,
    /// Count in the later tree (0 when the file is gone or no longer a test file).
    pub after: u64,
}

impl AssertionCount {
    /// Files whose count is lower in `later` than in `self`, sorted by path.
    #[must_use]
    pub fn drops(&self, later: &AssertionCount) -> Vec<AssertionDrop> {
        self.files
            .iter()
            .filter_map(|(path, f)| {
                let after = later.files.get(path).map_or(0, |g| g.count);
                (after < f.count).then(|| AssertionDrop {
                    path: path.clone(),
                    before: f.count,
                    after,
                })
            })
            .collect()
    }
}

/// Memo of per-blob results, so a loop re-reads only test files that changed.
/// Keyed by blob id and the rule that applied (a language, or the Rust content test).
#[derive(Debug, Default, Clone)]
pub struct AssertionCache {
    by_blob: HashMap<CacheKey, Option<(Lang, u64)>>,
}

/// Blob id and the rule applied: `Some(lang)` by path convention, `None` for the Rust
/// content test.
type CacheKey = (String, Option<Lang>);

/// [`assertion_total_cached`] with a fresh cache.
pub fn assertion_total(
    dir: &Path,
    tree: &str,
    extra_test_globs: &GlobSet,
) -> Result<AssertionCount, GitError> {
    assertion_total_cached(dir, tree, extra_test_globs, &mut AssertionCache::default())
}

/// Counts assertions in every test file of `tree` (a tree or commit id).
///
/// Test files are regular files recognised by [`is_test_file`], plus every other
/// `.rs` file for which [`is_rust_test_source`] holds. Contents are read in one
/// `git cat-file --batch` process; blobs already in `cache` are not read again.
/// Non-UTF-8 bytes are replaced before counting.
pub fn assertion_total_cached(
    dir: &Path,
    tree: &str,
    extra_test_globs: &GlobSet,
    cache: &mut AssertionCache,
) -> Result<AssertionCount, GitError> {
    assertion_total_in(dir, &git::ls_tree(dir, tree)?, extra_test_globs, cache)
}

/// [`assertion_total_cached`] over a listing already made with [`git::ls_tree`], so one
/// listing can serve both this and [`crate::observe::manifest::manifest_in`].
pub fn assertion_total_in(
    dir: &Path,
    entries: &[git::TreeEntry],
    extra_test_globs: &GlobSet,
    cache: &mut AssertionCache,
) -> Result<AssertionCount, GitError> {
    // (path, oid, rule): rule None = Rust file needing the content test.
    let mut candidates: Vec<(String, String, Option<Lang>)> = Vec::new();
    for e in entries {
        if !e.is_regular_file() {
            continue;
        }
        match is_test_file(&e.path, extra_test_globs) {
            Some(lang) => candidates.push((e.path.clone(), e.oid.clone(), Some(lang))),
            None if Lang::from_path(&e.path) == Lang::Rust
                && !e.path.split('/').any(|p| p == "node_modules") =>
            {
                candidates.push((e.path.clone(), e.oid.clone(), None));
            }
            None => {}
        }
    }
    let mut to_read: Vec<String> = candidates
        .iter()
        .filter(|(_, oid, rule)| !cache.by_blob.contains_key(&(oid.clone(), *rule)))
        .map(|(_, oid, _)| oid.clone())
        .collect();
    to_read.sort();
    to_read.dedup();
    let blobs = git::cat_blobs(dir, &to_read)?;
    let contents: HashMap<&str, &[u8]> = to_read
        .iter()
        .zip(blobs.iter())
        .filter_map(|(oid, b)| b.as_deref().map(|b| (oid.as_str(), b)))
        .collect();
    let mut result = AssertionCount::default();
    for (path, oid, rule) in candidates {
        let key = (oid, rule);
        let entry = match cache.by_blob.get(&key) {
            Some(v) => *v,
            None => {
                let Some(bytes) = contents.get(key.0.as_str()) else {
                    continue;
                };
                let text = String::from_utf8_lossy(bytes);
                let v = match rule {
                    Some(lang) => Some((lang, count_assertions(lang, &text))),
                    None if is_rust_test_source(&text) => {
                        Some((Lang::Rust, count_assertions(Lang::Rust, &text)))
                    }
                    None => None,
                };
                cache.by_blob.insert(key, v);
                v
            }
        };
        if let Some((lang, count)) = entry {
            result.total += count;
            result.files.insert(path, FileAssertions { lang, count });
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::git::testutil::{commit_all, repo, write};
    use crate::observe::git::{snapshot, ChangeKind};

    fn none() -> GlobSet {
        build_globset::<&str>(&[]).unwrap()
    }

    #[test]
    fn default_blocked_paths_match_ci_and_secrets_only() {
        let b = BlockedPaths::with_defaults(&["secrets/**"]).unwrap();
        for p in [
            ".github/workflows/ci.yml",
            ".gitlab-ci.yml",
            "loop.toml",
            "sub/loop.toml",
            ".env",
            "app/.env.local",
            ".circleci/config.yml",
            "Jenkinsfile",
            "secrets/key",
            ".loopexec/runs/x.jsonl",
        ] {
            assert!(b.is_blocked(p), "{p} should be blocked");
        }
        for p in [
            "src/env.rs",
            "docs/Jenkinsfile.md",
            ".github/CODEOWNERS",
            "sub/Jenkinsfile",
            "environment",
        ] {
            assert!(!b.is_blocked(p), "{p} should not be blocked");
        }
        let changes = vec![
            PathChange {
                path: "src/a.rs".into(),
                status: ChangeKind::Modified,
            },
            PathChange {
                path: ".github/workflows/ci.yml".into(),
                status: ChangeKind::Deleted,
            },
            PathChange {
                path: ".env".into(),
                status: ChangeKind::Added,
            },
        ];
        assert_eq!(
            b.blocked_changes(&changes),
            vec![".env", ".github/workflows/ci.yml"]
        );
        assert!(matches!(
            BlockedPaths::new(&["a/[b"]),
            Err(GuardError::Glob { .. })
        ));
    }

    #[test]
    fn test_files_by_convention_and_user_globs() {
        let n = none();
        assert_eq!(is_test_file("tests/math.rs", &n), Some(Lang::Rust));
        assert_eq!(
            is_test_file("crates/a/tests/it/main.rs", &n),
            Some(Lang::Rust)
        );
        assert_eq!(is_test_file("src/lib.rs", &n), None);
        assert_eq!(is_test_file("test_calc.py", &n), Some(Lang::Python));
        assert_eq!(is_test_file("pkg/calc_test.py", &n), Some(Lang::Python));
        assert_eq!(is_test_file("tests/helpers.py", &n), Some(Lang::Python));
        assert_eq!(is_test_file("tests/conftest.py", &n), None);
        assert_eq!(is_test_file("src/calc.py", &n), None);
        assert_eq!(is_test_file("src/a.test.ts", &n), Some(Lang::JsTs));
        assert_eq!(is_test_file("src/a.spec.jsx", &n), Some(Lang::JsTs));
        assert_eq!(is_test_file("src/__tests__/a.js", &n), Some(Lang::JsTs));
        assert_eq!(is_test_file("node_modules/x/a.test.js", &n), None);
        assert_eq!(is_test_file("src/latest.js", &n), None);
        assert_eq!(is_test_file("calc_test.go", &n), Some(Lang::Go));
        assert_eq!(is_test_file("calc.go", &n), None);
        let extra = build_globset(&["checks/**/*.sh", "spec/**/*.py"]).unwrap();
        assert_eq!(is_test_file("checks/a/b.sh", &extra), Some(Lang::Shell));
        assert_eq!(is_test_file("spec/x.py", &extra), Some(Lang::Python));
    }

    #[test]
    fn rust_sources_are_tests_by_content() {
        assert!(is_rust_test_source("fn f() {}\n#[cfg(test)]\nmod tests {}"));
        assert!(is_rust_test_source("#[tokio::test]\nasync fn t() {}"));
        assert!(!is_rust_test_source(
            "// #[test]\nfn f() { let s = \"#[test]\"; }"
        ));
        assert!(!is_rust_test_source(
            "#[cfg(feature = \"testing\")]\nfn f() {}"
        ));
    }

    #[test]
    fn assertion_total_over_snapshots_names_dropped_file() {
        let d = repo();
        let p = d.path();
        write(p, "src/lib.rs", "pub fn add(a: i64, b: i64) -> i64 { a - b }\n#[cfg(test)]\nmod t { #[test] fn x() { assert!(super::add(1, 1) == 2); } }\n");
        write(
            p,
            "src/other.rs",
            "// assert!(no tests here)\npub fn g() {}\n",
        );
        write(p, "tests/math.rs", "use calc::add;\n#[test] fn adds() { assert_eq!(add(2, 3), 5); }\n#[test] fn zero() { assert_eq!(add(0, 0), 0); }\n");
        write(p, "py/test_calc.py", "def test_a():\n    assert 1 == 1\n");
        write(p, "py/conftest.py", "assert True\n");
        commit_all(p, "base");
        let t0 = snapshot(p, "r", "t0").unwrap();
        let mut cache = AssertionCache::default();
        let c0 = assertion_total_cached(p, &t0.tree, &none(), &mut cache).unwrap();
        assert_eq!(c0.total, 4);
        assert_eq!(
            c0.files.keys().collect::<Vec<_>>(),
            vec!["py/test_calc.py", "src/lib.rs", "tests/math.rs"]
        );
        let math = std::fs::read_to_string(p.join("tests/math.rs")).unwrap();
        write(
            p,
            "tests/math.rs",
            &math.replace("assert_eq!(add(2, 3), 5);", "let _ = add(2, 3);"),
        );
        let t1 = snapshot(p, "r", "i1").unwrap();
        let c1 = assertion_total_cached(p, &t1.tree, &none(), &mut cache).unwrap();
        assert_eq!(c1.total, c0.total - 1);
        assert_eq!(
            c0.drops(&c1),
            vec![AssertionDrop {
                path: "tests/math.rs".into(),
                before: 2,
                after: 1
            }]
        );
        // Same answer without the cache.
        assert_eq!(assertion_total(p, &t1.tree, &none()).unwrap(), c1);
        // Deleting a test file drops its whole count.
        std::fs::remove_file(p.join("py/test_calc.py")).unwrap();
        let t2 = snapshot(p, "r", "i2").unwrap();
        let c2 = assertion_total(p, &t2.tree, &none()).unwrap();
        assert!(c0
            .drops(&c2)
            .iter()
            .any(|d| d.path == "py/test_calc.py" && d.after == 0));
    }
}
