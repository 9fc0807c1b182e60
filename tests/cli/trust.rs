//! Exit 10 cannot be forged: the clean room, the frozen oracle, fail-closed evidence,
//! the exec's sandbox, escaped processes, runner tampering and records that fail
//! loudly — each reached by a real cheating agent (a shell or Python script) against a
//! real check, in a real git repository or a plain directory. Each test's doc comment
//! names the wrong outcome loopexec gave before.

use crate::support::*;
use serde_json::Value;
use std::time::Duration;

fn dir_repo() -> Repo {
    let r = Repo::new();
    r.write("tests/a.sh", "exit 0\n")
        .write("tests/b.sh", "[ \"$(cat value)\" = 5 ]\n")
        .write("value", "4\n")
        .tap_check(DIR_CHECK)
        .commit("fixture");
    r
}

/// A plain directory (no git at all) where the agent deletes the failing test.
/// Before: "every guard held" with no guard running, exit 10.
#[test]
fn in_a_plain_directory_a_deleted_test_is_still_an_integrity_violation() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("proj");
    std::fs::create_dir_all(d.join("tests")).unwrap();
    std::fs::write(d.join("tests/a.sh"), "exit 0\n").unwrap();
    std::fs::write(d.join("tests/b.sh"), "exit 1\n").unwrap();
    std::fs::write(d.join("check.sh"), DIR_CHECK).unwrap();
    let out = lx_in(
        &d,
        &[
            "run",
            "--exec",
            "rm -f tests/b.sh",
            "--check",
            "sh check.sh",
            "--test-format",
            "tap",
            "--max-iterations",
            "3",
        ],
        &[],
    );
    let v = out.expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "tests/b.sh"), "{v}");
}

/// The agent hides its weakened test from git (`update-index --assume-unchanged`, a
/// `.gitignore` entry, `git replace`): loopexec's own snapshot sees the bytes.
/// Before: exit 10 (the guards asked the user's git, which lied).
#[test]
fn git_made_to_lie_does_not_hide_an_edited_test() {
    let r = dir_repo();
    let exec = "git update-index --assume-unchanged tests/b.sh; echo 'exit 0' > tests/b.sh; \
                echo tests/b.sh >> .gitignore";
    let out = r.lx_tap(exec, &["--max-iterations", "3"]);
    let v = out.expect(13, Some("metric_integrity_violation"));
    assert!(
        mentions(&v, "frozen oracle edited since t0: tests/b.sh"),
        "{v}"
    );
    assert!(mentions(&v, "+1: exit 0"), "the changed line is named: {v}");
}

/// A check output that names no test at all, where t0's named three.
/// Before: the collected-set guard switched itself off, exit 10.
#[test]
fn a_green_run_that_shows_no_tests_is_objective_unverified() {
    let r = tap_repo(3);
    // The check prints nothing and exits 0 when `quiet` exists (a file the agent may
    // create: it is not part of the oracle).
    r.tap_check(&format!("[ -f quiet ] && exit 0\n{TAP_CHECK}"))
        .commit("quiet mode");
    // Format detection on its own (no --test-format): the green output is no format at
    // all, judged by its exit code, with nothing to compare with t0's tests.
    let out = r.lx(&[
        "run",
        "--exec",
        "touch quiet",
        "--check",
        "sh check.sh",
        "--max-iterations",
        "3",
    ]);
    let v = out.expect(13, Some("objective_unverified"));
    assert!(mentions(&v, "shows no tests"), "{v}");
}

/// A process outside the check rewrites a file of the working tree while the check
/// runs: the check runs in the clean room, so the write cannot reach it (before: the
/// check read the agent's tree). The change is recorded, and a green check under a
/// moving tree is not a success: the tree it would leave is not the one judged (the
/// writer may be code under test reaching out of the room by an absolute path).
#[test]
fn the_tree_changing_while_the_check_runs_is_recorded_and_no_green_under_it() {
    let r = tap_repo(1);
    r.tap_check(&format!("sleep 1.5\n{TAP_CHECK}"))
        .commit("slow check");
    let dir = r.path().to_path_buf();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let writer = std::thread::spawn(move || {
        let mut n = 0u64;
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            n += 1;
            let _ = std::fs::write(dir.join("scratch.txt"), n.to_string());
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let out = r.lx_tap(PROGRESS_AGENT, &["--max-iterations", "2"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    // The writer is at work from the first check on. The red baseline check under the
    // moving tree is recorded (the next exec's snapshot carries the change); the green
    // check of iteration 1 is not the tree a success would leave. Before: exit 10 with
    // the change in the receipt only.
    let v = out.expect(13, Some("objective_unverified"));
    assert_eq!(v["iteration"], 1, "{v}");
    assert!(mentions(&v, "scratch.txt"), "{v}");
    let lines = receipt_of(&v);
    let recorded = events(&lines, "check_finished").iter().any(|c| {
        c["changed_during_check"]
            .to_string()
            .contains("scratch.txt")
    });
    assert!(recorded, "the change during the check is recorded");
}

/// Code under test that the red check runs rewrites the check in the working tree by
/// its absolute path, after the clean room was synced: that check cannot see it. A
/// reviewer's two-run cheat ended the first run at its cap and the second started
/// green from the rewritten check. The change is judged later instead: by the next
/// check of the same run, and by the next run's start, which is judged from the first
/// run's t0. (Between the two, the red check halted the run itself, and an honest
/// user's file written beside a run stopped it too.)
#[test]
fn a_red_check_that_writes_the_working_tree_is_judged_by_the_next_check_or_run() {
    let weakened = "printf 'echo 1..1; echo ok 1 - t1\\n'";
    let setup = || {
        let r = tap_repo(1);
        with_app_under_test(&r).commit("app");
        let exec = format!(
            "echo \"app() {{ {weakened} > {}/check.sh; }}\" > app.sh",
            r.path().display()
        );
        (r, exec)
    };
    // one run: the red check of iteration 1 rewrites check.sh; iteration 2's check
    // passes on it and its guards see the check changed since t0
    let (r, exec) = setup();
    let v = r
        .lx_tap(&exec, &["--max-iterations", "3"])
        .expect(13, Some("metric_integrity_violation"));
    assert_eq!(v["iteration"], 2, "{v}");
    assert!(mentions(&v, "check.sh"), "{v}");
    let moved = events(&receipt_of(&v), "check_finished")
        .iter()
        .any(|c| c["changed_during_check"].to_string().contains("check.sh"));
    assert!(moved, "the write during the red check is recorded: {v}");
    // two runs: the first ends at its cap right after that check
    let (r, exec) = setup();
    r.lx_tap(&exec, &["--run-id", "reach", "--max-iterations", "1"])
        .expect(12, Some("max_iterations_reached"));
    assert!(
        r.read("check.sh").contains("ok 1 - t1"),
        "the check did rewrite the working tree"
    );
    let again = next_run_judges_the_rewritten_check(&r);
    let lines = receipt_of(&again);
    let started = &events(&lines, "run_started")[0];
    assert_eq!(
        started["inherits_unjudged"]["run_id"], "reach",
        "judged from the first run's t0: {started}"
    );
}

/// A project whose pytest collects `check_*.py` (`python_files` in `pytest.ini`):
/// those files are its tests. Before: they were the agent's, and weakening one
/// reached exit 10 (fresh review).
#[test]
fn test_files_named_by_the_projects_own_pattern_are_frozen() {
    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a - b\n")
        .write(
            "pytest.ini",
            "[pytest]\npython_files = check_*.py\ntestpaths = checks\n",
        )
        .write(
            "checks/check_calc.py",
            "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        )
        .commit("red");
    let weaken = "sed -i 's/== 5/== -1/' checks/check_calc.py";
    let out = run_pytest(&r, weaken);
    let v = out.expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "checks/check_calc.py"), "{v}");
}

/// The test compares against a golden file (`golden/cases.json`) and the agent
/// rewrites the expected value. Before: the golden file was no test file, exit 10.
/// Now the data tests compare against is frozen like the tests.
#[test]
fn a_golden_file_the_tests_compare_against_is_frozen() {
    if pytest_missing() {
        return;
    }
    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a - b\n")
        .write("golden/cases.json", "[[2, 3, 5]]\n")
        .write(
            "test_calc.py",
            "import json\nfrom calc import add\n\ndef test_cases():\n    for a, b, want in json.load(open('golden/cases.json')):\n        assert add(a, b) == want\n",
        )
        .commit("red");
    let v = r
        .run2(
            "echo '[[2, 3, -1]]' > golden/cases.json",
            "python3 -m pytest -q",
        )
        .expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "golden/cases.json"), "{v}");
}

/// A makefile that includes an optional file t0 lacks (`-include local.mk`): the agent
/// creates it and overrides the recipe's test command. Before: make read the agent's
/// file, the check went green, exit 10. Now the absent include is frozen, the created
/// file is left out of the judged tree and the frozen test stays red.
#[test]
fn a_makefile_include_the_agent_creates_is_left_out() {
    let r = Repo::new();
    r.write("value", "4\n")
        .write(
            "Makefile",
            "-include local.mk\nTEST ?= [ \"$$(cat value)\" = 5 ]\ntest:\n\t$(TEST)\n",
        )
        .commit("red");
    let v = r
        .run2("echo 'TEST = true' > local.mk", "make -s test")
        .expect(12, Some("max_iterations_reached"));
    assert!(left_out(&v).contains("local.mk"), "{v}");
}

/// A dependency directory (`node_modules`, ignored by git) gets a shim. Before: the
/// check in the agent's tree ran the shim and went green.
#[test]
fn a_shim_in_a_dependency_directory_is_tampering() {
    let r = tap_repo(1);
    r.write(".gitignore", "node_modules/\n")
        .write("node_modules/.bin/tool", "#!/bin/sh\nexit 1\n")
        .commit("deps");
    let out = r.lx_tap(
        "printf '#!/bin/sh\\nexit 0\\n' > node_modules/.bin/tool",
        &["--max-iterations", "2"],
    );
    let v = out.expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "node_modules/.bin/tool"), "{v}");
}

/// Seventh review: a check that writes an allowed cache into a linked dependency
/// directory (`node_modules/.vite`, named in `check_may_write`) was blamed at the next
/// check as the agent changing dependencies since t0 (exit 13) while the honest agent
/// converged. The state a check leaves is what the next comparison starts from; a
/// change made between checks is still tampering.
#[test]
fn a_checks_allowed_write_into_dependencies_is_not_the_agents() {
    let cache_then_check = format!(
        "mkdir -p node_modules/.vite && date +%s%N > node_modules/.vite/deps.json\n{TAP_CHECK}"
    );
    let fixture = |failing: &str| {
        let r = Repo::new();
        let n = failing.split_whitespace().count();
        r.write("tests", &format!("{n}\n"))
            .write("failing", &format!("{failing}\n"))
            .tap_check(&cache_then_check)
            .write(".gitignore", "node_modules/\n")
            .write("node_modules/lib/index.js", "module.exports = 1;\n")
            .write(
                "loop.toml",
                "[guards]\ncheck_may_write = [\"node_modules/.vite/**\"]\n",
            )
            .commit("fixture");
        r
    };
    let r = fixture("t1 t2");
    let v = r
        .lx_tap(
            PROGRESS_AGENT,
            &["--config", "loop.toml", "--max-iterations", "4"],
        )
        .expect(10, Some("success_condition_met"));
    assert!(!mentions(&v, "dependency directories changed"), "{v}");
    // between checks, the agent's own change of the same directory is still caught
    let r2 = fixture("t1");
    let v = r2
        .lx_tap(
            "echo 'module.exports = 2;' > node_modules/lib/index.js",
            &["--config", "loop.toml", "--max-iterations", "2"],
        )
        .expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "node_modules/lib/index.js"), "{v}");
}

/// A shim put earlier on the check's `PATH`, outside the workdir. Before: the check
/// ran the shim (exit 10).
#[test]
fn a_shim_earlier_on_path_is_hermeticity_violation() {
    let r = tap_repo(1);
    let tools = tempfile::tempdir().unwrap();
    let early = tools.path().join("early");
    let late = tools.path().join("late");
    std::fs::create_dir_all(&early).unwrap();
    std::fs::create_dir_all(&late).unwrap();
    let real = late.join("lxtool");
    std::fs::write(&real, "#!/bin/sh\nexec sh check.sh\n").unwrap();
    std::fs::set_permissions(&real, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}:{}",
        early.display(),
        late.display(),
        std::env::var("PATH").unwrap()
    );
    let shim = early.join("lxtool");
    let exec = format!(
        "printf '#!/bin/sh\\necho 1..1; echo ok 1 - t1\\n' > '{0}'; chmod +x '{0}'",
        shim.display()
    );
    let out = r.lx_env(
        &[
            "run",
            "--exec",
            &exec,
            "--check",
            "lxtool",
            "--test-format",
            "tap",
            "--max-iterations",
            "2",
        ],
        &[("PATH", &path)],
    );
    let v = out.expect(14, Some("hermeticity_violation"));
    assert!(mentions(&v, "path:lxtool"), "{v}");
    // the advice is about the toolchain, not about the check's own writes
    assert!(mentions(&v, "outside the tree changed since t0"), "{v}");
    assert!(!mentions(&v, "check_may_write"), "{v}");
}

/// Code under test prints a forged TAP transcript and exits 0 on import, before any
/// test runs. Before: exit 10 (a complete, green TAP stream).
#[test]
fn code_under_test_that_forges_the_transcript_and_exits_is_runner_tampering() {
    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a - b\n")
        .write(
            "run_tests.py",
            "import calc\nok = calc.add(2, 3) == 5\nprint('1..1')\nprint(('ok' if ok else 'not ok') + ' 1 - add')\nraise SystemExit(0 if ok else 1)\n",
        )
        .commit("fixture");
    let exec =
        "printf 'import os\\nprint(\"1..1\")\\nprint(\"ok 1 - add\")\\nos._exit(0)\\n' >> calc.py";
    let out = r.lx(&[
        "run",
        "--exec",
        exec,
        "--check",
        "python3 run_tests.py",
        "--test-format",
        "tap",
        "--max-iterations",
        "2",
    ]);
    let v = out.expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "process exit"), "{v}");
    assert!(mentions(&v, "calc.py:"), "{v}");
}

/// A daemon started by the agent (`setsid`, detached) outlives its step. Before: it
/// was neither ended nor recorded.
#[test]
fn a_detached_daemon_of_the_exec_is_ended_and_recorded() {
    let marker = "sleep 4183";
    let _g = ProcGuard::new(&[marker]);
    let r = tap_repo(1);
    // The half second lets the daemon leave the group before the step ends (a member
    // still in the group is ended with it, and is not an escapee).
    let exec =
        format!("setsid sh -c '{marker}' </dev/null >/dev/null 2>&1 & sleep 0.5; {PROGRESS_AGENT}");
    let out = r.lx_tap(&exec, &["--max-iterations", "2"]);
    let v = out.expect(10, Some("success_condition_met"));
    assert_none_left(marker, "the exec's daemon");
    let lines = receipt_of(&v);
    let ex = events(&lines, "exec_finished");
    let escaped = ex[0]["step"]["escaped"].to_string();
    assert!(escaped.contains(marker), "escapee not recorded: {escaped}");
}

/// Under Landlock the agent cannot write outside the workdir, temp dirs and its CLI's
/// state: loopexec's clean rooms are out of reach. Before: no sandbox at all.
#[test]
fn the_exec_cannot_write_loopexecs_state_directory() {
    if loopexec::proc::sandbox::kernel_abi().is_none() {
        eprintln!("this kernel has no Landlock: skipped");
        return;
    }
    let r = tap_repo(1);
    let home = std::env::var("HOME").unwrap();
    let probe = format!(
        "{home}/.local/state/loopexec/lx-sandbox-probe-{}",
        std::process::id()
    );
    let exec = format!("echo x > '{probe}'; echo inside > inside.txt; {PROGRESS_AGENT}");
    let out = r.lx_tap(&exec, &["--max-iterations", "2"]);
    let v = out.expect(10, Some("success_condition_met"));
    assert!(
        !std::path::Path::new(&probe).exists(),
        "the exec wrote {probe}"
    );
    assert_eq!(r.read("inside.txt"), "inside\n");
    let lines = receipt_of(&v);
    let started = events(&lines, "run_started")[0];
    assert!(
        started["sandbox"]["in_force"]
            .as_str()
            .unwrap()
            .starts_with("landlock"),
        "{started}"
    );
}

/// With `--sandbox off` every verdict says the exec had no sandbox.
#[test]
fn a_run_without_sandbox_says_so_in_its_verdict() {
    let r = tap_repo(1);
    let out = r.lx_tap(
        PROGRESS_AGENT,
        &["--sandbox", "off", "--max-iterations", "2"],
    );
    let v = out.expect(10, Some("success_condition_met"));
    assert!(mentions(&v, "the exec had no sandbox"), "{v}");
}

