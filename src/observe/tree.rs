//! STUB: tree observation until git snapshots land.
use crate::config::RunConfig;
use crate::receipt::events::GitState;
use crate::trajectory::Trajectory;
use std::path::Path;

pub struct TreeObs {
    pub tree: Option<String>,
    pub snapshot: Option<String>,
    pub measures: serde_json::Value,
}
pub struct TreeObserver;
impl TreeObserver {
    pub fn new(_w: &Path, _r: &str, _c: &RunConfig) -> Self {
        TreeObserver
    }
    pub fn baseline(&mut self) -> (GitState, serde_json::Value, Vec<String>) {
        (GitState::default(), serde_json::Value::Null, vec![])
    }
    pub fn snapshot_of(&self, _it: u32, _t: &Trajectory) -> Option<String> {
        None
    }
    pub fn restore(&self, _s: &str) -> Result<(), String> {
        Ok(())
    }
    pub fn current_tree(&mut self) -> Option<String> {
        None
    }
    pub fn observe(&mut self, _it: u32) -> TreeObs {
        TreeObs {
            tree: None,
            snapshot: None,
            measures: serde_json::Value::Null,
        }
    }
    pub fn changed(&self, _a: &str, _b: &str) -> Vec<String> {
        vec![]
    }
}
