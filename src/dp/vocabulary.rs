//! The DP vocabulary (DP-KPS, appendix B.1): which public terms the private corpus uses most.
//!
//! 1. Each document contributes its first S DISTINCT matched terms (see
//!    [`crate::vocab::Matcher::first_distinct`]).
//! 2. Histogram over the WHOLE public vocabulary: h[v] = number of documents that contribute v.
//! 3. Discrete Laplace noise of scale S/ε_voc on EVERY entry, zero counts included.
//! 4. Keep the N entries with the largest noisy counts.
//!
//! Privacy map. Neighbouring relation: add or remove one document. A document changes h by +1
//! (or -1) on at most S distinct entries and leaves the others alone, so the L1 sensitivity of
//! h is Δ₁ = S. The vocabulary is public and fixed before seeing the data, so the set of
//! entries does not depend on the data. Adding discrete Laplace noise of scale Δ₁/ε = S/ε to
//! each entry of an integer vector with L1 sensitivity S is ε-DP (see [`super::sampler`]).
//! Step 4 and everything downstream read only the noisy vector: post-processing, no extra
//! cost. Leaving zero counts out of step 3 would reveal which terms occur at all (a term
//! present in one document could only appear then), which is why every entry gets noise.
//!
//! Ties in noisy counts are broken by vocabulary order (a data-independent rule).
//!
//! # Per class (`per_class`)
//! A global top-N follows the largest classes: a small class's own keyphrases are drowned.
//! With the curator's public class set ([`crate::classes`]), the same mechanism runs on each
//! class's histogram separately: h_c[v] = documents of class c that contribute v, noise of
//! scale S/ε_voc on every entry of every declared class's histogram. A document is in at most
//! one class and changes only that class's histogram, by at most S distinct entries: each
//! class's release is ε_voc-DP, and the classes compose in parallel (disjoint documents), so
//! the whole is ε_voc-DP. Documents the class set drops are counted nowhere. Ṽ is then read
//! from the noisy histograms only (post-processing): round robin over the classes, each
//! class's next best term by its own noisy count, skipping terms already taken, until N
//! terms; each term's shown count is the sum of its noisy counts over the classes.
//!
//! # Drawing the noise (speed, same distribution)
//! Step 3 draws one noise value per vocabulary entry: 340,000 English words × 40 classes is
//! 13.6 million exact draws, most of them for zero counts that can never reach the top N.
//! [`NoisyHistogram`] draws them lazily, with exactly the joint distribution of drawing every
//! one: the noise values are independent, and for an integer T ≥ 1 each zero-count entry's
//! value Z is drawn in two steps, first the event Z ≥ T (an exact Bernoulli of probability
//! P(Z ≥ T) = q^T/(1+q), `sampler::bernoulli_laplace_at_least`, which mostly fails after one
//! or two uniform draws), then Z given that event: T + a geometric variable (P(Z = z | Z ≥ T)
//! ∝ q^z for z ≥ T), or, only when needed, Z given Z < T (exact rejection from the full
//! distribution). Every non-zero count gets its full draw. If at least N entries then have a
//! noisy value ≥ T, the N largest are among the values drawn (every undrawn value is below T),
//! so the top N is read from them; otherwise the remaining zero-count entries are drawn (given
//! Z < T) and the top N is read from all. A value needed later (a selected term's count in
//! another class) is drawn then, given Z < T, once. T is chosen so that about 4N + 64 zero
//! entries are expected above it; it affects only the running time, never what is released.

use serde::{Deserialize, Serialize};

use std::collections::HashMap;

use super::sampler::{bernoulli_laplace_at_least, discrete_laplace, geometric, Ratio};
use super::{check_epsilon, DpError, ParamError, SecureRng};
use crate::ledger::{Scope, Spend};
use crate::vocab::{PublicVocabulary, TermId};

/// Parameters of the DP vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct VocabParams {
    /// ε_voc.
    pub epsilon: f64,
    /// N: how many terms to keep.
    pub top_n: usize,
    /// S: how many distinct matched terms each document contributes.
    pub terms_per_doc: usize,
    /// Select from per-class noisy histograms (module docs, "Per class").
    #[serde(default)]
    pub per_class: bool,
}

impl VocabParams {
    pub const MAX_TERMS_PER_DOC: usize = 10_000;

