//! The DP utility check: which keyphrase sampler keeps the most class signal on this corpus,
//! answered with differential privacy and paid for (`crate::dp::selection` holds the mechanism
//! and its privacy map; `crate::run::check` records it in the ledger).
//!
//! Unlike [`super::Evaluation`] (research figures, NOT DP), the check reads the corpus only
//! through DP releases and one noisy count per arm:
//! - the task is the public class set, as a run has it (no class chosen, balanced or refused
//!   from the counts: those choices would read the data);
//! - the split is one public coin per unit (`selection::split`), not stratified by class;
//! - one round; the arms are the DP samplers only (no noiseless, real-sequence or majority arm:
//!   they read the training part without noise); one view (the embedding view);
//! - an arm with nothing to train on (every class noise-dominated) predicts nothing right, and
//!   an empty test part is scored like any other: nothing is refused because of the data.
//!
//! The units are the run's (`crate::input::units`): with a person column, one per person.

use serde::{Deserialize, Serialize};

use super::evaluation::{Doc, Evaluation, Round};
use super::params::{EvalParams, Task};
use super::split::Split;
use super::{EvalError, Progress};
use crate::input::classes::ClassSet;
use crate::dp::candidates::kde_candidates;
use crate::dp::selection::{self, NoisyScores};
use crate::dp::summary::{KeyphraseSampler, SummaryError, SummaryParams};
use crate::dp::vocabulary::select_from_documents;
use crate::base::ParamError;
use crate::dp::SecureRng;
use crate::embed::TermEmbeddings;
use crate::ledger::{Run, Spend};
use crate::input::matched::MatchedCorpus;
use crate::input::public_vocab::{PublicVocabulary, TermId};

/// The share of units held out for testing, by default.
pub const DEFAULT_HOLDOUT: f64 = 0.2;

/// The run settings that the check's arms share, as the check reads them.
/// `crate::run::RunSettings` implements it (in `crate::run::check`, which drives the check), so
/// that the evaluation, a layer below the run, never imports the run's types.
pub trait ArmSettings {
    /// ε of the DP vocabulary Ṽ (0 when Ṽ is the whole public list: nothing is drawn).
    fn eps_voc(&self) -> f64;
    /// ε of one arm's DP summary.
    fn eps_summary(&self) -> f64;
    /// The summary parameters of the run (each arm replaces the sampler).
    fn arm_summary(&self) -> SummaryParams;
    /// The evaluation parameters of the settings, for `samplers` (see `EvalParams::of_run_settings`).
    fn eval_params(&self, task: Task, holdout: f64, seeds: Vec<u64>, samplers: Vec<KeyphraseSampler>) -> EvalParams;
}

/// What the curator chooses for a check (public).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckParams {
    /// The arms: each sampler under the run settings' other values.
    pub samplers: Vec<KeyphraseSampler>,
    /// Probability that a unit is held out for testing, in (0, 1).
    pub holdout: f64,
    /// ε of the scores; `None`: ε_train, which costs nothing more (`selection`, "Together").
    pub eps_select: Option<f64>,
}

/// Whether `sampler`'s arm release fits the size cap with `top_n_kept` candidates for `classes`
/// classes (public inputs only): the one rule [`CheckParams::every_sampler`] picks the arms by
/// and [`CheckParams::validate`] refuses a named arm by.
fn release_fits(settings: &impl ArmSettings, sampler: KeyphraseSampler, top_n_kept: usize, classes: usize) -> Result<(), SummaryError> {
    SummaryParams { sampler, ..settings.arm_summary() }.check_release_size(top_n_kept, classes)
}

impl CheckParams {
    /// Every sampler whose release fits the settings (the Markov sampler's size cap: public
    /// inputs only) with `top_n_kept` candidates (N as the public list lets it be kept:
    /// `VocabParams::kept`), 20% held out, ε_select = ε_train.
    pub fn every_sampler(settings: &impl ArmSettings, classes: usize, top_n_kept: usize) -> CheckParams {
        let samplers = KeyphraseSampler::ALL
            .into_iter()
            .filter(|&sampler| release_fits(settings, sampler, top_n_kept, classes).is_ok())
            .collect();
        CheckParams { samplers, holdout: DEFAULT_HOLDOUT, eps_select: None }
    }

    /// ε_train = ε_voc + Σ_arms ε_kde (+ no class counts: the arms sample the same number of
    /// sequences per class), and ε_select; the check costs their max.
    pub fn epsilons(&self, settings: &impl ArmSettings) -> (f64, f64) {
        let train = settings.eps_voc() + self.samplers.len() as f64 * settings.eps_summary();
        (train, self.eps_select.unwrap_or(train))
    }

    /// ε the check records (`selection::check_epsilon`).
    pub fn epsilon(&self, settings: &impl ArmSettings) -> f64 {
        let (t, s) = self.epsilons(settings);
        selection::check_epsilon(t, s)
    }

    /// Terms to keep per document while matching, for every arm and Ṽ.
    pub fn keep(&self, settings: &impl ArmSettings) -> usize {
        eval_params(settings, self).keep()
    }

