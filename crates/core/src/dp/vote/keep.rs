//! What the vote keeps, and what its release says (post-processing of the noisy votes: no ε).
//!
//! Two rules, both reading the noisy counts of one class and public k alone:
//! - [`KeepMode::Top`]: the k largest noisy counts (ties to the earlier candidate);
//! - [`KeepMode::Proportional`]: k drawn without replacement, each draw in proportion to the
//!   clipped noisy counts max(ṽ, 0) of the candidates left (uniformly when none is positive),
//!   as Private Evolution samples its next population.
//!
//! Which is the default was measured (`dpkps bench vote`, docs/privacy.md): see [`KeepMode`].

use serde::{Deserialize, Serialize};

use crate::dp::SecureRng;

/// How many candidates each class keeps (public).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeepRule {
    /// k per class (fewer when a class has fewer candidates).
    PerClass(usize),
    /// One kept per c candidates of the class (⌊m/c⌋, at least 1 when there is a candidate):
    /// c is the public number of candidates generated per kept document.
    CandidatesPerKept(usize),
}

impl KeepRule {
    /// Kept of a class with `candidates` candidates (a DP output: public).
    pub fn kept_of(self, candidates: usize) -> usize {
        match self {
            KeepRule::PerClass(k) => k.min(candidates),
            KeepRule::CandidatesPerKept(c) if candidates > 0 => (candidates / c.max(1)).max(1),
            KeepRule::CandidatesPerKept(_) => 0,
        }
    }

    pub fn check(self) -> Result<(), String> {
        match self {
            KeepRule::PerClass(0) => Err("keep at least one candidate per class".into()),
            KeepRule::CandidatesPerKept(0) => Err("the candidates per kept document must be at least 1".into()),
            _ => Ok(()),
        }
    }
}

/// How the kept candidates are chosen from the noisy votes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeepMode {
    /// The k best noisy counts. The default: on synthetic clusters (`dpkps bench vote`) it
    /// keeps more of the private units' votes and their nearest neighbours as close as the
    /// proportional draw does (figures in docs/privacy.md).
    #[default]
    Top,
    /// k drawn in proportion to the clipped noisy counts.
    Proportional,
}

impl KeepMode {
    pub const ALL: [KeepMode; 2] = [KeepMode::Top, KeepMode::Proportional];

    pub fn name(self) -> &'static str {
        match self {
            KeepMode::Top => "top",
            KeepMode::Proportional => "proportional",
        }
    }
}

/// The candidates kept out of one class's noisy votes, in ascending order. At most
/// `noisy.len()`.
pub fn kept(noisy: &[i64], k: usize, mode: KeepMode, rng: &mut SecureRng) -> Vec<usize> {
    let k = k.min(noisy.len());
    let mut out: Vec<usize> = match mode {
        KeepMode::Top => {
            let mut order: Vec<usize> = (0..noisy.len()).collect();
            order.sort_by(|&a, &b| noisy[b].cmp(&noisy[a]).then(a.cmp(&b)));
            order.truncate(k);
            order
        }
        KeepMode::Proportional => {
            let mut left: Vec<usize> = (0..noisy.len()).collect();
            let mut out = Vec::with_capacity(k);
            for _ in 0..k {
                let weights: Vec<u64> = left.iter().map(|&j| noisy[j].max(0) as u64).collect();
                let total: u128 = weights.iter().map(|&w| u128::from(w)).sum();
                let at = if total == 0 {
                    below(rng, left.len() as u128) as usize
                } else {
                    let mut r = below(rng, total);
                    let mut at = 0;
                    for (i, &w) in weights.iter().enumerate() {
                        if r < u128::from(w) {
                            at = i;
                            break;
                        }
                        r -= u128::from(w);
                    }
                    at
                };
                out.push(left.remove(at));
            }
            out
        }
    };
    out.sort_unstable();
    out
}

/// A uniform integer in [0, n), n ≥ 1 (rejection sampling: no modulo bias).
fn below(rng: &mut SecureRng, n: u128) -> u128 {
    crate::dp::noise::uniform_below(rng, n.max(1))
}

/// The share of a class's clipped noisy votes, Σ max(ṽ, 0), that the kept candidates hold;
/// `None` when no count is positive.
pub fn share_captured(noisy: &[i64], kept: &[usize]) -> Option<f64> {
    let total: f64 = noisy.iter().map(|&v| v.max(0) as f64).sum();
    if total <= 0.0 {
        return None;
    }
    Some(kept.iter().filter_map(|&j| noisy.get(j)).map(|&v| v.max(0) as f64).sum::<f64>() / total)
}

/// What the release says of one class (DP outputs and public settings only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassOutcome {
    pub label: String,
    pub candidates: usize,
    pub noisy_votes: Vec<i64>,
    /// The kept candidates (indices among the class's candidates, ascending).
    pub kept: Vec<usize>,
    /// The share of the class's clipped noisy votes the kept ones hold (`None`: no vote above 0).
    pub share_captured: Option<f64>,
    /// The candidates whose noisy count is 0 or less: none of the private units' votes shows.
    pub drew_none: Vec<usize>,
}

/// One class's outcome: the kept candidates by `mode`, and what the release says of them.
pub fn outcome(label: &str, noisy: Vec<i64>, k: usize, mode: KeepMode, rng: &mut SecureRng) -> ClassOutcome {
    let kept = kept(&noisy, k, mode, rng);
    let share = share_captured(&noisy, &kept);
    let drew_none = (0..noisy.len()).filter(|&j| noisy[j] <= 0).collect();
    ClassOutcome { label: label.to_string(), candidates: noisy.len(), noisy_votes: noisy, kept, share_captured: share, drew_none }
}
