//! The command line: clap types, the one dispatch match, and rendering.
//!
//! stdout is API, stderr is UI. With `--json` every command prints exactly one JSON
//! object on stdout (`tool`, `version`, `status`, `errors[]`, plus the command's
//! fields); without it, a human rendering. A computed halt is an outcome, not a
//! crash: it prints its result on stdout and nothing on stderr. Usage errors are
//! clap's (exit 2).

mod args;

pub use args::{
    AckArgs, BuildContextArgs, CheckOpts, Cli, Command, DecideArgs, DoctorArgs, HaltsArgs,
    HoldArgs, InitArgs, InspectCostArgs, ParseArgs, ProbeArgs, ReleaseArgs, RunArgs, RunSel,
    WatchArgs,
};
pub use args::{
    AttestArgs, CompletionsArgs, GcArgs, KeygenArgs, ReplayArgs, ReportArgs, VerifyArgs,
};

use crate::cmd;
use clap::{CommandFactory, FromArgMatches};
use serde_json::{Map, Value};
use std::process::ExitCode;

/// What a command produced; rendered once by [`render`].
#[derive(Debug, Clone)]
pub struct Outcome {
    /// `ok`, `halted`, `error`, or a command-specific status (`alive`, `finished`, …).
    pub status: String,
    /// Process exit code.
    pub exit_code: u8,
    /// Command fields for `--json` (merged after the common ones).
    pub fields: Map<String, Value>,
    /// Human rendering for stdout.
    pub human: String,
    /// Error messages (also `errors[]` in JSON).
    pub errors: Vec<String>,
    /// A hint printed after errors in human mode.
    pub hint: Option<String>,
}

impl Outcome {
    /// A successful outcome with exit 0.
    #[must_use]
    pub fn ok(fields: Map<String, Value>, human: String) -> Outcome {
        Outcome {
            status: "ok".into(),
            exit_code: 0,
            fields,
            human,
            errors: Vec::new(),
            hint: None,
        }
    }
    /// A command error (not a halt) with its exit code, message and hint. Exit 2 (a
    /// bad command line, exit-codes.md) is `status: usage_error` whether clap or the
    /// command found it, so scripts branch on one value.
    #[must_use]
    pub fn error(exit_code: u8, message: String, hint: Option<String>) -> Outcome {
        // the hint is part of the JSON contract too (`ErrorBody::hint`)
        let mut fields = Map::new();
        if let Some(h) = &hint {
            fields.insert("hint".into(), Value::from(h.clone()));
        }
        Outcome {
            status: if exit_code == 2 {
                "usage_error".into()
            } else {
                "error".into()
            },
            exit_code,
            fields,
            human: String::new(),
            errors: vec![message],
            hint,
        }
    }
}

/// Renders an outcome: one JSON object, or human text (errors to stderr).
pub fn render(o: &Outcome, json: bool) {
    use std::io::Write;
    // A closed stdout (`loopexec run | head`) must not turn a halt into a crash: write
    // errors are ignored, and the exit code still says how the command ended.
    let mut out = std::io::stdout().lock();
    if json {
        let _ = writeln!(out, "{}", crate::output::assemble(o));
        let _ = out.flush();
        return;
    }
    if !o.human.is_empty() {
        let _ = write!(out, "{}", o.human);
        if !o.human.ends_with('\n') {
            let _ = writeln!(out);
        }
    }
    let _ = out.flush();
    if o.status == "error" || o.status == "usage_error" {
        let mut err = std::io::stderr().lock();
        for e in &o.errors {
            let _ = writeln!(err, "loopexec: error: {e}");
        }
        if let Some(h) = &o.hint {
            let _ = writeln!(err, "hint: {h}");
        }
    }
}

