//! The curator's run settings: every parameter that shapes a release, as the page sends them
//! to the worker and as the CLI's flags fill them in. Checked field by field, in the words the
//! core uses ([`RunSettings::check`]); [`super::RunPlan`] turns them into validated stage
//! parameters. Everything here is public by assumption (the curator's choices, not data).

use serde::{Deserialize, Serialize};

use crate::input::classes::{ClassSet, OtherLabels};
use crate::dp::vocabulary::VocabParams;
use crate::dp::summary::{SummaryParams, KeyphraseSampler};
use crate::dp::vote::VotePlan;
use crate::sample::Sampling;

/// Everything the curator sets before a run. Checked field by field ([`RunSettings::check`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    pub eps_voc: f64,
    pub eps_kde: f64,
    /// S: terms per document counted in the vocabulary histogram (its S most used).
    pub terms_per_doc: usize,
    /// N: size of the private vocabulary.
    pub top_n: usize,
    /// L: keyphrases per sequence.
    pub len: usize,
    /// I: random Fourier features.
    pub features: usize,
    pub per_class: usize,
    pub sampler: KeyphraseSampler,
    /// h: kernel bandwidth of the DP-KDEs.
    pub bandwidth: f64,
    /// The public class set (`crate::input::classes`): the label values the curator declared.
    /// Required when the corpus has a label column; ignored without one.
    #[serde(default)]
    pub classes: Vec<String>,
    /// Documents with other labels: `None` drops them; `Some(name)` gathers them in that class.
    #[serde(default)]
    pub other_class: Option<String>,
    /// Ṽ from per-class noisy histograms (`dp::vocabulary`, "Per class"); off by default. Settings
    /// saved without the field are from before it was off, when per class was the default.
    #[serde(default = "yes")]
    pub vocab_per_class: bool,
    /// Reuse the private vocabulary this page released in an earlier run on the same corpus
    /// with the same vocabulary settings (`reuse::VocabKey`) instead of drawing and paying
    /// for a new one: post-processing of that release, no new ε_voc.
    #[serde(default = "yes")]
    pub reuse_vocabulary: bool,
    /// Smoothing of the histogram samplers (0: off).
    #[serde(default)]
    pub smoothing: f64,
    /// ε of the DP class counts (`dp::counts`): sequences per class in proportion to them;
    /// `None`: `per_class` sequences for every class.
    #[serde(default)]
    pub eps_counts: Option<f64>,
    /// The budget account (the dataset's name) the run is recorded under.
    #[serde(default)]
    pub account: Option<String>,
    /// The budget (of the account, or of the corpus without one): a run that would go over it
    /// is refused. None: the stored one, and a first run needs one (`ledger::budget`).
    #[serde(default)]
    pub budget: Option<f64>,
    /// The declared classes the curator ticked from the corpus's observed labels (the page):
    /// the report says so, since which labels occur is private.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes_ticked: Vec<String>,
    /// The curator confirms that `budget` may raise the stored one (recorded in the ledger).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub raise_budget: bool,
    /// M: keyphrases per document of the independent DP-KDE and Ṽ-keyphrases per document of
    /// the histogram samplers; `None` (the page): L.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kde_terms_per_doc: Option<usize>,
    /// The DP utility check (its ledger run id) that chose `sampler`: the run is refused unless
    /// the check is on record for the corpus and chose it, and the report says so
    /// (`crate::run::check`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen_by_check: Option<String>,
    /// The DP vote over the generated candidates (`super::vote`, `crate::dp::vote`): a run of its
    /// own after generation, planned here: the run then draws c × `per_class` sequences per
    /// class ([`Self::sequences_per_class`]) and the planned ε counts ε_select
    /// ([`Self::epsilon_after_generation`]). `None`: off (every generated document is kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vote: Option<VotePlan>,
    /// The histogram sampler's post-processing choices (`crate::sample::Sampling`): settings
    /// saved without them draw as before issue 39.
    #[serde(default)]
    pub sampling: Sampling,
    /// The size of the public list the corpus is matched against (public), once known: set by
    /// [`super::RunPlan::new`], and by the page from its corpus summary. With N at least it, Ṽ is
    /// the whole list, released by no mechanism, and ε_voc is not spent ([`Self::whole_list`]).
    /// `None`: not known, and ε_voc is counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_terms: Option<usize>,
}

