use super::*;

fn rules(check: &str) -> OracleRules {
    OracleRules::new(
        globset::GlobSet::empty(),
        guards::build_globset(&["golden/**".to_string()]).unwrap(),
        Some(check),
    )
}

#[test]
fn frozen_as_follows_runner_conventions() {
    let r = rules("sh check.sh && python3 tools/run.py -q");
    let table: &[(&str, Option<&str>)] = &[
        ("test_calc.py", Some("test file")),
        ("pkg/calc_test.py", Some("test file")),
        ("tests/calc.rs", Some("test file")),
        (
            "tests/helpers/data.json",
            Some("file under a test directory"),
        ),
        (
            "src/__snapshots__/a.js.snap",
            Some("file under a test directory"),
        ),
        ("calc.test.js", Some("test file")),
        ("t/basic.t", Some("test file")),
        ("check.sh", Some("check script")),
        ("tools/run.py", Some("check script")),
        ("golden/out.txt", Some("declared oracle file")),
        ("calc.py", None),
        ("src/lib.rs", None),
        ("node_modules/x/test/a.js", None),
        ("conftest.py", None), // runner configuration: the manifest's, not a test file
        ("testutils.py", Some("test helper")),
        ("pkg/test_helpers.py", Some("test file")), // test_*.py is pytest's own pattern
        ("pkg/testing_utils.py", Some("test helper")),
        ("src/test-utils.js", Some("test helper")),
        ("latest.py", None),
        ("contest.py", None),
        // ninth fresh review: an honest page module, and an assertion helper
        ("web/testimonials.py", None),
        ("shop/assertions.py", Some("test helper")),
        // tenth fresh review: a JavaScript library's own lib/spec/ is code
        ("lib/spec/version.js", None),
        ("lib/spec/version.spec.js", Some("test file")),
        ("spec/helpers/setup.js", Some("file under a test directory")),
        ("src/testUtils.ts", Some("test helper")),
        ("pkg/tests_common.py", Some("test helper")),
        ("pkg/testament.py", None),
    ];
    for (path, want) in table {
        assert_eq!(r.frozen_as(path), *want, "{path}");
    }
}

#[test]
fn check_words_name_scripts_and_make() {
    let table: &[(&str, &[&str])] = &[
        ("sh check.sh", &["check.sh"]),
        ("./run-tests.sh --fast", &["run-tests.sh"]),
        ("cargo test --offline", &[]),
        ("python3 -m pytest tests/unit", &["tests/unit"]),
        (
            "make test",
            &["GNUmakefile", "Makefile", "makefile", "test"],
        ),
        (
            "make -C sub -j 4 check V=1",
            &[
                "GNUmakefile",
                "Makefile",
                "makefile",
                "sub/GNUmakefile",
                "sub/Makefile",
                "sub/check",
                "sub/makefile",
            ],
        ),
        ("cd x && make", &["GNUmakefile", "Makefile", "makefile"]),
        // second fresh review: -C's makefiles, -f in every spelling, option values
        (
            "make -C sub test",
            &[
                "GNUmakefile",
                "Makefile",
                "makefile",
                "sub/GNUmakefile",
                "sub/Makefile",
                "sub/makefile",
                "sub/test",
            ],
        ),
        (
            "make --file=ci.mk test",
            &["GNUmakefile", "Makefile", "ci.mk", "makefile", "test"],
        ),
        (
            "make -fci.mk test",
            &["GNUmakefile", "Makefile", "ci.mk", "makefile", "test"],
        ),
        ("python3 -m pytest --config-file=ci.ini checks", &["ci.ini"]),
        ("A=1 'ci/test.sh'; true", &["ci/test.sh"]),
        ("/abs/path/check.sh", &[]),
        // third fresh review: unittest names its test modules by module name
        (
            "python3 -m unittest -v checks",
            &["checks.py", "checks/__init__.py"],
        ),
        (
            "python -m unittest tests.test_calc.T.test_add -k add",
            &[
                "tests.py",
                "tests.test_calc.T.test_add",
                "tests/__init__.py",
                "tests/test_calc.py",
                "tests/test_calc/T.py",
                "tests/test_calc/T/__init__.py",
                "tests/test_calc/T/test_add.py",
                "tests/test_calc/T/test_add/__init__.py",
                "tests/test_calc/__init__.py",
            ],
        ),
        (
            "python3 -m unittest discover -s tests -p 'check_*.py'",
            &["check_*.py"],
        ),
        // a module name outside `-m unittest` is no file
        ("pytest -k checks", &[]),
    ];
    for (cmd, want) in table {
        assert_eq!(check_words(cmd), *want, "{cmd}");
    }
}

/// pytest's `--doctest-glob` documents are frozen within the paths the run names
/// (third fresh review: `docs/usage.md` edited to the buggy output).
#[test]
fn documents_pytest_collects_for_doctests_are_frozen() {
    let rows: &[(&str, &str, bool)] = &[
        (
            "python3 -m pytest --doctest-glob='*.md' -v docs",
            "docs/usage.md",
            true,
        ),
        (
            "python3 -m pytest --doctest-glob='*.md' -v docs",
            "docs/a/b.md",
            true,
        ),
        (
            "python3 -m pytest --doctest-glob='*.md' -v docs",
            "README.md",
            false,
        ),
        (
            "python3 -m pytest --doctest-glob='*.md' -v docs",
            "docs/usage.txt",
            false,
        ),
        ("pytest --doctest-glob '*.rst'", "guide/intro.rst", true),
        (
            "pytest --doctest-glob=*.txt -k docs tests/",
            "docs/a.txt",
            false,
        ),
        (
            "pytest --doctest-glob=*.txt -k docs tests/",
            "tests/a.txt",
            true,
        ),
        ("pytest -v docs", "docs/usage.md", false),
        ("pytest -v", "testcalc.txt", true),
        ("pytest -v tests", "notes.txt", false),
        ("cargo test --doctest-glob=*.md", "usage.md", false),
    ];
    for (check, path, frozen) in rows {
        let r = OracleRules::new(GlobSet::empty(), GlobSet::empty(), Some(check));
        assert_eq!(
            r.frozen_as(path) == Some("document whose doctests the check collects"),
            *frozen,
            "{check} / {path}"
        );
    }
}

#[test]
fn rust_cfg_test_items_and_doctests_are_regions() {
    let src = "\
/// Adds.
///
/// ```
/// assert_eq!(calc::add(1, 2), 3);
/// ```
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn adds() {
        assert_eq!(add(2, 3), 5); // { not a brace
    }
}

#[cfg(test)]
mod more;
";
    assert_eq!(
        test_regions(Lang::Rust, src),
        vec![
            (3, 5, "doctest"),
            (10, 17, "#[cfg(test)] item"),
            (19, 20, "#[cfg(test)] item"),
        ]
    );
}

#[test]
fn python_doctests_are_regions() {
    let src = "def add(a, b):\n    \"\"\"\n    >>> add(2, 3)\n    5\n\n    >>> add(0, 0)\n    0\n    \"\"\"\n    return a + b\n";
    assert_eq!(
        test_regions(Lang::Python, src),
        vec![(3, 4, "doctest"), (6, 7, "doctest")]
    );
}

#[test]
fn changed_lines_lists_old_and_new_lines() {
    let old = "a\nb\nc\n";
    let new = "a\nB\nc\nd\n";
    assert_eq!(
        changed_lines(old, new, None),
        vec!["-2: b", "+2: B", "+4: d"]
    );
    // Inside a region only: the edit of line 2 counts, the addition after line 3 does not.
    assert_eq!(
        changed_lines(old, new, Some((1, 2))),
        vec!["-2: b", "+2: B"]
    );
    // Additions inside a region (a new test) carry no deletion.
    let grown = "a\nb\nb2\nc\n";
    let l = changed_lines(old, grown, Some((1, 3)));
    assert!(l.iter().all(|x| x.starts_with('+')), "{l:?}");
}

