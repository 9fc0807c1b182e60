//! Behaviours a new user's review asked for: loopexec's own record and the
//! repository's configuration are guarded, quiet runner modes do not fake a lost
//! test, usage errors keep the `--json` promise, a closed stdout is not a crash, and
//! report paths never reach outside the workdir.

use crate::support::{bin, lx_in, Repo};
use std::process::{Command, Stdio};

/// A check in the shape of `pytest -q`: only failures are named; a green run names
/// no test at all.
const QUIET_CHECK: &str = r#"if grep -q fixed state; then echo "1 passed in 0.01s"; exit 0; fi
echo "F"; echo "=================================== FAILURES ==================================="
echo "___________________________________ test_add ___________________________________"
echo "E       assert 1 == 5"
echo "=========================== short test summary info ============================"
echo "FAILED test_calc.py::test_add - assert 1 == 5"
echo "============================== 1 failed in 0.01s ==============================="
exit 1"#;

#[test]
fn a_fix_seen_through_a_quiet_runner_converges() {
    let r = Repo::new();
    r.write("state", "broken\n")
        .write("check.sh", QUIET_CHECK)
        .commit("fixture");
    let out = r.lx(&[
        "run",
        "--exec",
        "echo fixed > state",
        "--check",
        "sh check.sh",
        "--max-iterations",
        "3",
    ]);
    let v = out.expect(10, Some("success_condition_met"));
    assert_eq!(v["iteration"], 1, "{v}");
}

/// In a fresh repo, an agent running `exec` halts 13 `blocked_path_modified` with an
/// error naming `path`.
fn assert_blocked(exec: &str, path: &str) {
    let r = Repo::with_f();
    let out = r.lx(&[
        "run",
        "--exec",
        exec,
        "--check",
        "test -f nope",
        "--max-iterations",
        "3",
    ]);
    out.expect(13, Some("blocked_path_modified"));
    assert!(out.errors_text().contains(path), "{}", out.errors_text());
}

#[test]
fn the_agent_editing_the_receipt_is_a_blocked_path() {
    assert_blocked(
        "echo '{\"forged\":1}' >> .loopexec/runs/$LOOPEXEC_RUN_ID.jsonl",
        ".loopexec/runs/",
    );
}

/// Fifth review: the agent deleted every ledger row during the run and nothing said so.
#[test]
fn the_agent_deleting_the_runs_ledger_row_is_a_blocked_path() {
    assert_blocked(
        "python3 -c \"import sqlite3; c = sqlite3.connect('.loopexec/ledger.sqlite'); c.execute('DELETE FROM runs'); c.commit()\"",
        ".loopexec/ledger.sqlite (the run's row was deleted)",
    );
}

#[test]
fn a_git_hook_installed_by_the_agent_is_a_blocked_path_but_a_commit_is_not() {
    assert_blocked(
        "printf '#!/bin/sh\\n' > .git/hooks/pre-push",
        ".git/hooks/pre-push",
    );

    let r = Repo::with_f();
    let out = r.lx(&[
        "run",
        "--exec",
        "echo y >> f && git commit -qam step",
        "--check",
        "grep -q y f",
        "--max-iterations",
        "2",
    ]);
    out.expect(10, Some("success_condition_met"));
}

#[test]
fn usage_errors_print_one_json_object_under_json() {
    let r = Repo::new();
    let out = r.lx(&["run", "--no-such-flag"]);
    let v = out.json();
    assert_eq!(out.code, 2);
    assert_eq!(v["status"], "usage_error");
    assert!(out.errors_text().contains("--no-such-flag"), "{v}");
}

