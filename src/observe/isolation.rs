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

/// `s` as one shell word: as it is when every byte is one a POSIX shell reads
/// literally (letters, digits, `_./:@%+=,-`), else [`shell_quote`]d. For paths in
/// commands loopexec prints for a person to paste (a state directory with a space in
/// its name stays one argument).
#[must_use]
pub fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_./:@%+=,-".contains(&b));
    if plain {
        s.to_string()
    } else {
        shell_quote(s)
    }
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

    #[test]
    fn a_shell_word_is_quoted_only_when_the_shell_would_split_or_expand_it() {
        assert_eq!(
            shell_word("/home/u/.local/state/x.git"),
            "/home/u/.local/state/x.git"
        );
        assert_eq!(shell_word("/tmp/state dir/x"), "'/tmp/state dir/x'");
        assert_eq!(shell_word("/tmp/proj \u{fc}"), "'/tmp/proj \u{fc}'");
        assert_eq!(shell_word(""), "''");
        for s in ["/tmp/a b", "it's", "$HOME", "a*b", "/tmp/\u{fc}"] {
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", shell_word(s)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), s);
        }
    }
}
