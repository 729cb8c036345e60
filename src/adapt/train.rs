//! The training loop: minibatches of the labelled documents, each paired with a minibatch of
//! the unlabelled ones when λ > 0; the loss `cross-entropy + λ·ℓ_CORAL`; one AdamW step per
//! pair. An epoch is one pass over the labelled documents in a fresh random order; the
//! unlabelled ones are drawn in their own random order, again from the start when used up.

use candle_core::{Device, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::coral::coral_loss;
use super::net::Net;
use super::{AdaptError, Classifier, Matrix, TrainParams};

/// One epoch's mean losses (the CORAL loss unweighted, measured whenever there are unlabelled
/// documents, trained on only when λ > 0; 0 without unlabelled documents).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EpochLog {
    pub epoch: usize,
    pub class_loss: f64,
    pub coral_loss: f64,
}

/// Fisher–Yates over `order` (not a DP draw: any fair shuffle does).
pub(crate) fn shuffle<T>(order: &mut [T], rng: &mut ChaCha8Rng) {
    for i in (1..order.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
}

/// Trains on `labelled` (rows of `source` with class ids `labels[k] < labels_names.len()`),
/// adapted to `target` when λ > 0 and it has at least two rows. `progress` sees each epoch's
/// losses and returns false to stop (then [`AdaptError::Cancelled`]).
pub fn train(
    source: &Matrix,
    labels: &[usize],
    label_names: &[String],
    target: Option<&Matrix>,
    params: &TrainParams,
    progress: &mut dyn FnMut(&EpochLog) -> bool,
) -> Result<(Classifier, Vec<EpochLog>), AdaptError> {
    params.check()?;
    let classes = label_names.len();
    if source.rows < 2 || labels.len() != source.rows {
        return Err(AdaptError::Input(format!("{} labelled documents with {} labels", source.rows, labels.len())));
    }
    if classes < 2 {
        return Err(AdaptError::Input(format!("a classifier needs at least two classes; the labelled documents have {classes}")));
    }
    if let Some(&bad) = labels.iter().find(|&&y| y >= classes) {
        return Err(AdaptError::Input(format!("class id {bad} is not one of the {classes} classes")));
    }
    // With λ = 0 the CORAL loss is still measured (not trained on): the log then says how far
    // apart the domains' features are without adaptation.
    let target = target.filter(|t| t.rows >= 2);
    if let Some(t) = target {
        if t.cols != source.cols {
            return Err(AdaptError::Input(format!("labelled embeddings have {} dimensions, unlabelled {}", source.cols, t.cols)));
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
    let net = Net::init(source.cols, params.hidden, classes, &mut rng)?;
    let mut opt = AdamW::new(
        net.vars(),
        ParamsAdamW { lr: params.learning_rate, weight_decay: params.weight_decay, ..ParamsAdamW::default() },
    )?;
    let y_all: Vec<u32> = labels.iter().map(|&y| y as u32).collect();
    let mut order: Vec<usize> = (0..source.rows).collect();
    let mut t_order: Vec<usize> = (0..target.map_or(0, |t| t.rows)).collect();
    let mut t_next = t_order.len(); // drawn afresh at the first use
    let mut logs = Vec::with_capacity(params.epochs);
    for epoch in 1..=params.epochs {
        shuffle(&mut order, &mut rng);
        let (mut class_sum, mut coral_sum, mut steps) = (0.0, 0.0, 0usize);
        for chunk in order.chunks(params.batch) {
            // A last batch of one has no covariance: it joins the next epoch's order instead.
            if chunk.len() < 2 {
                continue;
            }
            let x = source.gather(chunk)?;
            let y = Tensor::from_vec(chunk.iter().map(|&k| y_all[k]).collect::<Vec<u32>>(), chunk.len(), &Device::Cpu)?;
            let (features, logits) = net.forward(&x)?;
            let ce = candle_nn::loss::cross_entropy(&logits, &y)?;
            class_sum += ce.to_scalar::<f32>()? as f64;
            let loss = match target {
                Some(t) => {
                    let mut batch = Vec::with_capacity(chunk.len());
                    while batch.len() < chunk.len().min(t.rows) {
                        if t_next == t_order.len() {
                            shuffle(&mut t_order, &mut rng);
                            t_next = 0;
                        }
                        batch.push(t_order[t_next]);
                        t_next += 1;
                    }
                    let (t_features, _) = net.forward(&t.gather(&batch)?)?;
                    let c = coral_loss(&features, &t_features)?;
                    coral_sum += c.to_scalar::<f32>()? as f64;
                    if params.coral_weight > 0.0 {
                        (ce + c.affine(params.coral_weight, 0.0)?)?
                    } else {
                        ce
                    }
                }
                None => ce,
            };
            opt.backward_step(&loss)?;
            steps += 1;
        }
        let n = steps.max(1) as f64;
        let log = EpochLog { epoch, class_loss: class_sum / n, coral_loss: coral_sum / n };
        logs.push(log);
        if !progress(&log) {
            return Err(AdaptError::Cancelled);
        }
    }
    Ok((Classifier::new(label_names.to_vec(), net, params.clone()), logs))
}
