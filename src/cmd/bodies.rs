//! The typed `--json` bodies of the commands (see [`crate::output`]). Each body keeps
//! every field the command printed before the contract was typed (fields are only
//! ever added) and carries the inspected run's facts under `run`.
//!
//! `human` fields are the text rendering, built by the command beside the data; they
//! are not part of the JSON.

use crate::output::{Body, RunFacts};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

macro_rules! body {
    ($t:ty, $name:literal) => {
        impl Body for $t {
            const COMMAND: &'static str = $name;
            fn human(&self) -> String {
                self.human.clone()
            }
        }
    };
}

/// `run`: the halt of the run just driven.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunBody {
    /// The run id (`null` when the given id was invalid).
    pub run_id: Option<String>,
    /// The halt's iteration (`null` for a refusal before iteration 0).
    pub iteration: Option<u32>,
    pub halt_reason: String,
    pub halt_class: String,
    /// What to do next (refined by the trajectory).
    pub advice: String,
    /// The receipt's path (`null` when none was written).
    pub receipt: Option<String>,
    /// Why, one line per observation that contributed.
    pub contributors: Vec<String>,
    /// A sentence for people.
    pub explanation: String,
    /// Reason-specific evidence (shape depends on the reason).
    pub detail: Value,
    /// The run's facts.
    pub run: RunFacts,
    /// When the work step failed: the last lines of its stderr (`null` otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    /// The file holding the rest of that stderr (head and tail excerpt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_file: Option<String>,
    /// When the last iteration was rejected and not reverted: the accepted tree and
    /// the command restoring it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_tree: Option<super::halt_notes::RejectedTree>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(RunBody, "run");

/// One verdict row of `status`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct VerdictRow {
    pub iteration: u32,
    pub green: bool,
    /// |F|: failing tests.
    pub failing: usize,
    pub check_exit: Option<i32>,
    /// The ratchet kept this iteration's tree (false: rejected, or interrupted).
    pub accepted: bool,
    /// A signal to loopexec stopped this check: it measured nothing (`green` false,
    /// `failing` 0).
    pub interrupted: bool,
}

/// `status`: phase, iteration, liveness and last verdicts of a run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StatusBody {
    pub run_id: String,
    /// `starting`, `baseline`, `exec`, `check`, `deciding`, `halted`, `waiting for a
    /// person to answer action ID`, `suspended by a hold`, or `dead (…)`.
    pub phase: String,
    pub iteration: u32,
    /// The run's process is running.
    pub alive: bool,
    pub pid: Option<u32>,
    /// The last five main-check verdicts.
    pub last_verdicts: Vec<VerdictRow>,
    /// The last heartbeat file's content, when present.
    pub heartbeat: Value,
    pub receipt: String,
    /// Kept for compatibility; the same as `run.halt_reason`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub halt_reason: Option<String>,
    /// Kept for compatibility; the same as `run.exit_code`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub halt_exit_code: Option<u8>,
    pub run: RunFacts,
    /// What a person runs next, in order (answer a waiting action, release a hold,
    /// acknowledge a latched halt, read why it halted, resume); empty for a live run
    /// nothing holds back.
    pub next_steps: Vec<String>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(StatusBody, "status");

