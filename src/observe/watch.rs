//! Watching the clean room while the check runs.
//!
//! The clean room is scanned before and after the check (SPEC §3.9), but a check can
//! rewrite the code under test and put it back before it ends: a `build.rs` that
//! patches `src/lib.rs` while cargo builds and a last test that restores its content
//! and mtime, a node `aaa-setup.test.js` that rewrites `calc.js` and a `zzz-teardown`
//! that restores it. The before/after comparison sees nothing. So loopexec watches the
//! clean room with inotify from the end of the sync to the end of the check: one watch
//! on every directory of the judged tree (linked dependency directories and excluded
//! caches are not part of it and are not watched). Any modification, attribute change,
//! move or deletion of a file or directory of the judged tree is recorded in
//! `check_finished.clean_room.touched` and is `hermeticity_violation` naming it, even
//! when it was restored ([`crate::detect::scope::room_writes`]). New files (build
//! outputs, `__pycache__`) are tolerated, as by the scan.
//!
//! Fail closed: when the watch cannot be set up (inotify's watch or instance limit) or
//! the kernel dropped events (queue overflow), `clean_room.watch_error` says so, and a
//! green check is `objective_unverified` — the guard could not measure.

use inotify::{EventMask, Inotify, WatchMask};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// What the watch saw: judged-tree path → what happened to it (`modified`,
/// `attributes`, `moved away`, `replaced`, `deleted`), and the error that kept it from
/// seeing everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchReport {
    pub touched: BTreeMap<String, String>,
    pub error: Option<String>,
}

/// One raw event: `(directory, name, mask)`.
type Raw = (String, Option<String>, EventMask);

/// A running watch over a clean room.
pub struct RoomWatch {
    stop: Arc<Stop>,
    thread: Option<JoinHandle<Result<Vec<Raw>, String>>>,
    files: Arc<BTreeMap<String, crate::observe::store::FileEntry>>,
    dirs: BTreeSet<String>,
    error: Option<String>,
}

/// The inotify events that change a file of the judged tree.
fn mask() -> WatchMask {
    WatchMask::MODIFY
        | WatchMask::ATTRIB
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
        | WatchMask::DONT_FOLLOW
        | WatchMask::ONLYDIR
}

/// The directories holding `files` (root-relative; `""` is the root), every ancestor
/// included.
#[must_use]
pub fn directories_of<'a>(files: impl IntoIterator<Item = &'a String>) -> BTreeSet<String> {
    let mut dirs = BTreeSet::from([String::new()]);
    for f in files {
        let mut d = f.as_str();
        while let Some((parent, _)) = d.rsplit_once('/') {
            if !dirs.insert(parent.to_string()) {
                break;
            }
            d = parent;
        }
    }
    dirs
}

/// Adds a watch on each directory of `dirs` (root-relative, `""` the root) to `ino`:
/// watch descriptor → directory, or the error and how many were added before it.
fn watch_dirs<'a>(
    ino: &Inotify,
    root: &Path,
    dirs: impl IntoIterator<Item = &'a String>,
) -> Result<HashMap<i32, String>, (std::io::Error, usize)> {
    let mut by_wd = HashMap::new();
    for d in dirs {
        let path = if d.is_empty() {
            root.to_path_buf()
        } else {
            root.join(d)
        };
        let wd = ino
            .watches()
            .add(&path, mask())
            .map_err(|e| (e, by_wd.len()))?;
        by_wd.insert(wd.get_watch_descriptor_id(), d.clone());
    }
    Ok(by_wd)
}

/// The message for a watch that could not be added (`ENOSPC`: the per-user watch limit).
fn setup_error(e: &std::io::Error, added: usize, total: usize) -> String {
    // The global limit, and the one of the user namespace loopexec runs in (a
    // container's can be lower).
    let limit = |global: &str, userns: &str| {
        let read = |p: String| {
            std::fs::read_to_string(p).map_or_else(|_| "unknown".into(), |s| s.trim().to_string())
        };
        format!(
            "fs.inotify.{global} = {}, user.{userns} = {}",
            read(format!("/proc/sys/fs/inotify/{global}")),
            read(format!("/proc/sys/user/{userns}"))
        )
    };
    match e.raw_os_error() {
        Some(libc::ENOSPC) => format!(
            "the clean room could not be watched during the check: inotify's watch limit was reached after {added} of {total} directories ({}); raise it, e.g. `sudo sysctl fs.inotify.max_user_watches=524288`",
            limit("max_user_watches", "max_inotify_watches")
        ),
        Some(libc::EMFILE) => format!(
            "the clean room could not be watched during the check: no inotify instance is left ({}); raise it, e.g. `sudo sysctl fs.inotify.max_user_instances=1024`, or end processes holding instances",
            limit("max_user_instances", "max_inotify_instances")
        ),
        _ => format!("the clean room could not be watched during the check: {e}"),
    }
}

