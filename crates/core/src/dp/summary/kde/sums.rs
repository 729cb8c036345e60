//! The DP-KDEs' exact integer sums Σ_docs q(doc), computed per distinct (block, term) where the
//! mechanism allows.
//!
//! A document's contribution is built from rows that depend on ONE term at ONE block each:
//! the projection p_t(z) = √2·ω_tᵀz of its t-th keyphrase z (the iterative samplers add these
//! up along the prefix, then take one cosine row per prefix), or the independent sampler's
//! feature row f(z) = √2·cos(β + p_0(z)). Sixty thousand documents repeat their frequent terms
//! many times, so [`Rows`] computes each row once per distinct (block, term) that a batch of
//! documents needs, keeping the most frequent pairs for the whole build (within
//! [`KEPT_BYTES`]) and the others for one batch, which bounds memory whatever the vocabulary
//! (a table of every distinct term, distinct terms × I × 4 bytes, would be 160 MB for 20,000
//! English terms at I = 2048). A row is a GEMM row: it depends on its own term only, bit for
//! bit, whatever other rows share its batch (`rows_do_not_depend_on_the_batch`), so every
//! document's contribution, and so the release, is exactly what computing it alone gives.
//! Nothing here touches the privacy map: each contribution is still clamped to [−C, C] and
//! rounded to the grid, or for the iterative samplers rounded and then clamped to [−Q, Q] on
//! the integer grid ([`add_cos_quantised`]): |q_i| ≤ Q either way (see the parent module).

use std::collections::HashMap;

use super::{Features, C_BOUND, Q_BOUND};
use crate::dp::summary::family::{SummaryDoc, GRID_BITS};
use crate::dp::summary::params::SummaryParams;
use crate::embed::TermEmbeddings;
use crate::math::linalg::MatRef;
use crate::math::trig::{cos_fast, round_to_i32};
use crate::input::public_vocab::TermId;

/// Memory for rows kept across the whole build (the most frequent (block, term) pairs).
pub const KEPT_BYTES: usize = 32 << 20;
/// Memory for one batch's other rows and, for the iterative samplers, the documents' phases.
const BATCH_BYTES: usize = 16 << 20;
/// Rows per GEMM call.
const GEMM_ROWS: usize = 256;

/// Rows of distinct (block, term) pairs: kept ones and the current batch's.
pub(super) struct Rows<'a> {
    emb: &'a TermEmbeddings,
    features: &'a Features,
    /// Rows are √2·cos(β + p) (the independent sampler) rather than the projection p.
    cos: bool,
    kept_index: HashMap<(usize, TermId), usize>,
    kept: Vec<f32>,
    batch_index: HashMap<(usize, TermId), usize>,
    batch: Vec<f32>,
}

impl<'a> Rows<'a> {
    /// Keeps the rows of the most frequent pairs of `uses` (one entry per use), at most
    /// [`KEPT_BYTES`] of them and only pairs used more than once.
    pub(super) fn new(emb: &'a TermEmbeddings, features: &'a Features, cos: bool, uses: impl Iterator<Item = (usize, TermId)>) -> Rows<'a> {
        let mut counts: HashMap<(usize, TermId), u32> = HashMap::new();
        uses.for_each(|p| *counts.entry(p).or_default() += 1);
        let mut frequent: Vec<((usize, TermId), u32)> = counts.into_iter().filter(|&(_, n)| n > 1).collect();
        // Most used first; ties by pair, so the kept set does not depend on hash order.
        frequent.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        frequent.truncate(KEPT_BYTES / (4 * features.count).max(1));
        let pairs: Vec<(usize, TermId)> = frequent.into_iter().map(|(p, _)| p).collect();
        let mut rows = Rows { emb, features, cos, kept_index: HashMap::new(), kept: Vec::new(), batch_index: HashMap::new(), batch: Vec::new() };
        rows.kept = rows.compute(&pairs);
        rows.kept_index = pairs.into_iter().enumerate().map(|(i, p)| (p, i)).collect();
        rows
    }

    /// Computes the rows of `pairs` not kept, replacing the previous batch's.
    pub(super) fn prepare(&mut self, pairs: impl Iterator<Item = (usize, TermId)>) {
        self.batch_index.clear();
        let mut todo = Vec::new();
        for p in pairs {
            if !self.kept_index.contains_key(&p) && !self.batch_index.contains_key(&p) {
                self.batch_index.insert(p, todo.len());
                todo.push(p);
            }
        }
        self.batch = self.compute(&todo);
    }

    /// The row of (block, term): kept, or prepared for this batch.
    pub(super) fn get(&self, block: usize, term: TermId) -> &[f32] {
        let width = self.features.count;
        match self.kept_index.get(&(block, term)) {
            Some(&i) => &self.kept[i * width..][..width],
            None => {
                let i = self.batch_index.get(&(block, term)).copied().unwrap_or_else(|| unreachable!("a row used before it was prepared"));
                &self.batch[i * width..][..width]
            }
        }
    }

    /// The rows of `pairs`, in order: GEMMs of up to [`GEMM_ROWS`] terms of one block.
    fn compute(&self, pairs: &[(usize, TermId)]) -> Vec<f32> {
        let (width, d) = (self.features.count, self.features.dim);
        let mut out = vec![0f32; pairs.len() * width];
        let mut order: Vec<usize> = (0..pairs.len()).collect();
        order.sort_by_key(|&i| pairs[i].0);
        let mut input: Vec<f32> = Vec::new();
        let mut proj: Vec<f32> = Vec::new();
        let sqrt2 = std::f32::consts::SQRT_2;
        for group in order.chunk_by(|&a, &b| pairs[a].0 == pairs[b].0) {
            let block = pairs[group[0]].0;
            for batch in group.chunks(GEMM_ROWS) {
                input.clear();
                batch.iter().for_each(|&i| input.extend_from_slice(self.emb.get(pairs[i].1).unwrap_or(&[])));
                proj.resize(batch.len() * width, 0.0);
                self.features.project(block, MatRef::rows(&input, batch.len(), d), &mut proj);
                for (row, &i) in proj.chunks_exact(width).zip(batch) {
                    let dst = &mut out[i * width..][..width];
                    if self.cos {
                        dst.iter_mut().zip(row).zip(self.features.beta()).for_each(|((v, p), b)| *v = sqrt2 * (b + p).cos());
                    } else {
                        dst.copy_from_slice(row);
                    }
                }
            }
        }
        out
    }
}

