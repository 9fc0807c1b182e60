//! The judged check's scope: which of the agent's files the frozen oracle is judged
//! with, and which of its links may point where.
//!
//! **New test files** (`[oracle] new_tests`, SPEC §3.10). A test file runs inside the
//! same runner process as t0's tests, before or after them, and can shape their verdict
//! from there: `_pytest.python.Function.runtest = lambda self: None` in a new
//! `tests/test_000_helpers.py`, `calc.add = …` before the frozen test imports it, a node
//! `test/aaa-setup.test.js` that rewrites the code under test and a `zzz-teardown` that
//! puts it back. The verdict is the frozen oracle's, so under the default `exclude` the
//! test files the agent added since t0 — by the runner conventions
//! ([`is_runner_test_file`]) and absent from t0's tree — are left out of the tree synced
//! into the clean room; `check_finished.clean_room.left_out` and the verdict name them.
//! Under `run` they run, and their added lines are scanned by the runner tampering rules
//! like the rest of the agent's code.
//!
//! What a new file can do besides being a test is answered elsewhere: new runner
//! configuration (`conftest.py`, `pytest.ini`, `setup.cfg`, `tox.ini`, `.cargo/config*`,
//! `package.json` test sections, `.npmrc`, a node `--require`/`--import` file is only
//! reached through one of them) is a frozen-oracle edit; a new `build.rs` is code, not a
//! test: it runs in the clean room at build time and what it writes there is watched
//! ([`super::watch`]).
//!
//! **Links** (SPEC §3.9). The clean room holds the snapshot, and a symbolic link in it is
//! copied as a link: `calc.py -> /tmp/outside_calc.py` makes the check read code that is
//! in no snapshot. A link the agent added or changed since t0 whose target is absolute
//! or climbs out of the tree (followed through the tree's own links) is
//! `metric_integrity_violation` naming it ([`escaping_links`]). Links unchanged since t0
//! stay allowed.

use super::frozen::OracleRules;
use super::store::{FileEntry, SnapshotStore};
use super::tree::TreeObserver;
use crate::config::NewTestPolicy;
use std::collections::BTreeMap;

/// Node's own test-file conventions (`node --test` without arguments): `*.test.*`,
/// `*-test.*`, `*_test.*`, `test-*.*`, `test.*` and every file under a `test/`
/// directory, for `js`, `mjs`, `cjs` (and the TypeScript forms loaders run); and
/// jest's default `testMatch` (`*.spec.*`, `spec.*`, `*.testspec.*`, …).
#[must_use]
pub fn is_node_test_name(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return false;
    };
    if !matches!(
        ext,
        "js" | "mjs" | "cjs" | "ts" | "mts" | "cts" | "jsx" | "tsx"
    ) {
        return false;
    }
    if path.split('/').any(|p| p == "node_modules") {
        return false;
    }
    // jest's default `testMatch`, `?(*.)+(spec|test).[jt]s?(x)`: the last dotted part
    // of the stem is one or more of `spec`/`test` (`warm.testspec.js`, `spec.js`: a
    // fresh review's new `warm.testspec.js` ran beside the frozen tests)
    let mut last = stem.rsplit('.').next().unwrap_or(stem);
    let jest = !last.is_empty()
        && loop {
            match last
                .strip_prefix("spec")
                .or_else(|| last.strip_prefix("test"))
            {
                Some("") => break true,
                Some(rest) => last = rest,
                None => break false,
            }
        };
    jest || stem.ends_with("-test")
        || stem.ends_with("_test")
        || stem.starts_with("test-")
        || path.split('/').rev().skip(1).any(|d| d == "test")
}

/// Why `path` is a file the test runner would pick up as part of the tests (`None`: it
/// is not): the frozen oracle's own rules ([`OracleRules::frozen_as`]: test files by
/// each runner's conventions and `[guards] test_paths`, test helpers, files under test
/// directories, snapshot and TAP files, declared oracle files) and node's test-file
/// names ([`is_node_test_name`]).
#[must_use]
pub fn is_runner_test_file(path: &str, rules: &OracleRules) -> Option<&'static str> {
    rules
        .frozen_as(path)
        .or_else(|| is_node_test_name(path).then_some("test file (node --test conventions)"))
}

