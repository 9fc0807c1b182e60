//! Test files a project names by its own pattern: a runner told to collect
//! `check_*.py` (pytest's `python_files`, `unittest discover -p 'check_*.py'`) runs
//! files no default test naming finds. Read from the workdir at the start of a run,
//! these patterns join `[guards] test_paths`, so those files are protected and frozen
//! like any test file (a fresh review weakened `checks/check_calc.py` under both
//! spellings and reached exit 10).
//!
//! Read, in the workdir's root (where the check runs): `pytest.ini` (`[pytest]`),
//! `tox.ini` (`[pytest]`), `setup.cfg` (`[tool:pytest]`), `pyproject.toml`
//! (`[tool.pytest.ini_options]`); and in the check command, `unittest`'s `-p`/
//! `--pattern` (a discovery without one: its default, `test*.py`). The configuration files themselves are runner configuration, protected
//! by the manifest ([`super::manifest`]), so a pattern cannot be widened later.

use std::path::Path;

/// Globs (`**/<pattern>`) for the test-file patterns the workdir's runner
/// configuration and the check command declare; empty when they declare none.
#[must_use]
pub fn declared_test_globs(workdir: &Path, check: Option<&str>) -> Vec<String> {
    let mut patterns = Vec::new();
    for (file, section) in [
        ("pytest.ini", "pytest"),
        ("tox.ini", "pytest"),
        ("setup.cfg", "tool:pytest"),
    ] {
        if let Ok(text) = std::fs::read_to_string(workdir.join(file)) {
            patterns.extend(ini_values(&text, section, "python_files"));
        }
    }
    if let Ok(text) = std::fs::read_to_string(workdir.join("pyproject.toml")) {
        patterns.extend(pyproject_python_files(&text));
    }
    if let Some(check) = check {
        patterns.extend(unittest_patterns(check));
        let (overrides, config) = pytest_command(check);
        patterns.extend(overrides);
        if let Some(file) = config {
            if let Ok(text) = std::fs::read_to_string(workdir.join(&file)) {
                for section in ["pytest", "tool:pytest"] {
                    patterns.extend(ini_values(&text, section, "python_files"));
                }
                patterns.extend(pyproject_python_files(&text));
            }
        }
    }
    let mut out: Vec<String> = patterns
        .into_iter()
        .filter(|p| !p.is_empty() && !p.contains('/'))
        .map(|p| format!("**/{p}"))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The directories of the workdir (relative, `""` for the root) that the project's
/// runner configuration and the check command put on Python's import path ahead of
/// site-packages: pytest's `pythonpath` (`pytest.ini`, `tox.ini` `[pytest]`,
/// `setup.cfg` `[tool:pytest]`, `pyproject.toml` `[tool.pytest.ini_options]`, the
/// file named by `-c`/`--config-file`, `-o pythonpath=…`) and the `PYTHONPATH`
/// assigned in the check command (`PYTHONPATH=src pytest`, `export PYTHONPATH=…`),
/// and each directory the check command changes into ([`check_cd_dirs`]: `python -m`
/// puts its working directory first on the path; a fresh review shadowed the standard
/// library's `fractions` from `backend/` under `cd backend && python3 -m pytest`), and
/// the directory of each script the check runs by its path (`python3 pkg/run.py`).
/// Entries outside the workdir, or that name no plain directory (a glob, a variable
/// other than the working directory's), are left out. Sorted, without duplicates.
#[must_use]
pub fn declared_pythonpath(workdir: &Path, check: Option<&str>) -> Vec<String> {
    let from_ini = |text: &str, sections: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = sections
            .iter()
            .flat_map(|section| ini_values(text, section, "pythonpath"))
            .collect();
        v.extend(pyproject_values(text, "pythonpath"));
        v
    };
    let mut entries = Vec::new();
    for (file, section) in [
        ("pytest.ini", "pytest"),
        ("tox.ini", "pytest"),
        ("setup.cfg", "tool:pytest"),
        ("pyproject.toml", ""),
    ] {
        if let Ok(text) = std::fs::read_to_string(workdir.join(file)) {
            entries.extend(from_ini(&text, &[section]));
        }
    }
    let mut from_env = Vec::new();
    if let Some(check) = check {
        let (overrides, config) = pytest_command_key(check, "pythonpath");
        if let Some(file) = config {
            if let Ok(text) = std::fs::read_to_string(workdir.join(&file)) {
                // relative to the directory of the file that names them
                let base = file.rsplit_once('/').map_or("", |(d, _)| d);
                entries.extend(
                    from_ini(&text, &["pytest", "tool:pytest"])
                        .into_iter()
                        .map(|e| match (base, e.starts_with('/')) {
                            ("", _) | (_, true) => e,
                            (b, false) => format!("{b}/{e}"),
                        }),
                );
            }
        }
        entries.extend(overrides);
        let cds = check_cd_dirs(check);
        // a script run by its path (`python3 pkg/run.py`): Python puts the script's
        // directory first on the path, a package directory too (its shadows were not
        // protected: SPEC §3.13's list of what was left open)
        for w in
            check.split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')'))
        {
            let w = w.trim_matches(['\'', '"']);
            if w.starts_with('-') || w.contains('=') || !w.ends_with(".py") {
                continue;
            }
            if let Some((dir, _)) = w.rsplit_once('/') {
                entries.extend(cds.iter().map(|c| format!("{c}/{dir}")));
                entries.push(dir.to_string());
            }
        }
        entries.extend(cds);
        for w in check.split(|c: char| c.is_whitespace() || matches!(c, ';' | '&' | '|')) {
            if let Some(v) = w.trim_matches(['\'', '"']).strip_prefix("PYTHONPATH=") {
                from_env.extend(v.trim_matches(['\'', '"']).split(':').map(str::to_string));
            }
        }
    }
    let mut out: Vec<String> = entries
        .iter()
        .chain(&from_env)
        .filter_map(|e| workdir_relative(workdir, e))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// How many places [`check_cd_dirs`] follows a command to at once.
