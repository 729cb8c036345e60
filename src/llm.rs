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
    /// The endpoint carries a secret (userinfo, a query, the key itself): URLs end up in
    /// logs, the job record and the audit log; a key belongs in the API key field only.
    #[error("{0}")]
    SecretInUrl(String),
    /// A key would travel in clear text over the network.
    #[error(
        "the API key would be sent unencrypted: {0} is plain http:// to a host that is not this machine. \
         Use https://, or a loopback address (127.0.0.1, localhost, [::1]) for a server on this machine"
    )]
    KeyOverPlainHttp(String),
    /// The endpoint is not among the origins the page's Content-Security-Policy allows.
    #[error(
        "this page may not contact {origin}: the endpoints it may call are {allowed}. \
         Whoever serves the page sets them in allowed-endpoints.txt, next to index.html \
         (then runs scripts/csp.py on that folder, or restarts scripts/serve.sh); see the README"
    )]
    NotAllowed { origin: String, allowed: String },
    /// The server answered, but not with the CORS headers that let this page read the reply
    /// (found out by a second, opaque request: see `ui::generate::http`). Browsers do not tell
    /// a page why a cross-origin request failed, so the message names each server's setting.
    #[error("{}", cors_advice(.endpoint, .page_origin))]
    CorsRefused { endpoint: String, page_origin: String },
}

/// What the curator must change when the server at `endpoint` (an origin) refuses requests from
/// a page at `page_origin` (`null` for a page opened from a file). The settings per server are
/// in the README, "Using the LLM step from a file".
pub fn cors_advice(endpoint: &str, page_origin: &str) -> String {
    let (who, ollama) = match page_origin {
        // Ollama refuses to start with OLLAMA_ORIGINS=null ("bad origin"); `*` is the only
        // value that admits a file page (envconfig/config.go; README).
        "null" => (
            "This page was opened from a file, so the browser sends the origin `null`".to_string(),
            "OLLAMA_ORIGINS=* (it does not accept the value null; `*` lets any page in this browser use that Ollama)".to_string(),
        ),
        o => (format!("This page's origin is {o}"), format!("OLLAMA_ORIGINS={o} (or add it to the list)")),
    };
    format!(
        "the server at {endpoint} answered, but refused this page's cross-origin request (CORS). {who}; \
         the server must allow it, with the request headers authorization and content-type. \
         Ollama: set {ollama} and restart it. \
         vLLM: --allowed-origins '[\"{page_origin}\"]' (its default, [\"*\"], already allows every origin). \
         llama.cpp server: allows every origin unless started with tools or MCP servers; then add --cors-origins {page_origin}. \
         A hosted API, or anything behind a proxy: the proxy must answer the browser's OPTIONS request with these headers. \
         README: \"Using the LLM step from a file\""
    )
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

/// Query parameter names that carry credentials (compared without case, `-`/`_`).
const SECRET_PARAMS: &[&str] = &[
    "key", "apikey", "apitoken", "token", "accesstoken", "authtoken", "auth", "authorization", "bearer", "secret",
    "clientsecret", "password", "passwd", "pwd", "sig", "signature", "code", "session", "sessionid", "credential",
    "credentials", "jwt",
];

/// The parts of an endpoint URL that the checks read. The parser is deliberately narrow: a
/// scheme (`http`/`https`), a host made of letters, digits, `.` and `-` (or a bracketed IPv6
/// literal), an optional port, then a path. Anything a browser might read differently (`\`,
/// `@`, `%` in the authority, spaces) is refused rather than guessed at, so what the checks
/// see is what `fetch` would contact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointUrl {
    /// `http` or `https`, lower case.
    pub scheme: String,
    /// Lower case; an IPv6 literal keeps its brackets (`[::1]`).
    pub host: String,
    /// As written; `None` means the scheme's default.
    pub port: Option<u16>,
    /// What follows the authority up to `?`/`#` (may be empty).
    pub path: String,
    /// Everything after `?` up to `#`, `None` when there is no `?`.
    pub query: Option<String>,
    pub has_fragment: bool,
}

