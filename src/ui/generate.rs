//! The LLM step in the page: settings, the review of what will be sent, generation with
//! retries and backoff, saving each document as it arrives, resuming after a reload.
//! Request building, reply parsing and the retry policy are in `crate::llm` (tested natively);
//! this module only sends with `fetch` and keeps state in signals.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use crate::llm::{backoff_ms, parse_reply, AuditEntry, AuditPhase, Job, LlmError, LlmSettings, Outcome};
use crate::prompt::{parse_examples, PromptSettings};
use crate::protocol::RunResult;

use super::jobstore;

thread_local! {
    static JOB: RefCell<Option<Job>> = const { RefCell::new(None) };
    static STOP: Cell<bool> = const { Cell::new(false) };
    /// A generation (or a discard) is under way in this tab: one at a time.
    static RUNNING: Cell<bool> = const { Cell::new(false) };
    /// The requests in flight, aborted by Stop.
    static INFLIGHT: RefCell<Vec<web_sys::AbortController>> = const { RefCell::new(Vec::new()) };
    /// The retry waits under way (each one's promise resolver), ended at once by Stop: a
    /// Retry-After can ask for a minute, and Stop must not wait it out.
    static WAITING: RefCell<Vec<js_sys::Function>> = const { RefCell::new(Vec::new()) };
    /// The API key, in memory only (unless the user asked to remember it).
    static KEY: RefCell<String> = const { RefCell::new(String::new()) };
}

const REMEMBER_KEY: &str = "dpkps.llm.key";

/// Progress of the current job, for the views.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct JobInfo {
    pub id: String,
    pub total: usize,
    pub done: usize,
    pub failed: usize,
    pub running: bool,
    pub tokens: usize,
}

#[derive(Clone, Copy)]
pub struct GenState {
    pub endpoint: RwSignal<String>,
    pub model: RwSignal<String>,
    pub key: RwSignal<String>,
    pub remember_key: RwSignal<bool>,
    pub temperature: RwSignal<String>,
    pub max_tokens: RwSignal<String>,
    pub concurrency: RwSignal<String>,
    pub timeout_s: RwSignal<String>,
    pub attempts: RwSignal<String>,
    pub doc_type: RwSignal<String>,
    pub system: RwSignal<String>,
    pub template: RwSignal<String>,
    pub examples: RwSignal<String>,
    pub examples_public: RwSignal<bool>,
    pub reviewed: RwSignal<bool>,
    pub connection: RwSignal<Option<String>>,
    pub job: RwSignal<Option<JobInfo>>,
    /// (index, label, text) of the latest documents.
    pub recent: RwSignal<Vec<(usize, String, String)>>,
    /// A job from an earlier visit with documents left: (done, total).
    pub resumable: RwSignal<Option<(usize, usize)>>,
    /// The saved job is being generated in another tab or window (its Web Lock is held).
    pub elsewhere: RwSignal<bool>,
    /// This tab is starting, running or discarding a job (Send and Resume are disabled).
    pub busy: RwSignal<bool>,
    pub error: RwSignal<Option<String>>,
}

fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.local_storage().ok().flatten())
}

impl GenState {
    pub fn new() -> Self {
        let d = LlmSettings::default();
        let p = PromptSettings::default();
        let remembered = local_storage().and_then(|s| s.get_item(REMEMBER_KEY).ok().flatten());
        GenState {
            endpoint: RwSignal::new(d.endpoint),
            model: RwSignal::new(String::new()),
            key: RwSignal::new(remembered.clone().unwrap_or_default()),
            remember_key: RwSignal::new(remembered.is_some()),
            temperature: RwSignal::new(d.temperature.to_string()),
            max_tokens: RwSignal::new(d.max_tokens.to_string()),
            concurrency: RwSignal::new(d.concurrency.to_string()),
            timeout_s: RwSignal::new(d.timeout_s.to_string()),
            attempts: RwSignal::new(d.max_attempts.to_string()),
            doc_type: RwSignal::new(p.doc_type),
            system: RwSignal::new(p.system),
            template: RwSignal::new(p.template),
            examples: RwSignal::new(String::new()),
            examples_public: RwSignal::new(false),
            reviewed: RwSignal::new(false),
            connection: RwSignal::new(None),
            job: RwSignal::new(None),
            recent: RwSignal::new(Vec::new()),
            resumable: RwSignal::new(None),
            elsewhere: RwSignal::new(false),
            busy: RwSignal::new(false),
            error: RwSignal::new(None),
        }
    }

