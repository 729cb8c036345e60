//! An alternative set of candidates for the DP-KDE samplers, measured and NOT the pipeline's:
//! the terms of Ṽ that a noisy count shows some class uses ("cleared" terms), rather than all
//! of Ṽ. `dpkps evaluate --candidates cleared` compares it; the pipeline, the page and the CLI
//! draw from all of Ṽ, as the paper does.
//!
//! Why it was tried. Ṽ is the top N of noisy histograms over the whole public vocabulary
//! ([`super::vocabulary`]). Where the classes are small next to the noise, much of Ṽ is terms
//! that only noise selected: on MTSamples with the English list (340,453 words, 40 classes,
//! ε_voc = 2, S = 3), 939 of Ṽ's 1,000 terms are among no document's first 10 terms. Each is a
//! candidate of the DP-KDE samplers and must be embedded: with the English list about 460
//! words beyond the bundled vectors in every run, different each time (2–3 s of a second run
//! in the page; with this rule 0.3 s).
//!
//! Rule. Let m be the number of noisy entries the release drew (|V| × the number of
//! histograms: one, or one per class of the public class set) and Z the discrete Laplace noise
//! of scale S/ε_voc, with P(Z ≥ t) = q^t/(1+q) for t ≥ 1, q = e^(−ε_voc/S). The clearing
//! threshold τ is the smallest t ≥ 1 with m·q^t/(1+q) ≤ N/10: of the entries whose true count
//! is 0, at most a tenth of N are expected to reach τ in the whole release (a union bound over
//! the histograms). A term of Ṽ clears when its largest noisy count over the histograms is at
//! least τ. The candidates are the cleared terms in Ṽ's order; when fewer than
//! [`MIN_CANDIDATES`] clear (a small corpus), the [`MIN_CANDIDATES`] terms of Ṽ with the
//! largest noisy counts.
//!
//! # Not the default: what it cost
//! No noisy count can tell a noise word from a real term used by a few documents of a class,
//! and those are what the DP-KDE samplers find: they score every candidate by its kernel
//! similarity to the documents, so a candidate list that covers the embedding space widely
//! (noise words included) serves them, and a list cut to the frequent, mostly generic terms
//! does not. Measured on MTSamples (`dpkps evaluate`, 3 seeds, ÷ `nonprivate`, independent /
//! iterative-linear / iterative-log; all of Ṽ → cleared):
//! - top-5 specialties, medical list, ε = (1, 10), macro-F1: 0.60 / 0.51 / 0.47 → 0.33 / 0.46 /
//!   0.39 (98 candidates);
//! - top-5, English list, ε = (2, 4), macro-F1: 0.53 / 0.41 / 0.39 → 0.33 / 0.47 / 0.50 (126);
//! - two-class, medical, ε = (1, 10), accuracy: 0.69 / 0.58 / 0.63 → 0.67 / 0.54 / 0.60 (87);
//! - two-class, ε_voc = 2 and the KDE nearly noiseless (ε_kde = 1000), accuracy: medical
//!   1.01 / 1.05 / 0.94 → 0.99 / 0.93 / 0.98 (122), English 0.82 / 0.90 / 0.83 → 0.76 / 0.87 /
//!   0.83 (95); with one expected noise word instead of N/10 (50 candidates, the floor)
//!   medical 0.85 / 0.90 / 0.98.
//!
//! The paper's independent sampler lost most (0.60 → 0.33 and 0.53 → 0.33), the others were
//! mixed: the speed it buys is not worth it.
//!
//! Privacy map. τ is a function of public values only: |V| (the public vocabulary), the number
//! of classes of the public class set (with "other" when the curator keeps it; one histogram
//! without per-class selection), ε_voc, S and N. The rule reads nothing but Ṽ's noisy counts, a
//! released ε_voc-DP output: post-processing, no ε of its own. The DP-KDE releases do not
//! depend on the candidates at all (their sums are over the documents' terms;
//! `kde::DpSummary::candidates` is empty for them), so their privacy map is unchanged.

