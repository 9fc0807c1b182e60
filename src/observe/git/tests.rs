//! Tests for the git observer, on real temporary repositories.
use super::testutil::{commit_all, g, repo, write};
use super::*;

fn porcelain(d: &Path) -> String {
    g(d, &["status", "--porcelain=v1", "--untracked-files=all"])
}

fn dirty_fixture() -> tempfile::TempDir {
    let d = repo();
    let p = d.path();
    write(p, ".gitignore", "target/\n*.log\n");
    write(p, "a.txt", "a\n");
    write(p, "b.txt", "b\n");
    write(p, "src/lib.rs", "pub fn f() {}\n");
    commit_all(p, "base");
    write(p, "a.txt", "a staged\n");
    g(p, &["add", "a.txt"]);
    write(p, "b.txt", "b unstaged\n");
    write(p, "new.txt", "untracked\n");
    write(p, "target/out.bin", "ignored\n");
    write(p, "x.log", "ignored\n");
    write(p, ".loopexec/runs/r.jsonl", "{}\n");
    d
}

#[test]
fn snapshot_records_working_tree_and_leaves_user_state_alone() {
    let d = dirty_fixture();
    let p = d.path();
    let before_status = porcelain(p);
    let before_head = g(p, &["rev-parse", "HEAD"]);
    let before_index = std::fs::read(p.join(".git/index")).unwrap();
    let s = snapshot(p, "run1", "t0").unwrap();
    let files = list_files(p, &s.tree).unwrap();
    assert_eq!(
        files,
        vec![".gitignore", "a.txt", "b.txt", "new.txt", "src/lib.rs"]
    );
    assert_eq!(
        read_blob(p, &s.tree, "a.txt").unwrap().unwrap(),
        b"a staged\n"
    );
    assert_eq!(
        read_blob(p, &s.commit, "b.txt").unwrap().unwrap(),
        b"b unstaged\n"
    );
    assert_eq!(read_blob(p, &s.tree, "missing.txt").unwrap(), None);
    assert!(matches!(
        read_blob(p, &s.tree, "src"),
        Err(GitError::NotABlob { .. })
    ));
    assert_eq!(porcelain(p), before_status);
    assert_eq!(g(p, &["rev-parse", "HEAD"]), before_head);
    assert_eq!(std::fs::read(p.join(".git/index")).unwrap(), before_index);
    assert!(g(p, &["stash", "list"]).is_empty());
    assert!(ref_exists(p, "refs/loopexec/run1/t0").unwrap());
    // The snapshot commit's parent is HEAD.
    assert_eq!(g(p, &["rev-parse", &format!("{}^", s.commit)]), before_head);
}

#[test]
fn identical_trees_give_identical_ids_and_edits_do_not() {
    let d = dirty_fixture();
    let p = d.path();
    let a = snapshot(p, "r", "t0").unwrap();
    write(p, ".loopexec/runs/r.jsonl", "{}\n{}\n"); // loopexec's own files never count
    write(p, "target/more", "x");
    let b = snapshot(p, "r", "i1").unwrap();
    assert_eq!(a.tree, b.tree);
    write(p, "b.txt", "changed\n");
    let c = snapshot(p, "r", "i2").unwrap();
    assert_ne!(a.tree, c.tree);
    let ch = changed_paths(p, &a.tree, &c.tree).unwrap();
    assert_eq!(
        ch,
        vec![PathChange {
            path: "b.txt".into(),
            status: ChangeKind::Modified
        }]
    );
}

#[test]
fn snapshot_works_on_unborn_branch_without_identity() {
    let d = repo();
    let p = d.path();
    write(p, "f.txt", "x\n");
    assert_eq!(head(p).unwrap(), None);
    assert!(is_dirty(p).unwrap());
    let s = snapshot(p, "r", "t0").unwrap();
    assert_eq!(list_files(p, &s.tree).unwrap(), vec!["f.txt"]);
    assert_eq!(head(p).unwrap(), None, "HEAD stays unborn");
}

#[test]
fn restore_removes_added_and_restores_deleted_and_modified() {
    let d = dirty_fixture();
    let p = d.path();
    let t0 = snapshot(p, "r", "t0").unwrap();
    let status0 = porcelain(p);
    let head0 = g(p, &["rev-parse", "HEAD"]);
    std::fs::remove_file(p.join("src/lib.rs")).unwrap();
    write(p, "b.txt", "agent edit\n");
    write(p, "added/by/agent.txt", "new\n");
    write(p, "x.log", "ignored, changed\n");
    restore(p, &t0.commit).unwrap();
    assert_eq!(
        std::fs::read_to_string(p.join("src/lib.rs")).unwrap(),
        "pub fn f() {}\n"
    );
    assert_eq!(
        std::fs::read_to_string(p.join("b.txt")).unwrap(),
        "b unstaged\n"
    );
    assert!(!p.join("added/by/agent.txt").exists());
    assert!(!p.join("added").exists(), "emptied directories are removed");
    assert_eq!(
        std::fs::read_to_string(p.join("x.log")).unwrap(),
        "ignored, changed\n"
    );
    assert!(p.join(".loopexec/runs/r.jsonl").exists());
    assert_eq!(porcelain(p), status0);
    assert_eq!(g(p, &["rev-parse", "HEAD"]), head0);
    let again = snapshot(p, "r", "after").unwrap();
    assert_eq!(again.tree, t0.tree);
}

