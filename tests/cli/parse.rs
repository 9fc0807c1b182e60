//! `loopexec parse`: both `--json` shapes validate against `schemas/parse.json`, the
//! default shape lists every test and `--summary` only counts and failing names, and a
//! `node --test` run cut short by `process.exit(0)` (node 20.20's real output) is not
//! read as one passing test.

use crate::support::*;
use serde_json::Value;
use std::path::Path;

fn schema() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/parse.json");
    serde_json::from_str(&std::fs::read_to_string(p).expect("committed schema")).expect("json")
}

fn valid(v: &Value) {
    let s = schema();
    let validator = jsonschema::validator_for(&s).expect("schema compiles");
    let errors: Vec<String> = validator.iter_errors(v).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "parse output does not match schemas/parse.json: {errors:?}\n{v}"
    );
}

fn parse(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["parse"];
    all.extend_from_slice(args);
    lx_in(dir, &all, &[]).expect(0, None)
}

#[test]
fn both_shapes_validate_and_summary_leaves_the_lists_out() {
    let dir = tempfile::tempdir().unwrap();
    let tap = dir.path().join("out.tap");
    std::fs::write(&tap, "TAP version 13\n1..3\nok 1 - a\nnot ok 2 - b\n  ---\n  message: 'want 3'\n  ...\nok 3 - c # SKIP later\n").unwrap();
    let f = tap.to_str().unwrap();
    let full = parse(dir.path(), &["--stdout", f, "--exit-code", "1"]);
    valid(&full);
    assert_eq!(full["tests"].as_array().map(Vec::len), Some(3), "{full}");
    assert_eq!(full["collected"], serde_json::json!(["a", "b", "c"]));
    let summary = parse(
        dir.path(),
        &["--stdout", f, "--exit-code", "1", "--summary"],
    );
    valid(&summary);
    assert!(
        summary.get("tests").is_none() && summary.get("collected").is_none(),
        "{summary}"
    );
    for key in [
        "format",
        "complete",
        "unattributed_failure",
        "counts",
        "failing",
        "diagnostics",
    ] {
        assert_eq!(summary[key], full[key], "{key}");
    }
    assert_eq!(summary["failing"], serde_json::json!(["b"]));
    assert_eq!(summary["counts"]["skipped"], 1);
    let mut redacted = full.clone();
    redacted["version"] = Value::from("[version]");
    insta::assert_json_snapshot!("parse_json", redacted);
    // a file named alone is the standard output: the same reading
    let positional = parse(dir.path(), &[f, "--exit-code", "1"]);
    assert_eq!(positional, full);
}

#[test]
fn node_test_process_exit_is_not_a_passing_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("node.stdout");
    // node 20.20 `node --test exit.test.mjs`, the file calling process.exit(0) in its
    // second test: the file itself is the only point
    std::fs::write(&out, "TAP version 13\n# Subtest: /w/exit.test.mjs\nok 1 - /w/exit.test.mjs\n  ---\n  duration_ms: 821.774803\n  ...\n1..1\n# tests 1\n# suites 0\n# pass 1\n# fail 0\n# cancelled 0\n# skipped 0\n# todo 0\n# duration_ms 847.220036\n").unwrap();
    let v = parse(
        dir.path(),
        &["--stdout", out.to_str().unwrap(), "--exit-code", "0"],
    );
    assert_eq!(v["complete"], false, "{v}");
    assert_eq!(v["tests"], serde_json::json!([]), "{v}");
    assert!(
        v["diagnostics"].to_string().contains("/w/exit.test.mjs"),
        "{v}"
    );
}

/// Before: `parse --report missing.xml` exited 0 with a note; a mistyped path is bad
/// input, named with the fix, exit 1.
#[test]
fn a_report_that_is_not_there_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = lx_in(dir.path(), &["parse", "--report", "missing.xml"], &[]);
    let v = out.expect(1, None);
    let errors = v["errors"].to_string();
    assert!(errors.contains("missing.xml"), "{v}");
}

/// Output read from a pipe (`-` for standard input, `/dev/stdin`, `<(zstd -dc …)`)
/// reads as the same bytes from a file do. Before: the format was told from a first
/// read of the pipe and the parser's own read found it empty (a new user's review:
/// a pytest failure read as an incomplete run with no test).
#[test]
fn output_from_a_pipe_reads_as_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.txt");
    let text = "F.\n=========================== short test summary info ============================\nFAILED tests/test_calc.py::test_add - assert -1 == 5\n1 failed, 1 passed in 0.02s\n";
    std::fs::write(&out, text).unwrap();
    let from_file = parse(dir.path(), &[out.to_str().unwrap(), "--exit-code", "1"]);
    for arg in ["-", "/dev/stdin"] {
        let mut cmd = std::process::Command::new(bin());
        cmd.args(["--json", "parse", arg, "--exit-code", "1"])
            .current_dir(dir.path());
        // a pipe, not the file: `cat out.txt | loopexec parse -`
        let mut cat = std::process::Command::new("cat")
            .arg(&out)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        cmd.stdin(cat.stdout.take().unwrap());
        let o = cmd.output().unwrap();
        assert!(cat.wait().unwrap().success());
        let got: Value = serde_json::from_slice(&o.stdout).unwrap();
        for key in [
            "format",
            "complete",
            "unattributed_failure",
            "counts",
            "tests",
        ] {
            assert_eq!(got[key], from_file[key], "{arg}: {key}: {got}");
        }
        assert_eq!(got["complete"], true, "{got}");
    }
    // the kept copy of a check's output (`<i>.check.stdout.zst`) reads the same: a
    // new user's review got an empty exit-code run from it
    let zst = dir.path().join("out.txt.zst");
    std::fs::write(&zst, zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
    let got = parse(dir.path(), &[zst.to_str().unwrap(), "--exit-code", "1"]);
    for key in ["format", "complete", "counts", "tests"] {
        assert_eq!(got[key], from_file[key], "zst: {key}: {got}");
    }
}
