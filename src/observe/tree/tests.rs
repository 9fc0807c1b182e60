use super::*;

fn observer(files: &[(&str, &str)]) -> (tempfile::TempDir, TreeObserver) {
    let tmp = tempfile::tempdir().unwrap();
    let wd = tmp.path().join("w");
    for (p, body) in files {
        let f = wd.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, body).unwrap();
    }
    let cfg = RunConfig::defaults();
    let obs = TreeObserver::new(&wd, "r", &cfg);
    (tmp, obs)
}

fn measures(o: &TreeObs) -> TreeMeasures {
    o.measures.clone()
}

#[test]
fn an_unchanged_tree_reuses_the_snapshot_and_a_changed_file_is_re_measured() {
    let (tmp, mut obs) = observer(&[
        (
            "tests/test_a.py",
            "def test_a():\n    assert 1\n    assert 2\n",
        ),
        ("src/a.py", "x = 1\n"),
        ("notes.txt", "n\n"),
    ]);
    let wd = tmp.path().join("w");
    let (g, b, unavailable) = obs.baseline();
    assert!(unavailable.is_empty(), "{unavailable:?}");
    let t0: TreeMeasures = b;
    assert_eq!(t0.assertions["tests/test_a.py"], 2);
    let t0_commit = g.baseline_snapshot.unwrap();

    let same = obs.observe(1);
    assert_eq!(same.snapshot.as_deref(), Some(t0_commit.as_str()));
    let store = obs.store().unwrap().dir().to_path_buf();
    assert!(git::ref_exists(&store, "refs/loopexec/r/1").unwrap());
    assert!(measures(&same).changed_since_t0.is_empty());

    // Same size, written right after the last scan: still seen and re-measured.
    std::fs::write(
        wd.join("tests/test_a.py"),
        "def test_a():\n    assert 1\n    pass    \n",
    )
    .unwrap();
    std::fs::write(wd.join("notes.txt"), "m\n").unwrap();
    let changed = obs.observe(2);
    assert_ne!(changed.snapshot.as_deref(), Some(t0_commit.as_str()));
    let m = measures(&changed);
    assert_eq!(m.assertions["tests/test_a.py"], 1);
    assert_eq!(m.changed_since_t0, ["notes.txt", "tests/test_a.py"]);
    assert!(
        m.oracle_edits.iter().any(|e| e.path == "tests/test_a.py"),
        "{:?}",
        m.oracle_edits
    );

    // Put back as at t0: nothing changed since t0 any more.
    std::fs::write(
        wd.join("tests/test_a.py"),
        "def test_a():\n    assert 1\n    assert 2\n",
    )
    .unwrap();
    std::fs::write(wd.join("notes.txt"), "n\n").unwrap();
    let back = obs.observe(3);
    assert_eq!(back.tree, same.tree);
    let m = measures(&back);
    assert!(m.changed_since_t0.is_empty());
    assert!(m.oracle_edits.is_empty());
}

/// Which file of the judged tree a module the check created is found before, as
/// Python's and node's resolvers look a name up.
#[test]
fn a_created_module_shadows_what_its_resolver_finds_after_it() {
    let tree = [
        "calc.py",
        "pkg/util.py",
        "lib/calc.js",
        "lib/data.json",
        "src/main.c",
        "README.md",
    ];
    let judged = |p: &str| tree.contains(&p);
    let rows: &[(&str, Option<&str>)] = &[
        ("calc/__init__.py", Some("calc.py")),
        ("pkg/util/__init__.py", Some("pkg/util.py")),
        ("calc.so", Some("calc.py")),
        ("calc.cpython-311-x86_64-linux-gnu.so", Some("calc.py")),
        ("pkg/util.abi3.so", Some("pkg/util.py")),
        ("calc.pyd", Some("calc.py")),
        ("lib/calc", Some("lib/calc.js")),
        ("lib/data", Some("lib/data.json")),
        // nothing of the tree has the name: a build output, a new module
        ("other/__init__.py", None),
        ("__init__.py", None),
        ("src/main", None),
        ("lib/other", None),
        ("libcalc.so", None),
        ("calc.pyc", None),
        ("lib/calc.ts", None),
    ];
    for (created, want) in rows {
        assert_eq!(
            super::shadowed_module(created, &judged).as_deref(),
            *want,
            "{created}"
        );
    }
}

/// The name a Python file is imported by.
#[test]
fn a_python_file_is_imported_by_its_last_name() {
    for (path, want) in [
        ("calc.py", "calc"),
        ("src/calc.py", "calc"),
        ("calc/__init__.py", "calc"),
        ("pkg/calc/__init__.py", "calc"),
        ("__init__.py", "__init__"),
    ] {
        assert_eq!(super::py_module_name(path), want, "{path}");
    }
}
