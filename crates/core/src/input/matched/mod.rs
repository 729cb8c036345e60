//! The matched corpus: corpus → [`MatchingSink`] → [`MatchedCorpus`], shared by the CLI and
//! the app. (The run's stages, which read it, are `crate::run`.)
//!
//! [`MatchedCorpus`] is the only thing a run keeps of a private document: its label
//! and the ids of its most used distinct matched public terms. The text itself is dropped as soon
//! as it has been matched, so memory grows with the number of documents, not their size.

use std::io::Read;

use serde::{Deserialize, Serialize};

use crate::input::corpus::{self, CorpusError, Fields, Format, Ingest, IngestStats};
use crate::input::classes::ClassSet;
use crate::input::public_vocab::{MatchScratch, Matcher, TermId};

#[cfg(not(target_arch = "wasm32"))]
mod threads;
#[cfg(not(target_arch = "wasm32"))]
pub use threads::Threads;


/// One private document, reduced to what later stages need. Private: never released.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchedDoc {
    pub label: Option<String>,
    /// The person the document is about, as a number local to this load (the corpus's person
    /// column; `None` without one). The names themselves are not kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<u32>,
    /// Its distinct matched terms, most used first (ties: first used first), at most
    /// [`MatchedCorpus::keep`] ([`crate::input::public_vocab::Matcher::most_used`]).
    pub terms: Vec<TermId>,
}

/// The matched corpus: private, held in memory only.
#[derive(Debug, Clone)]
pub struct MatchedCorpus {
    pub docs: Vec<MatchedDoc>,
    pub stats: IngestStats,
    pub fingerprint: String,
    /// The legacy key and the per-document hashes (`corpus::CorpusKeys`; memory only).
    pub keys: crate::input::corpus::CorpusKeys,
    /// How many distinct terms were kept per document.
    pub keep: usize,
    /// Documents in which no vocabulary term was found.
    pub docs_without_terms: u64,
    /// The person column, when the corpus has one, and how many persons it names: the privacy
    /// unit is then the person (`crate::input::units`).
    pub persons: Option<Persons>,
}

/// A corpus's person column (private counts: shown to the curator, never released).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Persons {
    pub column: String,
    pub count: usize,
}

/// Streams inputs through the matcher, keeping the `keep` most used distinct terms of each document.
pub struct MatchingSink<'m> {
    /// `None`: only count and fingerprint (no matching).
    matcher: Option<&'m Matcher>,
    keep: usize,
    scratch: MatchScratch,
    ingest: Ingest,
    docs: Vec<MatchedDoc>,
    docs_without_terms: u64,
    /// Person names seen so far → their number (memory only; dropped by `finish`).
    persons: std::collections::HashMap<String, u32>,
    person_column: Option<String>,
}

impl<'m> MatchingSink<'m> {
    pub fn new(matcher: Option<&'m Matcher>, keep: usize, has_labels: bool) -> Self {
        MatchingSink {
            matcher,
            keep,
            scratch: MatchScratch::default(),
            ingest: Ingest::new(has_labels),
            docs: Vec::new(),
            docs_without_terms: 0,
            persons: std::collections::HashMap::new(),
            person_column: None,
        }
    }

    /// Reads one input (one file) into the matched corpus.
    pub fn read<R: Read>(
        &mut self,
        reader: R,
        file: &str,
        format: Format,
        fields: &Fields,
        txt_label: Option<&str>,
    ) -> Result<(), CorpusError> {
        self.check_person_column(file, fields)?;
        let MatchingSink { matcher, keep, scratch, ingest, docs, docs_without_terms, persons, .. } = self;
        corpus::stream(reader, file, format, fields, txt_label, ingest, &mut |doc| {
            let terms = match matcher {
                Some(m) => m.most_used(doc.text, *keep, scratch),
                None => Vec::new(),
            };
            if terms.is_empty() {
                *docs_without_terms += 1;
            }
            let person = doc.person.map(|p| person_number(persons, p));
            docs.push(MatchedDoc { label: doc.label.map(str::to_string), person, terms });
        })
    }

