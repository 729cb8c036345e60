//! The recipient's task, from documents to a report, shared by the page's worker and
//! `dpkps train`: embed the three sets, name the classes, train (adapted, and plain to compare
//! when asked), score on the test set, predict the unlabelled documents.

use super::score::{score, Score};
pub use super::summary::{Counts, TrainedSummary};
use super::{AdaptError, Classifier, EpochLog, Matrix, Prediction, TrainParams, Trainer};
use dpkps_core::input::corpus::{CorpusError, Fields, Format, Ingest};
use dpkps_core::embed::{sort_for_batching, Embed, EmbedError};

/// Documents of one set: texts and, for labelled sets, labels.
#[derive(Debug, Clone, Default)]
pub struct Documents {
    pub texts: Vec<String>,
    pub labels: Vec<Option<String>>,
}

impl Documents {
    /// Appends every document of one file (`dpkps_core::input::corpus::stream`: CSV, TSV, JSONL or a .txt
    /// with `txt_label`): its text and, when `fields` names a label, its label. The CLI and the
    /// page's worker read the three sets with it.
    pub fn read<R: std::io::Read>(
        &mut self,
        reader: R,
        name: &str,
        format: Format,
        fields: &Fields,
        txt_label: Option<&str>,
        ingest: &mut Ingest,
    ) -> Result<(), CorpusError> {
        dpkps_core::input::corpus::stream(reader, name, format, fields, txt_label, ingest, &mut |d| {
            self.texts.push(d.text.to_string());
            self.labels.push(d.label.map(str::to_string));
        })
    }
}

/// The batches `texts` are embedded in: indices into `texts`, `batch` at a time in order of
/// length (less padding). The CLI (`cli::embedders`, one model per thread) and the page's
/// worker (`worker::recipient`, spread over its helper workers) both embed documents one at a
/// time, so that a document's vector depends on its text alone (tract's low bits depend on a
/// batch's other rows) and the model runs its plan for one text, the quickest. The model
/// truncates each document to its first 256 tokens (`dpkps_embed::onnx::MAX_TOKENS`).
/// One at a time nothing is padded, so the texts stay in their order, not tokenised to be sorted.
pub fn batches(model: &dyn Embed, texts: &[String], batch: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    if batch > 1 {
        sort_for_batching(model, &mut order, |&k| texts[k].as_str());
    }
    order.chunks(batch.max(1)).map(<[usize]>::to_vec).collect()
}

/// Embeds `texts` with `model` in [`batches`], rows in the texts' order; `progress(done, total)`
/// after each batch, false to stop.
pub fn embed_texts(model: &mut dyn Embed, texts: &[String], batch: usize, progress: &mut dyn FnMut(usize, usize) -> bool) -> Result<Matrix, EmbedError> {
    let dim = model.dim();
    let mut data = vec![0f32; texts.len() * dim];
    let mut done = 0;
    for chunk in &batches(model, texts, batch) {
        let batch_texts: Vec<&str> = chunk.iter().map(|&k| texts[k].as_str()).collect();
        let vecs = model.embed(&batch_texts)?;
        for (&k, v) in chunk.iter().zip(&vecs) {
            if v.len() != dim {
                return Err(EmbedError::Dimension { expected: dim, got: v.len() });
            }
            data[k * dim..(k + 1) * dim].copy_from_slice(v);
        }
        done += chunk.len();
        if !progress(done, texts.len()) {
            return Err(EmbedError::Model("stopped".into()));
        }
    }
    Ok(Matrix { rows: texts.len(), cols: dim, data })
}

/// One trained model and how it did.
#[derive(Debug, Clone)]
pub struct Trained {
    pub model: Classifier,
    pub logs: Vec<EpochLog>,
    /// On the test set, when one was given.
    pub score: Option<Score>,
}

/// The whole outcome.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub classes: Vec<String>,
    pub counts: Counts,
    /// The adapted model (λ as set; with no unlabelled documents it is the plain one).
    pub main: Trained,
    /// The plain classifier (λ = 0), when a comparison was asked for.
    pub plain: Option<Trained>,
    /// The main model's class for each unlabelled document.
    pub predictions: Vec<Prediction>,
}

impl Outcome {
    pub fn summaries(&self) -> Vec<TrainedSummary> {
        let mut out = vec![summary(&self.main)];
        out.extend(self.plain.as_ref().map(summary));
        out
    }
}

