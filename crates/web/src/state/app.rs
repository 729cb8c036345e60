//! The app's state as signals, and the actions the views call (how the worker's events change
//! it is in `super::events`). The sentences the views show are built in `crate::text`.

use std::cell::RefCell;

use leptos::prelude::*;
use web_sys::File;

use dpkps_core::protocol::{
    BenchFigures, CorpusSummary, FieldError, FileInfo, Request, RunResult, RunSettings, Stage, VocabChoice,
};
use dpkps_core::input::preview::Preview;
use crate::engine;
use crate::io::jobstore;
use dpkps_core::input::public_vocab::Bundled;

use super::settings::SettingsFields;

thread_local! {
    /// The curator's files: in this tab's memory only, never stored.
    static CORPUS_FILES: RefCell<Vec<File>> = const { RefCell::new(Vec::new()) };
    static VOCAB_FILE: RefCell<Option<File>> = const { RefCell::new(None) };
    static MODEL_FILES: RefCell<(Option<File>, Option<File>)> = const { RefCell::new((None, None)) };
}

/// The corpus files the curator chose (handles, not contents), to attach to a request.
pub(super) fn corpus_files() -> Vec<File> {
    CORPUS_FILES.with(|c| c.borrow().clone())
}

/// What the worker is busy with (one job at a time).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Job {
    Inspect,
    Load,
    Run,
    Model,
    Bench,
    Evaluate,
    /// The replay check (`super::replay`).
    Replay,
    /// The DP vote over the generated documents (`super::vote`).
    Vote,
}

/// Sets `stage`'s state in a job's stage list (appended if it is not there yet).
pub fn set_stage(stages: RwSignal<Vec<(Stage, StageState)>>, stage: Stage, st: StageState) {
    stages.update(|v| match v.iter_mut().find(|(s, _)| *s == stage) {
        Some(slot) => slot.1 = st,
        None => v.push((stage, st)),
    });
}

/// Marks every running stage of a job's stage list failed.
pub fn mark_running_failed(stages: RwSignal<Vec<(Stage, StageState)>>) {
    stages.update(|v| {
        for (_, st) in v.iter_mut() {
            if matches!(st, StageState::Running { .. }) {
                *st = StageState::Failed;
            }
        }
    });
}

#[derive(Clone, Debug, PartialEq)]
pub enum StageState {
    Waiting,
    Running { done: u64, total: u64 },
    Done { seconds: f64, note: String },
    Failed,
}

impl StageState {
    /// The state's name for `data-state`: "waiting", "running", "done" or "failed".
    pub fn name(&self) -> String {
        format!("{self:?}").split([' ', '{']).next().unwrap_or("").to_lowercase()
    }

    /// The progress bar (value, max) and the status text.
    pub fn bar(&self) -> (f64, f64, String) {
        match self {
            StageState::Waiting => (0.0, 1.0, "waiting".to_string()),
            StageState::Running { done, total } if *total > 0 => {
                (*done as f64, *total as f64, format!("{}%", (100 * done / total).min(100)))
            }
            StageState::Running { .. } => (0.0, 1.0, "working…".to_string()),
            StageState::Done { seconds, note } => (1.0, 1.0, format!("done in {seconds:.1} s: {note}")),
            StageState::Failed => (0.0, 1.0, "stopped".to_string()),
        }
    }
}

/// A finished DP utility check (`super::check`) as the page shows it: its ledger run id and its (DP) result.
#[derive(Clone, Debug, PartialEq)]
pub struct ShownCheck {
    pub id: String,
    pub result: dpkps_core::eval::dp_check::CheckResult,
}

impl ShownCheck {
    /// The sampler the check chose (the highest noisy accuracy).
    pub fn chosen(&self) -> Option<&str> {
        self.result.chosen.as_deref()
    }
}

/// A replay check's result (`super::replay`), with the job it was made for.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayResult {
    pub job: String,
    /// The job's generated documents, as checked.
    pub check: dpkps_core::replay::ReplayCheck,
    /// The other answers of the job in the audit log that were checked, and the keys of those
    /// flagged (`dpkps_core::llm::answer_key`).
    pub answers_checked: usize,
    pub answers_flagged: std::collections::BTreeSet<String>,
    /// The corpus load it compared the documents with (`AppState::corpus_loads`).
    pub load: u32,
}

/// A replay check sent to the worker (`super::replay`): its job, how many of the documents
/// sent are the job's (the others are answers of the audit log: their keys, in order), and
/// the corpus load.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayAsk {
    pub job: String,
    pub docs: usize,
    pub answers: Vec<String>,
    pub load: u32,
}

/// A stage's name on the wire (`data-stage`).
pub fn stage_key(stage: Stage) -> String {
    serde_json::to_string(&stage).unwrap_or_default().replace('"', "")
}

