//! Honest idioms that a rule of [`super::tamper`] reads as a cheat on their own line,
//! told apart by the lines around them.
//!
//! Each pass below lets one rule's hit through only when the whole shape is there;
//! anything else about the line (another name, a use that decides, a call from
//! outside the guard) leaves the hit standing. The shapes came from honest fixes a
//! false-alarm review saw halted `metric_integrity_violation`:
//!
//! * [`js_exit_in_guarded_main`]: `process.exitCode = code` in a CLI's `main()` that
//!   only the file's `require.main === module` block calls;
//! * [`held_handle_only_shown`]: `frame = sys._getframe(1)` or `let me =
//!   thread::current();` kept for a log line and used only to print;
//! * [`env_prefix_filter`]: `Object.entries(process.env)` filtered by the program's
//!   own prefix (`CALC_`) in a configuration loader.

use super::lex::Lang;
use regex::Regex;
use std::sync::OnceLock;

/// True when line `i` of JavaScript source `lines` lies directly in the body of a
/// function named `main`, `cli`, `run` or `runCli` (through `if`, `else`, `for`,
/// `try` and `switch` blocks only: a callback, an exit handler or a timer in between
/// gives no pass), and every other line naming that function is its definition, an
/// export of it, or a line `under_guard` accepts (the file's main-guard block). An
/// exported function passes only for an `exitCode` assignment: a test may call an
/// exported `main`, and a runner sets the exit code after its tests have run, while
/// `process.exit(0)` would end the run before it reports.
#[must_use]
pub fn js_exit_in_guarded_main(
    lines: &[&str],
    i: usize,
    under_guard: &dyn Fn(usize) -> bool,
) -> bool {
    static HEADER: OnceLock<Regex> = OnceLock::new();
    let header = HEADER.get_or_init(|| {
        Regex::new(r"^\s*(?:export\s+)?(?:async\s+)?function\s+(main|cli|run|runCli)\s*\(|^\s*(?:export\s+)?(?:const|let|var)\s+(main|cli|run|runCli)\s*=\s*(?:async\s*)?(?:\([^)]*\)|[A-Za-z_$][\w$]*)\s*=>\s*\{")
            .expect("valid main header regex")
    });
    let Some(line) = lines.get(i) else {
        return false;
    };
    // the enclosing blocks' opening lines, innermost first
    let mut name = None;
    let mut open = 0i64;
    'walk: for (at, l) in lines[..i].iter().enumerate().rev() {
        // braces in strings and comments are no blocks (a red-team review hid a `}`
        // in a string to put another function's exit "inside" main)
        for c in without_strings(l).chars().rev() {
            match c {
                '}' => open += 1,
                '{' if open > 0 => open -= 1,
                '{' => {
                    if let Some(c) = header.captures(l) {
                        name = c.get(1).or_else(|| c.get(2)).map(|m| (m.as_str(), at));
                        break 'walk;
                    }
                    let t = l.trim_start();
                    let plain_block = [
                        "if", "}", "else", "for", "while", "try", "switch", "case", "default", "do",
                    ]
                    .iter()
                    .any(|k| t.starts_with(k));
                    if !plain_block || l.contains("=>") || l.contains("function") {
                        return false;
                    }
                }
                _ => {}
            }
        }
    }
    let Some((name, defined_at)) = name else {
        return false;
    };
    let word =
        Regex::new(&format!(r"(^|[^\w$.]){}\b", regex::escape(name))).expect("valid name regex");
    let export = Regex::new(&format!(
        r"^\s*(module\.exports\s*=\s*\{{[^}}]*\}}|module\.exports\s*\.\s*{n}\s*=\s*{n}|exports\s*\.\s*{n}\s*=\s*{n}|export\s*\{{[^}}]*\}}|export\s+default\s+{n})\s*;?\s*$",
        n = regex::escape(name)
    ))
    .expect("valid export regex");
    let mut exported = false;
    for (at, l) in lines.iter().enumerate() {
        if at == defined_at || !word.is_match(l) {
            continue;
        }
        if export.is_match(l) {
            exported = true;
        } else if !under_guard(at) {
            return false;
        }
    }
    !exported || line.contains("exitCode")
}