impl RoomWatch {
    /// Starts watching the clean room at `root`, whose judged tree holds `files`
    /// (root-relative). Never fails: a watch that cannot be set up is reported by
    /// [`RoomWatch::finish`] (fail closed).
    #[must_use]
    pub fn start(
        root: &Path,
        files: Arc<BTreeMap<String, crate::observe::store::FileEntry>>,
    ) -> RoomWatch {
        let dirs = directories_of(files.keys());
        let mut w = RoomWatch {
            stop: Arc::new(Stop::new()),
            thread: None,
            files,
            dirs,
            error: None,
        };
        let mut ino = match Inotify::init() {
            Ok(i) => i,
            Err(e) => {
                w.error = Some(setup_error(&e, 0, w.dirs.len()));
                return w;
            }
        };
        let by_wd = match watch_dirs(&ino, root, &w.dirs) {
            Ok(by_wd) => by_wd,
            Err((e, added)) => {
                w.error = Some(setup_error(&e, added, w.dirs.len()));
                return w;
            }
        };
        let stop = w.stop.clone();
        w.thread = Some(std::thread::spawn(move || {
            let raw = drain(&mut ino, &by_wd, &stop);
            close_in_background(ino);
            raw
        }));
        w
    }

    /// A watch that could not be set up: `finish` reports `error`.
    #[must_use]
    pub fn failed(error: String) -> RoomWatch {
        RoomWatch {
            stop: Arc::new(Stop::new()),
            thread: None,
            files: Arc::default(),
            dirs: BTreeSet::new(),
            error: Some(error),
        }
    }

    /// Stops the watch and reports what happened to the judged tree's files.
    #[must_use]
    pub fn finish(mut self) -> WatchReport {
        self.stop.set();
        let raw = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Ok(raw))) => raw,
            Some(Ok(Err(e))) => {
                return WatchReport {
                    touched: BTreeMap::new(),
                    error: Some(e),
                }
            }
            Some(Err(_)) => {
                return WatchReport {
                    touched: BTreeMap::new(),
                    error: Some("the clean room's watch thread panicked".into()),
                }
            }
            None => Vec::new(),
        };
        WatchReport {
            touched: judge(&raw, &|p| self.files.contains_key(p), &self.dirs),
            error: self.error.take(),
        }
    }
}

impl Drop for RoomWatch {
    fn drop(&mut self) {
        // A check step that failed before `finish` must not leave the thread polling.
        self.stop.set();
    }
}

