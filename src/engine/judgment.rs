//! The judgment layer's steps (SPEC §9): running the judge on a green iteration,
//! reading the task list at the start of an iteration, measuring the context before
//! an exec. Each records one event; `decide` reads it.

use super::{EngineError, Loop};
use crate::observe::git;
use crate::proc;
use crate::receipt::judgment::{ContextBuilt, JudgeFinished, TasksObserved, JUDGE_OUTPUT_LIMIT};
use crate::receipt::Event;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// Most bytes of the diff against t0 given to the judge.
pub const JUDGE_DIFF_LIMIT: usize = 256 * 1024;
/// Most bytes of the task file given to the judge.
pub const JUDGE_TASK_LIMIT: usize = 64 * 1024;
/// The judge's time limit when `[judge] timeout` is unset.
pub const JUDGE_DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// `git diff` between two tree ids, bounded: (text, full byte count, truncated).
///
/// `--text`: the snapshot store unsets every attribute (`-diff` included, so a blob
/// is always the file's bytes), and without it git would show every file, source
/// included, as a `GIT binary patch` the judge cannot read; `--no-textconv`, so no
/// driver the user's repository names rewrites what the judge sees.
fn diff_trees(dir: &Path, from: &str, to: &str) -> Result<(String, usize, bool), String> {
    let out = git::git_cmd(dir)
        .args([
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--text",
            from,
            to,
        ])
        .output()
        .map_err(|e| format!("cannot run git diff: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git diff {from} {to} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let full = out.stdout.len();
    let cut = full > JUDGE_DIFF_LIMIT;
    let bytes = &out.stdout[..full.min(JUDGE_DIFF_LIMIT)];
    let redacted = crate::observe::secrets::redact(bytes);
    Ok((String::from_utf8_lossy(&redacted).into_owned(), full, cut))
}

/// Every path that differs between two tree ids (both sides of a rename, as
/// `--no-renames` lists them), each as one string, secrets redacted: what a judge
/// deciding by path reads instead of parsing the diff's headers (which git quotes
/// for a name with a tab, a quote or a newline, and which the diff's size bound may
/// cut off). Not bounded.
fn diff_paths(dir: &Path, from: &str, to: &str) -> Result<Vec<String>, String> {
    let out = git::git_cmd(dir)
        .args(["diff", "--name-only", "-z", "--no-renames", from, to])
        .output()
        .map_err(|e| format!("cannot run git diff: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git diff --name-only {from} {to} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out
        .stdout
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(&crate::observe::secrets::redact(p)).into_owned())
        .collect())
}

fn read_bounded(path: &Path, limit: usize) -> std::io::Result<(String, bool)> {
    let f = std::fs::File::open(path)?;
    let mut buf = Vec::new();
    f.take(limit as u64 + 1).read_to_end(&mut buf)?;
    let cut = buf.len() > limit;
    buf.truncate(limit);
    let redacted = crate::observe::secrets::redact(&buf);
    Ok((String::from_utf8_lossy(&redacted).into_owned(), cut))
}

impl Loop<'_> {
    /// The judge's input for the last iteration (SPEC §9.1).
    fn judge_input(&self) -> serde_json::Value {
        let it = self.current_iteration();
        let last = self.traj.last();
        let main = last.and_then(|i| i.main_check());
        let base = self
            .traj
            .started
            .as_ref()
            .and_then(|s| s.git.baseline_tree.clone());
        // The tree under judgment: what the clean room held for the check, else the
        // tree the check ran on, else the tree after the exec.
        let now = main
            .and_then(|c| c.clean_room.as_ref().map(|r| r.tree.clone()))
            .or_else(|| main.and_then(|c| c.tree_before.clone().or_else(|| c.tree_after.clone())))
            .or_else(|| {
                last.and_then(|i| i.exec.as_ref())
                    .and_then(|e| e.tree.clone())
            });
        // Tree ids live in loopexec's snapshot store (else in the workdir's repository).
        let objects = self
            .tree
            .store()
            .map_or_else(|| self.ws.workdir.clone(), |s| s.dir().to_path_buf());
        let diff = match (&base, &now) {
            (Some(a), Some(b)) => {
                match diff_trees(&objects, a, b).and_then(|d| Ok((d, diff_paths(&objects, a, b)?)))
                {
                    Ok(((text, bytes, truncated), paths)) => serde_json::json!({
                        "base_tree": a, "tree": b, "paths": paths, "text": text, "bytes": bytes,
                        "truncated": truncated,
                    }),
                    Err(e) => serde_json::json!({"base_tree": a, "tree": b, "error": e}),
                }
            }
            _ => {
                serde_json::json!({"error": "no git trees to compare (the workdir is not a git repository)"})
            }
        };
        let task = self.cfg.task.file.as_ref().map(|f| {
            let p = if Path::new(f).is_absolute() {
                Path::new(f).to_path_buf()
            } else {
                self.ws.workdir.join(f)
            };
            match read_bounded(&p, JUDGE_TASK_LIMIT) {
                Ok((text, truncated)) => {
                    serde_json::json!({"file": f, "text": text, "truncated": truncated})
                }
                Err(e) => serde_json::json!({"file": f, "error": e.to_string()}),
            }
        });
        let check = main.map(|c| {
            let p = &c.parsed;
            let skipped = p
                .tests
                .iter()
                .filter(|t| t.outcome == crate::check::model::Outcome::Skipped)
                .count();
            serde_json::json!({
                "command": self.cfg.check,
                "exit_code": c.step.exit_code,
                "format": p.format,
                "complete": p.complete,
                "collected": p.collected().len(),
                "passed": p.passing().len(),
                "skipped": skipped,
                "failing": p.failing(),
                "confirm_runs": self.cfg.confirm_runs,
            })
        });
        let (objective, objective_source) =
            crate::detect::objective::effective(&self.traj, self.cfg);
        let task_id =
            crate::detect::tasks::selected(&self.traj, self.cfg.success_exit_code).map(|t| t.id);
        serde_json::json!({
            "schema": "loopexec.judge_input/1",
            "run_id": self.run_id,
            "iteration": it,
            "task": task,
            "task_id": task_id,
            "objective": objective,
            "objective_source": objective_source,
            "diff": diff,
            "check": check,
        })
    }

    /// Runs the judge on the last (green) iteration in the clean room the check just
    /// ran in (the workdir with `--check-in-place`) and records `judge_finished`.
    pub(super) fn judge(&mut self) -> Result<(), EngineError> {
        let dir = self
            .room
            .as_ref()
            .map_or_else(|| self.ws.workdir.clone(), |r| r.root().to_path_buf());
        self.judge_in(&dir)
    }

    /// Runs the judge in `dir` (the directory holding the tree under judgment) and
    /// records `judge_finished`: the input it read on stdin, its process result, its
    /// stdout (bounded, redacted) and its metered spend.
    pub(super) fn judge_in(&mut self, dir: &Path) -> Result<(), EngineError> {
        let it = self.current_iteration();
        let Some(cmd) = self.cfg.judge.command.clone() else {
            return Ok(());
        };
        self.say("judge");
        let run_dir = self.ws.run_dir(&self.run_id);
        let input = self.judge_input();
        let input_path = run_dir.join(format!("{it}.judge-input.json"));
        let bytes = serde_json::to_vec(&input).unwrap_or_default();
        std::fs::write(&input_path, &bytes).map_err(|source| EngineError::Capture {
            path: input_path.clone(),
            source,
        })?;
        let usage_file = run_dir.join(format!("{it}.judge-usage.jsonl"));
        let _ = std::fs::remove_file(&usage_file);
        let env_set = vec![
            (
                "LOOPEXEC_JUDGE_INPUT".to_string(),
                input_path.display().to_string(),
            ),
            (
                "LOOPEXEC_USAGE_FILE".to_string(),
                usage_file.display().to_string(),
            ),
            ("LOOPEXEC_RUN_ID".to_string(), self.run_id.clone()),
            ("LOOPEXEC_ITERATION".to_string(), it.to_string()),
        ];
        // The input arrives on stdin; the command is the user's, unchanged, in a group.
        let wrapped = format!("{{ {cmd}\n}} < \"$LOOPEXEC_JUDGE_INPUT\"");
        let mut carry = crate::observe::usage::CarryOver::default();
        let meter = crate::observe::usage::LiveMeter::new(
            &self.cfg.pricing,
            &carry,
            Some(usage_file.clone()),
        );
        let prefix = run_dir.join(format!("{it}.judge"));
        let mut spec = self.step_spec(&wrapped, prefix);
        spec.cwd = dir;
        spec.env_set = &env_set;
        // Like the agent, the judge is the user's own tool: it keeps its credentials.
        spec.timeout = Some(
            self.cfg
                .judge
                .timeout
                .map_or(JUDGE_DEFAULT_TIMEOUT, |d| d.0),
        );
        spec.stdout_sink = Some(meter.sink());
        let (step, mut spools) = self.run_supervised(spec, "judge", None)?;
        spools
            .write_files()
            .map_err(|source| EngineError::Capture {
                path: spools.stdout.clone(),
                source,
            })?;
        let (output, output_truncated) =
            read_bounded(&spools.stdout, JUDGE_OUTPUT_LIMIT).unwrap_or_default();
        proc::capture::remove_spool(&spools.stdout);
        proc::capture::remove_spool(&spools.stderr);
        let usage = meter.finish(&mut carry);
        let ev = JudgeFinished {
            iteration: it,
            input,
            step,
            output,
            output_truncated,
            usage: Some(usage),
            dir: dir.display().to_string(),
        };
        self.record(Event::JudgeFinished(Box::new(ev)))
    }

    /// Reads the task list for the current iteration and records `tasks_observed`.
    pub(super) fn observe_tasks(&mut self) -> Result<(), EngineError> {
        let it = self.current_iteration();
        let file = self.cfg.task.list.clone().unwrap_or_default();
        let (tasks, error) = match crate::observe::tasks::read(&self.ws.workdir, &file) {
            Ok(t) => (t, None),
            Err(e) => (Vec::new(), Some(e.to_string())),
        };
        self.record(Event::TasksObserved(Box::new(TasksObserved {
            iteration: it,
            file,
            tasks,
            error,
        })))
    }

    /// Measures the context of the current iteration and records `context_built`.
    pub(super) fn build_context(&mut self) -> Result<(), EngineError> {
        let it = self.current_iteration();
        let failing = self.traj.last_failing_messages();
        let model = self.cfg.model.pin.clone().unwrap_or_default();
        let req = crate::observe::context::ContextRequest {
            task_file: self.cfg.task.file.as_deref(),
            files: &self.cfg.task.files,
            failing,
            model: &model,
            windows: Some(&self.cfg.models.windows),
        };
        let report = crate::observe::context::build(&self.ws.workdir, &req);
        self.record(Event::ContextBuilt(Box::new(ContextBuilt {
            iteration: it,
            report,
        })))
    }

    /// `LOOPEXEC_TASK_ID` and `LOOPEXEC_TASK_FILE` for the current iteration's exec,
    /// when a task list selected a task (the file holds the task as JSON).
    pub(super) fn task_env(&self) -> Vec<(String, String)> {
        let Some(task) = crate::detect::tasks::selected(&self.traj, self.cfg.success_exit_code)
        else {
            return Vec::new();
        };
        let it = self.current_iteration();
        let path = self
            .ws
            .run_dir(&self.run_id)
            .join(format!("{it}.task.json"));
        let body = serde_json::json!({"task": task, "tasks": self.cfg.task.list});
        if std::fs::write(&path, serde_json::to_vec_pretty(&body).unwrap_or_default()).is_err() {
            return vec![("LOOPEXEC_TASK_ID".to_string(), task.id)];
        }
        vec![
            ("LOOPEXEC_TASK_ID".to_string(), task.id),
            ("LOOPEXEC_TASK_FILE".to_string(), path.display().to_string()),
        ]
    }
}
