//! The LLM step's state: the settings as typed (checked into `LlmSettings` and
//! `PromptSettings`), the API key (remembered only on request), and the loaded job. Request
//! building, reply parsing and the retry policy are in `dpkps_core::llm` (tested natively). The job's
//! life (send, resume, discard, under its Web Lock) is in [`job`], the sending loop in [`send`].

mod job;
mod send;

use std::cell::{Cell, RefCell};

use leptos::prelude::*;

use std::collections::BTreeMap;

use dpkps_core::llm::{Job, LlmError, LlmSettings, Outcome, ReplyForm};
use dpkps_core::llm::prompt::{parse_examples, PromptSettings};
use dpkps_core::protocol::RunResult;
use dpkps_core::sample::SequenceOut;

use crate::io::allowlist::{allowed_endpoints, browser_agrees};
use crate::io::storage;

thread_local! {
    static JOB: RefCell<Option<Job>> = const { RefCell::new(None) };
    /// A generation (or a discard) is under way in this tab: one at a time.
    static RUNNING: Cell<bool> = const { Cell::new(false) };
    /// The form of each generated document of the loaded job (its id; index → form), checked
    /// once per document rather than at every refresh.
    static FORMS: RefCell<(String, BTreeMap<usize, ReplyForm>)> = RefCell::new(Default::default());
}

const REMEMBER_KEY: &str = "dpkps.llm.key";

/// Whether the page was opened from a file (`file://`). Every page opened from a file in this
/// browser shares one storage origin, so a key remembered there could be read by any other HTML
/// file opened from disk: "remember" is not offered (docs/deployment.md, "Storage from a file").
fn opened_from_file() -> bool {
    web_sys::window().and_then(|w| w.location().protocol().ok()).is_some_and(|p| p == "file:")
}

/// Progress of the current job, for the views.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct JobInfo {
    pub id: String,
    pub total: usize,
    pub done: usize,
    pub failed: usize,
    pub running: bool,
    pub tokens: usize,
    /// How many generated documents have each form ([`dpkps_core::llm::check_reply`]).
    pub forms: Vec<(ReplyForm, usize)>,
}

impl JobInfo {
    /// "3 of 10 documents generated, 1 failed…" (an ellipsis while running).
    pub fn status_line(&self) -> String {
        format!("{} of {} documents generated, {} failed{}", self.done, self.total, self.failed, if self.running { "…" } else { "." })
    }

    /// "Forms: 11 prose, 1 list." (`None` before the first document).
    pub fn forms_line(&self) -> Option<String> {
        let parts: Vec<String> = self.forms.iter().map(|(f, n)| format!("{n} {}", f.as_str())).collect();
        (!parts.is_empty()).then(|| format!("Forms: {}.", parts.join(", ")))
    }
}

