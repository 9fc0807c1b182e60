//! clap argument types. Nothing here runs anything.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Runs a coding agent in a bounded, auditable loop and stops it for a reason it
/// computed: tests green, the iteration cap, no progress, oscillation, a weakened
/// test suite, a flaky check, a blown budget, a swapped model, a wedged process, or a
/// person's stop — never because the agent said it was done.
///
/// Every halt has a stable `halt_reason`, an exit code CI can branch on (see
/// `loopexec help exit-codes`), and a receipt under .loopexec/runs/ from which `explain-halt`
/// re-derives the verdict offline.
#[derive(Debug, Parser)]
#[command(
    name = "loopexec",
    version,
    propagate_version = true,
    max_term_width = 100
)]
#[command(
    after_help = "Quick start:\n  loopexec init\n  loopexec run --exec 'claude -p \"fix the failing tests\"' --check 'cargo test'\n  loopexec explain-halt\n\nExit codes: 0 ok, 10 converged, 11 human stop, 12 iteration cap, 13 integrity,\n14 untrusted check, 15 inadequate check, 16 judgment pending, 17 no convergence, 18 budget,\n19 liveness/drift, 20 invariant or invalid config, 30 workspace, 40 execution, 50 internal,\n2 usage. The whole table: `loopexec help exit-codes`."
)]
pub struct Cli {
    /// Print exactly one JSON object on stdout (tool, version, status, errors[], …).
    #[arg(long, global = true)]
    pub json: bool,
    /// The project directory to work in (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// No progress lines on stderr (errors are still printed).
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a commented loop.toml and create .loopexec/.
    Init(InitArgs),
    /// Run the loop: baseline check, then exec + check until a computed halt.
    #[command(
        after_help = "Examples:\n  loopexec run --exec ./agent.sh --check 'cargo test'\n  loopexec run --exec 'claude -p \"fix the tests\"' --check 'pytest -q' --budget-usd 3\n  loopexec run --exec ./agent.sh --check 'npx jest --json --outputFile=r.json' --report r.json\n  loopexec run --resume RUN_ID     # continue a halted run (after `loopexec ack`)\n\nThe halt is printed on stdout; the exit code is its class (`loopexec help exit-codes`).\nProgress (a line per step and verdict, a heartbeat while a step runs) goes to stderr;\n--quiet silences it.\nIteration 0 runs only the check, on the untouched tree; a green baseline halts at once.\n\nEnvironment set for the exec:\n  LOOPEXEC_RUN_ID, LOOPEXEC_ITERATION   the run id and the iteration\n  LOOPEXEC_USAGE_FILE        append usage JSON lines (tokens, cost_usd) here (also set for --judge)\n  LOOPEXEC_WORKDIR           the project directory (`loopexec gate` finds the run through it)\n  LOOPEXEC_AUDIT_LOG         the run's log of gated agent actions\n  LOOPEXEC_TASK_ID, LOOPEXEC_TASK_FILE  with --tasks: the selected task and its JSON file\n  LOOPEXEC_RESUME_REASON, LOOPEXEC_RESUME_FILE  first exec after --resume: why the run had stopped\n  LOOPEXEC_STEP_TOKEN        loopexec's mark on its own steps (never set it yourself)\nSet for the --judge: LOOPEXEC_JUDGE_INPUT (the JSON file to judge). Set for every check:\n  LOOPEXEC_WITNESS_FILE, LOOPEXEC_UNITTEST_WITNESS (loopexec's pytest and unittest witnesses\n  write there; a PYTHONPATH entry of loopexec's own comes first), LOOPEXEC_SKIP_FILE (the\n  files the agent added since t0, which pytest does not collect and unittest does not\n  discover); in the clean room also\n  LOOPEXEC_CONFINE (imports an editable install would take from the working tree come\n  from the room).\nRead by loopexec:\n  LOOPEXEC_KEEP_OUTPUT_BYTES bytes of each check stream kept for `replay --reparse` (default 8 MiB)\n  LOOPEXEC_STATE_DIR         loopexec's state directory (snapshot stores, clean rooms, the control\n                             journal, global holds); keep it where the agent cannot write (not /tmp)\n  NO_COLOR, TERM=dumb        no live status line"
    )]
    Run(Box<RunArgs>),
    /// Show a run's phase, iteration, last verdicts and whether its process is alive.
    Status(RunSel),
    /// Explain why a run stopped and what to do, re-deriving the verdict from its receipt.
    ExplainHalt(RunSel),
    /// Show a run as a timeline: per iteration, exec and check exits, durations, sizes, verdict.
    #[command(
        after_help = "Formats:\n  loopexec report --format markdown >> \"$GITHUB_STEP_SUMMARY\"\n  loopexec report --junit loopexec.xml     # one test case per iteration\n  loopexec report --html loopexec.html     # one self-contained page"
    )]
    Report(ReportArgs),
    /// Show what loopexec reads from a captured check run (for debugging a verdict).
    #[command(
        after_help = "Examples:\n  cargo test >out.txt 2>err.txt; loopexec parse --stdout out.txt --stderr err.txt --exit-code $?\n  loopexec --json parse --report junit.xml --exit-code 1 | jq .failing\n  loopexec --json parse --summary --stdout out.txt --exit-code 1   # counts and failing names only\n\nShapes: `--json` prints every named test (`tests`, `collected`) by default, as scripts and\nthe sample checker read it; `--summary` leaves both out, so the output is bounded by the\nfailing tests."
    )]
    Parse(ParseArgs),
    /// Record that a person reviewed a run's work (clears comprehension debt).
    Ack(AckArgs),
    /// External watchdog: report a run alive, finished or heartbeat_stale; --kill ends a wedged one.
    Watch(WatchArgs),
    /// Per-iteration spend, totals, percentiles, caps and anomalies of a run or a ledger file.
    InspectCost(InspectCostArgs),
    /// Validate .loopexec/: ledger schema, every receipt's hash chain, snapshot refs.
    Check,
    /// Measure the check: flake rate (runs derived from the target), side effects, hermeticity per dimension.
    ProbeCheck(ProbeArgs),
    /// Preconditions gate: determinism, hermeticity, adequacy (mutation canaries), credentials, isolation.
    Doctor(DoctorArgs),
    /// Assemble what the agent must read (task, failing tests, their files, declared
    /// files) and estimate its tokens against the model's context window.
    #[command(
        after_help = "Examples:\n  loopexec build-context --task TASK.md --model claude-sonnet-4-5\n  loopexec build-context --task TASK.md --files 'src/**/*.rs' --model gpt-5\n\nTokens are estimated as bytes/4. Windows come from a built-in table of current Claude,\nGPT and Gemini models, overridden by [models.windows] in loop.toml. The failing tests\nare those of the run's last check (--run-id, default the latest run, if any).\nA run given --task/--context-file and --model halts context_budget_unsatisfiable (19)\nbefore an exec whose context cannot fit."
    )]
    BuildContext(BuildContextArgs),
    /// Take a hold: stop running work (or park it with --suspend) until it is released.
    #[command(
        after_help = "Examples:\n  loopexec hold --reason 'prod incident' --by alice            # stop every run here\n  loopexec hold --run RUN_ID --suspend --reason 'let me look' --by alice\n  loopexec hold --all --reason 'rotating keys' --by alice      # every workspace\n\nA stop ends the running step within a poll and halts human_required (exit 11); the\nrun resumes once the hold is released and a person acks the halt event\n(`loopexec release HOLD_ID --by NAME`, `loopexec ack HALT_ID --by NAME`).\nA suspension parks the loop at the next step boundary and goes on by itself when\nreleased."
    )]
    Hold(HoldArgs),
    /// Release a hold by its id (see `loopexec holds`).
    Release(ReleaseArgs),
    /// List the holds in force (global ones first, then this workspace's).
    Holds,
    /// List halt events (what stopped runs), with their acknowledgements.
    Halts(HaltsArgs),
    /// Hook command for agent CLIs: classify a tool call, decline destructive ones, log it.
    #[command(
        after_help = "Reads one hook payload on stdin: Claude Code PreToolUse/PostToolUse, Gemini CLI\nBeforeTool/AfterTool, or the generic {\"protocol\":\"loopexec-gate/1\",\"phase\":\"pre\",\"tool\":…,\"target\":…}.\nWrites the decision in the same protocol on stdout. `loopexec init --agent claude` installs it.\nInside a run it finds the run through LOOPEXEC_RUN_ID / LOOPEXEC_WORKDIR and logs to its audit log."
    )]
    Gate,
    /// List destructive agent actions waiting for a person (attended runs).
    Pending,
    /// Allow one waiting destructive agent action (that one call only).
    Confirm(DecideArgs),
    /// Decline one waiting destructive agent action.
    Deny(DecideArgs),
    /// Re-run the check on a run's recorded snapshots in a clean room and compare with its receipt.
    #[command(
        after_help = "Examples:\n  loopexec replay RUN                  # every iteration, once\n  loopexec replay RUN --iteration 3 --runs 5\n  loopexec replay RUN --offline        # re-derive every verdict from the receipt alone\n  loopexec replay RUN --offline --reparse   # re-parse the kept check output\n\nEach check run is compared by its verdict fingerprint (blake3 over the failing set, the\ncollected set, the counts and whether the exit code was the success code; never raw\nbytes or timings). Exit 0 when everything agrees; 20 (status mismatch) when the receipt\ndisagrees with what the check does, naming the first iteration; 14 (status flaky) when\nsome runs agree and some do not."
    )]
    Replay(ReplayArgs),
    /// Generate an ed25519 key pair for `attest` (loopexec.key) and `verify` (loopexec.pub).
    Keygen(KeygenArgs),
    /// Sign a run's verdict: a DSSE envelope holding an in-toto statement over its receipt.
    Attest(AttestArgs),
    /// Check an attestation's signature and that its unchanged receipt says what it states.
    Verify(VerifyArgs),
    /// List the runs in the workdir with their verdicts, newest first.
    Runs,
    /// Remove old runs: receipts, captured outputs and snapshot refs (keeps the newest N).
    Gc(GcArgs),
    /// The exit codes and halt reasons (also: `loopexec help exit-codes`).
    ExitCodes,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    Completions(CompletionsArgs),
    /// Print the man page (roff) on stdout.
    Man,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The run to replay (default: the latest).
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// Replay only this iteration (0 is the baseline).
    #[arg(long, value_name = "N")]
    pub iteration: Option<u32>,
    /// Check runs per iteration; with more than one, agreement is reported with a Wilson interval.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// Run nothing: re-derive every verdict and fingerprint from the receipt alone.
    #[arg(long)]
    pub offline: bool,
    /// With --offline: re-parse each check's kept output with this loopexec's parser.
    #[arg(long, requires = "offline")]
    pub reparse: bool,
}

