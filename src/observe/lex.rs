//! Small per-language lexers that blank out comments and string literals.
//!
//! Owns [`Lang`] (the languages the guards understand) and [`mask`], which returns a
//! copy of a source text of the *same byte length* where every byte inside a comment
//! or a string/char literal is replaced by an ASCII space (newlines kept; a literal's
//! first and last byte become `"`). Byte offsets and line numbers therefore carry over unchanged, and
//! pattern matching on the masked text only sees code.
//!
//! The lexers are deliberately small: they know each language's comment forms and
//! literal forms (listed on [`mask`]) and nothing else. An unterminated literal or
//! comment runs to the end of the text (Rust, Go block comments and raw strings) or to
//! the end of its line (single-line string forms), which errs on the side of hiding
//! text rather than counting it.

use serde::{Deserialize, Serialize};

/// A source language recognised by the guards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lang {
    /// `.rs`
    Rust,
    /// `.py`, `.pyi`
    Python,
    /// JavaScript and TypeScript: `.js .jsx .mjs .cjs .ts .tsx .mts .cts`
    JsTs,
    /// `.go`
    Go,
    /// Shell scripts: `.sh`, `.bash`
    Shell,
    /// Perl modules and scripts (`.pm`, `.pl`): scanned by the tamper rules only.
    Perl,
    /// Anything else (a user-declared test file in another language).
    Other,
}

impl Lang {
    /// The language of a path by its extension ([`Lang::Other`] when unknown).
    #[must_use]
    pub fn from_path(path: &str) -> Lang {
        let name = path.rsplit('/').next().unwrap_or(path);
        let ext = match name.rfind('.') {
            Some(i) if i > 0 => &name[i + 1..],
            _ => return Lang::Other,
        };
        match ext {
            "rs" => Lang::Rust,
            "py" | "pyi" => Lang::Python,
            "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" => Lang::JsTs,
            "go" => Lang::Go,
            "sh" | "bash" => Lang::Shell,
            "pm" | "pl" => Lang::Perl,
            _ => Lang::Other,
        }
    }

    /// Stable lower-case name (`rust`, `python`, `js_ts`, `go`, `other`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::JsTs => "js_ts",
            Lang::Go => "go",
            Lang::Shell => "shell",
            Lang::Perl => "perl",
            Lang::Other => "other",
        }
    }
}

