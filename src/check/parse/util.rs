//! Shared helpers for every parser: streaming line reading, ANSI stripping, failure
//! message normalization, and [`Collector`], the per-run accumulator that keeps one
//! entry per test id (final attempt decides) and adds the synthetic
//! `<runner>::<unattributed>` member.
//!
//! Invariants: nothing here panics on any input (invalid UTF-8 is replaced per line);
//! a file is read line by line and never held whole in memory.

use super::hashed::{HashedTests, MessageRule};
use crate::check::model::{Format, Outcome, ParsedRun, TestResult, UNATTRIBUTED_SUFFIX};
use regex::Regex;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::OnceLock;

/// Longest failure message kept, in bytes (the model's 2 KiB limit).
pub const MESSAGE_LIMIT: usize = 2048;

/// Most message lines kept by [`normalize_message`].
const MESSAGE_LINES: usize = 12;

/// True when `bytes` holds `needle`.
///
/// Made for the short haystacks of single lines: up to 256 bytes are read eight at
/// a time as words, each tested for a byte equal to `needle` with the classic
/// zero-byte test (`(x - 0x01…) & !x & 0x80…` is non-zero exactly when some byte of
/// `x` is zero), the last word overlapping the one before. For short lines that is
/// cheaper than a call into a general vectorized search: over the 1M lines of
/// `benches/parse_throughput.rs`'s libtest input (about 50 bytes each), 4.4 ms
/// against 5.5 ms for `memchr::memchr` (a scratch build on the 2-core VM). Longer
/// haystacks go to `memchr`.
#[must_use]
#[inline]
pub fn contains_byte(bytes: &[u8], needle: u8) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let n = bytes.len();
    if n > 256 {
        return memchr::memchr(needle, bytes).is_some();
    }
    if n < 8 {
        return bytes.contains(&needle);
    }
    let pattern = u64::from_ne_bytes([needle; 8]);
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[at..at + 8]);
        u64::from_ne_bytes(w) ^ pattern
    };
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let mut acc = zero_byte(word(n - 8));
    let mut at = 0;
    while at + 8 < n {
        acc |= zero_byte(word(at));
        at += 8;
    }
    acc != 0
}

/// Removes terminal escape sequences: CSI (`ESC [ ... final`), OSC (`ESC ] ... BEL` or
/// `ESC \`), charset selection (`ESC ( B`) and any other two-byte `ESC x` sequence.
/// Returns the input unchanged (borrowed) when it holds no `ESC`.
#[must_use]
pub fn strip_ansi(s: &str) -> Cow<'_, str> {
    // runs on every line of every check: see `contains_byte`
    if !contains_byte(s.as_bytes(), 0x1b) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                // parameters and intermediates, then one final byte in @..~
                for n in chars.by_ref() {
                    if ('@'..='~').contains(&n) {
                        break;
                    }
                }
            }
            Some(']') => {
                while let Some(n) = chars.next() {
                    if n == '\u{7}' {
                        break;
                    }
                    if n == '\u{1b}' {
                        if chars.peek() == Some(&'\\') {
                            chars.next();
                        }
                        break;
                    }
                }
            }
            Some('(' | ')' | '*' | '+') => {
                chars.next();
            }
            _ => {}
        }
    }
    Cow::Owned(out)
}

fn re(cell: &'static OnceLock<Regex>, pat: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pat).unwrap_or_else(|_| Regex::new("$^").expect("trivial")))
}

/// Normalizes a failure message so it is comparable across runs: ANSI stripped, hex
/// addresses (`0x7ffd…`), durations (`(0.01s)`, `12 ms`, `in 0.00s`) and thread ids
/// (`thread 'x' (5789)`) removed, blank lines and backtrace hints dropped, at most
/// 12 lines and [`MESSAGE_LIMIT`] bytes (cut on a character boundary).
#[must_use]
pub fn normalize_message(msg: &str) -> String {
    static HEX: OnceLock<Regex> = OnceLock::new();
    static DUR: OnceLock<Regex> = OnceLock::new();
    static TID: OnceLock<Regex> = OnceLock::new();
    // (substring searchers built once: `str::contains` prepares one per call, which
    // cost more than the search on a message's short lines)
    static FINDERS: OnceLock<[memchr::memmem::Finder<'static>; 3]> = OnceLock::new();
    let [backtrace, thread, hex] = FINDERS.get_or_init(|| {
        [
            memchr::memmem::Finder::new("RUST_BACKTRACE"),
            memchr::memmem::Finder::new("thread '"),
            memchr::memmem::Finder::new("0x"),
        ]
    });
    let stripped = strip_ansi(msg);
    let mut out = String::new();
    let mut kept = 0;
    for line in stripped.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() || backtrace.find(line.as_bytes()).is_some() {
            continue;
        }
        // each pattern only on a line that holds what it must match (a thread name,
        // `0x`, a number followed by a unit's first letter): the same result without
        // a regex search per line
        let l = if thread.find(line.as_bytes()).is_some() {
            re(&TID, r"(thread '[^']*') \(\d+\)").replace_all(line, "$1")
        } else {
            Cow::Borrowed(line)
        };
        let l = if hex.find(l.as_bytes()).is_some() {
            Cow::Owned(
                re(&HEX, r"0x[0-9a-fA-F]{4,}")
                    .replace_all(&l, "0x?")
                    .into_owned(),
            )
        } else {
            l
        };
        let l = if duration_like(&l) {
            Cow::Owned(
                re(
                    &DUR,
                    r"\s*\(?\b(in )?\d+(\.\d+)?\s?(ms|s|sec|seconds|µs|us|ns)\b\)?",
                )
                .replace_all(&l, "")
                .into_owned(),
            )
        } else {
            l
        };
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(l.trim_end());
        kept += 1;
        if kept >= MESSAGE_LINES || out.len() >= MESSAGE_LIMIT {
            break;
        }
    }
    truncate_bytes(&mut out, MESSAGE_LIMIT);
    // kept per failing test until the run is printed: no room to grow
    out.shrink_to_fit();
    out
}

