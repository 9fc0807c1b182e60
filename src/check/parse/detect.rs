//! Format auto-detection from the first bytes of each stream and report file.
//!
//! Owns: [`Kind`], the parser a stream should go to, and [`detect_stream`] (used
//! for stdout, stderr and report files alike). Detection reads at most
//! [`SCAN_BYTES`] of a file (line by line, lossy UTF-8) and scores line signatures
//! of every known runner (each signature counts at most three times); the highest
//! score wins, ties go to the runner listed first in the signature table. Structured content (XML,
//! JSON events, TeamCity service messages) is recognised by its opening bytes/keys.
//! Invariant: never reads past the scan limit, never fails (unreadable = no kind).

use super::util::{for_each_line, strip_ansi, Source};
use crate::check::model::Format;
use regex::RegexSet;
use std::ops::ControlFlow;
use std::sync::OnceLock;

/// Bytes of a stream looked at by auto-detection.
pub const SCAN_BYTES: usize = 512 * 1024;

/// The parser that handles a stream. Text kinds read both streams; structured kinds
/// read the one stream or report they were detected in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// JUnit XML (any producer).
    Junit,
    /// libtest / nextest libtest-json events.
    LibtestJson,
    /// `go test -json` events.
    GotestJson,
    /// jest or vitest `--json` report.
    JestJson,
    /// mocha JSON reporter.
    MochaJson,
    /// rspec JSON formatter.
    RspecJson,
    /// TeamCity service messages.
    Teamcity,
    /// Rust libtest human output (cargo test).
    Libtest,
    /// cargo-nextest human output.
    Nextest,
    /// pytest terminal output.
    Pytest,
    /// go test plain / -v and gotestsum human formats.
    Gotest,
    /// jest default / verbose reporters.
    Jest,
    /// vitest default / verbose reporters.
    Vitest,
    /// mocha spec / dot reporters.
    Mocha,
    /// node --test spec / dot reporters.
    NodeTest,
    /// TAP 12/13 and prove.
    Tap,
    /// ctest.
    Ctest,
    /// rspec progress / documentation.
    Rspec,
    /// PHPUnit default / testdox.
    Phpunit,
    /// Python unittest's text runner.
    Unittest,
    /// One failing id per line.
    Lines,
}

impl Kind {
    /// The wire format this kind reports as. node's spec/dot reporters have no own
    /// format name and report as `tap` (node's runner is TAP based).
    #[must_use]
    pub fn format(self) -> Format {
        match self {
            Kind::Junit => Format::Junit,
            Kind::LibtestJson => Format::LibtestJson,
            Kind::GotestJson => Format::GotestJson,
            Kind::JestJson => Format::JestJson,
            Kind::MochaJson => Format::MochaJson,
            Kind::RspecJson => Format::RspecJson,
            Kind::Teamcity => Format::Teamcity,
            Kind::Libtest => Format::Libtest,
            Kind::Nextest => Format::Nextest,
            Kind::Pytest => Format::Pytest,
            Kind::Gotest => Format::Gotest,
            Kind::Jest => Format::Jest,
            Kind::Vitest => Format::Vitest,
            Kind::Mocha => Format::Mocha,
            Kind::NodeTest | Kind::Tap => Format::Tap,
            Kind::Ctest => Format::Ctest,
            Kind::Rspec => Format::Rspec,
            Kind::Phpunit => Format::Phpunit,
            Kind::Unittest => Format::Unittest,
            Kind::Lines => Format::Lines,
        }
    }

    /// True for kinds read by a structured parser.
    #[must_use]
    pub fn is_structured(self) -> bool {
        matches!(
            self,
            Kind::Junit
                | Kind::LibtestJson
                | Kind::GotestJson
                | Kind::JestJson
                | Kind::MochaJson
                | Kind::RspecJson
                | Kind::Teamcity
        )
    }

