//! Commands about loopexec itself: `exit-codes` (also `loopexec help exit-codes`),
//! `completions SHELL` and `man`.

use crate::cli::{CompletionsArgs, Outcome};
use crate::cmd::bodies::{CompletionsBody, ExitCodeRow, ExitCodesBody, ManBody};
use crate::halt::{ExitClass, HaltReason};

/// The exit-code table, generated from the taxonomy (the same source as exit-codes.md).
#[must_use]
pub fn exit_codes_text() -> String {
    let mut s = String::from(
        "Exit codes (the class is what CI branches on; halt_reason is the stable detail):\n\n",
    );
    s.push_str("  0   nominal             a command ran; no loop halt to report\n");
    s.push_str("  1   error               a read command was given bad input (unknown run, …)\n");
    s.push_str("  2   usage               bad command line (clap)\n");
    for class in ExitClass::ALL {
        let reasons: Vec<&str> = HaltReason::ALL
            .iter()
            .filter(|r| r.class() == class)
            .map(|r| r.as_str())
            .collect();
        if reasons.is_empty() {
            continue;
        }
        let mut line = format!("  {:<3} {:<19} ", class.code(), class.as_str());
        let indent = line.len();
        let mut width = indent;
        for (i, r) in reasons.iter().enumerate() {
            let piece = if i + 1 < reasons.len() {
                format!("{r}, ")
            } else {
                (*r).to_string()
            };
            if width + piece.len() > 92 && width > indent {
                line.truncate(line.trim_end().len());
                line.push('\n');
                line.push_str(&" ".repeat(indent));
                width = indent;
            }
            width += piece.len();
            line.push_str(&piece);
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s.push_str("\n`loopexec explain-halt` says what a halt means and what to do next.\n");
    s.push_str(&command_exit_codes());
    s
}

/// The exit codes of the commands other than `run`: the section of exit-codes.md
/// that lists them, so the help and the document cannot disagree.
fn command_exit_codes() -> String {
    const DOC: &str = include_str!("../../exit-codes.md");
    const HEAD: &str = "## Exit codes of the checking commands";
    let Some(at) = DOC.find(HEAD) else {
        return String::new();
    };
    let section = &DOC[at + HEAD.len()..];
    let section = section.find("\n## ").map_or(section, |e| &section[..e]);
    let body: String = section
        .lines()
        .skip_while(|l| !l.starts_with("- "))
        .map(|l| format!("{l}\n"))
        .collect();
    format!("\nExit codes of the other commands (exit-codes.md):\n{body}")
}

pub(crate) fn exit_codes() -> Outcome {
    let body = ExitCodesBody {
        exit_codes: HaltReason::ALL
            .iter()
            .map(|r| ExitCodeRow {
                exit_code: r.exit_code(),
                class: r.class().as_str().into(),
                halt_reason: r.as_str().into(),
                advice: r.advice().as_str().into(),
            })
            .collect(),
        human: exit_codes_text(),
    };
    Outcome::from_body("ok", 0, &body)
}

pub(crate) fn completions(a: &CompletionsArgs) -> Outcome {
    let mut cmd = crate::cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "loopexec", &mut buf);
    let script = String::from_utf8_lossy(&buf).into_owned();
    let body = CompletionsBody {
        shell: a.shell.to_string(),
        script: script.clone(),
        human: script,
    };
    Outcome::from_body("ok", 0, &body)
}

/// The COMMANDS section of the man page: every subcommand's full `--help`, so the
/// one page documents them all (the SUBCOMMANDS list names pages that are not
/// installed separately).
fn commands_section(cmd: &mut clap::Command) -> String {
    let mut s = String::from(".SH COMMANDS\n");
    for sub in cmd.get_subcommands_mut() {
        if sub.get_name() == "help" {
            continue;
        }
        s.push_str(&format!(".SS \"loopexec {}\"\n.nf\n", sub.get_name()));
        for line in sub.render_long_help().to_string().lines() {
            s.push_str(&roff_line(line));
            s.push('\n');
        }
        s.push_str(".fi\n");
    }
    s
}

/// One line of text for a no-fill roff block: backslashes escaped, and a leading
/// `.` or `'` kept from being read as a request.
fn roff_line(line: &str) -> String {
    let l = line.replace('\\', "\\e");
    if l.starts_with('.') || l.starts_with('\'') {
        format!("\\&{l}")
    } else {
        l
    }
}

pub(crate) fn man() -> Outcome {
    let mut cmd = crate::cli::command();
    cmd.build();
    let mut buf = Vec::new();
    if let Err(e) = clap_mangen::Man::new(cmd.clone()).render(&mut buf) {
        return Outcome::error(
            super::EXIT_ERROR,
            format!("cannot render the man page: {e}"),
            None,
        );
    }
    let mut roff = String::from_utf8_lossy(&buf).into_owned();
    roff.push_str(&commands_section(&mut cmd));
    let body = ManBody {
        roff: roff.clone(),
        human: roff,
    };
    Outcome::from_body("ok", 0, &body)
}