/// True when `line` may hold a duration [`normalize_message`] removes: a run of
/// numeric characters and dots followed, after at most one whitespace character, by
/// the first letter of a unit (`ms`, `s`, `sec`, `seconds`, `µs`, `us`, `ns`). Every
/// match of the duration pattern has that shape (its digits and fraction are such a
/// run, and what follows them is `\s?` and a unit), so a line without it is left
/// alone without a regex search: `at pkg.Class0.test_103(Class.java:103)` is not
/// searched, `in 0.01s` and `12 ms` are.
fn duration_like(line: &str) -> bool {
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if !c.is_numeric() {
            continue;
        }
        while chars.next_if(|&c| c.is_numeric() || c == '.').is_some() {}
        chars.next_if(|c| c.is_whitespace());
        if chars
            .peek()
            .is_some_and(|c| matches!(c, 'm' | 's' | 'µ' | 'u' | 'n'))
        {
            return true;
        }
    }
    false
}

/// Cuts `s` to at most `limit` bytes on a character boundary.
pub fn truncate_bytes(s: &mut String, limit: usize) {
    if s.len() <= limit {
        return;
    }
    let mut cut = limit;
    while cut > 0 && !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
}

/// The synthetic failing member `<runner>::<unattributed>` (outcome `Failed`), added
/// when a red run has a failure no named test can carry.
#[must_use]
pub fn unattributed(runner: &str, message: Option<String>) -> TestResult {
    TestResult {
        id: format!("{runner}{UNATTRIBUTED_SUFFIX}"),
        outcome: Outcome::Failed,
        message: message
            .map(|m| normalize_message(&m))
            .filter(|m| !m.is_empty()),
    }
}

/// Longest line handed to a parser, in bytes; the rest of a longer line is skipped
/// (a runner's result lines are short; this bounds memory on binary or minified
/// output).
pub const LINE_LIMIT: usize = 64 * 1024;

/// A captured stream as the parsers read it: its file, or the bytes a short stream
/// kept in memory (a check that printed little writes no spool file,
/// [`crate::proc::capture::Spools::source`]). `path` names it in diagnostics either way.
#[derive(Debug, Clone, Copy)]
pub enum Source<'a> {
    /// The stream is in this file.
    File(&'a Path),
    /// The stream is these bytes; `path` is where its spool file would be.
    Memory { path: &'a Path, bytes: &'a [u8] },
}

impl<'a> Source<'a> {
    /// The file, or where it would be (for messages).
    #[must_use]
    pub fn path(&self) -> &'a Path {
        match self {
            Source::File(p) | Source::Memory { path: p, .. } => p,
        }
    }

    /// A buffered reader over the stream (`cap`: the buffer size for a file).
    ///
    /// # Errors
    /// The file cannot be opened.
    pub fn reader(&self, cap: usize) -> std::io::Result<Box<dyn BufRead + 'a>> {
        Ok(match *self {
            Source::File(p) => Box::new(BufReader::with_capacity(cap, File::open(p)?)),
            Source::Memory { bytes, .. } => Box::new(bytes),
        })
    }
}

impl<'a> From<&'a Path> for Source<'a> {
    fn from(p: &'a Path) -> Self {
        Source::File(p)
    }
}

/// Reads `src` line by line (any line ending, lossy UTF-8 per line, trailing `\r`
/// removed, each line cut to [`LINE_LIMIT`] bytes) and calls `f` for each until it
/// returns `Break`.
///
/// Lines are found with `memchr` in a 256 KiB buffer and handed over in place: a line
/// that lies whole in the buffer and is valid UTF-8 is neither copied nor allocated
/// (only a line that straddles two reads is assembled in a side buffer). The complete
/// lines of each read are checked as UTF-8 in one pass; only when that fails is each
/// line checked on its own (and an invalid one replaced).
///
/// # Errors
/// The I/O error opening or reading the file.
pub fn for_each_line<'a>(
    src: impl Into<Source<'a>>,
    mut f: impl FnMut(&str) -> ControlFlow<()>,
) -> std::io::Result<()> {
    let mut reader = src.into().reader(256 * 1024)?;
    // the part of a line seen in earlier reads
    let mut carry: Vec<u8> = Vec::new();
    let mut carrying = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            if carrying && deliver(&carry, &mut f).is_break() {
                return Ok(());
            }
            return Ok(());
        }
        let len = chunk.len();
        let mut pos = 0;
        // a line carried over from earlier reads ends at this read's first newline
        if carrying {
            if let Some(i) = memchr::memchr(b'\n', chunk) {
                let room = LINE_LIMIT.saturating_sub(carry.len());
                carry.extend_from_slice(&chunk[..i.min(room)]);
                carrying = false;
                let flow = deliver(&carry, &mut f);
                carry.clear();
                if flow.is_break() {
                    return Ok(());
                }
                pos = i + 1;
            }
        }
        // the complete lines that lie whole in this read
        if let Some(last) = memchr::memrchr(b'\n', &chunk[pos..]) {
            let lines = &chunk[pos..pos + last + 1];
            pos += last + 1;
            let flow = match std::str::from_utf8(lines) {
                Ok(text) => each_line_of(text, &mut f),
                Err(_) => each_line_of_bytes(lines, &mut f),
            };
            if flow.is_break() {
                return Ok(());
            }
        }
        let rest = &chunk[pos..];
        if !rest.is_empty() {
            let room = LINE_LIMIT.saturating_sub(carry.len());
            carry.extend_from_slice(&rest[..rest.len().min(room)]);
            carrying = true;
        }
        reader.consume(len);
    }
}

/// Hands each `\n`-terminated line of `text` (valid UTF-8) to `f` as [`deliver`]
/// would, without checking it again.
fn each_line_of(text: &str, f: &mut impl FnMut(&str) -> ControlFlow<()>) -> ControlFlow<()> {
    let bytes = text.as_bytes();
    let mut pos = 0;
    // one iterator over the whole read: no per-line dispatch of the vectorized search
    for end in memchr::memchr_iter(b'\n', bytes) {
        let i = end - pos;
        let flow = if i <= LINE_LIMIT {
            // a newline is a character boundary, and so is the byte before a `\r`
            let mut e = end;
            while e > pos && bytes[e - 1] == b'\r' {
                e -= 1;
            }
            f(&text[pos..e])
        } else {
            // cut inside a character, maybe: as `deliver` cuts it
            deliver(&text.as_bytes()[pos..pos + LINE_LIMIT], f)
        };
        flow?;
        pos = end + 1;
    }
    ControlFlow::Continue(())
}

