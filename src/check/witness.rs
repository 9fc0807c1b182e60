//! Witnesses inside the runner: the runner itself says it reached its own end.
//!
//! A transcript is output the code under test can shape: it can print a complete green
//! pytest session and exit before pytest does. For pytest checks loopexec loads a small
//! plugin (`loopexec_witness`, through `PYTEST_PLUGINS`, from a directory of its own
//! put first on `PYTHONPATH`) that takes its output path out of the environment before
//! any test module is imported and, at `pytest_sessionfinish`, writes what pytest
//! counted. A pytest run that parsed as green without a witness, or whose witness
//! disagrees with the transcript, did not reach pytest's own end: the parse is marked
//! incomplete (the completeness layer, `metric_integrity_violation`).

use crate::check::model::{Format, Outcome, ParsedRun, TestResult};
use std::path::{Path, PathBuf};

/// The plugin's source.
pub const PYTEST_PLUGIN: &str = include_str!("witness/loopexec_witness.py");

/// The unittest witness's source, installed as `sitecustomize.py` in the plugin's
/// directory (first on the check's `PYTHONPATH`): see [`unittest`].
pub const UNITTEST_SITE: &str = include_str!("witness/sitecustomize.py");

pub mod unittest;

/// What the witness recorded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct PytestWitness {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub errors: u64,
    pub exitstatus: i64,
    pub collected: u64,
    /// The runner's own outcome-deciding functions (kept before any test module was
    /// imported) that were replaced by session end, dotted (`_pytest.python.Function.
    /// runtest`): code under test reaching into the runner at run time.
    #[serde(default)]
    pub tampered: Vec<String>,
    /// Ids of the tests that passed, as the transcript prints them (relative to the
    /// directory pytest was started in).
    #[serde(default)]
    pub passed_ids: Vec<String>,
    /// Ids of the tests that were skipped, likewise.
    #[serde(default)]
    pub skipped_ids: Vec<String>,
    /// Absolute paths of the files the reported tests came from (pytest's rootdir
    /// joined with each report's location; `?` where pytest gave none). `None` from a
    /// plugin that did not record them.
    #[serde(default)]
    pub test_files: Option<Vec<String>>,
    /// How many paths the plugin was given to skip at collection (`LOOPEXEC_DESELECT`,
    /// [`Witness::skip`]); 0 when it could not implement pytest's
    /// `pytest_ignore_collect` hook. `None` from a plugin that did not say.
    #[serde(default)]
    pub deselect_given: Option<u64>,
    /// Those of the paths to skip that a module was loaded from anyway (real paths,
    /// found in `sys.modules` by `__file__` at session end).
    #[serde(default)]
    pub deselected_imported: Vec<String>,
}

/// A witness set up for one check run: the plugin's directory (shared by every check,
/// see [`Witness::prepare`]), this check's module name for it, and the path this
/// check's witness file goes to (both removed when the `Witness` is dropped).
pub struct Witness {
    dir: PathBuf,
    module: String,
    out: PathBuf,
    unittest_out: PathBuf,
}

impl Drop for Witness {
    fn drop(&mut self) {
        // the files exist only while this check may run; a leftover costs disk, never a
        // verdict (every check loads and reads its own freshly named files)
        let _ = std::fs::remove_file(&self.out);
        let _ = std::fs::remove_file(&self.unittest_out);
        let _ = std::fs::remove_file(self.dir.join(format!("{}.py", self.module)));
        let _ = std::fs::remove_file(self.skip_file());
    }
}

impl Witness {
    /// Sets up the witness for one check: the plugin lives in
    /// `<state>/witness/<blake3(plugin)[..16]>/loopexec_witness.py`, written once and
    /// compared byte for byte before every check (rewritten when it differs, so a copy
    /// changed between checks is never loaded). Each check loads it under a module
    /// name of its own, `loopexec_witness_<random>` (a hard link made now): Python
    /// looks in the current directory before `PYTHONPATH` (`python -m pytest`), so a
    /// fixed name could be shadowed by a file of the tree, and this one is known to no
    /// process before the check starts. The witness files are fresh names in
    /// `out_dir` (the clean room's private directory, which nothing the exec left
    /// running can write; the temp directory for a check in place), which pytest and
    /// unittest create only when they run.
    ///
    /// # Errors
    /// The plugin's directory or file cannot be written.
    pub fn prepare(out_dir: &Path) -> std::io::Result<Witness> {
        let mut h = blake3::Hasher::new();
        h.update(PYTEST_PLUGIN.as_bytes());
        h.update(UNITTEST_SITE.as_bytes());
        let digest = h.finalize().to_hex();
        let dir = crate::engine::cleanroom::state_dir()
            .join("witness")
            .join(&digest.as_str()[..16]);
        Self::prepare_with(dir, out_dir)
    }

    /// [`Witness::prepare`] with the plugin in `dir` (tests).
    ///
    /// # Errors
    /// `dir` or the plugin file cannot be written.
    pub fn prepare_in(dir: PathBuf) -> std::io::Result<Witness> {
        Self::prepare_with(dir, &std::env::temp_dir())
    }