/// Returns `src` with comments and string literals blanked (see the module doc).
///
/// Comments become spaces; a literal becomes spaces between two `"` marks (its first
/// and last byte), so it still reads as an operand.
///
/// Forms recognised:
/// * Rust: `//`, nested `/* */`; `"…"` with escapes, `b"…"`, raw `r#"…"#` / `br"…"`;
///   char literals `'x'`, `'\n'`, `'\u{..}'` (a `'` not closing within a char is a
///   lifetime and stays code).
/// * Python: `#`; `'…'`, `"…"`, and triple-quoted `'''…'''`, `"""…"""` (any prefix).
/// * JS/TS: `//`, `/* */`; `'…'`, `"…"`; template literals `` `…` `` whose `${…}`
///   parts stay code; regular-expression literals where a `/` cannot be division.
/// * Go: `//`, `/* */`; `"…"`, raw `` `…` ``, runes `'x'`.
/// * Shell: `#` comments only (a `#` that starts a word outside quotes); strings stay,
///   since what a script prints is what its rules look for.
/// * Other: nothing is blanked.
#[must_use]
pub fn mask(lang: Lang, src: &str) -> String {
    let bytes = src.as_bytes();
    let mut out = bytes.to_vec();
    match lang {
        Lang::Rust => mask_rust(bytes, &mut out),
        Lang::Python => mask_python(bytes, &mut out),
        Lang::JsTs => mask_js(bytes, &mut out),
        Lang::Go => mask_go(bytes, &mut out),
        Lang::Shell => mask_shell(bytes, &mut out),
        Lang::Perl | Lang::Other => {}
    }
    // Only whole multi-byte characters are ever blanked (regions start and end at
    // ASCII delimiters), so this conversion is lossless; lossy as a safety net.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `text` split into lines the way `lang` splits them, for scanners that read by `\n`:
/// Python also ends a line at a lone `\r` (its tokenizer reads `\r\n`, `\r` and
/// `\n` alike), JavaScript/TypeScript at a lone `\r`, U+2028 and U+2029 (ECMAScript's
/// line terminators). Rust, Go, shell and Perl end a line comment only at `\n`, so
/// their text is read as it is. Returns the text with each such line end turned into
/// `\n` and, for each of its lines, the 0-based index of the `\n`-line it starts on
/// (what `git diff` and an editor's line count show); `None` when `text` holds none
/// (a `\r\n` file included).
#[must_use]
pub fn language_lines(lang: Lang, text: &str) -> Option<(String, Vec<usize>)> {
    if !matches!(lang, Lang::Python | Lang::JsTs) {
        return None;
    }
    let extra = |c: char, next: Option<char>| match c {
        '\r' => next != Some('\n'),
        '\u{2028}' | '\u{2029}' => lang == Lang::JsTs,
        _ => false,
    };
    let mut chars = text.chars().peekable();
    let mut out = String::with_capacity(text.len());
    let mut map = vec![0];
    let mut physical = 0;
    let mut changed = false;
    while let Some(c) = chars.next() {
        if c == '\n' {
            physical += 1;
            out.push('\n');
            map.push(physical);
        } else if extra(c, chars.peek().copied()) {
            changed = true;
            out.push('\n');
            map.push(physical);
        } else {
            out.push(c);
        }
    }
    changed.then_some((out, map))
}

/// Blanks a comment: every byte but newlines becomes a space.
fn blank(out: &mut [u8], from: usize, to: usize) {
    let to = to.min(out.len());
    for b in out.iter_mut().take(to).skip(from) {
        if *b != b'\n' {
            *b = b' ';
        }
    }
}

/// Blanks a literal like a comment, then marks its first and last byte with `"` (when
/// they are not newlines), so the literal still reads as an operand: `x = "…" + y`
/// masks to `x = "   " + y`, never to an empty expression.
fn blank_literal(out: &mut [u8], from: usize, to: usize) {
    blank(out, from, to);
    let to = to.min(out.len());
    if from < to {
        for k in [from, to - 1] {
            if out[k] == b' ' {
                out[k] = b'"';
            }
        }
    }
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// End (exclusive) of a line comment starting at `i`.
fn line_end(s: &[u8], i: usize) -> usize {
    s[i..]
        .iter()
        .position(|b| *b == b'\n')
        .map_or(s.len(), |p| i + p)
}

/// End (exclusive) of a quoted literal opened at `i` by `q`, honouring backslash
/// escapes; stops at a newline when `single_line`.
fn quoted_end(s: &[u8], i: usize, q: u8, single_line: bool) -> usize {
    let mut j = i + 1;
    while j < s.len() {
        match s[j] {
            b'\\' => j += 2,
            b'\n' if single_line => return j,
            c if c == q => return j + 1,
            _ => j += 1,
        }
    }
    s.len()
}

/// End (exclusive) of a block comment opened at `i` (`/*`), nested when `nested`.
fn block_comment_end(s: &[u8], i: usize, nested: bool) -> usize {
    let mut depth = 1usize;
    let mut j = i + 2;
    while j < s.len() {
        if s[j] == b'*' && s.get(j + 1) == Some(&b'/') {
            depth -= 1;
            j += 2;
            if depth == 0 {
                return j;
            }
        } else if nested && s[j] == b'/' && s.get(j + 1) == Some(&b'*') {
            depth += 1;
            j += 2;
        } else {
            j += 1;
        }
    }
    s.len()
}

fn utf8_len(b: u8) -> usize {
    match b {
        0xF0..=0xFF => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

fn mask_rust(s: &[u8], out: &mut [u8]) {
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let prev_ident = i > 0 && is_ident(s[i - 1]);
        let next = s.get(i + 1).copied();
        if c == b'/' && next == Some(b'/') {
            let e = line_end(s, i);
            blank(out, i, e);
            i = e;
        } else if c == b'/' && next == Some(b'*') {
            let e = block_comment_end(s, i, true);
            blank(out, i, e);
            i = e;
        } else if c == b'"' {
            let e = quoted_end(s, i, b'"', false);
            blank_literal(out, i, e);
            i = e;
        } else if !prev_ident && (c == b'r' || (c == b'b' && next == Some(b'r'))) {
            // Possible raw string: r"…", r#"…"#, br"…".
            let start = if c == b'b' { i + 1 } else { i };
            let mut j = start + 1;
            let mut hashes = 0;
            while s.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if s.get(j) == Some(&b'"') {
                let mut k = j + 1;
                let mut end = s.len();
                while k < s.len() {
                    if s[k] == b'"'
                        && s[k + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|b| **b == b'#')
                            .count()
                            == hashes
                    {
                        end = k + 1 + hashes;
                        break;
                    }
                    k += 1;
                }
                blank_literal(out, i, end);
                i = end;
            } else {
                i += 1;
            }
        } else if c == b'\'' {
            // Char literal or lifetime.
            match next {
                Some(b'\\') => {
                    let from = (i + 3).min(s.len());
                    let close = s[from..].iter().take(12).position(|b| *b == b'\'');
                    match close {
                        Some(p) => {
                            let e = from + p + 1;
                            blank_literal(out, i, e);
                            i = e;
                        }
                        None => i += 1,
                    }
                }
                Some(n) => {
                    let l = utf8_len(n);
                    if s.get(i + 1 + l) == Some(&b'\'') {
                        blank_literal(out, i, i + 2 + l);
                        i += 2 + l;
                    } else {
                        i += 1;
                    }
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
}

fn mask_python(s: &[u8], out: &mut [u8]) {
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == b'#' {
            let e = line_end(s, i);
            blank(out, i, e);
            i = e;
        } else if c == b'"' || c == b'\'' {
            let triple = s.get(i + 1) == Some(&c) && s.get(i + 2) == Some(&c);
            let e = if triple {
                let mut j = i + 3;
                let mut end = s.len();
                while j < s.len() {
                    if s[j] == b'\\' {
                        j += 2;
                    } else if s[j] == c && s.get(j + 1) == Some(&c) && s.get(j + 2) == Some(&c) {
                        end = j + 3;
                        break;
                    } else {
                        j += 1;
                    }
                }
                end
            } else {
                quoted_end(s, i, c, true)
            };
            blank_literal(out, i, e);
            i = e;
        } else {
            i += 1;
        }
    }
}

fn mask_shell(s: &[u8], out: &mut [u8]) {
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        match quote {
            Some(q) if c == q => quote = None,
            Some(b'"') if c == b'\\' => i += 1,
            Some(_) => {}
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if c == b'\\' => i += 1,
            None if c == b'#' && (i == 0 || s[i - 1].is_ascii_whitespace()) => {
                let end = s[i..]
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(s.len(), |n| i + n);
                blank(out, i, end);
                i = end;
                continue;
            }
            None => {}
        }
        i += 1;
    }
}

fn mask_go(s: &[u8], out: &mut [u8]) {
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        let (e, literal) = if c == b'/' && next == Some(b'/') {
            (line_end(s, i), false)
        } else if c == b'/' && next == Some(b'*') {
            (block_comment_end(s, i, false), false)
        } else if c == b'"' || c == b'\'' {
            (quoted_end(s, i, c, true), true)
        } else if c == b'`' {
            (
                s[i + 1..]
                    .iter()
                    .position(|b| *b == b'`')
                    .map_or(s.len(), |p| i + 1 + p + 1),
                true,
            )
        } else {
            i += 1;
            continue;
        };
        if literal {
            blank_literal(out, i, e);
        } else {
            blank(out, i, e);
        }
        i = e;
    }
}

/// True when a `/` at `i` starts a regular expression (not a division), judged by the
/// previous significant code byte or keyword.
fn js_regex_allowed(s: &[u8], out: &[u8], i: usize) -> bool {
    let mut j = i;
    while j > 0 && out[j - 1].is_ascii_whitespace() {
        j -= 1;
    }
    if j == 0 {
        return true;
    }
    let p = out[j - 1];
    if is_ident(p) {
        let mut k = j;
        while k > 0 && is_ident(out[k - 1]) {
            k -= 1;
        }
        let word = &s[k..j];
        return matches!(
            word,
            b"return"
                | b"typeof"
                | b"case"
                | b"in"
                | b"of"
                | b"new"
                | b"delete"
                | b"void"
                | b"throw"
                | b"yield"
                | b"await"
                | b"instanceof"
        );
    }
    !matches!(p, b')' | b']' | b'}' | b'"' | b'\'' | b'`' | b' ')
}

fn js_regex_end(s: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    let mut in_class = false;
    while j < s.len() {
        match s[j] {
            b'\n' => return None,
            b'\\' => j += 2,
            b'[' => {
                in_class = true;
                j += 1;
            }
            b']' => {
                in_class = false;
                j += 1;
            }
            b'/' if !in_class => {
                j += 1;
                while j < s.len() && s[j].is_ascii_alphabetic() {
                    j += 1;
                }
                return Some(j);
            }
            _ => j += 1,
        }
    }
    None
}

fn mask_js(s: &[u8], out: &mut [u8]) {
    // Stack of brace depths of open `${` template substitutions.
    let mut templates: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == b'/' && next == Some(b'/') {
            let e = line_end(s, i);
            blank(out, i, e);
            i = e;
        } else if c == b'/' && next == Some(b'*') {
            let e = block_comment_end(s, i, false);
            blank(out, i, e);
            i = e;
        } else if c == b'"' || c == b'\'' {
            let e = quoted_end(s, i, c, true);
            blank_literal(out, i, e);
            i = e;
        } else if c == b'`' || (c == b'}' && templates.last() == Some(&depth)) {
            // Start of a template, or the end of a `${…}` resuming one.
            if c == b'}' {
                templates.pop();
            }
            let mut j = i + 1;
            let mut end = s.len();
            let mut resumes_code = false;
            while j < s.len() {
                match s[j] {
                    b'\\' => j += 2,
                    b'`' => {
                        end = j + 1;
                        break;
                    }
                    b'$' if s.get(j + 1) == Some(&b'{') => {
                        end = j + 2;
                        resumes_code = true;
                        break;
                    }
                    _ => j += 1,
                }
            }
            blank_literal(out, i, end);
            if resumes_code {
                depth += 1;
                templates.push(depth);
            }
            i = end;
        } else if c == b'/' && js_regex_allowed(s, out, i) {
            match js_regex_end(s, i) {
                Some(e) => {
                    blank_literal(out, i, e);
                    i = e;
                }
                None => i += 1,
            }
        } else {
            if c == b'{' {
                depth += 1;
            } else if c == b'}' {
                depth = depth.saturating_sub(1);
            }
            i += 1;
        }
    }
}

/// Rust source with its layout removed: outside string, char and comment literals a
/// run of whitespace is dropped, or kept as one space where the tokens on either
/// side would fuse without it (two words, `a b`; two operator characters, `& &` is
/// not `&&`; a word before a quote, `b "x"` is not `b"x"`). Two files with the same
/// form differ only in layout, which changes nothing `rustc` compiles (`cargo fmt`'s
/// whole effect on a test file). String
/// literals (`"…"` with escapes, raw `r#"…"#`, byte strings) and char literals are kept
/// byte for byte, whitespace included: `"a b"` and `"ab"` differ. Comments are kept
/// with their whitespace removed (a reflowed comment is layout too). A `'` that does
/// not close a char literal is a lifetime and stays code.
#[must_use]
pub fn rust_layout_free(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        // line comment: its end is kept (the newline is what ends it: joining the
        // next line onto it comments that line out)
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                if !b[i].is_ascii_whitespace() {
                    out.push(b[i]);
                }
                i += 1;
            }
            out.push(b'\n');
            continue;
        }
        // block comment (nested)
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0usize;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend_from_slice(b"/*");
                    i += 2;
                    continue;
                }
                if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend_from_slice(b"*/");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                    continue;
                }
                if !b[i].is_ascii_whitespace() {
                    out.push(b[i]);
                }
                i += 1;
            }
            continue;
        }
        // raw string: r"…", r#"…"#, br"…", cr"…" (an identifier ending in r is not one)
        let prev_ident = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        let prefixed = matches!(c, b'b' | b'c') && b.get(i + 1) == Some(&b'r');
        if !prev_ident && (c == b'r' || prefixed) {
            let start = if prefixed { i + 2 } else { i + 1 };
            let mut j = start;
            while b.get(j) == Some(&b'#') {
                j += 1;
            }
            if b.get(j) == Some(&b'"') {
                let hashes = j - start;
                let mut k = j + 1;
                let close = |k: usize| {
                    b.get(k) == Some(&b'"') && (1..=hashes).all(|h| b.get(k + h) == Some(&b'#'))
                };
                while k < b.len() && !close(k) {
                    k += 1;
                }
                let end = (k + 1 + hashes).min(b.len());
                out.extend_from_slice(&b[i..end]);
                i = end;
                continue;
            }
        }
        // string (and byte string)
        if c == b'"' {
            let mut k = i + 1;
            while k < b.len() && b[k] != b'"' {
                k += if b[k] == b'\\' { 2 } else { 1 };
            }
            let end = (k + 1).min(b.len());
            out.extend_from_slice(&b[i..end]);
            i = end;
            continue;
        }
        // char literal: 'x', '\n', '\u{..}' (else a lifetime)
        if c == b'\'' {
            let close = if b.get(i + 1) == Some(&b'\\') {
                (i + 2..b.len().min(i + 12)).find(|&k| b[k] == b'\'')
            } else {
                let len = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 1 + len)
            };
            if let Some(k) = close {
                out.extend_from_slice(&b[i..=k]);
                i = k + 1;
                continue;
            }
        }
        if c.is_ascii_whitespace() {
            // a run of whitespace between two tokens that would fuse without it
            // (`a b`, `& &`, `b "x"`) is kept as one space; any other is layout
            let mut k = i;
            while k < b.len() && b[k].is_ascii_whitespace() {
                k += 1;
            }
            let word = |x: u8| x.is_ascii_alphanumeric() || x == b'_' || x >= 0x80;
            let op = |x: u8| x.is_ascii_punctuation() && !b"()[]{},;\"'".contains(&x);
            if let (Some(&p), Some(&n)) = (out.last(), b.get(k)) {
                if (word(p) && (word(n) || n == b'"' || n == b'\'')) || (op(p) && op(n)) {
                    out.push(b' ');
                }
            }
            i = k;
            continue;
        }
        out.push(c);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Go source with its layout removed, as [`rust_layout_free`] does for Rust. Go ends a
