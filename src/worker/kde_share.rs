//! The DP-KDE build shared with helper workers: the one stage that grows with the number of
//! documents (60,000 notes, L = 10 prefixes each, I = 2048 features).
//!
//! The exact sums are integers (`kde::exact_sums`): the sums of a split of the documents add up
//! to those of all of them, bit for bit, whoever computes each part. So the documents are cut in
//! contiguous parts, one per idle helper plus one here; each helper gets its part's term lists
//! and the embeddings of those terms, this worker computes its own part meanwhile, and the
//! parts are added before the noise is drawn here (`kde::build_from_sums`). The release is the
//! one the single-worker build gives, for the same seed; the noise never leaves this worker. A
//! part whose helper fails, or holds it far longer than this worker took for its own, is
//! computed here instead.
//!
//! The helpers are bare (`Pool::start_bare`): no model, so about the memory of one share each.
//! Privacy: like the embedding batches (`pool`), the shares are private and stay inside the
//! page; the helpers store nothing, fetch nothing, and post only to this worker.

use std::collections::HashSet;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::pool::{Pool, SUMS};
use super::{at, now_ms, sleep, Stop, CANCEL};
use crate::classes::ClassSet;
use crate::dp::SecureRng;
use crate::embed::TermEmbeddings;
use crate::summary::kde::split::SplitSums;
use crate::summary::{self as kde, DpKdeSet, KdeDoc, KdeParams};
use crate::ledger::Spend;
use crate::protocol::Stage;
use crate::vocab::TermId;

/// Fewer documents are built here alone (a helper's start and the copies cost more).
const MIN_DOCS: usize = 4_000;

