//! `loopexec probe-check`: measure the check itself before trusting it.
//!
//! Three phases, all in fresh copies of the workdir (the real tree is never touched):
//! 1. **Flakiness** — `n` runs, each in its own fresh copy, where `n` is the smallest
//!    count that bounds the flake rate below `--max-flake-rate` at `--confidence` if no
//!    run disagrees (zero-failure binomial bound: `(1 - r)^n <= 1 - c`). The first
//!    disagreement (verdict or failing set) stops the phase: `check_flaky`, with the
//!    observed rate and its Wilson interval.
//! 2. **Side effects** — `--reruns` further runs in one copy, after its first run. If
//!    fresh copies agreed but reruns in one copy differ, the check depends on what it
//!    left behind: `check_has_side_effects` (cured by a reset, not by editing tests).
//! 3. **Hermeticity per dimension** — for each of `--dimensions` (order, seed, tz,
//!    locale, concurrency, load), runs under perturbed settings; a verdict that differs
//!    from the unperturbed one is `check_not_hermetic`, naming the dimension.
//!
//! With no disagreement the exact one-sided Clopper–Pearson upper bound for zero
//! flips, `1 - (1 - c)^(1/n)`, is reported as the achieved bound on the flake rate.

use crate::check::parse::{self, FormatChoice};
use crate::cli::{CheckOpts, Outcome, ProbeArgs};
use crate::halt::HaltReason;
use crate::oracle::{self, CheckSpec, Dimension, ProbeRun, Sandbox};
use crate::workspace::Workspace;
use serde_json::{json, Map, Value};
use std::io::IsTerminal;
use std::path::Path;

/// Builds the check spec shared by `probe-check` and `doctor`.
// Outcome is the command's rendered result, built once per command: boxing it buys nothing.
#[allow(clippy::result_large_err)]
pub(crate) fn check_spec(opts: &CheckOpts) -> Result<CheckSpec, Outcome> {
    let (command, format, success_exit_code, timeout) = (
        opts.command.as_str(),
        opts.test_format.as_str(),
        opts.success_exit_code,
        opts.check_timeout.as_deref(),
    );
    let fmt = if format == "auto" {
        FormatChoice::Auto
    } else {
        match parse::format_from_name(format) {
            Some(f) => FormatChoice::Fixed(f),
            None => {
                return Err(Outcome::error(
                    2,
                    format!("unknown --test-format `{format}`"),
                    Some(format!(
                        "use auto or one of: {}",
                        parse::format_names().join(", ")
                    )),
                ))
            }
        }
    };
    let timeout = match timeout.map(crate::config::parse_duration) {
        Some(Ok(d)) => Some(d),
        Some(Err(m)) => return Err(Outcome::error(2, format!("--check-timeout: {m}"), None)),
        None => None,
    };
    Ok(CheckSpec {
        command: command.to_string(),
        success_exit_code,
        format: fmt,
        timeout,
        env_remove: crate::observe::secrets::secret_env_names(&[]),
    })
}

pub(crate) fn describe(r: &ProbeRun) -> String {
    if r.green {
        "green".into()
    } else {
        format!("red ({} failing)", r.failing.len())
    }
}

/// A pristine copy of the workdir; maps I/O problems to an outcome.
#[allow(clippy::result_large_err)]
pub(crate) fn sandbox(workdir: &Path) -> Result<Sandbox, Outcome> {
    Sandbox::new(workdir).map_err(|e| {
        Outcome::error(
            HaltReason::InternalError.exit_code(),
            format!("cannot copy the workdir: {e}"),
            None,
        )
    })
}

/// Runs the check once in a fresh copy; maps I/O problems to an outcome.
#[allow(clippy::result_large_err)]
pub(crate) fn fresh_run(
    sb: &Sandbox,
    spec: &CheckSpec,
    env: &[(String, String)],
    load: bool,
) -> Result<ProbeRun, Outcome> {
    let copy = sb.fresh().map_err(|e| {
        Outcome::error(
            HaltReason::InternalError.exit_code(),
            format!("cannot make a fresh copy of the workdir: {e}"),
            None,
        )
    })?;
    oracle::run_check(spec, &copy.path(), env, load).map_err(|e| {
        Outcome::error(
            HaltReason::InternalError.exit_code(),
            format!("cannot run the check: {e}"),
            None,
        )
    })
}

