//! The run's release: every DP output that sampling reads, saved so a curator can sample again
//! later at no further privacy cost.

use serde::{Deserialize, Serialize};

use crate::dp::counts::apportion;
use crate::dp::summary::DpSummary;
use crate::dp::vocabulary::PrivateVocabulary;
use crate::input::public_vocab::TermId;

/// Everything needed to generate (more) keyphrase sequences: DP outputs only. Saving and
/// reloading it lets a curator sample again later at no further privacy cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Release {
    pub format: String,
    pub vocabulary: PrivateVocabulary,
    /// The DP summaries of the classes (any family). Stored as "kde", the name release files
    /// have always had, so that every saved release still reads.
    #[serde(rename = "kde")]
    pub summary: DpSummary,
    /// Checksum of the embedding model the summaries were built with (sampling must use the same).
    pub model_checksum: String,
    /// DP class counts (`dp::counts`), in the classes' order: sequences are sampled in
    /// proportion to them. `None`: the same number for every class.
    #[serde(default)]
    pub class_counts: Option<Vec<i64>>,
}

impl Release {
    pub const FORMAT: &'static str = "dpkps-release-v1";

    /// Ṽ's term ids (the sampling candidates).
    pub fn candidate_ids(&self) -> Vec<TermId> {
        self.vocabulary.terms.iter().map(|t| t.id).collect()
    }

    /// Sequences per class for `per_class` on average: in proportion to the DP class counts
    /// when the release has them (at least one each), else `per_class` each.
    pub fn sizes(&self, per_class: usize) -> Vec<usize> {
        let k = self.summary.classes.len();
        match &self.class_counts {
            Some(c) if c.len() == k => apportion(per_class * k, c, 1),
            _ => vec![per_class; k],
        }
    }
}
