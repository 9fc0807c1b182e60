//! JUnit XML reports, from any producer (Maven Surefire, Gradle, pytest, jest-junit,
//! vitest, node's junit reporter, gotestsum, cargo-nextest, libtest `--format junit`,
//! ctest, PHPUnit).
//!
//! The reader is streaming (quick-xml over a `BufRead`, one reused buffer, no DOM):
//! memory is the per-test results plus the cases of the suites still open, never the
//! document. Text runs longer than 64 KiB (huge captured output) are cut before the XML
//! reader sees them (the `limit` module), so one giant `<system-out>` does not need to fit in
//! memory either. The `time` attributes are never read.
//!
//! # Test ids
//! `<prefix>::<name>` where `<prefix>` is, in order of preference: the `classname`
//! attribute (unless empty or equal to the name); the `file` attribute (jest-junit
//! templates leave `classname` empty); the innermost enclosing `<testsuite name>`.
//! With no prefix the id is the name alone. Names and classnames are entity-decoded and
//! trimmed. Two different tests that end up with the same id get `#2`, `#3`, ... in
//! document order (see below).
//!
//! # Repeated test cases
//! Within one `<testsuite>`, several `<testcase>` with the same id are either retries of
//! one test (pytest-rerunfailures and Gradle write one element per attempt) or distinct
//! tests that share a name (vitest `test.each` without interpolation). They are read as
//! distinct tests when the suite's `tests` attribute equals its number of `<testcase>`
//! children and not every occurrence but the last is failing (a runner only retries a
//! failed attempt); otherwise as retries, where the last attempt decides and a pass
//! after a failure is [`Outcome::FlakyPassed`]. Same ids in *different* suite elements
//! are distinct tests (jest-junit names every suite `undefined`).
//!
//! # Outcomes
//! * `<failure>` or `<error>` (any number) -> failed / errored, even with `<skipped>`
//!   beside it; PHPUnit's `RiskyTestError` is not a failure (PHPUnit counts it apart).
//! * Surefire `flakyFailure`/`flakyError` without a final failure -> flaky-passed;
//!   `rerunFailure`/`rerunError` only accompany a final failure.
//! * `<skipped>` -> skipped. ctest's `status="disabled"` -> skipped; `status="notrun"`
//!   whose skip message does not speak of skipping ("Unable to find executable") is a
//!   failure, as ctest counts it.
//!
//! # Completeness
//! `complete` is true when every root element (`<testsuites>` or `<testsuite>`; several
//! documents may follow each other on one stdout) was closed and the root's declared
//! `failures + errors` are all found on test cases. A document cut short (EOF or an XML
//! error inside the open root) keeps the cases completed so far, is incomplete and is
//! flagged as an unattributed failure: never green. Declared failures missing from the
//! cases (gotestsum counts a package that failed to build) are flagged the same way.
//! Input that is not well-formed before any root element is an error.

use crate::check::model::{Counts, Format, Outcome, ParsedRun};
use crate::check::parse::structured::{RunBuilder, StructuredError};
use crate::check::parse::util;
use limit::LimitText;
use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use std::borrow::Cow;
use std::collections::HashMap;
use std::io::BufRead;

/// Most bytes of failure or captured output text kept per test case.
const MAX_CAPTURE: usize = 8 * 1024;

/// Parses a JUnit XML report. See the module documentation for ids, outcomes and
/// completeness.
///
/// # Errors
/// [`StructuredError::Xml`] when the input is not well-formed before any root element
/// (e.g. a zero-byte file), [`StructuredError::NotRecognised`] when it is XML without a
/// `<testsuites>`/`<testsuite>` root, [`StructuredError::Io`] when reading fails before
/// any root element.
pub fn parse_junit<R: BufRead>(r: R) -> Result<ParsedRun, StructuredError> {
    parse_junit_with(r, util::Listing::Full)
}

