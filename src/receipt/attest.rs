//! Signed attestations of a run's verdict: a DSSE envelope (Dead Simple Signing
//! Envelope, secure-systems-lab/dsse, protocol v1) holding an in-toto Statement v1
//! whose predicate (type [`PREDICATE_TYPE`]) is the verdict, signed with ed25519
//! (RFC 8032, via `ed25519-dalek`).
//!
//! Subjects: the receipt file (digests `sha256` and `blake3` of its bytes) and, when
//! the run has one, the final snapshot's git tree (`gitTree`). The signature covers
//! DSSE's pre-authentication encoding `PAE(payloadType, payload)`:
//! `"DSSEv1" SP len(type) SP type SP len(body) SP body` (lengths in ASCII decimal).
//!
//! Key files are one line of text: `loopexec-ed25519-secret-v1 <base64 32-byte seed>`
//! and `loopexec-ed25519-public-v1 <base64 32-byte key>`. There is no default key.

use crate::output::Spend;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use std::collections::BTreeMap;
use std::path::Path;

/// The predicate type of a loopexec verdict.
pub const PREDICATE_TYPE: &str = "https://loopexec.dev/verdict/v1";
/// in-toto Statement v1 type.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
const SECRET_TAG: &str = "loopexec-ed25519-secret-v1";
const PUBLIC_TAG: &str = "loopexec-ed25519-public-v1";

/// Problems with keys, envelopes and statements.
#[derive(Debug, thiserror::Error)]
pub enum AttestError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} is not a loopexec {what} key file (expected one line `{tag} <base64>`)")]
    BadKey {
        path: String,
        what: &'static str,
        tag: &'static str,
    },
    #[error("{0} already exists; remove it or choose another --out directory")]
    Exists(String),
    #[error("the attestation is not a DSSE envelope: {0}")]
    BadEnvelope(String),
    #[error("the signature does not verify under this public key (the envelope was changed, or signed by another key)")]
    BadSignature,
    #[error("the signed payload is not an in-toto statement with a loopexec verdict: {0}")]
    BadStatement(String),
    #[error("cannot generate a key: {0}")]
    Random(String),
}

/// A DSSE envelope.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dsse {
    /// Always [`PAYLOAD_TYPE`].
    pub payload_type: String,
    /// Base64 (standard alphabet, padded) of the statement's JSON bytes.
    pub payload: String,
    pub signatures: Vec<DsseSignature>,
}

/// One DSSE signature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DsseSignature {
    /// Key id: hex of the first 16 bytes of blake3(public key).
    pub keyid: String,
    /// Base64 of the 64-byte ed25519 signature over `PAE(payloadType, payload)`.
    pub sig: String,
}

/// An in-toto Statement v1 about a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Statement {
    /// Always [`STATEMENT_TYPE`].
    #[serde(rename = "_type")]
    pub statement_type: String,
    pub subject: Vec<Subject>,
    /// Always [`PREDICATE_TYPE`].
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: VerdictPredicate,
}

/// An in-toto subject: a name and its digests (algorithm → lowercase hex).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Subject {
    pub name: String,
    pub digest: BTreeMap<String, String>,
}

/// The verdict a run reached (predicate [`PREDICATE_TYPE`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VerdictPredicate {
    pub run_id: String,
    pub halt_reason: Option<String>,
    pub halt_class: Option<String>,
    pub exit_code: Option<u8>,
    /// The halt's iteration (attempts after the baseline).
    pub iterations: u32,
    /// The guards in force: the run's `[guards]` policy, confirmation runs, budget caps
    /// and the guards that could not run (with why).
    pub guards: serde_json::Value,
    /// Verdict fingerprint of the last main check run (`receipt::fingerprint`).
    pub fingerprint: Option<String>,
    pub spend: Spend,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    /// The loopexec that signed.
    pub loopexec_version: String,
}

/// DSSE pre-authentication encoding.
#[must_use]
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    v.extend_from_slice(payload);
    v
}

/// Key id of a public key.
#[must_use]
pub fn keyid(key: &VerifyingKey) -> String {
    blake3::hash(key.as_bytes()).to_hex()[..32].to_string()
}

