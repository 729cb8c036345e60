//! The CLI's error type: every error a command can end with, in plain words, and its exit
//! code. A leaf, so that every command's module imports it without importing `super`.

use dpkps_core::input::corpus::CorpusError;
use dpkps_core::dp::DpError;
use dpkps_core::ledger::LedgerError;
use dpkps_core::input::public_vocab::VocabError;

use super::generate::error::GenerateError;

/// Everything that can go wrong, in plain words.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    #[error(transparent)]
    Vocab(#[from] VocabError),
    #[error(transparent)]
    Dp(#[from] DpError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Summary(#[from] dpkps_core::dp::summary::SummaryError),
    #[error(transparent)]
    Embed(#[from] dpkps_core::embed::EmbedError),
    #[error(transparent)]
    Eval(#[from] dpkps_core::eval::EvalError),
    #[error(transparent)]
    Run(dpkps_core::run::RunError),
    #[error("{path}: {message}")]
    Input { path: String, message: String },
    #[error("could not write {path}: {source}")]
    Write { path: String, source: std::io::Error },
    #[error(transparent)]
    Llm(#[from] dpkps_core::llm::LlmError),
    #[error(transparent)]
    Generate(#[from] GenerateError),
    #[error("could not lock the privacy ledger {path} (its lock file, {path}.lock, keeps two runs from losing each other's spend): {source}")]
    LedgerLock { path: String, source: std::io::Error },
}

impl CliError {
    pub(super) fn exit_code(&self) -> u8 {
        match self {
            CliError::Write { .. } | CliError::LedgerLock { .. } | CliError::Dp(DpError::Rng(_)) => 1,
            CliError::Generate(e) => e.exit_code(),
            _ => 2,
        }
    }
}