fn yes() -> bool {
    true
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            // ε = 6 split (2, 4): with the histogram sampler the vocabulary is the bottleneck
            // (its noise S/ε_voc is spread over the whole public vocabulary; the histogram's is
            // one document). On MTSamples (two-class, 3 seeds, DP ÷ non-private) (2, 4) kept
            // 1.05 against 0.97 for (1, 5) (README, "evaluate").
            eps_voc: 2.0,
            eps_kde: 4.0,
            // S = 3 (tuned on MTSamples, docs/utility.md). N = 50,000, a shorter list kept
            // whole: the histogram sampler gives a term only noise selected no class mass, so a
            // large Ṽ costs little, while the top N's bar for a real term falls as N grows
            // (docs/utility.md, "Seeds that carry the class at every size" and "N = 50,000").
            terms_per_doc: 3,
            top_n: Self::DEFAULT_TOP_N,
            len: 10,
            features: 2048,
            per_class: 50,
            sampler: SummaryParams::DEFAULT_SAMPLER,
            bandwidth: SummaryParams::DEFAULT_BANDWIDTH,
            classes: Vec::new(),
            other_class: None,
            // One global Ṽ: it kept more than a per-class Ṽ on every task measured, on
            // MTSamples (all 40 classes, the 5 largest balanced, two-class) and on three
            // balanced outside corpora (docs/utility.md, "The vocabulary's scope").
            vocab_per_class: false,
            reuse_vocabulary: true,
            smoothing: 0.0,
            eps_counts: Some(Self::DEFAULT_EPS_COUNTS),
            account: None,
            raise_budget: false,
            classes_ticked: Vec::new(),
            budget: None,
            kde_terms_per_doc: None,
            chosen_by_check: None,
            vote: None,
            sampling: Sampling::DEFAULT,
            public_terms: None,
        }
    }
}

/// A budget account's name as recorded: trimmed; None if blank.
pub fn account_name(name: Option<&str>) -> Option<String> {
    name.map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// A setting the worker would refuse, with why, for the field that holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldError {
    pub field: &'static str,
    pub message: String,
}

impl RunSettings {
    /// The default ε of the DP class counts (noise of scale 10 documents: small next to classes
    /// of a few hundred, cheap next to ε_voc + ε_kde).
    pub const DEFAULT_EPS_COUNTS: f64 = 0.1;

    /// The default N (`top_n`): the page's and the CLI's.
    pub const DEFAULT_TOP_N: usize = 50_000;

    /// Most sequences per class a run may ask for.
    pub const MAX_PER_CLASS: usize = 100_000;

    pub fn vocab_params(&self) -> VocabParams {
        VocabParams { epsilon: self.eps_voc, top_n: self.top_n, terms_per_doc: self.terms_per_doc, per_class: self.vocab_per_class }
    }

    /// Whether Ṽ is the whole public list: N at least the list's size, when that is known
    /// ([`Self::public_terms`]). Then no vocabulary is drawn and ε_voc is not spent
    /// (`crate::dp::vocabulary`, "N at least the list's size").
    pub fn whole_list(&self) -> bool {
        self.public_terms.is_some_and(|v| self.vocab_params().covers(v))
    }

    pub fn summary_params(&self) -> SummaryParams {
        SummaryParams {
            epsilon: self.eps_kde,
            sampler: self.sampler,
            len: self.len,
            features: self.features,
            terms_per_doc: self.kde_terms_per_doc.unwrap_or(self.len),
            bandwidth: self.bandwidth,
            smoothing: self.smoothing,
        }
    }

