//! The replay check in the page (`dpkps_core::replay`): sent to the worker with the loaded corpus's
//! files once a generation job has finished, and what the downloads do with its result.
//!
//! The check runs by itself when a job ends (every document generated or failed) while a
//! corpus is loaded, again whenever more documents are generated (after "Retry failed") and
//! after the corpus is loaded again. It reads the job's generated documents and the job's
//! other answers in the audit log (a first reply that was asked for once more, a reply that
//! did not read: `dpkps_core::llm::answers_to_check`), since the audit log download carries them.
//!
//! A result is "current" (`ReplayStatus::Checked`) only for the job, the documents and the
//! corpus load it was made for. But the flags of the LAST completed check of a job keep
//! applying to its downloads whatever happened since (a check running or failed, more
//! documents generated, the corpus loaded again): a document once flagged never goes back into
//! a download because a later check has not finished. While a check runs, the corpus and audit
//! log downloads are disabled (`views::llm`). By default the flagged documents are left out of
//! the corpus downloads ([`AppState::drop_flagged`]): the curator who has looked at the flagged
//! rows (shown with their shared words) and judged them harmless can keep them. The audit log
//! download withholds the flagged answers of every job checked in this tab
//! ([`AppState::audit_withheld`]). The report gets the counts either way.
//!
//! Privacy: the result is NOT DP. It lives in this tab's memory only (never in IndexedDB: it
//! holds private spans, and which documents resembled private text), and only its counts go
//! into the report.

use std::collections::BTreeSet;

use leptos::prelude::*;

use dpkps_core::llm::{answers_to_check, Job, Withheld};
use dpkps_core::protocol::{FileInfo, Request};
use dpkps_core::replay::{ReplayCheck, ReplayParams, SyntheticDoc};
use dpkps_core::run::report::PrivacyReport;
use crate::engine;
use crate::io::jobstore;

use super::app::{corpus_files, AppState, Job as WorkerJob, ReplayAsk, ReplayResult};
use super::generate::GenState;

/// Where the check stands for the current job, for the views.
#[derive(Clone, Debug, PartialEq)]
pub enum ReplayStatus {
    /// No generated document yet.
    Nothing,
    /// It cannot run: no corpus is loaded in this page (after a reload, say).
    NoCorpus,
    /// Running: bytes of the corpus read, of.
    Running(u64, u64),
    /// Not run for these documents against the loaded corpus (never, or before more were
    /// generated or the corpus was loaded again): see [`AppState::last_replay`].
    NotChecked,
    /// Checked: every generated document of the job, against the loaded corpus.
    Checked(ReplayCheck),
}

/// The generated documents of `job`, by index.
fn generated(job: &Job) -> BTreeSet<usize> {
    job.synthetic_docs().iter().map(|d| d.index).collect()
}

impl AppState {
    /// Sends the generated documents of `job`, and its other answers in the audit log, to the
    /// worker with the corpus files, to check against the loaded corpus.
    pub fn check_replay(&self, job: &Job) {
        let mut documents = job.synthetic_docs();
        if documents.is_empty() || self.summary.get_untracked().is_none() || self.busy_untracked() {
            return;
        }
        // The worker is taken at once: nothing else starts while the audit log is read.
        self.replay_progress.set(Some((0, 0)));
        self.replay_error.set(None);
        self.job.set(Some(WorkerJob::Replay));
        let (this, job) = (*self, job.clone());
        leptos::task::spawn_local(async move {
            let lines = match jobstore::audit_jsonl().await {
                Ok(l) => l,
                Err(e) => {
                    this.replay_progress.set(None);
                    this.replay_error.set(Some(format!("Not checked: the audit log could not be read ({e}).")));
                    this.job.set(None);
                    return;
                }
            };
            let answers = answers_to_check(&lines, &job);
            let base = job.items.len();
            for (k, a) in answers.iter().enumerate() {
                let keyphrases = job.items.get(a.index).map(|i| i.keyphrases.clone()).unwrap_or_default();
                documents.push(SyntheticDoc { index: base + k, text: a.text.clone(), keyphrases });
            }
            this.replay_for.set(Some(ReplayAsk {
                job: job.id.clone(),
                docs: base,
                answers: answers.into_iter().map(|a| a.key).collect(),
                load: this.corpus_loads.get_untracked(),
            }));
            let files = corpus_files();
            let infos: Vec<FileInfo> = this.files.get_untracked();
            engine::send(
                &Request::ReplayCheck { files: infos.clone(), documents, params: ReplayParams::default() },
                &files[..infos.len().min(files.len())],
            );
        });
    }

    /// The worker's result for the check last sent: the job's documents and the audit log's
    /// answers apart; the flags recorded for the audit log download.
    pub fn replay_checked(&self, check: ReplayCheck) {
        let Some(ask) = self.replay_for.get_untracked() else { return };
        let (docs, answers): (Vec<_>, Vec<_>) = check.docs.into_iter().partition(|d| d.index < ask.docs);
        let answers_flagged: BTreeSet<String> =
            answers.iter().filter(|d| d.flagged).filter_map(|d| ask.answers.get(d.index - ask.docs).cloned()).collect();
        let check = ReplayCheck { params: check.params, docs };
        self.replay_withheld.update(|w| {
            w.docs.insert(ask.job.clone(), check.flagged());
            w.answers.insert(ask.job.clone(), answers_flagged.clone());
        });
        self.replay.set(Some(ReplayResult { job: ask.job, check, answers_checked: answers.len(), answers_flagged, load: ask.load }));
    }

