//! The settings form's signals: the raw text of every field, as typed. Their parsing into
//! `RunSettings` with every field's error is plain code in `crate::form`.

use leptos::prelude::*;

use dpkps_core::protocol::{FieldError, RunSettings};
use crate::form::{self, SettingsForm};

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
    /// The public class set (`dpkps_core::input::classes`) as typed or ticked: one class name per line.
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
    /// The DP vote over the generated candidates (`form::SettingsForm::vote`).
    pub vote: RwSignal<bool>,
    pub eps_select: RwSignal<String>,
    pub candidates_per_kept: RwSignal<String>,
    pub keep_mode: RwSignal<String>,
    pub sample_rate: RwSignal<String>,
}

impl SettingsFields {
    pub(super) fn new(d: &RunSettings) -> Self {
        let f = SettingsForm::new(d);
        SettingsFields {
            eps_voc: RwSignal::new(f.eps_voc),
            eps_kde: RwSignal::new(f.eps_kde),
            terms_per_doc: RwSignal::new(f.terms_per_doc),
            top_n: RwSignal::new(f.top_n),
            len: RwSignal::new(f.len),
            features: RwSignal::new(f.features),
            per_class: RwSignal::new(f.per_class),
            sampler: RwSignal::new(f.sampler),
            chosen_by_check: RwSignal::new(f.chosen_by_check),
            bandwidth: RwSignal::new(f.bandwidth),
            classes: RwSignal::new(f.classes),
            ticked: RwSignal::new(f.ticked),
            gather_other: RwSignal::new(f.gather_other),
            other_name: RwSignal::new(f.other_name),
            vocab_per_class: RwSignal::new(f.vocab_per_class),
            reuse_vocabulary: RwSignal::new(f.reuse_vocabulary),
            proportional: RwSignal::new(f.proportional),
            labelled: RwSignal::new(f.labelled),
            vote: RwSignal::new(f.vote),
            eps_select: RwSignal::new(f.eps_select),
            candidates_per_kept: RwSignal::new(f.candidates_per_kept),
            keep_mode: RwSignal::new(f.keep_mode),
            sample_rate: RwSignal::new(f.sample_rate),
        }
    }

    /// A preset from the paper: ε_voc and ε_kde.
    pub fn preset(&self, eps_voc: f64, eps_kde: f64) {
        self.eps_voc.set(eps_voc.to_string());
        self.eps_kde.set(eps_kde.to_string());
    }

    /// The declared class names, in order (blank lines and `#` comments skipped).
    pub fn class_names(&self) -> Vec<String> {
        form::class_names(&self.classes.get())
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
        form::sampler(&self.sampler.get()).describe()
    }

    /// The form's values now (read tracked, so a memo or effect follows every field).
    pub fn values(&self) -> SettingsForm {
        SettingsForm {
            eps_voc: self.eps_voc.get(),
            eps_kde: self.eps_kde.get(),
            terms_per_doc: self.terms_per_doc.get(),
            top_n: self.top_n.get(),
            len: self.len.get(),
            features: self.features.get(),
            per_class: self.per_class.get(),
            sampler: self.sampler.get(),
            chosen_by_check: self.chosen_by_check.get(),
            bandwidth: self.bandwidth.get(),
            classes: self.classes.get(),
            ticked: self.ticked.get(),
            gather_other: self.gather_other.get(),
            other_name: self.other_name.get(),
            vocab_per_class: self.vocab_per_class.get(),
            reuse_vocabulary: self.reuse_vocabulary.get(),
            proportional: self.proportional.get(),
            labelled: self.labelled.get(),
            vote: self.vote.get(),
            eps_select: self.eps_select.get(),
            candidates_per_kept: self.candidates_per_kept.get(),
            keep_mode: self.keep_mode.get(),
            sample_rate: self.sample_rate.get(),
        }
    }

    /// The settings, or every field that is wrong with why (`SettingsForm::parse`).
    pub fn parse(&self) -> Result<RunSettings, Vec<FieldError>> {
        self.values().parse()
    }
}
