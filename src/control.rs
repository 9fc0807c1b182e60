//! People in control, outside the loop: the policy tables (`[halt_events.<reason>]`,
//! `[review]`, `[control]`), where global holds live, whether a command runs inside a
//! loopexec step, SSH-signed acknowledgements, escalation of unacknowledged halt
//! events, and the `--on-halt` notifier.
//!
//! Source: the halt-conditions design (severity, acknowledgement, escalation) and the
//! inhibitors design (global holds, the latch a person clears); SPEC §Holds and
//! §Halt events.

use crate::halt::HaltReason;
use crate::store::{AckHow, Store};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// `[halt_events.<reason>]`: how halt events of one reason are graded and escalated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HaltEventPolicy {
    /// `low`, `medium`, `high` or `critical` (default: by class, SPEC §Halt events).
    pub severity: Option<String>,
    /// Escalate an unacknowledged event after `escalate_after_minutes`.
    pub auto_escalate: bool,
    /// Minutes before an unacknowledged event is escalated (resolution `timeout`).
    pub escalate_after_minutes: Option<u64>,
}

/// `[halt_events]`: per-reason policies, keyed by `halt_reason`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HaltEventsPolicy(pub BTreeMap<String, HaltEventPolicy>);

impl HaltEventsPolicy {
    /// The configured severity of `reason`, if any.
    #[must_use]
    pub fn severity_for(&self, reason: HaltReason) -> Option<String> {
        self.0.get(reason.as_str()).and_then(|p| p.severity.clone())
    }

    /// Names a key that is not a halt reason or a severity that is not one of
    /// [`crate::store::SEVERITIES`].
    ///
    /// # Errors
    /// The first bad field, as `halt_events.<key>…` and why.
    pub fn validate(&self) -> Result<(), String> {
        for (k, p) in &self.0 {
            if !HaltReason::ALL.iter().any(|r| r.as_str() == k) {
                return Err(format!("halt_events.{k}: not a halt_reason"));
            }
            if let Some(s) = &p.severity {
                if !crate::store::SEVERITIES.contains(&s.as_str()) {
                    return Err(format!(
                        "halt_events.{k}.severity = {s:?}: one of low, medium, high, critical"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `[review]`: what an acknowledgement must be.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReviewConfig {
    /// Only SSH-signed acknowledgements count (`ack --signature`).
    pub require_signed_ack: bool,
    /// The allowed-signers file (`ssh-keygen -Y verify -f`), relative to the workdir.
    pub allowed_signers: Option<PathBuf>,
}

/// `[control]`: the run's control policy (flags override it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ControlConfig {
    /// A person watches the run: destructive agent actions wait for `confirm`.
    pub attended: bool,
    /// How long an attended action waits before the run halts `escalation_pending`.
    pub approval_timeout: crate::config::Dur,
    /// Refuse a new run while an unacknowledged high or critical halt event exists.
    pub ack_required: bool,
    /// Run this command (`sh -c`) with the halt event's JSON on stdin after each halt.
    pub on_halt: Option<String>,
    /// Halt after this many agent tool-call rounds across the run.
    pub max_turns: Option<u64>,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            attended: false,
            approval_timeout: crate::config::Dur(Duration::from_secs(15 * 60)),
            ack_required: true,
            on_halt: None,
            max_turns: None,
        }
    }
}

/// The reviewers whose acknowledgements of a run count: every one, or only the
/// SSH-signed ones when `[review] require_signed_ack` is set. `acks` are the run's
/// `acks` rows in ledger order.
#[must_use]
pub fn counted_acks(
    store: &Store,
    run_id: &str,
    cfg: &crate::config::RunConfig,
    acks: &[crate::store::AckRow],
) -> Vec<String> {
    let methods = store.ack_methods(run_id).unwrap_or_default();
    acks.iter()
        .enumerate()
        .filter(|(i, _)| {
            !cfg.review.require_signed_ack
                || methods
                    .get(*i)
                    .and_then(Option::as_ref)
                    .is_some_and(|m| m.method == "ssh_signature")
        })
        .map(|(_, a)| a.reviewer.clone())
        .collect()
}

/// `[limits]`: spend rates per workspace, across runs (a token bucket in the ledger).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// USD the workspace's runs may spend per hour.
    pub usd_per_hour: Option<f64>,
    /// Tokens the workspace's runs may use per hour.
    pub tokens_per_hour: Option<u64>,
    /// An empty bucket: `suspend` (park until it refills) or `halt` (`budget_exceeded`).
    pub on_rate_limit: String,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            usd_per_hour: None,
            tokens_per_hour: None,
            on_rate_limit: "suspend".into(),
        }
    }
}

impl LimitsConfig {
    /// The configured buckets: (`usd` or `tokens`, rate per hour).
    #[must_use]
    pub fn buckets(&self) -> Vec<(&'static str, f64)> {
        let mut v = Vec::new();
        if let Some(u) = self.usd_per_hour {
            v.push(("usd", u));
        }
        if let Some(t) = self.tokens_per_hour {
            #[allow(clippy::cast_precision_loss)] // token rates far below 2^52
            v.push(("tokens", t as f64));
        }
        v
    }

