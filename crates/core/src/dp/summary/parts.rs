//! DP summaries whose exact sums are built in parts: the one stage that grows with the number
//! of documents (60,000 notes, L = 10 prefixes each, I = 2048 features).
//!
//! The exact sums are integers ([`super::exact_sums`]): the sums of a split of the documents
//! add up to those of all of them, bit for bit, whoever computes each part. So
//! [`build_in_parts`] draws the seed, cuts the documents in contiguous parts
//! ([`SplitSums`]), lets a [`PartRunner`] compute what it can of them (threads natively:
//! [`build_threaded`]; the app's helper workers: `worker::helpers::kde_share`), computes the
//! rest here, and draws the noise once, after the addition, as [`super::build`] draws it: the
//! same release for the same random stream. The noise and the total never leave this code.
//!
//! Which builds are split is decided here alone: a family whose sums split
//! ([`super::Family::splits`]), at least [`MIN_DOCS_IN_PARTS`] documents, and a runner that can
//! take at least one part besides this one.
//!
//! The raw sums (`super::exact_sums`) and the builder that adds the noise to a total
//! (`super::build_from_sums`) are private to `dp::summary`: outside it, a part is computed with
//! [`PartWork::sums`] (a [`PartRunner`]) or [`compute_part`] (a helper worker, sent its part),
//! and only [`build_in_parts`] turns a total into a release.

use std::ops::Range;

use super::kde::split::{SplitSums, Sums};
use super::{build, build_from_sums, draw_seed, exact_sums, DpSummary, SummaryDoc, SummaryError, SummaryInputs, SummaryParams};
use crate::dp::SecureRng;
use crate::embed::TermEmbeddings;
use crate::ledger::Spend;

/// Fewer documents are summarised in one part: a thread's or a helper's start, its own random
/// features and the copies of its part cost more than they save.
pub const MIN_DOCS_IN_PARTS: usize = 4_000;

/// One part's work: the inputs and the features' seed; [`PartWork::sums`] computes a range of
/// the documents' exact sums.
#[derive(Clone, Copy)]
pub struct PartWork<'a> {
    pub inputs: SummaryInputs<'a>,
    pub seed: [u8; 32],
}

impl PartWork<'_> {
    /// The exact sums of the documents in `range` (private: only ever added to the total).
    pub fn sums(&self, range: Range<usize>) -> Result<Sums, SummaryError> {
        let i = self.inputs;
        exact_sums(&i.docs[range], i.classes.len(), i.emb, i.params, self.seed)
    }
}