    pub fn llm_settings(&self) -> Result<LlmSettings, String> {
        let num = |name: &str, s: RwSignal<String>| -> Result<f64, String> {
            s.get().trim().parse::<f64>().map_err(|_| format!("{name}: {:?} is not a number", s.get()))
        };
        let s = LlmSettings {
            endpoint: self.endpoint.get().trim().to_string(),
            model: self.model.get().trim().to_string(),
            temperature: num("temperature", self.temperature)?,
            max_tokens: num("max tokens", self.max_tokens)?.clamp(0.0, u32::MAX as f64) as u32,
            concurrency: num("concurrency", self.concurrency)?.max(0.0) as usize,
            timeout_s: num("timeout", self.timeout_s)?,
            max_attempts: num("attempts", self.attempts)?.clamp(0.0, 1000.0) as u32,
        };
        s.check().map_err(|e| e.to_string())?;
        s.check_allowed(&allowed_endpoints()).map_err(|e| e.to_string())?;
        s.check_key(&self.key.get()).map_err(|e| e.to_string())?;
        Ok(s)
    }

    /// What is wrong with the endpoint as typed, in plain words (shown at the field).
    pub fn endpoint_error(&self) -> Option<String> {
        let s = LlmSettings { endpoint: self.endpoint.get().trim().to_string(), ..LlmSettings::default() };
        s.endpoint_url()
            .and_then(|_| s.check_allowed(&allowed_endpoints()))
            .and_then(|_| browser_agrees(&s.endpoint))
            .err()
            .map(|e| capitalise(&e.to_string()))
    }

    /// Why the key may not be sent to this endpoint, if it may not (shown at the key field).
    pub fn key_error(&self) -> Option<String> {
        let s = LlmSettings { endpoint: self.endpoint.get().trim().to_string(), ..LlmSettings::default() };
        match s.check_key(&self.key.get()) {
            Err(e @ (LlmError::KeyOverPlainHttp(_) | LlmError::SecretInUrl(_))) => Some(capitalise(&e.to_string())),
            _ => None,
        }
    }

    pub fn prompt_settings(&self) -> Result<PromptSettings, String> {
        let few_shot = parse_examples(&self.examples.get()).map_err(|e| e.to_string())?;
        if !few_shot.is_empty() && !self.examples_public.get() {
            return Err("Confirm that the few-shot examples are public (not taken from the private corpus).".into());
        }
        let p = PromptSettings { doc_type: self.doc_type.get(), system: self.system.get(), template: self.template.get(), few_shot };
        p.check().map_err(|e| e.to_string())?;
        Ok(p)
    }

    /// The job that would be sent for `result`, or why not.
    pub fn plan(&self, result: &RunResult) -> Result<Job, String> {
        let llm = self.llm_settings()?;
        let prompts = self.prompt_settings()?;
        let id = format!("{:08x}", (js_sys::Math::random() * f64::from(u32::MAX)) as u32);
        let created = js_sys::Date::new_0().to_iso_string().as_string().unwrap_or_default();
        let mut job = Job::new(id, created, llm, prompts, &result.sequences, result.report.clone());
        job.keyed = !self.key.get().trim().is_empty();
        Ok(job)
    }

