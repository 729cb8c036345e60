//! The DP vote over generated candidates in the worker (`Vote`): the core's run
//! (`dpkps_core::run::vote`, mechanism and proof in `dpkps_core::dp::vote`) over this worker's
//! ledger, with the private documents embedded here and on the helper workers.
//!
//! Steps, in this order, so that nothing is spent on a vote that cannot finish:
//! 1. refused from public inputs (no corpus, the vote off, no account, no candidate of a
//!    declared class);
//! 2. the corpus files read again (the worker drops every text after matching; the page keeps
//!    the `File` objects), each document checked against the hash the first read kept: other
//!    files, or files changed since, are refused (a unit would get another's text);
//! 3. the candidates (public) embedded, then `run::vote`: the vote's ε recorded in IndexedDB
//!    under the budget rules (refused over budget, with nothing embedded), then the voting
//!    units' documents embedded ([`Documents`]), the noise drawn, the release returned.
//!
//! Privacy: every private document is embedded by a model call of its own (a batch of one
//! text, `embed_batches` with width 1, here or on a helper worker that holds the same model):
//! its vector is a function of its text alone, as the vote's proof needs. The texts and the
//! vectors stay in this worker's (and its helpers') memory for the job only, never stored or
//! posted to the page; what goes back is the noisy release and the kept positions.

use web_sys::File;

use super::control::{at, checkpoint, iso_now, now_ms, post, progress, seconds_since, Stop, CANCEL};
use super::files::BlobReader;
use super::helpers::embed_share::{embed_batches, retire_unlike};
use super::helpers::pool::Pool;
use super::load::format_of;
use super::model::{ensure_model, Model};
use super::store::Store;
use super::{helpers_for, helpers_ready, Loaded, State};
use dpkps_core::dp::summary::{DpSummary, SummaryInputs};
use dpkps_core::dp::vote::Candidates;
use dpkps_core::dp::SecureRng;
use dpkps_core::embed::Embed;
use dpkps_core::input::corpus::{self, Fields, Ingest};
use dpkps_core::input::public_vocab::{PublicVocabulary, TermId};
use dpkps_core::ledger::{LedgerBook, Spend};
use dpkps_core::protocol::{Event, FileInfo, RunSettings, Stage, VoteCandidate, VoteResult};
use dpkps_core::run::vote::{DocumentEmbedder, VoteInputs, VoteRecord, VoteSettings};
use dpkps_core::run::{Host, RunError, Vectors};

/// What a `Vote` request asks for.
pub struct VoteAsk {
    pub files: Vec<FileInfo>,
    pub candidates: Vec<VoteCandidate>,
    pub settings: RunSettings,
    pub from_run: Option<String>,
}

