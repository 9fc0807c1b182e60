//! Test regions that grew by more than a new test (SPEC §3.10).
//!
//! A changed or deleted line of a t0 test region is found by the line diff
//! ([`super::changed_lines`]). An added line needs the region's structure, because a
//! line is harmless or not by the item it belongs to: a new `#[test] fn` appended to
//! `mod tests` adds a test, while `fn add(…)` added after `use super::*;` shadows the
//! code under test, `#[should_panic]` above a frozen `#[test]` inverts it, `/*` … `*/`
//! around an assertion removes it, `# let add = …` inside a doctest rebinds what it
//! calls. So the regions are compared item by item, not line by line:
//!
//! * a Rust test item (`#[cfg(test)] mod tests { … }`, a top-level `#[test] fn`, with
//!   the attributes above it) must still be in the file unchanged
//!   ([`super::super::lex::rust_layout_free`], so `cargo fmt` is no change); inside a
//!   test module every t0 item must still be there unchanged, and a new item is
//!   allowed only when it is a new test function (`#[test]`, `#[tokio::test]`,
//!   `#[rstest]` …), a helper function whose name no line of t0's module uses (it
//!   cannot shadow anything the frozen tests call), or a new sub-module of those;
//! * a Rust doctest (a fenced block of a doc comment, or of a document the crate
//!   includes) must still be one of the file's blocks, unchanged; a new block is a new
//!   test;
//! * a Python docstring's doctest examples share one namespace and run in order, so
//!   t0's examples must still open a docstring's examples, in order and unchanged: a
//!   new `>>>` example may follow them, or sit in a docstring of its own.
//!
//! Lines whose change is a deletion are the line diff's; what is found here may
//! overlap with it, and the caller reports a region once.

use super::super::lex::{mask, rust_layout_free, Lang};
use std::collections::BTreeSet;

