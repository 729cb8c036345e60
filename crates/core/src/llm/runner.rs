//! The generation loop, shared by the page and the CLI: every pending document of a [`Job`]
//! with `concurrency` requests in flight; per document, attempts with backoff until a reply,
//! an error that is not worth another attempt, or the attempt limit; each attempt on record
//! in the audit log before it is sent (`"sending"`) and after (`"response"`); each outcome
//! saved before it counts, so that a job stopped at any point (Stop, a reload, a kill) resumes
//! with every document generated exactly once.
//!
//! What differs between the two is behind four small traits, implemented by the page
//! (`ui/state/generate/send.rs`: `fetch`, IndexedDB, Leptos signals) and by the CLI
//! (`cli/generate/`: an HTTP client, files in the output folder, stderr):
//! - [`Transport`]: one HTTP exchange (status, body, Retry-After);
//! - [`JobStore`]: the audit log and the saved outcomes, and counting an outcome once saved;
//! - [`Clock`]: the time written in the audit log, and the wait before a retry;
//! - [`Control`]: whether to stop, and halting when something cannot be kept.
//!
//! The lanes are plain futures joined on the caller's task ([`futures::future::join_all`]):
//! one thread on the page (the lanes interleave at their `await`s) and natively alike, so the
//! queue and the job are shared through a `RefCell`, never locked.

use std::cell::RefCell;
use std::collections::VecDeque;

use super::audit::{AuditEntry, AuditPhase};
use super::backoff::{backoff_ms, random_jitter};
use super::check::{check_reply, ReplyCheck};
use super::error::LlmError;
use super::job::{Job, Outcome};
use super::request::{parse_reply, within_cap};

/// Requests in flight at most, whatever the settings say ([`super::LlmSettings::check`]).
pub const MAX_LANES: usize = 64;

/// What came back from one HTTP exchange.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: u16,
    pub body: String,
    /// The server's `Retry-After`, in seconds (given as a number or an HTTP date:
    /// [`super::retry_after_s`]).
    pub retry_after_s: Option<f64>,
}

/// One HTTP exchange: `POST` of the JSON `body` to `url`, with the API key (if any) in the
/// `authorization` header, abandoned after `timeout_s` ([`LlmError::Timeout`]). A reply of
/// any status is a [`Reply`]; no reply is an error ([`LlmError::Network`], `Timeout`, …).
/// Redirects are not followed ([`LlmError::Redirected`]), and the body is read up to the job's
/// [`super::LlmSettings::reply_cap`] at most ([`LlmError::ReplyTooLong`]; the runner checks
/// the size again).
#[allow(async_fn_in_trait)]
pub trait Transport {
    async fn post(&self, url: &str, body: &str, timeout_s: f64) -> Result<Reply, LlmError>;
}

/// Where the job is kept: the audit log and the outcomes (IndexedDB; files).
#[allow(async_fn_in_trait)]
pub trait JobStore {
    type Error: std::fmt::Display;
    /// Appends one entry to the audit log (its bodies capped: [`AuditEntry::capped`]).
    async fn audit(&self, entry: &AuditEntry) -> Result<(), Self::Error>;
    /// Saves one document's outcome under its job, durably: once this returns `Ok`, a
    /// resumed job does not send the document again.
    async fn save_outcome(&self, job: &str, index: usize, outcome: &Outcome) -> Result<(), Self::Error>;
    /// The outcome is saved: count it (the job in memory, the progress shown).
    fn counted(&self, index: usize, outcome: Outcome);
}

#[allow(async_fn_in_trait)]
pub trait Clock {
    /// Now, as written in the audit log (ISO 8601 UTC).
    fn now(&self) -> String;
    /// Waits `ms` milliseconds before a retry; returns early once [`Control::stopped`].
    async fn sleep(&self, ms: f64);
    /// A random number in [0, 1) that spreads the waits before retries ([`backoff_ms`]).
    fn jitter(&self) -> f64 {
        random_jitter()
    }
}

pub trait Control {
    /// No new request is to be sent (Stop, or a halt).
    fn stopped(&self) -> bool;
    /// Something could not be kept: stop the job (from then on [`Control::stopped`] is true)
    /// and say why.
    fn halt(&self, why: Halt);
}

