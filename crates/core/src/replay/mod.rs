//! The replay check: which generated documents repeat private text, before they are downloaded.
//!
//! # Why
//!
//! Differential privacy covers what the pipeline releases: the private vocabulary, the
//! keyphrase summaries, and so the keyphrase sequences and the prompts built from them. It
//! says nothing about what the LLM writes from its own memory. A model trained or tuned on
//! text that overlaps the private corpus, or one that writes a common template that a clinic
//! fills in the same way, can put a private document's sentence into a synthetic one, and the
//! ε of the run does not cover that. So before the synthetic corpus leaves, each generated
//! document is compared with the private documents loaded in the same page (or given to the
//! same command), and the ones that share too much with them are flagged, and left out of the
//! downloads unless the curator keeps them.
//!
//! # What is measured, per synthetic document
//!
//! Words are lower-cased runs of letters and digits ([`tokens`]), as the matcher reads them.
//!
//! - `longest_run`: the longest run of consecutive words it shares with any ONE private
//!   document (exact, when at least [`ReplayParams::ngram`] words; shorter runs are not looked
//!   for and count 0).
//! - `run_outside_keyphrases`: the largest number of words of one such shared run that lie
//!   outside the document's own keyphrases (wherever a keyphrase occurs in the document). The
//!   keyphrases are DP outputs written into the document on purpose: "heart failure, chest
//!   pain" appearing verbatim is the prompt being followed, not the private text being
//!   replayed, so they never count towards the flag.
//! - `rare_ngrams`: its distinct word n-grams (n = [`ReplayParams::ngram`]) that occur in at
//!   least one and at most R = [`ReplayParams::rare_docs`] private documents, counting only
//!   those of which MORE THAN HALF the words lie outside the document's keyphrases. A phrase
//!   that only one or two private documents have is what identifies them; a phrase most
//!   documents share ("the patient was seen in the clinic") is not; and keyphrases joined by
//!   a word or two ("history of heart failure and hypertension") are the prompt followed,
//!   which a small corpus may well hold only once.
//! - `flagged`: `run_outside_keyphrases >= flag_run`, or any rare n-gram.
//!
//! The defaults, with the figures that chose them, are at [`ReplayParams::default`].
//!
//! # How, and what it costs
//!
//! The synthetic corpus is small (hundreds to a few thousand texts of a few hundred words) and
//! the private one may be large (60,000 notes in the page), so the SYNTHETIC documents are
//! indexed ([`ReplayIndex`]: their words, and every distinct word n-gram with its positions)
//! and the private documents are streamed through the index ONCE, one at a time: memory is
//! the index plus one private document's word ids, plus a little per private document that
//! does grow with the corpus: a 64-bit hash of each distinct private text (to read a repeated
//! text once; 10 to 21 bytes each in its hash set), and, where the corpus is read through
//! `crate::input::corpus::Ingest` (the page's worker, the CLI), its 32-byte hash of every document for
//! the corpus fingerprint (32 to 64 bytes each as the vector grows). About 40 to 85 bytes per
//! private document in all: 2.5 to 5 MB for 60,000 notes, 40 to 85 MB for a million. No
//! private text is kept; a private word that no synthetic document has cannot match and is
//! not kept either. Each n-gram hit
//! is counted for its rare test (once per private document, counts capped at R + 1) and
//! extended word by word to the full shared run (only from its left end: see `index.rs`).
//!
//! # Privacy: NOT differentially private
//!
//! The check reads the private text, so its results are NOT a DP release and are outside
//! every ε the ledger records. What it can reveal: which synthetic documents resembled some
//! private document (and, to whoever sees a flagged document's span, the words it shares with
//! one), and how many. Leaving flagged documents out makes the downloaded corpus depend on the
//! private documents beyond the DP outputs: the missing ones say that the model's answer to
//! those keyphrases resembled private text. That is a deliberate disclosure-control step,
//! worth its small leak because what it removes is private text itself. The spans
//! ([`DocReplay::longest_span`], [`DocReplay::rare_span`]) are private text: they are shown to
//! the curator and never written into a download, a log or the report; the report gets the
//! counts and the thresholds only ([`ReplaySummary`]), with a statement that they are not DP.

mod index;
mod tokens;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

pub use index::ReplayIndex;

/// The thresholds of the check. Public settings (they may be written into the report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayParams {
    /// n: the length in words of the n-grams indexed and tested for rarity. Shared runs
    /// shorter than n are not found.
    pub ngram: usize,
    /// R: an n-gram is rare when at least one and at most R private documents contain it.
    pub rare_docs: u32,
    /// A document is flagged when one shared run has at least this many words outside its
    /// keyphrases (or when it has any rare n-gram).
    pub flag_run: usize,
}

impl Default for ReplayParams {
    fn default() -> Self {
        ReplayParams { ngram: 8, rare_docs: 1, flag_run: 12 }
    }
}

impl ReplayParams {
    /// Refuses values the check cannot use, in plain words.
    pub fn check(&self) -> Result<(), ReplayError> {
        if !(2..=32).contains(&self.ngram) {
            return Err(ReplayError::Param(format!("the n-gram length must be 2 to 32 words, not {}", self.ngram)));
        }
        if !(1..=1000).contains(&self.rare_docs) {
            return Err(ReplayError::Param(format!(
                "a rare n-gram occurs in 1 to R private documents: R must be 1 to 1000, not {}",
                self.rare_docs
            )));
        }
        if self.flag_run < self.ngram {
            return Err(ReplayError::Param(format!(
                "the shared run that flags a document ({} words) cannot be shorter than the n-gram length ({}): shorter runs are not found",
                self.flag_run, self.ngram
            )));
        }
        Ok(())
    }

