//! The run plan: the curator's settings turned into validated stage parameters, from public
//! inputs only (the settings, the public list's size, whether the corpus has a label column),
//! before anything private is read or any ε spent. One plan for the CLI and the page: the
//! planned ε, the budget rule and which terms need vectors are stated here once.

use crate::input::classes::ClassSet;
use crate::dp::vocabulary::VocabParams;
use crate::dp::summary::{SummaryDoc, SummaryParams};
use crate::ledger::{Holder, LedgerBook, LedgerError};
use crate::input::public_vocab::TermId;

use super::{RunError, RunSettings};

/// Validated settings and what follows from them.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlan {
    pub settings: RunSettings,
    /// The public class set (declared, never read from the data).
    pub classes: ClassSet,
    /// The budget account the run is recorded under (trimmed; `None` if blank).
    pub account: Option<String>,
    /// N as the release keeps it: the settings' N, or the public list's size where that is
    /// smaller (`VocabParams::kept`). Public.
    pub top_n_kept: usize,
}

impl RunPlan {
    /// Checks every setting (the first problem is refused, in the field's words), the class
    /// set, and that the release will fit (`SummaryParams::check_release_size`: N candidates for
    /// every declared class). `public_terms`: the public list's size; `labelled`: whether the
    /// corpus is read with a label column.
    pub fn new(settings: RunSettings, labelled: bool, public_terms: usize) -> Result<RunPlan, RunError> {
        if let Some(p) = settings.check().into_iter().next() {
            return Err(RunError::Settings(p.message));
        }
        // The list's size is public: with N at least it, ε_voc is not planned (`RunSettings::whole_list`).
        let settings = RunSettings { public_terms: Some(public_terms), ..settings };
        let classes = settings.class_set(labelled).map_err(|e| RunError::Settings(e.message))?;
        let top_n_kept = settings.vocab_params().kept(public_terms);
        settings.summary_params().check_release_size(top_n_kept, classes.len())?;
        let account = settings.account_name();
        Ok(RunPlan { settings, classes, account, top_n_kept })
    }

    /// The plan a DP vote (`super::vote`) is held to: the class set (declared, public), the
    /// account and the budget. A vote reads no other setting (its own parameters are
    /// `VoteSettings`, checked there), so the others stay as given and unchecked, and no public
    /// list is involved (`top_n_kept` is the settings' N, read by nothing in a vote). A budget
    /// given with it is held to the run's rule (`RunSettings::budget_error`), since it may be
    /// stored as the account's budget for every later run.
    pub fn for_vote(settings: RunSettings, labelled: bool) -> Result<RunPlan, RunError> {
        let classes = settings.class_set(labelled).map_err(|e| RunError::Settings(e.message))?;
        if let Some(e) = settings.budget_error() {
            return Err(RunError::Settings(e.message));
        }
        let account = settings.account_name();
        Ok(RunPlan { top_n_kept: settings.top_n, settings, classes, account })
    }

    pub fn vocab_params(&self) -> VocabParams {
        self.settings.vocab_params()
    }

    pub fn summary_params(&self) -> SummaryParams {
        self.settings.summary_params()
    }

    /// Terms to keep per document while matching: enough for S and for what the sampler reads.
    pub fn keep(&self) -> usize {
        self.settings.keep()
    }

    /// ε the run records: everything, less ε_voc when its Ṽ was released (and paid for) by an
    /// earlier run.
    pub fn planned_epsilon(&self, draws_vocabulary: bool) -> f64 {
        self.settings.planned_epsilon(!draws_vocabulary)
    }

    /// Whose budget the run is held to: its account's, or without one the corpus's.
    pub fn holder<'a>(&'a self, fingerprint: &'a str) -> Holder<'a> {
        match &self.account {
            Some(a) => Holder::Account(a),
            None => Holder::Corpus(fingerprint),
        }
    }

    /// The budget the run is held to (`ledger::budget`: the settings' or the stored one; none,
    /// or an unconfirmed raise, refused), after refusing the run when what is recorded in
    /// `book` (this run's own spends so far left out, since `planned` counts them) plus
    /// `planned` would exceed it. What counts: the account's runs (every corpus recorded under
    /// it) or the corpus's, and every run on an `overlapping` corpus. Checked before anything
    /// is computed and again inside every transaction that records a spend, so two runs at
    /// once (two tabs, two processes) cannot together pass the cap.
    pub fn check_budget(&self, book: &LedgerBook, fingerprint: &str, overlapping: &[String], run_id: &str, planned: f64) -> Result<f64, LedgerError> {
        let holder = self.holder(fingerprint);
        let budget = book.budget_in_force(holder, self.settings.budget, self.settings.raise_budget)?;
        let recorded_here = book.ledger(fingerprint).runs.iter().find(|r| r.id == run_id).map_or(0.0, |r| r.epsilon());
        book.check_spend(holder, fingerprint, overlapping, planned - recorded_here, budget)?;
        // And every other budget already set on these documents (`LedgerBook::covering_budgets`).
        for (other, b) in book.covering_budgets(holder, fingerprint, overlapping) {
            book.check_spend(other, fingerprint, overlapping, planned - recorded_here, b)?;
        }
        Ok(budget)
    }

    /// The terms that must have vectors: what the summary mechanism reads of the documents it
    /// sees (`docs`, the class set's documents only) and, if sampling reads them, Ṽ's terms
    /// (`released`). Sorted, distinct.
    pub fn vector_ids(&self, docs: &[SummaryDoc<'_>], released: &[TermId]) -> Vec<TermId> {
        let needs = self.summary_params().needs();
        let mut ids: Vec<TermId> = if needs.document_term_vectors {
            docs.iter().flat_map(|d| d.terms.iter().copied()).collect()
        } else {
            Vec::new()
        };
        // Ṽ's vectors when sampling reads them (the DP-KDE samplers; the histogram ones to smooth).
        if needs.candidate_vectors {
            ids.extend(released);
        }
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dp::summary::KeyphraseSampler;
    use crate::eval::dp_check::CheckParams;

    #[test]
    fn a_short_list_is_kept_whole_and_the_release_size_is_judged_at_that_n() {
        // The default N (50,000) on a 100-term list: the release has 100 candidates, so even the
        // Markov sampler's (N+1)·N a class fits, for a run and for the check's arms alike.
        let markov = RunSettings { sampler: KeyphraseSampler::Markov, ..RunSettings::default() };
        let plan = RunPlan::new(markov.clone(), false, 100).unwrap();
        assert_eq!(plan.top_n_kept, 100);
        let arms = CheckParams::every_sampler(&plan.settings, plan.classes.len(), plan.top_n_kept).samplers;
        assert!(arms.contains(&KeyphraseSampler::Markov), "{arms:?}");
        // On a list longer than N, N is kept as set, and Markov's release is refused.
        assert!(RunPlan::new(markov, false, 60_000).is_err());
        let plan = RunPlan::new(RunSettings::default(), false, 60_000).unwrap();
        assert_eq!(plan.top_n_kept, RunSettings::DEFAULT_TOP_N);
        let arms = CheckParams::every_sampler(&plan.settings, plan.classes.len(), plan.top_n_kept).samplers;
        assert!(!arms.contains(&KeyphraseSampler::Markov) && arms.contains(&KeyphraseSampler::Histogram), "{arms:?}");
    }
}
