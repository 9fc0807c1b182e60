//! Tests the judged check ran that t0 does not define (SPEC §3.10).
//!
//! Under `[oracle] new_tests = "exclude"` the judged check runs the frozen oracle: the
//! test files the agent added are left out of the judged tree, the new tests of a Rust
//! source and the new doctest examples of a Python source are blanked out of its copy
//! ([`super::oracle_scope::leave_out_new_tests`]). What those rules do not see can
//! still make a test: a `macro_rules!` whose body puts `#[$a] fn …` together from its
//! arguments (`warm!(test)`), a docstring assigned at run time. Such a test runs in the
//! same process as the frozen ones (libtest runs a binary's tests in one process,
//! pytest a session's) and can set what the code under test reads before they run.
//!
//! So the judged run itself is read back: every test it names must be one t0 defines.
//! A test is t0's when t0's check named it, when it is a new parameter of a test t0's
//! check named (`test_add[3]` beside `test_add[1]`), or — for a test t0's check could
//! not name (t0's build failed, or its module did not import) — when t0's sources
//! define it:
//!
//! * **pytest** (`path::[Class::]name[params]`): `def name`/`class name` in t0's text of
//!   `path` (or, for a method, of any t0 Python file: a base class in a helper). A
//!   doctest item (`calc.py::calc.add`, a dotted name) is t0's when t0's `path` held
//!   doctest examples.
//! * **libtest** (`[binary::]module::name`): `fn name` in some t0 Rust source, and no
//!   test of that name among t0's named tests (a t0 test that built under one module
//!   path does not vouch for the same name under another). Doctests
//!   (`src/lib.rs - add (line 3)`) run one process each and are not read.
//!
//! Other formats are not read: their runners give a test no id a source can be
//! found from (jest and mocha titles), or run each test in its own process (nextest).

use crate::check::model::{Format, ParsedRun};
use std::collections::HashSet;

/// Whether the tests of a run in `format` are read by [`unfrozen_tests`].
#[must_use]
pub fn reads(format: Format) -> bool {
    matches!(
        format,
        Format::Pytest | Format::Libtest | Format::LibtestJson
    )
}

/// The ids of the tests `run` names that t0 does not define (in run order, each
/// once), as the module documentation says. `baseline` is t0's check; `t0_files` the
/// paths of t0's tree; `t0_text` reads one of them (`None`: not a text file). Empty
/// for a format [`reads`] does not cover.
#[must_use]
pub fn unfrozen_tests(
    run: &ParsedRun,
    baseline: &ParsedRun,
    t0_files: &[&str],
    t0_text: &dyn Fn(&str) -> Option<String>,
) -> Vec<String> {
    if !reads(run.format) {
        return Vec::new();
    }
    let named = |r: &ParsedRun| -> Vec<String> {
        r.tests
            .iter()
            .filter(|t| ParsedRun::is_named(t))
            .map(|t| t.id.clone())
            .collect()
    };
    let t0_ids: HashSet<String> = named(baseline).into_iter().collect();
    let t0_unparam: HashSet<&str> = t0_ids.iter().map(|i| without_params(i)).collect();
    let t0_names: HashSet<&str> = t0_ids.iter().map(|i| last_segment(i)).collect();
    let mut texts: std::collections::HashMap<String, Option<String>> = Default::default();
    let mut text = |p: &str| -> Option<String> {
        texts
            .entry(p.to_string())
            .or_insert_with(|| t0_text(p))
            .clone()
    };
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    // A libtest run that names no passing test (`cargo test -q` prints dots) shows
    // only its count: more tests than a complete t0 run counted means tests t0 did
    // not define ran (new tests are left out, so an honest run counts t0's)
    let names_passes = run
        .tests
        .iter()
        .any(|t| ParsedRun::is_named(t) && t.outcome.is_passing());
    if run.format != Format::Pytest && !names_passes && baseline.complete {
        let (now, then) = (run.counts().total(), baseline.counts().total());
        if now > then {
            out.push(format!(
                "{} test(s) beyond the {then} t0's check counted (the run names only its failures)",
                now - then
            ));
        }
    }
    for id in named(run) {
        if t0_ids.contains(&id) || !seen.insert(id.clone()) {
            continue;
        }
        let defined = if run.format == Format::Pytest {
            t0_unparam.contains(without_params(&id)) || pytest_defined(&id, t0_files, &mut text)
        } else {
            libtest_defined(&id, &t0_names, t0_files, &mut text)
        };
        if !defined {
            out.push(id);
        }
    }
    out
}

