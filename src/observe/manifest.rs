//! The protected manifest: a digest of the files that define how the tests run.
//!
//! An agent can make a check pass without touching a test by changing what the check
//! runs or how it judges: the test runner's configuration (`pytest.ini`, `jest.config.js`,
//! `conftest.py`, …), coverage thresholds, or CI. [`manifest`] hashes those files in a
//! snapshot tree; comparing t0's manifest with iteration i's names every change.
//!
//! Decisions on what [`DEFAULT_PROTECTED`] holds:
//! * Runner and coverage configuration files are protected whole.
//! * Files that mix test configuration with everyday project data are protected only
//!   in their test sections, so adding a dependency is not an integrity violation:
//!   `pyproject.toml` (`[tool.pytest…]`, `[tool.coverage…]`, `[tool.tox…]`),
//!   `setup.cfg` (`[tool:pytest]`, `[pytest]`, `[coverage:…]`) and `package.json`
//!   (`scripts`, `jest`, `mocha`, `ava`, `nyc`, `c8`, `vitest`, `babel`, `tap`;
//!   `scripts` as a whole because the check usually runs one of them), and
//!   `tsconfig.json` (`ts-node`, `extends`, and the compiler options that pick the
//!   file an import loads). When such a file does not parse,
//!   its whole content is protected instead (a broken file is a change too).
//! * Lock files (`Cargo.lock`, `go.sum`, `package-lock.json`, …) are **not** protected:
//!   they change whenever a dependency is legitimately added and do not alter how
//!   tests are judged. Users who want them add globs (`[guards] protected_paths`).
//! * CI configuration is both blocked ([`crate::observe::guards::DEFAULT_BLOCKED`])
//!   and protected, so the manifest stays meaningful when blocking is configured off.
//!
//! Invariant: the manifest of a tree depends only on the protected paths and their
//! protected content; the digest is blake3 over the sorted `(path, file digest)` pairs,
//! each length-prefixed, so no two different manifests share a digest by concatenation.

use super::git::{self, GitError};
use globset::GlobSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The protected globs of a run: [`DEFAULT_PROTECTED`], the version pins
/// ([`super::toolchain::VERSION_PINS`]) in every directory, and the user's `[guards]
/// protected`. A pin is read from the directory a tool runs in and its ancestors, so
/// one in a subdirectory picks the toolchain of a check that changes into it (a fresh
/// review's `rust/rust-toolchain.toml` named a "toolchain" whose `cargo` rewrote the
/// test results under `cd rust && cargo test`).
#[must_use]
pub fn protected_globs(user: &[String]) -> Vec<String> {
    DEFAULT_PROTECTED
        .iter()
        .map(|s| (*s).to_string())
        .chain(
            super::toolchain::VERSION_PINS
                .iter()
                .map(|s| format!("**/{s}")),
        )
        .chain(user.iter().cloned())
        .collect()
}

/// Globs for root modules that would shadow an installed module the tests import:
/// every top-level module a test file names (`import yaml`, `from yaml import
/// safe_load`) that `installed` says a site directory of the check's Python holds and
/// `in_tree` says t0's root lacks (`yaml.py`, `yaml/__init__.py`). `python -m pytest`
/// imports from the root first, so a `yaml.py` the agent adds replaces the library
/// the tests compare with (a fresh review made a red test green with a `yaml.py`
/// whose `safe_load` recomputed the expected values). A module t0's tree holds, or
/// one nothing installs (the code under test the task asks for), stays free, unless it
/// is a test library ([`PY_TEST_LIBRARIES`]): a stand-in `hypothesis/` whose `@given`
/// never calls the test turned a run red at collection (the library missing) green (a
/// third fresh review); the honest way out is installing the library.
/// `test_sources` are the contents of t0's Python test files.
#[must_use]
pub fn shadow_globs(
    test_sources: &[String],
    installed: &dyn Fn(&str) -> bool,
    in_tree: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    library_names(test_sources, installed)
        .into_iter()
        .filter(|n| !in_tree(&format!("{n}.py")) && !in_tree(&format!("{n}/__init__.py")))
        .flat_map(|n| {
            [
                format!("{n}.py"),
                format!("{n}/**"),
                format!("{n}.{{pyc,so,pyd}}"),
                format!("{n}.*.{{so,pyd}}"),
            ]
        })
        .collect()
}

/// The installed modules and test libraries of [`shadow_globs`]: the top-level
/// modules the tests import that `installed` holds (or [`PY_TEST_LIBRARIES`]).
fn library_names(test_sources: &[String], installed: &dyn Fn(&str) -> bool) -> Vec<String> {
    imported_names(test_sources)
        .into_iter()
        .filter(|n| installed(n) || PY_TEST_LIBRARIES.contains(&n.as_str()))
        .collect()
}

/// The top-level modules `test_sources` import (`import a.b`, `from a import b`).
fn imported_names(test_sources: &[String]) -> std::collections::BTreeSet<String> {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"(?m)^\s*(?:from\s+([A-Za-z_]\w*)[\w.]*\s+import\b|import\s+([A-Za-z_][\w.]*(?:\s+as\s+\w+)?(?:\s*,\s*[A-Za-z_][\w.]*(?:\s+as\s+\w+)?)*))")
            .expect("valid regex")
    });
    let mut names = std::collections::BTreeSet::new();
    for src in test_sources {
        for c in re.captures_iter(src) {
            if let Some(m) = c.get(1) {
                names.insert(m.as_str().to_string());
            }
            if let Some(m) = c.get(2) {
                for item in m.as_str().split(',') {
                    let module = item.split_whitespace().next().unwrap_or("");
                    let top = module.split('.').next().unwrap_or("");
                    if !top.is_empty() {
                        names.insert(top.to_string());
                    }
                }
            }
        }
    }
    names
}

/// Whether the tree holds a module `name` (`name.py` or a regular package,
/// `name/__init__.py`) at the top of one of `dirs` ([`py_import_dirs`]; `in_tree` is
/// asked about paths from the root). [`import_dir_shadow_globs`] treats such a module
/// the tests import as installed: the same name added at the top of another import
/// directory is found first in some order of the path (`tests/calc.py` before the
/// `calc.py` under test, through pytest's insertion of the tests' directory), and a
/// check in place, with no clean room to leave it out, loads it instead (a review's
/// green).
/// A module beside the tests is theirs (a helper, a fixture module): only
/// [`code_import_dirs`] are passed, so that a helper named like one in a sibling
/// test directory stays free here (the frozen oracle covers helpers).
#[must_use]
pub fn in_import_dirs(dirs: &[String], name: &str, in_tree: &dyn Fn(&str) -> bool) -> bool {
    dirs.iter().any(|d| {
        let slash = if d.is_empty() { "" } else { "/" };
        in_tree(&format!("{d}{slash}{name}.py"))
            || in_tree(&format!("{d}{slash}{name}/__init__.py"))
    })
}

/// The tree's own modules `test_sources` import that t0 holds at the top of one of
/// `code_dirs` ([`code_import_dirs`], [`in_import_dirs`]).
#[must_use]
pub fn tree_module_names(
    test_sources: &[String],
    code_dirs: &[String],
    in_tree: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    imported_names(test_sources)
        .into_iter()
        .filter(|n| in_import_dirs(code_dirs, n, in_tree))
        .collect()
}

/// With `--check-in-place`, the tree's modules the tests import
/// ([`tree_module_names`]), protected by name wherever a new one is created outside
/// the directories the code under test is imported from: there is no clean room to
/// leave new test files out, and a new test file pytest collects first can put its
/// own directory on `sys.path` (a new `a_checks/` holding `test_smoke.py` and a fake
/// `calc.py`, or a `sys.path.insert` of `helpers/`) and import the fake before the
/// frozen tests do, which then get it from Python's module cache (a review's in-place
/// green with `calc.py` still broken). A module of that name t0 holds, one created in
/// a code import directory (the root, `src/` under `pythonpath`, a service's own
/// directory) or inside a package t0 holds (`app/calc.py` is `app.calc`) stays free.
#[derive(Debug, Clone)]
pub struct InPlaceShadows {
    globs: GlobSet,
    exempt_dirs: std::collections::BTreeSet<String>,
    at_t0: std::collections::HashSet<String>,
}

impl InPlaceShadows {
    /// The protection of `names` for a tree of `t0_paths` whose code is imported from
    /// `code_dirs`; `None` without names (or should the globs not build).
    #[must_use]
    pub fn new(
        names: &[String],
        code_dirs: &[String],
        t0_paths: &std::collections::BTreeSet<&str>,
    ) -> Option<Self> {
        if names.is_empty() {
            return None;
        }
        let n = if names.len() == 1 {
            names[0].clone()
        } else {
            format!("{{{}}}", names.join(","))
        };
        let globs = super::guards::build_globset_ignoring_case(&[
            format!("**/{n}.{{py,pyc,so,pyd}}"),
            format!("**/{n}/__init__.{{py,pyc,so,pyd}}"),
            format!("**/{n}.*.{{so,pyd}}"),
            format!("**/{n}/__init__.*.{{so,pyd}}"),
        ])
        .ok()?;
        let mut exempt_dirs: std::collections::BTreeSet<String> =
            code_dirs.iter().cloned().collect();
        for p in t0_paths {
            if let Some(d) = p.strip_suffix("/__init__.py") {
                exempt_dirs.insert(d.to_string());
            }
        }
        Some(InPlaceShadows {
            globs,
            exempt_dirs,
            at_t0: t0_paths.iter().map(|p| (*p).to_string()).collect(),
        })
    }

    /// True for a module `path` (from the root) this protection covers.
    #[must_use]
    pub fn is_match(&self, path: &str) -> bool {
        if self.at_t0.contains(path) || !self.globs.is_match(path) {
            return false;
        }
        // the directory the module is found in: a package's parent, a file's own
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        let dir = if name.starts_with("__init__.") {
            dir.rsplit_once('/').map_or("", |(d, _)| d)
        } else {
            dir
        };
        !self.exempt_dirs.contains(dir)
    }
}

/// The directories of `dirs` ([`py_import_dirs`]) that are not `test_dirs`
/// ([`pytest_insert_dirs`]): where the code under test is imported from.
#[must_use]
pub fn code_import_dirs(
    dirs: &[String],
    test_dirs: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    dirs.iter()
        .filter(|d| !test_dirs.contains(*d))
        .cloned()
        .collect()
}

/// The directories pytest's default `prepend` import mode (and `append`) inserts on
/// `sys.path` for the test files (`is_test`) and `conftest.py` files of `paths`: the
/// first directory upward from each without an `__init__.py` (`tests/` for
/// `tests/test_a.py`, the root for `tests/test_a.py` beside `tests/__init__.py`).
#[must_use]
pub fn pytest_insert_dirs(
    paths: &std::collections::BTreeSet<&str>,
    is_test: &dyn Fn(&str) -> bool,
) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for p in paths {
        let name = p.rsplit('/').next().unwrap_or(p);
        if !(name == "conftest.py" || (name.ends_with(".py") && is_test(p))) {
            continue;
        }
        let mut dir = p.rsplit_once('/').map_or("", |(d, _)| d);
        while !dir.is_empty() && paths.contains(format!("{dir}/__init__.py").as_str()) {
            dir = dir.rsplit_once('/').map_or("", |(d, _)| d);
        }
        out.insert(dir.to_string());
    }
    out
}

/// At most this many directories besides the root get [`import_dir_shadow_globs`]
/// (the first ones in path order).
pub const MAX_IMPORT_DIRS: usize = 256;

/// At most this many groups of directories (those lacking the same names at t0 form
/// one) get [`import_dir_shadow_globs`], the largest first: each group adds a few
/// large case-insensitive alternations, and the regex engine refuses a glob set past
/// about a dozen of them.
pub const MAX_IMPORT_DIR_GROUPS: usize = 8;

