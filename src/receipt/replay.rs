//! Replay: re-run a recorded check on the snapshot it judged, in a clean room, and
//! re-read kept check output — the observing half of `loopexec replay` (the command
//! compares fingerprints and re-derives verdicts).
//!
//! The clean room is a fresh temporary directory holding exactly the snapshot's files
//! ([`materialize`]); the check runs there with the run's recorded policy (command,
//! success exit code, format, reports, timeout, network, stripped secrets), and its
//! output is parsed by the same parser and completed by the same rules as in the loop
//! ([`complete_parse`]).
//!
//! Kept output: each check run's full stdout and stderr, zstd-compressed and capped
//! (`LOOPEXEC_KEEP_OUTPUT_BYTES` per stream before compression, default
//! [`DEFAULT_KEEP_BYTES`], `0` keeps nothing), as `<run-dir>/<it>.check[-<attempt>].
//! {stdout,stderr}.zst`, so `replay --offline --reparse` can parse it again. A stream
//! that printed nothing keeps no file (its recorded byte count, 0, says so).

use crate::check::model::ParsedRun;
use crate::check::parse::{self, CheckInput, FormatChoice, Source};
use crate::config::RunConfig;
use crate::proc::{self, StepResult, StepSpec};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Bytes of each stream kept by default (8 MiB, before compression).
pub const DEFAULT_KEEP_BYTES: u64 = 8 * 1024 * 1024;

/// Problems replaying a run.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot materialize snapshot {snapshot}: {message}")]
    Materialize { snapshot: String, message: String },
    #[error("cannot run the check in the clean room: {0}")]
    Run(std::io::Error),
    #[error("no kept output for iteration {iteration} ({path}); it was recorded before output was kept, or LOOPEXEC_KEEP_OUTPUT_BYTES was 0")]
    NoKeptOutput { iteration: u32, path: String },
    #[error("the kept output {path} is not what iteration {iteration}'s check printed: {detail}; it was changed after the run recorded it")]
    KeptAltered {
        iteration: u32,
        path: String,
        detail: String,
    },
    #[error("cannot read kept output {path}: {source}")]
    Kept {
        path: String,
        source: std::io::Error,
    },
}

/// Writes the files of `snapshot_commit` (a commit or tree id) into the empty
/// directory `dest`, using a temporary index. The snapshot is read from loopexec's own
/// store ([`crate::observe::tree::store_path`]) when the workdir has one, else from the git
/// repository holding `workdir` (receipts written before the store); neither the
/// user's index, HEAD nor work tree is touched.
///
/// # Errors
/// [`ReplayError::Materialize`] naming the git step that failed.
pub fn materialize(workdir: &Path, snapshot_commit: &str, dest: &Path) -> Result<(), ReplayError> {
    use crate::observe::git::git_cmd;
    let err = |message: String| ReplayError::Materialize {
        snapshot: snapshot_commit.to_string(),
        message,
    };
    let store = crate::observe::tree::store_path(workdir);
    let source = if in_store(workdir, snapshot_commit) {
        store
    } else {
        workdir.to_path_buf()
    };
    let idx = tempfile::Builder::new()
        .prefix("loopexec-replay-index")
        .tempdir()
        .map_err(|e| err(e.to_string()))?;
    let index = idx.path().join("index");
    let tree = format!("{snapshot_commit}^{{tree}}");
    let mut read = git_cmd(&source);
    read.env("GIT_INDEX_FILE", &index)
        .args(["read-tree", &tree]);
    crate::observe::git::run(&mut read).map_err(|e| err(e.to_string()))?;
    let mut co = git_cmd(&source);
    co.env("GIT_INDEX_FILE", &index)
        .arg(format!("--work-tree={}", dest.display()))
        .args(["checkout-index", "-a", "-f"]);
    crate::observe::git::run(&mut co).map_err(|e| err(e.to_string()))?;
    Ok(())
}

