//! Isolation of the check: `check_network = "none"` runs the check in a private
//! network namespace (`unshare --net`, loopback only). When the machine cannot create
//! one the run halts `isolation_unsatisfiable` before any step: a requested isolation
//! is never silently dropped.

use std::process::{Command, Stdio};

/// True when `unshare --net` works here (root, or user namespaces allowed).
#[must_use]
pub fn network_namespace_available() -> bool {
    Command::new("unshare")
        .args(["--net", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Quotes `s` for a POSIX shell (single quotes; embedded `'` as `'\''`).
#[must_use]
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The command line that runs `check` under `network` (`host`: unchanged; `none`: in a
/// private network namespace with loopback brought up).
#[must_use]
pub fn wrap_check(check: &str, network: &str) -> String {
    if network != "none" {
        return check.to_string();
    }
    let inner = format!("ip link set lo up 2>/dev/null; {check}");
    format!("exec unshare --net -- sh -c {}", shell_quote(&inner))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_the_shell() {
        let cmd = wrap_check("echo 'it''s' \"$HOME\" | tr a b", "none");
        assert!(cmd.starts_with("exec unshare --net -- sh -c '"));
        assert_eq!(wrap_check("true", "host"), "true");
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", shell_quote("a'b \"c\" $d")))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "a'b \"c\" $d");
    }
}
