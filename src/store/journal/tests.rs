use super::*;

fn how(method: &str) -> AckHow {
    AckHow {
        method: method.into(),
        key: None,
        os_user: None,
    }
}

fn line(seq: u64, at: &str, d: Decision) -> Line {
    Line {
        seq,
        at: at.into(),
        prev: None,
        decision: d,
    }
}

fn taken(id: &str, scope: &str) -> Decision {
    Decision::HoldTaken {
        hold_id: id.into(),
        scope: scope.into(),
        strength: "stopped".into(),
        holder: "alice".into(),
        reason: "look".into(),
        taken_at: "2026-01-01T00:00:00Z".into(),
    }
}

fn released(id: &str) -> Decision {
    Decision::HoldReleased {
        hold_id: id.into(),
        by: "alice".into(),
    }
}

/// (case, decisions, active hold ids, latched runs, answered action ids)
type FoldCase = (
    &'static str,
    Vec<Decision>,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

#[test]
fn the_fold_is_what_is_in_force() {
    let cases: Vec<FoldCase> = vec![
        ("nothing", vec![], &[], &[], &[]),
        (
            "a hold taken holds",
            vec![taken("h1", "workspace")],
            &["h1"],
            &[],
            &[],
        ),
        (
            "a release ends it",
            vec![taken("h1", "workspace"), released("h1")],
            &[],
            &[],
            &[],
        ),
        (
            "a release names one hold",
            vec![
                taken("h1", "workspace"),
                taken("h2", "run:r"),
                released("h2"),
            ],
            &["h1"],
            &[],
            &[],
        ),
        (
            "a hold re-taken under a released id stays released",
            vec![taken("h1", "global"), released("h1"), taken("h1", "global")],
            &[],
            &[],
            &[],
        ),
        (
            "a latch set holds until cleared",
            vec![Decision::Latched {
                run_id: "r".into(),
                reason: "stop".into(),
                halt_id: "e1".into(),
            }],
            &[],
            &["r"],
            &[],
        ),
        (
            "a cleared latch is gone",
            vec![
                Decision::Latched {
                    run_id: "r".into(),
                    reason: "stop".into(),
                    halt_id: "e1".into(),
                },
                Decision::LatchCleared { run_id: "r".into() },
            ],
            &[],
            &[],
            &[],
        ),
        (
            "the first answer stands",
            vec![
                Decision::PendingDecided {
                    action_id: "a1".into(),
                    decision: "denied".into(),
                    by: "alice".into(),
                },
                Decision::PendingDecided {
                    action_id: "a1".into(),
                    decision: "confirmed".into(),
                    by: "mallory".into(),
                },
            ],
            &[],
            &[],
            &["a1"],
        ),
    ];
    for (name, decisions, holds, latched, answered) in cases {
        let lines: Vec<Line> = decisions
            .into_iter()
            .enumerate()
            .map(|(i, d)| line(i as u64, "2026-01-01T00:00:01Z", d))
            .collect();
        let s = State::fold(&lines);
        let got: Vec<&str> = s.holds.keys().map(String::as_str).collect();
        assert_eq!(got, holds, "{name}: holds");
        let got: Vec<&str> = s.latches.keys().map(String::as_str).collect();
        assert_eq!(got, latched, "{name}: latches");
        let got: Vec<&str> = s.answers.keys().map(String::as_str).collect();
        assert_eq!(got, answered, "{name}: answers");
        if name == "the first answer stands" {
            assert_eq!(s.answers["a1"].0, "denied");
        }
    }
}

#[test]
fn an_event_is_acknowledged_by_its_own_ack_or_a_later_run_ack() {
    let lines = vec![
        line(
            0,
            "2026-01-01T00:00:05Z",
            Decision::EventAcked {
                halt_id: "e1".into(),
                by: "alice".into(),
                resolution: "dismissed".into(),
                how: how("terminal"),
            },
        ),
        line(
            1,
            "2026-01-01T00:00:10Z",
            Decision::RunAcked {
                run_id: "r".into(),
                reviewer: "bob".into(),
                iteration: 3,
                how: how("ssh_signature"),
            },
        ),
    ];
    let s = State::fold(&lines);
    // (halt id, run, triggered at, acknowledged by)
    let cases: &[(&str, &str, &str, Option<&str>)] = &[
        ("e1", "r", "2026-01-01T00:00:01Z", Some("alice")),
        ("e2", "r", "2026-01-01T00:00:09Z", Some("bob")),
        ("e3", "r", "2026-01-01T00:00:10Z", Some("bob")),
        ("e4", "r", "2026-01-01T00:00:11Z", None),
        ("e5", "other", "2026-01-01T00:00:01Z", None),
    ];
    for (id, run, at, by) in cases {
        let got = s.ack_of(id, run, at);
        assert_eq!(got.as_ref().map(|a| a.by.as_str()), *by, "{id}");
    }
    assert_eq!(
        s.ack_of("e2", "r", "2026-01-01T00:00:09Z")
            .unwrap()
            .how
            .method,
        "ssh_signature"
    );
}

fn journal() -> (tempfile::TempDir, Journal) {
    let d = tempfile::tempdir().unwrap();
    let j = Journal::at(d.path().join("journals/x.jsonl"));
    (d, j)
}

#[test]
fn a_missing_journal_is_empty_and_appends_chain() {
    let (_d, j) = journal();
    assert!(j.lines().unwrap().is_empty());
    j.append(taken("h1", "workspace")).unwrap();
    j.append(released("h1")).unwrap();
    let lines = j.lines().unwrap();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].prev, None);
    let first = std::fs::read(j.path()).unwrap();
    let first = &first[..first.iter().position(|b| *b == b'\n').unwrap()];
    assert_eq!(
        lines[1].prev.as_deref(),
        Some(blake3::hash(first).to_hex().as_str())
    );
    assert!(j.state().unwrap().holds.is_empty());
}

