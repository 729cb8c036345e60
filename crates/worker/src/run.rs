//! A run in the page: the core's one orchestration (`dpkps_core::run::execute`) over the worker's
//! host. What is the browser's own: vectors from the bundled files, this session's memory,
//! this browser's cache of Ṽ's terms and the model (with helper workers); the ledger in
//! IndexedDB, each spend one transaction under a Web Lock; progress messages, cancel between
//! stages; the DP-KDE sums shared with helper workers (`kde_share`: the same release); and the
//! private vocabulary kept for later runs (`dpkps_core::run::reuse`).

use std::collections::HashMap;
use std::rc::Rc;

use dpkps_core::dp::vocabulary::PrivateVocabulary;
use dpkps_core::dp::SecureRng;
use dpkps_core::embed::bundle::VectorFile;
use dpkps_core::dp::summary::{DpSummary, SummaryInputs};
use dpkps_core::ledger::{LedgerBook, Spend};
use dpkps_core::input::matched::MatchedCorpus;
use dpkps_core::protocol::{Event, RunResult, RunSettings, Stage};
use dpkps_core::run::report::Checked;
use dpkps_core::run::reuse::{KeptVocabulary, VocabKey};
use dpkps_core::run::{execute, Host, RunError, RunInputs, RunPlan, Vectors, Vocabulary};
use dpkps_core::input::public_vocab::{Bundled, PublicVocabulary, TermId};

use super::control::{at, checkpoint, iso_now, now_ms, post, progress, seconds_since, Stop};
use super::helpers::kde_share;
use super::helpers::pool::{self, Pool};
use super::model::Model;
use super::sources::{self, LiveCache};
use super::store::Store;
use super::{Loaded, State, KEEP};

/// The worker's side of a run.
struct WorkerHost<'s> {
    store: Store,
    model: &'s mut Option<Model>,
    helpers: &'s mut Option<Pool>,
    vectors: &'s mut HashMap<Bundled, Option<Rc<VectorFile>>>,
    live: &'s mut Option<LiveCache>,
    summary_helpers: &'s mut Option<Pool>,
    /// Where a Ṽ this run draws is kept, and under which key.
    kept: &'s mut Option<KeptVocabulary>,
    key: VocabKey,
    /// The last yield to the event loop (`checkpoint`), and when the current stage started.
    clock: f64,
    stage_start: f64,
    /// Vectors read from the bundled files, memory or the cache; and computed by the model.
    from_cache: usize,
    fresh: usize,
    /// How the DP-KDE sums were shared, for the stage's note.
    summary_note: String,
}