    /// Checks the parameters against the vocabulary they will be used with.
    pub fn validate(&self, vocab_len: usize) -> Result<(), ParamError> {
        check_epsilon("ε_voc", self.epsilon)?;
        if self.top_n == 0 {
            return Err(ParamError::new("N (vocabulary size)", self.top_n, "must be at least 1"));
        }
        if self.top_n > vocab_len {
            return Err(ParamError::new(
                "N (vocabulary size)",
                self.top_n,
                "cannot exceed the number of terms in the public vocabulary",
            ));
        }
        if self.terms_per_doc == 0 || self.terms_per_doc > Self::MAX_TERMS_PER_DOC {
            return Err(ParamError::new("S (terms per document)", self.terms_per_doc, "must be between 1 and 10000"));
        }
        Ok(())
    }
}

/// h: for each public term, how many documents contribute it. Private; never released.
#[derive(Debug, Clone)]
pub struct TermHistogram {
    counts: Vec<u64>,
    terms_per_doc: usize,
    documents: u64,
}

impl TermHistogram {
    pub fn new(vocab_len: usize, terms_per_doc: usize) -> TermHistogram {
        TermHistogram { counts: vec![0; vocab_len], terms_per_doc, documents: 0 }
    }

    /// Adds one document's contribution. The sensitivity argument needs at most S distinct
    /// terms per document; this is enforced here, whatever the caller passes.
    pub fn add_document(&mut self, terms: &[TermId]) {
        self.documents += 1;
        let mut taken: Vec<TermId> = Vec::with_capacity(self.terms_per_doc.min(terms.len()));
        for &t in terms {
            if taken.len() == self.terms_per_doc {
                break;
            }
            if (t as usize) < self.counts.len() && !taken.contains(&t) {
                taken.push(t);
                self.counts[t as usize] += 1;
            }
        }
    }

    pub fn documents(&self) -> u64 {
        self.documents
    }

    pub fn terms_per_doc(&self) -> usize {
        self.terms_per_doc
    }

    /// Number of public terms with a non-zero count (for the curator's eyes only).
    pub fn distinct_terms(&self) -> usize {
        self.counts.iter().filter(|&&c| c > 0).count()
    }

    #[cfg(test)]
    pub(crate) fn counts(&self) -> &[u64] {
        &self.counts
    }
}

/// One selected term.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectedTerm {
    pub term: String,
    /// Index in the public vocabulary.
    pub id: TermId,
    /// The noisy count (a DP output, safe to show).
    pub noisy_count: i64,
}

/// Ṽ: the private vocabulary, a DP artefact (ε_voc-DP).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivateVocabulary {
    pub public_vocabulary: String,
    pub public_vocabulary_checksum: String,
    pub params: VocabParams,
    /// In decreasing noisy count.
    pub terms: Vec<SelectedTerm>,
}

impl PrivateVocabulary {
    fn new(vocab: &PublicVocabulary, params: &VocabParams, terms: Vec<SelectedTerm>) -> PrivateVocabulary {
        PrivateVocabulary {
            public_vocabulary: vocab.name.clone(),
            public_vocabulary_checksum: vocab.checksum.clone(),
            params: *params,
            terms,
        }
    }
}

/// The mechanism: noisy histogram, top N. Returns Ṽ and what it spent.
pub fn select_vocabulary(
    hist: &TermHistogram,
    vocab: &PublicVocabulary,
    params: &VocabParams,
    rng: &mut SecureRng,
) -> Result<(PrivateVocabulary, Spend), DpError> {
    params.validate(vocab.len())?;
    if hist.counts.len() != vocab.len() || hist.terms_per_doc != params.terms_per_doc {
        return Err(DpError::Param(ParamError::new(
            "histogram",
            hist.counts.len(),
            "was built for a different vocabulary or S",
        )));
    }
    // Scale S/ε exactly (no rounding): Δ₁ = S under add/remove of one document (module docs).
    let scale = Ratio::int_over_f64(params.terms_per_doc as u64, params.epsilon)?;
    let top = NoisyHistogram::draw(&hist.counts, params.top_n, scale, rng).top(params.top_n);
    let terms = top
        .into_iter()
        .map(|(id, noisy_count)| SelectedTerm { term: vocab.term(id).to_string(), id, noisy_count })
        .collect();
    let spend = Spend {
        stage: "vocabulary".into(),
        mechanism: "discrete Laplace on the term histogram, top-N".into(),
        epsilon: params.epsilon,
        params: serde_json::json!({
            "terms_per_doc_S": params.terms_per_doc,
            "top_n": params.top_n,
            "l1_sensitivity": params.terms_per_doc,
            "noise_scale": scale.to_f64(),
            "public_vocabulary": vocab.name,
            "public_vocabulary_terms": vocab.len(),
        }),
        scope: Scope::AllDocuments,
    };
    Ok((PrivateVocabulary::new(vocab, params, terms), spend))
}