/// Closes an inotify instance (an [`Inotify`], or its bare descriptor) on a thread
/// of its own. Closing one waits for the kernel to retire its watches (an RCU grace
/// period: 5–20 ms measured), which a loop that watches every iteration must not wait
/// for. The instance's events are no longer read; its descriptor is gone when the
/// closer thread gets to it.
pub(crate) fn close_in_background<T: Send + 'static>(ino: T) {
    use std::sync::mpsc::{channel, Sender};
    use std::sync::{Mutex, OnceLock};
    type Closing = Box<dyn Send>;
    static CLOSER: OnceLock<Option<Mutex<Sender<Closing>>>> = OnceLock::new();
    let closer = CLOSER.get_or_init(|| {
        let (tx, rx) = channel::<Closing>();
        std::thread::Builder::new()
            .name("inotify-closer".into())
            .spawn(move || {
                for ino in rx {
                    drop(ino);
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let boxed: Closing = Box::new(ino);
    let sent = closer.as_ref().map(|tx| {
        tx.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .send(boxed)
    });
    // without the thread (it could not be started) or its channel, close here
    if let Some(Err(e)) = sent {
        drop(e.0);
    }
}

/// From how many files a [`QuietWatch`] is worth starting in place of the walk it
/// would save: an inotify instance costs its creation, a watch per directory and, when
/// closed, a wait for an RCU grace period (on a thread of its own, or at exit at the
/// latest) — more than a stat walk of a few hundred files (50 trivial iterations over
/// 200 files: 627 ms with the watches, 452 ms without; SPEC §14).
pub const QUIET_WATCH_FROM_FILES: usize = 1000;

/// A watch that answers one question: did anything change under a tree's directories
/// since it started? No thread: the kernel queues the events, and [`QuietWatch::quiet`]
/// reads them without blocking. Used to skip a stat walk of the agent's tree after a
/// red check run in the clean room (SPEC §14): only a quiet watch lets the last scan
/// stand; any event, a queue overflow or a read error means "walk again".
pub struct QuietWatch {
    ino: Option<Inotify>,
}

impl Drop for QuietWatch {
    fn drop(&mut self) {
        if let Some(ino) = self.ino.take() {
            close_in_background(ino);
        }
    }
}

impl std::fmt::Debug for QuietWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QuietWatch")
    }
}

impl QuietWatch {
    /// Watches every directory of `dirs` (root-relative, `""` the root; as listed by
    /// the scan, [`crate::observe::store::Scanned::dirs`]). `None` when a watch cannot
    /// be added (limits, a directory that is a symlink or gone): the caller walks.
    #[must_use]
    pub fn start<'a>(
        root: &Path,
        dirs: impl IntoIterator<Item = &'a String>,
    ) -> Option<QuietWatch> {
        let w = QuietWatch {
            ino: Some(Inotify::init().ok()?),
        };
        watch_dirs(w.ino.as_ref()?, root, dirs).ok()?;
        Some(w)
    }

    /// True when no event of any kind was queued since [`QuietWatch::start`] (and the
    /// queue never overflowed). Reads (and so drops) what was queued.
    #[must_use]
    pub fn quiet(&mut self) -> bool {
        let mut buf = [0u8; 4096];
        let Some(ino) = self.ino.as_mut() else {
            return false;
        };
        match ino.read_events(&mut buf) {
            Ok(mut events) => events.next().is_none(),
            Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
        }
    }
}

/// Starts watching the clean room at `root` (`None`: the check runs in place) for the
/// judged `tree` of `store`. A tree that cannot be listed is a watch that cannot be
/// set up (fail closed).
#[must_use]
pub fn for_check(
    root: Option<&Path>,
    store: Option<&crate::observe::store::SnapshotStore>,
    tree: Option<&str>,
) -> Option<RoomWatch> {
    let root = root?;
    let tree = tree?;
    match store.map(|s| s.entries_shared(tree)) {
        Some(Ok(entries)) => Some(RoomWatch::start(root, entries)),
        Some(Err(e)) => Some(RoomWatch::failed(format!(
            "the clean room could not be watched during the check: its tree could not be listed: {e}"
        ))),
        None => Some(RoomWatch::failed(
            "the clean room could not be watched during the check: no snapshot store".into(),
        )),
    }
}

/// Writes what the watch saw into the check's clean-room record.
pub fn record(report: Option<WatchReport>, rec: &mut crate::receipt::events::CleanRoomRecord) {
    if let Some(r) = report {
        rec.touched = r.touched;
        rec.watch_error = r.error;
    }
}

/// The stop signal of a watch thread: a flag, and an eventfd that wakes the thread's
/// `poll` at once (so ending a watch costs no polling interval).
struct Stop {
    flag: AtomicBool,
    wake: Option<std::os::fd::OwnedFd>,
}

impl Stop {
    fn new() -> Stop {
        // SAFETY: eventfd takes no pointers; a valid descriptor is owned from here on.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        let wake = (fd >= 0).then(|| {
            // SAFETY: `fd` was just returned by eventfd and is owned by nothing else.
            unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) }
        });
        Stop {
            flag: AtomicBool::new(false),
            wake,
        }
    }

    fn set(&self) {
        self.flag.store(true, Ordering::SeqCst);
        if let Some(fd) = &self.wake {
            let one = 1u64.to_ne_bytes();
            // SAFETY: writes 8 bytes we own to an eventfd we own. Should the write fail,
            // the thread still sees the flag at its next timeout.
            let written = unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
            debug_assert!(written == 8 || written == -1);
        }
    }

    fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

