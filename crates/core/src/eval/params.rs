//! What an evaluation is asked to do ([`super`]): the task and [`EvalParams`], checked before
//! the data is read.

use serde::{Deserialize, Serialize};

use super::classifier::SoftmaxParams;
use crate::dp::candidates::CandidateRule;
use crate::dp::vocabulary::VocabParams;
use crate::base::ParamError;
use crate::dp::summary::{SummaryParams, KeyphraseSampler};

/// The label of the "everything else" class of a one-vs-rest task.
pub const REST: &str = "(rest)";

/// I for the noiseless arms when none is given: the largest value the DP rule picks. Without
/// noise, more features only reduce the random-feature error.
pub const NODP_FEATURES: usize = 4096;

/// Which classification task to evaluate on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Task {
    /// Every label of the corpus is a class.
    AllClasses,
    /// One label against all the others (relabelled [`REST`]); with `balance`, the rest is
    /// subsampled (seeded) to the size of the positive class.
    OneVsRest { positive: String, balance: bool },
    /// The `k` most frequent labels (ties by name); other documents are left out. With
    /// `balance`, every class is subsampled (seeded) to the size of the smallest of them.
    TopClasses {
        k: usize,
        #[serde(default)]
        balance: bool,
    },
    /// Every label with at least `min` documents; other documents are left out.
    MinClassDocs { min: usize },
}

/// Everything an evaluation needs besides the data. Serialised into the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalParams {
    pub task: Task,
    /// Fraction of each class held out for testing, in (0, 1).
    pub holdout: f64,
    /// One repetition per seed: the seed fixes the split (and the balancing of the first seed
    /// fixes the task's documents). DP noise is fresh every time (OS randomness).
    pub seeds: Vec<u64>,
    /// ε_voc, N, S.
    pub vocab: VocabParams,
    pub eps_kde: f64,
    /// L.
    pub len: usize,
    /// I; `None`: the pipeline's data-independent default for the DP arms, [`NODP_FEATURES`]
    /// for the noiseless ones.
    pub features: Option<usize>,
    /// M (the independent sampler's keyphrases per document).
    pub kde_terms_per_doc: usize,
    /// Sequences sampled per class for each sampler arm.
    pub per_class: usize,
    pub samplers: Vec<KeyphraseSampler>,
    /// Also run the samplers with the noise switched off (`nodp-*` arms).
    pub no_dp_arms: bool,
    /// Kernel bandwidth h of the KDEs and samplers (`SummaryParams::bandwidth`).
    #[serde(default = "one")]
    pub bandwidth: f64,
    /// Smoothing of the histogram samplers (`SummaryParams::smoothing`; 0: off).
    #[serde(default)]
    pub smoothing: f64,
    /// ε of the DP class counts (`dp::counts`): sequences per class in proportion to them
    /// (the noiseless arms use the exact counts); `None`: `per_class` for every class.
    #[serde(default)]
    pub class_counts_epsilon: Option<f64>,
    /// Which of Ṽ's terms the DP-KDE arms draw from (`dp::candidates`); the noiseless arms'
    /// exact vocabulary has no noise words and is read whole.
    #[serde(default)]
    pub candidates: CandidateRule,
    pub classifier: SoftmaxParams,
    /// Train the DP arms on the sequences of noise-dominated classes too (generation leaves
    /// them out by default, `crate::sample::signal`).
    #[serde(default)]
    pub include_noise_classes: bool,
    /// The histogram sampler's post-processing choices (`crate::sample::Sampling`).
    #[serde(default)]
    pub sampling: crate::sample::Sampling,
    /// Measured, not the pipeline's: Ṽ cut to the terms whose noisy count noise alone is
    /// expected to reach for at most one zero-count entry (partition selection as
    /// post-processing of the noisy histogram; at least one term is kept). docs/utility.md.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partition_selection: bool,
}

fn one() -> f64 {
    1.0
}

impl EvalParams {
    pub const MAX_SEEDS: usize = 100;
    pub const MAX_PER_CLASS: usize = 100_000;

    /// Checks everything that does not need the data.
    pub fn validate(&self) -> Result<(), ParamError> {
        if !(self.holdout > 0.0 && self.holdout < 1.0) {
            return Err(ParamError::new("the held-out fraction", self.holdout, "must be strictly between 0 and 1"));
        }
        if self.seeds.is_empty() || self.seeds.len() > Self::MAX_SEEDS {
            return Err(ParamError::new("the number of seeds", self.seeds.len(), "must be between 1 and 100"));
        }
        if self.per_class == 0 || self.per_class > Self::MAX_PER_CLASS {
            return Err(ParamError::new("sequences per class", self.per_class, "must be between 1 and 100000"));
        }
        match &self.task {
            Task::TopClasses { k, .. } if *k < 2 => {
                return Err(ParamError::new("the number of top classes", k, "must be at least 2"));
            }
            Task::OneVsRest { positive, .. } if positive.trim().is_empty() => {
                return Err(ParamError::new("the positive class", "\"\"", "must be a label of the corpus"));
            }
            _ => {}
        }
        if let Some(e) = self.class_counts_epsilon {
            crate::dp::check_epsilon("ε for the class counts", e)?;
        }
        if !(self.classifier.l2.is_finite() && self.classifier.l2 >= 0.0) {
            return Err(ParamError::new("the L2 penalty", self.classifier.l2, "must be a finite number ≥ 0"));
        }
        self.vocab.validate()?;
        self.sampling.validate()?;
        // The KDE parameters (ε_kde, L, I, M, bandwidth h) are judged by the pipeline's own check.
        for &sampler in &self.samplers {
            self.summary_params(sampler, false).validate()?;
        }
        Ok(())
    }

    /// Terms per document the matched corpus must have kept.
    pub fn keep(&self) -> usize {
        let read = self.samplers.iter().map(|&s| self.summary_params(s, false).doc_terms_read()).max().unwrap_or(0);
        self.len.max(self.kde_terms_per_doc).max(self.vocab.terms_per_doc).max(read)
    }

    /// The KDE parameters of one arm: I as given, else the pipeline's data-independent
    /// default (DP arms) or [`NODP_FEATURES`] (noiseless arms).
    pub(super) fn summary_params(&self, sampler: KeyphraseSampler, noiseless: bool) -> SummaryParams {
        let features = self.features.unwrap_or(if noiseless { NODP_FEATURES } else { SummaryParams::DEFAULT_FEATURES });
        SummaryParams {
            epsilon: self.eps_kde,
            sampler,
            len: self.len,
            features,
            terms_per_doc: self.kde_terms_per_doc,
            bandwidth: self.bandwidth,
            smoothing: self.smoothing,
        }
    }
}
