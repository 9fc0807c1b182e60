//! Rust libtest human output as printed by `cargo test` (pretty, terse/quiet,
//! `--list`, `--nocapture`, colour), including doctests.
//!
//! Layout (libtest's console formatter): each test binary prints `running N tests`,
//! one `test NAME ... RESULT` line per test (`ok`, `FAILED`, `ignored[, reason]`), a
//! `failures:` section with `---- NAME stdout ----` blocks and a name list, and
//! `test result: ok|FAILED. P passed; F failed; I ignored; ...`. Terse mode prints
//! only `NAME --- FAILED` plus progress marks. cargo writes `Running <target> (<path>)`
//! and `Doc-tests <crate>` to stderr, in the order the binaries' blocks appear on
//! stdout; the binary name (hash removed) or crate name prefixes the id
//! (`rustdemo::tests::fails_assert`, `integration::it_passes`), so equal names in two
//! binaries stay distinct. Without stderr the bare name is the id.
//!
//! Rules: libtest's mode suffixes (` - should panic`, ` - compile fail`,
//! ` - compile`) are not part of the name; lines inside a failures section are
//! captured output, never results; under `--nocapture` a result word may land on a
//! later line (`test x ... <printed text>` then `FAILED`). A block without its
//! `test result:` line (abort, `process::exit`) makes the run incomplete and
//! unattributed; so does a signal reported by cargo or a compile error.
//! cargo's fail-fast stop (`error: test failed, to rerun pass ...` with no final
//! `error: N targets failed`) cannot be told from a run that selected a single
//! target (`cargo test --lib`): the output is identical. The parser adds a diagnostic
//! saying later targets may not have run; the check command decides
//! ([`super::command::judge`]).
//!
//! Messages are the assertion's own text: Rust >= 1.73 prints `thread 'NAME'
//! panicked at FILE:LINE:COL:` and the message on the next lines, so the location
//! line is dropped (it changes with every edit above it, and `same_failure_repeated`
//! compares messages). Under `--nocapture` the panic goes to stderr instead of the
//! `failures:` section; it is read from there. The tally is the sum of the `test
//! result:` lines (ignored tests are skipped).

use super::util::{feed_lines, is_red, strip_ansi, Collector, RunEnd};
use super::TextInput;
use crate::check::model::{Counts, Format, Outcome, ParsedRun};
use regex::Regex;
use std::collections::HashMap;
use std::sync::OnceLock;

struct Res {
    running: Regex,
    terse: Regex,
    result: Regex,
    target: Regex,
    doc: Regex,
    cargo_error: Regex,
    panicked: Regex,
}

fn res() -> Option<&'static Res> {
    static R: OnceLock<Option<Res>> = OnceLock::new();
    R.get_or_init(|| {
        Some(Res {
            running: Regex::new(r"^running (\d+) tests?$").ok()?,
            terse: Regex::new(r"^(\S.*) --- (FAILED|ok|ignored)$").ok()?,
            result: Regex::new(
                r"^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured",
            )
            .ok()?,
            target: Regex::new(r"^\s*Running (?:unittests )?\S+ \((.+)\)\s*$").ok()?,
            doc: Regex::new(r"^\s*Doc-tests (\S+)\s*$").ok()?,
            cargo_error: Regex::new(r"^error(\[E\d+\])?: (.*)$").ok()?,
            panicked: Regex::new(r"^thread '([^']+)'(?: \(\d+\))? panicked at ").ok()?,
        })
    })
    .as_ref()
}

