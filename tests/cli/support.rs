//! Helpers shared by the integration tests: temp git repos, running the real binary
//! with a hang guard, parsing its one JSON object, reading and verifying receipts, and
//! finding (and ending) child processes by a unique marker in their command line.

use serde_json::Value;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_loopexec")
}

/// Longest any single loopexec invocation may take before the test calls it hung.
pub const HANG_LIMIT: Duration = Duration::from_secs(180);

/// A throwaway git repository (`git init -b main`, local identity) in a temp dir.
///
/// The repo lives at `<tmp>/repo`, so tests can check that nothing was written next
/// to it (`outside()` is the parent).
pub struct Repo {
    tmp: tempfile::TempDir,
    path: PathBuf,
}

impl Repo {
    pub fn new() -> Repo {
        let tmp = tempfile::Builder::new()
            .prefix("lx-itest")
            .tempdir()
            .expect("tempdir");
        let path = tmp.path().join("repo");
        std::fs::create_dir(&path).expect("mkdir repo");
        let r = Repo { tmp, path };
        r.git(&["init", "-q", "-b", "main"]);
        r.git(&["config", "user.email", "tester@example.com"]);
        r.git(&["config", "user.name", "tester"]);
        r.git(&["config", "commit.gpgSign", "false"]);
        r
    }

    /// A repo holding one committed file `f` (`x`), for tests that need any commit.
    pub fn with_f() -> Repo {
        Repo::with_file("f", "x\n")
    }

    /// A repo holding one committed file `rel` with `content`.
    pub fn with_file(rel: &str, content: &str) -> Repo {
        let r = Repo::new();
        r.write(rel, content).commit("fixture");
        r
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory holding the repo (nothing but `repo` should ever appear there).
    pub fn outside(&self) -> &Path {
        self.tmp.path()
    }

    /// Writes a file (creating parent directories).
    pub fn write(&self, rel: &str, content: &str) -> &Repo {
        let p = self.path.join(rel);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(&p, content).expect("write fixture");
        self
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path.join(rel)).expect("read file")
    }

    /// Runs git in the repo and returns stdout; panics on failure.
    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .current_dir(&self.path)
            .args(args)
            .env_remove("GIT_DIR")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("GIT_WORK_TREE")
            .output()
            .expect("spawn git");
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `git add -A && git commit`.
    pub fn commit(&self, msg: &str) -> &Repo {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--no-verify", "-m", msg]);
        self
    }

    /// The receipt of a run in this repo.
    pub fn receipt(&self, run_id: &str) -> PathBuf {
        self.path
            .join(".loopexec")
            .join("runs")
            .join(format!("{run_id}.jsonl"))
    }

    /// `loopexec --json --workdir <repo> ARGS…` with a hang guard.
    pub fn lx(&self, args: &[&str]) -> Out {
        lx_in(&self.path, args, &[])
    }

    /// `loopexec run --exec EXEC --check CHECK --max-iterations 2`: the two-iteration
    /// run most trust tests start.
    pub fn run2(&self, exec: &str, check: &str) -> Out {
        self.lx(&[
            "run",
            "--exec",
            exec,
            "--check",
            check,
            "--max-iterations",
            "2",
        ])
    }

    /// `loopexec run --exec true --check false --max-iterations N`: a run that stays
    /// red and changes nothing, for tests about what surrounds a run (holds, halt
    /// events, capture files, refusals).
    pub fn run_red(&self, max_iterations: u32) -> Out {
        let n = max_iterations.to_string();
        self.lx(&[
            "run",
            "--exec",
            "true",
            "--check",
            "false",
            "--max-iterations",
            &n,
        ])
    }

    /// Like [`Repo::lx`] with extra environment variables.
    pub fn lx_env(&self, args: &[&str], env: &[(&str, &str)]) -> Out {
        lx_in(&self.path, args, env)
    }

    /// `loopexec run --exec EXEC --check CHECK --test-format tap REST…` with extra
    /// environment variables.
    pub fn lx_tap_check(
        &self,
        exec: &str,
        check: &str,
        rest: &[&str],
        env: &[(&str, &str)],
    ) -> Out {
        let mut args = vec![
            "run",
            "--exec",
            exec,
            "--check",
            check,
            "--test-format",
            "tap",
        ];
        args.extend(rest);
        lx_in(&self.path, &args, env)
    }

