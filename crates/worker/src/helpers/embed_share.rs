//! Embedding batches here and on the helpers at once: the embedding counterpart of
//! [`super::kde_share`]. The jobs that embed with the model (a run's missing vectors in
//! `sources`, the model check, the benchmark) hand their batches to [`embed_batches`], which
//! keeps this worker and every idle helper of the [`Pool`] busy and takes back what a helper
//! fails on or holds too long. (The idle-time pass, `background`, steps its own batches so
//! that a job can interrupt it.)

use std::collections::{HashMap, VecDeque};

use super::pool::Pool;
use dpkps_embed::onnx::OnnxEmbedder;
use dpkps_core::embed::Embed;
use dpkps_core::protocol::Stage;
use crate::control::{at, checkpoint, now_ms, sleep, Stop, CANCEL};

/// Embeds every message (term batches of `width` rows laid end to end, cut by
/// `dpkps_core::embed::rows`), here and on the helpers at once, calling `done(k, vectors,
/// by_helper)` exactly once per message k as it finishes (in any order), one vector per row.
/// A message a helper fails on, answers wrongly, or holds for much longer than one takes here
/// is embedded here instead.
pub async fn embed_batches(
    embedder: &mut OnnxEmbedder,
    mut pool: Option<&mut Pool>,
    batches: &[Vec<&str>],
    width: usize,
    clock: &mut f64,
    done: &mut dyn FnMut(usize, Vec<Vec<f32>>, bool) -> Result<(), Stop>,
) -> Result<(), Stop> {
    let dim = embedder.dim();
    let mut queue: VecDeque<usize> = (0..batches.len()).collect();
    // Messages a helper failed on: embedded here only (sent again, they could fail again and
    // again while this worker waited).
    let mut here_only: VecDeque<usize> = VecDeque::new();
    // Batches out on a helper: sequence number → (batch, when it was sent).
    let mut away: HashMap<u64, (usize, f64)> = HashMap::new();
    let mut finished = vec![false; batches.len()];
    let mut left = batches.len();
    // The slowest batch embedded here, to tell a slow helper from a lost one.
    let mut slowest_here_ms = 0.0f64;
    while left > 0 {
        if let Some(p) = pool.as_deref_mut() {
            for r in p.poll() {
                // Replies to batches of an earlier, cancelled job, or taken back, are not in `away`.
                let Some((k, _)) = away.remove(&r.seq) else { continue };
                match r.result {
                    Ok(flat) if flat.len() == dim * batches[k].len() => {
                        finished[k] = true;
                        left -= 1;
                        done(k, flat.chunks(dim).map(<[f32]>::to_vec).collect(), true)?;
                    }
                    Ok(_) => {
                        p.retire(r.slot);
                        queue.push_front(k);
                    }
                    Err(_) => here_only.push_back(k),
                }
            }
            while let Some(&k) = queue.front() {
                let Some(seq) = p.send_ahead(&batches[k], width) else { break };
                away.insert(seq, (k, now_ms()));
                queue.pop_front();
            }
        }
        if let Some(k) = here_only.pop_front().or_else(|| queue.pop_front()) {
            let t0 = now_ms();
            let vecs = dpkps_core::embed::rows::embed_rows(embedder, &batches[k], width).map_err(at(Stage::Embed))?;
            slowest_here_ms = slowest_here_ms.max(now_ms() - t0);
            finished[k] = true;
            left -= 1;
            done(k, vecs, false)?;
            if away.is_empty() {
                checkpoint(clock).await?;
                continue;
            }
            // Let the helpers' replies in now, so that no helper waits idle for its next batch.
            sleep(0).await;
        } else if left > 0 {
            // All that is left is on the helpers. Wait for their replies, but take back a batch
            // held for far longer than one takes here (a helper that hangs must not hang the job).
            let patience = 2_000.0 + 4.0 * slowest_here_ms;
            let overdue = away.iter().filter(|(_, &(_, sent))| now_ms() - sent > patience).map(|(&seq, _)| seq).min();
            match overdue.and_then(|seq| away.remove(&seq)) {
                Some((k, _)) if !finished[k] => queue.push_back(k),
                _ => sleep(2).await,
            }
        }
        *clock = now_ms();
        if CANCEL.get() {
            return Err(Stop::Cancelled);
        }
    }
    Ok(())
}

/// A public text for [`retire_unlike`]: a clinical-note-like paragraph with non-ASCII
/// characters, told four times so that it runs past the tokenizer's cut (256 tokens) as long
/// notes do.
pub const PROBE: &str = "The patient, a 64-year-old man seen today for shortness of breath on exertion over three weeks – \
    with ankle swelling and two pillows at night – had a temperature of 37.8 °C and took furosemide 40 mg and \
    bisoprolol 2.5 mg; vitamin B12 500 µg was stopped. Examination found crackles at both lung bases and pitting \
    oedema to the mid shin (café-au-lait macule on the left flank, unchanged). An echocardiogram showed a reduced \
    ejection fraction of 35 %; a review is planned in two weeks. ";

/// Asks every helper to embed [`PROBE`] (four times over) and keeps only those whose vector is
/// bit for bit this worker's: every other one (a different vector, a failure, no answer within
/// a minute, or still loading and so never asked) is retired. Returns how many are kept. Run
/// before private documents are shared out: a document's vector must be a function of its text
/// alone, not of which worker happened to embed it (the DP vote's proof,
/// `dpkps_core::run::vote`). The helpers run the same wasm on the same model bytes, so they
/// should all agree; this holds the assumption to a check.
pub async fn retire_unlike(embedder: &mut OnnxEmbedder, pool: &mut Pool) -> Result<usize, Stop> {
    let probe = PROBE.repeat(4);
    let mine: Vec<u32> = dpkps_core::embed::rows::embed_rows(embedder, &[probe.as_str()], 1).map_err(at(Stage::Embed))?.concat().iter().map(|x| x.to_bits()).collect();
    let mut away = Vec::new();
    while let Some(seq) = pool.send(&[probe.as_str()], 1) {
        away.push(seq);
    }
    let mut agree = Vec::new();
    let t0 = now_ms();
    while !away.is_empty() && now_ms() - t0 < 60_000.0 {
        for r in pool.poll() {
            let Some(i) = away.iter().position(|&s| s == r.seq) else { continue };
            away.swap_remove(i);
            if matches!(&r.result, Ok(flat) if flat.iter().map(|x| x.to_bits()).eq(mine.iter().copied())) {
                agree.push(r.slot);
            }
        }
        sleep(5).await;
        if CANCEL.get() {
            return Err(Stop::Cancelled);
        }
    }
    pool.retire_all_but(&agree);
    Ok(agree.len())
}
