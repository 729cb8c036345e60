//! Overlap between a corpus and the earlier corpora of the budget accounts, estimated from
//! small keyed sketches, so that a curator who re-runs on a slightly changed extract (a few rows
//! added or removed: a new ledger key) is warned that the two budgets are really one.
//!
//! # What is stored, and what it reveals
//!
//! Per corpus recorded under an account, a bottom-k sketch: the [`SKETCH_K`] = 64 smallest
//! values of `v(d) = first 64 bits of SHA-256("dpkps overlap v1" ‖ K ‖ SHA-256(d))` over its
//! documents `d`, where `K` is derived from this machine's local secret (`crate::ledger::local_key`: a
//! non-extractable WebCrypto key in the page, a 0600 key file for the CLI) and is never stored.
//! Nothing else about the documents is stored, but the sketch carries a count derived from
//! private data: the number of distinct documents (exact below 64, about ±12% above, from the
//! sketch's largest value).
//!
//! - Without `K`, a sketch is 64 pseudorandom numbers: it says nothing about any text. A ledger
//!   or an export (which holds sketches only when asked, `LedgerBook::for_export`) is no
//!   membership oracle to whoever lacks the secret.
//! - With `K` (on this machine: the page's worker, or whoever can read the CLI's key file),
//!   a candidate document can be tested: compute `v(candidate)` and look it up. That confirms
//!   membership of a document that is one of the at most 64 in the sketch: EVERY document of a
//!   corpus of fewer than 64, and for n > 64 a given one with probability 64/n. Candidates can
//!   be enumerated (SHA-256 is fast), so a short or templated document can be found by trying
//!   the possibilities; and two extracts' sketches show which keyed values were added or
//!   removed between them, exactly the neighbouring event DP protects.
//! - Ledgers of older versions stored a random `K` beside the sketches (`AccountCorpus::key`);
//!   those sketches are still compared under it, and still reveal the above to any holder.
//!   An export without sketches drops them and their keys.
//!
//! A corpus read with a person column has a second sketch of the same kind over its distinct
//! person ids (`corpus::person_hash` in place of the document hash): two extracts holding new
//! notes of the same patients share no document but overlap there, and the larger of the two
//! estimates counts. With `K` it confirms a person id as the document sketch confirms a
//! document, and ids are easier to enumerate than texts (a medical record number has few
//! digits): the same reason the ledger and its secret stay on the machine.
//!
//! So the ledger stays on the machine of the corpus, and the secret never leaves it; DP covers
//! only the releases. The check protects the far likelier failure: spending the budget twice on
//! nearly the same data. The sketch is never part of a release, report or prompt. A design that
//! stored only a noisy statistic could not be compared with a LATER corpus; per-bucket b-bit
//! sketches would blur a confirmation only to a likelihood ratio of 2^b, at the price of a much
//! noisier estimate.
//!
//! # The estimate
//!
//! For sketches S(A), S(B) under the same key, U = the k smallest of S(A) ∪ S(B) is the bottom-k
//! sketch of A ∪ B, and a value of U is in A (in B) exactly when it is in S(A) (S(B)); so
//! J = |U ∩ S(A) ∩ S(B)| / |U| estimates the Jaccard index. Sizes: a sketch with fewer than k
//! values holds the whole set; otherwise |A| ≈ (k − 1) / (max S(A) / 2⁶⁴). The overlap is
//! |A ∩ B| / min(|A|, |B|) with |A ∩ B| = J (|A| + |B|) / (1 + J): a corpus that is mostly a
//! subset or a superset of an earlier one scores near 1. Exact when both corpora have fewer
//! than k documents.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Values kept per sketch.
pub const SKETCH_K: usize = 64;

/// Overlap at or above which the page warns before a run.
pub const WARN_OVERLAP: f64 = 0.2;

/// The k smallest keyed document values of one corpus, ascending, distinct.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sketch {
    pub values: Vec<u64>,
}

