//! Statistics used by budgets and oracle trust: binomial confidence intervals for a
//! flake rate, the number of clean reruns that bounds one, anomaly tests on per
//! iteration costs, percentiles, and the cost-ledger reader.
//!
//! Everything here is a pure function of its arguments (no clock, no randomness), so
//! detectors that use it stay re-derivable from a receipt. Invalid arguments never
//! panic: each function documents what it returns for them.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};
use statrs::function::beta::checked_beta_reg;

/// The two-sided standard normal quantile `z = Φ⁻¹(1 - (1 - confidence)/2)`.
fn two_sided_z(confidence: f64) -> Option<f64> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let n = Normal::new(0.0, 1.0).ok()?;
    Some(n.inverse_cdf(1.0 - (1.0 - confidence) / 2.0))
}

/// Wilson score interval for a binomial proportion (E. B. Wilson, "Probable
/// inference, the law of succession, and statistical inference", JASA 1927).
///
/// `successes` of `trials`, two-sided at `confidence` (e.g. 0.95); `z` is the normal
/// quantile from statrs. Returns `(lower, upper)` within `[0, 1]`. With no trials, or a
/// confidence outside `(0, 1)`, or `successes > trials`, returns the uninformative
/// `(0.0, 1.0)`.
#[must_use]
pub fn wilson_interval(successes: u64, trials: u64, confidence: f64) -> (f64, f64) {
    let Some(z) = two_sided_z(confidence) else {
        return (0.0, 1.0);
    };
    if trials == 0 || successes > trials {
        return (0.0, 1.0);
    }
    let n = trials as f64;
    let p = successes as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Clopper–Pearson "exact" interval for a binomial proportion (Clopper & Pearson,
/// Biometrika 1934): the bounds are Beta quantiles,
/// `lower = B⁻¹(α/2; x, n-x+1)` and `upper = B⁻¹(1-α/2; x+1, n-x)` with
/// `α = 1 - confidence`.
///
/// This is the two-sided form: with zero successes the upper bound is
/// `1 - (α/2)^(1/n)` (and with `x = n` the lower bound is `(α/2)^(1/n)`). For the
/// one-sided bound `1 - α^(1/n)` use [`runs_needed`]'s rule. The Beta quantile is found
/// by bisection on statrs' regularised incomplete beta function to ~1e-15. Returns
/// `(0.0, 1.0)` for no trials, `successes > trials`, or a confidence outside `(0, 1)`.
#[must_use]
pub fn clopper_pearson(successes: u64, trials: u64, confidence: f64) -> (f64, f64) {
    if trials == 0 || successes > trials || !(confidence > 0.0 && confidence < 1.0) {
        return (0.0, 1.0);
    }
    let alpha = 1.0 - confidence;
    let (x, n) = (successes as f64, trials as f64);
    let lower = if successes == 0 {
        0.0
    } else if successes == trials {
        (alpha / 2.0).powf(1.0 / n)
    } else {
        beta_quantile(x, n - x + 1.0, alpha / 2.0).unwrap_or(0.0)
    };
    let upper = if successes == trials {
        1.0
    } else if successes == 0 {
        1.0 - (alpha / 2.0).powf(1.0 / n)
    } else {
        beta_quantile(x + 1.0, n - x, 1.0 - alpha / 2.0).unwrap_or(1.0)
    };
    (lower, upper)
}

/// The `q`-quantile of Beta(a, b) by bisection on its CDF.
fn beta_quantile(a: f64, b: f64, q: f64) -> Option<f64> {
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if checked_beta_reg(a, b, mid).ok()? < q {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-15 {
            break;
        }
    }
    Some(0.5 * (lo + hi))
}

/// The smallest number of consecutive clean runs (0 flips) after which the flake rate
/// is below `max_rate` at `confidence`, one-sided: the smallest `n` with
/// `(1 - max_rate)^n <= 1 - confidence`, i.e. `n = ceil(ln(1-c) / ln(1-p))` (the exact
/// binomial zero-failure bound; at 95% it is close to the "rule of three", `n ≈ 3/p`).
/// Example: `runs_needed(0.1, 0.95) == 29`.
///
/// Degenerate inputs: `max_rate >= 1` or `confidence <= 0` need 0 runs; `max_rate <= 0`,
/// `confidence >= 1` or a NaN argument can never be shown and return `u64::MAX`.
#[must_use]
pub fn runs_needed(max_rate: f64, confidence: f64) -> u64 {
    if max_rate.is_nan() || confidence.is_nan() || max_rate <= 0.0 || confidence >= 1.0 {
        return u64::MAX;
    }
    if max_rate >= 1.0 || confidence <= 0.0 {
        return 0;
    }
    let target = 1.0 - confidence;
    let ratio = target.ln() / (1.0 - max_rate).ln();
    if !ratio.is_finite() || ratio >= u64::MAX as f64 {
        return u64::MAX;
    }
    let mut n = ratio.ceil().max(0.0) as u64;
    // Guard against rounding in the logarithms: settle on the exact smallest n.
    // (A few steps at most; bounded so a pathological input cannot spin.)
    let holds = |n: u64| (1.0 - max_rate).powf(n as f64) <= target;
    for _ in 0..64 {
        if n > 0 && holds(n - 1) {
            n -= 1;
        } else {
            break;
        }
    }
    for _ in 0..64 {
        if holds(n) {
            break;
        }
        n = n.saturating_add(1);
    }
    n
}

/// Mean and sample standard deviation (divisor `n - 1`) of `xs`. A single value has
/// standard deviation 0. `None` when `xs` is empty or holds a non-finite value.
#[must_use]
pub fn mean_sd(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() == 1 {
        return Some((mean, 0.0));
    }
    let ss: f64 = xs.iter().map(|x| (x - mean) * (x - mean)).sum();
    Some((mean, (ss / (n - 1.0)).sqrt()))
}

/// Default `min_history` for [`is_anomalous`]: earlier values needed before judging.
pub const DEFAULT_MIN_HISTORY: usize = 3;
/// Floor on the standard deviation used by [`is_anomalous`], as a fraction of
/// `|mean|`: a flat history (sd 0) still tolerates `sigma * 10%` of the mean.
pub const SD_FLOOR_FRACTION_OF_MEAN: f64 = 0.10;
/// Absolute floor on the standard deviation, for histories whose mean is 0.
pub const SD_FLOOR_ABSOLUTE: f64 = 1e-9;

/// Why a value was judged anomalous.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Anomaly {
    /// The value judged.
    pub value: f64,
    /// Mean of the history.
    pub mean: f64,
    /// Sample standard deviation of the history.
    pub sd: f64,
    /// The standard deviation used: `max(sd, 10% of |mean|, 1e-9)`.
    pub sd_used: f64,
    /// `mean + sigma * sd_used`; the value exceeded it.
    pub threshold: f64,
    /// The multiplier asked for.
    pub sigma: f64,
    /// `(value - mean) / sd_used`.
    pub z: f64,
    /// Number of earlier values.
    pub history_len: usize,
}

/// True-valued (`Some`) when `x > mean + sigma * sd` of `history` (the earlier values,
/// at least `min_history` of them; use [`DEFAULT_MIN_HISTORY`]). One-sided: only values
/// above the history count (a cost anomaly is an overspend).
///
/// `sd` is floored at `max(SD_FLOOR_FRACTION_OF_MEAN * |mean|, SD_FLOOR_ABSOLUTE)` so a
/// flat history does not make every small rise anomalous: after 0.10, 0.10, 0.10 the
/// threshold at sigma 3 is 0.13, so 2.50 is anomalous and 0.11 is not. `None` when the
/// history is too short or `x`, `sigma` or a history value is not finite.
#[must_use]
pub fn is_anomalous(history: &[f64], x: f64, sigma: f64, min_history: usize) -> Option<Anomaly> {
    if history.len() < min_history.max(1) || !x.is_finite() || !sigma.is_finite() {
        return None;
    }
    let (mean, sd) = mean_sd(history)?;
    let sd_used = sd
        .max(SD_FLOOR_FRACTION_OF_MEAN * mean.abs())
        .max(SD_FLOOR_ABSOLUTE);
    let threshold = mean + sigma * sd_used;
    (x > threshold).then(|| Anomaly {
        value: x,
        mean,
        sd,
        sd_used,
        threshold,
        sigma,
        z: (x - mean) / sd_used,
        history_len: history.len(),
    })
}

/// The `p`-th percentile (`p` in 0..=100, clamped) of `sorted` (ascending), by linear
/// interpolation between closest ranks: rank `h = (n - 1) * p / 100`, value
/// `x[⌊h⌋] + (h - ⌊h⌋) * (x[⌊h⌋+1] - x[⌊h⌋])` (Hyndman & Fan type 7). NaN when
/// `sorted` is empty or `p` is NaN.
#[must_use]
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() || p.is_nan() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * p.clamp(0.0, 100.0) / 100.0;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// A cost ledger line that cannot be read; `line` is 1-based.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LedgerError {
    /// Neither a number nor a JSON object.
    #[error("line {line}: not a USD figure or JSON object: {text:?}")]
    NotAFigure { line: usize, text: String },
    /// A JSON object that does not parse.
    #[error("line {line}: invalid JSON: {message}")]
    InvalidJson { line: usize, message: String },
    /// A JSON object without a numeric `cost_usd`.
    #[error("line {line}: JSON object has no numeric cost_usd")]
    MissingCost { line: usize },
    /// A negative or non-finite figure.
    #[error("line {line}: cost must be a finite number >= 0, got {value}")]
    InvalidCost { line: usize, value: f64 },
}

