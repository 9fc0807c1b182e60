//! Counting assertion calls in test sources, per language.
//!
//! The count is a *measurement of the measurement*: if an iteration makes the suite
//! pass while the number of assertions in the test files went down, the check was
//! weakened. Counting runs on the text from [`crate::observe::lex::mask`], so
//! comments and string literals never count. The rules are lexical (no parsing); each
//! match below counts once:
//!
//! * **Rust**: a macro invocation whose name is `assert`, `assert_<anything>`,
//!   `debug_assert…` or `prop_assert…` followed by `!` (`assert!`, `assert_eq!`,
//!   `assert_ne!`, `assert_matches!`, `debug_assert_eq!`, `prop_assert!`, …); and each
//!   `#[should_panic]` attribute (the panic is the assertion).
//! * **Python**: each `assert` statement (the keyword, not an attribute `x.assert`);
//!   each method call whose name starts with `assert` (`self.assertEqual(`,
//!   `mock.assert_called_once_with(`, `np.testing.assert_allclose(`); each
//!   `pytest.raises(` and `pytest.warns(`. `pytest.approx` is a comparison helper, not
//!   an assertion, and is not counted.
//! * **JS/TS**: `expect(` (also `chai.expect(`), `assert(`, `assert.<name>(` (node's
//!   `assert`, chai's `assert`, `t.assert.<name>(`), a `.should.` chain, and the
//!   assertion methods of a test context `t.<name>(` for `is`, `not`, `true`,
//!   `false`, `truthy`, `falsy`, `deepEqual`, `notDeepEqual`, `like`, `throws`,
//!   `throwsAsync`, `notThrows`, `notThrowsAsync`, `regex`, `notRegex`, `snapshot`,
//!   `equal`, `notEqual`, `ok`, `notOk`, `same`, `notSame`, `match`, `notMatch`,
//!   `strictEqual`, `deepStrictEqual`, `fail`.
//! * **Go**: `t.Error(`, `t.Errorf(`, `t.Fatal(`, `t.Fatalf(`, `t.Fail(`,
//!   `t.FailNow(` on a receiver named `t`, `b`, `tb` or `f`, or on `….T()`; and
//!   testify's `assert.<Name>(` / `require.<Name>(` except the constructor `New`. A
//!   bare comparison (`if got != want {`) is not an assertion by itself: the
//!   `t.Errorf` inside it is.
//! * **Other** languages: 0 (their files are still listed, so a deletion is named).

use super::lex::{mask, Lang};
use regex::Regex;
use std::sync::OnceLock;

struct Rules {
    rust: Vec<Regex>,
    python: Vec<Regex>,
    python_keyword: Regex,
    js: Vec<Regex>,
    go: Vec<Regex>,
    go_testify: Regex,
}

fn re(p: &str) -> Regex {
    // Patterns are constants checked by the tests below; an invalid one would be a
    // programming error caught there.
    Regex::new(p).unwrap_or_else(|e| panic!("invalid built-in pattern {p}: {e}"))
}

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| Rules {
        rust: vec![
            re(r"\b(?:debug_|prop_)?assert(?:_[A-Za-z0-9_]+)?\s*!"),
            re(r"#\s*\[\s*should_panic\b"),
        ],
        python_keyword: re(r"\bassert\b"),
        python: vec![
            re(r"\.\s*assert[A-Za-z0-9_]*\s*\("),
            re(r"\bpytest\s*\.\s*(?:raises|warns)\s*\("),
        ],
        js: vec![
            re(r"\bexpect\s*\("),
            re(r"\bassert\s*\("),
            re(r"\bassert\s*\.\s*[A-Za-z_$][\w$]*\s*\("),
            re(r"\.\s*should\s*\."),
            re(concat!(
                r"\bt\s*\.\s*(?:is|not|true|false|truthy|falsy|deepEqual|notDeepEqual|like|",
                r"throws|throwsAsync|notThrows|notThrowsAsync|regex|notRegex|snapshot|equal|",
                r"notEqual|ok|notOk|same|notSame|match|notMatch|strictEqual|deepStrictEqual|",
                r"fail)\s*\("
            )),
        ],
        go: vec![
            re(r"\b(?:t|b|tb|f)\s*\.\s*(?:Errorf?|Fatalf?|Fail|FailNow)\s*\("),
            re(r"\.\s*T\s*\(\s*\)\s*\.\s*(?:Errorf?|Fatalf?|Fail|FailNow)\s*\("),
        ],
        go_testify: re(r"\b(?:assert|require)\s*\.\s*([A-Z][A-Za-z0-9_]*)\s*\("),
    })
}