/// The per-class mechanism (module docs, "Per class"): one histogram per class of the public
/// class set, in its order; `class_names` name the ledger partitions. Returns Ṽ and one spend
/// per class.
pub fn select_vocabulary_by_class(
    hists: &[TermHistogram],
    class_names: &[&str],
    vocab: &PublicVocabulary,
    params: &VocabParams,
    rng: &mut SecureRng,
) -> Result<(PrivateVocabulary, Vec<Spend>), DpError> {
    params.validate(vocab.len())?;
    if hists.is_empty() || hists.len() != class_names.len() || hists.iter().any(|h| h.counts.len() != vocab.len() || h.terms_per_doc != params.terms_per_doc) {
        return Err(DpError::Param(ParamError::new("class histograms", hists.len(), "do not match the classes, the vocabulary or S")));
    }
    let scale = Ratio::int_over_f64(params.terms_per_doc as u64, params.epsilon)?;
    let n = params.top_n;
    let mut noisy: Vec<NoisyHistogram<'_>> = hists.iter().map(|h| NoisyHistogram::draw(&h.counts, n, scale, rng)).collect();
    let ranked: Vec<Vec<TermId>> = noisy.iter().map(|h| h.top(n).into_iter().map(|(id, _)| id).collect()).collect();
    let mut terms: Vec<SelectedTerm> = round_robin(&ranked, n)
        .into_iter()
        .map(|id| {
            let summed = noisy.iter_mut().fold(0i64, |s, h| s.saturating_add(h.value(id, rng)));
            SelectedTerm { term: vocab.term(id).to_string(), id, noisy_count: summed }
        })
        .collect();
    terms.sort_by(|a, b| b.noisy_count.cmp(&a.noisy_count).then(a.id.cmp(&b.id)));
    let spends = class_names
        .iter()
        .map(|name| Spend {
            stage: "vocabulary".into(),
            mechanism: "discrete Laplace on each class's term histogram, round-robin top-N".into(),
            epsilon: params.epsilon,
            params: serde_json::json!({
                "terms_per_doc_S": params.terms_per_doc,
                "top_n": params.top_n,
                "per_class": true,
                "l1_sensitivity": params.terms_per_doc,
                "noise_scale": scale.to_f64(),
                "public_vocabulary": vocab.name,
                "public_vocabulary_terms": vocab.len(),
            }),
            scope: Scope::Partition { label: name.to_string() },
        })
        .collect();
    Ok((PrivateVocabulary::new(vocab, params, terms), spends))
}

/// Stage 2 on documents given as (class, first terms): one histogram over all of them, or
/// one per class of the public class set when `params.per_class` (`class_names` in its order;
/// a document with class `None`, one the class set drops, is then counted nowhere). Returns Ṽ
/// and its spends (one, or one per class).
pub fn select_from_documents<'a>(
    docs: impl Iterator<Item = (Option<usize>, &'a [TermId])>,
    class_names: &[&str],
    vocab: &PublicVocabulary,
    params: &VocabParams,
    rng: &mut SecureRng,
) -> Result<(PrivateVocabulary, Vec<Spend>), DpError> {
    let s = params.terms_per_doc;
    if params.per_class {
        let mut hists: Vec<TermHistogram> = class_names.iter().map(|_| TermHistogram::new(vocab.len(), s)).collect();
        for (class, terms) in docs {
            if let Some(h) = class.and_then(|c| hists.get_mut(c)) {
                h.add_document(terms);
            }
        }
        return select_vocabulary_by_class(&hists, class_names, vocab, params, rng);
    }
    let mut h = TermHistogram::new(vocab.len(), s);
    docs.for_each(|(_, terms)| h.add_document(terms));
    select_vocabulary(&h, vocab, params, rng).map(|(pv, spend)| (pv, vec![spend]))
}

