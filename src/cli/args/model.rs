//! The embedding model's options.

use std::path::PathBuf;

use clap::Args;

#[derive(Args, Clone)]
pub(crate) struct ModelArgs {
    /// ONNX sentence-embedding model [default: the bundled all-MiniLM-L6-v2].
    #[arg(long)]
    pub(crate) model: Option<PathBuf>,
    /// Its tokenizer.json [default: the bundled one].
    #[arg(long)]
    pub(crate) tokenizer: Option<PathBuf>,
}