    /// The arms' names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.samplers.iter().map(|s| s.name()).collect()
    }

    /// Public inputs only: arms, holdout, ε, and that every arm's release fits (`classes`
    /// classes, `top_n_kept` candidates as in [`Self::every_sampler`]), so that nothing fails
    /// after Ṽ is drawn.
    fn validate(&self, settings: &impl ArmSettings, classes: usize, top_n_kept: usize) -> Result<(), EvalError> {
        if self.samplers.is_empty() {
            return Err(ParamError::new("the samplers to compare", "none", "must name at least one sampler").into());
        }
        let mut names: Vec<&str> = self.samplers.iter().map(|s| s.name()).collect();
        names.sort_unstable();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return Err(ParamError::new("the samplers to compare", names.join(", "), "must not repeat a sampler").into());
        }
        if !(self.holdout > 0.0 && self.holdout < 1.0) {
            return Err(ParamError::new("the held-out share", self.holdout, "must be a number between 0 and 1").into());
        }
        if let Some(e) = self.eps_select {
            crate::dp::check_epsilon("ε of the check's scores", e)?;
        }
        crate::dp::check_epsilon("the check's ε", self.epsilon(settings))?;
        for &sampler in &self.samplers {
            release_fits(settings, sampler, top_n_kept, classes)?;
        }
        Ok(())
    }
}

/// One arm's released score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckArm {
    pub sampler: String,
    /// Noisy number of test units predicted right.
    pub noisy_correct: i64,
    /// noisy_correct / noisy_tested, clipped to [0, 1].
    pub noisy_accuracy: f64,
    /// The classes whose release in this arm is noise-dominated (`crate::sample::signal`;
    /// post-processing of the arm's DP release): their sequences are not trained on, as
    /// generation would leave them out. Every class: the arm predicts nothing and scores 0.
    #[serde(default)]
    pub noise_dominated: Vec<String>,
}

/// What a check releases (DP outputs and public settings only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    pub arms: Vec<CheckArm>,
    pub noisy_tested: i64,
    /// The sampler with the highest noisy score.
    pub chosen: Option<String>,
    pub epsilon: f64,
    pub epsilon_train: f64,
    pub epsilon_select: f64,
    pub holdout: f64,
    pub noise_scale: f64,
    /// Classes of the public class set (what `CheckArm::noise_dominated` is out of).
    #[serde(default)]
    pub classes: usize,
}

/// A prepared check: the split drawn and Ṽ drawn (ε_voc) from the training units.
pub struct DpCheck {
    ev: Evaluation,
    check: CheckParams,
    /// Planned (ε_train, ε_select).
    planned: (f64, f64),
    /// Ṽ's spends so far; the arms add theirs.
    spends: Vec<Spend>,
}

impl DpCheck {
    /// Every refusal of the check, from public inputs only (the settings, the class set, the
    /// public list, the terms kept per document): called before anything is recorded or drawn,
    /// so that a refused check costs nothing (and again by [`Self::prepare`]).
    pub fn check_inputs(kept: usize, classes: &ClassSet, public: &PublicVocabulary, settings: &impl ArmSettings, check: &CheckParams) -> Result<EvalParams, EvalError> {
        let params = eval_params(settings, check);
        check.validate(settings, classes.len(), params.vocab.kept(public.len()))?;
        if classes.len() < 2 {
            return Err(ParamError::new("the classes", classes.len(), "must be at least 2 for the utility check (it trains a classifier)").into());
        }
        params.validate()?;
        if kept < params.keep() {
            return Err(EvalError::Keep { kept, needed: params.keep() });
        }
        // The planned ε_voc (none for the whole list) and what `select_from_documents` will do
        // judge N against the same list (`RunPlan::new` sets the settings' list size).
        if params.vocab.covers(public.len()) != (settings.eps_voc() == 0.0) {
            let why = "was planned for another public list than the one given (whether N covers it decides whether ε_voc is spent)";
            return Err(ParamError::new("the check's ε_voc", settings.eps_voc(), why).into());
        }
        Ok(params)
    }