#[derive(Clone, Copy)]
pub struct AppState {
    pub worker_ready: RwSignal<bool>,
    pub job: RwSignal<Option<Job>>,
    pub error: RwSignal<Option<String>>,
    pub files: RwSignal<Vec<FileInfo>>,
    pub preview: RwSignal<Option<Preview>>,
    pub text_col: RwSignal<String>,
    pub label_col: RwSignal<String>,
    /// The person column ("" for none: the privacy unit is the document).
    pub person_col: RwSignal<String>,
    /// "english", "medical" or "custom".
    pub vocab: RwSignal<String>,
    pub vocab_file: RwSignal<Option<String>>,
    pub summary: RwSignal<Option<CorpusSummary>>,
    pub settings: SettingsFields,
    pub stages: RwSignal<Vec<(Stage, StageState)>>,
    pub result: RwSignal<Option<RunResult>>,
    pub model: RwSignal<String>,
    pub model_check: RwSignal<Option<String>>,
    pub model_files: RwSignal<(Option<String>, Option<String>)>,
    pub bench: RwSignal<Option<BenchFigures>>,
    /// The document benchmark's figures, as pretty JSON (benchmark page only).
    pub bench_docs: RwSignal<Option<String>>,
    /// The utility check's result on the tuning file: NOT DP, shown to the curator only, never
    /// downloaded.
    pub evaluation: RwSignal<Option<dpkps_core::eval::EvalReport>>,
    /// The last DP utility check on the loaded corpus (`super::check`).
    pub dp_check: RwSignal<Option<ShownCheck>>,
    /// The worker's idle-time pass over a user's own list: (terms embedded, of).
    pub background: RwSignal<Option<(u64, u64)>>,
    /// The settings of the run in progress, and of the last run that finished on the loaded
    /// corpus: the worker keeps that run's private vocabulary for a run with the same
    /// vocabulary settings (`RunSettings::reuses_vocabulary_of`), which then spends no ε_voc.
    pub running: RwSignal<Option<RunSettings>>,
    pub last_finished: RwSignal<Option<RunSettings>>,
    /// The replay check (`super::replay`, a worker job like the others): its last result (NOT DP; memory only), the job it
    /// was asked for, its progress (bytes read, of) and why it failed; and whether the corpus
    /// downloads leave the flagged documents out (on by default).
    pub replay: RwSignal<Option<ReplayResult>>,
    pub replay_for: RwSignal<Option<ReplayAsk>>,
    /// What the audit log download withholds: per job, the flags of its last check in this tab
    /// (memory only, like the results).
    pub replay_withheld: RwSignal<dpkps_core::llm::Withheld>,
    /// Corpus loads in this tab: a check counts as current only for the load it read.
    pub corpus_loads: RwSignal<u32>,
    pub replay_progress: RwSignal<Option<(u64, u64)>>,
    pub replay_error: RwSignal<Option<String>>,
    pub drop_flagged: RwSignal<bool>,
    /// The DP vote over the generated documents (`super::vote`): its last result (a DP output;
    /// memory only), the vote sent, its progress (documents embedded, of) and why it failed.
    pub vote: RwSignal<Option<super::vote::VoteShown>>,
    pub vote_for: RwSignal<Option<super::vote::VoteAsk>>,
    pub vote_progress: RwSignal<Option<(u64, u64)>>,
    pub vote_error: RwSignal<Option<String>>,
}

impl AppState {
    pub fn new() -> Self {
        AppState {
            worker_ready: RwSignal::new(false),
            job: RwSignal::new(None),
            error: RwSignal::new(None),
            files: RwSignal::new(Vec::new()),
            preview: RwSignal::new(None),
            text_col: RwSignal::new(String::new()),
            label_col: RwSignal::new(String::new()),
            person_col: RwSignal::new(String::new()),
            vocab: RwSignal::new("medical".into()),
            vocab_file: RwSignal::new(None),
            summary: RwSignal::new(None),
            settings: SettingsFields::new(&RunSettings::default()),
            stages: RwSignal::new(Vec::new()),
            result: RwSignal::new(None),
            model: RwSignal::new("all-MiniLM-L6-v2 (bundled; loaded when first needed)".into()),
            model_check: RwSignal::new(None),
            model_files: RwSignal::new((None, None)),
            bench: RwSignal::new(None),
            bench_docs: RwSignal::new(None),
            evaluation: RwSignal::new(None),
            dp_check: RwSignal::new(None),
            background: RwSignal::new(None),
            running: RwSignal::new(None),
            last_finished: RwSignal::new(None),
            replay: RwSignal::new(None),
            replay_for: RwSignal::new(None),
            replay_withheld: RwSignal::new(Default::default()),
            corpus_loads: RwSignal::new(0),
            replay_progress: RwSignal::new(None),
            replay_error: RwSignal::new(None),
            drop_flagged: RwSignal::new(true),
            vote: RwSignal::new(None),
            vote_for: RwSignal::new(None),
            vote_progress: RwSignal::new(None),
            vote_error: RwSignal::new(None),
        }
    }

