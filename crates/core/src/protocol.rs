//! Messages between the app's UI thread and its Web Worker.
//!
//! The UI never touches a private document's content beyond the preview it shows the curator;
//! everything that reads the corpus, embeds, or adds noise runs in the worker (`crates/worker/src/`),
//! so the page stays responsive and the work can be cancelled. Messages are JSON (serde); the
//! files a request refers to travel next to it as `File` objects (structured clone), in the
//! order of its `files` list.
//!
//! This module is plain Rust so that the messages' JSON and the size limits are tested natively
//! (the run settings it carries are checked, and tested, in `crate::run::settings`).

use serde::{Deserialize, Serialize};

use crate::input::preview::Preview;
use crate::input::public_vocab::Bundled;
use crate::sample::SequenceOut;

// What a run request carries and what its progress names: defined with the orchestration
// (`crate::run`), which the CLI drives too; carried here as they are.
pub use crate::run::{account_name, FieldError, RunSettings, Stage};

/// The largest inputs the app accepts, refused by size before a byte is read. A worker's
/// memory is one wasm heap (at most 4 GiB). The curator's corpus (and a tuning file) has no
/// total cap: it is streamed in 4 MiB slices and only each document's term ids, label and hash
/// are kept, so what bounds it is per record and per document (`crate::input::corpus::limits`). The
/// files below are read whole (and the model is kept twice: its bytes for the helper workers,
/// and tract's copy).
pub mod limits {
    /// The recipient's document sets, together: their texts are kept (to embed, and to write
    /// beside the predictions).
    pub const TEXTS_TOTAL: u64 = 2 << 30;
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
    Load {
        files: Vec<FileInfo>,
        text_col: Option<String>,
        label_col: Option<String>,
        /// The person column (`crate::input::corpus::Fields::person`): the privacy unit is then the
        /// person.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        person_col: Option<String>,
        vocabulary: VocabChoice,
    },
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
    /// Documents embedded per second, one per model call, in this worker alone and with its
    /// helpers, and where a document's model call spends its time (benchmark page,
    /// `tests/e2e/bench_docs.mjs`; [`Event::BenchedDocs`]). `profile`: documents of each set
    /// profiled node by node; `plans`: also time plans of fixed shapes.
    BenchDocs { sets: Vec<BenchDocSet>, profile: usize, plans: bool },
    /// The DP utility check (`crate::run::check`) on the loaded corpus: every sampler whose
    /// release fits these settings, compared on held-out documents; held to the account's budget
    /// and recorded in the ledger like a run ([`Event::DpChecked`]). Its figures are DP outputs.
    DpCheck { settings: RunSettings },
    /// The utility check (`crate::eval`, NOT DP) on a separate tuning file (an older or public
    /// extract, attached), read with the loaded corpus's columns and vocabulary: nothing about
    /// the private corpus is computed, nothing counted against it.
    EvaluateTuning { settings: RunSettings, file: FileInfo },
    /// The replay check (`crate::replay`): the generated `documents` (outputs of the DP
    /// prompts and the LLM) against the loaded corpus, whose files are attached again (the
    /// worker keeps no text: it reads them once more, one document at a time, and refuses
    /// files that are not the corpus it loaded). NOT DP: the answer is for the curator.
    ReplayCheck { files: Vec<FileInfo>, documents: Vec<crate::replay::SyntheticDoc>, params: crate::replay::ReplayParams },
    /// The budget account's state for the loaded corpus: spent, budget, overlap with the
    /// account's earlier corpora ([`LedgerEvent::Status`]).
    Account { name: String },
    /// The whole ledger as JSON, to download ([`LedgerEvent::Exported`]); the overlap sketches
    /// only with `sketches` (`LedgerBook::for_export`).
    ExportLedger { sketches: bool },
    /// A ledger file (attached) merged into this browser's: runs by id ([`LedgerEvent::Imported`]).
    ImportLedger,
    /// The recipient's mode (`crate::adapt`): embed a labelled synthetic corpus, the recipient's
    /// own unlabelled documents and an optional labelled test set (their files attached in that
    /// order), train the classifier (adapted with the CORAL term; and plain, to compare), score,
    /// predict ([`Event::Epochs`] as it goes, then [`Event::Trained`]). Spends no ε; the documents
    /// stay in the page.
    Train { synthetic: DocSet, unlabelled: Option<DocSet>, test: Option<DocSet>, params: crate::adapt::TrainParams, compare: bool },
    /// The DP vote over generated candidates (`crate::run::vote`) on the loaded corpus: the
    /// candidates (documents the LLM wrote from a run's DP keyphrase sequences: DP outputs), the
    /// settings of that run with `settings.vote` on (the class set, account and budget too), the
    /// run that released the sequences, and the corpus files attached again (the worker keeps no
    /// text: it reads them once more, refusing files that are not the corpus it loaded).
    /// Recorded in the ledger as a run of its own before anything is drawn ([`Event::Voted`]).
    Vote { files: Vec<FileInfo>, candidates: Vec<VoteCandidate>, settings: RunSettings, from_run: Option<String> },
}

