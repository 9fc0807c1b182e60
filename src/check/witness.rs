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

use crate::check::model::{Format, ParsedRun};
use std::path::{Path, PathBuf};

/// The plugin's source.
pub const PYTEST_PLUGIN: &str = include_str!("witness/loopexec_witness.py");

/// What the witness recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
pub struct PytestWitness {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub errors: u64,
    pub exitstatus: i64,
    pub collected: u64,
}

/// A witness set up for one check run.
pub struct Witness {
    dir: tempfile::TempDir,
    out: PathBuf,
}

impl Witness {
    /// Writes the plugin into a fresh directory.
    ///
    /// # Errors
    /// The directory or file cannot be written.
    pub fn prepare() -> std::io::Result<Witness> {
        let dir = tempfile::Builder::new()
            .prefix("loopexec-witness")
            .tempdir()?;
        std::fs::write(dir.path().join("loopexec_witness.py"), PYTEST_PLUGIN)?;
        let out = dir
            .path()
            .join(format!("w-{}.json", crate::proc::escape::new_token()));
        Ok(Witness { dir, out })
    }

    /// Environment for the check: `(name, value)` pairs; `base_pythonpath` is the
    /// check's `PYTHONPATH`, if any.
    #[must_use]
    pub fn env(&self, base_pythonpath: Option<&str>) -> Vec<(String, String)> {
        let pp = match base_pythonpath.filter(|p| !p.is_empty()) {
            Some(p) => format!("{}:{p}", self.dir.path().display()),
            None => self.dir.path().display().to_string(),
        };
        vec![
            ("PYTHONPATH".into(), pp),
            ("PYTEST_PLUGINS".into(), "loopexec_witness".into()),
            (
                "LOOPEXEC_WITNESS_FILE".into(),
                self.out.display().to_string(),
            ),
        ]
    }

    /// The witness file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.out
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
            }
        }
    }
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
        ];
        for (p, f, wit, complete) in table {
            let mut r = pytest_run(*p, *f);
            judge(&mut r, *wit);
            assert_eq!(r.complete, *complete, "{p} {f} {wit:?}");
        }
    }

    #[test]
    fn the_plugin_records_a_real_session_and_hides_its_path() {
        if std::process::Command::new("python3")
            .args(["-c", "import pytest"])
            .status()
            .map_or(true, |s| !s.success())
        {
            eprintln!("no pytest: skipped");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("test_x.py"),
            "import os\ndef test_a():\n    assert 'LOOPEXEC_WITNESS_FILE' not in os.environ\ndef test_b():\n    assert 1 == 2\n",
        )
        .unwrap();
        let wit = Witness::prepare().unwrap();
        let st = std::process::Command::new("python3")
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .current_dir(tmp.path())
            .envs(wit.env(None))
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert_eq!(st.code(), Some(1));
        let got = read(wit.path()).expect("witness written");
        assert_eq!((got.passed, got.failed, got.collected), (1, 1, 2));
    }
}
