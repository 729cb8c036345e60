//! The DP utility check on the loaded corpus (`Request::DpCheck`, `dpkps_core::run::check`): what it
//! will cost, the action, its result, and "Use" of the sampler it chose. Its figures are DP
//! outputs; the check is held to the account's budget and recorded in the ledger like a run.

use leptos::prelude::*;

use dpkps_core::eval::dp_check::{CheckParams, CheckResult};
use dpkps_core::protocol::{CorpusSummary, FieldError, Request, RunSettings, Stage};
use dpkps_core::run::RunPlan;
use crate::engine;

use super::app::{AppState, Job, ShownCheck, StageState};
use super::ledger::LedgerState;

impl AppState {
    /// ε the DP check records with `s` (every sampler whose release fits: ε_voc + samplers ×
    /// ε_kde); None when the settings cannot be planned.
    pub fn check_epsilon(&self, s: &RunSettings) -> Option<f64> {
        let summary = self.summary.get()?;
        let plan = RunPlan::new(s.clone(), self.settings.labelled.get(), summary.vocabulary_terms).ok()?;
        Some(CheckParams::every_sampler(&plan.settings, plan.classes.len(), plan.top_n_kept).epsilon(&plan.settings))
    }

    /// The settings the check is sent with (account and budget, as the Run button has them),
    /// refused like a run over the budget, for the check's own ε; and two classes observed at
    /// least (it compares classifiers).
    pub fn checkable(&self, ledger: LedgerState, parsed: Result<RunSettings, Vec<FieldError>>) -> Result<RunSettings, Vec<FieldError>> {
        let s = ledger.with_account_for(parsed, |s| self.check_epsilon(s).unwrap_or(f64::INFINITY))?;
        if self.summary.get().is_none_or(|s| s.classes.len() < 2) {
            return Err(vec![FieldError { field: "classes", message: "the utility check needs a label column with at least two classes".into() }]);
        }
        Ok(s)
    }

    /// The line by the check's button: its ε, and why it cannot run (the first reason).
    pub fn check_cost(&self, parsed: &Result<RunSettings, Vec<FieldError>>, checkable: &Result<RunSettings, Vec<FieldError>>) -> String {
        let epsilon = parsed.as_ref().ok().and_then(|s| self.check_epsilon(s));
        let refused = checkable.as_ref().err().and_then(|e| e.first()).map(|e| e.message.as_str());
        crate::text::dp_check_cost(epsilon, refused)
    }

    /// Starts the DP check (the sampler in `settings` is not used: every sampler is an arm).
    pub fn dp_check(&self, settings: RunSettings) {
        self.dp_check.set(None);
        self.error.set(None);
        self.job.set(Some(Job::Evaluate));
        self.stages.set([Stage::Model, Stage::Embed, Stage::Evaluate].iter().map(|s| (*s, StageState::Waiting)).collect());
        engine::send(&Request::DpCheck { settings }, &[]);
    }

    /// The worker's answer: shown, and the corpus's ledger figures moved on (the check is a
    /// run of the ledger).
    pub(super) fn dp_checked(&self, id: String, result: CheckResult) {
        if let Some(s) = self.summary.get_untracked() {
            let spent = s.spent_before + result.epsilon;
            self.summary.set(Some(CorpusSummary { spent_before: spent, earlier_runs: s.earlier_runs + 1, ..s }));
        }
        // The check reports no end of its embedding stage: what did not end is not shown as
        // still working.
        self.stages.update(|v| v.retain(|(_, st)| matches!(st, StageState::Done { .. })));
        self.dp_check.set(Some(ShownCheck { id, result }));
        self.job.set(None);
    }

    /// "Use …": the sampler the last check chose, named with the check for the next run.
    pub fn use_chosen(&self) {
        if let Some(c) = self.dp_check.get_untracked() {
            if let Some(sampler) = c.chosen() {
                self.settings.use_chosen(sampler, &c.id);
            }
        }
    }
}
