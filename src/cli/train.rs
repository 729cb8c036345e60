//! `dpkps train` and `dpkps predict`: the recipient's side (core in [`dpkps_adapt`]).
//!
//! `train` reads a labelled synthetic corpus, the recipient's own unlabelled documents and
//! optionally a labelled test set, embeds them with the bundled sentence model, trains the
//! Deep CORAL classifier (and the plain one with `--compare`), and writes to `--out-dir`:
//! `model.safetensors`, `predictions.csv` and `predictions.jsonl` (one row per unlabelled
//! document) and `report.json`. `predict` applies a saved model to more documents.
//!
//! No privacy accounting here: the synthetic corpus is a DP release and the other documents are
//! the recipient's own; the files written hold the recipient's predictions about its own
//! documents (written owner-only, as private data).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use serde::Serialize;

use super::args::corpus::CorpusArgs;

use super::args::model::ModelArgs;

use super::error::CliError;

use super::io::{inputs, load_embedders, peak_rss_kb, write_private};
use dpkps_adapt::task::{self, Counts, Documents, TrainedSummary, Which};
use dpkps_adapt::{Classifier, CoralOn, Prediction, TrainParams};
use dpkps_core::input::corpus::{Fields, Format, Ingest};

#[derive(Args)]
pub(crate) struct TrainArgs {
    /// The labelled synthetic corpus (what the page and `dpkps generate` write: synthetic.jsonl
    /// or synthetic.csv), or any CSV/TSV/JSONL with a text and a label column.
    #[arg(long, required = true, num_args = 1..)]
    synthetic: Vec<PathBuf>,
    /// Column or field of the text, in every file unless overridden below.
    #[arg(long, default_value = "text")]
    text_col: String,
    /// Column or field of the label in the labelled files.
    #[arg(long, default_value = "label")]
    label_col: String,
    /// Your own unlabelled documents: the domain the classifier is adapted to, and predicted.
    #[arg(long, num_args = 1..)]
    unlabeled: Vec<PathBuf>,
    /// Text column of the unlabelled files [default: --text-col].
    #[arg(long)]
    unlabeled_text_col: Option<String>,
    /// A labelled test set, kept apart from the unlabelled documents: accuracy, F1 per class
    /// and the confusion matrix.
    #[arg(long, num_args = 1..)]
    test: Vec<PathBuf>,
    #[arg(long)]
    test_text_col: Option<String>,
    #[arg(long)]
    test_label_col: Option<String>,
    /// Also train the plain classifier (no CORAL term) and report both; the adapted one is
    /// the one written and used for the predictions.
    #[arg(long)]
    compare: bool,
    #[command(flatten)]
    params: TrainParamArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// Where to write model.safetensors, predictions.csv, predictions.jsonl and report.json.
    #[arg(long)]
    out_dir: PathBuf,
}

#[derive(Args, Clone)]
pub(crate) struct TrainParamArgs {
    /// λ: the CORAL term's weight (0: no adaptation).
    #[arg(long, default_value_t = TrainParams::default().coral_weight)]
    pub(crate) coral_weight: f64,
    /// The layer whose covariances the CORAL term aligns: logits or features.
    #[arg(long, default_value = "logits", value_parser = ["logits", "features"])]
    pub(crate) coral_on: String,
    #[arg(long, default_value_t = TrainParams::default().epochs)]
    pub(crate) epochs: usize,
    /// Documents per minibatch (from each domain).
    #[arg(long, default_value_t = TrainParams::default().batch)]
    pub(crate) batch: usize,
    #[arg(long, default_value_t = TrainParams::default().learning_rate)]
    pub(crate) learning_rate: f64,
    /// The two hidden layers' widths, e.g. 256,128.
    #[arg(long, default_value = "256,128")]
    pub(crate) hidden: String,
    /// Seed of the initial weights and the minibatch order.
    #[arg(long, default_value_t = TrainParams::default().seed)]
    pub(crate) seed: u64,
}

impl TrainParamArgs {
    pub(crate) fn params(&self) -> Result<TrainParams, CliError> {
        let bad = |m: &str| CliError::Input { path: "--hidden".into(), message: m.into() };
        let widths: Vec<usize> = self.hidden.split(',').map(|w| w.trim().parse::<usize>().map_err(|_| bad("two whole numbers, e.g. 256,128"))).collect::<Result<_, _>>()?;
        let [h1, h2] = widths[..] else { return Err(bad("two widths, e.g. 256,128")) };
        let p = TrainParams {
            hidden: [h1, h2],
            epochs: self.epochs,
            batch: self.batch,
            learning_rate: self.learning_rate,
            coral_weight: self.coral_weight,
            coral_on: if self.coral_on == "features" { CoralOn::Features } else { CoralOn::Logits },
            seed: self.seed,
            ..TrainParams::default()
        };
        p.check().map_err(|e| CliError::Input { path: "training settings".into(), message: e.to_string() })?;
        Ok(p)
    }
}

