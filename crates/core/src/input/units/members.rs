//! Which documents make up each unit, and its class: what a mechanism that reads the texts
//! again (the DP vote over generated candidates, `crate::dp::vote`) needs, where
//! [`super::units`] gives the matched terms only.
//!
//! The same transformation as [`super::units`]: without a person column, one unit per document
//! (its class from its label); with one, one unit per person, in the order of their first
//! document, in the class holding most of their documents (a tie to the class of the earliest,
//! [`super::person_class`]), made of their documents of that class only. So a unit is still a
//! function of one person's documents, and adding or removing a person adds or removes exactly
//! one unit, in one class (the stability argument of `super`).

use crate::input::classes::ClassSet;
use crate::input::matched::MatchedCorpus;

/// One unit: its declared class (`None`: none; it is then read by no per-class mechanism) and
/// its documents (indices into the corpus, in corpus order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub class: Option<usize>,
    pub docs: Vec<usize>,
}

/// The units of `corpus` under `classes`, as [`super::units`] forms them.
pub fn members(corpus: &MatchedCorpus, classes: &ClassSet) -> Vec<Member> {
    let docs = &corpus.docs;
    if corpus.persons.is_none() {
        return docs.iter().enumerate().map(|(i, d)| Member { class: classes.assign(d.label.as_deref()), docs: vec![i] }).collect();
    }
    let (persons, alone) = super::group_by_person(docs);
    let mut out: Vec<Member> = persons
        .into_iter()
        .map(|(_, mine)| {
            let super::PersonClass { chosen, read, .. } = super::PersonClass::of(&mine, docs, classes);
            Member { class: chosen, docs: read }
        })
        .collect();
    out.extend(alone.into_iter().map(|i| Member { class: classes.assign(docs[i].label.as_deref()), docs: vec![i] }));
    out
}
