//! Test-output parsing: turns one check run (exit code, stdout, stderr, report files)
//! into a [`ParsedRun`].
//!
//! Owns the dispatcher [`parse`], the wire names of [`Format`], and one module per
//! format. Every file is streamed line by line (see [`util::for_each_line`]); only
//! per-test state is kept.
//!
//! # Merge policy
//!
//! 1. Report files (`CheckInput::reports`) are the primary source. Each is recognised
//!    by its first bytes ([`detect::detect_stream`]) and read by the structured
//!    parser (a report that is a recognised console log, e.g. a saved TAP file, is
//!    read by its text parser; an unrecognised one is tried as JUnit); several
//!    readable reports are concatenated (complete only if all are).
//!    A report that is missing, unreadable or not well-formed adds the diagnostic
//!    `report not well-formed: <path>: <error>` (or `report unreadable: ...`) and is
//!    otherwise ignored.
//! 2. Structured content found on stdout or stderr (libtest JSON, `go test -json`,
//!    jest/mocha/rspec JSON, JUnit printed to stdout, TeamCity) counts as a report.
//! 3. The text output is parsed with the detected (or fixed) text parser. When there
//!    is a primary source and the text run is complete and names at least as many
//!    tests as the primary, the text leads (its ids are the runner's own, e.g. pytest
//!    node ids where JUnit has dotted class names): `complete` is and-ed and
//!    `unattributed_failure` or-ed with the primary's, and a primary `flaky_passed`
//!    test upgrades its matching text test. Otherwise the primary leads, and the
//!    text, when its parser named at least one test, corrects it: a primary test
//!    that matches exactly one text test (the primary id ends with the whole text
//!    id, else with its part after the last `::`, at a separator) takes the text's
//!    outcome, because the runner's own console verdicts are what its reports
//!    sometimes lose (rerun attempts written as passes, CTest's not-run/disabled
//!    states, PHPUnit's risky tests written as errors). A primary `flaky_passed`
//!    stays flaky when the text says passed. Text tests that match nothing are not
//!    added (their ids belong to another naming scheme). `unattributed_failure` is
//!    or-ed in (a jest suite that failed to load is absent from jest-junit XML);
//!    `complete` is and-ed in.
//! 4. With no primary source, the text result stands. When nothing is recognised the
//!    format is `exit-code`: no tests, `complete = true` (a plain `test -f x` check
//!    has nothing more to show) and a red exit adds the synthetic member. If the exit
//!    code is unknown, or a report was given but could not be read, the run is
//!    `complete = false` and, unless the exit code is 0, unattributed-failing.
//! 5. Last, a red exit (non-zero) with no failing test adds the synthetic member
//!    `<runner>::<unattributed>` and sets `unattributed_failure` (invariant of the
//!    model: the failing set is never empty while the check is red). Runner-specific
//!    exceptions (pytest exit 5 = nothing selected) are decided by the text parser.

pub mod command;
pub mod detect;
pub mod hashed;
pub mod headline;
pub mod json;
pub mod junit;
pub mod structured;
pub mod teamcity;
pub mod util;

pub mod ctest;
pub mod gotest;
pub mod jest;
pub mod libtest;
pub mod lines;
pub mod mocha;
pub mod nextest;
pub mod node_test;
pub mod not_run;
pub mod phpunit;
pub mod pytest;
pub mod rspec;
pub mod tap;
pub mod unittest;
pub mod vitest;

#[cfg(test)]
mod sample_tests;
#[cfg(test)]
mod samples;
#[cfg(test)]
mod samples_test;

use crate::check::model::{Format, Outcome, ParsedRun, UNATTRIBUTED_SUFFIX};
use detect::Kind;
use std::fs::File;
use std::path::PathBuf;
use structured::StructuredError;
pub use util::{Listing, Source};

/// Everything observed from one check run.
#[derive(Debug, Clone, Copy)]
pub struct CheckInput<'a> {
    /// The check's captured stdout, if any (a file, or bytes kept in memory).
    pub stdout: Option<Source<'a>>,
    /// The check's captured stderr, if any.
    pub stderr: Option<Source<'a>>,
    /// The check's exit code (`None` when unknown, e.g. killed by a signal).
    pub exit_code: Option<i32>,
    /// Report files the check wrote (JUnit XML, JSON reports).
    pub reports: &'a [PathBuf],
}

/// Which format to read the output as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatChoice {
    /// Detect from the content.
    Auto,
    /// Use this format for stdout/stderr (reports are still recognised by content).
    Fixed(Format),
}

/// The streams handed to a text parser.
#[derive(Debug, Clone, Copy)]
pub struct TextInput<'a> {
    /// Captured stdout.
    pub stdout: Option<Source<'a>>,
    /// Captured stderr.
    pub stderr: Option<Source<'a>>,
    /// Exit code of the check.
    pub exit_code: Option<i32>,
    /// Which tests the parser lists by name.
    pub listing: Listing,
}

/// Every format with its kebab-case wire name (as in `model.rs`).
const NAMES: &[(Format, &str)] = &[
    (Format::Libtest, "libtest"),
    (Format::LibtestJson, "libtest-json"),
    (Format::Nextest, "nextest"),
    (Format::Pytest, "pytest"),
    (Format::Gotest, "gotest"),
    (Format::GotestJson, "gotest-json"),
    (Format::Jest, "jest"),
    (Format::JestJson, "jest-json"),
    (Format::Vitest, "vitest"),
    (Format::VitestJson, "vitest-json"),
    (Format::Mocha, "mocha"),
    (Format::MochaJson, "mocha-json"),
    (Format::Tap, "tap"),
    (Format::Junit, "junit"),
    (Format::Ctest, "ctest"),
    (Format::Rspec, "rspec"),
    (Format::RspecJson, "rspec-json"),
    (Format::Phpunit, "phpunit"),
    (Format::Teamcity, "teamcity"),
    (Format::Unittest, "unittest"),
    (Format::Lines, "lines"),
    (Format::ExitCode, "exit-code"),
];

