//! Where a document's embedding spends its time: the model's plan for one text run node by
//! node under a clock the caller gives (natively `Instant`, in the worker `performance.now`), the
//! time summed per kind of operation, beside the tokenizer's and the inputs' share. Used by
//! `dpkps bench docs` and the worker's document benchmark; the figures are in
//! docs/benchmarks.md ("Documents in the page and natively").

use std::collections::BTreeMap;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::plan::{eval, SimpleState};

use crate::onnx::{model_err, OnnxEmbedder};
use dpkps_core::embed::EmbedError;

/// Milliseconds spent, summed over the documents profiled.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Profile {
    pub documents: usize,
    /// Tokens the model saw, summed.
    pub tokens: usize,
    pub tokenise_ms: f64,
    /// Building the three input tensors.
    pub inputs_ms: f64,
    /// The plan's nodes, by kind of operation: (kind, milliseconds, nodes of that kind).
    pub ops: Vec<(String, f64, usize)>,
    /// The whole model call (state, every node, output), about the sum of `ops`.
    pub model_ms: f64,
}

/// A node's kind: its operation's name, and for the matrix products (whose cost is most of a
/// call) the node's place in a layer and its inputs' datum types. The place is the ONNX node's
/// name without its layer (`/encoder/layer.3/attention/self/MatMul_1` → `attention/self/MatMul_1`),
/// so that each product of a layer is one row summed over the layers: without it the products
/// were told apart only by their inputs, and a row of the output projections was once read as
/// attention's (docs/benchmarks.md, "The attention products, looked at again").
fn kind(node: &TypedNode, inputs: &[TValue]) -> String {
    let name = node.op().name().to_string();
    if !(name.contains("Mat") || name.contains("EinSum") || name.contains("Gemm") || name == "IntProduct") {
        return name;
    }
    let place = match node.name.split_once("/layer.") {
        Some((_, rest)) => rest.split_once('/').map_or(rest, |(_, p)| p),
        None => node.name.as_str(),
    };
    let types: Vec<String> = inputs.iter().map(|t| format!("{:?}", t.datum_type())).collect();
    format!("{name} {place} ({})", types.join("×"))
}

/// Profiles the one-text plan on each of `texts`, one at a time, as documents are embedded.
pub fn profile(e: &OnnxEmbedder, texts: &[&str], now: &dyn Fn() -> f64) -> Result<Profile, EmbedError> {
    let mut p = Profile::default();
    let mut ops: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    let plan = e.one_plan();
    for text in texts {
        let t0 = now();
        let ids = e.ids(text)?;
        let t1 = now();
        let inputs = e.inputs(std::slice::from_ref(&ids))?;
        let t2 = now();
        let mut state = SimpleState::new(plan).map_err(model_err)?;
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        state
            .run_plan_with_eval(inputs, |ctx, st, node, inp| {
                let k = kind(node, &inp);
                let t = now();
                let out = eval(ctx, st, node, inp);
                let slot = ops.entry(k.clone()).or_default();
                slot.0 += now() - t;
                *seen.entry(k).or_default() += 1;
                out
            })
            .map_err(model_err)?;
        let t3 = now();
        for (k, n) in seen {
            let slot = ops.entry(k).or_default();
            slot.1 = slot.1.max(n);
        }
        p.documents += 1;
        p.tokens += ids.len();
        p.tokenise_ms += t1 - t0;
        p.inputs_ms += t2 - t1;
        p.model_ms += t3 - t2;
    }
    let mut ops: Vec<(String, f64, usize)> = ops.into_iter().map(|(k, (ms, n))| (k, ms, n)).collect();
    ops.sort_by(|a, b| b.1.total_cmp(&a.1));
    p.ops = ops;
    Ok(p)
}