/// Hands each `\n`-terminated line of `bytes` to `f` through [`deliver`].
fn each_line_of_bytes(
    bytes: &[u8],
    f: &mut impl FnMut(&str) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let mut pos = 0;
    while let Some(i) = memchr::memchr(b'\n', &bytes[pos..]) {
        let line = &bytes[pos..pos + i];
        deliver(&line[..line.len().min(LINE_LIMIT)], f)?;
        pos += i + 1;
    }
    ControlFlow::Continue(())
}

/// Hands one line (without its `\n`) to `f`: trailing `\r`s removed, invalid UTF-8
/// replaced.
fn deliver(line: &[u8], f: &mut impl FnMut(&str) -> ControlFlow<()>) -> ControlFlow<()> {
    let mut end = line.len();
    while end > 0 && line[end - 1] == b'\r' {
        end -= 1;
    }
    let line = &line[..end];
    match std::str::from_utf8(line) {
        Ok(s) => f(s),
        Err(_) => f(&String::from_utf8_lossy(line)),
    }
}

/// Feeds every line of an optional stream to `f`; a missing one is no lines, an I/O
/// error is pushed to `diagnostics`.
pub fn feed_lines(src: Option<Source<'_>>, diagnostics: &mut Vec<String>, mut f: impl FnMut(&str)) {
    if let Some(s) = src {
        if let Err(e) = for_each_line(s, |l| {
            f(l);
            ControlFlow::Continue(())
        }) {
            diagnostics.push(format!("cannot read {}: {e}", s.path().display()));
        }
    }
}

/// Attempts [`Collector::settle`] hashes and orders at a time (1 MiB of scratch).
const SETTLE_CHUNK: usize = 1 << 16;

/// Most tests [`Collector::reserve`] makes room for at once (an announced count is the
/// runner's word, not a promise).
pub const RESERVE_LIMIT: usize = 1 << 21;

/// Accumulates test results for one run: one entry per id in first-seen order.
///
/// [`Collector::record`] merges attempts of the same test: a failing attempt followed by
/// a passing one becomes `FlakyPassed`; otherwise the later attempt decides.
/// [`Collector::record_distinct`] is for runners that print the same name for
/// different tests: a repeated id gets a ` #2`, ` #3`, ... suffix.
///
/// Under [`Listing::Failing`] the tests are kept in a [`HashedTests`] instead (the
/// same merge rule, ids kept only for failing tests; see [`Collector::with_listing`]).
#[derive(Debug, Default)]
pub struct Collector {
    tests: Vec<TestResult>,
    summary: Option<crate::check::model::Counts>,
    index: IdIndex,
    seen: HashMap<String, usize, IdHasher>,
    /// `tests[..indexed]` are in `index`, one entry per id; the attempts after them
    /// were appended by [`Collector::record_owned`] and are merged and indexed in one
    /// batch before anything reads the tests.
    indexed: usize,
    /// The store under [`Listing::Failing`] (then `tests` and `index` stay empty).
    hashed: Option<HashedTests>,
    /// `seen` under [`Listing::Failing`], by id hash.
    seen_hashed: HashMap<u64, usize, IdHasher>,
}

/// Which tests a parse lists by name in [`ParsedRun::tests`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Listing {
    /// Every test, by id: what the engine's detectors and `parse`'s default shape read.
    #[default]
    Full,
    /// Only the failing tests (and the synthetic member); every other test is kept as
    /// a 64-bit id hash and only counted, in [`ParsedRun::unlisted`]. Counts, the
    /// failing set, completeness and diagnostics are those of [`Listing::Full`]; the
    /// collected and passing sets are not known. For `parse --summary`.
    Failing,
    /// What [`Listing::Failing`] keeps, and every test's id and outcome in first-seen
    /// order in [`ParsedRun::listed`] (front-coded, a few bytes per test: see
    /// [`crate::check::model::ListedTests`]). Everything a full parse lists can be
    /// read back from the run ([`ParsedRun::for_each_test`]), in a fraction of its
    /// memory. For `parse`'s default shape.
    Compact,
}

/// The merge rule of [`Collector::record`]: a passing attempt after a failing one is
/// `FlakyPassed`; otherwise the later attempt decides.
fn merge_attempt(prev: Option<Outcome>, outcome: Outcome) -> Outcome {
    match prev {
        Some(p) if p.is_failing() && outcome == Outcome::Passed => Outcome::FlakyPassed,
        _ => outcome,
    }
}

/// Positions of tests in a `Vec<TestResult>` by id, keyed by the 64-bit hash of the
/// id ([`id_hash`]) so that no second copy of each id is kept as a map key. An id
/// whose hash another id already holds (a 64-bit collision) goes to a small map keyed
/// by the id itself, so lookups are exact.
#[derive(Debug, Default)]
pub struct IdIndex {
    by_hash: super::hashed::PositionTable,
    spill: HashMap<String, usize, IdHasher>,
}

impl IdIndex {
    /// The position of `id` in `tests` (the vector this index was built over).
    #[must_use]
    pub fn find(&self, tests: &[TestResult], id: &str) -> Option<usize> {
        let i = self.by_hash.get(id_hash(id))?;
        if tests.get(i).is_some_and(|t| t.id == id) {
            Some(i)
        } else {
            self.spill.get(id).copied()
        }
    }

    /// Records that `id` (not yet indexed) is at position `i`.
    pub fn insert(&mut self, id: &str, i: usize) {
        if self.by_hash.get_or_insert(id_hash(id), i).is_some() {
            self.spill.insert(id.to_string(), i);
        }
    }