impl EndpointUrl {
    pub fn parse(url: &str) -> Result<EndpointUrl, LlmError> {
        let bad = || LlmError::BadEndpoint(url.to_string());
        let u = url.trim();
        let (scheme, rest) = u.split_once("://").ok_or_else(bad)?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(bad());
        }
        let end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if authority.contains('@') {
            return Err(LlmError::SecretInUrl(format!(
                "the endpoint {url:?} has a user name or password in it (user:pass@host): URLs are kept in the job \
                 and the audit log. Put a key in the API key field; remove the part before @"
            )));
        }
        if tail.starts_with('\\') {
            return Err(bad());
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (inner, after) = v6.split_once(']').ok_or_else(bad)?;
            if inner.is_empty() || !inner.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.') {
                return Err(bad());
            }
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(bad)?),
            };
            (format!("[{}]", inner.to_ascii_lowercase()), port)
        } else {
            match authority.split_once(':') {
                Some((h, p)) => (h.to_ascii_lowercase(), Some(p)),
                None => (authority.to_ascii_lowercase(), None),
            }
        };
        if !host.starts_with('[')
            && (host.is_empty()
                || host.starts_with(['.', '-'])
                || !host.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'))
        {
            return Err(bad());
        }
        let port = match port {
            None => None,
            Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
                Some(p.parse::<u16>().map_err(|_| bad())?)
            }
            Some(_) => return Err(bad()),
        };
        let (before_frag, has_fragment) = match tail.split_once('#') {
            Some((b, _)) => (b, true),
            None => (tail, false),
        };
        let (path, query) = match before_frag.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (before_frag.to_string(), None),
        };
        if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad());
        }
        Ok(EndpointUrl { scheme, host, port, path, query, has_fragment })
    }

    fn default_port(scheme: &str) -> u16 {
        if scheme == "https" { 443 } else { 80 }
    }

    pub fn effective_port(&self) -> u16 {
        self.port.unwrap_or_else(|| Self::default_port(&self.scheme))
    }

    /// `scheme://host[:port]`, the port only when it is not the scheme's default (as a
    /// browser's `URL.origin` writes it).
    pub fn origin(&self) -> String {
        match self.port {
            Some(p) if p != Self::default_port(&self.scheme) => format!("{}://{}:{p}", self.scheme, self.host),
            _ => format!("{}://{}", self.scheme, self.host),
        }
    }

    /// This machine: `localhost` (and `*.localhost`), 127.0.0.0/8 in dotted decimal, `[::1]`.
    pub fn is_loopback(&self) -> bool {
        let h = self.host.as_str();
        if h == "localhost" || h.ends_with(".localhost") || h == "[::1]" || h == "[0:0:0:0:0:0:0:1]" {
            return true;
        }
        let parts: Vec<&str> = h.split('.').collect();
        parts.len() == 4
            && parts[0] == "127"
            && parts.iter().all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
            && parts.iter().all(|p| p.parse::<u16>().is_ok_and(|v| v <= 255))
    }

    /// Does a CSP host-source (`scheme://host[:port|:*]`, host may be `*.example.org`) or
    /// an origin allow this URL? Follows CSP Level 3 "does url match expression": an
    /// `http:` source also allows `https:`, no port means the scheme's default port, `:*`
    /// any port. A source that is not of that form (a keyword, a bare scheme) matches nothing.
    pub fn matches_source(&self, source: &str) -> bool {
        let Some((s_scheme, s_rest)) = source.trim().split_once("://") else { return false };
        let s_scheme = s_scheme.to_ascii_lowercase();
        let scheme_ok = s_scheme == self.scheme || (s_scheme == "http" && self.scheme == "https");
        if !scheme_ok {
            return false;
        }
        let s_rest = s_rest.trim_end_matches('/');
        // Chromium ignores IPv6 literals in a policy ("contains an invalid source").
        if s_rest.starts_with('[') {
            return false;
        }
        let (s_host, s_port) = match s_rest.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (s_rest.to_string(), None),
        };
        let s_host = s_host.to_ascii_lowercase();
        let host_ok = match s_host.strip_prefix("*.") {
            Some(suffix) => self.host.len() > suffix.len() + 1 && self.host.ends_with(&format!(".{suffix}")),
            None => s_host == "*" || s_host == self.host,
        };
        if !host_ok {
            return false;
        }
        let port = self.effective_port();
        match s_port {
            Some("*") => true,
            Some(p) => p.parse::<u16>().is_ok_and(|p| p == port || (p == 80 && port == 443 && self.scheme == "https")),
            None => {
                port == Self::default_port(&self.scheme) || (s_scheme == "http" && self.scheme == "https" && port == 443)
            }
        }
    }
}