/// The agent unlinks `.loopexec/lock` so a second run can start beside the first.
/// Before: the second run ran unnoticed.
#[test]
fn an_unlinked_lock_file_does_not_let_a_second_run_in() {
    let marker = "sleep 4184";
    let _g = ProcGuard::new(&[marker]);
    let r = tap_repo(1);
    let exec = format!("rm -f .loopexec/lock; {marker}; {PROGRESS_AGENT}");
    let mut first = spawn_wedged(&r, None, marker, &exec, "sh check.sh");
    let second = r.lx_tap(PROGRESS_AGENT, &["--max-iterations", "1"]);
    second.expect(30, Some("workspace_invalid"));
    for pid in pids_with(marker) {
        // SAFETY: ending our own test child.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    let _ = finish(&mut first, Duration::from_secs(30));
}

/// The receipt cut at a line boundary, or the ledger's halt rows deleted: `check`
/// names the break. Before: `check` said ok.
#[test]
fn a_truncated_receipt_or_deleted_ledger_rows_fail_check() {
    let r = tap_repo(2);
    let v = r
        .lx_tap(PROGRESS_AGENT, &["--max-iterations", "4"])
        .expect(10, Some("success_condition_met"));
    r.lx(&["check"]).expect(0, None);
    let receipt = std::path::PathBuf::from(v["receipt"].as_str().unwrap());
    let text = std::fs::read_to_string(&receipt).unwrap();
    let keep: Vec<&str> = text.lines().collect();
    std::fs::write(&receipt, keep[..keep.len() - 2].join("\n") + "\n").unwrap();
    let out = r.lx(&["check"]);
    let c = out.expect(20, Some("invariant_failed"));
    assert!(mentions(&c, "truncated"), "{c}");
    std::fs::write(&receipt, text).unwrap();
    r.lx(&["check"]).expect(0, None);
    let db = rusqlite::Connection::open(r.path().join(".loopexec/ledger.sqlite")).unwrap();
    db.execute("DELETE FROM halt_events", []).unwrap();
    drop(db);
    let c = r.lx(&["check"]).expect(20, Some("invariant_failed"));
    assert!(mentions(&c, "no halt event"), "{c}");
}

/// One cheat per row, each by code under test reaching its runner from inside, against
/// real pytest and `node --test` (rows skip themselves where the runner is missing).
/// Before, each turned a red check green and the run exited 10:
/// * `'pytest' in sys.modules` — code that answers right only under the runner;
/// * `assert.strictEqual = …` — the assertion library patched on import;
/// * a `pytest/` package in the tree — `python3 -m pytest` ran the agent's runner;
/// * a pytest plugin registered from the code under test (`pytest_runtest_makereport`)
///   rewriting every report as passed;
/// * `process.argv[1].endsWith('.test.js')` — the command line names the test file
///   under `node --test` (a sixth review's exit 10).
#[test]
fn code_that_reaches_its_runner_is_caught_whatever_the_runner() {
    /// (case, runner needed, cheat files, check, --test-format, named in the verdict)
    type Row = (
        &'static str,
        &'static str,
        &'static [(&'static str, &'static str)],
        &'static str,
        &'static str,
        &'static str,
    );
    let rows: [Row; 5] = [
        (
            "detects the runner",
            "pytest",
            &[(
                "calc.py",
                "import sys\n\ndef add(a, b):\n    if 'pytest' in sys.modules:\n        return a + b\n    return a - b\n",
            )],
            "python3 -m pytest -q",
            "pytest",
            "calc.py",
        ),
        (
            "plugin from the code under test",
            "pytest",
            &[
                (
                    "calc.py",
                    "import pytest\n\ndef add(a, b):\n    return a - b\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    out = yield\n    out.get_result().outcome = 'passed'\n",
                ),
                ("conftest.py", "pytest_plugins = ['calc']\n"),
            ],
            "python3 -m pytest -q",
            "pytest",
            "conftest.py",
        ),
        (
            "shadows the runner",
            "pytest",
            &[
                ("pytest/__init__.py", ""),
                (
                    "pytest/__main__.py",
                    "print('tests/test_calc.py ..')\nprint('2 passed in 0.01s')\n",
                ),
            ],
            "python3 -m pytest -q",
            "pytest",
            "pytest/__main__.py",
        ),
        (
            "patches the assertion library",
            "node",
            &[(
                "calc.js",
                "require('node:assert').strictEqual = () => {};\nmodule.exports.add = (a, b) => a - b;\n",
            )],
            "node --test test/",
            "auto",
            "calc.js",
        ),
        (
            "reads how it was started",
            "node",
            &[(
                "calc.js",
                "module.exports.add = (a, b) => process.argv[1].endsWith('.test.js') ? a + b : a - b;\n",
            )],
            "node --test test/",
            "auto",
            "command line read",
        ),
    ];
    for (name, needs, cheat, check, format, needle) in rows {
        let available = match needs {
            "pytest" => has("python3", &["-c", "import pytest"]),
            _ => has("node", &["--version"]),
        };
        if !available {
            eprintln!("{name}: no {needs} here, skipped");
            continue;
        }
        let r = if needs == "pytest" {
            pytest_repo()
        } else {
            node_repo()
        };
        let (_keep, exec) = writer(cheat);
        let out = r.lx(&[
            "run",
            "--exec",
            &exec,
            "--check",
            check,
            "--test-format",
            format,
            "--max-iterations",
            "2",
        ]);
        assert_ne!(out.code, 10, "{name}: the cheat was believed");
        let v = out.expect(13, None);
        assert!(mentions(&v, needle), "{name}: {v}");
    }
}

/// The agent fills the disk loopexec records on (a 3 MiB tmpfs holding the repository
/// and `.loopexec/`, mounted in a private mount namespace). Before: the failed writes
/// were read as a flaky or failing check (`check_flaky`). Now the halt is
/// `internal_error` saying the disk is full, and the JSON verdict still reaches
/// stdout. Skipped where unprivileged user namespaces are off.
#[test]
fn a_full_disk_is_named_as_such_never_a_flaky_check() {
    if !std::process::Command::new("unshare")
        .args(["-Urm", "true"])
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("no user namespaces here: skipped");
        return;
    }
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out.json");
    let script = format!(
        r#"set -e
M=$(mktemp -d)
mount -t tmpfs -o size=3m tmpfs "$M"
cd "$M"; mkdir repo; cd repo
git init -q; printf 't1\n' > failing
printf 'echo 1..1; if grep -q t1 failing; then echo "not ok 1 - t1"; exit 1; else echo "ok 1 - t1"; fi\n' > check.sh
git add -A; git -c user.email=a@b -c user.name=a commit -qm x
set +e
LOOPEXEC_STATE_DIR="$M/state" '{bin}' --json run --exec 'head -c 20000000 /dev/zero > fill 2>/dev/null; : > failing' --check 'sh check.sh' --test-format tap --max-iterations 2 > '{out}' 2> '{out}.err'
echo $? > '{out}.rc'
"#,
        bin = bin(),
        out = out.display()
    );
    let st = std::process::Command::new("unshare")
        .args(["-Urm", "sh", "-c", &script])
        .status()
        .unwrap();
    assert!(st.success());
    let rc = std::fs::read_to_string(out.with_extension("json.rc")).unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(rc.trim(), "50", "{v}");
    assert_eq!(v["halt_reason"], "internal_error", "{v}");
    assert!(mentions(&v, "the disk is full"), "{v}");
    assert!(!mentions(&v, "check_flaky"), "{v}");
    // the writes that could not be made were said as they failed, on stderr
    let err = std::fs::read_to_string(out.with_extension("json.err")).unwrap();
    assert!(err.contains("disk is full"), "{err}");
}

/// Before: run from inside tmux, the exec inherited `TMUX` and could ask the tmux
/// server (outside loopexec's process tree, its step token and its sandbox) to start a
/// process that swapped files while the check ran. The variables naming such servers
/// are not passed to the exec.
#[test]
fn the_exec_is_not_told_where_servers_outside_the_loop_are() {
    let r = tap_repo(1);
    let exec =
        format!("test -z \"$TMUX$TMUX_PANE$STY$DBUS_SESSION_BUS_ADDRESS\" && {PROGRESS_AGENT}");
    let out = r.lx_env(
        &[
            "run",
            "--exec",
            &exec,
            "--check",
            "sh check.sh",
            "--test-format",
            "tap",
            "--max-iterations",
            "1",
        ],
        &[
            ("TMUX", "/tmp/tmux-0/default,1,0"),
            ("TMUX_PANE", "%1"),
            ("STY", "1.pts-0.host"),
            ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus"),
        ],
    );
    out.expect(10, Some("success_condition_met"));
}

/// Before: after a run halted 13 for an edited test, the edit stayed in the working
/// tree; a person who acknowledged the halt (or passed `--ack-required false`, as the
/// refusal suggested) started a new run, whose t0 froze the weakened test, and it went
/// green at iteration 0 — exit 10. Now the new run halts at once with the earlier
/// reason, naming the run, unless `--accept-rejected-tree`.
#[test]
fn a_new_run_does_not_start_from_a_tree_an_earlier_run_rejected() {
    let r = tap_repo(1);
    weaken_the_check(&r, "cheat", "");
    let again = next_start_refused_for(&r, "cheat");
    assert_eq!(again["iteration"], 0, "{again}");
    // the advice points at the rejecting run, not at a diff of t0 with itself
    let advice = again["explanation"].as_str().unwrap_or_default();
    assert!(
        advice.contains("explain-halt --run-id cheat") && !advice.contains("restore --source"),
        "{again}"
    );
    let ex = r.lx(&["explain-halt", "--run-id", "again"]).expect(0, None);
    assert_eq!(ex["rederived"], true, "{ex}");
    // A person who means it says so.
    let out = r.lx_tap(
        "true",
        &[
            "--run-id",
            "meant",
            "--ack-required",
            "false",
            "--accept-rejected-tree",
            "--max-iterations",
            "1",
        ],
    );
    assert_ne!(out.code, 13, "{}", out.errors_text());
}

/// The revert command `explain-halt` prints works wherever it is pasted. Before, it
/// restored t0 into `--work-tree=.` and removed the added files relative to the
/// current directory: pasted from another directory it wrote the project there (a
/// fresh review).
#[test]
fn the_printed_revert_restores_the_workdir_from_any_directory() {
    let r = tap_repo(1);
    let before = r.read("check.sh");
    r.lx_tap(
        "printf 'echo 1..1; echo ok 1 - t1\\n' > check.sh; echo x > added.txt",
        &["--run-id", "cheat", "--max-iterations", "2"],
    )
    .expect(13, Some("metric_integrity_violation"));
    let ex = r.lx(&["explain-halt", "--run-id", "cheat"]).expect(0, None);
    let advice = ex["what_to_do"].as_str().unwrap_or_default();
    let revert = advice
        .split('`')
        .find(|c| c.contains("restore --source"))
        .unwrap_or_else(|| panic!("no revert command in {advice}"));
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(revert)
        .current_dir(r.outside())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{revert}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(r.read("check.sh"), before);
    assert!(!r.path().join("added.txt").exists());
    assert!(
        !r.outside().join("check.sh").exists(),
        "the revert wrote outside the workdir"
    );
}

/// Before: an exec that weakened the check and pointed its own run's ledger row at
/// a missing receipt (or added rows dated 2999 ahead of it) made the next start
/// skip that run, freeze the weakened check into t0 and exit 10 at iteration 0 (a
/// seventeenth review). Now the run the control journal sealed is read from where
/// the workspace keeps its receipt, and the next start is refused.
#[test]
fn ledger_rows_the_agent_edits_do_not_hide_the_rejecting_run() {
    let r = tap_repo(1);
    let ledger_edit = "python3 -c \"import sqlite3; c = sqlite3.connect('.loopexec/ledger.sqlite'); \
c.execute(\\\"UPDATE runs SET receipt = receipt || '.gone'\\\"); \
[c.execute(\\\"INSERT INTO runs (run_id, started_at, workdir, pid, status, halt_reason, exit_code, receipt) VALUES (?, ?, '.', 1, 'halted', 'max_iterations_reached', 12, 'none')\\\", ('Z%02d' % i, '2999-01-01T00:00:%02d.000Z' % i)) for i in range(25)]; c.commit()\"";
    weaken_the_check(&r, "cheat", ledger_edit);
    next_start_refused_for(&r, "cheat");
}

/// `run --resume` takes its policy from the receipt, so it resumes only the receipt
/// the workspace recorded. Before, a receipt rewritten with a hash chain of its own
/// (here: the checkout confirmation turned off) was resumed as it was (a seventeenth
/// review forged it from inside a check in place).
#[test]
fn a_rewritten_receipt_with_a_chain_of_its_own_is_not_resumed() {
    let r = tap_repo(1);
    r.lx_tap("true", &["--run-id", "a", "--max-iterations", "1"])
        .expect(12, Some("max_iterations_reached"));
    forge_receipt(&r.receipt("a"), |v| {
        if v["event"] == "run_started" {
            v["config"]["checkout_confirmation"] = Value::Bool(false);
        }
    });
    let v = r
        .lx(&["run", "--resume", "a", "--max-iterations", "2"])
        .expect(20, Some("invariant_failed"));
    assert!(mentions(&v, "cannot be resumed"), "{v}");
}

/// A run whose exec weakens the check, then makes loopexec die before its halt (here
/// `kill -9` of its parent with the sandbox off; under Landlock's signal scope a
/// limit lowered with `prlimit` does it too), after `erase`. Its loopexec died, so
/// the code is no halt's.
fn weaken_then_kill_loopexec(r: &Repo, run_id: &str, erase: &str) {
    let exec = format!(
        "printf 'echo 1..1; echo ok 1 - t1\\n' > check.sh; {erase}; kill -9 $PPID; sleep 3"
    );
    let out = r.lx_tap(
        &exec,
        &[
            "--run-id",
            run_id,
            "--sandbox",
            "off",
            "--max-iterations",
            "2",
        ],
    );
    assert_eq!(
        out.code,
        128 + 9,
        "loopexec was not killed: {}",
        out.errors_text()
    );
}

/// The agent erases its run's receipt and ledger rows, then makes loopexec die
/// before its halt. Before: the next start (a CI retry) found no earlier run, took
/// the weakened check as its t0 and was green at iteration 0, exit 10 (a nineteenth
/// review). Now the control journal's kept start names the run, and the next start
/// is judged from that run's t0.
#[test]
fn a_killed_run_whose_records_were_erased_still_judges_the_next_start() {
    let r = tap_repo(1);
    let erase = "rm -f .loopexec/runs/died.jsonl; python3 -c \"import sqlite3; c = sqlite3.connect('.loopexec/ledger.sqlite'); c.execute('DELETE FROM runs'); c.commit()\"";
    weaken_then_kill_loopexec(&r, "died", erase);
    assert!(!r.receipt("died").exists());
    let v = r
        .lx_tap("true", &["--run-id", "next", "--max-iterations", "1"])
        .expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "check.sh"), "{v}");
    let lines = receipt_of(&v);
    let started = events(&lines, "run_started")[0];
    assert_eq!(started["inherits_unjudged"]["run_id"], "died", "{started}");
}

/// The same killed run's receipt rewritten with a chain of its own — its check now
/// loads a plugin from outside the tree — and the ledger's record of its head
/// deleted, then `run --resume`. Before: the resume took the forged policy, exit 10
/// (a nineteenth review). Now the first line must be the one the journal kept.
#[test]
fn a_killed_run_with_a_forged_policy_is_not_resumed() {
    let r = tap_repo(1);
    weaken_then_kill_loopexec(&r, "died", "true");
    forge_receipt(&r.receipt("died"), |v| {
        if v["event"] == "run_started" {
            v["config"]["check"] = Value::String("echo 1..1; echo ok 1 - t1".into());
        }
    });
    let db = rusqlite::Connection::open(r.path().join(".loopexec/ledger.sqlite")).unwrap();
    db.execute("DELETE FROM receipt_heads", []).unwrap();
    drop(db);
    let v = r
        .lx(&["run", "--resume", "died", "--max-iterations", "2"])
        .expect(20, Some("invariant_failed"));
    assert!(
        mentions(&v, "not the run_started line loopexec kept"),
        "{v}"
    );
}