#[derive(Clone, Copy)]
pub struct GenState {
    pub endpoint: RwSignal<String>,
    pub model: RwSignal<String>,
    pub key: RwSignal<String>,
    pub remember_key: RwSignal<bool>,
    /// "Remember the key" is offered (not on a page opened from a file: [`opened_from_file`]).
    pub remember_allowed: bool,
    pub temperature: RwSignal<String>,
    pub max_tokens: RwSignal<String>,
    pub concurrency: RwSignal<String>,
    pub timeout_s: RwSignal<String>,
    pub attempts: RwSignal<String>,
    pub frequency_penalty: RwSignal<String>,
    /// Check each reply and ask once more when it is not a document ([`LlmSettings::check_replies`]).
    pub check_replies: RwSignal<bool>,
    pub doc_type: RwSignal<String>,
    pub system: RwSignal<String>,
    pub template: RwSignal<String>,
    pub examples: RwSignal<String>,
    pub examples_public: RwSignal<bool>,
    pub reviewed: RwSignal<bool>,
    /// Generate for the classes whose release is noise-dominated too (off by default).
    pub include_noise: RwSignal<bool>,
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

impl GenState {
    pub fn new() -> Self {
        let d = LlmSettings::default();
        let p = PromptSettings::default();
        let remember_allowed = !opened_from_file();
        if !remember_allowed {
            // One remembered before "remember" was withheld from file pages is forgotten.
            storage::set(REMEMBER_KEY, None);
        }
        let remembered = remember_allowed.then(|| storage::get(REMEMBER_KEY)).flatten();
        GenState {
            endpoint: RwSignal::new(d.endpoint),
            model: RwSignal::new(String::new()),
            key: RwSignal::new(remembered.clone().unwrap_or_default()),
            remember_key: RwSignal::new(remembered.is_some()),
            remember_allowed,
            temperature: RwSignal::new(d.temperature.to_string()),
            max_tokens: RwSignal::new(d.max_tokens.to_string()),
            concurrency: RwSignal::new(d.concurrency.to_string()),
            timeout_s: RwSignal::new(d.timeout_s.to_string()),
            attempts: RwSignal::new(d.max_attempts.to_string()),
            frequency_penalty: RwSignal::new(d.frequency_penalty.to_string()),
            check_replies: RwSignal::new(d.check_replies),
            doc_type: RwSignal::new(p.doc_type),
            system: RwSignal::new(p.system),
            template: RwSignal::new(p.template),
            examples: RwSignal::new(String::new()),
            examples_public: RwSignal::new(false),
            reviewed: RwSignal::new(false),
            include_noise: RwSignal::new(false),
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
            frequency_penalty: num("frequency penalty", self.frequency_penalty)?,
            check_replies: self.check_replies.get(),
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
        let sequences = SequenceOut::to_generate(&result.sequences, self.include_noise.get());
        if sequences.is_empty() {
            return Err("every class's release is noise-dominated, so nothing would be generated: include them below \
                        (their keyphrases are mostly noise), or run again with a larger ε_kde or merged classes"
                .into());
        }
        let mut job = Job::new(id, created, llm, prompts, &sequences, result.report.clone());
        job.keyed = !self.key.get().trim().is_empty();
        Ok(job)
    }

    pub fn set_key(&self, key: String) {
        self.key.set(key);
        self.store_key();
    }

    pub fn set_remember(&self, on: bool) {
        self.remember_key.set(on && self.remember_allowed);
        self.store_key();
    }

    fn store_key(&self) {
        let key = self.key.get_untracked();
        let keep = self.remember_allowed && self.remember_key.get_untracked();
        storage::set(REMEMBER_KEY, keep.then_some(key.as_str()));
    }

    /// Clears "I have reviewed what will be sent" whenever what would be sent changes: the
    /// endpoint, the model or another setting of the requests, a prompt field, the examples,
    /// the classes included, or a new run's sequences (`plan` is the view's job to be sent).
    /// Only what the requests would carry counts (the job's id and time are new at every
    /// recomputation), so an edit that changes nothing sent keeps the tick.
    pub fn watch_review(&self, plan: Memo<Option<Result<Job, String>>>) {
        let reviewed = self.reviewed;
        let sent = Memo::new(move |_| plan.get().map(|p| p.ok().map(|j| (j.llm, j.items, j.keyed))));
        Effect::new(move |seen: Option<()>| {
            // Read, not only tracked: a memo is computed (and follows `plan`) when read.
            sent.with(|_| ());
            if seen.is_some() {
                reviewed.set(false);
            }
        });
    }

    pub fn with_job<T>(&self, f: impl FnOnce(&Job) -> T) -> Option<T> {
        JOB.with(|j| j.borrow().as_ref().map(f))
    }

    fn set_job(job: Option<Job>) {
        JOB.with(|j| *j.borrow_mut() = job);
    }

    /// Whether resuming the loaded job needs the API key typed again (it was made with one,
    /// and this browser did not remember it).
    pub fn needs_key(&self) -> bool {
        self.with_job(|j| j.keyed).unwrap_or(false) && self.key.get().trim().is_empty()
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
                forms: forms_of(j),
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
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect::<String>() + ".").unwrap_or_default()
}

/// The forms of `job`'s generated documents, counted; each document is checked once.
fn forms_of(job: &Job) -> Vec<(ReplyForm, usize)> {
    FORMS.with(|f| {
        let mut f = f.borrow_mut();
        if f.0 != job.id {
            *f = (job.id.clone(), BTreeMap::new());
        }
        for (index, outcome) in &job.outcomes {
            if let (Outcome::Done { text, .. }, Some(item)) = (outcome, job.items.get(*index)) {
                f.1.entry(*index).or_insert_with(|| job.check(item, text).form);
            }
        }
        f.1.retain(|i, _| matches!(job.outcomes.get(i), Some(Outcome::Done { .. })));
        ReplyForm::ALL.iter().map(|form| (*form, f.1.values().filter(|x| *x == form).count())).filter(|(_, n)| *n > 0).collect()
    })
}
