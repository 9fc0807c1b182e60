//! The working tree as the loop observes it: the t0 baseline, a snapshot after every
//! exec and around every check, and the guard measurements of each snapshot.
//!
//! Snapshots live in loopexec's own store ([`super::store`]): commits under
//! `refs/loopexec/<run-id>/<label>` in loopexec's snapshot store ([`store_path`]), made from loopexec's
//! own walk of the workdir. The user's repository (if there is one) is only read for
//! facts about it (HEAD, dirty, its own configuration files); nothing of it decides what
//! a snapshot holds. Labels: `0` (t0, before the baseline check), `<i>` (after the exec
//! of iteration i), `<i>-check<k>` (after check run k of iteration i).
//!
//! When the store cannot be used (a disk error, git missing), every measurement says so
//! (`available: false`, `error`), `run_started.guards_unavailable` lists it, and the
//! verdict fails closed (`objective_unverified`) instead of passing silently.

use super::frozen::{self, OracleRules};
use super::git::{self, ChangeKind, TreeEntry};
use super::guards::{self, AssertionCache};
use super::store::{Excludes, FileEntry, SnapshotStore, TreeScanner};
use crate::config::RunConfig;
use crate::detect::integrity::TreeMeasures;
use crate::receipt::events::GitState;
use crate::trajectory::Trajectory;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Most scripts the check's scripts pull in that are frozen with them (a bound on the
/// work at t0, not a limit anyone meets).
pub const MAX_PULLED_IN: usize = 200;

/// What one observation of the tree recorded.
pub struct TreeObs {
    pub tree: Option<String>,
    pub snapshot: Option<String>,
    /// What the guards measured on this tree.
    pub measures: TreeMeasures,
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
    store: Option<SnapshotStore>,
    scanner: TreeScanner,
    note: Option<String>,
    test_globs: globset::GlobSet,
    protected: globset::GlobSet,
    /// With a check in place, the tree's modules the tests import, protected where a
    /// new one would shadow them (set at t0).
    in_place_shadows: Option<super::manifest::InPlaceShadows>,
    /// The check runs in place (`--check-in-place`).
    in_place: bool,
    /// The globs `protected` was built from (t0 adds the installed modules the tests
    /// import: [`super::manifest::shadow_globs`]).
    protected_patterns: Vec<String>,
    rules: OracleRules,
    cache: AssertionCache,
    t0_tree: Option<String>,
    t0_commit: Option<String>,
    t0_entries: Option<BTreeMap<String, FileEntry>>,
    t0_measures: Option<TreeMeasures>,
    last_tree: Option<String>,
    last_entries: std::sync::Arc<BTreeMap<String, FileEntry>>,
    /// The dependency directories the last scan left out (root-relative, sorted).
    dependency_dirs: Vec<String>,
    /// The last snapshot's tree and commit: an unchanged tree reuses the commit.
    last_commit: Option<(String, String)>,
    /// The files of the last snapshot a guard reads ([`Self::in_focus`]), kept up to
    /// date from each scan's changed paths instead of re-filtering every file.
    focus: BTreeMap<String, FileEntry>,
    /// t0's files in focus.
    t0_focus: BTreeMap<String, FileEntry>,
    /// Runner-tampering hits per (path, t0 blob, current blob).
    /// How code would name t0's frozen data files ([`frozen::data_handles`]): code
    /// under test that reaches one is flagged ([`frozen::reaches_data`]).
    data_handles: Vec<String>,
    /// How code would name the test files the agent added that the judged check
    /// leaves out (`new_tests = "exclude"`): code under test that reaches one could
    /// tell the judged copy from the checkout. The tamper cache is cleared when they
    /// change.
    left_out_handles: Vec<String>,
    tamper_cache:
        std::collections::HashMap<(String, Option<String>, String), Vec<super::tamper::TamperHit>>,
    git_dir: Option<PathBuf>,
    /// Directories of the last scan (what a [`super::watch::QuietWatch`] covers).
    last_dirs: Vec<String>,
    /// From how many files of the last scan [`Self::observe`] starts a quiet watch
    /// for the check that follows; `None`: never ([`Self::watch_during_checks`]).
    quiet_from: Option<usize>,
    /// The watch started right after the last exec's scan, if any.
    quiet: Option<super::watch::QuietWatch>,
    /// True once `git rev-parse --absolute-git-dir` was asked (see `git_internals`).
    git_dir_asked: bool,
    toolchain_words: Vec<String>,
    /// The Python modules (last name) t0's tests take every name of
    /// (`from calc import *`): only there does a builtin's name defined by the code
    /// under test reach a test ([`frozen::py_star_imported`]). `None` while t0's
    /// sources could not be read: then every such definition counts.
    py_star_imported: Option<std::collections::BTreeSet<String>>,
    toolchain_path: String,
    site_dirs: Vec<PathBuf>,
    /// The check's Python interpreters' other start-up paths (standard library,
    /// `pyvenv.cfg`: [`super::toolchain::PythonPaths::startup`]), found at t0.
    py_startup: Vec<PathBuf>,
    /// The directories the project's runner configuration and the check command put
    /// on Python's import path ([`super::declared_tests::declared_pythonpath`]).
    py_path: Vec<String>,
    config_files: Vec<PathBuf>,
    new_tests: crate::config::NewTestPolicy,
    indirect: super::toolchain_scope::Scope,
    /// Cargo's registry sources the check compiles ([`super::registry`]).
    registry: Option<super::registry::Registry>,
    /// The registry crates' values of the last measurement (before the check).
    last_crates: BTreeMap<String, String>,
    /// Link targets read from the snapshot store, by blob id.
    link_targets: std::collections::HashMap<String, Option<String>>,
}

/// The tamper rules' hits in the lines added to code at `path` between `old` and
/// `new`: sourceless bytecode by its own rules, a file of no known language read as
/// every language, any other file as its language splits its lines.
fn scan_code_file(path: &str, old: &str, new: &str) -> Vec<super::tamper::TamperHit> {
    if super::tamper_more::is_sourceless_bytecode(path) {
        super::tamper_more::scan(path, old, new)
    } else if super::tamper_load::reads_as_code(path) {
        super::tamper_load::scan_unknown(path, old, new)
    } else {
        super::tamper_lines::scan_code(path, old, new)
    }
}

/// The file of the judged tree (`judged` says which paths it holds) that a module
/// created at `path` is found before, when code imports it by its name: Python finds
/// a package (`calc/__init__.py`) and a compiled extension (`calc.so`,
/// `calc.cpython-311-x86_64-linux-gnu.so`, `calc.pyd`) before the module
/// `calc.py` of the same directory; node's `require('./calc')` tries the exact name
/// `calc` before `calc.js`, `calc.cjs`, `calc.mjs`, `calc.json` and `calc.node`.
/// `None` when nothing of the tree is shadowed.
fn shadowed_module(path: &str, judged: &impl Fn(&str) -> bool) -> Option<String> {
    let (dir, name) = match path.rsplit_once('/') {
        Some((d, n)) => (format!("{d}/"), n),
        None => (String::new(), path),
    };
    if name == "__init__.py" {
        // `<parent>/<pkg>/__init__.py` shadows `<parent>/<pkg>.py`
        let pkg = dir.trim_end_matches('/');
        let module = format!("{pkg}.py");
        return (!pkg.is_empty() && judged(&module)).then_some(module);
    }
    if name.ends_with(".so") || name.ends_with(".pyd") {
        let stem = name.split('.').next().unwrap_or(name);
        let module = format!("{dir}{stem}.py");
        return (!stem.is_empty() && judged(&module)).then_some(module);
    }
    if !name.contains('.') && !name.is_empty() {
        return ["js", "cjs", "mjs", "json", "node"]
            .iter()
            .map(|ext| format!("{dir}{name}.{ext}"))
            .find(|m| judged(m));
    }
    None
}

/// The name a Python file is imported by (its last component): `calc` for
/// `src/calc.py` and for `calc/__init__.py`.
fn py_module_name(path: &str) -> &str {
    let stem = path.trim_end_matches(".py");
    match stem.rsplit_once('/') {
        Some((dir, "__init__")) => dir.rsplit('/').next().unwrap_or(dir),
        Some((_, name)) => name,
        None => stem,
    }
}

fn to_tree_entries(entries: &BTreeMap<String, FileEntry>) -> Vec<TreeEntry> {
    entries
        .iter()
        .map(|(p, e)| TreeEntry {
            mode: e.mode.clone(),
            kind: "blob".into(),
            oid: e.oid.clone(),
            path: p.clone(),
        })
        .collect()
}