/// The format with kebab-case wire name `name` (`"auto"` is the caller's business and
/// gives `None`, as does any unknown name).
#[must_use]
pub fn format_from_name(name: &str) -> Option<Format> {
    NAMES.iter().find(|(_, n)| *n == name).map(|(f, _)| *f)
}

/// The exit code to hand the parsers for a step that ended with `exit_code` or by
/// `signal`, when the check's success code is `success` (`--success-exit-code`).
///
/// Parsers read exit 0 as green. A check whose success code is N (not 0) is green on N,
/// so N is handed over as 0, and a 0 from such a check (not its success) as 1; a
/// signal is `128 + signal`, as a shell reports it.
#[must_use]
pub fn exit_for_parser(exit_code: Option<i32>, signal: Option<i32>, success: i32) -> Option<i32> {
    let code = exit_code.or(signal.map(|s| 128 + s))?;
    Some(match code {
        c if c == success => 0,
        0 => 1,
        c => c,
    })
}

/// Every format's wire name, in a fixed order (for help texts and errors).
#[must_use]
pub fn format_names() -> Vec<&'static str> {
    NAMES.iter().map(|(_, n)| *n).collect()
}

/// The kebab-case wire name of `f`.
#[must_use]
pub fn format_name(f: Format) -> &'static str {
    NAMES
        .iter()
        .find(|(g, _)| *g == f)
        .map_or("exit-code", |(_, n)| n)
}

/// Runs the structured parser for `kind` over a stream or report (JUnit honours
/// `listing`; the other structured parsers list every test).
fn parse_structured(
    kind: Kind,
    src: Source<'_>,
    listing: Listing,
) -> Result<ParsedRun, StructuredError> {
    let r = src.reader(64 * 1024)?;
    match kind {
        Kind::Junit => junit::parse_junit_with(r, listing),
        Kind::LibtestJson => json::parse_libtest_json(r),
        Kind::GotestJson => json::parse_gotest_json(r),
        Kind::JestJson => json::parse_jest_json(r),
        Kind::MochaJson => json::parse_mocha_json(r),
        Kind::RspecJson => json::parse_rspec_json(r),
        Kind::Teamcity => teamcity::parse_teamcity(r),
        _ => Err(StructuredError::NotRecognised),
    }
}

/// Text parsers that read only stdout (the others also read stderr).
fn reads_stdout_only(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Pytest
            | Kind::Gotest
            | Kind::Mocha
            | Kind::NodeTest
            | Kind::Tap
            | Kind::Ctest
            | Kind::Rspec
            | Kind::Phpunit
            | Kind::Unittest
    )
}

/// Runs the text parser for `kind`.
fn parse_text(kind: Kind, t: &TextInput) -> ParsedRun {
    match kind {
        Kind::Libtest => libtest::parse(t),
        Kind::Nextest => nextest::parse(t),
        Kind::Pytest => pytest::parse(t),
        Kind::Gotest => gotest::parse(t),
        Kind::Jest => jest::parse(t),
        Kind::Vitest => vitest::parse(t),
        Kind::Mocha => mocha::parse(t),
        Kind::NodeTest => node_test::parse(t),
        Kind::Tap => tap::parse(t),
        Kind::Ctest => ctest::parse(t),
        Kind::Rspec => rspec::parse(t),
        Kind::Phpunit => phpunit::parse(t),
        Kind::Unittest => unittest::parse(t),
        _ => lines::parse(t),
    }
}

/// Merges several primary results (reports) into one.
fn concat(runs: Vec<ParsedRun>) -> Option<ParsedRun> {
    let mut it = runs.into_iter();
    let mut acc = it.next()?;
    for r in it {
        acc.complete &= r.complete;
        acc.unattributed_failure |= r.unattributed_failure;
        for t in r.tests {
            if !acc.tests.iter().any(|x| x.id == t.id) {
                acc.tests.push(t);
            }
        }
        acc.diagnostics.extend(r.diagnostics);
        acc.summary = match (acc.summary, r.summary) {
            (Some(a), Some(b)) => Some(a.plus(b)),
            (a, b) => a.or(b),
        };
    }
    Some(acc)
}

/// The start of the diagnostic a fixed format leaves when it read no test and the
/// output reads as another format (`--test-format tap` over pytest's output); a
/// baseline check that has it halts `workspace_invalid` ([`crate::decide`]).
pub const FORMAT_MISMATCH: &str = "format mismatch:";

/// Reads one check run. Infallible: unreadable files and unknown formats become
/// `diagnostics`, an incomplete run, or an unattributed failure (see the module doc
/// for the merge policy).
#[must_use]
pub fn parse(input: &CheckInput, choice: FormatChoice) -> ParsedRun {
    parse_with(input, choice, Listing::Full)
}

/// How many sources (reports, structured streams, the text parse) [`parse`] would
/// read for `input`; only a single source can be read without every test's id (the
/// merge of several matches tests by id).
/// `detected` is what detection found in stdout and stderr.
fn source_count(
    input: &CheckInput,
    choice: FormatChoice,
    detected: &[Option<detect::Detected>],
) -> usize {
    let stream_sources = match choice {
        FormatChoice::Fixed(f) => match detect::Kind::from_format(f) {
            Some(k) if k.is_structured() => usize::from(input.stdout.or(input.stderr).is_some()),
            Some(_) => 1,
            None => 0,
        },
        FormatChoice::Auto => {
            let kinds: Vec<Kind> = detected.iter().flatten().map(|d| d.kind).collect();
            let structured = kinds.iter().filter(|k| k.is_structured()).count();
            structured + usize::from(kinds.iter().any(|k| !k.is_structured()))
        }
    };
    input.reports.len() + stream_sources
}