    /// [`Witness::prepare`] with the plugin in `dir` and the outputs in `out_dir`.
    fn prepare_with(dir: PathBuf, out_dir: &Path) -> std::io::Result<Witness> {
        let plugin = dir.join("loopexec_witness.py");
        for (file, text) in [
            (plugin.clone(), PYTEST_PLUGIN),
            (dir.join("sitecustomize.py"), UNITTEST_SITE),
        ] {
            if std::fs::read(&file).ok().as_deref() != Some(text.as_bytes()) {
                std::fs::create_dir_all(&dir)?;
                let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
                std::io::Write::write_all(&mut tmp, text.as_bytes())?;
                tmp.persist(&file).map_err(|e| e.error)?;
            }
        }
        let token = crate::proc::escape::new_token();
        std::fs::create_dir_all(out_dir)?;
        let out = out_dir.join(format!("loopexec-witness-{token}.json"));
        let unittest_out = out_dir.join(format!("loopexec-witness-{token}.unittest.jsonl"));
        let mut nonce = [0u8; 16];
        getrandom::getrandom(&mut nonce).map_err(std::io::Error::other)?;
        let module = format!("loopexec_witness_{}", crate::receipt::attest::hex(&nonce));
        std::fs::hard_link(&plugin, dir.join(format!("{module}.py")))?;
        Ok(Witness {
            dir,
            module,
            out,
            unittest_out,
        })
    }

    /// Environment for the check: `(name, value)` pairs; `base_pythonpath` is the
    /// check's `PYTHONPATH`, if any.
    #[must_use]
    pub fn env(&self, base_pythonpath: Option<&str>) -> Vec<(String, String)> {
        let pp = match base_pythonpath.filter(|p| !p.is_empty()) {
            Some(p) => format!("{}:{p}", self.dir.display()),
            None => self.dir.display().to_string(),
        };
        vec![
            ("PYTHONPATH".into(), pp),
            ("PYTEST_PLUGINS".into(), self.module.clone()),
            (
                "LOOPEXEC_WITNESS_FILE".into(),
                self.out.display().to_string(),
            ),
            (
                "LOOPEXEC_UNITTEST_WITNESS".into(),
                self.unittest_out.display().to_string(),
            ),
        ]
    }

    /// This check's list of files to skip, beside its plugin module (in the state
    /// directory, not in any tree a check reads).
    fn skip_file(&self) -> PathBuf {
        self.dir.join(format!("{}.skip", self.module))
    }

    /// Has both witnesses skip files the agent added since t0 (absolute paths): `tests`,
    /// test files nothing may import, and `others`, files pytest must not collect (a new
    /// module under `--doctest-modules`, a text file under `--doctest-glob`) that code
    /// may still import. Writes them to this check's skip file (NUL-terminated entries,
    /// `D<path>` for a test, `U<path>` for another, `M<path>` for another that is a bare
    /// package marker, read now, and first `R<root>`, the tree the
    /// check runs in, when given: the unittest witness then also writes down a new file
    /// whose code runs before any file of the tree, [`unittest::early_new`]) and
    /// returns the environment naming
    /// it, `LOOPEXEC_SKIP_FILE` (a file, not the value: thousands of new files would
    /// pass the kernel's limit on one variable). `None` when both are empty. See
    /// [`judge_deselection`].
    ///
    /// # Errors
    /// The skip file cannot be written.
    pub fn skip(
        &self,
        root: Option<&Path>,
        tests: &[PathBuf],
        others: &[PathBuf],
    ) -> std::io::Result<Option<(String, String)>> {
        if tests.is_empty() && others.is_empty() {
            return Ok(None);
        }
        let mut bytes = Vec::new();
        if let Some(root) = root {
            bytes.push(b'R');
            bytes.extend_from_slice(root.as_os_str().as_encoded_bytes());
            bytes.push(0);
        }
        for (tag, files) in [(b'D', tests), (b'U', others)] {
            for f in files {
                let marker = f.file_name().is_some_and(|n| n == "__init__.py")
                    && std::fs::read(f).is_ok_and(|t| {
                        std::str::from_utf8(&t)
                            .is_ok_and(crate::observe::oracle_scope::is_bare_package_marker)
                    });
                bytes.push(if marker { b'M' } else { tag });
                bytes.extend_from_slice(f.as_os_str().as_encoded_bytes());
                bytes.push(0);
            }
        }
        let path = self.skip_file();
        std::fs::write(&path, bytes)?;
        Ok(Some((
            "LOOPEXEC_SKIP_FILE".into(),
            path.display().to_string(),
        )))
    }

    /// The witness file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.out
    }

    /// The unittest witness's path (one JSON line per `TextTestRunner.run`).
    #[must_use]
    pub fn unittest_path(&self) -> &Path {
        &self.unittest_out
    }
}

