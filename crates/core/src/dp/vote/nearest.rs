//! The nearest candidate of one unit, by cosine: the largest dot product of unit-length
//! vectors. Computed for one unit at a time, in a fixed order of operations (the same lanes,
//! the same sums, whatever else is being voted), so that a unit's choice is a function of its
//! own vector and the public candidates alone (`super`, "Every other unit's vote is
//! unchanged"). A batched GEMM would be faster, but its rounding may follow the block a row
//! falls in, which other units decide; near a tie that could move a vote.

/// Lanes of the dot product: independent partial sums the compiler keeps in vector registers.
const LANES: usize = 16;

/// The dot product of `a` and `b` (equal lengths), in `LANES` partial sums over the whole
/// vector, added in a fixed order at the end.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..LANES {
            acc[l] += x[l] * y[l];
        }
    }
    for (l, (x, y)) in ra.iter().zip(rb).enumerate() {
        acc[l] += x * y;
    }
    // A fixed tree: (0+8), (1+9), … then halves again.
    let mut width = LANES / 2;
    while width > 0 {
        for l in 0..width {
            acc[l] += acc[l + width];
        }
        width /= 2;
    }
    acc[0]
}

/// The index of the candidate (rows of `candidates`, `dim` floats each, unit length) with the
/// largest cosine to `unit` (unit length); the first on a tie. `None` when there is none.
pub fn nearest(candidates: &[f32], dim: usize, unit: &[f32]) -> Option<usize> {
    if dim == 0 || unit.len() != dim {
        return None;
    }
    let mut best: Option<(usize, f32)> = None;
    for (j, c) in candidates.chunks_exact(dim).enumerate() {
        let s = dot(c, unit);
        match best {
            Some((_, b)) if s <= b => {}
            _ => best = Some((j, s)),
        }
    }
    best.map(|(j, _)| j)
}

/// `v` scaled to unit length (the norm in f64); `None` for a zero vector or one with a value
/// that is not a finite number.
pub fn unit_length(v: &[f32]) -> Option<Vec<f32>> {
    if v.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let norm = v.iter().map(|&x| f64::from(x) * f64::from(x)).sum::<f64>().sqrt();
    if !(norm > 0.0 && norm.is_finite()) {
        return None;
    }
    Some(v.iter().map(|&x| (f64::from(x) / norm) as f32).collect())
}
