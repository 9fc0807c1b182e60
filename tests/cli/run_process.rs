//! Child processes: timeouts end whole groups, leaked grandchildren are ended, huge
//! and invalid output is bounded and safe, and signals to loopexec end in a receipt.

use crate::support::*;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn check_timeout_ends_the_whole_process_group() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 4171"]);
    let out = r.lx(&[
        "run",
        "--exec",
        "true",
        "--check",
        r#"sh -c "sleep 4171"; true"#,
        "--check-timeout",
        "1s",
        "--max-iterations",
        "3",
    ]);
    let v = out.expect(40, Some("execution_failure"));
    assert!(v["iteration"].as_u64().unwrap() <= 1, "{v}");
    assert_took_under(&out, 20);
    assert_none_left("sleep 4171", "the timed-out check");
    let lines = receipt_of(&v);
    let checks = events(&lines, "check_finished");
    assert!(
        checks.iter().any(|c| c["step"]["timed_out"] == true),
        "no check_finished records the timeout"
    );
}

#[test]
fn a_check_ignoring_sigterm_is_killed_after_the_grace() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 4178"]);
    let out = r.lx(&[
        "run",
        "--exec",
        "true",
        "--check",
        r#"trap "" TERM; sh -c 'trap "" TERM; sleep 4178'; true"#,
        "--check-timeout",
        "1s",
        "--kill-grace",
        "1s",
        "--max-iterations",
        "2",
    ]);
    out.expect(40, Some("execution_failure"));
    assert_took_under(&out, 20);
    assert_none_left("sleep 4178", "a TERM-ignoring check");
}

#[test]
fn a_background_child_holding_the_pipe_does_not_block_and_is_ended() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 4172"]);
    let out = r.lx(&[
        "run",
        "--exec",
        "true",
        "--check",
        "sleep 4172 & exit 0",
        "--max-iterations",
        "2",
    ]);
    let v = out.expect(10, Some("success_condition_met"));
    assert!(
        out.elapsed < Duration::from_secs(20),
        "blocked {:?}",
        out.elapsed
    );
    let left = leftovers_after("sleep 4172", Duration::from_secs(3));
    assert!(
        left.is_empty(),
        "the leaked child {left:?} is still running"
    );
    let lines = receipt_of(&v);
    let checks = events(&lines, "check_finished");
    assert!(!checks.is_empty());
    assert!(
        checks.iter().all(|c| c["step"]["leaked_processes"] == true),
        "check_finished does not record leaked_processes: {:?}",
        checks.iter().map(|c| &c["step"]).collect::<Vec<_>>()
    );
}

/// Peak RSS (KiB) of a loopexec run: `/usr/bin/time -f %M` when present, else VmHWM
/// polled from /proc (the last reading before exit).
fn run_measuring_rss(r: &Repo, args: &[&str]) -> (Out, u64) {
    let time = std::path::Path::new("/usr/bin/time");
    if time.exists() {
        let rss_file = r.outside().join("rss");
        let mut cmd = Command::new(time);
        cmd.arg("-f")
            .arg("%M")
            .arg("-o")
            .arg(&rss_file)
            .arg(bin())
            .arg("--json")
            .arg("--workdir")
            .arg(r.path())
            .args(args)
            .current_dir(r.path());
        let out = run_cmd(cmd);
        let text = std::fs::read_to_string(&rss_file).expect("time output");
        let kib = text
            .lines()
            .rev()
            .find_map(|l| l.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no RSS in {text:?}"));
        return (out, kib);
    }
    let start = Instant::now();
    let mut child = r.spawn(args);
    let pid = child.id();
    let mut so = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = std::io::Read::read_to_end(&mut so, &mut b);
        b
    });
    let mut peak = 0u64;
    let status = loop {
        if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            for l in s.lines() {
                if let Some(rest) = l.strip_prefix("VmHWM:") {
                    let kb: u64 = rest
                        .trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse()
                        .unwrap_or(0);
                    peak = peak.max(kb);
                }
            }
        }
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < HANG_LIMIT, "loopexec hung");
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = reader.join().unwrap();
    let out = Out {
        code: code_of(status),
        stdout,
        stderr: String::new(),
        elapsed: start.elapsed(),
    };
    (out, peak)
}

