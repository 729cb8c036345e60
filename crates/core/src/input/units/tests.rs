//! Tests of the privacy unit: the transformation, its stability, and the guarantee it gives
//! the mechanisms (an empirical privacy check over corpora that differ by one person with
//! many notes in several classes).

use super::*;
use crate::input::classes::OtherLabels;
use crate::input::corpus::{Fields, Format};
use crate::dp::summary::{build, KeyphraseSampler, SummaryParams};
use crate::dp::SecureRng;
use crate::embed::TermEmbeddings;
use crate::input::matched::{MatchingSink, Persons};
use crate::input::public_vocab::TermId;

fn doc(label: &str, person: u32, terms: &[TermId]) -> MatchedDoc {
    MatchedDoc { label: Some(label.into()), person: Some(person), terms: terms.to_vec() }
}

fn corpus(docs: Vec<MatchedDoc>) -> MatchedCorpus {
    MatchedCorpus::for_tests(docs, "f")
}

fn below(rng: &mut SecureRng, n: u64) -> u64 {
    rng.next_u64() % n
}

fn abc() -> ClassSet {
    ClassSet::declared(&["a", "b", "c"], OtherLabels::Drop).unwrap()
}

#[test]
fn without_a_person_column_the_unit_is_the_document() {
    let mut c = corpus(vec![doc("a", 0, &[1]), doc("a", 0, &[2])]);
    c.persons = None;
    let u = units(&c, &abc());
    assert!(matches!(u, Cow::Borrowed(_)));
    assert_eq!(u.docs.len(), 2);
    assert_eq!(unit_stats(&c, &abc()), None);
}

#[test]
fn one_unit_per_person_in_the_class_of_most_of_their_documents() {
    let c = corpus(vec![
        doc("b", 7, &[1, 2]),
        doc("a", 3, &[9]),
        doc("a", 7, &[3]),
        doc("a", 7, &[2, 4, 5, 6]),
        doc("zz", 7, &[8]), // not a declared class: not read
        doc("b", 3, &[10]),
    ]);
    let u = units(&c, &abc());
    // Person 7 first (their first document comes first): two documents in a, one in b → a.
    // Their a documents' terms in order, distinct, at most keep = 4.
    assert_eq!(u.docs[0], doc("a", 7, &[3, 2, 4, 5]));
    // Person 3: one in a, one in b: the tie goes to the class of the earliest (a).
    assert_eq!(u.docs[1], doc("a", 3, &[9]));
    assert_eq!(u.docs.len(), 2);
    assert_eq!(u.class_counts(&abc()), vec![2, 0, 0]);
    let s = unit_stats(&c, &abc()).unwrap();
    assert_eq!(s, UnitStats { persons: 2, in_several_classes: 2, documents_left_out: 3, most_documents: 4 });
}

#[test]
fn a_person_of_no_declared_class_keeps_all_their_documents_and_is_dropped_per_class() {
    let c = corpus(vec![doc("zz", 0, &[1]), doc("yy", 0, &[2])]);
    let u = units(&c, &abc());
    assert_eq!(u.docs, vec![doc("zz", 0, &[1, 2])]);
    assert!(u.summary_docs(4, &abc()).is_empty());
    // The corpus-wide vocabulary still counts the unit, once.
    assert_eq!(u.histogram(20, 4).documents(), 1);
}

