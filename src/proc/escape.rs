//! Processes that left a step's process group: found, ended and recorded.
//!
//! A step runs in its own process group, and ending the group ends every process that
//! stayed in it. A process can leave: `setsid`, a double fork, `setpgid`. loopexec finds
//! those two ways, both needing no privilege:
//! * every step's environment carries a per-step token ([`TOKEN_VAR`]); a process whose
//!   `/proc/<pid>/environ` holds it descends from the step (unless it cleared its
//!   environment);
//! * the `loopexec run` process is a child subreaper ([`become_subreaper`]): an orphaned
//!   descendant is re-parented to loopexec instead of init, so after the step's group is
//!   gone any live child of loopexec that is not a step leader is an escapee.
//!
//! Escapees and their descendants are ended (SIGKILL: they already ignored the group's
//! end) and recorded with their command lines in the step's result.

use std::collections::{BTreeMap, BTreeSet};

/// The environment variable holding the per-step token.
pub const TOKEN_VAR: &str = "LOOPEXEC_STEP_TOKEN";

/// Makes this process the child subreaper of its descendants (Linux
/// `PR_SET_CHILD_SUBREAPER`). Returns false where the kernel refuses.
pub fn become_subreaper() -> bool {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes an integer argument only.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
}

/// True when this process is a child subreaper.
#[must_use]
pub fn is_subreaper() -> bool {
    let mut v: libc::c_int = 0;
    // SAFETY: PR_GET_CHILD_SUBREAPER writes one int through the pointer we own.
    let rc = unsafe {
        libc::prctl(
            libc::PR_GET_CHILD_SUBREAPER,
            &mut v as *mut libc::c_int,
            0,
            0,
            0,
        )
    };
    rc == 0 && v != 0
}

/// A fresh token for one step.
#[must_use]
pub fn new_token() -> String {
    let mut h = blake3::Hasher::new();
    h.update(&std::process::id().to_le_bytes());
    h.update(
        &std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            .to_le_bytes(),
    );
    h.update(
        &std::thread::current()
            .name()
            .unwrap_or("")
            .len()
            .to_le_bytes(),
    );
    h.finalize().to_hex()[..24].to_string()
}

struct Proc {
    ppid: i32,
    zombie: bool,
}

fn processes() -> BTreeMap<i32, Proc> {
    let mut out = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let mut f = rest.split_whitespace();
        let state = f.next().unwrap_or("");
        let ppid = f.next().and_then(|x| x.parse().ok()).unwrap_or(0);
        out.insert(
            pid,
            Proc {
                ppid,
                zombie: state == "Z" || state == "X",
            },
        );
    }
    out
}

fn has_token(pid: i32, token: &str) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let needle = format!("{TOKEN_VAR}={token}");
    env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes())
}

fn cmdline(pid: i32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let s: Vec<String> = raw
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let s = s.join(" ");
    s.chars().take(300).collect()
}

/// Whether this process has a child (live or exited) other than `exclude`. With
/// nothing to exclude, one `waitid(P_ALL, WNOHANG | WNOWAIT)` answers (`ECHILD`: no
/// child of any thread of this process; a child found is not reaped); otherwise from
/// `/proc/self/task/*/children`, `None` when the kernel does not list children there
/// (no `CONFIG_PROC_CHILDREN`).
fn has_children(exclude: &[i32]) -> Option<bool> {
    if exclude.is_empty() {
        // SAFETY: waitid writes only into `info`, a zeroed siginfo_t owned here;
        // WNOWAIT leaves any child it reports waitable.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe {
            libc::waitid(
                libc::P_ALL,
                0,
                &mut info,
                libc::WEXITED | libc::WSTOPPED | libc::WCONTINUED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if r == 0 {
            return Some(true);
        }
        if std::io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
            return Some(false);
        }
    }
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    for t in tasks.flatten() {
        let list = std::fs::read_to_string(t.path().join("children")).ok()?;
        if list
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
            .any(|p| !exclude.contains(&p))
        {
            return Some(true);
        }
    }
    Some(false)
}