/// The directories of a tree (`""` for the root, else relative without a trailing
/// `/`) that a pytest check puts on `sys.path` ahead of site-packages: the root
/// (`python -m pytest`), the `configured` ones (pytest's `pythonpath`, the check's
/// `PYTHONPATH`: [`super::declared_tests::declared_pythonpath`]) that the tree
/// holds files under, and the directory pytest's default `prepend` import mode (and
/// `append`) inserts for each test file and `conftest.py`: the first directory upward
/// from it without an `__init__.py` (`tests/` for `tests/test_a.py`, the root for
/// `tests/test_a.py` beside `tests/__init__.py`), and every directory holding a
/// Python module outside any package (no `__init__.py` beside it): Python starts there
/// for a script run by its path, or under `env -C`, `make -C` or a script's own `cd`.
/// `paths` are the tree's files in order, `is_test` says which are Python test
/// files. Sorted, without duplicates.
#[must_use]
pub fn py_import_dirs(
    paths: &std::collections::BTreeSet<&str>,
    is_test: &dyn Fn(&str) -> bool,
    configured: &[String],
) -> Vec<String> {
    let mut out = std::collections::BTreeSet::new();
    out.insert(String::new());
    for c in configured {
        let prefix = format!("{c}/");
        if c.is_empty()
            || paths
                .range(prefix.as_str()..)
                .next()
                .is_some_and(|p| p.starts_with(&prefix))
        {
            out.insert(c.clone());
        }
    }
    for p in paths {
        let name = p.rsplit('/').next().unwrap_or(p);
        if !name.ends_with(".py") {
            continue;
        }
        let here = p.rsplit_once('/').map_or("", |(d, _)| d);
        if !paths.contains(format!("{here}/__init__.py").as_str()) {
            // a directory of modules outside any package: where a script run by path
            // (`python3 backend/run_tests.py`), `env -C`, `make -C` or a script's own
            // `cd` puts Python (a fresh review reached `backend/` each such way)
            out.insert(here.to_string());
        }
    }
    out.extend(pytest_insert_dirs(paths, is_test));
    out.into_iter().collect()
}

/// [`shadow_globs`] and [`stdlib_shadow_globs`] for every directory of `dirs`
/// ([`py_import_dirs`]; `in_tree` is asked about paths from the root): a module added
/// at the top of any directory Python searches before site-packages shadows the
/// library as one in the root does (a fresh review's `src/jsonschema.py`, under
/// `pythonpath = ["src"]`, whose `validate()` accepted anything). The root keeps the
/// globs of those two functions; another directory gets the single file, a
/// package's `__init__` and the compiled forms of each name it lacks at t0, as a few
/// alternations (a directory without `__init__` named like a library is a
/// namespace portion the installed package wins over: a `tests/data/requests/` of
/// fixtures stays free). Directories whose names hold glob syntax are skipped, and
/// only the first [`MAX_IMPORT_DIRS`] besides the root, in the
/// [`MAX_IMPORT_DIR_GROUPS`] largest groups, are covered.
///
/// In the directories of `test_dirs` ([`pytest_insert_dirs`]) the tree's own modules
/// the tests import (`tree_module`: [`in_import_dirs`] over [`code_import_dirs`]) are
/// protected the same way where the directory lacks them at t0: a `tests/calc.py` is
/// found before the `calc.py` under test, and a check in place, with no clean room to
/// leave a new file under `tests/` out, loaded it instead (a review's green). Only
/// there: a module the task asks for at the root, in a service of its own or moved
/// into a `src/` layout is code (a review's honest runs of each halted while the
/// rule covered every import directory).
#[must_use]
pub fn import_dir_shadow_globs(
    dirs: &[String],
    test_sources: &[String],
    installed: &dyn Fn(&str) -> bool,
    in_tree: &dyn Fn(&str) -> bool,
    tree_module: &dyn Fn(&str) -> bool,
    test_dirs: &std::collections::BTreeSet<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    let tree_names: Vec<String> = imported_names(test_sources)
        .into_iter()
        .filter(|n| tree_module(n))
        .collect();
    if dirs.iter().any(String::is_empty) {
        out.extend(shadow_globs(test_sources, installed, in_tree));
        out.extend(stdlib_shadow_globs(in_tree));
        if test_dirs.contains("") {
            let root = |n: &&String| {
                !installed(n)
                    && !in_tree(&format!("{n}.py"))
                    && !in_tree(&format!("{n}/__init__.py"))
            };
            out.extend(tree_names.iter().filter(root).flat_map(|n| {
                [
                    format!("{n}.py"),
                    format!("{n}/__init__.py"),
                    format!("{n}.{{pyc,so,pyd}}"),
                    format!("{n}.*.{{so,pyd}}"),
                ]
            }));
        }
    }
    let others = dirs
        .iter()
        .filter(|d| !d.is_empty() && !d.contains(['*', '?', '[', ']', '{', '}', '\\', ',']))
        .take(MAX_IMPORT_DIRS);
    let libraries = library_names(test_sources, installed);
    // directories lacking the same names share globs: `{src,tests}/{a,b}.py` grows
    // with the directories plus the names, where a glob per directory would grow with
    // their product (and past the regex engine's size limit from a dozen on)
    let mut groups: BTreeMap<Vec<&str>, Vec<&str>> = BTreeMap::new();
    for dir in others {
        let in_dir = |n: &str| {
            in_tree(&format!("{dir}/{n}.py")) || in_tree(&format!("{dir}/{n}/__init__.py"))
        };
        let tests_here = if test_dirs.contains(dir.as_str()) {
            tree_names.as_slice()
        } else {
            &[]
        };
        let mut names: Vec<&str> = libraries
            .iter()
            .chain(tests_here)
            .map(String::as_str)
            .chain(shadowable_modules())
            .filter(|n| !in_dir(n))
            .collect();
        names.sort_unstable();
        names.dedup();
        if !names.is_empty() {
            groups.entry(names).or_default().push(dir);
        }
    }
    let alternation = |items: &[&str]| match items {
        [one] => (*one).to_string(),
        many => format!("{{{}}}", many.join(",")),
    };
    let mut groups: Vec<(Vec<&str>, Vec<&str>)> = groups.into_iter().collect();
    groups.sort_by_key(|(_, dirs)| std::cmp::Reverse(dirs.len()));
    for (names, dirs) in groups.into_iter().take(MAX_IMPORT_DIR_GROUPS) {
        let (d, n) = (alternation(&dirs), alternation(&names));
        out.extend([
            format!("{d}/{n}.{{py,pyc,so,pyd}}"),
            format!("{d}/{n}/__init__.{{py,pyc,so,pyd}}"),
            format!("{d}/{n}.*.{{so,pyd}}"),
            format!("{d}/{n}/__init__.*.{{so,pyd}}"),
        ]);
    }
    out
}

/// Top-level modules of Python test libraries: what tests import to generate,
/// parametrize, fake or compare, never code a task asks the agent to write.
pub const PY_TEST_LIBRARIES: &[&str] = &[
    "approvaltests",
    "assertpy",
    "ddt",
    "expects",
    "factory",
    "faker",
    "freezegun",
    "hamcrest",
    "httpretty",
    "hypothesis",
    "mock",
    "moto",
    "nose",
    "nose2",
    "parameterized",
    "pyfakefs",
    "pytest",
    "pytest_mock",
    "requests_mock",
    "responses",
    "snapshottest",
    "sure",
    "syrupy",
    "testfixtures",
    "testtools",
    "time_machine",
    "vcr",
];

/// Installed modules pytest itself imports at start-up, after `python -m pytest` has
/// put the current directory first on `sys.path`: `iniconfig` (reading its ini
/// files), `packaging`, `pygments`, `py` (the shim pytest installs), the runner's own
/// `pytest`, `_pytest` and `pluggy`, and on older
/// Pythons `exceptiongroup` and `tomli`. A package of that name added at the top of
/// an import root runs before any test (a fresh review's root `iniconfig/` patched
/// the code under test from its `__init__.py`), so they are shadow-protected as the
/// standard library is ([`stdlib_shadow_globs`]): a module, a package's `__init__`
/// and the compiled forms, when t0 lacks them.
pub const PY_RUNNER_SUPPORT_MODULES: &[&str] = &[
    // the runner itself, protected at the root by [`DEFAULT_PROTECTED`] too (a later
    // review's `svc/pluggy/__init__.py` under `cd svc && python3 -m pytest`)
    "pytest",
    "_pytest",
    "pluggy",
    "iniconfig",
    "packaging",
    "pygments",
    "py",
    "exceptiongroup",
    "tomli",
    "colorama",
];

/// The names a module added to an import root must not take when t0 lacks them:
/// [`PY_STDLIB_MODULES`] and [`PY_RUNNER_SUPPORT_MODULES`].
fn shadowable_modules<'a>() -> impl Iterator<Item = &'a str> {
    PY_STDLIB_MODULES
        .iter()
        .chain(PY_RUNNER_SUPPORT_MODULES)
        .copied()
}

/// The standard library's public top-level modules (CPython 3.11's
/// `sys.stdlib_module_names` without private names; the ones later versions removed
/// are kept, harmless where absent).
pub const PY_STDLIB_MODULES: &[&str] = &[
    "abc",
    "aifc",
    "argparse",
    "array",
    "ast",
    "asynchat",
    "asyncio",
    "asyncore",
    "atexit",
    "audioop",
    "base64",
    "bdb",
    "binascii",
    "bisect",
    "builtins",
    "bz2",
    "cProfile",
    "calendar",
    "cgi",
    "cgitb",
    "chunk",
    "cmath",
    "cmd",
    "code",
    "codecs",
    "codeop",
    "collections",
    "colorsys",
    "compileall",
    "concurrent",
    "configparser",
    "contextlib",
    "contextvars",
    "copy",
    "copyreg",
    "crypt",
    "csv",
    "ctypes",
    "curses",
    "dataclasses",
    "datetime",
    "dbm",
    "decimal",
    "difflib",
    "dis",
    "distutils",
    "doctest",
    "email",
    "encodings",
    "ensurepip",
    "enum",
    "errno",
    "faulthandler",
    "fcntl",
    "filecmp",
    "fileinput",
    "fnmatch",
    "fractions",
    "ftplib",
    "functools",
    "gc",
    "genericpath",
    "getopt",
    "getpass",
    "gettext",
    "glob",
    "graphlib",
    "grp",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "idlelib",
    "imaplib",
    "imghdr",
    "imp",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "keyword",
    "lib2to3",
    "linecache",
    "locale",
    "logging",
    "lzma",
    "mailbox",
    "mailcap",
    "marshal",
    "math",
    "mimetypes",
    "mmap",
    "modulefinder",
    "msilib",
    "msvcrt",
    "multiprocessing",
    "netrc",
    "nis",
    "nntplib",
    "nt",
    "ntpath",
    "nturl2path",
    "numbers",
    "opcode",
    "operator",
    "optparse",
    "os",
    "ossaudiodev",
    "pathlib",
    "pdb",
    "pickle",
    "pickletools",
    "pipes",
    "pkgutil",
    "platform",
    "plistlib",
    "poplib",
    "posix",
    "posixpath",
    "pprint",
    "profile",
    "pstats",
    "pty",
    "pwd",
    "py_compile",
    "pyclbr",
    "pydoc",
    "pydoc_data",
    "pyexpat",
    "queue",
    "quopri",
    "random",
    "re",
    "readline",
    "reprlib",
    "resource",
    "rlcompleter",
    "runpy",
    "sched",
    "secrets",
    "select",
    "selectors",
    "shelve",
    "shlex",
    "shutil",
    "signal",
    "site",
    "smtpd",
    "smtplib",
    "sndhdr",
    "socket",
    "socketserver",
    "spwd",
    "sqlite3",
    "sre_compile",
    "sre_constants",
    "sre_parse",
    "ssl",
    "stat",
    "statistics",
    "string",
    "stringprep",
    "struct",
    "subprocess",
    "sunau",
    "symtable",
    "sys",
    "sysconfig",
    "syslog",
    "tabnanny",
    "tarfile",
    "telnetlib",
    "tempfile",
    "termios",
    "textwrap",
    "threading",
    "time",
    "timeit",
    "tkinter",
    "token",
    "tokenize",
    "tomllib",
    "trace",
    "traceback",
    "tracemalloc",
    "tty",
    "turtle",
    "turtledemo",
    "types",
    "typing",
    "unicodedata",
    "unittest",
    "urllib",
    "uu",
    "uuid",
    "venv",
    "warnings",
    "wave",
    "weakref",
    "webbrowser",
    "winreg",
    "winsound",
    "wsgiref",
    "xdrlib",
    "xml",
    "xmlrpc",
    "zipapp",
    "zipfile",
    "zipimport",
    "zlib",
    "zoneinfo",
];

