//! `loopexec parse`: what loopexec reads from a captured check run — the format, the
//! tests and their outcomes, the failing and collected sets, completeness.
//!
//! Two shapes (both the [`ParseBody`] contract, `schemas/parse.json`):
//! * default: every field, with `tests` (every named test) and `collected` (their
//!   ids, sorted) — what `check-parse` and other scripts read;
//! * `--summary`: `tests` and `collected` left out (counts, failing names,
//!   completeness, diagnostics). The output is then bounded by the failing tests, not by
//!   the suite, and so is the parse's memory: it reads with
//!   [`parse::Listing::Failing`] (passing tests kept as 64-bit id hashes).
//!
//! The default shape reads with [`parse::Listing::Compact`]: the failing tests as
//! under `--summary`, and every test's id and outcome front-coded in one buffer
//! ([`crate::check::model::ListedTests`], a few bytes per test). With `--json` the
//! object is written to stdout as it is serialized ([`print_json`]), each test decoded
//! as it is written: no `serde_json::Value` of the whole run and no `TestResult` per
//! test are built, so the memory of a large parse is that compact run. The human
//! rendering is built from the run expanded to a full one
//! ([`ParsedRun::into_full`]).

use crate::check::model::{Counts, Format, ListedTests, ParsedRun, TestResult};
use crate::check::parse::{self, CheckInput, FormatChoice, Source};
use crate::cli::{Outcome, ParseArgs};
use crate::output::Body;
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

/// `parse`: what loopexec read from one check run.
///
/// `tests` and `collected` are present in the default shape and absent under
/// `--summary`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ParseBody {
    /// The format that supplied the results (kebab-case wire name, e.g. `libtest`).
    pub format: Format,
    /// True when the run visibly reached the runner's own end.
    pub complete: bool,
    /// True when some failure cannot be pinned on a named test.
    pub unattributed_failure: bool,
    /// Every test the runner named, in the order first seen (the synthetic
    /// `<runner>::<unattributed>` member is not listed here; it is in `failing`).
    /// Absent under `--summary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tests: Option<Vec<TestResult>>,
    /// How many tests the run reported in each group (named tests joined with the
    /// runner's own tallies).
    pub counts: Counts,
    /// The failing set F (sorted ids), the synthetic member included while red.
    pub failing: Vec<String>,
    /// The collected set C (sorted ids of every named test). Absent under `--summary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collected: Option<Vec<String>>,
    /// Problems met while reading (report missing or not well-formed, unread streams).
    pub diagnostics: Vec<String>,
    /// Human rendering (not part of the JSON).
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}

impl Body for ParseBody {
    const COMMAND: &'static str = "parse";
    fn human(&self) -> String {
        self.human.clone()
    }
}

