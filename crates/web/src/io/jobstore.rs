//! IndexedDB database `dpkps-generate` (UI thread): DP outputs only, saved as they arrive so
//! that a reload or a crash loses nothing.
//!
//! - `job`: the current generation job (prompts built from DP keyphrase sequences, settings
//!   without the API key unless the user asked to remember it) and the last run's result;
//! - `outcomes`: one record per generated document, written the moment it arrives, keyed by
//!   `[job id, index]` (so two jobs never mix);
//! - `audit`: every request body, written before it is sent, and every response received;
//!   bodies capped at 64 KiB, only the newest jobs' entries kept (`dpkps_core::llm::AUDIT_KEEP_JOBS`);
//!   discarding a job deletes its entries with it ([`discard_job`]).
//!
//! The private corpus is never written here (nor anywhere).

use idb::{Database, ObjectStore, TransactionMode};
use wasm_bindgen::JsValue;

use dpkps_core::llm::{audit_to_prune, AuditEntry, Job, Outcome, OutcomeRecord, AUDIT_KEEP_JOBS};

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

/// Starts a new job: saves it, forgets the outcomes of the previous one, and prunes the audit
/// log to the newest jobs (best effort: a failed prune does not stop the job).
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
    let _ = prune_audit(&job.id).await;
    Ok(())
}

/// The keys of the audit entries, and the job id of each (empty when it does not read).
async fn audit_jobs(store: &ObjectStore) -> Result<(Vec<JsValue>, Vec<String>), String> {
    let keys = store.get_all_keys(None, None).map_err(err)?.await.map_err(err)?;
    let values = store.get_all(None, None).map_err(err)?.await.map_err(err)?;
    #[derive(serde::Deserialize)]
    struct JobOf {
        job: String,
    }
    let jobs: Vec<String> = values
        .iter()
        .map(|v| v.as_string().and_then(|t| serde_json::from_str::<JobOf>(&t).ok()).map(|j| j.job).unwrap_or_default())
        .collect();
    if keys.len() != jobs.len() {
        return Err(err("the audit log changed while it was read"));
    }
    Ok((keys, jobs))
}

/// Deletes the audit entries of all but the newest [`AUDIT_KEEP_JOBS`] jobs (`current` counts
/// as the newest).
async fn prune_audit(current: &str) -> Result<(), String> {
    let db = open().await?;
    let tx = db.transaction(&[AUDIT], TransactionMode::ReadWrite).map_err(err)?;
    let store = tx.object_store(AUDIT).map_err(err)?;
    let (keys, jobs) = audit_jobs(&store).await?;
    for i in audit_to_prune(&jobs, AUDIT_KEEP_JOBS, current) {
        store.delete(keys[i].clone()).map_err(err)?.await.map_err(err)?;
    }
    tx.commit().map_err(err)?.await.map_err(err)?;
    db.close();
    Ok(())
}

/// The IndexedDB key of one outcome: `[job id, index]`.
fn outcome_key(job: &str, index: usize) -> JsValue {
    js_sys::Array::of2(&JsValue::from_str(job), &JsValue::from_f64(index as f64)).into()
}

/// Saves one document's outcome (called as soon as it arrives), under its job.
pub async fn save_outcome(job: &str, index: usize, outcome: &Outcome) -> Result<(), String> {
    let rec = OutcomeRecord { job: Some(job.to_string()), index, outcome: outcome.clone() };
    put(OUTCOMES, Some(outcome_key(job, index)), &serde_json::to_string(&rec).map_err(err)?).await
}

/// The saved job with its saved outcomes (those of other jobs are ignored), if there is one.
pub async fn load_job() -> Result<Option<Job>, String> {
    let Some(text) = get(JOB, "current").await? else { return Ok(None) };
    let mut job: Job = serde_json::from_str(&text).map_err(|e| err(format!("the saved job is unreadable ({e})")))?;
    job.outcomes.clear();
    job.adopt(all(OUTCOMES).await?.iter().filter_map(|rec| serde_json::from_str::<OutcomeRecord>(rec).ok()));
    Ok(Some(job))
}

/// Discards job `id`: the saved job and its outcomes (when the saved job is still that one),
/// and its audit entries (requests and answers: after a discard no download and no stored
/// record holds its documents), in one transaction.
pub async fn discard_job(id: &str) -> Result<(), String> {
    let db = open().await?;
    let tx = db.transaction(&[JOB, OUTCOMES, AUDIT], TransactionMode::ReadWrite).map_err(err)?;
    // Read before anything is deleted: a failure here leaves the job whole.
    let audit = tx.object_store(AUDIT).map_err(err)?;
    let (keys, jobs) = audit_jobs(&audit).await?;
    // The saved job and its outcomes, when they are still this job's (another tab may have
    // replaced it since).
    let jobs_store = tx.object_store(JOB).map_err(err)?;
    let saved = jobs_store.get(JsValue::from_str("current")).map_err(err)?.await.map_err(err)?;
    #[derive(serde::Deserialize)]
    struct IdOf {
        id: String,
    }
    let saved_id = saved.and_then(|v| v.as_string()).and_then(|t| serde_json::from_str::<IdOf>(&t).ok()).map(|j| j.id);
    if saved_id.as_deref() == Some(id) {
        tx.object_store(OUTCOMES).map_err(err)?.clear().map_err(err)?.await.map_err(err)?;
        jobs_store.delete(JsValue::from_str("current")).map_err(err)?.await.map_err(err)?;
    }
    for (key, job) in keys.into_iter().zip(jobs) {
        if job == id {
            audit.delete(key).map_err(err)?.await.map_err(err)?;
        }
    }
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

/// Appends one entry to the audit log, its bodies capped ([`AuditEntry::capped`]).
pub async fn audit(entry: &AuditEntry) -> Result<(), String> {
    put(AUDIT, None, &serde_json::to_string(&entry.clone().capped()).map_err(err)?).await
}

/// The audit log as JSON lines, oldest first.
pub async fn audit_jsonl() -> Result<String, String> {
    Ok(all(AUDIT).await?.into_iter().map(|l| l + "\n").collect())
}