    /// Checks the parameters (public inputs only), draws the coins and Ṽ from the training
    /// units. `units`: the corpus as the mechanisms read it (`crate::input::units::units`).
    pub fn prepare(
        units: &MatchedCorpus,
        classes: &ClassSet,
        public: &PublicVocabulary,
        settings: &impl ArmSettings,
        check: CheckParams,
        rng: &mut SecureRng,
    ) -> Result<DpCheck, EvalError> {
        let params = Self::check_inputs(units.keep, classes, public, settings, &check)?;
        let test = selection::split(units.docs.len(), check.holdout, rng)?;
        // Ṽ from the training units, as a run draws it from all of them (undeclared labels
        // count in a global Ṽ only).
        let train_docs = units.docs.iter().zip(&test).filter(|(_, &t)| !t).map(|(d, _)| (classes.assign(d.label.as_deref()), d.terms.as_slice()));
        let (pv, spends) = select_from_documents(train_docs, &classes.names(), public, &params.vocab, rng)?;
        let dp_vocab: Vec<TermId> = pv.terms.iter().map(|t| t.id).collect();
        let dp_candidates = kde_candidates(&pv, params.candidates);
        // The task's documents: the units of a declared class (the others are read by Ṽ only).
        let (mut docs, mut split) = (Vec::new(), Split { train: Vec::new(), test: Vec::new() });
        for (d, &t) in units.docs.iter().zip(&test) {
            if let Some(class) = classes.assign(d.label.as_deref()) {
                if t { &mut split.test } else { &mut split.train }.push(docs.len());
                docs.push(Doc { class, terms: d.terms.clone() });
            }
        }
        let names: Vec<String> = classes.names().iter().map(|s| s.to_string()).collect();
        let round = Round { seed: 0, split, dp_vocab, dp_candidates, exact_vocab: Vec::new(), distinctive: None };
        let planned = check.epsilons(settings);
        Ok(DpCheck { ev: Evaluation::of_round(params, names, docs, round), check, planned, spends })
    }

    /// Every term whose vector the check reads (documents' first terms and Ṽ): embed them once.
    pub fn terms_to_embed(&self) -> Vec<TermId> {
        self.ev.terms_to_embed()
    }

    /// Ṽ's terms (DP output: a host may cache their vectors).
    pub fn released(&self) -> &[TermId] {
        &self.ev.rounds[0].dp_vocab
    }

    /// Runs every arm, then releases the noisy scores. The returned spend is the check's whole
    /// ε (to record before the result is shown); it is checked against the plan.
    pub fn run(mut self, emb: &TermEmbeddings, rng: &mut SecureRng, progress: Progress<'_>) -> Result<(CheckResult, Spend), EvalError> {
        let ev = &self.ev;
        let round = &ev.rounds[0];
        let p = &ev.params;
        let seq = |i: usize| &ev.docs[i].terms[..ev.docs[i].terms.len().min(p.len)];
        let test: Vec<(&[TermId], usize)> =
            round.split.test.iter().filter(|&&i| !ev.docs[i].terms.is_empty()).map(|&i| (seq(i), ev.docs[i].class)).collect();
        let mut correct = Vec::with_capacity(self.check.samplers.len());
        let mut flagged = Vec::with_capacity(self.check.samplers.len());
        for (a, &sampler) in self.check.samplers.iter().enumerate() {
            progress(sampler.name(), a, self.check.samplers.len());
            let params = p.summary_params(sampler, false);
            let vocab = super::evaluation::dp_arm_vocab(round, sampler);
            let sampled = ev.sample_arm(round, vocab, &params, false, emb, rng)?;
            self.spends.extend(sampled.spends);
            flagged.push(sampled.noise_dominated);
            let right = if sampled.train.is_empty() || test.is_empty() {
                0
            } else {
                let pred = ev.embedding_view(&sampled.train, &test, emb)?;
                pred.iter().zip(&test).filter(|(p, t)| **p == t.1).count() as u64
            };
            correct.push(right);
        }
        progress("scores", self.check.samplers.len(), self.check.samplers.len());
        // ε_train as recorded by the mechanisms themselves, composed as a run's (the arms' per-
        // class spends add up within each class, then the max over classes); never more than planned.
        let mut train_run = Run::new(String::new(), String::new());
        train_run.spends = std::mem::take(&mut self.spends);
        let train = train_run.epsilon();
        let (planned_train, select) = self.planned;
        if train > planned_train * (1.0 + 1e-9) {
            return Err(EvalError::Overspent { spent: train, planned: planned_train });
        }
        let scores: NoisyScores = selection::noisy_scores(&correct, test.len() as u64, select, rng)?;
        let names: Vec<&str> = self.check.samplers.iter().map(|s| s.name()).collect();
        let chosen = selection::chosen(&scores).map(|a| names[a]);
        let spend = selection::spend(planned_train, select, self.check.holdout, &names, &scores, chosen);
        let result = CheckResult {
            arms: names
                .iter()
                .enumerate()
                .zip(flagged)
                .map(|((a, n), noise_dominated)| CheckArm {
                    sampler: n.to_string(),
                    noisy_correct: scores.correct[a],
                    noisy_accuracy: scores.accuracy(a),
                    noise_dominated,
                })
                .collect(),
            noisy_tested: scores.tested,
            chosen: chosen.map(str::to_string),
            epsilon: spend.epsilon,
            epsilon_train: planned_train,
            epsilon_select: select,
            holdout: self.check.holdout,
            noise_scale: scores.scale,
            classes: ev.classes.len(),
        };
        Ok((result, spend))
    }
}

/// The evaluation parameters of a check: the run settings', one round, DP arms only.
fn eval_params(settings: &impl ArmSettings, check: &CheckParams) -> EvalParams {
    settings.eval_params(Task::AllClasses, check.holdout, vec![0], check.samplers.clone())
}