/// Validates the arguments and parses; `Err` is the usage or input error to print.
fn read(a: &ParseArgs) -> Result<ParsedRun, Box<Outcome>> {
    let choice = if a.format == "auto" {
        FormatChoice::Auto
    } else if let Some(f) = parse::format_from_name(&a.format) {
        FormatChoice::Fixed(f)
    } else {
        return Err(Box::new(Outcome::error(
            2,
            format!("unknown --format `{}`", a.format),
            Some(format!(
                "use auto or one of: {}",
                parse::format_names().join(", ")
            )),
        )));
    };
    // `loopexec parse out.txt` reads out.txt as the check's standard output
    let stdout = a.stdout.as_ref().or(a.file.as_ref());
    if stdout.is_none() && a.stderr.is_none() && a.reports.is_empty() {
        return Err(Box::new(Outcome::error(
            2,
            "nothing to parse".into(),
            Some("give FILE (or --stdout FILE), --stderr FILE or --report FILE".into()),
        )));
    }
    // A report named on the command line that is not there is a mistyped path, not a
    // runner that wrote none (that is the loop's case, where the check's own report
    // path is read after it ran and an unreadable one is a diagnostic).
    for p in stdout
        .into_iter()
        .chain(a.stderr.iter())
        .chain(a.reports.iter())
    {
        if p.as_os_str() == "-" {
            continue;
        }
        if let Err(e) = std::fs::metadata(p) {
            return Err(Box::new(Outcome::error(
                super::EXIT_ERROR,
                format!("cannot read {}: {e}", p.display()),
                Some("pass the file the check's output or report was saved to".into()),
            )));
        }
    }
    // A pipe (`<(zstd -dc …)`, `/dev/stdin`, `-`) can be read once, and the parsers
    // read a file more than once (the format is told from its head): such input is
    // spooled to a temporary file first.
    // A zstd frame (the kept copy of a check's output, `<i>.check.stdout.zst`) is
    // read decompressed.
    let mut spooled = Vec::new();
    let mut spool = |p: &PathBuf| -> Result<PathBuf, Box<Outcome>> {
        let fail = |e: std::io::Error| {
            Box::new(Outcome::error(
                super::EXIT_ERROR,
                format!("cannot read {}: {e}", p.display()),
                Some("pass the file the check's output or report was saved to".into()),
            ))
        };
        let regular = p.as_os_str() != "-" && std::fs::metadata(p).is_ok_and(|m| m.is_file());
        let path = if regular {
            p.clone()
        } else {
            let mut tmp = tempfile::NamedTempFile::new().map_err(fail)?;
            if p.as_os_str() == "-" {
                std::io::copy(&mut std::io::stdin().lock(), &mut tmp).map_err(fail)?;
            } else {
                std::io::copy(&mut std::fs::File::open(p).map_err(fail)?, &mut tmp)
                    .map_err(fail)?;
            }
            let path = tmp.path().to_path_buf();
            spooled.push(tmp);
            path
        };
        let mut head = [0u8; 4];
        let zstd =
            std::io::Read::read_exact(&mut std::fs::File::open(&path).map_err(fail)?, &mut head)
                .is_ok()
                && head == ZSTD_MAGIC;
        if !zstd {
            return Ok(path);
        }
        let mut tmp = tempfile::NamedTempFile::new().map_err(fail)?;
        zstd::stream::copy_decode(std::fs::File::open(&path).map_err(fail)?, &mut tmp)
            .map_err(fail)?;
        let out = tmp.path().to_path_buf();
        spooled.push(tmp);
        Ok(out)
    };
    let stdout = stdout.map(&mut spool).transpose()?;
    let stderr = a.stderr.as_ref().map(&mut spool).transpose()?;
    let reports = a
        .reports
        .iter()
        .map(&mut spool)
        .collect::<Result<Vec<_>, _>>()?;
    // the summary shape prints no passing test: they need not be kept by name; the
    // default shape prints them from the compact list
    let listing = if a.summary {
        parse::Listing::Failing
    } else {
        parse::Listing::Compact
    };
    let parsed = parse::parse_command_with(
        &CheckInput {
            stdout: stdout.as_deref().map(Source::File),
            stderr: stderr.as_deref().map(Source::File),
            exit_code: a.exit_code,
            reports: &reports,
        },
        choice,
        a.command.as_deref(),
        listing,
    );
    drop(spooled);
    Ok(parsed)
}

/// The first four bytes of a zstd frame (RFC 8878 §3.1.1).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// True for a test the runner named (not the synthetic unattributed member).
fn named(t: &TestResult) -> bool {
    !t.id.ends_with(crate::check::model::UNATTRIBUTED_SUFFIX)
}

/// The failing set as sorted borrowed ids.
fn failing_ids(run: &ParsedRun) -> BTreeSet<&str> {
    run.tests
        .iter()
        .filter(|t| t.outcome.is_failing())
        .map(|t| t.id.as_str())
        .collect()
}

/// The collected set as sorted borrowed ids (one pointer per test, not a copy) of a
/// run without [`ParsedRun::listed`].
fn collected_ids(run: &ParsedRun) -> Vec<&str> {
    run.sorted_ids(named)
}

/// Calls `f` with the id of every named test of `run` in listed order, until `f`
/// fails. A run with [`ParsedRun::listed`] names its tests there alone (its `tests`
/// hold only failing tests, listed too, and the synthetic member), so `tests` is not
/// read for it.
fn each_named_id(
    run: &ParsedRun,
    mut f: impl FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    match &run.listed {
        Some(l) => each_listed_named_id(l, f),
        None => run
            .tests
            .iter()
            .filter(|t| named(t))
            .try_for_each(|t| f(&t.id)),
    }
}