    /// The position of `id` when indexed; otherwise indexes it at `new` (one hash,
    /// one probe) and returns `None`.
    pub fn find_or_insert(&mut self, tests: &[TestResult], id: &str, new: usize) -> Option<usize> {
        self.find_or_insert_hashed(tests, id_hash(id), id, new)
    }

    /// [`IdIndex::find_or_insert`] for an id whose [`id_hash`] is `hash`.
    pub fn find_or_insert_hashed(
        &mut self,
        tests: &[TestResult],
        hash: u64,
        id: &str,
        new: usize,
    ) -> Option<usize> {
        let i = self.by_hash.get_or_insert(hash, new)?;
        if tests.get(i).is_some_and(|t| t.id == id) {
            return Some(i);
        }
        if let Some(&j) = self.spill.get(id) {
            return Some(j);
        }
        self.spill.insert(id.to_string(), new);
        None
    }

    /// Makes room for `n` more ids (no rehash while they are added).
    pub fn reserve(&mut self, n: usize) {
        self.by_hash.reserve(n);
    }

    /// Rebuilds the index over `tests` (after an entry was removed).
    pub fn rebuild(&mut self, tests: &[TestResult]) {
        self.by_hash.clear();
        self.spill.clear();
        for (k, t) in tests.iter().enumerate() {
            self.insert(&t.id, k);
        }
    }
}

/// The hasher of loopexec's per-test maps: foldhash with a fixed seed (fast on short
/// keys, and the same on every run; the inputs are a check's own test names, not
/// adversarial keys for which SipHash would be worth its cost).
pub type IdHasher = foldhash::fast::FixedState;

/// The 64-bit hash of a test id used by [`Collector`]'s index.
#[must_use]
pub fn id_hash(id: &str) -> u64 {
    use std::hash::BuildHasher;
    IdHasher::with_seed(0x6c6f_6f70_6578_6563).hash_one(id.as_bytes())
}

impl Collector {
    /// An empty collector.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty collector that keeps its tests as `listing` asks.
    #[must_use]
    pub fn with_listing(listing: Listing) -> Self {
        Self {
            hashed: super::hashed::for_listing(listing),
            ..Self::default()
        }
    }

    /// Makes room for `n` more tests, as announced by the runner (`running N tests`),
    /// capped at [`RESERVE_LIMIT`]: growing the index by rehashing holds the old and
    /// the new table at once, the peak memory of a large parse.
    pub fn reserve(&mut self, n: usize) {
        let n = n.min(RESERVE_LIMIT);
        if let Some(h) = self.hashed.as_mut() {
            h.reserve(n);
            return;
        }
        self.tests.reserve(n);
        self.index.reserve(n);
    }

    /// The position of `id` in `tests` (after [`Collector::settle`]).
    fn find(&self, id: &str) -> Option<usize> {
        self.index.find(&self.tests, id)
    }

    /// Merges and indexes the attempts [`Collector::record_owned`] appended, in one
    /// batch: ids hashed in order, inserted into the index region by region (see
    /// [`super::hashed::PositionTable::insertion_order`]); a later attempt of an id
    /// is merged into its first entry by [`Collector::record`]'s rule and dropped.
    fn settle(&mut self) {
        let start = self.indexed;
        if start == self.tests.len() {
            return;
        }
        self.index.reserve(self.tests.len() - start);
        let mut dropped = Vec::new();
        // in chunks (bounded scratch memory): ids hashed front to back, then inserted
        // in the table's order
        let mut from = start;
        while from < self.tests.len() {
            let to = self.tests.len().min(from + SETTLE_CHUNK);
            let hashes: Vec<u64> = self.tests[from..to]
                .iter()
                .map(|t| id_hash(&t.id))
                .collect();
            for r in super::hashed::PositionTable::insertion_order(&hashes) {
                let k = from + r as usize;
                let hash = hashes[r as usize];
                let Some(j) =
                    self.index
                        .find_or_insert_hashed(&self.tests, hash, &self.tests[k].id, k)
                else {
                    continue;
                };
                // `j < k`: the first entry of an id is inserted before its later ones
                let (outcome, message) = (self.tests[k].outcome, self.tests[k].message.take());
                let t = &mut self.tests[j];
                let new = merge_attempt(Some(t.outcome), outcome);
                t.outcome = new;
                if new.is_failing() {
                    if message.is_some() {
                        t.message = message;
                    }
                } else {
                    t.message = None;
                }
                dropped.push(k);
            }
            from = to;
        }
        self.indexed = self.tests.len();
        if !dropped.is_empty() {
            dropped.sort_unstable();
            let mut next = dropped.iter().copied().peekable();
            let mut k = 0;
            self.tests.retain(|_| {
                let keep = next.peek() != Some(&k);
                if !keep {
                    next.next();
                }
                k += 1;
                keep
            });
            // positions moved: index everything again (no repeats are left)
            self.index.rebuild(&[]);
            self.indexed = 0;
            self.settle();
        }
    }

    /// [`Collector::record`] for an owned id: a new test keeps `id` itself (no copy).
    /// The attempt is appended and merged later, in a batch, before anything reads
    /// the tests.
    pub fn record_owned(&mut self, id: String, outcome: Outcome, message: Option<String>) {
        if self.hashed.is_some() {
            self.record(&id, outcome, message);
            return;
        }
        let message = message
            .filter(|_| outcome.is_failing())
            .map(|m| normalize_message(&m))
            .filter(|m| !m.is_empty());
        self.tests.push(TestResult {
            id,
            outcome,
            message,
        });
    }

    /// [`Collector::record_owned`] for a borrowed id without a message: the id is
    /// copied only when the store keeps its text (every test in the full store; under
    /// [`Listing::Failing`] only a failing one).
    pub fn record_batched(&mut self, id: &str, outcome: Outcome) {
        if self.hashed.is_some() {
            self.record(id, outcome, None);
        } else {
            self.record_owned(id.to_string(), outcome, None);
        }
    }

