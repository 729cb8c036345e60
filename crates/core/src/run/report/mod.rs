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
    /// The DP vote that chose which generated documents were kept (`super::vote`), as `dpkps
    /// select` writes it in vote-report.json: a run of its own, with its ε. Absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vote: Option<super::vote::VoteRecord>,
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
        let mut report = PrivacyReport {
            format: Self::FORMAT.into(),
            generated,
            method: "DP-KPS: differentially private keyphrase prompt seeding (Nagesh, Chen, Mishra & Wagner, 2024)".into(),
            neighbouring_relation: relation(run.person_column.as_deref()),
            privacy_unit: match &run.person_column {
                Some(c) => format!("person (column “{c}”)"),
                None => "document".into(),
            },
            guarantee: format!(
                "The keyphrase sequences, the private vocabulary and everything generated from them (prompts, LLM \
                 output) are ({:.4})-differentially private: {}. Later steps are post-processing.",
                run.epsilon() + reused_epsilon,
                clauses.join(" plus "),
            ),
            epsilon_vocabulary: settings.eps_voc,
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
    pub fn with_vote(json: &str, vote: super::vote::VoteRecord) -> Result<PrivacyReport, serde_json::Error> {
        let mut r: PrivacyReport = serde_json::from_str(json)?;
        r.vote = Some(vote);
        Ok(r)
    }
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

impl PrivacyReport {
    /// "per document" or "per person", for the headline (a report without the field: document).
    fn unit_level(&self) -> &'static str {
        if self.privacy_unit.starts_with("person") {
            "per person"
        } else {
            "per document"
        }
    }
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

impl PrivacyReport {
    /// Which declared classes were ticked from the corpus's observed labels, in words.
    pub fn ticked_text(&self) -> String {
        match self.classes_ticked_from_observed.len() {
            0 => "none: every declared class was typed (or read from a file) by the curator".into(),
            n => format!(
                "{n} of {}: {}. They were picked from the labels found in the private corpus (shown without counts): the \
                 guarantee assumes the curator would have declared them from public knowledge anyway",
                self.classes.len(),
                self.classes_ticked_from_observed.join(", ")
            ),
        }
    }

    /// The budget the run was held to, whose, and its history, in words.
    /// Whether a DP utility check chose the settings, and what the outputs cost with it.
    pub fn chosen_text(&self) -> String {
        match &self.settings_chosen_by {
            Some(c) => format!(
                "The keyphrase sampler ({}) was chosen by the DP utility check {} on this corpus, which spent ε = {:.4} \
                 (recorded in the ledger and counted in the corpus total). These outputs together with that choice: \
                 ε = {:.4}.",
                c.sampler,
                c.check,
                c.epsilon,
                self.epsilon_outputs + c.epsilon
            ),
            None => match self.dp_checks_on_this_corpus {
                0 => "Not chosen by a DP utility check (see the non-DP checks below for any other tuning on this corpus).".into(),
                n => format!(
                    "The run names no DP utility check, but {n} DP utility check(s) are on record for this corpus (each paid \
                     for and counted in the corpus total): settings taken from one without naming it are covered by the \
                     corpus total, not by this run's ε alone (see the non-DP checks below for any other tuning)."
                ),
            },
        }
    }

    pub fn budget_text(&self) -> String {
        let whose = match &self.account {
            Some(a) => format!("the budget account “{a}”"),
            None => "this corpus".into(),
        };
        let Some(b) = self.budget else { return format!("No budget was on record for {whose}.") };
        let spent = match self.epsilon_budget_total {
            Some(e) => format!(" Spent against it, this run included: ε = {e:.4}."),
            None => String::new(),
        };
        let history = match self.budget_changes.len() {
            0 => " It was set before its changes were recorded.".to_string(),
            _ => format!(" Its history: {}.", self.budget_changes.iter().map(BudgetChange::describe).collect::<Vec<_>>().join("; ")),
        };
        format!(
            "This run was held to the budget of {whose}: ε = {b}, which counts every run under it and on any corpus that \
             overlaps this one, and to every other budget set on these documents.{spent}{history}"
        )
    }

    /// A self-contained, printable HTML page (no script, no external resource).
    pub fn to_html(&self) -> String {
        let s = &self.settings;
        let row = |k: &str, v: String| format!("<tr><th scope=\"row\">{}</th><td>{}</td></tr>", esc(k), esc(&v));
        let params = [
            row("ε_voc", s.eps_voc.to_string()),
            row("ε_kde", s.eps_kde.to_string()),
            row("S (terms per document counted)", s.terms_per_doc.to_string()),
            row("N (private vocabulary size)", s.top_n.to_string()),
            row("L (keyphrases per sequence)", s.len.to_string()),
            row("I (random features)", s.features.to_string()),
            row("Sequences per class", match s.counts_epsilon() {
                Some(e) => format!("{} on average, in proportion to DP class counts (ε = {e})", s.per_class),
                None => s.per_class.to_string(),
            } + &s.vote.map_or(String::new(), |v| format!(", × {} candidates per kept document for the DP vote (ε_select = {})", v.candidates_per_kept, v.eps_select))),
            row("Sampler", s.sampler.name().to_string()),
            row("Vocabulary", if s.vocab_per_class { "per class (round robin)" } else { "global" }.to_string()),
            row("Classes", self.class_rule.clone()),
            row("Classes ticked from the corpus's labels", self.ticked_text()),
        ]
        .concat();
        let spends: String = self
            .spends
            .iter()
            .map(|sp| {
                let scope = match &sp.scope {
                    crate::ledger::Scope::AllDocuments => "all documents".to_string(),
                    crate::ledger::Scope::Partition { label } => format!("class {label}"),
                };
                format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.4}</td></tr>",
                    esc(&sp.stage),
                    esc(&sp.mechanism),
                    esc(&scope),
                    sp.epsilon
                )
            })
            .collect();
        format!(
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>dpkps privacy report</title>\
<style>body{{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;color:#17202a}}\
table{{border-collapse:collapse;width:100%;margin:.5rem 0 1.2rem}}th,td{{text-align:left;border-bottom:1px solid #ccd;padding:.3rem .5rem}}\
.big{{font-size:1.3rem;font-weight:600}}</style></head><body>\
<h1>Privacy report</h1><p>{generated} · {format}</p>\
<p class=\"big\">{headline} All runs on this corpus in this browser: ε = {eps_total:.4} over {runs} run(s).{units}</p>\
<h2>Guarantee</h2><p>{guarantee}</p><h2>Neighbouring relation</h2><p>{relation}</p>\
<h2>Budget</h2><p>{budget}</p><h2>How the settings were chosen</h2><p>{chosen}</p>\
<h2>Non-DP checks on this corpus</h2><p>non_dp_checks_on_this_corpus: {checks}. {checks_note}</p>\
<h2>Parameters</h2><table>{params}</table>\
<h2>Privacy ledger of this run</h2><table><tr><th>stage</th><th>mechanism</th><th>data</th><th>ε</th></tr>{spends}</table>\
<h2>Inputs</h2><table>{vocab}{model}{classes}{seqs}</table>\
{signals}{replay}{vote}<h2>Not in this report</h2><p>{not_included}</p><p>Method: {method}</p></body></html>",
            generated = esc(&self.generated),
            format = esc(&self.format),
            headline = esc(&match &self.vocabulary_from {
                Some(from) => format!(
                    "These outputs: ε = {:.4} ({}), of which this run spent ε = {:.4} and run {from} the reused private vocabulary's ε_voc.",
                    self.epsilon_outputs,
                    self.unit_level(),
                    self.epsilon_run
                ),
                None if self.unit_level() == "per document" => format!(
                    "This run: ε = {:.4} (per document: a patient with k documents is protected at k·ε).",
                    self.epsilon_run
                ),
                None => format!("This run: ε = {:.4} ({}).", self.epsilon_run, self.unit_level()),
            }),
            eps_total = self.epsilon_corpus_total,
            units = esc(&if self.corpus_total_units.is_empty() { String::new() } else { format!(" {}", self.corpus_total_units) }),
            runs = self.runs_on_corpus,
            guarantee = esc(&self.guarantee),
            relation = esc(&self.neighbouring_relation),
            budget = esc(&self.budget_text()),
            chosen = esc(&self.chosen_text()),
            checks = self.non_dp_checks_on_this_corpus,
            checks_note = esc(&self.non_dp_checks),
            vocab = row("Public vocabulary", format!("{} (SHA-256 {})", self.vocabulary.name, self.vocabulary.sha256)),
            model = row("Embedding model", format!("{} (SHA-256 {})", self.model.name, self.model.sha256)),
            classes = row("Classes (public)", self.classes.join(", ")),
            seqs = row("Keyphrase sequences", self.sequences.to_string()),
            not_included = esc(&self.not_included),
            method = esc(&self.method),
            signals = self.signals_html(),
            replay = self.replay_html(),
            vote = self.vote_html(),
        )
    }
}

impl PrivacyReport {
    /// The replay check, when one was run: its statement (not DP) and figures.
    fn replay_html(&self) -> String {
        let Some(r) = &self.replay_check else { return String::new() };
        format!(
            "<h2>Replay check (not differentially private)</h2><p>{}</p><table>\
             <tr><th scope=\"row\">Generated documents checked</th><td>{}</td></tr>\
             <tr><th scope=\"row\">Flagged</th><td>{}</td></tr>\
             <tr><th scope=\"row\">Left out of the synthetic corpus</th><td>{}</td></tr>\
             <tr><th scope=\"row\">Thresholds</th><td>n-gram length {}; rare: in at most {} private document(s); shared run of {} words outside the keyphrases</td></tr></table>",
            esc(&r.statement),
            r.checked,
            r.flagged,
            r.dropped,
            r.params.ngram,
            r.params.rare_docs,
            r.params.flag_run
        )
    }

    /// The DP vote, when the kept documents went through one: its guarantee, its ε and what
    /// its release said per class (DP outputs).
    fn vote_html(&self) -> String {
        let Some(v) = &self.vote else { return String::new() };
        let r = &v.vote;
        let rows: String = r
            .classes
            .iter()
            .map(|c| {
                let share = c.share_captured.map_or("no vote above 0".to_string(), |s| format!("{:.0}%", 100.0 * s));
                format!("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", esc(&c.label), c.candidates, c.kept.len(), share, c.drew_none.len())
            })
            .collect();
        format!(
            "<h2>DP vote over the generated documents</h2><p>Run {} (privacy unit: {}): ε_select = {} (the ledger charged ε = {:.4}). {}.</p>\
             <p class=\"big\">The kept documents: ε = {:.4} (this run's outputs plus the vote's).</p>\
             <table><tr><th>class</th><th>candidates</th><th>kept</th><th>share of the noisy votes kept</th><th>drew none</th></tr>{rows}</table>",
            esc(&r.run),
            esc(&r.privacy_unit),
            r.epsilon,
            r.epsilon_charged,
            esc(&r.mechanism),
            self.epsilon_outputs.max(self.epsilon_run) + r.epsilon_charged,
        )
    }

    /// The per-class signal table (empty for reports written before it existed).
    fn signals_html(&self) -> String {
        if self.class_signals.is_empty() {
            return String::new();
        }
        let len = self.settings.len;
        let rows: String = self
            .class_signals
            .iter()
            .map(|c| {
                format!(
                    "<tr><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&class_name(&c.label)),
                    c.signal,
                    c.supported_terms,
                    c.sequences,
                    c.shorter_than_l,
                    if c.noise_dominated { "noise-dominated: not generated unless included" } else { "signal" }
                )
            })
            .collect();
        format!(
            "<h2>Signal per class</h2><p>How far each class's released summary stands above what the DP noise alone \
             gives at this ε (1 = what pure noise reaches in one class of 1,000; computed from the release only, no \
             privacy cost). A sequence holds up to L = {len} distinct keyphrases, fewer where the release supports fewer.</p>\
             <table><tr><th>class</th><th>signal</th><th>terms above the noise</th><th>sequences</th>\
             <th>shorter than L</th><th></th></tr>{rows}</table>"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{Ledger, Run, Scope, Spend};

    #[test]
    fn html_report_escapes_and_states_the_guarantee() {
        let mut run = Run::new("r".into(), "t".into());
        run.spends.push(Spend { stage: "vocabulary".into(), mechanism: "m".into(), epsilon: 1.0, params: serde_json::Value::Null, scope: Scope::AllDocuments });
        run.spends.push(Spend { stage: "kde".into(), mechanism: "m".into(), epsilon: 5.0, params: serde_json::Value::Null, scope: Scope::Partition { label: "<b>".into() } });
        let mut ledger = Ledger::new("fp".into());
        ledger.runs.push(run.clone());
        let report = |ledger: &Ledger, classes: &crate::input::classes::ClassSet| {
            let (v, m) = (Checked { name: "medical".into(), sha256: "a".repeat(64) }, Checked { name: "model".into(), sha256: "b".repeat(64) });
            PrivacyReport::new("now".into(), &RunSettings::default(), &run, ledger, v, m, classes, 100, &[])
        };
        let r = report(&ledger, &crate::input::classes::ClassSet::declared(&["<b>"], crate::input::classes::OtherLabels::Drop).unwrap());
        assert_eq!(r.epsilon_run, 6.0);
        let html = r.to_html();
        assert!(html.contains("ε = 6.0000") && html.contains("one document"), "{html}");
        assert!(!html.contains("<b>") && html.contains("&lt;b&gt;"));
        assert!(!html.contains("<script") && !html.contains("http"));
        assert!(html.contains("non_dp_checks_on_this_corpus: 0"), "{html}");
        // Utility checks on the corpus are stated, with how many settings they compared.
        ledger.utility_checks.push(crate::ledger::UtilityCheck { id: "u".into(), when: "t".into(), settings_compared: 7 });
        let r = report(&ledger, &crate::input::classes::ClassSet::unlabelled());
        assert_eq!((r.non_dp_checks_on_this_corpus, r.non_dp_settings_compared), (1, 7));
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"non_dp_checks_on_this_corpus\":1") && r.non_dp_checks.contains("comparing 7"), "{json}");
    }

    #[test]
    fn the_report_says_which_classes_were_ticked_from_the_corpus() {
        let run = Run::new("r".into(), "t".into());
        let (v, m) = (Checked { name: "medical".into(), sha256: "a".repeat(64) }, Checked { name: "model".into(), sha256: "b".repeat(64) });
        let classes = crate::input::classes::ClassSet::declared(&["cardio", "pulmo"], crate::input::classes::OtherLabels::Drop).unwrap();
        let typed = PrivacyReport::new("now".into(), &RunSettings::default(), &run, &Ledger::new("fp".into()), v.clone(), m.clone(), &classes, 10, &[]);
        assert!(typed.classes_ticked_from_observed.is_empty() && typed.to_html().contains("none: every declared class was typed"));
        let settings = RunSettings { classes: vec!["cardio".into(), "pulmo".into()], classes_ticked: vec!["pulmo".into()], ..RunSettings::default() };
        let ticked = PrivacyReport::new("now".into(), &settings, &run, &Ledger::new("fp".into()), v, m, &classes, 10, &[]);
        assert_eq!(ticked.classes_ticked_from_observed, ["pulmo"]);
        assert!(ticked.to_html().contains("1 of 2: pulmo. They were picked from the labels found in the private corpus"), "{}", ticked.to_html());
    }

    #[test]
    fn a_reused_vocabulary_is_in_the_guarantee_but_not_in_the_runs_spend() {
        let settings = RunSettings { eps_voc: 2.0, eps_kde: 4.0, eps_counts: Some(0.1), ..RunSettings::default() };
        let mut run = Run::new("r2".into(), "t".into());
        run.vocabulary_from = Some("r1".into());
        run.spends.push(Spend { stage: "kde".into(), mechanism: "m".into(), epsilon: 4.0, params: serde_json::Value::Null, scope: Scope::AllDocuments });
        run.spends.push(Spend { stage: "class counts".into(), mechanism: "m".into(), epsilon: 0.1, params: serde_json::Value::Null, scope: Scope::AllDocuments });
        let (v, m) = (Checked { name: "medical".into(), sha256: "a".repeat(64) }, Checked { name: "model".into(), sha256: "b".repeat(64) });
        let r = PrivacyReport::new("now".into(), &settings, &run, &Ledger::new("fp".into()), v, m, &crate::input::classes::ClassSet::unlabelled(), 10, &[]);
        assert!((r.epsilon_run - 4.1).abs() < 1e-12, "this run spent ε_kde + ε_counts: {}", r.epsilon_run);
        assert!(r.guarantee.contains("(6.1000)-differentially private"), "{}", r.guarantee);
        assert!(r.guarantee.contains("released by the earlier run r1") && r.guarantee.contains("this run itself spent ε = 4.1000"), "{}", r.guarantee);
        assert!((r.epsilon_outputs - 6.1).abs() < 1e-12 && r.vocabulary_from.as_deref() == Some("r1"));
        assert!(r.to_html().contains("These outputs: ε = 6.1000 (per document), of which this run spent ε = 4.1000 and run r1"), "{}", r.to_html());
        // Without reuse the guarantee is the run's own ε.
        run.vocabulary_from = None;
        let (v, m) = (Checked { name: "medical".into(), sha256: "a".repeat(64) }, Checked { name: "model".into(), sha256: "b".repeat(64) });
        let r = PrivacyReport::new("now".into(), &settings, &run, &Ledger::new("fp".into()), v, m, &crate::input::classes::ClassSet::unlabelled(), 10, &[]);
        assert!(r.guarantee.contains("(4.1000)-differentially private") && !r.guarantee.contains("earlier run"), "{}", r.guarantee);
        assert!((r.epsilon_outputs - 4.1).abs() < 1e-12 && r.vocabulary_from.is_none());
        assert!(r.to_html().contains("This run: ε = 4.1000 (per document: a patient with k documents is protected at k·ε)."));
    }

    #[test]
    fn the_replay_check_is_added_with_its_counts_and_said_to_be_not_dp() {
        let run = Run::new("r".into(), "t".into());
        let (v, m) = (Checked { name: "medical".into(), sha256: "a".repeat(64) }, Checked { name: "model".into(), sha256: "b".repeat(64) });
        let r = PrivacyReport::new("now".into(), &RunSettings::default(), &run, &Ledger::new("fp".into()), v, m, &crate::input::classes::ClassSet::unlabelled(), 10, &[]);
        let json = serde_json::to_string(&r).unwrap();
        // A run's report says nothing of a check (none was run before generation).
        assert!(!json.contains("replay_check") && !r.to_html().contains("Replay check"));
        let summary = ReplaySummary::new(12, 2, 2, crate::replay::ReplayParams::default());
        let with = serde_json::to_string(&PrivacyReport::with_replay(&json, summary.clone()).unwrap()).unwrap();
        let back: PrivacyReport = serde_json::from_str(&with).unwrap();
        assert_eq!(back.replay_check, Some(summary));
        let html = back.to_html();
        assert!(html.contains("Replay check (not differentially private)") && html.contains("NOT differentially private"), "{html}");
        assert!(html.contains("<th scope=\"row\">Flagged</th><td>2</td>") && html.contains("Left out of the synthetic corpus</th><td>2</td>"), "{html}");
        assert!(PrivacyReport::with_replay("not json", ReplaySummary::new(0, 0, 0, Default::default())).is_err());
    }

    #[test]
    fn the_report_states_the_privacy_unit() {
        let mut run = Run::new("r".into(), "t".into());
        let checked = || (Checked { name: "medical".into(), sha256: "a".repeat(64) }, Checked { name: "model".into(), sha256: "b".repeat(64) });
        let (v, m) = checked();
        let r = PrivacyReport::new("now".into(), &RunSettings::default(), &run, &Ledger::new("fp".into()), v, m, &crate::input::classes::ClassSet::unlabelled(), 10, &[]);
        assert_eq!(r.privacy_unit, "document");
        assert!(r.neighbouring_relation.contains("one document (and its label)") && r.neighbouring_relation.contains("k·ε"));
        assert!(r.to_html().contains("(per document: a patient with k documents is protected at k·ε)."));
        run.person_column = Some("patient_id".into());
        let (v, m) = checked();
        let r = PrivacyReport::new("now".into(), &RunSettings::default(), &run, &Ledger::new("fp".into()), v, m, &crate::input::classes::ClassSet::unlabelled(), 10, &[]);
        assert_eq!(r.privacy_unit, "person (column “patient_id”)");
        assert!(r.neighbouring_relation.contains("one person's documents") && !r.neighbouring_relation.contains("k·ε"), "{}", r.neighbouring_relation);
        assert!(r.to_html().contains("(per person)."));
    }
}
