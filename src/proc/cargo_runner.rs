//! The test-binary guard: loopexec as cargo's runner for the clean room's check.
//!
//! `cargo test` links every test binary of the invocation first and then runs them
//! one after another (the library's unit tests, the binaries' unit tests, the
//! integration tests). Code under test that runs in the first binary could otherwise
//! overwrite a later one in the room's `CARGO_TARGET_DIR` — an integration test binary
//! replaced by a script printing a libtest pass, or the product binary
//! (`CARGO_BIN_EXE_<name>`) that integration tests spawn — and cargo would run the
//! replacement under the real test's name. The judged tree never changes, so no guard
//! of the tree sees it.
//!
//! In the clean room loopexec names itself as cargo's runner for the host target
//! (`CARGO_TARGET_<TRIPLE>_RUNNER`, set by [`runner_env`]). Cargo then starts every test
//! binary (and `cargo run`'s binary) as `loopexec __cargo-runner <binary> <args…>`.
//! [`run`] adds a Landlock layer that refuses writes beneath every profile directory
//! of the target directory (`target/debug`, `target/<triple>/release`, … — each
//! directory holding a `deps/`) and then executes the binary, so the binary and
//! everything it starts can read and run what cargo linked but not change it. Writes
//! elsewhere stay as the check's own sandbox allows them (Landlock layers intersect):
//! `CARGO_TARGET_TMPDIR`, the room, temporary directories. The room's `TMPDIR` is
//! protected too: rustdoc links the doctests there, and cargo runs them after every
//! other binary (a background process a test left running swapped one in a fresh
//! review); the tests' own temporary files go to [`TESTS_TMP`] inside it.
//!
//! Landlock grants whole hierarchies, so the layer grants each sibling of the
//! protected path instead of its parents: nothing may be created directly in the
//! target directory or its ancestors. Tests that build or write where cargo's target
//! directory is (trybuild's `target/tests/trybuild`, a nested `cargo build`, a
//! `testdir`) find it through `CARGO_TARGET_DIR` or `cargo metadata`, so the runner
//! points `CARGO_TARGET_DIR` at [`TESTS_TARGET`], a directory of their own inside the
//! target directory. What it costs a project: a test that writes beneath a profile
//! directory by a path of its own making (`current_exe()`'s ancestors) gets a
//! permission error, and a test that reads `CARGO_TARGET_DIR` to find the product
//! binary finds the tests' directory instead (`CARGO_BIN_EXE_<name>` is unchanged).
//! Where the project or `CARGO_HOME` already configures a runner, loopexec leaves it in
//! charge and the guard is off ([`runner_env`]); where the kernel has no Landlock the
//! runner only executes the binary (the run records that the check is not sandboxed).

use landlock::{AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, ABI};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The first argument that makes loopexec act as cargo's runner (not a subcommand:
/// it is never typed by a person and never shown in `--help`).
pub const RUNNER_ARG: &str = "__cargo-runner";

/// The directory in the target directory that the tests' own builds go to: the
/// runner points `CARGO_TARGET_DIR` there for the binary it runs (see [`run`]). Never a
/// profile directory to protect, whatever it holds.
pub const TESTS_TARGET: &str = "tests-target";

/// The directory in the check's `TMPDIR` that the tests' temporary files go to: the
/// runner points `TMPDIR` there (see [`run`]).
pub const TESTS_TMP: &str = "tests";

/// How deep below the target directory a profile directory may be:
/// `target/debug` (1) or `target/<triple>/debug` (2).
const PROFILE_DEPTH: usize = 2;

/// The environment that names loopexec (`exe`) as cargo's runner for the host target,
/// or nothing when it cannot be named or a runner is already configured.
///
/// Shape: `(CARGO_TARGET_<TRIPLE>_RUNNER, "<exe> __cargo-runner")` for the host's
/// `gnu` and `musl` triples (cargo reads the one it builds for). Empty when `exe`
/// contains whitespace (cargo splits a runner string on spaces), when `base` already
/// sets a `CARGO_TARGET_…_RUNNER`, or when one of `configs` (cargo configuration
/// files: the room's `.cargo/config.toml`, `CARGO_HOME`'s) mentions `runner`.
#[must_use]
pub fn runner_env(
    exe: &Path,
    base: &[(String, String)],
    configs: &[PathBuf],
) -> Vec<(String, String)> {
    let exe = exe.to_string_lossy();
    if exe.chars().any(char::is_whitespace) {
        return Vec::new();
    }
    let is_runner_var = |k: &str| k.starts_with("CARGO_TARGET_") && k.ends_with("_RUNNER");
    if base.iter().any(|(k, _)| is_runner_var(k)) {
        return Vec::new();
    }
    let configured = configs.iter().any(|p| {
        std::fs::read_to_string(p)
            .is_ok_and(|s| s.lines().any(|l| l.trim_start().starts_with("runner")))
    });
    if configured {
        return Vec::new();
    }
    let arch = std::env::consts::ARCH.to_ascii_uppercase();
    ["GNU", "MUSL"]
        .iter()
        .map(|env| {
            (
                format!("CARGO_TARGET_{arch}_UNKNOWN_LINUX_{env}_RUNNER"),
                format!("{exe} {RUNNER_ARG}"),
            )
        })
        .collect()
}

