//! What can go wrong with a request, and which of it is worth another attempt.
//!
//! One error type for the whole step (settings, endpoint checks, transport, replies) because
//! the browser shows each as one line and the retry loop only asks [`LlmError::retryable`].
//! `retryable` sits beside the variants it classifies so that a new variant is classified
//! where it is added. The CORS advice is the text of [`LlmError::CorsRefused`], so it lives
//! here too rather than with the endpoint parser (which returns this type).

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