/// `v(d)` of the module docs, from the document's hash (`corpus::doc_hash`).
pub fn keyed(key: &[u8; 32], doc_hash: &[u8; 32]) -> u64 {
    let mut h = Sha256::new();
    h.update(b"dpkps overlap v1\0");
    h.update(key);
    h.update(doc_hash);
    let d = h.finalize();
    u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

impl Sketch {
    pub fn of(key: &[u8; 32], doc_hashes: &[[u8; 32]]) -> Sketch {
        // A max-heap of the k smallest, so memory stays O(k) whatever the corpus size.
        let mut heap = std::collections::BinaryHeap::with_capacity(SKETCH_K + 1);
        let mut seen = std::collections::HashSet::with_capacity(SKETCH_K + 1);
        for d in doc_hashes {
            let v = keyed(key, d);
            if heap.len() == SKETCH_K && heap.peek().is_some_and(|&top| v >= top) {
                continue;
            }
            if !seen.insert(v) {
                continue;
            }
            heap.push(v);
            if heap.len() > SKETCH_K {
                if let Some(top) = heap.pop() {
                    seen.remove(&top);
                }
            }
        }
        let mut values = heap.into_vec();
        values.sort_unstable();
        Sketch { values }
    }

    /// The larger of two corpora's overlaps by documents and, where both have one, by persons:
    /// `(documents, persons)` sketches of each, under the same key.
    pub fn larger_overlap(a: (&Sketch, &Sketch), b: (&Sketch, &Sketch)) -> f64 {
        let by_persons = if a.1.is_empty() || b.1.is_empty() { 0.0 } else { a.1.overlap(b.1) };
        a.0.overlap(b.0).max(by_persons)
    }

    /// No values: nothing was sketched (no person column), or the export dropped it.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether the sketch holds every (distinct) document of its corpus.
    fn complete(&self) -> bool {
        self.values.len() < SKETCH_K
    }

    /// Estimated number of distinct documents.
    pub fn size(&self) -> f64 {
        match self.values.last() {
            _ if self.complete() => self.values.len() as f64,
            Some(&max) => (SKETCH_K as f64 - 1.0) / ((max as f64 + 1.0) / 2f64.powi(64)),
            None => 0.0,
        }
    }

    /// Estimated |A ∩ B| / min(|A|, |B|), in [0, 1] (module docs).
    pub fn overlap(&self, other: &Sketch) -> f64 {
        let (a, b) = (&self.values, &other.values);
        if a.is_empty() || b.is_empty() {
            return 0.0;
        }
        // Merge the two sorted lists: the k smallest of the union, counting those in both.
        let (mut i, mut j, mut taken, mut both) = (0, 0, 0usize, 0usize);
        while taken < SKETCH_K && (i < a.len() || j < b.len()) {
            match (a.get(i), b.get(j)) {
                (Some(x), Some(y)) if x == y => {
                    both += 1;
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(y)) if x < y => i += 1,
                (Some(_), None) => i += 1,
                _ => j += 1,
            }
            taken += 1;
        }
        let jac = both as f64 / taken as f64;
        let (na, nb) = (self.size(), other.size());
        let inter = jac * (na + nb) / (1.0 + jac);
        (inter / na.min(nb)).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::corpus::doc_hash;

    fn docs(range: std::ops::Range<usize>) -> Vec<[u8; 32]> {
        range.map(|i| doc_hash(&format!("document number {i}"))).collect()
    }

    #[test]
    fn small_corpora_are_compared_exactly() {
        let key = [7u8; 32];
        let a = Sketch::of(&key, &docs(0..40));
        let b = Sketch::of(&key, &docs(30..50));
        assert_eq!(a.size(), 40.0);
        // 10 shared of the smaller's 20.
        assert!((a.overlap(&b) - 0.5).abs() < 1e-9, "{}", a.overlap(&b));
        assert_eq!(a.overlap(&Sketch::of(&key, &docs(100..120))), 0.0);
        // Reordered and duplicated documents: the same set.
        let mut rev = docs(0..40);
        rev.reverse();
        rev.push(doc_hash("document number 3"));
        assert_eq!(Sketch::of(&key, &rev), a);
    }

    #[test]
    fn large_corpora_are_estimated() {
        let key = [42u8; 32];
        let a = Sketch::of(&key, &docs(0..5000));
        assert_eq!(a.values.len(), SKETCH_K);
        let size = a.size();
        assert!((3500.0..7000.0).contains(&size), "size {size}");
        // Half of b is in a.
        let half = a.overlap(&Sketch::of(&key, &docs(2500..7500)));
        assert!((0.3..0.7).contains(&half), "half {half}");
        // A subset (one file of two) overlaps fully; a disjoint corpus not at all.
        let subset = a.overlap(&Sketch::of(&key, &docs(1000..3000)));
        assert!(subset > 0.75, "subset {subset}");
        let disjoint = a.overlap(&Sketch::of(&key, &docs(10_000..15_000)));
        assert!(disjoint < WARN_OVERLAP, "disjoint {disjoint}");
        // Another key: the values share nothing, so nothing can be compared across accounts.
        assert_eq!(a.overlap(&Sketch::of(&[43u8; 32], &docs(0..5000))), 0.0);
    }
}
