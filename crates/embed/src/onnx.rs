//! The sentence-embedding model: an ONNX graph run by `tract-onnx`, tokenised by `tokenizers`.
//! Model → optimised plans (once: one for any batch, one for a batch of 1) → run per batch, as
//! tract intends. The same code runs natively and in wasm32.
//!
//! Expected graph (as `models/all-MiniLM-L6-v2.int8w.onnx`): inputs `input_ids`,
//! `attention_mask`, `token_type_ids` (i64, [batch, seq], symbolic) and one output of shape
//! [batch, dim] holding unit-length sentence embeddings (pooling and normalisation inside the
//! graph). Anything else is refused with an error naming what was expected.
//!
//! Long inputs are truncated to 256 tokens (as sentence-transformers does); the tokenizer's own
//! truncation setting is overridden to make sure of it.

use sha2::{Digest, Sha256};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};
use tract_onnx::prelude::*;

use dpkps_core::embed::{Embed, EmbedError};

/// File name of the bundled model under `models/`.
pub const BUNDLED_MODEL: &str = "all-MiniLM-L6-v2.int8w.onnx";
/// How the bundled model is named in the page, the CLI and the privacy report.
pub const BUNDLED_MODEL_NAME: &str = "all-MiniLM-L6-v2 (bundled)";
/// Longest input, in tokens, including [CLS] and [SEP].
pub const MAX_TOKENS: usize = 256;
const INPUTS: [&str; 3] = ["input_ids", "attention_mask", "token_type_ids"];

pub(crate) type Plan = Arc<TypedRunnableModel>;

pub struct OnnxEmbedder {
    /// Any batch size.
    plan: Plan,
    /// Batch size 1.
    one: Plan,
    tokenizer: Tokenizer,
    /// reorder[k]: position in the graph's inputs of INPUTS[k].
    reorder: Vec<usize>,
    dim: usize,
    checksum: String,
    /// Rows of a term batch (`dpkps_core::embed::rows`): `TERM_BATCH` for the bundled model where the
    /// load-time probe found a row's vector independent of its batch-mates, else 1.
    term_width: usize,
    rows_key: String,
    /// Products by the weights run on integers (`crate::int_products`): 36 for the bundled
    /// model, 0 for a model whose weights are not int8.
    int_products: usize,
    /// Attentions run as one operation (`crate::attention`): 6 for the bundled model (one a
    /// layer), 0 for a graph that writes them otherwise.
    attentions: usize,
}

/// Whether `checksum` is the bundled model's, as `models/SHA256SUMS` lists it.
fn is_bundled(checksum: &str) -> bool {
    include_str!("../../../models/SHA256SUMS")
        .lines()
        .any(|l| l.split_once(char::is_whitespace).is_some_and(|(sha, file)| file.trim().trim_start_matches('*') == BUNDLED_MODEL && sha.eq_ignore_ascii_case(checksum)))
}

pub(crate) fn model_err(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Model(e.to_string())
}

/// The graph typed and decluttered (weights folded to f32 constants), before it is optimised
/// for given shapes.
pub(crate) fn decluttered(inference: InferenceModel) -> Result<TypedModel, EmbedError> {
    inference.into_typed().and_then(|t| t.into_decluttered()).map_err(|e| EmbedError::Model(format!("cannot optimise the model: {e}")))
}

/// A decluttered graph prepared to run: its products by int8 weights on integers
/// ([`crate::int_products`]) and each attention as one operation ([`crate::attention`]); how
/// many of each.
pub(crate) fn prepared(decluttered: TypedModel) -> Result<(TypedModel, usize, usize), EmbedError> {
    let (model, products) = crate::int_products::on_integers(decluttered).map_err(|e| EmbedError::Model(format!("cannot prepare the model's products: {e}")))?;
    let (model, attentions) = crate::attention::fused(model).map_err(|e| EmbedError::Model(format!("cannot prepare the model's attention: {e}")))?;
    Ok((model, products, attentions))
}

/// `model` optimised with its batch and sequence axes fixed where given.
pub(crate) fn plan_at(model: &TypedModel, batch: Option<usize>, seq: Option<usize>) -> Result<Plan, EmbedError> {
    let mut subs = std::collections::HashMap::new();
    let shape: Vec<TDim> = model.input_fact(0).map_err(model_err)?.shape.iter().cloned().collect();
    for (axis, fixed) in [(0, batch), (1, seq)] {
        if let (Some(TDim::Sym(sym)), Some(n)) = (shape.get(axis), fixed) {
            subs.insert(sym.clone(), TDim::Val(n as i64));
        }
    }
    model.set_symbols(&subs).and_then(|m| m.into_optimized()).and_then(|m| m.into_runnable()).map_err(model_err)
}

