//! The browser app: a thin Leptos (CSR) shell. Components read the signals of
//! [`state::AppState`] and call its actions; the work happens in the Web Worker
//! (`crate::worker`), reached through [`engine`].

mod assets;
mod download;
mod engine;
mod generate;
mod jobstore;
mod ledger_view;
mod llm_view;
mod state;

use leptos::prelude::*;

use assets::{AssetState, BundledAsset, BUNDLED};
use state::{AppState, StageState};

use crate::summary::Sampler;
use crate::protocol::{FieldError, RunSettings};

/// Largest S and L accepted by the app (the worker keeps this many terms per document).
pub const MAX_TERMS: usize = 64;

/// Mounts the app on `<body>`.
pub fn mount() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

/// The six stages of DP-KPS as the curator meets them.
const STEPS: [(&str, &str, &str); 6] = [
    ("Upload", "Drop a CSV, TSV, JSONL or .txt corpus. It stays in this tab's memory.", "no privacy cost"),
    ("Match keyphrases", "Find terms of a public vocabulary (English or medical) in each document.", "no release"),
    ("DP vocabulary", "Noisy histogram of the first S terms per document; keep the top N.", "ε_voc"),
    ("Embed", "Embed terms with the bundled MiniLM model, run in the page by tract.", "no release"),
    ("DP keyphrase sequences", "Per-class DP kernel density estimates; sample keyphrase sequences.", "ε_kde"),
    ("Generate & download", "Send only the private keyphrases to your LLM endpoint; download the corpus and report.", "post-processing"),
];

#[component]
fn App() -> impl IntoView {
    let app = AppState::new();
    provide_context(app);
    let gen = generate::GenState::new();
    provide_context(gen);
    engine::start(move |ev| app.apply(ev));
    app.restore_last_run();
    gen.restore();
    ledger_view::init();
    let bench = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .is_some_and(|q| q.contains("bench"));
    view! {
        <a class="skip" href="#main">"Skip to content"</a>
        <header class="top">
            <h1>"dpkps"</h1>
            <p class="tagline">"Differentially private synthetic text, made in your browser"</p>
        </header>
        <main id="main" data-worker-ready=move || app.worker_ready.get().to_string()>
            <p class="assurance" role="note">
                "Your documents never leave this page. Only differentially private keyphrases are ever sent, "
                "and only to the LLM endpoint you choose."
            </p>
            <llm_view::ResumeBanner />
            <Steps />
            <ErrorBanner />
            <Upload />
            <Columns />
            <Summary />
            <ledger_view::LedgerPanel />
            <Privacy />
            <Progress />
            <Utility />
            <Results />
            <llm_view::Generate />
            <ModelPanel />
            {bench.then(|| view! { <BenchPanel /> })}
            <Bundled />
        </main>
        <footer>
            "Method: DP-KPS (Nagesh, Chen, Mishra & Wagner, 2024). Total privacy cost: ε_voc + ε_kde, "
            "document-level, add/remove-one-document neighbours."
        </footer>
    }
}

fn app() -> AppState {
    expect_context::<AppState>()
}

#[component]
fn Steps() -> impl IntoView {
    view! {
        <section aria-labelledby="steps-h">
            <h2 id="steps-h">"How it works"</h2>
            <ol class="steps">
                {STEPS
                    .iter()
                    .map(|(title, what, cost)| {
                        view! {
                            <li class="step">
                                <h3>{*title}</h3>
                                <p>{*what}</p>
                                <span class="cost">{*cost}</span>
                            </li>
                        }
                    })
                    .collect_view()}
            </ol>
        </section>
    }
}

#[component]
fn ErrorBanner() -> impl IntoView {
    let app = app();
    move || {
        app.error.get().map(|e| {
            view! {
                <div class="error" role="alert" id="error">
                    <strong>"Problem: "</strong>
                    {e}
                    <button class="link" on:click=move |_| app.error.set(None)>"Dismiss"</button>
                </div>
            }
        })
    }
}

fn files_of(list: Option<web_sys::FileList>) -> Vec<web_sys::File> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.get(i)).collect()
}

#[component]
fn Upload() -> impl IntoView {
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

fn kilobytes(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.1} MB", n as f64 / 1e6)
    } else {
        format!("{:.1} kB", n as f64 / 1e3)
    }
}

