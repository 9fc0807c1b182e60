//! A byte filter between the input and the XML reader that bounds the size of any
//! character data run, so memory stays proportional to per-test state even when a
//! report holds hundreds of MB of captured output in one `<system-out>`.
//!
//! The XML reader hands out a text node as one event, which it must buffer whole. This
//! filter passes markup (`<...>`, respecting quoted attribute values) unchanged and keeps
//! at most [`TEXT_LIMIT`] bytes of each run of text, CDATA section or comment; the rest
//! of the run is dropped, up to the markup that ends it (`<`, `]]>`, `-->`), which is
//! always passed through (the bytes of a closing `]]`/`--` that fell in the dropped part
//! are put back). Dropping can cut a character or an entity reference in two; the
//! reader then decodes that text lossily, which only affects captured messages.
//!
//! What passes unchanged is handed to the reader straight from the inner reader's
//! buffer, without a copy: the filter only finds where the next cut is. A tag is
//! passed in one step when the bytes up to its first `>` hold an even number of one
//! kind of quote and none of the other (that `>` then stands outside any quoted
//! value); any other tag is walked quote by quote.

use std::io::{BufRead, Read};

/// Most bytes kept of one text run, CDATA section or comment.
pub(super) const TEXT_LIMIT: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Character data; `run` bytes seen since it started.
    Text { run: usize },
    /// After `<` (and `opening`), while the markup could still open a CDATA section
    /// or a comment.
    Opening,
    /// Inside `<...>`; `quote` is the open attribute-value quote, if any.
    Tag { quote: Option<u8> },
    /// Inside `<![CDATA[ ... ]]>` (`close` = `]`) or `<!-- ... -->` (`close` = `-`);
    /// `run` bytes seen since its opener.
    Block { run: usize, close: u8 },
}

/// Wraps a `BufRead`, dropping text beyond [`TEXT_LIMIT`] per run (see module doc).
pub(super) struct LimitText<R> {
    inner: R,
    filter: Filter,
    /// Bytes at the front of `inner`'s buffer the filter passed unchanged and the
    /// reader has not consumed yet.
    ready: usize,
    /// Bytes put back (the dropped part of a closing pair and its `>`), handed out
    /// before `inner`'s; `put_back[put_pos..]` are left.
    put_back: Vec<u8>,
    put_pos: usize,
}

/// The filter's state between bytes.
struct Filter {
    state: State,
    /// The first bytes of the current markup (while [`State::Opening`]).
    opening: Vec<u8>,
    /// The last two bytes inside a CDATA section or comment, to spot its end across
    /// reads.
    tail: [u8; 2],
}

/// What the filter does with the bytes at the front of a chunk that it cannot pass.
#[derive(Debug, PartialEq, Eq)]
struct Cut {
    /// Bytes of the chunk dropped.
    consume: usize,
    /// Bytes handed out in their place.
    put_back: Vec<u8>,
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
            ready: 0,
            put_back: Vec::new(),
            put_pos: 0,
        }
    }
}

const CDATA: &[u8] = b"<![CDATA[";
const COMMENT: &[u8] = b"<!--";

/// True when, outside any quote, `tag` (bytes of a tag before a `>`) leaves that `>`
/// outside any quoted value too: it holds an even number of one kind of quote and
/// none of the other. Read 32 bytes at a time into byte-wide parities and
/// presences, which the compiler turns into vector instructions.
fn quotes_balanced(tag: &[u8]) -> bool {
    // per lane: parity and presence of each quote
    let (mut dp, mut da, mut sp, mut sa) = ([0u8; 32], [0u8; 32], [0u8; 32], [0u8; 32]);
    let mut words = tag.chunks_exact(32);
    for w in &mut words {
        for k in 0..32 {
            let d = u8::from(w[k] == b'"');
            let s = u8::from(w[k] == b'\'');
            dp[k] ^= d;
            da[k] |= d;
            sp[k] ^= s;
            sa[k] |= s;
        }
    }
    let fold = |v: [u8; 32], f: fn(u8, u8) -> u8| v.into_iter().fold(0, f);
    let (mut dp, mut da) = (fold(dp, |a, b| a ^ b), fold(da, |a, b| a | b));
    let (mut sp, mut sa) = (fold(sp, |a, b| a ^ b), fold(sa, |a, b| a | b));
    for &b in words.remainder() {
        let d = u8::from(b == b'"');
        let s = u8::from(b == b'\'');
        dp ^= d;
        da |= d;
        sp ^= s;
        sa |= s;
    }
    (sa == 0 && dp == 0) || (da == 0 && sp == 0)
}

