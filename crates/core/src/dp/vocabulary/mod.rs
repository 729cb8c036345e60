//! The DP vocabulary (DP-KPS, appendix B.1): which public terms the private corpus uses most.
//!
//! 1. Each document contributes its S most used DISTINCT matched terms (ties: the one used
//!    first; the first S a run keeps of it, [`crate::input::public_vocab::Matcher::most_used`]).
//! 2. Histogram over the WHOLE public vocabulary: h[v] = number of documents that contribute v.
//! 3. Discrete Laplace noise of scale S/ε_voc on EVERY entry, zero counts included.
//! 4. Keep the N entries with the largest noisy counts.
//!
//! Privacy map. Neighbouring relation: add or remove one document. A document changes h by +1
//! (or -1) on at most S distinct entries and leaves the others alone, so the L1 sensitivity of
//! h is Δ₁ = S: the S are distinct by construction, and which S they are is a function of that
//! one document's text alone (its most used; its first used before f3b827b: neither rule reads
//! another document). The vocabulary is public and fixed before seeing the data, so the set of
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
//! With the curator's public class set ([`crate::input::classes`]), the same mechanism runs on each
//! class's histogram separately: h_c[v] = documents of class c that contribute v, noise of
//! scale S/ε_voc on every entry of every declared class's histogram. A document is in at most
//! one class and changes only that class's histogram, by at most S distinct entries: each
//! class's release is ε_voc-DP, and the classes compose in parallel (disjoint documents), so
//! the whole is ε_voc-DP. Documents the class set drops are counted nowhere. Ṽ is then read
//! from the noisy histograms only (post-processing): round robin over the classes, each
//! class's next best term by its own noisy count, skipping terms already taken, until N
//! terms; each term's shown count is the sum of its noisy counts over the classes.
//!
//! # Drawing the noise
//! Step 3 is drawn lazily over the huge public list (`vocabulary/noise.rs`): exactly the joint distribution
//! of drawing every entry (the argument is there), so the privacy map above holds as stated.
//! The per-class round robin reads the noisy histograms only (`vocabulary/round_robin.rs`).
//!
//! # N at least the list's size: the whole list, nothing released
//! When N ≥ |V| the top N is every public term whatever the noise, so the mechanism has nothing
//! to choose. [`select_from_documents`] then draws nothing: Ṽ is the list in its own order
//! ([`PrivateVocabulary::whole_list`]), with no noisy count and no spend. The argument: Ṽ is a
//! fixed function of (V, N), both public, and reads no document, so it is 0-DP, and everything
//! computed from it with the later releases is post-processing of those (the summaries are laid
//! out in Ṽ's order, which is now the list's). It rests on V being fixed independently of the
//! data, as every use of the public list does. The run's ε_voc is then neither planned, charged
//! nor claimed (`crate::run::RunSettings::whole_list`, from the list's public size); the run
//! builds this Ṽ itself whatever it is given (`crate::run::stages::vocabulary`). Readers of the
//! noisy counts refuse it (`evaluate --partition-selection`, `--candidates cleared`). The
//! medical list (27,589 terms) at the default N (50,000) is this case.
//!
//! # The clearing threshold
//! Every Ṽ also records τ ([`clearing_threshold`]), a public number that
//! `dp::candidates` compares with the terms' noisy counts (an evaluation-only rule). It is
//! computed here, from public inputs only, so that the vocabulary does not depend on the rule.

mod noise;
mod round_robin;

