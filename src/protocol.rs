//! Messages between the app's UI thread and its Web Worker.
//!
//! The UI never touches a private document's content beyond the preview it shows the curator;
//! everything that reads the corpus, embeds, or adds noise runs in the worker (`src/worker/`),
//! so the page stays responsive and the work can be cancelled. Messages are JSON (serde); the
//! files a request refers to travel next to it as `File` objects (structured clone), in the
//! order of its `files` list.
//!
//! This module is plain Rust so that the settings checks are tested natively.

use serde::{Deserialize, Serialize};

use crate::classes::{ClassSet, OtherLabels};
use crate::dp::vocabulary::VocabParams;
use crate::summary::{KdeParams, Sampler};
use crate::vocab::Bundled;

/// The largest inputs the app accepts, refused by size before a byte is read. A worker's
/// memory is one wasm heap (at most 4 GiB); the corpus is streamed in 4 MiB slices, the other
/// files are read whole (and the model is kept twice: its bytes for the helper workers, and
/// tract's copy).
pub mod limits {
    /// The corpus files of one load, together (also a tuning file).
    pub const CORPUS_TOTAL: u64 = 2 << 30;
    /// A custom public vocabulary (one term per line).
    pub const VOCABULARY: u64 = 64 << 20;
    /// A custom ONNX embedding model.
    pub const MODEL: u64 = 512 << 20;
    /// Its tokenizer.json.
    pub const TOKENIZER: u64 = 64 << 20;
    /// An imported ledger file.
    pub const LEDGER: u64 = 64 << 20;

    fn human(bytes: u64) -> String {
        if bytes >= 1 << 30 {
            format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
        } else {
            format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
        }
    }

    /// Refuses `size` bytes of `what` (named `name`) above `max`, in plain words.
    pub fn check(what: &str, name: &str, size: u64, max: u64) -> Result<(), String> {
        if size <= max {
            return Ok(());
        }
        Err(format!(
            "{name} is {} and {what} may be at most {} in this app (the page could not hold it); nothing was read",
            human(size),
            human(max)
        ))
    }
}

/// A file the host attaches to a request (name and size, for messages and progress).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileInfo {
    pub name: String,
    pub size: u64,
}

/// Which public vocabulary to match against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum VocabChoice {
    Bundled { which: Bundled },
    /// The user's own list: one term per line, attached as the last file of the request.
    Custom { name: String },
}

/// UI → worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Request {
    /// Show the format, the columns and the first rows of the first file.
    Inspect { files: Vec<FileInfo> },
    /// Read every file, match each document, keep only term ids (the text is dropped).
    Load { files: Vec<FileInfo>, text_col: Option<String>, label_col: Option<String>, vocabulary: VocabChoice },
    /// DP vocabulary → embed → DP-KDE → sample.
    Run { settings: RunSettings },
    /// Stop the running job at its next checkpoint.
    Cancel,
    /// Use the user's ONNX model and tokenizer.json (attached in that order).
    UseModel { model: FileInfo, tokenizer: FileInfo },
    /// Go back to the bundled model.
    UseBundledModel,
    /// Embed the reference terms shipped with the bundled model and compare.
    ModelCheck,
    /// Embedding throughput at batch 1 and 32 on `terms` vocabulary terms (benchmark page).
    Bench { terms: usize },
    /// The utility check (`crate::eval`) on the loaded corpus with these settings: NOT DP,
    /// for the curator's eyes only, nothing released; the check itself is counted in the
    /// corpus's ledger (it is tuning on private data; the report says so).
    Evaluate { settings: RunSettings },
    /// The utility check on a separate tuning file (an older or public extract, attached),
    /// read with the loaded corpus's columns and vocabulary: nothing about the private corpus
    /// is computed, nothing counted against it.
    EvaluateTuning { settings: RunSettings, file: FileInfo },
    /// The budget account's state for the loaded corpus: spent, budget, overlap with the
    /// account's earlier corpora ([`LedgerEvent::Status`]).
    Account { name: String },
    /// The whole ledger as JSON, to download ([`LedgerEvent::Exported`]).
    ExportLedger,
    /// A ledger file (attached) merged into this browser's: runs by id ([`LedgerEvent::Imported`]).
    ImportLedger,
}