/// Digests of a file's bytes: `sha256` and `blake3`.
#[must_use]
pub fn digests(bytes: &[u8]) -> BTreeMap<String, String> {
    let mut d = BTreeMap::new();
    d.insert("sha256".into(), hex(&sha2::Sha256::digest(bytes)));
    d.insert("blake3".into(), blake3::hash(bytes).to_hex().to_string());
    d
}

/// Lowercase hex of `b` (a SHA-256 digest as DSSE, in-toto and `Cargo.lock` spell it).
#[must_use]
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A fresh key pair from the OS's random source.
///
/// # Errors
/// [`AttestError::Random`] when the OS has no randomness to give.
pub fn generate() -> Result<SigningKey, AttestError> {
    let mut seed = [0u8; 32];
    getrandom::getrandom(&mut seed).map_err(|e| AttestError::Random(e.to_string()))?;
    Ok(SigningKey::from_bytes(&seed))
}

/// Writes `<dir>/loopexec.key` (mode 0600) and `<dir>/loopexec.pub`; refuses to
/// overwrite either. Returns their paths.
///
/// # Errors
/// [`AttestError::Exists`], [`AttestError::Write`].
pub fn write_keys(
    dir: &Path,
    key: &SigningKey,
) -> Result<(std::path::PathBuf, std::path::PathBuf), AttestError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let sk = dir.join("loopexec.key");
    let pk = dir.join("loopexec.pub");
    for p in [&sk, &pk] {
        if p.exists() {
            return Err(AttestError::Exists(p.display().to_string()));
        }
    }
    let write = |p: &Path, mode: u32, text: String| {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(p)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .map_err(|source| AttestError::Write {
                path: p.display().to_string(),
                source,
            })
    };
    write(
        &sk,
        0o600,
        format!("{SECRET_TAG} {}\n", B64.encode(key.to_bytes())),
    )?;
    write(
        &pk,
        0o644,
        format!(
            "{PUBLIC_TAG} {}\n",
            B64.encode(key.verifying_key().as_bytes())
        ),
    )?;
    Ok((sk, pk))
}

fn read_tagged(
    path: &Path,
    tag: &'static str,
    what: &'static str,
) -> Result<[u8; 32], AttestError> {
    let text = std::fs::read_to_string(path).map_err(|source| AttestError::Read {
        path: path.display().to_string(),
        source,
    })?;
    let bad = || AttestError::BadKey {
        path: path.display().to_string(),
        what,
        tag,
    };
    let rest = text.trim().strip_prefix(tag).ok_or_else(bad)?;
    let bytes = B64.decode(rest.trim()).map_err(|_| bad())?;
    bytes.try_into().map_err(|_| bad())
}

/// Reads a secret key file.
///
/// # Errors
/// [`AttestError::Read`], [`AttestError::BadKey`].
pub fn read_secret(path: &Path) -> Result<SigningKey, AttestError> {
    Ok(SigningKey::from_bytes(&read_tagged(
        path, SECRET_TAG, "secret",
    )?))
}

/// Reads a public key file.
///
/// # Errors
/// [`AttestError::Read`], [`AttestError::BadKey`] (also for bytes that are not a
/// valid ed25519 point).
pub fn read_public(path: &Path) -> Result<VerifyingKey, AttestError> {
    let b = read_tagged(path, PUBLIC_TAG, "public")?;
    VerifyingKey::from_bytes(&b).map_err(|_| AttestError::BadKey {
        path: path.display().to_string(),
        what: "public",
        tag: PUBLIC_TAG,
    })
}

/// Signs a statement into a DSSE envelope.
///
/// # Errors
/// Serialization of the statement (not expected).
pub fn sign(statement: &Statement, key: &SigningKey) -> Result<Dsse, AttestError> {
    let payload =
        serde_json::to_vec(statement).map_err(|e| AttestError::BadStatement(e.to_string()))?;
    let sig = key.sign(&pae(PAYLOAD_TYPE, &payload));
    Ok(Dsse {
        payload_type: PAYLOAD_TYPE.into(),
        payload: B64.encode(&payload),
        signatures: vec![DsseSignature {
            keyid: keyid(&key.verifying_key()),
            sig: B64.encode(sig.to_bytes()),
        }],
    })
}

/// Verifies an envelope's signature under `key` and returns its statement.
///
/// # Errors
/// [`AttestError::BadEnvelope`] (not base64, wrong payload type, no signature),
/// [`AttestError::BadSignature`], [`AttestError::BadStatement`].
pub fn open(env: &Dsse, key: &VerifyingKey) -> Result<Statement, AttestError> {
    open_json(env, key).map(|(st, _)| st)
}