    /// `loopexec run --exec EXEC --check "sh check.sh" --test-format tap REST…`.
    pub fn lx_tap(&self, exec: &str, rest: &[&str]) -> Out {
        let mut args = vec![
            "run",
            "--exec",
            exec,
            "--check",
            "sh check.sh",
            "--test-format",
            "tap",
        ];
        args.extend_from_slice(rest);
        self.lx(&args)
    }

    /// Writes the TAP check script `check.sh`.
    pub fn tap_check(&self, script: &str) -> &Repo {
        self.write("check.sh", script)
    }

    /// Starts `loopexec --json --workdir <repo> ARGS…` in the background (stdout piped).
    pub fn spawn(&self, args: &[&str]) -> Child {
        Command::new(bin())
            .arg("--json")
            .arg("--workdir")
            .arg(&self.path)
            .args(args)
            .current_dir(&self.path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn loopexec")
    }
}

/// The result of one loopexec invocation.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Out {
    /// The one JSON object on stdout, after checking the common shape
    /// (`tool == "loopexec"`, `version`, `status` strings, `errors` array).
    pub fn json(&self) -> Value {
        let text = std::str::from_utf8(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not UTF-8 ({e}); exit {}", self.code));
        let values: Vec<Value> = serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| {
                panic!(
                    "stdout is not JSON ({e}); exit {}; stdout: {text}; stderr: {}",
                    self.code, self.stderr
                )
            });
        assert_eq!(
            values.len(),
            1,
            "expected exactly one JSON value on stdout, got {}: {text}",
            values.len()
        );
        let v = values.into_iter().next().expect("one value");
        assert!(v.is_object(), "stdout JSON is not an object: {v}");
        assert_eq!(v["tool"], "loopexec", "tool field: {v}");
        assert!(v["version"].is_string(), "version not a string: {v}");
        assert!(v["status"].is_string(), "status not a string: {v}");
        assert!(v["errors"].is_array(), "errors not an array: {v}");
        v
    }

    /// Asserts the exit code, the JSON `exit_code` field and (when given) the halt
    /// reason; returns the JSON.
    pub fn expect(&self, code: i32, reason: Option<&str>) -> Value {
        let v = self.json();
        assert_eq!(
            self.code, code,
            "exit code {} (expected {code}); stdout: {v}; stderr: {}",
            self.code, self.stderr
        );
        assert_eq!(v["exit_code"], code, "JSON exit_code disagrees: {v}");
        if let Some(r) = reason {
            assert_eq!(v["halt_reason"], r, "halt_reason: {v}");
        }
        v
    }

    /// All `errors[]` joined, for `contains` checks.
    pub fn errors_text(&self) -> String {
        let v = self.json();
        v["errors"]
            .as_array()
            .expect("errors array")
            .iter()
            .map(|e| e.as_str().map_or_else(|| e.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Runs loopexec in `dir` with `--json --workdir dir`.
pub fn lx_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(bin());
    cmd.arg("--json")
        .arg("--workdir")
        .arg(dir)
        .args(args)
        .current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_cmd(cmd)
}

/// Runs a command to completion with stdin null, capturing output, killing it (and
/// failing the test) after [`HANG_LIMIT`].
pub fn run_cmd(mut cmd: Command) -> Out {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let (status, stdout, stderr) = wait_with_output(&mut child, HANG_LIMIT);
    Out {
        code: code_of(status),
        stdout,
        stderr,
        elapsed: start.elapsed(),
    }
}

/// Waits for a spawned child (stdout/stderr piped), draining its output; kills it and
/// panics after `limit`.
pub fn wait_with_output(child: &mut Child, limit: Duration) -> (ExitStatus, Vec<u8>, String) {
    let mut so = child.stdout.take().expect("piped stdout");
    let mut se = child.stderr.take().expect("piped stderr");
    let t1 = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = so.read_to_end(&mut b);
        b
    });
    let t2 = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = se.read_to_end(&mut b);
        b
    });
    let status = wait_deadline(child, limit);
    let stdout = t1.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&t2.join().unwrap_or_default()).into_owned();
    (status, stdout, stderr)
}

/// Waits for a child with a deadline; kills it and panics when the deadline passes.
pub fn wait_deadline(child: &mut Child, limit: Duration) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            return s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("process {} hung for more than {limit:?}", child.id());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The exit code, or 128+signal.
pub fn code_of(s: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
}

