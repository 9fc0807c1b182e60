//! The doctor's adequacy canaries: small deliberate bugs planted on changed lines.
//!
//! A check that stays green when a changed line is broken cannot tell whether that
//! line is right (`check_inadequate`). This module finds the changed lines
//! ([`changed_lines`]), plans mutants on them ([`mutants_for`]) and writes one into an
//! isolated copy of the tree ([`apply`]); running the check and judging is the lead's.
//!
//! Operators (see [`Operator`]), applied to code only (comments and string literals
//! are blanked first by [`crate::observe::lex::mask`]), for Rust, Python, JS/TS and Go
//! files chosen by extension:
//! * flip a comparison: `==`↔`!=`, `===`↔`!==`, `<`→`>=`, `<=`→`>`, `>`→`<=`,
//!   `>=`→`<`; `<`/`>` only when spaced on both sides (so generics, `->`, `=>`, `<-`,
//!   shifts and JSX are left alone);
//! * negate a condition: `if c` → `if !(c)` (Rust, Go; after a Go init statement's
//!   `;`), `if (c)` → `if (!(c))` (JS/TS), `if c:` → `if not (c):` (Python); also
//!   `while` and Python's `elif`; Rust `if let`/`while let` are skipped;
//! * swap a boolean literal: `true`↔`false` (`True`↔`False` in Python);
//! * replace a returned value: Python `return None`, JS/TS `return null`, Rust
//!   `return None` for `Some(..)` and `return Default::default()` otherwise except
//!   `Ok(..)`/`Err(..)`; Go has no type-free zero value and Rust tail expressions are
//!   not recognised, so neither is mutated by this operator;
//! * swap binary `+`↔`-` (also `+=`↔`-=`; unary signs, `++`, `--`, `->` and exponents
//!   are left alone; in Rust a `+` before a capitalised name or lifetime is a trait
//!   bound and left alone);
//! * off by one: a decimal integer literal `n` → `n+1` (integer suffixes such as
//!   `u32` or JS `n` kept; floats, hex, tuple fields and leading-zero literals skipped).
//!
//! Selection rule (deterministic): on each line, candidates are ordered by operator
//! (the order above, with return replacement first) then by column, and duplicates of
//! the same mutated line dropped. Lines are visited in ascending order in rounds:
//! round k takes each line's k-th candidate, until [`MAX_MUTANTS_PER_FILE`] are taken.
//! So every changed line gets one mutant before any gets a second, and earlier lines
//! win when the cap is reached. The result is sorted by line, then candidate order.

use super::git::{self, GitError, EXCLUDE_LOOPEXEC};
use super::lex::{mask, Lang};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

/// At most this many mutants are planned per file (selection rule in the module doc).
pub const MAX_MUTANTS_PER_FILE: usize = 20;

/// A mutation operator, in selection priority order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Operator {
    /// The returned value replaced by the language's empty value.
    ReplaceReturn,
    /// A comparison operator replaced by its complement.
    FlipComparison,
    /// An `if`/`while` condition negated.
    NegateCondition,
    /// `true` and `false` swapped.
    SwapBoolean,
    /// Binary `+` and `-` swapped.
    SwapArithmetic,
    /// An integer literal increased by one.
    OffByOne,
}

impl Operator {
    /// Stable snake_case name (as serialised).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::ReplaceReturn => "replace_return",
            Operator::FlipComparison => "flip_comparison",
            Operator::NegateCondition => "negate_condition",
            Operator::SwapBoolean => "swap_boolean",
            Operator::SwapArithmetic => "swap_arithmetic",
            Operator::OffByOne => "off_by_one",
        }
    }
}

/// One planned mutant: a single line of a single file replaced.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Mutant {
    /// Repository-root relative path.
    pub file: String,
    /// 1-based line number.
    pub line: u32,
    /// What was done.
    pub operator: Operator,
    /// The line as it is (without its line terminator).
    pub original: String,
    /// The mutated line (without its line terminator).
    pub replacement: String,
}