/// The paths the exec steps of the iterations after `after` changed: for each, the
/// difference between the tree it started from (the previous iteration's tree after
/// its check, or the tree a revert restored) and the tree after its exec.
///
/// # Errors
/// A store error, as text.
pub fn agent_changed_paths(
    store_dir: &Path,
    t: &Trajectory,
    after: u32,
) -> Result<std::collections::BTreeSet<String>, String> {
    let tree_at_end = |it: &crate::trajectory::IterationObs| {
        it.main_check()
            .and_then(|c| c.tree_after.clone())
            .or_else(|| it.exec.as_ref().and_then(|e| e.tree.clone()))
    };
    let mut prev: Option<String> = None;
    let mut out = std::collections::BTreeSet::new();
    for it in &t.iterations {
        if it.iteration > after {
            if let (Some(p), Some(e)) = (&prev, it.exec.as_ref().and_then(|e| e.tree.clone())) {
                if *p != e {
                    for c in git::changed_paths(store_dir, p, &e).map_err(|e| e.to_string())? {
                        out.insert(c.path);
                    }
                }
            }
        }
        prev = if let Some(r) = &it.reverted {
            t.iterations
                .iter()
                .rev()
                .find(|x| x.iteration == r.to_iteration)
                .and_then(tree_at_end)
                .or(prev)
        } else if it.iteration == 0 {
            t.started
                .as_ref()
                .and_then(|s| s.git.baseline_tree.clone())
                .or_else(|| tree_at_end(it))
        } else {
            tree_at_end(it).or(prev)
        };
    }
    Ok(out)
}

/// The snapshot store of a workdir: `<state>/stores/<first 16 hex of
/// blake3(workdir)>.git`, `<state>` as [`crate::engine::cleanroom::state_dir`].
///
/// It lives outside the workdir so that the exec, which may write the workdir, can
/// reach neither its objects (a blob rewritten in place under its old id would be
/// what the clean room reads as t0's test) nor its config (a `diff.external` or
/// `core.pager` there would run when a person reviews the diff). Landlock keeps the
/// exec out of the state directory; without Landlock the run says so.
#[must_use]
pub fn store_path(workdir: &Path) -> PathBuf {
    let digest = blake3::hash(workdir.as_os_str().as_encoded_bytes()).to_hex();
    crate::engine::cleanroom::state_dir()
        .join("stores")
        .join(format!("{}.git", &digest.as_str()[..16]))
}

impl TreeObserver {
    /// Prepares observation of `workdir` for `run_id`.
    #[must_use]
    pub fn new(workdir: &Path, run_id: &str, cfg: &RunConfig) -> TreeObserver {
        let protected = super::manifest::protected_globs(&cfg.guards.protected);
        let (store, note) = match SnapshotStore::open(&store_path(workdir)) {
            Ok(s) => {
                // Only `gc --stores` reads the record; a store without one is never
                // judged abandoned, so a failed write loses nothing.
                if s.record_workdir(workdir).is_err() {
                    // (the store itself works: the run goes on)
                }
                (Some(s), None)
            }
            Err(e) => (
                None,
                Some(format!(
                    "the snapshot store cannot be used ({e}): snapshots, blocked paths, the frozen oracle, assertion counts, the protected manifest, hermeticity and the ratchet's revert cannot run"
                )),
            ),
        };
        let excludes = Excludes::new(&cfg.clean_room.exclude).unwrap_or_default();
        // `[guards] test_paths` and the test-file patterns the project's runner
        // configuration and check command declare (read before any exec runs)
        let mut test_paths = cfg.guards.test_paths.clone();
        test_paths.extend(super::declared_tests::declared_test_globs(
            workdir,
            cfg.check.as_deref(),
        ));
        let test_globs =
            guards::build_globset(&test_paths).unwrap_or_else(|_| globset::GlobSet::empty());
        let frozen_globs =
            guards::build_globset(&cfg.oracle.frozen).unwrap_or_else(|_| globset::GlobSet::empty());
        let mut rules = OracleRules::new(test_globs.clone(), frozen_globs, cfg.check.as_deref());
        rules.set_editable(
            guards::build_globset(&cfg.oracle.editable)
                .unwrap_or_else(|_| globset::GlobSet::empty()),
        );
        TreeObserver {
            dir: workdir.to_path_buf(),
            run_id: run_id.to_string(),
            store,
            scanner: TreeScanner::new(workdir, excludes),
            note,
            rules,
            test_globs,
            protected: guards::build_globset_ignoring_case(&protected)
                .unwrap_or_else(|_| globset::GlobSet::empty()),
            protected_patterns: protected,
            in_place_shadows: None,
            in_place: cfg.clean_room.in_place,
            cache: AssertionCache::default(),
            t0_tree: None,
            t0_commit: None,
            t0_entries: None,
            t0_measures: None,
            last_tree: None,
            last_entries: std::sync::Arc::new(BTreeMap::new()),
            dependency_dirs: Vec::new(),
            last_commit: None,
            focus: BTreeMap::new(),
            t0_focus: BTreeMap::new(),
            left_out_handles: Vec::new(),
            tamper_cache: std::collections::HashMap::new(),
            data_handles: Vec::new(),
            git_dir: None,
            last_dirs: Vec::new(),
            quiet_from: None,
            quiet: None,
            git_dir_asked: false,
            toolchain_words: Vec::new(),
            py_star_imported: None,
            toolchain_path: String::new(),
            site_dirs: Vec::new(),
            py_startup: Vec::new(),
            py_path: super::declared_tests::declared_pythonpath(workdir, cfg.check.as_deref()),
            config_files: Vec::new(),
            new_tests: cfg.oracle.new_tests,
            indirect: super::toolchain_scope::Scope::for_run(workdir, cfg),
            registry: super::registry::Registry::from_env(),
            last_crates: BTreeMap::new(),
            link_targets: std::collections::HashMap::new(),
        }
        .with_toolchain(cfg.check.as_deref())
    }

    fn with_toolchain(mut self, check: Option<&str>) -> TreeObserver {
        use super::toolchain;
        let words = check.map(toolchain::command_words).unwrap_or_default();
        let path = check_path(&self.dir);
        for p in words
            .iter()
            .filter(|w| toolchain::is_python(w))
            .filter_map(|w| toolchain::resolve(w, &path))
        {
            let found = toolchain::python_paths(&p);
            self.site_dirs.extend(found.site_dirs);
            self.py_startup.extend(found.startup);
        }
        // Configuration above the workdir and above the clean room, and cargo's own.
        let room =
            crate::engine::cleanroom::base_dir(&crate::engine::cleanroom::state_dir(), &self.dir)
                .join("tree");
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
        let extra: Vec<PathBuf> = cargo_home
            .map(|c| vec![c.join("config"), c.join("config.toml")])
            .unwrap_or_default();
        self.config_files = toolchain::config_candidates(&[self.dir.clone(), room], &extra);
        self.toolchain_words = words;
        self.toolchain_path = path;
        self
    }

    /// The store, when it can be used.
    #[must_use]
    pub fn store(&self) -> Option<&SnapshotStore> {
        self.store.as_ref()
    }

    /// The rules that pick the frozen oracle.
    #[must_use]
    pub fn rules(&self) -> &OracleRules {
        &self.rules
    }

    /// Files of the last snapshot.
    #[must_use]
    pub fn entries_now(&self) -> &BTreeMap<String, FileEntry> {
        &self.last_entries
    }

    /// Files of t0's tree (after [`Self::baseline`] or [`Self::adopt_baseline`]).
    #[must_use]
    pub fn t0_entries(&self) -> Option<&BTreeMap<String, FileEntry>> {
        self.t0_entries.as_ref()
    }

    /// Takes t0: git state, the baseline snapshot and its measurements, and the
    /// list of guards that cannot run here.
    pub fn baseline(&mut self) -> (GitState, TreeMeasures, Vec<String>) {
        let found = git::work_tree(&self.dir);
        let user_git = found.is_some();
        // the repository's git directory for `git_internals`, from the same question
        self.git_dir = found.map(|(_, gd)| gd);
        self.git_dir_asked = true;
        let head = user_git
            .then(|| git::head(&self.dir).ok().flatten())
            .flatten();
        let dirty = user_git.then(|| git::is_dirty(&self.dir).ok()).flatten();
        let unavailable = |note: String| {
            let g = GitState {
                available: false,
                head: head.clone(),
                dirty,
                note: Some(note.clone()),
                ..GitState::default()
            };
            let m = TreeMeasures {
                error: Some(note.clone()),
                ..TreeMeasures::default()
            };
            (g, m, vec![note])
        };
        if self.store.is_none() {
            return unavailable(self.note.clone().unwrap_or_default());
        }
        match self.snap("0") {
            Ok((tree, commit, excluded)) => {
                self.t0_tree = Some(tree.clone());
                self.t0_commit = Some(commit.clone());
                self.t0_entries = Some((*self.last_entries).clone());
                self.learn_oracle_from_t0();
                self.refocus_all();
                self.t0_focus = self.focus.clone();
                let mut m = self.measure(&tree, Vec::new());
                m.excluded = excluded;
                self.t0_measures = Some(m.clone());
                let g = GitState {
                    available: true,
                    head,
                    dirty,
                    baseline_snapshot: Some(commit),
                    baseline_tree: Some(tree),
                    note: (!user_git).then(|| {
                        "not a git repository: snapshots come from loopexec's own store".into()
                    }),
                };
                (g, m, Vec::new())
            }
            Err(e) => {
                self.store = None;
                unavailable(format!(
                    "the t0 snapshot failed ({e}): the tree guards cannot run"
                ))
            }
        }
    }

