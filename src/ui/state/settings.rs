//! The settings form: the raw text of every field, as typed, and its parsing into
//! `RunSettings` with every field's error.

use leptos::prelude::*;

use crate::protocol::{FieldError, RunSettings};

/// Largest S and L accepted by the app (the worker keeps this many terms per document).
pub const MAX_TERMS: usize = 64;

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
    /// The DP utility check the sampler was taken from (`RunSettings::chosen_by_check`): set by
    /// "Use …" on its result, cleared by any other choice of sampler (`super::check`).
    pub chosen_by_check: RwSignal<Option<String>>,
    pub bandwidth: RwSignal<String>,
    /// The public class set (`crate::input::classes`) as typed or ticked: one class name per line.
    pub classes: RwSignal<String>,
    /// The labels the curator ticked from the corpus's observed labels (the report says which
    /// declared classes came from there).
    pub ticked: RwSignal<Vec<String>>,
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
    pub(super) fn new(d: &RunSettings) -> Self {
        SettingsFields {
            eps_voc: RwSignal::new(d.eps_voc.to_string()),
            eps_kde: RwSignal::new(d.eps_kde.to_string()),
            terms_per_doc: RwSignal::new(d.terms_per_doc.to_string()),
            top_n: RwSignal::new(d.top_n.to_string()),
            len: RwSignal::new(d.len.to_string()),
            features: RwSignal::new(d.features.to_string()),
            per_class: RwSignal::new(d.per_class.to_string()),
            sampler: RwSignal::new(d.sampler.name().to_string()),
            chosen_by_check: RwSignal::new(d.chosen_by_check.clone()),
            bandwidth: RwSignal::new(d.bandwidth.to_string()),
            classes: RwSignal::new(d.classes.join("\n")),
            ticked: RwSignal::new(Vec::new()),
            gather_other: RwSignal::new(d.other_class.is_some()),
            other_name: RwSignal::new(d.other_class.clone().unwrap_or_else(|| crate::input::classes::ClassSet::OTHER.to_string())),
            vocab_per_class: RwSignal::new(d.vocab_per_class),
            reuse_vocabulary: RwSignal::new(d.reuse_vocabulary),
            proportional: RwSignal::new(d.eps_counts.is_some()),
            labelled: RwSignal::new(false),
        }
    }

    /// A preset from the paper: ε_voc and ε_kde.
    pub fn preset(&self, eps_voc: f64, eps_kde: f64) {
        self.eps_voc.set(eps_voc.to_string());
        self.eps_kde.set(eps_kde.to_string());
    }

    /// The declared class names, in order (blank lines and `#` comments skipped).
    pub fn class_names(&self) -> Vec<String> {
        crate::input::classes::ClassSet::parse_names(&self.classes.get(), false)
    }

    /// Whether `label` is a declared class (for the observed labels' tick boxes).
    pub fn is_declared(&self, label: &str) -> bool {
        self.class_names().iter().any(|n| n == label.trim())
    }

    /// Ticks or unticks an observed label: appends its line, or removes every line naming it.
    pub fn set_declared(&self, label: &str, on: bool) {
        let label = label.trim();
        self.ticked.update(|t| {
            t.retain(|x| x != label);
            if on {
                t.push(label.to_string());
            }
        });
        self.classes.update(|text| {
            let mut lines: Vec<&str> = text.lines().filter(|l| l.trim() != label).collect();
            if on {
                lines.push(label);
            }
            *text = lines.join("\n");
        });
    }

    /// The curator picks a sampler: no longer the one a check chose (a run naming the check with
    /// another sampler would be refused).
    pub fn choose_sampler(&self, name: String) {
        self.chosen_by_check.set(None);
        self.sampler.set(name);
    }

    /// The sampler a DP utility check chose, with the check's id for the next run.
    pub fn use_chosen(&self, sampler: &str, check: &str) {
        self.sampler.set(sampler.to_string());
        self.chosen_by_check.set(Some(check.to_string()));
    }

    /// One sentence on what the chosen sampler keeps.
    pub fn sampler_description(&self) -> &'static str {
        crate::dp::summary::KeyphraseSampler::parse(&self.sampler.get()).unwrap_or(crate::dp::summary::SummaryParams::DEFAULT_SAMPLER).describe()
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
        let sampler = crate::dp::summary::KeyphraseSampler::parse(&self.sampler.get()).unwrap_or(crate::dp::summary::SummaryParams::DEFAULT_SAMPLER);
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
            classes_ticked: {
                let ticked = self.ticked.get();
                self.class_names().into_iter().filter(|n| ticked.contains(n)).collect()
            },
            classes: self.class_names(),
            other_class: self.gather_other.get().then(|| self.other_name.get()),
            vocab_per_class: self.vocab_per_class.get(),
            reuse_vocabulary: self.reuse_vocabulary.get(),
            eps_counts: self.proportional.get().then_some(RunSettings::DEFAULT_EPS_COUNTS),
            chosen_by_check: self.chosen_by_check.get(),
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
        if s.terms_per_doc > MAX_TERMS && !errs.iter().any(|x| x.field == "terms_per_doc") {
            errs.push(FieldError { field: "terms_per_doc", message: format!("S must be at most {} in the app", MAX_TERMS) });
        }
        if errs.is_empty() {
            Ok(s)
        } else {
            Err(errs)
        }
    }
}
