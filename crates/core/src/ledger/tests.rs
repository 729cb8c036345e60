//! Tests of the ledger: composition, merging, accounts, and the checks on what is read.
mod basics {
    use super::super::*;

    fn spend(stage: &str, eps: f64, scope: Scope) -> Spend {
        Spend { stage: stage.into(), mechanism: "m".into(), epsilon: eps, params: serde_json::Value::Null, scope }
    }

    fn part(l: &str) -> Scope {
        Scope::Partition { label: l.into() }
    }

    #[test]
    fn stages_add_and_disjoint_classes_take_the_max() {
        let mut run = Run::new("r".into(), "t".into());
        run.spends.push(spend("vocabulary", 1.0, Scope::AllDocuments));
        run.spends.push(spend("kde", 2.0, part("a")));
        run.spends.push(spend("kde", 2.0, part("a")));
        run.spends.push(spend("kde", 3.0, part("b")));
        // vocabulary 1 + kde max(a: 4, b: 3) = 5
        assert_eq!(run.epsilon(), 5.0);
    }

    #[test]
    fn reruns_on_the_same_corpus_add_up_and_are_kept_across_saves() {
        let mut book = LedgerBook::default();
        for i in 0..2 {
            let mut run = Run::new(format!("r{i}"), "t".into());
            run.spends.push(spend("vocabulary", 1.5, Scope::AllDocuments));
            book.record("fp", run);
        }
        let book = LedgerBook::from_json(&book.to_json()).unwrap();
        assert_eq!(book.ledger("fp").total_epsilon(), 3.0);
        assert_eq!(book.ledger("other").total_epsilon(), 0.0);
        assert_eq!(book.ledger("fp").epsilon_by_stage()["vocabulary"], 3.0);
        assert!(book.check_spend(Holder::Corpus("fp"), "fp", &[], 1.0, 4.0).is_ok());
        let err = book.check_spend(Holder::Corpus("fp"), "fp", &[], 1.5, 4.0).unwrap_err();
        assert!(err.to_string().contains("4.5"), "{err}");
        assert!(LedgerBook::from_json("{").is_err());
        // A run recorded after its first stage and completed later is counted once.
        let mut run = Run::new("r9".into(), "t".into());
        run.spends.push(spend("vocabulary", 1.0, Scope::AllDocuments));
        let mut book = book;
        book.extend_run("fp", &run);
        run.spends.push(spend("kde", 2.0, part("a")));
        book.extend_run("fp", &run);
        assert_eq!(book.ledger("fp").runs.len(), 3);
        assert_eq!(book.ledger("fp").total_epsilon(), 6.0);
    }
}

mod accounts {
    use super::super::*;
    use crate::input::corpus::{doc_hash, CorpusKeys};

    fn run(id: &str, eps: f64, account: Option<&str>) -> Run {
        let mut r = Run::new(id.into(), "t".into());
        r.account = account.map(str::to_string);
        r.spends.push(Spend {
            stage: "vocabulary".into(),
            mechanism: "m".into(),
            epsilon: eps,
            params: serde_json::Value::Null,
            scope: Scope::AllDocuments,
        });
        r
    }

    fn keys(range: std::ops::Range<usize>) -> CorpusKeys {
        let doc_hashes: Vec<[u8; 32]> = range.map(|i| doc_hash(&format!("doc {i}"))).collect();
        CorpusKeys { fingerprint: crate::input::corpus::corpus_key(&doc_hashes), legacy: String::new(), doc_hashes, ..CorpusKeys::default() }
    }

