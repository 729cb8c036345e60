//! Accuracy, macro-F1 and the mean/spread over repetitions.
//!
//! Macro-F1 follows the common convention (scikit-learn's default): the classes averaged over
//! are those that occur in the truth or in the predictions, and a class whose precision or
//! recall is undefined (never predicted, or never true) gets F1 = 0. So a classifier that never
//! predicts a class is penalised for it, which is what makes macro-F1 informative next to
//! accuracy on imbalanced test sets (a majority-class predictor scores 1/K·(2p/(1+p))).

use serde::{Deserialize, Serialize};

/// Fraction of predictions equal to the truth; 0 for an empty test set.
pub fn accuracy(truth: &[usize], pred: &[usize]) -> f64 {
    debug_assert_eq!(truth.len(), pred.len());
    if truth.is_empty() {
        return 0.0;
    }
    truth.iter().zip(pred).filter(|(t, p)| t == p).count() as f64 / truth.len() as f64
}

/// Unweighted mean of per-class F1 over the classes present in `truth` or `pred` (module docs).
pub fn macro_f1(truth: &[usize], pred: &[usize]) -> f64 {
    debug_assert_eq!(truth.len(), pred.len());
    let k = truth.iter().chain(pred).copied().max().map_or(0, |m| m + 1);
    // tp, fp, fn per class
    let mut counts = vec![[0u64; 3]; k];
    for (&t, &p) in truth.iter().zip(pred) {
        if t == p {
            counts[t][0] += 1;
        } else {
            counts[p][1] += 1;
            counts[t][2] += 1;
        }
    }
    let present: Vec<&[u64; 3]> = counts.iter().filter(|c| c.iter().any(|&x| x > 0)).collect();
    if present.is_empty() {
        return 0.0;
    }
    let f1 = |c: &[u64; 3]| {
        // F1 = 2tp / (2tp + fp + fn); 0 when tp = 0 (covers the undefined cases).
        let denom = 2 * c[0] + c[1] + c[2];
        if c[0] == 0 { 0.0 } else { 2.0 * c[0] as f64 / denom as f64 }
    };
    present.iter().map(|c| f1(c)).sum::<f64>() / present.len() as f64
}

/// Mean and sample standard deviation (n − 1 in the denominator; 0 for a single value).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    pub mean: f64,
    pub std: f64,
}

pub fn spread(xs: &[f64]) -> Spread {
    if xs.is_empty() {
        return Spread { mean: 0.0, std: 0.0 };
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let std = if xs.len() < 2 { 0.0 } else { (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)).sqrt() };
    Spread { mean, std }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn accuracy_counts_matches() {
        assert!(close(accuracy(&[0, 1, 1, 2], &[0, 1, 2, 2]), 0.75));
        assert!(close(accuracy(&[], &[]), 0.0));
    }

    #[test]
    fn macro_f1_on_a_hand_computed_example() {
        // truth 0 0 0 1 1 2, pred 0 0 1 1 2 2:
        // class 0: tp 2, fp 0, fn 1 → F1 = 4/5
        // class 1: tp 1, fp 1, fn 1 → F1 = 2/4
        // class 2: tp 1, fp 1, fn 0 → F1 = 2/3
        let f = macro_f1(&[0, 0, 0, 1, 1, 2], &[0, 0, 1, 1, 2, 2]);
        assert!(close(f, (0.8 + 0.5 + 2.0 / 3.0) / 3.0), "{f}");
    }

    #[test]
    fn a_class_never_predicted_counts_as_zero() {
        // Majority predictor on 3 × class 0, 1 × class 1: class 0 F1 = 6/7, class 1 F1 = 0.
        let f = macro_f1(&[0, 0, 0, 1], &[0, 0, 0, 0]);
        assert!(close(f, (6.0 / 7.0) / 2.0), "{f}");
        // A class only predicted, never true, is averaged too (F1 = 0).
        let f = macro_f1(&[0, 0], &[0, 2]);
        assert!(close(f, (2.0 / 3.0) / 2.0), "{f}");
        // Classes absent from both are not averaged over: ids 1 and 2 are unused here.
        assert!(close(macro_f1(&[0, 3], &[0, 3]), 1.0));
    }

    #[test]
    fn spread_is_mean_and_sample_std() {
        let s = spread(&[1.0, 2.0, 3.0]);
        assert!(close(s.mean, 2.0) && close(s.std, 1.0));
        assert_eq!(spread(&[0.5]), Spread { mean: 0.5, std: 0.0 });
    }
}
