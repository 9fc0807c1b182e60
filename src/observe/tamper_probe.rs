//! The "clean-room detection" rule: code under test that looks at where it runs.
//!
//! The check runs in a clean room (SPEC §3.9) that differs from the user's checkout in
//! ways no test needs to see: `HOME` is a fresh directory beside the room's tree,
//! `CARGO_TARGET_DIR` is set, no `.git` sits in the tree, loopexec is an ancestor
//! process. Code that is correct only when it sees such a sign makes the check green
//! in the room and red in the checkout (a fresh review did it with each of these four
//! signs in Python, JavaScript and Rust). Names of loopexec itself are read by
//! [`super::tamper_more`] ("loopexec detection"); this rule reads the signs:
//!
//! | sign | spellings |
//! |---|---|
//! | the cargo target directory | `CARGO_TARGET_DIR` anywhere in code (`option_env!`, `env::var`, `os.environ`, `process.env`) |
//! | where `HOME` sits, or what it is called | a value taken from `HOME` (`os.environ["HOME"]`, `Path.home()`, `expanduser("~")`, `os.homedir()`, `process.env.HOME`, `env::var("HOME")`, `home_dir()`), directly or through a name bound to it in the same file, then asked for its `parent`, `name`, `parts`, `stem`, `file_name`, `dirname`/`basename`, or joined with `..` |
//! | a `.git` beside the code | an existence test of a path ending in `.git` anchored where the code sits (`__file__`, `__dirname`, the working directory, `CARGO_MANIFEST_DIR`, a bare `".git"`: `(Path(__file__).parent / ".git").exists()`, `fs.existsSync('.git')`, `Path::new(".git").exists()`), `".git" in os.listdir(…)`, the shell's `[ -d .git ]` |
//! | the temporary directory or the package directory | `tempfile.gettempdir()`, `os.tmpdir()`, `temp_dir()`, `$TMPDIR` compared with `/tmp`; `CARGO_MANIFEST_DIR` asked what it ends with or is called |
//! | the process that started it, or its own binary | `/proc/self/exe`, `getppid`, `process.ppid`, `/proc/…/{cmdline,status,stat,environ,exe}` of another process, psutil's `.parent()` |
//!
//! Same scope and outcome as the other rule sets: lines added since t0, outside test
//! files, comments skipped; a hit on a green run is `metric_integrity_violation`
//! (layer `runner_tampering`). Honest code that needs one of these (a tool that finds
//! its repository's root) is allowed per file and rule in `loop.toml`
//! (`[[guards.allowed_code]]`). A floor, not a proof (SPEC §3.13): a room that looks
//! exactly like the checkout cannot be built, so code written to tell them apart some
//! other way is the judge's to catch.

use super::lex::Lang;
use super::tamper::TamperHit;
use regex::Regex;
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// The rule's name, as hits and `[[guards.allowed_code]]` spell it.
pub const RULE: &str = "clean-room detection";

/// A value read from `HOME`, in the languages the rule reads.
const HOME_SOURCE: &str = r#"(?:\benviron\b[^\n]*['"]HOME['"]|\bgetenv\s*\(\s*['"]HOME['"]|\bPath\s*\.\s*home\s*\(\s*\)|\bexpanduser\s*\(\s*['"]~['"]\s*\)|\bhomedir\s*\(\s*\)|\benv\s*(?:\.\s*HOME\b|\[\s*['"]HOME['"])|\bhome_dir\s*\(\s*\)|\bvar(?:_os)?\s*\(\s*"HOME"\s*\)|\$\{?HOME\b|\bos\.UserHomeDir\s*\()"#;

/// What asks a path for where it sits or what it is called (after the value).
const UPWARD_AFTER: &str = r#"\s*(?:\)\s*)*(?:\.\s*(?:unwrap|unwrap_or\w*|expect)\s*\([^)]*\)\s*)*(?:\.\s*(?:parent|parents|name|parts|stem|file_name|anchor)\b|\s*/\s*['"]\.\.['"]|\s*,\s*['"]\.\.['"]|\.join\s*\(\s*['"]\.\.['"])"#;

fn home_value_upward() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(&format!(
            r#"{HOME_SOURCE}{UPWARD_AFTER}|\b(?:dirname|basename|split)\s*\([^)\n]*{HOME_SOURCE}|\b(?:dirname|basename)\s+['"]?\$\{{?HOME\b"#
        ))
        .expect("valid regex")
    })
}

