//! Leaf helpers that every layer may use: the parameter error that the class set, the DP
//! mechanisms and the evaluation all return, and the hex codec of keys, seeds and checksums
//! (ledger, summaries, models, audit files). They import nothing from the crate, so a module
//! of any layer can use them without an import that points up the layers.

mod hex;
mod param;

pub use hex::{hex, unhex32};
pub use param::ParamError;
