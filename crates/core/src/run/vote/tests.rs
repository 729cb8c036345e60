//! The vote as a run, over an in-memory host: its ε on record before anything is embedded or
//! drawn, held to the budget (a refusal embeds nothing), the unit recorded, and a release that
//! says per class what was kept.

use std::cell::RefCell;
use std::rc::Rc;

use super::*;
use crate::dp::summary::{DpSummary, SummaryInputs};
use crate::input::matched::MatchedDoc;
use crate::input::public_vocab::{PublicVocabulary, TermId};
use crate::ledger::{LedgerBook, SpendStage, Spend};
use crate::run::{RunSettings, Vectors};

struct Memory {
    book: Rc<RefCell<LedgerBook>>,
}

impl Host for Memory {
    type Error = RunError;
    fn fail(&self, _: Option<Stage>, e: RunError) -> RunError {
        e
    }
    fn stage_started(&mut self, _: Stage) {}
    fn stage_done(&mut self, _: Stage, _: String) {}
    async fn checkpoint(&mut self) -> Result<(), RunError> {
        Ok(())
    }
    async fn ledger(&mut self) -> Result<LedgerBook, RunError> {
        Ok(self.book.borrow().clone())
    }
    async fn commit(&mut self, _: Stage, change: &mut dyn FnMut(&mut LedgerBook) -> Result<(), RunError>) -> Result<(), RunError> {
        let mut b = self.book.borrow().clone();
        change(&mut b)?;
        *self.book.borrow_mut() = b;
        Ok(())
    }
    async fn vectors(&mut self, _: &PublicVocabulary, _: &[TermId], _: &[TermId]) -> Result<Vectors, RunError> {
        Err(RunError::Settings("no term vectors in a vote".into()))
    }
    async fn summaries(&mut self, _: SummaryInputs<'_>, _: &mut SecureRng) -> Result<(DpSummary, Vec<Spend>), RunError> {
        Err(RunError::Settings("no summaries in a vote".into()))
    }
    fn now(&self) -> String {
        "now".into()
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => panic!("the in-memory host never waits"),
    }
}

/// 40 documents of classes a and b (and two of no declared class), persons of two notes each
/// when `persons`.
fn corpus(persons: bool) -> MatchedCorpus {
    let docs = (0..42)
        .map(|i| MatchedDoc { label: Some(if i >= 40 { "zz" } else if i % 2 == 0 { "a" } else { "b" }.into()), person: persons.then_some((i / 4) as u32), terms: vec![] })
        .collect();
    MatchedCorpus::for_tests(docs, "fp")
}

fn settings(budget: f64) -> RunSettings {
    RunSettings { classes: vec!["a".into(), "b".into()], budget: Some(budget), ..RunSettings::default() }
}

/// Document i's vector: class a's lean to axis 0, b's to axis 1 (a function of i alone).
fn doc_vector(i: usize) -> Vec<f32> {
    if i % 2 == 0 { vec![1.0, 0.1 * (i % 3) as f32, 0.0] } else { vec![0.0, 1.0, 0.1 * (i % 5) as f32] }
}

fn candidates() -> Candidates {
    let a = vec![vec![1.0, 0.0, 0.0], vec![0.0, 0.0, 1.0], vec![0.7, 0.7, 0.0], vec![-1.0, 0.0, 0.0]];
    let b = vec![vec![0.0, 1.0, 0.0], vec![0.0, -1.0, 0.0]];
    Candidates::new(3, &[a, b]).unwrap()
}

