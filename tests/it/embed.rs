//! The bundled sentence model, run natively by tract: parity with sentence-transformers and
//! defined behaviour on bad input. (The same core runs in wasm; see crates/core/tests/web.rs.)

use dpkps_embed::onnx::OnnxEmbedder;
use dpkps_core::embed::Embed;

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
        serde_json::from_str(include_str!("../../models/reference_embeddings.json")).unwrap();
    let terms: Vec<&str> = reference["terms"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let want: Vec<Vec<f32>> = reference["emb"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect())
        .collect();
    let mut e = embedder();
    assert_eq!(e.dim(), 384);
    // Every product by the weights (six a layer, six layers) runs on integers
    // (dpkps_embed::int_products): the vectors below are those products'.
    assert_eq!(e.int_products(), 36);
    // And each layer's attention is one operation (dpkps_embed::attention).
    assert_eq!(e.attentions(), 6);
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
    dpkps_core::embed::sort_for_batching(&e, &mut texts, |t| *t);
    assert_eq!(texts, ["cough", phrase, chemical]);
}

/// A term's vector depends on the term alone, bit for bit, whatever else the private corpus
/// makes the run embed (`dpkps_core::embed::rows`): the mechanisms' proofs treat a vector as a
/// function of its public term. Terms are embedded in batches of fixed width, each at its home
/// row among terms of its token count; alone, a term's batch-mates are copies of itself.
#[test]
fn a_terms_vector_does_not_depend_on_the_terms_embedded_with_it() {
    use dpkps_core::embed::rows::{batch_texts, embed_rows, term_batches, TERM_BATCH};
    use dpkps_core::input::public_vocab::{Bundled, PublicVocabulary};
    let list = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/www/vocab/medical_mesh2017.txt")).unwrap();
    let vocab = PublicVocabulary::parse_bundled(Bundled::Medical, &list).unwrap();
    let mut e = embedder();
    // The probe at load found rows independent here, so the batched path is the one tested.
    assert_eq!(e.term_width(), TERM_BATCH);
    let mut probe: Vec<u32> = (0..vocab.len() as u32).step_by(vocab.len() / 24).collect();
    // And the longest terms (over 32 tokens: embedded alone, `rows::MAX_BATCHED_TOKENS`).
    let mut by_len: Vec<u32> = (0..vocab.len() as u32).collect();
    by_len.sort_by_key(|&t| std::cmp::Reverse(e.batch_key(vocab.term(t))));
    assert!(e.batch_key(vocab.term(by_len[0])) > 32);
    probe.extend(&by_len[..6]);
    let alone: Vec<_> = probe.iter().map(|&t| dpkps_core::embed::embed_terms(&vocab, &[t], &mut e, &mut |_, _| {}).unwrap()).collect();
    // The same terms among 400 others of every length (and the long ones among each other).
    let crowd: Vec<u32> = probe.iter().copied().chain(by_len[6..40].iter().copied()).chain((0..400u32).map(|k| k * 97 % vocab.len() as u32)).collect();
    let with = dpkps_core::embed::embed_terms(&vocab, &crowd, &mut e, &mut |_, _| {}).unwrap();
    // The test is worth something only if probes share batches with other terms.
    let mut sorted = crowd.clone();
    sorted.sort_unstable();
    sorted.dedup();
    let batches = term_batches(&e, TERM_BATCH, &sorted, |t| vocab.term(t));
    let batched = probe.iter().filter(|t| batches.iter().any(|b| b.contains(&Some(**t)) && b.len() > 1)).count();
    let shared = probe.iter().filter(|t| batches.iter().any(|b| b.contains(&Some(**t)) && b.iter().flatten().count() > 1)).count();
    assert!(batched >= 8 && shared >= batched / 2, "only {shared} of {batched} batched probes share a batch");
    for (&t, a) in probe.iter().zip(&alone) {
        let (a, b) = (a.get(t).unwrap(), with.get(t).unwrap());
        assert!(a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()), "term {:?} changed with the terms embedded beside it", vocab.term(t));
    }
    // The page's path: the worker lays the batches out and hands runs of them to its helpers,
    // which embed them with `embed_rows`; every term must get the vector it has alone. Here
    // among yet other terms, in the opposite order.
    let mut other: Vec<u32> = probe.iter().copied().chain((0..300u32).map(|k| (k * 131 + 7) % vocab.len() as u32)).collect();
    other.sort_unstable();
    other.dedup();
    other.reverse();
    let batches = term_batches(&e, TERM_BATCH, &other, |t| vocab.term(t));
    let texts: Vec<&str> = batches.iter().flat_map(|b| batch_texts(b, |t| vocab.term(t))).collect();
    let vecs = embed_rows(&mut e, &texts, TERM_BATCH).unwrap();
    for (row, v) in batches.iter().flatten().zip(&vecs) {
        if let Some(t) = row.filter(|t| probe.contains(t)) {
            let a = with.get(t).unwrap();
            assert!(a.iter().zip(v).all(|(x, y)| x.to_bits() == y.to_bits()), "term {:?} differs on the page's path", vocab.term(t));
        }
    }
}

/// The profile (`dpkps bench docs`, the page's document benchmark) counts every document and
/// token, its node times fit inside the model call, and the plan it times is the one documents
/// are embedded by: the same plan rebuilt (batch 1, length open) gives the same bits.
#[test]
fn the_profile_accounts_for_a_documents_model_call() {
    let e = embedder();
    let texts = ["The patient reports chest pain radiating to the left arm.", "No acute distress; lungs clear."];
    let start = std::time::Instant::now();
    let now = || start.elapsed().as_secs_f64() * 1e3;
    let p = dpkps_embed::profile::profile(&e, &texts, &now).unwrap();
    assert_eq!(p.documents, 2);
    assert_eq!(p.tokens, texts.iter().map(|t| e.batch_key(t)).sum::<usize>());
    let nodes: f64 = p.ops.iter().map(|(_, ms, _)| ms).sum();
    assert!(nodes > 0.0 && nodes <= p.model_ms + 1e-6, "node times {nodes} ms against the call's {} ms", p.model_ms);
    assert!(p.ops.iter().any(|(k, _, _)| k.contains("MatMul")), "{:?}", p.ops);
    // Each product of a layer is one row, named by its place in a layer and summed over the 6.
    let ffn = p.ops.iter().find(|(k, _, _)| k.contains("MatMul") && k.contains("intermediate/dense"));
    assert_eq!(ffn.map(|o| o.2), Some(6), "{:?}", p.ops);
    assert!(p.ops.iter().all(|(k, _, _)| !k.contains("layer.")), "{:?}", p.ops);
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/models/");
    let model = std::fs::read(format!("{dir}all-MiniLM-L6-v2.int8w.onnx")).unwrap();
    let plans = dpkps_embed::profile::compare_plans(&model, &e, &texts, &[(1, None)], &now).unwrap();
    assert!(plans[0].2, "the rebuilt one-text plan gives other bits: {plans:?}");
    // The last row: the same plan with its products and attention on tract's f32 kernels, close
    // to the prepared plan's vectors (their difference is the activations' rounding and the
    // attention's exponential).
    let f32_row = &plans[plans.len() - 1].0;
    let cosine: f64 = f32_row.rsplit(' ').next().and_then(|c| c.trim_end_matches(')').parse().ok()).unwrap_or(0.0);
    assert!(f32_row.contains("in tract's f32") && cosine >= 0.9999, "{plans:?}");
}
