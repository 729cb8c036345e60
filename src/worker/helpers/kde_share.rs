//! The DP-KDE build shared with helper workers: the one stage that grows with the number of
//! documents (60,000 notes, L = 10 prefixes each, I = 2048 features).
//!
//! The exact sums are integers (`kde::exact_sums`): the sums of a split of the documents add up
//! to those of all of them, bit for bit, whoever computes each part. So the documents are cut in
//! contiguous parts, one per idle helper plus one here; each helper gets its part's term lists
//! and the embeddings of those terms, this worker computes its own part meanwhile, and the
//! parts are added before the noise is drawn here (`kde::build_from_sums`). The release is the
//! one the single-worker build gives, for the same seed; the noise never leaves this worker. A
//! part whose helper fails, or holds it far longer than this worker took for its own, is
//! computed here instead.
//!
//! The helpers are bare (`Pool::start_bare`): no model, so about the memory of one share each.
//! The request's layout is [`super::wire::sums_request`]; a helper computes its part in
//! [`super::serve`]. Privacy: like the embedding batches (see [`super`]), the shares are
//! private and stay inside the page; the helpers store nothing, fetch nothing, and post only to
//! this worker.

use super::pool::Pool;
use super::wire::sums_request;
use crate::worker::control::{at, now_ms, sleep, Stop, CANCEL};
use crate::classes::ClassSet;
use crate::dp::SecureRng;
use crate::embed::TermEmbeddings;
use crate::dp::summary::kde::split::SplitSums;
use crate::dp::summary::{self as kde, DpSummary, SummaryDoc, SummaryParams};
use crate::ledger::Spend;
use crate::protocol::Stage;
use crate::public_vocab::TermId;

/// How the sums were shared (the stage's note says it: a part a helper did not return is
/// computed here, and costs time).
#[derive(Debug, Default, Clone, Copy)]
pub struct Shared {
    pub parts: usize,
    pub by_helpers: usize,
}

/// Fewer documents are built here alone (a helper's start and the copies cost more).
const MIN_DOCS: usize = 4_000;

/// `kde::build`, with the sums shared with the idle helpers of `pool` when it is worth it.
#[allow(clippy::too_many_arguments)]
pub async fn build(
    docs: &[SummaryDoc<'_>],
    classes: &ClassSet,
    emb: &TermEmbeddings,
    candidates: &[TermId],
    params: &SummaryParams,
    pool: Option<&mut Pool>,
    rng: &mut SecureRng,
    shared: &mut Shared,
) -> Result<(DpSummary, Vec<Spend>), Stop> {
    let pool = pool.and_then(|p| {
        p.poll(); // helpers that have started since are idle now
        (p.idle() > 0 && params.sampler.hist_kind().is_none() && docs.len() >= MIN_DOCS).then_some(p)
    });
    let Some(pool) = pool else {
        return kde::build(docs, classes, emb, candidates, params, rng).map_err(at(Stage::Kde));
    };
    let seed = kde::draw_seed(rng);
    // The split's bookkeeping (each part added exactly once) is `kde::split`, tested natively.
    let mut split = SplitSums::new(docs.len(), pool.idle() + 1, classes.len(), params);
    shared.parts = split.ranges().len();
    // Parts 1.. to the helpers; part 0 here. A part not sent is computed by `finish`.
    for (p, range) in split.ranges().to_vec().into_iter().enumerate().skip(1) {
        if let Some(seq) = sums_request(&docs[range], classes.len(), emb, params, seed).ok().and_then(|msg| pool.send_request(&msg)) {
            split.sent(p, seq);
        }
    }
    let t0 = now_ms();
    let here = kde::exact_sums(&docs[split.ranges()[0].clone()], classes.len(), emb, params, seed).map_err(at(Stage::Kde))?;
    split.add(0, here);
    let here_ms = now_ms() - t0;
    let waited = now_ms();
    while split.waiting() {
        for r in pool.poll() {
            if split.reply(r.seq, r.result.is_ok().then_some(r.sums.as_slice())) {
                shared.by_helpers += 1;
            }
        }
        if CANCEL.get() {
            return Err(Stop::Cancelled);
        }
        // A helper that hangs must not hang the run: its part is computed here.
        if split.waiting() && now_ms() - waited > 5_000.0 + 2.0 * here_ms {
            split.give_up();
            break;
        }
        sleep(2).await;
    }
    let total = split.finish(|range| kde::exact_sums(&docs[range], classes.len(), emb, params, seed)).map_err(at(Stage::Kde))?;
    kde::build_from_sums(docs, classes, emb, candidates, params, seed, total, rng).map_err(at(Stage::Kde))
}