#[test]
fn the_vote_is_on_record_before_anything_is_embedded_and_keeps_per_class() {
    for persons in [false, true] {
        let book = Rc::new(RefCell::new(LedgerBook::default()));
        let mut host = Memory { book: book.clone() };
        let plan = RunPlan::for_vote(settings(10.0), true).unwrap();
        let vs = VoteSettings { params: VoteParams { epsilon: 5.0, sample_rate: 1.0 }, keep: KeepRule::PerClass(2), mode: KeepMode::Top };
        let c = corpus(persons);
        let seen = Rc::new(RefCell::new(Vec::new()));
        let (seen2, book2) = (seen.clone(), book.clone());
        let mut embed = move |docs: &[usize]| -> Result<Vec<Vec<f32>>, RunError> {
            // The spends are committed before any document is embedded.
            let recorded = book2.borrow().ledger("fp").runs.iter().flat_map(|r| r.spends.iter()).filter(|s| s.is(SpendStage::Vote)).count();
            assert_eq!(recorded, 2, "one selection spend per class on record first");
            seen2.borrow_mut().extend_from_slice(docs);
            Ok(docs.iter().map(|&i| doc_vector(i)).collect())
        };
        let mut rng = SecureRng::seeded_for_tests(5);
        let inputs = VoteInputs { corpus: &c, candidates: &candidates(), candidates_from: serde_json::json!({"sha256": "c"}), from_run: None };
        let out = block_on(vote(&plan, inputs, &vs, &mut embed, &mut host, &mut rng)).unwrap();
        // Documents of no declared class are never embedded; a person (two notes in a, two in
        // b: the tie goes to a, their earliest) is read in class a only.
        let want: Vec<usize> = (0..40).filter(|i| !persons || i % 2 == 0).collect();
        assert_eq!(*seen.borrow(), want);
        let r = &out.report;
        assert_eq!(r.classes.iter().map(|c| (c.label.as_str(), c.candidates, c.kept.len())).collect::<Vec<_>>(), [("a", 4, 2), ("b", 2, 2)]);
        // At ε = 5 the votes show: class a's documents are nearest candidate 0, b's candidate 0.
        assert!(r.classes[0].kept.contains(&0) && r.classes[0].noisy_votes[0] > 5, "{:?}", r.classes[0]);
        assert_eq!((r.epsilon_charged, out.run.epsilon()), (5.0, 5.0));
        assert_eq!(out.run.person_column.as_deref(), persons.then_some("patient"));
        assert_eq!(r.privacy_unit, if persons { "person (column “patient”)" } else { "document" });
        let text = serde_json::to_string(r).unwrap();
        assert!(text.contains("noisy_votes") && text.contains("share_captured") && text.contains("drew_none"));
        assert_eq!(book.borrow().ledger("fp").total_epsilon(), 5.0);
    }
}

#[test]
fn a_vote_over_budget_is_refused_before_anything_is_embedded_and_subsampling_charges_less() {
    let book = Rc::new(RefCell::new(LedgerBook::default()));
    let mut host = Memory { book: book.clone() };
    let c = corpus(false);
    let calls = Rc::new(RefCell::new(0usize));
    let calls2 = calls.clone();
    let mut embed = move |docs: &[usize]| -> Result<Vec<Vec<f32>>, RunError> {
        *calls2.borrow_mut() += 1;
        Ok(docs.iter().map(|&i| doc_vector(i)).collect())
    };
    let mut rng = SecureRng::seeded_for_tests(6);
    let cands = candidates();
    let over = VoteSettings { params: VoteParams { epsilon: 3.0, sample_rate: 1.0 }, keep: KeepRule::CandidatesPerKept(2), mode: KeepMode::Proportional };
    let inputs = || VoteInputs { corpus: &c, candidates: &cands, candidates_from: serde_json::Value::Null, from_run: None };
    let refused = block_on(vote(&RunPlan::for_vote(settings(2.0), true).unwrap(), inputs(), &over, &mut embed, &mut host, &mut rng));
    assert!(refused.is_err());
    assert_eq!((*calls.borrow(), book.borrow().ledger("fp").total_epsilon()), (0, 0.0));
    // The same ε with q = 0.2 fits: ε′ = ln(1 + 0.2(e³ − 1)) ≈ 1.63.
    let sub = VoteSettings { params: VoteParams { epsilon: 3.0, sample_rate: 0.2 }, ..over };
    let out = block_on(vote(&RunPlan::for_vote(settings(2.0), true).unwrap(), inputs(), &sub, &mut embed, &mut host, &mut rng)).unwrap();
    assert!((out.run.epsilon() - sub.params.charged_epsilon()).abs() < 1e-12 && out.run.epsilon() < 1.7);
    // One kept per two candidates: a keeps 2, b keeps 1.
    assert_eq!(out.report.classes.iter().map(|c| c.kept.len()).collect::<Vec<_>>(), [2, 1]);
    assert!(out.report.mechanism.contains("Poisson subsampling"));
    // Bad settings are refused before anything is recorded.
    let bad = VoteSettings { keep: KeepRule::PerClass(0), ..sub.clone() };
    assert!(block_on(vote(&RunPlan::for_vote(settings(9.0), true).unwrap(), inputs(), &bad, &mut embed, &mut host, &mut rng)).is_err());
    let wrong = Candidates::new(3, &[vec![vec![1.0, 0.0, 0.0]]]).unwrap();
    let three = VoteInputs { corpus: &c, candidates: &wrong, candidates_from: serde_json::Value::Null, from_run: None };
    assert!(block_on(vote(&RunPlan::for_vote(settings(9.0), true).unwrap(), three, &sub, &mut embed, &mut host, &mut rng)).is_err());
    assert_eq!(book.borrow().ledger("fp").runs.len(), 1);
}

