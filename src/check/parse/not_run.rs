//! A check that never ran its tests: the runner refused the command (an unknown
//! subcommand, a missing npm script), stopped on a usage error, or collected nothing.
//!
//! Such a run is no verdict on the code: at the baseline it means the check is
//! broken, and the loop must stop (`execution_failure`) before any agent iteration is
//! spent. [`judge`] reads the runner's own words for it; the table below is the
//! grammar, with the source of each line:
//!
//! | runner | exit | output | source |
//! |---|---|---|---|
//! | cargo | non-zero | `error: no such command: `x`` (stderr) | cargo's CLI |
//! | npm, pnpm | non-zero | `npm ERR! Missing script: "x"` / `npm error Missing script: "x"` / `ERR_PNPM_NO_SCRIPT` | npm run |
//! | yarn | non-zero | `error Command "x" not found.` | yarn 1 |
//! | go | non-zero | `go x: unknown command` / `go: unknown subcommand` | go's CLI |
//! | pytest | 4 | usage error: the first `ERROR:` line (e.g. `file or directory not found`) | pytest exit codes |
//! | pytest | 5 | no tests collected: `no tests ran` / `collected 0 items` | pytest exit codes |
//! | pytest | 4 | `Error importing plugin "loopexec_witness_…"`: the check hid loopexec's `PYTHONPATH` entry (named with the fix) | pytest's plugin loader |
//!
//! A green exit is no verdict either when the runner executed nothing. A run that
//! named no test as passed or failed and counted none executed is read for the
//! runner's own report that it ran nothing (the first row for green runs only: a red
//! run with nothing executed is often a collection error the agent is there to fix):
//!
//! | runner | output (a whole line) | source |
//! |---|---|---|
//! | any runner whose counts loopexec reads | executed count 0 (`running 0 tests` in every cargo target, every test skipped) | the runner's summary |
//! | python unittest ≤ 3.11 (exit 0) | `Ran 0 tests in 0.000s` | unittest's text runner; 3.12 exits 5 |
//! | pytest | `no tests ran` | pytest's terminal summary |
//! | jest, vitest (`--passWithNoTests`) | `No tests found, exiting with code 0` / `No test files found, exiting with code 0` | their CLIs |
//! | mocha | `0 passing` | mocha's spec reporter epilogue |
//! | TAP producers | the plan `1..0` (with or without a `# SKIP` reason) | TAP 13/14: a plan of zero tests |
//! | go test | only `[no test files]` package lines, no `ok`/`FAIL` line | `go test`'s package summary |
//!
//! A check that prints none of these and names no test (`test -f done`) is judged by
//! its exit code alone.

use super::util::Source;
use crate::check::model::{Format, ParsedRun};
use regex::Regex;
use std::sync::OnceLock;

/// What pytest prints (exit 4) when a plugin named in `PYTEST_PLUGINS` cannot be
/// imported; loopexec's witness plugin is `loopexec_witness_<nonce>`.
const WITNESS_NOT_LOADED: &str = "Error importing plugin \"loopexec_witness_";

/// The cause and the fix, for a check whose pytest could not import the witness.
const WITNESS_HIDDEN: &str = "pytest could not import loopexec's witness plugin: the check sets PYTHONPATH itself (`PYTHONPATH=. pytest`) or starts Python isolated (`python -I`, `-E`), which hides the directory loopexec puts first on PYTHONPATH; extend it instead (`PYTHONPATH=.:$PYTHONPATH pytest`) and drop -I/-E";

/// Lines (either stream) that say the runner refused to run, when the exit is red.
const REFUSALS: &[&str] = &[
    r"^error: no such (?:sub)?command: ",
    r"^npm (?:ERR!|error) Missing script: ",
    r"ERR_PNPM_NO_SCRIPT",
    r#"^error Command ".*" not found\.?$"#,
    r"^go(?: \S+)?: unknown (?:sub)?command",
];

fn refusals() -> &'static [Regex] {
    static R: OnceLock<Vec<Regex>> = OnceLock::new();
    R.get_or_init(|| REFUSALS.iter().filter_map(|p| Regex::new(p).ok()).collect())
}

