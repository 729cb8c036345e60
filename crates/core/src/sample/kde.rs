//! Sampling from the DP-KDE family's release (`crate::dp::summary::kde`): post-processing.
//!
//!
//! - independent: score every candidate w once, p(w) ∝ max(score − floor, 0); L draws
//!   without replacement (the paper draws i.i.d.; a repeated keyphrase only repeats a word in
//!   the prompt, and an LLM given one writes worse);
//! - iterative (linear or logarithmic ensemble): at step ℓ, score every candidate w as the
//!   next keyphrase of each sequence's prefix with the member that covers length ℓ; the
//!   prefix's own keyphrases are excluded, and a sequence ends where no other candidate has
//!   weight.
//!
//! # The noise floor
//! The paper draws ∝ max(score, 0). A score is signal plus error (random features, DP noise),
//! and many of the N candidates carry no signal: their clipped error holds much of the
//! mass. Measured on MTSamples (noiseless, `dpkps evaluate --no-dp --diagnose`): even at the
//! first step, where the largest exact score is 16 times the rms random-feature error, the
//! draw distribution was 0.33 in total variation from the exact kernel's. So each step also
//! scores [`NULLS`] null candidates, random unit vectors (data-independent, fixed seed) that no
//! training keyphrase is near: their scores are the error alone, for this class and prefix.
//! Weights are max(score − floor, 0) with floor = the nulls' mean + 3 standard deviations; if
//! fewer than 1% of the candidates (or fewer than three) clear it, the step has no detectable
//! signal and the paper's max(score, 0) is kept (drawing only a few noise outliers would repeat
//! them in every sequence). If every score is ≤ 0 the draw is uniform over the candidates.
//! This reads only the release and public vectors:
//! post-processing, no privacy cost.
//!
//! # Batched scoring
//! The paper scores candidates one by one: O(N·I·d·ℓ) per step and sequence. Instead, with
//! a = β + s_ℓ·r (the prefix's phase, r = Σ_{t<ℓ} √2·ωᵗ·y_t) and b(w) = s_ℓ·√2·ωˡ·w, the
//! angle-addition identity gives
//!
//! ```text
//! score(q, w) = (√2/I)·Σ_i S̃_i cos(a_qi + b_iw) = Σ_i A_qi·cos b_iw + B_qi·(−sin b_iw),
//! A = (√2/I)·S̃·cos a,  B = (√2/I)·S̃·sin a
//! ```
//!
//! so a step is one GEMM for the candidate projections (shared by every sequence and class),
//! a cos/sin table, and one GEMM [A B]·[cos b; −sin b] per class. After a choice w*, r grows by
//! the already computed projection of w*: O(I).

use super::{draw_distinct, draw_one, Candidates, Sequence};
use crate::dp::SecureRng;
use crate::embed::TermEmbeddings;
use crate::math::linalg::{gemm, MatRef};
use crate::dp::summary::kde::Features;
use crate::dp::summary::{DpSummary, SummaryError, KeyphraseSampler};
use crate::math::trig::{cos_fast, sin_fast};
use crate::input::public_vocab::TermId;

/// Null candidates: random unit vectors, data-independent (a fixed seed), scored beside Ṽ.
/// Almost no training keyphrase is near a random direction of the embedding space, so their
/// scores are (nearly) pure error, random-feature and DP noise together, for this class and
/// prefix; their spread says how large a score must be to be signal (module docs).
pub(crate) const NULLS: usize = 64;
/// Most prefixes scored in one GEMM (several classes together): 512 × 2I floats of phases
/// (16 MB at I = 4096) and 512 × (N + NULLS) scores.
const SCORE_ROWS: usize = 512;
/// A candidate's weight is its score above the nulls' mean + Z_FLOOR standard deviations
/// (with Gaussian errors, about one of 1,000 pure-noise candidates passes).
const Z_FLOOR: f64 = 3.0;

/// The fewest candidates above the floor that count as signal, however few the candidates: for
/// a Ṽ of N < 300 (or `evaluate --candidates cleared`, `dp::candidates`) 1% would be one or
/// two, and with no signal one of 100 error-only candidates passes a 3-sd floor in about one
/// step of eight (Gaussian tail 0.13% each), three in about one of 3,000.
const MIN_PASS: usize = 3;