/// The test files of `now` that t0's tree did not hold (sorted): what `exclude` leaves
/// out of the judged tree.
#[must_use]
pub fn added_tests(
    t0: &BTreeMap<String, FileEntry>,
    now: &BTreeMap<String, FileEntry>,
    rules: &OracleRules,
) -> Vec<String> {
    now.keys()
        .filter(|p| !t0.contains_key(*p) && is_runner_test_file(p, rules).is_some())
        .cloned()
        .collect()
}

/// The files and directories of `now` a check's runner must not collect (relative,
/// sorted): `(test files, the rest)`. New since t0 means absent from `t0` and not
/// created by the baseline check (`baseline_created`, what the frozen check itself
/// writes). Test files are [`added_tests`] but a package's `__init__.py`; the rest are
/// every other new file and every new directory (one that holds no file of `t0` and
/// none `baseline_created` names), each listed once. A new `__init__.py` whose text
/// (`text`, by path) is a bare package marker ([`is_bare_package_marker`]) is among the
/// rest: pytest imports it to import a frozen test beside it, and it runs nothing. One
/// that holds code, or cannot be read, is a test file when [`added_tests`] says so
/// (a check in place then fails closed when it is imported: a review's new
/// `tests/__init__.py` patched the code before the frozen tests ran).
#[must_use]
pub fn new_files_to_skip(
    t0: &BTreeMap<String, FileEntry>,
    now: &BTreeMap<String, FileEntry>,
    rules: &OracleRules,
    baseline_created: &[&str],
    text: &dyn Fn(&str) -> Option<String>,
) -> (Vec<String>, Vec<String>) {
    let created: std::collections::HashSet<&str> = baseline_created.iter().copied().collect();
    let mut old_dirs: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for p in t0.keys().map(String::as_str).chain(created.iter().copied()) {
        let mut d = p;
        while let Some((parent, _)) = d.rsplit_once('/') {
            if !old_dirs.insert(parent) {
                break;
            }
            d = parent;
        }
    }
    let mut tests = Vec::new();
    let mut others = Vec::new();
    let mut dirs = std::collections::BTreeSet::new();
    for p in now.keys() {
        if t0.contains_key(p) || created.contains(p.as_str()) {
            continue;
        }
        let marker = (p == "__init__.py" || p.ends_with("/__init__.py"))
            && text(p).is_some_and(|t| is_bare_package_marker(&t));
        if !marker && is_runner_test_file(p, rules).is_some() {
            tests.push(p.clone());
        } else {
            others.push(p.clone());
        }
        let mut d = p.as_str();
        while let Some((parent, _)) = d.rsplit_once('/') {
            if old_dirs.contains(parent) || !dirs.insert(parent.to_string()) {
                break;
            }
            d = parent;
        }
    }
    others.extend(dirs);
    others.sort();
    (tests, others)
}

/// True when a Python file's `text` runs nothing: blank lines, comments and at most one
/// string literal (a docstring) — what `touch tests/__init__.py` or a package's
/// one-line description leaves.
#[must_use]
pub fn is_bare_package_marker(text: &str) -> bool {
    let body: String = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    if body.is_empty() {
        return true;
    }
    ["\"\"\"", "'''", "\"", "'"].iter().any(|q| {
        body.len() >= 2 * q.len()
            && body.starts_with(q)
            && body.ends_with(q)
            && !body[q.len()..body.len() - q.len()].contains(q)
    })
}

