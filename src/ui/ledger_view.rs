//! The budget account, the ledger's export and import, the browser's storage persistence, and
//! the utility check on a separate tuning file.
//!
//! The ledger itself lives in the worker's IndexedDB (`crate::worker`); this module only asks
//! the worker (`Request::Account`, `ExportLedger`, `ImportLedger`) and shows the answers. The
//! budget is checked here at the Run button ([`with_account`]) and again by the worker.

use std::cell::RefCell;

use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::File;

use crate::protocol::{AccountStatus, FieldError, FileInfo, LedgerEvent, Request, RunSettings, Stage};

use super::engine;
use super::state::{AppState, Job, StageState};

thread_local! {
    static TUNING_FILE: RefCell<Option<File>> = const { RefCell::new(None) };
}

/// Where the last account name is remembered (a name the curator chose; no data).
const ACCOUNT_KEY: &str = "dpkps-account";

#[derive(Clone, Copy)]
pub struct LedgerState {
    pub account: RwSignal<String>,
    /// The budget field, as typed (empty: no budget).
    pub budget: RwSignal<String>,
    pub status: RwSignal<Option<AccountStatus>>,
    /// `Some(false)`: the browser refused persistent storage.
    pub persisted: RwSignal<Option<bool>>,
    pub message: RwSignal<Option<String>>,
    pub tuning_name: RwSignal<Option<String>>,
    /// Whether the utility figures shown come from the tuning file.
    pub last_check_on_tuning: RwSignal<bool>,
}

fn local_storage() -> Option<web_sys::Storage> {
    web_sys::window().and_then(|w| w.local_storage().ok().flatten())
}

/// Sets up the state (call once in `App`) and asks the browser to keep this origin's storage.
pub fn init() {
    let remembered = local_storage().and_then(|s| s.get_item(ACCOUNT_KEY).ok().flatten());
    let st = LedgerState {
        account: RwSignal::new(remembered.unwrap_or_else(|| "default".into())),
        budget: RwSignal::new(String::new()),
        status: RwSignal::new(None),
        persisted: RwSignal::new(None),
        message: RwSignal::new(None),
        tuning_name: RwSignal::new(None),
        last_check_on_tuning: RwSignal::new(false),
    };
    provide_context(st);
    // Called outside the component tree: hold the state itself, not the context.
    engine::on_ledger(move |ev| apply(st, ev));
    request_persistence(st.persisted);
}

fn ledger() -> LedgerState {
    expect_context::<LedgerState>()
}

/// `navigator.storage.persist()`: without it the browser may clear IndexedDB (the ledger) under
/// storage pressure.
fn request_persistence(out: RwSignal<Option<bool>>) {
    let call = |method: &str| -> Option<js_sys::Promise> {
        let nav = js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("navigator")).ok()?;
        let storage = js_sys::Reflect::get(&nav, &JsValue::from_str("storage")).ok().filter(|s| !s.is_undefined())?;
        let f: js_sys::Function = js_sys::Reflect::get(&storage, &JsValue::from_str(method)).ok()?.dyn_into().ok()?;
        f.call0(&storage).ok()?.dyn_into().ok()
    };
    let (persisted, persist) = (call("persisted"), call("persist"));
    leptos::task::spawn_local(async move {
        let already = match persisted {
            Some(p) => wasm_bindgen_futures::JsFuture::from(p).await.ok().and_then(|v| v.as_bool()).unwrap_or(false),
            None => false,
        };
        let granted = if already {
            true
        } else {
            match persist {
                Some(p) => wasm_bindgen_futures::JsFuture::from(p).await.ok().and_then(|v| v.as_bool()).unwrap_or(false),
                None => false,
            }
        };
        out.set(Some(granted));
    });
}

/// Ledger answers from the worker.
fn apply(st: LedgerState, ev: LedgerEvent) {
    match ev {
        LedgerEvent::Status(s) => {
            if st.budget.get_untracked().trim().is_empty() {
                if let Some(b) = s.budget {
                    st.budget.set(b.to_string());
                }
            }
            st.status.set(Some(s));
        }
        LedgerEvent::Exported { json } => {
            super::download::ledger(&json);
            st.message.set(Some("Ledger exported (dpkps-ledger.json). Keep it with the data: it holds the corpus keys and overlap sketches.".into()));
        }
        LedgerEvent::Imported { summary } => {
            st.message.set(Some(format!(
                "Ledger imported: {} run(s) added, {} completed, {} utility check(s) added; runs already here were not counted twice.",
                summary.runs_added, summary.runs_extended, summary.checks_added
            )));
            if st.status.get_untracked().is_some() {
                refresh_account(st);
            }
        }
        LedgerEvent::Failed { message } => st.message.set(Some(message)),
    }
}

