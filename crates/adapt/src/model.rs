//! A trained classifier and its file: the safetensors format (the six weight tensors, f32,
//! little-endian) with the class names, the training settings and the embedding model's
//! checksum in its metadata. About 0.5 MB at the default widths; the page writes it and the
//! CLI reads it (`dpkps train --model`, `dpkps predict`), and any safetensors reader can.

use std::collections::BTreeMap;

use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};

use super::net::Net;
use super::tensors::Named;
use super::{AdaptError, Matrix, TrainParams};

/// The metadata key and value that mark a dpkps classifier file.
pub const MODEL_FORMAT: &str = "dpkps-classifier/1";

/// The class of one document and the model's probability for it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub class: usize,
    pub probability: f32,
}

/// A trained network with its class names.
#[derive(Clone)]
pub struct Classifier {
    labels: Vec<String>,
    net: Net,
    params: TrainParams,
    /// The checksum of the embedding model whose vectors it classifies, when known.
    pub embedding_model: Option<String>,
}

impl std::fmt::Debug for Classifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Classifier").field("labels", &self.labels).field("hidden", &self.net.hidden()).field("inputs", &self.net.inputs()).finish()
    }
}

impl Classifier {
    pub(crate) fn new(labels: Vec<String>, net: Net, params: TrainParams) -> Classifier {
        Classifier { labels, net, params, embedding_model: None }
    }

    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    pub fn params(&self) -> &TrainParams {
        &self.params
    }

    /// The embedding width it expects.
    pub fn inputs(&self) -> usize {
        self.net.inputs()
    }

    /// The most probable class of each row, `batch` rows at a time.
    pub fn predict(&self, x: &Matrix) -> Result<Vec<Prediction>, AdaptError> {
        if x.cols != self.inputs() {
            return Err(AdaptError::Input(format!("the documents' embeddings have {} dimensions; the model expects {}", x.cols, self.inputs())));
        }
        let mut out = Vec::with_capacity(x.rows);
        let index: Vec<usize> = (0..x.rows).collect();
        for chunk in index.chunks(1024) {
            let (_, logits) = self.net.forward(&crate::gather(x, chunk).map_err(crate::tensor_error)?).map_err(crate::tensor_error)?;
            let probs: Vec<Vec<f32>> = candle_nn::ops::softmax(&logits, 1).map_err(crate::tensor_error)?.to_vec2().map_err(crate::tensor_error)?;
            for p in probs {
                // First maximum: ties go to the lower class id, deterministically.
                let (class, probability) = p.iter().copied().enumerate().fold((0, f32::NEG_INFINITY), |best, (c, v)| if v > best.1 { (c, v) } else { best });
                out.push(Prediction { class, probability });
            }
        }
        Ok(out)
    }

    /// The model file's bytes (the safetensors layout, [`super::tensors::write`]).
    pub fn to_bytes(&self) -> Result<Vec<u8>, AdaptError> {
        let mut meta = BTreeMap::new();
        meta.insert("format", MODEL_FORMAT.to_string());
        meta.insert("labels", serde_json::to_string(&self.labels).unwrap_or_default());
        meta.insert("params", serde_json::to_string(&self.params).unwrap_or_default());
        if let Some(m) = &self.embedding_model {
            meta.insert("embedding_model", m.clone());
        }
        let mut named = Vec::with_capacity(6);
        for (name, t) in self.net.named() {
            let values: Vec<f32> = t.flatten_all().map_err(crate::tensor_error)?.to_vec1().map_err(crate::tensor_error)?;
            named.push(Named::f32(&name, t.dims().to_vec(), &values));
        }
        Ok(super::tensors::write(named, &meta))
    }

    /// Reads a model file, checking what it holds (any failure in plain words).
    pub fn from_bytes(bytes: &[u8]) -> Result<Classifier, AdaptError> {
        let bad = |m: String| AdaptError::ModelFile(m);
        let (_, header) = safetensors::SafeTensors::read_metadata(bytes).map_err(|e| bad(format!("not a safetensors file ({e})")))?;
        let meta = header.metadata().clone().unwrap_or_default();
        if meta.get("format").map(String::as_str) != Some(MODEL_FORMAT) {
            return Err(bad(format!("not a dpkps classifier (its metadata has no format \"{MODEL_FORMAT}\")")));
        }
        let labels: Vec<String> = meta.get("labels").and_then(|l| serde_json::from_str(l).ok()).ok_or_else(|| bad("its class names are missing".into()))?;
        let params: TrainParams = meta.get("params").and_then(|p| serde_json::from_str(p).ok()).unwrap_or_default();
        let mut tensors = candle_core::safetensors::load_buffer(bytes, &Device::Cpu).map_err(|e| bad(e.to_string()))?;
        let mut take = |name: &str| tensors.remove(name).ok_or_else(|| bad(format!("the tensor {name} is missing")));
        let six: [Tensor; 6] =
            [take("layer1.weight")?, take("layer1.bias")?, take("layer2.weight")?, take("layer2.bias")?, take("layer3.weight")?, take("layer3.bias")?];
        let net = Net::from_tensors(six).map_err(bad)?;
        if net.classes() != labels.len() || labels.len() < 2 {
            return Err(bad(format!("{} class names for {} outputs", labels.len(), net.classes())));
        }
        Ok(Classifier { labels, net, params, embedding_model: meta.get("embedding_model").cloned() })
    }
}
