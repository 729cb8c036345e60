//! dpkps: differentially private synthetic text by keyphrase prompt seeding (DP-KPS).
//!
//! The pipeline core in this crate is plain Rust with no web types: it is compiled natively
//! (the `dpkps` CLI, tests, benchmarks) and to wasm32 (the browser app). Each stage takes a
//! typed artefact and returns the next one; every differentially private stage also returns
//! the ε it spent, which the [`ledger`] adds up. See ARCHITECTURE.md for the data flow.
//!
//! Neighbouring relation, for every mechanism in this crate: two corpora are neighbours when
//! one is obtained from the other by adding or removing ONE document (with its label); labels
//! come from a fixed public set of classes declared before the run ([`input::classes`]), so the
//! classes of a release never depend on the data. Every sensitivity stated next to a mechanism
//! is derived from that relation.

pub mod adapt;
pub mod base;
pub mod dp;
pub mod embed;
pub mod eval;
pub mod input;
pub mod ledger;
pub mod llm;
pub mod math;
pub mod replay;
pub mod run;
pub mod sample;

/// The messages between the page's UI thread and its worker (the `dpkps-web` and
/// `dpkps-worker` crates), and the shapes the CLI prints too. Only the front ends import it,
/// and it imports the core's types, never the other way.
pub mod protocol;