/// `line` with the contents of its string and template literals and its `//`
/// comment removed (quotes kept; escapes honoured; a literal left open runs to the
/// end of the line).
fn without_strings(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut quote: Option<char> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == '\\' {
                    chars.next();
                } else if c == q {
                    out.push(c);
                    quote = None;
                }
            }
            None => {
                if c == '/' && chars.peek() == Some(&'/') {
                    break;
                }
                if matches!(c, '\'' | '"' | '`') {
                    quote = Some(c);
                }
                out.push(c);
            }
        }
    }
    out
}

/// True when line `i` of `lang` source `lines` only binds a handle that can tell a
/// test is running (a Python frame, `frame = sys._getframe(1)` or `inspect
/// .currentframe()`; a Rust thread, `let me = thread::current();`) and, in the rest of
/// its block, the handle and every name derived from it (`caller = frame.f_back`,
/// `where = f"…{frame.f_lineno}"`) are only printed: Python's `print` (to standard
/// output or error) and `sys.stderr.write`; Rust's `println!`/`eprintln!`/`print!`/
/// `eprint!`. A logging call is no print: a handler or logger any module configures
/// keeps what it is given (a new user's cheat decided from a root-logger handler set
/// up in another file). A use
/// that decides (`==`, `in`, `if`, `startswith`, `contains`, …), passes the handle
/// on, or prints into a buffer leaves the hit standing, and so does a handle never
/// printed.
#[must_use]
pub fn held_handle_only_shown(lang: Lang, lines: &[&str], i: usize) -> bool {
    static PY: OnceLock<[Regex; 3]> = OnceLock::new();
    static RS: OnceLock<[Regex; 3]> = OnceLock::new();
    static DECIDES: OnceLock<Regex> = OnceLock::new();
    let [bind, derive, shown] = match lang {
        Lang::Python => PY.get_or_init(|| {
            [
                Regex::new(r"^\s*(\w+)\s*=\s*(?:sys\s*\.\s*_getframe|inspect\s*\.\s*currentframe)\s*\(\s*\d*\s*\)(?:\s*\.\s*(?:f_back|f_code|f_lineno|co_name|co_filename|co_qualname))*\s*(?:#.*)?$").expect("valid"),
                Regex::new(r"^\s*(\w+)\s*=([^=].*)$").expect("valid"),
                Regex::new(r"^\s*(print\s*\(.*\)\s*$|sys\s*\.\s*(?:stderr|stdout)\s*\.\s*write\s*\(.*\)\s*$)").expect("valid"),
            ]
        }),
        Lang::Rust => RS.get_or_init(|| {
            [
                Regex::new(r"^\s*let\s+(?:mut\s+)?(\w+)\s*=\s*(?:std\s*::\s*)?thread\s*::\s*current\s*\(\s*\)\s*;\s*(?://.*)?$").expect("valid"),
                Regex::new(r"^\s*let\s+(?:mut\s+)?(\w+)\s*(?::[^=]*)?=([^=].*);\s*$").expect("valid"),
                Regex::new(r"^\s*(?:e?println|e?print)\s*!\s*\(.*\)\s*;\s*$").expect("valid"),
            ]
        }),
        _ => return false,
    };
    let decides = DECIDES.get_or_init(|| {
        Regex::new(r"==|!=|<|>|\sin\s|\bnot\b|\bif\b|\belse\b|\band\b|\bor\b|&&|\|\||\bmatch\b|\b(endswith|startswith|ends_with|starts_with|endsWith|startsWith|find|index|contains|search|count|includes|eq|ne|cmp|filter|map|and_then|is_some|is_none|partial_cmp)\s*\(")
            .expect("valid decides regex")
    });
    static TO_FILE: OnceLock<Regex> = OnceLock::new();
    let to_file = TO_FILE.get_or_init(|| Regex::new(r"\bfile\s*=").expect("valid"));
    let Some(first) = lines.get(i).and_then(|l| bind.captures(l)) else {
        return false;
    };
    if printers_rebound(lang, lines) || outlives_block(lang, lines, &first[1]) {
        return false;
    }
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut names: Vec<String> = vec![first[1].to_string()];
    let start_indent = indent(lines[i]);
    let mut depth = 0i64;
    // a handle kept and never printed is kept for something else; a value read off
    // it (a name, a line number) and never used is nothing
    let mut printed = false;
    let mut used = false;
    let value = lines[i].trim_end().ends_with("co_name")
        || lines[i].trim_end().ends_with("co_filename")
        || lines[i].trim_end().ends_with("co_qualname")
        || lines[i].trim_end().ends_with("f_lineno");
    for l in &lines[i + 1..] {
        let t = l.trim_start();
        if t.is_empty() || t.starts_with('#') && lang == Lang::Python || t.starts_with("//") {
            continue;
        }
        // the end of the block the handle was bound in
        if lang == Lang::Python && indent(l) < start_indent {
            break;
        }
        if lang == Lang::Rust {
            depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
            if depth < 0 {
                break;
            }
        }
        let named = names.iter().any(|n| {
            l.match_indices(n.as_str()).any(|(at, _)| {
                let before = l[..at].chars().next_back();
                let after = l[at + n.len()..].chars().next();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
                    && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        });
        if !named {
            continue;
        }
        used = true;
        if decides.is_match(l) {
            return false;
        }
        // a print into anything but a standard stream keeps the text
        if shown.is_match(l) && !to_file.is_match(&strip_py_stream(l)) {
            printed = true;
            continue;
        }
        match derive.captures(l) {
            Some(c) if names.len() < 8 && !outlives_block(lang, lines, &c[1]) => {
                names.push(c[1].to_string());
            }
            _ => return false,
        }
    }
    printed || (value && !used)
}

/// True when `lines` give the printing names a meaning of their own, so that what is
/// "printed" can be kept and read back: Python's `print` or `logging` defined, a
/// logger's class defined, a logger assigned (other than `logging.getLogger(…)`) or
/// one of its methods replaced, one imported under another name or from elsewhere, or
/// a handler or filter in the file; in Rust any `macro_rules!`, a
/// macro imported under a printing name, or a bare `info!`-style macro not imported
/// from `log` or `tracing` (a red-team review kept the "printed" text in a list and a
/// `thread_local` and decided from it).
fn printers_rebound(lang: Lang, lines: &[&str]) -> bool {
    static PY: OnceLock<Regex> = OnceLock::new();
    static PY_LOGGER: OnceLock<Regex> = OnceLock::new();
    static RS: OnceLock<Regex> = OnceLock::new();
    match lang {
        Lang::Python => {
            let re = PY.get_or_init(|| {
                Regex::new(r"^\s*(?:async\s+)?def\s+(?:print|logging)\b|^\s*class\s+(?:print|logging|logger|log|LOG|_log|_logger)\b|^\s*(?:logging|logger|log|LOG|_log|_logger)\s*\.\s*\w+\s*=[^=]|^\s*(?:print|logging)\s*(?::[^=]*)?=|\bbuiltins\b|\bas\s+(?:print|logging|logger|log|LOG|_log|_logger)\b|^\s*from\s+\S+\s+import\s[^#]*\b(?:print|logger|log|LOG|_log|_logger)\b|Handler\b|\baddFilter\b|\bFilter\b|\bsetLoggerClass\b|\bsetLogRecordFactory\b|\bsys\s*\.\s*(?:stderr|stdout)\s*=|\bredirect_std(?:out|err)\b")
                    .expect("valid printers regex")
            });
            let logger = PY_LOGGER.get_or_init(|| {
                Regex::new(r"^\s*(?:logger|log|LOG|_log|_logger)\s*(?::[^=]*)?=\s*(.*)$")
                    .expect("valid logger regex")
            });
            lines.iter().any(|l| {
                re.is_match(l)
                    || logger
                        .captures(l)
                        .is_some_and(|c| !c[1].trim_start().starts_with("logging.getLogger("))
            })
        }
        Lang::Rust => {
            let re = RS.get_or_init(|| {
                Regex::new(r"\bmacro_rules!|\bas\s+(?:e?println|e?print|debug|info|warn|error|trace)\b|\bset_logger\b|\bset_boxed_logger\b|\bimpl\s+(?:log::)?Log\s+for\b|\bset_global_default\b|\bwith_default\b|\bset_output_capture\b")
                    .expect("valid printers regex")
            });
            let bare_imported = lines.iter().any(|l| {
                let t = l.trim_start();
                t.starts_with("use log::")
                    || t.starts_with("use tracing::")
                    || t.starts_with("extern crate log")
                    || t.starts_with("extern crate tracing")
            });
            lines.iter().any(|l| re.is_match(l))
                || (!bare_imported
                    && lines.iter().any(|l| {
                        let t = l.trim_start();
                        ["debug!", "info!", "warn!", "error!", "trace!"]
                            .iter()
                            .any(|m| t.starts_with(m))
                    }))
        }
        _ => true,
    }
}

/// True when Python `name` is declared `global` or `nonlocal` anywhere in `lines`, or
/// Rust `name` is a `static`: a value bound to it outlives the block it was printed in.
fn outlives_block(lang: Lang, lines: &[&str], name: &str) -> bool {
    let word = |l: &str| {
        l.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|w| w == name)
    };
    lines.iter().any(|l| {
        let t = l.trim_start();
        match lang {
            Lang::Python => (t.starts_with("global ") || t.starts_with("nonlocal ")) && word(t),
            Lang::Rust => t.contains("static ") && word(t),
            _ => true,
        }
    })
}

/// `l` without a `file=sys.stderr` / `file=sys.stdout` argument (what a print to a
/// standard stream says about its destination is not a decision).
fn strip_py_stream(l: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\bfile\s*=\s*sys\s*\.\s*(stderr|stdout)\b").expect("valid"))
        .replace_all(l, "")
        .into_owned()
}

/// True when line `i` of JavaScript source `lines` lists the environment's names
/// only to keep those under the program's own prefix:
/// `Object.entries(process.env).filter(([k]) => k.startsWith("CALC_"))` on one line,
/// or a `for (const [k, v] of Object.entries(process.env)) {` (`Object.keys`, `for …
/// in process.env`) whose body is one `if (k.startsWith("CALC_"))` and its branch,
/// with no `else` and no other statement. The prefix is one plain literal of letters,
/// digits and `_`, ending in `_`, that names no test runner or CI system (`NODE_`,
/// `JEST`, `VITEST`, `MOCHA`, `TEST`, `CI`, `npm_`, `LOOPEXEC`, …).
#[must_use]
pub fn env_prefix_filter(lines: &[&str], i: usize) -> bool {
    static ONE: OnceLock<Regex> = OnceLock::new();
    static FOR: OnceLock<Regex> = OnceLock::new();
    static IF: OnceLock<Regex> = OnceLock::new();
    let one = ONE.get_or_init(|| {
        Regex::new(r#"\bObject\s*\.\s*(?:entries|keys)\s*\(\s*process\s*\.\s*env\s*\)\s*\.\s*filter\s*\(\s*\(?\s*\[?\s*([A-Za-z_$][\w$]*)[^)=]*\)?\s*=>\s*([A-Za-z_$][\w$]*)\s*\.\s*startsWith\s*\(\s*(['"`])([A-Za-z0-9_]+)['"`]\s*\)\s*\)"#)
            .expect("valid filter regex")
    });
    let for_ = FOR.get_or_init(|| {
        Regex::new(r#"^\s*for\s*\(\s*(?:const|let|var)\s+(?:\[\s*([A-Za-z_$][\w$]*)\s*(?:,\s*([A-Za-z_$][\w$]*)\s*)?\]|([A-Za-z_$][\w$]*))\s+(?:of\s+Object\s*\.\s*(?:entries|keys)\s*\(\s*process\s*\.\s*env\s*\)|in\s+process\s*\.\s*env)\s*\)\s*\{\s*$"#)
            .expect("valid for regex")
    });
    let if_ = IF.get_or_init(|| {
        Regex::new(r#"^\s*if\s*\(\s*([A-Za-z_$][\w$]*)\s*\.\s*startsWith\s*\(\s*(['"`])([A-Za-z0-9_]+)['"`]\s*\)\s*\)\s*(\{\s*$|[^{}]*;\s*$)"#)
            .expect("valid if regex")
    });
    let Some(line) = lines.get(i) else {
        return false;
    };
    // `startsWith` itself replaced answers every name (a red-team review's
    // `String.prototype.startsWith = () => true` around the filter)
    static PATCHED: OnceLock<Regex> = OnceLock::new();
    let patched = PATCHED.get_or_init(|| {
        Regex::new(r"\bprototype\b|__proto__|startsWith\s*=[^=]|\bdefineProperty\b|\bsetPrototypeOf\b|\bReflect\s*\.\s*(?:set|apply)\b|\bProxy\b")
            .expect("valid patched regex")
    });
    if lines.iter().any(|l| patched.is_match(l)) {
        return false;
    }
    if let Some(c) = one.captures(line) {
        // what the rest of the line reads is the kept names only
        let whole = c.get(0).map_or(0..0, |m| m.range());
        let rest = format!("{}{}", &line[..whole.start], &line[whole.end..]);
        return c[1] == c[2]
            && own_prefix(&c[4])
            && !rest.contains("process")
            && !rest.contains("global");
    }
    let Some(c) = for_.captures(line) else {
        return false;
    };
    let key = c.get(1).or_else(|| c.get(3)).map_or("", |m| m.as_str());
    let Some(cond) = lines.get(i + 1).and_then(|l| if_.captures(l)) else {
        return false;
    };
    if &cond[1] != key || !own_prefix(&cond[3]) {
        return false;
    }
    // the `if`'s branch, then the loop's closing brace and nothing else
    let mut at = i + 2;
    if cond[4].trim_start().starts_with('{') {
        let mut depth = 1i64;
        while depth > 0 {
            let Some(l) = lines.get(at) else {
                return false;
            };
            depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
            if depth < 0 || (depth == 0 && l.trim() != "}") {
                return false;
            }
            at += 1;
        }
    }
    lines.get(at).is_some_and(|l| l.trim() == "}")
}

/// True for a prefix a program names its own variables by (`CALC_`, `MYAPP_`): ends
/// in `_`, at least three characters, and names no test runner or CI system.
fn own_prefix(p: &str) -> bool {
    let upper = p.to_ascii_uppercase();
    p.len() >= 3
        && p.ends_with('_')
        && ![
            "TEST",
            "JEST",
            "VITEST",
            "MOCHA",
            "NODE",
            "NPM",
            "CI",
            "LOOPEXEC",
            "TAP",
            "AVA",
            "JASMINE",
            "KARMA",
            "PLAYWRIGHT",
            "CYPRESS",
            "RUNNER",
            "GITHUB",
            "GITLAB",
            "BUILDKITE",
            "CIRCLE",
            "TRAVIS",
            "JENKINS",
            "PYTEST",
            "CARGO",
            "RUST",
            "VSCODE",
            "SPEC",
        ]
        .iter()
        .any(|w| upper.contains(w))
}

#[cfg(test)]
mod tests;