/// The profile directories of `target`: each directory at most `PROFILE_DEPTH`
/// levels below it that holds a `deps/` directory. Symbolic links are not followed.
#[must_use]
pub fn profile_dirs(target: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut level = vec![target.to_path_buf()];
    for _ in 0..PROFILE_DEPTH {
        let mut next = Vec::new();
        for dir in &level {
            for child in real_dirs(dir) {
                let name = child.file_name().map(|n| n.to_string_lossy().into_owned());
                let name = name.as_deref().unwrap_or("");
                // the tests' own builds and CARGO_TARGET_TMPDIR are theirs; below the
                // target directory only a target triple holds profiles (a test that
                // made thousands of `tmp/wN/deps` slowed every runner start)
                if name == TESTS_TARGET || (dir == target && name == "tmp") {
                    continue;
                }
                if child
                    .join("deps")
                    .symlink_metadata()
                    .is_ok_and(|m| m.is_dir())
                {
                    found.push(child);
                } else if name.contains('-') {
                    next.push(child);
                }
            }
        }
        level = next;
    }
    found.sort();
    found
}

/// The profile directories to protect for running `binary`: those of `env_target`
/// (`CARGO_TARGET_DIR`) and, whatever target directory the binary was built in
/// (`--target-dir`, a nested workspace's own), the binary's own profile directory —
/// its nearest ancestor holding a `deps/` directory, at most three levels up
/// (`debug/deps/t-1`, `debug/t`, `debug/examples/e`) — and its sibling profiles.
/// Absolute paths, sorted, without duplicates.
#[must_use]
pub fn protected_dirs(binary: &Path, env_target: Option<&Path>) -> Vec<PathBuf> {
    let mut out = env_target.map(profile_dirs).unwrap_or_default();
    let binary = std::path::absolute(binary).unwrap_or_else(|_| binary.to_path_buf());
    let own = binary
        .ancestors()
        .skip(1)
        .take(3)
        .find(|d| d.join("deps").symlink_metadata().is_ok_and(|m| m.is_dir()));
    if let Some(profile) = own {
        out.push(profile.to_path_buf());
        if let Some(target) = profile.parent() {
            out.extend(profile_dirs(target));
        }
    }
    out.retain(|p| p.is_absolute());
    out.sort();
    out.dedup();
    out
}