    /// What t0's files add to the frozen oracle: the out-of-line Rust test modules
    /// (`#[cfg(test)] mod tests;`), the documents a crate reads into its docs
    /// ([`frozen::rust_doc_includes`]) and the scripts the check pulls in
    /// ([`frozen::pulled_in`]).
    /// t0's data files ([`frozen::test_data`] of `named`, plus
    /// [`frozen::data_modules`]) without those code under test names too
    /// ([`frozen::not_named_by_code`]), and the modules the tests assert through
    /// ([`frozen::assertion_helpers`]), from t0's code files (up to 4,000, each up to
    /// 1 MiB) read from the store.
    fn data_files(
        &self,
        store: &SnapshotStore,
        e0: &BTreeMap<String, FileEntry>,
        named: Vec<String>,
    ) -> (
        Vec<String>,
        Vec<String>,
        Option<std::collections::BTreeSet<String>>,
    ) {
        const CODE: &[&str] = &[
            ".py", ".go", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".rs",
        ];
        let code: Vec<(&String, &FileEntry)> = e0
            .iter()
            .filter(|(p, e)| CODE.iter().any(|x| p.ends_with(x)) && e.mode != "120000")
            .take(4000)
            .collect();
        let Ok(sources) = texts_of(store, &code) else {
            return (named, Vec::new(), None);
        };
        let test_globs = &self.test_globs;
        let is_test = |p: &str| guards::is_test_file(p, test_globs).is_some();
        let mut data = frozen::not_named_by_code(named, &sources, &is_test);
        data.extend(frozen::data_modules(&sources, &is_test));
        let star = frozen::py_star_imported(&sources, &is_test);
        (
            data,
            frozen::assertion_helpers(&sources, &is_test),
            Some(star),
        )
    }

    fn learn_oracle_from_t0(&mut self) {
        let (Some(store), Some(e0)) = (&self.store, &self.t0_entries) else {
            return;
        };
        self.rules.set_vendor_dirs(frozen::vendor_dirs(e0.keys()));
        self.rules
            .set_code_fixtures(frozen::code_fixture_packages(e0.keys()));
        let rs: Vec<(&String, &FileEntry)> =
            e0.iter().filter(|(p, _)| p.ends_with(".rs")).collect();
        let oids: Vec<String> = rs.iter().map(|(_, e)| e.oid.clone()).collect();
        let Ok(blobs) = git::cat_blobs(store.dir(), &oids) else {
            return;
        };
        let sources: Vec<(String, String)> = rs
            .iter()
            .zip(blobs)
            .filter_map(|((p, _), b)| {
                b.map(|b| ((*p).clone(), String::from_utf8_lossy(&b).into_owned()))
            })
            .collect();
        let mut modules = frozen::rust_test_modules(&sources, &|p| e0.contains_key(p));
        let cargo: Vec<(&String, &FileEntry)> = e0
            .iter()
            .filter(|(p, e)| {
                (p.as_str() == "Cargo.toml" || p.ends_with("/Cargo.toml")) && e.mode != "120000"
            })
            .take(200)
            .collect();
        if let Ok(manifests) = texts_of(store, &cargo) {
            modules.extend(frozen::cargo_test_targets(&manifests, &sources, &|p| {
                e0.contains_key(p)
            }));
            modules.sort();
            modules.dedup();
        }
        self.rules.set_test_modules(modules);
        let docs = frozen::rust_doc_includes(&sources, &|p| e0.contains_key(p));
        self.rules.set_doc_files(docs);
        // Data files the tests name (`expected.txt` at the root) are frozen with them.
        let tests: Vec<(&String, &FileEntry)> = e0
            .iter()
            .filter(|(p, e)| {
                super::lex::Lang::from_path(p) != super::lex::Lang::Other
                    && e.mode != "120000"
                    && self.rules.frozen_as(p).is_some()
            })
            .take(2000)
            .collect();
        if let Ok(sources) = texts_of(store, &tests) {
            let files: Vec<String> = e0.keys().cloned().collect();
            let mut named = frozen::test_data(&sources, &files);
            // of those, the code the tests compile or run (`cc calc.c`, `sh bin/calc`)
            let code = frozen::built_or_run(&named, &sources, &programs(store, e0, &named));
            named.retain(|f| !code.contains(f));
            let (data, helpers, star) = self.data_files(store, e0, named);
            self.py_star_imported = star;
            // Patterns the tests list data by (`glob.glob("cases/*.json")`): a file
            // added later that one matches is data too. A pattern some of whose t0
            // files code under test names as well is the code's.
            let globs: Vec<String> = frozen::listed_data(&sources, &files)
                .1
                .into_iter()
                .filter(|p| {
                    frozen::globbed_files(p, &files)
                        .iter()
                        .all(|f| data.contains(f))
                })
                .collect();
            self.rules.set_data_globs(&globs);
            self.rules.set_assertion_helpers(helpers);
            // what code would name them by (a Go file by the names it declares)
            let go: Vec<(&String, String)> = data
                .iter()
                .filter(|p| p.ends_with(".go"))
                .filter_map(|p| Some((p, e0.get(p)?.oid.clone())))
                .collect();
            let texts = git::cat_blobs(
                store.dir(),
                &go.iter().map(|g| g.1.clone()).collect::<Vec<_>>(),
            )
            .unwrap_or_default();
            let mut handles: Vec<String> = Vec::new();
            for p in data.iter().filter(|p| !p.ends_with(".go")) {
                handles.extend(frozen::data_handles(p, ""));
            }
            for ((p, _), b) in go.iter().zip(texts) {
                let text = b
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                handles.extend(frozen::data_handles(p, &text));
            }
            handles.sort();
            handles.dedup();
            self.data_handles = handles;
            self.rules.set_test_data(data);
            // the judges the tests run, and the Python modules they import from their own
            // directory, three imports deep (a later review's `tools/textnorm.py`, whose
            // `normalize` a frozen `tools/compare.py` trusted)
            let mut judges = frozen::run_checkers(&sources, &files);
            let mut read: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
            for _ in 0..3 {
                let next: Vec<(&String, &FileEntry)> = judges
                    .iter()
                    .filter(|p| p.ends_with(".py") && !read.contains(*p))
                    .filter_map(|p| e0.get_key_value(p))
                    .collect();
                if next.is_empty() {
                    break;
                }
                read.extend(next.iter().map(|(p, _)| (*p).clone()));
                let Ok(texts) = texts_of(store, &next) else {
                    break;
                };
                judges.extend(frozen::py_imported_files(&texts, &|p| e0.contains_key(p)));
                judges.sort();
                judges.dedup();
            }
            self.rules.set_run_checkers(judges);
            self.rules.set_ahead_at_t0(files.iter());
        }
        // Installed modules the Python tests import: a module of that name added later
        // at the top of a directory the check searches first would shadow them
        // (manifest::shadow_globs, manifest::import_dir_shadow_globs). A check that
        // starts Python through another program (`make -C backend test`, `sh
        // ci/test.sh`, `env -C backend python3 …`: a fresh review's) names no
        // interpreter loopexec can read: when the tree holds Python tests, the
        // `python3` (or `python`) on the check's PATH stands in for it.
        if self.site_dirs.is_empty()
            && e0.keys().any(|p| {
                guards::is_test_file(p, &self.test_globs) == Some(super::lex::Lang::Python)
            })
        {
            let path = check_path(&self.dir);
            let found = ["python3", "python"]
                .iter()
                .find_map(|w| super::toolchain::resolve(w, &path))
                .map(|p| super::toolchain::python_paths(&p))
                .unwrap_or_default();
            self.site_dirs = found.site_dirs;
            self.py_startup = found.startup;
        }
        if !self.site_dirs.is_empty() {
            let py: Vec<String> = e0
                .keys()
                .filter(|p| {
                    guards::is_test_file(p, &self.test_globs) == Some(super::lex::Lang::Python)
                })
                .take(2000)
                .map(|p| e0[p].oid.clone())
                .collect();
            let tests: Vec<String> = git::cat_blobs(store.dir(), &py)
                .unwrap_or_default()
                .into_iter()
                .flatten()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .collect();
            let site_dirs = &self.site_dirs;
            // (and the standard library's modules those directories lack at t0)
            let paths: std::collections::BTreeSet<&str> = e0.keys().map(String::as_str).collect();
            let test_globs = &self.test_globs;
            let is_py_test =
                |p: &str| guards::is_test_file(p, test_globs) == Some(super::lex::Lang::Python);
            let dirs = super::manifest::py_import_dirs(&paths, &is_py_test, &self.py_path);
            // (the tests' frozen data modules count as installed: a module of that name
            // earlier on the path would be read in their place)
            let frozen_modules = self.rules.frozen_python_modules();
            let in_tree = |p: &str| e0.contains_key(p);
            let installed = |n: &str| {
                frozen_modules.contains(&n)
                    || site_dirs.iter().any(|d| super::manifest::site_holds(d, n))
            };
            // (and, in the tests' own directories, the tree's modules the tests import:
            // a `tests/calc.py` is found before the `calc.py` under test)
            let test_dirs = super::manifest::pytest_insert_dirs(&paths, &is_py_test);
            let code_dirs = super::manifest::code_import_dirs(&dirs, &test_dirs);
            let tree_module = |n: &str| super::manifest::in_import_dirs(&code_dirs, n, &in_tree);
            if self.in_place {
                let names = super::manifest::tree_module_names(&tests, &code_dirs, &in_tree);
                self.in_place_shadows =
                    super::manifest::InPlaceShadows::new(&names, &code_dirs, &paths);
            }
            let globs = super::manifest::import_dir_shadow_globs(
                &dirs,
                &tests,
                &installed,
                &in_tree,
                &tree_module,
                &test_dirs,
            );
            if !globs.is_empty() {
                let mut patterns = self.protected_patterns.clone();
                patterns.extend(globs);
                let built = guards::build_globset_ignoring_case(&patterns).or_else(|_| {
                    // the root's alone, should the other directories' not build
                    patterns.truncate(self.protected_patterns.len());
                    patterns.extend(super::manifest::import_dir_shadow_globs(
                        &[String::new()],
                        &tests,
                        &installed,
                        &in_tree,
                        &tree_module,
                        &test_dirs,
                    ));
                    guards::build_globset_ignoring_case(&patterns)
                });
                if let Ok(g) = built {
                    self.protected = g;
                    self.protected_patterns = patterns;
                }
            }
        }
        // Scripts the check's scripts source, include or run are the check's too: a
        // sourced `env.sh` can point the check anywhere.
        let check_roots: Vec<String> = self
            .rules
            .check_files()
            .iter()
            .filter(|p| e0.contains_key(*p))
            .cloned()
            .collect();
        let test_roots: Vec<String> = e0
            .keys()
            .filter(|p| frozen::is_script(p) && self.rules.frozen_as(p).is_some())
            .filter(|p| !check_roots.contains(p))
            .cloned()
            .collect();
        let read = |p: &str| -> Option<String> {
            let e = e0.get(p)?;
            let blob = git::cat_blobs(store.dir(), std::slice::from_ref(&e.oid))
                .ok()?
                .pop()??;
            // a script is text; a large file is no script of the check's
            (blob.len() <= 1 << 20).then(|| String::from_utf8_lossy(&blob).into_owned())
        };
        let list = |dir: &str| -> Vec<String> {
            let prefix = format!("{}/", dir.trim_end_matches('/'));
            e0.range(prefix.clone()..)
                .take_while(|(p, _)| p.starts_with(&prefix))
                .map(|(p, _)| p.clone())
                .collect()
        };
        let pulled = frozen::pulled_in(&check_roots, &test_roots, &read, &list, MAX_PULLED_IN);
        self.rules.set_pulled_in(pulled);
        let sdir = store.dir().to_path_buf();
        let targets = self.frozen_link_targets(&sdir);
        self.rules.set_link_targets(targets);
    }

