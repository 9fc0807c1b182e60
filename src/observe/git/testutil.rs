//! Temporary repositories for tests (shared by the observe modules).
use std::path::Path;
use std::process::Command;

/// Runs git in `dir` with a local identity, panicking on failure (tests only).
pub fn g(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.email=t@example.com", "-c", "user.name=tester"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgSign=false",
        ])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A fresh repository in a temp dir.
pub fn repo() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    g(d.path(), &["init", "-q"]);
    d
}

pub fn write(dir: &Path, rel: &str, content: &str) {
    let p = dir.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(p, content).expect("write");
}

pub fn commit_all(dir: &Path, msg: &str) {
    g(dir, &["add", "-A"]);
    g(dir, &["commit", "-q", "-m", msg]);
}
