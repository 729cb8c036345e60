//! Keying a ledger with this machine's local secret (`crate::ledger::local_key` says why), without ever
//! losing a spend: older books are keyed in place, every corpus key at once (the accounts'
//! lists of corpora included), the first time they are opened with the secret; a book keyed
//! with another secret is refused as this machine's ledger, and counted in full when imported.

use super::{LedgerBook, LedgerError};
use crate::ledger::local_key::{keyed_fingerprint, LocalKeys};

impl LedgerBook {
    /// Keys a book not keyed yet (an older version's, or a new one) with `local`: every ledger
    /// key and every account's corpus key becomes its keyed form (the form
    /// `CorpusKeys::keyed` gives the same corpus), and the book records the secret's check tag.
    /// Returns whether it changed anything. A book keyed with another secret is refused: its
    /// corpora could not be recognised, so reading it as this machine's would silently drop
    /// their spends from every budget.
    pub fn key_with(&mut self, local: &LocalKeys) -> Result<bool, LedgerError> {
        match &self.key_check {
            Some(c) if *c == local.check => return Ok(false),
            Some(c) => return Err(LedgerError::OtherKey { found: c.clone() }),
            None => {}
        }
        let old = std::mem::take(&mut self.ledgers);
        for (key, mut ledger) in old {
            let keyed = keyed_fingerprint(local, &key);
            ledger.fingerprint = keyed.clone();
            self.ledgers.insert(keyed, ledger);
        }
        for c in self.accounts.values_mut().flat_map(|a| a.corpora.iter_mut()) {
            c.fingerprint = keyed_fingerprint(local, &c.fingerprint);
        }
        self.key_check = Some(local.check.clone());
        Ok(true)
    }