/// [`parse`] keeping the tests as `listing` asks. [`Listing::Failing`] and
/// [`Listing::Compact`] apply only when the run has a single source (one report, or
/// the output alone); otherwise every test is listed, as under [`Listing::Full`]. Either way the counts, the
/// failing set, completeness and diagnostics are those [`parse`] gives.
#[must_use]
pub fn parse_with(input: &CheckInput, choice: FormatChoice, listing: Listing) -> ParsedRun {
    parse_with_runner(input, choice, listing, None)
}

/// [`parse_with`] for a check whose command names its runner (`runner`, the kind
/// [`command::runner_format`] gives): under auto-detection a stream in which that
/// runner's signatures score at all is read as its output, even where another
/// kind scores higher or TeamCity messages would win outright, and no second
/// opinion is asked of it.
fn parse_with_runner(
    input: &CheckInput,
    choice: FormatChoice,
    listing: Listing,
    runner: Option<Kind>,
) -> ParsedRun {
    // What stdout and stderr hold (each scanned once, here).
    let streams = [input.stdout, input.stderr];
    let detected: Vec<Option<detect::Detected>> = streams
        .iter()
        .map(|s| s.and_then(detect::detect_stream))
        .collect();
    let listing = if listing != Listing::Full && source_count(input, choice, &detected) == 1 {
        listing
    } else {
        Listing::Full
    };
    let mut diagnostics = Vec::new();
    let mut primaries = Vec::new();
    let mut report_failed = false;
    for rep in input.reports {
        if let Err(e) = File::open(rep) {
            diagnostics.push(format!("report unreadable: {}: {e}", rep.display()));
            report_failed = true;
            continue;
        }
        let detected = detect::detect_stream(rep.as_path()).map(|d| d.kind);
        if let Some(k) = detected.filter(|k| !k.is_structured()) {
            // a console log handed over as a report (e.g. a saved TAP file)
            let r = parse_text(
                k,
                &TextInput {
                    stdout: Some(Source::File(rep)),
                    stderr: None,
                    exit_code: input.exit_code,
                    listing,
                },
            );
            primaries.push(r);
            continue;
        }
        let kind = detected.unwrap_or(Kind::Junit);
        match parse_structured(kind, Source::File(rep), listing) {
            Ok(r) => primaries.push(r),
            Err(e) => {
                diagnostics.push(format!("report not well-formed: {}: {e}", rep.display()));
                report_failed = true;
            }
        }
    }

    // Which stream holds what.
    let mut text_kind: Option<Kind> = None;
    let mut swap = false;
    let fixed = match choice {
        FormatChoice::Fixed(f) => Some(detect::Kind::from_format(f)),
        FormatChoice::Auto => None,
    };
    match fixed {
        Some(Some(k)) if k.is_structured() => {
            // a fixed structured format: read stdout (else stderr) with it
            if let Some(p) = input.stdout.or(input.stderr) {
                match parse_structured(k, p, listing) {
                    Ok(r) => primaries.push(r),
                    Err(e) => {
                        report_failed = true;
                        diagnostics.push(format!(
                            "output not well-formed as {}: {}: {e}",
                            format_name(k.format()),
                            p.path().display()
                        ));
                    }
                }
            }
        }
        Some(Some(k)) => {
            // node's spec/dot and TAP share the `tap` name: keep the finer detected kind
            let finer = detected
                .iter()
                .flatten()
                .find(|d| d.kind.format() == k.format())
                .map(|d| d.kind);
            text_kind = Some(finer.unwrap_or(k));
        }
        Some(None) => {}
        None => {
            // the stream the command's runner wrote, if its signatures are there
            let by_runner = runner.and_then(|r| {
                detected
                    .iter()
                    .position(|d| d.is_some_and(|d| d.kind == r || d.also.contains(&Some(r))))
            });
            for (i, (d, s)) in detected.iter().zip(streams).enumerate() {
                if let (Some(d), Some(p)) = (d, s) {
                    // the runner's stream is read as its text, not as what won it
                    // outright (TeamCity messages the tests printed)
                    if d.kind.is_structured() && by_runner != Some(i) {
                        match parse_structured(d.kind, p, listing) {
                            Ok(r) => primaries.push(r),
                            Err(e) => {
                                report_failed = true;
                                diagnostics.push(format!(
                                    "output not well-formed as {}: {}: {e}",
                                    format_name(d.kind.format()),
                                    p.path().display()
                                ));
                            }
                        }
                    }
                }
            }
            let best = detected
                .iter()
                .enumerate()
                .filter_map(|(i, d)| d.map(|d| (i, d)))
                .filter(|(_, d)| !d.kind.is_structured())
                // ties go to stdout
                .max_by(|(i, a), (j, b)| a.score.cmp(&b.score).then(j.cmp(i)));
            let best = match (by_runner, runner) {
                (Some(i), Some(kind)) => detected[i].map(|d| (i, detect::Detected { kind, ..d })),
                _ => best,
            };
            text_kind = best.map(|(_, d)| d.kind);
            // a runner that writes to stdout was captured on stderr (wrapper script)
            swap = best.is_some_and(|(i, d)| {
                i == 1 && reads_stdout_only(d.kind) && detected[0].map(|o| o.kind) != Some(d.kind)
            });
        }
    }

    let t = if swap {
        TextInput {
            stdout: input.stderr,
            stderr: input.stdout,
            exit_code: input.exit_code,
            listing,
        }
    } else {
        TextInput {
            stdout: input.stdout,
            stderr: input.stderr,
            exit_code: input.exit_code,
            listing,
        }
    };
    let text = text_kind.map(|k| parse_text(k, &t));
    let from_text = text.is_some() && primaries.is_empty();
    let mut run = match (concat(primaries), text) {
        (Some(p), Some(text)) => merge(p, text),
        (Some(p), None) => p,
        (None, Some(text)) => text,
        (None, None) => {
            let unknown = input.exit_code.is_none() || report_failed;
            ParsedRun {
                format: Format::ExitCode,
                complete: !unknown,
                unattributed_failure: input.exit_code != Some(0),
                tests: Vec::new(),
                diagnostics: Vec::new(),
                summary: None,
                not_run: None,
                unlisted: crate::check::model::Counts::default(),
                listed: None,
            }
        }
    };
    if fixed.is_none() && !(runner.is_some() && text_kind == runner) {
        second_opinions(&mut run, input, &detected, text_kind);
    }
    diagnostics.append(&mut run.diagnostics);
    run.diagnostics = diagnostics;
    // a fixed format that read no test where detection finds another runner's output
    // (a new user's `--test-format tap` over pytest's output read nothing, and the
    // honest green that followed was taken for a runner cut short)
    if let Some(Some(k)) = fixed {
        if named_count(&run) == 0 {
            if let Some(d) = detected
                .iter()
                .flatten()
                .find(|d| d.kind.format() != k.format())
            {
                let (is, given) = (format_name(d.kind.format()), format_name(k.format()));
                run.diagnostics.push(format!(
                    "{FORMAT_MISMATCH} the output reads as {is}, not {given}: --test-format {is} reads it (or leave the format out to detect it)"
                ));
            }
        }
    }
    // killed or unknown exit with nothing to show for it
    if input.exit_code.is_none() && named_count(&run) == 0 {
        run.complete = false;
        run.unattributed_failure = true;
    }
    // a text parser already judged its runner's exit code (e.g. pytest's 5)
    if !from_text
        && util::is_red(input.exit_code)
        && !run.tests.iter().any(|t| t.outcome.is_failing())
    {
        run.unattributed_failure = true;
    }
    if run.unattributed_failure
        && !run
            .tests
            .iter()
            .any(|t| t.id.ends_with(UNATTRIBUTED_SUFFIX))
    {
        let runner = runner_name(run.format);
        let msg = stderr_tail(input.stderr);
        run.tests.push(util::unattributed(runner, msg));
    }
    not_run::judge(&mut run, input.stdout, input.stderr, input.exit_code);
    run
}