#[derive(Debug, Args)]
pub struct KeygenArgs {
    /// Directory to write loopexec.key and loopexec.pub into (default:
    /// `$XDG_CONFIG_HOME/loopexec`, else `~/.config/loopexec`: outside any project,
    /// where an agent working in one does not read the secret key or commit it).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct AttestArgs {
    /// The run to attest (default: the latest).
    #[arg(value_name = "RUN")]
    pub run: Option<String>,
    /// The secret key file (from `loopexec keygen`). There is no default key.
    #[arg(long, value_name = "FILE", required = true)]
    pub key: PathBuf,
    /// Where to write the DSSE envelope (default: `.loopexec/runs/<run>.intoto.json`).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The attestation file (a DSSE envelope as written by `attest`).
    #[arg(value_name = "ATTESTATION")]
    pub attestation: PathBuf,
    /// The public key file (from `loopexec keygen`).
    #[arg(long = "pub", value_name = "FILE", required = true)]
    pub public: PathBuf,
    /// The receipt to check (default: the run's receipt in the workspace the
    /// attestation lies in, `<dir>/.loopexec/runs/`, else under the workdir's).
    #[arg(long, value_name = "FILE")]
    pub receipt: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Runs to keep, newest first. The newest run is kept even under `--keep 0`:
    /// the next run's start is judged against it (a tree it rejected stays
    /// rejected).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10,
        allow_negative_numbers = true
    )]
    pub keep: usize,
    /// Also remove the snapshot stores (in the state directory) of workdirs that no
    /// longer exist, such as deleted temporary checkouts.
    #[arg(long)]
    pub stores: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("scope").args(["run", "workspace", "all"])))]