#[test]
fn a_check_printing_one_gib_keeps_memory_bounded() {
    let r = Repo::with_f();
    let (out, rss_kib) = run_measuring_rss(
        &r,
        &[
            "run",
            "--exec",
            "true",
            "--check",
            "head -c 1073741824 /dev/zero; exit 1",
            "--max-iterations",
            "1",
        ],
    );
    let v = out.expect(12, Some("max_iterations_reached"));
    assert!(rss_kib > 0, "no RSS measured");
    assert!(
        rss_kib < 128 * 1024,
        "peak RSS {rss_kib} KiB for 1 GiB of check output"
    );
    let lines = receipt_of(&v);
    let checks = events(&lines, "check_finished");
    assert!(
        checks
            .iter()
            .any(|c| c["step"]["stdout"]["bytes"].as_u64() == Some(1_073_741_824)),
        "the full stream size is not recorded"
    );
    // The captured files stay bounded too.
    let total: u64 = files_under(&r.path().join(".loopexec"))
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    assert!(total < 64 << 20, ".loopexec holds {total} bytes");
}

#[test]
fn invalid_utf8_output_keeps_the_json_and_receipt_valid() {
    let r = Repo::with_f();
    let out = r.lx(&[
        "run",
        "--exec",
        r#"printf "\377\376agent\200\n"; printf "\377err\n" >&2"#,
        "--check",
        r#"printf "bad \303\050 bytes\n"; exit 1"#,
        "--max-iterations",
        "1",
    ]);
    // `json()` parses stdout as UTF-8 and checks the shape.
    let v = out.expect(12, Some("max_iterations_reached"));
    let lines = receipt_of(&v);
    assert_eq!(events(&lines, "exec_finished").len(), 1);
    // The read commands still work on that receipt.
    r.lx(&["report"]).expect(0, None);
    r.lx(&["explain-halt"]).expect(0, None);
}

/// Starts a run whose exec hangs on `marker`, and waits until that exec is running.
fn start_hanging_run(r: &Repo, marker: &str) -> ChildGuard {
    let exec = format!("{marker}; touch done");
    spawn_wedged(r, None, marker, &exec, "test -f done")
}

#[test]
fn sigint_mid_run_halts_human_required_and_ends_children() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 4173"]);
    let mut run = start_hanging_run(&r, "sleep 4173");
    let pid = i32::try_from(run.child().id()).unwrap();
    let start = Instant::now();
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let (status, stdout, stderr) = wait_with_output(run.child(), HANG_LIMIT);
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "took {:?} to stop after SIGINT",
        start.elapsed()
    );
    let out = Out {
        code: code_of(status),
        stdout,
        stderr,
        elapsed: start.elapsed(),
    };
    let v = out.expect(11, Some("human_required"));
    let left = leftovers_after("sleep 4173", Duration::from_secs(3));
    assert!(left.is_empty(), "children left after SIGINT: {left:?}");
    let lines = receipt_of(&v);
    let last = lines.last().unwrap();
    assert_eq!(last["event"], "halted", "last receipt line: {last}");
    assert_eq!(last["halt_reason"], "human_required");
    assert!(
        !r.path().join("done").exists(),
        "the exec ran to completion"
    );
}

