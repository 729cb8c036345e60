//! How far each class's released summary stands above what the DP noise alone would give
//! a class whose release is noise-dominated would seed prompts with terms the noise
//! picked, so by default it is not generated.
//!
//! Everything here reads the release (its sums, ε and parameters, all DP outputs or public) and
//! public constants: post-processing, no privacy cost. It needs no knowledge of the documents:
//! "noise alone" is the release of a class with no documents, whose distribution is known
//! exactly from the mechanism's public noise scale.
//!
//! # The statistic and its null distribution
//! For each class, a statistic T of its release, and the (1 − [`ALPHA`]) quantile q of T for a
//! class with no documents at the same ε. The class's **signal** is T / q; it is
//! **noise-dominated** when T ≤ q: its release is no larger than what pure noise gives in
//! one class of 1,000 (so with 40 classes, about one in 25 runs flags a noise-only class as
//! signal, and a class with any clear keyphrase passes).
//!
//! - Histogram samplers (row 0, the class's keyphrase histogram over Ṽ's N terms): T = the
//!   clipped mass Σ_w max(x̃_w − τ, 0) in documents, with τ = b·ln N and b = 1/ε the noise
//!   scale in documents (`super::hist::threshold`, q = ½; the sampler's own τ is lower by
//!   default, q = 5, and draws from more terms than T counts). Under no documents each
//!   entry is Laplace(b) (discrete, on a grid of 2^-20 document: continuous to within that), so
//!   it exceeds τ with probability p = ½·e^{−τ/b} = 1/(2N) and, by the memoryless tail, by an
//!   Exp(b) amount: T is a sum of K ~ Binomial(N, p) exponentials, and
//!   P(T > t) = Σ_k P(K = k)·e^{−t/b}·Σ_{j<k} (t/b)^j / j! (Erlang tails), solved for q by
//!   bisection.
//! - DP-KDE samplers: T = the largest first-keyphrase score over Ṽ (the member and block scale
//!   that cover ℓ = 1). A score is (1/I)·Σ_i S̃_i·√2·cos θ_i(w); with no documents S̃_i is
//!   Laplace noise of scale b (variance 2b²), so the score has variance
//!   (2/I²)·2b²·Σ_i cos² θ_i ≈ 2b²/I (random phases: Σ cos² ≈ I/2) and, as a sum of I
//!   independent terms, is close to Gaussian. q = z·b·√(2/I) with z the normal quantile
//!   of ALPHA/N (a union bound over the N candidates). This null is an approximation, unlike
//!   the histogram's: a weighted sum of Laplace variables has heavier tails than the Gaussian,
//!   by about 30% at z ≈ 4.75 and I = 256 and far more at I ≤ 16, so at small I a
//!   noise-only class passes a little more often than ALPHA says (the defaults use I ≥ 256).
//!
//! The random-feature error of the DP-KDEs is not noise "at this ε" and is left out: it does
//! not shrink with ε, and the samplers' noise floor (`super::kde`) handles it.

use serde::{Deserialize, Serialize};

use super::{kde, Candidates, Sequence};
use crate::dp::summary::hist::DOC_WEIGHT;
use crate::dp::summary::{DpSummary, Member, SummaryError, GRID_BITS};

/// The chance that a class with no documents is read as signal.
pub const ALPHA: f64 = 1e-3;

/// One class's signal estimate, and what was sampled for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassSignal {
    pub label: Option<String>,
    /// T / q (module docs): 1 is what pure noise reaches once in 1/ALPHA classes.
    pub signal: f64,
    pub noise_dominated: bool,
    /// The terms of Ṽ the release puts above the noise: histogram entries above τ, or DP-KDE
    /// first keyphrases scored above q.
    pub supported_terms: usize,
    /// Sequences sampled for the class, and how many of them are shorter than L because the
    /// release supports fewer distinct terms.
    #[serde(default)]
    pub sequences: usize,
    #[serde(default)]
    pub shorter_than_l: usize,
}

/// Every class's signal estimate, in the release's class order.
pub fn class_signals(set: &DpSummary, cands: &Candidates) -> Result<Vec<ClassSignal>, SummaryError> {
    class_signals_from(set, cands, None)
}