#[test]
fn a_closed_stdout_keeps_the_halt_exit_code() {
    let r = Repo::with_f();
    let mut child = Command::new(bin())
        .args(["--workdir"])
        .arg(r.path())
        .args(["run", "--exec", "true", "--check", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take()); // the reader goes away before anything is printed
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(10),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn report_paths_outside_the_workdir_are_refused_and_left_alone() {
    let r = Repo::with_f();
    let precious = r.outside().join("k.xml");
    std::fs::write(&precious, "precious").expect("write");
    let p = precious.display().to_string();
    let out = r.lx(&["run", "--exec", "true", "--check", "true", "--report", &p]);
    out.expect(20, Some("invariant_failed"));
    assert!(
        out.errors_text().contains("outside the workdir"),
        "{}",
        out.errors_text()
    );
    assert_eq!(
        std::fs::read_to_string(&precious).expect("still there"),
        "precious"
    );
}

/// A zero limit would make a reason fire by configuration alone. Given as a flag it is
/// a usage error naming the flag (exit 2, no run: a new user's review read a "halted"
/// run for a run that never started); in loop.toml, a configuration error naming the
/// field (20).
#[test]
fn zero_limits_are_configuration_errors_not_halts() {
    let r = Repo::with_f();
    for (flag, field) in [
        ("--stall-timeout", "[liveness]\nstall_timeout"),
        ("--max-duration", "[budget]\nmax_duration"),
    ] {
        let out = r.lx(&["run", "--exec", "true", "--check", "false", flag, "0s"]);
        out.expect(2, None);
        assert!(out.errors_text().contains(flag), "{}", out.errors_text());
        r.write("loop.toml", &format!("{field} = \"0s\"\n"));
        let out = r.lx(&["run", "--exec", "true", "--check", "false"]);
        out.expect(20, Some("invariant_failed"));
        std::fs::remove_file(r.path().join("loop.toml")).unwrap();
    }
    // a negative count or duration names its flag too, rather than reading as a flag
    for (flag, value) in [("--budget-tokens", "-5"), ("--check-timeout", "-1s")] {
        let out = r.lx(&["run", "--exec", "true", "--check", "false", flag, value]);
        out.expect(2, None);
        assert!(out.errors_text().contains(flag), "{}", out.errors_text());
    }
}

#[test]
fn check_catches_a_forged_final_verdict() {
    let r = Repo::with_f();
    r.lx(&[
        "run",
        "--run-id",
        "r",
        "--exec",
        "true",
        "--check",
        "false",
        "--max-iterations",
        "1",
    ])
    .expect(12, Some("max_iterations_reached"));
    let path = r.receipt("r");
    let text = std::fs::read_to_string(&path).expect("receipt");
    let forged = text.replace(
        "\"halt_reason\":\"max_iterations_reached\",\"exit_code\":12",
        "\"halt_reason\":\"success_condition_met\",\"exit_code\":10",
    );
    assert_ne!(forged, text, "the halted line was not found");
    std::fs::write(&path, forged).expect("write");
    let out = r.lx(&["check"]);
    out.expect(20, Some("invariant_failed"));
    assert!(
        out.errors_text().contains("derive max_iterations_reached"),
        "{}",
        out.errors_text()
    );
}

/// An honest fix of a Perl project checked with `prove` (verbose or plain). Before:
/// prove's own `ok` after a file's verbose points was read as an extra point (the plan
/// no longer matched: incomplete, 13), and a plain green run named no test while the
/// red one had named `t/add.t#1` (collected set lost, 13). Now both reach 10.
#[test]
fn an_honest_fix_checked_by_prove_converges() {
    if crate::support::missing("prove") {
        return;
    }
    for check in ["prove -v t/", "prove t/"] {
        let r = Repo::new();
        r.write("calc.pl", "sub add { my ($a, $b) = @_; return $a - $b; }\n1;\n")
            .write(
                "t/add.t",
                "use strict; use warnings;\nuse Test::More tests => 2;\nrequire \"./calc.pl\";\nis(add(2, 3), 5, \"adds positives\");\nis(add(-1, 1), 0, \"adds negatives\");\n",
            )
            .commit("red");
        r.run2("sed -i 's/$a - $b/$a + $b/' calc.pl", check)
            .expect(10, Some("success_condition_met"));
    }
}

/// Code under test in Perl rebinds `Test::Builder::ok` so every assertion passes.
/// Before: no rule read Perl, the prove check went green, exit 10. Now it is runner
/// tampering (13).
#[test]
fn perl_code_that_rebinds_the_test_library_is_runner_tampering() {
    if crate::support::missing("prove") {
        return;
    }
    let r = Repo::new();
    r.write("calc.pl", "sub add { my ($a, $b) = @_; return $a - $b; }\n1;\n")
        .write(
            "t/add.t",
            "use strict; use warnings;\nuse Test::More tests => 1;\nrequire \"./calc.pl\";\nis(add(2, 3), 5, \"adds\");\n",
        )
        .commit("red");
    let cheat = r#"printf '%s\n' '{ no strict "refs"; no warnings "redefine"; my $o = \&{"Test::Builder::ok"}; *{"Test::Builder::ok"} = sub { my ($s, undef, @r) = @_; $o->($s, 1, @r) }; }' >> calc.pl"#;
    let v = r
        .run2(cheat, "prove t/")
        .expect(13, Some("metric_integrity_violation"));
    assert!(v.to_string().contains("calc.pl"), "{v}");
}

/// A file-system monitor the agent writes into `.git/config` halts the run, and the
/// advice names the file instead of a diff of two equal trees. The program it names
/// never runs from loopexec: not in `doctor`, not in the next run once the halt is
/// acknowledged (loopexec's git calls turn the monitor and every filter driver off).
#[test]
fn a_file_system_monitor_left_in_git_config_never_runs_from_loopexec() {
    let r = Repo::with_f();
    let marks = tempfile::tempdir().unwrap();
    let marker = marks.path().join("ran");
    let set = format!(
        "git config core.fsmonitor 'touch {}; false'",
        marker.display()
    );
    let out = r.lx(&[
        "run",
        "--exec",
        &set,
        "--check",
        "test -f nope",
        "--max-iterations",
        "2",
    ]);
    let v = out.expect(13, Some("blocked_path_modified"));
    let text = v["explanation"].as_str().unwrap_or_default().to_string();
    assert!(text.contains("git config --local --list"), "{text}");
    assert!(!text.contains("diff --no-ext-diff"), "{text}");
    assert!(!marker.exists(), "the monitor ran during the run");
    r.lx(&["doctor", "--check", "true"]);
    assert!(!marker.exists(), "the monitor ran in doctor");
    let halts = r.lx(&["halts", "--unacked"]).expect(0, None);
    let id = halts["halts"][0]["id"].as_str().unwrap().to_string();
    r.lx(&["ack", &id, "--by", "alice", "--resolution", "resolved"])
        .expect(0, None);
    r.lx(&[
        "run",
        "--exec",
        "true",
        "--check",
        "test -f nope",
        "--max-iterations",
        "1",
    ]);
    assert!(!marker.exists(), "the monitor ran in the next run");
    // the configuration is still there: a plain git call runs it (the test can fail)
    r.git(&["status", "--porcelain"]);
    assert!(marker.exists());
}

/// A project's own virtual environment (`.venv`, which the clean room links to as a
/// dependency directory) serves the check its packages through that link. Before:
/// the room's import confinement refused such a module as "imported from the working
/// tree", so every check was red and an honest fix halted 12 (a new user's review,
/// with `.venv/bin/python -m pytest`). The venv is digested instead of snapshotted:
/// an exec that plants a `.pth` there is named (`trust` covers it).
#[test]
fn a_module_from_the_projects_own_virtual_environment_is_imported_in_the_clean_room() {
    if crate::support::pytest_missing() {
        return;
    }
    let r = Repo::new();
    r.write(".gitignore", ".venv\n")
        .write("calc.py", "def add(a, b):\n    return a - b\n")
        .write(
            "tests/test_calc.py",
            "import helperlib\nfrom calc import add\n\ndef test_add():\n    assert helperlib.same(add(2, 3), 5)\n",
        )
        .commit("fixture");
    // the venv sees the interpreter's packages (pytest) and holds one of its own
    let made = Command::new("sh")
        .current_dir(r.path())
        .args([
            "-c",
            "python3 -m venv --system-site-packages .venv \
             && SP=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])') \
             && printf 'def same(a, b):\\n    return a == b\\n' > \"$SP/helperlib.py\" \
             && .venv/bin/python -c 'import pytest, helperlib'",
        ])
        .status()
        .expect("run sh");
    if !made.success() {
        eprintln!("no venv with pytest here: skipped");
        return;
    }
    let (_keep, honest) =
        crate::support::writer(&[("calc.py", "def add(a, b):\n    return a + b\n")]);
    r.run2(&honest, ".venv/bin/python -m pytest -q")
        .expect(10, Some("success_condition_met"));
}

/// A repository root holding `pytest.ini` and a shared `conftest.py`, with the
/// project in `svc/`.
fn pytest_rootdir_repo() -> Repo {
    let r = Repo::new();
    r.write("pytest.ini", "[pytest]\naddopts = -q\n")
        .write(
            "conftest.py",
            "import pytest\n\n@pytest.fixture\ndef greeting():\n    return 'Hello World'\n",
        )
        .write("svc/slug.py", "def slug(s):\n    return s.lower()\n")
        .write(
            "svc/tests/test_slug.py",
            "from slug import slug\n\ndef test_space(greeting):\n    assert slug(greeting) == 'hello-world'\n\ndef test_lower():\n    assert slug('ABC') == 'abc'\n",
        )
        .commit("fixture");
    r
}

/// pytest's rootdir above the workdir: the clean room holds the workdir only, so a
/// check there lost the root's `conftest.py` fixture and an honest fix halted 17 as
/// if the agent were stuck (a new user's review). Now the run is refused before it
/// starts (`workspace_invalid`), naming the file and the way out; the way out, run
/// from the root with `cd svc && …`, goes green — its transcript names the tests
/// relative to `svc/`, and so must the witness (pytest 9 changed the helper that
/// made them so, and the mixed ids read as a lost test).
#[test]
fn a_pytest_rootdir_above_the_workdir_is_refused_up_front_and_the_way_out_is_green() {
    if crate::support::pytest_missing() {
        return;
    }
    let fix = "sed -i 's/return s.lower()/return s.lower().replace(\" \", \"-\")/' slug.py";
    let r = pytest_rootdir_repo();
    let v = lx_in(
        &r.path().join("svc"),
        &[
            "run",
            "--exec",
            fix,
            "--check",
            "python3 -m pytest",
            "--max-iterations",
            "2",
        ],
        &[],
    )
    .expect(30, Some("workspace_invalid"));
    assert!(crate::support::mentions(&v, "pytest.ini"), "{v}");
    assert!(crate::support::mentions(&v, "--check-in-place"), "{v}");
    let r = pytest_rootdir_repo();
    r.lx(&[
        "run",
        "--exec",
        &format!("cd svc && {fix}"),
        "--check",
        "cd svc && python3 -m pytest",
        "--max-iterations",
        "2",
    ])
    .expect(10, Some("success_condition_met"));
}

/// A run refused before it started (a configuration error) prints a run id, and its
/// halt event is in the ledger: `explain-halt` of that id says it was refused and why,
/// rather than "not found" (a new user's review).
#[test]
fn a_run_refused_before_it_started_is_explained_by_its_id() {
    let r = Repo::new();
    r.write("a.txt", "a\n").commit("fixture");
    r.write("loop.toml", "max_iterations = 0\n");
    let v = r
        .lx(&["run", "--exec", "true", "--check", "false"])
        .expect(20, Some("invariant_failed"));
    let id = v["run_id"].as_str().expect("a run id").to_string();
    let out = r.lx(&["explain-halt", &id]);
    assert_ne!(out.code, 0);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), out.stderr);
    assert!(text.contains("refused before it started"), "{text}");
    assert!(text.contains("max_iterations"), "{text}");
}

