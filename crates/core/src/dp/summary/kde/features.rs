//! The random Fourier features ω and β (the parent module's docs, "Features"): drawn from a
//! ChaCha20 stream with a random, released, data-independent seed.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use crate::math::linalg::{gemm, MatRef};

/// The random features: ω (I × blocks·d, row-major) and β.
pub struct Features {
    pub count: usize,
    pub dim: usize,
    pub blocks: usize,
    omega: Vec<f32>,
    beta: Vec<f32>,
}

impl Features {
    /// Deterministic from `seed` (data-independent; released with the DP-KDEs). ω ~ N(0, I/h)
    /// for bandwidth h.
    pub fn generate(count: usize, dim: usize, blocks: usize, bandwidth: f64, seed: [u8; 32]) -> Features {
        let sd = 1.0 / bandwidth.sqrt();
        let mut rng = ChaCha20Rng::from_seed(seed);
        let unit = |rng: &mut ChaCha20Rng| ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let n = count * blocks * dim;
        let mut omega = Vec::with_capacity(n + 1);
        while omega.len() < n {
            // Box–Muller: two independent standard normals per pair of uniforms.
            let (u1, u2) = (unit(&mut rng), unit(&mut rng));
            let r = (-2.0 * u1.ln()).sqrt();
            let a = std::f64::consts::TAU * u2;
            omega.push((sd * r * a.cos()) as f32);
            omega.push((sd * r * a.sin()) as f32);
        }
        omega.truncate(n);
        let beta = (0..count).map(|_| (std::f64::consts::TAU * unit(&mut rng)) as f32).collect();
        Features { count, dim, blocks, omega, beta }
    }

    pub fn beta(&self) -> &[f32] {
        &self.beta
    }

    /// Block t of ω (I × d view).
    fn block(&self, t: usize) -> MatRef<'_> {
        MatRef::rows(&self.omega, self.count, self.blocks * self.dim).cols_range(t * self.dim, self.dim)
    }

    /// out (n × I) = √2 · E · ωᵗᵀ for the n rows of E (n × d).
    pub fn project(&self, t: usize, e: MatRef<'_>, out: &mut [f32]) {
        gemm(std::f32::consts::SQRT_2, e, self.block(t).t(), 0.0, out);
    }

    /// Random unit vectors (rows of a Gaussian matrix, normalised): synthetic embeddings for
    /// tests and benchmarks.
    pub fn synthetic_unit_vectors(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut s = [0u8; 32];
        s[..8].copy_from_slice(&seed.to_le_bytes());
        let g = Features::generate(n, dim, 1, 1.0, s);
        g.omega
            .chunks_exact(dim)
            .map(|v| {
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
                v.iter().map(|x| x / norm).collect()
            })
            .collect()
    }

    /// √2·ω_iᵗ·z for one feature (the naive path; for reference and tests).
    pub fn project_one(&self, i: usize, t: usize, z: &[f32]) -> f32 {
        let row = &self.omega[i * self.blocks * self.dim + t * self.dim..][..self.dim];
        std::f32::consts::SQRT_2 * row.iter().zip(z).map(|(a, b)| a * b).sum::<f32>()
    }
}
