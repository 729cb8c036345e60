//! This browser's IndexedDB database `dpkps`: what the worker keeps between visits.
//!
//! - `embeddings`: term embeddings, keyed by (model checksum, term). Only terms that a DP
//!   release made public (the private vocabulary Ṽ) are written: *which* public-vocabulary
//!   terms occur in the corpus is private, so the embeddings of the other matched terms stay in
//!   memory and are dropped with the run. Reading the cache for any term leaks nothing.
//! - `meta`: the privacy ledger (key `ledger`), so that running again on the same corpus adds
//!   to what was spent.
//!
//! Nothing else is stored; the corpus never is.

use idb::{Database, ObjectStore, TransactionMode};
use wasm_bindgen::{JsCast, JsValue};

use crate::embed::TermEmbeddings;
use crate::ledger::LedgerBook;
use crate::vocab::{PublicVocabulary, TermId};

const DB: &str = "dpkps";
const EMBEDDINGS: &str = "embeddings";
const META: &str = "meta";

pub struct Store {
    db: Database,
}

fn err(e: impl std::fmt::Display) -> String {
    format!("browser storage (IndexedDB): {e}")
}

fn key(checksum: &str, term: &str) -> JsValue {
    JsValue::from_str(&format!("{checksum}\u{1f}{term}"))
}

impl Store {
    pub async fn open() -> Result<Store, String> {
        let db = Database::builder(DB)
            .version(1)
            .add_object_store(ObjectStore::builder(EMBEDDINGS))
            .add_object_store(ObjectStore::builder(META))
            .build()
            .await
            .map_err(err)?;
        Ok(Store { db })
    }

    /// Looks every id up; fills `out` with what is cached and returns how many were found.
    pub async fn cached_embeddings(
        &self,
        checksum: &str,
        vocab: &PublicVocabulary,
        ids: &[TermId],
        out: &mut TermEmbeddings,
    ) -> Result<usize, String> {
        let tx = self.db.transaction(&[EMBEDDINGS], TransactionMode::ReadOnly).map_err(err)?;
        let store = tx.object_store(EMBEDDINGS).map_err(err)?;
        let mut found = 0;
        for &id in ids {
            let Some(v) = store.get(key(checksum, vocab.term(id))).map_err(err)?.await.map_err(err)? else {
                continue;
            };
            let Ok(arr) = v.dyn_into::<js_sys::Float32Array>() else { continue };
            // A vector of the wrong size or with a bad value is ignored (embedded afresh).
            if out.insert(id, &arr.to_vec()).is_ok() {
                found += 1;
            }
        }
        Ok(found)
    }

    /// Stores the embeddings of DP-released terms (see the module docs for why only those).
    pub async fn put_embeddings(
        &self,
        checksum: &str,
        vocab: &PublicVocabulary,
        released: &[TermId],
        emb: &TermEmbeddings,
    ) -> Result<(), String> {
        let tx = self.db.transaction(&[EMBEDDINGS], TransactionMode::ReadWrite).map_err(err)?;
        let store = tx.object_store(EMBEDDINGS).map_err(err)?;
        for &id in released {
            if let Some(v) = emb.get(id) {
                let arr = js_sys::Float32Array::from(v);
                store.put(&arr, Some(&key(checksum, vocab.term(id)))).map_err(err)?.await.map_err(err)?;
            }
        }
        tx.commit().map_err(err)?.await.map_err(err)?;
        Ok(())
    }

    pub async fn ledger(&self) -> Result<LedgerBook, String> {
        let tx = self.db.transaction(&[META], TransactionMode::ReadOnly).map_err(err)?;
        let store = tx.object_store(META).map_err(err)?;
        match store.get(JsValue::from_str("ledger")).map_err(err)?.await.map_err(err)? {
            Some(v) => {
                let text = v.as_string().ok_or_else(|| err("the saved ledger is not text"))?;
                LedgerBook::from_json(&text).map_err(err)
            }
            None => Ok(LedgerBook::default()),
        }
    }

    pub async fn save_ledger(&self, book: &LedgerBook) -> Result<(), String> {
        let tx = self.db.transaction(&[META], TransactionMode::ReadWrite).map_err(err)?;
        let store = tx.object_store(META).map_err(err)?;
        store
            .put(&JsValue::from_str(&book.to_json()), Some(&JsValue::from_str("ledger")))
            .map_err(err)?
            .await
            .map_err(err)?;
        tx.commit().map_err(err)?.await.map_err(err)?;
        Ok(())
    }
}