    /// ε a run with `s` will spend: without ε_voc when it reuses the last finished run's private
    /// vocabulary (the worker checks again, against its memory and the ledger).
    pub fn planned_epsilon(&self, s: &RunSettings) -> f64 {
        s.planned_epsilon(self.last_finished.get().is_some_and(|earlier| s.reuses_vocabulary_of(&earlier)))
    }

    /// What the settings plan in all: the run's ε ([`Self::planned_epsilon`]) and the DP vote's
    /// after generation (`RunSettings::epsilon_after_generation`, from the registry of
    /// mechanisms): the Run button holds both to the budget, since candidates generated for a
    /// vote the budget cannot pay for would be wasted prompts.
    pub fn planned_in_all(&self, s: &RunSettings) -> f64 {
        self.planned_epsilon(s) + s.epsilon_after_generation()
    }

    /// Shows the last run's DP outputs again after a reload (the embedding counts, never
    /// stored, read 0).
    pub fn restore_last_run(&self) {
        let this = *self;
        leptos::task::spawn_local(async move {
            if let Ok(Some(json)) = jobstore::load_last_run().await {
                let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&json) else { return };
                let had_counts = v.get(NOT_STORED[0]).is_some() || v.get(NOT_STORED[1]).is_some();
                if let Some(o) = v.as_object_mut() {
                    for k in NOT_STORED {
                        o.insert(k.into(), 0.into());
                    }
                }
                if let Ok(r) = serde_json::from_value::<RunResult>(v) {
                    // Saved by an earlier version with the exact counts: store it again without.
                    if had_counts {
                        if let Some(json) = stored_form(&r) {
                            let _ = jobstore::save_last_run(&json).await;
                        }
                    }
                    if this.result.get_untracked().is_none() {
                        this.result.set(Some(r));
                    }
                }
            }
        });
    }

    /// The settings form parsed, with the loaded public list's size (public; with N at least
    /// it, ε_voc is not planned: `RunSettings::whole_list`).
    pub fn parsed_settings(&self) -> Result<RunSettings, Vec<FieldError>> {
        let public_terms = self.summary.get().map(|s| s.vocabulary_terms);
        self.settings.parse().map(|s| RunSettings { public_terms, ..s })
    }

    pub fn busy(&self) -> bool {
        self.job.get().is_some()
    }

    fn begin(&self, job: Job) {
        self.error.set(None);
        self.job.set(Some(job));
    }

    // ---- actions (called by views) ----

    pub fn choose_files(&self, list: Vec<File>) {
        if list.is_empty() {
            return;
        }
        let infos: Vec<FileInfo> = list.iter().map(|f| FileInfo { name: f.name(), size: f.size() as u64 }).collect();
        CORPUS_FILES.with(|c| *c.borrow_mut() = list);
        self.files.set(infos.clone());
        self.preview.set(None);
        self.summary.set(None);
        self.result.set(None);
        self.begin(Job::Inspect);
        let files = CORPUS_FILES.with(|c| c.borrow().clone());
        engine::send(&Request::Inspect { files: infos }, &files[..1]);
    }

    pub fn choose_vocab_file(&self, f: Option<File>) {
        self.vocab_file.set(f.as_ref().map(File::name));
        VOCAB_FILE.with(|v| *v.borrow_mut() = f);
        self.summary.set(None);
    }

    pub fn load(&self) {
        let mut files = CORPUS_FILES.with(|c| c.borrow().clone());
        let vocabulary = match self.vocab.get().as_str() {
            "custom" => match VOCAB_FILE.with(|v| v.borrow().clone()) {
                Some(f) => {
                    let name = f.name();
                    files.push(f);
                    VocabChoice::Custom { name }
                }
                None => {
                    self.error.set(Some("Choose a term list file for your own vocabulary (one term per line).".into()));
                    return;
                }
            },
            "english" => VocabChoice::Bundled { which: Bundled::English },
            _ => VocabChoice::Bundled { which: Bundled::Medical },
        };
        let text = self.text_col.get();
        let label = self.label_col.get();
        let person = self.person_col.get();
        self.settings.labelled.set(!label.is_empty());
        self.summary.set(None);
        self.result.set(None);
        // The worker drops the kept private vocabulary when a corpus is read. A replay check
        // was of the corpus loaded before: its flags still apply to the downloads until the
        // documents are checked against this load (`super::replay`).
        self.last_finished.set(None);
        // A check is of the corpus it read: the next run may not name it.
        self.dp_check.set(None);
        self.settings.chosen_by_check.set(None);
        self.corpus_loads.update(|n| *n += 1);
        self.begin(Job::Load);
        self.stages.set(vec![(Stage::Read, StageState::Running { done: 0, total: 0 })]);
        engine::send(
            &Request::Load {
                files: self.files.get(),
                text_col: (!text.is_empty()).then_some(text),
                label_col: (!label.is_empty()).then_some(label),
                person_col: (!person.is_empty()).then_some(person),
                vocabulary,
            },
            &files,
        );
    }

    pub fn run(&self, settings: RunSettings) {
        self.result.set(None);
        self.begin(Job::Run);
        self.stages.set(Stage::RUN.iter().map(|s| (*s, StageState::Waiting)).collect());
        self.running.set(Some(settings.clone()));
        engine::send(&Request::Run { settings }, &[]);
    }

    /// The utility check on a separate tuning file (reads nothing of the corpus).
    pub fn evaluate_tuning(&self, settings: RunSettings, file: File) {
        self.evaluation.set(None);
        self.begin(Job::Evaluate);
        self.stages.set([Stage::Evaluate, Stage::Model, Stage::Embed].iter().map(|s| (*s, StageState::Waiting)).collect());
        let info = FileInfo { name: file.name(), size: file.size() as u64 };
        engine::send(&Request::EvaluateTuning { settings, file: info }, &[file]);
    }

    pub fn cancel(&self) {
        if self.job.get() == Some(Job::Load) {
            // Reading is one synchronous pass: stop the worker itself (see `engine`).
            engine::restart();
            self.job.set(None);
            self.stages.set(Vec::new());
            self.error.set(Some("Cancelled. Nothing was kept; load the corpus again when ready.".into()));
        } else {
            engine::send(&Request::Cancel, &[]);
        }
    }

    pub fn model_check(&self) {
        self.model_check.set(None);
        self.begin(Job::Model);
        engine::send(&Request::ModelCheck, &[]);
    }

    pub fn choose_model_file(&self, which: usize, f: Option<File>) {
        let name = f.as_ref().map(File::name);
        MODEL_FILES.with(|m| {
            let mut m = m.borrow_mut();
            if which == 0 { m.0 = f } else { m.1 = f }
        });
        self.model_files.update(|m| if which == 0 { m.0 = name } else { m.1 = name });
    }

    pub fn use_own_model(&self) {
        let (m, t) = MODEL_FILES.with(|m| m.borrow().clone());
        match (m, t) {
            (Some(m), Some(t)) => {
                self.begin(Job::Model);
                let info = |f: &File| FileInfo { name: f.name(), size: f.size() as u64 };
                engine::send(&Request::UseModel { model: info(&m), tokenizer: info(&t) }, &[m, t]);
            }
            _ => self.error.set(Some("Choose both the .onnx model and its tokenizer.json.".into())),
        }
    }

    pub fn use_bundled_model(&self) {
        self.begin(Job::Model);
        engine::send(&Request::UseBundledModel, &[]);
    }

    pub fn bench(&self, terms: usize) {
        self.begin(Job::Bench);
        engine::send(&Request::Bench { terms }, &[]);
    }

    /// The document benchmark on the sets in `json` (`{"name": ["text", …], …}`, as
    /// `dpkps bench docs --write` leaves them).
    pub fn bench_docs(&self, json: &str, profile: usize, plans: bool) {
        let Ok(sets) = serde_json::from_str::<std::collections::BTreeMap<String, Vec<String>>>(json) else {
            self.bench_docs.set(Some("not a JSON object of document lists".into()));
            return;
        };
        let sets = sets.into_iter().map(|(name, texts)| dpkps_core::protocol::BenchDocSet { name, texts }).collect();
        self.begin(Job::Bench);
        engine::send(&Request::BenchDocs { sets, profile, plans }, &[]);
    }
}

/// Fields of a [`RunResult`] that are exact counts about the private corpus (how many matched
/// terms were embedded, how many came from the cache), not DP outputs: shown after the run,
/// never written to IndexedDB with the DP outputs.
const NOT_STORED: [&str; 2] = ["embedded_fresh", "embedded_from_cache"];

/// The JSON saved as the last run: the result without [`NOT_STORED`].
pub(super) fn stored_form(r: &RunResult) -> Option<String> {
    let mut v = serde_json::to_value(r).ok()?;
    let o = v.as_object_mut()?;
    for k in NOT_STORED {
        o.remove(k);
    }
    Some(v.to_string())
}