use serde::{Deserialize, Serialize};

use super::vocabulary::PrivateVocabulary;
use crate::input::public_vocab::TermId;

/// τ (module docs, "Rule"): computed where Ṽ is built, which stores it
/// ([`PrivateVocabulary::clearing_threshold`]); re-exported here, beside the rule that reads it.
pub use super::vocabulary::clearing_threshold;

/// The fewest candidates the rule leaves (module docs).
pub const MIN_CANDIDATES: usize = 50;

/// Which of Ṽ's terms the DP-KDE samplers draw from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CandidateRule {
    /// Every term of Ṽ (the paper's choice): what the pipeline does (module docs, "Not the
    /// default").
    #[default]
    All,
    /// The cleared terms (module docs): `dpkps evaluate --candidates cleared` only.
    Cleared,
}

/// The DP-KDE samplers' candidates from Ṽ under `rule` (module docs), as term ids in Ṽ's
/// order. A Ṽ written before the rule existed (no threshold or counts recorded) gives all its
/// terms.
pub fn kde_candidates(pv: &PrivateVocabulary, rule: CandidateRule) -> Vec<TermId> {
    let all = || pv.terms.iter().map(|t| t.id).collect();
    let Some(tau) = pv.clearing_threshold else { return all() };
    if rule == CandidateRule::All || pv.terms.iter().any(|t| t.best_noisy_count.is_none()) {
        return all();
    }
    let best = |i: usize| pv.terms[i].best_noisy_count.unwrap_or(i64::MIN);
    let cleared: Vec<usize> = (0..pv.terms.len()).filter(|&i| best(i) >= tau).collect();
    if cleared.len() >= MIN_CANDIDATES.min(pv.terms.len()) {
        return cleared.into_iter().map(|i| pv.terms[i].id).collect();
    }
    // Too few cleared: the MIN_CANDIDATES largest (ties to Ṽ's order), kept in Ṽ's order.
    let mut order: Vec<usize> = (0..pv.terms.len()).collect();
    order.sort_by(|&a, &b| best(b).cmp(&best(a)).then(a.cmp(&b)));
    order.truncate(MIN_CANDIDATES);
    order.sort_unstable();
    order.into_iter().map(|i| pv.terms[i].id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dp::vocabulary::{select_from_documents, SelectedTerm, VocabParams};
    use crate::dp::SecureRng;
    use crate::input::public_vocab::PublicVocabulary;

    fn params(epsilon: f64, s: usize) -> VocabParams {
        VocabParams { epsilon, top_n: 100, terms_per_doc: s, per_class: true }
    }

    #[test]
    fn the_threshold_is_the_smallest_with_at_most_a_tenth_of_n_expected_from_noise() {
        for (entries, eps, s, n) in [(340_453 * 40, 2.0, 3, 1000), (28_470 * 2, 1.0, 3, 1000), (1000, 0.5, 1, 100), (10, 5.0, 2, 5)] {
            let p = VocabParams { top_n: n, ..params(eps, s) };
            let tau = clearing_threshold(entries, &p);
            let q = (-eps / s as f64).exp();
            let expected = |t: i64| entries as f64 * q.powi(t as i32) / (1.0 + q);
            let share = n as f64 / 10.0;
            assert!(expected(tau) <= share * (1.0 + 1e-9), "{entries} {eps} {s}: τ = {tau}");
            assert!(tau == 1 || expected(tau - 1) > share, "{entries} {eps} {s}: τ = {tau} is not the smallest");
        }
        // English, 40 classes, the page's defaults (N = 1000, q = e^(−2/3)): τ = 18.
        assert_eq!(clearing_threshold(340_453 * 40, &VocabParams { top_n: 1000, ..params(2.0, 3) }), 18);
    }

    fn vocabulary(best: &[i64], tau: Option<i64>) -> PrivateVocabulary {
        let terms = best
            .iter()
            .enumerate()
            .map(|(i, &b)| SelectedTerm { term: format!("t{i}"), id: i as TermId, noisy_count: Some(b), best_noisy_count: Some(b) })
            .collect();
        PrivateVocabulary {
            public_vocabulary: "v".into(),
            public_vocabulary_checksum: "c".into(),
            params: params(1.0, 1),
            terms,
            clearing_threshold: tau,
            whole_list: false,
            released_by: None,
        }
    }

    #[test]
    fn cleared_terms_are_kept_in_order_and_too_few_fall_back_to_the_best() {
        // 60 terms at 20 and 40 below: the 60 clear.
        let mut best: Vec<i64> = (0..100).map(|i| if i % 5 < 3 { 20 } else { 3 }).collect();
        let pv = vocabulary(&best, Some(10));
        let got = kde_candidates(&pv, CandidateRule::Cleared);
        assert_eq!(got, (0..100u32).filter(|i| i % 5 < 3).collect::<Vec<_>>());
        assert_eq!(kde_candidates(&pv, CandidateRule::All).len(), 100);
        // Only 5 clear: the 50 largest, in Ṽ's order, whatever their position.
        best = (0..100).map(|i| 100 - i).collect();
        best[97] = 1000;
        let pv = vocabulary(&best, Some(96));
        let got = kde_candidates(&pv, CandidateRule::Cleared);
        let mut want: Vec<TermId> = (0..49).collect();
        want.push(97);
        assert_eq!(got, want);
        // Fewer terms than the floor: all of them.
        assert_eq!(kde_candidates(&vocabulary(&[1, 2, 3], Some(50)), CandidateRule::Cleared), vec![0, 1, 2]);
        // A Ṽ from before the rule: all.
        assert_eq!(kde_candidates(&vocabulary(&[1, 200], None), CandidateRule::Cleared), vec![0, 1]);
    }

    #[test]
    fn frequent_terms_clear_and_noise_words_at_the_rate_allowed() {
        // 20,000 public terms, 2 classes; each class's 60 documents all use its own 3 terms.
        let list: String = (0..20_000).map(|i| format!("term{i}\n")).collect();
        let vocab = PublicVocabulary::parse("v", list.as_bytes()).unwrap();
        let (a, b): (Vec<TermId>, Vec<TermId>) = (vec![1, 2, 3], vec![500, 501, 502]);
        let docs: Vec<(Option<usize>, &[TermId])> =
            (0..120).map(|i| if i % 2 == 0 { (Some(0), a.as_slice()) } else { (Some(1), b.as_slice()) }).collect();
        let p = VocabParams { epsilon: 2.0, top_n: 1000, terms_per_doc: 3, per_class: true };
        let mut rng = SecureRng::seeded_for_tests(7);
        let (pv, _) = select_from_documents(docs.into_iter(), &["a", "b"], &vocab, &p, &mut rng).unwrap();
        assert_eq!(pv.terms.len(), 1000);
        let tau = pv.clearing_threshold.unwrap();
        // 40,000 noisy entries: τ = 9, where about 66 zero-count entries are expected to reach
        // it (at most N/10 = 100 by the rule).
        assert_eq!(tau, clearing_threshold(40_000, &p));
        assert_eq!(tau, 9);
        let cands = kde_candidates(&pv, CandidateRule::Cleared);
        let cleared: Vec<TermId> = pv.terms.iter().filter(|t| t.best_noisy_count.unwrap() >= tau).map(|t| t.id).collect();
        assert_eq!(cands, cleared, "enough cleared: exactly the cleared terms, in Ṽ's order");
        // The six used terms clear (60 ± noise of scale 1.5).
        assert!([1, 2, 3, 500, 501, 502].iter().all(|id| cleared.contains(id)), "{cleared:?}");
        let noise = cleared.len() - 6;
        assert!((30..=110).contains(&noise), "{noise} noise words cleared (expected about 66)");
        assert_eq!(kde_candidates(&pv, CandidateRule::All).len(), 1000);
    }
}
