//! The exact sums built in parts and added up: how the app shares the DP-KDE build with its
//! helper workers (`worker::kde_share`), kept here as plain code so that it is tested natively.
//!
//! The documents are cut in contiguous parts. A part is sent to a helper, computed here, or
//! both (a helper that fails or is overdue), but its sums are added to the total exactly once:
//! a second reply for a part, a reply for a part given up on, or one from an earlier run (an
//! unknown sequence number) is ignored. Counting a part twice would give its documents twice
//! the weight the noise is scaled for (a privacy loss of 2ε for them), and missing one would
//! make the release differ from the single-worker build's.

use std::collections::HashMap;
use std::ops::Range;

use crate::dp::summary::params::SummaryParams;

/// Exact sums per class, member and feature (`super::exact_sums`).
pub type Sums = Vec<Vec<Vec<i64>>>;

/// A build's parts and what has been added of them.
pub struct SplitSums {
    ranges: Vec<Range<usize>>,
    added: Vec<bool>,
    /// Parts with a helper, by the request's sequence number.
    away: HashMap<u64, usize>,
    total: Sums,
}

impl SplitSums {
    /// `docs` documents cut in `parts` contiguous parts (at least one) of nearly equal size,
    /// for sums of `classes` classes and the members and features of `params`.
    pub fn new(docs: usize, parts: usize, classes: usize, params: &SummaryParams) -> SplitSums {
        let parts = parts.max(1);
        let size = docs.div_ceil(parts);
        let ranges: Vec<Range<usize>> = (0..parts).map(|p| (p * size).min(docs)..((p + 1) * size).min(docs)).collect();
        let total = vec![vec![vec![0; params.features]; params.ensemble().members()]; classes];
        SplitSums { added: vec![false; ranges.len()], ranges, away: HashMap::new(), total }
    }

    /// The parts' document ranges, in order.
    pub fn ranges(&self) -> &[Range<usize>] {
        &self.ranges
    }

    /// Part `p` was sent to a helper as request `seq`.
    pub fn sent(&mut self, p: usize, seq: u64) {
        if p < self.ranges.len() {
            self.away.insert(seq, p);
        }
    }

    /// Whether a helper still holds a part.
    pub fn waiting(&self) -> bool {
        !self.away.is_empty()
    }

    /// A helper's reply to request `seq`: its part's sums flattened (class, member, feature;
    /// exact integers in f64), or `None` if it failed. Whether they were added: a reply to no
    /// request still away, sums of the wrong length or not integers, or a part already added
    /// add nothing (the part is then computed by [`SplitSums::finish`] unless already added).
    pub fn reply(&mut self, seq: u64, flat: Option<&[f64]>) -> bool {
        let Some(p) = self.away.remove(&seq) else { return false };
        let width = self.total.iter().flatten().map(Vec::len).sum::<usize>();
        // Exact while |v| < 2^53 (documents × Q < 2^53: about 6·10⁹ documents).
        let exact = |v: &f64| v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15;
        match flat {
            Some(flat) if !self.added[p] && flat.len() == width && flat.iter().all(exact) => {
                self.total.iter_mut().flatten().flatten().zip(flat).for_each(|(t, &v)| *t += v as i64);
                self.added[p] = true;
                true
            }
            _ => false,
        }
    }

    /// Forgets every part a helper still holds (overdue): [`SplitSums::finish`] computes them,
    /// and a late reply is ignored.
    pub fn give_up(&mut self) {
        self.away.clear();
    }

    /// Adds part `p`'s sums computed here; whether they were added (not if already added or
    /// of the wrong shape).
    pub fn add(&mut self, p: usize, sums: Sums) -> bool {
        let same_shape = sums.len() == self.total.len() && sums.iter().zip(&self.total).all(|(s, t)| s.len() == t.len() && s.iter().zip(t).all(|(a, b)| a.len() == b.len()));
        if p >= self.ranges.len() || self.added[p] || !same_shape {
            return false;
        }
        self.total.iter_mut().flatten().zip(sums.iter().flatten()).for_each(|(t, s)| t.iter_mut().zip(s).for_each(|(t, s)| *t += s));
        self.added[p] = true;
        true
    }