/// Ledger answers: posted as their own messages (tag `what`, not `kind`), so that they never
/// touch the running job's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum LedgerEvent {
    Status(AccountStatus),
    Exported { json: String },
    Imported { summary: crate::ledger::MergeSummary },
    Failed { message: String },
}

/// A budget account as seen with the loaded corpus. For the curator's eyes only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountStatus {
    pub name: String,
    /// ε spent under the account or on this corpus (`LedgerBook::account_spent`).
    pub spent: f64,
    pub budget: Option<f64>,
    /// ε spent on this corpus (its key) alone, and its runs.
    pub corpus_spent: f64,
    pub corpus_runs: usize,
    /// Earlier corpora of the account, with the estimated overlap (`crate::overlap`), largest first.
    pub overlaps: Vec<f64>,
    /// Non-DP utility checks run on this corpus, and the settings they compared.
    pub non_dp_checks: usize,
    pub settings_compared: usize,
}

/// The long stages, each with its own progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Read,
    Vocabulary,
    Model,
    Embed,
    Kde,
    Sample,
    Evaluate,
}

impl Stage {
    pub const RUN: [Stage; 5] = [Stage::Vocabulary, Stage::Model, Stage::Embed, Stage::Kde, Stage::Sample];

    pub fn title(self) -> &'static str {
        match self {
            Stage::Read => "Read and match documents",
            Stage::Vocabulary => "DP vocabulary (ε_voc)",
            Stage::Model => "Load the embedding model",
            Stage::Embed => "Embed terms",
            Stage::Kde => "DP kernel density estimates (ε_kde)",
            Stage::Sample => "Sample keyphrase sequences",
            Stage::Evaluate => "Train and test classifiers (not DP)",
        }
    }
}

/// Worker → UI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// The worker has loaded its wasm and listens.
    Ready,
    Progress { stage: Stage, done: u64, total: u64 },
    StageDone { stage: Stage, seconds: f64, note: String },
    Inspected(Preview),
    Loaded(CorpusSummary),
    Finished(RunResult),
    Cancelled,
    Failed { stage: Option<Stage>, message: String },
    ModelLoaded { name: String, dim: usize, checksum: String, seconds: f64 },
    /// `by_helpers` of the `terms` were embedded by the `helpers` helper workers;
    /// `vectors_checked` random terms of the bundled vectors were compared with this model
    /// (none when they do not belong to it).
    ModelChecked {
        terms: usize,
        worst_cosine: f64,
        worst_term: String,
        passed: bool,
        helpers: usize,
        by_helpers: usize,
        vectors_checked: usize,
        vectors_worst_cosine: f64,
        vectors_worst_term: String,
    },
    Benched(BenchFigures),
    Evaluated(crate::eval::EvalReport),
    /// The idle-time pass over a user's own list (`worker::background`): `done` of its first
    /// `total` terms have vectors in this page session's memory (counts of the public list).
    Background { done: u64, total: u64 },
}

/// What the curator sees before choosing columns. Stays in the page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preview {
    pub file: String,
    pub format: String,
    /// Empty for .txt (one document per file).
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub suggested_text: Option<String>,
    pub suggested_label: Option<String>,
}

/// Counts of the loaded corpus, for the curator's eyes only (exact counts are not DP).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorpusSummary {
    pub documents: u64,
    pub empty_skipped: u64,
    pub docs_without_terms: u64,
    /// (label, documents); empty when there is no label column.
    pub classes: Vec<(String, u64)>,
    pub unlabelled: u64,
    pub vocabulary: String,
    pub vocabulary_terms: usize,
    pub distinct_matched: usize,
    /// ε already spent on this corpus (same fingerprint) by earlier runs in this browser.
    pub spent_before: f64,
    pub earlier_runs: usize,
}