/// The noise floor of one row of scores from the null candidates' scores (0 without nulls).
fn noise_floor(nulls: &[f32]) -> f32 {
    if nulls.len() < 2 {
        return 0.0;
    }
    let n = nulls.len() as f64;
    let mean = nulls.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = nulls.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean + Z_FLOOR * var.sqrt()).max(0.0) as f32
}

/// The draw weights: max(score − floor, 0); if fewer than 1% of the scores (or fewer than
/// [`MIN_PASS`]) are above the floor, max(score, 0) (the step has no detectable signal: the
/// paper's rule); if none is positive either, uniform.
pub(crate) fn weights(scores: &[f32], floor: f32) -> Vec<f64> {
    // Fewer than 1% of the candidates (and fewer than MIN_PASS) above the floor: too few to be
    // the signal rather than the noise's own outliers, and drawing only those would repeat a
    // few noise terms.
    let min_pass = (scores.len() / 100).max(MIN_PASS.min(scores.len()));
    let floor = if scores.iter().filter(|&&s| s > floor).count() >= min_pass { floor } else { 0.0 };
    let w: Vec<f64> = scores.iter().map(|&s| (s - floor).max(0.0) as f64).collect();
    let total: f64 = w.iter().sum();
    if total > 0.0 && total.is_finite() {
        return w;
    }
    vec![1.0; scores.len()]
}

/// The candidates' embeddings followed by the [`NULLS`] null candidates.
fn with_nulls(cands: &Candidates) -> Candidates {
    let mut matrix = cands.matrix.clone();
    for v in Features::synthetic_unit_vectors(NULLS, cands.dim, 0x6e75_6c6c) {
        matrix.extend_from_slice(&v);
    }
    let mut ids = cands.ids.clone();
    ids.extend(std::iter::repeat(TermId::MAX).take(NULLS));
    Candidates { ids, matrix, dim: cands.dim }
}

/// Splits scores of candidates + nulls (rows of N + NULLS) into the candidates' scores (rows of
/// N) and floors.
fn split_nulls(ext: &[f32], n: usize) -> (Vec<f32>, Vec<f32>) {
    let width = n + NULLS;
    let rows = ext.len() / width;
    let mut scores = Vec::with_capacity(rows * n);
    let mut floors = Vec::with_capacity(rows);
    for row in ext.chunks_exact(width) {
        scores.extend_from_slice(&row[..n]);
        floors.push(noise_floor(&row[n..]));
    }
    (scores, floors)
}

/// The independent sampler: every candidate scored once per class, L i.i.d. draws per sequence.
pub(super) fn sample_independent(set: &DpSummary, cands: &Candidates, counts: &[usize], rng: &mut SecureRng) -> Result<Vec<Sequence>, SummaryError> {
    let features = set.features()?;
    let mut out = Vec::with_capacity(counts.iter().sum());
    let ext = with_nulls(cands);
    let table = PhaseTable::new(&features, &ext, 0, 1.0);
    for (class, &n) in set.classes.iter().zip(counts) {
        let (scores, floors) = split_nulls(&table.scores_from_phases(&[features.beta().to_vec()], &class.member_sums(0)), cands.len());
        let w = weights(&scores, floors[0]);
        for _ in 0..n {
            let keyphrases = draw_distinct(&w, set.params.len, rng).into_iter().map(|i| cands.ids[i]).collect();
            out.push(Sequence { label: class.label.clone(), keyphrases });
        }
    }
    Ok(out)
}

/// Every class's scores of the candidates as a sequence's first keyphrase (the member and block
/// scale that cover ℓ = 1), without nulls: what [`super::signal`] compares with the DP noise.
pub(crate) fn first_step_scores(set: &DpSummary, cands: &Candidates) -> Result<Vec<Vec<f32>>, SummaryError> {
    let features = set.features()?;
    let ensemble = set.params.ensemble();
    let member = ensemble.member_for(1);
    let s = if set.params.sampler == KeyphraseSampler::Independent { 1.0 } else { ensemble.scales(member, 1).last };
    let table = PhaseTable::new(&features, cands, 0, s);
    Ok(set.classes.iter().map(|class| table.scores_from_phases(&[features.beta().to_vec()], &class.member_sums(member))).collect())
}