#[test]
fn sigkill_mid_run_leaves_a_parseable_receipt_and_the_next_run_works() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 4174"]);
    let mut run = start_hanging_run(&r, "sleep 4174");
    run.child().kill().unwrap();
    run.child().wait().unwrap();
    // loopexec cannot clean up after SIGKILL; end its orphaned exec ourselves.
    drop(ProcGuard::new(&["sleep 4174"]));
    let receipts: Vec<_> = files_under(&r.path().join(".loopexec/runs"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(receipts.len(), 1, "{receipts:?}");
    let lines = verify_receipt(&receipts[0]);
    assert!(
        !events(&lines, "iteration_started").is_empty(),
        "the receipt was not written ahead of the exec"
    );
    assert!(events(&lines, "halted").is_empty());
    r.lx(&["check"]).expect(0, None);
    // The watchdog sees a run whose process is gone without a halt.
    let w = r.lx(&["watch"]);
    w.expect(19, Some("heartbeat_stale"));
    let st = r.lx(&["status"]).expect(0, None);
    assert_eq!(st["alive"], false, "{st}");
    let out = r.lx(&["run", "--exec", "true", "--check", "true"]);
    let v = out.expect(10, Some("success_condition_met"));
    receipt_of(&v);
}

#[test]
fn sigint_during_the_check_ends_the_check_and_halts_human_required() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 4183"]);
    let mut run = spawn_wedged(
        &r,
        None,
        "sleep 4183",
        "touch marker",
        // the sleep named through a variable: the shell's own command line (the
        // baseline check's too) must not hold the marker the wait looks for
        "if [ -f marker ]; then n=4183; sleep $n; fi; false",
    );
    let pid = i32::try_from(run.child().id()).unwrap();
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let out = finish(&mut run, Duration::from_secs(20));
    let v = out.expect(11, Some("human_required"));
    assert_eq!(v["iteration"], 1, "{v}");
    assert_none_left("sleep 4183", "the check");
    let lines = receipt_of(&v);
    assert_eq!(lines.last().unwrap()["event"], "halted");
}

/// Ctrl-C during the baseline check: the interrupted check measured nothing. Before,
/// it read as a red baseline ("1 failing of 0 collected") and `--resume` went on to
/// iteration 1 judging from it (a new user's review). Now the report shows it
/// `interrupted`, and the resumed run measures the baseline again before any exec.
#[test]
fn an_interrupted_baseline_is_no_verdict_and_resume_measures_it_again() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 4187"]);
    let slow = r.outside().join("slow");
    std::fs::write(&slow, "").unwrap();
    let check = format!(
        "if [ -f '{}' ]; then n=4187; sleep $n; fi; test -f fixed",
        slow.display()
    );
    let mut run = spawn_wedged(&r, Some("ib"), "sleep 4187", "touch fixed", &check);
    let pid = i32::try_from(run.child().id()).unwrap();
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let v = finish(&mut run, Duration::from_secs(20)).expect(11, Some("human_required"));
    assert_eq!(v["iteration"], 0, "{v}");
    let rep = r.lx(&["report", "ib"]).expect(0, None);
    assert_eq!(rep["iterations"][0]["verdict"], "interrupted", "{rep}");
    std::fs::remove_file(&slow).unwrap();
    let v = r
        .lx(&["run", "--resume", "ib"])
        .expect(10, Some("success_condition_met"));
    let lines = receipt_of(&v);
    let resumed = lines
        .iter()
        .position(|l| l["event"] == "resumed")
        .expect("a resumed event");
    // the first exec after the resume is told why the run had stopped
    assert!(
        lines[resumed]["resume_reason"]
            .as_str()
            .is_some_and(|r| r.contains("SIGINT")),
        "{}",
        lines[resumed]
    );
    let next = lines[resumed + 1..]
        .iter()
        .find(|l| l["event"] == "check_finished" || l["event"] == "exec_finished")
        .unwrap();
    assert_eq!(next["event"], "check_finished", "{next}");
    assert_eq!(next["iteration"], 0, "{next}");
    let rep = r.lx(&["report", "ib"]).expect(0, None);
    assert_eq!(rep["iterations"][0]["verdict"], "red", "{rep}");
}

