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
    /// The reply ran past the most read of one ([`super::LlmSettings::reply_cap`]): reading
    /// stopped there. `max_tokens` is only a request to the server; one that sends this much
    /// (up to 64 requests at once) would fill the tab's memory and the browser's storage.
    #[error(
        "the reply is longer than {}, the most read of one reply here, so it was not read further; \
         a server that sends this much is misconfigured (or not a chat-completions server), and asking again would not help",
        mib(*.cap)
    )]
    ReplyTooLong { cap: usize },
    /// The endpoint answered with a redirect, which is not followed: the prompts and the key
    /// go to the endpoint named and nowhere else (a redirect could send them to any other
    /// origin the page may reach, its own included).
    #[error(
        "the endpoint answered with a redirect{}, which is not followed: the prompts and the API key go only to \
         the endpoint you named. If you trust where it points, give that address as the endpoint",
        redirect_target(*.status, .location.as_deref())
    )]
    Redirected { status: Option<u16>, location: Option<String> },
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

/// `bytes` as MiB, in words ("1 MiB", "1.5 MiB").
fn mib(bytes: usize) -> String {
    let text = format!("{:.1}", bytes as f64 / f64::from(1u32 << 20));
    format!("{} MiB", text.trim_end_matches(".0"))
}

/// " (HTTP 307 to https://…)" as far as it is known (a browser shows neither).
fn redirect_target(status: Option<u16>, location: Option<&str>) -> String {
    let location: Option<String> = location.map(|l| l.chars().take(200).collect());
    match (status, location) {
        (Some(s), Some(l)) => format!(" (HTTP {s} to {l})"),
        (Some(s), None) => format!(" (HTTP {s})"),
        (None, Some(l)) => format!(" (to {l})"),
        (None, None) => String::new(),
    }
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
    /// replies (often a proxy's error page). Other 4xx (bad key, unknown model), an over-long
    /// reply and a redirect are not: the same request would get the same answer.
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

    #[test]
    fn an_over_long_reply_and_a_redirect_are_said_plainly_and_not_retried() {
        let long = LlmError::ReplyTooLong { cap: 3 << 19 };
        assert!(!long.retryable());
        assert!(long.to_string().starts_with("the reply is longer than 1.5 MiB, the most read of one reply here"), "{long}");
        let r = LlmError::Redirected { status: Some(307), location: Some("https://elsewhere.example/v1".into()) };
        assert!(!r.retryable());
        assert!(r.to_string().starts_with("the endpoint answered with a redirect (HTTP 307 to https://elsewhere.example/v1), which is not followed"), "{r}");
        let browser = LlmError::Redirected { status: None, location: None }.to_string();
        assert!(browser.starts_with("the endpoint answered with a redirect, which is not followed"), "{browser}");
    }
}