/// What the runner's layer lets a test write: every entry of every ancestor of a
/// `protected` directory (from `/` down) that is neither a protected directory nor an
/// ancestor of one. Symbolic links are left out (a rule on one would grant its
/// target). Each protected directory must be absolute.
#[must_use]
pub fn writable_siblings(protected: &[PathBuf]) -> Vec<PathBuf> {
    let on_path = |p: &Path| protected.iter().any(|d| d.starts_with(p));
    let mut ancestors: Vec<&Path> = protected
        .iter()
        .flat_map(|d| d.ancestors().skip(1))
        .collect();
    ancestors.sort();
    ancestors.dedup();
    let mut out = Vec::new();
    for dir in ancestors {
        let Ok(rd) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| !t.is_symlink()) && !on_path(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The directories directly in `dir`, symbolic links left out.
fn real_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

/// Refuses writes beneath `protected` for this process and what it starts, by a
/// Landlock layer granting writes on [`writable_siblings`] and `also` (directories
/// inside a protected one that stay writable) only. `Ok(false)` when the
/// kernel has no Landlock (nothing enforced).
///
/// # Errors
/// The kernel refused the ruleset.
fn protect(protected: &[PathBuf], also: &[PathBuf]) -> Result<bool, landlock::RulesetError> {
    let abi = ABI::V6;
    let write = AccessFs::from_write(abi);
    let mut rs = Ruleset::default().handle_access(write)?.create()?;
    for p in writable_siblings(protected).iter().chain(also) {
        // an entry removed since it was listed grants nothing
        if let Ok(fd) = PathFd::new(p) {
            rs = rs.add_rule(PathBeneath::new(fd, write))?;
        }
    }
    let status = rs.restrict_self()?;
    Ok(status.ruleset != landlock::RulesetStatus::NotEnforced)
}

/// `loopexec __cargo-runner <binary> <args…>`: protects the profile directories of
/// `CARGO_TARGET_DIR` (see the module documentation) and executes `<binary>` with
/// `<args…>` in this process. The binary sees `CARGO_TARGET_DIR` pointing at
/// [`TESTS_TARGET`] inside the target directory (created here): what a test builds or
/// writes where cargo's target directory is (trybuild's `tests/trybuild`, a nested
/// `cargo build`, a `testdir`) goes to a directory it may write, since nothing can be
/// created in the target directory itself once its profile directories are protected. Returns only on failure, with the exit code to use:
/// 101 (libtest's own failure code) when there is no binary, the protection cannot
/// be set up on a kernel that has Landlock, or the binary cannot be executed — each
/// named on stderr. A test binary loopexec could not protect is never run unguarded.
#[must_use]
pub fn run(args: &[OsString]) -> u8 {
    use std::os::unix::process::CommandExt;
    let Some((binary, rest)) = args.split_first() else {
        eprintln!("loopexec {RUNNER_ARG}: no binary to run (cargo passes one; this is not a command to type)");
        return 101;
    };
    let env_target = std::env::var_os("CARGO_TARGET_DIR")
        .filter(|t| !t.is_empty())
        .map(PathBuf::from);
    let mut protected = protected_dirs(Path::new(binary), env_target.as_deref());
    let mut also = Vec::new();
    let mut cmd = std::process::Command::new(binary);
    cmd.args(rest);
    // The room's TMPDIR (beside its target directory) is where rustdoc links the
    // doctests cargo runs later: protected like the profile directories, with the
    // tests' own temporary files in a directory of their own inside it.
    let room_tmp = std::env::var_os("TMPDIR")
        .filter(|t| !t.is_empty())
        .map(PathBuf::from)
        .filter(|t| {
            t.is_absolute()
                && t.is_dir()
                && env_target
                    .as_deref()
                    .is_some_and(|target| t.parent().is_some() && t.parent() == target.parent())
        });
    if let Some(tmp) = room_tmp {
        let own = tmp.join(TESTS_TMP);
        if let Err(e) = std::fs::create_dir_all(&own) {
            eprintln!(
                "loopexec {RUNNER_ARG}: cannot create {} for the tests' temporary files ({e}); not running {}",
                own.display(),
                Path::new(binary).display()
            );
            return 101;
        }
        cmd.env("TMPDIR", &own);
        protected.push(tmp);
        also.push(own);
    }
    if let Some(target) = &env_target {
        let tests_target = target.join(TESTS_TARGET);
        if let Err(e) = std::fs::create_dir_all(&tests_target) {
            eprintln!(
                "loopexec {RUNNER_ARG}: cannot create {} for the tests' own builds ({e}); not running {}",
                tests_target.display(),
                Path::new(binary).display()
            );
            return 101;
        }
        cmd.env("CARGO_TARGET_DIR", tests_target);
    }
    if !protected.is_empty() {
        if let Err(e) = protect(&protected, &also) {
            eprintln!(
                "loopexec {RUNNER_ARG}: cannot protect the test binaries in {} from the tests ({e}); not running {}",
                protected[0].display(),
                Path::new(binary).display()
            );
            return 101;
        }
    }
    let err = cmd.exec();
    eprintln!(
        "loopexec {RUNNER_ARG}: cannot run {}: {err}",
        Path::new(binary).display()
    );
    101
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(paths: &[&str]) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        for p in paths {
            let p = t.path().join(p);
            if p.extension().is_some() {
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, "x").unwrap();
            } else {
                std::fs::create_dir_all(&p).unwrap();
            }
        }
        t
    }

    #[test]
    fn profile_directories_are_those_holding_deps() {
        let t = tree(&[
            "target/debug/deps",
            "target/release/deps",
            "target/x86_64-unknown-linux-musl/debug/deps",
            "target/tmp",
            "target/tests-target/debug/deps",
            "target/tmp/w1/deps",
            "target/plain/debug/deps",
            "target/doc/src",
            "target/a/b/c/deps",
        ]);
        let got = profile_dirs(&t.path().join("target"));
        let rel: Vec<String> = got
            .iter()
            .map(|p| p.strip_prefix(t.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(
            rel,
            [
                "target/debug",
                "target/release",
                "target/x86_64-unknown-linux-musl/debug"
            ]
        );
    }

    #[test]
    fn a_binary_s_own_profile_is_protected_wherever_it_was_built() {
        let t = tree(&[
            "elsewhere/debug/deps/calc_test-1.bin",
            "elsewhere/release/deps",
            "elsewhere/debug/examples",
            "room-target/debug/deps",
        ]);
        let root = t.path();
        let got = protected_dirs(
            &root.join("elsewhere/debug/deps/calc_test-1.bin"),
            Some(&root.join("room-target")),
        );
        assert_eq!(
            got,
            [
                root.join("elsewhere/debug"),
                root.join("elsewhere/release"),
                root.join("room-target/debug")
            ]
        );
        let example = protected_dirs(&root.join("elsewhere/debug/examples/demo"), None);
        assert_eq!(
            example,
            [root.join("elsewhere/debug"), root.join("elsewhere/release")]
        );
        assert!(protected_dirs(Path::new("/usr/bin/true"), None).is_empty());
    }

    #[test]
    fn siblings_exclude_the_protected_path_and_symlinks() {
        let t = tree(&[
            "base/tree/src/lib.rs",
            "base/home",
            "base/cargo-target/debug/deps/calc-1",
            "base/cargo-target/tmp",
            "base/cargo-target/CACHEDIR.TAG",
            "base/note.txt",
        ]);
        let root = t.path();
        std::os::unix::fs::symlink(
            root.join("base/cargo-target/debug"),
            root.join("base/cargo-target/debug-link"),
        )
        .unwrap();
        let protected = vec![root.join("base/cargo-target/debug")];
        let got = writable_siblings(&protected);
        for want in [
            "base/tree",
            "base/home",
            "base/note.txt",
            "base/cargo-target/tmp",
            "base/cargo-target/CACHEDIR.TAG",
        ] {
            assert!(got.contains(&root.join(want)), "{want} in {got:?}");
        }
        for never in [
            "base",
            "base/cargo-target",
            "base/cargo-target/debug",
            "base/cargo-target/debug/deps",
            "base/cargo-target/debug-link",
        ] {
            assert!(!got.contains(&root.join(never)), "{never} not in {got:?}");
        }
        assert!(
            got.iter().all(|p| !protected[0].starts_with(p)),
            "no rule is an ancestor of the protected directory"
        );
    }

    #[test]
    fn the_runner_is_named_unless_one_is_configured() {
        let t = tree(&[]);
        let exe = Path::new("/opt/bin/loopexec");
        let got = runner_env(exe, &[], &[]);
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|(k, v)| k.starts_with("CARGO_TARGET_")
            && k.ends_with("_RUNNER")
            && v == "/opt/bin/loopexec __cargo-runner"));
        let cfg = t.path().join("config.toml");
        std::fs::write(
            &cfg,
            "[target.x86_64-unknown-linux-gnu]\nrunner = \"qemu\"\n",
        )
        .unwrap();
        assert!(runner_env(exe, &[], std::slice::from_ref(&cfg)).is_empty());
        std::fs::write(&cfg, "[build]\njobs = 2\n").unwrap();
        assert_eq!(runner_env(exe, &[], &[cfg]).len(), 2);
        let set = [(
            "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER".to_string(),
            "qemu".to_string(),
        )];
        assert!(runner_env(exe, &set, &[]).is_empty());
        assert!(runner_env(Path::new("/my tools/loopexec"), &[], &[]).is_empty());
    }

    /// A child started after [`protect`] cannot write beneath the protected directory
    /// but can write beside it (skipped where the kernel has no Landlock).
    #[test]
    fn a_protected_profile_directory_refuses_the_test_s_writes() {
        if crate::proc::sandbox::kernel_abi().is_none() {
            eprintln!("no landlock here: skipped");
            return;
        }
        let t = tree(&["target/debug/deps/calc_test-1.bin", "target/tmp"]);
        let target = t.path().join("target");
        let protected = profile_dirs(&target);
        let bin = target.join("debug/deps/calc_test-1.bin");
        let tmp = target.join("tmp/out.txt");
        // the layer is set on a thread of its own; the child inherits it
        let status = std::thread::scope(|s| {
            s.spawn(|| {
                assert!(protect(&protected, &[]).unwrap());
                std::process::Command::new("sh")
                    .arg("-c")
                    .arg(format!(
                        "echo forged > '{}' 2>/dev/null && exit 3; mv '{}' '{}' 2>/dev/null && exit 4; echo ok > '{}' || exit 5",
                        bin.display(),
                        bin.display(),
                        tmp.display(),
                        tmp.display()
                    ))
                    .status()
                    .unwrap()
            })
            .join()
            .unwrap()
        });
        assert_eq!(status.code(), Some(0), "denied in deps, allowed in tmp");
        assert_eq!(std::fs::read_to_string(&bin).unwrap(), "x");
        assert_eq!(std::fs::read_to_string(&tmp).unwrap(), "ok\n");
    }
}