/// Judges a pytest parse against its witness (`None`: no witness was written). A
/// non-pytest parse is left alone. A parse that shows no tests is left to the
/// evidence rule.
pub fn judge(parsed: &mut ParsedRun, witness: Option<PytestWitness>) {
    if parsed.format != Format::Pytest {
        return;
    }
    let counts = parsed.counts();
    if counts.passed + counts.failed + counts.skipped + counts.flaky == 0 {
        return;
    }
    match witness {
        None => {
            parsed.complete = false;
            parsed.diagnostics.push(
                "pytest's own witness was never written: the session did not reach pytest's end (an early exit, or a transcript printed by the code under test)".into(),
            );
        }
        Some(w) if !w.tampered.is_empty() => {
            parsed.complete = false;
            parsed.diagnostics.push(format!(
                "pytest's runner was changed during the session ({}): code under test reached into the runner, so its outcomes say nothing",
                w.tampered.join(", ")
            ));
        }
        Some(w) => {
            let failed = w.failed + w.errors;
            if w.passed != counts.passed + counts.flaky || failed != counts.failed {
                parsed.complete = false;
                parsed.diagnostics.push(format!(
                    "the transcript ({} passed, {} failed) disagrees with pytest's own witness ({} passed, {failed} failed)",
                    counts.passed + counts.flaky,
                    counts.failed,
                    w.passed
                ));
            } else {
                name_from_witness(parsed, &w);
            }
        }
    }
}

/// Whether a check gets the witness: every check does. Putting loopexec's directory
/// first on `PYTHONPATH` and naming the plugin in `PYTEST_PLUGINS` changes nothing for
/// a check that never starts pytest, and a check that starts it indirectly (`make
/// test`, `tox`, `sh run_tests.sh`, `uv run pytest`, `.venv/bin/python -m pytest`, an
/// absolute interpreter path) loads it wherever the environment passes through.
#[must_use]
pub fn wanted(_check: &str) -> bool {
    true
}

/// Adds the tests a quiet transcript counted but did not name, by the witness's ids:
/// the run then names every test it passed or skipped, so the collected set and the
/// objective are judged by name (a check pointed at other tests that pass in equal
/// number is seen). Tests the transcript named keep its outcome.
fn name_from_witness(parsed: &mut ParsedRun, w: &PytestWitness) {
    // the plugin appends an id wherever it counts one: lists that disagree with the
    // counts were edited, and name nothing
    let len = |v: &Vec<String>| u64::try_from(v.len()).unwrap_or(u64::MAX);
    if len(&w.passed_ids) != w.passed || len(&w.skipped_ids) != w.skipped {
        return;
    }
    let mut known: std::collections::HashSet<String> =
        parsed.tests.iter().map(|t| t.id.clone()).collect();
    for (ids, outcome) in [
        (&w.passed_ids, Outcome::Passed),
        (&w.skipped_ids, Outcome::Skipped),
    ] {
        for id in ids {
            if known.insert(id.clone()) {
                parsed.tests.push(TestResult {
                    id: id.clone(),
                    outcome,
                    message: None,
                });
            }
        }
    }
}

/// Programs that run their arguments in the caller's environment (`uv run pytest`).
const RUNNERS: &[&str] = &[
    "uv", "uvx", "poetry", "pdm", "hatch", "rye", "pipenv", "pipx",
];

/// True when a word names a Python interpreter or pytest, by its file name
/// (`python3`, `/usr/bin/python3.12`, `.venv/bin/python`, `pytest`, `py.test`).
#[must_use]
pub fn is_pytest_word(word: &str) -> bool {
    let name = word.rsplit('/').next().unwrap_or(word);
    name == "pytest" || name == "py.test" || crate::observe::toolchain::is_python(name)
}

/// An option (`-m`), a `VAR=value` assignment or a number (`timeout 60`, `5s`).
fn is_option_or_assignment(w: &str) -> bool {
    let assignment = w.contains('=') && !w.starts_with('=');
    let number = w
        .chars()
        .all(|c| c.is_ascii_digit() || c == '.' || c == 's');
    w.starts_with('-') || assignment || number
}

/// True when `check` certainly starts pytest (or Python) with loopexec's environment:
/// a part of the command line whose program (after `VAR=value`, `env`, `exec`,
/// `time`, `nice`, `timeout N`) is an interpreter or pytest by name, or one of
/// `RUNNERS` running one (`uv run pytest`, `poetry run python -m pytest`).
#[must_use]
pub fn certain(check: &str) -> bool {
    let mut normalized = check.to_string();
    for sep in ["&&", "||", ";", "|", "\n", "(", ")"] {
        normalized = normalized.replace(sep, "\u{1}");
    }
    normalized.split('\u{1}').any(|part| {
        let words: Vec<&str> = part
            .split_whitespace()
            .map(|w| w.trim_matches(['\'', '"']))
            .filter(|w| !is_option_or_assignment(w))
            .skip_while(|w| {
                matches!(
                    *w,
                    "env" | "exec" | "time" | "nice" | "command" | "timeout" | "!"
                )
            })
            .collect();
        match words.as_slice() {
            [first, ..] if is_pytest_word(first) => true,
            [first, rest @ ..] if RUNNERS.contains(&first.rsplit('/').next().unwrap_or(first)) => {
                rest.iter().take(3).any(|w| is_pytest_word(w))
            }
            _ => false,
        }
    })
}

/// True when a run of `check` must leave a witness when its output parses as pytest:
/// the command certainly starts pytest ([`certain`]), or t0's run of the check wrote
/// one (`t0_wrote`, from the baseline's `check_finished.pytest_witness`: the frozen
/// check passed the environment through then, and the frozen oracle has not changed).
#[must_use]
pub fn expected(check: &str, t0_wrote: Option<bool>) -> bool {
    certain(check) || t0_wrote == Some(true)
}