/// Reads events until told to stop, then drains what is queued.
fn drain(ino: &mut Inotify, by_wd: &HashMap<i32, String>, stop: &Stop) -> Result<Vec<Raw>, String> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut out = Vec::new();
    loop {
        let stopping = stop.is_set();
        let wake = stop.wake.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        let mut pfd = [
            libc::pollfd {
                fd: ino.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: wake,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: poll reads two pollfds we own; poll ignores a negative descriptor.
        let ready = unsafe { libc::poll(pfd.as_mut_ptr(), 2, if stopping { 0 } else { 500 }) };
        if ready > 0 && pfd[0].revents != 0 {
            match ino.read_events(&mut buf) {
                Ok(events) => {
                    for e in events {
                        if e.mask.contains(EventMask::Q_OVERFLOW) {
                            return Err("the kernel dropped events of the clean room's watch (inotify queue overflow; raise fs.inotify.max_queued_events): what the check wrote cannot be known".into());
                        }
                        let dir = by_wd
                            .get(&e.wd.get_watch_descriptor_id())
                            .cloned()
                            .unwrap_or_default();
                        let name = e.name.map(|n| n.to_string_lossy().into_owned());
                        out.push((dir, name, e.mask));
                    }
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(format!("reading the clean room's watch: {e}")),
            }
        } else if ready < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(format!("waiting on the clean room's watch: {e}"));
            }
        }
        if stopping {
            return Ok(out);
        }
    }
}