pub struct HoldArgs {
    /// Why (shown to whoever finds the run stopped).
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
    /// Who takes the hold.
    #[arg(long, value_name = "NAME")]
    pub by: String,
    /// Hold one run.
    #[arg(long, visible_alias = "run-id", value_name = "ID")]
    pub run: Option<String>,
    /// Hold every run of this workspace (the default).
    #[arg(long)]
    pub workspace: bool,
    /// Hold every run of every workspace of this user (kept in the user's state directory).
    #[arg(long)]
    pub all: bool,
    /// Park at the next step boundary instead of stopping; never latches.
    #[arg(long)]
    pub suspend: bool,
}

#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The hold's id (printed by `hold`, listed by `holds`).
    #[arg(value_name = "HOLD_ID")]
    pub hold_id: String,
    /// Who releases it.
    #[arg(long, value_name = "NAME")]
    pub by: String,
}

#[derive(Debug, Args)]
pub struct HaltsArgs {
    /// Only events nobody acknowledged yet.
    #[arg(long)]
    pub unacked: bool,
    /// Only this run's events.
    #[arg(long, visible_alias = "run-id", value_name = "ID")]
    pub run: Option<String>,
    /// Only events of at least this severity.
    #[arg(long, value_name = "S", value_parser = ["low", "medium", "high", "critical"])]
    pub severity: Option<String>,
}

