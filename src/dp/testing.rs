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
pub(crate) fn max_log_ratio<K: Eq + Hash>(f0: &HashMap<K, usize>, f1: &HashMap<K, usize>, trials: usize) -> f64 {
    let bound = |k: usize| {
        let p = k as f64 / trials as f64;
        let sd = (p * (1.0 - p) / trials as f64).sqrt();
        (p - 4.0 * sd, p + 4.0 * sd)
    };
    let mut worst: f64 = 0.0;
    for k in f0.keys().chain(f1.keys()) {
        let (lo0, hi0) = bound(*f0.get(k).unwrap_or(&0));
        let (lo1, hi1) = bound(*f1.get(k).unwrap_or(&0));
        if lo1 > 0.0 && hi0 > 0.0 {
            worst = worst.max((lo1 / hi0).ln());
        }
        if lo0 > 0.0 && hi1 > 0.0 {
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
