//! What this crate's graph rewrites ([`crate::int_products`], [`crate::attention`]) share:
//! putting one op of ours in the place of a run of tract's nodes.

use tract_onnx::prelude::*;

/// `op`, named `name` and wired to `inputs`, in place of what produces `replaced` (the nodes
/// that fed only it are dropped when the model is compacted): Ok(true). Ok(false), the model
/// unchanged, where the patch cannot be made (a shape the op does not take): that part of the
/// graph stays tract's.
pub(crate) fn put_in_place<O: Into<Box<dyn TypedOp>>>(model: &mut TypedModel, name: &str, op: O, inputs: &[OutletId], replaced: OutletId) -> TractResult<bool> {
    let patch = |model: &TypedModel| -> TractResult<TypedModelPatch> {
        let mut patch = TypedModelPatch::default();
        let taps = inputs.iter().map(|&i| patch.tap_model(model, i)).collect::<TractResult<TVec<_>>>()?;
        let wire = patch.wire_node(name, op, &taps)?;
        patch.shunt_outside(model, replaced, wire[0])?;
        Ok(patch)
    };
    let Ok(patch) = patch(model) else { return Ok(false) };
    patch.apply(model)?;
    Ok(true)
}
