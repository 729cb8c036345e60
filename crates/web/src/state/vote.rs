//! The DP vote over generated candidates in the page (`dpkps_core::run::vote`): planned with the
//! run (`RunSettings::vote`: the run drew c × its sequences per class), sent to the worker with
//! the job's generated documents and the corpus files once the job has ended, and what the
//! downloads then hold.
//!
//! The candidates are every document the job generated (DP outputs), before the replay check
//! (not DP) leaves any out: the vote's candidate set then depends on nothing private. The
//! corpus downloads hold the kept documents only (less any the replay check flagged, as
//! before), and the privacy report states the vote with its ε (`PrivacyReport::vote`, the
//! record `dpkps select` writes as vote-report.json).
//!
//! The result is a DP output; it lives in this tab's memory (the ledger keeps the vote's
//! spends). After a reload, vote again (it is a new spend) or download the job as generated.

use std::collections::BTreeSet;

use leptos::prelude::*;

use dpkps_core::dp::vote::VotePlan;
use dpkps_core::llm::Job;
use dpkps_core::protocol::{CorpusSummary, FileInfo, Request, RunSettings, VoteCandidate, VoteResult};
use dpkps_core::run::report::PrivacyReport;

use crate::engine;

use super::app::{corpus_files, AppState, Job as WorkerJob};

/// A vote's result as the page shows it, with the job it was made for.
#[derive(Clone, Debug, PartialEq)]
pub struct VoteShown {
    pub job: String,
    pub result: VoteResult,
    /// The job's documents the vote chose among, and those it kept (the job's indices).
    pub voted: BTreeSet<usize>,
    pub kept: BTreeSet<usize>,
}

/// A vote sent to the worker: its job, and the job's index of each candidate sent, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct VoteAsk {
    pub job: String,
    pub positions: Vec<usize>,
}

/// The settings of the run `job`'s sequences came from (its report's), when they planned a vote.
pub fn planned(job: &Job) -> Option<(RunSettings, VotePlan)> {
    let r: PrivacyReport = serde_json::from_str(&job.report).ok()?;
    let v = r.settings.vote?;
    Some((r.settings, v))
}

/// The ledger id of the run `job`'s sequences came from (its report's; empty in reports written
/// before it was kept). The worker refuses a vote whose run is not on record for the loaded
/// corpus with its privacy unit (`dpkps_core::run::vote`).
fn run_of(job: &Job) -> String {
    serde_json::from_str::<PrivacyReport>(&job.report).map(|r| r.run).unwrap_or_default()
}

impl AppState {
    /// Sends `job`'s generated documents to the worker for the vote its run planned, with the
    /// corpus files (the worker reads the texts again).
    pub fn vote(&self, job: &Job) {
        let Some((settings, _)) = planned(job) else { return };
        if self.summary.get_untracked().is_none() {
            self.vote_error.set(Some("Load the corpus first: its documents vote.".into()));
            return;
        }
        if self.job.get_untracked().is_some() {
            return;
        }
        let run = run_of(job);
        if run.is_empty() {
            self.vote_error.set(Some("This job's run was made by an earlier version of this page, whose report does not name the run: the vote could not be tied to it. Run again, then vote.".into()));
            return;
        }
        let (positions, candidates): (Vec<usize>, Vec<VoteCandidate>) =
            job.rows().map(|(item, text)| (item.index, VoteCandidate { label: item.label.clone(), text: text.to_string() })).unzip();
        if candidates.is_empty() {
            return;
        }
        // The budget in force is the stored one: the run that planned this vote stored it.
        let settings = RunSettings { budget: None, raise_budget: false, ..settings };
        self.vote_error.set(None);
        self.vote_progress.set(Some((0, 0)));
        self.job.set(Some(WorkerJob::Vote));
        self.vote_for.set(Some(VoteAsk { job: job.id.clone(), positions }));
        let files = corpus_files();
        let infos: Vec<FileInfo> = self.files.get_untracked();
        engine::send(&Request::Vote { files: infos.clone(), candidates, settings, from_run: Some(run) }, &files[..infos.len().min(files.len())]);
    }

    /// The worker's answer: shown, the kept documents mapped to the job's, the corpus's ledger
    /// figures moved on (the vote is a run of the ledger).
    pub(super) fn voted(&self, result: VoteResult) {
        self.vote_progress.set(None);
        self.job.set(None);
        let Some(ask) = self.vote_for.get_untracked() else { return };
        let kept = result.kept.iter().filter_map(|&k| ask.positions.get(k).copied()).collect();
        if let Some(s) = self.summary.get_untracked() {
            self.summary.set(Some(CorpusSummary { spent_before: result.epsilon_total, earlier_runs: s.earlier_runs + 1, ..s }));
        }
        self.vote.set(Some(VoteShown { job: ask.job, result, voted: ask.positions.into_iter().collect(), kept }));
    }

    /// The last vote of `job` in this tab (reactive).
    pub fn vote_of(&self, job: &Job) -> Option<VoteShown> {
        self.vote.get().filter(|v| v.job == job.id)
    }

    /// Whether a vote is running.
    pub fn vote_running(&self) -> bool {
        self.job.get() == Some(WorkerJob::Vote)
    }

    /// The documents the corpus downloads leave out after `job`'s vote: every document it chose
    /// among and did not keep, and any generated since (never voted on).
    pub fn vote_dropped(&self, job: &Job) -> BTreeSet<usize> {
        match self.vote_of(job) {
            Some(v) => job.rows().map(|(i, _)| i.index).filter(|i| !v.kept.contains(i)).collect(),
            None => BTreeSet::new(),
        }
    }

    /// Forgets this tab's vote of job `id` (discarded with it).
    pub fn forget_vote(&self, id: &str) {
        if self.vote.get_untracked().is_some_and(|v| v.job == id) {
            self.vote.set(None);
        }
    }

    /// The report `json` with `job`'s vote, if it had one.
    pub(super) fn with_vote(&self, job: &Job, json: String) -> String {
        let Some(v) = self.vote_of(job) else { return json };
        PrivacyReport::with_vote(&json, v.result.record).ok().and_then(|r| serde_json::to_string(&r).ok()).unwrap_or(json)
    }
}
