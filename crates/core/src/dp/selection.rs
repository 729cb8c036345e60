//! DP selection of settings: the utility check made differentially private ("tuning inside the
//! budget").
//!
//! The check compares a public list of settings (arms: keyphrase samplers, each under the
//! curator's other settings) on the private corpus and says which keeps the most class signal.
//! Tuning on private data is itself a release, so it is paid for here and recorded in the
//! ledger like a run. [`crate::eval::dp_check`] runs it; this module holds the mechanism's
//! pieces and its privacy map.
//!
//! # The mechanism
//! 1. **A public random split.** Each unit (a document, or a person's unit, `crate::input::units`)
//!    goes to the test part with probability h, by an independent coin from the CSPRNG
//!    ([`split`]). The coins do not depend on the data.
//! 2. **The train side.** On the training units only: Ṽ (ε_voc-DP, drawn once and shared by
//!    the arms), then per arm the DP summaries (ε_kde-DP) and sequences sampled from them; a
//!    classifier per arm is trained on those sequences alone (post-processing).
//! 3. **The scores.** For each arm a, c_a = the number of test units with at least one matched
//!    term whose class (public class set) that arm's classifier predicts; n = the number of those
//!    test units. Released with discrete Laplace noise ([`noisy_scores`]).
//! 4. **The choice**: the arm with the highest noisy score ([`chosen`]); post-processing.
//!
//! # Privacy map
//! Neighbouring relation: add or remove one unit x (the crate's relation; one person when a
//! person column is given). Couple the two corpora's draws: the other units keep their coins
//! (they are i.i.d., so drawing them from one stream in unit order, where x shifts the later
//! ones, gives the same joint law), and x's own coin is fresh and independent of everything
//! else; condition on the others' coins.
//! - **x in the training part.** The test part is the same in both corpora. Ṽ is ε_voc-DP and
//!   each arm's summaries ε_kde,a-DP in the training units; they compose sequentially:
//!   ε_train = ε_voc + Σ_a ε_kde,a (per class the summaries compose in parallel as in a run).
//!   Classifiers, predictions on the unchanged test units, the counts and their noise are
//!   post-processing of those releases.
//! - **x in the test part.** The training part, hence every release and every classifier, is
//!   the same in both corpora. x changes n by 0 or 1 (1 when it is in a declared class and has a
//!   matched term: `eval::dp_check` counts only those) and each c_a by 0 or 1 (its one
//!   prediction per arm), so the vector (c_1..c_k, n) has L1 sensitivity Δ = k + 1 and discrete Laplace noise
//!   of scale Δ/ε_select on every entry is ε_select-DP ([`super::laplace`]).
//! - **Together.** With p = P(x's coin says test), P[M(D∪{x}) ∈ S] = (1−p)·P[M_train] + p·P[M_test],
//!   each term within e^ε_train resp. e^ε_select of P[M(D) ∈ S] (and conversely for the other
//!   direction), so the whole check is max(ε_train, ε_select)-DP ([`check_epsilon`]). Setting
//!   ε_select up to ε_train costs nothing more, which is the default: the scores then carry
//!   little noise.
//!
//! Public by assumption (not read from the data): the compared samplers and every setting they
//! share, the held-out share h, ε_select, the class set, the public vocabulary and the embedding
//! model (each vector a function of its public term: `crate::embed::rows`, `tests/it/embed.rs`).
//! Enforced by the code: the coins come from the CSPRNG alone; every refusal that depends on
//! those public inputs comes before the check's ε is recorded (`crate::run::check`), and the ε
//! is recorded before anything is drawn.
//!
//! Everything else the check shows is post-processing of those outputs (the noisy accuracy
//! c̃_a / ñ, the chosen arm). What it does NOT show: the split, the exact counts, per-class
//! figures, the classifiers. It refuses nothing because of the data (a class with no training
//! unit gets a noise-dominated release as in a run; an arm with nothing to train on predicts
//! nothing and scores 0; an empty test part scores noise).

use super::{check_epsilon as valid_epsilon, laplace, DpError, SecureRng};
use crate::base::ParamError;
use crate::ledger::{Scope, Spend, SpendStage};

/// ε of a check: max(ε_train, ε_select) (module docs, "Together").
pub fn check_epsilon(train: f64, select: f64) -> f64 {
    train.max(select)
}

