//! The embedding model (check, or one's own), the benchmark (`?bench`), and the bundled assets.

use leptos::prelude::*;

use crate::io::assets::{self, AssetState, BundledAsset, BUNDLED};
use crate::state::app;

use super::files_of;

#[component]
pub fn ModelPanel() -> impl IntoView {
    let app = app();
    let pick = move |which: usize| {
        move |ev: leptos::ev::Event| {
            let input: web_sys::HtmlInputElement = event_target(&ev);
            app.choose_model_file(which, files_of(input.files()).into_iter().next());
        }
    };
    view! {
        <section aria-labelledby="model-h" class="card">
            <h2 id="model-h">"Embedding model"</h2>
            <p id="model-status">{move || app.model.get()}</p>
            <div class="actions">
                <button id="model-check" prop:disabled=move || app.busy() on:click=move |_| app.model_check()>
                    "Check the bundled model against reference vectors"
                </button>
            </div>
            <p id="model-check-result" role="status">{move || app.model_check.get()}</p>
            <details id="own-model">
                <summary>"Use my own model (ONNX sentence-embedding model + tokenizer.json)"</summary>
                <div class="fields">
                    <label>"Model (.onnx)" <input id="model-file" type="file" accept=".onnx" on:change=pick(0) /></label>
                    <label>"Tokenizer (tokenizer.json)" <input id="tokenizer-file" type="file" accept=".json" on:change=pick(1) /></label>
                </div>
                <div class="actions">
                    <button id="use-model" prop:disabled=move || app.busy() on:click=move |_| app.use_own_model()>"Use this model"</button>
                    <button prop:disabled=move || app.busy() on:click=move |_| app.use_bundled_model()>"Back to the bundled model"</button>
                </div>
            </details>
        </section>
    }
}

#[component]
pub fn BenchPanel() -> impl IntoView {
    let app = app();
    view! {
        <section class="card" aria-labelledby="bench-h">
            <h2 id="bench-h">"Benchmark"</h2>
            <button id="bench" prop:disabled=move || app.busy() on:click=move |_| app.bench(512)>"Embed 512 terms at batch 1 and 32"</button>
            <pre id="bench-result">{move || app.bench.get().map(|b| serde_json::to_string_pretty(&b).unwrap_or_default())}</pre>
            <textarea id="bench-docs-input" aria-label="Documents to embed (JSON: lists by name)"></textarea>
            <label><input type="checkbox" id="bench-docs-plans" />" also plans of fixed shapes"</label>
            <button id="bench-docs" prop:disabled=move || app.busy() on:click=move |_| {
                let doc = leptos::prelude::document();
                let value = |id: &str| doc.get_element_by_id(id).and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlTextAreaElement>(e).ok()).map(|t| t.value()).unwrap_or_default();
                let plans = doc.get_element_by_id("bench-docs-plans").and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlInputElement>(e).ok()).is_some_and(|c| c.checked());
                app.bench_docs(&value("bench-docs-input"), 20, plans)
            }>"Embed these documents"</button>
            <pre id="bench-docs-result">{move || app.bench_docs.get()}</pre>
        </section>
    }
}

#[component]
pub fn Bundled() -> impl IntoView {
    let states: Vec<(BundledAsset, RwSignal<AssetState>)> =
        BUNDLED.iter().map(|a| (*a, RwSignal::new(AssetState::Loading))).collect();
    for (asset, state) in states.iter().cloned() {
        leptos::task::spawn_local(async move { state.set(assets::check(asset).await) });
    }
    let all_ready = {
        let states = states.clone();
        move || states.iter().all(|(_, s)| matches!(s.get(), AssetState::Ready(_)))
    };
    view! {
        <section aria-labelledby="assets-h" data-ready=move || all_ready().to_string() id="bundled">
            <h2 id="assets-h">"Bundled with this page"</h2>
            <p class="hint">{assets::where_from()}</p>
            <ul class="assets">
                {states
                    .into_iter()
                    .map(|(asset, state)| {
                        view! {
                            <li>
                                <span class="name">{asset.title}</span>
                                <span class="status">{move || state.get().describe()}</span>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        </section>
    }
}
