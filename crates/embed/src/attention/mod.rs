//! Attention as one operation: `softmax(Q·Kᵀ · scale + mask) · V` over a BERT's heads, in place
//! of the five nodes the ONNX export writes it as (a product, a `Mul` by a constant, an `Add` of
//! the mask, a `Softmax`, a product).
//!
//! Why: in the page those five cost about a third of a 256-token note's model call once the
//! products by the weights ran on integers (docs/benchmarks.md, "Attention as one operation").
//! tract runs the two products on its general kernels: for each head it packs both sides of
//! QKᵀ (whose inner dimension is only the head's 32 values) and packs the whole 256 × 256 score
//! matrix again for AV, and its softmax is one more pass over the 12 × 256 × 256 scores.
//! [`kernel`] keeps four query rows' scores in a buffer of their own (their softmax while they
//! are in cache, no packing but K's transpose, a head at a time).
//!
//! What changes in a vector: the exponential (within 2 ulp of `f32::exp`) and the order of the
//! softmax's sum; the reference test and the page's model check bound the effect. What does not:
//! every item of a batch is computed from its own rows and mask only (a term's vector does not
//! depend on its batch-mates: `dpkps_core::embed::rows`), and the page and the CLI run the same
//! operations in the same order (WebAssembly SIMD, AVX2 or SSE), so they compute the same bits
//! (for head sizes that are a multiple of 8, as the bundled model's 32: `kernel`).

mod kernel;

pub use kernel::check as check_kernel;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::binary::TypedBinOp;
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::ops::nn::{Softmax, SoftmaxKind};

/// Attention over inputs Q [items, queries, heads, dim], K and V [items, keys, heads, dim] and a
/// mask [items or 1, 1, 1, keys] added to the scores; output as Q.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Attention {
    /// The scores' factor (1/√dim), as its bits.
    scale: u32,
}

impl Op for Attention {
    fn name(&self) -> StaticName {
        "Attention".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("softmax(QKᵀ · {} + mask) · V", f32::from_bits(self.scale))])
    }

    op_as_typed_op!();
}

impl EvalOp for Attention {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        ensure!(inputs.len() == 4 && inputs.iter().all(|t| t.datum_type() == f32::datum_type()), "Attention: expected 4 f32 inputs");
        let (q, k, v, m) = (inputs[0].shape(), inputs[1].shape(), inputs[2].shape(), inputs[3].shape());
        ensure!(shapes_fit(q, k, v, m, &1), "Attention: Q {q:?}, K {k:?}, V {v:?}, mask {m:?}");
        let sh = kernel::Shape { items: q[0], queries: q[1], keys: k[1], heads: q[2], dim: q[3] };
        let plain = |i: usize| inputs[i].try_as_plain_ram();
        let (qp, kp, vp, mp) = (plain(0)?, plain(1)?, plain(2)?, plain(3)?);
        // Written in place, as the products are, and not zeroed first.
        // SAFETY: nothing reads the tensor before `kernel::attend` has written every value of it
        // (each query row of each item and head, all `dim` values, by the way its loops are
        // written; its check tests that on the shapes it draws).
        let mut out = unsafe { Tensor::uninitialized::<f32>(q)? };
        let mut view = out.try_as_plain_ram_mut()?;
        kernel::attend(&sh, qp.as_slice::<f32>()?, kp.as_slice::<f32>()?, vp.as_slice::<f32>()?, Some(mp.as_slice::<f32>()?), f32::from_bits(self.scale), view.as_slice_mut::<f32>()?);
        Ok(tvec!(out.into_tvalue()))
    }
}

impl TypedOp for Attention {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == 4 && inputs.iter().all(|f| f.datum_type == f32::datum_type()), "Attention: expected 4 f32 inputs");
        let dims = |i: usize| inputs[i].shape.iter().cloned().collect::<Vec<TDim>>();
        let (q, k, v, m) = (dims(0), dims(1), dims(2), dims(3));
        ensure!(shapes_fit(&q, &k, &v, &m, &TDim::Val(1)), "Attention: Q {q:?}, K {k:?}, V {v:?}, mask {m:?}");
        Ok(tvec!(f32::fact(inputs[0].shape.clone())))
    }

    as_op!();
}

/// Whether the inputs' shapes are Q [items, queries, heads, dim], K and V [items, keys, heads,
/// dim], and the mask [items or 1, 1, 1, keys] (sizes or tract's symbolic dimensions).
fn shapes_fit<D: PartialEq>(q: &[D], k: &[D], v: &[D], m: &[D], one: &D) -> bool {
    q.len() == 4 && k.len() == 4 && k == v && q[0] == k[0] && q[2] == k[2] && q[3] == k[3]
        && m.len() == 4 && (m[0] == k[0] || m[0] == *one) && m[1] == *one && m[2] == *one && m[3] == k[1]
}

/// Whether `left,right->out` is QKᵀ as a BERT's heads give it, `amhd,anhd->ahmn` (any letters):
/// the items, the heads and the head's values shared, the queries' and keys' positions free.
fn scores_layout(left: &str, right: &str, out: &str) -> bool {
    let (l, r, o): (Vec<char>, Vec<char>, Vec<char>) = (left.chars().collect(), right.chars().collect(), out.chars().collect());
    let distinct = [l.first(), l.get(1), l.get(2), l.get(3), r.get(1)].into_iter().flatten().collect::<std::collections::BTreeSet<_>>().len() == 5;
    l.len() == 4 && r.len() == 4 && o.len() == 4 && distinct && r[0] == l[0] && r[2] == l[2] && r[3] == l[3] && o == [l[0], l[2], l[1], r[1]]
}