    /// "a shared run of ≥ 12 words outside its keyphrases, or a 6-word sequence found in at
    /// most 1 private document".
    pub fn describe(&self) -> String {
        format!(
            "a run of at least {} words outside its keyphrases shared with one private document, or a {}-word sequence \
             that at most {} private document{} contain{}",
            self.flag_run,
            self.ngram,
            self.rare_docs,
            if self.rare_docs == 1 { "" } else { "s" },
            if self.rare_docs == 1 { "s" } else { "" },
        )
    }
}

/// What stops the check, in plain words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    #[error("replay check: {0}")]
    Param(String),
    #[error("replay check: the synthetic corpus is too large to index (over 4 billion words)")]
    TooLarge,
}

/// One generated document to check: its index in the job, its text, and the keyphrases it
/// was prompted with (DP outputs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyntheticDoc {
    pub index: usize,
    pub text: String,
    pub keyphrases: Vec<String>,
}

/// The check's result for one generated document. For the curator's eyes: the spans are
/// private text (see the module docs) and are never written to a download, log or report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocReplay {
    /// Its index in the job.
    pub index: usize,
    /// Its words.
    pub words: usize,
    /// The longest run of words shared with one private document (0: none of n words or more).
    pub longest_run: usize,
    /// The most words outside its keyphrases in one shared run (what `flag_run` applies to).
    pub run_outside_keyphrases: usize,
    /// Distinct n-grams found in 1 to R private documents (more than half of their words
    /// outside its keyphrases).
    pub rare_ngrams: usize,
    pub flagged: bool,
    /// The shared run that counts for the flag, as the document writes it. PRIVATE TEXT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_span: Option<String>,
    /// The first rare n-gram, as the document writes it. PRIVATE TEXT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rare_span: Option<String>,
}

/// A whole check: the thresholds and one result per document checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayCheck {
    pub params: ReplayParams,
    pub docs: Vec<DocReplay>,
}

impl ReplayCheck {
    /// Indexes `synthetic`, streams `private` through it once, and gives the results.
    pub fn run<'a>(synthetic: Vec<SyntheticDoc>, private: impl IntoIterator<Item = &'a str>, params: ReplayParams) -> Result<ReplayCheck, ReplayError> {
        let mut index = ReplayIndex::new(synthetic, params)?;
        for text in private {
            index.add_private(text);
        }
        Ok(ReplayCheck { params, docs: index.finish() })
    }

    /// The job indices of the flagged documents.
    pub fn flagged(&self) -> BTreeSet<usize> {
        self.docs.iter().filter(|d| d.flagged).map(|d| d.index).collect()
    }

    /// The job indices checked.
    pub fn checked(&self) -> BTreeSet<usize> {
        self.docs.iter().map(|d| d.index).collect()
    }

    /// What the report says of this check: counts and thresholds, no text. `dropped`: the
    /// flagged documents were left out of the corpus the report goes with.
    pub fn summary(&self, dropped: bool) -> ReplaySummary {
        let flagged = self.flagged().len();
        ReplaySummary::new(self.docs.len(), flagged, if dropped { flagged } else { 0 }, self.params)
    }
}

/// The replay check as the privacy report states it: counts and thresholds only (no span, no
/// count of private documents), and that they are not differentially private.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplaySummary {
    /// Generated documents compared with the private corpus.
    pub checked: usize,
    /// Those flagged.
    pub flagged: usize,
    /// Those left out of the synthetic corpus this report goes with.
    pub dropped: usize,
    pub params: ReplayParams,
    /// In words: what was done, and that these figures are not DP.
    pub statement: String,
}

impl ReplaySummary {
    pub fn new(checked: usize, flagged: usize, dropped: usize, params: ReplayParams) -> ReplaySummary {
        let fate = match (flagged, dropped) {
            (0, _) => String::new(),
            (f, d) if d == f => " They were left out of this synthetic corpus.".to_string(),
            (_, 0) => " The curator kept them in this synthetic corpus.".to_string(),
            (_, d) => format!(" {d} of them were left out of this synthetic corpus."),
        };
        let statement = format!(
            "Replay check: the {checked} generated documents were compared with the private corpus on the curator's \
             machine; {flagged} were flagged ({}).{fate} These counts, and which documents are missing, are computed \
             from the private documents: they are NOT differentially private and are outside the ε above. They tell \
             which prompts got a reply that repeated private text, and that can reveal more than a count: whoever \
             holds a prompt (it is built from the released keyphrases, and an audit log of the generation keeps \
             every request sent) can send it to the model again, and a reply that comes back the same or close \
             holds words that some private document contains. The thresholds are the curator's choice; chosen \
             after seeing the check's results on this corpus, they depend on the private documents too. The check \
             exists because the ε covers the keyphrases, not what the language model writes from its own memory. \
             No private text is in this report.",
            params.describe()
        );
        ReplaySummary { checked, flagged, dropped, params, statement }
    }

    /// The summary of a check that did not read the `unchecked` documents generated after it:
    /// the statement says so (they are in the corpus, not compared).
    pub fn with_unchecked(mut self, unchecked: usize) -> ReplaySummary {
        if unchecked > 0 {
            let (s, was) = if unchecked == 1 { ("", "was") } else { ("s", "were") };
            self.statement.push_str(&format!(
                " {unchecked} more document{s} of this synthetic corpus {was} generated after the check and {was} NOT compared \
                 with the private corpus."
            ));
        }
        self
    }
}