impl OnnxEmbedder {
    /// Loads and optimises the model (once per page or process).
    pub fn from_bytes(model: &[u8], tokenizer: &[u8]) -> Result<OnnxEmbedder, EmbedError> {
        let checksum = dpkps_core::base::hex(&Sha256::digest(model));
        let mut tokenizer = Tokenizer::from_bytes(tokenizer).map_err(|e| EmbedError::Model(format!("tokenizer.json: {e}")))?;
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..Default::default() }))
            .map_err(model_err)?;
        tokenizer.with_padding(Some(PaddingParams { strategy: PaddingStrategy::BatchLongest, ..Default::default() }));

        let inference = tract_onnx::onnx()
            .model_for_read(&mut std::io::Cursor::new(model))
            .map_err(|e| EmbedError::Model(format!("not a readable ONNX model: {e}")))?;
        let names: Vec<String> = inference.inputs.iter().map(|o| inference.node(o.node).name.clone()).collect();
        if names.len() != INPUTS.len() || !INPUTS.iter().all(|want| names.iter().any(|n| n == want)) {
            return Err(EmbedError::Model(format!(
                "the model's inputs are {names:?}; expected {INPUTS:?} (a BERT-style sentence-embedding model)"
            )));
        }
        if inference.outputs.len() != 1 {
            return Err(EmbedError::Model(format!(
                "the model has {} outputs; expected one [batch, dim] sentence embedding",
                inference.outputs.len()
            )));
        }
        let (decluttered, int_products, attentions) = prepared(decluttered(inference)?)?;
        let order: Vec<usize> = INPUTS
            .iter()
            .map(|want| decluttered.inputs.iter().position(|o| decluttered.node(o.node).name == *want).unwrap_or(usize::MAX))
            .collect();
        // A second plan with the batch dimension fixed at 1, for one text per call (the
        // recipient's documents, one at a time: `dpkps_core::adapt::task`; terms where the rows
        // probe fails). tract then resolves fewer shapes per run: 85 against 72 terms/s
        // natively (`dpkps bench embed`), for about 26 MB more (the weights packed once more).
        let one = plan_at(&decluttered, Some(1), None)?;
        let plan = decluttered.into_optimized().and_then(|m| m.into_runnable()).map_err(|e| EmbedError::Model(format!("cannot optimise the model: {e}")))?;
        let mut e = OnnxEmbedder { plan, one, tokenizer, reorder: order, dim: 0, checksum, term_width: 1, rows_key: String::new(), int_products, attentions };
        // The output dimension, read by running the model once on a probe.
        let probe = e.run(&["dimension probe"])?;
        e.dim = probe.first().map_or(0, Vec::len);
        if e.dim == 0 {
            return Err(EmbedError::Model("the model's output is empty; expected [batch, dim]".into()));
        }
        // Batches of several terms only for the bundled model, whose graph is known to be
        // row-wise along the batch axis, and only where the probe finds it so on this machine.
        let probed = e.probe_rows().unwrap_or(None);
        if is_bundled(&e.checksum) && probed.is_some() {
            e.term_width = dpkps_core::embed::rows::TERM_BATCH;
        }
        // The one-row plan's arithmetic too (long terms, and every term at width 1), from the
        // dimension probe's output.
        let mut one_row = Sha256::new();
        probe.iter().flatten().for_each(|x| one_row.update(x.to_le_bytes()));
        let one_row = dpkps_core::base::hex(&one_row.finalize());
        e.rows_key = format!("r{}-{}-{}", e.term_width, probed.as_deref().unwrap_or("unprobed"), &one_row[..12]);
        Ok(e)
    }

    /// Checks, on this machine, that a row of a term batch gets the same bits whatever the
    /// batch's other rows hold (`dpkps_core::embed::rows`), for every token count that is batched (3 to
    /// `MAX_BATCHED_TOKENS`) and every row: each arrangement of made-up word pieces is run again
    /// with the even rows kept and the odd ones changed, and with the odd kept and the even
    /// changed. Every count, not a sample of them: an engine that broke row-independence at one
    /// unprobed count would pass, and its rows key (hence the caches of Ṽ's vectors read under
    /// it) would not change. (In the page this adds about 0.9 s to each load of the model, against
    /// 0.6 s for three counts. Natively, little.)
    /// Some(a hash of the outputs: a fingerprint of the engine's arithmetic, for cache keys) if
    /// every kept row came out the same; None if one did not (or the tokenizer is too small to
    /// make pieces from).
    fn probe_rows(&self) -> Result<Option<String>, EmbedError> {
        let width = dpkps_core::embed::rows::TERM_BATCH as u32;
        let vocab = self.tokenizer.get_vocab_size(true) as u32;
        let ends = self.tokenizer.encode("", true).map_err(model_err)?.get_ids().to_vec();
        let (Some(&cls), Some(&sep), true) = (ends.first(), ends.last(), vocab > 1_100) else { return Ok(None) };
        let mut fingerprint = Sha256::new();
        for len in 3..=dpkps_core::embed::rows::MAX_BATCHED_TOKENS as u32 {
            let row = |salt: u32, r: u32| -> Vec<u32> {
                let inner = (1..len - 1).map(|k| 1_000 + (salt * 7_919 + r * 104_729 + k * 31) % (vocab - 1_000));
                std::iter::once(cls).chain(inner).chain(std::iter::once(sep)).collect()
            };
            let all: Vec<Vec<u32>> = (0..width).map(|r| row(0, r)).collect();
            let odd_changed: Vec<Vec<u32>> = (0..width).map(|r| row(r % 2, r)).collect();
            let even_changed: Vec<Vec<u32>> = (0..width).map(|r| row(2 * ((r + 1) % 2), r)).collect();
            let (a, b, c) = (self.run_ids(&all)?, self.run_ids(&odd_changed)?, self.run_ids(&even_changed)?);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
            for r in 0..width as usize {
                let kept = if r % 2 == 0 { b.get(r) } else { c.get(r) };
                if a.get(r).map(|v| bits(v)) != kept.map(|v| bits(v)) {
                    return Ok(None);
                }
            }
            for v in &a {
                for x in v {
                    fingerprint.update(x.to_le_bytes());
                }
            }
        }
        Ok(Some(dpkps_core::base::hex(&fingerprint.finalize())[..12].to_string()))
    }

    /// What the rows of this model's term batches are and where they were probed (`r8-…-…`:
    /// width, and fingerprints of the engine's arithmetic in the batched plan and the one-row
    /// plan): part of a cached vector's key, so that a vector computed another way (another
    /// width, another engine or CPU) is not read for this one.
    pub fn rows_key(&self) -> &str {
        &self.rows_key
    }

    /// How many of the model's products by its weights run on integers ([`crate::int_products`]).
    pub fn int_products(&self) -> usize {
        self.int_products
    }

    /// How many of the model's attentions run as one operation ([`crate::attention`]).
    pub fn attentions(&self) -> usize {
        self.attentions
    }

    /// A text's token ids as the model sees them ([CLS] … [SEP], truncated, no padding).
    pub(crate) fn ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        Ok(self.tokenizer.encode(text, true).map_err(model_err)?.get_ids().to_vec())
    }

    /// The plan for one text (the one documents are embedded by).
    pub(crate) fn one_plan(&self) -> &Plan {
        &self.one
    }

    fn run(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let enc = self.tokenizer.encode_batch(texts.to_vec(), true).map_err(model_err)?;
        let rows: Vec<Vec<u32>> = enc.iter().map(|e| e.get_ids().iter().zip(e.get_attention_mask()).filter(|(_, &m)| m != 0).map(|(&id, _)| id).collect()).collect();
        self.run_ids(&rows)
    }

    /// Runs the model on rows of token ids (with [CLS] and [SEP]), each padded to the longest.
    fn run_ids(&self, rows: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let b = rows.len();
        let inputs = self.inputs(rows)?;
        let out = if b == 1 { self.one.run(inputs) } else { self.plan.run(inputs) }.map_err(model_err)?;
        let view = out[0].to_plain_array_view::<f32>().map_err(model_err)?;
        if view.ndim() != 2 || view.shape()[0] != b {
            return Err(EmbedError::Model(format!("the model's output has shape {:?}; expected [batch, dim]", view.shape())));
        }
        Ok(view.outer_iter().map(|row| row.iter().copied().collect()).collect())
    }

    /// The graph's three inputs for rows of token ids, each padded (id 0, mask 0) to the longest.
    pub(crate) fn inputs(&self, rows: &[Vec<u32>]) -> Result<TVec<TValue>, EmbedError> {
        self.inputs_padded(rows, 0)
    }

    /// As [`Self::inputs`], padded to at least `len` tokens.
    pub(crate) fn inputs_padded(&self, rows: &[Vec<u32>], len: usize) -> Result<TVec<TValue>, EmbedError> {
        let (b, s) = (rows.len(), rows.iter().map(Vec::len).max().unwrap_or(0).max(len));
        let mut columns = [vec![0i64; b * s], vec![0i64; b * s], vec![0i64; b * s]];
        for (r, ids) in rows.iter().enumerate() {
            for (k, &id) in ids.iter().enumerate() {
                columns[0][r * s + k] = id as i64;
                columns[1][r * s + k] = 1;
            }
        }
        let mut inputs: TVec<TValue> = tvec![];
        for _ in 0..3 {
            inputs.push(Tensor::zero::<i64>(&[0]).map_err(model_err)?.into());
        }
        for (k, col) in columns.iter().enumerate() {
            inputs[self.reorder[k]] = Tensor::from_shape(&[b, s], col).map_err(model_err)?.into();
        }
        Ok(inputs)
    }
}

impl Embed for OnnxEmbedder {
    fn dim(&self) -> usize {
        self.dim
    }

    fn checksum(&self) -> &str {
        &self.checksum
    }

    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.run(texts)
    }

    /// The number of tokens the model will see (after truncation), the length a batch pads to.
    /// A text the tokenizer refuses sorts last; `embed` reports the error.
    fn batch_key(&self, text: &str) -> usize {
        self.tokenizer.encode(text, true).map_or(usize::MAX, |e| e.len())
    }

    fn term_width(&self) -> usize {
        self.term_width
    }
}
