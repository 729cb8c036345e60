//! Step 4: the worker's stages as progress bars, and Cancel.

use leptos::prelude::*;

use dpkps_core::protocol::Stage;
use crate::state::app;
use crate::state::app::{stage_key, StageState};

/// The stages of a job as progress bars (the recipient's mode shows its own).
#[component]
pub fn StageList(stages: RwSignal<Vec<(Stage, StageState)>>) -> impl IntoView {
    let rows = move || {
        stages
            .get()
            .into_iter()
            .map(|(stage, st)| {
                let (value, max, text) = st.bar();
                let key = stage_key(stage);
                view! {
                    <li class="stage" data-stage=key data-state=st.name()>
                        <span class="name">{stage.title()}</span>
                        <progress max=max value=value aria-label=stage.title()></progress>
                        <span class="status">{text}</span>
                    </li>
                }
            })
            .collect_view()
    };
    view! { <ul class="stages">{rows}</ul> }
}

#[component]
pub fn Progress() -> impl IntoView {
    let app = app();
    view! {
        <Show when=move || !app.stages.get().is_empty()>
            <section aria-labelledby="prog-h" class="card" aria-live="polite">
                <h2 id="prog-h">"4. Progress"</h2>
                <StageList stages=app.stages />
                <Show when=move || app.busy()>
                    <button id="cancel" on:click=move |_| app.cancel()>"Cancel"</button>
                </Show>
            </section>
        </Show>
    }
}
