//! A domain-shift task with its documents already embedded, in one file: what
//! `dpkps bench adapt --cache` writes and reads back, and what `tests/it/adapt.rs` trains on
//! (tests/fixtures/adapt_shift_task.safetensors), so comparing settings or asserting CORAL's
//! margin costs seconds, not the hour of embedding.
//!
//! The safetensors layout ([`super::tensors`]): the four embedded sets as f32 matrices
//! (`labelled`, `unlabelled`, `test_shifted`, `test_as_is`), the class of each labelled and
//! test row (u32), and in the metadata the class names, the embedding model's checksum, a
//! SHA-256 of every set's texts (`key`: the cache is used only for the same texts) and a few
//! rows' texts (`samples`), so a reader without the corpus can re-embed those rows and check
//! the matrices came from this model.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::tensors::{Named, Read};
use super::{AdaptError, Matrix};

/// The metadata key and value that mark a task file.
pub const TASK_FORMAT: &str = "dpkps-shift-task/1";

/// The sets, by the names their matrices have in the file.
pub const SETS: [&str; 4] = ["labelled", "unlabelled", "test_shifted", "test_as_is"];

/// One row's text, kept to check the embeddings against the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub set: String,
    pub row: usize,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ShiftTask {
    pub classes: Vec<String>,
    /// The labelled source documents, as they are.
    pub labelled: Matrix,
    pub labelled_class: Vec<usize>,
    /// The unlabelled target documents, rewritten.
    pub unlabelled: Matrix,
    /// The test documents rewritten, and the same documents as they are.
    pub test_shifted: Matrix,
    pub test_as_is: Matrix,
    pub test_class: Vec<usize>,
    /// The embedding model's checksum.
    pub model: String,
    /// SHA-256 (hex) of the four sets' texts.
    pub key: String,
    pub samples: Vec<Sample>,
}

fn bad(m: String) -> AdaptError {
    AdaptError::Input(format!("the shift task file cannot be read: {m}"))
}

impl ShiftTask {
    /// The matrix of a set named in [`SETS`].
    pub fn set(&self, name: &str) -> Option<&Matrix> {
        match name {
            "labelled" => Some(&self.labelled),
            "unlabelled" => Some(&self.unlabelled),
            "test_shifted" => Some(&self.test_shifted),
            "test_as_is" => Some(&self.test_as_is),
            _ => None,
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut meta = BTreeMap::new();
        meta.insert("format", TASK_FORMAT.to_string());
        meta.insert("classes", serde_json::to_string(&self.classes).unwrap_or_default());
        meta.insert("embedding_model", self.model.clone());
        meta.insert("key", self.key.clone());
        meta.insert("samples", serde_json::to_string(&self.samples).unwrap_or_default());
        let ids = |v: &[usize]| v.iter().map(|&c| c as u32).collect::<Vec<u32>>();
        let mut t: Vec<Named> = SETS.iter().filter_map(|&s| self.set(s).map(|m| Named::matrix(s, m))).collect();
        t.push(Named::u32("labelled_class", &ids(&self.labelled_class)));
        t.push(Named::u32("test_class", &ids(&self.test_class)));
        super::tensors::write(t, &meta)
    }

    /// Reads a task file, checking that its parts fit together.
    pub fn from_bytes(bytes: &[u8]) -> Result<ShiftTask, AdaptError> {
        let f = Read::parse(bytes, bad)?;
        if f.meta.get("format").map(String::as_str) != Some(TASK_FORMAT) {
            return Err(bad(format!("its metadata has no format \"{TASK_FORMAT}\"")));
        }
        let text = |k: &str| f.meta.get(k).cloned().ok_or_else(|| bad(format!("its metadata has no {k}")));
        let classes: Vec<String> = serde_json::from_str(&text("classes")?).map_err(|e| bad(format!("classes: {e}")))?;
        let samples: Vec<Sample> = serde_json::from_str(&text("samples")?).map_err(|e| bad(format!("samples: {e}")))?;
        let class_ids = |name: &str, rows: usize| -> Result<Vec<usize>, AdaptError> {
            let v = f.u32s(name, bad)?;
            if v.len() != rows || v.iter().any(|&c| c as usize >= classes.len()) {
                return Err(bad(format!("{name} does not give one known class per row")));
            }
            Ok(v.into_iter().map(|c| c as usize).collect())
        };
        let labelled = f.matrix("labelled", bad)?;
        let test_shifted = f.matrix("test_shifted", bad)?;
        let task = ShiftTask {
            labelled_class: class_ids("labelled_class", labelled.rows)?,
            test_class: class_ids("test_class", test_shifted.rows)?,
            unlabelled: f.matrix("unlabelled", bad)?,
            test_as_is: f.matrix("test_as_is", bad)?,
            labelled,
            test_shifted,
            classes,
            model: text("embedding_model")?,
            key: text("key")?,
            samples,
        };
        let widths = SETS.iter().filter_map(|&s| task.set(s)).map(|m| m.cols);
        if widths.clone().any(|w| w != task.labelled.cols) || task.test_as_is.rows != task.test_shifted.rows {
            return Err(bad("its sets do not have the same width, or the two test sets differ in length".into()));
        }
        if task.samples.iter().any(|s| task.set(&s.set).is_none_or(|m| s.row >= m.rows)) {
            return Err(bad("a sample names a row the file does not hold".into()));
        }
        Ok(task)
    }
}