/// Per class, its candidates' scores as a first keyphrase, where the sampling computed them.
pub(crate) type FirstScores = Vec<Option<Vec<f32>>>;

/// The iterative samplers ([`sample_iterative`]), as sequences of Ṽ's terms, with each class's
/// scores of the candidates as a first keyphrase where the class had a sequence to score them
/// for (what [`first_step_scores`] computes, read off the sampling: the signal estimate then
/// costs no second pass over the features).
pub(super) fn sample_iterative_sequences(set: &DpSummary, cands: &Candidates, counts: &[usize], rng: &mut SecureRng) -> Result<(Vec<Sequence>, FirstScores), SummaryError> {
    let features = set.features()?;
    let mut out = Vec::with_capacity(counts.iter().sum());
    let n = cands.len();
    let mut first: FirstScores = vec![None; set.classes.len()];
    let picks = sample_iterative(set, &features, cands, counts, rng, &mut |c, len, _, scores, _| {
        if len == 1 && scores.len() >= n {
            first[c] = Some(scores[..n].to_vec());
        }
    });
    for (class, chosen) in set.classes.iter().zip(picks) {
        for p in chosen {
            out.push(Sequence { label: class.label.clone(), keyphrases: p.iter().map(|&w| cands.ids[w]).collect() });
        }
    }
    Ok((out, first))
}


/// What [`sample_iterative`] shows its observer at each step: the class, the prefix length ℓ
/// being completed, the prefixes so far (indices into the candidates) and their scores
/// (prefixes × N) and noise floors (one per prefix), which it may replace (the evaluation's
/// diagnosis samples from the exact kernel that way; never a release).
pub(crate) type StepObserver<'a> = &'a mut dyn FnMut(usize, usize, &[Vec<usize>], &mut [f32], &mut [f32]);

/// The iterative samplers: `counts[c]` sequences of class c, as indices into the candidates.
pub(crate) fn sample_iterative(
    set: &DpSummary,
    features: &Features,
    cands: &Candidates,
    counts: &[usize],
    rng: &mut SecureRng,
    observe: StepObserver<'_>,
) -> Vec<Vec<Vec<usize>>> {
    let ensemble = set.params.ensemble();
    let i_count = features.count;
    let n = cands.len();
    let ext = with_nulls(cands);
    // Per class: the raw phases r of the prefixes (per sequence × I) and the choices so far.
    let mut state: Vec<(Vec<f32>, Vec<Vec<usize>>)> =
        counts.iter().map(|&n| (vec![0f32; n * i_count], vec![Vec::new(); n])).collect();
    for len in 1..=set.params.len {
        let member = ensemble.member_for(len);
        let s = ensemble.scales(member, len);
        let table = PhaseTable::new(features, &ext, len - 1, s.last);
        // Sequences with the same prefix so far have the same phases and scores: each distinct
        // prefix is scored once (all of them at ℓ = 1, many at ℓ = 2), and the rows copied.
        let distinct: Vec<(Vec<usize>, Vec<usize>)> = state.iter().map(|(_, chosen)| distinct_prefixes(chosen)).collect();
        let sums: Vec<Vec<f64>> = set.classes.iter().map(|class| class.member_sums(member)).collect();
        // Classes are scored together, up to SCORE_ROWS prefixes per GEMM: the candidates'
        // table is then read (packed) once per group rather than once per class.
        let mut c0 = 0;
        while c0 < state.len() {
            let mut c1 = c0 + 1;
            let mut rows = distinct[c0].0.len();
            while c1 < state.len() && rows + distinct[c1].0.len() <= SCORE_ROWS {
                rows += distinct[c1].0.len();
                c1 += 1;
            }
            let groups: Vec<(Vec<f32>, &[f64])> = (c0..c1)
                .map(|c| {
                    let r = &state[c].0;
                    let phases = distinct[c].0.iter().flat_map(|&q| r[q * i_count..][..i_count].iter().zip(features.beta()).map(|(&rv, &b)| b + s.prefix * rv)).collect();
                    (phases, sums[c].as_slice())
                })
                .collect();
            let scored = table.scores_grouped(&groups);
            for (c, ext_scores) in (c0..c1).zip(scored) {
                let (r, chosen) = &mut state[c];
                let (scores_distinct, floors_distinct) = split_nulls(&ext_scores, n);
                let of = &distinct[c].1;
                let mut scores: Vec<f32> = of.iter().flat_map(|&u| &scores_distinct[u * n..][..n]).copied().collect();
                let mut floors: Vec<f32> = of.iter().map(|&u| floors_distinct[u]).collect();
                observe(c, len, chosen, &mut scores, &mut floors);
                for (q, picks) in chosen.iter_mut().enumerate() {
                    // A sequence that ended (no undrawn candidate with weight) stays as it is.
                    if picks.len() + 1 != len {
                        continue;
                    }
                    let mut wts = weights(&scores[q * n..][..n], floors[q]);
                    picks.iter().for_each(|&p| wts[p] = 0.0);
                    let Some(w) = draw_one(&wts, rng) else { continue };
                    picks.push(w);
                    for (rv, p) in r[q * i_count..][..i_count].iter_mut().zip(&table.proj[w * i_count..][..i_count]) {
                        *rv += p;
                    }
                }
            }
            c0 = c1;
        }
    }
    state.into_iter().map(|(_, chosen)| chosen).collect()
}