fn summary(t: &Trained) -> TrainedSummary {
    let w = t.model.params().coral_weight;
    TrainedSummary { name: super::summary::model_name(w).into(), coral_weight: w, epochs: t.logs.clone(), test: t.score.clone() }
}

/// The class names: the labelled set's distinct labels, trimmed and sorted (public to the
/// recipient: they are the synthetic corpus's, a DP release). Test labels are matched trimmed.
pub fn class_names(labels: &[Option<String>]) -> Vec<String> {
    let mut names: Vec<String> = labels.iter().flatten().map(|l| l.trim()).filter(|l| !l.is_empty()).map(str::to_string).collect();
    names.sort();
    names.dedup();
    names
}

fn ids(labels: &[Option<String>], names: &[String]) -> Vec<Option<usize>> {
    labels.iter().map(|l| l.as_ref().and_then(|l| names.binary_search_by(|n| n.as_str().cmp(l.trim())).ok())).collect()
}

/// The predictions as CSV (text, label, probability to 4 places), in the documents' order; cells
/// a spreadsheet would run as a formula are neutralised (`dpkps_core::llm::export`).
pub fn predictions_csv(texts: &[String], preds: &[Prediction], labels: &[String]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(["text", "label", "probability"]);
    for (t, p) in texts.iter().zip(preds) {
        let label = labels.get(p.class).map(String::as_str).unwrap_or_default();
        let _ = dpkps_core::llm::export::write_record(&mut w, [t.as_str(), label, &format!("{:.4}", p.probability)]);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The predictions as JSON lines `{"text", "label", "probability"}`, in the documents' order.
pub fn predictions_jsonl(texts: &[String], preds: &[Prediction], labels: &[String]) -> String {
    let mut out = String::new();
    for (t, p) in texts.iter().zip(preds) {
        let label = labels.get(p.class).map(String::as_str).unwrap_or_default();
        out.push_str(&serde_json::json!({ "text": t, "label": label, "probability": (p.probability as f64 * 1e4).round() / 1e4 }).to_string());
        out.push('\n');
    }
    out
}

/// Which run is training, for progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Main,
    Plain,
}

/// Trains and scores (module docs). `x_labelled` rows go with `labelled.labels`; `test` is a
/// labelled set's embeddings and labels. `progress` sees each epoch; false stops
/// ([`AdaptError::Cancelled`]). The loop over [`Task`].
pub fn run(
    x_labelled: &Matrix,
    labels: &[Option<String>],
    unlabelled: Option<&Matrix>,
    test: Option<(&Matrix, &[Option<String>])>,
    params: &TrainParams,
    compare: bool,
    progress: &mut dyn FnMut(Which, &EpochLog) -> bool,
) -> Result<Outcome, AdaptError> {
    let mut task = Task::new(x_labelled, labels, unlabelled, test, params, compare)?;
    while let Some((which, log)) = task.step()? {
        if !progress(which, &log) {
            return Err(AdaptError::Cancelled);
        }
    }
    task.finish()
}

/// The task one epoch at a time ([`Task::step`]), so that the page's worker can let a Cancel in
/// and report between epochs; [`run`] is its loop.
pub struct Task<'a> {
    classes: Vec<String>,
    counts: Counts,
    /// The labelled documents with a class, and their class ids.
    x: Matrix,
    y: Vec<usize>,
    unlabelled: Option<&'a Matrix>,
    /// The test embeddings and, per scored row, (row, class id).
    test: Option<(&'a Matrix, Vec<(usize, usize)>)>,
    /// The settings of each model still to train, in order (the adapted one first).
    queue: Vec<(Which, TrainParams)>,
    current: Option<(Which, Trainer)>,
    done: Vec<Trained>,
}

impl<'a> Task<'a> {
    /// Names the classes, counts the documents, and plans the models (arguments as for [`run`]).
    pub fn new(
        x_labelled: &Matrix,
        labels: &[Option<String>],
        unlabelled: Option<&'a Matrix>,
        test: Option<(&'a Matrix, &[Option<String>])>,
        params: &TrainParams,
        compare: bool,
    ) -> Result<Task<'a>, AdaptError> {
        params.check()?;
        if x_labelled.rows != labels.len() {
            return Err(AdaptError::Input(format!("{} labelled embeddings for {} labels", x_labelled.rows, labels.len())));
        }
        let classes = class_names(labels);
        let keep: Vec<(usize, usize)> = ids(labels, &classes).into_iter().enumerate().filter_map(|(k, y)| y.map(|y| (k, y))).collect();
        let rows: Vec<usize> = keep.iter().map(|&(k, _)| k).collect();
        let y: Vec<usize> = keep.iter().map(|&(_, y)| y).collect();
        let x = x_labelled.select(&rows);
        let mut counts = Counts {
            labelled: rows.len(),
            labelled_without_label: labels.len() - rows.len(),
            unlabelled: unlabelled.map_or(0, |u| u.rows),
            ..Counts::default()
        };
        let test = test.map(|(m, l)| {
            let t: Vec<(usize, usize)> = ids(l, &classes).into_iter().enumerate().filter_map(|(k, y)| y.map(|y| (k, y))).collect();
            counts.test = t.len();
            counts.test_unknown_label = l.len() - t.len();
            (m, t)
        });
        let adapted = if unlabelled.is_some_and(|u| u.rows >= 2) { params.clone() } else { TrainParams { coral_weight: 0.0, ..params.clone() } };
        let mut queue = vec![(Which::Main, adapted.clone())];
        if compare && adapted.coral_weight > 0.0 {
            queue.push((Which::Plain, TrainParams { coral_weight: 0.0, ..params.clone() }));
        }
        queue.reverse();
        Ok(Task { classes, counts, x, y, unlabelled, test, queue, current: None, done: Vec::new() })
    }

    /// The classes, sorted: the labelled set's distinct labels ([`class_names`]).
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// Epochs run so far over every model, and of how many in all.
    pub fn progress(&self) -> (usize, usize) {
        let per: usize = self.done.iter().map(|t| t.logs.len()).sum();
        let (now, of_now) = self.current.as_ref().map_or((0, 0), |(_, t)| t.progress());
        let queued: usize = self.queue.iter().map(|(_, p)| p.epochs).sum();
        (per + now, per + of_now + queued)
    }

    /// The name of the model in training ([`super::summary::model_name`]).
    pub fn training(&self) -> &'static str {
        super::summary::model_name(self.current.as_ref().map_or(0.0, |(_, t)| t.params().coral_weight))
    }

    /// Trains one more epoch (starting the next model when one is done); `None` once every
    /// model is trained and scored.
    pub fn step(&mut self) -> Result<Option<(Which, EpochLog)>, AdaptError> {
        loop {
            if let Some((which, trainer)) = self.current.as_mut() {
                if !trainer.finished() {
                    let log = trainer.epoch(&self.x, self.unlabelled)?;
                    return Ok(Some((*which, log)));
                }
                if let Some((_, trainer)) = self.current.take() {
                    let (model, logs) = trainer.finish();
                    let score = self.score(&model)?;
                    self.done.push(Trained { model, logs, score });
                }
            }
            match self.queue.pop() {
                Some((which, p)) => self.current = Some((which, Trainer::new(&self.x, &self.y, &self.classes, self.unlabelled, &p)?)),
                None => return Ok(None),
            }
        }
    }

    fn score(&self, model: &Classifier) -> Result<Option<Score>, AdaptError> {
        Ok(match &self.test {
            Some((m, t)) if !t.is_empty() => {
                let rows: Vec<usize> = t.iter().map(|&(k, _)| k).collect();
                let pred: Vec<usize> = model.predict(&m.select(&rows))?.iter().map(|p| p.class).collect();
                let truth: Vec<usize> = t.iter().map(|&(_, y)| y).collect();
                Some(score(&truth, &pred, self.classes.len()))
            }
            _ => None,
        })
    }

    /// The outcome, once [`Task::step`] has returned `None`.
    pub fn finish(mut self) -> Result<Outcome, AdaptError> {
        while self.step()?.is_some() {}
        let mut done = self.done.into_iter();
        let main = done.next().ok_or_else(|| AdaptError::Input("internal: no model was trained".into()))?;
        let plain = done.next();
        let predictions = match self.unlabelled {
            Some(u) => main.model.predict(u)?,
            None => Vec::new(),
        };
        Ok(Outcome { classes: self.classes, counts: self.counts, main, plain, predictions })
    }
}
