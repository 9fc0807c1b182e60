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
//! `--pattern`. The configuration files themselves are runner configuration, protected
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
    let Ok(doc) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let v = doc
        .get("tool")
        .and_then(|t| t.get("pytest"))
        .and_then(|t| t.get("ini_options"))
        .and_then(|t| t.get("python_files"));
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
            if k.trim() == "python_files" {
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
    out
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
            (&[], "python3 -m unittest discover -s checks", &[]),
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
}
