//! Tests for the mutation canaries.
use super::*;
use crate::observe::git::testutil::{commit_all, g, repo, write};

fn reps(ms: &[Mutant], line: u32) -> Vec<&str> {
    ms.iter()
        .filter(|m| m.line == line)
        .map(|m| m.replacement.as_str())
        .collect()
}

const BASE_PY: &str = "def add(a, b):\n    return a + b\n";
const CHANGED_PY: &str =
    "def add(a, b):\n    if a > 10:\n        return a + b + 0\n    return a + b\n";

#[test]
fn changed_lines_of_the_python_example() {
    let d = repo();
    let p = d.path();
    write(p, "src/calc.py", BASE_PY);
    commit_all(p, "base");
    write(p, "src/calc.py", CHANGED_PY);
    commit_all(p, "change");
    let lines = changed_lines(p, "HEAD~1").unwrap();
    assert_eq!(
        lines,
        BTreeMap::from([("src/calc.py".to_string(), vec![2, 3])])
    );
}

#[test]
fn changed_lines_include_staged_unstaged_and_untracked() {
    let d = repo();
    let p = d.path();
    write(p, ".gitignore", "*.log\n");
    write(p, "a.rs", "fn a() {}\nfn b() {}\nfn c() {}\n");
    write(p, "gone.rs", "x\n");
    write(p, "with space.py", "x = 1\n");
    commit_all(p, "base");
    write(p, "a.rs", "fn a() {}\nfn b() { 1 }\nfn c() {}\nfn d() {}\n");
    g(p, &["add", "a.rs"]);
    write(
        p,
        "a.rs",
        "fn a0() {}\nfn b() { 1 }\nfn c() {}\nfn d() {}\n",
    );
    write(p, "with space.py", "x = 2\n");
    std::fs::remove_file(p.join("gone.rs")).unwrap();
    write(p, "new/ünï.go", "package x\nfunc f() {}");
    write(p, "debug.log", "ignored\n");
    write(p, ".loopexec/runs/r.jsonl", "{}\n");
    let lines = changed_lines(p, "HEAD").unwrap();
    assert_eq!(
        lines,
        BTreeMap::from([
            ("a.rs".to_string(), vec![1, 2, 4]),
            ("new/ünï.go".to_string(), vec![1, 2]),
            ("with space.py".to_string(), vec![1]),
        ])
    );
}

#[test]
fn python_example_mutants() {
    let ms = mutants_for("src/calc.py", CHANGED_PY, &[2, 3]);
    let l2 = reps(&ms, 2);
    let l3 = reps(&ms, 3);
    assert!(l2.contains(&"    if a <= 10:"), "{l2:?}");
    assert!(l2.contains(&"    if not (a > 10):"), "{l2:?}");
    assert!(l2.contains(&"    if a > 11:"), "{l2:?}");
    assert!(l3.contains(&"        return a - b + 0"), "{l3:?}");
    assert!(l3.contains(&"        return None"), "{l3:?}");
    assert!(l3.contains(&"        return a + b + 1"), "{l3:?}");
    assert!(ms.iter().all(|m| m.line == 2 || m.line == 3));
    assert!(ms
        .iter()
        .all(|m| m.original == CHANGED_PY.lines().nth(m.line as usize - 1).unwrap()));
    // Deterministic.
    assert_eq!(ms, mutants_for("src/calc.py", CHANGED_PY, &[3, 2, 2]));
}

#[test]
fn comments_strings_generics_and_arrows_are_not_mutated() {
    let rs = "fn f(v: Vec<u8>) -> Option<u8> { // a > b\n    let s = \"x == 1 && true\"; let t: Result<u8, ()> = Ok(1);\n    v.iter().map(|x| x - 1).max()\n}\n";
    let ms = mutants_for("src/f.rs", rs, &[1, 2, 3]);
    for m in &ms {
        assert!(!m.replacement.contains("\"x != 1"), "{m:?}");
        assert!(!m.replacement.contains("Vec>="), "{m:?}");
        assert!(!m.replacement.contains("<="), "{m:?}");
    }
    assert!(reps(&ms, 3).contains(&"    v.iter().map(|x| x + 1).max()"));
    assert!(
        reps(&ms, 2).contains(&"    let s = \"x == 1 && true\"; let t: Result<u8, ()> = Ok(2);")
    );
    assert!(mutants_for("README.md", "a > b\n", &[1]).is_empty());
}