/// The first sequence of each distinct prefix (in order), and for every sequence the index of
/// its prefix among those.
fn distinct_prefixes(chosen: &[Vec<usize>]) -> (Vec<usize>, Vec<usize>) {
    let mut index: std::collections::HashMap<&[usize], usize> = std::collections::HashMap::new();
    let mut first = Vec::new();
    let of = chosen
        .iter()
        .enumerate()
        .map(|(q, p)| {
            *index.entry(p.as_slice()).or_insert_with(|| {
                first.push(q);
                first.len() - 1
            })
        })
        .collect();
    (first, of)
}

/// For one step: the candidates' projections through block t and their cos/sin table.
pub(crate) struct PhaseTable {
    /// N × I: √2·ωᵗ·w (unscaled; added to r after a choice).
    proj: Vec<f32>,
    /// N × 2I: [cos b | −sin b] with b = s·proj.
    trig: Vec<f32>,
    n: usize,
    i_count: usize,
}

impl PhaseTable {
    pub(crate) fn new(features: &Features, cands: &Candidates, block: usize, s: f32) -> PhaseTable {
        let (n, i_count) = (cands.len(), features.count);
        let mut proj = vec![0f32; n * i_count];
        features.project(block, cands.view(), &mut proj);
        let mut trig = vec![0f32; n * 2 * i_count];
        for (row, p) in trig.chunks_exact_mut(2 * i_count).zip(proj.chunks_exact(i_count)) {
            let (c, ms) = row.split_at_mut(i_count);
            for ((c, ms), &p) in c.iter_mut().zip(ms.iter_mut()).zip(p) {
                *c = cos_fast(s * p);
                *ms = -sin_fast(s * p);
            }
        }
        PhaseTable { proj, trig, n, i_count }
    }

    /// Scores (nq × N) of every candidate after each prefix, r being nq × I raw phases.
    pub(crate) fn scores(&self, features: &Features, r: &[f32], s: f32, sums: &[f64]) -> Vec<f32> {
        let nq = r.len() / self.i_count;
        let phases: Vec<Vec<f32>> = (0..nq)
            .map(|q| r[q * self.i_count..][..self.i_count].iter().zip(features.beta()).map(|(&rv, &b)| b + s * rv).collect())
            .collect();
        self.scores_from_phases(&phases, sums)
    }

