//! Where the page and its workers get their assets and worker scripts: from beside the page (the
//! served `dist/`), or from inside it (`dist/dpkps.html`, written by scripts/single_file.py).
//!
//! A page opened from disk has an opaque origin: it cannot fetch the files beside it, and its
//! workers cannot read the page's `blob:` URLs. The single file therefore defines two globals,
//! in the page and again in each worker it starts, and this module looks for them:
//! `dpkpsAssets` (asset path -> Promise of a Blob) and `dpkpsStartWorker()` (a new worker
//! booted from in-page sources). Without them (the served app) nothing changes: relative URLs.
//! Thin on purpose: the two globals are the whole interface; the rest lives in the script.

#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, Worker};

fn global(name: &str) -> Option<JsValue> {
    js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str(name)).ok().filter(|v| !v.is_undefined() && !v.is_null())
}

/// A new app worker (`dpkps-worker`): from in-page sources when the page has them, else from
/// `url` (relative to the page or worker that starts it).
pub fn start_worker(url: &str) -> Result<Worker, JsValue> {
    match global("dpkpsStartWorker").and_then(|f| f.dyn_into::<js_sys::Function>().ok()) {
        Some(start) => start.call0(&JsValue::NULL)?.dyn_into::<Worker>(),
        None => Worker::new(url),
    }
}

/// Whether this page or worker carries its assets inside (the single file).
pub fn has_assets() -> bool {
    global("dpkpsAssets").is_some()
}

/// The in-page copy of the asset at `path` (e.g. `models/tokenizer.json`), or None when the
/// page has no in-page assets (then it is fetched from `path`).
pub async fn asset(path: &str) -> Option<Result<Blob, String>> {
    let entry = js_sys::Reflect::get(&global("dpkpsAssets")?, &JsValue::from_str(path)).ok()?;
    if entry.is_undefined() {
        return Some(Err(format!("{path}: not in this file (dpkps.html)")));
    }
    let blob = JsFuture::from(js_sys::Promise::resolve(&entry)).await;
    Some(
        blob.map_err(|e| format!("{path}: could not be unpacked ({e:?})"))
            .and_then(|b| b.dyn_into::<Blob>().map_err(|_| format!("{path}: not a file"))),
    )
}

/// The bytes of an in-page asset.
pub async fn bytes(blob: &Blob) -> Result<Vec<u8>, String> {
    let buf = JsFuture::from(blob.array_buffer()).await.map_err(|e| format!("{e:?}"))?;
    Ok(js_sys::Uint8Array::new(&buf).to_vec())
}
