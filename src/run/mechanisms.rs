//! The registry of what spends ε in a run: each DP mechanism once, with its ledger stage, the
//! [`RunSettings`] field that holds its ε and its words in the report's guarantee.
//! [`RunSettings::epsilon`], the planned ε ([`super::RunPlan::planned_epsilon`]) and
//! [`super::report::PrivacyReport::new`] read it, so they cannot disagree about which mechanisms
//! a run pays for; the ledger's check reads the stages ([`SpendStage::ALL`]).
//!
//! A new mechanism: its `crate::dp` file (recording under a new [`SpendStage`]), the stage in
//! `crate::ledger::SpendStage` (whereupon [`mechanism`] no longer compiles until it is given an
//! entry here), its ε field in [`RunSettings`] (an `eps_` field not registered here fails
//! `every_epsilon_field_is_registered`), its step in `super::stages`, a CLI flag and a form field.

use crate::ledger::{Run, SpendStage};

use super::report;
use super::RunSettings;

/// One DP mechanism a release run spends ε on.
#[derive(Clone, Copy)]
pub struct Mechanism {
    /// The ledger stage its spends are recorded under.
    pub stage: SpendStage,
    /// The [`RunSettings`] field that holds its ε (as serialized, and as a `FieldError` names it).
    pub field: &'static str,
    /// Its ε under these settings; `None` when the run does not use it (the class counts off).
    pub epsilon: fn(&RunSettings) -> Option<f64>,
    /// Whether a run may reuse an earlier run's release of it (paid for there) instead of
    /// drawing it again: only the private vocabulary (`super::reuse`).
    pub reusable: bool,
    /// Its clause of the report's guarantee, given its ε: what it released and with what noise.
    pub words: fn(&RunSettings, &Run, f64) -> String,
}

/// What `stage` costs a release run; `None` for a stage only a run of its own spends (the DP
/// utility check, `super::check`, whose ε follows from the settings it compares). Exhaustive,
/// so that a new stage is a compile error here until it is registered.
pub fn mechanism(stage: SpendStage) -> Option<Mechanism> {
    Some(match stage {
        SpendStage::Vocabulary => Mechanism {
            stage,
            field: "eps_voc",
            epsilon: |s| Some(s.eps_voc),
            reusable: true,
            words: report::vocabulary_words,
        },
        SpendStage::Summary => Mechanism {
            stage,
            field: "eps_kde",
            epsilon: |s| Some(s.eps_kde),
            reusable: false,
            words: report::summary_words,
        },
        SpendStage::ClassCounts => Mechanism {
            stage,
            field: "eps_counts",
            epsilon: |s| s.eps_counts,
            reusable: false,
            words: report::class_counts_words,
        },
        SpendStage::UtilityCheck => return None,
    })
}

/// Every mechanism of a release run, in the order of [`SpendStage::ALL`] (the order ε is added
/// up in and the report states them).
pub fn mechanisms() -> impl Iterator<Item = Mechanism> {
    SpendStage::ALL.iter().filter_map(|&s| mechanism(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings with `field` set to `value`, through the field's serialized name (the
    /// registry names fields as strings: this is what ties them to the struct).
    fn with_field(field: &str, value: f64) -> RunSettings {
        let mut json = serde_json::to_value(RunSettings::default()).expect("settings serialize");
        let obj = json.as_object_mut().expect("settings are an object");
        assert!(obj.contains_key(field), "the registry names {field:?}, which RunSettings does not have");
        obj.insert(field.to_string(), value.into());
        serde_json::from_value(json).expect("settings deserialize")
    }

    #[test]
    fn every_epsilon_field_is_registered() {
        let json = serde_json::to_value(RunSettings::default()).expect("settings serialize");
        let fields: Vec<&str> = mechanisms().map(|m| m.field).collect();
        let keys = json.as_object().expect("settings are an object").keys();
        for key in keys.filter(|k| k.starts_with("eps_")) {
            assert!(fields.contains(&key.as_str()), "RunSettings::{key} spends ε but is not in run::mechanisms");
        }
        let stages: Vec<SpendStage> = mechanisms().map(|m| m.stage).collect();
        assert_eq!(stages, [SpendStage::Vocabulary, SpendStage::Summary, SpendStage::ClassCounts]);
    }

    #[test]
    fn each_registered_field_is_the_epsilon_the_run_counts() {
        for m in mechanisms() {
            let (low, high) = (with_field(m.field, 0.5), with_field(m.field, 3.5));
            assert_eq!(((m.epsilon)(&low), (m.epsilon)(&high)), (Some(0.5), Some(3.5)), "{}", m.field);
            assert!((high.epsilon() - low.epsilon() - 3.0).abs() < 1e-12, "{} is not counted in RunSettings::epsilon", m.field);
            let reused = high.epsilon() - high.planned_epsilon(true) - (low.epsilon() - low.planned_epsilon(true));
            assert!((reused - if m.reusable { 3.0 } else { 0.0 }).abs() < 1e-12, "{}: the reused ε", m.field);
        }
        let off = RunSettings { eps_counts: None, ..RunSettings::default() };
        assert_eq!(off.epsilon(), off.eps_voc + off.eps_kde);
    }
}