#[test]
fn a_vote_takes_only_a_budget_a_run_would() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 0.0005, 1000.5, 5000.0] {
        let run = settings(bad).check().into_iter().find(|e| e.field == "budget").map(|e| e.message);
        let vote = RunPlan::for_vote(settings(bad), true).err().map(|e| e.to_string());
        assert!(run.is_some(), "a run takes the budget {bad}");
        assert!(vote.is_some_and(|v| v.contains(run.as_deref().unwrap_or_default())), "a vote takes the budget {bad}");
    }
    for good in [0.001, 10.0, 1000.0] {
        assert!(settings(good).check().iter().all(|e| e.field != "budget") && RunPlan::for_vote(settings(good), true).is_ok(), "the budget {good}");
    }
    assert!(RunPlan::for_vote(RunSettings { budget: None, ..settings(10.0) }, true).is_ok(), "no budget: the stored one");
}

#[test]
fn the_report_of_the_kept_documents_states_the_vote_and_its_epsilon() {
    use crate::dp::vote::VotePlan;
    use crate::ledger::Ledger;
    use crate::run::report::{Checked, PrivacyReport};
    // The vote a run planned: one kept per c candidates, c from the settings.
    let plan_vote = VotePlan { eps_select: 2.0, candidates_per_kept: 2, keep_mode: KeepMode::Top, sample_rate: 1.0 };
    let vs = VoteSettings::from(plan_vote);
    assert_eq!((vs.keep, vs.params.epsilon), (KeepRule::CandidatesPerKept(2), 2.0));
    let book = Rc::new(RefCell::new(LedgerBook::default()));
    let mut host = Memory { book: book.clone() };
    let c = corpus(false);
    let mut embed = |docs: &[usize]| -> Result<Vec<Vec<f32>>, RunError> { Ok(docs.iter().map(|&i| doc_vector(i)).collect()) };
    let mut rng = SecureRng::seeded_for_tests(7);
    let inputs = VoteInputs { corpus: &c, candidates: &candidates(), candidates_from: serde_json::json!({"sha256": "c"}), from_run: None };
    let out = block_on(vote(&RunPlan::for_vote(settings(10.0), true).unwrap(), inputs, &vs, &mut embed, &mut host, &mut rng)).unwrap();
    let kept = out.report.classes.iter().map(|c| c.kept.len()).sum();
    assert_eq!(kept, 3, "4 and 2 candidates, one kept in 2: 2 + 1");
    let record = VoteRecord { vote: out.report, candidates_from: serde_json::json!({"sha256": "c"}), kept };
    // The run's report (as written before generation) with the vote added.
    let run_settings = RunSettings { vote: Some(plan_vote), ..settings(10.0) };
    let run = crate::ledger::Run::new("r".into(), "t".into());
    let checked = || Checked { name: "x".into(), sha256: "a".repeat(64) };
    let r = PrivacyReport::new("now".into(), &run_settings, &run, &Ledger::new("fp".into()), checked(), checked(), &RunPlan::for_vote(run_settings.clone(), true).unwrap().classes, 12, &[]);
    let json = serde_json::to_string(&r).unwrap();
    assert!(!json.contains("\"vote\":{\"vote\"") && !r.to_html().contains("DP vote over the generated documents"), "no vote before one is run");
    let with = PrivacyReport::with_vote(&json, record.clone()).unwrap();
    let back: PrivacyReport = serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
    assert_eq!(back.vote, Some(record));
    let html = back.to_html();
    assert!(html.contains("DP vote over the generated documents") && html.contains("ε_select = 2 (the ledger charged ε = 2.0000)"), "{html}");
    assert!(html.contains("<td>a</td><td>4</td><td>2</td>") && html.contains("scale 1/ε = 0.5000"), "{html}");
    assert!(html.contains("× 2 candidates per kept document for the DP vote"), "the parameters say the run drew c × its sequences");
}

