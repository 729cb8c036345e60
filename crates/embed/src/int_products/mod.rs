//! The model's products by its weights on integers: 16-bit activations times the bundled
//! model's own 8-bit weights, summed exactly in 32 bits ([`kernel`]).
//!
//! Why: in the page, tract runs every product in f32 on WebAssembly's 128-bit vectors, four
//! multiply-adds at a time, and the products by the weights are 84% of a document's model call
//! (docs/benchmarks.md, "Documents in the page and natively"). WebAssembly's `i32x4.dot_i16x8_s`
//! does eight at a time. The bundled model (`models/all-MiniLM-L6-v2.int8w.onnx`) stores those
//! weights as int8 with one scale per output column, so they are integers already: only the
//! activations are rounded, each row (one token's values) to integers of at most
//! [`activation_bound`] in magnitude under its own scale.
//!
//! What changes in a vector: the rounding of the activations, about 2⁻¹⁴ of a row's largest
//! value (K = 1,536) to 2⁻¹⁶ (K = 384), before each product; the reference test
//! (`tests/it/embed.rs`, cosine ≥ 0.999 against sentence-transformers) and the page's model
//! check bound what that does to a vector. What does not change:
//! - a row is rounded on its own values only, so a token's (and a document's) vector does not
//!   depend on the other rows of its batch (`dpkps_core::embed::rows`);
//! - the sums are exact integers and the scaling is the same f32 operations in the same order
//!   everywhere, so these products give the same bits natively and in the page.
//!
//! Where: [`on_integers`] replaces each f32 `EinSum` of an activation by a constant matrix whose
//! every column lies on an int8 grid (`w = q · s`, |q| ≤ 127 an integer, the column's largest
//! |q| = 127; a 0/1 matrix is on such a grid too, and then also only its activations are
//! rounded) with an
//! [`IntProduct`], taking in the `Add` of a constant bias that follows it (tract fuses that into
//! its own products; left alone it cost as much as the product natively) and a `GeluExact` after
//! that (the feed-forward product in's: [`gelu`]); any other product
//! (attention's, a model whose weights are not int8) stays on tract's f32 kernels. It runs on the
//! decluttered model, before tract optimises it. The bundled model has 36 such products (six a
//! layer: Q, K, V, the attention output over its heads, the feed-forward in and out).

mod check;
mod gelu;
mod kernel;

pub use check::check as check_kernel;

use std::sync::Arc;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::nn::GeluExact;

use kernel::Packed;

/// The largest activation magnitude for a product over `k` values: every sum stays within i32
/// (|a| ≤ bound, |w| ≤ 127, k terms), and within i16.
pub(crate) fn activation_bound(k: usize) -> i16 {
    let terms = 2 * k.div_ceil(2);
    (i32::MAX as usize / (127 * terms.max(1))).min(i16::MAX as usize) as i16
}

/// `x · W` for an activation `x` of shape [..., k], W the weights (int8 values and one f32 scale a
/// column), computed on integers.
#[derive(Debug, Clone)]
pub struct IntProduct {
    /// How many of the input's last axes are contracted (their sizes' product is `w.k`): one for
    /// a plain `x · W`, two where tract folded a reshape of heads into the product.
    contracted: usize,
    w: Arc<Packed>,
    /// Column j's scale: W[k][j] = q[k][j] · scales[j].
    scales: Arc<Vec<f32>>,
    /// A bias added to every row (the `Add` of a constant that followed the product, taken in:
    /// tract fuses it into its own products, and alone it cost more than the product natively).
    bias: Option<Arc<Vec<f32>>>,
    /// GELU on every value, after the bias (the `GeluExact` that followed, taken in: [`gelu`]).
    gelu: bool,
}

impl PartialEq for IntProduct {
    fn eq(&self, other: &Self) -> bool {
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        self.contracted == other.contracted
            && self.w == other.w
            && bits(&self.scales) == bits(&other.scales)
            && self.bias.as_deref().map(|b| bits(b)) == other.bias.as_deref().map(|b| bits(b))
            && self.gelu == other.gelu
    }
}
impl Eq for IntProduct {}

