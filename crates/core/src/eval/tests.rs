//! End-to-end tests of the evaluation core on a small synthetic corpus with synthetic
//! embeddings (no model).

use super::classifier::SoftmaxParams;
use super::*;
use crate::input::corpus::IngestStats;
use crate::dp::vocabulary::VocabParams;
use crate::dp::SecureRng;
use crate::embed::TermEmbeddings;
use crate::dp::summary::KeyphraseSampler;
use crate::input::matched::{MatchedCorpus, MatchedDoc};
use crate::input::public_vocab::PublicVocabulary;

const DIM: usize = 8;

/// 60 terms in three clusters of 20 (cluster c around axis c), unit length.
fn embeddings() -> TermEmbeddings {
    let mut emb = TermEmbeddings::new(DIM);
    for t in 0..60u32 {
        let c = (t / 20) as usize;
        let mut v = vec![0f32; DIM];
        v[c] = 1.0;
        v[3 + (t as usize % 5)] = 0.3;
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter_mut().for_each(|x| *x /= n);
        emb.insert(t, &v).unwrap();
    }
    emb
}

fn vocab() -> PublicVocabulary {
    let list: String = (0..60).map(|i| format!("term{i}\n")).collect();
    PublicVocabulary::parse("v", list.as_bytes()).unwrap()
}

/// `sizes[c]` documents of class "c{c}", each with 6 distinct terms of cluster c; plus two
/// documents without terms and one without a label.
fn corpus(sizes: &[usize]) -> MatchedCorpus {
    let mut docs = Vec::new();
    for (c, &n) in sizes.iter().enumerate() {
        for k in 0..n {
            let terms = (0..6u32).map(|j| c as u32 * 20 + ((k as u32 * 7 + j * 3) % 20)).collect::<Vec<_>>();
            let mut t = terms.clone();
            t.dedup();
            docs.push(MatchedDoc { label: Some(format!("c{c}")), person: None, terms });
        }
    }
    docs.push(MatchedDoc { label: Some("c0".into()), person: None, terms: vec![] });
    docs.push(MatchedDoc { label: Some("c1".into()), person: None, terms: vec![] });
    docs.push(MatchedDoc { label: None, person: None, terms: vec![1, 2] });
    MatchedCorpus { docs, stats: IngestStats::default(), fingerprint: "f".into(), keys: Default::default(), keep: 10, docs_without_terms: 2, persons: None }
}

fn params(task: Task) -> EvalParams {
    EvalParams {
        task,
        holdout: 0.25,
        seeds: vec![1, 2],
        vocab: VocabParams { epsilon: 5.0, top_n: 60, terms_per_doc: 6, per_class: false },
        eps_kde: 10.0,
        len: 4,
        features: Some(256),
        kde_terms_per_doc: 6,
        per_class: 40,
        samplers: vec![KeyphraseSampler::Independent, KeyphraseSampler::IterativeLinear],
        no_dp_arms: true,
        bandwidth: 1.0,
        smoothing: 0.0,
        class_counts_epsilon: None,
        candidates: Default::default(),
        classifier: SoftmaxParams::default(),
        // These tests are about the arms' mechanics; at ε_kde = 10 and I = 256 the DP-KDE
        // releases of 10–30 documents a class are noise-dominated (the test below).
        include_noise_classes: true,
        sampling: Default::default(),
        partition_selection: false,
    }
}

fn run(mc: &MatchedCorpus, p: EvalParams) -> Result<EvalReport, EvalError> {
    let mut rng = SecureRng::seeded_for_tests(3);
    let ev = Evaluation::prepare(mc, &vocab(), p, &mut rng, &mut |_, _, _| {})?;
    let emb = embeddings();
    assert!(ev.terms_to_embed().iter().all(|&t| emb.contains(t)));
    ev.run(&emb, &mut rng, &mut |_, _, _| {})
}

fn arm<'r>(r: &'r EvalReport, name: &str, view: &str) -> &'r ArmReport {
    r.arms.iter().find(|a| a.arm == name && a.view == view).unwrap_or_else(|| panic!("no arm {name}/{view}"))
}

