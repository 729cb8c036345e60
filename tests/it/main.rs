//! The crate's integration tests, one binary (each file below was a test binary of its own:
//! every one linked tract, candle and the tokenizer again, on CI's two cores). Run one area with
//! `cargo test --test it select::`, one test by its name as before.
#![cfg(not(target_arch = "wasm32"))]

mod common;

mod adapt;
mod cli;
mod embed;
mod eval;
mod generate;
mod select;
mod vectors;
