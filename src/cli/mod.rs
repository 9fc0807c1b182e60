//! The command line: clap types, the one dispatch match, and rendering.
//!
//! stdout is API, stderr is UI. With `--json` every command prints exactly one JSON
//! object on stdout (`tool`, `version`, `status`, `errors[]`, plus the command's
//! fields); without it, a human rendering. A computed halt is an outcome, not a
//! crash: it prints its result on stdout and nothing on stderr. Usage errors are
//! clap's (exit 2).

mod args;

pub use args::{
    AckArgs, CheckOpts, Cli, Command, DoctorArgs, InitArgs, InspectCostArgs, ParseArgs, ProbeArgs,
    RunArgs, RunSel, WatchArgs,
};

use crate::cmd;
use clap::Parser;
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
    /// A command error (not a halt) with its exit code, message and hint.
    #[must_use]
    pub fn error(exit_code: u8, message: String, hint: Option<String>) -> Outcome {
        Outcome {
            status: "error".into(),
            exit_code,
            fields: Map::new(),
            human: String::new(),
            errors: vec![message],
            hint,
        }
    }
}

/// Renders an outcome: one JSON object, or human text (errors to stderr).
pub fn render(o: &Outcome, json: bool) {
    if json {
        let mut m = Map::new();
        m.insert("tool".into(), Value::from("loopexec"));
        m.insert("version".into(), Value::from(env!("CARGO_PKG_VERSION")));
        m.insert("status".into(), Value::from(o.status.clone()));
        m.insert("errors".into(), Value::from(o.errors.clone()));
        m.insert("exit_code".into(), Value::from(o.exit_code));
        for (k, v) in &o.fields {
            m.insert(k.clone(), v.clone());
        }
        println!("{}", Value::Object(m));
        return;
    }
    if !o.human.is_empty() {
        print!("{}", o.human);
        if !o.human.ends_with('\n') {
            println!();
        }
    }
    if o.status == "error" {
        for e in &o.errors {
            eprintln!("loopexec: error: {e}");
        }
        if let Some(h) = &o.hint {
            eprintln!("hint: {h}");
        }
    }
}

/// Parses the process arguments, runs the command, renders the outcome and returns
/// the exit code. Safe to call more than once (no global state beyond signal
/// handlers, which are idempotent).
#[must_use]
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = e.exit_code();
            let _ = e.print();
            return ExitCode::from(u8::try_from(code).unwrap_or(2));
        }
    };
    let json = cli.json;
    let outcome = cmd::dispatch(cli);
    render(&outcome, json);
    ExitCode::from(outcome.exit_code)
}

#[cfg(test)]
mod tests {
    /// clap's own consistency checks (unique argument names, valid defaults) over every
    /// subcommand; a violation would otherwise only show as a panic in debug builds.
    #[test]
    fn command_line_definition_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