    pub fn set_key(&self, key: String) {
        KEY.with(|k| *k.borrow_mut() = key.clone());
        self.key.set(key);
        self.store_key();
    }

    pub fn set_remember(&self, on: bool) {
        self.remember_key.set(on);
        self.store_key();
    }

    fn store_key(&self) {
        if let Some(s) = local_storage() {
            if self.remember_key.get_untracked() {
                let _ = s.set_item(REMEMBER_KEY, &self.key.get_untracked());
            } else {
                let _ = s.remove_item(REMEMBER_KEY);
            }
        }
    }

    fn refresh(&self) {
        let info = JOB.with(|j| {
            j.borrow().as_ref().map(|j| JobInfo {
                id: j.id.clone(),
                total: j.items.len(),
                done: j.done(),
                failed: j.failed(),
                running: self.job.get_untracked().is_some_and(|i| i.running),
                tokens: j.estimated_tokens(),
            })
        });
        self.job.set(info);
    }

    fn set_running(&self, running: bool) {
        self.job.update(|j| {
            if let Some(j) = j {
                j.running = running;
            }
        });
    }

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

    /// Takes the tab's one generation slot, synchronously (a second click, or Resume while a
    /// job runs, is refused here before anything is awaited). Released by [`Self::release`].
    fn claim(&self) -> bool {
        if RUNNING.get() {
            self.error.set(Some("A generation is already running in this tab: stop it first.".into()));
            return false;
        }
        RUNNING.set(true);
        self.busy.set(true);
        true
    }

    fn release(&self) {
        RUNNING.set(false);
        self.busy.set(false);
        self.set_running(false);
    }

    /// Sends a reviewed job: saved first, then generated, under the job's Web Lock.
    pub fn start(&self, mut job: Job) {
        if !self.claim() {
            return;
        }
        let this = *self;
        this.error.set(None);
        this.recent.set(Vec::new());
        // A new job replaces the saved one: the old Resume banner would resume or discard it.
        this.resumable.set(None);
        this.elsewhere.set(false);
        // The previous job's progress must not show while the new one is being saved.
        this.job.set(None);
        job.outcomes.clear();
        leptos::task::spawn_local(async move {
            // The saved job may be generating in another tab: not replaced under its feet.
            let old = jobstore::load_job().await.ok().flatten().map(|j| j.id);
            let old_lock = match old {
                Some(id) if id != job.id => match try_lock(&lock_name(&id)).await {
                    Ok(Some(l)) => Some(l),
                    Ok(None) => {
                        this.error.set(Some(
                            "Nothing was sent: another tab or window of this browser is generating the saved job. \
                             Stop it there (or wait until it finishes), then send this one."
                                .into(),
                        ));
                        return this.release();
                    }
                    Err(e) => {
                        this.error.set(Some(format!("Nothing was sent: {e}.")));
                        return this.release();
                    }
                },
                _ => None,
            };
            let lock = match try_lock(&lock_name(&job.id)).await {
                Ok(Some(l)) => l,
                Ok(None) => {
                    this.error.set(Some("Nothing was sent: this job is already running in another tab.".into()));
                    return this.release();
                }
                Err(e) => {
                    this.error.set(Some(format!("Nothing was sent: {e}.")));
                    return this.release();
                }
            };
            if let Err(e) = jobstore::save_new_job(&job).await {
                this.error.set(Some(format!("{e}. Nothing was sent: without storage a crash would lose documents.")));
                return this.release();
            }
            drop(old_lock);
            JOB.with(|j| *j.borrow_mut() = Some(job));
            this.reviewed.set(false);
            this.generate(lock, false).await;
        });
    }

