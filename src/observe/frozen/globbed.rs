//! Data the tests find by a pattern or a directory listing (SPEC §3.10).
//!
//! A test parametrized over `glob.glob("cases/*.json")` reads every file the pattern
//! matches, though it names none of them: their expected values are the oracle as
//! much as a literal `expected.txt` is. The patterns come from the calls that list
//! files, with a literal argument:
//!
//! * Python `glob.glob`/`glob.iglob`/`glob(…)`, `Path(…).glob`/`.rglob` (`rglob`
//!   matches at any depth), `os.listdir`/`os.scandir`/`os.walk`, `Path("dir").iterdir()`;
//! * JavaScript `fs.readdirSync`/`fs.readdir`, `glob.sync`/`globSync`/`fg.sync`;
//! * Rust `std::fs::read_dir`, `include_dir!` (`$CARGO_MANIFEST_DIR/` dropped).
//!
//! A listing names its directory's entries (`dir/*`; `os.walk` and `include_dir!`
//! everything below it, `dir/**`). Each pattern is read from the tree's root, from the
//! test's directory and from the one above it. A pattern with no literal directory
//! (`HERE.glob("*.json")`, `os.listdir(CASES)`) is read within the directories of data
//! files the same test names by literals (`"cases"`). Only patterns that match a data
//! file of t0 (no known language, [`super::super::lex::Lang::Other`]) count.

use super::super::lex::Lang;
use super::normalize;
use globset::{GlobBuilder, GlobMatcher};
use std::collections::BTreeSet;

/// A literal argument: `"…"`, `'…'` or a template literal without `${…}`, with an
/// optional `r`/`b`/`u` prefix.
const LIT: &str = r#"\s*[rRbBuU]?(?:"([^"\n]*)"|'([^'\n]*)'|`([^`$\n]*)`)"#;

/// The patterns (root-relative, globset syntax) by which one test file's `text` lists
/// files, before they are matched against the tree. `dir`/`up` are the test's
/// directory and the one above it; `named_dirs` the directories of data files the
/// file names by literals.
fn patterns(text: &str, dir: &str, up: &str, named_dirs: &[String]) -> Vec<String> {
    static RES: std::sync::OnceLock<[regex::Regex; 4]> = std::sync::OnceLock::new();
    let [path_glob, glob_call, listing, bare_listing] = RES.get_or_init(|| {
        let re = |s: String| regex::Regex::new(&s).expect("valid listing regex");
        [
            // Path("dir").glob("*.json") / .rglob(…); the receiver's literal optional
            re(format!(r"(?:Path\({LIT}\s*\)\s*)?\.(r?glob)\s*\({LIT}")),
            // glob.glob("…"), glob("…"), globSync("…"), glob.sync("…"), fg.sync("…")
            re(format!(
                r"(?:^|[^\w.])(?:glob\.(?:i?glob|sync)|i?glob|globSync|fg\.sync|fastGlob\.sync)\s*\({LIT}"
            )),
            // listings with a literal directory
            re(format!(
                r"(?:^|[^\w])(os\.walk|os\.listdir|os\.scandir|listdir|scandir|readdirSync|readdir|read_dir|include_dir!)\s*\({LIT}"
            )),
            // listings of a directory held elsewhere (`os.listdir(CASES)`, `.iterdir()`)
            re(r"(?:^|[^\w])(os\.walk|include_dir!|os\.listdir|os\.scandir|listdir|scandir|readdirSync|readdir|read_dir)\s*\(|\.iterdir\s*\(".to_string()),
        ]
    });
    let lit = |c: &regex::Captures, from: usize| -> Option<String> {
        (from..from + 3)
            .find_map(|i| c.get(i))
            .map(|m| m.as_str().to_string())
    };
    let mut relative: Vec<String> = Vec::new();
    let mut within_named: Vec<String> = Vec::new();
    for line in text.lines() {
        // Path("dir").iterdir()
        if let Some(i) = line.find(".iterdir") {
            let before = &line[..i];
            if let Some(c) = regex_path_literal().captures(before) {
                if let Some(d) = lit(&c, 1) {
                    relative.push(format!("{}/*", d.trim_end_matches('/')));
                }
            }
        }
        for c in path_glob.captures_iter(line) {
            let recursive = c.get(4).is_some_and(|m| m.as_str() == "rglob");
            let Some(pat) = lit(&c, 5) else { continue };
            // `glob.glob(…)` is the module's function, read below
            let at = c.get(0).map_or(0, |m| m.start());
            if c.get(1).is_none()
                && c.get(2).is_none()
                && c.get(3).is_none()
                && line[..at].ends_with("glob")
            {
                continue;
            }
            let pat = if recursive { format!("**/{pat}") } else { pat };
            match lit(&c, 1) {
                Some(base) => relative.push(format!("{}/{pat}", base.trim_end_matches('/'))),
                None => within_named.push(pat),
            }
        }
        for c in glob_call.captures_iter(line) {
            if let Some(p) = lit(&c, 1) {
                relative.push(p);
            }
        }
        for c in listing.captures_iter(line) {
            let deep = matches!(
                c.get(1).map(|m| m.as_str()),
                Some("os.walk" | "include_dir!")
            );
            if let Some(d) = lit(&c, 2) {
                let d = d.trim_start_matches("$CARGO_MANIFEST_DIR/");
                let d = d.trim_end_matches('/');
                relative.push(format!("{d}/{}", if deep { "**" } else { "*" }));
            }
        }
        if !listing.is_match(line) {
            if let Some(c) = bare_listing.captures(line) {
                let deep = matches!(
                    c.get(1).map(|m| m.as_str()),
                    Some("os.walk" | "include_dir!")
                );
                within_named.push(if deep { "**" } else { "*" }.to_string());
            }
        }
    }
    let mut out = Vec::new();
    for p in relative {
        if p.starts_with('/') || p.contains('{') && p.contains('}') {
            continue;
        }
        let p = p.trim_start_matches("./");
        for base in ["", dir, up] {
            let joined = if base.is_empty() {
                normalize(p)
            } else {
                normalize(&format!("{base}/{p}"))
            };
            out.extend(joined);
        }
    }
    for p in within_named {
        if p.starts_with('/') {
            continue;
        }
        for d in named_dirs {
            out.extend(normalize(&format!("{d}/{p}")));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `Path("dir")` (or `pathlib.Path('dir')`) right before a method call.
fn regex_path_literal() -> &'static regex::Regex {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(&format!(r"Path\({LIT}\s*\)\s*$")).expect("valid Path regex")
    })
}