impl Filter {
    /// Passes bytes from the front of `chunk` unchanged, advancing the state over
    /// them; returns how many. Fewer than `chunk.len()` only when the next byte is to
    /// be dropped ([`Filter::cut`] then handles it).
    fn keep(&mut self, chunk: &[u8]) -> usize {
        let mut i = 0;
        while i < chunk.len() {
            let rest = &chunk[i..];
            match self.state {
                State::Text { run } => {
                    let n = memchr::memchr(b'<', rest).unwrap_or(rest.len());
                    let room = TEXT_LIMIT.saturating_sub(run);
                    if n > room {
                        self.state = State::Text { run: run + room };
                        return i + room;
                    }
                    i += n;
                    self.state = State::Text { run: run + n };
                    if i < chunk.len() {
                        i += 1;
                        self.opening.clear();
                        self.opening.push(b'<');
                        self.state = State::Opening;
                    }
                }
                // the common case, an element's tag, decided at its second byte
                State::Opening if self.opening.len() == 1 && rest[0] != b'!' => {
                    self.state = State::Tag { quote: None };
                }
                State::Opening => {
                    let b = rest[0];
                    self.opening.push(b);
                    if self.opening == CDATA || self.opening == COMMENT {
                        let close = if self.opening == CDATA { b']' } else { b'-' };
                        self.state = State::Block { run: 0, close };
                        self.tail = [0; 2];
                        i += 1;
                    } else if CDATA.starts_with(&self.opening) || COMMENT.starts_with(&self.opening)
                    {
                        i += 1;
                    } else {
                        // an element's tag (or other markup): `b` is read as its byte
                        self.opening.pop();
                        self.state = State::Tag { quote: None };
                    }
                }
                State::Tag { quote: None } => {
                    if let Some(n) = memchr::memchr(b'>', rest) {
                        if quotes_balanced(&rest[..n]) {
                            i += n + 1;
                            self.state = State::Text { run: 0 };
                            continue;
                        }
                    }
                    match memchr::memchr3(b'>', b'"', b'\'', rest) {
                        None => i = chunk.len(),
                        Some(n) => {
                            i += n + 1;
                            self.state = match rest[n] {
                                b'>' => State::Text { run: 0 },
                                q => State::Tag { quote: Some(q) },
                            };
                        }
                    }
                }
                State::Tag { quote: Some(q) } => match memchr::memchr(q, rest) {
                    None => i = chunk.len(),
                    Some(n) => {
                        i += n + 1;
                        self.state = State::Tag { quote: None };
                    }
                },
                State::Block { run, close } => {
                    let (n, closed) = self.block_end(rest, close);
                    // bytes of the block before its `>` (or in all of `rest`)
                    let room = TEXT_LIMIT.saturating_sub(run);
                    if run + n > TEXT_LIMIT {
                        self.advance_block(&rest[..room]);
                        return i + room;
                    }
                    self.advance_block(&rest[..n]);
                    i += n;
                    if closed {
                        i += 1;
                        self.state = State::Text { run: 0 };
                    }
                }
            }
        }
        i
    }

    /// Where the block (closed by `cc>`) ends in `rest`: the number of its bytes
    /// before the closing `>` and true, or `rest.len()` and false.
    fn block_end(&self, rest: &[u8], close: u8) -> (usize, bool) {
        let mut from = 0;
        while let Some(k) = memchr::memchr(b'>', &rest[from..]) {
            let p = from + k;
            let before = |back: usize| -> u8 {
                if p >= back {
                    rest[p - back]
                } else {
                    self.tail[2 - (back - p)]
                }
            };
            if before(1) == close && before(2) == close {
                return (p, true);
            }
            from = p + 1;
        }
        (rest.len(), false)
    }

    /// Counts `bytes` into the open block's run and tail.
    fn advance_block(&mut self, bytes: &[u8]) {
        if let State::Block { run, close } = self.state {
            self.state = State::Block {
                run: run + bytes.len(),
                close,
            };
        }
        match bytes {
            [.., a, b] => self.tail = [*a, *b],
            [b] => self.tail = [self.tail[1], *b],
            [] => {}
        }
    }

