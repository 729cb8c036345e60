//! How the worker's events change [`AppState`].

use leptos::prelude::*;

use dpkps_core::protocol::{CorpusSummary, Event, Stage};
use crate::io::jobstore;

use super::app::{mark_running_failed, set_stage, stored_form, AppState, StageState};

impl AppState {
    /// One event from the worker (`engine::start` delivers them).
    pub fn apply(&self, ev: Event) {
        match ev {
            Event::Ready => self.worker_ready.set(true),
            // The replay check shows its progress in the Generate card, not among the stages.
            Event::Progress { stage: Stage::Replay, done, total } => self.replay_progress.set(Some((done, total))),
            // The vote shows its progress in the Generate card too; its model stage is not a run's.
            Event::Progress { stage: Stage::Vote, done, total } => self.vote_progress.set(Some((done, total))),
            Event::Progress { .. } | Event::StageDone { .. } if self.job.get_untracked() == Some(super::app::Job::Vote) => {}
            Event::Progress { stage, done, total } => set_stage(self.stages, stage, StageState::Running { done, total }),
            Event::StageDone { stage, seconds, note } => set_stage(self.stages, stage, StageState::Done { seconds, note }),
            Event::Inspected(p) => {
                self.text_col.set(p.suggested_text.clone().unwrap_or_default());
                self.label_col.set(p.suggested_label.clone().unwrap_or_default());
                // Never guessed: which column names the patient is the curator's statement.
                self.person_col.set(String::new());
                self.preview.set(Some(p));
                self.job.set(None);
            }
            Event::Background { done, total } => self.background.set(Some((done, total))),
            Event::Loaded(s) => {
                self.stages.set(Vec::new());
                self.background.set(None);
                // Nothing is declared from the data: a default class set chosen by the label
                // counts would make the release's shape depend on them. The list keeps what the
                // curator declared (empty at first); the observed labels are only offered.
                self.summary.set(Some(s));
                self.job.set(None);
            }
            Event::Finished(r) => {
                // DP outputs only: kept so that a reload does not lose them.
                if let Some(json) = stored_form(&r) {
                    leptos::task::spawn_local(async move {
                        let _ = jobstore::save_last_run(&json).await;
                    });
                }
                self.result.set(Some(r));
                self.job.set(None);
                if let Some(settings) = self.running.get_untracked() {
                    self.last_finished.set(Some(settings));
                }
                if let Some(s) = self.summary.get_untracked() {
                    // The ledger moved on: show what was spent so far.
                    let spent = self.result.get_untracked().map_or(s.spent_before, |r| r.epsilon_total);
                    self.summary.set(Some(CorpusSummary { spent_before: spent, earlier_runs: s.earlier_runs + 1, ..s }));
                }
            }
            Event::Cancelled if self.job.get_untracked() == Some(super::app::Job::Vote) => {
                self.vote_progress.set(None);
                self.vote_error.set(Some("Cancelled. If the vote's ε was already recorded, it stays in the ledger.".into()));
                self.job.set(None);
            }
            Event::Cancelled => {
                self.job.set(None);
                mark_running_failed(self.stages);
                self.error.set(Some("Cancelled. ε already spent by finished DP stages stays in the ledger.".into()));
            }
            Event::Failed { stage: Some(Stage::Vote), message } => {
                self.vote_progress.set(None);
                self.vote_error.set(Some(message));
                self.job.set(None);
            }
            Event::Voted(r) => self.voted(*r),
            Event::Failed { stage: Some(Stage::Replay), message } => {
                self.replay_progress.set(None);
                self.replay_error.set(Some(message));
                self.job.set(None);
            }
            Event::Failed { stage, message } => {
                if self.job.get_untracked() == Some(super::app::Job::Replay) {
                    self.replay_progress.set(None);
                }
                if self.job.get_untracked() == Some(super::app::Job::Vote) {
                    // A failure before the vote's own stage (no corpus loaded, the model).
                    self.vote_progress.set(None);
                    self.vote_error.set(Some(message));
                    self.job.set(None);
                    return;
                }
                if let Some(stage) = stage {
                    set_stage(self.stages, stage, StageState::Failed);
                }
                mark_running_failed(self.stages);
                self.error.set(Some(message));
                self.job.set(None);
            }
            Event::ModelLoaded { name, dim, checksum, seconds } => {
                self.model.set(format!("{name}: {dim} dimensions, loaded in {seconds:.1} s (SHA-256 {}…)", &checksum[..12.min(checksum.len())]));
                self.model_check.set(None);
                self.job.set(None);
            }
            Event::ModelChecked { terms, worst_cosine, worst_term, passed, helpers, by_helpers, vectors_checked, vectors_worst_cosine, vectors_worst_term, term_width, int_products, int_kernel_error, attentions, attention_kernel_error } => {
                let workers = match helpers {
                    0 => "this worker alone".to_string(),
                    1 => format!("{by_helpers} of them by 1 helper worker"),
                    n => format!("{by_helpers} of them by {n} helper workers"),
                };
                let vectors = match vectors_checked {
                    0 => " No bundled vectors belong to this model: every term is embedded live.".to_string(),
                    n => format!(" Bundled vectors: {n} random terms, lowest cosine similarity {vectors_worst_cosine:.5} (“{vectors_worst_term}”, needs ≥ 0.995)."),
                };
                let rows = match term_width {
                    1 => " Terms are embedded one a model call.".to_string(),
                    w => format!(" Short terms are embedded {w} a model call (each row found independent of the others on this machine)."),
                };
                let ints = match (int_products, int_kernel_error) {
                    (_, Some(e)) => format!(" Integer products: FAILED: {e}."),
                    (0, None) => " The model's products run in f32 (its weights are not int8).".to_string(),
                    (n, None) => format!(" {n} products by the weights run on integers (this browser's kernels round the activations, give the exact sums and scale them as the plain code does, and compute GELU as tract does)."),
                };
                let attention = match (attentions, attention_kernel_error) {
                    (_, Some(e)) => format!(" Attention: FAILED: {e}."),
                    (0, None) => " The model's attention runs as tract's operations.".to_string(),
                    (n, None) => format!(" {n} attentions run as one operation each (this browser's kernel agrees with the plain one)."),
                };
                self.model_check.set(Some(if passed {
                    format!("Passed: {terms} reference terms ({workers}), lowest cosine similarity {worst_cosine:.5} (“{worst_term}”).{vectors}{rows}{ints}{attention}")
                } else {
                    format!("FAILED: lowest cosine similarity {worst_cosine:.5} for “{worst_term}” (needs ≥ 0.999).{vectors}{rows}{ints}{attention}")
                }));
                self.job.set(None);
            }
            Event::Benched(b) => {
                self.bench.set(Some(b));
                self.job.set(None);
            }
            Event::BenchedDocs(b) => {
                self.bench_docs.set(Some(serde_json::to_string_pretty(&b).unwrap_or_default()));
                self.job.set(None);
            }
            Event::ReplayChecked(check) => {
                self.replay_progress.set(None);
                self.replay_error.set(None);
                self.replay_checked(check);
                self.job.set(None);
            }
            // The recipient's mode (`super::recipient`) takes these while its job runs; one
            // arriving after that job was given up belongs to no one.
            Event::Epochs { .. } | Event::Trained(_) => {}
            Event::DpChecked { id, result } => self.dp_checked(id, result),
            Event::Evaluated(r) => {
                self.stages.set(Vec::new());
                self.evaluation.set(Some(r));
                self.job.set(None);
            }
        }
    }
}