/// The directories (root-relative) that hold a file of `data` and that a literal of
/// `text` names, from the root, `dir` or `up` (`"expected"`, `"golden/cases"`).
pub(super) fn named_dirs(text: &str, dir: &str, up: &str, data: &BTreeSet<&str>) -> Vec<String> {
    let mut dirs: Vec<String> = Vec::new();
    for lit in text
        .lines()
        .flat_map(super::super::tamper_more::string_literals)
        .filter(|l| !l.is_empty() && l.len() <= 200 && !l.contains(char::is_whitespace))
    {
        let lit = lit.trim_start_matches("./").trim_end_matches('/');
        for base in ["", dir, up] {
            let joined = if base.is_empty() {
                normalize(lit)
            } else {
                normalize(&format!("{base}/{lit}"))
            };
            if let Some(d) = joined {
                let prefix = format!("{d}/");
                if data.iter().any(|f| f.starts_with(&prefix)) && !dirs.contains(&d) {
                    dirs.push(d);
                }
            }
        }
    }
    dirs
}

/// The data files of the tree a test lists by a pattern or a directory listing, and
/// the patterns (root-relative, globset syntax: `*` stops at `/`) that matched at least
/// one of them. `sources` are the test files (path, content); `files` every path of
/// t0's tree. Sorted, without duplicates.
#[must_use]
pub fn listed_data(sources: &[(String, String)], files: &[String]) -> (Vec<String>, Vec<String>) {
    let data: BTreeSet<&str> = files
        .iter()
        .map(String::as_str)
        .filter(|f| Lang::from_path(f) == Lang::Other)
        .collect();
    let mut found = BTreeSet::new();
    let mut globs = BTreeSet::new();
    for (path, text) in sources {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        let up = dir.rsplit_once('/').map_or("", |(d, _)| d);
        let named = named_dirs(text, dir, up, &data);
        for p in patterns(text, dir, up, &named) {
            let Some(m) = matcher(&p) else { continue };
            let hits: Vec<&&str> = data.iter().filter(|f| m.is_match(f)).collect();
            if !hits.is_empty() {
                found.extend(hits.into_iter().map(|f| (*f).to_string()));
                globs.insert(p);
            }
        }
    }
    (found.into_iter().collect(), globs.into_iter().collect())
}

/// A pattern's matcher: `*` and `?` stop at `/`, `**` crosses directories.
pub(super) fn matcher(pattern: &str) -> Option<GlobMatcher> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// The data files of `files` (no known language) that `pattern` matches.
#[must_use]
pub fn globbed_files(pattern: &str, files: &[String]) -> Vec<String> {
    let Some(m) = matcher(pattern) else {
        return Vec::new();
    };
    files
        .iter()
        .filter(|f| Lang::from_path(f) == Lang::Other && m.is_match(f.as_str()))
        .cloned()
        .collect()
}
