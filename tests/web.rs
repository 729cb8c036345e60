//! The pipeline core, compiled to wasm32 and run in headless Chromium
//! (`cargo test --target wasm32-unknown-unknown --test web`; wasm-bindgen-test-runner drives
//! chromedriver). These check that the same core behaves the same in the browser, and that
//! the browser's secure random source is what feeds the DP noise.
#![cfg(target_arch = "wasm32")]

use dpkps::corpus::{Corpus, Fields, Format};
use dpkps::dp::vocabulary::VocabParams;
use dpkps::dp::SecureRng;
use dpkps::pipeline::MatchingSink;
use dpkps::vocab::{Matcher, PublicVocabulary};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

const CSV: &[u8] = b"text,label\n\"Congestive heart-failure; chest pain.\",cardio\n\"Asthma, cough and chest pain\",pulmo\n\"  \",cardio\n";

#[wasm_bindgen_test]
fn csv_ingestion_counts_and_fingerprints() {
    let fields = Fields { text: Some("text".into()), label: Some("label".into()) };
    let c = Corpus::read(CSV, "in.csv", Format::Csv, &fields).unwrap();
    assert_eq!(c.stats.documents, 2);
    assert_eq!(c.stats.empty_skipped, 1);
    assert_eq!(c.fingerprint.len(), 64);
}

#[wasm_bindgen_test]
fn matching_is_longest_first_in_document_order() {
    let v = PublicVocabulary::parse("t", b"Heart Failure\nheart\nChest Pain\nAsthma\nCough\n").unwrap();
    let m = Matcher::new(&v).unwrap();
    let fields = Fields { text: Some("text".into()), label: Some("label".into()) };
    let mut sink = MatchingSink::new(Some(&m), 10, true);
    sink.read(CSV, "in.csv", Format::Csv, &fields, None).unwrap();
    let mc = sink.finish("in.csv").unwrap();
    let terms: Vec<Vec<&str>> = mc.docs.iter().map(|d| d.terms.iter().map(|&t| v.term(t)).collect()).collect();
    assert_eq!(terms, vec![vec!["Heart Failure", "Chest Pain"], vec!["Asthma", "Cough", "Chest Pain"]]);
}

#[wasm_bindgen_test]
fn dp_vocabulary_runs_on_browser_randomness() {
    // SecureRng::from_os uses crypto.getRandomValues here; two generators must differ.
    let v = PublicVocabulary::parse("t", b"a\nb\nc\nd\ne\nf\ng\nh\n").unwrap();
    let m = Matcher::new(&v).unwrap();
    let mut sink = MatchingSink::new(Some(&m), 4, false);
    let fields = Fields { text: Some("text".into()), label: None };
    sink.read(&b"text\na b\nb c\nc d\n"[..], "x.csv", Format::Csv, &fields, None).unwrap();
    let mc = sink.finish("x.csv").unwrap();
    let params = VocabParams { epsilon: 1.0, top_n: 3, terms_per_doc: 2 };
    let mut draws = Vec::new();
    for _ in 0..8 {
        let mut rng = SecureRng::from_os().unwrap();
        let (pv, spend) = mc.dp_vocabulary(&v, &params, &mut rng).unwrap();
        assert_eq!(pv.terms.len(), 3);
        assert_eq!(spend.epsilon, 1.0);
        draws.push(pv.terms.iter().map(|t| t.noisy_count).collect::<Vec<_>>());
    }
    draws.dedup();
    assert!(draws.len() > 1, "eight runs gave identical noise: the random source is not random");
}