/// statement at a line break after an identifier, a literal, `break`, `continue`,
/// `fallthrough`, `return`, `++`, `--`, `)`, `]` or `}` (the spec's automatic
/// semicolons), so such a break becomes `;` and every other one is layout; a `;`
/// before `)` or `}` is optional and dropped. Two files with the same form differ
/// only in what `gofmt` changes: indentation, alignment, spaces around operators,
/// blank lines, a one-line block written over three. Interpreted strings (`"…"` with
/// escapes), raw strings (`` `…` ``, across lines) and rune literals (`'…'`) are kept
/// byte for byte; comments with their whitespace removed.
#[must_use]
pub fn go_layout_free(src: &str) -> String {
    // keywords after which a line break inserts no semicolon
    const NO_SEMICOLON: &[&str] = &[
        "case",
        "chan",
        "const",
        "default",
        "defer",
        "else",
        "for",
        "func",
        "go",
        "goto",
        "if",
        "import",
        "interface",
        "map",
        "package",
        "range",
        "select",
        "struct",
        "switch",
        "type",
        "var",
    ];
    let b = src.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    // a line break here ends the statement
    let mut ends = false;
    let line_break = |out: &mut Vec<u8>, ends: &mut bool| {
        if std::mem::take(ends) {
            out.push(b';');
        }
    };
    let word = |x: u8| x.is_ascii_alphanumeric() || x == b'_' || x >= 0x80;
    let op = |x: u8| x.is_ascii_punctuation() && !b"()[]{},;\"'`".contains(&x);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            let end = src[i..].find('\n').map_or(b.len(), |k| i + k);
            line_break(&mut out, &mut ends);
            out.extend(b[i..end].iter().filter(|x| !x.is_ascii_whitespace()));
            out.push(b'\n');
            i = end;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let end = src[i + 2..].find("*/").map_or(b.len(), |k| i + 2 + k + 2);
            if b[i..end].contains(&b'\n') {
                line_break(&mut out, &mut ends);
            }
            out.extend(b[i..end].iter().filter(|x| !x.is_ascii_whitespace()));
            i = end;
            continue;
        }
        if c == b'`' || c == b'"' || c == b'\'' {
            let mut k = i + 1;
            while k < b.len() && b[k] != c && (c == b'`' || b[k] != b'\n') {
                k += if b[k] == b'\\' && c != b'`' { 2 } else { 1 };
            }
            let end = (k + 1).min(b.len());
            if out.last().copied().is_some_and(word) {
                out.push(b' ');
            }
            out.extend_from_slice(&b[i..end]);
            ends = true;
            i = end;
            continue;
        }
        if c.is_ascii_whitespace() {
            let mut k = i;
            while k < b.len() && b[k].is_ascii_whitespace() {
                k += 1;
            }
            if b[i..k].contains(&b'\n') {
                line_break(&mut out, &mut ends);
            }
            // two tokens that would fuse without the space keep one
            if let (Some(&p), Some(&n)) = (out.last(), b.get(k)) {
                if (word(p) && word(n)) || (op(p) && op(n)) {
                    out.push(b' ');
                }
            }
            i = k;
            continue;
        }
        if word(c) {
            let mut k = i;
            while k < b.len() && word(b[k]) {
                k += 1;
            }
            out.extend_from_slice(&b[i..k]);
            ends = !NO_SEMICOLON.contains(&&src[i..k]);
            i = k;
            continue;
        }
        if (c == b'+' || c == b'-') && b.get(i + 1) == Some(&c) {
            out.extend_from_slice(&b[i..i + 2]);
            ends = true;
            i += 2;
            continue;
        }
        out.push(c);
        ends = matches!(c, b')' | b']' | b'}');
        i += 1;
    }
    line_break(&mut out, &mut ends);
    // `;` before a closing bracket is optional
    let mut form = Vec::with_capacity(out.len());
    for (j, &x) in out.iter().enumerate() {
        let next = out[j + 1..].iter().find(|y| !y.is_ascii_whitespace());
        if x == b';' && matches!(next, Some(b')' | b'}')) {
            continue;
        }
        form.push(x);
    }
    String::from_utf8_lossy(&form).into_owned()
}