/// Whether `left,right->out` is the weights times V, `ahmn,anhd->amhd` (any letters).
fn values_layout(left: &str, right: &str, out: &str) -> bool {
    let (l, r, o): (Vec<char>, Vec<char>, Vec<char>) = (left.chars().collect(), right.chars().collect(), out.chars().collect());
    let distinct = [l.first(), l.get(1), l.get(2), l.get(3), r.get(3)].into_iter().flatten().collect::<std::collections::BTreeSet<_>>().len() == 5;
    l.len() == 4 && r.len() == 4 && o.len() == 4 && distinct && r[0] == l[0] && r[1] == l[3] && r[2] == l[1] && o == [l[0], l[2], l[1], r[3]]
}

/// An f32 product of two activations, its axes as written.
fn product_of_two(model: &TypedModel, node: &TypedNode) -> TractResult<Option<(String, String, String)>> {
    let Some(ein) = node.op_as::<EinSum>() else { return Ok(None) };
    if ein.q_params.is_some() || ein.operating_dt != f32::datum_type() || node.inputs.len() != 2 {
        return Ok(None);
    }
    for i in &node.inputs {
        let f = model.outlet_fact(*i)?;
        if f.konst.is_some() || f.datum_type != f32::datum_type() {
            return Ok(None);
        }
    }
    let (ins, outs) = ein.axes.to_strs();
    Ok(match (ins.first(), ins.get(1), outs.first()) {
        (Some(l), Some(r), Some(o)) => Some((l.to_string(), r.to_string(), o.to_string())),
        _ => None,
    })
}

/// The node's one successor if it is a binary `name` (Mul, Add) with no quantisation, and its
/// other input.
fn bin_succ<'m>(model: &'m TypedModel, id: usize, name: &str) -> TractResult<Option<(&'m TypedNode, OutletId)>> {
    let Some(next) = model.single_succ(id)? else { return Ok(None) };
    let ok = next.op_as::<TypedBinOp>().is_some_and(|b| b.0.name() == name && b.1.is_none()) && next.inputs.len() == 2;
    Ok(next.inputs.iter().find(|i| i.node != id).filter(|_| ok).map(|&other| (next, other)))
}

/// `model` with every attention written as the five nodes (module docs) replaced by one
/// [`Attention`], and how many. Anything else (another layout, a scale that is not one constant,
/// a mask of another shape, another softmax, a step read by another node or as an output) stays
/// as it is.
pub(crate) fn fused(mut model: TypedModel) -> TractResult<(TypedModel, usize)> {
    let mut done = 0;
    for id in model.eval_order()? {
        let node = model.node(id).clone();
        let Some((l, r, o)) = product_of_two(&model, &node)? else { continue };
        if !scores_layout(&l, &r, &o) {
            continue;
        }
        let Some((mul, factor)) = bin_succ(&model, id, "Mul")? else { continue };
        let Some(scale) = model.outlet_fact(factor)?.konst.clone().filter(|k| k.len() == 1 && k.datum_type() == f32::datum_type()) else { continue };
        let scale = scale.try_as_plain_ram()?.as_slice::<f32>()?[0];
        let Some((add, mask)) = bin_succ(&model, mul.id, "Add")? else { continue };
        let Some(soft) = model.single_succ(add.id)? else { continue };
        let is_softmax = soft.op_as::<Softmax>().is_some_and(|s| s.kind == SoftmaxKind::Softmax && s.quant_output_dt.is_none() && s.axes.as_slice() == [3]);
        let Some(av) = model.single_succ(soft.id)?.filter(|_| is_softmax) else { continue };
        let Some((l2, r2, o2)) = product_of_two(&model, av)? else { continue };
        if av.inputs[0].node != soft.id || !values_layout(&l2, &r2, &o2) {
            continue;
        }
        // The shapes the op takes (as `Attention::eval` checks them), a mask computed in the
        // graph, and no step between the first product and the last one read by anything else
        // (a model output among them would keep the five nodes running as well).
        let dims = |o: OutletId| -> TractResult<Vec<TDim>> { Ok(model.outlet_fact(o)?.shape.iter().cloned().collect()) };
        let m = model.outlet_fact(mask)?;
        let fits = m.konst.is_none() && m.datum_type == f32::datum_type()
            && shapes_fit(&dims(node.inputs[0])?, &dims(node.inputs[1])?, &dims(av.inputs[1])?, &dims(mask)?, &TDim::Val(1));
        let inner = [id, mul.id, add.id, soft.id];
        if !fits || model.outputs.iter().any(|o| inner.contains(&o.node)) {
            continue;
        }
        let op = Attention { scale: scale.to_bits() };
        let inputs = [node.inputs[0], node.inputs[1], av.inputs[1], mask];
        let (name, replaced) = (av.name.clone(), OutletId::new(av.id, 0));
        // An attention whose patch cannot be made stays as tract's five nodes.
        if crate::rewrite::put_in_place(&mut model, &name, op, &inputs, replaced)? {
            done += 1;
        }
    }
    Ok((model.into_compact()?, done))
}

#[cfg(test)]
mod tests;