impl Host for WorkerHost<'_> {
    type Error = Stop;

    fn fail(&self, stage: Option<Stage>, e: RunError) -> Stop {
        Stop::Failed(stage, e.to_string())
    }

    fn stage_started(&mut self, stage: Stage) {
        self.stage_start = now_ms();
        // The embedding stage reports its own progress (`sources`), the model's included.
        if stage != Stage::Embed {
            progress(stage, 0, 1);
        }
    }

    fn stage_done(&mut self, stage: Stage, note: String) {
        let note = if stage == Stage::Summary { note + &std::mem::take(&mut self.summary_note) } else { note };
        post(&Event::StageDone { stage, seconds: seconds_since(self.stage_start), note });
    }

    async fn checkpoint(&mut self) -> Result<(), Stop> {
        checkpoint(&mut self.clock).await
    }

    async fn ledger(&mut self) -> Result<LedgerBook, Stop> {
        self.store.ledger().await.map_err(|e| Stop::Failed(None, e))
    }

    async fn commit(&mut self, stage: Stage, change: &mut dyn FnMut(&mut LedgerBook) -> Result<(), RunError>) -> Result<(), Stop> {
        self.store.update_ledger(|b| change(b).map_err(|e| e.to_string())).await.map_err(at(stage))
    }

    async fn vectors(&mut self, vocab: &PublicVocabulary, ids: &[TermId], released: &[TermId]) -> Result<Vectors, Stop> {
        let src = sources::Sources { model: &mut *self.model, helpers: &mut *self.helpers, vectors: &mut *self.vectors, live: &mut *self.live };
        let got = sources::embeddings(src, vocab, ids, Some(&self.store), &mut self.clock).await?;
        let fresh: std::collections::HashSet<TermId> = got.fresh.iter().copied().collect();
        let fresh_released: Vec<TermId> = released.iter().copied().filter(|id| fresh.contains(id)).collect();
        // The cache only saves time: ε_voc is already spent, so a failed write (storage full)
        // must not end the run; it is said in the stage's note.
        let not_cached = match self.store.put_embeddings(&got.model_checksum, &got.rows_key, vocab, &fresh_released, &got.emb).await {
            Ok(()) => String::new(),
            Err(e) => format!(" (not cached for next time: {e})"),
        };
        self.from_cache = got.bundled + got.from_memory + got.from_cache;
        self.fresh = got.fresh.len();
        let note = format!("{}{not_cached}", got.note());
        Ok(Vectors { emb: got.emb, model: Checked { name: got.model_name, sha256: got.model_checksum }, note })
    }

    async fn summaries(&mut self, inputs: SummaryInputs<'_>, rng: &mut SecureRng) -> Result<(DpSummary, Vec<Spend>), Stop> {
        let mut shared = kde_share::Shared::default();
        let out = kde_share::build(inputs, self.summary_helpers.as_mut(), rng, &mut shared).await;
        if shared.parts > 1 {
            self.summary_note = format!(" (sums in {} parts, {} by helper workers)", shared.parts, shared.by_helpers);
        }
        out
    }

    fn vocabulary_recorded(&mut self, pv: &Rc<PrivateVocabulary>, run_id: &str) {
        // On record: later runs with the same key may read it (its ε_voc is in the ledger now).
        *self.kept = Some(KeptVocabulary::new(self.key.clone(), Rc::clone(pv), run_id.to_string()));
    }

    fn now(&self) -> String {
        iso_now()
    }
}

/// What a run and a DP check both start from: the loaded corpus, the plan from the page's
/// settings, and the host over this worker's state with the ledger's store open.
struct Started<'s> {
    corpus: &'s MatchedCorpus,
    vocab: &'s PublicVocabulary,
    plan: RunPlan,
    host: WorkerHost<'s>,
}

/// Plans the job and builds its host, refusing it before anything is spent: no corpus loaded,
/// settings the plan refuses, more terms kept per document (`keep`) than matching kept
/// ([`KEEP`]), or no ledger to record in (`nothing`: what was then not done).
async fn start<'s>(state: &'s mut State, settings: &RunSettings, keep: impl FnOnce(&RunPlan) -> usize, nothing: &str) -> Result<Started<'s>, Stop> {
    let State { loaded, model, helpers, vectors, live, summary_helpers, released_vocab, .. } = state;
    let Some(Loaded { corpus, vocab, labelled, .. }) = loaded.as_ref() else {
        return Err(Stop::Failed(None, "load a corpus first".into()));
    };
    let plan = RunPlan::new(settings.clone(), *labelled, vocab.len()).map_err(|e| Stop::Failed(None, e.to_string()))?;
    // Every run under an account, as the CLI requires: the account sketches the corpus, so that
    // a later extract of the same records is held to the same budget.
    if plan.account.is_none() {
        return Err(Stop::Failed(None, "name the budget account (the dataset) first: every run is recorded under one".into()));
    }
    if keep(&plan) > KEEP {
        return Err(Stop::Failed(None, format!("S and L must be at most {KEEP} in the app")));
    }
    let store = Store::open().await.map_err(|e| Stop::Failed(None, format!("{e}; the privacy ledger cannot be kept, so {nothing}")))?;
    let key = VocabKey::new(corpus, vocab, &plan.vocab_params(), &plan.classes, plan.account.as_deref());
    let host = WorkerHost {
        store,
        model,
        helpers,
        vectors,
        live,
        summary_helpers,
        kept: released_vocab,
        key,
        clock: now_ms(),
        stage_start: now_ms(),
        from_cache: 0,
        fresh: 0,
        summary_note: String::new(),
    };
    Ok(Started { corpus, vocab, plan, host })
}

