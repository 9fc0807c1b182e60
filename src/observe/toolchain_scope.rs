//! The check's toolchain found indirectly: programs the check's own programs start.
//!
//! [`super::toolchain`] hashes what the check's command words resolve to. The programs
//! *those* start are found on the same `PATH`: cargo runs `rustc`, `rustdoc` and `cc`,
//! a pyenv shim is a bash script (`#!/usr/bin/env bash`), `npm test` runs `node`. A
//! shim the exec puts into a `PATH` directory it may write lies to the check without
//! touching the command word. So loopexec also records, at t0 and after every exec:
//!
//! * every executable in every directory of the check's `PATH` that lies inside a path
//!   the exec may write (the sandbox's writable set, [`SandboxPlan::for_workdir`], whether
//!   or not the kernel enforces it; the workdir itself excepted: its `PATH` entries are
//!   dropped from the check's `PATH`), keyed `exec:<file>`;
//! * the interpreter of every `#!` line of those files and of the command words'
//!   files, resolved as the kernel and `env` would (`/usr/bin/env bash` → `bash` on the
//!   check's `PATH`), keyed `interp:<script>`.
//!
//! Values are `<resolved file> <digest>` (for `exec:` the file's stat identity, which
//! any write changes; for `interp:` its mode and content); a file that appears,
//! disappears or changes is `hermeticity_violation` naming it
//! ([`crate::detect::integrity::toolchain`]). Content digests are cached per inode and
//! stat data (a write moves ctime, which no user can set back), so a large unchanged
//! binary is read once per process.

use crate::config::RunConfig;
use crate::proc::sandbox::SandboxPlan;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Most executables recorded per `PATH` directory (a directory holding more is named
/// with a count instead, so a huge writable directory cannot slow every iteration).
pub const MAX_PER_DIR: usize = 2000;

/// Where the exec may write, for the toolchain measurement.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    writable: Vec<PathBuf>,
}

impl Scope {
    /// The scope of a run in `workdir`: the sandbox's writable set (`$HOME` from the
    /// environment, `[sandbox] writable`), the workdir left out.
    #[must_use]
    pub fn for_run(workdir: &Path, cfg: &RunConfig) -> Scope {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let plan = SandboxPlan::for_workdir(workdir, home.as_deref(), &cfg.sandbox.writable);
        Scope::new(plan.writable, workdir)
    }

    /// A scope over `writable`, without `workdir` (and paths inside it).
    #[must_use]
    pub fn new(writable: Vec<PathBuf>, workdir: &Path) -> Scope {
        let writable = writable
            .into_iter()
            .filter(|w| !w.starts_with(workdir))
            .map(|w| std::fs::canonicalize(&w).unwrap_or(w))
            .collect();
        Scope { writable }
    }

    /// True when `dir` lies inside a path the exec may write.
    #[must_use]
    pub fn writable(&self, dir: &Path) -> bool {
        let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        self.writable
            .iter()
            .any(|w| real.starts_with(w) || dir.starts_with(w))
    }

    /// The measurement (see the module doc): `words` are the check's command words,
    /// `path` the check's `PATH`.
    #[must_use]
    pub fn measure(&self, words: &[String], path: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut scripts: Vec<PathBuf> = words
            .iter()
            .filter_map(|w| super::toolchain::resolve(w, path))
            .collect();
        let mut seen = std::collections::BTreeSet::new();
        for d in path.split(':').filter(|d| Path::new(d).is_absolute()) {
            let dir = Path::new(d);
            if !seen.insert(dir.to_path_buf()) || !self.writable(dir) {
                continue;
            }
            let mut files = executables(dir);
            if files.len() > MAX_PER_DIR {
                out.insert(
                    format!("exec:{}", dir.display()),
                    format!("{} executables (more than {MAX_PER_DIR})", files.len()),
                );
                files.truncate(MAX_PER_DIR);
            }
            for f in files {
                out.insert(format!("exec:{}", f.display()), identity(&f));
                scripts.push(f);
            }
        }
        for s in scripts {
            if let Some(interp) = interpreter(&s, path) {
                out.insert(format!("interp:{}", s.display()), described(&interp));
            }
        }
        out
    }
}