/// Adds one document's contribution c (I floats: the mean of `count` feature rows, summed in
/// `acc`) to `total`: clamped to [−C, C] and rounded to the grid, exactly as integers.
fn add_quantised(total: &mut [i64], acc: &[f32], count: u32) {
    let grid = (1u64 << GRID_BITS) as f64;
    for (tot, &v) in total.iter_mut().zip(acc) {
        let c = (v as f64 / count as f64).clamp(-C_BOUND, C_BOUND);
        *tot += (c * grid).round() as i64;
    }
}

/// One document's contribution for one prefix, as integers on the grid: q_i =
/// clamp(round(√2·cos θ_i · 2^GRID_BITS), −Q, Q) with θ_i = β_i + a·r_i + c·p_i, added to
/// `acc` (the iterative samplers' count is 1: a prefix is its document's only one for that
/// member).
///
/// Why not `f32::cos` and [`add_quantised`]: at 60,000 documents the iterative samplers take
/// about 10⁹ of these (documents × prefixes × I), and wasm has no cos instruction: a libm call
/// per value, then f64 rounding and a saturating conversion, all one lane at a time.
/// [`cos_fast`] and [`round_to_i32`] are plain float and integer arithmetic that the compiler
/// puts in simd128 lanes. Privacy does not rest on their accuracy: whatever θ is (huge,
/// infinite, NaN), the clamp on the integer gives |q_i| ≤ Q = [`Q_BOUND`], which is all the
/// privacy map needs (parent module).
fn add_cos_quantised(acc: &mut [i32], beta: &[f32], r: &[f32], a: f32, p: &[f32], c: f32) {
    const SCALE: f32 = std::f32::consts::SQRT_2 * (1u32 << GRID_BITS) as f32;
    const Q: i32 = Q_BOUND as i32;
    for (((q, &b), &r), &p) in acc.iter_mut().zip(beta).zip(r).zip(p) {
        // Exact rounding for |y| < 2^22, which holds whenever cos_fast is near [−1, 1]; the
        // clamp, on the integer, bounds it whatever y was.
        *q += round_to_i32(cos_fast(b + a * r + c * p) * SCALE).clamp(-Q, Q);
    }
}

/// Per member, i32 partial sums of at most [`Partial::FLUSH`] contributions (|q| ≤ Q, so
/// FLUSH·Q < 2^31: no overflow), moved to the i64 totals before the next one would exceed
/// that: exact integers either way.
struct Partial {
    acc: Vec<Vec<i32>>,
    added: Vec<u32>,
}

impl Partial {
    const FLUSH: u32 = 1024;

    fn new(members: usize, features: usize) -> Partial {
        Partial { acc: vec![vec![0; features]; members], added: vec![0; members] }
    }

