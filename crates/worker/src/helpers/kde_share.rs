//! The DP-KDE build shared with helper workers: the one stage that grows with the number of
//! documents (60,000 notes, L = 10 prefixes each, I = 2048 features).
//!
//! The split, its eligibility and the noise are `summary::parts::build_in_parts`'s (the exact
//! sums of parts add up to those of all the documents, bit for bit): this runner gives one
//! part to each idle helper and computes part 0 here meanwhile; each helper gets its part's
//! term lists and the embeddings of those terms. The release is the one the single-worker build
//! gives, for the same seed; the noise never leaves this worker. A part whose helper fails, or
//! holds it far longer than this worker took for its own, is computed here instead.
//!
//! The helpers are bare (`Pool::start_bare`): no model, so about the memory of one share each.
//! The request's layout is [`super::wire::sums_request`]; a helper computes its part in
//! [`super::serve`]. Privacy: like the embedding batches (see [`super`]), the shares are
//! private and stay inside the page; the helpers store nothing, fetch nothing, and post only to
//! this worker.

use super::pool::Pool;
use super::wire::sums_request;
use dpkps_core::dp::summary::kde::split::SplitSums;
use dpkps_core::dp::summary::parts::{build_in_parts, PartRunner, PartWork};
use dpkps_core::dp::summary::{DpSummary, SummaryError, SummaryInputs};
use dpkps_core::dp::SecureRng;
use dpkps_core::ledger::Spend;
use dpkps_core::protocol::Stage;
use crate::control::{at, now_ms, sleep, Stop, CANCEL};

/// How the sums were shared (the stage's note says it: a part a helper did not return is
/// computed here, and costs time).
#[derive(Debug, Default, Clone, Copy)]
pub struct Shared {
    pub parts: usize,
    pub by_helpers: usize,
}

/// `summary::build`, with the sums shared with the idle helpers of `pool` when it is worth it
/// (`summary::parts` decides when).
pub async fn build(inputs: SummaryInputs<'_>, pool: Option<&mut Pool>, rng: &mut SecureRng, shared: &mut Shared) -> Result<(DpSummary, Vec<Spend>), Stop> {
    build_in_parts(inputs, rng, &mut Helpers { pool, shared }).await
}

/// The parts' runner: part 0 here, one part per idle helper.
struct Helpers<'p> {
    pool: Option<&'p mut Pool>,
    shared: &'p mut Shared,
}

impl PartRunner for Helpers<'_> {
    type Error = Stop;

    fn error(e: SummaryError) -> Stop {
        at(Stage::Summary)(e)
    }

    fn parts(&mut self, _docs: usize) -> usize {
        self.pool.as_deref_mut().map_or(1, |p| {
            p.poll(); // helpers that have started since are idle now
            p.idle() + 1
        })
    }

    async fn run(&mut self, work: PartWork<'_>, split: &mut SplitSums) -> Result<(), Stop> {
        let Some(pool) = self.pool.as_deref_mut() else { return Ok(()) };
        let SummaryInputs { docs, classes, emb, params, .. } = work.inputs;
        self.shared.parts = split.ranges().len();
        // Parts 1.. to the helpers; part 0 here. A part not sent is computed by `finish`.
        for (p, range) in split.ranges().to_vec().into_iter().enumerate().skip(1) {
            if let Some(seq) = sums_request(&docs[range], classes.len(), emb, params, work.seed).ok().and_then(|msg| pool.send_request(&msg)) {
                split.sent(p, seq);
            }
        }
        let t0 = now_ms();
        let here = work.sums(split.ranges()[0].clone()).map_err(at(Stage::Summary))?;
        split.add(0, here);
        let here_ms = now_ms() - t0;
        let waited = now_ms();
        while split.waiting() {
            for r in pool.poll() {
                if split.reply(r.seq, r.result.is_ok().then_some(r.sums.as_slice())) {
                    self.shared.by_helpers += 1;
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
        Ok(())
    }
}
