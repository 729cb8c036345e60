//! The held-out split and the task's class balancing, reproducible from a seed.
//!
//! These draws choose WHICH documents are held out; they are not privacy noise, so they use a
//! seeded ChaCha20 stream rather than [`crate::dp::SecureRng`] (whose only constructor reads
//! the OS): a curator must be able to rerun an evaluation on exactly the same split.

use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

/// A class needs at least this many documents: the split puts at least one in the test part
/// and keeps at least one for training, and fewer than this makes per-class KDEs meaningless.
pub const MIN_CLASS_DOCS: usize = 5;

/// Indices of the training and test documents, each sorted increasingly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    pub train: Vec<usize>,
    pub test: Vec<usize>,
}

/// A deterministic stream for `seed` and a purpose (so that the split and the balancing of
/// the same seed are independent draws).
pub(crate) fn stream(seed: u64, purpose: u8) -> ChaCha20Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8] = purpose;
    key[9..16].copy_from_slice(b"dpkpsev");
    ChaCha20Rng::from_seed(key)
}

/// Uniform integer in [0, n), by rejection (no modulo bias). `n` ≥ 1.
fn below(rng: &mut ChaCha20Rng, n: usize) -> usize {
    let n = n as u64;
    let zone = u64::MAX - u64::MAX % n;
    loop {
        let x = rng.next_u64();
        if x < zone {
            return (x % n) as usize;
        }
    }
}

/// Fisher–Yates shuffle.
pub(crate) fn shuffle<T>(items: &mut [T], rng: &mut ChaCha20Rng) {
    for i in (1..items.len()).rev() {
        let j = below(rng, i + 1);
        items.swap(i, j);
    }
}

/// Stratified split: in every class, round(holdout·n_c) documents (at least 1, at most
/// n_c − 1) go to the test part, chosen uniformly at random from `seed`. `labels[i]` is the
/// class of document i; every class in `0..n_classes` must have ≥ [`MIN_CLASS_DOCS`]
/// documents (the caller checks, with a message naming the class).
pub fn stratified(labels: &[usize], n_classes: usize, holdout: f64, seed: u64) -> Split {
    let mut rng = stream(seed, 1);
    let mut by_class: Vec<Vec<usize>> = vec![Vec::new(); n_classes];
    for (i, &c) in labels.iter().enumerate() {
        by_class[c].push(i);
    }
    let (mut train, mut test) = (Vec::new(), Vec::new());
    for members in &mut by_class {
        let n = members.len();
        if n == 0 {
            continue;
        }
        shuffle(members, &mut rng);
        let k = ((holdout * n as f64).round() as usize).clamp(1, n.saturating_sub(1).max(1));
        test.extend_from_slice(&members[..k]);
        train.extend_from_slice(&members[k..]);
    }
    train.sort_unstable();
    test.sort_unstable();
    Split { train, test }
}

/// `k` indices drawn without replacement from `0..n`, sorted (for subsampling a class).
pub fn subsample(n: usize, k: usize, seed: u64) -> Vec<usize> {
    let mut rng = stream(seed, 2);
    let mut all: Vec<usize> = (0..n).collect();
    shuffle(&mut all, &mut rng);
    all.truncate(k.min(n));
    all.sort_unstable();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> Vec<usize> {
        // 50 of class 0, 30 of class 1, 20 of class 2, interleaved.
        let mut l: Vec<usize> = (0..100).map(|i| if i % 10 < 5 { 0 } else if i % 10 < 8 { 1 } else { 2 }).collect();
        l.rotate_left(3);
        l
    }

    #[test]
    fn keeps_class_proportions() {
        let l = labels();
        let s = stratified(&l, 3, 0.2, 7);
        let count = |idx: &[usize], c: usize| idx.iter().filter(|&&i| l[i] == c).count();
        assert_eq!([count(&s.test, 0), count(&s.test, 1), count(&s.test, 2)], [10, 6, 4]);
        assert_eq!([count(&s.train, 0), count(&s.train, 1), count(&s.train, 2)], [40, 24, 16]);
    }

    #[test]
    fn is_disjoint_complete_and_deterministic_per_seed() {
        let l = labels();
        let a = stratified(&l, 3, 0.3, 1);
        let mut all: Vec<usize> = a.train.iter().chain(&a.test).copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..l.len()).collect::<Vec<_>>(), "every document exactly once");
        assert_eq!(a, stratified(&l, 3, 0.3, 1), "same seed, same split");
        assert_ne!(a.test, stratified(&l, 3, 0.3, 2).test, "another seed, another split");
    }

    #[test]
    fn small_classes_keep_one_on_each_side() {
        let l = [0, 0, 1, 1, 1, 1, 1];
        for h in [0.01, 0.99] {
            let s = stratified(&l, 2, h, 3);
            for c in 0..2 {
                assert!(s.test.iter().any(|&i| l[i] == c) && s.train.iter().any(|&i| l[i] == c), "h = {h}, class {c}");
            }
        }
    }

    #[test]
    fn subsample_draws_without_replacement() {
        let s = subsample(100, 30, 5);
        assert_eq!(s.len(), 30);
        assert!(s.windows(2).all(|w| w[0] < w[1]) && s.iter().all(|&i| i < 100));
        assert_eq!(s, subsample(100, 30, 5));
        assert_eq!(subsample(3, 10, 5), vec![0, 1, 2]);
    }
}
