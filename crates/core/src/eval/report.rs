//! What an evaluation reports ([`super`]): the serialisable [`EvalReport`] and its parts, and
//! the grouping of single runs into per-arm means and spreads.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::metrics;
use super::params::EvalParams;

/// The note every report carries.
pub const NOTE: &str = "NOT differentially private: these figures are computed on the private corpus \
(held-out documents, training sequences, exact class counts). Keep them with the curator; \
an evaluation releases nothing and spends no ε; run on the private corpus it is still tuning on private \
data, recorded in the privacy ledger as a non-DP check that later privacy reports count (the DP utility \
check, `dpkps check`, is paid for in ε).";

/// What the task came to (exact counts: private, like everything in the report).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskSummary {
    pub classes: Vec<String>,
    /// Documents per class, in the order of `classes`.
    pub class_docs: Vec<usize>,
    pub documents: usize,
    pub train_docs: usize,
    pub test_docs: usize,
    /// Documents of the corpus without a label: left out.
    pub unlabelled_left_out: usize,
    /// Documents of labels outside the task (top classes) or dropped by balancing: left out.
    pub other_left_out: usize,
    /// Held-out documents without any matched term, mean over seeds (module docs).
    pub test_docs_without_terms: f64,
    /// Training documents without any matched term (no sequence for `nonprivate`), mean.
    pub train_docs_without_terms: f64,
    /// Terms of Ṽ and of them the DP-KDE arms' candidates (`EvalParams::candidates`), mean
    /// over seeds (0 without DP arms).
    #[serde(default)]
    pub dp_vocabulary_terms: f64,
    #[serde(default)]
    pub dp_candidates: f64,
    /// Where the class signal is lost (`super::signal_loss`), with DP arms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vocabulary_diagnosis: Option<super::signal_loss::VocabDiagnosis>,
}

/// One repetition of one arm in one view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub seed: u64,
    pub accuracy: f64,
    pub macro_f1: f64,
    pub n_train: usize,
    pub n_test: usize,
    /// I used by the KDE (sampler arms only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub features: Option<usize>,
    /// Sampler arms: the share of their sequences that hold L (distinct) keyphrases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_length_share: Option<f64>,
    /// Sampler arms with noise: the classes whose release was noise-dominated
    /// (`crate::sample::signal`); their sequences were left out of training as generation
    /// leaves them out, unless `EvalParams::include_noise_classes`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noise_dominated: Vec<String>,
    /// Sampler arms: their sequences per class (`super::signal_loss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequences: Option<super::signal_loss::SequenceDiagnosis>,
}

/// One arm in one view, over all seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmReport {
    pub arm: String,
    /// `embedding`, `bag`, `text`, or `none` (the majority class).
    pub view: String,
    pub accuracy_mean: f64,
    pub accuracy_std: f64,
    pub macro_f1_mean: f64,
    pub macro_f1_std: f64,
    /// Each run's accuracy over `nonprivate`'s in the same view and repetition (paired by seed
    /// and by place among that seed's runs), mean and sample sd: the share of the non-private
    /// utility kept. Each pair is tested on one held-out set, so what a harder or easier set does
    /// to both arms alike cancels; with `--same-split` the sd is the spread between draws alone.
    /// Absent for `nonprivate`, and in a view without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accuracy_ratio: Option<metrics::Spread>,
    /// Training examples and test documents (means over seeds, rounded).
    pub n_train: usize,
    pub n_test: usize,
    /// Sampler arms: the mean of the runs' `full_length_share`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_length_share: Option<f64>,
    /// Noise-dominated classes per run (mean), and every class flagged in some run, most
    /// often first.
    #[serde(default)]
    pub noise_dominated_per_run: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noise_dominated: Vec<String>,
    pub runs: Vec<RunResult>,
}

/// The evaluation's result (serialisable; the CLI writes it as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    pub note: String,
    pub params: EvalParams,
    pub task: TaskSummary,
    pub arms: Vec<ArmReport>,
    /// Each synthetic set read for the text view, and its documents left out (unknown label).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub synthetic: Vec<SyntheticSummary>,
    /// Sampler arms not run because their release would be refused (the Markov sampler's size
    /// cap): the other arms ran. Absent when none was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<RefusedArm>,
    /// Sampler runs (arm and seed) where every class's release was noise-dominated, so that
    /// nothing would be generated and nothing was trained (unless
    /// `EvalParams::include_noise_classes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nothing_to_train: Vec<NotScored>,
}

/// One sampler run not scored: every class's release was noise-dominated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotScored {
    pub arm: String,
    pub seed: u64,
    pub reason: String,
}

/// A sampler arm that was not run, and why (the refusal's message).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefusedArm {
    pub arm: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyntheticSummary {
    /// The set's name (`--synthetic NAME=PATH`; the file's folder otherwise).
    pub name: String,
    pub documents: usize,
    pub used: usize,
    pub unknown_label_left_out: usize,
    /// Documents used per class (the task's class order).
    pub per_class: Vec<usize>,
}

/// The arm whose accuracy the others are divided by ([`ArmReport::accuracy_ratio`]).
pub const BASELINE_ARM: &str = "nonprivate";

