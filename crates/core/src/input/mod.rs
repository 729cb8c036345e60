//! What a run reads, up to the matched corpus: the private corpus (`corpus`), the public
//! vocabulary and its matcher (`public_vocab`, `text`), the public class set (`classes`), the
//! curator's preview of a file (`preview`), the matched corpus (`matched`) and its privacy
//! units (`units`). Together because they are the bottom of the house: none of them imports
//! a DP mechanism, the ledger or the run, which all read what they produce.

pub mod classes;
pub mod corpus;
pub mod matched;
pub mod preview;
pub mod public_vocab;
pub mod text;
pub mod units;
