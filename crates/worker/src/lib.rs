//! The app's Web Worker: reads the corpus, matches, adds DP noise, embeds, builds the DP-KDEs
//! and samples, so the page never freezes. It answers the requests of [`dpkps_core::protocol`] and
//! sends progress as it goes.
//!
//! Cancelling: long loops call [`checkpoint`], which yields to the worker's event loop every
//! ~40 ms so that a `Cancel` message can be handled, then stops the job if it was asked to.
//! Reading files is one synchronous pass per file; the UI cancels that stage by terminating
//! the worker and starting a fresh one (nothing is lost: the files are still in the page).
//!
//! Privacy: the worker holds the matched corpus (term ids and labels, never the text after
//! matching) in memory only. What it stores in IndexedDB is listed in [`store`].
//!
//! Layout: this file is the message loop (`on_message`, `handle`), the state kept between
//! requests ([`State`]) and the embedding helpers' start (`helpers_for`, `helpers_ready`). A
//! run is the core's orchestration (`dpkps_core::run::execute`) over this worker's `Host`, built in
//! [`run`]. Every other request has its own module ([`load`], [`model`], [`evaluate`],
//! [`diagnostics`], [`ledger_requests`], [`replay`], [`recipient`], [`vote`]); what the jobs share is
//! [`control`] (progress, cancelling, stopping: a leaf), [`assets`], [`sources`] and [`store`];
//! the helper workers are [`helpers`]. The modules take the state from here; none of them
//! imports another's job.

#![cfg(target_arch = "wasm32")]

mod assets;
mod background;
mod bench_docs;
mod control;
mod diagnostics;
mod evaluate;
mod files;
mod helpers;
mod ledger_requests;
mod load;
mod local_key;
mod model;
mod recipient;
mod replay;
mod run;
mod sources;
mod store;
mod vote;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::spawn_local;
use web_sys::{File, MessageEvent};

use dpkps_core::input::corpus::Fields;
use dpkps_core::embed::Embed;
use dpkps_core::input::matched::MatchedCorpus;
use dpkps_core::protocol::{Event, LedgerEvent, Request, Stage};
use dpkps_core::run::reuse::KeptVocabulary;
use dpkps_core::input::public_vocab::{Bundled, PublicVocabulary};

use control::{now_ms, post, scope, sleep, Stop, BUSY, CANCEL};
use diagnostics::{bench, model_check};
use evaluate::evaluate;
use helpers::pool;
use ledger_requests::ledger_request;
use load::{inspect, load};
use model::{ensure_model, model_loaded, use_model, Model};
use pool::Pool;

/// Terms kept per document while matching: the largest S and L the app accepts.
pub const KEEP: usize = 64;

struct Loaded {
    corpus: MatchedCorpus,
    vocab: Rc<PublicVocabulary>,
    /// Whether the corpus was read with a label column (then the run needs a class set).
    labelled: bool,
    /// The columns it was read with (a tuning file is read with the same).
    fields: Fields,
}

#[derive(Default)]
struct State {
    loaded: Option<Loaded>,
    model: Option<Model>,
    /// Helper workers for embedding, started on the first large embedding job.
    helpers: Option<Pool>,
    /// Bare helper workers (no model) sharing the DP-KDE build (`kde_share`), started by the
    /// first run of a DP-KDE sampler and kept.
    summary_helpers: Option<Pool>,
    vocabs: HashMap<Bundled, Rc<PublicVocabulary>>,
    /// Bundled vectors per bundled list, fetched on first use (public data; see `sources`).
    vectors: HashMap<Bundled, Option<Rc<dpkps_core::embed::bundle::VectorFile>>>,
    /// Vectors the model computed in this page session (memory only; see `sources`).
    live: Option<sources::LiveCache>,
    /// The idle-time pass over a user's own list (`background`).
    background: Option<background::Background>,
    /// The private vocabulary this page released last, for later runs with the same key
    /// (`RunSettings::reuse_vocabulary`, `dpkps_core::run::reuse`). A DP output; memory only.
    released_vocab: Option<KeptVocabulary>,
    /// The recipient's sets of documents as the last training read and embedded them (memory
    /// only; `recipient`).
    embedded: Vec<recipient::Embedded>,
}

