//! The sentence-embedding model of dpkps: the ONNX model run by tract, with its WordPiece
//! tokenizer ([`onnx`]). The CLI and the page's worker use it; the core sees it only as a
//! `dpkps_core::embed::Embed`, so nothing else links tract.

pub mod onnx;
pub mod profile;
pub mod int_products;
pub mod attention;
mod draws;
mod lanes;
mod rewrite;
