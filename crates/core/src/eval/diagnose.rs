//! Why the iterative samplers lose utility without noise: for noiseless releases,
//! compare the distribution the sampler draws each keyphrase from (random-feature scores,
//! negatives clipped) with the exact kernel conditional it approximates, step by step, and
//! train the classifier on sequences drawn from the exact kernel as well.
//!
//! The exact kernel reads the training documents directly: it is a diagnosis, never a
//! release (like every figure of the evaluation, NOT differentially private).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{EvalError, Evaluation, RunResult};
use crate::input::classes::{ClassSet, OtherLabels};
use crate::dp::SecureRng;
use crate::embed::TermEmbeddings;
use crate::dp::summary::{SummaryDoc, SummaryInputs, SummaryParams, Noise, KeyphraseSampler};
use crate::math::linalg::{gemm, MatRef};
use crate::sample::{sample_iterative, weights, Candidates};
use crate::input::public_vocab::TermId;

/// One step of one sampler, averaged over every sampled prefix of every class and round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepStats {
    pub sampler: String,
    /// ℓ: the position being drawn.
    pub len: usize,
    /// Total variation between the sampler's draw distribution and the exact kernel's.
    pub tv_sampler_exact: f64,
    /// Total variation of the exact kernel's conditional from uniform over Ṽ (how much it
    /// says at all).
    pub tv_exact_uniform: f64,
    /// The same for the sampler's draw distribution.
    pub tv_sampler_uniform: f64,
    /// The largest exact score over the rms random-feature error of the scores.
    pub signal_over_error: f64,
    /// Share of candidates with a positive random-feature score.
    pub positive_share: f64,
    /// (Σα)²/Σα² over the documents' prefix weights α_d: how many documents the prefix
    /// effectively conditions on.
    pub effective_docs: f64,
}

/// The diagnosis: per-step figures, and the classifier trained on exact-kernel samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub steps: Vec<StepStats>,
    /// `diag-rff-<sampler>` (the noiseless sampler, as `nodp-*`) and `diag-exact-<sampler>`
    /// (drawn from the exact kernel), embedding view.
    pub arms: Vec<(String, RunResult)>,
}

/// One class's training prefixes, as indices into its distinct terms, with the squared
/// distances of every candidate to every such term.
struct ClassExact {
    docs: Vec<Vec<usize>>,
    /// N × T: ‖w − x‖².
    dist: Vec<f64>,
    /// ‖x‖² of each term.
    term_norm: Vec<f64>,
    terms: usize,
}

impl ClassExact {
    fn new(docs: &[&[TermId]], cands: &Candidates, emb: &TermEmbeddings) -> Result<ClassExact, EvalError> {
        let mut index: HashMap<TermId, usize> = HashMap::new();
        let mut rows: Vec<f32> = Vec::new();
        let mut out = Vec::with_capacity(docs.len());
        for d in docs {
            let mut ids = Vec::with_capacity(d.len());
            for &t in *d {
                let next = index.len();
                let i = *index.entry(t).or_insert_with(|| next);
                if i == next {
                    rows.extend_from_slice(emb.get(t).ok_or(crate::dp::summary::SummaryError::MissingEmbedding(t))?);
                }
                ids.push(i);
            }
            out.push(ids);
        }
        let (n, t, dim) = (cands.len(), index.len(), cands.dim);
        let mut dots = vec![0f32; n * t];
        if t > 0 {
            gemm(1.0, MatRef::rows(&cands.matrix, n, dim), MatRef::rows(&rows, t, dim).t(), 0.0, &mut dots);
        }
        let term_norm: Vec<f64> = rows.chunks_exact(dim).map(|r| r.iter().map(|&x| (x as f64).powi(2)).sum()).collect();
        let cand_norm: Vec<f64> = cands.matrix.chunks_exact(dim).map(|r| r.iter().map(|&x| (x as f64).powi(2)).sum()).collect();
        let dist = (0..n * t).map(|k| (cand_norm[k / t] + term_norm[k % t] - 2.0 * dots[k] as f64).max(0.0)).collect();
        Ok(ClassExact { docs: out, dist, term_norm, terms: t })
    }