/// [`class_signals`], with the DP-KDE classes' first-keyphrase scores given where the sampler
/// computed them (`first[c]`; computed here if a class has none). Each family has its
/// statistic (module docs).
pub(crate) fn class_signals_from(set: &DpSummary, cands: &Candidates, first: Option<kde::FirstScores>) -> Result<Vec<ClassSignal>, SummaryError> {
    set.check()?;
    if cands.is_empty() {
        return Err(SummaryError::BadArtefact("candidates"));
    }
    match set.params.sampler.family().member() {
        Member::Histogram(_) => histogram_signals(set),
        Member::RandomFeatures(_) => kde_signals(set, cands, first),
    }
}

/// One class's estimate: T against its null quantile q.
fn one(label: &Option<String>, t: f64, q: f64, supported: usize) -> ClassSignal {
    ClassSignal {
        label: label.clone(),
        signal: if q > 0.0 { t / q } else { 0.0 },
        noise_dominated: !(t > q),
        supported_terms: supported,
        sequences: 0,
        shorter_than_l: 0,
    }
}

/// The histograms' statistic: the clipped mass of row 0 (module docs).
fn histogram_signals(set: &DpSummary) -> Result<Vec<ClassSignal>, SummaryError> {
    // Row 0 holds one entry per term of the release's Ṽ.
    let n = set.candidates.len();
    // b: the release's noise scale in documents (G·members/ε_kde grid units; one member).
    let b = set.params.noise_scale().map_err(SummaryError::Dp)?.to_f64() / DOC_WEIGHT as f64;
    // τ = b·ln N (`super::hist::threshold`, q = ½), whatever q the sampler clips at (5 by
    // default, a lower τ): this τ is the test's, fixed so that its null is exact and a noise-only
    // class rarely passes; `supported_terms` counts the terms above it, fewer than the sampler
    // draws from.
    let tau = super::hist::threshold(set.epsilon_per_member, n) / DOC_WEIGHT as f64;
    let q = clipped_mass_quantile(n, b, tau, ALPHA);
    Ok(set
        .classes
        .iter()
        .map(|c| {
            let row = &c.sums[0][..n];
            let above: Vec<f64> = row.iter().map(|&v| v as f64 / DOC_WEIGHT as f64 - tau).filter(|&x| x > 0.0).collect();
            one(&c.label, above.iter().sum(), q, above.len())
        })
        .collect())
}

/// The DP-KDEs' statistic: the largest first-keyphrase score over Ṽ (module docs).
fn kde_signals(set: &DpSummary, cands: &Candidates, first: Option<kde::FirstScores>) -> Result<Vec<ClassSignal>, SummaryError> {
    if cands.matrix.len() != cands.len() * cands.dim || cands.dim != set.dim {
        return Err(SummaryError::BadArtefact("candidates (the DP-KDE signal needs Ṽ's embeddings)"));
    }
    let b = set.params.noise_scale().map_err(SummaryError::Dp)?.to_f64() / (1u64 << GRID_BITS) as f64;
    let sigma = b * (2.0 / set.params.features as f64).sqrt();
    let q = normal_quantile_upper(ALPHA / cands.len() as f64) * sigma;
    let scores = match first {
        Some(f) if f.len() == set.classes.len() && f.iter().all(|s| s.as_ref().is_some_and(|s| s.len() == cands.len())) => f.into_iter().flatten().collect(),
        _ => kde::first_step_scores(set, cands)?,
    };
    Ok(set
        .classes
        .iter()
        .zip(scores)
        .map(|(c, s)| {
            let t = s.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x as f64));
            one(&c.label, t, q, s.iter().filter(|&&x| x as f64 > q).count())
        })
        .collect())
}

/// Whether the class `label` is flagged noise-dominated in `signals`.
pub fn is_noise_dominated(signals: &[ClassSignal], label: &Option<String>) -> bool {
    signals.iter().any(|s| s.noise_dominated && &s.label == label)
}

/// Counts, per class, the sequences sampled and those shorter than `len`, in one pass (added to
/// the counts, which [`class_signals`] starts at 0).
pub fn count_sequences(signals: &mut [ClassSignal], sequences: &[Sequence], len: usize) {
    for q in sequences {
        if let Some(s) = signals.iter_mut().find(|s| s.label == q.label) {
            s.sequences += 1;
            s.shorter_than_l += usize::from(q.keyphrases.len() < len);
        }
    }
}