#[cfg(test)]
mod tests {

    /// What gofmt changes keeps the form; a line break, a literal or the code does not
    /// (old, new, same form).
    #[test]
    fn go_layout_free_table() {
        let rows: &[(&str, &str, bool)] = &[
            (
                "func TestAdd(t *testing.T) {\n  if add(2,3) != 5 {\n    t.Fatal(\"x\")\n  }\n}\n",
                "func TestAdd(t *testing.T) {\n\tif add(2, 3) != 5 {\n\t\tt.Fatal(\"x\")\n\t}\n}\n",
                true,
            ),
            (
                "x := 1 // note\n\n\ny := 2\n",
                "x := 1   //   note\ny := 2\n",
                true,
            ),
            // gofmt writes a one-line block over three lines
            (
                "if Add(0, 0) != 0 { t.Fatal(\"zero\") }\n",
                "if Add(0, 0) != 0 {\n\tt.Fatal(\"zero\")\n}\n",
                true,
            ),
            ("i++\nj--\n", "i++; j--\n", true),
            ("s := \"a b\"\n", "s := \"ab\"\n", false),
            ("s := `a\n b`\n", "s := `a\nb`\n", false),
            ("return\nx\n", "return x\n", false),
            ("if a != 5 {", "if a != 6 {", false),
            ("x := a - -b", "x := a--b", false),
        ];
        for (old, new, same) in rows {
            assert_eq!(
                super::go_layout_free(old) == super::go_layout_free(new),
                *same,
                "{old:?} vs {new:?}"
            );
        }
    }

