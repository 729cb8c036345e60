//! The page's state: types holding signals, with methods for what the views show and do.
//! [`app::AppState`] is the corpus, the settings form and the worker's progress (with
//! [`check`], the DP utility check);
//! [`ledger::LedgerState`] the budget account and the ledger; [`generate::GenState`] the LLM
//! step; [`replay`] the replay check of its documents and [`vote`] the DP vote over them (signals of `AppState`: worker jobs); [`recipient::RecipientState`] the page's second mode, "Use a synthetic corpus". Each is provided as a context by `App`; the getters below fetch them in views.

pub mod app;
pub mod check;
pub mod events;
pub mod generate;
pub mod ledger;
pub mod recipient;
pub mod replay;
pub mod settings;
pub mod vote;

use leptos::prelude::*;

pub fn app() -> app::AppState {
    expect_context::<app::AppState>()
}

pub fn ledger() -> ledger::LedgerState {
    expect_context::<ledger::LedgerState>()
}

pub fn recipient() -> recipient::RecipientState {
    expect_context::<recipient::RecipientState>()
}

pub fn gen() -> generate::GenState {
    expect_context::<generate::GenState>()
}