/// [`judge`] when the witness was `expected` ([`expected`]); otherwise a missing
/// witness is no evidence either way.
///
/// What happens when the output parses as pytest with tests in it but no witness was
/// written:
/// * for a command that should have loaded it (an interpreter or pytest by name,
///   `uv run pytest`…, or a check whose t0 run wrote one), the session did not reach
///   pytest's own end — the code under test printed the transcript and exited, or
///   killed the runner — so the parse is marked incomplete and a green exit is
///   `metric_integrity_violation` (layer `completeness`), never success;
/// * for a command that may not pass the environment through (`tox` and `nox` filter
///   it, a container or `env -i` drops it) and whose t0 run wrote none either, the
///   transcript is judged as printed, as before the witness existed; the receipt
///   records `pytest_witness: false`.
pub fn judge_expected(parsed: &mut ParsedRun, witness: Option<PytestWitness>, expected: bool) {
    if witness.is_none() && !expected {
        return;
    }
    judge(parsed, witness);
}

/// The test files of a witness that are not files of the judged tree: outside
/// `check_dir` (the clean room, or the workdir for a check in place), or inside it but
/// not among `tree` (the judged snapshot's paths, relative). A check that moved pytest
/// elsewhere (a sourced script that `cd`s into a directory of look-alike tests) ran
/// tests the tree does not hold, whatever their ids.
#[must_use]
pub fn foreign_test_files(
    w: &PytestWitness,
    check_dir: &Path,
    tree: &std::collections::BTreeMap<String, crate::observe::store::FileEntry>,
) -> Vec<String> {
    let root = std::fs::canonicalize(check_dir).unwrap_or_else(|_| check_dir.to_path_buf());
    w.test_files
        .iter()
        .flatten()
        .filter(|f| {
            let p = std::fs::canonicalize(f).unwrap_or_else(|_| PathBuf::from(f));
            let inside = p
                .strip_prefix(&root)
                .ok()
                .and_then(|r| r.to_str())
                .is_some_and(|r| tree.contains_key(r));
            !inside
        })
        .cloned()
        .collect()
}