use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::noise::Ratio;
use super::{check_epsilon, DpError, SecureRng};
use crate::base::ParamError;
use crate::ledger::{Scope, Spend};
use crate::input::classes::ClassSet;
use crate::input::matched::MatchedCorpus;
use crate::input::public_vocab::{PublicVocabulary, TermId};
use noise::NoisyHistogram;
pub(crate) use round_robin::round_robin;
use round_robin::summed_round_robin;

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

    /// The N the release keeps from a list of `vocab_len` terms: N, or the whole list when N is
    /// larger (Ṽ is then every public term, in noisy-count order). Why a default may exceed a
    /// short list: N is chosen for the largest bundled list (docs/utility.md), where the N-th
    /// largest noisy count sets the bar a term must clear; a shorter list is kept whole.
    pub fn kept(&self, vocab_len: usize) -> usize {
        self.top_n.min(vocab_len)
    }

    /// Whether N is at least a list of `vocab_len` terms: Ṽ is then the whole list, released by
    /// no mechanism (module docs, "N at least the list's size").
    pub fn covers(&self, vocab_len: usize) -> bool {
        self.top_n >= vocab_len
    }

    /// These parameters with N clamped to a list of `vocab_len` terms ([`VocabParams::kept`]):
    /// what the release uses and records.
    pub fn for_list(&self, vocab_len: usize) -> VocabParams {
        VocabParams { top_n: self.kept(vocab_len), ..*self }
    }

    /// Checks the parameters (any N ≥ 1: one above the list's size keeps the whole list,
    /// [`VocabParams::kept`]).
    pub fn validate(&self) -> Result<(), ParamError> {
        check_epsilon("ε_voc", self.epsilon)?;
        if self.top_n == 0 {
            return Err(ParamError::new("N (vocabulary size)", self.top_n, "must be at least 1"));
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
    /// The noisy count (a DP output, safe to show); None in the whole list, where none is
    /// drawn (module docs, "N at least the list's size").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noisy_count: Option<i64>,
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
    /// In decreasing noisy count; the whole list in its own order ([`Self::whole_list`]).
    pub terms: Vec<SelectedTerm>,
    /// τ: the noisy count that at most N/10 zero-count entries, over all the noisy histograms,
    /// are expected to reach (a public function of |V|, the number of histograms, ε_voc, S and
    /// N; see [`super::candidates`]). None in Ṽs written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clearing_threshold: Option<i64>,
    /// Ṽ is the whole public list in its own order, drawn from nothing (module docs, "N at least
    /// the list's size"): public, no release, no ε_voc; no noisy count or threshold.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub whole_list: bool,
    /// The run that released it (its ε_voc is on record under that id) and its privacy unit:
    /// a later run given this Ṽ (`dpkps sequences`) must find exactly that run in its ledger,
    /// with the same unit. Set by the run (`crate::run::vocabulary`); None in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released_by: Option<ReleasedBy>,
}

/// Which run released a private vocabulary, and per what (`PrivateVocabulary::released_by`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleasedBy {
    pub run: String,
    /// The person column when the unit was the person; None: the document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person_column: Option<String>,
}

impl PrivateVocabulary {
    /// Ṽ from `histograms` noisy histograms over `vocab`.
    fn new(vocab: &PublicVocabulary, params: &VocabParams, terms: Vec<SelectedTerm>, histograms: usize) -> PrivateVocabulary {
        PrivateVocabulary {
            public_vocabulary: vocab.name.clone(),
            public_vocabulary_checksum: vocab.checksum.clone(),
            params: *params,
            terms,
            clearing_threshold: Some(clearing_threshold(vocab.len() * histograms, params)),
            whole_list: false,
            released_by: None,
        }
    }

    /// Ṽ when `params`' N is at least the list's size: every public term in the list's order,
    /// read from nothing private (module docs, "N at least the list's size").
    pub fn whole_list(vocab: &PublicVocabulary, params: &VocabParams) -> PrivateVocabulary {
        let terms = (0..vocab.len() as TermId)
            .map(|id| SelectedTerm { term: vocab.term(id).to_string(), id, noisy_count: None, best_noisy_count: None })
            .collect();
        PrivateVocabulary {
            public_vocabulary: vocab.name.clone(),
            public_vocabulary_checksum: vocab.checksum.clone(),
            params: params.for_list(vocab.len()),
            terms,
            clearing_threshold: None,
            whole_list: true,
            released_by: None,
        }
    }


