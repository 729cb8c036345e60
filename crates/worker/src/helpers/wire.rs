//! The messages between this worker and its helpers, both directions: the tags that open them,
//! how a reply is read, and the layout of the one elaborate request (a share of the DP-KDE
//! sums). Kept apart from both ends ([`super::pool`] sends requests and reads replies,
//! [`super::serve`] reads requests and sends replies) so that neither imports the other and a
//! change of format is made in one place.
//!
//! Every message is a JS array whose first element is its tag. Requests carry the batch's
//! sequence number second (filled in by `Pool::send_request`); replies echo it.

use std::collections::HashSet;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use dpkps_core::embed::TermEmbeddings;
use dpkps_core::dp::summary::{SummaryDoc, SummaryParams};
use dpkps_core::input::public_vocab::TermId;

/// First element of a helper request carrying model and tokenizer bytes.
pub const LOAD: &str = "dpkps-helper-load";
/// First element of a helper request carrying texts to embed: `[EMBED, seq, JSON array of
/// strings, width]`, term batches of `width` rows laid end to end (`dpkps_core::embed::rows`).
pub const EMBED: &str = "dpkps-helper-embed";
/// First element of a helper request carrying a share of the DP-KDE build (`kde_share`).
pub const SUMS: &str = "dpkps-helper-sums";

/// Reply to [`LOAD`]: `[LOADED, memory]`.
pub const LOADED: &str = "loaded";
/// Reply to [`EMBED`]: `[EMBEDDED, seq, Float32Array of the flat vectors, memory]`.
pub const EMBEDDED: &str = "embedded";
/// Reply to [`SUMS`]: `[SUMMED, seq, Float64Array of the flat sums, memory]`.
pub const SUMMED: &str = "summed";
/// Reply to any request the helper could not serve: `[FAILED, seq or null, message]`.
pub const FAILED: &str = "failed";

/// What a helper said, as the pool sees it.
pub enum Said {
    Loaded(u64),
    Embedded(u64, Vec<f32>, u64),
    Summed(u64, Vec<f64>, u64),
    Failed(Option<u64>, String),
}

/// A helper's reply: the worker's `Ready` event (a JSON string) counts as `Loaded` from a
/// starting helper; arrays carry the rest.
pub fn read_reply(data: &JsValue) -> Option<Said> {
    if let Some(s) = data.as_string() {
        return s.contains(r#""kind":"ready""#).then_some(Said::Loaded(0));
    }
    let arr = data.dyn_ref::<js_sys::Array>()?;
    match arr.get(0).as_string()?.as_str() {
        LOADED => Some(Said::Loaded(arr.get(1).as_f64().unwrap_or(0.0) as u64)),
        EMBEDDED => {
            let seq = arr.get(1).as_f64()? as u64;
            let flat = arr.get(2).dyn_into::<js_sys::Float32Array>().ok()?.to_vec();
            Some(Said::Embedded(seq, flat, arr.get(3).as_f64().unwrap_or(0.0) as u64))
        }
        SUMMED => {
            let seq = arr.get(1).as_f64()? as u64;
            let sums = arr.get(2).dyn_into::<js_sys::Float64Array>().ok()?.to_vec();
            Some(Said::Summed(seq, sums, arr.get(3).as_f64().unwrap_or(0.0) as u64))
        }
        FAILED => Some(Said::Failed(arr.get(1).as_f64().map(|s| s as u64), arr.get(2).as_string().unwrap_or_default())),
        _ => None,
    }
}

/// The request for one part: [SUMS, seq, meta, terms, lengths, classes, embedding ids, vectors].
pub fn sums_request(docs: &[SummaryDoc<'_>], classes: usize, emb: &TermEmbeddings, params: &SummaryParams, seed: [u8; 32]) -> Result<js_sys::Array, String> {
    let terms: Vec<u32> = docs.iter().flat_map(|d| d.terms.iter().copied()).collect();
    let lens: Vec<u32> = docs.iter().map(|d| d.terms.len() as u32).collect();
    let cls: Vec<u32> = docs.iter().map(|d| d.class as u32).collect();
    let ids: Vec<TermId> = terms.iter().copied().collect::<HashSet<_>>().into_iter().collect();
    let mut vectors = Vec::with_capacity(ids.len() * emb.dim());
    for &t in &ids {
        vectors.extend_from_slice(emb.get(t).ok_or_else(|| format!("no embedding for term {t}"))?);
    }
    let meta = serde_json::json!({ "params": params, "seed": dpkps_core::base::hex(&seed), "classes": classes, "dim": emb.dim() });
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

/// A [`SUMS`] request as a helper reads it, checked for shape.
pub struct SumsRequest {
    pub params: SummaryParams,
    pub seed: [u8; 32],
    pub classes: usize,
    /// Every document's terms, one after the other.
    pub terms: Vec<u32>,
    /// Each document's number of terms.
    pub lens: Vec<u32>,
    /// Each document's class.
    pub cls: Vec<u32>,
    /// The embeddings of the terms.
    pub emb: TermEmbeddings,
}

/// Reads what [`sums_request`] wrote.
pub fn read_sums_request(arr: &js_sys::Array) -> Result<SumsRequest, String> {
    #[derive(serde::Deserialize)]
    struct Meta {
        params: SummaryParams,
        seed: String,
        classes: usize,
        dim: usize,
    }
    let meta: Meta = serde_json::from_str(&arr.get(2).as_string().ok_or("no parameters")?).map_err(|e| e.to_string())?;
    let u32s = |i: u32| arr.get(i).dyn_into::<js_sys::Uint32Array>().map(|a| a.to_vec()).map_err(|_| "a malformed request".to_string());
    let (terms, lens, cls, ids) = (u32s(3)?, u32s(4)?, u32s(5)?, u32s(6)?);
    let vectors = arr.get(7).dyn_into::<js_sys::Float32Array>().map(|a| a.to_vec()).map_err(|_| "a malformed request".to_string())?;
    let seed = dpkps_core::base::unhex32(&meta.seed).ok_or("a malformed seed")?;
    if meta.dim == 0 || vectors.len() != ids.len() * meta.dim || lens.len() != cls.len() || lens.iter().map(|&l| l as usize).sum::<usize>() != terms.len() {
        return Err("a malformed request".into());
    }
    let mut emb = TermEmbeddings::new(meta.dim);
    for (&t, v) in ids.iter().zip(vectors.chunks_exact(meta.dim)) {
        emb.insert(t, v).map_err(|e| e.to_string())?;
    }
    Ok(SumsRequest { params: meta.params, seed, classes: meta.classes, terms, lens, cls, emb })
}
