//! `loopexec gate` (the agent's tool-call hook), `pending`, `confirm`, `deny`
//! (SPEC §Gate).
//!
//! The gate reads one hook payload on stdin, classifies the call with the run's
//! `[gate]` policy, logs it to the run's audit log and answers in the agent's own
//! protocol. Destructive calls need a real-time confirmation of that one call:
//! unattended runs (the default) decline at once and tell the agent why; attended
//! runs (`run --attended`) wait while a suspended hold shows the run waiting, until a
//! person runs `loopexec confirm`/`deny` or `--approval-timeout` passes (then the call
//! is declined and the run halts `escalation_pending` at the next step boundary).

use super::bodies_control::{DecideBody, GateBody, PendingBody};
use crate::cli::{DecideArgs, Outcome};
use crate::config::RunConfig;
use crate::gate::audit::{self, Record};
use crate::gate::classify::{self, Context};
use crate::gate::protocol::{self, Decision};
use crate::gate::{ActionClass, ToolCall};
use crate::store::{HoldScope, HoldStrength, NewHold, PendingAction, Store};
use crate::workspace::Workspace;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Largest hook payload read (a Write of a large file carries its content).
const MAX_PAYLOAD: u64 = 16 << 20;

/// Where the gate is: the run (from the step's environment) and its policy.
struct Site {
    ws: Option<Workspace>,
    run_id: Option<String>,
    iteration: u32,
    audit: Option<PathBuf>,
    cfg: RunConfig,
}

fn site(workdir: &Path) -> Site {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let wd = env("LOOPEXEC_WORKDIR").map_or_else(|| workdir.to_path_buf(), PathBuf::from);
    let ws = Workspace::at(&wd).ok();
    let run_id = env("LOOPEXEC_RUN_ID").filter(|r| crate::workspace::validate_run_id(r).is_ok());
    let iteration = env("LOOPEXEC_ITERATION")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let cfg = match (&ws, &run_id) {
        (Some(w), Some(r)) => crate::receipt::read(&w.receipt_path(r))
            .ok()
            .and_then(|lines| {
                lines.into_iter().find_map(|l| match l.event {
                    crate::receipt::Event::RunStarted(s) => Some(s.config),
                    _ => None,
                })
            }),
        _ => None,
    }
    .or_else(|| crate::config::resolve(&wd, None, &crate::config::Overrides::default()).ok())
    .unwrap_or_else(RunConfig::defaults);
    let audit = env("LOOPEXEC_AUDIT_LOG")
        .map(PathBuf::from)
        .or_else(|| match (&ws, &run_id) {
            (Some(w), Some(r)) => Some(w.run_dir(r).join("audit.jsonl")),
            _ => None,
        });
    Site {
        ws,
        run_id,
        iteration,
        audit,
        cfg,
    }
}

/// The hook's answer: stdout as the agent expects it, and the exit code. Errors go
/// to stderr (the agent shows them) with exit 2, which blocks the call: a payload
/// the gate cannot read is never waved through.
pub(crate) fn run(workdir: &Path) -> Outcome {
    let mut payload = String::new();
    if let Err(e) = std::io::stdin()
        .take(MAX_PAYLOAD)
        .read_to_string(&mut payload)
    {
        return blocked(format!("cannot read the hook payload on stdin: {e}"));
    }
    let call = match protocol::parse(&payload) {
        Ok(c) => c,
        // Not a tool event (SessionStart, Stop, …): nothing to gate.
        Err(protocol::ProtocolError::NotToolEvent(ev)) if !ev.is_empty() => {
            return raw(String::new(), 0)
        }
        Err(e) => return blocked(e.to_string()),
    };
    let site = site(workdir);
    if call.phase == "post" {
        return post(&site, &call);
    }
    pre(&site, &call)
}

/// An outcome that prints `stdout` verbatim (the hook protocol, not loopexec's JSON).
fn raw(stdout: String, code: u8) -> Outcome {
    let body = GateBody {
        raw: true,
        hook_output: hook_output(&stdout),
        human: stdout,
    };
    Outcome::from_body("gate", code, &body)
}

