//! Known bugs in the code under test, pinned as failing tests (ignored until fixed).

use crate::support::*;
use std::process::Command;

/// Snapshots seed a temporary index with a plain copy of the user's index. The copy's
/// fresh mtime defeats git's racy-clean detection (git trusts cached stat data only
/// for entries older than the index file, comparing whole seconds), so a same-size
/// edit made in the same second as the user's index was written is invisible to every
/// snapshot taken in a later second. Here the agent stages one version and then
/// writes another (same size) and idles; the iteration's recorded snapshot holds the
/// staged version instead of the working tree the check ran on.
///
/// Without `Repo::settle` the same bug makes the basic-cap scenario (a counter going
/// 0 -> 1 -> 2 in a fresh commit) halt `hermeticity_violation` about a third of the
/// time, because the post-check snapshot reads the stale content.
#[test]
#[ignore = "BUG: git snapshot misses a same-size edit made in the same second as the user's index was written (copied index loses racy-git protection)"]
fn snapshot_sees_same_size_edit_in_same_second_as_index_write() {
    let r = Repo::new();
    r.write("count", "0\n").commit("fixture");
    let out = r.lx(&[
        "run",
        "--exec",
        "echo 1 > count && git add count && echo 2 > count && sleep 1.2",
        "--check",
        r#"test "$(cat count)" = 9"#,
        "--max-iterations",
        "1",
    ]);
    let v = out.expect(12, Some("max_iterations_reached"));
    assert_eq!(r.read("count"), "2\n");
    let lines = receipt_of(&v);
    let ex = events(&lines, "exec_finished");
    let tree = ex[0]["tree"].as_str().expect("exec_finished tree");
    let recorded = Command::new("git")
        .current_dir(r.path())
        .args(["show", &format!("{tree}:count")])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&recorded.stdout),
        "2\n",
        "the iteration's snapshot does not hold the working tree the check saw"
    );
}
