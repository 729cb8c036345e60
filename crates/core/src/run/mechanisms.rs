//! The registry of what spends ε in a run: each DP mechanism once, with its ledger stage, the
//! [`RunSettings`] field that holds its ε and its words in the report's guarantee.
//! [`RunSettings::epsilon`], the planned ε ([`super::RunPlan::planned_epsilon`]) and
//! [`super::report::PrivacyReport::new`] read it, so they cannot disagree about which mechanisms
//! a run pays for; [`RunSettings::check`] checks every ε it names; the ledger's check reads the
//! stages ([`SpendStage::ALL`]).
//!
//! A new mechanism: its `crate::dp` file (recording under a new [`SpendStage`]), the stage in
//! `crate::ledger::SpendStage` (whereupon [`mechanism`] no longer compiles until it is given an
//! entry here), its ε field in [`RunSettings`] (an `eps_` field not registered here fails
//! `every_epsilon_field_is_registered`), its step in `super::stages`, a CLI flag and a form field.

use crate::ledger::{Run, SpendStage};

use super::RunSettings;

/// One DP mechanism a release run spends ε on.
#[derive(Clone, Copy)]
pub struct Mechanism {
    /// The ledger stage its spends are recorded under.
    pub stage: SpendStage,
    /// The [`RunSettings`] field that holds its ε (as serialized, and as a `FieldError` names it).
    pub field: &'static str,
    /// Its ε's name in the settings' error messages.
    pub name: &'static str,
    /// Its ε as set (`None`: switched off); checked by [`RunSettings::check`] whenever it is set
    /// (a release run's here; the vote's with its other settings, under its form field names).
    pub setting: fn(&RunSettings) -> Option<f64>,
    /// Its ε under these settings; `None` when the run does not use it (the class counts off, or
    /// nothing to apportion among fewer than two classes).
    pub epsilon: fn(&RunSettings) -> Option<f64>,
    /// Whether a run may reuse an earlier run's release of it (paid for there) instead of
    /// drawing it again: only the private vocabulary (`super::reuse`).
    pub reusable: bool,
    /// Its clause of the report's guarantee, given its ε: what it released and with what noise.
    pub words: fn(&RunSettings, &Run, f64) -> String,
    /// Spent by a run of its own after generation, which these settings plan (the DP vote over
    /// the generated candidates, `super::vote`): not in the release run's ε ([`mechanisms`])
    /// but in what the settings plan in all ([`after_generation`], `RunSettings::epsilon_after_generation`).
    pub after_generation: bool,
}

/// What `stage` costs a release run; `None` for a stage only a run of its own spends (the DP
/// utility check, `super::check`, whose ε follows from the settings it compares; the vote,
/// `super::vote`). Exhaustive,
/// so that a new stage is a compile error here until it is registered.
pub fn mechanism(stage: SpendStage) -> Option<Mechanism> {
    Some(match stage {
        SpendStage::Vocabulary => Mechanism {
            stage,
            field: "eps_voc",
            name: "ε_voc",
            setting: |s| Some(s.eps_voc),
            // Not spent when Ṽ is the whole public list (N at least its size): nothing is drawn.
            epsilon: |s| (!s.whole_list()).then_some(s.eps_voc),
            reusable: true,
            words: vocabulary_words,
            after_generation: false,
        },
        SpendStage::Summary => Mechanism {
            stage,
            field: "eps_kde",
            name: "ε_kde",
            setting: |s| Some(s.eps_kde),
            epsilon: |s| Some(s.eps_kde),
            reusable: false,
            words: summary_words,
            after_generation: false,
        },
        SpendStage::ClassCounts => Mechanism {
            stage,
            field: "eps_counts",
            name: "ε of the class counts",
            setting: |s| s.eps_counts,
            epsilon: |s| s.counts_epsilon(),
            reusable: false,
            words: class_counts_words,
            after_generation: false,
        },
        // A run of its own after generation, planned with the run's settings (`RunSettings::vote`).
        SpendStage::Vote => Mechanism {
            stage,
            field: "vote",
            name: "ε_select",
            setting: |s| s.vote.map(|v| v.eps_select),
            epsilon: |s| s.vote.map(|v| v.charged_epsilon()),
            reusable: false,
            words: vote_words,
            after_generation: true,
        },
        // A run of its own whose ε follows from the settings it compares (`super::check`).
        SpendStage::UtilityCheck => return None,
    })
}

