//! The settings that are a choice rather than a number: sampler, vocabulary per class, reuse of
//! the private vocabulary, class proportions.

use leptos::prelude::*;

use dpkps_core::protocol::FieldError;
use crate::form;
use crate::state::app;

/// A number, as typed, with its error from the parsed settings.
#[component]
pub fn NumberField(id: &'static str, label: &'static str, help: &'static str, value: RwSignal<String>, errors: Signal<Vec<FieldError>>) -> impl IntoView {
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

/// The sampler, with one sentence on what the selected one keeps.
#[component]
pub fn SamplerField() -> impl IntoView {
    let f = app().settings;
    view! {
        <label class="field">
            <span class="name">"Sampler"</span>
            <select id="sampler" on:change=move |ev| f.choose_sampler(event_target_value(&ev))>
                {form::sampler_names()
                    .into_iter()
                    .map(|name| {
                        view! { <option value=name selected=move || f.sampler.get() == name>{name}</option> }
                    })
                    .collect_view()}
            </select>
            <span class="help" id="sampler-help">{move || f.sampler_description()}</span>
            {move || f.chosen_by_check.get().map(|id| view! { <span class="help" id="chosen-by">{crate::text::chosen_by_note(&id)}</span> })}
        </label>
    }
}

/// A setting that is on or off, with one sentence of help.
#[component]
pub fn CheckField(id: &'static str, label: &'static str, help: String, value: RwSignal<bool>) -> impl IntoView {
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
pub fn VocabPerClassField() -> impl IntoView {
    let help = "Each class picks its own top terms from its own noisy counts (same ε_voc). Off by default: one vocabulary for all classes kept more utility on every corpus measured.";
    view! { <CheckField id="vocab_per_class" label="Private vocabulary per class" help=help.to_string() value=app().settings.vocab_per_class /> }
}

/// Reuse of the private vocabulary an earlier run of this page released (`reuse::VocabKey`).
#[component]
pub fn ReuseVocabularyField() -> impl IntoView {
    let help = "When an earlier run in this page used the same corpus, vocabulary list, ε_voc, S, N, classes and \
                account, its private vocabulary is used again: it is already released, so ε_voc is not spent again.";
    view! { <CheckField id="reuse_vocabulary" label="Reuse the private vocabulary" help=help.to_string() value=app().settings.reuse_vocabulary /> }
}

/// The DP class counts (`dp::counts`): sequences per class in proportion, for a small ε.
#[component]
pub fn ProportionalField() -> impl IntoView {
    let help = format!(
        "Sequences per class in proportion to noisy class counts (ε = {}, added to the run), so a classifier \
         trained on them sees the classes' real balance. Off: the same number for every class.",
        dpkps_core::protocol::RunSettings::DEFAULT_EPS_COUNTS
    );
    view! { <CheckField id="proportional" label="Class proportions (DP)" help=help value=app().settings.proportional /> }
}

/// The DP vote over the generated candidates (`RunSettings::vote`): on or off, and when on its
/// ε_select, candidates per kept document, keep rule and share of units that vote, with the
/// extra prompts it costs and when its ε is spent (`text::vote::settings_note`).
#[component]
pub fn VoteFields(errors: Signal<Vec<FieldError>>) -> impl IntoView {
    let app = app();
    let f = app.settings;
    let help = "After generation, your corpus votes (with noise) for the generated documents nearest its own; only those are kept. \
                Costs ε_select and c − 1 more prompts per kept document.";
    let note = move || {
        let s = app.parsed_settings().ok()?;
        let v = s.vote?;
        let classes = s.class_set(f.labelled.get()).map(|c| c.len()).unwrap_or(1);
        Some(crate::text::vote::settings_note(&v, s.per_class, classes))
    };
    view! {
        <CheckField id="vote" label="DP vote over generated documents" help=help.to_string() value=f.vote />
        <Show when=move || f.vote.get()>
            <NumberField id="eps_select" label="ε_select" help="the vote's noise (1/ε on every vote count)" value=f.eps_select errors=errors />
            <NumberField id="candidates_per_kept" label="Candidates per kept document" help="c: the run draws c × the sequences; one in c is kept" value=f.candidates_per_kept errors=errors />
            <NumberField id="sample_rate" label="Share of units that vote" help="q ≤ 1: each by its own coin; below 1 costs less ε and embeds fewer documents" value=f.sample_rate errors=errors />
            <label class="field">
                <span class="name">"Keep rule"</span>
                <select id="keep_mode" on:change=move |ev| f.keep_mode.set(event_target_value(&ev))>
                    {dpkps_core::dp::vote::KeepMode::ALL
                        .into_iter()
                        .map(|m| view! { <option value=m.name() selected=move || f.keep_mode.get() == m.name()>{m.name()}</option> })
                        .collect_view()}
                </select>
                <span class="help">"top: the best noisy counts; proportional: drawn in proportion to them"</span>
            </label>
        </Show>
        {move || note().map(|n| view! { <p class="hint span-all" id="vote-note">{n}</p> })}
    }
}
