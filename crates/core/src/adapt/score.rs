//! How a classifier does on a labelled test set: accuracy, macro-F1, F1 per class and the
//! confusion matrix (rows: the true class, columns: the predicted one).

use serde::{Deserialize, Serialize};

use crate::eval::metrics::{accuracy, macro_f1};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub documents: usize,
    pub accuracy: f64,
    /// Over the classes present in the truth or the predictions (`eval::metrics::macro_f1`), so
    /// not the mean of `f1` when a class is absent from both.
    pub macro_f1: f64,
    /// Per class, in the model's class order.
    pub f1: Vec<f64>,
    /// `confusion[true][predicted]`.
    pub confusion: Vec<Vec<u64>>,
}

/// Scores predictions against the truth; `classes` is the model's class count.
pub fn score(truth: &[usize], pred: &[usize], classes: usize) -> Score {
    let mut confusion = vec![vec![0u64; classes]; classes];
    for (&t, &p) in truth.iter().zip(pred) {
        if t < classes && p < classes {
            confusion[t][p] += 1;
        }
    }
    let f1 = (0..classes)
        .map(|c| {
            let tp = confusion[c][c];
            let fp: u64 = (0..classes).filter(|&r| r != c).map(|r| confusion[r][c]).sum();
            let fn_: u64 = (0..classes).filter(|&p| p != c).map(|p| confusion[c][p]).sum();
            if tp == 0 { 0.0 } else { 2.0 * tp as f64 / (2 * tp + fp + fn_) as f64 }
        })
        .collect();
    Score { documents: truth.len(), accuracy: accuracy(truth, pred), macro_f1: macro_f1(truth, pred), f1, confusion }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hand_computed_confusion_and_f1() {
        // truth 0 0 0 1 1 2, pred 0 0 1 1 2 2 (the example of eval::metrics).
        let s = score(&[0, 0, 0, 1, 1, 2], &[0, 0, 1, 1, 2, 2], 3);
        assert_eq!(s.confusion, vec![vec![2, 1, 0], vec![0, 1, 1], vec![0, 0, 1]]);
        let want = [0.8, 0.5, 2.0 / 3.0];
        for (g, w) in s.f1.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{g} vs {w}");
        }
        assert!((s.accuracy - 4.0 / 6.0).abs() < 1e-12);
        assert!((s.macro_f1 - (0.8 + 0.5 + 2.0 / 3.0) / 3.0).abs() < 1e-12);
    }
}
