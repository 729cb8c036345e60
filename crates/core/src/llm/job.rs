//! The generation job: the prompts built from the DP sequences, and what each document came
//! to. It is the state a reload resumes from, so it is plain serialisable data; outcomes carry
//! their job's id so that a late answer of a previous job is never counted for this one.
//!
//! Privacy: every item is built from a DP output ([`SequenceOut`]) and public settings.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::llm::prompt::{Message, PromptSettings};
use crate::sample::SequenceOut;

use super::check::{check_reply, ReplyCheck, ReplyForm};
use super::settings::LlmSettings;

/// One document to generate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub index: usize,
    pub label: Option<String>,
    pub keyphrases: Vec<String>,
    pub messages: Vec<Message>,
}

/// What happened to one document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    Done { text: String, attempts: u32 },
    Failed { error: String, attempts: u32 },
}

/// A generation job: the prompts (DP outputs only) and the outcomes so far. Saved after every
/// document so that a reload resumes where it stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub id: String,
    pub created: String,
    pub llm: LlmSettings,
    pub prompts: PromptSettings,
    pub items: Vec<Item>,
    pub outcomes: BTreeMap<usize, Outcome>,
    /// The privacy report of the run the keyphrases came from.
    pub report: String,
    /// Made with an API key (the key itself is not kept here): resuming it asks for the key
    /// again where it was not remembered, rather than sending every document without one.
    #[serde(default)]
    pub keyed: bool,
}

/// One saved outcome as stored (IndexedDB key `[job, index]`): the job id travels with it,
/// so an outcome of one job can never be counted for another.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeRecord {
    /// `None` only in records saved before outcomes were keyed by job (adopted by the saved job).
    #[serde(default)]
    pub job: Option<String>,
    pub index: usize,
    pub outcome: Outcome,
}

impl Job {
    pub fn new(
        id: String,
        created: String,
        llm: LlmSettings,
        prompts: PromptSettings,
        sequences: &[SequenceOut],
        report: String,
    ) -> Job {
        let items = sequences
            .iter()
            .enumerate()
            .map(|(index, s)| Item {
                index,
                label: s.label.clone(),
                keyphrases: s.keyphrases.clone(),
                messages: prompts.messages(&s.keyphrases, s.label.as_deref()),
            })
            .collect();
        Job { id, created, llm, prompts, items, outcomes: BTreeMap::new(), report, keyed: false }
    }

    /// Counts `outcome` for document `index` if it belongs to this job (same id, an index it
    /// has); returns whether it did. Outcomes of another job are never mixed in.
    pub fn record(&mut self, job_id: &str, index: usize, outcome: Outcome) -> bool {
        if job_id != self.id || index >= self.items.len() {
            return false;
        }
        self.outcomes.insert(index, outcome);
        true
    }

    /// Takes the saved outcomes that belong to this job (its id; or no id: saved before
    /// outcomes were keyed, when only one job was kept); the others are ignored.
    pub fn adopt(&mut self, records: impl IntoIterator<Item = OutcomeRecord>) {
        for r in records {
            let id = r.job.unwrap_or_else(|| self.id.clone());
            self.record(&id, r.index, r.outcome);
        }
    }

    /// Documents still to send: never tried, or failed (when `retry_failed`).
    pub fn pending(&self, retry_failed: bool) -> Vec<usize> {
        self.items
            .iter()
            .map(|i| i.index)
            .filter(|i| match self.outcomes.get(i) {
                None => true,
                Some(Outcome::Failed { .. }) => retry_failed,
                Some(Outcome::Done { .. }) => false,
            })
            .collect()
    }

    pub fn done(&self) -> usize {
        self.outcomes.values().filter(|o| matches!(o, Outcome::Done { .. })).count()
    }

    pub fn failed(&self) -> usize {
        self.outcomes.values().filter(|o| matches!(o, Outcome::Failed { .. })).count()
    }

    pub fn is_complete(&self) -> bool {
        self.done() == self.items.len()
    }

    /// Total estimated prompt tokens.
    pub fn estimated_tokens(&self) -> usize {
        self.items.iter().map(|i| crate::llm::prompt::estimate_tokens(&i.messages)).sum()
    }

    pub fn rows(&self) -> impl Iterator<Item = (&Item, &str)> {
        self.items.iter().filter_map(|i| match self.outcomes.get(&i.index) {
            Some(Outcome::Done { text, .. }) => Some((i, text.as_str())),
            _ => None,
        })
    }