/// Every mechanism of a release run, in the order of [`SpendStage::ALL`] (the order ε is added
/// up in and the report states them).
pub fn mechanisms() -> impl Iterator<Item = Mechanism> {
    registered().filter(|m| !m.after_generation)
}

/// Every registered mechanism, in the order of [`SpendStage::ALL`].
fn registered() -> impl Iterator<Item = Mechanism> {
    SpendStage::ALL.iter().filter_map(|&s| mechanism(s))
}

/// The mechanisms the settings plan for after generation, each a run of its own (the DP vote).
pub fn after_generation() -> impl Iterator<Item = Mechanism> {
    registered().filter(|m| m.after_generation)
}

/// The DP vote's clause: what it releases, with the ε the ledger charges.
fn vote_words(settings: &RunSettings, _run: &Run, epsilon: f64) -> String {
    match settings.vote {
        Some(v) => format!("ε_select = {epsilon} (the DP vote over generated candidates: {})", crate::dp::vote::mechanism_words(&v.params())),
        None => String::new(),
    }
}

/// The private vocabulary's clause of the guarantee, with the run that released it when this
/// one reused it.
fn vocabulary_words(settings: &RunSettings, run: &Run, epsilon: f64) -> String {
    let vocab = if settings.vocab_per_class {
        "noisy per-class top-N vocabulary, discrete Laplace of scale S/ε_voc on every class's histogram; classes in parallel"
    } else {
        "noisy top-N vocabulary, discrete Laplace of scale S/ε_voc"
    };
    let reused = match &run.vocabulary_from {
        Some(from) => format!(
            "; released by the earlier run {from} on this corpus, where this ε_voc was spent and counted, and reused \
             here without a new draw: this run itself spent ε = {:.4}",
            run.epsilon()
        ),
        None => String::new(),
    };
    format!("ε_voc = {epsilon} ({vocab}{reused})")
}

/// The DP summaries' clause of the guarantee: what the sampler's release is.
fn summary_words(settings: &RunSettings, _run: &Run, epsilon: f64) -> String {
    let summaries = settings.sampler.family().report_words();
    format!("ε_kde = {epsilon} ({summaries}; classes are disjoint and compose in parallel)")
}