/// True when `object` is in the workdir's snapshot store (its snapshots are rooted at
/// the workdir; older git snapshots are rooted at the repository's top).
#[must_use]
pub fn in_store(workdir: &Path, object: &str) -> bool {
    let store = crate::observe::tree::store_path(workdir);
    if !store.join(crate::observe::store::STORE_MARKER).is_file() {
        return false;
    }
    let mut c = crate::observe::git::git_cmd(&store);
    c.args(["cat-file", "-e", &format!("{object}^{{tree}}")]);
    crate::observe::git::run(&mut c).is_ok()
}

/// The workdir's path inside its repository (`""` at the top), so the check runs in
/// the same relative place in the clean room.
#[must_use]
pub fn workdir_prefix(workdir: &Path) -> PathBuf {
    let Some(root) = crate::observe::git::repo_root(workdir) else {
        return PathBuf::new();
    };
    let wd = std::fs::canonicalize(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    wd.strip_prefix(&root)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The parse completed by the loop's own rules ([`crate::check::postparse::settle`]),
/// so fingerprints compare with the recorded ones.
pub fn complete_parse(
    parsed: &mut ParsedRun,
    step: &StepResult,
    success_exit_code: i32,
    missing_reports: &[String],
) {
    crate::check::postparse::settle(
        parsed,
        &crate::check::postparse::StepFacts {
            exit_code: step.exit_code,
            signal: step.signal,
            exited_ok: step.exited_with(success_exit_code),
            output_truncated: step.stdout.spool_truncated || step.stderr.spool_truncated,
            missing_reports,
        },
    );
}

fn format_choice(cfg: &RunConfig) -> FormatChoice {
    if cfg.test_format == "auto" {
        FormatChoice::Auto
    } else {
        parse::format_from_name(&cfg.test_format).map_or(FormatChoice::Auto, FormatChoice::Fixed)
    }
}

/// The dependency directories a run's t0 left out of its snapshots (linked into the
/// clean room as the loop did), from `run_started`'s baseline measures.
#[must_use]
pub fn dependencies_of(baseline: Option<&crate::detect::integrity::TreeMeasures>) -> Vec<String> {
    let Some(m) = baseline else {
        return Vec::new();
    };
    m.excluded
        .iter()
        .filter_map(|e| e.strip_suffix(" (dependencies)"))
        .map(str::to_string)
        .collect()
}

/// A clean room for one replayed check run: its directory and environment.
struct Room {
    /// The directory the check runs in.
    cwd: PathBuf,
    env_set: Vec<(String, String)>,
    env_remove: Vec<String>,
}

/// The loop's own clean room ([`crate::engine::cleanroom::CleanRoom`]) under a private
/// state directory, synced to `snapshot` from the workdir's store, with the same
/// dependency links and environment as the loop's check runs.
fn store_room(
    workdir: &Path,
    cfg: &RunConfig,
    snapshot: &str,
    dependencies: &[String],
    state: &Path,
) -> Result<Room, ReplayError> {
    let err = |message: String| ReplayError::Materialize {
        snapshot: snapshot.to_string(),
        message,
    };
    let store =
        crate::observe::store::SnapshotStore::open(&crate::observe::tree::store_path(workdir))
            .map_err(|e| err(e.to_string()))?;
    let mut c = crate::observe::git::git_cmd(store.dir());
    c.args(["rev-parse", "--verify", &format!("{snapshot}^{{tree}}")]);
    let tree =
        String::from_utf8_lossy(&crate::observe::git::run(&mut c).map_err(|e| err(e.to_string()))?)
            .trim()
            .to_string();
    let excludes = crate::observe::store::Excludes::new(&cfg.clean_room.exclude)
        .map_err(|e| err(e.to_string()))?;
    let mut room =
        crate::engine::cleanroom::CleanRoom::prepare(state, workdir, excludes, dependencies)
            .map_err(|e| err(e.to_string()))?;
    room.sync(&store, &tree).map_err(|e| err(e.to_string()))?;
    let base_env: Vec<(String, String)> = std::env::vars().collect();
    let (env_set, env_remove) = room.env(&base_env);
    Ok(Room {
        cwd: room.root().to_path_buf(),
        env_set,
        env_remove,
    })
}

/// Whether t0's check wrote each witness (`check_finished.pytest_witness`,
/// `unittest_witness`): a rerun expects them the same way the run did.
#[derive(Debug, Clone, Copy, Default)]
pub struct T0Witnesses {
    pub pytest: Option<bool>,
    pub unittest: Option<bool>,
}

/// Runs the run's check once in a fresh clean room holding `snapshot`; returns the
/// step and its completed parse. Snapshots in loopexec's store get the loop's own
/// clean room (dependency links, environment); older git snapshots are checked out
/// into a temporary directory.
///
/// The check runs as the loop ran it: with an empty `PYTHONPYCACHEPREFIX` and the
/// witnesses, parsed with its command, the witnesses judged as the loop judged them
/// (`t0_wrote`: whether the run's t0 check wrote each, from the receipt). A quiet
/// pytest transcript names only its failures; the loop names the passing tests from
/// the witness, so a rerun without it read a smaller collected set and disagreed
/// with every honest pytest run.
///
/// # Errors
/// [`ReplayError`] when the snapshot cannot be materialized or the check cannot be
/// started.
pub fn rerun(
    workdir: &Path,
    cfg: &RunConfig,
    snapshot: &str,
    dependencies: &[String],
    t0_wrote: T0Witnesses,
) -> Result<(StepResult, ParsedRun), ReplayError> {
    let room = tempfile::Builder::new()
        .prefix("loopexec-replay")
        .tempdir()
        .map_err(ReplayError::Run)?;
    let mut env_remove = crate::observe::secrets::secret_env_names(&cfg.guards.keep_env);
    let (cwd, env_set) = if in_store(workdir, snapshot) {
        let r = store_room(workdir, cfg, snapshot, dependencies, room.path())?;
        env_remove.extend(r.env_remove);
        (r.cwd, r.env_set)
    } else {
        let tree = room.path().join("tree");
        std::fs::create_dir_all(&tree).map_err(ReplayError::Run)?;
        materialize(workdir, snapshot, &tree)?;
        (tree.join(workdir_prefix(workdir)), Vec::new())
    };
    std::fs::create_dir_all(&cwd).map_err(ReplayError::Run)?;
    let caps = room.path().join("capture");
    std::fs::create_dir_all(&caps).map_err(ReplayError::Run)?;
    let check = cfg.check.clone().unwrap_or_default();
    let wrapped = crate::observe::isolation::wrap_check(&check, &cfg.check_network);
    let pycache = room.path().join("pycache");
    std::fs::create_dir_all(&pycache).map_err(ReplayError::Run)?;
    let mut env_set = env_set;
    env_set.push(("PYTHONPYCACHEPREFIX".into(), pycache.display().to_string()));
    let witness =
        crate::check::witness::Witness::prepare(&std::env::temp_dir()).map_err(ReplayError::Run)?;
    env_set.extend(witness.env(std::env::var("PYTHONPATH").ok().as_deref()));
    let spec = StepSpec {
        command: &wrapped,
        cwd: &cwd,
        env_remove: &env_remove,
        env_set: &env_set,
        timeout: cfg.check_timeout.map(|d| d.0),
        stall_timeout: None,
        grace: cfg.kill_grace.0,
        limits: proc::CaptureLimits::default(),
        capture_prefix: caps.join("check"),
        spool_prefix: None,
        workdir: &caps,
        stdout_sink: None,
        sandbox: None,
    };
    let (step, spools) = proc::run_step(spec, &mut |_| None).map_err(ReplayError::Run)?;
    let mut reports = Vec::new();
    let mut missing = Vec::new();
    for pat in &cfg.reports {
        let found: Vec<PathBuf> = if pat.contains(['*', '?', '[']) {
            crate::observe::reports::glob_files(&cwd, pat)
        } else {
            Some(cwd.join(pat))
                .filter(|p| p.is_file())
                .into_iter()
                .collect()
        };
        if found.is_empty() {
            missing.push(pat.clone());
        }
        reports.extend(found);
    }
    let exit = parse::exit_for_parser(step.exit_code, step.signal, cfg.success_exit_code);
    let mut parsed = parse::parse_command(
        &CheckInput {
            stdout: Some(spools.source(proc::Stream::Stdout)),
            stderr: Some(spools.source(proc::Stream::Stderr)),
            exit_code: exit,
            reports: &reports,
        },
        format_choice(cfg),
        Some(&check),
    );
    complete_parse(&mut parsed, &step, cfg.success_exit_code, &missing);
    crate::check::witness::judge_expected(
        &mut parsed,
        crate::check::witness::read(witness.path()),
        crate::check::witness::expected(&check, t0_wrote.pytest),
    );
    crate::check::witness::unittest::judge(
        &mut parsed,
        crate::check::witness::unittest::read(witness.unittest_path()).as_deref(),
        t0_wrote.unittest == Some(true),
    );
    Ok((step, parsed))
}

/// The cap on kept bytes per stream (`LOOPEXEC_KEEP_OUTPUT_BYTES`).
#[must_use]
pub fn keep_limit() -> u64 {
    std::env::var("LOOPEXEC_KEEP_OUTPUT_BYTES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_KEEP_BYTES)
}

/// Path of a kept stream: `<run_dir>/<it>.check[-<attempt>].<stream>.zst`.
#[must_use]
pub fn kept_path(run_dir: &Path, iteration: u32, attempt: u32, stream: &str) -> PathBuf {
    let suffix = if attempt == 0 {
        String::new()
    } else {
        format!("-{attempt}")
    };
    run_dir.join(format!("{iteration}.check{suffix}.{stream}.zst"))
}

/// What was kept of one stream: the bytes before compression and their blake3 (hex).
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct KeptStream {
    /// Bytes kept (the stream's length, or the keep limit when it printed more).
    pub bytes: u64,
    /// blake3 of those bytes, hex (of nothing for a stream that printed nothing).
    pub blake3: String,
}

impl KeptStream {
    fn empty() -> KeptStream {
        KeptStream {
            bytes: 0,
            blake3: blake3::hash(b"").to_hex().to_string(),
        }
    }
}

/// What [`keep_output`] kept of a check run, recorded in its `check_finished`
/// (`kept`): `replay --offline --reparse` reads a kept file only while it still is
/// these bytes.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct KeptOutput {
    pub stdout: KeptStream,
    pub stderr: KeptStream,
}

/// Keeps a check run's full streams (from its spool files), zstd-compressed and
/// capped. Returns what was kept of each stream (`None` when nothing is kept:
/// `LOOPEXEC_KEEP_OUTPUT_BYTES=0`).
///
/// # Errors
/// I/O errors reading a spool or writing the kept file.
pub fn keep_output(
    run_dir: &Path,
    iteration: u32,
    attempt: u32,
    stdout: crate::check::parse::Source<'_>,
    stderr: crate::check::parse::Source<'_>,
) -> std::io::Result<Option<KeptOutput>> {
    use crate::check::parse::Source;
    let limit = keep_limit();
    if limit == 0 {
        return Ok(None);
    }
    let mut kept = [KeptStream::empty(), KeptStream::empty()];
    for (i, (stream, spool)) in [("stdout", stdout), ("stderr", stderr)]
        .into_iter()
        .enumerate()
    {
        // An empty stream keeps no file: the receipt's byte count (0) says what it
        // held, and `reparse` reads it back as empty.
        let empty = match spool {
            Source::Memory { bytes, .. } => bytes.is_empty(),
            Source::File(p) => match std::fs::metadata(p) {
                Ok(m) => m.len() == 0,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
                Err(e) => return Err(e),
            },
        };
        if empty {
            continue;
        }
        let src = spool.reader(64 * 1024)?;
        let out = std::fs::File::create(kept_path(run_dir, iteration, attempt, stream))?;
        // Level 3: level 9's match tables alone take ~16 MiB, which would double
        // loopexec's peak memory on a check that prints a lot (limit: 16 MiB).
        let mut enc = zstd::Encoder::new(out, 3)?;
        // A 512 KiB window (level 3's own is 2 MiB): repeats in test logs are near.
        enc.window_log(19)?;
        let mut tee = Digesting {
            out: enc,
            hasher: blake3::Hasher::new(),
        };
        let bytes = std::io::copy(&mut src.take(limit), &mut tee)?;
        tee.out.finish()?;
        kept[i] = KeptStream {
            bytes,
            blake3: tee.hasher.finalize().to_hex().to_string(),
        };
    }
    let [stdout, stderr] = kept;
    Ok(Some(KeptOutput { stdout, stderr }))
}

/// Re-parses a recorded check run from its kept output with this loopexec's parser.
/// `kept` is what the run recorded it kept ([`KeptOutput`]; `None` in receipts
/// written before it was recorded): the kept files must still be those bytes.
/// Without it a whole stream must hash to the step's digest and a capped one be no
/// longer than the stream.
///
/// # Errors
/// [`ReplayError::NoKeptOutput`] when nothing was kept; [`ReplayError::KeptAltered`]
/// when a kept file is not what was kept; [`ReplayError::Kept`] on read errors.
pub fn reparse(
    run_dir: &Path,
    cfg: &RunConfig,
    iteration: u32,
    attempt: u32,
    step: &StepResult,
    kept: Option<&KeptOutput>,
) -> Result<ParsedRun, ReplayError> {
    let tmp = tempfile::tempdir().map_err(ReplayError::Run)?;
    let mut paths = Vec::new();
    for (stream, summary, recorded) in [
        ("stdout", &step.stdout, kept.map(|k| &k.stdout)),
        ("stderr", &step.stderr, kept.map(|k| &k.stderr)),
    ] {
        let kept = kept_path(run_dir, iteration, attempt, stream);
        let dest = tmp.path().join(stream);
        if !kept.is_file() && summary.bytes == 0 {
            // an empty stream is kept as no file (see `keep_output`): nothing to read
            std::fs::File::create(&dest).map_err(ReplayError::Run)?;
            paths.push(dest);
            continue;
        }
        if !kept.is_file() {
            return Err(ReplayError::NoKeptOutput {
                iteration,
                path: kept.display().to_string(),
            });
        }
        let kerr = |source| ReplayError::Kept {
            path: kept.display().to_string(),
            source,
        };
        let f = std::fs::File::open(&kept).map_err(kerr)?;
        let mut dec = zstd::Decoder::new(f).map_err(kerr)?;
        let out = std::fs::File::create(&dest).map_err(ReplayError::Run)?;
        let mut tee = Digesting {
            out,
            hasher: blake3::Hasher::new(),
        };
        let n = std::io::copy(&mut dec, &mut tee).map_err(kerr)?;
        // A whole stream kept must hash to the receipt's digest; a capped one is a
        // prefix of it, never longer.
        let altered = |detail: String| ReplayError::KeptAltered {
            iteration,
            path: kept.display().to_string(),
            detail,
        };
        if let Some(r) = recorded {
            let digest = tee.hasher.finalize();
            if n != r.bytes || digest.to_hex().as_str() != r.blake3 {
                return Err(altered(format!(
                    "it holds {n} bytes with blake3 {} where {} bytes with blake3 {} were kept",
                    digest.to_hex(),
                    r.bytes,
                    r.blake3
                )));
            }
        } else if n > summary.bytes {
            return Err(altered(format!(
                "it holds {n} bytes where the {stream} stream carried {}",
                summary.bytes
            )));
        }
        if n == summary.bytes && tee.hasher.finalize().to_hex().as_str() != summary.blake3 {
            return Err(altered(format!(
                "its blake3 is not the {stream} stream's ({})",
                summary.blake3
            )));
        }
        paths.push(dest);
    }
    let exit = parse::exit_for_parser(step.exit_code, step.signal, cfg.success_exit_code);
    let mut parsed = parse::parse(
        &CheckInput {
            stdout: Some(Source::File(&paths[0])),
            stderr: Some(Source::File(&paths[1])),
            exit_code: exit,
            reports: &[],
        },
        format_choice(cfg),
    );
    complete_parse(&mut parsed, step, cfg.success_exit_code, &[]);
    Ok(parsed)
}

/// A writer that hashes (blake3) what it passes on.
struct Digesting<W> {
    out: W,
    hasher: blake3::Hasher,
}

impl<W: std::io::Write> std::io::Write for Digesting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_output_round_trips_capped() {
        let dir = tempfile::tempdir().unwrap();
        let so = dir.path().join("o.spool");
        let se = dir.path().join("e.spool");
        std::fs::write(&so, b"ok 1 - t1\n".repeat(10)).unwrap();
        std::fs::write(&se, b"").unwrap();
        let kept = keep_output(dir.path(), 3, 1, Source::File(&so), Source::File(&se))
            .unwrap()
            .expect("kept");
        assert_eq!((kept.stdout.bytes, kept.stderr.bytes), (100, 0));
        let whole = b"ok 1 - t1\n".repeat(10);
        assert_eq!(kept.stdout.blake3, blake3::hash(&whole).to_hex().as_str());
        let p = kept_path(dir.path(), 3, 1, "stdout");
        assert!(p.ends_with("3.check-1.stdout.zst"));
        let back = zstd::decode_all(std::fs::File::open(p).unwrap()).unwrap();
        assert_eq!(back, b"ok 1 - t1\n".repeat(10));
    }

    /// A kept stream is read back only while it is what the receipt says the stream
    /// carried: its blake3 when whole, a prefix when capped (no longer than it).
    #[test]
    fn kept_output_changed_after_the_run_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let printed = b"not ok 1 - t1\n1..1\n";
        let so = dir.path().join("o.spool");
        let se = dir.path().join("e.spool");
        std::fs::write(&so, printed).unwrap();
        std::fs::write(&se, b"").unwrap();
        let kept = keep_output(dir.path(), 1, 0, Source::File(&so), Source::File(&se))
            .unwrap()
            .expect("kept");
        let mut step = crate::detect::testkit::step(Some(1));
        step.stdout.bytes = printed.len() as u64;
        step.stdout.blake3 = blake3::hash(printed).to_hex().to_string();
        let cfg = RunConfig::defaults();
        for recorded in [Some(&kept), None] {
            let p =
                reparse(dir.path(), &cfg, 1, 0, &step, recorded).expect("the kept copy reads back");
            assert_eq!(p.failing().len(), 1);
        }
        let forge = |text: &[u8]| {
            let f = std::fs::File::create(kept_path(dir.path(), 1, 0, "stdout")).unwrap();
            zstd::stream::copy_encode(text, f, 3).unwrap();
        };
        // same length, other bytes; then longer than the stream
        // same length, other bytes; longer than the stream; shorter (a "prefix")
        for forged in [
            &b"ok     1 - t1\n1..1\n"[..],
            b"ok 1 - t1\nok 2 - t2\n1..2\n",
            b"ok 1 - t1\n",
        ] {
            forge(forged);
            let e = reparse(dir.path(), &cfg, 1, 0, &step, Some(&kept)).unwrap_err();
            assert!(
                matches!(e, ReplayError::KeptAltered { iteration: 1, .. }),
                "{e}"
            );
        }
        // without a record of what was kept (an older receipt): a whole stream is
        // judged by its digest, and a shorter copy passes as a capped one
        forge(b"ok     1 - t1\n1..1\n");
        assert!(reparse(dir.path(), &cfg, 1, 0, &step, None).is_err());
        forge(b"not ok 1 - t1\n");
        assert!(reparse(dir.path(), &cfg, 1, 0, &step, None).is_ok());
    }
}
