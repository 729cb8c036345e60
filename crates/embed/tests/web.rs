//! The bundled model in tract, compiled to wasm32 and run in headless Chromium
//! (`cargo test --target wasm32-unknown-unknown -p dpkps-embed --test web`). CI does not run
//! it: the embedder is checked in the browser through the app's worker instead (tests/e2e/app.mjs,
//! the reference-vector check), so tract is compiled for wasm32 once, by the release build.
#![cfg(target_arch = "wasm32")]

use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn bundled_model_matches_sentence_transformers_in_the_browser() {
    use dpkps_embed::onnx::OnnxEmbedder;
    use dpkps_core::embed::Embed;
    let model = include_bytes!("../../../models/all-MiniLM-L6-v2.int8w.onnx");
    let tok = include_bytes!("../../../models/tokenizer.json");
    let reference: serde_json::Value = serde_json::from_str(include_str!("../../../models/reference_embeddings.json")).unwrap();
    let terms: Vec<&str> = reference["terms"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let mut e = OnnxEmbedder::from_bytes(model, tok).unwrap();
    let got = e.embed(&terms).unwrap();
    for (k, want) in reference["emb"].as_array().unwrap().iter().enumerate() {
        let want: Vec<f64> = want.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        let dot: f64 = got[k].iter().zip(&want).map(|(a, b)| *a as f64 * b).sum();
        let na: f64 = got[k].iter().map(|a| (*a as f64).powi(2)).sum::<f64>().sqrt();
        let nb: f64 = want.iter().map(|b| b * b).sum::<f64>().sqrt();
        assert!(dot / (na * nb) >= 0.999, "{}: cosine {}", terms[k], dot / (na * nb));
    }
}

