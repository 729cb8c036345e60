//! The app's state as signals, and how worker events change it. Views only read these.

use std::cell::RefCell;

use leptos::prelude::*;
use web_sys::File;

use crate::protocol::{
    BenchFigures, CorpusSummary, Event, FieldError, FileInfo, Preview, Request, RunResult, RunSettings, Stage, VocabChoice,
};
use crate::vocab::Bundled;

use super::engine;

thread_local! {
    /// The curator's files: in this tab's memory only, never stored.
    static CORPUS_FILES: RefCell<Vec<File>> = const { RefCell::new(Vec::new()) };
    static VOCAB_FILE: RefCell<Option<File>> = const { RefCell::new(None) };
    static MODEL_FILES: RefCell<(Option<File>, Option<File>)> = const { RefCell::new((None, None)) };
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
}

#[derive(Clone, Debug, PartialEq)]
pub enum StageState {
    Waiting,
    Running { done: u64, total: u64 },
    Done { seconds: f64, note: String },
    Failed,
}

/// The raw text of every settings field, as typed.
#[derive(Clone, Copy)]
pub struct SettingsFields {
    pub eps_voc: RwSignal<String>,
    pub eps_kde: RwSignal<String>,
    pub terms_per_doc: RwSignal<String>,
    pub top_n: RwSignal<String>,
    pub len: RwSignal<String>,
    pub features: RwSignal<String>,
    pub per_class: RwSignal<String>,
    pub sampler: RwSignal<String>,
    pub bandwidth: RwSignal<String>,
    /// The public class set (`crate::classes`) as typed or ticked: one class name per line.
    pub classes: RwSignal<String>,
    /// Documents with an undeclared label: gathered into `other_name` (true) or left out.
    pub gather_other: RwSignal<bool>,
    pub other_name: RwSignal<String>,
    pub vocab_per_class: RwSignal<bool>,
    /// Reuse this page's earlier private vocabulary when its settings match (no new ε_voc).
    pub reuse_vocabulary: RwSignal<bool>,
    /// Sequences per class in proportion to DP class counts (ε = `DEFAULT_EPS_COUNTS`).
    pub proportional: RwSignal<bool>,
    /// Whether the corpus was read with a label column (set by `AppState::load`): then the
    /// classes must be declared; without one, the run has a single class.
    pub labelled: RwSignal<bool>,
}

impl SettingsFields {
    fn new(d: &RunSettings) -> Self {
        SettingsFields {
            eps_voc: RwSignal::new(d.eps_voc.to_string()),
            eps_kde: RwSignal::new(d.eps_kde.to_string()),
            terms_per_doc: RwSignal::new(d.terms_per_doc.to_string()),
            top_n: RwSignal::new(d.top_n.to_string()),
            len: RwSignal::new(d.len.to_string()),
            features: RwSignal::new(d.features.to_string()),
            per_class: RwSignal::new(d.per_class.to_string()),
            sampler: RwSignal::new(d.sampler.name().to_string()),
            bandwidth: RwSignal::new(d.bandwidth.to_string()),
            classes: RwSignal::new(d.classes.join("\n")),
            gather_other: RwSignal::new(d.other_class.is_some()),
            other_name: RwSignal::new(d.other_class.clone().unwrap_or_else(|| crate::classes::ClassSet::OTHER.to_string())),
            vocab_per_class: RwSignal::new(d.vocab_per_class),
            reuse_vocabulary: RwSignal::new(d.reuse_vocabulary),
            proportional: RwSignal::new(d.eps_counts.is_some()),
            labelled: RwSignal::new(false),
        }
    }

    /// The declared class names, in order (blank lines and `#` comments skipped).
    pub fn class_names(&self) -> Vec<String> {
        crate::classes::ClassSet::parse_names(&self.classes.get(), false)
    }

    /// Whether `label` is a declared class (for the observed labels' tick boxes).
    pub fn is_declared(&self, label: &str) -> bool {
        self.class_names().iter().any(|n| n == label.trim())
    }

    /// Ticks or unticks an observed label: appends its line, or removes every line naming it.
    pub fn set_declared(&self, label: &str, on: bool) {
        let label = label.trim();
        self.classes.update(|text| {
            let mut lines: Vec<&str> = text.lines().filter(|l| l.trim() != label).collect();
            if on {
                lines.push(label);
            }
            *text = lines.join("\n");
        });
    }

