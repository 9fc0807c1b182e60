//! Measuring the oracle outside the loop: fresh copies of the workdir, check runs in
//! them, and the verdict of each run (`probe-check` and `doctor` build on this).
//!
//! A fresh copy is a recursive copy of the workdir as it is now — tracked, untracked
//! and ignored files, `.git` included, `.loopexec/` excluded — made once into a
//! pristine template and then copied again for every run, so no run can see what an
//! earlier one left behind and the user's real tree is never touched.

use crate::check::parse::{self, CheckInput, FormatChoice};
use crate::proc::{self, StepSpec};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The outcome of one check run in a probe.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProbeRun {
    pub green: bool,
    pub exit_code: Option<i32>,
    pub failing: BTreeSet<String>,
    pub duration_ms: u64,
    /// Ended by the timeout (not comparable with other runs).
    pub timed_out: bool,
}

impl ProbeRun {
    /// The comparable verdict: green, and the failing set.
    #[must_use]
    pub fn verdict(&self) -> (bool, &BTreeSet<String>) {
        (self.green, &self.failing)
    }
}

/// How to run the check.
#[derive(Debug, Clone)]
pub struct CheckSpec {
    pub command: String,
    pub success_exit_code: i32,
    pub format: FormatChoice,
    pub timeout: Option<Duration>,
    /// Variables removed from the check's environment (provider secrets).
    pub env_remove: Vec<String>,
}

/// A pristine copy of a workdir from which fresh copies are made.
pub struct Sandbox {
    template: tempfile::TempDir,
}