/// The judged tree without the test files added since t0, without the whole new
/// tests a Rust source's test modules grew by ([`super::frozen::strip_new_rust_tests`]:
/// the file is judged with them blanked out) and without the new doctest examples of a
/// Python source ([`super::frozen::strip_new_python_doctests`]), under `policy`: the tree's id, and
/// what was left out (paths of test files, `path:first-last` line spans of the tests
/// left out of a source). `judged` is the tree [`TreeObserver::judged_tree`]
/// built (the snapshot with t0's oracle restored); `t0` and `now` the files of t0 and of
/// the last snapshot. Without t0 (no store) nothing is left out: the guards that need t0
/// fail closed on their own.
///
/// # Errors
/// A store error, as text.
pub fn leave_out_new_tests(
    store: Option<&SnapshotStore>,
    t0: Option<&BTreeMap<String, FileEntry>>,
    now: &BTreeMap<String, FileEntry>,
    rules: &OracleRules,
    judged: String,
    policy: NewTestPolicy,
) -> Result<(String, Vec<String>), String> {
    let (Some(store), Some(t0), NewTestPolicy::Exclude) = (store, t0, policy) else {
        return Ok((judged, Vec::new()));
    };
    let added = added_tests(t0, now, rules);
    // Rust sources (not test files) whose test modules grew by new tests, or that
    // are new (every test of a new source is new: a new `src/helper.rs` with its own
    // `mod tests` joins the same test binary), and Python sources whose docstrings grew
    // by doctest examples
    let grown: Vec<&String> = now
        .iter()
        .filter(|(p, e)| {
            (p.ends_with(".rs") || p.ends_with(".py"))
                && is_runner_test_file(p, rules).is_none()
                && t0.get(*p).map_or(true, |e0| e0.oid != e.oid)
        })
        .map(|(p, _)| p)
        .collect();
    if added.is_empty() && grown.is_empty() {
        return Ok((judged, added));
    }
    let mut entries = store.entries(&judged).map_err(|e| e.to_string())?;
    let mut left: Vec<String> = added
        .into_iter()
        .filter(|p| entries.remove(p).is_some())
        .collect();
    let text = |oid: &str| -> Option<String> {
        let (_, bytes) = store.odb().read(&super::store::odb::from_hex(oid)?)?;
        String::from_utf8(bytes).ok()
    };
    for p in grown {
        let Some(e) = entries.get(p).cloned() else {
            continue;
        };
        let old = match t0.get(p) {
            Some(e0) => text(&e0.oid),
            None => Some(String::new()),
        };
        let (Some(old), Some(new)) = (old, text(&e.oid)) else {
            continue;
        };
        let strip = if p.ends_with(".py") {
            super::frozen::strip_new_python_doctests
        } else {
            super::frozen::strip_new_rust_tests
        };
        let Some((stripped, spans)) = strip(&old, &new) else {
            continue;
        };
        let oid = store
            .odb()
            .write("blob", stripped.as_bytes())
            .map_err(|err| format!("{p}: {err}"))?;
        entries.insert(
            p.clone(),
            FileEntry {
                mode: e.mode.clone(),
                oid: super::store::odb::to_hex(&oid),
            },
        );
        left.extend(spans.into_iter().map(|(a, b)| format!("{p}:{a}-{b}")));
    }
    if left.is_empty() {
        return Ok((judged, left));
    }
    let tree = store.write_tree(&entries).map_err(|e| e.to_string())?;
    Ok((tree, left))
}

/// [`leave_out_new_tests`] for the observer of a run: `judged` is the tree
/// [`TreeObserver::judged_tree`] returned.
///
/// # Errors
/// A store error, as text.
pub fn judged_without_new_tests(
    obs: &TreeObserver,
    judged: String,
    policy: NewTestPolicy,
) -> Result<(String, Vec<String>), String> {
    leave_out_new_tests(
        obs.store(),
        obs.t0_entries(),
        obs.entries_now(),
        obs.rules(),
        judged,
        policy,
    )
    .map_err(|e| format!("the tree to judge could not be built without the new test files: {e}"))
}

/// The tests `run`, a judged check under `policy`, names that t0 does not define
/// ([`super::unfrozen::unfrozen_tests`], against t0's tree and `baseline`, t0's check):
/// empty under `run`, and without t0's tree (the guards that need it fail closed on
/// their own).
#[must_use]
pub fn unfrozen_in(
    obs: &TreeObserver,
    run: &crate::check::model::ParsedRun,
    baseline: &crate::check::model::ParsedRun,
    policy: NewTestPolicy,
) -> Vec<String> {
    let (Some(store), Some(t0), NewTestPolicy::Exclude) = (obs.store(), obs.t0_entries(), policy)
    else {
        return Vec::new();
    };
    if !super::unfrozen::reads(run.format) {
        return Vec::new();
    }
    let files: Vec<&str> = t0.keys().map(String::as_str).collect();
    let text = |p: &str| -> Option<String> {
        let e = t0.get(p)?;
        let (_, bytes) = store.odb().read(&super::store::odb::from_hex(&e.oid)?)?;
        String::from_utf8(bytes).ok()
    };
    super::unfrozen::unfrozen_tests(run, baseline, &files, &text)
}

