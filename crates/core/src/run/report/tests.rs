use super::*;
use crate::ledger::{Ledger, Run, Scope, Spend};

#[test]
fn html_report_escapes_and_states_the_guarantee() {
    let mut run = Run::new("r".into(), "t".into());
    run.spends.push(Spend { stage: "vocabulary".into(), mechanism: "m".into(), epsilon: 1.0, params: serde_json::Value::Null, scope: Scope::AllDocuments });
    run.spends.push(Spend { stage: "kde".into(), mechanism: "m".into(), epsilon: 5.0, params: serde_json::Value::Null, scope: Scope::Partition { label: "<b>".into() } });
    let mut ledger = Ledger::new("fp".into());
    ledger.runs.push(run.clone());
    let report = |ledger: &Ledger, classes: &crate::input::classes::ClassSet| {
        let (v, m) = (Checked { name: "medical".into(), sha256: "a".repeat(64) }, Checked { name: "model".into(), sha256: "b".repeat(64) });
        PrivacyReport::new("now".into(), &RunSettings::default(), &run, ledger, v, m, classes, 100, &[])
    };
    let r = report(&ledger, &crate::input::classes::ClassSet::declared(&["<b>"], crate::input::classes::OtherLabels::Drop).unwrap());
    assert_eq!(r.epsilon_run, 6.0);
    let html = r.to_html();
    assert!(html.contains("ε = 6.0000") && html.contains("one document"), "{html}");
    assert!(!html.contains("<b>") && html.contains("&lt;b&gt;"));
    assert!(!html.contains("<script") && !html.contains("http"));
    assert!(html.contains("non_dp_checks_on_this_corpus: 0"), "{html}");
    // The sampling settings (post-processing, but they shape what is released) are in the table.
    assert!(html.contains("Distinctiveness γ") && html.contains("<td>1</td>") && html.contains("each class's sequences are distinct sets"), "{html}");
    assert!(html.contains("N/(2q))/ε_kde on each class's counts)</th><td>5</td>"), "q, the default 5: {html}");
    assert_eq!(r.run, "r", "the run's ledger id, for a vote to name");
    assert!(html.contains("<td>50000</td>"), "N as set, the spend recording none kept: {html}");
    // A public list shorter than N: the vocabulary spend records the N kept, and the table says so.
    let mut short = r.clone();
    short.spends[0].params = serde_json::json!({ "top_n": 27589 });
    assert!(short.to_html().contains("<td>50000: the whole public list, 27589 terms</td>"), "{}", short.to_html());
    // Utility checks on the corpus are stated, with how many settings they compared.
    ledger.utility_checks.push(crate::ledger::UtilityCheck { id: "u".into(), when: "t".into(), settings_compared: 7 });
    let r = report(&ledger, &crate::input::classes::ClassSet::unlabelled());
    assert_eq!((r.non_dp_checks_on_this_corpus, r.non_dp_settings_compared), (1, 7));
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains("\"non_dp_checks_on_this_corpus\":1") && r.non_dp_checks.contains("comparing 7"), "{json}");
}

#[test]
fn the_report_says_which_classes_were_ticked_from_the_corpus() {
    let run = Run::new("r".into(), "t".into());
    let (v, m) = (Checked { name: "medical".into(), sha256: "a".repeat(64) }, Checked { name: "model".into(), sha256: "b".repeat(64) });
    let classes = crate::input::classes::ClassSet::declared(&["cardio", "pulmo"], crate::input::classes::OtherLabels::Drop).unwrap();
    let typed = PrivacyReport::new("now".into(), &RunSettings::default(), &run, &Ledger::new("fp".into()), v.clone(), m.clone(), &classes, 10, &[]);
    assert!(typed.classes_ticked_from_observed.is_empty() && typed.to_html().contains("none: every declared class was typed"));
    let settings = RunSettings { classes: vec!["cardio".into(), "pulmo".into()], classes_ticked: vec!["pulmo".into()], ..RunSettings::default() };
    let ticked = PrivacyReport::new("now".into(), &settings, &run, &Ledger::new("fp".into()), v, m, &classes, 10, &[]);
    assert_eq!(ticked.classes_ticked_from_observed, ["pulmo"]);
    assert!(ticked.to_html().contains("1 of 2: pulmo. They were picked from the labels found in the private corpus"), "{}", ticked.to_html());
}

