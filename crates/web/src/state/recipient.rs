//! The page's second mode, "Use a synthetic corpus": the recipient's side (`dpkps_core::adapt`,
//! docs/recipient.md). Three sets of documents (a labelled synthetic corpus, the recipient's
//! own unlabelled documents, an optional labelled test set), each chosen, previewed and given
//! its columns like the curator's corpus (`Inspect`); then one worker job (`Train`) embeds them,
//! trains the classifier (with the CORAL term, and plain to compare), scores and predicts.
//!
//! While this mode has a job in the worker, the worker's events are its own
//! ([`RecipientState::claims`]); the curator's state sees none of them.
//!
//! Privacy: nothing here spends ε or touches the curator's corpus or ledger. The recipient's
//! files stay in this tab's memory (handles, as for the curator's corpus); the predictions and
//! the model, which hold or derive from the recipient's documents, stay in memory until the
//! recipient downloads them.

use std::cell::RefCell;

use leptos::prelude::*;
use web_sys::File;

use dpkps_core::adapt::{EpochLog, TrainParams};
use dpkps_core::input::preview::Preview;
use dpkps_core::protocol::{DocSet, Event, FileInfo, Request, Stage, TrainResult};
use crate::engine;

use super::app::{mark_running_failed, set_stage, StageState};

/// The three sets of documents, in the order their files go to the worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetKind {
    Synthetic,
    Unlabelled,
    Test,
}

impl SetKind {
    pub const ALL: [SetKind; 3] = [SetKind::Synthetic, SetKind::Unlabelled, SetKind::Test];

    fn index(self) -> usize {
        self as usize
    }

    /// Whether the set has labels (a label column to choose).
    pub fn labelled(self) -> bool {
        self != SetKind::Unlabelled
    }
}

thread_local! {
    /// The recipient's files: handles in this tab's memory only, never stored.
    static FILES: RefCell<[Vec<File>; 3]> = RefCell::default();
}

/// One set: its files, the preview of its first file, its columns.
#[derive(Clone, Copy)]
pub struct DocSetState {
    pub kind: SetKind,
    pub files: RwSignal<Vec<FileInfo>>,
    pub preview: RwSignal<Option<Preview>>,
    pub text_col: RwSignal<String>,
    pub label_col: RwSignal<String>,
}

impl DocSetState {
    fn new(kind: SetKind) -> Self {
        DocSetState {
            kind,
            files: RwSignal::new(Vec::new()),
            preview: RwSignal::new(None),
            text_col: RwSignal::new(String::new()),
            label_col: RwSignal::new(String::new()),
        }
    }

    /// Whether files were chosen and read for a preview.
    pub fn ready(&self) -> bool {
        !self.files.get().is_empty() && self.preview.get().is_some()
    }

    fn doc_set(&self) -> DocSet {
        let some = |s: String| (!s.is_empty()).then_some(s);
        DocSet {
            files: self.files.get_untracked(),
            text_col: some(self.text_col.get_untracked()),
            label_col: if self.kind.labelled() { some(self.label_col.get_untracked()) } else { None },
        }
    }
}

/// What this mode has the worker doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecipientJob {
    Inspect(SetKind),
    Train,
}

#[derive(Clone, Copy)]
pub struct RecipientState {
    /// The mode switch at the top of the page: this mode is shown.
    pub on: RwSignal<bool>,
    pub sets: [DocSetState; 3],
    pub job: RwSignal<Option<RecipientJob>>,
    pub error: RwSignal<Option<String>>,
    pub compare: RwSignal<bool>,
    /// λ and the epochs, as typed.
    pub coral_weight: RwSignal<String>,
    pub epochs: RwSignal<String>,
    pub stages: RwSignal<Vec<(Stage, StageState)>>,
    /// Every epoch's losses so far, with its model's name ("coral" or "plain").
    pub curve: RwSignal<Vec<(String, EpochLog)>>,
    pub result: RwSignal<Option<TrainResult>>,
}

impl RecipientState {
    pub fn new() -> Self {
        let d = TrainParams::default();
        RecipientState {
            on: RwSignal::new(false),
            sets: SetKind::ALL.map(DocSetState::new),
            job: RwSignal::new(None),
            error: RwSignal::new(None),
            compare: RwSignal::new(true),
            coral_weight: RwSignal::new(d.coral_weight.to_string()),
            epochs: RwSignal::new(d.epochs.to_string()),
            stages: RwSignal::new(Vec::new()),
            curve: RwSignal::new(Vec::new()),
            result: RwSignal::new(None),
        }
    }

    pub fn set(&self, kind: SetKind) -> DocSetState {
        self.sets[kind.index()]
    }

    pub fn busy(&self) -> bool {
        self.job.get().is_some()
    }

    /// The training settings typed, checked (`TrainParams::check`), or what is wrong.
    pub fn params(&self) -> Result<TrainParams, String> {
        let weight: f64 = self.coral_weight.get().trim().parse().map_err(|_| "λ (the CORAL weight) is not a number".to_string())?;
        let epochs: usize = self.epochs.get().trim().parse().map_err(|_| "the epochs are not a whole number".to_string())?;
        let p = TrainParams { coral_weight: weight, epochs, ..TrainParams::default() };
        p.check().map_err(|e| e.to_string())?;
        Ok(p)
    }

