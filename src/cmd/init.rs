//! `loopexec init`: writes a commented `loop.toml` and creates `.loopexec/`.

use crate::cli::Outcome;
use crate::cmd::bodies::InitBody;
use crate::workspace::Workspace;
use serde_json::json;
use std::path::Path;

pub(crate) fn run(workdir: &Path, a: &crate::cli::InitArgs) -> Outcome {
    let mut o = init_config(workdir, a);
    if o.status != "ok" {
        return o;
    }
    if let Some(agent) = &a.agent {
        match install_hooks(workdir, agent) {
            Ok(path) => {
                o.fields
                    .insert("hooks".into(), json!(path.display().to_string()));
                o.human.push_str(&format!(
                    "installed `loopexec gate` as {agent}'s tool-call hook in {}
",
                    path.display()
                ));
            }
            Err(m) => return Outcome::error(super::EXIT_ERROR, m, None),
        }
    }
    o
}

/// The hook configuration for `agent`: settings file (relative to the workdir) and
/// the events that call `loopexec gate`.
fn hook_events(agent: &str) -> (&'static str, [&'static str; 2]) {
    if agent == "gemini" {
        (".gemini/settings.json", ["BeforeTool", "AfterTool"])
    } else {
        (".claude/settings.json", ["PreToolUse", "PostToolUse"])
    }
}

/// Adds `loopexec gate` to the agent's settings (keeping everything else in the file;
/// an existing loopexec entry is not added twice). Returns the settings path.
fn install_hooks(workdir: &Path, agent: &str) -> Result<std::path::PathBuf, String> {
    let (rel, events) = hook_events(agent);
    let path = workdir.join(rel);
    let mut v: serde_json::Value = match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t).map_err(|e| {
            format!(
                "{} is not JSON ({e}); fix it or move it away",
                path.display()
            )
        })?,
        Err(_) => json!({}),
    };
    let entry = json!({"matcher": "*", "hooks": [{"type": "command", "command": "loopexec gate"}]});
    let Some(root) = v.as_object_mut() else {
        return Err(format!("{} is not a JSON object", path.display()));
    };
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err(format!("`hooks` in {} is not an object", path.display()));
    };
    for ev in events {
        let list = hooks.entry(ev).or_insert_with(|| json!([]));
        let Some(list) = list.as_array_mut() else {
            return Err(format!(
                "`hooks.{ev}` in {} is not an array",
                path.display()
            ));
        };
        if !list.iter().any(|e| e.to_string().contains("loopexec gate")) {
            list.push(entry.clone());
        }
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?;
    std::fs::write(&path, format!("{text}\n")).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path)
}

fn init_config(workdir: &Path, a: &crate::cli::InitArgs) -> Outcome {
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return super::ws_error(&e),
    };
    if let Err(e) = ws.ensure() {
        return super::ws_error(&e);
    }
    let path = ws.workdir.join("loop.toml");
    let existed = path.exists();
    if existed && !a.force {
        let body = InitBody {
            config: path.display().to_string(),
            written: false,
            state_dir: None,
            check: None,
            detected_from: None,
            human: format!(
                "{} already exists; left unchanged (use --force to overwrite)\n",
                path.display()
            ),
        };
        return Outcome::from_body("ok", 0, &body);
    }
    let detected = super::init_detect::detect_check(&ws.workdir);
    let text = match detected {
        Some((check, _)) => {
            super::init_detect::template_with_check(crate::config::INIT_TEMPLATE, check)
        }
        None => crate::config::INIT_TEMPLATE.to_string(),
    };
    if let Err(e) = std::fs::write(&path, text) {
        return Outcome::error(
            super::EXIT_ERROR,
            format!("cannot write {}: {e}", path.display()),
            None,
        );
    }
    let next = match detected {
        Some((check, from)) => {
            format!("check: `{check}` (from {from}); set `exec` in loop.toml, then `loopexec run`")
        }
        None => "next: set `check` (and `exec`) in loop.toml, then `loopexec run`".to_string(),
    };
    let body = InitBody {
        config: path.display().to_string(),
        written: true,
        state_dir: Some(ws.dir.display().to_string()),
        check: detected.map(|d| d.0.to_string()),
        detected_from: detected.map(|d| d.1.to_string()),
        human: format!(
            "wrote {}\ncreated {}\n{next}\n",
            path.display(),
            ws.dir.display()
        ),
    };
    Outcome::from_body("ok", 0, &body)
}