/// What the raw events did to the judged tree: `files` and `dirs` are its files and
/// directories. Events on paths outside it (new build outputs, caches) are dropped.
#[must_use]
pub fn judge(
    raw: &[Raw],
    files: &dyn Fn(&str) -> bool,
    dirs: &BTreeSet<String>,
) -> BTreeMap<String, String> {
    let mut what: BTreeMap<String, BTreeSet<&'static str>> = BTreeMap::new();
    for (dir, name, m) in raw {
        let path = match name {
            Some(n) if dir.is_empty() => n.clone(),
            Some(n) => format!("{dir}/{n}"),
            None => dir.clone(),
        };
        let judged = files(&path) || (dirs.contains(&path) && !path.is_empty());
        let self_event = name.is_none()
            && (m.contains(EventMask::DELETE_SELF) || m.contains(EventMask::MOVE_SELF));
        if !judged && !self_event {
            continue;
        }
        let kind = if m.contains(EventMask::MODIFY) {
            "modified"
        } else if m.contains(EventMask::ATTRIB) {
            "attributes"
        } else if m.contains(EventMask::MOVED_FROM) || m.contains(EventMask::MOVE_SELF) {
            "moved away"
        } else if m.contains(EventMask::MOVED_TO) || m.contains(EventMask::CREATE) {
            "replaced"
        } else if m.contains(EventMask::DELETE) || m.contains(EventMask::DELETE_SELF) {
            "deleted"
        } else {
            continue;
        };
        let key = if path.is_empty() {
            ".".to_string()
        } else {
            path
        };
        what.entry(key).or_default().insert(kind);
    }
    what.into_iter()
        .map(|(p, k)| (p, k.into_iter().collect::<Vec<_>>().join(", ")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn directories_of_table() {
        let files = [
            "a.py".to_string(),
            "src/lib.rs".to_string(),
            "src/x/y.rs".to_string(),
        ];
        assert_eq!(directories_of(&files), set(&["", "src", "src/x"]));
    }

    #[test]
    fn judge_table() {
        let files = set(&["calc.py", "src/lib.rs"]);
        let dirs = directories_of(&files);
        // (dir, name, mask, expected entry)
        type Row<'a> = (
            &'a str,
            Option<&'a str>,
            EventMask,
            Option<(&'a str, &'a str)>,
        );
        let table: &[Row] = &[
            (
                "src",
                Some("lib.rs"),
                EventMask::MODIFY,
                Some(("src/lib.rs", "modified")),
            ),
            (
                "",
                Some("calc.py"),
                EventMask::ATTRIB,
                Some(("calc.py", "attributes")),
            ),
            (
                "",
                Some("calc.py"),
                EventMask::DELETE,
                Some(("calc.py", "deleted")),
            ),
            (
                "",
                Some("calc.py"),
                EventMask::MOVED_FROM,
                Some(("calc.py", "moved away")),
            ),
            (
                "",
                Some("calc.py"),
                EventMask::MOVED_TO,
                Some(("calc.py", "replaced")),
            ),
            (
                "",
                Some("src"),
                EventMask::DELETE | EventMask::ISDIR,
                Some(("src", "deleted")),
            ),
            // New files and directories are build outputs: tolerated.
            (
                "",
                Some("__pycache__"),
                EventMask::CREATE | EventMask::ISDIR,
                None,
            ),
            ("", Some("Cargo.lock"), EventMask::CREATE, None),
            ("", Some("Cargo.lock"), EventMask::MODIFY, None),
        ];
        for (dir, name, m, want) in table {
            let raw = vec![((*dir).to_string(), name.map(str::to_string), *m)];
            let got = judge(&raw, &|p| files.contains(p), &dirs);
            let want: BTreeMap<String, String> = want
                .iter()
                .map(|(p, k)| ((*p).to_string(), (*k).to_string()))
                .collect();
            assert_eq!(got, want, "{dir} {name:?} {m:?}");
        }
    }

    #[test]
    fn a_rewrite_restored_before_the_end_is_seen() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("src")).unwrap();
        let lib = tmp.path().join("src/lib.rs");
        std::fs::write(&lib, "bug").unwrap();
        std::fs::write(tmp.path().join("calc.py"), "x").unwrap();
        let files: BTreeMap<String, crate::observe::store::FileEntry> = ["src/lib.rs", "calc.py"]
            .into_iter()
            .map(|p| (p.to_string(), crate::observe::store::FileEntry::default()))
            .collect();
        let w = RoomWatch::start(tmp.path(), Arc::new(files));
        let before = std::fs::metadata(&lib).unwrap().modified().unwrap();
        std::fs::write(&lib, "fixed").unwrap();
        std::fs::write(&lib, "bug").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&lib)
            .unwrap()
            .set_modified(before)
            .unwrap();
        // Only setting the mtime reads as a modification; a mode change as attributes.
        std::fs::set_permissions(
            tmp.path().join("calc.py"),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
        // A new file (a build output) is no change of the judged tree.
        std::fs::write(tmp.path().join("out.txt"), "new").unwrap();
        let r = w.finish();
        assert_eq!(r.error, None);
        assert_eq!(
            r.touched,
            BTreeMap::from([
                ("calc.py".to_string(), "attributes".to_string()),
                ("src/lib.rs".to_string(), "modified".to_string())
            ])
        );
    }

    #[test]
    fn a_quiet_watch_sees_any_change_in_any_directory_even_an_empty_one() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("a/empty")).unwrap();
        std::fs::write(d.path().join("a/f.txt"), "x").unwrap();
        let dirs = [String::new(), "a".to_string(), "a/empty".to_string()];
        let mut w = QuietWatch::start(d.path(), &dirs).expect("watch");
        assert!(w.quiet(), "nothing changed");
        type Change = fn(&Path);
        let changes: &[(&str, Change)] = &[
            ("a file in an empty directory", |p| {
                std::fs::write(p.join("a/empty/new.py"), "").unwrap();
            }),
            ("a rewrite", |p| {
                std::fs::write(p.join("a/f.txt"), "y").unwrap()
            }),
            ("a chmod", |p| {
                std::fs::set_permissions(
                    p.join("a/f.txt"),
                    std::os::unix::fs::PermissionsExt::from_mode(0o755),
                )
                .unwrap();
            }),
            ("a removal", |p| {
                std::fs::remove_file(p.join("a/f.txt")).unwrap()
            }),
            ("a file at the root", |p| {
                std::fs::write(p.join("top"), "").unwrap()
            }),
        ];
        for (what, change) in changes {
            let mut w = QuietWatch::start(d.path(), &dirs).expect("watch");
            change(d.path());
            assert!(!w.quiet(), "{what} was not seen");
        }
        assert!(
            QuietWatch::start(d.path(), &["gone".to_string()]).is_none(),
            "a directory that cannot be watched gives no watch"
        );
    }

    #[test]
    fn a_watch_limit_is_named_with_the_sysctl() {
        let e = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let msg = setup_error(&e, 3, 10);
        assert!(msg.contains("fs.inotify.max_user_watches"), "{msg}");
        assert!(msg.contains("3 of 10"), "{msg}");
    }
}