/// [`each_named_id`] of a compact listing alone (what a thread of its own can read
/// while the rest of the run is written and freed).
fn each_listed_named_id(
    listed: &ListedTests,
    mut f: impl FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let suffix = crate::check::model::UNATTRIBUTED_SUFFIX;
    listed.try_for_each(|id, _| if id.ends_with(suffix) { Ok(()) } else { f(id) })
}

/// Tells whether strings handed over one by one are strictly ascending (each greater
/// than the one before it), keeping a copy of the last one; counts them and their
/// bytes (what [`sorted_listed_ids`] reserves when they are not).
#[derive(Debug, Default)]
struct Ascending {
    last: Option<String>,
    broken: bool,
    count: usize,
    bytes: usize,
}

impl Ascending {
    /// Takes the next string.
    fn next(&mut self, s: &str) {
        self.count += 1;
        self.bytes += s.len();
        if self.broken {
            return;
        }
        match self.last.as_mut() {
            Some(l) if l.as_str() >= s => self.broken = true,
            Some(l) => {
                l.clear();
                l.push_str(s);
            }
            None => self.last = Some(s.to_string()),
        }
    }

    /// True when every string taken was greater than the one before it.
    fn holds(&self) -> bool {
        !self.broken
    }
}

/// The collected set of a compact listing ([`ParsedRun::listed`]).
#[derive(Debug)]
enum ListedCollected {
    /// The named ids are listed in name order, each once: the set is the list.
    InOrder,
    /// They are not: every named id decoded into `.0`, and byte ranges of it
    /// sorted and deduplicated in `.1`.
    Sorted(String, Vec<(u32, u32)>),
}

/// Works out the collected set of a compact listing: one decoding pass tells
/// whether the ids are in name order (runners often print their tests so: libtest
/// does) and counts them and their bytes; only when they are not, a second pass
/// decodes them into one buffer reserved from those counts and sorts it
/// ([`sorted_listed_ids`]). `parse --json` runs this on a thread of its own while
/// the tests are written (see [`run_json`]).
fn listed_collected(listed: &ListedTests) -> ListedCollected {
    let mut order = Ascending::default();
    // the closure never fails
    let _ = each_listed_named_id(listed, |id| {
        order.next(id);
        Ok(())
    });
    if order.holds() {
        ListedCollected::InOrder
    } else {
        let (text, spans) = sorted_listed_ids(listed, order.count, order.bytes);
        ListedCollected::Sorted(text, spans)
    }
}

/// The collected set of a compact listing not in name order: every named id decoded
/// into one buffer, then byte ranges of it sorted and deduplicated (one buffer and 8
/// bytes per test, not a `String` each). `n` ids of `bytes` bytes in all are
/// reserved: the counts [`Ascending`] took on the pass before (a wrong count costs
/// only a regrowth).
fn sorted_listed_ids(listed: &ListedTests, n: usize, bytes: usize) -> (String, Vec<(u32, u32)>) {
    let mut text = String::with_capacity(bytes);
    let mut spans: Vec<(u32, u32)> = Vec::with_capacity(n);
    // offsets past 4 GiB of ids cannot be held: such a run is not listed whole
    let listed = each_listed_named_id(listed, |id| {
        let (Ok(start), Ok(end)) = (
            u32::try_from(text.len()),
            u32::try_from(text.len() + id.len()),
        ) else {
            return Err(std::io::ErrorKind::OutOfMemory.into());
        };
        text.push_str(id);
        spans.push((start, end));
        Ok(())
    });
    if listed.is_err() {
        spans.clear();
    }
    let get = |&(a, b): &(u32, u32)| &text[a as usize..b as usize];
    let bytes = text.as_bytes();
    crate::check::idsort::sort_by_bytes(&mut spans, |&(a, b)| &bytes[a as usize..b as usize]);
    spans.dedup_by(|x, y| get(x) == get(y));
    (text, spans)
}

/// True when each string is greater than the one before it (so the sequence is its
/// own sorted, deduplicated set).
fn strictly_ascending<'a>(mut it: impl Iterator<Item = &'a str>) -> bool {
    let Some(mut prev) = it.next() else {
        return true;
    };
    it.all(|s| {
        let up = prev < s;
        prev = s;
        up
    })
}