    #[test]
    fn import_merges_runs_by_id_without_losing_or_double_counting() {
        let mut here = LedgerBook::default();
        here.extend_run("fp", &run("a", 1.0, Some("clinic")));
        here.extend_run("fp", &run("b", 2.0, Some("clinic")));
        // The other machine: run a again (same record), b with a later stage, c new, d on another corpus.
        let mut there = LedgerBook::from_json(&here.to_json()).unwrap();
        let mut b = run("b", 2.0, Some("clinic"));
        b.spends.push(run("x", 3.0, None).spends.remove(0));
        b.spends[1].stage = "kde".into();
        there.extend_run("fp", &b);
        there.extend_run("fp", &run("c", 0.5, Some("clinic")));
        there.extend_run("fp2", &run("d", 0.25, Some("clinic")));
        there.record_check("fp", UtilityCheck { id: "u1".into(), when: "t".into(), settings_compared: 5 });
        there.accounts.insert("clinic".into(), Account { budget: Some(10.0), ..Account::default() });
        // Through JSON, as an export file travels.
        let exported = there.to_json();
        let got = here.merge(&LedgerBook::from_json(&exported).unwrap());
        assert_eq!(got, MergeSummary { runs_added: 2, runs_extended: 1, checks_added: 1, conflicts: 0, foreign_runs: 0 });
        assert_eq!(here.ledger("fp").total_epsilon(), 1.0 + 5.0 + 0.5);
        assert_eq!(here.spent_for(Holder::Account("clinic"), "fp", &[]), 6.5 + 0.25);
        assert_eq!(here.ledger("fp").utility_checks.len(), 1);
        // Importing the same file again changes nothing; the lower budget wins.
        here.accounts.get_mut("clinic").unwrap().budget = Some(8.0);
        assert_eq!(here.merge(&LedgerBook::from_json(&exported).unwrap()), MergeSummary::default());
        assert_eq!(here.ledger("fp").total_epsilon(), 6.5);
        assert_eq!(here.accounts["clinic"].budget, Some(8.0));
        // Importing into an empty book restores the totals.
        let mut fresh = LedgerBook::default();
        fresh.merge(&here);
        assert_eq!(fresh.spent_for(Holder::Account("clinic"), "fp", &[]), here.spent_for(Holder::Account("clinic"), "fp", &[]));
    }

    #[test]
    fn an_import_that_extends_a_run_keeps_what_the_run_was_here() {
        let mut here = LedgerBook::default();
        here.extend_run("fp", &run("a", 1.0, Some("clinic")));
        // The imported record holds every spend and one more, but names another account and unit.
        let mut a = run("a", 1.0, Some("elsewhere"));
        a.person_column = Some("patient".into());
        a.spends.push(Spend { stage: "kde".into(), mechanism: "m".into(), epsilon: 2.0, params: serde_json::Value::Null, scope: Scope::AllDocuments });
        let mut there = LedgerBook::default();
        there.extend_run("fp", &a);
        let got = here.merge(&there);
        assert_eq!((got.runs_extended, got.conflicts), (1, 1));
        let kept = &here.ledger("fp").runs[0];
        assert_eq!((kept.account.as_deref(), kept.person_column.as_deref(), kept.epsilon()), (Some("clinic"), None, 3.0));
    }

    #[test]
    fn a_run_that_reused_a_vocabulary_travels_and_adds_only_its_own_spends() {
        let mut here = LedgerBook::default();
        here.extend_run("fp", &run("a", 2.0, Some("clinic")));
        let mut b = Run::new("b".into(), "t".into());
        b.account = Some("clinic".into());
        b.vocabulary_from = Some("a".into());
        b.spends.push(Spend { stage: "kde".into(), mechanism: "m".into(), epsilon: 4.0, params: serde_json::Value::Null, scope: Scope::Partition { label: "x".into() } });
        here.extend_run("fp", &b);
        assert_eq!(here.ledger("fp").total_epsilon(), 6.0);
        // Who paid for the reused Ṽ: run a, under its account, at ε_voc = 2.
        let a = &here.ledger("fp").runs[0];
        assert!(a.paid_for_vocabulary(2.0, Some("clinic"), None));
        assert!(!a.paid_for_vocabulary(2.5, Some("clinic"), None), "paid less than asked");
        assert!(!a.paid_for_vocabulary(2.0, None, None), "another account");
        assert!(!here.ledger("fp").runs[1].paid_for_vocabulary(0.1, Some("clinic"), None), "a reusing run paid for none");
        // Exported and imported: the link survives and nothing is counted twice.
        let mut fresh = LedgerBook::default();
        fresh.merge(&LedgerBook::from_json(&here.to_json()).unwrap());
        assert_eq!(fresh.ledger("fp").runs[1].vocabulary_from.as_deref(), Some("a"));
        assert_eq!(fresh.ledger("fp").total_epsilon(), 6.0);
        assert_eq!(fresh.merge(&here), MergeSummary::default());
    }