/// [`parse_junit`] keeping the tests as `listing` asks.
///
/// # Errors
/// As [`parse_junit`].
pub fn parse_junit_with<R: BufRead>(
    r: R,
    listing: util::Listing,
) -> Result<ParsedRun, StructuredError> {
    let mut reader = Reader::from_reader(LimitText::new(r));
    reader.config_mut().check_end_names = true;
    let mut p = JunitParser::new(listing);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let event = match reader.read_event_into(&mut buf) {
            Ok(ev) => ev,
            Err(err) => {
                let position = reader.error_position();
                return p.on_error(position, &err.to_string());
            }
        };
        match event {
            Event::Start(e) => p.on_start(&e, false),
            Event::Empty(e) => p.on_start(&e, true),
            Event::End(_) => p.on_end(),
            Event::Text(t) if p.capturing() => match t.unescape() {
                Ok(s) => p.on_text(&s),
                Err(_) => p.on_text(&String::from_utf8_lossy(&t)),
            },
            Event::CData(c) if p.capturing() => p.on_text(&String::from_utf8_lossy(&c)),
            Event::Eof => return p.on_eof(reader.buffer_position()),
            _ => {}
        }
    }
}

/// What an open element is, for the parser's element stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Suites,
    Suite,
    Case,
    /// The first `<failure>`/`<error>` of a case: its text is the failure message.
    FailureText,
    /// `<system-out>`/`<system-err>` of a case: fallback message text.
    Output,
    Other,
}

/// A `<testsuite>` still open, with its direct cases not yet emitted.
#[derive(Debug, Default)]
struct SuiteFrame {
    name: String,
    declared_tests: Option<u64>,
    cases: Vec<CaseRecord>,
}

#[derive(Debug)]
struct CaseRecord {
    id: String,
    outcome: Outcome,
    message: Option<String>,
}

/// The `<testcase>` being read.
#[derive(Debug, Default)]
struct CaseState {
    /// The case's id ([`case_id`]), built when the case opens.
    id: String,
    status: String,
    failures: u32,
    errors: u32,
    risky: u32,
    skipped: bool,
    skip_message: String,
    flaky: bool,
    message: String,
    failure_type: String,
    text: String,
    output: String,
}

struct JunitParser {
    builder: RunBuilder,
    stack: Vec<Open>,
    suites: Vec<SuiteFrame>,
    case: Option<CaseState>,
    roots_seen: u64,
    /// Elements seen outside any root (to tell "other XML" from "not XML").
    foreign_elements: bool,
    declared_failures: u64,
    /// Failures + errors declared by top-level suites of a root that declares none.
    declared_children: u64,
    root_declares: bool,
    found_failures: u64,
    /// The tally the current root declares (`tests`, `failures`, `errors`,
    /// `skipped` attributes), when it declares one.
    root_tally: Option<Counts>,
    /// The tallies of the current root's top-level suites, summed.
    children_tally: Option<Counts>,
    /// Every root's declared tally, summed (see [`ParsedRun::summary`]).
    tally: Option<Counts>,
}

/// The tally an element's `tests`, `failures`, `errors` and `skipped` attributes
/// declare (errors count as failed); `None` without a `tests` attribute.
fn declared_tally(e: &BytesStart<'_>) -> Option<Counts> {
    let tests: u64 = attr_opt(e, b"tests")?.trim().parse().ok()?;
    let failed = attr_u64(e, b"failures") + attr_u64(e, b"errors");
    let skipped = attr_u64(e, b"skipped") + attr_u64(e, b"disabled");
    Some(Counts {
        passed: tests.saturating_sub(failed + skipped),
        failed,
        skipped,
        flaky: 0,
    })
}

fn add_tally(a: Option<Counts>, b: Option<Counts>) -> Option<Counts> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.plus(b)),
        (a, b) => a.or(b),
    }
}

impl JunitParser {
    fn new(listing: util::Listing) -> Self {
        JunitParser {
            builder: RunBuilder::with_listing(Format::Junit, "junit", listing),
            stack: Vec::new(),
            suites: Vec::new(),
            case: None,
            roots_seen: 0,
            foreign_elements: false,
            declared_failures: 0,
            declared_children: 0,
            root_declares: false,
            found_failures: 0,
            root_tally: None,
            children_tally: None,
            tally: None,
        }
    }