/// A run request: the plan from the page's settings, Ṽ drawn or reused, the stages, the result.
pub(super) async fn run(state: &mut State, settings: &RunSettings) -> Result<Event, Stop> {
    // Started now, so that they are ready by the DP-KDE stage (`kde_share`): the DP-KDE sums,
    // which read the documents' term vectors, are the work worth sharing.
    if state.summary_helpers.as_ref().is_none_or(|p| p.alive() == 0) && settings.summary_params().needs().document_term_vectors {
        state.summary_helpers = Pool::start_bare(pool::helpers_for_this_machine()).ok();
    }
    let Started { corpus, vocab, plan, mut host } = start(state, settings, RunPlan::keep, "nothing was run").await?;
    let book = host.store.ledger().await.map_err(|e| Stop::Failed(None, e))?;
    // An earlier run's Ṽ with the same key, its spend still on record: read again
    // (post-processing), no new ε_voc.
    let source = match host.kept.as_ref().filter(|_| settings.reuse_vocabulary).and_then(|k| k.reusable(&host.key, &book)) {
        Some((pv, from)) => Vocabulary::Reuse { pv, from, key: host.key.clone() },
        None => Vocabulary::Draw,
    };
    let mut rng = SecureRng::from_os().map_err(|e| Stop::Failed(None, e.to_string()))?;
    let out = execute(&plan, RunInputs { corpus, vocab, vocabulary: source }, &mut host, &mut rng).await?;
    Ok(Event::Finished(RunResult {
        vocabulary: out.vocabulary.terms.iter().filter_map(|t| Some((t.term.clone(), t.noisy_count?))).collect(),
        vocabulary_whole_list: out.vocabulary.whole_list.then_some(out.vocabulary.terms.len()),
        sequences: dpkps_core::run::sequences_out(&out.sequences, &out.signals, vocab),
        epsilon_run: out.run.epsilon(),
        epsilon_total: out.ledger.total_epsilon(),
        embedded_from_cache: host.from_cache,
        embedded_fresh: host.fresh,
        report: serde_json::to_string_pretty(&out.report).unwrap_or_default(),
        vocabulary_from: out.run.vocabulary_from.clone().map(|from| (from, out.report.epsilon_outputs)),
        signals: out.signals.clone(),
    }))
}

/// The DP utility check on the loaded corpus (`dpkps_core::run::check`): every sampler whose release
/// fits the settings, held to the account's budget and recorded in the ledger, through the same
/// host as a run. Its Ṽ (drawn from the training documents only) is not kept for later runs.
pub(super) async fn dp_check(state: &mut State, settings: &RunSettings) -> Result<Event, Stop> {
    use dpkps_core::eval::dp_check::CheckParams;
    let every_sampler = |plan: &RunPlan| CheckParams::every_sampler(&plan.settings, plan.classes.len(), plan.top_n_kept);
    let keep = |plan: &RunPlan| every_sampler(plan).keep(&plan.settings);
    let Started { corpus, vocab, plan, mut host } = start(state, settings, keep, "nothing was checked").await?;
    let mut rng = SecureRng::from_os().map_err(|e| Stop::Failed(None, e.to_string()))?;
    let out = dpkps_core::run::check::check(&plan, corpus, vocab, every_sampler(&plan), &mut host, &mut rng).await?;
    Ok(Event::DpChecked { id: out.run.id, result: out.result })
}