thread_local! {
    static STATE: Rc<RefCell<State>> = Rc::default();
}

/// Entry point (called by the `dpkps-worker` binary's `main`).
pub fn start() {
    console_error_panic_hook::set_once();
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(on_message);
    scope().set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    onmessage.forget();
    post(&Event::Ready);
}

fn on_message(ev: MessageEvent) {
    let data = ev.data();
    if helpers::serve::serve(&data) {
        return;
    }
    let (json, files): (Option<String>, Vec<File>) = match data.dyn_ref::<js_sys::Array>() {
        Some(arr) => (
            arr.get(0).as_string(),
            (1..arr.length()).filter_map(|i| arr.get(i).dyn_into::<File>().ok()).collect(),
        ),
        None => (data.as_string(), Vec::new()),
    };
    let req = match json.as_deref().map(serde_json::from_str::<Request>) {
        Some(Ok(r)) => r,
        Some(Err(e)) => return post(&Event::Failed { stage: None, message: format!("unreadable request: {e}") }),
        None => return post(&Event::Failed { stage: None, message: "unreadable request".into() }),
    };
    if req == Request::Cancel {
        CANCEL.set(true);
        return;
    }
    // Ledger requests run beside any job: they take the ledger lock, not the job.
    if matches!(req, Request::Account { .. } | Request::ExportLedger { .. } | Request::ImportLedger) {
        spawn_local(async move {
            let ev = match ledger_request(req, files).await {
                Ok(ev) => ev,
                Err(message) => LedgerEvent::Failed { message },
            };
            let json = serde_json::to_string(&ev).unwrap_or_default();
            let _ = scope().post_message(&JsValue::from_str(&json));
        });
        return;
    }
    if BUSY.get() {
        return post(&Event::Failed { stage: None, message: "still working on the previous step; wait or cancel it".into() });
    }
    BUSY.set(true);
    CANCEL.set(false);
    spawn_local(async move {
        let outcome = handle(req, files).await;
        publish_memory();
        BUSY.set(false);
        match outcome {
            Ok(ev) => post(&ev),
            Err(Stop::Cancelled) => post(&Event::Cancelled),
            Err(Stop::Failed(stage, message)) => post(&Event::Failed { stage, message }),
        }
        // Idle now: the rest of a user's own list, in its order (memory only; `background`).
        background::start();
    });
}

/// After every job: this worker's and its helpers' wasm memory in bytes (linear memory only
/// grows, so these are peaks), as `self.dpkpsMemory = {worker, helpers: [..]}` in this worker's
/// own global scope, which only scripts of this worker can read (the pipeline benchmark reads
/// it through the browser's debugging protocol). Sizes only, nothing else of the corpus.
fn publish_memory() {
    let helpers: Vec<u64> = STATE
        .with(|s| s.try_borrow().ok().map(|s| s.helpers.iter().chain(s.summary_helpers.iter()).flat_map(Pool::memory).collect()))
        .unwrap_or_default();
    let figures = js_sys::Object::new();
    let list: js_sys::Array = helpers.iter().map(|&b| JsValue::from_f64(b as f64)).collect();
    let _ = js_sys::Reflect::set(&figures, &"worker".into(), &JsValue::from_f64(helpers::wasm_memory_bytes() as f64));
    let _ = js_sys::Reflect::set(&figures, &"helpers".into(), &list);
    let _ = js_sys::Reflect::set(&scope(), &"dpkpsMemory".into(), &figures);
}