    /// The total: every part not yet added is computed with `compute` (its document range)
    /// and added. Consumes the split, so no reply can be added after.
    pub fn finish<E>(mut self, mut compute: impl FnMut(Range<usize>) -> Result<Sums, E>) -> Result<Sums, E> {
        for p in 0..self.ranges.len() {
            if !self.added[p] {
                let sums = compute(self.ranges[p].clone())?;
                let added = self.add(p, sums);
                debug_assert!(added, "a part's sums of the wrong shape");
            }
        }
        Ok(self.total)
    }
}

#[cfg(test)]
mod tests {
    use crate::dp::summary::kde::tests::unit_vectors;
    use crate::dp::summary::{exact_sums, SummaryDoc, KeyphraseSampler};
    use super::*;
    use crate::embed::TermEmbeddings;
    use crate::input::public_vocab::TermId;

    #[test]
    fn parts_cover_every_document_once() {
        let params = SummaryParams { epsilon: 1.0, sampler: KeyphraseSampler::Independent, len: 2, features: 4, terms_per_doc: 2, bandwidth: 1.0, smoothing: 0.0 };
        for docs in [0usize, 1, 3, 4, 5, 4000, 4001, 9999] {
            for parts in 0..=6 {
                let split = SplitSums::new(docs, parts, 2, &params);
                let mut seen = vec![0u32; docs];
                split.ranges().iter().flat_map(Range::clone).for_each(|i| seen[i] += 1);
                assert!(seen.iter().all(|&n| n == 1), "{docs} documents in {parts} parts: {:?}", split.ranges());
                assert!(split.ranges().windows(2).all(|w| w[0].end == w[1].start), "contiguous");
            }
        }
    }

