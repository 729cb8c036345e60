//! The DP vocabulary (DP-KPS, appendix B.1): which public terms the private corpus uses most.
//!
//! 1. Each document contributes its first S DISTINCT matched terms (see
//!    [`crate::public_vocab::Matcher::first_distinct`]).
//! 2. Histogram over the WHOLE public vocabulary: h[v] = number of documents that contribute v.
//! 3. Discrete Laplace noise of scale S/ε_voc on EVERY entry, zero counts included.
//! 4. Keep the N entries with the largest noisy counts.
//!
//! Privacy map. Neighbouring relation: add or remove one document. A document changes h by +1
//! (or -1) on at most S distinct entries and leaves the others alone, so the L1 sensitivity of
//! h is Δ₁ = S. The vocabulary is public and fixed before seeing the data, so the set of
//! entries does not depend on the data. Adding discrete Laplace noise of scale Δ₁/ε = S/ε to
//! each entry of an integer vector with L1 sensitivity S is ε-DP (see [`super::noise`]).
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
//! P(Z ≥ T) = q^T/(1+q), `noise::bernoulli_laplace_at_least`, which mostly fails after one
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

use super::noise::{bernoulli_laplace_at_least, discrete_laplace, geometric, Ratio};
use super::{check_epsilon, DpError, ParamError, SecureRng};
use crate::ledger::{Scope, Spend};
use crate::public_vocab::{PublicVocabulary, TermId};

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
    /// The largest of its noisy counts over the classes' histograms (per class), or its noisy
    /// count (one histogram): what [`super::candidates`] compares with Ṽ's clearing threshold.
    /// None in Ṽs written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub best_noisy_count: Option<i64>,
}

/// Ṽ: the private vocabulary, a DP artefact (ε_voc-DP).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrivateVocabulary {
    pub public_vocabulary: String,
    pub public_vocabulary_checksum: String,
    pub params: VocabParams,
    /// In decreasing noisy count.
    pub terms: Vec<SelectedTerm>,
    /// τ: the noisy count that at most N/10 zero-count entries, over all the noisy histograms,
    /// are expected to reach (a public function of |V|, the number of histograms, ε_voc, S and
    /// N; see [`super::candidates`]). None in Ṽs written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clearing_threshold: Option<i64>,
}