    /// Rates are positive and the mode is known.
    ///
    /// # Errors
    /// The first bad field and why.
    pub fn validate(&self) -> Result<(), String> {
        if self
            .usd_per_hour
            .is_some_and(|u| !(u > 0.0 && u.is_finite()))
        {
            return Err("limits.usd_per_hour: must be a positive number".into());
        }
        if self.tokens_per_hour == Some(0) {
            return Err("limits.tokens_per_hour: must be at least 1".into());
        }
        if !matches!(self.on_rate_limit.as_str(), "suspend" | "halt") {
            return Err(format!(
                "limits.on_rate_limit = {:?}: use suspend or halt",
                self.on_rate_limit
            ));
        }
        Ok(())
    }
}

/// The user's state directory for loopexec: `$LOOPEXEC_STATE_DIR`, else
/// `$XDG_STATE_HOME/loopexec`, else `~/.local/state/loopexec`.
#[must_use]
pub fn state_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("LOOPEXEC_STATE_DIR").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(d).join("loopexec"));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|h| PathBuf::from(h).join(".local/state/loopexec"))
}

/// Where global holds (`hold --all`) live: `<state dir>/holds.sqlite`.
#[must_use]
pub fn global_holds_path() -> Option<PathBuf> {
    state_dir().map(|d| d.join("holds.sqlite"))
}

/// The environment variables the engine sets for a step.
pub const STEP_ENV: [&str; 4] = [
    "LOOPEXEC_RUN_ID",
    "LOOPEXEC_ITERATION",
    "LOOPEXEC_USAGE_FILE",
    crate::proc::escape::TOKEN_VAR,
];

/// Why this process counts as running inside a loopexec step, if it does: a step's
/// environment variable is set, or an ancestor process is the loopexec of a running
/// run in this ledger (the step is its child).
#[must_use]
pub fn inside_step(store: Option<&Store>) -> Option<String> {
    for v in STEP_ENV {
        if std::env::var_os(v).is_some() {
            return Some(format!("{v} is set: this is a loopexec step's environment"));
        }
    }
    let running: Vec<(String, u32)> = store
        .and_then(|s| s.running_pids().ok())
        .unwrap_or_default();
    let mut pid = parent_of(std::process::id());
    let mut hops = 0;
    while let Some(p) = pid {
        if p <= 1 || hops > 64 {
            break;
        }
        if let Some((run, _)) = running.iter().find(|(_, rp)| *rp == p) {
            return Some(format!(
                "an ancestor process ({p}) is the loopexec of running run {run}"
            ));
        }
        pid = parent_of(p);
        hops += 1;
    }
    None
}

/// The parent pid of `pid`, from `/proc/<pid>/stat`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: split after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// How an unsigned acknowledgement is being made here.
#[must_use]
pub fn ack_how_unsigned() -> AckHow {
    use std::io::IsTerminal;
    AckHow {
        method: if std::io::stdin().is_terminal() {
            "terminal".into()
        } else {
            "non_interactive".into()
        },
        key: None,
        os_user: std::env::var("USER").ok(),
    }
}

/// The message a person signs to acknowledge `subject` (a halt event id or a run id).
#[must_use]
pub fn ack_message(subject: &str, by: &str, resolution: &str) -> String {
    format!("loopexec ack\nsubject: {subject}\nby: {by}\nresolution: {resolution}\n")
}

