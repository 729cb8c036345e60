//! This browser's IndexedDB database `dpkps`: what the worker keeps between visits.
//!
//! - `embeddings`: term embeddings, keyed by (model checksum, term). Only terms that a DP
//!   release made public (the private vocabulary Ṽ) are written: *which* public-vocabulary
//!   terms occur in the corpus is private, so the embeddings of the other matched terms stay in
//!   memory and are dropped with the run. Reading the cache for any term leaks nothing.
//! - `meta`: the local secret (key `local-key`, a non-extractable `CryptoKey`:
//!   `super::local_key`), and the privacy ledger (key `ledger`), so that running again on the same corpus adds
//!   to what was spent. Every change to it ([`Store::update_ledger`]: a spend, an import, a
//!   utility check) is one read-modify-write readwrite transaction taken under the Web Lock
//!   [`LEDGER_LOCK`], so two tabs (two workers) recording at once cannot drop each other's
//!   spend: the second waits for the first and reads what it wrote.
//!
//! Nothing else is stored; the corpus never is.

use idb::{Database, ObjectStore, TransactionMode};
use wasm_bindgen::prelude::Closure;
use wasm_bindgen::{JsCast, JsValue};

use dpkps_core::embed::TermEmbeddings;
use dpkps_core::ledger::LedgerBook;
use dpkps_core::input::public_vocab::{PublicVocabulary, TermId};

const DB: &str = "dpkps";
const EMBEDDINGS: &str = "embeddings";
const META: &str = "meta";
/// The Web Lock every ledger update is taken under (all tabs of this origin).
pub const LEDGER_LOCK: &str = "dpkps-ledger";

pub struct Store {
    db: Database,
}

fn err(e: impl std::fmt::Display) -> String {
    format!("browser storage (IndexedDB): {e}")
}

