//! Utility evaluation without an LLM (DP-KPS appendix C.2.2, C.2.4, Table 5).
//!
//! Hold out part of the labelled corpus, run the DP pipeline on the rest, train a classifier
//! on the DP keyphrase sequences and test it on the held-out real documents turned into
//! keyphrase sequences. Compared with the same classifier trained on the training documents'
//! own sequences (an upper bound) and with the majority class (a floor), this says cheaply
//! how much class signal the DP sequences keep, per sampler, which is how the paper chooses
//! between the independent and the iterative samplers for a dataset.
//!
//! # Privacy: the evaluation is NOT differentially private
//! Its figures are computed from private documents (the held-out documents' labels and
//! keyphrases, the training documents' sequences, the exact class counts). They are for the
//! curator, like the ingestion counts, and must not be published as if they were DP. The
//! report says so in its `note`. Nothing here releases an artefact either: the DP vocabularies
//! and DP-KDEs built inside an evaluation are dropped when it ends, so evaluation runs are not
//! recorded in the privacy ledger (the ledger counts what was released; a curator who
//! evaluates and then runs the pipeline pays only for the pipeline run's release).
//!
//! # Arms
//! - `dp-<sampler>`: ε_voc-DP vocabulary and ε_kde-DP KDEs from the training part, then
//!   `per_class` sampled sequences per class: the classifier's training set.
//! - `nodp-<sampler>` (optional): the same samplers with the noise switched off (the exact top-N
//!   vocabulary, noiseless KDE sums): what DP noise costs, separately from what the
//!   keyphrase-sequence representation and the KDE sampling cost.
//! - `nonprivate`: the training documents' own sequences (upper bound).
//! - `majority`: always the most frequent training class (floor).
//!
//! Each sequence-trained arm is scored in two views, with the same hyper-parameters for every
//! arm: `embedding` (softmax regression on the standardised mean embedding of the sequence's
//! keyphrases) and `bag` (softmax regression on indicators of the keyphrases that occur in the
//! arm's training sequences). Everything is repeated over several seeds (a fresh split and
//! fresh DP noise each time) and reported as mean and spread.
//!
//! # Test documents
//! A held-out document becomes the sequence of its first L kept public-vocabulary terms (its L
//! most used distinct ones): the rule the pipeline uses for the documents the DP-KDE sees
//! ([`crate::input::matched::MatchedCorpus::summary_docs`]). A held-out document with no matched term has no sequence; it
//! is left out of the sequence views' test set and counted (`test_docs_without_terms`). The
//! majority arm is scored on the same test set, so the arms stay comparable.
//!
//! # Use
//! [`Evaluation::prepare`] checks the parameters, shapes the task, draws the splits and the
//! vocabularies; the caller embeds [`Evaluation::terms_to_embed`] once (any
//! [`crate::embed::Embed`]); [`Evaluation::run`] does the rest, reusing those embeddings for
//! every arm and seed. [`Evaluation::text_view`] scores synthetic documents (e.g. LLM output)
//! by their text embeddings. No I/O, no web types: the same code can run in a Web Worker.

pub mod classifier;
pub mod diagnose;
pub mod dp_check;
mod evaluation;
pub mod metrics;
mod params;
mod report;
pub mod signal_loss;
mod task;
pub mod split;

pub use evaluation::{ArmSequences, Evaluation, Progress};
pub use params::{EvalParams, Task, NODP_FEATURES, REST};
pub use report::{ArmReport, EvalReport, NotScored, RefusedArm, RunResult, SyntheticSummary, TaskSummary, BASELINE_ARM, NOTE};

use crate::base::ParamError;
use crate::dp::DpError;
use crate::dp::summary::SummaryError;

use classifier::ClassifierError;

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Param(#[from] ParamError),
    #[error("the evaluation needs labelled documents, and no document has a label (give the label column)")]
    NoLabels,
    #[error("no document has the label {label:?}; the labels are: {available}")]
    UnknownLabel { label: String, available: String },
    #[error("the task has {classes} class(es) but needs at least 2 (labels of the corpus: {available})")]
    TooFewClasses { classes: usize, available: String },
    #[error("the class {label:?} has only {docs} document(s); each class needs at least {min} (so that it has documents on both sides of the split); choose fewer classes (top classes, one-vs-rest) or a larger corpus")]
    ClassTooSmall { label: String, docs: usize, min: usize },
    #[error("the documents were matched keeping {kept} terms each, but the evaluation needs {needed}")]
    Keep { kept: usize, needed: usize },
    #[error("the test part has no document with a matched vocabulary term, so there is nothing to test on")]
    NoTestDocs,
    #[error("{got} text embeddings were given for {expected} documents")]
    TextCount { expected: usize, got: usize },
    #[error("no synthetic document has the label of a class of this task ({classes})")]
    NoSyntheticForTask { classes: String },
    #[error("the check recorded ε = {spent} on its training part, more than the {planned} it planned; nothing is shown")]
    Overspent { spent: f64, planned: f64 },
    #[error("the sampled sequences could not be written: {0}")]
    Export(String),
    #[error(transparent)]
    Dp(#[from] DpError),
    #[error(transparent)]
    Summary(#[from] SummaryError),
    #[error("the classifier could not be trained: {0}")]
    Classifier(#[from] ClassifierError),
}

#[cfg(test)]
mod tests;