#[test]
fn the_candidates_checksum_follows_labels_texts_and_order() {
    let a = candidates_sha256([(Some("a"), "x"), (None, "y")]);
    assert_eq!(a, candidates_sha256([(Some("a"), "x"), (Some(""), "y")]), "no label hashes as an empty one, as `dpkps select` read it");
    assert_ne!(a, candidates_sha256([(None, "y"), (Some("a"), "x")]));
    assert_ne!(a, candidates_sha256([(Some("a"), "xy"), (None, "")]));
}

/// The ledger of corpus "fp" with the run "r1" on record, read with `person_column`.
fn book_with_run(person_column: Option<&str>) -> Rc<RefCell<LedgerBook>> {
    let mut run = crate::ledger::Run::new("r1".into(), "t".into());
    run.person_column = person_column.map(str::to_string);
    run.spends.push(Spend { stage: "kde".into(), mechanism: "m".into(), epsilon: 1.0, params: serde_json::Value::Null, scope: crate::ledger::Scope::AllDocuments });
    let mut book = LedgerBook::default();
    book.record("fp", run);
    Rc::new(RefCell::new(book))
}

#[test]
fn a_vote_tied_to_a_run_is_refused_on_another_corpus_or_unit_before_anything_is_spent() {
    let vs = VoteSettings { params: VoteParams { epsilon: 1.0, sample_rate: 1.0 }, keep: KeepRule::PerClass(1), mode: KeepMode::Top };
    let cands = candidates();
    let mut rng = SecureRng::seeded_for_tests(8);
    let embedded = Rc::new(RefCell::new(0usize));
    let e2 = embedded.clone();
    let mut embed = move |docs: &[usize]| -> Result<Vec<Vec<f32>>, RunError> {
        *e2.borrow_mut() += docs.len();
        Ok(docs.iter().map(|&i| doc_vector(i)).collect())
    };
    // (the run's unit, the loaded corpus read with persons, the run named, refused because)
    let cases: [(Option<&str>, bool, &str, Option<&str>); 4] = [
        (None, false, "r2", Some("is not on record for the loaded corpus")),
        (None, true, "r1", Some("read this corpus with the document as its privacy unit, and it is loaded with the person column “patient”")),
        (Some("patient"), false, "r1", Some("read this corpus with the person column “patient”, and it is loaded with the document")),
        (Some("patient"), true, "r1", None),
    ];
    // A vote's own run released no sequences: naming it is refused too.
    let book = book_with_run(None);
    let mut vote_run = crate::ledger::Run::new("v1".into(), "t".into());
    vote_run.spends.push(Spend { stage: "vote".into(), mechanism: "m".into(), epsilon: 1.0, params: serde_json::Value::Null, scope: crate::ledger::Scope::AllDocuments });
    book.borrow_mut().record("fp", vote_run);
    let c = corpus(false);
    let inputs = VoteInputs { corpus: &c, candidates: &cands, candidates_from: serde_json::Value::Null, from_run: Some("v1") };
    let e = block_on(vote(&RunPlan::for_vote(settings(10.0), true).unwrap(), inputs, &vs, &mut embed, &mut Memory { book }, &mut rng)).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("released no keyphrase sequences"), "{e}");
    for (unit, persons, named, refused) in cases {
        let book = book_with_run(unit);
        let mut host = Memory { book: book.clone() };
        let c = corpus(persons);
        *embedded.borrow_mut() = 0;
        let inputs = VoteInputs { corpus: &c, candidates: &cands, candidates_from: serde_json::json!({"sha256": "c", "run": named}), from_run: Some(named) };
        let out = block_on(vote(&RunPlan::for_vote(settings(10.0), true).unwrap(), inputs, &vs, &mut embed, &mut host, &mut rng));
        match refused {
            Some(why) => {
                let e = out.err().map(|e| e.to_string()).unwrap_or_default();
                assert!(e.contains(why), "{unit:?} {persons} {named}: {e}");
                assert_eq!((*embedded.borrow(), book.borrow().ledger("fp").runs.len()), (0, 1), "nothing embedded or recorded");
            }
            None => {
                assert!(out.is_ok(), "the run's own corpus and unit vote");
                assert_eq!(book.borrow().ledger("fp").runs.len(), 2);
            }
        }
    }
}

