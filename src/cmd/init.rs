//! `loopexec init`: writes a commented `loop.toml` and creates `.loopexec/`.

use crate::cli::Outcome;
use crate::cmd::bodies::InitBody;
use crate::workspace::Workspace;
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
