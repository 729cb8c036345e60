//! Benchmarks in headless Chromium (wasm32 + simd128). They print figures and assert nothing
//! about speed; `#[ignore]`d so the test command skips them. Run them with
//! `scripts/bench.sh --wasm` (release profile).
#![cfg(target_arch = "wasm32")]

use dpkps_core::dp::SecureRng;
use dpkps_core::embed::TermEmbeddings;
use dpkps_core::dp::summary::kde::Features;
use dpkps_core::dp::summary::{build, KeyphraseSampler, SummaryDoc, SummaryInputs, SummaryParams};
use dpkps_core::sample::{draw, Candidates, Sampling, Signals};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn now_ms() -> f64 {
    js_sys::Date::now()
}

#[wasm_bindgen_test]
#[ignore]
fn bench_kde_generation_wasm() {
    let (n_docs, m, dim, features, n_cands, n_seqs) = (5000usize, 10usize, 384usize, 4096usize, 1000usize, 1000usize);
    let mut rng = SecureRng::from_os().unwrap();
    let vocab = 4000;
    let mut emb = TermEmbeddings::new(dim);
    for (t, v) in Features::synthetic_unit_vectors(vocab, dim, 7).iter().enumerate() {
        emb.insert(t as u32, v).unwrap();
    }
    let terms: Vec<Vec<u32>> = (0..n_docs as u64)
        .map(|k| (0..m as u64).map(|j| ((k * 7919 + j * 104729 + j * j * 13) % vocab as u64) as u32).collect())
        .collect();
    let docs: Vec<SummaryDoc<'_>> = terms.iter().map(|t| SummaryDoc { class: 0, terms: t }).collect();
    let classes = dpkps_core::input::classes::ClassSet::unlabelled();
    let cand_ids: Vec<u32> = (0..n_cands as u32).collect();
    let cands = Candidates::new(&cand_ids, &emb).unwrap();
    for sampler in [KeyphraseSampler::IterativeLinear, KeyphraseSampler::IterativeLog, KeyphraseSampler::Independent] {
        let params = SummaryParams { epsilon: 10.0, sampler, len: m, features, terms_per_doc: m, bandwidth: 1.0, smoothing: 0.0 };
        let t0 = now_ms();
        let inputs = SummaryInputs { docs: &docs, classes: &classes, emb: &emb, candidates: &cand_ids, params: &params };
        let (set, _) = build(inputs, &mut rng).unwrap();
        let t1 = now_ms();
        let seqs = draw(&set, &cands, &[n_seqs], &Sampling::OFF, &mut rng, Signals::Skip).unwrap().sequences;
        let t2 = now_ms();
        assert_eq!(seqs.len(), n_seqs);
        console_log!(
            "wasm {}: n={n_docs} M={m} d={dim} I={features} N={n_cands} L={m}: KDE build {:.2} s, {n_seqs} sequences {:.2} s",
            sampler.name(),
            (t1 - t0) / 1000.0,
            (t2 - t1) / 1000.0
        );
    }
}

// The embedding benchmark runs in the app's own worker (tests/e2e/bench.mjs).

/// The DP vote's release in the page's engine: 5,000 private units × 1,000 candidates in one
/// class (every unit against every candidate: the worst case), then spread over 5 classes;
/// synthetic unit vectors of 384 dimensions (the bundled model's), one thread. The native
/// figure is `dpkps bench vote` (docs/benchmarks.md, "The DP vote over generated candidates");
/// embedding the private documents, the vote's real cost, is `tests/e2e/bench_docs.mjs`.
#[wasm_bindgen_test]
#[ignore]
fn bench_vote_wasm() {
    use dpkps_core::dp::vote::{self, UnitVector};
    let (n, m, d) = (5000usize, 1000usize, 384usize);
    let mut rng = SecureRng::from_os().unwrap();
    let raw = Features::synthetic_unit_vectors(n + m, d, 11);
    let (cands, units) = raw.split_at(m);
    for classes in [1usize, 5] {
        let per: Vec<Vec<Vec<f32>>> = (0..classes).map(|c| cands.iter().skip(c).step_by(classes).cloned().collect()).collect();
        let cs = vote::Candidates::new(d, &per).unwrap();
        let us: Vec<UnitVector> = units.iter().enumerate().map(|(i, v)| UnitVector { class: i % classes, vector: v.clone() }).collect();
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t0 = now_ms();
            let out = vote::release(&cs, &us, 1.0, &mut rng).unwrap();
            best = best.min(now_ms() - t0);
            assert_eq!(out.votes.len(), classes);
        }
        let pairs = (n * m / classes) as f64;
        console_log!(
            "wasm vote: {n} units × {m} candidates, d={d}, {classes} class(es): {:.3} s ({:.1} million cosines/s; {:.1} µs per unit)",
            best / 1000.0,
            pairs / (best / 1000.0) / 1e6,
            best * 1000.0 / n as f64
        );
    }
}
