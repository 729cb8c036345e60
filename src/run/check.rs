//! The DP utility check as a run: planned, held to the budget, recorded in the ledger before its
//! result is shown (`crate::eval::dp_check` computes it; `crate::dp::selection` is the
//! mechanism and its privacy map). The CLI (`dpkps check`) and the page's worker drive it
//! through the same [`Host`] as a run.
//!
//! A later run may say that its sampler was chosen by a check ([`RunSettings::chosen_by_check`]):
//! it is refused unless that check is on record for this corpus and chose that sampler, and its
//! report then says so, with the check's ε ([`ChosenBy`]).

use serde::{Deserialize, Serialize};

use super::stages::Recorder;
use super::{Host, RunError, RunPlan, RunSettings, Stage};
use crate::dp::selection::STAGE;
use crate::dp::SecureRng;
use crate::eval::dp_check::{CheckParams, CheckResult, DpCheck};
use crate::ledger::{Ledger, Run};
use crate::pipeline::MatchedCorpus;
use crate::public_vocab::{PublicVocabulary, TermId};

/// A finished check: its result (DP) and its ledger entry.
pub struct CheckOutput {
    pub result: CheckResult,
    pub run: Run,
}

/// Runs the DP utility check on `corpus` (its units: `crate::units`) and records its ε; the
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
    let units = crate::units::units(corpus, &plan.classes);
    let corpus: &MatchedCorpus = &units;
    let planned = params.epsilon(&plan.settings);
    let mut rec = Recorder::start(plan, corpus, planned, host, rng).await?;
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
    rec.run.spends.push(spend);
    rec.commit(plan, corpus, Stage::Evaluate, host).await?;
    host.stage_done(
        Stage::Evaluate,
        format!("DP utility check: ε = {:.4} recorded; chosen: {}", result.epsilon, result.chosen.as_deref().unwrap_or("none")),
    );
    Ok(CheckOutput { result, run: rec.run })
}

/// The check a run's settings were chosen by, as the report states it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChosenBy {
    /// The check's run id in the ledger.
    pub check: String,
    /// The sampler it chose (the run's).
    pub sampler: String,
    /// The check's ε (recorded with it, counted in the corpus total).
    pub epsilon: f64,
}

/// The check named by `settings.chosen_by_check`, verified against `ledger` (this corpus's):
/// `None` without one; refused if the ledger has no such check or it chose another sampler.
pub fn chosen_by(ledger: &Ledger, settings: &RunSettings) -> Result<Option<ChosenBy>, RunError> {
    let Some(id) = settings.chosen_by_check.as_deref() else { return Ok(None) };
    let spend = ledger
        .runs
        .iter()
        .filter(|r| r.id == id)
        .flat_map(|r| &r.spends)
        .find(|s| s.stage == STAGE)
        .ok_or_else(|| RunError::Refused(format!("the settings name the utility check {id}, which this corpus's ledger does not hold")))?;
    let chose = spend.params.get("chosen").and_then(|c| c.as_str()).unwrap_or("");
    if chose != settings.sampler.name() {
        return Err(RunError::Refused(format!(
            "the utility check {id} chose the sampler {chose:?}, not {:?}: choose that sampler, or clear the check",
            settings.sampler.name()
        )));
    }
    Ok(Some(ChosenBy { check: id.to_string(), sampler: chose.to_string(), epsilon: spend.epsilon }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dp::summary::KeyphraseSampler;

    fn ledger_with_check(chosen: &str) -> Ledger {
        let scores = crate::dp::selection::NoisyScores { correct: vec![5, 9], tested: 10, scale: 0.1 };
        let mut run = Run::new("c1".into(), "now".into());
        run.spends.push(crate::dp::selection::spend(12.0, 12.0, 0.2, &["histogram", "markov"], &scores, Some(chosen)));
        let mut l = Ledger::new("fp".into());
        l.runs.push(run);
        l
    }

    #[test]
    fn a_run_chosen_by_a_check_needs_that_check_on_record_with_its_sampler() {
        let l = ledger_with_check("markov");
        let mut s = RunSettings { sampler: KeyphraseSampler::Markov, ..RunSettings::default() };
        assert_eq!(chosen_by(&l, &s).unwrap(), None);
        s.chosen_by_check = Some("c1".into());
        assert_eq!(chosen_by(&l, &s).unwrap(), Some(ChosenBy { check: "c1".into(), sampler: "markov".into(), epsilon: 12.0 }));
        s.sampler = KeyphraseSampler::Histogram;
        assert!(chosen_by(&l, &s).unwrap_err().to_string().contains("chose the sampler \"markov\""));
        s.chosen_by_check = Some("other".into());
        assert!(chosen_by(&l, &s).unwrap_err().to_string().contains("does not hold"));
    }
}