/// One generated document the vote chooses among (public: a DP output).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoteCandidate {
    /// Its class's name (`None`: the document type of an unlabelled corpus's single class).
    pub label: Option<String>,
    pub text: String,
}

/// The vote's outcome for the page: DP outputs and public settings only (the noisy votes and
/// what is kept; never a private vector or an exact count).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoteResult {
    /// As the privacy report of the kept documents states it (`dpkps select`'s vote-report.json).
    pub record: crate::run::vote::VoteRecord,
    /// The kept candidates: positions in the request's `candidates`, ascending.
    pub kept: Vec<usize>,
    /// Candidates of no declared class, left out of the vote (and of the kept documents).
    pub other_class: usize,
    /// ε spent on this corpus in this browser, the vote included.
    pub epsilon_total: f64,
}

/// One set of documents of the recipient's mode: its files (attached to the request in this
/// order) and columns (`label_col` for a labelled set).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocSet {
    pub files: Vec<FileInfo>,
    pub text_col: Option<String>,
    pub label_col: Option<String>,
}

/// What the recipient's training gives the page: figures, and the downloads, made in the worker
/// by the core (`crate::adapt::task`) as `dpkps train` writes them. The predictions hold the
/// recipient's own documents: they stay in this page until the recipient downloads them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainResult {
    pub classes: Vec<String>,
    pub counts: crate::adapt::summary::Counts,
    /// The adapted model first, then the plain one when compared.
    pub models: Vec<crate::adapt::summary::TrainedSummary>,
    pub predictions_csv: String,
    pub predictions_jsonl: String,
    /// `model.safetensors`, which `dpkps predict --classifier` reads.
    pub model: Vec<u8>,
    pub embed_seconds: f64,
    pub train_seconds: f64,
    /// Documents embedded, how many more were embedded by an earlier training of this page
    /// session (kept in the worker's memory), and how many by helper workers (how many helpers).
    pub embedded: usize,
    pub reused: usize,
    pub by_helpers: usize,
    pub helpers: usize,
}

/// Ledger answers: posted as their own messages (tag `what`, not `kind`), so that they never
/// touch the running job's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum LedgerEvent {
    Status(AccountStatus),
    Exported { json: String, sketches: bool },
    Imported { summary: crate::ledger::MergeSummary },
    Failed { message: String },
}

