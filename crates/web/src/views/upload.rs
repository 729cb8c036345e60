//! Step 1: the corpus files, dropped or chosen (read in this page only).

use leptos::prelude::*;

use crate::state::app;
use crate::text::kilobytes;

use super::files_of;

#[component]
pub fn Upload() -> impl IntoView {
    let app = app();
    let hover = RwSignal::new(false);
    let on_pick = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        app.choose_files(files_of(input.files()));
    };
    let on_drop = move |ev: web_sys::DragEvent| {
        ev.prevent_default();
        hover.set(false);
        if !app.busy() {
            app.choose_files(files_of(ev.data_transfer().and_then(|d| d.files())));
        }
    };
    view! {
        <section aria-labelledby="upload-h" class="card">
            <h2 id="upload-h">"1. Your corpus"</h2>
            <div
                class="drop"
                class:hover=move || hover.get()
                on:dragover=move |ev: web_sys::DragEvent| {
                    ev.prevent_default();
                    hover.set(true);
                }
                on:dragleave=move |_| hover.set(false)
                on:drop=on_drop
            >
                <p>"Drop CSV, TSV, JSONL or .txt files here, or"</p>
                <label class="button">
                    "Choose files…"
                    <input
                        id="corpus-input"
                        type="file"
                        multiple
                        accept=".csv,.tsv,.tab,.jsonl,.ndjson,.txt,.text"
                        class="visually-hidden"
                        on:change=on_pick
                        prop:disabled=move || app.busy()
                    />
                </label>
                <p class="hint">"The files are read inside this page. They are never uploaded or stored."</p>
            </div>
            <ul class="files">
                {move || {
                    app.files
                        .get()
                        .into_iter()
                        .map(|f| view! { <li>{f.name} " · " {kilobytes(f.size)}</li> })
                        .collect_view()
                }}
            </ul>
        </section>
    }
}