    /// Member m's partial sums, to add one contribution to (first moved to `totals` if they
    /// already hold FLUSH).
    fn member(&mut self, m: usize, totals: &mut [Vec<i64>]) -> &mut [i32] {
        if self.added[m] == Self::FLUSH {
            Self::flush(&mut self.acc[m], &mut totals[m]);
            self.added[m] = 0;
        }
        self.added[m] += 1;
        &mut self.acc[m]
    }

    /// Moves every partial sum to `totals`.
    fn finish(mut self, totals: &mut [Vec<i64>]) {
        self.acc.iter_mut().zip(totals).for_each(|(a, t)| Self::flush(a, t));
    }

    fn flush(acc: &mut [i32], total: &mut [i64]) {
        total.iter_mut().zip(acc.iter_mut()).for_each(|(t, a)| {
            *t += *a as i64;
            *a = 0;
        });
    }
}

/// The (block, term) pairs the mechanism reads from `doc`.
pub(super) fn uses<'d>(doc: &'d SummaryDoc<'_>, params: &SummaryParams) -> impl Iterator<Item = (usize, TermId)> + 'd {
    let iterative = params.ensemble().layout().over_prefixes();
    let take = if iterative { params.len } else { params.terms_per_doc };
    doc.terms.iter().take(take).enumerate().map(move |(t, &term)| (if iterative { t } else { 0 }, term))
}