    /// Prepares an imported book for merging into this machine's (keyed with `local`): keyed
    /// in place if it is not keyed yet (an older version's keys are the same on every
    /// machine); if it was keyed elsewhere, its corpora cannot be recognised here, so each of
    /// its ledgers is marked foreign (its runs then count against every budget: never fewer
    /// spends) and its sketches, which compare with nothing here, are dropped.
    pub fn for_import(mut self, local: &LocalKeys) -> LedgerBook {
        if self.key_with(local).is_err() {
            for l in self.ledgers.values_mut() {
                l.foreign = true;
            }
            for c in self.accounts.values_mut().flat_map(|a| a.corpora.iter_mut()) {
                c.key.clear();
                c.sketch = crate::ledger::overlap::Sketch::default();
                c.persons = crate::ledger::overlap::Sketch::default();
            }
            self.tuning.clear();
            self.key_check = Some(local.check.clone());
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::input::corpus::CorpusKeys;
    use crate::ledger::local_key::LocalKeys;

    fn run(id: &str, eps: f64, account: Option<&str>) -> Run {
        let mut r = Run::new(id.into(), "t".into());
        r.account = account.map(String::from);
        r.spends.push(Spend { stage: "kde".into(), mechanism: "m".into(), epsilon: eps, params: serde_json::Value::Null, scope: Scope::AllDocuments });
        r
    }

    fn keys(range: std::ops::Range<u32>) -> CorpusKeys {
        let doc_hashes: Vec<[u8; 32]> = range.map(|i| crate::input::corpus::doc_hash(&format!("doc {i}"))).collect();
        CorpusKeys { fingerprint: crate::input::corpus::corpus_key(&doc_hashes), legacy: format!("legacy {}", doc_hashes.len()), doc_hashes, ..CorpusKeys::default() }
    }

    /// A book of an older version: unkeyed corpus keys, the accounts' lists too, a v1 ledger
    /// under the order-sensitive key, a sketch with its stored key.
    #[test]
    fn an_older_book_is_keyed_whole_and_every_spend_still_counts() {
        let local = LocalKeys::from_secret(&[7; 32]);
        let (x, y, z) = (keys(0..60), keys(1000..1060), keys(2000..2010));
        let mut book = LedgerBook::default();
        book.extend_run(&x.fingerprint, &run("a", 2.0, Some("clinic")));
        book.note_corpus("clinic", &x, || [9; 32]);
        book.extend_run(&y.fingerprint, &run("b", 3.0, None));
        book.note_corpus("clinic", &y, || [9; 32]);
        book.extend_run(&z.legacy, &run("c", 1.0, None));
        let before = book.spent_for(Holder::Account("clinic"), &x.fingerprint, &[]);
        assert!(book.key_with(&local).unwrap());
        assert!(!book.key_with(&local).unwrap(), "keyed once");
        // The corpora as a run now names them.
        let (kx, ky, kz) = (x.clone().keyed(&local), y.clone().keyed(&local), z.clone().keyed(&local));
        assert_eq!(book.ledger(&kx.fingerprint).total_epsilon(), 2.0);
        assert_eq!(book.spent_for(Holder::Account("clinic"), &kx.fingerprint, &[]), before, "the account's corpora were keyed too");
        // a and b (the account's corpora), and c: recorded without an account on a corpus no
        // account sketched, it counts against every budget (`spent_for`).
        assert_eq!(before, 6.0);
        assert!(book.adopt_older(&kz), "the oldest key, keyed, is still found");
        assert_eq!(book.ledger(&kz.fingerprint).total_epsilon(), 1.0);
        // The older sketches still compare, under their stored key, and not with themselves.
        let o = book.overlaps("clinic", &keys(10..70).keyed(&local));
        assert!(o.iter().any(|(fp, v)| *fp == kx.fingerprint && *v > 0.6), "{o:?}");
        assert!(book.overlaps("clinic", &ky).iter().all(|(fp, _)| *fp != ky.fingerprint), "a corpus does not overlap itself");
        // Opened with another secret: refused, not read as empty.
        let err = book.key_with(&LocalKeys::from_secret(&[8; 32])).unwrap_err();
        assert!(matches!(err, LedgerError::OtherKey { .. }), "{err}");
        assert!(book.to_json().contains(&local.check) && !book.to_json().contains(&x.fingerprint));
    }

    #[test]
    fn a_book_keyed_elsewhere_is_imported_as_foreign_and_counts_against_every_budget() {
        let (here, there) = (LocalKeys::from_secret(&[1; 32]), LocalKeys::from_secret(&[2; 32]));
        let mut theirs = LedgerBook::default();
        theirs.key_with(&there).unwrap();
        let x = keys(0..60).keyed(&there);
        theirs.extend_run(&x.fingerprint, &run("a", 4.0, None));
        theirs.note_corpus("clinic", &x, || unreachable!());
        let mut mine = LedgerBook::default();
        mine.key_with(&here).unwrap();
        mine.merge(&LedgerBook::from_json(&theirs.to_json()).unwrap().for_import(&here));
        let anywhere = keys(500..560).keyed(&here);
        assert_eq!(mine.spent_for(Holder::Corpus(&anywhere.fingerprint), &anywhere.fingerprint, &[]), 4.0);
        assert_eq!(mine.spent_for(Holder::Account("other"), &anywhere.fingerprint, &[]), 4.0);
        assert!(mine.accounts["clinic"].corpora.iter().all(|c| c.sketch.values.is_empty()));
        assert_eq!(mine.key_check.as_deref(), Some(here.check.as_str()));
        // An unkeyed book (an older version's, from any machine) is keyed here and recognised.
        let mut old = LedgerBook::default();
        let y = keys(0..60);
        old.extend_run(&y.fingerprint, &run("b", 1.0, None));
        let mut mine = LedgerBook::default();
        mine.key_with(&here).unwrap();
        mine.merge(&old.for_import(&here));
        assert_eq!(mine.ledger(&y.keyed(&here).fingerprint).total_epsilon(), 1.0);
        assert!(mine.ledgers.values().all(|l| !l.foreign));
    }
}