/// Judges whether a check skipped the files it was told to ([`Witness::skip`]: `given`
/// entries in all, of which `skipped` are test files, relative paths for the message),
/// from the witness pytest wrote (`None`: none was). With a witness, the skip held when
/// the plugin was given every entry, no skipped test file was imported, and no reported
/// test came from one (pytest's ids start with the path); else the parse is marked
/// incomplete: the new files may have run beside the frozen tests and shaped their
/// verdict (SPEC §3.13). Without a witness nothing is judged here: an expected witness
/// that is missing is already [`judge_expected`]'s, and a check that never loads it (its
/// runner filters the environment) runs the new files as before.
pub fn judge_deselection(
    parsed: &mut ParsedRun,
    witness: Option<&PytestWitness>,
    skipped: &[String],
    given: usize,
) {
    let Some(w) = witness else {
        return;
    };
    if given == 0 {
        return;
    }
    let given = u64::try_from(given).unwrap_or(u64::MAX);
    let ran: Vec<&String> = skipped
        .iter()
        .filter(|f| {
            parsed
                .tests
                .iter()
                .any(|t| t.id.split("::").next() == Some(f.as_str()))
        })
        .collect();
    let why = if w.deselect_given != Some(given) {
        Some(format!(
            "pytest's witness was given {} of the {given} new file(s) to skip",
            w.deselect_given.unwrap_or(0)
        ))
    } else if !w.deselected_imported.is_empty() {
        Some(format!(
            "{} was imported during the session anyway",
            w.deselected_imported.join(", ")
        ))
    } else if !ran.is_empty() {
        Some(format!(
            "tests from {} ran anyway",
            ran.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    } else {
        None
    };
    if let Some(why) = why {
        skip_did_not_hold(parsed, given, skipped, &why);
    }
}

/// Marks `parsed` incomplete because a skip of `given` new files (`skipped` the test
/// files among them) did not hold, for the reason `why`.
fn skip_did_not_hold(parsed: &mut ParsedRun, given: u64, skipped: &[String], why: &str) {
    parsed.complete = false;
    parsed.diagnostics.push(format!(
        "the check was to skip the {given} file(s) the agent added since t0{}, and {why}: code in them may have run beside the frozen tests, so their outcomes say nothing",
        if skipped.is_empty() {
            String::new()
        } else {
            format!(" (test files: {})", skipped.join(", "))
        }
    ));
}

/// Reads the witness file, if the run wrote one.
#[must_use]
pub fn read(path: &Path) -> Option<PytestWitness> {
    let b = std::fs::read(path).ok()?;
    serde_json::from_slice(&b).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::model::{Counts, Outcome, TestResult};

    fn pytest_run(passed: u64, failed: u64) -> ParsedRun {
        ParsedRun {
            format: Format::Pytest,
            complete: true,
            unattributed_failure: false,
            tests: (0..failed)
                .map(|i| TestResult {
                    id: format!("t::f{i}"),
                    outcome: Outcome::Failed,
                    message: None,
                })
                .collect(),
            diagnostics: Vec::new(),
            summary: Some(Counts {
                passed,
                failed,
                skipped: 0,
                flaky: 0,
            }),
            not_run: None,
            unlisted: crate::check::model::Counts::default(),
            listed: None,
        }
    }

    fn w(passed: u64, failed: u64) -> PytestWitness {
        PytestWitness {
            passed,
            failed,
            skipped: 0,
            errors: 0,
            exitstatus: i64::from(failed > 0),
            collected: passed + failed,
            tampered: Vec::new(),
            passed_ids: Vec::new(),
            skipped_ids: Vec::new(),
            test_files: None,
            deselect_given: None,
            deselected_imported: Vec::new(),
        }
    }

    #[test]
    fn judge_table() {
        // (transcript passed, failed, witness) -> complete
        let table: &[(u64, u64, Option<PytestWitness>, bool)] = &[
            (3, 0, Some(w(3, 0)), true),
            (2, 1, Some(w(2, 1)), true),
            (3, 0, None, false),
            (3, 0, Some(w(2, 1)), false),
            (0, 0, None, true), // shows nothing: the evidence rule's
            (
                3,
                0,
                Some(PytestWitness {
                    tampered: vec!["_pytest.python.Function.runtest".into()],
                    ..w(3, 0)
                }),
                false,
            ),
        ];
        for (p, f, wit, complete) in table {
            let mut r = pytest_run(*p, *f);
            judge(&mut r, wit.clone());
            assert_eq!(r.complete, *complete, "{p} {f} {wit:?}");
        }
    }

    #[test]
    fn a_quiet_transcript_gets_the_witness_names_when_they_agree() {
        let ids = |v: &[&str]| v.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        let wit = PytestWitness {
            passed_ids: ids(&["t::p0", "t::p1"]),
            skipped_ids: ids(&["t::s0"]),
            skipped: 1,
            ..w(2, 1)
        };
        // ids padded behind the counts' back name nothing
        let padded = PytestWitness {
            passed_ids: ids(&["t::p0", "t::p1", "tests/test_calc.py::test_add"]),
            ..wit.clone()
        };
        let mut r = pytest_run(2, 1);
        judge(&mut r, Some(padded));
        assert_eq!(r.tests.len(), 1, "{:?}", r.tests);
        let mut r = pytest_run(2, 1);
        judge(&mut r, Some(wit.clone()));
        assert!(r.complete);
        let named: Vec<(String, Outcome)> =
            r.tests.iter().map(|t| (t.id.clone(), t.outcome)).collect();
        assert_eq!(
            named,
            vec![
                ("t::f0".to_string(), Outcome::Failed),
                ("t::p0".to_string(), Outcome::Passed),
                ("t::p1".to_string(), Outcome::Passed),
                ("t::s0".to_string(), Outcome::Skipped),
            ]
        );
        assert_eq!(r.counts().passed, 2, "counts unchanged by naming");
        // a witness that disagrees with the transcript names nothing
        let mut r = pytest_run(3, 0);
        judge(&mut r, Some(wit));
        assert!(!r.complete);
        assert!(r.tests.is_empty());
    }

    #[test]
    fn certain_table() {
        let table: &[(&str, bool)] = &[
            ("python3 -m pytest -q", true),
            ("pytest -q", true),
            (".venv/bin/python -m pytest -q", true),
            ("/usr/bin/python3.12 -m pytest", true),
            ("venv/bin/pytest tests", true),
            ("uv run pytest", true),
            ("uv run --frozen python -m pytest", true),
            ("poetry run pytest -x", true),
            ("PYTHONHASHSEED=0 timeout 60 python -m pytest", true),
            ("cd sub && python3 -m pytest", true),
            ("py.test", true),
            // Not certain: learned from t0's run instead.
            ("make test", false),
            ("tox -e py312", false),
            ("sh run_tests.sh", false),
            ("cargo test", false),
            ("node --test", false),
            ("uv sync", false),
            ("pythonic-tool run", false),
        ];
        for (cmd, want) in table {
            assert_eq!(certain(cmd), *want, "{cmd}");
        }
        assert!(expected("make test", Some(true)));
        assert!(!expected("make test", Some(false)));
        assert!(!expected("tox", None));
    }

    #[test]
    fn judge_expected_table() {
        // (witness, expected) -> complete, for a green pytest transcript
        let table: &[(Option<PytestWitness>, bool, bool)] = &[
            (None, true, false),
            (None, false, true),
            (Some(w(3, 0)), false, true),
            (Some(w(2, 1)), false, false),
            (Some(w(3, 0)), true, true),
        ];
        for (wit, exp, complete) in table {
            let mut r = pytest_run(3, 0);
            judge_expected(&mut r, wit.clone(), *exp);
            assert_eq!(r.complete, *complete, "{wit:?} {exp}");
        }
    }

    #[test]
    fn the_plugin_keeps_no_module_attribute_naming_the_file() {
        assert!(!PYTEST_PLUGIN.contains("_PATH ="));
        assert!(PYTEST_PLUGIN.contains("os.environ.pop(\"LOOPEXEC_WITNESS_FILE\""));
    }

    /// Runs `pytest -q` with the plugin over a directory holding `files` (name, text):
    /// the exit code, the witness (its file is removed when it is dropped) and the
    /// plugin directory's guard. `None` where pytest is not installed.
    fn pytest_session(files: &[(&str, &str)]) -> Option<(Option<i32>, Witness, tempfile::TempDir)> {
        pytest_session_skipping(files, &[]).map(|(code, wit, plugins, _)| (code, wit, plugins))
    }

    type Session = (Option<i32>, Witness, tempfile::TempDir, tempfile::TempDir);

    /// [`pytest_session`] whose plugin is told to skip `skip` (names of `files`); also
    /// returns the session's directory.
    fn pytest_session_skipping(files: &[(&str, &str)], skip: &[&str]) -> Option<Session> {
        let has = std::process::Command::new("python3")
            .args(["-c", "import pytest"])
            .status()
            .is_ok_and(|s| s.success());
        if !has {
            eprintln!("no pytest: skipped");
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(tmp.path().join(name), text).unwrap();
        }
        let plugins = tempfile::tempdir().unwrap();
        let wit = Witness::prepare_in(plugins.path().join("w")).unwrap();
        let absolute: Vec<PathBuf> = skip.iter().map(|f| tmp.path().join(f)).collect();
        let skip_env = wit.skip(None, &absolute, &[]).unwrap();
        let st = std::process::Command::new("python3")
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .current_dir(tmp.path())
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .envs(wit.env(Some(&tmp.path().display().to_string())))
            .envs(skip_env)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        Some((st.code(), wit, plugins, tmp))
    }

    /// A check in place skips the test files the agent added (a fifth review's
    /// `test_0.py` patched the code before the frozen tests ran): the listed file is
    /// never collected, its patch never runs, and the witness says it was given one
    /// path and none of them was imported. A file the tests import anyway (here
    /// through a joined module name) is reported as imported.
    #[test]
    fn the_plugin_skips_the_listed_files_and_reports_one_imported_anyway() {
        let calc = ("calc.py", "def add(a, b):\n    return a - b\n");
        let patch = (
            "test_0.py",
            "import calc\nvars(calc).update(add=lambda a, b: a + b)\ndef test_zero():\n    pass\n",
        );
        let frozen = (
            "test_calc.py",
            "from calc import add\ndef test_add():\n    assert add(2, 3) == 5\n",
        );
        let Some((code, wit, _p, tmp)) =
            pytest_session_skipping(&[calc, patch, frozen], &["test_0.py"])
        else {
            return;
        };
        assert_eq!(code, Some(1), "the patch ran: the frozen test passed");
        let got = read(wit.path()).expect("witness written");
        assert_eq!((got.passed, got.failed), (0, 1), "{got:?}");
        assert_eq!(got.deselect_given, Some(1));
        assert!(got.deselected_imported.is_empty(), "{got:?}");

        let reach = (
            "test_calc.py",
            "import importlib\nimportlib.import_module('test' + '_0')\nfrom calc import add\ndef test_add():\n    assert add(2, 3) == 5\n",
        );
        let Some((_, wit, _p, tmp2)) =
            pytest_session_skipping(&[calc, patch, reach], &["test_0.py"])
        else {
            return;
        };
        let got = read(wit.path()).expect("witness written");
        let real = std::fs::canonicalize(tmp2.path().join("test_0.py")).unwrap();
        assert_eq!(got.deselected_imported, vec![real.display().to_string()]);
        drop(tmp);
    }

    fn parsed_with(ids: &[&str]) -> ParsedRun {
        let mut p = pytest_run(ids.len() as u64, 0);
        p.tests = ids
            .iter()
            .map(|id| TestResult {
                id: (*id).to_string(),
                outcome: Outcome::Passed,
                message: None,
            })
            .collect();
        p
    }

    /// Whether a skip held, by what the witness says: every row is one witness and the
    /// parse's completeness after `judge_deselection` with one file to skip.
    #[test]
    fn judge_deselection_table() {
        let skip = vec!["tests/test_0.py".to_string()];
        let held = PytestWitness {
            deselect_given: Some(1),
            ..w(1, 0)
        };
        type Row = (
            &'static str,
            Option<PytestWitness>,
            &'static [&'static str],
            bool,
            bool,
        );
        let rows: Vec<Row> = vec![
            (
                "held",
                Some(held.clone()),
                &["tests/test_calc.py::test_add"],
                true,
                true,
            ),
            ("no witness: another judge's", None, &[], true, true),
            ("nothing to skip", Some(w(1, 0)), &[], false, true),
            (
                "plugin given nothing",
                Some(PytestWitness {
                    deselect_given: Some(0),
                    ..held.clone()
                }),
                &[],
                true,
                false,
            ),
            ("plugin that does not say", Some(w(1, 0)), &[], true, false),
            (
                "imported anyway",
                Some(PytestWitness {
                    deselected_imported: vec!["/w/tests/test_0.py".into()],
                    ..held.clone()
                }),
                &[],
                true,
                false,
            ),
            (
                "its tests ran",
                Some(held.clone()),
                &["tests/test_0.py::test_x"],
                true,
                false,
            ),
        ];
        for (name, wit, ids, skipping, complete) in rows {
            let skipped: &[String] = if skipping { &skip } else { &[] };
            let mut p = parsed_with(ids);
            judge_deselection(&mut p, wit.as_ref(), skipped, skipped.len());
            assert_eq!(p.complete, complete, "{name}: {:?}", p.diagnostics);
        }
    }

    /// Third review: `python -m pytest` imports from the current directory before
    /// `PYTHONPATH`, and a tree file named like the plugin was loaded in its place
    /// (forcing passes, writing a consistent witness). Each check's module name is
    /// its own now: the look-alike is never loaded, and the real plugin sees the
    /// failure.
    #[test]
    fn a_tree_file_named_like_the_plugin_is_not_loaded() {
        let fake = "import json, os\np = os.environ.get('LOOPEXEC_WITNESS_FILE')\ndef pytest_sessionfinish(session, exitstatus):\n    json.dump({'passed': 1, 'failed': 0, 'skipped': 0, 'errors': 0, 'exitstatus': 0, 'collected': 1}, open(p, 'w'))\n";
        let Some((_, wit, _plugins)) = pytest_session(&[
            ("loopexec_witness.py", fake),
            ("test_x.py", "def test_b():\n    assert 1 == 2\n"),
        ]) else {
            return;
        };
        let got = read(wit.path()).expect("witness written");
        assert_eq!((got.passed, got.failed), (0, 1), "{got:?}");
        let module = wit.module.clone();
        let link = wit.dir.join(format!("{module}.py"));
        assert!(link.exists());
        drop(wit);
        assert!(!link.exists(), "the check's module outlives its check");
    }

    #[test]
    fn the_plugin_records_a_real_session_and_hides_its_path() {
        let Some((code, wit, _plugins)) = pytest_session(&[(
            "test_x.py",
            "import os\ndef test_a():\n    assert 'LOOPEXEC_WITNESS_FILE' not in os.environ\ndef test_b():\n    assert 1 == 2\n",
        )]) else {
            return;
        };
        assert_eq!(code, Some(1));
        let got = read(wit.path()).expect("witness written");
        assert_eq!((got.passed, got.failed, got.collected), (1, 1, 2));
        assert_eq!(got.passed_ids, vec!["test_x.py::test_a".to_string()]);
        let out = wit.path().to_path_buf();
        drop(wit);
        assert!(!out.exists(), "the witness file outlives its check");
    }

    /// Second review of this stop: code under test registered a report wrapper that
    /// turned failures into passes; nothing guarded was replaced.
    #[test]
    fn a_report_wrapper_registered_by_code_under_test_is_tampering() {
        let Some((code, wit, _plugins)) = pytest_session(&[
            (
                "helper.py",
                "import gc, pytest\nfrom _pytest.config import Config\ncfg = next(o for o in gc.get_objects() if isinstance(o, Config))\nclass _P:\n    @pytest.hookimpl(wrapper=True)\n    def pytest_runtest_makereport(self, item, call):\n        rep = yield\n        if rep.outcome == 'failed':\n            rep.outcome = 'passed'; rep.longrepr = None\n        return rep\ncfg.pluginmanager.register(_P(), 'helper')\n",
            ),
            ("test_x.py", "import helper\ndef test_b():\n    assert 1 == 2\n"),
        ]) else {
            return;
        };
        assert_eq!(code, Some(0), "the wrapper made the failure pass");
        let got = read(wit.path()).expect("witness written");
        assert!(
            got.tampered
                .iter()
                .any(|t| t.contains("pytest_runtest_makereport")),
            "{got:?}"
        );
        let mut r = pytest_run(1, 0);
        judge(&mut r, Some(got));
        assert!(!r.complete, "{:?}", r.diagnostics);
    }

    /// Third review: a plugin registered by code under test whose
    /// `pytest_runtest_setup` swaps each test function for a no-op. Setup, teardown
    /// and collection hooks are watched like the outcome hooks; pytest's own plugin
    /// registered during the session (its fixture manager) is not tampering, so an
    /// honest session with fixtures and parameters names nothing.
    #[test]
    fn a_setup_hook_registered_by_code_under_test_is_tampering_and_pytests_own_is_not() {
        let Some((code, wit, _plugins)) = pytest_session(&[
            (
                "helper.py",
                "import gc\nfrom _pytest.config import Config\ncfg = next(o for o in gc.get_objects() if isinstance(o, Config))\nclass _P:\n    def pytest_runtest_setup(self, item):\n        item.obj = lambda *a, **k: None\ncfg.pluginmanager.register(_P(), 'helper')\n",
            ),
            ("test_x.py", "import helper\ndef test_b():\n    assert 1 == 2\n"),
        ]) else {
            return;
        };
        assert_eq!(code, Some(0), "the setup hook made the failure pass");
        let got = read(wit.path()).expect("witness written");
        assert_eq!(got.tampered.len(), 1, "{got:?}");
        assert!(got.tampered[0].contains("pytest_runtest_setup"), "{got:?}");
        let Some((code, wit, _plugins)) = pytest_session(&[(
            "test_y.py",
            "import pytest\n@pytest.fixture\ndef f():\n    yield 1\n@pytest.mark.parametrize('x', [1, 2])\ndef test_a(f, x):\n    assert f and x\n",
        )]) else {
            return;
        };
        assert_eq!(code, Some(0));
        let got = read(wit.path()).expect("witness written");
        assert_eq!(got.passed, 2);
        assert!(got.tampered.is_empty(), "{got:?}");
    }

    /// Seventh review: code under test walked up its frames to `_pytest.python`'s
    /// globals and swapped `pytest_pyfunc_call.__code__` for a body that calls no
    /// test; the function kept its identity. The witness compares code objects too,
    /// and its own hooks' as well.
    #[test]
    fn a_runner_function_whose_code_is_swapped_in_place_is_tampering() {
        let swap = "import sys\ndef _noop(pyfuncitem):\n    return True\nf = sys._getframe()\nwhile f is not None:\n    g = f.f_globals\n    fn = g.get('pytest_pyfunc_call')\n    if fn is not None and g.get('__name__') == '_pytest.python':\n        fn.__code__ = _noop.__code__\n        break\n    f = f.f_back\n";
        let Some((code, wit, _plugins)) = pytest_session(&[
            ("helper.py", swap),
            (
                "test_x.py",
                "import helper\ndef test_b():\n    assert 1 == 2\n",
            ),
        ]) else {
            return;
        };
        assert_eq!(code, Some(0), "the swapped body made the failure pass");
        let got = read(wit.path()).expect("witness written");
        assert!(
            got.tampered
                .iter()
                .any(|t| t.contains("pytest_pyfunc_call code replaced in place")),
            "{got:?}"
        );
        let mut r = pytest_run(1, 0);
        judge(&mut r, Some(got));
        assert!(!r.complete, "{:?}", r.diagnostics);
    }

    /// Seventh review: code under test rebound `_pytest.runner.TestReport` (a module
    /// global the runner looks up per test) to a subclass whose reports always pass;
    /// and `unittest.TestCase.run` to one that never calls the test method. Nothing on
    /// a guarded class was replaced; the module global and the method are guarded now.
    #[test]
    fn a_runner_global_rebound_or_a_test_case_run_replaced_is_tampering() {
        let rebind = "import _pytest.runner as r\nclass R(r.TestReport):\n    @classmethod\n    def from_item_and_call(cls, item, call):\n        rep = super(R, cls).from_item_and_call(item, call)\n        rep.outcome = 'passed'\n        rep.longrepr = None\n        return rep\nr.TestReport = R\n";
        let run = "import unittest\ndef _run(self, result=None):\n    result.startTest(self)\n    result.addSuccess(self)\n    result.stopTest(self)\nunittest.TestCase.run = _run\n";
        for (helper, test, guarded) in [
            (rebind, "import helper\ndef test_b():\n    assert 1 == 2\n", "_pytest.runner.TestReport replaced"),
            (run, "import helper, unittest\nclass T(unittest.TestCase):\n    def test_b(self):\n        self.assertEqual(1, 2)\n", "unittest.case.TestCase.run replaced"),
        ] {
            let Some((code, wit, _plugins)) =
                pytest_session(&[("helper.py", helper), ("test_x.py", test)])
            else {
                return;
            };
            assert_eq!(code, Some(0), "the cheat made the failure pass: {guarded}");
            let got = read(wit.path()).expect("witness written");
            assert!(got.tampered.iter().any(|t| t == guarded), "{got:?}");
        }
    }

    /// Eighth review: `TestCase.failureException` set to the exception unittest
    /// swallows (every failed assertion passes), and a trace function that can move a
    /// frame's line past the test's call. The class attribute is guarded; a trace or
    /// profile function appearing in a session that started without one is named.
    #[test]
    fn a_swallowed_failure_exception_or_a_tracer_is_tampering() {
        let swallow = "import unittest\nfrom unittest import case\nunittest.TestCase.failureException = case._ShouldStop\n";
        let tracer = "import sys\nsys.settrace(lambda frame, event, arg: None)\n";
        let case_test = "import helper, unittest\nclass T(unittest.TestCase):\n    def test_b(self):\n        self.assertEqual(1, 2)\n";
        let plain_test = "import helper\ndef test_b():\n    assert 1 == 2\n";
        for (helper, test, passes, named) in [
            (
                swallow,
                case_test,
                true,
                "unittest.case.TestCase.failureException replaced",
            ),
            (
                tracer,
                plain_test,
                false,
                "a trace or profile function installed during the session",
            ),
        ] {
            let Some((code, wit, _plugins)) =
                pytest_session(&[("helper.py", helper), ("test_x.py", test)])
            else {
                return;
            };
            assert_eq!(code == Some(0), passes, "{named}: exit {code:?}");
            let got = read(wit.path()).expect("witness written");
            assert!(got.tampered.iter().any(|t| t.starts_with(named)), "{got:?}");
        }
        // an honest session names nothing
        let Some((_, wit, _plugins)) =
            pytest_session(&[("test_y.py", "def test_a():\n    assert True\n")])
        else {
            return;
        };
        assert!(read(wit.path())
            .expect("witness written")
            .tampered
            .is_empty());
    }

    #[test]
    fn a_plugin_changed_between_checks_is_rewritten_before_the_next() {
        let plugins = tempfile::tempdir().unwrap();
        let dir = plugins.path().join("w");
        let first = Witness::prepare_in(dir.clone()).unwrap();
        let plugin = dir.join("loopexec_witness.py");
        std::fs::write(&plugin, "def pytest_sessionfinish(): pass\n").unwrap();
        let second = Witness::prepare_in(dir.clone()).unwrap();
        assert_eq!(std::fs::read_to_string(&plugin).unwrap(), PYTEST_PLUGIN);
        assert_ne!(
            first.path(),
            second.path(),
            "each check has its own witness file"
        );
    }
}