/// A t0 test region that grew by something that is no new test: its 1-based inclusive
/// t0 lines and what it is (`doctest`, `#[cfg(test)] item`).
pub(super) type Growth = (usize, usize, &'static str);

/// The t0 regions of a Rust source that grew by more than a new test.
pub(super) fn rust(old: &str, new: &str) -> Vec<Growth> {
    let r0 = super::rust_regions(old);
    let r1 = super::rust_regions(new);
    let mut out = blocks(old, new, &r0, &r1, "doctest");
    // each test item with its text and its text without layout
    let items = |src: &str, regions: &[(usize, usize, &'static str)]| {
        regions
            .iter()
            .filter(|r| r.2 != "doctest")
            .map(|&(s, e, _)| {
                let text = lines(src, s, e);
                let key = rust_layout_free(&text);
                (s, e, text, key)
            })
            .collect::<Vec<_>>()
    };
    let old_items = items(old, &r0);
    let mut new_items = items(new, &r1);
    for (s, e, text, key) in old_items {
        if let Some(i) = new_items.iter().position(|(_, _, _, k)| *k == key) {
            new_items.remove(i);
            continue;
        }
        let head = head_key(&text);
        let same_head = new_items
            .iter()
            .position(|(_, _, t, _)| head.is_some() && head_key(t) == head);
        let ok = match same_head {
            Some(i) if is_module(&text) => {
                let (_, _, t, _) = new_items.remove(i);
                module_grew_by_tests(&text, &t)
            }
            _ => false,
        };
        if !ok {
            out.push((s, e, "#[cfg(test)] item"));
        }
    }
    out.sort_unstable();
    out
}

/// The byte ranges of `new`, a Rust source, that hold the tests added since `old`:
/// a test item at the top level that t0 did not have (a new `#[test] fn`, a new
/// `#[cfg(test)] mod`), and each new item inside a test module t0 had (a new test,
/// helper, `use` or sub-module), matched item by item as [`rust`] matches them
/// (layout aside). Meant for a file whose regions grew by tests alone ([`rust`]
/// finds nothing): what is new there is whole items, which can be left out of a
/// copy of the file without touching the rest.
pub(super) fn rust_new_tests(old: &str, new: &str) -> Vec<(usize, usize)> {
    let starts = |src: &str| -> Vec<usize> {
        std::iter::once(0)
            .chain(src.match_indices('\n').map(|(i, _)| i + 1))
            .collect()
    };
    let (st0, st1) = (starts(old), starts(new));
    // lines `s..=e` (1-based) as a byte range, without the last line's end
    let span = |src: &str, st: &[usize], s: usize, e: usize| -> (usize, usize) {
        let a = st.get(s.saturating_sub(1)).copied().unwrap_or(src.len());
        let b = st.get(e).map_or(src.len(), |x| x.saturating_sub(1));
        (a, b.max(a))
    };
    let mut left: Vec<&str> = super::rust_regions(old)
        .into_iter()
        .filter(|r| r.2 != "doctest")
        .map(|(s, e, _)| {
            let (a, b) = span(old, &st0, s, e);
            &old[a..b]
        })
        .collect();
    let mut out = Vec::new();
    for (s, e, _) in super::rust_regions(new)
        .into_iter()
        .filter(|r| r.2 != "doctest")
    {
        let (a, b) = span(new, &st1, s, e);
        let t = &new[a..b];
        let key = rust_layout_free(t);
        if let Some(i) = left.iter().position(|o| rust_layout_free(o) == key) {
            left.remove(i);
            continue;
        }
        let head = head_key(t);
        match left
            .iter()
            .position(|o| head.is_some() && is_module(o) && head_key(o) == head)
        {
            Some(i) => {
                let o = left.remove(i);
                new_inner_items(o, t, a, 0, &mut out);
            }
            None => out.push((a, b)),
        }
    }
    out.sort_unstable();
    out
}

/// [`rust_new_tests`] inside a test module: the items of `new`'s body (at byte
/// `offset` of the file) that `old`'s body lacks, into `out`.
fn new_inner_items(
    old: &str,
    new: &str,
    offset: usize,
    depth: usize,
    out: &mut Vec<(usize, usize)>,
) {
    let (m0, m1) = (mask(Lang::Rust, old), mask(Lang::Rust, new));
    let (Some((s0, e0)), Some((s1, e1))) = (body(&m0), body(&m1)) else {
        return;
    };
    let mut left: Vec<&str> = items(&m0[s0..e0])
        .into_iter()
        .map(|(a, b)| &old[s0 + a..s0 + b])
        .collect();
    for (a, b) in items(&m1[s1..e1]) {
        let t = &new[s1 + a..s1 + b];
        let key = rust_layout_free(t);
        if let Some(i) = left.iter().position(|o| rust_layout_free(o) == key) {
            left.remove(i);
            continue;
        }
        let head = head_key(t);
        let module = left
            .iter()
            .position(|o| head.is_some() && is_module(o) && head_key(o) == head);
        match module {
            Some(i) if depth < 8 => {
                let o = left.remove(i);
                new_inner_items(o, t, offset + s1 + a, depth + 1, out);
            }
            _ => out.push((offset + s1 + a, offset + s1 + b)),
        }
    }
}

/// The t0 doctests of a document a crate includes (`regions` of its fenced blocks,
/// [`super::markdown_doctests`]) that are no longer among its blocks unchanged.
pub(super) fn document(old: &str, new: &str) -> Vec<Growth> {
    let r0 = super::markdown_doctests(old);
    let r1 = super::markdown_doctests(new);
    blocks(
        old,
        new,
        &r0,
        &r1,
        "doctest in a document the crate includes",
    )
}

/// The t0 blocks of kind `what` (`regions` of `old`) that are not among the blocks of
/// `new` with the same text (whitespace aside: a changed line is the line diff's).
fn blocks(
    old: &str,
    new: &str,
    r0: &[(usize, usize, &'static str)],
    r1: &[(usize, usize, &'static str)],
    what: &'static str,
) -> Vec<Growth> {
    let key = |src: &str, s: usize, e: usize| -> String {
        lines(src, s, e)
            .chars()
            .filter(|c| !c.is_whitespace() || *c == '\n')
            .collect()
    };
    let mut remaining: Vec<String> = r1
        .iter()
        .filter(|r| r.2 == what)
        .map(|&(s, e, _)| key(new, s, e))
        .collect();
    let mut out = Vec::new();
    for &(s, e, w) in r0.iter().filter(|r| r.2 == what) {
        let k = key(old, s, e);
        match remaining.iter().position(|r| *r == k) {
            Some(i) => {
                remaining.remove(i);
            }
            None => out.push((s, e, w)),
        }
    }
    out
}

/// Lines `s..=e` (1-based) of `src`, joined with `\n`.
fn lines(src: &str, s: usize, e: usize) -> String {
    src.lines()
        .skip(s.saturating_sub(1))
        .take((e + 1).saturating_sub(s.max(1)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The item's head up to and including its first `{` (attributes and signature),
/// layout removed; `None` for an item without a body.
fn head_key(item: &str) -> Option<String> {
    let masked = mask(Lang::Rust, item);
    let at = masked.find('{')?;
    Some(rust_layout_free(&item[..=at]))
}

/// True when a Rust item (attributes included) is a module with a body.
fn is_module(item: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r"^(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+[A-Za-z_]\w*\s*\{")
            .expect("valid module regex")
    });
    let masked = mask(Lang::Rust, item);
    let (_, rest) = attributes(&masked);
    re.is_match(rest)
}

/// The body of a braced item (between its first `{` and its last `}`), as byte
/// offsets into the item; `None` without one.
fn body(masked: &str) -> Option<(usize, usize)> {
    let open = masked.find('{')?;
    let close = masked.rfind('}')?;
    (close > open).then_some((open + 1, close))
}

/// The items at the top level of a masked Rust text (a module's body), as byte ranges:
/// each ends at a `;` outside brackets, at the `}` that closes its body (with a `;`
/// right after it), or, for an inner attribute (`#![…]`), at its `]`.
fn items(masked: &str) -> Vec<(usize, usize)> {
    let b = masked.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        let inner_attr = b[i..].starts_with(b"#!");
        let (mut braces, mut other) = (0i64, 0i64);
        let mut end = b.len();
        while i < b.len() {
            let c = b[i];
            i += 1;
            match c {
                b'{' => braces += 1,
                b'}' => {
                    braces -= 1;
                    if braces <= 0 && other <= 0 {
                        let mut j = i;
                        while j < b.len() && b[j].is_ascii_whitespace() {
                            j += 1;
                        }
                        if j < b.len() && b[j] == b';' {
                            i = j + 1;
                        }
                        end = i;
                        break;
                    }
                }
                b'(' | b'[' => other += 1,
                b')' | b']' => {
                    other -= 1;
                    if inner_attr && other <= 0 && braces <= 0 {
                        end = i;
                        break;
                    }
                }
                b';' if braces <= 0 && other <= 0 => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        out.push((start, end));
        i = end;
    }
    out
}

/// The outer attributes leading a masked item (`#[test]`, each without whitespace)
/// and the rest of it, trimmed.
fn attributes(masked: &str) -> (Vec<String>, &str) {
    let mut rest = masked.trim_start();
    let mut out = Vec::new();
    while rest.starts_with("#[") {
        let mut depth = 0i64;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push(rest[..end].chars().filter(|c| !c.is_whitespace()).collect());
        rest = rest[end..].trim_start();
    }
    (out, rest)
}

/// The path of an attribute (`#[tokio::test(flavor = "…")]` → `tokio::test`).
fn attribute_path(attr: &str) -> &str {
    let inner = attr
        .strip_prefix("#[")
        .and_then(|a| a.strip_suffix(']'))
        .unwrap_or(attr);
    inner.split(['(', '=']).next().unwrap_or(inner)
}

/// True for an attribute that makes a function a test (`#[test]`, `#[tokio::test]`,
/// `#[rstest]`, `#[test_case(…)]`, `#[quickcheck]`).
fn is_test_attribute(attr: &str) -> bool {
    let last = attribute_path(attr).rsplit("::").next().unwrap_or("");
    matches!(last, "test" | "rstest" | "test_case" | "quickcheck")
}

/// True for an attribute a new test or helper function may carry: a test attribute,
/// the test harness's own (`should_panic`, `ignore`), lints, docs, `cfg`, `case`.
/// Not `cfg_attr` (it may hold anything), `no_mangle` or `export_name` (they replace a
/// symbol), nor a constructor.
fn is_plain_attribute(attr: &str) -> bool {
    let path = attribute_path(attr);
    is_test_attribute(attr)
        || matches!(
            path,
            "should_panic"
                | "ignore"
                | "allow"
                | "expect"
                | "warn"
                | "deny"
                | "doc"
                | "cfg"
                | "case"
                | "values"
                | "track_caller"
                | "inline"
                | "serial"
                | "timeout"
        )
}

/// What a new item of a test module is.
enum NewItem<'a> {
    /// A function, with its name and whether it carries a test attribute.
    Function(&'a str, bool),
    /// A module with a body.
    Module,
    /// A `use` declaration.
    Use,
    /// An item that binds one name (`const`, `static`, `struct`, `enum`, `union`,
    /// `type`, `trait`, `macro_rules!`), with that name.
    Named(&'a str),
    /// Anything else (`impl`, an inner attribute).
    Other,
}

/// The names a `use` declaration (masked, without attributes) binds: the last
/// segment of each leaf, or its `as` alias (`self` in a group binds the group's
/// path: `io::{self, Write}` binds `io` and `Write`). `None` for a glob (`*`),
/// which binds names no one can list, and for what does not read as a `use`.
fn use_bindings(masked: &str) -> Option<Vec<&str>> {
    let tree = masked
        .trim()
        .trim_start_matches("pub")
        .trim_start()
        .strip_prefix("use")?
        .trim()
        .strip_suffix(';')?;
    if tree.contains('*') {
        return None;
    }
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    // tokens: identifiers and the punctuation that ends a leaf
    let mut tokens: Vec<&str> = Vec::new();
    let mut rest = tree;
    while let Some(c) = rest.chars().next() {
        if ident(c) {
            let end = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
            tokens.push(&rest[..end]);
            rest = &rest[end..];
        } else {
            if matches!(c, ',' | '{' | '}') {
                tokens.push(&rest[..1]);
            }
            rest = &rest[c.len_utf8()..];
        }
    }
    let mut bound = Vec::new();
    // the path segment before each open group, for `self` inside it
    let mut groups: Vec<Option<&str>> = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        match *t {
            "{" => groups.push(i.checked_sub(1).map(|j| tokens[j])),
            "}" => {
                groups.pop();
            }
            "," | "as" => {}
            name => {
                let next = tokens.get(i + 1).copied();
                let after_as = i > 0 && tokens[i - 1] == "as";
                let leaf_end = matches!(next, None | Some("," | "}"));
                if after_as || (leaf_end && next != Some("as")) {
                    if name == "self" {
                        bound.push(groups.last().copied().flatten()?);
                    } else if !(leaf_end && tokens.get(i + 1) == Some(&"as")) {
                        bound.push(name);
                    }
                }
            }
        }
    }
    Some(bound)
}

fn classify(masked: &str) -> (Vec<String>, NewItem<'_>) {
    static FN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let fn_re = FN.get_or_init(|| {
        regex::Regex::new(
            r"^(?:pub(?:\s*\([^)]*\))?\s+)?(?:(?:const|async|unsafe)\s+)*fn\s+([A-Za-z_]\w*)",
        )
        .expect("valid fn regex")
    });
    let (attrs, rest) = attributes(masked);
    let kind = if let Some(c) = fn_re.captures(rest) {
        let name = c.get(1).map_or("", |m| m.as_str());
        NewItem::Function(name, attrs.iter().any(|a| is_test_attribute(a)))
    } else if is_module(rest) {
        NewItem::Module
    } else if rest.starts_with("use ") || rest.starts_with("pub use ") {
        NewItem::Use
    } else if let Some(c) = named_re().captures(rest) {
        NewItem::Named(c.get(1).map_or("", |m| m.as_str()))
    } else {
        NewItem::Other
    };
    (attrs, kind)
}

fn named_re() -> &'static regex::Regex {
    static NAMED: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    NAMED.get_or_init(|| {
        regex::Regex::new(
            r"^(?:pub(?:\s*\([^)]*\))?\s+)?(?:(?:const|static(?:\s+mut)?|struct|enum|union|type|trait)\s+|macro_rules!\s*)([A-Za-z_]\w*)",
        )
        .expect("valid item regex")
    })
}

/// True when a new item of a test module adds tests only: a test function; a helper
/// function, a `const`/`static`/type/`trait`/`macro_rules!`, or a `use` that binds
/// only names t0's module never mentions (`names`: nothing it uses can be
/// shadowed); or a module of those (and of any `use` declarations, which reach only
/// that module). Its attributes must be plain ([`is_plain_attribute`]).
fn new_item_adds_tests(item: &str, masked: &str, names: &BTreeSet<&str>, depth: usize) -> bool {
    let (attrs, kind) = classify(masked);
    if !attrs.iter().all(|a| is_plain_attribute(a)) {
        return false;
    }
    match kind {
        NewItem::Function(_, true) => true,
        NewItem::Function(name, false) | NewItem::Named(name) => !names.contains(name),
        // a `use` binding only names t0's module never mentions shadows nothing
        // (`use std::collections::HashMap;` for a new test); one that binds a name
        // the module uses (`use crate::fake::add;` beats `use super::*`), or a glob,
        // may
        NewItem::Use => use_bindings(masked).is_some_and(|b| b.iter().all(|n| !names.contains(n))),
        NewItem::Module if depth < 8 => {
            let Some((s, e)) = body(masked) else {
                return false;
            };
            items(&masked[s..e]).into_iter().all(|(a, b)| {
                let (sub, sub_masked) = (&item[s + a..s + b], &masked[s + a..s + b]);
                matches!(classify(sub_masked).1, NewItem::Use)
                    || new_item_adds_tests(sub, sub_masked, names, depth + 1)
            })
        }
        _ => false,
    }
}

/// True when a t0 test module `old` (the whole item) grew into `new` by new tests
/// only: every item of t0's body is still there unchanged (a sub-module may itself
/// have grown by new tests), and every other item adds tests only
/// ([`new_item_adds_tests`]).
fn module_grew_by_tests(old: &str, new: &str) -> bool {
    grew_by_tests(old, new, 0)
}

fn grew_by_tests(old: &str, new: &str, depth: usize) -> bool {
    static IDENT: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let ident = IDENT.get_or_init(|| regex::Regex::new(r"[A-Za-z_]\w*").expect("valid regex"));
    let (m0, m1) = (mask(Lang::Rust, old), mask(Lang::Rust, new));
    let (Some((s0, e0)), Some((s1, e1))) = (body(&m0), body(&m1)) else {
        return false;
    };
    if depth > 8 {
        return false;
    }
    let names: BTreeSet<&str> = ident.find_iter(&m0).map(|m| m.as_str()).collect();
    let mut left: Vec<(&str, String)> = items(&m0[s0..e0])
        .into_iter()
        .map(|(a, b)| {
            let t = &old[s0 + a..s0 + b];
            (t, rust_layout_free(t))
        })
        .collect();
    for (a, b) in items(&m1[s1..e1]) {
        let (t, tm) = (&new[s1 + a..s1 + b], &m1[s1 + a..s1 + b]);
        let key = rust_layout_free(t);
        if let Some(i) = left.iter().position(|(_, k)| *k == key) {
            left.remove(i);
            continue;
        }
        let head = head_key(t);
        let old_module = left
            .iter()
            .position(|(o, _)| head.is_some() && is_module(o) && head_key(o) == head);
        let ok = match old_module {
            Some(i) => {
                let (o, _) = left.remove(i);
                grew_by_tests(o, t, depth + 1)
            }
            None => new_item_adds_tests(t, tm, &names, 0),
        };
        if !ok {
            return false;
        }
    }
    left.is_empty()
}

/// The t0 doctest examples of a Python source that no longer open a docstring's
/// examples in order and unchanged ([`py_groups`]), as the span of their docstring's
/// examples.
pub(super) fn python(old: &str, new: &str) -> Vec<Growth> {
    let g0 = py_groups(old);
    let g1 = py_groups(new);
    let mut out = Vec::new();
    let mut next = 0;
    for g in g0 {
        let keys: Vec<&String> = g.iter().map(|x| &x.2).collect();
        let found =
            g1.iter().enumerate().skip(next).find(|(_, h)| {
                h.len() >= keys.len() && h.iter().zip(&keys).all(|(x, k)| x.2 == **k)
            });
        match found {
            Some((i, _)) => next = i + 1,
            None => {
                let (s, e) = (g[0].0, g[g.len() - 1].1);
                out.push((s, e, "doctest"));
            }
        }
    }
    out
}

/// The doctest examples of `new`, a Python source, that `old` did not have, as
/// 1-based inclusive line spans: every example of a docstring none of t0's example
/// groups opens, and the examples after t0's in one that a t0 group opens (matched as
/// [`python`] matches them). Meant for a file whose examples grew by new ones alone
/// ([`python`] finds nothing).
pub(super) fn python_new_examples(old: &str, new: &str) -> Vec<(usize, usize)> {
    let g0 = py_groups(old);
    let g1 = py_groups(new);
    let mut kept = vec![0usize; g1.len()];
    let mut next = 0;
    for g in g0 {
        let found = g1
            .iter()
            .enumerate()
            .skip(next)
            .find(|(_, h)| h.len() >= g.len() && h.iter().zip(&g).all(|(x, y)| x.2 == y.2));
        if let Some((i, _)) = found {
            kept[i] = g.len();
            next = i + 1;
        }
    }
    g1.iter()
        .zip(kept)
        .flat_map(|(h, k)| h[k..].iter().map(|x| (x.0, x.1)))
        .collect()
}

/// The doctest examples of a Python source grouped by docstring (a line holding `"""`
/// or `'''` that is no example line ends a group): each example is `(first line, last
/// line, text)`, 1-based, from its `>>>` line over its `...` lines and its expected
/// output to a blank line, the next `>>>` or the docstring's end. Groups without
/// examples are left out.
fn py_groups(src: &str) -> Vec<Vec<(usize, usize, String)>> {
    fn close(groups: &mut [Vec<(usize, usize, String)>], x: Option<(usize, usize, String)>) {
        if let (Some(g), Some(x)) = (groups.last_mut(), x) {
            g.push(x);
        }
    }
    let mut groups: Vec<Vec<(usize, usize, String)>> = vec![Vec::new()];
    let mut open: Option<(usize, usize, String)> = None;
    for (n, l) in src.lines().enumerate() {
        let t = l.trim();
        let quote = t.contains("\"\"\"") || t.contains("'''");
        if t.starts_with(">>>") {
            close(&mut groups, open.take());
            open = Some((n + 1, n + 1, t.to_string()));
            continue;
        }
        if let Some(x) = open.as_mut() {
            if t.starts_with("...")
                || (!t.is_empty() && !t.starts_with("\"\"\"") && !t.starts_with("'''"))
            {
                x.1 = n + 1;
                x.2.push('\n');
                x.2.push_str(t);
                if !quote {
                    continue;
                }
            }
        }
        if t.is_empty() || quote {
            close(&mut groups, open.take());
        }
        if quote {
            groups.push(Vec::new());
        }
    }
    close(&mut groups, open.take());
    groups.retain(|g| !g.is_empty());
    groups
}
