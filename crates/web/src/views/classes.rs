//! The public class set: declared names, the corpus's observed labels to tick, and what happens
//! to documents of other labels.

use leptos::prelude::*;

use dpkps_core::protocol::FieldError;
use crate::state::app;

/// The public class set (`dpkps_core::input::classes`): which label values become classes of the outputs.
/// Shown only for a corpus read with a label column; without one the run has a single class.
#[component]
pub fn ClassesField(errors: Signal<Vec<FieldError>>) -> impl IntoView {
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
                     Nothing is ticked for you, and the labels are listed in alphabetical order without their counts: a \
                     class set chosen by how many documents a label has would itself depend on the private data. Which \
                     labels you tick here is stated in the privacy report; typing the names from a public list avoids it."
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

/// The labels of the loaded corpus, to tick as classes: alphabetically and without counts,
/// because a class set picked by counts would depend on the private data.
#[component]
pub fn ObservedLabels() -> impl IntoView {
    let app = app();
    let f = app.settings;
    let rows = move || {
        let mut labels: Vec<String> = app.summary.get().map(|s| s.classes).unwrap_or_default().into_iter().map(|(l, _)| l).collect();
        labels.sort();
        labels
            .into_iter()
            .map(|label| {
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
pub fn OtherLabelsField() -> impl IntoView {
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