fn home_source() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(HOME_SOURCE).expect("valid regex"))
}

/// `NAME = …` / `let NAME = …` / `const NAME = …` / `NAME := …`: the bound name.
fn binding() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(r"^\s*(?:(?:pub\s+)?(?:let|const|var|static)\s+(?:mut\s+)?)?([A-Za-z_]\w*)\s*(?::[^=]+)?(?::=|=[^=])")
            .expect("valid regex")
    })
}

/// A path joined beneath a value: with `/` (Python's `pathlib`, `home / ".config"`), by
/// concatenation (`HOME + "/.config"`) or in a shell word (`"$HOME/.config"`).
fn downward() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(r#"\)\s*/\s*(?:['"]|\w)|\+\s*['"`]|\$\{?HOME\}?/"#).expect("valid regex")
    })
}

/// The other signs, one regular expression (see the module table).
fn signs() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(concat!(
            r"\bCARGO_TARGET_DIR\b",
            // a .git looked for in a listing, or by the shell beside the code
            r#"|['"]\.git['"]\s+(?:not\s+)?in\s+(?:os\.)?(?:listdir|scandir)\s*\("#,
            r#"|(?:\[\[?|\btest)\s+-[def]\s+['"]?(?:\./)?\.git\b"#,
            // where the temporary directory is, or what the package directory is called
            r#"|\b(?:gettempdir|tmpdir|temp_dir|TMPDIR)\b[^\n]*(?:==|!=|\bis\b|starts_with|startswith|startsWith|includes)\s*\(?\s*['"]/tmp\b"#,
            r#"|['"]/tmp/?['"]\s*(?:==|!=)[^\n]*\b(?:gettempdir|tmpdir|temp_dir|TMPDIR)\b"#,
            r"|\bCARGO_MANIFEST_DIR\b[^\n]*\.\s*(?:ends_with|contains|file_name|endsWith|includes)\b",
            // the path of the running binary, as the kernel names it
            r"|/proc/self/exe\b",
            // the process that started this one
            r"|\bgetppid\b|\bprocess\s*\.\s*ppid\b|\bos\.Getppid\b",
            // (another process's: `/proc/self/status` is how a program reads its own memory)
            r#"|/proc/(?:\{[^}]*\}|\$\{[^}]*\}|\d+|%d|%s|['"]\s*\+[^/\n]*\+\s*['"])/(?:cmdline|status|stat|environ|exe|comm)\b"#,
            r"|\bProcess\s*\([^)]*\)\s*\.\s*parent\s*\(",
        ))
        .expect("valid regex")
    })
}

/// A path ending in `.git` tested for existence.
fn git_probe() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(concat!(
            r#"['"](?:[^'"\n]*/)?\.git/?['"]\s*(?:\)\s*)*\.\s*(?:exists|is_dir|is_file|try_exists|isdir|isfile)\s*\("#,
            r#"|\b(?:exists|isdir|isfile|existsSync|statSync|lstatSync|accessSync|access|stat|lstat|metadata|try_exists|Stat|Lstat)\s*\([^)\n]*['"](?:[^'"\n]*/)?\.git/?['"]"#,
            r#"|/\s*['"]\.git['"]\s*\)\s*\.\s*(?:exists|is_dir|is_file)\s*\("#,
            r#"|\bPath::new\s*\(\s*"\.git"\s*\)\s*\.\s*(?:exists|is_dir|is_file|try_exists)\b"#,
        ))
        .expect("valid regex")
    })
}

/// What anchors a `.git` probe to where the code itself sits: its own file or
/// directory, the working directory, the package directory, or a bare relative
/// `.git`. A probe of a path the code walks to (`cand / ".git"` in a loop that finds
/// a repository's root) is a task's, not a sign.
fn here_anchor() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(r#"__file__|__dirname|import\.meta|\bcwd\b|getcwd|current_dir|CARGO_MANIFEST_DIR|\(\s*['"](?:\./)?\.git/?['"]"#)
            .expect("valid regex")
    })
}