/// The human rendering: a header, then each test (all of them, or only the failing
/// ones under `--summary`) with the first line of a failure's message.
fn human(run: &ParsedRun, summary: bool) -> String {
    use std::fmt::Write;
    let counts = run.counts();
    let failing = failing_ids(run);
    // quiet runner modes name few tests but count them all (`pytest -q` names only
    // the failing): the collected count is the larger, and the named one is said
    let named_count = run.tests.iter().filter(|t| named(t)).count() as u64 + run.unlisted.total();
    let collected = named_count.max(counts.total());
    let named_note = if named_count < collected {
        format!(" ({named_count} named)")
    } else {
        String::new()
    };
    let mut h = format!(
        "format: {}\ncomplete: {}\nunattributed failure: {}\ncollected: {}{named_note}  failing: {}\ncounts: {} passed, {} failed, {} skipped, {} flaky\n",
        parse::format_name(run.format),
        run.complete,
        run.unattributed_failure,
        collected,
        failing.len(),
        counts.passed,
        counts.failed,
        counts.skipped,
        counts.flaky
    );
    for t in run
        .tests
        .iter()
        .filter(|t| !summary || t.outcome.is_failing())
    {
        let _ = writeln!(h, "  {:<12} {}", t.outcome.as_str(), t.id);
        if let Some(m) = &t.message {
            if t.outcome.is_failing() {
                let _ = writeln!(h, "               {}", m.lines().next().unwrap_or(""));
            }
        }
    }
    for d in &run.diagnostics {
        let _ = writeln!(h, "note: {d}");
    }
    h
}

/// The typed body of `run` (materialized: for the human rendering and the schema
/// tests; `--json` streams the same fields with [`print_json`]). A run with
/// [`ParsedRun::listed`] is expanded first ([`ParsedRun::into_full`]).
#[must_use]
pub fn body(run: &ParsedRun, summary: bool) -> ParseBody {
    if run.listed.is_some() {
        return body(&run.clone().into_full(), summary);
    }
    ParseBody {
        format: run.format,
        complete: run.complete,
        unattributed_failure: run.unattributed_failure,
        tests: (!summary).then(|| run.tests.iter().filter(|t| named(t)).cloned().collect()),
        counts: run.counts(),
        failing: failing_ids(run).into_iter().map(str::to_string).collect(),
        collected: (!summary).then(|| collected_ids(run).into_iter().map(str::to_string).collect()),
        diagnostics: run.diagnostics.clone(),
        human: human(run, summary),
    }
}

pub(crate) fn run(a: &ParseArgs) -> Outcome {
    match read(a) {
        Ok(parsed) => Outcome::from_body("ok", 0, &body(&parsed.into_full(), a.summary)),
        Err(o) => *o,
    }
}

/// `loopexec --json parse`: prints the envelope and the body as they are serialized
/// (the same object `run` would render; see the module doc) and returns the exit
/// code. Errors print as every command's do.
#[must_use]
pub fn run_json(a: &ParseArgs) -> ExitCode {
    match read(a) {
        Ok(mut parsed) => {
            let out = std::io::stdout();
            let mut w = std::io::BufWriter::with_capacity(64 * 1024, out.lock());
            std::thread::scope(|s| {
                // The collected set of a compact listing is worked out on a thread
                // of its own while `tests` is written: it reads only `listed`.
                let collected = match parsed.listed.as_ref() {
                    Some(l) if !a.summary => Some(s.spawn(|| listed_collected(l))),
                    _ => None,
                };
                // A closed stdout (`| head`) is not a parse failure: the exit code
                // still says the command ran.
                if print_head(&mut w, &parsed, a.summary).is_err() {
                    return;
                }
                // a compact run's failing tests and messages are written: their
                // memory is free while the collected set is finished; the few
                // entries cost little to drop
                if parsed.listed.is_some() {
                    parsed.tests = Vec::new();
                }
                // the thread only decodes and sorts: it panics only where this
                // thread would have
                let collected = collected.map(|h| h.join().expect("the collected set"));
                let _ = print_tail(&mut w, &parsed, a.summary, collected);
            });
            drop(w);
            // the process ends next: a run of a million tests is as many strings,
            // and freeing them one by one would cost more than the exit does
            std::mem::forget(parsed);
            ExitCode::SUCCESS
        }
        Err(o) => {
            crate::cli::render(&o, true);
            ExitCode::from(o.exit_code)
        }
    }
}

