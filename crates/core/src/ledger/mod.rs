//! The privacy ledger: what each DP stage spent, and the total.
//!
//! Every DP stage returns a [`Spend`]: mechanism, parameters, ε, and the data it touched
//! ([`Scope`]). A [`Run`] is one execution of the pipeline; a [`Ledger`] holds every run on one
//! corpus, keyed by the corpus fingerprint, so that running again on the same corpus adds up
//! instead of starting from zero. [`LedgerBook`] is the file (or IndexedDB record) holding the
//! ledgers of every corpus seen on this machine.
//!
//! Composition (pure ε-DP, add/remove-one-document neighbours; add/remove one person for a run
//! whose unit is the person, `Run::person_column`, see `crate::input::units`):
//! - within one stage of one run, spends on DISJOINT partitions of the corpus (one per class:
//!   each document has exactly one label) compose in parallel: a document is in one partition
//!   only, so the stage costs the maximum over partitions;
//! - spends on the whole corpus, different stages and different runs compose sequentially
//!   (they add up).
//!
//! So a run costs Σ_stages (Σ whole-corpus spends + max_partition Σ spends on that partition),
//! and the ledger total is the sum over runs.
//!
//! Budget accounts: the curator names the dataset (an [`Account`]); each run is recorded under
//! the corpus key AND the account, and an account's budget caps everything spent under it or on
//! the corpus ([`LedgerBook::spent_for`], which `budget` explains), so a new extract of the same dataset (another
//! key) still draws on the same budget. An account keeps a small keyed sketch per corpus to
//! warn about overlapping corpora (`crate::ledger::overlap`, which argues what that reveals).
//!
//! Never losing a spend: [`LedgerBook::merge`] (import) joins runs by id (the longer record of
//! a run wins; nothing is counted twice); [`LedgerBook::adopt_legacy`] moves a ledger recorded
//! under the older, order-sensitive corpus key to the current one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use crate::ledger::overlap::Sketch;

mod budget;
mod check;
mod keying;
pub mod local_key;
pub mod overlap;
mod stage;
pub use budget::{in_force, BudgetChange, Holder, Refusal};
pub use check::MAX_EPSILON;
pub use stage::SpendStage;

/// The lower of two budgets (where both sides of an import set one).
fn lower(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// Whether `mine` holds every spend of `theirs` (as many times).
fn holds_all(mine: &[Spend], theirs: &[Spend]) -> bool {
    let mut left: Vec<&Spend> = mine.iter().collect();
    theirs.iter().all(|s| match left.iter().position(|m| *m == s) {
        Some(i) => {
            left.swap_remove(i);
            true
        }
        None => false,
    })
}

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
    /// Pipeline stage: a [`SpendStage`]'s name ("vocabulary", "kde", …). Kept as the stored
    /// string so that a record of an unknown stage is refused by the check, in words, rather
    /// than by the parser.
    pub stage: String,
    pub mechanism: String,
    pub epsilon: f64,
    pub params: serde_json::Value,
    pub scope: Scope,
}

impl Spend {
    /// Whether this spend was recorded by `stage`.
    pub fn is(&self, stage: SpendStage) -> bool {
        self.stage == stage.name()
    }
}

/// One execution of the pipeline on a corpus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Random identifier (data-independent).
    pub id: String,
    /// When it started, as given by the caller (RFC 3339 or any readable form).
    pub started: String,
    pub spends: Vec<Spend>,
    /// The budget account (dataset name) it was recorded under, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
    /// The earlier run whose private vocabulary this run reused (its ε_voc is counted there,
    /// once; this run's outputs depend on it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocabulary_from: Option<String>,
    /// The corpus's person column when the run's privacy unit was the person (`crate::input::units`):
    /// its ε is then per person; without it, per document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person_column: Option<String>,
    /// How that column grouped the documents into persons, as a digest keyed with this
    /// machine's local secret (`MatchedCorpus::persons_digest`): the same documents under the
    /// same column name but grouped otherwise are another partition into units, which a DP
    /// vote tied to this run must not read (`crate::run::vote`). None per document, and in
    /// records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persons_digest: Option<String>,
}

impl Run {
    pub fn new(id: String, started: String) -> Run {
        Run { id, started, spends: Vec::new(), account: None, vocabulary_from: None, person_column: None, persons_digest: None }
    }