    /// SHA-256 of what was released (the public list's checksum, the parameters, the terms and
    /// their noisy counts, the threshold), recorded in the release's spend: a Ṽ given to a later
    /// run (`dpkps sequences --private-vocab`) must be the one that run's ledger entry paid
    /// for, not a file edited after (its terms picked by hand, its `released_by` removed).
    pub fn released_digest(&self) -> String {
        let what = (&self.public_vocabulary, &self.public_vocabulary_checksum, &self.params, &self.terms, &self.clearing_threshold);
        let text = serde_json::to_string(&what).unwrap_or_default();
        crate::base::hex(&sha2::Sha256::digest(text.as_bytes()))
    }
}

/// 1/α: noise alone is expected to clear at most N/10 terms (`dp::candidates`, "Rule").
const NOISE_SHARE_INV: f64 = 10.0;

/// τ for `entries` noisy entries drawn with `params` (`dp::candidates`, "Rule"): the smallest
/// t ≥ 1 with m·q^t/(1+q) ≤ N/10, m = `entries` (|V| × the number of histograms), q =
/// e^(−ε_voc/S): of the zero-count entries, at most a tenth of N are expected to reach τ in the
/// whole release. Public inputs only. Floating point is fine: τ is a public number and any
/// value keeps the rule post-processing.
pub fn clearing_threshold(entries: usize, params: &VocabParams) -> i64 {
    noise_threshold(entries, params, params.top_n.max(1) as f64 / NOISE_SHARE_INV)
}

/// The smallest t ≥ 1 that at most `expected` of `entries` zero-count noisy entries are
/// expected to reach (m·q^t/(1+q) ≤ expected, q = e^(−ε_voc/S)). Public inputs only.
pub fn noise_threshold(entries: usize, params: &VocabParams, expected: f64) -> i64 {
    let q = (-params.epsilon / params.terms_per_doc as f64).exp();
    // m·q^t/(1+q) ≤ e ⇔ (m/e)·q^t/(1+q) ≤ 1.
    let m = entries.max(1) as f64 / expected.max(f64::MIN_POSITIVE);
    if !(q > 0.0 && q < 1.0) {
        return 1;
    }
    // m·q^t/(1+q) ≤ 1  ⇔  t ≥ ln(m/(1+q)) / ln(1/q) (1 when m/(1+q) ≤ 1).
    let t = ((m / (1.0 + q)).ln() / (1.0 / q).ln()).ceil();
    if t.is_finite() {
        t.clamp(1.0, i64::MAX as f64) as i64
    } else {
        1
    }
}

/// The mechanism: noisy histogram, top N. Returns Ṽ and what it spent.
pub fn select_vocabulary(
    hist: &TermHistogram,
    vocab: &PublicVocabulary,
    params: &VocabParams,
    rng: &mut SecureRng,
) -> Result<(PrivateVocabulary, Spend), DpError> {
    params.validate()?;
    let params = &params.for_list(vocab.len());
    if hist.counts.len() != vocab.len() || hist.terms_per_doc != params.terms_per_doc {
        return Err(DpError::Param(ParamError::new(
            "histogram",
            hist.counts.len(),
            "was built for a different vocabulary or S",
        )));
    }
    // Scale S/ε exactly (no rounding): Δ₁ = S under add/remove of one document (module docs).
    let scale = super::laplace::scale(params.terms_per_doc as u64, params.epsilon)?;
    let top = NoisyHistogram::draw(&hist.counts, params.top_n, scale, rng).top(params.top_n);
    let terms = top
        .into_iter()
        .map(|(id, noisy_count)| SelectedTerm { term: vocab.term(id).to_string(), id, noisy_count: Some(noisy_count), best_noisy_count: Some(noisy_count) })
        .collect();
    let pv = PrivateVocabulary::new(vocab, params, terms, 1);
    let spend = vocabulary_spend("discrete Laplace on the term histogram, top-N", params, scale, vocab, false)
        .param("released_sha256", pv.released_digest())
        .scope(Scope::AllDocuments);
    Ok((pv, spend))
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
    params.validate()?;
    let params = &params.for_list(vocab.len());
    if hists.is_empty() || hists.len() != class_names.len() || hists.iter().any(|h| h.counts.len() != vocab.len() || h.terms_per_doc != params.terms_per_doc) {
        return Err(DpError::Param(ParamError::new("class histograms", hists.len(), "do not match the classes, the vocabulary or S")));
    }
    let scale = super::laplace::scale(params.terms_per_doc as u64, params.epsilon)?;
    let n = params.top_n;
    let noisy: Vec<NoisyHistogram<'_>> = hists.iter().map(|h| NoisyHistogram::draw(&h.counts, n, scale, rng)).collect();
    let terms: Vec<SelectedTerm> = summed_round_robin(noisy, n, rng)
        .into_iter()
        .map(|(id, noisy_count, best)| SelectedTerm { term: vocab.term(id).to_string(), id, noisy_count: Some(noisy_count), best_noisy_count: Some(best) })
        .collect();
    let pv = PrivateVocabulary::new(vocab, params, terms, hists.len());
    let digest = pv.released_digest();
    let spends = class_names
        .iter()
        .map(|name| {
            vocabulary_spend("discrete Laplace on each class's term histogram, round-robin top-N", params, scale, vocab, true)
                .param("released_sha256", digest.as_str())
                .scope(Scope::Partition { label: name.to_string() })
        })
        .collect();
    Ok((pv, spends))
}

