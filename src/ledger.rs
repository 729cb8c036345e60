//! The privacy ledger: what each DP stage spent, and the total.
//!
//! Every DP stage returns a [`Spend`]: mechanism, parameters, ε, and the data it touched
//! ([`Scope`]). A [`Run`] is one execution of the pipeline; a [`Ledger`] holds every run on one
//! corpus, keyed by the corpus fingerprint, so that running again on the same corpus adds up
//! instead of starting from zero. [`LedgerBook`] is the file (or IndexedDB record) holding the
//! ledgers of every corpus seen on this machine.
//!
//! Composition (pure ε-DP, add/remove-one-document neighbours):
//! - within one stage of one run, spends on DISJOINT partitions of the corpus (one per class:
//!   each document has exactly one label) compose in parallel: a document is in one partition
//!   only, so the stage costs the maximum over partitions;
//! - spends on the whole corpus, different stages and different runs compose sequentially
//!   (they add up).
//!
//! So a run costs Σ_stages (Σ whole-corpus spends + max_partition Σ spends on that partition),
//! and the ledger total is the sum over runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Which documents a mechanism read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scope {
    /// Every document of the corpus.
    AllDocuments,
    /// Only the documents of one class (disjoint from every other class).
    Partition { label: String },
}

/// One use of a mechanism.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    /// Pipeline stage ("vocabulary", "kde", …).
    pub stage: String,
    pub mechanism: String,
    pub epsilon: f64,
    pub params: serde_json::Value,
    pub scope: Scope,
}

/// One execution of the pipeline on a corpus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Random identifier (data-independent).
    pub id: String,
    /// When it started, as given by the caller (RFC 3339 or any readable form).
    pub started: String,
    pub spends: Vec<Spend>,
}

impl Run {
    pub fn new(id: String, started: String) -> Run {
        Run { id, started, spends: Vec::new() }
    }

    /// ε of this run under the composition rules in the module docs.
    pub fn epsilon(&self) -> f64 {
        self.epsilon_by_stage().values().fold(0.0, |a, b| a + b)
    }

    /// ε of each stage of this run: whole-corpus spends add up; spends on disjoint
    /// partitions (classes) take the maximum over partitions.
    pub fn epsilon_by_stage(&self) -> BTreeMap<&str, f64> {
        let mut stages: BTreeMap<&str, (f64, BTreeMap<&str, f64>)> = BTreeMap::new();
        for s in &self.spends {
            let entry = stages.entry(s.stage.as_str()).or_default();
            match &s.scope {
                Scope::AllDocuments => entry.0 += s.epsilon,
                Scope::Partition { label } => *entry.1.entry(label.as_str()).or_default() += s.epsilon,
            }
        }
        stages
            .into_iter()
            .map(|(stage, (whole, parts))| (stage, whole + parts.values().copied().fold(0.0, f64::max)))
            .collect()
    }
}

/// Every run on one corpus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ledger {
    /// SHA-256 fingerprint of the corpus (see `corpus`); local only, never released.
    pub fingerprint: String,
    pub runs: Vec<Run>,
}

impl Ledger {
    pub fn new(fingerprint: String) -> Ledger {
        Ledger { fingerprint, runs: Vec::new() }
    }

    /// Total ε spent on this corpus so far (sequential composition over runs).
    pub fn total_epsilon(&self) -> f64 {
        self.runs.iter().map(Run::epsilon).fold(0.0, |a, b| a + b)
    }

    /// Totals by stage, summed over runs (for the report).
    pub fn epsilon_by_stage(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for run in &self.runs {
            for (stage, eps) in run.epsilon_by_stage() {
                *out.entry(stage.to_string()).or_insert(0.0) += eps;
            }
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    #[error("the privacy ledger could not be read: {0}")]
    Parse(String),
    #[error("this run would bring the total ε spent on this corpus to {would:.4}, above the budget of {budget:.4} (already spent: {spent:.4})")]
    OverBudget { spent: f64, would: f64, budget: f64 },
}

/// The ledgers of every corpus seen here, keyed by fingerprint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerBook {
    pub version: u32,
    pub ledgers: BTreeMap<String, Ledger>,
}

impl LedgerBook {
    pub const VERSION: u32 = 1;

