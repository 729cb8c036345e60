//! The ε_kde stage's parameters ([`SummaryParams`]): validation, and the public quantities the
//! privacy map needs before any ε is spent (Δ, the noise scale, the release's size).

use serde::{Deserialize, Serialize};

use super::sampler::{Needs, KeyphraseSampler, MAX_LEN};
use super::family::SummaryError;
use crate::dp::noise::Ratio;
use crate::base::ParamError;
use crate::dp::{check_epsilon, DpError};

/// Parameters of the DP-KDE stage.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SummaryParams {
    /// ε_kde for every class (classes compose in parallel).
    pub epsilon: f64,
    pub sampler: KeyphraseSampler,
    /// L: keyphrases per sequence.
    pub len: usize,
    /// I: random features.
    pub features: usize,
    /// M: keyphrases per document for the independent sampler's KDE.
    pub terms_per_doc: usize,
    /// h: kernel bandwidth relative to the paper's (`super::kde` module docs). Releases written before it
    /// existed used 1.
    #[serde(default = "default_bandwidth")]
    pub bandwidth: f64,
    /// Kernel smoothing of the histogram samplers over Ṽ's embeddings (exp(−‖v−w‖²/smoothing));
    /// 0: off. Ignored by the DP-KDE samplers.
    #[serde(default)]
    pub smoothing: f64,
}

fn default_bandwidth() -> f64 {
    1.0
}

impl SummaryParams {
    pub const MAX_LEN: usize = MAX_LEN;
    pub const MAX_FEATURES: usize = 16_384;
    /// The default h, chosen on MTSamples (README, "evaluate"): with the noise floor, 0.3 kept
    /// more than 0.1 for every DP-KDE sampler without noise (two-class and top-5 tasks, 3 seeds).
    pub const DEFAULT_BANDWIDTH: f64 = 0.3;
    /// The default I: data-independent (`super::kde` module docs, "Choosing I").
    pub const DEFAULT_FEATURES: usize = 2048;
    /// The default sampler, chosen on MTSamples (README, "evaluate").
    pub const DEFAULT_SAMPLER: KeyphraseSampler = KeyphraseSampler::Histogram;

    pub fn validate(&self) -> Result<(), ParamError> {
        check_epsilon("ε_kde", self.epsilon)?;
        if self.len == 0 || self.len > Self::MAX_LEN {
            return Err(ParamError::new("L (keyphrases per sequence)", self.len, "must be between 1 and 64"));
        }
        if self.features == 0 || self.features > Self::MAX_FEATURES {
            return Err(ParamError::new("I (random features)", self.features, "must be between 1 and 16384"));
        }
        if self.terms_per_doc == 0 || self.terms_per_doc > Self::MAX_LEN {
            return Err(ParamError::new("M (keyphrases per document)", self.terms_per_doc, "must be between 1 and 64"));
        }
        if !(self.bandwidth.is_finite() && (0.01..=100.0).contains(&self.bandwidth)) {
            return Err(ParamError::new("h (kernel bandwidth)", self.bandwidth, "must be between 0.01 and 100"));
        }
        if !(self.smoothing == 0.0 || (self.smoothing.is_finite() && (0.01..=100.0).contains(&self.smoothing))) {
            return Err(ParamError::new("the smoothing bandwidth", self.smoothing, "must be 0 (off) or between 0.01 and 100"));
        }
        Ok(())
    }

    /// Δ, the L1 sensitivity of one member's sums in grid units: I·Q for the random-feature
    /// sums, one document's weight for the histograms (the family's privacy map:
    /// `super::kde`, `super::hist`).
    pub fn sensitivity(&self) -> Result<u64, DpError> {
        self.sampler.family().sensitivity(self)
    }

    /// The exact noise scale in grid units: Δ·members/ε_kde, Δ = I·Q for the random-feature
    /// sums and one document's weight for the histograms. Public inputs only: callers check it
    /// before spending ε (an ε too small for I and L is refused up front, not after ε_voc).
    pub fn noise_scale(&self) -> Result<Ratio, DpError> {
        let members = self.ensemble().members() as u64;
        let total = self.sensitivity()?.checked_mul(members).ok_or_else(|| DpError::Scale("Δ·members".into()))?;
        Ratio::int_over_f64(total, self.epsilon)
    }

    /// Refuses a histogram release too large to hold (Markov: (N+1)·N counts per class) for
    /// N candidates and this many classes. Public inputs only: call it before spending ε.
    pub fn check_release_size(&self, candidates: usize, classes: usize) -> Result<(), SummaryError> {
        self.noise_scale()?;
        if let Some(entries) = self.sampler.family().release_cells(self, candidates) {
            let cells = entries.saturating_mul(classes);
            if cells > MAX_HIST_CELLS {
                return Err(SummaryError::TooLarge { cells, max: MAX_HIST_CELLS });
            }
        }
        Ok(())
    }

    /// How many of a document's kept terms (most used first) the mechanism reads: M for the
    /// independent KDE, L for the iterative ones, and for the histogram samplers every kept
    /// term (they look for the first M that are in Ṽ).
    pub fn doc_terms_read(&self) -> usize {
        self.needs().terms_read_per_doc
    }

    /// What the sampler reads with these parameters ([`KeyphraseSampler::needs`]): which embeddings to
    /// compute (the documents' terms, Ṽ's) and how many terms per document to keep.
    pub fn needs(&self) -> Needs {
        self.sampler.needs(self.len, self.terms_per_doc, self.smoothing)
    }

    /// Blocks of ω needed: one per position of a sequence.
    pub fn blocks(&self) -> usize {
        if self.ensemble().layout().over_prefixes() {
            self.len
        } else {
            1
        }
    }
}


/// Most noisy counts a histogram release may hold (memory, and the release file's size).
pub const MAX_HIST_CELLS: usize = 8_000_000;
