//! The recipient's mode (`Train`): a labelled synthetic corpus, the recipient's own unlabelled
//! documents and an optional labelled test set, read here, embedded here and on the helper
//! workers ([`embed_share`]), and the classifier trained, scored and applied by the core that
//! `dpkps train` runs ([`dpkps_adapt::task`]), one epoch at a time so that Cancel gets in.
//!
//! Privacy: no ε is spent (the synthetic corpus is a DP release; the other documents are the
//! recipient's own). The documents' texts are held in this worker's memory for the job only
//! and go back to the page that chose them (the predictions); nothing is stored or sent
//! anywhere else, under the same policy as the curator's mode.

use web_sys::File;

use super::control::{at, checkpoint, now_ms, post, progress, seconds_since, Stop};
use super::files::BlobReader;
use super::helpers::embed_share::embed_batches;
use super::helpers::pool::Pool;
use super::load::format_of;
use super::model::{ensure_model, Model};
use super::{helpers_for, State};
use dpkps_adapt::task::{self, Documents, Outcome, Task};
use dpkps_adapt::{Matrix, TrainParams};
use dpkps_core::input::corpus::{Fields, Ingest};
use dpkps_core::embed::Embed;
use dpkps_core::protocol::{limits, DocSet, Event, Stage, TrainResult};

/// Documents per embedding batch: one, as the CLI embeds them (`adapt::task::batches`): a
/// document's vector then depends on its text alone, the model runs its plan for one text, and
/// Cancel gets in after every document. Natively that is 1.3 times quicker than batches of 4;
/// here it is as quick (600 MTSamples notes, the worker and one helper: 82.5 and 84.3 s, against
/// 72.4 and 83.3 s in batches of 4).
const DOC_BATCH: usize = 1;

/// What a `Train` request asks for.
pub struct TrainAsk {
    pub synthetic: DocSet,
    pub unlabelled: Option<DocSet>,
    pub test: Option<DocSet>,
    pub params: TrainParams,
    pub compare: bool,
}

/// A `Train` request: the sets read (or as embedded earlier in this page session), embedded,
/// the classifier trained and applied to the recipient's documents.
pub async fn train(state: &mut State, ask: TrainAsk, files: &[File]) -> Result<Event, Stop> {
    check_ask(&ask, files)?;
    let stage = Stage::Documents;
    let t_model = now_ms();
    let m = ensure_model(&mut state.model).await?;
    post(&Event::StageDone { stage: Stage::Model, seconds: seconds_since(t_model), note: m.name.clone() });
    progress(stage, 0, 0);
    let checksum = m.embedder.checksum().to_string();
    let t0 = now_ms();
    let Gathered { mut sets, fresh } = gather(&state.embedded, &checksum, &ask, files)?;
    let mut clock = now_ms();
    let embedded = embed_fresh(m, &mut state.helpers, &mut sets, fresh, &mut clock).await?;
    let embed_seconds = seconds_since(t0);
    let total = embedded.documents;
    let reused: usize = sets.iter().flatten().map(|e| e.docs.texts.len()).sum::<usize>() - total;
    let note = if reused > 0 { format!("{total} documents embedded, {reused} from this session's memory") } else { format!("{total} documents embedded") };
    post(&Event::StageDone { stage, seconds: embed_seconds, note });
    // Kept for the next training in this page session (memory only; a new choice replaces them).
    state.embedded = sets.iter().flatten().cloned().collect();
    let [Some(labelled), unlabelled, test] = <[Option<Embedded>; 3]>::try_from(sets).unwrap_or_default() else {
        return Err(Stop::Failed(Some(stage), "internal: the synthetic corpus was not read".into()));
    };

    let stage = Stage::Train;
    let t1 = now_ms();
    let mut outcome = fit(&ask, &labelled, unlabelled.as_ref(), test.as_ref(), &mut clock).await?;
    outcome.main.model.embedding_model = Some(checksum);
    let model = outcome.main.model.to_bytes().map_err(at(stage))?;
    let train_seconds = seconds_since(t1);
    let labels = outcome.main.model.labels();
    let texts = unlabelled.as_ref().map_or(&[][..], |e| &e.docs.texts[..]);
    let result = TrainResult {
        predictions_csv: if texts.is_empty() { String::new() } else { task::predictions_csv(texts, &outcome.predictions, labels) },
        predictions_jsonl: task::predictions_jsonl(texts, &outcome.predictions, labels),
        models: outcome.summaries(),
        classes: outcome.classes,
        counts: outcome.counts,
        model,
        embed_seconds,
        train_seconds,
        embedded: total,
        reused,
        by_helpers: embedded.by_helpers,
        helpers: embedded.helpers,
    };
    post(&Event::StageDone { stage, seconds: train_seconds, note: format!("{} model(s) trained", result.models.len()) });
    Ok(Event::Trained(Box::new(result)))
}

