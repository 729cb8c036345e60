//! The recipient's side of DP-KPS (§3 and appendix C.1.2): a classifier trained on a released
//! synthetic corpus D_A and adapted to the recipient's own unlabelled documents D_B with
//! Deep CORAL (Sun & Saenko 2016).
//!
//! Documents become sentence embeddings (the bundled model, `crate::embed`), a three-layer
//! network classifies them (`dpkps_adapt`'s `net`), and training minimises, over minibatches of D_A paired
//! with minibatches of D_B,
//!
//! ```text
//! cross-entropy(D_A batch) + λ · ℓ_CORAL(logits of the D_A batch, logits of the D_B batch)
//! ```
//!
//! (`dpkps_adapt::coral_loss`; [`CoralOn`] puts the term on the hidden features instead); λ = 0 is the plain
//! classifier. Gradients come from candle's reverse-mode
//! automatic differentiation and Adam (AdamW) updates the weights (`dpkps_adapt::train`).
//!
//! # Privacy
//! Nothing here is a DP mechanism and nothing here spends ε. The synthetic corpus is a DP
//! release (post-processing of it is free); the recipient's documents (D_B and a test set) are
//! the recipient's own private data, read where they are (the page's worker, the CLI's machine)
//! and never sent anywhere: the page's policy and egress guards apply to this mode as to the
//! curator's.
//!
//! # Determinism
//! Initial weights and minibatch order come from a ChaCha stream seeded by
//! [`TrainParams::seed`]; with the same inputs, parameters and seed, training on the same
//! machine and build gives the same model file. Across CPUs (or native against the browser) the
//! matrix kernels may round differently, so the bytes may differ slightly.

//!
//! # Crates
//! This module is the plain data (settings, epoch logs, scores, the report's figures:
//! [`TrainParams`], [`EpochLog`], [`score`], [`summary`]), so the page's UI thread can show
//! what the worker sends; the tensors, training and the model file are the `dpkps-adapt` crate
//! (candle), which the CLI and the worker link.

pub mod score;
pub mod shift;
pub mod summary;

pub use summary::EpochLog;

use serde::{Deserialize, Serialize};

/// Row-major n × d floats: one embedded document per row.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Matrix {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f32>,
}

impl Matrix {
    /// Stacks rows of equal width; an empty list gives a 0 × `cols` matrix.
    pub fn from_rows(rows: &[Vec<f32>], cols: usize) -> Result<Matrix, AdaptError> {
        let mut data = Vec::with_capacity(rows.len() * cols);
        for (k, r) in rows.iter().enumerate() {
            if r.len() != cols {
                return Err(AdaptError::Input(format!("row {} has {} values, not {cols}", k + 1, r.len())));
            }
            data.extend_from_slice(r);
        }
        Ok(Matrix { rows: rows.len(), cols, data })
    }

    pub fn row(&self, k: usize) -> &[f32] {
        &self.data[k * self.cols..(k + 1) * self.cols]
    }

    /// The rows at `index`, in that order.
    pub fn select(&self, index: &[usize]) -> Matrix {
        Matrix { rows: index.len(), cols: self.cols, data: index.iter().flat_map(|&k| self.row(k).iter().copied()).collect() }
    }

}

/// Training settings. All public (they shape no release; the recipient picks them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrainParams {
    /// Widths of the two hidden layers.
    pub hidden: [usize; 2],
    /// Passes over the labelled (synthetic) documents.
    pub epochs: usize,
    /// Documents per minibatch, from each domain.
    pub batch: usize,
    pub learning_rate: f64,
    /// AdamW's decoupled weight decay.
    pub weight_decay: f64,
    /// λ, the CORAL term's weight; 0: no adaptation (the plain classifier). The term is divided
    /// by 4d² (d = the aligned layer's width), so λ is large. On the logits, 100 did best on
    /// both MTSamples shift tasks of `dpkps bench adapt` (docs/recipient.md).
    pub coral_weight: f64,
    /// Which layer's batch covariances the CORAL term aligns. A model file written before
    /// this setting existed was trained on the features, so that is what it reads as.
    #[serde(default = "CoralOn::before_the_setting")]
    pub coral_on: CoralOn,
    pub seed: u64,
}

/// The layer whose covariances Deep CORAL aligns between the domains.
///
/// Sun & Saenko put the term on the last layer (their fc8: the logits); on the two MTSamples
/// shift tasks of docs/recipient.md the logits gained +0.076 and +0.080 accuracy at λ = 100
/// against +0.053 and +0.012 for the 128 features at their best λ (1000), so the logits are
/// the default. A K × K covariance (K classes) is also cheaper than 128 × 128.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CoralOn {
    /// The network's outputs, one per class.
    #[default]
    Logits,
    /// The second hidden layer's activations (the features the last layer classifies).
    Features,
}

impl CoralOn {
    fn before_the_setting() -> CoralOn {
        CoralOn::Features
    }
}

impl Default for TrainParams {
    fn default() -> Self {
        TrainParams { hidden: [256, 128], epochs: 30, batch: 64, learning_rate: 1e-3, weight_decay: 1e-4, coral_weight: 100.0, coral_on: CoralOn::Logits, seed: 1 }
    }
}

impl TrainParams {
    /// Plain words for the first setting out of range.
    pub fn check(&self) -> Result<(), AdaptError> {
        let bad = |what: &str| Err(AdaptError::Params(what.to_string()));
        if self.hidden.iter().any(|&h| h == 0 || h > 4096) {
            return bad("each hidden layer needs 1 to 4096 units");
        }
        if self.epochs == 0 || self.epochs > 10_000 {
            return bad("epochs must be 1 to 10000");
        }
        if self.batch < 2 || self.batch > 65_536 {
            return bad("the batch size must be 2 to 65536 (a covariance needs two rows)");
        }
        if !(self.learning_rate > 0.0 && self.learning_rate <= 1.0) {
            return bad("the learning rate must be above 0 and at most 1");
        }
        if !(0.0..=1.0).contains(&self.weight_decay) {
            return bad("the weight decay must be 0 to 1");
        }
        if !(self.coral_weight.is_finite() && self.coral_weight >= 0.0 && self.coral_weight <= 1e6) {
            return bad("the CORAL weight must be 0 to 1000000");
        }
        Ok(())
    }
}

/// Everything that can go wrong, in plain words.
#[derive(Debug, thiserror::Error)]
pub enum AdaptError {
    #[error("{0}")]
    Input(String),
    #[error("training settings: {0}")]
    Params(String),
    #[error("the model file cannot be read: {0}")]
    ModelFile(String),
    #[error("training stopped")]
    Cancelled,
    /// A failure of the tensor library (candle, in `dpkps-adapt`), in its words.
    #[error("the tensor library failed: {0}")]
    Tensor(String),
}
