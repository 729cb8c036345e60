//! The settings form's plain part: the text of every field as typed, and its parsing into
//! `RunSettings` with every field's error. No signals: `super::state::settings` holds one signal
//! per field, reads them into a [`SettingsForm`] and calls [`SettingsForm::parse`], so the
//! parsing is tested natively.

use crate::dp::summary::{KeyphraseSampler, SummaryParams};
use crate::input::classes::ClassSet;
use crate::protocol::{FieldError, RunSettings};

/// Largest S and L accepted by the app (the worker keeps this many terms per document).
pub const MAX_TERMS: usize = 64;

/// The settings form's values: the numbers as typed, the choices as set.
#[derive(Clone, Debug, PartialEq)]
pub struct SettingsForm {
    pub eps_voc: String,
    pub eps_kde: String,
    pub terms_per_doc: String,
    pub top_n: String,
    pub len: String,
    pub features: String,
    pub per_class: String,
    /// The sampler's name ([`KeyphraseSampler::name`]).
    pub sampler: String,
    /// The DP utility check the sampler was taken from (`RunSettings::chosen_by_check`).
    pub chosen_by_check: Option<String>,
    pub bandwidth: String,
    /// The public class set (`crate::input::classes`) as typed or ticked: one class name per line.
    pub classes: String,
    /// The labels the curator ticked from the corpus's observed labels.
    pub ticked: Vec<String>,
    /// Documents with an undeclared label: gathered into `other_name` (true) or left out.
    pub gather_other: bool,
    pub other_name: String,
    pub vocab_per_class: bool,
    pub reuse_vocabulary: bool,
    /// Sequences per class in proportion to DP class counts (ε = `DEFAULT_EPS_COUNTS`).
    pub proportional: bool,
    /// Whether the corpus was read with a label column: then the classes must be declared.
    pub labelled: bool,
}

impl SettingsForm {
    /// The form showing `d` (nothing ticked, no label column yet).
    pub fn new(d: &RunSettings) -> Self {
        SettingsForm {
            eps_voc: d.eps_voc.to_string(),
            eps_kde: d.eps_kde.to_string(),
            terms_per_doc: d.terms_per_doc.to_string(),
            top_n: d.top_n.to_string(),
            len: d.len.to_string(),
            features: d.features.to_string(),
            per_class: d.per_class.to_string(),
            sampler: d.sampler.name().to_string(),
            chosen_by_check: d.chosen_by_check.clone(),
            bandwidth: d.bandwidth.to_string(),
            classes: d.classes.join("\n"),
            ticked: Vec::new(),
            gather_other: d.other_class.is_some(),
            other_name: d.other_class.clone().unwrap_or_else(|| ClassSet::OTHER.to_string()),
            vocab_per_class: d.vocab_per_class,
            reuse_vocabulary: d.reuse_vocabulary,
            proportional: d.eps_counts.is_some(),
            labelled: false,
        }
    }

    /// The settings, or every field that is wrong with why. `vocab_len`: the public
    /// vocabulary's size, if known (N cannot exceed it).
    pub fn parse(&self, vocab_len: Option<usize>) -> Result<RunSettings, Vec<FieldError>> {
        let mut errs = Vec::new();
        let float = |field: &'static str, s: &str, errs: &mut Vec<FieldError>| -> f64 {
            s.trim().parse::<f64>().unwrap_or_else(|_| {
                errs.push(FieldError { field, message: format!("{s:?} is not a number") });
                1.0
            })
        };
        let int = |field: &'static str, s: &str, errs: &mut Vec<FieldError>| -> usize {
            s.trim().parse::<usize>().unwrap_or_else(|_| {
                errs.push(FieldError { field, message: format!("{s:?} is not a whole number") });
                1
            })
        };
        let classes = class_names(&self.classes);
        let s = RunSettings {
            eps_voc: float("eps_voc", &self.eps_voc, &mut errs),
            eps_kde: float("eps_kde", &self.eps_kde, &mut errs),
            terms_per_doc: int("terms_per_doc", &self.terms_per_doc, &mut errs),
            top_n: int("top_n", &self.top_n, &mut errs),
            len: int("len", &self.len, &mut errs),
            features: int("features", &self.features, &mut errs),
            per_class: int("per_class", &self.per_class, &mut errs),
            sampler: sampler(&self.sampler),
            bandwidth: float("bandwidth", &self.bandwidth, &mut errs),
            classes_ticked: classes.iter().filter(|n| self.ticked.contains(n)).cloned().collect(),
            classes,
            other_class: self.gather_other.then(|| self.other_name.clone()),
            vocab_per_class: self.vocab_per_class,
            reuse_vocabulary: self.reuse_vocabulary,
            eps_counts: self.proportional.then_some(RunSettings::DEFAULT_EPS_COUNTS),
            chosen_by_check: self.chosen_by_check.clone(),
            ..RunSettings::default()
        };
        for e in s.check(vocab_len) {
            if !errs.iter().any(|x| x.field == e.field) {
                errs.push(e);
            }
        }
        // The worker refuses a labelled run without a valid declared class set: say so here.
        if let Err(e) = s.class_set(self.labelled) {
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

/// The declared class names in the classes field's `text`, in order (blank lines and `#`
/// comments skipped).
pub fn class_names(text: &str) -> Vec<String> {
    ClassSet::parse_names(text, false)
}

/// The sampler named in the form; the default one for a name it does not know.
pub fn sampler(name: &str) -> KeyphraseSampler {
    KeyphraseSampler::parse(name).unwrap_or(SummaryParams::DEFAULT_SAMPLER)
}

/// The sampler menu's entries, in order: every sampler's name.
pub fn sampler_names() -> Vec<&'static str> {
    KeyphraseSampler::ALL.into_iter().map(|s| s.name()).collect()
}