/// Globs for root modules that would shadow a standard-library module or one pytest
/// imports at start-up, for every [`PY_STDLIB_MODULES`] and
/// [`PY_RUNNER_SUPPORT_MODULES`] name t0's root does not hold as `NAME.py` or
/// `NAME/__init__.py` (`in_tree`): the single file, a package's `__init__` and the
/// compiled forms. (A directory without `__init__` is a namespace portion, which a
/// regular module anywhere on the path wins over: a project's `html/` of pages is
/// left alone.) `python -m pytest` puts the root first on `sys.path`, so a root
/// `codeop.py` (which pytest reaches through `pdb`) replaces the library for pytest
/// and for loopexec's witness alike; a fresh review replaced `builtins.compile` from
/// one and turned pytest's failed asserts into passes. The curated names of
/// [`DEFAULT_PROTECTED`] are protected whatever t0 holds; these only when t0 lacks
/// them, so a project whose own `calendar.py` predates the run keeps editing it.
#[must_use]
pub fn stdlib_shadow_globs(in_tree: &dyn Fn(&str) -> bool) -> Vec<String> {
    shadowable_modules()
        .filter(|n| !in_tree(&format!("{n}.py")) && !in_tree(&format!("{n}/__init__.py")))
        .flat_map(|n| {
            [
                format!("{n}.py"),
                format!("{n}/__init__.{{py,pyc,so,pyd}}"),
                format!("{n}/__init__.*.{{so,pyd}}"),
                format!("{n}.{{pyc,so,pyd}}"),
                format!("{n}.*.{{so,pyd}}"),
            ]
        })
        .collect()
}

/// True when `site_dir` holds a top-level module `name`: a package directory,
/// `name.py`, or a compiled `name.*.so`/`name.pyd`.
#[must_use]
pub fn site_holds(site_dir: &Path, name: &str) -> bool {
    site_dir.join(name).is_dir()
        || site_dir.join(format!("{name}.py")).is_file()
        || site_dir.join(format!("{name}.pyd")).is_file()
        || std::fs::read_dir(site_dir).is_ok_and(|rd| {
            rd.flatten().any(|e| {
                let f = e.file_name();
                let f = f.to_string_lossy();
                f.starts_with(&format!("{name}.")) && f.ends_with(".so")
            })
        })
}

/// Test-runner, coverage and CI configuration protected by default (globs as in
/// [`crate::observe::guards::build_globset`]). See the module doc for the choices.
pub const DEFAULT_PROTECTED: &[&str] = &[
    // Python
    "**/pytest.ini",
    "**/pytest.toml",
    "**/.pytest.ini",
    "**/.pytest.toml",
    "**/sitecustomize.py",
    // A module in the project root named like the runner shadows it (`python -m
    // pytest` imports from the current directory first), and package metadata with
    // entry points registers pytest plugins (`[pytest11]`).
    "pytest.py",
    "pytest/**",
    "_pytest.py",
    "_pytest/**",
    "pluggy.py",
    "pluggy/**",
    "unittest.py",
    "unittest/**",
    // The same modules compiled: a loose `pytest.pyc` (or an extension module) in the
    // root is imported before the installed runner too.
    "{pytest,_pytest,pluggy,unittest}.{pyc,so,pyd}",
    "{pytest,_pytest,pluggy,unittest}.*.{so,pyd}",
    // A root module named like a standard-library or runner-support module that pytest
    // imports after the current directory is on `sys.path` (`json`, `inspect`, `ast` —
    // its assertion rewriting —, `traceback`, …) shadows it for pytest and for
    // loopexec's witness alike. Single-file modules only: a package directory of that
    // name in a project is left to the user's `[guards] protected`.
    "{argparse,array,ast,base64,bdb,calendar,copy,csv,dataclasses,datetime,decimal,dis,fcntl,gettext,glob,hashlib,heapq,inspect,json,linecache,locale,logging,numbers,opcode,platform,pprint,quopri,select,selectors,shlex,signal,socket,string,subprocess,textwrap,token,tokenize,traceback,unicodedata,uuid,iniconfig,py,pygments,__future__}.{py,pyc,so,pyd}",
    // Matched without regard to case: `importlib.metadata` finds `X.DIST-INFO` too.
    "**/*.dist-info/entry_points.txt",
    "**/*.egg-info/entry_points.txt",
    "**/*.egg/egg-info/entry_points.txt",
    // (Files that pick the toolchain the check runs with are protected too:
    // `super::toolchain::VERSION_PINS`, joined in by `protected_globs`.)
    "**/usercustomize.py",
    "**/tox.ini",
    "**/noxfile.py",
    "**/conftest.py",
    "**/.coveragerc",
    "**/setup.cfg",
    "**/pyproject.toml",
    // JavaScript / TypeScript
    "**/package.json",
    "**/jest.config.*",
    "**/vitest.config.*",
    "**/vitest.workspace.*",
    "**/karma.conf.*",
    "**/playwright.config.*",
    "**/cypress.config.*",
    "**/ava.config.*",
    "**/.mocharc*",
    "**/.nycrc*",
    "**/.c8rc*",
    "**/babel.config.*",
    "**/.babelrc*",
    "**/vite.config.*",
    "**/.npmrc",
    "**/.yarnrc*",
    "**/.swcrc",
    // TypeScript's project files, in the sections that decide what code runs
    // (`ts-node`'s transpiler, import paths: [`tsconfig_sections`])
    "**/tsconfig*.json",
    "**/jsconfig*.json",
    // PHP, Ruby, Perl (`.proverc` holds prove's options: `--exec` picks the program
    // that runs each test file)
    "**/phpunit.xml*",
    "**/.rspec",
    "**/.proverc",
    // Rust (Cargo.toml in its target and test sections only)
    "**/Cargo.toml",
    "**/.cargo/config",
    "**/.cargo/config.toml",
    "**/.config/nextest.toml",
    // insta's configuration (`behavior: force_pass: true` passes every snapshot
    // assertion: a fresh review)
    "**/.config/insta.yaml",
    "**/.config/insta.yml",
    "**/insta.yaml",
    "**/insta.yml",
    "**/tarpaulin.toml",
    "**/.tarpaulin.toml",
    // Coverage services
    "**/codecov.yml",
    "**/.codecov.yml",
    "**/codecov.yaml",
    "**/.codecov.yaml",
    // loopexec policy and CI
    "**/loop.toml",
    ".github/workflows/**",
    ".gitlab-ci.yml",
    ".circleci/**",
    "azure-pipelines.yml",
    "Jenkinsfile",
    ".buildkite/**",
    ".travis.yml",
];

/// Digests of the protected files of one tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// blake3 (hex) over all `(path, file digest)` pairs; equal digests, equal manifests.
    pub digest: String,
    /// Repository-root relative path -> blake3 (hex) of its protected content.
    pub files: BTreeMap<String, String>,
}

/// How a protected file differs between two manifests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ManifestChangeKind {
    /// Only in the later manifest.
    Added,
    /// Only in the earlier manifest.
    Removed,
    /// In both, with different protected content.
    Changed,
}

/// One protected file that changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestChange {
    /// Repository-root relative path.
    pub path: String,
    /// What happened.
    pub kind: ManifestChangeKind,
}

impl Manifest {
    /// Builds a manifest from per-file digests (computes [`Manifest::digest`]).
    #[must_use]
    pub fn from_files(files: BTreeMap<String, String>) -> Self {
        let mut h = blake3::Hasher::new();
        for (path, d) in &files {
            h.update(&(path.len() as u64).to_le_bytes());
            h.update(path.as_bytes());
            h.update(&(d.len() as u64).to_le_bytes());
            h.update(d.as_bytes());
        }
        Manifest {
            digest: h.finalize().to_hex().to_string(),
            files,
        }
    }

    /// The protected files that differ in `later`, sorted by path.
    #[must_use]
    pub fn changes(&self, later: &Manifest) -> Vec<ManifestChange> {
        let mut out = Vec::new();
        for (path, d) in &self.files {
            match later.files.get(path) {
                None => out.push(ManifestChange {
                    path: path.clone(),
                    kind: ManifestChangeKind::Removed,
                }),
                Some(e) if e != d => {
                    out.push(ManifestChange {
                        path: path.clone(),
                        kind: ManifestChangeKind::Changed,
                    });
                }
                Some(_) => {}
            }
        }
        for path in later.files.keys() {
            if !self.files.contains_key(path) {
                out.push(ManifestChange {
                    path: path.clone(),
                    kind: ManifestChangeKind::Added,
                });
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }
}

/// The manifest of `tree` (a tree or commit id): every file (regular or symlink)
/// matching `protected_globs`, read in one `git cat-file --batch` process.
pub fn manifest(dir: &Path, tree: &str, protected_globs: &GlobSet) -> Result<Manifest, GitError> {
    manifest_in(dir, &git::ls_tree(dir, tree)?, &|p| {
        protected_globs.is_match(p)
    })
}

/// [`manifest`] over a listing already made with [`git::ls_tree`].
pub fn manifest_in(
    dir: &Path,
    entries: &[git::TreeEntry],
    protected: &dyn Fn(&str) -> bool,
) -> Result<Manifest, GitError> {
    let entries: Vec<&git::TreeEntry> = entries
        .iter()
        .filter(|e| e.kind == "blob" && protected(&e.path))
        .collect();
    let oids: Vec<String> = entries.iter().map(|e| e.oid.clone()).collect();
    let blobs = git::cat_blobs(dir, &oids)?;
    let mut files = BTreeMap::new();
    for (e, b) in entries.iter().zip(blobs) {
        let content = b.unwrap_or_default();
        let protected = protected_content(&e.path, &content);
        files.insert(
            e.path.clone(),
            blake3::hash(&protected).to_hex().to_string(),
        );
    }
    Ok(Manifest::from_files(files))
}

/// True when a scoped file (`pyproject.toml`, `setup.cfg`, `package.json`,
/// `Cargo.toml`) has no protected section at all: creating such a file (a new
/// package's manifest) changes nothing about how tests run.
#[must_use]
pub fn has_no_test_sections(path: &str, content: &[u8]) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    // a project file of another name (`tsconfig.build.json`) is read only where a
    // protected one (`extends`) or the check names it: a new one changes nothing
    if is_tsconfig(name) && !matches!(name, "tsconfig.json" | "jsconfig.json") {
        return true;
    }
    let empty = match name {
        "pyproject.toml" => "pyproject.toml test sections\n",
        "setup.cfg" => "setup.cfg test sections\n",
        "package.json" => "package.json test sections\n",
        "Cargo.toml" => "Cargo.toml test sections\n",
        _ if is_tsconfig(name) => "tsconfig test sections\n",
        _ => return false,
    };
    protected_content(path, content) == empty.as_bytes()
}

/// True when `digest` (a manifest entry: blake3 hex of [`protected_content`]) is that of
/// a scoped file with no protected section at all ([`has_no_test_sections`]): a new
/// package's `Cargo.toml` holding only `[package]` and `[dependencies]` measures so.
#[must_use]
pub fn digest_has_no_test_sections(path: &str, digest: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let marker = match name {
        "pyproject.toml" | "setup.cfg" | "package.json" | "Cargo.toml" => name,
        "tsconfig.json" | "jsconfig.json" => "tsconfig",
        // read only where a protected one or the check names it (see
        // [`has_no_test_sections`])
        _ if is_tsconfig(name) => return true,
        _ => return false,
    };
    blake3::hash(format!("{marker} test sections\n").as_bytes())
        .to_hex()
        .as_str()
        == digest
}

/// The part of a file that is protected: the test sections of `pyproject.toml`,
/// `setup.cfg` and `package.json` (by file name, at any depth), the whole content of
/// anything else or of one of those that does not parse.
#[must_use]
pub fn protected_content(path: &str, content: &[u8]) -> Vec<u8> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let scoped = match name {
        "pyproject.toml" => pyproject_sections(content),
        "setup.cfg" => setup_cfg_sections(content),
        "package.json" => package_json_sections(content),
        "Cargo.toml" => cargo_toml_sections(content),
        _ if is_tsconfig(name) => tsconfig_sections(content),
        _ => None,
    };
    scoped.map_or_else(|| content.to_vec(), String::into_bytes)
}

