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
//! single-file build: `crate::inpage`). It becomes a helper when its first
//! request is a helper message: a JS array whose first element is [`LOAD`] or [`EMBED`].
//!
//! Privacy: the batches are private (which vocabulary terms occur in the corpus is), and they
//! stay inside this page: helpers are dedicated workers of the page's own origin, started by
//! this worker; they never fetch, store nothing, and post only to this worker. They live, with
//! the last terms they embedded in their memory, until the model changes or the page closes,
//! like this worker. Determinism: batches are formed before they are handed out and every
//! worker runs the same single-threaded wasm on the same batch, so an embedding does not depend
//! on which worker made it.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker};

use crate::embed::onnx::OnnxEmbedder;
use crate::embed::Embed;

/// Most helpers started, whatever the core count: each holds its own model.
pub const MAX_HELPERS: usize = 3;
/// First element of a helper request carrying model and tokenizer bytes.
pub const LOAD: &str = "dpkps-helper-load";
/// First element of a helper request carrying a batch of texts (a JSON array of strings).
pub const EMBED: &str = "dpkps-helper-embed";
/// First element of a helper request carrying a share of the DP-KDE build (`kde_share`).
pub const SUMS: &str = "dpkps-helper-sums";

/// A finished batch: its sequence number, the helper that answered, and the flat embeddings
/// or why there are none.
pub struct Reply {
    pub seq: u64,
    pub slot: usize,
    pub result: Result<Vec<f32>, String>,
    /// A share of the DP-KDE sums (`kde_share`); empty for embeddings.
    pub sums: Vec<f64>,
}

/// What a helper said, as the pool sees it.
enum Said {
    Loaded(u64),
    Embedded(u64, Vec<f32>, u64),
    Summed(u64, Vec<f64>, u64),
    Failed(Option<u64>, String),
}

