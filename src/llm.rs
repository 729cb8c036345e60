//! The LLM step: OpenAI-compatible `/v1/chat/completions` (vLLM, llama.cpp server, Ollama,
//! hosted APIs). This module is the transport-free part: request bodies, reply parsing, the
//! retry policy, and the generation job (what is done, what is left), so it is tested
//! natively. The browser sends with `fetch` (`ui/generate.rs`).
//!
//! Privacy: a request body holds the messages of [`crate::prompt`] and the model settings,
//! nothing else. Everything it is built from is a DP output or public.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::prompt::{Message, PromptSettings};
use crate::protocol::SequenceOut;

/// Where and how to call the model. The API key is not part of this (it is kept in memory
/// unless the user opts in to remember it, and never written to the audit log).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlmSettings {
    /// Base URL, e.g. `http://127.0.0.1:8000/v1` (the path `/chat/completions` is appended).
    pub endpoint: String,
    pub model: String,
    pub temperature: f64,
    pub max_tokens: u32,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Seconds before a request is abandoned (and retried).
    pub timeout_s: f64,
    /// Attempts per document (first try included).
    pub max_attempts: u32,
}

impl Default for LlmSettings {
    fn default() -> Self {
        LlmSettings {
            endpoint: "http://127.0.0.1:8000/v1".into(),
            model: String::new(),
            temperature: 0.8,
            max_tokens: 512,
            concurrency: 4,
            timeout_s: 120.0,
            max_attempts: 5,
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("the endpoint must start with http:// or https:// (got {0:?})")]
    BadEndpoint(String),
    #[error("{field} = {value}: {why}")]
    Setting { field: &'static str, value: String, why: &'static str },
    #[error("HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("the reply is not a chat completion: {0}")]
    Malformed(String),
    #[error("no reply within {0} s")]
    Timeout(f64),
    #[error("network error: {0}")]
    Network(String),
}

impl LlmError {
    /// Worth another attempt: timeouts, network errors, 408/409/429, 5xx, and malformed
    /// replies (often a proxy's error page). Other 4xx (bad key, unknown model) are not.
    pub fn retryable(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => matches!(status, 408 | 409 | 429) || *status >= 500,
            LlmError::Malformed(_) | LlmError::Timeout(_) | LlmError::Network(_) => true,
            _ => false,
        }
    }
}

impl LlmSettings {
    pub fn check(&self) -> Result<(), LlmError> {
        let e = self.endpoint.trim();
        if !(e.starts_with("http://") || e.starts_with("https://")) || e.len() < "http://x".len() {
            return Err(LlmError::BadEndpoint(self.endpoint.clone()));
        }
        let bad = |field, value: String, why| Err(LlmError::Setting { field, value, why });
        if self.model.trim().is_empty() {
            return bad("model", "(empty)".into(), "name the model the endpoint serves");
        }
        if !(0.0..=2.0).contains(&self.temperature) {
            return bad("temperature", self.temperature.to_string(), "must be between 0 and 2");
        }
        if self.max_tokens == 0 || self.max_tokens > 32_768 {
            return bad("max tokens", self.max_tokens.to_string(), "must be between 1 and 32768");
        }
        if self.concurrency == 0 || self.concurrency > 64 {
            return bad("concurrency", self.concurrency.to_string(), "must be between 1 and 64");
        }
        if !(self.timeout_s >= 1.0 && self.timeout_s <= 3600.0) {
            return bad("timeout", self.timeout_s.to_string(), "must be between 1 and 3600 seconds");
        }
        if self.max_attempts == 0 || self.max_attempts > 20 {
            return bad("attempts", self.max_attempts.to_string(), "must be between 1 and 20");
        }
        Ok(())
    }

    /// `…/v1/chat/completions` from the base URL (a full URL is accepted as is).
    pub fn completions_url(&self) -> String {
        let e = self.endpoint.trim().trim_end_matches('/');
        if e.ends_with("/chat/completions") {
            e.to_string()
        } else {
            format!("{e}/chat/completions")
        }
    }

    pub fn models_url(&self) -> String {
        let e = self.completions_url();
        format!("{}/models", e.trim_end_matches("/chat/completions"))
    }

    /// The JSON body of one request.
    pub fn body(&self, messages: &[Message]) -> String {
        serde_json::json!({
            "model": self.model.trim(),
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stream": false,
        })
        .to_string()
    }
}

/// The text of a chat-completion reply, or why there is none.
pub fn parse_reply(status: u16, body: &str) -> Result<String, LlmError> {
    if !(200..300).contains(&status) {
        let short: String = body.chars().take(300).collect();
        return Err(LlmError::Status { status, body: short });
    }
    let v: serde_json::Value =
        serde_json::from_str(body).map_err(|e| LlmError::Malformed(format!("not JSON ({e})")))?;
    let text = v
        .pointer("/choices/0/message/content")
        .and_then(|c| c.as_str())
        .ok_or_else(|| LlmError::Malformed("no choices[0].message.content".into()))?;
    if text.trim().is_empty() {
        return Err(LlmError::Malformed("the generated text is empty".into()));
    }
    Ok(text.trim().to_string())
}

