//! dpkps: differentially private synthetic text by keyphrase prompt seeding (DP-KPS).
//!
//! The pipeline core in this crate is plain Rust with no web types: it is compiled natively
//! (the `dpkps` CLI, tests, benchmarks) and to wasm32 (the browser app). Each stage takes a
//! typed artefact and returns the next one; every differentially private stage also returns
//! the ε it spent, which the [`ledger`] adds up. See ARCHITECTURE.md for the data flow.
//!
//! Neighbouring relation, for every mechanism in this crate: two corpora are neighbours when
//! one is obtained from the other by adding or removing ONE document (with its label); labels
//! come from a fixed public set of classes declared before the run ([`classes`]), so the
//! classes of a release never depend on the data. Every sensitivity stated next to a mechanism
//! is derived from that relation.

pub mod adapt;
pub mod classes;
pub mod corpus;
pub mod dp;
pub mod embed;
pub mod eval;
pub mod export;
pub mod linalg;
pub mod local_key;
pub mod llm;
pub mod ledger;
pub mod overlap;
pub mod pipeline;
pub mod sample;
pub mod text;
pub mod units;
pub(crate) mod trig;
pub mod public_vocab;
pub mod replay;

pub mod preview;
pub mod prompt;
pub mod protocol;
pub mod run;

#[cfg(all(not(target_arch = "wasm32"), feature = "embed"))]
pub mod cli;

/// Assets and worker scripts from beside the page or from inside it (the single-file build).
#[cfg(target_arch = "wasm32")]
pub mod inpage;

/// The app's UI thread (Leptos). Built with `ui` and without `embed`, so that the UI never
/// carries the model and the worker never carries the UI.
#[cfg(all(target_arch = "wasm32", feature = "ui", not(feature = "embed")))]
pub mod ui;

/// The app's Web Worker: every long or private computation runs there.
#[cfg(all(target_arch = "wasm32", feature = "embed"))]
pub mod worker;
