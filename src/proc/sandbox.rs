//! The exec's and the check's filesystem sandboxes (Landlock).
//!
//! The agent runs as the same user as loopexec, so without a sandbox it can write
//! anything loopexec can: the clean rooms, the check's toolchain, the user's
//! configuration. Under Landlock (Linux ≥ 5.13, unprivileged; the crate `landlock`) the
//! exec may read and execute everything, and write only:
//! * the workdir (loopexec's own records inside it are protected by tamper evidence
//!   instead: Landlock grants whole hierarchies and cannot carve `.loopexec/` out),
//! * temporary directories (`/tmp`, `/var/tmp`, `$TMPDIR`) and `/dev`,
//! * the agent CLIs' own state under `$HOME` that exists (`.claude`, `.claude.json`,
//!   `.config/claude`, `.codex`, `.gemini`), and package caches (`.cache`, `.npm`,
//!   `.cargo/registry`, `.cargo/git`; the crates a check compiles from the registry are
//!   measured instead, [`crate::observe::registry`]) — never `.cargo/bin` (first on a rustup user's
//!   `PATH`: a shim there would run as the check's `rustc`), never the rest of
//!   `.config` (git's `core.fsmonitor`, loopexec's signing key),
//! * paths the user declares (`[sandbox] writable`).
//!
//! Where the kernel has Landlock ABI 6 or newer, the exec is also scoped: it cannot
//! signal processes outside its sandbox (loopexec, the check, the person's shell) nor
//! connect to abstract Unix sockets created outside it.
//!
//! The check runs under a sandbox of its own ([`SandboxPlan::for_check`]): it may
//! write its clean room (or the workdir, in place), temporary directories and the
//! package caches it fills, not the toolchain it runs on nor loopexec's state. Code
//! under test runs inside the check, and what it leaves outside the room (a runner
//! module rewritten in site-packages, a snapshot blob replaced) would be read by the
//! next check with no change to the judged tree.
//!
//! The ruleset is built in loopexec, enforced on a short-lived thread of its own
//! (`restrict_self` applies to the calling thread), and that thread spawns the step:
//! the child inherits the thread's domain, so it holds for the agent and everything it
//! starts, and loopexec's other threads stay unrestricted.
//! Where the kernel has no Landlock, the run says so (`run_started.sandbox`, and every
//! verdict) instead of pretending.

use landlock::{
    path_beneath_rules, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr,
    Scope, ABI,
};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The Landlock ABI loopexec asks for (best effort: an older kernel enforces what it
/// has, and the run records the kernel's ABI).
const ABI_WANTED: ABI = ABI::V6;

/// Variables naming servers outside the loop that the exec could ask to start
/// processes for it — a tmux or screen server, the user's D-Bus session bus
/// (`systemd-run --user`) — which then run outside its process group, its step token
/// and its sandbox. They are removed from the exec's environment. This only raises
/// the bar: a process can still find such a server's socket by its well-known path
/// (SPEC §3.13 lists it as not defended).
pub const OUTSIDE_SERVERS: &[&str] = &["TMUX", "TMUX_PANE", "STY", "DBUS_SESSION_BUS_ADDRESS"];

/// Errors building the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("landlock: {0}")]
    Landlock(String),
}

/// What a step may write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPlan {
    /// Existing paths (directories or files) the step may write.
    pub writable: Vec<PathBuf>,
    /// Also scope signals and abstract Unix sockets to the sandbox (Landlock ABI 6):
    /// the exec's plan does; the check's does not (a test may talk to a server started
    /// outside the loop over an abstract socket, as a D-Bus session bus listens).
    #[serde(default)]
    pub scoped: bool,
}

/// The Landlock ABI version of the running kernel, or `None` when Landlock is not
/// available (not built in, disabled at boot, or an old kernel).
#[must_use]
pub fn kernel_abi() -> Option<i64> {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only
    // returns the ABI version; no memory is passed.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    (v > 0).then_some(v)
}

