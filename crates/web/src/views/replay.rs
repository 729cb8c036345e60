//! The replay check under the Generate card's progress: where it stands, "Check again", the
//! choice to leave flagged documents out of the downloads, and the flagged ones (with the
//! words they share with a private document: private text, shown here only). The state and
//! its actions are `crate::state::replay`.

use leptos::prelude::*;

use crate::state::replay::ReplayStatus;
use crate::state::{app, gen};
use crate::text;

#[component]
pub fn ReplayPanel() -> impl IntoView {
    let app = app();
    let g = gen();
    // The loaded job, again whenever its progress changes.
    let job = Memo::new(move |_| {
        g.job.track();
        g.with_job(Clone::clone)
    });
    let status = Memo::new(move |_| app.replay_status(job.get().as_ref()));
    // The last completed check of this job, current or not: its flags still apply.
    let last = Memo::new(move |_| job.get().and_then(|j| app.last_replay(&j).map(|r| (r, app.replay_unchecked(&j)))));
    let line = move || {
        let st = status.get();
        let last = last.get();
        text::replay_line(&text::ReplayFacts {
            generated: st != ReplayStatus::Nothing,
            corpus: app.summary.get().is_some(),
            running: match st {
                ReplayStatus::Running(done, total) => Some((done, total)),
                _ => None,
            },
            checked: match &st {
                ReplayStatus::Checked(c) => Some((c.docs.len(), c.flagged().len())),
                _ => None,
            },
            earlier: last.as_ref().map(|(r, since)| (r.check.docs.len(), r.check.flagged().len(), *since)),
            answers_flagged: last.as_ref().map_or(0, |(r, _)| r.answers_flagged.len()),
            drop: app.drop_flagged.get(),
        })
    };
    let state = move || match status.get() {
        ReplayStatus::Nothing => "nothing",
        ReplayStatus::NoCorpus => "no-corpus",
        ReplayStatus::Running(..) => "running",
        ReplayStatus::NotChecked => "not-checked",
        ReplayStatus::Checked(_) => "checked",
    };
    // The flagged documents of the last check (those the downloads leave out).
    let flagged = move || match (last.get(), job.get()) {
        (Some((r, _)), Some(j)) => r.check.docs.iter().filter(|d| d.flagged).map(|d| text::replay_row(d, &j)).collect::<Vec<_>>(),
        _ => Vec::new(),
    };
    let can_check = move || matches!(status.get(), ReplayStatus::NotChecked | ReplayStatus::Checked(_)) && !app.busy() && !g.job.get().is_some_and(|j| j.running);
    view! {
        <div class="replay" id="replay" data-state=state data-flagged=move || flagged().len()>
            <h3>"Replay check (not differentially private)"</h3>
            <p class="hint">{text::replay_hint()}</p>
            <p id="replay-status" role="status">{line}</p>
            <div class="actions">
                <button id="replay-check" prop:disabled=move || !can_check() on:click=move |_| {
                    if let Some(j) = job.get_untracked() {
                        app.check_replay(&j);
                    }
                }>"Check again"</button>
                <label class="check">
                    <input id="replay-drop" type="checkbox" prop:checked=move || app.drop_flagged.get() on:change=move |ev| app.drop_flagged.set(event_target_checked(&ev)) />
                    "Leave the flagged documents out of the corpus downloads"
                </label>
            </div>
            {move || app.replay_error.get().map(|e| view! { <p class="field-error" id="replay-error" role="alert">{e}</p> })}
            <Show when=move || !flagged().is_empty()>
                <table class="replay-flagged" id="replay-table">
                    <tr>
                        <th>"document"</th><th>"label"</th><th>"longest shared run (words)"</th><th>"of them outside its keyphrases"</th>
                        <th>"rare word sequences"</th><th>"shared words (private text: shown here only)"</th>
                    </tr>
                    {move || flagged().into_iter().map(|[n, label, run, outside, rare, span]| view! {
                        <tr data-index=n.clone()><td>{n.clone()}</td><td>{label}</td><td>{run}</td><td>{outside}</td><td>{rare}</td><td class="private"><q>{span}</q></td></tr>
                    }).collect_view()}
                </table>
            </Show>
        </div>
    }
}