/// [`open`], also returning the signed payload as JSON: every field the signer
/// wrote, those [`Statement`] does not know included, for [`disagreements`].
///
/// # Errors
/// As [`open`].
pub fn open_json(
    env: &Dsse,
    key: &VerifyingKey,
) -> Result<(Statement, serde_json::Value), AttestError> {
    if env.payload_type != PAYLOAD_TYPE {
        return Err(AttestError::BadEnvelope(format!(
            "payloadType is `{}`, expected `{PAYLOAD_TYPE}`",
            env.payload_type
        )));
    }
    let payload = B64
        .decode(&env.payload)
        .map_err(|e| AttestError::BadEnvelope(format!("payload is not base64: {e}")))?;
    if env.signatures.is_empty() {
        return Err(AttestError::BadEnvelope("it has no signature".into()));
    }
    let msg = pae(&env.payload_type, &payload);
    let ok = env.signatures.iter().any(|s| {
        B64.decode(&s.sig)
            .ok()
            .and_then(|b| Signature::from_slice(&b).ok())
            .is_some_and(|sig| key.verify(&msg, &sig).is_ok())
    });
    if !ok {
        return Err(AttestError::BadSignature);
    }
    let json: serde_json::Value =
        serde_json::from_slice(&payload).map_err(|e| AttestError::BadStatement(e.to_string()))?;
    let st: Statement = serde_json::from_value(json.clone())
        .map_err(|e| AttestError::BadStatement(e.to_string()))?;
    if st.statement_type != STATEMENT_TYPE || st.predicate_type != PREDICATE_TYPE {
        return Err(AttestError::BadStatement(format!(
            "_type `{}`, predicateType `{}`",
            st.statement_type, st.predicate_type
        )));
    }
    Ok((st, json))
}

/// Every field where a signed statement (`signed`, the payload's JSON) differs from
/// the statement derived from the receipt (`derived`), one line each, named by its
/// path in the statement (`predicate.halt_reason`, `subject[1].digest.gitTree`):
/// a field only one of them has counts. Empty when they agree. A signature says
/// who signed; only the receipt says what happened, so `verify` refuses a statement
/// with any line here.
#[must_use]
pub fn disagreements(signed: &serde_json::Value, derived: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_json("", signed, derived, &mut out);
    out
}

/// At most this many characters of a value are quoted in a disagreement.
const QUOTED_VALUE_LIMIT: usize = 80;

fn quoted(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.chars().count() <= QUOTED_VALUE_LIMIT {
        return s;
    }
    let cut: String = s.chars().take(QUOTED_VALUE_LIMIT).collect();
    format!("{cut}…")
}

