//! Tests of the DP-KDE release against its privacy map, from outside the build's own code:
//! an empirical privacy check of the release (like `crate::dp::summary::hist`'s), with two under-noised
//! variants it must catch; and each document's contribution against a naive reference (a
//! contribution added twice or missed would break the sensitivity Δ = I·Q per member, and the
//! empirical check, on one feature, would not see every path).

use super::*;
use crate::input::classes::ClassSet;
use crate::dp::SecureRng;
use crate::dp::summary::{build_from_sums, build_with, exact_sums, DpSummary, Noise};
use crate::dp::testing::{frequencies, max_log_ratio};

/// Outcomes per corpus. 30,000 (as in `crate::dp::summary::hist`) keeps the 4-sd slack small enough to
/// catch a loss of 2ε; each trial is one release of one feature.
const TRIALS: usize = 30_000;

/// One term in 4 dimensions; the one-document corpus D′ and the features' seed whose single
/// feature gives that document nearly the largest contribution allowed (|q| close to Q), so
/// the check measures the worst case rather than a document the feature barely sees.
fn worst_case(sampler: KeyphraseSampler) -> (TermEmbeddings, Vec<TermId>, SummaryParams, [u8; 32], i64) {
    let mut emb = TermEmbeddings::new(4);
    emb.insert(3, &tests::unit_vectors(1, 4, 7)[0]).unwrap();
    let terms = vec![3];
    let params = SummaryParams { epsilon: 1.0, sampler, len: 1, features: 1, terms_per_doc: 1, bandwidth: 1.0, smoothing: 0.0 };
    let docs = [SummaryDoc { class: 0, terms: &terms }];
    let (seed, q) = (0..=255u8)
        .map(|k| ([k; 32], exact_sums(&docs, 1, &emb, &params, [k; 32]).unwrap()[0][0][0]))
        .max_by_key(|&(_, q)| q.abs())
        .unwrap();
    (emb, terms, params, seed, q)
}