/// Why a job was halted: something that must be on record could not be written. The
/// document concerned stays pending (or, when only its answer's audit entry was lost, counts).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Halt {
    #[error("document #{} could not be saved ({error})", .index + 1)]
    OutcomeNotSaved { index: usize, error: String },
    #[error("the audit log could not be written before document #{} was sent ({error})", .index + 1)]
    AuditBeforeSending { index: usize, error: String },
    #[error("the audit log could not be written after document #{} was answered ({error})", .index + 1)]
    AuditAfterReply { index: usize, error: String },
}

/// Generates the documents `pending` (indices into `job.items`, in order) with
/// `job.llm.concurrency` requests in flight, until every one has an outcome or the job is
/// stopped. Outcomes are saved and counted through `host`; what is left pending is what a
/// resumed job sends.
pub async fn generate<H>(host: &H, job: &Job, pending: Vec<usize>)
where
    H: Transport + JobStore + Clock + Control,
{
    let queue = RefCell::new(VecDeque::from(pending));
    let lanes = job.llm.concurrency.clamp(1, MAX_LANES).min(queue.borrow().len().max(1));
    futures::future::join_all((0..lanes).map(|_| lane(host, job, &queue))).await;
}

/// One lane: takes the next pending document until none is left or the job stops.
async fn lane<H>(host: &H, job: &Job, queue: &RefCell<VecDeque<usize>>)
where
    H: Transport + JobStore + Clock + Control,
{
    while !host.stopped() {
        let Some(index) = queue.borrow_mut().pop_front() else { break };
        let Some(outcome) = generate_one(host, job, index).await else { continue };
        // Saved before it counts: a job resumed after this point does not send it again.
        if let Err(e) = host.save_outcome(&job.id, index, &outcome).await {
            host.halt(Halt::OutcomeNotSaved { index, error: e.to_string() });
            break;
        }
        host.counted(index, outcome);
    }
}