#[test]
fn changed_paths_sees_ci_edit_and_renames_as_two_entries() {
    let d = repo();
    let p = d.path();
    write(p, ".github/workflows/ci.yml", "on: push\n");
    write(p, "old name.txt", "content\n");
    commit_all(p, "base");
    let a = snapshot(p, "r", "t0").unwrap();
    write(p, ".github/workflows/ci.yml", "on: push\n# relaxed\n");
    std::fs::rename(p.join("old name.txt"), p.join("névé.txt")).unwrap();
    let b = snapshot(p, "r", "i1").unwrap();
    let ch = changed_paths(p, &a.tree, &b.tree).unwrap();
    assert_eq!(
        ch,
        vec![
            PathChange {
                path: ".github/workflows/ci.yml".into(),
                status: ChangeKind::Modified
            },
            PathChange {
                path: "névé.txt".into(),
                status: ChangeKind::Added
            },
            PathChange {
                path: "old name.txt".into(),
                status: ChangeKind::Deleted
            },
        ]
    );
}

#[test]
fn refs_are_validated_listed_and_deleted() {
    let d = repo();
    let p = d.path();
    write(p, "f", "1");
    assert!(matches!(
        snapshot(p, "../x", "t0"),
        Err(GitError::InvalidRefComponent(_))
    ));
    assert!(matches!(
        snapshot(p, "r", "a b"),
        Err(GitError::InvalidRefComponent(_))
    ));
    snapshot(p, "r", "t0").unwrap();
    snapshot(p, "r", "i1").unwrap();
    snapshot(p, "other", "t0").unwrap();
    assert_eq!(delete_refs(p, "r").unwrap(), 2);
    assert!(!ref_exists(p, "refs/loopexec/r/t0").unwrap());
    assert!(ref_exists(p, "refs/loopexec/other/t0").unwrap());
    assert_eq!(delete_refs(p, "r").unwrap(), 0);
}

#[test]
fn not_a_repo_is_reported() {
    let d = tempfile::tempdir().unwrap();
    // A temp dir may sit inside some repository on a developer machine; only
    // assert when it does not.
    if repo_root(d.path()).is_none() {
        assert!(matches!(
            snapshot(d.path(), "r", "t0"),
            Err(GitError::NotARepo(_))
        ));
    }
}

#[test]
fn snapshot_from_subdirectory_covers_whole_repo() {
    let d = repo();
    let p = d.path();
    write(p, "top.txt", "t");
    write(p, "sub/inner.txt", "i");
    write(p, "sub/.loopexec/x", "receipt");
    let s = snapshot(&p.join("sub"), "r", "t0").unwrap();
    assert_eq!(
        list_files(p, &s.tree).unwrap(),
        vec!["sub/inner.txt", "top.txt"]
    );
}

#[test]
fn is_dirty_ignores_loopexec_and_ignored_files() {
    let d = repo();
    let p = d.path();
    write(p, ".gitignore", "*.log\n");
    write(p, "f.txt", "1");
    commit_all(p, "base");
    assert!(!is_dirty(p).unwrap());
    write(p, ".loopexec/runs/x.jsonl", "{}");
    write(p, "a.log", "x");
    assert!(!is_dirty(p).unwrap());
    write(p, "f.txt", "2");
    assert!(is_dirty(p).unwrap());
}

#[test]
fn linked_worktree_uses_its_own_index() {
    let d = repo();
    let p = d.path();
    write(p, "f.txt", "main\n");
    commit_all(p, "base");
    let wt = tempfile::tempdir().unwrap();
    let wtp = wt.path().join("wt");
    g(
        p,
        &["worktree", "add", "-q", "-b", "side", wtp.to_str().unwrap()],
    );
    write(&wtp, "f.txt", "side edit\n");
    write(&wtp, "g.txt", "new\n");
    let s = snapshot(&wtp, "r", "t0").unwrap();
    assert_eq!(
        read_blob(&wtp, &s.tree, "f.txt").unwrap().unwrap(),
        b"side edit\n"
    );
    assert_eq!(list_files(&wtp, &s.tree).unwrap(), vec!["f.txt", "g.txt"]);
    // The main work tree is unaffected.
    assert_eq!(std::fs::read_to_string(p.join("f.txt")).unwrap(), "main\n");
    restore(&wtp, &format!("{}~0", s.commit)).unwrap();
    write(&wtp, "g.txt", "changed\n");
    restore(&wtp, "refs/loopexec/r/t0").unwrap();
    assert_eq!(std::fs::read_to_string(wtp.join("g.txt")).unwrap(), "new\n");
}

