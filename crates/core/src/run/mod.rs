//! The run: ONE orchestration of the pipeline after matching, driven by the CLI and by the
//! app's worker alike.
//!
//! ```text
//! RunSettings ──RunPlan::new──▶ RunPlan          (public inputs only; nothing read or spent)
//! MatchedCorpus + RunPlan ──stages::vocabulary──▶ Ṽ           ε_voc   (or a reused / given Ṽ)
//!                         ──Host::vectors──────▶ vectors      (the terms RunPlan::vector_ids names)
//!                         ──stages::summaries──▶ DP summaries ε_kde   + DP class counts ε_counts
//!                         ──stages::sample─────▶ keyphrase sequences  (post-processing)
//!                         ──PrivacyReport::new─▶ the report
//! ```
//!
//! Every DP stage returns its spends; the run records them through [`Host::commit`] before
//! anything computed from them is shown or written, checking the budget again inside the same
//! transaction. What differs between a native process and the browser is behind [`Host`]:
//! where vectors come from (the CLI's model; the page's bundled vectors, caches, helper
//! workers), how a spend is committed (a locked ledger file; an IndexedDB transaction),
//! progress and cancel, and whether the exact sums of the DP summaries are shared among helper
//! workers (the release is the same: the sums are exact integers).
//!
//! Neither front end branches on the keyphrase sampler: [`RunPlan::vector_ids`] says what must
//! be embedded, and the summary and sampling stages dispatch on the sampler themselves.

pub mod check;
pub mod chosen;
pub mod mechanisms;
mod plan;
mod release;
pub mod report;
pub mod reuse;
mod settings;
mod stages;
pub mod vote;

use serde::{Deserialize, Serialize};

pub use plan::RunPlan;
pub use release::Release;
pub use settings::{account_name, FieldError, RunSettings};
pub use stages::{execute, sample, sequences_out, summaries, vocabulary, Host, Recorder, RunInputs, RunOutput, Sampled, Vectors, Vocabulary};

use crate::dp::DpError;
use crate::dp::summary::SummaryError;
use crate::ledger::LedgerError;

/// The long stages, each with its own progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Read,
    Vocabulary,
    Model,
    Embed,
    /// The DP summaries of the classes (any family: histograms or DP-KDEs). Its name on the
    /// wire and in the page (`data-stage`) stays "kde".
    #[serde(rename = "kde")]
    Summary,
    Sample,
    Evaluate,
    /// The replay check of generated documents against the loaded corpus (`crate::replay`).
    Replay,
    /// The recipient's mode: reading and embedding its three sets of documents (`crate::adapt`).
    Documents,
    /// The recipient's mode: training the classifier, epoch by epoch.
    Train,
    /// The DP vote over generated candidates (`vote`), a run of its own.
    Vote,
}

impl Stage {
    pub const RUN: [Stage; 5] = [Stage::Vocabulary, Stage::Model, Stage::Embed, Stage::Summary, Stage::Sample];

    pub fn title(self) -> &'static str {
        match self {
            Stage::Read => "Read and match documents",
            Stage::Vocabulary => "DP vocabulary (ε_voc)",
            Stage::Model => "Load the embedding model",
            Stage::Embed => "Embed terms",
            Stage::Summary => "DP keyphrase summaries (ε_kde)",
            Stage::Sample => "Sample keyphrase sequences",
            // The DP utility check (ε charged) and the non-DP check on a tuning file both train them.
            Stage::Evaluate => "Train and test classifiers per sampler",
            Stage::Replay => "Check the generated documents for replayed private text (not DP)",
            Stage::Documents => "Read and embed the documents",
            Stage::Train => "Train the classifier (no ε: nothing is released)",
            Stage::Vote => "DP vote over the generated candidates (ε_select)",
        }
    }
}

/// Why a run stopped, in plain words. A front end turns it into its own error
/// ([`Host::fail`]), with the stage it happened in.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A setting refused before anything is read or spent (the field's own words).
    #[error("{0}")]
    Settings(String),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Dp(#[from] DpError),
    #[error(transparent)]
    Summary(#[from] SummaryError),
    /// The ledger no longer holds what a reused release needs (its paying run).
    #[error("{0}")]
    Refused(String),
}

#[cfg(test)]
mod stage_name_tests {
    use super::Stage;

    /// The stages' names on the wire and in the page's `data-stage` (the end-to-end tests and
    /// benchmarks find the bars by them): the summaries' stage keeps its old name "kde".
    #[test]
    fn stage_names_on_the_wire_are_fixed() {
        let names: Vec<String> = [Stage::Read, Stage::Vocabulary, Stage::Model, Stage::Embed, Stage::Summary, Stage::Sample]
            .iter()
            .map(|s| serde_json::to_string(s).expect("a stage serializes"))
            .collect();
        assert_eq!(names, ["\"read\"", "\"vocabulary\"", "\"model\"", "\"embed\"", "\"kde\"", "\"sample\""]);
        assert_eq!(serde_json::from_str::<Stage>("\"kde\"").expect("the old name reads"), Stage::Summary);
    }
}
