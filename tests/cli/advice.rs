//! The advice follows the evidence, end to end: a budget halt while still improving
//! says so (and only that); a rejected iteration is reported as rejected by `run`,
//! `status`, `report` and `explain-halt`, "best" never points at it, and the command
//! that restores the accepted tree works; a cap of 1 speaks of its only attempt; the
//! "review the diff against t0" and "revert to t0" commands are exact, and they work.

use crate::support::*;
use serde_json::Value;

/// A TAP check over the names in `failing` (t1..t3); green when `failing` is empty.
fn three_tests(failing: &str) -> Repo {
    let r = Repo::new();
    r.write("failing", &format!("{failing}\n"))
        .tap_check(
            r#"f=$(cat failing); echo "TAP version 13"; echo "1..3"; i=0
for t in t1 t2 t3; do i=$((i+1)); case " $f " in *" $t "*) echo "not ok $i - $t";; *) echo "ok $i - $t";; esac; done
[ -z "$f" ]
"#,
        )
        .commit("fixture");
    r
}

/// The first backquoted command after `label` in `text`.
fn command_after(text: &str, label: &str) -> String {
    let at = text
        .find(label)
        .unwrap_or_else(|| panic!("no `{label}` in: {text}"));
    let rest = &text[at..];
    let start = rest.find('`').expect("a backquoted command") + 1;
    let end = start + rest[start..].find('`').expect("closing backquote");
    rest[start..end].to_string()
}

fn sh(r: &Repo, cmd: &str) -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", cmd])
        .current_dir(r.path())
        .output()
        .expect("sh");
    assert!(
        out.status.success(),
        "`{cmd}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_budget_halt_while_still_improving_says_so_and_only_so() {
    let r = three_tests("t1 t2 t3");
    let exec = r#"set -- $(cat failing); shift; echo "$*" > failing; echo '{"cost_usd": 1.0}' >> "$LOOPEXEC_USAGE_FILE""#;
    let v = r
        .lx_tap(exec, &["--budget-usd", "1.5"])
        .expect(18, Some("budget_exceeded"));
    assert_eq!(v["advice"], "raise_the_limit", "{v}");
    let text = v["explanation"].as_str().unwrap();
    assert!(text.contains("still improving"), "{text}");
    assert!(!text.contains("do not retry"), "contradicts itself: {text}");
    let ex = r.lx(&["explain-halt"]).expect(0, None);
    assert_eq!(ex["advice"], "raise_the_limit", "{ex}");
    assert!(!ex["what_to_do"].as_str().unwrap().contains("do not retry"));
}