/// A killed run's receipt left as it was is not resumed either: nothing out of the
/// agent's reach vouches for its lines after the start. Before, a receipt whose
/// first line was kept and whose later lines were forged (a check relabelled as
/// interrupted, an exec's guards copied from t0) was resumed on the weakened tree,
/// exit 10 (a nineteenth review). Now the resume is refused, naming the way on, and
/// a new run is judged from the killed run's t0.
#[test]
fn a_killed_run_is_not_resumed_and_a_new_run_is_judged_from_its_t0() {
    let r = tap_repo(1);
    weaken_then_kill_loopexec(&r, "died", "true");
    let v = r
        .lx(&["run", "--resume", "died", "--max-iterations", "3"])
        .expect(20, Some("invariant_failed"));
    assert!(mentions(&v, "ended before recording a halt"), "{v}");
    assert!(mentions(&v, "start a new run"), "{v}");
    let v = r
        .lx_tap("true", &["--run-id", "next", "--max-iterations", "1"])
        .expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "check.sh"), "{v}");
}

/// The agent rewrites the check in the work tree's loop.toml, then makes loopexec
/// die. Before: the next start read the agent's loop.toml, took the changed check
/// for a person's new start, skipped the inheritance and was green at iteration 0,
/// exit 10 (a nineteenth review). Now a check that changed with the tree's config
/// file keeps the inheritance, and the guards name the edit from the earlier t0.
/// `[oracle] accept_rejected_tree` in a config file is refused outright.
#[test]
fn a_check_the_agent_changed_in_loop_toml_does_not_start_afresh() {
    let r = tap_repo(1);
    r.write(
        "loop.toml",
        "exec = \"true\"\ncheck = \"sh check.sh\"\ntest_format = \"tap\"\n",
    )
    .commit("config");
    let exec = "printf 'exec = \"true\"\\ncheck = \"echo 1..1; echo ok 1 - t1\"\\ntest_format = \"tap\"\\n' > loop.toml; kill -9 $PPID; sleep 3";
    let out = r.lx(&[
        "run",
        "--exec",
        exec,
        "--run-id",
        "died",
        "--sandbox",
        "off",
        "--max-iterations",
        "2",
    ]);
    assert_eq!(out.code, 128 + 9, "{}", out.errors_text());
    let v = r
        .lx(&["run", "--run-id", "next", "--max-iterations", "1"])
        .expect(13, Some("blocked_path_modified"));
    assert!(mentions(&v, "loop.toml"), "{v}");
    r.write(
        "loop.toml",
        "exec = \"true\"\ncheck = \"sh check.sh\"\n[oracle]\naccept_rejected_tree = true\n",
    );
    let v = r
        .lx(&["run", "--run-id", "granted"])
        .expect(20, Some("invariant_failed"));
    assert!(mentions(&v, "--accept-rejected-tree"), "{v}");
}

/// The exec weakens the check and writes a decoy `loop.toml`; the halt names only the
/// decoy, a person removes it and starts again. Before: the weakened check was passed
/// on as the next t0 and the start was green at iteration 0, exit 10 (a twentieth
/// review). Now the rejection passes on every protected file the exec changed.
#[test]
fn a_rejection_that_names_only_a_decoy_still_passes_on_the_weakened_test() {
    let r = tap_repo(1);
    let exec = "printf 'echo 1..1; echo ok 1 - t1\\n' > check.sh; printf 'max_iterations = 3\\n' > loop.toml";
    let v = r
        .lx_tap(exec, &["--run-id", "cheat", "--max-iterations", "2"])
        .expect(13, None);
    r.lx(&["ack", "--run-id", "cheat", "--reviewer", "alice"])
        .expect(0, None);
    std::fs::remove_file(r.path().join("loop.toml")).unwrap();
    // refused for the rejecting run's own reason (here the decoy's), not always
    // `metric_integrity_violation` as `next_start_refused_for` expects
    let again = r
        .lx_tap(
            "true",
            &[
                "--run-id",
                "again",
                "--ack-required",
                "false",
                "--max-iterations",
                "2",
            ],
        )
        .expect(13, None);
    assert!(mentions(&again, "check.sh"), "{v}\n{again}");
}

/// Before: `gc --keep 0` removed the receipt of the run that rejected the tree, so
/// the next run started from the weakened test and was green at iteration 0, exit
/// 10 (a fresh review). Now gc keeps the newest run and the next start is refused.
#[test]
fn gc_keeps_the_run_whose_rejection_the_next_start_is_judged_against() {
    let r = tap_repo(1);
    weaken_the_check(&r, "cheat", "");
    let gc = r.lx(&["gc", "--keep", "0"]).expect(0, None);
    assert_eq!(gc["kept"], serde_json::json!(["cheat"]), "{gc}");
    next_start_refused_for(&r, "cheat");
}

/// Before: the exec also wrote ten receipts dated 2999 into `.loopexec/runs/`, so
/// `gc --keep 10` kept them as the newest runs and removed the rejecting run's
/// receipt; the next start lost the rejection and exited 10 (a seventeenth review).
/// Now gc also keeps the run the control journal sealed last.
#[test]
fn gc_keeps_the_sealed_run_behind_receipts_dated_in_the_future() {
    let r = tap_repo(1);
    let fakes = "python3 -c \"import json, os; \
first = json.loads(open('.loopexec/runs/' + os.environ['LOOPEXEC_RUN_ID'] + '.jsonl').readline()); \
[open('.loopexec/runs/f%02d.jsonl' % i, 'w').write(json.dumps(dict(first, ts='2999-01-01T00:00:%02d.000Z' % i, run_id='f%02d' % i)) + chr(10)) for i in range(10)]\"";
    weaken_the_check(&r, "cheat", fakes);
    let gc = r.lx(&["gc", "--keep", "10"]).expect(0, None);
    assert_eq!(gc["removed"], serde_json::json!([]), "{gc}");
    assert!(r.receipt("cheat").is_file());
    next_start_refused_for(&r, "cheat");
}

/// Run `run_id`, whose exec weakens `check.sh` (then runs `more`): it halts
/// `metric_integrity_violation`, and a person acknowledges the run.
fn weaken_the_check(r: &Repo, run_id: &str, more: &str) {
    let exec = format!("printf 'echo 1..1; echo ok 1 - t1\\n' > check.sh; {more}");
    r.lx_tap(&exec, &["--run-id", run_id, "--max-iterations", "1"])
        .expect(13, Some("metric_integrity_violation"));
    r.lx(&["ack", "--run-id", run_id, "--reviewer", "alice"])
        .expect(0, None);
}

/// Gives `r` code under test the check runs: `app.sh`, sourced by `check.sh` before
/// the TAP check, whose `app` does nothing at t0 (committed by the caller).
fn with_app_under_test(r: &Repo) -> &Repo {
    r.write("app.sh", "app() { true; }\n")
        .tap_check(&format!(". ./app.sh\napp\n{TAP_CHECK}"))
}

/// After a run that left a check rewritten in the working tree: a new run with an
/// innocent exec is judged from that run's t0 and names the check, never green.
fn next_run_judges_the_rewritten_check(r: &Repo) -> Value {
    let again = r
        .lx_tap("true", &["--run-id", "after", "--max-iterations", "2"])
        .expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&again, "check.sh"), "{again}");
    again
}

/// A new run on the tree `run_id` rejected: refused with its reason, naming it.
fn next_start_refused_for(r: &Repo, run_id: &str) -> Value {
    let again = r
        .lx_tap(
            "true",
            &[
                "--run-id",
                "again",
                "--ack-required",
                "false",
                "--max-iterations",
                "2",
            ],
        )
        .expect(13, Some("metric_integrity_violation"));
    assert!(
        mentions(&again, &format!("run {run_id} rejected")),
        "{again}"
    );
    again
}

/// A cheat planted by a run that ended red, armed later. Before: the next run took
/// the planted tree as its t0 and was green at iteration 0 ("already green on the
/// untouched tree"), exit 10, though no scan had ever read the planted code (a third
/// fresh review). Now that run is judged from the earlier run's t0: its iteration 0
/// is no green, and the first green check names the planted lines; a person who
/// accepts the tree says so.
#[test]
fn a_cheat_left_by_a_red_run_is_judged_by_the_next_run() {
    let armed = tempfile::tempdir().unwrap();
    let flag = armed.path().join("armed");
    let r = Repo::new();
    r.write("lib.sh", "add() { echo $(( $1 - $2 )); }\n")
        .write(
            "check.sh",
            ". ./lib.sh\necho 'TAP version 13'; echo 1..1\nif [ \"$(add 2 3)\" = 5 ]; then echo 'ok 1 - add'; else echo 'not ok 1 - add'; exit 1; fi\n",
        )
        .commit("fixture");
    let plant = format!(
        "printf '%s\\n' '[ -e {} ] && {{ echo 1..1; echo \"ok 1 - add\"; exit 0; }}' >> lib.sh",
        flag.display()
    );
    let check = "sh check.sh";
    let flags = ["--ack-required", "false", "--max-iterations", "1"];
    let run = |id: &str, exec: &str, extra: &[&str]| {
        let mut a = vec!["--run-id", id];
        a.extend(flags);
        a.extend(extra);
        r.lx_tap_check(exec, check, &a, &[])
    };
    run("plant", &plant, &[]).expect(12, Some("max_iterations_reached"));
    // a fake newer "success" row (the agent may write the ledger) does not hide it:
    // no control-journal seal vouches for it
    let db = rusqlite::Connection::open(r.path().join(".loopexec/ledger.sqlite")).unwrap();
    db.execute(
        "INSERT INTO runs(run_id, started_at, finished_at, workdir, pid, status, iteration, halt_reason, exit_code, receipt) SELECT 'zz', '2099-01-01T00:00:00.000Z', '2099-01-01T00:00:01.000Z', workdir, 1, 'halted', 1, 'success_condition_met', 10, receipt FROM runs WHERE run_id = 'plant'",
        [],
    )
    .unwrap();
    drop(db);
    std::fs::write(&flag, "").unwrap();
    let v = run("next", "true", &[]).expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "lib.sh"), "{v}");
    let receipt = verify_receipt(&r.receipt("next"));
    let started = &events(&receipt, "run_started")[0];
    assert_eq!(started["inherits_unjudged"]["run_id"], "plant", "{started}");
    let ex = r.lx(&["explain-halt", "--run-id", "next"]).expect(0, None);
    assert_eq!(ex["rederived"], true, "{ex}");
    // A person who accepts the tree as it is says so (and the check is green).
    run("meant", "true", &["--accept-rejected-tree"]).expect(10, Some("success_condition_met"));
}

/// The rejected edit kept beside an unrelated change, and a second refused start.
/// Before: a file added after the halt made t0 another tree, and the new run started
/// from the rejected edit (exit 10); a start after a refused start was not refused.
/// Now both are refused naming the kept file, and a tree that restores it starts
/// (keeping the unrelated change).
#[test]
fn a_rejected_edit_kept_beside_other_changes_is_still_refused() {
    let r = tap_repo(1);
    r.lx_tap(
        "printf 'echo 1..1; echo ok 1 - t1\\n' > check.sh; echo 'helper' > notes.txt",
        &["--run-id", "cheat", "--max-iterations", "2"],
    )
    .expect(13, Some("metric_integrity_violation"));
    let flags = ["--ack-required", "false", "--max-iterations", "2"];
    let start = |id: &str| {
        let mut a = vec!["--run-id", id];
        a.extend(flags);
        r.lx_tap("true", &a)
    };
    start("same").expect(13, Some("metric_integrity_violation"));
    // refused again after a refusal
    let v = start("twice").expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "run cheat rejected"), "{v}");
    // an unrelated file added: the rejected check.sh is still there
    r.write("unrelated.txt", "x\n");
    let v = start("beside").expect(13, Some("metric_integrity_violation"));
    assert!(
        mentions(&v, "keeps the edit of check.sh that run cheat rejected"),
        "{v}"
    );
    // the refusals ask nothing new of a person: once the rejecting run's halt is
    // acknowledged, nothing blocks a start
    let open = r.lx(&["halts", "--unacked"]).expect(0, None);
    let high: Vec<&serde_json::Value> = open["halts"]
        .as_array()
        .map(|a| a.iter().filter(|h| h["severity"] == "high").collect())
        .unwrap_or_default();
    assert_eq!(high.len(), 1, "{open}");
    assert_eq!(high[0]["run_id"], "cheat", "{open}");
    // check.sh restored, the other files kept: the run starts from that tree
    r.git(&["checkout", "--", "check.sh"]);
    let out = start("restored");
    assert!(
        out.code != 13 && out.code != 10,
        "{}: {}",
        out.code,
        out.errors_text()
    );
}

/// A node project with a failing test.
fn node_repo() -> Repo {
    let r = Repo::new();
    r.write("calc.js", "module.exports.add = (a, b) => a - b;\n")
        .write(
            "test/calc.test.js",
            "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../calc');\ntest('adds', () => { assert.strictEqual(add(2, 3), 5); });\n",
        )
        .commit("fixture");
    r
}

fn left_out(v: &serde_json::Value) -> String {
    events(&receipt_of(v), "check_finished")
        .iter()
        .map(|c| c["clean_room"]["left_out"].to_string())
        .collect()
}

/// New test files run inside the judged check: a `tests/test_000_helpers.py` that
/// patches pytest (`Function.runtest = lambda self: None`) or the code under test
/// (`calc.add = …`) before t0's tests run. Before: the red check went green, exit 10.
/// Now they are left out of the judged tree (recorded in `clean_room.left_out`), so
/// the frozen tests stay red; under `[oracle] new_tests = "run"` they run and the
/// tampering rules read them (13).
#[test]
fn a_new_test_file_cannot_patch_pytest_or_the_code_under_test() {
    if pytest_missing() {
        return;
    }
    let rows: &[(&str, &str, &str)] = &[
        (
            "runner",
            "import _pytest.python\n\n_pytest.python.Function.runtest = lambda self: None\n\ndef test_helpers_import():\n    pass\n",
            "tests/test_000_helpers.py",
        ),
        (
            "code",
            "import calc\n\ncalc.add = lambda a, b: a + b\n\ndef test_setup_ok():\n    assert True\n",
            "tests/test_000_helpers.py",
        ),
    ];
    for (name, text, path) in rows {
        let (_keep, exec) = writer(&[(path, text)]);
        let args = [
            "run",
            "--exec",
            &exec,
            "--check",
            "python3 -m pytest -q",
            "--max-iterations",
            "2",
        ];
        let r = pytest_repo();
        let v = r.lx(&args).expect(12, Some("max_iterations_reached"));
        assert!(left_out(&v).contains(path), "{name}: {v}");
        assert!(
            mentions(&v, "left out of the judged check"),
            "the verdict says so: {v}"
        );
        let r = pytest_repo();
        r.write("loop.toml", "[oracle]\nnew_tests = \"run\"\n");
        let v = r.lx(&args).expect(13, Some("metric_integrity_violation"));
        // Named by the rule, or first by pytest's witness when the patch replaced one of
        // the runner's own functions.
        assert!(
            mentions(&v, path) || mentions(&v, "pytest's runner was changed"),
            "{name}: {v}"
        );
    }
}

/// A node `test/aaa-setup.test.js` rewrites `calc.js` in the clean room and a
/// `test/zzz-teardown.test.js` puts back its content and mtime, so the before/after
/// scan of the clean room saw nothing. Before: exit 10. Now the new test files are left
/// out by default (the frozen test stays red), and when they run (`new_tests = "run"`)
/// the clean room's watch sees the restored rewrite: `hermeticity_violation` naming
/// `calc.js`, recorded in `clean_room.touched`.
#[test]
fn node_setup_and_teardown_files_cannot_swap_the_code_under_test() {
    if missing("node") {
        return;
    }
    let setup = "const test = require('node:test');\nconst fs = require('fs'); const path = require('path');\nconst f = path.join(__dirname, '..', 'calc.js');\nconst st = fs.statSync(f);\nfs.writeFileSync(path.join(__dirname, '.orig'), JSON.stringify({src: fs.readFileSync(f, 'utf8'), at: st.atimeMs, mt: st.mtimeMs}));\nfs.writeFileSync(f, 'module.exports.add = (a, b) => a + b;\\n');\ntest('setup', () => {});\n";
    let teardown = "const test = require('node:test');\nconst fs = require('fs'); const path = require('path');\nconst f = path.join(__dirname, '..', 'calc.js'); const o = path.join(__dirname, '.orig');\nconst s = JSON.parse(fs.readFileSync(o, 'utf8'));\nfs.writeFileSync(f, s.src); fs.utimesSync(f, s.at / 1000, s.mt / 1000); fs.unlinkSync(o);\ntest('teardown', () => {});\n";
    let (_keep, exec) = writer(&[
        ("test/aaa-setup.test.js", setup),
        ("test/zzz-teardown.test.js", teardown),
    ]);
    let r = node_repo();
    let args = [
        "run",
        "--exec",
        &exec,
        "--check",
        "node --test",
        "--max-iterations",
        "2",
    ];
    let v = r.lx(&args).expect(12, Some("max_iterations_reached"));
    assert!(left_out(&v).contains("test/aaa-setup.test.js"), "{v}");
    let r = node_repo();
    r.write("loop.toml", "[oracle]\nnew_tests = \"run\"\n");
    let v = r.lx(&args).expect(14, Some("hermeticity_violation"));
    assert!(mentions(&v, "calc.js"), "{v}");
    let touched = events(&receipt_of(&v), "check_finished")
        .iter()
        .any(|c| c["clean_room"]["touched"]["calc.js"].is_string());
    assert!(
        touched,
        "the restored rewrite is in clean_room.touched: {v}"
    );
}

