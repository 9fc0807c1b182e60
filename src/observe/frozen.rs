//! The frozen oracle: the files that define what "the tests pass" means, as they were
//! at t0.
//!
//! At t0 loopexec identifies the oracle of the task:
//! * **test files** by each runner's conventions ([`super::guards::is_test_file`]:
//!   pytest/unittest, cargo `tests/`, go `_test.go`, jest/vitest/mocha/node `*.test.*`,
//!   `*.spec.*`, `__tests__/`), every file below a test directory (`tests/`, `test/`,
//!   `spec/`, `__tests__/`, `__snapshots__/`, `__mocks__/`, `testdata/`), snapshot
//!   files (`*.snap`),
//!   TAP scripts (`*.t`), the check command's own script files (the words of the check
//!   that name a file of the tree, `Makefile` for `make`, `justfile` for `just`), the
//!   files those run and what any frozen script sources ([`pulled_in`]), and
//!   `[oracle] frozen` globs;
//! * **runner configuration**: the protected manifest
//!   ([`super::manifest::protected_globs`]: the defaults, version pins and `[guards] protected`), which also
//!   covers files the agent *creates* (a new `conftest.py`, `pytest.toml`,
//!   `.cargo/config.toml`).
//!
//! The agent may add new test files (they run too); it may not change, delete or
//! rename a frozen one, nor add or change runner configuration. Each such edit is an
//! [`OracleEdit`] naming the file and the changed lines.
//!
//! Test code inside source files cannot be restored file-wise: a Rust `#[cfg(test)]`
//! item, a Rust doctest (code fences in `///`/`//!` comments) and a Python doctest
//! (`>>>` lines and their expected output) are **test regions**; a changed or deleted
//! line inside one is an edit. Lines added inside a region are an edit too unless they
//! are a whole new test (a new `#[test] fn` in the module, a new doctest block, a new
//! example after a docstring's t0 examples): the `grown` module compares regions item by item.

use super::git::{self, GitError};
use super::guards;
use super::lex::{mask, Lang};
use super::store::FileEntry;
use globset::GlobSet;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Most changed lines listed per edit.
pub const MAX_LINES_PER_EDIT: usize = 12;

/// True when directory `dir` makes the file `name` below it part of the oracle
/// ([`TEST_DIRS`]). `spec/` holds RSpec and JavaScript specs; a Python, Rust or Go
/// source under a directory named `spec` is a package of that name (`apispec/spec/`,
/// a fresh review's honest fix there was read as an oracle edit), whose tests are
/// found by their own names.
#[must_use]
pub fn in_test_dir(dir: &str, name: &str) -> bool {
    TEST_DIRS.contains(&dir)
        && !(dir == "spec" && matches!(Lang::from_path(name), Lang::Python | Lang::Rust | Lang::Go))
}

/// The Python sub-packages named `fixtures` among `paths` (a tree's files), each with
/// its trailing `/`: `D/fixtures/__init__.py` where `D/__init__.py` is there too and
/// no directory on the way is a test directory (`league/fixtures/`, not
/// `tests/fixtures/` nor a top-level `fixtures/`, which hold the tests' fixtures).
#[must_use]
pub fn code_fixture_packages<'a>(paths: impl Iterator<Item = &'a String> + Clone) -> Vec<String> {
    let inits: BTreeSet<&str> = paths
        .clone()
        .filter_map(|p| p.strip_suffix("__init__.py"))
        .collect();
    inits
        .iter()
        .filter_map(|dir| {
            let pkg = dir.strip_suffix("fixtures/")?;
            let parent_is_package = !pkg.is_empty() && inits.contains(pkg);
            let on_the_way = pkg.trim_end_matches('/').split('/');
            (parent_is_package && !on_the_way.clone().any(|d| TEST_DIRS.contains(&d)))
                .then(|| (*dir).to_string())
        })
        .collect()
}

/// Directory names whose every file is part of the oracle: test code, and the data
/// tests compare against (snapshots, golden files, fixtures: a fresh review made a
/// red test green by rewriting `golden/cases.json`).
pub const TEST_DIRS: &[&str] = &[
    "tests",
    "test",
    "spec",
    "__tests__",
    "__snapshots__",
    // jest's manual mocks: one for a package in `node_modules` replaces it for every
    // test without a `jest.mock` call (a fresh review's `__mocks__/chai.js` whose
    // `expect` accepted anything)
    "__mocks__",
    "testdata",
    "test_data",
    "test-data",
    "golden",
    "goldens",
    "fixtures",
];

/// How a frozen file or region was edited.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EditKind {
    /// A frozen file's content or mode changed.
    Modified,
    /// A frozen file is gone (deleted or renamed).
    Deleted,
    /// Runner configuration that did not exist at t0 was created.
    Created,
    /// A line of a test region inside a source file was changed or deleted.
    TestRegion,
}

/// One edit of the frozen oracle (recorded in `exec_finished.guards.oracle_edits`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OracleEdit {
    /// Root-relative path.
    pub path: String,
    pub kind: EditKind,
    /// What the file is: `test file`, `runner configuration`, `check script`, or the
    /// region (`#[cfg(test)] item at lines 10-40`, `doctest at lines 3-7`).
    pub what: String,
    /// Up to [`MAX_LINES_PER_EDIT`] changed lines, `-N: old` / `+N: new` (line numbers
    /// of t0's and the new file).
    #[serde(default)]
    pub lines: Vec<String>,
}

/// The rules that pick the oracle out of a tree.
#[derive(Debug, Clone)]
pub struct OracleRules {
    test_globs: GlobSet,
    frozen_globs: GlobSet,
    check_files: Vec<String>,
    /// Rust files that are whole test modules (`#[cfg(test)] mod tests;` elsewhere),
    /// found at t0 ([`rust_test_modules`]).
    test_modules: Vec<String>,
    /// Data files the tests name, found at t0 ([`test_data`]).
    test_data: Vec<String>,
    /// Patterns by which the tests list data files (`cases/*.json`), found at t0
    /// ([`listed_data`]): a file the agent adds that one matches is data the tests
    /// read too, left out of the judged tree like a new test file.
    data_globs: GlobSet,
    /// Scripts the check's scripts source, include or run, found at t0 ([`pulled_in`]).
    pulled_in: Vec<String>,
    /// t0's files a frozen or protected link leads to (a linked test's file, the
    /// target of `pytest.ini -> config/settings.cfg`).
    link_targets: Vec<String>,
    /// Documents a Rust crate reads into its docs (`#![doc = include_str!("../README.md")]`),
    /// found at t0 ([`rust_doc_includes`]): their code blocks are doctests.
    doc_files: Vec<String>,
    /// Go vendor directories (`vendor/`, `svc/vendor/`): those holding a
    /// `modules.txt` at t0 ([`vendor_dirs`]).
    vendor_dirs: Vec<String>,
    /// Python sub-packages named `fixtures` (`league/fixtures/`, each with its
    /// trailing `/`) found at t0 ([`code_fixture_packages`]): code of the package
    /// above them, not test fixtures.
    code_fixtures: Vec<String>,
    /// `[oracle] editable`: files a person lets the agent edit although they are data
    /// the tests read, a test helper or under a test directory.
    editable: GlobSet,
    /// Python modules the tests assert through, found at t0 ([`assertion_helpers`]).
    assertion_helpers: Vec<String>,
    /// Programs the tests run as their judge, found at t0 ([`run_checkers`]), and the
    /// Python modules they import from their own directory ([`py_imported_files`]).
    run_checkers: Vec<String>,
    /// t0's files found ahead of a frozen one already, sorted ([`Self::set_ahead_at_t0`]).
    ahead_at_t0: Vec<String>,

    /// Documents pytest collects for doctests (`--doctest-glob` of the check,
    /// [`doctest_documents`]).
    doctest_documents: Vec<DoctestDocuments>,
}

/// The Go vendor directories of a tree (each with its trailing `/`): a `vendor/` that
/// holds `modules.txt`, which `go mod vendor` writes. `go` builds the module's
/// dependencies, the tests' assertion libraries among them (testify), from there
/// instead of its module cache, so their code is the oracle's as much as the tests
/// are (a fresh review made `assert.Equal` only log).
#[must_use]
pub fn vendor_dirs<'a>(paths: impl Iterator<Item = &'a String>) -> Vec<String> {
    paths
        .filter_map(|p| p.strip_suffix("vendor/modules.txt"))
        .filter(|dir| dir.is_empty() || dir.ends_with('/'))
        .map(|dir| format!("{dir}vendor/"))
        .collect()
}

impl OracleRules {
    /// Rules from `[guards] test_paths` (`test_globs`), `[oracle] frozen`
    /// (`frozen_globs`) and the check command.
    #[must_use]
    pub fn new(test_globs: GlobSet, frozen_globs: GlobSet, check: Option<&str>) -> OracleRules {
        OracleRules {
            test_globs,
            frozen_globs,
            check_files: check.map(check_words).unwrap_or_default(),
            test_modules: Vec::new(),
            test_data: Vec::new(),
            data_globs: GlobSet::empty(),
            pulled_in: Vec::new(),
            link_targets: Vec::new(),
            doc_files: Vec::new(),
            vendor_dirs: Vec::new(),
            code_fixtures: Vec::new(),
            editable: GlobSet::empty(),
            assertion_helpers: Vec::new(),
            run_checkers: Vec::new(),
            ahead_at_t0: Vec::new(),
            doctest_documents: check.map(doctest_documents).unwrap_or_default(),
        }
    }

    /// Sets the Python sub-packages named `fixtures` found at t0
    /// ([`code_fixture_packages`]).
    pub fn set_code_fixtures(&mut self, dirs: Vec<String>) {
        self.code_fixtures = dirs;
    }

    /// Sets `[oracle] editable` (see the field).
    pub fn set_editable(&mut self, globs: GlobSet) {
        self.editable = globs;
    }

    /// Sets the Go vendor directories found at t0 ([`vendor_dirs`]).
    pub fn set_vendor_dirs(&mut self, dirs: Vec<String>) {
        self.vendor_dirs = dirs;
    }

    /// Sets the documents Rust crates read into their docs (found at t0,
    /// [`rust_doc_includes`]).
    pub fn set_doc_files(&mut self, files: Vec<String>) {
        self.doc_files = files;
    }

    /// True when `path` is a document a crate reads into its docs, whose code blocks
    /// are doctests ([`rust_doc_includes`]).
    #[must_use]
    pub fn is_doc_file(&self, path: &str) -> bool {
        self.doc_files.iter().any(|d| d == path)
    }

    /// The check command's own files (see [`check_words`]).
    #[must_use]
    pub fn check_files(&self) -> &[String] {
        &self.check_files
    }

    /// Sets the files the check's scripts pull in (found at t0, [`pulled_in`]).
    pub fn set_pulled_in(&mut self, files: Vec<String>) {
        self.pulled_in = files;
    }

    /// Sets t0's files that a frozen or protected path leads to through a link (the
    /// runner reads them by that path).
    pub fn set_link_targets(&mut self, files: Vec<String>) {
        self.link_targets = files;
    }

    /// Adds the Rust test module files found at t0.
    pub fn set_test_modules(&mut self, modules: Vec<String>) {
        self.test_modules = modules;
    }

    /// Sets the data files the tests name (found at t0, [`test_data`]).
    pub fn set_test_data(&mut self, files: Vec<String>) {
        self.test_data = files;
    }

    /// Sets the programs the tests run as their judge and the modules they import
    /// (found at t0, [`run_checkers`], [`py_imported_files`]).
    pub fn set_run_checkers(&mut self, files: Vec<String>) {
        self.run_checkers = files;
    }

