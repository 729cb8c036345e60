//! The app's Web Worker: reads the corpus, matches, adds DP noise, embeds, builds the DP-KDEs
//! and samples, so the page never freezes. It answers the requests of [`crate::protocol`] and
//! sends progress as it goes.
//!
//! Cancelling: long loops call [`checkpoint`], which yields to the worker's event loop every
//! ~40 ms so that a `Cancel` message can be handled, then stops the job if it was asked to.
//! Reading files is one synchronous pass per file; the UI cancels that stage by terminating
//! the worker and starting a fresh one (nothing is lost: the files are still in the page).
//!
//! Privacy: the worker holds the matched corpus (term ids and labels, never the text after
//! matching) in memory only. What it stores in IndexedDB is listed in [`store`].

mod background;
mod files;
mod kde_share;
mod pool;
mod sources;
mod store;

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::fmt::Display;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::{spawn_local, JsFuture};
use web_sys::{DedicatedWorkerGlobalScope, File, MessageEvent};

use crate::corpus::{Fields, Format};
use crate::dp::SecureRng;
use crate::embed::onnx::{OnnxEmbedder, BUNDLED_MODEL};
use crate::embed::Embed;
use crate::ledger::Run;
use crate::pipeline::{MatchedCorpus, MatchingSink};
use crate::protocol::{
    limits, AccountStatus, BenchFigures, CorpusSummary, Event, FileInfo, LedgerEvent, Request, RunResult, RunSettings, SequenceOut, Stage,
    VocabChoice,
};
use crate::report::{Checked, PrivacyReport};
use crate::reuse::{KeptVocabulary, VocabKey};
use crate::sample::Candidates;
use crate::summary::Sampler;
use crate::vocab::{Bundled, Matcher, PublicVocabulary, TermId};

use pool::Pool;
use store::Store;

/// Terms kept per document while matching: the largest S and L the app accepts.
pub const KEEP: usize = 64;
/// Bytes of the first file shown in the preview.
const PREVIEW_BYTES: f64 = 64.0 * 1024.0;
/// Terms per model call.
const BATCH: usize = 32;
/// How the bundled model is named in the page and the privacy report.
const BUNDLED_MODEL_NAME: &str = "all-MiniLM-L6-v2 (bundled)";

struct Loaded {
    corpus: MatchedCorpus,
    vocab: Rc<PublicVocabulary>,
    /// Whether the corpus was read with a label column (then the run needs a class set).
    labelled: bool,
    /// The columns it was read with (a tuning file is read with the same).
    fields: Fields,
}

struct Model {
    embedder: OnnxEmbedder,
    name: String,
    /// The model's and tokenizer's bytes, for helper workers (see [`pool`]).
    bytes: Rc<(Vec<u8>, Vec<u8>)>,
}

#[derive(Default)]
struct State {
    loaded: Option<Loaded>,
    model: Option<Model>,
    /// Helper workers for embedding, started on the first large embedding job.
    helpers: Option<Pool>,
    /// Bare helper workers (no model) sharing the DP-KDE build (`kde_share`), started by the
    /// first run of a DP-KDE sampler and kept.
    kde_helpers: Option<Pool>,
    vocabs: HashMap<Bundled, Rc<PublicVocabulary>>,
    /// Bundled vectors per bundled list, fetched on first use (public data; see `sources`).
    vectors: HashMap<Bundled, Option<Rc<crate::embed::bundle::VectorFile>>>,
    /// Vectors the model computed in this page session (memory only; see `sources`).
    live: Option<sources::LiveCache>,
    /// The idle-time pass over a user's own list (`background`).
    background: Option<background::Background>,
    /// The private vocabulary this page released last, for later runs with the same key
    /// (`RunSettings::reuse_vocabulary`, `crate::reuse`). A DP output; memory only.
    released_vocab: Option<KeptVocabulary>,
}