/// Stability: adding one person (any number of documents, any classes) to a corpus adds
/// exactly one unit, and leaves every other unit as it was.
#[test]
fn adding_one_person_adds_exactly_one_unit() {
    let mut rng = SecureRng::seeded_for_tests(5);
    let labels = ["a", "b", "c", "zz"];
    for trial in 0..200 {
        let n = 1 + below(&mut rng, 30) as usize;
        let persons = 1 + below(&mut rng, 8) as u32;
        let docs: Vec<MatchedDoc> = (0..n)
            .map(|_| {
                let terms: Vec<TermId> = (0..below(&mut rng, 5)).map(|_| below(&mut rng, 12) as TermId).collect();
                let mut t = terms.clone();
                t.dedup();
                doc(labels[below(&mut rng, 4) as usize], below(&mut rng, persons as u64) as u32, &t)
            })
            .collect();
        // The new person: number `persons` (unused so far), documents anywhere in the order.
        let mut with = docs.clone();
        for _ in 0..1 + below(&mut rng, 6) {
            let at = below(&mut rng, with.len() as u64 + 1) as usize;
            with.insert(at, doc(labels[below(&mut rng, 4) as usize], persons, &[below(&mut rng, 12) as TermId]));
        }
        let (a, b) = (units(&corpus(docs), &abc()).into_owned(), units(&corpus(with), &abc()).into_owned());
        let others: Vec<&MatchedDoc> = b.docs.iter().filter(|d| d.person != Some(persons)).collect();
        assert_eq!(b.docs.len(), a.docs.len() + 1, "trial {trial}");
        let mut left: Vec<&MatchedDoc> = a.docs.iter().collect();
        let mut right = others;
        left.sort_by_key(|d| d.person);
        right.sort_by_key(|d| d.person);
        assert_eq!(left, right, "trial {trial}: another person's unit changed");
    }
}

/// A corpus file with a person column, read as the CLI and the page read it.
#[test]
fn the_reader_numbers_persons_and_refuses_a_document_without_one() {
    let csv = "note,specialty,patient\nchest pain,a,p1\ncough,b,p2\nchest pain again,a,p1\n";
    let fields = Fields { text: Some("note".into()), label: Some("specialty".into()), person: Some("patient".into()) };
    let mut sink = MatchingSink::new(None, 4, true);
    sink.read(csv.as_bytes(), "c.csv", Format::Csv, &fields, None).unwrap();
    let mc = sink.finish("c.csv").unwrap();
    assert_eq!(mc.docs.iter().map(|d| d.person).collect::<Vec<_>>(), vec![Some(0), Some(1), Some(0)]);
    assert_eq!(mc.persons, Some(Persons { column: "patient".into(), count: 2 }));
    assert_eq!(units(&mc, &abc()).docs.len(), 2);

    let missing = "note,specialty,patient\nchest pain,a,p1\ncough,b, \n";
    let mut sink = MatchingSink::new(None, 4, true);
    let e = sink.read(missing.as_bytes(), "m.csv", Format::Csv, &fields, None).unwrap_err();
    assert!(e.to_string().starts_with("m.csv, line 3: no person in \"patient\""), "{e}");

    let jsonl = "{\"t\": \"x\", \"pid\": 12}\n{\"t\": \"y\", \"pid\": \"12\"}\n{\"t\": \"w\", \"pid\": 1.2e1}\n{\"t\": \"z\", \"pid\": 13}\n";
    let f = Fields { text: Some("t".into()), label: None, person: Some("pid".into()) };
    let mut sink = MatchingSink::new(None, 4, false);
    sink.read(jsonl.as_bytes(), "j.jsonl", Format::Jsonl, &f, None).unwrap();
    let mc = sink.finish("j.jsonl").unwrap();
    // A number, the same value written otherwise and its digits as a string: one person.
    assert_eq!(mc.persons.map(|p| p.count), Some(2));
    let mut sink = MatchingSink::new(None, 4, false);
    let e = sink.read("{\"t\": \"x\", \"pid\": 1.5}\n".as_bytes(), "f.jsonl", Format::Jsonl, &f, None).unwrap_err();
    assert!(e.to_string().contains("a string or a whole number"), "{e}");

    let mut sink = MatchingSink::new(None, 4, false);
    let e = sink.read("text".as_bytes(), "n.txt", Format::Txt, &f, None).unwrap_err();
    assert!(e.to_string().contains("needs CSV, TSV or JSONL"), "{e}");
}