/// Parses the process arguments, runs the command, renders the outcome and returns
/// the exit code. Safe to call more than once (no global state beyond signal
/// handlers, which are idempotent).
#[must_use]
pub fn main() -> ExitCode {
    // cargo's runner in the clean room (crate::proc::cargo_runner): before any parsing,
    // the rest of the arguments are the test binary's
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if raw
        .get(1)
        .is_some_and(|a| a == crate::proc::cargo_runner::RUNNER_ARG)
    {
        return ExitCode::from(crate::proc::cargo_runner::run(&raw[2..]));
    }
    // `loopexec help exit-codes` prints the table itself (clap would print the help of
    // the `exit-codes` subcommand around it).
    let args: Vec<std::ffi::OsString> = std::env::args_os()
        .map(|a| {
            if a == "help" {
                "exit-codes-help".into()
            } else {
                a
            }
        })
        .collect();
    let args: Vec<std::ffi::OsString> = match args.iter().position(|a| a == "exit-codes-help") {
        Some(i) if args.get(i + 1).is_some_and(|n| n == "exit-codes") => args
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .map(|(_, a)| a.clone())
            .collect(),
        _ => std::env::args_os().collect(),
    };
    let cli = match command()
        .try_get_matches_from(args)
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(c) => c,
        Err(e) => {
            let code = u8::try_from(e.exit_code()).unwrap_or(2);
            let informational = matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp
                    | clap::error::ErrorKind::DisplayVersion
                    | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            );
            let json = std::env::args().any(|a| a == "--json");
            if json {
                if let Some(o) = informational_json(&e) {
                    render(&o, true);
                    return ExitCode::SUCCESS;
                }
            }
            // `--json` promises one JSON object on stdout, usage errors included.
            if !informational && json {
                let first = usage_message(&e.render().to_string());
                let hint =
                    Some("see `loopexec --help` (or `loopexec <command> --help`)".to_string());
                let mut o = Outcome::error(code, first, hint);
                o.status = "usage_error".into();
                render(&o, true);
            }
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let json = cli.json
        || matches!(&cli.command, Command::Report(a) if a.format.as_deref() == Some("json"));
    if let (true, Command::Parse(a)) = (json, &cli.command) {
        return cmd::parse::run_json(a); // streams its JSON (no whole-run Value)
    }
    let outcome = cmd::dispatch(cli);
    render(&outcome, json);
    ExitCode::from(outcome.exit_code)
}

/// `--version --json`, `--help --json` and `help [COMMAND] --json` as one JSON object
/// each ([`VersionBody`](crate::cmd::bodies::VersionBody),
/// [`HelpBody`](crate::cmd::bodies::HelpBody)); `None` for any other parse error.
///
/// `help --json` reaches here as clap's "unrecognized subcommand '--json'": the
/// arguments are parsed again without `--json` and the help that gives is wrapped.
fn informational_json(e: &clap::Error) -> Option<Outcome> {
    use crate::cmd::bodies::{HelpBody, VersionBody};
    use clap::error::ErrorKind;
    let help = |text: String| {
        let body = HelpBody {
            text: text.clone(),
            human: text,
        };
        Outcome::from_body("ok", 0, &body)
    };
    match e.kind() {
        ErrorKind::DisplayVersion => {
            let text = format!("loopexec {}", env!("CARGO_PKG_VERSION"));
            let body = VersionBody {
                text: text.clone(),
                target: format!("{}-{}", std::env::consts::ARCH, std::env::consts::OS),
                human: text,
            };
            Some(Outcome::from_body("ok", 0, &body))
        }
        ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            Some(help(e.render().to_string()))
        }
        _ => {
            let rest: Vec<std::ffi::OsString> =
                std::env::args_os().filter(|a| a != "--json").collect();
            if !rest.iter().skip(1).any(|a| a == "help") {
                return None;
            }
            match command().try_get_matches_from(rest) {
                Err(again) if again.kind() == ErrorKind::DisplayHelp => {
                    Some(help(again.render().to_string()))
                }
                _ => None,
            }
        }
    }
}

/// The clap command with the texts computed at run time (the exit-code table).
#[must_use]
pub fn command() -> clap::Command {
    let table = crate::cmd::exit_codes_text();
    Cli::command().mut_subcommand("exit-codes", |c| {
        c.after_long_help(table.clone()).after_help(table)
    })
}

/// A usage error for `errors[]`: clap's message without its `Usage:` block, on one
/// line (e.g. "the following required arguments were not provided: --key <FILE>").
fn usage_message(rendered: &str) -> String {
    let mut parts = Vec::new();
    for line in rendered.lines() {
        let t = line.trim();
        if t.starts_with("Usage:") || t.starts_with("For more information") {
            break;
        }
        if !t.is_empty() {
            parts.push(t.trim_start_matches("error: ").to_string());
        }
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn usage_message_keeps_the_missing_argument() {
        let m = super::usage_message(
            "error: the following required arguments were not provided:\n  --key <FILE>\n\nUsage: loopexec attest --key <FILE> [RUN]\n\nFor more information, try '--help'.\n",
        );
        assert_eq!(
            m,
            "the following required arguments were not provided: --key <FILE>"
        );
    }

    /// clap's own consistency checks (unique argument names, valid defaults) over every
    /// subcommand; a violation would otherwise only show as a panic in debug builds.
    #[test]
    fn command_line_definition_is_consistent() {
        super::command().debug_assert();
    }
}
