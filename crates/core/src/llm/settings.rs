//! Where and how to call the model ([`LlmSettings`]), and the checks that run before any
//! request: sane values, and the endpoint policy (no credentials in the URL, the API key never
//! over plain http except to this machine, only endpoints the page's CSP allows).
//!
//! The endpoint checks are methods of the settings, not of [`EndpointUrl`], because some read
//! the endpoint as the user typed it (the key is looked for in the raw string) and `check`
//! runs them with the other fields. What a request looks like is in `request.rs`.

use serde::{Deserialize, Serialize};

use super::endpoint::EndpointUrl;
use super::error::LlmError;

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
    /// OpenAI's `frequency_penalty` (−2…2): lowers a token's odds by how often it already
    /// appears in the reply. 0.5 by default: with it a small local model looped in 15% of its
    /// documents instead of 35% (docs/llm.md, “What the local model writes”). Not sent when 0,
    /// for servers that refuse the field.
    #[serde(default = "default_frequency_penalty")]
    pub frequency_penalty: f64,
    /// Check each reply ([`super::check_reply`]) and ask once more when it is not prose that
    /// uses its keyphrases; the better of the two is kept.
    #[serde(default = "default_check_replies")]
    pub check_replies: bool,
}

fn default_frequency_penalty() -> f64 {
    0.5
}

fn default_check_replies() -> bool {
    true
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
            frequency_penalty: default_frequency_penalty(),
            check_replies: default_check_replies(),
        }
    }
}

/// Query parameter names that carry credentials (compared without case, `-`/`_`).
const SECRET_PARAMS: &[&str] = &[
    "key", "apikey", "apitoken", "token", "accesstoken", "authtoken", "auth", "authorization", "bearer", "secret",
    "clientsecret", "password", "passwd", "pwd", "sig", "signature", "code", "session", "sessionid", "credential",
    "credentials", "jwt",
];

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
        if !(-2.0..=2.0).contains(&self.frequency_penalty) {
            return bad("frequency penalty", self.frequency_penalty.to_string(), "must be between -2 and 2");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> LlmSettings {
        LlmSettings { model: "m".into(), ..Default::default() }
    }

    #[test]
    fn checks() {
        let s = settings();
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
}