#[derive(Debug, Args)]
pub struct DecideArgs {
    /// The waiting action's id (see `loopexec pending`).
    #[arg(value_name = "ACTION_ID")]
    pub action_id: String,
    /// Who answers.
    #[arg(long, value_name = "NAME")]
    pub by: String,
}

#[derive(Debug, Args)]
pub struct BuildContextArgs {
    /// The task description file.
    #[arg(long, value_name = "FILE")]
    pub task: Option<String>,
    /// Files (globs, relative to the workdir) the agent must read. Repeatable.
    #[arg(long = "files", value_name = "GLOB", num_args = 1..)]
    pub files: Vec<String>,
    /// The model whose window the context must fit (e.g. claude-sonnet-4-5).
    #[arg(long, value_name = "MODEL")]
    pub model: String,
    /// The run whose last check supplies the failing tests (default: the latest, if any).
    #[arg(long, visible_alias = "run", value_name = "ID")]
    pub run_id: Option<String>,
    /// loop.toml to read [models.windows] from (default: ./loop.toml when present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// The check being measured (shared by `probe-check` and `doctor`).
#[derive(Debug, Args)]
pub struct CheckOpts {
    /// The check command (run with `sh -c` in fresh copies of the workdir).
    #[arg(long = "check", value_name = "CMD")]
    pub command: String,
    /// How to read the check's output: auto or a format name.
    #[arg(long, value_name = "FORMAT", default_value = "auto")]
    pub test_format: String,
    /// The check's success exit code.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub success_exit_code: i32,
    /// Time limit per check run.
    #[arg(long, value_name = "DUR")]
    pub check_timeout: Option<String>,
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub check: CheckOpts,
    /// The flake rate to certify against.
    #[arg(long, value_name = "R", default_value_t = 0.05)]
    pub max_flake_rate: f64,
    /// Confidence of the bound.
    #[arg(long, value_name = "C", default_value_t = 0.95)]
    pub confidence: f64,
    /// Fresh-copy runs (default: derived from --max-flake-rate and --confidence).
    #[arg(long, value_name = "N")]
    pub runs: Option<u64>,
    /// Reruns in one reused copy, to find side effects.
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub reruns: u32,
    /// Dimensions to perturb: order,seed,tz,locale,concurrency,load.
    #[arg(long, value_name = "LIST")]
    pub dimensions: Vec<String>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub check: CheckOpts,
    /// The work step, to verify it can start.
    #[arg(long, value_name = "CMD")]
    pub exec: Option<String>,
    /// Plant mutation canaries in the lines changed since this revision (adequacy): a branch,
    /// tag or commit, e.g. your default branch or HEAD~1 (`main` and `master` stand in for each
    /// other).
    #[arg(long, value_name = "REV")]
    pub diff_base: Option<String>,
    /// An extra mutant: a command that mutates a fresh copy; the check must turn red. Repeatable.
    #[arg(long = "mutate-cmd", value_name = "CMD")]
    pub mutate_cmds: Vec<String>,
    /// Most mutation canaries to run.
    #[arg(long, value_name = "N", default_value_t = 40)]
    pub max_mutants: usize,
    /// Fresh-copy runs for the determinism line.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub probe_runs: u64,
    /// Network the check must run with: host, or none (needs a network namespace).
    #[arg(long, value_name = "MODE", value_parser = ["host", "none"], default_value = "host")]
    pub check_network: String,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  loopexec ack HALT_ID --by alice --resolution resolved      # one halt event (see `loopexec halts`)\n  loopexec ack --run-id RUN_ID --reviewer alice              # a run's work (comprehension debt)\n  loopexec ack HALT_ID --by alice --sign-with ~/.ssh/id_ed25519   # SSH-signed\n\nAn acknowledgement is a person's: ack refuses to run inside a loopexec step. A signed\nack signs `loopexec ack\\nsubject: ID\\nby: NAME\\nresolution: R\\n` with namespace `loopexec`\n(ssh-keygen -Y sign -n loopexec); it is verified against [review] allowed_signers."
)]
pub struct AckArgs {
    /// The halt event to act on (from `loopexec halts`). Without it, give `--run-id` and
    /// `--reviewer` to acknowledge a run's work instead.
    #[arg(value_name = "HALT_ID", conflicts_with_all = ["run_id", "reviewer"])]
    pub halt_id: Option<String>,
    /// Who acknowledges (a person; required with HALT_ID).
    #[arg(long, value_name = "NAME")]
    pub by: Option<String>,
    /// How the halt event was resolved (default: resolved).
    #[arg(long, value_name = "R", value_parser = ["resolved", "escalated", "dismissed"])]
    pub resolution: Option<String>,
    /// Run form: who reviewed the run's work.
    #[arg(long, value_name = "NAME")]
    pub reviewer: Option<String>,
    /// Run form: the run whose work was reviewed (required in the run form).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Free-text notes stored with the acknowledgement.
    #[arg(long, value_name = "TEXT")]
    pub notes: Option<String>,
    /// An SSH signature file of the ack message (`ssh-keygen -Y sign -n loopexec`).
    #[arg(long, value_name = "FILE", conflicts_with = "sign_with")]
    pub signature: Option<PathBuf>,
    /// Sign the ack message with this SSH private key (runs `ssh-keygen -Y sign`).
    #[arg(long, value_name = "KEY")]
    pub sign_with: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The run to watch (default: the latest).
    #[arg(long, visible_alias = "run", value_name = "ID")]
    pub run_id: Option<String>,
    /// The run to watch, as `status RUN` and `report RUN` take it (same as --run-id).
    #[arg(value_name = "RUN", conflicts_with = "run_id")]
    pub run: Option<String>,
    /// Stale when the heartbeat, or the running step's output, is older than this.
    #[arg(long, value_name = "DUR", default_value = "10m")]
    pub stall_timeout: String,
    /// End the wedged run's process groups; the run then halts heartbeat_stale.
    #[arg(long)]
    pub kill: bool,
}

