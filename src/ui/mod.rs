//! The browser app: a thin Leptos (CSR) shell over the core. No pipeline logic lives here;
//! components read signals and call into the core.

mod assets;

use leptos::prelude::*;

use assets::{AssetState, BundledAsset, BUNDLED};

/// Mounts the app on `<body>`.
pub fn mount() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

/// The six stages of DP-KPS as the curator meets them.
const STEPS: [(&str, &str, &str); 6] = [
    ("Upload", "Drop a CSV, TSV, JSONL or .txt corpus. It stays in this tab's memory.", "no privacy cost"),
    ("Match keyphrases", "Find terms of a public vocabulary (English or medical) in each document.", "no release"),
    ("DP vocabulary", "Noisy histogram of the first S terms per document; keep the top N.", "ε_voc"),
    ("Embed", "Embed terms with the bundled MiniLM model, run in the page by tract.", "no release"),
    ("DP keyphrase sequences", "Per-class DP kernel density estimates; sample keyphrase sequences.", "ε_kde"),
    ("Generate & download", "Send only the private keyphrases to your LLM endpoint; download the corpus and report.", "post-processing"),
];

#[component]
fn App() -> impl IntoView {
    view! {
        <a class="skip" href="#main">"Skip to content"</a>
        <header class="top">
            <h1>"dpkps"</h1>
            <p class="tagline">"Differentially private synthetic text, made in your browser"</p>
        </header>
        <main id="main">
            <p class="assurance" role="note">
                "Your documents never leave this page. Only differentially private keyphrases are ever sent, "
                "and only to the LLM endpoint you choose."
            </p>
            <Steps />
            <Bundled />
        </main>
        <footer>
            "Method: DP-KPS (Nagesh, Chen, Mishra & Wagner, 2024). Total privacy cost: ε_voc + ε_kde, "
            "document-level, add/remove-one-document neighbours."
        </footer>
    }
}

#[component]
fn Steps() -> impl IntoView {
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
fn Bundled() -> impl IntoView {
    let states: Vec<(BundledAsset, RwSignal<AssetState>)> =
        BUNDLED.iter().map(|a| (*a, RwSignal::new(AssetState::Loading))).collect();
    for (asset, state) in states.iter().cloned() {
        leptos::task::spawn_local(async move { state.set(assets::check(asset).await) });
    }
    let all_ready = {
        let states = states.clone();
        move || states.iter().all(|(_, s)| matches!(s.get(), AssetState::Ready(_)))
    };
    view! {
        <section aria-labelledby="assets-h" data-ready=move || all_ready().to_string() id="bundled">
            <h2 id="assets-h">"Bundled with this page"</h2>
            <p class="hint">"Loaded from this page's own address; nothing is fetched from the internet."</p>
            <ul class="assets">
                {states
                    .into_iter()
                    .map(|(asset, state)| {
                        view! {
                            <li>
                                <span class="name">{asset.title}</span>
                                <span class="status">{move || state.get().describe()}</span>
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        </section>
    }
}
