use super::*;

#[test]
fn the_layouts_of_attentions_two_products() {
    // As tract writes the bundled model's (items a, queries m, keys n, heads b, values k).
    assert!(scores_layout("ambk", "anbk", "abmn"));
    assert!(values_layout("abmk", "akbn", "ambn"));
    // Other letters, the same roles.
    assert!(scores_layout("wxyz", "wvyz", "wyxv"));
    // Not these: the keys' and queries' places swapped, a letter repeated, another rank.
    assert!(!scores_layout("ambk", "anbk", "abnm"));
    assert!(!scores_layout("ammk", "anmk", "amnn"));
    assert!(!scores_layout("amk", "ank", "amn"));
    assert!(!values_layout("abmk", "akbn", "abmn"));
    assert!(!values_layout("abmk", "abkn", "ambn"));
}

/// How a test graph differs from the five nodes as the ONNX export writes them.
#[derive(Clone, Copy, PartialEq)]
enum Variant {
    /// As written: fused.
    Export,
    /// One mask for every item, [1, 1, 1, seq]: fused.
    OneMask,
    /// Not fused: the softmax over the queries' axis, a log-softmax, a scale per head, the scores
    /// also an output of the model, V with other head sizes than K.
    SoftmaxAxis2,
    LogSoftmax,
    ScalePerHead,
    ScoresOutput,
    NarrowV,
}

/// The five nodes for inputs [items, seq, heads, dim] and a mask [items, 1, 1, seq] (as
/// `variant` changes them); the output [items, seq, heads, dim].
fn graph(items: usize, seq: usize, heads: usize, dim: usize, scale: f32, variant: Variant) -> TypedModel {
    let mut model = TypedModel::default();
    let shape = [items, seq, heads, dim];
    let q = model.add_source("q", f32::fact(shape)).unwrap();
    let k = model.add_source("k", f32::fact(shape)).unwrap();
    let v_dim = if variant == Variant::NarrowV { dim / 2 } else { dim };
    let v = model.add_source("v", f32::fact([items, seq, heads, v_dim])).unwrap();
    let mask_items = if variant == Variant::OneMask { 1 } else { items };
    let mask = model.add_source("mask", f32::fact([mask_items, 1, 1, seq])).unwrap();
    let ein = |axes: &str| EinSum::new(axes.parse().unwrap(), f32::datum_type());
    let scores = model.wire_node("scores", ein("ambk,anbk->abmn"), &[q, k]).unwrap()[0];
    let factor = match variant {
        Variant::ScalePerHead => Tensor::from_shape(&[1, heads, 1, 1], &vec![scale; heads]).unwrap(),
        _ => Tensor::from_shape(&[1, 1, 1, 1], &[scale]).unwrap(),
    };
    let factor = model.add_const("factor", factor).unwrap();
    let scaled = model.wire_node("scaled", tract_onnx::tract_core::ops::math::mul(), &[scores, factor]).unwrap()[0];
    let masked = model.wire_node("masked", tract_onnx::tract_core::ops::math::add(), &[scaled, mask]).unwrap()[0];
    let (axis, kind) = match variant {
        Variant::SoftmaxAxis2 => (2, SoftmaxKind::Softmax),
        Variant::LogSoftmax => (3, SoftmaxKind::LogSoftmax),
        _ => (3, SoftmaxKind::Softmax),
    };
    let soft = model.wire_node("softmax", Softmax::new(tvec![axis], None, kind), &[masked]).unwrap()[0];
    let out = model.wire_node("values", ein("abmk,akbn->ambn"), &[soft, v]).unwrap()[0];
    let outputs = if variant == Variant::ScoresOutput { vec![out, scores] } else { vec![out] };
    model.select_output_outlets(&outputs).unwrap();
    model
}

fn run(model: &TypedModel, inputs: &[Vec<f32>], shapes: &[[usize; 4]]) -> Vec<f32> {
    let tensors: TVec<TValue> = inputs.iter().zip(shapes).map(|(x, s)| Tensor::from_shape(s, x).unwrap().into_tvalue()).collect();
    let out = model.clone().into_runnable().unwrap().run(tensors).unwrap();
    out[0].try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()
}

/// The five nodes become one `Attention`, which gives tract's values within 10⁻⁵, for a shape
/// whose sequence is not a multiple of a block, with masked keys, a mask per item or one for all.
#[test]
fn five_nodes_become_one_with_tracts_values() {
    let (items, seq, heads, dim) = (2, 11, 3, 32);
    for variant in [Variant::Export, Variant::OneMask] {
        let model = graph(items, seq, heads, dim, 0.176_776_7, variant);
        let (fused_model, n) = fused(model.clone()).unwrap();
        assert_eq!(n, 1);
        let ops: Vec<String> = fused_model.nodes().iter().map(|node| node.op().name().to_string()).collect();
        assert!(ops.contains(&"Attention".to_string()) && !ops.iter().any(|o| o == "Softmax" || o == "EinSum"), "{ops:?}");

        let len = items * seq * heads * dim;
        let x = |f: f32| (0..len).map(|i| ((i as f32 + 1.0) * f).sin() * 2.5).collect::<Vec<f32>>();
        let mask_items = if variant == Variant::OneMask { 1 } else { items };
        // The last three keys (of the second item, where there is a mask per item) are padding.
        let mask: Vec<f32> = (0..mask_items * seq).map(|i| if i >= mask_items * seq - 3 { -10_000.0 } else { 0.0 }).collect();
        let inputs = [x(0.37), x(0.11), x(0.23), mask];
        let shapes = [[items, seq, heads, dim]; 3].into_iter().chain([[mask_items, 1, 1, seq]]).collect::<Vec<_>>();
        let (want, got) = (run(&model, &inputs, &shapes), run(&fused_model, &inputs, &shapes));
        assert_eq!(want.len(), got.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-5, "{i}: {g} against {w}");
        }
    }
}

/// Graphs that are not the five nodes as written keep their nodes: another softmax, a scale that
/// is not one value, a step that is also an output, V of another shape; and a scale that is not
/// a constant.
#[test]
fn other_graphs_keep_their_nodes() {
    for variant in [Variant::SoftmaxAxis2, Variant::LogSoftmax, Variant::ScalePerHead, Variant::ScoresOutput, Variant::NarrowV] {
        let model = graph(2, 5, 2, 16, 0.25, variant);
        let (same, n) = fused(model.clone()).unwrap();
        assert_eq!(n, 0, "variant {}", variant as u8);
        assert_eq!(same.nodes().len(), model.nodes().len());
    }
    let mut model = TypedModel::default();
    let shape = [1, 4, 2, 8];
    let q = model.add_source("q", f32::fact(shape)).unwrap();
    let k = model.add_source("k", f32::fact(shape)).unwrap();
    let ein = EinSum::new("ambk,anbk->abmn".parse().unwrap(), f32::datum_type());
    let scores = model.wire_node("scores", ein, &[q, k]).unwrap()[0];
    let factor = model.add_source("factor", f32::fact([1, 1, 1, 1])).unwrap();
    let scaled = model.wire_node("scaled", tract_onnx::tract_core::ops::math::mul(), &[scores, factor]).unwrap()[0];
    model.select_output_outlets(&[scaled]).unwrap();
    let (same, n) = fused(model.clone()).unwrap();
    assert_eq!(n, 0);
    assert_eq!(same.nodes().len(), model.nodes().len());
}
