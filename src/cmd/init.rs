//! `loopexec init`: writes a commented `loop.toml` and creates `.loopexec/`.

use crate::cli::Outcome;
use crate::workspace::Workspace;
use serde_json::{json, Map};
use std::path::Path;

pub(crate) fn run(workdir: &Path, a: &crate::cli::InitArgs) -> Outcome {
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
        let mut f = Map::new();
        f.insert("config".into(), json!(path.display().to_string()));
        f.insert("written".into(), json!(false));
        return Outcome::ok(
            f,
            format!(
                "{} already exists; left unchanged (use --force to overwrite)\n",
                path.display()
            ),
        );
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
    let mut f = Map::new();
    f.insert("config".into(), json!(path.display().to_string()));
    f.insert("state_dir".into(), json!(ws.dir.display().to_string()));
    f.insert("written".into(), json!(true));
    f.insert("check".into(), json!(detected.map(|d| d.0)));
    f.insert("detected_from".into(), json!(detected.map(|d| d.1)));
    let next = match detected {
        Some((check, from)) => {
            format!("check: `{check}` (from {from}); set `exec` in loop.toml, then `loopexec run`")
        }
        None => "next: set `check` (and `exec`) in loop.toml, then `loopexec run`".to_string(),
    };
    Outcome::ok(
        f,
        format!(
            "wrote {}\ncreated {}\n{next}\n",
            path.display(),
            ws.dir.display()
        ),
    )
}
