//! The discrete Laplace mechanism on exact integer counts: the one helper that draws the noise
//! and writes the ledger entry, shared by every mechanism that releases counts (the ε_kde
//! release, `crate::dp::summary`; the DP class counts, [`super::counts`]).
//!
//! # Privacy map
//! For a vector of integer counts whose L1 sensitivity under the neighbouring relation
//! (`super`: one document added or removed) is at most Δ, adding independent discrete Laplace
//! noise of scale Δ/ε to every entry is ε-DP (the geometric mechanism; exact sampler
//! [`super::noise::discrete_laplace`], CKS20). Every entry gets noise, zeros included: which
//! entries are zero is private. The caller states Δ and proves it beside its exact counts; this
//! module only turns (Δ, ε) into the noise and the [`Spend`] that records it.

use super::noise::{discrete_laplace, Ratio};
use super::{DpError, SecureRng};
use crate::ledger::{Scope, Spend, SpendStage};

/// The exact noise scale Δ/ε for an L1 sensitivity of `delta` (in the counts' units).
pub fn scale(delta: u64, epsilon: f64) -> Result<Ratio, DpError> {
    Ratio::int_over_f64(delta, epsilon)
}

/// The noisy counts: each count plus discrete Laplace noise of `scale` (saturating), drawn in
/// the counts' order, one draw per count.
pub fn release_counts(counts: impl IntoIterator<Item = i64>, scale: Ratio, rng: &mut SecureRng) -> Vec<i64> {
    counts.into_iter().map(|c| c.saturating_add(discrete_laplace(rng, scale))).collect()
}

/// Starts the ledger entry of one release: its stage, mechanism and ε. Add its parameters
/// with [`SpendBuilder::param`], in the order they should be listed, and close it with the
/// scope of the documents it reads ([`SpendBuilder::scope`]).
pub fn spend(stage: SpendStage, mechanism: impl Into<String>, epsilon: f64) -> SpendBuilder {
    SpendBuilder { stage: stage.name().to_string(), mechanism: mechanism.into(), epsilon, params: serde_json::Map::new() }
}

/// A [`Spend`] being built ([`spend`]).
#[must_use]
pub struct SpendBuilder {
    stage: String,
    mechanism: String,
    epsilon: f64,
    params: serde_json::Map<String, serde_json::Value>,
}

impl SpendBuilder {
    /// One parameter of the mechanism (e.g. "l1_sensitivity", "noise_scale").
    pub fn param(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.params.insert(key.to_string(), value.into());
        self
    }

    /// Several parameters, in order.
    pub fn params<K: Into<String>>(mut self, entries: impl IntoIterator<Item = (K, serde_json::Value)>) -> Self {
        self.params.extend(entries.into_iter().map(|(k, v)| (k.into(), v)));
        self
    }

    /// The entry, for documents in `scope`.
    pub fn scope(self, scope: Scope) -> Spend {
        Spend { stage: self.stage, mechanism: self.mechanism, epsilon: self.epsilon, params: serde_json::Value::Object(self.params), scope }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_noise_is_drawn_in_order_one_draw_per_count() {
        let scale = scale(3, 0.5).unwrap();
        let (mut a, mut b) = (SecureRng::seeded_for_tests(8), SecureRng::seeded_for_tests(8));
        let noisy = release_counts([5, i64::MAX, -2], scale, &mut a);
        let want: Vec<i64> = [5, i64::MAX, -2].iter().map(|&c: &i64| c.saturating_add(discrete_laplace(&mut b, scale))).collect();
        assert_eq!(noisy, want);
    }

    #[test]
    fn spends_keep_their_parameters_in_order() {
        let s = spend(SpendStage::ClassCounts, "discrete Laplace", 0.5).param("l1_sensitivity", 1).params([("noise_scale", 2.0.into())]).scope(Scope::AllDocuments);
        assert_eq!(serde_json::to_string(&s.params).unwrap(), r#"{"l1_sensitivity":1,"noise_scale":2.0}"#);
        assert_eq!((s.stage.as_str(), s.epsilon), ("class counts", 0.5));
    }
}