    /// Exact kernel scores of every candidate after `prefix` (candidate indices), as the
    /// release of member m approximates them (`kde` module docs), and the documents' prefix
    /// weights α_d.
    fn scores(&self, params: &SummaryParams, prefix: &[usize], cand_norm: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let ens = params.ensemble();
        let len = prefix.len() + 1;
        let m = ens.member_for(len);
        let blocks = ens.padded_blocks(m);
        let s = ens.scales(m, len);
        let (sp, sl) = ((s.prefix as f64).powi(2), (s.last as f64).powi(2));
        let h = params.bandwidth;
        let n = cand_norm.len();
        let mut out = vec![0f64; n];
        let mut alphas = Vec::with_capacity(self.docs.len());
        for doc in &self.docs {
            let doc_len = doc.len().min(params.len);
            let lens: Vec<usize> = (1..=doc_len).filter(|&l| ens.members_of_prefix(l, doc_len).contains(&m)).collect();
            if lens.is_empty() {
                continue;
            }
            let w = 1.0 / lens.len() as f64;
            let mut alpha = 0.0;
            for &pl in &lens {
                let p = &doc[..pl];
                let mut base = 0.0;
                for (t, &q) in prefix.iter().enumerate() {
                    base += sp * if t < pl { self.dist[q * self.terms + p[t]] } else { cand_norm[q] };
                }
                for t in len..blocks {
                    if t < pl {
                        base += sp * self.term_norm[p[t]];
                    }
                }
                alpha += w * (-base / h).exp();
                for (c, o) in out.iter_mut().enumerate() {
                    let last = if len - 1 < pl { self.dist[c * self.terms + p[len - 1]] } else { cand_norm[c] };
                    *o += w * (-(base + sl * last) / h).exp();
                }
            }
            alphas.push(alpha);
        }
        (out, alphas)
    }
}

fn normalised(scores: impl Iterator<Item = f64>, n: usize) -> Vec<f64> {
    let v: Vec<f64> = scores.map(|s| s.max(0.0)).collect();
    let total: f64 = v.iter().sum();
    if !(total > 0.0) || !total.is_finite() {
        return vec![1.0 / n as f64; n];
    }
    v.into_iter().map(|x| x / total).collect()
}

fn tv(a: &[f64], b: &[f64]) -> f64 {
    0.5 * a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<f64>()
}

#[derive(Default)]
struct Acc {
    k: f64,
    sums: [f64; 6],
}

