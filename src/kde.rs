//! DP kernel density estimates with random Fourier features (Wagner, Naamad & Mishra 2023;
//! DP-KPS appendix B.2).
//!
//! # Features
//! I features, each with ω_i ~ N(0, I) over all L embedding blocks and β_i ~ U[0, 2π):
//! for a keyphrase prefix z = (z_1, …, z_ℓ) of unit embeddings,
//!
//! ```text
//! θ_i(z) = β_i + √2 · Σ_t s_t · ω_iᵗ·z_t,    f_i(z) = √2 · cos θ_i(z)
//! ```
//!
//! so that E[f_i(x) f_i(y)] = exp(−Σ_t s_t²‖x_t − y_t‖²): a Gaussian kernel with per-block
//! scales s_t, public constants of the member and ℓ ([`Ensemble::scales`]). The paper's,
//! s_t = 1/√ℓ for every block, gives exp(−‖x − y‖²/ℓ) (bandwidth u = 1/ℓ per block); the
//! independent sampler (ℓ = 1) and the logarithmic ensemble (s_t = 1/√(2^m) for member m, the
//! paper's bandwidth 2^−m) keep it. The linear ensemble's member ℓ gives the scored block
//! s_ℓ = 1 and the prefix's blocks √(λ/(ℓ−1)) ("The iterative-linear kernel" below). A global
//! bandwidth h ([`KdeParams`]) draws ω ~ N(0, I/h) instead, dividing every exponent by h (the
//! paper's kernel becomes exp(−‖x − y‖²/(h·ℓ))): sentence embeddings of unrelated
//! terms are all at ‖x − y‖² ≈ 1.2–1.6, so h = 1 barely tells them apart, and h = 0.1–0.3 does
//! (measured on MTSamples with `dpkps evaluate`; 0.3 is the default since the noise floor and
//! the linear ensemble's sharp last block, `sample`). h does not touch the privacy map: every
//! f_i stays in [-√2, √2], whatever ω is. Every ensemble member uses the first
//! blocks of the same ω (each member's features are still exactly N(0, I) in its own
//! dimension; sharing is data-independent, so privacy is unaffected). Sharing lets the
//! sampler update a prefix's phase in O(I) per chosen keyphrase (see `sample`). Zero-padding a
//! prefix to a power of two adds nothing to θ, so the logarithmic ensemble needs no extra
//! blocks. ω and β come from a ChaCha20 stream with a random, released, data-independent seed.
//!
//! # The iterative-linear kernel: a sharp last block
//! The paper's kernel for a length-ℓ prefix gives every block the scale 1/√ℓ, so the keyphrase
//! being scored is compared at bandwidth h·ℓ and the prefix at the same. Measured on MTSamples
//! (noiseless, `dpkps evaluate --no-dp --diagnose`, README "evaluate"): from ℓ = 3 on, the
//! exact kernel's conditional is close to uniform over Ṽ (total variation from uniform 0.27 at
//! ℓ = 3, 0.04 at ℓ = 10, against 0.72 at ℓ = 1), and the product over the prefix's blocks makes
//! every document's kernel value tiny, so the largest exact score is below the random-feature
//! error (signal/error 0.004 at ℓ = 4): later keyphrases were drawn from random-feature error.
//! Member ℓ of the linear ensemble therefore scales block ℓ by 1 (the keyphrase is compared at
//! bandwidth h, like the independent KDE's) and the prefix's blocks by √(λ/(ℓ−1)):
//!
//! ```text
//! k(x, y) = exp(−(‖x_ℓ − y_ℓ‖² + λ·mean_{t<ℓ}‖x_t − y_t‖²)/h),   λ = PREFIX_WEIGHT
//! ```
//!
//! The prefix still weighs the documents (conditioning), without driving every kernel value
//! under the random-feature error. The scales are public constants: every f_i stays in
//! [−√2, √2], so the privacy map below is unchanged. (The logarithmic ensemble cannot do this:
//! one member serves several query lengths, so its blocks cannot know which one is scored.)
//!
//! # The mechanism and its privacy map
//! Per class and per ensemble member m, release S̃_m = S_m + noise where
//! S_m,i = Σ_documents c_i(doc) and c_i(doc) is the document's contribution: the mean of
//! f_i over the prefixes it gives to member m (so a document's weight is 1 in total, however
//! many keyphrases or prefixes it has). A query's score is (1/I) Σ_i S̃_m,i · f_i(y).
//!
//! Neighbouring relation: add or remove one document. It changes S_m by c(doc), with
//! |c_i| ≤ √2 (a mean of values in [-√2, √2]), so the L1 sensitivity of the I-vector is
//! √2·I. We make that exact in integer arithmetic: each c_i is clamped to [-C, C] with
//! C = the f64 just above √2, and rounded to the grid 2^-20: q_i = round(c_i·2^20), so
//! |q_i| ≤ Q = ⌈C·2^20⌉ = 1,482,911 and the per-document L1 change of the integer vector
//! Σ q is at most Δ = I·Q (in grid units; ≈ √2·I + I·2^-20 in real units). (The iterative
//! samplers, whose contributions are single values, round √2·cos θ_i·2^20 computed in f32 and
//! clamp the integer to [−Q, Q] instead (`sums::add_cos_quantised`): the same bound, whatever
//! the float arithmetic gives, NaN and infinities included.) The sums are
//! exact integers (no floating-point accumulation that could depend on the data in
//! unaccounted ways), and each gets discrete Laplace noise of scale Δ/ε_m (exact sampler,
//! `dp::sampler`): ε_m-DP per member. Members of one class compose sequentially
//! (Σ_m ε_m = ε_kde); classes are disjoint sets of documents, so they compose in parallel:
//! the whole release is ε_kde-DP. Scores, clipping and sampling only read the release.
//!
//! # Choosing I
//! The score's error has two parts: random-feature error, whose standard deviation grows like
//! n/√I for n documents, and DP noise, like √(2I)·C/ε_m = 2√I/ε_m. Their variances n²/I and
//! 4I/ε_m² sum to a minimum at I* = n·ε_m/2 ([`suggest_features`]). But n is private: a default
//! I computed from the exact class sizes and released would leak them un-noised. So the
//! default is data-independent, [`KdeParams::DEFAULT_FEATURES`] (the rule at a few thousand
//! documents and ε of a few), and a curator who knows their corpus size from public
//! information may pass another I.
//!
//! # Classes
//! The classes are the curator's declared, public set ([`crate::classes`]): every declared
//! class gets its release, with no documents (noise only) if need be, so the release has the
//! same shape on neighbouring corpora. A corpus in which no document has a keyphrase gives a
//! noise-only release, not an error (an error would tell the two cases apart).
//!
//! # The histogram samplers
//! [`Sampler::Histogram`] and [`Sampler::Markov`] release noisy keyphrase histograms over Ṽ
//! (Markov: a keyphrase row plus transitions) instead of random-feature sums; their privacy
//! map is in [`crate::hist`].
//! They share this module's entry point, artefact and ledger entries so that every caller
//! (CLI, app, evaluation) treats all five samplers alike.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::classes::ClassSet;
use crate::dp::sampler::{discrete_laplace, Ratio};
use crate::dp::{check_epsilon, DpError, ParamError, SecureRng};
use crate::embed::TermEmbeddings;
use crate::ledger::{Scope, Spend};
use crate::linalg::{gemm, MatRef};
use crate::vocab::TermId;

