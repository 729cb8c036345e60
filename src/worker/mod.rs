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
//!
//! Layout: this file is the message loop (`on_message`, `handle`), the state kept between
//! requests ([`State`]) and the run (`run`, with `helpers_for` and `helpers_ready`). Every
//! other request has its own module ([`load`], [`model`], [`evaluate`], [`diagnostics`],
//! [`ledger_requests`]); what the jobs share is [`control`] (progress, cancelling, stopping: a
//! leaf), [`assets`], [`sources`] and [`store`]; the helper workers are [`helpers`]. The
//! modules take the state from here; none of them imports another's job.

mod assets;
mod background;
mod control;
mod diagnostics;
mod evaluate;
mod files;
mod helpers;
mod ledger_requests;
mod load;
mod model;
mod sources;
mod store;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::spawn_local;
use web_sys::{File, MessageEvent};

use crate::corpus::Fields;
use crate::dp::SecureRng;
use crate::embed::Embed;
use crate::ledger::Run;
use crate::pipeline::MatchedCorpus;
use crate::protocol::{Event, LedgerEvent, Request, RunResult, RunSettings, SequenceOut, Stage};
use crate::report::{Checked, PrivacyReport};
use crate::reuse::{KeptVocabulary, VocabKey};
use crate::sample::Candidates;
use crate::vocab::{Bundled, PublicVocabulary, TermId};

use control::{at, checkpoint, iso_now, now_ms, post, progress, scope, seconds_since, sleep, Stop, BUSY, CANCEL};
use diagnostics::{bench, model_check};
use evaluate::evaluate;
use helpers::{kde_share, pool};
use ledger_requests::ledger_request;
use load::{inspect, load};
use model::{ensure_model, model_loaded, use_model, Model};
use pool::Pool;
use store::Store;

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
    let _ = js_sys::Reflect::set(&figures, &"worker".into(), &JsValue::from_f64(helpers::wasm_memory_bytes() as f64));
    let _ = js_sys::Reflect::set(&figures, &"helpers".into(), &list);
    let _ = js_sys::Reflect::set(&scope(), &"dpkpsMemory".into(), &figures);
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
        Request::UseModel { model, tokenizer } => use_model(&mut state, &files, model, tokenizer),
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