impl LlmSettings {
    /// The endpoint, parsed; with the rules that hold whatever the key: no credentials in
    /// the URL, no query or fragment (the request path is appended to the base URL).
    pub fn endpoint_url(&self) -> Result<EndpointUrl, LlmError> {
        let u = EndpointUrl::parse(&self.endpoint)?;
        if let Some(q) = &u.query {
            let secret = q.split('&').filter_map(|kv| kv.split('=').next()).find(|name| {
                let n: String =
                    name.chars().filter(|c| *c != '-' && *c != '_').collect::<String>().to_ascii_lowercase();
                SECRET_PARAMS.contains(&n.as_str()) || n.ends_with("key") || n.ends_with("token") || n.ends_with("secret")
            });
            return Err(LlmError::SecretInUrl(match secret {
                Some(name) => format!(
                    "the endpoint carries a credential in its query ({name}=…): URLs are kept in the job and the audit \
                     log. Remove ?{name}=… and put the key in the API key field"
                ),
                None => "the endpoint must not have a query (?…): give the base URL, e.g. https://host/v1 \
                         (…/chat/completions is appended to it)"
                    .to_string(),
            }));
        }
        if u.has_fragment {
            return Err(LlmError::BadEndpoint(self.endpoint.clone()));
        }
        Ok(u)
    }

    /// The rules for the API key: it goes only in the `authorization` header, so it must not
    /// appear in the endpoint, and it is not sent over plain `http://` except to this machine.
    pub fn check_key(&self, key: &str) -> Result<(), LlmError> {
        let key = key.trim();
        if key.is_empty() {
            return Ok(());
        }
        // Short "keys" (a placeholder like "x") would match any URL by chance.
        if key.len() >= 8 && self.endpoint.to_lowercase().contains(&key.to_lowercase()) {
            return Err(LlmError::SecretInUrl(
                "the API key appears in the endpoint URL: URLs are kept in the job and the audit log. Remove it from the URL; \
                 the API key field is enough"
                    .into(),
            ));
        }
        let u = self.endpoint_url()?;
        if u.scheme == "http" && !u.is_loopback() {
            return Err(LlmError::KeyOverPlainHttp(u.origin()));
        }
        Ok(())
    }

    /// Is the endpoint among `allowed` (CSP host-sources or origins, e.g. the page's own
    /// origin and the list in the page's `dpkps-allowed-endpoints` meta)?
    pub fn check_allowed(&self, allowed: &[String]) -> Result<(), LlmError> {
        let u = self.endpoint_url()?;
        if allowed.iter().any(|s| u.matches_source(s)) {
            return Ok(());
        }
        let list = if allowed.is_empty() { "none".to_string() } else { allowed.join(" ") };
        Err(LlmError::NotAllowed { origin: u.origin(), allowed: list })
    }

    pub fn check(&self) -> Result<(), LlmError> {
        let e = self.endpoint.trim();
        if !(e.starts_with("http://") || e.starts_with("https://")) || e.len() < "http://x".len() {
            return Err(LlmError::BadEndpoint(self.endpoint.clone()));
        }
        self.endpoint_url()?;
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

    /// The synthetic corpus as CSV: text, label, keyphrases ("; "-joined). Cells that a
    /// spreadsheet would run as a formula are neutralised ([`crate::export::csv_cell`]).
    pub fn corpus_csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        let _ = w.write_record(["text", "label", "keyphrases"]);
        for (i, text) in self.rows() {
            let _ = crate::export::write_record(&mut w, [text, i.label.as_deref().unwrap_or(""), &i.keyphrases.join("; ")]);
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }
}

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
    use super::*;

    fn settings() -> LlmSettings {
        LlmSettings { model: "m".into(), ..Default::default() }
    }