/// The ledger entry of a vocabulary release (`dp::laplace`'s builder; the scope is the caller's).
fn vocabulary_spend(mechanism: &str, params: &VocabParams, scale: Ratio, vocab: &PublicVocabulary, per_class: bool) -> super::laplace::SpendBuilder {
    let b = super::laplace::spend(crate::ledger::SpendStage::Vocabulary, mechanism, params.epsilon)
        .param("terms_per_doc_S", params.terms_per_doc)
        .param("top_n", params.top_n);
    let b = if per_class { b.param("per_class", true) } else { b };
    b.param("l1_sensitivity", params.terms_per_doc)
        .param("noise_scale", scale.to_f64())
        .param("public_vocabulary", vocab.name.as_str())
        .param("public_vocabulary_terms", vocab.len())
}

/// Stage 2 on documents given as (class, first terms): one histogram over all of them, or
/// one per class of the public class set when `params.per_class` (`class_names` in its order;
/// a document with class `None`, one the class set drops, is then counted nowhere). Returns Ṽ
/// and its spends (one, or one per class); with N at least the list's size, the whole list and
/// no spend, the documents unread (module docs, "N at least the list's size").
pub fn select_from_documents<'a>(
    docs: impl Iterator<Item = (Option<usize>, &'a [TermId])>,
    class_names: &[&str],
    vocab: &PublicVocabulary,
    params: &VocabParams,
    rng: &mut SecureRng,
) -> Result<(PrivateVocabulary, Vec<Spend>), DpError> {
    params.validate()?;
    if params.covers(vocab.len()) {
        return Ok((PrivateVocabulary::whole_list(vocab, params), Vec::new()));
    }
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

/// The vocabulary mechanism's reading of a matched corpus (an inherent impl here, beside the
/// mechanism, so that the matched corpus does not import the DP layer).
impl MatchedCorpus {
    /// The vocabulary histogram h (each document's first S kept terms: its S most used).
    pub fn histogram(&self, vocab_len: usize, terms_per_doc: usize) -> TermHistogram {
        let mut h = TermHistogram::new(vocab_len, terms_per_doc);
        for d in &self.docs {
            h.add_document(&d.terms[..d.terms.len().min(terms_per_doc)]);
        }
        h
    }

    /// Stage 2: the DP vocabulary (ε_voc-DP): over the whole corpus, or per class of the public
    /// class set when `params.per_class` (then documents the class set drops count nowhere).
    pub fn dp_vocabulary(
        &self,
        vocab: &PublicVocabulary,
        params: &VocabParams,
        classes: &ClassSet,
        rng: &mut SecureRng,
    ) -> Result<(PrivateVocabulary, Vec<Spend>), DpError> {
        params.validate()?;
        if params.terms_per_doc > self.keep {
            return Err(DpError::Param(ParamError::new(
                "S (terms per document)",
                params.terms_per_doc,
                "is larger than the number of terms kept per document while matching",
            )));
        }
        let docs = self.docs.iter().map(|d| (classes.assign(d.label.as_deref()), d.terms.as_slice()));
        select_from_documents(docs, &classes.names(), vocab, params, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::noise::{noisy_top_n, tests::THRESHOLDS};

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
        assert!(ok.validate().is_ok());
        for bad in [
            VocabParams { epsilon: 0.0, ..ok },
            VocabParams { epsilon: -1.0, ..ok },
            VocabParams { epsilon: f64::NAN, ..ok },
            VocabParams { epsilon: f64::INFINITY, ..ok },
            VocabParams { top_n: 0, ..ok },
            VocabParams { terms_per_doc: 0, ..ok },
        ] {
            assert!(bad.validate().is_err(), "{bad:?} accepted");
        }
        let msg = VocabParams { epsilon: f64::NAN, ..ok }.validate().unwrap_err().to_string();
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
        assert!(pv.terms.windows(2).all(|w| w[0].noisy_count >= w[1].noisy_count && w[1].noisy_count.is_some()));
    }

    #[test]
    fn an_n_above_the_list_keeps_the_whole_list_in_both_scopes() {
        let v = vocab(40);
        let mut h = TermHistogram::new(v.len(), 2);
        (0..20).for_each(|_| h.add_document(&[3, 4]));
        let mut rng = SecureRng::seeded_for_tests(9);
        let params = VocabParams { epsilon: 1.0, top_n: 50_000, terms_per_doc: 2, per_class: false };
        assert!(params.validate().is_ok());
        assert_eq!((params.kept(40), params.kept(60_000)), (40, 50_000));
        let (pv, spend) = select_vocabulary(&h, &v, &params, &mut rng).unwrap();
        let mut ids: Vec<TermId> = pv.terms.iter().map(|t| t.id).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..40).collect::<Vec<TermId>>(), "every public term, once");
        assert_eq!(spend.params["top_n"], 40, "the release records the N it kept");
        assert_eq!(pv.params.top_n, 40);
        let per_class = VocabParams { per_class: true, ..params };
        let (pv, _) = select_vocabulary_by_class(&[h.clone(), h], &["a", "b"], &v, &per_class, &mut rng).unwrap();
        assert_eq!(pv.terms.len(), 40);
    }

    #[test]
    fn with_n_at_least_the_list_the_documents_are_not_read_and_nothing_is_spent() {
        let v = vocab(40);
        let mut rng = SecureRng::seeded_for_tests(9);
        for per_class in [false, true] {
            for n in [40, 50_000] {
                let params = VocabParams { epsilon: 1.0, top_n: n, terms_per_doc: 2, per_class };
                // An iterator that fails the test if the documents are read at all.
                let docs = std::iter::from_fn(|| -> Option<(Option<usize>, &[TermId])> { panic!("the documents were read") });
                let (pv, spends) = select_from_documents(docs, &["a", "b"], &v, &params, &mut rng).unwrap();
                assert!(spends.is_empty(), "nothing released, nothing spent");
                assert_eq!(pv, PrivateVocabulary::whole_list(&v, &params), "the list in its order");
                assert!(pv.whole_list && pv.terms.len() == 40 && pv.params.top_n == 40 && pv.clearing_threshold.is_none());
                assert!(pv.terms.iter().enumerate().all(|(i, t)| t.id as usize == i && t.noisy_count.is_none()));
            }
        }
        // One term short of the list: drawn and paid for as before.
        let params = VocabParams { epsilon: 1.0, top_n: 39, terms_per_doc: 2, per_class: false };
        let docs = vec![(None, &[3 as TermId, 4][..])];
        let (pv, spends) = select_from_documents(docs.into_iter(), &[], &v, &params, &mut rng).unwrap();
        assert_eq!((pv.terms.len(), spends.len(), pv.whole_list), (39, 1, false));
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
