//! Sampling from the histogram family's release (`crate::dp::summary::hist`): thresholding,
//! smoothing, and unigram or Markov draws. It reads only the release: post-processing.
//!
//! # Post-processing choices (data-independent)
//! - τ = ln(R)/ε in document units, R the entries per row (N): a pure-noise entry exceeds it
//!   with probability ½·e^{−ln R} = 1/(2R), so about half an entry per row survives on noise
//!   alone, while a keyphrase used by a few documents stays.
//! - Smoothing (optional, `smoothing` > 0): p′(w) = Σ_v p(v)·K(v, w)/Σ_u K(v, u) with
//!   K(v, w) = exp(−‖v − w‖²/smoothing) over Ṽ's embeddings: the paper's semantic spreading,
//!   applied to the noisy histogram instead of through the noise.
//! - Markov back-off: p(w | v) ∝ max(T̃[v, w] − τ, 0) + α·u(w), with u row 0 clipped the same
//!   way and normalised, and α = 4 documents; a chain never repeats a keyphrase and ends where no
//!   other has positive probability. Why row 0 is a unigram with most of the weight: with
//!   the weight spread over M transitions and a START row, a transition needed ⌈τ·M⌉ documents
//!   to clear τ and the back-off (T's column sums, N + 1 noisy entries each) a threshold of
//!   √(N+1)·ln N/ε, over 200 documents per term at ε = 10, N = 1000: chains wandered among a
//!   few generic terms and lost utility even without noise (0.82–0.90 of `nonprivate` on
//!   MTSamples, two-class, against 1.04–1.06 with row 0; README, "evaluate").

use super::{draw_distinct, draw_one, Candidates, Sequence};
use crate::dp::SecureRng;
use crate::embed::TermEmbeddings;
use crate::dp::summary::hist::{HistKind, DOC_WEIGHT};
use crate::dp::summary::{DpSummary, SummaryError};
use crate::input::public_vocab::TermId;

/// The noise threshold τ in grid units for ε and rows of `row_len` entries (module docs).
pub fn threshold(epsilon: f64, row_len: usize) -> f64 {
    (row_len.max(2) as f64).ln() / epsilon * DOC_WEIGHT as f64
}

/// max(x − τ, 0) for one row of noisy sums, in document units.
fn clipped(row: &[i64], tau: f64) -> Vec<f64> {
    row.iter().map(|&v| ((v as f64 - tau) / DOC_WEIGHT as f64).max(0.0)).collect()
}

/// The kernel smoother over Ṽ's embeddings: row-normalised K (N × N), or `None` when off.
pub struct Smoother {
    k: Vec<f64>,
    n: usize,
}

impl Smoother {
    pub fn new(ids: &[TermId], emb: &TermEmbeddings, bandwidth: f64) -> Result<Smoother, SummaryError> {
        let n = ids.len();
        let vecs: Vec<&[f32]> = ids.iter().map(|&t| emb.get(t).ok_or(SummaryError::MissingEmbedding(t))).collect::<Result<_, _>>()?;
        let mut k = vec![0f64; n * n];
        for v in 0..n {
            for w in 0..n {
                let d2: f32 = vecs[v].iter().zip(vecs[w]).map(|(a, b)| (a - b) * (a - b)).sum();
                k[v * n + w] = (-(d2 as f64) / bandwidth).exp();
            }
            let z: f64 = k[v * n..][..n].iter().sum();
            k[v * n..][..n].iter_mut().for_each(|x| *x /= z.max(f64::MIN_POSITIVE));
        }
        Ok(Smoother { k, n })
    }

    /// p′ = pᵀK (mass preserving).
    pub fn apply(&self, p: &[f64]) -> Vec<f64> {
        let mut out = vec![0f64; self.n];
        for (v, &pv) in p.iter().enumerate() {
            if pv > 0.0 {
                out.iter_mut().zip(&self.k[v * self.n..][..self.n]).for_each(|(o, k)| *o += pv * k);
            }
        }
        out
    }
}

/// Samples `count` sequences of up to `len` distinct candidate positions from one class's noisy
/// unigram histogram: draws without replacement ∝ the clipped (and smoothed) histogram, so a
/// sequence is shorter than `len` where fewer terms clear τ. If none does, the release carries
/// no keyphrase for the class (it is noise-dominated, [`super::signal`]) and the draw is uniform
/// over Ṽ, what the curator gets by including such a class.
pub fn sample_unigram(sums: &[i64], epsilon: f64, smoother: Option<&Smoother>, len: usize, count: usize, rng: &mut SecureRng) -> Vec<Vec<usize>> {
    let mut p = clipped(sums, threshold(epsilon, sums.len()));
    if let Some(s) = smoother {
        p = s.apply(&p);
    }
    if !p.iter().any(|&x| x > 0.0) {
        p = vec![1.0; p.len()];
    }
    (0..count).map(|_| draw_distinct(&p, len, rng)).collect()
}

