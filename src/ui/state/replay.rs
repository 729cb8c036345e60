//! The replay check in the page (`crate::replay`): sent to the worker with the loaded corpus's
//! files once a generation job has finished, and what the downloads do with its result.
//!
//! The check runs by itself when a job ends (every document generated or failed) while a
//! corpus is loaded, and again whenever more documents are generated (after "Retry failed").
//! A result counts only for the job and the documents it was made for (`app::ReplayResult`): a
//! download is "checked" only then. By default the flagged documents are left out of the
//! corpus downloads ([`AppState::drop_flagged`]): the check exists to keep replayed private
//! text from leaving, and the curator who has looked at the flagged rows (shown with their
//! shared words) and judged them harmless can keep them. The report gets the counts either way.
//!
//! Privacy: the result is NOT DP. It lives in this tab's memory only (never in IndexedDB: it
//! holds private spans, and which documents resembled private text), and only its counts go
//! into the report.

use std::collections::BTreeSet;

use leptos::prelude::*;

use crate::llm::Job;
use crate::protocol::{FileInfo, Request};
use crate::replay::{ReplayCheck, ReplayParams};
use crate::run::report::PrivacyReport;
use crate::ui::engine;

use super::app::{corpus_files, AppState, Job as WorkerJob};
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
    /// Not run for these documents (never, or before more were generated).
    NotChecked,
    /// Checked: every generated document of the job.
    Checked(ReplayCheck),
}

/// The generated documents of `job`, by index.
fn generated(job: &Job) -> BTreeSet<usize> {
    job.synthetic_docs().iter().map(|d| d.index).collect()
}

impl AppState {
    /// Sends the generated documents of `job` to the worker with the corpus files, to check
    /// against the loaded corpus.
    pub fn check_replay(&self, job: &Job) {
        let documents = job.synthetic_docs();
        if documents.is_empty() || self.summary.get_untracked().is_none() || self.busy_untracked() {
            return;
        }
        let files = corpus_files();
        let infos: Vec<FileInfo> = self.files.get_untracked();
        self.replay_progress.set(Some((0, 0)));
        self.replay_for.set(Some(job.id.clone()));
        self.replay_error.set(None);
        self.job.set(Some(WorkerJob::Replay));
        engine::send(&Request::ReplayCheck { files: infos.clone(), documents, params: ReplayParams::default() }, &files[..infos.len().min(files.len())]);
    }

    fn busy_untracked(&self) -> bool {
        self.job.get_untracked().is_some()
    }

    /// The check's state for `job` (reactive).
    pub fn replay_status(&self, job: Option<&Job>) -> ReplayStatus {
        let Some(job) = job else { return ReplayStatus::Nothing };
        let docs = generated(job);
        if docs.is_empty() {
            return ReplayStatus::Nothing;
        }
        if self.job.get() == Some(WorkerJob::Replay) {
            let (done, total) = self.replay_progress.get().unwrap_or((0, 0));
            return ReplayStatus::Running(done, total);
        }
        match self.replay.get() {
            Some(r) if r.job == job.id && r.check.checked() == docs => ReplayStatus::Checked(r.check),
            _ if self.summary.get().is_none() => ReplayStatus::NoCorpus,
            _ => ReplayStatus::NotChecked,
        }
    }

    /// The documents the downloads leave out: those a current check flagged, when the
    /// curator leaves them out (the default).
    pub fn replay_dropped(&self, job: &Job) -> BTreeSet<usize> {
        match self.replay_status(Some(job)) {
            ReplayStatus::Checked(c) if self.drop_flagged.get() => c.flagged(),
            _ => BTreeSet::new(),
        }
    }

    /// The job as the corpus downloads write it.
    pub fn downloadable(&self, job: &Job) -> Job {
        job.without(&self.replay_dropped(job))
    }

    /// The privacy report that goes with the downloads (JSON): the run's, with the check's
    /// counts when the documents were checked.
    pub fn report_for_download(&self, job: &Job) -> String {
        let ReplayStatus::Checked(check) = self.replay_status(Some(job)) else { return job.report.clone() };
        PrivacyReport::with_replay(&job.report, check.summary(self.drop_flagged.get()))
            .ok()
            .and_then(|r| serde_json::to_string(&r).ok())
            .unwrap_or_else(|| job.report.clone())
    }
}

/// Runs the check by itself once a job has ended with a corpus loaded and the worker free,
/// once per (job, documents generated): a failure is shown, not retried in a loop.
pub fn auto_check(app: AppState, gen: GenState) {
    let tried: RwSignal<Option<(String, usize)>> = RwSignal::new(None);
    Effect::new(move |_| {
        let Some(info) = gen.job.get() else { return };
        let ended = !info.running && info.done > 0 && info.done + info.failed == info.total;
        if !ended || app.summary.get().is_none() || app.job.get().is_some() {
            return;
        }
        let key = (info.id.clone(), info.done);
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
