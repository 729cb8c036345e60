//! The pipeline core, compiled to wasm32 and run in headless Chromium
//! (`cargo test --target wasm32-unknown-unknown -p dpkps-core --test web`; wasm-bindgen-test-runner drives
//! chromedriver). These check that the same core behaves the same in the browser, and that
//! the browser's secure random source is what feeds the DP noise.
#![cfg(target_arch = "wasm32")]

use dpkps_core::input::corpus::{Corpus, Fields, Format};
use dpkps_core::dp::vocabulary::VocabParams;
use dpkps_core::dp::SecureRng;
use dpkps_core::input::matched::MatchingSink;
use dpkps_core::input::public_vocab::{Matcher, PublicVocabulary};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const CSV: &[u8] = b"text,label\n\"Congestive heart-failure; chest pain.\",cardio\n\"Asthma, cough, asthma, chest pain, chest pain and more chest pain\",pulmo\n\"  \",cardio\n";

#[wasm_bindgen_test]
fn csv_ingestion_counts_and_fingerprints() {
    let fields = Fields { text: Some("text".into()), label: Some("label".into()), person: None };
    let c = Corpus::read(CSV, "in.csv", Format::Csv, &fields).unwrap();
    assert_eq!(c.stats.documents, 2);
    assert_eq!(c.stats.empty_skipped, 1);
    assert_eq!(c.fingerprint.len(), 64);
}

#[wasm_bindgen_test]
fn matching_is_longest_first_and_keeps_the_most_used_first() {
    let v = PublicVocabulary::parse("t", b"Heart Failure\nheart\nChest Pain\nAsthma\nCough\n").unwrap();
    let m = Matcher::new(&v).unwrap();
    let fields = Fields { text: Some("text".into()), label: Some("label".into()), person: None };
    let mut sink = MatchingSink::new(Some(&m), 10, true);
    sink.read(CSV, "in.csv", Format::Csv, &fields, None).unwrap();
    let mc = sink.finish("in.csv").unwrap();
    let terms: Vec<Vec<&str>> = mc.docs.iter().map(|d| d.terms.iter().map(|&t| v.term(t)).collect()).collect();
    // Chest Pain 3 times, Asthma twice (used first), Cough once: by first use, or with every
    // repeated term alike, Asthma would come first.
    assert_eq!(terms, vec![vec!["Heart Failure", "Chest Pain"], vec!["Chest Pain", "Asthma", "Cough"]]);
}

#[wasm_bindgen_test]
fn dp_vocabulary_runs_on_browser_randomness() {
    // SecureRng::from_os uses crypto.getRandomValues here; two generators must differ.
    let v = PublicVocabulary::parse("t", b"a\nb\nc\nd\ne\nf\ng\nh\n").unwrap();
    let m = Matcher::new(&v).unwrap();
    let mut sink = MatchingSink::new(Some(&m), 4, false);
    let fields = Fields { text: Some("text".into()), label: None, person: None };
    sink.read(&b"text\na b\nb c\nc d\n"[..], "x.csv", Format::Csv, &fields, None).unwrap();
    let mc = sink.finish("x.csv").unwrap();
    let classes = dpkps_core::input::classes::ClassSet::unlabelled();
    let mut draws = Vec::new();
    for k in 0..8 {
        // Global and per-class selection alike (one class here).
        let params = VocabParams { epsilon: 1.0, top_n: 3, terms_per_doc: 2, per_class: k % 2 == 1 };
        let mut rng = SecureRng::from_os().unwrap();
        let (pv, spends) = mc.dp_vocabulary(&v, &params, &classes, &mut rng).unwrap();
        assert_eq!(pv.terms.len(), 3);
        assert_eq!((spends.len(), spends[0].epsilon), (1, 1.0));
        draws.push(pv.terms.iter().map(|t| t.noisy_count).collect::<Vec<_>>());
    }
    draws.dedup();
    assert!(draws.len() > 1, "eight runs gave identical noise: the random source is not random");
}