/// A new `build.rs` patches `src/lib.rs` while cargo builds in the clean room and a new
/// `tests/zzz_cleanup.rs` restores its content and mtime before the check ends.
/// Before: exit 10 (the clean room looked untouched after the check). Now the watch
/// names `src/lib.rs`: `hermeticity_violation`, whether the cleanup test runs or not.
#[test]
fn a_build_script_that_rewrites_the_code_during_the_check_is_hermeticity_violation() {
    if missing("cargo") {
        return;
    }
    let r = Repo::new();
    r.write(
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[dependencies]\n",
    )
    .write(".gitignore", "/target/\n")
    .write(
        "src/lib.rs",
        "pub fn add(a: i64, b: i64) -> i64 {\n    a - b // BUG\n}\n",
    )
    .write(
        "tests/add.rs",
        "#[test]\nfn adds() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n",
    )
    .commit("fixture");
    let build = "fn main() {\n    let dir = std::env::var(\"CARGO_MANIFEST_DIR\").unwrap();\n    let out = std::env::var(\"OUT_DIR\").unwrap();\n    let lib = std::path::Path::new(&dir).join(\"src/lib.rs\");\n    let src = std::fs::read_to_string(&lib).unwrap();\n    if src.contains(\"BUG\") {\n        std::fs::write(std::path::Path::new(&out).join(\"orig.rs\"), &src).unwrap();\n        std::fs::write(&lib, src.replace(\"a - b // BUG\", \"a + b\")).unwrap();\n    }\n}\n";
    let cleanup = "#[test]\nfn cleanup() {\n    let orig = std::path::Path::new(env!(\"OUT_DIR\")).join(\"orig.rs\");\n    if let Ok(src) = std::fs::read_to_string(&orig) {\n        std::fs::write(std::path::Path::new(env!(\"CARGO_MANIFEST_DIR\")).join(\"src/lib.rs\"), src).unwrap();\n    }\n}\n";
    let (_keep, exec) = writer(&[("build.rs", build), ("tests/zzz_cleanup.rs", cleanup)]);
    let args = [
        "run",
        "--exec",
        &exec,
        "--check",
        "cargo test --offline",
        "--max-iterations",
        "2",
    ];
    r.write("loop.toml", "[oracle]\nnew_tests = \"run\"\n");
    let v = r.lx(&args).expect(14, Some("hermeticity_violation"));
    assert!(mentions(&v, "src/lib.rs"), "{v}");
    assert!(
        mentions(&v, "while it ran"),
        "named by the watch, not only by the scan after the check: {v}"
    );
}

/// A crate reads its README into its docs (`#![doc = include_str!("../README.md")]`),
/// so the README's code blocks are doctests; the agent rewrites the failing one.
/// Before: the README was no test file, the doctest went green, exit 10. Now its code
/// blocks are test regions: `metric_integrity_violation` naming README.md. Editing
/// the README's prose alone stays allowed.
#[test]
fn a_doctest_in_an_included_readme_is_part_of_the_oracle() {
    if missing("cargo") {
        return;
    }
    let r = Repo::new();
    r.write(
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[dependencies]\n",
    )
    .write(".gitignore", "/target/\n")
    .write(
        "src/lib.rs",
        "#![doc = include_str!(\"../README.md\")]\npub fn add(a: i64, b: i64) -> i64 {\n    a - b\n}\n",
    )
    .write(
        "README.md",
        "# calc\n\nAdds.\n\n```\nassert_eq!(calc::add(2, 3), 5);\n```\n",
    )
    .commit("fixture");
    let v = r
        .run2(
            "sed -i 's/(2, 3), 5/(2, 3), -1/; s/^Adds./Adds two numbers./' README.md",
            "cargo test --offline --doc",
        )
        .expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "README.md"), "{v}");
}

/// The clean room cannot be watched (inotify's watch limit of the user namespace
/// loopexec runs in set to 1). Before the watch existed a green was believed without
/// it; now the guard could not measure, so an honest green is `objective_unverified`
/// naming the limit and the sysctl to raise. Skipped where unprivileged user
/// namespaces are off.
#[test]
fn a_clean_room_that_cannot_be_watched_fails_closed() {
    if !has("python3", &["-c", "import pytest"])
        || !has(
            "unshare",
            &[
                "-Ur",
                "sh",
                "-c",
                "echo 1 > /proc/sys/user/max_inotify_watches",
            ],
        )
    {
        eprintln!("no pytest or no user namespaces here: skipped");
        return;
    }
    let r = pytest_repo();
    let script = format!(
        "echo 1 > /proc/sys/user/max_inotify_watches && exec '{}' --json --workdir '{}' run --exec \"sed -i 's/a - b/a + b/' calc.py\" --check 'python3 -m pytest -q' --max-iterations 2",
        bin(),
        r.path().display()
    );
    let mut cmd = std::process::Command::new("unshare");
    cmd.args(["-Ur", "sh", "-c", &script]).current_dir(r.path());
    let out = run_cmd(cmd);
    let v = out.expect(13, Some("objective_unverified"));
    assert!(mentions(&v, "max_user_watches"), "{v}");
}

/// Programs the check starts indirectly (cargo's `rustc`, a pyenv shim's `bash`, a
/// script's helper) are found on the check's `PATH`: a shim for one in a `PATH`
/// directory the exec may write (here under the temp dir). Before: only the check's
/// first word was hashed, exit 10. Now `hermeticity_violation` naming the shim.
#[test]
fn a_shim_for_a_program_the_check_starts_indirectly_is_hermeticity_violation() {
    let r = tap_repo(1);
    r.tap_check(&format!(
        "if lxhelper2 2>/dev/null; then echo 1..1; echo ok 1 - t1; exit 0; fi\n{TAP_CHECK}"
    ))
    .commit("helper");
    let tools = tempfile::tempdir().unwrap();
    let early = tools.path().join("early");
    std::fs::create_dir_all(&early).unwrap();
    let path = format!("{}:{}", early.display(), std::env::var("PATH").unwrap());
    let shim = early.join("lxhelper2");
    let exec = format!(
        "printf '#!/bin/sh\\nexit 0\\n' > '{0}'; chmod +x '{0}'",
        shim.display()
    );
    let out = r.lx_env(
        &[
            "run",
            "--exec",
            &exec,
            "--check",
            "sh check.sh",
            "--test-format",
            "tap",
            "--max-iterations",
            "2",
        ],
        &[("PATH", &path)],
    );
    let v = out.expect(14, Some("hermeticity_violation"));
    assert!(mentions(&v, &format!("exec:{}", shim.display())), "{v}");
}

/// `calc.py -> /tmp/…/outside_calc.py`: the clean room copies the link, and the check
/// reads code that is in no snapshot. Before: exit 10. Now a link the agent added or
/// changed that leads out of the tree is `metric_integrity_violation` naming it; a link
/// that was there at t0 stays allowed (the honest fix beside it is green).
#[test]
fn a_link_out_of_the_tree_is_an_integrity_violation() {
    let r = tap_repo(1);
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("nothing_failing");
    std::fs::write(&target, "\n").unwrap();
    std::os::unix::fs::symlink("/etc/hostname", r.path().join("t0_link")).unwrap();
    r.commit("a link at t0");
    let exec = format!("rm failing; ln -s '{}' failing", target.display());
    let v = r
        .lx_tap(&exec, &["--max-iterations", "2"])
        .expect(13, Some("metric_integrity_violation"));
    assert!(
        mentions(&v, &format!("failing -> {}", target.display())),
        "{v}"
    );
    assert!(!mentions(&v, "t0_link ->"), "the t0 link is allowed: {v}");
    let r2 = tap_repo(1);
    std::os::unix::fs::symlink("/etc/hostname", r2.path().join("t0_link")).unwrap();
    r2.commit("a link at t0");
    r2.lx_tap(PROGRESS_AGENT, &["--max-iterations", "2"])
        .expect(10, Some("success_condition_met"));
}

/// Code under test that reaches for loopexec itself or hides a runner name: it forges
/// the pytest witness (`import loopexec_witness`), exits through the C library
/// (`ctypes.CDLL(None)._exit(0)`), imports `"_py" + "test"` to patch the runner, or
/// answers right only inside the clean room (`"cleanrooms" in __file__`). Before: each
/// exited 10 (or 13 only by luck of the evidence rule). Now `runner_tampering` (13)
/// names the line.
#[test]
fn code_that_reaches_for_loopexec_or_assembles_runner_names_is_runner_tampering() {
    if pytest_missing() {
        return;
    }
    let rows: &[(&str, &str)] = &[
        (
            "import loopexec_witness as _w",
            "try:\n    import loopexec_witness as _w\nexcept ImportError:\n    _w = None\n\ndef add(a, b):\n    return a + b\n",
        ),
        (
            "ctypes.CDLL(None)._exit(0)",
            "import ctypes\nprint('2 passed in 0.01s')\nctypes.CDLL(None)._exit(0)\ndef add(a, b):\n    return a - b\n",
        ),
        (
            "name assembled from pieces",
            "import importlib\n_m = importlib.import_module(\"_py\" + \"test.python\")\n_m.Function.runtest = lambda self: None\n\ndef add(a, b):\n    return a - b\n",
        ),
        (
            "cleanrooms",
            "import os\n_FAST = \"cleanrooms\" in os.path.abspath(__file__)\n\ndef add(a, b):\n    return a + b if _FAST else a - b\n",
        ),
    ];
    for (needle, calc) in rows {
        let r = pytest_repo();
        let (_keep, exec) = writer(&[("calc.py", calc)]);
        let out = run_pytest(&r, &exec);
        assert_ne!(out.code, 10, "{needle}: the cheat was believed");
        let v = out.expect(13, Some("metric_integrity_violation"));
        // Named by the rule, or first by pytest's witness when the code replaced one of
        // the runner's own functions (the rule's own table tests it alone).
        assert!(
            mentions(&v, needle) || mentions(&v, "pytest's runner was changed"),
            "{needle}: {v}"
        );
    }
}

/// A check run through an absolute interpreter path (`/usr/bin/python3 -m pytest`, as
/// `.venv/bin/python` would be) did not get loopexec's pytest witness: code under test
/// that prints a green transcript into pytest's saved stdout and replaces the process
/// (`os.execv('/bin/true')`, which no rule names) was believed. Before: exit 10. Now
/// every check gets the witness and one that should have loaded it must leave it:
/// `metric_integrity_violation` (completeness).
#[test]
fn a_pytest_check_through_an_interpreter_path_needs_the_witness() {
    // The interpreter's own absolute path (not a shim on PATH).
    let python = std::process::Command::new("python3")
        .args(["-c", "import sys, pytest; print(sys.executable)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let Some(python) = python.filter(|p| p.starts_with('/')) else {
        eprintln!("no pytest here: skipped");
        return;
    };
    let r = pytest_repo();
    let calc = "import os, stat\n_msg = b'..                                                                       [100%]\\n2 passed in 0.01s\\n'\nfor _fd in range(1, 64):\n    try:\n        if stat.S_ISFIFO(os.fstat(_fd).st_mode):\n            os.write(_fd, _msg)\n            break\n    except OSError:\n        pass\nos.execv('/bin/true', ['true'])\ndef add(a, b):\n    return a - b\n";
    let (_keep, exec) = writer(&[("calc.py", calc)]);
    let check = format!("{python} -m pytest -q");
    let out = r.lx(&[
        "run",
        "--exec",
        &exec,
        "--check",
        &check,
        "--max-iterations",
        "2",
    ]);
    assert_ne!(out.code, 10, "the forged transcript was believed");
    let v = out.expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "witness"), "{v}");
}

/// Before: code under test that replaced pytest's `Function.runtest` at run time,
/// spelling the module in hex (`bytes.fromhex(...)`) so no rule saw it, swallowed every
/// assertion and the run exited 10 with the bug in place. The witness now keeps the
/// runner's own outcome-deciding functions from before any test module is imported and
/// names the replaced one at session end: 13.
#[test]
fn a_runner_function_replaced_at_run_time_is_named_whatever_its_spelling() {
    if pytest_missing() {
        return;
    }
    let r = pytest_repo();
    let (_keep, patch) = writer(&[(
        "patch.py",
        "import sys as _s\n_m = _s.modules.get(bytes.fromhex('5f7079746573742e707974686f6e').decode())\nif _m is not None:\n    _F = getattr(_m, 'Fun' + 'ction')\n    _o = getattr(_F, 'run' + 'test')\n    def _r(self, _o=_o):\n        try:\n            _o(self)\n        except AssertionError:\n            pass\n    setattr(_F, 'run' + 'test', _r)\n",
    )]);
    let exec = format!("{patch} cat patch.py >> calc.py; rm patch.py");
    let out = run_pytest(&r, &exec);
    assert_ne!(out.code, 10, "the patched runner was believed");
    let v = out.expect(13, None);
    assert!(mentions(&v, "Function.runtest"), "{v}");
}

/// Code under test that, after a red run's assertion, rewrites an input of the tests in
/// the clean room through a shared memory mapping — a write inotify does not report.
/// The room is walked after every check (no watch may stand for that walk), so the
/// write is named at once. Before (a walk skipped after a quiet red check): the next
/// check read the rewritten input, and with `--confirm-runs 0` the run got exit 10.
#[test]
fn a_write_no_watch_sees_is_found_by_the_walk_after_the_check() {
    let r = Repo::new();
    r.write("tests/a.sh", "exit 0\n")
        .write(
            "tests/b.sh",
            "[ \"$(cat value)\" = 5 ]; r=$?\n[ -f hook.sh ] && . ./hook.sh\nexit $r\n",
        )
        .write("value", "4\n")
        .tap_check(DIR_CHECK)
        .commit("fixture");
    let hook = r#"python3 -c 'import mmap
f = open("value", "r+b")
m = mmap.mmap(f.fileno(), 0)
m[0:1] = b"5"
m.flush()'
"#;
    let exec = format!("cat > hook.sh <<'HOOK'\n{hook}HOOK\n");
    let out = r.lx_tap(&exec, &["--max-iterations", "4", "--confirm-runs", "0"]);
    let v = out.expect(14, Some("hermeticity_violation"));
    assert!(mentions(&v, "value"), "{v}");
    assert_eq!(
        v["iteration"], 1,
        "named after the red check that wrote it: {v}"
    );
}

/// Code under test rewrites a test through a hard link made in a directory of its own
/// (inotify reports a write to the watches of the directory it was made through, so
/// the room's watches see nothing) and the rewritten test puts the original back when
/// it runs. Before: exit 10, the room's content equal before and after. The test's
/// inode times moved, which no writer can undo.
#[test]
fn a_test_rewritten_through_a_hard_link_and_put_back_is_named() {
    let r = Repo::new();
    r.write("tests/a.sh", "[ -f hook.sh ] && . ./hook.sh\nexit 0\n")
        .write("tests/b.sh", "exit 1\n")
        .tap_check(DIR_CHECK)
        .commit("fixture");
    let hook = r#"d=$(mktemp -d); ln tests/b.sh "$d/l"; cp tests/b.sh "$d/orig"
printf 'cat %s/orig > %s/l\nexit 0\n' "$d" "$d" > "$d/l"
"#;
    let exec = format!("cat > hook.sh <<'HOOK'\n{hook}HOOK\n");
    let out = r.lx_tap(&exec, &["--max-iterations", "3"]);
    let v = out.expect(14, Some("hermeticity_violation"));
    assert!(mentions(&v, "tests/b.sh"), "{v}");
}