/// `kde::build`, with the sums shared with the idle helpers of `pool` when it is worth it.
#[allow(clippy::too_many_arguments)]
pub(super) async fn build(
    docs: &[KdeDoc<'_>],
    classes: &ClassSet,
    emb: &TermEmbeddings,
    candidates: &[TermId],
    params: &KdeParams,
    pool: Option<&mut Pool>,
    rng: &mut SecureRng,
) -> Result<(DpKdeSet, Vec<Spend>), Stop> {
    let pool = pool.and_then(|p| {
        p.poll(); // helpers that have started since are idle now
        (p.idle() > 0 && params.sampler.hist_kind().is_none() && docs.len() >= MIN_DOCS).then_some(p)
    });
    let Some(pool) = pool else {
        return kde::build(docs, classes, emb, candidates, params, rng).map_err(at(Stage::Kde));
    };
    let seed = kde::draw_seed(rng);
    // The split's bookkeeping (each part added exactly once) is `kde::split`, tested natively.
    let mut split = SplitSums::new(docs.len(), pool.idle() + 1, classes.len(), params);
    // Parts 1.. to the helpers; part 0 here. A part not sent is computed by `finish`.
    for (p, range) in split.ranges().to_vec().into_iter().enumerate().skip(1) {
        if let Some(seq) = request(&docs[range], classes.len(), emb, params, seed).ok().and_then(|msg| pool.send_request(&msg)) {
            split.sent(p, seq);
        }
    }
    let t0 = now_ms();
    let here = kde::exact_sums(&docs[split.ranges()[0].clone()], classes.len(), emb, params, seed).map_err(at(Stage::Kde))?;
    split.add(0, here);
    let here_ms = now_ms() - t0;
    let waited = now_ms();
    while split.waiting() {
        for r in pool.poll() {
            split.reply(r.seq, r.result.is_ok().then_some(r.sums.as_slice()));
        }
        if CANCEL.get() {
            return Err(Stop::Cancelled);
        }
        // A helper that hangs must not hang the run: its part is computed here.
        if split.waiting() && now_ms() - waited > 5_000.0 + 2.0 * here_ms {
            split.give_up();
            break;
        }
        sleep(2).await;
    }
    let total = split.finish(|range| kde::exact_sums(&docs[range], classes.len(), emb, params, seed)).map_err(at(Stage::Kde))?;
    kde::build_from_sums(docs, classes, emb, candidates, params, seed, total, rng).map_err(at(Stage::Kde))
}

/// The request for one part: [SUMS, seq, meta, terms, lengths, classes, embedding ids, vectors].
fn request(docs: &[KdeDoc<'_>], classes: usize, emb: &TermEmbeddings, params: &KdeParams, seed: [u8; 32]) -> Result<js_sys::Array, String> {
    let terms: Vec<u32> = docs.iter().flat_map(|d| d.terms.iter().copied()).collect();
    let lens: Vec<u32> = docs.iter().map(|d| d.terms.len() as u32).collect();
    let cls: Vec<u32> = docs.iter().map(|d| d.class as u32).collect();
    let ids: Vec<TermId> = terms.iter().copied().collect::<HashSet<_>>().into_iter().collect();
    let mut vectors = Vec::with_capacity(ids.len() * emb.dim());
    for &t in &ids {
        vectors.extend_from_slice(emb.get(t).ok_or_else(|| format!("no embedding for term {t}"))?);
    }
    let meta = serde_json::json!({ "params": params, "seed": crate::corpus::hex(&seed), "classes": classes, "dim": emb.dim() });
    let msg = js_sys::Array::new();
    msg.push(&SUMS.into());
    msg.push(&JsValue::NULL);
    msg.push(&meta.to_string().into());
    msg.push(&js_sys::Uint32Array::from(terms.as_slice()));
    msg.push(&js_sys::Uint32Array::from(lens.as_slice()));
    msg.push(&js_sys::Uint32Array::from(cls.as_slice()));
    msg.push(&js_sys::Uint32Array::from(ids.as_slice()));
    msg.push(&js_sys::Float32Array::from(vectors.as_slice()));
    Ok(msg)
}

/// A helper's side: computes the part's sums, flattened (class, member, feature).
pub(super) fn serve(arr: &js_sys::Array) -> Result<Vec<f64>, String> {
    #[derive(serde::Deserialize)]
    struct Meta {
        params: KdeParams,
        seed: String,
        classes: usize,
        dim: usize,
    }
    let meta: Meta = serde_json::from_str(&arr.get(2).as_string().ok_or("no parameters")?).map_err(|e| e.to_string())?;
    let u32s = |i: u32| arr.get(i).dyn_into::<js_sys::Uint32Array>().map(|a| a.to_vec()).map_err(|_| "a malformed request".to_string());
    let (terms, lens, cls, ids) = (u32s(3)?, u32s(4)?, u32s(5)?, u32s(6)?);
    let vectors = arr.get(7).dyn_into::<js_sys::Float32Array>().map(|a| a.to_vec()).map_err(|_| "a malformed request".to_string())?;
    let mut seed = [0u8; 32];
    if meta.seed.len() != 64 {
        return Err("a malformed seed".into());
    }
    for (i, b) in seed.iter_mut().enumerate() {
        *b = u8::from_str_radix(&meta.seed[2 * i..2 * i + 2], 16).map_err(|e| e.to_string())?;
    }
    if meta.dim == 0 || vectors.len() != ids.len() * meta.dim || lens.len() != cls.len() || lens.iter().map(|&l| l as usize).sum::<usize>() != terms.len() {
        return Err("a malformed request".into());
    }
    let mut emb = TermEmbeddings::new(meta.dim);
    for (&t, v) in ids.iter().zip(vectors.chunks_exact(meta.dim)) {
        emb.insert(t, v).map_err(|e| e.to_string())?;
    }
    let mut docs = Vec::with_capacity(lens.len());
    let mut at = 0;
    for (&l, &c) in lens.iter().zip(&cls) {
        docs.push(KdeDoc { class: c as usize, terms: &terms[at..at + l as usize] });
        at += l as usize;
    }
    let sums = kde::exact_sums(&docs, meta.classes, &emb, &meta.params, seed).map_err(|e| e.to_string())?;
    Ok(sums.iter().flatten().flatten().map(|&v| v as f64).collect())
}
