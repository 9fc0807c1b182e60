use super::*;
use std::collections::BTreeSet;
use std::fs;

fn setup() -> (tempfile::TempDir, SnapshotStore, TreeScanner) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("w");
    fs::create_dir_all(&root).unwrap();
    let store = SnapshotStore::open(&tmp.path().join("store.git")).unwrap();
    let sc = TreeScanner::new(&root, Excludes::new(&[]).unwrap());
    (tmp, store, sc)
}

fn put(root: &Path, rel: &str, body: &str) {
    let p = root.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, body).unwrap();
}

fn paths(s: &Scanned) -> Vec<&str> {
    s.entries.keys().map(String::as_str).collect()
}

#[test]
fn ignored_files_nested_repositories_and_attributes_are_seen_as_bytes() {
    let (_t, store, mut sc) = setup();
    let root = sc.root().to_path_buf();
    put(&root, ".gitignore", "conftest.py\n");
    put(&root, "conftest.py", "hook\n");
    put(&root, ".gitattributes", "*.py filter=x text eol=crlf\n");
    put(&root, "a.py", "x = 1\n");
    put(&root, "nested/.git/config", "[core]\n");
    put(&root, "nested/inner.py", "y = 2\n");
    put(&root, ".loopexec/ledger", "state");
    let s = sc.scan(&store).unwrap();
    assert_eq!(
        paths(&s),
        [
            ".gitattributes",
            ".gitignore",
            "a.py",
            "conftest.py",
            "nested/inner.py"
        ]
    );
    let blob = git::read_blob(store.dir(), &s.tree, "a.py")
        .unwrap()
        .unwrap();
    assert_eq!(blob, b"x = 1\n", "no eol conversion or filter applied");
}

#[test]
fn caches_and_dependency_directories_are_excluded_and_listed() {
    let (_t, store, mut sc) = setup();
    let root = sc.root().to_path_buf();
    put(&root, "Cargo.toml", "[package]\n");
    put(&root, "target/debug/x", "bin");
    put(
        &root,
        "src/target/keep.rs",
        "// a source dir named target, no Cargo.toml beside it\n",
    );
    put(&root, "pkg/__pycache__/m.pyc", "pyc");
    put(&root, "node_modules/.bin/jest", "shim");
    put(&root, ".venv/pyvenv.cfg", "home = /usr\n");
    put(&root, "venv/not-a-venv.txt", "data\n");
    let s = sc.scan(&store).unwrap();
    assert_eq!(
        paths(&s),
        ["Cargo.toml", "src/target/keep.rs", "venv/not-a-venv.txt"]
    );
    let mut ex: Vec<(String, &str)> = s.excluded.clone();
    ex.sort();
    assert_eq!(
        ex,
        vec![
            (".venv".to_string(), "dependencies"),
            ("node_modules".to_string(), "dependencies"),
            ("pkg/__pycache__".to_string(), "cache"),
            ("target".to_string(), "cache"),
        ]
    );
}

#[test]
fn declared_excludes_apply() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("w");
    put(&root, "data/big.bin", "x");
    put(&root, "keep.txt", "y");
    let store = SnapshotStore::open(&tmp.path().join("s.git")).unwrap();
    let mut sc = TreeScanner::new(&root, Excludes::new(&["data".to_string()]).unwrap());
    let s = sc.scan(&store).unwrap();
    assert_eq!(paths(&s), ["keep.txt"]);
    assert_eq!(s.excluded, vec![("data".to_string(), "declared")]);
}

#[test]
fn identical_trees_have_identical_ids_and_edits_change_them() {
    let (_t, store, mut sc) = setup();
    let root = sc.root().to_path_buf();
    put(&root, "a.txt", "one\n");
    let t1 = sc.scan(&store).unwrap().tree;
    let t2 = sc.scan(&store).unwrap().tree;
    assert_eq!(t1, t2);
    // Same size, same second: the racy window forces a re-hash.
    put(&root, "a.txt", "two\n");
    let t3 = sc.scan(&store).unwrap().tree;
    assert_ne!(t1, t3);
}