#[test]
fn arms_views_and_counts() {
    let mc = corpus(&[30, 20, 10]);
    let r = run(&mc, params(Task::AllClasses)).unwrap();
    assert_eq!(r.task.classes, ["c0", "c1", "c2"]);
    assert_eq!(r.task.class_docs, [31, 21, 10]);
    assert_eq!((r.task.unlabelled_left_out, r.task.other_left_out), (1, 0));
    // round(0.25·31) + round(0.25·21) + round(0.25·10) = 8 + 5 + 3 (2.5 rounds away from 0)
    assert_eq!(r.task.test_docs, 16);
    let names: Vec<(&str, &str)> = r.arms.iter().map(|a| (a.arm.as_str(), a.view.as_str())).collect();
    for want in [
        ("majority", "none"),
        ("nonprivate", "embedding"),
        ("nonprivate", "bag"),
        ("dp-independent", "embedding"),
        ("dp-iterative-linear", "bag"),
        ("nodp-independent", "embedding"),
        ("nodp-iterative-linear", "bag"),
    ] {
        assert!(names.contains(&want), "{want:?} missing from {names:?}");
    }
    assert_eq!(r.arms.len(), 1 + 2 * 5);
    for a in &r.arms {
        assert_eq!(a.runs.len(), 2);
        assert!((0.0..=1.0).contains(&a.accuracy_mean) && (0.0..=1.0).contains(&a.macro_f1_mean));
    }
    // Sampler arms train on per_class sequences per class.
    assert_eq!(arm(&r, "dp-independent", "embedding").n_train, 3 * 40);
    assert_eq!(arm(&r, "nodp-iterative-linear", "embedding").runs[0].features, Some(256));
    assert!(r.note.contains("NOT differentially private"));
}

#[test]
fn majority_is_the_test_prior_and_separable_classes_are_learned() {
    let mc = corpus(&[30, 20, 10]);
    let r = run(&mc, params(Task::AllClasses)).unwrap();
    let maj = arm(&r, "majority", "none");
    // Test docs with terms: c0 has 8 held out of which the empty one may be one.
    for run in &maj.runs {
        assert!(run.n_test >= 14 && run.n_test <= 16);
        let c0_with_terms = run.accuracy * run.n_test as f64;
        assert!((c0_with_terms - c0_with_terms.round()).abs() < 1e-9);
        assert!(c0_with_terms.round() >= 7.0 && c0_with_terms.round() <= 8.0, "{run:?}");
    }
    // Clusters are disjoint: the real sequences and the noiseless samplers separate them.
    for name in ["nonprivate", "nodp-independent", "nodp-iterative-linear"] {
        let a = arm(&r, name, "embedding");
        assert!(a.accuracy_mean > 0.95, "{name}: {a:?}");
        assert!(a.accuracy_mean > maj.accuracy_mean);
    }
    // With ε = 5 + 10 on this easy task the DP arms must beat the floor too.
    assert!(arm(&r, "dp-independent", "embedding").accuracy_mean > maj.accuracy_mean + 0.2, "{:#?}", r.arms.iter().map(|a| (&a.arm, &a.view, a.accuracy_mean)).collect::<Vec<_>>());
}

#[test]
fn tasks_shape_the_classes() {
    let mc = corpus(&[30, 20, 10]);
    let mut p = params(Task::OneVsRest { positive: "c1".into(), balance: true });
    p.samplers.clear();
    let r = run(&mc, p.clone()).unwrap();
    assert_eq!(r.task.classes, ["c1", REST]);
    assert_eq!(r.task.class_docs, [21, 21], "the rest is subsampled to the positive class");
    assert_eq!(r.task.other_left_out, 62 - 42);
    assert_eq!(r.arms.len(), 3, "majority and nonprivate in two views");

    p.task = Task::TopClasses { k: 2, balance: false };
    let r = run(&mc, p.clone()).unwrap();
    assert_eq!((r.task.classes.clone(), r.task.other_left_out), (vec!["c0".to_string(), "c1".to_string()], 10));
}

#[test]
fn bad_inputs_are_explained() {
    let mc = corpus(&[30, 20, 4]);
    let err = |p: EvalParams| run(&mc, p).unwrap_err().to_string();
    let e = err(params(Task::AllClasses));
    assert!(e.contains("\"c2\" has only 4 document(s)"), "{e}");
    for h in [0.0, 1.0, f64::NAN] {
        let mut p = params(Task::TopClasses { k: 2, balance: false });
        p.holdout = h;
        assert!(err(p).contains("held-out fraction"));
    }
    let e = err(params(Task::OneVsRest { positive: "nope".into(), balance: true }));
    assert!(e.contains("no document has the label \"nope\"") && e.contains("\"c0\""), "{e}");
    assert!(err(params(Task::TopClasses { k: 9, balance: false })).contains("needs at least 2"));
    let mut p = params(Task::TopClasses { k: 2, balance: false });
    p.len = 20;
    assert!(err(p).contains("keeping 10 terms"));
    let unlabelled = MatchedCorpus { docs: vec![MatchedDoc { label: None, person: None, terms: vec![1] }], ..corpus(&[]) };
    assert!(matches!(run(&unlabelled, params(Task::AllClasses)), Err(EvalError::NoLabels)));
}

