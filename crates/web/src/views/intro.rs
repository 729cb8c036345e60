//! What the page says first: how it works (the six steps) and any problem.

use leptos::prelude::*;

use crate::state::app;

/// The six stages of DP-KPS as the curator meets them, with the defaults
/// (`RunSettings::default`): one private vocabulary Ṽ for all classes, the `histogram` sampler
/// (`SummaryParams::DEFAULT_SAMPLER`) with DP class counts, and no smoothing, so nothing is embedded.
const STEPS: [(&str, &str, &str); 6] = [
    ("Upload", "Drop a CSV, TSV, JSONL or .txt corpus. It stays in this tab's memory.", "no privacy cost"),
    ("Match keyphrases", "Find terms of a public vocabulary (English or medical) in each document.", "no release"),
    ("DP vocabulary", "A noisy histogram of each document's S most used terms over the whole public vocabulary; its top N terms are the private vocabulary Ṽ.", "ε_voc"),
    ("Embed", "Only for the kernel-density samplers (or smoothing): embed terms with the bundled MiniLM model, run in the page by tract. The default histogram sampler embeds nothing.", "no release"),
    ("DP keyphrase sequences", "Per class, a noisy histogram of keyphrase frequencies over Ṽ (default sampler), plus DP class counts; sample keyphrase sequences, and leave out classes whose release is noise.", "ε_kde + a small ε for class counts"),
    ("Generate & download", "Send prompts made of the DP keyphrases and your public prompt text (class names, template, examples) to your LLM endpoint; download the corpus and report.", "post-processing"),
];

#[component]
pub fn Steps() -> impl IntoView {
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
pub fn ErrorBanner() -> impl IntoView {
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
