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

use crate::check::model::{Counts, Format, ParsedRun, TestResult};
use crate::check::parse::{self, CheckInput, FormatChoice, Source};
use crate::cli::{Outcome, ParseArgs};
use crate::output::Body;
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::BTreeSet;
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
    if a.stdout.is_none() && a.stderr.is_none() && a.reports.is_empty() {
        return Err(Box::new(Outcome::error(
            2,
            "nothing to parse".into(),
            Some("give --stdout FILE, --stderr FILE or --report FILE".into()),
        )));
    }
    for p in a.stdout.iter().chain(a.stderr.iter()) {
        if let Err(e) = std::fs::metadata(p) {
            return Err(Box::new(Outcome::error(
                super::EXIT_ERROR,
                format!("cannot read {}: {e}", p.display()),
                Some("pass the file the check's output was saved to".into()),
            )));
        }
    }
    // the summary shape prints no passing test: they need not be kept by name; the
    // default shape prints them from the compact list
    let listing = if a.summary {
        parse::Listing::Failing
    } else {
        parse::Listing::Compact
    };
    Ok(parse::parse_command_with(
        &CheckInput {
            stdout: a.stdout.as_deref().map(Source::File),
            stderr: a.stderr.as_deref().map(Source::File),
            exit_code: a.exit_code,
            reports: &a.reports,
        },
        choice,
        a.command.as_deref(),
        listing,
    ))
}

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
    let suffix = crate::check::model::UNATTRIBUTED_SUFFIX;
    match &run.listed {
        Some(l) => l.try_for_each(|id, _| if id.ends_with(suffix) { Ok(()) } else { f(id) }),
        None => run
            .tests
            .iter()
            .filter(|t| named(t))
            .try_for_each(|t| f(&t.id)),
    }
}

/// Tells whether strings handed over one by one are strictly ascending (each greater
/// than the one before it), keeping a copy of the last one.
#[derive(Debug, Default)]
struct Ascending {
    last: Option<String>,
    broken: bool,
}

