//! The utility checks' figures: the DP check on the loaded corpus (DP outputs, ε recorded),
//! and the non-DP check on a tuning file.

use leptos::prelude::*;

use crate::state::app;
use crate::text;

/// The utility check on the tuning file: accuracy of each arm as a bar, with the note that these
/// figures are not differentially private and read nothing of the corpus.
#[component]
pub fn Utility() -> impl IntoView {
    let app = app();
    move || {
        app.evaluation.get().map(|r| {
            let rows = r
                .arms
                .iter()
                .map(|a| {
                    let (name, w, accuracy, f1) = text::arm_row(a);
                    view! {
                        <li>
                            <span class="term">{name}</span>
                            <span class="bar"><span style=w></span></span>
                            <span class="count">{accuracy}</span>
                            <span class="f1">{f1}</span>
                        </li>
                    }
                })
                .collect_view();
            let not_scored = text::not_scored_rows(&r)
                .into_iter()
                .map(|(name, why)| {
                    view! {
                        <li class="not-scored">
                            <span class="term">{name}</span>
                            <span class="why">{why}</span>
                        </li>
                    }
                })
                .collect_view();
            view! {
                <section aria-labelledby="util-h" class="card" id="utility">
                    <h2 id="util-h">"Utility check on the tuning file"</h2>
                    <p class="warning" role="note" id="utility-warning">
                        <strong>"Computed on the tuning file; not differentially private. "</strong>
                        "Nothing of your private corpus was read for these figures, and nothing was counted against it."
                    </p>
                    <p class="hint">
                        {text::utility_hint(r.arms.first().map_or(0, |a| a.n_test))}
                    </p>
                    <ol class="bars utility" id="utility-arms">{rows}{not_scored}</ol>
                </section>
            }
        })
    }
}

/// The DP utility check on the loaded corpus: each sampler's noisy accuracy as a bar, the one
/// chosen, what the figures are (DP, ε recorded), and "Use" of the chosen sampler.
#[component]
pub fn DpCheckResult() -> impl IntoView {
    let app = app();
    move || {
        app.dp_check.get().map(|c| {
            let rows = c
                .result
                .arms
                .iter()
                .map(|a| {
                    let (name, w, accuracy) = text::dp_arm_row(a);
                    let chosen = c.chosen() == Some(a.sampler.as_str());
                    view! {
                        <li class:chosen=chosen>
                            <span class="term">{name}</span>
                            <span class="bar"><span style=w></span></span>
                            <span class="count">{accuracy}</span>
                        </li>
                    }
                })
                .collect_view();
            let note = text::dp_check_note(&c.id, &c.result);
            let chosen = c.chosen().map(|s| {
                let label = format!("Use {s}");
                let line = format!("Chosen: {s} (the highest noisy accuracy).");
                view! {
                    <p id="dp-check-chosen">{line}</p>
                    <button id="use-chosen" on:click=move |_| app.use_chosen()>{label}</button>
                }
            });
            view! {
                <section aria-labelledby="dp-check-h" class="card" id="dp-check">
                    <h2 id="dp-check-h">"Utility check (differentially private)"</h2>
                    <p class="hint" role="note" id="dp-check-note">{note}</p>
                    <p class="hint" id="dp-check-id">{format!("Check {}", c.id)}</p>
                    <ol class="bars utility" id="dp-check-arms">{rows}</ol>
                    {text::dp_check_flags(&c.result).map(|f| view! { <p class="hint" id="dp-check-flags">{f}</p> })}
                    {chosen}
                </section>
            }
        })
    }
}
