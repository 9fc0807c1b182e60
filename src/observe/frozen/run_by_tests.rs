//! Code the tests build or run (SPEC §3.10): of the files the tests name by a string
//! ([`super::test_data`]), those that are the code under test, not data.
//!
//! A C project's pytest suite compiles `calc.c` (`subprocess.run(["cc", …, "calc.c"])`)
//! and a shell CLI's runs `bin/calc` (`["sh", "bin/calc", …]`): both are named by a
//! literal and are of no language loopexec reads, but freezing them as "data the tests
//! read" refused the honest fix (a fresh review's false alarms). A named file is code
//! under test when a **spawn call** of a test (Python `subprocess.run`/`call`/
//! `check_output`/`Popen`, `os.system`/`os.exec*`/`os.spawn*`; Rust `Command::new`,
//! `.arg`/`.args`; Go `exec.Command`; JavaScript `child_process` `exec`/`execFile`/
//! `spawn`/`fork`, `execa`; `system`) gets it
//!
//! * in the place of the program: the call's first argument (`["bin/calc", "2"]`), or
//!   the first argument after an interpreter or wrapper (`sh`, `python3`, `node`,
//!   `env`, …; options skipped);
//! * as an input of a call that compiles (a compiler or build tool among its strings,
//!   `cc`, `gcc`, `clang`, `javac`, `make`, …) when the file is source code
//!   ([`is_source_code`]: `.c`, `.h`, `.cpp`, `.java`, `.rb`, …);
//! * as an argument of any call when the file is a program (a `#!` line, or
//!   executable and without an extension).
//!
//! "Gets it" means the literal is inside the call, or on a line that assigns it to a
//! name the call uses (`SRC = ROOT / "calc.c"` … `run([CC, SRC])`). A test that
//! compiles (or runs programs) and names source code (or a program) elsewhere, on a
//! line that does not read it and outside any spawn call, is taken as building it
//! too (a fixture returning the path). What stays data: a file under a test or fixture directory ([`super::TEST_DIRS`]),
//! one whose path says it is an expectation or a checker (`expected`, `golden`,
//! `snapshot`, `baseline`, `oracle`, `fixture`, `answer`, `check`, `test`, `compare`,
//! `same`, `diff`, `harness`, …: [`EXPECTATION_WORDS`]), a file only a comparison gets (`diff`,
//! `cmp`, … among the call's strings), and source code the tests only read
//! (`open("out.c")`) or hand to a program that does not compile it (a C file a Python
//! parser reads: editing it would change the test's input).

use super::{normalize, TEST_DIRS};
use regex::Regex;
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// Extensions of source code loopexec has no reader for (the known languages are never
/// data): C and its kin, JVM and .NET languages, scripting languages, and others.
const SOURCE_EXTENSIONS: &[&str] = &[
    "c", "h", "cc", "cpp", "cxx", "c++", "hpp", "hh", "hxx", "ipp", "tpp", "inl", "m", "mm", "s",
    "asm", "cu", "cuh", "f", "f90", "f95", "f03", "for", "java", "kt", "kts", "scala", "groovy",
    "swift", "cs", "fs", "vb", "rb", "php", "lua", "tcl", "r", "jl", "zig", "nim", "d", "hs",
    "lhs", "ml", "mli", "ex", "exs", "erl", "hrl", "clj", "cljs", "dart", "cr", "vala", "pas",
    "adb", "ads", "cob", "cbl", "awk", "lisp", "el", "scm", "rkt", "sol", "zsh", "fish", "ksh",
    "ps1", "bat", "cmd",
];

/// Programs that compile or build what they are given.
const COMPILERS: &[&str] = &[
    "cc",
    "gcc",
    "clang",
    "tcc",
    "icc",
    "icx",
    "c++",
    "g++",
    "clang++",
    "cpp",
    "cl",
    "zig",
    "javac",
    "kotlinc",
    "scalac",
    "swiftc",
    "swift",
    "rustc",
    "go",
    "ghc",
    "gfortran",
    "gnat",
    "gnatmake",
    "nasm",
    "yasm",
    "as",
    "dmd",
    "ldc2",
    "gdc",
    "nim",
    "crystal",
    "csc",
    "mcs",
    "ocamlc",
    "ocamlopt",
    "ocamlfind",
    "fpc",
    "valac",
    "emcc",
    "nvcc",
    "make",
    "cmake",
    "ninja",
    "meson",
    "gradle",
    "mvn",
    "dotnet",
    "mix",
    "cabal",
    "stack",
    "dune",
    "erlc",
    "elixirc",
];