mod sums;
pub(crate) mod split;
#[cfg(test)]
mod privacy_checks;
#[cfg(test)]
mod golden;

/// Grid of the fixed-point sums: 2^-GRID_BITS.
pub const GRID_BITS: i32 = 20;
/// C: an upper bound on √2 (the f64 nearest √2 is above it).
const C_BOUND: f64 = std::f64::consts::SQRT_2;
/// Q = ⌈C·2^GRID_BITS⌉: the largest |q_i| of one document.
pub const Q_BOUND: u64 = 1_482_911;

/// The keyphrase samplers of DP-KPS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sampler {
    /// One DP-KDE over single keyphrases; L i.i.d. draws.
    Independent,
    /// L DP-KDEs, member ℓ over length-ℓ prefixes; the scored (last) block at bandwidth h, the
    /// prefix weighted by λ (module docs, "The iterative-linear kernel").
    IterativeLinear,
    /// ⌈log₂L⌉+1 DP-KDEs, as in the paper: member j is built on ONE prefix per document, of
    /// length min(2^j, the document's length), zero-padded to 2^j blocks at bandwidth 2^-j; it
    /// scores queries of length (2^(j-1), 2^j], zero-padded the same way. (An earlier version
    /// pooled every prefix of those lengths at bandwidth 1/ℓ; on MTSamples, noiseless, the two
    /// were within noise of each other, 0.86 ± 0.05 vs 0.90 ± 0.02 of the non-private
    /// accuracy, so the paper's estimator is kept.)
    IterativeLog,
    /// A noisy histogram of the documents' keyphrases over Ṽ (L1 sensitivity 1, `crate::hist`);
    /// L i.i.d. draws.
    Histogram,
    /// A noisy histogram over Ṽ of the keyphrases (row 0) and their transitions (`crate::hist`);
    /// Markov chains.
    Markov,
}

impl Sampler {
    /// Every sampler, in the order the CLI and the page list them.
    pub const ALL: [Sampler; 5] =
        [Sampler::Histogram, Sampler::Markov, Sampler::Independent, Sampler::IterativeLinear, Sampler::IterativeLog];

    pub fn name(self) -> &'static str {
        match self {
            Sampler::Independent => "independent",
            Sampler::IterativeLinear => "iterative-linear",
            Sampler::IterativeLog => "iterative-log",
            Sampler::Histogram => "histogram",
            Sampler::Markov => "markov",
        }
    }

    pub fn parse(s: &str) -> Option<Sampler> {
        Sampler::ALL.into_iter().find(|x| x.name() == s.trim())
    }

    /// The histogram samplers' kind (`None`: a DP-KDE sampler).
    pub fn hist_kind(self) -> Option<crate::hist::HistKind> {
        match self {
            Sampler::Histogram => Some(crate::hist::HistKind::Unigram),
            Sampler::Markov => Some(crate::hist::HistKind::Transitions),
            _ => None,
        }
    }

    /// Whether the mechanism reads the embeddings of the documents' terms (the DP-KDEs do;
    /// the histogram samplers read only Ṽ's, and only to smooth).
    pub fn embeds_document_terms(self) -> bool {
        self.hist_kind().is_none()
    }

    /// One sentence on what the sampler keeps (CLI help, the page).
    pub fn describe(self) -> &'static str {
        match self {
            Sampler::Histogram => "each class's keyphrase frequencies over Ṽ, with little noise (sensitivity 1); keyphrases drawn independently",
            Sampler::Markov => "each class's keyphrase frequencies and which keyphrase follows which (one noisy histogram over Ṽ: a keyphrase row and transition counts); sequences drawn as Markov chains",
            Sampler::Independent => "the paper's DP-KDE over single keyphrases (random Fourier features, sensitivity √2·I); drawn independently",
            Sampler::IterativeLinear => "DP-KDEs over keyphrase prefixes, one per length (ε split L ways): the paper's, with the scored keyphrase compared sharply and its prefix loosely",
            Sampler::IterativeLog => "the paper's DP-KDEs over keyphrase prefixes, one per power-of-two length (ε split ⌈log₂L⌉+1 ways)",
        }
    }
}

/// Which prefix lengths each ensemble member covers, for sequences of length `len` (L).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ensemble {
    pub sampler: Sampler,
    pub len: usize,
}

fn ceil_log2(x: usize) -> usize {
    (usize::BITS - (x.max(1) - 1).leading_zeros()) as usize
}

impl Ensemble {
    /// Number of DP-KDEs per class.
    pub fn members(&self) -> usize {
        match self.sampler {
            Sampler::Independent | Sampler::Histogram | Sampler::Markov => 1,
            Sampler::IterativeLinear => self.len,
            Sampler::IterativeLog => ceil_log2(self.len) + 1,
        }
    }

    /// The member scoring a prefix of length ℓ (1-based). Independent: always 0.
    pub fn member_for(&self, prefix_len: usize) -> usize {
        match self.sampler {
            Sampler::Independent | Sampler::Histogram | Sampler::Markov => 0,
            Sampler::IterativeLinear => prefix_len - 1,
            Sampler::IterativeLog => ceil_log2(prefix_len),
        }
    }