/// Writes the `--json` object of `run` to `w`, one line, fields in the order of
/// [`ParseBody`] after the envelope's.
///
/// The object is written piece by piece as serde_json would print it: scalars and
/// small fields through serde_json, each test and id by hand (an id with nothing to
/// escape is copied as it is), so no value of the whole run is built.
///
/// # Errors
/// A write error of `w`.
pub fn print_json(
    w: &mut impl std::io::Write,
    run: &ParsedRun,
    summary: bool,
) -> std::io::Result<()> {
    print_head(w, run, summary)?;
    let collected = run
        .listed
        .as_ref()
        .filter(|_| !summary)
        .map(listed_collected);
    print_tail(w, run, summary, collected)
}

/// Writes the `--json` object of `run` up to and with `failing` (the part that reads
/// the failing tests' ids and messages).
fn print_head(w: &mut impl std::io::Write, run: &ParsedRun, summary: bool) -> std::io::Result<()> {
    w.write_all(b"{\"tool\":\"loopexec\",\"version\":")?;
    json_str(w, env!("CARGO_PKG_VERSION"))?;
    w.write_all(b",\"status\":\"ok\",\"errors\":[],\"exit_code\":0,\"format\":")?;
    ser(w, &run.format)?;
    write!(
        w,
        ",\"complete\":{},\"unattributed_failure\":{}",
        run.complete, run.unattributed_failure
    )?;
    if !summary {
        w.write_all(b",\"tests\":[")?;
        let mut first = true;
        run.for_each_test(|t| {
            if t.id.ends_with(crate::check::model::UNATTRIBUTED_SUFFIX) {
                return Ok(());
            }
            if !first {
                w.write_all(b",")?;
            }
            first = false;
            w.write_all(b"{\"id\":")?;
            json_str(w, t.id)?;
            w.write_all(b",\"outcome\":\"")?;
            w.write_all(t.outcome.as_str().as_bytes())?;
            w.write_all(b"\"")?;
            if let Some(m) = t.message {
                w.write_all(b",\"message\":")?;
                json_str(w, m)?;
            }
            w.write_all(b"}")
        })?;
        w.write_all(b"]")?;
    }
    w.write_all(b",\"counts\":")?;
    ser(w, &run.counts())?;
    w.write_all(b",\"failing\":")?;
    json_strs(w, failing_ids(run).into_iter())
}

/// Writes the rest of the `--json` object of `run` after [`print_head`]: `collected`
/// and `diagnostics`. A compact run's collected set is `collected`, worked out from
/// [`ParsedRun::listed`] alone ([`listed_collected`]; `None` under `--summary`).
fn print_tail(
    w: &mut impl std::io::Write,
    run: &ParsedRun,
    summary: bool,
    collected: Option<ListedCollected>,
) -> std::io::Result<()> {
    if !summary {
        w.write_all(b",\"collected\":")?;
        // runners often print their tests in name order (libtest does): then the
        // sorted set is the list itself, and no vector of a million ids is built
        if let Some(collected) = collected {
            match collected {
                ListedCollected::InOrder => {
                    w.write_all(b"[")?;
                    let mut first = true;
                    each_named_id(run, |id| {
                        if !first {
                            w.write_all(b",")?;
                        }
                        first = false;
                        json_str(w, id)
                    })?;
                    w.write_all(b"]")?;
                }
                ListedCollected::Sorted(text, spans) => {
                    json_strs(w, spans.iter().map(|&(a, b)| &text[a as usize..b as usize]))?;
                }
            }
        } else {
            let listed = || run.tests.iter().filter(|t| named(t)).map(|t| t.id.as_str());
            if strictly_ascending(listed()) {
                json_strs(w, listed())?;
            } else {
                json_strs(w, collected_ids(run).into_iter())?;
            }
        }
    }
    w.write_all(b",\"diagnostics\":")?;
    ser(w, &run.diagnostics)?;
    w.write_all(b"}\n")?;
    w.flush()
}

/// Writes `v` as serde_json does.
fn ser<W: std::io::Write + ?Sized, T: Serialize + ?Sized>(w: &mut W, v: &T) -> std::io::Result<()> {
    serde_json::to_writer(w, v).map_err(std::io::Error::from)
}

