//! Sending: the connection test, and the page's side of the loop that generates every pending
//! document of the loaded job (`dpkps_core::llm::generate`, shared with the CLI: `concurrency`
//! requests in flight, each outcome saved before it counts, each attempt on record in the audit
//! log). Stop and the HTTP itself are in `crate::io::fetch`, the storage in `jobstore`.

use leptos::prelude::*;

use dpkps_core::llm::{AuditEntry, Clock, Control, Halt, JobStore, LlmError, Outcome, Reply, Transport, MODELS_REPLY_CAP};
use crate::io::allowlist::allowed_endpoints;
use crate::io::fetch::{self, http, retry_wait};
use crate::io::jobstore;
use crate::io::web_lock::HeldLock;

use super::{GenState, JOB};

impl GenState {
    /// Test connection: `GET …/models` with the key.
    pub fn test_connection(&self) {
        let this = *self;
        this.connection.set(Some("Connecting…".into()));
        let settings = match self.llm_settings() {
            Ok(s) => s,
            Err(e) => return this.connection.set(Some(format!("Not tried: {e}"))),
        };
        leptos::task::spawn_local(async move {
            let (url, key) = (settings.models_url(), this.key.get_untracked());
            let msg = match http(&url, "GET", None, &key, settings.timeout_s.min(20.0), MODELS_REPLY_CAP).await {
                Ok((200..=299, body, _)) => {
                    let ids: Vec<String> = serde_json::from_str::<serde_json::Value>(&body)
                        .ok()
                        .and_then(|v| v["data"].as_array().cloned())
                        .map(|a| a.iter().filter_map(|m| m["id"].as_str().map(str::to_string)).collect())
                        .unwrap_or_default();
                    format!("Connected. Models offered: {}", if ids.is_empty() { "(none listed)".into() } else { ids.join(", ") })
                }
                Ok((status, body, _)) => format!("The endpoint answered HTTP {status}: {}", body.chars().take(200).collect::<String>()),
                Err(e) => format!("Could not connect: {e}"),
            };
            this.connection.set(Some(msg));
        });
    }

    /// Stops the job: no new request, and the ones in flight are aborted (their documents
    /// stay pending; Resume sends them).
    pub fn stop(&self) {
        fetch::stop_all();
    }

    /// Generates every pending document of the loaded job with `concurrency` requests in
    /// flight ([`dpkps_core::llm::generate`] over [`PageHost`]), holding `lock` (the job's Web Lock)
    /// until the last lane ends; then frees the tab's generation slot.
    pub(super) async fn generate(&self, lock: HeldLock, retry_failed: bool) {
        let this = *self;
        let Some((job, pending)) = JOB.with(|j| j.borrow().as_ref().map(|j| (j.clone(), j.pending(retry_failed)))) else {
            return this.release();
        };
        // A resumed job was checked when it was made; the page's allowlist or the key may
        // have changed since.
        let key = self.key.get_untracked();
        if let Err(e) = job.llm.check_allowed(&allowed_endpoints()).and_then(|_| job.llm.check_key(&key)) {
            self.error.set(Some(format!("Nothing was sent: {e}.")));
            return this.release();
        }
        fetch::clear_stop();
        self.refresh();
        self.set_running(true);
        let host = PageHost { g: this, key, job_id: job.id.clone(), max_bytes: job.llm.reply_cap() };
        dpkps_core::llm::generate(&host, &job, pending).await;
        drop(lock);
        self.release();
        self.refresh();
        // Stopped (or halted) with documents never answered: the banner offers Resume and
        // Discard at once, as after a reload (failed ones have "Retry failed documents").
        let left = JOB.with(|j| j.borrow().as_ref().map(|j| (j.pending(false).len(), j.done(), j.items.len())));
        if let Some((_, done, total)) = left.filter(|&(left, _, _)| left > 0) {
            self.elsewhere.set(false);
            self.resumable.set(Some((done, total)));
        }
    }

    /// Stops the running job because something cannot be kept safely (storage), saying why.
    fn halt(&self, why: String) {
        if !fetch::stopped() {
            self.error.set(Some(why));
        }
        self.stop();
    }

}

fn now_iso() -> String {
    js_sys::Date::new_0().to_iso_string().as_string().unwrap_or_default()
}

/// The page's side of the shared sending loop ([`dpkps_core::llm::generate`]): `fetch` with the
/// key typed in the page, IndexedDB (`jobstore`), retry waits that Stop ends, and the signals
/// that show progress.
struct PageHost {
    g: GenState,
    key: String,
    job_id: String,
    /// The most read of one reply (`LlmSettings::reply_cap`).
    max_bytes: usize,
}

impl Transport for PageHost {
    async fn post(&self, url: &str, body: &str, timeout_s: f64) -> Result<Reply, LlmError> {
        let (status, body, retry_after_s) = http(url, "POST", Some(body), &self.key, timeout_s, self.max_bytes).await?;
        Ok(Reply { status, body, retry_after_s })
    }
}

impl JobStore for PageHost {
    type Error = String;

    async fn audit(&self, entry: &AuditEntry) -> Result<(), String> {
        jobstore::audit(entry).await
    }

    async fn save_outcome(&self, job: &str, index: usize, outcome: &Outcome) -> Result<(), String> {
        jobstore::save_outcome(job, index, outcome).await
    }

    fn counted(&self, index: usize, outcome: Outcome) {
        if let Outcome::Done { text, .. } = &outcome {
            let label = JOB.with(|j| j.borrow().as_ref().and_then(|j| j.items.get(index)?.label.clone())).unwrap_or_default();
            self.g.recent.update(|r| {
                r.insert(0, (index, label, text.clone()));
                r.truncate(5);
            });
        }
        JOB.with(|j| {
            if let Some(j) = j.borrow_mut().as_mut() {
                j.record(&self.job_id, index, outcome);
            }
        });
        self.g.refresh();
    }
}

impl Clock for PageHost {
    fn now(&self) -> String {
        now_iso()
    }

    async fn sleep(&self, ms: f64) {
        retry_wait(ms).await;
    }
}

impl Control for PageHost {
    fn stopped(&self) -> bool {
        fetch::stopped()
    }

    fn halt(&self, why: Halt) {
        let why = match why {
            Halt::OutcomeNotSaved { index, error } => format!(
                "Generation stopped: document #{} could not be saved ({error}). Nothing more is sent. \
                 Free some browser storage, then Resume: what was saved is kept, the rest is sent then.",
                index + 1
            ),
            Halt::AuditBeforeSending { index, error } => format!(
                "Generation stopped before document #{} was sent: the audit log could not be written ({error}). \
                 Free some browser storage, then Resume.",
                index + 1
            ),
            Halt::AuditAfterReply { error, .. } => {
                format!("Generation stopped: the audit log could not be written ({error}). Free some browser storage, then Resume.")
            }
        };
        self.g.halt(why);
    }
}
