//! The CLI's transport for the LLM step: one HTTP(S) exchange with `ureq` (rustls), run on a
//! thread of its own so that the runner's lanes (futures on the command's one thread,
//! `dpkps_core::llm::generate`) keep `concurrency` requests in flight; and the wait before a retry,
//! likewise on a thread, ended early when the job halts.
//!
//! What it sends is what the page's `fetch` sends: `POST` of the JSON body with
//! `content-type: application/json` and, when there is a key, `authorization: Bearer KEY`.
//! As on the page:
//! - redirects are not followed: a 3xx is [`LlmError::Redirected`] (not retried), since the
//!   prompts and the key must reach only the endpoint named;
//! - the body is read up to the job's reply cap and no further ([`LlmError::ReplyTooLong`]);
//! - a Retry-After is read as seconds or as an HTTP date ([`dpkps_core::llm::retry_after_s`]).
//!
//! Proxies are taken from the environment (`HTTPS_PROXY`, `NO_PROXY`, …) as other
//! command-line tools do, except for an endpoint on this machine: the key may go to one over
//! plain `http://` (`LlmSettings::check_key`), which a proxy would carry off the machine in
//! clear, so such a request never goes through a proxy.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::channel::oneshot;

use dpkps_core::llm::{LlmError, Reply};

/// An HTTP client with the job's timeout, its reply cap and the API key (kept here only, in
/// memory).
pub(super) struct HttpClient {
    agent: ureq::Agent,
    key: Option<String>,
    max_bytes: usize,
}

impl HttpClient {
    /// `max_bytes`: the most read of one reply (`LlmSettings::reply_cap`); `loopback`: the
    /// endpoint is on this machine (no proxy then).
    pub(super) fn new(key: Option<String>, timeout_s: f64, max_bytes: usize, loopback: bool) -> HttpClient {
        let mut config = ureq::Agent::config_builder();
        if loopback {
            config = config.proxy(None);
        }
        let config = config
            .timeout_global(Some(Duration::from_secs_f64(timeout_s)))
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("dpkps/", env!("CARGO_PKG_VERSION")))
            .build();
        HttpClient { agent: ureq::Agent::new_with_config(config), key, max_bytes }
    }

    /// `POST` of `body` to `url`, on a thread of its own; the future ends with its answer.
    pub(super) async fn post(&self, url: &str, body: &str, timeout_s: f64) -> Result<Reply, LlmError> {
        let (tx, rx) = oneshot::channel();
        let (agent, url, body, key, max_bytes) = (self.agent.clone(), url.to_string(), body.to_string(), self.key.clone(), self.max_bytes);
        std::thread::Builder::new()
            .name("dpkps-llm-request".into())
            .spawn(move || {
                let _ = tx.send(exchange(&agent, &url, &body, key.as_deref(), timeout_s, max_bytes));
            })
            .map_err(|e| LlmError::Network(format!("could not start a request: {e}")))?;
        rx.await.unwrap_or_else(|_| Err(LlmError::Network("the request ended without an answer".into())))
    }
}

/// One exchange, blocking: the status, the body and the Retry-After (in seconds) of any
/// answer but a redirect; no answer is an error.
fn exchange(agent: &ureq::Agent, url: &str, body: &str, key: Option<&str>, timeout_s: f64, max_bytes: usize) -> Result<Reply, LlmError> {
    let mut request = agent.post(url).header("content-type", "application/json");
    if let Some(k) = key {
        request = request.header("authorization", format!("Bearer {k}"));
    }
    let mut response = request.send(body).map_err(|e| no_answer(e, url, timeout_s))?;
    let status = response.status().as_u16();
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    // `max_redirects(0)`: ureq hands the redirect back as it is; it goes no further.
    if (300..400).contains(&status) && status != 304 {
        return Err(LlmError::Redirected { status: Some(status), location: header("location") });
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let retry_after_s = header("retry-after").and_then(|v| dpkps_core::llm::retry_after_s(&v, now));
    let body = response.body_mut().with_config().limit(max_bytes as u64).read_to_string().map_err(|e| match e {
        ureq::Error::BodyExceedsLimit(_) => LlmError::ReplyTooLong { cap: max_bytes },
        e => no_answer(e, url, timeout_s),
    })?;
    Ok(Reply { status, body, retry_after_s })
}

/// Why there is no answer, in the words the page uses.
fn no_answer(e: ureq::Error, url: &str, timeout_s: f64) -> LlmError {
    use std::io::ErrorKind;
    match e {
        ureq::Error::Timeout(_) => LlmError::Timeout(timeout_s),
        ureq::Error::Io(io) if matches!(io.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock) => LlmError::Timeout(timeout_s),
        ureq::Error::Io(io) if matches!(io.kind(), ErrorKind::ConnectionRefused | ErrorKind::NotFound) => unreachable_server(&io.to_string(), url),
        e @ (ureq::Error::HostNotFound | ureq::Error::ConnectionFailed) => unreachable_server(&e.to_string(), url),
        e => LlmError::Network(e.to_string()),
    }
}

fn unreachable_server(error: &str, url: &str) -> LlmError {
    LlmError::Network(format!(
        "{error}: nothing answered at {url}. Check that the server is running and that the address and port are right"
    ))
}

/// Waits `ms` milliseconds before a retry, on a thread of its own (the lanes go on), or until
/// `stop` is set.
pub(super) async fn sleep(ms: f64, stop: Arc<AtomicBool>) {
    let (tx, rx) = oneshot::channel::<()>();
    let wait = Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 3600.0));
    let started = std::thread::Builder::new().name("dpkps-llm-wait".into()).spawn(move || {
        let end = Instant::now() + wait;
        while !stop.load(Ordering::Relaxed) {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            std::thread::sleep(left.min(Duration::from_millis(50)));
        }
        let _ = tx.send(());
    });
    match started {
        Ok(_) => {
            let _ = rx.await;
        }
        // No thread for the wait: wait here (the other lanes wait with it).
        Err(_) => std::thread::sleep(wait),
    }
}
