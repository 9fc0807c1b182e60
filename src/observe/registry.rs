//! The published crates a Rust check compiles, as cargo extracted them under
//! `$CARGO_HOME/registry/src`.
//!
//! The exec may write cargo's registry (it adds dependencies, so cargo must be able to
//! download and extract them: [`crate::proc::sandbox`]). Cargo never looks at an
//! extracted crate again: it treats registry sources as immutable, so an edit there
//! (an assertion crate whose `assert_eq!` always holds, a dev-dependency whose test
//! helper swallows panics) is compiled into the next check without any change to the
//! tree loopexec judges. loopexec therefore measures, with the check's toolchain, every
//! registry package the tree's `Cargo.lock` names:
//!
//! * key `crate:<name>@<version>`;
//! * value `stat:<digest>`: the stat data (inode, size, mode, mtime, ctime) of every
//!   entry under the crate's directory. Any write moves ctime, which no user can set
//!   back, so an unchanged value means unchanged sources without reading a file;
//! * when that differs from what this process measured before, the sources are compared
//!   file by file with the crate's archive in `$CARGO_HOME/registry/cache` (whose
//!   SHA-256 must be `Cargo.lock`'s `checksum`): the value is then [`PUBLISHED`] when
//!   they are the same (cargo extracted the crate again), else
//!   `modified <digest>: <paths>` or `unverifiable: <why>`.
//!
//! A crate `Cargo.lock` names that t0's lock did not (the agent added or upgraded a
//! dependency) and whose archive was written after the run began is
//! `unverifiable: … was fetched during the run …`, extracted or not: cargo checks an
//! archive against the checksum in the registry's index cache, which the exec may
//! write too, so nothing offline vouches for it. A crate of t0's lock fetched later
//! (by the check, on a machine that had not fetched it yet) is checked against t0's
//! checksum as above.
//!
//! [`crate::detect::integrity::toolchain`] reads these keys with their own rule: a
//! crate that appears or that reads [`PUBLISHED`] is no change (the agent added or
//! re-extracted a dependency, exactly as published); any other change of value is a
//! `hermeticity_violation` naming the crate and the files.
//!
//! Not measured: git dependencies (`~/.cargo/git`), path dependencies outside the tree,
//! vendored sources and crates a `Cargo.lock`-less check resolves for itself before the
//! first snapshot that has a lock.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The value of a crate whose sources are byte for byte its published archive.
pub const PUBLISHED: &str = "published";

/// The key prefix of a registry crate in the toolchain measures.
pub const KEY_PREFIX: &str = "crate:";

/// The file cargo writes into a crate's directory once it is extracted; not part of
/// the archive.
const CARGO_OK: &str = ".cargo-ok";

/// Most files named in a `modified` value (the rest are counted).
const MAX_NAMED: usize = 5;

/// A registry package of a `Cargo.lock`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockedCrate {
    pub name: String,
    pub version: String,
    /// SHA-256 of the `.crate` archive, lowercase hex.
    pub checksum: String,
}

/// The registry packages of a `Cargo.lock` (`source` starting `registry+` or
/// `sparse+`, with a `checksum`); an unreadable or malformed lock gives none (cargo
/// refuses it too, and the check fails on its own).
#[must_use]
pub fn locked_crates(lock: &str) -> Vec<LockedCrate> {
    let Ok(v) = lock.parse::<toml::Table>() else {
        return Vec::new();
    };
    let Some(pkgs) = v.get("package").and_then(toml::Value::as_array) else {
        return Vec::new();
    };
    pkgs.iter()
        .filter_map(|p| {
            let s = |k: &str| p.get(k).and_then(toml::Value::as_str);
            let source = s("source")?;
            if !(source.starts_with("registry+") || source.starts_with("sparse+")) {
                return None;
            }
            Some(LockedCrate {
                name: s("name")?.to_string(),
                version: s("version")?.to_string(),
                checksum: s("checksum")?.to_ascii_lowercase(),
            })
        })
        .collect()
}

/// The registry measurement of one process (see the module doc): the crates' last
/// stat digests and values, so an unchanged crate costs a walk of `stat` calls.
#[derive(Debug)]
pub struct Registry {
    home: PathBuf,
    /// When the run began (this registry was made): an archive written since was
    /// fetched while the agent could write the registry.
    started: std::time::SystemTime,
    /// The keys of the crates t0's `Cargo.lock` named (set when t0 is measured): a
    /// crate the check fetches for that lock is checked against t0's checksum.
    t0_locked: Option<std::collections::HashSet<String>>,
    /// crate directory → (stat digest, value).
    seen: HashMap<PathBuf, (String, String)>,
}

