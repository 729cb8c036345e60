//! Sampling keyphrase sequences from a released ε_kde summary (DP-KPS section 2, appendix B.2).
//! Everything here reads only DP outputs (Ṽ and the release): post-processing, no privacy cost.
//!
//! One file per family of the release (`crate::dp::summary`): [`kde`] samples from the DP-KDEs
//! (independent and iterative draws, the noise floor, batched scoring), [`hist`] from the
//! histograms (threshold, smoothing, unigram and Markov draws). One dispatch ([`draw`]) picks the
//! file by the release's family member.

use serde::{Deserialize, Serialize};

use crate::dp::SecureRng;
use crate::embed::TermEmbeddings;
use crate::math::linalg::MatRef;
use crate::dp::summary::{DpSummary, Member, SummaryError};
use crate::input::public_vocab::TermId;

pub mod hist;
pub mod kde;
pub mod signal;
#[cfg(test)]
mod golden;

pub use kde::{batched_scores, naive_scores};

/// One sampled keyphrase sequence, as shown and downloaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceOut {
    pub label: Option<String>,
    pub keyphrases: Vec<String>,
    /// The class's release is noise-dominated (`crate::sample::signal`): left out of generation
    /// unless the curator includes such classes ([`SequenceOut::to_generate`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub noise_dominated: bool,
}

impl SequenceOut {
    /// The sequences a generation job is built from: all of them, or (by default) those of the
    /// classes whose release stands above the noise.
    pub fn to_generate(sequences: &[SequenceOut], include_noise_dominated: bool) -> Vec<SequenceOut> {
        sequences.iter().filter(|s| include_noise_dominated || !s.noise_dominated).cloned().collect()
    }
}
pub(crate) use kde::{sample_iterative, weights};

/// A sampled sequence: a class label and up to L distinct keyphrases (ids of Ṽ's terms); fewer
/// only where the class's release gives fewer than L terms any weight ([`draw_distinct`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sequence {
    pub label: Option<String>,
    pub keyphrases: Vec<TermId>,
}

/// The candidates (Ṽ) with their embeddings, as an N × d matrix.
pub struct Candidates {
    pub ids: Vec<TermId>,
    pub matrix: Vec<f32>,
    pub dim: usize,
}

impl Candidates {
    pub fn new(ids: &[TermId], emb: &TermEmbeddings) -> Result<Candidates, SummaryError> {
        let mut matrix = Vec::with_capacity(ids.len() * emb.dim());
        for &id in ids {
            matrix.extend_from_slice(emb.get(id).ok_or(SummaryError::MissingEmbedding(id))?);
        }
        Ok(Candidates { ids: ids.to_vec(), matrix, dim: emb.dim() })
    }

    /// Candidates without their vectors: enough for the histogram samplers when they do not
    /// smooth (they read only the release's counts).
    pub fn without_vectors(ids: &[TermId], dim: usize) -> Candidates {
        Candidates { ids: ids.to_vec(), matrix: Vec::new(), dim }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub(crate) fn view(&self) -> MatRef<'_> {
        MatRef::rows(&self.matrix, self.ids.len(), self.dim)
    }
}

/// Draws up to `len` distinct indices, each with probability ∝ its weight among those not yet
/// drawn (sampling without replacement; weights non-negative). Stops early when no undrawn
/// index has weight left: a keyphrase is never repeated within a sequence (an LLM
/// asked to write from "Diet · Diet · Diet" writes junk), so a class whose release supports
/// fewer than `len` terms gets shorter sequences. Post-processing of the release's weights.
pub(crate) fn draw_distinct(weights: &[f64], len: usize, rng: &mut SecureRng) -> Vec<usize> {
    let mut w = weights.to_vec();
    let mut out = Vec::with_capacity(len.min(w.len()));
    while out.len() < len {
        match draw_one(&w, rng) {
            Some(i) => {
                out.push(i);
                w[i] = 0.0;
            }
            None => break,
        }
    }
    out
}