    /// Scores (nq × N) for prefix phases a (one I-vector per prefix).
    pub(crate) fn scores_from_phases(&self, phases: &[Vec<f32>], sums: &[f64]) -> Vec<f32> {
        let flat: Vec<f32> = phases.concat();
        self.scores_grouped(&[(flat, sums)]).pop().unwrap_or_default()
    }

    /// Scores for several groups of prefixes, each scored against its own sums S̃ (a class's
    /// member): the phases of a group are its prefixes' I-vectors one after another; one
    /// GEMM for all groups, split back per group (nq × N each).
    pub(crate) fn scores_grouped(&self, groups: &[(Vec<f32>, &[f64])]) -> Vec<Vec<f32>> {
        let i_count = self.i_count;
        let k = std::f64::consts::SQRT_2 / i_count as f64;
        let total: usize = groups.iter().map(|(p, _)| p.len() / i_count).sum();
        let mut ab = vec![0f32; total * 2 * i_count];
        let mut rows = ab.chunks_exact_mut(2 * i_count);
        for (phases, sums) in groups {
            let w: Vec<f32> = sums.iter().map(|&sum| (k * sum) as f32).collect();
            // Phases first: zip takes from its left side first, and must not drop a row.
            for (a, row) in phases.chunks_exact(i_count).zip(rows.by_ref()) {
                let (ca, sa) = row.split_at_mut(i_count);
                for (((ca, sa), &a), &w) in ca.iter_mut().zip(sa.iter_mut()).zip(a).zip(&w) {
                    *ca = w * cos_fast(a);
                    *sa = w * sin_fast(a);
                }
            }
        }
        let mut scores = vec![0f32; total * self.n];
        let trig = MatRef::rows(&self.trig, self.n, 2 * i_count).t();
        gemm(1.0, MatRef::rows(&ab, total, 2 * i_count), trig, 0.0, &mut scores);
        let mut out = Vec::with_capacity(groups.len());
        let mut rest = scores.as_slice();
        for (phases, _) in groups {
            let (mine, tail) = rest.split_at(phases.len() / i_count * self.n);
            out.push(mine.to_vec());
            rest = tail;
        }
        out
    }
}

/// The paper's scorer, one candidate at a time from the full prefix vectors: O(N·I·d·ℓ).
/// A reference for tests and the benchmark's speed-up figure.
pub fn naive_scores(set: &DpSummary, features: &Features, cands: &Candidates, class: usize, prefix: &[TermId], emb: &TermEmbeddings) -> Vec<f32> {
    let len = prefix.len() + 1;
    let member = set.params.ensemble().member_for(len);
    let sums = set.classes[class].member_sums(member);
    let s = set.params.ensemble().scales(member, len);
    let block = if set.params.sampler == KeyphraseSampler::Independent { 0 } else { len - 1 };
    (0..cands.len())
        .map(|w| {
            let cand = &cands.matrix[w * cands.dim..][..cands.dim];
            let mut total = 0f64;
            for i in 0..features.count {
                let mut z = 0f32;
                for (t, &p) in prefix.iter().enumerate() {
                    z += features.project_one(i, t, emb.get(p).unwrap_or(cand));
                }
                let theta = features.beta()[i] + s.prefix * z + s.last * features.project_one(i, block, cand);
                total += sums[i] * std::f64::consts::SQRT_2 * (theta as f64).cos();
            }
            (total / features.count as f64) as f32
        })
        .collect()
}

