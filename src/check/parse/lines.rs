//! The `lines` format: a plain fallback the user selects for checks that print
//! their failing tests themselves. Each non-empty stdout line (ANSI stripped,
//! trimmed, control characters removed) is the id of one failing test; nothing is known about passing tests.
//! The run is complete (the check printed what it had); a red exit with no line
//! adds the synthetic unattributed member.

use super::util::{feed_lines, strip_ansi, truncate_bytes, Collector};
use super::TextInput;
use crate::check::model::{Format, Outcome, ParsedRun};

/// Longest id kept from one line, in bytes.
const ID_LIMIT: usize = 1024;

/// Parses `lines` output from stdout.
#[must_use]
pub fn parse(t: &TextInput) -> ParsedRun {
    let mut diagnostics = Vec::new();
    let mut c = Collector::with_listing(t.listing);
    feed_lines(t.stdout, &mut diagnostics, |raw| {
        let line = strip_ansi(raw);
        let mut id: String = line.trim().chars().filter(|c| !c.is_control()).collect();
        if id.is_empty() {
            return;
        }
        truncate_bytes(&mut id, ID_LIMIT);
        c.record(&id, Outcome::Failed, None);
    });
    c.finish_text(Format::Lines, "lines", true, None, t.exit_code, diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::parse::util::run_text;

    #[test]
    fn each_line_is_a_failing_id() {
        let r = run_text(
            parse,
            Some(b"a::b\r\n\n  \x1b[31mc d\x1b[0m \n\xff bad utf8\n".as_slice()),
            None,
            Some(1),
        );
        let ids: Vec<_> = r.tests.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, vec!["a::b", "c d", "\u{fffd} bad utf8"]);
        assert!(r.complete && !r.unattributed_failure);
    }
}