    /// Looks for a job left by an earlier visit (called once at start).
    pub fn restore(&self) {
        let this = *self;
        leptos::task::spawn_local(async move {
            match jobstore::load_job().await {
                Ok(Some(job)) => {
                    let left = job.pending(true).len();
                    let (done, total) = (job.done(), job.items.len());
                    let name = lock_name(&job.id);
                    JOB.with(|j| *j.borrow_mut() = Some(job));
                    this.refresh();
                    if left > 0 {
                        this.elsewhere.set(lock_held(&name).await);
                        this.resumable.set(Some((done, total)));
                    }
                }
                Ok(None) => {}
                Err(e) => this.error.set(Some(e)),
            }
        });
    }

    /// Whether resuming the loaded job needs the API key typed again (it was made with one,
    /// and this browser did not remember it).
    pub fn needs_key(&self) -> bool {
        self.with_job(|j| j.keyed).unwrap_or(false) && self.key.get().trim().is_empty()
    }

    pub fn resume(&self) {
        self.continue_job(true);
    }

    pub fn retry_failed(&self) {
        self.continue_job(true);
    }

    /// Resume or retry: under the job's Web Lock, from what is saved (another tab may have
    /// finished documents since this page read the job).
    fn continue_job(&self, retry_failed: bool) {
        if self.needs_key() {
            self.error.set(Some(
                "This job was sent with an API key, which this browser does not remember: enter the key (API key field), \
                 then Resume. Nothing was sent."
                    .into(),
            ));
            return;
        }
        let Some(id) = self.with_job(|j| j.id.clone()) else { return };
        if !self.claim() {
            return;
        }
        let this = *self;
        this.error.set(None);
        leptos::task::spawn_local(async move {
            let lock = match try_lock(&lock_name(&id)).await {
                Ok(Some(l)) => l,
                Ok(None) => {
                    this.elsewhere.set(true);
                    this.error.set(Some(
                        "Nothing was sent: this job is being generated in another tab or window of this browser. \
                         Resume here once it has stopped there."
                            .into(),
                    ));
                    return this.release();
                }
                Err(e) => {
                    this.error.set(Some(format!("Nothing was sent: {e}.")));
                    return this.release();
                }
            };
            match jobstore::load_job().await {
                Ok(Some(job)) if job.id == id => JOB.with(|j| *j.borrow_mut() = Some(job)),
                Ok(_) => {
                    JOB.with(|j| *j.borrow_mut() = None);
                    this.job.set(None);
                    this.resumable.set(None);
                    this.error.set(Some("Nothing was sent: this job was replaced or discarded in another tab.".into()));
                    return this.release();
                }
                Err(e) => {
                    this.error.set(Some(format!("Nothing was sent: {e}.")));
                    return this.release();
                }
            }
            this.resumable.set(None);
            this.elsewhere.set(false);
            this.generate(lock, retry_failed).await;
        });
    }

    pub fn discard(&self) {
        let Some(id) = self.with_job(|j| j.id.clone()) else { return };
        if !self.claim() {
            return;
        }
        let this = *self;
        leptos::task::spawn_local(async move {
            match try_lock(&lock_name(&id)).await {
                Ok(Some(_lock)) => {
                    if let Err(e) = jobstore::discard_job().await {
                        this.error.set(Some(e));
                    }
                    JOB.with(|j| *j.borrow_mut() = None);
                    this.job.set(None);
                    this.resumable.set(None);
                    this.recent.set(Vec::new());
                }
                Ok(None) => this.error.set(Some("Not discarded: this job is being generated in another tab.".into())),
                Err(e) => this.error.set(Some(e)),
            }
            this.release();
        });
    }

    /// Stops the job: no new request, and the ones in flight are aborted (their documents
    /// stay pending; Resume sends them).
    pub fn stop(&self) {
        STOP.set(true);
        for c in INFLIGHT.with(|f| std::mem::take(&mut *f.borrow_mut())) {
            c.abort();
        }
        for wake in WAITING.with(|w| std::mem::take(&mut *w.borrow_mut())) {
            let _ = wake.call0(&JsValue::NULL);
        }
    }

