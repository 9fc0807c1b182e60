use super::*;
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