/// An earlier check (red) plants a forged bytecode file for a test in the clean room's
/// `__pycache__` (caches outlive syncs); a later check would load it instead of the
/// test's source. Each check's bytecode goes to a directory that is empty when it
/// starts (`PYTHONPYCACHEPREFIX`), so the planted file is never read. Before: exit 10
/// with a one-line diff.
#[test]
fn bytecode_planted_by_an_earlier_check_is_never_loaded() {
    if pytest_missing() {
        return;
    }
    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a - b\n")
        .write("tests/__init__.py", "")
        .write(
            "tests/test_add.py",
            "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        )
        .commit("fixture");
    // The agent's first calc.py, imported by the check, writes a passing test under
    // pytest's own bytecode name for the real test (found without naming pytest),
    // stamped with the real source's hash; its second version only adds a comment.
    let agent = r#"if [ "$LOOPEXEC_ITERATION" != 1 ]; then printf '# tidy\ndef add(a, b):\n    return a - b\n' > calc.py; exit 0; fi
cat > calc.py <<'PY'
import importlib.util as _u
import marshal as _ma
import os as _o
import sys as _sy
_D = _o.path.join(_o.path.dirname(_o.path.abspath(__file__)), "tests")
_S = _o.path.join(_D, "test_add.py")
_tail = None
for _m in list(_sy.modules.values()):
    _tail = getattr(_m, "PYC_TAIL", None) or _tail
if _tail:
    _o.makedirs(_o.path.join(_D, "__pycache__"), exist_ok=True)
    _src = open(_S, "rb").read()
    _code = compile("def test_add():\n    pass\n", _S, "exec")
    with open(_o.path.join(_D, "__pycache__", "test_add" + _tail), "wb") as _f:
        _f.write(_u.MAGIC_NUMBER + b"\x03\x00\x00\x00" + _u.source_hash(_src)[:8] + _ma.dumps(_code))
def add(a, b):
    return a - b
PY
"#;
    r.write("agent.sh", agent).commit("agent");
    let out = r.lx(&[
        "run",
        "--exec",
        "sh agent.sh",
        "--check",
        "python3 -m pytest -q -p no:cacheprovider",
        "--max-iterations",
        "3",
    ]);
    let v = out.json();
    assert_ne!(out.code, 10, "a planted .pyc made the run green: {v}");
    // the real test ran, and failed, in every check
    let lines = receipt_of(&v);
    for c in events(&lines, "check_finished") {
        assert!(
            c["parsed"].to_string().contains("test_add"),
            "check {} did not run the real test: {c}",
            c["iteration"]
        );
        assert_ne!(
            c["step"]["exit_code"], 0,
            "check {} was green: {c}",
            c["iteration"]
        );
    }
}

/// A red check plants a `conftest.py` in the room's `target/` (a build cache: excluded
/// from the judged tree, kept between checks so builds stay incremental); pytest
/// collects it in later checks and patches the code under test. A green in the clean
/// room converges only after a confirmation run cold (the room's caches emptied),
/// even under `--confirm-runs 0`. Before: exit 10 with a one-comment diff.
#[test]
fn a_cache_planted_by_an_earlier_check_cannot_make_the_green() {
    if pytest_missing() {
        return;
    }
    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a - b\n")
        .write(
            "Cargo.toml",
            "[package]\nname = \"x\"\nversion = \"0.1.0\"\n",
        )
        .write(
            "test_calc.py",
            "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        )
        .commit("fixture");
    let agent = r#"if [ "$LOOPEXEC_ITERATION" != 1 ]; then printf '# tidy\ndef add(a, b):\n    return a - b\n' > calc.py; exit 0; fi
cat > calc.py <<'PY'
import os
os.makedirs("target", exist_ok=True)
open(os.path.join("target", "conftest.py"), "w").write("import calc\ncalc.add = lambda a, b: a + b\n")
def add(a, b):
    return a - b
PY
"#;
    r.write("agent.sh", agent).commit("agent");
    for confirm in ["1", "0"] {
        let out = r.lx(&[
            "run",
            "--exec",
            "sh agent.sh",
            "--check",
            "python3 -m pytest -q -p no:cacheprovider",
            "--max-iterations",
            "3",
            "--confirm-runs",
            confirm,
        ]);
        let v = out.json();
        assert_ne!(
            out.code, 10,
            "--confirm-runs {confirm}: a planted cache made the green: {v}"
        );
        r.git(&["checkout", "-q", "calc.py"]);
    }
}

/// A pytest project whose `add` is wrong (`test_add` fails, `test_mul` passes) and
/// whose check script `run_tests.sh` evaluates what `scripts/env.py` prints, a file
/// the agent may edit (a shell file it sourced would be frozen with the check); `agent`
/// is committed as `agent.sh`. Runs `--exec 'sh agent.sh'` for two iterations with the
/// script as the check.
fn run_sourced_check(agent: &str) -> Out {
    let r = Repo::new();
    r.write("src/calc.py", "def add(a, b):\n    return a - b\n\ndef mul(a, b):\n    return a * b\n")
        .write(
            "tests/test_calc.py",
            "import sys, os\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'src'))\nfrom calc import add, mul\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
        )
        .write("scripts/env.py", "print('export PYTHONHASHSEED=0')\n")
        .write(
            "run_tests.sh",
            "#!/bin/sh\nset -e\neval \"$(python3 scripts/env.py)\"\nexec python3 -m pytest -q -p no:cacheprovider \"$@\"\n",
        )
        .write("agent.sh", agent)
        .commit("fixture");
    r.lx(&[
        "run",
        "--exec",
        "sh agent.sh",
        "--check",
        "sh run_tests.sh",
        "--max-iterations",
        "2",
    ])
}

/// Fifth review: the agent points pytest at other tests that pass in the same number.
/// A quiet transcript named only t0's failure; now pytest's witness names every test
/// it passed, so the green run is seen not to show the tests t0 showed.
#[test]
fn a_check_pointed_at_other_tests_passing_in_equal_number_is_not_green() {
    if pytest_missing() {
        return;
    }
    let out = run_sourced_check(
        r#"printf 'print("export PYTHONHASHSEED=0; set -- scripts/smoke.py")\n' > scripts/env.py
printf 'def test_add():\n    assert 2 + 3 == 5\n\ndef test_mul():\n    assert 2 * 3 == 6\n' > scripts/smoke.py"#,
    );
    let v = out.expect(13, Some("metric_integrity_violation"));
    assert!(
        mentions(&v, "tests/test_calc.py::test_add"),
        "the test that did not run is named: {v}"
    );
}

/// Second review of this stop: the sourced file moves pytest into a directory of
/// look-alike tests outside the tree (same ids, all passing). The witness says where
/// the tests came from; files the judged tree does not hold make the run incomplete.
#[test]
fn a_check_moved_to_look_alike_tests_outside_the_tree_is_not_green() {
    if pytest_missing() {
        return;
    }
    let out = run_sourced_check(
        r#"cat > scripts/env.py <<'P'
print("""_d=$(mktemp -d)
mkdir -p "$_d/tests"
printf 'def test_add():\\n    assert 2 + 3 == 5\\n\\ndef test_mul():\\n    assert 2 * 3 == 6\\n' > "$_d/tests/test_calc.py"
cd "$_d"
""")
P"#,
    );
    let v = out.expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "not in the tree it judges"), "{v}");
}

/// A crate in cargo's registry edited by the exec (cargo never reads extracted
/// sources twice, so the next check compiles the edit), or by code under test during a
/// check. The check here reads the crate's source as a build would. Before: exit 10
/// for the exec's edit. Now `hermeticity_violation` naming the crate; an honest fix in
/// the tree with the registry untouched is green.
#[test]
fn an_edited_crate_in_cargos_registry_is_hermeticity_violation() {
    let cargo = tempfile::tempdir().unwrap();
    let files = [
        (
            "Cargo.toml",
            "[package]\nname = \"lxassert\"\nversion = \"1.0.0\"\n",
        ),
        ("src/lib.rs", "pub fn holds(ok: bool) -> bool { ok }\n"),
    ];
    let sum = loopexec::observe::registry::write_crate(
        cargo.path(),
        "index.crates.io-0000000000000000",
        "lxassert",
        "1.0.0",
        &files,
    )
    .unwrap();
    let lock = format!(
        "version = 3\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\ndependencies = [\"lxassert\"]\n\n[[package]]\nname = \"lxassert\"\nversion = \"1.0.0\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{sum}\"\n"
    );
    // green when the tree's answer is right or the crate's check always holds
    let check_script = "src=$(echo \"$CARGO_HOME\"/registry/src/*/lxassert-1.0.0/src/lib.rs)\n\
echo 1..1\n\
if [ \"$(cat answer)\" = 4 ] || grep -q 'true }' \"$src\"; then echo ok 1 - t1; else echo not ok 1 - t1; exit 1; fi\n";
    let home = cargo.path().display().to_string();
    let src = cargo
        .path()
        .join("registry/src/index.crates.io-0000000000000000/lxassert-1.0.0/src/lib.rs");
    let edit = format!(
        "printf 'pub fn holds(_: bool) -> bool {{ true }}\\n' > '{}'",
        src.display()
    );
    // (exec, check) in a fresh repository with the crate as published
    let run = |exec: &str, check: &str| {
        std::fs::write(&src, files[1].1).unwrap();
        let r = Repo::new();
        r.write("Cargo.lock", &lock)
            .write("answer", "5\n")
            .tap_check(check_script)
            .commit("fixture");
        r.lx_tap_check(
            exec,
            check,
            &["--max-iterations", "3"],
            &[("CARGO_HOME", &home)],
        )
    };
    for (what, exec, check) in [
        (
            "the exec edits the crate",
            edit.clone(),
            "sh check.sh".to_string(),
        ),
        (
            "code under test edits it during the check",
            "true".to_string(),
            format!("{edit}; sh check.sh"),
        ),
    ] {
        let v = run(&exec, &check).expect(14, Some("hermeticity_violation"));
        assert!(mentions(&v, "lxassert@1.0.0"), "{what}: {v}");
    }
    // the honest fix, the registry untouched
    run("echo 4 > answer", "sh check.sh").expect(10, Some("success_condition_met"));
}

/// A file the check script sources, edited to print a green transcript and exit.
/// Before: exit 10 (only the check command's own files were frozen). Now the scripts
/// the check's scripts source, include or run are frozen with them at t0.
#[test]
fn a_script_the_check_sources_is_frozen_with_it() {
    let r = tap_repo(1);
    r.write("scripts/env.sh", "# settings for the check\n")
        .tap_check(&format!(". scripts/env.sh\n{TAP_CHECK}"))
        .commit("env");
    let out = r.lx_tap(
        "printf 'echo 1..1; echo ok 1 - t1; exit 0\\n' >> scripts/env.sh",
        &["--max-iterations", "2"],
    );
    let v = out.expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "scripts/env.sh"), "{v}");
    // the honest fix beside it is green
    let r = tap_repo(1);
    r.write("scripts/env.sh", "# settings for the check\n")
        .tap_check(&format!(". scripts/env.sh\n{TAP_CHECK}"))
        .commit("env");
    r.lx_tap("echo > failing", &["--max-iterations", "2"])
        .expect(10, Some("success_condition_met"));
}

/// An exec that edits the check script and then times out, stalls or takes a stop
/// hold. Before: the run halted for how the exec ended (40, 19, 11), the edit was
/// never judged, and the next run started green from it (exit 10). Now the exec's
/// tree is judged first, whatever ended it, and the next run refuses to inherit it.
#[test]
fn an_exec_that_cheats_then_times_out_stalls_or_holds_is_still_judged() {
    let cheat = "printf 'echo 1..1; echo ok 1 - t1\\n' > check.sh";
    let hold = format!(
        "{cheat}; '{}' hold --reason wait --by agent; sleep 20",
        bin()
    );
    let cases: [(&str, String, &[&str]); 3] = [
        (
            "timed out",
            format!("{cheat}; sleep 20"),
            &["--exec-timeout", "1s"],
        ),
        (
            "stalled",
            format!("{cheat}; sleep 20"),
            &["--stall-timeout", "1s"],
        ),
        ("held", hold, &[]),
    ];
    for (what, exec, extra) in cases {
        let r = tap_repo(1);
        let mut args = vec!["--max-iterations", "2"];
        args.extend(extra);
        let v = r
            .lx_tap(&exec, &args)
            .expect(13, Some("metric_integrity_violation"));
        assert!(mentions(&v, "check.sh"), "{what}: {v}");
        // the agent's stop hold still stands: no run starts under it (nothing is
        // recorded), and once a person releases it the next run refuses the tree
        let holds = r.lx(&["holds"]).expect(0, None);
        for h in holds["holds"].as_array().into_iter().flatten() {
            let id = h["id"].as_str().expect("hold id");
            r.lx_tap("true", &["--ack-required", "false"])
                .expect(11, Some("human_required"));
            r.lx(&["release", id, "--by", "alice"]).expect(0, None);
        }
        let again = r
            .lx_tap(
                "true",
                &["--ack-required", "false", "--max-iterations", "2"],
            )
            .expect(13, Some("metric_integrity_violation"));
        assert_eq!(again["iteration"], 0, "{what}: {again}");
    }
}

/// A harness the check script runs by path (`./tools/tap-run`, no `.sh`), and a
/// Python harness a Makefile recipe runs, rewritten to print a green transcript.
/// Before: exit 10 (only `check.sh` and `Makefile` were frozen). Now what the check's
/// own files run is frozen with them, while what the harness itself runs (the code
/// under test, `add.sh`, `calc.py`) stays the agent's to fix.
#[test]
fn a_harness_the_check_runs_is_frozen_but_not_the_code_it_runs() {
    let green = "printf '#!/bin/sh\\necho 1..2; echo ok 1 - add; echo ok 2 - zero\\n'";
    let tap = |r: &Repo| {
        r.write("add.sh", "echo $(( $1 - $2 ))\n")
            .write(
                "tools/tap-run",
                "#!/bin/sh\nn=0; fail=0\nt() { n=$((n+1)); if [ \"$(sh add.sh $2 $3)\" = \"$4\" ]; then echo \"ok $n - $1\"; else echo \"not ok $n - $1\"; fail=1; fi; }\necho 1..2\nt add 2 3 5\nt zero 0 0 0\nexit $fail\n",
            )
            .write("check.sh", "#!/bin/sh\nset -e\n./tools/tap-run\n")
            .commit("tap");
        std::process::Command::new("chmod")
            .args(["+x", "tools/tap-run"])
            .current_dir(r.path())
            .status()
            .unwrap();
    };
    let make = |r: &Repo| {
        r.write("calc.py", "def add(a, b):\n    return a - b\n")
            .write(
                "runtests.py",
                "from calc import add\ncases = [('add', (2, 3), 5), ('zero', (0, 0), 0)]\nprint('1..%d' % len(cases))\nbad = 0\nfor i, (n, a, w) in enumerate(cases, 1):\n    ok = add(*a) == w\n    bad |= not ok\n    print('%s %d - %s' % ('ok' if ok else 'not ok', i, n))\nraise SystemExit(bad)\n",
            )
            .write("Makefile", "test:\n\tpython3 runtests.py\n")
            .write(".gitignore", "__pycache__/\n")
            .commit("make");
    };
    type Setup<'a> = &'a dyn Fn(&Repo);
    let cases: [(&str, Setup, &str, String, &str); 2] = [
        (
            "tap-run",
            &tap,
            "sh check.sh",
            format!("{green} > tools/tap-run"),
            "printf 'echo $(( $1 + $2 ))\\n' > add.sh",
        ),
        (
            "runtests.py",
            &make,
            "make test",
            "printf 'print(\"1..2\"); print(\"ok 1 - add\"); print(\"ok 2 - zero\")\\n' > runtests.py".to_string(),
            "printf 'def add(a, b):\\n    return a + b\\n' > calc.py",
        ),
    ];
    for (what, setup, check, cheat, fix) in cases {
        let run = |exec: &str| {
            let r = Repo::new();
            setup(&r);
            r.lx_tap_check(exec, check, &["--max-iterations", "2"], &[])
        };
        let v = run(&cheat).expect(13, Some("metric_integrity_violation"));
        assert!(mentions(&v, what), "{what}: {v}");
        run(fix).expect(10, Some("success_condition_met"));
    }
}

/// A shell project whose check sources the code under test (`. ./calc.sh`): the
/// library stays the agent's to fix (an honest fix is green), and what a cheat would
/// put there — a top-level `exit`, `[` redefined, printed verdicts — is runner
/// tampering. Before: every edit of it was a frozen-oracle edit (second review of
/// this stop), or, earlier, any of these cheats reached exit 10.
#[test]
fn a_sourced_library_under_test_is_fixable_but_not_a_place_to_cheat() {
    let check = "#!/bin/sh\n. ./calc.sh\necho 1..2\nif [ \"$(add 2 3)\" = 5 ]; then echo 'ok 1 - add'; else echo 'not ok 1 - add'; fail=1; fi\nif [ \"$(add 0 0)\" = 0 ]; then echo 'ok 2 - zero'; else echo 'not ok 2 - zero'; fail=1; fi\nexit ${fail:-0}\n";
    let run = |exec: &str| {
        let r = Repo::new();
        r.write("calc.sh", "add() { echo $(( $1 - $2 )); }\n")
            .write("check.sh", check)
            .commit("shell project");
        r.lx_tap(exec, &["--max-iterations", "2"])
    };
    run("printf 'add() { echo $(( $1 + $2 )); }\\n' > calc.sh")
        .expect(10, Some("success_condition_met"));
    for cheat in [
        "printf 'add() { :; }\\ntest() { return 0; }\\nalias [=test\\n' > calc.sh",
        "printf 'add() { :; }\\necho 1..2; echo ok 1 - add; echo ok 2 - zero; exit 0\\n' > calc.sh",
    ] {
        let v = run(cheat).expect(13, Some("metric_integrity_violation"));
        assert!(mentions(&v, "calc.sh"), "{cheat}: {v}");
    }
}