    fn capturing(&self) -> bool {
        matches!(self.stack.last(), Some(Open::FailureText | Open::Output))
    }

    fn on_start(&mut self, e: &BytesStart<'_>, empty: bool) {
        let local = e.local_name();
        let name = local.as_ref();
        let kind = if self.stack.is_empty() {
            match name {
                b"testsuites" => {
                    self.open_root(e, true);
                    Open::Suites
                }
                b"testsuite" => {
                    self.open_root(e, false);
                    self.open_suite(e);
                    Open::Suite
                }
                // Anything outside a root (junk before/after a document) is ignored.
                _ => {
                    self.foreign_elements = true;
                    return;
                }
            }
        } else if self.case.is_some() {
            self.on_case_child(name, e)
        } else {
            match name {
                b"testsuite" => {
                    if self.stack.len() == 1 && self.stack[0] == Open::Suites {
                        let f = attr_u64(e, b"failures") + attr_u64(e, b"errors");
                        self.declared_children += f;
                        self.children_tally = add_tally(self.children_tally, declared_tally(e));
                    }
                    self.open_suite(e);
                    Open::Suite
                }
                b"testsuites" => Open::Suites,
                b"testcase" => {
                    // one pass over the attributes (a case has several), borrowed
                    // from the element: only the id is built
                    let [name, classname, file, status] =
                        attrs(e, [b"name", b"classname", b"file", b"status"]);
                    let suite = self.suites.last().map_or("", |s| s.name.as_str());
                    self.case = Some(CaseState {
                        id: case_id(
                            trimmed(name.as_deref()),
                            trimmed(classname.as_deref()),
                            trimmed(file.as_deref()),
                            suite,
                        ),
                        status: status.map(Cow::into_owned).unwrap_or_default(),
                        ..CaseState::default()
                    });
                    Open::Case
                }
                _ => Open::Other,
            }
        };
        if empty {
            self.close(kind);
            if self.stack.is_empty() {
                self.close_root();
            }
        } else {
            self.stack.push(kind);
        }
    }

    fn open_root(&mut self, e: &BytesStart<'_>, suites: bool) {
        self.roots_seen += 1;
        self.root_tally = declared_tally(e);
        if let Some(t) = self.root_tally {
            self.builder
                .reserve(usize::try_from(t.total()).unwrap_or(usize::MAX));
            self.builder
                .reserve_failing(usize::try_from(t.failed).unwrap_or(usize::MAX));
        }
        let has_counts = attr_opt(e, b"failures").is_some() || attr_opt(e, b"errors").is_some();
        if has_counts || !suites {
            self.root_declares = true;
            self.declared_failures += attr_u64(e, b"failures") + attr_u64(e, b"errors");
        } else {
            self.root_declares = false;
        }
    }

    fn open_suite(&mut self, e: &BytesStart<'_>) {
        self.suites.push(SuiteFrame {
            name: attr(e, b"name").trim().to_string(),
            declared_tests: attr_opt(e, b"tests").and_then(|v| v.trim().parse().ok()),
            cases: Vec::new(),
        });
    }

    fn on_case_child(&mut self, name: &[u8], e: &BytesStart<'_>) -> Open {
        let in_case = self.stack.last() == Some(&Open::Case);
        let Some(case) = self.case.as_mut() else {
            return Open::Other;
        };
        if !in_case {
            return Open::Other;
        }
        match name {
            b"failure" | b"error" => {
                let ty = attr(e, b"type");
                if name == b"error" && ty.contains("RiskyTestError") {
                    case.risky += 1;
                    return Open::Other;
                }
                let first = case.failures + case.errors == 0;
                if name == b"failure" {
                    case.failures += 1;
                } else {
                    case.errors += 1;
                }
                if first {
                    case.message = attr(e, b"message");
                    case.failure_type = ty;
                    Open::FailureText
                } else {
                    Open::Other
                }
            }
            b"skipped" => {
                case.skipped = true;
                case.skip_message = attr(e, b"message");
                Open::Other
            }
            b"flakyFailure" | b"flakyError" => {
                case.flaky = true;
                Open::Other
            }
            b"system-out" | b"system-err" => Open::Output,
            _ => Open::Other,
        }
    }