/// Everything the curator sets before a run. Checked field by field ([`RunSettings::check`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    pub eps_voc: f64,
    pub eps_kde: f64,
    /// S: terms per document counted in the vocabulary histogram.
    pub terms_per_doc: usize,
    /// N: size of the private vocabulary.
    pub top_n: usize,
    /// L: keyphrases per sequence.
    pub len: usize,
    /// I: random Fourier features.
    pub features: usize,
    pub per_class: usize,
    pub sampler: Sampler,
    /// h: kernel bandwidth of the DP-KDEs.
    pub bandwidth: f64,
    /// The public class set (`crate::classes`): the label values the curator declared.
    /// Required when the corpus has a label column; ignored without one.
    #[serde(default)]
    pub classes: Vec<String>,
    /// Documents with other labels: `None` drops them; `Some(name)` gathers them in that class.
    #[serde(default)]
    pub other_class: Option<String>,
    /// Ṽ from per-class noisy histograms (`dp::vocabulary`, "Per class").
    #[serde(default = "yes")]
    pub vocab_per_class: bool,
    /// Reuse the private vocabulary this page released in an earlier run on the same corpus
    /// with the same vocabulary settings (`reuse::VocabKey`) instead of drawing and paying
    /// for a new one: post-processing of that release, no new ε_voc.
    #[serde(default = "yes")]
    pub reuse_vocabulary: bool,
    /// Smoothing of the histogram samplers (0: off).
    #[serde(default)]
    pub smoothing: f64,
    /// ε of the DP class counts (`dp::counts`): sequences per class in proportion to them;
    /// `None`: `per_class` sequences for every class.
    #[serde(default)]
    pub eps_counts: Option<f64>,
    /// The budget account (the dataset's name) the run is recorded under.
    #[serde(default)]
    pub account: Option<String>,
    /// The account's budget: a run that would take the account over it is refused.
    #[serde(default)]
    pub budget: Option<f64>,
}

fn yes() -> bool {
    true
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            // ε = 6 split (2, 4): with the histogram sampler the vocabulary is the bottleneck
            // (its noise S/ε_voc is spread over the whole public vocabulary; the histogram's is
            // one document). On MTSamples (two-class, 3 seeds, DP ÷ non-private) (2, 4) kept
            // 1.05 against 0.97 for (1, 5) (README, "evaluate").
            eps_voc: 2.0,
            eps_kde: 4.0,
            // Tuned on MTSamples (README, "evaluate"): the histogram sampler with a per-class
            // vocabulary of N = 1000 from S = 3 terms per document kept the most utility under DP.
            terms_per_doc: 3,
            top_n: 1000,
            len: 10,
            features: 2048,
            per_class: 50,
            sampler: KdeParams::DEFAULT_SAMPLER,
            bandwidth: KdeParams::DEFAULT_BANDWIDTH,
            classes: Vec::new(),
            other_class: None,
            vocab_per_class: true,
            reuse_vocabulary: true,
            smoothing: 0.0,
            eps_counts: Some(Self::DEFAULT_EPS_COUNTS),
            account: None,
            budget: None,
        }
    }
}

/// A budget account's name as recorded: trimmed; None if blank.
pub fn account_name(name: Option<&str>) -> Option<String> {
    name.map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// A setting the worker would refuse, with why, for the field that holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldError {
    pub field: &'static str,
    pub message: String,
}

impl RunSettings {
    /// The default ε of the DP class counts (noise of scale 10 documents: small next to classes
    /// of a few hundred, cheap next to ε_voc + ε_kde).
    pub const DEFAULT_EPS_COUNTS: f64 = 0.1;

    /// Most sequences per class a run may ask for.
    pub const MAX_PER_CLASS: usize = 100_000;

    pub fn vocab_params(&self) -> VocabParams {
        VocabParams { epsilon: self.eps_voc, top_n: self.top_n, terms_per_doc: self.terms_per_doc, per_class: self.vocab_per_class }
    }

