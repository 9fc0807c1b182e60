//! Integration tests: the real binary in temp dirs against real child processes.
//!
//! Every test builds its own git repository in a temp dir, runs
//! `target/…/loopexec --json` as a child process, and asserts on the exit code, the one
//! JSON object on stdout and the hash-chained receipt. Child commands use unique
//! markers (`sleep 41xx`) so tests can prove nothing was left running, and a drop guard
//! kills any leftover so a failing test never leaks processes.

mod advice;
mod commands;
mod contract;
mod contract_commands;
mod control;
mod guards;
mod judgment;
mod oracle;
mod parse;
mod progress;
mod review_fixes;
mod run_basic;
mod run_process;
mod spend_liveness;
mod support;
mod trust;
mod trust_loaders;
mod trust_resolution;