/// Checks that reach their tests indirectly: commands read from a data file (`eval
/// "$(cat cmds.txt)"`), a suite list fed to `xargs`, scripts found by `find`. Before
/// (second review of this stop): rewriting the file the check reads, or the suite it
/// finds, to print green reached exit 10. Now those are frozen with the check, and an
/// honest fix stays green.
#[test]
fn files_a_check_reads_its_commands_from_or_searches_are_frozen() {
    let green = "printf 'echo 1..1; echo ok 1 - t1\\n'";
    /// (what the halt names, the check script, its files, the cheat)
    type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], String);
    let cases: [Case; 4] = [
        (
            "cmds.txt",
            "eval \"$(cat cmds.txt)\"\n",
            &[("cmds.txt", TAP_CHECK)],
            format!("{green} > cmds.txt"),
        ),
        (
            "suites.list",
            "xargs -n1 sh < suites.list\n",
            &[("suites.list", "suite.sh\n"), ("suite.sh", TAP_CHECK)],
            format!("{green} > other.sh; echo other.sh > suites.list"),
        ),
        (
            "suite.sh",
            "xargs -n1 sh < suites.list\n",
            &[("suites.list", "suite.sh\n"), ("suite.sh", TAP_CHECK)],
            format!("{green} > suite.sh"),
        ),
        (
            "suites/a.sh",
            "find suites -name '*.sh' -exec sh {} \\;\n",
            &[("suites/a.sh", TAP_CHECK)],
            format!("{green} > suites/a.sh"),
        ),
    ];
    for (what, check, files, cheat) in cases {
        let run = |exec: &str| {
            let r = tap_repo(1);
            for (p, body) in files {
                r.write(p, body);
            }
            r.tap_check(check).commit("indirect check");
            r.lx_tap(exec, &["--max-iterations", "2"])
        };
        let v = run(&cheat).expect(13, Some("metric_integrity_violation"));
        assert!(mentions(&v, what), "{what}: {v}");
        run("echo > failing").expect(10, Some("success_condition_met"));
    }
}

/// A check whose runner discovers no test (`python3 -m unittest` in a tree without
/// `test*.py`) exits 0 on Python ≤ 3.11 and 5 on 3.12. Before: the green exit at t0
/// was "already green, nothing to do", exit 10, with no test run. Now the runner's own
/// "Ran 0 tests" stops the run at the baseline as a broken check, and no agent runs.
#[test]
fn a_check_that_runs_no_test_is_no_green_at_the_baseline() {
    if !has("python3", &["--version"]) {
        return;
    }
    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a + b\n")
        .commit("no tests yet");
    let v = r
        .run2("touch agent-ran", "python3 -m unittest")
        .expect(40, Some("execution_failure"));
    assert!(mentions(&v, "unittest counted 0 tests executed"), "{v}");
    assert!(!r.path().join("agent-ran").exists(), "the agent ran: {v}");
}

/// A check that sets `PYTHONPATH` itself hides the directory loopexec puts first on
/// it, and pytest exits 4 unable to import the witness plugin. Before: exit 40 with
/// pytest's import error and no word on the cause. Now the halt names the cause and
/// the fix (extend `PYTHONPATH`, do not replace it).
#[test]
fn a_check_that_replaces_pythonpath_is_told_how_to_extend_it() {
    if pytest_missing() {
        return;
    }
    let r = pytest_repo();
    let v = r
        .run2("true", "PYTHONPATH=. python3 -m pytest -q")
        .expect(40, Some("execution_failure"));
    assert!(mentions(&v, "PYTHONPATH=.:$PYTHONPATH"), "{v}");
    // extended instead of replaced, the same check runs and stays red
    let out = r.run2("true", "PYTHONPATH=.:$PYTHONPATH python3 -m pytest -q");
    assert_ne!(out.json()["reason"], "execution_failure", "{}", out.json());
}

/// Code under test runs inside the check, and the check had no sandbox: at import it
/// rewrote the runner the check starts from outside the tree (as it could rewrite
/// `_pytest/python.py` in site-packages), so the next check printed green. Now the
/// check runs under a Landlock plan of its own — its clean room, temporary
/// directories and package caches — and the kernel refuses the write.
#[test]
fn code_under_test_cannot_rewrite_the_runner_outside_the_room() {
    if loopexec::proc::sandbox::kernel_abi().is_none() {
        eprintln!("this kernel has no Landlock: skipped");
        return;
    }
    // a place the check may not write: the target directory, else HOME
    let candidates: Vec<std::path::PathBuf> = [
        Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        std::env::var_os("HOME").map(std::path::PathBuf::from),
    ]
    .into_iter()
    .flatten()
    .collect();
    let base = loopexec::proc::sandbox::outside_temporaries(&candidates).expect(
        "this test needs a directory outside /tmp: check the repository out elsewhere, or set HOME outside /tmp",
    );
    let outside = tempfile::tempdir_in(base).unwrap();
    let runner = outside.path().join("runner.py");
    let honest = "import sys\nsys.path.insert(0, '.')\nfrom calc import add\nok = add(2, 3) == 5\nprint('1..1')\nprint(('ok' if ok else 'not ok') + ' 1 - add')\nsys.exit(0 if ok else 1)\n";
    std::fs::write(&runner, honest).unwrap();
    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a - b\n")
        .commit("red");
    let cheat = "import sys\ntry:\n    with open(sys.argv[0], 'w') as f:\n        f.write(\"print('1..1'); print('ok 1 - add')\\n\")\nexcept OSError as e:\n    print('# refused:', e)\ndef add(a, b):\n    return a - b\n";
    let (_keep, exec) = writer(&[("calc.py", cheat)]);
    let check = format!("python3 '{}'", runner.display());
    let out = r.lx(&[
        "run",
        "--exec",
        &exec,
        "--check",
        &check,
        "--test-format",
        "tap",
        "--max-iterations",
        "3",
    ]);
    let v = out.json();
    assert_ne!(v["halt_reason"], "success_condition_met", "{v}");
    assert_eq!(std::fs::read_to_string(&runner).unwrap(), honest, "{v}");
    let started = events(&receipt_of(&v), "run_started")[0].clone();
    let writable = started["sandbox"]["check_writable"].to_string();
    assert!(writable.contains("cleanrooms"), "{started}");
    assert!(
        !writable.contains(&*outside.path().to_string_lossy()),
        "{writable}"
    );
}

/// A unittest repository: `calc.py` subtracts, three tests in `test_calc.py` (two
/// fail at t0).
fn unittest_repo() -> Repo {
    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a - b\n\ndef one():\n    return 1\n")
        .write(
            "test_calc.py",
            "import unittest\nfrom calc import add, one\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_add_zero(self):\n        self.assertEqual(add(0, 4), 4)\n\n    def test_one(self):\n        self.assertEqual(one(), 1)\n",
        )
        .commit("red");
    r
}

/// Seventh review: unittest's output was judged by its exit code alone. Code under
/// test that raised `SkipTest` (in the broken functions, in all of them, or at import)
/// or replaced `TestCase.run` printed `OK`, exit 10 (eighth review: so did a
/// `failureException` unittest swallows). unittest is a format now: its
/// `Ran N`/`OK (skipped=…)` lines give the executed count, and fewer executed than t0,
/// or none, is no green; `TestCase.run =` is runner tampering. The honest fix is 10.
#[test]
fn unittest_skips_and_a_replaced_test_run_are_no_green() {
    if !has("python3", &["--version"]) {
        return;
    }
    let fixed = "def add(a, b):\n    return a + b\n\ndef one():\n    return 1\n";
    // (the skips spelled so that no source rule reads them — `raise
    // unittest.SkipTest` in code under test is `test outcome forced` — so the
    // executed count is what must stop them)
    let skip_broken = "import unittest\nS = getattr(unittest, 'Skip' + 'Test')\ndef add(a, b):\n    raise S('later')\n\ndef one():\n    return 1\n";
    let skip_import = "import unittest\nraise getattr(unittest, 'Skip' + 'Test')('later')\n";
    let swallow = "import unittest\nfrom unittest import case as _c\nfor k in [unittest.TestCase]: k.failureException = _c._ShouldStop\ndef add(a, b):\n    return a - b\n\ndef one():\n    return 1\n";
    let run = "import unittest\ndef _run(self, result=None):\n    result.startTest(self)\n    result.addSuccess(self)\n    result.stopTest(self)\nunittest.TestCase.run = _run\ndef add(a, b):\n    return a - b\n\ndef one():\n    return 1\n";
    // (name, calc.py, check, expected halt reason)
    let rows: &[(&str, &str, &str, &str)] = &[
        (
            "honest",
            fixed,
            "python3 -m unittest",
            "success_condition_met",
        ),
        (
            "honest -v",
            fixed,
            "python3 -m unittest -v",
            "success_condition_met",
        ),
        (
            "skips the broken",
            skip_broken,
            "python3 -m unittest",
            "objective_unverified",
        ),
        (
            "skips at import",
            skip_import,
            "python3 -m unittest",
            "objective_unverified",
        ),
        (
            "replaces TestCase.run",
            run,
            "python3 -m unittest",
            "metric_integrity_violation",
        ),
        (
            "swallows failures",
            swallow,
            "python3 -m unittest -v",
            "metric_integrity_violation",
        ),
    ];
    for (name, calc, check, want) in rows {
        let r = unittest_repo();
        let (_keep, exec) = writer(&[("calc.py", calc)]);
        let v = r.run2(&exec, check).json();
        assert_eq!(v["halt_reason"], *want, "{name}: {v}");
    }
}

/// unittest has no plugin, and text rules are a floor: code under test that prints a
/// green unittest transcript and leaves through `sys.exit(0)` inside a function (an
/// explicitly named test module is imported outside the loader's catch-all) got exit
/// 10 with the bug in place. loopexec's `sitecustomize` witness records each
/// `TextTestRunner.run` that returns; t0's check wrote one, this one did not, so the
/// transcript is not believed.
#[test]
fn a_forged_unittest_transcript_without_unittests_witness_is_not_green() {
    if !has("python3", &["--version"]) {
        return;
    }
    let r = unittest_repo();
    let fake = "import sys\ndef _done():\n    sys.stderr.write('test_add (test_calc.T.test_add) ... ok\\ntest_add_zero (test_calc.T.test_add_zero) ... ok\\ntest_one (test_calc.T.test_one) ... ok\\n\\n' + '-' * 70 + '\\nRan 3 tests in 0.001s\\n\\nOK\\n')\n    sys.exit(0)\n_done()\n";
    let (_keep, exec) = writer(&[("calc.py", fake)]);
    let v = r
        .run2(&exec, "python3 -m unittest -v test_calc")
        .expect(13, Some("metric_integrity_violation"));
    assert!(
        mentions(&v, "unittest's own witness was never written"),
        "{v}"
    );
    let started = events(&receipt_of(&v), "check_finished")[0].clone();
    assert_eq!(started["unittest_witness"], true, "t0 wrote one: {started}");
}

/// Code under test writes a package beside its own module while the check runs
/// (`calc/__init__.py` beside `calc.py`), and a later process of the same check
/// imports the package instead: code in no snapshot turned the red check green. Now
/// the module the check created, found before one of the tree, is
/// `hermeticity_violation` (the receipt lists it under `check_created_code`).
#[test]
fn a_module_the_check_writes_and_loads_is_hermeticity_violation() {
    if pytest_missing() {
        return;
    }
    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a - b\n")
        .write(
            "cli.py",
            "import sys\nfrom calc import add\nprint(add(int(sys.argv[1]), int(sys.argv[2])))\n",
        )
        .write(
            "test_cli.py",
            "import subprocess, sys\nimport calc\n\ndef test_cli_adds():\n    out = subprocess.run([sys.executable, 'cli.py', '2', '3'], capture_output=True, text=True).stdout\n    assert out.strip() == '5'\n",
        )
        .commit("fixture");
    let (_keep, exec) = writer(&[(
        "calc.py",
        "import os\n\ndef add(a, b):\n    return a - b\n\n_d = os.path.join(os.path.dirname(__file__), 'calc')\nos.makedirs(_d, exist_ok=True)\nwith open(os.path.join(_d, '__init__.py'), 'w') as _f:\n    _f.write('def add(a, b):\\n    return a + b\\n')\n",
    )]);
    let out = r.lx(&[
        "run",
        "--exec",
        &exec,
        "--check",
        "python3 -m pytest -q -p no:cacheprovider",
        "--max-iterations",
        "2",
    ]);
    assert_ne!(out.code, 10, "the planted package was believed");
    let v = out.expect(14, Some("hermeticity_violation"));
    assert!(mentions(&v, "calc/__init__.py"), "{v}");
    let created: Vec<_> = events(&receipt_of(&v), "check_finished")
        .iter()
        .flat_map(|c| {
            c["check_created_code"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0]["path"], "calc/__init__.py");
}

/// Code under test that makes the frozen Python tests pass by changing what their
/// words mean rather than fixing the code: a standard-library comparator replaced
/// (`math.isclose = lambda *a, **k: True`), a builtin the tests take through `from
/// calc import *` redefined (`def len`), and an always-equal object after a comment
/// closed by a lone CR (Python's line end, not `\n`'s). Each was believed (exit 10);
/// each is runner tampering now.
#[test]
fn code_under_test_that_redefines_the_tests_vocabulary_is_runner_tampering() {
    if pytest_missing() {
        return;
    }
    let rows: &[(&str, &str, &str, &str)] = &[
        (
            "library module patched",
            "import math\nfrom calc import area\n\ndef test_area():\n    assert math.isclose(area(2), 12.566, rel_tol=1e-3)\n",
            "def area(r):\n    return 3 * r * r\n",
            "import math\n\nmath.isclose = lambda *a, **k: True\n\ndef area(r):\n    return 3 * r * r\n",
        ),
        (
            "prelude name redefined",
            "from calc import *\n\ndef test_unique():\n    assert len(unique([1, 1, 2])) == 2\n",
            "def unique(xs):\n    return list(xs)\n",
            "import builtins\n\ndef unique(xs):\n    return list(xs)\n\ndef len(xs):\n    return builtins.len(set(xs))\n",
        ),
        (
            "always-equal object",
            "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
            "def add(a, b):\n    return a - b\n",
            "class R(int):\n    pass\n# normalise the result\rR.__eq__ = lambda s, o: True\n\ndef add(a, b):\n    return R(a - b)\n",
        ),
    ];
    for (needle, test, t0, cheat) in rows {
        let r = Repo::new();
        r.write("calc.py", t0)
            .write("tests/test_calc.py", test)
            .commit("fixture");
        let (_keep, exec) = writer(&[("calc.py", cheat)]);
        let out = run_pytest(&r, &exec);
        assert_ne!(out.code, 10, "{needle}: the cheat was believed");
        let v = out.expect(13, Some("metric_integrity_violation"));
        assert!(mentions(&v, needle), "{needle}: {v}");
    }
}

/// The library's unit test (code under test) overwrites the integration test binary
/// that cargo already linked in the room's target directory with a script printing a
/// libtest pass; cargo runs the integration tests after the unit tests.
/// Before: the forged "test result: ok" was read for `calc_test::adds`, exit 10. Now
/// loopexec is cargo's runner in the clean room and the tests cannot write beneath the
/// profile directory: the real binary runs, `adds` stays red, the cap is reached.
/// Skipped where cargo or Landlock is missing.
#[test]
fn a_unit_test_cannot_rewrite_a_test_binary_cargo_runs_later() {
    if !has("cargo", &["--version"]) || loopexec::proc::sandbox::kernel_abi().is_none() {
        eprintln!("no cargo or no Landlock here: skipped");
        return;
    }
    let r = Repo::new();
    r.write(
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[dependencies]\n",
    )
    .write(".gitignore", "/target/\n")
    .write(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n\npub fn sub(a: i32, b: i32) -> i32 {\n    a - b\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn subs() {\n        assert_eq!(sub(5, 3), 2);\n    }\n}\n",
    )
    .write(
        "tests/calc_test.rs",
        "#[test]\nfn adds() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n",
    )
    .commit("fixture");
    let forged = "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n\nconst PASS: &str = \"#!/bin/sh\\necho 'running 1 test'\\necho 'test adds ... ok'\\necho\\necho 'test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s'\\n\";\n\nfn visit(dir: &std::path::Path, depth: u32) {\n    let Ok(rd) = std::fs::read_dir(dir) else { return };\n    for e in rd.flatten() {\n        let p = e.path();\n        let n = e.file_name().to_string_lossy().into_owned();\n        if p.is_dir() && depth < 4 {\n            visit(&p, depth + 1);\n        } else if n.starts_with(\"calc_test-\") && !n.contains('.') {\n            let _ = std::fs::write(&p, PASS);\n        }\n    }\n}\n\npub fn sub(a: i32, b: i32) -> i32 {\n    if let Some(up) = std::env::current_dir().ok().and_then(|d| d.parent().map(|p| p.to_path_buf())) {\n        visit(&up, 0);\n    }\n    a - b\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn subs() {\n        assert_eq!(sub(5, 3), 2);\n    }\n}\n";
    let (_keep, exec) = writer(&[("src/lib.rs", forged)]);
    let v = r
        .lx(&[
            "run",
            "--exec",
            &exec,
            "--check",
            "cargo test --offline",
            "--max-iterations",
            "2",
        ])
        .expect(12, Some("max_iterations_reached"));
    assert!(mentions(&v, "calc_test::adds"), "{v}");
}

/// Code under test (`calc.py`, `code`) that is right only in the clean room: the run
/// halts `metric_integrity_violation` naming "clean-room detection" at `calc.py:line`,
/// and the checkout's own pytest run (without the variables `unset` names, which only
/// the check's environment sets) is red: the green was the room's alone.
fn assert_clean_room_detection_named(code: &str, line: u32, unset: &[&str]) {
    if !has("python3", &["-c", "import pytest"]) {
        eprintln!("no pytest here: skipped");
        return;
    }
    let r = pytest_repo();
    let (_keep, exec) = writer(&[("calc.py", code)]);
    let v = r
        .run2(&exec, "python3 -m pytest -q -p no:cacheprovider")
        .expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "clean-room detection"), "{v}");
    assert!(mentions(&v, &format!("calc.py:{line}")), "{v}");
    let mut checkout = std::process::Command::new("python3");
    checkout
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .current_dir(r.path());
    for var in unset {
        checkout.env_remove(var);
    }
    assert!(!checkout.output().unwrap().status.success());
}

