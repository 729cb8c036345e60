//! The rest of a user's own term list, embedded while the worker is idle.
//!
//! A bundled list comes with its vectors (`sources`); a user's own list is embedded live, and
//! with the page's defaults each run needs the vectors of its private vocabulary Ṽ, a noisy
//! selection that changes from run to run, so without this pass every run embeds a few hundred
//! new terms (9–11 s for a 50,000-term list). The vectors of the list do not depend on any
//! corpus, so once the list is loaded and the worker has nothing else to do, this pass embeds
//! the whole list into this page session's memory ([`sources::LiveCache`]), and later runs
//! read them from there.
//!
//! Data-independent: the pass goes through the list in the list's own order (windows of
//! [`WINDOW`] terms, sorted by token count inside a window only to batch similar lengths), not
//! prioritised by which terms the corpus matched, so nothing about the corpus shapes what is
//! computed or when; the one thing it skips is a term a run already embedded. Memory only, like
//! the rest of the session's vectors: nothing is stored or sent anywhere.
//!
//! Interruptible: each step takes the worker's state for one batch (here, plus a batch handed
//! to each idle helper), then gives the event loop back. A request that starts a job (Run,
//! Load, …) marks the worker busy; the pass sees that at its next step and stops, and the job
//! runs at once (waiting at most for one batch of this worker, ~0.1 s). It starts again when
//! the job is over, where it left off.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use wasm_bindgen::JsValue;
use wasm_bindgen_futures::spawn_local;

use dpkps_core::embed::rows::TermBatch;
use dpkps_core::embed::Embed;
use dpkps_core::protocol::Event;
use dpkps_core::input::public_vocab::{Bundled, PublicVocabulary, TermId};

use super::control::{now_ms, post, scope, sleep, BUSY};
use super::model::{load_bundled_model, ROWS_PER_MESSAGE};
use super::sources::{LiveCache, LIVE_CACHE_MAX};
use super::{helpers_for, State, STATE};

/// Terms of the list taken at a time (in list order), then cut into term batches
/// (`dpkps_core::embed::rows`, as a run cuts them, so that a term gets the same vector either way).
const WINDOW: usize = 1024;
/// A batch held by a helper for longer than this is embedded here instead (a helper that
/// died must not stall the pass).
const HELPER_PATIENCE_MS: f64 = 30_000.0;

thread_local! {
    static RUNNING: Cell<bool> = const { Cell::new(false) };
}

/// Where the pass stands, for one model and one list.
pub struct Background {
    model: String,
    vocab: String,
    /// The list position of the next term to look at.
    next: usize,
    /// Messages to embed: whole term batches (a row each, None: a filler row).
    queue: VecDeque<Vec<TermBatch<TermId>>>,
    /// Messages a helper failed on: embedded here only.
    mine: VecDeque<Vec<TermBatch<TermId>>>,
    /// Messages out on a helper: sequence number → (rows, when sent).
    away: HashMap<u64, (Vec<TermBatch<TermId>>, f64)>,
    /// When the page was last told where the pass stands.
    told: f64,
}

/// What one step found.
enum Step {
    /// More to do: yield and step again.
    Again,
    /// Only the helpers' batches are left: wait a little.
    Wait,
    /// The model is not loaded yet.
    NeedModel,
    /// The list is embedded (or the memory is full), or there is no own list.
    Over,
}

/// Starts the pass if it is not running (it stops by itself when there is nothing to do).
pub fn start() {
    if RUNNING.replace(true) {
        return;
    }
    spawn_local(async {
        pass().await;
        RUNNING.set(false);
    });
}

async fn pass() {
    // A job since the last step may have taken the helpers' replies (they answer to whoever
    // polls): what was out on them is embedded again.
    STATE.with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if let Some(bg) = s.background.as_mut() {
                let away: Vec<Vec<TermBatch<TermId>>> = bg.away.drain().map(|(_, (ids, _))| ids).collect();
                bg.queue.extend(away);
            }
        }
    });
    loop {
        // A job is running (or the state is taken): it goes first; it restarts the pass.
        if BUSY.get() {
            return;
        }
        let step = STATE.with(|s| s.try_borrow_mut().ok().map(|mut s| step(&mut s)));
        match step {
            None | Some(Step::Over) => return,
            Some(Step::Again) => sleep(0).await,
            Some(Step::Wait) => sleep(5).await,
            Some(Step::NeedModel) => {
                // Fetched without holding the state; kept only if no job loaded one meanwhile.
                let Ok(m) = load_bundled_model(false).await else { return };
                let kept = STATE.with(|s| {
                    s.try_borrow_mut().ok().is_some_and(|mut s| {
                        if s.model.is_none() {
                            s.model = Some(m);
                        }
                        true
                    })
                });
                if !kept {
                    return;
                }
            }
        }
    }
}

/// The list the pass is for: the loaded corpus's vocabulary if it is a user's own list.
fn own_list(s: &State) -> Option<Rc<PublicVocabulary>> {
    let vocab = &s.loaded.as_ref()?.vocab;
    Bundled::parse_name(&vocab.name).is_none().then(|| vocab.clone())
}