/// The estimated privacy loss (`crate::dp::testing`) of one release at ε = 1 between the
/// empty corpus and one document, the released sum bucketed by Q/2 (post-processing).
/// `release(docs, rng)` gives the one noisy sum.
fn estimated_loss(seed: u64, mut release: impl FnMut(&[SummaryDoc<'_>], &mut SecureRng) -> i64, terms: &[TermId]) -> f64 {
    let mut rng = SecureRng::seeded_for_tests(seed);
    let bucket = |v: i64| (v as f64 / (Q_BOUND as f64 / 2.0)).floor().clamp(-8.0, 8.0) as i64;
    let f0 = frequencies(TRIALS, || bucket(release(&[], &mut rng)));
    let one = [SummaryDoc { class: 0, terms }];
    let f1 = frequencies(TRIALS, || bucket(release(&one, &mut rng)));
    max_log_ratio(&f0, &f1, TRIALS)
}

#[test]
fn empirical_privacy_loss_of_the_dp_kde_stays_within_epsilon() {
    // Independent: the mean of f64 cosines (`sums::add_quantised`); the iterative samplers
    // (one member at L = 1): the f32 path (`sums::add_cos_quantised`, `crate::math::trig`).
    for (k, sampler) in [KeyphraseSampler::Independent, KeyphraseSampler::IterativeLinear, KeyphraseSampler::IterativeLog].into_iter().enumerate() {
        empirical_check(sampler, 10 * k as u64);
    }
}

fn empirical_check(sampler: KeyphraseSampler, seeds: u64) {
    let eps = 1.0;
    let (emb, terms, params, seed, q) = worst_case(sampler);
    assert!(q.abs() as f64 > 0.99 * Q_BOUND as f64, "a seed giving the document |q| near Q ({q})");
    let classes = ClassSet::unlabelled();
    let first = |set: DpSummary| set.classes[0].sums[0][0];
    // The release as the app and the CLI make it (with the seed fixed, see `worst_case`), and as
    // the helpers' path makes it (`build_from_sums` on the exact sums).
    let ok = estimated_loss(61 + seeds, |docs, rng| first(build_with(crate::dp::summary::SummaryInputs::of(docs, &classes, &emb, &[], &params), seed, Noise::Laplace(rng)).unwrap().0), &terms);
    let ok_split = estimated_loss(62 + seeds, |docs, rng| {
        let sums = exact_sums(docs, 1, &emb, &params, seed).unwrap();
        first(build_from_sums(crate::dp::summary::SummaryInputs::of(docs, &classes, &emb, &[], &params), seed, sums, rng).unwrap().0)
    }, &terms);
    // Under-noised: a document counted twice (the sums doubled; e.g. a helper's part added
    // twice), and the noise of 2ε spent as ε.
    let doubled = estimated_loss(63 + seeds, |docs, rng| {
        let mut sums = exact_sums(docs, 1, &emb, &params, seed).unwrap();
        sums.iter_mut().flatten().flatten().for_each(|v| *v *= 2);
        first(build_from_sums(crate::dp::summary::SummaryInputs::of(docs, &classes, &emb, &[], &params), seed, sums, rng).unwrap().0)
    }, &terms);
    let half_noise = SummaryParams { epsilon: 2.0 * eps, ..params };
    let eps_twice = estimated_loss(64 + seeds, |docs, rng| first(build_with(crate::dp::summary::SummaryInputs::of(docs, &classes, &emb, &[], &half_noise), seed, Noise::Laplace(rng)).unwrap().0), &terms);
    println!("DP-KDE {sampler:?} (I = 1, |q| = {:.4}·Q): estimated loss {ok:.3}, split path {ok_split:.3}; sums doubled {doubled:.3}, noise of 2ε {eps_twice:.3} (ε = {eps})", q.abs() as f64 / Q_BOUND as f64);
    assert!(ok <= eps, "estimated privacy loss {ok} exceeds ε = {eps}");
    assert!(ok_split <= eps, "the split path's estimated privacy loss {ok_split} exceeds ε = {eps}");
    assert!(doubled > eps, "a document counted twice went undetected (loss {doubled})");
    assert!(eps_twice > eps, "the noise of 2ε went undetected (loss {eps_twice})");
}

/// Each document's contribution to each member, computed naively from the definitions (module
/// docs; `Ensemble::scales`): one cosine per feature from `Features::project_one`, in f64, then
/// clamped to [−C, C] and rounded to the grid per (document, member). Linear: member m takes
/// the document's prefix of length m + 1, if it has one; logarithmic: member j its prefix of
/// length min(2^j, its length); independent: the mean over its first M keyphrases.
fn reference(doc: &[TermId], emb: &TermEmbeddings, f: &Features, params: &SummaryParams) -> Vec<Vec<i64>> {
    let ensemble = params.ensemble();
    let grid = (1u64 << GRID_BITS) as f64;
    let feature = |i: usize, m: usize, prefix: &[TermId]| {
        let s = ensemble.scales(m, prefix.len());
        let theta: f64 = f.beta()[i] as f64
            + prefix.iter().enumerate().map(|(t, &z)| (if t + 1 == prefix.len() { s.last } else { s.prefix }) as f64 * f.project_one(i, t, emb.get(z).unwrap()) as f64).sum::<f64>();
        std::f64::consts::SQRT_2 * theta.cos()
    };
    let quantise = |c: f64| (c.clamp(-C_BOUND, C_BOUND) * grid).round() as i64;
    let len = doc.len().min(params.len);
    (0..ensemble.members())
        .map(|m| {
            let parts: Vec<&[TermId]> = match params.sampler {
                KeyphraseSampler::Independent => doc.iter().take(params.terms_per_doc).map(std::slice::from_ref).collect(),
                KeyphraseSampler::IterativeLinear => (m < len).then(|| &doc[..m + 1]).into_iter().collect(),
                KeyphraseSampler::IterativeLog => (len > 0).then(|| &doc[..(1usize << m).min(len)]).into_iter().collect(),
                KeyphraseSampler::Histogram | KeyphraseSampler::Markov => unreachable!(),
            };
            (0..f.count)
                .map(|i| if parts.is_empty() { 0 } else { quantise(parts.iter().map(|p| feature(i, m, p)).sum::<f64>() / parts.len() as f64) })
                .collect()
        })
        .collect()
}

#[test]
fn each_document_contributes_once_to_each_of_its_members() {
    // Single-document corpora of every length from 1 to L + 1 (and a repeated term): the
    // build's sums against the naive reference. A contribution added twice, or missed, moves
    // an entry by up to Q (about 10⁶ grid units); f32 rounding moves it by a few.
    let dim = 16;
    let mut emb = TermEmbeddings::new(dim);
    for (i, v) in tests::unit_vectors(40, dim, 11).iter().enumerate() {
        emb.insert(i as TermId, v).unwrap();
    }
    let mut lists: Vec<Vec<TermId>> = (1..=7u32).map(|n| (0..n).map(|j| (j * 13 + n) % 40).collect()).collect();
    lists.push(vec![5, 5, 5]);
    for sampler in [KeyphraseSampler::Independent, KeyphraseSampler::IterativeLinear, KeyphraseSampler::IterativeLog] {
        let params = SummaryParams { epsilon: 1.0, sampler, len: 6, features: 64, terms_per_doc: 4, bandwidth: 0.3, smoothing: 0.0 };
        let f = Features::generate(params.features, dim, params.blocks(), params.bandwidth, [8; 32]);
        for terms in &lists {
            let doc = SummaryDoc { class: 0, terms };
            let mut rows = sums::Rows::new(&emb, &f, sampler == KeyphraseSampler::Independent, std::iter::empty());
            let got = sums::class_sums(&[&doc], &f, &params, &mut rows);
            let want = reference(terms, &emb, &f, &params);
            assert_eq!(got.len(), want.len());
            for (m, (g, w)) in got.iter().zip(&want).enumerate() {
                let worst = g.iter().zip(w).map(|(a, b)| (a - b).abs()).max().unwrap_or(0);
                assert!(worst <= 64, "{sampler:?}, document {terms:?}, member {m}: off by {worst} grid units");
                let present = w.iter().any(|&v| v != 0);
                assert_eq!(present, g.iter().any(|&v| v != 0), "{sampler:?}, document {terms:?}, member {m}");
            }
        }
    }
}
