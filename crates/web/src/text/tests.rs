//! Native tests of the page's sentences (`super`): plurals, grouping, empty inputs, and that
//! the curator-only texts say no more than they should.

use super::*;
use dpkps_core::eval::dp_check::{CheckArm, CheckResult};
use dpkps_core::llm::prompt::PromptSettings;
use dpkps_core::llm::LlmSettings;
use dpkps_core::protocol::TrainResult;
use dpkps_core::sample::signal::ClassSignal;
use dpkps_core::sample::SequenceOut;

fn summary() -> CorpusSummary {
    CorpusSummary {
        documents: 1234,
        empty_skipped: 0,
        docs_without_terms: 0,
        classes: Vec::new(),
        unlabelled: 0,
        vocabulary: "MeSH".into(),
        vocabulary_terms: 28_469,
        distinct_matched: 5_000,
        spent_before: 0.0,
        earlier_runs: 0,
        persons: None,
    }
}

fn run_result() -> RunResult {
    RunResult {
        vocabulary: Vec::new(),
        sequences: Vec::new(),
        epsilon_run: 6.1,
        epsilon_total: 12.2,
        embedded_from_cache: 40,
        embedded_fresh: 60,
        report: "{}".into(),
        vocabulary_from: None,
        signals: Vec::new(),
        vocabulary_whole_list: None,
    }
}

fn seq(label: Option<&str>, words: &[&str]) -> SequenceOut {
    SequenceOut { label: label.map(str::to_string), keyphrases: words.iter().map(|w| w.to_string()).collect(), noise_dominated: false }
}

fn account() -> AccountStatus {
    AccountStatus {
        name: "clinic".into(),
        spent: 3.5,
        budget: Some(10.0),
        corpus_spent: 1.25,
        corpus_runs: 2,
        overlaps: Vec::new(),
        other_accounts: Vec::new(),
        non_dp_checks: 0,
        settings_compared: 0,
    }
}

fn job(template: &str, system: &str, sequences: &[SequenceOut]) -> Job {
    let llm = LlmSettings { endpoint: "https://llm.example/v1/".into(), model: "m".into(), frequency_penalty: 0.0, ..Default::default() };
    let prompts = PromptSettings { template: template.into(), system: system.into(), ..PromptSettings::default() };
    Job::new("j".into(), "t".into(), llm, prompts, sequences, "{}".into())
}

#[test]
fn thousands_are_grouped_by_threes_from_the_right() {
    let cases = [(0u64, "0"), (7, "7"), (999, "999"), (1_000, "1,000"), (12_345, "12,345"), (100_000, "100,000"), (1_234_567, "1,234,567")];
    for (n, want) in cases {
        assert_eq!(group_thousands(n), want);
    }
    assert_eq!(group_thousands(28_469usize), "28,469");
}

#[test]
fn sizes_switch_from_kilobytes_to_megabytes_at_a_million_bytes() {
    assert_eq!(kilobytes(0), "0.0 kB");
    assert_eq!(kilobytes(12_345), "12.3 kB");
    assert_eq!(kilobytes(999_999), "1000.0 kB");
    assert_eq!(kilobytes(1_000_000), "1.0 MB");
    assert_eq!(kilobytes(2_560_000), "2.6 MB");
}

#[test]
fn the_own_list_note_groups_its_numbers_and_says_when_it_is_done() {
    let partway = own_list_note(1_500, 20_000);
    assert!(partway.starts_with("1,500 of 20,000 terms embedded in the background so far"), "{partway}");
    let done = own_list_note(20_000, 20_000);
    assert!(done.starts_with("20,000 of 20,000 terms") && done.contains("later runs need not embed them"), "{done}");
}

#[test]
fn the_summary_names_how_many_labels_but_never_their_counts() {
    assert_eq!(classes_line(&summary()), "no labels");
    let s = CorpusSummary { classes: vec![("cardio".into(), 4_321), ("neuro".into(), 987)], ..summary() };
    let line = classes_line(&s);
    assert!(line.starts_with("2 label(s)"), "{line}");
    assert!(!line.contains("4321") && !line.contains("4,321") && !line.contains("987") && !line.contains("cardio"), "{line}");
}