/// The executable files of `dir` (links followed), sorted.
fn executables(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0))
        .collect();
    out.sort();
    out
}

/// `<resolved file> <stat identity>` of `p`: device, inode, size, mode, mtime and
/// ctime. Any write moves ctime, which no user can set back, and a replacement has
/// another inode, so this sees every change without reading the file (a directory of
/// large binaries such as `~/.cargo/bin` costs a `stat` per file).
fn identity(p: &Path) -> String {
    let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let Ok(m) = std::fs::metadata(&real) else {
        return format!("{} missing", real.display());
    };
    let mut h = blake3::Hasher::new();
    for v in [m.dev(), m.ino(), m.size(), u64::from(m.mode())] {
        h.update(&v.to_le_bytes());
    }
    for v in [m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()] {
        h.update(&v.to_le_bytes());
    }
    format!("{} stat:{}", real.display(), &h.finalize().to_hex()[..16])
}

/// `<resolved file> <digest>` of `p`.
fn described(p: &Path) -> String {
    let real = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    format!("{} {}", real.display(), digest(&real))
}

/// The interpreter a `#!` line of `script` names, resolved (`env NAME` on `path`).
/// `None` for a file without one (a binary, an unreadable file).
#[must_use]
pub fn interpreter(script: &Path, path: &str) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script)
        .and_then(|mut f| f.read(&mut head))
        .ok()?;
    let line = shebang(&head[..n])?;
    let (prog, rest) = parse_shebang(&line)?;
    if Path::new(&prog).file_name().is_some_and(|n| n == "env") {
        let name = rest?;
        if name.contains('/') {
            return Some(PathBuf::from(name));
        }
        return super::toolchain::resolve(&name, path);
    }
    Some(PathBuf::from(prog))
}

/// The `#!` line of a file's first bytes, without `#!` and the newline.
fn shebang(head: &[u8]) -> Option<String> {
    let rest = head.strip_prefix(b"#!")?;
    let end = rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len());
    Some(String::from_utf8_lossy(&rest[..end]).trim().to_string())
}

/// `(program, the program env runs)` of a `#!` line: for `/usr/bin/env -S bash -e`,
/// `("/usr/bin/env", Some("bash"))`; for `/bin/sh -e`, `("/bin/sh", Some("-e"))`
/// (callers use the second part only for `env`).
#[must_use]
pub fn parse_shebang(line: &str) -> Option<(String, Option<String>)> {
    let mut words = line.split_whitespace();
    let prog = words.next()?.to_string();
    if Path::new(&prog).file_name() != Some(std::ffi::OsStr::new("env")) {
        return Some((prog, words.next().map(str::to_string)));
    }
    // env's own options and VAR=value assignments come before the program.
    let next = words.find(|w| {
        let assignment = w.contains('=') && !w.starts_with('=');
        !(w.starts_with('-') || assignment)
    });
    Some((prog, next.map(str::to_string)))
}

type StatKey = (u64, u64, u64, i64, i64, i64, i64, u32);

fn cache() -> &'static Mutex<HashMap<StatKey, String>> {
    static C: OnceLock<Mutex<HashMap<StatKey, String>>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(HashMap::new()))
}

