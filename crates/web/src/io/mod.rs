//! The page's browser I/O, with no signals and no views: the bundled assets, downloads,
//! IndexedDB (`jobstore`), `localStorage` and storage persistence (`storage`), Web Locks
//! (`web_lock`), and the LLM step's HTTP (`fetch`, `allowlist`).

pub mod allowlist;
pub mod assets;
pub mod download;
pub mod fetch;
pub mod jobstore;
pub mod storage;
pub mod web_lock;

use wasm_bindgen::{JsCast, JsValue};

/// A JavaScript exception's message, for a sentence.
pub fn js_error(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).unwrap_or_else(|| format!("{e:?}"))
}