const MAX_CD_PLACES: usize = 16;

/// The directories a check command changes into with `cd DIR` or `pushd DIR` at the
/// start of a command (after `&&`, `||`, `;`, `|`, a newline or an opening `(`), as
/// written, and joined with each place the command may be at before (`cd a && cd b`
/// gives `a`, `b` and `a/b`: a subshell may have ended in between; at most
/// 16), `..` resolved; an absolute path is kept as
/// it is. A `cd` to a variable, `~` or `-` ends the reading (where it leads is not
/// known from the text). [`declared_pythonpath`] makes them workdir-relative and drops
/// those outside it.
#[must_use]
pub fn check_cd_dirs(check: &str) -> Vec<String> {
    // `..` resolved; `None` above the start (or at it: the root is searched anyway)
    let resolve = super::frozen::normalize;
    let mut out: Vec<String> = Vec::new();
    // where the command may be when it reaches the next `cd`
    let mut at: Vec<String> = Vec::new();
    let mut rest = check;
    while !rest.is_empty() {
        let end = rest.find([';', '&', '|', '\n', '(']).unwrap_or(rest.len());
        let seg = rest[..end].trim();
        rest = rest[end..].trim_start_matches([';', '&', '|', '\n', '(']);
        let mut words = seg.split_whitespace();
        if !matches!(words.next(), Some("cd" | "pushd")) {
            continue;
        }
        let dir = words
            .find(|w| !w.starts_with('-'))
            .map(|w| w.trim_matches(['\'', '"']))
            .unwrap_or("~");
        if dir.is_empty() || dir.starts_with(['~', '$', '`']) || dir == "-" {
            break;
        }
        if dir.starts_with('/') {
            out.push(dir.to_string());
            at.clear();
            continue;
        }
        let mut next: Vec<String> = resolve(dir).into_iter().collect();
        next.extend(
            at.iter()
                .filter_map(|base| resolve(&format!("{base}/{dir}"))),
        );
        next.sort();
        next.dedup();
        next.truncate(MAX_CD_PLACES);
        out.extend(next.iter().cloned());
        at = next;
    }
    out.sort();
    out.dedup();
    out
}

