//! The histogram family of the ε_kde release: DP keyphrase histograms over Ṽ, the low-noise
//! alternative to the DP-KDEs (why: below).
//!
//! The DP-KDE with I random features has L1 sensitivity √2·I, so each of its scores carries
//! noise of order √(2I)/ε: with a few hundred documents per class, about the size of a
//! frequent keyphrase's signal. Ṽ (released by the ε_voc stage) is a finite candidate set of
//! N terms, so a class's keyphrase distribution can be released directly, with L1
//! sensitivity 1 instead of √2·I:
//!
//! - `histogram`: per class, h[w] = Σ_docs c_w(doc), where a document spreads weight 1 evenly
//!   over the distinct Ṽ-terms among its kept terms (most used first; at most M of them). Sequences
//!   are L draws from p(w) ∝ max(h̃[w] − τ, 0), optionally smoothed by the embedding kernel
//!   (`crate::sample::hist`, with the post-processing choices).
//! - `markov`: per class, one histogram of (1 + N) × N entries: row 0 is the class's keyphrase
//!   histogram, to which a document gives ¾ of its weight spread evenly over its distinct
//!   Ṽ-terms (at most M, most used first; all of it when it has one), and row p+1 holds the
//!   transitions out of candidate p: t₁→t₂, t₂→t₃, …, sharing the other ¼. Sequences are
//!   Markov chains: t₁ from row 0, then t_{k+1} from t_k's row interpolated with row 0.
//!   It keeps which keyphrases come next in a document's kept terms: most used first, so
//!   between terms used equally often, text order (text order throughout before f3b827b).
//!   Until d8ac1f6 row 0 was a START row of first transitions; files saved then carry no
//!   marker of it, so a markov release below `summary::KERNEL` 2 is refused as outdated.
//!
//! # The mechanism and its privacy map
//! Neighbouring relation: add or remove one document (labels from the fixed public class set,
//! [`crate::input::classes`]). A document belongs to at most one class and changes only that class's
//! histogram, by a vector of non-negative weights summing to at most 1. In exact integer
//! arithmetic (G = 2^GRID_BITS grid units, k = the document's number of distinct Ṽ-terms):
//! `histogram` adds ⌊G/k⌋ to each of k entries, L1 ≤ k·⌊G/k⌋ ≤ G; `markov` adds ⌊(3G/4)/k⌋ to
//! each of k row-0 entries and ⌊(G/4)/(k − 1)⌋ to each of k − 1 transition entries (distinct
//! terms, so at most k − 1 distinct entries; G on one entry when k = 1), L1 ≤ 3G/4 + G/4 = G.
//! So Δ₁ = G for both. Every
//! entry of every declared class's histogram (zeros included: which entries are zero is
//! private) gets discrete Laplace noise of scale G/ε (exact sampler, [`crate::dp::noise`], drawn
//! by [`crate::dp::laplace`] in the release loop of `crate::dp::summary`):
//! ε-DP per class, and the classes compose in parallel (disjoint documents), so the release is
//! ε_kde-DP. Ṽ itself is a DP output, so conditioning on it is adaptive composition with the
//! ε_voc stage. Thresholding, smoothing and sampling read only the release: post-processing.
//! [`Histograms`] is this family's [`Family`].

use super::family::{by_class, Family, Layout, Member, SummaryDoc, SummaryError, GRID_BITS};
use super::params::SummaryParams;
use crate::dp::DpError;
use crate::embed::TermEmbeddings;
use crate::input::public_vocab::TermId;

/// Grid units per document: the L1 sensitivity Δ₁ of one class's histogram.
pub const DOC_WEIGHT: u64 = 1 << GRID_BITS;

/// Whether a sampler is one of the histogram samplers (no random features, no embeddings of
/// the documents' terms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistKind {
    Unigram,
    Transitions,
}

impl HistKind {
    /// Entries of one class's histogram over N candidates.
    pub fn entries(self, n: usize) -> usize {
        match self {
            HistKind::Unigram => n,
            HistKind::Transitions => (n + 1) * n,
        }
    }
}