    pub fn from_json(text: &str) -> Result<LedgerBook, LedgerError> {
        let book: LedgerBook = serde_json::from_str(text).map_err(|e| LedgerError::Parse(e.to_string()))?;
        if book.version != Self::VERSION {
            return Err(LedgerError::Parse(format!("unknown ledger version {}", book.version)));
        }
        Ok(book)
    }

    pub fn to_json(&self) -> String {
        let mut book = self.clone();
        book.version = Self::VERSION;
        serde_json::to_string_pretty(&book).unwrap_or_default()
    }

    /// The ledger of a corpus (empty if it was never used).
    pub fn ledger(&self, fingerprint: &str) -> Ledger {
        self.ledgers.get(fingerprint).cloned().unwrap_or_else(|| Ledger::new(fingerprint.to_string()))
    }

    /// Refuses a planned spend that would take the corpus over `budget`.
    pub fn check_budget(&self, fingerprint: &str, planned: f64, budget: Option<f64>) -> Result<(), LedgerError> {
        let spent = self.ledger(fingerprint).total_epsilon();
        match budget {
            Some(budget) if spent + planned > budget + 1e-12 => {
                Err(LedgerError::OverBudget { spent, would: spent + planned, budget })
            }
            _ => Ok(()),
        }
    }

    /// Adds spends to a run already recorded (a run is recorded after its first DP stage, so
    /// that a crash later cannot lose what was spent). Records a new run if there is none.
    pub fn extend_run(&mut self, fingerprint: &str, run: &Run) {
        let ledger = self
            .ledgers
            .entry(fingerprint.to_string())
            .or_insert_with(|| Ledger::new(fingerprint.to_string()));
        match ledger.runs.iter_mut().find(|r| r.id == run.id) {
            Some(r) => *r = run.clone(),
            None => ledger.runs.push(run.clone()),
        }
    }

    /// Records a finished run.
    pub fn record(&mut self, fingerprint: &str, run: Run) {
        self.ledgers
            .entry(fingerprint.to_string())
            .or_insert_with(|| Ledger::new(fingerprint.to_string()))
            .runs
            .push(run);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spend(stage: &str, eps: f64, scope: Scope) -> Spend {
        Spend { stage: stage.into(), mechanism: "m".into(), epsilon: eps, params: serde_json::Value::Null, scope }
    }

    fn part(l: &str) -> Scope {
        Scope::Partition { label: l.into() }
    }

    #[test]
    fn stages_add_and_disjoint_classes_take_the_max() {
        let mut run = Run::new("r".into(), "t".into());
        run.spends.push(spend("vocabulary", 1.0, Scope::AllDocuments));
        run.spends.push(spend("kde", 2.0, part("a")));
        run.spends.push(spend("kde", 2.0, part("a")));
        run.spends.push(spend("kde", 3.0, part("b")));
        // vocabulary 1 + kde max(a: 4, b: 3) = 5
        assert_eq!(run.epsilon(), 5.0);
    }

    #[test]
    fn reruns_on_the_same_corpus_add_up_and_are_kept_across_saves() {
        let mut book = LedgerBook::default();
        for i in 0..2 {
            let mut run = Run::new(format!("r{i}"), "t".into());
            run.spends.push(spend("vocabulary", 1.5, Scope::AllDocuments));
            book.record("fp", run);
        }
        let book = LedgerBook::from_json(&book.to_json()).unwrap();
        assert_eq!(book.ledger("fp").total_epsilon(), 3.0);
        assert_eq!(book.ledger("other").total_epsilon(), 0.0);
        assert_eq!(book.ledger("fp").epsilon_by_stage()["vocabulary"], 3.0);
        assert!(book.check_budget("fp", 1.0, Some(4.0)).is_ok());
        let err = book.check_budget("fp", 1.5, Some(4.0)).unwrap_err();
        assert!(err.to_string().contains("4.5"), "{err}");
        assert!(LedgerBook::from_json("{").is_err());
        // A run recorded after its first stage and completed later is counted once.
        let mut run = Run::new("r9".into(), "t".into());
        run.spends.push(spend("vocabulary", 1.0, Scope::AllDocuments));
        let mut book = book;
        book.extend_run("fp", &run);
        run.spends.push(spend("kde", 2.0, part("a")));
        book.extend_run("fp", &run);
        assert_eq!(book.ledger("fp").runs.len(), 3);
        assert_eq!(book.ledger("fp").total_epsilon(), 6.0);
    }
}