impl IntProduct {
    /// From weights of shape [c…, n] (`transposed`: [n, c…]), the c axes contracted against the
    /// input's last ones (k = their product), if every column is on an int8 grid; None if not.
    fn from_weights(w: &Tensor, transposed: bool) -> TractResult<Option<IntProduct>> {
        let plain = w.try_as_plain_ram()?;
        let v = plain.as_slice::<f32>()?;
        let shape = w.shape();
        let contracted = shape.len().saturating_sub(1);
        let n = if transposed { shape.first() } else { shape.last() }.copied().unwrap_or(0);
        let k = if n == 0 || contracted == 0 { 0 } else { v.len() / n };
        if k == 0 {
            return Ok(None);
        }
        let at = |kk: usize, j: usize| if transposed { v[j * k + kk] } else { v[kk * n + j] };
        let mut scales = Vec::with_capacity(n);
        let mut q = vec![0i16; k * n];
        for j in 0..n {
            if (0..k).any(|kk| !at(kk, j).is_finite()) {
                return Ok(None);
            }
            let top = (0..k).map(|kk| at(kk, j).abs()).fold(0f32, f32::max);
            let s = top / 127.0;
            for kk in 0..k {
                let x = at(kk, j);
                let r = if s > 0.0 { (x / s).round() } else { 0.0 };
                // On the grid: the value is r · s but for f32 rounding (the model's
                // DequantizeLinear is one product q · scale).
                if !(r.abs() <= 127.0 && (x - r * s).abs() <= s * 1e-3) {
                    return Ok(None);
                }
                q[kk * n + j] = r as i16;
            }
            scales.push(s);
        }
        Ok(Some(IntProduct { contracted, w: Arc::new(Packed::new(k, n, |kk, j| q[kk * n + j])), scales: Arc::new(scales), bias: None, gelu: false }))
    }

    /// The product of `rows` rows of `x` (each `k` long) into `out` (`rows · n` values), each of
    /// which it writes.
    fn apply_into(&self, x: &[f32], rows: usize, out: &mut [f32]) {
        let (k, len) = (self.w.k, 2 * self.w.pairs);
        let bound = activation_bound(k) as f32;
        let mut a = vec![0i16; rows * len];
        let row_scales: Vec<f32> = (0..rows).map(|m| kernel::quantize(&x[m * k..(m + 1) * k], bound, &mut a[m * len..m * len + k])).collect();
        let scaling = kernel::Scaling { rows: &row_scales, cols: &self.scales, bias: self.bias.as_deref().map(Vec::as_slice), gelu: self.gelu };
        kernel::product(&a, rows, &self.w, &scaling, out);
    }

    #[cfg(test)]
    fn apply(&self, x: &[f32], rows: usize) -> Vec<f32> {
        let mut out = vec![0f32; rows * self.w.n];
        self.apply_into(x, rows, &mut out);
        out
    }
}

impl Op for IntProduct {
    fn name(&self) -> StaticName {
        "IntProduct".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        let gelu = if self.gelu { ", then GELU" } else { "" };
        Ok(vec![format!("{}×{} int8 weights, 16-bit activations{gelu}", self.w.k, self.w.n)])
    }

    op_as_typed_op!();
}

impl EvalOp for IntProduct {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        let (k, rank) = (self.w.k, x.rank());
        let inner: usize = x.shape()[rank.saturating_sub(self.contracted)..].iter().product();
        ensure!(x.datum_type() == f32::datum_type() && rank >= self.contracted && inner == k, "IntProduct: expected f32 [..., {k}], got {:?} {:?}", x.datum_type(), x.shape());
        let rows = x.len() / k;
        let mut shape: TVec<usize> = x.shape()[..rank - self.contracted].into();
        shape.push(self.w.n);
        // Written in place: the kernel scales its sums straight into the output tensor, every
        // value of it, so it is not zeroed first (a pass over as much memory as the product
        // writes: about 1% of a native model call, `perf`; docs/benchmarks.md).
        // SAFETY: nothing reads the tensor before `apply_into` has written each of its `rows · n`
        // values (`kernel::product` writes every value by the way its loops are written; its
        // check tests that on every path); tract's own operations make their outputs the same way.
        let mut out = unsafe { Tensor::uninitialized::<f32>(&shape)? };
        self.apply_into(x.try_as_plain_ram()?.as_slice::<f32>()?, rows, out.try_as_plain_ram_mut()?.as_slice_mut::<f32>()?);
        Ok(tvec!(out.into_tvalue()))
    }
}