impl Ascending {
    /// Takes the next string.
    fn next(&mut self, s: &str) {
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

/// The collected set of a run with [`ParsedRun::listed`] in name order: every named
/// id decoded into one buffer, then byte ranges of it sorted and deduplicated (one
/// buffer, sized by a first pass, and 8 bytes per test, not a `String` each).
fn sorted_listed_ids(run: &ParsedRun) -> (String, Vec<(u32, u32)>) {
    let (mut n, mut bytes) = (0usize, 0usize);
    let counted: std::io::Result<()> = each_named_id(run, |id| {
        n += 1;
        bytes += id.len();
        Ok(())
    });
    if counted.is_err() {
        return (String::new(), Vec::new());
    }
    let mut text = String::with_capacity(bytes);
    let mut spans: Vec<(u32, u32)> = Vec::with_capacity(n);
    // offsets past 4 GiB of ids cannot be held: such a run is not listed whole
    let listed = each_named_id(run, |id| {
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
    sort_spans(text.as_bytes(), &mut spans);
    let get = |&(a, b): &(u32, u32)| &text[a as usize..b as usize];
    spans.dedup_by(|x, y| get(x) == get(y));
    (text, spans)
}

/// A byte range of a buffer being sorted by [`sort_spans`], with the 8 bytes of it
/// the current pass compares.
#[derive(Clone, Copy)]
struct Keyed {
    /// Bytes `depth..depth + 8` of the range as a big-endian number, zero-padded
    /// past its end.
    word: u64,
    start: u32,
    end: u32,
}

impl Keyed {
    /// How many bytes of the range lie at or past `depth`, capped at 9: 9 means
    /// "more than this word", so ranges with equal words and 9 go on to the next
    /// word, and any other value (0–8) ends the range within this word.
    fn rest(&self, depth: usize) -> usize {
        (self.end as usize)
            .saturating_sub(self.start as usize + depth)
            .min(9)
    }
}

/// Sorts `spans` (byte ranges of `text`) by the bytes they name, in byte order (the
/// order `str::cmp` gives), 8 bytes at a time: each pass sorts (word, range) pairs
/// held side by side, where comparing the strings themselves reads two random places
/// of `text` per comparison — most of the cost of sorting 100k test ids that share
/// long prefixes (`pkg.Class12::test_345`). Ranges equal in every word so far are
/// sorted on the next word; a group whose next word is the same throughout (a shared
/// prefix) moves on without sorting.
///
/// Zero padding orders a range that ends within a word before every longer range
/// agreeing with it up to its end, as byte order does; two ranges whose padded words
/// are equal differ only in length there (one holds NUL bytes where the other ended),
/// and [`Keyed::rest`] orders the shorter first.
fn sort_spans(text: &[u8], spans: &mut [(u32, u32)]) {
    let word_at = |k: &Keyed, depth: usize| {
        let from = k.start as usize + depth;
        let to = (k.end as usize).min(from + 8);
        let mut w = [0u8; 8];
        if from < to {
            w[..to - from].copy_from_slice(&text[from..to]);
        }
        u64::from_be_bytes(w)
    };
    let mut keyed: Vec<Keyed> = spans
        .iter()
        .map(|&(start, end)| Keyed {
            word: 0,
            start,
            end,
        })
        .collect();
    // Groups still to sort: (from, to, depth) into `keyed`; a stack, not recursion,
    // so long shared prefixes cannot exhaust the call stack.
    let mut todo = vec![(0usize, keyed.len(), 0usize)];
    while let Some((from, to, mut depth)) = todo.pop() {
        let group = &mut keyed[from..to];
        if group.len() < 2 {
            continue;
        }
        // Skip the words every range of the group shares.
        loop {
            for k in group.iter_mut() {
                k.word = word_at(k, depth);
            }
            let (w, r) = (group[0].word, group[0].rest(depth));
            if !group.iter().all(|k| k.word == w && k.rest(depth) == r) {
                break;
            }
            if r < 9 {
                // identical ranges
                break;
            }
            depth += 8;
        }
        group.sort_unstable_by_key(|k| (k.word, k.rest(depth)));
        let mut i = 0;
        while i < group.len() {
            let key = (group[i].word, group[i].rest(depth));
            let mut j = i + 1;
            while j < group.len() && (group[j].word, group[j].rest(depth)) == key {
                j += 1;
            }
            if j - i > 1 && key.1 == 9 {
                todo.push((from + i, from + j, depth + 8));
            }
            i = j;
        }
    }
    for (s, k) in spans.iter_mut().zip(&keyed) {
        *s = (k.start, k.end);
    }
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
    let collected = run.tests.iter().filter(|t| named(t)).count() as u64 + run.unlisted.total();
    let mut h = format!(
        "format: {}\ncomplete: {}\nunattributed failure: {}\ncollected: {}  failing: {}\ncounts: {} passed, {} failed, {} skipped, {} flaky\n",
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
            let mut print = || -> std::io::Result<()> {
                let ascending = print_head(&mut w, &parsed, a.summary)?;
                // a compact run's failing tests and messages are written: their memory
                // is free before the collected set is sorted (which reads only
                // `listed`); the few entries cost little to drop
                if parsed.listed.is_some() {
                    parsed.tests = Vec::new();
                }
                print_tail(&mut w, &parsed, a.summary, &ascending)
            };
            // A closed stdout (`| head`) is not a parse failure: the exit code still
            // says the command ran.
            let _ = print();
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
    let ascending = print_head(w, run, summary)?;
    print_tail(w, run, summary, &ascending)
}

/// Writes the `--json` object of `run` up to and with `failing` (the part that reads
/// the failing tests' ids and messages); returns whether the named ids of a compact
/// run are in name order (learnt while the tests were written).
fn print_head(
    w: &mut impl std::io::Write,
    run: &ParsedRun,
    summary: bool,
) -> std::io::Result<Ascending> {
    w.write_all(b"{\"tool\":\"loopexec\",\"version\":")?;
    json_str(w, env!("CARGO_PKG_VERSION"))?;
    w.write_all(b",\"status\":\"ok\",\"errors\":[],\"exit_code\":0,\"format\":")?;
    ser(w, &run.format)?;
    write!(
        w,
        ",\"complete\":{},\"unattributed_failure\":{}",
        run.complete, run.unattributed_failure
    )?;
    // whether the named ids of a compact run are in name order, learnt while the
    // tests are written
    let mut ascending = Ascending::default();
    if !summary {
        w.write_all(b",\"tests\":[")?;
        let mut first = true;
        run.for_each_test(|t| {
            if t.id.ends_with(crate::check::model::UNATTRIBUTED_SUFFIX) {
                return Ok(());
            }
            if run.listed.is_some() {
                ascending.next(t.id);
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
    json_strs(w, failing_ids(run).into_iter())?;
    Ok(ascending)
}

/// Writes the rest of the `--json` object of `run` after [`print_head`]: `collected`
/// (for a compact run, from [`ParsedRun::listed`] alone) and `diagnostics`.
fn print_tail(
    w: &mut impl std::io::Write,
    run: &ParsedRun,
    summary: bool,
    ascending: &Ascending,
) -> std::io::Result<()> {
    if !summary {
        w.write_all(b",\"collected\":")?;
        // runners often print their tests in name order (libtest does): then the
        // sorted set is the list itself, and no vector of a million ids is built
        if run.listed.is_some() {
            if ascending.holds() {
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
            } else {
                let (text, spans) = sorted_listed_ids(run);
                json_strs(w, spans.iter().map(|&(a, b)| &text[a as usize..b as usize]))?;
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
    #[test]
    fn sort_spans_gives_byte_order() {
        // shared prefixes longer than a word, ranges ending inside and at a word's
        // end, NUL bytes where a shorter range ended, duplicates, the empty range
        let mut words: Vec<String> = vec![
            String::new(),
            "a".into(),
            "a\0".into(),
            "a\0\0b".into(),
            "pkg.Class1::test_10".into(),
            "pkg.Class1::test_2".into(),
            "pkg.Class10::test_1".into(),
            "pkg.Class1::test_10".into(),
            "abcdefgh".into(),
            "abcdefg".into(),
            "abcdefghi".into(),
            "abcdefgh\0".into(),
            "zz".into(),
            "\u{e9}t\u{e9}".into(),
        ];
        // a deterministic spread of ids sharing long prefixes
        let mut x = 12345u64;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let class = (x >> 33) % 7;
            let case = (x >> 40) % 300;
            let pad = "m".repeat(((x >> 20) % 3) as usize * 8);
            words.push(format!("integration::{pad}module_{class}::case_{case}"));
        }
        let mut text = String::new();
        let mut spans = Vec::new();
        for w in &words {
            let start = text.len() as u32;
            text.push_str(w);
            spans.push((start, text.len() as u32));
        }
        super::sort_spans(text.as_bytes(), &mut spans);
        let got: Vec<&str> = spans
            .iter()
            .map(|&(a, b)| &text[a as usize..b as usize])
            .collect();
        let mut want: Vec<&str> = words.iter().map(String::as_str).collect();
        want.sort_unstable();
        assert_eq!(got, want);
    }

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