/// Each run's accuracy over the baseline's run of the same seed and place among that seed's
/// runs (`--same-split` gives every run one seed; place then pairs the repetitions). Runs
/// without a partner, or whose partner scored 0, are left out; `None` when none is left. A
/// repetition with nothing to train (no run) shifts the later places under `--same-split`;
/// that pairs a run with another repetition's baseline, which is the same figure: the baseline
/// is deterministic on one split (the classifier's fit has no randomness).
fn paired_ratio(runs: &[RunResult], baseline: &[RunResult]) -> Option<metrics::Spread> {
    let places = |rs: &[RunResult]| {
        let mut seen: HashMap<u64, usize> = HashMap::new();
        rs.iter()
            .map(|r| {
                let k = seen.entry(r.seed).or_default();
                *k += 1;
                ((r.seed, *k), r.accuracy)
            })
            .collect::<Vec<_>>()
    };
    let base: HashMap<(u64, usize), f64> = places(baseline).into_iter().collect();
    let ratios: Vec<f64> = places(runs).into_iter().filter_map(|(key, a)| base.get(&key).filter(|&&b| b > 0.0).map(|b| a / b)).collect();
    (!ratios.is_empty()).then(|| metrics::spread(&ratios))
}

/// Groups run results by (arm, view), keeping the order of first appearance.
pub(super) fn aggregate(results: Vec<((String, &'static str), RunResult)>) -> Vec<ArmReport> {
    let mut order: Vec<(String, &'static str)> = Vec::new();
    let mut groups: HashMap<(String, &'static str), Vec<RunResult>> = HashMap::new();
    for (key, r) in results {
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(r);
    }
    // Each arm's paired ratio, read from the groups before they are moved into the reports.
    let ratios: HashMap<(String, &'static str), metrics::Spread> = groups
        .iter()
        .filter(|(k, _)| k.0 != BASELINE_ARM)
        .filter_map(|(k, runs)| Some((k.clone(), paired_ratio(runs, groups.get(&(BASELINE_ARM.to_string(), k.1))?)?)))
        .collect();
    order
        .into_iter()
        .map(|key| {
            let runs = groups.remove(&key).unwrap_or_default();
            let accuracy_ratio = ratios.get(&key).copied();
            let acc = metrics::spread(&runs.iter().map(|r| r.accuracy).collect::<Vec<_>>());
            let f1 = metrics::spread(&runs.iter().map(|r| r.macro_f1).collect::<Vec<_>>());
            let mean_of = |f: fn(&RunResult) -> usize| {
                (runs.iter().map(|r| f(r) as f64).sum::<f64>() / runs.len().max(1) as f64).round() as usize
            };
            let shares: Vec<f64> = runs.iter().filter_map(|r| r.full_length_share).collect();
            let mut flagged: Vec<(String, usize)> = Vec::new();
            for c in runs.iter().flat_map(|r| &r.noise_dominated) {
                match flagged.iter_mut().find(|f| &f.0 == c) {
                    Some(f) => f.1 += 1,
                    None => flagged.push((c.clone(), 1)),
                }
            }
            flagged.sort_by(|a, b| b.1.cmp(&a.1));
            ArmReport {
                full_length_share: (!shares.is_empty()).then(|| shares.iter().sum::<f64>() / shares.len() as f64),
                noise_dominated_per_run: runs.iter().map(|r| r.noise_dominated.len() as f64).sum::<f64>() / runs.len().max(1) as f64,
                noise_dominated: flagged.into_iter().map(|f| f.0).collect(),
                arm: key.0,
                view: key.1.to_string(),
                accuracy_mean: acc.mean,
                accuracy_std: acc.std,
                macro_f1_mean: f1.mean,
                macro_f1_std: f1.std,
                accuracy_ratio,
                n_train: mean_of(|r| r.n_train),
                n_test: mean_of(|r| r.n_test),
                runs,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seed: u64, accuracy: f64) -> RunResult {
        RunResult { seed, accuracy, macro_f1: accuracy, n_train: 1, n_test: 1, features: None, full_length_share: None, noise_dominated: Vec::new(), sequences: None }
    }

    #[test]
    fn ratios_pair_each_run_with_the_baseline_run_of_its_repetition() {
        let key = |arm: &str, view: &'static str| (arm.to_string(), view);
        // Two held-out sets (seeds 0 and 1) of very different difficulty: the DP arm keeps 0.9
        // of `nonprivate` on each, which the ratio of the means (0.63 / 0.70) also gives, but
        // the accuracies' sd holds the sets' spread and the paired ratios' does not.
        let results = vec![
            (key(BASELINE_ARM, "embedding"), run(0, 0.9)),
            (key("dp-histogram", "embedding"), run(0, 0.81)),
            (key(BASELINE_ARM, "embedding"), run(1, 0.5)),
            (key("dp-histogram", "embedding"), run(1, 0.45)),
            (key("dp-histogram", "text"), run(0, 0.3)),
        ];
        let arms = aggregate(results);
        let dp = &arms[1];
        assert_eq!((dp.arm.as_str(), dp.view.as_str()), ("dp-histogram", "embedding"));
        let r = dp.accuracy_ratio.expect("paired with nonprivate");
        assert!((r.mean - 0.9).abs() < 1e-12 && r.std < 1e-12, "{r:?}");
        assert!(dp.accuracy_std > 0.2, "the accuracies spread with the sets: {}", dp.accuracy_std);
        assert_eq!(arms[0].accuracy_ratio, None, "not the baseline over itself");
        assert_eq!(arms[2].accuracy_ratio, None, "no baseline in the text view");
        // `--same-split`: one seed, repetitions paired by place; a run without a partner is left
        // out, and so is one whose partner scored 0.
        let same = vec![run(7, 0.8), run(7, 0.5), run(7, 0.0)];
        let dp = vec![run(7, 0.8), run(7, 0.6), run(7, 0.4), run(7, 0.9)];
        let r = paired_ratio(&dp, &same).unwrap();
        assert!((r.mean - 1.1).abs() < 1e-12 && (r.std - 0.02f64.sqrt()).abs() < 1e-12, "ratios 1.0 and 1.2: {r:?}");
        assert_eq!(paired_ratio(&dp, &[]), None);
    }
}