    /// The kind used for a user-fixed format (`None` for `exit-code`).
    #[must_use]
    pub fn from_format(f: Format) -> Option<Kind> {
        Some(match f {
            Format::Libtest => Kind::Libtest,
            Format::LibtestJson => Kind::LibtestJson,
            Format::Nextest => Kind::Nextest,
            Format::Pytest => Kind::Pytest,
            Format::Gotest => Kind::Gotest,
            Format::GotestJson => Kind::GotestJson,
            Format::Jest => Kind::Jest,
            Format::JestJson | Format::VitestJson => Kind::JestJson,
            Format::Vitest => Kind::Vitest,
            Format::Mocha => Kind::Mocha,
            Format::MochaJson => Kind::MochaJson,
            Format::Tap => Kind::Tap,
            Format::Junit => Kind::Junit,
            Format::Ctest => Kind::Ctest,
            Format::Rspec => Kind::Rspec,
            Format::RspecJson => Kind::RspecJson,
            Format::Phpunit => Kind::Phpunit,
            Format::Teamcity => Kind::Teamcity,
            Format::Unittest => Kind::Unittest,
            Format::Lines => Kind::Lines,
            Format::ExitCode => return None,
        })
    }
}

/// Text signatures: (kind, weight, pattern) tested against each ANSI-stripped line.
///
/// Digits are written `[0-9]` and a name `[^\s()]`, not `\d` and `\w`: every runner
/// prints its counts in ASCII digits, and a name may hold any letter. Unicode's
/// digit and word classes made the set cost 3.0 ms to compile, paid by every parse;
/// as written it costs 0.7 ms (regex 1.13, release build, on the 2-core VM).
const SIGNATURES: &[(Kind, u32, &str)] = &[
    (Kind::Libtest, 5, r"^running [0-9]+ tests?$"),
    (Kind::Libtest, 3, r"^test .+ \.\.\. "),
    (
        Kind::Libtest,
        8,
        r"^test result: (ok|FAILED)\. [0-9]+ passed",
    ),
    (Kind::Libtest, 4, r"^\s+Running (unittests )?\S+ \(.*\)$"),
    (Kind::Libtest, 4, r"^\s+Doc-tests \S+$"),
    (Kind::Libtest, 3, r"^[0-9]+ tests?, [0-9]+ benchmarks?$"),
    (Kind::Libtest, 1, r"^\S+: test$"),
    // a test build that failed to compile: cargo's own words, so the run is read as
    // cargo's (incomplete, the compiler's error as the message), not as a bare exit code
    (Kind::Libtest, 6, r"^error: could not compile `"),
    (Kind::Libtest, 2, r"^error\[E[0-9]{4}\]: "),
    (
        Kind::Nextest,
        10,
        r"^\s*Starting [0-9]+ tests? across [0-9]+ binar",
    ),
    (
        Kind::Nextest,
        4,
        r"^\s+(PASS|FAIL|SIGABRT|SIGSEGV|TIMEOUT|SKIP|FLAKY|TRY [0-9]+ [^\s()]+) \[\s*[[0-9].]+s\] ",
    ),
    (
        Kind::Nextest,
        8,
        r"^\s+Summary \[\s*[[0-9].]+s\] [0-9]+ tests? run",
    ),
    (Kind::Pytest, 10, r"^=+ test session starts =+$"),
    (Kind::Pytest, 4, r"^collected [0-9]+ items?"),
    (
        Kind::Pytest,
        6,
        r"^(=+ )?([0-9]+ (failed|passed|skipped|errors?|deselected|xfailed|xpassed|warnings?|rerun)(, )?)+.* in [[0-9].]+s",
    ),
    (Kind::Pytest, 4, r"^(FAILED|ERROR|PASSED) \S+\.py::"),
    (
        Kind::Pytest,
        3,
        r"^\S+\.py::\S.* (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS|RERUN)",
    ),
    (Kind::Pytest, 3, r"^[0-9]+ tests? collected"),
    (Kind::Gotest, 3, r"^=== RUN\s+\S"),
    (Kind::Gotest, 4, r"^\s*--- (FAIL|PASS|SKIP): \S+ \("),
    (
        Kind::Gotest,
        5,
        r"^(ok|FAIL|\?)\s+\S+\s+(\(cached\)|[[0-9].]+s|\[no test files\]|\[build failed\])",
    ),
    (
        Kind::Gotest,
        5,
        r"^(PASS|FAIL|SKIP|EMPTY) \S+\.(Test|Example|Benchmark|Fuzz)\S*",
    ),
    (Kind::Gotest, 6, r"^DONE [0-9]+ tests"),
    (Kind::Jest, 8, r"^Test Suites: "),
    (
        Kind::Jest,
        4,
        r"^\s*(PASS|FAIL) \S+\.(test|spec)\.[cm]?[jt]sx?",
    ),
    (Kind::Jest, 2, r"^\s*● .+ › "),
    (Kind::Vitest, 8, r"^\s*Test Files\s+[0-9]+ "),
    (Kind::Vitest, 6, r"^\s*RUN\s+v[0-9]+\.[0-9]+"),
    (Kind::Mocha, 6, r"^\s+[0-9]+ passing \([0-9]+[^\s()]*\)$"),
    (Kind::Mocha, 3, r"^\s+[0-9]+ (failing|pending)$"),
    (Kind::NodeTest, 6, r"^ℹ (tests|suites|pass|fail) [0-9]+$"),
    (Kind::NodeTest, 4, r"^Failed tests:$"),
    (Kind::NodeTest, 2, r"^\s*(✔|✖|﹣) .+ \([[0-9].]+ms\)"),
    (Kind::NodeTest, 3, r"^\s*▶ \S"),
    (Kind::Tap, 8, r"^TAP version [0-9]+"),
    (Kind::Tap, 4, r"^\s*1\.\.[0-9]+"),
    (Kind::Tap, 2, r"^\s*(not )?ok [0-9]+"),
    (Kind::Tap, 6, r"^Files=[0-9]+, Tests=[0-9]+"),
    (Kind::Tap, 5, r"^Result: (PASS|FAIL|NOTESTS)"),
    (Kind::Unittest, 8, r"^Ran [0-9]+ tests? in [[0-9].]+s$"),
    (
        Kind::Unittest,
        5,
        r"^FAILED \((failures|errors|skipped|expected failures|unexpected successes)=[0-9]+",
    ),
    (
        Kind::Unittest,
        4,
        r"^OK \((skipped|expected failures|unexpected successes)=[0-9]+",
    ),
    (Kind::Unittest, 4, r"^(FAIL|ERROR): [^\s()]+ \([^\s()]+\)"),
    (
        Kind::Unittest,
        3,
        r"^[^\s()]+ \([^\s()]+\) \.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)",
    ),
    (Kind::Ctest, 10, r"^Test project "),
    (Kind::Ctest, 4, r"^\s*[0-9]+/[0-9]+ Test\s+#[0-9]+: "),
    (
        Kind::Ctest,
        6,
        r"^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+",
    ),
    (Kind::Rspec, 8, r"^[0-9]+ examples?, [0-9]+ failures?"),
    (Kind::Rspec, 4, r"^rspec \./\S+:[0-9]+"),
    (Kind::Phpunit, 10, r"^PHPUnit [0-9]+\.[0-9]+"),
    (
        Kind::Phpunit,
        6,
        r"^(Tests: [0-9]+, Assertions: [0-9]+|OK \([0-9]+ tests?, [0-9]+ assertions?\))",
    ),
];

