//! The bundled sentence model, run natively by tract: parity with sentence-transformers and
//! defined behaviour on bad input. (The same core runs in wasm; see tests/web.rs.)
#![cfg(not(target_arch = "wasm32"))]

use dpkps::embed::onnx::OnnxEmbedder;
use dpkps::embed::Embed;

fn embedder() -> OnnxEmbedder {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/models/");
    let model = std::fs::read(format!("{dir}all-MiniLM-L6-v2.int8w.onnx")).unwrap();
    let tok = std::fs::read(format!("{dir}tokenizer.json")).unwrap();
    OnnxEmbedder::from_bytes(&model, &tok).unwrap()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
fn matches_sentence_transformers_reference_embeddings() {
    let reference: serde_json::Value =
        serde_json::from_str(include_str!("../models/reference_embeddings.json")).unwrap();
    let terms: Vec<&str> = reference["terms"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let want: Vec<Vec<f32>> = reference["emb"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect())
        .collect();
    let mut e = embedder();
    assert_eq!(e.dim(), 384);
    // Batched (padding to the longest) and one at a time must both match.
    let batched = e.embed(&terms).unwrap();
    let mut worst = 1.0f64;
    for (k, term) in terms.iter().enumerate() {
        let single = e.embed(&[term]).unwrap().remove(0);
        for got in [&batched[k], &single] {
            let c = cosine(got, &want[k]);
            worst = worst.min(c);
            assert!(c >= 0.999, "{term:?}: cosine {c}");
        }
    }
    println!("worst cosine vs sentence-transformers over {} terms: {worst:.5}", terms.len());
}

#[test]
fn nasty_inputs_give_defined_unit_vectors() {
    let mut e = embedder();
    let long = "cardiac ".repeat(1500); // far beyond 256 tokens: truncated
    let texts = ["", "\u{0}\u{7}\u{1b}[31m", "心不全と高血圧", "Ωμέγα", long.as_str()];
    let out = e.embed(&texts).unwrap();
    assert_eq!(out.len(), texts.len());
    for (t, v) in texts.iter().zip(&out) {
        assert_eq!(v.len(), 384);
        let n: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((n - 1.0).abs() < 1e-3, "{:?}: norm {n}", &t[..t.len().min(20)]);
    }
    // Truncation: 1,500 repetitions embed like 300 (both exceed 256 tokens).
    let shorter = "cardiac ".repeat(300);
    let v2 = e.embed(&[shorter.as_str()]).unwrap().remove(0);
    assert!(cosine(&out[4], &v2) > 0.9999);
}

#[test]
fn a_model_with_the_wrong_inputs_is_refused_in_plain_words() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/models/");
    let tok = std::fs::read(format!("{dir}tokenizer.json")).unwrap();
    let err = OnnxEmbedder::from_bytes(b"not an onnx file", &tok).err().unwrap().to_string();
    assert!(err.contains("not a readable ONNX model"), "{err}");
    let model = std::fs::read(format!("{dir}all-MiniLM-L6-v2.int8w.onnx")).unwrap();
    let err = OnnxEmbedder::from_bytes(&model, b"{}").err().unwrap().to_string();
    assert!(err.contains("tokenizer.json"), "{err}");
    let wrong = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/wrong_inputs.onnx")).unwrap();
    let err = OnnxEmbedder::from_bytes(&wrong, &tok).err().unwrap().to_string();
    assert!(err.contains("[\"pixels\"]") && err.contains("input_ids"), "{err}");
}

#[test]
fn batches_group_texts_by_token_count_not_bytes() {
    let e = embedder();
    // [CLS] + tokens + [SEP]; a long input counts as the 256 tokens it is truncated to.
    assert_eq!(e.batch_key("cough"), 3);
    assert_eq!(e.batch_key(""), 2);
    assert_eq!(e.batch_key(&"cardiac ".repeat(1500)), 256);
    // A chemical name is many tokens for its bytes; an English phrase of the same length, few.
    let chemical = "1,2-Dimethylhydrazine";
    let phrase = "shortness of breath!!";
    assert_eq!(chemical.len(), phrase.len());
    assert!(e.batch_key(chemical) > e.batch_key(phrase));
    let mut texts = vec![chemical, "cough", phrase];
    dpkps::embed::sort_for_batching(&e, &mut texts, |t| *t);
    assert_eq!(texts, ["cough", phrase, chemical]);
}

/// At batch 1 (what a run embeds with, `cli::run::CliHost::vectors`) a term's vector depends on
/// the term alone, bit for bit, whatever else the private corpus makes the run embed. (In a
/// batch it does not: tract's results depend on a row's position in the batch.)
/// The mechanisms' proofs treat a vector as a function of its public term.
#[test]
fn a_terms_vector_does_not_depend_on_the_terms_embedded_with_it() {
    use dpkps::public_vocab::{Bundled, PublicVocabulary};
    let list = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/www/vocab/medical_mesh2017.txt")).unwrap();
    let vocab = PublicVocabulary::parse_bundled(Bundled::Medical, &list).unwrap();
    let mut e = embedder();
    let probe: Vec<u32> = (0..vocab.len() as u32).step_by(vocab.len() / 12).collect();
    let alone = dpkps::embed::embed_terms(&vocab, &probe, &mut e, &mut |_, _| {}).unwrap();
    // The same terms among 150 others of every length.
    let crowd: Vec<u32> = probe.iter().copied().chain((0..150u32).map(|k| k * 97 % vocab.len() as u32)).collect();
    let with = dpkps::embed::embed_terms(&vocab, &crowd, &mut e, &mut |_, _| {}).unwrap();
    for &t in &probe {
        let (a, b) = (alone.get(t).unwrap(), with.get(t).unwrap());
        assert!(a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()), "term {:?} changed with the terms embedded beside it", vocab.term(t));
    }
    // The page's path: the worker and its helpers pass terms in groups and embed each with
    // `embed_each`; a group must give every term the vector it has alone.
    let crowd_text: Vec<&str> = crowd.iter().map(|&t| vocab.term(t)).collect();
    let grouped = dpkps::embed::embed_each(&mut e, &crowd_text).unwrap();
    for (&t, g) in crowd.iter().zip(&grouped) {
        let a = with.get(t).unwrap();
        assert!(a.iter().zip(g).all(|(x, y)| x.to_bits() == y.to_bits()), "term {:?} differs in a group from alone", vocab.term(t));
    }
}