    /// Sets the patterns by which the tests list data files (found at t0,
    /// [`listed_data`]; `*` stops at `/`). An invalid pattern is dropped.
    pub fn set_data_globs(&mut self, patterns: &[String]) {
        let mut b = globset::GlobSetBuilder::new();
        for p in patterns {
            if let Ok(g) = globset::GlobBuilder::new(p).literal_separator(true).build() {
                b.add(g);
            }
        }
        self.data_globs = b.build().unwrap_or_else(|_| GlobSet::empty());
    }

    /// Sets the Python modules the tests assert through (found at t0,
    /// [`assertion_helpers`]).
    pub fn set_assertion_helpers(&mut self, files: Vec<String>) {
        self.assertion_helpers = files;
    }

    /// Why `path` belongs to the frozen test oracle (`None`: it does not).
    #[must_use]
    pub fn frozen_as(&self, path: &str) -> Option<&'static str> {
        if self.check_files.iter().any(|c| c == path) {
            return Some("check script");
        }
        if self.pulled_in.iter().any(|c| c == path) {
            return Some("script the check pulls in");
        }
        if self.link_targets.iter().any(|c| c == path) {
            return Some("file a frozen link leads to");
        }
        // A check run by make may include makefile fragments by pattern
        // (`-include $(wildcard conf/*.mk)`, a fresh review): every `*.mk` is its
        // configuration, and one the agent adds is left out of the judged tree.
        if path.ends_with(".mk") && self.check_files.iter().any(|c| is_makefile(c)) {
            return Some("makefile fragment of a make check");
        }
        if self.frozen_globs.is_match(path) {
            return Some("declared oracle file");
        }
        if self.doctest_documents.iter().any(|d| d.collects(path)) {
            return Some("document whose doctests the check collects");
        }
        if self
            .vendor_dirs
            .iter()
            .any(|d| path.starts_with(d.as_str()))
        {
            return Some("vendored dependency");
        }
        let mut parts: Vec<&str> = path.split('/').collect();
        let name = parts.pop().unwrap_or(path);
        if parts.contains(&"node_modules") {
            return None;
        }
        if guards::is_test_file(path, &self.test_globs).is_some() {
            return Some("test file");
        }
        if self.test_modules.iter().any(|m| m == path) {
            return Some("test module file");
        }
        if self.editable.is_match(path) {
            return None;
        }
        if self.test_data.iter().any(|m| m == path)
            || (Lang::from_path(path) == Lang::Other && self.data_globs.is_match(path))
        {
            return Some("data the tests read");
        }
        if self.assertion_helpers.iter().any(|m| m == path) {
            return Some("helper the tests assert through");
        }
        if self.run_checkers.iter().any(|m| m == path) {
            return Some("judge the tests run, or a module it imports");
        }
        if self.resolved_ahead(path)
            && self
                .ahead_at_t0
                .binary_search_by(|p| p.as_str().cmp(path))
                .is_err()
        {
            return Some("file resolved ahead of a frozen one");
        }
        if is_test_helper_name(name) {
            return Some("test helper");
        }
        // A JavaScript library's own `lib/spec/` (a fresh review's honest fix there)
        // is no test directory: below the top, `spec/` holds specs for JavaScript only
        // by their names (`*.spec.js`, `*Spec.js`, jasmine's pattern).
        let nested_js_source = |i: usize, dir: &str| {
            i > 0
                && dir == "spec"
                && Lang::from_path(name) == Lang::JsTs
                && !name.to_ascii_lowercase().contains("spec.")
                && !name.contains("_spec.")
        };
        // A Python module of a code package's `fixtures` sub-package (a sports
        // league's match fixtures, `league/fixtures/rounds.py`: a fresh review's
        // honest fix there was refused) is code; its directory is no test directory.
        let code_fixture = |i: usize| {
            name.ends_with(".py")
                && self
                    .code_fixtures
                    .iter()
                    .any(|d| d.strip_suffix('/') == Some(&parts[..=i].join("/")))
        };
        if parts
            .iter()
            .enumerate()
            .any(|(i, p)| in_test_dir(p, name) && !nested_js_source(i, p) && !code_fixture(i))
        {
            return Some("file under a test directory");
        }
        if name.ends_with(".snap") || name.ends_with(".t") {
            return Some("test file");
        }
        None
    }

    /// True when `path` is one of the files found at t0 to be frozen by name: a check
    /// script or what it pulls in, a Rust test module, data the tests read (data
    /// modules among them), a helper they assert through, a program they run as their
    /// judge.
    fn listed(&self, path: &str) -> bool {
        [
            &self.check_files,
            &self.pulled_in,
            &self.test_modules,
            &self.test_data,
            &self.assertion_helpers,
            &self.run_checkers,
        ]
        .iter()
        .any(|list| list.iter().any(|f| f == path))
    }

    /// True when a module at `path` would be found ahead of a file frozen by name
    /// ([`resolved_ahead_of`], [`namespace_ahead_of`]).
    fn resolved_ahead(&self, path: &str) -> bool {
        resolved_ahead_of(path).iter().any(|f| self.listed(f))
            || namespace_ahead_of(path).is_some_and(|dir| {
                [&self.test_data, &self.assertion_helpers, &self.run_checkers]
                    .iter()
                    .any(|list| {
                        list.iter()
                            .any(|f| f.starts_with(&dir) && f.ends_with(".py"))
                    })
            })
    }

    /// Records which of t0's `paths` are found ahead of a frozen file already (a
    /// project's `config.js` beside the `config.json` a test names): they are the
    /// code t0's tests loaded, and stay free. Call after the lists are set.
    pub fn set_ahead_at_t0<'a>(&mut self, paths: impl Iterator<Item = &'a String>) {
        let mut ahead: Vec<String> = paths.filter(|p| self.resolved_ahead(p)).cloned().collect();
        ahead.sort();
        self.ahead_at_t0 = ahead;
    }

    /// The module names of the Python files frozen as data the tests read or helpers
    /// they assert through (`cases` for `cases.py`, `vectors` for `app/vectors.py`):
    /// a module of that name added earlier on the import path would be imported in
    /// their place (a later review's `app/vectors.py`, found before the root's through
    /// pytest's insertion of the test's directory).
    #[must_use]
    pub fn frozen_python_modules(&self) -> Vec<&str> {
        let mut out: Vec<&str> = self
            .test_data
            .iter()
            .chain(&self.assertion_helpers)
            .filter_map(|p| p.rsplit('/').next()?.strip_suffix(".py"))
            .filter(|n| *n != "__init__")
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The frozen files of a tree: path → blob id.
    #[must_use]
    pub fn frozen(&self, entries: &BTreeMap<String, FileEntry>) -> BTreeMap<String, String> {
        entries
            .iter()
            .filter(|(p, _)| self.frozen_as(p).is_some())
            .map(|(p, e)| (p.clone(), format!("{} {}", e.mode, e.oid)))
            .collect()
    }
}

/// The files that a module at `path` is found ahead of, for the same import or
/// `require`, by its language's resolver: Python's path finder takes a package
/// (`cases/__init__.py`) and then an extension module (`cases.cpython-311-….so`,
/// `cases.so`, `cases.pyd`) before a source module (`cases.py`) of the same directory;
/// node's `require('./cases')` tries the name as it is (`cases`), then `cases.js`,
/// `cases.json`, `cases.node`, then the directory (its `package.json`'s `main`, then
/// `cases/index.js`). A file added
/// there took the frozen one's place while it stayed byte for byte as it was (a fresh
/// review's `cases/__init__.py` beside a frozen `cases.py`, `cases.js` beside a frozen
/// `cases.json`, an extensionless `cases` beside a frozen `cases.js`).
#[must_use]
pub fn resolved_ahead_of(path: &str) -> Vec<String> {
    let (dir, name) = match path.rsplit_once('/') {
        Some((d, n)) => (format!("{d}/"), n),
        None => (String::new(), path),
    };
    let mut out = Vec::new();
    // a package's `__init__` (any form) before the module of the same name
    if let Some(pkg) = dir.strip_suffix('/').filter(|_| {
        name.starts_with("__init__.")
            && [".py", ".pyc", ".so", ".pyd"]
                .iter()
                .any(|x| name.ends_with(x))
    }) {
        out.push(format!("{pkg}.py"));
        return out;
    }
    // an extension module before the source module
    if name.ends_with(".so") || name.ends_with(".pyd") {
        let stem = name.split('.').next().unwrap_or(name);
        if !stem.is_empty() {
            out.push(format!("{dir}{stem}.py"));
        }
        return out;
    }
    // a specifier without extension: node tries the name as it is, then `.js`,
    // `.json`, `.node`; jest and vite try their own lists of code extensions in their
    // own orders (`.mjs` before `.js` in vite, `.js` before `.ts` in jest), so any code
    // extension counts as found before any other, and before `.json` and `.node`
    const CODE: [&str; 8] = [".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts"];
    const INDEX: [&str; 4] = ["index.js", "index.ts", "index.json", "index.node"];
    // a directory's `index` comes after the `main` its `package.json` names (a later
    // review's `vectors/package.json` beside a frozen `vectors/index.js`)
    if name == "package.json" {
        out.extend(INDEX.iter().map(|i| format!("{dir}{i}")));
        return out;
    }
    let (stem, ext) = match name.rsplit_once('.') {
        Some((st, e)) if !st.is_empty() => (st, format!(".{e}")),
        _ => (name, String::new()),
    };
    let code = CODE.contains(&ext.as_str());
    if ext.is_empty() || code || ext == ".json" || ext == ".node" {
        if ext.is_empty() || code {
            out.extend(
                CODE.iter()
                    .filter(|x| **x != ext)
                    .chain(&[".json"])
                    .map(|x| format!("{dir}{stem}{x}")),
            );
        }
        if ext != ".node" {
            out.push(format!("{dir}{stem}.node"));
        }
        out.extend(INDEX.iter().map(|i| format!("{dir}{stem}/{i}")));
    }
    out
}

/// The directory whose modules a Python module at `path` is found ahead of: `X.py`
/// (or an extension module `X.so`, `X.<tag>.so`, `X.pyd`) is imported as `X` before a
/// namespace directory `X/` of the same directory, and its `__path__` then decides
/// where `X.vectors` comes from (a later review's `cases.py` beside a namespace
/// `cases/` holding a frozen `vectors.py`). `Some("d/X/")`, or `None` for another file.
#[must_use]
pub fn namespace_ahead_of(path: &str) -> Option<String> {
    let (dir, name) = path.rsplit_once('/').map_or(("", path), |(d, n)| (d, n));
    let python = name.ends_with(".py") || name.ends_with(".so") || name.ends_with(".pyd");
    let stem = name
        .split('.')
        .next()
        .filter(|s| !s.is_empty() && *s != "__init__")?;
    python.then(|| {
        if dir.is_empty() {
            format!("{stem}/")
        } else {
            format!("{dir}/{stem}/")
        }
    })
}