/// The assertion's own text of a panic report: the `thread '…' panicked at
/// FILE:LINE:COL:` line of Rust >= 1.73 (whose message follows on the next lines)
/// is dropped; an older one-line report (`panicked at 'msg', FILE:LINE:COL`) keeps
/// its message. Other lines are kept as they are.
fn assertion_text(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    for line in msg.lines() {
        let t = line.trim_start();
        let l = if t.starts_with("thread '") && t.contains(" panicked at ") {
            let rest = t.split_once(" panicked at ").map_or("", |(_, r)| r);
            if rest.ends_with(':') {
                continue;
            }
            rest
        } else {
            line
        };
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// Splits `test NAME ... WORD` into (NAME, WORD): the name is everything up to the
/// first ` ...` after at least one character, the word what follows (one optional
/// space skipped). The same split as the pattern `^test (.+?) \.\.\. ?(.*)$`.
fn split_test_line(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("test ")?;
    let first = rest.chars().next()?;
    let from = first.len_utf8();
    // the first ` ...`: test names rarely hold a `.`, so look at each `.` in turn
    let hay = &rest.as_bytes()[from..];
    let mut i = 0;
    let at = loop {
        let p = i + memchr::memchr(b'.', &hay[i..])?;
        if p > 0 && hay[p - 1] == b' ' && hay[p..].starts_with(b"...") {
            break from + p - 1;
        }
        i = p + 1;
    };
    let word = &rest[at + 4..];
    Some((&rest[..at], word.strip_prefix(' ').unwrap_or(word)))
}

/// Removes libtest's mode suffixes from a test name (and the white space around it).
fn clean_name(name: &str) -> &str {
    // the common case: nothing to trim (an ASCII graphic character is no white
    // space) and no suffix (each ends with one of these letters)
    if let (Some(a), Some(z)) = (name.as_bytes().first(), name.as_bytes().last()) {
        if a.is_ascii_graphic() && z.is_ascii_graphic() && !matches!(z, b'c' | b'l' | b'e' | b'n') {
            return name;
        }
    }
    let mut n = name.trim();
    loop {
        let before = n;
        for suf in [
            " - should panic",
            " - compile fail",
            " - compile",
            " - no_run",
        ] {
            if let Some(s) = n.strip_suffix(suf) {
                n = s;
            }
        }
        if n == before {
            return n;
        }
    }
}

/// The test name of a captured-output header `---- NAME stdout ----` (the pattern
/// `^---- (.+) stdout ----$`).
fn section_name(line: &str) -> Option<&str> {
    let name = line.strip_prefix("---- ")?.strip_suffix(" stdout ----")?;
    (!name.is_empty()).then_some(name)
}

/// The outcome of a libtest result word, if `word` is one.
fn result_word(word: &str) -> Option<Outcome> {
    // the common words as printed, before the (Unicode) trim
    match word {
        "ok" => return Some(Outcome::Passed),
        "FAILED" => return Some(Outcome::Failed),
        "ignored" => return Some(Outcome::Skipped),
        _ => {}
    }
    let w = word.trim();
    if w == "ok" {
        Some(Outcome::Passed)
    } else if w == "FAILED" {
        Some(Outcome::Failed)
    } else if w == "ignored" || w.starts_with("ignored, ") {
        Some(Outcome::Skipped)
    } else if w.starts_with("bench:") {
        Some(Outcome::Passed)
    } else {
        None
    }
}

/// Binary name from a cargo `Running` path: `target/debug/deps/integration-2f25…` ->
/// `integration`.
fn binary_label(path: &str) -> String {
    let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let file = file.strip_suffix(".exe").unwrap_or(file);
    match file.rsplit_once('-') {
        Some((stem, hash)) if !hash.is_empty() && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            stem.to_string()
        }
        _ => file.to_string(),
    }
}

#[derive(Default)]
struct Block {
    label: Option<String>,
    announced: usize,
    named: usize,
    ended: bool,
    /// Inside the captured-output area: `Some(true)` for `failures:`,
    /// `Some(false)` for `successes:` (`--show-output`).
    captured: Option<bool>,
    terse: bool,
}

struct State<'a> {
    r: &'a Res,
    targets: Vec<String>,
    blocks: usize,
    block: Option<Block>,
    unended: usize,
    inconsistent: bool,
    pending: Option<String>,
    section: Option<(String, String)>,
    c: Collector,
    list_seen: bool,
    /// Block in which each name of an earlier block was first seen, by the name's
    /// 64-bit hash ([`super::util::Collector::id_hash`]); kept only while no binary label is
    /// known (stderr not captured), the only case [`State::id`] reads it. Filled from
    /// `seen_now` when a later block records its first test, so output of one binary
    /// never builds it.
    first_block: HashMap<u64, usize, super::util::IdHasher>,
    /// Hashes of the names the unlabelled block `seen_block` recorded, not yet in
    /// `first_block` (8 bytes a test: no name is copied).
    seen_now: Vec<u64>,
    seen_block: usize,
    tally: Option<Counts>,
    /// Scratch space for the id [`State::record`] builds.
    id_buf: String,
}