    /// Generates every pending document of the loaded job with `concurrency` requests in
    /// flight, holding `lock` (the job's Web Lock) until the last lane ends; then frees the
    /// tab's generation slot.
    async fn generate(&self, lock: HeldLock, retry_failed: bool) {
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
        STOP.set(false);
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
                while !STOP.get() {
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
        if !STOP.get() {
            self.error.set(Some(why));
        }
        self.stop();
    }

    pub fn with_job<T>(&self, f: impl FnOnce(&Job) -> T) -> Option<T> {
        JOB.with(|j| j.borrow().as_ref().map(f))
    }
}

/// The Web Lock a job runs under (every tab and window of this origin).
fn lock_name(job_id: &str) -> String {
    format!("dpkps-job-{job_id}")
}

fn lock_manager() -> Result<JsValue, String> {
    let none = || "this browser has no Web Locks (navigator.locks), so two tabs could send the same job twice".to_string();
    let navigator = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("navigator")).map_err(|_| none())?;
    let locks = js_sys::Reflect::get(&navigator, &JsValue::from_str("locks")).map_err(|_| none())?;
    if locks.is_undefined() || locks.is_null() {
        return Err(none());
    }
    Ok(locks)
}

fn method(obj: &JsValue, name: &str) -> Result<js_sys::Function, String> {
    js_sys::Reflect::get(obj, &JsValue::from_str(name))
        .ok()
        .and_then(|f| f.dyn_into().ok())
        .ok_or_else(|| format!("navigator.locks.{name} is missing"))
}

/// A Web Lock held by this tab; released when dropped.
struct HeldLock {
    release: js_sys::Function,
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        let _ = self.release.call0(&JsValue::NULL);
    }
}

/// Takes the exclusive Web Lock `name` if nobody holds it (`ifAvailable: true`); `Ok(None)`
/// when another tab, window or this one already does.
async fn try_lock(name: &str) -> Result<Option<HeldLock>, String> {
    let locks = lock_manager()?;
    let request = method(&locks, "request")?;
    let options = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&options, &JsValue::from_str("mode"), &JsValue::from_str("exclusive"));
    let _ = js_sys::Reflect::set(&options, &JsValue::from_str("ifAvailable"), &JsValue::TRUE);
    // `answered` resolves with the release function (granted) or null (not available); the
    // lock is held until `held`, the promise the callback returns, is resolved.
    let mut answer: Option<js_sys::Function> = None;
    let answered = js_sys::Promise::new(&mut |resolve, _| answer = Some(resolve));
    let answer = answer.ok_or("internal: no resolver")?;
    let callback = wasm_bindgen::closure::Closure::once_into_js(move |lock: JsValue| -> JsValue {
        if lock.is_null() || lock.is_undefined() {
            let _ = answer.call1(&JsValue::NULL, &JsValue::NULL);
            return JsValue::UNDEFINED;
        }
        let mut release: Option<js_sys::Function> = None;
        let held = js_sys::Promise::new(&mut |resolve, _| release = Some(resolve));
        let _ = answer.call1(&JsValue::NULL, &release.map(JsValue::from).unwrap_or(JsValue::NULL));
        held.into()
    });
    let done = request
        .call3(&locks, &JsValue::from_str(name), &options, &callback)
        .map_err(|e| format!("the job's lock could not be requested: {}", js_error(&e)))?;
    let done: js_sys::Promise = done.dyn_into().map_err(|_| "navigator.locks.request gave no promise".to_string())?;
    // The request's promise settles only after release, or at once if the request fails.
    let first = js_sys::Promise::race(&js_sys::Array::of2(&answered, &done));
    let got = JsFuture::from(first).await.map_err(|e| format!("the job's lock: {}", js_error(&e)))?;
    Ok(got.dyn_into::<js_sys::Function>().ok().map(|release| HeldLock { release }))
}