/// Exact integer sums Σ_docs q(doc) for each member of one class.
pub(super) fn class_sums(docs: &[&SummaryDoc<'_>], features: &Features, params: &SummaryParams, rows: &mut Rows<'_>) -> Vec<Vec<i64>> {
    let ensemble = params.ensemble();
    let i_count = features.count;
    let mut totals = vec![vec![0i64; i_count]; ensemble.members()];
    let beta = features.beta();
    match ensemble.layout().over_prefixes() {
        false => {
            // Every keyphrase (first M) is a length-1 "prefix" at block 0, weight 1/M_doc.
            let per_batch = (BATCH_BYTES / (4 * i_count * params.terms_per_doc.max(1))).max(1);
            let mut acc = vec![0f32; i_count];
            for chunk in docs.chunks(per_batch) {
                rows.prepare(chunk.iter().flat_map(|d| uses(d, params)));
                for doc in chunk {
                    acc.iter_mut().for_each(|a| *a = 0.0);
                    let mut count = 0u32;
                    for (_, t) in uses(doc, params) {
                        acc.iter_mut().zip(rows.get(0, t)).for_each(|(a, f)| *a += f);
                        count += 1;
                    }
                    if count > 0 {
                        add_quantised(&mut totals[0], &acc, count);
                    }
                }
            }
        }
        true => {
            // r[doc] = Σ_{t<ℓ} p_t(z_t), grown one position at a time; each prefix a document
            // gives a member is its only one there (count 1: `Ensemble::members_of_prefix`).
            let per_batch = (BATCH_BYTES / (4 * i_count)).max(1);
            let mut r = Vec::new();
            let mut partial = Partial::new(ensemble.members(), i_count);
            for chunk in docs.chunks(per_batch) {
                r.clear();
                r.resize(chunk.len() * i_count, 0f32);
                for t in 0..params.len {
                    let live: Vec<usize> = (0..chunk.len()).filter(|&k| chunk[k].terms.len() > t).collect();
                    if live.is_empty() {
                        break;
                    }
                    rows.prepare(live.iter().map(|&k| (t, chunk[k].terms[t])));
                    let len = t + 1;
                    for &k in &live {
                        let rk = &mut r[k * i_count..][..i_count];
                        let p = rows.get(t, chunk[k].terms[t]);
                        let doc_len = chunk[k].terms.len().min(params.len);
                        let prefix_members = ensemble.members_of_prefix(len, doc_len);
                        for &m in &prefix_members {
                            let (prefix, last) = ensemble.block_scales(m, len);
                            if prefix != last {
                                // Blocks before ℓ at one scale, block ℓ at another (rk: before).
                                add_cos_quantised(partial.member(m, &mut totals), beta, rk, prefix, p, last);
                            }
                        }
                        rk.iter_mut().zip(p).for_each(|(rv, p)| *rv += p);
                        for &m in &prefix_members {
                            let (prefix, last) = ensemble.block_scales(m, len);
                            if prefix == last {
                                add_cos_quantised(partial.member(m, &mut totals), beta, rk, last, rk, 0.0);
                            }
                        }
                    }
                }
            }
            partial.finish(&mut totals);
        }
    }
    totals
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dp::summary::kde::tests::unit_vectors;
    use crate::dp::summary::KeyphraseSampler;

    fn embeddings(n: usize, dim: usize) -> TermEmbeddings {
        let mut emb = TermEmbeddings::new(dim);
        for (i, v) in unit_vectors(n, dim, 5).iter().enumerate() {
            emb.insert(i as TermId, v).unwrap();
        }
        emb
    }

    #[test]
    fn contributions_are_on_the_grid_and_bounded_whatever_the_phase() {
        let q = Q_BOUND as i32;
        let odd = [0.0, 1e-3, 3.0, -7.5, 1e4, -3e6, 1e30, f32::MAX, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MIN_POSITIVE];
        let n = odd.len();
        for a in [0.0, 1.0, -0.3, f32::INFINITY] {
            let mut acc = vec![0i32; n * n];
            let beta: Vec<f32> = (0..n * n).map(|i| odd[i / n]).collect();
            let r: Vec<f32> = (0..n * n).map(|i| odd[i % n]).collect();
            add_cos_quantised(&mut acc, &beta, &r, a, &r, 1.0);
            assert!(acc.iter().all(|v| v.abs() <= q), "{acc:?}");
        }
        // Ordinary phases: what the f64 definition gives, to a grid step.
        let beta: Vec<f32> = (0..4096).map(|i| (i as f32 * 0.77).sin() * 40.0).collect();
        let r: Vec<f32> = (0..4096).map(|i| (i as f32 * 0.31).cos() * 9.0).collect();
        let mut acc = vec![0i32; 4096];
        add_cos_quantised(&mut acc, &beta, &r, 0.5, &r, -0.25);
        for ((&v, &b), &r) in acc.iter().zip(&beta).zip(&r) {
            let theta = b + 0.5 * r + -0.25 * r;
            let exact = (2f64.sqrt() * (theta as f64).cos() * (1u64 << GRID_BITS) as f64).round() as i32;
            assert!((v - exact).abs() <= 1, "θ = {theta}: {v} against {exact}");
        }
    }

    #[test]
    fn many_equal_documents_add_up_exactly() {
        // More documents than one i32 partial sum takes (FLUSH): n equal documents give n
        // times one document's integers, for every member.
        let (dim, n) = (16, 3);
        let emb = embeddings(n, dim);
        let terms: Vec<TermId> = vec![0, 1, 2];
        for sampler in [KeyphraseSampler::IterativeLinear, KeyphraseSampler::IterativeLog] {
            let params = SummaryParams { epsilon: 1.0, sampler, len: 3, features: 64, terms_per_doc: 3, bandwidth: 0.3, smoothing: 0.0 };
            let f = Features::generate(params.features, dim, params.blocks(), params.bandwidth, [2; 32]);
            let one = SummaryDoc { class: 0, terms: &terms };
            let mut rows = Rows::new(&emb, &f, false, std::iter::empty());
            let alone = class_sums(&[&one], &f, &params, &mut rows);
            let many: Vec<&SummaryDoc<'_>> = vec![&one; 5_000];
            let mut rows = Rows::new(&emb, &f, false, many.iter().flat_map(|d| uses(d, &params)));
            let together = class_sums(&many, &f, &params, &mut rows);
            let expected: Vec<Vec<i64>> = alone.iter().map(|m| m.iter().map(|v| v * 5_000).collect()).collect();
            assert_eq!(together, expected, "{sampler:?}");
        }
    }

    #[test]
    fn rows_do_not_depend_on_the_batch() {
        // A term's row, computed alone, in a batch with others (at several positions in it,
        // in GEMMs of different heights), or kept for the whole build: the same bits.
        let (dim, n) = (48, 700);
        let emb = embeddings(n, dim);
        let f = Features::generate(96, dim, 3, 0.1, [4; 32]);
        for cos in [false, true] {
            for block in 0..3 {
                let alone: Vec<Vec<f32>> = (0..n as TermId)
                    .map(|t| {
                        let mut r = Rows::new(&emb, &f, cos, std::iter::empty());
                        r.prepare(std::iter::once((block, t)));
                        r.get(block, t).to_vec()
                    })
                    .collect();
                for batch in [vec![(0..n as TermId).collect::<Vec<_>>()], (0..n as TermId).rev().collect::<Vec<_>>().chunks(37).map(<[_]>::to_vec).collect()] {
                    let mut r = Rows::new(&emb, &f, cos, (0..40).map(|t| (block, t)).chain((0..40).map(|t| (block, t))));
                    for ids in batch {
                        r.prepare(ids.iter().map(|&t| (block, t)));
                        for &t in &ids {
                            assert!(r.get(block, t).iter().zip(&alone[t as usize]).all(|(a, b)| a.to_bits() == b.to_bits()), "term {t}, block {block}, cos {cos}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn sums_equal_the_per_document_definition() {
        // Each document on its own (rows computed for it alone) gives the same integer sums as
        // the batched, shared computation, for every DP-KDE sampler.
        let (dim, n) = (16, 60);
        let emb = embeddings(n, dim);
        let lists: Vec<Vec<TermId>> = (0..300u32).map(|k| (0..(1 + k % 7)).map(|j| (k * 13 + j * 7) % 17 + (j % 3) * 20).collect()).collect();
        let docs: Vec<SummaryDoc<'_>> = lists.iter().map(|t| SummaryDoc { class: 0, terms: t }).collect();
        let refs: Vec<&SummaryDoc<'_>> = docs.iter().collect();
        for sampler in [KeyphraseSampler::Independent, KeyphraseSampler::IterativeLinear, KeyphraseSampler::IterativeLog] {
            let params = SummaryParams { epsilon: 1.0, sampler, len: 6, features: 64, terms_per_doc: 4, bandwidth: 0.5, smoothing: 0.0 };
            let f = Features::generate(params.features, dim, params.blocks(), params.bandwidth, [6; 32]);
            let cos = sampler == KeyphraseSampler::Independent;
            let mut rows = Rows::new(&emb, &f, cos, refs.iter().flat_map(|d| uses(d, &params)));
            let together = class_sums(&refs, &f, &params, &mut rows);
            let mut alone = vec![vec![0i64; params.features]; params.ensemble().members()];
            for d in &refs {
                let mut rows = Rows::new(&emb, &f, cos, std::iter::empty());
                for (m, s) in class_sums(&[*d], &f, &params, &mut rows).into_iter().enumerate() {
                    alone[m].iter_mut().zip(s).for_each(|(a, v)| *a += v);
                }
            }
            assert_eq!(together, alone, "{sampler:?}");
            assert!(together.iter().all(|m| m.iter().any(|&v| v != 0)), "{sampler:?}: every member has documents");
        }
    }

    #[test]
    fn sums_of_parts_add_up_to_the_sums_of_all() {
        // How the app shares the build with its helper workers: any split, same integers.
        let (dim, n) = (16, 40);
        let emb = embeddings(n, dim);
        // More than FLUSH (1024) documents per class and member, so the i32 partial sums of the
        // iterative samplers are flushed mid-way in some parts and not in others.
        let lists: Vec<Vec<TermId>> = (0..3_600u32).map(|k| (0..(1 + k % 5)).map(|j| (k * 7 + j * 11) % n as u32).collect()).collect();
        let docs: Vec<SummaryDoc<'_>> = lists.iter().enumerate().map(|(i, t)| SummaryDoc { class: i % 3, terms: t }).collect();
        for sampler in [KeyphraseSampler::Independent, KeyphraseSampler::IterativeLinear, KeyphraseSampler::IterativeLog] {
            let params = SummaryParams { epsilon: 1.0, sampler, len: 4, features: 32, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
            let all = crate::dp::summary::exact_sums(&docs, 3, &emb, &params, [3; 32]).unwrap();
            assert!(all.iter().flatten().all(|m| m.iter().any(|&v| v != 0)), "{sampler:?}: every class and member has sums");
            for split in [1, 1_500, 3_300] {
                let mut a = crate::dp::summary::exact_sums(&docs[..split], 3, &emb, &params, [3; 32]).unwrap();
                let b = crate::dp::summary::exact_sums(&docs[split..], 3, &emb, &params, [3; 32]).unwrap();
                a.iter_mut().flatten().zip(b.iter().flatten()).for_each(|(x, y)| x.iter_mut().zip(y).for_each(|(x, y)| *x += y));
                assert_eq!(a, all, "{sampler:?}, split at {split}");
            }
            let classes = crate::input::classes::ClassSet::declared(&["a", "b", "c"], crate::input::classes::OtherLabels::Drop).unwrap();
            let mut rng = crate::dp::SecureRng::seeded_for_tests(5);
            let (set, spends) = crate::dp::summary::build_from_sums(crate::dp::summary::SummaryInputs::of(&docs, &classes, &emb, &[], &params), [3; 32], all.clone(), &mut rng).unwrap();
            set.check().unwrap();
            assert_eq!(spends.len(), 3 * params.ensemble().members());
            assert!(crate::dp::summary::build_from_sums(crate::dp::summary::SummaryInputs::of(&docs, &classes, &emb, &[], &params), [3; 32], all[..2].to_vec(), &mut rng).is_err());
        }
    }
}