impl TypedOp for IntProduct {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let dims: TVec<TDim> = inputs[0].shape.iter().cloned().collect();
        ensure!(dims.len() >= self.contracted, "IntProduct: the input has fewer than {} axes", self.contracted);
        let (lead, inner) = dims.split_at(dims.len() - self.contracted);
        let inner: TDim = inner.iter().cloned().product();
        ensure!(inner == TDim::Val(self.w.k as i64), "IntProduct: the input's last axes are not {} values", self.w.k);
        let mut shape: TVec<TDim> = lead.into();
        shape.push(TDim::Val(self.w.n as i64));
        Ok(tvec!(f32::fact(ShapeFact::from_dims(shape))))
    }

    as_op!();
}

/// For an `EinSum` written `inputs[0],inputs[1]->output`: whether it is `x · W` with x's last
/// axes contracted against W's in the same order and W's one other axis the output's last
/// (`..k,kn->..n` or `..hk,hkn->..n`: Some(false); `..k,nk->..n`: Some(true)).
fn weights_layout(x: &str, w: &str, out: &str) -> Option<bool> {
    let (x, w, out): (Vec<char>, Vec<char>, Vec<char>) = (x.chars().collect(), w.chars().collect(), out.chars().collect());
    let (&n, out_lead) = out.split_last()?;
    let c = w.len().checked_sub(1).filter(|&c| c >= 1 && c <= x.len())?;
    let (lead, contracted) = x.split_at(x.len() - c);
    let distinct = x.iter().chain(&[n]).collect::<std::collections::BTreeSet<_>>().len() == x.len() + 1;
    if lead != out_lead || !distinct {
        return None;
    }
    if w[..c] == *contracted && w[c] == n {
        Some(false)
    } else if c == 1 && w[0] == n && w[1] == contracted[0] {
        Some(true)
    } else {
        None
    }
}

