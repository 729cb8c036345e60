//! Where the page and its workers get their assets and worker scripts: from beside the page (the
//! served `dist/`), or from inside it (`dist/dpkps.html`, written by scripts/single_file.py).
//!
//! A page opened from disk has an opaque origin: it cannot fetch the files beside it, and its
//! workers cannot read the page's `blob:` URLs. The single file therefore defines two globals,
//! in the page and again in each worker it starts, and this module looks for them:
//! `dpkpsAssets` (asset path -> Promise of a Blob) and `dpkpsStartWorker(relaxed)` (a new worker
//! booted from in-page sources: in the page, of the build asked for; in a worker, of its own
//! build). Without them (the served app) nothing changes: relative URLs.
//! Thin on purpose: the two globals are the whole interface; the rest lives in the script.

#![cfg(target_arch = "wasm32")]

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, Worker};

fn global(name: &str) -> Option<JsValue> {
    js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str(name)).ok().filter(|v| !v.is_undefined() && !v.is_null())
}

/// The two builds of the app worker: the same code, with and without WebAssembly's relaxed SIMD
/// (scripts/worker_relaxed.sh). A module that uses relaxed SIMD does not load at all in a browser
/// without it, so the page asks the browser first ([`WorkerBuild::for_this_browser`]); helper
/// workers start from their worker's own script, so they are always of its build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerBuild {
    /// `f32x4.relaxed_madd` in tract's matrix kernels: one fused multiply-add where the CPU has it.
    RelaxedSimd,
    /// SIMD128 only: every browser the app supports.
    Simd128,
}

/// The smallest module using relaxed SIMD: `(func (result v128) i32.const 1 i8x16.splat
/// i32.const 2 i8x16.splat i8x16.relaxed_swizzle)`. Validating it compiles nothing.
const RELAXED_PROBE: [u8; 36] =
    [0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 15, 1, 13, 0, 65, 1, 253, 15, 65, 2, 253, 15, 253, 128, 2, 11];

impl WorkerBuild {
    /// Relaxed SIMD where this browser validates a module that uses it, else SIMD128.
    pub fn for_this_browser() -> WorkerBuild {
        let probe = js_sys::Uint8Array::from(&RELAXED_PROBE[..]);
        match js_sys::WebAssembly::validate(&probe.into()) {
            Ok(true) => WorkerBuild::RelaxedSimd,
            _ => WorkerBuild::Simd128,
        }
    }

    /// Its loader beside the page (trunk's loader shim; the hook's for the relaxed build).
    fn loader(self) -> &'static str {
        match self {
            WorkerBuild::RelaxedSimd => "./dpkps-worker-relaxed_loader.js",
            WorkerBuild::Simd128 => "./dpkps-worker_loader.js",
        }
    }

    /// How the page names it (the document's `data-worker` attribute, the tests).
    pub fn name(self) -> &'static str {
        match self {
            WorkerBuild::RelaxedSimd => "relaxed-simd",
            WorkerBuild::Simd128 => "simd128",
        }
    }
}

fn in_page_start() -> Option<js_sys::Function> {
    global("dpkpsStartWorker").and_then(|f| f.dyn_into::<js_sys::Function>().ok())
}

/// The page's app worker of `build`: from in-page sources when the page has them (the single
/// file starts the build it is asked for), else from its loader beside the page.
pub fn start_app_worker(build: WorkerBuild) -> Result<Worker, JsValue> {
    match in_page_start() {
        Some(start) => start.call1(&JsValue::NULL, &JsValue::from_bool(build == WorkerBuild::RelaxedSimd))?.dyn_into::<Worker>(),
        None => Worker::new(build.loader()),
    }
}

/// A new worker of the running worker's own build (a helper): from in-page sources when the
/// page has them, else from `url`, the running worker's own script.
pub fn start_worker(url: &str) -> Result<Worker, JsValue> {
    match in_page_start() {
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