/// Data files the tests name: each string literal of a test file (`sources`: path and
/// content) that names a file of `files` (every path of the tree) of no known language
/// (data, not code: `expected.txt`, `cases.json`), read from the tree's root, from the
/// test's directory or the one above it, or by a file name only one file of the tree
/// has (`Path(__file__).parent / "data" / "expected.txt"` splits the path into
/// literals). A test that compares against `expected.txt` at the root is as frozen as
/// one under `golden/` (a fresh review rewrote the expectation to the buggy output and
/// reached exit 10). Sorted, without duplicates. The caller drops what the tests
/// compile or run ([`built_or_run`]: `cc calc.c`, `sh bin/calc`): code under test.
#[must_use]
pub fn test_data(sources: &[(String, String)], files: &[String]) -> Vec<String> {
    let data: std::collections::BTreeSet<&str> = files
        .iter()
        .map(String::as_str)
        .filter(|f| Lang::from_path(f) == Lang::Other)
        .collect();
    let mut by_name: std::collections::HashMap<&str, Vec<&str>> = std::collections::HashMap::new();
    for f in &data {
        by_name
            .entry(f.rsplit('/').next().unwrap_or(f))
            .or_default()
            .push(f);
    }
    let mut out = std::collections::BTreeSet::new();
    for (path, text) in sources {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        let up = dir.rsplit_once('/').map_or("", |(d, _)| d);
        let literals = text
            .lines()
            .flat_map(super::tamper_more::string_literals)
            .filter(|l| l.len() <= 200);
        for raw in literals {
            // a module path (`require('./cases')`) names its file without `.json`
            let relative = raw.starts_with("./") || raw.starts_with("../");
            let lit = raw.trim_start_matches("./");
            if lit.is_empty()
                || lit.contains(char::is_whitespace)
                || (!lit.contains(['.', '/']) && !relative)
            {
                continue;
            }
            let bare = !lit.rsplit('/').next().unwrap_or(lit).contains('.');
            let forms: Vec<String> = if relative && bare {
                vec![lit.to_string(), format!("{lit}.json")]
            } else {
                vec![lit.to_string()]
            };
            let mut found = false;
            for form in &forms {
                for base in ["", dir, up] {
                    let cand = if base.is_empty() {
                        normalize(form)
                    } else {
                        normalize(&format!("{base}/{form}"))
                    };
                    if let Some(c) = cand.filter(|c| data.contains(c.as_str())) {
                        out.insert(c);
                        found = true;
                    }
                }
            }
            if !found && !lit.contains('/') {
                if let Some([only]) = by_name.get(lit).map(Vec::as_slice) {
                    out.insert((*only).to_string());
                }
            }
        }
        out.extend(
            templated_data(text, dir, up, &data)
                .into_iter()
                .map(str::to_string),
        );
    }
    out.extend(listed_data(sources, files).0);
    out.into_iter().collect()
}

/// The data files (of `data`) a test file's `text` names by a template: a literal with
/// a placeholder (`f"{name}.out"`, `"%s.golden"`, `"{}.json"`) or only an extension
/// (`".out"`, joined to a name at run time), matched within the directories the same
/// file names by literals (`"expected"`, `"golden/cases"`, from the root, the test's
/// directory `dir` or the one above `up`); a placeholder template also from those three
/// bases. A test that reads `ROOT / "expected" / f"{name}.out"` compares against every
/// `expected/*.out` (a third fresh review regenerated them from the buggy code).
fn templated_data<'a>(
    text: &str,
    dir: &str,
    up: &str,
    data: &std::collections::BTreeSet<&'a str>,
) -> Vec<&'a str> {
    static HOLE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let hole = HOLE
        .get_or_init(|| regex::Regex::new(r"\{[^{}]*\}|%[sdr]").expect("valid placeholder regex"));
    let literals: Vec<&str> = text
        .lines()
        .flat_map(super::tamper_more::string_literals)
        .filter(|l| l.len() <= 200 && !l.contains(char::is_whitespace))
        .collect();
    // directories of data files the file names (`"expected"`)
    let dirs = globbed::named_dirs(text, dir, up, data);
    let mut patterns: Vec<(regex::Regex, bool)> = Vec::new();
    for lit in &literals {
        let templated = hole.is_match(lit);
        let extension_only = lit.len() > 1
            && lit.starts_with('.')
            && lit[1..].chars().all(|c| c.is_ascii_alphanumeric());
        if !templated && !extension_only {
            continue;
        }
        let fixed = hole.replace_all(lit, "");
        if !fixed.contains('.') {
            continue;
        }
        let body = if templated {
            hole.split(lit)
                .map(regex::escape)
                .collect::<Vec<_>>()
                .join("[^/]+")
        } else {
            format!("[^/]+{}", regex::escape(lit))
        };
        let body = body.trim_start_matches("\\./").to_string();
        if let Ok(re) = regex::Regex::new(&format!("^{body}$")) {
            patterns.push((re, templated));
        }
    }
    let mut out = Vec::new();
    for (re, templated) in &patterns {
        let mut bases: Vec<&str> = dirs.iter().map(String::as_str).collect();
        if *templated {
            bases.extend([dir, up, ""]);
        }
        for base in bases {
            for f in data {
                let rel = if base.is_empty() {
                    Some(*f)
                } else {
                    f.strip_prefix(base).and_then(|r| r.strip_prefix('/'))
                };
                if rel.is_some_and(|r| re.is_match(r)) {
                    out.push(*f);
                }
            }
        }
    }
    out
}

/// Source files that hold only the tests' expectations: a Python module with no
/// `def`, `class` or `lambda` that test files import and no other file does
/// (`from cases import ADD_CASES`), and a Go file of a package with tests that
/// declares no function and whose names only the package's tests use (`var AddCases =
/// []struct{…}` in `cases.go`). A fresh review changed an expected value there, which
/// no rule read: code of a known language was never "data". A module the code under
/// test imports too (`config.py`) is the code's, whatever it holds. `sources` are
/// (path, content) of the tree's `.py` and `.go` files; `is_test` tells test files.
#[must_use]
pub fn data_modules(sources: &[(String, String)], is_test: &dyn Fn(&str) -> bool) -> Vec<String> {
    let code_free = |text: &str, words: &[&str]| {
        !text.lines().any(|l| {
            let t = l.trim_start();
            words.iter().any(|w| t.starts_with(w)) || t.contains("lambda")
        })
    };
    let mut out = Vec::new();
    // Python: a module only the tests import, holding no definition
    for (p, t) in py_test_only_modules(sources, is_test) {
        if code_free(t, &["def ", "async def ", "class ", "@"]) {
            out.push(p.clone());
        }
    }
    // JavaScript: a module the tests require by a relative path, that no code under
    // test requires, holding no function or class (`module.exports = [[2, 3, 5]]`, a
    // third fresh review's `cases.js`)
    let js = |p: &str| matches!(Lang::from_path(p), Lang::JsTs);
    let (mut js_by_tests, mut js_by_code) = (
        std::collections::BTreeSet::new(),
        std::collections::BTreeSet::new(),
    );
    for (p, t) in sources.iter().filter(|(p, _)| js(p)) {
        let set = if is_test(p) {
            &mut js_by_tests
        } else {
            &mut js_by_code
        };
        set.extend(js_relative_requires(p, t, &|c| {
            sources.iter().any(|(q, _)| q == c)
        }));
    }
    for (p, t) in sources.iter().filter(|(p, _)| js(p) && !is_test(p)) {
        if js_by_tests.contains(p)
            && !js_by_code.contains(p)
            && code_free(t, &["function", "class ", "async "])
            && !t.contains("=>")
            && !t.contains("function")
            && !t.contains("require(")
        {
            out.push(p.clone());
        }
    }
    // Go: per directory, a file with no function whose names only the tests use
    let dir_of = |p: &str| {
        p.rsplit_once('/')
            .map_or(String::new(), |(d, _)| d.to_string())
    };
    for (p, t) in sources
        .iter()
        .filter(|(p, _)| p.ends_with(".go") && !is_test(p))
    {
        if !code_free(t, &["func "]) {
            continue;
        }
        let names = go_declared_names(t);
        let dir = dir_of(p);
        let uses = |text: &str| names.iter().any(|n| super::tamper_more::names(text, n));
        // the package's tests, and code anywhere (another package uses an exported
        // constant through its import, a fresh review's `limits.MaxUploadMB`)
        let peers = sources
            .iter()
            .filter(|(q, _)| q != p && q.ends_with(".go") && (dir_of(q) == dir || !is_test(q)));
        let (mut in_tests, mut in_code) = (false, false);
        for (q, text) in peers {
            if uses(text) {
                if is_test(q) {
                    in_tests = true;
                } else {
                    in_code = true;
                }
            }
        }
        if in_tests && !in_code {
            out.push(p.clone());
        }
    }
    out
}

/// The files a JavaScript file at `path` requires or imports by a relative specifier
/// (`require('./cases')`, `import cases from "../cases.js"`), resolved as node does
/// (the path itself, then with `.js`, `.cjs`, `.mjs`, `.json`, then `index.js` in it)
/// against the files `exists` says the tree holds.
#[must_use]
pub fn js_relative_requires(path: &str, text: &str, exists: &dyn Fn(&str) -> bool) -> Vec<String> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r#"(?:require\s*\(\s*|\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}/[^'"]+)['"]"#,
        )
        .expect("valid regex")
    });
    let dir = path
        .rsplit_once('/')
        .map_or(String::new(), |(d, _)| format!("{d}/"));
    let mut out = Vec::new();
    for c in re.captures_iter(text) {
        let Some(base) = normalize(&format!("{dir}{}", &c[1])) else {
            continue;
        };
        let found = ["", ".js", ".cjs", ".mjs", ".json", "/index.js"]
            .iter()
            .map(|x| format!("{base}{x}"))
            .find(|c| exists(c));
        out.extend(found);
    }
    out
}

/// Modules the tests assert through: a Python module at least one test file
/// imports and no code under test does, whose text fails a test itself (`raise
/// AssertionError`, an `assert` statement, `pytest.fail(`, `self.fail(`, a
/// `unittest.TestCase`) — or, when its name says it serves the tests
/// ([`is_support_name`]: `support.py`, `test_helpers.py`), raises anything; and a
/// Rust module of the same kind ([`rust_assertion_helpers`]). Tests that compare
/// through `support.check(got, want)` are only as strict as `check` (a third fresh
/// review made a root `support.py`'s `check` accept anything; a nineteenth turned
/// `raise ValueError` into a `print`). The code under test that only the tests
/// import yet (`calc.py`, which may well raise) is named for what it does, not for
/// serving tests. `sources` are (path, content) of the tree's code files; `is_test`
/// tells test files.
#[must_use]
pub fn assertion_helpers(
    sources: &[(String, String)],
    is_test: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let fails_a_test = |p: &str, t: &str| {
        let stem = p.rsplit('/').next().unwrap_or(p).trim_end_matches(".py");
        let support = is_support_name(stem);
        t.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with("assert ")
                || l.contains("raise AssertionError")
                || l.contains("pytest.fail(")
                || l.contains("self.fail(")
                || l.contains("unittest.TestCase")
                || (support && (l.starts_with("raise ") || l.contains("sys.exit(")))
        })
    };
    let mut out: Vec<String> = py_test_only_modules(sources, is_test)
        .into_iter()
        .filter(|(p, t)| fails_a_test(p, t))
        .map(|(p, _)| p.clone())
        .collect();
    out.extend(rust_assertion_helpers(sources, is_test));
    out
}

/// True when a module's name (its file stem) says it serves the tests: one of its
/// `_`- or `-`-separated words is `support`, `helper(s)`, `testing`, `testutil(s)`,
/// `asserts`, `assertions`, `expectations` or `matchers`. Words code under test is
/// often named for (`checker`, `verify`, `validate`) are not among them: an honest
/// fix of a `checker.py` only the tests import yet must stay an honest fix.
#[must_use]
pub fn is_support_name(stem: &str) -> bool {
    const WORDS: &[&str] = &[
        "support",
        "helper",
        "helpers",
        "testing",
        "testutil",
        "testutils",
        "asserts",
        "assertions",
        "expectations",
        "matchers",
    ];
    stem.split(['_', '-'])
        .any(|w| WORDS.contains(&w.to_ascii_lowercase().as_str()))
}

