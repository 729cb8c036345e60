//! HTTP for the LLM step: one exchange with a timeout, abortable by Stop; the waits between
//! retries, also ended by Stop; and, for a request that got no reply, a diagnosis (server down
//! or CORS refusal). Stop is one flag for the tab: [`stop_all`] sets it, aborts what is in
//! flight and wakes the waits; [`clear_stop`] clears it before a generation starts.
//!
//! What an endpoint can make the page do is bounded here, as the CLI's transport bounds it:
//! - no redirect is followed (`redirect: "manual"`): the prompts and the key go only to the
//!   endpoint named, never on to another origin the page's policy allows (its own included);
//!   a redirect is [`LlmError::Redirected`]. (A redirect without CORS headers reaches the page
//!   as a failed request, diagnosed like any other: see [`diagnose`].)
//! - the body is read chunk by chunk up to a cap and no further ([`LlmError::ReplyTooLong`]):
//!   `response.text()` would hold whatever the server sends, up to 64 requests at once;
//! - a Retry-After is read as seconds or as an HTTP date (`dpkps_core::llm::retry_after_s`).

use std::cell::{Cell, RefCell};

use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use dpkps_core::llm::LlmError;

use super::js_error;

thread_local! {
    static STOP: Cell<bool> = const { Cell::new(false) };
    /// The requests in flight, aborted by Stop.
    static INFLIGHT: RefCell<Vec<web_sys::AbortController>> = const { RefCell::new(Vec::new()) };
    /// The retry waits under way (each one's promise resolver), ended at once by Stop: a
    /// Retry-After can ask for a minute, and Stop must not wait it out.
    static WAITING: RefCell<Vec<js_sys::Function>> = const { RefCell::new(Vec::new()) };
}

/// Whether Stop was pressed since the last [`clear_stop`].
pub fn stopped() -> bool {
    STOP.get()
}

/// Clears Stop (a generation starts).
pub fn clear_stop() {
    STOP.set(false);
}

/// Stop: no new request, and the ones in flight are aborted; retry waits end at once.
pub fn stop_all() {
    STOP.set(true);
    for c in INFLIGHT.with(|f| std::mem::take(&mut *f.borrow_mut())) {
        c.abort();
    }
    for wake in WAITING.with(|w| std::mem::take(&mut *w.borrow_mut())) {
        let _ = wake.call0(&JsValue::NULL);
    }
}

/// Waits `ms` before a retry, or until Stop, whichever comes first. One timer, whose resolver
/// Stop also calls (see [`WAITING`]); the timer is cleared either way, so nothing is left
/// behind. One timer rather than short slices that look at `STOP`: Chromium throttles chained
/// timers in a background tab, where a long job is likely to run.
pub async fn retry_wait(ms: f64) {
    if STOP.get() {
        return;
    }
    let Some(window) = web_sys::window() else { return };
    let mut resolver: Option<js_sys::Function> = None;
    let waited = js_sys::Promise::new(&mut |resolve, _| resolver = Some(resolve));
    let Some(wake) = resolver else { return };
    let Ok(timer) = window.set_timeout_with_callback_and_timeout_and_arguments_0(&wake, ms as i32) else { return };
    WAITING.with(|w| w.borrow_mut().push(wake.clone()));
    let _ = JsFuture::from(waited).await;
    window.clear_timeout_with_handle(timer);
    WAITING.with(|w| w.borrow_mut().retain(|f| f != &wake));
}