impl State<'_> {
    fn id(&self, name: &str) -> String {
        let mut id = String::new();
        self.id_into(name, &mut id);
        id
    }

    /// Appends the id of test `name` in the current block to `id`.
    fn id_into(&self, name: &str, id: &mut String) {
        let name = clean_name(name);
        match self.block.as_ref().and_then(|b| b.label.as_deref()) {
            Some(l) => {
                id.reserve(l.len() + 2 + name.len());
                id.push_str(l);
                id.push_str("::");
                id.push_str(name);
            }
            // no binary names (stderr not captured): a name an earlier binary already
            // used gets the binary's position
            None => match (!self.first_block.is_empty())
                .then(|| self.first_block.get(&self.c.id_hash(name)))
                .flatten()
            {
                Some(&b) if b != self.blocks => {
                    use std::fmt::Write;
                    let _ = write!(id, "{name} #{}", self.blocks);
                }
                _ => id.push_str(name),
            },
        }
    }

    fn close_block(&mut self) {
        self.flush_section();
        if let Some(b) = self.block.take() {
            if !b.ended {
                self.unended += 1;
            }
        }
        self.pending = None;
    }

    /// Moves the names an earlier block recorded into `first_block` (once a later
    /// block needs ids).
    fn merge_seen(&mut self) {
        if self.seen_block != self.blocks && !self.seen_now.is_empty() {
            let b = self.seen_block;
            for h in self.seen_now.drain(..) {
                self.first_block.entry(h).or_insert(b);
            }
        }
    }

    fn flush_section(&mut self) {
        self.merge_seen();
        if let Some((name, msg)) = self.section.take() {
            let id = self.id(&name);
            self.c.set_message(&id, &assertion_text(&msg));
        }
    }

    fn record(&mut self, name: &str, o: Outcome) {
        // the id is built in a buffer kept from test to test: the collector copies it
        // only when it keeps the text
        self.merge_seen();
        let mut id = std::mem::take(&mut self.id_buf);
        id.clear();
        self.id_into(name, &mut id);
        let unlabelled = self.block.as_ref().map_or(true, |b| b.label.is_none());
        if let Some(b) = self.block.as_mut() {
            b.named += 1;
        }
        if unlabelled {
            let clean = clean_name(name);
            let hash = self.c.id_hash(clean);
            self.seen_block = self.blocks;
            self.seen_now.push(hash);
            // the id is the name itself unless an earlier binary used it: hashed once
            if id == clean {
                self.c.record_batched_hashed(&id, hash, o);
            } else {
                self.c.record_batched(&id, o);
            }
        } else {
            self.c.record_batched(&id, o);
        }
        self.id_buf = id;
    }

    fn line(&mut self, raw: &str) {
        let line = strip_ansi(raw);
        let line = line.as_ref();
        let r = self.r;
        // the result line of a test, the bulk of any output, without a regex
        let result = split_test_line(line).filter(|_| !line.starts_with("test result: "));
        if let Some((name, word)) = result {
            if self
                .block
                .as_ref()
                .is_some_and(|b| !b.ended && b.captured.is_none())
            {
                match result_word(word) {
                    Some(o) => self.record(name, o),
                    None => self.pending = Some(name.to_string()),
                }
                return;
            }
        }
        if let Some(m) = line
            .starts_with("running ")
            .then(|| r.running.captures(line))
            .flatten()
        {
            self.close_block();
            self.blocks += 1;
            let label = if self.targets.is_empty() {
                None
            } else {
                let i = (self.blocks - 1).min(self.targets.len() - 1);
                self.targets.get(i).cloned()
            };
            let announced = m[1].parse().unwrap_or(0);
            self.c.reserve(announced);
            self.block = Some(Block {
                label,
                announced,
                ..Block::default()
            });
            return;
        }
        if line.ends_with(" benchmarks")
            || line.ends_with(": test")
            || line.ends_with(": benchmark")
        {
            if self.block.is_none() {
                self.list_seen = true;
            }
            return;
        }
        let Some(b) = self.block.as_ref() else { return };
        if b.ended {
            // a failing result after the block's own `test result:` line: a result
            // line printed early by the code under test ended the block (a fresh
            // review); the real failure still counts, and the run is inconsistent
            if let Some((name, word)) = result {
                if let Some(o) = result_word(word).filter(|o| o.is_failing()) {
                    self.inconsistent = true;
                    self.record(name, o);
                }
            }
            return;
        }
        if let Some(m) = line
            .starts_with("test result: ")
            .then(|| r.result.captures(line))
            .flatten()
        {
            self.flush_section();
            let n = |i: usize| m[i].parse::<usize>().unwrap_or(0);
            let total = n(2) + n(3) + n(4) + n(5);
            let c = Counts {
                passed: n(2) as u64,
                failed: n(3) as u64,
                skipped: n(4) as u64,
                flaky: 0,
            };
            self.tally = Some(self.tally.map_or(c, |t| t.plus(c)));
            if let Some(b) = self.block.as_mut() {
                b.ended = true;
                if (!b.terse && b.named != total) || total > b.announced {
                    self.inconsistent = true;
                }
            }
            return;
        }
        let area = match line {
            "failures:" => Some(true),
            "successes:" => Some(false),
            _ => None,
        };
        if let Some(failing) = b.captured {
            if let Some(name) = section_name(line) {
                self.flush_section();
                self.section = Some((name.to_string(), String::new()));
            } else if let Some(a) = area {
                self.flush_section();
                if let Some(b) = self.block.as_mut() {
                    b.captured = Some(a);
                }
            } else if let Some((_, msg)) = self.section.as_mut() {
                if msg.len() < 4096 {
                    msg.push_str(line);
                    msg.push('\n');
                }
            } else if let (true, Some(name)) = (failing, line.strip_prefix("    ")) {
                // the closing name list: every name here failed
                let id = self.id(name);
                if !self.c.is_failing(&id) {
                    self.record(name, Outcome::Failed);
                }
            }
            return;
        }
        if let Some(a) = area {
            if let Some(b) = self.block.as_mut() {
                b.captured = Some(a);
            }
            self.pending = None;
            return;
        }
        if let Some((name, word)) = split_test_line(line) {
            match result_word(word) {
                Some(o) => self.record(name, o),
                None => self.pending = Some(name.to_string()),
            }
            return;
        }
        if let Some(o) = result_word(line) {
            if let Some(name) = self.pending.take() {
                self.record(&name, o);
            }
            return;
        }
        if let Some(m) = line
            .contains(" --- ")
            .then(|| r.terse.captures(line))
            .flatten()
        {
            if let Some(b) = self.block.as_mut() {
                b.terse = true;
            }
            if let Some(o) = result_word(&m[2]) {
                let name = m[1].to_string();
                self.record(&name, o);
            }
            return;
        }
        if line.starts_with(['.', 'i', 'F']) && line.chars().all(|c| ".iF0123456789/ ".contains(c))
        {
            if let Some(b) = self.block.as_mut() {
                b.terse = true;
            }
        }
    }
}