/// Samples `count` Markov chains of up to `len` distinct candidate positions from one class's
/// noisy histogram ((N+1) × N: row 0 the keyphrase histogram, row p+1 the transitions out of
/// p). A chain never repeats a keyphrase and ends where no other term has weight; with no term
/// above τ in row 0 the draw is uniform, as in [`sample_unigram`].
pub fn sample_markov(sums: &[i64], n: usize, epsilon: f64, smoother: Option<&Smoother>, len: usize, count: usize, rng: &mut SecureRng) -> Vec<Vec<usize>> {
    let tau = threshold(epsilon, n);
    let rows: Vec<Vec<f64>> = (0..=n)
        .map(|r| {
            let row = clipped(&sums[r * n..][..n], tau);
            match smoother {
                Some(s) => s.apply(&row),
                None => row,
            }
        })
        .collect();
    // Back-off: row 0, the class's keyphrase histogram (released beside the transitions).
    let uni = rows[0].clone();
    let uni_total: f64 = uni.iter().sum();
    if !(uni_total > 0.0) {
        return (0..count).map(|_| draw_distinct(&vec![1.0; n], len, rng)).collect();
    }
    const ALPHA: f64 = 4.0;
    let mut out = Vec::with_capacity(count);
    let mut weights = vec![0f64; n];
    for _ in 0..count {
        let mut seq: Vec<usize> = Vec::with_capacity(len);
        let mut row = 0usize;
        for _ in 0..len {
            for (w, wt) in weights.iter_mut().enumerate() {
                let back = if uni_total > 0.0 { ALPHA * uni[w] / uni_total } else { 0.0 };
                *wt = rows[row][w] + back;
            }
            seq.iter().for_each(|&w| weights[w] = 0.0);
            let Some(next) = draw_one(&weights, rng) else { break };
            seq.push(next);
            row = next + 1;
        }
        out.push(seq);
    }
    out
}

/// The histogram samplers (`crate::dp::summary::hist`): the candidates must be the release's Ṽ, in order.
pub(super) fn sample_histograms(set: &DpSummary, kind: HistKind, cands: &Candidates, counts: &[usize], rng: &mut SecureRng) -> Result<Vec<Sequence>, SummaryError> {
    if cands.ids != set.candidates {
        return Err(SummaryError::BadArtefact("candidates"));
    }
    let smoother = if set.params.smoothing > 0.0 {
        if cands.matrix.len() != cands.len() * cands.dim {
            return Err(SummaryError::BadArtefact("candidates (smoothing needs Ṽ's embeddings)"));
        }
        let mut emb = TermEmbeddings::new(cands.dim);
        for (i, &id) in cands.ids.iter().enumerate() {
            emb.insert(id, &cands.matrix[i * cands.dim..][..cands.dim]).map_err(|_| SummaryError::BadArtefact("candidates"))?;
        }
        Some(Smoother::new(&cands.ids, &emb, set.params.smoothing)?)
    } else {
        None
    };
    let (eps, len, n) = (set.epsilon_per_member, set.params.len, cands.len());
    let mut out = Vec::with_capacity(counts.iter().sum());
    for (class, &count) in set.classes.iter().zip(counts) {
        let picks = match kind {
            HistKind::Unigram => sample_unigram(&class.sums[0], eps, smoother.as_ref(), len, count, rng),
            HistKind::Transitions => sample_markov(&class.sums[0], n, eps, smoother.as_ref(), len, count, rng),
        };
        out.extend(picks.into_iter().map(|p| Sequence { label: class.label.clone(), keyphrases: p.into_iter().map(|w| cands.ids[w]).collect() }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samplers_follow_the_histogram() {
        let mut rng = SecureRng::seeded_for_tests(3);
        let g = DOC_WEIGHT as i64;
        // Unigram: term 1 has all the mass.
        let seqs = sample_unigram(&[0, 50 * g, 0], 10.0, None, 5, 20, &mut rng);
        assert!(seqs.iter().all(|s| s == &vec![1]), "one supported term: sequences of one, not [1, 1, 1, 1, 1]: {seqs:?}");
        // Two terms above τ, L = 5: both, in either order, and nothing else.
        let seqs = sample_unigram(&[30 * g, 0, 0, 10 * g, 0], 10.0, None, 5, 200, &mut rng);
        assert!(seqs.iter().all(|s| s.len() == 2 && s.contains(&0) && s.contains(&3)), "{seqs:?}");
        let first0 = seqs.iter().filter(|s| s[0] == 0).count();
        assert!((120..=180).contains(&first0), "term 0 first ∝ its weight (3/4 of 200): {first0}");
        // Nothing above τ: uniform over Ṽ, still without repeats.
        let seqs = sample_unigram(&[0; 6], 10.0, None, 4, 50, &mut rng);
        for s in &seqs {
            let mut d = s.clone();
            d.sort_unstable();
            d.dedup();
            assert_eq!(d.len(), 4, "{s:?}");
        }
        // Markov over 3 terms: row 0 (only 2) → 0 → 1 deterministic (large counts).
        let n = 3;
        let mut t = vec![0i64; (n + 1) * n];
        t[2] = 50 * g;
        t[3 * n] = 50 * g;
        t[n + 1] = 50 * g;
        let seqs = sample_markov(&t, n, 10.0, None, 3, 20, &mut rng);
        for s in &seqs {
            assert_eq!(s[0], 2);
            assert_eq!(s.len(), 3);
            let mut d = s.clone();
            d.sort_unstable();
            d.dedup();
            assert_eq!(d.len(), 3, "no repeats while other terms have mass: {s:?}");
        }
        assert!(seqs.iter().filter(|s| s == &&vec![2, 0, 1]).count() >= 15, "{seqs:?}");
        // L = 5 over 3 terms: the chain ends after the third rather than repeating one.
        let seqs = sample_markov(&t, n, 10.0, None, 5, 20, &mut rng);
        assert!(seqs.iter().all(|s| s.len() == 3), "{seqs:?}");
    }
}
