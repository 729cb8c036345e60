//! The training loop: minibatches of the labelled documents, each paired with a minibatch of
//! the unlabelled ones when λ > 0; the loss `cross-entropy + λ·ℓ_CORAL`; one AdamW step per
//! pair. An epoch is one pass over the labelled documents in a fresh random order; the
//! unlabelled ones are drawn in their own random order, again from the start when used up.

use candle_core::{Device, Tensor};
use candle_nn::{AdamW, Optimizer, ParamsAdamW};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::coral::coral_loss;
use super::net::Net;
use super::{AdaptError, Classifier, CoralOn, EpochLog, Matrix, TrainParams};

/// Fisher–Yates over `order` (not a DP draw: any fair shuffle does).
pub fn shuffle<T>(order: &mut [T], rng: &mut ChaCha8Rng) {
    for i in (1..order.len()).rev() {
        let j = (rng.next_u64() % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
}

/// Trains on `labelled` (rows of `source` with class ids `labels[k] < labels_names.len()`),
/// adapted to `target` when λ > 0 and it has at least two rows. `progress` sees each epoch's
/// losses and returns false to stop (then [`AdaptError::Cancelled`]). The loop over
/// [`Trainer`], for callers that need not stop between epochs.
pub fn train(
    source: &Matrix,
    labels: &[usize],
    label_names: &[String],
    target: Option<&Matrix>,
    params: &TrainParams,
    progress: &mut dyn FnMut(&EpochLog) -> bool,
) -> Result<(Classifier, Vec<EpochLog>), AdaptError> {
    let mut trainer = Trainer::new(source, labels, label_names, target, params)?;
    while !trainer.finished() {
        let log = trainer.epoch(source, target)?;
        if !progress(&log) {
            return Err(AdaptError::Cancelled);
        }
    }
    Ok(trainer.finish())
}

/// Training one epoch at a time, so that a caller can stop or yield between epochs (the page's
/// worker lets a Cancel in). Holds the network, the optimiser and the random orders, not the
/// documents: each [`Trainer::epoch`] is given the same `source` and `target` as
/// [`Trainer::new`].
pub struct Trainer {
    net: Net,
    opt: AdamW,
    rng: ChaCha8Rng,
    params: TrainParams,
    label_names: Vec<String>,
    y_all: Vec<u32>,
    order: Vec<usize>,
    t_order: Vec<usize>,
    t_next: usize,
    logs: Vec<EpochLog>,
}

impl Trainer {
    /// Checks the inputs and initialises the network (arguments as for [`train`]).
    pub fn new(source: &Matrix, labels: &[usize], label_names: &[String], target: Option<&Matrix>, params: &TrainParams) -> Result<Trainer, AdaptError> {
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
        let target = usable(target);
        if let Some(t) = target {
            if t.cols != source.cols {
                return Err(AdaptError::Input(format!("labelled embeddings have {} dimensions, unlabelled {}", source.cols, t.cols)));
            }
        }
        let mut rng = ChaCha8Rng::seed_from_u64(params.seed);
        let net = Net::init(source.cols, params.hidden, classes, &mut rng).map_err(crate::tensor_error)?;
        let opt = AdamW::new(
            net.vars(),
            ParamsAdamW { lr: params.learning_rate, weight_decay: params.weight_decay, ..ParamsAdamW::default() },
        ).map_err(crate::tensor_error)?;
        let t_order: Vec<usize> = (0..target.map_or(0, |t| t.rows)).collect();
        Ok(Trainer {
            net,
            opt,
            rng,
            params: params.clone(),
            label_names: label_names.to_vec(),
            y_all: labels.iter().map(|&y| y as u32).collect(),
            order: (0..source.rows).collect(),
            t_next: t_order.len(), // drawn afresh at the first use
            t_order,
            logs: Vec::with_capacity(params.epochs),
        })
    }

    pub fn params(&self) -> &TrainParams {
        &self.params
    }

    /// Whether every epoch has run.
    pub fn finished(&self) -> bool {
        self.logs.len() >= self.params.epochs
    }

    /// The epochs run so far, and of how many.
    pub fn progress(&self) -> (usize, usize) {
        (self.logs.len(), self.params.epochs)
    }

    /// One more epoch over `source` (and `target`): the matrices given to [`Trainer::new`].
    pub fn epoch(&mut self, source: &Matrix, target: Option<&Matrix>) -> Result<EpochLog, AdaptError> {
        let target = usable(target);
        if source.rows != self.order.len() || target.map_or(0, |t| t.rows) != self.t_order.len() {
            return Err(AdaptError::Input("internal: an epoch on other documents than the trainer was made for".into()));
        }
        let epoch = self.logs.len() + 1;
        shuffle(&mut self.order, &mut self.rng);
        let (mut class_sum, mut coral_sum, mut steps) = (0.0, 0.0, 0usize);
        let batch = self.params.batch;
        for c in 0..self.order.len().div_ceil(batch) {
            let chunk = &self.order[c * batch..((c + 1) * batch).min(self.order.len())];
            // A last batch of one has no covariance: it joins the next epoch's order instead.
            if chunk.len() < 2 {
                continue;
            }
            let x = crate::gather(source, chunk).map_err(crate::tensor_error)?;
            let y = Tensor::from_vec(chunk.iter().map(|&k| self.y_all[k]).collect::<Vec<u32>>(), chunk.len(), &Device::Cpu).map_err(crate::tensor_error)?;
            let (features, logits) = self.net.forward(&x).map_err(crate::tensor_error)?;
            let ce = candle_nn::loss::cross_entropy(&logits, &y).map_err(crate::tensor_error)?;
            class_sum += ce.to_scalar::<f32>().map_err(crate::tensor_error)? as f64;
            let loss = match target {
                Some(t) => {
                    let mut batch = Vec::with_capacity(chunk.len());
                    while batch.len() < chunk.len().min(t.rows) {
                        if self.t_next == self.t_order.len() {
                            shuffle(&mut self.t_order, &mut self.rng);
                            self.t_next = 0;
                        }
                        batch.push(self.t_order[self.t_next]);
                        self.t_next += 1;
                    }
                    let (t_features, t_logits) = self.net.forward(&crate::gather(t, &batch).map_err(crate::tensor_error)?).map_err(crate::tensor_error)?;
                    let c = match self.params.coral_on {
                        CoralOn::Logits => coral_loss(&logits, &t_logits).map_err(crate::tensor_error)?,
                        CoralOn::Features => coral_loss(&features, &t_features).map_err(crate::tensor_error)?,
                    };
                    coral_sum += c.to_scalar::<f32>().map_err(crate::tensor_error)? as f64;
                    if self.params.coral_weight > 0.0 {
                        (ce + c.affine(self.params.coral_weight, 0.0).map_err(crate::tensor_error)?).map_err(crate::tensor_error)?
                    } else {
                        ce
                    }
                }
                None => ce,
            };
            self.opt.backward_step(&loss).map_err(crate::tensor_error)?;
            steps += 1;
        }
        let n = steps.max(1) as f64;
        let log = EpochLog { epoch, class_loss: class_sum / n, coral_loss: coral_sum / n };
        self.logs.push(log);
        Ok(log)
    }

    /// The trained classifier and every epoch's losses.
    pub fn finish(self) -> (Classifier, Vec<EpochLog>) {
        (Classifier::new(self.label_names, self.net, self.params), self.logs)
    }
}

/// The unlabelled documents, when there are enough for a covariance.
fn usable(target: Option<&Matrix>) -> Option<&Matrix> {
    target.filter(|t| t.rows >= 2)
}
