//! The DP vote over generated candidates (ε_select): the private corpus chooses, under DP,
//! which of the LLM's documents are kept (Private Evolution's nearest-neighbour vote, put after
//! DP-KPS: the seeds already carry the class; the vote keeps the candidates the private
//! documents stand closest to). A run of its own, after generation (`crate::run::vote`).
//!
//! # The mechanism
//! Inputs:
//! - **the candidates** (public): per declared class, the generated documents of that class
//!   (DP outputs: written by the LLM from DP keyphrase sequences alone), each embedded with
//!   the sentence model and scaled to unit length ([`Candidates`]);
//! - **the units** (private): each unit (a document, or a person with a person column) has one
//!   declared class and one unit-length vector ([`UnitVector`]): a document's vector is the
//!   model's for its text, embedded alone (one model call per document); a person's is the
//!   normalised mean of the vectors of their documents of their one class
//!   ([`crate::input::units::members`]).
//!
//! Steps:
//! 1. **Who votes** (optional, [`coins`]): each unit by an independent coin of public rate q
//!    from the CSPRNG, exactly (Poisson subsampling); q = 1, everyone.
//! 2. **The votes**: each voting unit of class c votes for the candidate of class c with the
//!    largest cosine to its vector ([`nearest`]; ties to the first). h_c[j] = the votes for
//!    candidate j of class c.
//! 3. **The release** ([`release`]): every h_c[j], zeros included, plus discrete Laplace noise of
//!    scale 1/ε (exact sampler, `super::laplace`), drawn in class order, then candidate order.
//! 4. **What is kept** (`keep`, post-processing): per class the k best noisy counts, or k drawn
//!    without replacement in proportion to the clipped noisy counts; the share of the noisy
//!    votes the kept ones hold and the candidates that drew none.
//!
//! # Privacy map
//! Neighbouring relation: add or remove one unit x (the crate's: a document; one person with all
//! their documents when a person column is given, made one unit by `crate::input::units`).
//! - **Every other unit's vote is unchanged.** A unit's class and vector are functions of that
//!   unit alone: its class comes from its own labels (a person's majority class, from their own
//!   documents); its vector from its own texts, each embedded in a model call of its own (no
//!   batch-mates, no padding set by another text: `crate::run::vote`); its nearest candidate
//!   from its vector and the public candidates of its class, by a dot product computed in a
//!   fixed order for that unit alone ([`nearest`]; no batched GEMM whose rounding could follow
//!   other rows). So adding x changes no other unit's vote.
//! - **x moves one count by one.** x votes at most once (one class, one vector, one nearest
//!   candidate), so the histograms of all classes together change by at most 1 in L1: Δ = 1.
//!   Discrete Laplace noise of scale 1/ε on every count of every class is then ε-DP for the
//!   whole release (geometric mechanism; equivalently, the classes are disjoint in the units
//!   and compose in parallel, each at ε). The ledger records one spend per class, each of ε,
//!   on that class's partition: the stage costs their maximum, ε.
//! - **A person with documents in several classes.** Still one unit in ONE class (their
//!   majority class, `crate::input::units`): only their documents of that class enter their
//!   vector, and they vote once. Had they voted in every class they have documents in, one
//!   person would move up to (classes) counts, Δ would be that many, and the noise 1/ε would
//!   give only (classes)·ε; `tests.rs` checks that such an accounting is caught.
//! - **Subsampling.** With each unit in by an independent coin of rate q (drawn from the
//!   CSPRNG, exactly: `super::noise::bernoulli_ratio` of q's exact fraction, never read from
//!   the data), couple the two corpora's coins (the others' are i.i.d., x's is fresh): with
//!   probability 1 − q x is out and the outputs have the same law; with probability q it is in
//!   and the ε-DP bound holds. So P[M(D ∪ {x}) ∈ S] ≤ (1 − q)·P[M(D) ∈ S] + q·e^ε·P[M(D) ∈ S],
//!   i.e. the ratio is at most 1 + q(e^ε − 1); the other direction, P[M(D) ∈ S] ≥
//!   ((1 − q) + q·e^−ε)·…, gives a ratio at most 1/(1 − q(1 − e^−ε)) ≤ 1 + q(e^ε − 1) (their
//!   product is 1 + q(1 − q)(1 − e^−ε)(e^ε − 1) ≥ 1: with a = 1 − e^−ε and b = e^ε − 1 = a·e^ε,
//!   (1 − qa)(1 + qb) = 1 + q(b − a) − q²ab = 1 + q(1 − q)ab, as b − a = ab). So the
//!   vote is ε′-DP with ε′ = ln(1 + q(e^ε − 1)) (Balle, Barthe and Gaboardi 2018, Poisson
//!   subsampling under add/remove), which the ledger charges ([`VoteParams::charged_epsilon`]),
//!   while the noise stays at scale 1/ε.
//!
//! Public by assumption: the candidates (DP outputs) and their classes, the class set, the
//! embedding model, ε, q, k and the keep rule. Enforced: the vote's ε′ is recorded before any
//! coin or noise is drawn (`crate::run::vote`), the noise is exact and from the CSPRNG, and no
//! public function returns the exact votes (they exist only inside [`release`]).

