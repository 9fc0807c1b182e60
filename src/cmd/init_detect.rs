//! What `init` writes as the check: detected from the project's own files.

use std::path::Path;

/// The check command for the project in `dir` and the file that told, or `None`.
///
/// Order: Cargo.toml (`cargo test`), go.mod (`go test ./...`), package.json with a
/// `test` script (`npm test`), pytest (pytest.ini, a `[tool.pytest…]` table in
/// pyproject.toml, conftest.py, a pyproject.toml/setup.py beside a tests/ folder, or
/// `test_*.py`/`*_test.py` files in tests/ or the root: `python3 -m pytest`).
#[must_use]
pub fn detect_check(dir: &Path) -> Option<(&'static str, &'static str)> {
    let has = |f: &str| dir.join(f).is_file();
    if has("Cargo.toml") {
        return Some(("cargo test", "Cargo.toml"));
    }
    if has("go.mod") {
        return Some(("go test ./...", "go.mod"));
    }
    if has("package.json") {
        let text = std::fs::read_to_string(dir.join("package.json")).unwrap_or_default();
        let has_test = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.pointer("/scripts/test").cloned())
            .and_then(|t| t.as_str().map(str::to_string))
            .is_some_and(|t| !t.contains("no test specified"));
        if has_test {
            return Some(("npm test", "package.json"));
        }
    }
    let pyproject = std::fs::read_to_string(dir.join("pyproject.toml")).unwrap_or_default();
    if has("pytest.ini") {
        return Some(("python3 -m pytest", "pytest.ini"));
    }
    if pyproject.contains("[tool.pytest") {
        return Some(("python3 -m pytest", "pyproject.toml"));
    }
    if has("conftest.py") {
        return Some(("python3 -m pytest", "conftest.py"));
    }
    if (has("pyproject.toml") || has("setup.py")) && dir.join("tests").is_dir() {
        return Some(("python3 -m pytest", "pyproject.toml"));
    }
    // a plain project: Python test files pytest collects by default, in tests/ or
    // the root (a new user's `tests/test_*.py` with no configuration got no check)
    let py_tests = |d: &Path| {
        std::fs::read_dir(d).is_ok_and(|entries| {
            entries.filter_map(Result::ok).any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
            })
        })
    };
    if py_tests(&dir.join("tests")) {
        return Some(("python3 -m pytest", "tests/test_*.py"));
    }
    if py_tests(dir) {
        return Some(("python3 -m pytest", "test_*.py"));
    }
    None
}

/// The init template with the detected check written in (uncommented).
#[must_use]
pub fn template_with_check(template: &str, check: &str) -> String {
    template.replacen(
        "# check = \"cargo test\"",
        &format!("check = {}", toml_string(check)),
        1,
    )
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files to create (name, content) and the check `init` should detect.
    type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>);

    #[test]
    fn detects_each_ecosystem() {
        let cases: [Case; 12] = [
            (&[("Cargo.toml", "[package]\n")], Some("cargo test")),
            (&[("go.mod", "module x\n")], Some("go test ./...")),
            (
                &[("package.json", r#"{"scripts":{"test":"node --test"}}"#)],
                Some("npm test"),
            ),
            (
                &[(
                    "package.json",
                    r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#,
                )],
                None,
            ),
            (
                &[("pyproject.toml", "[tool.pytest.ini_options]\n")],
                Some("python3 -m pytest"),
            ),
            (&[("pytest.ini", "[pytest]\n")], Some("python3 -m pytest")),
            (&[("README.md", "x")], None),
            (&[("tests/test_calc.py", "")], Some("python3 -m pytest")),
            (&[("tests/calc_test.py", "")], Some("python3 -m pytest")),
            (&[("test_calc.py", "")], Some("python3 -m pytest")),
            (&[("tests/helpers.py", "")], None),
            (&[("testing.py", "")], None),
        ];
        for (files, want) in cases {
            let d = tempfile::tempdir().unwrap();
            for (f, c) in files {
                let p = d.path().join(f);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, c).unwrap();
            }
            assert_eq!(detect_check(d.path()).map(|c| c.0), want, "{files:?}");
        }
    }

    #[test]
    fn the_template_gets_the_check_uncommented() {
        let t = template_with_check(crate::config::INIT_TEMPLATE, "npm test");
        let parsed: toml::Value = toml::from_str(&t).unwrap();
        assert_eq!(parsed["check"].as_str(), Some("npm test"));
    }
}