    /// Layout-only changes keep the form; a change inside a literal or to the code
    /// does not.
    #[test]
    fn rust_layout_free_table() {
        // (old, new, same form)
        let rows: &[(&str, &str, bool)] = &[
            (
                "#[test]\nfn t() { assert_eq!(add(2,3),5); }\n",
                "#[test]\nfn t() {\n    assert_eq!(add(2, 3), 5);\n}\n",
                true,
            ),
            ("let s = \"a b\";", "let s = \"ab\";", false),
            ("let s = r#\"a \" b\"#;", "let s = r#\"a \"  b\"#;", false),
            ("let c = ' ';", "let c = '\t';", false),
            ("fn f<'a>(x: &'a str) {}", "fn f<'a>(x: &'a  str) {}", true),
            ("    // a note\n    x();", "// a note\nx();", true),
            (
                "// a long\n// comment\nx();",
                "// a long comment\nx();",
                false,
            ),
            ("assert!(a & &b);", "assert!(a && b);", false),
            // second fresh review: a line joined onto a comment is commented out
            (
                "assert!(true // (sum)\n    && add(2, 3) == 5);",
                "assert!(true // (sum) && add(2, 3) == 5);",
                false,
            ),
            (
                "(0, 0, 0), // (zero)\n(2, 3, 5),",
                "(0, 0, 0), // (zero) (2, 3, 5),",
                false,
            ),
            (
                "let s = cr\"a\\\";\nlet t = \"x y\";",
                "let s = cr\"a\\\";\nlet t = \"x  y\";",
                false,
            ),
            ("let x = a+b;", "let x = a + b;", true),
            ("let s = b \"x\";", "let s = b\"x\";", false),
            ("assert_eq!(f(), 5);", "assert_eq!(f(), 6);", false),
            ("let s = \"\\\" a\";", "let s = \"\\\"  a\";", false),
            ("for_ r in x {}", "for_r in x {}", false),
        ];
        for (old, new, same) in rows {
            assert_eq!(
                rust_layout_free(old) == rust_layout_free(new),
                *same,
                "{old:?} vs {new:?}"
            );
        }
    }
    use super::*;

