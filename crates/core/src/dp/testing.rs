//! The empirical privacy check shared by the mechanisms' tests.
//!
//! Run a mechanism many times on neighbouring corpora D and D′, count how often each
//! (discretised) outcome occurs, and bound |ln P_D(o) / P_D′(o)| from below with 4-standard-
//! deviation confidence intervals on both frequencies. A correct ε-DP mechanism cannot exceed
//! ε (up to the 4-sd slack); an under-noised variant of it must, which is how each test shows
//! that the check can fail.

use std::collections::HashMap;
use std::hash::Hash;

/// The largest lower confidence bound of the privacy loss over the outcomes seen.
///
/// Each frequency's interval is Wilson's score interval at z = 4, not p ± 4 sd: at a count of 0
/// the latter is [0, 0], so an outcome seen often under one corpus and never under the other
/// (a mechanism that forgot its noise, whose outcomes do not overlap at all) would be skipped
/// and read as no loss. Wilson's upper end at a count of 0 is z²/(n + z²), so such an outcome
/// gives a loss of about ln(n/16): caught.
pub(crate) fn max_log_ratio<K: Eq + Hash>(f0: &HashMap<K, usize>, f1: &HashMap<K, usize>, trials: usize) -> f64 {
    let n = trials as f64;
    let z2 = 16.0;
    let bound = |k: usize| {
        let p = k as f64 / n;
        let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let half = 4.0 / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
        ((centre - half).max(0.0), (centre + half).min(1.0))
    };
    let mut worst: f64 = 0.0;
    for k in f0.keys().chain(f1.keys()) {
        let (lo0, hi0) = bound(*f0.get(k).unwrap_or(&0));
        let (lo1, hi1) = bound(*f1.get(k).unwrap_or(&0));
        if lo1 > 0.0 {
            worst = worst.max((lo1 / hi0).ln());
        }
        if lo0 > 0.0 {
            worst = worst.max((lo0 / hi1).ln());
        }
    }
    worst
}

/// Outcome frequencies of `trials` runs of `f`.
pub(crate) fn frequencies<K: Eq + Hash>(trials: usize, mut f: impl FnMut() -> K) -> HashMap<K, usize> {
    let mut out = HashMap::new();
    for _ in 0..trials {
        *out.entry(f()).or_default() += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_never_seen_under_the_other_corpus_count_as_loss() {
        // A mechanism without noise: the two corpora's outcomes do not overlap.
        let (f0, f1) = (HashMap::from([(0, 10_000)]), HashMap::from([(1, 10_000)]));
        let loss = max_log_ratio(&f0, &f1, 10_000);
        assert!(loss > 5.0, "{loss}");
        // One outcome in common, the rest apart: still caught.
        let (f0, f1) = (HashMap::from([(0, 5_000), (1, 5_000)]), HashMap::from([(0, 5_000), (2, 5_000)]));
        assert!(max_log_ratio(&f0, &f1, 10_000) > 5.0);
        // The same frequencies: no loss; a few rare outcomes on one side only: none either
        // (their count is within what chance gives).
        let same = HashMap::from([(0, 6_000), (1, 4_000)]);
        assert_eq!(max_log_ratio(&same, &same, 10_000), 0.0);
        let (f0, f1) = (HashMap::from([(0, 5_998), (1, 4_000), (2, 2)]), HashMap::from([(0, 6_000), (1, 4_000)]));
        assert_eq!(max_log_ratio(&f0, &f1, 10_000), 0.0);
        // A true ratio of e² between large counts is seen as more than 1.5.
        let (f0, f1) = (HashMap::from([(0, 8_800), (1, 1_200)]), HashMap::from([(0, 1_200), (1, 8_800)]));
        assert!(max_log_ratio(&f0, &f1, 10_000) > 1.5);
    }
}