/// Number of assertion calls in `source`, by the rules for `lang` in the module doc.
#[must_use]
pub fn count_assertions(lang: Lang, source: &str) -> u64 {
    let code = mask(lang, source);
    let r = rules();
    let count_all =
        |set: &[Regex]| -> u64 { set.iter().map(|x| x.find_iter(&code).count() as u64).sum() };
    match lang {
        Lang::Rust => count_all(&r.rust),
        Lang::Python => {
            let bytes = code.as_bytes();
            let keywords = r
                .python_keyword
                .find_iter(&code)
                .filter(|m| {
                    // The keyword, not an attribute named `assert` (`x.assert`).
                    let before = bytes[..m.start()]
                        .iter()
                        .rev()
                        .find(|b| !b.is_ascii_whitespace());
                    before != Some(&b'.')
                })
                .count() as u64;
            keywords + count_all(&r.python)
        }
        Lang::JsTs => count_all(&r.js),
        Lang::Go => {
            let testify = r
                .go_testify
                .captures_iter(&code)
                .filter(|c| c.get(1).is_some_and(|m| m.as_str() != "New"))
                .count() as u64;
            count_all(&r.go) + testify
        }
        Lang::Shell | Lang::Perl | Lang::Other => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_counts_macros_and_should_panic_not_comments_or_strings() {
        let src = r#"
use calc::add;
// assert_eq!(add(1, 1), 2);  a comment
/* assert!(false) */
#[test] fn adds() { assert_eq!(add(2, 3), 5); }
#[test] fn zero() { assert_eq!(add(0, 0), 0); assert_ne!(add(1, 0), 0); }
#[test] #[should_panic(expected = "overflow")] fn boom() { add(i64::MAX, 1); }
#[test] fn msg() { assert!(true, "assert_eq!(x) in a message"); debug_assert!(1 < 2); }
#[test] fn prop() { prop_assert_eq!(1, 1); let s = "assert!(1)"; let _ = s; }
macro_rules! assert_small { ($x:expr) => { assert!($x < 10) }; }
"#;
        // assert_eq! x2, assert_ne!, should_panic, assert!, debug_assert!,
        // prop_assert_eq!, and the assert! inside the macro body.
        assert_eq!(count_assertions(Lang::Rust, src), 8);
    }

    #[test]
    fn weakened_rust_test_drops_by_one() {
        let before = "use calc::add;\n#[test] fn adds() { assert_eq!(add(2, 3), 5); }\n#[test] fn zero() { assert_eq!(add(0, 0), 0); }\n";
        let after = before.replace("assert_eq!(add(2, 3), 5);", "let _ = add(2, 3);");
        assert_eq!(count_assertions(Lang::Rust, before), 2);
        assert_eq!(count_assertions(Lang::Rust, &after), 1);
    }

    #[test]
    fn python_counts_statements_methods_and_raises() {
        let src = r#"
import pytest
# assert False  (comment)
def test_a():
    assert add(1, 2) == 3
    assert(add(0, 0) == 0)
    msg = "assert this is not counted"
    assert add(2, 2) == pytest.approx(4.0)

class T(unittest.TestCase):
    def test_b(self):
        self.assertEqual(add(1, 1), 2)
        self.assertRaises(ValueError, add, None, 1)
        m.assert_called_once_with(3)
        """assert in a docstring"""

def test_c():
    with pytest.raises(ValueError):
        add(None, 1)
    x.assert_ = 1
"#;
        // 3 statements + 3 assert* methods + pytest.raises; `x.assert_ = 1` is no call.
        assert_eq!(count_assertions(Lang::Python, src), 7);
    }

    #[test]
    fn js_counts_expect_assert_and_t_methods() {
        let src = r#"
// expect(1).toBe(2)
import assert from 'node:assert';
test('adds', () => {
  expect(add(1, 2)).toBe(3);
  expect(add(0, 0)).toEqual(0);
  const s = "expect(x)"; const tpl = `assert(${1})`;
});
test('node', () => { assert.strictEqual(add(1, 1), 2); assert(add(1, 1)); });
test('ava', t => { t.is(add(1, 1), 2); t.deepEqual([1], [1]); t.log('x'); });
it('chai', () => { add(1, 2).should.equal(3); chai.expect(1).to.equal(1); });
"#;
        // expect x2, assert.strictEqual, assert(, t.is, t.deepEqual, should, chai.expect
        // (t.log is not an assertion).
        assert_eq!(count_assertions(Lang::JsTs, src), 8);
    }

    #[test]
    fn go_counts_t_methods_and_testify_but_not_comparisons() {
        let src = r#"
package calc
// t.Errorf("commented out")
func TestAdd(t *testing.T) {
	if got := Add(2, 3); got != 5 {
		t.Errorf("Add(2, 3) = %d; want 5 (t.Fatal)", got)
	}
	if Add(0, 0) != 0 {
		t.Fatal("zero")
	}
	err := fmt.Errorf("not an assertion")
	a := assert.New(t)
	assert.Equal(t, 5, Add(2, 3))
	require.NoError(t, err)
	s.T().Errorf("suite")
	_ = a
}
"#;
        assert_eq!(count_assertions(Lang::Go, src), 5);
    }

    #[test]
    fn other_languages_count_zero() {
        assert_eq!(count_assertions(Lang::Other, "assert 1\nexpect(1)"), 0);
    }
}
