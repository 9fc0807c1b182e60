use super::*;

/// A crate to write: name, version, (path, content) of its files.
type Spec<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

/// A cargo home with one index holding `crates` (name, version, files), each extracted
/// and archived as cargo leaves them; returns the home and a `Cargo.lock` naming them.
fn home_with(dir: &Path, crates: &[Spec]) -> (PathBuf, String) {
    let home = dir.join("cargo");
    let mut lock =
        String::from("version = 3\n\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\n");
    for (name, version, files) in crates {
        let sum = write_crate(&home, "index.example-0123", name, version, files).unwrap();
        lock.push_str(&format!(
            "\n[[package]]\nname = \"{name}\"\nversion = \"{version}\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{sum}\"\n"
        ));
    }
    (home, lock)
}

const FOO: Spec = (
    "foo",
    "1.0.0",
    &[
        ("Cargo.toml", "[package]\nname = \"foo\"\n"),
        (
            "src/lib.rs",
            "pub fn eq(a: i32, b: i32) -> bool { a == b }\n",
        ),
    ],
);

fn crate_dir(home: &Path, top: &str) -> PathBuf {
    home.join("registry/src/index.example-0123").join(top)
}

#[test]
fn a_lock_names_only_its_registry_packages() {
    let lock = "version = 3\n[[package]]\nname = \"app\"\nversion = \"0.1.0\"\n\n[[package]]\nname = \"g\"\nversion = \"1.0.0\"\nsource = \"git+https://example.com/g#abc\"\n\n[[package]]\nname = \"s\"\nversion = \"2.0.0\"\nsource = \"sparse+https://index.example/\"\nchecksum = \"AB\"\n";
    assert_eq!(
        locked_crates(lock),
        vec![LockedCrate {
            name: "s".into(),
            version: "2.0.0".into(),
            checksum: "ab".into()
        }]
    );
    assert!(locked_crates("not toml [").is_empty());
}

/// What happens to an extracted crate between t0 and a later measurement, and the
/// value that later measurement reads (`None`: the crate is no longer measured).
#[test]
fn what_an_edit_of_a_crate_reads_as() {
    type Edit = fn(&Path);
    let cases: &[(&str, Edit, &str)] = &[
        ("nothing", |_| {}, "stat:"),
        (
            "a source edited",
            |d| {
                std::fs::write(
                    d.join("src/lib.rs"),
                    "pub fn eq(_: i32, _: i32) -> bool { true }\n",
                )
                .unwrap()
            },
            "modified ",
        ),
        (
            "a file added",
            |d| std::fs::write(d.join("src/extra.rs"), "// planted\n").unwrap(),
            "modified ",
        ),
        (
            "a file removed",
            |d| std::fs::remove_file(d.join("Cargo.toml")).unwrap(),
            "modified ",
        ),
        (
            "a source replaced by a link to another file",
            |d| {
                std::fs::write(
                    d.join("../patched.rs"),
                    "pub fn eq(_: i32, _: i32) -> bool { true }\n",
                )
                .unwrap();
                std::fs::remove_file(d.join("src/lib.rs")).unwrap();
                std::os::unix::fs::symlink(d.join("../patched.rs"), d.join("src/lib.rs")).unwrap();
            },
            "modified ",
        ),
        (
            "extracted again, byte for byte",
            |d| {
                let body = std::fs::read(d.join("src/lib.rs")).unwrap();
                std::fs::remove_file(d.join("src/lib.rs")).unwrap();
                std::fs::write(d.join("src/lib.rs"), body).unwrap();
            },
            PUBLISHED,
        ),
        (
            "the archive swapped too",
            |d| {
                std::fs::write(
                    d.join("src/lib.rs"),
                    "pub fn eq(_: i32, _: i32) -> bool { true }\n",
                )
                .unwrap();
                let cache = d
                    .parent()
                    .unwrap()
                    .parent()
                    .unwrap()
                    .parent()
                    .unwrap()
                    .join("cache/index.example-0123/foo-1.0.0.crate");
                std::fs::write(cache, b"not the published archive").unwrap();
            },
            "unverifiable: its archive",
        ),
    ];
    for (what, edit, expect) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let (home, lock) = home_with(tmp.path(), &[FOO]);
        let mut reg = Registry::new(home.clone());
        let t0 = reg.measure(&lock, None);
        let key = "crate:foo@1.0.0";
        assert!(t0[key].starts_with("stat:"), "{what}: {t0:?}");
        edit(&crate_dir(&home, "foo-1.0.0"));
        // a fresh process (a resumed run) reads the same as the one that took t0
        for mut r in [reg, Registry::new(home.clone())] {
            let now = r.measure(&lock, Some(&t0));
            let v = &now[key];
            assert!(v.starts_with(expect), "{what}: {v}");
            let same = unchanged(Some(&t0[key]), Some(v));
            assert_eq!(
                same,
                *expect == "stat:" || *expect == PUBLISHED,
                "{what}: {v}"
            );
        }
    }
}

#[test]
fn a_modified_value_names_the_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, lock) = home_with(tmp.path(), &[FOO]);
    let mut reg = Registry::new(home.clone());
    let t0 = reg.measure(&lock, None);
    std::fs::write(crate_dir(&home, "foo-1.0.0").join("src/lib.rs"), "x").unwrap();
    let v = reg
        .measure(&lock, Some(&t0))
        .remove("crate:foo@1.0.0")
        .unwrap();
    assert!(v.ends_with(": src/lib.rs changed"), "{v}");
}