    pub fn kde_params(&self) -> KdeParams {
        KdeParams {
            epsilon: self.eps_kde,
            sampler: self.sampler,
            len: self.len,
            features: self.features,
            terms_per_doc: self.len,
            bandwidth: self.bandwidth,
            smoothing: self.smoothing,
        }
    }

    /// The run's public class set; `labelled`: whether the corpus was read with a label column.
    pub fn class_set(&self, labelled: bool) -> Result<ClassSet, FieldError> {
        if !labelled {
            return Ok(ClassSet::unlabelled());
        }
        let other = match &self.other_class {
            Some(name) => OtherLabels::Class { name: name.clone() },
            None => OtherLabels::Drop,
        };
        ClassSet::declared(&self.classes, other).map_err(|e| FieldError { field: "classes", message: e.to_string() })
    }

    /// Terms kept per document while matching: enough for S and for what the sampler reads.
    pub fn keep(&self) -> usize {
        self.terms_per_doc.max(self.kde_params().doc_terms_read())
    }

    /// Every problem, one per field, in the words the core uses. `vocab_len`: size of the
    /// public vocabulary, if known (N cannot exceed it).
    pub fn check(&self, vocab_len: Option<usize>) -> Vec<FieldError> {
        let mut out = Vec::new();
        let vp = self.vocab_params();
        if let Err(e) = crate::dp::check_epsilon("ε_voc", self.eps_voc) {
            out.push(FieldError { field: "eps_voc", message: e.to_string() });
        }
        if let Err(e) = crate::dp::check_epsilon("ε_kde", self.eps_kde) {
            out.push(FieldError { field: "eps_kde", message: e.to_string() });
        }
        // The vocabulary checks, with a valid ε so that only N and S are judged here.
        let vp_fields = VocabParams { epsilon: 1.0, ..vp };
        if let Err(e) = vp_fields.validate(vocab_len.unwrap_or(usize::MAX)) {
            let field = if e.name.starts_with("N ") { "top_n" } else { "terms_per_doc" };
            out.push(FieldError { field, message: e.to_string() });
        }
        let kp = KdeParams { epsilon: 1.0, ..self.kde_params() };
        if let Err(e) = kp.validate() {
            let field = if e.name.starts_with("I ") {
                "features"
            } else if e.name.starts_with("h ") {
                "bandwidth"
            } else if e.name.starts_with("the smoothing") {
                "smoothing"
            } else {
                "len"
            };
            out.push(FieldError { field, message: e.to_string() });
        }
        if out.is_empty() {
            if let Err(e) = self.kde_params().noise_scale() {
                out.push(FieldError { field: "eps_kde", message: format!("ε_kde is too small for these I and L: {e}") });
            }
        }
        if let Some(e) = self.eps_counts {
            if let Err(e) = crate::dp::check_epsilon("ε of the class counts", e) {
                out.push(FieldError { field: "eps_counts", message: e.to_string() });
            }
        }
        if let Some(b) = self.budget {
            if let Err(e) = crate::dp::check_epsilon("the budget", b) {
                out.push(FieldError { field: "budget", message: e.to_string() });
            }
        }
        if self.per_class == 0 || self.per_class > Self::MAX_PER_CLASS {
            out.push(FieldError {
                field: "per_class",
                message: format!("sequences per class = {}: must be between 1 and {}", self.per_class, Self::MAX_PER_CLASS),
            });
        }
        out
    }

    /// The refusal at the Run button (and in the worker): this run's ε on top of what the
    /// account has spent would exceed its budget.
    pub fn check_budget(&self, spent: f64) -> Result<(), FieldError> {
        self.check_budget_of(spent, self.epsilon())
    }