#[test]
fn voting_again_on_the_same_candidates_adds_up_in_the_release_and_the_report() {
    use crate::ledger::Ledger;
    use crate::run::report::{Checked, PrivacyReport};
    let book = book_with_run(None);
    let mut host = Memory { book: book.clone() };
    let c = corpus(false);
    let cands = candidates();
    let mut rng = SecureRng::seeded_for_tests(9);
    let mut embed = |docs: &[usize]| -> Result<Vec<Vec<f32>>, RunError> { Ok(docs.iter().map(|&i| doc_vector(i)).collect()) };
    let vs = |epsilon| VoteSettings { params: VoteParams { epsilon, sample_rate: 1.0 }, keep: KeepRule::PerClass(1), mode: KeepMode::Top };
    let from = |sha: &str, run: Option<&str>| serde_json::json!({"sha256": sha, "run": run});
    let mut go = |epsilon: f64, sha: &str, run: Option<&str>| {
        // Only a vote naming r1 is tied to it (r1 is on record); the others name no run to check.
        let inputs = VoteInputs { corpus: &c, candidates: &cands, candidates_from: from(sha, run), from_run: run.filter(|r| *r == "r1") };
        block_on(vote(&RunPlan::for_vote(settings(20.0), true).unwrap(), inputs, &vs(epsilon), &mut embed, &mut host, &mut rng)).unwrap().report
    };
    let first = go(1.0, "c", Some("r1"));
    assert_eq!((first.votes_on_candidates, first.epsilon_votes_on_candidates), (1, 1.0));
    // Other candidates of another run are another vote's business.
    let other = go(4.0, "d", Some("r0"));
    assert_eq!((other.votes_on_candidates, other.epsilon_votes_on_candidates), (1, 4.0));
    // The same run's documents, one more retried since (another checksum): both votes count.
    let again = go(2.0, "c2", Some("r1"));
    assert_eq!((again.votes_on_candidates, again.epsilon_votes_on_candidates, again.votes_other_unit), (2, 3.0, 0));
    // The same documents voted on without naming their run: counted by their checksum.
    let unnamed = go(0.5, "c2", None);
    assert_eq!((unnamed.votes_on_candidates, unnamed.epsilon_votes_on_candidates), (2, 2.5));

    // The run r1's report with the second vote: its outputs plus both votes on these documents.
    let mut run = crate::ledger::Run::new("r1".into(), "t".into());
    run.spends.push(Spend { stage: "kde".into(), mechanism: "m".into(), epsilon: 5.0, params: serde_json::Value::Null, scope: crate::ledger::Scope::AllDocuments });
    let checked = || Checked { name: "x".into(), sha256: "a".repeat(64) };
    let report = |run: &crate::ledger::Run| {
        let r = PrivacyReport::new("now".into(), &settings(20.0), run, &Ledger::new("fp".into()), checked(), checked(), &RunPlan::for_vote(settings(20.0), true).unwrap().classes, 2, &[]);
        serde_json::to_string(&r).unwrap()
    };
    let record = VoteRecord { vote: again.clone(), candidates_from: from("c2", Some("r1")), kept: 2 };
    let tied = PrivacyReport::with_vote(&report(&run), record.clone()).unwrap();
    assert!(tied.kept_epsilon_text().starts_with("The kept documents: ε = 8.0000 (this run's outputs plus the 2 votes on record, as of this one, over these documents or others of this run, since the kept set follows every vote seen before it). This counts the votes in this browser's ledger when this vote was taken"), "{}", tied.kept_epsilon_text());
    assert!(again.unit_verified, "per document, the fingerprint is the units");
    assert!(tied.to_html().contains("ε = 8.0000 (this run"), "the report's page says it too");
    // Another run's report does not add the vote in.
    run.id = "r9".into();
    let apart = PrivacyReport::with_vote(&report(&run), record).unwrap().kept_epsilon_text();
    assert!(apart.starts_with("The kept documents: ε = 5.0000 for this run's outputs and ε = 3.0000 for the 2 votes") && apart.contains("the vote does not name this run"), "{apart}");
}