    #[test]
    fn account_budget_counts_every_corpus_of_the_account() {
        let mut book = LedgerBook::default();
        book.extend_run("old", &run("a", 3.0, Some("clinic")));
        book.extend_run("new", &run("b", 1.0, None));
        book.extend_run("other", &run("c", 7.0, Some("elsewhere")));
        book.accounts.insert("clinic".into(), Account { budget: Some(6.0), ..Account::default() });
        let clinic = Holder::Account("clinic");
        assert_eq!(book.spent_for(clinic, "new", &[]), 4.0);
        assert!(book.check_spend(clinic, "new", &[], 2.0, 6.0).is_ok());
        let err = book.check_spend(clinic, "new", &[], 2.5, 6.0).unwrap_err();
        assert!(err.to_string().contains("6.5") && err.to_string().contains("clinic"), "{err}");
        // A corpus of another account that overlaps this one counts too.
        assert_eq!(book.spent_for(clinic, "new", &["other".into()]), 11.0);
    }

    #[test]
    fn a_ledger_under_the_legacy_key_is_adopted_not_lost() {
        let mut book = LedgerBook::default();
        book.extend_run("legacy", &run("a", 1.5, None));
        book.extend_run("new", &run("b", 1.0, None));
        assert!(book.adopt_legacy("legacy", "new"));
        assert_eq!(book.ledger("new").total_epsilon(), 2.5);
        assert!(!book.ledgers.contains_key("legacy"));
        assert!(!book.adopt_legacy("legacy", "new"));
        // Version 1 files (no accounts) are still read.
        let v1 = r#"{"version":1,"ledgers":{"f":{"fingerprint":"f","runs":[{"id":"r","started":"t","spends":[]}]}}}"#;
        assert_eq!(LedgerBook::from_json(v1).unwrap().ledger("f").runs.len(), 1);
    }

    #[test]
    fn overlapping_corpora_of_an_account_are_found() {
        let mut book = LedgerBook::default();
        let first = keys(0..1000);
        book.note_corpus("clinic", &first, || [9u8; 32]);
        book.note_corpus("clinic", &first, || panic!("the account has a key"));
        assert_eq!(book.accounts["clinic"].corpora.len(), 1);
        // 900 of the same documents plus 100 new: a new key, but the overlap is found.
        let second = keys(100..1100);
        assert_ne!(second.fingerprint, first.fingerprint);
        let o = book.overlaps("clinic", &second);
        assert_eq!(o.len(), 1);
        assert!(o[0].1 >= crate::ledger::overlap::WARN_OVERLAP && o[0].1 > 0.6, "{o:?}");
        // A disjoint corpus, and the corpus itself, raise nothing.
        assert!(book.overlaps("clinic", &keys(5000..6000))[0].1 < crate::ledger::overlap::WARN_OVERLAP);
        assert!(book.overlaps("clinic", &first).is_empty());
        assert!(book.overlaps("elsewhere", &second).is_empty());
        // The sketch is all that is stored about the documents: 64 numbers, no count.
        let json = book.to_json();
        assert!(book.accounts["clinic"].corpora[0].sketch.values.len() == crate::ledger::overlap::SKETCH_K);
        assert!(!json.contains("doc 1"));
    }
}

mod checks {
    use super::super::*;

    fn book_with(spend: &str) -> String {
        format!(
            r#"{{"version": 2, "ledgers": {{"fp": {{"fingerprint": "fp", "runs": [{{"id": "r1", "started": "t", "spends": [{spend}]}}]}}}}}}"#
        )
    }

