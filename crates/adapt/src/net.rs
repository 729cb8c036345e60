//! The network: the paper's three fully connected layers over the sentence embeddings
//! (DP-KPS appendix C.1.2), `d → h₁ → h₂ → K` with ReLU between them. [`Net::forward`] returns
//! both the second hidden layer's activations and the logits, so the CORAL term can align
//! either (`super::CoralOn`; the logits by default, as Sun & Saenko's last layer).
//!
//! Initialised from a seeded ChaCha stream (not candle's unseedable CPU generator), as PyTorch
//! initialises `nn.Linear`: weights and biases uniform in ±1/√fan_in. So a seed fixes the
//! model: the same data, parameters and seed give the same bytes.

use candle_core::{DType, Device, Result, Tensor, Var};
use rand_core::RngCore;

/// One dense layer: `y = x·Wᵀ + b`, W of shape (out, in).
#[derive(Clone)]
pub(crate) struct Dense {
    pub(crate) w: Var,
    pub(crate) b: Var,
}

impl Dense {
    fn init(inputs: usize, outputs: usize, rng: &mut dyn RngCore) -> Result<Dense> {
        let bound = 1.0 / (inputs as f32).sqrt();
        let mut uniform = |n: usize| -> Vec<f32> {
            // 24 random bits → [0, 1) exactly representable in f32, then to [−bound, bound).
            (0..n).map(|_| ((rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0) * bound).collect()
        };
        let w = Var::from_vec(uniform(outputs * inputs), (outputs, inputs), &Device::Cpu)?;
        let b = Var::from_vec(uniform(outputs), outputs, &Device::Cpu)?;
        Ok(Dense { w, b })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.matmul(&self.w.as_tensor().t()?)?.broadcast_add(self.b.as_tensor())
    }

    pub(crate) fn inputs(&self) -> usize {
        self.w.as_tensor().dims().get(1).copied().unwrap_or(0)
    }

    pub(crate) fn outputs(&self) -> usize {
        self.w.as_tensor().dims().first().copied().unwrap_or(0)
    }
}

/// The three layers.
#[derive(Clone)]
pub(crate) struct Net {
    pub(crate) layers: [Dense; 3],
}

impl Net {
    pub(crate) fn init(inputs: usize, hidden: [usize; 2], classes: usize, rng: &mut dyn RngCore) -> Result<Net> {
        Ok(Net { layers: [Dense::init(inputs, hidden[0], rng)?, Dense::init(hidden[0], hidden[1], rng)?, Dense::init(hidden[1], classes, rng)?] })
    }

    /// Rebuilds a network from its six tensors, checking that the shapes chain.
    pub(crate) fn from_tensors(t: [Tensor; 6]) -> std::result::Result<Net, String> {
        let [w1, b1, w2, b2, w3, b3] = t;
        let mut layers = Vec::with_capacity(3);
        let mut width: Option<usize> = None;
        for (k, (w, b)) in [(w1, b1), (w2, b2), (w3, b3)].into_iter().enumerate() {
            let (&[out, inp], &[bias]) = (w.dims(), b.dims()) else {
                return Err(format!("layer {}: a weight matrix and a bias vector were expected", k + 1));
            };
            if bias != out || width.is_some_and(|w| w != inp) || out == 0 || inp == 0 {
                return Err(format!("layer {}: shapes {:?} and {:?} do not chain", k + 1, w.dims(), b.dims()));
            }
            width = Some(out);
            let as_f32 = |t: Tensor, what: &str| -> std::result::Result<Var, String> {
                let t = t.to_dtype(DType::F32).map_err(|e| e.to_string())?;
                let values: Vec<f32> = t.flatten_all().and_then(|f| f.to_vec1()).map_err(|e| e.to_string())?;
                if values.iter().any(|v| !v.is_finite()) {
                    return Err(format!("layer {}: its {what} hold a value that is not a finite number", k + 1));
                }
                Var::from_tensor(&t).map_err(|e| e.to_string())
            };
            layers.push(Dense { w: as_f32(w, "weights")?, b: as_f32(b, "biases")? });
        }
        let [a, b, c]: [Dense; 3] = layers.try_into().map_err(|_| "three layers were expected".to_string())?;
        Ok(Net { layers: [a, b, c] })
    }

    pub(crate) fn vars(&self) -> Vec<Var> {
        self.layers.iter().flat_map(|l| [l.w.clone(), l.b.clone()]).collect()
    }

    /// (the second hidden layer's activations, the logits) for an n × d batch.
    pub(crate) fn forward(&self, x: &Tensor) -> Result<(Tensor, Tensor)> {
        let h1 = self.layers[0].forward(x)?.relu()?;
        let h2 = self.layers[1].forward(&h1)?.relu()?;
        let logits = self.layers[2].forward(&h2)?;
        Ok((h2, logits))
    }

    pub(crate) fn inputs(&self) -> usize {
        self.layers[0].inputs()
    }

    pub(crate) fn classes(&self) -> usize {
        self.layers[2].outputs()
    }

    pub(crate) fn hidden(&self) -> [usize; 2] {
        [self.layers[0].outputs(), self.layers[1].outputs()]
    }

    /// The tensors by name, in the model file's order.
    pub(crate) fn named(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::with_capacity(6);
        for (k, l) in self.layers.iter().enumerate() {
            out.push((format!("layer{}.weight", k + 1), l.w.as_tensor().clone()));
            out.push((format!("layer{}.bias", k + 1), l.b.as_tensor().clone()));
        }
        out
    }
}
