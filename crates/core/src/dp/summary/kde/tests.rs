//! The DP-KDE family's tests, and the unit vectors the other summary and sampling tests build on.

use super::*;
use crate::input::classes::ClassSet;
use crate::dp::summary::{build_with, SummaryDoc, SummaryParams, Noise};

#[test]
fn q_bound_covers_c() {
    let q = (C_BOUND * (1u64 << GRID_BITS) as f64).ceil() as u64;
    assert_eq!(q, Q_BOUND);
    assert!(C_BOUND >= 2f64.sqrt());
}

#[test]
fn ensembles_have_the_stated_structure() {
    let lin = Ensemble { sampler: KeyphraseSampler::IterativeLinear, len: 10 };
    assert_eq!(lin.members(), 10);
    assert!((1..=10).all(|l| lin.member_for(l) == l - 1 && lin.covers(l - 1) == (l, l)));
    assert_eq!(lin.epsilon_per_member(10.0), 1.0);

    let log = Ensemble { sampler: KeyphraseSampler::IterativeLog, len: 10 };
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
        let e = Ensemble { sampler: KeyphraseSampler::IterativeLog, len };
        assert_eq!(e.members(), (len as f64).log2().ceil() as usize + 1, "L = {len}");
        assert_eq!(e.member_for(len), e.members() - 1);
    }
    let ind = Ensemble { sampler: KeyphraseSampler::Independent, len: 10 };
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
    let docs: Vec<SummaryDoc<'_>> = term_lists.iter().map(|t| SummaryDoc { class: 0, terms: t }).collect();
    for sampler in [KeyphraseSampler::Independent, KeyphraseSampler::IterativeLinear] {
        let params = SummaryParams { epsilon: 1.0, sampler, len: 2, features: 16_384, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
        let (set, _) = build_with(crate::dp::summary::SummaryInputs::of(&docs, &ClassSet::unlabelled(), &emb, &[], &params), [9; 32], Noise::Off).unwrap();
        let f = set.features().unwrap();
        let sums: Vec<Vec<f64>> = (0..set.classes[0].sums.len()).map(|m| set.classes[0].member_sums(m)).collect();
        // Query: a pair of terms (or a single term for the independent KDE).
        for q in 0..10u32 {
            let (a, b) = (q % 30, (q * 13 + 1) % 30);
            let (member, prefix): (usize, Vec<TermId>) =
                if sampler == KeyphraseSampler::Independent { (0, vec![a]) } else { (1, vec![a, b]) };
            let s = params.ensemble().scales(member, prefix.len());
            let scale = |t: usize| if t + 1 == prefix.len() { s.last } else { s.prefix };
            let rff: f64 = (0..f.count)
                .map(|i| {
                    let th = f.beta()[i] + prefix.iter().enumerate().map(|(t, &p)| scale(t) * f.project_one(i, t, emb.get(p).unwrap())).sum::<f32>();
                    sums[member][i] * std::f64::consts::SQRT_2 * (th as f64).cos()
                })
                .sum::<f64>()
                / f.count as f64;
            // Exact: Σ_docs mean over the doc's prefixes/keyphrases of exp(-‖x−y‖²/ℓ).
            let exact: f64 = term_lists
                .iter()
                .map(|doc| {
                    let parts: Vec<Vec<TermId>> = if sampler == KeyphraseSampler::Independent {
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
