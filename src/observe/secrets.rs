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

/// A key (variable name, JSON field name) that names a secret.
const SECRET_KEY: &str = concat!(
    r"[A-Za-z0-9_]*(?:SECRET|TOKEN|API_KEY|APIKEY|PASSWORD|ACCESS_KEY|PRIVATE_KEY",
    r"|secret|token|api_key|apikey|password|access_key|private_key)[A-Za-z0-9_]*"
);

fn is_secret_key(k: &str) -> bool {
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(&format!("^(?:{SECRET_KEY})$")).expect("static key pattern compiles")
    })
    .is_match(k)
}

/// An assignment or field whose key names a secret: the key, the separator (with the
/// key's closing quote, if any), then the value in one of four shapes: `"…"` (up to
/// the closing quote, escapes kept whole), `\"…\"` (the same inside a JSON string),
/// `'…'`, or bare (up to a space, quote, backslash or delimiter, so a bare value never
/// swallows a JSON quote or half an escape).
fn assignments() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(&format!(
            "(?P<key>{SECRET_KEY}){}",
            concat!(
                r#"(?P<sep>(?:\\?["'])?[ \t]*(?::=|[:=])[ \t]*)"#,
                r#"(?:"(?P<dq>(?:[^"\\\r\n]|\\[^\r\n])*)""#,
                r#"|\\"(?P<eq>(?:[^"\\\r\n]|\\[^"\r\n])*)\\""#,
                r#"|'(?P<sq>[^'"\\\r\n]*)'"#,
                r#"|(?P<bare>[^\s"'\\,;:=`{}\[\]()<>&|][^\s"'\\,;`{}\[\]()<>&|]*))"#,
            )
        ))
        .expect("static assignment pattern compiles")
    })
}

/// Whether an assignment's value is worth hiding: 8+ characters, not starting with
/// white space or JSON punctuation (a quote that closed a string, not one that opened a
/// value), and not a number (`"output_tokens": 1000`, `"cost_per_token": 0.000015`).
fn is_secret_value(v: &[u8]) -> bool {
    let numeric = v.iter().any(u8::is_ascii_digit)
        && v.iter()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'+' | b'-' | b'e' | b'E' | b'_'));
    v.len() >= 8
        && !numeric
        && !v[0].is_ascii_whitespace()
        && !matches!(v[0], b',' | b':' | b'}' | b']' | b'{' | b'[')
}

fn redact_assignments(text: &[u8]) -> Vec<u8> {
    assignments()
        .replace_all(text, |c: &regex::bytes::Captures<'_>| {
            let whole = c.get(0).map_or(&[][..], |m| m.as_bytes());
            let (open, value, close): (&[u8], _, &[u8]) = if let Some(v) = c.name("dq") {
                (b"\"", v, b"\"")
            } else if let Some(v) = c.name("eq") {
                (b"\\\"", v, b"\\\"")
            } else if let Some(v) = c.name("sq") {
                (b"'", v, b"'")
            } else if let Some(v) = c.name("bare") {
                (b"", v, b"")
            } else {
                return whole.to_vec();
            };
            if !is_secret_value(value.as_bytes()) {
                return whole.to_vec();
            }
            let mut out = whole[..value.start() - c.get(0).map_or(0, |m| m.start())].to_vec();
            debug_assert!(out.ends_with(open));
            out.extend_from_slice(b"[REDACTED]");
            out.extend_from_slice(close);
            out
        })
        .into_owned()
}

/// Values (8+ bytes) of the secret-named variables in this process's environment,
/// read once: loopexec never changes its own environment after it starts.
fn secret_env_values() -> &'static [Vec<u8>] {
    static V: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    V.get_or_init(|| {
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(k, v)| v.len() >= 8 && is_secret_name(k))
            .map(|(_, v)| v.into_bytes())
            .collect()
    })
}

/// Literals at least one of which every redaction needs: each provider shape of
/// [`patterns`] starts with one, each key of [`assignments`] contains one (the key
/// alternatives are matched case-sensitively, as written there), and each secret
/// environment value is one. Text holding none of them is returned as it is without
/// running either regex (most receipt lines: the regexes are then never compiled).
fn triggers() -> &'static aho_corasick::AhoCorasick {
    static AC: OnceLock<aho_corasick::AhoCorasick> = OnceLock::new();
    AC.get_or_init(|| {
        let mut lits: Vec<Vec<u8>> = [
            "sk-",
            "ghp_",
            "gho_",
            "ghu_",
            "ghs_",
            "ghr_",
            "github_pat_",
            "glpat-",
            "AKIA",
            "AIza",
            "xoxa-",
            "xoxb-",
            "xoxp-",
            "xoxr-",
            "xoxs-",
            "hf_",
            "-----BEGIN ",
            "SECRET",
            "TOKEN",
            "API_KEY",
            "APIKEY",
            "PASSWORD",
            "ACCESS_KEY",
            "PRIVATE_KEY",
            "secret",
            "token",
            "api_key",
            "apikey",
            "password",
            "access_key",
            "private_key",
        ]
        .iter()
        .map(|l| l.as_bytes().to_vec())
        .collect();
        lits.extend(secret_env_values().iter().cloned());
        aho_corasick::AhoCorasick::new(lits).expect("static trigger literals build")
    })
}

