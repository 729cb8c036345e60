//! The privacy report in words: the printable HTML page (`PrivacyReport::to_html`) and the
//! sentences the page shows beside it. Everything here reads the report's fields only.

use super::PrivacyReport;
use crate::input::classes::class_name;
use crate::ledger::BudgetChange;

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

    /// N as set, and the N kept where the public list is shorter (this run's vocabulary spend
    /// records the N kept, `dp::vocabulary::VocabParams::kept`; a run that reused an earlier Ṽ
    /// has no such spend, and shows N as set).
    fn vocabulary_size(&self) -> String {
        let asked = self.settings.top_n;
        if let (true, Some(k)) = (self.settings.whole_list(), self.settings.public_terms) {
            return format!("{asked}: the whole public list, {k} terms (drawn from nothing: no ε_voc)");
        }
        let kept = self.spends.iter().filter(|sp| sp.is(crate::ledger::SpendStage::Vocabulary)).find_map(|sp| sp.params["top_n"].as_u64());
        match kept {
            Some(k) if (k as usize) < asked => format!("{asked}: the whole public list, {k} terms"),
            _ => asked.to_string(),
        }
    }

    /// A self-contained, printable HTML page (no script, no external resource).
    pub fn to_html(&self) -> String {
        let s = &self.settings;
        let row = |k: &str, v: String| format!("<tr><th scope=\"row\">{}</th><td>{}</td></tr>", esc(k), esc(&v));
        let params = [
            row("ε_voc", if s.whole_list() { format!("not spent (set: {}): Ṽ is the whole public list", s.eps_voc) } else { s.eps_voc.to_string() }),
            row("ε_kde", s.eps_kde.to_string()),
            row("S (a document's most used terms counted)", s.terms_per_doc.to_string()),
            row("N (private vocabulary size)", self.vocabulary_size()),
            row("L (keyphrases per sequence)", s.len.to_string()),
            row("I (random features)", s.features.to_string()),
            row("Sequences per class", match s.counts_epsilon() {
                Some(e) => format!("{} on average, in proportion to DP class counts (ε = {e})", s.per_class),
                None => s.per_class.to_string(),
            } + &s.vote.map_or(String::new(), |v| format!(", × {} candidates per kept document for the DP vote (ε_select = {})", v.candidates_per_kept, v.eps_select))),
            row("Sampler", s.sampler.name().to_string()),
            row("Distinctiveness γ (histogram sampler: terms drawn ∝ p̃(t|c)·(p̃(t|c)/p̃(t))^γ)", s.sampling.distinctiveness.to_string()),
            row(
                "Distinct sets",
                if s.sampling.distinct_sets { "yes: each class's sequences are distinct sets of keyphrases, fewer where its release supports few terms" } else { "no" }.to_string(),
            ),
            row("Noise survivors q (histogram sampler: threshold τ = ln(N/(2q))/ε_kde on each class's counts)", s.sampling.noise_survivors.to_string()),
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
<p class=\"big\">{headline} All runs on this corpus in this browser when this run was recorded: ε = {eps_total:.4} over {runs} run(s).{units}</p>\
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
             <p class=\"big\">{}</p>\
             <table><tr><th>class</th><th>candidates</th><th>kept</th><th>share of the noisy votes kept</th><th>drew none</th></tr>{rows}</table>",
            esc(&r.run),
            esc(&r.privacy_unit),
            r.epsilon,
            r.epsilon_charged,
            esc(&r.mechanism),
            esc(&self.kept_epsilon_text()),
        )
    }

    /// The kept documents' ε in words: this run's outputs plus every vote over the same
    /// candidates, when the vote is tied to this run and read its corpus with its unit
    /// (`crate::run::vote` refuses a vote that names a run not on record for the loaded corpus
    /// with the same unit); otherwise the two ε apart, not added into one guarantee.
    pub fn kept_epsilon_text(&self) -> String {
        let Some(v) = &self.vote else { return String::new() };
        let r = &v.vote;
        // With the DP utility check that chose the sampler, when one did (`chosen_text`).
        let outputs = self.epsilon_outputs.max(self.epsilon_run) + self.settings_chosen_by.as_ref().map_or(0.0, |c| c.epsilon);
        // Records written before the sum was kept hold this vote only.
        let (votes, votes_eps) = if r.votes_on_candidates == 0 { (1, r.epsilon_charged) } else { (r.votes_on_candidates, r.epsilon_votes_on_candidates) };
        let tied = !self.run.is_empty() && v.candidates_from.get("run").and_then(serde_json::Value::as_str) == Some(self.run.as_str());
        let same_unit = r.privacy_unit == self.privacy_unit && r.votes_other_unit == 0 && r.unit_verified;
        let which = match votes {
            1 => "the vote's".to_string(),
            n => format!("the {n} votes on record, as of this one, over these documents or others of this run, since the kept set follows every vote seen before it"),
        };
        if tied && same_unit {
            let chosen = if self.settings_chosen_by.is_some() { " and the DP utility check that chose its sampler" } else { "" };
            format!(
                "The kept documents: ε = {:.4} (this run's outputs{chosen} plus {which}). This counts the votes in this browser's \
                 ledger when this vote was taken: had you seen a later vote's result (another tab, a vote after this download) \
                 before choosing to publish these documents, that vote counts too; the ledger's total for this corpus bounds them all.",
                outputs + votes_eps
            )
        } else {
            let why = if !tied {
                "the vote does not name this run"
            } else if r.unit_verified {
                "not every vote over these documents read the corpus with this run's privacy unit"
            } else {
                "the run was recorded before the grouping of documents into persons was kept, so the vote could not check that it grouped them as the run did"
            };
            format!(
                "The kept documents: ε = {outputs:.4} for this run's outputs and ε = {votes_eps:.4} for {which}, recorded apart: \
                 {why}, so the two are not added into one guarantee here."
            )
        }
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