/// Finds the live processes that descend from the step with `token` (by token, or as
/// orphans re-parented to this subreaper), ends them with SIGKILL, reaps the ones that
/// became our children, and returns `pid N: command line` for each, sorted by pid.
/// `exclude` are pids not to touch (running step leaders).
///
/// Called after the step's group is gone. When this process is a subreaper and has
/// no child left, nothing escaped and `/proc` is not scanned: every descendant of the
/// step that outlived the group was re-parented to the nearest living ancestor that
/// reaps orphans — this process, or an escaped process whose own chain of parents
/// ends at one of our children — so an escapee always shows as a child of ours.
#[must_use]
pub fn end_escapees(token: &str, exclude: &[i32]) -> Vec<String> {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let subreaper = is_subreaper();
    if subreaper && has_children(exclude) == Some(false) {
        return Vec::new();
    }
    let mut found = Vec::new();
    // As a subreaper, every escapee is a child of ours the moment its parent dies: our
    // direct children are killed in tight rounds (reading this process's `children`
    // lists, not all of `/proc`) until none is left, so a chain that forks and exits
    // every few milliseconds cannot outrun the sweep (a fresh review's did, when each
    // round scanned `/proc` and slept 20 ms). Bounded: 2 s.
    if subreaper {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while std::time::Instant::now() < deadline {
            let kids = children(exclude);
            if kids.is_empty() {
                break;
            }
            for pid in kids {
                let line = format!("pid {pid}: {}", cmdline(pid));
                // SAFETY: kill(2) and waitpid(2) on a child of ours; status is a local.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    let mut status = 0;
                    libc::waitpid(pid, &mut status, libc::WNOHANG);
                }
                let known = found
                    .iter()
                    .any(|f: &String| f.starts_with(&format!("pid {pid}:")));
                if !known && found.len() < 64 {
                    found.push(line);
                }
            }
        }
    }
    // A few rounds: a process may fork while we look.
    for _ in 0..5 {
        let procs = processes();
        let mut roots: BTreeSet<i32> = BTreeSet::new();
        for (&pid, p) in &procs {
            if pid == me || p.zombie || exclude.contains(&pid) {
                continue;
            }
            if has_token(pid, token) || (subreaper && p.ppid == me) {
                roots.insert(pid);
            }
        }
        // Descendants of the roots (by parent links) go too.
        let mut all = roots.clone();
        loop {
            let more: Vec<i32> = procs
                .iter()
                .filter(|(pid, p)| !p.zombie && all.contains(&p.ppid) && !all.contains(pid))
                .map(|(pid, _)| *pid)
                .collect();
            if more.is_empty() {
                break;
            }
            all.extend(more);
        }
        if all.is_empty() {
            break;
        }
        for &pid in &all {
            let line = format!("pid {pid}: {}", cmdline(pid));
            // SAFETY: kill(2) on a pid we just listed; no memory is touched.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            if !found
                .iter()
                .any(|f: &String| f.starts_with(&format!("pid {pid}:")))
            {
                found.push(line);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Orphans come to this process only when it is a subreaper; otherwise a zombie
    // child is one a caller of ours still waits for (a test thread's `git`), not ours
    // to reap.
    if subreaper {
        reap_children(exclude);
    }
    found.sort_by_key(|l| {
        l.split(':')
            .next()
            .and_then(|p| p.trim_start_matches("pid ").parse::<i32>().ok())
            .unwrap_or(0)
    });
    found
}

/// Reaps exited children re-parented to this process (zombies), leaving `exclude`.
/// This process's live children (every thread's `children` list; zombies reaped on
/// the way), except `exclude`.
fn children(exclude: &[i32]) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in tasks.flatten() {
        let Ok(list) = std::fs::read_to_string(t.path().join("children")) else {
            continue;
        };
        out.extend(
            list.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
                .filter(|p| !exclude.contains(p)),
        );
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn reap_children(exclude: &[i32]) {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    for (pid, p) in processes() {
        if p.ppid == me && p.zombie && !exclude.contains(&pid) {
            let mut status = 0;
            // SAFETY: waitpid on our own exited child; status is a local int.
            unsafe {
                libc::waitpid(pid, &mut status, libc::WNOHANG);
            }
        }
    }
}

#[cfg(test)]
mod tests {

    /// A live child is seen by the one-call answer and by the `/proc` scan alike.
    #[test]
    fn a_live_child_is_a_child_either_way() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        assert_eq!(has_children(&[]), Some(true));
        // the scan, asked to look past another pid, still finds this child (or, on a
        // kernel that does not list children, cannot say)
        assert_ne!(has_children(&[pid + 1_000_000]), Some(false));
        child.kill().unwrap();
        child.wait().unwrap();
    }
    use super::*;
    use std::process::Command;

    #[test]
    fn a_setsid_daemon_carrying_the_token_is_found_and_ended() {
        let token = new_token();
        let marker = format!("sleep 31{}", std::process::id() % 1000);
        let st = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "setsid sh -c '{marker}' </dev/null >/dev/null 2>&1 &"
            ))
            .env(TOKEN_VAR, &token)
            .status()
            .unwrap();
        assert!(st.success());
        std::thread::sleep(std::time::Duration::from_millis(200));
        let found = end_escapees(&token, &[]);
        assert!(
            found.iter().any(|l| l.contains(&marker)),
            "escapee not found: {found:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
        let left = Command::new("pgrep")
            .args(["-f", &marker])
            .output()
            .unwrap();
        assert!(left.stdout.is_empty(), "escapee still running");
        // A second look finds nothing.
        assert!(end_escapees(&token, &[]).is_empty());
    }
}
