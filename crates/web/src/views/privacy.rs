//! Step 3: the privacy settings, the ledger note and the Run and Check buttons.

use leptos::prelude::*;

use dpkps_core::protocol::{FieldError, RunSettings};
use crate::state::{app, ledger};

use super::classes::ClassesField;
use super::ledger::{ChecksNote, FileStorageNote, TuningCheck};
use super::settings_fields::{NumberField, ProportionalField, ReuseVocabularyField, SamplerField, VocabPerClassField, VoteFields};

#[component]
pub fn Privacy() -> impl IntoView {
    let app = app();
    let f = app.settings;
    let ledger = ledger();
    let parsed = Memo::new(move |_| app.parsed_settings());
    // The Run button's settings: with the budget account, refused over its budget.
    let runnable = Memo::new(move |_| ledger.with_account(app, parsed.get()));
    let errors = Signal::derive(move || runnable.get().err().unwrap_or_default());
    let ledger_note = move || ledger.ledger_note(app, &parsed.get());
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
                    <button on:click=move |_| f.preset(1.0, 5.0)>"ε_voc 1 · ε_kde 5"</button>
                    <button on:click=move |_| f.preset(1.0, 10.0)>"ε_voc 1 · ε_kde 10"</button>
                    <button on:click=move |_| f.preset(5.0, 5.0)>"ε_voc 5 · ε_kde 5"</button>
                    <button on:click=move |_| f.preset(5.0, 10.0)>"ε_voc 5 · ε_kde 10"</button>
                </div>
                <div class="grid">
                    <NumberField id="eps_voc" label="ε_voc" help="vocabulary selection" value=f.eps_voc errors=errors />
                    <NumberField id="eps_kde" label="ε_kde" help="keyphrase sequences" value=f.eps_kde errors=errors />
                    <NumberField id="terms_per_doc" label="S" help="a document's most used terms counted" value=f.terms_per_doc errors=errors />
                    <NumberField id="top_n" label="N" help="private vocabulary size (a shorter public list is kept whole)" value=f.top_n errors=errors />
                    <NumberField id="len" label="L" help="keyphrases per sequence" value=f.len errors=errors />
                    <NumberField id="features" label="I" help="random features" value=f.features errors=errors />
                    <NumberField id="per_class" label="Sequences per class" help="how many to sample" value=f.per_class errors=errors />
                    <NumberField id="bandwidth" label="h" help="kernel bandwidth (smaller: sharper)" value=f.bandwidth errors=errors />
                    <NumberField id="budget" label="Budget (ε, account)" help="most ε the account may ever spend; needed before its first run" value=ledger.budget errors=errors />
                    <SamplerField />
                    <VocabPerClassField />
                    <ReuseVocabularyField />
                    <ProportionalField />
                    <VoteFields errors=errors />
                </div>
                {move || parsed.get().ok().as_ref().and_then(crate::text::whole_list_note).map(|note| view! { <p class="hint" id="whole-list-note">{note}</p> })}
                <RaiseBudget />
                <ClassesField errors=errors />
                <p class="ledger" id="ledger-note" role="note">{ledger_note}</p>
                <FileStorageNote />
                <div class="actions">
                    <CheckButton parsed=parsed />
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
                <CheckCost parsed=parsed />
                <ChecksNote />
                <TuningCheck parsed=parsed />
            </section>
        </Show>
    }
}

/// The DP utility check on the loaded corpus (`crate::state::check`): enabled under the
/// same budget rules as the Run button, for the check's own ε.
#[component]
fn CheckButton(parsed: Memo<Result<RunSettings, Vec<FieldError>>>) -> impl IntoView {
    let app = app();
    let ledger = ledger();
    let checkable = Memo::new(move |_| app.checkable(ledger, parsed.get()));
    view! {
        <button
            id="evaluate"
            title="Trains classifiers on DP sequences of each sampler and tests them on held-out documents, with noise: recorded in the ledger"
            prop:disabled=move || app.busy() || checkable.get().is_err()
            on:click=move |_| {
                if let Ok(s) = checkable.get_untracked() {
                    app.dp_check(s)
                }
            }
        >
            "Check utility (DP: spends ε)"
        </button>
    }
}

/// What the check costs, and why it cannot run now.
#[component]
fn CheckCost(parsed: Memo<Result<RunSettings, Vec<FieldError>>>) -> impl IntoView {
    let app = app();
    let ledger = ledger();
    let text = move || app.check_cost(&parsed.get(), &app.checkable(ledger, parsed.get()));
    view! { <p class="hint" id="dp-check-cost">{text}</p> }
}

/// The confirmation a raise of the account's stored budget needs (shown only then).
#[component]
fn RaiseBudget() -> impl IntoView {
    let ledger = ledger();
    move || {
        ledger.raise_over().map(|stored| {
            view! {
                <label class="check" id="budget-raise-label">
                    <input id="budget-raise" type="checkbox" prop:checked=move || ledger.raise.get() on:change=move |ev| ledger.raise.set(event_target_checked(&ev)) />
                    {format!(
                        "Confirm the raise: the account's stored budget is ε = {stored}. A budget is only lowered otherwise; the raise is recorded in the ledger and the privacy report."
                    )}
                </label>
            }
        })
    }
}
