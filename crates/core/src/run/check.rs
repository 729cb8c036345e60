//! The DP utility check as a run: planned, held to the budget, recorded in the ledger before its
//! result is shown (`crate::eval::dp_check` computes it; `crate::dp::selection` is the
//! mechanism and its privacy map). The CLI (`dpkps check`) and the page's worker drive it
//! through the same [`Host`] as a run.
//! A later run that names it is checked by [`super::chosen`].

use super::stages::Recorder;
use super::{Host, RunError, RunPlan, RunSettings, Stage};
use crate::dp::SecureRng;
use crate::dp::summary::{KeyphraseSampler, SummaryParams};
use crate::eval::dp_check::{ArmSettings, CheckParams, CheckResult, DpCheck};
use crate::eval::{EvalParams, Task};
use crate::ledger::Run;
use crate::input::matched::MatchedCorpus;
use crate::input::public_vocab::{PublicVocabulary, TermId};

/// A finished check: its result (DP) and its ledger entry.
pub struct CheckOutput {
    pub result: CheckResult,
    pub run: Run,
}

/// Runs the DP utility check on `corpus` (its units: `crate::input::units`) and records its ε; the
/// result is returned only once recorded. `plan`: the run settings the arms share (their sampler
/// is ignored), the account and budget.
pub async fn check<H: Host>(
    plan: &RunPlan,
    corpus: &MatchedCorpus,
    vocab: &PublicVocabulary,
    params: CheckParams,
    host: &mut H,
    rng: &mut SecureRng,
) -> Result<CheckOutput, H::Error> {
    let units = crate::input::units::units(corpus, &plan.classes);
    // Of the loaded documents: the units' corpus has one document per person.
    let persons_digest = corpus.persons_digest();
    let corpus: &MatchedCorpus = &units;
    let planned = params.epsilon(&plan.settings);
    // Refused from public inputs before anything is recorded: such a refusal costs nothing.
    if let Err(e) = DpCheck::check_inputs(corpus.keep, &plan.classes, vocab, &plan.settings, &params) {
        return Err(host.fail(None, RunError::Refused(e.to_string())));
    }
    let mut rec = Recorder::start(plan, corpus, planned, host, rng).await?;
    rec.run.persons_digest = persons_digest;
    // Paid for before anything is drawn: Ṽ is drawn, its vectors cached and counted in the
    // progress before the scores exist. Replaced in place by the result's entry (same ε).
    let (train, select) = params.epsilons(&plan.settings);
    rec.run.spends.push(crate::dp::selection::started_spend(train, select, params.holdout, &params.names()));
    rec.commit(plan, corpus, Stage::Evaluate, host).await?;
    host.stage_started(Stage::Evaluate);
    let fail = |host: &H, e: crate::eval::EvalError| host.fail(Some(Stage::Evaluate), RunError::Refused(e.to_string()));
    let prepared = match DpCheck::prepare(corpus, &plan.classes, vocab, &plan.settings, params, rng) {
        Ok(p) => p,
        Err(e) => return Err(fail(host, e)),
    };
    let ids: Vec<TermId> = prepared.terms_to_embed();
    let released = prepared.released().to_vec();
    let vectors = host.vectors(vocab, &ids, &released).await?;
    host.checkpoint().await?;
    let (result, spend) = match prepared.run(&vectors.emb, rng, &mut |_, _, _| {}) {
        Ok(r) => r,
        Err(e) => return Err(fail(host, e)),
    };
    // Recorded (and the budget checked again) before anything is shown.
    if let Some(last) = rec.run.spends.last_mut() {
        *last = spend;
    }
    rec.commit(plan, corpus, Stage::Evaluate, host).await?;
    host.stage_done(
        Stage::Evaluate,
        format!("DP utility check: ε = {:.4} recorded; chosen: {}", result.epsilon, result.chosen.as_deref().unwrap_or("none")),
    );
    Ok(CheckOutput { result, run: rec.run })
}

impl EvalParams {
    /// The page's evaluations (the DP check, the check on a tuning file): the run settings'
    /// values for every arm of `samplers`, the same number of sequences per class, the
    /// default classifier, noise-dominated classes left out as generation leaves them out.
    pub fn of_run_settings(settings: &RunSettings, task: Task, holdout: f64, seeds: Vec<u64>, samplers: Vec<KeyphraseSampler>) -> EvalParams {
        EvalParams {
            task,
            holdout,
            seeds,
            vocab: settings.vocab_params(),
            eps_kde: settings.eps_kde,
            len: settings.len,
            features: Some(settings.features),
            kde_terms_per_doc: settings.kde_terms_per_doc.unwrap_or(settings.len),
            per_class: settings.per_class,
            samplers,
            no_dp_arms: false,
            bandwidth: settings.bandwidth,
            smoothing: settings.smoothing,
            class_counts_epsilon: None,
            candidates: Default::default(),
            classifier: crate::eval::classifier::SoftmaxParams::default(),
            include_noise_classes: false,
            sampling: settings.sampling,
            partition_selection: false,
        }
    }
}

impl ArmSettings for RunSettings {
    /// None spent when Ṽ is the whole public list (`RunSettings::whole_list`): the check's Ṽ is
    /// then that list too (`dp::vocabulary::select_from_documents`).
    fn eps_voc(&self) -> f64 {
        self.vocabulary_epsilon()
    }

    fn eps_summary(&self) -> f64 {
        self.eps_kde
    }

    fn arm_summary(&self) -> SummaryParams {
        self.summary_params()
    }

    fn eval_params(&self, task: Task, holdout: f64, seeds: Vec<u64>, samplers: Vec<KeyphraseSampler>) -> EvalParams {
        EvalParams::of_run_settings(self, task, holdout, seeds, samplers)
    }
}