pub(crate) fn halted(
    reason: HaltReason,
    mut f: Map<String, Value>,
    human: String,
    contributors: Vec<String>,
) -> Outcome {
    f.insert("halt_reason".into(), json!(reason.as_str()));
    f.insert("contributors".into(), json!(contributors));
    Outcome {
        status: "halted".into(),
        exit_code: reason.exit_code(),
        fields: f,
        human,
        errors: contributors,
        hint: None,
    }
}

/// A check that cannot start (exit 126/127) is an execution failure, never a verdict.
pub(crate) fn cannot_start(
    spec: &CheckSpec,
    r: &ProbeRun,
    f: Map<String, Value>,
) -> Option<Outcome> {
    matches!(r.exit_code, Some(126 | 127)).then(|| {
        let msg = format!(
            "check command cannot start: `{}` (exit {})",
            spec.command,
            r.exit_code.unwrap_or(0)
        );
        halted(
            HaltReason::ExecutionFailure,
            f,
            format!("{msg}\n"),
            vec![msg],
        )
    })
}

/// A dimension whose perturbation changed the verdict: which, the setting, the run.
type Broken = (Dimension, Vec<(String, String)>, ProbeRun);

pub(crate) fn run(workdir: &Path, a: &ProbeArgs) -> Outcome {
    if !(a.max_flake_rate > 0.0 && a.max_flake_rate < 1.0) {
        return Outcome::error(
            2,
            format!(
                "--max-flake-rate {} must be between 0 and 1 (exclusive)",
                a.max_flake_rate
            ),
            None,
        );
    }
    if !(a.confidence > 0.0 && a.confidence < 1.0) {
        return Outcome::error(
            2,
            format!(
                "--confidence {} must be between 0 and 1 (exclusive)",
                a.confidence
            ),
            None,
        );
    }
    let mut dims = Vec::new();
    for d in a
        .dimensions
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.trim().is_empty())
    {
        match Dimension::parse(d) {
            Some(x) => dims.push(x),
            None => {
                return Outcome::error(
                    2,
                    format!("unknown dimension `{d}`"),
                    Some("use order, seed, tz, locale, concurrency, load".into()),
                )
            }
        }
    }
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return super::ws_error(&e),
    };
    let spec = match check_spec(&a.check) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let planned = a
        .runs
        .unwrap_or_else(|| crate::stats::runs_needed(a.max_flake_rate, a.confidence))
        .max(2);
    let progress = std::io::stderr().is_terminal();
    let sb = match sandbox(&ws.workdir) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let mut f = Map::new();
    f.insert("check".into(), json!(a.check.command));
    f.insert("planned_runs".into(), json!(planned));
    f.insert("max_flake_rate".into(), json!(a.max_flake_rate));
    f.insert("confidence".into(), json!(a.confidence));

    // Phase 1: fresh copies.
    let mut runs: Vec<ProbeRun> = Vec::new();
    for i in 0..planned {
        if progress {
            eprint!("\rloopexec: probe run {}/{planned}", i + 1);
        }
        let r = match fresh_run(&sb, &spec, &[], false) {
            Ok(r) => r,
            Err(o) => return o,
        };
        if let Some(o) = cannot_start(&spec, &r, f.clone()) {
            return o;
        }
        let differs = runs
            .first()
            .is_some_and(|first| first.verdict() != r.verdict());
        runs.push(r);
        if differs {
            break;
        }
    }
    if progress {
        eprintln!();
    }
    let reference = runs[0].clone();
    let n = runs.len() as u64;
    let flips = runs
        .iter()
        .filter(|r| r.verdict() != reference.verdict())
        .count() as u64;
    f.insert("fresh_runs".into(), json!(n));
    f.insert(
        "fresh_verdicts".into(),
        json!(runs.iter().map(describe).collect::<Vec<_>>()),
    );
    f.insert("reference_verdict".into(), json!(describe(&reference)));
    if flips > 0 {
        let (lo, hi) = crate::stats::wilson_interval(flips, n, a.confidence);
        let odd = runs
            .iter()
            .position(|r| r.verdict() != reference.verdict())
            .unwrap_or(0);
        f.insert("flips".into(), json!(flips));
        f.insert("flake_rate".into(), json!(flips as f64 / n as f64));
        f.insert(
            "wilson".into(),
            json!({"confidence": a.confidence, "lower": lo, "upper": hi}),
        );
        let c = vec![
            format!(
                "fresh copies disagree: run 1 was {}, run {} was {} (identical input)",
                describe(&reference),
                odd + 1,
                describe(&runs[odd])
            ),
            format!(
                "observed flake rate {flips}/{n}; Wilson {:.0}% interval [{lo:.3}, {hi:.3}]",
                a.confidence * 100.0
            ),
        ];
        let human = format!("check_flaky (exit 14)\n  - {}\n  - {}\n", c[0], c[1]);
        return halted(HaltReason::CheckFlaky, f, human, c);
    }
    let bound = 1.0 - (1.0_f64 - a.confidence).powf(1.0 / n as f64);
    f.insert("flips".into(), json!(0));
    f.insert(
        "flake_rate_bound".into(),
        json!({"method": "clopper-pearson one-sided, zero flips", "confidence": a.confidence, "upper": bound, "meets_target": bound <= a.max_flake_rate}),
    );

    // Phase 2: reruns in one copy.
    let copy = match sb.fresh() {
        Ok(c) => c,
        Err(e) => {
            return Outcome::error(
                HaltReason::InternalError.exit_code(),
                format!("cannot make a fresh copy: {e}"),
                None,
            )
        }
    };
    let mut reruns = Vec::new();
    for _ in 0..=a.reruns {
        match oracle::run_check(&spec, &copy.path(), &[], false) {
            Ok(r) => reruns.push(r),
            Err(e) => {
                return Outcome::error(
                    HaltReason::InternalError.exit_code(),
                    format!("cannot run the check: {e}"),
                    None,
                )
            }
        }
    }
    f.insert(
        "reruns_in_one_copy".into(),
        json!(reruns.iter().map(describe).collect::<Vec<_>>()),
    );
    if let Some(pos) = reruns
        .iter()
        .position(|r| r.verdict() != reference.verdict())
    {
        let c = vec![format!(
            "{n} fresh copies agreed ({}), but run {} in one reused copy was {}: the check depends on state it leaves behind",
            describe(&reference),
            pos + 1,
            describe(&reruns[pos])
        )];
        let human = format!("check_has_side_effects (exit 14)\n  - {}\nreset the workdir between runs (git clean) or make the check clean up after itself\n", c[0]);
        return halted(HaltReason::CheckHasSideEffects, f, human, c);
    }

    // Phase 3: dimensions.
    let mut dim_reports = Vec::new();
    let mut broken: Option<Broken> = None;
    for d in &dims {
        let mut variants = Vec::new();
        for env in d.variants() {
            let r = match fresh_run(&sb, &spec, &env, *d == Dimension::Load) {
                Ok(r) => r,
                Err(o) => return o,
            };
            let agrees = r.verdict() == reference.verdict();
            variants.push(json!({"env": env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(), "verdict": describe(&r), "agrees": agrees}));
            if !agrees && broken.is_none() {
                broken = Some((*d, env.clone(), r.clone()));
            }
        }
        dim_reports.push(json!({"dimension": d.as_str(), "variants": variants}));
    }
    f.insert("dimensions".into(), json!(dim_reports));
    if let Some((d, env, r)) = broken {
        let setting = if env.is_empty() {
            "CPU load on every core".to_string()
        } else {
            env.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let c = vec![format!(
            "dimension {}: with {setting} the check was {} instead of {}",
            d.as_str(),
            describe(&r),
            describe(&reference)
        )];
        f.insert("dimension".into(), json!(d.as_str()));
        let human = format!("check_not_hermetic (exit 14)\n  - {}\n", c[0]);
        return halted(HaltReason::CheckNotHermetic, f, human, c);
    }
    let human = format!(
        "the check is stable: {n} fresh runs agreed ({}), {} reruns in one copy agreed{}\nflake rate < {bound:.4} at {:.0}% confidence (target {})\n",
        describe(&reference),
        a.reruns + 1,
        if dims.is_empty() { String::new() } else { format!(", {} dimension(s) held", dims.len()) },
        a.confidence * 100.0,
        a.max_flake_rate
    );
    Outcome::ok(f, human)
}
