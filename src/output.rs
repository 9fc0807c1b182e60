//! The one JSON contract: every command's `--json` output is an [`Envelope`] — the
//! five envelope fields `tool`, `version`, `status`, `errors`, `exit_code` — plus the
//! fields of a typed body struct, one per command.
//!
//! Invariants:
//! * envelope fields always win: a body field with a reserved name ([`RESERVED`]) is
//!   dropped when the object is assembled ([`assemble`]), and a test over every body's
//!   schema fails when a body declares one;
//! * a run's facts have one shape and one set of names everywhere: [`RunFacts`],
//!   printed under `run` by `run`, `status`, `explain-halt`, `report` and `replay`;
//! * fields are only ever added; the committed schemas under `schemas/` are generated
//!   from these types ([`schemas`]) and a test fails when they differ.
//!
//! A new command adopts the contract by defining a body struct that derives
//! `Serialize` and `JsonSchema`, implementing [`Body`] for it, returning
//! [`Outcome::from_body`](crate::cli::Outcome::from_body), and listing it in
//! [`schemas`].

use crate::cli::Outcome;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The envelope's field names; a body can never set them.
pub const RESERVED: [&str; 5] = ["tool", "version", "status", "errors", "exit_code"];

/// The JSON object a command prints: the envelope fields, then the body's fields.
///
/// Serialized by [`assemble`] (never by flattening, so a body cannot shadow the
/// envelope); this type exists to give the schema its shape.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Envelope<T> {
    /// Always `loopexec`.
    pub tool: String,
    /// loopexec's version (semver).
    pub version: String,
    /// `ok`, `halted`, `error`, `usage_error`, `mismatch`, or a command-specific status.
    pub status: String,
    /// Error messages; empty when the command succeeded.
    pub errors: Vec<String>,
    /// The process exit code of *this* command (see `loopexec help exit-codes`). For
    /// `run` it is the halt's exit code; for read commands it is their own (0 when they
    /// ran), while the inspected run's exit code is `run.exit_code`.
    pub exit_code: u8,
    /// The command's own fields.
    #[serde(flatten)]
    pub body: T,
}

/// A command's typed `--json` body and its human rendering.
pub trait Body: Serialize + JsonSchema {
    /// The command's name; its schema is `schemas/<COMMAND>.json`.
    const COMMAND: &'static str;
    /// Human text for stdout (without `--json`).
    fn human(&self) -> String;
}

/// Assembles the printed object: envelope fields first, then every body field whose
/// name is not reserved.
#[must_use]
pub fn assemble(o: &Outcome) -> Value {
    let mut m = Map::new();
    m.insert("tool".into(), Value::from("loopexec"));
    m.insert("version".into(), Value::from(env!("CARGO_PKG_VERSION")));
    m.insert("status".into(), Value::from(o.status.clone()));
    m.insert("errors".into(), Value::from(o.errors.clone()));
    m.insert("exit_code".into(), Value::from(o.exit_code));
    for (k, v) in &o.fields {
        if !RESERVED.contains(&k.as_str()) {
            m.insert(k.clone(), v.clone());
        }
    }
    Value::Object(m)
}

impl Outcome {
    /// An outcome from a typed body: its fields for `--json`, its human text.
    #[must_use]
    pub fn from_body<B: Body>(status: &str, exit_code: u8, body: &B) -> Outcome {
        let fields = match serde_json::to_value(body) {
            Ok(Value::Object(m)) => m,
            Ok(_) | Err(_) => Map::new(),
        };
        Outcome {
            status: status.into(),
            exit_code,
            fields,
            human: body.human(),
            errors: Vec::new(),
            hint: None,
        }
    }
}

