//! The audit log: every request the page sends and what came back, so a curator can show
//! exactly what left the machine. Entries are capped and old jobs' entries pruned because the
//! log lives in the browser's storage; the storage itself is `ui/io/jobstore.rs`.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::job::{Job, Outcome};

/// Whether an audit entry was written before a request went out or after its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditPhase {
    /// Written before `fetch`: a request in flight when the tab dies is still on record.
    Sending,
    /// What came back (or the error).
    #[default]
    Response,
}

/// Bytes kept of each body in an audit entry ([`AuditEntry::capped`]).
pub const AUDIT_BODY_CAP: usize = 64 * 1024;
/// Jobs whose audit entries are kept (the newest; older jobs' entries are pruned).
pub const AUDIT_KEEP_JOBS: usize = 5;

/// One line of the audit log: every request and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    #[serde(default)]
    pub phase: AuditPhase,
    pub time: String,
    pub job: String,
    pub index: usize,
    pub attempt: u32,
    pub url: String,
    /// The exact body sent (the API key travels in a header and is never logged).
    pub request: String,
    pub status: Option<u16>,
    pub response: String,
    pub error: Option<String>,
}

/// `text` cut to at most `cap` bytes (at a character boundary) with a note of its full size.
fn cap_text(text: &mut String, cap: usize) {
    if text.len() <= cap {
        return;
    }
    let full = text.len();
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!("… [truncated: {full} bytes in all]"));
}

impl AuditEntry {
    /// The entry with every body (request, response, error) cut to [`AUDIT_BODY_CAP`] bytes,
    /// saying so: a huge reply must not fill the browser's storage.
    pub fn capped(mut self) -> AuditEntry {
        for t in [&mut self.request, &mut self.response] {
            cap_text(t, AUDIT_BODY_CAP);
        }
        if let Some(e) = self.error.as_mut() {
            cap_text(e, AUDIT_BODY_CAP);
        }
        self
    }
}

/// What a withheld answer reads ([`withhold_answers`]).
pub const WITHHELD: &str = "[withheld from this download: the replay check flagged this document as repeating private text]";

/// The answers an audit log download withholds (the replay check, `crate::replay`, flagged
/// them as repeating private text, which no download may carry), per job id: the answers of
/// the flagged documents (every attempt's), and any other answer whose body was flagged (a
/// first reply that was asked for once more, a reply that did not read), by [`answer_key`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Withheld {
    pub docs: BTreeMap<String, BTreeSet<usize>>,
    pub answers: BTreeMap<String, BTreeSet<String>>,
}

impl Withheld {
    pub fn is_empty(&self) -> bool {
        self.docs.values().all(BTreeSet::is_empty) && self.answers.values().all(BTreeSet::is_empty)
    }

    fn holds(&self, e: &AuditEntry) -> bool {
        self.docs.get(&e.job).is_some_and(|d| d.contains(&e.index))
            || (!e.response.is_empty() && self.answers.get(&e.job).is_some_and(|a| a.contains(&answer_key(&e.response))))
    }
}

/// The key of one answer body as stored in the audit log (SHA-256, hex): what [`Withheld`]
/// names an answer by.
pub fn answer_key(body: &str) -> String {
    use sha2::{Digest, Sha256};
    crate::base::hex(&Sha256::digest(body.as_bytes()))
}