/// `model` with every product by int8-grid weights on integers (module docs), and how many.
pub(crate) fn on_integers(mut model: TypedModel) -> TractResult<(TypedModel, usize)> {
    let mut done = 0;
    for id in model.eval_order()? {
        let node = model.node(id).clone();
        let Some(ein) = node.op_as::<EinSum>() else { continue };
        if ein.q_params.is_some() || node.inputs.len() != 2 || ein.operating_dt != f32::datum_type() || node.outputs.len() != 1 {
            continue;
        }
        let x = model.outlet_fact(node.inputs[0])?;
        let Some(w) = model.outlet_fact(node.inputs[1])?.konst.clone() else { continue };
        if x.datum_type != f32::datum_type() || w.datum_type() != f32::datum_type() || w.rank() < 2 {
            continue;
        }
        let (ins, outs) = ein.axes.to_strs();
        let (Some(x_axes), Some(w_axes), Some(out_axes)) = (ins.first(), ins.get(1), outs.first()) else { continue };
        let Some(transposed) = weights_layout(x_axes, w_axes, out_axes) else { continue };
        let Some(mut op) = IntProduct::from_weights(&w, transposed)? else { continue };
        // The bias: an Add of a constant of N values, the product's only successor.
        let mut last = node.id;
        if let Some(add) = model.single_succ(node.id)? {
            let bin = add.op_as::<TypedBinOp>().filter(|b| b.0.name() == "Add" && b.1.is_none());
            let other = add.inputs.iter().find(|i| i.node != node.id);
            if let (Some(_), Some(&other), 2) = (bin, other, add.inputs.len()) {
                if let Some(b) = model.outlet_fact(other)?.konst.clone() {
                    let rank_ok = b.shape().iter().rev().skip(1).all(|&d| d == 1);
                    if b.datum_type() == f32::datum_type() && rank_ok && b.shape().last() == Some(&op.w.n) {
                        op.bias = Some(Arc::new(b.try_as_plain_ram()?.as_slice::<f32>()?.to_vec()));
                        last = add.id;
                    }
                }
            }
        }
        // GELU, tract's `GeluExact` in f32, the bias's (or the product's) only successor.
        if let Some(next) = model.single_succ(last)? {
            let is_gelu = next.op_as::<ElementWiseOp>().is_some_and(|e| e.0.is::<GeluExact>() && e.1.is_none_or(|dt| dt == f32::datum_type()));
            if is_gelu && next.inputs.len() == 1 {
                op.gelu = true;
                last = next.id;
            }
        }
        // A product whose patch cannot be made (a shape this op does not take) stays on tract's.
        if crate::rewrite::put_in_place(&mut model, &node.name, op, &[node.inputs[0]], OutletId::new(last, 0))? {
            done += 1;
        }
    }
    Ok((model.into_compact()?, done))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layouts_of_a_product_by_weights() {
        assert_eq!(weights_layout("amk", "kn", "amn"), Some(false));
        assert_eq!(weights_layout("amk", "nk", "amn"), Some(true));
        assert_eq!(weights_layout("mk", "kn", "mn"), Some(false));
        // Heads folded in: x [a, m, heads, head size] against W [heads, head size, n].
        assert_eq!(weights_layout("ambk", "bkn", "amn"), Some(false));
        assert_eq!(weights_layout("ambk", "kbn", "amn"), None);
        assert_eq!(weights_layout("ambk", "nbk", "amn"), None);
        // Not x · W: contracted elsewhere, W with a batch axis, output reordered, a shared axis.
        assert_eq!(weights_layout("akm", "kn", "amn"), None);
        assert_eq!(weights_layout("amk", "akn", "amn"), None);
        assert_eq!(weights_layout("amk", "kn", "man"), None);
        assert_eq!(weights_layout("amk", "km", "amm"), None);
    }

    #[test]
    fn the_bound_keeps_every_sum_in_i32() {
        for k in [1, 2, 3, 384, 1536, 4096, 100_000] {
            let b = activation_bound(k) as i64;
            assert!(b >= 1 && b * 127 * (2 * k.div_ceil(2)) as i64 <= i32::MAX as i64, "k {k}: {b}");
        }
        assert_eq!(activation_bound(384), i16::MAX);
        assert_eq!(activation_bound(1536), 11_008);
    }

    /// A product on integers is the f32 product but for the activations' rounding: within a
    /// small fraction of the largest term, on weights made as the bundled model's are (int8 and
    /// a scale a column); weights off the grid are refused.
    #[test]
    fn an_int8_product_is_the_float_product_within_the_rounding() {
        let (k, n, rows) = (384, 40, 5);
        let scales: Vec<f32> = (0..n).map(|j| 0.001 + j as f32 * 1e-4).collect();
        // Symmetric per column, as the bundled model's: each column's largest |q| is 127.
        let q: Vec<i16> = (0..k * n).map(|i| if i < n { 127 } else { ((i * 37 + i / 7) % 255) as i16 - 127 }).collect();
        let wf: Vec<f32> = (0..k * n).map(|i| q[i] as f32 * scales[i % n]).collect();
        let w = Tensor::from_shape(&[k, n], &wf).unwrap();
        let op = IntProduct::from_weights(&w, false).unwrap().expect("on the grid");
        let x: Vec<f32> = (0..rows * k).map(|i| ((i * 7919) % 1000) as f32 / 250.0 - 2.0).collect();
        let got = op.apply(&x, rows);
        for m in 0..rows {
            let top = x[m * k..(m + 1) * k].iter().fold(0f32, |t, v| t.max(v.abs()));
            for j in 0..n {
                let exact: f64 = (0..k).map(|kk| x[m * k + kk] as f64 * wf[kk * n + j] as f64).sum();
                // Each activation moves by at most half a step (top / bound); k of them.
                let tol = k as f64 * 0.5 * (top / activation_bound(k) as f32) as f64 * 127.0 * scales[j] as f64 * 1.01;
                assert!((got[m * n + j] as f64 - exact).abs() <= tol, "({m}, {j}): {} against {exact}", got[m * n + j]);
            }
        }
        // Transposed storage gives the same product.
        let wt: Vec<f32> = (0..n * k).map(|i| wf[(i % k) * n + i / k]).collect();
        let opt = IntProduct::from_weights(&Tensor::from_shape(&[n, k], &wt).unwrap(), true).unwrap().unwrap();
        assert_eq!(opt.apply(&x, rows), got);
        // Off the grid: left to tract.
        let mut off = wf.clone();
        off[3] += scales[3] * 0.4;
        assert!(IntProduct::from_weights(&Tensor::from_shape(&[k, n], &off).unwrap(), false).unwrap().is_none());
    }

    /// Not numbers stay not numbers: a weight that is not finite keeps the product on tract's
    /// f32 kernels, and a row holding one gives outputs that are not numbers. A row too small
    /// for a normal scale gives zeros (its integers never pass the bound).
    #[test]
    fn non_finite_and_tiny_values() {
        let (k, n) = (4, 2);
        let mut wf: Vec<f32> = vec![1.27, -1.27, 0.5, 0.25, -0.01, 0.0, 0.3, 0.02];
        let op = IntProduct::from_weights(&Tensor::from_shape(&[k, n], &wf).unwrap(), false).unwrap().unwrap();
        wf[2] = f32::NAN;
        assert!(IntProduct::from_weights(&Tensor::from_shape(&[k, n], &wf).unwrap(), false).unwrap().is_none());
        let x = [1.0f32, f32::NAN, 0.0, 2.0, 1.0, 0.5, -0.25, 2.0, 1e-40, -3e-41, 0.0, 1e-42];
        let out = op.apply(&x, 3);
        assert!(out[0].is_nan() && out[1].is_nan(), "{out:?}");
        assert!(out[2].is_finite() && out[3].is_finite(), "{out:?}");
        assert_eq!(&out[4..], &[0.0, 0.0]);
    }

    /// A bias taken in is added to every row after the scaling, as tract's Add did.
    #[test]
    fn a_bias_is_added_to_every_row() {
        let (k, n) = (4, 3);
        let wf: Vec<f32> = (0..k * n).map(|i| if i < n { 127.0 } else { (i as f32 * 5.0) % 50.0 - 25.0 } * 0.02).collect();
        let plain = IntProduct::from_weights(&Tensor::from_shape(&[k, n], &wf).unwrap(), false).unwrap().unwrap();
        let with = IntProduct { bias: Some(Arc::new(vec![1.0, -2.0, 0.5])), ..plain.clone() };
        let x = [0.3f32, -1.0, 2.0, 0.25, 1.0, 0.0, -0.5, 4.0];
        let (a, b) = (plain.apply(&x, 2), with.apply(&x, 2));
        for (i, (a, b)) in a.iter().zip(&b).enumerate() {
            assert_eq!(*b, a + [1.0, -2.0, 0.5][i % n]);
        }
        assert_ne!(plain, with);
    }

    /// `on_integers` on a graph: a product by int8-grid weights and the bias `Add` after it
    /// become one `IntProduct` (the same values within the rounding); a product by weights off
    /// the grid and a product of two activations stay tract's `EinSum`.
    #[test]
    fn on_integers_replaces_only_products_by_int8_weights() {
        let (m, k, n) = (3, 6, 4);
        let grid: Vec<f32> = (0..k * n).map(|i| if i < n { 127.0 } else { (i as f32 * 11.0) % 254.0 - 127.0 } * 0.01).collect();
        let mut off = grid.clone();
        off[n + 1] += 0.004;
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact([m, k])).unwrap();
        let y = model.add_source("y", f32::fact([m, k])).unwrap();
        let product = |model: &mut TypedModel, name: &str, a: OutletId, b: OutletId, axes: &str| {
            model.wire_node(name, EinSum::new(axes.parse().unwrap(), f32::datum_type()), &[a, b]).unwrap()[0]
        };
        let w = model.add_const("w", Tensor::from_shape(&[k, n], &grid).unwrap()).unwrap();
        let bias = model.add_const("bias", Tensor::from_shape(&[1, n], &[0.5f32, -1.0, 2.0, 0.0]).unwrap()).unwrap();
        let on_grid = product(&mut model, "on_grid", x, w, "mk,kn->mn");
        let biased = model.wire_node("bias_add", tract_onnx::tract_core::ops::math::add(), &[on_grid, bias]).unwrap()[0];
        let w_off = model.add_const("w_off", Tensor::from_shape(&[k, n], &off).unwrap()).unwrap();
        let off_grid = product(&mut model, "off_grid", x, w_off, "mk,kn->mn");
        let pair = product(&mut model, "pair", x, y, "mk,nk->mn");
        model.select_output_outlets(&[biased, off_grid, pair]).unwrap();

        let (ints, replaced) = on_integers(model.clone()).unwrap();
        assert_eq!(replaced, 1);
        let names = |model: &TypedModel, op: &str| model.nodes().iter().filter(|node| node.op().name() == op).map(|node| node.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&ints, "IntProduct"), ["on_grid"]);
        assert_eq!(names(&ints, "EinSum"), ["off_grid", "pair"]);
        assert!(names(&ints, "Add").is_empty(), "the bias Add is taken in: {:?}", names(&ints, "Add"));

        let xs: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let ys: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.11).cos()).collect();
        let inputs = || tvec![Tensor::from_shape(&[m, k], &xs).unwrap().into_tvalue(), Tensor::from_shape(&[m, k], &ys).unwrap().into_tvalue()];
        let run = |model: TypedModel| -> Vec<Vec<f32>> {
            let out = model.into_runnable().unwrap().run(inputs()).unwrap();
            out.iter().map(|t| t.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()).collect()
        };
        let (want, got) = (run(model), run(ints));
        // The product on integers within its rounding: K activations, each off by at most half
        // a step of its row's scale, times a weight of at most the grid's largest (1% slack for
        // the f32 arithmetic); the two products left to tract unchanged.
        within_rounding(&got[0], &want[0], &xs, &grid, (k, n), 1.0, 1e-6, "");
        assert_eq!(got[1..], want[1..]);
    }

    /// A `GeluExact` after the bias is taken in too: one `IntProduct`, the values tract's but
    /// for the activations' rounding and GELU's last bits.
    #[test]
    fn a_gelu_after_the_bias_is_taken_in() {
        let (m, k, n) = (5, 8, 12);
        let grid: Vec<f32> = (0..k * n).map(|i| if i < n { 127.0 } else { (i as f32 * 7.0) % 254.0 - 127.0 } * 0.01).collect();
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact([m, k])).unwrap();
        let w = model.add_const("w", Tensor::from_shape(&[k, n], &grid).unwrap()).unwrap();
        let bias = model.add_const("bias", Tensor::from_shape(&[1, n], &(0..n).map(|j| j as f32 * 0.1 - 0.5).collect::<Vec<f32>>()).unwrap()).unwrap();
        let p = model.wire_node("ff_in", EinSum::new("mk,kn->mn".parse().unwrap(), f32::datum_type()), &[x, w]).unwrap()[0];
        let p = model.wire_node("bias_add", tract_onnx::tract_core::ops::math::add(), &[p, bias]).unwrap()[0];
        let g = model.wire_node("gelu", tract_onnx::tract_core::ops::nn::gelu_exact::gelu_exact(), &[p]).unwrap()[0];
        model.select_output_outlets(&[g]).unwrap();
        let (ints, replaced) = on_integers(model.clone()).unwrap();
        assert_eq!(replaced, 1);
        let kinds: Vec<String> = ints.nodes().iter().map(|node| node.op().name().to_string()).collect();
        assert!(kinds.iter().all(|k| !k.contains("Gelu") && k != "Add" && k != "EinSum"), "{kinds:?}");
        let op = ints.nodes().iter().find_map(|node| node.op_as::<IntProduct>()).unwrap();
        assert!(op.gelu && op.bias.is_some());

        let xs: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.61).sin() * 2.0).collect();
        let run = |model: TypedModel| -> Vec<f32> {
            let out = model.into_runnable().unwrap().run(tvec![Tensor::from_shape(&[m, k], &xs).unwrap().into_tvalue()]).unwrap();
            out[0].try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()
        };
        let (want, got) = (run(model), run(ints));
        // GELU's slope is at most 1.13: the product's rounding bound (as in the test above) times
        // that, and 10⁻⁵ for the two erf's last bits.
        within_rounding(&got, &want, &xs, &grid, (k, n), 1.13, 1e-5, "");
    }

    /// Without a bias, the `GeluExact` right after the product is taken in; a `GeluExact` after a
    /// bias that something else reads as well is not (the bias is, and GELU stays tract's), and
    /// every output keeps tract's values within the rounding.
    #[test]
    fn gelu_is_taken_in_only_as_the_only_reader() {
        let (m, k, n) = (4, 8, 8);
        let grid: Vec<f32> = (0..k * n).map(|i| if i < n { 127.0 } else { (i as f32 * 5.0) % 254.0 - 127.0 } * 0.01).collect();
        let gelu = || tract_onnx::tract_core::ops::nn::gelu_exact::gelu_exact();
        let mut model = TypedModel::default();
        let x = model.add_source("x", f32::fact([m, k])).unwrap();
        let w = model.add_const("w", Tensor::from_shape(&[k, n], &grid).unwrap()).unwrap();
        let bias = model.add_const("bias", Tensor::from_shape(&[1, n], &[0.25f32; 8]).unwrap()).unwrap();
        // No bias: product → GELU.
        let p = model.wire_node("bare", EinSum::new("mk,kn->mn".parse().unwrap(), f32::datum_type()), &[x, w]).unwrap()[0];
        let bare = model.wire_node("bare_gelu", gelu(), &[p]).unwrap()[0];
        // product → bias → GELU, the bias's output read by a Mul too.
        let p = model.wire_node("shared", EinSum::new("mk,kn->mn".parse().unwrap(), f32::datum_type()), &[x, w]).unwrap()[0];
        let biased = model.wire_node("shared_bias", tract_onnx::tract_core::ops::math::add(), &[p, bias]).unwrap()[0];
        let shared = model.wire_node("shared_gelu", gelu(), &[biased]).unwrap()[0];
        let twice = model.wire_node("shared_twice", tract_onnx::tract_core::ops::math::add(), &[biased, biased]).unwrap()[0];
        model.select_output_outlets(&[bare, shared, twice]).unwrap();

        let (ints, replaced) = on_integers(model.clone()).unwrap();
        assert_eq!(replaced, 2);
        let ops: Vec<(String, bool, bool)> = ints.nodes().iter().filter_map(|node| node.op_as::<IntProduct>().map(|op| (node.name.clone(), op.bias.is_some(), op.gelu))).collect();
        assert_eq!(ops, [("bare".to_string(), false, true), ("shared".to_string(), true, false)]);
        let gelus: Vec<&str> = ints.nodes().iter().filter(|node| node.op().name().contains("Gelu")).map(|node| node.name.as_str()).collect();
        assert_eq!(gelus, ["shared_gelu"]);

        let xs: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.43).cos() * 1.5).collect();
        let run = |model: TypedModel| -> Vec<Vec<f32>> {
            let out = model.into_runnable().unwrap().run(tvec![Tensor::from_shape(&[m, k], &xs).unwrap().into_tvalue()]).unwrap();
            out.iter().map(|t| t.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()).collect()
        };
        let (want, got) = (run(model), run(ints));
        // As in the test above: the rounding's bound, times 2 for the output that adds the biased
        // product to itself, and GELU's slope and last bits.
        for (o, factor) in [(0, 1.13), (1, 1.13), (2, 2.0)] {
            within_rounding(&got[o], &want[o], &xs, &grid, (k, n), factor, 1e-5, &format!("output {o}, "));
        }
    }

    /// Each value of `got` (rows of `n`, from activations `xs` in rows of `k`) within `factor`
    /// times the rounding's bound of `want`, plus `slack`: K activations, each off by at most half
    /// a step of its row's scale, times a weight of at most the grid's largest (1% slack for the
    /// f32 arithmetic).
    #[allow(clippy::too_many_arguments)]
    fn within_rounding(got: &[f32], want: &[f32], xs: &[f32], grid: &[f32], (k, n): (usize, usize), factor: f32, slack: f32, what: &str) {
        let largest_weight = grid.iter().fold(0f32, |t, v| t.max(v.abs()));
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let top = xs[(i / n) * k..(i / n + 1) * k].iter().fold(0f32, |t, v| t.max(v.abs()));
            let step = top / activation_bound(k) as f32;
            assert!((g - w).abs() <= factor * k as f32 * 0.5 * step * largest_weight * 1.01 + slack, "{what}{i}: {g} against {w}");
        }
    }

    /// A row's result depends on that row alone.
    #[test]
    fn a_row_is_rounded_on_its_own() {
        let (k, n) = (6, 3);
        let wf: Vec<f32> = (0..k * n).map(|i| if i < n { -127.0 } else { (i as f32 * 13.0) % 200.0 - 100.0 } * 0.01).collect();
        let w = Tensor::from_shape(&[k, n], &wf).unwrap();
        let op = IntProduct::from_weights(&w, false).unwrap().expect("on the grid");
        let row = [0.3f32, -1.2, 0.05, 2.0, 0.0, -0.7];
        let alone = op.apply(&row, 1);
        let mut two = row.to_vec();
        two.extend([100.0, -300.0, 1e-3, 0.0, 5.0, 7.0]);
        assert_eq!(&op.apply(&two, 2)[..n], &alone[..]);
    }
}
