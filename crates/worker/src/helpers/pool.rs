//! This worker's side of the helpers (see [`super`]): starts them, hands each idle one a
//! request, and reads their replies (format: [`super::wire`]). The jobs that share work out
//! (`embed_batches`, [`super::kde_share`]) drive a [`Pool`]; it knows nothing of them, nor of
//! the helper's side ([`super::serve`]).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{MessageEvent, Worker};

use super::wire::{read_reply, Said, EMBED, LOAD};

/// Most helpers started, whatever the core count: each holds its own model (about 160 MB of
/// wasm memory for the bundled one), so 7 helpers and this worker take about 1.3 GB, on a
/// machine of 8 cores or more. Documents go one per model call to whichever is idle
/// (`embed_share`), so every core a helper gets embeds documents (issue 38: it was 3).
pub const MAX_HELPERS: usize = 7;

/// A finished batch: its sequence number, the helper that answered, and the flat embeddings
/// or why there are none.
pub struct Reply {
    pub seq: u64,
    pub slot: usize,
    pub result: Result<Vec<f32>, String>,
    /// A share of the DP-KDE sums (`kde_share`); empty for embeddings.
    pub sums: Vec<f64>,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum SlotState {
    /// Started; its wasm is not running yet (a message now could be lost).
    Starting,
    Loading,
    Idle,
    /// Embedding or summing request `.0`, with `.1` (if any) waiting behind it in the helper's
    /// queue ([`Pool::send_ahead`]).
    Busy(u64, Option<u64>),
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
            let worker = dpkps_inpage::start_worker(&url).map_err(|e| format!("cannot start a helper worker: {e:?}"))?;
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
        self.slots.iter().filter(|s| matches!(s.state, SlotState::Starting | SlotState::Loading | SlotState::Busy(..))).count()
    }

    /// The live helpers' wasm memory in bytes, as each last reported it.
    pub fn memory(&self) -> Vec<u64> {
        self.slots.iter().filter(|s| s.state != SlotState::Dead).map(|s| s.memory).collect()
    }

    /// Helpers that are not dead.
    pub fn alive(&self) -> usize {
        self.slots.iter().filter(|s| s.state != SlotState::Dead).count()
    }

    /// Hands `texts` (term batches of `width` rows laid end to end, `dpkps_core::embed::rows`) to
    /// an idle helper; returns the sequence number, or None if no helper is idle (or posting
    /// failed, which kills that helper).
    pub fn send(&mut self, texts: &[&str], width: usize) -> Option<u64> {
        let k = self.first_idle()?;
        self.post(k, &embed_request(texts, width)?)
    }

    /// As [`Pool::send`], but where no helper is idle, to one that has a single batch: it waits
    /// in that helper's queue and starts the moment the first ends. Why: this worker reads
    /// replies only between its own model calls, so a helper given one batch at a time sat idle
    /// from its reply to the end of this worker's call, about half a document each time (the
    /// worker and one helper embedded 1.53 times what the worker alone did).
    pub fn send_ahead(&mut self, texts: &[&str], width: usize) -> Option<u64> {
        let k = self.first_idle().or_else(|| self.slots.iter().position(|s| matches!(s.state, SlotState::Busy(_, None))))?;
        self.post(k, &embed_request(texts, width)?)
    }

    /// Hands a request (a JS array whose first element is a helper kind, second element
    /// filled in here with the sequence number) to an idle helper; returns the sequence number,
    /// or None if no helper is idle (or posting failed, which kills that helper).
    pub fn send_request(&mut self, msg: &js_sys::Array) -> Option<u64> {
        let k = self.first_idle()?;
        self.post(k, msg)
    }

    /// The first idle helper.
    fn first_idle(&self) -> Option<usize> {
        self.slots.iter().position(|s| s.state == SlotState::Idle)
    }

    /// Posts `msg` to helper `k` (idle, or busy with one request) with the next sequence number.
    fn post(&mut self, k: usize, msg: &js_sys::Array) -> Option<u64> {
        self.next_seq += 1;
        let seq = self.next_seq;
        msg.set(1, JsValue::from_f64(seq as f64));
        match self.slots[k].worker.post_message(msg) {
            Ok(()) => {
                self.slots[k].state = match self.slots[k].state {
                    SlotState::Busy(first, None) => SlotState::Busy(first, Some(seq)),
                    _ => SlotState::Busy(seq, None),
                };
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

    /// Stops using every helper but those in `keep` (`embed_share::retire_unlike`: those that
    /// embedded the probe to this worker's bits).
    pub fn retire_all_but(&mut self, keep: &[usize]) {
        for k in 0..self.slots.len() {
            if !keep.contains(&k) && self.slots[k].state != SlotState::Dead {
                self.kill(k);
            }
        }
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
                    self.slots[k].state = after_reply(state, seq);
                    done.push(Reply { seq, slot: k, result: Ok(flat), sums: Vec::new() });
                }
                Said::Summed(seq, sums, _) => {
                    self.slots[k].state = after_reply(state, seq);
                    done.push(Reply { seq, slot: k, result: Ok(Vec::new()), sums });
                }
                Said::Failed(seq, message) => {
                    if let SlotState::Busy(b, next) = state {
                        // The request waiting behind it goes back too: the helper is killed.
                        for b in std::iter::once(b).chain(next) {
                            done.push(Reply { seq: b, slot: k, result: Err(message.clone()), sums: Vec::new() });
                        }
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

/// A helper's state once it has answered request `seq`: the request waiting behind it, if any,
/// is now running; else it is idle. (A reply to anything else leaves the state as it was.)
fn after_reply(state: SlotState, seq: u64) -> SlotState {
    match state {
        SlotState::Busy(first, next) if first == seq => next.map_or(SlotState::Idle, |n| SlotState::Busy(n, None)),
        other => other,
    }
}

/// The message asking a helper to embed `texts` (term batches of `width` rows laid end to end);
/// its sequence number is filled in when it is posted.
fn embed_request(texts: &[&str], width: usize) -> Option<js_sys::Array> {
    let json = serde_json::to_string(texts).ok()?;
    Some(js_sys::Array::of4(&EMBED.into(), &JsValue::NULL, &json.into(), &JsValue::from_f64(width as f64)))
}