    fn spend(stage: &str, eps: &str, scope: &str) -> String {
        format!(r#"{{"stage": "{stage}", "mechanism": "m", "epsilon": {eps}, "params": null, "scope": {scope}}}"#)
    }

    const ALL: &str = r#"{"kind": "all_documents"}"#;

    #[test]
    fn a_well_formed_ledger_is_read() {
        let b = LedgerBook::from_json(&book_with(&spend("kde", "0.5", r#"{"kind": "partition", "label": "a"}"#))).unwrap();
        assert_eq!(b.ledger("fp").total_epsilon(), 0.5);
    }

    #[test]
    fn a_spend_it_cannot_account_for_refuses_the_whole_book() {
        for (bad, why) in [
            (spend("vocabulary", "-1", ALL), "ε = -1"),
            (spend("vocabulary", "0", ALL), "ε = 0"),
            (spend("vocabulary", "1e9", ALL), "ε = 1000000000"),
            (spend("tuning", "1", ALL), "unknown stage \"tuning\""),
            (spend("kde", "1", r#"{"kind": "partition", "label": " "}"#), "a class without a name"),
        ] {
            let good = spend("vocabulary", "1", ALL);
            let e = LedgerBook::from_json(&book_with(&format!("{good}, {bad}"))).unwrap_err().to_string();
            assert!(e.starts_with("the privacy ledger was refused, nothing of it was used: corpus fp, run r1: "), "{e}");
            assert!(e.contains(why), "{why}: {e}");
        }
        let no_id = r#"{"version": 2, "ledgers": {"fp": {"fingerprint": "fp", "runs": [{"id": "", "started": "t", "spends": []}]}}}"#;
        assert!(LedgerBook::from_json(no_id).unwrap_err().to_string().contains("the run has no id"));
        let budget = r#"{"version": 2, "ledgers": {}, "accounts": {"clinic": {"budget": -2}}}"#;
        assert!(LedgerBook::from_json(budget).unwrap_err().to_string().contains("“clinic” has a budget of -2"));
        // An import is read by the same function: refused before anything is merged.
        let mut here = LedgerBook::default();
        if let Ok(other) = LedgerBook::from_json(&book_with(&spend("vocabulary", "-5", ALL))) {
            here.merge(&other);
        }
        assert!(here.ledgers.is_empty());
    }

    #[test]
    fn a_run_recorded_differently_on_both_sides_never_counts_less() {
        let s = |stage: &str, eps: f64, label: &str| Spend {
            stage: stage.into(),
            mechanism: "m".into(),
            epsilon: eps,
            params: serde_json::Value::Null,
            scope: Scope::Partition { label: label.into() },
        };
        let mut mine = Run::new("r".into(), "t".into());
        mine.spends = vec![s("kde", 1.0, "a"), s("kde", 1.0, "b")];
        let mut theirs = Run::new("r".into(), "t".into());
        theirs.spends = vec![s("kde", 2.0, "a")];
        let (mut here, mut other) = (LedgerBook::default(), LedgerBook::default());
        here.extend_run("fp", &mine);
        other.extend_run("fp", &theirs);
        let got = here.merge(&other);
        assert_eq!(got.conflicts, 1);
        let total = here.ledger("fp").total_epsilon();
        assert!(total >= mine.epsilon() && total >= theirs.epsilon(), "merged {total}");
        assert_eq!(here.ledger("fp").runs.len(), 1);
        // Merging again adds nothing more.
        let before = here.clone();
        assert_eq!(here.merge(&other), MergeSummary::default());
        assert_eq!(here, before);
    }
}

/// The budget rules (`budget`): required first, only lowered unless a raise is confirmed,
/// every change recorded and kept through an import, overlapping corpora of any account counted.
mod budgets {
    use super::super::*;

    fn run(id: &str, eps: f64, account: Option<&str>) -> Run {
        let mut r = Run::new(id.into(), "t".into());
        r.account = account.map(String::from);
        r.spends.push(Spend { stage: "kde".into(), mechanism: "m".into(), epsilon: eps, params: serde_json::Value::Null, scope: Scope::AllDocuments });
        r
    }

    #[test]
    fn a_budget_is_required_first_and_then_only_lowered_unless_a_raise_is_confirmed() {
        let mut book = LedgerBook::default();
        for holder in [Holder::Account("clinic"), Holder::Corpus("fp")] {
            let err = book.budget_in_force(holder, None, false).unwrap_err();
            assert!(matches!(err, LedgerError::NoBudget { .. }) && err.to_string().contains("before its first run"), "{err}");
            assert_eq!(book.budget_in_force(holder, Some(5.0), false).unwrap(), 5.0);
            book.set_budget(holder, 5.0, "t1", "r1");
            // Later runs are held to the stored one; lower replaces it; higher needs the confirmation.
            assert_eq!(book.budget_in_force(holder, None, false).unwrap(), 5.0);
            assert_eq!(book.budget_in_force(holder, Some(3.0), false).unwrap(), 3.0);
            let err = book.budget_in_force(holder, Some(8.0), false).unwrap_err();
            assert!(matches!(err, LedgerError::RaiseNotConfirmed { stored, given, .. } if stored == 5.0 && given == 8.0), "{err}");
            assert!(err.to_string().contains("--raise-budget"), "{err}");
            assert_eq!(book.budget_in_force(holder, Some(8.0), true).unwrap(), 8.0);
            book.set_budget(holder, 3.0, "t2", "r2");
            book.set_budget(holder, 3.0, "t2b", "r2b");
            book.set_budget(holder, 8.0, "t3", "r3");
            let changes = book.budget_changes(holder);
            assert_eq!(changes.iter().map(|c| (c.old, c.new)).collect::<Vec<_>>(), [(None, 5.0), (Some(5.0), 3.0), (Some(3.0), 8.0)], "the same budget again is no change");
            assert!(changes[2].describe().starts_with("raised from 3 to 8 (confirmed by the curator) at t3 (run r3)"), "{}", changes[2].describe());
        }
        // The account's and the corpus's budgets are separate holders.
        assert!(book.budget_in_force(Holder::Corpus("other"), None, false).is_err());
    }

    #[test]
    fn budgets_and_their_history_survive_saves_and_imports_and_the_lower_budget_wins() {
        let mut here = LedgerBook::default();
        here.set_budget(Holder::Account("clinic"), 10.0, "t1", "a");
        here.set_budget(Holder::Corpus("fp"), 4.0, "t1", "b");
        let mut there = LedgerBook::from_json(&here.to_json()).unwrap();
        there.set_budget(Holder::Account("clinic"), 6.0, "t2", "c");
        there.set_budget(Holder::Corpus("fp"), 9.0, "t2", "d");
        here.merge(&LedgerBook::from_json(&there.to_json()).unwrap());
        assert_eq!(here.stored_budget(Holder::Account("clinic")), Some(6.0));
        assert_eq!(here.stored_budget(Holder::Corpus("fp")), Some(4.0), "an imported raise does not raise");
        assert_eq!(here.budget_changes(Holder::Account("clinic")).len(), 2);
        assert_eq!(here.budget_changes(Holder::Corpus("fp")).len(), 2, "the imported change is on record");
        // A stored history that is not a budget is refused with the rest of the book.
        let bad = here.to_json().replace("\"new\": 6.0", "\"new\": -6.0");
        assert!(LedgerBook::from_json(&bad).unwrap_err().to_string().contains("budget of -6"));
    }

    #[test]
    fn a_new_account_name_or_none_is_held_to_every_budget_set_on_the_same_documents() {
        let mut book = LedgerBook::default();
        let x = crate::input::corpus::CorpusKeys { fingerprint: "X".into(), doc_hashes: vec![[1; 32], [2; 32]], ..Default::default() };
        book.extend_run("X", &run("a", 5.0, Some("clinic")));
        book.note_corpus("clinic", &x, || [3; 32]);
        book.set_budget(Holder::Account("clinic"), 5.0, "t", "a");
        book.set_budget(Holder::Corpus("X"), 8.0, "t", "b");
        // Under a fresh name the run brings its own budget, but clinic's (spent) and X's own cover X.
        let covering = book.covering_budgets(Holder::Account("fresh"), "X", &[]);
        assert_eq!(covering, [(Holder::Corpus("X"), 8.0), (Holder::Account("clinic"), 5.0)]);
        let refused = covering.iter().any(|&(h, b)| book.check_spend(h, "X", &[], 0.5, b).is_err());
        assert!(refused, "clinic's budget of 5 is spent: another name must not run on X");
        // Without an account: X's own budget is the holder's, clinic's still covers it.
        assert_eq!(book.covering_budgets(Holder::Corpus("X"), "X", &[]), [(Holder::Account("clinic"), 5.0)]);
        // A corpus clinic never recorded, and no overlap: nothing else covers it.
        assert!(book.covering_budgets(Holder::Account("fresh"), "Y", &[]).is_empty());
        assert_eq!(book.covering_budgets(Holder::Account("fresh"), "Y", &["X".into()]), [(Holder::Account("clinic"), 5.0)]);
    }

    #[test]
    fn a_corpus_of_any_account_that_overlaps_counts_against_the_budget() {
        use crate::input::corpus::CorpusKeys;
        let hashes = |r: std::ops::Range<u32>| -> Vec<[u8; 32]> {
            r.map(|i| {
                let mut h = [0u8; 32];
                h[..4].copy_from_slice(&i.to_le_bytes());
                h
            })
            .collect()
        };
        let keys = |fp: &str, r| CorpusKeys { fingerprint: fp.into(), legacy: String::new(), doc_hashes: hashes(r), ..CorpusKeys::default() };
        let mut book = LedgerBook::default();
        // Corpus A under the account "wards", 6 spent; corpus B, mostly A, under "research".
        book.extend_run("A", &run("a", 6.0, Some("wards")));
        book.note_corpus("wards", &keys("A", 0..500), || [7; 32]);
        book.extend_run("C", &run("c", 2.0, Some("other")));
        book.note_corpus("other", &keys("C", 5000..5400), || [9; 32]);
        let b = keys("B", 100..600);
        let over = book.overlapping(&b);
        assert_eq!(over.iter().map(|(a, fp, _)| (a.as_str(), fp.as_str())).collect::<Vec<_>>(), [("wards", "A")], "{over:?}");
        assert!(over[0].2 > 0.6, "{over:?}");
        let fps: Vec<String> = over.into_iter().map(|(_, fp, _)| fp).collect();
        let research = Holder::Account("research");
        assert_eq!(book.spent_for(research, "B", &fps), 6.0);
        assert!(book.check_spend(research, "B", &fps, 5.0, 10.0).is_err(), "6 spent on the people of A, plus 5, is over 10");
        assert!(book.check_spend(Holder::Corpus("B"), "B", &fps, 4.0, 10.0).is_ok());
    }

    #[test]
    fn a_run_without_an_account_on_an_unsketched_corpus_counts_against_every_budget() {
        use crate::input::corpus::{doc_hash, CorpusKeys};
        let keys = |r: std::ops::Range<usize>| {
            let doc_hashes: Vec<[u8; 32]> = r.map(|i| doc_hash(&format!("doc {i}"))).collect();
            CorpusKeys { fingerprint: crate::input::corpus::corpus_key(&doc_hashes), doc_hashes, ..CorpusKeys::default() }
        };
        let mut book = LedgerBook::default();
        // An older version's run: no account, so no sketch of its corpus.
        book.extend_run("OLD", &run("old", 3.0, None));
        book.extend_run("A", &run("a", 1.0, Some("wards")));
        book.note_corpus("wards", &keys(0..50), || [7; 32]);
        assert_eq!(book.spent_for(Holder::Account("wards"), "NEW", &[]), 4.0, "whether OLD overlaps NEW cannot be told");
        // Read again under an account, it is sketched: then it counts only where it overlaps.
        book.note_corpus("wards", &CorpusKeys { fingerprint: "OLD".into(), ..keys(1000..1050) }, || [7; 32]);
        assert_eq!(book.spent_for(Holder::Account("research"), "NEW", &[]), 0.0);
        assert_eq!(book.spent_for(Holder::Account("wards"), "NEW", &[]), 4.0, "the account's own corpora");
    }

    #[test]
    fn the_budget_of_an_unsketched_corpus_holds_for_a_new_extract() {
        let mut book = LedgerBook::default();
        // An older version's corpus with its own budget, spent: no account, so no sketch.
        book.extend_run("OLD", &run("old", 4.0, None));
        book.ledgers.get_mut("OLD").unwrap().budget = Some(4.0);
        // A new extract under an account with room: still refused by OLD's budget, since
        // whether it holds the same patients cannot be told.
        let over = book.covering_budgets(Holder::Account("wards"), "NEW", &[]);
        assert_eq!(over, [(Holder::Corpus("OLD"), 4.0)]);
        assert!(book.check_spend(Holder::Corpus("OLD"), "NEW", &[], 5.0, 4.0).is_err());
    }

    #[test]
    fn a_tuning_check_is_recorded_on_every_corpus_the_file_overlaps() {
        use crate::input::corpus::{doc_hash, CorpusKeys};
        let key = [5u8; 32];
        let keys = |fp: &str, docs: std::ops::Range<u32>| CorpusKeys {
            fingerprint: fp.into(),
            doc_hashes: docs.map(|i| doc_hash(&format!("note {i}"))).collect(),
            sketch_key: Some(key),
            ..CorpusKeys::default()
        };
        let check = UtilityCheck { id: "t".into(), when: "now".into(), settings_compared: 5 };
        let mut book = LedgerBook::default();
        book.extend_run("OLD", &run("old", 1.0, Some("wards")));
        book.note_corpus("wards", &keys("OLD", 0..100), || key);
        // The file shares most notes with the recorded corpus and with the loaded one (never run).
        let on = book.record_tuning_check(&keys("TUNE", 20..120), Some(&keys("LOADED", 50..150)), &check);
        assert_eq!(on, ["OLD", "LOADED"]);
        assert_eq!(book.ledger("OLD").utility_checks.len(), 1);
        assert_eq!(book.ledger("LOADED").utility_checks.len(), 1);
        // Recorded once per corpus, however often it is asked.
        book.record_tuning_check(&keys("TUNE", 20..120), Some(&keys("LOADED", 50..150)), &check);
        assert_eq!(book.ledger("OLD").utility_checks.len(), 1);
        // A file that shares nothing is recorded nowhere.
        let mut fresh = LedgerBook::default();
        assert!(fresh.record_tuning_check(&keys("PUBLIC", 5000..5100), Some(&keys("LOADED", 50..150)), &check).is_empty());
        // The file is the loaded corpus itself: recorded on it.
        assert_eq!(fresh.record_tuning_check(&keys("LOADED", 50..150), Some(&keys("LOADED", 50..150)), &check), ["LOADED"]);
        // Tuned first, run later: the file is sketched, and a corpus sharing its notes finds it.
        assert_eq!(book.tuning_overlapping(&keys("LATER", 40..140)), ["TUNE"]);
        assert!(book.tuning_overlapping(&keys("ELSE", 7000..7100)).is_empty());
        let (checks, from) = book.checks_touching("LATER", &book.tuning_overlapping(&keys("LATER", 40..140)));
        assert_eq!((checks.len(), from), (1, 1));
        // An export without sketches drops the tuning files' too.
        assert!(book.for_export(false).tuning.iter().all(|t| t.sketch.is_empty()));
    }

    #[test]
    fn new_notes_of_the_same_persons_overlap_through_the_persons_sketch() {
        use crate::input::corpus::{doc_hash, person_hash, CorpusKeys};
        // Two extracts with no document in common: January's notes and February's, mostly of the
        // same 300 patients.
        let keys = |fp: &str, docs: std::ops::Range<u32>, persons: std::ops::Range<u32>| {
            let mut person_hashes: Vec<[u8; 32]> = persons.map(|p| person_hash(&format!("MRN{p:06}"))).collect();
            person_hashes.sort_unstable();
            CorpusKeys {
                fingerprint: fp.into(),
                doc_hashes: docs.map(|i| doc_hash(&format!("note {i}"))).collect(),
                person_hashes,
                ..CorpusKeys::default()
            }
        };
        let mut book = LedgerBook::default();
        book.extend_run("JAN", &run("jan", 4.0, Some("wards")));
        book.note_corpus("wards", &keys("JAN", 0..900, 0..300), || [7; 32]);
        let stored = &book.accounts["wards"].corpora[0];
        assert!(!stored.persons.is_empty() && !stored.sketch.is_empty());
        let feb = keys("FEB", 900..1800, 30..330);
        let over = book.overlapping(&feb);
        assert_eq!(over.iter().map(|(a, fp, _)| (a.as_str(), fp.as_str())).collect::<Vec<_>>(), [("wards", "JAN")], "{over:?}");
        assert!(over[0].2 > 0.6, "90% of the persons are shared: {over:?}");
        // Without person ids on one side only the documents count, and they are disjoint.
        let feb_docs_only = CorpusKeys { person_hashes: Vec::new(), ..feb.clone() };
        assert!(book.overlapping(&feb_docs_only).is_empty());
        // New patients only: no overlap.
        assert!(book.overlapping(&keys("MAR", 1800..2700, 5000..5300)).is_empty());
        // An export without sketches drops the persons' too; a ledger without them still reads.
        let exported = book.for_export(false);
        assert!(exported.accounts["wards"].corpora[0].persons.is_empty());
        let text = serde_json::to_string(&exported).unwrap();
        assert!(!text.contains("\"persons\""), "no empty persons sketch is written");
        let read: LedgerBook = serde_json::from_str(&text).unwrap();
        assert!(read.accounts["wards"].corpora[0].persons.is_empty());
        // Read again with the person column, the corpus recorded without it is sketched again.
        let mut book = LedgerBook::default();
        book.note_corpus("wards", &CorpusKeys { person_hashes: Vec::new(), ..keys("JAN", 0..900, 0..300) }, || [7; 32]);
        assert!(book.accounts["wards"].corpora[0].persons.is_empty());
        book.note_corpus("wards", &keys("JAN", 0..900, 0..300), || [7; 32]);
        assert_eq!(book.accounts["wards"].corpora.len(), 1);
        assert!(!book.accounts["wards"].corpora[0].persons.is_empty());
    }
}

/// The local secret's keys (`crate::ledger::local_key`): sketches keyed with it store no key, compare
/// only under it, and leave an export unless asked for (older books: `keying`'s tests).
mod local_keys {
    use super::super::*;
    use crate::input::corpus::CorpusKeys;
    use crate::ledger::local_key::LocalKeys;

    fn keys(range: std::ops::Range<u32>, local: &LocalKeys) -> CorpusKeys {
        let doc_hashes: Vec<[u8; 32]> = range.map(|i| crate::input::corpus::doc_hash(&format!("doc {i}"))).collect();
        CorpusKeys { fingerprint: crate::input::corpus::corpus_key(&doc_hashes), doc_hashes, ..CorpusKeys::default() }.keyed(local)
    }

    #[test]
    fn sketches_keyed_with_the_local_secret_store_no_key_and_leave_exports_by_default() {
        let here = LocalKeys::from_secret(&[3; 32]);
        let mut book = LedgerBook::default();
        let first = keys(0..1000, &here);
        book.note_corpus("clinic", &first, || panic!("the local key is used, no stored key"));
        assert!(book.accounts["clinic"].corpora[0].key.is_empty(), "no key beside the sketch");
        let o = book.overlaps("clinic", &keys(100..1100, &here));
        assert!(o.len() == 1 && o[0].1 > 0.6, "{o:?}");
        // Another machine's secret: the same documents compare as nothing.
        let there = LocalKeys::from_secret(&[4; 32]);
        assert!(book.overlaps("clinic", &keys(100..1100, &there))[0].1 < crate::ledger::overlap::WARN_OVERLAP);
        // An export holds runs, budgets and the account's corpora, but no sketch, unless asked.
        book.extend_run(&first.fingerprint, &Run::new("r".into(), "t".into()));
        book.set_budget(Holder::Account("clinic"), 5.0, "t", "r");
        let plain = LedgerBook::from_json(&book.for_export(false).to_json()).unwrap();
        assert!(plain.accounts["clinic"].corpora[0].sketch.values.is_empty());
        assert_eq!(plain.accounts["clinic"].corpora[0].fingerprint, first.fingerprint);
        assert_eq!((plain.ledgers.len(), plain.stored_budget(Holder::Account("clinic"))), (1, Some(5.0)));
        assert!(plain.overlaps("clinic", &keys(100..1100, &here)).is_empty(), "a stripped sketch compares with nothing");
        let full = book.for_export(true);
        assert_eq!(full.accounts["clinic"].corpora[0].sketch.values.len(), crate::ledger::overlap::SKETCH_K);
    }
}