/// One index with probability ∝ weight; `None` when no weight is positive (or the total is not
/// finite).
pub(crate) fn draw_one(weights: &[f64], rng: &mut SecureRng) -> Option<usize> {
    let total: f64 = weights.iter().filter(|&&x| x > 0.0).sum();
    if !(total > 0.0) || !total.is_finite() {
        return None;
    }
    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let target = u * total;
    let mut acc = 0.0;
    for (i, &x) in weights.iter().enumerate() {
        if x > 0.0 {
            acc += x;
            if acc > target {
                return Some(i);
            }
        }
    }
    // Rounding: the last index with a positive weight.
    weights.iter().rposition(|&x| x > 0.0)
}

/// Whether [`draw`] also estimates every class's signal ([`signal::class_signals`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signals {
    /// No estimate: [`Drawn::signals`] is empty.
    Skip,
    /// One estimate per class, in the release's class order.
    Estimate,
}

/// What [`draw`] returns: the sequences, class by class, and (with [`Signals::Estimate`]) every
/// class's signal estimate.
#[derive(Debug, Clone)]
pub struct Drawn {
    pub sequences: Vec<Sequence>,
    pub signals: Vec<signal::ClassSignal>,
}

/// The histogram sampler's post-processing choices beyond the release (`hist` module docs):
/// public, they read nothing but the release. [`Sampling::OFF`] draws as before issue 39.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// γ: draw ∝ p̃(t|c)·(p̃(t|c)/p̃(t))^γ (`histogram` only); 0: ∝ p̃(t|c).
    pub distinctiveness: f64,
    /// Each class's sequences are distinct sets of keyphrases (fewer where the release supports
    /// few terms); the histogram sampler only.
    pub distinct_sets: bool,
    /// q: the `histogram` sampler's threshold τ = ln(N/(2q))/ε_kde lets about q of a class's N
    /// entries through on noise alone, in expectation (`hist` module docs). 5 by default
    /// ([`Sampling::DEFAULT_SURVIVORS`]); settings saved without the field read ½ (τ = ln N/ε_kde),
    /// the threshold they were drawn with.
    #[serde(default = "Sampling::half")]
    pub noise_survivors: f64,
}

impl Default for Sampling {
    /// Settings saved without the field draw as before issue 39 ([`Sampling::OFF`]).
    fn default() -> Self {
        Sampling::OFF
    }
}

impl Sampling {
    /// q = ½: τ = ln N/ε_kde, the threshold before q could be set.
    pub const HALF_A_SURVIVOR: f64 = 0.5;
    /// q = 5, the default since a later stop of issue 39: τ = ln(N/10)/ε_kde, 0.23 documents' weight
    /// under ln N/ε_kde at ε_kde = 10. On MTSamples' English-list cells (250–1,000 notes a class,
    /// whole notes and their first 40 words) a class kept 1.3–1.5 times as many terms, the DP
    /// arm's mean rose by 0.01–0.03 and its spread between draws did not grow over 12 draws (docs/utility.md,
    /// "Short documents, and q = 5").
    pub const DEFAULT_SURVIVORS: f64 = 5.0;
    pub const OFF: Sampling = Sampling { distinctiveness: 0.0, distinct_sets: false, noise_survivors: Self::HALF_A_SURVIVOR };
    /// The defaults of the page and the CLI (docs/utility.md, "Seeds that carry the class at
    /// every size"): γ = 1, distinct sets, q = 5.
    pub const DEFAULT: Sampling = Sampling { distinctiveness: 1.0, distinct_sets: true, noise_survivors: Self::DEFAULT_SURVIVORS };
    /// The largest γ accepted.
    pub const MAX_DISTINCTIVENESS: f64 = 8.0;
    /// The most pure-noise survivors a row may be set to let through.
    pub const MAX_NOISE_SURVIVORS: f64 = 1000.0;

