//! A run whose sampler a DP utility check chose (`RunSettings::chosen_by_check`, `super::check`):
//! refused unless that check is on record for this corpus and chose that sampler; its report
//! then says so, with the check's ε ([`ChosenBy`]).

use serde::{Deserialize, Serialize};

use super::{RunError, RunSettings};
use crate::ledger::{Ledger, SpendStage};

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
/// `None` without one; refused if the ledger has no such check under the run's `account` and
/// privacy unit (`person_column`: ε's under different units or budgets do not add up), or it
/// chose another sampler (or nothing: it did not finish).
pub fn chosen_by(ledger: &Ledger, settings: &RunSettings, account: Option<&str>, person_column: Option<&str>) -> Result<Option<ChosenBy>, RunError> {
    let Some(id) = settings.chosen_by_check.as_deref() else { return Ok(None) };
    let run = ledger
        .runs
        .iter()
        .find(|r| r.id == id && r.spends.iter().any(|s| s.is(SpendStage::UtilityCheck)))
        .ok_or_else(|| RunError::Refused(format!("the settings name the utility check {id}, which this corpus's ledger does not hold")))?;
    if run.account.as_deref() != account || run.person_column.as_deref() != person_column {
        return Err(RunError::Refused(format!(
            "the utility check {id} was recorded under another budget account or privacy unit than this run; check again under this one"
        )));
    }
    let spend = std::iter::once(run)
        .flat_map(|r| &r.spends)
        .find(|s| s.is(SpendStage::UtilityCheck))
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
    use crate::ledger::Run;

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
        assert_eq!(chosen_by(&l, &s, None, None).unwrap(), None);
        s.chosen_by_check = Some("c1".into());
        assert_eq!(chosen_by(&l, &s, None, None).unwrap(), Some(ChosenBy { check: "c1".into(), sampler: "markov".into(), epsilon: 12.0 }));
        // Under another account or unit, its ε would not add up with the run's.
        assert!(chosen_by(&l, &s, Some("clinic"), None).unwrap_err().to_string().contains("another budget account or privacy unit"));
        assert!(chosen_by(&l, &s, None, Some("patient")).is_err());
        s.sampler = KeyphraseSampler::Histogram;
        assert!(chosen_by(&l, &s, None, None).unwrap_err().to_string().contains("chose the sampler \"markov\""));
        s.chosen_by_check = Some("other".into());
        assert!(chosen_by(&l, &s, None, None).unwrap_err().to_string().contains("does not hold"));
        // A check that never finished chose nothing.
        let mut started = ledger_with_check("markov");
        started.runs[0].spends[0] = crate::dp::selection::started_spend(12.0, 12.0, 0.2, &["markov"]);
        s.sampler = KeyphraseSampler::Markov;
        s.chosen_by_check = Some("c1".into());
        assert!(chosen_by(&started, &s, None, None).is_err());
    }
}