/// Errors applying a mutant.
#[derive(Debug, thiserror::Error)]
pub enum MutateError {
    /// The mutant's path is absolute or leaves the root (`..`).
    #[error("mutant path {0:?} is not a plain relative path")]
    InvalidPath(String),
    /// Reading or writing the file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file is not UTF-8 text.
    #[error("{0} is not UTF-8 text")]
    NotUtf8(String),
    /// The file has fewer lines than the mutant's line number.
    #[error("{file} has no line {line}")]
    LineOutOfRange {
        /// The file.
        file: String,
        /// The missing line.
        line: u32,
    },
    /// The line no longer holds the original text (the copy differs from the plan).
    #[error("{file}:{line} changed: expected {expected:?}, found {found:?}")]
    LineMismatch {
        /// The file.
        file: String,
        /// The line.
        line: u32,
        /// The text the mutant was planned on.
        expected: String,
        /// The text found.
        found: String,
    },
}

/// Lines added or changed in the work tree since `diff_base` (any revision), by
/// repository-root relative path; line numbers are 1-based, ascending, in the
/// current file.
///
/// Tracked files (staged and unstaged alike) come from `git diff -U0 <base>`; files
/// git does not track and does not ignore count as entirely new. Deleted files,
/// pure deletions, binary files and `.loopexec/` have no lines.
pub fn changed_lines(dir: &Path, diff_base: &str) -> Result<BTreeMap<String, Vec<u32>>, GitError> {
    let root = git::require_root(dir)?;
    let out = git::run(git::git_cmd(&root).args([
        "diff",
        "-U0",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--ignore-submodules",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        diff_base,
        "--",
        ":/",
        EXCLUDE_LOOPEXEC,
    ]))?;
    let mut result = parse_unified_zero(&out);
    let untracked = git::run(git::git_cmd(&root).args([
        "ls-files",
        "-z",
        "--others",
        "--exclude-standard",
        "--",
        ":/",
        EXCLUDE_LOOPEXEC,
    ]))?;
    for rel in untracked.split(|b| *b == 0).filter(|s| !s.is_empty()) {
        let rel = String::from_utf8_lossy(rel).into_owned();
        let Ok(bytes) = std::fs::read(root.join(&rel)) else {
            continue;
        };
        if bytes.contains(&0) || bytes.is_empty() {
            continue;
        }
        let n =
            bytes.iter().filter(|b| **b == b'\n').count() + usize::from(!bytes.ends_with(b"\n"));
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        result.insert(rel, (1..=n).collect());
    }
    Ok(result)
}

/// Parses `git diff -U0` output into added/changed line numbers of the new side.
fn parse_unified_zero(out: &[u8]) -> BTreeMap<String, Vec<u32>> {
    let mut result: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in out.split(|b| *b == b'\n') {
        if let Some(rest) = line.strip_prefix(b"+++ ") {
            current = if rest == b"/dev/null" {
                None
            } else {
                let name = if rest.first() == Some(&b'"') {
                    unquote_c(rest)
                } else {
                    let r = rest.strip_suffix(b"\t").unwrap_or(rest);
                    String::from_utf8_lossy(r).into_owned()
                };
                name.strip_prefix("b/").map(str::to_string)
            };
        } else if line.starts_with(b"@@ ") {
            let Some(path) = &current else { continue };
            let text = String::from_utf8_lossy(line);
            let Some(plus) = text.split(' ').find(|t| t.starts_with('+')) else {
                continue;
            };
            let mut nums = plus[1..].splitn(2, ',');
            let start: u32 = nums.next().and_then(|s| s.parse().ok()).unwrap_or(0);
            let count: u32 = nums.next().map_or(Some(1), |s| s.parse().ok()).unwrap_or(0);
            if count > 0 {
                result
                    .entry(path.clone())
                    .or_default()
                    .extend(start..start.saturating_add(count));
            }
        }
    }
    result.retain(|_, v| !v.is_empty());
    for v in result.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    result
}