impl SandboxPlan {
    /// The default plan for `workdir` plus `declared` paths (`~/` expanded against
    /// `home`); paths that do not exist are left out.
    #[must_use]
    pub fn for_workdir(workdir: &Path, home: Option<&Path>, declared: &[String]) -> SandboxPlan {
        let mut w = temporaries(workdir);
        if let Some(t) = std::env::var_os("TMPDIR").filter(|v| !v.is_empty()) {
            w.push(PathBuf::from(t));
        }
        if let Some(h) = home {
            for d in [
                ".claude",
                ".claude.json",
                ".config/claude",
                ".codex",
                ".gemini",
                ".cache",
                ".npm",
                ".cargo/registry",
                ".cargo/git",
            ] {
                w.push(h.join(d));
            }
        }
        finish(w, home, declared, true)
    }

    /// The check's plan: it may write `root` (the clean room's tree, or the workdir
    /// when the check runs in place), `also` (the room's other directories — `HOME`,
    /// cargo target, … but not the directory holding them — and the dependency
    /// directories the room links to, which are measured instead), the
    /// temporary directories and `/dev`, the package caches it fills — cargo's
    /// registry and git checkouts, Go's module and build caches, npm's cache, `~/.cache`
    /// (each where its variable in `env` points, else its default under `home`),
    /// `CARGO_TARGET_DIR` when set — and `declared` (`[sandbox] writable`). Not the
    /// interpreter's or a user's site-packages, `~/.cargo/bin`, `~/.rustup`, the user's
    /// `.git`, nor loopexec's state directory: code under test that rewrites the runner
    /// it is tested by (`_pytest/python.py`) or a snapshot for the next check is
    /// refused by the kernel. Paths that do not exist are left out.
    #[must_use]
    pub fn for_check(
        root: &Path,
        also: &[PathBuf],
        home: Option<&Path>,
        declared: &[String],
        env: impl Fn(&str) -> Option<String>,
    ) -> SandboxPlan {
        let var = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let under_home = |rel: &str| home.map(|h| h.join(rel));
        let mut w = temporaries(root);
        w.extend(also.iter().cloned());
        let cargo_home = var("CARGO_HOME").or_else(|| under_home(".cargo"));
        let gopath = var("GOPATH")
            .and_then(|p| std::env::split_paths(&p).next())
            .or_else(|| under_home("go"));
        let found = [
            var("TMPDIR"),
            cargo_home.as_ref().map(|c| c.join("registry")),
            cargo_home.as_ref().map(|c| c.join("git")),
            var("CARGO_TARGET_DIR"),
            var("GOMODCACHE").or_else(|| gopath.map(|g| g.join("pkg/mod"))),
            var("GOCACHE").or_else(|| under_home(".cache/go-build")),
            var("npm_config_cache").or_else(|| under_home(".npm")),
            var("XDG_CACHE_HOME").or_else(|| under_home(".cache")),
        ];
        // a variable holding a relative path names no place of its own
        w.extend(found.into_iter().flatten().filter(|p| p.is_absolute()));
        finish(w, home, declared, false)
    }

    /// Builds the ruleset (before the fork).
    ///
    /// # Errors
    /// [`SandboxError`] when the kernel refuses the ruleset.
    pub fn prepare(&self) -> Result<Prepared, SandboxError> {
        let err = |e: &dyn std::fmt::Display| SandboxError::Landlock(e.to_string());
        let mut rs = Ruleset::default()
            .handle_access(AccessFs::from_all(ABI_WANTED))
            .map_err(|e| err(&e))?;
        if self.scoped {
            rs = rs
                .scope(Scope::Signal | Scope::AbstractUnixSocket)
                .map_err(|e| err(&e))?;
        }
        let rs = rs
            .create()
            .map_err(|e| err(&e))?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI_WANTED)))
            .map_err(|e| err(&e))?
            .add_rules(path_beneath_rules(
                &self.writable,
                AccessFs::from_all(ABI_WANTED),
            ))
            .map_err(|e| err(&e))?;
        Ok(Prepared { ruleset: Some(rs) })
    }
}