fn key(checksum: &str, rows: &str, term: &str) -> JsValue {
    // `rows`: the model's `rows_key` ("r8-<fingerprints>": term batches of 8 rows,
    // `dpkps_core::embed::rows`, computed by this engine on this kind of CPU, in both its plans). Vectors cached by
    // older versions ("b1", or none: in batches whose rows depended on each other) or computed
    // another way are not read.
    JsValue::from_str(&format!("{checksum}\u{1f}{rows}\u{1f}{term}"))
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
        rows: &str,
        vocab: &PublicVocabulary,
        ids: &[TermId],
        out: &mut TermEmbeddings,
    ) -> Result<usize, String> {
        let tx = self.db.transaction(&[EMBEDDINGS], TransactionMode::ReadOnly).map_err(err)?;
        let store = tx.object_store(EMBEDDINGS).map_err(err)?;
        let mut found = 0;
        for &id in ids {
            let Some(v) = store.get(key(checksum, rows, vocab.term(id))).map_err(err)?.await.map_err(err)? else {
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
        rows: &str,
        vocab: &PublicVocabulary,
        released: &[TermId],
        emb: &TermEmbeddings,
    ) -> Result<(), String> {
        let tx = self.db.transaction(&[EMBEDDINGS], TransactionMode::ReadWrite).map_err(err)?;
        let store = tx.object_store(EMBEDDINGS).map_err(err)?;
        for &id in released {
            if let Some(v) = emb.get(id) {
                let arr = js_sys::Float32Array::from(v);
                store.put(&arr, Some(&key(checksum, rows, vocab.term(id)))).map_err(err)?.await.map_err(err)?;
            }
        }
        tx.commit().map_err(err)?.await.map_err(err)?;
        Ok(())
    }

    /// Runs `f` on the ledger as stored now and writes the result back, in one readwrite
    /// transaction under the Web Lock [`LEDGER_LOCK`]. If `f` fails nothing is written.
    pub async fn update_ledger<T>(&self, f: impl FnOnce(&mut LedgerBook) -> Result<T, String>) -> Result<T, String> {
        with_lock(LEDGER_LOCK, async {
            let tx = self.db.transaction(&[META], TransactionMode::ReadWrite).map_err(err)?;
            let store = tx.object_store(META).map_err(err)?;
            let mut book = match store.get(JsValue::from_str("ledger")).map_err(err)?.await.map_err(err)? {
                Some(v) => {
                    let text = v.as_string().ok_or_else(|| err("the saved ledger is not text"))?;
                    LedgerBook::from_json(&text).map_err(err)?
                }
                None => LedgerBook::default(),
            };
            let out = match f(&mut book) {
                Ok(out) => out,
                Err(e) => {
                    let _ = tx.abort();
                    return Err(e);
                }
            };
            store
                .put(&JsValue::from_str(&book.to_json()), Some(&JsValue::from_str("ledger")))
                .map_err(err)?
                .await
                .map_err(err)?;
            tx.commit().map_err(err)?.await.map_err(err)?;
            Ok(out)
        })
        .await?
    }

    /// The local secret (`super::local_key`): a non-extractable `CryptoKey` kept under
    /// `local-key`, made by `make` on first use under the ledger's Web Lock, so that two tabs
    /// agree on one.
    pub async fn local_secret<F: std::future::Future<Output = Result<JsValue, String>>>(&self, make: impl FnOnce() -> F) -> Result<JsValue, String> {
        with_lock(LEDGER_LOCK, async {
            let name = JsValue::from_str("local-key");
            let tx = self.db.transaction(&[META], TransactionMode::ReadOnly).map_err(err)?;
            let found = tx.object_store(META).map_err(err)?.get(name.clone()).map_err(err)?.await.map_err(err)?;
            drop(tx);
            if let Some(key) = found {
                return Ok(key);
            }
            let key = make().await?;
            let tx = self.db.transaction(&[META], TransactionMode::ReadWrite).map_err(err)?;
            tx.object_store(META).map_err(err)?.put(&key, Some(&name)).map_err(err)?.await.map_err(err)?;
            tx.commit().map_err(err)?.await.map_err(err)?;
            Ok(key)
        })
        .await?
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

}

/// Runs `work` while holding the Web Lock `name` (exclusive, shared by every tab and worker of
/// this origin): the lock is requested, and its callback returns a promise that is resolved
/// only once `work` has finished. Refuses where the browser has no Web Locks (then the ledger
/// could not be kept safely across tabs).
async fn with_lock<T>(name: &str, work: impl std::future::Future<Output = T>) -> Result<T, String> {
    use js_sys::{Function, Promise, Reflect};
    use wasm_bindgen_futures::JsFuture;
    let no_locks = || "this browser has no Web Locks (navigator.locks); the privacy ledger cannot be kept safely".to_string();
    let navigator = Reflect::get(&js_sys::global(), &JsValue::from_str("navigator")).map_err(|_| no_locks())?;
    let locks = Reflect::get(&navigator, &JsValue::from_str("locks")).map_err(|_| no_locks())?;
    if locks.is_undefined() || locks.is_null() {
        return Err(no_locks());
    }
    let request: Function = Reflect::get(&locks, &JsValue::from_str("request"))
        .ok()
        .and_then(|f| f.dyn_into().ok())
        .ok_or_else(no_locks)?;
    let mut release: Option<Function> = None;
    let held = Promise::new(&mut |resolve, _| release = Some(resolve));
    let mut granted: Option<Function> = None;
    let on_grant = Promise::new(&mut |resolve, _| granted = Some(resolve));
    let (Some(release), Some(granted)) = (release, granted) else { return Err(no_locks()) };
    let callback = Closure::once_into_js(move |_lock: JsValue| -> JsValue {
        let _ = granted.call1(&JsValue::NULL, &JsValue::TRUE);
        held.into()
    });
    let done = request
        .call2(&locks, &JsValue::from_str(name), &callback)
        .map_err(|e| format!("the ledger lock could not be requested: {e:?}"))?;
    // The request's own promise settles only after release, or at once if it fails (then the
    // race rejects): wait for whichever comes first.
    let done: Promise = done.dyn_into().map_err(|_| no_locks())?;
    let first = Promise::race(&js_sys::Array::of2(&on_grant, &done));
    let got = JsFuture::from(first).await.map_err(|e| format!("the ledger lock: {e:?}"))?;
    if got != JsValue::TRUE {
        return Err(format!("the ledger lock could not be taken: {got:?}"));
    }
    let out = work.await;
    let _ = release.call0(&JsValue::NULL);
    let _ = JsFuture::from(done).await;
    Ok(out)
}