/// Process ids (other than this test process) whose command line contains `marker`.
pub fn pids_with(marker: &str) -> Vec<i32> {
    let me = std::process::id();
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        // Zombies have an empty cmdline; they hold nothing and are not "left running".
        let cmdline: Vec<u8> = raw.iter().map(|&b| if b == 0 { b' ' } else { b }).collect();
        if String::from_utf8_lossy(&cmdline).contains(marker) {
            out.push(i32::try_from(pid).unwrap_or(i32::MAX));
        }
    }
    out
}

/// True when a child command holding `marker` runs: a process with the marker in its
/// command line that is not loopexec itself (nor a forked, not yet exec'd copy of it,
/// which still shows loopexec's command line).
pub fn child_running(marker: &str) -> bool {
    pids_with(marker).into_iter().any(|pid| {
        let argv0 = std::fs::read(format!("/proc/{pid}/cmdline"))
            .ok()
            .and_then(|raw| raw.split(|&b| b == 0).next().map(<[u8]>::to_vec))
            .unwrap_or_default();
        !argv0.is_empty() && !String::from_utf8_lossy(&argv0).ends_with("loopexec")
    })
}

/// Waits up to `limit` for no process matching `marker` to remain; returns the
/// leftovers (empty when clean).
pub fn leftovers_after(marker: &str, limit: Duration) -> Vec<i32> {
    let start = Instant::now();
    loop {
        let p = pids_with(marker);
        if p.is_empty() || start.elapsed() > limit {
            return p;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Polls `cond` every 50 ms for up to `limit`; true when it held.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    cond()
}

/// Kills (SIGKILL) every process whose command line holds one of its markers when
/// dropped, so a failing test never leaks children. Markers must be unique strings
/// (e.g. `sleep 4171`).
pub struct ProcGuard {
    markers: Vec<String>,
}

impl ProcGuard {
    pub fn new(markers: &[&str]) -> ProcGuard {
        ProcGuard {
            markers: markers.iter().map(|m| (*m).to_string()).collect(),
        }
    }
}

impl Drop for ProcGuard {
    fn drop(&mut self) {
        for m in &self.markers {
            for pid in pids_with(m) {
                // SAFETY: sending a signal to a pid has no memory-safety implications.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

/// Kills a background loopexec child when dropped (if it is still running).
pub struct ChildGuard(pub Option<Child>);

impl ChildGuard {
    pub fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("child present")
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            if c.try_wait().ok().flatten().is_none() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// Starts `loopexec run [--run-id RUN_ID] --exec EXEC --check CHECK` in the background
/// and waits (up to 30 s) until a child command holding `marker` runs.
pub fn spawn_wedged(
    r: &Repo,
    run_id: Option<&str>,
    marker: &str,
    exec: &str,
    check: &str,
) -> ChildGuard {
    let mut args = vec!["run"];
    if let Some(id) = run_id {
        args.extend_from_slice(&["--run-id", id]);
    }
    args.extend_from_slice(&["--exec", exec, "--check", check]);
    let run = ChildGuard(Some(r.spawn(&args)));
    assert!(
        wait_until(Duration::from_secs(30), || child_running(marker)),
        "no child holding `{marker}` ever started"
    );
    run
}

/// Lets a silent step exceed a 1 s stall limit (and a heartbeat be written), then runs
/// `loopexec watch --run-id RUN_ID --stall-timeout 1s --kill`.
pub fn watch_kill_after_stall(r: &Repo, run_id: &str) -> Out {
    std::thread::sleep(Duration::from_millis(2500));
    r.lx(&[
        "watch",
        "--run-id",
        run_id,
        "--stall-timeout",
        "1s",
        "--kill",
    ])
}

/// Waits (up to `limit`) for a background loopexec to finish and returns its output.
pub fn finish(run: &mut ChildGuard, limit: Duration) -> Out {
    let (status, stdout, stderr) = wait_with_output(run.child(), limit);
    Out {
        code: code_of(status),
        stdout,
        stderr,
        elapsed: Duration::ZERO,
    }
}

/// Asserts that no process holding `marker` is left after 3 s (`what` names it).
pub fn assert_none_left(marker: &str, what: &str) {
    let left = leftovers_after(marker, Duration::from_secs(3));
    assert!(left.is_empty(), "{what} left {left:?} running");
}

/// Asserts that an invocation took less than `secs` seconds.
pub fn assert_took_under(out: &Out, secs: u64) {
    assert!(
        out.elapsed < Duration::from_secs(secs),
        "took {:?}",
        out.elapsed
    );
}

/// Asserts that no file under `dir` contains `needle` (`what` names it).
pub fn assert_in_no_file(dir: &Path, needle: &str, what: &str) {
    for f in files_under(dir) {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
            "{what} reached {}",
            f.display()
        );
    }
}

/// Rewrites the receipt at `path` with `edit` applied to each parsed line and the
/// hash chain recomputed, as a careful forger would. Panics when the edit changed
/// nothing (a forgery test that forges nothing proves nothing).
pub fn forge_receipt(path: &Path, edit: impl Fn(&mut Value)) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    let mut prev: Option<String> = None;
    for line in text.lines() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        edit(&mut v);
        v["prev"] = prev.clone().map_or(Value::Null, Value::from);
        let raw = serde_json::to_string(&v).unwrap();
        prev = Some(blake3::hash(raw.as_bytes()).to_hex().to_string());
        out.push_str(&raw);
        out.push('\n');
    }
    assert_ne!(out, text, "the forgery changed nothing");
    std::fs::write(path, out).unwrap();
}

/// Reads a receipt and verifies its framing: every line is a JSON object with
/// `schema`, `seq` (0, 1, 2, …), `ts` (string) and `prev` (null first, then the blake3
/// hex of the previous line's bytes). Returns the parsed lines.
pub fn verify_receipt(path: &Path) -> Vec<Value> {
    let data = std::fs::read(path)
        .unwrap_or_else(|e| panic!("cannot read receipt {}: {e}", path.display()));
    assert!(!data.is_empty(), "receipt {} is empty", path.display());
    assert_eq!(
        data.last(),
        Some(&b'\n'),
        "receipt {} does not end with a newline",
        path.display()
    );
    let mut prev: Option<String> = None;
    let mut out = Vec::new();
    for (i, raw) in data[..data.len() - 1].split(|&b| b == b'\n').enumerate() {
        let v: Value = serde_json::from_slice(raw).unwrap_or_else(|e| {
            panic!(
                "receipt line {} does not parse ({e}): {}",
                i + 1,
                String::from_utf8_lossy(raw)
            )
        });
        assert!(v.is_object(), "receipt line {} is not an object", i + 1);
        assert!(v["schema"].is_u64(), "line {} lacks schema: {v}", i + 1);
        assert_eq!(v["seq"], i, "line {} has seq {}", i + 1, v["seq"]);
        assert!(v["ts"].is_string(), "line {} lacks ts: {v}", i + 1);
        match &prev {
            None => assert!(v["prev"].is_null(), "first line has prev {}", v["prev"]),
            Some(h) => assert_eq!(
                v["prev"].as_str(),
                Some(h.as_str()),
                "line {} breaks the hash chain",
                i + 1
            ),
        }
        prev = Some(blake3::hash(raw).to_hex().to_string());
        out.push(v);
    }
    out
}

/// The receipt path a run's JSON names (`receipt`), verified.
pub fn receipt_of(v: &Value) -> Vec<Value> {
    let p = v["receipt"]
        .as_str()
        .unwrap_or_else(|| panic!("no receipt in {v}"));
    verify_receipt(Path::new(p))
}

/// Events of a given type in a receipt.
pub fn events<'a>(lines: &'a [Value], event: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["event"] == event).collect()
}

/// Every file under `dir` (recursively).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    out
}

/// A TAP check (`check.sh`): tests t1..tN with N in the tracked file `tests`; the ones
/// listed in the tracked file `failing` fail with a message naming how many are left.
pub const TAP_CHECK: &str = r#"n=$(cat tests); f=" $(cat failing) "; echo "TAP version 13"; echo "1..$n"; bad=0
for i in $(seq 1 "$n"); do case "$f" in *" t$i "*) echo "not ok $i - t$i"; echo "  ---"; echo "  message: t$i fails ($(cat failing | wc -w) left)"; echo "  ..."; bad=1;; *) echo "ok $i - t$i";; esac; done
exit $bad
"#;