/// Writes `s` as a JSON string, byte for byte as serde_json does: copied as it is
/// when it holds no quote, backslash or control character, else through serde_json.
fn json_str(w: &mut (impl std::io::Write + ?Sized), s: &str) -> std::io::Result<()> {
    // no early exit: the whole id is tested in one vectorized pass
    let escape = s.bytes().fold(false, |acc, b| {
        acc | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if escape {
        return ser(w, s);
    }
    w.write_all(b"\"")?;
    w.write_all(s.as_bytes())?;
    w.write_all(b"\"")
}

/// Writes the strings of `it` as a JSON array.
fn json_strs<'a>(
    w: &mut (impl std::io::Write + ?Sized),
    it: impl Iterator<Item = &'a str>,
) -> std::io::Result<()> {
    w.write_all(b"[")?;
    for (k, s) in it.enumerate() {
        if k > 0 {
            w.write_all(b",")?;
        }
        json_str(w, s)?;
    }
    w.write_all(b"]")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::model::Outcome as O;

    fn sample() -> ParsedRun {
        let t = |id: &str, outcome, message: Option<&str>| TestResult {
            id: id.into(),
            outcome,
            message: message.map(str::to_string),
        };
        ParsedRun {
            format: Format::Libtest,
            complete: false,
            unattributed_failure: true,
            tests: vec![
                t("b::ok", O::Passed, None),
                t("a::bad", O::Failed, Some("boom \"quoted\"")),
                t("c::skip", O::Skipped, None),
                t("cargo::<unattributed>", O::Failed, Some("error[E0308]: x")),
            ],
            diagnostics: vec!["note".into()],
            summary: None,
            not_run: None,
            unlisted: Counts::default(),
            listed: None,
        }
    }

    /// The streamed `--json` object is exactly the typed body in the envelope, in both
    /// shapes.
    #[test]
    fn streamed_json_equals_the_typed_envelope() {
        // tests listed in name order (the collected set written as listed) or not
        let mut sorted = sample();
        sorted.tests.sort_by(|a, b| a.id.cmp(&b.id));
        for (summary, run) in [(false, sample()), (true, sample()), (false, sorted)] {
            let mut buf = Vec::new();
            print_json(&mut buf, &run, summary).unwrap();
            let text = String::from_utf8(buf).unwrap();
            assert_eq!(text.matches('\n').count(), 1, "one line: {text}");
            let streamed: serde_json::Value = serde_json::from_str(&text).unwrap();
            let typed = crate::output::assemble(&Outcome::from_body("ok", 0, &body(&run, summary)));
            assert_eq!(streamed, typed, "summary: {summary}");
            // byte for byte what serde_json prints for the typed envelope
            assert_eq!(
                text,
                format!("{}\n", serde_json::to_string(&typed).unwrap())
            );
            // field order is part of what scripts see
            let keys = |v: &serde_json::Value| -> Vec<String> {
                v.as_object().unwrap().keys().cloned().collect()
            };
            assert_eq!(keys(&streamed), keys(&typed));
            assert_eq!(streamed.get("tests").is_some(), !summary);
            assert_eq!(streamed.get("collected").is_some(), !summary);
            assert_eq!(
                streamed["failing"],
                serde_json::json!(["a::bad", "cargo::<unattributed>"])
            );
        }
    }

    #[test]
    fn strictly_ascending_needs_each_string_greater() {
        assert!(strictly_ascending([].into_iter()));
        assert!(strictly_ascending(["a", "b", "c"].into_iter()));
        assert!(!strictly_ascending(["a", "a"].into_iter()));
        assert!(!strictly_ascending(["b", "a"].into_iter()));
    }

    /// Strings are written byte for byte as serde_json writes them.
    #[test]
    fn json_strings_match_serde_json() {
        for s in [
            "",
            "plain::id",
            "quote \" and \\ backslash",
            "tab\there\nnew line \u{1}",
            "ünïcode › ✔ and \u{7f}",
            "</script>",
        ] {
            let mut buf = Vec::new();
            json_str(&mut buf, s).unwrap();
            assert_eq!(
                String::from_utf8(buf).unwrap(),
                serde_json::to_string(s).unwrap()
            );
        }
    }

    #[test]
    fn summary_human_lists_only_failing_tests() {
        let h = human(&sample(), true);
        assert!(h.contains("a::bad") && !h.contains("b::ok"), "{h}");
        let h = human(&sample(), false);
        assert!(h.contains("a::bad") && h.contains("b::ok"), "{h}");
    }
}