    #[test]
    fn lang_by_extension() {
        assert_eq!(Lang::from_path("src/a.rs"), Lang::Rust);
        assert_eq!(Lang::from_path("x/test_a.py"), Lang::Python);
        assert_eq!(Lang::from_path("a.test.tsx"), Lang::JsTs);
        assert_eq!(Lang::from_path("a_test.go"), Lang::Go);
        assert_eq!(Lang::from_path(".rs"), Lang::Other);
        assert_eq!(Lang::from_path("Makefile"), Lang::Other);
    }

    #[test]
    fn rust_mask_keeps_length_and_hides_comments_strings_chars() {
        let src = "let s = \"assert!(x)\"; // assert!(y)\n/* a /* nested */ assert! */ let c = '\"'; let q = '\\''; fn f<'a>(x: &'a str) {}\nlet r = r#\"assert!\"#; let é = 1;";
        let m = mask(Lang::Rust, src);
        assert_eq!(m.len(), src.len());
        assert!(!m.contains("assert"), "{m}");
        assert!(m.contains("fn f<'a>(x: &'a str)"), "{m}");
        assert!(m.contains("let é = 1;"));
        assert_eq!(m.lines().count(), src.lines().count());
    }

    #[test]
    fn python_mask_handles_triple_quotes_and_hash_in_string() {
        let src = "x = '# not a comment'  # assert x\ns = \"\"\"\nassert y\n\"\"\"\nassert z\n";
        let m = mask(Lang::Python, src);
        assert_eq!(m.matches("assert").count(), 1);
        assert!(m.contains("assert z"));
        assert_eq!(m.lines().count(), src.lines().count());
    }