    /// [`Collector::record_batched`] of an id whose [`Collector::id_hash`] the
    /// caller already has (the store then does not hash it again).
    pub fn record_batched_hashed(&mut self, id: &str, hash: u64, outcome: Outcome) {
        match self.hashed.as_mut() {
            Some(h) => h.record_hashed(
                id,
                hash,
                |prev| merge_attempt(prev, outcome),
                None,
                MessageRule::KeepWhenNone,
            ),
            None => self.record_owned(id.to_string(), outcome, None),
        }
    }

    /// The 64-bit hash the collector keys `id` by ([`id_hash`]).
    #[must_use]
    pub fn id_hash(&self, id: &str) -> u64 {
        super::hashed::store_hash(self.hashed.as_ref(), id)
    }

    /// Records one attempt of test `id` (see the type doc for the merge rule).
    pub fn record(&mut self, id: &str, outcome: Outcome, message: Option<String>) {
        if let Some(h) = self.hashed.as_mut() {
            let message = message
                .filter(|_| outcome.is_failing())
                .map(|m| normalize_message(&m))
                .filter(|m| !m.is_empty());
            h.record(
                id,
                |prev| merge_attempt(prev, outcome),
                message,
                MessageRule::KeepWhenNone,
            );
            return;
        }
        self.settle();
        let message = message
            .map(|m| normalize_message(&m))
            .filter(|m| !m.is_empty());
        if let Some(i) = self.find(id) {
            let t = &mut self.tests[i];
            let new = merge_attempt(Some(t.outcome), outcome);
            t.outcome = new;
            if new.is_failing() {
                if message.is_some() {
                    t.message = message;
                }
            } else {
                t.message = None;
            }
            return;
        }
        self.index.insert(id, self.tests.len());
        self.tests.push(TestResult {
            id: id.to_string(),
            outcome,
            message: if outcome.is_failing() { message } else { None },
        });
        self.indexed = self.tests.len();
    }

    /// Records a test whose name may repeat for distinct tests; returns the id used.
    pub fn record_distinct(
        &mut self,
        id: &str,
        outcome: Outcome,
        message: Option<String>,
    ) -> String {
        let n = if self.hashed.is_some() {
            self.seen_hashed.entry(id_hash(id)).or_insert(0)
        } else {
            self.seen.entry(id.to_string()).or_insert(0)
        };
        *n += 1;
        let real = if *n == 1 {
            id.to_string()
        } else {
            format!("{id} #{n}")
        };
        self.record(&real, outcome, message);
        real
    }

    /// Forgets test `id` (a group line that turned out not to be a test).
    pub fn remove(&mut self, id: &str) {
        if let Some(h) = self.hashed.as_mut() {
            h.remove(id);
            return;
        }
        self.settle();
        let Some(i) = self.find(id) else { return };
        self.tests.remove(i);
        // positions after `i` moved, and a spilled id may now own its hash
        self.index.rebuild(&self.tests);
        self.indexed = self.tests.len();
    }

    /// Removes test `id` and returns what was recorded for it.
    pub fn take(&mut self, id: &str) -> Option<TestResult> {
        if let Some(h) = self.hashed.as_mut() {
            return h.remove(id);
        }
        self.settle();
        let i = self.find(id)?;
        let t = self.tests[i].clone();
        self.remove(id);
        Some(t)
    }

    /// Sets the failure message of `id` when it has none yet.
    pub fn set_message(&mut self, id: &str, message: &str) {
        if let Some(h) = self.hashed.as_mut() {
            h.set_message(id, || normalize_message(message));
            return;
        }
        self.settle();
        if let Some(i) = self.find(id) {
            let t = &mut self.tests[i];
            if t.outcome.is_failing() && t.message.is_none() {
                let m = normalize_message(message);
                if !m.is_empty() {
                    t.message = Some(m);
                }
            }
        }
    }

    /// Records the runner's own tallies (its summary line or progress marks); see
    /// [`ParsedRun::summary`].
    pub fn set_summary(&mut self, counts: crate::check::model::Counts) {
        self.summary = Some(counts);
    }

    /// The outcome currently recorded for `id`.
    #[must_use]
    pub fn outcome(&mut self, id: &str) -> Option<Outcome> {
        if let Some(h) = self.hashed.as_mut() {
            return h.outcome(id);
        }
        self.settle();
        self.find(id).map(|i| self.tests[i].outcome)
    }

    /// True when test `id` is recorded with a failing outcome (under
    /// [`Listing::Failing`] answered without looking at the passing tests).
    #[must_use]
    pub fn is_failing(&mut self, id: &str) -> bool {
        if let Some(h) = &self.hashed {
            return h.is_failing(id);
        }
        self.settle();
        self.find(id)
            .is_some_and(|i| self.tests[i].outcome.is_failing())
    }

    /// True when no test was recorded.
    #[must_use]
    pub fn is_empty(&mut self) -> bool {
        if let Some(h) = self.hashed.as_mut() {
            return h.is_empty();
        }
        self.settle();
        self.tests.is_empty()
    }

    /// Number of tests recorded.
    #[must_use]
    pub fn len(&mut self) -> usize {
        if let Some(h) = self.hashed.as_mut() {
            return h.len();
        }
        self.settle();
        self.tests.len()
    }

    /// True when some recorded test is failing.
    #[must_use]
    pub fn any_failing(&mut self) -> bool {
        if let Some(h) = &self.hashed {
            return h.any_failing();
        }
        self.settle();
        self.tests.iter().any(|t| t.outcome.is_failing())
    }

    /// Number of recorded tests with the given outcome.
    #[must_use]
    pub fn count(&mut self, o: Outcome) -> usize {
        if let Some(h) = self.hashed.as_mut() {
            return h.count(o);
        }
        self.settle();
        self.tests.iter().filter(|t| t.outcome == o).count()
    }

    /// [`Collector::finish`] as most text parsers end a run: red when `exit_code` is
    /// known and non-zero; `unattributed`, a failure no named test carries, flags the
    /// run and is the synthetic member's message.
    #[must_use]
    pub fn finish_text(
        self,
        format: Format,
        runner: &str,
        complete: bool,
        unattributed: Option<String>,
        exit_code: Option<i32>,
        diagnostics: Vec<String>,
    ) -> ParsedRun {
        self.finish(RunEnd {
            format,
            runner,
            complete,
            unattributed: unattributed.is_some(),
            red: is_red(exit_code),
            message: unattributed,
            diagnostics,
        })
    }