    fn on_text(&mut self, s: &str) {
        let target = self.stack.last().copied();
        if let Some(case) = self.case.as_mut() {
            let buf = match target {
                Some(Open::FailureText) => &mut case.text,
                Some(Open::Output) => &mut case.output,
                _ => return,
            };
            push_capped(buf, s);
        }
    }

    fn on_end(&mut self) {
        if let Some(kind) = self.stack.pop() {
            self.close(kind);
            if self.stack.is_empty() {
                self.close_root();
            }
        }
    }

    /// A root closed (or was abandoned): its top-level suites' counts stand for the
    /// root's when the root declares none.
    fn close_root(&mut self) {
        if !self.root_declares {
            self.declared_failures += self.declared_children;
        }
        self.declared_children = 0;
        self.root_declares = false;
        let root = self.root_tally.take().or(self.children_tally.take());
        self.children_tally = None;
        self.tally = add_tally(self.tally, root);
    }

    fn close(&mut self, kind: Open) {
        match kind {
            Open::Case => self.finish_case(),
            Open::Suite => self.finish_suite(),
            _ => {}
        }
    }

    fn finish_case(&mut self) {
        let Some(case) = self.case.take() else {
            return;
        };
        // PHPUnit counts a risky test among the suite's errors.
        if case.failures + case.errors + case.risky > 0 {
            self.found_failures += 1;
        }
        let (outcome, message) = case_outcome(&case);
        let record = CaseRecord {
            id: case.id,
            outcome,
            message,
        };
        match self.suites.last_mut() {
            Some(frame) => frame.cases.push(record),
            None => self
                .builder
                .attempt(&record.id, record.outcome, record.message.as_deref()),
        }
    }

    fn finish_suite(&mut self) {
        let Some(frame) = self.suites.pop() else {
            return;
        };
        emit_suite(&mut self.builder, frame);
    }

    /// EOF: complete when no root is open.
    fn on_eof(mut self, position: u64) -> Result<ParsedRun, StructuredError> {
        if self.roots_seen == 0 {
            if self.foreign_elements {
                return Err(StructuredError::NotRecognised);
            }
            return Err(StructuredError::Xml {
                position,
                message: "no <testsuites> or <testsuite> root element before the end of input"
                    .into(),
            });
        }
        let truncated = !self.stack.is_empty();
        if truncated {
            self.builder.diagnostic(format!(
                "junit report truncated: input ended at byte {position} inside the open root element"
            ));
        }
        Ok(self.finish(!truncated))
    }

    fn on_error(mut self, position: u64, message: &str) -> Result<ParsedRun, StructuredError> {
        if self.stack.is_empty() {
            if self.roots_seen == 0 {
                return Err(StructuredError::Xml {
                    position,
                    message: message.to_string(),
                });
            }
            // Junk after a closed document: what was read stands.
            self.builder.diagnostic(format!(
                "junit: ignored malformed content after the report at byte {position}: {message}"
            ));
            return Ok(self.finish(true));
        }
        self.builder.diagnostic(format!(
            "junit report not well-formed at byte {position} ({message}); cases read before it are kept"
        ));
        Ok(self.finish(false))
    }