/// Asks the other text kinds a stream also reads as ([`detect::Detected::also`]),
/// when `run` names no failing test: every test one of them reads as failing is
/// added to `run`, with a diagnostic. Fail closed: code under test that prints a
/// second runner's verdicts, so many that detection prefers them, cannot hide the
/// real runner's failures (a fresh review's TAP lines outscored `cargo test`'s own
/// output behind a `| tee` that hid its exit code). `chosen` is the kind the text
/// parse used.
fn second_opinions(
    run: &mut ParsedRun,
    input: &CheckInput,
    detected: &[Option<detect::Detected>],
    chosen: Option<Kind>,
) {
    // a run the chosen parse already holds red by name stays red; asking then would
    // only add the same failures under a second runner's names
    if run
        .tests
        .iter()
        .any(|t| t.outcome.is_failing() && !t.id.ends_with(UNATTRIBUTED_SUFFIX))
    {
        return;
    }
    for (i, d) in detected.iter().enumerate() {
        let Some(d) = d else { continue };
        for k in d.also.iter().flatten().copied() {
            if Some(k) == chosen || k.is_structured() {
                continue;
            }
            let (stdout, stderr) = if i == 0 {
                (input.stdout, input.stderr)
            } else {
                (input.stderr, input.stdout)
            };
            let other = parse_text(
                k,
                &TextInput {
                    stdout,
                    stderr,
                    exit_code: input.exit_code,
                    listing: Listing::Failing,
                },
            );
            let mut added = Vec::new();
            for t in other.tests {
                if !t.outcome.is_failing() || t.id.ends_with(UNATTRIBUTED_SUFFIX) {
                    continue;
                }
                let held = run.tests.iter().any(|r| {
                    r.outcome.is_failing() && (r.id == t.id || ends_with_key(&r.id, &t.id))
                });
                if held {
                    continue;
                }
                added.push(t.id.clone());
                // the same id read as passing by the chosen parse is failing now
                match run.tests.iter_mut().find(|r| r.id == t.id) {
                    Some(r) => *r = t,
                    None => run.tests.push(t),
                }
            }
            if !added.is_empty() {
                run.diagnostics.push(format!(
                    "the output also reads as {} output, which names failing tests this parse \
                     did not: {} (they are counted as failing)",
                    format_name(k.format()),
                    added.join(", ")
                ));
            }
        }
    }
}

/// [`parse`], then the judgments only the check command itself allows (see
/// [`command::judge`]): plain `cargo test` stops at the first failing test target, so
/// the targets after it never ran although the output looks like a finished run.
/// `command` is the check command as configured (before any isolation wrapper).
#[must_use]
pub fn parse_command(input: &CheckInput, choice: FormatChoice, command: Option<&str>) -> ParsedRun {
    parse_command_with(input, choice, command, Listing::Full)
}

/// [`parse_command`] keeping the tests as `listing` asks (see [`parse_with`]).
#[must_use]
pub fn parse_command_with(
    input: &CheckInput,
    choice: FormatChoice,
    command: Option<&str>,
    listing: Listing,
) -> ParsedRun {
    let runner = command
        .and_then(command::runner_format)
        .and_then(detect::Kind::from_format);
    let mut run = parse_with_runner(input, choice, listing, runner);
    if let Some(cmd) = command {
        command::judge(&mut run, cmd, input.stderr);
    }
    run
}