    /// Drops bytes from the front of `chunk` (which [`Filter::keep`] would not
    /// pass): the rest of an over-long text run up to its `<`, or of a block up to
    /// its closing `>`, which is then handed out with the closing pair's dropped
    /// bytes put back before it.
    fn cut(&mut self, chunk: &[u8]) -> Cut {
        match self.state {
            State::Text { run } => {
                let n = memchr::memchr(b'<', chunk).unwrap_or(chunk.len());
                self.state = State::Text { run: run + n };
                Cut {
                    consume: n,
                    put_back: Vec::new(),
                }
            }
            State::Block { run, close } => {
                let (n, closed) = self.block_end(chunk, close);
                self.advance_block(&chunk[..n]);
                if !closed {
                    return Cut {
                        consume: n,
                        put_back: Vec::new(),
                    };
                }
                // the closing pair is the block's last two bytes: those at or past
                // the limit were dropped
                let end = run + n;
                let dropped = [end - 2, end - 1]
                    .iter()
                    .filter(|&&k| k >= TEXT_LIMIT)
                    .count();
                let mut put_back = vec![close; dropped];
                put_back.push(b'>');
                self.state = State::Text { run: 0 };
                Cut {
                    consume: n + 1,
                    put_back,
                }
            }
            // markup is always kept
            State::Opening | State::Tag { .. } => Cut {
                consume: 0,
                put_back: Vec::new(),
            },
        }
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
        loop {
            if self.put_pos < self.put_back.len() {
                return Ok(&self.put_back[self.put_pos..]);
            }
            if self.ready > 0 {
                let ready = self.ready;
                return Ok(&self.inner.fill_buf()?[..ready]);
            }
            let chunk = self.inner.fill_buf()?;
            if chunk.is_empty() {
                return Ok(&[]);
            }
            let kept = self.filter.keep(chunk);
            if kept > 0 {
                self.ready = kept;
                continue;
            }
            let cut = self.filter.cut(chunk);
            if cut.consume == 0 {
                // `keep` passes markup whole, so this is a defect; the report is
                // then read as cut short (incomplete, never green), not looped on
                return Err(std::io::Error::other(
                    "junit text filter made no progress (a loopexec defect)",
                ));
            }
            self.inner.consume(cut.consume);
            self.put_back = cut.put_back;
            self.put_pos = 0;
        }
    }

    fn consume(&mut self, amt: usize) {
        if self.put_pos < self.put_back.len() {
            self.put_pos = (self.put_pos + amt).min(self.put_back.len());
            return;
        }
        let amt = amt.min(self.ready);
        self.inner.consume(amt);
        self.ready -= amt;
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

    /// `input` read through the filter `cap` bytes at a time (the reader's
    /// `fill_buf`/`consume`, as the XML reader uses it).
    fn filter_by(input: &[u8], cap: usize) -> Vec<u8> {
        let mut r = LimitText::new(std::io::BufReader::with_capacity(cap, input));
        let mut out = Vec::new();
        loop {
            let buf = r.fill_buf().expect("reads");
            if buf.is_empty() {
                return out;
            }
            // consume part of what is offered, as a reader stopping at a `<` does
            let n = buf.len().min(cap.max(3) / 3 + 1);
            out.extend_from_slice(&buf[..n]);
            r.consume(n);
        }
    }

    /// The filter's rules byte by byte over the whole input: the model the
    /// streaming filter must match at any read size.
    fn model(input: &[u8]) -> Vec<u8> {
        #[derive(Clone, Copy)]
        enum S {
            Text(usize),
            Tag(Option<u8>),
            Block(usize, u8),
        }
        let mut out = Vec::new();
        let mut block = Vec::new();
        let mut s = S::Text(0);
        let mut i = 0;
        while i < input.len() {
            let b = input[i];
            s = match s {
                S::Text(_) if b == b'<' => {
                    let rest = &input[i..];
                    let opener = [(CDATA, b']'), (COMMENT, b'-')]
                        .into_iter()
                        .find(|(o, _)| rest.starts_with(o));
                    if let Some((o, close)) = opener {
                        out.extend_from_slice(o);
                        i += o.len();
                        block.clear();
                        s = S::Block(0, close);
                        continue;
                    }
                    out.push(b);
                    S::Tag(None)
                }
                S::Text(run) => {
                    if run < TEXT_LIMIT {
                        out.push(b);
                    }
                    S::Text(run + 1)
                }
                S::Tag(q) => {
                    out.push(b);
                    match (q, b) {
                        (None, b'>') => S::Text(0),
                        (None, b'"' | b'\'') => S::Tag(Some(b)),
                        (Some(q), b) if q == b => S::Tag(None),
                        (q, _) => S::Tag(q),
                    }
                }
                S::Block(run, close) => {
                    if b == b'>' && block.ends_with(&[close, close]) {
                        for k in [run - 2, run - 1] {
                            if k >= TEXT_LIMIT {
                                out.push(close);
                            }
                        }
                        out.push(b);
                        S::Text(0)
                    } else {
                        if run < TEXT_LIMIT {
                            out.push(b);
                        }
                        block.push(b);
                        S::Block(run + 1, close)
                    }
                }
            };
            i += 1;
        }
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
            assert_eq!(
                filter_by(doc, cap),
                doc.to_vec(),
                "read {cap} bytes at a time"
            );
        }
    }

