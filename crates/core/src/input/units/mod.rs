//! The privacy unit: the document, or the person when the corpus has a person column.
//!
//! Clinical corpora hold many notes per patient. Under the document relation (neighbours differ
//! by one document) a patient with k notes is protected only at k·ε (group privacy). With a
//! person column the relation becomes **add or remove one person with all their documents**,
//! and [`units`] makes every mechanism honour it without touching any of them.
//!
//! # The transformation
//! [`units`] maps a corpus to one *unit* per person, in the order of each person's first
//! document:
//! 1. the person's class: among the declared classes (the public class set) that their documents
//!    fall into, the one holding most of them, a tie going to the class of the earliest;
//! 2. the unit's documents: the person's documents of that class, in corpus order (all of them
//!    when none falls into a declared class: the unit is then dropped by the per-class releases
//!    as such a document is, and counts in the corpus-wide vocabulary only);
//! 3. the unit: the label of its first document and the first `keep` distinct terms of its
//!    documents' kept terms, read one document after the other.
//!
//! A person's documents of other classes are not read at all (see "Why one class" below).
//!
//! # Stability: why every sensitivity stays as it is
//! Each unit is a function of one person's documents only (their labels, terms and relative
//! order); no other person's data enters it. So if corpora D and D′ differ by one person P (P's
//! documents added or removed), `units(D)` and `units(D′)` differ by exactly one unit: P's (or
//! nothing, when P had no document). That is, the transformation is 1-stable from the person
//! relation to the document relation on its output. Every mechanism downstream (the vocabulary
//! histogram, the per-class summaries, the class counts) is ε-DP under the document relation,
//! with its sensitivity derived for *one document* (beside each mechanism in `crate::dp`); run
//! on the units it is therefore ε-DP under the person relation, with the same sensitivity and
//! the same noise. A unit is shaped like a document (a label and at most `keep` distinct terms),
//! so each mechanism's bound on one document's contribution (S terms for the vocabulary; a total
//! weight of 1 for the histograms; I·Q per member for the DP-KDE sums; 1 for the class counts)
//! holds for one person's unit as it held for one document.
//!
//! # Why one class
//! The per-class releases compose in parallel because the classes partition the documents. A
//! person whose notes fall in several classes would contribute to several releases; their
//! total contribution would then have to be bounded across the releases together (one
//! mechanism over their concatenation, with a sensitivity shared out among the classes). Giving
//! each person one class keeps the classes a partition of the persons: parallel composition
//! holds per person exactly as it held per document, and no mechanism changes. The price is
//! utility: a person's notes of their other classes are not read. [`UnitStats`] says how many
//! documents that leaves out (to the curator, not in any release).
//!
//! # What is assumed, and what is enforced
//! Public by assumption: which column names the person, and that it identifies people (one
//! value per patient, the same on all their notes); the code cannot check it. Enforced: every
//! document has a person (the reader refuses one without), the units are built before any
//! mechanism reads the corpus (`crate::run::execute`, `dpkps vocab`), each run records its unit
//! (`Run::person_column`), and a released Ṽ is reused or taken as paid for only under the same
//! unit (`PrivateVocabulary::released_by`, `crate::run::reuse`).
//!
//! Without a person column [`units`] returns the corpus as it is: the unit is the document.

use std::borrow::Cow;

mod members;
pub use members::{members, Member};

use crate::input::classes::ClassSet;
use crate::input::matched::{MatchedCorpus, MatchedDoc};

/// The corpus as the mechanisms read it: one unit per person when it has a person column,
/// else itself (the unit is the document). Keys and fingerprint are the corpus's: the ledger
/// counts the same corpus whatever the unit.
pub fn units<'c>(corpus: &'c MatchedCorpus, classes: &ClassSet) -> Cow<'c, MatchedCorpus> {
    if corpus.persons.is_none() {
        return Cow::Borrowed(corpus);
    }
    let (docs, _) = person_units(&corpus.docs, classes, corpus.keep);
    let docs_without_terms = docs.iter().filter(|d| d.terms.is_empty()).count() as u64;
    Cow::Owned(MatchedCorpus { docs, docs_without_terms, ..corpus.clone_without_docs() })
}

/// What [`units`] did to a corpus with a person column (private counts, for the curator).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitStats {
    pub persons: usize,
    /// Persons whose documents fall in more than one declared class.
    pub in_several_classes: usize,
    /// Documents not read because they are of another class than their person's.
    pub documents_left_out: usize,
    /// The most documents one person has.
    pub most_documents: usize,
}

