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

use crate::check::model::{Format, ParsedRun};
use regex::Regex;
use std::path::Path;
use std::sync::OnceLock;

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
fn first_line(path: Option<&Path>, pick: impl Fn(&str) -> bool) -> Option<String> {
    let mut found = None;
    if let Some(p) = path {
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
    stdout: Option<&Path>,
    stderr: Option<&Path>,
    exit_code: Option<i32>,
) {
    if !super::util::is_red(exit_code) {
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
    if let Some(w) = why {
        run.not_run = Some(w);
    }
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
            judge(&mut run, Some(&out), Some(&err), Some(*exit));
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
