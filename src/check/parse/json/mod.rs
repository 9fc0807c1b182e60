//! JSON test reports: line-delimited event streams (libtest, `go test -json`) and
//! single documents (Jest/Vitest, mocha, RSpec).
//!
//! Event streams are read one line at a time (memory: one line plus per-test state);
//! lines that are not JSON objects are skipped. Documents are decoded straight from the
//! reader into typed structs that skip unknown fields (serde_json streaming), after
//! skipping any text before the first line that starts with `{`.

mod gotest;
mod jest;
mod libtest;
mod mocha;
mod rspec;

pub use gotest::parse_gotest_json;
pub use jest::parse_jest_json;
pub use libtest::parse_libtest_json;
pub use mocha::parse_mocha_json;
pub use rspec::parse_rspec_json;

use crate::check::parse::structured::StructuredError;
use serde::de::DeserializeOwned;
use std::io::BufRead;

/// Calls `f(line_number, line)` for each line of `r` whose first non-blank character
/// is `{` (1-based numbers; invalid UTF-8 is replaced). Other lines go to `other`.
fn for_each_line<R: BufRead>(
    mut r: R,
    mut f: impl FnMut(u64, &str),
    mut other: impl FnMut(&str),
) -> Result<(), StructuredError> {
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf)? == 0 {
            return Ok(());
        }
        n += 1;
        let line = String::from_utf8_lossy(&buf);
        let trimmed = line.trim();
        if trimmed.starts_with('{') {
            f(n, trimmed);
        } else if !trimmed.is_empty() {
            other(trimmed);
        }
    }
}

/// Decodes one JSON document from `r`, skipping text before the first line whose first
/// non-blank character is `{`. Text after the document is ignored.
///
/// # Errors
/// [`StructuredError::NotRecognised`] when no such line exists;
/// [`StructuredError::Json`] when the document does not decode (line numbers count from
/// the start of the document).
fn read_document<T: DeserializeOwned, R: BufRead>(mut r: R) -> Result<T, StructuredError> {
    if !skip_to_document(&mut r)? {
        return Err(StructuredError::NotRecognised);
    }
    let mut de = serde_json::Deserializer::from_reader(r);
    T::deserialize(&mut de).map_err(|e| StructuredError::Json {
        line: e.line() as u64,
        message: e.to_string(),
    })
}

/// Consumes input up to (not including) the first `{` that is the first non-blank
/// character of its line. Returns false at EOF.
fn skip_to_document<R: BufRead>(r: &mut R) -> std::io::Result<bool> {
    let mut line_start = true;
    loop {
        let (found, used) = {
            let chunk = r.fill_buf()?;
            if chunk.is_empty() {
                return Ok(false);
            }
            let mut found = None;
            for (i, &b) in chunk.iter().enumerate() {
                match b {
                    b'{' if line_start => {
                        found = Some(i);
                        break;
                    }
                    b'\n' => line_start = true,
                    b' ' | b'\t' | b'\r' => {}
                    // A UTF-8 byte order mark does not end the line start.
                    0xEF | 0xBB | 0xBF if line_start => {}
                    _ => line_start = false,
                }
            }
            (found, found.unwrap_or(chunk.len()))
        };
        r.consume(used);
        if found.is_some() {
            return Ok(true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_start_is_found_after_junk_lines() {
        let mut r = &b"log { not here\n  {\"a\":1}"[..];
        assert!(skip_to_document(&mut r).expect("reads"));
        assert_eq!(r, b"{\"a\":1}");
        let mut r = &b"no json at all"[..];
        assert!(!skip_to_document(&mut r).expect("reads"));
    }

    #[test]
    fn document_errors_carry_the_line() {
        let r: Result<serde_json::Value, _> = read_document(&b"{\n\"a\": [1,\n"[..]);
        match r {
            Err(StructuredError::Json { line, .. }) => assert_eq!(line, 3),
            other => panic!("unexpected {other:?}"),
        }
    }
}