/// Whether some tab or window holds the Web Lock `name` (read only: `navigator.locks.query`).
async fn lock_held(name: &str) -> bool {
    let Ok(locks) = lock_manager() else { return false };
    let Ok(query) = method(&locks, "query") else { return false };
    let Ok(p) = query.call0(&locks).and_then(|p| p.dyn_into::<js_sys::Promise>().map_err(JsValue::from)) else { return false };
    let Ok(snapshot) = JsFuture::from(p).await else { return false };
    let held = js_sys::Reflect::get(&snapshot, &JsValue::from_str("held")).unwrap_or(JsValue::UNDEFINED);
    js_sys::Array::from(&held).iter().any(|l| js_sys::Reflect::get(&l, &JsValue::from_str("name")).ok().and_then(|n| n.as_string()).as_deref() == Some(name))
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
        if STOP.get() {
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
            Err(_) if STOP.get() => return None,
            Err(e) if e.retryable() && attempt < settings.max_attempts && !STOP.get() => {
                attempt += 1;
                retry_wait(backoff_ms(attempt, retry_after)).await;
                if STOP.get() {
                    return None;
                }
            }
            Err(e) => return Some(Outcome::Failed { error: e.to_string(), attempts: attempt }),
        }
    }
}

/// The origins the page's Content-Security-Policy lets it connect to: its own, and the list
/// that scripts/csp.py wrote next to the policy (`<meta name="dpkps-allowed-endpoints">`, from
/// allowed-endpoints.txt). Read before sending, so that a refused endpoint gets a message that
/// says which file to edit instead of a bare "Failed to fetch".
fn allowed_endpoints() -> Vec<String> {
    let mut out = Vec::new();
    let Some(w) = web_sys::window() else { return out };
    if let Ok(origin) = w.location().origin() {
        out.push(origin);
    }
    let meta = w.document().and_then(|d| d.query_selector(r#"meta[name="dpkps-allowed-endpoints"]"#).ok().flatten());
    if let Some(content) = meta.and_then(|m| m.get_attribute("content")) {
        out.extend(content.split_whitespace().map(str::to_string));
    }
    out
}

/// The browser's own URL parser must see the same scheme, host and port as the checks did
/// (they refuse anything unusual, so this is a second look, not the rule).
fn browser_agrees(endpoint: &str) -> Result<(), LlmError> {
    let ours = crate::llm::EndpointUrl::parse(endpoint)?;
    let bad = || LlmError::BadEndpoint(endpoint.to_string());
    let theirs = web_sys::Url::new(endpoint.trim()).map_err(|_| bad())?;
    if theirs.origin() != ours.origin() || !theirs.username().is_empty() || !theirs.password().is_empty() {
        return Err(bad());
    }
    Ok(())
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect::<String>() + ".").unwrap_or_default()
}

/// Waits `ms` before a retry, or until Stop, whichever comes first. One timer, whose resolver
/// Stop also calls (see [`WAITING`]); the timer is cleared either way, so nothing is left
/// behind. One timer rather than short slices that look at `STOP`: Chromium throttles chained
/// timers in a background tab, where a long job is likely to run.
async fn retry_wait(ms: f64) {
    if STOP.get() {
        return;
    }
    let Some(window) = web_sys::window() else { return };
    let mut resolver: Option<js_sys::Function> = None;
    let waited = js_sys::Promise::new(&mut |resolve, _| resolver = Some(resolve));
    let Some(wake) = resolver else { return };
    let Ok(timer) = window.set_timeout_with_callback_and_timeout_and_arguments_0(&wake, ms as i32) else { return };
    WAITING.with(|w| w.borrow_mut().push(wake.clone()));
    let _ = JsFuture::from(waited).await;
    window.clear_timeout_with_handle(timer);
    WAITING.with(|w| w.borrow_mut().retain(|f| f != &wake));
}

fn js_error(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).unwrap_or_else(|| format!("{e:?}"))
}