/// Programs whose next argument (options skipped) is the program they run.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "fish", "python", "python2",
    "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "tsx", "ts-node", "perl", "ruby",
    "php", "lua", "luajit", "tclsh", "wish", "rscript", "julia", "elixir", "escript", "java",
    "env", "nice", "nohup", "time", "timeout", "stdbuf", "valgrind", "strace", "ltrace", "gdb",
    "xvfb-run", "exec", "command",
];

/// Programs that compare files: what they get is an expectation or an output.
const COMPARERS: &[&str] = &[
    "diff",
    "cmp",
    "comm",
    "sdiff",
    "colordiff",
    "icdiff",
    "wdiff",
    "difft",
    "delta",
    "fc",
    "git",
];

/// Path words that make a file an expectation, or a checker the tests hand their
/// comparison to, whatever gets it: a fresh review weakened `tools/samecontent` (a
/// script the tests ran to compare two outputs) and `checks.c` (a C harness the tests
/// compiled with the code under test) once they counted as code under test.
const EXPECTATION_WORDS: &[&str] = &[
    "expect", "golden", "snapshot", "baseline", "oracle", "fixture", "answer", "check", "test",
    "spec", "assert", "verif", "compar", "same", "equal", "diff", "judge", "harness", "grade",
];

/// True for source code of a language loopexec has no reader for (`calc.c`,
/// `src/Main.java`, `lib/calc.rb`), by its extension.
#[must_use]
pub fn is_source_code(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && SOURCE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
    })
}

/// True when a file's path says it holds expectations or sits with the tests: a
/// directory of [`TEST_DIRS`], or a word of [`EXPECTATION_WORDS`] anywhere in it.
fn stays_data(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.split('/').any(|c| TEST_DIRS.contains(&c))
        || EXPECTATION_WORDS.iter().any(|w| lower.contains(w))
}

/// `word` without its directory and a version suffix (`/usr/bin/gcc-12` → `gcc`;
/// `x86_64-linux-gnu-gcc` → `gcc`, `python3.11` → `python3`), lowercased.
fn program_names(word: &str) -> Vec<String> {
    let base = word.rsplit('/').next().unwrap_or(word).to_ascii_lowercase();
    let base = base.strip_suffix(".exe").unwrap_or(&base).to_string();
    let mut out = vec![base.clone()];
    if let Some((head, tail)) = base.rsplit_once('-') {
        if tail.chars().all(|c| c.is_ascii_digit() || c == '.') {
            out.push(head.to_string());
        } else {
            out.push(tail.to_string());
        }
    }
    if let Some((head, tail)) = base.split_once('.') {
        if tail.chars().all(|c| c.is_ascii_digit() || c == '.') {
            out.push(head.to_string());
        }
    }
    out
}

fn is_one_of(word: &str, list: &[&str]) -> bool {
    !word.contains(char::is_whitespace)
        && program_names(word)
            .iter()
            .any(|n| list.contains(&n.as_str()))
}

/// One spawn call of a test: its strings with their role.
#[derive(Debug, Default)]
struct Spawn<'a> {
    /// Literals in the place of the program (see the module documentation).
    run: Vec<&'a str>,
    /// Literals inside the call.
    inside: Vec<&'a str>,
    /// Literals of lines that assign a name the call uses.
    assigned: Vec<&'a str>,
}

impl Spawn<'_> {
    fn all(&self) -> impl Iterator<Item = &&str> {
        self.inside.iter().chain(&self.assigned)
    }
    fn compiles(&self) -> bool {
        self.all().any(|l| is_one_of(l, COMPILERS))
    }
    fn compares(&self) -> bool {
        self.all().any(|l| is_one_of(l, COMPARERS))
    }
}

