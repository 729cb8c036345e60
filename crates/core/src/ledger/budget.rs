//! Budgets that enforce: a budget before the first run, a stored budget
//! that only goes down unless a raise is confirmed (and then recorded), and the spends on
//! every overlapping corpus counted against it.
//!
//! Why: a budget that any run may replace caps nothing. The anchors take the budget up front
//! (Tumult's `Session`, OpenDP's `Context`): here the first run of a holder (a named budget
//! account, or, for a run without one, the corpus itself) must bring one, every later run is
//! held to the stored one, a lower one replaces it, and a higher one is refused unless the
//! curator confirms the raise (`--raise-budget`, the page's confirmation box). Every change is
//! kept with its time and run ([`BudgetChange`]), and the privacy report lists them.
//!
//! What "spent" means for the check ([`LedgerBook::spent_for`]): every run under the account,
//! on any corpus recorded under it, on this corpus, and on any corpus of ANY account whose
//! overlap sketch puts it at [`crate::ledger::overlap::WARN_OVERLAP`] or more of this one. The last is
//! conservative: the people in the overlap carry both corpora's ε, so the budget counts it.
//!
//! None of this is a mechanism: budgets and sketches are the curator's records, never released.

use serde::{Deserialize, Serialize};

use super::{LedgerBook, LedgerError};

/// One change of a stored budget, kept for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetChange {
    /// When the run that made it started (the caller's clock).
    pub when: String,
    /// The run that made it (the change is recorded with that run's first spend).
    pub run: String,
    /// The budget before (None: the first one).
    pub old: Option<f64>,
    pub new: f64,
}

impl BudgetChange {
    /// "set to 5", "lowered from 5 to 3", "raised from 3 to 8 (confirmed)", with when.
    pub fn describe(&self) -> String {
        let what = match self.old {
            None => format!("set to {}", self.new),
            Some(o) if self.new < o => format!("lowered from {o} to {}", self.new),
            Some(o) => format!("raised from {o} to {} (confirmed by the curator)", self.new),
        };
        format!("{what} at {} (run {})", self.when, self.run)
    }
}

/// Whose budget a run is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder<'a> {
    /// A named budget account (the dataset).
    Account(&'a str),
    /// The corpus itself (its key), for a run without an account.
    Corpus(&'a str),
}

impl Holder<'_> {
    fn describe(&self) -> String {
        match self {
            Holder::Account(a) => format!("the budget account “{a}”"),
            Holder::Corpus(_) => "this corpus".into(),
        }
    }
}

/// Why [`in_force`] refuses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Refusal {
    NoBudget,
    RaiseNotConfirmed { stored: f64, given: f64 },
}

/// The budget a run is held to, from the `stored` one and the run's `given` one: `given`, or
/// else the stored one. Refused when there is neither (a budget comes before the first run),
/// and when `given` is above the stored one without `raise` (the curator's confirmation). The
/// one rule: the ledger applies it ([`LedgerBook::budget_in_force`]), the page's Run button too.
pub fn in_force(stored: Option<f64>, given: Option<f64>, raise: bool) -> Result<f64, Refusal> {
    match (stored, given) {
        (None, None) => Err(Refusal::NoBudget),
        (Some(s), None) => Ok(s),
        (None, Some(g)) => Ok(g),
        (Some(s), Some(g)) if g <= s || raise => Ok(g),
        (Some(stored), Some(given)) => Err(Refusal::RaiseNotConfirmed { stored, given }),
    }
}

/// Where a holder's budget lives in the book.
fn slot<'b>(book: &'b LedgerBook, holder: Holder<'_>) -> (Option<f64>, &'b [BudgetChange]) {
    match holder {
        Holder::Account(a) => book.accounts.get(a).map_or((None, &[][..]), |x| (x.budget, &x.budget_changes[..])),
        Holder::Corpus(fp) => book.ledgers.get(fp).map_or((None, &[][..]), |l| (l.budget, &l.budget_changes[..])),
    }
}

impl LedgerBook {
    /// The budget stored for `holder`.
    pub fn stored_budget(&self, holder: Holder<'_>) -> Option<f64> {
        slot(self, holder).0
    }

    /// Every recorded change of `holder`'s budget, oldest first.
    pub fn budget_changes(&self, holder: Holder<'_>) -> &[BudgetChange] {
        slot(self, holder).1
    }

    /// [`in_force`] for `holder`'s stored budget, refused in the ledger's words.
    pub fn budget_in_force(&self, holder: Holder<'_>, given: Option<f64>, raise: bool) -> Result<f64, LedgerError> {
        in_force(self.stored_budget(holder), given, raise).map_err(|r| match r {
            Refusal::NoBudget => LedgerError::NoBudget { holder: holder.describe() },
            Refusal::RaiseNotConfirmed { stored, given } => LedgerError::RaiseNotConfirmed { holder: holder.describe(), stored, given },
        })
    }

    /// Stores `budget` for `holder`, recording the change (nothing when it is the stored one).
    /// Call inside the transaction that records the run's spend, after [`Self::budget_in_force`].
    pub fn set_budget(&mut self, holder: Holder<'_>, budget: f64, when: &str, run: &str) {
        let (stored, changes) = match holder {
            Holder::Account(a) => {
                let acc = self.accounts.entry(a.to_string()).or_default();
                (&mut acc.budget, &mut acc.budget_changes)
            }
            Holder::Corpus(fp) => {
                let l = self.ledgers.entry(fp.to_string()).or_insert_with(|| super::Ledger::new(fp.to_string()));
                (&mut l.budget, &mut l.budget_changes)
            }
        };
        if *stored == Some(budget) {
            return;
        }
        changes.push(BudgetChange { when: when.to_string(), run: run.to_string(), old: *stored, new: budget });
        *stored = Some(budget);
    }