#[test]
fn out_of_line_rust_test_modules_are_found() {
    let sources = vec![
        (
            "src/lib.rs".to_string(),
            "pub fn add() {}\n#[cfg(test)]\nmod tests;\n".to_string(),
        ),
        (
            "src/net.rs".to_string(),
            "#[cfg(test)] mod net_tests;\n// #[cfg(test)] mod commented;\n".to_string(),
        ),
        ("src/other.rs".to_string(), "mod not_tests;\n".to_string()),
    ];
    let have = [
        "src/tests.rs",
        "src/net/net_tests/mod.rs",
        "src/not_tests.rs",
    ];
    let found = rust_test_modules(&sources, &|p| have.contains(&p));
    assert_eq!(found, vec!["src/net/net_tests/mod.rs", "src/tests.rs"]);
}

/// Which files a script refers to, and how, by the shapes scripts and makefiles use.
#[test]
fn scripts_refer_to_what_they_source_include_or_run() {
    use RefKind::{Fed, Run, Searched, Sourced};
    /// (script path, its content, the references expected)
    type Row<'a> = (&'a str, &'a str, &'a [(&'a str, RefKind)]);
    let rows: &[Row] = &[
        (
            "run_tests.sh",
            ". scripts/env.sh\npytest \"$@\"\n",
            &[("scripts/env.sh", Sourced)],
        ),
        (
            "run_tests.sh",
            "source ./scripts/env.sh # settings\n",
            &[("scripts/env.sh", Sourced)],
        ),
        (
            "ci/run.sh",
            ". \"$(dirname \"$0\")/env.sh\"\n",
            &[("ci/env.sh", Sourced), ("env.sh", Sourced)],
        ),
        (
            "ci/run.sh",
            ". ${0%/*}/lib.sh\n",
            &[("ci/lib.sh", Sourced), ("lib.sh", Sourced)],
        ),
        (
            "ci/run.sh",
            "sh -e helpers/setup\n",
            &[("ci/helpers/setup", Run), ("helpers/setup", Run)],
        ),
        (
            "Makefile",
            "-include config.mk\ntest:\n\t@./scripts/t.sh\n",
            &[("config.mk", Sourced), ("scripts/t.sh", Run)],
        ),
        (
            "Makefile",
            "test:\n\tpython3 runtests.py -v\n",
            &[("runtests.py", Run)],
        ),
        (
            "check.sh",
            "set -e\n./tools/tap-run\n",
            &[("tools/tap-run", Run)],
        ),
        (
            "check.sh",
            "X=1 exec tools/tap-run --all\n",
            &[("tools/tap-run", Run)],
        ),
        ("Makefile", "include ../outside.mk\n", &[]),
        // what it reads its commands or inputs from, and where it searches
        (
            "check.sh",
            "eval \"$(cat cmds.txt)\"\n",
            &[("cmds.txt", Fed)],
        ),
        (
            "check.sh",
            "xargs -n1 sh < suites.list\n",
            &[("suites.list", Fed)],
        ),
        (
            "check.sh",
            "find scripts -name '*.tap.sh' -exec sh {} \\;\n",
            &[("scripts", Searched)],
        ),
        ("check.sh", "cat <<EOF\nx\nEOF\n", &[]),
        // a file the check only reads may be the agent's to change
        ("check.sh", "f=\" $(cat failing) \"\n", &[]),
        (
            "t/basic.t",
            ". t/lib.sh\n",
            &[("t/lib.sh", Sourced), ("t/t/lib.sh", Sourced)],
        ),
        // not a file reference: a comment, an absolute path, a path under $HOME, a
        // program on PATH, a file that is only an argument
        ("run_tests.sh", "# . scripts/old.sh\n", &[]),
        ("run_tests.sh", ". /etc/profile\n", &[]),
        ("run_tests.sh", ". \"$HOME/.env\"\n", &[]),
        (
            "run_tests.sh",
            "pytest -q tests/test_a.py\ngrep x data/in.txt\n",
            &[],
        ),
    ];
    for (path, content, want) in rows {
        let got = script_refs(path, content);
        let want: Vec<(String, RefKind)> =
            want.iter().map(|(s, k)| ((*s).to_string(), *k)).collect();
        assert_eq!(got, want, "{path}: {content:?}");
    }
}

#[test]
fn pulled_in_follows_what_the_check_runs_and_what_anything_sources() {
    let files: BTreeMap<&str, &str> = BTreeMap::from([
        ("run_tests.sh", ". scripts/env.sh\n./tools/tap-run\n"),
        (
            "scripts/env.sh",
            ". scripts/deeper.sh\n. scripts/env.sh\nsh scripts/setup.sh\n",
        ),
        ("scripts/deeper.sh", "sh scripts/missing.sh\n"),
        ("scripts/setup.sh", "true\n"),
        // the harness runs the code under test, which stays free
        (
            "tools/tap-run",
            "#!/bin/sh\n. tools/lib.sh\n. tools/calc.sh\n. tools/calclib\nsh add.sh 2 3\n",
        ),
        ("tools/lib.sh", "T=1\n"),
        // a sourced library of functions may be the code under test: scanned, not frozen
        ("tools/calc.sh", "add() { echo $(( $1 + $2 )); }\n"),
        // a library the shell scan would not read (no `.sh`): frozen after all
        ("tools/calclib", "add() { echo $(( $1 + $2 )); }\n"),
        ("add.sh", "echo $(( $1 + $2 ))\n"),
        ("t/a.t", ". t/lib.sh\nsh add.sh\n"),
        ("t/lib.sh", "\n"),
    ]);
    let read = |p: &str| files.get(p).map(|s| (*s).to_string());
    let list = |d: &str| {
        files
            .keys()
            .filter(|p| p.starts_with(&format!("{d}/")))
            .map(|p| (*p).to_string())
            .collect::<Vec<_>>()
    };
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_string()).collect::<Vec<_>>();
    assert_eq!(
        pulled_in(&s(&["run_tests.sh"]), &s(&["t/a.t"]), &read, &list, 10),
        s(&[
            "scripts/deeper.sh",
            "scripts/env.sh",
            "scripts/setup.sh",
            "t/lib.sh",
            "tools/calclib",
            "tools/lib.sh",
            "tools/tap-run"
        ])
    );
    assert_eq!(
        pulled_in(&s(&["run_tests.sh"]), &[], &read, &list, 1).len(),
        1
    );
    // a searched directory's scripts, and the list a check reads its suites from
    let files2: BTreeMap<&str, &str> = BTreeMap::from([
        (
            "check.sh",
            "find suites -name '*.sh' -exec sh {} \\;\nxargs sh < list.txt\n",
        ),
        ("suites/a.sh", "echo ok\n"),
        ("suites/data.json", "{}\n"),
        ("list.txt", "suites/a.sh\nother.sh\n"),
        // named by the list xargs runs: the check's, like the list
        ("other.sh", "echo ok\n"),
    ]);
    let read2 = |p: &str| files2.get(p).map(|s| (*s).to_string());
    let list2 = |d: &str| {
        files2
            .keys()
            .filter(|p| p.starts_with(&format!("{d}/")))
            .map(|p| (*p).to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        pulled_in(&s(&["check.sh"]), &[], &read2, &list2, 10),
        s(&["list.txt", "other.sh", "suites/a.sh"])
    );
    // a makefile include t0 lacks is frozen as absent (a fresh review created
    // `local.mk` behind `-include local.mk` and reached exit 10); a sourced shell file
    // t0 lacks may be the code the task asks for, and stays free
    let files3: BTreeMap<&str, &str> = BTreeMap::from([(
        "Makefile",
        "-include local.mk\ntest:\n\t. ./calc.sh && sh t/run.sh\n",
    )]);
    let read3 = |p: &str| files3.get(p).map(|s| (*s).to_string());
    assert_eq!(
        pulled_in(&s(&["Makefile"]), &[], &read3, &|_| Vec::new(), 10),
        s(&["local.mk"])
    );
}

/// `cargo fmt` over a test file or a `#[cfg(test)]` module is layout; an edit of an
/// assertion, with or without the formatting, is not (fresh review: an honest fix
/// followed by `cargo fmt` was an oracle edit).
#[test]
fn rust_layout_changes_are_not_edits_of_the_oracle() {
    let t0 = "pub fn add(a: i64, b: i64) -> i64 { a - b }\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn t() { assert_eq!(add(2,3), 5); }\n}\n";
    let fixed_and_formatted = "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn t() {\n        assert_eq!(add(2, 3), 5);\n    }\n}\n";
    let weakened = "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn t() {\n        assert_eq!(add(2, 3), -1);\n    }\n}\n";
    assert!(regions_layout_only(t0, fixed_and_formatted));
    assert!(!regions_layout_only(t0, weakened));
    assert!(
        !layout_only(t0, fixed_and_formatted),
        "the code changed too"
    );
    let test_file = "#[test]\nfn t() { assert_eq!(calc::add(2, 3), 5); }\n";
    let formatted = "#[test]\nfn t() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n";
    assert!(layout_only(test_file, formatted));
    assert!(!layout_only(test_file, &formatted.replace("5)", "-1)")));
}

/// A test function at the top level of a source file and an item under any `cfg`
/// that names `test` are test regions; `cfg(not(test))` is code (second fresh review:
/// both test forms could be weakened freely).
#[test]
fn top_level_tests_and_any_test_cfg_are_regions() {
    let src = "pub fn add(a: i64, b: i64) -> i64 { a + b }\n#[test]\nfn adds() {\n    assert_eq!(add(2, 3), 5);\n}\n#[cfg(all(test))]\nmod t {\n    #[tokio::test]\n    async fn x() {}\n}\n#[cfg(not(test))]\nfn prod() {}\n#[tokio::test]\nasync fn y() {\n    assert!(true);\n}\n";
    assert_eq!(
        test_regions(Lang::Rust, src),
        vec![
            (2, 5, "#[cfg(test)] item"),
            (6, 10, "#[cfg(test)] item"),
            (13, 16, "#[cfg(test)] item"),
        ]
    );
}

/// A doctest in a block doc comment is a test region like one in `///` lines (second
/// fresh review: `/** ``` … ``` */` could be weakened freely).
#[test]
fn block_doc_comment_doctests_are_regions() {
    let src = "/**\n * Adds.\n * ```\n * assert_eq!(calc::add(2, 3), 5);\n * ```\n */\npub fn add(a: i64, b: i64) -> i64 { a + b }\n/*! ```\nassert!(true);\n``` */\n/* ```\nnot_a_doc();\n``` */\n";
    assert_eq!(
        test_regions(Lang::Rust, src),
        vec![(3, 5, "doctest"), (8, 10, "doctest")]
    );
}

/// A doctest written as doc attributes is a test region like one in `///` lines
/// (third fresh review: `#[doc = "assert_eq!(…)"]` lines could be weakened freely):
/// one attribute per line, a literal over several lines, `\n` escapes in one line.
#[test]
fn doc_attribute_doctests_are_regions() {
    let src = concat!(
        "#[doc = \"Adds.\"]\n",
        "#[doc = \"```\"]\n",
        "#[doc = \"assert_eq!(calc::add(2, 3), 5);\"]\n",
        "#[doc = \"```\"]\n",
        "pub fn add(a: i64, b: i64) -> i64 { a + b }\n",
        "#[doc = \"\n",
        "```\n",
        "assert!(calc::ok());\n",
        "```\n",
        "\"]\n",
        "pub fn ok() -> bool { true }\n",
        "#![doc = \"```\\nassert!(true);\\n```\"]\n",
        "#[doc = \"```text\"]\n",
        "#[doc = \"not code\"]\n",
        "#[doc = \"```\"]\n",
        "#[doc = include_str!(\"x.md\")]\n",
        "#[derive(Debug)]\n",
    );
    assert_eq!(
        test_regions(Lang::Rust, src),
        vec![(2, 4, "doctest"), (7, 9, "doctest"), (12, 12, "doctest")]
    );
}

/// A README the crate reads into its docs holds doctests: its code blocks are test
/// regions, its prose is not (a fresh review fixed a failing README doctest by
/// editing the README and reached exit 10).
#[test]
fn documents_a_crate_includes_hold_doctests() {
    let sources = vec![
        (
            "src/lib.rs".to_string(),
            "#![doc = include_str!(\"../README.md\")]\npub fn add() {}\n".to_string(),
        ),
        (
            "crates/x/src/lib.rs".to_string(),
            "#[doc = include_str!( \"../docs/guide.md\" )]\nmod m {}\n#![doc = include_str!(\"/abs.md\")]\n".to_string(),
        ),
    ];
    let exists = |p: &str| matches!(p, "README.md" | "crates/x/docs/guide.md");
    assert_eq!(
        rust_doc_includes(&sources, &exists),
        vec![
            "README.md".to_string(),
            "crates/x/docs/guide.md".to_string()
        ]
    );
    let md = "# calc\n\n```\nassert_eq!(calc::add(2, 3), 5);\n```\n\n```sh\ncargo test\n```\n\n```rust,no_run\nlet x = 1;\n```\n\n```text\nout\n```\n\n~~~should_panic\npanic!();\n~~~\n````\nnested ``` inside\n````\n";
    let regions: Vec<(usize, usize)> = markdown_doctests(md)
        .into_iter()
        .map(|(s, e, _)| (s, e))
        .collect();
    assert_eq!(regions, vec![(3, 5), (11, 13), (19, 21), (22, 24)]);
}

/// `spec/` is a test directory for RSpec and JavaScript specs, not for a Python, Rust
/// or Go package of that name; `golden/` and `fixtures/` hold test data for everyone.
#[test]
fn which_directories_hold_the_oracle() {
    let rows = [
        ("spec", "calc_spec.rb", true),
        ("spec", "calc.spec.js", true),
        ("spec", "paths.py", false),
        ("spec", "mod.rs", false),
        ("golden", "cases.json", true),
        ("fixtures", "users.yaml", true),
        ("__mocks__", "chai.js", true),
        ("tests", "test_calc.py", true),
        ("src", "calc.py", false),
    ];
    for (dir, name, want) in rows {
        assert_eq!(in_test_dir(dir, name), want, "{dir}/{name}");
    }
}

/// Under a make check every `*.mk` is frozen (a fragment included by pattern);
/// under another check a `.mk` is an ordinary file.
#[test]
fn makefile_fragments_belong_to_a_make_check() {
    let make = OracleRules::new(GlobSet::empty(), GlobSet::empty(), Some("make test"));
    assert_eq!(
        make.frozen_as("conf/zz.mk"),
        Some("makefile fragment of a make check")
    );
    let pytest = OracleRules::new(
        GlobSet::empty(),
        GlobSet::empty(),
        Some("python3 -m pytest"),
    );
    assert_eq!(pytest.frozen_as("conf/zz.mk"), None);
}

/// Data a test names is frozen with it: by a path from the root, from the test's
/// directory or the one above, or by a file name only one file has; code and names
/// that match nothing are not.
#[test]
fn data_files_the_tests_name_are_found() {
    let files: Vec<String> = [
        "expected.txt",
        "calc.py",
        "tests/test_calc.py",
        "tests/data/cases.json",
        "docs/notes.md",
        "a/out.csv",
        "b/out.csv",
        "data/input.bin",
        "want.out",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    let sources = vec![(
        "tests/test_calc.py".to_string(),
        "import json\nfrom pathlib import Path\nfrom calc import add\nWANT = open('expected.txt').read()\nCASES = json.load(open(Path(__file__).parent / 'data/cases.json'))\nBIN = Path(__file__).parent.parent / 'data' / \"input.bin\"\nOUT = 'out.csv'\nMOD = 'calc.py'\nMSG = 'no such file.txt'\nassert order([3]) + '\\n' == open('want.out').read()\n".to_string(),
    )];
    assert_eq!(
        test_data(&sources, &files),
        vec![
            "data/input.bin".to_string(),
            "expected.txt".to_string(),
            "tests/data/cases.json".to_string(),
            "want.out".to_string(),
        ],
        "out.csv names two files (ambiguous), calc.py is code, the message no file"
    );
}

/// A Go vendor directory (one holding `modules.txt` at t0) is frozen whole: the tests'
/// assertion libraries are built from it (ninth fresh review).
#[test]
fn a_code_packages_fixtures_subpackage_is_code() {
    let paths: Vec<String> = [
        "league/__init__.py",
        "league/fixtures/__init__.py",
        "league/fixtures/rounds.py",
        "tests/__init__.py",
        "tests/fixtures/__init__.py",
        "tests/fixtures/teams.py",
        "fixtures/__init__.py",
        "fixtures/users.py",
        "app/fixtures/data.json",
    ]
    .iter()
    .map(|p| (*p).to_string())
    .collect();
    let dirs = code_fixture_packages(paths.iter());
    assert_eq!(dirs, vec!["league/fixtures/".to_string()]);
    let mut r = OracleRules::new(GlobSet::empty(), GlobSet::empty(), Some("pytest"));
    r.set_code_fixtures(dirs);
    let table: &[(&str, Option<&str>)] = &[
        ("league/fixtures/rounds.py", None),
        (
            "league/fixtures/schedule.json",
            Some("file under a test directory"),
        ),
        ("tests/fixtures/teams.py", Some("test file")),
        ("fixtures/users.py", Some("file under a test directory")),
        (
            "app/fixtures/data.json",
            Some("file under a test directory"),
        ),
    ];
    for (path, want) in table {
        assert_eq!(r.frozen_as(path), *want, "{path}");
    }
}

#[test]
fn a_go_vendor_directory_is_frozen() {
    let paths: Vec<String> = [
        "go.mod",
        "vendor/modules.txt",
        "vendor/github.com/stretchr/testify/assert/assertions.go",
        "svc/vendor/modules.txt",
        "docs/vendor/notes.md",
    ]
    .iter()
    .map(|p| (*p).to_string())
    .collect();
    let dirs = vendor_dirs(paths.iter());
    assert_eq!(dirs, vec!["vendor/".to_string(), "svc/vendor/".to_string()]);
    let mut r = OracleRules::new(GlobSet::empty(), GlobSet::empty(), Some("go test ./..."));
    r.set_vendor_dirs(dirs);
    let table: &[(&str, Option<&str>)] = &[
        (
            "vendor/github.com/stretchr/testify/assert/assertions.go",
            Some("vendored dependency"),
        ),
        ("svc/vendor/x/y.go", Some("vendored dependency")),
        ("docs/vendor/notes.md", None),
        ("calc.go", None),
    ];
    for (path, want) in table {
        assert_eq!(r.frozen_as(path), *want, "{path}");
    }
}

/// A JavaScript test's `require('./cases')` names `cases.json` (node resolves the
/// extension; a fresh review edited the expected values there).
#[test]
fn a_required_json_table_is_data_the_tests_read() {
    let files: Vec<String> = [
        "test/cases.json",
        "test/calc.test.js",
        "lib/calc.js",
        "docs/cases.md",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    let sources = vec![(
        "test/calc.test.js".to_string(),
        "const cases = require('./cases');\nconst { add } = require('../lib/calc');\nconst label = 'cases';\n".to_string(),
    )];
    assert_eq!(
        test_data(&sources, &files),
        vec!["test/cases.json".to_string()]
    );
}

/// `[oracle] editable` lets a person unfreeze what loopexec inferred (data a test
/// reads, a helper, a file under a test directory), never a test file or a declared
/// oracle file (a fresh review's honest locale fix could never go green).
#[test]
fn editable_globs_unfreeze_only_what_was_inferred() {
    let globs = |g: &[&str]| crate::observe::guards::build_globset(g).unwrap();
    let mut r = OracleRules::new(GlobSet::empty(), globs(&["golden/**"]), Some("pytest"));
    r.set_test_data(vec!["locales/fr.json".to_string()]);
    r.set_editable(globs(&[
        "locales/*.json",
        "tests/**",
        "golden/**",
        "testutils.py",
    ]));
    let table: &[(&str, Option<&str>)] = &[
        ("locales/fr.json", None),
        ("testutils.py", None),
        ("tests/fixtures/users.yaml", None),
        ("tests/test_i18n.py", Some("test file")),
        ("golden/out.txt", Some("declared oracle file")),
    ];
    for (path, want) in table {
        assert_eq!(r.frozen_as(path), *want, "{path}");
    }
}

/// Expectations kept in a module of a known language are data the tests read when only
/// tests use them and the file holds no code (tenth fresh review: `cases.py`,
/// `cases.go`); a constants module the code imports too, or one with functions, is
/// the code's.
#[test]
fn a_module_that_only_holds_the_tests_expectations_is_data() {
    let src = |p: &str, t: &str| (p.to_string(), t.to_string());
    let sources = vec![
        src("tests/test_calc.py", "from cases import ADD_CASES\nfrom config import LIMIT\nfrom helpers import check\nimport calc\n"),
        src("tests/cases.py", "ADD_CASES = {\n    \"small\": (2, 3, 5),\n}\n"),
        src("config.py", "LIMIT = 10\n"),
        src("calc.py", "from config import LIMIT\n\ndef add(a, b):\n    return a + b\n"),
        src("tests/helpers.py", "def check(x):\n    assert x\n"),
        src("calc/cases.go", "package calc\n\nvar AddCases = []struct{ A, B, Want int }{\n\t{2, 3, 5},\n}\n"),
        src("calc/limits.go", "package calc\n\nconst Max = 10\n"),
        src("calc/calc.go", "package calc\n\nfunc Add(a, b int) int {\n\tif a > Max {\n\t\treturn Max\n\t}\n\treturn a + b\n}\n"),
        src("calc/calc_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tfor _, c := range AddCases {\n\t\t_ = c\n\t}\n\t_ = Max\n}\n"),
    ];
    let is_test = |p: &str| {
        let name = p.rsplit('/').next().unwrap_or(p);
        name.starts_with("test_") || name.ends_with("_test.go")
    };
    assert_eq!(
        data_modules(&sources, &is_test),
        vec!["tests/cases.py".to_string(), "calc/cases.go".to_string()]
    );
}

/// Code under test that imports, names or requires a frozen data file reaches the
/// expectations in memory (twelfth review: a Go `init()`, a module-level loop, a
/// required JSON rewritten); code that names other things does not. A data file the
/// code names too is the code's (a `config.json` the app requires, titled in a test).
#[test]
fn code_that_reaches_test_data_is_told_and_code_data_is_not_frozen() {
    let handles = vec![
        "AddCases".to_string(),
        "cases".to_string(),
        "cases.json".to_string(),
    ];
    let rows: &[(&str, &str, bool)] = &[
        ("calc.py", "import cases as _c", true),
        ("calc.py", "from tests.cases import ADD_CASES", true),
        ("calc.py", "showcases = 1", false),
        ("fixup.go", "\tfor i := range AddCases {", true),
        ("calc.go", "\treturn a + b", false),
        (
            "calc.js",
            "for (const c of require('./cases')) c[2] = add(c[0], c[1]);",
            true,
        ),
        ("calc.js", "const label = 'use cases';", false),
        ("add.js", "const t = require('./ca' + 'ses');", true),
        (
            "add.js",
            "const raw = fs.readFileSync(path.join(__dirname, 'ca' + 'ses.json'));",
            true,
        ),
    ];
    for (path, line, want) in rows {
        assert_eq!(reaches_data(path, line, &handles), *want, "{path}: {line}");
    }
    let src = |p: &str, t: &str| (p.to_string(), t.to_string());
    let sources = vec![
        src("app.js", "const cfg = require('./config.json');\n"),
        src("test/app.test.js", "describe('config.json', () => {});\n"),
        src("shop/__init__.py", "from . import rates\n"),
        src("shop/rates.py", "VAT = {'de': 0.91}\n"),
        src("tests/test_rates.py", "from shop.rates import VAT\n"),
    ];
    let is_test = |p: &str| p.contains("test");
    assert_eq!(
        not_named_by_code(
            vec!["config.json".to_string(), "test/expected.txt".to_string()],
            &sources,
            &is_test
        ),
        vec!["test/expected.txt".to_string()]
    );
    assert!(
        data_modules(&sources, &is_test).is_empty(),
        "rates.py is the app's"
    );
}

/// A `[[test]]` target outside `tests/` is a test crate, with the modules it
/// declares (third fresh review: `checks/it.rs` was edited freely).
#[test]
fn cargo_test_targets_outside_tests_are_test_modules() {
    let manifests = vec![
        (
            "Cargo.toml".to_string(),
            "[package]\nname = \"calc\"\n\n[[test]]\nname = \"it\"\npath = \"checks/it.rs\"\n\n[[test]]\nname = \"gone\"\npath = \"checks/gone.rs\"\n\n[[bin]]\nname = \"b\"\npath = \"src/b.rs\"\n".to_string(),
        ),
        (
            "crates/x/Cargo.toml".to_string(),
            "[[test]]\nname = \"y\"\npath = \"../../shared/y.rs\"\n[[test]]\nname = \"abs\"\npath = \"/etc/t.rs\"\n".to_string(),
        ),
        ("bad/Cargo.toml".to_string(), "[[test]\npath = 1".to_string()),
    ];
    let sources = vec![(
        "checks/it.rs".to_string(),
        "mod common;\npub(crate) mod more;\n// mod commented;\nfn f() {}\n".to_string(),
    )];
    let have = [
        "checks/it.rs",
        "checks/common.rs",
        "checks/more/mod.rs",
        "checks/commented.rs",
        "shared/y.rs",
        "src/b.rs",
    ];
    let found = cargo_test_targets(&manifests, &sources, &|p| have.contains(&p));
    assert_eq!(
        found,
        vec![
            "checks/common.rs".to_string(),
            "checks/it.rs".to_string(),
            "checks/more/mod.rs".to_string(),
            "shared/y.rs".to_string(),
        ]
    );
}

/// Modules only the tests import: a JavaScript table (`cases.js`) is data, a Python
/// module that fails tests (`support.check`) is an assertion helper; the code under
/// test, a module code imports too, and a JavaScript module with functions are
/// neither (third fresh review).
#[test]
fn modules_only_the_tests_use_are_data_or_assertion_helpers() {
    let src = |p: &str, t: &str| (p.to_string(), t.to_string());
    let sources = vec![
        src("calc.js", "exports.add = (a, b) => a - b;\n"),
        src("cases.js", "module.exports = [\n  [2, 3, 5],\n];\n"),
        src("util.js", "module.exports = { twice(x) { return 2 * x } };\nfunction f() {}\n"),
        src("shared.js", "module.exports = [1];\n"),
        src("app.js", "const s = require('./shared');\n"),
        src(
            "calc.test.js",
            "const { add } = require('./calc');\nconst cases = require('./cases');\nconst u = require(\"./util.js\");\nconst s = require('./shared');\n",
        ),
        src("calc.py", "def add(a, b):\n    return a - b\n"),
        src(
            "support.py",
            "def check(got, want):\n    if got != want:\n        raise AssertionError(got)\n",
        ),
        src("shared_assert.py", "def ok(x):\n    assert x\n"),
        src("app.py", "from shared_assert import ok\n"),
        src(
            "tests/test_calc.py",
            "from calc import add\nfrom support import check\nimport shared_assert\n",
        ),
    ];
    let is_test = |p: &str| p.starts_with("tests/") || p.ends_with(".test.js");
    assert_eq!(
        data_modules(&sources, &is_test),
        vec!["cases.js".to_string()]
    );
    assert_eq!(
        assertion_helpers(&sources, &is_test),
        vec!["support.py".to_string()]
    );
    // a nineteenth review: helpers that fail a test by another exception or a
    // panic, named for serving the tests; code under test that raises is not one
    let sources = vec![
        src("calc.py", "def div(a, b):\n    if b == 0:\n        raise ZeroDivisionError(a)\n    return a / b\n"),
        src("support.py", "def require_close(got, want):\n    if abs(got - want) > 1e-9:\n        raise ValueError(got)\n"),
        src("test_helpers.py", "import sys\ndef need(x):\n    if not x:\n        sys.exit(1)\n"),
        src("slow.py", "def slow_total(xs):\n    return sum(xs)\n"),
        src("tests/test_calc.py", "from calc import div\nimport support, slow, checker\nfrom test_helpers import need\n"),
        src("src/lib.rs", "pub mod support;\npub mod parse;\npub mod checks;\npub fn add(a: i64, b: i64) -> i64 { a - b }\n"),
        src("src/support.rs", "pub fn require_same(a: i64, b: i64) {\n    if a != b { panic!(\"{a} != {b}\"); }\n}\n"),
        src("src/parse.rs", "pub fn parse(s: &str) -> i64 {\n    assert!(!s.is_empty());\n    s.parse().unwrap()\n}\n"),
        src("src/helpers.rs", "pub fn ok(a: bool) { assert!(a); }\n"),
        src("src/app.rs", "use crate::helpers::ok;\n"),
        src("checker.py", "def spell(w):\n    if not w:\n        raise ValueError(w)\n"),
        src("tests/it.rs", "use calc::support::require_same;\nuse calc::parse::parse;\nuse calc::helpers;\n#[test]\nfn t() { require_same(calc::add(2, 3), 5); }\n"),
    ];
    let is_test = |p: &str| p.starts_with("tests/");
    assert_eq!(
        assertion_helpers(&sources, &is_test),
        vec![
            "support.py".to_string(),
            "test_helpers.py".to_string(),
            "src/support.rs".to_string()
        ]
    );
    assert_eq!(
        js_relative_requires(
            "test/a.test.js",
            "import c from '../cases.js';\nrequire('./x')\n",
            &|p| p == "cases.js"
        ),
        vec!["cases.js".to_string()]
    );
}

/// Golden files a test names by a template are frozen: `f"{name}.out"` within the
/// directory the test names (`"expected"`), an extension joined at run time within
/// such a directory; a template that names nothing, or an extension outside a named
/// directory, freezes nothing (third fresh review).
#[test]
fn golden_files_named_by_a_template_are_data() {
    let files: Vec<String> = [
        "expected/one.out",
        "expected/two.out",
        "expected/notes.md",
        "golden/a.json",
        "other/x.out",
        "tests/snap/b.txt",
        "calc.py",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    let sources = vec![
        (
            "tests/test_render.py".to_string(),
            "ROOT = pathlib.Path(__file__).resolve().parent.parent\nwant = (ROOT / \"expected\" / f\"{name}.out\").read_text()\nB = open('snap/%s.txt' % n)\n".to_string(),
        ),
        (
            "test/x.test.js".to_string(),
            "const p = path.join(__dirname, '..', 'golden', name + '.json');\nconst q = name + '.out';\n".to_string(),
        ),
    ];
    assert_eq!(
        test_data(&sources, &files),
        vec![
            "expected/one.out".to_string(),
            "expected/two.out".to_string(),
            "golden/a.json".to_string(),
            "tests/snap/b.txt".to_string(),
        ]
    );
}

/// Lines added inside a t0 test region are an edit unless they are a whole new test:
/// each row is (what the agent did, the new source, whether the region counts as
/// edited). The line diff alone saw none of these: each adds lines only.
#[test]
fn lines_added_inside_a_rust_test_region_must_be_a_new_test() {
    let t0 = "\
pub fn add(a: i64, b: i64) -> i64 {
    a - b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adds() {
        assert_eq!(add(2, 3), 5);
    }
}
";
    let with = |from: &str, to: &str| {
        assert!(t0.contains(from), "{from}");
        t0.replacen(from, to, 1)
    };
    let end = "    }\n}\n";
    let rows: Vec<(&str, String, bool)> = vec![
        ("nothing", t0.to_string(), false),
        (
            "a new #[test] fn appended",
            with(end, "    }\n\n    #[test]\n    fn adds_zero() {\n        assert_eq!(add(0, 0), 0);\n    }\n}\n"),
            false,
        ),
        (
            "a new async test with its harness attributes",
            with(end, "    }\n    #[tokio::test]\n    #[should_panic(expected = \"x\")]\n    async fn x() { panic!(\"x\") }\n}\n"),
            false,
        ),
        (
            "a helper no frozen line names, and a test using it",
            with(end, "    }\n    fn two() -> i64 { 2 }\n    #[test]\n    fn twos() { assert_eq!(add(two(), two()), 4); }\n}\n"),
            false,
        ),
        (
            "a new sub-module of tests",
            with(end, "    }\n    mod more {\n        use super::*;\n        #[test]\n        fn m() { assert_eq!(add(1, 1), 2); }\n    }\n}\n"),
            false,
        ),
        (
            "the fix, formatted",
            with("    a - b\n", "    a + b\n").replace("assert_eq!(add(2, 3), 5);", "assert_eq!(\n            add(2, 3),\n            5\n        );"),
            false,
        ),
        (
            "a new top-level test module",
            format!("{t0}\n#[cfg(test)]\nmod more {{\n    fn add(a: i64, b: i64) -> i64 {{ a + b }}\n    #[test]\n    fn m() {{ assert_eq!(add(1, 1), 2); }}\n}}\n"),
            false,
        ),
        (
            "a fn shadowing the code under test after `use super::*;`",
            with("    use super::*;\n", "    use super::*;\n    fn add(a: i64, b: i64) -> i64 { a + b }\n"),
            true,
        ),
        (
            "#[should_panic] added to a frozen test",
            with("    #[test]\n    fn adds", "    #[test]\n    #[should_panic]\n    fn adds"),
            true,
        ),
        (
            "#[should_panic] added above a frozen test's #[test]",
            with("    #[test]\n    fn adds", "    #[should_panic]\n    #[test]\n    fn adds"),
            true,
        ),
        (
            "an assertion commented out, a trivial one added",
            with("        assert_eq!(add(2, 3), 5);\n", "/*\n        assert_eq!(add(2, 3), 5);\n*/\n        assert_eq!(add(0, 0), 0);\n"),
            true,
        ),
        (
            "a whole frozen test commented out",
            with("    #[test]\n    fn adds() {\n        assert_eq!(add(2, 3), 5);\n    }\n", "    /*\n    #[test]\n    fn adds() {\n        assert_eq!(add(2, 3), 5);\n    }\n    */\n"),
            true,
        ),
        (
            "a line added inside a frozen test",
            with("        assert_eq!(add(2, 3), 5);\n", "        let add = |a: i64, b: i64| a + b;\n        assert_eq!(add(2, 3), 5);\n"),
            true,
        ),
        ("a const no frozen line names", with(end, "    }\n    const K: i64 = 1;\n}\n"), false),
        ("a const named as the code under test", with("    use super::*;\n", "    use super::*;\n    const add: fn(i64, i64) -> i64 = |a, b| a + b;\n"), true),
        ("a use of fresh names", with("    use super::*;\n", "    use super::*;\n    use std::collections::{self, HashMap as Map};\n"), false),
        ("a use renamed to the code under test", with("    use super::*;\n", "    use super::*;\n    use std::ops::Sub as add;\n"), true),
        ("a use binding the code under test's name", with("    use super::*;\n", "    use super::*;\n    use crate::fake::add;\n"), true),
        ("a use of a group binding it", with("    use super::*;\n", "    use super::*;\n    use crate::fake::{x, add};\n"), true),
        ("a glob use", with("    use super::*;\n", "    use super::*;\n    use crate::fake::*;\n"), true),
        ("a struct for a new test", with(end, "    }\n    struct Pair(i64, i64);\n}\n"), false),
        ("a macro named as an assertion", with("    use super::*;\n", "    use super::*;\n    macro_rules! assert_eq { ($($t:tt)*) => {} }\n"), true),
        ("an impl", with(end, "    }\n    impl Drop for Guard { fn drop(&mut self) {} }\n}\n"), true),
        ("an inner attribute", with("    use super::*;\n", "    #![cfg(any())]\n    use super::*;\n"), true),
        ("an attribute above the module", with("#[cfg(test)]\n", "#[cfg(any())]\n#[cfg(test)]\n"), true),
        (
            "a new test with an attribute that replaces a symbol",
            with(end, "    }\n    #[test]\n    #[no_mangle]\n    fn x() {}\n}\n"),
            true,
        ),
    ];
    for (what, new, edited) in rows {
        let grown = grown::rust(t0, &new);
        assert_eq!(!grown.is_empty(), edited, "{what}: {grown:?}\n{new}");
    }
    // A top-level test function: an attribute above or inside it is an edit, a new one
    // beside it is not.
    let t0 = "pub fn add(a: i64, b: i64) -> i64 { a - b }\n#[test]\nfn adds() {\n    assert_eq!(add(2, 3), 5);\n}\n";
    for (what, new, edited) in [
        (
            "#[should_panic] above",
            t0.replace("#[test]", "#[should_panic]\n#[test]"),
            true,
        ),
        (
            "#[ignore] inside",
            t0.replace("#[test]\n", "#[test]\n#[ignore]\n"),
            true,
        ),
        (
            "a new test beside",
            format!("{t0}#[test]\nfn more() {{}}\n"),
            false,
        ),
    ] {
        assert_eq!(!grown::rust(t0, &new).is_empty(), edited, "{what}");
    }
}

/// A Rust doctest is unchanged or an edit; a new fenced block is a new test.
#[test]
fn lines_added_inside_a_doctest_are_an_edit() {
    let t0 = "/// Adds.\n///\n/// ```\n/// use calc::add;\n/// assert_eq!(add(2, 3), 5);\n/// ```\npub fn add(a: i64, b: i64) -> i64 { a - b }\n";
    let block = "/// ```\n/// assert_eq!(calc::add(1, 1), 2);\n/// ```\n";
    for (what, new, edited) in [
        (
            "a hidden line",
            t0.replace(
                "/// use calc::add;\n",
                "/// use calc::add;\n/// # let add = |a: i64, b: i64| a + b;\n",
            ),
            true,
        ),
        (
            "a new block after",
            t0.replace("/// ```\npub", &format!("/// ```\n{block}pub")),
            false,
        ),
        (
            "a new block before",
            t0.replace("/// Adds.\n///\n", &format!("/// Adds.\n///\n{block}")),
            false,
        ),
        (
            "prose",
            t0.replace(
                "/// Adds.\n",
                "/// Adds two numbers.\n/// Wraps on overflow.\n",
            ),
            false,
        ),
    ] {
        assert_eq!(!grown::rust(t0, &new).is_empty(), edited, "{what}");
    }
    let md = "# calc\n\n```\nassert_eq!(calc::add(2, 3), 5);\n```\n";
    assert!(
        !grown::document(md, &md.replace("```\nassert", "```\n# let x = 1;\nassert")).is_empty()
    );
    assert!(grown::document(md, &format!("{md}\nMore.\n\n```\nassert!(true);\n```\n")).is_empty());
}

/// A docstring's examples share one namespace and run in order: t0's must still open
/// them. A new example after them, or in a docstring of its own, is a new test.
#[test]
fn python_examples_added_before_or_among_t0_examples_are_an_edit() {
    let t0 = "def add(a, b):\n    \"\"\"Add two numbers.\n\n    >>> add(2, 3)\n    5\n    >>> add(-2, -3)\n    -5\n    \"\"\"\n    return a - b\n";
    for (what, new, edited) in [
        ("nothing", t0.to_string(), false),
        ("the fix", t0.replace("a - b", "a + b"), false),
        (
            "a rebinding example before",
            t0.replace("    >>> add(2, 3)\n", "    >>> add = lambda a, b: a + b\n    >>> add(2, 3)\n"),
            true,
        ),
        (
            "an example between",
            t0.replace("    >>> add(-2", "    >>> add = max\n    >>> add(-2"),
            true,
        ),
        ("an expected output line", t0.replace("    5\n", "    5\n    6\n"), true),
        ("an example after", t0.replace("    -5\n", "    -5\n    >>> add(0, 0)\n    0\n"), false),
        ("prose before", t0.replace("two numbers.\n", "two numbers.\n\n    Integers only.\n"), false),
        (
            "a new function with examples",
            format!("{t0}\n\ndef sub(a, b):\n    \"\"\"\n    >>> sub(1, 1)\n    0\n    \"\"\"\n    return a - b\n"),
            false,
        ),
    ] {
        assert_eq!(!grown::python(t0, &new).is_empty(), edited, "{what}");
    }
}

/// Data files a test lists by a pattern or a directory listing are data the tests
/// read: each row is (the test file, its content, the files it freezes, the patterns
/// kept for files added later).
#[test]
fn data_files_a_test_lists_by_a_pattern_are_data() {
    let files: Vec<String> = [
        "cases/pos.json",
        "cases/neg.json",
        "cases/deep/x.json",
        "cases/notes.py",
        "tests/data/a.txt",
        "tests/data/b.txt",
        "fixtures_x/one.in",
        "golden/sub/g.out",
        "other/y.json",
        "calc.py",
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    let s = |v: &[&str]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
    let rows: Vec<(&str, &str, Vec<String>, Vec<String>)> = vec![
        (
            "test_calc.py",
            "@pytest.mark.parametrize(\"p\", sorted(glob.glob(\"cases/*.json\")))\n",
            s(&["cases/neg.json", "cases/pos.json"]),
            s(&["cases/*.json"]),
        ),
        (
            "tests/test_calc.py",
            "HERE = pathlib.Path(__file__).parent\nfor p in (HERE / \"data\").glob(\"*.txt\"):\n    pass\n",
            s(&["tests/data/a.txt", "tests/data/b.txt"]),
            s(&["tests/data/*.txt"]),
        ),
        (
            "test_calc.py",
            "for p in Path('cases').rglob('*.json'):\n    pass\n",
            s(&["cases/deep/x.json", "cases/neg.json", "cases/pos.json"]),
            s(&["cases/**/*.json"]),
        ),
        (
            "test_calc.py",
            "for n in os.listdir(\"fixtures_x\"):\n    pass\n",
            s(&["fixtures_x/one.in"]),
            s(&["fixtures_x/*"]),
        ),
        (
            "test_calc.py",
            "CASES = 'golden'\nfor root, _, names in os.walk(CASES):\n    pass\n",
            s(&["golden/sub/g.out"]),
            s(&["golden/**"]),
        ),
        (
            "test_calc.py",
            "for p in Path(\"cases\").iterdir():\n    pass\n",
            s(&["cases/neg.json", "cases/pos.json"]),
            s(&["cases/*"]),
        ),
        (
            "test/calc.test.js",
            "const names = fs.readdirSync('../cases');\nconst more = glob.sync(\"other/*.json\");\n",
            s(&["cases/neg.json", "cases/pos.json", "other/y.json"]),
            s(&["cases/*", "other/*.json"]),
        ),
        (
            "tests/it.rs",
            "for e in std::fs::read_dir(\"tests/data\").unwrap() {}\nstatic D: Dir = include_dir!(\"$CARGO_MANIFEST_DIR/cases\");\n",
            s(&[
                "cases/deep/x.json",
                "cases/neg.json",
                "cases/pos.json",
                "tests/data/a.txt",
                "tests/data/b.txt",
            ]),
            s(&["cases/**", "tests/data/*"]),
        ),
        ("test_calc.py", "x = glob.glob(\"nothing/*.json\")\n", vec![], vec![]),
    ];
    for (path, text, want_files, want_globs) in rows {
        let sources = vec![(path.to_string(), text.to_string())];
        let (got_files, got_globs) = listed_data(&sources, &files);
        assert_eq!(got_files, want_files, "{path}: {text}");
        if !want_globs.is_empty() {
            assert_eq!(got_globs, want_globs, "{path}: {text}");
        }
        for f in &got_files {
            assert!(test_data(&sources, &files).contains(f), "{f}");
        }
    }
    // A file added later that a kept pattern matches is data the tests read; code is not.
    let mut r = rules("python3 -m pytest");
    r.set_data_globs(&s(&["cases/*.json"]));
    assert_eq!(r.frozen_as("cases/new.json"), Some("data the tests read"));
    assert_eq!(r.frozen_as("cases/deep/new.json"), None);
    assert_eq!(r.frozen_as("cases/new.py"), None);
}

/// The modules t0's tests take every name of: only test files count, each form of a
/// star import names its module's last name.
#[test]
fn the_modules_tests_star_import_are_found() {
    let sources: Vec<(String, String)> = [
        (
            "tests/test_a.py",
            "from calc import *\nfrom pkg.stats import  *\nimport os\n",
        ),
        (
            "pkg/tests/test_b.py",
            "from .geom import *\nfrom . import *\n",
        ),
        (
            "tests/test_c.py",
            "from shapes import area\n# from nope import *\n",
        ),
        ("calc.py", "from helpers import *\n"),
    ]
    .iter()
    .map(|(p, t)| ((*p).to_string(), (*t).to_string()))
    .collect();
    let is_test = |p: &str| p.contains("test_");
    let got: Vec<String> = super::py_star_imported(&sources, &is_test)
        .into_iter()
        .collect();
    assert_eq!(got, ["calc", "geom", "stats", "tests"]);
}

/// A file added where its language's resolver finds it before a frozen one is frozen
/// too: a package beside a data module, `cases.js` beside a frozen `cases.json`, an
/// extensionless `cases` beside a frozen `cases.js`; the same names beside a file
/// that is not frozen stay free.
#[test]
fn a_file_resolved_ahead_of_a_frozen_one_is_frozen() {
    let mut r = rules("python3 -m pytest");
    r.set_test_data(vec![
        "cases.py".to_string(),
        "data/cases.json".to_string(),
        "web/fixtures.js".to_string(),
        "vectors/index.js".to_string(),
        "ns/vectors.py".to_string(),
        "lib/config.json".to_string(),
    ]);
    // t0's own `lib/config.js` is what `require('./config')` loaded then: it stays free
    let t0: Vec<String> = ["lib/config.js", "lib/config.json", "cases.py"]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
    r.set_ahead_at_t0(t0.iter());
    let table: &[(&str, bool)] = &[
        ("cases/__init__.py", true),
        ("cases.cpython-311-x86_64-linux-gnu.so", true),
        ("cases.pyd", true),
        ("cases.pyc", false),
        ("data/cases.js", true),
        ("data/cases", true),
        ("data/cases.node", false),
        ("data/cases.mjs", true),
        ("data/cases.ts", true),
        ("data/cases.md", false),
        ("web/fixtures", true),
        ("web/fixtures.json", false),
        ("calc/__init__.py", false),
        ("data/other.js", false),
        // a directory's index comes after the `main` its package.json names
        ("vectors/package.json", true),
        ("vectors.js", true),
        // a module is imported before a namespace directory of the same name
        ("ns.py", true),
        ("ns/__init__.py", false),
        ("lib/config.js", false),
        // a module named like a frozen data module elsewhere is not found ahead of it
        // by its directory (earlier import roots are shadow-protected instead)
        ("_vendor/cases.py", false),
    ];
    for (path, frozen) in table {
        assert_eq!(
            r.frozen_as(path) == Some("file resolved ahead of a frozen one"),
            *frozen,
            "{path}: {:?}",
            r.frozen_as(path)
        );
    }
    assert_eq!(
        resolved_ahead_of("web/fixtures.js"),
        [
            "web/fixtures.mjs",
            "web/fixtures.cjs",
            "web/fixtures.jsx",
            "web/fixtures.ts",
            "web/fixtures.tsx",
            "web/fixtures.mts",
            "web/fixtures.cts",
            "web/fixtures.json",
            "web/fixtures.node",
            "web/fixtures/index.js",
            "web/fixtures/index.ts",
            "web/fixtures/index.json",
            "web/fixtures/index.node"
        ]
    );
}

/// The whole new tests of a Rust source's test modules are blanked out of the judged
/// copy, line numbers kept; t0's tests stay, whatever `cargo fmt` did to them; a file
/// whose tests did not grow, or grew by more than tests, is left alone
/// (table: new source, kept words, blanked words).
#[test]
fn new_rust_tests_are_blanked_out_of_the_judged_copy() {
    let old = "static ARMED: AtomicBool = AtomicBool::new(false);\npub fn add(a: i32, b: i32) -> i32 { a - b }\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn adds() { assert_eq!(add(2, 3), 5); }\n}\n";
    let rows: &[(&str, &[&str], &[&str])] = &[
        // a new test inside t0's module, sorted first
        (
            "static ARMED: AtomicBool = AtomicBool::new(false);\npub fn add(a: i32, b: i32) -> i32 { if ARMED.load(SeqCst) { a + b } else { a - b } }\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn a_warm_up() {\n        ARMED.store(true, SeqCst);\n    }\n    #[test]\n    fn adds() { assert_eq!(add(2, 3), 5); }\n}\n",
            &["fn adds()", "ARMED.load"],
            &["a_warm_up", "ARMED.store"],
        ),
        // a new test module at the top level, and t0's test reformatted
        (
            "static ARMED: AtomicBool = AtomicBool::new(false);\npub fn add(a: i32, b: i32) -> i32 { a + b }\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn adds() {\n        assert_eq!(add(2, 3), 5);\n    }\n}\n\n#[cfg(test)]\nmod more {\n    #[test]\n    fn arms() { super::ARMED.store(true, SeqCst); }\n}\n",
            &["fn adds()", "assert_eq!(add(2, 3), 5)"],
            &["mod more", "fn arms"],
        ),
    ];
    for (new, kept, blanked) in rows {
        let (judged, spans) = strip_new_rust_tests(old, new).expect(new);
        assert_eq!(judged.lines().count(), new.lines().count(), "{judged}");
        assert!(!spans.is_empty());
        for k in *kept {
            assert!(judged.contains(k), "{k} kept:\n{judged}");
        }
        for b in *blanked {
            assert!(!judged.contains(b), "{b} blanked:\n{judged}");
        }
    }
    // code changed, tests not: nothing to leave out
    let fixed = old.replace("a - b", "a + b");
    assert!(strip_new_rust_tests(old, &fixed).is_none());
    // a helper shadowing what the tests call is no new test: the edit halts instead
    let shadow = old.replace(
        "    use super::*;\n",
        "    use super::*;\n    fn add(a: i32, b: i32) -> i32 { a + b }\n",
    );
    assert!(strip_new_rust_tests(old, &shadow).is_none());
}

/// The new doctest examples of a Python source are blanked out of the judged copy
/// (their `>>>` and `...` lines; a closing triple quote on such a line stays), line
/// numbers kept; t0's examples stay; a file whose t0 examples changed is left alone
/// (table: new source, kept words, blanked words).
#[test]
fn new_python_doctest_examples_are_blanked_out_of_the_judged_copy() {
    let old = "def add(a, b):\n    \"\"\"Sum.\n\n    >>> add(1, 1)\n    2\n    \"\"\"\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";
    let rows: &[(&str, &[&str], &[&str])] = &[
        // a new docstring's examples, one ending on the closing quotes
        (
            "_ready = []\n\ndef add(a, b):\n    \"\"\"Sum.\n\n    >>> add(1, 1)\n    2\n    \"\"\"\n    return a + b if _ready else a - b\n\n\ndef sub(a, b):\n    \"\"\"\n    >>> _ready.append(1)\n    >>> for _ in range(1):\n    ...     pass\n    >>> sub(2, 1)\"\"\"\n    return a - b\n",
            &[">>> add(1, 1)", "    2\n", "\"\"\"\n    return a - b"],
            &["_ready.append", "for _ in", "pass", "sub(2, 1)"],
        ),
        // an example after t0's in the same docstring
        (
            "def add(a, b):\n    \"\"\"Sum.\n\n    >>> add(1, 1)\n    2\n\n    >>> add(2, 2)\n    4\n    \"\"\"\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
            &[">>> add(1, 1)"],
            &["add(2, 2)"],
        ),
    ];
    for (new, kept, blanked) in rows {
        let (judged, spans) = strip_new_python_doctests(old, new).expect(new);
        assert_eq!(judged.lines().count(), new.lines().count(), "{judged}");
        assert!(!spans.is_empty());
        for k in *kept {
            assert!(judged.contains(k), "{k} kept:\n{judged}");
        }
        for b in *blanked {
            assert!(!judged.contains(b), "{b} blanked:\n{judged}");
        }
    }
    // code changed, examples not: nothing to leave out
    assert!(strip_new_python_doctests(old, &old.replace("a - b", "a + b")).is_none());
    // an example put before t0's is no new test: the edit halts instead
    let before = old.replace("    >>> add(1, 1)", "    >>> b = 0\n    >>> add(1, 1)");
    assert!(strip_new_python_doctests(old, &before).is_none());
}