#[test]
fn every_edit_of_the_file_breaks_it() {
    // (case, edit of the file's text, broken line)
    type Edit = fn(String) -> String;
    let cases: &[(&str, Edit, u64)] = &[
        (
            "a line removed",
            |t| t.lines().skip(1).map(|l| format!("{l}\n")).collect(),
            1,
        ),
        (
            "a release rewritten as a take",
            |t| t.replacen("hold_released", "hold_taken", 1),
            2,
        ),
        (
            "the holder renamed",
            |t| t.replacen("\"alice\"", "\"mallory\"", 1),
            2,
        ),
        ("cut mid-line", |t| t[..t.len() - 5].to_string(), 3),
        (
            "a forged line appended without the chain",
            |t| {
                format!(
                    "{t}{{\"seq\":3,\"at\":\"2026-01-01T00:00:00Z\",\"prev\":null,\"kind\":\"hold_released\",\"hold_id\":\"h2\",\"by\":\"agent\"}}\n"
                )
            },
            4,
        ),
        ("not JSON", |t| format!("{t}oops\n"), 4),
    ];
    for (name, edit, at) in cases {
        let (_d, j) = journal();
        j.append(taken("h1", "workspace")).unwrap();
        j.append(released("h1")).unwrap();
        j.append(taken("h2", "workspace")).unwrap();
        let text = std::fs::read_to_string(j.path()).unwrap();
        std::fs::write(j.path(), edit(text)).unwrap();
        match j.lines() {
            Err(JournalError::Broken { line, .. }) => assert_eq!(line, *at, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
        assert!(
            j.append(released("h2")).is_err(),
            "{name}: nothing is appended to a broken chain"
        );
    }
}

#[test]
fn the_path_is_per_ledger_and_outside_the_workdir() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a/.loopexec");
    let b = d.path().join("b/.loopexec");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let state = d.path().join("state");
    let pa = path_for(&state, &a.join("ledger.sqlite"));
    let pb = path_for(&state, &b.join("ledger.sqlite"));
    assert_ne!(pa, pb);
    assert!(pa.starts_with(state.join("journals")));
    // The same ledger named through another path is the same journal.
    let via = d.path().join("a/../a/.loopexec/ledger.sqlite");
    assert_eq!(path_for(&state, &via), pa);
    // The workspace directory is named, not resolved: moved away and replaced by a
    // symlink, it still names the workdir's journal.
    let moved = d.path().join("moved");
    std::fs::rename(&a, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &a).unwrap();
    assert_eq!(path_for(&state, &a.join("ledger.sqlite")), pa);
}

/// A start is kept with its line: the fold names the run started last, the kept line
/// reads back only under its own blake3, and `drop_started` removes it. A run id that
/// is not a plain file name is refused, never written outside the copies' directory.
#[test]
fn a_start_is_kept_with_its_line() {
    let (_d, j) = journal();
    j.keep_started("r1", br#"{"event":"run_started","n":1}"#)
        .unwrap();
    j.keep_started("r2", br#"{"event":"run_started","n":2}"#)
        .unwrap();
    let s = j.state().unwrap();
    assert_eq!(s.last_started.as_deref(), Some("r2"));
    let h1 = s.started["r1"].clone();
    assert_eq!(
        h1,
        blake3::hash(br#"{"event":"run_started","n":1}"#)
            .to_hex()
            .as_str()
    );
    assert_eq!(
        j.started_line("r1", &h1).as_deref(),
        Some(&br#"{"event":"run_started","n":1}"#[..])
    );
    // another run's digest, or a copy rewritten, is no kept line
    assert_eq!(j.started_line("r2", &h1), None);
    let copy = j
        .path()
        .with_file_name(format!(
            "{}.started",
            j.path().file_stem().unwrap().to_str().unwrap()
        ))
        .join("r1.jsonl");
    std::fs::write(&copy, "{\"event\":\"run_started\",\"n\":9}\n").unwrap();
    assert_eq!(j.started_line("r1", &h1), None);
    j.drop_started("r1").unwrap();
    assert!(!copy.exists());
    j.drop_started("r1").unwrap();
    for bad in ["", "../x", ".hidden", "a/b"] {
        assert!(j.keep_started(bad, b"{}").is_err(), "{bad:?}");
    }
    assert_eq!(j.state().unwrap().started.len(), 2);
}