    /// Every input of one load has a person column, or none has: documents without one could
    /// not be counted with their person's others.
    fn check_person_column(&mut self, file: &str, fields: &Fields) -> Result<(), CorpusError> {
        if !self.docs.is_empty() && self.person_column != fields.person {
            return Err(CorpusError::PersonColumnMismatch { file: file.to_string() });
        }
        self.person_column = fields.person.clone();
        Ok(())
    }

    /// Documents read so far (for progress).
    pub fn documents(&self) -> u64 {
        self.ingest.stats.documents
    }

    pub fn finish(self, name: &str) -> Result<MatchedCorpus, CorpusError> {
        let (stats, keys) = self.ingest.finish_keyed(name)?;
        Ok(MatchedCorpus {
            docs: self.docs,
            stats,
            fingerprint: keys.fingerprint.clone(),
            keys,
            keep: self.keep,
            docs_without_terms: self.docs_without_terms,
            persons: self.person_column.map(|column| Persons { column, count: self.persons.len() }),
        })
    }
}

/// The number of person `name` in this load: the next free one when first seen.
fn person_number(persons: &mut std::collections::HashMap<String, u32>, name: &str) -> u32 {
    let next = persons.len() as u32;
    *persons.entry(name.to_string()).or_insert(next)
}

impl MatchedCorpus {
    /// How the documents are grouped into persons, as a digest keyed with the local secret's
    /// sketch key: `None` without a person column, before the keys are keyed, or for a corpus
    /// of units (one per person, `crate::input::units`) rather than the loaded documents. The
    /// same documents under the same column name but grouped otherwise give another digest;
    /// the order of the documents and the persons' names do not count. Kept in the ledger with
    /// a per-person run ([`crate::ledger::Run::persons_digest`]).
    pub fn persons_digest(&self) -> Option<String> {
        use sha2::{Digest, Sha256};
        self.persons.as_ref()?;
        let key = self.keys.sketch_key?;
        if self.keys.doc_hashes.len() != self.docs.len() {
            return None;
        }
        let mut by_person: std::collections::BTreeMap<u32, Vec<[u8; 32]>> = Default::default();
        for (d, h) in self.docs.iter().zip(&self.keys.doc_hashes) {
            by_person.entry(d.person?).or_default().push(*h);
        }
        let mut groups: Vec<Vec<[u8; 32]>> = by_person.into_values().map(|mut g| { g.sort_unstable(); g }).collect();
        groups.sort_unstable();
        let mut hash = Sha256::new();
        hash.update(b"dpkps persons v1\0");
        hash.update(key);
        for g in &groups {
            hash.update((g.len() as u64).to_le_bytes());
            g.iter().for_each(|d| hash.update(d));
        }
        Some(crate::base::hex(&hash.finalize()))
    }

    /// Documents per class of the public class set (private: only for a DP mechanism).
    pub fn class_counts(&self, classes: &ClassSet) -> Vec<u64> {
        let mut counts = vec![0u64; classes.len()];
        self.docs.iter().filter_map(|d| classes.assign(d.label.as_deref())).for_each(|c| counts[c] += 1);
        counts
    }

    /// Distinct terms among the first `len` kept of every document (what must be embedded).
    pub fn distinct_terms(&self, len: usize) -> Vec<TermId> {
        let mut ids: Vec<TermId> = self.docs.iter().flat_map(|d| d.terms.iter().take(len).copied()).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

#[cfg(test)]
impl MatchedCorpus {
    /// A corpus of `docs` for tests: no keys, S = 4, and the person column "patient" when a
    /// document names a person.
    pub(crate) fn for_tests(docs: Vec<MatchedDoc>, fingerprint: &str) -> MatchedCorpus {
        let persons: std::collections::HashSet<u32> = docs.iter().filter_map(|d| d.person).collect();
        MatchedCorpus {
            docs,
            stats: IngestStats::default(),
            fingerprint: fingerprint.into(),
            keys: Default::default(),
            keep: 4,
            docs_without_terms: 0,
            persons: (!persons.is_empty()).then(|| Persons { column: "patient".into(), count: persons.len() }),
        }
    }
}