    fn finish(mut self, closed: bool) -> ParsedRun {
        // Cases of a partial <testcase> are dropped; open suites are emitted.
        self.case = None;
        while let Some(frame) = self.suites.pop() {
            emit_suite(&mut self.builder, frame);
        }
        if !self.stack.is_empty() {
            self.close_root();
        }
        let declared = self.declared_failures;
        let mut complete = closed;
        if !closed {
            self.builder
                .unattributed(Some("junit report ended before its root element closed"));
        }
        if declared > self.found_failures {
            complete = false;
            let text = format!(
                "junit report declares {declared} failures/errors but only {} test cases carry one",
                self.found_failures
            );
            self.builder.unattributed_with_diagnostic(text);
        }
        // a report cut short declares counts it never got to write
        if let Some(t) = self.tally.filter(|_| closed) {
            self.builder.set_summary(t);
        }
        self.builder.finish(complete)
    }
}

/// Emits the direct cases of a closed (or abandoned) suite, resolving repeated ids as
/// described in the module doc. Ids are moved into the run, not copied; the groups of
/// a repeated id are built only for ids that do repeat.
fn emit_suite(builder: &mut RunBuilder, frame: SuiteFrame) {
    let count = frame.cases.len() as u64;
    let counts_match = frame.declared_tests == Some(count);
    // each id hashed once, for this grouping and for the builder; two ids sharing a
    // hash only make `repeated` look (it groups by the ids themselves)
    let hashes: Vec<u64> = frame.cases.iter().map(|c| builder.id_hash(&c.id)).collect();
    let mut times: HashMap<u64, u32, util::IdHasher> =
        HashMap::with_capacity_and_hasher(frame.cases.len(), util::IdHasher::default());
    for &h in &hashes {
        *times.entry(h).or_insert(0) += 1;
    }
    let repeated: HashMap<String, Vec<usize>, util::IdHasher> = {
        let mut g: HashMap<String, Vec<usize>, util::IdHasher> = HashMap::default();
        for (i, c) in frame.cases.iter().enumerate() {
            if times.get(&hashes[i]).is_some_and(|&n| n > 1) {
                g.entry(c.id.clone()).or_default().push(i);
            }
        }
        g.retain(|_, members| members.len() > 1);
        g
    };
    drop(times);
    if repeated.is_empty() {
        for (c, h) in frame.cases.into_iter().zip(hashes) {
            builder.add_distinct_hashed(c.id, h, c.outcome, c.message.as_deref());
        }
        return;
    }
    let mut emitted = vec![false; frame.cases.len()];
    for (i, c) in frame.cases.iter().enumerate() {
        if emitted[i] {
            continue;
        }
        let Some(members) = repeated.get(c.id.as_str()) else {
            builder.add_distinct(c.id.clone(), c.outcome, c.message.as_deref());
            emitted[i] = true;
            continue;
        };
        let earlier_all_failing = members[..members.len() - 1]
            .iter()
            .all(|&m| frame.cases[m].outcome.is_failing());
        if counts_match && !earlier_all_failing {
            for &m in members {
                let r = &frame.cases[m];
                builder.add_distinct(r.id.clone(), r.outcome, r.message.as_deref());
                emitted[m] = true;
            }
        } else {
            let last = &frame.cases[members[members.len() - 1]];
            let any_failed = members.iter().any(|&m| frame.cases[m].outcome.is_failing());
            let outcome = if last.outcome.is_passing() && any_failed {
                Outcome::FlakyPassed
            } else {
                last.outcome
            };
            builder.add_distinct(c.id.clone(), outcome, last.message.as_deref());
            for &m in members {
                emitted[m] = true;
            }
        }
    }
}

/// A present attribute's value trimmed, `""` for an absent one.
fn trimmed(v: Option<&str>) -> &str {
    v.unwrap_or("").trim()
}

/// A case's id from its trimmed `name`, `classname` and `file` attributes and its
/// suite's name: `PREFIX::NAME`, the prefix being the class name (unless it repeats
/// the name), else the file, else the suite's name; the name alone without any.
fn case_id(name: &str, classname: &str, file: &str, suite_name: &str) -> String {
    let prefix = if !classname.is_empty() && classname != name {
        classname
    } else if !file.is_empty() {
        file
    } else {
        suite_name.trim()
    };
    if prefix.is_empty() {
        name.to_string()
    } else {
        // pushed, not `format!`: the formatting machinery costs more than the copy
        let mut id = String::with_capacity(prefix.len() + 2 + name.len());
        id.push_str(prefix);
        id.push_str("::");
        id.push_str(name);
        id
    }
}