    /// The reply check of one generated document ([`check_reply`]): its form and how many of
    /// its keyphrases it uses, written beside it in the corpus so that the recipient can
    /// filter.
    pub fn check(&self, item: &Item, text: &str) -> ReplyCheck {
        let examples: Vec<&str> = self.prompts.few_shot.iter().map(|f| f.text.as_str()).collect();
        check_reply(text, &item.keyphrases, &examples)
    }

    /// How many generated documents have each form, in [`ReplyForm::ALL`]'s order (forms
    /// with none left out).
    pub fn forms(&self) -> Vec<(ReplyForm, usize)> {
        let checks: Vec<ReplyForm> = self.rows().map(|(i, t)| self.check(i, t).form).collect();
        ReplyForm::ALL.iter().map(|f| (*f, checks.iter().filter(|c| *c == f).count())).filter(|(_, n)| *n > 0).collect()
    }

    /// The synthetic corpus: one JSON object per line {"text", "label", "keyphrases", "form",
    /// "keyphrases_used"}.
    pub fn corpus_jsonl(&self) -> String {
        let mut out = String::new();
        for (i, text) in self.rows() {
            let c = self.check(i, text);
            let row = serde_json::json!({
                "text": text, "label": i.label, "keyphrases": i.keyphrases,
                "form": c.form.as_str(), "keyphrases_used": c.used,
            });
            out.push_str(&row.to_string());
            out.push('\n');
        }
        out
    }

    /// The synthetic corpus as CSV: text, label, keyphrases ("; "-joined), form,
    /// keyphrases_used. Cells that a spreadsheet would run as a formula are neutralised
    /// ([`crate::llm::export::csv_cell`]).
    pub fn corpus_csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        let _ = w.write_record(["text", "label", "keyphrases", "form", "keyphrases_used"]);
        for (i, text) in self.rows() {
            let c = self.check(i, text);
            let used = c.used.to_string();
            let _ = crate::llm::export::write_record(
                &mut w,
                [text, i.label.as_deref().unwrap_or(""), &i.keyphrases.join("; "), c.form.as_str(), &used],
            );
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }
}

impl Job {
    /// The job as it is downloaded when the documents `dropped` are left out (flagged by the
    /// replay check, `crate::replay`): their outcomes removed, everything else as it is.
    pub fn without(&self, dropped: &BTreeSet<usize>) -> Job {
        let outcomes = self.outcomes.iter().filter(|(i, _)| !dropped.contains(i)).map(|(i, o)| (*i, o.clone())).collect();
        Job { outcomes, ..self.clone() }
    }