pub async fn vote(state: &mut State, ask: VoteAsk, files: &[File]) -> Result<Event, Stop> {
    let stage = Stage::Vote;
    let failed = |m: String| Stop::Failed(Some(stage), m);
    let State { loaded, model, helpers, .. } = state;
    let Some(Loaded { corpus, fields, labelled, .. }) = loaded.as_ref() else {
        return Err(failed("load the corpus first: its documents vote".into()));
    };
    let Some(plan_vote) = ask.settings.vote else {
        return Err(failed("the DP vote is off in these settings".into()));
    };
    let plan = dpkps_core::run::RunPlan::for_vote(ask.settings.clone(), *labelled).map_err(at(stage))?;
    if plan.account.is_none() {
        return Err(failed("name the budget account (the dataset) first: every vote is recorded under one".into()));
    }
    // The candidates by declared class, in the order sent; their checksum ties the vote to them.
    let mut per_class: Vec<Vec<usize>> = vec![Vec::new(); plan.classes.len()];
    for (i, c) in ask.candidates.iter().enumerate() {
        if let Some(k) = plan.classes.assign(c.label.as_deref()) {
            per_class[k].push(i);
        }
    }
    let other = ask.candidates.len() - per_class.iter().map(Vec::len).sum::<usize>();
    if other == ask.candidates.len() {
        return Err(failed("no generated document is of a declared class: nothing to vote on".into()));
    }
    if ask.files.is_empty() || files.len() < ask.files.len() {
        return Err(failed("the corpus files were not given: choose them again and load the corpus".into()));
    }
    let texts = read_texts(&ask.files, files, fields, &corpus.keys.doc_hashes)?;

    let t0 = now_ms();
    let m = ensure_model(model).await?;
    post(&Event::StageDone { stage: Stage::Model, seconds: seconds_since(t0), note: m.name.clone() });
    let mut clock = now_ms();
    // The candidates are public: embedded like the documents (one a model call), before any ε.
    let cand_texts: Vec<&str> = ask.candidates.iter().map(|c| c.text.as_str()).collect();
    let cand_vectors = embed_each(m, helpers, &cand_texts, &mut clock, None).await?;
    let grouped: Vec<Vec<Vec<f32>>> = per_class.iter().map(|idx| idx.iter().map(|&i| cand_vectors[i].clone()).collect()).collect();
    let cands = Candidates::new(m.embedder.dim(), &grouped).map_err(at(stage))?;
    let candidates_from = serde_json::json!({
        "sha256": dpkps_core::run::vote::candidates_sha256(ask.candidates.iter().map(|c| (c.label.as_deref(), c.text.as_str()))),
        "run": ask.from_run,
        "model": m.embedder.checksum(),
        "provenance": "a run's generated documents (every one generated, before the non-DP replay check)",
    });

    let store = Store::open().await.map_err(|e| failed(format!("{e}; the privacy ledger cannot be kept, so nothing was voted")))?;
    let mut host = VoteHost { store, clock, stage_start: now_ms() };
    let mut docs = Documents { model: m, helpers, texts: &texts, clock: now_ms(), stopped: None };
    let mut rng = SecureRng::from_os().map_err(|e| failed(e.to_string()))?;
    let settings = VoteSettings::from(plan_vote);
    let inputs = VoteInputs { corpus, candidates: &cands, candidates_from: candidates_from.clone(), from_run: ask.from_run.as_deref() };
    let out = dpkps_core::run::vote::vote(&plan, inputs, &settings, &mut docs, &mut host, &mut rng).await;
    // A stop inside the embedding (Cancel) is said as such, not as the core's error.
    let out = match (out, docs.stopped.take()) {
        (Err(_), Some(stop)) => return Err(stop),
        (out, _) => out?,
    };
    drop(texts);
    let kept: Vec<usize> = {
        let mut k: Vec<usize> = out.report.classes.iter().enumerate().flat_map(|(c, o)| o.kept.iter().map(move |&j| (c, j))).map(|(c, j)| per_class[c][j]).collect();
        k.sort_unstable();
        k
    };
    let epsilon_total = host.store.ledger().await.map(|b| b.ledger(&corpus.fingerprint).total_epsilon()).unwrap_or(0.0);
    let record = VoteRecord { vote: out.report, candidates_from, kept: kept.len() };
    Ok(Event::Voted(Box::new(VoteResult { record, kept, other_class: other, epsilon_total })))
}

/// The corpus's texts in the order the first read numbered its documents, each checked against
/// the hash that read kept (`CorpusKeys::doc_hashes`), as `dpkps select` reads them again.
fn read_texts(infos: &[FileInfo], files: &[File], fields: &Fields, first_read: &[[u8; 32]]) -> Result<Vec<String>, Stop> {
    let stage = Stage::Vote;
    let total: f64 = files.iter().take(infos.len()).map(|f| f.size()).sum();
    let mut ingest = Ingest::new(fields.label.is_some());
    let mut texts = Vec::with_capacity(first_read.len());
    let mut base = 0.0;
    for (info, file) in infos.iter().zip(files) {
        let format = format_of(&info.name)?;
        // Bytes read, then (`Documents`) documents embedded: the page shows "done of total".
        let mut report = |pos: f64| progress(stage, (base + pos) as u64, total as u64);
        let reader = BlobReader::new(file.clone(), &mut report).map_err(at(stage))?;
        corpus::stream(reader, &info.name, format, fields, None, &mut ingest, &mut |d| texts.push(d.text.to_string())).map_err(at(stage))?;
        base += file.size();
    }
    let same = texts.len() == first_read.len() && texts.iter().zip(first_read).all(|(t, h)| corpus::doc_hash(t) == *h);
    if !same {
        return Err(Stop::Failed(Some(stage), "these files are not the corpus that was loaded (other or changed documents): load the corpus again, then vote".into()));
    }
    Ok(texts)
}