#[test]
fn text_view_scores_synthetic_and_real_texts() {
    let mc = corpus(&[30, 20, 10]);
    let mut p = params(Task::AllClasses);
    p.samplers.clear();
    let mut rng = SecureRng::seeded_for_tests(3);
    let ev = Evaluation::prepare(&mc, &vocab(), p, &mut rng, &mut |_, _, _| {}).unwrap();
    let emb = embeddings();
    // A document's "text embedding": its cluster's axis plus a little of its first term.
    let text = |c: usize, t: u32| {
        let mut v = emb.get(t).unwrap().to_vec();
        v[c] += 1.0;
        v
    };
    let docs: Vec<Vec<f32>> = ev
        .documents()
        .iter()
        .map(|&i| {
            let d = &mc.docs[i];
            let c = d.label.as_deref().unwrap()[1..].parse::<usize>().unwrap();
            text(c, c as u32 * 20 + d.terms.first().map_or(0, |t| t % 20))
        })
        .collect();
    let synthetic: Vec<(Vec<f32>, String)> =
        (0..30u32).map(|k| (text((k % 3) as usize, (k % 3) * 20 + k % 20), format!("c{}", k % 3))).chain([(vec![0.0; DIM], "zz".into())]).collect();
    let sets = [("llm".to_string(), synthetic.clone())];
    let (arms, summaries) = ev.text_view(&docs, &sets, &mut |_, _, _| {}).unwrap();
    let summary = &summaries[0];
    assert_eq!((summary.used, summary.unknown_label_left_out, summary.per_class.clone()), (30, 1, vec![10, 10, 10]));
    // The same count of real training documents per class (fewer where a class has fewer).
    let same = arms.iter().find(|a| a.arm == "real-text-same-count").unwrap();
    let train_per_class = |c: usize| ev.rounds[0].split.train.iter().filter(|&&i| ev.docs[i].class == c).count();
    assert_eq!(same.n_train, (0..3).map(|c| train_per_class(c).min(10)).sum::<usize>());
    // Two sets: each gets its own pair of arms, named after it.
    let two = [("a".to_string(), synthetic.clone()), ("b".to_string(), synthetic[..12].to_vec())];
    let (arms2, summaries2) = ev.text_view(&docs, &two, &mut |_, _, _| {}).unwrap();
    let names: Vec<&str> = arms2.iter().map(|a| a.arm.as_str()).collect();
    assert_eq!(names, ["synthetic:a", "real-text-same-count:a", "synthetic:b", "real-text-same-count:b", "real-text", "majority"]);
    assert_eq!(summaries2[1].per_class, vec![4, 4, 4]);
    let find = |n: &str| arms.iter().find(|a| a.arm == n).unwrap();
    assert!(find("synthetic").accuracy_mean > 0.95 && find("real-text").accuracy_mean > 0.95);
    assert_eq!(find("majority").n_test, 16);
    assert!(matches!(ev.text_view(&docs[1..], &sets, &mut |_, _, _| {}), Err(EvalError::TextCount { .. })));
}

#[test]
fn an_arm_refused_for_size_is_reported_and_the_others_run() {
    // N = 1700 of a 1700-term list, 3 classes: the Markov release would hold 1701·1700·3 =
    // 8,675,100 noisy counts, over the cap; its noiseless arm (the exact vocabulary, at most
    // the 60 used terms) and the independent sampler are not refused.
    let n = 1700u32;
    let list: String = (0..n).map(|i| format!("term{i}\n")).collect();
    let public = PublicVocabulary::parse("v", list.as_bytes()).unwrap();
    let mut emb = embeddings();
    for t in 60..n {
        let mut v = vec![0f32; DIM];
        v[(t as usize) % DIM] = 1.0;
        emb.insert(t, &v).unwrap();
    }
    // The Markov sampler reads up to 64 terms per document.
    let mc = MatchedCorpus { keep: 64, ..corpus(&[30, 20, 10]) };
    let mut p = params(Task::AllClasses);
    p.vocab.top_n = n as usize;
    p.samplers = vec![KeyphraseSampler::Markov, KeyphraseSampler::Independent];
    p.seeds = vec![1];
    let mut rng = SecureRng::seeded_for_tests(3);
    let ev = Evaluation::prepare(&mc, &public, p, &mut rng, &mut |_, _, _| {}).unwrap();
    let r = ev.run(&emb, &mut rng, &mut |_, _, _| {}).expect("a refused arm must not stop the evaluation");
    for name in ["nonprivate", "dp-independent", "nodp-markov", "nodp-independent"] {
        assert_eq!(arm(&r, name, "embedding").runs.len(), 1, "{name}");
    }
    assert!(r.arms.iter().all(|a| a.arm != "dp-markov"), "a refused arm has no figures");
    assert_eq!(r.refused.len(), 1, "{:?}", r.refused);
    assert_eq!(r.refused[0].arm, "dp-markov");
    assert!(r.refused[0].reason.contains("8675100 noisy counts"), "{}", r.refused[0].reason);
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["refused"][0]["arm"], "dp-markov");
    // Nothing refused: no `refused` key (the report's JSON as before).
    let plain = run(&mc, params(Task::AllClasses)).unwrap();
    assert!(plain.refused.is_empty() && serde_json::to_value(&plain).unwrap().get("refused").is_none());
}