#[test]
fn a_crate_added_after_t0_must_be_its_published_archive() {
    let tmp = tempfile::tempdir().unwrap();
    let bar: Spec = ("bar", "0.2.0", &[("src/lib.rs", "pub fn ok() {}\n")]);
    let (home, lock_both) = home_with(tmp.path(), &[FOO, bar]);
    let lock_foo: String = {
        // the lock before the agent added `bar`
        let cut = lock_both.find("\n[[package]]\nname = \"bar\"").unwrap();
        lock_both[..cut].to_string()
    };
    let mut reg = Registry::new(home.clone());
    let t0 = reg.measure(&lock_foo, None);
    assert!(!t0.contains_key("crate:bar@0.2.0"));
    let now = reg.measure(&lock_both, Some(&t0));
    assert_eq!(now["crate:bar@0.2.0"], PUBLISHED);
    assert!(unchanged(None, Some(&now["crate:bar@0.2.0"])));
    std::fs::write(
        crate_dir(&home, "bar-0.2.0").join("src/lib.rs"),
        "pub fn ok() { std::process::exit(0) }\n",
    )
    .unwrap();
    let now = reg.measure(&lock_both, Some(&t0));
    assert!(now["crate:bar@0.2.0"].starts_with("modified "), "{now:?}");
    assert!(!unchanged(None, Some(&now["crate:bar@0.2.0"])));
    // its archive gone: nothing to compare with, which is no pass either
    std::fs::remove_file(home.join("registry/cache/index.example-0123/bar-0.2.0.crate")).unwrap();
    let now = Registry::new(home.clone()).measure(&lock_both, Some(&t0));
    assert!(
        now["crate:bar@0.2.0"].starts_with("unverifiable: its archive"),
        "{now:?}"
    );
}

#[test]
fn crates_not_extracted_or_dropped_from_the_lock_are_no_change() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, lock) = home_with(tmp.path(), &[FOO]);
    let mut reg = Registry::new(home.clone());
    let t0 = reg.measure(&lock, None);
    std::fs::remove_dir_all(crate_dir(&home, "foo-1.0.0")).unwrap();
    assert!(reg.measure(&lock, Some(&t0)).is_empty());
    assert!(unchanged(Some(&t0["crate:foo@1.0.0"]), None));
}

/// Ninth fresh review: a version added to the index cache and its archive dropped into
/// the cache while the run went on. A crate new since t0 whose archive was written
/// during the run is unverifiable, extracted or not (the check would extract it).
#[test]
fn a_crate_fetched_during_the_run_is_unverifiable() {
    let tmp = tempfile::tempdir().unwrap();
    let bar: Spec = ("bar", "0.2.0", &[("src/lib.rs", "pub fn ok() {}\n")]);
    let (home, lock_both) = home_with(tmp.path(), &[FOO, bar]);
    let cut = lock_both.find("\n[[package]]\nname = \"bar\"").unwrap();
    let lock_foo = lock_both[..cut].to_string();
    let mut reg = Registry::new(home.clone());
    let t0 = reg.measure(&lock_foo, None);
    // the archive is (re)written after the run began
    let archive = home.join("registry/cache/index.example-0123/bar-0.2.0.crate");
    let bytes = std::fs::read(&archive).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&archive, &bytes).unwrap();
    let now = reg.measure(&lock_both, Some(&t0));
    assert!(
        now["crate:bar@0.2.0"]
            .starts_with("unverifiable: bar-0.2.0.crate was fetched during the run"),
        "{now:?}"
    );
    assert!(!unchanged(None, Some(&now["crate:bar@0.2.0"])));
    // not extracted yet: judged from the archive all the same
    std::fs::remove_dir_all(crate_dir(&home, "bar-0.2.0")).unwrap();
    let now = reg.measure(&lock_both, Some(&t0));
    assert!(
        now["crate:bar@0.2.0"].starts_with("unverifiable: "),
        "{now:?}"
    );
    // the crates of t0 are as they were
    assert_eq!(now["crate:foo@1.0.0"], t0["crate:foo@1.0.0"]);
}

/// A crate t0's lock names that was not fetched yet at t0 (a fresh CI machine) and
/// that the check fetches during the run is checked against t0's checksum: published.
#[test]
fn a_crate_of_t0s_lock_fetched_by_the_check_is_published() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, lock) = home_with(tmp.path(), &[FOO]);
    let archive = home.join("registry/cache/index.example-0123/foo-1.0.0.crate");
    let bytes = std::fs::read(&archive).unwrap();
    let dir = crate_dir(&home, "foo-1.0.0");
    let saved = tmp.path().join("saved");
    std::fs::rename(&dir, &saved).unwrap();
    std::fs::remove_file(&archive).unwrap();
    let mut reg = Registry::new(home.clone());
    let t0 = reg.measure(&lock, None);
    assert!(t0.is_empty(), "nothing fetched at t0");
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&archive, &bytes).unwrap();
    std::fs::rename(&saved, &dir).unwrap();
    let now = reg.measure(&lock, Some(&t0));
    assert_eq!(now["crate:foo@1.0.0"], PUBLISHED, "{now:?}");
}
