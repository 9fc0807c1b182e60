//! Helpers shared by the benchmarks: locating the release binary and running git in a
//! scratch repository. Each bench uses only some of them.
#![allow(dead_code)]

pub mod ab;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The `loopexec` binary to measure: `$LOOPEXEC_BIN` (another build, for a before and
/// after table), else `CARGO_BIN_EXE_loopexec` (set by cargo for benches), else
/// `$CARGO_TARGET_DIR/release/loopexec`, else `<manifest>/target/release/loopexec`.
pub fn loopexec_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("LOOPEXEC_BIN") {
        return PathBuf::from(p);
    }
    if let Some(p) = option_env!("CARGO_BIN_EXE_loopexec") {
        return PathBuf::from(p);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target"));
    let p = target.join("release").join("loopexec");
    assert!(
        p.exists(),
        "no loopexec binary at {}: run `cargo build --release` or set LOOPEXEC_BIN",
        p.display()
    );
    p
}

/// Runs `git ARGS` in `dir` with a fixed identity; panics when it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.invalid",
            "-c",
            "commit.gpgSign=false",
        ])
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("git runs");
    assert!(st.success(), "git {args:?} failed");
}
