//! The DP vote's part of the privacy report (`super::PrivacyReport::vote`): its release as it
//! is written and shown (`crate::run::vote` makes it; `dpkps select` writes it as
//! vote-report.json). Here, below the run, so that the report does not reach up into the vote.

use serde::{Deserialize, Serialize};

use crate::dp::vote::{ClassOutcome, KeepMode, KeepRule};

/// The vote's release as it is written and shown: DP outputs and public settings only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoteReport {
    /// The vote's run in the ledger.
    pub run: String,
    /// ε of the noise, and what the ledger charged (less with subsampling).
    pub epsilon: f64,
    pub epsilon_charged: f64,
    pub sample_rate: f64,
    pub noise_scale: f64,
    pub keep: KeepRule,
    pub keep_mode: KeepMode,
    /// "document", or "person (column …)".
    pub privacy_unit: String,
    pub mechanism: String,
    pub classes: Vec<ClassOutcome>,
    /// Every vote on record, when this one was taken, for this corpus (and corpora overlapping
    /// it) over the same candidates (their SHA-256 in `candidates_from`) or over documents of
    /// the same run, this one included, and their charged ε summed: a kept set the curator
    /// takes after seeing an earlier vote ("Vote again") depends on every one of them, so their
    /// ε adds up (sequential composition). 0 in records written before it was kept.
    #[serde(default)]
    pub votes_on_candidates: usize,
    #[serde(default)]
    pub epsilon_votes_on_candidates: f64,
    /// Of those votes, how many were recorded under another privacy unit than this one: their
    /// ε is per their own unit, so the sum is not one guarantee when this is not 0.
    #[serde(default)]
    pub votes_other_unit: usize,
    /// Whether the vote read the run's very units: per document, always (the fingerprint is
    /// the documents); per person, only when the run's and the vote's digests of the grouping
    /// into persons were both known and equal (`crate::run::vote`). False: the report states
    /// the run's ε and the vote's apart. False in records written before it was kept.
    #[serde(default)]
    pub unit_verified: bool,
}

/// The vote as the report of its kept documents states it: `dpkps select` writes this as
/// vote-report.json; the page adds it to the privacy report (`PrivacyReport::vote`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoteRecord {
    pub vote: VoteReport,
    /// What was voted on (`VoteInputs::candidates_from`).
    pub candidates_from: serde_json::Value,
    /// Documents kept, over every class.
    pub kept: usize,
}
