//! Helpers: more Web Workers running the same model, so that embedding uses more than one core.
//!
//! Why workers and not threads: tract can spread its matrix products over a rayon pool, but in
//! wasm that needs shared memory, which browsers grant only to cross-origin-isolated pages (a
//! server sending COOP/COEP headers, which a curator's plain file server may not), a std built
//! with atomics (nightly `-Zbuild-std`), and a second, unthreaded build for every page served
//! without those headers. Embedding terms needs none of that: batches are independent, so K
//! workers, each with its own copy of the model, embed K batches at once and share nothing. The
//! price is memory, one model per helper (about 145 MB of wasm memory each), hence the cap.
//!
//! A helper is this same worker binary (same script URL, or the same in-page sources in the
//! single-file build: `dpkps_inpage`). It becomes a helper when its first
//! request is a helper message: a JS array whose first element is [`wire::LOAD`] or
//! [`wire::EMBED`].
//!
//! Privacy: the batches are private (which vocabulary terms occur in the corpus is), and they
//! stay inside this page: helpers are dedicated workers of the page's own origin, started by
//! this worker; they never fetch, store nothing, and post only to this worker. They live, with
//! the last terms they embedded in their memory, until the model changes or the page closes,
//! like this worker. Determinism: batches are formed before they are handed out and every
//! worker runs the same single-threaded wasm on the same batch, so an embedding does not depend
//! on which worker made it.
//!
//! The two ends are kept apart so that dependencies go one way: [`wire`] is the message format
//! both ends speak (it depends on neither), [`pool`] is this worker's side (it starts helpers
//! and hands them work), [`serve`] is a helper's side (it answers), and the jobs that share
//! work out, [`embed_share`] (embedding batches) and [`kde_share`] (the DP-KDE sums), drive a
//! [`pool::Pool`]. Nothing here imports a job or the helper side back.

pub mod embed_share;
pub mod kde_share;
pub mod pool;
pub mod serve;
pub mod wire;

use wasm_bindgen::JsCast;

/// This worker's wasm linear memory in bytes. Linear memory only grows, so it is also the
/// peak since the worker started (the benchmark prints it after every run; a helper reports
/// its own with every reply).
pub fn wasm_memory_bytes() -> u64 {
    wasm_bindgen::memory().unchecked_into::<js_sys::WebAssembly::Memory>().buffer().unchecked_into::<js_sys::ArrayBuffer>().byte_length() as u64
}
