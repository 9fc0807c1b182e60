//! Message similarity: when two failure messages of one test count as "the same".

use std::collections::BTreeMap;

/// Character-level similarity of two messages: `2·matches / (len_a + len_b)` over a
/// diff of their characters (the ratio `similar` computes, in `f64`); 1.0 when both
/// are empty or equal, in `[0, 1]` otherwise.
#[must_use]
pub fn message_similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let diff = similar::TextDiff::from_chars(a, b);
    let matches: usize = diff
        .ops()
        .iter()
        .map(|op| match *op {
            similar::DiffOp::Equal { len, .. } => len,
            _ => 0,
        })
        .sum();
    ratio(matches, a.chars().count() + b.chars().count())
}

fn ratio(matches: usize, total: usize) -> f64 {
    if total == 0 {
        1.0
    } else {
        2.0 * matches as f64 / total as f64
    }
}

/// `message_similarity(a, b) >= threshold`, skipping the diff when a cheap upper
/// bound (shared character counts) already falls short.
pub(super) fn similar_enough(a: &str, b: &str, threshold: f64) -> bool {
    if a == b {
        return true;
    }
    let mut counts: BTreeMap<char, (usize, usize)> = BTreeMap::new();
    for c in a.chars() {
        counts.entry(c).or_default().0 += 1;
    }
    for c in b.chars() {
        counts.entry(c).or_default().1 += 1;
    }
    let total: usize = counts.values().map(|(x, y)| x + y).sum();
    let bound: usize = counts.values().map(|(x, y)| (*x).min(*y)).sum();
    if ratio(bound, total) < threshold {
        return false;
    }
    message_similarity(a, b) >= threshold
}