/// A new user's Ctrl-C landed while a green was being confirmed, and `run --resume`
/// started the next iteration: another agent turn on a tree already green. Now the
/// resumed run confirms that green and converges without running the agent again.
#[test]
fn a_resume_after_an_interrupted_confirmation_confirms_without_another_exec() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 4189"]);
    let slow = r.outside().join("slow");
    let count = r.outside().join("checks");
    let execs = r.outside().join("execs");
    std::fs::write(&slow, "").unwrap();
    // the baseline is red, iteration 1's check green, its confirmation hangs
    let check = format!(
        "n=$(cat '{c}' 2>/dev/null || echo 0); echo $((n+1)) > '{c}'; if [ -f fixed ] && [ $n -ge 2 ] && [ -f '{s}' ]; then n=4189; sleep $n; fi; test -f fixed",
        c = count.display(),
        s = slow.display()
    );
    let exec = format!("echo x >> '{}'; touch fixed", execs.display());
    let mut run = spawn_wedged(&r, Some("cf"), "sleep 4189", &exec, &check);
    let pid = i32::try_from(run.child().id()).unwrap();
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    finish(&mut run, Duration::from_secs(20)).expect(11, Some("human_required"));
    std::fs::remove_file(&slow).unwrap();
    let v = r
        .lx(&["run", "--resume", "cf"])
        .expect(10, Some("success_condition_met"));
    assert_eq!(v["iteration"], 1, "{v}");
    let runs = std::fs::read_to_string(&execs).unwrap();
    assert_eq!(
        runs.lines().count(),
        1,
        "the agent ran again after the resume"
    );
}

/// An iteration's check stopped by a signal is checked again on the tree that
/// iteration's exec left: resuming neither puts the last accepted tree back nor judges
/// another (a new user's fix was undone and re-checked red).
#[test]
fn resuming_an_interrupted_check_keeps_the_tree_its_exec_left() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 4188"]);
    let slow = r.outside().join("slow");
    std::fs::write(&slow, "").unwrap();
    let check = format!(
        "if [ -f fixed ] && [ -f '{}' ]; then n=4188; sleep $n; fi; test -f fixed",
        slow.display()
    );
    let mut run = spawn_wedged(&r, Some("ic"), "sleep 4188", "touch fixed", &check);
    let pid = i32::try_from(run.child().id()).unwrap();
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let v = finish(&mut run, Duration::from_secs(20)).expect(11, Some("human_required"));
    assert_eq!(v["iteration"], 1, "{v}");
    // The interrupted check is no verdict to replay (a new user's `replay` called it
    // "1 failing" and disagreed, exit 20); the baseline still agrees.
    let rep = r.lx(&["replay", "ic"]).expect(0, None);
    assert_eq!(rep["iterations"][1]["verdict"], "interrupted", "{rep}");
    assert_eq!(rep["iterations"][0]["verdict"], "agrees", "{rep}");
    std::fs::remove_file(&slow).unwrap();
    let v = r
        .lx(&["run", "--resume", "ic"])
        .expect(10, Some("success_condition_met"));
    assert_eq!(v["iteration"], 1, "{v}");
    assert!(
        r.path().join("fixed").exists(),
        "the exec's change was undone"
    );
}

#[test]
fn show_agent_output_streams_both_of_the_agents_streams_to_stderr() {
    let r = Repo::with_file("c", "0\n");
    let out = r.lx(&[
        "--quiet",
        "run",
        "--show-agent-output",
        "--exec",
        "echo to-out; echo to-err >&2; printf 'no newline' >&2; echo 1 > c",
        "--check",
        "grep -q 1 c",
    ]);
    let v = out.expect(10, Some("success_condition_met"));
    let mut lines: Vec<&str> = out.stderr.lines().collect();
    lines.sort_unstable();
    assert_eq!(
        lines,
        ["agent! no newline", "agent! to-err", "agent| to-out"],
        "{}",
        out.stderr
    );
    // Stdout stays the one JSON object; the check's output is never streamed.
    assert_eq!(v["halt_reason"], "success_condition_met");
}

