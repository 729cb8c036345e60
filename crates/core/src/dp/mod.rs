//! Differential privacy: the noise source, exact samplers, and the mechanisms.
//!
//! Neighbouring relation (all mechanisms): corpora D and D' are neighbours when D' is D with
//! ONE document added or removed; its label is assigned to a class by the fixed public class
//! set (`crate::input::classes`). The privacy unit is the document.
//!
//! Each mechanism is a function plus its privacy map: it returns the artefact and a
//! [`crate::ledger::Spend`] stating the ε it used, and its proof argument sits in a comment
//! next to the code.
//!
//! # How to add a mechanism
//! Write one file here (or, for a release with samplers of its own, a family under
//! `crate::dp::summary`): the function that computes the exact integer counts, with the privacy map
//! in its module docs (neighbouring relation, L1 sensitivity Δ and why, composition), and a
//! test beside it that checks the loss empirically (`testing`, with an under-noised variant
//! it must catch). Draw the noise and write the ledger entry with [`laplace`]
//! (`laplace::scale(Δ, ε)`, `laplace::release_counts`, `laplace::spend(..).param(..).scope(..)`)
//! rather than by hand, and return the artefact with its [`crate::ledger::Spend`]. Then add it as
//! one step of the run in `crate::run::stages` (the one orchestration the CLI and the page's
//! worker share), whose `Recorder` commits the spend to the ledger before the artefact is used.

pub mod candidates;
pub mod counts;
pub mod laplace;
pub mod rng;
pub mod selection;
#[cfg(test)]
pub(crate) mod testing;
pub mod noise;
pub mod summary;
pub mod vocabulary;
pub mod vote;

pub use rng::SecureRng;

use crate::base::ParamError;

/// Checks a privacy parameter: finite and strictly positive. Values outside
/// [`EPSILON_MIN`, `EPSILON_MAX`] are refused too: below, the noise drowns everything; above,
/// the guarantee is void and the exact samplers' integer ranges would be exceeded.
pub fn check_epsilon(name: &'static str, eps: f64) -> Result<f64, ParamError> {
    if !eps.is_finite() || eps <= 0.0 {
        return Err(ParamError::new(name, eps, "must be a finite number greater than 0"));
    }
    if !(EPSILON_MIN..=EPSILON_MAX).contains(&eps) {
        return Err(ParamError::new(name, eps, "must be between 0.001 and 1000"));
    }
    Ok(eps)
}

pub const EPSILON_MIN: f64 = 1e-3;
pub const EPSILON_MAX: f64 = 1e3;

/// Errors of the DP stages.
#[derive(Debug, thiserror::Error)]
pub enum DpError {
    #[error(transparent)]
    Param(#[from] ParamError),
    #[error("the secure random number generator is not available: {0}")]
    Rng(String),
    #[error("the noise scale {0} cannot be represented exactly by the sampler")]
    Scale(String),
}