/// Verifies an SSH signature (`ssh-keygen -Y sign -n loopexec`) of `message` by the
/// principal `by` against `allowed_signers`. Returns the signing key's description
/// from `ssh-keygen`'s output.
///
/// # Errors
/// Why the signature does not verify (ssh-keygen's own words), or that ssh-keygen
/// cannot run.
pub fn verify_signature(
    allowed_signers: &Path,
    by: &str,
    message: &str,
    signature: &Path,
) -> Result<String, String> {
    let mut child = Command::new("ssh-keygen")
        .args(["-Y", "verify", "-n", "loopexec", "-f"])
        .arg(allowed_signers)
        .args(["-I", by, "-s"])
        .arg(signature)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run ssh-keygen: {e}"))?;
    if let Some(mut i) = child.stdin.take() {
        i.write_all(message.as_bytes())
            .map_err(|e| format!("cannot feed ssh-keygen: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("ssh-keygen: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
    .trim()
    .to_string();
    if out.status.success() {
        Ok(text)
    } else {
        Err(if text.is_empty() {
            "ssh-keygen -Y verify rejected the signature".into()
        } else {
            text
        })
    }
}

/// Escalates due halt events of the workspace at `workdir` per its loop.toml's
/// `[halt_events.<reason>] auto_escalate` (best effort: a workspace without a ledger
/// or a policy has nothing to escalate). Returns the ids escalated.
#[must_use]
pub fn escalate_due(workdir: &Path) -> Vec<String> {
    let ledger = workdir.join(".loopexec/ledger.sqlite");
    let toml = workdir.join("loop.toml");
    if !ledger.is_file() || !toml.is_file() {
        return Vec::new();
    }
    let Ok(file) = crate::config::read_file(&toml) else {
        return Vec::new();
    };
    let Some(policy) = file.halt_events else {
        return Vec::new();
    };
    let Ok(store) = Store::open(&ledger) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (reason, p) in &policy.0 {
        let (true, Some(mins)) = (p.auto_escalate, p.escalate_after_minutes) else {
            continue;
        };
        let cutoff = time::OffsetDateTime::now_utc()
            - time::Duration::minutes(i64::try_from(mins).unwrap_or(i64::MAX / 120));
        let fmt = time::macros::format_description!(
            "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
        );
        let Ok(cut) = cutoff.format(&fmt) else {
            continue;
        };
        if let Ok(ids) = store.escalate(reason, &cut) {
            out.extend(ids);
        }
    }
    out
}

/// Runs the `--on-halt` notifier with the halt event's JSON on stdin (the event as
/// `halts --json` lists it). A notifier that fails or hangs (10 s) is reported on
/// stderr; it never changes the halt.
pub fn notify_halt(cfg: &crate::config::RunConfig, store: &Store, halt_id: &str) {
    let Some(cmd) = &cfg.control.on_halt else {
        return;
    };
    let Ok(Some(ev)) = store.halt_event(halt_id) else {
        return;
    };
    let body = serde_json::to_string(&ev).unwrap_or_default();
    let child = Command::new("sh")
        .args(["-c", cmd])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            eprintln!("loopexec: warning: --on-halt `{cmd}` cannot start: {e}");
            return;
        }
    };
    if let Some(mut i) = child.stdin.take() {
        if let Err(e) = i.write_all(body.as_bytes()) {
            eprintln!("loopexec: warning: --on-halt `{cmd}`: writing the event failed: {e}");
        }
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(st)) if st.success() => return,
            Ok(Some(st)) => {
                eprintln!("loopexec: warning: --on-halt `{cmd}` exited with {st}");
                return;
            }
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(50));
            }
            _ => {
                // Best effort: the notifier is already past its time.
                if let Err(e) = child.kill() {
                    eprintln!("loopexec: warning: --on-halt `{cmd}` could not be ended: {e}");
                }
                eprintln!(
                    "loopexec: warning: --on-halt `{cmd}` took longer than 10s and was ended"
                );
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_of_self_is_the_test_runner() {
        let me = std::process::id();
        let parent = parent_of(me).expect("a parent");
        assert_ne!(parent, me);
        assert!(parent >= 1);
    }

    #[test]
    fn halt_event_policy_validation_names_the_field() {
        let rows: Vec<(&str, Option<&str>)> = vec![
            ("[max_iterations_reached]\nseverity = \"high\"\n", None),
            (
                "[max_iterations_reached]\nseverity = \"urgent\"\n",
                Some("halt_events.max_iterations_reached.severity"),
            ),
            (
                "[not_a_reason]\nseverity = \"low\"\n",
                Some("halt_events.not_a_reason"),
            ),
        ];
        for (text, want) in rows {
            let p: HaltEventsPolicy = toml::from_str(text).unwrap();
            match (p.validate(), want) {
                (Ok(()), None) => {}
                (Err(e), Some(w)) => assert!(e.starts_with(w), "{e}"),
                (got, want) => panic!("{text}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn the_ack_message_names_subject_signer_and_resolution() {
        let m = ack_message("h1", "alice", "resolved");
        assert!(
            m.contains("subject: h1")
                && m.contains("by: alice")
                && m.contains("resolution: resolved")
        );
    }
}