/// Refuses a request that cannot be trained, before the model is loaded: bad parameters, a
/// labelled set without its label column, or files the page did not send.
fn check_ask(ask: &TrainAsk, files: &[File]) -> Result<(), Stop> {
    let stage = Stage::Documents;
    ask.params.check().map_err(at(stage))?;
    let failed = |m: &str| Stop::Failed(Some(stage), m.to_string());
    if ask.synthetic.label_col.as_deref().is_none_or(str::is_empty) {
        return Err(failed("choose the label column of the synthetic corpus"));
    }
    if ask.test.as_ref().is_some_and(|t| t.label_col.as_deref().is_none_or(str::is_empty)) {
        return Err(failed("choose the label column of the test set"));
    }
    let wanted = ask.synthetic.files.len() + ask.unlabelled.as_ref().map_or(0, |s| s.files.len()) + ask.test.as_ref().map_or(0, |s| s.files.len());
    if ask.synthetic.files.is_empty() || files.len() < wanted {
        return Err(failed("the files were not given: choose them again"));
    }
    Ok(())
}

/// The three sets (synthetic, unlabelled, test), in this order.
struct Gathered {
    /// A slot per set: `None` if not asked for; a set read now has an empty matrix until
    /// [`embed_fresh`].
    sets: Vec<Option<Embedded>>,
    /// The documents read now (`None`: not asked for, or as embedded earlier).
    fresh: Vec<Option<Documents>>,
}

/// The three sets, each as embedded by an earlier training of this page session (same files,
/// columns and model: `kept`), so that training again embeds nothing, or read now.
fn gather(kept: &[Embedded], checksum: &str, ask: &TrainAsk, files: &[File]) -> Result<Gathered, Stop> {
    let (syn_files, rest) = files.split_at(ask.synthetic.files.len());
    let (unl_files, test_files) = rest.split_at(ask.unlabelled.as_ref().map_or(0, |s| s.files.len()));
    let asked = [("the synthetic corpus", Some(&ask.synthetic), syn_files), ("your documents", ask.unlabelled.as_ref(), unl_files), ("the test set", ask.test.as_ref(), test_files)];
    let mut sets: Vec<Option<Embedded>> = Vec::new();
    let mut fresh: Vec<Option<Documents>> = Vec::new();
    for (what, set, files) in asked {
        let Some(set) = set else {
            sets.push(None);
            fresh.push(None);
            continue;
        };
        let key = set_key(checksum, set, files);
        match kept.iter().find(|e| e.key == key) {
            Some(e) => {
                sets.push(Some(e.clone()));
                fresh.push(None);
            }
            None => {
                fresh.push(Some(read_set(what, set, files)?));
                sets.push(Some(Embedded { key, docs: Documents::default(), x: Matrix::default() }));
            }
        }
    }
    Ok(Gathered { sets, fresh })
}

/// What the embedding stage did, for the result.
struct Embedding {
    /// Documents embedded now (not those read back from this session's memory).
    documents: usize,
    by_helpers: usize,
    /// Helper workers alive when it started.
    helpers: usize,
}

/// Embeds the documents read now (`fresh`) into their slots of `sets`: every set's batches
/// (the core's, as the CLI embeds them) in one queue, shared with the helper workers.
async fn embed_fresh(m: &mut Model, helpers: &mut Option<Pool>, sets: &mut [Option<Embedded>], fresh: Vec<Option<Documents>>, clock: &mut f64) -> Result<Embedding, Stop> {
    let stage = Stage::Documents;
    let texts: Vec<&[String]> = fresh.iter().map(|d| d.as_ref().map_or(&[][..], |d| &d.texts[..])).collect();
    let plan: Vec<(usize, Vec<usize>)> = texts.iter().enumerate().flat_map(|(s, t)| task::batches(&m.embedder, t, DOC_BATCH).into_iter().map(move |b| (s, b))).collect();
    let batches: Vec<Vec<&str>> = plan.iter().map(|(s, b)| b.iter().map(|&k| texts[*s][k].as_str()).collect()).collect();
    let dim = m.embedder.dim();
    let mut data: Vec<Vec<f32>> = texts.iter().map(|t| vec![0f32; t.len() * dim]).collect();
    let total: usize = texts.iter().map(|t| t.len()).sum();
    let (mut done, mut by_helpers) = (0usize, 0usize);
    progress(stage, 0, total as u64);
    let pool = helpers_for(helpers, m, batches.len());
    let helpers = pool.as_ref().map_or(0, |p| p.alive());
    // Width 1: each document by its own model call (`DOC_BATCH` says why).
    embed_batches(&mut m.embedder, pool, &batches, 1, clock, &mut |k, vecs, by_helper| {
        let (s, rows) = &plan[k];
        for (&row, v) in rows.iter().zip(&vecs) {
            if v.len() != dim {
                return Err(Stop::Failed(Some(stage), format!("an embedding of {} values, not {dim}", v.len())));
            }
            data[*s][row * dim..(row + 1) * dim].copy_from_slice(v);
        }
        done += rows.len();
        if by_helper {
            by_helpers += rows.len();
        }
        progress(stage, done as u64, total as u64);
        Ok(())
    })
    .await?;
    for ((slot, docs), data) in sets.iter_mut().zip(fresh).zip(data) {
        if let (Some(e), Some(docs)) = (slot.as_mut(), docs) {
            e.x = Matrix { rows: docs.texts.len(), cols: dim, data };
            e.docs = docs;
        }
    }
    Ok(Embedding { documents: total, by_helpers, helpers })
}