/// `id` without pytest's parameter suffix (`test_add[1-2]` → `test_add`).
fn without_params(id: &str) -> &str {
    match id.find('[') {
        Some(i) if id.ends_with(']') => &id[..i],
        _ => id,
    }
}

/// The last `::` segment of `id`.
fn last_segment(id: &str) -> &str {
    id.rsplit("::").next().unwrap_or(id)
}

/// Whether `text` defines `name` after one of `keywords` (`def name(`, `class name:`),
/// as a whole word.
fn defines(text: &str, keywords: &[&str], name: &str) -> bool {
    text.match_indices(name).any(|(i, _)| {
        let after = text[i + name.len()..].chars().next();
        if after.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            return false;
        }
        let before = text[..i].trim_end_matches([' ', '\t']);
        if before.len() == text[..i].len() {
            return false;
        }
        keywords.iter().any(|k| {
            before.strip_suffix(k).is_some_and(|b| {
                b.chars()
                    .next_back()
                    .map_or(true, |c| !(c.is_alphanumeric() || c == '_'))
            })
        })
    })
}

/// The t0 file pytest's `path` is (pytest names a file from its rootdir, which may
/// lie below the tree's root): itself, or the one t0 file ending in `/path`.
fn t0_file<'a>(path: &str, t0_files: &[&'a str]) -> Option<&'a str> {
    if let Some(p) = t0_files.iter().find(|p| **p == path) {
        return Some(p);
    }
    let tail = format!("/{path}");
    let mut found = t0_files.iter().filter(|p| p.ends_with(&tail));
    match (found.next(), found.next()) {
        (Some(p), None) => Some(p),
        _ => None,
    }
}

fn pytest_defined(
    id: &str,
    t0_files: &[&str],
    text: &mut dyn FnMut(&str) -> Option<String>,
) -> bool {
    let id = without_params(id);
    let mut parts = id.split("::");
    let Some(path) = parts.next() else {
        return false;
    };
    let rest: Vec<&str> = parts.collect();
    let Some(name) = rest.last() else {
        return false;
    };
    let Some(file) = t0_file(path, t0_files) else {
        return false;
    };
    let Some(own) = text(file) else {
        return false;
    };
    let stem = path
        .rsplit('/')
        .next()
        .and_then(|f| f.strip_suffix(".py"))
        .unwrap_or(path);
    if rest.len() == 1 && (name.contains('.') || *name == stem) {
        // a doctest item, named by the object whose docstring holds the examples
        // (`calc.add`; the module itself is `calc`)
        if *name == stem || name.ends_with(&format!(".{stem}")) {
            let head = own.find("\ndef ").or_else(|| own.find("\nclass "));
            return own[..head.unwrap_or(own.len())].contains(">>>");
        }
        // every object on the path from the module (`C.add`: a class `C` t0 had, not
        // one made at run time), the last with examples in its body at t0
        // (the module's dotted name ends in the file's stem: `pkg.calc.C.add`)
        let module_end = name
            .match_indices(&format!("{stem}."))
            .find(|(i, _)| *i == 0 || name[..*i].ends_with('.'))
            .map_or(0, |(i, m)| i + m.len());
        let path: Vec<&str> = name[module_end..].split('.').collect();
        let Some((object, outer)) = path.split_last() else {
            return false;
        };
        return outer.iter().all(|c| defines(&own, &["class"], c)) && doc_examples_of(&own, object);
    }
    // the classes on the id's path are t0's classes of that file (a class the code
    // under test adds to the test module at run time is not)
    if !rest[..rest.len() - 1]
        .iter()
        .all(|c| defines(&own, &["class"], c))
    {
        return false;
    }
    if defines(&own, &["def", "class"], name) {
        return true;
    }
    // a method a test class inherits from a base class in another t0 file
    rest.len() > 1
        && t0_files
            .iter()
            .filter(|p| p.ends_with(".py") && **p != file)
            .any(|p| text(p).is_some_and(|t| defines(&t, &["def"], name)))
}