#[wasm_bindgen_test]
fn kde_and_samplers_run_in_the_browser() {
    use dpkps_core::embed::TermEmbeddings;
    use dpkps_core::input::classes::{ClassSet, OtherLabels};
    use dpkps_core::dp::summary::kde::Features;
    use dpkps_core::dp::summary::{build, KeyphraseSampler, SummaryDoc, SummaryInputs, SummaryParams};
    use dpkps_core::sample::{batched_scores, draw, naive_scores, Candidates, Sampling, Signals};
    let dim = 16;
    let mut emb = TermEmbeddings::new(dim);
    for (t, v) in Features::synthetic_unit_vectors(40, dim, 3).iter().enumerate() {
        emb.insert(t as u32, v).unwrap();
    }
    let terms: Vec<Vec<u32>> = (0..80u32).map(|k| vec![k % 40, (k * 3 + 1) % 40, (k * 7 + 2) % 40]).collect();
    let docs: Vec<SummaryDoc<'_>> = terms.iter().enumerate().map(|(k, t)| SummaryDoc { class: k % 2, terms: t }).collect();
    let classes = ClassSet::declared(&["a", "b"], OtherLabels::Drop).unwrap();
    let cands = Candidates::new(&(0..40).collect::<Vec<_>>(), &emb).unwrap();
    for sampler in KeyphraseSampler::ALL {
        let params = SummaryParams { epsilon: 5.0, sampler, len: 3, features: 128, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
        let mut rng = SecureRng::from_os().unwrap();
        let inputs = SummaryInputs { docs: &docs, classes: &classes, emb: &emb, candidates: &cands.ids, params: &params };
        let (set, spends) = build(inputs, &mut rng).unwrap();
        assert_eq!(spends.len(), 2 * params.ensemble().members());
        if sampler.hist_kind().is_some() {
            let seqs = draw(&set, &cands, &[4, 4], &Sampling::OFF, &mut rng, Signals::Skip).unwrap().sequences;
            assert_eq!(seqs.len(), 8);
            assert!(seqs.iter().all(|s| s.keyphrases.len() == 3 && s.keyphrases.iter().all(|k| *k < 40)));
            continue;
        }
        let f = set.features().unwrap();
        let prefix: &[u32] = if sampler == KeyphraseSampler::Independent { &[] } else { &[5, 9] };
        let fast = batched_scores(&set, &f, &cands, 0, prefix, &emb);
        let slow = naive_scores(&set, &f, &cands, 0, prefix, &emb);
        let scale = slow.iter().fold(1f32, |m, x| m.max(x.abs()));
        assert!(fast.iter().zip(&slow).all(|(a, b)| (a - b).abs() <= 1e-3 * scale));
        let seqs = draw(&set, &cands, &[4, 4], &Sampling::OFF, &mut rng, Signals::Skip).unwrap().sequences;
        assert_eq!(seqs.len(), 8);
        assert!(seqs.iter().all(|s| s.keyphrases.len() == 3));
    }
}

#[wasm_bindgen_test]
fn the_replay_check_finds_the_same_runs_in_the_browser() {
    use dpkps_core::replay::{ReplayCheck, ReplayParams, SyntheticDoc};
    let notes = [
        "The patient was seen today. Unique: she keeps bees at her farm near the lake since spring.",
        "The patient was seen today for chest pain; a plan was agreed.",
    ];
    let doc = |index, text: &str, kp: &[&str]| SyntheticDoc { index, text: text.into(), keyphrases: kp.iter().map(|k| k.to_string()).collect() };
    let docs = vec![
        doc(0, "Ωμέγα: She keeps BEES at her farm near the lake, it said.", &[]),
        doc(1, "The patient was seen today for chest pain.", &["chest pain"]),
    ];
    let check = ReplayCheck::run(docs, notes, ReplayParams::default()).unwrap();
    // The same figures as natively (`replay::tests::the_browser_case_natively`).
    let got: Vec<_> = check.docs.iter().map(|d| (d.longest_run, d.run_outside_keyphrases, d.rare_ngrams, d.flagged)).collect();
    assert_eq!(got, [(9, 9, 2, true), (8, 6, 1, true)]);
    assert_eq!(check.docs[0].longest_span.as_deref(), Some("She keeps BEES at her farm near the lake"));
}
