//! The DP vote in the Generate card (`crate::state::vote`): what it costs, the button, its
//! progress, and per class what its release says, before anything is downloaded.

use leptos::prelude::*;

use crate::state::vote::planned;
use crate::state::{app, gen};
use crate::text;

/// Shown for a job whose run planned a vote: before it, its cost and the button; after it, the
/// per-class table (candidates, kept, share of the noisy votes kept, candidates that drew none).
#[component]
pub fn VotePanel() -> impl IntoView {
    let app = app();
    let g = gen();
    move || {
        let info = g.job.get()?;
        let job = g.with_job(Clone::clone)?;
        let (_, plan) = planned(&job)?;
        let ended = !info.running && info.done > 0;
        let unit = if app.summary.get().is_some_and(|s| s.persons.is_some()) { "person" } else { "document" };
        let shown = app.vote_of(&job);
        let can_vote = ended && app.summary.get().is_some() && !app.busy();
        let why_not = if !ended {
            Some("The vote starts once the documents are generated.")
        } else if app.summary.get().is_none() {
            Some("Load the corpus again (step 2): its documents vote.")
        } else {
            None
        };
        let job_for_click = job.clone();
        let voted = shown.is_some();
        Some(view! {
            <div class="vote" id="vote-panel" data-voted=voted.to_string()>
                <h3>"DP vote: keep the generated documents nearest your corpus"</h3>
                <p class="hint" id="vote-cost">{text::vote::cost_line(&plan, info.done, unit)}</p>
                {why_not.map(|w| view! { <p class="todo">{w}</p> })}
                <div class="actions">
                    <button id="vote-run" class="primary" prop:disabled=!can_vote on:click=move |_| app.vote(&job_for_click)>
                        {if voted { "Vote again (spends ε_select again)" } else { "Run the DP vote (spends ε_select)" }}
                    </button>
                </div>
                {move || app.vote_progress.get().map(|(done, total)| view! {
                    <p id="vote-progress" role="status">
                        // A share only, on a 0–100 scale (`text::vote::progress`).
                        <progress max=100 value=text::vote::percent(done, total) as f64 aria-label="share of the vote done"></progress>
                        {format!(" {} ", text::vote::progress(done, total))}
                        // Stops at the next document; an ε already recorded stays recorded.
                        <button id="vote-cancel" on:click=move |_| app.cancel()>"Cancel"</button>
                    </p>
                })}
                {move || app.vote_error.get().map(|e| view! { <p class="field-error" id="vote-error" role="alert">{e}</p> })}
                {shown.map(|v| view! { <VoteTable shown=v /> })}
            </div>
        })
    }
}

/// The vote's release per class, and what the downloads now hold.
#[component]
fn VoteTable(shown: crate::state::vote::VoteShown) -> impl IntoView {
    let r = &shown.result.record.vote;
    let rows = r
        .classes
        .iter()
        .map(|c| {
            let [label, candidates, kept, share, none] = text::vote::class_row(c);
            let key = label.clone();
            view! { <tr data-class=key><td>{label}</td><td>{candidates}</td><td class="kept">{kept}</td><td>{share}</td><td>{none}</td></tr> }
        })
        .collect_view();
    view! {
        <p id="vote-summary">{text::vote::summary(r, shown.kept.len(), shown.voted.len(), shown.result.other_class)}</p>
        <table id="vote-results" class="preview">
            <thead><tr><th>"class"</th><th>"candidates"</th><th>"kept"</th><th>"share of the noisy votes kept"</th><th>"drew none"</th></tr></thead>
            <tbody>{rows}</tbody>
        </table>
    }
}