/// Git's mode of a symbolic link.
pub const LINK_MODE: &str = "120000";

/// Where a link at `path` with `target` leads, lexically, root-relative: `None` when the
/// target is absolute or climbs above the tree's root.
#[must_use]
pub fn link_destination(path: &str, target: &str) -> Option<String> {
    if target.starts_with('/') || target.is_empty() {
        return None;
    }
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    for seg in target.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

/// Why a link leads out of the tree (`None`: it stays inside). `links` are the tree's
/// links (path → target); a chain through the tree's own links is followed (at most
/// 40 steps, as the kernel does), and a link inside a linked directory is resolved
/// through that directory's link.
#[must_use]
pub fn escapes(path: &str, links: &BTreeMap<String, String>) -> Option<String> {
    escapes_in(path, links, &|_| true)
}

/// [`escapes`], where a link whose destination inside the tree is not part of the
/// snapshot (`in_snapshot` says no: an excluded cache, a build directory, nothing at
/// all) also leads out of it: the clean room holds whatever a check left there.
#[must_use]
pub fn escapes_in(
    path: &str,
    links: &BTreeMap<String, String>,
    in_snapshot: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let mut at = path.to_string();
    for _ in 0..40 {
        let Some(target) = links.get(&at) else {
            if at == path || at.is_empty() || in_snapshot(&at) {
                return None;
            }
            return Some(format!(
                "{path} -> {at} (a path no snapshot holds: the clean room has whatever a check left there)"
            ));
        };
        let Some(next) = link_destination(&at, target) else {
            return Some(if at == path {
                format!("{path} -> {target}")
            } else {
                format!("{path} -> … -> {at} -> {target}")
            });
        };
        // A prefix of the destination may itself be a link (a linked directory).
        let Some(through) = resolve_prefix(&next, links) else {
            return Some(format!(
                "{path} -> {target} (through a linked directory that leaves the tree)"
            ));
        };
        at = through;
    }
    Some(format!("{path}: a chain of more than 40 links"))
}

/// `dest` with its longest linked-directory prefix replaced by that link's destination
/// (one step); `None` when that prefix leads out of the tree.
fn resolve_prefix(dest: &str, links: &BTreeMap<String, String>) -> Option<String> {
    let parts: Vec<&str> = dest.split('/').collect();
    for i in (1..parts.len()).rev() {
        let prefix = parts[..i].join("/");
        if let Some(t) = links.get(&prefix) {
            let base = link_destination(&prefix, t)?;
            let rest = parts[i..].join("/");
            return Some(if base.is_empty() {
                rest
            } else {
                format!("{base}/{rest}")
            });
        }
    }
    Some(dest.to_string())
}

/// Where `path` finally leads through the tree's `links`, root-relative: links to
/// links and linked-directory prefixes are followed (at most 40 steps, as the kernel
/// does). `None` when the chain leaves the tree or is longer.
#[must_use]
pub fn destination_in(path: &str, links: &BTreeMap<String, String>) -> Option<String> {
    let mut at = path.to_string();
    for _ in 0..40 {
        let Some(target) = links.get(&at) else {
            return Some(at);
        };
        at = resolve_prefix(&link_destination(&at, target)?, links)?;
    }
    None
}

/// At most this many paths [`linked_dir_aliases`] returns (a link to the root names
/// every file of the tree once more).
pub const MAX_LINK_ALIASES: usize = 200_000;

/// A file of the tree as a runner also reaches it: through a link to one of the
/// tree's directories.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LinkAlias {
    /// The path through the link (`.cargo/config.toml`).
    pub alias: String,
    /// The file's own path (`docs/cargo/config.toml`).
    pub real: String,
    /// The link (`.cargo`).
    pub link: String,
}