/// Number of named (non-synthetic) tests in a run, the unlisted ones included.
fn named_count(r: &ParsedRun) -> usize {
    let unlisted = usize::try_from(r.unlisted.total()).unwrap_or(usize::MAX);
    r.tests
        .iter()
        .filter(|t| !t.id.ends_with(UNATTRIBUTED_SUFFIX))
        .count()
        .saturating_add(unlisted)
}

/// Combines a structured result with the text parse of the same run (module doc,
/// step 3).
fn merge(mut p: ParsedRun, mut text: ParsedRun) -> ParsedRun {
    let named = named_count(&text);
    if named > 0 && text.complete && named >= named_count(&p) {
        // the console named every test: it leads, the report adds its flags and the
        // retries it knows of
        text.complete &= p.complete;
        text.unattributed_failure |= p.unattributed_failure;
        for r in p.tests.iter().filter(|r| r.outcome == Outcome::FlakyPassed) {
            if let Some(i) = find_report_match(&text.tests, &r.id) {
                if text.tests[i].outcome == Outcome::Passed {
                    text.tests[i].outcome = Outcome::FlakyPassed;
                }
            }
        }
        // fail closed: a test the report holds as failing stays failing, whatever
        // the console says of it or leaves out (a fresh review's stdout named three
        // passing tests and the report's failing one disappeared)
        let mut kept = Vec::new();
        for r in p
            .tests
            .into_iter()
            .filter(|r| r.outcome.is_failing() && !r.id.ends_with(UNATTRIBUTED_SUFFIX))
        {
            match find_report_match(&text.tests, &r.id) {
                Some(i) if text.tests[i].outcome.is_failing() => {}
                Some(i) => {
                    kept.push(r.id.clone());
                    text.tests[i] = r;
                }
                None => {
                    kept.push(r.id.clone());
                    text.tests.push(r);
                }
            }
        }
        if !kept.is_empty() {
            text.diagnostics.push(format!(
                "the report holds failing tests the console output does not show failing: {} \
                 (kept failing)",
                kept.join(", ")
            ));
        }
        text.diagnostics.append(&mut p.diagnostics);
        text.summary = text.summary.or(p.summary);
        return text;
    }
    merge_text(&mut p, text);
    p
}

/// Adds what the text output knows to a structured primary result.
fn merge_text(p: &mut ParsedRun, text: ParsedRun) {
    let named: Vec<_> = text
        .tests
        .iter()
        .filter(|t| !t.id.ends_with(UNATTRIBUTED_SUFFIX))
        .collect();
    p.summary = p.summary.or(text.summary);
    if named.is_empty() {
        p.diagnostics.extend(text.diagnostics);
        return;
    }
    p.complete &= text.complete;
    if text.unattributed_failure && !p.unattributed_failure {
        p.unattributed_failure = true;
        if let Some(s) = text
            .tests
            .iter()
            .find(|t| t.id.ends_with(UNATTRIBUTED_SUFFIX))
        {
            p.tests.push(s.clone());
        }
    }
    for t in &named {
        let Some(i) = find_match(&p.tests, &t.id) else {
            continue;
        };
        let r = &mut p.tests[i];
        if r.outcome == t.outcome
            || (r.outcome == Outcome::FlakyPassed && t.outcome == Outcome::Passed)
        {
            continue;
        }
        r.outcome = t.outcome;
        if t.outcome.is_failing() {
            if r.message.is_none() {
                r.message.clone_from(&t.message);
            }
        } else {
            r.message = None;
        }
    }
}

/// True when `id` ends with `key` and the character before `key` is a separator
/// (or `key` is the whole id).
fn ends_with_key(id: &str, key: &str) -> bool {
    if key.is_empty() || !id.ends_with(key) {
        return false;
    }
    let before = &id[..id.len() - key.len()];
    before.is_empty()
        || [":", ".", " ", "/", "#", ">", "›", "\\"]
            .iter()
            .any(|s| before.ends_with(s))
}

/// The one primary test a text-parsed id refers to: first by the whole text id,
/// then by its part after the last `::`, `/`-free; `None` when none or several match.
fn find_match(tests: &[crate::check::model::TestResult], text_id: &str) -> Option<usize> {
    let tail = text_id.rsplit("::").next().unwrap_or(text_id);
    for key in [text_id, tail] {
        let hits: Vec<usize> = tests
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.id.ends_with(UNATTRIBUTED_SUFFIX) && ends_with_key(&r.id, key))
            .map(|(i, _)| i)
            .collect();
        match hits.as_slice() {
            [i] => return Some(*i),
            [] => {}
            _ => return None,
        }
    }
    None
}

/// The console test a report's test `report_id` is: [`find_match`], else the one
/// console id the report's ends with once the separators agree — a report names a
/// test file by its absolute path and joins titles with ` > ` (jest's `--json`:
/// `/…/tree/__tests__/calc.test.js > adds`), the console by the path from where the
/// runner started, with ` › ` (`__tests__/calc.test.js › adds`); counted twice, the
/// absolute id was a test "lost" once the run went green (a new user's false alarm).
fn find_report_match(tests: &[crate::check::model::TestResult], report_id: &str) -> Option<usize> {
    if let Some(i) = find_match(tests, report_id) {
        return Some(i);
    }
    let norm = |s: &str| s.replace(" \u{203a} ", " > ");
    let report = norm(report_id);
    let mut hits = tests.iter().enumerate().filter(|(_, t)| {
        if t.id.ends_with(UNATTRIBUTED_SUFFIX) {
            return false;
        }
        let text = norm(&t.id);
        report == text || report.ends_with(&format!("/{text}"))
    });
    match (hits.next(), hits.next()) {
        (Some((i, _)), None) => Some(i),
        _ => None,
    }
}