/// `root` and the temporary directories every step may write (`/tmp`, `/var/tmp`,
/// `/dev`).
/// A directory outside every place a sandboxed step may write as a temporary
/// directory (`/tmp`, `/var/tmp`, `/dev`, `$TMPDIR`): the first of `candidates` that
/// is a directory and lies outside them. Tests that need a place the check cannot
/// write (a runner outside the room, a toolchain under a `HOME`) make it here; `None`
/// when every candidate is temporary (a checkout under `/tmp` with `HOME` there too).
#[must_use]
pub fn outside_temporaries(candidates: &[PathBuf]) -> Option<PathBuf> {
    let mut temps = temporaries(Path::new("/dev"));
    if let Some(t) = std::env::var_os("TMPDIR").filter(|v| !v.is_empty()) {
        temps.push(PathBuf::from(t));
    }
    candidates
        .iter()
        .filter(|c| c.is_absolute() && c.is_dir())
        .find(|c| {
            let real = std::fs::canonicalize(c).unwrap_or_else(|_| (*c).clone());
            !temps
                .iter()
                .any(|t| real.starts_with(t) || c.starts_with(t))
        })
        .cloned()
}

fn temporaries(root: &Path) -> Vec<PathBuf> {
    vec![
        root.to_path_buf(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev"),
    ]
}

/// The plan of `w` plus the `declared` paths (`~/` expanded against `home`): the paths
/// that exist, each once.
fn finish(
    mut w: Vec<PathBuf>,
    home: Option<&Path>,
    declared: &[String],
    scoped: bool,
) -> SandboxPlan {
    for d in declared {
        let p = match (d.strip_prefix("~/"), home) {
            (Some(rest), Some(h)) => h.join(rest),
            _ => PathBuf::from(d),
        };
        w.push(p);
    }
    w.retain(|p| p.exists());
    w.sort();
    w.dedup();
    SandboxPlan {
        writable: w,
        scoped,
    }
}

/// A ruleset ready to be applied in a child.
pub struct Prepared {
    ruleset: Option<RulesetCreated>,
}

impl Prepared {
    /// Spawns `cmd` under the ruleset, without a `fork` of loopexec: a thread of its
    /// own restricts itself (`landlock_restrict_self` and `no_new_privs` apply to the
    /// calling thread only) and spawns the child, which inherits that thread's
    /// credentials, Landlock domain included; the thread then ends. The spawn stays
    /// `posix_spawn` (`CLONE_VFORK`): a `pre_exec` hook would make it a full `fork`
    /// of loopexec's address space for every sandboxed step.
    ///
    /// # Errors
    /// The ruleset could not be enforced, or the spawn failed.
    pub fn spawn(mut self, cmd: &mut Command) -> std::io::Result<std::process::Child> {
        let rs = self.ruleset.take();
        std::thread::scope(|s| {
            s.spawn(move || {
                if let Some(r) = rs {
                    r.restrict_self()
                        .map_err(|e| std::io::Error::other(e.to_string()))?;
                }
                cmd.spawn()
            })
            .join()
            .unwrap_or_else(|_| {
                Err(std::io::Error::other(
                    "the sandboxed spawn's thread panicked",
                ))
            })
        })
    }
}

use std::process::Command;

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `cmd` under `plan` to its end.
    fn status(plan: &SandboxPlan, cmd: &mut Command) -> std::process::ExitStatus {
        let mut child = plan.prepare().unwrap().spawn(cmd).unwrap();
        child.wait().unwrap()
    }

    #[test]
    fn the_exec_writes_the_workdir_and_tmp_and_nothing_else() {
        if kernel_abi().is_none() {
            eprintln!("no landlock on this kernel: skipped");
            return;
        }
        let base = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        let wd = base.path().join("wd");
        let outside = base.path().join("outside");
        std::fs::create_dir_all(&wd).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let plan = SandboxPlan {
            writable: vec![wd.clone()],
            scoped: true,
        };
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!(
            "echo a > '{}/in' && cat /etc/hostname >/dev/null; echo b > '{}/out'",
            wd.display(),
            outside.display()
        ));
        let st = status(&plan, &mut cmd);
        assert!(!st.success(), "the write outside the plan must fail");
        assert!(wd.join("in").exists());
        assert!(!outside.join("out").exists());
    }

    /// Before: the exec could `kill -STOP` loopexec or the check (same user), and its
    /// plan let it write `~/.cargo/bin` and `~/.config`.
    #[test]
    fn the_exec_cannot_signal_outside_its_sandbox_nor_write_tool_bins() {
        let home = tempfile::tempdir().unwrap();
        for d in [".cargo/bin", ".cargo/registry", ".config/git", ".claude"] {
            std::fs::create_dir_all(home.path().join(d)).unwrap();
        }
        let wd = tempfile::tempdir().unwrap();
        let plan = SandboxPlan::for_workdir(wd.path(), Some(home.path()), &[]);
        let has = |p: &str| plan.writable.contains(&home.path().join(p));
        assert!(has(".cargo/registry") && has(".claude"), "{plan:?}");
        assert!(
            !has(".cargo") && !has(".cargo/bin") && !has(".config"),
            "{plan:?}"
        );
        if kernel_abi().is_none_or(|a| a < 6) {
            eprintln!("no Landlock ABI 6 on this kernel: signal scoping skipped");
            return;
        }
        let mut cmd = Command::new("sh");
        // $PPID is this test process, outside the sandbox.
        cmd.arg("-c").arg("kill -0 $PPID");
        cmd.stderr(std::process::Stdio::null());
        let st = status(&plan, &mut cmd);
        assert!(
            !st.success(),
            "a signal to a process outside the sandbox must fail"
        );
        let mut inside = Command::new("sh");
        inside.arg("-c").arg("sleep 5 & kill $!");
        let mut child = plan.prepare().unwrap().spawn(&mut inside).unwrap();
        assert!(
            child.wait().unwrap().success(),
            "its own children it may signal"
        );
    }

    /// The check writes its room, what the room links to, temp dirs and the package
    /// caches (where their variables point, else under `HOME`); never the tool bins,
    /// rustup's toolchains, site-packages or the rest of `HOME`.
    #[test]
    fn the_check_writes_its_room_and_caches_not_its_toolchain() {
        // outside /tmp, which the check may write (the checkout, else HOME)
        let candidates: Vec<PathBuf> = [
            std::env::current_dir().ok(),
            std::env::var_os("HOME").map(PathBuf::from),
        ]
        .into_iter()
        .flatten()
        .collect();
        let base = outside_temporaries(&candidates).expect(
            "this test needs a directory outside /tmp: check the repository out elsewhere, or set HOME outside /tmp",
        );
        let home = tempfile::tempdir_in(base).unwrap();
        for d in [
            ".cargo/bin",
            ".cargo/registry",
            ".rustup",
            ".local/lib/python3.12/site-packages",
            ".npm",
            "go/pkg/mod",
            "go/bin",
        ] {
            std::fs::create_dir_all(home.path().join(d)).unwrap();
        }
        let elsewhere = tempfile::tempdir().unwrap();
        let gocache = elsewhere.path().join("gocache");
        std::fs::create_dir_all(&gocache).unwrap();
        let room = tempfile::tempdir().unwrap();
        let deps = room.path().join("linked-node_modules");
        std::fs::create_dir_all(&deps).unwrap();
        let env = |k: &str| (k == "GOCACHE").then(|| gocache.display().to_string());
        let plan = SandboxPlan::for_check(
            room.path(),
            std::slice::from_ref(&deps),
            Some(home.path()),
            &[],
            env,
        );
        let has = |p: &Path| plan.writable.iter().any(|w| w == p);
        for p in [
            room.path().to_path_buf(),
            deps,
            gocache.clone(),
            home.path().join(".cargo/registry"),
            home.path().join(".npm"),
            home.path().join("go/pkg/mod"),
        ] {
            assert!(has(&p), "{} missing from {plan:?}", p.display());
        }
        for p in [
            ".cargo",
            ".cargo/bin",
            ".rustup",
            ".local",
            "go",
            "go/bin",
            "",
        ] {
            assert!(!has(&home.path().join(p)), "{p} in {plan:?}");
        }
        assert!(
            !plan.scoped,
            "a check's signals and sockets are its own business"
        );
        if kernel_abi().is_none() {
            eprintln!("no landlock on this kernel: the write itself is not tried");
            return;
        }
        let target = home
            .path()
            .join(".local/lib/python3.12/site-packages/runner.py");
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(format!(
            "echo a > '{}/in'; echo b > '{}'",
            room.path().display(),
            target.display()
        ));
        cmd.stderr(std::process::Stdio::null());
        let st = status(&plan, &mut cmd);
        assert!(!st.success(), "the write into site-packages must fail");
        assert!(room.path().join("in").exists());
        assert!(!target.exists());
        // the restriction held for the child only: loopexec itself still writes there
        std::fs::write(&target, "x").expect("loopexec is not restricted by a step's sandbox");
    }
}