    fn half() -> f64 {
        Self::HALF_A_SURVIVOR
    }

    pub fn validate(&self) -> Result<(), crate::base::ParamError> {
        if !(self.distinctiveness.is_finite() && (0.0..=Self::MAX_DISTINCTIVENESS).contains(&self.distinctiveness)) {
            return Err(crate::base::ParamError::new("the distinctiveness exponent γ", self.distinctiveness, "must be between 0 and 8"));
        }
        if !(self.noise_survivors > 0.0 && self.noise_survivors <= Self::MAX_NOISE_SURVIVORS) {
            return Err(crate::base::ParamError::new("the noise survivors q", self.noise_survivors, "must be above 0 and at most 1000"));
        }
        Ok(())
    }
}

/// Samples `counts[c]` sequences for class c of `set` (the same number for every class:
/// `vec![n; set.classes.len()]`; in proportion to DP class counts: `dp::counts::apportion`).
///
/// The one dispatch from a release to the code that samples it: on the family member of its
/// sampler ([`Member`]), so that a new family is pointed at here by the compiler and a new
/// sampler of a family is sampled by its family's file. With [`Signals::Estimate`], every
/// class's signal estimate too; the iterative DP-KDEs hand it the first-keyphrase scores they
/// computed anyway. The estimate reads no randomness: the sequences are the same either way.
/// `sampling`: the histogram samplers' post-processing choices ([`Sampling`]; the others ignore it).
pub fn draw(set: &DpSummary, cands: &Candidates, counts: &[usize], sampling: &Sampling, rng: &mut SecureRng, signals: Signals) -> Result<Drawn, SummaryError> {
    check_inputs(set, cands, counts)?;
    let (sequences, first) = match set.params.sampler.family().member() {
        Member::Histogram(kind) => (hist::sample_histograms(set, kind, cands, counts, sampling, rng)?, None),
        Member::RandomFeatures(layout) if layout.over_prefixes() => {
            let (sequences, first) = kde::sample_iterative_sequences(set, cands, counts, rng)?;
            (sequences, Some(first))
        }
        Member::RandomFeatures(_) => (kde::sample_independent(set, cands, counts, rng)?, None),
    };
    let signals = match signals {
        Signals::Estimate => signal::class_signals_from(set, cands, first)?,
        Signals::Skip => Vec::new(),
    };
    Ok(Drawn { sequences, signals })
}