#[test]
fn executable_bit_and_symlinks_are_recorded() {
    let (_t, store, mut sc) = setup();
    let root = sc.root().to_path_buf();
    put(&root, "run.sh", "#!/bin/sh\n");
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("run.sh", root.join("link")).unwrap();
    let s = sc.scan(&store).unwrap();
    assert_eq!(s.entries["run.sh"].mode, "100755");
    assert_eq!(s.entries["link"].mode, "120000");
}

#[test]
fn sync_to_restores_an_earlier_tree_exactly_and_keeps_unchanged_files() {
    let (_t, store, mut sc) = setup();
    let root = sc.root().to_path_buf();
    put(&root, "keep.txt", "same\n");
    put(&root, "edit.txt", "before\n");
    put(&root, "gone.txt", "deleted later\n");
    let t0 = sc.scan(&store).unwrap().tree;
    let keep_mtime = fs::metadata(root.join("keep.txt"))
        .unwrap()
        .modified()
        .unwrap();
    put(&root, "edit.txt", "after, longer\n");
    fs::remove_file(root.join("gone.txt")).unwrap();
    put(&root, "new/dir/added.txt", "new\n");
    put(&root, "__pycache__/c.pyc", "cache stays");
    let stats = sc.sync_to(&store, &t0).unwrap();
    assert_eq!(
        stats,
        SyncStats {
            written: 2,
            removed: 1
        }
    );
    assert_eq!(
        fs::read_to_string(root.join("edit.txt")).unwrap(),
        "before\n"
    );
    assert_eq!(
        fs::read_to_string(root.join("gone.txt")).unwrap(),
        "deleted later\n"
    );
    assert!(!root.join("new").exists(), "emptied directories are pruned");
    assert!(
        root.join("__pycache__/c.pyc").exists(),
        "excluded paths are left alone"
    );
    assert_eq!(
        fs::metadata(root.join("keep.txt"))
            .unwrap()
            .modified()
            .unwrap(),
        keep_mtime
    );
    assert_eq!(sc.scan(&store).unwrap().tree, t0);
}