fn copy_tree(from: &Path, to: &Path, top: bool) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let name = e.file_name();
        if top && name == ".loopexec" {
            continue;
        }
        let src = e.path();
        let dst = to.join(&name);
        let ft = e.file_type()?;
        if ft.is_dir() {
            copy_tree(&src, &dst, false)?;
        } else if ft.is_symlink() {
            let target = std::fs::read_link(&src)?;
            std::os::unix::fs::symlink(target, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

impl Sandbox {
    /// Copies `workdir` into a template.
    ///
    /// # Errors
    /// I/O errors while copying.
    pub fn new(workdir: &Path) -> std::io::Result<Sandbox> {
        let template = tempfile::Builder::new()
            .prefix("loopexec-probe-")
            .tempdir()?;
        copy_tree(workdir, &template.path().join("w"), true)?;
        Ok(Sandbox { template })
    }

    /// The template's tree (do not run checks in it).
    #[must_use]
    pub fn template(&self) -> PathBuf {
        self.template.path().join("w")
    }

    /// A new fresh copy of the template; removed when dropped.
    ///
    /// # Errors
    /// I/O errors while copying.
    pub fn fresh(&self) -> std::io::Result<FreshCopy> {
        let dir = tempfile::Builder::new()
            .prefix("loopexec-copy-")
            .tempdir()?;
        copy_tree(&self.template(), &dir.path().join("w"), false)?;
        Ok(FreshCopy { dir })
    }
}

/// One fresh copy of the workdir.
pub struct FreshCopy {
    dir: tempfile::TempDir,
}

impl FreshCopy {
    /// The copy's workdir.
    #[must_use]
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("w")
    }
}

/// Runs the check once in `dir` with extra environment `env`; `load` runs CPU
/// burners on every core while the check runs.
///
/// # Errors
/// Capture files cannot be created.
pub fn run_check(
    spec: &CheckSpec,
    dir: &Path,
    env: &[(String, String)],
    load: bool,
) -> std::io::Result<ProbeRun> {
    let caps = tempfile::tempdir()?;
    let burners = if load { Some(Load::start()) } else { None };
    let step_spec = StepSpec {
        sandbox: None,
        command: &spec.command,
        cwd: dir,
        env_remove: &spec.env_remove,
        env_set: env,
        timeout: spec.timeout,
        stall_timeout: None,
        grace: Duration::from_secs(2),
        limits: proc::CaptureLimits::default(),
        capture_prefix: caps.path().join("check"),
        spool_prefix: None,
        workdir: caps.path(),
        stdout_sink: None,
    };
    let (step, spools) = proc::run_step(step_spec, &mut |_| None)?;
    drop(burners);
    let exit = parse::exit_for_parser(step.exit_code, step.signal, spec.success_exit_code);
    let parsed = parse::parse(
        &CheckInput {
            stdout: Some(spools.source(proc::Stream::Stdout)),
            stderr: Some(spools.source(proc::Stream::Stderr)),
            exit_code: exit,
            reports: &[],
        },
        spec.format,
    );
    let failing = parsed.failing();
    Ok(ProbeRun {
        green: step.exited_with(spec.success_exit_code) && failing.is_empty(),
        exit_code: step.exit_code,
        failing,
        duration_ms: step.duration_ms,
        timed_out: step.timed_out,
    })
}

/// CPU burners on every core, stopped when dropped (the `load` dimension).
struct Load {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start() -> Load {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let n = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
        let threads = (0..n)
            .map(|_| {
                let s = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !s.load(std::sync::atomic::Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        Load { stop, threads }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// An environment dimension `probe-check` can perturb.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dimension {
    Order,
    Seed,
    Tz,
    Locale,
    Concurrency,
    Load,
}

impl Dimension {
    /// Parses a `--dimensions` item.
    #[must_use]
    pub fn parse(s: &str) -> Option<Dimension> {
        Some(match s.trim() {
            "order" => Dimension::Order,
            "seed" => Dimension::Seed,
            "tz" => Dimension::Tz,
            "locale" => Dimension::Locale,
            "concurrency" => Dimension::Concurrency,
            "load" => Dimension::Load,
            _ => return None,
        })
    }

    /// The name used in reports.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Dimension::Order => "order",
            Dimension::Seed => "seed",
            Dimension::Tz => "tz",
            Dimension::Locale => "locale",
            Dimension::Concurrency => "concurrency",
            Dimension::Load => "load",
        }
    }

    /// The perturbations of this dimension: each is an environment to add (and for
    /// `load`, CPU burners). Variants are chosen to differ from the current
    /// environment (a time zone far from the current offset, a locale with unusual
    /// case and number rules, seeds that differ run to run, one thread vs many).
    #[must_use]
    pub fn variants(self) -> Vec<Vec<(String, String)>> {
        let kv = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect::<Vec<_>>()
        };
        match self {
            Dimension::Tz => {
                let cur = std::env::var("TZ").unwrap_or_default();
                let zones = ["Asia/Kathmandu", "Pacific/Chatham", "America/St_Johns"];
                zones
                    .iter()
                    .filter(|z| **z != cur)
                    .take(2)
                    .map(|z| kv(&[("TZ", z)]))
                    .collect()
            }
            Dimension::Locale => vec![
                kv(&[("LC_ALL", "tr_TR.UTF-8"), ("LANG", "tr_TR.UTF-8")]),
                kv(&[("LC_ALL", "de_DE.UTF-8"), ("LANG", "de_DE.UTF-8")]),
            ],
            Dimension::Seed => ["1", "4242"]
                .iter()
                .map(|s| {
                    kv(&[
                        ("PYTHONHASHSEED", s),
                        ("SEED", s),
                        ("RANDOM_SEED", s),
                        ("TEST_SEED", s),
                        ("HYPOTHESIS_SEED", s),
                    ])
                })
                .collect(),
            Dimension::Concurrency => vec![
                kv(&[
                    ("RUST_TEST_THREADS", "1"),
                    ("GOMAXPROCS", "1"),
                    ("OMP_NUM_THREADS", "1"),
                    ("JEST_WORKERS", "1"),
                ]),
                kv(&[
                    ("RUST_TEST_THREADS", "16"),
                    ("GOMAXPROCS", "16"),
                    ("OMP_NUM_THREADS", "16"),
                ]),
            ],
            Dimension::Order => vec![kv(&[
                ("GOFLAGS", "-shuffle=on"),
                ("RUST_TEST_SHUFFLE", "1"),
                ("PYTEST_ADDOPTS", "-p no:cacheprovider"),
            ])],
            Dimension::Load => vec![Vec::new()],
        }
    }
}