/// The DP class counts' clause of the guarantee.
fn class_counts_words(_settings: &RunSettings, _run: &Run, epsilon: f64) -> String {
    format!("ε = {epsilon} for the class counts that set how many sequences each class gets (discrete Laplace of scale 1/ε)")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings with `field` set to `value`, through the field's serialized name (the
    /// registry names fields as strings: this is what ties them to the struct).
    fn with_field(field: &str, value: f64) -> RunSettings {
        // Two classes: the class counts are spent only where there is more than one.
        let two = RunSettings { classes: vec!["a".into(), "b".into()], ..RunSettings::default() };
        let mut json = serde_json::to_value(two).expect("settings serialize");
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
        let after: Vec<(SpendStage, &str)> = after_generation().map(|m| (m.stage, m.field)).collect();
        assert_eq!(after, [(SpendStage::Vote, "vote")]);
        assert!(json.as_object().is_some_and(|o| !o.contains_key("vote")), "off by default, and not written then");
    }

    #[test]
    fn the_vote_is_planned_after_generation_not_in_the_run() {
        use crate::dp::vote::VotePlan;
        let off = RunSettings { classes: vec!["a".into(), "b".into()], ..RunSettings::default() };
        let vote = VotePlan { eps_select: 1.5, candidates_per_kept: 3, ..VotePlan::default() };
        let on = RunSettings { vote: Some(vote), ..off.clone() };
        // The release run's own ε and what it plans are unchanged; the vote is counted apart.
        assert_eq!((on.epsilon(), on.planned_epsilon(false)), (off.epsilon(), off.planned_epsilon(false)));
        assert_eq!((off.epsilon_after_generation(), on.epsilon_after_generation()), (0.0, 1.5));
        assert_eq!((off.sequences_per_class(), on.sequences_per_class()), (50, 150));
        // Subsampled: the charged ε′ = ln(1 + q(e^ε − 1)).
        let sub = RunSettings { vote: Some(VotePlan { sample_rate: 0.25, ..vote }), ..off.clone() };
        assert!((sub.epsilon_after_generation() - (0.25 * 1.5f64.exp_m1()).ln_1p()).abs() < 1e-9);
        let m = mechanism(SpendStage::Vote).expect("the vote is registered");
        let words = (m.words)(&on, &Run::new("a".into(), "now".into()), 1.5);
        assert!(words.starts_with("ε_select = 1.5 (the DP vote") && words.contains("scale 1/ε = 0.6667"), "{words}");
        let back: RunSettings = serde_json::from_str(&serde_json::to_string(&on).unwrap()).unwrap();
        assert_eq!(back, on);
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
        // One class (or none declared: an unlabelled corpus): nothing to apportion, nothing spent.
        for (classes, other) in [(vec![], None), (vec!["a".to_string()], None), (vec![], Some("rest".to_string()))] {
            let one = RunSettings { eps_counts: Some(0.1), classes, other_class: other, ..RunSettings::default() };
            assert_eq!((one.counts_epsilon(), one.epsilon()), (None, one.eps_voc + one.eps_kde));
        }
        let two = RunSettings { eps_counts: Some(0.1), classes: vec!["a".into()], other_class: Some("rest".into()), ..RunSettings::default() };
        assert_eq!(two.counts_epsilon(), Some(0.1));
    }

    #[test]
    fn every_registered_epsilon_is_checked() {
        for m in mechanisms() {
            let errors = with_field(m.field, -1.0).check();
            let mine: Vec<_> = errors.iter().filter(|e| e.field == m.field).collect();
            assert_eq!(mine.len(), 1, "{}: {errors:?}", m.field);
            assert!(mine[0].message.contains(m.name), "{}: {}", m.field, mine[0].message);
        }
        assert!(RunSettings::default().check().is_empty());
    }

    /// The guarantee's clauses as the report wrote them before the registry (kept here as the
    /// oracle: the report's words must not change).
    fn clauses_before(settings: &RunSettings, run: &Run) -> String {
        let summaries = match settings.sampler.hist_kind() {
            Some(_) => format!(
                "per-class noisy {} histograms over the private vocabulary (discrete Laplace of scale 1/ε_kde; a document \
                 has total weight 1)",
                if settings.sampler == crate::dp::summary::KeyphraseSampler::Markov { "keyphrase-row + keyphrase-transition" } else { "keyphrase" }
            ),
            None => "per-class DP-KDEs with random Fourier features (discrete Laplace of scale √2·I/ε per member)".to_string(),
        };
        let vocab = if settings.vocab_per_class {
            "noisy per-class top-N vocabulary, discrete Laplace of scale S/ε_voc on every class's histogram; classes in parallel"
        } else {
            "noisy top-N vocabulary, discrete Laplace of scale S/ε_voc"
        };
        let reused = match &run.vocabulary_from {
            Some(from) => format!(
                "; released by the earlier run {from} on this corpus, where this ε_voc was spent and counted, and reused \
                 here without a new draw: this run itself spent ε = {:.4}",
                run.epsilon()
            ),
            None => String::new(),
        };
        format!(
            "ε_voc = {} ({vocab}{reused}) plus ε_kde = {} ({summaries}; classes are disjoint and compose in parallel){}",
            settings.eps_voc,
            settings.eps_kde,
            match settings.eps_counts {
                Some(e) => format!(" plus ε = {e} for the class counts that set how many sequences each class gets (discrete Laplace of scale 1/ε)"),
                None => String::new(),
            }
        )
    }

    #[test]
    fn the_report_states_every_mechanism_in_the_words_it_did() {
        let mut reused = Run::new("b".into(), "now".into());
        reused.vocabulary_from = Some("a".into());
        for sampler in crate::dp::summary::KeyphraseSampler::ALL {
            for (per_class, counts) in [(false, Some(0.1)), (true, None), (false, Some(2.5))] {
                let classes = vec!["a".to_string(), "b".to_string()];
                let s = RunSettings { sampler, vocab_per_class: per_class, eps_counts: counts, eps_voc: 1.5, classes, ..RunSettings::default() };
                for run in [Run::new("a".into(), "now".into()), reused.clone()] {
                    let now: Vec<String> = mechanisms().filter_map(|m| (m.epsilon)(&s).map(|e| (m.words)(&s, &run, e))).collect();
                    assert_eq!(now.join(" plus "), clauses_before(&s, &run));
                }
            }
        }
    }
}
