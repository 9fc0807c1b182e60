//! The typed `--json` bodies of the control commands — `hold`, `release`, `holds`,
//! `halts`, `ack`, `watch`, `gate`, `pending`, `confirm`, `deny` (see
//! [`crate::output`]). Each keeps every field the command printed before the contract
//! was typed; a field that only some outcomes print is optional and absent from the
//! others.

use crate::output::{Body, RunFacts};
use crate::store::{AckHow, HaltEventRow, HoldRow, PendingAction};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

macro_rules! body {
    ($t:ty, $name:literal) => {
        impl Body for $t {
            const COMMAND: &'static str = $name;
            fn human(&self) -> String {
                self.human.clone()
            }
        }
    };
}

/// `hold`: the hold taken.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HoldBody {
    pub hold_id: String,
    pub hold: HoldRow,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(HoldBody, "hold");

/// `release`: the hold released.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReleaseBody {
    pub hold_id: String,
    pub released_by: String,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(ReleaseBody, "release");

/// `holds`: the holds in force, global ones first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HoldsBody {
    pub holds: Vec<HoldRow>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(HoldsBody, "holds");

/// `halts`: halt events with their acknowledgements, newest first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HaltsBody {
    pub halts: Vec<HaltEventRow>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(HaltsBody, "halts");

/// `ack`: a halt event acknowledged (`ack HALT_ID`: `halt_id`, `acknowledged_by`,
/// `resolution`) or a run's work reviewed (`ack --run-id`: `reviewer`, `iteration`,
/// `run`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AckBody {
    pub run_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub halt_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acknowledged_by: Option<String>,
    /// `resolved`, `escalated` or `dismissed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    /// The person who reviewed the run's work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<String>,
    /// The iteration the review covers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// How the acknowledgement was made (terminal, non-interactive, SSH signature).
    pub how: AckHow,
    /// The reviewed run's facts (`ack --run-id`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<RunFacts>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(AckBody, "ack");

/// `watch`: a run reported `finished`, `alive` or wedged (`heartbeat_stale`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct WatchBody {
    pub run_id: String,
    pub run: RunFacts,
    /// Kept for compatibility; the same as `run.halt_reason` (finished runs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_halt_reason: Option<String>,
    /// The finished run's halt iteration; the same as `run.iteration`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// The run's loopexec process (absent for a finished run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<Option<u32>>,
    /// The last heartbeat read (absent for a finished run; `null` when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heartbeat: Option<Option<crate::engine::Heartbeat>>,
    /// `heartbeat_stale` when the run is wedged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub halt_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contributors: Vec<String>,
    /// `--kill`: the process groups ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub killed_process_groups: Option<Vec<i32>>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(WatchBody, "watch");

/// `gate`: the hook's answer, printed verbatim in the agent's protocol.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GateBody {
    /// Always true: without `--json` stdout is the hook protocol, not loopexec's JSON.
    pub raw: bool,
    /// What the hook printed for the agent (`null` when nothing).
    pub hook_output: Option<Value>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(GateBody, "gate");

/// `pending`: destructive agent actions waiting for a person.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PendingBody {
    pub pending: Vec<PendingAction>,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(PendingBody, "pending");

/// `confirm` / `deny`: a waiting action answered.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DecideBody {
    pub action_id: String,
    /// `confirmed` or `denied`.
    pub decision: String,
    pub by: String,
    #[serde(skip)]
    #[schemars(skip)]
    pub human: String,
}
body!(DecideBody, "confirm");