fn case_outcome(case: &CaseState) -> (Outcome, Option<String>) {
    if case.failures + case.errors > 0 {
        let outcome = if case.failures > 0 {
            Outcome::Failed
        } else {
            Outcome::Errored
        };
        return (outcome, Some(failure_message(case)));
    }
    match case.status.trim() {
        "disabled" => return (Outcome::Skipped, None),
        "notrun" if !case.skip_message.to_ascii_lowercase().contains("skip") => {
            let msg = if case.skip_message.trim().is_empty() {
                "not run".to_string()
            } else {
                case.skip_message.clone()
            };
            return (Outcome::Errored, Some(msg));
        }
        _ => {}
    }
    if case.skipped {
        (Outcome::Skipped, None)
    } else if case.flaky {
        (Outcome::FlakyPassed, None)
    } else {
        (Outcome::Passed, None)
    }
}

/// The message of a failing case: the `message` attribute and the element's text
/// (the text alone when it repeats the attribute); with neither, the captured output,
/// then the failure `type`.
fn failure_message(case: &CaseState) -> String {
    let msg = case.message.trim();
    let text = case.text.trim();
    match (msg.is_empty(), text.is_empty()) {
        (false, false) if text.contains(msg) => text.to_string(),
        (false, false) => format!("{msg}\n{text}"),
        (false, true) => msg.to_string(),
        (true, false) => text.to_string(),
        (true, true) if !case.output.trim().is_empty() => case.output.trim().to_string(),
        (true, true) => case.failure_type.trim().to_string(),
    }
}

fn push_capped(buf: &mut String, s: &str) {
    if buf.len() >= MAX_CAPTURE {
        return;
    }
    let room = MAX_CAPTURE - buf.len();
    if s.len() <= room {
        buf.push_str(s);
    } else {
        let mut cut = room;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        buf.push_str(&s[..cut]);
    }
}

/// The decoded value of attribute `key`, if present. Undecodable entities fall back to
/// the raw text (a report is never rejected over an attribute).
fn attr_opt(e: &BytesStart<'_>, key: &[u8]) -> Option<String> {
    let [v] = attrs(e, [key]);
    v.map(Cow::into_owned)
}