#[derive(Debug, Args)]
pub struct InspectCostArgs {
    /// The run to inspect (default: the latest).
    #[arg(
        long,
        visible_alias = "run",
        value_name = "ID",
        conflicts_with = "ledger"
    )]
    pub run_id: Option<String>,
    /// The run to inspect, as `explain-halt RUN` and `report RUN` take it (same as
    /// --run-id).
    #[arg(value_name = "RUN", conflicts_with_all = ["run_id", "ledger"])]
    pub run: Option<String>,
    /// A cost ledger instead of a run: one USD figure per line, or JSON lines with cost_usd.
    #[arg(long, value_name = "FILE")]
    pub ledger: Option<PathBuf>,
    /// A run-total cap in USD to judge against: the ledger's, or a run's in place of the cap
    /// it was started with.
    #[arg(long, allow_negative_numbers = true, value_name = "USD")]
    pub budget_usd: Option<f64>,
    /// Anomaly threshold in standard deviations (default: the run's, or 3).
    #[arg(long, allow_negative_numbers = true, value_name = "SIGMA")]
    pub cost_sigma: Option<f64>,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Overwrite an existing loop.toml.
    #[arg(long)]
    pub force: bool,
    /// Also install `loopexec gate` as the agent's tool-call hook (.claude/settings.json or .gemini/settings.json).
    #[arg(long, value_name = "AGENT", value_parser = ["claude", "gemini"])]
    pub agent: Option<String>,
}