#[test]
fn rust_js_go_operators() {
    let rs = "    if n == 0 && !done {\n        return Some(n * 2);\n    }\n    let ok = true;\n    return total + 1u32;\n";
    let ms = mutants_for("src/lib.rs", rs, &[1, 2, 4, 5]);
    assert!(reps(&ms, 1).contains(&"    if n != 0 && !done {"));
    assert!(reps(&ms, 1).contains(&"    if !(n == 0 && !done) {"));
    assert!(reps(&ms, 2).contains(&"        return None;"));
    assert!(reps(&ms, 4).contains(&"    let ok = false;"));
    assert!(reps(&ms, 5).contains(&"    return Default::default();"));
    assert!(reps(&ms, 5).contains(&"    return total - 1u32;"));
    assert!(reps(&ms, 5).contains(&"    return total + 2u32;"));

    let js = "  if (x.length === 0) return `none: ${x}`;\n  const y = a >= b ? -1 : 1; // a < b\n  return y;\n";
    let ms = mutants_for("src/a.ts", js, &[1, 2, 3]);
    assert!(reps(&ms, 1).contains(&"  if (x.length !== 0) return `none: ${x}`;"));
    assert!(reps(&ms, 1).contains(&"  if (!(x.length === 0)) return `none: ${x}`;"));
    assert!(reps(&ms, 2).contains(&"  const y = a < b ? -1 : 1; // a < b"));
    assert!(
        !reps(&ms, 2).iter().any(|r| r.contains("? +1")),
        "unary minus kept"
    );
    assert_eq!(reps(&ms, 3), vec!["  return null;"]);

    let go = "\tif err := f(); err != nil {\n\t\treturn x - 1\n\t}\n";
    let ms = mutants_for("a.go", go, &[1, 2]);
    assert!(reps(&ms, 1).contains(&"\tif err := f(); err == nil {"));
    assert!(reps(&ms, 1).contains(&"\tif err := f(); !(err != nil) {"));
    assert!(reps(&ms, 2).contains(&"\t\treturn x + 1"));
    assert!(ms.iter().all(|m| m.operator != Operator::ReplaceReturn));
}

#[test]
fn cap_and_round_robin_selection() {
    let src: String = (0..30)
        .map(|i| format!("x{i} = a + {i} if b > c else True\n"))
        .collect();
    let lines: Vec<u32> = (1..=30).collect();
    let ms = mutants_for("m.py", &src, &lines);
    assert_eq!(ms.len(), MAX_MUTANTS_PER_FILE);
    let ls: Vec<u32> = ms.iter().map(|m| m.line).collect();
    assert_eq!(
        ls,
        (1..=20).collect::<Vec<u32>>(),
        "one mutant per line first"
    );
    let few = mutants_for("m.py", &src, &[1, 2]);
    assert!(few.len() > 2 && few.len() <= MAX_MUTANTS_PER_FILE);
    assert!(few.windows(2).all(|w| w[0].line <= w[1].line));
}

#[test]
fn apply_on_a_copy_checks_the_line() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    write(p, "src/calc.py", &CHANGED_PY.replace('\n', "\r\n"));
    let ms = mutants_for("src/calc.py", CHANGED_PY, &[2]);
    let m = ms
        .iter()
        .find(|m| m.replacement == "    if a <= 10:")
        .unwrap();
    apply(p, m).unwrap();
    let now = std::fs::read_to_string(p.join("src/calc.py")).unwrap();
    assert_eq!(
        now,
        "def add(a, b):\r\n    if a <= 10:\r\n        return a + b + 0\r\n    return a + b\r\n"
    );
    assert!(matches!(apply(p, m), Err(MutateError::LineMismatch { .. })));
    let mut far = m.clone();
    far.line = 99;
    assert!(matches!(
        apply(p, &far),
        Err(MutateError::LineOutOfRange { .. })
    ));
    let mut evil = m.clone();
    evil.file = "../calc.py".into();
    assert!(matches!(apply(p, &evil), Err(MutateError::InvalidPath(_))));
    evil.file = "/etc/passwd".into();
    assert!(matches!(apply(p, &evil), Err(MutateError::InvalidPath(_))));
}

#[test]
fn unquotes_git_paths() {
    assert_eq!(unquote_c(b"\"b/a\\tb\\303\\251\\\"\""), "b/a\tbé\"");
    let out = b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n-a\n+b\n+c\n@@ -5,2 +6,0 @@\n-d\n-e\n+++ /dev/null\n@@ -1 +0,0 @@\n";
    assert_eq!(
        parse_unified_zero(out),
        BTreeMap::from([("x".to_string(), vec![1, 2])])
    );
}

#[test]
fn floats_trait_bounds_and_trailing_literals() {
    let rs = "fn g<T: Clone + 'static>(x: &[T]) -> usize where T: Send + Sync { x.len() - 1 }\n    if x[i] < 1e-5 { total += x[i] * -3.0; }\n";
    let ms = mutants_for("a.rs", rs, &[1, 2]);
    assert_eq!(
        reps(&ms, 1),
        vec![
            "fn g<T: Clone + 'static>(x: &[T]) -> usize where T: Send + Sync { x.len() + 1 }",
            "fn g<T: Clone + 'static>(x: &[T]) -> usize where T: Send + Sync { x.len() - 2 }",
        ]
    );
    assert!(ms
        .iter()
        .all(|m| !m.replacement.contains("1e-6") && !m.replacement.contains("1e+5")));
    assert!(ms
        .iter()
        .all(|m| !m.replacement.contains("-4.0") && !m.replacement.contains("+3.0")));
    let py = "    while i < n and xs[i] != 'x > 1':  # if a\n    return 'done'\n";
    let ms = mutants_for("a.py", py, &[1, 2]);
    assert!(reps(&ms, 1).contains(&"    while not (i < n and xs[i] != 'x > 1'):  # if a"));
    assert!(
        !reps(&ms, 1).iter().any(|r| r.contains("'x <= 1'")),
        "string untouched"
    );
    assert_eq!(reps(&ms, 2), vec!["    return None"]);
}