    #[test]
    fn js_mask_templates_and_regexes() {
        let src = "const a = `expect(${expect(1)})`; const r = /expect\\(/g; const d = a / 2 / 1; // expect(x)\n";
        let m = mask(Lang::JsTs, src);
        assert_eq!(m.matches("expect").count(), 1, "{m}");
        assert!(m.contains("a / 2 / 1"), "{m}");
    }

    #[test]
    fn go_mask_raw_strings_and_runes() {
        let src = "s := `t.Errorf(\"x\")`\nr := '\"'\nt.Errorf(\"y\") /* t.Fatal() */\n";
        let m = mask(Lang::Go, src);
        assert_eq!(m.matches("t.Errorf").count(), 1);
        assert!(!m.contains("Fatal"));
    }

    /// Each language's own line ends: (lang, text, lines as the language reads them,
    /// the `\n`-line each starts on); `None` when `\n` already splits it.
    #[test]
    fn lines_are_split_where_the_language_ends_them() {
        type Row = (Lang, &'static str, Option<(&'static str, &'static [usize])>);
        let rows: &[Row] = &[
            (Lang::Python, "a\rb\n", Some(("a\nb\n", &[0, 0, 1]))),
            (
                Lang::Python,
                "# c\rx = 1\ny\rz",
                Some(("# c\nx = 1\ny\nz", &[0, 0, 1, 1])),
            ),
            // a CRLF file, and an LF one, are already split
            (Lang::Python, "a\r\nb\r\n", None),
            (Lang::Python, "a\nb\n", None),
            // U+2028 is no line end in Python (only in its strings' splitlines)
            (Lang::Python, "a\u{2028}b\n", None),
            (
                Lang::JsTs,
                "// k\u{2028}x();\n",
                Some(("// k\nx();\n", &[0, 0, 1])),
            ),
            (
                Lang::JsTs,
                "a\u{2029}b\rc\r\nd",
                Some(("a\nb\nc\r\nd", &[0, 0, 0, 1])),
            ),
            (Lang::JsTs, "a\r\nb", None),
            // a comment ends only at `\n` in these
            (Lang::Rust, "// a\rb\n", None),
            (Lang::Go, "// a\u{2028}b\n", None),
            (Lang::Shell, "# a\rb\n", None),
        ];
        for (lang, text, want) in rows {
            let got = language_lines(*lang, text);
            assert_eq!(
                got.as_ref().map(|(t, m)| (t.as_str(), m.as_slice())),
                *want,
                "{lang:?} {text:?}"
            );
        }
    }
}