/// By default a noise-dominated class's sequences are not trained on (generation leaves them
/// out); a run where every class is noise-dominated is reported, not scored; the histogram
/// release of the same documents stands above its noise, and its sequences hold L distinct terms.
#[test]
fn noise_dominated_classes_are_flagged_and_left_out_by_default() {
    let mut mc = corpus(&[30, 20, 10]);
    // The histogram reads up to 64 terms of a document (its documents have 6).
    mc.keep = 64;
    let mut p = params(Task::AllClasses);
    p.include_noise_classes = false;
    p.samplers = vec![KeyphraseSampler::Histogram, KeyphraseSampler::Independent];
    p.no_dp_arms = false;
    let r = run(&mc, p).unwrap();
    let hist = arm(&r, "dp-histogram", "embedding");
    assert!(hist.noise_dominated.is_empty(), "{:?}", hist.noise_dominated);
    assert!(hist.full_length_share.unwrap() > 0.99, "{:?}", hist.full_length_share);
    // The DP-KDE's noise (sensitivity √2·I) swamps these small classes: each run either
    // trained without its noise-dominated classes' sequences (40 a class) or, with every class
    // flagged, was reported and not scored.
    let scored = r.arms.iter().find(|a| a.arm == "dp-independent" && a.view == "embedding").map_or(0, |a| a.runs.len());
    assert_eq!(scored + r.nothing_to_train.len(), 2, "{:?}", r.nothing_to_train);
    assert!(r.nothing_to_train.iter().all(|e| e.arm == "dp-independent" && e.reason.contains("noise-dominated")));
    if let Some(a) = r.arms.iter().find(|a| a.arm == "dp-independent" && a.view == "embedding") {
        for run in &a.runs {
            assert!(!run.noise_dominated.is_empty(), "{a:?}");
            assert_eq!(run.n_train, 40 * (3 - run.noise_dominated.len()), "{a:?}");
        }
    }
    println!("dp-independent: {scored} run(s) scored, {} not", r.nothing_to_train.len());
    // At ε_kde = 0.05 every class is noise-dominated in every run: reported, not scored.
    let mut p = params(Task::AllClasses);
    (p.include_noise_classes, p.samplers, p.no_dp_arms, p.eps_kde) = (false, vec![KeyphraseSampler::Independent], false, 0.05);
    let r = run(&mc, p).unwrap();
    assert!(r.arms.iter().all(|a| a.arm != "dp-independent"), "{:?}", r.arms);
    assert_eq!(r.nothing_to_train.len(), 2, "{:?}", r.nothing_to_train);
}

/// The DP check (`dp_check`): run settings shared by its arms.
fn check_settings(classes: &[&str]) -> crate::run::RunSettings {
    crate::run::RunSettings {
        eps_voc: 5.0,
        eps_kde: 10.0,
        // Below the list's 60 terms: Ṽ is drawn (ε_voc).
        top_n: 50,
        terms_per_doc: 6,
        len: 4,
        features: 256,
        per_class: 40,
        classes: classes.iter().map(|c| c.to_string()).collect(),
        kde_terms_per_doc: Some(6),
        ..Default::default()
    }
}