/// The privacy loss between a corpus and the same corpus with one more person, who has six
/// notes in three classes, through the per-class histogram release (ε_kde) and through the DP
/// class counts, each estimated from 30,000 releases on an event that reads the coordinates of
/// two of the person's classes (a and b). On the units it stays within ε; the checks can fail:
/// the person counted at full weight in two classes (what parallel composition across classes
/// must exclude) exceeds it, and so, by far, do the six notes read as six documents.
#[test]
fn empirical_privacy_loss_per_person_stays_within_epsilon() {
    let eps = 1.0;
    for (what, seed) in [(Mechanism::Histogram, 61), (Mechanism::ClassCounts, 71)] {
        let on_units = person_loss(eps, what, Reading::Units, seed);
        assert!(on_units <= eps, "{what:?} per person: estimated privacy loss {on_units} exceeds ε = {eps}");
        let two_classes = person_loss(eps, what, Reading::TwoClasses, seed + 1);
        assert!(two_classes > eps, "{what:?}: a person in two classes at full weight went undetected (loss {two_classes})");
        let per_note = person_loss(eps, what, Reading::PerNote, seed + 2);
        assert!(per_note > 2.0 * eps, "{what:?}: read per note, the person's loss {per_note} went undetected");
        println!(
            "{what:?}, one person with 6 notes in 3 classes (ε = {eps}): estimated loss {on_units:.3} per person, {two_classes:.3} in two classes at full weight, {per_note:.3} read per note"
        );
    }
}

#[derive(Debug, Clone, Copy)]
enum Mechanism {
    Histogram,
    ClassCounts,
}

/// How the added person's notes are read.
#[derive(Clone, Copy)]
enum Reading {
    /// `units`: one unit, in their majority class.
    Units,
    /// Wrongly: one unit in each of two classes.
    TwoClasses,
    /// Wrongly: every note a document.
    PerNote,
}

fn person_loss(eps: f64, what: Mechanism, reading: Reading, seed: u64) -> f64 {
    const TRIALS: usize = 30_000;
    let classes = abc();
    let emb = TermEmbeddings::new(4);
    let cands = [3u32, 4];
    let params = SummaryParams { epsilon: eps, sampler: KeyphraseSampler::Histogram, len: 2, features: 1, terms_per_doc: 4, bandwidth: 1.0, smoothing: 0.0 };
    let others = vec![doc("a", 0, &[4]), doc("b", 1, &[4]), doc("c", 2, &[3, 4])];
    let mut with = others.clone();
    for (k, l) in ["a", "b", "c", "a", "b", "c"].iter().enumerate() {
        with.insert(k.min(with.len()), doc(l, 9, &[3]));
    }
    let grid = (1u64 << crate::dp::summary::GRID_BITS) as f64;
    let mut rng = SecureRng::seeded_for_tests(seed);
    let mut freq = |docs: Vec<MatchedDoc>, added: bool| {
        let mut c = corpus(docs);
        if matches!(reading, Reading::PerNote) {
            c.persons = None;
        }
        let mut u = units(&c, &classes).into_owned();
        if added && matches!(reading, Reading::TwoClasses) {
            // The person's unit (class a, the tie's earliest) again, in class b as well.
            let mut twin = u.docs.iter().find(|d| d.person == Some(9)).cloned().expect("the person's unit");
            twin.label = Some("b".into());
            u.docs.push(twin);
        }
        let summary_docs = u.summary_docs(4, &classes);
        let counts = u.class_counts(&classes);
        crate::dp::testing::frequencies(TRIALS, || match what {
            // Term 3's weight in classes a and b, in documents, rounded and clipped.
            Mechanism::Histogram => {
                let (set, _) = build(crate::dp::summary::SummaryInputs::of(&summary_docs, &classes, &emb, &cands, &params), &mut rng).unwrap();
                let w = |c: usize| ((set.classes[c].sums[0][0] as f64 / grid).round() as i64).clamp(-1, 3);
                (w(0), w(1))
            }
            Mechanism::ClassCounts => {
                let (noisy, _) = crate::dp::counts::noisy_class_counts(&counts, eps, &mut rng).unwrap();
                (noisy[0].clamp(-1, 4), noisy[1].clamp(-1, 4))
            }
        })
    };
    let f0 = freq(others, false);
    let f1 = freq(with, true);
    crate::dp::testing::max_log_ratio(&f0, &f1, TRIALS)
}