/// The byte-level passes: provider key shapes, secret assignments, and the values of
/// secret variables in this process's environment.
fn redact_bytes(text: &[u8]) -> Vec<u8> {
    if !triggers().is_match(text) {
        return text.to_vec();
    }
    let out = patterns().replace_all(text, &b"[REDACTED]"[..]);
    let mut out = redact_assignments(&out);
    for needle in secret_env_values() {
        if memchr::memmem::find(&out, needle).is_none() {
            continue;
        }
        let mut res = Vec::with_capacity(out.len());
        let mut rest = &out[..];
        while let Some(i) = memchr::memmem::find(rest, needle) {
            res.extend_from_slice(&rest[..i]);
            res.extend_from_slice(b"[REDACTED]");
            rest = &rest[i + needle.len()..];
        }
        res.extend_from_slice(rest);
        out = res;
    }
    out
}

/// Redacts a parsed JSON value string by string (object keys are kept), and hides the
/// whole string value of a field whose key names a secret.
fn redact_json_value(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::String(s) => {
            let r = redact_bytes(s.as_bytes());
            if r != s.as_bytes() {
                *s = String::from_utf8_lossy(&r).into_owned();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact_json_value),
        Value::Object(fields) => {
            for (k, v) in fields.iter_mut() {
                match v {
                    Value::String(s) if is_secret_key(k) && is_secret_value(s.as_bytes()) => {
                        *s = "[REDACTED]".to_owned();
                    }
                    _ => redact_json_value(v),
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Replaces secret-shaped substrings (provider keys, tokens, private keys), the values
/// of secret-named assignments and fields (`AWS_SECRET_ACCESS_KEY=…` becomes
/// `AWS_SECRET_ACCESS_KEY=[REDACTED]`, `"OPENAI_API_KEY":"sk-…"` becomes
/// `"OPENAI_API_KEY":"[REDACTED]"`; numbers and values under 8 characters are kept),
/// and the values of secret variables present in this process's environment with
/// `[REDACTED]`. Works on bytes: invalid UTF-8 is left as it is. Text that is one JSON
/// document stays one: if the byte-level passes would break it, the document is
/// redacted value by value instead (and re-serialized compactly).
#[must_use]
pub fn redact(text: &[u8]) -> Vec<u8> {
    let out = redact_bytes(text);
    if out == text || serde_json::from_slice::<serde::de::IgnoredAny>(&out).is_ok() {
        return out;
    }
    match serde_json::from_slice::<serde_json::Value>(text) {
        Ok(mut v) => {
            redact_json_value(&mut v);
            serde_json::to_vec(&v).unwrap_or(out)
        }
        Err(_) => out,
    }
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

    fn red(s: &str) -> String {
        String::from_utf8(redact(s.as_bytes())).expect("utf-8 in, utf-8 out")
    }

    #[test]
    fn secret_assignments_keep_the_key_and_hide_the_value() {
        assert_eq!(
            red("export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nnext"),
            "export AWS_SECRET_ACCESS_KEY=[REDACTED]\nnext"
        );
        assert_eq!(
            red("DB_PASSWORD = 'correct horse'"),
            "DB_PASSWORD = '[REDACTED]'"
        );
        assert_eq!(
            red(r#"MY_TOKEN="abc\"defghij" x"#),
            r#"MY_TOKEN="[REDACTED]" x"#
        );
        assert_eq!(red("api_key: abcdefgh12345"), "api_key: [REDACTED]");
        assert_eq!(
            red("url?access_token=abcdefghijk&x=1"),
            "url?access_token=[REDACTED]&x=1"
        );
        // Invalid UTF-8 around a redacted value passes through.
        let r = redact(b"\xff SERVICE_TOKEN=abcdefghijkl \xfe");
        assert_eq!(r, b"\xff SERVICE_TOKEN=[REDACTED] \xfe");
    }

    #[test]
    fn numbers_short_values_and_prose_are_kept() {
        for s in [
            r#"{"output_tokens": 1000, "cached_input_tokens":17000}"#,
            r#"{"cost_per_token": 0.000015}"#,
            "the agent used many tokens: 12 of them",
            "MY_TOKEN=short",
            "test auth::token::tests::refresh_works ... ok",
            "if token == \"abcdefghijkl\" {",
            "SECRET=",
        ] {
            assert_eq!(red(s), s);
        }
    }

    #[test]
    fn a_redacted_json_line_is_still_json() {
        let line = serde_json::json!({
            "ANTHROPIC_API_KEY": "not-a-provider-shape-but-secret",
            "exec": "export OPENAI_API_KEY=\"abcdefghijklmnop\" MY_TOKEN=qwertyuiop\\ && run",
            "usage": {"output_tokens": 1000, "model": "m"},
            "msg": "SECRET=",
            "next": "},{\"x\":1}]}]},{",
        })
        .to_string();
        let r = red(&line);
        let v: serde_json::Value = serde_json::from_str(&r).expect("still JSON");
        assert_eq!(v["ANTHROPIC_API_KEY"], "[REDACTED]");
        assert_eq!(
            v["exec"],
            "export OPENAI_API_KEY=\"[REDACTED]\" MY_TOKEN=[REDACTED]\\ && run"
        );
        assert_eq!(v["usage"]["output_tokens"], 1000);
        assert_eq!(v["msg"], "SECRET=");
        // Byte-level, not re-serialized: only the secrets changed.
        assert_eq!(
            r.len(),
            line.len()
                - "not-a-provider-shape-but-secret".len()
                - "abcdefghijklmnop".len()
                - "qwertyuiop".len()
                + 3 * "[REDACTED]".len()
        );
    }

    #[test]
    fn json_that_a_byte_pattern_would_break_is_redacted_value_by_value() {
        // The private-key pattern runs to the end of the text when there is no END line.
        let line = r#"{"a":"-----BEGIN RSA PRIVATE KEY-----\nMIIEow","b":1}"#;
        let v: serde_json::Value = serde_json::from_str(&red(line)).expect("still JSON");
        assert_eq!(v, serde_json::json!({"a": "[REDACTED]", "b": 1}));
    }
}
