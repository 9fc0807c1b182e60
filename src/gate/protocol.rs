//! Hook protocols: reading a payload into a [`ToolCall`] and writing the decision back
//! in the form the calling agent understands.
//!
//! | agent   | events                    | block a call                                          |
//! |---------|---------------------------|-------------------------------------------------------|
//! | claude  | PreToolUse, PostToolUse   | `hookSpecificOutput.permissionDecision = "deny"`, exit 0 |
//! | gemini  | BeforeTool, AfterTool     | `{"decision": "deny", "reason": …}`, exit 0            |
//! | generic | `{"protocol": "loopexec-gate/1", "phase": "pre"\|"post", …}` | `{"decision": "deny", …}`, exit 2 |
//!
//! An allowed call prints nothing for Claude Code (the agent's own permission flow
//! still applies: the gate never grants more than the agent already has), `{}` for
//! Gemini CLI, and `{"decision": "allow", …}` for the generic protocol.
//! Payload shapes: Claude Code's hooks reference (samples in SPEC §Gate and
//! `tests/cli/gate.rs`), Gemini CLI's hooks reference.

use super::ToolCall;
use serde_json::{json, Value};

/// A payload that is not a tool-call hook this gate understands.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProtocolError {
    #[error("the hook payload is not JSON: {0}")]
    NotJson(String),
    #[error("the hook payload has no tool name (`tool_name`, or `tool` for the generic protocol)")]
    NoTool,
    #[error("hook event {0:?} is not a tool-call event (PreToolUse, PostToolUse, BeforeTool, AfterTool, or the generic protocol's pre/post)")]
    NotToolEvent(String),
}

fn s(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or("").to_string()
}

/// What a tool acts on, from its input: the command, the file, the URL, the pattern.
fn target_of(input: &Value) -> String {
    for k in [
        "command",
        "file_path",
        "path",
        "notebook_path",
        "absolute_path",
        "url",
        "pattern",
        "query",
        "dir_path",
    ] {
        if let Some(t) = input.get(k).and_then(Value::as_str) {
            return t.to_string();
        }
    }
    if let Some(paths) = input.get("paths").and_then(Value::as_array) {
        return paths
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" ");
    }
    input.to_string()
}

/// The content a write tool would write (Write `content`, Edit `new_string`, MultiEdit
/// `edits[].new_string`, Gemini `replace` `new_string`).
fn content_of(input: &Value) -> String {
    let mut out = String::new();
    for k in ["content", "new_string", "new_source"] {
        if let Some(t) = input.get(k).and_then(Value::as_str) {
            out.push_str(t);
            out.push('\n');
        }
    }
    if let Some(edits) = input.get("edits").and_then(Value::as_array) {
        for e in edits {
            out.push_str(&s(e, "new_string"));
            out.push('\n');
        }
    }
    out
}

/// Whether a tool response reports a failure: an explicit error field, a non-zero
/// exit, or (Bash, which reports no exit status) output that says so.
fn failed(resp: &Value) -> bool {
    let explicit = resp.get("is_error").and_then(Value::as_bool) == Some(true)
        || resp.get("success").and_then(Value::as_bool) == Some(false)
        || resp.get("interrupted").and_then(Value::as_bool) == Some(true)
        || resp
            .get("error")
            .is_some_and(|e| !e.is_null() && e.as_str() != Some(""))
        || ["exit_code", "exitCode", "returncode"]
            .iter()
            .any(|k| resp.get(*k).and_then(Value::as_i64).is_some_and(|c| c != 0));
    if explicit {
        return true;
    }
    let text = format!(
        "{}\n{}",
        s(resp, "stdout"),
        resp.get("llmContent")
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .unwrap_or_default()
    );
    static FAIL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?m)(\bFAILED\b|^error(\[E\d+\])?:|^fatal:|[Ee]xit (code|status):? [1-9]|command not found)")
            .expect("static pattern compiles")
    });
    FAIL.is_match(&text)
}

/// Reads a hook payload.
///
/// # Errors
/// [`ProtocolError`] for a payload that is not a tool-call hook.
pub fn parse(payload: &str) -> Result<ToolCall, ProtocolError> {
    let v: Value =
        serde_json::from_str(payload).map_err(|e| ProtocolError::NotJson(e.to_string()))?;
    if v.get("protocol").and_then(Value::as_str) == Some("loopexec-gate/1") {
        let tool = s(&v, "tool");
        if tool.is_empty() {
            return Err(ProtocolError::NoTool);
        }
        let phase = s(&v, "phase");
        if phase != "pre" && phase != "post" {
            return Err(ProtocolError::NotToolEvent(phase));
        }
        let input = v.get("input").cloned().unwrap_or(Value::Null);
        let target = match v.get("target").and_then(Value::as_str) {
            Some(t) => t.to_string(),
            None => target_of(&input),
        };
        return Ok(ToolCall {
            agent: "generic".into(),
            phase,
            tool,
            target,
            description: s(&v, "description"),
            content: content_of(&input),
            tool_use_id: v.get("id").and_then(Value::as_str).map(str::to_string),
            cwd: v.get("cwd").and_then(Value::as_str).map(str::to_string),
            failed: v.get("failed").and_then(Value::as_bool) == Some(true),
        });
    }
    let event = s(&v, "hook_event_name");
    let (agent, phase) = match event.as_str() {
        "PreToolUse" => ("claude", "pre"),
        "PostToolUse" => ("claude", "post"),
        "BeforeTool" => ("gemini", "pre"),
        "AfterTool" => ("gemini", "post"),
        _ => return Err(ProtocolError::NotToolEvent(event)),
    };
    let tool = s(&v, "tool_name");
    if tool.is_empty() {
        return Err(ProtocolError::NoTool);
    }
    let input = v.get("tool_input").cloned().unwrap_or(Value::Null);
    let resp = v.get("tool_response").cloned().unwrap_or(Value::Null);
    Ok(ToolCall {
        agent: agent.into(),
        phase: phase.into(),
        tool,
        target: target_of(&input),
        description: s(&input, "description"),
        content: content_of(&input),
        tool_use_id: v
            .get("tool_use_id")
            .and_then(Value::as_str)
            .map(str::to_string),
        cwd: v.get("cwd").and_then(Value::as_str).map(str::to_string),
        failed: phase == "post" && failed(&resp),
    })
}

