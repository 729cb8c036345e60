//! DP class counts: how many sequences each class gets (the "label tutor" of Song et al. 2024).
//!
//! Every class getting the same number of sequences makes a classifier trained on them ignore
//! the class proportions: on imbalanced data it can fall below always guessing the largest
//! class. The proportions are private, so they are released with noise and paid for.
//!
//! # The mechanism and its privacy map
//! c[k] = documents assigned to class k by the public class set ([`crate::input::classes`]).
//! Neighbouring relation: add or remove one document; it changes one entry by 1 (or none, if
//! the class set drops it), so the L1 sensitivity is 1. Discrete Laplace noise of scale 1/ε on
//! every declared class's count (exact sampler, drawn by [`super::laplace`]) is ε-DP. The apportionment of sequences
//! ([`apportion`]) reads only the noisy counts: post-processing.

use super::{check_epsilon, laplace, DpError, SecureRng};
use crate::ledger::{Scope, Spend, SpendStage};

/// The noisy counts, in the class set's order, and the spend.
pub fn noisy_class_counts(counts: &[u64], epsilon: f64, rng: &mut SecureRng) -> Result<(Vec<i64>, Spend), DpError> {
    check_epsilon("ε for the class counts", epsilon)?;
    let scale = laplace::scale(1, epsilon)?;
    let noisy = laplace::release_counts(counts.iter().map(|&c| c.min(i64::MAX as u64) as i64), scale, rng);
    let spend = laplace::spend(SpendStage::ClassCounts, "discrete Laplace on the class histogram", epsilon)
        .param("l1_sensitivity", 1)
        .param("noise_scale", scale.to_f64())
        .param("classes", counts.len())
        .scope(Scope::AllDocuments);
    Ok((noisy, spend))
}

/// Splits `total` sequences over the classes in proportion to max(noisy count, 0), at least
/// `min_each` per class (largest remainders; ties to the earlier class). Equal shares if no
/// count is positive. The result always sums to max(total, min_each · classes).
pub fn apportion(total: usize, noisy: &[i64], min_each: usize) -> Vec<usize> {
    let k = noisy.len();
    if k == 0 {
        return Vec::new();
    }
    let floor = min_each * k;
    let spare = total.saturating_sub(floor);
    let weights: Vec<f64> = noisy.iter().map(|&c| c.max(0) as f64).collect();
    let sum: f64 = weights.iter().sum();
    let weights = if sum > 0.0 { weights } else { vec![1.0; k] };
    let sum: f64 = weights.iter().sum();
    let exact: Vec<f64> = weights.iter().map(|w| w / sum * spare as f64).collect();
    let mut out: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
    let mut left = spare - out.iter().sum::<usize>();
    let mut order: Vec<usize> = (0..k).collect();
    order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())).then(a.cmp(&b)));
    for &i in order.iter().cycle() {
        if left == 0 {
            break;
        }
        out[i] += 1;
        left -= 1;
    }
    out.iter_mut().for_each(|n| *n += min_each);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportionment_follows_the_counts_and_keeps_the_total() {
        assert_eq!(apportion(100, &[300, 100], 1), vec![75, 25]);
        assert_eq!(apportion(10, &[-5, -1, 0], 1), vec![4, 3, 3]);
        assert_eq!(apportion(3, &[1000, 0, 0], 1), vec![1, 1, 1]);
        assert_eq!(apportion(2, &[5, 5, 5], 1), vec![1, 1, 1], "at least one each, even past the total");
        for total in [1usize, 7, 50, 333] {
            let a = apportion(total, &[17, 4, 0, 230, -3], 1);
            assert_eq!(a.iter().sum::<usize>(), total.max(5));
            assert!(a.iter().all(|&n| n >= 1));
        }
        assert!(apportion(5, &[], 1).is_empty());
    }

    /// Empirical privacy check (`dp::testing`): a count of 0 against 1, bucketed by 2; an
    /// under-noised release (twice the ε) must be caught.
    #[test]
    fn empirical_privacy_loss_stays_within_epsilon() {
        const TRIALS: usize = 40_000;
        let mut rng = SecureRng::seeded_for_tests(17);
        let mut loss = |eps_used: f64| {
            let mut f = |c: u64| {
                crate::dp::testing::frequencies(TRIALS, || {
                    (noisy_class_counts(&[c], eps_used, &mut rng).unwrap().0[0].clamp(-6, 6) as f64 / 2.0).floor() as i64
                })
            };
            let (f0, f1) = (f(0), f(1));
            crate::dp::testing::max_log_ratio(&f0, &f1, TRIALS)
        };
        let eps = 0.5;
        let ok = loss(eps);
        let bad = loss(2.0 * eps);
        assert!(ok <= eps, "estimated privacy loss {ok} exceeds ε = {eps}");
        assert!(bad > eps, "an under-noised release went undetected (loss {bad})");
    }

    #[test]
    fn counts_get_noise_of_scale_one_over_epsilon() {
        let mut rng = SecureRng::seeded_for_tests(4);
        let (noisy, spend) = noisy_class_counts(&[100, 0, 50], 0.5, &mut rng).unwrap();
        assert_eq!(noisy.len(), 3);
        assert_eq!(spend.params["noise_scale"], 2.0);
        assert_eq!(spend.epsilon, 0.5);
        // Mean absolute noise of a discrete Laplace of scale 2 is about 2: over many draws the
        // counts stay near the truth.
        let mut total = 0i64;
        for _ in 0..2000 {
            total += (noisy_class_counts(&[100], 0.5, &mut rng).unwrap().0[0] - 100).abs();
        }
        let mean = total as f64 / 2000.0;
        assert!((1.5..2.5).contains(&mean), "{mean}");
        assert!(noisy_class_counts(&[1], 0.0, &mut rng).is_err());
    }
}