/// Every file of `now` under a directory that a link of the tree leads to, under the
/// path the link gives it: a link `L` whose destination ([`destination_in`]) is a
/// directory `D` of the tree makes each file `D/rest` also `L/rest`. Runners read
/// configuration by such paths (`.cargo/config.toml` through `.cargo -> docs/cargo`,
/// `x.dist-info/entry_points.txt` through a linked `x.dist-info`), so what is protected
/// by its path is judged under these too (a fresh review's exit 10 put pytest's plugin
/// registration and cargo's test runner behind such links). Links inside a linked
/// directory are not followed again, and a link into its own ancestor gives nothing
/// below itself. Sorted by alias; at most [`MAX_LINK_ALIASES`].
#[must_use]
pub fn linked_dir_aliases(
    now: &BTreeMap<String, FileEntry>,
    links: &BTreeMap<String, String>,
) -> Vec<LinkAlias> {
    let mut out = Vec::new();
    for link in links.keys() {
        let Some(dest) = destination_in(link, links) else {
            continue;
        };
        let prefix = if dest.is_empty() {
            String::new()
        } else {
            format!("{dest}/")
        };
        let own = format!("{link}/");
        for (real, e) in now
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
        {
            if e.mode == LINK_MODE || real.starts_with(&own) {
                continue;
            }
            out.push(LinkAlias {
                alias: format!("{own}{}", &real[prefix.len()..]),
                real: real.clone(),
                link: link.clone(),
            });
            if out.len() >= MAX_LINK_ALIASES {
                break;
            }
        }
    }
    out.sort();
    out.truncate(MAX_LINK_ALIASES);
    out
}

/// Reads link targets for blob ids (`None`: no such blob).
pub type TargetReader<'a> = dyn Fn(&[String]) -> Result<Vec<Option<String>>, String> + 'a;

/// The links of `now` added or changed since `t0` that lead out of the tree
/// (`path -> target`, sorted). `target_of` reads a link's target from its blob id.
///
/// # Errors
/// A target that cannot be read, as text.
pub fn escaping_links_with(
    t0: &BTreeMap<String, FileEntry>,
    now: &BTreeMap<String, FileEntry>,
    target_of: &TargetReader<'_>,
) -> Result<Vec<String>, String> {
    let link_paths: Vec<&String> = now
        .iter()
        .filter(|(_, e)| e.mode == LINK_MODE)
        .map(|(p, _)| p)
        .collect();
    if link_paths.is_empty() {
        return Ok(Vec::new());
    }
    let oids: Vec<String> = link_paths.iter().map(|p| now[*p].oid.clone()).collect();
    let targets = target_of(&oids)?;
    let links: BTreeMap<String, String> = link_paths
        .iter()
        .zip(targets)
        .map(|(p, t)| ((*p).clone(), t.unwrap_or_else(|| "/".into())))
        .collect();
    let dirs: std::collections::BTreeSet<&str> = now
        .keys()
        .flat_map(|p| {
            p.char_indices()
                .filter(|(_, c)| *c == '/')
                .map(move |(i, _)| &p[..i])
        })
        .collect();
    // Dependency directories are linked into the clean room (and hashed), not
    // snapshotted: a link into one reads what the room links.
    let in_snapshot = |p: &str| {
        now.contains_key(p)
            || dirs.contains(p)
            || p.split('/')
                .any(|c| super::store::DEPENDENCY_DIRS.contains(&c))
    };
    let mut out: Vec<String> = links
        .keys()
        .filter(|p| t0.get(*p) != now.get(*p))
        .filter_map(|p| escapes_in(p, &links, &in_snapshot))
        .collect();
    out.sort();
    Ok(out)
}

