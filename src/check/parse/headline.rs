//! The failure text of a red run no named test owns (the synthetic
//! `<runner>::<unattributed>` member's message), read from the check's stderr.
//!
//! The message is what `same_failure_repeated` compares and what users see, so it is
//! the error's own words, never a location or a quoted source line:
//! * rustc/cargo: the first `error[E0308]: mismatched types` (or `error: ...`) line,
//!   not the `92 | }` source lines rustc quotes after it, and not cargo's epilogue
//!   (`error: could not compile ...`, `error: test failed, to rerun pass ...`);
//! * Python: the exception line that ends a traceback (`AssertionError: 3 != 4`), not
//!   the traceback's `File "...", line N` lines;
//! * anything else: the last six non-empty lines, rustc-style source frames
//!   (`  |`, `12 |`, `-->`) removed.

use std::collections::VecDeque;

/// Lines kept for the plain tail.
const TAIL_LINES: usize = 6;
/// Longest line kept, in bytes.
const LINE_BYTES: usize = 300;

/// Accumulates stderr lines and yields the failure text (see the module doc).
#[derive(Debug, Default)]
pub struct Headline {
    rustc: Option<String>,
    cargo: Option<String>,
    in_traceback: bool,
    exception: Option<String>,
    tail: VecDeque<String>,
}

/// True for a rustc source frame: `   |`, `12 |     code`, `  --> src/lib.rs:1:2`,
/// `   = note: ...`, `...`.
fn is_source_frame(t: &str) -> bool {
    let t = t.trim_start();
    if t.starts_with("--> ") || t.starts_with("= ") || t == "..." || t.starts_with("::: ") {
        return true;
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    t[digits..].trim_start().starts_with('|')
}

/// The owned line, cut to [`LINE_BYTES`] on a character boundary.
fn owned(t: &str) -> String {
    let mut s = t.to_string();
    super::util::truncate_bytes(&mut s, LINE_BYTES);
    s
}

impl Headline {
    /// An empty accumulator.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one line (ANSI already stripped).
    pub fn line(&mut self, l: &str) {
        let t = l.trim_end();
        if t.trim().is_empty() {
            return;
        }
        if let Some(rest) = t.strip_prefix("error") {
            let coded = rest.starts_with("[E") && rest.contains("]: ");
            let plain = rest.starts_with(": ");
            let epilogue = [
                "could not compile",
                "test failed, to rerun",
                "doctest failed, to rerun",
                "aborting due to",
                "process didn't exit successfully",
            ]
            .iter()
            .any(|e| rest.contains(e));
            if coded && self.rustc.is_none() {
                self.rustc = Some(owned(t));
            } else if plain && !epilogue && self.cargo.is_none() {
                self.cargo = Some(owned(t));
            }
        }
        if t.starts_with("Traceback (most recent call last):") {
            self.in_traceback = true;
        } else if self.in_traceback && !t.starts_with([' ', '\t']) {
            // the first unindented line after a traceback is its exception
            if !t.starts_with("During handling") && !t.starts_with("The above exception") {
                self.exception = Some(owned(t));
            }
            self.in_traceback = false;
        }
        if is_source_frame(t) {
            return;
        }
        if self.tail.len() == TAIL_LINES {
            self.tail.pop_front();
        }
        self.tail.push_back(owned(t));
    }

    /// The failure text, or `None` when no line was fed.
    #[must_use]
    pub fn finish(self) -> Option<String> {
        if let Some(h) = self.rustc.or(self.cargo).or(self.exception) {
            return Some(h);
        }
        if self.tail.is_empty() {
            None
        } else {
            Some(self.tail.into_iter().collect::<Vec<_>>().join("\n"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(text: &str) -> Option<String> {
        let mut h = Headline::new();
        for l in text.lines() {
            h.line(l);
        }
        h.finish()
    }

    #[test]
    fn headline_per_runner() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                "rustc error code, source frames after it (cargo 1.8x)",
                "   Compiling demo v0.1.0 (/w/demo)\nerror[E0308]: mismatched types\n  --> src/lib.rs:13:22\n   |\n13 |         let y: i32 = \"x\";\n   |                ---   ^^^ expected `i32`, found `&str`\n\nFor more information about this error, try `rustc --explain E0308`.\nerror: could not compile `demo` (lib test) due to 1 previous error\n",
                Some("error[E0308]: mismatched types"),
            ),
            (
                "rustc error without a code, ending in a quoted closing brace",
                "error: expected one of `,` or `}`, found `x`\n  --> src/lib.rs:91:5\n   |\n92 | }\n   | ^\nerror: could not compile `demo` (lib) due to 1 previous error\n",
                Some("error: expected one of `,` or `}`, found `x`"),
            ),
            (
                "python unittest: the exception, not the File line",
                "F\n======================================================================\nFAIL: test_add (test_calc.TestCalc.test_add)\n----------------------------------------------------------------------\nTraceback (most recent call last):\n  File \"/w/test_calc.py\", line 8, in test_add\n    self.assertEqual(3, 4)\nAssertionError: 3 != 4\n\n----------------------------------------------------------------------\nRan 1 test in 0.000s\n\nFAILED (failures=1)\n",
                Some("AssertionError: 3 != 4"),
            ),
            (
                "python chained exceptions: the last one",
                "Traceback (most recent call last):\n  File \"a.py\", line 1, in <module>\nKeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"a.py\", line 3, in <module>\nValueError: bad\n",
                Some("ValueError: bad"),
            ),
            (
                "anything else: the tail",
                "make: *** [Makefile:3: test] Error 1\n",
                Some("make: *** [Makefile:3: test] Error 1"),
            ),
            ("nothing", "\n  \n", None),
        ];
        for (what, text, want) in cases {
            assert_eq!(of(text).as_deref(), *want, "{what}");
        }
    }

    #[test]
    fn tail_drops_source_frames_and_keeps_six_lines() {
        let text = "a\nb\nc\nd\ne\nf\n  --> x.rs:1:1\n   |\n92 | }\ng\n";
        assert_eq!(of(text).as_deref(), Some("b\nc\nd\ne\nf\ng"));
    }
}
