//! The snapshot store's objects, written and read in-process.
//!
//! A snapshot used to cost five git processes (`hash-object`, `update-index
//! --index-info` into a temporary index, `write-tree`, `commit-tree`, `update-ref`) and
//! every guard that read a blob, listed a tree or compared two trees another one. This
//! module writes and reads git's loose object format itself: an object is
//! `zlib("<kind> <len>\0" + body)` at `objects/<2 hex>/<38 hex>`, named by the SHA-1 of
//! the uncompressed bytes, so the store stays an ordinary bare repository that `git
//! cat-file`, `ls-tree`, `diff-tree` and `fsck` read as before.
//!
//! Why not a library: the `gix` object database (gix-odb with gix-pack, gix-features,
//! gix-object …) adds dozens of crates and minutes of compile time for the four
//! operations needed here (hash, deflate, inflate, rename), and a persistent `git
//! fast-import`/`mktree --batch` process still costs a pipe round trip per tree and a
//! pack per checkpoint. The format is small and fixed (git's `Documentation/technical`,
//! "loose objects"); `sha1` and `flate2` are the only dependencies.
//!
//! Invariants:
//! * An object read is verified: its SHA-1 must equal its name and its header must
//!   match its body, else it is not returned (a corrupted or forged object reads as
//!   missing, never as content).
//! * Objects that are not loose (someone ran `git gc` in the store) are read through
//!   `git cat-file` by the callers in [`crate::observe::git`], which fall back when
//!   [`Odb::read`] finds nothing.
//! * Writes go to a temporary file in the object's directory and are renamed into
//!   place; an object that exists already is not written again (same name, same
//!   bytes).

use sha1::{Digest, Sha1};
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A SHA-1 object id (20 bytes).
pub type Oid = [u8; 20];

/// Hex of an object id (40 lowercase characters).
#[must_use]
pub fn to_hex(oid: &Oid) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(40);
    for b in oid {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 15)]));
    }
    s
}

/// The object id of a 40-character hex string; `None` for anything else.
#[must_use]
pub fn from_hex(s: &str) -> Option<Oid> {
    let b = s.as_bytes();
    if b.len() != 40 {
        return None;
    }
    let nib = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let mut out = [0u8; 20];
    for (i, o) in out.iter_mut().enumerate() {
        *o = (nib(b[2 * i])? << 4) | nib(b[2 * i + 1])?;
    }
    Some(out)
}

/// The id git gives an object of `kind` (`blob`, `tree`, `commit`) holding `body`.
#[must_use]
pub fn object_id(kind: &str, body: &[u8]) -> Oid {
    let mut h = Sha1::new();
    h.update(format!("{kind} {}\0", body.len()).as_bytes());
    h.update(body);
    h.finalize().into()
}

/// The loose objects of one store (`<git dir>/objects`). Cheap to clone; clones share
/// the set of objects known to exist.
#[derive(Debug, Clone)]
pub struct Odb {
    objects: PathBuf,
    known: Arc<Mutex<HashSet<Oid>>>,
    /// Fan-out directories (`objects/xx`, by first byte) this store has made or
    /// found: each costs its `mkdir` once, not once per object.
    fanout: Arc<[AtomicBool; 256]>,
}

impl Odb {
    /// The object database of the bare repository at `git_dir`.
    #[must_use]
    pub fn new(git_dir: &Path) -> Odb {
        Odb {
            objects: git_dir.join("objects"),
            known: Arc::new(Mutex::new(HashSet::new())),
            fanout: Arc::new(std::array::from_fn(|_| AtomicBool::new(false))),
        }
    }

    fn path_of(&self, oid: &Oid) -> PathBuf {
        let hex = to_hex(oid);
        self.objects.join(&hex[..2]).join(&hex[2..])
    }

    fn is_known(&self, oid: &Oid) -> bool {
        self.known.lock().is_ok_and(|k| k.contains(oid))
    }

    fn remember(&self, oid: Oid) {
        if let Ok(mut k) = self.known.lock() {
            k.insert(oid);
        }
    }