    /// [`Self::check_budget`] for a run that will spend `planned` (less than [`Self::epsilon`]
    /// when it reuses an earlier run's private vocabulary).
    pub fn check_budget_of(&self, spent: f64, planned: f64) -> Result<(), FieldError> {
        match self.budget {
            Some(b) if spent + planned > b + 1e-12 => Err(FieldError {
                field: "budget",
                message: format!(
                    "this run (ε = {planned}) would bring the account “{}” to ε = {:.4}, above its budget of {b} (already spent: {spent:.4}); lower ε or raise the budget",
                    self.account.as_deref().unwrap_or(""),
                    spent + planned
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Whether a run with these settings would reuse the private vocabulary of an earlier run
    /// with `earlier` (same list and corpus assumed): reuse on, and the same ε_voc, N, S,
    /// per-class choice, classes and account (`reuse::VocabKey`, which the worker checks).
    pub fn reuses_vocabulary_of(&self, earlier: &RunSettings) -> bool {
        self.reuse_vocabulary
            && self.vocab_params() == earlier.vocab_params()
            && self.classes == earlier.classes
            && self.other_class == earlier.other_class
            && self.account_name() == earlier.account_name()
    }

    /// The budget account the run is recorded under: the name trimmed, None if blank.
    pub fn account_name(&self) -> Option<String> {
        account_name(self.account.as_deref())
    }

    /// ε a run with these settings records: [`Self::epsilon`], less ε_voc when it reuses a
    /// private vocabulary an earlier run released and paid for.
    pub fn planned_epsilon(&self, reuses_vocabulary: bool) -> f64 {
        if reuses_vocabulary {
            self.epsilon() - self.eps_voc
        } else {
            self.epsilon()
        }
    }

    /// ε this run will spend: ε_voc + ε_kde (+ ε of the class counts) (sequential composition;
    /// classes in parallel).
    pub fn epsilon(&self) -> f64 {
        self.eps_voc + self.eps_kde + self.eps_counts.unwrap_or(0.0)
    }
}

/// One sampled keyphrase sequence, as shown and downloaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceOut {
    pub label: Option<String>,
    pub keyphrases: Vec<String>,
}

/// The outcome of a run: DP outputs only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Ṽ with noisy counts, in decreasing noisy count.
    pub vocabulary: Vec<(String, i64)>,
    pub sequences: Vec<SequenceOut>,
    pub epsilon_run: f64,
    pub epsilon_total: f64,
    /// Terms whose embedding came from this browser's cache (no model run).
    pub embedded_from_cache: usize,
    pub embedded_fresh: usize,
    /// The privacy report (JSON), ready to download.
    pub report: String,
    /// The earlier run whose private vocabulary this run reused (`RunSettings::reuse_vocabulary`),
    /// and the ε of this run's outputs (`epsilon_run` plus that vocabulary's ε_voc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocabulary_from: Option<(String, f64)>,
}

/// Embedding throughput measured in the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchFigures {
    pub model_load_seconds: f64,
    pub terms: usize,
    pub batch1_terms_per_second: f64,
    pub batch32_terms_per_second: f64,
    /// One batch of 32 terms of the same length, embedded 8 times: the same input shape every
    /// call (against `batch32_terms_per_second`, shows what changing shapes cost).
    pub batch32_same_shape_terms_per_second: f64,
    /// Tokens per term (with [CLS] and [SEP]) over all the terms, and in that one batch: the
    /// batch is the longest run of equal length, usually of short terms, so terms/s alone
    /// overstates what a fixed shape gains.
    pub mean_tokens: f64,
    pub same_shape_tokens: f64,
    /// Helper workers that started and loaded the model (see `worker::pool`), and how long that took.
    pub helpers: usize,
    pub helpers_start_seconds: f64,
    /// Batches of 32 shared between the worker and its helpers: the app's own path.
    pub batch32_with_helpers_terms_per_second: f64,
    /// The same, one term per batch.
    pub batch1_with_helpers_terms_per_second: f64,
    /// Size of the worker's wasm memory after the run.
    pub wasm_memory_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_settings_are_valid() {
        assert!(RunSettings::default().check(Some(28_469)).is_empty());
    }

    #[test]
    fn each_bad_field_is_named() {
        let s = RunSettings {
            eps_voc: 0.0,
            eps_kde: f64::NAN,
            terms_per_doc: 0,
            top_n: 10,
            len: 65,
            features: 0,
            per_class: 0,
            sampler: Sampler::Independent,
            bandwidth: 0.1,
            ..RunSettings::default()
        };
        let fields: Vec<&str> = s.check(Some(100)).iter().map(|e| e.field).collect();
        assert_eq!(fields, vec!["eps_voc", "eps_kde", "terms_per_doc", "len", "per_class"]);
        let s = RunSettings { top_n: 200, features: 0, bandwidth: -1.0, ..RunSettings::default() };
        let errs = s.check(Some(100));
        assert_eq!(errs.iter().map(|e| e.field).collect::<Vec<_>>(), vec!["top_n", "features"]);
        assert!(errs[0].message.contains("cannot exceed"), "{}", errs[0].message);
        // One error per field and check: the bandwidth is reported once I is fixed.
        let errs = RunSettings { bandwidth: -1.0, ..RunSettings::default() }.check(None);
        assert_eq!(errs.iter().map(|e| e.field).collect::<Vec<_>>(), vec!["bandwidth"]);
    }

    #[test]
    fn messages_round_trip_as_json() {
        let r = Request::Load {
            files: vec![FileInfo { name: "a.csv".into(), size: 3 }],
            text_col: Some("text".into()),
            label_col: None,
            vocabulary: VocabChoice::Bundled { which: Bundled::Medical },
        };
        let j = serde_json::to_string(&r).unwrap();
        assert!(j.contains("\"kind\":\"load\""), "{j}");
        assert_eq!(serde_json::from_str::<Request>(&j).unwrap(), r);
        let e = Event::Progress { stage: Stage::Embed, done: 3, total: 9 };
        assert_eq!(serde_json::from_str::<Event>(&serde_json::to_string(&e).unwrap()).unwrap(), e);
    }

    #[test]
    fn oversized_inputs_are_refused_by_size_in_plain_words() {
        assert!(limits::check("a corpus", "a.csv", limits::CORPUS_TOTAL, limits::CORPUS_TOTAL).is_ok());
        let e = limits::check("a corpus", "big.txt", limits::CORPUS_TOTAL + 1, limits::CORPUS_TOTAL).unwrap_err();
        assert!(e.starts_with("big.txt is 2.0 GiB and a corpus may be at most 2.0 GiB"), "{e}");
        let e = limits::check("a vocabulary", "v.txt", 100 << 20, limits::VOCABULARY).unwrap_err();
        assert!(e.contains("100.0 MiB") && e.contains("64.0 MiB"), "{e}");
    }

    #[test]
    fn a_run_reuses_the_vocabulary_only_with_the_same_vocabulary_settings() {
        let earlier = RunSettings { classes: vec!["a".into(), "b".into()], account: Some("clinic".into()), ..RunSettings::default() };
        // What does not shape Ṽ may change: ε_kde, the sampler, L, I, the budget, the account's spacing.
        let same = RunSettings { eps_kde: 9.0, sampler: Sampler::IterativeLog, len: 5, features: 512, budget: Some(50.0), account: Some(" clinic ".into()), ..earlier.clone() };
        assert!(same.reuses_vocabulary_of(&earlier));
        assert_eq!(same.check_budget_of(40.0, same.epsilon() - same.eps_voc).map_err(|e| e.message), Ok(()));
        assert!(same.check_budget(40.0).is_err(), "the full ε would not fit");
        for other in [
            RunSettings { reuse_vocabulary: false, ..same.clone() },
            RunSettings { eps_voc: 1.0, ..same.clone() },
            RunSettings { top_n: 500, ..same.clone() },
            RunSettings { terms_per_doc: 2, ..same.clone() },
            RunSettings { vocab_per_class: false, ..same.clone() },
            RunSettings { classes: vec!["a".into()], ..same.clone() },
            RunSettings { other_class: Some("other".into()), ..same.clone() },
            RunSettings { account: None, ..same.clone() },
        ] {
            assert!(!other.reuses_vocabulary_of(&earlier), "{other:?}");
        }
    }
}