    /// Forgets this tab's check of job `id` (discarded with it).
    pub fn forget_replay(&self, id: &str) {
        if self.replay.get_untracked().is_some_and(|r| r.job == id) {
            self.replay.set(None);
        }
        self.replay_withheld.update(|w| {
            w.docs.remove(id);
            w.answers.remove(id);
        });
    }

    fn busy_untracked(&self) -> bool {
        self.job.get_untracked().is_some()
    }

    /// Whether a replay check is running (the corpus and audit log downloads wait for it).
    pub fn replay_running(&self) -> bool {
        self.job.get() == Some(WorkerJob::Replay)
    }

    /// The last completed check of `job` in this tab, current or not (reactive).
    pub fn last_replay(&self, job: &Job) -> Option<ReplayResult> {
        self.replay.get().filter(|r| r.job == job.id)
    }

    /// The check's state for `job` (reactive).
    pub fn replay_status(&self, job: Option<&Job>) -> ReplayStatus {
        let Some(job) = job else { return ReplayStatus::Nothing };
        let docs = generated(job);
        if docs.is_empty() {
            return ReplayStatus::Nothing;
        }
        if self.replay_running() {
            let (done, total) = self.replay_progress.get().unwrap_or((0, 0));
            return ReplayStatus::Running(done, total);
        }
        match self.last_replay(job) {
            Some(r) if r.check.checked() == docs && r.load == self.corpus_loads.get() => ReplayStatus::Checked(r.check),
            _ if self.summary.get().is_none() => ReplayStatus::NoCorpus,
            _ => ReplayStatus::NotChecked,
        }
    }

    /// Generated documents of `job` that its last check did not read (generated since).
    pub fn replay_unchecked(&self, job: &Job) -> usize {
        let checked = self.last_replay(job).map(|r| r.check.checked()).unwrap_or_default();
        generated(job).difference(&checked).count()
    }

    /// The documents the corpus downloads leave out: those the last completed check of `job`
    /// flagged (whatever happened since), when the curator leaves them out (the default).
    pub fn replay_dropped(&self, job: &Job) -> BTreeSet<usize> {
        match self.last_replay(job) {
            Some(r) if self.drop_flagged.get() => r.check.flagged(),
            _ => BTreeSet::new(),
        }
    }

    /// What the audit log download withholds: the flagged answers of every job checked in this
    /// tab (its last check), but the flagged documents of the current job `current` only when
    /// the curator leaves them out of the corpus downloads.
    pub fn audit_withheld(&self, current: Option<&str>) -> Withheld {
        let mut w = self.replay_withheld.get();
        if let Some(id) = current.filter(|_| !self.drop_flagged.get()) {
            w.docs.remove(id);
        }
        w
    }

    /// The job as the corpus downloads write it: without what the replay check flagged (when
    /// left out) and, after a DP vote, without what the vote did not keep (`super::vote`).
    pub fn downloadable(&self, job: &Job) -> Job {
        let mut dropped = self.replay_dropped(job);
        dropped.extend(self.vote_dropped(job));
        job.without(&dropped)
    }

    /// The privacy report that goes with the downloads (JSON): the run's, with the counts of
    /// the last check of the documents (and how many were generated after it), if any, and the
    /// DP vote that chose the kept documents, if any.
    pub fn report_for_download(&self, job: &Job) -> String {
        let Some(r) = self.last_replay(job) else { return self.with_vote(job, job.report.clone()) };
        let summary = r.check.summary(self.drop_flagged.get()).with_unchecked(self.replay_unchecked(job));
        let json = PrivacyReport::with_replay(&job.report, summary)
            .ok()
            .and_then(|r| serde_json::to_string(&r).ok())
            .unwrap_or_else(|| job.report.clone());
        self.with_vote(job, json)
    }
}

/// Runs the check by itself once a job has ended with a corpus loaded and the worker free,
/// once per (job, documents generated, corpus load): a failure is shown, not retried in a loop.
pub fn auto_check(app: AppState, gen: GenState) {
    let tried: RwSignal<Option<(String, usize, u32)>> = RwSignal::new(None);
    Effect::new(move |_| {
        let Some(info) = gen.job.get() else { return };
        let ended = !info.running && info.done > 0 && info.done + info.failed == info.total;
        if !ended || app.summary.get().is_none() || app.job.get().is_some() {
            return;
        }
        let key = (info.id.clone(), info.done, app.corpus_loads.get());
        if tried.get_untracked().as_ref() == Some(&key) {
            return;
        }
        let Some(job) = gen.with_job(Clone::clone) else { return };
        if matches!(app.replay_status(Some(&job)), ReplayStatus::Checked(_)) {
            return;
        }
        tried.set(Some(key));
        app.check_replay(&job);
    });
}
