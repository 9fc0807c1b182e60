//! `loopexec parse`: what loopexec reads from a captured check run — the format, the
//! tests and their outcomes, the failing and collected sets, completeness.

use crate::check::parse::{self, CheckInput, FormatChoice};
use crate::cli::{Outcome, ParseArgs};
use serde_json::{json, Map};

pub(crate) fn run(a: &ParseArgs) -> Outcome {
    let choice = if a.format == "auto" {
        FormatChoice::Auto
    } else if let Some(f) = parse::format_from_name(&a.format) {
        FormatChoice::Fixed(f)
    } else {
        return Outcome::error(
            2,
            format!("unknown --format `{}`", a.format),
            Some(format!(
                "use auto or one of: {}",
                parse::format_names().join(", ")
            )),
        );
    };
    if a.stdout.is_none() && a.stderr.is_none() && a.reports.is_empty() {
        return Outcome::error(
            2,
            "nothing to parse".into(),
            Some("give --stdout FILE, --stderr FILE or --report FILE".into()),
        );
    }
    for p in a.stdout.iter().chain(a.stderr.iter()) {
        if let Err(e) = std::fs::metadata(p) {
            return Outcome::error(
                super::EXIT_ERROR,
                format!("cannot read {}: {e}", p.display()),
                Some("pass the file the check's output was saved to".into()),
            );
        }
    }
    let parsed = parse::parse_command(
        &CheckInput {
            stdout: a.stdout.as_deref(),
            stderr: a.stderr.as_deref(),
            exit_code: a.exit_code,
            reports: &a.reports,
        },
        choice,
        a.command.as_deref(),
    );
    let counts = parsed.counts();
    let failing = parsed.failing();
    let collected = parsed.collected();
    let mut f = Map::new();
    f.insert("format".into(), json!(parse::format_name(parsed.format)));
    f.insert("complete".into(), json!(parsed.complete));
    f.insert(
        "unattributed_failure".into(),
        json!(parsed.unattributed_failure),
    );
    // The synthetic `<runner>::<unattributed>` member stands for a failure no named
    // test owns: it is in `failing` (so F is never empty while red) but not in `tests`,
    // which lists only what the runner named.
    let named: Vec<&crate::check::model::TestResult> = parsed
        .tests
        .iter()
        .filter(|t| !t.id.ends_with(crate::check::model::UNATTRIBUTED_SUFFIX))
        .collect();
    f.insert(
        "tests".into(),
        serde_json::to_value(&named).unwrap_or_default(),
    );
    f.insert("counts".into(), json!(counts));
    f.insert("failing".into(), json!(failing));
    f.insert("collected".into(), json!(collected));
    f.insert("diagnostics".into(), json!(parsed.diagnostics));
    let mut human = format!(
        "format: {}\ncomplete: {}\nunattributed failure: {}\ncollected: {}  failing: {}\ncounts: {} passed, {} failed, {} skipped, {} flaky\n",
        parse::format_name(parsed.format),
        parsed.complete,
        parsed.unattributed_failure,
        collected.len(),
        failing.len(),
        counts.passed,
        counts.failed,
        counts.skipped,
        counts.flaky
    );
    for t in &parsed.tests {
        human.push_str(&format!("  {:<12} {}\n", t.outcome.as_str(), t.id));
        if let Some(m) = &t.message {
            if t.outcome.is_failing() {
                human.push_str(&format!(
                    "               {}\n",
                    m.lines().next().unwrap_or("")
                ));
            }
        }
    }
    for d in &parsed.diagnostics {
        human.push_str(&format!("note: {d}\n"));
    }
    Outcome::ok(f, human)
}
