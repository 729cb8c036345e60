//! Reusing a private vocabulary an earlier run released (ARCHITECTURE.md, "Reusing a released
//! private vocabulary"). Ṽ is a DP output: reading it again is post-processing and costs no ε,
//! provided its ε_voc is on record in the ledger, once, in the run that drew it. The app's
//! worker keeps the last Ṽ it released ([`KeptVocabulary`], memory only) and a later run in
//! the same page reads it when [`KeptVocabulary::reusable`] says so.

use std::rc::Rc;

use crate::input::classes::ClassSet;
use crate::dp::vocabulary::{PrivateVocabulary, VocabParams};
use crate::ledger::LedgerBook;
use crate::input::matched::MatchedCorpus;
use crate::input::public_vocab::PublicVocabulary;

/// Everything that shapes a DP vocabulary release: the corpus (its fingerprint), the public list
/// (its checksum), ε_voc, N, S and the per-class choice, the public class set, and the budget
/// account it was paid from. The key is for the curator's sake (a reused Ṽ is the one these
/// settings would draw) and for each account's budget (an account's runs use a Ṽ it paid for);
/// privacy needs only that Ṽ is a recorded release about this corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct VocabKey {
    corpus: String,
    vocabulary: String,
    params: VocabParams,
    classes: ClassSet,
    account: Option<String>,
    /// The privacy unit (`crate::input::units`): a Ṽ drawn per document is not reused by a run per
    /// person (its guarantee per person would be k·ε_voc), nor the other way.
    person_column: Option<String>,
}

impl VocabKey {
    pub fn new(corpus: &MatchedCorpus, vocab: &PublicVocabulary, params: &VocabParams, classes: &ClassSet, account: Option<&str>) -> VocabKey {
        let mut key = VocabKey::of(&corpus.fingerprint, &vocab.checksum, params, classes, account);
        key.person_column = corpus.persons.as_ref().map(|p| p.column.clone());
        key
    }

    fn of(corpus: &str, vocabulary: &str, params: &VocabParams, classes: &ClassSet, account: Option<&str>) -> VocabKey {
        VocabKey {
            corpus: corpus.to_string(),
            vocabulary: vocabulary.to_string(),
            params: *params,
            classes: classes.clone(),
            account: account.map(str::to_string),
            person_column: None,
        }
    }
}

/// A released Ṽ kept for later runs: what shaped it and the run that paid for it.
pub struct KeptVocabulary {
    key: VocabKey,
    pv: Rc<PrivateVocabulary>,
    run_id: String,
}

impl KeptVocabulary {
    /// Keep `pv`, released under `key` by run `run_id`: call it only once that run's
    /// vocabulary spend is on record.
    pub fn new(key: VocabKey, pv: Rc<PrivateVocabulary>, run_id: String) -> KeptVocabulary {
        KeptVocabulary { key, pv, run_id }
    }

    /// Ṽ and the id of the run that paid for it, for a run with `key`: only when the keys are
    /// equal and the ledger `book` still holds that run on this corpus, under the same account,
    /// with a vocabulary spend of the key's ε_voc (storage can be wiped under an open page;
    /// then the run draws a new Ṽ and pays for it).
    pub fn reusable(&self, key: &VocabKey, book: &LedgerBook) -> Option<(Rc<PrivateVocabulary>, String)> {
        (self.key == *key && paid(book, key, &self.run_id)).then(|| (Rc::clone(&self.pv), self.run_id.clone()))
    }
}

/// Whether `book` holds run `run_id` on `key`'s corpus as having paid for a vocabulary of the
/// key's ε_voc under the key's account. Checked again inside the transaction that records a
/// reusing run.
pub fn paid(book: &LedgerBook, key: &VocabKey, run_id: &str) -> bool {
    book.ledger(&key.corpus).runs.iter().any(|r| r.id == run_id && r.paid_for_vocabulary(key.params.epsilon, key.account.as_deref(), key.person_column.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::classes::OtherLabels;
    use crate::ledger::{Run, Scope, Spend};

    fn key(eps: f64, account: Option<&str>) -> VocabKey {
        let classes = ClassSet::declared(&["a", "b"], OtherLabels::Drop).unwrap();
        VocabKey::of("fp", "list", &VocabParams { epsilon: eps, top_n: 10, terms_per_doc: 3, per_class: true }, &classes, account)
    }

    fn paying_run(id: &str, eps: f64, account: Option<&str>) -> Run {
        let mut r = Run::new(id.into(), "t".into());
        r.account = account.map(str::to_string);
        for label in ["a", "b"] {
            let scope = Scope::Partition { label: label.into() };
            r.spends.push(Spend { stage: "vocabulary".into(), mechanism: "m".into(), epsilon: eps, params: serde_json::Value::Null, scope });
        }
        r
    }

    fn vocabulary() -> Rc<PrivateVocabulary> {
        let p = VocabParams { epsilon: 2.0, top_n: 10, terms_per_doc: 3, per_class: true };
        Rc::new(PrivateVocabulary {
            public_vocabulary: "v".into(),
            public_vocabulary_checksum: "list".into(),
            params: p,
            terms: Vec::new(),
            clearing_threshold: None,
            whole_list: false,
            released_by: None,
        })
    }

    #[test]
    fn reused_only_with_the_same_key_while_the_paying_run_is_on_record() {
        let kept = KeptVocabulary::new(key(2.0, Some("clinic")), vocabulary(), "r1".into());
        let mut book = LedgerBook::default();
        // Not on record (yet, or wiped): not reused.
        assert!(kept.reusable(&key(2.0, Some("clinic")), &book).is_none());
        book.extend_run("fp", &paying_run("r1", 2.0, Some("clinic")));
        let (pv, from) = kept.reusable(&key(2.0, Some("clinic")), &book).expect("the same key, paid");
        assert!(Rc::ptr_eq(&pv, &kept.pv) && from == "r1");
        // Another ε_voc, another account: another key.
        assert!(kept.reusable(&key(1.0, Some("clinic")), &book).is_none());
        assert!(kept.reusable(&key(2.0, None), &book).is_none());
        // On record under another account, or with less ε_voc, or on another corpus: not paid.
        let mut other = LedgerBook::default();
        other.extend_run("fp", &paying_run("r1", 2.0, Some("elsewhere")));
        assert!(kept.reusable(&key(2.0, Some("clinic")), &other).is_none());
        let mut less = LedgerBook::default();
        less.extend_run("fp", &paying_run("r1", 1.5, Some("clinic")));
        assert!(kept.reusable(&key(2.0, Some("clinic")), &less).is_none());
        let mut elsewhere = LedgerBook::default();
        elsewhere.extend_run("fp2", &paying_run("r1", 2.0, Some("clinic")));
        assert!(kept.reusable(&key(2.0, Some("clinic")), &elsewhere).is_none());
    }
}