/// [`escaping_links_with`] reading targets from the snapshot store at `store_dir`.
/// Without t0 there is nothing to compare with: empty.
///
/// # Errors
/// A store error, as text.
pub fn escaping_links(
    store_dir: &std::path::Path,
    t0: Option<&BTreeMap<String, FileEntry>>,
    now: &BTreeMap<String, FileEntry>,
) -> Result<Vec<String>, String> {
    let Some(t0) = t0 else {
        return Ok(Vec::new());
    };
    escaping_links_with(t0, now, &|oids| {
        super::git::cat_blobs(store_dir, oids)
            .map(|v| {
                v.into_iter()
                    .map(|b| b.map(|b| String::from_utf8_lossy(&b).into_owned()))
                    .collect()
            })
            .map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// node's and jest's default test names (table: path, a test file).
    #[test]
    fn node_and_jest_test_names() {
        let rows = [
            ("calc.test.js", true),
            ("src/warm.testspec.js", true),
            ("spec.ts", true),
            ("x.spectest.jsx", true),
            ("test-calc.mjs", true),
            ("test/helpers.js", true),
            ("calc.js", false),
            ("src/protest.js", false),
            ("src/latest.js", false),
            ("node_modules/a/calc.test.js", false),
            ("calc.test.py", false),
        ];
        for (path, test) in rows {
            assert_eq!(is_node_test_name(path), test, "{path}");
        }
    }

    fn rules() -> OracleRules {
        OracleRules::new(
            globset::GlobSet::empty(),
            globset::GlobSet::empty(),
            Some("python3 -m pytest -q"),
        )
    }

    fn entry(oid: &str) -> FileEntry {
        FileEntry {
            mode: "100644".into(),
            oid: oid.into(),
        }
    }

    fn link(oid: &str) -> FileEntry {
        FileEntry {
            mode: LINK_MODE.into(),
            oid: oid.into(),
        }
    }

    #[test]
    fn runner_test_files_table() {
        let table: &[(&str, bool)] = &[
            ("tests/test_000_helpers.py", true),
            ("tests/__init__.py", true),
            ("test_x.py", true),
            ("x_test.py", true),
            ("tests/zzz_cleanup.rs", true),
            ("tests/common/mod.rs", true),
            ("test/aaa-setup.test.js", true),
            ("test/setup.js", true),
            ("lib/foo-test.mjs", true),
            ("lib/foo_test.cjs", true),
            ("test-foo.js", true),
            ("test.js", true),
            ("src/thing.spec.ts", true),
            ("__tests__/a.js", true),
            ("pkg/x_test.go", true),
            ("tests/data/input.json", true),
            ("src/testutils.py", true),
            // Not tests: code, configuration, build scripts.
            ("calc.py", false),
            ("src/lib.rs", false),
            ("build.rs", false),
            ("src/latest.js", false),
            ("src/contest.js", false),
            ("node_modules/x/test.js", false),
            ("README.md", false),
        ];
        let r = rules();
        for (p, want) in table {
            assert_eq!(is_runner_test_file(p, &r).is_some(), *want, "{p}");
        }
    }

    #[test]
    fn only_test_files_absent_from_t0_are_added() {
        let t0 = BTreeMap::from([
            ("calc.py".to_string(), entry("a")),
            ("tests/test_calc.py".to_string(), entry("b")),
        ]);
        let now = BTreeMap::from([
            ("calc.py".to_string(), entry("a2")),
            ("tests/test_calc.py".to_string(), entry("b2")),
            ("tests/test_000_helpers.py".to_string(), entry("c")),
            ("helpers.py".to_string(), entry("d")),
        ]);
        assert_eq!(
            added_tests(&t0, &now, &rules()),
            vec!["tests/test_000_helpers.py"]
        );
    }

    /// What a check's runner must not collect: new test files apart, a package marker
    /// and every other new file among the rest, new directories once each (the
    /// topmost first), and nothing the baseline check created or t0 held.
    #[test]
    fn new_files_to_skip_lists_files_and_new_directories() {
        let t0 = BTreeMap::from([
            ("calc.py".to_string(), entry("a")),
            ("tests/test_calc.py".to_string(), entry("b")),
        ]);
        let now = BTreeMap::from([
            ("calc.py".to_string(), entry("a2")),
            ("tests/test_calc.py".to_string(), entry("b")),
            ("tests/test_0.py".to_string(), entry("c")),
            ("tests/__init__.py".to_string(), entry("d")),
            ("aa_util.py".to_string(), entry("e")),
            ("helpers/__init__.py".to_string(), entry("f")),
            ("helpers/deep/x.py".to_string(), entry("g")),
            ("gen/test_generated.py".to_string(), entry("h")),
        ]);
        let text = |p: &str| match p {
            "tests/__init__.py" => Some("# a package\n\"\"\"The tests.\"\"\"\n".to_string()),
            "helpers/__init__.py" => Some("import calc\ncalc.add = None\n".to_string()),
            _ => None,
        };
        let (tests, others) =
            new_files_to_skip(&t0, &now, &rules(), &["gen/test_generated.py"], &text);
        assert_eq!(tests, vec!["tests/test_0.py"]);
        assert_eq!(
            others,
            vec![
                "aa_util.py",
                "helpers",
                "helpers/__init__.py",
                "helpers/deep",
                "helpers/deep/x.py",
                "tests/__init__.py",
            ]
        );
        let (tests, others) = new_files_to_skip(&t0, &t0, &rules(), &[], &text);
        assert!(tests.is_empty() && others.is_empty());
        // a package marker that holds code, in a test directory, is a test file
        let now = BTreeMap::from([("tests/__init__.py".to_string(), entry("x"))]);
        let code = |_: &str| Some("import calc\nvars(calc).update(add=None)\n".to_string());
        assert_eq!(
            new_files_to_skip(&t0, &now, &rules(), &[], &code).0,
            vec!["tests/__init__.py"]
        );
    }

    #[test]
    fn bare_package_markers() {
        let rows = [
            ("", true),
            ("\n# comment\n\n", true),
            ("\"\"\"Docs.\n\nMore.\"\"\"\n", true),
            ("'one line'\n", true),
            ("import calc\n", false),
            ("\"\"\"a\"\"\"\nx = 1\n", false),
            ("\"\"\"a\"\"\" + \"\"\"b\"\"\"\n", false),
        ];
        for (t, want) in rows {
            assert_eq!(is_bare_package_marker(t), want, "{t:?}");
        }
    }

    #[test]
    fn link_destination_table() {
        let table: &[(&str, &str, Option<&str>)] = &[
            ("calc.py", "/tmp/outside_calc.py", None),
            ("calc.py", "impl/calc.py", Some("impl/calc.py")),
            ("a/b/c.py", "../d.py", Some("a/d.py")),
            ("a/c.py", "../../x.py", None),
            ("a/c.py", "./../x.py", Some("x.py")),
            ("c.py", "..", None),
            ("c.py", "", None),
        ];
        for (p, t, want) in table {
            assert_eq!(link_destination(p, t).as_deref(), *want, "{p} -> {t}");
        }
    }

    /// Files reached through a link to a directory of the tree, under the link's path.
    #[test]
    fn linked_dir_aliases_table() {
        let file = |oid: &str| FileEntry {
            mode: "100644".into(),
            oid: oid.into(),
        };
        let link = || FileEntry {
            mode: LINK_MODE.into(),
            oid: "l".into(),
        };
        let now = BTreeMap::from([
            (".cargo".to_string(), link()),
            ("docs/cargo/config.toml".to_string(), file("c")),
            ("docs/pkgmeta/entry_points.txt".to_string(), file("e")),
            ("docs/pkgmeta/inner".to_string(), link()),
            ("plug-1.0.dist-info".to_string(), link()),
            ("via".to_string(), link()),
            ("up".to_string(), link()),
            ("self/loop".to_string(), link()),
            ("self/x.py".to_string(), file("x")),
            ("tofile".to_string(), link()),
        ]);
        let links = BTreeMap::from([
            (".cargo".to_string(), "docs/cargo".to_string()),
            ("docs/pkgmeta/inner".to_string(), "../cargo".to_string()),
            (
                "plug-1.0.dist-info".to_string(),
                "./docs/pkgmeta/".to_string(),
            ),
            // a link to a link to a directory
            ("via".to_string(), ".cargo".to_string()),
            // leaves the tree: nothing
            ("up".to_string(), "../elsewhere".to_string()),
            // its own parent: the files beside it, not itself again
            ("self/loop".to_string(), ".".to_string()),
            // a file: nothing below it
            ("tofile".to_string(), "self/x.py".to_string()),
        ]);
        let got: Vec<(String, String)> = linked_dir_aliases(&now, &links)
            .into_iter()
            .map(|a| (a.alias, a.real))
            .collect();
        let want: Vec<(String, String)> = [
            (".cargo/config.toml", "docs/cargo/config.toml"),
            ("docs/pkgmeta/inner/config.toml", "docs/cargo/config.toml"),
            (
                "plug-1.0.dist-info/entry_points.txt",
                "docs/pkgmeta/entry_points.txt",
            ),
            ("self/loop/x.py", "self/x.py"),
            ("via/config.toml", "docs/cargo/config.toml"),
        ]
        .iter()
        .map(|(a, r)| (a.to_string(), r.to_string()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn escaping_links_table() {
        // (links of the tree, path asked, escapes?)
        let links = BTreeMap::from([
            ("abs".to_string(), "/tmp/x".to_string()),
            ("up".to_string(), "../x".to_string()),
            ("inside".to_string(), "src/x.py".to_string()),
            ("via_abs".to_string(), "abs".to_string()),
            ("dir".to_string(), "..".to_string()),
            ("through_dir".to_string(), "dir/elsewhere/x.py".to_string()),
            ("loop_a".to_string(), "loop_b".to_string()),
            ("loop_b".to_string(), "loop_a".to_string()),
            ("src/link".to_string(), "../inside".to_string()),
        ]);
        let table: &[(&str, bool)] = &[
            ("abs", true),
            ("up", true),
            ("inside", false),
            ("via_abs", true),
            ("through_dir", true),
            ("loop_a", true),
            ("src/link", false),
            ("not_a_link", false),
        ];
        for (p, want) in table {
            assert_eq!(escapes(p, &links).is_some(), *want, "{p}");
        }
    }

    #[test]
    fn only_links_added_or_changed_since_t0_are_judged() {
        let targets: BTreeMap<&str, &str> = BTreeMap::from([
            ("l_old", "/usr/share/dict/words"),
            ("l_new", "/tmp/outside_calc.py"),
            ("l_in", "calc_impl.py"),
        ]);
        let read = |oids: &[String]| -> Result<Vec<Option<String>>, String> {
            Ok(oids
                .iter()
                .map(|o| targets.get(o.as_str()).map(|t| (*t).to_string()))
                .collect())
        };
        let t0 = BTreeMap::from([("words".to_string(), link("l_old"))]);
        // A link to a path inside the tree that no snapshot holds (an excluded build
        // directory) leads out of it too; one into a dependency directory does not.
        let in_tree = BTreeMap::from([
            ("calc.py".to_string(), link("l_build")),
            ("tool".to_string(), link("l_dep")),
            ("ok.py".to_string(), link("l_in")),
            ("calc_impl.py".to_string(), entry("x")),
        ]);
        let targets2: BTreeMap<&str, &str> = BTreeMap::from([
            ("l_build", "build/calc.py"),
            ("l_dep", "node_modules/.bin/tool"),
            ("l_in", "calc_impl.py"),
        ]);
        let read2 = |oids: &[String]| -> Result<Vec<Option<String>>, String> {
            Ok(oids
                .iter()
                .map(|o| targets2.get(o.as_str()).map(|t| (*t).to_string()))
                .collect())
        };
        let got = escaping_links_with(&BTreeMap::new(), &in_tree, &read2).unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].starts_with("calc.py -> build/calc.py"), "{got:?}");
        let now = BTreeMap::from([
            ("words".to_string(), link("l_old")),
            ("calc.py".to_string(), link("l_new")),
            ("calc2.py".to_string(), link("l_in")),
            ("calc_impl.py".to_string(), entry("x")),
        ]);
        let got = escaping_links_with(&t0, &now, &read).unwrap();
        assert_eq!(got, vec!["calc.py -> /tmp/outside_calc.py"]);
        // A file replaced by a link, or a link retargeted, is a change.
        let t0b = BTreeMap::from([("calc.py".to_string(), entry("f"))]);
        assert_eq!(
            escaping_links_with(&t0b, &now, &read).unwrap(),
            vec![
                "calc.py -> /tmp/outside_calc.py",
                "words -> /usr/share/dict/words"
            ]
        );
    }
}
