//! Terms embedded in batches in which every row is a function of its own text.
//!
//! Which terms a run embeds follows the private corpus (the terms its documents contain, and
//! Ṽ), while every mechanism's sensitivity treats a term's vector as a function of its public
//! text alone. A model run on a batch does not give that for free: in tract, a row's low bits
//! depend on the batch's shape (its padded length and its row count pick the kernels) and on
//! the row's position in it (it sets the row's memory alignment; measured: a term of an odd
//! token count at rows 0 and 1 of the same batch gets different bits).
//!
//! So a term batch is cut from public facts about each row alone:
//! - **shape**: [`batch_width`] rows ([`TERM_BATCH`] for a term of 3 to [`MAX_BATCHED_TOKENS`]
//!   tokens, 1 for a longer one), all of one token count (the model's [`Embed::batch_key`] of
//!   the text), hence no padding;
//! - **position**: a term always takes the row [`home`] gives its text;
//! - the batch's **other rows** (other terms of the run, or a copy of one as filler) then do not
//!   enter the row's computation. That is what we observed with tract 0.23 (its reductions
//!   depend on a row's alignment, which shape and position fix; every operation of the bundled
//!   graph is row-wise along the batch axis, with no dynamic quantisation), not something this
//!   code can prove for any engine or CPU.
//!
//! So it is checked where it matters: the bundled model probes it when it loads, on the machine
//! at hand (`onnx::OnnxEmbedder::probe_rows`: every batched token count, every row, among two different sets of batch-mates, bit for bit), and every other model, or a failed probe, embeds
//! one term per model call (width 1), which needs no such property. [`embed_rows`] refuses a
//! batch not laid out by these rules (a helper worker is sent its rows). `tests/it/embed.rs` checks
//! the whole rule on real terms, natively.
//!
//! Batches are cut the same way by the CLI, the page's worker and its helpers, so on one engine
//! and machine a term gets the same vector in a run, in a later `dpkps sample` of its release,
//! and from the page's caches (keyed by the probe's fingerprint of the engine's arithmetic:
//! `onnx::OnnxEmbedder::rows_key`). Natively, terms embed up to 1.6 times as fast as one a
//! call (`dpkps bench embed`, and the figures at [`MAX_BATCHED_TOKENS`]).

use super::{Embed, EmbedError};

/// Rows of a term batch where the model passes its check.
pub const TERM_BATCH: usize = 8;

/// Terms of more tokens than this are embedded one a call. A short term costs the model little
/// next to a call's fixed cost, so batching pays; a long one costs more than the call, and its
/// token count is shared by few of a run's terms, so its batch would be mostly filler rows.
/// Natively, 1,024 MeSH terms embed at 217–234 terms/s one a call, 181–235 in batches of 8 at
/// any length, 242–266 in batches of 8 up to 8 tokens; 1,075 English words at 252, 359 and 404.
pub const MAX_BATCHED_TOKENS: usize = 8;

/// The rows of the batch of a term of `tokens` tokens (its `Embed::batch_key`), for a model
/// whose term width is `width`: a function of the term alone. Only the token counts from 3
/// ([CLS] + one piece + [SEP]) to [`MAX_BATCHED_TOKENS`], the range the model's load-time probe
/// samples, are batched.
pub fn batch_width(width: usize, tokens: usize) -> usize {
    if (3..=MAX_BATCHED_TOKENS).contains(&tokens) {
        width.max(1)
    } else {
        1
    }
}

/// The row `text` takes in every batch of `width` rows: FNV-1a of its bytes, modulo the
/// width. Public (a function of the text alone) and spread evenly, so batches fill well.
pub fn home(text: &str, width: usize) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in text.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % width.max(1) as u64) as usize
}

/// One model call's rows: `rows[r]` is the item at row r, or None for a filler row.
pub type TermBatch<T> = Vec<Option<T>>;

