//! The privacy report: what a run released, under which guarantee, with which parameters.
//!
//! It holds parameters, the ε ledger and checksums: nothing computed from the private corpus
//! except DP outputs' sizes that the curator chose (N, sequences per class). Exact document
//! counts are deliberately left out: they are not differentially private. The classes are the
//! curator's declared, public set (`crate::input::classes`), never the labels read from the data.

use serde::{Deserialize, Serialize};

use crate::input::classes::class_name;
use crate::ledger::{BudgetChange, Ledger, Run, Spend, UtilityCheck};
use super::mechanisms::mechanisms;
use super::RunSettings;
use crate::replay::ReplaySummary;
use crate::sample::signal::ClassSignal;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    pub name: String,
    pub sha256: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivacyReport {
    pub format: String,
    pub generated: String,
    /// The run's id in the ledger (random, data-independent): what a later DP vote over the
    /// run's generated documents names, and is checked against (`super::vote`). Empty in
    /// reports written before it was kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub run: String,
    pub method: String,
    pub neighbouring_relation: String,
    /// "document", or "person (column …)" when the corpus had a person column (`crate::input::units`).
    #[serde(default)]
    pub privacy_unit: String,
    pub guarantee: String,
    pub epsilon_vocabulary: f64,
    pub epsilon_kde: f64,
    /// ε of this run (sequential composition of its stages; classes in parallel).
    pub epsilon_run: f64,
    /// The ε of this run's outputs: `epsilon_run`, plus the ε_voc of a reused private
    /// vocabulary (spent by the run `vocabulary_from`).
    #[serde(default)]
    pub epsilon_outputs: f64,
    /// The earlier run whose private vocabulary this run reused (and which paid its ε_voc).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocabulary_from: Option<String>,
    /// ε spent on this corpus in this browser, this run included.
    pub epsilon_corpus_total: f64,
    /// What that total means when runs of both privacy units are on record (empty otherwise).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub corpus_total_units: String,
    pub runs_on_corpus: usize,
    pub settings: RunSettings,
    pub vocabulary: Checked,
    pub model: Checked,
    pub classes: Vec<String>,
    /// How the class set was made and what happened to documents of other labels.
    #[serde(default)]
    pub class_rule: String,
    /// The declared classes the curator ticked from the labels observed in the corpus (the
    /// page), rather than typing them from a public list: which labels occur is private, so the
    /// class set is then public only by the curator's word.
    #[serde(default)]
    pub classes_ticked_from_observed: Vec<String>,
    pub sequences: usize,
    pub spends: Vec<Spend>,
    pub not_included: String,
    /// Non-DP utility checks run on this corpus (same key) in this browser before the report:
    /// tuning on private data, outside the ε above.
    #[serde(default)]
    pub non_dp_checks_on_this_corpus: usize,
    /// Settings (samplers and baselines) those checks compared.
    #[serde(default)]
    pub non_dp_settings_compared: usize,
    #[serde(default)]
    pub non_dp_checks: String,
    /// The budget account the run was recorded under.
    #[serde(default)]
    pub account: Option<String>,
    /// The budget the run was held to (the account's, or the corpus's), and every recorded
    /// change of it: a raise is there with its time (`crate::ledger` budget rules).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub budget_changes: Vec<BudgetChange>,
    /// ε that counts against that budget, this run included: every run under the account, on
    /// this corpus and on any corpus that overlaps it (`LedgerBook::spent_for`), which
    /// `epsilon_corpus_total` (this corpus key only) leaves out. None in older reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epsilon_budget_total: Option<f64>,
    /// The DP utility check that chose the run's sampler (`crate::run::check`): its ε is
    /// recorded with it; the outputs together with that choice are covered by the sum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings_chosen_by: Option<super::chosen::ChosenBy>,
    /// The DP utility checks on record for this corpus when the run began (each paid for in the
    /// ledger): a run may use what one found without naming it, and the reader should know one
    /// was run.
    #[serde(default)]
    pub dp_checks_on_this_corpus: usize,
    /// Per class, how far its release stands above the DP noise alone (post-processing of the
    /// release, `crate::sample::signal`), its sequences and those shorter than L.
    #[serde(default)]
    pub class_signals: Vec<ClassSignal>,
    /// The classes whose release is noise-dominated: their sequences are marked, and not
    /// generated unless the curator includes them.
    #[serde(default)]
    pub noise_dominated: Vec<String>,
    /// The replay check of the generated documents this report goes with (`crate::replay`):
    /// counts and thresholds, NOT differentially private. Absent when none was run (and in
    /// the run's own report, written before anything was generated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_check: Option<ReplaySummary>,
    /// The DP vote that chose which generated documents were kept (`crate::run::vote`), as `dpkps
    /// select` writes it in vote-report.json: a run of its own, with its ε. Absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vote: Option<vote::VoteRecord>,
}

