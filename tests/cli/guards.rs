//! Guards dominate success: integrity, oracle trust and secret handling, each reached
//! by a real scenario in a real git repo.

use crate::support::*;
use std::process::Command;

#[test]
fn deleting_the_failing_test_is_metric_integrity_violation() {
    let r = Repo::new();
    r.write("tests/a.sh", "exit 0\n")
        .write("tests/b.sh", "exit 1\n")
        .write("tests/c.sh", "exit 0\n")
        .tap_check(DIR_CHECK)
        .commit("fixture");
    let out = r.lx_tap("rm -f tests/b.sh", &["--max-iterations", "5"]);
    let v = out.expect(13, Some("metric_integrity_violation"));
    assert_eq!(v["iteration"], 1, "{v}");
    // The frozen oracle stops the run right after the exec: the deletion is named, and
    // no check ever runs on the weakened tree.
    let contributors = v["contributors"].to_string();
    assert!(
        contributors.contains("frozen oracle deleted since t0: tests/b.sh"),
        "{v}"
    );
    let lines = receipt_of(&v);
    let checks = events(&lines, "check_finished");
    assert!(checks.iter().all(|c| c["iteration"] == 0), "{checks:?}");
}

/// The same deletion under `[oracle] on_edit = "restore"`: the clean room runs t0's
/// test file, so the check stays red and the deletion buys nothing (it used to go green
/// with exit 10 when the check ran in the agent's tree).
#[test]
fn a_deleted_test_is_restored_in_the_clean_room_under_on_edit_restore() {
    let r = Repo::new();
    r.write("tests/a.sh", "exit 0\n")
        .write("tests/b.sh", "exit 1\n")
        .write("loop.toml", "[oracle]\non_edit = \"restore\"\n")
        .tap_check(DIR_CHECK)
        .commit("fixture");
    let out = r.lx_tap("rm -f tests/b.sh", &["--max-iterations", "2"]);
    let v = out.expect(12, Some("max_iterations_reached"));
    let lines = receipt_of(&v);
    let checks = events(&lines, "check_finished");
    let last = checks.last().unwrap();
    assert_eq!(last["step"]["exit_code"], 1, "{last}");
    assert_eq!(last["clean_room"]["restored"][0], "tests/b.sh", "{last}");
    assert!(
        !r.path().join("tests/b.sh").exists(),
        "the agent's tree is not touched"
    );
}

#[test]
fn editing_ci_config_is_blocked_path_modified_at_iteration_1() {
    let r = tap_repo(3);
    r.write(".github/workflows/ci.yml", "on: push\njobs: {}\n")
        .commit("ci");
    let exec = format!("echo '# relaxed' >> .github/workflows/ci.yml; {PROGRESS_AGENT}");
    let out = r.lx_tap(&exec, &["--max-iterations", "5"]);
    let v = out.expect(13, Some("blocked_path_modified"));
    assert_eq!(v["iteration"], 1, "{v}");
    assert!(mentions(&v, ".github/workflows/ci.yml"), "{v}");
}

#[test]
fn a_check_writing_a_tracked_file_is_hermeticity_violation() {
    let r = Repo::new();
    r.write("log.txt", "start\n").commit("fixture");
    let out = r.lx(&[
        "run",
        "--exec",
        "touch done",
        "--check",
        "echo ran >> log.txt; test -f done",
        "--max-iterations",
        "3",
    ]);
    let v = out.expect(14, Some("hermeticity_violation"));
    assert!(out.errors_text().contains("log.txt"), "{v}");
}

#[test]
fn a_check_alternating_on_an_unchanged_tree_is_check_flaky() {
    let r = Repo::with_f();
    let c = Counter::new();
    let s = c.shell();
    let check = format!("n=$(cat {s}); echo $((n+1)) > {s}; [ $((n % 2)) = 1 ]");
    let out = r.lx(&[
        "run",
        "--exec",
        "true",
        "--check",
        &check,
        "--max-iterations",
        "6",
    ]);
    out.expect(14, Some("check_flaky"));
    assert!(c.get() >= 2, "the check ran {} times", c.get());
}

