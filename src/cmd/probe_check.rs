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
//! The check is `certified` only when that bound meets `--max-flake-rate`; fewer
//! `--runs` than that end `inconclusive` (exit 0, `certified: false`). `--runs` below 2
//! is a usage error, and a run ended by `--check-timeout` ends the probe with
//! `execution_failure`: a timed-out run has no verdict to compare.

use super::bodies_ops::{
    DimensionReport, DimensionVariant, FlakeRateBound, HaltSlot, ProbeCheckBody, WilsonInterval,
};
use crate::check::parse::{self, FormatChoice};
use crate::cli::{CheckOpts, Outcome, ProbeArgs};
use crate::halt::HaltReason;
use crate::oracle::{self, CheckSpec, Dimension, ProbeRun, Sandbox};
use crate::output::Body;
use crate::workspace::Workspace;
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

/// A computed halt of a measuring command: the body with the halt's reason and
/// contributors, `human` as its text, the contributors as its errors.
pub(crate) fn halted<B: Body + HaltSlot>(
    reason: HaltReason,
    mut body: B,
    human: String,
    contributors: Vec<String>,
) -> Outcome {
    body.set_halt(reason, contributors.clone());
    let mut o = Outcome::from_body("halted", reason.exit_code(), &body);
    o.human = human;
    o.errors = contributors;
    o
}

/// A check that cannot start (exit 126/127) is an execution failure, never a verdict.
pub(crate) fn cannot_start<B: Body + HaltSlot>(
    spec: &CheckSpec,
    r: &ProbeRun,
    body: B,
) -> Option<Outcome> {
    matches!(r.exit_code, Some(126 | 127)).then(|| {
        let msg = format!(
            "check command cannot start: `{}` (exit {})",
            spec.command,
            r.exit_code.unwrap_or(0)
        );
        halted(
            HaltReason::ExecutionFailure,
            body,
            format!("{msg}\n"),
            vec![msg],
        )
    })
}

/// A run ended by `--check-timeout` has no verdict to compare: the probe ends with an
/// execution failure naming the limit, never a red run counted as agreement.
pub(crate) fn timed_out<B: Body + HaltSlot>(
    spec: &CheckSpec,
    r: &ProbeRun,
    body: B,
) -> Option<Outcome> {
    r.timed_out.then(|| {
        let limit = spec
            .timeout
            .map_or_else(|| "its time limit".to_string(), |d| format!("{d:?}"));
        let msg = format!(
            "the check timed out after {limit} (--check-timeout): `{}`",
            spec.command
        );
        halted(
            HaltReason::ExecutionFailure,
            body,
            format!(
                "execution_failure (exit {})\n  - {msg}\n",
                HaltReason::ExecutionFailure.exit_code()
            ),
            vec![msg],
        )
    })
}