/// A helper worker's part of a split build (`worker::helpers::serve`, sent the part by
/// `worker::helpers::kde_share`): the exact sums of `docs` (of `classes` classes) for the
/// features of `seed`, flattened (class, member, feature; exact integers in f64) as
/// [`SplitSums::reply`] adds them. No noise: the worker that asked draws it, once, over all
/// the parts ([`build_in_parts`]).
pub fn compute_part(docs: &[SummaryDoc<'_>], classes: usize, emb: &TermEmbeddings, params: &SummaryParams, seed: [u8; 32]) -> Result<Vec<f64>, SummaryError> {
    let sums = exact_sums(docs, classes, emb, params, seed)?;
    Ok(sums.iter().flatten().flatten().map(|&v| v as f64).collect())
}

/// Where the parts of a split build are computed.
#[allow(async_fn_in_trait)] // run on one thread (the CLI's host, the worker): no Send bound wanted
pub trait PartRunner {
    type Error;
    /// A [`SummaryError`] in this runner's error.
    fn error(e: SummaryError) -> Self::Error;
    /// How many parts of `docs` documents it can compute at once, counting the one computed
    /// on this thread (below 2: none, the build is not split).
    fn parts(&mut self, docs: usize) -> usize;
    /// Computes what it can of `split`'s parts and adds them ([`SplitSums::add`],
    /// [`SplitSums::reply`]); the parts it leaves out are computed here afterwards.
    async fn run(&mut self, work: PartWork<'_>, split: &mut SplitSums) -> Result<(), Self::Error>;
}

/// [`build`], with the exact sums built in parts by `runner` when it is worth it (module docs).
pub async fn build_in_parts<R: PartRunner>(inputs: SummaryInputs<'_>, rng: &mut SecureRng, runner: &mut R) -> Result<(DpSummary, Vec<Spend>), R::Error> {
    let eligible = inputs.params.sampler.family().splits() && inputs.docs.len() >= MIN_DOCS_IN_PARTS;
    let parts = if eligible { runner.parts(inputs.docs.len()) } else { 1 };
    if parts < 2 {
        return build(inputs, rng).map_err(R::error);
    }
    let seed = draw_seed(rng);
    let work = PartWork { inputs, seed };
    let mut split = SplitSums::new(inputs.docs.len(), parts, inputs.classes.len(), inputs.params);
    runner.run(work, &mut split).await?;
    let total = split.finish(|range| work.sums(range)).map_err(R::error)?;
    build_from_sums(inputs, seed, total, rng).map_err(R::error)
}

/// The split build for tests, whatever the number of documents: the exact sums of
/// `inputs.docs` for the features of `seed`, computed here in `parts` parts and added up, then
/// the noise from `rng`, as [`build_in_parts`] draws it after its `draw_seed(rng)`. For tests
/// only, like `SecureRng::seeded_for_tests` (the feature `seeded-rng-for-tests`).
#[cfg(any(test, feature = "seeded-rng-for-tests"))]
#[doc(hidden)]
pub fn build_split_for_tests(inputs: SummaryInputs<'_>, seed: [u8; 32], parts: usize, rng: &mut SecureRng) -> Result<(DpSummary, Vec<Spend>), SummaryError> {
    let work = PartWork { inputs, seed };
    let total = SplitSums::new(inputs.docs.len(), parts, inputs.classes.len(), inputs.params).finish(|range| work.sums(range))?;
    build_from_sums(inputs, seed, total, rng)
}

/// Parts on native threads: every part on its own thread. Each holds its own random features
/// and row caches (tens of MB), so at most one thread per 2,000 documents and 16 in all.
#[cfg(not(target_arch = "wasm32"))]
struct Threads(usize);

#[cfg(not(target_arch = "wasm32"))]
impl PartRunner for Threads {
    type Error = SummaryError;

    fn error(e: SummaryError) -> SummaryError {
        e
    }

    fn parts(&mut self, docs: usize) -> usize {
        self.0.min(docs / 2_000).min(16)
    }

    async fn run(&mut self, work: PartWork<'_>, split: &mut SplitSums) -> Result<(), SummaryError> {
        let parts: Vec<_> = std::thread::scope(|s| {
            let running: Vec<_> = split.ranges().iter().map(|r| s.spawn(move || work.sums(r.clone()))).collect();
            running.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
        });
        for (p, sums) in parts.into_iter().enumerate() {
            if !split.add(p, sums?) {
                return Err(SummaryError::BadArtefact("sums"));
            }
        }
        Ok(())
    }
}

/// [`build`] with the exact sums computed on `threads` threads at once, for a native host (the
/// page shares them with helper workers instead: `worker::helpers::kde_share`): the same
/// release for the same `rng` (`build_in_parts`). The computation never waits, so the future
/// is ready when first polled; the CLI's host awaits it.
#[cfg(not(target_arch = "wasm32"))]
pub async fn build_threaded(inputs: SummaryInputs<'_>, rng: &mut SecureRng, threads: usize) -> Result<(DpSummary, Vec<Spend>), SummaryError> {
    build_in_parts(inputs, rng, &mut Threads(threads)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dp::summary::KeyphraseSampler;
    use crate::input::classes::{ClassSet, OtherLabels};
    use crate::input::public_vocab::TermId;

    /// The page's runner without the browser: parts sent to "helpers" that reply with
    /// [`compute_part`]'s flat sums, one helper failing, then giving up on the rest, so that
    /// [`build_in_parts`] computes the failed part itself.
    struct FakeHelpers {
        parts: usize,
        accepted: usize,
    }

    impl PartRunner for FakeHelpers {
        type Error = SummaryError;

        fn error(e: SummaryError) -> SummaryError {
            e
        }

        fn parts(&mut self, _docs: usize) -> usize {
            self.parts
        }

        async fn run(&mut self, work: PartWork<'_>, split: &mut SplitSums) -> Result<(), SummaryError> {
            let i = work.inputs;
            for p in 1..self.parts {
                split.sent(p, p as u64);
            }
            for p in 1..self.parts {
                let reply = if p == 2 {
                    None
                } else {
                    let r = split.ranges()[p].clone();
                    Some(compute_part(&i.docs[r], i.classes.len(), i.emb, i.params, work.seed)?)
                };
                self.accepted += usize::from(split.reply(p as u64, reply.as_deref()));
            }
            split.give_up();
            Ok(())
        }
    }

    /// Helpers' replies, a failed helper and the parts computed here give the release the
    /// one-part build gives for the same generator, bit for bit.
    #[test]
    fn a_build_shared_with_helpers_is_the_same_release() {
        use std::future::Future;
        let dim = 8;
        let mut emb = TermEmbeddings::new(dim);
        for t in 0..30u32 {
            let v: Vec<f32> = (0..dim).map(|j| ((t as usize * 7 + j * 3) % 11) as f32 - 5.0).collect();
            emb.insert(t, &v).unwrap();
        }
        let lists: Vec<Vec<TermId>> = (0..MIN_DOCS_IN_PARTS as u32 + 321).map(|k| (0..(1 + k % 5)).map(|j| (k * 11 + j * 7) % 30).collect()).collect();
        let docs: Vec<SummaryDoc<'_>> = lists.iter().enumerate().map(|(i, t)| SummaryDoc { class: i % 3, terms: t }).collect();
        let classes = ClassSet::declared(&["a", "b", "c"], OtherLabels::Drop).unwrap();
        let cands: Vec<TermId> = (0..30).collect();
        for sampler in [KeyphraseSampler::IterativeLinear, KeyphraseSampler::Independent] {
            let params = SummaryParams { epsilon: 1.0, sampler, len: 4, features: 16, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
            let inputs = SummaryInputs { docs: &docs, classes: &classes, emb: &emb, candidates: &cands, params: &params };
            let one = build(inputs, &mut SecureRng::seeded_for_tests(9)).unwrap();
            let mut helpers = FakeHelpers { parts: 4, accepted: 0 };
            let mut rng = SecureRng::seeded_for_tests(9);
            let shared = {
                let built = std::pin::pin!(build_in_parts(inputs, &mut rng, &mut helpers));
                let std::task::Poll::Ready(shared) = built.poll(&mut std::task::Context::from_waker(std::task::Waker::noop())) else { panic!("the fake helpers waited") };
                shared.unwrap()
            };
            assert_eq!(helpers.accepted, 2, "{sampler:?}: the two helpers' replies were added");
            assert_eq!(serde_json::to_string(&shared.0).unwrap(), serde_json::to_string(&one.0).unwrap(), "{sampler:?}");
            assert_eq!(shared.1, one.1);
        }
    }
}