/// Milliseconds to wait before attempt `attempt` (2, 3, …): the server's Retry-After if it
/// gave one (capped), else exponential backoff 0.5 s, 1 s, 2 s, … capped at 30 s.
pub fn backoff_ms(attempt: u32, retry_after_s: Option<f64>) -> f64 {
    if let Some(s) = retry_after_s.filter(|s| s.is_finite() && *s >= 0.0) {
        return (s * 1000.0).min(60_000.0);
    }
    (500.0 * 2f64.powi(attempt.saturating_sub(2) as i32)).min(30_000.0)
}

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
        Job { id, created, llm, prompts, items, outcomes: BTreeMap::new(), report }
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
        self.items.iter().map(|i| crate::prompt::estimate_tokens(&i.messages)).sum()
    }

    fn rows(&self) -> impl Iterator<Item = (&Item, &str)> {
        self.items.iter().filter_map(|i| match self.outcomes.get(&i.index) {
            Some(Outcome::Done { text, .. }) => Some((i, text.as_str())),
            _ => None,
        })
    }

    /// The synthetic corpus: one JSON object per line {"text", "label", "keyphrases"}.
    pub fn corpus_jsonl(&self) -> String {
        let mut out = String::new();
        for (i, text) in self.rows() {
            let row = serde_json::json!({ "text": text, "label": i.label, "keyphrases": i.keyphrases });
            out.push_str(&row.to_string());
            out.push('\n');
        }
        out
    }

    /// The synthetic corpus as CSV: text, label, keyphrases ("; "-joined).
    pub fn corpus_csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        let _ = w.write_record(["text", "label", "keyphrases"]);
        for (i, text) in self.rows() {
            let _ = w.write_record([text, i.label.as_deref().unwrap_or(""), &i.keyphrases.join("; ")]);
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }
}

/// One line of the audit log: every request and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> LlmSettings {
        LlmSettings { model: "m".into(), ..Default::default() }
    }

    #[test]
    fn urls_and_checks() {
        let s = settings();
        assert_eq!(s.completions_url(), "http://127.0.0.1:8000/v1/chat/completions");
        assert_eq!(s.models_url(), "http://127.0.0.1:8000/v1/models");
        let full = LlmSettings { endpoint: "https://x.org/v1/chat/completions/".into(), ..settings() };
        assert_eq!(full.completions_url(), "https://x.org/v1/chat/completions");
        assert!(s.check().is_ok());
        assert!(matches!(LlmSettings { endpoint: "ftp://x".into(), ..settings() }.check(), Err(LlmError::BadEndpoint(_))));
        let e = LlmSettings { temperature: 3.0, ..settings() }.check().unwrap_err().to_string();
        assert!(e.contains("temperature"), "{e}");
        assert!(LlmSettings { model: " ".into(), ..settings() }.check().is_err());
        assert!(LlmSettings { concurrency: 0, ..settings() }.check().is_err());
    }

    #[test]
    fn replies_are_parsed_and_classified() {
        let ok = r#"{"choices":[{"message":{"role":"assistant","content":" A note. "}}]}"#;
        assert_eq!(parse_reply(200, ok).unwrap(), "A note.");
        let e = parse_reply(200, "<html>proxy</html>").unwrap_err();
        assert!(matches!(e, LlmError::Malformed(_)) && e.retryable());
        assert!(parse_reply(200, r#"{"choices":[]}"#).unwrap_err().retryable());
        assert!(parse_reply(429, "slow down").unwrap_err().retryable());
        assert!(parse_reply(503, "").unwrap_err().retryable());
        let e = parse_reply(401, "bad key").unwrap_err();
        assert!(!e.retryable() && e.to_string().contains("401"), "{e}");
        assert!(LlmError::Timeout(5.0).retryable());
    }

    #[test]
    fn backoff_grows_and_honours_retry_after() {
        assert_eq!(backoff_ms(2, None), 500.0);
        assert_eq!(backoff_ms(3, None), 1000.0);
        assert_eq!(backoff_ms(30, None), 30_000.0);
        assert_eq!(backoff_ms(2, Some(0.0)), 0.0);
        assert_eq!(backoff_ms(2, Some(1e9)), 60_000.0);
        assert_eq!(backoff_ms(2, Some(f64::NAN)), 500.0);
    }

    #[test]
    fn a_job_tracks_what_is_left_and_exports_once_each() {
        let seqs = vec![
            SequenceOut { label: Some("a".into()), keyphrases: vec!["x".into(), "y".into()] },
            SequenceOut { label: Some("b".into()), keyphrases: vec!["z".into()] },
            SequenceOut { label: None, keyphrases: vec!["w".into()] },
        ];
        let mut job = Job::new("j".into(), "t".into(), settings(), PromptSettings::default(), &seqs, "{}".into());
        assert_eq!(job.pending(false), vec![0, 1, 2]);
        assert!(job.items[0].messages.last().unwrap().content.contains("x, y"));
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
        assert!(csv.starts_with("text,label,keyphrases\n\"B, \"\"quoted\"\"\",b,z\n"), "{csv}");
        assert!(job.estimated_tokens() > 0);
    }
}