/// One HTTP exchange with a timeout: (status, body, Retry-After seconds).
async fn http(url: &str, method: &str, body: Option<&str>, key: &str, timeout_s: f64) -> Result<(u16, String, Option<f64>), LlmError> {
    let window = web_sys::window().ok_or_else(|| LlmError::Network("no window".into()))?;
    let ctrl = web_sys::AbortController::new().map_err(|e| LlmError::Network(js_error(&e)))?;
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    let headers = web_sys::Headers::new().map_err(|e| LlmError::Network(js_error(&e)))?;
    if let Some(b) = body {
        let _ = headers.set("content-type", "application/json");
        init.set_body(&JsValue::from_str(b));
    }
    if !key.trim().is_empty() {
        let _ = headers.set("authorization", &format!("Bearer {}", key.trim()));
    }
    init.set_headers(&headers);
    init.set_signal(Some(&ctrl.signal()));
    INFLIGHT.with(|f| f.borrow_mut().push(ctrl.clone()));
    let abort = {
        let ctrl = ctrl.clone();
        wasm_bindgen::closure::Closure::once_into_js(move || ctrl.abort())
    };
    let timer = window
        .set_timeout_with_callback_and_timeout_and_arguments_0(abort.unchecked_ref(), (timeout_s * 1000.0) as i32)
        .unwrap_or(0);
    let outcome = async {
        let resp = JsFuture::from(window.fetch_with_str_and_init(url, &init)).await?;
        let resp: web_sys::Response = resp.dyn_into()?;
        let retry_after = resp.headers().get("retry-after").ok().flatten().and_then(|v| v.trim().parse::<f64>().ok());
        let text = JsFuture::from(resp.text()?).await?;
        Ok::<_, JsValue>((resp.status(), text.as_string().unwrap_or_default(), retry_after))
    }
    .await;
    window.clear_timeout_with_handle(timer);
    INFLIGHT.with(|f| f.borrow_mut().retain(|c| c != &ctrl));
    match outcome {
        Ok(v) => Ok(v),
        Err(_) if ctrl.signal().aborted() && STOP.get() => Err(LlmError::Network("stopped".into())),
        Err(_) if ctrl.signal().aborted() => Err(LlmError::Timeout(timeout_s)),
        Err(e) => Err(diagnose(&window, url, js_error(&e)).await),
    }
}

/// Why a request failed without a reply. The browser says only "Failed to fetch", for a server
/// that is down and for one that refused the page's origin (CORS) alike. An opaque GET
/// (`mode: no-cors`: no body, no key, nothing readable) to the same URL tells them apart: it
/// succeeds whenever the server answers at all. It goes to the endpoint the curator configured,
/// which the page's policy already allows; nothing else is contacted.
async fn diagnose(window: &web_sys::Window, url: &str, error: String) -> LlmError {
    let endpoint = web_sys::Url::new(url).map(|u| u.origin()).unwrap_or_else(|_| url.to_string());
    let init = web_sys::RequestInit::new();
    init.set_method("GET");
    init.set_mode(web_sys::RequestMode::NoCors);
    let probe = async {
        let ctrl = web_sys::AbortController::new().ok()?;
        init.set_signal(Some(&ctrl.signal()));
        let abort = wasm_bindgen::closure::Closure::once_into_js(move || ctrl.abort());
        let timer = window.set_timeout_with_callback_and_timeout_and_arguments_0(abort.unchecked_ref(), 5_000).ok()?;
        let answered = JsFuture::from(window.fetch_with_str_and_init(url, &init)).await.is_ok();
        window.clear_timeout_with_handle(timer);
        Some(answered)
    };
    match probe.await {
        Some(true) => {
            let page_origin = window.location().origin().unwrap_or_else(|_| "null".into());
            LlmError::CorsRefused { endpoint, page_origin }
        }
        _ => LlmError::Network(format!(
            "{error}: nothing answered at {endpoint}. Check that the server is running and that the address and port are right"
        )),
    }
}
