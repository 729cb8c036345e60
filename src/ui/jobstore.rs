//! IndexedDB database `dpkps-generate` (UI thread): DP outputs only, saved as they arrive so
//! that a reload or a crash loses nothing.
//!
//! - `job`: the current generation job (prompts built from DP keyphrase sequences, settings
//!   without the API key unless the user asked to remember it) and the last run's result;
//! - `outcomes`: one record per generated document, written the moment it arrives;
//! - `audit`: every request body sent and every response received.
//!
//! The private corpus is never written here (nor anywhere).

use idb::{Database, ObjectStore, TransactionMode};
use wasm_bindgen::JsValue;

use crate::llm::{AuditEntry, Job, Outcome};

const DB: &str = "dpkps-generate";
const JOB: &str = "job";
const OUTCOMES: &str = "outcomes";
const AUDIT: &str = "audit";

fn err(e: impl std::fmt::Display) -> String {
    format!("browser storage (IndexedDB): {e}")
}

async fn open() -> Result<Database, String> {
    Database::builder(DB)
        .version(1)
        .add_object_store(ObjectStore::builder(JOB))
        .add_object_store(ObjectStore::builder(OUTCOMES))
        .add_object_store(ObjectStore::builder(AUDIT).auto_increment(true))
        .build()
        .await
        .map_err(err)
}

async fn put(store_name: &str, key: Option<JsValue>, value: &str) -> Result<(), String> {
    let db = open().await?;
    let tx = db.transaction(&[store_name], TransactionMode::ReadWrite).map_err(err)?;
    let store = tx.object_store(store_name).map_err(err)?;
    store.put(&JsValue::from_str(value), key.as_ref()).map_err(err)?.await.map_err(err)?;
    tx.commit().map_err(err)?.await.map_err(err)?;
    db.close();
    Ok(())
}

async fn get(store_name: &str, key: &str) -> Result<Option<String>, String> {
    let db = open().await?;
    let tx = db.transaction(&[store_name], TransactionMode::ReadOnly).map_err(err)?;
    let store = tx.object_store(store_name).map_err(err)?;
    let v = store.get(JsValue::from_str(key)).map_err(err)?.await.map_err(err)?;
    db.close();
    Ok(v.and_then(|v| v.as_string()))
}

async fn all(store_name: &str) -> Result<Vec<String>, String> {
    let db = open().await?;
    let tx = db.transaction(&[store_name], TransactionMode::ReadOnly).map_err(err)?;
    let store = tx.object_store(store_name).map_err(err)?;
    let values = store.get_all(None, None).map_err(err)?.await.map_err(err)?;
    db.close();
    Ok(values.into_iter().filter_map(|v| v.as_string()).collect())
}

/// Starts a new job: saves it and forgets the outcomes of the previous one.
pub async fn save_new_job(job: &Job) -> Result<(), String> {
    let db = open().await?;
    let tx = db.transaction(&[JOB, OUTCOMES], TransactionMode::ReadWrite).map_err(err)?;
    tx.object_store(OUTCOMES).map_err(err)?.clear().map_err(err)?.await.map_err(err)?;
    let mut bare = job.clone();
    bare.outcomes.clear();
    let text = serde_json::to_string(&bare).map_err(err)?;
    tx.object_store(JOB)
        .map_err(err)?
        .put(&JsValue::from_str(&text), Some(&JsValue::from_str("current")))
        .map_err(err)?
        .await
        .map_err(err)?;
    tx.commit().map_err(err)?.await.map_err(err)?;
    db.close();
    Ok(())
}

/// Saves one document's outcome (called as soon as it arrives).
pub async fn save_outcome(index: usize, outcome: &Outcome) -> Result<(), String> {
    let text = serde_json::json!({ "index": index, "outcome": outcome }).to_string();
    put(OUTCOMES, Some(JsValue::from_f64(index as f64)), &text).await
}

/// The saved job with every saved outcome, if there is one.
pub async fn load_job() -> Result<Option<Job>, String> {
    let Some(text) = get(JOB, "current").await? else { return Ok(None) };
    let mut job: Job = serde_json::from_str(&text).map_err(|e| err(format!("the saved job is unreadable ({e})")))?;
    for rec in all(OUTCOMES).await? {
        #[derive(serde::Deserialize)]
        struct Rec {
            index: usize,
            outcome: Outcome,
        }
        if let Ok(r) = serde_json::from_str::<Rec>(&rec) {
            if r.index < job.items.len() {
                job.outcomes.insert(r.index, r.outcome);
            }
        }
    }
    Ok(Some(job))
}

pub async fn discard_job() -> Result<(), String> {
    let db = open().await?;
    let tx = db.transaction(&[JOB, OUTCOMES], TransactionMode::ReadWrite).map_err(err)?;
    tx.object_store(OUTCOMES).map_err(err)?.clear().map_err(err)?.await.map_err(err)?;
    tx.object_store(JOB).map_err(err)?.delete(JsValue::from_str("current")).map_err(err)?.await.map_err(err)?;
    tx.commit().map_err(err)?.await.map_err(err)?;
    db.close();
    Ok(())
}

pub async fn save_last_run(result_json: &str) -> Result<(), String> {
    put(JOB, Some(JsValue::from_str("last_run")), result_json).await
}

pub async fn load_last_run() -> Result<Option<String>, String> {
    get(JOB, "last_run").await
}

pub async fn audit(entry: &AuditEntry) -> Result<(), String> {
    put(AUDIT, None, &serde_json::to_string(entry).map_err(err)?).await
}

/// The audit log as JSON lines, oldest first.
pub async fn audit_jsonl() -> Result<String, String> {
    Ok(all(AUDIT).await?.into_iter().map(|l| l + "\n").collect())
}