/// Asks the worker for the account's state with the loaded corpus.
pub fn refresh() {
    refresh_account(ledger());
}

fn refresh_account(st: LedgerState) {
    let name = st.account.get_untracked();
    if !name.trim().is_empty() {
        engine::send(&Request::Account { name }, &[]);
    }
}

/// The run's budget account as the page has it (None: no name given).
pub fn account_name() -> Option<String> {
    crate::protocol::account_name(Some(&ledger().account.get()))
}

/// The settings with the account and budget, refused (field "budget") if the run would take
/// the account over its budget. The worker checks again against what is recorded then.
pub fn with_account(parsed: Result<RunSettings, Vec<FieldError>>) -> Result<RunSettings, Vec<FieldError>> {
    let st = ledger();
    let account = account_name();
    let budget_text = st.budget.get();
    let budget = match budget_text.trim() {
        "" => Ok(None),
        t => t.parse::<f64>().map(Some).map_err(|_| FieldError { field: "budget", message: format!("{t:?} is not a number") }),
    };
    let status = st.status.get();
    match (parsed, budget) {
        (Ok(mut s), Ok(budget)) => {
            s.account = account;
            s.budget = budget;
            let mut errs = s.check(None).into_iter().filter(|e| e.field == "budget").collect::<Vec<_>>();
            let spent = status.filter(|st| s.account.as_deref() == Some(st.name.as_str())).map_or(0.0, |st| st.spent);
            if errs.is_empty() {
                if let Err(e) = s.check_budget_of(spent, super::app().planned_epsilon(&s)) {
                    errs.push(e);
                }
            }
            if errs.is_empty() {
                Ok(s)
            } else {
                Err(errs)
            }
        }
        (Ok(_), Err(e)) => Err(vec![e]),
        (Err(mut errs), b) => {
            if let Err(e) = b {
                errs.push(e);
            }
            Err(errs)
        }
    }
}

/// The budget field's text (for the settings grid).
pub fn budget_field() -> RwSignal<String> {
    ledger().budget
}

/// Account, what it has spent, overlap warning, persistence, export and import.
#[component]
pub fn LedgerPanel() -> impl IntoView {
    let app = expect_context::<AppState>();
    let st = ledger();
    // Ask again whenever the corpus, the account, a finished run or a check changes.
    Effect::new(move |_| {
        let loaded = app.summary.get().is_some();
        let _ = (st.account.get(), app.result.get().map(|r| r.epsilon_total), app.evaluation.get().is_some());
        if loaded && app.job.get().is_none() {
            refresh();
        }
    });
    let status_text = move || {
        st.status.get().filter(|s| s.name == st.account.get().trim()).map(|s| {
            let budget = match s.budget {
                Some(b) => format!(" of a budget of ε = {b}"),
                None => " (no budget set)".into(),
            };
            format!(
                "Account “{}”: ε = {:.3} spent{budget}. This corpus: ε = {:.3} over {} run(s).",
                s.name, s.spent, s.corpus_spent, s.corpus_runs
            )
        })
    };
    let overlap = move || {
        let s = st.status.get().filter(|s| s.name == st.account.get().trim())?;
        let worst = s.overlaps.first().copied().filter(|&o| o >= crate::overlap::WARN_OVERLAP)?;
        Some(format!(
            "This corpus overlaps an earlier corpus of the account “{}” by about {:.0}% of documents. It is not a fresh \
             dataset: its ε adds to the account's total, and the budget covers both.",
            s.name,
            100.0 * worst
        ))
    };
    let import = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        if let Some(f) = input.files().and_then(|l| l.get(0)) {
            st.message.set(None);
            engine::send(&Request::ImportLedger, &[f]);
        }
        input.set_value("");
    };
    // Always shown: a ledger can be imported before any corpus is loaded.
    view! {
        <section aria-labelledby="ledger-h" class="card" id="ledger">
            <h2 id="ledger-h">"Budget account and privacy ledger"</h2>
            <label class="field">
                <span class="name">"Budget account (the dataset's name)"</span>
                <input
                    id="account"
                    type="text"
                    prop:value=move || st.account.get()
                    on:change=move |ev| {
                        let v = event_target_value(&ev);
                        if let Some(s) = local_storage() {
                            let _ = s.set_item(ACCOUNT_KEY, v.trim());
                        }
                        st.budget.set(String::new());
                        st.account.set(v);
                    }
                />
                <span class="help">
                    "Every extract of one dataset should use one account: its runs add up, whatever rows the file holds."
                </span>
            </label>
            <p id="account-status" role="status">{status_text}</p>
            {move || overlap().map(|t| view! { <p class="warning" id="overlap-warning" role="alert">{t}</p> })}
            <Show when=move || st.persisted.get() == Some(false)>
                <p class="warning" id="persist-warning" role="note">
                    "This browser did not grant persistent storage: it may clear the privacy ledger under storage "
                    "pressure. Export the ledger after each run."
                </p>
            </Show>
            <div class="actions">
                <button id="ledger-export" on:click=move |_| engine::send(&Request::ExportLedger, &[])>"Export the ledger (JSON)"</button>
                <label class="button">
                    "Import a ledger… "
                    <input id="ledger-import" type="file" accept=".json,application/json" on:change=import />
                </label>
            </div>
            <p id="ledger-message" role="status">{move || st.message.get()}</p>
        </section>
    }
}