#[test]
fn the_privacy_unit_is_the_person_only_with_a_person_column() {
    let doc = unit_line(&summary());
    assert!(doc.starts_with("the document: ") && doc.contains("k·ε"), "{doc}");
    let person = unit_line(&CorpusSummary { persons: Some(12_345), ..summary() });
    assert!(person.starts_with("the person: 12,345 named by the person column"), "{person}");
    assert_eq!(vocabulary_line(&summary()), "MeSH (28469 terms), 5000 distinct terms matched");
}

#[test]
fn the_ledger_note_says_what_was_spent_and_what_the_run_adds() {
    assert_eq!(ledger_note(&summary(), Some((6.1, false))), "No earlier run on this corpus in this browser. This run spends ε = 6.1.");
    let before = CorpusSummary { earlier_runs: 2, spent_before: 4.0, ..summary() };
    assert_eq!(
        ledger_note(&before, Some((2.5, false))),
        "This corpus already had 2 run(s) in this browser, spending ε = 4.000. Running again adds ε = 2.500: the total becomes ε = 6.500."
    );
    let reuse = ledger_note(&before, Some((2.5, true)));
    assert!(reuse.contains("Running again reuses the last run's private vocabulary") && reuse.ends_with("ε = 6.500."), "{reuse}");
    assert_eq!(ledger_note(&before, None), "Spent on this corpus so far: ε = 4.000 over 2 run(s).");
}

#[test]
fn the_spent_line_names_a_reused_vocabulary_only_when_there_is_one() {
    let plain = spent_line(&run_result());
    assert!(plain.starts_with("This run spent ε = 6.100; total on this corpus in this browser: ε = 12.200. 60 terms embedded by the model, 40 read"), "{plain}");
    assert!(!plain.contains("reused"));
    let reused = spent_line(&RunResult { vocabulary_from: Some(("run-3".into(), 8.0)), ..run_result() });
    assert!(reused.contains("the one run run-3 released and paid for") && reused.contains("these outputs are ε = 8.000"), "{reused}");
}

#[test]
fn top_terms_are_at_most_twenty_with_bars_against_the_largest() {
    assert!(top_terms(&run_result()).is_empty());
    let mut vocabulary: Vec<(String, i64)> = vec![("fever".into(), 200), ("cough".into(), 50), ("noise".into(), -3)];
    vocabulary.extend((0..30).map(|i| (format!("t{i}"), 1)));
    let rows = top_terms(&RunResult { vocabulary, ..run_result() });
    assert_eq!(rows.len(), 20);
    assert_eq!(rows[0], ("fever".into(), 200, "width: 100.0%".into()));
    assert_eq!(rows[1].2, "width: 25.0%");
    // A negative noisy count keeps its value but draws no bar.
    assert_eq!(rows[2], ("noise".into(), -3, "width: 0.0%".into()));
    // Every count at or below 0: no division by zero.
    let rows = top_terms(&RunResult { vocabulary: vec![("a".into(), -1)], ..run_result() });
    assert_eq!(rows[0].2, "width: 0.0%");
}

#[test]
fn the_settings_say_when_n_covers_the_list() {
    use dpkps_core::protocol::RunSettings;
    let s = RunSettings { public_terms: Some(27_589), ..RunSettings::default() };
    let note = whole_list_note(&s).expect("N = 50,000 covers 27,589 terms");
    assert!(note.contains("N = 50000 covers the whole public list (27589 terms)") && note.contains("ε_voc is not spent"), "{note}");
    assert_eq!(whole_list_note(&RunSettings { public_terms: Some(340_453), ..s.clone() }), None, "the English list is longer");
    assert_eq!(whole_list_note(&RunSettings { public_terms: None, ..s }), None, "no list loaded");
}

#[test]
fn the_whole_list_is_said_in_place_of_noisy_counts() {
    assert_eq!(whole_list_line(&run_result()), None);
    let line = whole_list_line(&RunResult { vocabulary_whole_list: Some(27_589), ..run_result() }).expect("said");
    assert!(line.contains("whole public list (27589 terms)") && line.contains("cost no ε_voc"), "{line}");
}