    /// Prefix lengths covered by member m (inclusive range).
    pub fn covers(&self, m: usize) -> (usize, usize) {
        match self.sampler {
            Sampler::Independent | Sampler::Histogram | Sampler::Markov => (1, 1),
            Sampler::IterativeLinear => (m + 1, m + 1),
            Sampler::IterativeLog if m == 0 => (1, 1),
            Sampler::IterativeLog => ((1 << (m - 1)) + 1, (1usize << m).min(self.len)),
        }
    }

    /// Blocks of the zero-padded input of member m (d·blocks is its dimension).
    pub fn padded_blocks(&self, m: usize) -> usize {
        match self.sampler {
            Sampler::Independent | Sampler::Histogram | Sampler::Markov => 1,
            Sampler::IterativeLinear => m + 1,
            Sampler::IterativeLog => 1 << m,
        }
    }

    /// The members a document's length-`len` prefix contributes to, for a document of
    /// `doc_len` terms (at most L). Linear: member ℓ−1. Logarithmic, as in the paper: member j
    /// takes ONE prefix per document, of length min(2^j, doc_len) (zero-padded to 2^j blocks),
    /// so a short document's whole sequence also stands for the longer members.
    pub fn members_of_prefix(&self, len: usize, doc_len: usize) -> Vec<usize> {
        match self.sampler {
            Sampler::IterativeLog => (0..self.members()).filter(|&j| (1usize << j).min(doc_len) == len).collect(),
            _ => vec![self.member_for(len)],
        }
    }