/// What the agent spent in a run: the sum over iterations that reported usage.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spend {
    /// USD over iterations with a known cost; `null` when no iteration's cost is known.
    pub usd: Option<f64>,
    /// Tokens counted by `--budget-tokens` (fresh input + cache writes + output).
    pub tokens: u64,
    /// Iterations whose exec reported a cost.
    pub metered_iterations: u32,
    /// Iterations whose exec ran but reported no cost ("unknown", counted as 0 USD).
    pub unmetered_iterations: u32,
}

/// The facts of one run, with the same names in every command's output (`run: {…}`).
///
/// Source: the receipt (`run_started`, `iteration_started`, `exec_finished`,
/// `halted` and their timestamps); for a run refused before its receipt existed, the
/// preflight halt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunFacts {
    /// The run id (`null` when the run was refused before it had a valid id).
    pub run_id: Option<String>,
    /// The stable halt reason; `null` while the run has not halted.
    pub halt_reason: Option<String>,
    /// The halt's class (e.g. `iteration-cap`); `null` while not halted.
    pub halt_class: Option<String>,
    /// The halt's exit code (10–50); `null` while not halted.
    pub exit_code: Option<u8>,
    /// The halt's iteration, or the current one while running (0 is the baseline);
    /// `null` before iteration 0 started (a run refused at preflight), as the `run`
    /// command's own `iteration`.
    pub iteration: Option<u32>,
    /// RFC 3339 UTC time of `run_started` (of the halt, for a preflight refusal).
    pub started_at: Option<String>,
    /// RFC 3339 UTC time of the last `halted` event; `null` while running.
    pub finished_at: Option<String>,
    /// `finished_at - started_at` in milliseconds; `null` while running.
    pub duration_ms: Option<u64>,
    /// What the agent spent.
    pub spend: Spend,
    /// The receipt's path, when one exists.
    pub receipt: Option<String>,
}

/// A named schema to commit: `schemas/<name>.json`.
pub struct NamedSchema {
    /// File stem under `schemas/`.
    pub name: &'static str,
    /// The schema.
    pub schema: schemars::Schema,
    /// For a command's output: the top-level fields its body declares.
    pub body_fields: Vec<String>,
}

fn envelope_schema<B: Body>() -> NamedSchema {
    envelope_schema_as::<B>(B::COMMAND)
}

/// The schema of a command whose body is another command's type (`deny` prints
/// what `confirm` prints).
fn envelope_schema_as<B: Body>(name: &'static str) -> NamedSchema {
    NamedSchema {
        name,
        schema: schemars::schema_for!(Envelope<B>),
        body_fields: schema_properties(&schemars::schema_for!(B)),
    }
}

/// Every schema loopexec commits under `schemas/`, generated from the types.
#[must_use]
pub fn schemas() -> Vec<NamedSchema> {
    use crate::cmd::bodies as b;
    use crate::cmd::bodies_control as c;
    use crate::cmd::bodies_ops as o;
    let mut v = vec![
        envelope_schema::<b::RunBody>(),
        envelope_schema::<b::StatusBody>(),
        envelope_schema::<b::ExplainBody>(),
        envelope_schema::<b::ReportBody>(),
        envelope_schema::<b::ReplayBody>(),
        envelope_schema::<b::KeygenBody>(),
        envelope_schema::<b::AttestBody>(),
        envelope_schema::<b::VerifyBody>(),
        envelope_schema::<b::RunsBody>(),
        envelope_schema::<b::GcBody>(),
        envelope_schema::<b::InitBody>(),
        envelope_schema::<b::ExitCodesBody>(),
        envelope_schema::<b::CompletionsBody>(),
        envelope_schema::<b::ManBody>(),
        envelope_schema::<b::ErrorBody>(),
        envelope_schema::<b::VersionBody>(),
        envelope_schema::<b::HelpBody>(),
        envelope_schema::<o::InspectCostBody>(),
        envelope_schema::<o::CheckBody>(),
        envelope_schema::<o::ProbeCheckBody>(),
        envelope_schema::<o::DoctorBody>(),
        envelope_schema::<o::BuildContextBody>(),
        envelope_schema::<c::HoldBody>(),
        envelope_schema::<c::ReleaseBody>(),
        envelope_schema::<c::HoldsBody>(),
        envelope_schema::<c::HaltsBody>(),
        envelope_schema::<c::AckBody>(),
        envelope_schema::<c::WatchBody>(),
        envelope_schema::<c::GateBody>(),
        envelope_schema::<c::PendingBody>(),
        envelope_schema::<c::DecideBody>(),
        envelope_schema_as::<c::DecideBody>("deny"),
        envelope_schema::<crate::cmd::parse::ParseBody>(),
    ];
    v.push(NamedSchema {
        name: "receipt-event",
        schema: schemars::schema_for!(crate::receipt::events::Event),
        body_fields: Vec::new(),
    });
    v.push(NamedSchema {
        name: "attestation-statement",
        schema: schemars::schema_for!(crate::receipt::attest::Statement),
        body_fields: Vec::new(),
    });
    v
}