#[test]
fn provider_keys_are_stripped_from_the_check_and_never_recorded() {
    let r = Repo::with_f();
    let secret = "sk-ant-api03-itestSECRETvalue0000000000000000000000";
    // The agent may use (and print) the keys; the check must not see them.
    let out = r.lx_env(
        &[
            "run",
            "--exec",
            r#"echo "using key $ANTHROPIC_API_KEY $OPENAI_API_KEY $GITHUB_TOKEN"; echo "stderr $ANTHROPIC_API_KEY" >&2; touch done"#,
            "--check",
            r#"test -z "$ANTHROPIC_API_KEY$OPENAI_API_KEY$GITHUB_TOKEN" && test -f done"#,
            "--max-iterations",
            "3",
        ],
        &[
            ("ANTHROPIC_API_KEY", secret),
            (
                "OPENAI_API_KEY",
                "sk-proj-itestSECRETvalue1111111111111111111111",
            ),
            ("GITHUB_TOKEN", "ghp_itestSECRETvalue22222222222222222222"),
        ],
    );
    let v = out.expect(10, Some("success_condition_met"));
    assert_eq!(v["iteration"], 1, "{v}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("itestSECRETvalue"));
    assert!(!files_under(&r.path().join(".loopexec")).is_empty());
    assert_in_no_file(
        &r.path().join(".loopexec"),
        "itestSECRETvalue",
        "the secret value",
    );
}

#[test]
fn a_key_inline_in_the_command_never_reaches_the_receipt() {
    let r = Repo::with_f();
    let out = r.lx(&[
        "run",
        "--exec",
        "ANTHROPIC_API_KEY=sk-ant-api03-itestINLINEvalue000000000000000000000 true; touch done",
        "--check",
        "test -f done",
    ]);
    out.expect(10, Some("success_condition_met"));
    assert_in_no_file(
        &r.path().join(".loopexec"),
        "itestINLINEvalue",
        "the inline secret",
    );
}

#[test]
fn marking_the_failing_test_skipped_is_metric_integrity_violation() {
    let r = tap_repo(3);
    r.write("failing", "t2\n").tap_check(
        r#"n=$(cat tests); f=" $(cat failing) "; echo "TAP version 13"; echo "1..$n"; bad=0
for i in $(seq 1 "$n"); do case "$f" in *" t$i "*) if [ -f skip ]; then echo "ok $i - t$i # SKIP flaky"; continue; fi; echo "not ok $i - t$i"; bad=1;; *) echo "ok $i - t$i";; esac; done
[ -f skip ] && exit 0; exit $bad
"#,
    )
    .commit("skip-aware check");
    let out = r.lx_tap("touch skip", &["--max-iterations", "5"]);
    out.expect(13, Some("metric_integrity_violation"));
}

/// The agent makes one failing test call `process::exit(0)`: `cargo test` exits 0
/// but the run was cut short. The only test that builds a real crate.
#[test]
fn a_rust_test_exiting_early_with_status_0_is_metric_integrity_violation() {
    if std::process::Command::new("cargo")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIP: no cargo on PATH");
        return;
    }
    let r = Repo::new();
    r.write(
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n[dependencies]\n",
    )
    .write(
        "src/lib.rs",
        r#"pub fn add(a: i64, b: i64) -> i64 { a - b }
#[cfg(test)]
mod tests {
    use super::*;
    #[test] fn a_adds() { assert_eq!(add(2, 3), 5); }
    #[test] fn b_zero() { assert_eq!(add(0, 0), 0); }
}
"#,
    )
    .write(".gitignore", "target/\n")
    .commit("crate");
    let target = r.path().join("target");
    let out = r.lx_env(
        &[
            "run",
            "--exec",
            "sed -i 's/fn a_adds() { assert_eq/fn a_adds() { std::process::exit(0); assert_eq/' src/lib.rs",
            "--check",
            "cargo test --offline",
            "--max-iterations",
            "3",
        ],
        &[("CARGO_TARGET_DIR", target.to_str().unwrap())],
    );
    let v = out.expect(13, Some("metric_integrity_violation"));
    assert_eq!(v["iteration"], 1, "{v}");
}

#[test]
fn a_green_that_confirmation_runs_contradict_is_check_flaky() {
    let r = Repo::with_f();
    let c = Counter::new();
    let s = c.shell();
    // Red at the baseline; after the agent's change green twice, then red.
    let check = format!("n=$(cat {s}); echo $((n+1)) > {s}; test -f done && [ $n -lt 3 ]");
    let out = r.lx(&[
        "run",
        "--exec",
        "touch done",
        "--check",
        &check,
        "--confirm-runs",
        "3",
        "--max-iterations",
        "4",
    ]);
    let v = out.expect(14, Some("check_flaky"));
    assert_eq!(v["iteration"], 1, "{v}");
    let lines = receipt_of(&v);
    let attempts: Vec<_> = events(&lines, "check_finished")
        .iter()
        .filter(|c| c["iteration"] == 1)
        .map(|c| c["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, vec![0, 1, 2], "confirmation runs on iteration 1");
}

/// Regression (fixed in 85ec342): snapshots seed a temporary index from the user's
/// index; git trusts cached stat data only for entries older than the index file
/// (whole seconds), so a copy with a fresh mtime hid a same-size edit made in the same
/// second as the user's index was written. Here the agent stages one version, writes
/// another of the same size and idles; the iteration's snapshot must hold the working
/// tree the check ran on. (The same bug made a counter going 0 -> 1 -> 2 right after
/// the fixture commit halt `hermeticity_violation` about a third of the time.)
#[test]
fn snapshot_sees_same_size_edit_in_same_second_as_index_write() {
    let r = Repo::with_file("count", "0\n");
    let out = r.lx(&[
        "run",
        "--exec",
        "echo 1 > count && git add count && echo 2 > count && sleep 1.2",
        "--check",
        r#"test "$(cat count)" = 9"#,
        "--max-iterations",
        "1",
    ]);
    let v = out.expect(12, Some("max_iterations_reached"));
    assert_eq!(r.read("count"), "2\n");
    let lines = receipt_of(&v);
    let ex = events(&lines, "exec_finished");
    let tree = ex[0]["tree"].as_str().expect("exec_finished tree");
    let recorded = Command::new("git")
        .env("GIT_DIR", store_dir(r.path()))
        .args(["show", &format!("{tree}:count")])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&recorded.stdout),
        "2\n",
        "the iteration's snapshot does not hold the working tree the check saw"
    );
}