#[test]
fn a_reused_vocabulary_is_in_the_guarantee_but_not_in_the_runs_spend() {
    let settings = RunSettings { eps_voc: 2.0, eps_kde: 4.0, eps_counts: Some(0.1), ..RunSettings::default() };
    let mut run = Run::new("r2".into(), "t".into());
    run.vocabulary_from = Some("r1".into());
    run.spends.push(Spend { stage: "kde".into(), mechanism: "m".into(), epsilon: 4.0, params: serde_json::Value::Null, scope: Scope::AllDocuments });
    run.spends.push(Spend { stage: "class counts".into(), mechanism: "m".into(), epsilon: 0.1, params: serde_json::Value::Null, scope: Scope::AllDocuments });
    let (v, m) = (Checked { name: "medical".into(), sha256: "a".repeat(64) }, Checked { name: "model".into(), sha256: "b".repeat(64) });
    let r = PrivacyReport::new("now".into(), &settings, &run, &Ledger::new("fp".into()), v, m, &crate::input::classes::ClassSet::unlabelled(), 10, &[]);
    assert!((r.epsilon_run - 4.1).abs() < 1e-12, "this run spent ε_kde + ε_counts: {}", r.epsilon_run);
    assert!(r.guarantee.contains("(6.1000)-differentially private"), "{}", r.guarantee);
    assert!(r.guarantee.contains("released by the earlier run r1") && r.guarantee.contains("this run itself spent ε = 4.1000"), "{}", r.guarantee);
    assert!((r.epsilon_outputs - 6.1).abs() < 1e-12 && r.vocabulary_from.as_deref() == Some("r1"));
    assert!(r.to_html().contains("These outputs: ε = 6.1000 (per document), of which this run spent ε = 4.1000 and run r1"), "{}", r.to_html());
    // Without reuse the guarantee is the run's own ε.
    run.vocabulary_from = None;
    let (v, m) = (Checked { name: "medical".into(), sha256: "a".repeat(64) }, Checked { name: "model".into(), sha256: "b".repeat(64) });
    let r = PrivacyReport::new("now".into(), &settings, &run, &Ledger::new("fp".into()), v, m, &crate::input::classes::ClassSet::unlabelled(), 10, &[]);
    assert!(r.guarantee.contains("(4.1000)-differentially private") && !r.guarantee.contains("earlier run"), "{}", r.guarantee);
    assert!((r.epsilon_outputs - 4.1).abs() < 1e-12 && r.vocabulary_from.is_none());
    assert!(r.to_html().contains("This run: ε = 4.1000 (per document: a patient with k documents is protected at k·ε)."));
}

#[test]
fn the_replay_check_is_added_with_its_counts_and_said_to_be_not_dp() {
    let run = Run::new("r".into(), "t".into());
    let (v, m) = (Checked { name: "medical".into(), sha256: "a".repeat(64) }, Checked { name: "model".into(), sha256: "b".repeat(64) });
    let r = PrivacyReport::new("now".into(), &RunSettings::default(), &run, &Ledger::new("fp".into()), v, m, &crate::input::classes::ClassSet::unlabelled(), 10, &[]);
    let json = serde_json::to_string(&r).unwrap();
    // A run's report says nothing of a check (none was run before generation).
    assert!(!json.contains("replay_check") && !r.to_html().contains("Replay check"));
    let summary = ReplaySummary::new(12, 2, 2, crate::replay::ReplayParams::default());
    let with = serde_json::to_string(&PrivacyReport::with_replay(&json, summary.clone()).unwrap()).unwrap();
    let back: PrivacyReport = serde_json::from_str(&with).unwrap();
    assert_eq!(back.replay_check, Some(summary));
    let html = back.to_html();
    assert!(html.contains("Replay check (not differentially private)") && html.contains("NOT differentially private"), "{html}");
    assert!(html.contains("<th scope=\"row\">Flagged</th><td>2</td>") && html.contains("Left out of the synthetic corpus</th><td>2</td>"), "{html}");
    assert!(PrivacyReport::with_replay("not json", ReplaySummary::new(0, 0, 0, Default::default())).is_err());
}

#[test]
fn the_report_states_the_privacy_unit() {
    let mut run = Run::new("r".into(), "t".into());
    let checked = || (Checked { name: "medical".into(), sha256: "a".repeat(64) }, Checked { name: "model".into(), sha256: "b".repeat(64) });
    let (v, m) = checked();
    let r = PrivacyReport::new("now".into(), &RunSettings::default(), &run, &Ledger::new("fp".into()), v, m, &crate::input::classes::ClassSet::unlabelled(), 10, &[]);
    assert_eq!(r.privacy_unit, "document");
    assert!(r.neighbouring_relation.contains("one document (and its label)") && r.neighbouring_relation.contains("k·ε"));
    assert!(r.to_html().contains("(per document: a patient with k documents is protected at k·ε)."));
    run.person_column = Some("patient_id".into());
    let (v, m) = checked();
    let r = PrivacyReport::new("now".into(), &RunSettings::default(), &run, &Ledger::new("fp".into()), v, m, &crate::input::classes::ClassSet::unlabelled(), 10, &[]);
    assert_eq!(r.privacy_unit, "person (column “patient_id”)");
    assert!(r.neighbouring_relation.contains("one person's documents") && !r.neighbouring_relation.contains("k·ε"), "{}", r.neighbouring_relation);
    assert!(r.to_html().contains("(per person)."));
}
