//! The UI thread's handle on the Web Worker (`dpkps-worker`, built by trunk next to the app).
//!
//! Requests go out as `[json, ...files]`; events come back as JSON. Requests made before the
//! worker has loaded its wasm are queued: a worker drops messages that arrive before its
//! handler is installed. Cancelling the read stage terminates the worker and starts a new one
//! (see `crate::worker` for why); so does a crash of the worker (an `error` event: a panic, out
//! of memory), after which the page is told to load the corpus again.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{File, MessageEvent, Worker};

use dpkps_core::protocol::{Event, LedgerEvent, Request};

/// Written by trunk for `data-type="worker" data-loader-shim` (index.html); the single file
/// starts the worker from in-page sources instead (`dpkps_inpage`).
const WORKER_URL: &str = "./dpkps-worker_loader.js";

type Handler = Rc<dyn Fn(Event)>;
type LedgerHandler = Rc<dyn Fn(LedgerEvent)>;

#[derive(Default)]
struct Engine {
    worker: Option<Worker>,
    ready: bool,
    pending: Vec<js_sys::Array>,
    handler: Option<Handler>,
    ledger_handler: Option<LedgerHandler>,
    _onmessage: Option<Closure<dyn FnMut(MessageEvent)>>,
    _onerror: Option<Closure<dyn FnMut(web_sys::Event)>>,
}

thread_local! {
    static ENGINE: RefCell<Engine> = RefCell::default();
}

/// Starts the worker; `on_event` receives every event (on the UI thread).
pub fn start(on_event: impl Fn(Event) + 'static) {
    ENGINE.with(|e| e.borrow_mut().handler = Some(Rc::new(on_event)));
    spawn();
}

/// Receives the worker's ledger answers (`dpkps_core::protocol::LedgerEvent`), which are kept apart
/// from the job's events.
pub fn on_ledger(f: impl Fn(LedgerEvent) + 'static) {
    ENGINE.with(|e| e.borrow_mut().ledger_handler = Some(Rc::new(f)));
}

fn deliver(ev: Event) {
    let handler = ENGINE.with(|e| e.borrow().handler.clone());
    if let Some(h) = handler {
        h(ev);
    }
}

fn spawn() {
    let worker = match dpkps_inpage::start_worker(WORKER_URL) {
        Ok(w) => w,
        Err(e) => {
            deliver(Event::Failed { stage: None, message: format!("the background worker could not start: {e:?}") });
            return;
        }
    };
    let onmessage = Closure::<dyn FnMut(MessageEvent)>::new(|msg: MessageEvent| {
        let Some(text) = msg.data().as_string() else { return };
        match serde_json::from_str::<Event>(&text) {
            Ok(Event::Ready) => {
                let (worker, pending) = ENGINE.with(|e| {
                    let mut e = e.borrow_mut();
                    e.ready = true;
                    (e.worker.clone(), std::mem::take(&mut e.pending))
                });
                if let Some(w) = worker {
                    for m in pending {
                        let _ = w.post_message(&m);
                    }
                }
                deliver(Event::Ready);
            }
            Ok(ev) => deliver(ev),
            Err(e) => match serde_json::from_str::<LedgerEvent>(&text) {
                Ok(ev) => {
                    if let Some(h) = ENGINE.with(|e| e.borrow().ledger_handler.clone()) {
                        h(ev);
                    }
                }
                Err(_) => deliver(Event::Failed { stage: None, message: format!("unreadable message from the worker: {e}") }),
            },
        }
    });
    // An uncaught error in the worker is an ErrorEvent; a worker script that cannot be loaded
    // gives a plain Event, without the message ErrorEvent's getter expects: read it if it is there.
    let onerror = Closure::<dyn FnMut(web_sys::Event)>::new(|e: web_sys::Event| {
        e.prevent_default();
        let message = js_sys::Reflect::get(&e, &JsValue::from_str("message")).ok().and_then(|m| m.as_string());
        crashed(&message.unwrap_or_else(|| "its script could not be loaded".to_string()));
    });
    worker.set_onmessage(Some(onmessage.as_ref().unchecked_ref()));
    worker.set_onerror(Some(onerror.as_ref().unchecked_ref()));
    ENGINE.with(|e| {
        let mut e = e.borrow_mut();
        e.worker = Some(worker);
        e.ready = false;
        e._onmessage = Some(onmessage);
        e._onerror = Some(onerror);
    });
}

/// Sends a request with its files (in the order the request lists them).
pub fn send(req: &Request, files: &[File]) {
    let json = match serde_json::to_string(req) {
        Ok(j) => j,
        Err(e) => return deliver(Event::Failed { stage: None, message: format!("internal: {e}") }),
    };
    let msg = js_sys::Array::new();
    msg.push(&JsValue::from_str(&json));
    for f in files {
        msg.push(f);
    }
    let worker = ENGINE.with(|e| {
        let mut e = e.borrow_mut();
        if e.ready {
            e.worker.clone()
        } else {
            e.pending.push(msg.clone());
            None
        }
    });
    if let Some(w) = worker {
        if let Err(err) = w.post_message(&msg) {
            deliver(Event::Failed { stage: None, message: format!("could not reach the background worker: {err:?}") });
        }
    }
}

/// The worker died (an uncaught error: a Rust panic, out of memory): its state is gone and it
/// may still hold its busy flag, so it is replaced by a fresh one, and the page is told why and
/// what to do (the job's `Failed` clears the page's busy state). A worker that fails before it
/// was ever ready is not restarted (it would fail again): the page is asked to be reloaded.
fn crashed(what: &str) {
    let what = what.to_string();
    let was_ready = ENGINE.with(|e| {
        let mut e = e.borrow_mut();
        e.pending.clear();
        e.ready
    });
    let what = if what.trim().is_empty() { "an error".to_string() } else { what.trim().to_string() };
    if !was_ready {
        if let Some(w) = ENGINE.with(|e| e.borrow_mut().worker.take()) {
            w.terminate();
        }
        return deliver(Event::Failed { stage: None, message: format!("the background worker could not start ({what}); reload the page") });
    }
    // Not from inside this handler: restarting drops the closure that is running.
    wasm_bindgen_futures::spawn_local(async move {
        restart();
        deliver(Event::Failed {
        stage: None,
        message: format!(
            "The background worker stopped ({what}), perhaps out of memory, and was restarted. What it held is gone: \
             load the corpus again (and your own model, if you chose one). The privacy ledger is kept."
            ),
        });
    });
}

/// Stops whatever the worker is doing at once and starts a fresh one. Its memory (the loaded
/// corpus, the model) is gone; the caller reloads what it needs.
pub fn restart() {
    if let Some(w) = ENGINE.with(|e| e.borrow_mut().worker.take()) {
        w.terminate();
    }
    spawn();
}