/// `report`'s arguments.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run to show (default: the latest run in the workdir).
    #[arg(long, visible_alias = "run", value_name = "ID")]
    pub run_id: Option<String>,
    /// The run to show, as `explain-halt RUN` and `attest RUN` take it (same as
    /// --run-id).
    #[arg(value_name = "RUN", conflicts_with = "run_id")]
    pub run: Option<String>,
    /// `text` (default), `markdown` (for $GITHUB_STEP_SUMMARY) or `json` (same as --json).
    #[arg(long, value_name = "FORMAT", value_parser = ["text", "markdown", "json"])]
    pub format: Option<String>,
    /// Also write the run as a JUnit XML test suite (one case per iteration).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write one self-contained HTML page (the trajectory and spend as inline SVG).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Selects a run; the newest one when omitted.
#[derive(Debug, Args)]
pub struct RunSel {
    /// The run to show (default: the latest run in the workdir).
    #[arg(long, visible_alias = "run", value_name = "ID")]
    pub run_id: Option<String>,
    /// The run to show, as `replay RUN` and `attest RUN` take it (same as --run-id).
    #[arg(value_name = "RUN", conflicts_with = "run_id")]
    pub run: Option<String>,
}

impl RunSel {
    /// The run asked for (`--run-id ID` or `RUN`), if any.
    #[must_use]
    pub fn id(&self) -> Option<&str> {
        self.run_id.as_deref().or(self.run.as_deref())
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The work step (usually an agent), run with `sh -c` in the workdir each iteration.
    #[arg(long, value_name = "CMD")]
    pub exec: Option<String>,
    /// The check (the test suite). Required, here or in loop.toml.
    #[arg(long, value_name = "CMD")]
    pub check: Option<String>,
    /// Attempts after the baseline (default 10); with --resume, the run's new cap.
    // (a negative number is read as this flag's value, so the error names the flag
    // rather than calling `-1` an unexpected argument)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_iterations: Option<u32>,
    /// Run a single attempt (same as --max-iterations 1).
    #[arg(long, conflicts_with = "max_iterations")]
    pub once: bool,
    /// Name the run (A-Z a-z 0-9 . _ -, no leading dot; default: unique and time-sortable).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// Continue a halted run from its last accepted state (e.g. after `ack`), under the
    /// policy its receipt recorded; only the caps may change (--max-iterations,
    /// --budget-usd, --budget-tokens, --max-duration).
    #[arg(long, value_name = "ID", conflicts_with = "run_id")]
    pub resume: Option<String>,
    /// Time limit for each exec, e.g. 30m (default: none).
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    pub exec_timeout: Option<String>,
    /// Time limit for each check run, e.g. 90s (default: none).
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    pub check_timeout: Option<String>,
    /// The check's exit code that means success (default 0).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub success_exit_code: Option<i32>,
    /// loop.toml to read (default: ./loop.toml when present). Flags override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// How to read the check's output: auto (default) or a format name (see `parse --help`).
    #[arg(long, value_name = "FORMAT")]
    pub test_format: Option<String>,
    /// A report file (glob) the check writes, e.g. target/junit.xml. Repeatable.
    #[arg(long = "report", value_name = "PATH")]
    pub reports: Vec<String>,
    /// Extra check runs on the same tree before a green verdict is believed (default 3:
    /// with the main run and the checkout confirmation, a fix that passes half the time
    /// is caught 31 times in 32). In the clean room they run cold (its caches, cargo
    /// target and HOME emptied first), and at least one runs even with 0: a cache an
    /// earlier check planted must not make the green.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub confirm_runs: Option<u32>,
    /// no_progress_detected after K attempts without a new best failing-set size
    /// (default 3).
    #[arg(long, value_name = "K", allow_negative_numbers = true)]
    pub no_progress_k: Option<u32>,
    /// What a regression does: revert (restore the last accepted tree) or halt.
    #[arg(long, value_name = "MODE", value_parser = ["revert", "halt"])]
    pub on_regression: Option<String>,
    /// A glob the agent must not change (added to the defaults). Repeatable.
    #[arg(long = "blocked-path", value_name = "GLOB")]
    pub blocked_paths: Vec<String>,
    /// Run-total spend cap in USD (default: none); with --resume, the run's new cap.
    #[arg(long, allow_negative_numbers = true, value_name = "USD")]
    pub budget_usd: Option<f64>,
    /// Run-total token cap (default: none); with --resume, the run's new cap.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub budget_tokens: Option<u64>,
    /// Wall-clock cap for the whole run, e.g. 2h (default: none; the time between a
    /// halt and its resume does not count); with --resume, the run's new cap.
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    pub max_duration: Option<String>,
    /// cost_anomaly threshold in standard deviations (default 3).
    #[arg(long, allow_negative_numbers = true, value_name = "SIGMA")]
    pub cost_sigma: Option<f64>,
    /// Pin the agent's primary model id (default: the first one observed).
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Stop an exec that prints nothing for this long (heartbeat_stale; default: never).
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    pub stall_timeout: Option<String>,
    /// Halt after N accepted iterations no person has acknowledged.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub comprehension_every: Option<u32>,
    /// Time between SIGTERM and SIGKILL when ending a step's process group (default 3s).
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    pub kill_grace: Option<String>,
    /// The check's network: host (default) or none (a private network namespace).
    #[arg(long, value_name = "MODE", value_parser = ["host", "none"])]
    pub check_network: Option<String>,
    /// A person watches: destructive agent actions wait for `loopexec confirm` (default: unattended, declined).
    #[arg(long)]
    pub attended: bool,
    /// How long an attended action waits for a person before the run halts escalation_pending (default 15m).
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    pub approval_timeout: Option<String>,
    /// Refuse to start while an unacknowledged high or critical halt event exists (default true).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub ack_required: Option<bool>,
    /// Run CMD (`sh -c`) with the halt event's JSON on stdin after the run halts (a notifier).
    #[arg(long, value_name = "CMD")]
    pub on_halt: Option<String>,
    /// Halt after N agent tool-call rounds across the run (seen by `loopexec gate`).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub max_turns: Option<u64>,
    /// A used-up `[limits]` rate: suspend (park until it refills, the default) or halt (budget_exceeded).
    #[arg(long, value_name = "MODE", value_parser = ["suspend", "halt"])]
    pub on_rate_limit: Option<String>,
    /// Stream the work step's stdout and stderr to loopexec's stderr as it runs (prefixed
    /// `agent| ` and `agent! `).
    #[arg(long)]
    pub show_agent_output: bool,
    /// Run the check in the agent's working tree instead of a clean room copy of the
    /// snapshot. Weaker: the agent's untracked files, background processes and caches
    /// can then reach the check. Recorded in the receipt and stated in every verdict.
    #[arg(long)]
    pub check_in_place: bool,
    /// Start even though the working tree is still the one an earlier run rejected for
    /// integrity (a test edited, a blocked path changed, a gamed green), or one an
    /// earlier run left unjudged (it ended red after its agent changed the tree).
    /// Without it the first halts at once with the earlier reason (its t0 would freeze
    /// the cheat), and the second is judged from the earlier run's t0.
    #[arg(long)]
    pub accept_rejected_tree: bool,
    /// The exec's filesystem sandbox: auto (Landlock where the kernel has it), landlock
    /// (required: the run does not start without it), off. Under Landlock the agent
    /// writes only the workdir, temp dirs, its CLI's state under $HOME (~/.claude,
    /// ~/.codex, ~/.gemini …), the package caches ~/.cache, ~/.npm, ~/.cargo/registry
    /// and ~/.cargo/git, and `[sandbox] writable` paths; never loopexec's state
    /// directory. The run's receipt lists the exact paths.
    #[arg(long, value_name = "MODE", value_parser = ["auto", "landlock", "off"])]
    pub sandbox: Option<String>,
    /// Halt execution_failure after N consecutive iterations whose agent exited non-zero
    /// (its own error: turn limit, rate limit) (default 3).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub exec_failures: Option<u32>,
    /// What a budget cap does when the agent's spend is not metered: warn (default) or halt.
    #[arg(long, value_name = "MODE", value_parser = ["warn", "halt"])]
    pub on_unmetered: Option<String>,
    /// A reviewer run after a green, guard-clean iteration: reads a JSON input on stdin
    /// (diff against t0, task, check summary), prints a verdict object on stdout
    /// (schemas/judge-verdict.schema.json). reject halts reviewer_rejected (16),
    /// reward_hacking halts reward_hacking_detected (13), escalate or no valid verdict
    /// halts escalation_pending (16); only approve lets the run converge.
    #[arg(long, value_name = "CMD")]
    pub judge: Option<String>,
    /// With --tasks, judge every Nth task-completing green (the final green is always judged).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub judge_every: Option<u32>,
    /// Time limit for one judge run (default 10m).
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    pub judge_timeout: Option<String>,
    /// Cap on the judge's own run-total spend in USD.
    #[arg(long, allow_negative_numbers = true, value_name = "USD")]
    pub judge_budget_usd: Option<f64>,
    /// A file describing the task (given to the judge).
    #[arg(long, value_name = "FILE")]
    pub task: Option<String>,
    /// A test id or glob that defines the task: at green it must have been collected,
    /// run and passed, else objective_unverified (13). Repeatable.
    #[arg(long = "objective", value_name = "TEST_ID_OR_GLOB", num_args = 1..)]
    pub objective: Vec<String>,
    /// A task list (Markdown checklist or JSON Lines of {id, title, status,
    /// blocked_by[]}): each iteration works on the next actionable task; all open tasks
    /// blocked halts no_actionable_tasks (11).
    #[arg(long, value_name = "FILE")]
    pub tasks: Option<String>,
    /// A file (glob) the agent must read, counted with --task against the window of the
    /// --model: context_budget_unsatisfiable (19) when it cannot fit. Repeatable.
    #[arg(long = "context-file", value_name = "GLOB")]
    pub context_files: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ParseArgs {
    /// The format: auto, libtest, libtest-json, nextest, pytest, gotest,
    /// gotest-json, jest, jest-json, vitest, vitest-json, mocha, mocha-json, tap, junit,
    /// ctest, rspec, rspec-json, phpunit, teamcity, unittest, lines, exit-code.
    #[arg(long, value_name = "FORMAT", default_value = "auto")]
    pub format: String,
    /// The captured output to parse (the same as --stdout FILE). `-` reads standard
    /// input; a pipe (`<(zstd -dc 3.check.stdout.zst)`) works too.
    #[arg(value_name = "FILE", conflicts_with = "stdout")]
    pub file: Option<PathBuf>,
    /// The captured standard output of the check.
    #[arg(long, value_name = "FILE")]
    pub stdout: Option<PathBuf>,
    /// The captured standard error of the check.
    #[arg(long, value_name = "FILE")]
    pub stderr: Option<PathBuf>,
    /// The check's exit code.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub exit_code: Option<i32>,
    /// A report file the check wrote (JUnit XML, or a JSON report). Repeatable.
    #[arg(long = "report", value_name = "FILE")]
    pub reports: Vec<PathBuf>,
    /// The check command that produced the capture (judges completeness the output
    /// alone cannot show, e.g. plain `cargo test` stopping at the first failing target).
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
    /// Print the summary shape: counts, failing names, completeness and diagnostics,
    /// without `tests` and `collected` (output bounded by the failing tests, not by the
    /// suite). The default shape keeps the full `tests` list, which scripts and the
    /// sample checker read.
    #[arg(long)]
    pub summary: bool,
}