/// One HTTP exchange with a timeout: (status, body, Retry-After seconds), the body read up to
/// `max_bytes`. A redirect is not followed.
pub async fn http(
    url: &str,
    method: &str,
    body: Option<&str>,
    key: &str,
    timeout_s: f64,
    max_bytes: usize,
) -> Result<(u16, String, Option<f64>), LlmError> {
    let window = web_sys::window().ok_or_else(|| LlmError::Network("no window".into()))?;
    let ctrl = web_sys::AbortController::new().map_err(|e| LlmError::Network(js_error(&e)))?;
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    let headers = web_sys::Headers::new().map_err(|e| LlmError::Network(js_error(&e)))?;
    if let Some(b) = body {
        let _ = headers.set("content-type", "application/json");
        init.set_body(&JsValue::from_str(b));
    }
    if !key.trim().is_empty() {
        let _ = headers.set("authorization", &format!("Bearer {}", key.trim()));
    }
    init.set_headers(&headers);
    init.set_signal(Some(&ctrl.signal()));
    init.set_redirect(web_sys::RequestRedirect::Manual);
    INFLIGHT.with(|f| f.borrow_mut().push(ctrl.clone()));
    let abort = {
        let ctrl = ctrl.clone();
        wasm_bindgen::closure::Closure::once_into_js(move || ctrl.abort())
    };
    let timer = window
        .set_timeout_with_callback_and_timeout_and_arguments_0(abort.unchecked_ref(), (timeout_s * 1000.0) as i32)
        .unwrap_or(0);
    let outcome = async {
        let resp = JsFuture::from(window.fetch_with_str_and_init(url, &init)).await?;
        let resp: web_sys::Response = resp.dyn_into()?;
        // What `manual` gives for a 3xx: no status, no headers, nothing followed.
        if resp.type_() == web_sys::ResponseType::Opaqueredirect {
            return Ok(Err(LlmError::Redirected { status: None, location: None }));
        }
        let now_s = js_sys::Date::now() / 1000.0;
        let retry_after = resp.headers().get("retry-after").ok().flatten().and_then(|v| dpkps_core::llm::retry_after_s(&v, now_s));
        let Some(text) = read_capped(&resp, max_bytes, &ctrl).await? else {
            return Ok(Err(LlmError::ReplyTooLong { cap: max_bytes }));
        };
        Ok::<_, JsValue>(Ok((resp.status(), text, retry_after)))
    }
    .await;
    window.clear_timeout_with_handle(timer);
    INFLIGHT.with(|f| f.borrow_mut().retain(|c| c != &ctrl));
    match outcome {
        Ok(v) => v,
        Err(_) if ctrl.signal().aborted() && STOP.get() => Err(LlmError::Network("stopped".into())),
        Err(_) if ctrl.signal().aborted() => Err(LlmError::Timeout(timeout_s)),
        Err(e) => Err(diagnose(&window, url, js_error(&e)).await),
    }
}

/// The body of `resp` as text (invalid UTF-8 replaced, as `response.text()` does), read chunk
/// by chunk; `None` once it runs past `max_bytes`: the request is aborted there, so the rest is
/// never received. A declared length over the cap is refused before a byte is read.
async fn read_capped(resp: &web_sys::Response, max_bytes: usize, ctrl: &web_sys::AbortController) -> Result<Option<String>, JsValue> {
    let declared = resp.headers().get("content-length").ok().flatten().and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max_bytes as u64) {
        ctrl.abort();
        return Ok(None);
    }
    let Some(stream) = resp.body() else { return Ok(Some(String::new())) };
    let reader: web_sys::ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    let mut bytes: Vec<u8> = Vec::new();
    loop {
        let chunk: web_sys::ReadableStreamReadResult = JsFuture::from(reader.read()).await?.unchecked_into();
        if chunk.get_done().unwrap_or(false) {
            break;
        }
        let part = js_sys::Uint8Array::new(&chunk.get_value());
        let (start, len) = (bytes.len(), part.length() as usize);
        if start + len > max_bytes {
            ctrl.abort();
            return Ok(None);
        }
        bytes.resize(start + len, 0);
        part.copy_to(&mut bytes[start..]);
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// Why a request failed without a reply. The browser says only "Failed to fetch", for a server
/// that is down and for one that refused the page's origin (CORS) alike. An opaque GET
/// (`mode: no-cors`: no body, no key, nothing readable) to the same URL tells them apart: it
/// succeeds whenever the server answers at all. It goes to the endpoint the curator configured,
/// which the page's policy already allows; nothing else is contacted.
async fn diagnose(window: &web_sys::Window, url: &str, error: String) -> LlmError {
    let endpoint = web_sys::Url::new(url).map(|u| u.origin()).unwrap_or_else(|_| url.to_string());
    let init = web_sys::RequestInit::new();
    init.set_method("GET");
    // `no-cors` requires `redirect: "follow"` (the browser refuses the request otherwise): the
    // probe carries no body and no key, and its answer is unreadable, so a redirect it follows
    // takes nothing of the job's anywhere.
    init.set_mode(web_sys::RequestMode::NoCors);
    let probe = async {
        let ctrl = web_sys::AbortController::new().ok()?;
        init.set_signal(Some(&ctrl.signal()));
        let abort = wasm_bindgen::closure::Closure::once_into_js(move || ctrl.abort());
        let timer = window.set_timeout_with_callback_and_timeout_and_arguments_0(abort.unchecked_ref(), 5_000).ok()?;
        let answered = JsFuture::from(window.fetch_with_str_and_init(url, &init)).await.is_ok();
        window.clear_timeout_with_handle(timer);
        Some(answered)
    };
    match probe.await {
        Some(true) => {
            let page_origin = window.location().origin().unwrap_or_else(|_| "null".into());
            LlmError::CorsRefused { endpoint, page_origin }
        }
        _ => LlmError::Network(format!(
            "{error}: nothing answered at {endpoint}. Check that the server is running and that the address and port are right"
        )),
    }
}