/// P(T > t) for T the clipped mass of `n` pure-noise Laplace(b) entries above τ (module docs).
fn clipped_mass_tail(n: usize, b: f64, tau: f64, t: f64) -> f64 {
    let p = 0.5 * (-tau / b).exp();
    let x = t / b;
    // P(K = k) by the recurrence P(k) = P(k−1)·(n−k+1)/k·p/(1−p); P(Gamma(k, b) > t) by its
    // Poisson sum, grown one term per k.
    let mut pk = (1.0 - p).powf(n as f64);
    let (mut term, mut erlang_sum) = (1.0, 0.0);
    let mut tail = 0.0;
    for k in 1..=n.min(400) {
        pk *= (n - k + 1) as f64 / k as f64 * p / (1.0 - p);
        erlang_sum += term; // Σ_{j<k} x^j/j!
        term *= x / k as f64;
        tail += pk * (-x).exp() * erlang_sum;
        if pk < 1e-300 {
            break;
        }
    }
    tail.min(1.0)
}

/// The (1 − alpha) quantile of the pure-noise clipped mass.
fn clipped_mass_quantile(n: usize, b: f64, tau: f64, alpha: f64) -> f64 {
    if clipped_mass_tail(n, b, tau, 0.0) <= alpha {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0, b);
    while clipped_mass_tail(n, b, tau, hi) > alpha {
        hi *= 2.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if clipped_mass_tail(n, b, tau, mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// P(Z > z) for a standard normal Z: erfc(z/√2)/2, with erfc by its power series below 2
/// and its continued fraction above.
fn normal_tail(z: f64) -> f64 {
    if z < 0.0 {
        return 1.0 - normal_tail(-z);
    }
    let x = z / std::f64::consts::SQRT_2;
    let erfc = if x < 2.0 {
        // erf(x) = 2/√π · Σ (−1)^n x^(2n+1) / (n!·(2n+1))
        let (mut sum, mut term) = (0.0, x);
        for n in 0..60 {
            sum += term / (2 * n + 1) as f64;
            term *= -x * x / (n + 1) as f64;
        }
        1.0 - 2.0 / std::f64::consts::PI.sqrt() * sum
    } else {
        // erfc(x) = e^{−x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))), from the tail.
        let mut f = x;
        for k in (1..80).rev() {
            f = x + (k as f64 / 2.0) / f;
        }
        (-x * x).exp() / std::f64::consts::PI.sqrt() / f
    };
    0.5 * erfc
}

/// The z with P(Z > z) = p (0 < p < ½), by bisection.
fn normal_quantile_upper(p: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, 40.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if normal_tail(mid) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dp::summary::{build, KeyphraseSampler, SummaryParams};
    use crate::dp::SecureRng;
    use crate::sample::tests::{abc, class_docs, clustered};

    #[test]
    fn the_normal_tail_matches_known_values() {
        for (z, q) in [(0.0, 0.5), (1.0, 0.158_655_253_931_457), (1.96, 0.024_997_895_148_220_4), (3.0, 0.001_349_898_031_630_1), (5.0, 2.866_515_718_791_939e-7)] {
            assert!((normal_tail(z) - q).abs() / q < 1e-6, "Q({z}) = {} ≠ {q}", normal_tail(z));
        }
        assert!((normal_quantile_upper(0.025) - 1.959_963_985).abs() < 1e-6);
    }

    /// The null quantile against a simulation of pure-noise rows (continuous Laplace).
    #[test]
    fn the_clipped_mass_quantile_matches_simulated_noise() {
        let (n, eps) = (200usize, 2.0);
        let b = 1.0 / eps;
        let tau = b * (n as f64).ln();
        let q = clipped_mass_quantile(n, b, tau, 0.05);
        let mut rng = SecureRng::seeded_for_tests(5);
        let mut u = || ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let trials = 20_000;
        let mut above = 0;
        for _ in 0..trials {
            let mut t = 0.0;
            for _ in 0..n {
                let (s, e) = (u(), -u().ln() * b);
                let x = if s < 0.5 { e } else { -e };
                t += (x - tau).max(0.0);
            }
            if t > q {
                above += 1;
            }
        }
        let rate = above as f64 / trials as f64;
        // 0.05 with a binomial sd of 0.0015 over 20,000 trials.
        assert!((rate - 0.05).abs() < 0.006, "P(T > q) = {rate}, q = {q}");
    }

    /// A class with documents has signal; the same release shape with none is noise-dominated,
    /// for both families.
    #[test]
    fn a_class_without_documents_is_noise_dominated_and_the_others_are_not() {
        let (emb, docs, labels) = clustered();
        // Class "c" gets no documents.
        let (docs, labels): (Vec<_>, Vec<_>) = docs.into_iter().zip(labels).filter(|(_, l)| *l != "c").unzip();
        let kdocs = class_docs(&docs, &labels);
        let cands = Candidates::new(&(0..60).collect::<Vec<_>>(), &emb).unwrap();
        for sampler in [KeyphraseSampler::Histogram, KeyphraseSampler::Markov, KeyphraseSampler::Independent, KeyphraseSampler::IterativeLinear] {
            // The linear ensemble splits ε over its L = 5 members: ε = 10 gives each member 2.
            let epsilon = if sampler == KeyphraseSampler::IterativeLinear { 10.0 } else { 2.0 };
            let params = SummaryParams { epsilon, sampler, len: 5, features: 512, terms_per_doc: 5, bandwidth: 1.0, smoothing: 0.0 };
            for seed in 0..5 {
                let mut rng = SecureRng::seeded_for_tests(seed);
                let (set, _) = build(crate::dp::summary::SummaryInputs::of(&kdocs, &abc(), &emb, &cands.ids, &params), &mut rng).unwrap();
                let s = class_signals(&set, &cands).unwrap();
                // 200 documents a class at ε = 2: far above the histogram's noise; the DP-KDE's
                // noise (sensitivity √2·I) is far larger, and the classes stand about twice over it.
                let strong = if sampler.hist_kind().is_some() { 10.0 } else { 1.3 };
                assert!(!s[0].noise_dominated && !s[1].noise_dominated && s[0].signal > strong, "{sampler:?}: {s:?}");
                assert!(s[2].noise_dominated && s[2].signal < 1.0, "{sampler:?}: {s:?}");
                assert!(s[0].supported_terms > 0);
            }
        }
    }

    /// The iterative samplers' first-keyphrase scores, read off the sampling, give the same
    /// signals as scoring the candidates again, to the bit; a class with no sequence to score
    /// (a count of 0) is scored again.
    #[test]
    fn signals_read_off_the_sampling_are_the_signals() {
        let (emb, docs, labels) = clustered();
        let kdocs = class_docs(&docs, &labels);
        let cands = Candidates::new(&(0..60).collect::<Vec<_>>(), &emb).unwrap();
        for sampler in [KeyphraseSampler::IterativeLinear, KeyphraseSampler::IterativeLog, KeyphraseSampler::Independent, KeyphraseSampler::Histogram] {
            let params = SummaryParams { epsilon: 10.0, sampler, len: 4, features: 256, terms_per_doc: 4, bandwidth: 1.0, smoothing: 0.0 };
            let mut rng = SecureRng::seeded_for_tests(3);
            let (set, _) = build(crate::dp::summary::SummaryInputs::of(&kdocs, &abc(), &emb, &cands.ids, &params), &mut rng).unwrap();
            let want = class_signals(&set, &cands).unwrap();
            for counts in [[5, 3, 4], [2, 0, 7]] {
                let crate::sample::Drawn { sequences: seqs, signals: got } = crate::sample::draw(&set, &cands, &counts, &crate::sample::Sampling::OFF, &mut rng, crate::sample::Signals::Estimate).unwrap();
                assert_eq!(seqs.len(), counts.iter().sum::<usize>());
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(g.signal.to_bits(), w.signal.to_bits(), "{sampler:?} {counts:?}");
                    assert_eq!((g.noise_dominated, g.supported_terms), (w.noise_dominated, w.supported_terms));
                }
            }
        }
    }
}