/// The batched scorer for one prefix (for tests and benchmarks).
pub fn batched_scores(set: &DpSummary, features: &Features, cands: &Candidates, class: usize, prefix: &[TermId], emb: &TermEmbeddings) -> Vec<f32> {
    let len = prefix.len() + 1;
    let member = set.params.ensemble().member_for(len);
    let s = set.params.ensemble().scales(member, len);
    let block = if set.params.sampler == KeyphraseSampler::Independent { 0 } else { len - 1 };
    let mut r = vec![0f32; features.count];
    for (t, &p) in prefix.iter().enumerate() {
        let mut proj = vec![0f32; features.count];
        if let Some(e) = emb.get(p) {
            features.project(t, MatRef::rows(e, 1, cands.dim), &mut proj);
        }
        r.iter_mut().zip(&proj).for_each(|(a, b)| *a += b);
    }
    PhaseTable::new(features, cands, block, s.last).scores(features, &r, s.prefix, &set.classes[class].member_sums(member))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::classes::ClassSet;
    use crate::sample::tests::{abc, class_docs, clustered};
    use crate::dp::summary::{build, build_with, SummaryDoc, SummaryParams, Noise};

    #[test]
    fn distinct_prefixes_are_scored_once_and_mapped_back() {
        let chosen = vec![vec![3, 1], vec![2], vec![3, 1], vec![], vec![2], vec![3, 2], vec![]];
        let (first, of) = distinct_prefixes(&chosen);
        assert_eq!(first, vec![0, 1, 3, 5]);
        assert_eq!(of, vec![0, 1, 0, 2, 1, 3, 2]);
        assert!(of.iter().enumerate().all(|(q, &u)| chosen[first[u]] == chosen[q]));
        assert_eq!(distinct_prefixes(&vec![Vec::new(); 50]).0, vec![0]);
    }
    #[test]
    fn batched_scorer_equals_the_naive_scorer() {
        let (emb, docs, labels) = clustered();
        let kdocs = class_docs(&docs, &labels);
        for sampler in [KeyphraseSampler::Independent, KeyphraseSampler::IterativeLinear, KeyphraseSampler::IterativeLog] {
            let params = SummaryParams { epsilon: 5.0, sampler, len: 5, features: 256, terms_per_doc: 5, bandwidth: 1.0, smoothing: 0.0 };
            let mut rng = SecureRng::seeded_for_tests(5);
            let (set, _) = build(crate::dp::summary::SummaryInputs::of(&kdocs, &abc(), &emb, &[], &params), &mut rng).unwrap();
            let f = set.features().unwrap();
            let cands = Candidates::new(&(0..60).collect::<Vec<_>>(), &emb).unwrap();
            let prefixes: &[&[TermId]] = if sampler == KeyphraseSampler::Independent { &[&[]] } else { &[&[], &[3], &[3, 25, 41], &[1, 2, 3, 4]] };
            for prefix in prefixes {
                let fast = batched_scores(&set, &f, &cands, 1, prefix, &emb);
                let slow = naive_scores(&set, &f, &cands, 1, prefix, &emb);
                let scale = slow.iter().fold(0f32, |m, x| m.max(x.abs())).max(1.0);
                for (a, b) in fast.iter().zip(&slow) {
                    assert!((a - b).abs() <= 1e-3 * scale, "{sampler:?} {prefix:?}: {a} vs {b}");
                }
            }
        }
    }

    #[test]
    fn the_noise_floor_drops_error_only_candidates() {
        // Nulls ~ N(0, 1): floor ≈ 3. Candidates 0..20 carry signal 10, the rest error only.
        let mut rng = SecureRng::seeded_for_tests(3);
        let mut gauss = || {
            let u = |rng: &mut SecureRng| ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            ((-2.0 * u(&mut rng).ln()).sqrt() * (std::f64::consts::TAU * u(&mut rng)).cos()) as f32
        };
        let nulls: Vec<f32> = (0..NULLS).map(|_| gauss()).collect();
        let floor = noise_floor(&nulls);
        assert!((2.0..4.0).contains(&floor), "floor {floor}");
        let scores: Vec<f32> = (0..1000).map(|i| if i < 20 { 10.0 } else { 0.0 } + gauss()).collect();
        let mass = |w: &[f64]| w[..20].iter().sum::<f64>() / w.iter().sum::<f64>();
        let (with, without) = (mass(&weights(&scores, floor)), mass(&weights(&scores, 0.0)));
        assert!(with > 0.95 && without < 0.6, "signal mass {with:.3} with the floor, {without:.3} without");
        // Error only: the few outliers above the floor are not drawn alone.
        let noise: Vec<f32> = (0..1000).map(|_| gauss()).collect();
        let w = weights(&noise, floor);
        assert!(w.iter().filter(|&&x| x > 0.0).count() > 300, "fell back to max(score, 0)");
        // Few candidates (the cleared ones): two outliers above the floor are not drawn alone,
        // three strong scores are.
        let mut few: Vec<f32> = (0..100).map(|i| (i % 7) as f32 * 0.2 - 0.3).collect();
        few[10] = floor + 1.0;
        few[20] = floor + 1.0;
        assert!(weights(&few, floor).iter().filter(|&&x| x > 0.0).count() > 50, "two outliers drawn alone");
        few[30] = floor + 1.0;
        assert_eq!(weights(&few, floor).iter().filter(|&&x| x > 0.0).count(), 3);
    }

    #[test]
    fn all_nonpositive_scores_sample_uniformly() {
        let mut rng = SecureRng::seeded_for_tests(9);
        let mut counts = [0usize; 4];
        for _ in 0..4000 {
            counts[draw_one(&weights(&[-1.0, 0.0, -3.0, -0.5], 0.0), &mut rng).unwrap()] += 1;
        }
        assert!(counts.iter().all(|&c| (800..1200).contains(&c)), "{counts:?}");
        for _ in 0..100 {
            assert_eq!(draw_one(&weights(&[-1.0, 2.0, -3.0, 0.0], 0.0), &mut rng), Some(1));
        }
    }

    #[test]
    fn groups_scored_together_equal_groups_scored_alone() {
        let (dim, i_count, n) = (8, 32, 20);
        let features = Features::generate(i_count, dim, 2, 0.5, [9; 32]);
        let vecs = Features::synthetic_unit_vectors(n, dim, 3);
        let cands = Candidates { ids: (0..n as TermId).collect(), matrix: vecs.concat(), dim };
        let table = PhaseTable::new(&features, &cands, 1, 0.7);
        let phase = |seed: usize, rows: usize| (0..rows * i_count).map(|j| ((seed * 131 + j * 17) % 97) as f32 * 0.13 - 6.0).collect::<Vec<f32>>();
        let sums: Vec<Vec<f64>> = (0..3).map(|g| (0..i_count).map(|i| ((g * 7 + i * 5) % 11) as f64 - 4.0).collect()).collect();
        let groups: Vec<(Vec<f32>, &[f64])> = [(1, 3), (2, 1), (3, 4)].iter().zip(&sums).map(|(&(seed, rows), s)| (phase(seed, rows), s.as_slice())).collect();
        let together = table.scores_grouped(&groups);
        assert_eq!(together.len(), 3);
        for ((phases, sums), got) in groups.iter().zip(&together) {
            let alone = table.scores_grouped(&[(phases.clone(), *sums)]).pop().unwrap();
            assert_eq!(got.len(), phases.len() / i_count * n);
            assert!(got.iter().zip(&alone).all(|(a, b)| (a - b).abs() <= 1e-4 * (1.0 + b.abs())), "{got:?} against {alone:?}");
        }
    }

    #[test]
    fn noiseless_iterative_kde_follows_the_data() {
        // With noise off, a class whose documents always pair term 0 with term 1 makes term 1
        // the best second keyphrase after term 0.
        let (emb, _, _) = clustered();
        let docs: Vec<Vec<TermId>> = (0..50).map(|_| vec![0, 1]).chain((0..50).map(|_| vec![0, 15])).collect();
        let kdocs: Vec<SummaryDoc<'_>> = docs.iter().take(50).map(|t| SummaryDoc { class: 0, terms: t }).collect();
        let params = SummaryParams { epsilon: 1.0, sampler: KeyphraseSampler::IterativeLinear, len: 2, features: 4096, terms_per_doc: 2, bandwidth: 1.0, smoothing: 0.0 };
        let (set, _) = build_with(crate::dp::summary::SummaryInputs::of(&kdocs, &ClassSet::unlabelled(), &emb, &[], &params), [1; 32], Noise::Off).unwrap();
        let f = set.features().unwrap();
        let cands = Candidates::new(&(0..20).collect::<Vec<_>>(), &emb).unwrap();
        let scores = batched_scores(&set, &f, &cands, 0, &[0], &emb);
        let best = scores.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap().0;
        assert_eq!(best, 1, "{scores:?}");
    }
}
