//! Sampling from the histogram family's release (`crate::dp::summary::hist`): thresholding,
//! smoothing, and unigram or Markov draws. It reads only the release: post-processing.
//!
//! # Post-processing choices (data-independent)
//! - τ = ln(R)/ε in document units, R the entries per row (N): a pure-noise entry exceeds it
//!   with probability ½·e^{−ln R} = 1/(2R), so about half an entry per row survives on noise
//!   alone, while a keyphrase used by a few documents stays. `histogram` takes a public q
//!   ([`Sampling::noise_survivors`], 5 by default): τ = ln(R/(2q))/ε lets about q through. A
//!   pure-noise survivor carries little weight (its excess over τ is 1/ε documents' weight on
//!   average), while the terms between ln(R/10)/ε and ln R/ε, about a document's weight each,
//!   are words few of the class's documents use (docs/utility.md, "Short documents, and q = 5").
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
//! - Distinctiveness (`histogram` only, [`Sampling::distinctiveness`] γ > 0): a class draws
//!   ∝ p̃(t|c)·(p̃(t|c)/p̃(t))^γ, p̃(t|c) its clipped histogram normalised and p̃(t) the mean of
//!   p̃(t|c) over the classes whose release has a term above τ (every class weighs the same, so
//!   that a large class does not set what "common" is). Where Ṽ holds mostly generic terms, every
//!   class's histogram is led by the same ones and its sequences look like every other class's;
//!   the lift p̃(t|c)/p̃(t) moves the draws to the terms the class uses more than the others.
//!   It reads only the released histograms and a public exponent: post-processing.
//! - Distinct sequences ([`Sampling::distinct_sets`]): a class's sequences are drawn until
//!   `count` distinct sets of keyphrases are found or [`DISTINCT_TRIES`]·`count` draws are
//!   spent; a repeated set is dropped. A class whose release supports few terms then gets few
//!   sequences, not many permutations of the same terms (each of which would become a
//!   near-duplicate document). Post-processing as well.

use std::collections::HashSet;

use super::{draw_distinct, draw_one, Candidates, Sampling, Sequence};
use crate::dp::SecureRng;
use crate::embed::TermEmbeddings;
use crate::dp::summary::hist::{HistKind, DOC_WEIGHT};
use crate::dp::summary::{DpSummary, SummaryError};
use crate::input::public_vocab::TermId;

/// The noise threshold τ in grid units for ε and rows of `row_len` entries (module docs).
pub fn threshold(epsilon: f64, row_len: usize) -> f64 {
    threshold_for(epsilon, row_len, Sampling::HALF_A_SURVIVOR)
}

/// τ = ln(R/(2q))/ε in grid units: about `survivors` = q of a row's R pure-noise entries exceed
/// it (½·e^{−ετ} each); at least 0. q = ½ is [`threshold`].
pub fn threshold_for(epsilon: f64, row_len: usize, survivors: f64) -> f64 {
    ((row_len.max(2) as f64) / (2.0 * survivors)).max(1.0).ln() / epsilon * DOC_WEIGHT as f64
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
    draw_unigram(unigram_weights(sums, epsilon, Sampling::HALF_A_SURVIVOR, smoother), len, count, false, rng)
}

/// One class's weights: its histogram clipped at τ for `survivors` (and smoothed).
fn unigram_weights(sums: &[i64], epsilon: f64, survivors: f64, smoother: Option<&Smoother>) -> Vec<f64> {
    let p = clipped(sums, threshold_for(epsilon, sums.len(), survivors));
    match smoother {
        Some(s) => s.apply(&p),
        None => p,
    }
}

/// `count` draws of up to `len` distinct positions ∝ `p` (uniform when no weight is positive;
/// distinct sets only with `distinct_sets`, module docs).
fn draw_unigram(p: Vec<f64>, len: usize, count: usize, distinct_sets: bool, rng: &mut SecureRng) -> Vec<Vec<usize>> {
    // The positive weights alone, in order: the same draws as from the whole vector (a draw
    // skips the others), in time that follows them rather than N (Ṽ may be large).
    let (index, p): (Vec<usize>, Vec<f64>) = if p.iter().any(|&x| x > 0.0) {
        p.iter().enumerate().filter(|(_, &x)| x > 0.0).map(|(i, &x)| (i, x)).unzip()
    } else {
        ((0..p.len()).collect(), vec![1.0; p.len()])
    };
    let back = |s: Vec<usize>| s.into_iter().map(|i| index[i]).collect::<Vec<usize>>();
    if !distinct_sets {
        return (0..count).map(|_| back(draw_distinct(&p, len, rng))).collect();
    }
    let mut seen: HashSet<Vec<usize>> = HashSet::with_capacity(count);
    let mut out = Vec::with_capacity(count);
    for _ in 0..count.saturating_mul(DISTINCT_TRIES) {
        if out.len() == count {
            break;
        }
        let s = back(draw_distinct(&p, len, rng));
        let mut key = s.clone();
        key.sort_unstable();
        if seen.insert(key) {
            out.push(s);
        }
    }
    out
}

/// Draws per sequence asked for, at most, when sequences must be distinct sets (module docs).
pub const DISTINCT_TRIES: usize = 4;