mod keep;
mod nearest;
#[cfg(test)]
mod tests;

pub use keep::{kept, outcome, share_captured, ClassOutcome, KeepMode, KeepRule};
pub use nearest::{nearest, unit_length};

use serde::{Deserialize, Serialize};

use super::noise::{bernoulli_ratio, Ratio};
use super::{check_epsilon, laplace, DpError, SecureRng};
use crate::base::ParamError;
use crate::ledger::{Scope, Spend, SpendStage};

/// The vote's privacy settings (public).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VoteParams {
    /// ε of the noise (scale 1/ε).
    pub epsilon: f64,
    /// The share of units that vote, each by its own coin: 1 for every unit.
    pub sample_rate: f64,
}

impl VoteParams {
    /// Refuses an ε out of range, or a rate outside (0, 1] or too small to draw exactly.
    pub fn check(&self) -> Result<(), ParamError> {
        check_epsilon("ε of the vote", self.epsilon)?;
        if !(self.sample_rate > 0.0 && self.sample_rate <= 1.0) {
            return Err(ParamError::new("the share of units that vote", self.sample_rate, "must be a number above 0 and at most 1"));
        }
        // The coins draw the rate's exact fraction (`coins`): a rate too small to write as one is
        // refused here, before any ε is recorded, not after.
        if self.sample_rate < 1.0 && Ratio::from_f64(self.sample_rate).is_err() {
            return Err(ParamError::new("the share of units that vote", self.sample_rate, "is too small to draw exactly"));
        }
        Ok(())
    }

    /// The ε the ledger charges: ε itself without subsampling, else ln(1 + q(e^ε − 1)) (module
    /// docs, "Subsampling"), rounded up by a part in 10^12 so that the float never undercounts.
    pub fn charged_epsilon(&self) -> f64 {
        if self.sample_rate >= 1.0 {
            return self.epsilon;
        }
        let amplified = (self.sample_rate * self.epsilon.exp_m1()).ln_1p();
        (amplified * (1.0 + 1e-12)).min(self.epsilon)
    }
}

/// The vote as a run plans it (`crate::run::RunSettings::vote`): its public settings, chosen
/// before the run so that the run draws c × its sequences per class (the candidates), the
/// planned ε counts the vote's, and the curator sees the extra prompts before any is sent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VotePlan {
    /// ε of the vote's noise (ε_select).
    pub eps_select: f64,
    /// c: candidates generated per kept document; one in c of each class's candidates is kept.
    pub candidates_per_kept: usize,
    #[serde(default)]
    pub keep_mode: KeepMode,
    /// q: the share of units that vote (1: every unit).
    #[serde(default = "every_unit")]
    pub sample_rate: f64,
}

fn every_unit() -> f64 {
    1.0
}

impl Default for VotePlan {
    /// ε_select = 1 (as in `docs/utility.md`'s measurements), two candidates per kept document.
    fn default() -> Self {
        VotePlan { eps_select: 1.0, candidates_per_kept: 2, keep_mode: KeepMode::Top, sample_rate: 1.0 }
    }
}