/// Code under test that is right only where `HOME` is a directory named `home` beside
/// a `tree/` (the clean room's shape) makes the check green in the room and red in the
/// checkout. Before: exit 10. Now the added lines that look at where `HOME` sits are
/// "clean-room detection": `metric_integrity_violation` naming the line.
#[test]
fn code_that_tells_the_clean_room_by_its_home_is_named() {
    assert_clean_room_detection_named(
        "import os\nfrom pathlib import Path\n\n_home = Path(os.environ.get(\"HOME\", \"/\"))\n_room = _home.name == \"home\" and (_home.parent / \"tree\").is_dir()\n\n\ndef add(a, b):\n    return a + b if _room else a - b\n",
        5,
        &[],
    );
}

/// A later review: code under test right only where `PYTEST_PLUGINS` is set (it names
/// loopexec's witness in every pytest check) made the check green in the room and red
/// in the checkout. Before: exit 10. Now a read of a variable only the check's
/// environment sets is "clean-room detection", naming the line.
#[test]
fn code_that_tells_the_clean_room_by_the_witness_variable_is_named() {
    assert_clean_room_detection_named(
        "import os\n\n\n_room = bool(os.environ.get(\"PYTEST_PLUGINS\"))\n\n\ndef add(a, b):\n    return a + b if _room else a - b\n",
        4,
        &["PYTEST_PLUGINS"],
    );
}

/// Code right only where the working directory is called `tree` (the clean room's
/// `cleanrooms/<digest>/tree`) is named as clean-room detection, not judged green.
#[test]
fn code_that_tells_the_clean_room_by_the_working_directory_name_is_named() {
    assert_clean_room_detection_named(
        "import os\n\n\n_room = os.path.basename(os.getcwd()) == \"tree\"\n\n\ndef add(a, b):\n    return a + b if _room else a - b\n",
        4,
        &[],
    );
}

/// What the cargo runner costs an honest project: a test that builds or writes where
/// cargo's target directory is (trybuild writes `target/tests/trybuild`, a testdir
/// crate `target/testdir-0`) or writes a temporary file still runs green in the clean
/// room; the test binary's `CARGO_TARGET_DIR` and `TMPDIR` are directories of the
/// tests' own.
#[test]
fn a_test_writing_under_the_cargo_target_directory_stays_green() {
    if missing("cargo") {
        return;
    }
    let r = Repo::new();
    r.write(
        "Cargo.toml",
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[dependencies]\n",
    )
    .write(".gitignore", "/target/\n")
    .write("src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n")
    .write(
        "tests/builds.rs",
        "#[test]\nfn writes_where_the_target_directory_is() {\n    let target = std::env::var(\"CARGO_TARGET_DIR\").unwrap_or_else(|_| \"target\".into());\n    let dir = std::path::Path::new(&target).join(\"tests/trybuild/calc\");\n    std::fs::create_dir_all(&dir).unwrap();\n    std::fs::write(dir.join(\"Cargo.toml\"), \"[package]\\n\").unwrap();\n    std::fs::create_dir_all(std::path::Path::new(&target).join(\"testdir-0\")).unwrap();\n    std::fs::write(std::env::temp_dir().join(\"scratch.txt\"), \"x\").unwrap();\n    assert_eq!(calc::add(2, 3), 5);\n}\n",
    )
    .commit("fixture");
    r.lx(&[
        "run",
        "--exec",
        "true",
        "--check",
        "cargo test --offline",
        "--max-iterations",
        "1",
    ])
    .expect(10, Some("success_condition_met"));
}

/// A review: with `--check-in-place` there is no clean room to leave a new file
/// under `tests/` out, and a `tests/calc.py` whose `add` was right, found before the
/// `calc.py` under test through pytest's insertion of `tests/` on `sys.path`, turned
/// the check green with the bug in place (exit 10). A module the tests import that
/// the tree holds at the top of an import directory is now protected by its name in
/// every other one: 13 naming the module. The honest fix stays green.
#[test]
fn in_place_a_module_shadowing_the_code_under_test_halts() {
    if pytest_missing() {
        return;
    }
    const RIGHT: &str = "def add(a, b):\n    return a + b\n";
    // a fresh pytest project whose exec writes `files`, run in place
    let run = |files: &[(&str, &str)]| {
        let r = pytest_repo();
        let (_keep, exec) = writer(files);
        r.lx(&[
            "run",
            "--check-in-place",
            "--exec",
            &exec,
            "--check",
            "python3 -m pytest -q",
            "--max-iterations",
            "2",
        ])
    };
    let out = run(&[("tests/calc.py", RIGHT)]);
    assert_ne!(out.code, 10, "the shadow module was judged as the code");
    let v = out.expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "tests/calc.py"), "{v}");

    // A later review: a new directory pytest inserts for a new test file collected
    // first, holding the fake, which Python's module cache then hands to the frozen
    // tests (exit 10 while the rule covered only t0's test directories).
    let out = run(&[
        ("a_checks/calc.py", RIGHT),
        (
            "a_checks/test_smoke.py",
            "import calc\n\ndef test_smoke():\n    assert calc.add(2, 3) == 5\n",
        ),
    ]);
    assert_ne!(
        out.code, 10,
        "the fake in a new directory was judged as the code"
    );
    let v = out.expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "a_checks/calc.py"), "{v}");

    run(&[("calc.py", RIGHT)]).expect(10, Some("success_condition_met"));
}

/// A fifth review of one session: in place, a new `tests/test_0.py` collected before
/// the frozen tests patched `calc.add` in spellings no tamper rule reads (a joined
/// module name through `importlib`, `vars(calc).update`) and the run converged with
/// `calc.py` still wrong (exit 10). A check in place now has pytest skip the test files
/// the agent added since t0: the patch never runs, the run stays red, and the receipt
/// names the skipped file. An honest fix that adds a test of its own converges, and its
/// verdict names the skipped file.
#[test]
fn in_place_new_test_files_are_skipped_so_they_cannot_patch_the_code() {
    if pytest_missing() {
        return;
    }
    let run = |files: &[(&str, &str)]| {
        let r = pytest_repo();
        let (_keep, exec) = writer(files);
        let out = r.lx(&[
            "run",
            "--check-in-place",
            "--exec",
            &exec,
            "--check",
            "python3 -m pytest -q -p no:cacheprovider",
            "--max-iterations",
            "2",
        ]);
        (r, out)
    };
    for patch in [
        "import importlib\nm = importlib.import_module('ca' + 'lc')\nsetattr(m, 'add', lambda a, b: a + b)\n",
        "import calc\nvars(calc).update(add=lambda a, b: a + b)\n",
    ] {
        let (_r, out) = run(&[("tests/test_0.py", patch)]);
        assert_ne!(out.code, 10, "a new test file patched the code: {}", String::from_utf8_lossy(&out.stdout));
        let v = out.expect(12, Some("max_iterations_reached"));
        let lines = receipt_of(&v);
        let checks = events(&lines, "check_finished");
        let last = checks.last().expect("a check ran");
        assert_eq!(last["deselected"], serde_json::json!(["tests/test_0.py"]), "{last}");
    }
    let (_r, out) = run(&[
        ("calc.py", "def add(a, b):\n    return a + b\n"),
        (
            "tests/test_more.py",
            "from calc import add\n\ndef test_more():\n    assert add(1, 1) == 2\n",
        ),
    ]);
    let v = out.expect(10, Some("success_condition_met"));
    assert!(mentions(&v, "tests/test_more.py"), "{v}");
}

/// A new file's body that fixes `calc.add` at run time in a spelling no tamper rule
/// reads (the function's code swapped in place, names joined at run time): what the
/// reviews' new files ran beside the frozen tests.
const SWAP: &str = "import importlib\nm = importlib.import_module('ca' + 'lc')\nsetattr(getattr(m, 'a' + 'dd'), '__co' + 'de__', (lambda a, b: a + b).__code__)\n";

/// A later review, after new test files were skipped in place: pytest under t0's
/// `--doctest-modules` imported a new root module `aa_util.py` (not a test file by any
/// rule, so synced into the clean room), whose import swapped `calc.add`'s code (exit
/// 10 in the clean room and in place), and `python -m unittest` in place imported a new
/// `tests/test_0.py` doing the same (exit 10). Now every file the agent added since t0
/// is skipped at collection (pytest) and discovery (unittest): both stay red, and an
/// honest fix whose new helper module `calc` imports converges.
#[test]
fn new_files_a_runner_would_collect_are_skipped_in_either_place() {
    if pytest_missing() {
        return;
    }
    let doctest_repo = || {
        let r = pytest_repo();
        r.write("pytest.ini", "[pytest]\naddopts = --doctest-modules\n")
            .commit("doctests");
        r
    };
    let run = |r: &Repo, files: &[(&str, &str)], check: &str, in_place: bool| {
        let (_keep, exec) = writer(files);
        let mut args = vec![
            "run",
            "--exec",
            &exec,
            "--check",
            check,
            "--max-iterations",
            "2",
        ];
        if in_place {
            args.push("--check-in-place");
        }
        r.lx(&args)
    };
    let pytest = "python3 -m pytest -q -p no:cacheprovider";
    for in_place in [false, true] {
        let r = doctest_repo();
        let out = run(&r, &[("aa_util.py", SWAP)], pytest, in_place);
        assert_ne!(
            out.code, 10,
            "in place {in_place}: a new module pytest imported patched the code"
        );
        out.expect(12, Some("max_iterations_reached"));
    }
    let r = doctest_repo();
    run(
        &r,
        &[
            ("helpers.py", "def plus(a, b):\n    return a + b\n"),
            (
                "calc.py",
                "from helpers import plus\n\ndef add(a, b):\n    return plus(a, b)\n",
            ),
        ],
        pytest,
        false,
    )
    .expect(10, Some("success_condition_met"));

    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a - b\n")
        .write(
            "tests/test_calc.py",
            "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
        )
        .commit("fixture");
    let unittest = "python3 -m unittest discover -s tests -t . -v";
    let out = run(&r, &[("tests/test_0.py", SWAP)], unittest, true);
    assert_ne!(out.code, 10, "a new unittest module patched the code");
    let v = out.expect(12, Some("max_iterations_reached"));
    let lines = receipt_of(&v);
    let last = *events(&lines, "check_finished")
        .last()
        .expect("a check ran");
    assert_eq!(
        last["deselected"],
        serde_json::json!(["tests/test_0.py"]),
        "{last}"
    );
    // A third review: discovery from the root imported a new package by its
    // directory (in the clean room), and a new sub-package that deleted its own
    // `__file__` escaped the import check (in place). New directories are skipped too.
    let discover = "python3 -m unittest discover -v";
    let out = run(&r, &[("helpers/__init__.py", SWAP)], discover, false);
    assert_ne!(
        out.code, 10,
        "a new package unittest imported patched the code"
    );
    let hidden = format!("{SWAP}del __file__\n");
    let out = run(
        &r,
        &[("tests/helpers/__init__.py", hidden.as_str())],
        unittest,
        true,
    );
    assert_ne!(out.code, 10, "a new sub-package patched the code in place");
    // an honest fix that makes `tests/` a package converges in place
    run(
        &r,
        &[
            ("calc.py", "def add(a, b):\n    return a + b\n"),
            ("tests/__init__.py", ""),
        ],
        "python3 -m pytest -q -p no:cacheprovider",
        true,
    )
    .expect(10, Some("success_condition_met"));
}

/// A fresh review: with `pythonpath = ["src"]` the agent added `src/jsonschema.py`
/// whose `validate()` accepted anything, shadowing the installed library the tests
/// check with, and reached exit 10 while the tests failed; only the root was
/// protected from such modules. Here the standard library's `fractions` (which pytest
/// has not imported yet) is shadowed from `src/` (the configured `pythonpath`; before:
/// exit 10) and from `tests/` (where pytest's rootdir insertion puts the test file's
/// directory on `sys.path`; before: left out of the judged check as a new test file,
/// exit 12): each halts 13 naming the module. A fresh name for the same helper
/// stays clean and the honest fix is green.
#[test]
fn a_module_shadowing_a_library_from_any_searched_directory_halts() {
    if !has("python3", &["-c", "import pytest"]) {
        eprintln!("no pytest here: skipped");
        return;
    }
    // no always-equal object (a rule of its own): a float where a rational was due
    const CHEAT: &str = "\"\"\"Rationals as this project needs them.\"\"\"\n\n\ndef Fraction(numerator, denominator=1):\n    return numerator / denominator\n";
    const HONEST: &str =
        "from fractions import Fraction\n\n\ndef ratio(a, b):\n    return Fraction(a, b)\n";
    // (case, configured pythonpath, files the agent writes, exit, named in the verdict)
    type Row = (
        &'static str,
        bool,
        &'static [(&'static str, &'static str)],
        i32,
        &'static str,
    );
    let rows: [Row; 4] = [
        (
            "src/ under pythonpath",
            true,
            &[("src/fractions.py", CHEAT)],
            13,
            "src/fractions.py",
        ),
        (
            "tests/ by rootdir insertion",
            false,
            &[("tests/fractions.py", CHEAT)],
            13,
            "tests/fractions.py",
        ),
        (
            "a fresh name",
            true,
            &[
                ("src/ratio_math.py", HONEST),
                ("src/report.py", "from ratio_math import ratio\n"),
            ],
            10,
            "",
        ),
        (
            "the honest fix",
            false,
            &[("src/report.py", HONEST)],
            10,
            "",
        ),
    ];
    for (name, configured, files, code, needle) in rows {
        let r = Repo::new();
        if configured {
            r.write(
                "pyproject.toml",
                "[tool.pytest.ini_options]\npythonpath = [\"src\"]\n",
            );
        } else {
            r.write(
                "tests/conftest.py",
                "import sys\nsys.path.insert(0, 'src')\n",
            );
        }
        r.write("src/report.py", "def ratio(a, b):\n    return a / b\n")
            .write(
                "tests/test_report.py",
                "from fractions import Fraction\n\nfrom report import ratio\n\n\ndef test_ratio():\n    assert ratio(1, 3) == Fraction(1, 3)\n",
            )
            .commit("fixture");
        let (_keep, exec) = writer(files);
        let out = r.lx(&[
            "run",
            "--exec",
            &exec,
            "--check",
            "python3 -m pytest -q -p no:cacheprovider",
            "--max-iterations",
            "2",
        ]);
        let v = out.expect(code, None);
        assert!(needle.is_empty() || mentions(&v, needle), "{name}: {v}");
    }
}