/// Every class's weights reweighted by distinctiveness with exponent `gamma` (module docs):
/// w(t|c) = p(t|c)·(p(t|c)/p(t))^γ, p(t) the mean of p(·|c) over the classes with any weight.
/// Classes without weight are left as they are.
pub fn distinctive_weights(weights: &mut [Vec<f64>], gamma: f64) {
    if !(gamma > 0.0) {
        return;
    }
    let totals: Vec<f64> = weights.iter().map(|w| w.iter().sum::<f64>()).collect();
    let live: Vec<usize> = (0..weights.len()).filter(|&c| totals[c] > 0.0 && totals[c].is_finite()).collect();
    let Some(n) = weights.first().map(Vec::len) else { return };
    let mut pooled = vec![0f64; n];
    for &c in &live {
        pooled.iter_mut().zip(&weights[c]).for_each(|(q, &w)| *q += w / totals[c] / live.len() as f64);
    }
    for &c in &live {
        for (w, &q) in weights[c].iter_mut().zip(&pooled) {
            if *w > 0.0 && q > 0.0 {
                let p = *w / totals[c];
                *w = p * (p / q).powf(gamma);
            }
        }
    }
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
pub(super) fn sample_histograms(set: &DpSummary, kind: HistKind, cands: &Candidates, counts: &[usize], sampling: &Sampling, rng: &mut SecureRng) -> Result<Vec<Sequence>, SummaryError> {
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
    let mut unigram: Vec<Vec<f64>> = Vec::new();
    if kind == HistKind::Unigram {
        unigram = set.classes.iter().map(|c| unigram_weights(&c.sums[0], eps, sampling.noise_survivors, smoother.as_ref())).collect();
        distinctive_weights(&mut unigram, sampling.distinctiveness);
    }
    for (k, (class, &count)) in set.classes.iter().zip(counts).enumerate() {
        let picks = match kind {
            HistKind::Unigram => draw_unigram(std::mem::take(&mut unigram[k]), len, count, sampling.distinct_sets, rng),
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

    #[test]
    fn distinctiveness_moves_draws_to_a_class_own_terms_and_sets_are_distinct() {
        // Term 0 is every class's most used; term 1 is class a's own, term 2 class b's.
        let mut w = vec![vec![6.0, 2.0, 0.0], vec![6.0, 0.0, 2.0]];
        distinctive_weights(&mut w, 0.0);
        assert_eq!(w[0], [6.0, 2.0, 0.0], "γ = 0 leaves the weights");
        distinctive_weights(&mut w, 1.0);
        // p(·|a) = (¾, ¼, 0), p = (¾, ⅛, ⅛): w = (¾·1, ¼·2, 0).
        assert!((w[0][0] - 0.75).abs() < 1e-12 && (w[0][1] - 0.5).abs() < 1e-12 && w[0][2] == 0.0, "{w:?}");
        let mut w = vec![vec![6.0, 2.0, 0.0], vec![0.0; 3]];
        distinctive_weights(&mut w, 2.0);
        assert_eq!(w[1], [0.0; 3], "a class without weight is left alone");
        assert!((w[0][0] - 0.75).abs() < 1e-12, "one live class: p = p(·|a), lift 1: {w:?}");
        // Distinct sets: three supported terms and L = 3 give one set, so one sequence.
        let mut rng = SecureRng::seeded_for_tests(5);
        let seqs = draw_unigram(vec![1.0, 1.0, 1.0, 0.0], 3, 10, true, &mut rng);
        assert_eq!(seqs.len(), 1, "{seqs:?}");
        let seqs = draw_unigram(vec![1.0; 12], 3, 30, true, &mut rng);
        let sets: HashSet<Vec<usize>> = seqs.iter().map(|s| { let mut k = s.clone(); k.sort_unstable(); k }).collect();
        assert_eq!((seqs.len(), sets.len()), (30, 30));
    }

    #[test]
    fn the_threshold_lets_about_q_pure_noise_entries_through() {
        let g = DOC_WEIGHT as f64;
        // q = ½ is the threshold as it was: ln N/ε.
        assert_eq!(threshold(10.0, 50_000), threshold_for(10.0, 50_000, 0.5));
        assert!((threshold(10.0, 50_000) / g - (50_000f64).ln() / 10.0).abs() < 1e-12);
        // A larger q, a lower τ: ln(N/(2q))/ε; never below 0.
        assert!((threshold_for(10.0, 50_000, 5.0) / g - (5_000f64).ln() / 10.0).abs() < 1e-12);
        assert_eq!(threshold_for(10.0, 4, 50.0), 0.0);
        // Measured on pure noise: N entries of discrete Laplace noise of scale 1/ε documents,
        // about q above τ (Poisson-like: the mean over 40 rows within a few q/√40).
        let (eps, n) = (10.0, 2_000);
        let mut rng = SecureRng::seeded_for_tests(12);
        let scale = crate::dp::noise::Ratio::int_over_f64(DOC_WEIGHT, eps).unwrap();
        for q in [0.5, 5.0] {
            let tau = threshold_for(eps, n, q);
            let rows = 40;
            let above: usize = (0..rows)
                .map(|_| (0..n).filter(|_| crate::dp::noise::discrete_laplace(&mut rng, scale) as f64 > tau).count())
                .sum();
            let mean = above as f64 / rows as f64;
            assert!((mean - q).abs() < 3.0 * (q / rows as f64).sqrt() + 0.1, "q = {q}: {mean} a row");
        }
        let bad = Sampling { noise_survivors: 0.0, ..Sampling::DEFAULT };
        assert!(bad.validate().is_err() && Sampling::DEFAULT.validate().is_ok());
        // Settings saved before q existed read as ½, the threshold they were drawn with; the
        // default is 5.
        let old: Sampling = serde_json::from_str(r#"{"distinctiveness":1.0,"distinct_sets":true}"#).unwrap();
        assert_eq!(old, Sampling { noise_survivors: Sampling::HALF_A_SURVIVOR, ..Sampling::DEFAULT });
        assert_eq!(Sampling::DEFAULT.noise_survivors, 5.0);
    }
}