#[test]
fn examples_are_four_per_class_in_the_order_the_classes_come() {
    let mut sequences: Vec<SequenceOut> = (0..6).map(|i| seq(Some("b"), &[&format!("x{i}"), "y"])).collect();
    sequences.push(seq(Some("a"), &["only"]));
    sequences.push(seq(None, &["free"]));
    let ex = examples(&RunResult { sequences, ..run_result() });
    let heads: Vec<&str> = ex.iter().map(|(h, _)| h.as_str()).collect();
    assert_eq!(heads, ["b", "a", "(unlabelled)"]);
    assert_eq!(ex[0].1, ["x0 · y", "x1 · y", "x2 · y", "x3 · y"]);
    assert_eq!(ex[1].1, ["only"]);
    assert!(examples(&run_result()).is_empty());
    let n = |t: &str| SequenceOut { noise_dominated: true, ..seq(Some("n"), &[t]) };
    let sequences = vec![n("x"), n("z"), seq(Some("a"), &["y"])];
    let ex = examples(&RunResult { sequences, ..run_result() });
    assert_eq!(ex[0].0, "n (noise-dominated: not generated by default)");
    assert_eq!(ex[1].0, "a");
}

#[test]
fn signal_rows_and_noise_dominated_classes() {
    let signal = |label: Option<&str>, noise_dominated: bool, shorter_than_l: usize| ClassSignal {
        label: label.map(str::to_string),
        signal: 3.14159,
        noise_dominated,
        supported_terms: 17,
        sequences: 50,
        shorter_than_l,
    };
    let mut r = run_result();
    r.signals = vec![signal(Some("a"), false, 0), signal(None, false, 4)];
    let rows = signal_rows(&r);
    assert_eq!(rows[0], ("a".into(), "3.1".into(), "17".into(), "50".into(), false));
    assert_eq!(rows[1].0, "(all documents)");
    assert_eq!(rows[1].3, "50 (4 shorter than L)");
    assert_eq!(noise_classes(&r), None);
    r.signals.push(signal(Some("c"), true, 0));
    r.signals.push(signal(Some("d"), true, 0));
    r.sequences = vec![SequenceOut { noise_dominated: true, ..seq(Some("c"), &["x"]) }, seq(Some("a"), &["y"])];
    assert_eq!(noise_classes(&r), Some((2, 1, "c, d".into())));
}

#[test]
fn the_dp_check_cost_says_its_epsilon_and_why_it_cannot_run() {
    let cost = dp_check_cost(Some(2.0), None);
    assert!(cost.starts_with("This check costs ε = 2.000, charged to the ledger"), "{cost}");
    let unplanned = dp_check_cost(None, Some("no corpus loaded"));
    assert!(unplanned.starts_with("The check compares every sampler") && unplanned.ends_with(" Not now: no corpus loaded."), "{unplanned}");
}

#[test]
fn dp_check_flags_separate_every_class_from_some_classes() {
    let arm = |sampler: &str, noisy: &[&str]| CheckArm {
        sampler: sampler.into(),
        noisy_correct: 10,
        noisy_accuracy: 1.2,
        noise_dominated: noisy.iter().map(|c| c.to_string()).collect(),
    };
    let result = |arms: Vec<CheckArm>| CheckResult {
        arms,
        noisy_tested: 100,
        chosen: None,
        epsilon: 1.0,
        epsilon_train: 0.5,
        epsilon_select: 0.5,
        holdout: 0.2,
        noise_scale: 2.0,
        classes: 2,
    };
    assert_eq!(dp_check_flags(&result(vec![arm("kde", &[])])), None);
    let flags = dp_check_flags(&result(vec![arm("kde", &["a", "b"]), arm("histogram", &["a"]), arm("markov", &[])])).unwrap();
    assert_eq!(
        flags,
        "Noise-dominated in every class, so nothing would be generated (scored 0): kde. \
         Noise-dominated in some classes, left out of training as generation would leave them out: histogram (1 of 2)."
    );
    // The bar is clamped to the drawing; the figure is not.
    assert_eq!(dp_arm_row(&arm("kde", &[])), ("kde".into(), "width: 100.0%".into(), "1.200".into()));
    let note = dp_check_note("run-9", &result(Vec::new()));
    assert!(note.contains("run run-9 with ε = 1.000") && note.contains("about 80% of the documents") && note.contains("noisy number tested: 100"), "{note}");
}

