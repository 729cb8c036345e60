//! The budget account and privacy ledger panel, the notes by the Run button, and the utility
//! check on a separate tuning file. The state and its actions are `crate::state::ledger`.

use leptos::prelude::*;

use dpkps_core::protocol::{FieldError, RunSettings};
use crate::state::{app, ledger};
use crate::text;

/// Account, what it has spent, overlap warning, persistence, export and import.
#[component]
pub fn LedgerPanel() -> impl IntoView {
    let st = ledger();
    let import = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        if let Some(f) = input.files().and_then(|l| l.get(0)) {
            st.import(f);
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
                    on:change=move |ev| st.set_account(event_target_value(&ev))
                />
                <span class="help">
                    "Every extract of one dataset should use one account: its runs add up, whatever rows the file holds."
                </span>
            </label>
            <p id="account-status" role="status">{move || st.status_text()}</p>
            {move || st.overlap_warning().map(|t| view! { <p class="warning" id="overlap-warning" role="alert">{t}</p> })}
            <Show when=move || st.persisted.get() == Some(false)>
                <p class="warning" id="persist-warning" role="note">
                    "This browser did not grant persistent storage: it may clear the privacy ledger under storage "
                    "pressure. Export the ledger after each run."
                </p>
            </Show>
            <div class="actions">
                <button id="ledger-export" on:click=move |_| st.export()>"Export the ledger (JSON)"</button>
                <label class="check" id="ledger-export-sketches-label">
                    <input id="ledger-export-sketches" type="checkbox" prop:checked=move || st.export_sketches.get() on:change=move |ev| st.export_sketches.set(event_target_checked(&ev)) />
                    "with the overlap sketches (they let whoever also has this browser's key test whether a document was in a corpus; off: runs, ε, budgets and accounts only)"
                </label>
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

/// How many non-DP checks were run on this corpus (by the CLI, or by earlier versions of the
/// page; shown next to the check buttons).
#[component]
pub fn ChecksNote() -> impl IntoView {
    let st = ledger();
    move || {
        st.status.get().map(|s| {
            let note = text::checks_note(&s);
            view! { <p class="hint" id="checks-note">{note}</p> }
        })
    }
}

/// The non-DP utility check on a separate tuning file (it reads nothing of the corpus).
#[component]
pub fn TuningCheck(parsed: Memo<Result<RunSettings, Vec<FieldError>>>) -> impl IntoView {
    let app = app();
    let st = ledger();
    let choose = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        st.choose_tuning_file(input.files().and_then(|l| l.get(0)));
    };
    let run = move |_| st.check_on_tuning(app, parsed.get_untracked());
    view! {
        <div class="tuning">
            <p class="hint">
                "Or check utility on a separate tuning file (an older or public extract with the same columns): it reads "
                "nothing of this corpus and spends no ε; its figures are not differentially private, but they are the "
                "tuning file's, not this corpus's."
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