/// A budget account as seen with the loaded corpus. For the curator's eyes only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountStatus {
    pub name: String,
    /// ε that counts against the account's budget (`LedgerBook::spent_for`).
    pub spent: f64,
    pub budget: Option<f64>,
    /// ε spent on this corpus (its key) alone, and its runs.
    pub corpus_spent: f64,
    pub corpus_runs: usize,
    /// Earlier corpora of the account, with the estimated overlap (`crate::ledger::overlap`), largest first.
    pub overlaps: Vec<f64>,
    /// Corpora of OTHER accounts that overlap this one by WARN_OVERLAP or more (account, overlap),
    /// largest first: their spends count against this budget too (`ledger::budget`).
    #[serde(default)]
    pub other_accounts: Vec<(String, f64)>,
    /// Non-DP utility checks run on this corpus, and the settings they compared.
    pub non_dp_checks: usize,
    pub settings_compared: usize,
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
        /// Short terms per model call (`crate::embed::rows`): 8 where the model's load-time
        /// probe found a batch's rows independent on this machine, else 1.
        #[serde(default)]
        term_width: usize,
        /// The model's products by its weights that run on integers (the embedder's
        /// `int_products`: 36 for the bundled model), and whether this machine's integer kernel
        /// gave the plain product's sums (None) or where it did not.
        #[serde(default)]
        int_products: usize,
        #[serde(default)]
        int_kernel_error: Option<String>,
        /// The model's attentions that run as one operation (the embedder's `attentions`: 6 for
        /// the bundled model), and whether this machine's attention kernel stayed near the plain
        /// one (None) or where it did not.
        #[serde(default)]
        attentions: usize,
        #[serde(default)]
        attention_kernel_error: Option<String>,
    },
    Benched(BenchFigures),
    BenchedDocs(DocBenchFigures),
    /// The non-DP utility check on a tuning file.
    Evaluated(crate::eval::EvalReport),
    /// The DP utility check on the loaded corpus, recorded in the ledger as the run `id` (a
    /// later run names it in `RunSettings::chosen_by_check`).
    DpChecked { id: String, result: crate::eval::dp_check::CheckResult },
    /// The replay check's result, one entry per document sent. For the curator's eyes: its
    /// spans are private text, never written to a download, log or report.
    ReplayChecked(crate::replay::ReplayCheck),
    /// The idle-time pass over a user's own list (`worker::background`): `done` of its first
    /// `total` terms have vectors in this page session's memory (counts of the public list).
    Background { done: u64, total: u64 },
    /// The recipient's training: the losses of the epochs of the model `model` ("coral" or
    /// "plain") since the last such event (sent at most every ~100 ms, and when a model ends).
    Epochs { model: String, logs: Vec<crate::adapt::EpochLog> },
    Trained(Box<TrainResult>),
    /// The DP vote's release, recorded in the ledger (`Request::Vote`).
    Voted(Box<VoteResult>),
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
    /// With a person column: how many persons it names (the privacy unit is the person).
    #[serde(default)]
    pub persons: Option<usize>,
}

/// The outcome of a run: DP outputs only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Ṽ with noisy counts, in decreasing noisy count; empty when Ṽ is the whole public list
    /// (`vocabulary_whole_list`), which has none.
    pub vocabulary: Vec<(String, i64)>,
    /// The public list's size when Ṽ is that whole list (N at least its size: drawn from
    /// nothing, no ε_voc; `dp::vocabulary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocabulary_whole_list: Option<usize>,
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
    /// Per class: how far its release stands above the DP noise, and its sequences.
    #[serde(default)]
    pub signals: Vec<crate::sample::signal::ClassSignal>,
}

/// A named set of documents to embed in the document benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchDocSet {
    pub name: String,
    pub texts: Vec<String>,
}

/// Document embedding measured in the worker (`Request::BenchDocs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocBenchFigures {
    /// Helper workers that embedded beside this worker, and the cores the browser reports.
    pub helpers: usize,
    pub cores: usize,
    pub sets: Vec<DocBenchSet>,
    pub wasm_memory_bytes: u64,
}

