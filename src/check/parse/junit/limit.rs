//! A byte filter between the input and the XML reader that bounds the size of any
//! character data run, so memory stays proportional to per-test state even when a
//! report holds hundreds of MB of captured output in one `<system-out>`.
//!
//! The XML reader hands out a text node as one event, which it must buffer whole. This
//! filter passes markup (`<...>`, respecting quoted attribute values) unchanged and keeps
//! at most [`TEXT_LIMIT`] bytes of each run of text, CDATA section or comment; the rest
//! of the run is dropped, up to the markup that ends it (`<`, `]]>`, `-->`), which is
//! always passed through. Dropping can cut a character or an entity reference in two; the
//! reader then decodes that text lossily, which only affects captured messages.

use std::io::{BufRead, Read};

/// Most bytes kept of one text run, CDATA section or comment.
pub(super) const TEXT_LIMIT: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Character data; `run` bytes seen since it started.
    Text { run: usize },
    /// Inside `<...>`; `quote` is the open attribute-value quote, if any.
    Tag { quote: Option<u8> },
    /// Inside `<![CDATA[ ... ]]>`.
    CData { run: usize },
    /// Inside `<!-- ... -->`.
    Comment { run: usize },
}

/// Wraps a `BufRead`, dropping text beyond [`TEXT_LIMIT`] per run (see module doc).
pub(super) struct LimitText<R> {
    inner: R,
    filter: Filter,
    out: Vec<u8>,
    pos: usize,
}

/// The filter's state between bytes.
struct Filter {
    state: State,
    /// The first bytes of the current markup, to spot `<![CDATA[` and `<!--`.
    opening: Vec<u8>,
    /// The last two bytes inside a CDATA section or comment, to spot its end.
    tail: [u8; 2],
}

impl<R: BufRead> LimitText<R> {
    pub(super) fn new(inner: R) -> Self {
        LimitText {
            inner,
            filter: Filter {
                state: State::Text { run: 0 },
                opening: Vec::with_capacity(9),
                tail: [0; 2],
            },
            out: Vec::new(),
            pos: 0,
        }
    }
}

impl Filter {
    /// Filters `chunk` into `out`.
    fn run(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        let mut i = 0;
        while i < chunk.len() {
            if let State::Tag { quote } = self.state {
                if self.settled() {
                    // Fast path: markup that is no CDATA section or comment is copied
                    // up to its next quote or `>` at once.
                    let rest = &chunk[i..];
                    let hit = match quote {
                        Some(q) => memchr::memchr(q, rest),
                        None => memchr::memchr3(b'>', b'"', b'\'', rest),
                    };
                    let Some(n) = hit else {
                        out.extend_from_slice(rest);
                        break;
                    };
                    out.extend_from_slice(&rest[..=n]);
                    self.state = match (quote, rest[n]) {
                        (Some(_), _) => State::Tag { quote: None },
                        (None, b'>') => State::Text { run: 0 },
                        (None, q) => State::Tag { quote: Some(q) },
                    };
                    i += n + 1;
                    continue;
                }
            }
            if let State::Text { run } = self.state {
                // Fast path: copy (or skip) plain text up to the next '<'.
                let rest = &chunk[i..];
                let n = memchr::memchr(b'<', rest).unwrap_or(rest.len());
                let keep = n.min(TEXT_LIMIT.saturating_sub(run));
                out.extend_from_slice(&rest[..keep]);
                self.state = State::Text { run: run + n };
                i += n;
                if i == chunk.len() {
                    break;
                }
            }
            self.step(chunk[i], out);
            i += 1;
        }
    }

    fn step(&mut self, b: u8, out: &mut Vec<u8>) {
        match self.state {
            State::Text { run } => {
                if b == b'<' {
                    out.push(b);
                    self.opening.clear();
                    self.opening.push(b);
                    self.state = State::Tag { quote: None };
                } else {
                    if run < TEXT_LIMIT {
                        out.push(b);
                    }
                    self.state = State::Text { run: run + 1 };
                }
            }
            State::Tag { quote } => {
                out.push(b);
                if self.opening.len() < 9 {
                    self.opening.push(b);
                    if self.opening == b"<![CDATA[" {
                        self.enter(State::CData { run: 0 });
                        return;
                    }
                    if self.opening == b"<!--" {
                        self.enter(State::Comment { run: 0 });
                        return;
                    }
                }
                self.state = match (quote, b) {
                    (None, b'>') => State::Text { run: 0 },
                    (None, b'"' | b'\'') => State::Tag { quote: Some(b) },
                    (Some(q), _) if q == b => State::Tag { quote: None },
                    _ => State::Tag { quote },
                };
            }
            State::CData { run } => self.in_block(b, run, b']', out),
            State::Comment { run } => self.in_block(b, run, b'-', out),
        }
    }