    /// Why Train cannot start yet, in plain words; `None` when it can.
    pub fn train_blocker(&self) -> Option<String> {
        if self.busy() {
            return Some("working…".into());
        }
        if !self.set(SetKind::Synthetic).ready() {
            return Some("Choose the synthetic corpus first.".into());
        }
        if self.set(SetKind::Synthetic).label_col.get().is_empty() {
            return Some("Choose the synthetic corpus's label column.".into());
        }
        let test = self.set(SetKind::Test);
        if test.ready() && test.label_col.get().is_empty() {
            return Some("Choose the test set's label column.".into());
        }
        self.params().err()
    }

    // ---- actions (called by views) ----

    /// Files chosen for one set: kept (handles), and the first one previewed by the worker.
    pub fn choose(&self, kind: SetKind, list: Vec<File>) {
        let Some(first) = list.first().cloned() else { return };
        let set = self.set(kind);
        let infos: Vec<FileInfo> = list.iter().map(|f| FileInfo { name: f.name(), size: f.size() as u64 }).collect();
        FILES.with(|f| f.borrow_mut()[kind.index()] = list);
        set.files.set(infos.clone());
        set.preview.set(None);
        self.begin(RecipientJob::Inspect(kind));
        engine::send(&Request::Inspect { files: infos }, &[first]);
    }

    /// Forgets one set's files (the unlabelled documents and the test set are optional).
    pub fn clear(&self, kind: SetKind) {
        FILES.with(|f| f.borrow_mut()[kind.index()].clear());
        let set = self.set(kind);
        set.files.set(Vec::new());
        set.preview.set(None);
    }

    pub fn train(&self) {
        let params = match self.params() {
            Ok(p) => p,
            Err(e) => return self.error.set(Some(e)),
        };
        let chosen = |k: SetKind| self.set(k).ready().then(|| self.set(k).doc_set());
        let Some(synthetic) = chosen(SetKind::Synthetic) else {
            return self.error.set(Some("Choose the synthetic corpus first.".into()));
        };
        let (unlabelled, test) = (chosen(SetKind::Unlabelled), chosen(SetKind::Test));
        let files: Vec<File> = FILES.with(|f| {
            let f = f.borrow();
            let mut all = f[0].clone();
            if unlabelled.is_some() {
                all.extend(f[1].iter().cloned());
            }
            if test.is_some() {
                all.extend(f[2].iter().cloned());
            }
            all
        });
        self.result.set(None);
        self.curve.set(Vec::new());
        self.begin(RecipientJob::Train);
        self.stages.set([Stage::Model, Stage::Documents, Stage::Train].iter().map(|s| (*s, StageState::Waiting)).collect());
        engine::send(&Request::Train { synthetic, unlabelled, test, params, compare: self.compare.get_untracked() }, &files);
    }

    pub fn cancel(&self) {
        engine::send(&Request::Cancel, &[]);
    }

    fn begin(&self, job: RecipientJob) {
        self.error.set(None);
        self.job.set(Some(job));
    }

    // ---- the worker's events ----

    /// Whether `ev` is this mode's: any job event while it has a job in the worker.
    pub fn claims(&self, ev: &Event) -> bool {
        self.job.get_untracked().is_some() && !matches!(ev, Event::Ready | Event::Background { .. })
    }

    pub fn apply(&self, ev: Event) {
        match ev {
            Event::Inspected(p) => {
                if let Some(RecipientJob::Inspect(kind)) = self.job.get_untracked() {
                    let set = self.set(kind);
                    // The preview's suggestion, else the usual name, else what the select shows
                    // first (the first column; for the label, the first other than the text's).
                    let pick = |suggested: Option<String>, usual: &str, not: &str| {
                        suggested
                            .or_else(|| p.columns.iter().find(|c| c.as_str() == usual).cloned())
                            .or_else(|| p.columns.iter().find(|c| c.as_str() != not).cloned())
                            .unwrap_or_default()
                    };
                    let text = pick(p.suggested_text.clone(), "text", "");
                    set.label_col.set(if kind.labelled() { pick(p.suggested_label.clone(), "label", &text) } else { String::new() });
                    set.text_col.set(text);
                    set.preview.set(Some(p));
                }
                self.job.set(None);
            }
            Event::Progress { stage, done, total } => set_stage(self.stages, stage, StageState::Running { done, total }),
            Event::StageDone { stage, seconds, note } => set_stage(self.stages, stage, StageState::Done { seconds, note }),
            Event::Epochs { model, logs } => self.curve.update(|c| c.extend(logs.into_iter().map(|l| (model.clone(), l)))),
            Event::Trained(r) => {
                self.result.set(Some(*r));
                self.job.set(None);
            }
            Event::Cancelled => {
                mark_running_failed(self.stages);
                self.error.set(Some("Training cancelled. Nothing was kept; change what you like and train again.".into()));
                self.job.set(None);
            }
            Event::Failed { stage, message } => {
                if let Some(RecipientJob::Inspect(kind)) = self.job.get_untracked() {
                    self.clear(kind);
                }
                if let Some(stage) = stage {
                    set_stage(self.stages, stage, StageState::Failed);
                }
                mark_running_failed(self.stages);
                self.error.set(Some(message));
                self.job.set(None);
            }
            // Not asked for by this mode.
            _ => {}
        }
    }

}