impl PrivacyReport {
    pub const FORMAT: &'static str = "dpkps-privacy-report-v1";

    #[allow(clippy::too_many_arguments)]
    pub fn new(
        generated: String,
        settings: &RunSettings,
        run: &Run,
        ledger: &Ledger,
        vocabulary: Checked,
        model: Checked,
        classes: &crate::input::classes::ClassSet,
        sequences: usize,
        signals: &[ClassSignal],
    ) -> PrivacyReport {
        // A reused private vocabulary: released (and counted in the ledger) by an earlier run;
        // this run's outputs depend on it, so the guarantee includes its ε_voc, spent once.
        let reused_epsilon = if run.vocabulary_from.is_some() { settings.reusable_epsilon() } else { 0.0 };
        // Each mechanism's clause, in the registry's order (`super::mechanisms`).
        let clauses: Vec<String> = mechanisms().filter_map(|m| (m.epsilon)(settings).map(|e| (m.words)(settings, run, e))).collect();
        // N at least the public list's size: Ṽ is that list, read from no document (`dp::vocabulary`).
        let whole_list = if settings.whole_list() {
            format!(
                " The private vocabulary is the whole public list ({} terms, N = {}): it was read from no document, so nothing \
                 was released or spent for it (ε_voc is not used).",
                settings.public_terms.unwrap_or_default(),
                settings.top_n
            )
        } else {
            String::new()
        };
        let mut report = PrivacyReport {
            format: Self::FORMAT.into(),
            generated,
            run: run.id.clone(),
            method: "DP-KPS: differentially private keyphrase prompt seeding (Nagesh, Chen, Mishra & Wagner, 2024)".into(),
            neighbouring_relation: relation(run.person_column.as_deref()),
            privacy_unit: unit_words(run.person_column.as_deref()),
            guarantee: format!(
                "The keyphrase sequences, the private vocabulary and everything generated from them (prompts, LLM \
                 output) are ({:.4})-differentially private: {}. Later steps are post-processing.{whole_list}",
                run.epsilon() + reused_epsilon,
                clauses.join(" plus "),
            ),
            // What the run's outputs owe ε_voc: none when Ṽ is the whole list.
            epsilon_vocabulary: settings.vocabulary_epsilon(),
            epsilon_kde: settings.eps_kde,
            epsilon_run: run.epsilon(),
            epsilon_outputs: run.epsilon() + reused_epsilon,
            vocabulary_from: run.vocabulary_from.clone(),
            epsilon_corpus_total: ledger.total_epsilon(),
            corpus_total_units: units_note(ledger),
            runs_on_corpus: ledger.runs.len(),
            settings: settings.clone(),
            vocabulary,
            model,
            classes: classes.names().into_iter().map(str::to_string).collect(),
            class_rule: classes.describe(),
            classes_ticked_from_observed: settings.classes_ticked.clone(),
            sequences,
            spends: run.spends.clone(),
            not_included: "Exact counts of documents, classes or matched terms are not in this report: they are not \
                differentially private. Class names are the curator's declared, public set."
                .into(),
            non_dp_checks_on_this_corpus: 0,
            non_dp_settings_compared: 0,
            non_dp_checks: String::new(),
            account: run.account.clone(),
            budget: None,
            budget_changes: Vec::new(),
            epsilon_budget_total: None,
            settings_chosen_by: None,
            dp_checks_on_this_corpus: ledger
                .runs
                .iter()
                .filter(|r| r.id != run.id && r.spends.iter().any(|s| s.stage == crate::ledger::SpendStage::UtilityCheck.name()))
                .count(),
            class_signals: signals.to_vec(),
            noise_dominated: signals.iter().filter(|s| s.noise_dominated).map(|s| class_name(&s.label)).collect(),
            replay_check: None,
            vote: None,
        };
        report.count_checks(&ledger.utility_checks, 0);
        report
    }