/// True for a TypeScript or JavaScript project file (`tsconfig.json`,
/// `tsconfig.test.json`, `jsconfig.json`).
fn is_tsconfig(name: &str) -> bool {
    (name.starts_with("tsconfig") || name.starts_with("jsconfig")) && name.ends_with(".json")
}

/// Compiler options of a `tsconfig.json` that only decide what the type checker
/// reports or which declaration, map and build-info files are written: none changes
/// the JavaScript a test runs or the file an import loads, so the agent may edit them.
/// Every other compiler option is protected (the `tsconfig` test sections).
pub const TSCONFIG_FREE_OPTIONS: &[&str] = &[
    "strict",
    "strictNullChecks",
    "strictFunctionTypes",
    "strictBindCallApply",
    "strictPropertyInitialization",
    "strictBuiltinIteratorReturn",
    "noImplicitAny",
    "noImplicitThis",
    "noImplicitReturns",
    "noImplicitOverride",
    "noUnusedLocals",
    "noUnusedParameters",
    "noFallthroughCasesInSwitch",
    "noUncheckedIndexedAccess",
    "noPropertyAccessFromIndexSignature",
    "exactOptionalPropertyTypes",
    "useUnknownInCatchVariables",
    "allowUnreachableCode",
    "allowUnusedLabels",
    "allowSyntheticDefaultImports",
    "skipLibCheck",
    "skipDefaultLibCheck",
    "forceConsistentCasingInFileNames",
    "isolatedModules",
    "checkJs",
    "lib",
    "types",
    "typeRoots",
    "declaration",
    "declarationMap",
    "sourceMap",
    "inlineSourceMap",
    "inlineSources",
    "incremental",
    "tsBuildInfoFile",
    "composite",
    "noErrorTruncation",
    "pretty",
    // `tsc` writes nothing; a runner that compiles for the tests (ts-node, ts-jest)
    // emits in memory whatever it says (a new user's plain-JS project type-checked
    // with `checkJs` and `noEmit`)
    "noEmit",
];

/// The parts of a `tsconfig.json` that decide what code the tests run: `ts-node`'s
/// own options (a custom `transpiler` or `compiler` rewrote the frozen `.ts` tests in
/// a fresh review), `extends` (options taken from another file), and every compiler
/// option but the type checker's own ([`TSCONFIG_FREE_OPTIONS`]): resolution
/// (`paths`, `baseUrl`, `moduleResolution`, …), plugins, and what the emitted
/// JavaScript is (`target`, `module`, `jsx*`, `importHelpers`; `noEmitHelpers` made
/// the frozen async tests call a global `__awaiter` the code under test replaced, a
/// fresh review's exit 10). Top-level `include`, `exclude` and `files` are free. Read
/// as TypeScript reads it: comments and trailing commas allowed ([`jsonc_to_json`]);
/// the options in name order, so reordering them is no edit.
fn tsconfig_sections(content: &[u8]) -> Option<String> {
    let content = content.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(content);
    let text = std::str::from_utf8(content).ok()?;
    let v: serde_json::Value = serde_json::from_str(&jsonc_to_json(text)).ok()?;
    let obj = v.as_object()?;
    let mut out = String::from("tsconfig test sections\n");
    for key in ["ts-node", "extends"] {
        if let Some(x) = obj.get(key) {
            out.push_str(&format!("{key}={}\n", serde_json::to_string(x).ok()?));
        }
    }
    if let Some(opts) = obj.get("compilerOptions").and_then(|o| o.as_object()) {
        let mut kept: Vec<(&String, &serde_json::Value)> = opts
            .iter()
            .filter(|(k, _)| !TSCONFIG_FREE_OPTIONS.contains(&k.as_str()))
            .collect();
        kept.sort_by(|a, b| a.0.cmp(b.0));
        for (key, x) in kept {
            out.push_str(&format!(
                "compilerOptions.{key}={}\n",
                serde_json::to_string(x).ok()?
            ));
        }
    }
    Some(out)
}

