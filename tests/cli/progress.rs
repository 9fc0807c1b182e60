//! Progress detection over TAP checks: stagnation, improvement at the cap, and
//! regressions (halt or revert).

use crate::support::*;

#[test]
fn stagnation_halts_same_failure_repeated_and_advises_not_retrying() {
    let r = Repo::new();
    r.tap_check(
        r#"echo "TAP version 13"; echo "1..2"; echo "ok 1 - parses_header"
echo "not ok 2 - parses_body"; echo "  ---"; echo "  message: expected 3, got 2"; echo "  ..."
exit 1
"#,
    )
    .commit("fixture");
    let out = r.lx_tap("true", &["--max-iterations", "20"]);
    let v = out.expect(17, Some("same_failure_repeated"));
    let it = v["iteration"].as_u64().unwrap();
    assert!((1..=4).contains(&it), "halted at iteration {it}: {v}");
    let ex = r.lx(&["explain-halt"]).expect(0, None);
    assert_eq!(ex["halt_reason"], "same_failure_repeated");
    assert_eq!(ex["rederived"], true);
    let text = ex.to_string().to_lowercase();
    assert!(
        text.contains("not retry") || text.contains("do-not-retry") || text.contains("don't retry"),
        "explain-halt does not say not to retry: {ex}"
    );
}

#[test]
fn steady_improvement_hitting_the_cap_is_12_and_advises_raising_it() {
    let r = Repo::new();
    r.write("fixed", "0\n")
        .tap_check(
            r#"n=$(cat fixed); echo "TAP version 13"; echo "1..6"
for k in 1 2 3 4 5 6; do if [ "$k" -le "$n" ]; then echo "ok $k - case_$k"; else echo "not ok $k - case_$k"; echo "  ---"; echo "  message: case_$k is wrong"; echo "  ..."; fi; done
[ "$n" -ge 6 ]
"#,
        )
        .commit("fixture");
    let out = r.lx_tap(
        "n=$(cat fixed); echo $((n+1)) > fixed",
        &["--max-iterations", "3"],
    );
    let v = out.expect(12, Some("max_iterations_reached"));
    assert_eq!(v["iteration"], 3, "{v}");
    let ex = r.lx(&["explain-halt"]).expect(0, None);
    assert_eq!(ex["halt_reason"], "max_iterations_reached");
    assert!(
        mentions(&ex, "raise"),
        "explain-halt does not advise raising the limit: {ex}"
    );
}

/// An agent driven by a counter outside the workdir: iteration 1 fixes t1 (leaves
/// t2), iteration 2 fixes t2 but breaks t1 again, later iterations fix everything.
/// Before changing anything it records what `failing` held into `seen.<n>`.
fn regressing_agent(c: &Counter) -> String {
    let s = c.shell();
    let d = shell_quote(c.dir().as_os_str());
    format!(
        "n=$(cat {s}); echo $((n+1)) > {s}; cp failing {d}/seen.$n; \
         case $n in 0) echo 't2' > failing;; 1) echo 't1' > failing;; *) echo '' > failing;; esac"
    )
}

fn regression_repo() -> Repo {
    let r = Repo::new();
    r.write("failing", "t1 t2\n")
        .tap_check(
            r#"f=$(cat failing); echo "TAP version 13"; echo "1..3"; i=0
for t in t1 t2 t3; do i=$((i+1)); case " $f " in *" $t "*) echo "not ok $i - $t";; *) echo "ok $i - $t";; esac; done
[ -z "$f" ]
"#,
        )
        .commit("fixture");
    r
}

#[test]
fn a_regression_with_on_regression_halt_is_same_test_regressed() {
    let r = regression_repo();
    let c = Counter::new();
    let out = r.lx_tap(
        &regressing_agent(&c),
        &["--on-regression", "halt", "--max-iterations", "10"],
    );
    let v = out.expect(17, Some("same_test_regressed"));
    assert_eq!(v["iteration"], 2, "{v}");
    assert!(mentions(&v, "t1"), "the regressed test is not named: {v}");
}

#[test]
fn a_regressing_iteration_is_reverted_by_default() {
    let r = regression_repo();
    let c = Counter::new();
    let out = r.lx_tap(&regressing_agent(&c), &["--max-iterations", "10"]);
    let v = out.expect(10, Some("success_condition_met"));
    assert_eq!(v["iteration"], 3, "{v}");
    let lines = receipt_of(&v);
    let reverted = events(&lines, "reverted");
    assert_eq!(reverted.len(), 1, "expected one reverted event");
    assert_eq!(reverted[0]["iteration"], 2);
    assert_eq!(reverted[0]["to_iteration"], 1);
    assert!(mentions(reverted[0], "t1"), "{}", reverted[0]);
    // Iteration 3 started from iteration 1's tree (t2 failing), not iteration 2's (t1).
    let seen = std::fs::read_to_string(c.dir().join("seen.2")).expect("seen.2");
    assert_eq!(
        seen.trim(),
        "t2",
        "the regressing iteration's file was not restored"
    );
    // The revert left the user's branch alone.
    assert_eq!(r.git(&["rev-list", "--count", "HEAD"]).trim(), "1");
}

#[test]
fn an_agent_flipping_between_two_broken_states_is_a_no_convergence_halt() {
    let r = Repo::new();
    r.write("mode", "A\n")
        .tap_check(
            r#"m=$(cat mode); echo "TAP version 13"; echo "1..3"; echo "ok 1 - stable_case"
if [ "$m" = A ]; then echo "not ok 2 - left_case"; echo "ok 3 - right_case"; else echo "ok 2 - left_case"; echo "not ok 3 - right_case"; fi
exit 1
"#,
        )
        .commit("fixture");
    let c = Counter::new();
    let s = c.shell();
    let exec = format!(
        "n=$(cat {s}); echo $((n+1)) > {s}; if [ $((n % 2)) = 0 ]; then echo B > mode; else echo A > mode; fi"
    );
    let out = r.lx_tap(&exec, &["--max-iterations", "12"]);
    let v = out.expect(17, None);
    let reason = v["halt_reason"].as_str().unwrap();
    assert!(
        [
            "oscillation_detected",
            "same_test_regressed",
            "unsatisfiable_constraints",
            "no_progress_detected",
            "same_failure_repeated"
        ]
        .contains(&reason),
        "{v}"
    );
    assert!(v["iteration"].as_u64().unwrap() <= 7, "{v}");
}
