//! `dpkps`, the native command-line tool: the CLI's library ([`cli`]), which the `dpkps` binary
//! starts. The pipeline lives in `dpkps_core`, the embedding model in `dpkps_embed`, the
//! recipient's classifier in `dpkps_adapt`.

pub mod cli;