/// A TAP check over `tests/*.sh`: each script is one test (exit 0 passes).
pub const DIR_CHECK: &str = r#"set -- tests/*.sh; echo "TAP version 13"; echo "1..$#"; i=0; bad=0
for t in "$@"; do i=$((i+1)); if sh "$t"; then echo "ok $i - $(basename $t .sh)"; else echo "not ok $i - $(basename $t .sh)"; bad=1; fi; done
exit $bad
"#;

/// An agent that removes the first name from `failing` each iteration (steady progress).
pub const PROGRESS_AGENT: &str = r#"set -- $(cat failing); shift; echo "$*" > failing"#;

/// A repo with the TAP check, `n` tests and all of them failing, committed.
pub fn tap_repo(n: usize) -> Repo {
    let r = Repo::new();
    let names: Vec<String> = (1..=n).map(|i| format!("t{i}")).collect();
    r.write("tests", &format!("{n}\n"))
        .write("failing", &format!("{}\n", names.join(" ")))
        .tap_check(TAP_CHECK)
        .commit("fixture");
    r
}

/// A shell function printing a Claude Code `--output-format json` result object with
/// the given cost (`$1`) and model (`$2`).
pub const CLAUDE_RESULT_FN: &str = r#"claude_result() { printf '{"type":"result","subtype":"success","is_error":false,"duration_ms":1200,"num_turns":2,"result":"done","session_id":"s-1","total_cost_usd":%s,"usage":{"input_tokens":100,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":50},"modelUsage":{"%s":{"inputTokens":100,"outputTokens":50,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":%s}}}\n' "$1" "$2" "$1"; }
"#;