/// Trains on the embedded sets, one epoch a step so that Cancel gets in between, and sends
/// the epochs' logs to the page in groups (a long training has thousands), at most every
/// ~100 ms.
async fn fit(ask: &TrainAsk, labelled: &Embedded, unlabelled: Option<&Embedded>, test: Option<&Embedded>, clock: &mut f64) -> Result<Outcome, Stop> {
    let stage = Stage::Train;
    let test_pair = test.map(|e| (&e.x, &e.docs.labels[..]));
    let mut task = Task::new(&labelled.x, &labelled.docs.labels, unlabelled.map(|e| &e.x), test_pair, &ask.params, ask.compare).map_err(at(stage))?;
    progress(stage, 0, task.progress().1 as u64);
    let (mut logs, mut model, mut sent) = (Vec::new(), task.training(), now_ms());
    let send = |model: &str, logs: &mut Vec<_>| post(&Event::Epochs { model: model.to_string(), logs: std::mem::take(logs) });
    while let Some((_, log)) = task.step().map_err(at(stage))? {
        if task.training() != model && !logs.is_empty() {
            send(model, &mut logs);
        }
        model = task.training();
        logs.push(log);
        if now_ms() - sent >= 100.0 || task.progress().0 == task.progress().1 {
            send(model, &mut logs);
            let (d, of) = task.progress();
            progress(stage, d as u64, of as u64);
            sent = now_ms();
        }
        checkpoint(clock).await?;
    }
    if !logs.is_empty() {
        send(model, &mut logs);
    }
    task.finish().map_err(at(stage))
}

/// One set of documents as read and embedded, kept in the worker's memory for this page
/// session under [`set_key`], so that training again with other settings embeds nothing.
#[derive(Clone, Default)]
pub struct Embedded {
    key: String,
    docs: Documents,
    x: Matrix,
}

/// A set's files (name, size, last change), columns and the embedding model.
fn set_key(model: &str, set: &DocSet, files: &[File]) -> String {
    let files: Vec<String> = files.iter().map(|f| format!("{}:{}:{}", f.name(), f.size(), f.last_modified())).collect();
    serde_json::json!([model, set.text_col, set.label_col, files]).to_string()
}

/// Reads one set's files with its columns (a label column for a labelled set).
fn read_set(what: &str, set: &DocSet, files: &[File]) -> Result<Documents, Stop> {
    let stage = Stage::Documents;
    let total: f64 = files.iter().map(|f| f.size()).sum();
    let name = set.files.first().map(|f| f.name.clone()).unwrap_or_default();
    limits::check(what, &name, total as u64, limits::TEXTS_TOTAL).map_err(at(stage))?;
    let fields = Fields { text: set.text_col.clone().filter(|c| !c.is_empty()), label: set.label_col.clone().filter(|c| !c.is_empty()), person: None };
    let mut ingest = Ingest::new(fields.label.is_some());
    let mut docs = Documents::default();
    for (info, file) in set.files.iter().zip(files) {
        let format = format_of(&info.name)?;
        let mut report = |_: f64| {};
        let reader = BlobReader::new(file.clone(), &mut report).map_err(at(stage))?;
        docs.read(reader, &info.name, format, &fields, None, &mut ingest).map_err(at(stage))?;
    }
    ingest.finish(&name).map_err(at(stage))?;
    if docs.texts.is_empty() {
        return Err(Stop::Failed(Some(stage), format!("{what} has no documents")));
    }
    Ok(docs)
}
