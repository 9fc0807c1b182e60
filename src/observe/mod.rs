//! Observers: the parts of loopexec that touch the world and turn it into plain data.
pub mod assertions;
pub mod context;
pub mod frozen;
pub mod git;
pub mod guards;
pub mod isolation;
pub mod lex;
pub mod manifest;
pub mod mutate;
pub mod reports;
pub mod secrets;
pub mod store;
pub mod tamper;
pub mod tasks;
pub mod toolchain;
pub mod tree;
pub mod usage;