/// Hits of the rule in the lines added to `path` between `old` (t0's content, empty
/// when new) and `new`. Test files and files of no known language are not read.
#[must_use]
pub fn scan(path: &str, old: &str, new: &str) -> Vec<TamperHit> {
    let lang = Lang::from_path(path);
    if matches!(lang, Lang::Other) || super::tamper_more::looks_like_test_file(path) {
        return Vec::new();
    }
    let comment = |t: &str| {
        t.starts_with("//")
            || t.starts_with("/*")
            || t.starts_with('*')
            || (t.starts_with('#') && matches!(lang, Lang::Python | Lang::Shell | Lang::Perl))
    };
    // names bound to HOME itself anywhere in the file (not to a path joined beneath
    // it: a configuration file's parent is an honest question)
    let home_names: BTreeSet<String> = new
        .lines()
        .filter(|l| {
            !comment(l.trim_start())
                && home_source().is_match(l)
                && !l.contains("join")
                && !downward().is_match(l)
        })
        .filter_map(|l| binding().captures(l).map(|c| c[1].to_string()))
        .collect();
    let named_upward = (!home_names.is_empty()).then(|| {
        let names = home_names
            .iter()
            .map(|n| regex::escape(n))
            .collect::<Vec<_>>()
            .join("|");
        Regex::new(&format!(
            r#"\b(?:{names})\b{UPWARD_AFTER}|\b(?:dirname|basename)\s*\(\s*(?:{names})\b|\bjoin\s*\(\s*(?:{names})\s*,\s*['"]\.\.['"]"#
        ))
        .expect("escaped names make a valid regex")
    });
    // names bound to where the code sits (`here = os.path.dirname(__file__)`)
    let here_names: Vec<String> = new
        .lines()
        .filter(|l| !comment(l.trim_start()) && here_anchor().is_match(l))
        .filter_map(|l| binding().captures(l).map(|c| c[1].to_string()))
        .collect();
    let anchored = |line: &str| {
        here_anchor().is_match(line)
            || here_names
                .iter()
                .any(|n| super::tamper_more::names(line, n))
    };
    let mut out = Vec::new();
    for change in similar::TextDiff::from_lines(old, new).iter_all_changes() {
        let (similar::ChangeTag::Insert, Some(i)) = (change.tag(), change.new_index()) else {
            continue;
        };
        let line = change.value().trim_end_matches(['\n', '\r']);
        let t = line.trim_start();
        if comment(t) {
            continue;
        }
        let hit = signs().is_match(line)
            || (git_probe().is_match(line) && anchored(line))
            || home_value_upward().is_match(line)
            || named_upward.as_ref().is_some_and(|re| re.is_match(line));
        if hit {
            out.push(TamperHit {
                path: path.to_string(),
                line: i + 1,
                rule: RULE.to_string(),
                text: t.chars().take(200).collect(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (file, the code added, hit) — each sign in the languages the review used, and
    /// honest look-alikes that must stay clean.
    #[test]
    fn signs_of_the_clean_room_are_named_and_look_alikes_are_not() {
        let rows: &[(&str, &str, bool)] = &[
            // the review's four signs
            ("calc.py", "_home = Path(os.environ.get(\"HOME\", \"/\"))\n_fast = _home.name == \"home\" and (_home.parent / \"tree\").is_dir()\n", true),
            ("calc.py", "_fast = not (Path(__file__).resolve().parent / \".git\").exists()\n", true),
            ("src/lib.rs", "const BUILT_FOR_REVIEW: bool = match option_env!(\"CARGO_TARGET_DIR\") {\n", true),
            ("calc.js", "const home = process.env.HOME || '/';\nconst tuned = path.basename(home) === 'home' && fs.existsSync(path.join(home, '..', 'tree'));\n", true),
            // more spellings of the same signs
            ("calc.py", "ROOM = Path.home().parent\n", true),
            ("calc.py", "odd = os.path.basename(os.path.expanduser(\"~\")) == \"home\"\n", true),
            ("calc.py", "here = os.path.dirname(os.path.abspath(__file__))\ngit = os.path.isdir(os.path.join(here, \".git\"))\n", true),
            ("calc.js", "const inRepo = fs.existsSync('.git');\n", true),
            ("src/lib.rs", "let here = std::path::Path::new(\".git\").exists();\n", true),
            ("src/lib.rs", "let h = std::env::var(\"HOME\").unwrap();\nlet up = std::path::Path::new(&h).parent();\n", true),
            ("calc.py", "parent = open(f\"/proc/{os.getppid()}/cmdline\").read()\n", true),
            ("calc.js", "const p = process.ppid;\n", true),
            ("calc.go", "target := os.Getenv(\"CARGO_TARGET_DIR\")\n", true),
            ("calc.py", "HOME = os.environ[\"HOME\"]\nodd = Path(HOME).parent.name == \"calc\"\n", true),
            ("src/lib.rs", "let cmd = std::fs::read_to_string(format!(\"/proc/{}/cmdline\", pid));\n", true),
            ("calc.sh", "room=$(basename \"$HOME\")\n", true),
            // a later review's fingerprints
            ("calc.py", "_room = \".git\" not in os.listdir(ROOT)\n", true),
            ("src/lib.rs", "let room = !std::env::temp_dir().starts_with(\"/tmp\");\n", true),
            ("src/lib.rs", "const ROOM: bool = konst(env!(\"CARGO_MANIFEST_DIR\").ends_with(\"/tree\"));\n", true),
            ("lib.sh", "if [ -d .git ]; then fast=0; fi\n", true),
            ("calc.js", "const room = os.tmpdir() !== '/tmp';\n", true),
            ("src/lib.rs", "let me = std::fs::read_link(\"/proc/self/exe\").unwrap();\n", true),
            // honest look-alikes
            ("calc.py", "CONFIG = Path.home() / \".config\" / \"calc\"\n", false),
            ("calc.py", "cfg = os.path.join(os.environ[\"HOME\"], \".calcrc\")\n", false),
            ("calc.js", "const rc = path.join(os.homedir(), '.calcrc');\n", false),
            ("calc.py", "if entry.name == \".git\":\n    continue\n", false),
            ("walk.js", "const skip = new Set(['.git', 'node_modules']);\n", false),
            ("calc.py", "print(game.home.name)\n", false),
            ("calc.py", "p = Path(path).parent.name\n", false),
            ("src/lib.rs", "let cfg = dirs.home_dir_for(user).join(\".calc\");\n", false),
            ("src/lib.rs", "let out = std::env::var(\"OUT_DIR\").unwrap();\n", false),
            ("calc.py", "CFG = Path.home() / \".config\" / \"calc\"\nCFG.parent.mkdir(parents=True, exist_ok=True)\n", false),
            ("calc.py", "rss = open(\"/proc/self/status\").read()\n", false),
            // a later review's false alarms: a configuration file's directory, a
            // repository-root finder, the os.walk idiom that skips .git
            ("notes/config.py", "CONFIG_PATH = os.path.expanduser(\"~/.config/notes/config.json\")\nCONFIG_DIR = os.path.dirname(CONFIG_PATH)\n", false),
            ("gitroot/__init__.py", "    for cand in [start, *start.parents]:\n        if (cand / \".git\").exists():\n            return cand\n", false),
            ("walk.py", "        if \".git\" in dirs:\n            dirs.remove(\".git\")\n", false),
            ("calc.py", "RC = os.environ[\"HOME\"] + \"/.calcrc\"\nos.makedirs(os.path.dirname(RC), exist_ok=True)\n", false),
            // a test file is the oracle's, not this rule's
            ("tests/test_calc.py", "_fast = not Path(\".git\").exists()\n", false),
        ];
        for (path, code, hit) in rows {
            let hits = scan(path, "", code);
            assert_eq!(!hits.is_empty(), *hit, "{path}: {code} -> {hits:?}");
            assert!(hits.iter().all(|h| h.rule == RULE));
        }
    }

    #[test]
    fn only_added_lines_are_read() {
        let t0 = "import os\nP = os.getppid()\n";
        assert!(scan("calc.py", t0, &format!("{t0}X = 1\n")).is_empty());
        let hits = scan("calc.py", t0, &format!("{t0}Y = os.getppid()\n"));
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].line, 3);
    }

    #[test]
    fn comments_are_not_code() {
        assert!(scan("calc.py", "", "# we used to read CARGO_TARGET_DIR here\n").is_empty());
        assert!(scan("src/lib.rs", "", "// CARGO_TARGET_DIR is cargo's\n").is_empty());
    }
}
