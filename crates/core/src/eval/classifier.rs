//! The evaluation's classifier: multinomial logistic (softmax) regression with L2, fitted by
//! full-batch L-BFGS from zero weights.
//!
//! Why our own rather than linfa: the model is ~150 lines, the objective is convex, and the
//! crate must stay light (CI builds on 2 cores; the core also compiles to wasm32). Why
//! L-BFGS: it reaches the optimum of the convex objective to a tight tolerance without a
//! learning-rate schedule, so every arm gets the same, converged model for the same
//! hyper-parameters, and the result is a deterministic function of the data (zero start, no
//! minibatches, no random initialisation: the same training set always gives the same model).
//!
//! Objective, over n rows x_i with classes y_i and weights W (K × d) plus biases b:
//!
//! ```text
//! J(W, b) = (1/n) Σ_i [log Σ_c exp(W_c·x_i + b_c) − (W_{y_i}·x_i + b_{y_i})] + (λ/2)‖W‖²
//! ```
//!
//! (biases are not penalised). Rows are stored sparsely, so the bag-of-keyphrases view with
//! thousands of columns costs only its non-zeros; dense views (mean embeddings) are
//! standardised first with [`Standardiser`] (fitted on the training rows only).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// Rows of a (sparse) design matrix, CSR layout.
#[derive(Debug, Clone, Default)]
pub struct Rows {
    cols: usize,
    start: Vec<usize>,
    index: Vec<u32>,
    value: Vec<f64>,
}