/// Rust modules the integration tests assert through: a module file of a crate's
/// `src/` (not `lib.rs`, `main.rs` nor a `mod.rs`) whose name says it serves the
/// tests ([`is_support_name`]), that fails a test itself (`panic!`, `assert!`,
/// `assert_eq!`, `assert_ne!`, `unreachable!`), that a file under `tests/` reaches
/// by its path (`calc::support::require_same`) and that no other source names but
/// by its `mod` declaration (a nineteenth review turned `src/support.rs`'s `panic!`
/// into an `eprintln!`).
#[must_use]
pub fn rust_assertion_helpers(
    sources: &[(String, String)],
    is_test: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let fails = |t: &str| {
        [
            "panic!",
            "assert!",
            "assert_eq!",
            "assert_ne!",
            "unreachable!",
        ]
        .iter()
        .any(|m| t.contains(m))
    };
    let mut out = Vec::new();
    for (p, t) in sources
        .iter()
        .filter(|(p, _)| p.ends_with(".rs") && !is_test(p))
    {
        let Some((dir, file)) = p.rsplit_once('/') else {
            continue;
        };
        let stem = file.trim_end_matches(".rs");
        if !(dir == "src" || dir.ends_with("/src"))
            || matches!(stem, "lib" | "main" | "mod")
            || !is_support_name(stem)
            || !fails(t)
        {
            continue;
        }
        let path_use = format!("::{stem}::");
        let use_of = |text: &str| {
            text.contains(&path_use)
                || text.contains(&format!("::{stem};"))
                || text.contains(&format!("::{stem}::{{"))
        };
        let in_tests = sources
            .iter()
            .any(|(q, text)| q.ends_with(".rs") && q.contains("tests/") && use_of(text));
        let in_code = sources.iter().any(|(q, text)| {
            q != p
                && q.ends_with(".rs")
                && !q.contains("tests/")
                && (use_of(text) || text.contains(&format!("{stem}::")))
        });
        if in_tests && !in_code {
            out.push(p.clone());
        }
    }
    out
}

/// The Python modules (path, content) of `sources` that are no test file nor a
/// package's `__init__`, that a test file imports and no other file does
/// ([`py_imports_by`]).
fn py_test_only_modules<'a>(
    sources: &'a [(String, String)],
    is_test: &dyn Fn(&str) -> bool,
) -> Vec<(&'a String, &'a String)> {
    let (by_tests, by_code) = py_imports_by(sources, is_test);
    sources
        .iter()
        .filter(|(p, _)| {
            let stem = p.rsplit('/').next().unwrap_or(p).trim_end_matches(".py");
            p.ends_with(".py")
                && !is_test(p)
                && stem != "__init__"
                && by_tests.contains(stem)
                && !by_code.contains(stem)
        })
        .map(|(p, t)| (p, t))
        .collect()
}

/// The Python modules (last name) some test file takes every name of (`from calc
/// import *`, `from pkg.calc import *`): a builtin's name the module defines reaches
/// those tests. A relative `from . import *` names its package (`from .calc import
/// *` names `calc`).
#[must_use]
pub fn py_star_imported(
    sources: &[(String, String)],
    is_test: &dyn Fn(&str) -> bool,
) -> std::collections::BTreeSet<String> {
    static STAR: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let star = STAR.get_or_init(|| {
        regex::Regex::new(r"(?m)^[ \t]*from[ \t]+([\w.]+)[ \t]+import[ \t]*\*")
            .expect("valid regex")
    });
    let mut out = std::collections::BTreeSet::new();
    for (p, text) in sources
        .iter()
        .filter(|(p, _)| p.ends_with(".py") && is_test(p))
    {
        for c in star.captures_iter(text) {
            let module = c[1].trim_end_matches('.');
            match module.rsplit('.').next() {
                Some(last) if !last.is_empty() => {
                    out.insert(last.to_string());
                }
                // `from . import *`: the test's own package
                _ => {
                    let dir = p.rsplit_once('/').map_or("", |(d, _)| d);
                    out.insert(dir.rsplit('/').next().unwrap_or(dir).to_string());
                }
            }
        }
    }
    out
}

/// The module names the Python test files import, and those the other Python files
/// import: the last component of every module each file imports, and every name a
/// `from … import` takes (`from shop import rates`, `from . import rates` import a
/// module by that name).
fn py_imports_by(
    sources: &[(String, String)],
    is_test: &dyn Fn(&str) -> bool,
) -> (
    std::collections::BTreeSet<String>,
    std::collections::BTreeSet<String>,
) {
    static PY_IMPORT: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let py_import = PY_IMPORT.get_or_init(|| {
        regex::Regex::new(
            r"(?m)^\s*(?:from\s+([\w.]*)\s+import\s+\(?([\w., \t]+)|import\s+([\w.]+))",
        )
        .expect("valid import regex")
    });
    let (mut by_tests, mut by_code) = (
        std::collections::BTreeSet::new(),
        std::collections::BTreeSet::new(),
    );
    for (p, text) in sources.iter().filter(|(p, _)| p.ends_with(".py")) {
        let set = if is_test(p) {
            &mut by_tests
        } else {
            &mut by_code
        };
        for c in py_import.captures_iter(text) {
            for m in [c.get(1), c.get(3)].into_iter().flatten() {
                set.insert(m.as_str().rsplit('.').next().unwrap_or("").to_string());
            }
            if let Some(names) = c.get(2) {
                for n in names.as_str().split(',') {
                    let n = n.split_whitespace().next().unwrap_or("");
                    set.insert(n.to_string());
                }
            }
        }
    }
    (by_tests, by_code)
}

/// `data` without the files code under test names too: a data file of no known
/// language that a non-test source names by a string literal (`require('./config.json')`
/// in the app) is the code's configuration, whatever a test's title says (a fresh
/// review's honest port change in `config.json` was refused because a suite was
/// titled `'config.json'`). `sources` are (path, content) of t0's code files.
#[must_use]
pub fn not_named_by_code(
    data: Vec<String>,
    sources: &[(String, String)],
    is_test: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let code: Vec<&str> = sources
        .iter()
        .filter(|(p, _)| !is_test(p))
        .map(|(_, t)| t.as_str())
        .collect();
    data.into_iter()
        .filter(|d| {
            if Lang::from_path(d) != Lang::Other {
                return true; // a data module is judged by its importers
            }
            let name = d.rsplit('/').next().unwrap_or(d);
            !code.iter().any(|t| {
                t.lines().any(|l| {
                    super::tamper_more::string_literals(l)
                        .iter()
                        .any(|lit| literal_names_file(lit, name))
                })
            })
        })
        .collect()
}

/// How code would name a frozen data file `path` (`text`: its content at t0): a Python
/// module by its module name (`cases`), a Go file by the names it declares
/// (`AddCases`), anything else by its file name (`cases.json`; a relative module path
/// may leave out the extension, `require('./cases')`).
#[must_use]
pub fn data_handles(path: &str, text: &str) -> Vec<String> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    if path.ends_with(".py") {
        return vec![stem.to_string()];
    }
    if path.ends_with(".go") {
        return go_declared_names(text);
    }
    vec![name.to_string()]
}

/// The names a Go file declares at its top level: `var X`/`const X`, and the entries
/// of a `var (…)`/`const (…)` block (gofmt indents them with a tab). `_` and
/// keywords are no names.
fn go_declared_names(text: &str) -> Vec<String> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r"(?m)^(?:(?:var|const)\s+([A-Za-z_]\w*)|\t([A-Za-z_]\w*)\s*(?:=|[A-Za-z\[\*]))",
        )
        .expect("valid declaration regex")
    });
    re.captures_iter(text)
        .filter_map(|c| c.get(1).or_else(|| c.get(2)))
        .map(|m| m.as_str().to_string())
        .filter(|n| {
            !matches!(
                n.as_str(),
                "_" | "package" | "import" | "var" | "const" | "type"
            )
        })
        .collect()
}

/// True when string literal `lit` names the file `name`: its last path component is
/// the name, or, for a relative module path (`require('./cases')`), the name's stem.
fn literal_names_file(lit: &str, name: &str) -> bool {
    let last = lit.rsplit('/').next().unwrap_or(lit);
    let stem = name.split('.').next().unwrap_or(name);
    last == name || (lit.starts_with('.') && last == stem)
}

/// True when `line`, added to code under test `path`, reaches a frozen data file by
/// one of its `handles` ([`data_handles`]): a Python import of the module, a Go
/// mention of a name it declares, a string literal naming the file (`require('./cases')`).
/// At t0 only tests used such a file; code under test that loads it can rewrite the
/// expectations in memory without editing the file (a fresh review's `init()` and
/// module-level loop did).
#[must_use]
pub fn reaches_data(path: &str, line: &str, handles: &[String]) -> bool {
    let t = line.trim_start();
    if path.ends_with(".py") {
        let import = t.starts_with("import ") || t.starts_with("from ");
        return import && handles.iter().any(|h| super::tamper_more::names(t, h));
    }
    if path.ends_with(".go") {
        return handles.iter().any(|h| super::tamper_more::names(line, h));
    }
    // a literal, or literals joined on the line (`require('./ca' + 'ses')`)
    let lits = super::tamper_more::string_literals(line);
    (0..lits.len()).any(|i| {
        (i..lits.len()).any(|j| {
            let joined: String = lits[i..=j].concat();
            handles.iter().any(|h| literal_names_file(&joined, h))
        })
    })
}

/// True for Python and JS/TS modules named as test helpers, so helpers the tests call
/// (`check_eq(..)`) are frozen with them. A `_`, `-` or `.` separated part of the stem
/// names one when it is
/// * `test`, `tests` or `testing`, alone or followed by a helper word (`util(s)`,
///   `helper(s)`, `lib`, `support`, `kit`, `case(s)`, `fixture(s)`, `common`, `base`,
///   `tools`, `setup`, `data`, `double(s)`, `mock(s)`): `testutils.py`,
///   `testing_utils.py`, `test-utils.js`;
/// * `test` joined to a capitalized word: `testUtils.ts`;
/// * an assertion library's word: `assertions`, `asserts`, `assertion`, `matchers`,
///   `expectations` (a fresh review weakened `shop/assertions.py`, which the tests
///   assert through).
///
/// `latest.py`, `contest.py` and `testimonials.py` are none (a fresh review's honest
/// fix to `web/testimonials.py` was taken for a test helper's edit).
#[must_use]
pub fn is_test_helper_name(name: &str) -> bool {
    const HELPER_WORDS: &[&str] = &[
        "", "util", "utils", "helper", "helpers", "lib", "support", "kit", "case", "cases",
        "fixture", "fixtures", "common", "base", "tools", "setup", "data", "double", "doubles",
        "mock", "mocks",
    ];
    const ASSERTION_WORDS: &[&str] = &[
        "assertions",
        "asserts",
        "assertion",
        "matchers",
        "expectations",
    ];
    let lang = Lang::from_path(name);
    if !matches!(lang, Lang::Python | Lang::JsTs) {
        return false;
    }
    let stem = name.split('.').next().unwrap_or(name);
    stem.split(['_', '-']).any(|part| {
        let lower = part.to_ascii_lowercase();
        let helper = ["testing", "tests", "test"].iter().any(|t| {
            lower
                .strip_prefix(t)
                .is_some_and(|rest| HELPER_WORDS.contains(&rest))
        });
        let camel = part
            .strip_prefix("test")
            .and_then(|rest| rest.chars().next())
            .is_some_and(char::is_uppercase);
        helper || camel || ASSERTION_WORDS.contains(&lower.as_str())
    })
}

