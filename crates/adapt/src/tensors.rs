//! Writing and reading the safetensors layout (8-byte little-endian header length, a JSON
//! header, the tensors' bytes) for the files of this module: the classifier
//! ([`super::Classifier`]) and an embedded shift task ([`super::shift_task`]).
//!
//! Written here rather than by `safetensors::serialize` so that the header's keys come in
//! sorted order and the same content is the same file (that function takes the metadata as a
//! `HashMap`, whose order changes from run to run). Read with the `safetensors` crate.

use std::collections::BTreeMap;

use super::{AdaptError, Matrix};

/// One tensor to write: its name, safetensors dtype ("F32", "U32"), shape and little-endian
/// bytes.
pub(crate) struct Named {
    pub name: String,
    pub dtype: &'static str,
    pub shape: Vec<usize>,
    pub bytes: Vec<u8>,
}

impl Named {
    pub(crate) fn f32(name: &str, shape: Vec<usize>, values: &[f32]) -> Named {
        Named { name: name.into(), dtype: "F32", shape, bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect() }
    }

    pub(crate) fn matrix(name: &str, m: &Matrix) -> Named {
        Named::f32(name, vec![m.rows, m.cols], &m.data)
    }

    pub(crate) fn u32(name: &str, values: &[u32]) -> Named {
        Named { name: name.into(), dtype: "U32", shape: vec![values.len()], bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect() }
    }
}

/// The file's bytes: tensors in name order, then the metadata, keys sorted.
pub(crate) fn write(mut tensors: Vec<Named>, meta: &BTreeMap<&str, String>) -> Vec<u8> {
    tensors.sort_by(|a, b| a.name.cmp(&b.name));
    let mut header = serde_json::Map::new();
    let mut data: Vec<u8> = Vec::with_capacity(tensors.iter().map(|t| t.bytes.len()).sum());
    for t in tensors {
        let start = data.len();
        data.extend(t.bytes);
        header.insert(t.name, serde_json::json!({ "dtype": t.dtype, "shape": t.shape, "data_offsets": [start, data.len()] }));
    }
    header.insert("__metadata__".into(), serde_json::to_value(meta).unwrap_or_default());
    let mut text = serde_json::Value::Object(header).to_string().into_bytes();
    // The tensors start 8-byte aligned (the format pads its header with spaces).
    while !text.len().is_multiple_of(8) {
        text.push(b' ');
    }
    let mut out = Vec::with_capacity(8 + text.len() + data.len());
    out.extend((text.len() as u64).to_le_bytes());
    out.extend(text);
    out.extend(data);
    out
}

/// A parsed file: its metadata and its tensors by name; `bad` words every failure.
pub(crate) struct Read<'a> {
    pub meta: std::collections::HashMap<String, String>,
    file: safetensors::SafeTensors<'a>,
}

impl<'a> Read<'a> {
    pub(crate) fn parse(bytes: &'a [u8], bad: fn(String) -> AdaptError) -> Result<Read<'a>, AdaptError> {
        let (_, header) = safetensors::SafeTensors::read_metadata(bytes).map_err(|e| bad(format!("not a safetensors file ({e})")))?;
        let meta = header.metadata().clone().unwrap_or_default();
        let file = safetensors::SafeTensors::deserialize(bytes).map_err(|e| bad(format!("not a safetensors file ({e})")))?;
        Ok(Read { meta, file })
    }

    /// A two-dimensional f32 tensor as a matrix.
    pub(crate) fn matrix(&self, name: &str, bad: fn(String) -> AdaptError) -> Result<Matrix, AdaptError> {
        let t = self.file.tensor(name).map_err(|_| bad(format!("the tensor {name} is missing")))?;
        let (safetensors::Dtype::F32, &[rows, cols]) = (t.dtype(), t.shape()) else {
            return Err(bad(format!("the tensor {name} is not a matrix of f32")));
        };
        let data: Vec<f32> = t.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        if data.len() != rows * cols || data.iter().any(|v| !v.is_finite()) {
            return Err(bad(format!("the tensor {name} holds a value that is not a finite number")));
        }
        Ok(Matrix { rows, cols, data })
    }

    /// A one-dimensional u32 tensor.
    pub(crate) fn u32s(&self, name: &str, bad: fn(String) -> AdaptError) -> Result<Vec<u32>, AdaptError> {
        let t = self.file.tensor(name).map_err(|_| bad(format!("the tensor {name} is missing")))?;
        let (safetensors::Dtype::U32, &[_]) = (t.dtype(), t.shape()) else {
            return Err(bad(format!("the tensor {name} is not a list of u32")));
        };
        Ok(t.data().chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    }
}
