//! Sending: the connection test, and the loop that generates every pending document of the
//! loaded job with `concurrency` requests in flight, each saved before it counts, each attempt
//! on record in the audit log. Stop and the HTTP itself are in `crate::ui::io::fetch`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use leptos::prelude::*;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

use crate::llm::{backoff_ms, parse_reply, AuditEntry, AuditPhase, LlmSettings, Outcome};
use crate::ui::io::allowlist::allowed_endpoints;
use crate::ui::io::fetch::{self, http, retry_wait};
use crate::ui::io::jobstore;
use crate::ui::io::web_lock::HeldLock;

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
            let msg = match http(&settings.models_url(), "GET", None, &this.key.get_untracked(), settings.timeout_s.min(20.0)).await {
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
    /// flight, holding `lock` (the job's Web Lock) until the last lane ends; then frees the
    /// tab's generation slot.
    pub(super) async fn generate(&self, lock: HeldLock, retry_failed: bool) {
        let this = *self;
        let Some((settings, pending, job_id)) =
            JOB.with(|j| j.borrow().as_ref().map(|j| (j.llm.clone(), j.pending(retry_failed), j.id.clone())))
        else {
            return this.release();
        };
        // A resumed job was checked when it was made; the page's allowlist or the key may
        // have changed since.
        let key = self.key.get_untracked();
        if let Err(e) = settings.check_allowed(&allowed_endpoints()).and_then(|_| settings.check_key(&key)) {
            self.error.set(Some(format!("Nothing was sent: {e}.")));
            return this.release();
        }
        fetch::clear_stop();
        self.refresh();
        self.set_running(true);
        let queue = Rc::new(RefCell::new(VecDeque::from(pending)));
        let lanes = settings.concurrency.clamp(1, 64).min(queue.borrow().len().max(1));
        let live = Rc::new(Cell::new(lanes));
        let mut finish: Option<js_sys::Function> = None;
        let all_done = js_sys::Promise::new(&mut |resolve, _| finish = Some(resolve));
        let finish = Rc::new(finish);
        for _ in 0..lanes {
            let (queue, live, settings, key, job_id, finish) =
                (queue.clone(), live.clone(), settings.clone(), key.clone(), job_id.clone(), finish.clone());
            leptos::task::spawn_local(async move {
                while !fetch::stopped() {
                    let Some(index) = queue.borrow_mut().pop_front() else { break };
                    let Some(outcome) = generate_one(&this, &settings, &job_id, index, &key).await else { continue };
                    // Saved before it counts: a reload after this point will not send it again.
                    if let Err(e) = jobstore::save_outcome(&job_id, index, &outcome).await {
                        this.halt(format!(
                            "Generation stopped: document #{} could not be saved ({e}). Nothing more is sent. \
                             Free some browser storage, then Resume: what was saved is kept, the rest is sent then.",
                            index + 1
                        ));
                        break;
                    }
                    if let Outcome::Done { text, .. } = &outcome {
                        let label = JOB.with(|j| j.borrow().as_ref().and_then(|j| j.items.get(index)?.label.clone())).unwrap_or_default();
                        this.recent.update(|r| {
                            r.insert(0, (index, label, text.clone()));
                            r.truncate(5);
                        });
                    }
                    JOB.with(|j| {
                        if let Some(j) = j.borrow_mut().as_mut() {
                            j.record(&job_id, index, outcome);
                        }
                    });
                    this.refresh();
                }
                live.set(live.get() - 1);
                if live.get() == 0 {
                    if let Some(f) = finish.as_ref() {
                        let _ = f.call0(&JsValue::NULL);
                    }
                }
            });
        }
        let _ = JsFuture::from(all_done).await;
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

/// One document: attempts with backoff until success, a non-retryable error, or the limit.
/// Each attempt is on record in the audit log before it is sent ("sending") and after
/// ("response"). `None`: not finished (stopped, or the audit log could not be written; then
/// the job is halted): the document stays pending.
async fn generate_one(g: &GenState, settings: &LlmSettings, job_id: &str, index: usize, key: &str) -> Option<Outcome> {
    let body = JOB.with(|j| {
        let j = j.borrow();
        let j = j.as_ref().filter(|j| j.id == job_id)?;
        Some(settings.body(&j.items.get(index)?.messages))
    });
    let Some(body) = body else {
        return Some(Outcome::Failed { error: "the job is gone".into(), attempts: 0 });
    };
    let url = settings.completions_url();
    let mut attempt = 1;
    loop {
        let mut entry = AuditEntry {
            phase: AuditPhase::Sending,
            time: now_iso(),
            job: job_id.to_string(),
            index,
            attempt,
            url: url.clone(),
            request: body.clone(),
            status: None,
            response: String::new(),
            error: None,
        };
        if let Err(e) = jobstore::audit(&entry).await {
            g.halt(format!(
                "Generation stopped before document #{} was sent: the audit log could not be written ({e}). \
                 Free some browser storage, then Resume.",
                index + 1
            ));
            return None;
        }
        if fetch::stopped() {
            return None;
        }
        let sent = http(&url, "POST", Some(&body), key, settings.timeout_s).await;
        let (status, response, retry_after) = match &sent {
            Ok((s, b, r)) => (Some(*s), b.clone(), *r),
            Err(_) => (None, String::new(), None),
        };
        let result = match sent {
            Ok((s, b, _)) => parse_reply(s, &b),
            Err(e) => Err(e),
        };
        entry.phase = AuditPhase::Response;
        entry.time = now_iso();
        // The request body is in the "sending" entry just before.
        entry.request = String::new();
        entry.status = status;
        entry.response = response;
        entry.error = result.as_ref().err().map(ToString::to_string);
        if let Err(e) = jobstore::audit(&entry).await {
            g.halt(format!("Generation stopped: the audit log could not be written ({e}). Free some browser storage, then Resume."));
        }
        match result {
            Ok(text) => return Some(Outcome::Done { text, attempts: attempt }),
            // Aborted by Stop: not an outcome; Resume sends it again.
            Err(_) if fetch::stopped() => return None,
            Err(e) if e.retryable() && attempt < settings.max_attempts && !fetch::stopped() => {
                attempt += 1;
                retry_wait(backoff_ms(attempt, retry_after)).await;
                if fetch::stopped() {
                    return None;
                }
            }
            Err(e) => return Some(Outcome::Failed { error: e.to_string(), attempts: attempt }),
        }
    }
}