fn opener_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(concat!(
            r"\bsubprocess\s*\.\s*(?:run|call|check_call|check_output|Popen|getoutput|getstatusoutput)\s*\(",
            r"|\bos\s*\.\s*(?:system|popen|exec[lv]p?e?|spawn[lv]p?e?|posix_spawnp?)\s*\(",
            r"|\bcreate_subprocess_(?:exec|shell)\s*\(",
            r"|\bpexpect\s*\.\s*(?:spawn|run)\s*\(",
            r"|(?:^|[^.\w])(?:Popen|check_output|check_call)\s*\(",
            r"|\bCommand\s*::\s*new\s*\(",
            r"|\bexec\s*\.\s*Command(?:Context)?\s*\(",
            r"|\b(?:child_process|childProcess|cp)\s*\.\s*(?:exec|execSync|execFile|execFileSync|spawn|spawnSync|fork)\s*\(",
            r"|(?:^|[^.\w$])(?:execSync|execFile|execFileSync|spawn|spawnSync|execa|execaSync)\s*\(",
            r"|\b(?:Bun\s*\.\s*spawn(?:Sync)?|Deno\s*\.\s*Command)\s*\(",
            r"|(?:^|[^.\w])system\s*\(",
            r"|(?P<arg>\.\s*args?\s*\()",
        ))
        .expect("valid spawn regex")
    })
}

/// Bare `run(`/`call(` (after `from subprocess import …`) and `exec(` (beside
/// `child_process`).
fn bare_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"(?:^|[^.\w$])(run|call|exec)\s*\(").expect("valid regex"))
}

fn assign_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(
            r"^\s*(?:(?:let|const|var|mut|pub|static|final|export)\s+)*([A-Za-z_]\w*)\s*(?::[^=]*)?:?=(?:[^=]|$)",
        )
        .expect("valid assignment regex")
    })
}

/// The lines of a file that read a file or compare: what they name is data.
fn reads_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(
            r"\bopen\s*\(|read_text|read_bytes|readFile|read_to_string|fs::read|ReadFile|File::open|os\.Open|\bload\s*\(|\.read\s*\(|readlines|filecmp|include_str!|include_bytes!|loadtxt|read_csv",
        )
        .expect("valid read regex")
    })
}