/// [`SIGNATURES`] compiled into one set, so that a line is scanned once for all of
/// them; the kinds and weights of its patterns in the same order.
struct Compiled {
    set: RegexSet,
    sigs: Vec<(Kind, u32)>,
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| {
        // every signature is a constant that compiles (a test holds them to it); a
        // set that does not compile detects nothing rather than panicking
        let set = RegexSet::new(SIGNATURES.iter().map(|(_, _, p)| *p))
            .unwrap_or_else(|_| RegexSet::empty());
        let sigs = if set.is_empty() {
            Vec::new()
        } else {
            SIGNATURES.iter().map(|(k, w, _)| (*k, *w)).collect()
        };
        Compiled { set, sigs }
    })
}

/// True when the first non-empty line of a stream opens an XML document (a JUnit
/// report): detection then needs no more of the stream.
fn opens_xml(first: &str) -> bool {
    let first = first.trim_start_matches('\u{feff}');
    first.starts_with("<?xml")
        || first.starts_with("<testsuites")
        || first.starts_with("<testsuite")
}

/// What detection found in one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detected {
    /// The best kind.
    pub kind: Kind,
    /// Its score (sum of signature weights, capped per signature).
    pub score: u32,
    /// Other text kinds the stream also reads as, each scoring at least
    /// [`SECOND_OPINION_SCORE`], best first: the parse asks them too (a check's
    /// output that carries a second runner's verdicts, printed by the code under
    /// test to outscore the real runner, must not hide the real runner's failures).
    pub also: [Option<Kind>; 3],
}