#[derive(Args)]
pub(crate) struct PredictArgs {
    /// A model written by `dpkps train` or the page (model.safetensors).
    #[arg(long)]
    classifier: PathBuf,
    /// Documents to classify.
    #[arg(long, required = true, num_args = 1..)]
    corpus: Vec<PathBuf>,
    #[arg(long, default_value = "text")]
    text_col: String,
    #[command(flatten)]
    model: ModelArgs,
    /// Where to write the predictions: a .csv or .jsonl file.
    #[arg(long)]
    out: PathBuf,
}

/// Reads every document of `files` (text and, with `label`, label).
pub(crate) fn read_documents(files: &[PathBuf], text: &str, label: Option<&str>) -> Result<Documents, CliError> {
    read_corpus_documents(&CorpusArgs { corpus: files.to_vec(), format: None, text_col: Some(text.to_string()), label_col: label.map(str::to_string), label_from_dir: false, person_col: None })
}

/// Reads every document that corpus options name (format, columns, labels from folders).
pub(crate) fn read_corpus_documents(args: &CorpusArgs) -> Result<Documents, CliError> {
    let fields = Fields { text: args.text_col.clone(), label: args.label_col.clone(), person: None };
    let mut ingest = Ingest::new(args.labelled());
    let mut docs = Documents::default();
    for input in inputs(args)? {
        let name = input.path.display().to_string();
        let file = File::open(&input.path).map_err(|e| CliError::Input { path: name.clone(), message: format!("cannot open: {e}") })?;
        docs.read(BufReader::with_capacity(1 << 20, file), &name, input.format, &fields, input.txt_label.as_deref(), &mut ingest)?;
    }
    let what = args.corpus.first().map(|p| p.display().to_string()).unwrap_or_default();
    ingest.finish(&what)?;
    Ok(docs)
}

/// `report.json`: what was trained and its scores on the recipient's own test documents,
/// written private (the scores are the recipient's, not for the curator).
#[derive(Serialize)]
struct Report<'a> {
    note: &'static str,
    classes: &'a [String],
    documents: &'a Counts,
    params: &'a TrainParams,
    embedding_model: &'a str,
    models: Vec<TrainedSummary>,
    seconds: Seconds,
    peak_memory_mb: Option<f64>,
}

#[derive(Serialize)]
struct Seconds {
    embed: f64,
    train: f64,
}