    /// Builds the run. When `unattributed` is set, or the run is `red` and no named
    /// test fails, the synthetic member `<runner>::<unattributed>` is appended with
    /// `message` and `unattributed_failure` is set.
    #[must_use]
    pub fn finish(mut self, end: RunEnd<'_>) -> ParsedRun {
        self.settle();
        let summary = self.summary;
        let (mut tests, unlisted, listed) = match self.hashed {
            Some(h) => h.finish(),
            None => (self.tests, crate::check::model::Counts::default(), None),
        };
        let mut unattr = end.unattributed;
        if end.red && !tests.iter().any(|t| t.outcome.is_failing()) {
            unattr = true;
        }
        if unattr {
            tests.push(unattributed(end.runner, end.message));
        }
        ParsedRun {
            format: end.format,
            complete: end.complete,
            unattributed_failure: unattr,
            tests,
            diagnostics: end.diagnostics,
            summary,
            not_run: None,
            unlisted,
            listed,
        }
    }
}

/// How a run ended, as a parser judged it; input to [`Collector::finish`].
#[derive(Debug)]
pub struct RunEnd<'a> {
    /// Format that produced the results.
    pub format: Format,
    /// Runner name used in the synthetic id (`cargo`, `pytest`, `go`, ...).
    pub runner: &'a str,
    /// The runner visibly reached its own end with consistent counts.
    pub complete: bool,
    /// Some failure cannot be pinned on a named test.
    pub unattributed: bool,
    /// The run counts as failed (usually: non-zero exit code).
    pub red: bool,
    /// Message for the synthetic member.
    pub message: Option<String>,
    /// Problems met while reading.
    pub diagnostics: Vec<String>,
}

/// The group a tally word counts in (see [`tally`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Passed,
    Failed,
    Skipped,
    Flaky,
    /// Not a test group (totals, durations, assertions, warnings, subtests).
    Other,
}

/// Reads a runner's summary text for `N word` clauses (`4 failed, 8 passed`, `4
/// failed | 8 passed (14)`) or, with `number_after`, `Word: N` clauses (PHPUnit's
/// `Errors: 1, Failures: 2`), and adds each number to the group `group` gives its
/// word (lower-cased). `None` when no clause was found.
#[must_use]
pub fn tally(
    text: &str,
    number_after: bool,
    group: impl Fn(&str) -> Group,
) -> Option<crate::check::model::Counts> {
    static NW: OnceLock<Regex> = OnceLock::new();
    static WN: OnceLock<Regex> = OnceLock::new();
    let r = if number_after {
        re(&WN, r"([A-Za-z][A-Za-z ]*?):\s*(\d+)")
    } else {
        re(&NW, r"(\d+)\s+([A-Za-z]+)")
    };
    let mut c = crate::check::model::Counts::default();
    let mut any = false;
    for m in r.captures_iter(text) {
        let (n, word) = if number_after {
            (&m[2], &m[1])
        } else {
            (&m[1], &m[2])
        };
        let Ok(n) = n.parse::<u64>() else { continue };
        any = true;
        let slot = match group(&word.trim().to_ascii_lowercase()) {
            Group::Passed => &mut c.passed,
            Group::Failed => &mut c.failed,
            Group::Skipped => &mut c.skipped,
            Group::Flaky => &mut c.flaky,
            Group::Other => continue,
        };
        *slot = slot.saturating_add(n);
    }
    any.then_some(c)
}

/// Splits `line`, trailing white space removed, into its indentation (bytes of leading
/// white space) and its body (what follows).
#[must_use]
pub fn indent_and_body(line: &str) -> (usize, &str) {
    let line = line.trim_end();
    let body = line.trim_start();
    (line.len() - body.len(), body)
}

/// True when `exit` is known and non-zero.
#[must_use]
pub fn is_red(exit: Option<i32>) -> bool {
    matches!(exit, Some(c) if c != 0)
}

/// Trims a trailing duration such as ` (0.01s)`, ` (12 ms)`, ` 5ms`, ` [0.3s]`.
#[must_use]
pub fn trim_duration(s: &str) -> &str {
    static D: OnceLock<Regex> = OnceLock::new();
    let r = re(
        &D,
        r"\s*[\(\[]?\s*\d+(\.\d+)?\s?(ms|s|sec|seconds|µs|us|ns)\s*[\)\]]?\s*$",
    );
    match r.find(s) {
        Some(m) => &s[..m.start()],
        None => s,
    }
}