    #[test]
    fn long_runs_are_cut_and_markup_kept() {
        let big = "x".repeat(TEXT_LIMIT * 3);
        let doc = format!("<a>{big}</a><b><![CDATA[{big}]]></b><!--{big}-->");
        let out = String::from_utf8(filter(doc.as_bytes())).expect("utf8");
        let x = "x".repeat(TEXT_LIMIT);
        assert_eq!(out, format!("<a>{x}</a><b><![CDATA[{x}]]></b><!--{x}-->"));
    }

    /// A closing pair cut in two by the limit is put back whole, not doubled: the
    /// kept `]` stays, the dropped one returns (a comment's `--` must stay `--`).
    #[test]
    fn a_closing_pair_cut_at_the_limit_closes_once() {
        for close in [b']', b'-'] {
            let (open, end) = if close == b']' {
                ("<![CDATA[", "]]>")
            } else {
                ("<!--", "-->")
            };
            for before in [TEXT_LIMIT - 2, TEXT_LIMIT - 1, TEXT_LIMIT, TEXT_LIMIT + 5] {
                let doc = format!("{open}{}{end}<x/>", "y".repeat(before));
                let out = String::from_utf8(filter(doc.as_bytes())).expect("utf8");
                let kept = before.min(TEXT_LIMIT);
                assert_eq!(
                    out,
                    format!("{open}{}{end}<x/>", "y".repeat(kept)),
                    "{before} bytes before {end}"
                );
            }
        }
    }

    /// Generated documents (tags with quoted `>`, `<` and the other quote, blocks
    /// with near-miss closers, runs around the limit) read through the filter at
    /// several read sizes give what the byte-by-byte model gives.
    #[test]
    fn the_streaming_filter_matches_the_model_at_any_read_size() {
        let pieces: [&[u8]; 14] = [
            b"<a>",
            b"</a>",
            br#"<t name="x>y" k='it"s'>"#,
            br#"<t a="it's" b="c"/>"#,
            b"<t a='1' b='2'>",
            b"<![CDATA[ ]] ]> ]]]>",
            b"<!-- - -> --->",
            b"<!-x->",
            b"<!DOCTYPE r>",
            b"text &amp; more ",
            b"]]>",
            b"<![CDA",
            br#"<q x=""#,
            b"\"/>",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for doc_no in 0..24 {
            let mut doc = Vec::new();
            while doc.len() < 3 * TEXT_LIMIT {
                let r = next();
                match r % 20 {
                    // a run near the limit, as text, CDATA or a comment
                    0 => {
                        let len = TEXT_LIMIT - 3 + (r >> 8) as usize % 7;
                        let body = vec![b'z'; len];
                        match (r >> 16) % 3 {
                            0 => doc.extend_from_slice(&body),
                            1 => {
                                doc.extend_from_slice(CDATA);
                                doc.extend_from_slice(&body);
                                doc.extend_from_slice(b"]]>");
                            }
                            _ => {
                                doc.extend_from_slice(COMMENT);
                                doc.extend_from_slice(&body);
                                doc.extend_from_slice(b"-->");
                            }
                        }
                    }
                    k => doc.extend_from_slice(pieces[k as usize % pieces.len()]),
                }
            }
            let want = model(&doc);
            for cap in [1, 2, 3, 5, 64, 4096, 1 << 20] {
                if cap < 4 && doc_no % 6 != 0 {
                    continue; // byte-sized reads of every document take long
                }
                assert!(
                    filter_by(&doc, cap) == want,
                    "document {doc_no} read {cap} bytes at a time differs from the model"
                );
            }
        }
    }
}
