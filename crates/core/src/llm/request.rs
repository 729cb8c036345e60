//! One request and its reply: the URLs called, the JSON body sent, and the text read back.
//!
//! Privacy: the body holds the messages of [`crate::llm::prompt`] and the model settings, nothing
//! else (no key: it travels in the `authorization` header, set by the transport). Reading a
//! reply is separate from the transport (`fetch` in `ui/io/fetch.rs`) so it is tested natively.

use crate::llm::prompt::Message;

use super::error::LlmError;
use super::settings::LlmSettings;

impl LlmSettings {
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

    /// The most bytes read of one chat-completion reply: 64 per token asked for (JSON escapes,
    /// the reply's other fields), at least [`REPLY_CAP_MIN`]. `max_tokens` is a request the
    /// server may ignore; past this the transport stops reading ([`LlmError::ReplyTooLong`]).
    pub fn reply_cap(&self) -> usize {
        (64 * self.max_tokens as usize).max(REPLY_CAP_MIN)
    }

    /// The JSON body of one request.
    pub fn body(&self, messages: &[Message]) -> String {
        let mut body = serde_json::json!({
            "model": self.model.trim(),
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stream": false,
        });
        if self.frequency_penalty != 0.0 {
            body["frequency_penalty"] = self.frequency_penalty.into();
        }
        body.to_string()
    }
}

/// The least [`LlmSettings::reply_cap`] is: 1 MiB.
pub const REPLY_CAP_MIN: usize = 1 << 20;
/// The most bytes read of the `…/models` list ("Test connection"): a hosted API lists hundreds.
pub const MODELS_REPLY_CAP: usize = 4 << 20;

/// `reply` if its body is within `cap` bytes, else [`LlmError::ReplyTooLong`]: the runner's
/// own check, whatever the transport read.
pub fn within_cap(reply: super::Reply, cap: usize) -> Result<super::Reply, LlmError> {
    if reply.body.len() > cap {
        return Err(LlmError::ReplyTooLong { cap });
    }
    Ok(reply)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> LlmSettings {
        LlmSettings { model: "m".into(), ..Default::default() }
    }

    #[test]
    fn urls() {
        let s = settings();
        assert_eq!(s.completions_url(), "http://127.0.0.1:8000/v1/chat/completions");
        assert_eq!(s.models_url(), "http://127.0.0.1:8000/v1/models");
        let full = LlmSettings { endpoint: "https://x.org/v1/chat/completions/".into(), ..settings() };
        assert_eq!(full.completions_url(), "https://x.org/v1/chat/completions");
    }

    #[test]
    fn the_frequency_penalty_is_sent_unless_zero() {
        let body = |s: &LlmSettings| serde_json::from_str::<serde_json::Value>(&s.body(&[])).unwrap();
        assert_eq!(body(&settings())["frequency_penalty"], 0.5);
        let off = LlmSettings { frequency_penalty: 0.0, ..settings() };
        assert!(body(&off).get("frequency_penalty").is_none());
        // Settings saved before the field existed read with the defaults.
        let mut v = serde_json::to_value(settings()).unwrap();
        v.as_object_mut().unwrap().retain(|k, _| k != "frequency_penalty" && k != "check_replies");
        let old: LlmSettings = serde_json::from_value(v).unwrap();
        assert_eq!((old.frequency_penalty, old.check_replies), (0.5, true));
        assert!(LlmSettings { frequency_penalty: 2.5, ..settings() }.check().is_err());
    }

    #[test]
    fn the_reply_cap_follows_max_tokens_from_one_mib() {
        assert_eq!(settings().reply_cap(), 1 << 20);
        assert_eq!(LlmSettings { max_tokens: 32_768, ..settings() }.reply_cap(), 2 << 20);
        let reply = |n: usize| super::super::Reply { status: 200, body: "x".repeat(n), retry_after_s: None };
        assert!(within_cap(reply(10), 10).is_ok());
        assert_eq!(within_cap(reply(11), 10).unwrap_err(), LlmError::ReplyTooLong { cap: 10 });
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
}