/// This worker's wasm linear memory in bytes. Linear memory only grows, so it is also the
/// peak since the worker started (the benchmark prints it after every run).
pub fn wasm_memory_bytes() -> u64 {
    wasm_bindgen::memory().unchecked_into::<js_sys::WebAssembly::Memory>().buffer().unchecked_into::<js_sys::ArrayBuffer>().byte_length() as u64
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum SlotState {
    /// Started; its wasm is not running yet (a message now could be lost).
    Starting,
    Loading,
    Idle,
    Busy(u64),
    /// Crashed or refused the model: never used again.
    Dead,
}

struct Slot {
    worker: Worker,
    state: SlotState,
    /// The helper's wasm memory in bytes, as of its last reply (0: not known yet).
    memory: u64,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(web_sys::ErrorEvent)>,
}

/// Helper workers holding one model (identified by its checksum).
pub struct Pool {
    slots: Vec<Slot>,
    inbox: Rc<RefCell<VecDeque<(usize, Said)>>>,
    /// Model and tokenizer bytes for helpers still starting; dropped once none is.
    bytes: Option<(js_sys::Uint8Array, js_sys::Uint8Array)>,
    checksum: String,
    next_seq: u64,
}

impl Drop for Pool {
    fn drop(&mut self) {
        for s in &self.slots {
            // Unhook first: an event already queued must not reach a freed closure.
            s.worker.set_onmessage(None);
            s.worker.set_onerror(None);
            s.worker.terminate();
        }
    }
}

/// How many helpers this machine should get: one per core beyond the one this worker uses (the
/// page's own thread is mostly idle meanwhile), at most [`MAX_HELPERS`].
pub fn helpers_for_this_machine() -> usize {
    let scope: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
    let cores = scope.navigator().hardware_concurrency() as usize;
    cores.saturating_sub(1).min(MAX_HELPERS)
}

impl Pool {
    /// Starts `count` helpers for the model in `model`/`tokenizer` (bytes as loaded by this
    /// worker). They load it in the background; [`Pool::poll`] moves them along.
    pub fn start(count: usize, model: &[u8], tokenizer: &[u8], checksum: &str) -> Result<Pool, String> {
        Pool::spawn(count, Some((js_sys::Uint8Array::from(model), js_sys::Uint8Array::from(tokenizer))), checksum)
    }

    /// Starts `count` helpers without a model, for computations that need none (the DP-KDE
    /// build's shares, `kde_share`): about the memory of one job each, no model's 145 MB.
    pub fn start_bare(count: usize) -> Result<Pool, String> {
        Pool::spawn(count, None, "")
    }

    fn spawn(count: usize, bytes: Option<(js_sys::Uint8Array, js_sys::Uint8Array)>, checksum: &str) -> Result<Pool, String> {
        let scope: web_sys::WorkerGlobalScope = js_sys::global().unchecked_into();
        let url = scope.location().href();
        let mut pool = Pool { slots: Vec::with_capacity(count), inbox: Rc::default(), bytes, checksum: checksum.to_string(), next_seq: 0 };
        let inbox = &pool.inbox;
        for k in 0..count {
            // On an error, dropping `pool` terminates the helpers started so far.
            let worker = crate::inpage::start_worker(&url).map_err(|e| format!("cannot start a helper worker: {e:?}"))?;
            let q = Rc::clone(inbox);
            let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
                if let Some(said) = read_reply(&ev.data()) {
                    q.borrow_mut().push_back((k, said));
                }
            });
            let q = Rc::clone(inbox);
            let on_error = Closure::<dyn FnMut(web_sys::ErrorEvent)>::new(move |ev: web_sys::ErrorEvent| {
                // Handled here: unhandled, the error would also reach the page as this worker's.
                ev.prevent_default();
                q.borrow_mut().push_back((k, Said::Failed(None, format!("helper crashed: {}", ev.message()))));
            });
            worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
            worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
            pool.slots.push(Slot { worker, state: SlotState::Starting, memory: 0, _on_message: on_message, _on_error: on_error });
        }
        Ok(pool)
    }

    pub fn checksum(&self) -> &str {
        &self.checksum
    }

    /// Helpers that have loaded the model and can take a batch.
    pub fn idle(&self) -> usize {
        self.slots.iter().filter(|s| s.state == SlotState::Idle).count()
    }

    /// Helpers still starting, loading, or busy (perhaps with a batch of a cancelled job).
    pub fn pending(&self) -> usize {
        self.slots.iter().filter(|s| matches!(s.state, SlotState::Starting | SlotState::Loading | SlotState::Busy(_))).count()
    }

    /// The live helpers' wasm memory in bytes, as each last reported it.
    pub fn memory(&self) -> Vec<u64> {
        self.slots.iter().filter(|s| s.state != SlotState::Dead).map(|s| s.memory).collect()
    }

    /// Helpers that are not dead.
    pub fn alive(&self) -> usize {
        self.slots.iter().filter(|s| s.state != SlotState::Dead).count()
    }

    /// Hands `texts` to an idle helper; returns the batch's sequence number, or None if no
    /// helper is idle (or posting failed, which kills that helper).
    pub fn send(&mut self, texts: &[&str]) -> Option<u64> {
        self.slots.iter().position(|s| s.state == SlotState::Idle)?;
        let json = serde_json::to_string(texts).ok()?;
        self.send_request(&js_sys::Array::of3(&EMBED.into(), &JsValue::NULL, &json.into()))
    }

    /// Hands a request (a JS array whose first element is a helper kind, second element
    /// filled in here with the sequence number) to an idle helper; returns the sequence number,
    /// or None if no helper is idle (or posting failed, which kills that helper).
    pub fn send_request(&mut self, msg: &js_sys::Array) -> Option<u64> {
        let k = self.slots.iter().position(|s| s.state == SlotState::Idle)?;
        self.next_seq += 1;
        let seq = self.next_seq;
        msg.set(1, JsValue::from_f64(seq as f64));
        match self.slots[k].worker.post_message(msg) {
            Ok(()) => {
                self.slots[k].state = SlotState::Busy(seq);
                Some(seq)
            }
            Err(_) => {
                self.kill(k);
                None
            }
        }
    }

    /// Stops using helper `k` (e.g. it answered with the wrong number of floats).
    pub fn retire(&mut self, k: usize) {
        self.kill(k);
    }

    fn kill(&mut self, k: usize) {
        self.slots[k].state = SlotState::Dead;
        self.slots[k].worker.terminate();
    }

    /// Handles what the helpers said since the last call. Returns finished batches; a batch
    /// whose helper died is returned as an error, so the caller can embed it itself.
    pub fn poll(&mut self) -> Vec<Reply> {
        let mut done = Vec::new();
        let said: Vec<(usize, Said)> = self.inbox.borrow_mut().drain(..).collect();
        for (k, s) in said {
            let state = self.slots[k].state;
            match s {
                Said::Loaded(mem) | Said::Embedded(_, _, mem) | Said::Summed(_, _, mem) if mem > 0 => self.slots[k].memory = mem,
                _ => {}
            }
            match s {
                Said::Loaded(_) if state == SlotState::Loading => self.slots[k].state = SlotState::Idle,
                Said::Loaded(_) if state == SlotState::Starting && self.checksum.is_empty() => self.slots[k].state = SlotState::Idle,
                Said::Loaded(_) if state == SlotState::Starting => {
                    // The helper's wasm is running: now it can take the model.
                    let sent = self.bytes.as_ref().map(|(m, t)| {
                        self.slots[k].worker.post_message(&js_sys::Array::of3(&LOAD.into(), m, t))
                    });
                    match sent {
                        Some(Ok(())) => self.slots[k].state = SlotState::Loading,
                        _ => self.kill(k),
                    }
                }
                Said::Loaded(_) => {}
                Said::Embedded(seq, flat, _) => {
                    if state == SlotState::Busy(seq) {
                        self.slots[k].state = SlotState::Idle;
                    }
                    done.push(Reply { seq, slot: k, result: Ok(flat), sums: Vec::new() });
                }
                Said::Summed(seq, sums, _) => {
                    if state == SlotState::Busy(seq) {
                        self.slots[k].state = SlotState::Idle;
                    }
                    done.push(Reply { seq, slot: k, result: Ok(Vec::new()), sums });
                }
                Said::Failed(seq, message) => {
                    if let SlotState::Busy(b) = state {
                        done.push(Reply { seq: b, slot: k, result: Err(message), sums: Vec::new() });
                    } else if let Some(seq) = seq {
                        done.push(Reply { seq, slot: k, result: Err(message), sums: Vec::new() });
                    }
                    self.kill(k);
                }
            }
        }
        if !self.slots.iter().any(|s| s.state == SlotState::Starting) {
            self.bytes = None;
        }
        done
    }
}