/// Schemas under `schemas/` generated and checked by their own module's tests:
/// the judge verdict (`crate::detect::judge`) and the audit log record
/// (`crate::gate::audit`).
pub const OWNED_ELSEWHERE: [&str; 2] = ["judge-verdict.schema.json", "audit-record.schema.json"];

/// The names of the body fields a schema declares (top-level `properties`).
#[must_use]
pub fn schema_properties(s: &schemars::Schema) -> Vec<String> {
    s.as_value()
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_cannot_overwrite_the_envelope() {
        let mut f = Map::new();
        f.insert("exit_code".into(), Value::from(99));
        f.insert("tool".into(), Value::from("other"));
        f.insert("run_id".into(), Value::from("r"));
        let o = Outcome {
            status: "ok".into(),
            exit_code: 0,
            fields: f,
            human: String::new(),
            errors: vec![],
            hint: None,
        };
        let v = assemble(&o);
        assert_eq!(v["exit_code"], 0);
        assert_eq!(v["tool"], "loopexec");
        assert_eq!(v["run_id"], "r");
    }

    /// `schemas/` holds exactly what the types generate. After changing a type, run
    /// `LOOPEXEC_UPDATE_SCHEMAS=1 cargo test --lib output::` and commit the result.
    #[test]
    fn committed_schemas_match_the_types() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
        let update = std::env::var_os("LOOPEXEC_UPDATE_SCHEMAS").is_some();
        if update {
            std::fs::create_dir_all(&dir).unwrap();
        }
        let mut names = Vec::new();
        for s in schemas() {
            let file = format!("{}.json", s.name);
            let text = format!("{}\n", serde_json::to_string_pretty(&s.schema).unwrap());
            let path = dir.join(&file);
            if update {
                std::fs::write(&path, &text).unwrap();
            } else {
                let committed = std::fs::read_to_string(&path).unwrap_or_default();
                assert!(
                    committed == text,
                    "schemas/{file} differs from the types; regenerate with LOOPEXEC_UPDATE_SCHEMAS=1 cargo test --lib output:: and commit it"
                );
            }
            names.push(file);
        }
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".json"))
            .collect();
        on_disk.retain(|n| !OWNED_ELSEWHERE.contains(&n.as_str()));
        on_disk.sort();
        names.sort();
        assert_eq!(on_disk, names, "schemas/ holds files no type generates");
    }

    /// No command's body declares an envelope field, and every envelope schema has
    /// the five envelope fields.
    #[test]
    fn no_body_declares_a_reserved_field() {
        for s in schemas() {
            for r in RESERVED {
                assert!(
                    !s.body_fields.iter().any(|p| p == r),
                    "{}: the body declares the envelope field {r}",
                    s.name
                );
            }
            if !s.body_fields.is_empty() {
                let props = schema_properties(&s.schema);
                for r in RESERVED {
                    assert!(props.iter().any(|p| p == r), "{}: lacks {r}", s.name);
                }
            }
        }
    }
}