/// The runner name used in the synthetic id for a format.
#[must_use]
pub fn runner_name(f: Format) -> &'static str {
    match f {
        Format::Libtest | Format::LibtestJson => "cargo",
        Format::Nextest => "nextest",
        Format::Pytest => "pytest",
        Format::Gotest | Format::GotestJson => "go",
        Format::Jest | Format::JestJson => "jest",
        Format::Vitest | Format::VitestJson => "vitest",
        Format::Mocha | Format::MochaJson => "mocha",
        Format::Tap => "tap",
        Format::Junit => "junit",
        Format::Ctest => "ctest",
        Format::Rspec | Format::RspecJson => "rspec",
        Format::Phpunit => "phpunit",
        Format::Teamcity => "teamcity",
        Format::Unittest => "unittest",
        Format::Lines => "lines",
        Format::ExitCode => "check",
    }
}

/// The failure text of stderr ([`headline::Headline`]: a compiler's error line, a
/// traceback's exception, else the last lines), as the synthetic member's message.
fn stderr_tail(stderr: Option<Source<'_>>) -> Option<String> {
    let mut h = headline::Headline::new();
    let mut ignore = Vec::new();
    util::feed_lines(stderr, &mut ignore, |l| h.line(&util::strip_ansi(l)));
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (f, n) in NAMES {
            assert_eq!(format_from_name(n), Some(*f));
            assert_eq!(format_name(*f), *n);
        }
        assert_eq!(format_from_name("auto"), None);
    }

    #[test]
    fn missing_report_is_a_diagnostic_not_green() {
        let reports = vec![PathBuf::from("/nonexistent/ptext/report.xml")];
        let run = parse(
            &CheckInput {
                stdout: None,
                stderr: None,
                exit_code: Some(1),
                reports: &reports,
            },
            FormatChoice::Auto,
        );
        assert!(!run.complete);
        assert!(run.unattributed_failure);
        assert!(run.diagnostics[0].contains("/nonexistent/ptext/report.xml"));
        assert_eq!(run.failing().len(), 1);
    }

    /// Code under test printing another runner's verdicts, enough of them that
    /// detection prefers that runner, does not hide the real runner's failing test
    /// (a fresh review's TAP and TeamCity decoys over `cargo test` output whose exit
    /// code a `| tee` hid); the honest output parses as before.
    #[test]
    fn a_decoy_runner_does_not_hide_the_real_runners_failures() {
        let cargo = "     Running tests/t.rs (target/debug/deps/t-617a6a46267baad3)\n\n\
            running 2 tests\ntest other ... ok\ntest adds ... FAILED\n\nfailures:\n\n\
            ---- adds stdout ----\nthread 'adds' panicked at tests/t.rs:1:21:\n\
            assertion `left == right` failed\n\nfailures:\n    adds\n\n\
            test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; \
            finished in 0.06s\n\n";
        let tap = "TAP version 13\n".repeat(3)
            + "1..2\nok 1 - adds\nok 2 - other\n"
            + &"Files=1, Tests=2\nResult: PASS\n".repeat(3);
        let teamcity = "##teamcity[testStarted name='adds']\n\
            ##teamcity[testFinished name='adds']\n"
            .repeat(2);
        for (name, text, format) in [
            ("honest", cargo.to_string(), Format::Libtest),
            ("tap decoy", tap + cargo, Format::Tap),
            ("teamcity decoy", teamcity + cargo, Format::Teamcity),
        ] {
            let dir = tempfile::tempdir().expect("temp dir");
            let out = dir.path().join("out.txt");
            std::fs::write(&out, text).expect("write");
            for exit_code in [0, 101] {
                let input = CheckInput {
                    stdout: Some(Source::File(&out)),
                    stderr: None,
                    exit_code: Some(exit_code),
                    reports: &[],
                };
                let named_failing = |run: &ParsedRun| -> Vec<String> {
                    run.failing()
                        .into_iter()
                        .filter(|id| !id.ends_with(UNATTRIBUTED_SUFFIX))
                        .collect()
                };
                let noted =
                    |run: &ParsedRun| run.diagnostics.iter().any(|d| d.contains("also reads as"));
                let run = parse(&input, FormatChoice::Auto);
                assert_eq!(run.format, format, "{name}");
                assert_eq!(named_failing(&run), ["adds"], "{name}, exit {exit_code}");
                assert_eq!(
                    noted(&run),
                    name != "honest",
                    "{name}: {:?}",
                    run.diagnostics
                );
                // a command that names the runner: read as its output, no second
                // opinion asked
                let tee = "cargo test --no-fail-fast 2>&1 | tee test.log";
                let run = parse_command(&input, FormatChoice::Auto, Some(tee));
                assert_eq!(run.format, Format::Libtest, "{name}");
                assert_eq!(named_failing(&run), ["adds"], "{name}, exit {exit_code}");
                assert!(!noted(&run), "{name}");
            }
        }
    }

    /// A passing `cargo test` whose tests print another runner's failing verdicts
    /// (a fixture written to the inherited stdout) is green when the command names
    /// cargo; the bare output, whose runner nothing names, is read fail-closed.
    #[test]
    fn a_named_runner_is_not_second_guessed_by_printed_fixtures() {
        let cargo = "running 2 tests\ntest render ... ok\ntest other ... ok\n\n\
            test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; \
            finished in 0.06s\n\n";
        let fixture = "TAP version 13\n1..2\nok 1 - parse\nnot ok 2 - render\n";
        let dir = tempfile::tempdir().expect("temp dir");
        let out = dir.path().join("out.txt");
        std::fs::write(&out, format!("{fixture}{cargo}")).expect("write");
        let input = CheckInput {
            stdout: Some(Source::File(&out)),
            stderr: None,
            exit_code: Some(0),
            reports: &[],
        };
        let named = parse_command(&input, FormatChoice::Auto, Some("cargo test"));
        assert_eq!(named.format, Format::Libtest);
        assert!(named.failing().is_empty(), "{:?}", named.failing());
        let bare = parse(&input, FormatChoice::Auto);
        assert!(!bare.failing().is_empty());
    }

    fn run_of(format: Format, complete: bool, tests: &[(&str, Outcome)]) -> ParsedRun {
        ParsedRun {
            format,
            complete,
            unattributed_failure: false,
            tests: tests
                .iter()
                .map(|(id, o)| crate::check::model::TestResult {
                    id: (*id).to_string(),
                    outcome: *o,
                    message: None,
                })
                .collect(),
            diagnostics: Vec::new(),
            summary: None,
            not_run: None,
            unlisted: crate::check::model::Counts::default(),
            listed: None,
        }
    }

    /// A console that leads (it names more tests) never drops or clears a test the
    /// report holds as failing: left out, it is added; shown passing, the report's
    /// record replaces the console's; a console that agrees is left as it is.
    #[test]
    fn a_leading_console_keeps_the_reports_failures() {
        use Outcome::{Failed, Passed};
        for (console, want) in [
            (
                &[("a", Passed), ("b", Passed), ("c", Passed)][..],
                "m::t_fail",
            ),
            (
                &[("t_fail", Passed), ("t_ok", Passed), ("c", Passed)][..],
                "m::t_fail",
            ),
            (
                &[("t_fail", Failed), ("t_ok", Passed), ("c", Passed)][..],
                "t_fail",
            ),
        ] {
            let report = run_of(
                Format::Junit,
                true,
                &[("m::t_fail", Failed), ("m::t_ok", Passed)],
            );
            let m = merge(report, run_of(Format::Tap, true, console));
            let failing: Vec<&str> = m
                .tests
                .iter()
                .filter(|t| t.outcome.is_failing())
                .map(|t| t.id.as_str())
                .collect();
            assert_eq!(failing, vec![want], "{console:?}");
            assert_eq!(
                m.tests.len(),
                3 + usize::from(want == "m::t_fail" && console[0].0 == "a")
            );
        }
    }

    /// A jest `--json` report names a test by its file's absolute path and ` > `; the
    /// console by the path from the runner's start and ` › `: the same failing test
    /// is counted once (a new user's false alarm counted it twice at t0, and the
    /// absolute one was "lost" at green).
    #[test]
    fn a_reports_absolute_id_is_the_consoles_test() {
        use Outcome::{Failed, Passed};
        let report = run_of(
            Format::JestJson,
            true,
            &[
                (
                    "/state/cleanrooms/9f/tree/__tests__/calc.test.js > adds",
                    Failed,
                ),
                (
                    "/state/cleanrooms/9f/tree/__tests__/calc.test.js > adds zero",
                    Passed,
                ),
            ],
        );
        let console = run_of(
            Format::Jest,
            true,
            &[
                ("__tests__/calc.test.js \u{203a} adds", Failed),
                ("__tests__/calc.test.js \u{203a} adds zero", Passed),
            ],
        );
        let m = merge(report, console);
        let ids: Vec<&str> = m.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "__tests__/calc.test.js \u{203a} adds",
                "__tests__/calc.test.js \u{203a} adds zero"
            ]
        );
        // another file's test of the same title is not it
        let other = run_of(
            Format::JestJson,
            true,
            &[("/state/tree/__tests__/other.test.js > adds", Failed)],
        );
        let console = run_of(
            Format::Jest,
            true,
            &[("__tests__/calc.test.js \u{203a} adds", Passed)],
        );
        assert_eq!(merge(other, console).tests.len(), 2);
    }

    #[test]
    fn complete_console_leads_and_takes_report_flakiness() {
        let report = run_of(
            Format::Junit,
            true,
            &[
                ("tests.t::a", Outcome::FlakyPassed),
                ("tests.t::b", Outcome::Failed),
            ],
        );
        let text = run_of(
            Format::Pytest,
            true,
            &[
                ("tests/t.py::a", Outcome::Passed),
                ("tests/t.py::b", Outcome::Failed),
            ],
        );
        let m = merge(report, text);
        assert_eq!(m.format, Format::Pytest);
        assert_eq!(m.tests[0].outcome, Outcome::FlakyPassed);
        assert_eq!(m.tests[0].id, "tests/t.py::a");
    }

    #[test]
    fn partial_console_corrects_report_verdicts_by_unique_name() {
        let report = run_of(
            Format::Junit,
            true,
            &[
                ("T::testRisky", Outcome::Errored),
                ("T::testPass", Outcome::Passed),
                ("A::same", Outcome::Passed),
                ("B::same", Outcome::Passed),
            ],
        );
        let text = run_of(
            Format::Phpunit,
            true,
            &[("T::testRisky", Outcome::Passed), ("same", Outcome::Failed)],
        );
        let m = merge(report, text);
        assert_eq!(m.format, Format::Junit);
        let get = |id: &str| m.tests.iter().find(|t| t.id == id).map(|t| t.outcome);
        assert_eq!(get("T::testRisky"), Some(Outcome::Passed));
        // ambiguous: two report tests end with `same`
        assert_eq!(get("A::same"), Some(Outcome::Passed));
        assert_eq!(get("B::same"), Some(Outcome::Passed));
        assert_eq!(m.tests.len(), 4);
    }

    #[test]
    fn incomplete_console_makes_merged_run_incomplete_and_unattributed() {
        let report = run_of(
            Format::Junit,
            true,
            &[
                ("s::x", Outcome::Failed),
                ("s::y", Outcome::Passed),
                ("s::z", Outcome::Passed),
            ],
        );
        let mut text = run_of(Format::Jest, false, &[("f › x", Outcome::Failed)]);
        text.unattributed_failure = true;
        text.tests.push(util::unattributed(
            "jest",
            Some("suite failed to run".into()),
        ));
        let m = merge(report, text);
        assert!(!m.complete && m.unattributed_failure);
        assert!(m.failing().contains("jest::<unattributed>"));
    }

    #[test]
    fn match_requires_a_separator() {
        let tests = run_of(Format::Junit, true, &[("x::test_pass", Outcome::Passed)]).tests;
        assert_eq!(find_match(&tests, "pass"), None);
        assert_eq!(find_match(&tests, "a.py::test_pass"), Some(0));
    }

    #[test]
    fn nothing_recognised_exit_zero_is_green_and_complete() {
        let run = parse(
            &CheckInput {
                stdout: None,
                stderr: None,
                exit_code: Some(0),
                reports: &[],
            },
            FormatChoice::Auto,
        );
        assert_eq!(run.format, Format::ExitCode);
        assert!(run.complete && !run.unattributed_failure && run.tests.is_empty());
    }

    /// A green exit from a runner that executed nothing carries the runner's words in
    /// `not_run`; a green exit that executed a test, or shows no runner, does not.
    #[test]
    fn green_runs_that_executed_nothing_say_so() {
        // (stdout, stderr, expected part of not_run; None = a test ran or no runner)
        let table: &[(&str, &str, Option<&str>)] = &[
            ("", "\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nOK\n", Some("unittest counted 0 tests executed")),
            ("", "test_a (t.T.test_a) ... ok\n\n----------------------------------------------------------------------\nRan 1 test in 0.000s\n\nOK\n", None),
            ("\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n", "", Some("counted 0")),
            ("\nrunning 1 test\ntest a ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n", "", None),
            ("\nrunning 1 test\ntest a ... ignored\n\ntest result: ok. 0 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n", "", Some("skipped")),
            ("1..0 # SKIP nothing to do\n", "", Some("0")),
            ("", "No tests found, exiting with code 0\n", Some("No tests found")),
            ("?   \texample.com/a\t[no test files]\n?   \texample.com/b\t[no test files]\n", "", Some("no test files")),
            ("?   \texample.com/a\t[no test files]\nok  \texample.com/b\t0.002s\n", "", None),
            ("", "", None),
            ("done\n", "", None),
        ];
        for (o, e, want) in table {
            let run = parse_streams(o, e, 0);
            match want {
                Some(w) => assert!(
                    run.not_run.as_deref().is_some_and(|m| m.contains(w)),
                    "{o:?} {e:?}: {:?} ({:?})",
                    run.not_run,
                    run.format
                ),
                None => assert_eq!(run.not_run, None, "{o:?} {e:?} ({:?})", run.format),
            }
        }
    }

    /// Writes `stdout`/`stderr` to a temp folder and runs the dispatcher on them.
    fn parse_streams(stdout: &str, stderr: &str, exit: i32) -> ParsedRun {
        let dir = tempfile::tempdir().expect("temp dir");
        let (o, e) = (dir.path().join("out"), dir.path().join("err"));
        std::fs::write(&o, stdout).expect("write");
        std::fs::write(&e, stderr).expect("write");
        parse(
            &CheckInput {
                stdout: Some(Source::File(&o)),
                stderr: Some(Source::File(&e)),
                exit_code: Some(exit),
                reports: &[],
            },
            FormatChoice::Auto,
        )
    }

    /// A test build that does not compile (cargo 1.8x): read as cargo's, incomplete,
    /// and the message is rustc's error line, never the `92 | }` it quotes.
    #[test]
    fn compile_error_message_is_the_error_line() {
        let err = "   Compiling demo v0.1.0 (/w/demo)\nerror: expected one of `,` or `}`, found `x`\n  --> src/lib.rs:91:5\n   |\n92 | }\n   | ^\n\nerror[E0308]: mismatched types\n  --> src/lib.rs:13:22\n   |\n13 |         let y: i32 = \"x\";\n   |                ---   ^^^ expected `i32`, found `&str`\n\nerror: could not compile `demo` (lib test) due to 2 previous errors\n";
        let r = parse_streams("", err, 101);
        assert_eq!(r.format, Format::Libtest);
        assert!(!r.complete && r.unattributed_failure);
        let m = r.tests[0].message.clone().unwrap_or_default();
        assert!(m.starts_with("error"), "{m}");
        assert!(!m.contains('|'), "{m}");
    }

    /// `python -m unittest` (3.11) printed on stderr is read as unittest: the failing
    /// test is named, and its message is the assertion line, not the traceback's
    /// `File ...` line.
    #[test]
    fn unittest_on_stderr_names_the_failure_by_its_exception_line() {
        let err = "F\n======================================================================\nFAIL: test_add (test_calc.TestCalc.test_add)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"/w/test_calc.py\", line 8, in test_add\n    self.assertEqual(3, 4)\nAssertionError: 3 != 4\n\n----------------------------------------------------------------------\nRan 1 test in 0.000s\n\nFAILED (failures=1)\n";
        let r = parse_streams("", err, 1);
        assert_eq!(r.format, Format::Unittest);
        let failing = r.tests.iter().find(|t| t.outcome.is_failing()).unwrap();
        assert_eq!(failing.id, "test_calc.TestCalc.test_add");
        assert_eq!(failing.message.as_deref(), Some("AssertionError: 3 != 4"));
    }
}