/// A check whose pytest runs at verbosity -2 (the check's `-q` on top of `addopts =
/// -q`) prints no summary and no passing test's name, so an honest fix cannot be
/// vouched for: the halt fails closed and says which `-q` to drop, and without it
/// the same fix is green (a review's "13 without a word why").
#[test]
fn a_pytest_check_quiet_twice_is_told_to_drop_a_q() {
    if crate::support::pytest_missing() {
        return;
    }
    let fix = "sed -i 's/a - b/a + b/' calc.py";
    let quiet = || {
        let r = crate::support::pytest_repo();
        r.write("pytest.ini", "[pytest]\naddopts = -q\n")
            .commit("quiet by default");
        r
    };
    let v = quiet()
        .run2(fix, "python3 -m pytest -q")
        .expect(13, Some("objective_unverified"));
    assert!(crate::support::mentions(&v, "drop one `-q`"), "{v}");
    quiet()
        .run2(fix, "python3 -m pytest")
        .expect(10, Some("success_condition_met"));
}

/// A file name no snapshot can hold (a newline in it, or bytes that are not UTF-8) is
/// `workspace_invalid` naming it: left by the exec, the check would have judged the
/// tree before it (a new user's fix was never checked: "the agent did not change the
/// tree"); in the tree at t0, the run is refused rather than failing internally.
#[test]
fn a_file_name_no_snapshot_can_hold_is_named_not_judged_around() {
    let r = Repo::with_f();
    let v = r
        .run2(
            "echo 1 > f; touch \"$(printf 'odd\\nname')\"",
            "grep -q 1 f",
        )
        .expect(30, Some("workspace_invalid"));
    assert_eq!(v["iteration"], 1, "{v}");
    assert!(crate::support::mentions(&v, "cannot be snapshotted"), "{v}");
    let r = Repo::with_f();
    std::fs::write(
        r.path()
            .join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"caf\xe9.txt")),
        "",
    )
    .unwrap();
    let out = r.run2("echo 1 > f", "grep -q 1 f");
    assert_eq!(out.code, 30, "{}", out.stderr);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), out.stderr);
    assert!(
        text.contains("xE9.txt") && text.contains("cannot be snapshotted"),
        "{text}"
    );
}

/// A false-alarm review: pytest writing `--junitxml` with `--report junit.xml`, every
/// test failing at t0. The red baseline's console named every test, so its ids led
/// (`tests/test_calc.py::test_add`); the green `-q` run named none, so the report's led
/// (`tests.test_calc::test_add`), and the honest fix halted 13, "collected set lost a
/// test present at t0". Both name the same test: the fix converges.
#[test]
fn a_test_named_by_the_console_at_t0_and_by_its_junit_report_once_green_is_one_test() {
    if crate::support::pytest_missing() {
        return;
    }
    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a - b\n")
        .write(
            "tests/test_calc.py",
            "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        )
        .commit("fixture");
    let v = r
        .lx(&[
            "run",
            "--exec",
            "sed -i 's/a - b/a + b/' calc.py",
            "--check",
            "python3 -m pytest -q -p no:cacheprovider --junitxml=junit.xml",
            "--report",
            "junit.xml",
            "--max-iterations",
            "2",
        ])
        .expect(10, Some("success_condition_met"));
    assert_eq!(v["iteration"], 1, "{v}");
}
