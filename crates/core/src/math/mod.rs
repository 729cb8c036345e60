//! Numeric kernels with no knowledge of the pipeline: dense matrices and the one GEMM
//! (`linalg`), and the random features' fast cos/sin (`trig`). Leaves: they import nothing
//! from the crate.

pub mod linalg;
pub(crate) mod trig;