    /// The block scales of member m for a prefix of length `len`: the kernel is
    /// exp(−Σ_t s_t²‖x_t − y_t‖²/h), with s_t = `prefix` for the first ℓ−1 blocks and `last`
    /// for block ℓ (the keyphrase being scored). Independent: s = 1. Logarithmic: s = 1/√(2^m)
    /// for every block of every prefix it scores (zero-padded to 2^m blocks: the paper's
    /// bandwidth 2^−m). Linear: block ℓ at 1 and the prefix at √(λ/(ℓ−1)) (module docs, "The
    /// iterative-linear kernel"; the paper's is 1/√ℓ for every block).
    pub fn scales(&self, m: usize, len: usize) -> BlockScales {
        match self.sampler {
            Sampler::IterativeLinear if len > 1 => BlockScales { prefix: (PREFIX_WEIGHT / (len - 1) as f32).sqrt(), last: 1.0 },
            Sampler::IterativeLog => {
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
/// to the scored keyphrase's (module docs). Noiseless on MTSamples (two-class task, one seed):
/// 0.1 kept the most; with λ = 0.3 and 1 the prefix again pushed the largest score under the
/// random-feature error by ℓ = 5 (signal/error 0.9 and 0.4, against 5.4 at λ = 0.1).
pub const PREFIX_WEIGHT: f32 = 0.1;

/// I, balancing random-feature error against DP noise (module docs).
pub fn suggest_features(n_docs: usize, eps_member: f64) -> usize {
    let ideal = (n_docs as f64 * eps_member / 2.0).max(1.0);
    let pow = ideal.log2().round().clamp(8.0, 12.0) as u32;
    1usize << pow
}

/// The random features: ω (I × blocks·d, row-major) and β.
pub struct Features {
    pub count: usize,
    pub dim: usize,
    pub blocks: usize,
    omega: Vec<f32>,
    beta: Vec<f32>,
}

impl Features {
    /// Deterministic from `seed` (data-independent; released with the DP-KDEs). ω ~ N(0, I/h)
    /// for bandwidth h.
    pub fn generate(count: usize, dim: usize, blocks: usize, bandwidth: f64, seed: [u8; 32]) -> Features {
        let sd = 1.0 / bandwidth.sqrt();
        let mut rng = ChaCha20Rng::from_seed(seed);
        let unit = |rng: &mut ChaCha20Rng| ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let n = count * blocks * dim;
        let mut omega = Vec::with_capacity(n + 1);
        while omega.len() < n {
            // Box–Muller: two independent standard normals per pair of uniforms.
            let (u1, u2) = (unit(&mut rng), unit(&mut rng));
            let r = (-2.0 * u1.ln()).sqrt();
            let a = std::f64::consts::TAU * u2;
            omega.push((sd * r * a.cos()) as f32);
            omega.push((sd * r * a.sin()) as f32);
        }
        omega.truncate(n);
        let beta = (0..count).map(|_| (std::f64::consts::TAU * unit(&mut rng)) as f32).collect();
        Features { count, dim, blocks, omega, beta }
    }

    pub fn beta(&self) -> &[f32] {
        &self.beta
    }

    /// Block t of ω (I × d view).
    fn block(&self, t: usize) -> MatRef<'_> {
        MatRef::rows(&self.omega, self.count, self.blocks * self.dim).cols_range(t * self.dim, self.dim)
    }

    /// out (n × I) = √2 · E · ωᵗᵀ for the n rows of E (n × d).
    pub fn project(&self, t: usize, e: MatRef<'_>, out: &mut [f32]) {
        gemm(std::f32::consts::SQRT_2, e, self.block(t).t(), 0.0, out);
    }

    /// Random unit vectors (rows of a Gaussian matrix, normalised): synthetic embeddings for
    /// tests and benchmarks.
    pub fn synthetic_unit_vectors(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut s = [0u8; 32];
        s[..8].copy_from_slice(&seed.to_le_bytes());
        let g = Features::generate(n, dim, 1, 1.0, s);
        g.omega
            .chunks_exact(dim)
            .map(|v| {
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                v.iter().map(|x| x / norm).collect()
            })
            .collect()
    }

    /// √2·ω_iᵗ·z for one feature (the naive path; for reference and tests).
    pub fn project_one(&self, i: usize, t: usize, z: &[f32]) -> f32 {
        let row = &self.omega[i * self.blocks * self.dim + t * self.dim..][..self.dim];
        std::f32::consts::SQRT_2 * row.iter().zip(z).map(|(a, b)| a * b).sum::<f32>()
    }
}

/// Parameters of the DP-KDE stage.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KdeParams {
    /// ε_kde for every class (classes compose in parallel).
    pub epsilon: f64,
    pub sampler: Sampler,
    /// L: keyphrases per sequence.
    pub len: usize,
    /// I: random features.
    pub features: usize,
    /// M: keyphrases per document for the independent sampler's KDE.
    pub terms_per_doc: usize,
    /// h: kernel bandwidth relative to the paper's (module docs). Releases written before it
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

impl KdeParams {
    pub const MAX_LEN: usize = 64;
    pub const MAX_FEATURES: usize = 16_384;
    /// The default h, chosen on MTSamples (README, "evaluate"): with the noise floor, 0.3 kept
    /// more than 0.1 for every DP-KDE sampler without noise (two-class and top-5 tasks, 3 seeds).
    pub const DEFAULT_BANDWIDTH: f64 = 0.3;
    /// The default I: data-independent (module docs, "Choosing I").
    pub const DEFAULT_FEATURES: usize = 2048;
    /// The default sampler, chosen on MTSamples (README, "evaluate").
    pub const DEFAULT_SAMPLER: Sampler = Sampler::Histogram;

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

    pub fn ensemble(&self) -> Ensemble {
        Ensemble { sampler: self.sampler, len: self.len }
    }

    /// Δ, the L1 sensitivity of one member's sums in grid units: I·Q for the random-feature
    /// sums, one document's weight for the histograms (module docs; `crate::hist`).
    pub fn sensitivity(&self) -> Result<u64, DpError> {
        match self.sampler.hist_kind() {
            Some(_) => Ok(crate::hist::DOC_WEIGHT),
            None => (self.features as u64).checked_mul(Q_BOUND).ok_or_else(|| DpError::Scale("I·Q".into())),
        }
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
    pub fn check_release_size(&self, candidates: usize, classes: usize) -> Result<(), KdeError> {
        self.noise_scale()?;
        if let Some(kind) = self.sampler.hist_kind() {
            let cells = kind.entries(candidates).saturating_mul(classes);
            if cells > MAX_HIST_CELLS {
                return Err(KdeError::TooLarge { cells, max: MAX_HIST_CELLS });
            }
        }
        Ok(())
    }

    /// How many of a document's first matched terms the mechanism reads: M for the
    /// independent KDE, L for the iterative ones, and for the histogram samplers every kept
    /// term (they look for the first M that are in Ṽ).
    pub fn doc_terms_read(&self) -> usize {
        match self.sampler {
            Sampler::Independent => self.terms_per_doc,
            Sampler::IterativeLinear | Sampler::IterativeLog => self.len,
            Sampler::Histogram | Sampler::Markov => Self::MAX_LEN,
        }
    }

    /// Blocks of ω needed: one per position of a sequence.
    pub fn blocks(&self) -> usize {
        match self.sampler {
            Sampler::Independent | Sampler::Histogram | Sampler::Markov => 1,
            _ => self.len,
        }
    }
}

/// One class's released sums: one I-vector per ensemble member (DP-KDE samplers), or one
/// histogram over Ṽ (histogram samplers, `crate::hist`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassKde {
    /// The class name (`None`: the corpus has no labels).
    pub label: Option<String>,
    /// The noisy sums exactly as released: integers in units of 2^-GRID_BITS.
    pub sums: Vec<Vec<i64>>,
}

impl ClassKde {
    /// Member m's noisy sums S̃ in real units.
    pub fn member_sums(&self, m: usize) -> Vec<f64> {
        self.sums[m].iter().map(|&v| v as f64 / (1u64 << GRID_BITS) as f64).collect()
    }
}

/// The released DP-KDEs: a DP artefact. Sampling more sequences from it costs nothing more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DpKdeSet {
    pub params: KdeParams,
    pub dim: usize,
    /// Hex seed of ω and β (data-independent).
    pub feature_seed: String,
    pub epsilon_per_member: f64,
    pub classes: Vec<ClassKde>,
    /// The candidates the histogram samplers' entries refer to (Ṽ's term ids, in Ṽ's order);
    /// empty for the DP-KDE samplers (their sums do not depend on the candidates).
    #[serde(default)]
    pub candidates: Vec<TermId>,
    /// The version of the sums' meaning ([`KERNEL`]): the random-feature kernel they were built
    /// with, and the markov histogram's layout; 0 in releases written before the field existed.
    #[serde(default)]
    pub kernel: u32,
}

/// The version of what a release's sums mean, so that a file saved by an earlier version is
/// refused ([`DpKdeSet::check`]) rather than read with a meaning it was not built with:
/// - 0 (releases without the field): the paper's block scales ([`Ensemble::scales`]), 1/√ℓ
///   for every block, which the independent and logarithmic samplers still use;
/// - 1: the iterative-linear kernel with λ on the prefix (an iterative-linear release below 1
///   is refused);
/// - 2: the markov histogram's row 0 is the class's keyphrase histogram (`crate::hist`, since
///   d8ac1f6); before, it was a START row of first transitions. Markov releases below 2 are
///   refused: those of version 1 were saved both before and after that change, so the number
///   cannot tell them apart. The histogram and DP-KDE samplers read every version as before.
pub const KERNEL: u32 = 2;

/// The first [`KERNEL`] whose releases of `sampler` mean what this version reads.
fn first_kernel_read(sampler: Sampler) -> u32 {
    match sampler {
        Sampler::IterativeLinear => 1,
        Sampler::Markov => 2,
        Sampler::Histogram | Sampler::Independent | Sampler::IterativeLog => 0,
    }
}

impl DpKdeSet {
    pub fn features(&self) -> Result<Features, KdeError> {
        let seed = parse_seed(&self.feature_seed).ok_or(KdeError::BadArtefact("feature_seed"))?;
        Ok(Features::generate(self.params.features, self.dim, self.params.blocks(), self.params.bandwidth, seed))
    }

    /// Checks the artefact's shape (after loading a file).
    pub fn check(&self) -> Result<(), KdeError> {
        self.params.validate().map_err(|e| KdeError::Dp(e.into()))?;
        let m = self.params.ensemble().members();
        let width = match self.params.sampler.hist_kind() {
            Some(kind) => kind.entries(self.candidates.len()),
            None => self.params.features,
        };
        let ok = self.classes.iter().all(|c| c.sums.len() == m && c.sums.iter().all(|s| s.len() == width))
            && (self.params.sampler.hist_kind().is_none() || !self.candidates.is_empty());
        if !ok || self.classes.is_empty() || self.dim == 0 {
            return Err(KdeError::BadArtefact("sums"));
        }
        if self.kernel > KERNEL {
            return Err(KdeError::TooNew(self.kernel));
        }
        if self.kernel < first_kernel_read(self.params.sampler) {
            return Err(KdeError::Outdated(self.params.sampler.name()));
        }
        Ok(())
    }
}

fn parse_seed(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

#[derive(Debug, thiserror::Error)]
pub enum KdeError {
    #[error(transparent)]
    Dp(#[from] DpError),
    #[error("the term with id {0} has no embedding")]
    MissingEmbedding(TermId),
    #[error("the release would hold {cells} noisy counts (the Markov sampler keeps (N+1)·N per class), more than {max}: choose a smaller N, fewer classes, or the histogram sampler")]
    TooLarge { cells: usize, max: usize },
    #[error("the DP-KDE file is damaged or from another version ({0})")]
    BadArtefact(&'static str),
    /// A release whose sums this version would read with another meaning ([`KERNEL`]).
    #[error("this {0} release was saved by an earlier version of dpkps, whose {0} sampler built it differently; this version would misread it: build the release again")]
    Outdated(&'static str),
    #[error("this release was saved by a later version of dpkps (release version {0}; this one reads up to {KERNEL}): use that version to sample from it")]
    TooNew(u32),
}

/// One document as the KDE sees it: its class (index in the [`ClassSet`]) and its keyphrases
/// in order. Documents that the class set drops are not passed at all.
#[derive(Debug, Clone, Copy)]
pub struct KdeDoc<'a> {
    pub class: usize,
    pub terms: &'a [TermId],
}

/// Whether the mechanism adds noise.
///
/// `Off` exists for unit tests and for the utility evaluation's noiseless comparison arms
/// (`crate::eval`), whose outputs are never released. It is `pub(crate)` on purpose: the only
/// public entry point, [`build`], always adds Laplace noise, so no caller outside this crate
/// (the CLI's release paths, the app, a user of the library) can produce a noiseless release.
pub(crate) enum Noise<'r> {
    Laplace(&'r mut SecureRng),
    Off,
}

/// Builds the DP summaries of every declared class: ε_kde-DP (module docs; for the histogram
/// samplers, `crate::hist`). `candidates` is Ṽ (term ids in Ṽ's order): the histogram
/// samplers' entries; the DP-KDE samplers do not read it. Returns the release and one spend
/// per class and member.
pub fn build(
    docs: &[KdeDoc<'_>],
    classes: &ClassSet,
    emb: &TermEmbeddings,
    candidates: &[TermId],
    params: &KdeParams,
    rng: &mut SecureRng,
) -> Result<(DpKdeSet, Vec<Spend>), KdeError> {
    let seed = draw_seed(rng);
    build_with(docs, classes, emb, candidates, params, seed, Noise::Laplace(rng))
}

/// The seed of ω and β: random, data-independent, released with the DP-KDEs.
pub fn draw_seed(rng: &mut SecureRng) -> [u8; 32] {
    let mut seed = [0u8; 32];
    rng.fill(&mut seed);
    seed
}

/// The exact sums Σ_docs q(doc) of the DP-KDE samplers (private: never released as such), per
/// class (index in the class set, `classes` of them) and member, for the features of `seed`.
/// Exact integers: the sums of a split of the documents add up to those of all of them, bit for
/// bit, so the work can be shared (the app's helper workers) and the release stays the same.
/// `pub(crate)`, like [`Noise`]: noiseless private sums must not leave the crate's DP API.
/// (Only the app's worker, a wasm32 module, calls it outside tests.)
#[cfg_attr(not(all(target_arch = "wasm32", feature = "embed")), allow(dead_code))]
pub(crate) fn exact_sums(docs: &[KdeDoc<'_>], classes: usize, emb: &TermEmbeddings, params: &KdeParams, seed: [u8; 32]) -> Result<Vec<Vec<Vec<i64>>>, KdeError> {
    params.validate().map_err(DpError::from)?;
    if params.sampler.hist_kind().is_some() {
        return Err(KdeError::BadArtefact("sampler"));
    }
    if docs.iter().any(|d| d.class >= classes) {
        return Err(KdeError::BadArtefact("document class"));
    }
    for d in docs {
        if let Some(&t) = d.terms.iter().find(|&&t| !emb.contains(t)) {
            return Err(KdeError::MissingEmbedding(t));
        }
    }
    let f = Features::generate(params.features, emb.dim(), params.blocks(), params.bandwidth, seed);
    let mut rows = sums::Rows::new(emb, &f, params.sampler == Sampler::Independent, docs.iter().flat_map(|d| sums::uses(d, params)));
    let mut by_class: Vec<Vec<&KdeDoc<'_>>> = vec![Vec::new(); classes];
    for d in docs {
        by_class[d.class].push(d);
    }
    Ok(by_class.iter().map(|class_docs| sums::class_sums(class_docs, &f, params, &mut rows)).collect())
}

/// [`build`] for the DP-KDE samplers with the exact sums of all of `docs` already computed
/// ([`exact_sums`], perhaps in parts, added up) for the features of `seed` ([`draw_seed`]).
/// `pub(crate)`: it attaches the ε spends to whatever sums it is given (twice the exact sums
/// would be released at half the noise they need), so only the crate's own callers may.
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(all(target_arch = "wasm32", feature = "embed")), allow(dead_code))]
pub(crate) fn build_from_sums(
    docs: &[KdeDoc<'_>],
    classes: &ClassSet,
    emb: &TermEmbeddings,
    candidates: &[TermId],
    params: &KdeParams,
    seed: [u8; 32],
    sums: Vec<Vec<Vec<i64>>>,
    rng: &mut SecureRng,
) -> Result<(DpKdeSet, Vec<Spend>), KdeError> {
    let members = params.ensemble().members();
    if params.sampler.hist_kind().is_some() || sums.len() != classes.len() || sums.iter().any(|c| c.len() != members || c.iter().any(|m| m.len() != params.features)) {
        return Err(KdeError::BadArtefact("sums"));
    }
    release(docs, classes, emb, candidates, params, seed, Noise::Laplace(rng), Some(sums))
}

pub(crate) fn build_with(
    docs: &[KdeDoc<'_>],
    classes: &ClassSet,
    emb: &TermEmbeddings,
    candidates: &[TermId],
    params: &KdeParams,
    seed: [u8; 32],
    noise: Noise<'_>,
) -> Result<(DpKdeSet, Vec<Spend>), KdeError> {
    release(docs, classes, emb, candidates, params, seed, noise, None)
}

#[allow(clippy::too_many_arguments)]
fn release(
    docs: &[KdeDoc<'_>],
    classes: &ClassSet,
    emb: &TermEmbeddings,
    candidates: &[TermId],
    params: &KdeParams,
    seed: [u8; 32],
    mut noise: Noise<'_>,
    precomputed: Option<Vec<Vec<Vec<i64>>>>,
) -> Result<(DpKdeSet, Vec<Spend>), KdeError> {
    params.validate().map_err(DpError::from)?;
    if docs.iter().any(|d| d.class >= classes.len()) {
        return Err(KdeError::BadArtefact("document class"));
    }
    let hist = params.sampler.hist_kind();
    if hist.is_none() {
        for d in docs {
            if let Some(&t) = d.terms.iter().find(|&&t| !emb.contains(t)) {
                return Err(KdeError::MissingEmbedding(t));
            }
        }
    } else if candidates.is_empty() {
        return Err(KdeError::BadArtefact("candidates"));
    }
    params.check_release_size(candidates.len(), classes.len())?;
    let ensemble = params.ensemble();
    let members = ensemble.members();
    let eps_m = ensemble.epsilon_per_member(params.epsilon);
    // Δ in grid units: I·Q for the random-feature sums, G for a histogram (one document's
    // total weight). Noise scale Δ/ε_m = Δ·members/ε_kde, computed exactly.
    let delta = params.sensitivity()?;
    let scale = params.noise_scale()?;
    let grid = (1u64 << GRID_BITS) as f64;
    let (mechanism, sensitivity) = match hist {
        Some(_) => (
            format!("discrete Laplace on the fixed-point {} histogram over Ṽ", if params.sampler == Sampler::Markov { "keyphrase-row + transition" } else { "keyphrase" }),
            format!("G·2^-{GRID_BITS} = 1 (a document's total weight)"),
        ),
        None => (
            "discrete Laplace on fixed-point random-Fourier-feature sums".to_string(),
            format!("I·Q·2^-{GRID_BITS} = {:.4}", delta as f64 / grid),
        ),
    };
    // The features are needed only to compute the sums here (not for sums computed already:
    // drawing I·blocks·d Gaussians again cost the app's worker a noticeable part of a second).
    let features = match hist {
        Some(_) => None,
        None if precomputed.is_some() => None,
        None => Some(Features::generate(params.features, emb.dim(), params.blocks(), params.bandwidth, seed)),
    };
    let index = crate::hist::CandidateIndex::new(candidates);
    // A document's contribution is built from rows of one term at one block each, computed
    // once per distinct (block, term) a batch needs (`sums`).
    let mut precomputed = precomputed.map(Vec::into_iter);
    let mut rows = features.as_ref().filter(|_| precomputed.is_none()).map(|f| sums::Rows::new(emb, f, params.sampler == Sampler::Independent, docs.iter().flat_map(|d| sums::uses(d, params))));
    let mut by_class: Vec<Vec<&KdeDoc<'_>>> = vec![Vec::new(); classes.len()];
    for d in docs {
        by_class[d.class].push(d);
    }
    let mut out = Vec::with_capacity(classes.len());
    let mut spends = Vec::new();
    for (c, class_docs) in by_class.iter().enumerate() {
        let totals = match (hist, &features) {
            _ if precomputed.is_some() => precomputed.as_mut().and_then(Iterator::next).unwrap_or_default(),
            (Some(kind), _) => vec![crate::hist::class_sums(kind, class_docs, &index, params.terms_per_doc)],
            (None, Some(f)) => match rows.as_mut() {
                Some(rows) => sums::class_sums(class_docs, f, params, rows),
                None => unreachable!("rows exist with the features"),
            },
            (None, None) => unreachable!("features exist for every DP-KDE sampler"),
        };
        let sums = totals
            .into_iter()
            .map(|member| {
                member
                    .into_iter()
                    .map(|t| {
                        let z = match &mut noise {
                            Noise::Laplace(rng) => discrete_laplace(rng, scale),
                            Noise::Off => 0,
                        };
                        t.saturating_add(z)
                    })
                    .collect()
            })
            .collect();
        let name = classes.name(c).to_string();
        for m in 0..members {
            let (lo, hi) = ensemble.covers(m);
            spends.push(Spend {
                stage: "kde".into(),
                mechanism: mechanism.clone(),
                epsilon: eps_m,
                params: match hist {
                    Some(kind) => serde_json::json!({
                        "sampler": params.sampler.name(),
                        "entries": kind.entries(candidates.len()),
                        "keyphrases_per_doc_M": params.terms_per_doc,
                        "l1_sensitivity": sensitivity,
                        "noise_scale": scale.to_f64() / grid,
                    }),
                    None => serde_json::json!({
                        "sampler": params.sampler.name(),
                        "member": m,
                        "prefix_lengths": [lo, hi],
                        "features_I": params.features,
                        "l1_sensitivity": sensitivity,
                        "noise_scale": scale.to_f64() / grid,
                    }),
                },
                scope: Scope::Partition { label: name.clone() },
            });
        }
        out.push(ClassKde { label: classes.is_labelled().then_some(name), sums });
    }
    let set = DpKdeSet {
        params: *params,
        dim: emb.dim(),
        feature_seed: crate::corpus::hex(&seed),
        epsilon_per_member: eps_m,
        classes: out,
        candidates: if hist.is_some() { candidates.to_vec() } else { Vec::new() },
        kernel: KERNEL,
    };
    Ok((set, spends))
}

/// Most noisy counts a histogram release may hold (memory, and the release file's size).
pub const MAX_HIST_CELLS: usize = 8_000_000;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn q_bound_covers_c() {
        let q = (C_BOUND * (1u64 << GRID_BITS) as f64).ceil() as u64;
        assert_eq!(q, Q_BOUND);
        assert!(C_BOUND >= 2f64.sqrt());
    }

    #[test]
    fn ensembles_have_the_stated_structure() {
        let lin = Ensemble { sampler: Sampler::IterativeLinear, len: 10 };
        assert_eq!(lin.members(), 10);
        assert!((1..=10).all(|l| lin.member_for(l) == l - 1 && lin.covers(l - 1) == (l, l)));
        assert_eq!(lin.epsilon_per_member(10.0), 1.0);

        let log = Ensemble { sampler: Sampler::IterativeLog, len: 10 };
        assert_eq!(log.members(), 5); // ⌈log₂10⌉ + 1
        let want = [0, 1, 2, 2, 3, 3, 3, 3, 4, 4];
        for l in 1..=10 {
            assert_eq!(log.member_for(l), want[l - 1], "prefix length {l}");
            let (lo, hi) = log.covers(want[l - 1]);
            assert!(lo <= l && l <= hi, "member {} covers {lo}..={hi}, not {l}", want[l - 1]);
            assert!(log.padded_blocks(want[l - 1]) >= l && log.padded_blocks(want[l - 1]) < 2 * l.max(1));
        }
        assert_eq!(log.covers(4), (9, 10));
        assert_eq!(log.epsilon_per_member(10.0), 2.0);
        for len in [1usize, 2, 3, 4, 5, 8, 9, 16, 17] {
            let e = Ensemble { sampler: Sampler::IterativeLog, len };
            assert_eq!(e.members(), (len as f64).log2().ceil() as usize + 1, "L = {len}");
            assert_eq!(e.member_for(len), e.members() - 1);
        }
        let ind = Ensemble { sampler: Sampler::Independent, len: 10 };
        assert_eq!((ind.members(), ind.epsilon_per_member(5.0)), (1, 5.0));
    }

    #[test]
    fn suggested_features_follow_the_rule() {
        assert_eq!(suggest_features(5000, 1.0), 2048); // 2500 → 2^11
        assert_eq!(suggest_features(10, 0.1), 256);
        assert_eq!(suggest_features(1_000_000, 10.0), 4096);
    }

    /// Random unit vectors in `dim` dimensions (test data).
    pub(crate) fn unit_vectors(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        Features::synthetic_unit_vectors(n, dim, seed)
    }

    /// Terms 0..n with synthetic unit vectors of dimension `dim` (seed 1).
    fn embeddings_of(n: usize, dim: usize) -> TermEmbeddings {
        let mut emb = TermEmbeddings::new(dim);
        for (i, v) in unit_vectors(n, dim, 1).iter().enumerate() {
            emb.insert(i as TermId, v).unwrap();
        }
        emb
    }

    #[test]
    fn noiseless_scores_match_the_exact_gaussian_kde() {
        // 40 documents of 3 keyphrases over 30 terms in 8 dimensions; I = 16384 features.
        let dim = 8;
        let vecs = unit_vectors(30, dim, 3);
        let mut emb = TermEmbeddings::new(dim);
        for (i, v) in vecs.iter().enumerate() {
            emb.insert(i as TermId, v).unwrap();
        }
        let term_lists: Vec<Vec<TermId>> = (0..40u32).map(|k| vec![k % 30, (k * 7 + 3) % 30, (k * 11 + 5) % 30]).collect();
        let docs: Vec<KdeDoc<'_>> = term_lists.iter().map(|t| KdeDoc { class: 0, terms: t }).collect();
        for sampler in [Sampler::Independent, Sampler::IterativeLinear] {
            let params = KdeParams { epsilon: 1.0, sampler, len: 2, features: 16_384, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
            let (set, _) = build_with(&docs, &ClassSet::unlabelled(), &emb, &[], &params, [9; 32], Noise::Off).unwrap();
            let f = set.features().unwrap();
            let sums: Vec<Vec<f64>> = (0..set.classes[0].sums.len()).map(|m| set.classes[0].member_sums(m)).collect();
            // Query: a pair of terms (or a single term for the independent KDE).
            for q in 0..10u32 {
                let (a, b) = (q % 30, (q * 13 + 1) % 30);
                let (member, prefix): (usize, Vec<TermId>) =
                    if sampler == Sampler::Independent { (0, vec![a]) } else { (1, vec![a, b]) };
                let s = params.ensemble().scales(member, prefix.len());
                let scale = |t: usize| if t + 1 == prefix.len() { s.last } else { s.prefix };
                let rff: f64 = (0..f.count)
                    .map(|i| {
                        let th = f.beta[i] + prefix.iter().enumerate().map(|(t, &p)| scale(t) * f.project_one(i, t, emb.get(p).unwrap())).sum::<f32>();
                        sums[member][i] * std::f64::consts::SQRT_2 * (th as f64).cos()
                    })
                    .sum::<f64>()
                    / f.count as f64;
                // Exact: Σ_docs mean over the doc's prefixes/keyphrases of exp(-‖x−y‖²/ℓ).
                let exact: f64 = term_lists
                    .iter()
                    .map(|doc| {
                        let parts: Vec<Vec<TermId>> = if sampler == Sampler::Independent {
                            doc.iter().map(|&t| vec![t]).collect()
                        } else {
                            vec![doc[..2].to_vec()]
                        };
                        parts
                            .iter()
                            .map(|x| {
                                let d2: f32 = x.iter().zip(&prefix).enumerate().map(|(t, (&u, &v))| {
                                    scale(t).powi(2) * emb.get(u).unwrap().iter().zip(emb.get(v).unwrap()).map(|(p, q)| (p - q) * (p - q)).sum::<f32>()
                                }).sum();
                                (-(d2 as f64)).exp()
                            })
                            .sum::<f64>()
                            / parts.len() as f64
                    })
                    .sum();
                // Random-feature error: sd ≈ n/√I = 40/128 ≈ 0.31; tolerance 5 sd... tighter in practice.
                assert!((rff - exact).abs() < 1.0, "{sampler:?} query {q}: rff {rff:.3} vs exact {exact:.3}");
            }
        }
    }

    #[test]
    fn noise_scale_and_spends_follow_the_privacy_map() {
        let emb = embeddings_of(5, 4);
        let a = vec![0, 1, 2];
        let b = vec![3, 4];
        let docs = [KdeDoc { class: 0, terms: &a }, KdeDoc { class: 1, terms: &b }];
        let classes = ClassSet::declared(&["x", "y"], crate::classes::OtherLabels::Drop).unwrap();
        let params = KdeParams { epsilon: 6.0, sampler: Sampler::IterativeLog, len: 3, features: 64, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
        let mut rng = SecureRng::seeded_for_tests(1);
        let (set, spends) = build(&docs, &classes, &emb, &[], &params, &mut rng).unwrap();
        assert_eq!(set.classes.len(), 2);
        assert_eq!(spends.len(), 2 * 3);
        assert!(spends.iter().all(|s| (s.epsilon - 2.0).abs() < 1e-12));
        let mut run = crate::ledger::Run::new("r".into(), "t".into());
        run.spends = spends.clone();
        assert!((run.epsilon() - 6.0).abs() < 1e-12, "classes must compose in parallel");
        // scale = I·Q/ε_m grid units = 64·1482911/2 / 2^20 ≈ 45.25 ≈ √2·64/2
        let scale = spends[0].params["noise_scale"].as_f64().unwrap();
        assert!((scale - std::f64::consts::SQRT_2 * 64.0 / 2.0).abs() < 1e-3, "{scale}");
        set.check().unwrap();
        let json = serde_json::to_string(&set).unwrap();
        let back: DpKdeSet = serde_json::from_str(&json).unwrap();
        assert_eq!(back, set);
    }

    #[test]
    fn releases_of_an_earlier_linear_kernel_are_refused() {
        // A release file written before the `kernel` field: an iterative-linear one was built
        // with other block scales and is refused; the other samplers' kernel is unchanged.
        let emb = embeddings_of(3, 4);
        let t = vec![0, 1, 2];
        let docs = [KdeDoc { class: 0, terms: &t }];
        let mut rng = SecureRng::seeded_for_tests(2);
        for sampler in [Sampler::IterativeLinear, Sampler::IterativeLog, Sampler::Independent] {
            let params = KdeParams { epsilon: 1.0, sampler, len: 3, features: 8, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
            let (set, _) = build(&docs, &ClassSet::unlabelled(), &emb, &[], &params, &mut rng).unwrap();
            assert_eq!(set.kernel, KERNEL);
            set.check().unwrap();
            let mut json = serde_json::to_value(&set).unwrap();
            json.as_object_mut().unwrap().remove("kernel");
            let old: DpKdeSet = serde_json::from_value(json).unwrap();
            assert_eq!(old.kernel, 0);
            assert_eq!(old.check().is_err(), sampler == Sampler::IterativeLinear, "{sampler:?}");
            assert!(DpKdeSet { kernel: KERNEL + 1, ..set }.check().is_err(), "{sampler:?}: a later kernel");
        }
    }

    #[test]
    fn markov_releases_from_before_its_keyphrase_row_are_refused() {
        // Before d8ac1f6 a markov release's row 0 was a START row, and its files carry only the
        // `kernel` field (absent, or 1 both before and after the change): they are refused with
        // words that say so, a new one round-trips and samples, and the histogram sampler's
        // old files load as before.
        let emb = embeddings_of(3, 4);
        let t = vec![0, 1, 2];
        let docs = [KdeDoc { class: 0, terms: &t }];
        let cands = crate::sample::Candidates::without_vectors(&t, 4);
        let mut rng = SecureRng::seeded_for_tests(5);
        for sampler in [Sampler::Markov, Sampler::Histogram] {
            let params = KdeParams { epsilon: 1.0, sampler, len: 3, features: 8, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
            let (set, _) = build(&docs, &ClassSet::unlabelled(), &emb, &t, &params, &mut rng).unwrap();
            assert_eq!(set.kernel, KERNEL);
            let back: DpKdeSet = serde_json::from_str(&serde_json::to_string(&set).unwrap()).unwrap();
            assert_eq!(back, set);
            back.check().unwrap();
            assert_eq!(crate::sample::sample(&back, &cands, 2, &mut rng).unwrap().len(), 2, "{sampler:?}");
            for old_kernel in [None, Some(1)] {
                let mut json = serde_json::to_value(&set).unwrap();
                let obj = json.as_object_mut().unwrap();
                match old_kernel {
                    None => obj.remove("kernel"),
                    Some(k) => obj.insert("kernel".into(), k.into()),
                };
                let old: DpKdeSet = serde_json::from_value(json).unwrap();
                match sampler {
                    Sampler::Markov => {
                        let e = old.check().unwrap_err();
                        assert!(matches!(e, KdeError::Outdated("markov")), "{old_kernel:?}: {e}");
                        assert!(e.to_string().contains("earlier version"), "{e}");
                        assert!(crate::sample::sample(&old, &cands, 2, &mut rng).is_err(), "sampling must refuse it too");
                    }
                    _ => old.check().unwrap(),
                }
            }
            assert!(matches!(DpKdeSet { kernel: KERNEL + 1, ..set }.check(), Err(KdeError::TooNew(_))), "{sampler:?}");
        }
    }

    #[test]
    fn missing_embeddings_and_bad_parameters_are_refused() {
        let emb = TermEmbeddings::new(4);
        let t = vec![7];
        let docs = [KdeDoc { class: 0, terms: &t }];
        let cs = ClassSet::unlabelled();
        let params = KdeParams { epsilon: 1.0, sampler: Sampler::Independent, len: 3, features: 64, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
        let mut rng = SecureRng::seeded_for_tests(1);
        assert!(matches!(build(&docs, &cs, &emb, &[], &params, &mut rng), Err(KdeError::MissingEmbedding(7))));
        let outside = [KdeDoc { class: 1, terms: &t }];
        assert!(matches!(build(&outside, &cs, &emb, &[1], &KdeParams { sampler: Sampler::Histogram, ..params }, &mut rng), Err(KdeError::BadArtefact(_))));
        for bad in [
            KdeParams { epsilon: f64::NAN, ..params },
            KdeParams { len: 0, ..params },
            KdeParams { features: 0, ..params },
            KdeParams { terms_per_doc: 0, ..params },
            KdeParams { bandwidth: 0.0, ..params },
            KdeParams { bandwidth: f64::INFINITY, ..params },
            KdeParams { smoothing: -1.0, ..params },
            KdeParams { smoothing: 0.001, ..params },
        ] {
            assert!(matches!(build(&docs, &cs, &emb, &[], &bad, &mut rng), Err(KdeError::Dp(_))), "{bad:?}");
        }
    }
}