/// Whether a t0 definition of `object` (`def`/`class`) has `>>>` in its body: the
/// lines after it indented deeper than it.
fn doc_examples_of(text: &str, object: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    lines.iter().enumerate().any(|(i, l)| {
        if !defines(l, &["def", "class"], object) {
            return false;
        }
        let own = indent(l);
        lines[i + 1..]
            .iter()
            .take_while(|b| b.trim().is_empty() || indent(b) > own)
            .any(|b| b.contains(">>>"))
    })
}

fn libtest_defined(
    id: &str,
    t0_names: &HashSet<&str>,
    t0_files: &[&str],
    text: &mut dyn FnMut(&str) -> Option<String>,
) -> bool {
    if id.contains(" - ") && id.ends_with(')') {
        return true; // a doctest: a process of its own
    }
    let name = last_segment(id);
    !t0_names.contains(name)
        && t0_files
            .iter()
            .filter(|p| p.ends_with(".rs"))
            .any(|p| text(p).is_some_and(|t| defines_test_fn(&t, name)))
}

/// Whether `text`, a Rust source, has `fn name` under a test attribute (`#[test]`,
/// `#[tokio::test]`, `#[rstest]`, `#[test_case(…)]`: an attribute naming `test` on one
/// of the five lines above it): a function of the code under test named like the new
/// test is no test of t0's.
fn defines_test_fn(text: &str, name: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    lines.iter().enumerate().any(|(i, l)| {
        defines(l, &["fn"], name)
            && lines[i.saturating_sub(5)..=i].iter().any(|a| {
                let a = a.trim_start();
                a.starts_with("#[") && a.contains("test")
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::model::Outcome::{Failed, Passed};
    use crate::detect::testkit::parsed;

    fn with_format(mut r: ParsedRun, f: Format) -> ParsedRun {
        r.format = f;
        r
    }

    /// Each row: t0's named tests, t0's files, the judged run's tests, the format, and
    /// the ids that are not t0's.
    #[test]
    fn only_tests_t0_defines_may_run_in_the_judged_check() {
        let lib0 = "pub fn add(a: i64, b: i64) -> i64 {\n    a - b\n}\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {}\n}\n";
        let py0 = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\nclass TestCalc(Base):\n    def test_sub(self):\n        pass\n";
        let base = "class Base:\n    def test_inherited(self):\n        pass\n";
        let calc0 = "def add(a, b):\n    \"\"\"\n    >>> add(1, 1)\n    2\n    \"\"\"\n    return a - b\n\ndef sub(a, b):\n    return a - b\n";
        let files: &[(&str, &str)] = &[
            ("src/lib.rs", lib0),
            ("tests/test_calc.py", py0),
            ("tests/base.py", base),
            ("calc.py", calc0),
        ];
        type Row<'a> = (&'a str, &'a [&'a str], &'a [&'a str], Format, &'a [&'a str]);
        let rows: &[Row] = &[
            (
                "a libtest test t0 named",
                &["calc::tests::adds"],
                &["calc::tests::adds"],
                Format::Libtest,
                &[],
            ),
            (
                "a macro-made test no t0 source defines",
                &["calc::tests::adds"],
                &["calc::tests::adds", "calc::warms_up"],
                Format::Libtest,
                &["calc::warms_up"],
            ),
            (
                "t0's test name under another module path",
                &["calc::tests::adds"],
                &["calc::tests::adds", "calc::w::adds"],
                Format::Libtest,
                &["calc::w::adds"],
            ),
            (
                "t0 did not build: its sources define the test",
                &[],
                &["calc::tests::adds"],
                Format::Libtest,
                &[],
            ),
            (
                "t0 did not build: a name no t0 source defines",
                &[],
                &["calc::tests::adds", "calc::warms_up"],
                Format::Libtest,
                &["calc::warms_up"],
            ),
            (
                "a rustdoc test runs in a process of its own",
                &[],
                &["calc::src/lib.rs - add (line 3)"],
                Format::Libtest,
                &[],
            ),
            (
                "a new parameter of a t0 pytest test",
                &["tests/test_calc.py::test_add[1]"],
                &[
                    "tests/test_calc.py::test_add[1]",
                    "tests/test_calc.py::test_add[2]",
                ],
                Format::Pytest,
                &[],
            ),
            (
                "t0's module did not import: its text defines the test",
                &[],
                &[
                    "tests/test_calc.py::test_add",
                    "tests/test_calc.py::TestCalc::test_sub",
                ],
                Format::Pytest,
                &[],
            ),
            (
                "a method inherited from a t0 base class",
                &[],
                &["tests/test_calc.py::TestCalc::test_inherited"],
                Format::Pytest,
                &[],
            ),
            (
                "a test star-imported from the code under test",
                &["tests/test_calc.py::test_add"],
                &[
                    "tests/test_calc.py::test_add",
                    "tests/test_calc.py::test_aaa_warm",
                ],
                Format::Pytest,
                &["tests/test_calc.py::test_aaa_warm"],
            ),
            (
                "pytest named from a rootdir below the tree's root",
                &[],
                &["test_calc.py::test_add"],
                Format::Pytest,
                &[],
            ),
            (
                "a doctest of a docstring with examples at t0",
                &[],
                &["calc.py::calc.add"],
                Format::Pytest,
                &[],
            ),
            (
                "a doctest of a docstring t0 gave no examples",
                &["calc.py::calc.add"],
                &["calc.py::calc.add", "calc.py::calc.sub"],
                Format::Pytest,
                &["calc.py::calc.sub"],
            ),
            (
                "a test of a file t0 did not have",
                &[],
                &["tests/test_new.py::test_x"],
                Format::Pytest,
                &["tests/test_new.py::test_x"],
            ),
            (
                "a class the code under test added to a test module",
                &["tests/test_calc.py::test_add"],
                &[
                    "tests/test_calc.py::test_add",
                    "tests/test_calc.py::TestZWarmup::test_add",
                ],
                Format::Pytest,
                &["tests/test_calc.py::TestZWarmup::test_add"],
            ),
            (
                "a doctest of a package's module, named by its dotted name",
                &[],
                &["calc.py::pkg.calc.add"],
                Format::Pytest,
                &[],
            ),
            (
                "a doctest of a class made at run time",
                &["calc.py::calc.add"],
                &["calc.py::calc.add", "calc.py::calc.C.add"],
                Format::Pytest,
                &["calc.py::calc.C.add"],
            ),
            (
                "a macro-made test named like a function of the code under test",
                &["calc::tests::adds"],
                &["calc::tests::adds", "calc::a::add"],
                Format::Libtest,
                &["calc::a::add"],
            ),
            (
                "jest titles are not read",
                &[],
                &["calc adds"],
                Format::Jest,
                &[],
            ),
        ];
        let paths: Vec<&str> = files.iter().map(|f| f.0).collect();
        let read = |p: &str| files.iter().find(|f| f.0 == p).map(|f| f.1.to_string());
        for (what, t0, now, format, want) in rows {
            let b: Vec<_> = t0.iter().map(|i| (*i, Failed)).collect();
            let r: Vec<_> = now.iter().map(|i| (*i, Passed)).collect();
            let got = unfrozen_tests(
                &with_format(parsed(&r), *format),
                &with_format(parsed(&b), *format),
                &paths,
                &read,
            );
            assert_eq!(got, *want, "{what}");
        }
        let quiet_rows: &[(u64, u64, bool)] = &[(1, 1, false), (1, 2, true), (3, 2, false)];
        for &(then, now, flagged) in quiet_rows {
            let mut base = with_format(parsed(&[("calc::tests::adds", Failed)]), Format::Libtest);
            base.summary = Some(crate::check::model::Counts {
                failed: then,
                ..Default::default()
            });
            let mut run = with_format(parsed(&[]), Format::Libtest);
            run.summary = Some(crate::check::model::Counts {
                passed: now,
                ..Default::default()
            });
            let got = unfrozen_tests(&run, &base, &[], &|_| None);
            assert_eq!(!got.is_empty(), flagged, "{then} then, {now} now: {got:?}");
        }
    }

    #[test]
    fn a_definition_is_a_whole_word_after_its_keyword() {
        assert!(defines("def test_add():", &["def"], "test_add"));
        assert!(defines("    async def test_add():", &["def"], "test_add"));
        assert!(!defines("def test_add_more():", &["def"], "test_add"));
        assert!(!defines("undef test_add():", &["def"], "test_add"));
        assert!(!defines("x = test_add", &["def"], "test_add"));
        assert!(defines("pub fn adds() {}", &["fn"], "adds"));
        assert!(!defines("fn adds_more() {}", &["fn"], "adds"));
    }
}