/// A helper's reply: the worker's `Ready` event (a JSON string) counts as `Loaded` from a
/// starting helper; arrays carry the rest.
fn read_reply(data: &JsValue) -> Option<Said> {
    if let Some(s) = data.as_string() {
        return s.contains(r#""kind":"ready""#).then_some(Said::Loaded(0));
    }
    let arr = data.dyn_ref::<js_sys::Array>()?;
    match arr.get(0).as_string()?.as_str() {
        "loaded" => Some(Said::Loaded(arr.get(1).as_f64().unwrap_or(0.0) as u64)),
        "embedded" => {
            let seq = arr.get(1).as_f64()? as u64;
            let flat = arr.get(2).dyn_into::<js_sys::Float32Array>().ok()?.to_vec();
            Some(Said::Embedded(seq, flat, arr.get(3).as_f64().unwrap_or(0.0) as u64))
        }
        "summed" => {
            let seq = arr.get(1).as_f64()? as u64;
            let sums = arr.get(2).dyn_into::<js_sys::Float64Array>().ok()?.to_vec();
            Some(Said::Summed(seq, sums, arr.get(3).as_f64().unwrap_or(0.0) as u64))
        }
        "failed" => Some(Said::Failed(arr.get(1).as_f64().map(|s| s as u64), arr.get(2).as_string().unwrap_or_default())),
        _ => None,
    }
}

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
                    reply(&["loaded".into(), JsValue::from_f64(wasm_memory_bytes() as f64)]);
                }
                Err(e) => reply(&["failed".into(), JsValue::NULL, e.into()]),
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
            let out = texts.and_then(|texts| {
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                HELPER_MODEL.with(|h| match h.borrow_mut().as_mut() {
                    Some(m) => m.embed(&refs).map_err(|e| e.to_string()),
                    None => Err("the helper has no model".to_string()),
                })
            });
            match out {
                Ok(vecs) => {
                    let flat: Vec<f32> = vecs.concat();
                    let mem = JsValue::from_f64(wasm_memory_bytes() as f64);
                    reply(&["embedded".into(), seq, js_sys::Float32Array::from(flat.as_slice()).into(), mem]);
                }
                Err(e) => reply(&["failed".into(), seq, e.into()]),
            }
            true
        }
        Some(SUMS) => {
            let seq = arr.get(1);
            match super::kde_share::serve(arr) {
                Ok(sums) => {
                    let mem = JsValue::from_f64(wasm_memory_bytes() as f64);
                    reply(&["summed".into(), seq, js_sys::Float64Array::from(sums.as_slice()).into(), mem]);
                }
                Err(e) => reply(&["failed".into(), seq, e.into()]),
            }
            true
        }
        _ => false,
    }
}