    fn measure(&mut self, _tree: &str, changed_since_t0: Vec<String>) -> TreeMeasures {
        let Some(store) = &self.store else {
            return TreeMeasures {
                error: Some("no snapshot store".into()),
                ..TreeMeasures::default()
            };
        };
        let sdir = store.dir().to_path_buf();
        // Only the files in focus can be tests, runner configuration, the frozen
        // oracle or sources with test regions: the guards below read nothing else.
        let entries = to_tree_entries(&self.focus);
        let mut error = None;
        let assertions =
            match guards::assertion_total_in(&sdir, &entries, &self.test_globs, &mut self.cache) {
                Ok(a) => a.files.into_iter().map(|(p, f)| (p, f.count)).collect(),
                Err(e) => {
                    error = Some(format!("assertion count: {e}"));
                    BTreeMap::new()
                }
            };
        let manifest = match self.manifest_entries(&sdir).and_then(|m| {
            super::manifest::manifest_in(&sdir, &m, &|p| self.runner_config_path(p))
                .map_err(|e| e.to_string())
        }) {
            Ok(m) => m.files,
            Err(e) => {
                error = Some(format!("protected manifest: {e}"));
                BTreeMap::new()
            }
        };
        let frozen = self.rules.frozen(&self.focus);
        let oracle_edits = match (&self.t0_measures, &self.t0_entries) {
            (Some(t0), Some(_)) if t0.error.is_none() => match frozen::edits(
                &sdir,
                &t0.frozen,
                &t0.manifest,
                &manifest,
                &self.t0_focus,
                &self.focus,
                &self.rules,
            ) {
                Ok(v) => v,
                Err(e) => {
                    error = Some(format!("frozen oracle: {e}"));
                    Vec::new()
                }
            },
            _ => Vec::new(),
        };
        let runner_tampering = match self.tampering(&sdir, &manifest, &changed_since_t0) {
            Ok(v) => v,
            Err(e) => {
                error = Some(format!("runner tampering scan: {e}"));
                Vec::new()
            }
        };
        let escaping_links = super::oracle_scope::escaping_links(
            &sdir,
            self.t0_entries.as_ref(),
            &self.last_entries,
        )
        .unwrap_or_else(|e| {
            error = Some(format!("links of the tree: {e}"));
            Vec::new()
        });
        TreeMeasures {
            escaping_links,
            toolchain: {
                let mut t = super::toolchain::measure(
                    &self.toolchain_words,
                    &self.toolchain_path,
                    &self.site_dirs,
                    &self.py_startup,
                );
                t.extend(super::toolchain::measure_files(&self.config_files));
                t.extend(
                    self.indirect
                        .measure(&self.toolchain_words, &self.toolchain_path),
                );
                t.extend(self.registry_measures());
                t
            },
            runner_tampering,
            changed_since_t0,
            assertions,
            manifest,
            available: error.is_none(),
            git_internals: self.git_internals(),
            state_tampered: Vec::new(),
            frozen,
            oracle_edits,
            excluded: Vec::new(),
            error,
        }
    }

    /// The registry crates the tree's `Cargo.lock` names ([`super::registry`]), against
    /// t0's measures once they are taken.
    fn registry_measures(&mut self) -> BTreeMap<String, String> {
        let Some(reg) = self.registry.as_mut() else {
            return BTreeMap::new();
        };
        let Ok(lock) = std::fs::read_to_string(self.dir.join("Cargo.lock")) else {
            return BTreeMap::new();
        };
        let m = reg.measure(&lock, self.t0_measures.as_ref().map(|m| &m.toolchain));
        self.last_crates.clone_from(&m);
        m
    }

    /// The registry crates a check's `Cargo.lock` (in `dir`, the room or the workdir)
    /// names that changed since the measurement before the check, other than to their
    /// published sources: what the check changed in cargo's registry, as
    /// `crate:<name>@<version>: <value>` (empty without a lock or a registry).
    pub fn registry_changed(&mut self, dir: &Path) -> Vec<String> {
        let (Some(reg), Some(t0)) = (self.registry.as_mut(), self.t0_measures.as_ref()) else {
            return Vec::new();
        };
        let Ok(lock) = std::fs::read_to_string(dir.join("Cargo.lock")) else {
            return Vec::new();
        };
        let before = &self.last_crates;
        reg.measure(&lock, Some(&t0.toolchain))
            .into_iter()
            .filter(|(k, v)| {
                let was = before.get(k).or_else(|| t0.toolchain.get(k));
                !super::registry::unchanged(was.map(String::as_str), Some(v))
            })
            .map(|(k, v)| format!("{k}: {v}"))
            .collect()
    }

    /// The Python site directories of the check's interpreters, found at t0.
    #[must_use]
    pub fn site_dirs(&self) -> &[PathBuf] {
        &self.site_dirs
    }

