//! Step 2: the first rows, the text, label and person columns, and the public vocabulary. The preview
//! table and the column selects are components of their own, which the recipient's mode
//! (`super::recipient`) places for each of its sets of documents.

use leptos::prelude::*;

use dpkps_core::input::preview::Preview;
use crate::state::app;

use super::files_of;

/// The first rows of a file, as the worker read them (shown here only).
#[component]
pub fn PreviewTable(p: Preview) -> impl IntoView {
    view! {
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
    }
}

/// A select of `columns` bound to `sel`, with a "(none: unlabelled)" choice when `with_none`
/// (worded `none` when given), and `title` as its hover help.
#[component]
pub fn ColumnSelect(
    #[prop(into)] id: String,
    label: &'static str,
    columns: Vec<String>,
    sel: RwSignal<String>,
    #[prop(optional)] with_none: bool,
    #[prop(optional)] none: Option<&'static str>,
    #[prop(optional)] title: Option<&'static str>,
) -> impl IntoView {
    let none = (with_none || none.is_some()).then(|| none.unwrap_or("(none: unlabelled)"));
    view! {
        <label title=title>
            {label}
            <select id=id on:change=move |ev| sel.set(event_target_value(&ev))>
                {none.map(|none| view! { <option value="" selected=move || sel.get().is_empty()>{none}</option> })}
                {columns
                    .into_iter()
                    .map(|c| {
                        let c2 = c.clone();
                        view! { <option value=c.clone() selected=move || sel.get() == c2>{c.clone()}</option> }
                    })
                    .collect_view()}
            </select>
        </label>
    }
}

#[component]
pub fn Columns() -> impl IntoView {
    let app = app();
    move || {
        app.preview.get().map(|p| {
            let columns = p.columns.clone();
            let has_columns = !columns.is_empty();
            view! {
                <section aria-labelledby="cols-h" class="card">
                    <h2 id="cols-h">"2. Columns and vocabulary"</h2>
                    <PreviewTable p=p />
                    <div class="fields">
                        {has_columns
                            .then(|| {
                                view! {
                                    <ColumnSelect id="text-col" label="Text column" columns=columns.clone() sel=app.text_col />
                                    <ColumnSelect id="label-col" label="Label column" columns=columns.clone() sel=app.label_col with_none=true />
                                    <ColumnSelect
                                        id="person-col"
                                        label="Person column (patient id)"
                                        columns=columns
                                        sel=app.person_col
                                        none="(none: each document counts alone)"
                                        title="The column naming the patient each document is about. With it, a patient's documents together count as one document in every DP step: each patient is protected at ε however many notes they have. Without it, a patient with k notes is protected at k·ε."
                                    />
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
