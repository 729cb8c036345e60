//! The recipient's classifier, trained with Deep CORAL over candle (the tensors, training and
//! the model file). The plain data it shares with the page's UI thread (settings, epoch logs,
//! scores, the report's figures, [`Matrix`]) is `dpkps_core::adapt`, re-exported here, where
//! the privacy and determinism notes are.
//!
//! Training minimises, over minibatches of the synthetic corpus D_A paired with minibatches of
//! the recipient's unlabelled D_B, cross-entropy(D_A batch) + λ · ℓ_CORAL ([`coral_loss`]); λ = 0
//! is the plain classifier. Gradients come from candle's reverse-mode automatic
//! differentiation and Adam (AdamW) updates the weights ([`train()`]).

mod coral;
mod model;
mod net;
pub mod shift_task;
pub mod task;
mod tensors;
mod train;

pub use dpkps_core::adapt::*;

pub use coral::coral_loss;
pub use model::{Classifier, Prediction, MODEL_FORMAT};
pub use train::{shuffle, train, Trainer};

/// A failure of the tensor library, in the words [`AdaptError::Tensor`] keeps.
pub(crate) fn tensor_error(e: candle_core::Error) -> AdaptError {
    AdaptError::Tensor(e.to_string())
}

/// The rows of `m` at `index`, in that order, as an n × d tensor.
pub(crate) fn gather(m: &Matrix, index: &[usize]) -> candle_core::Result<candle_core::Tensor> {
    let mut data = Vec::with_capacity(index.len() * m.cols);
    for &k in index {
        data.extend_from_slice(m.row(k));
    }
    candle_core::Tensor::from_vec(data, (index.len(), m.cols), &candle_core::Device::Cpu)
}

#[cfg(test)]
mod tests;