    /// ε of this run under the composition rules in the module docs.
    pub fn epsilon(&self) -> f64 {
        self.epsilon_by_stage().values().fold(0.0, |a, b| a + b)
    }

    /// Whether this run is on record as having paid for a private vocabulary of ε ≥ `epsilon`
    /// under `account`, with the privacy unit `person_column` (the person column, or `None`:
    /// the document): what a later run that reuses its Ṽ relies on.
    /// Whether this run released the private vocabulary of digest `digest`
    /// (`PrivateVocabulary::released_digest`, recorded in its vocabulary spends): `false` when
    /// it recorded another; `true` also for a run of an older version, which recorded none.
    pub fn released_vocabulary(&self, digest: &str) -> bool {
        let recorded: Vec<&str> = self
            .spends
            .iter()
            .filter(|s| s.stage == SpendStage::Vocabulary.name())
            .filter_map(|s| s.params.get("released_sha256").and_then(|v| v.as_str()))
            .collect();
        recorded.is_empty() || recorded.contains(&digest)
    }

    pub fn paid_for_vocabulary(&self, epsilon: f64, account: Option<&str>, person_column: Option<&str>) -> bool {
        self.account.as_deref() == account
            && self.person_column.as_deref() == person_column
            && self.epsilon_by_stage().get(SpendStage::Vocabulary.name()).is_some_and(|&e| e >= epsilon - 1e-12)
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
    /// Non-DP utility checks run on this corpus (they spend no ε but are tuning on private
    /// data: the report says how many).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub utility_checks: Vec<UtilityCheck>,
    /// The corpus's own budget, for runs without an account (None: none set yet), and its
    /// changes (`budget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budget_changes: Vec<BudgetChange>,
    /// Imported from a ledger keyed with another machine's secret: its corpus cannot be
    /// recognised here, so its runs count against every budget (`keying`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub foreign: bool,
}

/// One non-DP utility check on a corpus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UtilityCheck {
    pub id: String,
    pub when: String,
    /// How many settings (samplers and baselines) it compared.
    pub settings_compared: usize,
}

/// A budget account: one dataset, whatever extract of it is read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Account {
    /// Most ε that may be spent under this account (None: none set yet; a run needs one).
    #[serde(default)]
    pub budget: Option<f64>,
    /// Every change of `budget`, oldest first (`budget`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budget_changes: Vec<BudgetChange>,
    /// The corpora recorded under it, each with its overlap sketch (`crate::ledger::overlap`).
    #[serde(default)]
    pub corpora: Vec<AccountCorpus>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccountCorpus {
    pub fingerprint: String,
    /// Empty: the sketch is keyed with this machine's local secret (`crate::ledger::local_key`), never
    /// stored. Otherwise (ledgers of older versions) the random key it was made with, in hex.
    #[serde(default)]
    pub key: String,
    /// Empty when the ledger was exported without sketches ([`LedgerBook::for_export`]).
    #[serde(default)]
    pub sketch: crate::ledger::overlap::Sketch,
    /// The same over the corpus's distinct person ids (`corpus::person_hash`), when it was read
    /// with a person column: two extracts with new notes of the same patients overlap here
    /// although no document is in both. Absent otherwise (and in ledgers of older versions).
    #[serde(default, skip_serializing_if = "crate::ledger::overlap::Sketch::is_empty")]
    pub persons: crate::ledger::overlap::Sketch,
}

/// What an import added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergeSummary {
    pub runs_added: usize,
    pub runs_extended: usize,
    pub checks_added: usize,
    /// Runs recorded on both sides with spends neither record holds all of: kept with every
    /// spend of both (never less than either side spent).
    #[serde(default)]
    pub conflicts: usize,
    /// Runs added from a ledger keyed on another machine: their corpora cannot be recognised
    /// here, so they count against every budget (`keying`).
    #[serde(default)]
    pub foreign_runs: usize,
}

impl Ledger {
    pub fn new(fingerprint: String) -> Ledger {
        Ledger { fingerprint, runs: Vec::new(), utility_checks: Vec::new(), budget: None, budget_changes: Vec::new(), foreign: false }
    }