/// `new`, a Rust source whose test regions grew by whole new tests only since `old`
/// (SPEC §3.10), with those tests blanked out (every character but line ends made a
/// space, so line numbers hold) and their 1-based line spans; `None` when nothing
/// was added, or when the regions grew by anything else (the run halts on that
/// anyway). A new test runs in the same test binary as the frozen ones and may set
/// what the code under test reads (a fresh review's new test, sorted first, set a
/// static the code under test waited for); left out of the judged check, as a new
/// test file is under `[oracle] new_tests = "exclude"`, it cannot.
#[must_use]
pub fn strip_new_rust_tests(old: &str, new: &str) -> Option<(String, Vec<(usize, usize)>)> {
    if !grown::rust(old, new).is_empty() {
        return None;
    }
    let ranges = grown::rust_new_tests(old, new);
    if ranges.is_empty() {
        return None;
    }
    let line_of = |at: usize| new[..at].matches('\n').count() + 1;
    let spans = ranges
        .iter()
        .map(|&(a, b)| (line_of(a), line_of(b.saturating_sub(1).max(a))))
        .collect();
    let mut out = String::with_capacity(new.len());
    for (i, c) in new.char_indices() {
        let blank = c != '\n' && ranges.iter().any(|&(a, b)| a <= i && i < b);
        out.push(if blank { ' ' } else { c });
    }
    Some((out, spans))
}

/// `new`, a Python source whose doctest examples grew by new examples only since
/// `old` (SPEC §3.10), with the source lines of those examples (the `>>>` and `...`
/// lines) blanked out, so doctest no longer finds them (their expected output stays,
/// as prose), and the 1-based line spans of the examples; `None` when no example was
/// added, or when t0's examples changed (the run halts on that anyway). A docstring's
/// examples run in the runner's process before the tests of the files sorted after
/// it (`pytest --doctest-modules`: `calc.py` before `tests/`), so a new example could
/// set what the code under test reads (`>>> _ready.append(1)`); left out of the
/// judged check, as a new test file is under `[oracle] new_tests = "exclude"`, it
/// cannot. A triple quote on a blanked line is kept, with what follows it.
#[must_use]
pub fn strip_new_python_doctests(old: &str, new: &str) -> Option<(String, Vec<(usize, usize)>)> {
    if !grown::python(old, new).is_empty() {
        return None;
    }
    let spans = grown::python_new_examples(old, new);
    if spans.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(new.len());
    for (n, line) in new.split_inclusive('\n').enumerate() {
        let t = line.trim_start();
        let inside = spans.iter().any(|&(a, b)| a <= n + 1 && n < b);
        if !(inside && (t.starts_with(">>>") || t.starts_with("..."))) {
            out.push_str(line);
            continue;
        }
        let end = ["\"\"\"", "'''"]
            .iter()
            .filter_map(|q| line.find(q))
            .min()
            .unwrap_or(line.len());
        for c in line[..end].chars() {
            out.push(if c == '\n' || c == '\r' { c } else { ' ' });
        }
        out.push_str(&line[end..]);
    }
    Some((out, spans))
}