impl Rows {
    pub fn new(cols: usize) -> Rows {
        Rows { cols, start: vec![0], index: Vec::new(), value: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.start.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Appends a dense row (its length must be `cols`).
    pub fn push_dense(&mut self, row: &[f64]) {
        debug_assert_eq!(row.len(), self.cols);
        for (j, &v) in row.iter().enumerate().take(self.cols) {
            self.index.push(j as u32);
            self.value.push(v);
        }
        self.start.push(self.index.len());
    }

    /// Appends a sparse row of (column, value); columns ≥ `cols` are ignored.
    pub fn push_sparse(&mut self, row: &[(u32, f64)]) {
        for &(j, v) in row {
            if (j as usize) < self.cols {
                self.index.push(j);
                self.value.push(v);
            }
        }
        self.start.push(self.index.len());
    }

    fn row(&self, i: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let r = self.start[i]..self.start[i + 1];
        self.index[r.clone()].iter().map(|&j| j as usize).zip(self.value[r].iter().copied())
    }
}

/// Column-wise standardisation (x − mean)/sd, fitted on training rows. A constant column gets
/// sd 1 (it is only centred), so it cannot blow up.
#[derive(Debug, Clone)]
pub struct Standardiser {
    mean: Vec<f64>,
    scale: Vec<f64>,
}

impl Standardiser {
    pub fn fit(rows: &[Vec<f64>]) -> Standardiser {
        let d = rows.first().map_or(0, Vec::len);
        let n = rows.len().max(1) as f64;
        let mut mean = vec![0.0; d];
        for r in rows {
            mean.iter_mut().zip(r).for_each(|(m, v)| *m += v / n);
        }
        let mut var = vec![0.0; d];
        for r in rows {
            var.iter_mut().zip(r).zip(&mean).for_each(|((s, v), m)| *s += (v - m) * (v - m) / n);
        }
        let scale = var.into_iter().map(|v| if v.sqrt() > 1e-12 { 1.0 / v.sqrt() } else { 1.0 }).collect();
        Standardiser { mean, scale }
    }

    pub fn apply(&self, row: &[f64]) -> Vec<f64> {
        row.iter().zip(&self.mean).zip(&self.scale).map(|((v, m), s)| (v - m) * s).collect()
    }

    /// All rows, standardised, as a dense design matrix.
    pub fn design(&self, rows: &[Vec<f64>]) -> Rows {
        let mut out = Rows::new(self.mean.len());
        for r in rows {
            out.push_dense(&self.apply(r));
        }
        out
    }
}

/// Hyper-parameters (the same for every arm of an evaluation).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SoftmaxParams {
    /// λ, the L2 penalty on the weights (not the biases).
    pub l2: f64,
    /// At most this many L-BFGS iterations.
    pub max_iter: usize,
    /// Stop when every gradient entry is below this in absolute value.
    pub tol: f64,
}

impl Default for SoftmaxParams {
    fn default() -> Self {
        SoftmaxParams { l2: 1e-2, max_iter: 300, tol: 1e-6 }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClassifierError {
    #[error("there are no training examples")]
    NoData,
    #[error("{rows} training rows but {labels} labels")]
    Mismatch { rows: usize, labels: usize },
    #[error("a label ({label}) is not below the number of classes ({classes})")]
    Label { label: usize, classes: usize },
    #[error("the L2 penalty must be a finite number ≥ 0 (got {0})")]
    Penalty(f64),
}

/// A fitted model: K rows of d weights then a bias, row-major.
#[derive(Debug, Clone, PartialEq)]
pub struct Softmax {
    classes: usize,
    cols: usize,
    w: Vec<f64>,
    /// L-BFGS iterations used (for diagnostics).
    pub iterations: usize,
}

impl Softmax {
    pub fn fit(x: &Rows, y: &[usize], classes: usize, p: &SoftmaxParams) -> Result<Softmax, ClassifierError> {
        if x.is_empty() {
            return Err(ClassifierError::NoData);
        }
        if x.len() != y.len() {
            return Err(ClassifierError::Mismatch { rows: x.len(), labels: y.len() });
        }
        if let Some(&label) = y.iter().find(|&&c| c >= classes) {
            return Err(ClassifierError::Label { label, classes });
        }
        if !p.l2.is_finite() || p.l2 < 0.0 {
            return Err(ClassifierError::Penalty(p.l2));
        }
        let mut model = Softmax { classes, cols: x.cols(), w: vec![0.0; classes * (x.cols() + 1)], iterations: 0 };
        let objective = |w: &[f64], grad: &mut [f64]| model_objective(w, x, y, classes, p.l2, grad);
        let (w, iterations) = lbfgs(model.w.clone(), objective, p.max_iter, p.tol);
        model.w = w;
        model.iterations = iterations;
        Ok(model)
    }

    pub fn classes(&self) -> usize {
        self.classes
    }

    /// The most likely class of every row (ties: the lowest class).
    pub fn predict(&self, x: &Rows) -> Vec<usize> {
        let mut z = vec![0.0; self.classes];
        (0..x.len())
            .map(|i| {
                logits(&self.w, self.cols, x, i, &mut z);
                let mut best = 0;
                for c in 1..self.classes {
                    if z[c] > z[best] {
                        best = c;
                    }
                }
                best
            })
            .collect()
    }
}

/// z_c = W_c·x_i + b_c.
fn logits(w: &[f64], cols: usize, x: &Rows, i: usize, z: &mut [f64]) {
    for (c, zc) in z.iter_mut().enumerate() {
        let wc = &w[c * (cols + 1)..][..cols + 1];
        *zc = wc[cols] + x.row(i).filter(|&(j, _)| j < cols).map(|(j, v)| wc[j] * v).sum::<f64>();
    }
}

/// J and its gradient (module docs).
fn model_objective(w: &[f64], x: &Rows, y: &[usize], classes: usize, l2: f64, grad: &mut [f64]) -> f64 {
    let cols = x.cols();
    let n = x.len() as f64;
    grad.iter_mut().for_each(|g| *g = 0.0);
    let mut z = vec![0.0; classes];
    let mut loss = 0.0;
    for (i, &yi) in y.iter().enumerate() {
        logits(w, cols, x, i, &mut z);
        let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = z.iter().map(|v| (v - max).exp()).sum();
        loss += max + sum.ln() - z[yi];
        for c in 0..classes {
            // ∂/∂z_c = softmax_c − [c = y_i], scaled by 1/n.
            let d = ((z[c] - max).exp() / sum - if c == yi { 1.0 } else { 0.0 }) / n;
            if d == 0.0 {
                continue;
            }
            let g = &mut grad[c * (cols + 1)..][..cols + 1];
            for (j, v) in x.row(i) {
                if j < cols {
                    g[j] += d * v;
                }
            }
            g[cols] += d;
        }
    }
    let mut penalty = 0.0;
    for c in 0..classes {
        for j in 0..cols {
            let k = c * (cols + 1) + j;
            penalty += w[k] * w[k];
            grad[k] += l2 * w[k];
        }
    }
    loss / n + 0.5 * l2 * penalty
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Limited-memory BFGS (10 pairs) with a backtracking Armijo line search; returns the
/// minimiser found and the iterations used. Deterministic.
fn lbfgs(mut x: Vec<f64>, mut f: impl FnMut(&[f64], &mut [f64]) -> f64, max_iter: usize, tol: f64) -> (Vec<f64>, usize) {
    const MEMORY: usize = 10;
    let n = x.len();
    let mut g = vec![0.0; n];
    let mut fx = f(&x, &mut g);
    let mut history: VecDeque<(Vec<f64>, Vec<f64>, f64)> = VecDeque::with_capacity(MEMORY);
    let (mut x_new, mut g_new) = (vec![0.0; n], vec![0.0; n]);
    for it in 0..max_iter {
        if g.iter().all(|v| v.abs() < tol) {
            return (x, it);
        }
        // Two-loop recursion: d = −H·g.
        let mut d: Vec<f64> = g.iter().map(|v| -v).collect();
        let mut alpha = vec![0.0; history.len()];
        for (k, (s, y, rho)) in history.iter().enumerate().rev() {
            alpha[k] = rho * dot(s, &d);
            d.iter_mut().zip(y).for_each(|(di, yi)| *di -= alpha[k] * yi);
        }
        let gamma = history.back().map_or_else(
            || 1.0 / g.iter().map(|v| v.abs()).sum::<f64>().max(1.0),
            |(s, y, _)| dot(s, y) / dot(y, y),
        );
        d.iter_mut().for_each(|di| *di *= gamma);
        for (k, (s, y, rho)) in history.iter().enumerate() {
            let beta = rho * dot(y, &d);
            d.iter_mut().zip(s).for_each(|(di, si)| *di += (alpha[k] - beta) * si);
        }
        let mut slope = dot(&g, &d);
        if slope >= 0.0 || slope.is_nan() {
            // Not a descent direction (numerical trouble): restart from steepest descent.
            history.clear();
            d = g.iter().map(|v| -v).collect();
            slope = -dot(&g, &g);
        }
        let mut step = 1.0;
        let f_new = loop {
            x_new.iter_mut().zip(&x).zip(&d).for_each(|((xn, xi), di)| *xn = xi + step * di);
            let v = f(&x_new, &mut g_new);
            if v <= fx + 1e-4 * step * slope {
                break Some(v);
            }
            step *= 0.5;
            if step < 1e-12 {
                break None;
            }
        };
        let Some(f_new) = f_new else { return (x, it) };
        let s: Vec<f64> = x_new.iter().zip(&x).map(|(a, b)| a - b).collect();
        let y: Vec<f64> = g_new.iter().zip(&g).map(|(a, b)| a - b).collect();
        let sy = dot(&s, &y);
        if sy > 1e-12 {
            if history.len() == MEMORY {
                history.pop_front();
            }
            history.push_back((s, y, 1.0 / sy));
        }
        std::mem::swap(&mut x, &mut x_new);
        std::mem::swap(&mut g, &mut g_new);
        let decrease = fx - f_new;
        fx = f_new;
        if decrease <= 1e-12 * fx.abs().max(1.0) {
            return (x, it + 1);
        }
    }
    (x, max_iter)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three well-separated 2-D clusters with a little deterministic jitter.
    fn clusters(per: usize, phase: f64) -> (Vec<Vec<f64>>, Vec<usize>) {
        let centres = [(0.0, 3.0), (3.0, -2.0), (-3.0, -2.0)];
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for (c, &(cx, cy)) in centres.iter().enumerate() {
            for k in 0..per {
                let t = phase + k as f64 * 1.7;
                x.push(vec![cx + t.sin(), cy + (1.3 * t).cos()]);
                y.push(c);
            }
        }
        (x, y)
    }

    fn dense(rows: &[Vec<f64>]) -> Rows {
        let mut r = Rows::new(rows[0].len());
        rows.iter().for_each(|row| r.push_dense(row));
        r
    }

    #[test]
    fn learns_a_linearly_separable_problem() {
        let (x, y) = clusters(30, 0.0);
        let model = Softmax::fit(&dense(&x), &y, 3, &SoftmaxParams { l2: 1e-3, ..Default::default() }).unwrap();
        assert_eq!(model.predict(&dense(&x)), y, "training points");
        let (xt, yt) = clusters(20, 0.4);
        assert_eq!(model.predict(&dense(&xt)), yt, "fresh points from the same clusters");
        assert!(model.iterations > 0 && model.iterations < 300);
    }

    #[test]
    fn fitting_is_deterministic() {
        let (x, y) = clusters(10, 0.0);
        let p = SoftmaxParams::default();
        assert_eq!(Softmax::fit(&dense(&x), &y, 3, &p).unwrap(), Softmax::fit(&dense(&x), &y, 3, &p).unwrap());
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let (x, y) = clusters(4, 0.2);
        let rows = dense(&x);
        let w: Vec<f64> = (0..9).map(|k| (k as f64 * 0.37).sin() * 0.5).collect();
        let mut g = vec![0.0; 9];
        model_objective(&w, &rows, &y, 3, 0.1, &mut g);
        let mut scratch = vec![0.0; 9];
        for k in 0..9 {
            let (mut a, mut b) = (w.clone(), w.clone());
            a[k] += 1e-6;
            b[k] -= 1e-6;
            let num = (model_objective(&a, &rows, &y, 3, 0.1, &mut scratch) - model_objective(&b, &rows, &y, 3, 0.1, &mut scratch)) / 2e-6;
            assert!((num - g[k]).abs() < 1e-6, "coordinate {k}: numeric {num}, analytic {}", g[k]);
        }
    }

    #[test]
    fn sparse_rows_equal_dense_rows() {
        let (x, y) = clusters(8, 0.0);
        let mut sparse = Rows::new(2);
        for r in &x {
            sparse.push_sparse(&[(0, r[0]), (1, r[1]), (7, 99.0)]); // column 7 is out of range: ignored
        }
        let p = SoftmaxParams::default();
        assert_eq!(Softmax::fit(&sparse, &y, 3, &p).unwrap().w, Softmax::fit(&dense(&x), &y, 3, &p).unwrap().w);
    }

    #[test]
    fn a_class_without_examples_is_never_predicted() {
        let (x, y) = clusters(5, 0.0);
        let y: Vec<usize> = y.iter().map(|&c| if c == 2 { 3 } else { c }).collect();
        let m = Softmax::fit(&dense(&x), &y, 4, &SoftmaxParams::default()).unwrap();
        assert!(!m.predict(&dense(&x)).contains(&2));
    }

    #[test]
    fn standardiser_centres_and_scales_on_training_rows() {
        let s = Standardiser::fit(&[vec![1.0, 5.0], vec![3.0, 5.0]]);
        assert_eq!(s.apply(&[1.0, 5.0]), vec![-1.0, 0.0]);
        assert_eq!(s.apply(&[4.0, 6.0]), vec![2.0, 1.0]); // the constant column is only centred
    }

    #[test]
    fn bad_inputs_are_refused() {
        let rows = dense(&[vec![1.0], vec![2.0]]);
        let p = SoftmaxParams::default();
        assert_eq!(Softmax::fit(&Rows::new(1), &[], 2, &p), Err(ClassifierError::NoData));
        assert_eq!(Softmax::fit(&rows, &[0], 2, &p), Err(ClassifierError::Mismatch { rows: 2, labels: 1 }));
        assert_eq!(Softmax::fit(&rows, &[0, 2], 2, &p), Err(ClassifierError::Label { label: 2, classes: 2 }));
        assert!(matches!(Softmax::fit(&rows, &[0, 1], 2, &SoftmaxParams { l2: -1.0, ..p }), Err(ClassifierError::Penalty(_))));
    }
}