/// Embeds `texts`, each by a model call of its own (width 1), here and on the helpers; with
/// `report` (private documents), the stage's progress over (done of total) from `report.0` on,
/// and only on helpers that embed a public probe to this worker's bits (`retire_unlike`).
async fn embed_each(m: &mut Model, helpers: &mut Option<Pool>, texts: &[&str], clock: &mut f64, report: Option<(u64, u64)>) -> Result<Vec<Vec<f32>>, Stop> {
    let stage = Stage::Vote;
    let dim = m.embedder.dim();
    let batches: Vec<Vec<&str>> = texts.iter().map(|t| vec![*t]).collect();
    let mut out = vec![Vec::new(); texts.len()];
    let mut done = 0u64;
    let mut pool = helpers_for(helpers, m, batches.len());
    if let (Some(p), Some(_)) = (pool.as_deref_mut(), report) {
        // Every helper loaded (or dead) first: one still loading would join unprobed.
        helpers_ready(p, 120_000.0).await?;
        retire_unlike(&mut m.embedder, p).await?;
    }
    embed_batches(&mut m.embedder, pool, &batches, 1, clock, &mut |k, mut vecs, _| {
        match vecs.pop() {
            Some(v) if v.len() == dim && vecs.is_empty() => out[k] = v,
            _ => return Err(Stop::Failed(Some(stage), format!("not one embedding of {dim} values for a document"))),
        }
        done += 1;
        if let Some((from, total)) = report {
            progress(stage, from + done, total);
        }
        Ok(())
    })
    .await?;
    Ok(out)
}

/// The private documents as the vote asks for them (`DocumentEmbedder`): only after its ε is on
/// record, and only the voting units' documents.
struct Documents<'a> {
    model: &'a mut Model,
    helpers: &'a mut Option<Pool>,
    texts: &'a [String],
    clock: f64,
    /// Why the embedding stopped (Cancel, a helper's failure), said instead of the core's error.
    stopped: Option<Stop>,
}

impl DocumentEmbedder for Documents<'_> {
    async fn embed_documents(&mut self, docs: &[usize]) -> Result<Vec<Vec<f32>>, RunError> {
        let mine: Vec<&str> = docs.iter().filter_map(|&i| self.texts.get(i).map(String::as_str)).collect();
        if mine.len() != docs.len() {
            return Err(RunError::Refused("a document the vote asked for is not in the corpus read".into()));
        }
        let n = mine.len() as u64;
        progress(Stage::Vote, 0, n);
        match embed_each(self.model, self.helpers, &mine, &mut self.clock, Some((0, n))).await {
            Ok(v) => Ok(v),
            Err(stop) => {
                let why = match &stop {
                    Stop::Cancelled => "cancelled".to_string(),
                    Stop::Failed(_, m) => m.clone(),
                };
                self.stopped = Some(stop);
                Err(RunError::Refused(why))
            }
        }
    }
}

/// The vote's side of the `Host`: the ledger in IndexedDB (one transaction under the Web Lock),
/// progress and Cancel; a vote reads no term vectors and builds no summaries.
struct VoteHost {
    store: Store,
    clock: f64,
    stage_start: f64,
}

impl Host for VoteHost {
    type Error = Stop;

    fn fail(&self, stage: Option<Stage>, e: RunError) -> Stop {
        if CANCEL.get() {
            return Stop::Cancelled;
        }
        // Before the vote's stage (the budget, a setting): nothing was recorded or embedded.
        match stage {
            None => Stop::Failed(Some(Stage::Vote), format!("The DP vote was not run, and nothing was spent: {e}")),
            Some(s) => Stop::Failed(Some(s), e.to_string()),
        }
    }

    fn stage_started(&mut self, _: Stage) {
        self.stage_start = now_ms();
    }

    fn stage_done(&mut self, stage: Stage, note: String) {
        post(&Event::StageDone { stage, seconds: seconds_since(self.stage_start), note });
    }

    async fn checkpoint(&mut self) -> Result<(), Stop> {
        checkpoint(&mut self.clock).await
    }

    async fn ledger(&mut self) -> Result<LedgerBook, Stop> {
        self.store.ledger().await.map_err(|e| Stop::Failed(Some(Stage::Vote), e))
    }

    async fn commit(&mut self, stage: Stage, change: &mut dyn FnMut(&mut LedgerBook) -> Result<(), RunError>) -> Result<(), Stop> {
        self.store.update_ledger(|b| change(b).map_err(|e| e.to_string())).await.map_err(at(stage))
    }

    async fn vectors(&mut self, _: &PublicVocabulary, _: &[TermId], _: &[TermId]) -> Result<Vectors, Stop> {
        Err(Stop::Failed(Some(Stage::Vote), "internal: a vote reads no term vectors".into()))
    }

    async fn summaries(&mut self, _: SummaryInputs<'_>, _: &mut SecureRng) -> Result<(DpSummary, Vec<Spend>), Stop> {
        Err(Stop::Failed(Some(Stage::Vote), "internal: a vote builds no summaries".into()))
    }

    fn now(&self) -> String {
        iso_now()
    }
}