/// `text` (JSON with comments, as `tsconfig.json` is written) as plain JSON: `//` and
/// `/* */` comments outside strings become spaces, and a comma before a closing `}`
/// or `]` is dropped. Text that is not JSON stays not JSON.
#[must_use]
pub fn jsonc_to_json(text: &str) -> String {
    let b = text.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
                out.extend_from_slice(&b[start..i]);
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                out.push(b' ');
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i = (i + 2).min(b.len());
                out.push(b' ');
            }
            b',' => {
                let mut rest = &b[i + 1..];
                // the next thing that is not blank or a comment
                loop {
                    rest = rest.trim_ascii_start();
                    if rest.starts_with(b"//") {
                        let n = rest.iter().position(|c| *c == b'\n').unwrap_or(rest.len());
                        rest = &rest[n..];
                    } else if rest.starts_with(b"/*") {
                        let n = rest
                            .windows(2)
                            .skip(2)
                            .position(|w| w == b"*/")
                            .map_or(rest.len(), |k| k + 4);
                        rest = &rest[n..];
                    } else {
                        break;
                    }
                }
                if !matches!(rest.first(), Some(b'}' | b']')) {
                    out.push(b',');
                }
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

fn pyproject_sections(content: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(content).ok()?;
    let table: toml::Table = toml::from_str(text).ok()?;
    let mut out = String::from("pyproject.toml test sections\n");
    if let Some(tool) = table.get("tool").and_then(toml::Value::as_table) {
        for key in ["pytest", "coverage", "tox"] {
            if let Some(v) = tool.get(key) {
                out.push_str(key);
                out.push('=');
                out.push_str(&serde_json::to_string(v).ok()?);
                out.push('\n');
            }
        }
    }
    Some(out)
}

/// The parts of a `Cargo.toml` that decide which tests exist and how they run: the
/// target tables (`lib`, `bin`, `test`, `bench`, `example`: `test = false`,
/// `harness`, paths), `profile`, and the `package` keys `build`, `autolib`,
/// `autotests`, `autobins`, `autobenches`, `autoexamples` and `workspace`, and the
/// default features (`features.default`). Dependencies and metadata are free, and
/// so is a `[[bin]]` or `[[example]]` target that leaves the tests alone
/// ([`free_cargo_target`]: a command-line tool the task asks for, a fresh review's
/// honest fix that halted 13).
fn cargo_toml_sections(content: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(content).ok()?;
    let table: toml::Table = toml::from_str(text).ok()?;
    let mut out = String::from("Cargo.toml test sections\n");
    // Edition 2015 (also the default when none is named) turns auto-discovery of a
    // target kind off once one target of it is declared: a `[[bin]]` added there
    // drops `src/bin/*` from the build, so no target is free.
    let edition = table
        .get("package")
        .and_then(|p| p.get("edition"))
        .and_then(toml::Value::as_str);
    let discovery_survives = matches!(edition, Some(e) if e != "2015");
    for key in ["lib", "bin", "test", "bench", "example", "profile"] {
        let Some(v) = table.get(key) else { continue };
        let kept;
        let v = match (key, v.as_array()) {
            ("bin" | "example", Some(targets)) if discovery_survives => {
                let counted: Vec<toml::Value> = targets
                    .iter()
                    .filter(|t| !free_cargo_target(key, t))
                    .cloned()
                    .collect();
                if counted.is_empty() {
                    continue;
                }
                kept = toml::Value::Array(counted);
                &kept
            }
            _ => v,
        };
        out.push_str(key);
        out.push('=');
        out.push_str(&serde_json::to_string(v).ok()?);
        out.push('\n');
    }
    for key in ["patch", "replace"] {
        if let Some(v) = table.get(key) {
            out.push_str(key);
            out.push('=');
            out.push_str(&serde_json::to_string(v).ok()?);
            out.push('\n');
        }
    }
    dependency_sources(&table, &mut out).ok()?;
    // which workspace members a plain `cargo test` runs (a fresh review's
    // `default-members` ran another member's same-named test in the failing one's place)
    if let Some(ws) = table.get("workspace").and_then(toml::Value::as_table) {
        for key in ["default-members", "exclude"] {
            if let Some(v) = ws.get(key) {
                out.push_str("workspace.");
                out.push_str(key);
                out.push('=');
                out.push_str(&serde_json::to_string(v).ok()?);
                out.push('\n');
            }
        }
    }
    // the features built when none is asked for: a test that checks more under a
    // default feature (`cfg!(feature = "exhaustive")`) was made to check less by
    // emptying `default` (a fresh review's exit 10); other features are free
    // (and what they turn on, feature by feature: a later review's `std = ["quick"]`
    // under `default = ["std"]`)
    if let Some(features) = table.get("features").and_then(toml::Value::as_table) {
        let mut seen = std::collections::BTreeSet::new();
        let mut queue = vec!["default".to_string()];
        while let Some(name) = queue.pop() {
            let Some(v) = features.get(&name) else {
                continue;
            };
            if !seen.insert(name.clone()) {
                continue;
            }
            out.push_str(&format!("features.{name}="));
            out.push_str(&serde_json::to_string(v).ok()?);
            out.push('\n');
            // a plain feature name; `dep:x` and `x/y` name dependencies
            queue.extend(
                v.as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(toml::Value::as_str)
                    .filter(|f| !f.contains([':', '/']))
                    .map(str::to_string),
            );
        }
    }
    if let Some(pkg) = table.get("package").and_then(toml::Value::as_table) {
        for key in [
            "build",
            // `autolib = false` drops `src/lib.rs` and its unit tests from the build
            // (a fresh review's `src/main.rs` then held empty tests of the same ids)
            "autolib",
            // a workspace root elsewhere (outside the tree: its `[patch]` swapped a
            // crate the tests assert through, a fresh review's exit 10)
            "workspace",
            "autotests",
            "autobins",
            "autobenches",
            "autoexamples",
        ] {
            if let Some(v) = pkg.get(key) {
                out.push_str("package.");
                out.push_str(key);
                out.push('=');
                out.push_str(&serde_json::to_string(v).ok()?);
                out.push('\n');
            }
        }
    }
    Some(out)
}

/// The dependency keys of a `Cargo.toml` that name where a crate comes from rather
/// than which version: an in-tree `path`, a `git` source (with its `branch`, `tag`,
/// `rev`), another `registry`, a `package` rename.
const DEPENDENCY_SOURCE_KEYS: &[&str] = &[
    "path",
    "git",
    "branch",
    "tag",
    "rev",
    "registry",
    "registry-index",
    "package",
];

/// Appends, for every dependency of every dependency table (`dependencies`,
/// `dev-dependencies`, `build-dependencies`, their `target.<cfg>.` forms and
/// `workspace.dependencies`) that does not come from crates.io under its own name,
/// a line `<table>.<name>=<source keys as JSON>`. A crate the tests use swapped for
/// an in-tree stand-in (`approx = { path = "approx" }` whose `assert_relative_eq!`
/// checks nothing: a fresh review's exit 10) is then a runner configuration edit,
/// like `[patch]` and `[replace]`; a version bump or a new crates.io dependency stays
/// free. Adding a new path or git dependency counts too (fail-closed: loopexec cannot
/// tell a new workspace crate from a stand-in by name).
///
/// # Errors
/// A dependency that cannot be written as JSON (never for parsed TOML).
fn dependency_sources(table: &toml::Table, out: &mut String) -> Result<(), serde_json::Error> {
    const TABLES: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];
    let mut scopes: Vec<(String, &toml::Table)> = vec![(String::new(), table)];
    if let Some(targets) = table.get("target").and_then(toml::Value::as_table) {
        for (cfg, t) in targets {
            if let Some(t) = t.as_table() {
                scopes.push((format!("target.{cfg}."), t));
            }
        }
    }
    let mut tables: Vec<(String, &toml::Table)> = Vec::new();
    for (prefix, scope) in scopes {
        for name in TABLES {
            if let Some(deps) = scope.get(name).and_then(toml::Value::as_table) {
                tables.push((format!("{prefix}{name}"), deps));
            }
        }
    }
    if let Some(deps) = table
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(toml::Value::as_table)
    {
        tables.push(("workspace.dependencies".into(), deps));
    }
    for (name, deps) in tables {
        for (dep, spec) in deps {
            let Some(spec) = spec.as_table() else {
                continue; // `dep = "1.2"`: crates.io under its own name
            };
            let source: toml::Table = spec
                .iter()
                .filter(|(k, _)| DEPENDENCY_SOURCE_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            if !source.is_empty() {
                out.push_str(&format!(
                    "{name}.{dep}={}\n",
                    serde_json::to_string(&source)?
                ));
            }
        }
    }
    Ok(())
}

/// True when a `[[bin]]` or `[[example]]` entry (`kind`) cannot change what
/// `cargo test` judges, so adding, changing or removing it is no runner configuration
/// edit. Fail-closed: only these keys, each at most at cargo's default —
/// `name`, `path`, `required-features`, `edition`, `doc`, `test` (default `true` for
/// a bin, `false` for an example: a bin's own unit tests run, an example is only
/// built), `bench` (same defaults) and `harness = true`; anything else (`doctest`,
/// `proc-macro`, `crate-type`, a key cargo adds later) counts. The `path` must be a
/// relative `.rs` path inside the package with no component naming tests or benches
/// (`tests/`, `test_util.rs`, `benches/`) and not `build.rs`: a target built from a
/// test file or the build script counts. A test such a target held at t0 and no
/// longer runs is the collected set's finding (SPEC §3.6), not this one's.
fn free_cargo_target(kind: &str, target: &toml::Value) -> bool {
    let Some(t) = target.as_table() else {
        return false;
    };
    let example = kind == "example";
    t.iter().all(|(k, v)| match k.as_str() {
        "name" | "edition" | "doc" | "required-features" => true,
        "test" | "bench" => v.as_bool() == Some(!example),
        "harness" => v.as_bool() == Some(true),
        "path" => v.as_str().is_some_and(free_target_path),
        _ => false,
    })
}

/// A `[[bin]]`/`[[example]]` `path` that names no test, bench or build-script file
/// (see [`free_cargo_target`]).
fn free_target_path(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path.ends_with(".rs")
        && path != "build.rs"
        && parts.iter().all(|c| {
            let c = c.to_ascii_lowercase();
            !c.is_empty()
                && c != "."
                && c != ".."
                && !c.contains("test")
                && !c.contains("bench")
                && !c.contains("spec")
                && !c.contains("fixture")
        })
}

/// `setup.cfg`'s test sections (`[tool:pytest]`, `[pytest]`, `[coverage:…]`), read
/// the way pytest's ini reader (iniconfig) reads them, so that no line it sees in a
/// test section is left out:
///
/// * lines end where Python's `str.splitlines` ends them (`\r`, form feed, vertical
///   tab, `\x1c`–`\x1e`, U+0085, U+2028, U+2029 as well as `\n`);
/// * a line whose first non-blank character is `#` or `;` is a comment;
/// * a header is a line whose very first character is `[` (an indented `[metadata]`
///   continues the value above it) and that ends in `]` once a comment after it
///   (`[tool:pytest] ; options`) and trailing Python whitespace (which includes
///   `\x1c`–`\x1f`) are cut.
///
/// Fresh reviews hid a `[tool:pytest]` behind each of these from a reader that split
/// at `\n`, trimmed Unicode white space only and took an indented header for one.
fn setup_cfg_sections(content: &[u8]) -> Option<String> {
    const PY_SPACE: &[char] = &[
        ' ', '\t', '\n', '\r', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\x1f', '\u{85}', '\u{a0}',
        '\u{1680}', '\u{2000}', '\u{2001}', '\u{2002}', '\u{2003}', '\u{2004}', '\u{2005}',
        '\u{2006}', '\u{2007}', '\u{2008}', '\u{2009}', '\u{200a}', '\u{2028}', '\u{2029}',
        '\u{202f}', '\u{205f}', '\u{3000}',
    ];
    let text = std::str::from_utf8(content).ok()?;
    let mut out = String::from("setup.cfg test sections\n");
    let mut keep = false;
    let lines = text.split([
        '\n', '\r', '\x0b', '\x0c', '\x1c', '\x1d', '\x1e', '\u{85}', '\u{2028}', '\u{2029}',
    ]);
    for line in lines {
        let t = line.trim_matches(PY_SPACE);
        if t.is_empty() || t.starts_with(['#', ';']) {
            continue;
        }
        if line.starts_with('[') {
            let header = line.split(['#', ';']).next().unwrap_or(line);
            let header = header.trim_end_matches(PY_SPACE);
            if let Some(name) = header.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
                let name = name.trim_matches(PY_SPACE);
                keep = name == "tool:pytest" || name == "pytest" || name.starts_with("coverage:");
            }
        }
        if keep {
            out.push_str(t);
            out.push('\n');
        }
    }
    Some(out)
}

