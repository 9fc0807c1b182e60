//! Provider credentials: which environment variables look like secrets (stripped
//! from the check's environment by default) and redaction of secret-shaped text in
//! captured excerpts before they are written under `.loopexec/`.
//!
//! A check needs no provider key to run a test suite; a check that can read one can
//! also spend it or leak it into a report. Names are matched exactly against known
//! provider variables and by suffix (`_API_KEY`, `_TOKEN`, `_SECRET`, …); values are
//! never recorded, only names.

use regex::bytes::Regex;
use std::sync::OnceLock;

/// Provider credential variables known by name.
pub const KNOWN_SECRET_VARS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENAI_ORG_ID",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "MISTRAL_API_KEY",
    "GROQ_API_KEY",
    "OPENROUTER_API_KEY",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITLAB_TOKEN",
    "NPM_TOKEN",
    "CARGO_REGISTRY_TOKEN",
    "PYPI_TOKEN",
];

const SECRET_SUFFIXES: &[&str] = &[
    "_API_KEY",
    "_APIKEY",
    "_TOKEN",
    "_SECRET",
    "_SECRET_KEY",
    "_ACCESS_KEY",
    "_PRIVATE_KEY",
    "_PASSWORD",
];

/// True when an environment variable name looks like a credential.
#[must_use]
pub fn is_secret_name(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    KNOWN_SECRET_VARS.contains(&up.as_str()) || SECRET_SUFFIXES.iter().any(|s| up.ends_with(s))
}

/// Names of secret-looking variables in the current environment, minus `keep`, sorted.
#[must_use]
pub fn secret_env_names(keep: &[String]) -> Vec<String> {
    let mut names: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| is_secret_name(k) && !keep.iter().any(|x| x == k))
        .collect();
    names.sort();
    names.dedup();
    names
}

fn patterns() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(concat!(
            r"sk-ant-[A-Za-z0-9_\-]{10,}",
            r"|sk-(?:proj-)?[A-Za-z0-9_\-]{20,}",
            r"|gh[pousr]_[A-Za-z0-9]{20,}",
            r"|github_pat_[A-Za-z0-9_]{20,}",
            r"|glpat-[A-Za-z0-9_\-]{20,}",
            r"|AKIA[0-9A-Z]{16}",
            r"|AIza[0-9A-Za-z_\-]{30,}",
            r"|xox[abprs]-[A-Za-z0-9\-]{10,}",
            r"|hf_[A-Za-z0-9]{20,}",
            r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\z)",
        ))
        .expect("static secret patterns compile")
    })
}

/// Replaces secret-shaped substrings (provider keys, tokens, private keys) and the
/// values of secret variables present in this process's environment with
/// `[REDACTED]`. Works on bytes: invalid UTF-8 is left as it is.
#[must_use]
pub fn redact(text: &[u8]) -> Vec<u8> {
    let mut out = patterns()
        .replace_all(text, &b"[REDACTED]"[..])
        .into_owned();
    for (k, v) in std::env::vars_os() {
        let (Some(k), Some(v)) = (k.to_str(), v.to_str()) else {
            continue;
        };
        if v.len() >= 8 && is_secret_name(k) {
            let needle = v.as_bytes();
            let mut res = Vec::with_capacity(out.len());
            let mut i = 0;
            while i < out.len() {
                if out[i..].starts_with(needle) {
                    res.extend_from_slice(b"[REDACTED]");
                    i += needle.len();
                } else {
                    res.push(out[i]);
                    i += 1;
                }
            }
            out = res;
        }
    }
    out
}

/// Redacts a captured excerpt file in place (excerpts are at most head + tail bytes).
///
/// # Errors
/// I/O errors reading or writing the file.
pub fn redact_file(path: &std::path::Path) -> std::io::Result<()> {
    let data = std::fs::read(path)?;
    let red = redact(&data);
    if red != data {
        std::fs::write(path, red)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_patterns() {
        assert!(is_secret_name("ANTHROPIC_API_KEY"));
        assert!(is_secret_name("my_service_token"));
        assert!(!is_secret_name("PATH"));
        let t = b"key=sk-ant-api03-abcdefghijklmnop and AKIAABCDEFGHIJKLMNOP ok \xff";
        let r = redact(t);
        let s = String::from_utf8_lossy(&r);
        assert!(!s.contains("sk-ant-api03"), "{s}");
        assert!(!s.contains("AKIAABCDEFGHIJKLMNOP"));
        assert!(s.contains("ok"));
        assert!(r.ends_with(b"\xff"));
    }
}