/// Index of each candidate term (term id → position in Ṽ), for the documents' terms.
pub struct CandidateIndex {
    pos: std::collections::HashMap<TermId, usize>,
    n: usize,
}

impl CandidateIndex {
    pub fn new(ids: &[TermId]) -> CandidateIndex {
        let mut pos = std::collections::HashMap::with_capacity(ids.len());
        for (i, &t) in ids.iter().enumerate() {
            pos.entry(t).or_insert(i);
        }
        CandidateIndex { pos, n: ids.len() }
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The document's distinct Ṽ-terms in the order it keeps them (most used first), at most `max`.
    pub fn doc_terms(&self, terms: &[TermId], max: usize) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::with_capacity(max.min(terms.len()));
        for t in terms {
            if out.len() == max {
                break;
            }
            if let Some(&p) = self.pos.get(t) {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
        out
    }
}

/// Exact integer sums of one class's documents (module docs): before noise.
pub fn class_sums(kind: HistKind, docs: &[&SummaryDoc<'_>], index: &CandidateIndex, max_terms: usize) -> Vec<i64> {
    let n = index.len();
    let mut h = vec![0i64; kind.entries(n)];
    for d in docs {
        let terms = index.doc_terms(d.terms, max_terms);
        if terms.is_empty() {
            continue;
        }
        match kind {
            HistKind::Unigram => {
                let w = (DOC_WEIGHT / terms.len() as u64) as i64;
                terms.iter().for_each(|&t| h[t] += w);
            }
            HistKind::Transitions => {
                // Row 0: the document's terms (¾ of its weight; all of it for one term), row
                // p+1: what follows candidate p (the other ¼ over its k − 1 transitions).
                let k = terms.len() as u64;
                let (uni, step) = if k == 1 { (DOC_WEIGHT, 0) } else { (DOC_WEIGHT / 4 * 3 / k, DOC_WEIGHT / 4 / (k - 1)) };
                terms.iter().for_each(|&t| h[t] += uni as i64);
                for pair in terms.windows(2) {
                    h[(pair[0] + 1) * n + pair[1]] += step as i64;
                }
            }
        }
    }
    h
}

/// The histogram family ([`Family`]): per class, one histogram of exact integer sums over Ṽ,
/// Δ = G (module docs); its members differ in their [`HistKind`].
pub(crate) struct Histograms(pub HistKind);

impl Family for Histograms {
    fn check_inputs(&self, _docs: &[SummaryDoc<'_>], _emb: &TermEmbeddings, candidates: &[TermId]) -> Result<(), SummaryError> {
        if candidates.is_empty() {
            return Err(SummaryError::BadArtefact("candidates"));
        }
        Ok(())
    }

    fn exact_sums(&self, docs: &[SummaryDoc<'_>], classes: usize, _emb: &TermEmbeddings, candidates: &[TermId], params: &SummaryParams, _seed: [u8; 32]) -> Vec<Vec<Vec<i64>>> {
        let index = CandidateIndex::new(candidates);
        by_class(docs, classes).iter().map(|class_docs| vec![class_sums(self.0, class_docs, &index, params.terms_per_doc)]).collect()
    }

    fn sensitivity(&self, _params: &SummaryParams) -> Result<u64, DpError> {
        Ok(DOC_WEIGHT)
    }

    fn width(&self, _params: &SummaryParams, candidates: usize) -> usize {
        self.0.entries(candidates)
    }

    fn mechanism(&self, _delta: u64) -> (String, String) {
        let what = match self.0 {
            HistKind::Transitions => "keyphrase-row + transition",
            HistKind::Unigram => "keyphrase",
        };
        (format!("discrete Laplace on the fixed-point {what} histogram over Ṽ"), format!("G·2^-{GRID_BITS} = 1 (a document's total weight)"))
    }

    fn spend_params(&self, params: &SummaryParams, _member: usize, candidates: usize) -> Vec<(&'static str, serde_json::Value)> {
        vec![("entries", self.0.entries(candidates).into()), ("keyphrases_per_doc_M", params.terms_per_doc.into())]
    }

    fn keeps_candidates(&self) -> bool {
        true
    }

    fn splits(&self) -> bool {
        false
    }

    fn member(&self) -> Member {
        Member::Histogram(self.0)
    }

    fn layout(&self) -> Layout {
        Layout::One
    }

    fn release_cells(&self, _params: &SummaryParams, candidates: usize) -> Option<usize> {
        Some(self.0.entries(candidates))
    }

    fn report_words(&self) -> String {
        let what = match self.0 {
            HistKind::Transitions => "keyphrase-row + keyphrase-transition",
            HistKind::Unigram => "keyphrase",
        };
        format!("per-class noisy {what} histograms over the private vocabulary (discrete Laplace of scale 1/ε_kde; a document has total weight 1)")
    }

    fn note(&self, _params: &SummaryParams) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dp::SecureRng;

    #[test]
    fn a_document_adds_at_most_one_unit_whatever_its_terms() {
        let index = CandidateIndex::new(&[10, 11, 12, 13]);
        for kind in [HistKind::Unigram, HistKind::Transitions] {
            for terms in [vec![10u32], vec![10, 11], vec![10, 11, 12], vec![13, 99, 12, 12, 10, 11], vec![99, 98], vec![]] {
                let doc = SummaryDoc { class: 0, terms: &terms };
                let h = class_sums(kind, &[&doc], &index, 10);
                let l1: i64 = h.iter().map(|v| v.abs()).sum();
                assert!(l1 as u64 <= DOC_WEIGHT, "{kind:?} {terms:?}: {l1}");
                assert!(h.iter().all(|&v| v >= 0));
                let with: Vec<usize> = index.doc_terms(&terms, 10);
                assert_eq!(l1 == 0, with.is_empty(), "only documents without Ṽ-terms add nothing");
            }
        }
        // Every number of distinct terms up to the longest document (64 kept terms): the
        // rounding of ¾ and ¼ must never push a document's total change above one unit.
        let ids: Vec<TermId> = (0..64).collect();
        let index = CandidateIndex::new(&ids);
        for kind in [HistKind::Unigram, HistKind::Transitions] {
            for k in 1..=64usize {
                let terms = &ids[..k];
                let h = class_sums(kind, &[&SummaryDoc { class: 0, terms }], &index, 64);
                assert!(h.iter().all(|&v| v >= 0), "{kind:?} k = {k}");
                let l1: u64 = h.iter().map(|&v| v as u64).sum();
                assert!(l1 <= DOC_WEIGHT, "{kind:?} k = {k}: {l1} > {DOC_WEIGHT}");
                let touched = h.iter().filter(|&&v| v != 0).count();
                let expected = if kind == HistKind::Transitions { 2 * k - 1 } else { k };
                assert_eq!(touched, expected, "{kind:?} k = {k}: every term (and transition) gets weight");
            }
        }
    }

    #[test]
    fn transitions_follow_document_order_beside_the_terms() {
        let index = CandidateIndex::new(&[5, 6, 7]);
        let terms = vec![7u32, 5, 6];
        let doc = SummaryDoc { class: 0, terms: &terms };
        let h = class_sums(HistKind::Transitions, &[&doc], &index, 10);
        let n = 3;
        let (u, w) = ((DOC_WEIGHT / 4) as i64, (DOC_WEIGHT / 8) as i64);
        assert_eq!(&h[..n], &[u, u, u], "row 0: each term, ¾ of the weight over three");
        assert_eq!(h[(2 + 1) * n], w, "7 → 5");
        assert_eq!(h[(0 + 1) * n + 1], w, "5 → 6");
        assert_eq!(h.iter().filter(|&&v| v != 0).count(), 5);
        let one = vec![6u32];
        let h = class_sums(HistKind::Transitions, &[&SummaryDoc { class: 0, terms: &one }], &index, 10);
        assert_eq!(h[1], DOC_WEIGHT as i64, "one term: all its weight on row 0");
        assert_eq!(h.iter().filter(|&&v| v != 0).count(), 1);
    }

    /// Empirical privacy check on neighbouring corpora: D has no document, D′ one document
    /// with one Ṽ-term (the largest change one document can make to one entry). Release many
    /// times, bucket the entry's noisy value (post-processing), and bound |ln P_D/P_D′| from
    /// below with 4-sd confidence intervals. The mechanism must stay within ε; a release made
    /// with twice the ε (what a sensitivity of ½ would give) must be caught.
    fn estimated_loss(kind_sampler: crate::dp::summary::KeyphraseSampler, eps_used: f64, seed: u64) -> f64 {
        let bucket = |v: i64| (v as f64 / (DOC_WEIGHT as f64 / 2.0)).floor().clamp(-8.0, 8.0) as i64;
        // Index 0 is term 3's entry in both: the histogram's, and row 0 (the keyphrase row) of
        // the markov histogram, which a one-term document gives all its weight.
        loss_between_empty_and(&[3], kind_sampler, eps_used, seed, 30_000, |s| bucket(s[0]))
    }

    /// The empirical loss between D = ∅ and D′ = one document with `terms`, over `trials` real
    /// releases (`build`, Ṽ = [3, 4], one class) each reduced to `event` of its sums.
    fn loss_between_empty_and<K: Eq + std::hash::Hash>(
        terms: &[TermId],
        sampler: crate::dp::summary::KeyphraseSampler,
        eps_used: f64,
        seed: u64,
        trials: usize,
        event: impl Fn(&[i64]) -> K,
    ) -> f64 {
        use crate::input::classes::ClassSet;
        use crate::dp::summary::build;
        let emb = TermEmbeddings::new(4);
        let cands = [3u32, 4];
        let classes = ClassSet::unlabelled();
        let params = SummaryParams { epsilon: eps_used, sampler, len: 2, features: 1, terms_per_doc: 4, bandwidth: 1.0, smoothing: 0.0 };
        let mut rng = SecureRng::seeded_for_tests(seed);
        let mut freq = |docs: &[SummaryDoc<'_>]| {
            crate::dp::testing::frequencies(trials, || {
                let (set, _) = build(crate::dp::summary::SummaryInputs::of(docs, &classes, &emb, &cands, &params), &mut rng).unwrap();
                event(&set.classes[0].sums[0])
            })
        };
        let f0 = freq(&[]);
        let f1 = freq(&[SummaryDoc { class: 0, terms }]);
        crate::dp::testing::max_log_ratio(&f0, &f1, trials)
    }

    #[test]
    fn empirical_privacy_loss_stays_within_epsilon() {
        let eps = 1.0;
        for (k, sampler) in [crate::dp::summary::KeyphraseSampler::Histogram, crate::dp::summary::KeyphraseSampler::Markov].into_iter().enumerate() {
            let loss = estimated_loss(sampler, eps, 31 + k as u64);
            assert!(loss <= eps, "{sampler:?}: estimated privacy loss {loss} exceeds ε = {eps}");
            let bad = estimated_loss(sampler, 2.0 * eps, 41 + k as u64);
            assert!(bad > eps, "{sampler:?}: an under-noised release went undetected (loss {bad})");
            println!("{sampler:?}: estimated loss {loss:.3}, under-noised {bad:.3} (ε = {eps})");
        }
    }

    /// The event the k = 2 checks count: all three entries a two-term document [3, 4] touches in
    /// the markov histogram (row 0's 3 and 4, and the transition 3 → 4) are at least half a
    /// document. With the ¾/¼ split the document adds 3/8, 3/8 and ¼ of a unit, so this event is
    /// exactly as likely as the three shifts allow: its true loss is ε, the tight case.
    fn k2_event(s: &[i64]) -> (bool, bool, bool) {
        let a = (DOC_WEIGHT / 2) as i64;
        (s[0] >= a, s[1] >= a, s[(0 + 1) * 2 + 1] >= a)
    }

    /// Empirical check of the markov split (row 0 ¾, transitions ¼) with the real `build`, on
    /// neighbouring corpora: D empty, D′ one document with two Ṽ-terms. Outcome: `k2_event`.
    fn k2_markov_loss(eps_used: f64, seed: u64) -> f64 {
        loss_between_empty_and(&[3, 4], crate::dp::summary::KeyphraseSampler::Markov, eps_used, seed, 100_000, k2_event)
    }

    /// A two-term document is where the markov split is tight (3/8 + 3/8 + ¼ = 1): the real
    /// release stays within ε, and a release made with 2ε is caught. A split of ¾ + ½ (true loss
    /// 1.25ε: the exact sums with the transition doubled, noised as `build` does) is caught too,
    /// so the event sees the transition's share, not only row 0.
    #[test]
    fn a_two_term_document_stays_within_epsilon_under_the_markov_split() {
        use crate::dp::noise::{discrete_laplace, Ratio};
        let eps = 1.0;
        let loss = k2_markov_loss(eps, 61);
        assert!(loss <= eps, "estimated privacy loss {loss} exceeds ε = {eps}");
        let bad = k2_markov_loss(2.0 * eps, 62);
        assert!(bad > eps, "an under-noised release went undetected (loss {bad})");

        const TRIALS: usize = 200_000;
        let index = CandidateIndex::new(&[3, 4]);
        let two = vec![3u32, 4];
        let doc = SummaryDoc { class: 0, terms: &two };
        let scale = Ratio::int_over_f64(DOC_WEIGHT, eps).unwrap();
        let mut rng = SecureRng::seeded_for_tests(63);
        let mut f = |docs: &[&SummaryDoc<'_>]| {
            let mut exact = class_sums(HistKind::Transitions, docs, &index, 10);
            exact[(0 + 1) * 2 + 1] *= 2;
            crate::dp::testing::frequencies(TRIALS, || {
                let noisy: Vec<i64> = exact.iter().map(|&v| v + discrete_laplace(&mut rng, scale)).collect();
                k2_event(&noisy)
            })
        };
        let (f0, f1) = (f(&[]), f(&[&doc]));
        let split = crate::dp::testing::max_log_ratio(&f0, &f1, TRIALS);
        assert!(split > eps, "a transition share of ½ went undetected (loss {split})");
        println!("k = 2 markov: estimated loss {loss:.3}, under-noised {bad:.3}, ¾ + ½ split {split:.3} (ε = {eps})");
    }

    /// The same check for a document with three Ṽ-terms, on the sum of its three entries: the
    /// correct release stays within ε, and a release that gives each term a full document's
    /// weight (true loss 3ε; the classic mistake of forgetting to spread the weight) is caught.
    #[test]
    fn spreading_the_weight_is_what_keeps_a_many_term_document_within_epsilon() {
        use crate::dp::noise::{discrete_laplace, Ratio};
        const TRIALS: usize = 30_000;
        let eps = 1.0;
        let index = CandidateIndex::new(&[3, 4, 5]);
        let three = vec![3u32, 4, 5];
        let doc = SummaryDoc { class: 0, terms: &three };
        let scale = Ratio::int_over_f64(DOC_WEIGHT, eps).unwrap();
        let mut rng = SecureRng::seeded_for_tests(51);
        let mut loss = |per_term_full_weight: bool| {
            let mut f = |docs: &[&SummaryDoc<'_>]| {
                let mut exact = class_sums(HistKind::Unigram, docs, &index, 10);
                if per_term_full_weight {
                    exact.iter_mut().for_each(|v| *v = if *v > 0 { DOC_WEIGHT as i64 } else { 0 });
                }
                crate::dp::testing::frequencies(TRIALS, || {
                    let total: i64 = exact.iter().map(|&v| v + discrete_laplace(&mut rng, scale)).sum();
                    (total as f64 / DOC_WEIGHT as f64).floor().clamp(-8.0, 10.0) as i64
                })
            };
            let (f0, f1) = (f(&[]), f(&[&doc]));
            crate::dp::testing::max_log_ratio(&f0, &f1, TRIALS)
        };
        let ok = loss(false);
        let bad = loss(true);
        assert!(ok <= eps, "estimated privacy loss {ok} exceeds ε = {eps}");
        assert!(bad > eps, "a full weight per term went undetected (loss {bad})");
    }

}
