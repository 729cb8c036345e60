//! The figures of a training run as plain data (no tensors): what `dpkps train`'s report and
//! the page's worker send out, and what the page's UI thread, built without the `train`
//! feature, reads to draw the loss curve and the scores.

use serde::{Deserialize, Serialize};

use super::score::Score;

/// One epoch's mean losses (the CORAL loss unweighted, measured whenever there are unlabelled
/// documents, trained on only when λ > 0; 0 without unlabelled documents).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EpochLog {
    pub epoch: usize,
    pub class_loss: f64,
    pub coral_loss: f64,
}

/// The documents each set gave, and those left out (for the report).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Labelled documents trained on.
    pub labelled: usize,
    /// Labelled-set documents without a label: left out.
    pub labelled_without_label: usize,
    pub unlabelled: usize,
    /// Test documents scored.
    pub test: usize,
    /// Test documents whose label is none of the classes (or missing): left out of the scores.
    pub test_unknown_label: usize,
}

/// What the JSON report holds of one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainedSummary {
    /// "coral" or "plain".
    pub name: String,
    pub coral_weight: f64,
    pub epochs: Vec<EpochLog>,
    pub test: Option<Score>,
}

/// A model's name in the report and the page: "coral" when trained with the CORAL term (λ > 0),
/// "plain" otherwise.
pub fn model_name(coral_weight: f64) -> &'static str {
    if coral_weight > 0.0 {
        "coral"
    } else {
        "plain"
    }
}