    /// The run's public class set; `labelled`: whether the corpus was read with a label column.
    pub fn class_set(&self, labelled: bool) -> Result<ClassSet, FieldError> {
        if !labelled {
            return Ok(ClassSet::unlabelled());
        }
        let other = match &self.other_class {
            Some(name) => OtherLabels::Class { name: name.clone() },
            None => OtherLabels::Drop,
        };
        ClassSet::declared(&self.classes, other).map_err(|e| FieldError { field: "classes", message: e.to_string() })
    }

    /// Terms kept per document while matching: enough for S and for what the sampler reads.
    pub fn keep(&self) -> usize {
        self.terms_per_doc.max(self.summary_params().doc_terms_read())
    }

    /// The budget given with these settings, if any, against the rule for every ε
    /// (`dp::check_epsilon`): what [`Self::check`] says of it, and all a vote checks of it
    /// (`RunPlan::for_vote`), since either may store it as the account's budget.
    pub fn budget_error(&self) -> Option<FieldError> {
        let b = self.budget?;
        crate::dp::check_epsilon("the budget", b).err().map(|e| FieldError { field: "budget", message: e.to_string() })
    }

    /// Every problem, one per field, in the words the core uses. (Any N ≥ 1: one above the
    /// public list's size keeps all of it, `VocabParams::kept`.)
    pub fn check(&self) -> Vec<FieldError> {
        let mut out = Vec::new();
        let vp = self.vocab_params();
        if let Err(e) = self.sampling.validate() {
            out.push(FieldError { field: "distinctiveness", message: e.to_string() });
        }
        // Every mechanism's ε, as set (the registry: a new mechanism is checked with no line here).
        for m in super::mechanisms::mechanisms() {
            if let Some(Err(e)) = (m.setting)(self).map(|eps| crate::dp::check_epsilon(m.name, eps)) {
                out.push(FieldError { field: m.field, message: e.to_string() });
            }
        }
        // The vocabulary checks, with a valid ε so that only N and S are judged here.
        let vp_fields = VocabParams { epsilon: 1.0, ..vp };
        if let Err(e) = vp_fields.validate() {
            let field = if e.name.starts_with("N ") { "top_n" } else { "terms_per_doc" };
            out.push(FieldError { field, message: e.to_string() });
        }
        let kp = SummaryParams { epsilon: 1.0, ..self.summary_params() };
        if let Err(e) = kp.validate() {
            let field = if e.name.starts_with("I ") {
                "features"
            } else if e.name.starts_with("h ") {
                "bandwidth"
            } else if e.name.starts_with("the smoothing") {
                "smoothing"
            } else {
                "len"
            };
            out.push(FieldError { field, message: e.to_string() });
        }
        // The noise scale is judged once the rest is valid (the class counts' ε aside: apart).
        if out.iter().all(|e| e.field == "eps_counts") {
            if let Err(e) = self.summary_params().noise_scale() {
                out.push(FieldError { field: "eps_kde", message: format!("ε_kde is too small for these I and L: {e}") });
            }
        }
        out.extend(self.budget_error());
        if let Some(v) = &self.vote {
            out.extend(vote_errors(v, self.per_class));
        }
        if self.per_class == 0 || self.per_class > Self::MAX_PER_CLASS {
            out.push(FieldError {
                field: "per_class",
                message: format!("sequences per class = {}: must be between 1 and {}", self.per_class, Self::MAX_PER_CLASS),
            });
        }
        out
    }

    /// The refusal at the Run button (and in the worker): this run's ε on top of what the
    /// account has spent would exceed its budget.
    pub fn check_budget(&self, spent: f64) -> Result<(), FieldError> {
        self.check_budget_of(spent, self.epsilon())
    }