#[test]
fn the_account_line_with_and_without_a_budget() {
    assert_eq!(account_status(&account()), "Account “clinic”: ε = 3.500 spent of a budget of ε = 10. This corpus: ε = 1.250 over 2 run(s).");
    let none = account_status(&AccountStatus { budget: None, ..account() });
    assert!(none.contains("spent (no budget yet: set one before the first run)."), "{none}");
}

#[test]
fn overlaps_are_warned_of_from_the_threshold_up() {
    let below = dpkps_core::ledger::overlap::WARN_OVERLAP - 0.01;
    assert_eq!(overlap_warning(&account()), None);
    assert_eq!(overlap_warning(&AccountStatus { overlaps: vec![below], ..account() }), None);
    let own = overlap_warning(&AccountStatus { overlaps: vec![0.5, 0.3], ..account() }).unwrap();
    assert!(own.starts_with("This corpus overlaps an earlier corpus of the account “clinic” by about 50% of documents."), "{own}");
    let both = overlap_warning(&AccountStatus { overlaps: vec![0.5], other_accounts: vec![("ward".into(), 0.25)], ..account() }).unwrap();
    assert!(both.contains("“clinic” by about 50%") && both.contains("the account “ward” by about 25%"), "{both}");
}

#[test]
fn the_checks_note_says_none_or_how_many() {
    assert_eq!(checks_note(&account()), "No non-DP utility check has been run on this corpus.");
    let some = checks_note(&AccountStatus { non_dp_checks: 3, settings_compared: 12, ..account() });
    assert!(some.starts_with("A non-DP utility check has been run on this corpus 3 time(s), comparing 12 setting(s)."), "{some}");
}

#[test]
fn replay_lines_in_each_state() {
    let base = ReplayFacts { generated: true, corpus: true, ..ReplayFacts::default() };
    assert_eq!(replay_line(&ReplayFacts::default()), "Nothing generated yet to check.");
    let running = replay_line(&ReplayFacts { running: Some((3, 4)), ..base.clone() });
    assert_eq!(running, "Checking for replay… 75% of the corpus read. The corpus and audit log downloads are disabled until it ends.");
    assert!(replay_line(&ReplayFacts { running: Some((0, 0)), ..base.clone() }).starts_with("Checking for replay… The corpus"));
    assert_eq!(
        replay_line(&ReplayFacts { checked: Some((12, 0)), ..base.clone() }),
        "Checked for replay: none of the 12 generated documents repeats private text beyond the thresholds."
    );
    let dropped = replay_line(&ReplayFacts { checked: Some((12, 2)), drop: true, ..base.clone() });
    assert!(dropped.contains("2 of 12 generated documents flagged; they are left out"), "{dropped}");
    let kept = replay_line(&ReplayFacts { checked: Some((12, 2)), ..base.clone() });
    assert!(kept.contains("you chose to keep them"), "{kept}");
    let no_corpus = replay_line(&ReplayFacts { corpus: false, ..base.clone() });
    assert!(no_corpus.starts_with("Not checked for replay: load the private corpus (step 1)"), "{no_corpus}");
}

