//! The endpoint URL as the checks read it: a deliberately narrow parser, the origin, loopback
//! detection and CSP host-source matching.
//!
//! Kept apart from [`super::LlmSettings`] because it is pure string logic with its own edge
//! cases (IPv6 literals, default ports, `*.` wildcards); the rules that use it (no credentials
//! in the URL, no key over plain http, the page's allowlist) are the settings' checks.

use super::error::LlmError;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