    /// [`Self::check_budget`] for a run that will spend `planned` (less than [`Self::epsilon`]
    /// when it reuses an earlier run's private vocabulary).
    pub fn check_budget_of(&self, spent: f64, planned: f64) -> Result<(), FieldError> {
        match self.budget {
            Some(b) if spent + planned > b + 1e-12 => Err(FieldError {
                field: "budget",
                message: format!(
                    "this run (ε = {planned}) would bring the account “{}” to ε = {:.4}, above its budget of {b} (already spent: {spent:.4}); lower ε or raise the budget",
                    self.account.as_deref().unwrap_or(""),
                    spent + planned
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Whether a run with these settings would reuse the private vocabulary of an earlier run
    /// with `earlier` (same list and corpus assumed): reuse on, and the same ε_voc, N, S,
    /// per-class choice, classes and account (`reuse::VocabKey`, which the worker checks).
    pub fn reuses_vocabulary_of(&self, earlier: &RunSettings) -> bool {
        self.reuse_vocabulary
            && self.vocab_params() == earlier.vocab_params()
            && self.classes == earlier.classes
            && self.other_class == earlier.other_class
            && self.account_name() == earlier.account_name()
    }

    /// The budget account the run is recorded under: the name trimmed, None if blank.
    pub fn account_name(&self) -> Option<String> {
        account_name(self.account.as_deref())
    }

    /// ε a run with these settings records: [`Self::epsilon`], less ε_voc when it reuses a
    /// private vocabulary an earlier run released and paid for.
    pub fn planned_epsilon(&self, reuses_vocabulary: bool) -> f64 {
        if reuses_vocabulary {
            self.epsilon() - self.reusable_epsilon()
        } else {
            self.epsilon()
        }
    }

    /// ε of the DP class counts as a run spends it: `None` when off, and when the run has a
    /// single class (declared, with the other class, or an unlabelled corpus), where counts
    /// would apportion nothing: a noisy total bought for no use.
    pub fn counts_epsilon(&self) -> Option<f64> {
        let classes = self.classes.len() + usize::from(self.other_class.is_some());
        self.eps_counts.filter(|_| classes > 1)
    }

    /// The sum of the ε these settings give the mechanisms `ms` (those that are on).
    fn epsilon_of(&self, ms: impl Iterator<Item = super::mechanisms::Mechanism>) -> f64 {
        ms.filter_map(|m| (m.epsilon)(self)).fold(0.0, |a, e| a + e)
    }

    /// ε this run will spend: the sum over the registered mechanisms ([`super::mechanisms`]):
    /// ε_voc + ε_kde (+ ε of the class counts) (sequential composition; classes in parallel).
    pub fn epsilon(&self) -> f64 {
        self.epsilon_of(super::mechanisms::mechanisms())
    }

    /// ε the settings plan for runs of their own after generation ([`super::mechanisms::after_generation`]:
    /// the DP vote's charged ε when it is on): not this run's, but the page counts it at the Run
    /// button, since generating the vote's candidates is pointless without room for the vote.
    pub fn epsilon_after_generation(&self) -> f64 {
        self.epsilon_of(super::mechanisms::after_generation())
    }

    /// Sequences drawn per class on average: `per_class`, times the candidates per kept document
    /// when the DP vote is on (each is one prompt; the vote keeps one in c).
    pub fn sequences_per_class(&self) -> usize {
        self.per_class.saturating_mul(self.vote.map_or(1, |v| v.candidates_per_kept.max(1)))
    }

    /// ε of the mechanisms a run may reuse from an earlier run instead of paying again (ε_voc):
    /// what [`Self::planned_epsilon`] leaves out and the report adds back for a reused release.
    pub fn reusable_epsilon(&self) -> f64 {
        self.epsilon_of(super::mechanisms::mechanisms().filter(|m| m.reusable))
    }

    /// ε_voc as a run spends it (the registry's entry): 0 when Ṽ is the whole public list.
    pub fn vocabulary_epsilon(&self) -> f64 {
        self.epsilon_of(super::mechanisms::mechanisms().filter(|m| m.stage == crate::ledger::SpendStage::Vocabulary))
    }
}

/// The vote's settings, each wrong one named by its form field (`eps_select`,
/// `candidates_per_kept`, `sample_rate`).
fn vote_errors(v: &VotePlan, per_class: usize) -> Vec<FieldError> {
    let mut out = Vec::new();
    if let Err(e) = crate::dp::check_epsilon("ε_select", v.eps_select) {
        out.push(FieldError { field: "eps_select", message: e.to_string() });
    }
    let c = v.candidates_per_kept;
    if !(1..=VotePlan::MAX_CANDIDATES_PER_KEPT).contains(&c) {
        out.push(FieldError {
            field: "candidates_per_kept",
            message: format!("candidates per kept document = {c}: must be between 1 and {}", VotePlan::MAX_CANDIDATES_PER_KEPT),
        });
    } else if per_class.saturating_mul(c) > RunSettings::MAX_PER_CLASS {
        out.push(FieldError {
            field: "candidates_per_kept",
            message: format!("{per_class} sequences per class × {c} candidates is above {}", RunSettings::MAX_PER_CLASS),
        });
    }
    if !(v.sample_rate > 0.0 && v.sample_rate <= 1.0) {
        out.push(FieldError { field: "sample_rate", message: format!("the share of units that vote = {}: must be above 0 and at most 1", v.sample_rate) });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_settings_are_valid() {
        assert!(RunSettings::default().check().is_empty());
    }

    #[test]
    fn each_bad_field_is_named() {
        let s = RunSettings {
            eps_voc: 0.0,
            eps_kde: f64::NAN,
            terms_per_doc: 0,
            top_n: 10,
            len: 65,
            features: 0,
            per_class: 0,
            sampler: KeyphraseSampler::Independent,
            bandwidth: 0.1,
            ..RunSettings::default()
        };
        let fields: Vec<&str> = s.check().iter().map(|e| e.field).collect();
        assert_eq!(fields, vec!["eps_voc", "eps_kde", "terms_per_doc", "len", "per_class"]);
        let s = RunSettings { top_n: 0, features: 0, bandwidth: -1.0, ..RunSettings::default() };
        let errs = s.check();
        assert_eq!(errs.iter().map(|e| e.field).collect::<Vec<_>>(), vec!["top_n", "features"]);
        assert!(errs[0].message.contains("at least 1"), "{}", errs[0].message);
        // One error per field and check: the bandwidth is reported once I is fixed.
        let errs = RunSettings { bandwidth: -1.0, ..RunSettings::default() }.check();
        assert_eq!(errs.iter().map(|e| e.field).collect::<Vec<_>>(), vec!["bandwidth"]);
    }


    #[test]
    fn a_run_reuses_the_vocabulary_only_with_the_same_vocabulary_settings() {
        let earlier = RunSettings { classes: vec!["a".into(), "b".into()], account: Some("clinic".into()), ..RunSettings::default() };
        // What does not shape Ṽ may change: ε_kde, the sampler, L, I, the budget, the account's spacing.
        let same = RunSettings { eps_kde: 9.0, sampler: KeyphraseSampler::IterativeLog, len: 5, features: 512, budget: Some(50.0), account: Some(" clinic ".into()), ..earlier.clone() };
        assert!(same.reuses_vocabulary_of(&earlier));
        assert_eq!(same.check_budget_of(40.0, same.epsilon() - same.eps_voc).map_err(|e| e.message), Ok(()));
        assert!(same.check_budget(40.0).is_err(), "the full ε would not fit");
        for other in [
            RunSettings { reuse_vocabulary: false, ..same.clone() },
            RunSettings { eps_voc: 1.0, ..same.clone() },
            RunSettings { top_n: 500, ..same.clone() },
            RunSettings { terms_per_doc: 2, ..same.clone() },
            RunSettings { vocab_per_class: !same.vocab_per_class, ..same.clone() },
            RunSettings { classes: vec!["a".into()], ..same.clone() },
            RunSettings { other_class: Some("other".into()), ..same.clone() },
            RunSettings { account: None, ..same.clone() },
        ] {
            assert!(!other.reuses_vocabulary_of(&earlier), "{other:?}");
        }
    }
}
