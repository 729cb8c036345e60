//! The ensembles of DP-KDEs: which prefix lengths each member covers, and its kernel's block
//! scales (the parent module's docs, "Features" and "The iterative-linear kernel").

use serde::{Deserialize, Serialize};

use crate::dp::summary::family::Layout;
use crate::dp::summary::params::SummaryParams;
use crate::dp::summary::sampler::KeyphraseSampler;

/// Which prefix lengths each ensemble member covers, for sequences of length `len` (L).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ensemble {
    pub sampler: KeyphraseSampler,
    pub len: usize,
}

/// The ensemble of a summary's parameters (here, beside the ensemble, so that the parameters
/// need not import the DP-KDE family's files).
impl SummaryParams {

    pub fn ensemble(&self) -> Ensemble {
        Ensemble { sampler: self.sampler, len: self.len }
    }
}

fn ceil_log2(x: usize) -> usize {
    (usize::BITS - (x.max(1) - 1).leading_zeros()) as usize
}

impl Ensemble {
    /// The layout of the sampler's members.
    pub fn layout(&self) -> Layout {
        self.sampler.family().layout()
    }

    /// Number of DP-KDEs per class.
    pub fn members(&self) -> usize {
        match self.layout() {
            Layout::One => 1,
            Layout::Linear => self.len,
            Layout::Log => ceil_log2(self.len) + 1,
        }
    }

    /// The member scoring a prefix of length ℓ (1-based). Independent: always 0.
    pub fn member_for(&self, prefix_len: usize) -> usize {
        match self.layout() {
            Layout::One => 0,
            Layout::Linear => prefix_len - 1,
            Layout::Log => ceil_log2(prefix_len),
        }
    }

    /// Prefix lengths covered by member m (inclusive range).
    pub fn covers(&self, m: usize) -> (usize, usize) {
        match self.layout() {
            Layout::One => (1, 1),
            Layout::Linear => (m + 1, m + 1),
            Layout::Log if m == 0 => (1, 1),
            Layout::Log => ((1 << (m - 1)) + 1, (1usize << m).min(self.len)),
        }
    }

    /// Blocks of the zero-padded input of member m (d·blocks is its dimension).
    pub fn padded_blocks(&self, m: usize) -> usize {
        match self.layout() {
            Layout::One => 1,
            Layout::Linear => m + 1,
            Layout::Log => 1 << m,
        }
    }

    /// The members a document's length-`len` prefix contributes to, for a document of
    /// `doc_len` terms (at most L). Linear: member ℓ−1. Logarithmic, as in the paper: member j
    /// takes ONE prefix per document, of length min(2^j, doc_len) (zero-padded to 2^j blocks),
    /// so a short document's whole sequence also stands for the longer members.
    pub fn members_of_prefix(&self, len: usize, doc_len: usize) -> Vec<usize> {
        match self.layout() {
            Layout::Log => (0..self.members()).filter(|&j| (1usize << j).min(doc_len) == len).collect(),
            _ => vec![self.member_for(len)],
        }
    }

    /// The block scales of member m for a prefix of length `len`: the kernel is
    /// exp(−Σ_t s_t²‖x_t − y_t‖²/h), with s_t = `prefix` for the first ℓ−1 blocks and `last`
    /// for block ℓ (the keyphrase being scored). Independent: s = 1. Logarithmic: s = 1/√(2^m)
    /// for every block of every prefix it scores (zero-padded to 2^m blocks: the paper's
    /// bandwidth 2^−m). Linear: block ℓ at 1 and the prefix at √(λ/(ℓ−1)) (`super` module docs, "The
    /// iterative-linear kernel"; the paper's is 1/√ℓ for every block).
    pub fn scales(&self, m: usize, len: usize) -> BlockScales {
        match self.layout() {
            Layout::Linear if len > 1 => BlockScales { prefix: (PREFIX_WEIGHT / (len - 1) as f32).sqrt(), last: 1.0 },
            Layout::Log => {
                let s = 1.0 / ((1usize << m) as f32).sqrt();
                BlockScales { prefix: s, last: s }
            }
            _ => {
                let s = 1.0 / (len as f32).sqrt();
                BlockScales { prefix: s, last: s }
            }
        }
    }

    /// The scales (blocks before ℓ, block ℓ) of member m for a prefix of length `len`, as the
    /// build reads them (`sums`).
    pub(crate) fn block_scales(&self, m: usize, len: usize) -> (f32, f32) {
        let b = self.scales(m, len);
        (b.prefix, b.last)
    }

    /// ε of each member: ε_kde split evenly (sequential composition within a class).
    pub fn epsilon_per_member(&self, eps_kde: f64) -> f64 {
        eps_kde / self.members() as f64
    }
}

/// The scales of a prefix's blocks ([`Ensemble::scales`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockScales {
    /// Blocks 1..ℓ−1 (the prefix the keyphrase follows).
    pub prefix: f32,
    /// Block ℓ (the keyphrase scored).
    pub last: f32,
}

/// λ of the iterative-linear kernel: how much the prefix's mean squared distance counts next
/// to the scored keyphrase's (`super` module docs). Noiseless on MTSamples (two-class task, one seed):
/// 0.1 kept the most; with λ = 0.3 and 1 the prefix again pushed the largest score under the
/// random-feature error by ℓ = 5 (signal/error 0.9 and 0.4, against 5.4 at λ = 0.1).
pub const PREFIX_WEIGHT: f32 = 0.1;
