//! The random-feature family of the ε_kde release: DP kernel density estimates with random Fourier features (Wagner, Naamad & Mishra 2023;
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
//! bandwidth h ([`crate::dp::summary::SummaryParams`]) draws ω ~ N(0, I/h) instead, dividing every exponent by h (the
//! paper's kernel becomes exp(−‖x − y‖²/(h·ℓ))): sentence embeddings of unrelated
//! terms are all at ‖x − y‖² ≈ 1.2–1.6, so h = 1 barely tells them apart, and h = 0.1–0.3 does
//! (measured on MTSamples with `dpkps evaluate`; 0.3 is the default since the noise floor and
//! the linear ensemble's sharp last block, `crate::sample::kde`). h does not touch the privacy map: every
//! f_i stays in [-√2, √2], whatever ω is. Every ensemble member uses the first
//! blocks of the same ω (each member's features are still exactly N(0, I) in its own
//! dimension; sharing is data-independent, so privacy is unaffected). Sharing lets the
//! sampler update a prefix's phase in O(I) per chosen keyphrase (see `crate::sample::kde`). Zero-padding a
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
//! `dp::noise`, drawn by `crate::dp::laplace`): ε_m-DP per member. Members of one class compose sequentially
//! (Σ_m ε_m = ε_kde); classes are disjoint sets of documents, so they compose in parallel:
//! the whole release is ε_kde-DP. Scores, clipping and sampling only read the release.
//!
//! # Choosing I
//! The score's error has two parts: random-feature error, whose standard deviation grows like
//! n/√I for n documents, and DP noise, like √(2I)·C/ε_m = 2√I/ε_m. Their variances n²/I and
//! 4I/ε_m² sum to a minimum at I* = n·ε_m/2 ([`suggest_features`]). But n is private: a default
//! I computed from the exact class sizes and released would leak them un-noised. So the
//! default is data-independent, [`crate::dp::summary::SummaryParams::DEFAULT_FEATURES`] (the rule at a few thousand
//! documents and ε of a few), and a curator who knows their corpus size from public
//! information may pass another I.
//!
//! # Classes
//! The classes are the curator's declared, public set ([`crate::input::classes`]): every declared
//! class gets its release, with no documents (noise only) if need be, so the release has the
//! same shape on neighbouring corpora. A corpus in which no document has a keyphrase gives a
//! noise-only release, not an error (an error would tell the two cases apart).
//!
//! # Where it sits
//! The samplers [`KeyphraseSampler::Independent`], [`KeyphraseSampler::IterativeLinear`] and
//! [`KeyphraseSampler::IterativeLog`] use this family ([`RandomFeatures`]); the histogram samplers are
//! the other family (`crate::dp::summary::hist`). Both share the artefact, the entry points and the
//! release loop of `crate::dp::summary`, which adds the noise and writes the ledger entries.

use serde_json::json;

use super::sampler::KeyphraseSampler;
use super::family::{by_class, Family, Layout, Member, SummaryDoc, SummaryError, GRID_BITS};
use super::params::SummaryParams;
use crate::dp::DpError;
use crate::embed::TermEmbeddings;
use crate::input::public_vocab::TermId;

mod ensemble;
mod features;
#[cfg(test)]
mod privacy_checks;
pub mod split;
mod sums;

pub use ensemble::{BlockScales, Ensemble, PREFIX_WEIGHT};
pub use features::Features;

/// C: an upper bound on √2 (the f64 nearest √2 is above it).
const C_BOUND: f64 = std::f64::consts::SQRT_2;
/// Q = ⌈C·2^GRID_BITS⌉: the largest |q_i| of one document.
pub const Q_BOUND: u64 = 1_482_911;

/// I, balancing random-feature error against DP noise (module docs).
pub fn suggest_features(n_docs: usize, eps_member: f64) -> usize {
    let ideal = (n_docs as f64 * eps_member / 2.0).max(1.0);
    let pow = ideal.log2().round().clamp(8.0, 12.0) as u32;
    1usize << pow
}

/// The random-feature family ([`Family`]): per class, one I-vector of exact sums per ensemble
/// member, Δ = I·Q (module docs, "The mechanism and its privacy map"); its members differ in
/// their ensemble's [`Layout`].
pub(crate) struct RandomFeatures(pub Layout);

impl Family for RandomFeatures {
    fn check_inputs(&self, docs: &[SummaryDoc<'_>], emb: &TermEmbeddings, _candidates: &[TermId]) -> Result<(), SummaryError> {
        for d in docs {
            if let Some(&t) = d.terms.iter().find(|&&t| !emb.contains(t)) {
                return Err(SummaryError::MissingEmbedding(t));
            }
        }
        Ok(())
    }

    fn exact_sums(&self, docs: &[SummaryDoc<'_>], classes: usize, emb: &TermEmbeddings, _candidates: &[TermId], params: &SummaryParams, seed: [u8; 32]) -> Vec<Vec<Vec<i64>>> {
        let f = Features::generate(params.features, emb.dim(), params.blocks(), params.bandwidth, seed);
        // A document's contribution is built from rows of one term at one block each, computed
        // once per distinct (block, term) a batch needs (`sums`).
        let mut rows = sums::Rows::new(emb, &f, params.sampler == KeyphraseSampler::Independent, docs.iter().flat_map(|d| sums::uses(d, params)));
        by_class(docs, classes).iter().map(|class_docs| sums::class_sums(class_docs, &f, params, &mut rows)).collect()
    }

    fn sensitivity(&self, params: &SummaryParams) -> Result<u64, DpError> {
        (params.features as u64).checked_mul(Q_BOUND).ok_or_else(|| DpError::Scale("I·Q".into()))
    }

    fn width(&self, params: &SummaryParams, _candidates: usize) -> usize {
        params.features
    }

    fn mechanism(&self, delta: u64) -> (String, String) {
        let grid = (1u64 << GRID_BITS) as f64;
        ("discrete Laplace on fixed-point random-Fourier-feature sums".to_string(), format!("I·Q·2^-{GRID_BITS} = {:.4}", delta as f64 / grid))
    }

    fn spend_params(&self, params: &SummaryParams, member: usize, _candidates: usize) -> Vec<(&'static str, serde_json::Value)> {
        let (lo, hi) = params.ensemble().covers(member);
        vec![("member", member.into()), ("prefix_lengths", json!([lo, hi])), ("features_I", params.features.into())]
    }

    fn keeps_candidates(&self) -> bool {
        false
    }

    fn splits(&self) -> bool {
        true
    }

    fn member(&self) -> Member {
        Member::RandomFeatures(self.0)
    }

    fn layout(&self) -> Layout {
        self.0
    }

    fn release_cells(&self, _params: &SummaryParams, _candidates: usize) -> Option<usize> {
        None
    }

    fn report_words(&self) -> String {
        "per-class DP-KDEs with random Fourier features (discrete Laplace of scale √2·I/ε per member)".to_string()
    }

    fn note(&self, params: &SummaryParams) -> Option<String> {
        Some(format!("I = {}", params.features))
    }
}

#[cfg(test)]
pub(crate) mod tests;