    #[test]
    fn a_cors_refusal_names_the_setting_for_the_pages_origin_and_is_not_retried() {
        let file = LlmError::CorsRefused { endpoint: "http://127.0.0.1:11434".into(), page_origin: "null".into() };
        let m = file.to_string();
        assert!(m.contains("opened from a file") && m.contains("OLLAMA_ORIGINS=*") && m.contains(r#"'["null"]'"#), "{m}");
        assert!(!m.contains("OLLAMA_ORIGINS=null"), "Ollama refuses to start with that value: {m}");
        assert!(m.contains("http://127.0.0.1:11434"), "{m}");
        let served = LlmError::CorsRefused { endpoint: "http://h:1".into(), page_origin: "https://intranet.example".into() };
        assert!(served.to_string().contains("OLLAMA_ORIGINS=https://intranet.example"), "{served}");
        assert!(!file.retryable(), "a refused origin does not change between attempts");
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

    fn at(endpoint: &str) -> LlmSettings {
        LlmSettings { endpoint: endpoint.into(), ..settings() }
    }

    #[test]
    fn endpoint_urls_are_parsed_narrowly() {
        let u = EndpointUrl::parse("HTTP://LocalHost:8000/v1").unwrap();
        assert_eq!((u.scheme.as_str(), u.host.as_str(), u.port, u.path.as_str()), ("http", "localhost", Some(8000), "/v1"));
        assert_eq!(u.origin(), "http://localhost:8000");
        assert_eq!(EndpointUrl::parse("https://api.example.org:443/v1").unwrap().origin(), "https://api.example.org");
        let v6 = EndpointUrl::parse("http://[::1]:11434/v1").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("[::1]", Some(11434)));
        for bad in [
            "ftp://x/v1", "http://", "http://:80/v1", "http://host:/v1", "http://host:99999/v1", "http://host:8a/v1",
            "http://ho st/v1", "http://host%2e/v1", "http://127.0.0.1\\@evil.org/v1", "http://[::1/v1", "http://h/v 1",
        ] {
            assert!(EndpointUrl::parse(bad).is_err(), "{bad}");
        }
        for (url, loopback) in [
            ("http://127.0.0.1:8000", true), ("http://127.1.2.3", true), ("http://localhost", true),
            ("http://a.localhost", true), ("http://[::1]:1", true), ("http://127.0.0.1.evil.org", false),
            ("http://128.0.0.1", false), ("http://127.0.0.256", false), ("http://0x7f.0.0.1", false),
            ("http://localhost.evil.org", false), ("http://10.0.0.5", false),
        ] {
            assert_eq!(EndpointUrl::parse(url).unwrap().is_loopback(), loopback, "{url}");
        }
    }

    #[test]
    fn the_api_key_rules() {
        let key = "sk-0123456789abcdef";
        // Loopback over http, and https anywhere, may carry a key.
        for ok in ["http://127.0.0.1:8000/v1", "http://localhost:11434/v1", "http://[::1]:8080/v1", "https://api.example.org/v1"] {
            assert!(at(ok).check().is_ok() && at(ok).check_key(key).is_ok(), "{ok}");
        }
        // Plain http to another host: no key, but without a key it is fine.
        let e = at("http://10.0.0.5:8000/v1").check_key(key).unwrap_err();
        assert!(matches!(e, LlmError::KeyOverPlainHttp(_)) && e.to_string().contains("http://10.0.0.5:8000"), "{e}");
        assert!(at("http://10.0.0.5:8000/v1").check_key("").is_ok());
        assert!(at("http://10.0.0.5:8000/v1").check_key("   ").is_ok());
        // Credentials in the URL are refused whether or not a key is given.
        for (url, word) in [
            ("https://api.example.org/v1?key=abc", "key="), ("https://api.example.org/v1?api_key=abc", "api_key="),
            ("https://api.example.org/v1?x=1&Access-Token=abc", "Access-Token="), ("https://x.org/v1?token=t", "token="),
            ("https://x.org/v1?subscription-key=t", "subscription-key="),
        ] {
            let e = at(url).check().unwrap_err();
            assert!(matches!(e, LlmError::SecretInUrl(_)) && e.to_string().contains(word), "{url}: {e}");
        }
        let e = at("https://user:pass@api.example.org/v1").check().unwrap_err();
        assert!(matches!(e, LlmError::SecretInUrl(_)) && e.to_string().contains("user:pass@"), "{e}");
        assert!(matches!(at("https://x.org/v1?api-version=1").check(), Err(LlmError::SecretInUrl(_))));
        assert!(at("https://x.org/v1#frag").check().is_err());
        // The key itself inside the URL (path or host), any case.
        let e = at(&format!("https://x.org/{}/v1", key.to_uppercase())).check_key(key).unwrap_err();
        assert!(matches!(e, LlmError::SecretInUrl(_)), "{e}");
        assert!(at("https://x.org/v1").check_key("x").is_ok(), "a one-letter placeholder is not looked for");
    }

    #[test]
    fn endpoints_are_matched_against_the_pages_allowlist() {
        let loopback: Vec<String> = ["http://127.0.0.1:*", "http://localhost:*"].map(String::from).to_vec();
        for ok in ["http://127.0.0.1:8000/v1", "http://localhost/v1", "https://127.0.0.1:8443/v1"] {
            assert!(at(ok).check_allowed(&loopback).is_ok(), "{ok}");
        }
        // Chromium refuses IPv6 literals in a policy, so a listed one allows nothing.
        assert!(at("http://[::1]:1234/v1").check_allowed(&["http://[::1]:*".into()]).is_err());
        for no in ["http://127.0.0.2:8000/v1", "https://api.example.org/v1", "http://localhost.example.org/v1", "http://[::1]:8000/v1"] {
            let e = at(no).check_allowed(&loopback).unwrap_err();
            assert!(matches!(e, LlmError::NotAllowed { .. }) && e.to_string().contains("allowed-endpoints.txt"), "{e}");
        }
        let e = at("http://127.0.0.2:8000/v1").check_allowed(&loopback).unwrap_err().to_string();
        assert!(e.contains("http://127.0.0.2:8000") && e.contains("http://127.0.0.1:*"), "{e}");
        let site: Vec<String> = vec!["https://llm.example.org".into(), "https://*.corp.example".into(), "http://10.0.0.5:8000".into()];
        assert!(at("https://llm.example.org/v1").check_allowed(&site).is_ok());
        assert!(at("https://llm.example.org:443/v1").check_allowed(&site).is_ok());
        assert!(at("https://llm.example.org:8443/v1").check_allowed(&site).is_err());
        assert!(at("http://llm.example.org/v1").check_allowed(&site).is_err(), "https: does not allow http:");
        assert!(at("https://a.b.corp.example/v1").check_allowed(&site).is_ok());
        assert!(at("https://corp.example/v1").check_allowed(&site).is_err(), "*. needs a subdomain");
        assert!(at("http://10.0.0.5:8000/v1").check_allowed(&site).is_ok());
        assert!(at("http://10.0.0.5:8001/v1").check_allowed(&site).is_err());
        // The page's own origin (no port: the default one).
        assert!(at("http://intranet.example/v1").check_allowed(&["http://intranet.example".into()]).is_ok());
        assert!(at("http://127.0.0.1/v1").check_allowed(&[]).is_err());
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
        assert!(csv.starts_with("text,label,keyphrases\n\"B, \"\"quoted\"\"\",b,z\n"), "{csv}");
        assert!(job.estimated_tokens() > 0);
    }

    #[test]
    fn corpus_csv_neutralises_formula_cells() {
        let seqs = vec![SequenceOut { label: Some("=HYPERLINK(\"http://x\",\"y\")".into()), keyphrases: vec!["-x".into(), "y".into()] }];
        let mut job = Job::new("j".into(), "t".into(), settings(), PromptSettings::default(), &seqs, "{}".into());
        job.outcomes.insert(0, Outcome::Done { text: "+1 said the note".into(), attempts: 1 });
        let csv = job.corpus_csv();
        assert_eq!(csv, "text,label,keyphrases\n'+1 said the note,\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",'-x; y\n");
        // The JSONL carries the exact text.
        assert!(job.corpus_jsonl().contains("\"text\":\"+1 said the note\""));
    }

    #[test]
    fn outcomes_of_another_job_are_never_mixed_in() {
        let seqs = vec![
            SequenceOut { label: None, keyphrases: vec!["x".into()] },
            SequenceOut { label: None, keyphrases: vec!["y".into()] },
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