/// Reads a cost ledger: one USD figure per line, either a bare number (`0.184321`) or a
/// JSON object with a numeric `cost_usd` (other fields ignored). Blank lines and lines
/// starting with `#` (after leading whitespace) are skipped.
///
/// # Errors
/// The first unreadable line, by 1-based number.
pub fn parse_cost_ledger(text: &str) -> Result<Vec<f64>, LedgerError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let value = if t.starts_with('{') {
            let v: serde_json::Value =
                serde_json::from_str(t).map_err(|e| LedgerError::InvalidJson {
                    line,
                    message: e.to_string(),
                })?;
            v.get("cost_usd")
                .and_then(serde_json::Value::as_f64)
                .ok_or(LedgerError::MissingCost { line })?
        } else {
            t.parse::<f64>().map_err(|_| LedgerError::NotAFigure {
                line,
                text: t.chars().take(80).collect(),
            })?
        };
        if !value.is_finite() || value < 0.0 {
            return Err(LedgerError::InvalidCost { line, value });
        }
        out.push(value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn near(a: (f64, f64), b: (f64, f64), tol: f64) -> bool {
        (a.0 - b.0).abs() <= tol && (a.1 - b.1).abs() <= tol
    }

    #[test]
    fn wilson_matches_published_values() {
        // Newcombe, Statistics in Medicine 1998, table of 95% intervals (4 decimals).
        assert!(near(wilson_interval(81, 263, 0.95), (0.2553, 0.3662), 6e-5));
        assert!(near(wilson_interval(15, 148, 0.95), (0.0624, 0.1605), 6e-5));
        assert!(near(wilson_interval(0, 20, 0.95), (0.0, 0.1611), 6e-5));
        // 0 flips in 29 runs: centre and half-width are both z²/(2n)/(1+z²/n).
        let (lo, hi) = wilson_interval(0, 29, 0.95);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.11697).abs() < 1e-5, "{hi}");
        assert_eq!(wilson_interval(0, 0, 0.95), (0.0, 1.0));
        assert_eq!(wilson_interval(3, 2, 0.95), (0.0, 1.0));
        assert_eq!(wilson_interval(1, 2, 1.5), (0.0, 1.0));
    }

    #[test]
    fn wilson_narrows_with_more_trials() {
        let a = wilson_interval(5, 50, 0.95);
        let b = wilson_interval(50, 500, 0.95);
        assert!(b.1 - b.0 < a.1 - a.0);
        let c = wilson_interval(5, 50, 0.99);
        assert!(c.1 - c.0 > a.1 - a.0);
    }

    #[test]
    fn clopper_pearson_matches_published_values() {
        // Newcombe 1998, exact (Clopper-Pearson) 95% intervals.
        assert!(near(clopper_pearson(81, 263, 0.95), (0.2527, 0.3676), 6e-5));
        assert!(near(clopper_pearson(15, 148, 0.95), (0.0578, 0.1617), 6e-5));
        assert!(near(clopper_pearson(0, 20, 0.95), (0.0, 0.1684), 6e-5));
        assert!(near(clopper_pearson(1, 29, 0.95), (0.0009, 0.1776), 6e-5));
        // Classic small-sample table rows.
        assert!(near(clopper_pearson(1, 10, 0.95), (0.0025, 0.4450), 6e-5));
        assert!(near(clopper_pearson(5, 10, 0.95), (0.1871, 0.8129), 6e-5));
        // Zero successes: the two-sided closed form.
        let (lo, hi) = clopper_pearson(0, 10, 0.95);
        assert_eq!(lo, 0.0);
        assert!((hi - (1.0 - 0.025_f64.powf(0.1))).abs() < 1e-12);
        let (lo, hi) = clopper_pearson(10, 10, 0.95);
        assert!((lo - 0.025_f64.powf(0.1)).abs() < 1e-12);
        assert_eq!(hi, 1.0);
        assert_eq!(clopper_pearson(0, 0, 0.95), (0.0, 1.0));
    }

    #[test]
    fn clopper_pearson_contains_wilson_at_the_edges() {
        // The exact interval is the conservative one.
        for (x, n) in [(0, 29), (1, 29), (3, 40)] {
            let w = wilson_interval(x, n, 0.95);
            let cp = clopper_pearson(x, n, 0.95);
            assert!(cp.1 >= w.1, "{x}/{n}: {cp:?} vs {w:?}");
        }
    }

    #[test]
    fn runs_needed_is_the_smallest_zero_flip_bound() {
        assert_eq!(runs_needed(0.1, 0.95), 29);
        assert!(0.9_f64.powi(29) <= 0.05 && 0.9_f64.powi(28) > 0.05);
        assert_eq!(runs_needed(0.01, 0.99), 459);
        // Rule of three: about 3/p at 95%.
        let n = runs_needed(0.001, 0.95);
        assert!((2990..=3000).contains(&n), "{n}");
        // Exact boundary: 0.5^2 = 0.25 = 1 - 0.75 needs exactly 2.
        assert_eq!(runs_needed(0.5, 0.75), 2);
        assert_eq!(runs_needed(1.0, 0.95), 0);
        assert_eq!(runs_needed(0.0, 0.95), u64::MAX);
        assert_eq!(runs_needed(0.1, 1.0), u64::MAX);
        assert_eq!(runs_needed(f64::NAN, 0.9), u64::MAX);
    }

    #[test]
    fn mean_sd_is_the_sample_sd() {
        let (m, sd) = mean_sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap_or_default();
        assert!((m - 5.0).abs() < 1e-12);
        // Sum of squares 32 over n-1 = 7.
        assert!((sd - (32.0_f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_sd(&[3.0]), Some((3.0, 0.0)));
        assert_eq!(mean_sd(&[]), None);
        assert_eq!(mean_sd(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn cost_spike_after_a_steady_history_is_anomalous() {
        let costs = [0.10, 0.11, 0.09, 0.10, 2.50];
        for i in 0..4 {
            assert_eq!(
                is_anomalous(&costs[..i], costs[i], 3.0, DEFAULT_MIN_HISTORY),
                None,
                "{i}"
            );
        }
        let a = is_anomalous(&costs[..4], costs[4], 3.0, DEFAULT_MIN_HISTORY).expect("anomalous");
        assert!((a.mean - 0.10).abs() < 1e-12);
        // sd of 0.10, 0.11, 0.09, 0.10 is sqrt(0.0002/3) ≈ 0.00816, floored to 0.01.
        assert!((a.sd - (0.0002_f64 / 3.0).sqrt()).abs() < 1e-12);
        assert!((a.sd_used - 0.01).abs() < 1e-12);
        assert!((a.threshold - 0.13).abs() < 1e-12);
        assert_eq!(a.history_len, 4);
    }

    #[test]
    fn flat_history_uses_the_floor() {
        let flat = [0.10, 0.10, 0.10];
        assert!(is_anomalous(&flat, 2.50, 3.0, 3).is_some());
        assert!(is_anomalous(&flat, 0.10, 3.0, 3).is_none());
        assert!(
            is_anomalous(&flat, 0.12, 3.0, 3).is_none(),
            "within 3 x 10% of the mean"
        );
        // After the spike joins the history, a normal cost is not anomalous.
        assert!(is_anomalous(&[0.10, 0.10, 0.10, 2.50], 0.10, 3.0, 3).is_none());
        // A zero history: any positive cost is above the absolute floor.
        assert!(is_anomalous(&[0.0, 0.0, 0.0], 0.01, 3.0, 3).is_some());
        // Too little history.
        assert!(is_anomalous(&[0.10, 0.10], 9.0, 3.0, 3).is_none());
    }

    #[test]
    fn percentile_interpolates_linearly() {
        let xs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        assert!((percentile(&xs, 50.0) - 5.5).abs() < 1e-12);
        // h = 9 * 0.9 = 8.1 -> 9 + 0.1 * 1.
        assert!((percentile(&xs, 90.0) - 9.1).abs() < 1e-12);
        assert!((percentile(&xs, 99.0) - 9.91).abs() < 1e-12);
        assert_eq!(percentile(&xs, 0.0), 1.0);
        assert_eq!(percentile(&xs, 100.0), 10.0);
        assert_eq!(percentile(&xs, 250.0), 10.0);
        assert_eq!(percentile(&[4.0], 90.0), 4.0);
        assert!(percentile(&[], 50.0).is_nan());
    }

    #[test]
    fn ledger_reads_numbers_and_json_lines() {
        let text = "# iteration costs\n0.10\n\n  {\"iteration\":2,\"cost_usd\":0.11}\n0.09\n   # note\n2.5\n";
        assert_eq!(parse_cost_ledger(text), Ok(vec![0.10, 0.11, 0.09, 2.5]));
        assert_eq!(parse_cost_ledger(""), Ok(vec![]));
    }

    #[test]
    fn ledger_errors_name_the_line() {
        assert_eq!(
            parse_cost_ledger("0.1\nabc\n"),
            Err(LedgerError::NotAFigure {
                line: 2,
                text: "abc".into()
            })
        );
        assert_eq!(
            parse_cost_ledger("# c\n{\"usd\":1}\n"),
            Err(LedgerError::MissingCost { line: 2 })
        );
        assert!(matches!(
            parse_cost_ledger("1\n2\n{\"cost_usd\":\n"),
            Err(LedgerError::InvalidJson { line: 3, .. })
        ));
        assert_eq!(
            parse_cost_ledger("-0.5\n"),
            Err(LedgerError::InvalidCost {
                line: 1,
                value: -0.5
            })
        );
        assert!(matches!(
            parse_cost_ledger("inf\n"),
            Err(LedgerError::InvalidCost { line: 1, .. })
        ));
        let msg = parse_cost_ledger("0.1\n\nx\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(msg.starts_with("line 3:"), "{msg}");
    }
}