#[test]
fn a_vote_on_the_same_documents_grouped_into_other_persons_is_refused() {
    // The corpus with its keys keyed (document hashes, the local sketch key).
    let keyed = |mut c: MatchedCorpus| {
        c.keys.doc_hashes = (0..c.docs.len()).map(|i| [i as u8; 32]).collect();
        c.keys.sketch_key = Some([7; 32]);
        c
    };
    let loaded = keyed(corpus(true));
    let digest = loaded.persons_digest();
    assert!(digest.is_some() && corpus(true).persons_digest().is_none() && keyed(corpus(false)).persons_digest().is_none());
    // The same grouping read in another order, under other person numbers: the same digest.
    let mut reordered = loaded.clone();
    reordered.docs.reverse();
    reordered.keys.doc_hashes.reverse();
    reordered.docs.iter_mut().for_each(|d| d.person = d.person.map(|p| 100 - p));
    assert_eq!(reordered.persons_digest(), digest);
    // Two notes a person instead of four: another partition.
    let mut regrouped = loaded.clone();
    regrouped.docs.iter_mut().enumerate().for_each(|(i, d)| d.person = Some((i / 2) as u32));
    assert_ne!(regrouped.persons_digest(), digest);

    let vs = VoteSettings { params: VoteParams { epsilon: 1.0, sample_rate: 1.0 }, keep: KeepRule::PerClass(1), mode: KeepMode::Top };
    let cands = candidates();
    let mut rng = SecureRng::seeded_for_tests(10);
    let mut embed = |docs: &[usize]| -> Result<Vec<Vec<f32>>, RunError> { Ok(docs.iter().map(|&i| doc_vector(i)).collect()) };
    for (c, refused) in [(&regrouped, true), (&reordered, false)] {
        let book = book_with_run(Some("patient"));
        book.borrow_mut().ledgers.get_mut("fp").unwrap().runs[0].persons_digest = digest.clone();
        let inputs = VoteInputs { corpus: c, candidates: &cands, candidates_from: serde_json::Value::Null, from_run: Some("r1") };
        let out = block_on(vote(&RunPlan::for_vote(settings(10.0), true).unwrap(), inputs, &vs, &mut embed, &mut Memory { book: book.clone() }, &mut rng));
        match out {
            Err(e) => assert!(refused && e.to_string().contains("grouped into other persons"), "{e}"),
            Ok(o) => assert!(!refused && o.run.persons_digest == digest && o.report.unit_verified, "the vote records the grouping it read"),
        }
    }
    // A per-person run recorded before the grouping was kept: voted on, but not verified (the
    // report then states the run's ε and the vote's apart).
    let book = book_with_run(Some("patient"));
    let inputs = VoteInputs { corpus: &reordered, candidates: &cands, candidates_from: serde_json::Value::Null, from_run: Some("r1") };
    let out = block_on(vote(&RunPlan::for_vote(settings(10.0), true).unwrap(), inputs, &vs, &mut embed, &mut Memory { book }, &mut rng)).unwrap();
    assert!(!out.report.unit_verified);
}