/// `entry` (a path as a runner or `PYTHONPATH` names it) relative to the workdir,
/// normalized (`""` for the workdir itself); `None` outside it or when it is no plain
/// path.
fn workdir_relative(workdir: &Path, entry: &str) -> Option<String> {
    let e = entry.trim();
    let e = ["$PWD", "${PWD}", "$(pwd)"]
        .iter()
        .find_map(|v| e.strip_prefix(v))
        .map_or(e.to_string(), |rest| format!(".{rest}"));
    if e.is_empty() || e.contains(['$', '*', '?', '[', ']', '{', '}', '\\', '`', '~']) {
        return None;
    }
    let rel = match e.strip_prefix('/') {
        Some(_) => Path::new(&e)
            .strip_prefix(workdir)
            .ok()?
            .to_string_lossy()
            .into_owned(),
        None => e,
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in rel.split('/') {
        match c {
            "" | "." => {}
            ".." => return None,
            c => parts.push(c),
        }
    }
    Some(parts.join("/"))
}

/// The whitespace-separated values of `key` in `[section]` of an ini text,
/// continuation lines (indented) included.
fn ini_values(text: &str, section: &str, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_section = false;
    let mut in_key = false;
    for raw in text.lines() {
        let line = raw.trim();
        if line.starts_with('[') {
            in_section = line.trim_matches(['[', ']']).trim() == section;
            in_key = false;
            continue;
        }
        if !in_section || line.starts_with(['#', ';']) {
            continue;
        }
        let indented = raw.starts_with([' ', '\t']);
        if in_key && indented && !line.is_empty() {
            out.extend(line.split_whitespace().map(str::to_string));
            continue;
        }
        in_key = false;
        if let Some((k, v)) = line.split_once(['=', ':']) {
            if k.trim() == key {
                in_key = true;
                out.extend(v.split_whitespace().map(str::to_string));
            }
        }
    }
    out
}

/// `[tool.pytest.ini_options] python_files` of a `pyproject.toml` (a string or a list).
fn pyproject_python_files(text: &str) -> Vec<String> {
    pyproject_values(text, "python_files")
}

/// `[tool.pytest.ini_options] KEY` of a `pyproject.toml` (a string or a list).
fn pyproject_values(text: &str, key: &str) -> Vec<String> {
    let Ok(doc) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let v = doc
        .get("tool")
        .and_then(|t| t.get("pytest"))
        .and_then(|t| t.get("ini_options"))
        .and_then(|t| t.get(key));
    match v {
        Some(toml::Value::String(s)) => s.split_whitespace().map(str::to_string).collect(),
        Some(toml::Value::Array(a)) => a
            .iter()
            .filter_map(toml::Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

/// What a pytest command line declares: `-o python_files=…` overrides, and the
/// configuration file named by `-c`/`--config-file` (relative to the workdir).
fn pytest_command(check: &str) -> (Vec<String>, Option<String>) {
    pytest_command_key(check, "python_files")
}

/// [`pytest_command`] for the ini key `key`.
fn pytest_command_key(check: &str, key: &str) -> (Vec<String>, Option<String>) {
    if !check.contains("pytest") {
        return (Vec::new(), None);
    }
    let words: Vec<&str> = check
        .split_whitespace()
        .map(|w| w.trim_matches(['\'', '"']))
        .collect();
    let mut patterns = Vec::new();
    let mut config = None;
    for (i, w) in words.iter().enumerate() {
        let next = || words.get(i + 1).copied();
        let value = if let Some(v) = w.strip_prefix("--override-ini=") {
            Some(v)
        } else if matches!(*w, "-o" | "--override-ini") {
            next()
        } else {
            w.strip_prefix("-o").filter(|v| v.contains('='))
        };
        if let Some((k, v)) = value.and_then(|v| v.split_once('=')) {
            if k.trim() == key {
                patterns.extend(v.split_whitespace().map(str::to_string));
            }
        }
        if let Some(v) = w.strip_prefix("--config-file=") {
            config = Some(v.to_string());
        } else if matches!(*w, "-c" | "--config-file") {
            config = next().map(str::to_string);
        }
    }
    (patterns, config.filter(|c| !c.starts_with('/')))
}

/// The pattern of a `unittest` in the check command: `-p`/`--pattern`, or the second
/// positional argument of `discover` (`discover START PATTERN [TOP]`).
fn unittest_patterns(check: &str) -> Vec<String> {
    if !check.contains("unittest") {
        return Vec::new();
    }
    let words: Vec<&str> = check
        .split_whitespace()
        .map(|w| w.trim_matches(['\'', '"']))
        .collect();
    let mut out = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if let Some(v) = w.strip_prefix("--pattern=") {
            out.push(v.to_string());
        } else if matches!(*w, "-p" | "--pattern") {
            if let Some(v) = words.get(i + 1) {
                out.push((*v).to_string());
            }
        } else if let Some(v) = w.strip_prefix("-p").filter(|v| !v.is_empty()) {
            out.push(v.to_string());
        }
    }
    if let Some(at) = words.iter().position(|w| *w == "discover") {
        let mut positional = Vec::new();
        let mut rest = words[at + 1..].iter();
        while let Some(w) = rest.next() {
            if matches!(
                *w,
                "-s" | "--start-directory" | "-p" | "--pattern" | "-t" | "--top-level-directory"
            ) {
                rest.next();
            } else if w.starts_with('-') {
            } else if [";", "&&", "||", "|"].contains(w) {
                break;
            } else {
                positional.push(*w);
            }
        }
        if let Some(p) = positional.get(1) {
            out.push((*p).to_string());
        }
    }
    // discovery without a pattern imports every `test*.py` it finds (a new root
    // `test0.py` patched the code under test before the frozen tests ran: a fresh
    // review's exit 10), not only the `test_*.py` of the default naming
    if out.is_empty() && unittest_discovers(&words) {
        out.push("test*.py".to_string());
    }
    out
}

/// True when a `unittest` in the check's words runs discovery: `unittest discover`,
/// or `unittest` with options only (`python -m unittest -v`), up to the end of its
/// command.
fn unittest_discovers(words: &[&str]) -> bool {
    let Some(at) = words
        .iter()
        .position(|w| *w == "unittest" || w.ends_with("/unittest"))
    else {
        return false;
    };
    let mut rest = words[at + 1..].iter();
    while let Some(w) = rest.next() {
        if [";", "&&", "||", "|"].contains(w) || *w == "discover" {
            return true;
        }
        if matches!(*w, "-k") {
            rest.next();
        } else if !w.starts_with('-') {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (files in the workdir, check command, globs declared)
    #[test]
    fn declared_patterns_table() {
        type Row = (
            &'static [(&'static str, &'static str)],
            &'static str,
            &'static [&'static str],
        );
        let rows: &[Row] = &[
            (&[], "python3 -m pytest -q", &[]),
            (
                &[("pytest.ini", "[pytest]\npython_files = check_*.py\ntestpaths = checks\n")],
                "python3 -m pytest",
                &["**/check_*.py"],
            ),
            (
                &[(
                    "tox.ini",
                    "[tox]\nenvlist = py3\n[pytest]\npython_files =\n    check_*.py\n    *_spec.py\nother = x\n",
                )],
                "tox",
                &["**/*_spec.py", "**/check_*.py"],
            ),
            (
                &[("setup.cfg", "[metadata]\npython_files = no.py\n[tool:pytest]\npython_files = t_*.py\n")],
                "pytest",
                &["**/t_*.py"],
            ),
            (
                &[(
                    "pyproject.toml",
                    "[tool.pytest.ini_options]\npython_files = [\"check_*.py\", \"verify_*.py\"]\n",
                )],
                "pytest",
                &["**/check_*.py", "**/verify_*.py"],
            ),
            (
                &[],
                "python3 -m unittest discover -v -s checks -p 'check_*.py'",
                &["**/check_*.py"],
            ),
            (&[], "python3 -m unittest discover --pattern=spec_*.py", &["**/spec_*.py"]),
            (&[], "sh run.sh -p x.py", &[]),
            // second fresh review: overrides, a named configuration file, discover's
            // positional pattern
            (&[], "python3 -m pytest -q -o python_files=check_*.py checks", &["**/check_*.py"]),
            (
                &[("ci.ini", "[pytest]\npython_files = check_*.py\n")],
                "python3 -m pytest -q --config-file=ci.ini checks",
                &["**/check_*.py"],
            ),
            (
                &[("ci.ini", "[pytest]\npython_files = spec_*.py\n")],
                "python3 -m pytest -c ci.ini",
                &["**/spec_*.py"],
            ),
            (&[], "python3 -m unittest discover checks 'check_*.py'", &["**/check_*.py"]),
            (&[], "python3 -m unittest discover -s checks", &["**/test*.py"]),
            (&[], "python3 -m unittest -v", &["**/test*.py"]),
            (&[], "python3 -m unittest -k add && echo ok", &["**/test*.py"]),
            (&[], "python3 -m unittest tests.test_calc", &[]),
            (&[], "python3 -m unittest -v tests/test_calc.py", &[]),
        ];
        for (files, check, want) in rows {
            let d = tempfile::tempdir().unwrap();
            for (name, text) in *files {
                std::fs::write(d.path().join(name), text).unwrap();
            }
            assert_eq!(
                declared_test_globs(d.path(), Some(check)),
                *want,
                "{files:?} {check}"
            );
        }
    }

    /// (files in the workdir, check command, import directories declared)
    #[test]
    fn declared_pythonpath_table() {
        type Row = (
            &'static [(&'static str, &'static str)],
            &'static str,
            &'static [&'static str],
        );
        let rows: &[Row] = &[
            (&[], "python3 -m pytest -q", &[]),
            (
                &[(
                    "pyproject.toml",
                    "[tool.pytest.ini_options]\npythonpath = [\"src\"]\n",
                )],
                "python3 -m pytest",
                &["src"],
            ),
            (
                &[(
                    "pyproject.toml",
                    "[tool.pytest.ini_options]\npythonpath = \"./src lib/\"\n",
                )],
                "pytest",
                &["lib", "src"],
            ),
            (
                &[("pytest.ini", "[pytest]\npythonpath = . src\n")],
                "pytest",
                &["", "src"],
            ),
            (
                &[(
                    "setup.cfg",
                    "[metadata]\npythonpath = no\n[tool:pytest]\npythonpath =\n    lib\n",
                )],
                "pytest",
                &["lib"],
            ),
            (
                &[("tox.ini", "[pytest]\npythonpath = app\n")],
                "tox",
                &["app"],
            ),
            // outside the workdir, or no plain path: left out
            (
                &[("pytest.ini", "[pytest]\npythonpath = ../x /usr/lib src/*\n")],
                "pytest",
                &[],
            ),
            (&[], "python3 -m pytest -o pythonpath=lib", &["lib"]),
            (
                &[("ci.ini", "[pytest]\npythonpath = src\n")],
                "python3 -m pytest -c ci.ini",
                &["src"],
            ),
            (&[], "PYTHONPATH=src:lib python3 -m pytest", &["lib", "src"]),
            (&[], "export PYTHONPATH=$PWD/src && pytest", &["src"]),
            (&[], "env 'PYTHONPATH=.' pytest", &[""]),
            (&[], "PYTHONPATH=$HOME/x pytest", &[]),
            // the directories the check changes into
            (&[], "cd backend && python3 -m pytest -q", &["backend"]),
            (
                &[],
                "(cd 'svc/api'; pytest) && cd web && cd src && npm test",
                &[
                    "src",
                    "svc/api",
                    "svc/api/web",
                    "svc/api/web/src",
                    "web",
                    "web/src",
                ],
            ),
            // (the root itself is searched in any case: `py_import_dirs`)
            (&[], "cd ./backend/ && cd .. && pytest", &["backend"]),
            (&[], "cd $PROJECT && pytest", &[]),
            // a script's own directory, wherever the check is when it runs it
            (&[], "python3 pkg/run.py --fast", &["pkg"]),
            (
                &[],
                "cd svc && python3 ./tools/run.py",
                &["svc", "svc/tools", "tools"],
            ),
            (&[], "python3 run.py && python3 -m pytest", &[]),
            (&[], "cd ../elsewhere && pytest", &[]),
            // a project's other data with the same key: not read
            (
                &[("pyproject.toml", "[tool.other]\npythonpath = [\"src\"]\n")],
                "pytest",
                &[],
            ),
        ];
        for (files, check, want) in rows {
            let d = tempfile::tempdir().unwrap();
            for (name, text) in *files {
                std::fs::write(d.path().join(name), text).unwrap();
            }
            assert_eq!(
                declared_pythonpath(d.path(), Some(check)),
                *want,
                "{files:?} {check}"
            );
        }
    }
}
