//! Measuring the check itself: probe-check's flake bound and doctor's adequacy canaries.

use crate::support::*;

#[test]
fn a_deterministic_check_is_certified_after_enough_runs() {
    let r = Repo::with_f();
    let c = Counter::new();
    let s = c.shell();
    let check = format!("n=$(cat {s}); echo $((n+1)) > {s}; true");
    let out = r.lx(&["probe-check", "--check", &check, "--max-flake-rate", "0.1"]);
    let v = out.expect(0, None);
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["flips"], 0, "{v}");
    assert_eq!(v["flake_rate_bound"]["meets_target"], true, "{v}");
    let runs = c.get();
    assert!(
        runs >= 20,
        "only {runs} runs to certify a 10% flake-rate bound"
    );
}

#[test]
fn a_check_failing_one_run_in_three_is_flaky() {
    let r = Repo::with_f();
    let c = Counter::new();
    let s = c.shell();
    let check = format!("n=$(cat {s}); echo $((n+1)) > {s}; [ $((n % 3)) != 2 ]");
    let out = r.lx(&["probe-check", "--check", &check, "--max-flake-rate", "0.1"]);
    out.expect(14, Some("check_flaky"));
    assert!(c.get() >= 3, "ran {} times", c.get());
}

#[test]
fn doctor_finds_a_check_that_cannot_fail_inadequate_for_changed_python() {
    let r = Repo::new();
    r.write("src/calc.py", "def add(a, b):\n    return a + b\n")
        .commit("base");
    r.write(
        "src/calc.py",
        "def add(a, b):\n    if a > 10:\n        return a + b + 0\n    return a + b\n",
    )
    .commit("change");
    let out = r.lx(&["doctor", "--check", "true", "--diff-base", "HEAD~1"]);
    let v = out.expect(15, Some("check_inadequate"));
    assert!(
        mentions(&v, "calc.py"),
        "the surviving mutant's file is not named: {v}"
    );
    // Doctor mutates copies, never the workdir.
    assert_eq!(r.git(&["status", "--porcelain"]).trim(), "");
}

#[test]
fn a_check_that_only_passes_in_utc_is_not_hermetic_in_tz() {
    let r = Repo::with_f();
    let out = r.lx_env(
        &[
            "probe-check",
            "--check",
            r#"test "$(date +%z)" = "+0000""#,
            "--dimensions",
            "tz",
        ],
        &[("TZ", "UTC")],
    );
    let v = out.expect(14, Some("check_not_hermetic"));
    assert!(mentions(&v, "tz"), "the broken dimension is not named: {v}");
}