/// Cuts `items` into batches: grouped by token count, [`batch_width`] rows each, each item at
/// its home row, in the items' order within each (token count, row) queue. Deterministic.
pub fn term_batches<'a, T: Copy>(model: &dyn Embed, width: usize, items: &[T], text: impl Fn(T) -> &'a str) -> Vec<TermBatch<T>> {
    // token count → one queue per row
    let mut groups: std::collections::BTreeMap<usize, Vec<std::collections::VecDeque<T>>> = Default::default();
    for &item in items {
        let t = text(item);
        let tokens = model.batch_key(t);
        let w = batch_width(width, tokens);
        let queues = groups.entry(tokens).or_insert_with(|| vec![Default::default(); w]);
        queues[home(t, w)].push_back(item);
    }
    let mut out = Vec::new();
    for queues in groups.values_mut() {
        loop {
            let batch: TermBatch<T> = queues.iter_mut().map(|q| q.pop_front()).collect();
            if batch.iter().all(Option::is_none) {
                break;
            }
            out.push(batch);
        }
    }
    out
}

/// The texts a batch is run on: a filler row repeats the batch's first item (its vector is
/// dropped, and the other rows' do not depend on it).
pub fn batch_texts<'a, T: Copy>(batch: &[Option<T>], text: impl Fn(T) -> &'a str) -> Vec<&'a str> {
    let fill = batch.iter().flatten().next().map_or("", |&i| text(i));
    batch.iter().map(|r| r.map_or(fill, &text)).collect()
}

/// Whole batches in order, grouped into messages of at least `rows` rows (the last may have
/// fewer): what the page's worker hands its helpers at a time.
pub fn messages<T>(batches: Vec<TermBatch<T>>, rows: usize) -> Vec<Vec<TermBatch<T>>> {
    let mut out: Vec<Vec<TermBatch<T>>> = Vec::new();
    let mut filled = usize::MAX;
    for b in batches {
        if filled >= rows {
            out.push(Vec::new());
            filled = 0;
        }
        filled += b.len();
        if let Some(m) = out.last_mut() {
            m.push(b);
        }
    }
    out
}

/// A message's texts, its batches' ([`batch_texts`]) end to end.
pub fn message_texts<'a, T: Copy>(message: &[TermBatch<T>], text: impl Fn(T) -> &'a str) -> Vec<&'a str> {
    message.iter().flat_map(|b| batch_texts(b, &text)).collect()
}

/// Embeds texts laid out by [`term_batches`] and [`batch_texts`], batches one after the other,
/// one model call per batch (each batch's rows known from its first text: [`batch_width`]).
/// The page's worker and helpers pass such runs of batches to each other and embed them here.
pub fn embed_rows(model: &mut dyn Embed, texts: &[&str], width: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let mut out = Vec::with_capacity(texts.len());
    let mut at = 0;
    while at < texts.len() {
        let w = batch_width(width, model.batch_key(texts[at]));
        let batch = texts.get(at..at + w).ok_or_else(|| EmbedError::Model(format!("the last term batch has {} of its {w} rows", texts.len() - at)))?;
        check_batch(&*model, batch)?;
        let vecs = model.embed(batch)?;
        if vecs.len() != batch.len() {
            return Err(EmbedError::Model(format!("{} vectors for {} texts", vecs.len(), batch.len())));
        }
        out.extend(vecs);
        at += w;
    }
    Ok(out)
}