    /// One sentence on what the chosen sampler keeps.
    pub fn sampler_description(&self) -> &'static str {
        crate::summary::Sampler::parse(&self.sampler.get()).unwrap_or(crate::summary::KdeParams::DEFAULT_SAMPLER).describe()
    }

    /// The settings, or every field that is wrong with why.
    pub fn parse(&self, vocab_len: Option<usize>) -> Result<RunSettings, Vec<FieldError>> {
        let mut errs = Vec::new();
        let float = |field: &'static str, s: RwSignal<String>, errs: &mut Vec<FieldError>| -> f64 {
            s.get().trim().parse::<f64>().unwrap_or_else(|_| {
                errs.push(FieldError { field, message: format!("{:?} is not a number", s.get()) });
                1.0
            })
        };
        let int = |field: &'static str, s: RwSignal<String>, errs: &mut Vec<FieldError>| -> usize {
            s.get().trim().parse::<usize>().unwrap_or_else(|_| {
                errs.push(FieldError { field, message: format!("{:?} is not a whole number", s.get()) });
                1
            })
        };
        let sampler = crate::summary::Sampler::parse(&self.sampler.get()).unwrap_or(crate::summary::KdeParams::DEFAULT_SAMPLER);
        let s = RunSettings {
            eps_voc: float("eps_voc", self.eps_voc, &mut errs),
            eps_kde: float("eps_kde", self.eps_kde, &mut errs),
            terms_per_doc: int("terms_per_doc", self.terms_per_doc, &mut errs),
            top_n: int("top_n", self.top_n, &mut errs),
            len: int("len", self.len, &mut errs),
            features: int("features", self.features, &mut errs),
            per_class: int("per_class", self.per_class, &mut errs),
            sampler,
            bandwidth: float("bandwidth", self.bandwidth, &mut errs),
            classes: self.class_names(),
            other_class: self.gather_other.get().then(|| self.other_name.get()),
            vocab_per_class: self.vocab_per_class.get(),
            reuse_vocabulary: self.reuse_vocabulary.get(),
            eps_counts: self.proportional.get().then_some(RunSettings::DEFAULT_EPS_COUNTS),
            ..RunSettings::default()
        };
        for e in s.check(vocab_len) {
            if !errs.iter().any(|x| x.field == e.field) {
                errs.push(e);
            }
        }
        // The worker refuses a labelled run without a valid declared class set: say so here.
        if let Err(e) = s.class_set(self.labelled.get()) {
            errs.push(e);
        }
        if s.terms_per_doc > crate::ui::MAX_TERMS && !errs.iter().any(|x| x.field == "terms_per_doc") {
            errs.push(FieldError { field: "terms_per_doc", message: format!("S must be at most {} in the app", crate::ui::MAX_TERMS) });
        }
        if errs.is_empty() {
            Ok(s)
        } else {
            Err(errs)
        }
    }
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
    /// The utility check's result: NOT DP, shown to the curator only, never downloaded.
    pub evaluation: RwSignal<Option<crate::eval::EvalReport>>,
    /// The worker's idle-time pass over a user's own list: (terms embedded, of).
    pub background: RwSignal<Option<(u64, u64)>>,
    /// The settings of the run in progress, and of the last run that finished on the loaded
    /// corpus: the worker keeps that run's private vocabulary for a run with the same
    /// vocabulary settings (`RunSettings::reuses_vocabulary_of`), which then spends no ε_voc.
    pub running: RwSignal<Option<RunSettings>>,
    pub last_finished: RwSignal<Option<RunSettings>>,
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
            evaluation: RwSignal::new(None),
            background: RwSignal::new(None),
            running: RwSignal::new(None),
            last_finished: RwSignal::new(None),
        }
    }

    /// ε a run with `s` will spend: without ε_voc when it reuses the last finished run's private
    /// vocabulary (the worker checks again, against its memory and the ledger).
    pub fn planned_epsilon(&self, s: &RunSettings) -> f64 {
        s.planned_epsilon(self.last_finished.get().is_some_and(|earlier| s.reuses_vocabulary_of(&earlier)))
    }

    /// Shows the last run's DP outputs again after a reload (the embedding counts, never
    /// stored, read 0).
    pub fn restore_last_run(&self) {
        let this = *self;
        leptos::task::spawn_local(async move {
            if let Ok(Some(json)) = super::jobstore::load_last_run().await {
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
                            let _ = super::jobstore::save_last_run(&json).await;
                        }
                    }
                    if this.result.get_untracked().is_none() {
                        this.result.set(Some(r));
                    }
                }
            }
        });
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
        self.settings.labelled.set(!label.is_empty());
        self.summary.set(None);
        self.result.set(None);
        // The worker drops the kept private vocabulary when a corpus is read.
        self.last_finished.set(None);
        self.begin(Job::Load);
        self.stages.set(vec![(Stage::Read, StageState::Running { done: 0, total: 0 })]);
        engine::send(
            &Request::Load {
                files: self.files.get(),
                text_col: (!text.is_empty()).then_some(text),
                label_col: (!label.is_empty()).then_some(label),
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

    pub fn evaluate(&self, settings: RunSettings) {
        self.evaluation.set(None);
        self.begin(Job::Evaluate);
        self.stages.set([Stage::Model, Stage::Embed, Stage::Evaluate].iter().map(|s| (*s, StageState::Waiting)).collect());
        engine::send(&Request::Evaluate { settings }, &[]);
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

    // ---- events from the worker ----

    pub fn apply(&self, ev: Event) {
        match ev {
            Event::Ready => self.worker_ready.set(true),
            Event::Progress { stage, done, total } => self.set_stage(stage, StageState::Running { done, total }),
            Event::StageDone { stage, seconds, note } => self.set_stage(stage, StageState::Done { seconds, note }),
            Event::Inspected(p) => {
                self.text_col.set(p.suggested_text.clone().unwrap_or_default());
                self.label_col.set(p.suggested_label.clone().unwrap_or_default());
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
                        let _ = super::jobstore::save_last_run(&json).await;
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
            Event::Cancelled => {
                self.job.set(None);
                self.mark_running_failed();
                self.error.set(Some("Cancelled. ε already spent by finished DP stages stays in the ledger.".into()));
            }
            Event::Failed { stage, message } => {
                if let Some(stage) = stage {
                    self.set_stage(stage, StageState::Failed);
                }
                self.mark_running_failed();
                self.error.set(Some(message));
                self.job.set(None);
            }
            Event::ModelLoaded { name, dim, checksum, seconds } => {
                self.model.set(format!("{name}: {dim} dimensions, loaded in {seconds:.1} s (SHA-256 {}…)", &checksum[..12.min(checksum.len())]));
                self.model_check.set(None);
                self.job.set(None);
            }
            Event::ModelChecked { terms, worst_cosine, worst_term, passed, helpers, by_helpers, vectors_checked, vectors_worst_cosine, vectors_worst_term } => {
                let workers = match helpers {
                    0 => "this worker alone".to_string(),
                    1 => format!("{by_helpers} of them by 1 helper worker"),
                    n => format!("{by_helpers} of them by {n} helper workers"),
                };
                let vectors = match vectors_checked {
                    0 => " No bundled vectors belong to this model: every term is embedded live.".to_string(),
                    n => format!(" Bundled vectors: {n} random terms, lowest cosine similarity {vectors_worst_cosine:.5} (“{vectors_worst_term}”, needs ≥ 0.995)."),
                };
                self.model_check.set(Some(if passed {
                    format!("Passed: {terms} reference terms ({workers}), lowest cosine similarity {worst_cosine:.5} (“{worst_term}”).{vectors}")
                } else {
                    format!("FAILED: lowest cosine similarity {worst_cosine:.5} for “{worst_term}” (needs ≥ 0.999).{vectors}")
                }));
                self.job.set(None);
            }
            Event::Benched(b) => {
                self.bench.set(Some(b));
                self.job.set(None);
            }
            Event::Evaluated(r) => {
                self.stages.set(Vec::new());
                self.evaluation.set(Some(r));
                self.job.set(None);
            }
        }
    }

    fn set_stage(&self, stage: Stage, st: StageState) {
        self.stages.update(|v| match v.iter_mut().find(|(s, _)| *s == stage) {
            Some(slot) => slot.1 = st,
            None => v.push((stage, st)),
        });
    }

    fn mark_running_failed(&self) {
        self.stages.update(|v| {
            for (_, st) in v.iter_mut() {
                if matches!(st, StageState::Running { .. }) {
                    *st = StageState::Failed;
                }
            }
        });
    }
}

/// Fields of a [`RunResult`] that are exact counts about the private corpus (how many matched
/// terms were embedded, how many came from the cache), not DP outputs: shown after the run,
/// never written to IndexedDB with the DP outputs.
const NOT_STORED: [&str; 2] = ["embedded_fresh", "embedded_from_cache"];

/// The JSON saved as the last run: the result without [`NOT_STORED`].
fn stored_form(r: &RunResult) -> Option<String> {
    let mut v = serde_json::to_value(r).ok()?;
    let o = v.as_object_mut()?;
    for k in NOT_STORED {
        o.remove(k);
    }
    Some(v.to_string())
}