/// Round robin over rankings (best first): each list's next term not yet taken, in turn,
/// until `n` terms or the lists run out.
pub(crate) fn round_robin(ranked: &[Vec<TermId>], n: usize) -> Vec<TermId> {
    let mut taken: Vec<TermId> = Vec::with_capacity(n);
    let mut seen = std::collections::HashSet::with_capacity(n);
    let longest = ranked.iter().map(Vec::len).max().unwrap_or(0);
    for r in 0..longest {
        for list in ranked {
            if taken.len() == n {
                return taken;
            }
            if let Some(&id) = list.get(r) {
                if seen.insert(id) {
                    taken.push(id);
                }
            }
        }
    }
    taken
}

/// A histogram's noisy counts h[v] + Z_v (Z_v discrete Laplace of `scale`, every entry, zeros
/// included), drawn lazily with the same joint distribution (module docs, "Drawing the noise").
struct NoisyHistogram<'a> {
    counts: &'a [u64],
    scale: Ratio,
    /// Some(T): the zero-count entries not in `drawn` have noise below T, not drawn yet.
    /// None: every entry is in `drawn`.
    threshold: Option<i64>,
    drawn: HashMap<TermId, i64>,
}

impl<'a> NoisyHistogram<'a> {
    /// Draws what the top `n` needs.
    fn draw(counts: &'a [u64], n: usize, scale: Ratio, rng: &mut SecureRng) -> NoisyHistogram<'a> {
        let zeros = counts.iter().filter(|&&c| c == 0).count();
        let threshold = threshold_for(zeros, n, scale);
        let mut drawn = HashMap::with_capacity(match threshold {
            Some(_) => counts.len() - zeros + 8 * n + 128,
            None => counts.len(),
        });
        for (i, &c) in counts.iter().enumerate() {
            let value = match threshold {
                _ if c > 0 => noisy(c, scale, rng),
                None => discrete_laplace(rng, scale),
                Some(t) if bernoulli_laplace_at_least(rng, scale, t as u16) => t.saturating_add(geometric(rng, scale)),
                Some(_) => continue,
            };
            drawn.insert(i as TermId, value);
        }
        let mut h = NoisyHistogram { counts, scale, threshold, drawn };
        if let Some(t) = threshold {
            if h.drawn.values().filter(|&&v| v >= t).count() < n {
                h.draw_the_rest(rng);
            }
        }
        h
    }

    /// Every zero-count entry not drawn yet, given that its noise is below T.
    fn draw_the_rest(&mut self, rng: &mut SecureRng) {
        let Some(t) = self.threshold.take() else { return };
        for (i, &c) in self.counts.iter().enumerate() {
            if c == 0 {
                let scale = self.scale;
                self.drawn.entry(i as TermId).or_insert_with(|| below(rng, scale, t));
            }
        }
    }

    /// The noisy count of entry `id` (drawn now, given noise below T, if it was not yet).
    fn value(&mut self, id: TermId, rng: &mut SecureRng) -> i64 {
        let (scale, threshold) = (self.scale, self.threshold);
        *self.drawn.entry(id).or_insert_with(|| match threshold {
            // Not drawn: a zero count whose noise is below T (non-zero counts are all drawn).
            Some(t) => below(rng, scale, t),
            None => unreachable!("every entry is drawn when there is no threshold"),
        })
    }

    /// The `n` largest noisy counts (see `top_of`). Exact: at least `n` drawn values are ≥ T
    /// (else `draw` drew everything), and every undrawn one is below T.
    fn top(&self, n: usize) -> Vec<(TermId, i64)> {
        top_of(self.drawn.iter().map(|(&id, &v)| (id, v)).collect(), n)
    }
}

/// A count plus discrete Laplace noise of `scale`.
fn noisy(count: u64, scale: Ratio, rng: &mut SecureRng) -> i64 {
    (count.min(i64::MAX as u64) as i64).saturating_add(discrete_laplace(rng, scale))
}

/// Discrete Laplace noise of `scale` given that it is below `t` (exact: rejection).
fn below(rng: &mut SecureRng, scale: Ratio, t: i64) -> i64 {
    loop {
        let z = discrete_laplace(rng, scale);
        if z < t {
            return z;
        }
    }
}

/// T for `zeros` zero-count entries and a top `n`: the largest T ≥ 1 (at most 65535) with
/// about 4n + 64 of them expected to reach it, or None (draw every entry) if even T = 1 would
/// leave fewer. Floating point is fine here: any T ≥ 1 gives the same distribution.
fn threshold_for(zeros: usize, n: usize, scale: Ratio) -> Option<i64> {
    let q = (-1.0 / scale.to_f64()).exp();
    if !(q > 0.0 && q < 1.0) || zeros == 0 {
        return None;
    }
    let ratio = (4.0 * n as f64 + 64.0) * (1.0 + q) / zeros as f64;
    if ratio >= q {
        return None;
    }
    Some((ratio.ln() / q.ln()).floor().clamp(1.0, u16::MAX as f64) as i64)
}

/// The `n` largest entries as (index, value), largest first; ties go to the lower index.
fn top_of(mut all: Vec<(TermId, i64)>, n: usize) -> Vec<(TermId, i64)> {
    let order = |a: &(TermId, i64), b: &(TermId, i64)| b.1.cmp(&a.1).then(a.0.cmp(&b.0));
    let n = n.min(all.len());
    if n < all.len() {
        all.select_nth_unstable_by(n, order);
        all.truncate(n);
    }
    all.sort_unstable_by(order);
    all
}

/// Adds discrete Laplace noise of `scale` to every count and returns the `n` largest noisy
/// counts as (index, noisy count), largest first; ties go to the lower index.
#[cfg(test)]
pub(crate) fn noisy_top_n(counts: &[u64], n: usize, scale: Ratio, rng: &mut SecureRng) -> Vec<(TermId, i64)> {
    NoisyHistogram::draw(counts, n, scale, rng).top(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab(n: usize) -> PublicVocabulary {
        let list: String = (0..n).map(|i| format!("term{i}\n")).collect();
        PublicVocabulary::parse("v", list.as_bytes()).unwrap()
    }

    #[test]
    fn histogram_takes_at_most_s_distinct_terms_per_document() {
        let mut h = TermHistogram::new(5, 2);
        h.add_document(&[1, 1, 2, 3]);
        h.add_document(&[4]);
        h.add_document(&[]);
        assert_eq!(h.counts(), &[0, 1, 1, 0, 1]);
        assert_eq!(h.documents(), 3);
    }

    #[test]
    fn parameters_are_validated() {
        let ok = VocabParams { epsilon: 1.0, top_n: 3, terms_per_doc: 2, per_class: false };
        assert!(ok.validate(10).is_ok());
        for bad in [
            VocabParams { epsilon: 0.0, ..ok },
            VocabParams { epsilon: -1.0, ..ok },
            VocabParams { epsilon: f64::NAN, ..ok },
            VocabParams { epsilon: f64::INFINITY, ..ok },
            VocabParams { top_n: 0, ..ok },
            VocabParams { top_n: 11, ..ok },
            VocabParams { terms_per_doc: 0, ..ok },
        ] {
            assert!(bad.validate(10).is_err(), "{bad:?} accepted");
        }
        let msg = VocabParams { epsilon: f64::NAN, ..ok }.validate(10).unwrap_err().to_string();
        assert!(msg.contains("ε_voc") && msg.contains("finite"), "{msg}");
    }

    #[test]
    fn frequent_terms_are_selected_and_spend_is_reported() {
        let v = vocab(1000);
        let mut h = TermHistogram::new(v.len(), 3);
        for _ in 0..500 {
            h.add_document(&[7, 42, 99]);
        }
        let params = VocabParams { epsilon: 1.0, top_n: 3, terms_per_doc: 3, per_class: false };
        let mut rng = SecureRng::seeded_for_tests(7);
        let (pv, spend) = select_vocabulary(&h, &v, &params, &mut rng).unwrap();
        let mut ids: Vec<_> = pv.terms.iter().map(|t| t.id).collect();
        ids.sort();
        assert_eq!(ids, [7, 42, 99]);
        assert_eq!(spend.epsilon, 1.0);
        assert_eq!(spend.params["noise_scale"], 3.0);
        assert!(pv.terms.windows(2).all(|w| w[0].noisy_count >= w[1].noisy_count));
    }

    #[test]
    fn zero_count_entries_get_noise_too() {
        // With all counts zero, the selection must vary from run to run: if zero entries got
        // no noise, the top-N would always be the first N terms.
        let h = TermHistogram::new(200, 1);
        let mut rng = SecureRng::seeded_for_tests(8);
        let scale = Ratio::int_over_f64(1, 1.0).unwrap();
        let a = noisy_top_n(&h.counts, 5, scale, &mut rng);
        let b = noisy_top_n(&h.counts, 5, scale, &mut rng);
        assert_ne!(a, b);
        assert!(a.iter().any(|&(_, c)| c != 0));
    }

    #[test]
    fn per_class_selection_gives_each_class_its_own_terms() {
        let v = vocab(1000);
        let params = VocabParams { epsilon: 1.0, top_n: 4, terms_per_doc: 2, per_class: true };
        // Class a: 400 documents of terms 1, 2; class b: 30 documents of terms 500, 501.
        let mut ha = TermHistogram::new(v.len(), 2);
        (0..400).for_each(|_| ha.add_document(&[1, 2]));
        let mut hb = TermHistogram::new(v.len(), 2);
        (0..30).for_each(|_| hb.add_document(&[500, 501]));
        let mut rng = SecureRng::seeded_for_tests(21);
        let (pv, spends) = select_vocabulary_by_class(&[ha.clone(), hb.clone()], &["a", "b"], &v, &params, &mut rng).unwrap();
        let mut ids: Vec<TermId> = pv.terms.iter().map(|t| t.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, [1, 2, 500, 501]);
        assert_eq!(spends.len(), 2);
        let mut run = crate::ledger::Run::new("r".into(), "t".into());
        run.spends = spends;
        assert!((run.epsilon() - 1.0).abs() < 1e-12, "classes compose in parallel");
        // Shape: always N terms, also with empty classes.
        let empty = TermHistogram::new(v.len(), 2);
        let (pv, _) = select_vocabulary_by_class(&[empty.clone(), empty], &["a", "b"], &v, &params, &mut rng).unwrap();
        assert_eq!(pv.terms.len(), 4);
        assert!(select_vocabulary_by_class(&[ha], &["a", "b"], &v, &params, &mut rng).is_err());
    }

    /// Exact CDF of the discrete Laplace distribution with `scale` at integer z.
    fn laplace_cdf(scale: f64, z: i64) -> f64 {
        let q = (-1.0 / scale).exp();
        if z >= 0 {
            1.0 - q.powi((z + 1) as i32) / (1.0 + q)
        } else {
            q.powi((-z) as i32) / (1.0 + q)
        }
    }

    /// Kolmogorov–Smirnov distance of integer samples from a CDF.
    fn ks(mut xs: Vec<i64>, cdf: impl Fn(i64) -> f64) -> f64 {
        xs.sort_unstable();
        let n = xs.len() as f64;
        let (mut d, mut i) = (0f64, 0);
        while i < xs.len() {
            let z = xs[i];
            let j = i + xs[i..].iter().take_while(|&&x| x == z).count();
            d = d.max((i as f64 / n - cdf(z - 1)).abs()).max((j as f64 / n - cdf(z)).abs());
            i = j;
        }
        d
    }

    #[test]
    fn lazily_drawn_noise_has_the_distribution_of_drawing_every_entry() {
        // 300 zero counts and a top 1 at scale 1: T = 1 is used (most entries never get a full
        // draw). Any single entry's value, drawn at once or later given Z < T, must be exactly
        // discrete Laplace; the top value must be the maximum of 300 of them, whose CDF is
        // F(m)^300. DKW bound at α = 1e-6 for 20,000 samples: 0.019.
        let counts = vec![0u64; 300];
        let scale = Ratio::from_f64(1.0).unwrap();
        assert_eq!(threshold_for(300, 1, scale), Some(1));
        let mut rng = SecureRng::seeded_for_tests(41);
        let (mut one, mut top) = (Vec::new(), Vec::new());
        for _ in 0..20_000 {
            let mut h = NoisyHistogram::draw(&counts, 1, scale, &mut rng);
            top.push(h.top(1)[0].1);
            one.push(h.value(17, &mut rng));
        }
        let limit = (2e6f64.ln() / (2.0 * 20_000.0)).sqrt();
        let d_one = ks(one, |z| laplace_cdf(1.0, z));
        assert!(d_one < limit, "one entry: KS distance {d_one}");
        let d_top = ks(top.clone(), |z| laplace_cdf(1.0, z).powi(300));
        assert!(d_top < limit, "top value: KS distance {d_top}");
        // The same check tells 300 entries from 400 (a sampler that drew the tail too often).
        let d_wrong = ks(top, |z| laplace_cdf(1.0, z).powi(400));
        assert!(d_wrong > limit, "KS distance {d_wrong} did not tell 300 entries from 400");
    }

    #[test]
    fn lazy_selection_matches_full_draws_with_counts_and_classes() {
        // Non-zero counts among many zeros, T in use: the selected set's distribution equals
        // that of the plain mechanism (every entry drawn), outcome by outcome within 6 sd.
        let mut counts = vec![0u64; 400];
        counts[3] = 3;
        counts[250] = 2;
        counts[399] = 1;
        let scale = Ratio::from_f64(1.5).unwrap();
        assert!(threshold_for(397, 2, scale).is_some());
        let trials = 20_000;
        let mut rng = SecureRng::seeded_for_tests(42);
        let set = |top: Vec<(TermId, i64)>| -> Vec<TermId> {
            let mut v: Vec<TermId> = top.into_iter().map(|p| p.0).filter(|&id| [3, 250, 399].contains(&id)).collect();
            v.sort_unstable();
            v
        };
        let lazy = crate::dp::testing::frequencies(trials, || set(NoisyHistogram::draw(&counts, 2, scale, &mut rng).top(2)));
        let full = crate::dp::testing::frequencies(trials, || {
            let all: Vec<(TermId, i64)> = counts.iter().enumerate().map(|(i, &c)| (i as TermId, noisy(c, scale, &mut rng))).collect();
            set(top_of(all, 2))
        });
        for k in lazy.keys().chain(full.keys()) {
            let (a, b) = (*lazy.get(k).unwrap_or(&0) as f64, *full.get(k).unwrap_or(&0) as f64);
            let sd = ((a + b) / 2.0 * 2.0).sqrt().max(1.0);
            assert!((a - b).abs() < 6.0 * sd, "outcome {k:?}: lazy {a}, full {b}");
        }
    }

    /// Empirical privacy check. D and D' differ by one document that contributes S terms.
    /// Run the mechanism many times on each, estimate P[output = o] for every outcome o (the
    /// selected set), and take the largest lower confidence bound of |ln P_D(o)/P_D'(o)|.
    /// A correct mechanism cannot exceed ε; an under-noised one (scale 1/ε instead of S/ε,
    /// the classic mistake of ignoring S) must be caught by the same check.
    fn estimated_privacy_loss(scale: Ratio, seed: u64) -> f64 {
        const S: usize = 3;
        const V: usize = 6;
        const TRIALS: usize = 60_000;
        let d = vec![0u64; V];
        let mut d_prime = d.clone();
        for c in d_prime.iter_mut().take(S) {
            *c += 1;
        }
        let mut rng = SecureRng::seeded_for_tests(seed);
        let mut outcomes = |counts: &[u64]| {
            crate::dp::testing::frequencies(TRIALS, || {
                let mut set: Vec<TermId> = noisy_top_n(counts, S, scale, &mut rng).into_iter().map(|p| p.0).collect();
                set.sort_unstable();
                set
            })
        };
        let f0 = outcomes(&d);
        let f1 = outcomes(&d_prime);
        crate::dp::testing::max_log_ratio(&f0, &f1, TRIALS)
    }

    #[test]
    fn empirical_privacy_loss_stays_within_epsilon() {
        let eps = 1.0;
        let correct = Ratio::int_over_f64(3, eps).unwrap();
        let loss = estimated_privacy_loss(correct, 11);
        assert!(loss <= eps, "estimated privacy loss {loss} exceeds ε = {eps}");
        let under_noised = Ratio::int_over_f64(1, eps).unwrap();
        let loss_bad = estimated_privacy_loss(under_noised, 12);
        assert!(loss_bad > eps, "an under-noised mechanism went undetected (loss {loss_bad})");
        println!("estimated privacy loss: correct {loss:.3}, under-noised {loss_bad:.3} (ε = {eps})");
    }
}