fn dp_check(mc: &MatchedCorpus, classes: &[&str], holdout: f64, seed: u64) -> (dp_check::CheckResult, crate::ledger::Spend) {
    use crate::input::classes::{ClassSet, OtherLabels};
    let settings = check_settings(classes);
    let set = ClassSet::declared(classes, OtherLabels::Drop).unwrap();
    let params = dp_check::CheckParams { samplers: vec![KeyphraseSampler::Histogram, KeyphraseSampler::IterativeLinear], holdout, eps_select: None };
    assert_eq!(params.epsilon(&settings), 5.0 + 2.0 * 10.0);
    let mut rng = SecureRng::seeded_for_tests(seed);
    // As if matched keeping what the check reads (the iterative sampler reads more terms).
    let mc = &MatchedCorpus { keep: params.keep(&settings), ..mc.clone() };
    let check = dp_check::DpCheck::prepare(mc, &set, &vocab(), &settings, params, &mut rng).unwrap();
    assert!(check.terms_to_embed().iter().all(|&t| t < 60));
    check.run(&embeddings(), &mut rng, &mut |_, _, _| {}).unwrap()
}

#[test]
fn the_dp_check_with_n_covering_the_list_draws_no_vocabulary_and_plans_no_eps_voc() {
    use crate::input::classes::{ClassSet, OtherLabels};
    let mc = corpus(&[60, 60]);
    let classes = ["c0", "c1"];
    let set = ClassSet::declared(&classes, OtherLabels::Drop).unwrap();
    let params = || dp_check::CheckParams { samplers: vec![KeyphraseSampler::Histogram], holdout: 0.3, eps_select: None };
    // As a run plans it: the list's size known (`RunPlan::new`), N = 60 covers its 60 terms.
    let covering = crate::run::RunSettings { top_n: 60, public_terms: Some(60), ..check_settings(&classes) };
    assert_eq!(params().epsilon(&covering), 10.0, "ε_kde only");
    let mc = MatchedCorpus { keep: params().keep(&covering), ..mc };
    let mut rng = SecureRng::seeded_for_tests(3);
    let check = dp_check::DpCheck::prepare(&mc, &set, &vocab(), &covering, params(), &mut rng).unwrap();
    assert_eq!(check.released(), (0..60).collect::<Vec<crate::input::public_vocab::TermId>>(), "Ṽ is the list, in its order");
    let (r, spend) = check.run(&embeddings(), &mut rng, &mut |_, _, _| {}).unwrap();
    assert_eq!((r.epsilon_train, spend.epsilon), (10.0, 10.0));
    // Settings that do not know the list covers it plan ε_voc the check would not spend: refused
    // before anything is scored.
    let unplanned = crate::run::RunSettings { public_terms: None, ..covering };
    let e = dp_check::DpCheck::prepare(&mc, &set, &vocab(), &unplanned, params(), &mut rng).err().expect("refused");
    assert!(e.to_string().contains("planned for another public list"), "{e}");
}

#[test]
fn the_dp_check_scores_every_arm_records_its_planned_epsilon_and_finds_the_signal() {
    let mc = corpus(&[60, 60]);
    let (r, spend) = dp_check(&mc, &["c0", "c1"], 0.3, 11);
    assert_eq!(r.arms.iter().map(|a| a.sampler.as_str()).collect::<Vec<_>>(), ["histogram", "iterative-linear"]);
    assert_eq!((r.epsilon, r.epsilon_train, r.epsilon_select), (25.0, 25.0, 25.0));
    assert_eq!((spend.stage.as_str(), spend.epsilon), (crate::ledger::SpendStage::UtilityCheck.name(), 25.0));
    assert_eq!(spend.params["chosen"].as_str(), r.chosen.as_deref());
    // About 30% of the 120 labelled units with terms are tested; the noise scale is 3/25.
    assert!((15..=60).contains(&r.noisy_tested), "{}", r.noisy_tested);
    // Two well-separated clusters: the histogram arm classifies nearly every test unit.
    assert!(r.arms[0].noisy_accuracy > 0.8, "{:?}", r.arms);
    assert!(r.chosen.is_some());
}

#[test]
fn the_dp_check_refuses_nothing_because_of_the_data() {
    // A declared class without documents, and a corpus so small that the test part is likely
    // empty: both run to the end (a refusal would itself say something about the data).
    let mc = corpus(&[30, 30]);
    let (r, _) = dp_check(&mc, &["c0", "c1", "c7"], 0.2, 5);
    assert_eq!(r.arms.len(), 2);
    let tiny = MatchedCorpus { docs: mc.docs[..2].to_vec(), ..corpus(&[1, 1]) };
    for seed in 0..5 {
        let (r, _) = dp_check(&tiny, &["c0", "c1"], 0.01, seed);
        assert_eq!(r.arms.len(), 2);
    }
}