/// Parses libtest output: stdout holds the results, stderr cargo's target lines.
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let Some(r) = res() else {
        return Collector::new().finish(RunEnd {
            format: Format::Libtest,
            runner: "cargo",
            complete: false,
            unattributed: true,
            red: true,
            message: Some("internal: libtest patterns failed to compile".into()),
            diagnostics,
        });
    };
    let mut targets = Vec::new();
    let mut fail_fast_stops = 0usize;
    let mut summary_of_failures = false;
    let mut crashed: Option<String> = None;
    let mut build_error: Option<String> = None;
    // `--nocapture`: panic reports on stderr, by id (as `State::id` builds it)
    let mut panics: Vec<(String, String)> = Vec::new();
    let mut panic_open = false;
    feed_lines(t.stderr, &mut diagnostics, |raw| {
        let line = strip_ansi(raw);
        if let Some(m) = r.panicked.captures(&line) {
            let name = clean_name(&m[1]);
            let id = match targets.last() {
                Some(l) => format!("{l}::{name}"),
                None => name.to_string(),
            };
            if panics.len() < 10_000 {
                panics.push((id, format!("{}\n", line.trim_end())));
                panic_open = true;
            }
            return;
        }
        if panic_open {
            let t = line.trim_end();
            if t.is_empty() || t.starts_with("note: ") || t.starts_with("error: ") {
                panic_open = false;
            } else if let Some((_, msg)) = panics.last_mut() {
                if msg.len() < 4096 {
                    msg.push_str(t);
                    msg.push('\n');
                }
                return;
            }
        }
        if let Some(m) = r.target.captures(&line) {
            targets.push(binary_label(&m[1]));
        } else if let Some(m) = r.doc.captures(&line) {
            targets.push(m[1].to_string());
        } else if line.contains("process didn't exit successfully") && line.contains("signal: ") {
            crashed.get_or_insert_with(|| line.trim().to_string());
        } else if let Some(m) = r.cargo_error.captures(&line) {
            let msg = &m[2];
            if msg.starts_with("test failed, to rerun pass")
                || msg.starts_with("doctest failed, to rerun pass")
            {
                fail_fast_stops += 1;
            }
            if msg.ends_with("targets failed:") || msg.ends_with("target failed:") {
                summary_of_failures = true;
            }
            let benign = msg.starts_with("test failed, to rerun pass")
                || msg.starts_with("doctest failed, to rerun pass")
                || (msg.ends_with("targets failed:") || msg.ends_with("target failed:"));
            if !benign {
                build_error.get_or_insert_with(|| line.trim().to_string());
            }
        }
    });
    // cargo's fail-fast stop: one "to rerun pass" line and no "N targets failed"
    // summary. The output of `cargo test` stopping after a failing lib target is byte
    // for byte that of `cargo test --lib`, so it cannot be judged cut short from the
    // output; the run counts as complete and the diagnostic says later targets may not
    // have run. (Completeness only matters for a green exit, which such a stop never
    // has.)
    if fail_fast_stops == 1 && !summary_of_failures {
        diagnostics.push(
            "cargo stopped at the first failing test target; later targets, if any, did not run (use --no-fail-fast to run all)"
                .to_string(),
        );
    }
    let mut st = State {
        r,
        targets,
        blocks: 0,
        block: None,
        unended: 0,
        inconsistent: false,
        pending: None,
        section: None,
        c: Collector::with_listing(t.listing),
        list_seen: false,
        first_block: HashMap::default(),
        seen_now: Vec::new(),
        seen_block: 0,
        tally: None,
        id_buf: String::new(),
    };
    feed_lines(t.stdout, &mut diagnostics, |l| st.line(l));
    st.close_block();
    for (id, msg) in &panics {
        // a no-op for tests that already carry their failures-section message
        st.c.set_message(id, &assertion_text(msg));
    }
    if let Some(tally) = st.tally {
        st.c.set_summary(tally);
    }
    let stopped = st.unended > 0;
    let complete = !stopped
        && crashed.is_none()
        && build_error.is_none()
        && !st.inconsistent
        && (st.blocks > 0 || st.list_seen);
    let message = crashed.or(build_error.clone()).or_else(|| {
        stopped.then(|| "a test binary stopped before reporting all its tests".to_string())
    });
    let unattributed = stopped || message.is_some();
    st.c.finish(RunEnd {
        format: Format::Libtest,
        runner: "cargo",
        complete,
        unattributed,
        red: is_red(t.exit_code),
        message,
        diagnostics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::{outcome_of, outcomes, run_text};

    fn run(stdout: &str, stderr: &str, exit: i32) -> ParsedRun {
        run_text(
            parse,
            Some(stdout.as_bytes()),
            Some(stderr.as_bytes()),
            Some(exit),
        )
    }

    /// The hand-written split agrees with the pattern it replaces.
    /// A `test result: ok` line printed by the code under test in the middle of a
    /// block ends it early; a test reported failing after it still fails, and the
    /// run is not complete (a fresh review's forged summary line).
    #[test]
    fn a_failure_after_an_early_result_line_still_fails() {
        let out = "running 2 tests\ntest other ... ok\n\
            test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\
            test adds ... FAILED\n\nfailures:\n\n---- adds stdout ----\nboom\n\n\
            failures:\n    adds\n\n\
            test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n";
        for exit in [0, 101] {
            let r = run(out, "", exit);
            let failing: Vec<String> = r.failing().into_iter().collect();
            assert_eq!(failing, vec!["adds".to_string()], "exit {exit}");
            assert!(!r.complete, "exit {exit}");
        }
    }

    #[test]
    fn split_test_line_matches_its_pattern() {
        let re = Regex::new(r"^test (.+?) \.\.\. ?(.*)$").unwrap();
        for line in [
            "test a::b ... ok",
            "test a::b ...ok",
            "test a::b ... ",
            "test a::b ...",
            "test  ... ok",
            "test . ... ok",
            "test a.... ok",
            "test a ... b ... ok",
            "test a..b .. c ... FAILED",
            "test ü ... ignored, slow",
            "test ...",
            "test  ...",
            "test x",
            "tests a ... ok",
            "test result: ok. 1 passed; 0 failed",
        ] {
            let want = re.captures(line).map(|m| {
                (
                    m.get(1).map_or("", |g| g.as_str()),
                    m.get(2).map_or("", |g| g.as_str()),
                )
            });
            assert_eq!(split_test_line(line), want, "{line:?}");
        }
    }

    /// The hand-written header split agrees with the pattern it replaces.
    #[test]
    fn section_name_matches_its_pattern() {
        let re = Regex::new(r"^---- (.+) stdout ----$").unwrap();
        for line in [
            "---- a::b stdout ----",
            "---- x stdout ----",
            "----  stdout ----",
            "---- stdout ----",
            "----   stdout ----",
            "---- a stdout ---- stdout ----",
            "---- a stdout ----x",
            "--- a stdout ----",
            "---- ü stdout ----",
        ] {
            let want = re.captures(line).and_then(|m| m.get(1)).map(|g| g.as_str());
            assert_eq!(section_name(line), want, "{line:?}");
        }
    }

    #[test]
    fn split_result_word_and_fake_lines() {
        let out = "\nrunning 2 tests\ntest a::x ... printed: test fake ... ok\nFAILED\ntest b - should panic ... \u{1b}[32mok\u{1b}(B\u{1b}[m\n\nfailures:\n\n---- a::x stdout ----\ntest inner ... ok\nthread 'a::x' (77) panicked at src/lib.rs:1:1:\nboom\n\nfailures:\n    a::x\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
        let r = run(out, "", 101);
        assert_eq!(outcome_of(&r, "a::x"), Some(Outcome::Failed));
        assert_eq!(outcome_of(&r, "b"), Some(Outcome::Passed));
        assert_eq!(r.tests.len(), 2);
        assert!(r.complete && !r.unattributed_failure);
        let msg = r.tests[0].message.clone().unwrap_or_default();
        assert!(msg.contains("boom") && !msg.contains("(77)"), "{msg}");
    }

    #[test]
    fn binaries_prefix_ids_and_missing_result_is_incomplete() {
        let out = "\nrunning 1 test\ntest it_passes ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n\nrunning 2 tests\ntest it_passes ... ok\n";
        let err = "     Running tests/a.rs (target/debug/deps/a-0123abcd)\n     Running tests/b.rs (target/debug/deps/b-4567ef01)\n";
        let r = run(out, err, 0);
        assert_eq!(outcome_of(&r, "a::it_passes"), Some(Outcome::Passed));
        assert_eq!(outcome_of(&r, "b::it_passes"), Some(Outcome::Passed));
        assert!(!r.complete && r.unattributed_failure);
    }

    #[test]
    fn without_stderr_only_repeated_names_get_a_position() {
        let out = "\nrunning 1 test\ntest a ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n\nrunning 2 tests\ntest a ... ok\ntest b ... ok\n\ntest result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n";
        let r = run(out, "", 0);
        let ids: Vec<_> = r.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, vec!["a", "a #2", "b"]);
        assert!(r.complete);
    }

    #[test]
    fn show_output_successes_are_captured_output() {
        let out = "\nrunning 2 tests\ntest a ... ok\ntest b ... FAILED\n\nsuccesses:\n\n---- a stdout ----\ntest fake ... ok\n\nsuccesses:\n    a\n\nfailures:\n\n---- b stdout ----\nboom\n\nfailures:\n    b\n\ntest result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n";
        let r = run(out, "", 101);
        let o = outcomes(&r);
        assert_eq!(o, vec![("a", Outcome::Passed), ("b", Outcome::Failed)]);
        assert_eq!(r.tests[1].message.as_deref(), Some("boom"));
        assert!(r.complete);
    }

    #[test]
    fn terse_names_failures_from_list() {
        let out = "\nrunning 3 tests\ni.\nt::bad --- FAILED\n\nfailures:\n\nfailures:\n    t::bad\n\ntest result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out\n";
        let r = run(out, "", 101);
        assert_eq!(r.failing().len(), 1);
        assert!(r.complete);
    }

    #[test]
    fn compile_error_is_unattributed() {
        let r = run(
            "",
            "error[E0425]: cannot find value `x`\nerror: could not compile `demo`\n",
            101,
        );
        assert!(r.unattributed_failure && !r.complete);
        assert_eq!(r.failing().len(), 1);
        assert_eq!(
            r.tests[0].message.as_deref(),
            Some("error[E0425]: cannot find value `x`")
        );
    }

    /// Rust >= 1.73: `thread 'NAME' panicked at FILE:LINE:COL:` and the message on the
    /// NEXT line; the message is the assertion's own text, without the location (which
    /// moves with every edit above it).
    #[test]
    fn panic_message_is_the_line_after_the_location() {
        let out = "\nrunning 1 test\ntest t::f ... FAILED\n\nfailures:\n\n---- t::f stdout ----\n\nthread 't::f' (4242) panicked at src/lib.rs:92:5:\nassertion `left == right` failed: math is broken\n  left: 4\n right: 5\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\n\nfailures:\n    t::f\n\ntest result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n";
        let r = run(out, "", 101);
        assert_eq!(
            r.tests[0].message.as_deref(),
            Some("assertion `left == right` failed: math is broken\n  left: 4\n right: 5")
        );
        // before 1.73 the message was on the location line itself
        let old = out.replace(
            "panicked at src/lib.rs:92:5:\nassertion `left == right` failed: math is broken",
            "panicked at 'math is broken', src/lib.rs:92:5",
        );
        let r = run(&old, "", 101);
        let m = r.tests[0].message.clone().unwrap_or_default();
        assert!(m.starts_with("'math is broken'"), "{m}");
    }
}