thread_local! {
    static STATE: Rc<RefCell<State>> = Rc::default();
    static CANCEL: Cell<bool> = const { Cell::new(false) };
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// Why a job ended early.
enum Stop {
    Cancelled,
    Failed(Option<Stage>, String),
}

fn at<E: Display>(stage: Stage) -> impl Fn(E) -> Stop {
    move |e| Stop::Failed(Some(stage), e.to_string())
}

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

fn post(ev: &Event) {
    let json = serde_json::to_string(ev)
        .unwrap_or_else(|e| format!(r#"{{"kind":"failed","stage":null,"message":"internal: {e}"}}"#));
    let _ = scope().post_message(&JsValue::from_str(&json));
}

fn progress(stage: Stage, done: u64, total: u64) {
    post(&Event::Progress { stage, done, total });
}

fn now_ms() -> f64 {
    js_sys::Date::now()
}

fn seconds_since(t0: f64) -> f64 {
    (now_ms() - t0) / 1000.0
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
    if pool::serve(&data) {
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
    if matches!(req, Request::Account { .. } | Request::ExportLedger | Request::ImportLedger) {
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
        .with(|s| s.try_borrow().ok().map(|s| s.helpers.iter().chain(s.kde_helpers.iter()).flat_map(Pool::memory).collect()))
        .unwrap_or_default();
    let figures = js_sys::Object::new();
    let list: js_sys::Array = helpers.iter().map(|&b| JsValue::from_f64(b as f64)).collect();
    let _ = js_sys::Reflect::set(&figures, &"worker".into(), &JsValue::from_f64(pool::wasm_memory_bytes() as f64));
    let _ = js_sys::Reflect::set(&figures, &"helpers".into(), &list);
    let _ = js_sys::Reflect::set(&scope(), &"dpkpsMemory".into(), &figures);
}

/// Lets the event loop run for at least `ms` milliseconds (messages are handled meanwhile).
async fn sleep(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        let _ = scope().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
    });
    let _ = JsFuture::from(p).await;
}

/// Lets the event loop run (so `Cancel` can arrive) at most every 40 ms; stops if cancelled.
async fn checkpoint(last_yield: &mut f64) -> Result<(), Stop> {
    if now_ms() - *last_yield >= 40.0 {
        sleep(0).await;
        *last_yield = now_ms();
    }
    if CANCEL.get() {
        Err(Stop::Cancelled)
    } else {
        Ok(())
    }
}

async fn handle(req: Request, files: Vec<File>) -> Result<Event, Stop> {
    let state = STATE.with(Rc::clone);
    let mut state = state.borrow_mut();
    match req {
        Request::Inspect { files: infos } => inspect(&infos, &files),
        Request::Load { files: infos, text_col, label_col, vocabulary } => {
            load(&mut state, &infos, &files, text_col, label_col, vocabulary).await
        }
        Request::Run { settings } => run(&mut state, &settings).await,
        Request::UseModel { model, tokenizer } => {
            let (m, t) = match (files.first(), files.get(1)) {
                (Some(m), Some(t)) => (m, t),
                _ => return Err(Stop::Failed(Some(Stage::Model), "attach the model and its tokenizer.json".into())),
            };
            let t0 = now_ms();
            let mb = files::all(m, "a model", limits::MODEL).map_err(at(Stage::Model))?;
            let tb = files::all(t, "a tokenizer", limits::TOKENIZER).map_err(at(Stage::Model))?;
            let embedder = OnnxEmbedder::from_bytes(&mb, &tb)
                .map_err(|e| Stop::Failed(Some(Stage::Model), format!("{}: {e}", model.name)))?;
            let ev = model_loaded(&embedder, format!("{} + {}", model.name, tokenizer.name), t0);
            state.model = Some(Model { embedder, name: model.name, bytes: Rc::new((mb, tb)) });
            state.helpers = None;
            Ok(ev)
        }
        Request::UseBundledModel => {
            state.model = None;
            state.helpers = None;
            let m = ensure_model(&mut state.model).await?;
            Ok(model_loaded(&m.embedder, m.name.clone(), now_ms()))
        }
        Request::ModelCheck => model_check(&mut state).await,
        Request::Bench { terms } => bench(&mut state, terms).await,
        Request::Evaluate { settings } => evaluate(&mut state, &settings, None).await,
        Request::EvaluateTuning { settings, file } => {
            let f = files.first().cloned().ok_or_else(|| Stop::Failed(Some(Stage::Evaluate), "attach the tuning file".into()))?;
            evaluate(&mut state, &settings, Some((file, f))).await
        }
        Request::Cancel => Ok(Event::Cancelled),
        // Handled in `on_message`.
        Request::Account { .. } | Request::ExportLedger | Request::ImportLedger => Err(Stop::Failed(None, "internal: ledger request".into())),
    }
}

fn model_loaded(e: &OnnxEmbedder, name: String, t0: f64) -> Event {
    Event::ModelLoaded { name, dim: e.dim(), checksum: e.checksum().to_string(), seconds: seconds_since(t0) }
}

fn format_of(name: &str) -> Result<Format, Stop> {
    Format::from_path(name).ok_or_else(|| {
        Stop::Failed(
            Some(Stage::Read),
            format!("{name}: unknown kind of file; use .csv, .tsv, .jsonl or .txt (UTF-8 text)"),
        )
    })
}

fn inspect(infos: &[FileInfo], files: &[File]) -> Result<Event, Stop> {
    let (Some(info), Some(file)) = (infos.first(), files.first()) else {
        return Err(Stop::Failed(Some(Stage::Read), "no file was given".into()));
    };
    let format = format_of(&info.name)?;
    let (bytes, complete) = files::head(file, PREVIEW_BYTES).map_err(at(Stage::Read))?;
    let preview = crate::preview::preview(&bytes, &info.name, format, complete).map_err(at(Stage::Read))?;
    Ok(Event::Inspected(preview))
}

/// An asset relative to the page (`models/…`, `vocab/…`), or its in-page copy in the single file.
async fn fetch_bytes(path: &str) -> Result<Vec<u8>, String> {
    if let Some(blob) = crate::inpage::asset(path).await {
        return crate::inpage::bytes(&blob?).await;
    }
    let resp = JsFuture::from(scope().fetch_with_str(path))
        .await
        .map_err(|e| format!("{path}: could not be loaded from this page's address ({e:?})"))?;
    let resp: web_sys::Response = resp.dyn_into().map_err(|_| format!("{path}: not a response"))?;
    if !resp.ok() {
        return Err(format!("{path}: HTTP {}", resp.status()));
    }
    let buf = JsFuture::from(resp.array_buffer().map_err(|e| format!("{e:?}"))?).await.map_err(|e| format!("{e:?}"))?;
    Ok(js_sys::Uint8Array::new(&buf).to_vec())
}

async fn bundled_vocab(state: &mut State, which: Bundled) -> Result<Rc<PublicVocabulary>, Stop> {
    if let Some(v) = state.vocabs.get(&which) {
        return Ok(v.clone());
    }
    let bytes = fetch_bytes(&format!("vocab/{}", which.file_name())).await.map_err(at(Stage::Read))?;
    let v = Rc::new(PublicVocabulary::parse_bundled(which, &bytes).map_err(at(Stage::Read))?);
    state.vocabs.insert(which, v.clone());
    Ok(v)
}

async fn load(
    state: &mut State,
    infos: &[FileInfo],
    files: &[File],
    text_col: Option<String>,
    label_col: Option<String>,
    vocabulary: VocabChoice,
) -> Result<Event, Stop> {
    if infos.is_empty() || files.len() < infos.len() {
        return Err(Stop::Failed(Some(Stage::Read), "no file was given".into()));
    }
    state.loaded = None;
    // A corpus read again may carry other labels under the same texts (the fingerprint is of
    // the texts): its Ṽ is drawn anew.
    state.released_vocab = None;
    let vocab = match vocabulary {
        VocabChoice::Bundled { which } => bundled_vocab(state, which).await?,
        VocabChoice::Custom { name } => {
            let file = files.get(infos.len()).ok_or_else(|| Stop::Failed(Some(Stage::Read), "attach the term list".into()))?;
            let bytes = files::all(file, "a vocabulary", limits::VOCABULARY).map_err(at(Stage::Read))?;
            Rc::new(PublicVocabulary::parse(&name, &bytes).map_err(at(Stage::Read))?)
        }
    };
    let fields = Fields { text: text_col.filter(|s| !s.is_empty()), label: label_col.filter(|s| !s.is_empty()) };
    let corpus = read_matched(infos, files, &fields, &vocab, Stage::Read)?;
    let (spent_before, earlier_runs) = match Store::open().await {
        Ok(store) => {
            // A ledger recorded under the older, order-sensitive key is moved to this one.
            let (legacy, fp) = (corpus.keys.legacy.clone(), corpus.fingerprint.clone());
            let ledger = store
                .update_ledger(move |b| {
                    b.adopt_legacy(&legacy, &fp);
                    Ok(b.ledger(&fp))
                })
                .await
                .map_err(at(Stage::Read))?;
            (ledger.total_epsilon(), ledger.runs.len())
        }
        Err(e) => return Err(Stop::Failed(Some(Stage::Read), e)),
    };
    let summary = CorpusSummary {
        documents: corpus.stats.documents,
        empty_skipped: corpus.stats.empty_skipped,
        docs_without_terms: corpus.docs_without_terms,
        classes: corpus.stats.classes.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        unlabelled: corpus.stats.unlabelled,
        vocabulary: vocab.name.clone(),
        vocabulary_terms: vocab.len(),
        distinct_matched: corpus.distinct_terms(KEEP).len(),
        spent_before,
        earlier_runs,
    };
    let labelled = fields.label.is_some();
    state.loaded = Some(Loaded { corpus, vocab, labelled, fields });
    Ok(Event::Loaded(summary))
}

/// Reads and matches `files` (the first `infos.len()`), with progress under `stage`.
fn read_matched(infos: &[FileInfo], files: &[File], fields: &Fields, vocab: &PublicVocabulary, stage: Stage) -> Result<MatchedCorpus, Stop> {
    let matcher = Matcher::new(vocab).map_err(at(stage))?;
    let mut sink = MatchingSink::new(Some(&matcher), KEEP, fields.label.is_some());
    let total: f64 = files.iter().take(infos.len()).map(|f| f.size()).sum();
    let name = if infos.len() == 1 { infos[0].name.clone() } else { format!("{} files together", infos.len()) };
    limits::check("a corpus", &name, total as u64, limits::CORPUS_TOTAL).map_err(at(stage))?;
    let mut base = 0.0;
    for (info, file) in infos.iter().zip(files) {
        let format = format_of(&info.name)?;
        let mut report = |pos: f64| progress(stage, (base + pos) as u64, total as u64);
        let reader = files::BlobReader::new(file.clone(), &mut report).map_err(at(stage))?;
        sink.read(reader, &info.name, format, fields, None).map_err(at(stage))?;
        base += file.size();
    }
    let name = if infos.len() == 1 { infos[0].name.clone() } else { format!("{} files", infos.len()) };
    sink.finish(&name).map_err(at(stage))
}

/// Export, import and the account's state: under the ledger lock, beside any running job.
async fn ledger_request(req: Request, files: Vec<File>) -> Result<LedgerEvent, String> {
    let store = Store::open().await?;
    match req {
        Request::ExportLedger => Ok(LedgerEvent::Exported { json: store.update_ledger(|b| Ok(b.to_json())).await? }),
        Request::ImportLedger => {
            let file = files.first().ok_or("attach the ledger file")?;
            let bytes = files::all(file, "a ledger file", limits::LEDGER)?;
            let text = String::from_utf8(bytes).map_err(|_| format!("{}: not a dpkps ledger (not UTF-8 text)", file.name()))?;
            let other = crate::ledger::LedgerBook::from_json(&text).map_err(|e| format!("{}: {e}", file.name()))?;
            let summary = store.update_ledger(move |b| Ok(b.merge(&other))).await?;
            Ok(LedgerEvent::Imported { summary })
        }
        Request::Account { name } => {
            let name = crate::protocol::account_name(Some(&name)).ok_or("name the budget account (the dataset)")?;
            // The loaded corpus's keys (a copy: the job may start meanwhile).
            let keys = STATE.with(|s| s.try_borrow().ok().and_then(|s| s.loaded.as_ref().map(|l| l.corpus.keys.clone())));
            let keys = keys.ok_or("load a corpus first (or wait for the running step to finish)")?;
            let book = store.ledger().await?;
            let ledger = book.ledger(&keys.fingerprint);
            Ok(LedgerEvent::Status(AccountStatus {
                spent: book.account_spent(&name, &keys.fingerprint),
                budget: book.accounts.get(&name).and_then(|a| a.budget),
                corpus_spent: ledger.total_epsilon(),
                corpus_runs: ledger.runs.len(),
                overlaps: book.overlaps(&name, &keys).into_iter().map(|(_, o)| o).collect(),
                non_dp_checks: ledger.utility_checks.len(),
                settings_compared: ledger.settings_compared(),
                name,
            }))
        }
        _ => Err("internal: not a ledger request".into()),
    }
}

async fn ensure_model(slot: &mut Option<Model>) -> Result<&mut Model, Stop> {
    if slot.is_none() {
        *slot = Some(load_bundled_model(true).await?);
    }
    slot.as_mut().ok_or_else(|| Stop::Failed(Some(Stage::Model), "no model".into()))
}

/// The bundled model, fetched and loaded (with the model stage's progress if `report`).
async fn load_bundled_model(report: bool) -> Result<Model, Stop> {
    if report {
        progress(Stage::Model, 0, 2);
    }
    let model = fetch_bytes(&format!("models/{BUNDLED_MODEL}")).await.map_err(at(Stage::Model))?;
    let tok = fetch_bytes("models/tokenizer.json").await.map_err(at(Stage::Model))?;
    if report {
        progress(Stage::Model, 1, 2);
    }
    let embedder = OnnxEmbedder::from_bytes(&model, &tok).map_err(at(Stage::Model))?;
    Ok(Model { embedder, name: BUNDLED_MODEL_NAME.into(), bytes: Rc::new((model, tok)) })
}

fn iso_now() -> String {
    js_sys::Date::new_0().to_iso_string().as_string().unwrap_or_default()
}

async fn run(state: &mut State, settings: &RunSettings) -> Result<Event, Stop> {
    let State { loaded, model, helpers, vectors, live, kde_helpers, released_vocab, .. } = state;
    // Started now, so that they are ready by the DP-KDE stage (`kde_share`).
    if kde_helpers.as_ref().is_none_or(|p| p.alive() == 0) && settings.kde_params().sampler.hist_kind().is_none() {
        *kde_helpers = Pool::start_bare(pool::helpers_for_this_machine()).ok();
    }
    let Some(Loaded { corpus, vocab, labelled, .. }) = loaded.as_ref() else {
        return Err(Stop::Failed(None, "load a corpus first".into()));
    };
    let problems = settings.check(Some(vocab.len()));
    if let Some(p) = problems.first() {
        return Err(Stop::Failed(None, p.message.clone()));
    }
    if settings.keep() > KEEP {
        return Err(Stop::Failed(None, format!("S and L must be at most {KEEP} in the app")));
    }
    let classes = settings.class_set(*labelled).map_err(|e| Stop::Failed(None, e.message))?;
    // Checked before any ε is spent (public inputs only).
    settings.kde_params().check_release_size(settings.top_n, classes.len()).map_err(|e| Stop::Failed(None, e.to_string()))?;
    let store = Store::open().await.map_err(|e| Stop::Failed(None, format!("{e}; the privacy ledger cannot be kept, so nothing was run")))?;
    let account = settings.account_name();
    let fp = corpus.fingerprint.clone();
    // The budget (before anything is computed): what the account, or this corpus, has spent.
    let spent_by = |book: &crate::ledger::LedgerBook| match &account {
        Some(a) => book.account_spent(a, &fp),
        None => book.ledger(&fp).total_epsilon(),
    };
    let vocab_key = VocabKey::new(corpus, vocab, &settings.vocab_params(), &classes, account.as_deref());
    let mut rng = SecureRng::from_os().map_err(|e| Stop::Failed(None, e.to_string()))?;
    let mut id = [0u8; 8];
    rng.fill(&mut id);
    let run_id = crate::corpus::hex(&id);
    let book = store.ledger().await.map_err(|e| Stop::Failed(None, e))?;
    // An earlier run's Ṽ with the same key, its spend still on record: read again
    // (post-processing), no new ε_voc.
    let reused = released_vocab.as_ref().filter(|_| settings.reuse_vocabulary).and_then(|k| k.reusable(&vocab_key, &book));
    let planned = settings.planned_epsilon(reused.is_some());
    // The budget reserves the whole run: what everything else recorded has spent, plus this
    // run's full planned ε, must fit the budget (the page's field, else the account's stored
    // one). Checked before anything is computed and again inside every transaction that
    // records a spend, so two tabs running at once cannot together pass the cap: the one that
    // would exceed it drops its unseen result (which costs nothing).
    let within_budget = |book: &crate::ledger::LedgerBook| -> Result<(), String> {
        let recorded_here = book.ledger(&fp).runs.iter().find(|r| r.id == run_id).map_or(0.0, |r| r.epsilon());
        let stored = account.as_ref().and_then(|a| book.accounts.get(a)).and_then(|a| a.budget);
        let s = RunSettings { budget: settings.budget.or(stored), ..settings.clone() };
        s.check_budget_of(spent_by(book) - recorded_here, planned).map_err(|e| e.message)
    };
    within_budget(&book).map_err(|e| Stop::Failed(None, e))?;
    let mut run = Run::new(run_id.clone(), iso_now());
    run.account = account.clone();
    let mut sketch_key = [0u8; 32];
    rng.fill(&mut sketch_key);
    let mut clock = now_ms();

    // 1. DP vocabulary (ε_voc). The spend is saved before anything is shown: one transaction
    // under the ledger lock that checks the budget again against what is recorded NOW (another
    // tab may have spent meanwhile; then this result is dropped unseen, which costs nothing).
    let t0 = now_ms();
    progress(Stage::Vocabulary, 0, 1);
    let (pv, fresh_vocab) = match reused {
        Some((pv, from)) => {
            run.vocabulary_from = Some(from);
            (pv, false)
        }
        None => {
            let (pv, spends) = corpus.dp_vocabulary(vocab, &settings.vocab_params(), &classes, &mut rng).map_err(at(Stage::Vocabulary))?;
            run.spends.extend(spends);
            (Rc::new(pv), true)
        }
    };
    store
        .update_ledger(|b| {
            b.adopt_legacy(&corpus.keys.legacy, &fp);
            if run.vocabulary_from.as_deref().is_some_and(|from| !crate::reuse::paid(b, &vocab_key, from)) {
                return Err("the run that paid for the reused private vocabulary is no longer in the ledger; run again to draw a new one".into());
            }
            within_budget(b)?;
            b.extend_run(&fp, &run);
            if let Some(a) = &account {
                b.note_corpus(a, &corpus.keys, settings.budget, || sketch_key);
            }
            Ok(())
        })
        .await
        .map_err(at(Stage::Vocabulary))?;
    // On record: later runs with the same key may read it (its ε_voc is in the ledger now).
    let note = match &run.vocabulary_from {
        Some(from) => format!(
            "{} terms, reused from run {from} of this page (ε_voc = {} was spent then, not again)",
            pv.terms.len(),
            settings.eps_voc
        ),
        None => format!("{} terms selected", pv.terms.len()),
    };
    if fresh_vocab {
        *released_vocab = Some(KeptVocabulary::new(vocab_key, Rc::clone(&pv), run_id.clone()));
    }
    post(&Event::StageDone { stage: Stage::Vocabulary, seconds: seconds_since(t0), note });
    checkpoint(&mut clock).await?;

    // 2 and 3. Embeddings: the bundled vectors, this session's memory, this browser's cache of
    // Ṽ's terms; the model (loaded only then) computes the rest, in memory (see `sources`).
    let t0 = now_ms();
    let kde_params = settings.kde_params();
    let take = kde_params.doc_terms_read();
    let released: Vec<TermId> = pv.terms.iter().map(|t| t.id).collect();
    // The histogram samplers read no embedding of the documents' terms, and Ṽ's only to
    // smooth: without smoothing nothing is embedded at all.
    let vectors_needed = kde_params.sampler.hist_kind().is_none() || kde_params.smoothing > 0.0;
    // Only what the mechanism reads: the first `take` terms of the documents the class set
    // keeps (documents of undeclared labels, left out, are never read).
    let mut ids: Vec<TermId> = if kde_params.sampler.embeds_document_terms() {
        corpus.kde_docs(take, &classes).iter().flat_map(|d| d.terms.iter().copied()).collect()
    } else {
        Vec::new()
    };
    if vectors_needed {
        ids.extend(&released);
    }
    ids.sort_unstable();
    ids.dedup();
    let sources = sources::Sources { model, helpers, vectors, live };
    let got = sources::embeddings(sources, vocab, &ids, Some(&store), &mut clock).await?;
    let (emb, checksum) = (&got.emb, got.model_checksum.clone());
    let fresh: std::collections::HashSet<TermId> = got.fresh.iter().copied().collect();
    let fresh_released: Vec<TermId> = released.iter().copied().filter(|id| fresh.contains(id)).collect();
    // The cache only saves time: ε_voc is already spent, so a failed write (storage full) must
    // not end the run; it is said in the stage's note.
    let not_cached = match store.put_embeddings(&checksum, vocab, &fresh_released, emb).await {
        Ok(()) => String::new(),
        Err(e) => format!(" (not cached for next time: {e})"),
    };
    post(&Event::StageDone {
        stage: Stage::Embed,
        seconds: seconds_since(t0),
        note: format!("{}{not_cached}", got.note()),
    });

    // 4. DP-KDEs (ε_kde, classes in parallel). Saved to the ledger before sampling.
    let t0 = now_ms();
    progress(Stage::Kde, 0, 1);
    checkpoint(&mut clock).await?;
    let (kde, spends) =
        kde_share::build(&corpus.kde_docs(take, &classes), &classes, emb, &released, &kde_params, kde_helpers.as_mut(), &mut rng).await?;
    run.spends.extend(spends);
    // DP class counts (sequences per class in proportion), on record with the DP summaries.
    let sizes = match settings.eps_counts {
        Some(eps) => {
            let (noisy, spend) =
                crate::dp::counts::noisy_class_counts(&corpus.class_counts(&classes), eps, &mut rng).map_err(at(Stage::Kde))?;
            run.spends.push(spend);
            crate::dp::counts::apportion(settings.per_class * classes.len(), &noisy, 1)
        }
        None => vec![settings.per_class; classes.len()],
    };
    store
        .update_ledger(|b| {
            within_budget(b)?;
            b.extend_run(&fp, &run);
            Ok(())
        })
        .await
        .map_err(at(Stage::Kde))?;
    post(&Event::StageDone {
        stage: Stage::Kde,
        seconds: seconds_since(t0),
        note: match kde_params.sampler.hist_kind() {
            Some(_) => format!("{} class(es), {} sampler", kde.classes.len(), kde_params.sampler.name()),
            None => format!("{} class(es), I = {}", kde.classes.len(), settings.features),
        },
    });
    checkpoint(&mut clock).await?;

    // 5. Sampling (post-processing of the DP-KDEs).
    let t0 = now_ms();
    progress(Stage::Sample, 0, 1);
    let cands = if vectors_needed {
        Candidates::new(&released, emb).map_err(at(Stage::Sample))?
    } else {
        Candidates::without_vectors(&released, emb.dim())
    };
    let seqs = crate::sample::sample_sized(&kde, &cands, &sizes, &mut rng).map_err(at(Stage::Sample))?;
    post(&Event::StageDone { stage: Stage::Sample, seconds: seconds_since(t0), note: format!("{} sequences", seqs.len()) });

    // What is recorded now (other tabs' runs on this corpus included).
    let ledger = store.ledger().await.map_err(at(Stage::Sample))?.ledger(&fp);
    let report = PrivacyReport::new(
        iso_now(),
        settings,
        &run,
        &ledger,
        Checked { name: vocab.name.clone(), sha256: vocab.checksum.clone() },
        Checked { name: got.model_name.clone(), sha256: checksum },
        &classes,
        seqs.len(),
    );
    Ok(Event::Finished(RunResult {
        vocabulary: pv.terms.iter().map(|t| (t.term.clone(), t.noisy_count)).collect(),
        sequences: seqs
            .iter()
            .map(|s| SequenceOut {
                label: s.label.clone(),
                keyphrases: s.keyphrases.iter().map(|&id| vocab.term(id).to_string()).collect(),
            })
            .collect(),
        epsilon_run: run.epsilon(),
        epsilon_total: ledger.total_epsilon(),
        embedded_from_cache: got.bundled + got.from_memory + got.from_cache,
        embedded_fresh: got.fresh.len(),
        report: serde_json::to_string_pretty(&report).unwrap_or_default(),
        vocabulary_from: run.vocabulary_from.clone().map(|from| (from, report.epsilon_outputs)),
    }))
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

/// Embeds every batch, here and on the helpers at once, calling `done(k, vectors, by_helper)`
/// exactly once per batch k as it finishes (in any order). A batch a helper fails on, answers
/// wrongly, or holds for much longer than a batch takes here is embedded here instead.
async fn embed_batches(
    embedder: &mut OnnxEmbedder,
    mut pool: Option<&mut Pool>,
    batches: &[Vec<&str>],
    clock: &mut f64,
    done: &mut dyn FnMut(usize, Vec<Vec<f32>>, bool) -> Result<(), Stop>,
) -> Result<(), Stop> {
    let dim = embedder.dim();
    let mut queue: VecDeque<usize> = (0..batches.len()).collect();
    // Batches out on a helper: sequence number → (batch, when it was sent).
    let mut away: HashMap<u64, (usize, f64)> = HashMap::new();
    let mut finished = vec![false; batches.len()];
    let mut left = batches.len();
    // The slowest batch embedded here, to tell a slow helper from a lost one.
    let mut slowest_here_ms = 0.0f64;
    while left > 0 {
        if let Some(p) = pool.as_deref_mut() {
            for r in p.poll() {
                // Replies to batches of an earlier, cancelled job, or taken back, are not in `away`.
                let Some((k, _)) = away.remove(&r.seq) else { continue };
                match r.result {
                    Ok(flat) if flat.len() == dim * batches[k].len() => {
                        finished[k] = true;
                        left -= 1;
                        done(k, flat.chunks(dim).map(<[f32]>::to_vec).collect(), true)?;
                    }
                    Ok(_) => {
                        p.retire(r.slot);
                        queue.push_front(k);
                    }
                    Err(_) => queue.push_front(k),
                }
            }
            while let Some(&k) = queue.front() {
                let Some(seq) = p.send(&batches[k]) else { break };
                away.insert(seq, (k, now_ms()));
                queue.pop_front();
            }
        }
        if let Some(k) = queue.pop_front() {
            let t0 = now_ms();
            let vecs = embedder.embed(&batches[k]).map_err(at(Stage::Embed))?;
            slowest_here_ms = slowest_here_ms.max(now_ms() - t0);
            finished[k] = true;
            left -= 1;
            done(k, vecs, false)?;
            if away.is_empty() {
                checkpoint(clock).await?;
                continue;
            }
            // Let the helpers' replies in now, so that no helper waits idle for its next batch.
            sleep(0).await;
        } else if left > 0 {
            // All that is left is on the helpers. Wait for their replies, but take back a batch
            // held for far longer than one takes here (a helper that hangs must not hang the job).
            let patience = 2_000.0 + 4.0 * slowest_here_ms;
            let overdue = away.iter().filter(|(_, &(_, sent))| now_ms() - sent > patience).map(|(&seq, _)| seq).min();
            match overdue.and_then(|seq| away.remove(&seq)) {
                Some((k, _)) if !finished[k] => queue.push_back(k),
                _ => sleep(2).await,
            }
        }
        *clock = now_ms();
        if CANCEL.get() {
            return Err(Stop::Cancelled);
        }
    }
    Ok(())
}

/// The utility check of `crate::eval` on the loaded corpus, or on a separate tuning file read
/// with the same columns and vocabulary: all the samplers, 3 seeds, 20% held out. On the loaded
/// corpus its figures are NOT differentially private (they are computed on the private
/// documents): nothing is released, but the check is counted in the corpus's ledger before its
/// figures are shown (tuning on private data; the privacy report states it). A check on a
/// tuning file reads nothing of the private corpus and is not counted.
async fn evaluate(state: &mut State, settings: &RunSettings, tuning: Option<(FileInfo, File)>) -> Result<Event, Stop> {
    use crate::eval::classifier::SoftmaxParams;
    use crate::eval::{EvalParams, Evaluation, Task};
    let State { loaded, model, helpers, vectors, live, .. } = state;
    let Some(Loaded { corpus: private, vocab, fields, .. }) = loaded.as_ref() else {
        return Err(Stop::Failed(None, "load a corpus first".into()));
    };
    let tuning_corpus = match &tuning {
        Some((info, file)) => Some(read_matched(std::slice::from_ref(info), std::slice::from_ref(file), fields, vocab, Stage::Evaluate)?),
        None => None,
    };
    let corpus = tuning_corpus.as_ref().unwrap_or(private);
    if corpus.stats.classes.len() < 2 {
        return Err(Stop::Failed(Some(Stage::Evaluate), "the utility check needs a label column with at least two classes".into()));
    }
    if let Some(p) = settings.check(Some(vocab.len())).first() {
        return Err(Stop::Failed(None, p.message.clone()));
    }
    let params = EvalParams {
        // Labels too rare to split (a one-document clinic) are left out rather than failing
        // the whole check; this figure is for the curator only and releases nothing.
        task: Task::MinClassDocs { min: crate::eval::split::MIN_CLASS_DOCS },
        holdout: 0.2,
        seeds: vec![0, 1, 2],
        vocab: settings.vocab_params(),
        eps_kde: settings.eps_kde,
        len: settings.len,
        features: Some(settings.features),
        kde_terms_per_doc: settings.len,
        per_class: settings.per_class,
        // Markov keeps (N+1)·N counts per class: left out where that exceeds the release cap.
        samplers: Sampler::ALL
            .into_iter()
            .filter(|&sampler| {
                crate::summary::KdeParams { sampler, ..settings.kde_params() }
                    .check_release_size(settings.top_n, corpus.stats.classes.len())
                    .is_ok()
            })
            .collect(),
        no_dp_arms: false,
        bandwidth: settings.bandwidth,
        smoothing: settings.smoothing,
        class_counts_epsilon: None,
        candidates: Default::default(),
        classifier: SoftmaxParams::default(),
    };
    let mut rng = SecureRng::from_os().map_err(|e| Stop::Failed(None, e.to_string()))?;
    let mut clock = now_ms();
    progress(Stage::Evaluate, 0, 1);
    let ev = Evaluation::prepare(corpus, vocab, params, &mut rng, &mut |_, _, _| {}).map_err(at(Stage::Evaluate))?;
    let store = Store::open().await.ok();
    let sources = sources::Sources { model, helpers, vectors, live };
    let emb = sources::embeddings(sources, vocab, &ev.terms_to_embed(), store.as_ref(), &mut clock).await?.emb;
    checkpoint(&mut clock).await?;
    let report = ev
        .run(&emb, &mut rng, &mut |_, done, total| progress(Stage::Evaluate, done as u64, total as u64))
        .map_err(at(Stage::Evaluate))?;
    if tuning.is_none() {
        // Counted before the figures are shown; without a ledger they are not shown.
        let mut id = [0u8; 8];
        rng.fill(&mut id);
        let mut arms: Vec<&str> = report.arms.iter().map(|a| a.arm.as_str()).collect();
        arms.sort_unstable();
        arms.dedup();
        let check = crate::ledger::UtilityCheck { id: crate::corpus::hex(&id), when: iso_now(), settings_compared: arms.len() };
        let store = store.ok_or_else(|| Stop::Failed(Some(Stage::Evaluate), "browser storage is unavailable: the check cannot be recorded, so its figures are not shown".into()))?;
        let fp = private.fingerprint.clone();
        store
            .update_ledger(move |b| {
                b.record_check(&fp, check);
                Ok(())
            })
            .await
            .map_err(at(Stage::Evaluate))?;
    }
    Ok(Event::Evaluated(report))
}

/// Embeds the 20 reference terms shipped with the bundled model and compares with
/// sentence-transformers' vectors (`models/reference_embeddings.json`).
///
/// The terms go one per batch through the helper workers as well (started and waited for
/// here), so the check covers every worker that embeds in a run.
async fn model_check(state: &mut State) -> Result<Event, Stop> {
    let lists = [bundled_vocab(state, Bundled::Medical).await?, bundled_vocab(state, Bundled::English).await?];
    let State { model: slot, helpers, vectors, .. } = state;
    #[derive(serde::Deserialize)]
    struct Reference {
        terms: Vec<String>,
        emb: Vec<Vec<f32>>,
    }
    let bytes = fetch_bytes("models/reference_embeddings.json").await.map_err(at(Stage::Model))?;
    let r: Reference = serde_json::from_slice(&bytes).map_err(at(Stage::Model))?;
    let m = ensure_model(slot).await?;
    let batches: Vec<Vec<&str>> = r.terms.iter().map(|t| vec![t.as_str()]).collect();
    let pool = helpers_for(helpers, m, usize::MAX);
    let helper_count = match pool {
        Some(p) => {
            helpers_ready(p, 120_000.0).await?;
            p.idle()
        }
        None => 0,
    };
    let mut got = vec![Vec::new(); batches.len()];
    let mut by_helpers = 0;
    let mut clock = now_ms();
    embed_batches(&mut m.embedder, helpers.as_mut(), &batches, &mut clock, &mut |k, mut v, by_helper| {
        got[k] = v.pop().unwrap_or_default();
        by_helpers += usize::from(by_helper);
        Ok(())
    })
    .await
    .map_err(|e| match e {
        Stop::Failed(_, m) => Stop::Failed(Some(Stage::Model), m),
        other => other,
    })?;
    let mut worst = (f64::INFINITY, String::new());
    for ((term, want), have) in r.terms.iter().zip(&r.emb).zip(&got) {
        let dot: f64 = want.iter().zip(have).map(|(a, b)| f64::from(*a) * f64::from(*b)).sum();
        let na: f64 = want.iter().map(|a| f64::from(*a).powi(2)).sum::<f64>().sqrt();
        let nb: f64 = have.iter().map(|a| f64::from(*a).powi(2)).sum::<f64>().sqrt();
        let cos = if want.len() == have.len() { dot / (na * nb) } else { f64::NAN };
        if !(cos >= worst.0) {
            worst = (cos, term.clone());
        }
    }
    // The shipped bundled vectors against this model: random terms of each list.
    let mut rng = SecureRng::from_os().map_err(|e| Stop::Failed(Some(Stage::Model), e.to_string()))?;
    let (vectors_checked, vectors_worst_cosine, vectors_worst_term) =
        sources::check_bundled(m, helpers, vectors, &lists, 32, &mut rng).await.map_err(|e| match e {
            Stop::Failed(_, m) => Stop::Failed(Some(Stage::Model), m),
            other => other,
        })?;
    Ok(Event::ModelChecked {
        terms: r.terms.len(),
        worst_cosine: worst.0,
        worst_term: worst.1,
        passed: worst.0 >= 0.999 && (vectors_checked == 0 || vectors_worst_cosine >= 0.995),
        helpers: helper_count,
        by_helpers,
        vectors_checked,
        vectors_worst_cosine,
        vectors_worst_term,
    })
}

/// Terms/s at batch 1 and 32 on the first `terms` medical-glossary terms, plus load time.
async fn bench(state: &mut State, terms: usize) -> Result<Event, Stop> {
    let vocab = bundled_vocab(state, Bundled::Medical).await?;
    let State { model, helpers, .. } = state;
    *model = None;
    *helpers = None;
    let t0 = now_ms();
    let m = ensure_model(model).await?;
    let model_load_seconds = seconds_since(t0);
    let mut texts: Vec<&str> = (0..terms.min(vocab.len())).map(|i| vocab.term(i as TermId)).collect();
    // Batched as the pipeline batches them: similar lengths together (less padding).
    crate::embed::sort_for_batching(&m.embedder, &mut texts, |t| *t);
    let mut rate = |batch: usize| -> Result<f64, Stop> {
        let t0 = now_ms();
        for chunk in texts.chunks(batch) {
            m.embedder.embed(chunk).map_err(at(Stage::Embed))?;
        }
        Ok(texts.len() as f64 / seconds_since(t0))
    };
    let b1 = rate(1)?;
    let b32 = rate(32)?;
    // The longest run of terms of equal token count (at most 32), embedded 8 times as one batch.
    let same: Vec<&str> = {
        let mut best: &[&str] = &[];
        let key = |t: &&str| m.embedder.batch_key(t);
        for group in texts.chunk_by(|a, b| key(a) == key(b)) {
            if group.len() > best.len() {
                best = group;
            }
        }
        best.iter().take(32).copied().collect()
    };
    let t0 = now_ms();
    for _ in 0..8 {
        m.embedder.embed(&same).map_err(at(Stage::Embed))?;
    }
    let same_shape = (8 * same.len()) as f64 / seconds_since(t0);
    let tokens = |t: &[&str]| t.iter().map(|t| m.embedder.batch_key(t)).sum::<usize>() as f64 / t.len().max(1) as f64;
    let (mean_tokens, same_shape_tokens) = (tokens(&texts), tokens(&same));
    // The app's own path: batches of 32 shared between this worker and the helpers, once they
    // have started and loaded the model (that time is reported apart).
    let t0 = now_ms();
    let count = pool::helpers_for_this_machine();
    let mut pool = if count > 0 { Pool::start(count, &m.bytes.0, &m.bytes.1, m.embedder.checksum()).ok() } else { None };
    if let Some(p) = pool.as_mut() {
        helpers_ready(p, 120_000.0).await?;
    }
    let helpers_start_seconds = seconds_since(t0);
    let helpers_ready = pool.as_ref().map_or(0, Pool::idle);
    let batches: Vec<Vec<&str>> = texts.chunks(BATCH).map(<[&str]>::to_vec).collect();
    let t0 = now_ms();
    let mut clock = t0;
    embed_batches(&mut m.embedder, pool.as_mut(), &batches, &mut clock, &mut |_, _, _| Ok(())).await?;
    let with_helpers = texts.len() as f64 / seconds_since(t0);
    let singles: Vec<Vec<&str>> = texts.iter().map(|t| vec![*t]).collect();
    let t0 = now_ms();
    embed_batches(&mut m.embedder, pool.as_mut(), &singles, &mut clock, &mut |_, _, _| Ok(())).await?;
    let b1_with_helpers = texts.len() as f64 / seconds_since(t0);
    *helpers = pool;
    Ok(Event::Benched(BenchFigures {
        helpers: helpers_ready,
        helpers_start_seconds,
        batch32_with_helpers_terms_per_second: with_helpers,
        batch1_with_helpers_terms_per_second: b1_with_helpers,
        batch32_same_shape_terms_per_second: same_shape,
        mean_tokens,
        same_shape_tokens,
        model_load_seconds,
        terms: texts.len(),
        batch1_terms_per_second: b1,
        batch32_terms_per_second: b32,
        wasm_memory_bytes: pool::wasm_memory_bytes(),
    }))
}