/// Runs the text parser `parse` on `stdout` and `stderr` (each, when given, written
/// to its own file in a fresh temp folder) with exit code `exit`. The folder is removed
/// when the parser returns. Bytes rather than `&str` so tests can feed invalid UTF-8.
#[cfg(test)]
pub(crate) fn run_text(
    parse: fn(&crate::check::parse::TextInput<'_>) -> ParsedRun,
    stdout: Option<&[u8]>,
    stderr: Option<&[u8]>,
    exit: Option<i32>,
) -> ParsedRun {
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, data: Option<&[u8]>| {
        data.map(|d| {
            let p = dir.path().join(name);
            std::fs::write(&p, d).expect("write");
            p
        })
    };
    let out = write("stdout", stdout);
    let err = write("stderr", stderr);
    parse(&crate::check::parse::TextInput {
        stdout: out.as_deref().map(Source::File),
        stderr: err.as_deref().map(Source::File),
        exit_code: exit,
        listing: Listing::Full,
    })
}

/// `(id, outcome)` of every test in `run`, in order (for assertions in tests).
#[cfg(test)]
pub(crate) fn outcomes(run: &ParsedRun) -> Vec<(&str, Outcome)> {
    run.tests
        .iter()
        .map(|t| (t.id.as_str(), t.outcome))
        .collect()
}

/// The outcome of test `id` in `run`, if it is there (for assertions in tests).
#[cfg(test)]
pub(crate) fn outcome_of(run: &ParsedRun, id: &str) -> Option<Outcome> {
    run.tests.iter().find(|t| t.id == id).map(|t| t.outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every length around the word and block edges, the needle at every place (and
    /// nowhere), a neighbour byte that differs by one bit, and bytes above 0x80 (the
    /// zero-byte test's borrow must not make a false hit).
    #[test]
    fn contains_byte_equals_a_plain_search() {
        for len in (0..40).chain([63, 64, 65, 255, 256, 257, 300]) {
            for fill in [b'a', 0x1a, 0x1c, 0x9b, 0xff] {
                let mut hay = vec![fill; len];
                assert!(!contains_byte(&hay, 0x1b), "len {len} fill {fill}");
                for at in 0..len {
                    hay[at] = 0x1b;
                    assert!(contains_byte(&hay, 0x1b), "len {len} at {at}");
                    hay[at] = fill;
                }
            }
        }
    }

    #[test]
    fn strip_ansi_handles_csi_charset_and_osc() {
        assert_eq!(strip_ansi("\u{1b}[31mFAILED\u{1b}(B\u{1b}[m"), "FAILED");
        assert_eq!(strip_ansi("a\u{1b}]8;;http://x\u{7}b"), "ab");
        assert!(matches!(strip_ansi("plain"), Cow::Borrowed(_)));
        assert_eq!(
            strip_ansi("\u{1b}[36mtests \u{1b}[36m::\u{1b}[34;1mx"),
            "tests ::x"
        );
    }

    #[test]
    fn normalize_removes_volatile_parts() {
        let m = normalize_message(
            "\nthread 'a::b' (5789) panicked at src/lib.rs:2:3:\nptr 0x7ffd1234abcd\nnote: run with `RUST_BACKTRACE=1`\ntook (0.01s)",
        );
        assert_eq!(
            m,
            "thread 'a::b' panicked at src/lib.rs:2:3:\nptr 0x?\ntook"
        );
    }

    /// Lines the guards let through to a pattern, and lines they skip, read as the
    /// patterns alone would read them.
    #[test]
    fn normalize_guards_keep_the_patterns_results() {
        for (input, want) in [
            ("done in 12 ms", "done"),
            ("took 5µs here", "took here"),
            ("wait 3 seconds", "wait"),
            ("\u{661}\u{662}ms elapsed", " elapsed"),
            ("  left: 7", "  left: 7"),
            ("value 10 is not 11", "value 10 is not 11"),
            ("7 items, 2 skipped", "7 items, 2 skipped"),
            ("at 0x7ffd1234 and 0x12", "at 0x? and 0x12"),
            ("thread 'main' (77) panicked", "thread 'main' panicked"),
        ] {
            assert_eq!(normalize_message(input), want, "{input:?}");
        }
    }

    /// The duration guard holds for every line the duration pattern matches, and
    /// spares a stack frame's digits.
    #[test]
    fn duration_guard_covers_every_duration_match() {
        let pattern = Regex::new(r"\s*\(?\b(in )?\d+(\.\d+)?\s?(ms|s|sec|seconds|µs|us|ns)\b\)?")
            .expect("the duration pattern");
        let lines = [
            "done in 12 ms",
            "in 0.00s",
            "1.2.3s",
            "x 1\u{2003}ms",
            "42ns and 3 us",
            "9sec",
            "wait 3 seconds",
            "took (0.01s)",
            "\u{661}\u{662}ms elapsed",
            "1 2s",
            "v1.5 s",
            "at pkg.Class0.test_103(Class.java:103)",
            "src/mod_0.rs:17:9:",
            "1.s",
            "7 items",
        ];
        for line in lines {
            if pattern.is_match(line) {
                assert!(duration_like(line), "{line:?} matches but was not searched");
            }
        }
        for spared in [
            "at pkg.Class0.test_103(Class.java:103)",
            "src/mod_0.rs:17:9:",
            "7 items",
        ] {
            assert!(!duration_like(spared), "{spared:?}");
        }
    }

    #[test]
    fn normalize_caps_length_on_char_boundary() {
        let long = "ü".repeat(3000);
        let m = normalize_message(&long);
        assert!(m.len() <= MESSAGE_LIMIT);
        assert!(m.chars().all(|c| c == 'ü'));
    }

    #[test]
    fn collector_marks_fail_then_pass_flaky_and_pass_then_error_failing() {
        let mut c = Collector::new();
        c.record("a", Outcome::Failed, Some("x".into()));
        c.record("a", Outcome::Passed, None);
        c.record("b", Outcome::Passed, None);
        c.record("b", Outcome::Errored, Some("teardown".into()));
        assert_eq!(c.outcome("a"), Some(Outcome::FlakyPassed));
        assert_eq!(c.outcome("b"), Some(Outcome::Errored));
        let id = c.record_distinct("p", Outcome::Passed, None);
        let id2 = c.record_distinct("p", Outcome::Failed, None);
        assert_eq!((id.as_str(), id2.as_str()), ("p", "p #2"));
    }

    /// One step of a collector script: an owned attempt, a borrowed attempt, or a
    /// question asked between them.
    #[derive(Clone, Copy)]
    enum Step {
        Owned(&'static str, Outcome, Option<&'static str>),
        Borrowed(&'static str, Outcome, Option<&'static str>),
        Message(&'static str, &'static str),
        Remove(&'static str),
        Ask(&'static str),
    }

    /// Attempts appended by `record_owned` and merged in a batch end as eager
    /// `record` calls end: duplicates counted once, a pass after a failure flaky, the
    /// later attempt deciding, messages kept by the same rule, first-seen order.
    #[test]
    fn batched_owned_attempts_merge_as_eager_ones() {
        use Outcome::{Errored as E, Failed as F, Passed as P, Skipped as S};
        use Step::{Ask, Borrowed, Message, Owned, Remove};
        let scripts: &[&[Step]] = &[
            &[
                Owned("a", P, None),
                Owned("b", S, None),
                Owned("a", P, None),
            ],
            &[
                Owned("a", F, Some("boom")),
                Owned("b", P, None),
                Owned("a", P, None),
            ],
            &[
                Owned("a", P, None),
                Owned("a", E, Some("teardown")),
                Owned("a", F, None),
            ],
            &[
                Owned("a", F, Some("x")),
                Ask("a"),
                Owned("a", F, None),
                Message("a", "late"),
            ],
            &[
                Owned("a", F, None),
                Message("a", "from section"),
                Owned("b", P, None),
                Owned("a", P, None),
            ],
            &[
                Owned("a", P, None),
                Borrowed("c", F, Some("c")),
                Owned("c", P, None),
                Owned("a", S, None),
            ],
            &[
                Owned("g", P, None),
                Owned("t", F, None),
                Remove("g"),
                Owned("t", P, None),
                Owned("g", S, None),
            ],
            &[
                Owned("x", P, None),
                Owned("y", P, None),
                Owned("x", F, Some("m")),
                Owned("y", P, None),
                Owned("x", P, None),
            ],
        ];
        for (n, script) in scripts.iter().enumerate() {
            let mut batched = Collector::new();
            let mut eager = Collector::new();
            for step in *script {
                match *step {
                    Owned(id, o, m) => {
                        batched.record_owned(id.to_string(), o, m.map(str::to_string));
                        eager.record(id, o, m.map(str::to_string));
                    }
                    Borrowed(id, o, m) => {
                        batched.record(id, o, m.map(str::to_string));
                        eager.record(id, o, m.map(str::to_string));
                    }
                    Message(id, m) => {
                        batched.set_message(id, m);
                        eager.set_message(id, m);
                    }
                    Remove(id) => {
                        batched.remove(id);
                        eager.remove(id);
                    }
                    Ask(id) => assert_eq!(batched.outcome(id), eager.outcome(id), "script {n}"),
                }
            }
            assert_eq!(batched.len(), eager.len(), "script {n}");
            let end =
                |c: Collector| c.finish_text(Format::Lines, "lines", true, None, Some(0), vec![]);
            assert_eq!(end(batched).tests, end(eager).tests, "script {n}");
        }
    }

    #[test]
    fn finish_adds_synthetic_member_when_red_without_failures() {
        let mut c = Collector::new();
        c.record("a", Outcome::Passed, None);
        let run = c.finish(RunEnd {
            format: Format::ExitCode,
            runner: "check",
            complete: true,
            unattributed: false,
            red: true,
            message: Some("boom".into()),
            diagnostics: vec![],
        });
        assert!(run.unattributed_failure);
        assert_eq!(
            run.failing().into_iter().collect::<Vec<_>>(),
            vec!["check::<unattributed>"]
        );
    }

    #[test]
    fn for_each_line_handles_endings_long_lines_and_bad_utf8() {
        let f = tempfile::NamedTempFile::new().expect("temp file");
        let p = f.path();
        let mut data = b"a\r\n\xffb\n".to_vec();
        data.extend(std::iter::repeat(b'x').take(LINE_LIMIT + 10));
        data.extend_from_slice(b"\nlast");
        std::fs::write(p, &data).expect("write");
        let mut got = Vec::new();
        for_each_line(p, |l| {
            got.push(l.to_string());
            ControlFlow::Continue(())
        })
        .expect("read");
        assert_eq!(got.len(), 4);
        assert_eq!(got[0], "a");
        assert_eq!(got[1], "\u{fffd}b");
        assert_eq!(got[2].len(), LINE_LIMIT);
        assert_eq!(got[3], "last");
    }

    /// Lines read from a file larger than the read buffer, with lines straddling
    /// reads, lines past the limit cut inside a character, `\r\n` endings and
    /// invalid bytes, equal those of a plain split of the whole file.
    #[test]
    fn for_each_line_equals_a_plain_split() {
        let mut data = Vec::new();
        let mut k = 0u32;
        while data.len() < 700 * 1024 {
            k += 1;
            match k % 7 {
                0 => data.extend(
                    std::iter::repeat("é".as_bytes())
                        .take(LINE_LIMIT / 2 + 3)
                        .flatten(),
                ),
                1 => data.extend_from_slice(b"bad \xff\xfe byte"),
                2 => data.extend_from_slice(b"crlf line\r"),
                3 => data.extend(std::iter::repeat(b'y').take(LINE_LIMIT + 1)),
                _ => data.extend_from_slice(format!("test a::b{k} ... ok").as_bytes()),
            }
            data.push(b'\n');
        }
        data.extend_from_slice(b"no newline at the end");
        let f = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(f.path(), &data).expect("write");
        let mut got = Vec::new();
        for_each_line(f.path(), |l| {
            got.push(l.to_string());
            ControlFlow::Continue(())
        })
        .expect("read");
        let want: Vec<String> = data
            .split(|&b| b == b'\n')
            .map(|l| {
                let l = &l[..l.len().min(LINE_LIMIT)];
                let mut end = l.len();
                while end > 0 && l[end - 1] == b'\r' {
                    end -= 1;
                }
                String::from_utf8_lossy(&l[..end]).into_owned()
            })
            .collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want);
        // the same bytes kept in memory read the same lines
        let mut mem = Vec::new();
        for_each_line(
            Source::Memory {
                path: f.path(),
                bytes: &data,
            },
            |l| {
                mem.push(l.to_string());
                ControlFlow::Continue(())
            },
        )
        .expect("read");
        assert!(mem == want);
    }

    #[test]
    fn indent_and_body_ignores_trailing_space() {
        assert_eq!(indent_and_body("    ✔ a b  \r"), (4, "✔ a b"));
        assert_eq!(indent_and_body("x"), (0, "x"));
        assert_eq!(indent_and_body("   "), (0, ""));
    }

    #[test]
    fn trim_duration_variants() {
        assert_eq!(trim_duration("TestX (0.01s)"), "TestX");
        assert_eq!(trim_duration("works 5ms"), "works");
        assert_eq!(trim_duration("name [1]"), "name [1]");
    }
}