impl Registry {
    /// The registry of `cargo_home` (`$CARGO_HOME`, else `~/.cargo`).
    #[must_use]
    pub fn new(cargo_home: PathBuf) -> Registry {
        Registry {
            home: cargo_home,
            started: std::time::SystemTime::now(),
            t0_locked: None,
            seen: HashMap::new(),
        }
    }

    /// The registry of the environment's `CARGO_HOME` (else `$HOME/.cargo`); `None`
    /// when neither is set.
    #[must_use]
    pub fn from_env() -> Option<Registry> {
        std::env::var_os("CARGO_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
            .map(Registry::new)
    }

    /// The measures of the crates `lock` (a `Cargo.lock`'s text) names that cargo has
    /// extracted: `crate:<name>@<version>` → value (module doc). `t0` is the run's
    /// reference measurement (`None` while taking it); a crate whose stat digest is
    /// t0's keeps t0's value, any other is compared with its archive. A crate not
    /// extracted yet is left out: the check downloads it itself.
    pub fn measure(
        &mut self,
        lock: &str,
        t0: Option<&BTreeMap<String, String>>,
    ) -> BTreeMap<String, String> {
        let crates = locked_crates(lock);
        let key_of = |c: &LockedCrate| format!("{KEY_PREFIX}{}@{}", c.name, c.version);
        if t0.is_none() {
            self.t0_locked = Some(crates.iter().map(key_of).collect());
        }
        if crates.is_empty() {
            return BTreeMap::new();
        }
        let indexes = index_dirs(&self.home.join("registry/src"));
        // (key, crate, directory, archive) of every extracted crate
        let mut found = Vec::new();
        for c in crates {
            let dir_name = format!("{}-{}", c.name, c.version);
            let key = key_of(&c);
            // A crate new since t0 (not in t0's lock; resumed, not measured at t0) is
            // measured from its archive alone too: one fetched during the run is
            // judged before the check extracts and compiles it.
            let new_since_t0 = t0.is_some()
                && self.t0_locked.as_ref().map_or_else(
                    || t0.is_some_and(|m| !m.contains_key(&key)),
                    |locked| !locked.contains(&key),
                );
            let Some(index) = indexes.iter().find(|i| {
                self.home
                    .join("registry/src")
                    .join(i)
                    .join(&dir_name)
                    .is_dir()
                    || (new_since_t0
                        && self
                            .home
                            .join("registry/cache")
                            .join(i)
                            .join(format!("{dir_name}.crate"))
                            .is_file())
            }) else {
                continue;
            };
            let dir = self.home.join("registry/src").join(index).join(&dir_name);
            let archive = self
                .home
                .join("registry/cache")
                .join(index)
                .join(format!("{dir_name}.crate"));
            found.push((key, c, dir, archive, new_since_t0));
        }
        // The stat walks are system calls on many small directories: spread over a
        // few threads (a project with 300 dependencies has some 15,000 files there).
        let dirs: Vec<&Path> = found.iter().map(|f| f.2.as_path()).collect();
        let sigs = stat_digests(&dirs);
        let mut out = BTreeMap::new();
        for ((key, c, dir, archive, new), sig) in found.into_iter().zip(sigs) {
            let reference = t0.map(|m| m.get(&key).map(String::as_str));
            if new {
                if let Some(why) = self.fetched_during_run(&archive) {
                    out.insert(key, format!("unverifiable: {why}"));
                    continue;
                }
            }
            // an archive older than the run, not extracted yet: the check extracts it
            if !dir.is_dir() {
                continue;
            }
            let value = self.value(&dir, &archive, &c, sig, reference);
            out.insert(key, value);
        }
        out
    }

    /// `reference`: `None` while taking t0; `Some(t0's value)` after.
    fn value(
        &mut self,
        dir: &Path,
        archive: &Path,
        c: &LockedCrate,
        (sig, settled): (String, bool),
        reference: Option<Option<&str>>,
    ) -> String {
        let same = format!("stat:{sig}");
        match reference {
            None => return same,
            Some(Some(r)) if r == same => return same,
            _ => {}
        }
        if let Some((s, v)) = self.seen.get(dir) {
            if *s == sig {
                return v.clone();
            }
        }
        let v = compare_with_archive(dir, archive, &c.checksum);
        if settled {
            self.seen.insert(dir.to_path_buf(), (sig, v.clone()));
        }
        v
    }

    /// Why `archive` cannot vouch for its crate when it was written after the run
    /// began: cargo checks an archive against the checksum of the registry's index
    /// cache, and both lie where the exec may write (a fresh review appended a version
    /// to the index cache, dropped an archive whose assertion macros expand to
    /// nothing, and moved `Cargo.lock` to it). Offline there is nothing else to check
    /// it against. `None` for an archive older than the run (or none yet).
    fn fetched_during_run(&self, archive: &Path) -> Option<String> {
        let m = std::fs::metadata(archive).ok()?;
        let written = std::time::UNIX_EPOCH
            + std::time::Duration::new(
                u64::try_from(m.ctime()).unwrap_or(0),
                u32::try_from(m.ctime_nsec()).unwrap_or(0),
            );
        (written >= self.started).then(|| {
            format!(
                "{} was fetched during the run into a registry cache the agent can write, and its checksum comes from the same cache: a dependency added or upgraded by the agent cannot be verified offline (review it; a new run started with --accept-rejected-tree takes it into its t0)",
                archive
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            )
        })
    }
}

/// True when a registry crate's measure `now` (`None`: no longer measured) is no
/// change from `t0`'s (`None`: not measured at t0): the same value, a crate dropped
/// from the lock or not extracted, or sources that are byte for byte the published
/// archive (an added dependency, or a crate cargo extracted again).
#[must_use]
pub fn unchanged(t0: Option<&str>, now: Option<&str>) -> bool {
    match now {
        None => true,
        Some(n) => n == PUBLISHED || t0 == Some(n),
    }
}

/// The registry's index directories (`index.crates.io-<hash>`, …), sorted.
fn index_dirs(src: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(src)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Every entry under `dir` (not following links), sorted by relative path, with its
/// `symlink_metadata`; `dir` itself first as `""`.
fn entries(dir: &Path) -> Vec<(String, std::io::Result<std::fs::Metadata>)> {
    let mut out = vec![(String::new(), std::fs::symlink_metadata(dir))];
    let mut stack = vec![String::new()];
    while let Some(rel) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(dir.join(&rel)) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let r = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            // fstatat on the open directory: no lookup of the whole path again
            let m = e.metadata();
            if m.as_ref().is_ok_and(std::fs::Metadata::is_dir) {
                stack.push(r.clone());
            }
            out.push((r, m));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// [`stat_digest`] of each of `dirs`, in order, computed by up to four threads.
fn stat_digests(dirs: &[&Path]) -> Vec<(String, bool)> {
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(4);
    if workers < 2 || dirs.len() < 8 {
        return dirs.iter().map(|d| stat_digest(d)).collect();
    }
    let chunk = dirs.len().div_ceil(workers);
    std::thread::scope(|s| {
        let handles: Vec<_> = dirs
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(|d| stat_digest(d)).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// blake3 (16 hex digits) of the stat data of every entry under `dir`, and whether
/// every entry had settled (no change within [`super::store::RACY_WINDOW`]; a digest
/// of entries still moving is not remembered).
fn stat_digest(dir: &Path) -> (String, bool) {
    let now = std::time::SystemTime::now();
    let mut settled = true;
    let mut h = blake3::Hasher::new();
    for (rel, m) in entries(dir) {
        h.update(rel.as_bytes());
        h.update(b"\0");
        match m {
            Ok(m) => {
                for v in [m.dev(), m.ino(), m.size(), u64::from(m.mode())] {
                    h.update(&v.to_le_bytes());
                }
                for v in [m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()] {
                    h.update(&v.to_le_bytes());
                }
                settled &= super::toolchain::settled_within(&m, now, super::store::RACY_WINDOW);
            }
            Err(e) => {
                h.update(e.to_string().as_bytes());
            }
        }
    }
    (h.finalize().to_hex()[..16].to_string(), settled)
}

/// The value of `dir` compared with `archive` (module doc).
fn compare_with_archive(dir: &Path, archive: &Path, checksum: &str) -> String {
    let published = match archive_files(archive, checksum) {
        Ok(f) => f,
        Err(why) => return format!("unverifiable: {why}"),
    };
    let mut extracted = BTreeMap::new();
    for (rel, m) in entries(dir) {
        let Ok(m) = m else {
            return format!("unverifiable: {rel} could not be statted");
        };
        if rel.is_empty() || m.is_dir() || rel == CARGO_OK {
            continue;
        }
        // a link or a special file is never what cargo extracted from an archive
        let digest = if m.is_file() {
            match std::fs::read(dir.join(&rel)) {
                Ok(b) => blake3::hash(&b).to_hex().to_string(),
                Err(e) => return format!("unverifiable: {rel}: {e}"),
            }
        } else {
            "not a regular file".to_string()
        };
        extracted.insert(rel, digest);
    }
    let mut differ: Vec<String> = Vec::new();
    for (rel, d) in &extracted {
        match published.get(rel) {
            Some(p) if p == d => {}
            Some(_) => differ.push(format!("{rel} changed")),
            None => differ.push(format!("{rel} added")),
        }
    }
    differ.extend(
        published
            .keys()
            .filter(|k| !extracted.contains_key(*k))
            .map(|k| format!("{k} removed")),
    );
    if differ.is_empty() {
        return PUBLISHED.to_string();
    }
    let mut h = blake3::Hasher::new();
    for (rel, d) in &extracted {
        h.update(rel.as_bytes());
        h.update(d.as_bytes());
    }
    let n = differ.len();
    differ.truncate(MAX_NAMED);
    let more = if n > MAX_NAMED {
        format!(" (+{} more)", n - MAX_NAMED)
    } else {
        String::new()
    };
    format!(
        "modified {}: {}{more}",
        &h.finalize().to_hex()[..16],
        differ.join(", ")
    )
}

/// The regular files of a `.crate` archive (gzip'd tar, every path under
/// `<name>-<version>/`) as relative path → blake3 hex, after checking the archive's
/// SHA-256 against `checksum`.
///
/// # Errors
/// A sentence: the archive is missing or unreadable, its checksum is not the lock's, or
/// it is not a valid gzip'd tar.
fn archive_files(archive: &Path, checksum: &str) -> Result<BTreeMap<String, String>, String> {
    use sha2::Digest;
    let bytes = std::fs::read(archive)
        .map_err(|e| format!("its archive {} cannot be read ({e})", archive.display()))?;
    let hex = crate::receipt::attest::hex(&sha2::Sha256::digest(&bytes));
    if hex != checksum {
        return Err(format!(
            "its archive {} is not the one Cargo.lock names (sha256 {hex}, expected {checksum})",
            archive.display()
        ));
    }
    let mut out = BTreeMap::new();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
    let bad = |e: std::io::Error| format!("its archive {} is unreadable ({e})", archive.display());
    for entry in tar.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        if entry.header().entry_type() != tar::EntryType::Regular {
            continue;
        }
        let path = entry.path().map_err(bad)?.into_owned();
        let rel: PathBuf = path.components().skip(1).collect();
        let mut buf = Vec::new();
        entry.read_to_end(&mut buf).map_err(bad)?;
        out.insert(
            rel.to_string_lossy().into_owned(),
            blake3::hash(&buf).to_hex().to_string(),
        );
    }
    Ok(out)
}

/// Writes a crate into `cargo_home` as cargo leaves it after a download: the archive
/// under `registry/cache/<index>/`, its sources extracted under `registry/src/<index>/`
/// with `.cargo-ok`. Returns the archive's SHA-256 (lowercase hex), `Cargo.lock`'s
/// `checksum`. For tests and benches that need a registry without the network.
///
/// # Errors
/// Any I/O error writing the files.
pub fn write_crate(
    cargo_home: &Path,
    index: &str,
    name: &str,
    version: &str,
    files: &[(&str, &str)],
) -> std::io::Result<String> {
    use sha2::Digest;
    let top = format!("{name}-{version}");
    let src = cargo_home.join("registry/src").join(index).join(&top);
    let cache = cargo_home.join("registry/cache").join(index);
    std::fs::create_dir_all(&cache)?;
    let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::default(),
    ));
    for (rel, body) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, format!("{top}/{rel}"), body.as_bytes())?;
        let p = src.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&p, body)?;
    }
    std::fs::write(src.join(CARGO_OK), "{\"v\":1}")?;
    let archive = b.into_inner()?.finish()?;
    std::fs::write(cache.join(format!("{top}.crate")), &archive)?;
    Ok(crate::receipt::attest::hex(&sha2::Sha256::digest(&archive)))
}

#[cfg(test)]
mod tests;