pub(crate) fn run(args: TrainArgs) -> Result<(), CliError> {
    let params = args.params.params()?;
    let labelled = read_documents(&args.synthetic, &args.text_col, Some(&args.label_col))?;
    let unlabelled = if args.unlabeled.is_empty() {
        None
    } else {
        Some(read_documents(&args.unlabeled, args.unlabeled_text_col.as_deref().unwrap_or(&args.text_col), None)?)
    };
    let test = if args.test.is_empty() {
        None
    } else {
        let label = args.test_label_col.as_deref().unwrap_or(&args.label_col);
        Some(read_documents(&args.test, args.test_text_col.as_deref().unwrap_or(&args.text_col), Some(label))?)
    };
    std::fs::create_dir_all(&args.out_dir).map_err(|e| CliError::Write { path: args.out_dir.display().to_string(), source: e })?;
    let mut model = load_embedders(&args.model)?;
    let t0 = Instant::now();
    let x = model.embed("labelled documents", &labelled.texts)?;
    let u = unlabelled.as_ref().map(|d| model.embed("unlabelled documents", &d.texts)).transpose()?;
    let t = test.as_ref().map(|d| model.embed("test documents", &d.texts)).transpose()?;
    let embed_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let mut outcome = task::run(&x, &labelled.labels, u.as_ref(), t.as_ref().zip(test.as_ref()).map(|(m, d)| (m, &d.labels[..])), &params, args.compare, &mut |which, log| {
        let name = if which == Which::Plain { "plain" } else { "main" };
        eprintln!("  {name} epoch {}: class loss {:.4}, CORAL loss {:.6}", log.epoch, log.class_loss, log.coral_loss);
        true
    })
    .map_err(|e| CliError::Input { path: "training".into(), message: e.to_string() })?;
    let train_s = t1.elapsed().as_secs_f64();
    outcome.main.model.embedding_model = Some(model.checksum().to_string());
    let bytes = outcome.main.model.to_bytes().map_err(|e| CliError::Input { path: "model".into(), message: e.to_string() })?;
    write_private(&args.out_dir.join("model.safetensors"), &bytes)?;
    if let Some(d) = &unlabelled {
        write_predictions(&args.out_dir, &d.texts, &outcome.predictions, outcome.main.model.labels())?;
    }
    if params.coral_weight > 0.0 && outcome.main.model.params().coral_weight == 0.0 {
        println!("no unlabelled documents to adapt to (at least two are needed): the plain classifier was trained{}", if args.compare { ", so there is nothing to compare" } else { "" });
    }
    let c = &outcome.counts;
    println!(
        "trained on {} labelled documents ({} classes){}; {} unlabelled, {} test documents",
        c.labelled,
        outcome.classes.len(),
        if c.labelled_without_label > 0 { format!(", {} without a label left out", c.labelled_without_label) } else { String::new() },
        c.unlabelled,
        c.test
    );
    if c.test_unknown_label > 0 {
        println!("  {} test documents have a label none of the classes: left out of the scores", c.test_unknown_label);
    }
    for s in outcome.summaries() {
        if let Some(score) = &s.test {
            println!("  {} (λ = {}): accuracy {:.3}, macro-F1 {:.3} on {} test documents", s.name, s.coral_weight, score.accuracy, score.macro_f1, score.documents);
        }
    }
    let peak = peak_rss_kb().map(|kb| kb as f64 / 1024.0);
    println!("time: embedding {embed_s:.1} s, training {train_s:.1} s{}", peak.map(|m| format!("; peak memory {m:.0} MB")).unwrap_or_default());
    let report = Report {
        note: "Scores on the recipient's own test documents: private to the recipient.",
        classes: &outcome.classes,
        documents: &outcome.counts,
        params: outcome.main.model.params(),
        embedding_model: model.checksum(),
        models: outcome.summaries(),
        seconds: Seconds { embed: embed_s, train: train_s },
        peak_memory_mb: peak,
    };
    write_private(&args.out_dir.join("report.json"), super::io::json_text(&report).as_bytes())?;
    eprintln!("wrote model.safetensors, report.json{} to {}", if unlabelled.is_some() { ", predictions.csv, predictions.jsonl" } else { "" }, args.out_dir.display());
    Ok(())
}

/// predictions.csv and predictions.jsonl (`adapt::task::predictions_csv`, `predictions_jsonl`).
fn write_predictions(dir: &Path, texts: &[String], preds: &[Prediction], labels: &[String]) -> Result<(), CliError> {
    write_private(&dir.join("predictions.csv"), task::predictions_csv(texts, preds, labels).as_bytes())?;
    write_private(&dir.join("predictions.jsonl"), task::predictions_jsonl(texts, preds, labels).as_bytes())
}

pub(crate) fn predict(args: PredictArgs) -> Result<(), CliError> {
    let path = args.classifier.display().to_string();
    let bytes = std::fs::read(&args.classifier).map_err(|e| CliError::Input { path: path.clone(), message: format!("cannot open: {e}") })?;
    let classifier = Classifier::from_bytes(&bytes).map_err(|e| CliError::Input { path: path.clone(), message: e.to_string() })?;
    let format = Format::from_path(&args.out.to_string_lossy());
    if !matches!(format, Some(Format::Csv | Format::Jsonl)) {
        return Err(CliError::Input { path: args.out.display().to_string(), message: "write the predictions to a .csv or a .jsonl file".into() });
    }
    let docs = read_documents(&args.corpus, &args.text_col, None)?;
    let mut model = load_embedders(&args.model)?;
    if let Some(m) = &classifier.embedding_model {
        if m != model.checksum() {
            return Err(CliError::Input { path, message: "the model was trained on another embedding model's vectors (pass the same --model)".into() });
        }
    }
    let x = model.embed("documents", &docs.texts)?;
    let preds = classifier.predict(&x).map_err(|e| CliError::Input { path: path.clone(), message: e.to_string() })?;
    let text = if format == Some(Format::Csv) {
        task::predictions_csv(&docs.texts, &preds, classifier.labels())
    } else {
        task::predictions_jsonl(&docs.texts, &preds, classifier.labels())
    };
    write_private(&args.out, text.as_bytes())?;
    eprintln!("wrote {} predictions to {}", preds.len(), args.out.display());
    Ok(())
}