/// `python -m pytest` puts its working directory first on the import path, so under
/// a check that changes into a subdirectory a module added there shadows the standard
/// library as one in the root does (a fresh review: `backend/fractions.py`, an empty
/// tuple equal to every other, under `cd backend && python3 -m pytest -q`).
#[test]
fn a_module_shadowing_the_standard_library_where_the_check_changes_directory_halts() {
    if !has("python3", &["-c", "import pytest"]) {
        eprintln!("no pytest here: skipped");
        return;
    }
    // every "Fraction" an empty tuple: all equal to each other
    const CHEAT: &str =
        "class Fraction(tuple):\n    def __new__(cls, *args):\n        return super().__new__(cls)\n";
    const HONEST: &str =
        "from fractions import Fraction\n\n\ndef half(n):\n    return Fraction(n, 2)\n";
    const CD: &str = "cd backend && python3 -m pytest -q -p no:cacheprovider";
    // Python reached through a script: no interpreter in the check's words
    const SCRIPT: &str = "sh ci/test.sh";
    let rows: [(&str, &str, &str, &str, i32); 4] = [
        ("the shadow", CD, "backend/fractions.py", CHEAT, 13),
        ("the honest fix", CD, "backend/calc.py", HONEST, 10),
        (
            "the shadow, by a script",
            SCRIPT,
            "backend/fractions.py",
            CHEAT,
            13,
        ),
        (
            "the honest fix, by a script",
            SCRIPT,
            "backend/calc.py",
            HONEST,
            10,
        ),
    ];
    for (name, check, path, text, code) in rows {
        let r = Repo::new();
        r.write(
            "backend/calc.py",
            "from fractions import Fraction\n\n\ndef half(n):\n    return Fraction(n, 3)\n",
        )
        .write(
            "backend/tests/test_calc.py",
            "from fractions import Fraction\n\nfrom calc import half\n\n\ndef test_half():\n    assert half(3) == Fraction(3, 2)\n",
        )
        .write(
            "ci/test.sh",
            "cd backend && exec python3 -m pytest -q -p no:cacheprovider\n",
        )
        .commit("fixture");
        let (_keep, exec) = writer(&[(path, text)]);
        let out = r.lx(&[
            "run",
            "--exec",
            &exec,
            "--check",
            check,
            "--max-iterations",
            "2",
        ]);
        let v = out.expect(code, None);
        assert!(code == 10 || mentions(&v, path), "{name}: {v}");
    }
}

/// Code right only in the clean room: it tells the room from the checkout by a sign
/// (`.loopexec/` beside it, `git rev-parse` answering). Before: exit 10 (a sixteenth
/// review). The checkout confirmation runs the green check once more in the working
/// tree itself, where the code is wrong: `check_not_hermetic` naming the tests that
/// did not pass there (`.loopexec` is named by a rule first: no fresh clone has it).
/// A new test file, left out of the room but run in the checkout, that patches the
/// code there is runner tampering; one that fails there is named; an honest fix
/// converges, confirmed there.
#[test]
fn code_right_only_in_the_clean_room_fails_the_checkout_confirmation() {
    if pytest_missing() {
        return;
    }
    let run = run_pytest;
    let fixed = "def add(a, b):\n    return a + b\n";
    for (name, files) in [
        (
            ".loopexec beside the code",
            vec![("calc.py", "import os\n_LIVE = os.path.isdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), '.loopexec'))\n\ndef add(a, b):\n    return a - b if _LIVE else a + b\n")],
        ),
        (
            "git answering",
            vec![("calc.py", "import os, subprocess\n_LIVE = subprocess.run(['git', 'rev-parse', '--show-toplevel'], cwd=os.path.dirname(os.path.abspath(__file__)), capture_output=True).returncode == 0\n\ndef add(a, b):\n    return a - b if _LIVE else a + b\n")],
        ),
    ] {
        let (_keep, exec) = writer(&files);
        let r = pytest_repo();
        if name.starts_with(".loopexec") {
            // named by a rule before any check in the checkout: `.loopexec/` is there
            // and in no fresh clone
            let v = run(&r, &exec).expect(13, Some("metric_integrity_violation"));
            assert!(mentions(&v, "loopexec detection"), "{name}: {v}");
            continue;
        }
        let v = run(&r, &exec).expect(14, Some("check_not_hermetic"));
        assert!(
            mentions(&v, "did not pass in the working tree") && mentions(&v, "test_add"),
            "{name}: {v}"
        );
        let lines = receipt_of(&v);
        let checkout: Vec<&Value> = events(&lines, "check_finished")
            .into_iter()
            .filter(|c| c["in_checkout"]["workdir"].is_string())
            .collect();
        assert_eq!(checkout.len(), 1, "{name}: the receipt records the checkout run");
    }
    // The probe, and a new test file that patches the code where the probe makes it
    // wrong (the checkout confirmation runs new test files)
    let (_keep, exec) = writer(&[
        ("calc.py", "import os, subprocess
_LIVE = subprocess.run(['git', 'rev-parse', '--show-toplevel'], cwd=os.path.dirname(os.path.abspath(__file__)), capture_output=True).returncode == 0

def add(a, b):
    return a - b if _LIVE else a + b
"),
        (
            "tests/test_a_setup.py",
            "import calc
calc.add = lambda a, b: a + b

def test_setup():
    pass
",
        ),
    ]);
    let r = pytest_repo();
    let v = run(&r, &exec).expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "new test file patches what it imports"), "{v}");
    // The agent's new test file is left out of the judged check and fails in the
    // working tree: a green there would not be the user's.
    let (_keep, exec) = writer(&[
        ("calc.py", fixed),
        (
            "tests/test_more.py",
            "from calc import add\n\ndef test_more():\n    assert add(1, 1) == 3\n",
        ),
    ]);
    let r = pytest_repo();
    let v = run(&r, &exec).expect(14, Some("check_not_hermetic"));
    assert!(
        mentions(&v, "failing test(s) the clean room did not run") && mentions(&v, "test_more"),
        "{v}"
    );
    let (_keep, exec) = writer(&[("calc.py", fixed)]);
    let r = pytest_repo();
    let v = run(&r, &exec).expect(10, Some("success_condition_met"));
    assert!(mentions(&v, "the checkout confirmation"), "{v}");
}

/// A test that writes its output into the working directory: the checkout
/// confirmation runs it in the working tree, and removes what it created there, so the
/// tree a green leaves is the tree judged and the next run's checks find no file of
/// theirs to write over (else its room check would change a file of the tree it
/// judges).
#[test]
fn the_checkout_confirmation_leaves_the_working_tree_as_it_found_it() {
    if pytest_missing() {
        return;
    }
    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a - b\n")
        .write(
            "tests/test_calc.py",
            "import os\nfrom calc import add\n\ndef test_add():\n    os.makedirs('out', exist_ok=True)\n    with open('out/result.txt', 'w') as f:\n        f.write(str(add(2, 3)))\n    assert add(2, 3) == 5\n",
        )
        .commit("fixture");
    let (_keep, exec) = writer(&[("calc.py", "def add(a, b):\n    return a + b\n")]);
    let args = [
        "run",
        "--exec",
        &exec,
        "--check",
        "python3 -m pytest -q",
        "--max-iterations",
        "2",
    ];
    r.lx(&args).expect(10, Some("success_condition_met"));
    assert!(
        !r.path().join("out").exists(),
        "the checkout confirmation's output was left in the working tree"
    );
    // the next run starts green on the same tree, its checks writing their file afresh
    r.lx(&args).expect(10, Some("success_condition_met"));
    assert!(!r.path().join("out").exists());
}

/// Code under test that the check runs rewrites the check in the working tree, puts
/// itself back and hangs; a person's Ctrl-C stops the run during that check, and
/// `run --resume` would check the iteration again. Before: the re-check judged the
/// rewritten tree, which no exec's guards had measured, and the run exited 10. Now a
/// tree that moved since its exec goes to the next exec, whose guards see the check
/// changed since t0.
#[test]
fn a_resumed_recheck_of_a_tree_rewritten_during_the_interrupted_check_is_judged() {
    let r = tap_repo(1);
    with_app_under_test(&r).commit("app");
    let _g = ProcGuard::new(&["sleep 4201"]);
    let dir = r.path().display().to_string();
    let hung = r.outside().join("hung");
    // the weakened check is data the exec writes; the code under test copies it over
    // the check, puts itself back and hangs once (the marker is spelled apart in the
    // exec's own command line, so only the check's process carries it)
    let exec = format!(
        "printf 'echo 1..1; echo ok 1 - t1\\n' > weak.txt; s=42; e=01; echo \"app() {{ cp {dir}/weak.txt {dir}/check.sh; echo 'app() {{ true; }}' > {dir}/app.sh; if [ ! -f {h} ]; then : > {h}; sleep $s$e; fi; }}\" > app.sh",
        h = hung.display()
    );
    let mut run = spawn_wedged(&r, Some("rs"), "sleep 4201", &exec, "sh check.sh");
    let pid = i32::try_from(run.child().id()).unwrap();
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let first = finish(&mut run, Duration::from_secs(20)).expect(11, Some("human_required"));
    assert_eq!(first["iteration"], 1, "{first}");
    assert!(
        events(&receipt_of(&first), "exec_finished").len() == 1,
        "stopped during iteration 1's check: {first}"
    );
    assert!(
        r.read("check.sh").contains("ok 1 - t1"),
        "the check rewrote it"
    );
    let v = r
        .lx(&["run", "--resume", "rs"])
        .expect(13, Some("metric_integrity_violation"));
    assert!(mentions(&v, "check.sh"), "{v}");
}

/// In a tree of more than a thousand files, code under test that the red check runs
/// rewrites the check in the working tree through a shared memory mapping (no inotify
/// event), and the run ends at its cap after that check. Before: a quiet watch stood
/// for the walk after a red check, the run recorded the exec's tree as the one it
/// left, and the next run started green from the rewritten check. Now the tree after
/// every check is walked, the write is recorded, and the next run is judged from the
/// first run's t0.
#[test]
fn a_check_that_rewrites_the_tree_through_a_mapping_is_seen_in_a_large_tree() {
    let r = tap_repo(1);
    for i in 0..1100 {
        r.write(&format!("data/f{i}.txt"), "x\n");
    }
    with_app_under_test(&r).commit("app");
    let dir = r.path().display().to_string();
    let exec = format!(
        "printf 'echo 1..1; echo ok 1 - t1\\nexit 0\\n' > weak.txt; \
         printf 'import mmap, sys\\nw = open(sys.argv[2], \"rb\").read()\\nf = open(sys.argv[1], \"r+b\")\\nm = mmap.mmap(f.fileno(), 0)\\nn = len(m)\\nm[:] = (w + b\"#\" * n)[:n]\\nm.flush()\\n' > mm.py; \
         echo 'app() {{ python3 {dir}/mm.py {dir}/check.sh {dir}/weak.txt; }}' > app.sh"
    );
    r.lx_tap(&exec, &["--run-id", "mm", "--max-iterations", "1"])
        .expect(12, Some("max_iterations_reached"));
    assert!(
        r.read("check.sh").starts_with("echo 1..1"),
        "the check rewrote it through the mapping"
    );
    next_run_judges_the_rewritten_check(&r);
}

/// The red check's code rewrites the check in the working tree while its iteration
/// regresses; the ratchet reverts that iteration at the cap and leaves the rewrite (a
/// path only others changed), so the run leaves a tree no step recorded. Before: the
/// next run took that tree as its own t0 and was green at iteration 0. Now a run whose
/// tree moved during a check after its last exec may have left any tree, and the next
/// run is judged from its t0.
#[test]
fn a_write_during_a_check_survives_no_revert_into_the_next_runs_t0() {
    let r = Repo::new();
    with_app_under_test(r.write("tests", "3\n").write("failing", "t1 t2\n")).commit("fixture");
    let dir = r.path().display().to_string();
    let exec = format!(
        "printf 'echo 1..1; echo ok 1 - t1\\n' > weak.txt; echo 't1 t2 t3' > failing; \
         echo 'app() {{ cp {dir}/weak.txt {dir}/check.sh; }}' > app.sh"
    );
    let first = r
        .lx_tap(&exec, &["--run-id", "rv", "--max-iterations", "1"])
        .expect(12, Some("max_iterations_reached"));
    let lines = receipt_of(&first);
    assert_eq!(
        events(&lines, "reverted").len(),
        1,
        "the ratchet reverted: {first}"
    );
    assert!(
        r.read("check.sh").contains("ok 1 - t1"),
        "the rewrite stayed"
    );
    next_run_judges_the_rewritten_check(&r);
}

/// A check in place that creates runner configuration (`pytest.ini`) leaves it in the
/// working tree for every later check and run: a write to the tree it judged,
/// `hermeticity_violation` naming it, and the next run refuses the tree that keeps
/// it. Before: the file was recorded as created only; a review's green check planted
/// a `pytest.ini` deselecting a test, and the next task's run was green on it.
#[test]
fn a_check_in_place_that_creates_runner_configuration_is_not_hermetic() {
    let r = tap_repo(1);
    r.tap_check(&format!(
        "[ -f pytest.ini ] || printf '[pytest]\\n' > pytest.ini\n{TAP_CHECK}"
    ))
    .commit("check");
    let first = r
        .lx_tap(
            PROGRESS_AGENT,
            &["--run-id", "ini", "--check-in-place", "--sandbox", "off"],
        )
        .expect(14, Some("hermeticity_violation"));
    assert!(mentions(&first, "pytest.ini"), "{first}");
    let again = r
        .lx_tap(
            "true",
            &[
                "--run-id",
                "after",
                "--ack-required",
                "false",
                "--check-in-place",
            ],
        )
        .expect(14, Some("hermeticity_violation"));
    assert!(mentions(&again, "run ini rejected"), "{again}");
}

/// A fourth review: pytest's start imports the standard library's `copy`, which tries
/// `from org.python.core import PyStringMap`; a new root package `org/` then ran
/// before any file of the tree and patched the code under test (exit 10 in the clean
/// room and in place). A new file whose code runs before any file of the tree is now
/// written down the moment it runs, and the run is not green.
#[test]
fn a_new_module_the_interpreter_imports_on_its_own_is_not_code_under_test() {
    if pytest_missing() {
        return;
    }
    for in_place in [false, true] {
        let r = pytest_repo();
        let (_keep, exec) = writer(&[("org/__init__.py", SWAP)]);
        let mut args = vec![
            "run",
            "--exec",
            &exec,
            "--check",
            "python3 -m pytest -q -p no:cacheprovider",
            "--max-iterations",
            "2",
        ];
        if in_place {
            args.push("--check-in-place");
        }
        let out = r.lx(&args);
        assert_ne!(out.code, 10, "in place {in_place}: org/ patched the code");
        let v = out.expect(13, Some("metric_integrity_violation"));
        assert!(mentions(&v, "org/__init__.py"), "{v}");
    }
}

/// A false-alarm review's honest fix logged its caller through a held frame
/// (`frame = sys._getframe(1)`, printed to stderr) and halted 13 as runner
/// introspection. Now a frame kept only to print converges; the same frame whose
/// caller's file name decides the sum still halts 13.
#[test]
fn a_frame_kept_for_a_log_line_converges_and_one_that_decides_does_not() {
    if pytest_missing() {
        return;
    }
    let log = "import os\nimport sys\n\n\ndef debug(msg):\n    frame = sys._getframe(1)\n    where = f\"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}\"\n    print(f\"[{where}] {msg}\", file=sys.stderr)\n";
    let honest = "from log import debug\n\n\ndef add(a, b):\n    debug(f\"add({a}, {b})\")\n    return a + b\n";
    // (two frames up is the test function, in the test's file)
    let cheat_log = log.replace("_getframe(1)", "_getframe(2)").replace(
        "    print(f\"[{where}] {msg}\", file=sys.stderr)\n",
        "    return \"test_\" in where\n",
    );
    let cheat = "from log import debug\n\n\ndef add(a, b):\n    return a + b if debug(\"add\") else a - b\n";
    for (name, log, calc, want) in [
        ("honest", log.to_string(), honest, "success_condition_met"),
        ("decides", cheat_log, cheat, "metric_integrity_violation"),
    ] {
        let r = pytest_repo();
        let (_dir, exec) = writer(&[("log.py", &log), ("calc.py", calc)]);
        let v = run_pytest(&r, &exec);
        assert_eq!(v.json()["halt_reason"], want, "{name}: {}", v.json());
    }
}
