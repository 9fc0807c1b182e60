//! The lines the runner-tampering rules read: a changed file split where its language
//! ends a line, not only at `\n`.
//!
//! The rule sets ([`super::tamper`], [`super::tamper_more`], [`super::tamper_names`],
//! [`super::tamper_probe`])
//! read a file line by line, and a line that starts with a comment marker is skipped.
//! Python also ends a line at a lone `\r`, JavaScript/TypeScript at a lone `\r`,
//! U+2028 and U+2029 ([`super::lex::language_lines`]): `# note\rR.__eq__ = …` is a
//! comment and a live statement to Python, one comment line to a reader that splits
//! at `\n`. [`scan_code`] hands the rules the file split the language's way (old and
//! new alike), and reports each hit on the `\n`-line it sits on (what `git diff`
//! shows), with the statement the language reads as its text.
//!
//! One rule of its own, "hidden line end": an added `\n`-line holding such a line end
//! right after a comment, with code after it (code that looks commented out to every
//! reader but the interpreter). A `\r\n` file has none; a lone line end after code, or
//! inside a JavaScript string, is no hit.

use super::lex::{language_lines, mask, Lang};
use super::tamper::TamperHit;

/// Hits of every line-based rule set in the lines added to `path` between `old` (t0's
/// content, empty when new) and `new`, read as `path`'s language splits lines.
#[must_use]
pub fn scan_code(path: &str, old: &str, new: &str) -> Vec<TamperHit> {
    let lang = Lang::from_path(path);
    let old_split = language_lines(lang, old);
    let new_split = language_lines(lang, new);
    let old_read = old_split.as_ref().map_or(old, |(t, _)| t.as_str());
    let new_read = new_split.as_ref().map_or(new, |(t, _)| t.as_str());
    let mut hits = super::tamper::scan(path, old_read, new_read);
    hits.extend(super::tamper_more::scan(path, old_read, new_read));
    hits.extend(super::tamper_names::scan(path, old_read, new_read));
    hits.extend(super::tamper_probe::scan(path, old_read, new_read));
    if let Some((_, map)) = &new_split {
        for h in &mut hits {
            if h.line > 0 {
                h.line = map.get(h.line - 1).map_or(h.line, |p| p + 1);
            }
        }
        hits.extend(hidden_line_ends(lang, path, old_read, new_read, map, new));
    }
    hits
}

/// The "hidden line end" hits: `\n`-lines of `new` with an added line (`old_read`
/// and `new_read` split as the language splits them, `map` from a line of
/// `new_read` to its `\n`-line) where a line end of `lang` other than `\n` closes a
/// comment and code follows it.
fn hidden_line_ends(
    lang: Lang,
    path: &str,
    old_read: &str,
    new_read: &str,
    map: &[usize],
    new: &str,
) -> Vec<TamperHit> {
    // (the diff's own line split is not `\n`'s: `similar` also ends a line at a lone
    // `\r`, so the added lines are found in the split text and mapped back)
    let added: std::collections::BTreeSet<usize> =
        similar::TextDiff::from_lines(old_read, new_read)
            .iter_all_changes()
            .filter(|c| c.tag() == similar::ChangeTag::Insert)
            .filter_map(|c| map.get(c.new_index()?).copied())
            .collect();
    let physical: Vec<&str> = new.split('\n').collect();
    added
        .into_iter()
        .filter_map(|i| {
            let line = physical
                .get(i)?
                .strip_suffix('\r')
                .unwrap_or(physical.get(i)?);
            hides_code_after_comment(lang, line).then(|| TamperHit {
                path: path.to_string(),
                line: i + 1,
                rule: "hidden line end".to_string(),
                text: line
                    .replace(['\r', '\u{2028}', '\u{2029}'], "⏎")
                    .trim()
                    .chars()
                    .take(200)
                    .collect(),
            })
        })
        .collect()
}

/// True when `line` (one `\n`-line, its `\n`/`\r\n` removed) splits, as `lang`
/// reads it, into a piece that ends in a comment and a later piece with code.
fn hides_code_after_comment(lang: Lang, line: &str) -> bool {
    let Some((split, _)) = language_lines(lang, line) else {
        return false;
    };
    let pieces: Vec<&str> = split.split('\n').collect();
    pieces.iter().enumerate().any(|(k, piece)| {
        // the piece ends in a comment: masking blanks its tail (a string masks to
        // quote marks, code stays)
        let ends_in_comment = mask(lang, piece).trim_end().len() < piece.trim_end().len();
        ends_in_comment
            && pieces[k + 1..].iter().any(|rest| {
                let code = mask(lang, rest);
                !code.trim().is_empty()
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Code after a line end the `\n` reader does not see is read by the rules, and
    /// reported on the `\n`-line it sits on: (path, new file, (line, rule) hits).
    #[test]
    fn rules_read_lines_the_language_splits() {
        type Row = (&'static str, &'static str, &'static [(usize, &'static str)]);
        let rows: &[Row] = &[
            // Python: a lone CR after a comment
            (
                "calc.py",
                "class R(int):\n    pass\n# normalise\rR.__eq__ = lambda s, o: True\n",
                &[(3, "always-equal object"), (3, "hidden line end")],
            ),
            // JavaScript: U+2028, U+2029 and a lone CR after a line comment
            (
                "calc.js",
                "function add(a, b) { return a - b; }\n// keep\u{2028}require('node:assert').strictEqual = () => {};\n",
                &[(2, "assertion library patched"), (2, "hidden line end")],
            ),
            (
                "calc.js",
                "x();\n// keep\u{2029}process.exit(0);\n",
                &[(2, "process exit"), (2, "hidden line end")],
            ),
            (
                "calc.ts",
                "// keep\rprocess.exit(0);\n",
                &[(1, "process exit"), (1, "hidden line end")],
            ),
            // code, then a lone CR, then code: split and read, nothing hidden
            ("calc.py", "x = 1\ros._exit(0)\n", &[(1, "process exit")]),
            // honest: a CRLF file, a lone CR after code, U+2028 inside a JS string,
            // a comment followed by a lone CR and nothing
            ("calc.py", "# note\r\nx = 1\r\n\r\ndef f():\r\n    return 2\r\n", &[]),
            ("calc.py", "x = 1\ry = 2\n", &[]),
            ("calc.js", "const sep = '\u{2028}';\n", &[]),
            ("calc.py", "# note\r\r\nx = 1\n", &[]),
        ];
        for (path, new, want) in rows {
            let got: Vec<(usize, String)> = scan_code(path, "", new)
                .into_iter()
                .map(|h| (h.line, h.rule))
                .collect();
            // every expected hit, and nothing on an honest row
            for (line, rule) in *want {
                assert!(
                    got.contains(&(*line, (*rule).to_string())),
                    "{path}: {new:?}: {got:?}"
                );
            }
            assert_eq!(got.is_empty(), want.is_empty(), "{path}: {new:?}: {got:?}");
        }
    }

    /// A line added to a file t0 held, after a lone CR, is found as added.
    #[test]
    fn an_added_line_after_a_lone_cr_is_added() {
        let old = "def add(a, b):\r    return a - b\r";
        let new = "def add(a, b):\r    return a - b\r# ok\rimport os; os._exit(0)\r";
        let rules: Vec<String> = scan_code("calc.py", old, new)
            .into_iter()
            .map(|h| h.rule)
            .collect();
        assert!(rules.contains(&"process exit".to_string()), "{rules:?}");
        assert!(rules.contains(&"hidden line end".to_string()), "{rules:?}");
        // the same file, nothing added
        assert!(scan_code("calc.py", old, old).is_empty());
    }
}