/// blake3 of a file's mode and content (16 hex digits), cached by its stat data.
fn digest(p: &Path) -> String {
    let Ok(m) = std::fs::metadata(p) else {
        return "missing".into();
    };
    let key: StatKey = (
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
        m.mode(),
    );
    if let Some(d) = cache().lock().ok().and_then(|c| c.get(&key).cloned()) {
        return d;
    }
    let mut h = blake3::Hasher::new();
    h.update(&u64::from(m.mode() & 0o7777).to_le_bytes());
    let d = match std::fs::File::open(p).and_then(|mut f| std::io::copy(&mut f, &mut h)) {
        Ok(_) => h.finalize().to_hex()[..16].to_string(),
        Err(e) => return format!("unreadable ({e})"),
    };
    if let Ok(mut c) = cache().lock() {
        c.insert(key, d.clone());
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(p: &Path, body: &str) {
        std::fs::write(p, body).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn parse_shebang_table() {
        let table: &[(&str, &str, Option<&str>)] = &[
            ("/bin/sh", "/bin/sh", None),
            ("/bin/sh -e", "/bin/sh", Some("-e")),
            ("/usr/bin/env bash", "/usr/bin/env", Some("bash")),
            ("/usr/bin/env -S bash -e", "/usr/bin/env", Some("bash")),
            (
                "/usr/bin/env -i PATH=/x python3",
                "/usr/bin/env",
                Some("python3"),
            ),
        ];
        for (line, prog, next) in table {
            let (p, n) = parse_shebang(line).unwrap();
            assert_eq!((p.as_str(), n.as_deref()), (*prog, *next), "{line}");
        }
        assert!(parse_shebang("").is_none());
    }

    #[test]
    fn a_new_program_in_a_writable_path_directory_is_seen() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = tmp.path().join("shimbin");
        let ro = tmp.path().join("ro");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&ro).unwrap();
        script(&ro.join("cargo"), "#!/bin/sh\nexit 0\n");
        let path = format!("{}:{}", bin.display(), ro.display());
        let scope = Scope::new(vec![bin.clone()], &tmp.path().join("wd"));
        let words = vec!["cargo".to_string()];
        let before = scope.measure(&words, &path);
        // The command word's script and its interpreter are recorded; the read-only
        // directory's other files are not listed.
        assert!(
            before.keys().any(|k| k.starts_with("interp:")),
            "{before:?}"
        );
        assert!(!before.keys().any(|k| k.starts_with("exec:")), "{before:?}");
        script(&bin.join("rustc"), "#!/bin/sh\nexec true\n");
        let after = scope.measure(&words, &path);
        let key = format!("exec:{}", bin.join("rustc").display());
        assert!(after.contains_key(&key), "{after:?}");
        // Rewriting it with other bytes is a change too.
        script(&bin.join("rustc"), "#!/bin/sh\nexec false\n");
        assert_ne!(scope.measure(&words, &path)[&key], after[&key]);
    }

    #[test]
    fn an_env_interpreter_shadowed_on_path_changes_the_measurement() {
        let tmp = tempfile::tempdir().unwrap();
        let shims = tmp.path().join("shims");
        let early = tmp.path().join("early");
        std::fs::create_dir_all(&shims).unwrap();
        std::fs::create_dir_all(&early).unwrap();
        script(&shims.join("python3"), "#!/usr/bin/env sh\nexec true\n");
        let path = format!("{}:{}:/usr/bin:/bin", early.display(), shims.display());
        // Only `early` is writable: the shim itself is not, but what it runs is.
        let scope = Scope::new(vec![early.clone()], &tmp.path().join("wd"));
        let words = vec!["python3".to_string()];
        let before = scope.measure(&words, &path);
        let key = format!("interp:{}", shims.join("python3").display());
        assert!(
            !before[&key].starts_with(&early.display().to_string()),
            "{before:?}"
        );
        script(&early.join("sh"), "#!/bin/dash\necho forged\n");
        let after = scope.measure(&words, &path);
        assert_ne!(before[&key], after[&key]);
        assert!(after[&key].starts_with(&early.join("sh").display().to_string()));
    }

    #[test]
    fn the_workdir_is_not_part_of_the_scope() {
        let tmp = tempfile::tempdir().unwrap();
        let wd = tmp.path().join("wd");
        std::fs::create_dir_all(wd.join("bin")).unwrap();
        let scope = Scope::new(vec![wd.clone(), tmp.path().join("other")], &wd);
        assert!(!scope.writable(&wd.join("bin")));
    }
}