    /// Writes an object of `kind` holding `body` (unless it exists) and returns its id.
    ///
    /// # Errors
    /// The object's directory or temporary file cannot be written.
    pub fn write(&self, kind: &str, body: &[u8]) -> std::io::Result<Oid> {
        let oid = object_id(kind, body);
        if self.is_known(&oid) {
            return Ok(oid);
        }
        let path = self.path_of(&oid);
        if path.is_file() {
            self.remember(oid);
            return Ok(oid);
        }
        let dir = path.parent().unwrap_or(&self.objects);
        let made = &self.fanout[usize::from(oid[0])];
        if !made.load(Ordering::Relaxed) {
            std::fs::create_dir_all(dir)?;
            made.store(true, Ordering::Relaxed);
        }
        let tmp = tempfile::Builder::new().prefix("tmp_obj_").tempfile_in(dir);
        let mut tmp = match tmp {
            // the directory was removed since: made again
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(dir)?;
                tempfile::Builder::new()
                    .prefix("tmp_obj_")
                    .tempfile_in(dir)?
            }
            other => other?,
        };
        {
            let mut z = flate2::write::ZlibEncoder::new(&mut tmp, flate2::Compression::fast());
            z.write_all(format!("{kind} {}\0", body.len()).as_bytes())?;
            z.write_all(body)?;
            z.finish()?;
        }
        let mut perm = tmp.as_file().metadata()?.permissions();
        perm.set_readonly(true);
        tmp.as_file().set_permissions(perm)?;
        // Another writer may have put the same object in place meanwhile: same bytes.
        match tmp.persist_noclobber(&path) {
            Ok(_) => {}
            Err(e) if path.is_file() => drop(e),
            Err(e) => return Err(e.error),
        }
        self.remember(oid);
        Ok(oid)
    }

    /// Reads the loose object `oid`: `(kind, body)`, or `None` when it is not a loose
    /// object of this store or does not verify (see the module doc).
    #[must_use]
    pub fn read(&self, oid: &Oid) -> Option<(String, Vec<u8>)> {
        if let Some(hit) = verified_cache().get(&self.objects, oid) {
            return Some(hit);
        }
        let compressed = std::fs::read(self.path_of(oid)).ok()?;
        let mut raw = Vec::with_capacity(compressed.len() * 3);
        flate2::read::ZlibDecoder::new(compressed.as_slice())
            .read_to_end(&mut raw)
            .ok()?;
        let nul = raw.iter().position(|b| *b == 0)?;
        let header = std::str::from_utf8(&raw[..nul]).ok()?;
        let (kind, len) = header.split_once(' ')?;
        let len: usize = len.parse().ok()?;
        if raw.len() - nul - 1 != len {
            return None;
        }
        let id: Oid = Sha1::digest(&raw).into();
        if id != *oid {
            return None;
        }
        self.remember(*oid);
        let kind = kind.to_string();
        raw.drain(..=nul);
        if kind != "blob" {
            verified_cache().put(&self.objects, *oid, &kind, &raw);
        }
        Some((kind, raw))
    }
}

/// Trees and commits already read and verified in this process, by object directory
/// and id: a loop compares t0's tree with each iteration's, so the same few trees
/// would otherwise be inflated and hashed again every iteration.
///
/// An entry is content whose SHA-1 was checked against its name, so it is what the
/// object is (an object file rewritten later cannot change it). Blobs are not kept
/// (they can be large and are read once). Bounded by [`VerifiedCache::LIMIT`] bytes of
/// bodies; past it the cache is emptied and refills.
#[derive(Default)]
struct VerifiedCache {
    map: Mutex<VerifiedMap>,
}

/// Bytes of bodies held, and the objects by (object directory, id).
type VerifiedMap = (usize, HashMap<(PathBuf, Oid), Verified>);

/// A verified object: its kind and body.
type Verified = (String, Arc<[u8]>);

impl VerifiedCache {
    /// Most bytes of object bodies kept (a 20,000-file repository's trees are ~1 MB).
    const LIMIT: usize = 64 << 20;

    fn get(&self, objects: &Path, oid: &Oid) -> Option<(String, Vec<u8>)> {
        let m = self.map.lock().ok()?;
        m.1.get(&(objects.to_path_buf(), *oid))
            .map(|(k, b)| (k.clone(), b.to_vec()))
    }

    fn put(&self, objects: &Path, oid: Oid, kind: &str, body: &[u8]) {
        let Ok(mut m) = self.map.lock() else { return };
        if m.0 + body.len() > Self::LIMIT {
            m.1.clear();
            m.0 = 0;
        }
        m.0 += body.len();
        m.1.insert(
            (objects.to_path_buf(), oid),
            (kind.to_string(), Arc::from(body)),
        );
    }
}

fn verified_cache() -> &'static VerifiedCache {
    static C: std::sync::OnceLock<VerifiedCache> = std::sync::OnceLock::new();
    C.get_or_init(VerifiedCache::default)
}

/// One entry of a tree object: mode as git writes it in trees (`100644`, `100755`,
/// `120000`, `40000`), name, id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawEntry {
    pub mode: String,
    pub name: String,
    pub oid: Oid,
}

impl RawEntry {
    /// True for a subtree.
    #[must_use]
    pub fn is_tree(&self) -> bool {
        self.mode == "40000"
    }
}

