//! The CORAL loss (Sun & Saenko 2016, "Deep CORAL: Correlation Alignment for Deep Domain
//! Adaptation", eq. 1–3): the squared Frobenius distance between the feature covariances of a
//! source batch and a target batch,
//!
//! ```text
//! ℓ_CORAL = 1/(4d²) · ‖C_S − C_T‖²_F,   C = (XᵀX − (1ᵀX)ᵀ(1ᵀX)/n) / (n − 1)
//! ```
//!
//! for n × d feature batches X (the rows centred by their batch mean; n ≥ 2). Written with
//! candle's differentiable operations, so its gradient comes from reverse-mode automatic
//! differentiation with the rest of the network's (`super::train`), not by hand.

use candle_core::{Result, Tensor};

/// The d × d sample covariance of an n × d batch (n ≥ 2; the caller checks).
pub(crate) fn covariance(x: &Tensor) -> Result<Tensor> {
    let n = x.dim(0)?;
    let centred = x.broadcast_sub(&x.mean_keepdim(0)?)?;
    centred.t()?.contiguous()?.matmul(&centred)?.affine(1.0 / (n as f64 - 1.0), 0.0)
}

/// ℓ_CORAL between a source batch and a target batch of the same width d (a scalar tensor).
pub fn coral_loss(source: &Tensor, target: &Tensor) -> Result<Tensor> {
    let d = source.dim(1)?;
    if target.dim(1)? != d {
        candle_core::bail!("CORAL: source features are {d} wide, target features {}", target.dim(1)?)
    }
    if source.dim(0)? < 2 || target.dim(0)? < 2 {
        candle_core::bail!("CORAL: a covariance needs at least two rows in each batch")
    }
    let diff = (covariance(source)? - covariance(target)?)?;
    diff.sqr()?.sum_all()?.affine(1.0 / (4.0 * (d * d) as f64), 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Var};

    fn tensor(rows: &[[f32; 2]]) -> Tensor {
        let flat: Vec<f32> = rows.iter().flatten().copied().collect();
        Tensor::from_vec(flat, (rows.len(), 2), &Device::Cpu).unwrap()
    }

    #[test]
    fn the_loss_equals_a_hand_computed_value() {
        // S: mean (1, 1), centred rows (±1, ±1) → XᵀX = 4·I, C_S = 4/3·I.
        // T: mean (½, ½), centred rows ±(½, ½) → XᵀX = [[½, ½], [½, ½]], C_T = the same (n − 1 = 1).
        // C_S − C_T = [[5/6, −½], [−½, 5/6]]; ‖·‖²_F = 2·25/36 + 2·¼ = 17/9; d = 2: ℓ = 17/9 / 16 = 17/144.
        let s = tensor(&[[0., 0.], [2., 0.], [0., 2.], [2., 2.]]);
        let t = tensor(&[[0., 0.], [1., 1.]]);
        let loss = coral_loss(&s, &t).unwrap().to_scalar::<f32>().unwrap();
        assert!((loss - 17.0 / 144.0).abs() < 1e-6, "{loss}");
        // Symmetric, and zero between a batch and itself shifted (covariance ignores the mean).
        let back = coral_loss(&t, &s).unwrap().to_scalar::<f32>().unwrap();
        assert!((back - loss).abs() < 1e-7);
        let shifted = tensor(&[[5., 5.], [7., 5.], [5., 7.], [7., 7.]]);
        assert!(coral_loss(&s, &shifted).unwrap().to_scalar::<f32>().unwrap().abs() < 1e-7);
    }

    #[test]
    fn its_gradient_matches_finite_differences() {
        // ∂ℓ/∂S by automatic differentiation against central differences, on a 5 × 3 batch.
        let s0: Vec<f32> = (0..15).map(|k| ((k * 37 % 11) as f32 - 5.0) / 3.0).collect();
        let t = Tensor::from_vec((0..12).map(|k| ((k * 53 % 7) as f32 - 3.0) / 2.0).collect::<Vec<f32>>(), (4, 3), &Device::Cpu).unwrap();
        let s = Var::from_vec(s0.clone(), (5, 3), &Device::Cpu).unwrap();
        let grads = coral_loss(s.as_tensor(), &t).unwrap().backward().unwrap();
        let g: Vec<f32> = grads.get(s.as_tensor()).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        let at = |v: &[f32]| {
            let x = Tensor::from_vec(v.to_vec(), (5, 3), &Device::Cpu).unwrap();
            coral_loss(&x, &t).unwrap().to_scalar::<f32>().unwrap() as f64
        };
        let h = 1e-2f32;
        for k in 0..15 {
            let (mut up, mut down) = (s0.clone(), s0.clone());
            up[k] += h;
            down[k] -= h;
            let numeric = (at(&up) - at(&down)) / (2.0 * h as f64);
            assert!((numeric - g[k] as f64).abs() < 2e-3 * (1.0 + numeric.abs()), "element {k}: autodiff {} vs numeric {numeric}", g[k]);
        }
    }

    #[test]
    fn batches_too_small_or_of_different_widths_are_refused() {
        let s = tensor(&[[0., 0.], [1., 1.]]);
        let one = tensor(&[[0., 0.]]);
        assert!(coral_loss(&s, &one).is_err());
        let wide = Tensor::zeros((3, 4), candle_core::DType::F32, &Device::Cpu).unwrap();
        assert!(coral_loss(&s, &wide).is_err());
    }
}
