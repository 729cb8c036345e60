//! Step 2: the first rows, the text, label and person columns, and the public vocabulary.

use leptos::prelude::*;

use crate::ui::state::app;

use super::files_of;

#[component]
pub fn Columns() -> impl IntoView {
    let app = app();
    move || {
        app.preview.get().map(|p| {
            let columns = p.columns.clone();
            let has_columns = !columns.is_empty();
            let col_opts = move |sel: RwSignal<String>, none: Option<&'static str>| {
                let cols = columns.clone();
                view! {
                    {none.map(|none| view! { <option value="" selected=move || sel.get().is_empty()>{none}</option> })}
                    {cols
                        .into_iter()
                        .map(|c| {
                            let c2 = c.clone();
                            view! { <option value=c.clone() selected=move || sel.get() == c2>{c.clone()}</option> }
                        })
                        .collect_view()}
                }
            };
            let text_opts = col_opts(app.text_col, None);
            let label_opts = col_opts(app.label_col, Some("(none: unlabelled)"));
            let person_opts = col_opts(app.person_col, Some("(none: each document counts alone)"));
            view! {
                <section aria-labelledby="cols-h" class="card">
                    <h2 id="cols-h">"2. Columns and vocabulary"</h2>
                    <p class="hint">{format!("{} file · {} · first rows (shown here only):", p.file, p.format)}</p>
                    <div class="table-wrap">
                        <table class="preview">
                            <thead>
                                <tr>{p.columns.iter().map(|c| view! { <th scope="col">{c.clone()}</th> }).collect_view()}</tr>
                            </thead>
                            <tbody>
                                {p.rows
                                    .iter()
                                    .map(|r| view! { <tr>{r.iter().map(|c| view! { <td>{c.clone()}</td> }).collect_view()}</tr> })
                                    .collect_view()}
                            </tbody>
                        </table>
                    </div>
                    <div class="fields">
                        {has_columns
                            .then(|| {
                                view! {
                                    <label>
                                        "Text column"
                                        <select id="text-col" on:change=move |ev| app.text_col.set(event_target_value(&ev))>
                                            {text_opts}
                                        </select>
                                    </label>
                                    <label>
                                        "Label column"
                                        <select id="label-col" on:change=move |ev| app.label_col.set(event_target_value(&ev))>
                                            {label_opts}
                                        </select>
                                    </label>
                                    <label title="The column naming the patient each document is about. With it, a patient's documents together count as one document in every DP step: each patient is protected at ε however many notes they have. Without it, a patient with k notes is protected at k·ε.">
                                        "Person column (patient id)"
                                        <select id="person-col" on:change=move |ev| app.person_col.set(event_target_value(&ev))>
                                            {person_opts}
                                        </select>
                                    </label>
                                }
                            })}
                        <label>
                            "Public vocabulary"
                            <select id="vocab" on:change=move |ev| app.vocab.set(event_target_value(&ev))>
                                <option value="medical" selected=move || app.vocab.get() == "medical">"Medical glossary (MeSH 2017, 28,469 terms)"</option>
                                <option value="english" selected=move || app.vocab.get() == "english">"English dictionary (GloVe 6B, 340k words)"</option>
                                <option value="custom" selected=move || app.vocab.get() == "custom">"My own term list…"</option>
                            </select>
                        </label>
                        {move || {
                            (app.vocab.get() == "custom")
                                .then(|| {
                                    view! {
                                        <label>
                                            "Term list (one per line, UTF-8)"
                                            <input
                                                id="vocab-file"
                                                type="file"
                                                accept=".txt"
                                                on:change=move |ev| {
                                                    let input: web_sys::HtmlInputElement = event_target(&ev);
                                                    app.choose_vocab_file(files_of(input.files()).into_iter().next());
                                                }
                                            />
                                        </label>
                                    }
                                })
                        }}
                    </div>
                    <button id="load" class="primary" on:click=move |_| app.load() prop:disabled=move || app.busy()>
                        "Read and match"
                    </button>
                </section>
            }
        })
    }
}