/// One document: attempts with backoff until success, a non-retryable error, or the limit.
/// Each attempt is on record in the audit log before it is sent ("sending") and after
/// ("response"). With [`super::LlmSettings::check_replies`], a reply that is not prose using
/// its keyphrases ([`check_reply`]) is asked for once more, at once (it is on record with
/// why), and the better of the two is kept. `None`: not finished (stopped, or the audit log
/// could not be written before sending; then the job is halted): the document stays pending.
pub async fn generate_one<H>(host: &H, job: &Job, index: usize) -> Option<Outcome>
where
    H: Transport + JobStore + Clock + Control,
{
    let settings = &job.llm;
    let Some(item) = job.items.get(index) else {
        return Some(Outcome::Failed { error: format!("the job has no document #{}", index + 1), attempts: 0 });
    };
    let examples: Vec<&str> = job.prompts.few_shot.iter().map(|f| f.text.as_str()).collect();
    let body = settings.body(&item.messages);
    let url = settings.completions_url();
    let mut attempt = 1;
    // A reply that failed the check, kept in case the one more asked for is no better.
    let mut first: Option<(String, ReplyCheck, u32)> = None;
    let keep_first = |first: Option<(String, ReplyCheck, u32)>| first.map(|(text, _, attempts)| Outcome::Done { text, attempts });
    loop {
        let mut entry = AuditEntry {
            phase: AuditPhase::Sending,
            time: host.now(),
            job: job.id.clone(),
            index,
            attempt,
            url: url.clone(),
            request: body.clone(),
            status: None,
            response: String::new(),
            error: None,
        };
        if let Err(e) = host.audit(&entry).await {
            host.halt(Halt::AuditBeforeSending { index, error: e.to_string() });
            return None;
        }
        if host.stopped() {
            return keep_first(first);
        }
        let sent = host.post(&url, &body, settings.timeout_s).await.and_then(|r| within_cap(r, settings.reply_cap()));
        let (status, response, retry_after) = match &sent {
            Ok(r) => (Some(r.status), r.body.clone(), r.retry_after_s),
            Err(_) => (None, String::new(), None),
        };
        let result = sent.and_then(|r| parse_reply(r.status, &r.body));
        let check = match &result {
            Ok(text) if settings.check_replies => Some(check_reply(text, &item.keyphrases, &examples)),
            _ => None,
        };
        // Asked once more: the first reply failed the check, and an attempt is left.
        let ask_again = first.is_none() && attempt < settings.max_attempts && check.is_some_and(|c| !c.usable());
        entry.phase = AuditPhase::Response;
        entry.time = host.now();
        // The request body is in the "sending" entry just before.
        entry.request = String::new();
        entry.status = status;
        entry.response = response;
        entry.error = match (&result, check) {
            (Err(e), _) => Some(e.to_string()),
            (Ok(_), Some(c)) if ask_again => Some(format!("{}: asked once more", c.why_not_usable())),
            _ => None,
        };
        if let Err(e) = host.audit(&entry).await {
            host.halt(Halt::AuditAfterReply { index, error: e.to_string() });
        }
        match (result, check) {
            (Ok(text), Some(c)) if ask_again => {
                first = Some((text, c, attempt));
                attempt += 1;
                if host.stopped() {
                    return keep_first(first);
                }
            }
            (Ok(text), check) => {
                return Some(match (first, check) {
                    // Both failed the check: the better of the two.
                    (Some((kept, k, _)), Some(c)) if !c.usable() && !c.better_than(&k) => Outcome::Done { text: kept, attempts: attempt },
                    _ => Outcome::Done { text, attempts: attempt },
                });
            }
            // Aborted by Stop: not an outcome (unless a first reply is in hand); a resumed job
            // sends it again.
            (Err(_), _) if host.stopped() => return keep_first(first),
            (Err(e), _) if e.retryable() && attempt < settings.max_attempts => {
                attempt += 1;
                host.sleep(backoff_ms(attempt, retry_after, host.jitter())).await;
                if host.stopped() {
                    return keep_first(first);
                }
            }
            (Err(e), _) => {
                return Some(match first {
                    Some((text, _, _)) => Outcome::Done { text, attempts: attempt },
                    None => Outcome::Failed { error: e.to_string(), attempts: attempt },
                })
            }
        }
    }
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use std::cell::Cell;
    use std::collections::HashMap;
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use super::*;
    use crate::llm::LlmSettings;
    use crate::llm::prompt::PromptSettings;
    use crate::sample::SequenceOut;

    /// Returns `Pending` once (waking itself): the other lanes run meanwhile, as they do while
    /// a real request is in flight.
    struct YieldOnce(bool);
    impl Future for YieldOnce {
        type Output = ();
        fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            if self.0 {
                return Poll::Ready(());
            }
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }

    /// A scripted endpoint and an in-memory store: what each document's requests get (in
    /// order; then a good reply), and everything the runner did.
    #[derive(Default)]
    struct Fake {
        replies: RefCell<HashMap<usize, VecDeque<Result<Reply, LlmError>>>>,
        posts: RefCell<Vec<usize>>,
        in_flight: Cell<usize>,
        max_in_flight: Cell<usize>,
        audit: RefCell<Vec<AuditEntry>>,
        saved: RefCell<Vec<(String, usize, Outcome)>>,
        counted: RefCell<Vec<usize>>,
        sleeps: RefCell<Vec<f64>>,
        /// The n-th save (0-based) fails; the n-th audit write fails.
        fail_save: Option<usize>,
        fail_audit: Option<usize>,
        audits_tried: Cell<usize>,
        /// Stop is pressed during the first wait before a retry.
        stop_in_sleep: bool,
        stop: Cell<bool>,
        halts: RefCell<Vec<Halt>>,
    }

    /// The document a request is for: its keyphrase `kp{i}x` is in the body.
    fn index_of(body: &str, n: usize) -> usize {
        (0..n).find(|i| body.contains(&format!("kp{i}x"))).expect("a document's request")
    }

    fn ok_reply(text: &str) -> Reply {
        let body = serde_json::json!({ "choices": [{ "message": { "role": "assistant", "content": text } }] }).to_string();
        Reply { status: 200, body, retry_after_s: None }
    }

    fn status(status: u16, retry_after_s: Option<f64>) -> Result<Reply, LlmError> {
        Ok(Reply { status, body: format!("status {status}"), retry_after_s })
    }

    impl Transport for Fake {
        async fn post(&self, _url: &str, body: &str, _timeout_s: f64) -> Result<Reply, LlmError> {
            let index = index_of(body, 100);
            self.posts.borrow_mut().push(index);
            self.in_flight.set(self.in_flight.get() + 1);
            self.max_in_flight.set(self.max_in_flight.get().max(self.in_flight.get()));
            YieldOnce(false).await;
            self.in_flight.set(self.in_flight.get() - 1);
            let scripted = self.replies.borrow_mut().get_mut(&index).and_then(VecDeque::pop_front);
            scripted.unwrap_or_else(|| Ok(ok_reply(&format!("text of kp{index}x"))))
        }
    }

    impl JobStore for Fake {
        type Error = String;
        async fn audit(&self, entry: &AuditEntry) -> Result<(), String> {
            let n = self.audits_tried.get();
            self.audits_tried.set(n + 1);
            if self.fail_audit == Some(n) {
                return Err("disk full".into());
            }
            self.audit.borrow_mut().push(entry.clone());
            Ok(())
        }
        async fn save_outcome(&self, job: &str, index: usize, outcome: &Outcome) -> Result<(), String> {
            if self.fail_save == Some(self.saved.borrow().len()) {
                return Err("disk full".into());
            }
            self.saved.borrow_mut().push((job.to_string(), index, outcome.clone()));
            Ok(())
        }
        fn counted(&self, index: usize, _outcome: Outcome) {
            self.counted.borrow_mut().push(index);
        }
    }

    impl Clock for Fake {
        fn now(&self) -> String {
            "2024-01-01T00:00:00.000Z".into()
        }
        /// The middle: a backoff as it is, a Retry-After an eighth more.
        fn jitter(&self) -> f64 {
            0.5
        }
        async fn sleep(&self, ms: f64) {
            self.sleeps.borrow_mut().push(ms);
            if self.stop_in_sleep {
                self.stop.set(true);
            }
        }
    }

    impl Control for Fake {
        fn stopped(&self) -> bool {
            self.stop.get()
        }
        fn halt(&self, why: Halt) {
            self.halts.borrow_mut().push(why);
            self.stop.set(true);
        }
    }

    fn job(n: usize, concurrency: usize, max_attempts: u32) -> Job {
        let seqs: Vec<SequenceOut> =
            (0..n).map(|i| SequenceOut { label: Some(format!("c{}", i % 2)), keyphrases: vec![format!("kp{i}x")], noise_dominated: false }).collect();
        // The reply check has its own test; the scripted replies here are one line.
        let llm = LlmSettings { model: "m".into(), concurrency, max_attempts, check_replies: false, ..Default::default() };
        Job::new("job1".into(), "t".into(), llm, PromptSettings::default(), &seqs, "{}".into())
    }

    fn run(fake: &Fake, job: &Job, pending: Vec<usize>) {
        futures::executor::block_on(generate(fake, job, pending));
    }

    fn outcome_of(fake: &Fake, index: usize) -> Outcome {
        let saved = fake.saved.borrow();
        let mine: Vec<&Outcome> = saved.iter().filter(|(_, i, _)| *i == index).map(|(_, _, o)| o).collect();
        assert_eq!(mine.len(), 1, "document {index} saved once");
        mine[0].clone()
    }

    #[test]
    fn every_document_is_generated_once_with_concurrency_lanes() {
        let fake = Fake::default();
        let job = job(7, 3, 5);
        run(&fake, &job, job.pending(false));
        assert_eq!(fake.max_in_flight.get(), 3, "three requests in flight at once");
        let mut posts = fake.posts.borrow().clone();
        posts.sort();
        assert_eq!(posts, (0..7).collect::<Vec<_>>(), "each document sent once");
        let mut counted = fake.counted.borrow().clone();
        counted.sort();
        assert_eq!(counted, (0..7).collect::<Vec<_>>());
        for i in 0..7 {
            assert_eq!(outcome_of(&fake, i), Outcome::Done { text: format!("text of kp{i}x"), attempts: 1 });
        }
        assert!(fake.saved.borrow().iter().all(|(j, _, _)| j == "job1"));
        // Each request on record before it was sent, its answer after, the body only once.
        let audit = fake.audit.borrow();
        assert_eq!(audit.len(), 14);
        for i in 0..7 {
            let mine: Vec<&AuditEntry> = audit.iter().filter(|a| a.index == i).collect();
            assert_eq!(mine.iter().map(|a| a.phase).collect::<Vec<_>>(), [AuditPhase::Sending, AuditPhase::Response]);
            assert!(mine[0].request.contains(&format!("kp{i}x")) && mine[0].status.is_none());
            assert!(mine[1].request.is_empty() && mine[1].status == Some(200) && mine[1].response.contains("text of"));
            assert_eq!(mine[0].url, "http://127.0.0.1:8000/v1/chat/completions");
        }
        assert!(fake.halts.borrow().is_empty() && fake.sleeps.borrow().is_empty());
        // Fewer documents than lanes: one lane per document.
        let fake = Fake::default();
        run(&fake, &job, vec![4]);
        assert_eq!((fake.max_in_flight.get(), fake.posts.borrow().clone()), (1, vec![4]));
    }

    #[test]
    fn retryable_failures_are_retried_with_backoff_and_retry_after() {
        let fake = Fake::default();
        fake.replies.borrow_mut().insert(
            0,
            VecDeque::from([status(429, Some(2.0)), status(500, None), Err(LlmError::Timeout(120.0)), Ok(ok_reply(" "))]),
        );
        let job = job(2, 1, 5);
        run(&fake, &job, vec![0, 1]);
        // Retry-After first (2 s and an eighth), then backoff for attempts 3, 4, 5: 1 s, 2 s, 4 s.
        assert_eq!(*fake.sleeps.borrow(), vec![2250.0, 1000.0, 2000.0, 4000.0]);
        assert_eq!(outcome_of(&fake, 0), Outcome::Done { text: "text of kp0x".into(), attempts: 5 });
        assert_eq!(outcome_of(&fake, 1), Outcome::Done { text: "text of kp1x".into(), attempts: 1 });
        let audit = fake.audit.borrow();
        let responses: Vec<(Option<u16>, Option<String>)> =
            audit.iter().filter(|a| a.index == 0 && a.phase == AuditPhase::Response).map(|a| (a.status, a.error.clone())).collect();
        assert_eq!(responses.len(), 5);
        assert_eq!(responses[0].0, Some(429));
        assert_eq!(responses[2], (None, Some("no reply within 120 s".into())));
        assert!(responses[3].1.as_deref().is_some_and(|e| e.contains("empty")), "{responses:?}");
        assert_eq!(audit.iter().filter(|a| a.index == 0).map(|a| a.attempt).collect::<Vec<_>>(), [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
    }

    #[test]
    fn a_non_retryable_status_fails_at_once_and_the_limit_ends_the_retries() {
        let fake = Fake::default();
        fake.replies.borrow_mut().insert(0, VecDeque::from([status(400, None)]));
        fake.replies.borrow_mut().insert(1, VecDeque::from([status(503, None), status(503, None), status(503, None)]));
        let job = job(3, 2, 2);
        run(&fake, &job, job.pending(false));
        match outcome_of(&fake, 0) {
            Outcome::Failed { error, attempts: 1 } => assert!(error.contains("HTTP 400"), "{error}"),
            o => panic!("{o:?}"),
        }
        match outcome_of(&fake, 1) {
            Outcome::Failed { error, attempts: 2 } => assert!(error.contains("HTTP 503"), "{error}"),
            o => panic!("{o:?}"),
        }
        assert!(matches!(outcome_of(&fake, 2), Outcome::Done { attempts: 1, .. }));
        assert_eq!(*fake.sleeps.borrow(), vec![500.0], "one wait: before document 1's second attempt");
        assert_eq!(fake.posts.borrow().iter().filter(|&&i| i == 1).count(), 2);
    }

    #[test]
    fn an_outcome_that_cannot_be_saved_halts_the_job_and_stays_pending() {
        let fake = Fake { fail_save: Some(1), ..Fake::default() };
        let job = job(5, 1, 5);
        run(&fake, &job, job.pending(false));
        assert_eq!(*fake.posts.borrow(), vec![0, 1], "nothing is sent after the failed save");
        assert_eq!(*fake.counted.borrow(), vec![0], "the unsaved document does not count");
        assert_eq!(*fake.halts.borrow(), vec![Halt::OutcomeNotSaved { index: 1, error: "disk full".into() }]);
        assert_eq!(fake.halts.borrow()[0].to_string(), "document #2 could not be saved (disk full)");
    }

    #[test]
    fn an_audit_log_that_cannot_be_written_sends_nothing_more() {
        // The third audit write is document 1's "sending" entry: it is not sent.
        let fake = Fake { fail_audit: Some(2), ..Fake::default() };
        let job = job(3, 1, 5);
        run(&fake, &job, job.pending(false));
        assert_eq!(*fake.posts.borrow(), vec![0]);
        assert_eq!(fake.saved.borrow().len(), 1);
        assert!(matches!(fake.halts.borrow()[0], Halt::AuditBeforeSending { index: 1, .. }));
        // Its answer's entry lost: the job halts, but the document answered counts.
        let fake = Fake { fail_audit: Some(1), ..Fake::default() };
        run(&fake, &job, job.pending(false));
        assert_eq!(*fake.posts.borrow(), vec![0]);
        assert_eq!(*fake.counted.borrow(), vec![0]);
        assert!(matches!(fake.halts.borrow()[0], Halt::AuditAfterReply { index: 0, .. }));
    }

    #[test]
    fn a_reply_that_is_not_a_document_is_asked_for_once_more_and_the_better_kept() {
        let prose = |i: usize| {
            format!(
                "The patient came in today with kp{i}x that had begun two weeks earlier. She described it as worse \
                 at night and better with rest. The examination was otherwise normal. We agreed on a plan with a \
                 review in a month, and she was told to come back sooner if anything changed."
            )
        };
        let list = |i: usize| Ok(ok_reply(&format!("kp{i}x")));
        let fake = Fake::default();
        let mut r = fake.replies.borrow_mut();
        r.insert(0, VecDeque::from([list(0), Ok(ok_reply(&prose(0)))]));
        r.insert(1, VecDeque::from([list(1), Ok(ok_reply("kp1x. kp1x."))]));
        r.insert(2, VecDeque::from([Ok(ok_reply(&prose(2)))]));
        r.insert(3, VecDeque::from([list(3), status(503, None), status(503, None)]));
        drop(r);
        let mut job = job(4, 1, 3);
        job.llm.check_replies = true;
        run(&fake, &job, job.pending(false));
        assert_eq!(outcome_of(&fake, 0), Outcome::Done { text: prose(0), attempts: 2 });
        // Neither is prose: the first is kept.
        assert_eq!(outcome_of(&fake, 1), Outcome::Done { text: "kp1x".into(), attempts: 2 });
        assert_eq!(outcome_of(&fake, 2), Outcome::Done { text: prose(2), attempts: 1 });
        // The one more asked for never came: the first reply is kept, not a failure.
        assert_eq!(outcome_of(&fake, 3), Outcome::Done { text: "kp3x".into(), attempts: 3 });
        // Asked again at once (no backoff); only the transport failures waited.
        assert_eq!(*fake.sleeps.borrow(), vec![1000.0]);
        let audit = fake.audit.borrow();
        let why = audit.iter().find(|a| a.index == 0 && a.phase == AuditPhase::Response).and_then(|a| a.error.clone());
        assert_eq!(why.as_deref(), Some("the reply is the keyphrases given back as a list: asked once more"));
        assert_eq!(fake.posts.borrow().iter().filter(|&&i| i == 1).count(), 2, "asked once more, not twice");
        // With one attempt allowed, a reply is kept as it is.
        let fake = Fake::default();
        fake.replies.borrow_mut().insert(0, VecDeque::from([list(0)]));
        job.llm.max_attempts = 1;
        run(&fake, &job, vec![0]);
        assert_eq!(outcome_of(&fake, 0), Outcome::Done { text: "kp0x".into(), attempts: 1 });
    }

    #[test]
    fn an_over_long_reply_fails_its_document_at_once_and_is_not_kept() {
        let fake = Fake::default();
        let huge = ok_reply(&"word ".repeat(300_000)); // 1.5 MB: over the 1 MiB of max_tokens 512
        fake.replies.borrow_mut().insert(0, VecDeque::from([Ok(huge)]));
        fake.replies.borrow_mut().insert(1, VecDeque::from([Err(LlmError::Redirected { status: Some(307), location: None })]));
        let job = job(3, 1, 5);
        run(&fake, &job, job.pending(false));
        for i in [0, 1] {
            match outcome_of(&fake, i) {
                Outcome::Failed { attempts: 1, error } => assert!(error.contains(if i == 0 { "longer than 1 MiB" } else { "redirect" }), "{error}"),
                o => panic!("document {i}: {o:?}"),
            }
        }
        assert_eq!(fake.posts.borrow().iter().filter(|&&i| i < 2).count(), 2, "neither is asked for again");
        assert!(fake.sleeps.borrow().is_empty());
        assert!(matches!(outcome_of(&fake, 2), Outcome::Done { .. }));
        // Nothing of the over-long reply is kept: not in the outcome, not in the audit log.
        let audit = fake.audit.borrow();
        assert!(audit.iter().all(|a| a.response.len() < 1000), "{:?}", audit.iter().map(|a| a.response.len()).collect::<Vec<_>>());
    }

    #[test]
    fn stop_during_a_retry_wait_leaves_the_document_pending() {
        let fake = Fake { stop_in_sleep: true, ..Fake::default() };
        fake.replies.borrow_mut().insert(0, VecDeque::from([status(429, Some(30.0))]));
        let job = job(3, 1, 5);
        run(&fake, &job, job.pending(false));
        assert_eq!(*fake.sleeps.borrow(), vec![33_750.0]);
        assert_eq!(*fake.posts.borrow(), vec![0], "no retry and no other document after Stop");
        assert!(fake.saved.borrow().is_empty() && fake.halts.borrow().is_empty());
    }
}