fn diff_json(
    at: &str,
    signed: &serde_json::Value,
    derived: &serde_json::Value,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    let name = |key: &str| {
        if at.is_empty() {
            key.to_string()
        } else {
            format!("{at}.{key}")
        }
    };
    match (signed, derived) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => diff_json(&name(k), x, y, out),
                    (Some(x), None) => out.push(format!(
                        "{}: the statement says {}, the receipt has no such field",
                        name(k),
                        quoted(x)
                    )),
                    (None, Some(y)) => out.push(format!(
                        "{}: missing from the statement, the receipt says {}",
                        name(k),
                        quoted(y)
                    )),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let here = format!("{at}[{i}]");
                match (a.get(i), b.get(i)) {
                    (Some(x), Some(y)) => diff_json(&here, x, y, out),
                    (Some(x), None) => out.push(format!(
                        "{here}: the statement says {}, the receipt has no such entry",
                        quoted(x)
                    )),
                    (None, Some(y)) => out.push(format!(
                        "{here}: missing from the statement, the receipt says {}",
                        quoted(y)
                    )),
                    (None, None) => {}
                }
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(format!(
            "{}: the statement says {}, the receipt says {}",
            if at.is_empty() { "(statement)" } else { at },
            quoted(a),
            quoted(b)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement() -> Statement {
        Statement {
            statement_type: STATEMENT_TYPE.into(),
            subject: vec![Subject {
                name: "r.jsonl".into(),
                digest: digests(b"receipt"),
            }],
            predicate_type: PREDICATE_TYPE.into(),
            predicate: VerdictPredicate {
                run_id: "r".into(),
                halt_reason: Some("success_condition_met".into()),
                halt_class: Some("converged".into()),
                exit_code: Some(10),
                iterations: 2,
                guards: serde_json::json!({}),
                fingerprint: None,
                spend: Spend::default(),
                started_at: None,
                finished_at: None,
                loopexec_version: "0".into(),
            },
        }
    }

    #[test]
    fn a_signed_statement_opens_and_any_changed_byte_is_refused() {
        let key = SigningKey::from_bytes(&[7u8; 32]);
        let env = sign(&statement(), &key).unwrap();
        assert_eq!(open(&env, &key.verifying_key()).unwrap(), statement());
        let other = SigningKey::from_bytes(&[8u8; 32]);
        assert!(matches!(
            open(&env, &other.verifying_key()),
            Err(AttestError::BadSignature)
        ));
        let payload = B64.decode(&env.payload).unwrap();
        for i in [0, payload.len() / 2, payload.len() - 1] {
            let mut p = payload.clone();
            p[i] ^= 1;
            let bad = Dsse {
                payload: B64.encode(&p),
                ..env.clone()
            };
            assert!(open(&bad, &key.verifying_key()).is_err(), "byte {i}");
        }
    }

    #[test]
    fn disagreements_name_every_field_that_differs() {
        use serde_json::json;
        let honest = serde_json::to_value(statement()).unwrap();
        let edit = |f: &dyn Fn(&mut serde_json::Value)| {
            let mut v = honest.clone();
            f(&mut v);
            v
        };
        let cases: Vec<(&str, serde_json::Value, Vec<&str>)> = vec![
            ("the honest statement", honest.clone(), vec![]),
            (
                "a red verdict signed as green",
                edit(&|v| {
                    v["predicate"]["halt_reason"] = json!("no_convergence");
                    v["predicate"]["exit_code"] = json!(12);
                }),
                vec!["predicate.exit_code", "predicate.halt_reason"],
            ),
            (
                "another receipt digest",
                edit(&|v| v["subject"][0]["digest"]["sha256"] = json!("00")),
                vec!["subject[0].digest.sha256"],
            ),
            (
                "a subject the receipt has no counterpart for",
                edit(&|v| {
                    v["subject"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"name": "x", "digest": {}}));
                }),
                vec!["subject[1]"],
            ),
            (
                "a field loopexec never writes",
                edit(&|v| v["predicate"]["verdict"] = json!("green")),
                vec!["predicate.verdict"],
            ),
            (
                "a field dropped",
                edit(&|v| {
                    v["predicate"].as_object_mut().unwrap().remove("iterations");
                }),
                vec!["predicate.iterations"],
            ),
            (
                "a number of another type",
                edit(&|v| v["predicate"]["iterations"] = json!("2")),
                vec!["predicate.iterations"],
            ),
        ];
        for (what, signed, want) in cases {
            let got = disagreements(&signed, &honest);
            let named: Vec<&str> = got
                .iter()
                .map(|l| l.split(':').next().unwrap_or_default())
                .collect();
            assert_eq!(named, want, "{what}: {got:?}");
        }
        let long = edit(&|v| v["predicate"]["halt_reason"] = json!("x".repeat(500)));
        let got = disagreements(&long, &honest);
        assert!(got[0].chars().count() < 250, "a long value is cut: {got:?}");
        assert!(got[0].contains("\"success_condition_met\""), "{got:?}");
    }

    #[test]
    fn pae_matches_the_dsse_definition() {
        assert_eq!(pae("t", b"ab"), b"DSSEv1 1 t 2 ab".to_vec());
    }

    #[test]
    fn keys_round_trip_and_are_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let key = SigningKey::from_bytes(&[9u8; 32]);
        let (sk, pk) = write_keys(dir.path(), &key).unwrap();
        assert_eq!(read_secret(&sk).unwrap().to_bytes(), key.to_bytes());
        assert_eq!(read_public(&pk).unwrap(), key.verifying_key());
        assert!(matches!(
            write_keys(dir.path(), &key),
            Err(AttestError::Exists(_))
        ));
        assert!(
            read_public(&sk).is_err(),
            "a secret key is not a public key"
        );
    }
}