#[test]
fn a_step_that_prints_nothing_leaves_no_capture_files() {
    let r = Repo::with_f();
    let out = r.run_red(1);
    let v = out.expect(12, Some("max_iterations_reached"));
    let run_dir = r
        .path()
        .join(".loopexec/runs")
        .join(v["run_id"].as_str().unwrap());
    let names: Vec<String> = std::fs::read_dir(&run_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| !n.ends_with(".spool") && !n.ends_with(".stdout") && !n.ends_with(".stderr")),
        "spools or empty excerpts left: {names:?}"
    );
    let lines = receipt_of(&v);
    let check = &events(&lines, "check_finished")[0];
    assert_eq!(check["step"]["stdout"]["excerpt"], serde_json::Value::Null);
    assert_eq!(check["step"]["stdout"]["bytes"], 0);
}

/// A refused `--resume` of a converged run leaves that run's record as it was. Before,
/// the refusal was written into the run's ledger row, and from then on `check` found
/// the ledger and the receipt disagreeing and `explain-halt` called the run
/// unrecorded (a new user's mistyped resume).
#[test]
fn a_refused_resume_leaves_the_named_runs_record_untouched() {
    let r = Repo::with_f();
    r.lx(&[
        "run",
        "--run-id",
        "done",
        "--exec",
        "touch fixed",
        "--check",
        "test -f fixed",
    ])
    .expect(10, Some("success_condition_met"));
    let refused = r
        .lx(&["run", "--resume", "done"])
        .expect(20, Some("invariant_failed"));
    assert!(mentions(&refused, "done"), "{refused}");
    r.lx(&["check"]).expect(0, None);
    let v = r
        .lx(&["explain-halt", "done"])
        .expect(0, Some("success_condition_met"));
    assert_eq!(v["recorded"], true, "{v}");
}

/// `--resume` of a run still going is refused as a second start is (exit 30, naming
/// the live run), not as a run whose loopexec died: its receipt has no halt yet only
/// because it is still running (a new user's review).
#[test]
fn resuming_a_live_run_names_it_as_running() {
    let r = Repo::with_f();
    let _g = ProcGuard::new(&["sleep 4191"]);
    let run = spawn_wedged(&r, Some("live"), "sleep 4191", "sleep 4191", "false");
    let v = r
        .lx(&["run", "--resume", "live"])
        .expect(30, Some("workspace_invalid"));
    assert!(mentions(&v, "in use by run `live`"), "{v}");
    assert!(!mentions(&v, "ended before recording a halt"), "{v}");
    drop(run);
}

/// A resumed run whose loopexec is killed before its next halt reads as a run that
/// has not halted since its resume: `explain-halt` says so (exit 1, as for a run that
/// died before its first halt) and `runs` lists it so. Before, both called it a
/// receipt no run of this workspace recorded (exit 13), as for a planted one (a new
/// user's review).
#[test]
fn a_resumed_run_killed_before_its_halt_is_not_called_planted() {
    let r = Repo::with_f();
    let trigger = r.outside().join("die");
    let exec = format!("if [ -f '{}' ]; then kill -9 $PPID; fi", trigger.display());
    r.lx(&[
        "run",
        "--run-id",
        "cap",
        "--exec",
        &exec,
        "--check",
        "false",
        "--max-iterations",
        "1",
        "--sandbox",
        "off",
    ])
    .expect(12, Some("max_iterations_reached"));
    std::fs::write(&trigger, "").unwrap();
    let killed = r.lx(&["run", "--resume", "cap", "--max-iterations", "3"]);
    assert_eq!(killed.code, 137, "{}", killed.stderr);
    let out = r.lx(&["explain-halt", "cap"]).expect(1, None);
    assert!(mentions(&out, "has not halted since its resume"), "{out}");
    let runs = r.lx(&["runs"]).expect(0, None);
    assert_eq!(runs["unrecorded"], serde_json::json!([]), "{runs}");
    assert!(runs["runs"][0]["halt_reason"].is_null(), "{runs}");
}
