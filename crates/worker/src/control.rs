//! What every long job of this worker shares: how it reports to the page ([`post`],
//! [`progress`]), how it lets a `Cancel` in and stops ([`checkpoint`], [`sleep`], [`CANCEL`]),
//! and how it ends early ([`Stop`], [`at`]). A leaf: it imports nothing else of the worker, so
//! the jobs, the helpers' drivers and the message loop can all use it without a cycle.

use std::cell::Cell;
use std::fmt::Display;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::DedicatedWorkerGlobalScope;

use dpkps_core::protocol::{Event, Stage};

thread_local! {
    /// Set by a `Cancel` message; the running job stops at its next [`checkpoint`].
    pub static CANCEL: Cell<bool> = const { Cell::new(false) };
    /// A job is running (a second one is refused; the idle-time pass stops for it).
    pub static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// Why a job ended early.
pub enum Stop {
    Cancelled,
    Failed(Option<Stage>, String),
}

pub fn at<E: Display>(stage: Stage) -> impl Fn(E) -> Stop {
    move |e| Stop::Failed(Some(stage), e.to_string())
}

pub fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

pub fn post(ev: &Event) {
    let json = serde_json::to_string(ev)
        .unwrap_or_else(|e| format!(r#"{{"kind":"failed","stage":null,"message":"internal: {e}"}}"#));
    let _ = scope().post_message(&JsValue::from_str(&json));
}

pub fn progress(stage: Stage, done: u64, total: u64) {
    post(&Event::Progress { stage, done, total });
}

pub fn now_ms() -> f64 {
    js_sys::Date::now()
}

pub fn seconds_since(t0: f64) -> f64 {
    (now_ms() - t0) / 1000.0
}

pub fn iso_now() -> String {
    js_sys::Date::new_0().to_iso_string().as_string().unwrap_or_default()
}

/// Lets the event loop run for at least `ms` milliseconds (messages are handled meanwhile).
pub async fn sleep(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        let _ = scope().set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
    });
    let _ = JsFuture::from(p).await;
}

/// Lets the event loop run (so `Cancel` can arrive) at most every 40 ms; stops if cancelled.
pub async fn checkpoint(last_yield: &mut f64) -> Result<(), Stop> {
    if now_ms() - *last_yield >= 40.0 {
        sleep(0).await;
        *last_yield = now_ms();
    }
    if CANCEL.get() {
        Err(Stop::Cancelled)
    } else {
        Ok(())
    }
}