/// `explain-halt`: why the run stopped, re-derived from the receipt.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExplainBody {
    pub run_id: String,
    pub iteration: u32,
    pub halt_reason: String,
    /// Kept for compatibility; the same as `run.exit_code`.
    pub halt_exit_code: u8,
    pub receipt: String,
    /// The full explanation (class, owner, contributors, trajectory summary, …).
    pub explanation: Value,
    pub advice: String,
    pub what_to_do: String,
    /// The receipt's observations derive the recorded reason.
    pub rederived: bool,
    pub derived_reason: Option<String>,
    pub trajectory: Value,
    /// Agent actions the gate declined (see `loopexec gate`).
    pub declined_actions: Value,
    /// A summary of the agent's gated actions.
    pub actions: Value,
    pub run: RunFacts,
    /// When the work step failed: the end of its stderr and the file with the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<super::halt_notes::StderrTail>,
    /// When the last iteration was rejected and not reverted: the accepted tree and
    /// the command restoring it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_tree: Option<super::halt_notes::RejectedTree>,
    /// False when this workspace did not record the run (no ledger row, no seal in
    /// the control journal, or a receipt other than the one sealed): the verdict is
    /// then only the receipt's word, and the command exits 13 (status `unrecorded`).
    pub recorded: bool,
    /// Why the run counts as unrecorded (empty when recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrecorded_because: Vec<String>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(ExplainBody, "explain-halt");

/// One step (exec or check run) in `report`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct StepRow {
    pub command: String,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub duration_ms: u64,
    pub timed_out: bool,
    pub stalled: bool,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub leaked_processes: bool,
    /// Check runs only: the parser that read the output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Check runs only: |F|.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing: Option<usize>,
    /// Check runs only: |C|.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collected: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub complete: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub green: Option<bool>,
    /// Check runs only: the failing test ids, sorted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_names: Option<Vec<String>>,
    /// Check runs only: the verdict fingerprint (see `receipt::fingerprint`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}

/// One iteration in `report`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct IterationRow {
    pub iteration: u32,
    pub started_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec: Option<StepRow>,
    /// Agent usage as recorded (tokens, cost, model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<StepRow>,
    /// Confirmation runs of a green verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confirmations: Vec<StepRow>,
    /// The checkout confirmation: the green check run once more in the working tree
    /// itself (SPEC §3.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkout: Option<StepRow>,
    /// `green`, `red`, `rejected` (the ratchet restored an earlier tree), or `interrupted`
    /// (a signal to loopexec stopped the check: nothing was measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// The ratchet kept this iteration's tree (false: rejected and reverted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverted_to: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<i32>,
    /// USD this iteration's exec cost, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Tokens this iteration's exec used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// The agent's primary model id, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Iteration duration: exec + check runs, milliseconds.
    pub duration_ms: u64,
    /// The judge's step and verdict (`approve`, `reject`, …, `could_not_decide`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<Value>,
    /// Tasks the agent's task list held after this iteration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<usize>,
    /// A hold parked the run here: `{verdict, phase, holds}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<Value>,
    /// How long the run was parked by holds, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parked_ms: Option<u64>,
    /// The agent's provider rate-limited it (as recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limited: Option<Value>,
    /// The agent's gated actions: `{calls, declined, confirmed, findings}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actions: Option<Value>,
}

/// Totals over the run's iterations in `report`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct ReportTotals {
    pub iterations: u32,
    pub accepted: u32,
    pub rejected: u32,
    pub exec_ms: u64,
    pub check_ms: u64,
}

/// The halt in `report` (the receipt's last `halted` event).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReportHalt {
    pub iteration: u32,
    pub halt_reason: String,
    /// The halt's exit code (10–50).
    pub exit_code: u8,
    pub contributors: Vec<String>,
}

/// `report`: the whole run.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReportBody {
    pub run_id: String,
    pub receipt: String,
    pub iterations: Vec<IterationRow>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub halt_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// The run's last halt, or `null` while it runs.
    pub halt: Option<ReportHalt>,
    pub totals: ReportTotals,
    /// Agent actions the gate declined.
    pub declined_actions: Value,
    /// A summary of the agent's gated actions.
    pub actions: Value,
    pub run: RunFacts,
    /// When the work step failed: the end of its stderr and the file with the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<super::halt_notes::StderrTail>,
    /// When the last iteration was rejected and not reverted: the accepted tree and
    /// the command restoring it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rejected_tree: Option<super::halt_notes::RejectedTree>,
    /// False when this workspace did not record the run (no ledger row, no seal in
    /// the control journal, or a receipt other than the one sealed): the verdict is
    /// then only the receipt's word, and the command exits 13 (status `unrecorded`).
    pub recorded: bool,
    /// Why the run counts as unrecorded (empty when recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrecorded_because: Vec<String>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(ReportBody, "report");