    /// States the non-DP utility checks that touched this corpus: `checks`, of which the last
    /// `from_overlapping` were recorded on corpora that overlap it (a tuning file sharing its
    /// documents or persons, `crate::ledger::LedgerBook::checks_touching`).
    pub fn count_checks(&mut self, checks: &[UtilityCheck], from_overlapping: usize) {
        let compared: usize = checks.iter().map(|c| c.settings_compared).sum();
        self.non_dp_checks_on_this_corpus = checks.len();
        self.non_dp_settings_compared = compared;
        let overlapping = match from_overlapping {
            0 => String::new(),
            k => format!(" ({k} of them on a file that shares documents or persons with it)"),
        };
        self.non_dp_checks = match checks.len() {
            0 => "No non-DP utility check was run on this corpus in this browser.".into(),
            n => format!(
                "A non-DP utility check was run on this corpus {n} time(s){overlapping}, comparing {compared} setting(s) on \
                 the private documents. Settings chosen from those figures depend on the data outside the ε above: the \
                 guarantee holds for each run, but the choice of settings is not covered by it."
            ),
        };
    }

    /// The report `json` (a run's, as written) with the replay check of the generated
    /// documents it goes with.
    pub fn with_replay(json: &str, replay: ReplaySummary) -> Result<PrivacyReport, serde_json::Error> {
        let mut r: PrivacyReport = serde_json::from_str(json)?;
        r.replay_check = Some(replay);
        Ok(r)
    }

    /// The report `json` (a run's, as written) with the DP vote that chose its kept documents.
    pub fn with_vote(json: &str, vote: vote::VoteRecord) -> Result<PrivacyReport, serde_json::Error> {
        let mut r: PrivacyReport = serde_json::from_str(json)?;
        r.vote = Some(vote);
        Ok(r)
    }
}

/// The privacy unit as a report names it: "document", or "person (column …)" with the person
/// column `person_column` (the run's report and the vote's, `super::vote`).
pub fn unit_words(person_column: Option<&str>) -> String {
    person_column.map_or_else(|| "document".into(), |c| format!("person (column “{c}”)"))
}

/// What the corpus total means when runs of both units are on record (`Ledger::epsilon_by_unit`).
fn units_note(ledger: &Ledger) -> String {
    let ((d, dn), (p, pn)) = ledger.epsilon_by_unit();
    if dn == 0 || pn == 0 {
        return String::new();
    }
    format!(
        "Runs of both privacy units are on record: {dn} per document (ε = {d:.4}) and {pn} per person (ε = {p:.4}). They do \
         not add up into one guarantee: a run per person is 2ε-DP per document (removing one note changes its person's \
         unit), and a run per document is k·ε-DP for a patient with k documents."
    )
}

/// The neighbouring relation of a run whose person column was `person_column` (`None`: the
/// document is the unit).
fn relation(person_column: Option<&str>) -> String {
    let classes = "labels come from a fixed public set of classes declared before the run, and every declared class is \
        released whether or not documents fall into it.";
    match person_column {
        Some(c) => format!(
            "Two corpora are neighbours when one is the other with one person's documents (all of them, the person named \
             by the column “{c}”) added or removed; {classes} The privacy unit is the person: each person's documents \
             are read as one unit, in the declared class holding most of them (their documents of other classes are not \
             read), so a patient is protected at the ε above however many notes they have."
        ),
        None => format!(
            "Two corpora are neighbours when one is the other with one document (and its label) added or removed; \
             {classes} The privacy unit is the document: a patient with k documents in the corpus is protected at k·ε \
             (group privacy). A person column protects each patient at ε."
        ),
    }
}

mod html;
pub mod vote;

#[cfg(test)]
mod tests;