impl Profile {
    /// A plain-text table: one line per kind of operation, then tokenising and inputs.
    pub fn table(&self) -> String {
        let per = |ms: f64| ms / self.documents.max(1) as f64;
        let mut s = format!(
            "{} documents, {:.0} tokens each on average; model {:.2} ms a document\n",
            self.documents,
            self.tokens as f64 / self.documents.max(1) as f64,
            per(self.model_ms)
        );
        for (k, ms, n) in &self.ops {
            s += &format!("  {:>8.2} ms  {:>5.1}%  {n:>3} nodes  {k}\n", per(*ms), 100.0 * ms / self.model_ms.max(1e-9));
        }
        s += &format!("  {:>8.2} ms  tokenising\n  {:>8.2} ms  input tensors\n", per(self.tokenise_ms), per(self.inputs_ms));
        s
    }
}

/// Experiments on the plans: for each (batch, seq) fixed (None: left open), milliseconds per
/// document over `texts` run `batch` at a time padded to `seq`, and whether every vector came out
/// bit for bit as the one-text plan makes it; then one row for the one-text plan with every
/// product and attention left to tract (the vectors are unit length: their dot product is the
/// cosine).
pub fn compare_plans(
    model: &[u8],
    e: &OnnxEmbedder,
    texts: &[&str],
    shapes: &[(usize, Option<usize>)],
    now: &dyn Fn() -> f64,
) -> Result<Vec<(String, f64, bool, f64)>, EmbedError> {
    let inference = tract_onnx::onnx().model_for_read(&mut std::io::Cursor::new(model)).map_err(model_err)?;
    let in_f32 = crate::onnx::decluttered(inference)?;
    let typed = crate::onnx::prepared(in_f32.clone())?.0;
    let ids: Vec<Vec<u32>> = texts.iter().map(|t| e.ids(t)).collect::<Result<_, _>>()?;
    let run = |plan: &crate::onnx::Plan, rows: &[Vec<u32>], seq: usize| -> Result<Vec<Vec<f32>>, EmbedError> {
        let out = plan.run(e.inputs_padded(rows, seq)?).map_err(model_err)?;
        let view = out[0].to_plain_array_view::<f32>().map_err(model_err)?;
        Ok(view.outer_iter().map(|r| r.iter().copied().collect()).collect())
    };
    let base: Vec<Vec<f32>> = ids.iter().map(|r| run(e.one_plan(), std::slice::from_ref(r), 0).map(|mut v| v.remove(0))).collect::<Result<_, _>>()?;
    let same_bits = |v: &[f32], k: usize| v.iter().zip(&base[k]).all(|(a, b)| a.to_bits() == b.to_bits());
    let mut out = Vec::new();
    for &(batch, seq) in shapes {
        let t = now();
        let plan = crate::onnx::plan_at(&typed, Some(batch), seq)?;
        let build = now() - t;
        let t = now();
        let mut same = true;
        let mut k = 0;
        for chunk in ids.chunks(batch) {
            if chunk.len() < batch {
                break;
            }
            let vecs = run(&plan, chunk, seq.unwrap_or(0))?;
            for v in vecs {
                same &= same_bits(&v, k);
                k += 1;
            }
        }
        out.push((format!("batch {batch}, length {}", seq.map_or("open".into(), |s| s.to_string())), (now() - t) / k.max(1) as f64, same, build));
    }
    // The same documents one at a time with every product and attention on tract's f32 kernels,
    // as before `crate::int_products` and `crate::attention`: its time, and how far its vectors
    // are from the prepared plan's.
    let t = now();
    let plan = crate::onnx::plan_at(&in_f32, Some(1), None)?;
    let build = now() - t;
    let t = now();
    let (mut lowest, mut same) = (1f64, true);
    for (k, row) in ids.iter().enumerate() {
        let v = run(&plan, std::slice::from_ref(row), 0)?.remove(0);
        lowest = lowest.min(v.iter().zip(&base[k]).map(|(a, b)| *a as f64 * *b as f64).sum::<f64>());
        same &= same_bits(&v, k);
    }
    out.push((format!("one text, all of it in tract's f32 (lowest cosine to the prepared plan's vectors {lowest:.6})"), (now() - t) / ids.len().max(1) as f64, same, build));
    Ok(out)
}