fn step(s: &mut State) -> Step {
    let Some(vocab) = own_list(s) else { return Step::Over };
    let State { model, helpers, live, background, .. } = s;
    let Some(m) = model.as_mut() else { return Step::NeedModel };
    let checksum = m.embedder.checksum().to_string();
    let dim = m.embedder.dim();
    let width = m.embedder.term_width();
    let rows_key = m.embedder.rows_key().to_string();
    // Keyed by the rows too: batches queued for another layout are not run with this one.
    let model_key = format!("{checksum}\u{1f}{rows_key}");
    if !background.as_ref().is_some_and(|b| b.model == model_key && b.vocab == vocab.checksum) {
        *background = Some(Background { model: model_key, vocab: vocab.checksum.clone(), next: 0, queue: VecDeque::new(), mine: VecDeque::new(), away: HashMap::new(), told: 0.0 });
    }
    let Some(bg) = background.as_mut() else { return Step::Over };
    let live = LiveCache::slot(live, &checksum, &rows_key, &vocab.checksum, dim);
    let mut pool = helpers_for(helpers, m, usize::MAX);
    // The helpers' finished batches.
    if let Some(p) = pool.as_deref_mut() {
        for r in p.poll() {
            let Some((ids, _)) = bg.away.remove(&r.seq) else { continue };
            match r.result {
                Ok(flat) if flat.len() == dim * ids.iter().map(Vec::len).sum::<usize>() => {
                    for (id, v) in ids.iter().flatten().zip(flat.chunks(dim)).filter_map(|(id, v)| Some(((*id)?, v))) {
                        // A vector the model refuses (not finite) is left to the run.
                        let _ = live.keep(id, v);
                    }
                }
                // Sent again, it could fail again and again: embedded here.
                _ => bg.mine.push_back(ids),
            }
        }
    }
    let t = now_ms();
    let overdue: Vec<u64> = bg.away.iter().filter(|(_, (_, sent))| t - sent > HELPER_PATIENCE_MS).map(|(&k, _)| k).collect();
    for k in overdue {
        if let Some((ids, _)) = bg.away.remove(&k) {
            bg.queue.push_back(ids);
        }
    }
    // The next window of the list, in list order.
    if bg.queue.is_empty() {
        let pending: usize = bg.away.values().map(|(ids, _)| ids.iter().flatten().flatten().count()).sum();
        let room = LIVE_CACHE_MAX.saturating_sub(live.len() + pending);
        let mut window = Vec::new();
        while bg.next < vocab.len() && window.len() < WINDOW.min(room) {
            let id = bg.next as TermId;
            bg.next += 1;
            if !live.contains(id) {
                window.push(id);
            }
        }
        let batches = dpkps_core::embed::rows::term_batches(&m.embedder, width, &window, |id| vocab.term(id));
        bg.queue.extend(dpkps_core::embed::rows::messages(batches, ROWS_PER_MESSAGE));
    }
    // A batch to every idle helper, and one here.
    if let Some(p) = pool {
        while let Some(ids) = bg.queue.front() {
            let texts = dpkps_core::embed::rows::message_texts(ids, |id| vocab.term(id));
            let Some(seq) = p.send(&texts, width) else { break };
            if let Some(ids) = bg.queue.pop_front() {
                bg.away.insert(seq, (ids, now_ms()));
            }
        }
    }
    let outcome = if let Some(ids) = bg.mine.pop_front().or_else(|| bg.queue.pop_front()) {
        let texts = dpkps_core::embed::rows::message_texts(&ids, |id| vocab.term(id));
        if let Ok(vecs) = dpkps_core::embed::rows::embed_rows(&mut m.embedder, &texts, width) {
            for (id, v) in ids.iter().flatten().zip(&vecs).filter_map(|(id, v)| Some(((*id)?, v))) {
                let _ = live.keep(id, v);
            }
        }
        Step::Again
    } else if !bg.away.is_empty() {
        Step::Wait
    } else {
        Step::Over
    };
    let over = matches!(outcome, Step::Over);
    let (done, total) = (live.len(), vocab.len().min(LIVE_CACHE_MAX));
    publish(done, total, over);
    // The page's line, about once a second.
    if over || now_ms() - bg.told >= 1_000.0 {
        bg.told = now_ms();
        post(&Event::Background { done: done as u64, total: total as u64 });
    }
    outcome
}

/// Where the pass stands, as `self.dpkpsBackground = {done, total, over}` in this worker's own
/// global scope (the pipeline benchmark reads it to wait for the pass). Counts of the public
/// list only.
fn publish(done: usize, total: usize, over: bool) {
    let o = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&o, &"done".into(), &JsValue::from_f64(done as f64));
    let _ = js_sys::Reflect::set(&o, &"total".into(), &JsValue::from_f64(total as f64));
    let _ = js_sys::Reflect::set(&o, &"over".into(), &JsValue::from_bool(over));
    let _ = js_sys::Reflect::set(&scope(), &"dpkpsBackground".into(), &o);
}
