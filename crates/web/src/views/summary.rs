//! The loaded corpus's exact counts (for the curator's eyes only).

use leptos::prelude::*;

use crate::state::app;
use crate::text;

#[component]
pub fn Summary() -> impl IntoView {
    let app = app();
    move || {
        app.summary.get().map(|s| {
            let classes = text::classes_line(&s);
            view! {
                <section aria-labelledby="sum-h" class="card" id="summary">
                    <h2 id="sum-h">"Your corpus (exact counts, for your eyes only)"</h2>
                    <dl class="facts">
                        <dt>"Documents"</dt><dd id="n-docs">{s.documents}</dd>
                        <dt>"Empty, skipped"</dt><dd>{s.empty_skipped}</dd>
                        <dt>"Without any vocabulary term"</dt><dd>{s.docs_without_terms}</dd>
                        <dt>"Classes"</dt><dd id="classes">{classes}</dd>
                        <dt>"Privacy unit"</dt><dd id="privacy-unit">{text::unit_line(&s)}</dd>
                        <dt>"Vocabulary"</dt><dd>{text::vocabulary_line(&s)}</dd>
                        {move || app.background.get().map(|(done, total)| view! {
                            <dt>"Own list's vectors"</dt>
                            <dd id="own-list-vectors">{text::own_list_note(done, total)}</dd>
                        })}
                    </dl>
                </section>
            }
        })
    }
}