    #[test]
    fn every_part_is_added_exactly_once() {
        let dim = 8;
        let mut emb = TermEmbeddings::new(dim);
        for (i, v) in unit_vectors(30, dim, 2).iter().enumerate() {
            emb.insert(i as TermId, v).unwrap();
        }
        let lists: Vec<Vec<TermId>> = (0..101u32).map(|k| (0..(1 + k % 4)).map(|j| (k * 7 + j * 5) % 30).collect()).collect();
        let docs: Vec<SummaryDoc<'_>> = lists.iter().enumerate().map(|(i, t)| SummaryDoc { class: i % 3, terms: t }).collect();
        let params = SummaryParams { epsilon: 1.0, sampler: KeyphraseSampler::IterativeLog, len: 4, features: 16, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
        let sums = |r: Range<usize>| exact_sums(&docs[r], 3, &emb, &params, [7; 32]);
        // A helper's reply: its part as `worker::helpers::serve` computes it.
        let flat = |r: Range<usize>| crate::dp::summary::parts::compute_part(&docs[r], 3, &emb, &params, [7; 32]).unwrap();
        let all = sums(0..docs.len()).unwrap();

        // Six parts: 0 here; 1 a helper's reply, then the same reply again; 2 a helper that
        // fails; 3 a helper overdue whose reply comes after giving up; 4 computed here, then a
        // helper's reply for it; 5 never sent; and a reply to a request of an earlier run.
        let mut split = SplitSums::new(docs.len(), 6, 3, &params);
        let r: Vec<Range<usize>> = split.ranges().to_vec();
        for (p, seq) in [(1, 10), (2, 11), (3, 12), (4, 13)] {
            split.sent(p, seq);
        }
        assert!(split.add(0, sums(r[0].clone()).unwrap()));
        assert!(!split.add(0, sums(r[0].clone()).unwrap()), "part 0 twice");
        assert!(!split.reply(3, Some(&flat(r[1].clone()))), "a request of an earlier run");
        assert!(split.reply(10, Some(&flat(r[1].clone()))));
        assert!(split.add(4, sums(r[4].clone()).unwrap()));
        assert!(!split.reply(13, Some(&flat(r[4].clone()))), "a part already computed here");
        assert!(!split.reply(10, Some(&flat(r[1].clone()))), "the same reply twice");
        assert!(!split.reply(11, None), "a failed helper");
        assert!(split.waiting());
        split.give_up();
        assert!(!split.waiting());
        assert!(!split.reply(12, Some(&flat(r[3].clone()))), "a reply after giving up");
        let mut computed = Vec::new();
        let total = split
            .finish(|range| {
                computed.push(range.clone());
                sums(range)
            })
            .unwrap();
        assert_eq!(computed, vec![r[2].clone(), r[3].clone(), r[5].clone()]);
        assert_eq!(total, all, "the parts add up to the sums of all");

        // A reply of the wrong length, or not of integers, adds nothing: the part is computed.
        let mut split = SplitSums::new(docs.len(), 2, 3, &params);
        split.sent(1, 1);
        split.sent(0, 2);
        let part1 = flat(split.ranges()[1].clone());
        assert!(!split.reply(1, Some(&part1[1..])));
        let mut halves = flat(split.ranges()[0].clone());
        halves[0] += 0.5;
        assert!(!split.reply(2, Some(&halves)));
        let mut computed = 0;
        let total = split
            .finish(|range| {
                computed += 1;
                sums(range)
            })
            .unwrap();
        assert_eq!((computed, total), (2, all));
    }

    /// The CLI's build on threads gives the release the single-thread build gives for the same
    /// generator, bit for bit (the noise drawn once, after the parts are added).
    #[test]
    #[cfg(not(target_arch = "wasm32"))]
    fn the_threaded_build_is_the_same_release() {
        use crate::input::classes::ClassSet;
        use crate::dp::summary::{build, build_threaded, SummaryInputs, MIN_DOCS_IN_PARTS};
        use std::future::Future;
        use crate::dp::SecureRng;
        let dim = 8;
        let mut emb = TermEmbeddings::new(dim);
        for (i, v) in unit_vectors(30, dim, 3).iter().enumerate() {
            emb.insert(i as TermId, v).unwrap();
        }
        // Enough documents for the threaded path, and for 3 threads (one per 2,000 at most).
        let lists: Vec<Vec<TermId>> = (0..6_543u32).map(|k| (0..(1 + k % 5)).map(|j| (k * 11 + j * 7) % 30).collect()).collect();
        assert!(lists.len() >= MIN_DOCS_IN_PARTS.max(3 * 2_000));
        let docs: Vec<SummaryDoc<'_>> = lists.iter().enumerate().map(|(i, t)| SummaryDoc { class: i % 3, terms: t }).collect();
        let classes = ClassSet::declared(&["a", "b", "c"], crate::input::classes::OtherLabels::Drop).unwrap();
        let cands: Vec<TermId> = (0..30).collect();
        for sampler in [KeyphraseSampler::IterativeLinear, KeyphraseSampler::Independent, KeyphraseSampler::Histogram] {
            let params = SummaryParams { epsilon: 1.0, sampler, len: 4, features: 16, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
            let one = build(SummaryInputs::of(&docs, &classes, &emb, &cands, &params), &mut SecureRng::seeded_for_tests(5)).unwrap();
            for threads in [2, 3, 8] {
                let mut rng = SecureRng::seeded_for_tests(5);
                // The threads' build never waits: ready at the first poll.
                let built = std::pin::pin!(build_threaded(SummaryInputs::of(&docs, &classes, &emb, &cands, &params), &mut rng, threads));
                let std::task::Poll::Ready(many) = built.poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) else { panic!("the threaded build waited") };
                let many = many.unwrap();
                assert_eq!(serde_json::to_string(&many.0).unwrap(), serde_json::to_string(&one.0).unwrap(), "{sampler:?} on {threads} threads");
                assert_eq!(many.1, one.1);
            }
        }
    }
}