async fn handle(req: Request, files: Vec<File>) -> Result<Event, Stop> {
    let state = STATE.with(Rc::clone);
    let mut state = state.borrow_mut();
    match req {
        Request::Inspect { files: infos } => inspect(&infos, &files),
        Request::Load { files: infos, text_col, label_col, person_col, vocabulary } => {
            let fields = dpkps_core::input::corpus::Fields {
                text: text_col.filter(|s| !s.is_empty()),
                label: label_col.filter(|s| !s.is_empty()),
                person: person_col.filter(|s| !s.is_empty()),
            };
            load(&mut state, &infos, &files, fields, vocabulary).await
        }
        Request::Run { settings } => run::run(&mut state, &settings).await,
        Request::UseModel { model, tokenizer } => use_model(&mut state, &files, model, tokenizer),
        Request::UseBundledModel => {
            state.model = None;
            state.helpers = None;
            let m = ensure_model(&mut state.model).await?;
            Ok(model_loaded(&m.embedder, m.name.clone(), now_ms()))
        }
        Request::ModelCheck => model_check(&mut state).await,
        Request::Bench { terms } => bench(&mut state, terms).await,
        Request::BenchDocs { sets, profile, plans } => bench_docs::bench_docs(&mut state, &sets, profile, plans).await,
        Request::DpCheck { settings } => run::dp_check(&mut state, &settings).await,
        Request::EvaluateTuning { settings, file } => {
            let f = files.first().cloned().ok_or_else(|| Stop::Failed(Some(Stage::Evaluate), "attach the tuning file".into()))?;
            evaluate(&mut state, &settings, (file, f)).await
        }
        Request::ReplayCheck { files: infos, documents, params } => replay::check(&state, &infos, &files, documents, params),
        Request::Train { synthetic, unlabelled, test, params, compare } => {
            recipient::train(&mut state, recipient::TrainAsk { synthetic, unlabelled, test, params, compare }, &files).await
        }
        Request::Vote { files: infos, candidates, settings, from_run } => vote::vote(&mut state, vote::VoteAsk { files: infos, candidates, settings, from_run }, &files).await,
        Request::Cancel => Ok(Event::Cancelled),
        // Handled in `on_message`.
        Request::Account { .. } | Request::ExportLedger { .. } | Request::ImportLedger => Err(Stop::Failed(None, "internal: ledger request".into())),
    }
}

/// The helper pool for `m`'s model, started if `batches` make it worth it (a helper needs a
/// second or two to start) and this machine has a core for one.
fn helpers_for<'a>(helpers: &'a mut Option<Pool>, m: &Model, batches: usize) -> Option<&'a mut Pool> {
    if helpers.as_ref().is_some_and(|p| p.checksum() != m.embedder.checksum() || p.alive() == 0) {
        *helpers = None;
    }
    if helpers.is_none() && batches >= 4 {
        let count = pool::helpers_for_this_machine();
        if count > 0 {
            // Without helpers the job still runs, on this worker alone.
            *helpers = Pool::start(count, &m.bytes.0, &m.bytes.1, m.embedder.checksum()).ok();
        }
    }
    helpers.as_mut()
}

/// How many helpers are ready to embed: none without a pool, else those idle once every helper
/// has loaded the model or died (waiting at most two minutes).
async fn ready_helpers(pool: Option<&mut Pool>) -> Result<usize, Stop> {
    match pool {
        Some(p) => {
            helpers_ready(p, 120_000.0).await?;
            Ok(p.idle())
        }
        None => Ok(0),
    }
}

/// Waits (at most `limit_ms`) until every helper is idle (has loaded the model and finished any
/// batch it still holds) or dead.
async fn helpers_ready(pool: &mut Pool, limit_ms: f64) -> Result<(), Stop> {
    let t0 = now_ms();
    while pool.pending() > 0 && now_ms() - t0 < limit_ms {
        pool.poll();
        sleep(5).await;
        if CANCEL.get() {
            return Err(Stop::Cancelled);
        }
    }
    Ok(())
}