/// A counter file outside any workdir (for stateful child commands).
pub struct Counter {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl Counter {
    pub fn new() -> Counter {
        let dir = tempfile::Builder::new()
            .prefix("lx-itest-state")
            .tempdir()
            .expect("tempdir");
        let path = dir.path().join("n");
        std::fs::write(&path, "0\n").expect("write counter");
        Counter { _dir: dir, path }
    }
    pub fn shell(&self) -> String {
        shell_quote(self.path.as_os_str())
    }
    pub fn dir(&self) -> PathBuf {
        self.path.parent().expect("parent").to_path_buf()
    }
    pub fn get(&self) -> u64 {
        std::fs::read_to_string(&self.path)
            .expect("read counter")
            .trim()
            .parse()
            .expect("counter is a number")
    }
}

/// Single-quotes a path for `sh`.
pub fn shell_quote(s: &OsStr) -> String {
    format!("'{}'", s.to_string_lossy().replace('\'', r"'\''"))
}

/// Case-insensitive "does the JSON text mention this".
pub fn mentions(v: &Value, needle: &str) -> bool {
    v.to_string()
        .to_lowercase()
        .contains(&needle.to_lowercase())
}

/// loopexec's snapshot store of the workdir `dir` (in its state directory).
pub fn store_dir(dir: &Path) -> PathBuf {
    loopexec::observe::tree::store_path(&std::fs::canonicalize(dir).expect("workdir exists"))
}

/// True when `program` with `args` runs and exits 0 on this machine.
pub fn has(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// True (and says the test is skipped) when this machine has no `prog` (it does not
/// answer `--version`).
pub fn missing(prog: &str) -> bool {
    let missing = !has(prog, &["--version"]);
    if missing {
        eprintln!("no {prog} here: skipped");
    }
    missing
}

/// True (and says the test is skipped) when this machine has no pytest: `.ci/run`
/// installs it; a machine that cannot skips the tests that need it.
pub fn pytest_missing() -> bool {
    let missing = !has("python3", &["-c", "import pytest"]);
    if missing {
        eprintln!("no pytest here: skipped");
    }
    missing
}

/// Writes `files` (path, content) from the exec: a shell command copying each from a
/// temp file, returned with the directory that keeps them.
pub fn writer(files: &[(&str, &str)]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut exec = String::new();
    for (i, (p, c)) in files.iter().enumerate() {
        let src = dir.path().join(i.to_string());
        std::fs::write(&src, c).unwrap();
        exec.push_str(&format!(
            "mkdir -p \"$(dirname '{p}')\" && cp '{}' '{p}'; ",
            src.display()
        ));
    }
    (dir, exec)
}

/// `run --exec EXEC --check "python3 -m pytest -q" --max-iterations 2` in `r`.
pub fn run_pytest(r: &Repo, exec: &str) -> Out {
    r.lx(&[
        "run",
        "--exec",
        exec,
        "--check",
        "python3 -m pytest -q",
        "--max-iterations",
        "2",
    ])
}

/// A pytest project with a failing test (`add` subtracts).
pub fn pytest_repo() -> Repo {
    let r = Repo::new();
    r.write("calc.py", "def add(a, b):\n    return a - b\n")
        .write(
            "tests/test_calc.py",
            "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
        )
        .commit("fixture");
    r
}