    /// [`super::tamper_lines::scan_code`] (every line-based rule set) over the files changed since t0 (`changed`) that are
    /// neither tests, the frozen oracle nor runner configuration. Results are cached
    /// per (path, t0 blob, current blob): an unchanged file is not read again.
    fn tampering(
        &mut self,
        sdir: &Path,
        manifest: &BTreeMap<String, String>,
        changed: &[String],
    ) -> Result<Vec<super::tamper::TamperHit>, git::GitError> {
        let Some(e0) = &self.t0_entries else {
            return Ok(Vec::new());
        };
        // Added test files are read under either policy: under `run` they run in the
        // judged check, under `exclude` in the checkout confirmation (SPEC §3.9),
        // where one patching the code under test made a green of code right only in
        // the room (a sixteenth review).
        let added_tests = super::oracle_scope::added_tests(e0, &self.last_entries, &self.rules);
        let left_out: Vec<String> = if self.new_tests == crate::config::NewTestPolicy::Exclude {
            super::oracle_scope::added_tests(e0, &self.last_entries, &self.rules)
                .iter()
                .flat_map(|p| frozen::data_handles(p, ""))
                .collect()
        } else {
            Vec::new()
        };
        if left_out != self.left_out_handles {
            self.tamper_cache.clear();
            self.left_out_handles = left_out;
        }
        let keys: Vec<(String, Option<String>, String)> = changed
            .iter()
            .filter_map(|p| Some((p, self.last_entries.get(p)?)))
            .filter(|(p, e)| e0.get(*p) != Some(*e))
            .filter(|(p, _)| {
                // A dependency manifest (`Cargo.toml`, `go.mod`) is read for
                // dependencies from outside the tree, protected or not.
                if super::tamper_load::is_dependency_manifest(p)
                    || super::tamper_load::is_gitattributes(p)
                {
                    return true;
                }
                // Files of no known language are read when they may be code (read as
                // every language, `tamper_load::scan_unknown`); sourceless bytecode is
                // named whatever it holds.
                (!matches!(super::lex::Lang::from_path(p), super::lex::Lang::Other)
                    || super::tamper_load::reads_as_code(p)
                    || super::tamper_load::is_import_archive(p)
                    || super::tamper_more::is_sourceless_bytecode(p))
                    && (added_tests.contains(*p)
                        || (self.rules.frozen_as(p).is_none()
                            && !manifest.contains_key(*p)
                            && guards::is_test_file(p, &self.test_globs).is_none()))
            })
            .map(|(p, e)| (p.clone(), e0.get(p).map(|a| a.oid.clone()), e.oid.clone()))
            .collect();
        let blobs = self.uncached_blobs(sdir, &keys)?;
        let text = |oid: &str| {
            blobs
                .get(oid)
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default()
        };
        let mut hits = Vec::new();
        for key in keys {
            if let Some(h) = self.tamper_cache.get(&key) {
                hits.extend(h.iter().cloned());
                continue;
            }
            let (p, a, b) = &key;
            // an archive is read whole, as bytes (its members are no lines)
            if let Some(hit) = blobs
                .get(b.as_str())
                .and_then(|bytes| super::tamper_load::archive_modules(p, bytes))
            {
                hits.push(hit.clone());
                self.tamper_cache.insert(key, vec![hit]);
                continue;
            }
            if super::tamper_load::is_import_archive(p) {
                self.tamper_cache.insert(key, Vec::new());
                continue;
            }
            let old = a.as_deref().map(text).unwrap_or_default();
            let new = text(b);
            let found = if super::tamper_load::is_gitattributes(p) {
                super::tamper_load::scan_gitattributes(p, &old, &new)
            } else if super::tamper_load::is_dependency_manifest(p) {
                super::tamper_load::scan_dependency_manifest(p, &old, &new)
            } else if super::tamper_more::is_sourceless_bytecode(p)
                || super::tamper_load::reads_as_code(p)
            {
                scan_code_file(p, &old, &new)
            } else {
                let mut found = scan_code_file(p, &old, &new);
                found.extend(data_reached(p, &old, &new, &self.data_handles));
                found.extend(left_out_reached(p, &old, &new, &self.left_out_handles));
                // a Python module defining a builtin's name (`def sum`) shadows it
                // only for a test that takes all its names (`from stats import *`)
                if let (Some(star), true) = (&self.py_star_imported, p.ends_with(".py")) {
                    let module = py_module_name(p);
                    if !star.contains(module) {
                        found.retain(|h| h.rule != "prelude name redefined");
                    }
                }
                found
            };
            hits.extend(found.iter().cloned());
            self.tamper_cache.insert(key, found);
        }
        hits.extend(self.code_links_to_unread(sdir, e0, changed)?);
        Ok(hits)
    }

    /// The hits of the tamper rules in code a check created in the tree it judged
    /// (`created`: paths of the store tree `after`), each file read against what the
    /// baseline check created at the same path (`baseline`: the store tree after it),
    /// so what t0's own check builds is not new.
    ///
    /// A check runs the code under test, and that code may write a module beside
    /// itself and import it in the same check (a package `calc/` beside `calc.py`, an
    /// extensionless `calc` node finds before `calc.js`): such a file is in no
    /// snapshot of the agent's tree, so only this reads it. Read are files of a known
    /// language, files that may be code ([`super::tamper_load::reads_as_code`]:
    /// read as every language), sourceless bytecode, and links named as code (one
    /// hit each: what a link loads is outside what the check created). A module
    /// found before one of the judged tree (`shadowed_module`: a package beside
    /// `calc.py`, an extensionless `calc` beside `calc.js`) is a hit whatever it
    /// holds. A package or compiled module the baseline check created at the same
    /// path is the project's build (mypyc, an in-place extension build) and is not
    /// read. Not read either: `__pycache__` (each check's bytecode goes to a fresh
    /// `PYTHONPYCACHEPREFIX`) and binary files (a NUL byte in their first 8 KiB)
    /// other than compiled modules. Results are cached per (path, baseline blob,
    /// blob), as for the agent's files.
    ///
    /// # Errors
    /// The store cannot list a tree or read a blob, as text.
    pub fn created_code(
        &mut self,
        after: &str,
        baseline: Option<&str>,
        created: &[String],
    ) -> Result<Vec<super::tamper::TamperHit>, String> {
        let Some(store) = self.store.as_ref() else {
            return Ok(Vec::new());
        };
        let sdir = store.dir().to_path_buf();
        let now = store.entries_shared(after).map_err(|e| e.to_string())?;
        let base = match baseline {
            Some(b) => Some(store.entries_shared(b).map_err(|e| e.to_string())?),
            None => None,
        };
        let mut hits = Vec::new();
        let mut keys = Vec::new();
        let new: std::collections::BTreeSet<&str> = created.iter().map(String::as_str).collect();
        let judged = |q: &str| now.contains_key(q) && !new.contains(q);
        for p in created {
            if p.split('/').any(|d| d == "__pycache__") {
                continue;
            }
            let e = now.get(p);
            let was = base.as_ref().and_then(|b| b.get(p));
            // a compiled module or a package the baseline check built too is the
            // project's own build (mypyc, an in-place extension build)
            if was.is_some()
                && (p.ends_with("/__init__.py")
                    || p == "__init__.py"
                    || super::tamper_more::is_sourceless_bytecode(p))
            {
                continue;
            }
            if let Some(shadowed) = e.and_then(|_| shadowed_module(p, &judged)) {
                hits.push(super::tamper::TamperHit {
                    path: p.clone(),
                    line: 0,
                    rule: "a module the check created, loaded before one of the tree".into(),
                    text: format!("{p} is found before {shadowed} when the code imports it"),
                });
                continue;
            }
            let named_as_code = !matches!(super::lex::Lang::from_path(p), super::lex::Lang::Other);
            if !(named_as_code
                || super::tamper_load::reads_as_code(p)
                || super::tamper_more::is_sourceless_bytecode(p))
            {
                continue;
            }
            let Some(e) = e else { continue };
            if was == Some(e) {
                continue;
            }
            if e.mode == "120000" {
                hits.push(super::tamper::TamperHit {
                    path: p.clone(),
                    line: 0,
                    rule: "a link named as code, made by the check".into(),
                    text: format!("{p} is a link the check made in the tree it judged"),
                });
                continue;
            }
            keys.push((p.clone(), was.map(|w| w.oid.clone()), e.oid.clone()));
        }
        let blobs = self
            .uncached_blobs(&sdir, &keys)
            .map_err(|e| e.to_string())?;
        for key in keys {
            if let Some(h) = self.tamper_cache.get(&key) {
                hits.extend(h.iter().cloned());
                continue;
            }
            let (p, a, b) = &key;
            let bytes = blobs.get(b).map_or(&[][..], Vec::as_slice);
            let bytecode = super::tamper_more::is_sourceless_bytecode(p);
            let binary = memchr::memchr(0, &bytes[..bytes.len().min(8192)]).is_some();
            let found = if binary && !bytecode {
                Vec::new()
            } else {
                let text = |oid: Option<&String>| {
                    oid.and_then(|o| blobs.get(o))
                        .map(|b| String::from_utf8_lossy(b).into_owned())
                        .unwrap_or_default()
                };
                scan_code_file(p, &text(a.as_ref()), &text(Some(b)))
            };
            hits.extend(found.iter().cloned());
            self.tamper_cache.insert(key, found);
        }
        Ok(hits)
    }

    /// The blobs (by object id) of the `(path, old blob, new blob)` keys whose tamper
    /// hits are not cached yet, read from the store in one call.
    fn uncached_blobs(
        &self,
        sdir: &Path,
        keys: &[(String, Option<String>, String)],
    ) -> Result<BTreeMap<String, Vec<u8>>, git::GitError> {
        let mut oids: Vec<String> = keys
            .iter()
            .filter(|k| !self.tamper_cache.contains_key(*k))
            .flat_map(|(_, a, b)| a.iter().cloned().chain([b.clone()]))
            .collect();
        oids.sort();
        oids.dedup();
        Ok(oids
            .iter()
            .cloned()
            .zip(git::cat_blobs(sdir, &oids)?)
            .filter_map(|(o, b)| b.map(|b| (o, b)))
            .collect())
    }