    /// Joins `other`'s runs and checks by id. A run in both: the record that holds every spend
    /// of the other (a run's record only grows, stage by stage) is kept; if neither does, the
    /// two disagree (a conflict, counted): every spend of both is kept, so the run never counts
    /// less than either side recorded.
    fn merge(&mut self, other: &Ledger, out: &mut MergeSummary) {
        for run in &other.runs {
            match self.runs.iter_mut().find(|r| r.id == run.id) {
                Some(r) if holds_all(&r.spends, &run.spends) => {}
                Some(r) if holds_all(&run.spends, &r.spends) => {
                    // The spends grow; what the run was (its account, unit, reused Ṽ) is this
                    // ledger's record, never the import's: a differing one is a conflict.
                    if (&r.account, &r.person_column, &r.vocabulary_from) != (&run.account, &run.person_column, &run.vocabulary_from) {
                        out.conflicts += 1;
                    }
                    r.spends = run.spends.clone();
                    out.runs_extended += 1;
                }
                Some(r) => {
                    let extra: Vec<Spend> = run.spends.iter().filter(|s| !r.spends.contains(s)).cloned().collect();
                    r.spends.extend(extra);
                    out.conflicts += 1;
                }
                None => {
                    self.runs.push(run.clone());
                    out.runs_added += 1;
                    out.foreign_runs += usize::from(other.foreign);
                }
            }
        }
        for c in &other.utility_checks {
            if !self.utility_checks.iter().any(|x| x.id == c.id) {
                self.utility_checks.push(c.clone());
                out.checks_added += 1;
            }
        }
        self.budget = lower(self.budget, other.budget);
        budget::merge_changes(&mut self.budget_changes, &other.budget_changes);
        self.foreign |= other.foreign;
    }

    /// Settings compared by every non-DP utility check on this corpus.
    pub fn settings_compared(&self) -> usize {
        self.utility_checks.iter().map(|c| c.settings_compared).sum()
    }

    /// Total ε spent on this corpus so far (sequential composition over runs).
    pub fn total_epsilon(&self) -> f64 {
        self.runs.iter().map(Run::epsilon).fold(0.0, |a, b| a + b)
    }

    /// The runs' ε by privacy unit: (per document: ε, runs; per person: ε, runs). The two do
    /// not add up into one guarantee: a run per person is 2ε-DP per document (removing one
    /// note changes its person's unit), a run per document k·ε-DP per person of k notes.
    pub fn epsilon_by_unit(&self) -> ((f64, usize), (f64, usize)) {
        let (mut doc, mut person) = ((0.0, 0), (0.0, 0));
        for r in &self.runs {
            let t = if r.person_column.is_some() { &mut person } else { &mut doc };
            t.0 += r.epsilon();
            t.1 += 1;
        }
        (doc, person)
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
    /// A record the ledger cannot account for (`check`): the whole book is refused.
    #[error("the privacy ledger was refused, nothing of it was used: {0}")]
    Invalid(String),
    #[error("this run would bring the total ε spent on this corpus (and on any corpus it overlaps) to {would:.4}, above the budget of {budget:.4} (already spent: {spent:.4})")]
    OverBudget { spent: f64, would: f64, budget: f64 },
    #[error("this ledger's corpus keys were made with another local secret (key check {found}): its corpora cannot be recognised with this one, and reading it so would drop their spends from every budget. The CLI keeps the secret in the ledger's key file (LEDGER.key): restore the one made with this ledger")]
    OtherKey { found: String },
    #[error("{holder} has no budget yet: set one (the most ε it may ever spend) before its first run")]
    NoBudget { holder: String },
    #[error("{holder} has a stored budget of {stored}; {given} would raise it. A budget is only lowered unless the raise is confirmed (the page's “confirm the raise” box, the CLI's --raise-budget), and a raise is recorded in the ledger and the report")]
    RaiseNotConfirmed { holder: String, stored: f64, given: f64 },
    #[error("this run would bring the total ε spent under the budget account “{account}” to {would:.4}, above its budget of {budget:.4} (already spent: {spent:.4}); lower ε or raise the budget")]
    AccountOverBudget { account: String, spent: f64, would: f64, budget: f64 },
}

/// The ledgers of every corpus seen here, keyed by fingerprint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LedgerBook {
    pub version: u32,
    pub ledgers: BTreeMap<String, Ledger>,
    /// Budget accounts by name.
    #[serde(default)]
    pub accounts: BTreeMap<String, Account>,
    /// The check tag of the local secret that keyed this book's corpus keys
    /// (`crate::ledger::local_key`; None: not keyed yet, an older version's book).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_check: Option<String>,
    /// The overlap sketches of the tuning files non-DP checks ran on
    /// ([`LedgerBook::record_tuning_check`]): a corpus run on later that shares their documents or
    /// persons counts their checks ([`LedgerBook::tuning_overlapping`]), whichever came first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tuning: Vec<AccountCorpus>,
}