/// What every sampler needs: a release that checks, candidates of its dimension, a count per
/// class.
fn check_inputs(set: &DpSummary, cands: &Candidates, counts: &[usize]) -> Result<(), SummaryError> {
    set.check()?;
    if cands.is_empty() || cands.dim != set.dim || counts.len() != set.classes.len() {
        return Err(SummaryError::BadArtefact("candidates"));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::input::classes::ClassSet;
    use crate::dp::summary::kde::tests::unit_vectors;
    use crate::dp::summary::{build, KeyphraseSampler, SummaryDoc, SummaryParams};

    /// Three well-separated clusters of 20 terms in 16 dimensions (centres 120° apart, so
    /// cross-cluster kernel values are ≈ e^-3); class c uses cluster c.
    pub(crate) fn clustered() -> (TermEmbeddings, Vec<Vec<TermId>>, Vec<&'static str>) {
        let dim = 16;
        let centres: Vec<Vec<f32>> = (0..3)
            .map(|c| {
                let a = c as f32 * std::f32::consts::TAU / 3.0;
                let mut v = vec![0f32; dim];
                (v[0], v[1]) = (a.cos(), a.sin());
                v
            })
            .collect();
        let jitter = unit_vectors(60, dim, 43);
        let mut emb = TermEmbeddings::new(dim);
        for t in 0..60usize {
            let v: Vec<f32> = centres[t / 20].iter().zip(&jitter[t]).map(|(c, j)| c + 0.2 * j).collect();
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            emb.insert(t as TermId, &v.iter().map(|x| x / n).collect::<Vec<_>>()).unwrap();
        }
        let mut docs = Vec::new();
        let mut labels = Vec::new();
        for k in 0..600u32 {
            let c = k % 3;
            docs.push((0..5u32).map(|j| c * 20 + (k * 7 + j * 3) % 20).collect::<Vec<_>>());
            labels.push(["a", "b", "c"][c as usize]);
        }
        (emb, docs, labels)
    }

    pub(crate) fn abc() -> ClassSet {
        ClassSet::declared(&["a", "b", "c"], crate::input::classes::OtherLabels::Drop).unwrap()
    }

    pub(crate) fn class_docs<'a>(docs: &'a [Vec<TermId>], labels: &[&str]) -> Vec<SummaryDoc<'a>> {
        let cs = abc();
        docs.iter().zip(labels).map(|(t, l)| SummaryDoc { class: cs.assign(Some(l)).unwrap(), terms: t }).collect()
    }

    #[test]
    fn each_class_samples_from_its_own_cluster_for_every_sampler() {
        let (emb, docs, labels) = clustered();
        let kdocs = class_docs(&docs, &labels);
        let cands = Candidates::new(&(0..60).collect::<Vec<_>>(), &emb).unwrap();
        for sampler in KeyphraseSampler::ALL {
            let params = SummaryParams { epsilon: 10.0, sampler, len: 5, features: 512, terms_per_doc: 5, bandwidth: 1.0, smoothing: 0.0 };
            let mut rng = SecureRng::seeded_for_tests(6);
            let (set, _) = build(crate::dp::summary::SummaryInputs::of(&kdocs, &abc(), &emb, &cands.ids, &params), &mut rng).unwrap();
            let seqs = draw(&set, &cands, &[100; 3], &Sampling::OFF, &mut rng, Signals::Skip).unwrap().sequences;
            assert_eq!(seqs.len(), 300);
            let mut own = 0usize;
            for s in &seqs {
                assert_eq!(s.keyphrases.len(), 5, "sequences have L terms where the release supports them");
                let mut distinct = s.keyphrases.clone();
                distinct.sort_unstable();
                distinct.dedup();
                assert_eq!(distinct.len(), 5, "{sampler:?}: a keyphrase repeated within {:?}", s.keyphrases);
                assert!(s.keyphrases.iter().all(|k| cands.ids.contains(k)), "terms come from Ṽ");
                let c = ["a", "b", "c"].iter().position(|l| Some(*l) == s.label.as_deref()).unwrap() as u32;
                own += s.keyphrases.iter().filter(|&&k| k / 20 == c).count();
            }
            let frac = own as f64 / (300 * 5) as f64;
            let per_pos: Vec<f64> = (0..5).map(|p| seqs.iter().filter(|s| {
                let c = ["a", "b", "c"].iter().position(|l| Some(*l) == s.label.as_deref()).unwrap() as u32;
                s.keyphrases[p] / 20 == c }).count() as f64 / 300.0).collect();
            println!("{sampler:?}: own {frac:.3}, by position {per_pos:.2?}");
            // Chance is 1/3. With bandwidth 1/ℓ a wrong-cluster keyphrase at position ℓ only
            // costs a factor e^(-3/ℓ) in the kernel, so later positions are less selective
            // (noise-free expectation at ℓ = 2: 0.69; in the log ensemble, length-4 queries
            // also meet zero-padded length-3 prefixes, ≈ 0.40). Overall, 0.5 is more than 15
            // standard errors above chance with 1,500 draws.
            assert!(frac > 0.5, "{sampler:?}: only {frac:.2} of keyphrases from the class's own cluster");
            assert!(per_pos[0] > 0.8, "{sampler:?}: by position {per_pos:?}");
        }
    }

}