/// Least score of a kind that is not the best for a stream but is read as well
/// ([`Detected::also`]): a summary line of its own (8 and up), or several of its
/// result lines.
pub const SECOND_OPINION_SCORE: u32 = 8;

/// Scans the first [`SCAN_BYTES`] of `src` (a stream or a report file) and returns
/// the best kind, if any signature matched. Structured content wins outright when
/// recognised.
#[must_use]
pub fn detect_stream<'a>(src: impl Into<Source<'a>>) -> Option<Detected> {
    // compiled at the first line that is not an XML report's: a check that printed
    // nothing, or a report, costs no regex build
    let mut c: Option<&Compiled> = None;
    let mut hits: Vec<u32> = Vec::new();
    let mut head = String::new();
    let mut read = 0usize;
    let mut first_nonempty: Option<String> = None;
    let mut teamcity = 0u32;
    let _ = for_each_line(src, |raw| {
        read += raw.len() + 1;
        let line = strip_ansi(raw);
        if first_nonempty.is_none() && !line.trim().is_empty() {
            let first = line.trim();
            first_nonempty = Some(first.to_string());
            // an XML report is told by its first line alone (`structured_kind`)
            if opens_xml(first) {
                return ControlFlow::Break(());
            }
        }
        let c = *c.get_or_insert_with(|| {
            let c = compiled();
            hits = vec![0u32; c.sigs.len()];
            c
        });
        if head.len() < 64 * 1024 {
            head.push_str(&line);
            head.push('\n');
        }
        if line.starts_with("##teamcity[") {
            teamcity += 1;
        }
        for i in c.set.matches(&line).iter() {
            if hits[i] < 50 {
                hits[i] += 1;
            }
        }
        if read >= SCAN_BYTES {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    if let Some(k) = structured_kind(first_nonempty.as_deref().unwrap_or(""), &head) {
        return Some(Detected {
            kind: k,
            score: 1000,
            also: [None; 3],
        });
    }
    let mut totals: Vec<(Kind, u32)> = Vec::new();
    let sigs = c.map_or(&[][..], |c| c.sigs.as_slice());
    for (i, (k, w)) in sigs.iter().enumerate() {
        if hits[i] == 0 {
            continue;
        }
        // a signature counts up to 3 times so one repeated line shape cannot dominate
        let s = w * hits[i].min(3);
        match totals.iter_mut().find(|(kk, _)| kk == k) {
            Some((_, t)) => *t += s,
            None => totals.push((*k, s)),
        }
    }
    // best first; a tie keeps the signatures' order
    totals.sort_by_key(|&(_, score)| std::cmp::Reverse(score));
    let mut also = [None; 3];
    if teamcity > 0 {
        // service messages win outright; the text kinds are asked as well
        for (slot, (k, _)) in also
            .iter_mut()
            .zip(totals.iter().filter(|(_, s)| *s >= SECOND_OPINION_SCORE))
        {
            *slot = Some(*k);
        }
        return Some(Detected {
            kind: Kind::Teamcity,
            score: 500,
            also,
        });
    }
    let (&(kind, score), rest) = totals.split_first()?;
    for (slot, (k, _)) in also
        .iter_mut()
        .zip(rest.iter().filter(|(_, s)| *s >= SECOND_OPINION_SCORE))
    {
        *slot = Some(*k);
    }
    Some(Detected { kind, score, also })
}

/// Recognises structured content from the first non-empty line and the head text.
fn structured_kind(first: &str, head: &str) -> Option<Kind> {
    if opens_xml(first) {
        return Some(Kind::Junit);
    }
    let first = first.trim_start_matches('\u{feff}');
    // JSON event streams may start with plain-text lines (go's build failures before
    // Go 1.24) or with events of a shape other than the test events (Go 1.24's
    // `build-output`/`build-fail`, keyed by `ImportPath`): the kind is the one most
    // JSON lines of the head belong to, not the first line's.
    if let Some(k) = event_stream_kind(head) {
        return Some(k);
    }
    if !first.starts_with('{') {
        return None;
    }
    if head.contains("\"numTotalTests\"") || head.contains("\"testResults\"") {
        return Some(Kind::JestJson);
    }
    if head.contains("\"examples\"")
        && (head.contains("\"summary_line\"") || head.contains("\"full_description\""))
    {
        return Some(Kind::RspecJson);
    }
    if head.contains("\"stats\"") && head.contains("\"passes\"") {
        return Some(Kind::MochaJson);
    }
    None
}

/// Lines of the head weighed by [`event_stream_kind`].
const EVENT_LINES: usize = 64;

/// The event-stream kind (libtest JSON, `go test -json`) most of the first
/// [`EVENT_LINES`] JSON lines of `head` belong to, if any belongs to one.
///
/// Shapes: libtest's `{"type":"suite"|"test",..,"event":..}`; `go test -json`'s
/// `test2json` events `{"Time","Action","Package","Test","Output","Elapsed"}` and Go
/// 1.24's build events `{"ImportPath","Action":"build-output"|"build-fail","Output"}`
/// (see `go help test` and `cmd/test2json`).
fn event_stream_kind(head: &str) -> Option<Kind> {
    let (mut libtest, mut go) = (0u32, 0u32);
    for j in head
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with('{'))
        .take(EVENT_LINES)
    {
        if j.contains("\"type\"") && j.contains("\"event\"") {
            libtest += 1;
        } else if j.contains("\"Action\"")
            && (j.contains("\"Package\"") || j.contains("\"Time\"") || j.contains("\"ImportPath\""))
        {
            go += 1;
        }
    }
    match (libtest, go) {
        (0, 0) => None,
        (l, g) if l >= g => Some(Kind::LibtestJson),
        _ => Some(Kind::GotestJson),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn detect_text(s: &str) -> Option<Kind> {
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        f.write_all(s.as_bytes()).ok()?;
        detect_stream(f.path()).map(|d| d.kind)
    }

    /// Every signature compiles, so the set holds them all.
    #[test]
    fn every_signature_compiles() {
        for (_, _, p) in SIGNATURES {
            assert!(regex::Regex::new(p).is_ok(), "{p}");
        }
        assert_eq!(compiled().sigs.len(), SIGNATURES.len());
    }

    #[test]
    fn detects_common_runners() {
        assert_eq!(
            detect_text("\nrunning 1 test\ntest a ... ok\n\ntest result: ok. 1 passed; 0 failed\n"),
            Some(Kind::Libtest)
        );
        assert_eq!(
            detect_text("============ test session starts ============\ncollected 2 items\n"),
            Some(Kind::Pytest)
        );
        assert_eq!(
            detect_text("TAP version 13\nok 1 - a\n1..1\n"),
            Some(Kind::Tap)
        );
        assert_eq!(
            detect_text("=== RUN   TestA\n--- PASS: TestA (0.00s)\n"),
            Some(Kind::Gotest)
        );
        assert_eq!(
            detect_text("<?xml version=\"1.0\"?>\n<testsuites/>"),
            Some(Kind::Junit)
        );
        assert_eq!(
            detect_text("not json\n{\"Time\":\"x\",\"Action\":\"run\",\"Package\":\"p\"}\n"),
            Some(Kind::GotestJson)
        );
        assert_eq!(detect_text("hello\nworld\n"), None);
    }
}