    /// A symlink changed since t0, named as code (`calc.py`), that points at a file
    /// the scan does not read as that language (`docs/calc.md`) or out of the tree:
    /// the interpreter loads the target as code while the scan reads only the link's
    /// text (a fresh review replaced `calc.py` with a link to a document this way).
    fn code_links_to_unread(
        &self,
        sdir: &Path,
        e0: &BTreeMap<String, FileEntry>,
        changed: &[String],
    ) -> Result<Vec<super::tamper::TamperHit>, git::GitError> {
        let links: Vec<(&String, &FileEntry)> = changed
            .iter()
            .filter_map(|p| Some((p, self.last_entries.get(p)?)))
            .filter(|(p, e)| e.mode == "120000" && e0.get(*p) != Some(*e))
            .filter(|(p, _)| !matches!(super::lex::Lang::from_path(p), super::lex::Lang::Other))
            .collect();
        if links.is_empty() {
            return Ok(Vec::new());
        }
        let oids: Vec<String> = links.iter().map(|(_, e)| e.oid.clone()).collect();
        let targets = git::cat_blobs(sdir, &oids)?;
        let mut hits = Vec::new();
        for ((p, _), target) in links.into_iter().zip(targets) {
            let target = target
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            let inside = !super::tamper_load::outside_tree(p, &target);
            let same_lang = super::lex::Lang::from_path(&target) == super::lex::Lang::from_path(p);
            if !(inside && same_lang) {
                hits.push(super::tamper::TamperHit {
                    path: p.clone(),
                    line: 0,
                    rule: "code loaded from a file the scan does not read".into(),
                    text: format!("{p} is a link to {target}"),
                });
            }
        }
        Ok(hits)
    }

    /// True for a path some guard reads: a test file or Rust/Python source
    /// (assertions, test regions), a document a crate reads into its docs (doctests),
    /// runner configuration (the protected manifest), the frozen oracle. Depends on the
    /// path only (and what t0's files add to the oracle).
    fn in_focus(&self, path: &str) -> bool {
        matches!(
            super::lex::Lang::from_path(path),
            super::lex::Lang::Rust | super::lex::Lang::Python
        ) || self.rules.is_doc_file(path)
            || self.protected(path)
    }

    /// True for a file of the protected manifest (runner configuration, version pins,
    /// `[guards] protected`), by path.
    #[must_use]
    pub fn runner_configuration(&self, path: &str) -> bool {
        self.runner_config_path(path)
    }

    /// [`Self::runner_configuration`]: the protected globs, and with a check in place
    /// the tree's modules the tests import wherever a new one shadows them
    /// ([`super::manifest::InPlaceShadows`]).
    fn runner_config_path(&self, path: &str) -> bool {
        self.protected.is_match(path)
            || self
                .in_place_shadows
                .as_ref()
                .is_some_and(|s| s.is_match(path))
    }

    /// True for a file an integrity guard protects as such: a test file, runner
    /// configuration (the protected manifest), the frozen oracle.
    #[must_use]
    pub fn protected(&self, path: &str) -> bool {
        guards::is_test_file(path, &self.test_globs).is_some()
            || self.runner_config_path(path)
            || self.rules.frozen_as(path).is_some()
    }

    /// The entries the protected manifest is measured over: the files in focus, and
    /// the protected files a runner reaches through a link to a directory of the tree
    /// ([`Self::protected_aliases`]).
    ///
    /// # Errors
    /// A link target that cannot be read from the store, as text.
    fn manifest_entries(&mut self, sdir: &std::path::Path) -> Result<Vec<TreeEntry>, String> {
        let mut entries = to_tree_entries(&self.focus);
        // a protected file that is a link to a file of the tree is measured by what
        // the runner reads through it: the target's content, in the scope of the
        // link's name (`tsconfig.json -> config/tsconfig.json` keeps `strict` free)
        let all = std::sync::Arc::clone(&self.last_entries);
        let links = self.links_of(sdir, &all)?;
        if !links.is_empty() {
            for e in &mut entries {
                if e.mode != super::oracle_scope::LINK_MODE || !self.runner_config_path(&e.path) {
                    continue;
                }
                let Some(dest) = super::oracle_scope::destination_in(&e.path, &links) else {
                    continue;
                };
                if let Some(d) = all
                    .get(&dest)
                    .filter(|d| d.mode != super::oracle_scope::LINK_MODE)
                {
                    e.oid.clone_from(&d.oid);
                    e.mode.clone_from(&d.mode);
                }
            }
        }
        for a in self.protected_aliases(sdir)? {
            if let Some(e) = self.last_entries.get(&a.real) {
                entries.push(TreeEntry {
                    mode: e.mode.clone(),
                    kind: "blob".into(),
                    oid: e.oid.clone(),
                    path: a.alias,
                });
            }
        }
        Ok(entries)
    }

    /// The files of the last snapshot reached through a link to one of the tree's
    /// directories under a path the protected globs match
    /// ([`super::oracle_scope::linked_dir_aliases`]). Link targets are read from the
    /// store once per blob id.
    ///
    /// # Errors
    /// A link target that cannot be read from the store, as text.
    fn protected_aliases(
        &mut self,
        sdir: &std::path::Path,
    ) -> Result<Vec<super::oracle_scope::LinkAlias>, String> {
        let entries = std::sync::Arc::clone(&self.last_entries);
        let links = self.links_of(sdir, &entries)?;
        if links.is_empty() {
            return Ok(Vec::new());
        }
        Ok(super::oracle_scope::linked_dir_aliases(&entries, &links)
            .into_iter()
            .filter(|a| self.runner_config_path(&a.alias))
            .collect())
    }

    /// The links of `entries` with their targets (path → target), read from the store
    /// once per blob id.
    ///
    /// # Errors
    /// A link target that cannot be read from the store, as text.
    fn links_of(
        &mut self,
        sdir: &std::path::Path,
        entries: &BTreeMap<String, FileEntry>,
    ) -> Result<BTreeMap<String, String>, String> {
        use super::oracle_scope::LINK_MODE;
        let links: Vec<(&String, &FileEntry)> = entries
            .iter()
            .filter(|(_, e)| e.mode == LINK_MODE)
            .collect();
        let unread: Vec<String> = links
            .iter()
            .map(|(_, e)| e.oid.clone())
            .filter(|oid| !self.link_targets.contains_key(oid))
            .collect();
        if !unread.is_empty() {
            let targets = git::cat_blobs(sdir, &unread).map_err(|e| e.to_string())?;
            for (oid, t) in unread.into_iter().zip(targets) {
                let t = t.map(|b| String::from_utf8_lossy(&b).into_owned());
                self.link_targets.insert(oid, t);
            }
        }
        Ok(links
            .iter()
            .filter_map(|(p, e)| Some(((*p).clone(), self.link_targets.get(&e.oid)?.clone()?)))
            .collect())
    }

    /// t0's files a frozen path leads to through a link: the target of a link that is
    /// a test or frozen data (`tests/test_calc.py -> ../suites/calc_cases.py`,
    /// `expected.txt -> resources/sum_table.txt`). The runner reads them by the
    /// frozen path, so they are frozen with it (a fresh review's exit 10 rewrote such
    /// targets, the links untouched). Runner configuration behind a link is measured
    /// by the manifest instead, in its own scope ([`Self::manifest_entries`]), and a
    /// linked directory freezes nothing (a test directory's link to the sources,
    /// `tests/_src -> ../src`, would freeze the code under test).
    fn frozen_link_targets(&mut self, sdir: &std::path::Path) -> Vec<String> {
        use super::oracle_scope::{destination_in, LINK_MODE};
        let Some(e0) = self.t0_entries.clone() else {
            return Vec::new();
        };
        let Ok(links) = self.links_of(sdir, &e0) else {
            return Vec::new();
        };
        let frozen = |p: &str| {
            !self.runner_config_path(p)
                && (self.rules.frozen_as(p).is_some()
                    || guards::is_test_file(p, &self.test_globs).is_some())
        };
        let mut out: Vec<String> = links
            .keys()
            .filter(|l| frozen(l))
            .filter_map(|l| destination_in(l, &links))
            .filter(|d| e0.get(d).is_some_and(|e| e.mode != LINK_MODE))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Recomputes [`Self::focus`] from every file of the last snapshot.
    fn refocus_all(&mut self) {
        let focus = self
            .last_entries
            .iter()
            .filter(|(p, _)| self.in_focus(p))
            .map(|(p, e)| (p.clone(), e.clone()))
            .collect();
        self.focus = focus;
    }

    /// Updates [`Self::focus`] for the paths that changed in the last scan.
    fn refocus(&mut self, changed: &std::collections::BTreeSet<String>) {
        for p in changed {
            match self.last_entries.get(p) {
                Some(e) if self.in_focus(p) => {
                    self.focus.insert(p.clone(), e.clone());
                }
                _ => {
                    self.focus.remove(p);
                }
            }
        }
    }

    /// Digests (blake3 of mode and content) of the user repository's own
    /// configuration files (`config`, `hooks/*`, `info/*` of the git dir), keyed
    /// `.git/<path>`: what changes git's behaviour
    /// without appearing in any tree. Empty outside a git repository.
    fn git_internals(&mut self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        // Asked again only while the answer is "not a repository" and a `.git` appeared
        // since (one stat per call instead of a git process per iteration).
        let dot_git = self.dir.join(".git").symlink_metadata().is_ok();
        if self.git_dir.is_none() && (!self.git_dir_asked || dot_git) {
            self.git_dir_asked = true;
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
                files.extend(rd.flatten().map(|e| e.path()));
            }
        }
        for f in files {
            // mode and content (a hook that becomes executable starts to run), hashed
            // again only when the file's stat data moved (toolchain::content_digest)
            if let Some(d) = super::toolchain::file_digest(&f) {
                let rel = f
                    .strip_prefix(gd)
                    .unwrap_or(&f)
                    .to_string_lossy()
                    .into_owned();
                out.insert(format!(".git/{rel}"), d);
            }
        }
        out
    }