/// The hook's stdout as JSON when it is JSON, else as a string (`null` when empty).
fn hook_output(stdout: &str) -> Option<serde_json::Value> {
    let t = stdout.trim();
    (!t.is_empty()).then(|| {
        serde_json::from_str(t).unwrap_or_else(|_| serde_json::Value::from(stdout.to_string()))
    })
}

fn blocked(message: String) -> Outcome {
    let body = GateBody {
        raw: true,
        hook_output: None,
        human: String::new(),
    };
    let mut o = Outcome::from_body("error", 2, &body);
    o.errors = vec![format!("loopexec gate: {message}")];
    o.hint = Some("the call is blocked because the gate cannot judge it".into());
    o
}

fn record_of(site: &Site, call: &ToolCall, c: &crate::gate::Classification) -> Record {
    Record {
        run_id: site.run_id.clone().unwrap_or_default(),
        iteration: site.iteration,
        agent: call.agent.clone(),
        phase: call.phase.clone(),
        tool: call.tool.clone(),
        target: call.target.clone(),
        description: call.description.clone(),
        classification: c.class.as_str().to_string(),
        rule: c.rule.clone(),
        findings: c.findings.clone(),
        tool_use_id: call.tool_use_id.clone(),
        ..Record::default()
    }
}

fn classify_here(site: &Site, call: &ToolCall) -> crate::gate::Classification {
    let workdir = site.ws.as_ref().map(|w| w.workdir.clone());
    let log = site.audit.as_deref().map(audit::read).unwrap_or_default();
    let read = audit::read_set(&log, workdir.as_deref());
    let target = classify::normalize(&call.target, workdir.as_deref());
    let ctx = Context {
        workdir: workdir.as_deref(),
        read: &read,
        target_exists: Path::new(&target).exists(),
        escapes_by_symlink: workdir
            .as_deref()
            .is_some_and(|w| classify::escapes_by_symlink(&target, w)),
        resolve: Some(classify::escapes_by_symlink),
    };
    classify::classify(call, &site.cfg.gate, &ctx)
}

fn pre(site: &Site, call: &ToolCall) -> Outcome {
    let c = classify_here(site, call);
    let mut rec = record_of(site, call, &c);
    let decision: Result<(), String> = if c.critical() {
        Err(format!(
            "declined: {} (critical; no confirmation can allow it)",
            c.findings
                .iter()
                .filter(|f| f.severity == "critical")
                .map(|f| format!("{}: {}", f.halt_type, f.description))
                .collect::<Vec<_>>()
                .join("; ")
        ))
    } else if c.class != ActionClass::Destructive {
        Ok(())
    } else if site.cfg.control.attended && site.run_id.is_some() && site.ws.is_some() {
        attended(site, call, &c, &mut rec)
    } else if site.run_id.is_none() {
        Err(format!(
            "declined: destructive ({}): this call came from outside any loopexec run (no LOOPEXEC_RUN_ID), where the gate has no person to ask; run it yourself, or run the agent under `loopexec run --attended` to confirm such calls one by one",
            c.rule
        ))
    } else {
        Err(format!(
            "declined: destructive ({}): no confirmation is available in an unattended run; this one call needs a person's real-time confirmation (run with --attended). Go on with other work",
            c.rule
        ))
    };
    let allow = decision.is_ok();
    rec.outcome = if allow { "allowed" } else { "declined" }.into();
    rec.reason = match &decision {
        Ok(()) if rec.confirmed_by.is_some() => format!(
            "confirmed by {}",
            rec.confirmed_by.as_deref().unwrap_or_default()
        ),
        Ok(()) => String::new(),
        Err(why) => why.clone(),
    };
    let written = match &site.audit {
        Some(p) => match audit::append(p, rec.clone()) {
            Ok(r) => Some(r),
            // An action that cannot be logged is not allowed (the log is the record).
            Err(e) => {
                return blocked(format!(
                    "{e}; the call is declined because it cannot be logged"
                ))
            }
        },
        None => None,
    };
    let d = Decision {
        allow,
        reason: if allow {
            String::new()
        } else {
            rec.reason.clone()
        },
        action_id: written.map(|r| r.action_id),
        classification: c.class.as_str().to_string(),
    };
    let (out, code) = protocol::render(&call.agent, &call.phase, &d);
    raw(out, code)
}