#[component]
fn Columns() -> impl IntoView {
    let app = app();
    move || {
        app.preview.get().map(|p| {
            let columns = p.columns.clone();
            let has_columns = !columns.is_empty();
            let col_opts = move |sel: RwSignal<String>, with_none: bool| {
                let cols = columns.clone();
                view! {
                    {with_none.then(|| view! { <option value="" selected=move || sel.get().is_empty()>"(none: unlabelled)"</option> })}
                    {cols
                        .into_iter()
                        .map(|c| {
                            let c2 = c.clone();
                            view! { <option value=c.clone() selected=move || sel.get() == c2>{c.clone()}</option> }
                        })
                        .collect_view()}
                }
            };
            let text_opts = col_opts(app.text_col, false);
            let label_opts = col_opts(app.label_col, true);
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

/// The worker's idle-time pass over a user's own list, in plain words.
fn own_list_note(done: u64, total: u64) -> String {
    let n = assets::group_thousands;
    if done >= total {
        format!("{} of {} terms embedded in the background, kept in this page's memory: later runs need not embed them", n(done), n(total))
    } else {
        format!("{} of {} terms embedded in the background so far (in the list's order, while the page is idle; a run goes first)", n(done), n(total))
    }
}

#[component]
fn Summary() -> impl IntoView {
    let app = app();
    move || {
        app.summary.get().map(|s| {
            let classes = if s.classes.is_empty() {
                "no labels".to_string()
            } else {
                s.classes.iter().map(|(l, n)| format!("{l}: {n}")).collect::<Vec<_>>().join(" · ")
            };
            view! {
                <section aria-labelledby="sum-h" class="card" id="summary">
                    <h2 id="sum-h">"Your corpus (exact counts, for your eyes only)"</h2>
                    <dl class="facts">
                        <dt>"Documents"</dt><dd id="n-docs">{s.documents}</dd>
                        <dt>"Empty, skipped"</dt><dd>{s.empty_skipped}</dd>
                        <dt>"Without any vocabulary term"</dt><dd>{s.docs_without_terms}</dd>
                        <dt>"Classes"</dt><dd id="classes">{classes}</dd>
                        <dt>"Vocabulary"</dt><dd>{format!("{} ({} terms), {} distinct terms matched", s.vocabulary, s.vocabulary_terms, s.distinct_matched)}</dd>
                        {move || app.background.get().map(|(done, total)| view! {
                            <dt>"Own list's vectors"</dt>
                            <dd id="own-list-vectors">{own_list_note(done, total)}</dd>
                        })}
                    </dl>
                </section>
            }
        })
    }
}

#[component]
fn NumberField(id: &'static str, label: &'static str, help: &'static str, value: RwSignal<String>, errors: Signal<Vec<FieldError>>) -> impl IntoView {
    let error = move || errors.get().into_iter().find(|e| e.field == id).map(|e| e.message);
    let err_id = format!("{id}-err");
    view! {
        <label class="field" class:invalid=move || error().is_some()>
            <span class="name">{label}</span>
            <input
                id=id
                type="text"
                inputmode="decimal"
                prop:value=move || value.get()
                on:input=move |ev| value.set(event_target_value(&ev))
                aria-invalid=move || error().is_some().to_string()
                aria-describedby=err_id.clone()
            />
            <span class="help">{help}</span>
            <span class="field-error" id=err_id role="status">{error}</span>
        </label>
    }
}

#[component]
fn Privacy() -> impl IntoView {
    let app = app();
    let f = app.settings;
    let vocab_len = move || app.summary.get().map(|s| s.vocabulary_terms);
    let parsed = Memo::new(move |_| f.parse(vocab_len()));
    // The Run button's settings: with the budget account, refused over its budget.
    let runnable = Memo::new(move |_| ledger_view::with_account(parsed.get()));
    let errors = Signal::derive(move || runnable.get().err().unwrap_or_default());
    let preset = move |v: f64, k: f64| {
        f.eps_voc.set(v.to_string());
        f.eps_kde.set(k.to_string());
    };
    let ledger_note = move || {
        let s = app.summary.get()?;
        // With the account, as the run will be sent (it is part of what a reuse must match).
        let settings = parsed.get().ok().map(|p: RunSettings| RunSettings { account: ledger_view::account_name(), ..p });
        let planned = settings.as_ref().map(|p| app.planned_epsilon(p));
        let reuses = settings.as_ref().zip(planned).is_some_and(|(p, e)| e < p.epsilon());
        Some(match (s.earlier_runs, planned) {
            (0, Some(p)) => format!("No earlier run on this corpus in this browser. This run spends ε = {p}."),
            (n, Some(p)) => format!(
                "This corpus already had {n} run(s) in this browser, spending ε = {:.3}. Running again {}adds ε = {p:.3}: the total becomes ε = {:.3}.",
                s.spent_before,
                if reuses { "reuses the last run's private vocabulary (already paid for, no new ε_voc) and " } else { "" },
                s.spent_before + p
            ),
            (n, None) => format!("Spent on this corpus so far: ε = {:.3} over {n} run(s).", s.spent_before),
        })
    };
    view! {
        <Show when=move || app.summary.get().is_some()>
            <section aria-labelledby="priv-h" class="card">
                <h2 id="priv-h">"3. Privacy settings"</h2>
                <p class="hint">
                    "ε (epsilon) bounds how much the output can depend on any one document: the smaller, the stronger the "
                    "protection and the noisier the result. The whole run is (ε_voc + ε_kde, plus a small ε for the class proportions)-differentially private."
                </p>
                <div class="presets" role="group" aria-label="Presets from the paper">
                    <span>"Presets from the paper:"</span>
                    <button on:click=move |_| preset(1.0, 5.0)>"ε_voc 1 · ε_kde 5"</button>
                    <button on:click=move |_| preset(1.0, 10.0)>"ε_voc 1 · ε_kde 10"</button>
                    <button on:click=move |_| preset(5.0, 5.0)>"ε_voc 5 · ε_kde 5"</button>
                    <button on:click=move |_| preset(5.0, 10.0)>"ε_voc 5 · ε_kde 10"</button>
                </div>
                <div class="grid">
                    <NumberField id="eps_voc" label="ε_voc" help="vocabulary selection" value=f.eps_voc errors=errors />
                    <NumberField id="eps_kde" label="ε_kde" help="keyphrase sequences" value=f.eps_kde errors=errors />
                    <NumberField id="terms_per_doc" label="S" help="terms per document counted" value=f.terms_per_doc errors=errors />
                    <NumberField id="top_n" label="N" help="private vocabulary size" value=f.top_n errors=errors />
                    <NumberField id="len" label="L" help="keyphrases per sequence" value=f.len errors=errors />
                    <NumberField id="features" label="I" help="random features" value=f.features errors=errors />
                    <NumberField id="per_class" label="Sequences per class" help="how many to sample" value=f.per_class errors=errors />
                    <NumberField id="bandwidth" label="h" help="kernel bandwidth (smaller: sharper)" value=f.bandwidth errors=errors />
                    <NumberField id="budget" label="Budget (ε, account)" help="most ε the account may spend; empty: none" value=ledger_view::budget_field() errors=errors />
                    <SamplerField />
                    <VocabPerClassField />
                    <ReuseVocabularyField />
                    <ProportionalField />
                </div>
                <ClassesField errors=errors />
                <p class="ledger" id="ledger-note" role="note">{ledger_note}</p>
                <ledger_view::FileStorageNote />
                <div class="actions">
                    <button
                        id="evaluate"
                        title="Trains classifiers on DP sequences of each sampler and tests them on held-out documents"
                        prop:disabled=move || {
                            app.busy() || parsed.get().is_err() || app.summary.get().is_none_or(|s| s.classes.len() < 2)
                        }
                        on:click=move |_| {
                            if let Ok(s) = parsed.get_untracked() {
                                ledger_view::check_on_corpus();
                                app.evaluate(s)
                            }
                        }
                    >
                        "Check utility (not private: figures computed on this corpus)"
                    </button>
                    <button
                        id="run"
                        class="primary"
                        prop:disabled=move || app.busy() || runnable.get().is_err()
                        on:click=move |_| {
                            if let Ok(s) = runnable.get_untracked() {
                                app.run(s)
                            }
                        }
                    >
                        "Run (spends ε)"
                    </button>
                </div>
                <ledger_view::ChecksNote />
                <ledger_view::TuningCheck parsed=parsed />
            </section>
        </Show>
    }
}

/// The sampler, with one sentence on what the selected one keeps.
#[component]
fn SamplerField() -> impl IntoView {
    let f = app().settings;
    view! {
        <label class="field">
            <span class="name">"Sampler"</span>
            <select id="sampler" on:change=move |ev| f.sampler.set(event_target_value(&ev))>
                {Sampler::ALL
                    .into_iter()
                    .map(|s| {
                        let name = s.name();
                        view! { <option value=name selected=move || f.sampler.get() == name>{name}</option> }
                    })
                    .collect_view()}
            </select>
            <span class="help" id="sampler-help">{move || f.sampler_description()}</span>
        </label>
    }
}

/// A setting that is on or off, with one sentence of help.
#[component]
fn CheckField(id: &'static str, label: &'static str, help: String, value: RwSignal<bool>) -> impl IntoView {
    view! {
        <div class="field">
            <label class="check name">
                <input id=id type="checkbox" prop:checked=move || value.get() on:change=move |ev| value.set(event_target_checked(&ev)) />
                {label}
            </label>
            <span class="help">{help}</span>
        </div>
    }
}

#[component]
fn VocabPerClassField() -> impl IntoView {
    let help = "Each class picks its own top terms from its own noisy counts, so a small class keeps its keyphrases (same ε_voc).";
    view! { <CheckField id="vocab_per_class" label="Private vocabulary per class" help=help.to_string() value=app().settings.vocab_per_class /> }
}

/// Reuse of the private vocabulary an earlier run of this page released (`reuse::VocabKey`).
#[component]
fn ReuseVocabularyField() -> impl IntoView {
    let help = "When an earlier run in this page used the same corpus, vocabulary list, ε_voc, S, N, classes and \
                account, its private vocabulary is used again: it is already released, so ε_voc is not spent again.";
    view! { <CheckField id="reuse_vocabulary" label="Reuse the private vocabulary" help=help.to_string() value=app().settings.reuse_vocabulary /> }
}

/// The DP class counts (`dp::counts`): sequences per class in proportion, for a small ε.
#[component]
fn ProportionalField() -> impl IntoView {
    let help = format!(
        "Sequences per class in proportion to noisy class counts (ε = {}, added to the run), so a classifier \
         trained on them sees the classes' real balance. Off: the same number for every class.",
        crate::protocol::RunSettings::DEFAULT_EPS_COUNTS
    );
    view! { <CheckField id="proportional" label="Class proportions (DP)" help=help value=app().settings.proportional /> }
}

/// The public class set (`crate::classes`): which label values become classes of the outputs.
/// Shown only for a corpus read with a label column; without one the run has a single class.
#[component]
fn ClassesField(errors: Signal<Vec<FieldError>>) -> impl IntoView {
    let app = app();
    let f = app.settings;
    let error = move || errors.get().into_iter().find(|e| e.field == "classes").map(|e| e.message);
    view! {
        <Show when=move || f.labelled.get()>
            <fieldset class="field classes" class:invalid=move || error().is_some() id="classes-field">
                <legend class="name">"Classes (public)"</legend>
                <p class="warning" role="note">
                    "The class names you declare will appear in the outputs, the privacy report and the prompts sent to your LLM. "
                    "They must not be private: no patient, clinician or clinic names or identifiers."
                </p>
                <p class="help">
                    "You decide which classes the outputs have: one name per line, or tick labels found in your corpus. \
                     Nothing is ticked for you: a default chosen from the label counts would itself depend on the private \
                     data. Leave a rare label out or gather it below. The counts are exact and for your eyes only."
                </p>
                <div class="two">
                    <label class="field">
                        <span class="name">"Declared classes"</span>
                        <textarea
                            id="class-list"
                            rows="6"
                            prop:value=move || f.classes.get()
                            on:input=move |ev| f.classes.set(event_target_value(&ev))
                            aria-invalid=move || error().is_some().to_string()
                            aria-describedby="classes-err"
                        ></textarea>
                    </label>
                    <ObservedLabels />
                </div>
                <span class="field-error" id="classes-err" role="status">{error}</span>
                <OtherLabelsField />
            </fieldset>
        </Show>
    }
}

/// The labels of the loaded corpus with their exact counts (curator only), to tick as classes.
#[component]
fn ObservedLabels() -> impl IntoView {
    let app = app();
    let f = app.settings;
    let rows = move || {
        app.summary
            .get()
            .map(|s| s.classes)
            .unwrap_or_default()
            .into_iter()
            .map(|(label, n)| {
                let (l1, l2) = (label.clone(), label.clone());
                view! {
                    <li>
                        <label class="check">
                            <input
                                type="checkbox"
                                data-label=label.clone()
                                prop:checked=move || f.is_declared(&l1)
                                on:change=move |ev| f.set_declared(&l2, event_target_checked(&ev))
                            />
                            {label}
                            <span class="count">{if n == 1 { "1 document".to_string() } else { format!("{n} documents") }}</span>
                        </label>
                    </li>
                }
            })
            .collect_view()
    };
    view! {
        <div class="field">
            <span class="name">"Labels in your corpus"</span>
            <ul class="observed" id="observed-labels">{rows}</ul>
        </div>
    }
}

/// What happens to documents whose label is not declared.
#[component]
fn OtherLabelsField() -> impl IntoView {
    let f = app().settings;
    view! {
        <div class="other-labels" role="radiogroup" aria-label="Documents with other labels">
            <span class="name">"Documents with any other label, or none:"</span>
            <label class="check">
                <input
                    id="other-drop"
                    type="radio"
                    name="other-labels"
                    prop:checked=move || !f.gather_other.get()
                    on:change=move |_| f.gather_other.set(false)
                />
                "leave those documents out"
            </label>
            <label class="check">
                <input
                    id="other-gather"
                    type="radio"
                    name="other-labels"
                    prop:checked=move || f.gather_other.get()
                    on:change=move |_| f.gather_other.set(true)
                />
                "gather them in a class named"
                <input
                    id="other-name"
                    type="text"
                    aria-label="Name of the class for other labels"
                    prop:value=move || f.other_name.get()
                    prop:disabled=move || !f.gather_other.get()
                    on:input=move |ev| f.other_name.set(event_target_value(&ev))
                />
            </label>
        </div>
    }
}

#[component]
fn Progress() -> impl IntoView {
    let app = app();
    let rows = move || {
        app.stages
            .get()
            .into_iter()
            .map(|(stage, st)| {
                let (value, max, text) = match &st {
                    StageState::Waiting => (0.0, 1.0, "waiting".to_string()),
                    StageState::Running { done, total } if *total > 0 => {
                        (*done as f64, *total as f64, format!("{}%", (100 * done / total).min(100)))
                    }
                    StageState::Running { .. } => (0.0, 1.0, "working…".to_string()),
                    StageState::Done { seconds, note } => (1.0, 1.0, format!("done in {seconds:.1} s: {note}")),
                    StageState::Failed => (0.0, 1.0, "stopped".to_string()),
                };
                let key = serde_json::to_string(&stage).unwrap_or_default().replace('"', "");
                view! {
                    <li class="stage" data-stage=key data-state=format!("{st:?}").split([' ', '{']).next().unwrap_or("").to_lowercase()>
                        <span class="name">{stage.title()}</span>
                        <progress max=max value=value aria-label=stage.title()></progress>
                        <span class="status">{text}</span>
                    </li>
                }
            })
            .collect_view()
    };
    view! {
        <Show when=move || !app.stages.get().is_empty()>
            <section aria-labelledby="prog-h" class="card" aria-live="polite">
                <h2 id="prog-h">"4. Progress"</h2>
                <ul class="stages">{rows}</ul>
                <Show when=move || app.busy()>
                    <button id="cancel" on:click=move |_| app.cancel()>"Cancel"</button>
                </Show>
            </section>
        </Show>
    }
}

/// The utility check: accuracy of each arm as a bar, with the warning that these figures are
/// not differentially private.
#[component]
fn Utility() -> impl IntoView {
    let app = app();
    move || {
        app.evaluation.get().map(|r| {
            let rows = r
                .arms
                .iter()
                .map(|a| {
                    let w = format!("width: {:.1}%", 100.0 * a.accuracy_mean.clamp(0.0, 1.0));
                    view! {
                        <li>
                            <span class="term">{format!("{} · {}", a.arm, a.view)}</span>
                            <span class="bar"><span style=w></span></span>
                            <span class="count">{format!("{:.2} ± {:.2}", a.accuracy_mean, a.accuracy_std)}</span>
                            <span class="f1">{format!("macro-F1 {:.2}", a.macro_f1_mean)}</span>
                        </li>
                    }
                })
                .collect_view();
            view! {
                <section aria-labelledby="util-h" class="card" id="utility">
                    <h2 id="util-h">"Utility check"</h2>
                    <p class="warning" role="note" id="utility-warning">
                        {if ledger_view::figures_from_tuning() {
                            view! {
                                <strong>"Computed on the tuning file. "</strong>
                                "Nothing of your private corpus was read for these figures, and nothing was counted against it."
                            }
                                .into_any()
                        } else {
                            view! {
                                <strong>"Not differentially private: a privacy cost that ε does not count. "</strong>
                                "These figures are computed on your private documents. They are not released, but choosing "
                                "settings from them tunes the release on the private data. This check is recorded in the "
                                "ledger, and the privacy report says how many checks were run on this corpus and how many "
                                "settings they compared. Prefer a tuning file (below the Run button)."
                            }
                                .into_any()
                        }}
                    </p>
                    <p class="hint">
                        {format!(
                            "Accuracy on {} held-out documents (20%, 3 repetitions) of a classifier trained on each kind of sequence.                              dp-…: DP keyphrase sequences of each sampler; nonprivate: the documents' own sequences (upper bound);                              majority: always the largest class (floor). Pick the sampler that keeps the most.",
                            r.arms.first().map_or(0, |a| a.n_test)
                        )}
                    </p>
                    <ol class="bars utility" id="utility-arms">{rows}</ol>
                </section>
            }
        })
    }
}

#[component]
fn Results() -> impl IntoView {
    let app = app();
    move || {
        app.result.get().map(|r| {
            let max = r.vocabulary.iter().map(|(_, c)| *c).max().unwrap_or(1).max(1) as f64;
            let bars = r
                .vocabulary
                .iter()
                .take(20)
                .map(|(t, c)| {
                    let w = format!("width: {:.1}%", 100.0 * (*c).max(0) as f64 / max);
                    view! {
                        <li>
                            <span class="term">{t.clone()}</span>
                            <span class="bar"><span style=w></span></span>
                            <span class="count">{*c}</span>
                        </li>
                    }
                })
                .collect_view();
            let mut labels: Vec<Option<String>> = r.sequences.iter().map(|s| s.label.clone()).collect();
            labels.dedup();
            let examples = labels
                .into_iter()
                .map(|l| {
                    let items = r
                        .sequences
                        .iter()
                        .filter(|s| s.label == l)
                        .take(4)
                        .map(|s| view! { <li>{s.keyphrases.join(" · ")}</li> })
                        .collect_view();
                    view! {
                        <h4>{l.clone().unwrap_or_else(|| "(unlabelled)".into())}</h4>
                        <ul class="sequences">{items}</ul>
                    }
                })
                .collect_view();
            let r2 = r.clone();
            let r3 = r.clone();
            let r4 = r.clone();
            let r5 = r.report.clone();
            view! {
                <section aria-labelledby="res-h" class="card" id="results">
                    <h2 id="res-h">"5. Private keyphrases"</h2>
                    <p class="ledger" id="spent">
                        {format!(
                            "This run spent ε = {:.3}{}; total on this corpus in this browser: ε = {:.3}. {} terms embedded by the model, {} read (bundled vectors, this session's memory, this browser's cache).",
                            r.epsilon_run,
                            match &r.vocabulary_from {
                                Some((from, outputs)) => format!(
                                    " (its private vocabulary is the one run {from} released and paid for: reused, no new ε_voc; these outputs are ε = {outputs:.3})"
                                ),
                                None => String::new(),
                            },
                            r.epsilon_total,
                            r.embedded_fresh,
                            r.embedded_from_cache
                        )}
                    </p>
                    <div class="two">
                        <div>
                            <h3>"Top private vocabulary terms (noisy counts)"</h3>
                            <ol class="bars" id="top-terms">{bars}</ol>
                        </div>
                        <div>
                            <h3>"Example sequences per class"</h3>
                            {examples}
                        </div>
                    </div>
                    <h3>"Download (DP outputs only)"</h3>
                    <div class="actions">
                        <button id="dl-jsonl" on:click=move |_| download::sequences_jsonl(&r2)>"Keyphrase sequences (JSONL)"</button>
                        <button id="dl-csv" on:click=move |_| download::sequences_csv(&r3)>"Keyphrase sequences (CSV)"</button>
                        <button id="dl-report" on:click=move |_| download::report(&r4)>"Privacy report (JSON)"</button>
                        <button id="dl-report-html-run" on:click=move |_| download::report_html_of(&r5)>"Privacy report (printable HTML)"</button>
                    </div>
                </section>
            }
        })
    }
}

#[component]
fn ModelPanel() -> impl IntoView {
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
fn BenchPanel() -> impl IntoView {
    let app = app();
    view! {
        <section class="card" aria-labelledby="bench-h">
            <h2 id="bench-h">"Benchmark"</h2>
            <button id="bench" prop:disabled=move || app.busy() on:click=move |_| app.bench(512)>"Embed 512 terms at batch 1 and 32"</button>
            <pre id="bench-result">{move || app.bench.get().map(|b| serde_json::to_string_pretty(&b).unwrap_or_default())}</pre>
        </section>
    }
}

#[component]
fn Bundled() -> impl IntoView {
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