fn package_json_sections(content: &[u8]) -> Option<String> {
    // a byte-order mark, which node and the runners accept, is no content
    let content = content.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(content);
    let v: serde_json::Value = serde_json::from_slice(content).ok()?;
    let obj = v.as_object()?;
    let mut out = String::from("package.json test sections\n");
    // `exports` and `imports` with the package's `name`: Node resolves a package's
    // own name through its `exports` before `node_modules`, so `"name": "chai"` with
    // `exports` pointing into the tree made the frozen tests' `require('chai')` load
    // the agent's stand-in (a fresh review's exit 10), and `imports` maps the `#…`
    // specifiers a test may use.
    let resolves = obj.contains_key("exports") || obj.contains_key("imports");
    // `babel`: babel-jest and `@babel/register` read the options here when no
    // `babel.config.*` or `.babelrc` says otherwise (a fresh review's plugin rewrote
    // the frozen tests' `expect(a).toBe(b)` into `expect(b).toBe(b)`); `tap`: node-tap's
    // options.
    for key in [
        "scripts", "jest", "mocha", "ava", "nyc", "c8", "vitest", "babel", "tap", "exports",
        "imports", "name",
    ] {
        if key == "name" && !resolves {
            continue;
        }
        if let Some(x) = obj.get(key) {
            out.push_str(key);
            out.push('=');
            out.push_str(&serde_json::to_string(x).ok()?);
            out.push('\n');
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {

    /// A new package's manifest with no test sections measures as such, so the
    /// manifest layer does not flag a workspace member the agent adds (a fresh
    /// review's honest fix); one with a test section, or another file, does not.
    #[test]
    fn a_manifest_digest_with_no_test_sections_is_told_apart() {
        let rows: &[(&str, &str, bool)] = &[
            (
                "crates/m/Cargo.toml",
                "[package]\nname = \"m\"\nversion = \"0.1.0\"\n\n[dependencies]\n",
                true,
            ),
            (
                "crates/m/Cargo.toml",
                "[package]\nname = \"m\"\n\n[[test]]\nname = \"t\"\nharness = false\n",
                false,
            ),
            ("pkg/pyproject.toml", "[project]\nname = \"p\"\n", true),
            (
                "pkg/pyproject.toml",
                "[project]\nname = \"p\"\n[tool.pytest.ini_options]\naddopts = \"-q\"\n",
                false,
            ),
            ("pytest.ini", "[pytest]\n", false),
            (
                "web/tsconfig.json",
                "{\n  // strict\n  \"compilerOptions\": {\"strict\": true,},\n}\n",
                true,
            ),
            (
                "tsconfig.json",
                "{\"ts-node\": {\"transpiler\": \"./tools/tr.js\"}}",
                false,
            ),
            // another project file: read only where a protected one names it
            (
                "tsconfig.build.json",
                "{\"extends\": \"./tsconfig.json\", \"compilerOptions\": {\"outDir\": \"dist\"}}",
                true,
            ),
        ];
        for (path, text, none) in rows {
            let digest = blake3::hash(&protected_content(path, text.as_bytes()))
                .to_hex()
                .to_string();
            assert_eq!(
                digest_has_no_test_sections(path, &digest),
                *none,
                "{path}: {text}"
            );
            assert_eq!(has_no_test_sections(path, text.as_bytes()), *none, "{path}");
        }
    }

    use super::*;

    /// JSON with comments and trailing commas reads as the JSON it means; comment
    /// and comma characters inside strings stay.
    #[test]
    fn jsonc_to_json_table() {
        let rows: &[(&str, serde_json::Value)] = &[
            ("{\"a\": 1}", serde_json::json!({"a": 1})),
            (
                "{\n // c\n \"a\": [1, 2,], /* b */ \"b\": {\"c\": \"//x,}\",},\n}",
                serde_json::json!({"a": [1, 2], "b": {"c": "//x,}"}}),
            ),
            (
                "{\"a\": \"q\\\"/*\", \"b\": 2, // end\n}",
                serde_json::json!({"a": "q\"/*", "b": 2}),
            ),
            ("[1, /* c */ ]", serde_json::json!([1])),
        ];
        for (text, want) in rows {
            let got: serde_json::Value = serde_json::from_str(&jsonc_to_json(text))
                .unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(&got, want, "{text}");
        }
    }

    /// In `tsconfig.json` only what decides the code that runs is protected: an
    /// edit of `strict`, `lib` or `include` is free, one of `ts-node`, `paths`,
    /// `extends`, `noEmitHelpers` or `jsxFactory` is not; reordered options are no
    /// edit; a file that does not parse is protected whole.
    #[test]
    fn tsconfig_sections_table() {
        let base = "{\n  // project\n  \"compilerOptions\": {\"strict\": false, \"paths\": {\"@/*\": [\"src/*\"]}},\n}";
        let rows: &[(&str, bool)] = &[
            (
                "{\n  // project\n  \"compilerOptions\": {\"strict\": true, \"paths\": {\"@/*\": [\"src/*\"]}},\n}",
                false,
            ),
            (
                "{\"compilerOptions\": {\"strict\": false, \"paths\": {\"@/*\": [\"stub/*\"]}}}",
                true,
            ),
            (
                "{\"compilerOptions\": {\"paths\": {\"@/*\": [\"src/*\"]}}, \"ts-node\": {\"transpileOnly\": true}}",
                true,
            ),
            (
                "{\"extends\": \"./base.json\", \"compilerOptions\": {\"paths\": {\"@/*\": [\"src/*\"]}}}",
                true,
            ),
            ("{ broken", true),
            (
                "{\"compilerOptions\": {\"strict\": false, \"paths\": {\"@/*\": [\"src/*\"]}, \"noEmitHelpers\": true}}",
                true,
            ),
            (
                "{\"compilerOptions\": {\"strict\": false, \"paths\": {\"@/*\": [\"src/*\"]}, \"jsxFactory\": \"h\"}}",
                true,
            ),
            (
                "{\"compilerOptions\": {\"strict\": false, \"paths\": {\"@/*\": [\"src/*\"]}, \"skipLibCheck\": true, \"lib\": [\"es2022\"], \"noUnusedLocals\": true}}",
                false,
            ),
            (
                "{\"compilerOptions\": {\"paths\": {\"@/*\": [\"src/*\"]}, \"strict\": false}, \"include\": [\"src\"]}",
                false,
            ),
        ];
        for (edited, changed) in rows {
            assert_eq!(
                protected_content("tsconfig.json", base.as_bytes())
                    != protected_content("tsconfig.json", edited.as_bytes()),
                *changed,
                "{edited}"
            );
        }
    }

    /// The modules a test imports that something installs and t0's root lacks are
    /// protected as root modules; the code under test the task asks for is not.
    #[test]
    fn installed_modules_the_tests_import_are_protected_from_shadowing() {
        let tests = vec![
            "import yaml\nfrom calc import add\nimport os.path, json as j\nfrom requests.adapters import X\n".to_string(),
        ];
        let installed = |n: &str| matches!(n, "yaml" | "requests" | "calc_lib");
        let in_tree = |p: &str| p == "requests/__init__.py";
        let globs = shadow_globs(&tests, &installed, &in_tree);
        assert_eq!(
            globs,
            ["yaml.py", "yaml/**", "yaml.{pyc,so,pyd}", "yaml.*.{so,pyd}"]
        );
        let site = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(site.path().join("yaml")).unwrap();
        std::fs::write(
            site.path().join("_cffi.cpython-311-x86_64-linux-gnu.so"),
            "",
        )
        .unwrap();
        assert!(site_holds(site.path(), "yaml"));
        assert!(site_holds(site.path(), "_cffi"));
        assert!(!site_holds(site.path(), "calc"));
        // a test library nothing installs is protected too (a stand-in `hypothesis`)
        let tests = vec!["from hypothesis import given\nimport calc\n".to_string()];
        let globs = shadow_globs(&tests, &|_| false, &|_| false);
        assert_eq!(
            globs,
            [
                "hypothesis.py",
                "hypothesis/**",
                "hypothesis.{pyc,so,pyd}",
                "hypothesis.*.{so,pyd}"
            ]
        );
    }
    /// A standard-library module the root lacks at t0 is protected as a file and as a
    /// regular package (`codeop.py`, `email/__init__.py`), not as a directory of
    /// other files (`html/index.html`); one t0 holds stays editable.
    #[test]
    fn standard_library_names_the_root_lacks_are_protected_from_shadowing() {
        let in_tree = |p: &str| p == "calendar.py";
        let globs = build_globset(&stdlib_shadow_globs(&in_tree)).unwrap();
        for (path, protected) in [
            ("codeop.py", true),
            ("pdb.py", true),
            ("difflib.cpython-311-x86_64-linux-gnu.so", true),
            ("email/__init__.py", true),
            ("xml/__init__.pyc", true),
            ("calendar.py", false),
            ("html/index.html", false),
            ("email/templates/welcome.txt", false),
            ("src/code.py", false),
            ("calc.py", false),
        ] {
            assert_eq!(globs.is_match(path), protected, "{path}");
        }
    }

    /// (t0's files, configured `pythonpath`, the directories pytest searches first)
    #[test]
    fn import_dirs_table() {
        type Row = (
            &'static [&'static str],
            &'static [&'static str],
            &'static [&'static str],
        );
        let rows: &[Row] = &[
            (&["calc.py", "test_calc.py"], &[], &[""]),
            (
                &["src/report.py", "tests/test_report.py"],
                &["src"],
                &["", "src", "tests"],
            ),
            // a package's tests: the first directory upward without `__init__.py`
            (&["tests/__init__.py", "tests/test_a.py"], &[], &[""]),
            (
                &[
                    "pkg/__init__.py",
                    "pkg/tests/__init__.py",
                    "pkg/tests/test_a.py",
                    "lib/x.py",
                ],
                &[],
                // `lib/` holds modules outside any package
                &["", "lib"],
            ),
            (
                &["tests/unit/test_a.py", "tests/conftest.py"],
                &[],
                &["", "tests", "tests/unit"],
            ),
            // a configured directory t0 holds nothing under is no directory of the tree
            (&["calc.py", "test_calc.py"], &["src", ""], &[""]),
            // modules outside any package: a script run by its path starts there
            (&["tools/helper.py", "test_calc.py"], &[], &["", "tools"]),
            // a package's modules: not
            (
                &["app/__init__.py", "app/core.py", "test_calc.py"],
                &[],
                &[""],
            ),
        ];
        for (files, configured, want) in rows {
            let paths: std::collections::BTreeSet<&str> = files.iter().copied().collect();
            let is_test = |p: &str| {
                let n = p.rsplit('/').next().unwrap_or(p);
                n.starts_with("test_")
            };
            let configured: Vec<String> = configured.iter().map(|s| (*s).to_string()).collect();
            assert_eq!(
                py_import_dirs(&paths, &is_test, &configured),
                *want,
                "{files:?}"
            );
        }
    }

    /// Before: only the root was protected from modules shadowing a library, and a
    /// fresh review's `src/jsonschema.py` (under `pythonpath = ["src"]`) whose
    /// `validate()` accepted anything reached exit 10 while the tests, with the
    /// installed `jsonschema`, failed. (t0's files, configured `pythonpath`, the
    /// module added, protected)
    #[test]
    fn modules_shadowing_a_library_in_any_searched_directory_are_protected() {
        type Row = (
            &'static [&'static str],
            &'static [&'static str],
            &'static str,
            bool,
        );
        let src_layout: &[&str] = &["src/report.py", "tests/test_report.py"];
        let package_tests: &[&str] = &[
            "src/app/__init__.py",
            "src/app/core.py",
            "tests/__init__.py",
            "tests/test_report.py",
        ];
        let rows: &[Row] = &[
            // hits: an installed module the tests import, or the standard library's
            (src_layout, &["src"], "src/jsonschema.py", true),
            (src_layout, &["src"], "src/jsonschema/__init__.py", true),
            (src_layout, &["src"], "src/JSONSchema.py", true),
            (
                src_layout,
                &["src"],
                "src/jsonschema.cpython-311-x86_64-linux-gnu.so",
                true,
            ),
            (src_layout, &["src"], "src/fractions.py", true),
            (src_layout, &["src"], "src/email/__init__.py", true),
            (src_layout, &[], "tests/jsonschema.py", true),
            (src_layout, &[], "tests/decimal.py", true),
            (src_layout, &[], "jsonschema.py", true),
            (
                &["checks/unit/test_a.py"],
                &[],
                "checks/unit/json.pyc",
                true,
            ),
            (package_tests, &[], "fractions.py", true),
            (package_tests, &["src"], "src/jsonschema.py", true),
            // honest look-alikes: a fresh name, a directory no one searches, a module
            // inside a package, t0's own module, data named like a library, a library
            // no test imports
            (src_layout, &["src"], "src/report_schema.py", false),
            (src_layout, &["src"], "src/fractions_util.py", false),
            // `src/` holds modules outside any package: `python3 src/report.py`
            // (or `env -C src`) starts there
            (src_layout, &[], "src/jsonschema.py", true),
            (src_layout, &["src"], "lib/jsonschema.py", false),
            (package_tests, &[], "tests/fractions.py", false),
            (package_tests, &["src"], "src/app/jsonschema.py", false),
            (
                &["src/jsonschema.py", "tests/test_report.py"],
                &["src"],
                "src/jsonschema.py",
                false,
            ),
            (src_layout, &[], "tests/data/jsonschema/draft7.json", false),
            (src_layout, &["src"], "src/yaml.py", false),
            (
                src_layout,
                &["src"],
                "src/jsonschema_extra/__init__.py",
                false,
            ),
        ];
        let tests =
            vec!["from jsonschema import validate\n\nfrom report import render\n".to_string()];
        let installed = |n: &str| matches!(n, "jsonschema" | "yaml");
        for (files, configured, added, protected) in rows {
            let set = import_shadow_set(files, configured, &tests, &installed, false);
            assert_eq!(
                set.is_match(added),
                *protected,
                "{added} in {files:?} {configured:?}"
            );
        }
    }

    /// The glob set of [`import_dir_shadow_globs`] for a tree of `files` (test files
    /// are named `test_*`) under the `configured` import path, whose tests read
    /// `tests`; with `tree_modules`, the tree's own modules are protected in the tests'
    /// directories as the observer does.
    fn import_shadow_set(
        files: &[&str],
        configured: &[&str],
        tests: &[String],
        installed: &dyn Fn(&str) -> bool,
        tree_modules: bool,
    ) -> globset::GlobSet {
        let paths: std::collections::BTreeSet<&str> = files.iter().copied().collect();
        let is_test = |p: &str| p.rsplit('/').next().unwrap_or(p).starts_with("test_");
        let configured: Vec<String> = configured.iter().map(|s| (*s).to_string()).collect();
        let dirs = py_import_dirs(&paths, &is_test, &configured);
        let in_tree = |p: &str| paths.contains(p);
        let test_dirs = if tree_modules {
            pytest_insert_dirs(&paths, &is_test)
        } else {
            std::collections::BTreeSet::new()
        };
        let code = code_import_dirs(&dirs, &test_dirs);
        let tree_module = |n: &str| in_import_dirs(&code, n, &in_tree);
        let globs =
            import_dir_shadow_globs(&dirs, tests, installed, &in_tree, &tree_module, &test_dirs);
        crate::observe::guards::build_globset_ignoring_case(&globs).unwrap()
    }

    /// The tree's own modules the tests import count as installed for the other
    /// import directories: a review's in-place run converged on a `tests/calc.py`
    /// (found before the root's `calc.py` through pytest's insertion of `tests/`)
    /// whose `add` was right while the code under test's was not. (t0's files, the
    /// module added, protected)
    #[test]
    fn a_tree_module_the_tests_import_is_protected_from_shadowing() {
        let root_layout: &[&str] = &["calc.py", "tests/test_calc.py", "tests/helpers.py"];
        let src_layout: &[&str] = &[
            "src/calc/__init__.py",
            "src/calc/ops.py",
            "tests/test_calc.py",
        ];
        let scripts: &[&str] = &["calc.py", "scripts/config.py", "tests/test_calc.py"];
        let services: &[&str] = &[
            "svc_a/config.py",
            "svc_a/app.py",
            "svc_a/tests/test_app.py",
            "svc_b/app.py",
            "svc_b/tests/test_app.py",
        ];
        let flat_src: &[&str] = &["calc.py", "src/ops.py", "tests/test_calc.py"];
        let rows: &[(&[&str], &[&str], &str, bool)] = &[
            // hits: the name of a module under test, where t0 lacks it
            (root_layout, &[], "tests/calc.py", true),
            (root_layout, &[], "tests/calc/__init__.py", true),
            (root_layout, &[], "tests/Calc.py", true),
            (src_layout, &["src"], "tests/calc.py", true),
            (scripts, &[], "tests/config.py", true),
            // misses: where it lives, a name the tests do not import, a module inside
            // a package, a name under test no import directory holds at t0, and
            // outside the tests' directories: a module the task asks for beside a
            // script of that name, in a service of its own, moved into `src/` (a
            // review's honest runs)
            (root_layout, &[], "calc.py", false),
            (root_layout, &[], "tests/ops.py", false),
            (root_layout, &[], "tests/sub/calc.py", false),
            (root_layout, &[], "tests/conftest_data.json", false),
            (root_layout, &[], "helpers.py", false),
            (src_layout, &["src"], "src/calc/extra.py", false),
            (src_layout, &[], "tests/calc.py", false),
            (src_layout, &["src"], "calc.py", false),
            (scripts, &[], "config.py", false),
            (services, &["svc_a", "svc_b"], "svc_b/config.py", false),
            (flat_src, &["src"], "src/calc.py", false),
        ];
        let tests = vec![
            "from calc import add\nfrom helpers import approx\nfrom config import RATE\n"
                .to_string(),
        ];
        for (files, configured, added, protected) in rows {
            let set = import_shadow_set(files, configured, &tests, &|_| false, true);
            assert_eq!(
                set.is_match(added),
                *protected,
                "{added} in {files:?} {configured:?}"
            );
        }
    }

    /// With a check in place, a module named like the tree's `calc` the tests import
    /// is runner configuration wherever a new one is created outside the code's import
    /// directories: a review's new `a_checks/` (a test file pytest collects first and
    /// a fake `calc.py` beside it) turned the frozen tests green from Python's module
    /// cache. (path, protected)
    #[test]
    fn in_place_a_new_module_named_like_the_code_is_protected_outside_its_directories() {
        let t0: std::collections::BTreeSet<&str> = [
            "calc.py",
            "tests/test_calc.py",
            "app/__init__.py",
            "app/util.py",
            "src/ops.py",
        ]
        .into_iter()
        .collect();
        let code = vec![String::new(), "src".to_string()];
        let s = InPlaceShadows::new(&["calc".to_string()], &code, &t0).unwrap();
        let rows = [
            ("a_checks/calc.py", true),
            ("helpers/calc.py", true),
            ("tests/calc.py", true),
            ("tests/aa/calc/__init__.py", true),
            ("a/calc.cpython-311-x86_64-linux-gnu.so", true),
            ("a_checks/Calc.pyc", true),
            ("calc.py", false),
            ("calc/__init__.py", false),
            ("src/calc.py", false),
            ("app/calc.py", false),
            ("a_checks/ops.py", false),
            ("a_checks/calculator.py", false),
            ("a_checks/calc.txt", false),
        ];
        for (path, protected) in rows {
            assert_eq!(s.is_match(path), protected, "{path}");
        }
        assert!(InPlaceShadows::new(&[], &code, &t0).is_none());
    }

    /// The most directories covered still build as one glob set, quickly.
    #[test]
    fn many_import_dirs_build() {
        let files: Vec<String> = (0..200).map(|i| format!("t{i:03}/test_a.py")).collect();
        let paths: std::collections::BTreeSet<&str> = files.iter().map(String::as_str).collect();
        let dirs = py_import_dirs(&paths, &|p| p.ends_with("test_a.py"), &[]);
        assert_eq!(dirs.len(), 201);
        let none = std::collections::BTreeSet::new();
        let globs = import_dir_shadow_globs(&dirs, &[], &|_| false, &|_| false, &|_| false, &none);
        let mut patterns = protected_globs(&[]);
        patterns.extend(globs);
        let set = crate::observe::guards::build_globset_ignoring_case(&patterns).unwrap();
        assert!(set.is_match("t199/json.py") && set.is_match("json.py"));
        // every directory holding a standard-library name of its own: one group each
        let in_tree = |p: &str| {
            let (dir, name) = p.split_once('/').unwrap_or(("", p));
            let i: usize = dir.trim_start_matches('t').parse().unwrap_or(usize::MAX);
            PY_STDLIB_MODULES
                .get(i)
                .is_some_and(|n| name == format!("{n}.py"))
        };
        let globs = import_dir_shadow_globs(&dirs, &[], &|_| false, &in_tree, &|_| false, &none);
        let mut patterns = protected_globs(&[]);
        patterns.extend(globs);
        let set = crate::observe::guards::build_globset_ignoring_case(&patterns).unwrap();
        assert!(!set.is_match(format!("t000/{}.py", PY_STDLIB_MODULES[0])));
        let covered = (0..200)
            .filter(|i| set.is_match(format!("t{i:03}/json.py")))
            .count();
        assert!((MAX_IMPORT_DIR_GROUPS - 1..=MAX_IMPORT_DIR_GROUPS).contains(&covered));
    }

    /// A version pin is read from the directory a tool runs in and its ancestors: one
    /// in a subdirectory the check changes into picks its toolchain (a fresh review's
    /// `rust/rust-toolchain.toml` under `cd rust && cargo test`).
    #[test]
    fn version_pins_are_protected_in_every_directory() {
        let set = build_globset(&protected_globs(&[])).unwrap();
        for pin in super::super::toolchain::VERSION_PINS {
            for path in [pin.to_string(), format!("rust/{pin}"), format!("a/b/{pin}")] {
                assert!(set.is_match(&path), "{path}");
            }
        }
        for free in [
            "rust/toolchain.md",
            "docs/python-version.txt",
            "src/nvmrc.rs",
        ] {
            assert!(!set.is_match(free), "{free}");
        }
    }

    use crate::observe::git::snapshot;
    use crate::observe::git::testutil::{commit_all, repo, write};
    use crate::observe::guards::build_globset;

    /// Before: `pytest.pyc` in the root and `X.DIST-INFO/entry_points.txt` (Python
    /// finds both) were not protected, and each turned a red pytest run green; nor was a
    /// root `json.py` that pytest (and its witness) import in place of the standard one.
    #[test]
    fn runner_shadows_are_protected_in_every_importable_form_and_case() {
        let globs = crate::observe::guards::build_globset_ignoring_case(DEFAULT_PROTECTED).unwrap();
        // (path, protected)
        let rows = [
            ("pytest.py", true),
            ("pytest.pyc", true),
            ("_pytest.cpython-311-x86_64-linux-gnu.so", true),
            ("pluggy.so", true),
            ("speedplug-1.0.DIST-INFO/entry_points.txt", true),
            ("lib/x-1.0.dist-info/entry_points.txt", true),
            ("x.egg/EGG-INFO/entry_points.txt", true),
            ("calc.pyc", false),
            ("src/pytest_helpers.py", false),
            // standard-library modules pytest imports once the root is on sys.path
            ("json.py", true),
            ("inspect.pyc", true),
            ("ast.py", true),
            ("src/json.py", false),
            ("jsonutil.py", false),
        ];
        for (path, want) in rows {
            assert_eq!(globs.is_match(path), want, "{path}");
        }
    }

    #[test]
    fn digest_changes_only_when_protected_content_changes() {
        let d = repo();
        let p = d.path();
        let globs = build_globset(&protected_globs(&[])).unwrap();
        write(p, "pytest.ini", "[pytest]\naddopts = -q\n");
        write(p, "tests/conftest.py", "import pytest\n");
        write(p, "pyproject.toml", "[project]\nname = \"x\"\ndependencies = []\n[tool.pytest.ini_options]\naddopts = \"-q\"\n");
        write(p, "src/app.py", "x = 1\n");
        commit_all(p, "base");
        let m0 = manifest(p, &snapshot(p, "r", "t0").unwrap().tree, &globs).unwrap();
        assert_eq!(
            m0.files.keys().collect::<Vec<_>>(),
            vec!["pyproject.toml", "pytest.ini", "tests/conftest.py"]
        );

        // Unprotected edits, and a dependency added to pyproject.toml: same digest.
        write(p, "src/app.py", "x = 2\n");
        write(p, "pyproject.toml", "[project]\nname = \"x\"\ndependencies = [\"requests\"]\n[tool.pytest.ini_options]\naddopts = \"-q\"\n");
        let m1 = manifest(p, &snapshot(p, "r", "i1").unwrap().tree, &globs).unwrap();
        assert_eq!(m1.digest, m0.digest);
        assert!(m0.changes(&m1).is_empty());

        // Weakening the runner configuration: named.
        write(p, "pytest.ini", "[pytest]\naddopts = -q -k 'not slow'\n");
        write(p, "pyproject.toml", "[project]\nname = \"x\"\n[tool.pytest.ini_options]\naddopts = \"-q --deselect tests/test_a.py\"\n");
        std::fs::remove_file(p.join("tests/conftest.py")).unwrap();
        write(p, "jest.config.js", "module.exports = {};\n");
        let m2 = manifest(p, &snapshot(p, "r", "i2").unwrap().tree, &globs).unwrap();
        assert_ne!(m2.digest, m0.digest);
        let ch = m0.changes(&m2);
        assert_eq!(
            ch,
            vec![
                ManifestChange {
                    path: "jest.config.js".into(),
                    kind: ManifestChangeKind::Added
                },
                ManifestChange {
                    path: "pyproject.toml".into(),
                    kind: ManifestChangeKind::Changed
                },
                ManifestChange {
                    path: "pytest.ini".into(),
                    kind: ManifestChangeKind::Changed
                },
                ManifestChange {
                    path: "tests/conftest.py".into(),
                    kind: ManifestChangeKind::Removed
                },
            ]
        );
    }

    #[test]
    fn scoped_files_protect_test_sections_and_fall_back_to_whole_content() {
        let a = br#"{"name":"x","dependencies":{},"scripts":{"test":"jest"}}"#;
        let b = br#"{"name":"x","dependencies":{"lodash":"4"},"scripts":{"test":"jest"}}"#;
        let c = br#"{"name":"x","dependencies":{},"scripts":{"test":"exit 0"}}"#;
        assert_eq!(
            protected_content("package.json", a),
            protected_content("web/package.json", b)
        );
        assert_ne!(
            protected_content("package.json", a),
            protected_content("package.json", c)
        );
        assert_eq!(
            protected_content("package.json", b"{ broken"),
            b"{ broken".to_vec()
        );
        let s1 = b"[metadata]\nname = x\n[tool:pytest]\naddopts = -q\n";
        let s2 = b"[metadata]\nname = y\n[tool:pytest]\naddopts = -q\n";
        let s3 = b"[metadata]\nname = x\n[tool:pytest]\naddopts = -q -x\n";
        assert_eq!(
            protected_content("setup.cfg", s1),
            protected_content("setup.cfg", s2)
        );
        assert_ne!(
            protected_content("setup.cfg", s1),
            protected_content("setup.cfg", s3)
        );
        assert_eq!(protected_content("pytest.ini", s1), s1.to_vec());
        // a section added to a file that had none, behind a unit separator
        let meta = b"[metadata]\nname = calc\nversion = 0.1\n";
        let added =
            b"[metadata]\nname = calc\nversion = 0.1\n[tool:pytest]\x1f\naddopts = -p warmup\n";
        assert_ne!(
            protected_content("setup.cfg", meta),
            protected_content("setup.cfg", added)
        );
        // a header pytest reads that a `\n`-and-`]` reader would not: a comment after
        // it, or a line end Python's `splitlines` knows
        for hidden in [
            &b"[metadata]\nname = x\n[tool:pytest] ; options\naddopts = -q -p plug\n"[..],
            b"[metadata]\nname = x\x0c[tool:pytest]\naddopts = -q -p plug\n",
            b"[metadata]\nname = x\r[tool:pytest]\raddopts = -q -p plug\n",
            b"[metadata]\nname = x\n[tool:pytest]\x1f\naddopts = -q -p plug\n",
            b"[metadata]\nname = x\n[tool:pytest]\nmarkers =\n    slow: slow\n    [metadata]\naddopts = -q -p plug\n",
        ] {
            assert_ne!(
                protected_content("setup.cfg", s1),
                protected_content("setup.cfg", hidden),
                "{}",
                String::from_utf8_lossy(hidden)
            );
            assert!(
                String::from_utf8_lossy(&protected_content("setup.cfg", hidden))
                    .contains("-p plug"),
                "{}",
                String::from_utf8_lossy(hidden)
            );
        }
    }

    /// `package.json`: the test sections (babel's options among them: babel-jest
    /// applies its plugins to the frozen tests), and what Node resolves a package's own
    /// name and `#…` specifiers through (`exports`, `imports`, with `name` beside
    /// them); metadata and dependencies are free, and so is `name` alone.
    #[test]
    fn package_json_protects_how_the_tests_resolve_not_metadata() {
        let base = r#"{"name": "calc", "version": "1.0.0", "devDependencies": {"chai": "4"}}"#;
        let table: &[(&str, bool)] = &[
            (
                r#"{"name": "calc", "version": "1.1.0", "devDependencies": {"chai": "4", "sinon": "1"}}"#,
                false,
            ),
            (
                r#"{"name": "chai", "version": "1.0.0", "devDependencies": {"chai": "4"}}"#,
                false,
            ),
            (
                r#"{"name": "calc", "version": "1.0.0", "scripts": {"test": "mocha"}}"#,
                true,
            ),
            (
                r#"{"name": "chai", "version": "1.0.0", "exports": {".": "./lib/fluent.js"}}"#,
                true,
            ),
            (
                r##"{"name": "calc", "version": "1.0.0", "imports": {"#chai": "./lib/fluent.js"}}"##,
                true,
            ),
            (
                r#"{"name": "calc", "version": "1.0.0", "babel": {"plugins": ["./tools/fast.js"]}}"#,
                true,
            ),
        ];
        for (edited, protected_change) in table {
            assert_eq!(
                protected_content("package.json", base.as_bytes())
                    != protected_content("package.json", edited.as_bytes()),
                *protected_change,
                "{edited}"
            );
        }
        let with_exports = r#"{"name": "calc", "exports": {".": "./index.js"}}"#;
        let renamed = r#"{"name": "chai", "exports": {".": "./index.js"}}"#;
        assert_ne!(
            protected_content("package.json", with_exports.as_bytes()),
            protected_content("package.json", renamed.as_bytes()),
            "a package that resolves its own name through exports is renamed"
        );
    }

    /// A package named like a module pytest imports at start-up (`iniconfig/`) added
    /// to the root is protected like a standard-library shadow; one t0 holds is not.
    #[test]
    fn runner_support_packages_are_shadow_protected_unless_t0_holds_them() {
        let globs = stdlib_shadow_globs(&|p| p == "packaging/__init__.py");
        let set = crate::observe::guards::build_globset(&globs).expect("valid globs");
        assert!(set.is_match("iniconfig/__init__.py"));
        assert!(set.is_match("iniconfig.py"));
        assert!(set.is_match("pygments/__init__.py"));
        assert!(!set.is_match("packaging/__init__.py"), "t0's own package");
        assert!(
            !set.is_match("iniconfig/util.py"),
            "only what is imported first"
        );
    }

    #[test]
    fn cargo_toml_protects_targets_and_profiles_not_dependencies() {
        let base = "[package]\nname = \"calc\"\nversion = \"0.1.0\"\n[dependencies]\n";
        let table: &[(&str, bool)] = &[
            ("[package]\nname = \"calc\"\nversion = \"0.2.0\"\n[dependencies]\nserde = \"1\"\n", false),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\n[lib]\ntest = false\n", true),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\nautotests = false\n", true),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\n[[test]]\nname = \"x\"\nharness = false\n", true),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\n[profile.test]\nopt-level = 3\n", true),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\nbuild = \"gen.rs\"\n", true),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\nautolib = false\n", true),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\n[features]\ndefault = [\"exhaustive\"]\nexhaustive = []\n", true),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\n[features]\ncli = []\n", false),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\nworkspace = \"/tmp/ws\"\n", true),
            // where a crate comes from is how the tests are judged; its version is not
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\n[dev-dependencies]\napprox = \"0.5\"\n", false),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\n[dev-dependencies]\napprox = { version = \"0.5\", features = [\"std\"] }\n", false),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\n[dev-dependencies]\napprox = { path = \"approx\" }\n", true),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\n[dependencies]\napprox = { version = \"0.5\", package = \"approx-lite\" }\n", true),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\n[target.'cfg(unix)'.dev-dependencies]\napprox = { git = \"https://example.com/approx\" }\n", true),
            ("[package]\nname = \"calc\"\nversion = \"0.1.0\"\n[patch.crates-io]\napprox = { path = \"approx\" }\n", true),
            ("[workspace]\nmembers = [\"a\"]\n[workspace.dependencies]\napprox = { path = \"approx\" }\n", true),
            ("[workspace]\nmembers = [\"a\", \"b\"]\ndefault-members = [\"b\"]\n", true),
            ("[workspace]\nmembers = [\"a\", \"b\"]\nexclude = [\"a\"]\n", true),
            ("[workspace]\nmembers = [\"a\", \"b\"]\n", false),
        ];
        for (edited, protected_change) in table {
            assert_eq!(
                protected_content("Cargo.toml", base.as_bytes())
                    != protected_content("Cargo.toml", edited.as_bytes()),
                *protected_change,
                "{edited}"
            );
        }
    }

    /// The default features and what they turn on, feature by feature, are runner
    /// configuration; a feature no default reaches is free.
    #[test]
    fn cargo_toml_protects_what_the_default_features_turn_on() {
        let t0 = "[package]\nname = \"calc\"\n[features]\ndefault = [\"std\"]\nstd = [\"dep:log\"]\nquick = []\ncli = []\n";
        for (edited, protected_change) in [
            ("[package]\nname = \"calc\"\n[features]\ndefault = [\"std\"]\nstd = [\"dep:log\", \"quick\"]\nquick = []\ncli = []\n", true),
            ("[package]\nname = \"calc\"\n[features]\ndefault = [\"std\"]\nstd = [\"dep:log\"]\nquick = []\ncli = [\"quick\"]\n", false),
            ("[package]\nname = \"calc\"\n[features]\ndefault = []\nstd = [\"dep:log\"]\nquick = []\ncli = []\n", true),
        ] {
            assert_eq!(
                protected_content("Cargo.toml", t0.as_bytes())
                    != protected_content("Cargo.toml", edited.as_bytes()),
                protected_change,
                "{edited}"
            );
        }
    }

    /// A `[[bin]]` or `[[example]]` target that leaves the tests alone is no runner
    /// configuration edit (a fresh review's honest fix added a requested
    /// `tools/calc-cli.rs` binary and halted 13); one that sets a test key off its
    /// default, is built from a test, bench or build-script file, or lives in an
    /// edition 2015 package (where declaring one turns discovery off) still counts.
    #[test]
    fn a_bin_or_example_target_that_leaves_tests_alone_is_free() {
        const PKG: &str = "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
        const BIN: &str = "[[bin]]\nname = \"calc-cli\"\npath = \"tools/calc-cli.rs\"\n";
        // (t0's targets, the later targets, counted as a runner configuration edit)
        let rows: &[(&str, &str, bool)] = &[
            // free: added, changed, removed, with cargo's defaults spelled out
            ("", BIN, false),
            ("", "[[bin]]\nname = \"cli\"\n", false),
            ("", "[[bin]]\nname = \"cli\"\npath = \"src/cli/main.rs\"\nrequired-features = [\"cli\"]\nedition = \"2021\"\ndoc = false\n", false),
            ("", "[[bin]]\nname = \"cli\"\npath = \"tools/cli.rs\"\ntest = true\nharness = true\nbench = true\n", false),
            ("", "[[example]]\nname = \"demo\"\npath = \"examples/demo.rs\"\ntest = false\n", false),
            (BIN, "[[bin]]\nname = \"calc\"\npath = \"tools/calc.rs\"\n", false),
            (BIN, "", false),
            ("[lib]\ntest = false\n", "[lib]\ntest = false\n[[bin]]\nname = \"cli\"\n", false),
            // counted: a test key off its default, or a key not known to be harmless
            ("", "[[bin]]\nname = \"cli\"\ntest = false\n", true),
            ("", "[[bin]]\nname = \"cli\"\nharness = false\n", true),
            ("", "[[bin]]\nname = \"cli\"\ndoctest = true\n", true),
            ("", "[[example]]\nname = \"demo\"\ntest = true\n", true),
            ("", "[[example]]\nname = \"demo\"\ncrate-type = [\"lib\"]\n", true),
            ("", "[[bin]]\nname = \"cli\"\nfuture-key = 1\n", true),
            // counted: built from a test, bench, fixture or build-script file, or
            // from outside the package
            ("", "[[bin]]\nname = \"cli\"\npath = \"tests/add.rs\"\n", true),
            ("", "[[bin]]\nname = \"cli\"\npath = \"src/add_test.rs\"\n", true),
            ("", "[[bin]]\nname = \"cli\"\npath = \"benches/b.rs\"\n", true),
            ("", "[[bin]]\nname = \"cli\"\npath = \"build.rs\"\n", true),
            ("", "[[bin]]\nname = \"cli\"\npath = \"../other/tests.rs\"\n", true),
            ("", "[[bin]]\nname = \"cli\"\npath = \"/tmp/cli.rs\"\n", true),
            ("", "[[bin]]\nname = \"cli\"\npath = \"tools/cli.py\"\n", true),
            // the other target kinds, profiles and the build script still count
            ("", "[[test]]\nname = \"cli\"\npath = \"tools/cli.rs\"\n", true),
            ("", "[[bench]]\nname = \"b\"\n", true),
            ("", "[lib]\ndoctest = false\n", true),
            ("", "[lib]\nharness = false\n", true),
            ("", "[profile.test]\nopt-level = 3\n", true),
        ];
        for (before, after, counted) in rows {
            let a = format!("{PKG}{before}");
            let b = format!("{PKG}{after}");
            assert_eq!(
                protected_content("Cargo.toml", a.as_bytes())
                    != protected_content("Cargo.toml", b.as_bytes()),
                *counted,
                "{before:?} -> {after:?}"
            );
        }
        // Edition 2015, named or by default: declaring a bin drops `src/bin/*`.
        for pkg in [
            "[package]\nname = \"calc\"\n",
            "[package]\nname = \"calc\"\nedition = \"2015\"\n",
        ] {
            assert_ne!(
                protected_content("Cargo.toml", pkg.as_bytes()),
                protected_content("Cargo.toml", format!("{pkg}{BIN}").as_bytes()),
                "{pkg}"
            );
        }
        // A new package holding only a free binary has no test sections.
        assert!(has_no_test_sections(
            "crates/cli/Cargo.toml",
            format!("{PKG}{BIN}").as_bytes()
        ));
    }

    #[test]
    fn digest_is_order_and_boundary_safe() {
        let m1 = Manifest::from_files(BTreeMap::from([("ab".to_string(), "c".to_string())]));
        let m2 = Manifest::from_files(BTreeMap::from([("a".to_string(), "bc".to_string())]));
        assert_ne!(m1.digest, m2.digest);
        assert_eq!(
            Manifest::from_files(BTreeMap::new()).digest,
            Manifest::from_files(BTreeMap::new()).digest
        );
    }
}