impl Evaluation {
    /// The diagnosis for the iterative samplers among the evaluation's, on every round
    /// (noiseless releases on the exact top-N vocabulary; needs the noiseless arms).
    pub fn diagnose(&self, emb: &TermEmbeddings, rng: &mut SecureRng) -> Result<Diagnosis, EvalError> {
        let p = &self.params;
        let mut steps = Vec::new();
        let mut results = Vec::new();
        let classes = ClassSet::declared(&self.classes, OtherLabels::Drop)?;
        for &sampler in p.samplers.iter().filter(|s| matches!(s, KeyphraseSampler::IterativeLinear | KeyphraseSampler::IterativeLog)) {
            let params = p.summary_params(sampler, true);
            let mut acc: Vec<Acc> = (0..p.len).map(|_| Acc::default()).collect();
            for round in &self.rounds {
                let vocab = &round.exact_vocab;
                let train: Vec<usize> = round.split.train.iter().copied().filter(|&i| !self.docs[i].terms.is_empty()).collect();
                let terms = |i: usize| &self.docs[i].terms[..self.docs[i].terms.len().min(p.len)];
                let summary_docs: Vec<SummaryDoc<'_>> = train.iter().map(|&i| SummaryDoc { class: self.docs[i].class, terms: terms(i) }).collect();
                let mut seed = [0u8; 32];
                rng.fill(&mut seed);
                let (set, _) = crate::dp::summary::build_with(SummaryInputs { docs: &summary_docs, classes: &classes, emb, candidates: vocab, params: &params }, seed, Noise::Off)?;
                let features = set.features()?;
                let cands = Candidates::new(vocab, emb)?;
                let cand_norm: Vec<f64> =
                    cands.matrix.chunks_exact(cands.dim).map(|r| r.iter().map(|&x| (x as f64).powi(2)).sum()).collect();
                let exact: Vec<ClassExact> = (0..self.classes.len())
                    .map(|c| {
                        let docs: Vec<&[TermId]> = train.iter().filter(|&&i| self.docs[i].class == c).map(|&i| terms(i)).collect();
                        ClassExact::new(&docs, &cands, emb)
                    })
                    .collect::<Result<_, _>>()?;
                let counts = vec![p.per_class; self.classes.len()];
                let n = cands.len();
                // The sampler as it is, measured against the exact kernel.
                let picks = sample_iterative(&set, &features, &cands, &counts, rng, &mut |c, len, prefixes, scores, floors| {
                    let a = &mut acc[len - 1];
                    for (q, prefix) in prefixes.iter().enumerate() {
                        let rff = &scores[q * n..][..n];
                        let (ex, alphas) = exact[c].scores(&params, prefix, &cand_norm);
                        let (pr, pe) = (normalised(weights(rff, floors[q]).into_iter(), n), normalised(ex.iter().copied(), n));
                        let u = vec![1.0 / n as f64; n];
                        let err = (rff.iter().zip(&ex).map(|(&r, &e)| (r as f64 - e).powi(2)).sum::<f64>() / n as f64).sqrt();
                        let signal = ex.iter().fold(0f64, |m, &x| m.max(x));
                        let (sa, sa2) = (alphas.iter().sum::<f64>(), alphas.iter().map(|x| x * x).sum::<f64>());
                        let vals = [
                            tv(&pr, &pe),
                            tv(&pe, &u),
                            tv(&pr, &u),
                            signal / err.max(1e-12),
                            rff.iter().filter(|&&s| s > 0.0).count() as f64 / n as f64,
                            if sa2 > 0.0 { sa * sa / sa2 } else { 0.0 },
                        ];
                        a.sums.iter_mut().zip(vals).for_each(|(s, v)| *s += v);
                        a.k += 1.0;
                    }
                });
                // The same draws from the exact kernel.
                let exact_picks = sample_iterative(&set, &features, &cands, &counts, rng, &mut |c, _, prefixes, scores, floors| {
                    floors.iter_mut().for_each(|f| *f = 0.0);
                    for (q, prefix) in prefixes.iter().enumerate() {
                        let (ex, _) = exact[c].scores(&params, prefix, &cand_norm);
                        scores[q * n..][..n].iter_mut().zip(ex).for_each(|(s, e)| *s = e as f32);
                    }
                });
                let seq = |i: usize| &self.docs[i].terms[..self.docs[i].terms.len().min(p.len)];
                let test: Vec<(&[TermId], usize)> =
                    round.split.test.iter().filter(|&&i| !self.docs[i].terms.is_empty()).map(|&i| (seq(i), self.docs[i].class)).collect();
                for (name, picks) in [("rff", picks), ("exact", exact_picks)] {
                    let train: Vec<(Vec<TermId>, usize)> = picks
                        .into_iter()
                        .enumerate()
                        .flat_map(|(c, ps)| ps.into_iter().map(move |p| (p, c)))
                        .map(|(p, c)| (p.iter().map(|&w| cands.ids[w]).collect(), c))
                        .collect();
                    let mut out = Vec::new();
                    self.score(&format!("diag-{name}-{}", sampler.name()), round.seed, &train, &test, emb, Some(params.features), &mut out)?;
                    results.extend(out.into_iter().filter(|((_, view), _)| *view == "embedding").map(|((arm, _), r)| (arm, r)));
                }
            }
            for (i, a) in acc.iter().enumerate() {
                let k = a.k.max(1.0);
                steps.push(StepStats {
                    sampler: sampler.name().into(),
                    len: i + 1,
                    tv_sampler_exact: a.sums[0] / k,
                    tv_exact_uniform: a.sums[1] / k,
                    tv_sampler_uniform: a.sums[2] / k,
                    signal_over_error: a.sums[3] / k,
                    positive_share: a.sums[4] / k,
                    effective_docs: a.sums[5] / k,
                });
            }
        }
        Ok(Diagnosis { steps, arms: results })
    }
}