/// The test part: one coin per unit, `true` (test) with probability `holdout` (to within
/// 2^-64), from the CSPRNG. `holdout` in (0, 1).
pub fn split(units: usize, holdout: f64, rng: &mut SecureRng) -> Result<Vec<bool>, ParamError> {
    if !(holdout > 0.0 && holdout < 1.0) {
        return Err(ParamError::new("the held-out share", holdout, "must be a number between 0 and 1"));
    }
    // u < holdout · 2^64, exactly as a comparison of integers.
    let cut = (holdout * 2f64.powi(64)) as u64;
    Ok((0..units).map(|_| rng.next_u64() < cut).collect())
}

/// The released scores: per arm the noisy number of test units predicted right, and the noisy
/// number of test units.
#[derive(Debug, Clone, PartialEq)]
pub struct NoisyScores {
    pub correct: Vec<i64>,
    pub tested: i64,
    /// Δ/ε_select, the noise scale of every entry.
    pub scale: f64,
}

impl NoisyScores {
    /// The noisy accuracy of `arm`, clipped to [0, 1] (post-processing; 0 when ñ ≤ 0).
    pub fn accuracy(&self, arm: usize) -> f64 {
        if self.tested <= 0 {
            return 0.0;
        }
        (self.correct[arm] as f64 / self.tested as f64).clamp(0.0, 1.0)
    }
}

/// The exact counts (c_1..c_k, n) with discrete Laplace noise of scale (k + 1)/ε_select on
/// every entry (module docs, "x in the test part"), drawn in that order.
pub fn noisy_scores(correct: &[u64], tested: u64, epsilon_select: f64, rng: &mut SecureRng) -> Result<NoisyScores, DpError> {
    valid_epsilon("ε of the check's scores", epsilon_select)?;
    let delta = correct.len() as u64 + 1;
    let scale = laplace::scale(delta, epsilon_select)?;
    let exact = correct.iter().chain(std::iter::once(&tested)).map(|&c| c.min(i64::MAX as u64) as i64);
    let mut noisy = laplace::release_counts(exact, scale, rng);
    let tested = noisy.pop().unwrap_or(0);
    Ok(NoisyScores { correct: noisy, tested, scale: scale.to_f64() })
}

/// The arm with the highest noisy score, the first one on a tie (post-processing). `None` for
/// no arm.
pub fn chosen(scores: &NoisyScores) -> Option<usize> {
    (0..scores.correct.len()).fold(None, |best: Option<usize>, a| match best {
        Some(b) if scores.correct[b] >= scores.correct[a] => Some(b),
        _ => Some(a),
    })
}

/// The ledger entry of a check that has started: its whole ε, recorded before anything is
/// drawn (Ṽ is drawn, cached and shown in progress before the scores exist), then replaced by
/// [`spend`] with the same ε; a check that fails or is cancelled stays paid for, choosing nothing.
pub fn started_spend(train: f64, select: f64, holdout: f64, arms: &[&str]) -> Spend {
    entry("DP utility check (started; replaced by its result when it ends)", train, select, holdout, arms)
        .param("chosen", serde_json::Value::Null)
        .scope(Scope::AllDocuments)
}

/// What both entries of a check record first: its ε and the public settings it compared.
fn entry(mechanism: &str, train: f64, select: f64, holdout: f64, arms: &[&str]) -> laplace::SpendBuilder {
    laplace::spend(SpendStage::UtilityCheck, mechanism, check_epsilon(train, select))
        .param("epsilon_train", train)
        .param("epsilon_select", select)
        .param("holdout", holdout)
        .param("arms", arms.iter().map(|a| serde_json::Value::from(*a)).collect::<Vec<_>>())
}