/// The scanner's shortcut (`watch_between_scans`): a sync after a quiet watch applies
/// the diff of two store trees instead of walking; a sync after any change walks. Both
/// leave the directory equal to the target.
#[test]
fn a_sync_after_a_quiet_watch_applies_the_tree_diff_and_any_change_forces_a_walk() {
    let (_t, store, mut sc) = setup();
    sc.watch_between_scans(Some(0));
    let root = sc.root().to_path_buf();
    put(&root, "same.txt", "same\n");
    put(&root, "edit.txt", "before\n");
    put(&root, "gone.txt", "in a only\n");
    put(&root, "kind", "a file in a\n");
    let a = sc.scan(&store).unwrap().tree;
    // build tree b elsewhere: edit, delete, add nested, change a file into a directory
    put(&root, "edit.txt", "after\n");
    fs::remove_file(root.join("gone.txt")).unwrap();
    put(&root, "new/deep/added.txt", "new\n");
    fs::remove_file(root.join("kind")).unwrap();
    put(&root, "kind/inner.txt", "a directory in b\n");
    let b = sc.scan(&store).unwrap().tree;
    // back to a: the watch started after the last scan saw nothing, so no walk
    let stats = sc.sync_to(&store, &a).unwrap();
    assert_eq!(stats.removed, 2, "{stats:?}");
    assert_eq!(stats.written, 3, "{stats:?}");
    assert!(!root.join("new").exists());
    assert_eq!(
        fs::read_to_string(root.join("kind")).unwrap(),
        "a file in a\n"
    );
    // a scan, then forward to b through the quiet shortcut
    assert_eq!(sc.scan(&store).unwrap().tree, a);
    sc.sync_to(&store, &b).unwrap();
    assert_eq!(
        fs::read_to_string(root.join("kind/inner.txt")).unwrap(),
        "a directory in b\n"
    );
    assert_eq!(
        fs::read_to_string(root.join("new/deep/added.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(sc.scan(&store).unwrap().tree, b);
    // a change after the scan (not made by a sync) is seen: the sync walks and undoes it
    put(&root, "stray.txt", "not in a\n");
    sc.sync_to(&store, &a).unwrap();
    assert!(
        !root.join("stray.txt").exists(),
        "the walk found the stray file"
    );
    assert_eq!(sc.scan(&store).unwrap().tree, a);
    // same.txt was never rewritten
    assert_eq!(fs::read_to_string(root.join("same.txt")).unwrap(), "same\n");
}

#[test]
fn user_git_configuration_cannot_reach_the_store() {
    let (_t, store, mut sc) = setup();
    let root = sc.root().to_path_buf();
    put(&root, "a.txt", "real\n");
    let s = sc.scan(&store).unwrap();
    // A replace ref written into the store by someone else is ignored.
    let other = sc.scan(&store).unwrap().tree;
    put(&root, "a.txt", "fake\n");
    let fake = sc.scan(&store).unwrap().tree;
    git::run(git::git_cmd(store.dir()).args(["replace", "-f", &fake, &other])).unwrap();
    let blob = git::read_blob(store.dir(), &fake, "a.txt")
        .unwrap()
        .unwrap();
    assert_eq!(blob, b"fake\n");
    assert_eq!(s.tree, other);
}

#[test]
fn commit_records_a_ref() {
    let (_t, store, mut sc) = setup();
    put(sc.root(), "a", "1");
    let s = sc.scan(&store).unwrap();
    let c = store.commit(&s.tree, "run1", "0").unwrap();
    assert!(git::ref_exists(store.dir(), "refs/loopexec/run1/0").unwrap());
    assert_eq!(c.len(), 40);
}

#[test]
fn a_cached_blob_id_is_reused_only_for_identical_stat_data_outside_the_racy_window() {
    let st = |size, mtime_ns, ctime_ns, ino| Stat {
        size,
        mtime_ns,
        ctime_ns,
        ino,
        mode: 0o100_644,
    };
    const S: i128 = 1_000_000_000;
    const MS: i128 = 1_000_000;
    // the previous scan started at 10 s
    let start = Some(10 * S);
    let old = st(4, 1_000, 1_000, 7);
    let same = |ns: i128| (st(4, ns, ns, 7), st(4, ns, ns, 7));
    let (fine_in_c, fine_in) = same(10 * S - 50 * MS);
    let (fine_out_c, fine_out) = same(10 * S - 150 * MS);
    let (coarse_in_c, coarse_in) = same(9 * S);
    let (coarse_out_c, coarse_out) = same(7 * S);
    // (cached, now, previous scan's start, trusted)
    let cases = [
        (old.clone(), old.clone(), start, true),
        // No scan before: nothing is trusted.
        (old.clone(), old.clone(), None, false),
        // Sub-second timestamps: within 100 ms of the last scan's start, hashed again;
        // older, trusted.
        (fine_in_c, fine_in, start, false),
        (fine_out_c, fine_out, start, true),
        // Whole-second timestamps (a coarse filesystem): the 2 s window.
        (coarse_in_c, coarse_in, start, false),
        (coarse_out_c, coarse_out, start, true),
        // Only the ctime is recent (mtime set back after a same-size write).
        (
            st(4, 1_000, 10 * S - MS, 7),
            st(4, 1_000, 10 * S - MS, 7),
            start,
            false,
        ),
        // Any stat field that moved.
        (old.clone(), st(5, 1_000, 1_000, 7), start, false),
        (old.clone(), st(4, 1_001, 1_000, 7), start, false),
        (old.clone(), st(4, 1_000, 1_001, 7), start, false),
        (old.clone(), st(4, 1_000, 1_000, 8), start, false),
    ];
    for (i, (cached, now, racy, want)) in cases.iter().enumerate() {
        assert_eq!(stat_trusted(cached, now, *racy), *want, "case {i}");
    }
}

#[test]
fn each_scan_names_the_paths_changed_since_the_previous_one() {
    let (_t, store, mut sc) = setup();
    let root = sc.root().to_path_buf();
    put(&root, "a.txt", "one\n");
    put(&root, "b/c.txt", "two\n");
    let first = sc.scan(&store).unwrap();
    assert_eq!(first.changed, None, "a first scan has no previous one");
    let again = sc.scan(&store).unwrap();
    assert_eq!(again.tree, first.tree);
    assert_eq!(again.changed, Some(BTreeSet::new()));
    // Same size, same clock tick as the scan before: still seen.
    put(&root, "a.txt", "ONE\n");
    fs::remove_file(root.join("b/c.txt")).unwrap();
    put(&root, "d.txt", "new\n");
    let third = sc.scan(&store).unwrap();
    let want: BTreeSet<String> = ["a.txt", "b/c.txt", "d.txt"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(third.changed, Some(want));
    // A sync's own scan does not swallow changes: the next scan reports them.
    put(&root, "a.txt", "once more\n");
    sc.sync_paths(&store, &third.tree, &BTreeSet::new())
        .unwrap();
    let fourth = sc.scan(&store).unwrap();
    assert!(fourth.changed.unwrap().contains("a.txt"));
}

/// git itself, with the store's marker moved away so nothing is answered in-process.
fn with_git<T>(store: &SnapshotStore, f: impl FnOnce() -> T) -> T {
    let marker = store.dir().join(STORE_MARKER);
    let away = store.dir().join("marker-away");
    fs::rename(&marker, &away).unwrap();
    let out = f();
    fs::rename(&away, &marker).unwrap();
    out
}

#[test]
fn objects_written_in_process_are_the_ones_git_reads_and_diffs() {
    let (_t, store, mut sc) = setup();
    let root = sc.root().to_path_buf();
    put(&root, "a.txt", "a\n");
    put(&root, "a0", "zero\n");
    put(&root, "a/b.txt", "b\n");
    put(&root, "x/y/z.txt", "deep\n");
    put(&root, "mode.sh", "#!/bin/sh\n");
    put(&root, "was_file", "f\n");
    put(&root, "to_link", "l\n");
    put(&root, "gone/only.txt", "o\n");
    let s1 = sc.scan(&store).unwrap();
    put(&root, "a/b.txt", "b changed\n");
    put(&root, "x/y/new.txt", "n\n");
    fs::set_permissions(root.join("mode.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::remove_file(root.join("was_file")).unwrap();
    put(&root, "was_file/inside.txt", "now a directory\n");
    fs::remove_file(root.join("to_link")).unwrap();
    std::os::unix::fs::symlink("a.txt", root.join("to_link")).unwrap();
    fs::remove_dir_all(root.join("gone")).unwrap();
    let s2 = sc.scan(&store).unwrap();
    let commit = store.commit(&s2.tree, "r", "1").unwrap();

    let ours = (
        git::ls_tree(store.dir(), &s2.tree).unwrap(),
        git::ls_tree(store.dir(), &commit).unwrap(),
        git::changed_paths(store.dir(), &s1.tree, &s2.tree).unwrap(),
    );
    let theirs = with_git(&store, || {
        git::run(git::git_cmd(store.dir()).args(["fsck", "--strict", "--no-dangling"])).unwrap();
        (
            git::ls_tree(store.dir(), &s2.tree).unwrap(),
            git::ls_tree(store.dir(), &commit).unwrap(),
            git::changed_paths(store.dir(), &s1.tree, &s2.tree).unwrap(),
        )
    });
    assert_eq!(ours, theirs);
    let kinds: Vec<(&str, git::ChangeKind)> =
        ours.2.iter().map(|c| (c.path.as_str(), c.status)).collect();
    assert!(
        kinds.contains(&("to_link", git::ChangeKind::TypeChanged)),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&("mode.sh", git::ChangeKind::Modified)),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&("was_file/inside.txt", git::ChangeKind::Added)),
        "{kinds:?}"
    );
    // The entries listed in memory are the ones git lists.
    let listed: Vec<(String, String, String)> = ours
        .0
        .iter()
        .map(|e| (e.path.clone(), e.mode.clone(), e.oid.clone()))
        .collect();
    let remembered: Vec<(String, String, String)> = store
        .entries(&s2.tree)
        .unwrap()
        .into_iter()
        .map(|(p, e)| (p, e.mode, e.oid))
        .collect();
    assert_eq!(listed, remembered);
    // A commit is what `git commit-tree` writes for the same input.
    let by_git = with_git(&store, || {
        let mut ct = git::git_cmd(store.dir());
        ct.env("GIT_DIR", store.dir())
            .args(["commit-tree", &s2.tree, "-m", "loopexec snapshot r/1"])
            .env("GIT_AUTHOR_NAME", "loopexec")
            .env("GIT_AUTHOR_EMAIL", "loopexec@localhost")
            .env("GIT_COMMITTER_NAME", "loopexec")
            .env("GIT_COMMITTER_EMAIL", "loopexec@localhost")
            .env("GIT_AUTHOR_DATE", "1970-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "1970-01-01T00:00:00Z");
        String::from_utf8(git::run(&mut ct).unwrap()).unwrap()
    });
    assert_eq!(by_git.trim(), commit);
}

#[test]
fn blobs_are_read_in_process_and_packed_ones_through_git() {
    let (_t, store, mut sc) = setup();
    put(sc.root(), "a.txt", "content\n");
    let s = sc.scan(&store).unwrap();
    let oid = s.entries["a.txt"].oid.clone();
    assert_eq!(
        git::cat_blobs(store.dir(), std::slice::from_ref(&oid)).unwrap(),
        vec![Some(b"content\n".to_vec())]
    );
    store.commit(&s.tree, "r", "0").unwrap();
    // Someone packs the store: the objects are no longer loose.
    git::run(git::git_cmd(store.dir()).args(["gc", "-q", "--prune=now"])).unwrap();
    assert!(store.odb().read(&odb::from_hex(&oid).unwrap()).is_none());
    assert_eq!(
        git::cat_blobs(store.dir(), &[oid]).unwrap(),
        vec![Some(b"content\n".to_vec())]
    );
    assert_eq!(git::ls_tree(store.dir(), &s.tree).unwrap().len(), 1);
}

#[test]
fn a_declared_file_stays_out_of_every_scan() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("w");
    put(&root, "err.txt", "progress\n");
    put(&root, "keep.txt", "y");
    let store = SnapshotStore::open(&tmp.path().join("s.git")).unwrap();
    let mut sc = TreeScanner::new(&root, Excludes::new(&["err.txt".to_string()]).unwrap());
    for _ in 0..3 {
        let s = sc.scan(&store).unwrap();
        assert_eq!(paths(&s), ["keep.txt"]);
        assert_eq!(s.excluded, vec![("err.txt".to_string(), "declared")]);
        put(&root, "err.txt", "more progress\n");
    }
}

/// Everything a walk reports, in a comparable form: visits in order, exclusions,
/// directories.
type WalkReport = (
    Vec<(String, bool)>,
    Vec<(String, &'static str)>,
    Vec<String>,
);

fn walk_report(root: &Path, ex: &Excludes, workers: usize) -> Result<WalkReport, String> {
    let mut visits = Vec::new();
    let mut excluded = Vec::new();
    let mut dirs = Vec::new();
    walk(
        root,
        ex,
        workers,
        &mut |rel: &str, _st: Stat, link: bool| visits.push((rel.to_string(), link)),
        &mut excluded,
        &mut dirs,
    )
    .map_err(|e| e.to_string())?;
    Ok((visits, excluded, dirs))
}

#[test]
fn a_walk_by_several_threads_reports_what_one_thread_does() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for d in 0..30 {
        for f in 0..20 {
            put(root, &format!("pkg{d:02}/sub{}/f{f:02}.py", f % 3), "x\n");
        }
    }
    put(root, "Cargo.toml", "[package]\n");
    put(root, "target/debug/bin", "x");
    put(root, "node_modules/left-pad/index.js", "x");
    put(root, ".git/HEAD", "ref\n");
    put(root, "a.txt", "top\n");
    put(root, "z/deep/er/still/file", "x");
    std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
    let ex = Excludes::new(&["pkg07/**".to_string()]).unwrap();
    let one = walk_report(root, &ex, 1).unwrap();
    assert!(one.0.iter().any(|(p, l)| p == "link" && *l));
    assert!(one.1.iter().any(|(p, w)| p == "target" && *w == "cache"));
    assert!(!one.0.iter().any(|(p, _)| p.starts_with(".git/")));
    for workers in [2, 4] {
        assert_eq!(
            walk_report(root, &ex, workers).unwrap(),
            one,
            "{workers} threads"
        );
    }
    // an unreadable name is an error either way
    std::fs::write(root.join("pkg03").join("bad\nname"), "x").unwrap();
    assert!(walk_report(root, &ex, 1).is_err());
    assert!(walk_report(root, &ex, 4).is_err());
}

/// A store records its workdir once; `gc --stores` finds the stores whose workdir is
/// gone and counts those that record none, never judging them gone.
#[test]
fn stores_of_workdirs_that_are_gone_are_found() {
    let tmp = tempfile::tempdir().unwrap();
    let stores = tmp.path().join("stores");
    let kept_wd = tmp.path().join("kept");
    let gone_wd = tmp.path().join("gone");
    std::fs::create_dir_all(&kept_wd).unwrap();
    std::fs::create_dir_all(&gone_wd).unwrap();
    let kept = SnapshotStore::open(&stores.join("a.git")).unwrap();
    kept.record_workdir(&kept_wd).unwrap();
    let gone = SnapshotStore::open(&stores.join("b.git")).unwrap();
    gone.record_workdir(&gone_wd).unwrap();
    gone.record_workdir(&gone_wd).unwrap();
    SnapshotStore::open(&stores.join("c.git")).unwrap();
    std::fs::create_dir_all(stores.join("not-a-store")).unwrap();
    assert_eq!(abandoned_stores(&stores), (Vec::new(), 1));
    std::fs::remove_dir_all(&gone_wd).unwrap();
    assert_eq!(
        abandoned_stores(&stores),
        (vec![(stores.join("b.git"), gone_wd)], 1)
    );
}

/// Each scan reuses the subtrees its changes did not reach; the tree it writes is the
/// one a build of every directory writes, through additions, edits, removals of files
/// and of whole directories, a directory coming back and a file turning into one.
#[test]
fn a_scan_reuses_unchanged_subtrees_and_writes_the_tree_a_full_build_writes() {
    let (_t, store, mut sc) = setup();
    let root = sc.root().to_path_buf();
    for (rel, body) in [
        ("a.txt", "a"),
        ("d1/x.txt", "x"),
        ("d1/sub/y.txt", "y"),
        ("d2/z.txt", "z"),
        ("d2/deep/er/w.txt", "w"),
    ] {
        put(&root, rel, body);
    }
    type Step = (&'static str, fn(&Path));
    let steps: [Step; 7] = [
        ("nothing", |_| {}),
        ("one file deep", |r| put(r, "d2/deep/er/w.txt", "w2")),
        ("a new directory", |r| put(r, "d3/n/new.txt", "n")),
        ("a whole directory removed", |r| {
            fs::remove_dir_all(r.join("d1/sub")).unwrap()
        }),
        ("the directory back, as it was", |r| {
            put(r, "d1/sub/y.txt", "y")
        }),
        ("a file turned into a directory", |r| {
            fs::remove_file(r.join("a.txt")).unwrap();
            put(r, "a.txt/inner.txt", "i");
        }),
        ("a root file", |r| put(r, "b.txt", "b")),
    ];
    let first = sc.scan(&store).unwrap();
    assert_eq!(first.tree, store.write_tree(&first.entries).unwrap());
    let mut objects_before = count_objects(&store);
    for (name, change) in steps {
        change(&root);
        let s = sc.scan(&store).unwrap();
        let full = store.write_tree(&s.entries).unwrap();
        assert_eq!(s.tree, full, "{name}");
        let t = git::ls_tree(store.dir(), &s.tree).unwrap();
        let listed: Vec<&str> = t
            .iter()
            .filter(|e| e.kind == "blob")
            .map(|e| e.path.as_str())
            .collect();
        assert_eq!(listed, paths(&s), "{name}: git reads the tree written");
        if name == "nothing" {
            assert_eq!(
                count_objects(&store),
                objects_before,
                "{name}: nothing written"
            );
        }
        objects_before = count_objects(&store);
    }
}

/// Loose objects in the store.
fn count_objects(store: &SnapshotStore) -> usize {
    fs::read_dir(store.dir().join("objects"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|d| d.file_name().len() == 2)
        .map(|d| fs::read_dir(d.path()).unwrap().count())
        .sum()
}