    /// The generated documents, as the replay check reads them (text and keyphrases).
    pub fn synthetic_docs(&self) -> Vec<crate::replay::SyntheticDoc> {
        self.rows().map(|(i, text)| crate::replay::SyntheticDoc { index: i.index, text: text.to_string(), keyphrases: i.keyphrases.clone() }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> LlmSettings {
        LlmSettings { model: "m".into(), ..Default::default() }
    }

    #[test]
    fn a_job_tracks_what_is_left_and_exports_once_each() {
        let seqs = vec![
            SequenceOut { label: Some("a".into()), keyphrases: vec!["x".into(), "y".into()], noise_dominated: false },
            SequenceOut { label: Some("b".into()), keyphrases: vec!["z".into()], noise_dominated: false },
            SequenceOut { label: None, keyphrases: vec!["w".into()], noise_dominated: false },
        ];
        let mut job = Job::new("j".into(), "t".into(), settings(), PromptSettings::default(), &seqs, "{}".into());
        assert_eq!(job.pending(false), vec![0, 1, 2]);
        assert!(job.items[0].messages.last().unwrap().content.contains("x; y"));
        job.outcomes.insert(1, Outcome::Done { text: "B, \"quoted\"".into(), attempts: 2 });
        job.outcomes.insert(2, Outcome::Failed { error: "e".into(), attempts: 5 });
        assert_eq!(job.pending(false), vec![0]);
        assert_eq!(job.pending(true), vec![0, 2]);
        assert!(!job.is_complete());
        let back: Job = serde_json::from_str(&serde_json::to_string(&job).unwrap()).unwrap();
        assert_eq!(back, job);
        let jsonl = job.corpus_jsonl();
        assert_eq!(jsonl.lines().count(), 1);
        assert!(jsonl.contains("\"label\":\"b\""));
        let csv = job.corpus_csv();
        assert!(csv.starts_with("text,label,keyphrases,form,keyphrases_used\n\"B, \"\"quoted\"\"\",b,z,list,0\n"), "{csv}");
        assert!(jsonl.contains("\"form\":\"list\"") && jsonl.contains("\"keyphrases_used\":0"), "{jsonl}");
        assert_eq!(job.forms(), vec![(ReplyForm::List, 1)]);
        assert!(job.estimated_tokens() > 0);
    }

    #[test]
    fn corpus_csv_neutralises_formula_cells() {
        let seqs = vec![SequenceOut { label: Some("=HYPERLINK(\"http://x\",\"y\")".into()), keyphrases: vec!["-x".into(), "y".into()], noise_dominated: false }];
        let mut job = Job::new("j".into(), "t".into(), settings(), PromptSettings::default(), &seqs, "{}".into());
        job.outcomes.insert(0, Outcome::Done { text: "+1 said the note".into(), attempts: 1 });
        let csv = job.corpus_csv();
        assert_eq!(csv, "text,label,keyphrases,form,keyphrases_used\n'+1 said the note,\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",'-x; y,list,0\n");
        // The JSONL carries the exact text.
        assert!(job.corpus_jsonl().contains("\"text\":\"+1 said the note\""));
    }

    #[test]
    fn dropped_documents_are_left_out_of_the_exports_only() {
        let seqs: Vec<SequenceOut> = (0..3).map(|k| SequenceOut { label: Some("a".into()), keyphrases: vec![format!("k{k}")], noise_dominated: false }).collect();
        let mut job = Job::new("j".into(), "t".into(), settings(), PromptSettings::default(), &seqs, "{}".into());
        for i in 0..3 {
            job.outcomes.insert(i, Outcome::Done { text: format!("text {i}"), attempts: 1 });
        }
        let docs = job.synthetic_docs();
        assert_eq!(docs.iter().map(|d| (d.index, d.text.as_str(), d.keyphrases[0].as_str())).collect::<Vec<_>>(), [(0, "text 0", "k0"), (1, "text 1", "k1"), (2, "text 2", "k2")]);
        let kept = job.without(&BTreeSet::from([1]));
        assert!(!kept.corpus_jsonl().contains("text 1") && kept.corpus_jsonl().lines().count() == 2);
        assert!(!kept.corpus_csv().contains("text 1") && kept.corpus_csv().contains("text 2"));
        assert_eq!((kept.items.len(), job.done()), (3, 3), "the job itself is unchanged");
    }

    #[test]
    fn outcomes_of_another_job_are_never_mixed_in() {
        let seqs = vec![
            SequenceOut { label: None, keyphrases: vec!["x".into()], noise_dominated: false },
            SequenceOut { label: None, keyphrases: vec!["y".into()], noise_dominated: false },
        ];
        let mut job = Job::new("new".into(), "t".into(), settings(), PromptSettings::default(), &seqs, "{}".into());
        let done = |t: &str| Outcome::Done { text: t.into(), attempts: 1 };
        // A lane of the previous job finishing late, or an index the job does not have.
        assert!(!job.record("old", 0, done("old text")));
        assert!(!job.record("new", 2, done("out of range")));
        assert!(job.record("new", 1, done("mine")));
        assert_eq!(job.pending(false), vec![0]);
        let rec = |job: Option<&str>, index, t: &str| OutcomeRecord { job: job.map(String::from), index, outcome: done(t) };
        let mut fresh = Job { outcomes: BTreeMap::new(), ..job.clone() };
        fresh.adopt([rec(Some("old"), 0, "old"), rec(Some("new"), 1, "mine"), rec(Some("other"), 1, "theirs")]);
        assert_eq!(fresh.outcomes.len(), 1);
        assert_eq!(fresh.outcomes[&1], done("mine"));
        // Records from before the keying (no job id) belong to the one saved job.
        fresh.adopt([rec(None, 0, "legacy")]);
        assert_eq!(fresh.pending(false), Vec::<usize>::new());
        // The stored form carries the id; old records without it still read.
        let text = serde_json::to_string(&rec(Some("new"), 1, "mine")).unwrap();
        assert!(text.contains("\"job\":\"new\""), "{text}");
        let legacy: OutcomeRecord = serde_json::from_str(r#"{"index":3,"outcome":{"kind":"done","text":"a","attempts":1}}"#).unwrap();
        assert_eq!(legacy.job, None);
        // A job saved before `keyed` existed reads as not keyed.
        let mut v = serde_json::to_value(&job).unwrap();
        v.as_object_mut().unwrap().remove("keyed");
        assert!(!serde_json::from_value::<Job>(v).unwrap().keyed);
    }
}
