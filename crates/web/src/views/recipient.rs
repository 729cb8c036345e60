//! The page's second mode, "Use a synthetic corpus" (`crate::state::recipient`): the mode
//! switch, the three sets of documents with their columns, the training settings, progress and
//! Cancel. The loss curve, scores and downloads are in `super::recipient_results`.

use leptos::prelude::*;

use crate::state::recipient::{RecipientJob, SetKind};
use crate::state::{app, recipient};
use crate::text::{kilobytes, RECIPIENT_NOTE};

use super::columns::{ColumnSelect, PreviewTable};
use super::files_of;
use super::progress::StageList;
use super::recipient_results::{LossCurve, TrainResults};

/// The switch at the top of the page between the curator's mode and this one.
#[component]
pub fn ModeSwitch() -> impl IntoView {
    let rec = recipient();
    let app = app();
    // A job of either mode runs to its end (or Cancel) before the other mode is shown.
    let locked = move || app.busy() || rec.busy();
    view! {
        <nav class="modes" aria-label="Mode">
            <button
                id="mode-curator"
                class:active=move || !rec.on.get()
                aria-pressed=move || (!rec.on.get()).to_string()
                prop:disabled=locked
                on:click=move |_| rec.on.set(false)
            >
                "Make a synthetic corpus (curator)"
            </button>
            <button
                id="mode-recipient"
                class:active=move || rec.on.get()
                aria-pressed=move || rec.on.get().to_string()
                prop:disabled=locked
                on:click=move |_| rec.on.set(true)
            >
                "Use a synthetic corpus (recipient)"
            </button>
        </nav>
    }
}

/// One set of documents: its file input, the files chosen, the preview and the columns.
#[component]
fn SetCard(kind: SetKind) -> impl IntoView {
    let rec = recipient();
    let set = rec.set(kind);
    let (key, title, hint) = match kind {
        SetKind::Synthetic => ("syn", "1. The synthetic corpus (labelled)", "synthetic.jsonl or .csv from the curator's mode or dpkps generate, or any CSV, TSV or JSONL with a text and a label column."),
        SetKind::Unlabelled => ("unl", "2. Your documents (unlabelled)", "Optional: the documents to adapt to and classify (CSV, TSV or JSONL with a text column)."),
        SetKind::Test => ("test", "3. A labelled test set (optional)", "Your own labelled documents, kept apart, to score the classifier (CSV, TSV or JSONL)."),
    };
    let on_pick = move |ev: leptos::ev::Event| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        rec.choose(kind, files_of(input.files()));
    };
    let inspecting = move || rec.job.get() == Some(RecipientJob::Inspect(kind));
    view! {
        <section class="card doc-set" id=format!("{key}-set") aria-labelledby=format!("{key}-h")>
            <h2 id=format!("{key}-h")>{title}</h2>
            <p class="hint">{hint}</p>
            <div class="actions">
                <label class="button">
                    "Choose files…"
                    <input
                        id=format!("{key}-input")
                        type="file"
                        multiple
                        accept=".csv,.tsv,.tab,.jsonl,.ndjson"
                        class="visually-hidden"
                        on:change=on_pick
                        prop:disabled=move || rec.busy()
                    />
                </label>
                {(kind != SetKind::Synthetic)
                    .then(|| {
                        view! {
                            <Show when=move || !set.files.get().is_empty()>
                                <button id=format!("{key}-clear") prop:disabled=move || rec.busy() on:click=move |_| rec.clear(kind)>
                                    "Leave out"
                                </button>
                            </Show>
                        }
                    })}
            </div>
            <ul class="files">
                {move || set.files.get().into_iter().map(|f| view! { <li>{f.name} " · " {kilobytes(f.size)}</li> }).collect_view()}
                {move || inspecting().then(|| view! { <li>"reading the first rows…"</li> })}
            </ul>
            {move || {
                set.preview
                    .get()
                    .map(|p| {
                        let columns = p.columns.clone();
                        view! {
                            <PreviewTable p=p />
                            <div class="fields">
                                <ColumnSelect id=format!("{key}-text-col") label="Text column" columns=columns.clone() sel=set.text_col />
                                {kind
                                    .labelled()
                                    .then(|| view! { <ColumnSelect id=format!("{key}-label-col") label="Label column" columns=columns sel=set.label_col /> })}
                            </div>
                        }
                    })
            }}
        </section>
    }
}

/// The mode's page: the sets, the settings, Train, progress and the results.
#[component]
pub fn Recipient() -> impl IntoView {
    let rec = recipient();
    let training = move || rec.job.get() == Some(RecipientJob::Train);
    view! {
        <p class="assurance" role="note" id="recipient-note">{RECIPIENT_NOTE}</p>
        {move || {
            rec.error
                .get()
                .map(|e| {
                    view! {
                        <div class="error" role="alert" id="rec-error">
                            <strong>"Problem: "</strong>
                            {e}
                            <button class="link" on:click=move |_| rec.error.set(None)>"Dismiss"</button>
                        </div>
                    }
                })
        }}
        <SetCard kind=SetKind::Synthetic />
        <SetCard kind=SetKind::Unlabelled />
        <SetCard kind=SetKind::Test />
        <section class="card" aria-labelledby="train-h" aria-live="polite">
            <h2 id="train-h">"4. Train the classifier"</h2>
            <p class="hint">
                "Each document becomes a sentence embedding (the bundled all-MiniLM-L6-v2, its first 256 tokens), here and on helper workers; "
                "a three-layer network is trained on the synthetic labels, with the CORAL term pulling its features towards your documents'."
            </p>
            <div class="fields">
                <label>
                    "CORAL weight λ"
                    <input id="coral-weight" type="text" inputmode="decimal" prop:value=move || rec.coral_weight.get() on:input=move |ev| rec.coral_weight.set(event_target_value(&ev)) />
                </label>
                <label>
                    "Epochs"
                    <input id="epochs" type="text" inputmode="numeric" prop:value=move || rec.epochs.get() on:input=move |ev| rec.epochs.set(event_target_value(&ev)) />
                </label>
            </div>
            <label class="check">
                <input id="compare" type="checkbox" prop:checked=move || rec.compare.get() on:change=move |ev| rec.compare.set(event_target_checked(&ev)) />
                "Also train the plain classifier (no CORAL term), to compare"
            </label>
            <p class="hint" id="train-blocker">{move || rec.train_blocker().filter(|_| !rec.busy())}</p>
            <div class="actions">
                <button id="train" class="primary" prop:disabled=move || rec.train_blocker().is_some() on:click=move |_| rec.train()>
                    "Train"
                </button>
                <Show when=training>
                    <button id="train-cancel" on:click=move |_| rec.cancel()>"Cancel"</button>
                </Show>
            </div>
            <Show when=move || !rec.stages.get().is_empty()>
                <StageList stages=rec.stages />
            </Show>
            <LossCurve />
        </section>
        <TrainResults />
    }
}
