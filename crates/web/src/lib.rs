//! The browser app: a thin Leptos (CSR) shell. The work happens in the Web Worker
//! (`crate::worker`), reached through `engine`.
//!
//! Only the plain parts compile on every target (and are tested natively): [`text`], [`chart`]
//! and [`form`] take and return plain values, with no web types and no Leptos. The rest is
//! built for the page's UI thread alone (wasm32, without `embed`).
//!
//! - `state`: types holding signals, with methods: the corpus and the run (`state::app`),
//!   the budget account and ledger (`state::ledger`), the LLM step (`state::generate`),
//!   the second mode, "Use a synthetic corpus" (`state::recipient`).
//! - `views`: small components that read those signals and call their methods.
//! - [`text`]: the sentences the views show, as plain functions of plain values; [`chart`]: the
//!   loss curve's SVG paths, likewise; [`form`]: the settings form's parsing into `RunSettings`.
//! - `io`: the browser's storage, downloads, Web Locks and HTTP, without signals.
//!
//! Dependencies go one way: views → state → io, engine; text, chart and form (which import
//! nothing else of `ui`) are read by views, state and io.

pub mod chart;
pub mod form;
pub mod text;

#[cfg(target_arch = "wasm32")]
mod engine;
#[cfg(target_arch = "wasm32")]
mod io;
#[cfg(target_arch = "wasm32")]
mod state;
#[cfg(target_arch = "wasm32")]
mod views;

#[cfg(target_arch = "wasm32")]
use leptos::prelude::*;

#[cfg(target_arch = "wasm32")]
use state::{app::AppState, generate::GenState, recipient::RecipientState};
#[cfg(target_arch = "wasm32")]
use views::{
    columns::Columns,
    intro::{ErrorBanner, Steps},
    ledger::LedgerPanel,
    llm::{Generate, ResumeBanner},
    model::{BenchPanel, Bundled, ModelPanel},
    privacy::Privacy,
    progress::Progress,
    recipient::{ModeSwitch, Recipient},
    results::Results,
    summary::Summary,
    upload::Upload,
    utility::{DpCheckResult, Utility},
};

pub use form::MAX_TERMS;

/// Mounts the app on `<body>`.
#[cfg(target_arch = "wasm32")]
pub fn mount() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(App);
}

#[cfg(target_arch = "wasm32")]
#[component]
fn App() -> impl IntoView {
    let app = AppState::new();
    provide_context(app);
    let gen = GenState::new();
    provide_context(gen);
    let rec = RecipientState::new();
    provide_context(rec);
    // The recipient's mode takes the events of its own jobs; every other event is the curator's.
    engine::start(move |ev| if rec.claims(&ev) { rec.apply(ev) } else { app.apply(ev) });
    app.restore_last_run();
    gen.restore();
    state::replay::auto_check(app, gen);
    state::ledger::init(app);
    let bench = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .is_some_and(|q| q.contains("bench"));
    view! {
        <a class="skip" href="#main">"Skip to content"</a>
        <header class="top">
            <h1>"dpkps"</h1>
            <p class="tagline">"Differentially private synthetic text, made in your browser"</p>
        </header>
        <main id="main" data-worker-ready=move || app.worker_ready.get().to_string()>
            <ModeSwitch />
            <Show when=move || !rec.on.get() fallback=|| view! { <Recipient /> }>
                <p class="assurance" role="note" id="assurance">{text::ASSURANCE}</p>
                <ResumeBanner />
                <Steps />
                <ErrorBanner />
                <Upload />
                <Columns />
                <Summary />
                <LedgerPanel />
                <Privacy />
                <Progress />
                <DpCheckResult />
                <Utility />
                <Results />
                <Generate />
            </Show>
            <ModelPanel />
            {bench.then(|| view! { <BenchPanel /> })}
            <Bundled />
        </main>
        <footer>
            "Method: DP-KPS (Nagesh, Chen, Mishra & Wagner, 2024). Total privacy cost: ε_voc + ε_kde (+ ε for the class counts), "
            "per document (add/remove-one-document neighbours), or per person with a person column (add/remove one person's documents)."
        </footer>
    }
}