/// The decoded values of attributes `keys`, in one pass over the element's
/// attributes, borrowed from the element when they hold no entity. An attribute's
/// name is matched by its local part (after the first `:`): the first unprefixed
/// one, else the first prefixed one. An undecodable value falls back to its raw
/// text, read lossily.
fn attrs<'a, const N: usize>(e: &'a BytesStart<'a>, keys: [&[u8]; N]) -> [Option<Cow<'a, str>>; N] {
    let mut out: [Option<Cow<'a, str>>; N] = std::array::from_fn(|_| None);
    // whether `out[j]` came from an unprefixed name: that one wins over a prefixed
    // one (`x:name`) wherever each stands (a fresh review named a failing case
    // after a passing one through `x:name` ahead of its own `name`)
    let mut exact = [false; N];
    let raw = e.attributes_raw();
    // UTF-8 checked once for the element, not once per value: a value lies between
    // two ASCII quotes, so its ends are character boundaries of the checked text
    let text = std::str::from_utf8(raw).ok();
    let plain = plain_attributes(raw, |name, value| {
        if let Some(j) = pick(&keys, &out, &mut exact, name) {
            out[j] = Some(match text {
                Some(t) => {
                    let start = value.as_ptr() as usize - raw.as_ptr() as usize;
                    decode_str(&t[start..start + value.len()])
                }
                None => decode_value(value),
            });
        }
    });
    if plain {
        return out;
    }
    // anything else is read by the reader's own iterator
    out = std::array::from_fn(|_| None);
    exact = [false; N];
    for a in e.attributes().with_checks(false).flatten() {
        if let Some(j) = pick(&keys, &out, &mut exact, a.key.as_ref()) {
            out[j] = Some(match a.unescape_value() {
                Ok(v) => v,
                Err(_) => Cow::Owned(String::from_utf8_lossy(&a.value).into_owned()),
            });
        }
    }
    out
}

/// The slot of `keys` an attribute named `name` fills, if any: a name matches by
/// its local part; the first unprefixed match wins, else the first prefixed one.
/// `exact[j]` records that slot `j` holds an unprefixed match.
fn pick<T, const N: usize>(
    keys: &[&[u8]; N],
    out: &[Option<T>; N],
    exact: &mut [bool; N],
    name: &[u8],
) -> Option<usize> {
    let (local, prefixed) = match memchr::memchr(b':', name) {
        Some(i) => (&name[i + 1..], true),
        None => (name, false),
    };
    // length and first byte first: most names are told apart without a `memcmp`
    let j = keys
        .iter()
        .position(|k| k.len() == local.len() && k.first() == local.first() && *k == local)?;
    if out[j].is_some() && (prefixed || exact[j]) {
        return None;
    }
    exact[j] = !prefixed;
    Some(j)
}

/// Hands `f` each attribute of `raw` (an element's bytes after its name) as name
/// and raw value, when every one is plain `name="value"` or `name='value'`
/// (white space around `=` allowed, white space between attributes); returns false
/// at anything else, having handed some over maybe.
///
/// The reader's attribute iterator costs about 250 instructions an attribute, a
/// third of a passing test case's parse; this is a few `memchr` calls.
fn plain_attributes<'a>(raw: &'a [u8], mut f: impl FnMut(&'a [u8], &'a [u8])) -> bool {
    let space = |b: u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    let skip = |mut i: usize| {
        while i < raw.len() && space(raw[i]) {
            i += 1;
        }
        i
    };
    let mut i = 0;
    loop {
        let start = skip(i);
        if start == raw.len() {
            return true;
        }
        // attributes are separated by white space
        if start == i && i > 0 {
            return false;
        }
        let mut end = start;
        while end < raw.len() && raw[end] != b'=' && !space(raw[end]) {
            end += 1;
        }
        let name = &raw[start..end];
        let eq = skip(end);
        if name.is_empty() || raw.get(eq) != Some(&b'=') {
            return false;
        }
        let open = skip(eq + 1);
        let Some(&quote) = raw.get(open).filter(|q| matches!(q, b'"' | b'\'')) else {
            return false;
        };
        let Some(len) = memchr::memchr(quote, &raw[open + 1..]) else {
            return false;
        };
        f(name, &raw[open + 1..open + 1 + len]);
        i = open + 2 + len;
    }
}

/// An attribute's raw value decoded as the reader decodes it (UTF-8, predefined
/// and character entities), borrowed when it holds no entity; its raw text read
/// lossily when it cannot be decoded.
fn decode_value(raw: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(raw) {
        Ok(text) => decode_str(text),
        Err(_) => Cow::Owned(String::from_utf8_lossy(raw).into_owned()),
    }
}

/// [`decode_value`] of a value already known to be UTF-8: borrowed when it holds no
/// entity, itself when an entity cannot be decoded.
fn decode_str(text: &str) -> Cow<'_, str> {
    if memchr::memchr(b'&', text.as_bytes()).is_none() {
        return Cow::Borrowed(text);
    }
    quick_xml::escape::unescape(text).unwrap_or(Cow::Borrowed(text))
}

fn attr(e: &BytesStart<'_>, key: &[u8]) -> String {
    attr_opt(e, key).unwrap_or_default()
}

/// A count attribute; anything that is not a plain integer counts as 0.
fn attr_u64(e: &BytesStart<'_>, key: &[u8]) -> u64 {
    attr_opt(e, key)
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

mod limit;
mod synthetic;

pub use synthetic::synthetic_junit;

#[cfg(test)]
mod tests;