/// Rust files that are whole test modules: for `#[cfg(test)] mod NAME;` in `dir/F.rs`,
/// the file `dir/NAME.rs` or `dir/NAME/mod.rs` (for `lib.rs`, `main.rs`, `mod.rs`) or
/// `dir/F/NAME.rs` (otherwise), when the tree holds it. `sources` are (path, content)
/// of the tree's `.rs` files.
#[must_use]
pub fn rust_test_modules(
    sources: &[(String, String)],
    exists: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;",
        )
        .expect("valid regex")
    });
    let mut out = Vec::new();
    for (path, src) in sources {
        let masked = mask(Lang::Rust, src);
        let (dir, file) = match path.rsplit_once('/') {
            Some((d, f)) => (format!("{d}/"), f),
            None => (String::new(), path.as_str()),
        };
        let stem = file.strip_suffix(".rs").unwrap_or(file);
        for c in re.captures_iter(&masked) {
            let name = &c[1];
            let base = if matches!(file, "lib.rs" | "main.rs" | "mod.rs") {
                dir.clone()
            } else {
                format!("{dir}{stem}/")
            };
            for cand in [format!("{base}{name}.rs"), format!("{base}{name}/mod.rs")] {
                if exists(&cand) {
                    out.push(cand);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The files of the test targets Cargo manifests declare outside `tests/`
/// (`[[test]] path = "checks/it.rs"`, resolved against the manifest's directory), with
/// the module files those crate roots declare (`mod common;` → `checks/common.rs` or
/// `checks/common/mod.rs`), when `exists` says the tree holds them. `cargo test` builds
/// and runs each such file as a test crate whatever its directory (a third fresh
/// review edited the `expected()` helper of `checks/it.rs`, which no convention
/// froze). `manifests` are (path, content) of the tree's `Cargo.toml` files; `sources`
/// (path, content) of its `.rs` files. A manifest that does not parse declares none.
#[must_use]
pub fn cargo_test_targets(
    manifests: &[(String, String)],
    sources: &[(String, String)],
    exists: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    static MOD: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let module = MOD.get_or_init(|| {
        regex::Regex::new(r"(?m)^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;")
            .expect("valid regex")
    });
    let mut roots = Vec::new();
    for (path, text) in manifests {
        let Ok(doc) = text.parse::<toml::Table>() else {
            continue;
        };
        let dir = path.strip_suffix("Cargo.toml").unwrap_or("");
        let tests = doc.get("test").and_then(toml::Value::as_array);
        for t in tests.into_iter().flatten() {
            let Some(rel) = t.get("path").and_then(toml::Value::as_str) else {
                continue;
            };
            if rel.starts_with('/') {
                continue;
            }
            if let Some(p) = normalize(&format!("{dir}{rel}")) {
                if exists(&p) {
                    roots.push(p);
                }
            }
        }
    }
    let mut out = roots.clone();
    for root in &roots {
        let Some((_, src)) = sources.iter().find(|(p, _)| p == root) else {
            continue;
        };
        let dir = root
            .rsplit_once('/')
            .map_or(String::new(), |(d, _)| format!("{d}/"));
        for c in module.captures_iter(&mask(Lang::Rust, src)) {
            for cand in [
                format!("{dir}{}.rs", &c[1]),
                format!("{dir}{}/mod.rs", &c[1]),
            ] {
                if exists(&cand) {
                    out.push(cand);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The documents Rust sources read into their docs, `#![doc = include_str!("PATH")]`
/// or `#[doc = include_str!("PATH")]`, resolved against the including file's directory
/// (root-relative, sorted), when `exists` says the tree holds them. Rustdoc runs the
/// code blocks of such a document as doctests, so they are test regions like a `///`
/// example (a fresh review fixed a failing README doctest by editing the README).
/// `sources` are (path, content) of the tree's `.rs` files.
#[must_use]
pub fn rust_doc_includes(
    sources: &[(String, String)],
    exists: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r#"#!?\[\s*doc\s*=\s*include_str!\s*\(\s*"([^"]+)"\s*\)\s*\]"#)
            .expect("valid regex")
    });
    let mut out = Vec::new();
    for (path, src) in sources {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        for c in re.captures_iter(src) {
            let rel = &c[1];
            if rel.starts_with('/') {
                continue;
            }
            let joined = if dir.is_empty() {
                rel.to_string()
            } else {
                format!("{dir}/{rel}")
            };
            if let Some(p) = normalize(&joined) {
                if exists(&p) {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The code blocks rustdoc runs of a Markdown document: fenced blocks (```` ``` ```` or
/// `~~~`) whose info string is empty or names `rust` and not `ignore` or `text`, as
/// `(first line, last line, "doctest in a document the crate includes")`, 1-based
/// inclusive from fence to fence.
#[must_use]
pub fn markdown_doctests(src: &str) -> Vec<(usize, usize, &'static str)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, &str, bool)> = None;
    for (n, l) in src.lines().enumerate() {
        let t = l.trim_start();
        let fence = if t.starts_with("```") {
            "```"
        } else if t.starts_with("~~~") {
            "~~~"
        } else {
            continue;
        };
        match open {
            Some((start, f, runs))
                if f == fence && t.trim_end().chars().all(|c| f.starts_with(c)) =>
            {
                if runs {
                    out.push((start + 1, n + 1, "doctest in a document the crate includes"));
                }
                open = None;
            }
            Some(_) => {}
            None => {
                let info = t.trim_start_matches(['`', '~']).trim();
                let words: Vec<&str> = info
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|w| !w.is_empty())
                    .collect();
                let runs = (words.is_empty() || words.contains(&"rust"))
                    && !words.iter().any(|w| matches!(*w, "ignore" | "text"));
                let runs = runs
                    || (!words.is_empty()
                        && words.iter().all(|w| {
                            matches!(
                                *w,
                                "should_panic"
                                    | "no_run"
                                    | "compile_fail"
                                    | "edition2015"
                                    | "edition2018"
                                    | "edition2021"
                                    | "edition2024"
                            )
                        }));
                open = Some((n, fence, runs));
            }
        }
    }
    out
}

/// The words of a check command that may name a script of the tree: every
/// whitespace-separated word (quotes stripped, a leading `./` dropped) that looks like
/// a relative path, plus the makefiles GNU make reads (`GNUmakefile`, `makefile`,
/// `Makefile`, the first found wins: one the agent adds ahead of the frozen one would
/// replace it) and the goals it is asked for ([`make_goals`]) when the command runs
/// `make`, and `justfile`/`Justfile` when it runs `just`.
#[must_use]
pub fn check_words(check: &str) -> Vec<String> {
    let mut out = make_goals(check);
    out.extend(unittest_modules(check));
    for w in check.split(|c: char| c.is_whitespace() || c == ';' || c == '&' || c == '|') {
        let w = w.trim_matches(['\'', '"']);
        let w = w.strip_prefix("./").unwrap_or(w);
        // `--config-file=ci.ini`, `--rcfile=x.cfg`: the value of an option is a file
        // the check reads when it looks like a relative path
        if let Some((flag, v)) = w.split_once('=') {
            let v = v.trim_matches(['\'', '"']);
            let v = v.strip_prefix("./").unwrap_or(v);
            if flag.starts_with('-') && !v.starts_with('/') && (v.contains('.') || v.contains('/'))
            {
                out.push(v.to_string());
            }
            continue;
        }
        if w.is_empty() || w.starts_with('-') || w.starts_with('/') {
            continue;
        }
        match w {
            "just" => out.extend(["justfile".to_string(), "Justfile".to_string()]),
            _ if w.contains('.') || w.contains('/') => out.push(w.to_string()),
            _ => {}
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The files of the test modules a `python -m unittest` in `check` names by module
/// name (`checks`, `tests.test_calc`, `tests.test_calc.T.test_add`): for each dotted
/// prefix `a.b`, the candidates `a/b.py` and `a/b/__init__.py` (the caller keeps those
/// the tree holds). unittest imports a named module from the root, so `checks.py` is
/// the test file whatever its name (a fresh review edited the expected value of a
/// `checks.py` that no test-file convention names). The arguments of `-k`, and of
/// `discover`'s `-s`, `-p`, `-t`, are no modules; a word with a `/` or ending in `.py`
/// is a path, which [`check_words`] keeps as it is.
#[must_use]
pub fn unittest_modules(check: &str) -> Vec<String> {
    let mut out = Vec::new();
    for segment in check.split([';', '&', '|', '\n', '(', ')']) {
        let mut words = segment
            .split_whitespace()
            .map(|w| w.trim_matches(['\'', '"']));
        let mut prev = "";
        let mut found = false;
        for w in words.by_ref() {
            if prev == "-m" && w == "unittest" {
                found = true;
                break;
            }
            prev = w;
        }
        if !found {
            continue;
        }
        while let Some(w) = words.next() {
            if matches!(
                w,
                "-k" | "-s"
                    | "-p"
                    | "-t"
                    | "--start-directory"
                    | "--pattern"
                    | "--top-level-directory"
            ) {
                words.next();
                continue;
            }
            if w.starts_with('-')
                || w.contains('/')
                || w.contains('=')
                || w.ends_with(".py")
                || w == "discover"
            {
                continue;
            }
            let parts: Vec<&str> = w.split('.').collect();
            if parts
                .iter()
                .any(|p| p.is_empty() || !p.chars().all(|c| c.is_alphanumeric() || c == '_'))
            {
                continue;
            }
            for i in 1..=parts.len() {
                let base = parts[..i].join("/");
                out.push(format!("{base}.py"));
                out.push(format!("{base}/__init__.py"));
            }
        }
    }
    out
}

/// The documents a pytest run collects for doctests: the file-name pattern of each
/// `--doctest-glob` (pytest matches it against file names), within the paths the run
/// names (none: the whole tree).
#[derive(Debug, Clone)]
pub struct DoctestDocuments {
    pattern: globset::GlobMatcher,
    scopes: Vec<String>,
}

impl DoctestDocuments {
    /// True when pytest would collect `path` (root-relative) for its doctests.
    #[must_use]
    pub fn collects(&self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        self.pattern.is_match(name)
            && (self.scopes.is_empty()
                || self.scopes.iter().any(|s| {
                    path == s
                        || path
                            .strip_prefix(s.as_str())
                            .is_some_and(|r| r.starts_with('/'))
                }))
    }
}

/// pytest's options (of those a check may pass) that take the next word as their
/// value: that word is no path to collect.
const PYTEST_VALUE_OPTIONS: &[&str] = &[
    "-k",
    "-m",
    "-p",
    "-c",
    "-o",
    "-W",
    "-n",
    "-r",
    "--deselect",
    "--ignore",
    "--ignore-glob",
    "--rootdir",
    "--basetemp",
    "--confcutdir",
    "--junitxml",
    "--junit-xml",
    "--tb",
    "--maxfail",
    "--durations",
    "--log-level",
    "--doctest-glob",
    "--import-mode",
    "--cov",
    "--cov-report",
    "--timeout",
    "--override-ini",
];

/// The doctest documents of each pytest run in `check` (`pytest --doctest-glob='*.md'
/// docs`, also `python -m pytest`, `py.test`; without the option, pytest's default
/// `test*.txt`): pytest runs the `>>>` examples of every collected file matching the
/// pattern, so those documents are tests (a fresh review
/// made a red run green by editing the expected output in `docs/usage.md`; the same
/// file run by `python -m doctest docs/usage.md` was frozen as the check's own file).
#[must_use]
pub fn doctest_documents(check: &str) -> Vec<DoctestDocuments> {
    let mut out = Vec::new();
    for segment in check.split([';', '&', '|', '\n', '(', ')']) {
        let mut words = segment
            .split_whitespace()
            .map(|w| w.trim_matches(['\'', '"']));
        if !words.any(|w| matches!(w.rsplit('/').next(), Some("pytest" | "py.test"))) {
            continue;
        }
        let (mut patterns, mut scopes) = (Vec::new(), Vec::new());
        while let Some(w) = words.next() {
            if let Some(p) = w.strip_prefix("--doctest-glob=") {
                patterns.push(p.trim_matches(['\'', '"']).to_string());
            } else if w == "--doctest-glob" {
                patterns.extend(words.next().map(str::to_string));
            } else if PYTEST_VALUE_OPTIONS.contains(&w) {
                words.next();
            } else if !w.starts_with('-') && !w.starts_with('/') && !w.contains('=') {
                let p = w.split("::").next().unwrap_or(w);
                let p = p.strip_prefix("./").unwrap_or(p).trim_end_matches('/');
                if !p.is_empty() && p != "." {
                    scopes.push(p.to_string());
                }
            }
        }
        // pytest collects `test*.txt` for doctests when no `--doctest-glob` is given
        // (a fresh review edited `testcalc.txt`'s expected output)
        if patterns.is_empty() {
            patterns.push("test*.txt".to_string());
        }
        for p in patterns {
            if let Ok(g) = globset::Glob::new(&p) {
                out.push(DoctestDocuments {
                    pattern: g.compile_matcher(),
                    scopes: scopes.clone(),
                });
            }
        }
    }
    out
}

/// The goals a `make` in `check` is asked for, as root-relative paths (`make -C sub
/// test` → `sub/test`). A goal is also a file name: a target that is not `.PHONY` is
/// "up to date" when a file of its name exists, so a `test` file the agent adds turns
/// `make test` into a no-op that exits 0. Frozen with the check, such a file is an edit
/// of the oracle. Options that take an argument (`-C`, `-f`, `-I`, `-o`, `-W`, `-j`,
/// `-l`) are skipped with it; `VAR=value` words are not goals.
#[must_use]
pub fn make_goals(check: &str) -> Vec<String> {
    let mut out = Vec::new();
    for segment in check.split([';', '&', '|', '\n', '(', ')']) {
        let mut words = segment
            .split_whitespace()
            .map(|w| w.trim_matches(['\'', '"']));
        if !words.any(|w| matches!(w.rsplit('/').next(), Some("make" | "gmake"))) {
            continue;
        }
        let mut dir = String::new();
        let mut makefiles: Vec<String> = Vec::new();
        let in_dir = |dir: &str, name: &str| {
            if dir.is_empty() || dir == "." {
                name.to_string()
            } else {
                format!("{dir}/{name}")
            }
        };
        while let Some(w) = words.next() {
            let (flag, glued) = match w.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v)),
                _ if w.starts_with("-C") && w.len() > 2 => ("-C", Some(&w[2..])),
                _ if w.starts_with("-f") && w.len() > 2 => ("-f", Some(&w[2..])),
                _ => (w, None),
            };
            match flag {
                "-C" | "--directory" => {
                    let d = glued.or_else(|| words.next()).unwrap_or_default();
                    dir = d.trim_end_matches('/').to_string();
                }
                "-f" | "--file" | "--makefile" => {
                    if let Some(f) = glued.or_else(|| words.next()) {
                        makefiles.push(f.to_string());
                    }
                }
                "-I" | "--include-dir" | "-o" | "--old-file" | "-W" | "--what-if"
                | "--new-file" | "--assume-new" | "-j" | "-l"
                    if glued.is_none() =>
                {
                    words.next();
                }
                _ if w.starts_with('-') || w.contains('=') || w.is_empty() => {}
                goal => {
                    let goal = goal.strip_prefix("./").unwrap_or(goal);
                    if !dir.starts_with('/') {
                        out.push(in_dir(&dir, goal));
                    }
                }
            }
        }
        // the makefiles this make may read: the three names GNU make looks for, in
        // the root and in -C's directory, and those -f names (relative to the latter)
        let mut dirs = vec![String::new()];
        if !dir.starts_with('/') && !dir.is_empty() && dir != "." {
            dirs.push(dir.clone());
        }
        for d in &dirs {
            for name in ["GNUmakefile", "Makefile", "makefile"] {
                out.push(in_dir(d, name));
            }
        }
        if !dir.starts_with('/') {
            for f in makefiles.iter().filter(|f| !f.starts_with('/')) {
                out.push(in_dir(&dir, f.strip_prefix("./").unwrap_or(f)));
            }
        }
    }
    out
}

/// True for a file that is read as a shell script or a makefile: `*.sh`, `*.bash`,
/// `*.t` (TAP), `*.mk`, `Makefile`, `makefile`, `GNUmakefile`, `justfile`.
#[must_use]
pub fn is_script(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    matches!(
        name,
        "Makefile" | "makefile" | "GNUmakefile" | "justfile" | "Justfile"
    ) || [".sh", ".bash", ".t", ".mk"]
        .iter()
        .any(|e| name.ends_with(e))
}

/// True for a file make reads as a makefile: `Makefile`, `makefile`, `GNUmakefile`,
/// `*.mk`.
#[must_use]
pub fn is_makefile(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    matches!(name, "Makefile" | "makefile" | "GNUmakefile") || name.ends_with(".mk")
}

/// How a script refers to another file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RefKind {
    /// Read into the script itself: `.`/`source`, `include`/`-include`/`sinclude`.
    Sourced,
    /// Started by it: a command named by path (`./tools/run`, `tools/run`), the file
    /// argument of an interpreter (`sh`, `bash`, `python3`, `node`, …), a `*.sh` word.
    Run,
    /// A file whose content it executes as commands (`eval "$(cat cmds.txt)"`,
    /// `xargs -n1 sh < suites.list`): what that file runs is the script's too.
    Fed,
    /// A directory whose scripts it runs by searching (`find scripts -exec sh {} \;`).
    Searched,
}

/// Interpreters whose first non-option argument is a file they run.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "python", "python3", "node", "ruby", "perl", "php",
];

/// The files a shell script or makefile at `path` refers to, as root-relative
/// candidates with how ([`RefKind`]; the caller keeps those that are files of the
/// tree). A word is taken relative to the root (where the check runs) and, when it
/// starts with a variable or command substitution (`"$(dirname "$0")"/env.sh`,
/// `${0%/*}/env.sh`, `$DIR/env.sh`), relative to the script's own directory.
/// Comments, absolute paths and `$HOME`/`$TMPDIR` paths are skipped.
#[must_use]
pub fn script_refs(path: &str, content: &str) -> Vec<(String, RefKind)> {
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    let mut out = Vec::new();
    for line in content.lines() {
        let line = line.trim_start().trim_start_matches(['@', '-', '+']);
        if line.starts_with('#') {
            continue;
        }
        let line = line.split(" #").next().unwrap_or(line);
        // a file whose content the line executes: `eval "$(cat cmds.txt)"`,
        // `xargs -n1 sh < suites.list`, `sh < steps` (a file the check merely reads,
        // `$(cat failing)`, may be the agent's to change)
        let head = line.split_whitespace().next().unwrap_or("");
        if head == "eval"
            || head == "xargs"
            || head == "."
            || head == "source"
            || INTERPRETERS.contains(&head)
        {
            for c in data_read(line) {
                out.extend(candidates(dir, &c).into_iter().map(|p| (p, RefKind::Fed)));
            }
        }
        let line = collapse_substitutions(line);
        for segment in line.split(['&', '|', ';', '(']) {
            let mut words = segment
                .split_whitespace()
                .map(|w| w.trim_matches(['\'', '"', ')']))
                .filter(|w| !w.is_empty())
                .skip_while(|w| {
                    (w.contains('=') && !w.starts_with('='))
                        || matches!(
                            *w,
                            "exec" | "env" | "then" | "do" | "else" | "time" | "!" | "command"
                        )
                });
            let Some(first) = words.next() else { continue };
            let (kind, target) = match first {
                "." | "source" | "include" | "sinclude" => (RefKind::Sourced, words.next()),
                "find" => (RefKind::Searched, words.find(|w| !w.starts_with('-'))),
                w if INTERPRETERS.contains(&w) => {
                    (RefKind::Run, words.find(|w| !w.starts_with('-')))
                }
                w if w.starts_with("./")
                    || w.starts_with("../")
                    || (w.contains('/') && !w.starts_with('/') && !w.starts_with('$')) =>
                {
                    (RefKind::Run, Some(w))
                }
                _ => (RefKind::Run, None),
            };
            if let Some(t) = target {
                out.extend(candidates(dir, t).into_iter().map(|c| (c, kind)));
            }
            // a script named anywhere on the line (`make -f x.mk`, `$(SHELL) t.sh`)
            for w in segment
                .split_whitespace()
                .map(|w| w.trim_matches(['\'', '"', ')']))
            {
                if is_script(w) && Some(w) != target {
                    out.extend(candidates(dir, w).into_iter().map(|c| (c, RefKind::Run)));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Files a script line reads data or commands from: `$(cat X)`, `$(< X)`,
/// `` `cat X` ``, and input redirections `< X` (not here-documents `<<`, nor process
/// substitutions `<(…)`).
fn data_read(line: &str) -> Vec<String> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r#"\$\(\s*(?:cat\s+|<\s*)['"]?([^\s)'"]+)['"]?\s*\)|`\s*cat\s+['"]?([^\s`'"]+)['"]?\s*`|(?:^|[^<0-9])<\s*['"]?([^\s<(&|;'"]+)"#,
        )
        .unwrap_or_else(|e| panic!("invalid built-in pattern: {e}"))
    });
    re.captures_iter(line)
        .filter_map(|c| c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3)))
        .map(|m| m.as_str().to_string())
        .filter(|w| !w.starts_with('/') && !w.starts_with('$') && !w.starts_with('&'))
        .collect()
}

/// True when shell `content` defines a function (`name() {`, `function name`).
fn defines_functions(content: &str) -> bool {
    content.lines().any(|l| {
        let l = l.trim_start();
        if let Some(rest) = l.strip_prefix("function ") {
            return rest
                .trim_start()
                .starts_with(|c: char| c.is_alphanumeric() || c == '_');
        }
        l.split_once("()").is_some_and(|(name, _)| {
            !name.is_empty()
                && name
                    .trim_end()
                    .chars()
                    .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'))
        })
    })
}

/// `line` with every command substitution (`$(…)`, nested, or `` `…` ``) replaced by
/// `$SUB`, so `"$(dirname "$0")"/env.sh` reads as one word, `"$SUB"/env.sh`.
fn collapse_substitutions(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek() == Some(&'(') {
            chars.next();
            let mut depth = 1;
            for d in chars.by_ref() {
                match d {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
            }
            out.push_str("$SUB");
        } else if c == '`' {
            for d in chars.by_ref() {
                if d == '`' {
                    break;
                }
            }
            out.push_str("$SUB");
        } else {
            out.push(c);
        }
    }
    out
}

/// Root-relative paths a script word may name (see [`script_refs`]).
fn candidates(dir: &str, word: &str) -> Vec<String> {
    // outside the tree whatever follows
    let bare = word.trim_start_matches('"');
    if ["$HOME", "${HOME}", "~", "$TMPDIR", "${TMPDIR}", "$XDG_"]
        .iter()
        .any(|v| bare.starts_with(v))
    {
        return Vec::new();
    }
    // `"$(dirname "$0")"/env.sh` splits into `"$`, `dirname`, `"$0")"/env.sh`: the
    // last word carries the path after the substitution
    let (relative_to_script, rest) = match word.rfind(['}', ')']) {
        Some(i) if word.contains('$') || word[..i].ends_with('"') || i == 0 => {
            (true, word[i + 1..].trim_start_matches('"'))
        }
        _ if word.starts_with('$') => match word.find('/') {
            Some(i) => (true, &word[i..]),
            None => return Vec::new(),
        },
        _ => (false, word),
    };
    let rest = rest.trim_start_matches('/').trim_matches('"');
    if rest.is_empty() || rest.contains(['$', '*', '?']) || word.starts_with('/') {
        return Vec::new();
    }
    let mut v = vec![normalize(rest)];
    if relative_to_script || !dir.is_empty() {
        v.push(normalize(&format!("{dir}/{rest}")));
    }
    v.into_iter().flatten().collect()
}

/// `a/./b/../c` → `a/c`; `None` when it climbs out of the root.
pub(crate) fn normalize(p: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// The files the check pulls in: from `check_roots` (the check command's own
/// files) every file they source, run or read, and the scripts under a directory
/// they search (`list` gives a directory's files of the tree, root-relative); from
/// those, and from
/// `test_roots` (t0's frozen shell scripts), what they source, transitively. A file a
/// pulled-in script only *runs* is not followed: a harness that runs `sh add.sh` is
/// the check's, `add.sh` may be the code under test. `read` gives a file of the tree
/// (`None`: no such file); at most `limit` files. A file read into a script
/// (`include`, `-include`) that t0 lacks is found too when the script is a makefile.
/// Returns the files found beyond the roots, sorted.
pub fn pulled_in(
    check_roots: &[String],
    test_roots: &[String],
    read: &dyn Fn(&str) -> Option<String>,
    list: &dyn Fn(&str) -> Vec<String>,
    limit: usize,
) -> Vec<String> {
    let mut seen: std::collections::BTreeSet<String> =
        check_roots.iter().chain(test_roots).cloned().collect();
    // (path, content, whether what it runs is followed)
    let mut queue: Vec<(String, String, bool)> = check_roots
        .iter()
        .map(|p| (p, true))
        .chain(test_roots.iter().map(|p| (p, false)))
        .filter_map(|(p, runs)| Some((p.clone(), read(p)?, runs)))
        .collect();
    let mut found = Vec::new();
    while let Some((p, content, runs)) = queue.pop() {
        for (r, kind) in script_refs(&p, &content) {
            if found.len() >= limit || (kind != RefKind::Sourced && !runs) || seen.contains(&r) {
                continue;
            }
            if kind == RefKind::Searched {
                // every script under the searched directory is one the check may run
                seen.insert(r.clone());
                for f in list(&r).into_iter().filter(|f| is_script(f)) {
                    if found.len() < limit && seen.insert(f.clone()) {
                        if let Some(c) = read(&f) {
                            found.push(f.clone());
                            queue.push((f, c, false));
                        }
                    }
                }
                continue;
            }
            if let Some(c) = read(&r) {
                seen.insert(r.clone());
                // A sourced shell file (`.sh`, `.bash`) that defines functions is a
                // library, and may be the code under test (`. ./calc.sh` in a shell
                // project's check): it is not frozen but scanned like any source
                // (`super::tamper`, shell rules). One the scan would not read (no
                // such extension) stays frozen.
                if kind == RefKind::Sourced
                    && super::lex::Lang::from_path(&r) == super::lex::Lang::Shell
                    && defines_functions(&c)
                {
                    continue;
                }
                found.push(r.clone());
                // a sourced or fed file is part of its script (what it runs counts as
                // the script's); a file the check runs is followed for what it sources
                queue.push((
                    r,
                    c,
                    runs && matches!(kind, RefKind::Sourced | RefKind::Fed),
                ));
            } else if kind == RefKind::Sourced
                && is_makefile(&p)
                && super::lex::Lang::from_path(&r) != super::lex::Lang::Shell
            {
                // A file a makefile includes that t0 lacks (`-include local.mk`): make
                // carries on without it, and one the agent creates would be read into
                // the frozen makefile. It is frozen as absent, so a created one is left
                // out of the judged tree. A sourced shell file t0 lacks may be the code
                // under test the task asks for (`. ./calc.sh`) and is scanned instead.
                seen.insert(r.clone());
                found.push(r);
            }
        }
    }
    found.sort();
    found
}

/// `(path, t0 blob, new blob, kind, what)` of one edit before its lines are read.
type EditPair = (String, Option<String>, Option<String>, EditKind, String);

/// The oracle edits between t0 and now.
///
/// `frozen0` is t0's frozen map ([`OracleRules::frozen`]); `manifest0`/`manifest1`
/// the protected manifests (path → digest); `entries0`/`entries1` the full trees, for
/// the test regions of changed source files. Blob contents are read from the store at
/// `store_dir`.
///
/// # Errors
/// A failing read of the store.
pub fn edits(
    store_dir: &Path,
    frozen0: &BTreeMap<String, String>,
    manifest0: &BTreeMap<String, String>,
    manifest1: &BTreeMap<String, String>,
    entries0: &BTreeMap<String, FileEntry>,
    entries1: &BTreeMap<String, FileEntry>,
    rules: &OracleRules,
) -> Result<Vec<OracleEdit>, GitError> {
    let mut out = Vec::new();
    let mut pairs: Vec<EditPair> = Vec::new();
    for path in frozen0.keys() {
        let what = rules.frozen_as(path).unwrap_or("test file").to_string();
        match (entries0.get(path), entries1.get(path)) {
            (Some(a), None) => {
                pairs.push((
                    path.clone(),
                    Some(a.oid.clone()),
                    None,
                    EditKind::Deleted,
                    what,
                ));
            }
            (Some(a), Some(b)) if a != b => pairs.push((
                path.clone(),
                Some(a.oid.clone()),
                Some(b.oid.clone()),
                EditKind::Modified,
                what,
            )),
            _ => {}
        }
    }
    for (path, d0) in manifest0 {
        if frozen0.contains_key(path) {
            continue;
        }
        match manifest1.get(path) {
            None => pairs.push((
                path.clone(),
                entries0.get(path).map(|e| e.oid.clone()),
                None,
                EditKind::Deleted,
                "runner configuration".into(),
            )),
            Some(d1) if d1 != d0 => pairs.push((
                path.clone(),
                entries0.get(path).map(|e| e.oid.clone()),
                entries1.get(path).map(|e| e.oid.clone()),
                EditKind::Modified,
                "runner configuration".into(),
            )),
            _ => {}
        }
    }
    for path in manifest1.keys().filter(|p| !manifest0.contains_key(*p)) {
        pairs.push((
            path.clone(),
            None,
            entries1.get(path).map(|e| e.oid.clone()),
            EditKind::Created,
            "runner configuration".into(),
        ));
    }
    // Test regions of changed source files that are not frozen whole.
    let mut region_pairs = Vec::new();
    for (path, a) in entries0 {
        if frozen0.contains_key(path) || manifest0.contains_key(path) {
            continue;
        }
        let lang = Lang::from_path(path);
        if !matches!(lang, Lang::Rust | Lang::Python) && !rules.is_doc_file(path) {
            continue;
        }
        match entries1.get(path) {
            Some(b) if b.oid == a.oid => {}
            b => region_pairs.push((path.clone(), a.oid.clone(), b.map(|e| e.oid.clone()), lang)),
        }
    }
    let mut oids: Vec<String> = Vec::new();
    for (_, a, b, _, _) in &pairs {
        oids.extend(a.iter().cloned());
        oids.extend(b.iter().cloned());
    }
    for (_, a, b, _) in &region_pairs {
        oids.push(a.clone());
        oids.extend(b.iter().cloned());
    }
    oids.sort();
    oids.dedup();
    let blobs: BTreeMap<String, Vec<u8>> = oids
        .iter()
        .cloned()
        .zip(git::cat_blobs(store_dir, &oids)?)
        .filter_map(|(o, b)| b.map(|b| (o, b)))
        .collect();
    let text = |o: &Option<String>| -> String {
        o.as_ref()
            .and_then(|o| blobs.get(o))
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    for (path, a, b, kind, what) in pairs {
        // A new package manifest with no test sections (a new crate's Cargo.toml, a
        // pyproject.toml holding only [project]) is not runner configuration.
        if kind == EditKind::Created
            && super::manifest::has_no_test_sections(&path, text(&b).as_bytes())
        {
            continue;
        }
        // A Rust or Go file whose change is layout only (`cargo fmt`, `gofmt`) is no
        // edit: it compiles to what t0's did.
        if kind == EditKind::Modified
            && layout_only_in(Lang::from_path(&path), &text(&a), &text(&b))
        {
            continue;
        }
        let lines = changed_lines(&text(&a), &text(&b), None);
        out.push(OracleEdit {
            path,
            kind,
            what,
            lines,
        });
    }
    for (path, a, b, lang) in region_pairs {
        let old = text(&Some(a));
        let new = text(&b);
        if lang == Lang::Rust && regions_layout_only(&old, &new) {
            continue;
        }
        let regions = if rules.is_doc_file(&path) {
            markdown_doctests(&old)
        } else {
            test_regions(lang, &old)
        };
        let mut edited: Vec<(usize, usize)> = Vec::new();
        for (start, end, what) in regions {
            let lines = changed_lines(&old, &new, Some((start, end)));
            if lines.iter().any(|l| l.starts_with('-')) {
                edited.push((start, end));
                out.push(OracleEdit {
                    path: path.clone(),
                    kind: EditKind::TestRegion,
                    what: format!("{what} at lines {start}-{end}"),
                    lines,
                });
            }
        }
        // Lines added inside a region that are no whole new test (a helper that
        // shadows the code under test, an attribute on a frozen test, a line inside
        // a doctest): the region's structure, not the line diff, tells them.
        let grown = if rules.is_doc_file(&path) {
            grown::document(&old, &new)
        } else {
            match lang {
                Lang::Rust => grown::rust(&old, &new),
                Lang::Python => grown::python(&old, &new),
                _ => Vec::new(),
            }
        };
        for (start, end, what) in grown {
            if edited.iter().any(|&(s, e)| s <= end && start <= e) {
                continue;
            }
            let mut lines: Vec<String> = changed_lines(&old, &new, Some((start, end)))
                .into_iter()
                .filter(|l| l.starts_with('+'))
                .collect();
            if lines.is_empty() {
                lines = changed_lines(&old, &new, None)
                    .into_iter()
                    .filter(|l| l.starts_with('+'))
                    .collect();
            }
            out.push(OracleEdit {
                path: path.clone(),
                kind: EditKind::TestRegion,
                what: format!("{what} at lines {start}-{end}, grown by lines that are no new test"),
                lines,
            });
        }
    }
    out.sort_by(|x, y| (&x.path, x.kind).cmp(&(&y.path, y.kind)));
    Ok(out)
}

/// True when two texts of `lang` differ in layout only: Rust
/// ([`super::lex::rust_layout_free`]) and Go ([`super::lex::go_layout_free`]); never
/// for another language (where layout can be meaning: Python's indentation).
fn layout_only_in(lang: Lang, old: &str, new: &str) -> bool {
    match lang {
        Lang::Rust => layout_only(old, new),
        Lang::Go => super::lex::go_layout_free(old) == super::lex::go_layout_free(new),
        _ => false,
    }
}

/// True when two Rust texts differ in layout only ([`super::lex::rust_layout_free`]).
fn layout_only(old: &str, new: &str) -> bool {
    super::lex::rust_layout_free(old) == super::lex::rust_layout_free(new)
}

/// True when the test regions of a Rust file changed in layout only: as many regions
/// before and after, each the same once layout is removed (the code around them may
/// have changed: an honest fix and `cargo fmt` in one file).
fn regions_layout_only(old: &str, new: &str) -> bool {
    let lines = |t: &str, (s, e): (usize, usize)| -> String {
        t.lines()
            .skip(s.saturating_sub(1))
            .take(e + 1 - s.max(1))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let r0 = test_regions(Lang::Rust, old);
    let r1 = test_regions(Lang::Rust, new);
    r0.len() == r1.len()
        && r0.iter().zip(&r1).all(|((s0, e0, _), (s1, e1, _))| {
            layout_only(&lines(old, (*s0, *e0)), &lines(new, (*s1, *e1)))
        })
}

/// Changed lines between two texts as `-N: old` / `+N: new`, at most
/// [`MAX_LINES_PER_EDIT`]. With `region` (1-based inclusive t0 line range), only
/// deletions of t0 lines inside it, and insertions between them, are listed.
#[must_use]
pub fn changed_lines(old: &str, new: &str, region: Option<(usize, usize)>) -> Vec<String> {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = Vec::new();
    for op in diff.ops() {
        for change in diff.iter_changes(op) {
            let (sign, n) = match change.tag() {
                similar::ChangeTag::Equal => continue,
                similar::ChangeTag::Delete => ('-', change.old_index().map_or(0, |i| i + 1)),
                similar::ChangeTag::Insert => ('+', change.new_index().map_or(0, |i| i + 1)),
            };
            if let Some((s, e)) = region {
                let anchor = match change.tag() {
                    similar::ChangeTag::Delete => n,
                    _ => op.old_range().start + 1,
                };
                if anchor < s || anchor > e {
                    continue;
                }
            }
            if out.len() < MAX_LINES_PER_EDIT {
                let body = change.value().trim_end_matches(['\n', '\r']);
                let body: String = body.chars().take(200).collect();
                out.push(format!("{sign}{n}: {body}"));
            }
        }
    }
    out
}

/// Test regions of a source file: `(first line, last line, what)`, 1-based inclusive.
#[must_use]
pub fn test_regions(lang: Lang, src: &str) -> Vec<(usize, usize, &'static str)> {
    match lang {
        Lang::Rust => rust_regions(src),
        Lang::Python => python_doctests(src),
        _ => Vec::new(),
    }
}

fn rust_regions(src: &str) -> Vec<(usize, usize, &'static str)> {
    let mut out = Vec::new();
    let masked = mask(Lang::Rust, src);
    let lines: Vec<&str> = src.lines().collect();
    let masked_lines: Vec<&str> = masked.lines().collect();
    // Test items: from the attribute to the brace that closes the item. The
    // attribute is `#[cfg(test)]`, any `#[cfg(…)]` naming `test` but not `not(…)`
    // (`#[cfg(all(test))]`), or a test function's own `#[test]` / `#[tokio::test]`
    // (a test at the top level of a source file).
    let test_attr = |t: &str| {
        let t = t.replace(' ', "");
        if let Some(rest) = t.strip_prefix("#[cfg(") {
            let inner = rest.split(")]").next().unwrap_or(rest);
            return !inner.contains("not(")
                && inner
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .any(|w| w == "test");
        }
        t.starts_with("#[test]")
            || (t.starts_with("#[") && t.split(']').next().is_some_and(|a| a.ends_with("::test")))
    };
    let mut i = 0;
    while i < masked_lines.len() {
        let t = masked_lines[i].trim_start();
        if test_attr(t) {
            // The attributes right above the test attribute are the item's too
            // (`#[should_panic]` over `#[test]` inverts the test).
            let mut first = i;
            while first > 0 && {
                let a = masked_lines[first - 1].trim();
                a.starts_with("#[") && a.ends_with(']')
            } {
                first -= 1;
            }
            let mut depth: i64 = 0;
            let mut opened = false;
            let mut end = i;
            'scan: for (j, l) in masked_lines.iter().enumerate().skip(i) {
                let from = if j == i { t.len().min(l.len()) } else { 0 };
                let body = if j == i { &l[l.len() - from..] } else { l };
                for ch in body.chars() {
                    match ch {
                        '{' => {
                            depth += 1;
                            opened = true;
                        }
                        '}' => depth -= 1,
                        ';' if !opened => {
                            end = j;
                            break 'scan;
                        }
                        _ => {}
                    }
                    if opened && depth == 0 {
                        end = j;
                        break 'scan;
                    }
                }
                end = j;
            }
            out.push((first + 1, end + 1, "#[cfg(test)] item"));
            i = end + 1;
            continue;
        }
        i += 1;
    }
    // Doctests: code fences inside doc comments, line (`///`, `//!`) or block
    // (`/** … */`, `/*! … */`, a leading `*` on inner lines allowed), or doc
    // attributes (`#[doc = "```"]`, over several lines or with `\n` escapes: a third
    // fresh review edited a doctest written as `#[doc = "…"]` lines).
    let mut fence_start: Option<usize> = None;
    let mut in_block = false;
    let mut in_attr = false;
    for (n, l) in lines.iter().enumerate() {
        if let Some(parts) = doc_attribute_text(l, &mut in_attr) {
            for d in parts {
                let d = d.trim_start();
                match fence_start {
                    None if d.starts_with("```") => {
                        fence_start = Some(if rust_fence(d) { n } else { usize::MAX });
                    }
                    Some(s) if d.starts_with("```") => {
                        if s != usize::MAX {
                            out.push((s + 1, n + 1, "doctest"));
                        }
                        fence_start = None;
                    }
                    _ => {}
                }
            }
            continue;
        }
        let t = l.trim_start();
        let block_line = if in_block {
            if t.contains("*/") {
                in_block = false;
            }
            Some(t.split("*/").next().unwrap_or(t))
        } else if let Some(rest) = t
            .strip_prefix("/**")
            .filter(|r| !r.starts_with('*') && !r.starts_with('/'))
            .or_else(|| t.strip_prefix("/*!"))
        {
            in_block = !rest.contains("*/");
            Some(rest.split("*/").next().unwrap_or(rest))
        } else {
            None
        };
        let doc = t
            .strip_prefix("///")
            .or_else(|| t.strip_prefix("//!"))
            .or_else(|| block_line.map(|b| b.trim_start().strip_prefix('*').unwrap_or(b)))
            .map(str::trim_start);
        match (doc, fence_start) {
            (Some(d), None) if d.starts_with("```") => {
                fence_start = Some(if rust_fence(d) { n } else { usize::MAX });
            }
            (Some(d), Some(s)) if d.starts_with("```") => {
                if s != usize::MAX {
                    out.push((s + 1, n + 1, "doctest"));
                }
                fence_start = None;
            }
            (None, Some(_)) => fence_start = None,
            _ => {}
        }
    }
    out.sort_unstable();
    out
}

/// True when a doc comment's opening fence (```` ```rust ````, ```` ``` ````,
/// ```` ```should_panic ````) starts a block rustdoc runs.
fn rust_fence(d: &str) -> bool {
    let lang = d.trim_start_matches('`').trim();
    lang.is_empty()
        || lang.starts_with("rust")
        || lang.contains("should_panic")
        || lang.contains("no_run")
        || lang.contains("compile_fail")
        || lang.contains("edition")
}

/// The documentation text of a source line that is (part of) a doc attribute with a
/// string literal, `#[doc = "…"]` or `#![doc = r#"…"#]`, split at `\n` escapes;
/// `None` for any other line. `in_attr` carries a literal that spans lines.
fn doc_attribute_text(line: &str, in_attr: &mut bool) -> Option<Vec<String>> {
    let t = line.trim_start();
    let body = if *in_attr {
        t
    } else {
        let rest = t.strip_prefix("#!").or_else(|| t.strip_prefix('#'))?;
        let rest = rest.trim_start().strip_prefix('[')?.trim_start();
        let rest = rest.strip_prefix("doc")?.trim_start().strip_prefix('=')?;
        let rest = rest.trim_start();
        let rest = rest
            .strip_prefix('r')
            .unwrap_or(rest)
            .trim_start_matches('#');
        let literal = rest.strip_prefix('"')?;
        *in_attr = true;
        literal
    };
    let text = match body.find("\"]").or_else(|| body.find("\"#")) {
        Some(i) => {
            *in_attr = false;
            &body[..i]
        }
        None => body,
    };
    Some(text.split("\\n").map(str::to_string).collect())
}

fn python_doctests(src: &str) -> Vec<(usize, usize, &'static str)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut last = 0;
    for (n, l) in src.lines().enumerate() {
        let t = l.trim();
        let in_example = start.is_some();
        if t.starts_with(">>>") {
            if start.is_none() {
                start = Some(n);
            }
            last = n;
        } else if in_example && !t.is_empty() && !t.starts_with("\"\"\"") && !t.starts_with("'''") {
            // Continuation (`...`) or expected output.
            last = n;
        } else if let Some(s) = start.take() {
            out.push((s + 1, last + 1, "doctest"));
        }
    }
    if let Some(s) = start {
        out.push((s + 1, last + 1, "doctest"));
    }
    out
}

mod globbed;
mod grown;
mod run_by_tests;

pub use globbed::{globbed_files, listed_data};
pub use run_by_tests::{built_or_run, is_source_code, py_imported_files, run_checkers};

#[cfg(test)]
mod tests;
