//! Hand-written JSON Schemas for types whose shape is owned elsewhere: the stable halt
//! reasons (an enum of the taxonomy's strings, generated from [`HaltReason::ALL`]) and
//! the resolved policy (an object whose fields are documented in loop.toml).

use crate::config::RunConfig;
use crate::halt::HaltReason;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use std::borrow::Cow;

impl JsonSchema for HaltReason {
    fn schema_name() -> Cow<'static, str> {
        "HaltReason".into()
    }
    fn json_schema(_gen: &mut SchemaGenerator) -> Schema {
        let names: Vec<&str> = HaltReason::ALL.iter().map(|r| r.as_str()).collect();
        json_schema!({
            "description": "A stable halt reason (see `loopexec help exit-codes`).",
            "type": "string",
            "enum": names,
        })
    }
}

impl JsonSchema for RunConfig {
    fn schema_name() -> Cow<'static, str> {
        "RunConfig".into()
    }
    fn json_schema(_gen: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "The resolved policy of the run (loop.toml merged with flags); its fields are documented in the commented loop.toml that `loopexec init` writes.",
            "type": "object",
            "required": ["max_iterations", "success_exit_code"],
        })
    }
}