/// The ledger entry of one check: its whole ε (max of the two sides) on every unit, with what
/// it compared and chose (DP outputs and public settings only).
pub fn spend(train: f64, select: f64, holdout: f64, arms: &[&str], scores: &NoisyScores, chosen: Option<&str>) -> Spend {
    entry(
        "DP utility check: DP releases per arm on a random training part (sequential), discrete Laplace on the test part's scores; max of the two (random split)",
        train,
        select,
        holdout,
        arms,
    )
    .param("l1_sensitivity", arms.len() + 1)
    .param("noise_scale", scores.scale)
    .param("noisy_correct", scores.correct.clone())
    .param("noisy_tested", scores.tested)
    .param("chosen", chosen.map_or(serde_json::Value::Null, serde_json::Value::from))
    .scope(Scope::AllDocuments)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dp::testing::{frequencies, max_log_ratio};

    #[test]
    fn the_split_follows_the_holdout_and_refuses_a_bad_one() {
        let mut rng = SecureRng::seeded_for_tests(3);
        let s = split(20_000, 0.25, &mut rng).unwrap();
        let share = s.iter().filter(|&&t| t).count() as f64 / s.len() as f64;
        assert!((share - 0.25).abs() < 0.015, "{share}");
        for h in [0.0, 1.0, -0.1, f64::NAN] {
            assert!(split(3, h, &mut rng).is_err(), "{h}");
        }
    }

    #[test]
    fn scores_get_noise_of_scale_arms_plus_one_over_epsilon_and_the_first_best_is_chosen() {
        let mut rng = SecureRng::seeded_for_tests(5);
        let s = noisy_scores(&[10, 20, 30], 40, 2.0, &mut rng).unwrap();
        assert_eq!((s.correct.len(), s.scale), (3, 2.0));
        let tie = NoisyScores { correct: vec![3, 7, 7], tested: 10, scale: 1.0 };
        assert_eq!(chosen(&tie), Some(1));
        assert_eq!(chosen(&NoisyScores { correct: vec![], tested: 0, scale: 1.0 }), None);
        assert_eq!((tie.accuracy(1), NoisyScores { tested: 0, ..tie.clone() }.accuracy(1)), (0.7, 0.0));
        assert!(noisy_scores(&[1], 1, 0.0, &mut rng).is_err());
        assert_eq!(check_epsilon(22.0, 1.0), 22.0);
        let sp = spend(22.0, 22.0, 0.2, &["histogram", "markov"], &tie, Some("markov"));
        assert_eq!((sp.stage.as_str(), sp.epsilon, sp.params["l1_sensitivity"].as_u64()), (SpendStage::UtilityCheck.name(), 22.0, Some(3)));
    }

    /// The whole check in miniature, with the real split and scores: units are bits; the train
    /// side releases the number of training units with bit 1 (discrete Laplace, ε_train); one
    /// arm "predicts right" a test unit with bit 1. Neighbours: no unit, and one unit with bit 1.
    /// Outcomes are threshold events (each noisy count ≥ 1), where the shift of a discrete
    /// Laplace is seen in full. The loss must stay within max(ε_train, ε_select), and must exceed
    /// the smaller side: an accounting that took the minimum would be caught.
    #[test]
    fn empirical_privacy_loss_of_the_split_check_stays_within_the_max() {
        const TRIALS: usize = 60_000;
        let mut rng = SecureRng::seeded_for_tests(29);
        let (eps_train, eps_select) = (0.4, 1.2);
        // `select_noise`: the ε the scores' noise is drawn at (twice ε_select: an under-noised
        // variant, whose loss the check must catch above the bound).
        let run = |units: &[bool], rng: &mut SecureRng, select_noise: f64| {
            let test = split(units.len(), 0.5, rng).unwrap();
            let ones_train = units.iter().zip(&test).filter(|(&u, &t)| u && !t).count() as i64;
            let train_out = laplace::release_counts([ones_train], laplace::scale(1, eps_train).unwrap(), rng)[0];
            let tested = test.iter().filter(|&&t| t).count() as u64;
            let right = units.iter().zip(&test).filter(|(&u, &t)| u && t).count() as u64;
            let s = noisy_scores(&[right], tested, select_noise, rng).unwrap();
            (train_out >= 1, s.correct[0] >= 1, s.tested >= 1)
        };
        let mut loss = |select_noise: f64| {
            let f0 = frequencies(TRIALS, || run(&[], &mut rng, select_noise));
            let f1 = frequencies(TRIALS, || run(&[true], &mut rng, select_noise));
            max_log_ratio(&f0, &f1, TRIALS)
        };
        let bound = check_epsilon(eps_train, eps_select);
        let ok = loss(eps_select);
        assert!(ok <= bound, "estimated loss {ok} exceeds max(ε_train, ε_select) = {bound}");
        assert!(ok > eps_train.min(eps_select), "the loss {ok} never exceeded the smaller side: the test cannot tell max from min");
        let bad = loss(2.0 * eps_select);
        assert!(bad > bound, "an under-noised check went undetected (loss {bad}, bound {bound})");
    }
}