fn post(site: &Site, call: &ToolCall) -> Outcome {
    let c = classify_here(site, call);
    let mut rec = record_of(site, call, &c);
    rec.findings.clear();
    rec.outcome = if call.failed { "failed" } else { "executed" }.into();
    if let Some(p) = &site.audit {
        if let Err(e) = audit::append(p, rec) {
            eprintln!("loopexec gate: {e}");
            return raw(String::new(), 1);
        }
    }
    let d = Decision {
        allow: true,
        reason: String::new(),
        action_id: None,
        classification: c.class.as_str().to_string(),
    };
    let (out, code) = protocol::render(&call.agent, &call.phase, &d);
    raw(out, code)
}

/// Waits for a person to answer a destructive call of an attended run. A suspended
/// hold names the run as waiting while it does (and is released after).
fn attended(
    site: &Site,
    call: &ToolCall,
    c: &crate::gate::Classification,
    rec: &mut Record,
) -> Result<(), String> {
    let (Some(ws), Some(run_id)) = (&site.ws, &site.run_id) else {
        return Err("declined: no run to wait in".into());
    };
    let store = Store::open(&ws.ledger_path()).map_err(|e| format!("declined: {e}"))?;
    let id = crate::store::new_id("act", &call.target);
    let hold = store
        .take_hold(&NewHold {
            scope: HoldScope::Run(run_id.clone()),
            strength: HoldStrength::Suspended,
            holder: "loopexec gate",
            reason: &format!(
                "waiting for a person to confirm {id}: {} `{}` ({})",
                call.tool, call.target, c.rule
            ),
        })
        .map_err(|e| format!("declined: {e}"))?;
    let pending = PendingAction {
        id: id.clone(),
        run_id: run_id.clone(),
        hold_id: Some(hold.id.clone()),
        tool: call.tool.clone(),
        target: call.target.clone(),
        description: call.description.clone(),
        classification: c.class.as_str().to_string(),
        requested_at: crate::receipt::now_rfc3339(),
        decision: None,
        decided_by: None,
        decided_at: None,
        call_waiting: true,
    };
    store
        .add_pending(&pending)
        .map_err(|e| format!("declined: {e}"))?;
    eprintln!(
        "loopexec gate: destructive call waits for a person: {} `{}`\n  confirm: loopexec confirm {id} --by NAME\n  deny:    loopexec deny {id} --by NAME",
        call.tool, call.target
    );
    let timeout = site.cfg.control.approval_timeout.0;
    let start = Instant::now();
    let answer = loop {
        let now = store
            .pending(false)
            .ok()
            .and_then(|v| v.into_iter().find(|p| p.id == id));
        if let Some(p) = now.filter(|p| p.decision.is_some()) {
            break Some(p);
        }
        if start.elapsed() >= timeout {
            break None;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    if let Err(e) = store.release_hold(&hold.id, "loopexec gate") {
        eprintln!("loopexec gate: could not release hold {}: {e}", hold.id);
    }
    rec.action_id = id.clone();
    match answer {
        Some(p) if p.decision.as_deref() == Some("confirmed") => {
            rec.confirmed_by = p.decided_by;
            rec.confirmed_at = p.decided_at;
            Ok(())
        }
        Some(p) => Err(format!(
            "declined: {} denied this call",
            p.decided_by.unwrap_or_default()
        )),
        None => {
            rec.rule = "approval-timeout".into();
            Err(format!(
                "declined: nobody confirmed {id} within {}; the run halts escalation_pending until someone answers (loopexec confirm|deny {id} --by NAME)",
                humantime::format_duration(timeout)
            ))
        }
    }
}

pub(crate) fn pending(workdir: &Path) -> Outcome {
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return super::ws_error(&e),
    };
    let rows = if ws.ledger_path().is_file() {
        match Store::open(&ws.ledger_path()).and_then(|s| s.pending(true)) {
            Ok(v) => v,
            Err(e) => {
                return Outcome::error(
                    crate::halt::HaltReason::InvariantFailed.exit_code(),
                    e.to_string(),
                    None,
                )
            }
        }
    } else {
        Vec::new()
    };
    let mut human = if rows.is_empty() {
        "nothing waits for a person\n".to_string()
    } else {
        format!("{} action(s) wait for a person:\n", rows.len())
    };
    for p in &rows {
        human.push_str(&format!(
            "  {}  run {} since {}: {} `{}` ({})\n",
            p.id, p.run_id, p.requested_at, p.tool, p.target, p.classification
        ));
        if !p.call_waiting {
            human.push_str(&format!(
                "      its call was declined at the approval timeout (the agent must ask again); an answer lets `loopexec run --resume {}` go on\n",
                p.run_id
            ));
        }
    }
    if !rows.is_empty() {
        human.push_str("answer with: loopexec confirm ACTION_ID --by NAME  |  loopexec deny ACTION_ID --by NAME\n");
    }
    Outcome::from_body(
        "ok",
        0,
        &PendingBody {
            pending: rows,
            human,
        },
    )
}

pub(crate) fn decide(workdir: &Path, a: &DecideArgs, decision: &str) -> Outcome {
    if a.by.trim().is_empty() {
        return Outcome::error(2, "--by must name a person".into(), None);
    }
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return super::ws_error(&e),
    };
    let store = match Store::open(&ws.ledger_path()) {
        Ok(s) => s,
        Err(e) => {
            return Outcome::error(
                crate::halt::HaltReason::InvariantFailed.exit_code(),
                e.to_string(),
                None,
            )
        }
    };
    let command = if decision == "confirmed" {
        "confirm"
    } else {
        "deny"
    };
    if let Some(why) = crate::control::inside_step(Some(&store)) {
        return Outcome::error(
            crate::halt::HaltReason::HumanRequired.exit_code(),
            format!("{command} refused: it runs inside a loopexec step ({why}); an answer to the gate must come from a person"),
            Some("answer from your own terminal".into()),
        );
    }
    let before = match store.pending(false) {
        Ok(v) => v.into_iter().find(|p| p.id == a.action_id),
        Err(e) => {
            return Outcome::error(
                crate::halt::HaltReason::InternalError.exit_code(),
                e.to_string(),
                None,
            )
        }
    };
    match store.decide_pending(&a.action_id, decision, a.by.trim()) {
        Ok(true) => {
            let mut human = format!("{decision} action {} by {}\n", a.action_id, a.by.trim());
            if let Some(p) = before.as_ref().filter(|p| !p.call_waiting) {
                human.push_str(&format!(
                    "its call was already declined at the approval timeout, so the agent must ask again; the run can go on: loopexec run --resume {}\n",
                    p.run_id
                ));
            }
            let body = DecideBody {
                action_id: a.action_id.clone(),
                decision: decision.into(),
                by: a.by.trim().into(),
                human,
            };
            Outcome::from_body("ok", 0, &body)
        }
        Ok(false) => match before {
            Some(p) if p.decision.is_some() => Outcome::error(
                super::EXIT_ERROR,
                format!(
                    "action `{}` was already {} by {} at {}",
                    a.action_id,
                    p.decision.as_deref().unwrap_or("answered"),
                    p.decided_by.as_deref().unwrap_or("?"),
                    p.decided_at.as_deref().unwrap_or("?")
                ),
                Some(
                    "an action is answered once; `loopexec pending` lists what still waits".into(),
                ),
            ),
            _ => Outcome::error(
                super::EXIT_ERROR,
                format!("no action `{}` in this workspace", a.action_id),
                Some("`loopexec pending` lists what waits".into()),
            ),
        },
        Err(e) => Outcome::error(
            crate::halt::HaltReason::InternalError.exit_code(),
            e.to_string(),
            None,
        ),
    }
}