/// The gate's answer to one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allow: bool,
    pub reason: String,
    /// The audit record's action id (`run:seq`), when logged.
    pub action_id: Option<String>,
    pub classification: String,
}

/// Renders the decision for `agent`: (stdout, exit code).
#[must_use]
pub fn render(agent: &str, phase: &str, d: &Decision) -> (String, u8) {
    match (agent, phase, d.allow) {
        ("claude", "pre", false) => (
            json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": d.reason,
            }})
            .to_string(),
            0,
        ),
        ("claude", _, _) => (String::new(), 0),
        ("gemini", "pre", false) => (
            json!({"decision": "deny", "reason": d.reason}).to_string(),
            0,
        ),
        ("gemini", _, _) => ("{}".to_string(), 0),
        _ => (
            json!({
                "protocol": "loopexec-gate/1",
                "decision": if d.allow { "allow" } else { "deny" },
                "reason": d.reason,
                "action_id": d.action_id,
                "classification": d.classification,
            })
            .to_string(),
            if d.allow { 0 } else { 2 },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_table() {
        // (payload, agent, phase, tool, target, failed)
        let rows: &[(&str, &str, &str, &str, &str, bool)] = &[
            (
                r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push --force origin main","description":"Push"},"tool_use_id":"t1"}"#,
                "claude",
                "pre",
                "Bash",
                "git push --force origin main",
                false,
            ),
            (
                r#"{"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/a/b.rs"}}"#,
                "claude",
                "pre",
                "Read",
                "/a/b.rs",
                false,
            ),
            (
                r#"{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"cargo test"},"tool_response":{"stdout":"test result: FAILED. 3 passed; 1 failed","stderr":"","interrupted":false}}"#,
                "claude",
                "post",
                "Bash",
                "cargo test",
                true,
            ),
            (
                r#"{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"a b","stderr":"","interrupted":false}}"#,
                "claude",
                "post",
                "Bash",
                "ls",
                false,
            ),
            (
                r#"{"hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"rm -rf /"}}"#,
                "gemini",
                "pre",
                "run_shell_command",
                "rm -rf /",
                false,
            ),
            (
                r#"{"hook_event_name":"AfterTool","tool_name":"write_file","tool_input":{"file_path":"x"},"tool_response":{"llmContent":"ok","error":{"message":"disk full"}}}"#,
                "gemini",
                "post",
                "write_file",
                "x",
                true,
            ),
            (
                r#"{"protocol":"loopexec-gate/1","phase":"pre","tool":"http","target":"DELETE https://api/x"}"#,
                "generic",
                "pre",
                "http",
                "DELETE https://api/x",
                false,
            ),
        ];
        for (p, agent, phase, tool, target, failed) in rows {
            let c = parse(p).unwrap();
            assert_eq!(
                (
                    c.agent.as_str(),
                    c.phase.as_str(),
                    c.tool.as_str(),
                    c.target.as_str(),
                    c.failed
                ),
                (*agent, *phase, *tool, *target, *failed),
                "{p}"
            );
        }
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(matches!(parse("nope"), Err(ProtocolError::NotJson(_))));
        assert_eq!(
            parse(r#"{"hook_event_name":"Stop"}"#),
            Err(ProtocolError::NotToolEvent("Stop".into()))
        );
        assert_eq!(
            parse(r#"{"hook_event_name":"PreToolUse"}"#),
            Err(ProtocolError::NoTool)
        );
    }

    #[test]
    fn decisions_render_per_agent() {
        let deny = Decision {
            allow: false,
            reason: "no".into(),
            action_id: None,
            classification: "destructive".into(),
        };
        let (out, code) = render("claude", "pre", &deny);
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(code, 0);
        let (out, _) = render("gemini", "pre", &deny);
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap()["decision"],
            "deny"
        );
        let (_, code) = render("generic", "pre", &deny);
        assert_eq!(code, 2);
        let allow = Decision {
            allow: true,
            ..deny
        };
        assert_eq!(render("claude", "pre", &allow), (String::new(), 0));
    }
}