impl LedgerBook {
    /// 3: budgets and their history, corpus keys keyed with the local secret (older versions
    /// must not rewrite it without them). 2: accounts, utility checks, order-insensitive corpus
    /// keys. Versions 1 and 2 are read (and keyed in place: `key_with`).
    pub const VERSION: u32 = 3;

    pub fn from_json(text: &str) -> Result<LedgerBook, LedgerError> {
        let book: LedgerBook = serde_json::from_str(text).map_err(|e| LedgerError::Parse(e.to_string()))?;
        if !(1..=Self::VERSION).contains(&book.version) {
            return Err(LedgerError::Parse(format!("unknown ledger version {}", book.version)));
        }
        book.check()?;
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

    /// Records `corpus` under `account`: its sketch for later overlap checks, keyed with the
    /// local secret (`keys.sketch_key`; only without one, in tests and older callers, with a
    /// random key from `new_key` stored beside it, the account's first). A corpus already
    /// recorded there is not sketched again. (The account's budget is set by
    /// [`Self::set_budget`], under its rules.)
    pub fn note_corpus(&mut self, account: &str, keys: &crate::input::corpus::CorpusKeys, new_key: impl FnOnce() -> [u8; 32]) {
        let acc = self.accounts.entry(account.to_string()).or_default();
        // Recorded already (an entry an export left without its sketch is sketched again, and
        // one recorded without persons, when the corpus is now read with a person column).
        let persons_known = |c: &AccountCorpus| keys.person_hashes.is_empty() || !c.persons.is_empty();
        if acc.corpora.iter().any(|c| c.fingerprint == keys.fingerprint && !c.sketch.values.is_empty() && persons_known(c)) {
            return;
        }
        acc.corpora.retain(|c| c.fingerprint != keys.fingerprint);
        let (key, stored) = match keys.sketch_key {
            Some(k) => (k, String::new()),
            None => {
                let k = acc.corpora.iter().find_map(|c| crate::base::unhex32(&c.key)).unwrap_or_else(new_key);
                (k, crate::base::hex(&k))
            }
        };
        acc.corpora.push(AccountCorpus {
            fingerprint: keys.fingerprint.clone(),
            key: stored,
            sketch: crate::ledger::overlap::Sketch::of(&key, &keys.doc_hashes),
            persons: crate::ledger::overlap::Sketch::of(&key, &keys.person_hashes),
        });
    }

    /// The book as an export holds it: every run, ε, budget and account, and the accounts'
    /// corpus keys; the overlap sketches (and any older sketch key) only with `sketches`, since
    /// whoever holds them with the key can test whether a document was in a corpus.
    pub fn for_export(&self, sketches: bool) -> LedgerBook {
        let mut book = self.clone();
        if !sketches {
            for c in book.accounts.values_mut().flat_map(|a| a.corpora.iter_mut()) {
                c.key.clear();
                c.sketch = crate::ledger::overlap::Sketch::default();
                c.persons = crate::ledger::overlap::Sketch::default();
            }
            for t in &mut book.tuning {
                t.sketch = Sketch::default();
                t.persons = Sketch::default();
            }
        }
        book
    }

    /// Moves a ledger recorded under `keys`' oldest, order-sensitive key (keyed with the book:
    /// `CorpusKeys::keyed`) to its current key. Returns whether there was one.
    pub fn adopt_older(&mut self, keys: &crate::input::corpus::CorpusKeys) -> bool {
        self.adopt_legacy(&keys.legacy, &keys.fingerprint)
    }

    /// The estimated overlap of `keys`' corpus with each OTHER corpus of the account, largest
    /// first (`crate::ledger::overlap`).
    pub fn overlaps(&self, account: &str, keys: &crate::input::corpus::CorpusKeys) -> Vec<(String, f64)> {
        self.overlaps_cached(account, keys, &mut Vec::new())
    }

    /// [`Self::overlaps`], with this corpus's sketch under each key computed once in `sketches`
    /// (one pass over its documents per key, however many accounts are compared).
    /// The corpora of `account` that overlap the corpus with `keys`: the larger of the
    /// documents' overlap and, where both were read with a person column, the persons'.
    /// `sketches` caches this corpus's sketches (documents, persons) per key.
    pub(super) fn overlaps_cached(&self, account: &str, keys: &crate::input::corpus::CorpusKeys, sketches: &mut Vec<([u8; 32], (Sketch, Sketch))>) -> Vec<(String, f64)> {
        let Some(acc) = self.accounts.get(account) else { return Vec::new() };
        let mut out: Vec<(String, f64)> = acc
            .corpora
            .iter()
            .filter(|c| c.fingerprint != keys.fingerprint && !c.sketch.values.is_empty())
            .filter_map(|c| {
                // The local secret's key, or an older sketch's own.
                let key = if c.key.is_empty() { keys.sketch_key? } else { crate::base::unhex32(&c.key)? };
                let (docs, persons) = match sketches.iter().find(|(k, _)| *k == key) {
                    Some((_, s)) => s.clone(),
                    None => {
                        let s = (Sketch::of(&key, &keys.doc_hashes), Sketch::of(&key, &keys.person_hashes));
                        sketches.push((key, s.clone()));
                        s
                    }
                };
                Some((c.fingerprint.clone(), Sketch::larger_overlap((&docs, &persons), (&c.sketch, &c.persons))))
            })
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1));
        out
    }

    /// Moves the ledger recorded under a corpus's legacy key (older versions' order-sensitive
    /// hash) to its current key, joining runs by id. Returns whether there was one.
    pub fn adopt_legacy(&mut self, legacy: &str, fingerprint: &str) -> bool {
        if legacy == fingerprint || legacy.is_empty() {
            return false;
        }
        let Some(old) = self.ledgers.remove(legacy) else { return false };
        let mut sink = MergeSummary::default();
        self.ledgers
            .entry(fingerprint.to_string())
            .or_insert_with(|| Ledger::new(fingerprint.to_string()))
            .merge(&Ledger { fingerprint: fingerprint.to_string(), ..old }, &mut sink);
        // The accounts' lists name it by the new key too (their spends keep counting).
        for c in self.accounts.values_mut().flat_map(|a| a.corpora.iter_mut()).filter(|c| c.fingerprint == legacy) {
            c.fingerprint = fingerprint.to_string();
        }
        true
    }

    /// Joins an imported book into this one: runs and checks by id (never losing a spend,
    /// never counting one twice), accounts' sketches by corpus; where both set a budget, the
    /// lower one is kept.
    pub fn merge(&mut self, other: &LedgerBook) -> MergeSummary {
        let mut out = MergeSummary::default();
        for (fp, l) in &other.ledgers {
            self.ledgers.entry(fp.clone()).or_insert_with(|| Ledger::new(fp.clone())).merge(l, &mut out);
        }
        for (name, a) in &other.accounts {
            let mine = self.accounts.entry(name.clone()).or_default();
            mine.budget = lower(mine.budget, a.budget);
            budget::merge_changes(&mut mine.budget_changes, &a.budget_changes);
            for c in &a.corpora {
                match mine.corpora.iter_mut().find(|m| m.fingerprint == c.fingerprint && (m.key == c.key || m.sketch.values.is_empty())) {
                    // A sketch an export left out is taken from the other side.
                    Some(m) if m.sketch.values.is_empty() && !c.sketch.values.is_empty() => *m = c.clone(),
                    Some(_) => {}
                    None => mine.corpora.push(c.clone()),
                }
            }
        }
        for t in &other.tuning {
            match self.tuning.iter_mut().find(|m| m.fingerprint == t.fingerprint) {
                Some(m) if m.sketch.is_empty() && !t.sketch.is_empty() => *m = t.clone(),
                Some(_) => {}
                None => self.tuning.push(t.clone()),
            }
        }
        out
    }

    /// The non-DP checks that touched the corpus `fingerprint`: those recorded on it, then
    /// (the count returned beside) those recorded only on a corpus in `overlapping`, each once.
    pub fn checks_touching(&self, fingerprint: &str, overlapping: &[String]) -> (Vec<UtilityCheck>, usize) {
        let mut checks = self.ledgers.get(fingerprint).map(|l| l.utility_checks.clone()).unwrap_or_default();
        let own = checks.len();
        for c in overlapping.iter().filter(|fp| fp.as_str() != fingerprint).filter_map(|fp| self.ledgers.get(fp)).flat_map(|l| &l.utility_checks) {
            if !checks.iter().any(|k| k.id == c.id) {
                checks.push(c.clone());
            }
        }
        let from_overlapping = checks.len() - own;
        (checks, from_overlapping)
    }

    /// Records a non-DP check run on a tuning file on every corpus the file overlaps
    /// ([`overlap::WARN_OVERLAP`] or more, by documents or, with person columns, by persons):
    /// every sketched corpus of the ledger, and `loaded` (the corpus at hand, compared with the
    /// file directly, whether or not a run recorded it yet). Tuning on data that shares patients
    /// with a corpus is tuning on that corpus. Returns the corpus keys it was recorded on.
    pub fn record_tuning_check(&mut self, tuning: &crate::input::corpus::CorpusKeys, loaded: Option<&crate::input::corpus::CorpusKeys>, check: &UtilityCheck) -> Vec<String> {
        let mut on: Vec<String> = self.overlapping(tuning).into_iter().map(|(_, fp, _)| fp).collect();
        if let Some(loaded) = loaded {
            let overlaps = tuning.fingerprint == loaded.fingerprint
                || tuning.sketch_key.is_some_and(|k| {
                    let sketches = |c: &crate::input::corpus::CorpusKeys| (Sketch::of(&k, &c.doc_hashes), Sketch::of(&k, &c.person_hashes));
                    let (t, l) = (sketches(tuning), sketches(loaded));
                    Sketch::larger_overlap((&t.0, &t.1), (&l.0, &l.1)) >= overlap::WARN_OVERLAP
                });
            if overlaps && !on.contains(&loaded.fingerprint) {
                on.push(loaded.fingerprint.clone());
            }
        }
        for fp in &on {
            self.record_check(fp, check.clone());
        }
        // The file itself, sketched, so that a corpus run on LATER finds the check too.
        self.record_check(&tuning.fingerprint, check.clone());
        if let Some(k) = tuning.sketch_key {
            self.tuning.retain(|t| t.fingerprint != tuning.fingerprint);
            self.tuning.push(AccountCorpus {
                fingerprint: tuning.fingerprint.clone(),
                key: String::new(),
                sketch: Sketch::of(&k, &tuning.doc_hashes),
                persons: Sketch::of(&k, &tuning.person_hashes),
            });
        }
        on
    }

    /// The tuning files ([`LedgerBook::tuning`]) that share [`overlap::WARN_OVERLAP`] or more of
    /// their documents or persons with the corpus of `keys`: their checks are checks on it.
    pub fn tuning_overlapping(&self, keys: &crate::input::corpus::CorpusKeys) -> Vec<String> {
        let Some(k) = keys.sketch_key else { return Vec::new() };
        let (docs, persons) = (Sketch::of(&k, &keys.doc_hashes), Sketch::of(&k, &keys.person_hashes));
        self.tuning
            .iter()
            .filter(|t| t.fingerprint != keys.fingerprint && !t.sketch.is_empty())
            .filter(|t| Sketch::larger_overlap((&docs, &persons), (&t.sketch, &t.persons)) >= overlap::WARN_OVERLAP)
            .map(|t| t.fingerprint.clone())
            .collect()
    }

    pub fn record_check(&mut self, fingerprint: &str, check: UtilityCheck) {
        let l = self.ledgers.entry(fingerprint.to_string()).or_insert_with(|| Ledger::new(fingerprint.to_string()));
        if !l.utility_checks.iter().any(|c| c.id == check.id) {
            l.utility_checks.push(check);
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
mod tests;