/// Either run ends the probe without a verdict: it cannot start, or it timed out.
fn unusable(spec: &CheckSpec, r: &ProbeRun, body: &ProbeCheckBody) -> Option<Outcome> {
    cannot_start(spec, r, body.clone()).or_else(|| timed_out(spec, r, body.clone()))
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
    let needed = crate::stats::runs_needed(a.max_flake_rate, a.confidence).max(2);
    if let Some(r) = a.runs.filter(|r| *r < 2) {
        return Outcome::error(
            2,
            format!("--runs {r}: at least 2 runs are needed (one run cannot disagree with itself)"),
            Some(format!(
                "omit --runs to use the {needed} runs that certify --max-flake-rate {} at --confidence {}",
                a.max_flake_rate, a.confidence
            )),
        );
    }
    let ws = match Workspace::at(workdir) {
        Ok(w) => w,
        Err(e) => return super::ws_error(&e),
    };
    let spec = match check_spec(&a.check) {
        Ok(s) => s,
        Err(o) => return o,
    };
    let planned = a.runs.unwrap_or(needed);
    let progress = std::io::stderr().is_terminal();
    let sb = match sandbox(&ws.workdir) {
        Ok(s) => s,
        Err(o) => return o,
    };
    // Only a probe that got to the end with the bound at the target certifies.
    let mut f = ProbeCheckBody {
        check: a.check.command.clone(),
        planned_runs: planned,
        runs_needed: needed,
        max_flake_rate: a.max_flake_rate,
        confidence: a.confidence,
        certified: false,
        ..ProbeCheckBody::default()
    };

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
        if let Some(o) = unusable(&spec, &r, &f) {
            if progress {
                eprintln!();
            }
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
    f.fresh_runs = Some(n);
    f.fresh_verdicts = Some(runs.iter().map(describe).collect());
    f.reference_verdict = Some(describe(&reference));
    if flips > 0 {
        let (lo, hi) = crate::stats::wilson_interval(flips, n, a.confidence);
        let odd = runs
            .iter()
            .position(|r| r.verdict() != reference.verdict())
            .unwrap_or(0);
        f.flips = Some(flips);
        f.flake_rate = Some(flips as f64 / n as f64);
        f.wilson = Some(WilsonInterval {
            confidence: a.confidence,
            lower: lo,
            upper: hi,
        });
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
    // The criterion `runs_needed` solves, so the default run count always meets it.
    let meets_target = (1.0 - a.max_flake_rate).powf(n as f64) <= 1.0 - a.confidence;
    f.flips = Some(0);
    f.flake_rate_bound = Some(FlakeRateBound {
        method: "clopper-pearson one-sided, zero flips".into(),
        confidence: a.confidence,
        upper: bound,
        meets_target,
    });

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
            Ok(r) => {
                if let Some(o) = unusable(&spec, &r, &f) {
                    return o;
                }
                reruns.push(r);
            }
            Err(e) => {
                return Outcome::error(
                    HaltReason::InternalError.exit_code(),
                    format!("cannot run the check: {e}"),
                    None,
                )
            }
        }
    }
    f.reruns_in_one_copy = Some(reruns.iter().map(describe).collect());
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
            if let Some(o) = unusable(&spec, &r, &f) {
                return o;
            }
            let agrees = r.verdict() == reference.verdict();
            variants.push(DimensionVariant {
                env: env.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                verdict: describe(&r),
                agrees,
            });
            if !agrees && broken.is_none() {
                broken = Some((*d, env.clone(), r.clone()));
            }
        }
        dim_reports.push(DimensionReport {
            dimension: d.as_str().into(),
            variants,
        });
    }
    f.dimensions = Some(dim_reports);
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
        f.dimension = Some(d.as_str().into());
        let human = format!("check_not_hermetic (exit 14)\n  - {}\n", c[0]);
        return halted(HaltReason::CheckNotHermetic, f, human, c);
    }
    let agreed = format!(
        "{n} fresh runs agreed ({}), {} reruns in one copy agreed{}",
        describe(&reference),
        a.reruns + 1,
        if dims.is_empty() {
            String::new()
        } else {
            format!(", {} dimension(s) held", dims.len())
        },
    );
    if !meets_target {
        let text = format!(
            "not certified: {n} runs bound the flake rate below {bound:.4}, above the target {}; run without --runs or with --runs >= {needed}",
            a.max_flake_rate
        );
        f.human = format!(
            "{text}\n{agreed}\nflake rate < {bound:.4} at {:.0}% confidence (target {})\n",
            a.confidence * 100.0,
            a.max_flake_rate
        );
        return Outcome::from_body("inconclusive", 0, &f);
    }
    f.certified = true;
    f.human = format!(
        "the check is stable: {agreed}\nflake rate < {bound:.4} at {:.0}% confidence (target {})\n",
        a.confidence * 100.0,
        a.max_flake_rate
    );
    Outcome::from_body("ok", 0, &f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::CheckOpts;
    use serde_json::json;

    fn args(command: &str, runs: Option<u64>) -> ProbeArgs {
        ProbeArgs {
            check: CheckOpts {
                command: command.into(),
                test_format: "auto".into(),
                success_exit_code: 0,
                check_timeout: None,
            },
            max_flake_rate: 0.05,
            confidence: 0.95,
            runs,
            reruns: 0,
            dimensions: Vec::new(),
        }
    }

    #[test]
    fn too_few_runs_for_the_target_are_not_certified() {
        let dir = tempfile::tempdir().expect("tempdir");
        let o = run(dir.path(), &args("true", Some(2)));
        assert_eq!((o.status.as_str(), o.exit_code), ("inconclusive", 0));
        assert_eq!(o.fields["certified"], json!(false));
        assert!(o.errors.is_empty());
        assert!(
            o.human.starts_with("not certified: 2 runs bound the flake rate below 0.7764, above the target 0.05; run without --runs or with --runs >= 59\n"),
            "{}",
            o.human
        );
        assert!(!o.human.contains("stable"), "{}", o.human);
    }

    #[test]
    fn enough_runs_certify() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut a = args("true", None);
        (a.max_flake_rate, a.confidence) = (0.5, 0.5);
        let o = run(dir.path(), &a);
        assert_eq!((o.status.as_str(), o.exit_code), ("ok", 0));
        assert_eq!(o.fields["certified"], json!(true));
        assert!(o.human.starts_with("the check is stable"), "{}", o.human);
    }

    #[test]
    fn fewer_than_two_runs_is_a_usage_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        for n in [0, 1] {
            let o = run(dir.path(), &args("true", Some(n)));
            assert_eq!(o.exit_code, 2);
            assert!(
                o.errors[0].starts_with(&format!("--runs {n}:")),
                "{:?}",
                o.errors
            );
        }
    }

    #[test]
    fn a_timed_out_run_is_an_execution_failure() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut a = args("sleep 5", Some(2));
        a.check.check_timeout = Some("200ms".into());
        let o = run(dir.path(), &a);
        assert_eq!(o.exit_code, HaltReason::ExecutionFailure.exit_code());
        assert_eq!(o.fields["halt_reason"], json!("execution_failure"));
        assert!(
            o.errors[0].contains("timed out after 200ms"),
            "{:?}",
            o.errors
        );
        assert_eq!(o.fields["certified"], json!(false));
    }
}
