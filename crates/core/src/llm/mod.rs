//! The LLM step: OpenAI-compatible `/v1/chat/completions` (vLLM, llama.cpp server, Ollama,
//! hosted APIs). This module is the transport-free part: request bodies, reply parsing, the
//! retry policy, and the generation job (what is done, what is left), so it is tested
//! natively. The loop that sends is here too ([`generate`]), generic over the transport and the
//! store: the browser drives it with `fetch` and IndexedDB (`ui/state/generate/send.rs`), the CLI
//! with an HTTP client and files (`cli/generate/`).
//!
//! Privacy: a request body holds the messages of [`prompt`] and the model settings,
//! nothing else. Everything it is built from is a DP output or public.
//!
//! # Layout
//! One file per concern, each depending only on those above it:
//! - `error.rs`: [`LlmError`], which failures are retryable, the CORS advice.
//! - `endpoint.rs`: [`EndpointUrl`], the narrow URL parser and CSP source matching.
//! - `settings.rs`: [`LlmSettings`] and its checks (values, credentials, key, allowlist).
//! - `request.rs`: the URLs called, the request body, [`parse_reply`].
//! - `backoff.rs`: [`backoff_ms`], the wait between attempts (with jitter), and
//!   [`retry_after_s`], the Retry-After header in both its forms.
//! - `check.rs`: [`check_reply`], whether a reply is a document (prose using its keyphrases).
//! - `job.rs`: the [`Job`] (items, outcomes, the corpus exports).
//! - `audit.rs`: [`AuditEntry`], capping and pruning of the audit log.
//! - `runner.rs`: [`generate`], the sending loop itself (lanes, attempts, backoff, audit,
//!   saved outcomes) over four small traits that the page and the CLI implement.
//!
//! The submodules above are private; everything is re-exported here, so `crate::llm::Name` is the
//! one path for each item. Two public modules sit beside them, on the LLM side of a run too:
//! - `prompt.rs`: the prompts built from the DP sequences (the only text sent).
//! - `export.rs`: the CSV written for download, safe to open in a spreadsheet.

mod audit;
mod backoff;
mod check;
mod endpoint;
mod error;
pub mod export;
mod job;
pub mod prompt;
mod request;
mod runner;
mod settings;

pub use audit::{
    answer_key, answers_to_check, audit_to_prune, withhold_answers, AuditAnswer, AuditEntry, AuditPhase, Withheld, AUDIT_BODY_CAP,
    AUDIT_KEEP_JOBS, WITHHELD,
};
pub use backoff::{backoff_ms, http_date_unix_s, random_jitter, retry_after_s};
pub use check::{check_reply, ReplyCheck, ReplyForm};
pub use endpoint::EndpointUrl;
pub use error::{cors_advice, LlmError};
pub use job::{Item, Job, Outcome, OutcomeRecord};
pub use request::{parse_reply, within_cap, MODELS_REPLY_CAP, REPLY_CAP_MIN};
pub use runner::{generate, Clock, Control, Halt, JobStore, Reply, Transport, MAX_LANES};
pub use settings::LlmSettings;