/// The end (exclusive) of the call whose arguments start at `from` (just after its
/// `(`): the matching `)`, skipping quoted strings; at most 4,000 bytes on.
fn call_end(text: &str, from: usize) -> usize {
    let bytes = text.as_bytes();
    let limit = (from + 4000).min(bytes.len());
    let (mut depth, mut quote, mut i) = (1usize, None::<u8>, from);
    while i < limit {
        let b = bytes[i];
        match quote {
            Some(q) => {
                if b == b'\\' {
                    i += 1;
                } else if b == q || (b == b'\n' && q != b'`') {
                    quote = None;
                }
            }
            None => match b {
                b'"' | b'\'' | b'`' => quote = Some(b),
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return i;
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    limit
}

fn literals(text: &str) -> Vec<&str> {
    text.lines()
        .flat_map(super::super::tamper_more::string_literals)
        .collect()
}

/// The spawn calls of one test file's `text`.
fn spawns(text: &str) -> Vec<Spawn<'_>> {
    let from_subprocess = text.contains("from subprocess import");
    let child_process = text.contains("child_process");
    let mut starts: Vec<(usize, usize, bool)> = opener_re()
        .captures_iter(text)
        .map(|c| {
            let m = c.get(0).expect("whole match");
            (m.start(), m.end(), c.name("arg").is_some())
        })
        .collect();
    starts.extend(
        bare_re()
            .captures_iter(text)
            .filter(|c| match &c[1] {
                "exec" => child_process,
                _ => from_subprocess,
            })
            .map(|c| {
                let m = c.get(0).expect("whole match");
                (m.start(), m.end(), false)
            }),
    );
    // names assigned on a line, and that line's literals
    let assigned: Vec<(&str, Vec<&str>)> = text
        .lines()
        .filter_map(|l| {
            let name = assign_re().captures(l)?.get(1)?.as_str();
            Some((name, super::super::tamper_more::string_literals(l)))
        })
        .filter(|(_, lits)| !lits.is_empty())
        .collect();
    let word = |s: &str, w: &str| {
        s.match_indices(w).any(|(i, _)| {
            let before = s[..i].chars().next_back();
            let after = s[i + w.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    };
    let mut out = Vec::new();
    for (start, open, method) in starts {
        let end = call_end(text, open);
        let args = &text[open..end];
        // a method call's receiver (`cmd.arg(…)`) is used too
        let receiver = if method {
            let head = text[..start].trim_end();
            let from = head
                .char_indices()
                .rev()
                .take_while(|(_, c)| c.is_alphanumeric() || *c == '_')
                .last()
                .map_or(head.len(), |(i, _)| i);
            &head[from..]
        } else {
            ""
        };
        // a command line in one string (`run(f"cc -o {exe} calc.c", shell=True)`,
        // `os.system("sh bin/calc 2")`) is read word by word
        let inside: Vec<&str> = literals(args)
            .into_iter()
            .flat_map(|l| {
                l.split_whitespace()
                    .map(|w| w.trim_matches(['\'', '"']))
                    .filter(|w| !w.is_empty())
            })
            .collect();
        let assigned: Vec<&str> = assigned
            .iter()
            .filter(|(n, _)| word(args, n) || *n == receiver)
            .flat_map(|(_, l)| l.iter().copied())
            .collect();
        // the program: the first argument when it is a literal, then what follows
        // an interpreter
        let lead = args
            .trim_start()
            .trim_start_matches("args=")
            .trim_start_matches("argv=")
            .trim_start_matches(['&', '[', '(', '{'])
            .trim_start_matches("vec![")
            .trim_start();
        // (a running interpreter named by its variable counts as one: `[sys.executable,
        // "tools/compare.py", …]`, `spawn(process.execPath, […])`)
        let mut wants_program = !method
            && (lead
                .trim_start_matches(['r', 'b', 'u'])
                .starts_with(['"', '\'', '`'])
                || ["sys.executable", "process.execPath"]
                    .iter()
                    .any(|v| lead.starts_with(v)));
        let mut run = Vec::new();
        for lit in &inside {
            let option = lit.starts_with('-')
                || lit.parse::<f64>().is_ok()
                || lit.split_once('=').is_some_and(|(k, _)| !k.contains('/'));
            if wants_program && !option {
                run.push(*lit);
                wants_program = is_one_of(lit, INTERPRETERS);
            } else if !wants_program {
                wants_program = is_one_of(lit, INTERPRETERS);
            }
        }
        out.push(Spawn {
            run,
            inside,
            assigned,
        });
    }
    out
}

/// True when literal `lit` of a test at `dir` (its parent `up`) names `file`: from the
/// root, the test's directory or the one above, or by its file name alone.
fn names(lit: &str, dir: &str, up: &str, file: &str) -> bool {
    let lit = lit.trim_start_matches("./");
    if lit.is_empty() || lit.contains(char::is_whitespace) {
        return false;
    }
    if !lit.contains('/') && file.rsplit('/').next() == Some(lit) {
        return true;
    }
    ["", dir, up].iter().any(|base| {
        let joined = if base.is_empty() {
            lit.to_string()
        } else {
            format!("{base}/{lit}")
        };
        normalize(&joined).as_deref() == Some(file)
    })
}

/// Words of a program's file name that say it decides whether a test passes (it
/// compares, verifies or grades what the code under test produced), for programs in
/// a language loopexec reads, which are code unless a test runs them as its judge:
/// a word of the name (split at `_`, `-`, `.` and lower-to-upper case changes) that
/// starts with one of [`ORACLE_PREFIXES`] or is one of [`ORACLE_WORDS`]. `check` and
/// `test` are left out (a project's own `tools/check_links.py`, run by its tests, is
/// often the code under test), and so are words that only contain one of them
/// (`upgrade.py`, `diffusion.py`, `difftool.py`, `equalizer.js`: a fresh review's false
/// alarms when any substring counted).
const ORACLE_PREFIXES: &[&str] = &[
    "expect", "golden", "baseline", "oracle", "answer", "compar", "same", "judge", "harness",
    "grade", "verif",
];

/// Whole words of a program's file name that say it judges (see [`ORACLE_PREFIXES`]).
const ORACLE_WORDS: &[&str] = &["diff", "equal", "equals", "cmp"];

/// True when the file name of `path` (its extension aside) says the program judges.
fn judging_name(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.split_once('.').map_or(name, |(s, _)| s);
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in stem.chars() {
        if !c.is_ascii_alphanumeric() {
            words.push(std::mem::take(&mut cur));
            prev_lower = false;
            continue;
        }
        if c.is_ascii_uppercase() && prev_lower {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        cur.push(c.to_ascii_lowercase());
    }
    words.push(cur);
    words.iter().filter(|w| !w.is_empty()).any(|w| {
        ORACLE_WORDS.contains(&w.as_str()) || ORACLE_PREFIXES.iter().any(|p| w.starts_with(p))
    })
}

/// Of `files` (every path of the tree), the programs in a language loopexec reads
/// (Python, JavaScript, shell, …) that a test runs in the place of the program of a
/// spawn call (`subprocess.run([sys.executable, "tools/samecontent.py", out, want])`)
/// and whose path says they judge (`compar`, `same`, `diff`, `verif`, `golden`,
/// `oracle`, `judge`, …; not `check` or `test`). Such a program is the test's
/// comparison moved into another file: rewritten to exit 0, it passed every test that
/// asked it (a fresh review's exit 10). Frozen with the tests; `sources` are the test
/// files (path, content). Sorted, without duplicates.
#[must_use]
pub fn run_checkers(sources: &[(String, String)], files: &[String]) -> Vec<String> {
    let judges: Vec<&String> = files
        .iter()
        .filter(|f| super::super::lex::Lang::from_path(f) != super::super::lex::Lang::Other)
        .filter(|f| judging_name(f))
        .collect();
    let mut out = BTreeSet::new();
    if judges.is_empty() {
        return Vec::new();
    }
    for (path, text) in sources {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        let up = dir.rsplit_once('/').map_or("", |(d, _)| d);
        for call in spawns(text) {
            // a module run by its dotted name (`python3 -m tools.compare`) names its
            // file or its package's `__main__.py`
            let modules: Vec<String> = call
                .run
                .iter()
                .filter(|l| !l.contains('/') && l.contains('.') && !l.ends_with(".py"))
                .filter(|l| {
                    l.split('.').all(|p| {
                        !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || c == '_')
                    })
                })
                .flat_map(|l| {
                    let path = l.replace('.', "/");
                    [format!("{path}.py"), format!("{path}/__main__.py")]
                })
                .collect();
            for f in &judges {
                if call.run.iter().any(|l| names(l, dir, up, f)) || modules.iter().any(|m| m == *f)
                {
                    out.insert((*f).clone());
                }
            }
        }
    }
    out.into_iter().collect()
}

/// The tree's Python files that the Python `sources` (path, content) import by name
/// from their own directory (`import textnorm`, `from textnorm import normalize`; a
/// script's directory is first on its path), as `X.py` or `X/__init__.py`: a judge's
/// own helpers. A module found from the root (the project's package, code under test
/// a judge may use) is not one, nor is anything a file at the root imports. `exists`
/// tells a path of the tree. Sorted, without duplicates.
#[must_use]
pub fn py_imported_files(
    sources: &[(String, String)],
    exists: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r"(?m)^\s*(?:from\s+([A-Za-z_][\w.]*)\s+import\s+([\w, ()]+)|import\s+([A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*))")
            .expect("valid import regex")
    });
    let mut out = BTreeSet::new();
    for (path, text) in sources {
        let Some((dir, _)) = path.rsplit_once('/') else {
            continue;
        };
        for c in re.captures_iter(text) {
            let mut modules: Vec<String> = Vec::new();
            if let Some(m) = c.get(1) {
                modules.push(m.as_str().to_string());
                // `from pkg import mod` may name a module of the package
                if let Some(names) = c.get(2) {
                    modules.extend(
                        names
                            .as_str()
                            .split([',', '(', ')'])
                            .map(str::trim)
                            .filter(|n| !n.is_empty())
                            .map(|n| {
                                format!(
                                    "{}.{}",
                                    m.as_str(),
                                    n.split_whitespace().next().unwrap_or(n)
                                )
                            }),
                    );
                }
            }
            if let Some(m) = c.get(3) {
                modules.extend(m.as_str().split(',').map(|x| x.trim().to_string()));
            }
            for m in modules {
                let rel = m.replace('.', "/");
                for form in [format!("{rel}.py"), format!("{rel}/__init__.py")] {
                    let cand = format!("{dir}/{form}");
                    if exists(&cand) && cand != *path {
                        out.insert(cand);
                    }
                }
            }
        }
    }
    out.into_iter().collect()
}

/// Of `named` (the data files the tests name, [`super::test_data`]), those the tests
/// build or run: code under test (see the module documentation). `sources` are the
/// test files (path, content); `is_program` tells a file with a `#!` line, or an
/// executable one without an extension.
#[must_use]
pub fn built_or_run(
    named: &[String],
    sources: &[(String, String)],
    is_program: &dyn Fn(&str) -> bool,
) -> BTreeSet<String> {
    let candidates: Vec<&String> = named.iter().filter(|f| !stays_data(f)).collect();
    let mut out = BTreeSet::new();
    if candidates.is_empty() {
        return out;
    }
    for (path, text) in sources {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        let up = dir.rsplit_once('/').map_or("", |(d, _)| d);
        let calls = spawns(text);
        if calls.is_empty() {
            continue;
        }
        let builds = calls.iter().any(|c| c.compiles() && !c.compares());
        let runs = calls.iter().any(|c| !c.compares());
        for f in &candidates {
            let source = is_source_code(f);
            let program = is_program(f);
            let hit = |lits: &[&str]| lits.iter().any(|l| names(l, dir, up, f));
            let got = calls.iter().any(|c| {
                let lits: Vec<&str> = c.all().copied().collect();
                hit(&c.run)
                    || (!c.compares() && hit(&lits) && ((source && c.compiles()) || program))
            });
            // named elsewhere, on a line that does not read it, by a test that builds
            // (runs) such files
            let elsewhere = || {
                let mut lines = text.lines().filter(|l| {
                    super::super::tamper_more::string_literals(l)
                        .iter()
                        .any(|lit| names(lit, dir, up, f))
                });
                ((source && builds) || (program && runs))
                    && !calls.iter().any(|c| hit(&c.inside))
                    && lines.clone().next().is_some()
                    && !lines.any(|l| reads_re().is_match(l))
            };
            if got || elsewhere() {
                out.insert((*f).clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (what, test file, its text, the named file, a program?, code under test?)
    type Case = (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        bool,
        bool,
    );

    const CASES: &[Case] = &[
        (
            "a command line in one string (shell=True)",
            "tests/test_calc.py",
            "import subprocess\nsubprocess.run(f\"cc -O2 -o {exe} calc.c\", shell=True, check=True)\n",
            "calc.c",
            false,
            true,
        ),
        (
            "a command line in one string (os.system)",
            "tests/test_calc.py",
            "import os\nassert os.system(\"cc -o %s calc.c\" % exe) == 0\n",
            "calc.c",
            false,
            true,
        ),
        (
            "a checker script the tests run to compare stays frozen",
            "tests/test_calc.py",
            "import subprocess\nsubprocess.run(['sh', 'tools/samecontent', want, got], check=True)\n",
            "tools/samecontent",
            true,
            false,
        ),
        (
            "a C harness compiled with the code under test stays frozen",
            "tests/test_calc.py",
            "import subprocess\nsubprocess.run(['cc', '-o', exe, 'checks.c', 'calc.c'], check=True)\n",
            "checks.c",
            false,
            false,
        ),
        (
            "the code compiled with that harness is code under test",
            "tests/test_calc.py",
            "import subprocess\nsubprocess.run(['cc', '-o', exe, 'checks.c', 'calc.c'], check=True)\n",
            "calc.c",
            false,
            true,
        ),
        (
            "pytest compiles the C code under test",
            "tests/test_calc.py",
            "import subprocess\ndef calc(tmp):\n    subprocess.run([\"cc\", \"-O0\", \"-o\", str(tmp), \"calc.c\"], check=True)\n",
            "calc.c",
            false,
            true,
        ),
        (
            "a multi-line call, the compiler from the environment",
            "tests/test_calc.py",
            "import os, subprocess\nsubprocess.check_call(\n    [os.environ.get('CC', 'gcc-12'), '-o', exe,\n     'src/calc.c'],\n)\n",
            "src/calc.c",
            false,
            true,
        ),
        (
            "the source path assigned to a name the call uses",
            "tests/test_calc.py",
            "import subprocess\nROOT = Path(__file__).parent.parent\nSRC = ROOT / 'calc.c'\nCC = 'clang'\ndef build():\n    subprocess.run([CC, '-o', 'x', str(SRC)])\n",
            "calc.c",
            false,
            true,
        ),
        (
            "a fixture returns the path; the test compiles",
            "tests/test_calc.py",
            "import subprocess\n@pytest.fixture\ndef src():\n    return ROOT / 'calc.c'\ndef test(src):\n    subprocess.run(['cc', '-o', 'x', src])\n",
            "calc.c",
            false,
            true,
        ),
        (
            "the test runs a shell script by its interpreter",
            "tests/test_calc.py",
            "import subprocess\ndef run(*a):\n    return subprocess.run([\"sh\", \"bin/calc\", *a]).stdout\n",
            "bin/calc",
            true,
            true,
        ),
        (
            "the program's place, a file that is no program by its looks",
            "tests/test_cli.py",
            "import subprocess\nsubprocess.run(['./bin/calc', '2', '3'])\n",
            "bin/calc",
            false,
            true,
        ),
        (
            "env, then an interpreter, then the script",
            "tests/test_cli.py",
            "import subprocess\nsubprocess.run(['env', 'LC_ALL=C', 'bash', '-e', 'tools/calc'])\n",
            "tools/calc",
            false,
            true,
        ),
        (
            "Rust: Command::new and .arg on a binding",
            "tests/cli.rs",
            "let mut cmd = Command::new(\"cc\");\ncmd.arg(\"-o\").arg(&out);\ncmd.arg(\"native/calc.c\");\n",
            "native/calc.c",
            false,
            true,
        ),
        (
            "Go: exec.Command runs the script",
            "calc_test.go",
            "out, err := exec.Command(\"sh\", \"scripts/calc\", \"2\").Output()\n",
            "scripts/calc",
            false,
            true,
        ),
        (
            "JavaScript: execFileSync runs the program",
            "test/cli.test.js",
            "const { execFileSync } = require('child_process');\nconst out = execFileSync('bin/calc', ['2']);\n",
            "bin/calc",
            true,
            true,
        ),
        (
            "Ruby source run by its interpreter",
            "tests/test_cli.py",
            "import subprocess\nsubprocess.run(['ruby', 'lib/calc.rb', '2'])\n",
            "lib/calc.rb",
            false,
            true,
        ),
        // still data
        (
            "a diff against the expected output",
            "tests/test_gen.py",
            "import subprocess\nsubprocess.run(['diff', '-u', 'want.c', str(out)], check=True)\n",
            "want.c",
            false,
            false,
        ),
        (
            "an expected C file read and compared, though the test compiles",
            "tests/test_gen.py",
            "import subprocess\nsubprocess.run(['cc', '-o', 'x', 'gen.c'])\nassert gen() == open('hello_out.c').read()\n",
            "hello_out.c",
            false,
            false,
        ),
        (
            "an expectation by its name, passed to the compiler",
            "tests/test_gen.py",
            "import subprocess\nsubprocess.run(['cc', '-o', 'x', 'expected_main.c'])\n",
            "expected_main.c",
            false,
            false,
        ),
        (
            "a C file a Python parser reads: an input, not built",
            "tests/test_parse.py",
            "import subprocess, sys\nsubprocess.run([sys.executable, '-m', 'cparse', 'samples/input.c'])\n",
            "samples/input.c",
            false,
            false,
        ),
        (
            "the data file after the script",
            "tests/test_cli.py",
            "import subprocess\nsubprocess.run(['python3', 'tool.py', 'cases.txt'])\n",
            "cases.txt",
            false,
            false,
        ),
        (
            "a C file under a fixtures directory",
            "tests/test_calc.py",
            "import subprocess\nsubprocess.run(['cc', '-o', 'x', 'fixtures/calc.c'])\n",
            "fixtures/calc.c",
            false,
            false,
        ),
        (
            "a test that spawns nothing",
            "tests/test_calc.py",
            "SRC = 'calc.c'\nassert count_lines(SRC) == 7\n",
            "calc.c",
            false,
            false,
        ),
        (
            "C source handed to a program that does not compile it",
            "tests/test_cli.py",
            "import subprocess\nsubprocess.run([str(BIN), 'input.c'])\n",
            "input.c",
            false,
            false,
        ),
        (
            "C source a test that compiles something else hands to a parser",
            "tests/test_parse.py",
            "import subprocess\nsubprocess.run(['cc', '-o', 'p', 'parser.c'])\nsubprocess.run(['./p', 'samples/input.c'])\n",
            "samples/input.c",
            false,
            false,
        ),
        (
            "a program compared by cmp",
            "tests/test_cli.py",
            "import subprocess\nsubprocess.run(['cmp', 'want-run', out])\n",
            "want-run",
            true,
            false,
        ),
    ];

    #[test]
    fn files_the_tests_build_or_run_are_code_under_test() {
        for (what, path, text, file, program, code) in CASES {
            let sources = vec![((*path).to_string(), (*text).to_string())];
            let named = vec![(*file).to_string()];
            let is_program = |p: &str| *program && p == *file;
            let got = built_or_run(&named, &sources, &is_program).contains(*file);
            assert_eq!(got, *code, "{what}: {file}");
        }
    }

    #[test]
    fn the_tree_modules_a_python_file_imports_are_found() {
        let tree = [
            "tools/compare.py",
            "tools/textnorm.py",
            "tools/fmt/__init__.py",
            "lib/__init__.py",
            "lib/util.py",
            "common.py",
        ];
        let exists = |p: &str| tree.contains(&p);
        let sources = vec![(
            "tools/compare.py".to_string(),
            "import sys, os\nimport textnorm\nfrom fmt import wrap\nfrom lib import util\nfrom common import ok as fine\nimport json\n".to_string(),
        )];
        assert_eq!(
            py_imported_files(&sources, &exists),
            // the judge's own helpers beside it; the project's `lib` and `common`,
            // from the root, are code under test it may use
            ["tools/fmt/__init__.py", "tools/textnorm.py"]
        );
    }

    #[test]
    fn a_judging_name_is_told_by_its_words() {
        for (path, judges) in [
            ("tools/samecontent.py", true),
            ("tools/compare_output.py", true),
            ("scripts/verify-output.sh", true),
            ("bin/diff_files.py", true),
            ("lib/outputsEqual.js", true),
            ("tools/grader.py", true),
            ("golden/run.py", false),
            ("upgrade.py", false),
            ("diffusion.py", false),
            ("difftool.py", false),
            ("equalizer.js", false),
            ("snapshot.py", false),
            ("tools/check_links.py", false),
        ] {
            assert_eq!(judging_name(path), judges, "{path}");
        }
    }

    #[test]
    fn programs_the_tests_run_as_their_judge_are_found() {
        let files: Vec<String> = [
            "tools/samecontent.py",
            "tools/compare.js",
            "scripts/verify_output.sh",
            "tools/check_links.py",
            "src/diffing.py",
            "golden/expected.txt",
        ]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
        // (what, test file, its text, the judges found)
        let cases: &[(&str, &str, &str, &[&str])] = &[
            (
                "run by the running interpreter",
                "tests/test_cli.py",
                "import subprocess, sys
r = subprocess.run([sys.executable, 'tools/samecontent.py', out, want])
assert r.returncode == 0
",
                &["tools/samecontent.py"],
            ),
            (
                "run by a named interpreter, from the test's directory",
                "tests/test_cli.py",
                "import subprocess
subprocess.run(['python3', '../tools/samecontent.py', out, want], check=True)
",
                &["tools/samecontent.py"],
            ),
            (
                "a shell judge in a command line of one string",
                "tests/test_cli.py",
                "import os
assert os.system('sh scripts/verify_output.sh out.txt') == 0
",
                &["scripts/verify_output.sh"],
            ),
            (
                "a JavaScript judge run by node's own path",
                "test/cli.test.js",
                "const r = spawnSync(process.execPath, ['tools/compare.js', out, want]);
",
                &["tools/compare.js"],
            ),
            (
                "run as a module by its dotted name",
                "tests/test_cli.py",
                "import subprocess, sys\nr = subprocess.run([sys.executable, '-m', 'tools.samecontent', out, want])\n",
                &["tools/samecontent.py"],
            ),
            (
                "a checker that is the code under test is not a judge by its name",
                "tests/test_links.py",
                "import subprocess, sys
subprocess.run([sys.executable, 'tools/check_links.py', 'docs'])
",
                &[],
            ),
            (
                "a module imported, not run, is not one",
                "tests/test_diff.py",
                "from src.diffing import unified
assert unified('a', 'b')
",
                &[],
            ),
            (
                "a judge only read is not run",
                "tests/test_cli.py",
                "text = open('tools/samecontent.py').read()
",
                &[],
            ),
        ];
        for (what, path, text, want) in cases {
            let sources = vec![((*path).to_string(), (*text).to_string())];
            let got = run_checkers(&sources, &files);
            assert_eq!(got, want.to_vec(), "{what}");
        }
    }

    #[test]
    fn source_code_is_told_by_its_extension() {
        for (path, source) in [
            ("calc.c", true),
            ("src/Calc.java", true),
            ("include/calc.H", true),
            ("lib/calc.rb", true),
            ("cases.json", false),
            ("expected.txt", false),
            ("bin/calc", false),
            (".c", false),
            ("calc.py", false),
        ] {
            assert_eq!(is_source_code(path), source, "{path}");
        }
    }
}
