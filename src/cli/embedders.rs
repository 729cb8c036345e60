//! The recipient's documents embedded on every core (`dpkps train`, `predict`, `bench adapt`,
//! `bench train`).
//!
//! tract runs a model on one thread, so the CLI keeps one model instance per thread and hands
//! each the next document as it finishes the last. A document is embedded alone, by the model's
//! plan for one text (`embed::onnx`), as the page's worker and helpers embed them: its vector
//! depends on its text alone, so the matrix is the same bit for bit whatever the thread count
//! (a test says so), and one at a time is also the quickest (measured natively on 600 MTSamples
//! notes, one thread: 32.3 s one at a time, 41.6–42.8 s in batches of 4, 50.9–51.2 s in batches of 32:
//! a batch pads every row to its longest and runs the plan with the batch size left open).
//! Instances beyond the first are loaded only for a set of more than one document.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::channel;
use std::time::Instant;

use super::error::CliError;
use dpkps_adapt::task;
use dpkps_adapt::Matrix;
use dpkps_embed::onnx::OnnxEmbedder;
use dpkps_core::embed::{Embed, EmbedError};

/// Documents per model call (module docs: one).
const BATCH: usize = 1;

/// Model instances, one per thread, loaded from the same bytes.
pub(crate) struct Embedders {
    model: Vec<u8>,
    tokenizer: Vec<u8>,
    loaded: Vec<OnnxEmbedder>,
    threads: usize,
}

impl Embedders {
    /// One instance now; up to `threads` (at least one) when a set is large enough to share.
    pub(crate) fn new(model: Vec<u8>, tokenizer: Vec<u8>, threads: usize) -> Result<Embedders, CliError> {
        let first = OnnxEmbedder::from_bytes(&model, &tokenizer)?;
        Ok(Embedders { model, tokenizer, loaded: vec![first], threads: threads.max(1) })
    }

    /// The model's checksum (for the trained model's file and the report).
    pub(crate) fn checksum(&self) -> &str {
        self.loaded[0].checksum()
    }

    /// `texts` embedded, rows in the texts' order; `what` names the set in progress lines.
    pub(crate) fn embed(&mut self, what: &str, texts: &[String]) -> Result<Matrix, CliError> {
        let t0 = Instant::now();
        let batches = task::batches(&self.loaded[0], texts, BATCH);
        let want = self.threads.min(batches.len()).max(1);
        while self.loaded.len() < want {
            self.loaded.push(OnnxEmbedder::from_bytes(&self.model, &self.tokenizer)?);
        }
        let dim = self.loaded[0].dim();
        let mut data = vec![0f32; texts.len() * dim];
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let mut error: Option<EmbedError> = None;
        let (tx, rx) = channel::<Result<(usize, Vec<Vec<f32>>), EmbedError>>();
        std::thread::scope(|scope| {
            for model in self.loaded.iter_mut().take(want) {
                let (tx, next, failed, batches) = (tx.clone(), &next, &failed, &batches);
                scope.spawn(move || loop {
                    let b = next.fetch_add(1, Ordering::Relaxed);
                    if b >= batches.len() || failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let batch: Vec<&str> = batches[b].iter().map(|&k| texts[k].as_str()).collect();
                    let out = model.embed(&batch).map(|v| (b, v));
                    let stop = out.is_err();
                    if tx.send(out).is_err() || stop {
                        break;
                    }
                });
            }
            drop(tx);
            let (mut done, mut last) = (0, Instant::now());
            for out in rx {
                let placed = out.and_then(|(b, vecs)| {
                    for (&k, v) in batches[b].iter().zip(&vecs) {
                        if v.len() != dim {
                            return Err(EmbedError::Dimension { expected: dim, got: v.len() });
                        }
                        data[k * dim..(k + 1) * dim].copy_from_slice(v);
                    }
                    Ok(vecs.len())
                });
                match placed {
                    Ok(n) => done += n,
                    Err(e) => {
                        failed.store(true, Ordering::Relaxed);
                        error.get_or_insert(e);
                    }
                }
                if last.elapsed().as_secs() >= 10 {
                    eprintln!("  embedding {what}: {done} of {}", texts.len());
                    last = Instant::now();
                }
            }
        });
        if let Some(e) = error {
            return Err(e.into());
        }
        eprintln!("embedded {} {what} in {:.1} s ({want} thread{})", texts.len(), t0.elapsed().as_secs_f64(), if want == 1 { "" } else { "s" });
        Ok(Matrix { rows: texts.len(), cols: dim, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundled(f: &str) -> Vec<u8> {
        std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models").join(f)).expect("bundled model")
    }

    #[test]
    fn every_thread_count_gives_the_same_matrix_as_one_model() {
        let (model, tok) = (bundled(dpkps_embed::onnx::BUNDLED_MODEL), bundled("tokenizer.json"));
        // Texts of many lengths, more of them than threads.
        let texts: Vec<String> = (0..70).map(|k| format!("note {k}: {}", "the patient reports chest pain and shortness of breath. ".repeat(1 + k % 7))).collect();
        let mut one = OnnxEmbedder::from_bytes(&model, &tok).unwrap();
        let want = task::embed_texts(&mut one, &texts, BATCH, &mut |_, _| true).unwrap();
        for threads in [1, 2, 3] {
            let mut e = Embedders::new(model.clone(), tok.clone(), threads).unwrap();
            let got = e.embed("texts", &texts).unwrap();
            assert_eq!((got.rows, got.cols), (want.rows, want.cols));
            assert!(got.data.iter().zip(&want.data).all(|(a, b)| a.to_bits() == b.to_bits()), "{threads} threads");
            assert_eq!(e.loaded.len(), threads, "one instance per thread, no more");
        }
        // Nothing to embed: no thread, an empty matrix.
        let mut e = Embedders::new(model, tok, 4).unwrap();
        assert_eq!(e.embed("nothing", &[]).unwrap().rows, 0);
    }
}