/// Opened from a file (dpkps.html, `file://`): Chromium keeps IndexedDB and localStorage, so the
/// ledger is kept, but under one origin, "file://", shared by every page opened from a file in
/// this browser (measured: tests/e2e/file.mjs; README "Run it from one file"). Said next to the
/// Run button, before any ε is spent.
#[component]
pub fn FileStorageNote() -> impl IntoView {
    let from_file = web_sys::window().and_then(|w| w.location().protocol().ok()).is_some_and(|p| p == "file:");
    from_file.then(|| {
        view! {
            <p class="warning" id="file-storage-note" role="note">
                "Opened from a file: this browser keeps the privacy ledger, saved LLM jobs and a remembered API key in "
                "storage that every page opened from a file in it shares. Another HTML file opened here could read the "
                "ledger (its keys let it test whether a given document is in a recorded corpus) or erase it, and then what "
                "was spent would be undercounted. Export the ledger after each run and keep it with the data; better, "
                "open dpkps.html in a browser profile used for nothing else."
            </p>
        }
    })
}

/// How many non-DP checks were run on this corpus (shown next to the check buttons).
#[component]
pub fn ChecksNote() -> impl IntoView {
    let st = ledger();
    move || {
        st.status.get().map(|s| {
            let text = match s.non_dp_checks {
                0 => "No utility check has been run on this corpus yet.".to_string(),
                n => format!(
                    "A non-DP utility check has been run on this corpus {n} time(s), comparing {} setting(s). \
                     The privacy report states this: settings chosen from those figures are tuned on the private data.",
                    s.settings_compared
                ),
            };
            view! { <p class="hint" id="checks-note">{text}</p> }
        })
    }
}

/// The utility check on a separate tuning file (recommended: it reads nothing of the corpus).
#[component]
pub fn TuningCheck(parsed: Memo<Result<RunSettings, Vec<FieldError>>>) -> impl IntoView {
    let app = expect_context::<AppState>();
    let st = ledger();
    let choose = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        let f = input.files().and_then(|l| l.get(0));
        st.tuning_name.set(f.as_ref().map(File::name));
        TUNING_FILE.with(|t| *t.borrow_mut() = f);
    };
    let run = move |_| {
        let (Ok(settings), Some(file)) = (parsed.get_untracked(), TUNING_FILE.with(|t| t.borrow().clone())) else { return };
        app.evaluation.set(None);
        app.error.set(None);
        st.last_check_on_tuning.set(true);
        app.job.set(Some(Job::Evaluate));
        app.stages.set([Stage::Evaluate, Stage::Model, Stage::Embed].iter().map(|s| (*s, StageState::Waiting)).collect());
        let info = FileInfo { name: file.name(), size: file.size() as u64 };
        engine::send(&Request::EvaluateTuning { settings, file: info }, &[file]);
    };
    view! {
        <div class="tuning">
            <p class="hint">
                "Recommended: check utility on a separate tuning file (an older or public extract with the same columns) "
                "instead of this corpus. Choosing settings from figures computed on the private corpus is itself a use of "
                "the private data that no ε accounts for."
            </p>
            <label class="field">
                <span class="name">"Tuning file"</span>
                <input id="tuning-file" type="file" accept=".csv,.tsv,.jsonl,.ndjson,.txt" on:change=choose />
            </label>
            <button
                id="evaluate-tuning"
                prop:disabled=move || app.busy() || parsed.get().is_err() || st.tuning_name.get().is_none()
                on:click=run
            >
                "Check utility on the tuning file"
            </button>
        </div>
    }
}

/// Marks the next utility figures as computed on the private corpus (the other button).
pub fn check_on_corpus() {
    ledger().last_check_on_tuning.set(false);
}

/// Whether the utility figures shown come from the tuning file.
pub fn figures_from_tuning() -> bool {
    ledger().last_check_on_tuning.get()
}