#[test]
fn restore_handles_file_directory_swaps() {
    let d = repo();
    let p = d.path();
    write(p, "a", "file\n");
    write(p, "d/x.txt", "x\n");
    commit_all(p, "base");
    let t0 = snapshot(p, "r", "t0").unwrap();
    std::fs::remove_file(p.join("a")).unwrap();
    write(p, "a/inner.txt", "now a dir\n");
    std::fs::remove_dir_all(p.join("d")).unwrap();
    write(p, "d", "now a file\n");
    restore(p, &t0.commit).unwrap();
    assert_eq!(std::fs::read_to_string(p.join("a")).unwrap(), "file\n");
    assert_eq!(std::fs::read_to_string(p.join("d/x.txt")).unwrap(), "x\n");
    assert_eq!(snapshot(p, "r", "after").unwrap().tree, t0.tree);
}

/// A same-size edit whose stat data matches what the user's index recorded must still
/// be seen when the index is "racy" (the entry is as new as the index file): git then
/// compares content, but only if the temporary index copy keeps the user index's
/// mtime. `core.checkStat=minimal` and a fixed mtime make the race deterministic (as
/// on filesystems with coarse timestamps).
#[test]
fn racy_same_size_edits_are_seen() {
    let d = repo();
    let p = d.path();
    g(p, &["config", "core.checkStat", "minimal"]);
    g(p, &["config", "core.trustctime", "false"]);
    let stamp = "@1700000000";
    let touch = |rel: &str| {
        let ok = std::process::Command::new("touch")
            .args(["-d", stamp])
            .arg(p.join(rel))
            .status()
            .unwrap();
        assert!(ok.success());
    };
    write(p, "c", "0\n");
    touch("c");
    commit_all(p, "base");
    touch(".git/index");
    let s0 = snapshot(p, "r", "a").unwrap();
    write(p, "c", "1\n");
    touch("c");
    let s1 = snapshot(p, "r", "b").unwrap();
    assert_ne!(s0.tree, s1.tree, "the same-size edit of c was missed");
    assert_eq!(
        read_blob(p, &s1.commit, "c").unwrap().as_deref(),
        Some(&b"1\n"[..])
    );
}

/// A repository whose configuration names programs (a file-system monitor, a filter
/// driver with a `.` in its name, marked required) gets no program run by loopexec's
/// git calls that read the work tree (`status`, `add`, `read-tree -u`): each would
/// leave a marker file. The work tree is still read as it is.
#[test]
fn the_repository_s_programs_never_run() {
    let d = repo();
    let p = d.path();
    write(p, ".gitattributes", "*.txt filter=lfs.x\n");
    write(p, "a.txt", "a\n");
    commit_all(p, "base");
    let marker = tempfile::tempdir().unwrap();
    let m = marker.path().display().to_string();
    g(
        p,
        &[
            "config",
            "core.fsmonitor",
            &format!("touch {m}/fsmonitor; false"),
        ],
    );
    for key in ["clean", "smudge"] {
        g(
            p,
            &[
                "config",
                &format!("filter.lfs.x.{key}"),
                &format!("touch {m}/{key}; cat"),
            ],
        );
    }
    g(p, &["config", "filter.lfs.x.required", "true"]);
    // same size, new content: git must read the file (through the filter, were it on)
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(p, "a.txt", "b\n");
    assert!(is_dirty(p).unwrap());
    let s = snapshot(p, "run1", "t0").unwrap();
    assert_eq!(read_blob(p, &s.tree, "a.txt").unwrap().unwrap(), b"b\n");
    write(p, "a.txt", "c\n");
    restore(p, &s.commit).unwrap();
    assert_eq!(std::fs::read(p.join("a.txt")).unwrap(), b"b\n");
    let ran: Vec<_> = std::fs::read_dir(marker.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(ran.is_empty(), "programs of the repository ran: {ran:?}");
    // a submodule's own filter: git status would enter it (`git status` there)
    let sub = p.join("vendor/sub");
    std::fs::create_dir_all(&sub).unwrap();
    g(&sub, &["init", "-q"]);
    write(&sub, ".gitattributes", "*.txt filter=evil\n");
    write(&sub, "a.txt", "a\n");
    commit_all(&sub, "sub");
    g(
        &sub,
        &[
            "config",
            "filter.evil.clean",
            &format!("touch {m}/submodule; cat"),
        ],
    );
    g(p, &["add", "vendor/sub"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&sub, "a.txt", "b\n");
    is_dirty(p).unwrap();
    assert!(
        !marker.path().join("submodule").exists(),
        "a submodule's filter ran"
    );
    // the same configuration does run them for a plain git call (the test can fail)
    g(p, &["status", "--porcelain"]);
    assert!(marker.path().join("fsmonitor").exists());
    assert!(marker.path().join("submodule").exists());
}