    /// Scans the workdir into the store and records it under `label`:
    /// `(tree, commit, excluded directories)`.
    fn snap(&mut self, label: &str) -> Result<(String, String, Vec<String>), String> {
        self.snap_with(label, true)
    }

    /// [`Self::snap`]; with `ref_if_same` false, a tree equal to the last snapshot's
    /// writes no ref for `label` (its commit is reachable under the earlier label):
    /// the snapshot after a check that changed nothing costs no file in the store.
    fn snap_with(
        &mut self,
        label: &str,
        ref_if_same: bool,
    ) -> Result<(String, String, Vec<String>), String> {
        // a watch covers the time since the scan it follows, not since this one
        self.quiet = None;
        let store = self.store.as_ref().ok_or("no snapshot store")?;
        let s = self.scanner.scan(store).map_err(|e| e.to_string())?;
        self.last_dirs = s.dirs;
        self.dependency_dirs = s
            .excluded
            .iter()
            .filter(|(_, why)| *why == "dependencies")
            .map(|(p, _)| p.clone())
            .collect();
        let commit = match &self.last_commit {
            // The same tree as the last snapshot: its commit is reused, only the ref of
            // this label is written.
            Some((tree, commit)) if *tree == s.tree => {
                if ref_if_same {
                    let refname =
                        git::snapshot_ref(&self.run_id, label).map_err(|e| e.to_string())?;
                    store.set_ref(&refname, commit).map_err(|e| e.to_string())?;
                }
                commit.clone()
            }
            _ => store
                .commit(&s.tree, &self.run_id, label)
                .map_err(|e| e.to_string())?,
        };
        self.last_commit = Some((s.tree.clone(), commit.clone()));
        self.last_tree = Some(s.tree.clone());
        self.last_entries = s.entries;
        match &s.changed {
            Some(changed) => self.refocus(changed),
            None => self.refocus_all(),
        }
        let excluded = s
            .excluded
            .into_iter()
            .map(|(p, why)| format!("{p} ({why})"))
            .collect();
        Ok((s.tree, commit, excluded))
    }

    /// Snapshot after the exec of iteration `it`, with its guard measurements.
    pub fn observe(&mut self, it: u32) -> TreeObs {
        let (tree, commit) = match self.snap(&it.to_string()) {
            Ok((t, c, _)) => {
                if self
                    .quiet_from
                    .is_some_and(|n| self.last_entries.len() >= n)
                {
                    self.quiet = super::watch::QuietWatch::start(&self.dir, &self.last_dirs);
                }
                (t, c)
            }
            Err(e) => {
                // The store taken away under the run is loopexec's state tampered with.
                let marker = store_path(&self.dir).join(super::store::STORE_MARKER);
                let state_tampered = if marker.exists() {
                    Vec::new()
                } else {
                    vec![format!(
                        "{} (the snapshot store was deleted)",
                        store_path(&self.dir).display()
                    )]
                };
                let m = TreeMeasures {
                    error: Some(format!("snapshot after the exec failed: {e}")),
                    state_tampered,
                    ..TreeMeasures::default()
                };
                return TreeObs {
                    tree: None,
                    snapshot: None,
                    measures: m,
                };
            }
        };
        let mut change_error = None;
        let changed = match (&self.t0_tree, &self.store) {
            (Some(t0), Some(store)) => match git::changed_paths(store.dir(), t0, &tree) {
                Ok(v) => v.into_iter().map(|c| c.path).collect(),
                Err(e) => {
                    change_error = Some(format!("changes since t0: {e}"));
                    Vec::new()
                }
            },
            _ => Vec::new(),
        };
        let mut m = self.measure(&tree, changed);
        if m.error.is_none() {
            if let Some(e) = change_error {
                m.available = false;
                m.error = Some(e);
            }
        }
        TreeObs {
            tree: Some(tree),
            snapshot: Some(commit),
            measures: m,
        }
    }

    /// The tree a check is judged on: the last snapshot's, or with `restore`, that
    /// tree with t0's frozen oracle put back (edited and deleted frozen files as they
    /// were at t0, runner configuration created since removed). Returns the tree id
    /// and the restored paths.
    ///
    /// # Errors
    /// No snapshot yet, or a store error, as text.
    pub fn judged_tree(&mut self, restore: bool) -> Result<(String, Vec<String>), String> {
        let tree = self
            .last_tree
            .clone()
            .ok_or("no snapshot of the tree to judge")?;
        let sdir = self
            .store
            .as_ref()
            .ok_or("no snapshot store")?
            .dir()
            .to_path_buf();
        if !(restore && self.t0_measures.is_some() && self.t0_entries.is_some()) {
            return Ok((tree, Vec::new()));
        }
        // Runner configuration is in focus, or reached through a linked directory;
        // created through a link, the link is what was created.
        let manifest_now =
            super::manifest::manifest_in(&sdir, &self.manifest_entries(&sdir)?, &|p| {
                self.runner_config_path(p)
            })
            .map_err(|e| e.to_string())?;
        let through: BTreeMap<String, String> = self
            .protected_aliases(&sdir)?
            .into_iter()
            .map(|a| (a.alias, a.link))
            .collect();
        let store = self.store.as_ref().ok_or("no snapshot store")?;
        let (Some(t0), Some(e0)) = (&self.t0_measures, &self.t0_entries) else {
            return Ok((tree, Vec::new()));
        };
        let now = &self.last_entries;
        let mut put_back: Vec<(&String, &FileEntry)> = Vec::new();
        for path in t0.frozen.keys().chain(t0.manifest.keys()) {
            if let Some(e) = e0.get(path) {
                if now.get(path) != Some(e) {
                    put_back.push((path, e));
                }
            }
        }
        let created: Vec<&String> = manifest_now
            .files
            .keys()
            .filter(|p| !t0.manifest.contains_key(*p))
            .filter_map(|p| match through.get(p) {
                Some(link) => Some(link),
                None => now.contains_key(p).then_some(p),
            })
            .collect();
        if put_back.is_empty() && created.is_empty() {
            return Ok((tree, Vec::new()));
        }
        let mut entries = (**now).clone();
        let mut restored = Vec::new();
        for (path, e) in put_back {
            entries.insert(path.clone(), e.clone());
            restored.push(path.clone());
        }
        for path in created {
            if entries.remove(path).is_some() {
                restored.push(path.clone());
            }
        }
        restored.sort();
        restored.dedup();
        let judged = store.write_tree(&entries).map_err(|e| e.to_string())?;
        Ok((judged, restored))
    }

    /// The dependency directories of the working tree at the last snapshot
    /// (root-relative: `.venv`, `web/node_modules`), which snapshots leave out.
    #[must_use]
    pub fn dependency_dirs(&self) -> &[String] {
        &self.dependency_dirs
    }

    /// The tree the next check will run on (the last snapshot's).
    #[must_use]
    pub fn tree_before_check(&self) -> Option<String> {
        self.last_tree.clone()
    }

    /// Starts (or, with `None`, stops) watching the tree from each exec's scan until
    /// the check after it ends, so that [`Self::after_check`] can skip its walk after a
    /// red check — when the last scan held at least `from_files` files. An inotify
    /// instance costs its creation and, when closed, a wait for an RCU grace period
    /// (on a thread of its own, or at exit), which is more than a walk of a few
    /// hundred files. A check in place writes into the tree it would watch: any write
    /// the watch sees means a walk; one it cannot see (through a memory mapping) is
    /// seen by the next exec's walk instead, so only which step made it is uncertain.
    pub fn watch_during_checks(&mut self, from_files: Option<usize>) {
        self.quiet_from = from_files;
        if from_files.is_none() {
            self.quiet = None;
        }
    }