/// Iteration 1 fixes t1; every later attempt "fixes" t2 and t3 but breaks t1 again:
/// a lower count that the ratchet rejects. The run hits the cap on a rejected one.
/// Before: the run ended with the rejected tree in the workdir (and only printed a
/// command to restore the accepted one); now it restores iteration 1's tree itself,
/// recorded as a `reverted` line before `halted`, and the verdict re-derives the same.
#[test]
fn a_rejected_iteration_is_reported_as_rejected_everywhere_and_never_best() {
    let r = three_tests("t1 t2 t3");
    let c = Counter::new();
    let s = c.shell();
    let exec = format!(
        "n=$(cat {s}); echo $((n+1)) > {s}; case $n in 0) echo 't2 t3' > failing;; *) echo t1 > failing; echo junk > junk.txt;; esac"
    );
    let v = r
        .lx_tap(&exec, &["--run-id", "rj", "--max-iterations", "3"])
        .expect(12, Some("max_iterations_reached"));
    // The run left the accepted tree: nothing to restore by hand.
    assert!(v["rejected_tree"].is_null(), "{v}");
    assert_eq!(r.read("failing").trim(), "t2 t3");
    assert!(
        !r.path().join("junk.txt").exists(),
        "an added file survived"
    );
    let lines = receipt_of(&v);
    let reverted = events(&lines, "reverted");
    assert_eq!(reverted.last().unwrap()["to_iteration"], 1, "{reverted:?}");
    assert_eq!(
        lines[lines.len() - 2]["event"],
        "reverted",
        "the restore is recorded before the halt"
    );

    let ex = r.lx(&["explain-halt", "--run-id", "rj"]).expect(0, None);
    let t = &ex["trajectory"];
    assert_eq!(
        t["best_iteration"], 1,
        "best is the accepted iteration: {t}"
    );
    assert_eq!(t["best_failing_count"], 2, "{t}");
    let accepted: Vec<bool> = t["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["accepted"].as_bool().unwrap())
        .collect();
    assert_eq!(accepted, [true, true, false, false]);
    assert_eq!(ex["rederived"], true, "{ex}");
    assert_eq!(ex["rejected_tree"], v["rejected_tree"]);

    let rep = r.lx(&["report", "--run-id", "rj"]).expect(0, None);
    let verdicts: Vec<&str> = rep["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["red", "red", "rejected", "rejected"], "{rep}");
    assert_eq!(rep["totals"]["rejected"], 2);
    assert_eq!(rep["rejected_tree"], v["rejected_tree"]);

    let st = r.lx(&["status", "--run-id", "rj"]).expect(0, None);
    let acc: Vec<bool> = st["last_verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["accepted"].as_bool().unwrap())
        .collect();
    assert_eq!(acc, accepted, "{st}");
}

#[test]
fn a_cap_of_one_speaks_of_its_only_attempt() {
    let r = three_tests("t1");
    let v = r
        .lx_tap("true", &["--max-iterations", "1"])
        .expect(12, Some("max_iterations_reached"));
    let text = v["explanation"].as_str().unwrap();
    assert!(text.contains("its only attempt"), "{text}");
    assert!(!text.contains("last 3"), "{text}");
}

/// The converged run's "review the diff against t0" command shows the agent's work
/// and nothing of loopexec's own files (its log inside the workdir included).
#[test]
fn the_review_diff_command_is_exact_and_clean() {
    let r = three_tests("t1");
    let mut c = std::process::Command::new(bin());
    c.args(["--json", "--workdir"])
        .arg(r.path())
        .args(["run", "--exec", "echo > failing", "--check", "sh check.sh"])
        .args(["--test-format", "tap"])
        .current_dir(r.path())
        .stderr(std::fs::File::create(r.path().join("loopexec.log")).unwrap());
    let out = run_cmd(c);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["halt_reason"], "success_condition_met", "{v}");
    let cmd = command_after(v["explanation"].as_str().unwrap(), "Review the diff");
    assert!(cmd.starts_with("git --no-pager --git-dir="), "{cmd}");
    assert!(cmd.contains(" diff "), "{cmd}");
    let diff = sh(&r, &cmd);
    assert!(diff.contains("-t1"), "{diff}");
    let files: Vec<&str> = diff
        .lines()
        .filter_map(|l| l.strip_prefix("diff --git a/"))
        .collect();
    assert_eq!(files, ["failing b/failing"], "{diff}");
}

/// An integrity halt's "revert to t0" command restores t0 exactly: changed files
/// back, added files gone.
#[test]
fn the_revert_to_t0_command_is_exact_and_restores_t0() {
    let r = Repo::new();
    r.write(".github/workflows/ci.yml", "on: push\n");
    let r = {
        r.write("failing", "t1 t2\n")
            .tap_check(
                r#"f=$(cat failing); echo "TAP version 13"; echo "1..3"; i=0
for t in t1 t2 t3; do i=$((i+1)); case " $f " in *" $t "*) echo "not ok $i - $t";; *) echo "ok $i - $t";; esac; done
[ -z "$f" ]
"#,
            )
            .commit("fixture");
        r
    };
    let exec = "echo '# relaxed' >> .github/workflows/ci.yml; mkdir -p sub; echo x > sub/new.txt; echo t2 > failing";
    let v = r
        .lx_tap(exec, &["--max-iterations", "3"])
        .expect(13, Some("blocked_path_modified"));
    let text = v["explanation"].as_str().unwrap().to_string();
    let ex = r.lx(&["explain-halt"]).expect(0, None);
    assert_eq!(
        command_after(&text, "revert to t0"),
        command_after(ex["what_to_do"].as_str().unwrap(), "revert to t0")
    );
    assert!(!r.git(&["status", "--porcelain"]).trim().is_empty());
    sh(&r, &command_after(&text, "revert to t0"));
    assert_eq!(
        r.git(&["status", "--porcelain", "--untracked-files=all"])
            .lines()
            .filter(|l| !l.contains(".loopexec"))
            .collect::<Vec<_>>(),
        Vec::<&str>::new(),
        "the tree is not t0"
    );
}

/// `explain-halt` run with another state directory than the run's (another
/// `LOOPEXEC_STATE_DIR`, another user): the review command names a store that is not
/// there, and says so instead of leaving the reader with a failing `git` command.
#[test]
fn explain_halt_under_another_state_directory_says_the_store_is_not_there() {
    let r = tap_repo(1);
    r.lx_tap(PROGRESS_AGENT, &["--max-iterations", "2"])
        .expect(10, Some("success_condition_met"));
    let here = r.lx(&["explain-halt"]).expect(0, None);
    assert!(
        !here.to_string().contains("no snapshot store at"),
        "the run's own state directory holds the store: {here}"
    );
    // Under another state directory the run is not vouched for (its control
    // journal holds no seal for it: exit 13, `unrecorded`), and the advice says
    // where the store is not and how to read the run back.
    let other = tempfile::tempdir().unwrap();
    let out = lx_in(
        r.path(),
        &["explain-halt"],
        &[("LOOPEXEC_STATE_DIR", other.path().to_str().unwrap())],
    );
    let there = out.expect(13, Some("success_condition_met"));
    assert_eq!(there["status"], "unrecorded", "{there}");
    assert!(
        there.to_string().contains("no snapshot store at"),
        "{there}"
    );
    assert!(
        out.errors_text().contains("read it back with that one"),
        "{there}"
    );
}