/// [`UnitStats`] of `corpus` under `classes`; `None` without a person column.
pub fn unit_stats(corpus: &MatchedCorpus, classes: &ClassSet) -> Option<UnitStats> {
    corpus.persons.as_ref()?;
    Some(person_units(&corpus.docs, classes, corpus.keep).1)
}

/// The units and their stats. Documents without a person (none, when the column is set: the
/// reader refuses them) would each be a unit of their own.
fn person_units(docs: &[MatchedDoc], classes: &ClassSet, keep: usize) -> (Vec<MatchedDoc>, UnitStats) {
    let (persons, alone) = group_by_person(docs);
    let mut stats = UnitStats { persons: persons.len(), ..UnitStats::default() };
    let mut out = Vec::with_capacity(persons.len() + alone.len());
    for (p, mine) in persons {
        stats.most_documents = stats.most_documents.max(mine.len());
        let PersonClass { class_of, chosen, read } = PersonClass::of(&mine, docs, classes);
        if class_of.iter().flatten().any(|&k| Some(k) != chosen) {
            stats.in_several_classes += 1;
        }
        stats.documents_left_out += mine.len() - read.len();
        let mut terms = Vec::with_capacity(keep);
        'docs: for &i in &read {
            for &t in &docs[i].terms {
                if terms.len() == keep {
                    break 'docs;
                }
                if !terms.contains(&t) {
                    terms.push(t);
                }
            }
        }
        out.push(MatchedDoc { label: docs[read[0]].label.clone(), person: Some(p), terms });
    }
    out.extend(alone.into_iter().map(|i| docs[i].clone()));
    (out, stats)
}

/// Each person's documents (indices, in corpus order), persons in the order of their first
/// document; and the documents without a person.
pub(super) fn group_by_person(docs: &[MatchedDoc]) -> (Vec<(u32, Vec<usize>)>, Vec<usize>) {
    let mut order: Vec<u32> = Vec::new();
    let mut of_person: Vec<Vec<usize>> = Vec::new();
    let mut alone = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        let Some(p) = d.person else {
            alone.push(i);
            continue;
        };
        let p = p as usize;
        if p >= of_person.len() {
            of_person.resize_with(p + 1, Vec::new);
        }
        if of_person[p].is_empty() {
            order.push(p as u32);
        }
        of_person[p].push(i);
    }
    (order.into_iter().map(|p| (p, std::mem::take(&mut of_person[p as usize]))).collect(), alone)
}

/// One person's class and the documents of theirs that are read.
pub(super) struct PersonClass {
    /// Each document's declared class (None: of no declared class), looked up once.
    pub(super) class_of: Vec<Option<usize>>,
    /// [`person_class`] of them.
    pub(super) chosen: Option<usize>,
    /// The documents in the chosen class (all of them when none is).
    pub(super) read: Vec<usize>,
}

impl PersonClass {
    pub(super) fn of(mine: &[usize], docs: &[MatchedDoc], classes: &ClassSet) -> PersonClass {
        let class_of: Vec<Option<usize>> = mine.iter().map(|&i| classes.assign(docs[i].label.as_deref())).collect();
        let chosen = person_class(class_of.iter().copied());
        let read = match chosen {
            Some(c) => mine.iter().zip(&class_of).filter(|(_, k)| **k == Some(c)).map(|(&i, _)| i).collect(),
            None => mine.to_vec(),
        };
        PersonClass { class_of, chosen, read }
    }
}

/// The class holding most of a person's documents (their classes in corpus order; `None` for
/// a document of no declared class), a tie going to the earliest; `None` if no document
/// falls into a declared class.
fn person_class(classes: impl Iterator<Item = Option<usize>>) -> Option<usize> {
    // (class, count, first position)
    let mut tally: Vec<(usize, usize, usize)> = Vec::new();
    for (pos, c) in classes.enumerate() {
        let Some(c) = c else { continue };
        match tally.iter_mut().find(|(k, _, _)| *k == c) {
            Some(entry) => entry.1 += 1,
            None => tally.push((c, 1, pos)),
        }
    }
    tally.into_iter().max_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2))).map(|(c, _, _)| c)
}

impl MatchedCorpus {
    /// Everything but the documents (for a derived corpus of the same load).
    fn clone_without_docs(&self) -> MatchedCorpus {
        MatchedCorpus {
            docs: Vec::new(),
            stats: self.stats.clone(),
            fingerprint: self.fingerprint.clone(),
            keys: self.keys.clone(),
            keep: self.keep,
            docs_without_terms: self.docs_without_terms,
            persons: self.persons.clone(),
        }
    }
}

#[cfg(test)]
mod tests;