impl PrivateVocabulary {
    /// Ṽ from `histograms` noisy histograms over `vocab`.
    fn new(vocab: &PublicVocabulary, params: &VocabParams, terms: Vec<SelectedTerm>, histograms: usize) -> PrivateVocabulary {
        PrivateVocabulary {
            public_vocabulary: vocab.name.clone(),
            public_vocabulary_checksum: vocab.checksum.clone(),
            params: *params,
            terms,
            clearing_threshold: Some(super::candidates::clearing_threshold(vocab.len() * histograms, params)),
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
        .map(|(id, noisy_count)| SelectedTerm { term: vocab.term(id).to_string(), id, noisy_count, best_noisy_count: Some(noisy_count) })
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
    Ok((PrivateVocabulary::new(vocab, params, terms, 1), spend))
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
    let noisy: Vec<NoisyHistogram<'_>> = hists.iter().map(|h| NoisyHistogram::draw(&h.counts, n, scale, rng)).collect();
    let terms: Vec<SelectedTerm> = summed_round_robin(noisy, n, rng)
        .into_iter()
        .map(|(id, noisy_count, best)| SelectedTerm { term: vocab.term(id).to_string(), id, noisy_count, best_noisy_count: Some(best) })
        .collect();
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
    Ok((PrivateVocabulary::new(vocab, params, terms, hists.len()), spends))
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

/// Ṽ from the classes' noisy histograms (module docs, "Per class"): round robin over each
/// class's top `n`, each term's count summed over the classes in class order, with the largest
/// of its counts; largest sum first, ties to the lower id.
fn summed_round_robin(mut noisy: Vec<NoisyHistogram<'_>>, n: usize, rng: &mut SecureRng) -> Vec<(TermId, i64, i64)> {
    let ranked: Vec<Vec<TermId>> = noisy.iter().map(|h| h.top(n).into_iter().map(|(id, _)| id).collect()).collect();
    let mut terms: Vec<(TermId, i64, i64)> = round_robin(&ranked, n)
        .into_iter()
        .map(|id| {
            let values: Vec<i64> = noisy.iter_mut().map(|h| h.value(id, rng)).collect();
            let sum = values.iter().fold(0i64, |s, &v| s.saturating_add(v));
            (id, sum, values.into_iter().max().unwrap_or(i64::MIN))
        })
        .collect();
    terms.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    terms
}

/// A histogram's noisy counts h[v] + Z_v (Z_v discrete Laplace of `scale`, every entry, zeros
/// included), drawn lazily with the same joint distribution (module docs, "Drawing the noise").
struct NoisyHistogram<'a> {
    counts: &'a [u64],
    scale: Ratio,
    values: Drawn,
}

/// The noisy counts drawn so far.
enum Drawn {
    /// T in use: every non-zero count and every zero count whose noise reached T (or that was
    /// asked for since); the other zero-count entries have noise below T, not drawn yet.
    Lazy { threshold: i64, drawn: HashMap<TermId, i64> },
    /// Every entry, by index: 8 bytes each (a map of 340k entries takes about 26 bytes each,
    /// ~350 MB for 40 classes, and every class is kept until Ṽ is read).
    All(Vec<i64>),
}

impl<'a> NoisyHistogram<'a> {
    /// Draws what the top `n` needs, with T from [`threshold_for`].
    fn draw(counts: &'a [u64], n: usize, scale: Ratio, rng: &mut SecureRng) -> NoisyHistogram<'a> {
        let zeros = counts.iter().filter(|&&c| c == 0).count();
        NoisyHistogram::draw_with(counts, n, scale, threshold_for(zeros, n, scale), rng)
    }

    /// Draws what the top `n` needs with a given T in 1..=65535 (any such T gives the same
    /// distribution), or every entry when `threshold` is None.
    fn draw_with(counts: &'a [u64], n: usize, scale: Ratio, threshold: Option<i64>, rng: &mut SecureRng) -> NoisyHistogram<'a> {
        let Some(t) = threshold else {
            let all = counts.iter().map(|&c| noisy(c, scale, rng)).collect();
            return NoisyHistogram { counts, scale, values: Drawn::All(all) };
        };
        debug_assert!((1..=u16::MAX as i64).contains(&t));
        let non_zero = counts.iter().filter(|&&c| c > 0).count();
        let mut drawn = HashMap::with_capacity(non_zero + 8 * n + 128);
        for (i, &c) in counts.iter().enumerate() {
            let value = if c > 0 {
                noisy(c, scale, rng)
            } else if bernoulli_laplace_at_least(rng, scale, t as u16) {
                t.saturating_add(geometric(rng, scale))
            } else {
                continue;
            };
            drawn.insert(i as TermId, value);
        }
        // Every value ≥ T counts, a non-zero count's too; values below T may be drawn ones.
        let reaching = drawn.values().filter(|&&v| v >= t).count();
        let mut h = NoisyHistogram { counts, scale, values: Drawn::Lazy { threshold: t, drawn } };
        if reaching < n {
            h.draw_the_rest(rng);
        }
        h
    }

    /// Every zero-count entry not drawn yet, given that its noise is below T; then all are kept
    /// by index.
    fn draw_the_rest(&mut self, rng: &mut SecureRng) {
        let Drawn::Lazy { threshold, drawn } = &self.values else { return };
        let all = (0..self.counts.len())
            .map(|i| match drawn.get(&(i as TermId)) {
                Some(&v) => v,
                // Not drawn: a zero count whose noise is below T (non-zero counts are all drawn).
                None => below(rng, self.scale, *threshold),
            })
            .collect();
        self.values = Drawn::All(all);
    }

    /// The noisy count of entry `id` (drawn now, given noise below T, if it was not yet).
    fn value(&mut self, id: TermId, rng: &mut SecureRng) -> i64 {
        let scale = self.scale;
        match &mut self.values {
            Drawn::All(all) => all[id as usize],
            Drawn::Lazy { threshold, drawn } => *drawn.entry(id).or_insert_with(|| below(rng, scale, *threshold)),
        }
    }

    /// The `n` largest noisy counts (see `top_of`). Exact: when not every entry is drawn, at
    /// least `n` drawn values are ≥ T (else `draw_with` drew everything), and every undrawn one
    /// is below T.
    fn top(&self, n: usize) -> Vec<(TermId, i64)> {
        match &self.values {
            Drawn::All(all) => top_of(all.iter().enumerate().map(|(i, &v)| (i as TermId, v)).collect(), n),
            Drawn::Lazy { drawn, .. } => top_of(drawn.iter().map(|(&id, &v)| (id, v)).collect(), n),
        }
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

    /// The thresholds the distribution tests run at: every entry drawn; T = 1, the lazy path
    /// (what `threshold_for` picks for the first test); T = 6, where fewer than N values
    /// usually reach T, so the fallback (`draw_the_rest`) runs in most draws.
    const THRESHOLDS: [Option<i64>; 3] = [None, Some(1), Some(6)];

    #[test]
    fn lazily_drawn_noise_has_the_distribution_of_drawing_every_entry() {
        // 300 zero counts and a top 1 at scale 1. Any single entry's value, drawn at once or
        // later given Z < T, must be exactly discrete Laplace; the top value must be the
        // maximum of 300 of them, whose CDF is F(m)^300. DKW bound at α = 1e-6 for 12,000
        // samples: 0.025. (At T = 6, about 300·q^6/(1+q) = 0.54 values reach T: the fallback
        // runs in ~58% of the draws.)
        let counts = vec![0u64; 300];
        let scale = Ratio::from_f64(1.0).unwrap();
        assert_eq!(threshold_for(300, 1, scale), Some(1));
        let mut rng = SecureRng::seeded_for_tests(41);
        let trials = 12_000;
        let limit = (2e6f64.ln() / (2.0 * trials as f64)).sqrt();
        for threshold in THRESHOLDS {
            let (mut one, mut top) = (Vec::new(), Vec::new());
            for _ in 0..trials {
                let mut h = NoisyHistogram::draw_with(&counts, 1, scale, threshold, &mut rng);
                top.push(h.top(1)[0].1);
                one.push(h.value(17, &mut rng));
            }
            let d_one = ks(one, |z| laplace_cdf(1.0, z));
            assert!(d_one < limit, "T {threshold:?}, one entry: KS distance {d_one}");
            let d_top = ks(top.clone(), |z| laplace_cdf(1.0, z).powi(300));
            assert!(d_top < limit, "T {threshold:?}, top value: KS distance {d_top}");
            // The same check tells 300 entries from 400 (a sampler that drew the tail too often).
            let d_wrong = ks(top, |z| laplace_cdf(1.0, z).powi(400));
            assert!(d_wrong > limit, "T {threshold:?}: KS distance {d_wrong} did not tell 300 entries from 400");
        }
    }

    /// Two outcome frequency tables of the same number of trials agree outcome by outcome
    /// within 6 sd (the difference of two counts a, b has variance about a + b).
    fn assert_same_frequencies<K: std::fmt::Debug + Eq + std::hash::Hash>(lazy: &HashMap<K, usize>, full: &HashMap<K, usize>, what: &str) {
        for k in lazy.keys().chain(full.keys()) {
            let (a, b) = (*lazy.get(k).unwrap_or(&0) as f64, *full.get(k).unwrap_or(&0) as f64);
            let sd = (a + b).sqrt().max(1.0);
            assert!((a - b).abs() < 6.0 * sd, "{what}, outcome {k:?}: lazy {a}, full {b}");
        }
    }

    /// Every entry of `counts` with its own full draw (the plain mechanism, no laziness).
    fn full_draw(counts: &[u64], scale: Ratio, rng: &mut SecureRng) -> Vec<(TermId, i64)> {
        counts.iter().enumerate().map(|(i, &c)| (i as TermId, noisy(c, scale, rng))).collect()
    }

    #[test]
    fn lazy_selection_matches_full_draws_with_counts() {
        // Non-zero counts among zeros: the selected set of ids (zero-count ids included) has the
        // distribution of the plain mechanism (every entry drawn), outcome by outcome, at every
        // T. 24 entries and a top 2 (276 possible sets) keep every outcome well sampled; at
        // T = 6 the non-zero counts rarely reach T, so the fallback decides most draws.
        let mut counts = vec![0u64; 24];
        counts[3] = 3;
        counts[10] = 2;
        counts[23] = 1;
        let scale = Ratio::from_f64(1.5).unwrap();
        let trials = 15_000;
        let mut rng = SecureRng::seeded_for_tests(42);
        for threshold in THRESHOLDS {
            let lazy = crate::dp::testing::frequencies(trials, || set_of(&NoisyHistogram::draw_with(&counts, 2, scale, threshold, &mut rng).top(2)));
            let full = crate::dp::testing::frequencies(trials, || set_of(&top_of(full_draw(&counts, scale, &mut rng), 2)));
            assert_same_frequencies(&lazy, &full, &format!("T {threshold:?}"));
        }
    }

    #[test]
    fn per_class_sums_match_full_draws() {
        // Two classes, each drawn with its own T (a term one class selects is often undrawn in
        // the other, and its value there is drawn late, given Z < T): Ṽ's ids and its summed
        // noisy counts have the distribution of drawing every entry of every class. Ids: set
        // frequencies; counts: two-sample KS of the count at each rank and of their total, at
        // α = 1e-6 (limit 2.69·sqrt(2/trials) = 0.038).
        let mut a = vec![0u64; 10];
        a[0] = 4;
        a[1] = 3;
        let mut b = vec![0u64; 10];
        b[7] = 2;
        b[8] = 1;
        let (n, trials) = (3, 10_000);
        let scale = Ratio::from_f64(1.0).unwrap();
        let limit = 2.69 * (2.0 / trials as f64).sqrt();
        let mut rng = SecureRng::seeded_for_tests(43);
        // (id, summed count, largest count) per selected term, largest sum first.
        let full = |rng: &mut SecureRng| -> Vec<(TermId, i64, i64)> {
            let all: Vec<Vec<(TermId, i64)>> = [&a, &b].iter().map(|c| full_draw(c, scale, rng)).collect();
            let ranked: Vec<Vec<TermId>> = all.iter().map(|v| top_of(v.clone(), n).into_iter().map(|p| p.0).collect()).collect();
            let mut terms: Vec<(TermId, i64, i64)> = round_robin(&ranked, n)
                .into_iter()
                .map(|id| {
                    let values = all.iter().map(|v| v[id as usize].1);
                    (id, values.clone().sum(), values.max().unwrap())
                })
                .collect();
            terms.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            terms
        };
        for (ta, tb) in [(None, None), (Some(1), Some(1)), (Some(6), Some(6)), (None, Some(1)), (Some(6), Some(1))] {
            let lazy: Vec<Vec<(TermId, i64, i64)>> = (0..trials)
                .map(|_| {
                    let noisy = vec![NoisyHistogram::draw_with(&a, n, scale, ta, &mut rng), NoisyHistogram::draw_with(&b, n, scale, tb, &mut rng)];
                    summed_round_robin(noisy, n, &mut rng)
                })
                .collect();
            let full: Vec<Vec<(TermId, i64, i64)>> = (0..trials).map(|_| full(&mut rng)).collect();
            let what = format!("T {ta:?}, {tb:?}");
            let ids = |runs: &[Vec<(TermId, i64, i64)>]| {
                let mut f: HashMap<Vec<TermId>, usize> = HashMap::new();
                runs.iter().for_each(|r| {
                    let pairs: Vec<(TermId, i64)> = r.iter().map(|p| (p.0, p.1)).collect();
                    *f.entry(set_of(&pairs)).or_default() += 1
                });
                f
            };
            assert_same_frequencies(&ids(&lazy), &ids(&full), &what);
            for rank in 0..=n {
                // rank n: the total of the n counts. The largest per-class count of the term at
                // each rank (what `dp::candidates` reads) too.
                let pick = |runs: &[Vec<(TermId, i64, i64)>]| -> Vec<i64> {
                    runs.iter().map(|r| if rank < n { r[rank].1 } else { r.iter().map(|p| p.1).sum() }).collect()
                };
                let d = ks_two_sample(pick(&lazy), pick(&full));
                assert!(d < limit, "{what}, rank {rank}: two-sample KS distance {d}");
                if rank < n {
                    let best = |runs: &[Vec<(TermId, i64, i64)>]| -> Vec<i64> { runs.iter().map(|r| r[rank].2).collect() };
                    let d = ks_two_sample(best(&lazy), best(&full));
                    assert!(d < limit, "{what}, rank {rank}: largest count, two-sample KS distance {d}");
                }
            }
        }
    }

    /// The ids of (id, count) pairs, sorted.
    fn set_of(terms: &[(TermId, i64)]) -> Vec<TermId> {
        let mut v: Vec<TermId> = terms.iter().map(|p| p.0).collect();
        v.sort_unstable();
        v
    }

    /// Two-sample Kolmogorov–Smirnov distance between integer samples.
    fn ks_two_sample(mut xs: Vec<i64>, mut ys: Vec<i64>) -> f64 {
        xs.sort_unstable();
        ys.sort_unstable();
        let (nx, ny) = (xs.len() as f64, ys.len() as f64);
        let (mut i, mut j, mut d) = (0, 0, 0f64);
        while i < xs.len() || j < ys.len() {
            // The next value present in either sample; both empirical CDFs just after it.
            let z = match (xs.get(i), ys.get(j)) {
                (Some(&x), Some(&y)) => x.min(y),
                (Some(&x), None) => x,
                (None, Some(&y)) => y,
                (None, None) => break,
            };
            i += xs[i..].iter().take_while(|&&x| x == z).count();
            j += ys[j..].iter().take_while(|&&y| y == z).count();
            d = d.max((i as f64 / nx - j as f64 / ny).abs());
        }
        d
    }

    /// Empirical privacy check. D and D' differ by one document that contributes S terms.
    /// Run the mechanism many times on each, estimate P[output = o] for every outcome o (the
    /// selected set), and take the largest lower confidence bound of |ln P_D(o)/P_D'(o)|.
    /// A correct mechanism cannot exceed ε; an under-noised one (scale 1/ε instead of S/ε,
    /// the classic mistake of ignoring S) must be caught by the same check.
    fn estimated_privacy_loss(scale: Ratio, threshold: Option<i64>, seed: u64) -> f64 {
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
                let mut set: Vec<TermId> = NoisyHistogram::draw_with(counts, S, scale, threshold, &mut rng).top(S).into_iter().map(|p| p.0).collect();
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
        // At every T (V = 6 would draw every entry by default; T = 1 and T = 6 force the lazy
        // path and, often, its fallback).
        let eps = 1.0;
        let correct = Ratio::int_over_f64(3, eps).unwrap();
        let under_noised = Ratio::int_over_f64(1, eps).unwrap();
        for (k, threshold) in THRESHOLDS.into_iter().enumerate() {
            let loss = estimated_privacy_loss(correct, threshold, 11 + 2 * k as u64);
            assert!(loss <= eps, "T {threshold:?}: estimated privacy loss {loss} exceeds ε = {eps}");
            let loss_bad = estimated_privacy_loss(under_noised, threshold, 12 + 2 * k as u64);
            assert!(loss_bad > eps, "T {threshold:?}: an under-noised mechanism went undetected (loss {loss_bad})");
            println!("T {threshold:?}: estimated privacy loss: correct {loss:.3}, under-noised {loss_bad:.3} (ε = {eps})");
        }
    }
}