/// One re-execution of the check on a recorded snapshot.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReplayRun {
    pub fingerprint: String,
    pub agrees: bool,
    pub failing: usize,
    pub collected: usize,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
}

/// One iteration in `replay`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReplayIteration {
    pub iteration: u32,
    /// The snapshot (commit or tree) the check re-ran on; `null` offline.
    pub snapshot: Option<String>,
    /// The fingerprint the receipt records (or computes from its recorded parse).
    pub recorded_fingerprint: String,
    /// The fingerprint computed from the recorded parse (differs from
    /// `recorded_fingerprint` only in an edited receipt).
    pub parse_fingerprint: String,
    pub recorded_failing: usize,
    pub recorded_green: bool,
    pub runs: Vec<ReplayRun>,
    /// Runs that agree with the receipt / runs.
    pub agreed: u32,
    /// Wilson interval (95%) of the agreement rate over `runs`.
    pub agreement_interval: (f64, f64),
    /// `agrees`, `disagrees`, `flaky` (some runs agree), `not_replayable`, or
    /// `interrupted` (a signal to loopexec stopped the check: nothing to replay).
    pub verdict: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// `--reparse`: the fingerprint a re-parse of the kept output gives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reparse_fingerprint: Option<String>,
}

/// `replay`: re-execute or re-derive a run's verdicts and compare with its receipt.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReplayBody {
    pub run_id: String,
    pub receipt: String,
    /// `live` (the check re-ran) or `offline` (re-derived from the receipt).
    pub mode: String,
    /// Every compared iteration agrees and the halt re-derives.
    pub agrees: bool,
    /// The receipt's hash chain is intact.
    pub chain_intact: bool,
    /// The first iteration that disagrees, if any.
    pub first_disagreement: Option<u32>,
    pub iterations: Vec<ReplayIteration>,
    /// The halt reason `decide` derives from the receipt (offline part).
    pub derived_reason: Option<String>,
    pub recorded_reason: Option<String>,
    pub run: RunFacts,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(ReplayBody, "replay");

/// `keygen`: an ed25519 key pair for `attest`/`verify`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct KeygenBody {
    /// The secret key file (mode 0600).
    pub private_key: String,
    /// The public key file (give it to whoever verifies).
    pub public_key: String,
    /// Key id: hex blake3 of the public key, first 16 bytes.
    pub keyid: String,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(KeygenBody, "keygen");

/// `attest`: a signed DSSE envelope over a run's verdict.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AttestBody {
    pub run_id: String,
    /// The file holding the DSSE envelope.
    pub attestation_path: String,
    /// The DSSE envelope (`payloadType`, `payload`, `signatures`).
    pub attestation: crate::receipt::attest::Dsse,
    /// The signed statement, decoded, for reading.
    pub statement: crate::receipt::attest::Statement,
    pub run: RunFacts,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(AttestBody, "attest");

/// `verify`: an attestation checked against a public key and its receipt.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct VerifyBody {
    /// The signature verifies under the public key.
    pub signature_valid: bool,
    /// The receipt on disk has the digest the statement names (`null`: not checked).
    pub receipt_matches: Option<bool>,
    pub receipt: Option<String>,
    pub run_id: Option<String>,
    pub keyid: Option<String>,
    /// The statement's predicate, when the signature verifies.
    pub predicate: Option<Value>,
    /// Everything the signed statement says (subjects and predicate) is what the
    /// receipt re-derives to; `null`: not checked (the signature or the receipt's
    /// digest failed first). False makes `verify` invalid: whoever holds the key can
    /// sign any verdict, only the receipt says what happened.
    pub statement_matches: Option<bool>,
    /// The fields where the signed statement and the receipt disagree, one line each,
    /// named by their path in the statement (`predicate.halt_reason`,
    /// `subject[1].digest.gitTree`).
    pub mismatches: Vec<String>,
    /// The run was recorded by this workspace (ledger row and control-journal seal
    /// for this very receipt); `null` when the receipt was given with `--receipt`
    /// (checked as a file, not against a workspace). False makes `verify` invalid:
    /// a good signature over a receipt no run here wrote says nothing about here.
    pub recorded: Option<bool>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(VerifyBody, "verify");

