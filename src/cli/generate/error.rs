//! What stops `generate`, and the environment variable of the API key that its message names:
//! a leaf, so that the CLI's error type (`crate::cli::error`) can hold it without importing the
//! command.

use dpkps_core::llm::Halt;

/// The environment variable the API key is read from.
pub(crate) const KEY_VAR: &str = "DPKPS_LLM_KEY";

/// What stops `generate`, beyond bad input, in plain words.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("{dir} is in use by another `dpkps generate` (it holds {dir}/job.lock): wait until it ends, or stop it")]
    Busy { dir: String },
    #[error(
        "{path} holds another job: it differs in {what}. To resume it, give the options it was started with; \
         for a new job, give another --out-dir"
    )]
    OtherJob { path: String, what: String },
    #[error("this job was started with an API key: set {KEY_VAR} again to resume it. Nothing was sent")]
    KeyNeeded,
    #[error("generation stopped: {0}. Nothing more was sent; what was saved is kept: run the same command again to resume")]
    Halted(Halt),
    #[error(
        "{failed} of {total} documents failed (why: outcomes.jsonl and audit.jsonl); \
         run the same command with --retry-failed to send them again"
    )]
    Failed { failed: usize, total: usize },
}

impl GenerateError {
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            GenerateError::OtherJob { .. } | GenerateError::KeyNeeded => 2,
            GenerateError::Busy { .. } | GenerateError::Halted(_) | GenerateError::Failed { .. } => 1,
        }
    }
}