impl VotePlan {
    /// The most candidates per kept document the settings accept (each is one more prompt).
    pub const MAX_CANDIDATES_PER_KEPT: usize = 20;

    pub fn params(&self) -> VoteParams {
        VoteParams { epsilon: self.eps_select, sample_rate: self.sample_rate }
    }

    /// What the ledger charges for the vote (`VoteParams::charged_epsilon`).
    pub fn charged_epsilon(&self) -> f64 {
        self.params().charged_epsilon()
    }
}

/// The public candidates: per declared class (in the class set's order), unit-length vectors.
#[derive(Debug, Clone)]
pub struct Candidates {
    dim: usize,
    /// Per class: its candidates' vectors, row-major (count × dim).
    classes: Vec<Vec<f32>>,
}

/// Why candidates or units could not be taken.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum VoteError {
    #[error("a vector has {got} dimensions, expected {expected}")]
    Dimension { expected: usize, got: usize },
    #[error("candidate {index} of class {class} has no direction (a zero vector, or a value that is not a number)")]
    Degenerate { class: usize, index: usize },
    #[error("a unit's class {class} is not one of the {classes} classes of the candidates")]
    Class { class: usize, classes: usize },
}

impl Candidates {
    /// `per_class[c]`: the vectors of class c's candidates, each scaled here to unit length.
    pub fn new(dim: usize, per_class: &[Vec<Vec<f32>>]) -> Result<Candidates, VoteError> {
        let mut classes = Vec::with_capacity(per_class.len());
        for (c, vectors) in per_class.iter().enumerate() {
            let mut flat = Vec::with_capacity(vectors.len() * dim);
            for (i, v) in vectors.iter().enumerate() {
                if v.len() != dim {
                    return Err(VoteError::Dimension { expected: dim, got: v.len() });
                }
                flat.extend(unit_length(v).ok_or(VoteError::Degenerate { class: c, index: i })?);
            }
            classes.push(flat);
        }
        Ok(Candidates { dim, classes })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The number of classes (the class set's).
    pub fn classes(&self) -> usize {
        self.classes.len()
    }

    /// Candidates of class `c` (0 for a class beyond the list).
    pub fn count(&self, c: usize) -> usize {
        self.classes.get(c).map_or(0, |v| v.len() / self.dim.max(1))
    }

    /// Class `c`'s vectors, row-major.
    pub fn of_class(&self, c: usize) -> &[f32] {
        self.classes.get(c).map_or(&[], Vec::as_slice)
    }
}

/// One private unit as it votes: its class and its unit-length vector.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitVector {
    pub class: usize,
    pub vector: Vec<f32>,
}

impl UnitVector {
    /// A unit from the vectors of its documents (one for a document; a person's documents of
    /// their class): their mean, scaled to unit length. `None` when it has no direction (no
    /// document, or vectors that cancel): such a unit does not vote, a fact of itself alone.
    pub fn of_documents(class: usize, documents: &[&[f32]]) -> Option<UnitVector> {
        let dim = documents.first()?.len();
        if documents.iter().any(|d| d.len() != dim) {
            return None;
        }
        let mut mean = vec![0f64; dim];
        for d in documents {
            for (m, &x) in mean.iter_mut().zip(d.iter()) {
                *m += f64::from(x);
            }
        }
        let mean: Vec<f32> = mean.iter().map(|&m| m as f32).collect();
        unit_length(&mean).map(|vector| UnitVector { class, vector })
    }
}

/// Who votes: one coin per unit, `true` with probability `rate` exactly (the exact fraction of
/// the float, `Ratio::from_f64`), from the CSPRNG; no draw at rate 1.
pub fn coins(units: usize, rate: f64, rng: &mut SecureRng) -> Result<Vec<bool>, DpError> {
    if rate >= 1.0 {
        return Ok(vec![true; units]);
    }
    let q = Ratio::from_f64(rate)?;
    Ok((0..units).map(|_| bernoulli_ratio(rng, q.num, q.den)).collect())
}

/// The released votes: per class, one noisy count per candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoisyVotes {
    pub votes: Vec<Vec<i64>>,
    /// 1/ε, the noise scale of every count.
    pub noise_scale: f64,
}