/// `runs`: every run in the workdir with its verdict.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunsBody {
    /// Newest first.
    pub runs: Vec<RunFacts>,
    /// Ids of listed runs whose receipt this workspace's ledger did not record (no
    /// row, or a head or verdict the row does not hold: a receipt copied in from
    /// elsewhere or edited); `loopexec check` names what differs.
    pub unrecorded: Vec<String>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(RunsBody, "runs");

/// `gc`: what was removed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GcBody {
    /// Runs kept (newest first).
    pub kept: Vec<String>,
    /// Runs removed (receipt, captured outputs, snapshot refs).
    pub removed: Vec<String>,
    /// Runs kept because a person must still act on them whatever `--keep` says: a
    /// hold in force names the run, a stop latched it, or an agent action of it waits.
    pub awaiting_person: Vec<String>,
    /// Snapshot refs deleted.
    pub refs_deleted: usize,
    /// With `--stores`: the workdirs (gone) whose snapshot stores were removed.
    pub stores_removed: Vec<String>,
    /// With `--stores`: stores that record no workdir (made by an older loopexec),
    /// left in place.
    pub stores_unknown: usize,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(GcBody, "gc");

/// `init`: the loop.toml written (or left alone).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct InitBody {
    /// The loop.toml path.
    pub config: String,
    /// False when loop.toml existed and `--force` was not given.
    pub written: bool,
    /// `.loopexec/` (absent when nothing was written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_dir: Option<String>,
    /// The check written into loop.toml, detected from the project's files.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// The file the check was detected from (`Cargo.toml`, `package.json`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detected_from: Option<String>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(InitBody, "init");

/// One row of `exit-codes`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExitCodeRow {
    pub exit_code: u8,
    pub class: String,
    pub halt_reason: String,
    pub advice: String,
}

/// `exit-codes`: the taxonomy.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExitCodesBody {
    pub exit_codes: Vec<ExitCodeRow>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(ExitCodesBody, "exit-codes");

/// `completions SHELL`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CompletionsBody {
    pub shell: String,
    /// The completion script.
    pub script: String,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(CompletionsBody, "completions");

/// `man`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ManBody {
    /// The man page (roff).
    pub roff: String,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(ManBody, "man");

/// `--version --json`: what this binary is. The envelope's `version` is the semver;
/// the body adds what a script pinning loopexec also needs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct VersionBody {
    /// The binary's name and version as `--version` prints it (`loopexec 0.1.0`).
    pub text: String,
    /// The platform it was built for, as `ARCH-OS` (`x86_64-linux`).
    pub target: String,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(VersionBody, "version");

/// `--help --json` (or `help [COMMAND] --json`): the help text clap renders, as one
/// string, for tools that wrap loopexec.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HelpBody {
    /// The help text, exactly as printed without `--json`.
    pub text: String,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(HelpBody, "help");

/// The output of any command that failed before it had a result (`status: error`
/// or `usage_error`: bad input, an unknown run, a bad flag): the envelope,
/// `errors[]` saying what was wrong, and the fix when loopexec knows one. Every
/// command's output is either its own schema or this one.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct ErrorBody {
    /// What to do about it (`list runs with \`loopexec runs\``), as the human output's
    /// `hint:` line says; absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(ErrorBody, "error");
