//! The recipient's task, from documents to a report, shared by the page's worker and
//! `dpkps train`: embed the three sets, name the classes, train (adapted, and plain to compare
//! when asked), score on the test set, predict the unlabelled documents.

use serde::{Deserialize, Serialize};

use super::score::{score, Score};
use super::{train, AdaptError, Classifier, EpochLog, Matrix, Prediction, TrainParams};
use crate::embed::{sort_for_batching, Embed, EmbedError};

/// Documents of one set: texts and, for labelled sets, labels.
#[derive(Debug, Clone, Default)]
pub struct Documents {
    pub texts: Vec<String>,
    pub labels: Vec<Option<String>>,
}

/// Embeds `texts` with `model`, `batch` at a time in order of length (less padding), rows in
/// the texts' order; `progress(done, total)` after each batch, false to stop.
pub fn embed_texts(model: &mut dyn Embed, texts: &[String], batch: usize, progress: &mut dyn FnMut(usize, usize) -> bool) -> Result<Matrix, EmbedError> {
    let dim = model.dim();
    let mut order: Vec<usize> = (0..texts.len()).collect();
    sort_for_batching(model, &mut order, |&k| texts[k].as_str());
    let mut data = vec![0f32; texts.len() * dim];
    let mut done = 0;
    for chunk in order.chunks(batch.max(1)) {
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

/// The documents each set gave, and those left out (for the report).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Labelled documents trained on.
    pub labelled: usize,
    /// Labelled-set documents without a label: left out.
    pub labelled_without_label: usize,
    pub unlabelled: usize,
    /// Test documents scored.
    pub test: usize,
    /// Test documents whose label is none of the classes (or missing): left out of the scores.
    pub test_unknown_label: usize,
}

/// One trained model and how it did.
#[derive(Debug, Clone)]
pub struct Trained {
    pub model: Classifier,
    pub logs: Vec<EpochLog>,
    /// On the test set, when one was given.
    pub score: Option<Score>,
}

/// What the JSON report holds of one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainedSummary {
    /// "coral" or "plain".
    pub name: String,
    pub coral_weight: f64,
    pub epochs: Vec<EpochLog>,
    pub test: Option<Score>,
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
    TrainedSummary { name: if w > 0.0 { "coral".into() } else { "plain".into() }, coral_weight: w, epochs: t.logs.clone(), test: t.score.clone() }
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
/// a spreadsheet would run as a formula are neutralised (`crate::export`).
pub fn predictions_csv(texts: &[String], preds: &[Prediction], labels: &[String]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(["text", "label", "probability"]);
    for (t, p) in texts.iter().zip(preds) {
        let label = labels.get(p.class).map(String::as_str).unwrap_or_default();
        let _ = crate::export::write_record(&mut w, [t.as_str(), label, &format!("{:.4}", p.probability)]);
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
/// labelled set's embeddings and labels.
pub fn run(
    x_labelled: &Matrix,
    labels: &[Option<String>],
    unlabelled: Option<&Matrix>,
    test: Option<(&Matrix, &[Option<String>])>,
    params: &TrainParams,
    compare: bool,
    progress: &mut dyn FnMut(Which, &EpochLog) -> bool,
) -> Result<Outcome, AdaptError> {
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
    let fit = |p: &TrainParams, which: Which, progress: &mut dyn FnMut(Which, &EpochLog) -> bool| -> Result<Trained, AdaptError> {
        let (model, logs) = train(&x, &y, &classes, unlabelled, p, &mut |log| progress(which, log))?;
        let score = match &test {
            Some((m, t)) if !t.is_empty() => {
                let rows: Vec<usize> = t.iter().map(|&(k, _)| k).collect();
                let pred: Vec<usize> = model.predict(&m.select(&rows))?.iter().map(|p| p.class).collect();
                let truth: Vec<usize> = t.iter().map(|&(_, y)| y).collect();
                Some(score(&truth, &pred, classes.len()))
            }
            _ => None,
        };
        Ok(Trained { model, logs, score })
    };
    let adapted = if unlabelled.is_some_and(|u| u.rows >= 2) { params.clone() } else { TrainParams { coral_weight: 0.0, ..params.clone() } };
    let main = fit(&adapted, Which::Main, progress)?;
    let plain = if compare && adapted.coral_weight > 0.0 {
        Some(fit(&TrainParams { coral_weight: 0.0, ..params.clone() }, Which::Plain, progress)?)
    } else {
        None
    };
    let predictions = match unlabelled {
        Some(u) => main.model.predict(u)?,
        None => Vec::new(),
    };
    Ok(Outcome { classes, counts, main, plain, predictions })
}