#[test]
fn replay_lines_count_earlier_checks_in_singular_and_plural() {
    let earlier = |flagged, since, drop| ReplayFacts { generated: true, corpus: true, earlier: Some((10, flagged, since)), drop, ..ReplayFacts::default() };
    assert_eq!(
        replay_line(&earlier(1, 1, true)),
        "Not checked for replay since more documents were generated. The document flagged by the check before (1 of 10) stays left out \
         of the corpus downloads. The document generated since is not checked: the downloads hold it."
    );
    let plural = replay_line(&earlier(3, 2, true));
    assert!(plural.contains(" The 3 documents flagged by the check before (of 10) stay left out"), "{plural}");
    assert!(plural.ends_with(" The 2 documents generated since are not checked: the downloads hold them."), "{plural}");
    let none = replay_line(&earlier(0, 0, false));
    assert_eq!(none, "Not checked for replay against the corpus loaded since. None of the 10 documents checked before was flagged.");
    let one_doc = replay_line(&ReplayFacts { earlier: Some((1, 0, 0)), ..earlier(0, 0, false) });
    assert!(one_doc.ends_with("None of the 1 document checked before was flagged."), "{one_doc}");
    let kept = replay_line(&earlier(2, 0, false));
    assert!(kept.ends_with("The check before flagged 2 of 10 documents; you chose to keep them in the downloads."), "{kept}");
}

#[test]
fn flagged_answers_of_the_audit_log_agree_in_number() {
    let base = ReplayFacts { generated: true, corpus: true, checked: Some((5, 0)), ..ReplayFacts::default() };
    let one = replay_line(&ReplayFacts { answers_flagged: 1, ..base.clone() });
    assert!(one.contains(" 1 other answer in the audit log (") && one.contains(") repeats private text"), "{one}");
    let two = replay_line(&ReplayFacts { answers_flagged: 2, ..base });
    assert!(two.contains(" 2 other answers in the audit log (") && two.contains(") repeat private text"), "{two}");
}

#[test]
fn a_flagged_row_shows_the_span_that_flagged_it() {
    let j = job("{keyphrases}", "", &[seq(Some("cardio"), &["x"]), seq(None, &["y"])]);
    let flag_run = ReplayParams::default().flag_run;
    let doc = |index, outside| DocReplay {
        index,
        words: 100,
        longest_run: 12,
        run_outside_keyphrases: outside,
        rare_ngrams: 1,
        flagged: true,
        longest_span: Some("the long run".into()),
        rare_span: Some("a rare one".into()),
    };
    assert_eq!(replay_row(&doc(0, flag_run), &j), ["#1", "cardio", "12", &flag_run.to_string(), "1", "the long run"].map(String::from));
    let by_rare = replay_row(&doc(1, flag_run - 1), &j);
    assert_eq!((by_rare[0].as_str(), by_rare[1].as_str(), by_rare[5].as_str()), ("#2", "", "a rare one"));
}

#[test]
fn what_leaves_names_only_what_the_prompts_carry() {
    let (first, second) = leaves_summary(&job("Write about {keyphrases}.", "", &[seq(Some("a"), &["x"]), seq(Some("b"), &["y"])]));
    assert!(first.starts_with("2 requests to https://llm.example/v1/chat/completions, about "), "{first}");
    assert!(first.ends_with("Each holds your template filled with one sequence's DP keyphrases"), "{first}");
    assert_eq!(second, ", and the model settings (model, temperature, max tokens); nothing else.");

    let labelled = [seq(Some("a"), &["x"]), seq(None, &["y"])];
    let mut j = job("{keyphrases} as a {label}", "You write.", &labelled);
    j.keyed = true;
    j.llm.frequency_penalty = 0.5;
    let (first, second) = leaves_summary(&j);
    assert!(
        first.ends_with("Each holds your system message, your template filled with one sequence's DP keyphrases, its class name (declared by you) and the document type"),
        "{first}"
    );
    assert_eq!(second, ", and the model settings (model, temperature, max tokens, frequency penalty); nothing else but your API key, in the authorization header.");
}

#[test]
fn lists_are_joined_with_commas_and_a_final_and() {
    assert_eq!(join_and(&[]), "");
    assert_eq!(join_and(&["a"]), "a");
    assert_eq!(join_and(&["a", "b"]), "a and b");
    assert_eq!(join_and(&["a", "b", "c"]), "a, b and c");
}