/// The exact votes: per class, per candidate, the units whose nearest candidate it is. Private:
/// only [`release`] reads it.
fn exact_votes(candidates: &Candidates, units: &[UnitVector]) -> Result<Vec<Vec<u64>>, VoteError> {
    let mut votes: Vec<Vec<u64>> = (0..candidates.classes()).map(|c| vec![0; candidates.count(c)]).collect();
    for u in units {
        if u.class >= candidates.classes() {
            return Err(VoteError::Class { class: u.class, classes: candidates.classes() });
        }
        if u.vector.len() != candidates.dim() {
            return Err(VoteError::Dimension { expected: candidates.dim(), got: u.vector.len() });
        }
        if let Some(j) = nearest(candidates.of_class(u.class), candidates.dim(), &u.vector) {
            votes[u.class][j] += 1;
        }
    }
    Ok(votes)
}

/// The vote of `units` (those the coins let in) over `candidates`, released with discrete
/// Laplace noise of scale 1/ε on every count (module docs).
pub fn release(candidates: &Candidates, units: &[UnitVector], epsilon: f64, rng: &mut SecureRng) -> Result<NoisyVotes, ReleaseError> {
    check_epsilon("ε of the vote", epsilon).map_err(|e| ReleaseError::Dp(e.into()))?;
    let exact = exact_votes(candidates, units).map_err(ReleaseError::Input)?;
    let scale = laplace::scale(1, epsilon).map_err(ReleaseError::Dp)?;
    let votes = exact.into_iter().map(|h| laplace::release_counts(h.into_iter().map(|v| v.min(i64::MAX as u64) as i64), scale, rng)).collect();
    Ok(NoisyVotes { votes, noise_scale: scale.to_f64() })
}

/// Why a release failed.
#[derive(Debug, thiserror::Error)]
pub enum ReleaseError {
    #[error(transparent)]
    Dp(#[from] DpError),
    #[error(transparent)]
    Input(#[from] VoteError),
}

/// The ledger entries of one vote, recorded before anything is drawn: one per declared class
/// (`labels`, the class set's names), each of the charged ε on that class's partition (the
/// classes compose in parallel: the stage costs ε′), with the public settings it ran under.
/// `link`: what ties the vote to its candidates (their checksum, the run that generated them).
pub fn spends(params: &VoteParams, labels: &[&str], candidates: &[usize], link: &serde_json::Value) -> Vec<Spend> {
    let scale = 1.0 / params.epsilon;
    labels
        .iter()
        .zip(candidates)
        .map(|(label, &count)| {
            laplace::spend(SpendStage::Vote, "DP vote over generated candidates: discrete Laplace on the nearest-candidate histogram", params.charged_epsilon())
                .param("l1_sensitivity", 1)
                .param("noise_scale", scale)
                .param("epsilon_noise", params.epsilon)
                .param("sample_rate", params.sample_rate)
                .param("candidates", count)
                .param("candidates_from", link.clone())
                .scope(Scope::Partition { label: (*label).to_string() })
        })
        .collect()
}

/// The vote's words in the report.
pub fn mechanism_words(params: &VoteParams) -> String {
    let sub = if params.sample_rate < 1.0 {
        format!(
            "; each unit votes by its own coin of rate q = {} (Poisson subsampling), so the ledger charges ε′ = ln(1 + q(e^ε − 1)) = {:.4}",
            params.sample_rate,
            params.charged_epsilon()
        )
    } else {
        String::new()
    };
    format!(
        "each private unit votes for its nearest generated candidate of its class (cosine of sentence embeddings); the vote histogram \
         (L1 sensitivity 1: a unit votes once, in one class) is released with discrete Laplace noise of scale 1/ε = {:.4}; \
         classes compose in parallel{sub}; what is kept is post-processing of the noisy votes",
        1.0 / params.epsilon
    )
}