/// Refuses a batch not laid out by [`term_batches`] and [`batch_texts`]: rows of more than one
/// token count, or a row neither at its text's home nor a copy of a row that is (a filler).
/// Cheap next to the model call, and it keeps a caller (a helper worker is sent its rows) from
/// breaking the rule silently.
fn check_batch(model: &dyn Embed, batch: &[&str]) -> Result<(), EmbedError> {
    let width = batch.len();
    if width == 1 {
        return Ok(());
    }
    let key = model.batch_key(batch[0]);
    let at_home = |r: usize| home(batch[r], width) == r;
    for (r, t) in batch.iter().enumerate() {
        if r > 0 && model.batch_key(t) != key {
            return Err(EmbedError::Model("a term batch mixes token counts".into()));
        }
        if !at_home(r) && !(0..width).any(|q| q != r && batch[q] == *t && at_home(q)) {
            return Err(EmbedError::Model(format!("a term batch has {t:?} at row {r}, not at its home row")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model whose "token count" is the byte length, as `Embed::batch_key`'s default.
    struct Bytes;
    impl Embed for Bytes {
        fn dim(&self) -> usize {
            1
        }
        fn checksum(&self) -> &str {
            "bytes"
        }
        fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            Ok(texts.iter().map(|t| vec![t.len() as f32]).collect())
        }
    }

    #[test]
    fn every_term_sits_at_its_home_row_in_a_batch_of_its_own_length() {
        // Short words (batched: at most 8 "tokens", here bytes) and long ones (alone).
        let mut words: Vec<String> = (0..300).map(|k| format!("t{}{k}", "x".repeat(k % 4))).collect();
        words.extend((0..20).map(|k| format!("a longer term {k}")));
        let items: Vec<usize> = (0..words.len()).collect();
        let batches = term_batches(&Bytes, TERM_BATCH, &items, |k| words[k].as_str());
        let mut seen = vec![0; words.len()];
        for b in &batches {
            let lens: Vec<usize> = b.iter().flatten().map(|&k| words[k].len()).collect();
            assert!(!lens.is_empty() && lens.iter().all(|&l| l == lens[0]), "one length a batch: {lens:?}");
            assert_eq!(b.len(), if (3..=MAX_BATCHED_TOKENS).contains(&lens[0]) { TERM_BATCH } else { 1 });
            for (r, k) in b.iter().enumerate() {
                if let Some(k) = *k {
                    assert_eq!(home(&words[k], b.len()), r);
                    seen[k] += 1;
                }
            }
            let texts = batch_texts(b, |k| words[k].as_str());
            assert!(texts.iter().all(|t| t.len() == lens[0]), "fillers have the batch's length");
        }
        assert!(seen.iter().all(|&n| n == 1), "every term exactly once");
        // Rows spread well: far fewer rows than one batch per short term.
        let rows: usize = batches.iter().map(Vec::len).sum();
        assert!(rows < 2 * words.len(), "{rows} rows for {} terms", words.len());
        // Messages hold whole batches, in order, and embed to one vector per row.
        let msgs = messages(batches.clone(), 16);
        assert_eq!(msgs.concat(), batches);
        assert!(msgs.iter().rev().skip(1).all(|m| m.iter().map(Vec::len).sum::<usize>() >= 16));
        for m in &msgs {
            let texts = message_texts(m, |k| words[k].as_str());
            assert_eq!(embed_rows(&mut Bytes, &texts, TERM_BATCH).unwrap().len(), texts.len());
        }
    }

    #[test]
    fn width_one_is_one_term_a_call() {
        let words = ["a", "bb", "cc"];
        let batches = term_batches(&Bytes, 1, &[0usize, 1, 2], |k| words[k]);
        assert_eq!(batches, vec![vec![Some(0)], vec![Some(1)], vec![Some(2)]]);
        let v = embed_rows(&mut Bytes, &["a", "bb"], 1).unwrap();
        assert_eq!(v, vec![vec![1.0], vec![2.0]]);
    }

    #[test]
    fn a_batch_not_laid_out_by_the_rules_is_refused() {
        let words: Vec<String> = (0..64).map(|k| format!("w{k:03}")).collect();
        let items: Vec<usize> = (0..words.len()).collect();
        let batches = term_batches(&Bytes, TERM_BATCH, &items, |k| words[k].as_str());
        let laid: Vec<&str> = batches.iter().flat_map(|b| batch_texts(b, |k| words[k].as_str())).collect();
        assert_eq!(embed_rows(&mut Bytes, &laid, TERM_BATCH).unwrap().len(), laid.len());
        assert!(embed_rows(&mut Bytes, &laid[..laid.len() - 1], TERM_BATCH).is_err(), "a partial batch");
        // Two rows of a batch with two different terms swapped: neither is at home.
        let b = batches.iter().position(|b| b.iter().flatten().count() >= 2).unwrap();
        let mut swapped = batch_texts(&batches[b], |k| words[k].as_str());
        let rows: Vec<usize> = (0..TERM_BATCH).filter(|&r| batches[b][r].is_some()).take(2).collect();
        swapped.swap(rows[0], rows[1]);
        assert!(embed_rows(&mut Bytes, &swapped, TERM_BATCH).is_err(), "a term away from its home row");
        // A row of another length.
        let mut mixed = batch_texts(&batches[b], |k| words[k].as_str());
        mixed[rows[1]] = "w1";
        assert!(embed_rows(&mut Bytes, &mixed, TERM_BATCH).is_err(), "mixed token counts");
    }
}
