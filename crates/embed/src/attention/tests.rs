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

/// The five nodes as the ONNX export writes them, for inputs [items, seq, heads, dim] and a
/// mask [items, 1, 1, seq]; the output [items, seq, heads, dim].
fn five_nodes(items: usize, seq: usize, heads: usize, dim: usize, scale: f32) -> TypedModel {
    let mut model = TypedModel::default();
    let shape = [items, seq, heads, dim];
    let q = model.add_source("q", f32::fact(shape)).unwrap();
    let k = model.add_source("k", f32::fact(shape)).unwrap();
    let v = model.add_source("v", f32::fact(shape)).unwrap();
    let mask = model.add_source("mask", f32::fact([items, 1, 1, seq])).unwrap();
    let ein = |axes: &str| EinSum::new(axes.parse().unwrap(), f32::datum_type());
    let scores = model.wire_node("scores", ein("ambk,anbk->abmn"), &[q, k]).unwrap()[0];
    let factor = model.add_const("factor", Tensor::from_shape(&[1, 1, 1, 1], &[scale]).unwrap()).unwrap();
    let scaled = model.wire_node("scaled", tract_onnx::tract_core::ops::math::mul(), &[scores, factor]).unwrap()[0];
    let masked = model.wire_node("masked", tract_onnx::tract_core::ops::math::add(), &[scaled, mask]).unwrap()[0];
    let soft = model.wire_node("softmax", Softmax::new(tvec![3], None, SoftmaxKind::Softmax), &[masked]).unwrap()[0];
    let out = model.wire_node("values", ein("abmk,akbn->ambn"), &[soft, v]).unwrap()[0];
    model.select_output_outlets(&[out]).unwrap();
    model
}

fn run(model: &TypedModel, inputs: &[Vec<f32>], shapes: &[[usize; 4]]) -> Vec<f32> {
    let tensors: TVec<TValue> = inputs.iter().zip(shapes).map(|(x, s)| Tensor::from_shape(s, x).unwrap().into_tvalue()).collect();
    let out = model.clone().into_runnable().unwrap().run(tensors).unwrap();
    out[0].try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()
}

/// The five nodes become one `Attention`, which gives tract's values within 10⁻⁵, for a shape
/// whose sequence is not a multiple of a block, with masked keys.
#[test]
fn five_nodes_become_one_with_tracts_values() {
    let (items, seq, heads, dim) = (2, 11, 3, 32);
    let model = five_nodes(items, seq, heads, dim, 0.176_776_7);
    let (fused_model, n) = fused(model.clone()).unwrap();
    assert_eq!(n, 1);
    let ops: Vec<String> = fused_model.nodes().iter().map(|node| node.op().name().to_string()).collect();
    assert!(ops.contains(&"Attention".to_string()) && !ops.iter().any(|o| o == "Softmax" || o == "EinSum"), "{ops:?}");

    let len = items * seq * heads * dim;
    let x = |f: f32| (0..len).map(|i| ((i as f32 + 1.0) * f).sin() * 2.5).collect::<Vec<f32>>();
    // The second item's last three tokens are padding.
    let mask: Vec<f32> = (0..items * seq).map(|i| if i >= items * seq - 3 { -10_000.0 } else { 0.0 }).collect();
    let inputs = [x(0.37), x(0.11), x(0.23), mask];
    let shapes = [[items, seq, heads, dim]; 3].into_iter().chain([[items, 1, 1, seq]]).collect::<Vec<_>>();
    let (want, got) = (run(&model, &inputs, &shapes), run(&fused_model, &inputs, &shapes));
    assert_eq!(want.len(), got.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() <= 1e-5, "{i}: {g} against {w}");
    }
}

/// A graph where the scale is not a constant, or no softmax follows, keeps its nodes.
#[test]
fn other_graphs_keep_their_nodes() {
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
