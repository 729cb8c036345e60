//! The utility check's figures, with the warning that they are not differentially private.

use leptos::prelude::*;

use crate::ui::state::{app, ledger};
use crate::ui::text;

/// The utility check: accuracy of each arm as a bar, with the warning that these figures are
/// not differentially private.
#[component]
pub fn Utility() -> impl IntoView {
    let app = app();
    let ledger = ledger();
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
                    <h2 id="util-h">"Utility check"</h2>
                    <p class="warning" role="note" id="utility-warning">
                        {if ledger.last_check_on_tuning.get() {
                            view! {
                                <strong>"Computed on the tuning file. "</strong>
                                "Nothing of your private corpus was read for these figures, and nothing was counted against it."
                            }
                                .into_any()
                        } else {
                            view! {
                                <strong>"Not differentially private: a privacy cost that ε does not count. "</strong>
                                "These figures are computed on your private documents. They are not released, but choosing "
                                "settings from them tunes the release on the private data. This check is recorded in the "
                                "ledger, and the privacy report says how many checks were run on this corpus and how many "
                                "settings they compared. Prefer a tuning file (below the Run button)."
                            }
                                .into_any()
                        }}
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