/// The first line of `path` (ANSI stripped, trimmed) for which `pick` is true.
fn first_line(src: Option<Source<'_>>, pick: impl Fn(&str) -> bool) -> Option<String> {
    let mut found = None;
    if let Some(p) = src {
        // an unreadable stream shows no refusal: nothing to report
        let _ = super::util::for_each_line(p, |l| {
            let l = super::util::strip_ansi(l);
            let t = l.trim();
            if pick(t) {
                let mut s = t.to_string();
                super::util::truncate_bytes(&mut s, 500);
                found = Some(s);
                return std::ops::ControlFlow::Break(());
            }
            std::ops::ControlFlow::Continue(())
        });
    }
    found
}

/// Sets [`ParsedRun::not_run`] when the output shows the runner never ran the tests
/// (see the module table). `exit_code` is the check's (as handed to the parsers).
pub fn judge(
    run: &mut ParsedRun,
    stdout: Option<Source<'_>>,
    stderr: Option<Source<'_>>,
    exit_code: Option<i32>,
) {
    if !super::util::is_red(exit_code) {
        if let Some(w) = ran_nothing(run, stdout, stderr, true) {
            run.not_run = Some(w);
        }
        return;
    }
    // a runner that reported a named test ran the tests (and its output need not be
    // read a second time)
    if run.unlisted.total() > 0
        || run
            .tests
            .iter()
            .any(|t| !t.id.ends_with(crate::check::model::UNATTRIBUTED_SUFFIX))
    {
        return;
    }
    let refused = |l: &str| refusals().iter().any(|r| r.is_match(l));
    let mut why = first_line(stderr, refused).or_else(|| first_line(stdout, refused));
    let witness = |l: &str| l.contains(WITNESS_NOT_LOADED);
    if why.is_none()
        && first_line(stderr, witness)
            .or_else(|| first_line(stdout, witness))
            .is_some()
    {
        why = Some(WITNESS_HIDDEN.to_string());
    }
    if why.is_none() && run.format == Format::Pytest {
        why = match exit_code {
            Some(4) => first_line(stderr, |l| l.starts_with("ERROR:"))
                .or_else(|| first_line(stdout, |l| l.starts_with("ERROR:")))
                .or_else(|| Some("pytest exited 4: usage error".into())),
            Some(5) => Some(
                first_line(stdout, |l| {
                    l.contains("no tests ran") || l.starts_with("collected 0 items")
                })
                .map_or_else(
                    || "pytest exited 5: no tests were collected".to_string(),
                    |l| {
                        format!(
                            "pytest exited 5 (no tests collected): {}",
                            l.trim_matches(['=', ' '])
                        )
                    },
                ),
            ),
            _ => None,
        };
    }
    // a red run's counts are not read for "nothing executed": a collection error (the
    // tests import a module the agent is to write) is red with nothing executed, and
    // is the agent's work, not a broken check
    if let Some(w) = why.or_else(|| ran_nothing(run, stdout, stderr, false)) {
        run.not_run = Some(w);
    }
}

/// Lines (either stream, trimmed) in which a runner says it executed no test.
const RAN_NOTHING: &[&str] = &[
    r"^Ran 0 tests in \S+$",
    r"(?:^|\s)no tests ran(?:\s|$)",
    r"^No tests? (?:files )?found, exiting with code 0",
    r"^0 passing(?: \(|$)",
    r"^1\.\.0(?:\s*#.*)?$",
];

fn ran_nothing_lines() -> &'static [Regex] {
    static R: OnceLock<Vec<Regex>> = OnceLock::new();
    R.get_or_init(|| {
        RAN_NOTHING
            .iter()
            .filter_map(|p| Regex::new(p).ok())
            .collect()
    })
}