/// One set's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocBenchSet {
    pub name: String,
    pub documents: usize,
    pub tokens_per_document: f64,
    /// One document per model call, on this worker alone (one core).
    pub alone_per_second: f64,
    /// The same, shared with the helpers as the recipient's documents are.
    pub with_helpers_per_second: f64,
    /// Where the time went (`dpkps_embed::profile`), as a plain-text table.
    pub profile: String,
    /// Plans of fixed shapes: (which, ms a document, same bits as alone, ms to build).
    pub plans: Vec<(String, f64, bool, f64)>,
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
    /// Term batches (`crate::embed::rows`: each term at its home row, `term_width` rows a
    /// call) shared between the worker and its helpers: the app's own path.
    pub rows_with_helpers_terms_per_second: f64,
    /// Rows of those batches (1 where the model's probe found rows dependent).
    pub term_width: usize,
    /// The same terms one per model call, shared likewise.
    pub batch1_with_helpers_terms_per_second: f64,
    /// Size of the worker's wasm memory after the run.
    pub wasm_memory_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_as_json() {
        let r = Request::Load {
            files: vec![FileInfo { name: "a.csv".into(), size: 3 }],
            text_col: Some("text".into()),
            label_col: None,
            person_col: Some("patient".into()),
            vocabulary: VocabChoice::Bundled { which: Bundled::Medical },
        };
        let j = serde_json::to_string(&r).unwrap();
        assert!(j.contains("\"kind\":\"load\""), "{j}");
        assert_eq!(serde_json::from_str::<Request>(&j).unwrap(), r);
        let e = Event::Progress { stage: Stage::Embed, done: 3, total: 9 };
        assert_eq!(serde_json::from_str::<Event>(&serde_json::to_string(&e).unwrap()).unwrap(), e);
    }

    #[test]
    fn the_recipients_messages_round_trip_as_json() {
        let set = |label: Option<&str>| DocSet { files: vec![FileInfo { name: "s.jsonl".into(), size: 9 }], text_col: Some("text".into()), label_col: label.map(str::to_string) };
        let r = Request::Train { synthetic: set(Some("label")), unlabelled: Some(set(None)), test: None, params: crate::adapt::TrainParams::default(), compare: true };
        let j = serde_json::to_string(&r).unwrap();
        assert!(j.contains("\"kind\":\"train\""), "{j}");
        assert_eq!(serde_json::from_str::<Request>(&j).unwrap(), r);
        let e = Event::Epochs { model: "coral".into(), logs: vec![crate::adapt::EpochLog { epoch: 1, class_loss: 1.25, coral_loss: 0.5 }] };
        assert_eq!(serde_json::from_str::<Event>(&serde_json::to_string(&e).unwrap()).unwrap(), e);
        let t = Event::Trained(Box::new(TrainResult {
            classes: vec!["a".into(), "b".into()],
            counts: Default::default(),
            models: Vec::new(),
            predictions_csv: "text,label,probability\n".into(),
            predictions_jsonl: String::new(),
            model: vec![0, 1, 255],
            embed_seconds: 1.5,
            train_seconds: 0.25,
            embedded: 3,
            reused: 0,
            by_helpers: 1,
            helpers: 1,
        }));
        assert_eq!(serde_json::from_str::<Event>(&serde_json::to_string(&t).unwrap()).unwrap(), t);
    }

    #[test]
    fn the_votes_messages_round_trip_as_json() {
        let settings = RunSettings { vote: Some(crate::dp::vote::VotePlan::default()), ..RunSettings::default() };
        let r = Request::Vote {
            files: vec![FileInfo { name: "notes.csv".into(), size: 9 }],
            candidates: vec![VoteCandidate { label: Some("a".into()), text: "A generated note.".into() }, VoteCandidate { label: None, text: "b".into() }],
            settings,
            from_run: None,
        };
        let j = serde_json::to_string(&r).unwrap();
        assert!(j.contains("\"kind\":\"vote\"") && j.contains("\"eps_select\":1.0"), "{j}");
        assert_eq!(serde_json::from_str::<Request>(&j).unwrap(), r);
    }

    #[test]
    fn oversized_inputs_are_refused_by_size_in_plain_words() {
        assert!(limits::check("the unlabelled documents", "a.csv", limits::TEXTS_TOTAL, limits::TEXTS_TOTAL).is_ok());
        let e = limits::check("the unlabelled documents", "big.txt", limits::TEXTS_TOTAL + 1, limits::TEXTS_TOTAL).unwrap_err();
        assert!(e.starts_with("big.txt is 2.0 GiB and the unlabelled documents may be at most 2.0 GiB"), "{e}");
        let e = limits::check("a vocabulary", "v.txt", 100 << 20, limits::VOCABULARY).unwrap_err();
        assert!(e.contains("100.0 MiB") && e.contains("64.0 MiB"), "{e}");
    }
}