/// The body of a tree object holding `entries`, sorted as git sorts them (by name,
/// a subtree compared as if its name ended in `/`).
#[must_use]
pub fn encode_tree(entries: &mut [RawEntry]) -> Vec<u8> {
    entries.sort_by(|a, b| {
        let ka = a
            .name
            .as_bytes()
            .iter()
            .chain(if a.is_tree() { &b"/"[..] } else { &[] });
        let kb = b
            .name
            .as_bytes()
            .iter()
            .chain(if b.is_tree() { &b"/"[..] } else { &[] });
        ka.cmp(kb)
    });
    let mut out = Vec::with_capacity(entries.len() * 48);
    for e in entries.iter() {
        out.extend_from_slice(e.mode.as_bytes());
        out.push(b' ');
        out.extend_from_slice(e.name.as_bytes());
        out.push(0);
        out.extend_from_slice(&e.oid);
    }
    out
}

/// The entries of a tree object's body; `None` when it is malformed.
#[must_use]
pub fn decode_tree(body: &[u8]) -> Option<Vec<RawEntry>> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let sp = rest.iter().position(|b| *b == b' ')?;
        let nul = rest.iter().position(|b| *b == 0)?;
        if nul < sp || rest.len() < nul + 21 {
            return None;
        }
        let mode = std::str::from_utf8(&rest[..sp]).ok()?.to_string();
        let name = String::from_utf8_lossy(&rest[sp + 1..nul]).into_owned();
        let oid: Oid = rest[nul + 1..nul + 21].try_into().ok()?;
        out.push(RawEntry { mode, name, oid });
        rest = &rest[nul + 21..];
    }
    Some(out)
}

/// The body of a snapshot commit of `tree` (no parent, author and committer loopexec
/// at the epoch): byte for byte what `git commit-tree` wrote for the same input, so
/// snapshot ids did not change when the store stopped running git to write them.
#[must_use]
pub fn encode_commit(tree: &str, message: &str) -> Vec<u8> {
    let who = "loopexec <loopexec@localhost> 0 +0000";
    format!("tree {tree}\nauthor {who}\ncommitter {who}\n\n{message}\n").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_rejects_bad_input() {
        let cases: &[(&str, bool)] = &[
            ("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", true),
            ("E69DE29BB2D1D6434B8B29AE775AD8C2E48C5391", true),
            ("e69de29bb2d1d6434b8b29ae775ad8c2e48c539", false),
            ("g69de29bb2d1d6434b8b29ae775ad8c2e48c5391", false),
            ("HEAD", false),
        ];
        for (s, ok) in cases {
            let parsed = from_hex(s);
            assert_eq!(parsed.is_some(), *ok, "{s}");
            if let Some(o) = parsed {
                assert_eq!(to_hex(&o), s.to_ascii_lowercase());
            }
        }
    }

    #[test]
    fn ids_are_gits() {
        // `git hash-object` of the empty blob and of "hello\n"; `git mktree` of nothing.
        let cases: &[(&str, &[u8], &str)] = &[
            ("blob", b"", "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"),
            (
                "blob",
                b"hello\n",
                "ce013625030ba8dba906f756967f9e9ca394464a",
            ),
            ("tree", b"", "4b825dc642cb6eb9a060e54bf8d69288fbee4904"),
        ];
        for (kind, body, want) in cases {
            assert_eq!(to_hex(&object_id(kind, body)), *want);
        }
    }

    #[test]
    fn trees_sort_subtrees_as_if_they_ended_in_a_slash() {
        let z = [0u8; 20];
        let mut entries = vec![
            RawEntry {
                mode: "40000".into(),
                name: "a".into(),
                oid: z,
            },
            RawEntry {
                mode: "100644".into(),
                name: "a.txt".into(),
                oid: z,
            },
            RawEntry {
                mode: "100644".into(),
                name: "a0".into(),
                oid: z,
            },
        ];
        let body = encode_tree(&mut entries);
        let names: Vec<String> = decode_tree(&body)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["a.txt", "a", "a0"]);
    }

    #[test]
    fn written_objects_read_back_and_corrupt_ones_read_as_missing() {
        let tmp = tempfile::tempdir().unwrap();
        let odb = Odb::new(tmp.path());
        let oid = odb.write("blob", b"hello\n").unwrap();
        assert_eq!(odb.write("blob", b"hello\n").unwrap(), oid);
        let fresh = Odb::new(tmp.path());
        assert_eq!(fresh.read(&oid), Some(("blob".into(), b"hello\n".to_vec())));
        // Another object's bytes under this name: the name does not verify.
        let other = object_id("blob", b"other\n");
        let path = fresh.path_of(&other);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::copy(fresh.path_of(&oid), &path).unwrap();
        assert_eq!(fresh.read(&other), None);
        assert_eq!(fresh.read(&object_id("blob", b"absent")), None);
    }
}