    /// The tree after a check run: a snapshot labelled `<it>-check<attempt>`.
    ///
    /// With `may_reuse` (the caller's word that this check cannot converge: its exit
    /// was red) and a quiet watch since the exec's scan ([`Self::watch_during_checks`]),
    /// the tree is the exec's, observed by that watch, and no walk is made: nothing
    /// under any directory of the tree changed since it was scanned. A check that may
    /// converge is always walked: the tree a success leaves must be the one scanned.
    pub fn after_check(&mut self, it: u32, attempt: u32, may_reuse: bool) -> Option<String> {
        if let Some(mut w) = self.quiet.take() {
            if may_reuse && w.quiet() && self.last_tree.is_some() {
                return self.last_tree.clone();
            }
        }
        self.snap_with(&format!("{it}-check{attempt}"), false)
            .ok()
            .map(|s| s.0)
    }

    /// What changed between two trees of the store.
    #[must_use]
    pub fn check_writes(&self, before: &str, after: &str) -> CheckWrites {
        let mut w = CheckWrites::default();
        let Some(store) = &self.store else { return w };
        for c in git::changed_paths(store.dir(), before, after).unwrap_or_default() {
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

    /// Undoes what the exec steps after iteration `after` changed (the ratchet's
    /// revert, a resume from the last accepted iteration): every path an exec of a
    /// later iteration changed is put back as it is in `snapshot` (rewritten, or
    /// removed when the snapshot does not hold it). Paths only others changed (a
    /// person, a script writing its output into the workdir while the run goes on) are
    /// left alone, and so are excluded directories.
    ///
    /// # Errors
    /// The store error, as text.
    pub fn restore(&mut self, snapshot: &str, t: &Trajectory, after: u32) -> Result<(), String> {
        let store = self
            .store
            .as_ref()
            .ok_or("the snapshot store is not available")?;
        let mut paths = agent_changed_paths(store.dir(), t, after)?;
        // Files the user's git ignores are left alone by a revert, as git itself would
        // (a person's local files, a script's output written into the workdir): the
        // snapshots and the clean room still see them; only the revert spares them.
        for p in self.user_ignored(&paths) {
            paths.remove(&p);
        }
        self.scanner
            .sync_paths(store, snapshot, &paths)
            .map_err(|e| e.to_string())?;
        self.last_tree = None;
        Ok(())
    }

    /// Which of `paths` the user's repository ignores (`git check-ignore`); empty
    /// outside a git repository or when git cannot tell.
    fn user_ignored(&self, paths: &std::collections::BTreeSet<String>) -> Vec<String> {
        if paths.is_empty() || git::repo_root(&self.dir).is_none() {
            return Vec::new();
        }
        let mut input = Vec::new();
        for p in paths {
            input.extend_from_slice(p.as_bytes());
            input.push(0);
        }
        let mut cmd = git::git_cmd(&self.dir);
        cmd.args(["check-ignore", "-z", "--stdin"]);
        // check-ignore exits 1 when nothing is ignored: read stdout either way.
        let out = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .and_then(|mut c| {
                if let Some(mut si) = c.stdin.take() {
                    std::io::Write::write_all(&mut si, &input)?;
                }
                c.wait_with_output()
            });
        match out {
            Ok(o) => o
                .stdout
                .split(|b| *b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Re-reads the tree after something outside the observer changed it (a revert,
    /// a resume), so the next check's `tree_before` is right.
    ///
    /// Returns the tree's id.
    ///
    /// # Errors
    /// The snapshot error, as text.
    pub fn refresh(&mut self, label: &str) -> Result<String, String> {
        self.snap(label).map(|s| s.0)
    }

    /// When resuming, learn t0 from the receipt (and its files from the store).
    pub fn adopt_baseline(&mut self, t: &Trajectory) {
        if let Some(s) = &t.started {
            self.adopt_t0(s);
        }
    }

    /// Takes `s`'s t0 (its tree, snapshot and measurements, the files from the store)
    /// as this run's: on resuming, and for a run that starts from a tree an earlier
    /// run left unjudged (`run_started.inherits_unjudged`, with `measures` the t0
    /// measurements this run records). The last snapshot stays.
    pub fn adopt_t0(&mut self, s: &crate::receipt::RunStarted) {
        self.adopt_t0_measured(s, s.baseline.clone());
    }

    /// As [`Self::adopt_t0`], with `measures` as t0's measurements.
    pub fn adopt_t0_measured(
        &mut self,
        s: &crate::receipt::RunStarted,
        measures: Option<TreeMeasures>,
    ) {
        {
            self.t0_tree.clone_from(&s.git.baseline_tree);
            self.t0_commit.clone_from(&s.git.baseline_snapshot);
            self.t0_measures = measures;
            if let (Some(store), Some(tree)) = (&self.store, &self.t0_tree) {
                self.t0_entries = store.entries(tree).ok();
            }
            self.learn_oracle_from_t0();
            if let Some(e0) = &self.t0_entries {
                self.t0_focus = e0
                    .iter()
                    .filter(|(p, _)| self.in_focus(p))
                    .map(|(p, e)| (p.clone(), e.clone()))
                    .collect();
            }
            self.refocus_all();
        }
    }
}

/// The check's `PATH`: loopexec's own, without entries inside the workdir `dir` or
/// relative ones (the clean room drops those too).
fn check_path(dir: &Path) -> String {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|e| Path::new(e).is_absolute() && !Path::new(e).starts_with(dir))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests;

/// Lines added to code under test `path` (t0's `old`, now `new`) that reach a frozen
/// data file by one of `handles` ([`frozen::reaches_data`]), as runner-tampering hits
/// (rule "test data reached from code under test").
fn data_reached(
    path: &str,
    old: &str,
    new: &str,
    handles: &[String],
) -> Vec<super::tamper::TamperHit> {
    if handles.is_empty() {
        return Vec::new();
    }
    super::tamper_load::added_line_hits(
        path,
        old,
        new,
        "test data reached from code under test",
        |line| frozen::reaches_data(path, line, handles),
    )
}

/// Lines added to code under test `path` that name a test file the judged check leaves
/// out (`handles`, [`frozen::data_handles`] of each): a Python import of its module or
/// a literal naming it (`import_module("test_support")`), a literal naming the file
/// elsewhere (`require('./helpers.test')`). Left out, the file is missing from the
/// judged copy but present in the checkout, so code that reaches for it (an import with
/// a fallback) could be right only where it is missing: "left-out test file reached
/// from code under test".
fn left_out_reached(
    path: &str,
    old: &str,
    new: &str,
    handles: &[String],
) -> Vec<super::tamper::TamperHit> {
    if handles.is_empty() {
        return Vec::new();
    }
    let named = |line: &str| {
        frozen::reaches_data(path, line, handles)
            || (path.ends_with(".py")
                && super::tamper_more::string_literals(line).iter().any(|l| {
                    let l = l.trim_matches(|c| c == '\'' || c == '"');
                    let file = l.rsplit('/').next().unwrap_or(l);
                    handles.iter().any(|h| {
                        file == h
                            || file.strip_suffix(".py") == Some(h.as_str())
                            || l.rsplit('.').next() == Some(h.as_str())
                    })
                }))
    };
    super::tamper_load::added_line_hits(
        path,
        old,
        new,
        "left-out test file reached from code under test",
        named,
    )
}

/// The text of each of `entries` (path, entry) read from the store, as (path, text):
/// files over 1 MiB are left out (a test or a table is text; a large file is
/// generated data).
/// A test of which of `named` (t0's files) are programs: a file whose content starts
/// with `#!`, or an executable one without an extension (a built binary). Only files
/// without an extension, or executable ones, are read (up to 200).
fn programs(
    store: &SnapshotStore,
    e0: &BTreeMap<String, FileEntry>,
    named: &[String],
) -> impl Fn(&str) -> bool {
    let no_extension = |p: &str| !p.rsplit('/').next().unwrap_or(p).contains('.');
    let read: Vec<(&String, &FileEntry)> = named
        .iter()
        .filter_map(|p| e0.get_key_value(p))
        .filter(|(p, e)| e.mode == "100755" || no_extension(p))
        .take(200)
        .collect();
    let oids: Vec<String> = read.iter().map(|(_, e)| e.oid.clone()).collect();
    let blobs = git::cat_blobs(store.dir(), &oids).unwrap_or_default();
    let found: std::collections::BTreeSet<String> = read
        .iter()
        .zip(blobs)
        .filter(|((p, e), b)| {
            b.as_ref().is_some_and(|b| b.starts_with(b"#!"))
                || (e.mode == "100755" && no_extension(p))
        })
        .map(|((p, _), _)| (*p).clone())
        .collect();
    move |p: &str| found.contains(p)
}

fn texts_of(
    store: &SnapshotStore,
    entries: &[(&String, &FileEntry)],
) -> Result<Vec<(String, String)>, git::GitError> {
    let oids: Vec<String> = entries.iter().map(|(_, e)| e.oid.clone()).collect();
    Ok(entries
        .iter()
        .zip(git::cat_blobs(store.dir(), &oids)?)
        .filter_map(|((p, _), b)| {
            b.filter(|b| b.len() <= 1 << 20)
                .map(|b| ((*p).clone(), String::from_utf8_lossy(&b).into_owned()))
        })
        .collect())
}