#[test]
fn prompts_are_shown_three_first_and_all_numbered() {
    let seqs: Vec<SequenceOut> = (0..5).map(|i| seq(None, &[&format!("k{i}")])).collect();
    let j = job("kp: {keyphrases}", "", &seqs);
    let sample = prompt_sample(&j);
    assert_eq!(sample.split("\n\n").count(), 3);
    assert!(sample.contains("kp: k2") && !sample.contains("kp: k3"), "{sample}");
    let all = all_prompts(&j);
    assert_eq!(all.lines().count(), 5);
    assert!(all.starts_with("#1 kp: k0") && all.ends_with("#5 kp: k4"), "{all}");
    assert_eq!(all_prompts(&job("{keyphrases}", "", &[])), "");
}

#[test]
fn the_training_line_reports_helpers_and_what_was_left_out() {
    let mut r = TrainResult {
        classes: vec!["a".into(), "b".into()],
        counts: dpkps_core::adapt::summary::Counts { labelled: 100, labelled_without_label: 0, unlabelled: 50, test: 20, test_unknown_label: 0 },
        models: Vec::new(),
        predictions_csv: String::new(),
        predictions_jsonl: String::new(),
        model: Vec::new(),
        embed_seconds: 15.0,
        train_seconds: 2.5,
        embedded: 150,
        reused: 0,
        by_helpers: 0,
        helpers: 0,
    };
    assert_eq!(
        trained_line(&r),
        "Trained on 100 synthetic documents in 2 classes; 50 of your unlabelled documents; 20 test documents scored. \
         Embedding 150 documents took 15.0 s (0.10 s a document; this worker alone), training 2.5 s."
    );
    r.helpers = 1;
    r.by_helpers = 70;
    assert!(trained_line(&r).contains("(0.10 s a document; 70 of them by 1 helper worker)"));
    r.helpers = 3;
    r.reused = 5;
    assert!(trained_line(&r).contains("by 3 helper workers); 5 more were embedded by an earlier training in this page, training"));
    r.counts.unlabelled = 1;
    r.counts.labelled_without_label = 4;
    r.counts.test_unknown_label = 2;
    let line = trained_line(&r);
    assert!(line.contains(" 4 synthetic documents without a label were left out."), "{line}");
    assert!(line.contains(" 2 test documents have a label that is none of the classes"), "{line}");
    assert!(line.contains("nothing to adapt to: the plain classifier was trained."), "{line}");
    // Nothing embedded: no division by zero.
    r.embedded = 0;
    assert!(trained_line(&r).contains("(0.00 s a document;"));
}

#[test]
fn model_names_and_scores() {
    assert_eq!(model_title("coral", 0.5), "Adapted (CORAL term, λ = 0.5)");
    assert_eq!(model_title("plain", 0.5), "Plain (no CORAL term)");
    assert_eq!(model_short("coral"), "adapted (CORAL term)");
    assert_eq!(model_short("plain"), "plain");
    assert_eq!(fixed3(0.12345), "0.123");
}

#[test]
fn reports_that_do_not_read_add_nothing() {
    assert_eq!(chosen_by_line("not json"), None);
    assert_eq!(rerun_cost(&run_result()), "ε = 6.100");
    assert!(chosen_by_note("run-4").starts_with("Chosen by the DP utility check run-4:"));
}

#[test]
fn an_arm_row_says_what_share_of_nonprivate_it_keeps() {
    let arm = |name: &str, ratio: Option<dpkps_core::eval::metrics::Spread>| ArmReport {
        arm: name.into(),
        view: "embedding".into(),
        accuracy_mean: 0.7712,
        accuracy_std: 0.0151,
        macro_f1_mean: 0.75,
        macro_f1_std: 0.0,
        accuracy_ratio: ratio,
        n_train: 10,
        n_test: 5,
        full_length_share: None,
        noise_dominated_per_run: 0.0,
        noise_dominated: Vec::new(),
        runs: Vec::new(),
    };
    let dp = arm_row(&arm("dp-histogram", Some(dpkps_core::eval::metrics::Spread { mean: 0.983, std: 0.0152 })));
    assert_eq!(dp, ("dp-histogram · embedding".into(), "width: 77.1%".into(), "0.77 ± 0.02".into(), "macro-F1 0.75 · keeps 0.98 ± 0.02".into()));
    assert_eq!(arm_row(&arm("nonprivate", None)).3, "macro-F1 0.75", "no share for the baseline itself");
}