/// Undoes git's C-style quoting of a path (`"a\tb\303\251"`).
fn unquote_c(q: &[u8]) -> String {
    let inner = q.strip_prefix(b"\"").unwrap_or(q);
    let inner = inner.strip_suffix(b"\"").unwrap_or(inner);
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        if inner[i] == b'\\' && i + 1 < inner.len() {
            let c = inner[i + 1];
            let simple = match c {
                b'n' => Some(b'\n'),
                b't' => Some(b'\t'),
                b'r' => Some(b'\r'),
                b'a' => Some(7),
                b'b' => Some(8),
                b'f' => Some(12),
                b'v' => Some(11),
                b'\\' => Some(b'\\'),
                b'"' => Some(b'"'),
                _ => None,
            };
            if let Some(s) = simple {
                out.push(s);
                i += 2;
                continue;
            }
            let oct = &inner[i + 1..(i + 4).min(inner.len())];
            if oct.len() == 3 && oct.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let v = oct.iter().fold(0u32, |a, d| a * 8 + u32::from(d - b'0'));
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 4;
                continue;
            }
        }
        out.push(inner[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Plans mutants on `lines` (1-based) of `source`, the content of `path`.
///
/// Empty for files that are not Rust, Python, JS/TS or Go. At most
/// [`MAX_MUTANTS_PER_FILE`], chosen and ordered by the rule in the module doc.
#[must_use]
pub fn mutants_for(path: &str, source: &str, lines: &[u32]) -> Vec<Mutant> {
    let lang = Lang::from_path(path);
    if matches!(lang, Lang::Other | Lang::Shell | Lang::Perl) {
        return Vec::new();
    }
    let masked = mask(lang, source);
    let orig: Vec<&str> = source.split('\n').collect();
    let code: Vec<&str> = masked.split('\n').collect();
    let mut wanted: Vec<u32> = lines.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let mut per_line: Vec<(u32, Vec<(Operator, String)>)> = Vec::new();
    for ln in wanted {
        let idx = ln as usize;
        if idx == 0 || idx > orig.len() || idx > code.len() {
            continue;
        }
        let o = orig[idx - 1].strip_suffix('\r').unwrap_or(orig[idx - 1]);
        let m = code[idx - 1].get(..o.len()).unwrap_or(code[idx - 1]);
        if m.len() != o.len() {
            continue;
        }
        let mut cands = line_candidates(lang, o, m);
        cands.sort_by_key(|c| (c.0, c.1));
        let mut seen = std::collections::HashSet::new();
        let list: Vec<(Operator, String)> = cands
            .into_iter()
            .filter(|c| c.2 != o && seen.insert(c.2.clone()))
            .map(|c| (c.0, c.2))
            .collect();
        if !list.is_empty() {
            per_line.push((ln, list));
        }
    }
    let mut picked: Vec<(u32, usize)> = Vec::new();
    let mut round = 0;
    'outer: loop {
        let mut any = false;
        for (li, (_, list)) in per_line.iter().enumerate() {
            if round < list.len() {
                any = true;
                picked.push((u32::try_from(li).unwrap_or(u32::MAX), round));
                if picked.len() >= MAX_MUTANTS_PER_FILE {
                    break 'outer;
                }
            }
        }
        if !any {
            break;
        }
        round += 1;
    }
    picked.sort_unstable();
    picked
        .into_iter()
        .map(|(li, k)| {
            let (ln, list) = &per_line[li as usize];
            let (op, rep) = &list[k];
            Mutant {
                file: path.to_string(),
                line: *ln,
                operator: *op,
                original: orig[*ln as usize - 1]
                    .strip_suffix('\r')
                    .unwrap_or(orig[*ln as usize - 1])
                    .to_string(),
                replacement: rep.clone(),
            }
        })
        .collect()
}

/// `(operator, column, mutated line)` candidates for one line; `o` is the original
/// line and `m` the same line with comments and strings blanked (equal lengths).
fn line_candidates(lang: Lang, o: &str, m: &str) -> Vec<(Operator, usize, String)> {
    let mut c = Vec::new();
    if lang == Lang::Rust && m.trim_start().starts_with("#[") {
        return c;
    }
    replace_return(lang, o, m, &mut c);
    flip_comparisons(lang, o, m, &mut c);
    negate_condition(lang, o, m, &mut c);
    swap_booleans(lang, o, m, &mut c);
    swap_arithmetic(lang, o, m, &mut c);
    off_by_one(lang, o, m, &mut c);
    c
}

fn splice(o: &str, from: usize, to: usize, with: &str) -> Option<String> {
    Some(format!("{}{}{}", o.get(..from)?, with, o.get(to..)?))
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

fn balanced(s: &str) -> bool {
    let mut depth = 0i32;
    for b in s.bytes() {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    depth == 0
}

fn regex(cell: &'static OnceLock<Regex>, p: &str) -> &'static Regex {
    cell.get_or_init(|| {
        Regex::new(p).unwrap_or_else(|e| panic!("invalid built-in pattern {p}: {e}"))
    })
}

fn replace_return(lang: Lang, o: &str, m: &str, out: &mut Vec<(Operator, usize, String)>) {
    static RET: OnceLock<Regex> = OnceLock::new();
    let Some(k) = regex(&RET, r"\breturn\b").find(m) else {
        return;
    };
    let rest = &m[k.end()..];
    let expr_start = k.end() + (rest.len() - rest.trim_start().len());
    let mut expr_end = m.trim_end().len();
    if expr_end <= expr_start {
        return;
    }
    let semicolon = m[..expr_end].ends_with(';');
    match lang {
        Lang::Rust if !semicolon => return,
        Lang::Rust | Lang::JsTs if semicolon => expr_end -= 1,
        _ => {}
    }
    let expr = m[expr_start..expr_end].trim_end();
    let expr_end = expr_start + expr.len();
    if expr.is_empty()
        || !balanced(expr)
        || expr.contains(';')
        || expr.ends_with(['\\', ',', '+', '-', '('])
    {
        return;
    }
    let with = match lang {
        Lang::Python if expr != "None" => "None",
        Lang::JsTs if expr != "null" && expr != "undefined" => "null",
        Lang::Rust if expr.starts_with("Some(") || expr.starts_with("Some (") => "None",
        Lang::Rust
            if !(expr.starts_with("Ok(") || expr.starts_with("Err(") || expr == "None")
                && expr != "Default::default()" =>
        {
            "Default::default()"
        }
        _ => return,
    };
    if let Some(s) = splice(o, expr_start, expr_end, with) {
        out.push((Operator::ReplaceReturn, expr_start, s));
    }
}

fn flip_comparisons(lang: Lang, o: &str, m: &str, out: &mut Vec<(Operator, usize, String)>) {
    let b = m.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if !matches!(b[i], b'<' | b'>' | b'=' | b'!') {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && matches!(b[j], b'<' | b'>' | b'=' | b'!') {
            j += 1;
        }
        let run = &m[i..j];
        let spaced =
            i > 0 && b[i - 1].is_ascii_whitespace() && j < b.len() && b[j].is_ascii_whitespace();
        let to = match run {
            "==" => Some("!="),
            "!=" => Some("=="),
            "===" if lang == Lang::JsTs => Some("!=="),
            "!==" if lang == Lang::JsTs => Some("==="),
            "<" if spaced => Some(">="),
            "<=" if spaced => Some(">"),
            ">" if spaced => Some("<="),
            ">=" if spaced => Some("<"),
            _ => None,
        };
        if let Some(s) = to.and_then(|t| splice(o, i, j, t)) {
            out.push((Operator::FlipComparison, i, s));
        }
        i = j;
    }
}

fn negate_condition(lang: Lang, o: &str, m: &str, out: &mut Vec<(Operator, usize, String)>) {
    static PY: OnceLock<Regex> = OnceLock::new();
    static BRACE: OnceLock<Regex> = OnceLock::new();
    static JS: OnceLock<Regex> = OnceLock::new();
    let b = m.as_bytes();
    match lang {
        Lang::Python => {
            let Some(k) = regex(&PY, r"^\s*(?:if|elif|while)\b\s*").find(m) else {
                return;
            };
            let mut depth = 0i32;
            let mut end = None;
            for (i, &c) in b.iter().enumerate().skip(k.end()) {
                match c {
                    b'(' | b'[' | b'{' => depth += 1,
                    b')' | b']' | b'}' => depth -= 1,
                    b':' if depth == 0 && b.get(i + 1) != Some(&b'=') => {
                        end = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            let Some(end) = end else { return };
            let cond = m[k.end()..end].trim_end();
            if cond.is_empty() {
                return;
            }
            let ce = k.end() + cond.len();
            let with = format!("not ({})", &o[k.end()..ce]);
            if let Some(s) = splice(o, k.end(), ce, &with) {
                out.push((Operator::NegateCondition, k.end(), s));
            }
        }
        Lang::Rust | Lang::Go => {
            let Some(k) = regex(&BRACE, r"\b(?:if|while)\b\s*").find(m) else {
                return;
            };
            let mut start = k.end();
            if lang == Lang::Rust && m[start..].starts_with("let ") {
                return;
            }
            let mut depth = 0i32;
            let mut end = None;
            for (i, &c) in b.iter().enumerate().skip(start) {
                match c {
                    b'(' | b'[' => depth += 1,
                    b')' | b']' => depth -= 1,
                    b';' if depth == 0 && lang == Lang::Go => {
                        start = i + 1 + (m[i + 1..].len() - m[i + 1..].trim_start().len());
                    }
                    b'{' if depth == 0 => {
                        end = Some(i);
                        break;
                    }
                    _ => {}
                }
            }
            let Some(end) = end else { return };
            let cond = m.get(start..end).unwrap_or("").trim_end();
            if cond.is_empty() {
                return;
            }
            let ce = start + cond.len();
            let with = format!("!({})", &o[start..ce]);
            if let Some(s) = splice(o, start, ce, &with) {
                out.push((Operator::NegateCondition, start, s));
            }
        }
        Lang::JsTs => {
            let Some(k) = regex(&JS, r"\b(?:if|while)\s*\(").find(m) else {
                return;
            };
            let open = k.end() - 1;
            let mut depth = 0i32;
            let mut close = None;
            for (i, &c) in b.iter().enumerate().skip(open) {
                match c {
                    b'(' => depth += 1,
                    b')' => {
                        depth -= 1;
                        if depth == 0 {
                            close = Some(i);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let Some(close) = close else { return };
            if close <= open + 1 {
                return;
            }
            let with = format!("!({})", &o[open + 1..close]);
            if let Some(s) = splice(o, open + 1, close, &with) {
                out.push((Operator::NegateCondition, open + 1, s));
            }
        }
        Lang::Shell | Lang::Perl | Lang::Other => {}
    }
}

fn swap_booleans(lang: Lang, o: &str, m: &str, out: &mut Vec<(Operator, usize, String)>) {
    static LOWER: OnceLock<Regex> = OnceLock::new();
    static UPPER: OnceLock<Regex> = OnceLock::new();
    let re = if lang == Lang::Python {
        regex(&UPPER, r"\b(?:True|False)\b")
    } else {
        regex(&LOWER, r"\b(?:true|false)\b")
    };
    for k in re.find_iter(m) {
        let with = match k.as_str() {
            "true" => "false",
            "false" => "true",
            "True" => "False",
            _ => "True",
        };
        if let Some(s) = splice(o, k.start(), k.end(), with) {
            out.push((Operator::SwapBoolean, k.start(), s));
        }
    }
}

const NOT_OPERANDS: &[&str] = &[
    "return", "in", "not", "and", "or", "if", "else", "elif", "yield", "case", "await", "typeof",
    "of", "is", "lambda", "void", "delete", "throw", "new", "let", "const", "var", "mut", "as",
];

fn swap_arithmetic(lang: Lang, o: &str, m: &str, out: &mut Vec<(Operator, usize, String)>) {
    let b = m.as_bytes();
    for i in 0..b.len() {
        let c = b[i];
        if c != b'+' && c != b'-' {
            continue;
        }
        let next = b.get(i + 1).copied();
        let prev_adj = if i > 0 { Some(b[i - 1]) } else { None };
        if next == Some(c) || prev_adj == Some(c) || (c == b'-' && next == Some(b'>')) {
            continue;
        }
        // The previous significant byte must end an operand.
        let mut p = i;
        while p > 0 && b[p - 1].is_ascii_whitespace() {
            p -= 1;
        }
        if p == 0 {
            continue;
        }
        let pc = b[p - 1];
        if is_ident(pc) {
            let mut s = p;
            while s > 0 && is_ident(b[s - 1]) {
                s -= 1;
            }
            let word = &m[s..p];
            if NOT_OPERANDS.contains(&word) {
                continue;
            }
            // `1e-5`: an exponent sign, not a subtraction.
            if p == i && matches!(pc, b'e' | b'E') && b[s].is_ascii_digit() {
                continue;
            }
        } else if pc != b')' && pc != b']' {
            continue;
        }
        if lang == Lang::Rust && c == b'+' {
            let rest = m[i + 1..].trim_start();
            if rest.starts_with(|ch: char| ch.is_ascii_uppercase() || ch == '\'' || ch == '?') {
                continue;
            }
        }
        let with = if c == b'+' { "-" } else { "+" };
        if let Some(s) = splice(o, i, i + 1, with) {
            out.push((Operator::SwapArithmetic, i, s));
        }
    }
}

fn off_by_one(lang: Lang, o: &str, m: &str, out: &mut Vec<(Operator, usize, String)>) {
    static NUM: OnceLock<Regex> = OnceLock::new();
    let b = m.as_bytes();
    for k in regex(&NUM, r"\b[0-9][0-9_]*").find_iter(m) {
        let (s, e) = (k.start(), k.end());
        if s > 0 && b[s - 1] == b'.' {
            continue;
        }
        // The exponent of `1e-5` / `2.5E+3` is part of a float.
        if s >= 3
            && matches!(b[s - 1], b'-' | b'+')
            && matches!(b[s - 2], b'e' | b'E')
            && (b[s - 3].is_ascii_digit() || b[s - 3] == b'.')
        {
            continue;
        }
        if b.get(e) == Some(&b'.') && b.get(e + 1) != Some(&b'.') {
            continue;
        }
        let mut f = e;
        while f < b.len() && is_ident(b[f]) {
            f += 1;
        }
        let suffix = &m[e..f];
        let suffix_ok = suffix.is_empty()
            || match lang {
                Lang::Rust => matches!(
                    suffix,
                    "u8" | "u16"
                        | "u32"
                        | "u64"
                        | "u128"
                        | "usize"
                        | "i8"
                        | "i16"
                        | "i32"
                        | "i64"
                        | "i128"
                        | "isize"
                ),
                Lang::JsTs => suffix == "n",
                _ => false,
            };
        let digits: String = k.as_str().chars().filter(|ch| *ch != '_').collect();
        if !suffix_ok || (digits.len() > 1 && digits.starts_with('0')) || k.as_str().ends_with('_')
        {
            continue;
        }
        let Ok(n) = digits.parse::<u128>() else {
            continue;
        };
        let Some(n1) = n.checked_add(1) else { continue };
        if let Some(s2) = splice(o, s, e, &n1.to_string()) {
            out.push((Operator::OffByOne, s, s2));
        }
    }
}

/// Writes mutant `m` into the tree rooted at `root` (an isolated copy of the
/// *repository root*, since mutant paths are root-relative): replaces line
/// `m.line` of `root/m.file`, keeping its line terminator, after checking that the
/// line still reads `m.original`.
///
/// Errors: [`MutateError::InvalidPath`] for absolute or `..` paths,
/// [`MutateError::LineOutOfRange`], [`MutateError::LineMismatch`],
/// [`MutateError::NotUtf8`], [`MutateError::Io`].
pub fn apply(root: &Path, m: &Mutant) -> Result<(), MutateError> {
    let rel = Path::new(&m.file);
    if m.file.is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(MutateError::InvalidPath(m.file.clone()));
    }
    let path = root.join(rel);
    let bytes = std::fs::read(&path).map_err(|source| MutateError::Io {
        path: path.clone(),
        source,
    })?;
    let text = String::from_utf8(bytes).map_err(|_| MutateError::NotUtf8(m.file.clone()))?;
    let mut out = String::with_capacity(text.len() + m.replacement.len());
    let mut found = false;
    for (i, piece) in text.split_inclusive('\n').enumerate() {
        if i + 1 != m.line as usize {
            out.push_str(piece);
            continue;
        }
        let body_len = piece
            .strip_suffix('\n')
            .map_or(piece.len(), |p| p.strip_suffix('\r').unwrap_or(p).len());
        let (body, terminator) = piece.split_at(body_len);
        if body != m.original {
            return Err(MutateError::LineMismatch {
                file: m.file.clone(),
                line: m.line,
                expected: m.original.clone(),
                found: body.to_string(),
            });
        }
        out.push_str(&m.replacement);
        out.push_str(terminator);
        found = true;
    }
    if !found {
        return Err(MutateError::LineOutOfRange {
            file: m.file.clone(),
            line: m.line,
        });
    }
    std::fs::write(&path, out).map_err(|source| MutateError::Io { path, source })
}

#[cfg(test)]
mod tests;