/// The audit log as downloaded (`lines`: one JSON entry per line) with the answers in
/// `withheld` replaced by [`WITHHELD`] (and the error too when it quotes the body: an answer
/// with an error status). Requests (DP prompts) and every other entry are kept as they are; a
/// line that does not read is kept too.
pub fn withhold_answers(lines: &str, withheld: &Withheld) -> String {
    let mut out = String::with_capacity(lines.len());
    for line in lines.lines() {
        match serde_json::from_str::<AuditEntry>(line) {
            Ok(mut e) if e.phase == AuditPhase::Response && withheld.holds(&e) => {
                e.response = WITHHELD.into();
                if e.error.is_some() && e.status.is_some_and(|s| !(200..300).contains(&s)) {
                    e.error = Some(WITHHELD.into());
                }
                out.push_str(&serde_json::to_string(&e).unwrap_or_default());
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// An answer of the audit log that the corpus does not hold as it is, for the replay check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditAnswer {
    /// [`answer_key`] of its body.
    pub key: String,
    /// The document it was an answer for.
    pub index: usize,
    /// Its text to check: every string of the body's JSON of three words or more but the
    /// document's kept text (the reply asked for once more, a reasoning field, an error
    /// message), or the whole body when it is not JSON.
    pub text: String,
}

/// The answers of `job` in the audit log (`lines`) that hold text beyond the documents kept
/// ([`AuditAnswer`]), once each: the replay check reads the kept documents from the job, and
/// these too, since the audit log download carries them.
pub fn answers_to_check(lines: &str, job: &Job) -> Vec<AuditAnswer> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for line in lines.lines() {
        let Ok(e) = serde_json::from_str::<AuditEntry>(line) else { continue };
        if e.phase != AuditPhase::Response || e.job != job.id || e.index >= job.items.len() || e.response.trim().is_empty() {
            continue;
        }
        let key = answer_key(&e.response);
        if seen.contains(&key) {
            continue;
        }
        let kept = match job.outcomes.get(&e.index) {
            Some(Outcome::Done { text, .. }) => Some(text.trim()),
            _ => None,
        };
        let text = match serde_json::from_str::<serde_json::Value>(&e.response) {
            Ok(v) => {
                let mut strings = Vec::new();
                string_leaves(&v, &mut strings);
                strings.retain(|s| Some(s.trim()) != kept && s.split_whitespace().nth(2).is_some());
                strings.join("\n\n")
            }
            Err(_) => e.response.clone(),
        };
        if text.chars().any(char::is_alphanumeric) {
            seen.insert(key.clone());
            out.push(AuditAnswer { key, index: e.index, text });
        }
    }
    out
}

fn string_leaves<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    match v {
        serde_json::Value::String(s) => out.push(s),
        serde_json::Value::Array(a) => a.iter().for_each(|x| string_leaves(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| string_leaves(x, out)),
        _ => {}
    }
}

/// Which audit entries to delete: given the job id of every entry, oldest first, the
/// positions of those that belong to none of the newest `keep_jobs` jobs (a job's age is its
/// latest entry; `current`, the job about to start, always counts as the newest).
pub fn audit_to_prune(jobs: &[String], keep_jobs: usize, current: &str) -> Vec<usize> {
    let mut newest_first: Vec<&str> = vec![current];
    for j in jobs.iter().rev() {
        if !newest_first.contains(&j.as_str()) {
            newest_first.push(j);
        }
    }
    let kept = &newest_first[..keep_jobs.max(1).min(newest_first.len())];
    jobs.iter().enumerate().filter(|(_, j)| !kept.contains(&j.as_str())).map(|(i, _)| i).collect()
}

#[cfg(test)]
mod tests {
    fn line(job: &str, index: usize, phase: AuditPhase, status: u16, response: &str) -> String {
        serde_json::to_string(&AuditEntry {
            phase, time: "t".into(), job: job.into(), index, attempt: 1, url: "u".into(),
            request: "prompt".into(), status: Some(status), response: response.into(),
            error: (status != 200).then(|| format!("the endpoint answered {status}: {response}")),
        })
        .unwrap()
    }

    #[test]
    fn flagged_answers_are_withheld_from_the_download_and_nothing_else() {
        let lines = [
            line("j", 1, AuditPhase::Sending, 200, ""),
            line("j", 1, AuditPhase::Response, 200, "secret span"),
            line("j", 2, AuditPhase::Response, 200, "fine"),
            line("j", 3, AuditPhase::Response, 200, "first reply, asked once more"),
            line("j", 4, AuditPhase::Response, 500, "an error page quoting it"),
            line("old", 1, AuditPhase::Response, 200, "another job"),
            line("old", 5, AuditPhase::Response, 200, "an earlier job's flagged answer"),
            "not json".to_string(),
        ]
        .join("\n");
        let withheld = Withheld {
            docs: BTreeMap::from([("j".into(), BTreeSet::from([1])), ("old".into(), BTreeSet::from([5]))]),
            answers: BTreeMap::from([(
                "j".into(),
                BTreeSet::from([answer_key("first reply, asked once more"), answer_key("an error page quoting it")]),
            )]),
        };
        let out = withhold_answers(&lines, &withheld);
        for gone in ["secret span", "asked once more", "quoting it", "an earlier job's"] {
            assert!(!out.contains(gone), "{gone}: {out}");
        }
        assert_eq!(out.matches(WITHHELD).count(), 5, "{out}"); // the error quoting the body too
        assert!(out.contains("\"fine\"") && out.contains("another job") && out.contains("not json") && out.contains("\"prompt\""), "{out}");
        assert_eq!(out.lines().count(), 8);
        assert_eq!(withhold_answers(&lines, &Withheld::default()), lines.clone() + "\n");
        // An answer body is withheld only within its job.
        let elsewhere = Withheld { answers: BTreeMap::from([("old".into(), BTreeSet::from([answer_key("fine")]))]), ..Default::default() };
        assert!(withhold_answers(&lines, &elsewhere).contains("\"fine\""));
    }

    #[test]
    fn answers_beyond_the_kept_documents_are_found_for_the_check() {
        use crate::sample::SequenceOut;
        let seqs: Vec<SequenceOut> = (0..3).map(|k| SequenceOut { label: None, keyphrases: vec![format!("k{k}")], noise_dominated: false }).collect();
        let llm = crate::llm::LlmSettings { model: "m".into(), ..Default::default() };
        let mut job = Job::new("j".into(), "t".into(), llm, crate::llm::prompt::PromptSettings::default(), &seqs, "{}".into());
        job.outcomes.insert(0, Outcome::Done { text: "the kept text of the first document".into(), attempts: 2 });
        let reply = |content: &str, extra: &str| {
            format!(r#"{{"id":"chatcmpl-1","object":"chat.completion","model":"m","choices":[{{"message":{{"role":"assistant","content":{content:?}{extra}}},"finish_reason":"stop"}}]}}"#)
        };
        let first = reply("a list: first reply, asked once more", "");
        let kept = reply("  the kept text of the first document ", "");
        let reasoning = reply("the kept text of the first document", r#","reasoning_content":"thinking about the private note here""#);
        let lines = [
            line("j", 0, AuditPhase::Sending, 200, ""),
            line("j", 0, AuditPhase::Response, 200, &first),
            line("j", 0, AuditPhase::Response, 200, &kept),
            line("j", 0, AuditPhase::Response, 200, &first), // the same body again: once
            line("j", 0, AuditPhase::Response, 200, &reasoning),
            line("j", 1, AuditPhase::Response, 200, "<html>not JSON at all</html>"),
            line("j", 2, AuditPhase::Response, 500, r#"{"error":{"message":"the server could not answer","code":500}}"#),
            line("j", 9, AuditPhase::Response, 200, "out of range"),
            line("other", 0, AuditPhase::Response, 200, "another job's answer"),
            line("j", 2, AuditPhase::Response, 200, ""),
        ]
        .join("\n");
        let found: Vec<(usize, String)> = answers_to_check(&lines, &job).into_iter().map(|a| (a.index, a.text)).collect();
        assert_eq!(
            found,
            [
                (0, "a list: first reply, asked once more".to_string()),
                (0, "thinking about the private note here".to_string()),
                (1, "<html>not JSON at all</html>".to_string()),
                (2, "the server could not answer".to_string()),
            ]
        );
        assert_eq!(answers_to_check(&lines, &job)[0].key, answer_key(&first));
    }

    use super::*;

    #[test]
    fn audit_entries_are_capped_and_pruned_per_job() {
        let big = "é".repeat(AUDIT_BODY_CAP); // two bytes each: twice the cap
        let e = AuditEntry {
            phase: AuditPhase::Response,
            time: "t".into(),
            job: "j".into(),
            index: 0,
            attempt: 1,
            url: "u".into(),
            request: "small".into(),
            status: Some(200),
            response: big.clone(),
            error: Some(big.clone()),
        }
        .capped();
        assert_eq!(e.request, "small");
        for t in [&e.response, e.error.as_ref().unwrap()] {
            assert!(t.len() <= AUDIT_BODY_CAP + 64, "{}", t.len());
            assert!(t.ends_with(&format!("[truncated: {} bytes in all]", big.len())), "{}", &t[t.len() - 60..]);
        }
        // Sending entries are on record before the response ones; old logs read as responses.
        let old: AuditEntry = serde_json::from_str(
            r#"{"time":"t","job":"j","index":0,"attempt":1,"url":"u","request":"r","status":null,"response":"","error":null}"#,
        )
        .unwrap();
        assert_eq!(old.phase, AuditPhase::Response);
        assert!(serde_json::to_string(&AuditEntry { phase: AuditPhase::Sending, ..old }).unwrap().contains("\"phase\":\"sending\""));
        // Keep the newest jobs (by their latest entry) and the one about to start.
        let jobs: Vec<String> = ["a", "a", "b", "c", "a", "d", "c"].map(String::from).to_vec();
        assert_eq!(audit_to_prune(&jobs, 2, "new"), vec![0, 1, 2, 4, 5]); // keep new, c
        assert_eq!(audit_to_prune(&jobs, 3, "new"), vec![0, 1, 2, 4]); // keep new, c, d
        assert_eq!(audit_to_prune(&jobs, 4, "new"), vec![2]); // keep new, c, d, a
        assert_eq!(audit_to_prune(&jobs, 10, "new"), Vec::<usize>::new());
        assert_eq!(audit_to_prune(&jobs, 2, "c"), vec![0, 1, 2, 4]); // keep c, d
    }
}
