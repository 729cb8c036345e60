//! A helper's side: what this worker does when it was started as a helper (see [`super`]) and
//! is sent [`LOAD`], [`EMBED`] or [`SUMS`]. It holds at most the model; it reads its requests
//! and answers in the format of [`super::wire`], and knows nothing of the pool that sent them.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::wasm_memory_bytes;
use super::wire::{read_sums_request, EMBED, EMBEDDED, FAILED, LOAD, LOADED, SUMMED, SUMS};
use dpkps_embed::onnx::OnnxEmbedder;
use dpkps_core::embed::Embed;
use dpkps_core::dp::summary::{parts, SummaryDoc};

thread_local! {
    /// The model, when this worker is a helper.
    static HELPER_MODEL: RefCell<Option<OnnxEmbedder>> = const { RefCell::new(None) };
}

fn reply(parts: &[JsValue]) {
    let arr = js_sys::Array::new();
    for p in parts {
        arr.push(p);
    }
    let scope: web_sys::DedicatedWorkerGlobalScope = js_sys::global().unchecked_into();
    let _ = scope.post_message(&arr);
}

/// If `data` is a helper request, serves it (this worker is then a helper) and returns true.
pub fn serve(data: &JsValue) -> bool {
    let Some(arr) = data.dyn_ref::<js_sys::Array>() else { return false };
    match arr.get(0).as_string().as_deref() {
        Some(LOAD) => {
            let model = arr.get(1).dyn_into::<js_sys::Uint8Array>().map(|a| a.to_vec());
            let tok = arr.get(2).dyn_into::<js_sys::Uint8Array>().map(|a| a.to_vec());
            let loaded = match (model, tok) {
                (Ok(m), Ok(t)) => OnnxEmbedder::from_bytes(&m, &t).map_err(|e| e.to_string()),
                _ => Err("the helper was sent no model".to_string()),
            };
            match loaded {
                Ok(e) => {
                    HELPER_MODEL.with(|h| *h.borrow_mut() = Some(e));
                    reply(&[LOADED.into(), JsValue::from_f64(wasm_memory_bytes() as f64)]);
                }
                Err(e) => reply(&[FAILED.into(), JsValue::NULL, e.into()]),
            }
            true
        }
        Some(EMBED) => {
            let seq = arr.get(1);
            let texts: Result<Vec<String>, String> = arr
                .get(2)
                .as_string()
                .ok_or_else(|| "no texts".to_string())
                .and_then(|j| serde_json::from_str(&j).map_err(|e| e.to_string()));
            // The sender's width: batches are cut by the worker and run here as cut; a width of
            // several rows only if this helper's own probe found rows independent too.
            let width = arr.get(3).as_f64().filter(|w| *w >= 1.0 && *w <= 64.0 && w.fract() == 0.0).map(|w| w as usize).ok_or_else(|| "no width".to_string());
            let out = texts.and_then(|texts| {
                let width = width?;
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                HELPER_MODEL.with(|h| match h.borrow_mut().as_mut() {
                    Some(m) if width > 1 && width != m.term_width() => Err(format!("batches of {width} rows, but this helper's model embeds {}", m.term_width())),
                    Some(m) => dpkps_core::embed::rows::embed_rows(m, &refs, width).map_err(|e| e.to_string()),
                    None => Err("the helper has no model".to_string()),
                })
            });
            match out {
                Ok(vecs) => {
                    let flat: Vec<f32> = vecs.concat();
                    let mem = JsValue::from_f64(wasm_memory_bytes() as f64);
                    reply(&[EMBEDDED.into(), seq, js_sys::Float32Array::from(flat.as_slice()).into(), mem]);
                }
                Err(e) => reply(&[FAILED.into(), seq, e.into()]),
            }
            true
        }
        Some(SUMS) => {
            let seq = arr.get(1);
            match sums(arr) {
                Ok(sums) => {
                    let mem = JsValue::from_f64(wasm_memory_bytes() as f64);
                    reply(&[SUMMED.into(), seq, js_sys::Float64Array::from(sums.as_slice()).into(), mem]);
                }
                Err(e) => reply(&[FAILED.into(), seq, e.into()]),
            }
            true
        }
        _ => false,
    }
}

/// A share of the DP-KDE build (`super::kde_share`): the part's exact sums, flattened (class,
/// member, feature). No noise: that is drawn by the worker that asked, over all the parts.
fn sums(arr: &js_sys::Array) -> Result<Vec<f64>, String> {
    let req = read_sums_request(arr)?;
    let mut docs = Vec::with_capacity(req.lens.len());
    let mut at = 0;
    for (&l, &c) in req.lens.iter().zip(&req.cls) {
        docs.push(SummaryDoc { class: c as usize, terms: &req.terms[at..at + l as usize] });
        at += l as usize;
    }
    parts::compute_part(&docs, req.classes, &req.emb, &req.params, req.seed).map_err(|e| e.to_string())
}