/// Why a run executed no test (see the module table), or `None` when it executed one
/// or shows no runner at all. `by_counts`: a zero executed count or an all-skipped
/// run is enough (green runs); otherwise only the runner's own words are.
fn ran_nothing(
    run: &ParsedRun,
    stdout: Option<Source<'_>>,
    stderr: Option<Source<'_>>,
    by_counts: bool,
) -> Option<String> {
    use crate::check::model::UNATTRIBUTED_SUFFIX;
    let executed_named = run.tests.iter().any(|t| {
        !t.id.ends_with(UNATTRIBUTED_SUFFIX) && (t.outcome.is_passing() || t.outcome.is_failing())
    });
    let u = run.unlisted;
    let executed_unlisted = u.passed.saturating_add(u.failed).saturating_add(u.flaky) > 0;
    let counted = crate::check::model::counted_executed(run);
    if executed_named || executed_unlisted || counted.is_some_and(|n| n > 0) {
        return None;
    }
    let skipped = run
        .tests
        .iter()
        .filter(|t| t.outcome == crate::check::model::Outcome::Skipped)
        .count();
    if by_counts && (counted == Some(0) || skipped > 0) {
        let runner = super::runner_name(run.format);
        return Some(if skipped > 0 {
            format!("{runner} executed no test: every test it named ({skipped}) was skipped")
        } else {
            format!("{runner} counted 0 tests executed")
        });
    }
    let said = |l: &str| ran_nothing_lines().iter().any(|r| r.is_match(l));
    if let Some(l) = first_line(stdout, said).or_else(|| first_line(stderr, said)) {
        return Some(format!(
            "the runner executed no test: {}",
            l.trim_matches(['=', ' '])
        ));
    }
    // go test: every package line says `[no test files]`, none says `ok` or `FAIL`
    let package = |l: &str| l.starts_with("ok ") || l.starts_with("ok\t") || l.starts_with("FAIL");
    if first_line(stdout, package).is_none() {
        if let Some(l) = first_line(stdout, |l| l.ends_with("[no test files]")) {
            return Some(format!("go test found no test files: {l}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty(format: Format) -> ParsedRun {
        ParsedRun {
            format,
            complete: true,
            unattributed_failure: true,
            tests: Vec::new(),
            diagnostics: Vec::new(),
            summary: None,
            not_run: None,
            unlisted: crate::check::model::Counts::default(),
            listed: None,
        }
    }

    #[test]
    fn runners_that_refused_to_run_are_read_in_their_own_words() {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = dir.path().join("out");
        let err = dir.path().join("err");
        // (format, exit, stdout, stderr, expected message part; None = it ran)
        let table: &[(Format, i32, &str, &str, Option<&str>)] = &[
            (
                Format::ExitCode,
                101,
                "",
                "error: no such command: `tset`\n\n\tDid you mean `test`?\n",
                Some("`tset`"),
            ),
            (
                Format::ExitCode,
                1,
                "",
                "npm error Missing script: \"tset\"\n",
                Some("Missing script"),
            ),
            (
                Format::ExitCode,
                1,
                "",
                "npm ERR! Missing script: \"tset\"\n",
                Some("Missing script"),
            ),
            (
                Format::ExitCode,
                1,
                "error Command \"tset\" not found.\n",
                "",
                Some("not found"),
            ),
            (
                Format::Pytest,
                4,
                "no tests ran in 0.01s\n",
                "ERROR: file or directory not found: tests/x.py\n",
                Some("file or directory not found"),
            ),
            (
                Format::Pytest,
                5,
                "collected 0 items\n\n=== no tests ran in 0.01s ===\n",
                "",
                Some("no tests"),
            ),
            (Format::Pytest, 1, "=== 1 failed in 0.01s ===\n", "", None),
            // python 3.12's unittest with nothing discovered
            (
                Format::ExitCode,
                5,
                "",
                "\n---\nRan 0 tests in 0.000s\n\nNO TESTS RAN\n",
                Some("Ran 0 tests"),
            ),
            // a collection error is red with nothing executed: the agent's work
            (
                Format::Pytest,
                2,
                "E   ModuleNotFoundError: No module named 'calc'\n!!! Interrupted: 1 error during collection !!!\n=== 1 error in 0.05s ===\n",
                "",
                None,
            ),
            (
                Format::ExitCode,
                4,
                "",
                "ERROR: Error importing plugin \"loopexec_witness_0a1b\": No module named 'loopexec_witness_0a1b'\n",
                Some("PYTHONPATH=.:$PYTHONPATH"),
            ),
            (
                Format::ExitCode,
                0,
                "",
                "error: no such command: `x`\n",
                None,
            ),
            (
                Format::Libtest,
                101,
                "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured\n",
                "error: test failed, to rerun pass `--lib`\n",
                None,
            ),
        ];
        for (format, exit, o, e, want) in table {
            std::fs::write(&out, o).expect("write");
            std::fs::write(&err, e).expect("write");
            let mut run = empty(*format);
            judge(
                &mut run,
                Some(Source::File(&out)),
                Some(Source::File(&err)),
                Some(*exit),
            );
            match want {
                Some(w) => assert!(
                    run.not_run.as_deref().is_some_and(|m| m.contains(w)),
                    "{format:?} {exit}: {:?}",
                    run.not_run
                ),
                None => assert_eq!(run.not_run, None, "{format:?} {exit}"),
            }
        }
    }
}