    /// The corpora, of any account, whose sketch puts them at WARN_OVERLAP or more of the corpus
    /// with `keys` (itself left out): (account, corpus key, overlap), largest first.
    pub fn overlapping(&self, keys: &crate::input::corpus::CorpusKeys) -> Vec<(String, String, f64)> {
        let mut sketches = Vec::new();
        let mut out: Vec<(String, String, f64)> = Vec::new();
        for a in self.accounts.keys() {
            let found = self.overlaps_cached(a, keys, &mut sketches);
            out.extend(found.into_iter().filter(|(_, o)| *o >= crate::ledger::overlap::WARN_OVERLAP).map(|(fp, o)| (a.clone(), fp, o)));
        }
        // One line per corpus (the largest estimate), largest first.
        out.sort_by(|a, b| a.1.cmp(&b.1).then(b.2.total_cmp(&a.2)));
        out.dedup_by(|a, b| a.1 == b.1);
        out.sort_by(|a, b| b.2.total_cmp(&a.2));
        out
    }

    /// The corpus keys some account holds an overlap sketch of.
    fn sketched_corpora(&self) -> std::collections::BTreeSet<&str> {
        self.accounts.values().flat_map(|a| a.corpora.iter()).filter(|c| !c.sketch.is_empty()).map(|c| c.fingerprint.as_str()).collect()
    }

    /// ε that counts against `holder`'s budget for a run on the corpus `fingerprint` (module
    /// docs): each run counted once. A run an older version recorded without an account, on a
    /// corpus no account has sketched, counts against every budget: whether it overlaps this
    /// corpus cannot be told (a monthly extract run without an account would otherwise start a
    /// fresh budget); reading that corpus again under an account sketches it and ends this.
    pub fn spent_for(&self, holder: Holder<'_>, fingerprint: &str, overlapping: &[String]) -> f64 {
        let (account, corpora): (Option<&str>, Vec<&str>) = match holder {
            Holder::Account(a) => (Some(a), self.accounts.get(a).map(|x| x.corpora.iter().map(|c| c.fingerprint.as_str()).collect()).unwrap_or_default()),
            Holder::Corpus(_) => (None, Vec::new()),
        };
        let sketched = self.sketched_corpora();
        self.ledgers
            .values()
            .flat_map(|l| l.runs.iter().map(move |r| (l, r)))
            .filter(|(l, r)| {
                let fp = l.fingerprint.as_str();
                fp == fingerprint
                    || l.foreign
                    || corpora.contains(&fp)
                    || overlapping.iter().any(|o| o == fp)
                    || (account.is_some() && r.account.as_deref() == account)
                    || (r.account.is_none() && !sketched.contains(fp))
            })
            .map(|(_, r)| r.epsilon())
            .fold(0.0, |a, b| a + b)
    }

    /// Every OTHER budget that covers the corpus `fingerprint`: its own stored budget (when the
    /// run is under an account), and the stored budget of every account that recorded it or a
    /// corpus in `overlapping`. A run must fit in each, so a new account name, or none, is no
    /// way around a budget already set on these documents.
    pub fn covering_budgets<'a>(&'a self, holder: Holder<'_>, fingerprint: &'a str, overlapping: &'a [String]) -> Vec<(Holder<'a>, f64)> {
        let mut out = Vec::new();
        if !matches!(holder, Holder::Corpus(_)) {
            if let Some(b) = self.stored_budget(Holder::Corpus(fingerprint)) {
                out.push((Holder::Corpus(fingerprint), b));
            }
        }
        for (name, acc) in &self.accounts {
            let covers = acc.corpora.iter().any(|c| c.fingerprint == fingerprint || overlapping.contains(&c.fingerprint));
            if let (true, Some(b)) = (covers && holder != Holder::Account(name), acc.budget) {
                out.push((Holder::Account(name), b));
            }
        }
        // The stored budget of every corpus whose overlap cannot be told (run by an older
        // version without an account, so never sketched; or recorded on another machine): its
        // runs count against this run's budget (`spent_for`), and so must its own limit, or a
        // new extract of the same records would start a fresh budget beside it.
        let sketched = self.sketched_corpora();
        for (fp, l) in &self.ledgers {
            let unknown = l.foreign || (!sketched.contains(fp.as_str()) && l.runs.iter().any(|r| r.account.is_none()));
            if let (true, Some(b)) = (fp != fingerprint && unknown && !l.runs.is_empty(), l.budget) {
                out.push((Holder::Corpus(fp), b));
            }
        }
        out
    }

    /// Refuses a run that would spend `planned` on top of [`Self::spent_for`] beyond `budget`.
    pub fn check_spend(&self, holder: Holder<'_>, fingerprint: &str, overlapping: &[String], planned: f64, budget: f64) -> Result<(), LedgerError> {
        let spent = self.spent_for(holder, fingerprint, overlapping);
        if spent + planned <= budget + 1e-12 {
            return Ok(());
        }
        Err(match holder {
            Holder::Account(a) => LedgerError::AccountOverBudget { account: a.to_string(), spent, would: spent + planned, budget },
            Holder::Corpus(_) => LedgerError::OverBudget { spent, would: spent + planned, budget },
        })
    }
}

/// Joins two histories of one holder: every change of both, once, in time order.
pub(super) fn merge_changes(mine: &mut Vec<BudgetChange>, theirs: &[BudgetChange]) {
    for c in theirs {
        if !mine.contains(c) {
            mine.push(c.clone());
        }
    }
    mine.sort_by(|a, b| a.when.cmp(&b.when));
}
