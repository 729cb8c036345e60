//! Step 5: the run's DP outputs (top terms, example sequences) and their downloads.

use leptos::prelude::*;

use crate::ui::io::download;
use crate::ui::state::app;
use crate::ui::text;

#[component]
pub fn Results() -> impl IntoView {
    let app = app();
    move || {
        app.result.get().map(|r| {
            let bars = text::top_terms(&r)
                .into_iter()
                .map(|(t, c, w)| {
                    view! {
                        <li>
                            <span class="term">{t}</span>
                            <span class="bar"><span style=w></span></span>
                            <span class="count">{c}</span>
                        </li>
                    }
                })
                .collect_view();
            let examples = text::examples(&r)
                .into_iter()
                .map(|(heading, sequences)| {
                    let items = sequences.into_iter().map(|s| view! { <li>{s}</li> }).collect_view();
                    view! {
                        <h4>{heading}</h4>
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
                        {text::spent_line(&r)}
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
