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
        let exe = std::env::current_exe().ok();
        let on_path = on_path("loopexec", std::env::var_os("PATH").as_deref());
        let (command, warning) = gate_command(exe.as_deref(), on_path.as_deref());
        match install_hooks(workdir, agent, &command) {
            Ok(path) => {
                o.fields
                    .insert("hooks".into(), json!(path.display().to_string()));
                o.fields.insert("hook_command".into(), json!(command));
                o.human.push_str(&format!(
                    "installed `{command}` as {agent}'s tool-call hook in {}
",
                    path.display()
                ));
                if let Some(w) = warning {
                    eprintln!("loopexec: warning: {w}");
                }
            }
            Err(m) => return Outcome::error(super::EXIT_ERROR, m, None),
        }
    }
    o
}

/// The first executable file `name` in the directories of `path` (a `PATH` value).
fn on_path(name: &str, path: Option<&std::ffi::OsStr>) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path?)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The command the agent's hook runs, and a warning to print: `loopexec gate` when the
/// `loopexec` on PATH (`on_path`) is this binary (`exe`); otherwise this binary by its
/// absolute path, since a bare `loopexec` would not run (built with `cargo build
/// --release` and never installed: the hook failed and the gate was silently missing)
/// or would run another build.
fn gate_command(exe: Option<&Path>, on_path: Option<&Path>) -> (String, Option<String>) {
    let bare = "loopexec gate".to_string();
    let Some(exe) = exe.map(|e| std::fs::canonicalize(e).unwrap_or_else(|_| e.to_path_buf()))
    else {
        return (bare, None);
    };
    let same = on_path
        .and_then(|p| std::fs::canonicalize(p).ok())
        .is_some_and(|p| p == exe);
    if same {
        return (bare, None);
    }
    let shown = exe.display().to_string();
    let plain = shown
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+@%=:,".contains(c));
    let command = if plain {
        format!("{shown} gate")
    } else {
        format!("{} gate", crate::observe::isolation::shell_quote(&shown))
    };
    let why = match on_path {
        Some(p) => format!(
            "the `loopexec` on PATH ({}) is not this binary",
            p.display()
        ),
        None => "`loopexec` is not on PATH".to_string(),
    };
    let warning = format!(
        "{why}: the hook runs this binary by its absolute path, {shown}; after moving or \
         rebuilding it elsewhere, run `loopexec init --agent …` again (or install loopexec \
         on PATH, `cargo install --path .`)"
    );
    (command, Some(warning))
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

/// Adds `command` (`loopexec gate`, [`gate_command`]) to the agent's settings (keeping
/// everything else in the file; an existing loopexec entry is not added twice, its
/// command is set to `command`). Returns the settings path.
fn install_hooks(workdir: &Path, agent: &str, command: &str) -> Result<std::path::PathBuf, String> {
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
    let entry = json!({"matcher": "*", "hooks": [{"type": "command", "command": command}]});
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
        let mut found = false;
        for e in list.iter_mut() {
            let Some(hs) = e.get_mut("hooks").and_then(|h| h.as_array_mut()) else {
                continue;
            };
            for h in hs {
                let ours = h.get("command").and_then(|c| c.as_str()).is_some_and(|c| {
                    c.trim_end().ends_with("loopexec gate")
                        || c.trim_end().ends_with("loopexec' gate")
                });
                if ours {
                    h["command"] = json!(command);
                    found = true;
                }
            }
        }
        if !found && !list.iter().any(|e| e.to_string().contains("loopexec gate")) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn executable(p: &Path) {
        std::fs::write(p, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// (what, PATH holds: none / a link to this binary / another loopexec, bare?)
    #[test]
    fn the_hook_names_this_binary_unless_path_finds_it() {
        let d = tempfile::tempdir().unwrap();
        let exe = d.path().join("target/release/loopexec");
        std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
        executable(&exe);
        let linked = d.path().join("linked");
        std::fs::create_dir(&linked).unwrap();
        std::os::unix::fs::symlink(&exe, linked.join("loopexec")).unwrap();
        let other = d.path().join("other");
        std::fs::create_dir(&other).unwrap();
        executable(&other.join("loopexec"));
        let empty = d.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let abs = format!("{} gate", std::fs::canonicalize(&exe).unwrap().display());
        for (what, path, command, warns) in [
            (
                "not on PATH",
                vec![&empty],
                abs.as_str(),
                Some("not on PATH"),
            ),
            (
                "this binary through a link",
                vec![&empty, &linked],
                "loopexec gate",
                None,
            ),
            (
                "another loopexec first",
                vec![&other, &linked],
                abs.as_str(),
                Some("is not this binary"),
            ),
        ] {
            let path = std::env::join_paths(path).unwrap();
            let found = on_path("loopexec", Some(&path));
            let (c, w) = gate_command(Some(&exe), found.as_deref());
            assert_eq!(c, command, "{what}");
            assert_eq!(w.is_some(), warns.is_some(), "{what}: {w:?}");
            if let (Some(w), Some(needle)) = (w, warns) {
                assert!(
                    w.contains(needle) && w.contains(&abs[..abs.len() - 5]),
                    "{what}: {w}"
                );
            }
        }
        // a path a shell would split is quoted
        let spaced = d.path().join("my tools/loopexec");
        std::fs::create_dir_all(spaced.parent().unwrap()).unwrap();
        executable(&spaced);
        let (c, _) = gate_command(Some(&spaced), None);
        assert!(c.starts_with('\'') && c.ends_with("loopexec' gate"), "{c}");
    }

    /// A hook written by an earlier init (bare `loopexec gate`) is pointed at the new
    /// command, not added twice.
    #[test]
    fn init_again_updates_the_hook_command() {
        let d = tempfile::tempdir().unwrap();
        install_hooks(d.path(), "claude", "loopexec gate").unwrap();
        install_hooks(d.path(), "claude", "/opt/lx/loopexec gate").unwrap();
        let v: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(d.path().join(".claude/settings.json")).unwrap(),
        )
        .unwrap();
        for ev in ["PreToolUse", "PostToolUse"] {
            let list = v["hooks"][ev].as_array().unwrap();
            assert_eq!(list.len(), 1, "{v}");
            assert_eq!(list[0]["hooks"][0]["command"], "/opt/lx/loopexec gate");
        }
    }
}