    /// True when the markup begun can no longer open a CDATA section or a comment
    /// (its first bytes are a prefix of neither opener), so only quotes and `>`
    /// matter in it.
    fn settled(&self) -> bool {
        match self.opening.get(1) {
            None => false,
            // the common case, an element's tag, without comparing more
            Some(&b) if b != b'!' => true,
            Some(_) => {
                !b"<![CDATA[".starts_with(&self.opening) && !b"<!--".starts_with(&self.opening)
            }
        }
    }

    fn enter(&mut self, state: State) {
        self.state = state;
        self.tail = [0; 2];
    }

    /// A byte inside a CDATA section or comment, which ends with `cc>` (`]]>`, `-->`).
    fn in_block(&mut self, b: u8, run: usize, c: u8, out: &mut Vec<u8>) {
        if b == b'>' && self.tail == [c, c] {
            if run > TEXT_LIMIT {
                // The closing pair was dropped with the rest: restore it.
                out.push(c);
                out.push(c);
            }
            out.push(b);
            self.state = State::Text { run: 0 };
            return;
        }
        if run < TEXT_LIMIT {
            out.push(b);
        }
        self.tail = [self.tail[1], b];
        self.state = match self.state {
            State::Comment { .. } => State::Comment { run: run + 1 },
            _ => State::CData { run: run + 1 },
        };
    }
}

impl<R: BufRead> Read for LimitText<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(buf.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for LimitText<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        while self.pos >= self.out.len() {
            self.out.clear();
            self.pos = 0;
            let chunk = self.inner.fill_buf()?;
            if chunk.is_empty() {
                break;
            }
            let n = chunk.len();
            self.filter.run(chunk, &mut self.out);
            self.inner.consume(n);
        }
        Ok(&self.out[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.out.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(input: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        LimitText::new(input).read_to_end(&mut out).expect("reads");
        out
    }

    #[test]
    fn small_documents_pass_unchanged() {
        let doc = br#"<a x="1>2" y='<'><![CDATA[a]]]]><![CDATA[>b]]><!-- c --> t &amp; u</a>"#;
        assert_eq!(filter(doc), doc.to_vec());
    }

    /// Markup split across reads at every position reads the same (the fast paths
    /// resume in the middle of a tag, a quoted value, a CDATA section or a comment).
    #[test]
    fn documents_split_at_any_byte_pass_unchanged() {
        let doc = br#"<?xml version="1.0"?><!DOCTYPE r><a x="1>2" y='<"'><!-x-><![CDATA[a]]]]><b c=">"/><!-- c > d --> t &amp; u</a>"#;
        for cap in 1..12 {
            let mut out = Vec::new();
            LimitText::new(std::io::BufReader::with_capacity(cap, &doc[..]))
                .read_to_end(&mut out)
                .expect("reads");
            assert_eq!(out, doc.to_vec(), "read {cap} bytes at a time");
        }
    }

    #[test]
    fn long_runs_are_cut_and_markup_kept() {
        let big = "x".repeat(TEXT_LIMIT * 3);
        let doc = format!("<a>{big}</a><b><![CDATA[{big}]]></b><!--{big}-->");
        let out = String::from_utf8(filter(doc.as_bytes())).expect("utf8");
        let x = "x".repeat(TEXT_LIMIT);
        assert_eq!(
            out,
            format!(
                "<a>{x}</a><b><![CDATA[{x}]]></b><!--{}-->",
                &x[..TEXT_LIMIT]
            )
        );
    }

    #[test]
    fn cut_right_at_the_closing_pair_still_closes() {
        let body = format!("{}]]", "y".repeat(TEXT_LIMIT - 1));
        let doc = format!("<![CDATA[{body}>");
        let out = String::from_utf8(filter(doc.as_bytes())).expect("utf8");
        assert!(out.ends_with("]]>"), "{}", &out[out.len() - 5..]);
        assert!(out.starts_with("<![CDATA[yyy"));
    }
}
