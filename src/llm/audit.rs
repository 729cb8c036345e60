//! The audit log: every request the page sends and what came back, so a curator can show
//! exactly what left the machine. Entries are capped and old jobs' entries pruned because the
//! log lives in the browser's storage; the storage itself is `ui/io/jobstore.rs`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

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

/// The audit log as downloaded (`lines`: one JSON entry per line) with the answers that
/// brought the documents `dropped` of job `job` withheld: the replay check (`crate::replay`)
/// flagged them as repeating private text, which no download may carry. Requests (DP prompts)
/// and every other entry are kept as they are; a line that does not read is kept too.
pub fn withhold_answers(lines: &str, job: &str, dropped: &BTreeSet<usize>) -> String {
    let mut out = String::with_capacity(lines.len());
    for line in lines.lines() {
        match serde_json::from_str::<AuditEntry>(line) {
            Ok(mut e) if e.job == job && dropped.contains(&e.index) && e.phase == AuditPhase::Response => {
                e.response = WITHHELD.into();
                out.push_str(&serde_json::to_string(&e).unwrap_or_default());
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
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
    #[test]
    fn flagged_answers_are_withheld_from_the_download_and_nothing_else() {
        let entry = |job: &str, index, phase, response: &str| {
            serde_json::to_string(&AuditEntry {
                phase, time: "t".into(), job: job.into(), index, attempt: 1, url: "u".into(),
                request: "prompt".into(), status: Some(200), response: response.into(), error: None,
            })
            .unwrap()
        };
        let lines = [
            entry("j", 1, AuditPhase::Sending, ""),
            entry("j", 1, AuditPhase::Response, "secret span"),
            entry("j", 2, AuditPhase::Response, "fine"),
            entry("old", 1, AuditPhase::Response, "another job"),
            "not json".to_string(),
        ]
        .join("\n");
        let out = withhold_answers(&lines, "j", &BTreeSet::from([1]));
        assert!(!out.contains("secret span") && out.contains(WITHHELD), "{out}");
        assert!(out.contains("\"fine\"") && out.contains("another job") && out.contains("not json") && out.contains("\"prompt\""), "{out}");
        assert_eq!(out.lines().count(), 5);
        assert_eq!(withhold_answers(&lines, "j", &BTreeSet::new()), lines + "\n");
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
