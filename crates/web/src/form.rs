//! The settings form's plain part: the text of every field as typed, and its parsing into
//! `RunSettings` with every field's error. No signals: `super::state::settings` holds one signal
//! per field, reads them into a [`SettingsForm`] and calls [`SettingsForm::parse`], so the
//! parsing is tested natively.

use dpkps_core::dp::summary::{KeyphraseSampler, SummaryParams};
use dpkps_core::dp::vote::{KeepMode, VotePlan};
use dpkps_core::input::classes::ClassSet;
use dpkps_core::protocol::{FieldError, RunSettings};

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
    /// The public class set (`dpkps_core::input::classes`) as typed or ticked: one class name per line.
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
    /// The DP vote over the generated candidates (`RunSettings::vote`): on or off, ε_select, c
    /// (candidates per kept document), the keep rule's name ([`KeepMode::name`]) and q.
    pub vote: bool,
    pub eps_select: String,
    pub candidates_per_kept: String,
    pub keep_mode: String,
    pub sample_rate: String,
}

impl SettingsForm {
    /// The form showing `d` (nothing ticked, no label column yet).
    pub fn new(d: &RunSettings) -> Self {
        // The vote's fields show its settings, or the defaults it would start with when off.
        let v = d.vote.unwrap_or_default();
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
            vote: d.vote.is_some(),
            eps_select: v.eps_select.to_string(),
            candidates_per_kept: v.candidates_per_kept.to_string(),
            keep_mode: v.keep_mode.name().to_string(),
            sample_rate: v.sample_rate.to_string(),
        }
    }

    /// The settings, or every field that is wrong with why.
    pub fn parse(&self) -> Result<RunSettings, Vec<FieldError>> {
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
            vote: None,
            ..RunSettings::default()
        };
        // The vote's fields are read (and their errors shown) only when it is on.
        let s = if self.vote {
            let vote = VotePlan {
                eps_select: float("eps_select", &self.eps_select, &mut errs),
                candidates_per_kept: int("candidates_per_kept", &self.candidates_per_kept, &mut errs),
                keep_mode: keep_mode(&self.keep_mode),
                sample_rate: float("sample_rate", &self.sample_rate, &mut errs),
            };
            RunSettings { vote: Some(vote), ..s }
        } else {
            s
        };
        for e in s.check() {
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

/// The keep rule named in the form; the default (the k best) for a name it does not know.
pub fn keep_mode(name: &str) -> KeepMode {
    KeepMode::ALL.into_iter().find(|m| m.name() == name.trim()).unwrap_or_default()
}

/// The sampler menu's entries, in order: every sampler's name.
pub fn sampler_names() -> Vec<&'static str> {
    KeyphraseSampler::ALL.into_iter().map(|s| s.name()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The form as the page first shows it, for an unlabelled corpus.
    fn form() -> SettingsForm {
        SettingsForm::new(&RunSettings::default())
    }

    fn errors(f: &SettingsForm) -> Vec<FieldError> {
        f.parse().expect_err("the form should be refused")
    }

    fn fields(errs: &[FieldError]) -> Vec<&'static str> {
        errs.iter().map(|e| e.field).collect()
    }

    #[test]
    fn the_default_form_parses_to_the_default_settings() {
        assert_eq!(form().parse(), Ok(RunSettings::default()));
    }

    #[test]
    fn a_form_shows_settings_that_parse_back_unchanged() {
        let s = RunSettings {
            eps_voc: 1.5,
            eps_kde: 0.25,
            terms_per_doc: 5,
            top_n: 300,
            len: 7,
            features: 512,
            per_class: 20,
            sampler: *KeyphraseSampler::ALL.iter().find(|&&x| x != SummaryParams::DEFAULT_SAMPLER).unwrap(),
            bandwidth: 0.3,
            classes: vec!["a".into(), "b".into()],
            other_class: Some("rest".into()),
            vocab_per_class: true,
            reuse_vocabulary: false,
            eps_counts: None,
            chosen_by_check: Some("check-1".into()),
            ..RunSettings::default()
        };
        let f = SettingsForm { labelled: true, ..SettingsForm::new(&s) };
        assert_eq!(f.classes, "a\nb");
        assert_eq!(f.parse(), Ok(s));
    }

    #[test]
    fn each_field_that_is_not_a_number_is_named_once() {
        let cases: [(&str, fn(&mut SettingsForm) -> &mut String, &str); 8] = [
            ("eps_voc", |f| &mut f.eps_voc, "is not a number"),
            ("eps_kde", |f| &mut f.eps_kde, "is not a number"),
            ("bandwidth", |f| &mut f.bandwidth, "is not a number"),
            ("terms_per_doc", |f| &mut f.terms_per_doc, "is not a whole number"),
            ("top_n", |f| &mut f.top_n, "is not a whole number"),
            ("len", |f| &mut f.len, "is not a whole number"),
            ("features", |f| &mut f.features, "is not a whole number"),
            ("per_class", |f| &mut f.per_class, "is not a whole number"),
        ];
        for (field, slot, why) in cases {
            let mut f = form();
            *slot(&mut f) = " 2,5 ".into();
            let errs = errors(&f);
            let mine: Vec<&FieldError> = errs.iter().filter(|e| e.field == field).collect();
            assert_eq!(mine.len(), 1, "{field}: {errs:?}");
            // The message quotes the field as typed, spaces and all.
            assert_eq!(mine[0].message, format!("\" 2,5 \" {why}"), "{field}");
        }
    }

    #[test]
    fn whole_numbers_refuse_fractions_and_signs() {
        for typed in ["1.5", "-3", "", "1e3"] {
            let f = SettingsForm { top_n: typed.into(), ..form() };
            assert_eq!(fields(&errors(&f)), ["top_n"], "{typed:?}");
        }
    }

    #[test]
    fn numbers_are_read_without_the_spaces_around_them() {
        let f = SettingsForm { eps_voc: " 3 ".into(), len: "\t12\n".into(), ..form() };
        let s = f.parse().unwrap();
        assert_eq!((s.eps_voc, s.len), (3.0, 12));
    }

    #[test]
    fn each_epsilon_must_be_finite_and_in_range() {
        for typed in ["0", "-1", "inf", "NaN", "0.0001", "1001"] {
            let f = SettingsForm { eps_voc: typed.into(), ..form() };
            assert_eq!(fields(&errors(&f)), ["eps_voc"], "ε_voc = {typed}");
            let f = SettingsForm { eps_kde: typed.into(), ..form() };
            assert_eq!(fields(&errors(&f)), ["eps_kde"], "ε_kde = {typed}");
        }
        let s = SettingsForm { eps_voc: "0.5".into(), eps_kde: "1000".into(), ..form() }.parse().unwrap();
        assert_eq!((s.eps_voc, s.eps_kde), (0.5, 1000.0));
    }

    #[test]
    fn s_is_capped_at_the_apps_limit() {
        let ok = SettingsForm { terms_per_doc: MAX_TERMS.to_string(), ..form() };
        assert_eq!(ok.parse().unwrap().terms_per_doc, MAX_TERMS);
        let over = SettingsForm { terms_per_doc: (MAX_TERMS + 1).to_string(), ..form() };
        let errs = errors(&over);
        assert_eq!(fields(&errs), ["terms_per_doc"]);
        assert_eq!(errs[0].message, "S must be at most 64 in the app");
    }

    #[test]
    fn n_must_be_at_least_one_and_may_exceed_any_list() {
        // Above the list's size, N keeps the whole list (`VocabParams::kept`).
        assert_eq!(SettingsForm { top_n: "1000000".into(), ..form() }.parse().map(|s| s.top_n), Ok(1_000_000));
        assert_eq!(fields(&errors(&SettingsForm { top_n: "0".into(), ..form() })), ["top_n"]);
    }

    #[test]
    fn sequences_per_class_must_be_between_one_and_the_maximum() {
        for typed in ["0".to_string(), (RunSettings::MAX_PER_CLASS + 1).to_string()] {
            let f = SettingsForm { per_class: typed.clone(), ..form() };
            assert_eq!(fields(&errors(&f)), ["per_class"], "{typed}");
        }
        let f = SettingsForm { per_class: RunSettings::MAX_PER_CLASS.to_string(), ..form() };
        assert_eq!(f.parse().unwrap().per_class, RunSettings::MAX_PER_CLASS);
    }

    #[test]
    fn every_wrong_field_is_reported_together() {
        let f = SettingsForm { eps_voc: "x".into(), top_n: "y".into(), per_class: "0".into(), ..form() };
        let mut got = fields(&errors(&f));
        got.sort();
        assert_eq!(got, ["eps_voc", "per_class", "top_n"]);
    }

    #[test]
    fn the_sampler_menu_lists_every_sampler_once_and_each_name_parses_back() {
        let names = sampler_names();
        assert_eq!(names.len(), KeyphraseSampler::ALL.len());
        for (name, s) in names.iter().zip(KeyphraseSampler::ALL) {
            assert_eq!(sampler(name), s, "{name}");
            let f = SettingsForm { sampler: name.to_string(), ..form() };
            assert_eq!(f.parse().map(|r| r.sampler), Ok(s), "{name}");
        }
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        assert!(names.contains(&form().sampler.as_str()), "the default sampler is in the menu");
    }

    #[test]
    fn an_unknown_sampler_name_is_the_default_sampler() {
        assert_eq!(sampler("no such sampler"), SummaryParams::DEFAULT_SAMPLER);
        let f = SettingsForm { sampler: String::new(), ..form() };
        assert_eq!(f.parse().unwrap().sampler, SummaryParams::DEFAULT_SAMPLER);
    }

    #[test]
    fn the_vocabulary_is_global_unless_per_class_is_ticked() {
        assert!(!form().parse().unwrap().vocab_per_class);
        let f = SettingsForm { vocab_per_class: true, ..form() };
        let s = f.parse().unwrap();
        assert!(s.vocab_per_class && s.vocab_params().per_class);
    }

    #[test]
    fn reuse_and_class_proportions_follow_their_boxes() {
        let s = SettingsForm { reuse_vocabulary: false, proportional: false, ..form() }.parse().unwrap();
        assert!(!s.reuse_vocabulary);
        assert_eq!(s.eps_counts, None);
        let s = SettingsForm { proportional: true, ..form() }.parse().unwrap();
        assert_eq!(s.eps_counts, Some(RunSettings::DEFAULT_EPS_COUNTS));
    }

    #[test]
    fn a_labelled_corpus_needs_declared_classes() {
        let none = SettingsForm { labelled: true, ..form() };
        assert_eq!(fields(&errors(&none)), ["classes"]);
        // Blank lines and comments are not classes; names are trimmed.
        let some = SettingsForm { labelled: true, classes: "  a \n\n# a comment\nb\n".into(), ..form() };
        assert_eq!(some.parse().unwrap().classes, ["a", "b"]);
        // Without a label column the classes are not needed.
        assert!(form().parse().is_ok());
    }

    #[test]
    fn duplicate_classes_are_refused_for_a_labelled_corpus() {
        let f = SettingsForm { labelled: true, classes: "a\nb\na".into(), ..form() };
        assert_eq!(fields(&errors(&f)), ["classes"]);
    }

    #[test]
    fn ticked_classes_are_the_declared_ones_in_declared_order() {
        let f = SettingsForm {
            labelled: true,
            classes: "b\na\nc".into(),
            ticked: vec!["c".into(), "gone".into(), "b".into()],
            ..form()
        };
        let s = f.parse().unwrap();
        assert_eq!(s.classes, ["b", "a", "c"]);
        assert_eq!(s.classes_ticked, ["b", "c"]);
    }

    #[test]
    fn other_labels_are_gathered_only_when_asked() {
        let base = SettingsForm { labelled: true, classes: "a\nb".into(), other_name: "rest".into(), ..form() };
        assert_eq!(base.parse().unwrap().other_class, None);
        let gather = SettingsForm { gather_other: true, ..base.clone() };
        assert_eq!(gather.parse().unwrap().other_class.as_deref(), Some("rest"));
        // The "other" class may not also be a declared class.
        let clash = SettingsForm { other_name: "a".into(), ..gather };
        assert_eq!(fields(&errors(&clash)), ["classes"]);
        // The form's default name for it.
        assert_eq!(form().other_name, ClassSet::OTHER);
    }

    #[test]
    fn the_vote_is_off_by_default_and_its_fields_are_read_only_when_on() {
        assert_eq!(form().parse().unwrap().vote, None);
        // Off: whatever its fields hold, nothing of them is read or refused.
        let off = SettingsForm { eps_select: "x".into(), candidates_per_kept: "0".into(), ..form() };
        assert_eq!(off.parse().unwrap().vote, None);
        let on = SettingsForm { vote: true, eps_select: " 0.5 ".into(), candidates_per_kept: "3".into(), keep_mode: "proportional".into(), sample_rate: "0.5".into(), ..form() };
        let s = on.parse().unwrap();
        assert_eq!(s.vote, Some(VotePlan { eps_select: 0.5, candidates_per_kept: 3, keep_mode: KeepMode::Proportional, sample_rate: 0.5 }));
        // The run draws c × the sequences per class; its own ε is unchanged, the vote's is planned apart.
        assert_eq!((s.sequences_per_class(), s.epsilon()), (150, RunSettings::default().epsilon()));
        assert!((s.epsilon_after_generation() - (0.5 * 0.5f64.exp_m1()).ln_1p()).abs() < 1e-9);
        // A form showing settings with a vote parses back to them.
        let back = SettingsForm::new(&s);
        assert!(back.vote);
        assert_eq!(back.parse(), Ok(s));
    }

    #[test]
    fn each_wrong_vote_field_is_named() {
        let on = SettingsForm { vote: true, ..form() };
        assert_eq!(on.parse().unwrap().vote, Some(VotePlan::default()));
        for (field, f) in [
            ("eps_select", SettingsForm { eps_select: "0".into(), ..on.clone() }),
            ("eps_select", SettingsForm { eps_select: "one".into(), ..on.clone() }),
            ("candidates_per_kept", SettingsForm { candidates_per_kept: "0".into(), ..on.clone() }),
            ("candidates_per_kept", SettingsForm { candidates_per_kept: "1.5".into(), ..on.clone() }),
            ("candidates_per_kept", SettingsForm { candidates_per_kept: (VotePlan::MAX_CANDIDATES_PER_KEPT + 1).to_string(), ..on.clone() }),
            ("candidates_per_kept", SettingsForm { per_class: RunSettings::MAX_PER_CLASS.to_string(), ..on.clone() }),
            ("sample_rate", SettingsForm { sample_rate: "0".into(), ..on.clone() }),
            ("sample_rate", SettingsForm { sample_rate: "1.5".into(), ..on.clone() }),
        ] {
            assert_eq!(fields(&errors(&f)), [field], "{f:?}");
        }
        assert_eq!(keep_mode("no such rule"), KeepMode::Top);
    }

    #[test]
    fn the_check_that_chose_the_sampler_is_carried_to_the_run() {
        let f = SettingsForm { chosen_by_check: Some("run-7".into()), ..form() };
        assert_eq!(f.parse().unwrap().chosen_by_check.as_deref(), Some("run-7"));
        assert_eq!(form().parse().unwrap().chosen_by_check, None);
    }
}
