//! [`Evaluation`] ([`super`], "Use"): the task shaped, the splits and vocabularies drawn
//! ([`Evaluation::prepare`]), then every arm trained and scored ([`Evaluation::run`],
//! [`Evaluation::text_view`]).

use std::collections::{BTreeMap, HashMap};

use super::classifier::{Rows, Softmax, Standardiser};
use super::params::{EvalParams, Task};
use super::report::{aggregate, ArmReport, EvalReport, NotScored, RefusedArm, RunResult, SyntheticSummary, TaskSummary, BASELINE_ARM, NOTE};
use super::signal_loss::{Distinctive, SequenceDiagnosis, VocabDiagnosis};
use super::split::{self, Split};
use super::task::{exact_top_n, shape_task};
use super::{metrics, EvalError};
use crate::input::classes::{ClassSet, OtherLabels};
use crate::dp::candidates::{kde_candidates, CandidateRule};
use crate::dp::vocabulary::select_from_documents;
use crate::dp::SecureRng;
use crate::base::ParamError;
use crate::embed::TermEmbeddings;
use crate::dp::summary::{SummaryDoc, SummaryError, SummaryInputs, SummaryParams, Noise, KeyphraseSampler};
use crate::input::matched::MatchedCorpus;
use crate::sample::{Candidates, Drawn, Signals};
use crate::input::public_vocab::{PublicVocabulary, TermId};

/// A document of the task: its class and kept terms (most used first).
pub(super) struct Doc {
    pub(super) class: usize,
    pub(super) terms: Vec<TermId>,
}

/// One repetition: its split and the vocabularies drawn from its training part.
pub(super) struct Round {
    pub(super) seed: u64,
    pub(super) split: Split,
    /// Ṽ (ε_voc-DP), when there are DP sampler arms.
    pub(super) dp_vocab: Vec<TermId>,
    /// What the DP-KDE arms draw from: Ṽ's terms under `EvalParams::candidates`.
    pub(super) dp_candidates: Vec<TermId>,
    /// The exact top-N vocabulary, when there are noiseless arms.
    pub(super) exact_vocab: Vec<TermId>,
    /// The classes' distinctive terms in the training part (`super::signal_loss`; not in the
    /// DP check, which reports none of it).
    pub(super) distinctive: Option<Distinctive>,
}

/// A prepared evaluation (module docs, "Use").
pub struct Evaluation {
    pub(super) params: EvalParams,
    pub(super) classes: Vec<String>,
    pub(super) docs: Vec<Doc>,
    /// Index in the matched corpus of every task document (to find its text).
    sources: Vec<usize>,
    summary: TaskSummary,
    pub(super) rounds: Vec<Round>,
}

/// Progress callback: (what, done, total).
pub type Progress<'a> = &'a mut dyn FnMut(&str, usize, usize);

impl Evaluation {
    /// Checks parameters, shapes the task, draws splits and vocabularies (the DP vocabulary is
    /// drawn here: `rng` supplies its noise).
    pub fn prepare(
        corpus: &MatchedCorpus,
        public: &PublicVocabulary,
        params: EvalParams,
        rng: &mut SecureRng,
        progress: Progress<'_>,
    ) -> Result<Evaluation, EvalError> {
        params.validate()?;
        if corpus.keep < params.keep() {
            return Err(EvalError::Keep { kept: corpus.keep, needed: params.keep() });
        }
        let (classes, chosen, unlabelled, other) = shape_task(corpus, &params.task, params.seeds[0])?;
        let docs: Vec<Doc> = chosen.iter().map(|&(i, c)| Doc { class: c, terms: corpus.docs[i].terms.clone() }).collect();
        let sources: Vec<usize> = chosen.iter().map(|&(i, _)| i).collect();
        let labels: Vec<usize> = docs.iter().map(|d| d.class).collect();
        let mut class_docs = vec![0usize; classes.len()];
        labels.iter().for_each(|&c| class_docs[c] += 1);
        for (c, &n) in class_docs.iter().enumerate() {
            if n < split::MIN_CLASS_DOCS {
                return Err(EvalError::ClassTooSmall { label: classes[c].clone(), docs: n, min: split::MIN_CLASS_DOCS });
            }
        }

        let needs_dp = !params.samplers.is_empty();
        if needs_dp && params.vocab.covers(public.len()) && (params.partition_selection || params.candidates == CandidateRule::Cleared) {
            // No noisy counts to select by: Ṽ is the whole list, drawn from nothing (`dp::vocabulary`).
            let why = "covers the public list, so no noisy count is drawn for partition selection or the cleared candidates to read: choose an N below the list's size";
            return Err(ParamError::new("N (vocabulary size)", params.vocab.top_n, why).into());
        }
        let needs_exact = needs_dp && params.no_dp_arms;
        let mut rounds = Vec::with_capacity(params.seeds.len());
        let (mut no_terms_test, mut no_terms_train) = (0usize, 0usize);
        let mut diagnoses = Vec::new();
        for (k, &seed) in params.seeds.iter().enumerate() {
            progress("splitting and drawing vocabularies", k, params.seeds.len());
            let split = split::stratified(&labels, classes.len(), params.holdout, seed);
            no_terms_test += split.test.iter().filter(|&&i| docs[i].terms.is_empty()).count();
            no_terms_train += split.train.iter().filter(|&&i| docs[i].terms.is_empty()).count();
            let s = params.vocab.terms_per_doc;
            let (dp_vocab, dp_candidates) = if needs_dp {
                // ε_voc-DP on the training part only; the ledger spend is dropped (module docs).
                let names: Vec<&str> = classes.iter().map(String::as_str).collect();
                let train = split.train.iter().map(|&i| (Some(docs[i].class), docs[i].terms.as_slice()));
                let (mut pv, _spends) = select_from_documents(train, &names, public, &params.vocab, rng)?;
                if params.partition_selection {
                    let histograms = if params.vocab.per_class { classes.len() } else { 1 };
                    let tau = crate::dp::vocabulary::noise_threshold(public.len() * histograms, &params.vocab, 1.0);
                    let keep = pv.terms.iter().filter(|t| t.best_noisy_count.or(t.noisy_count).is_some_and(|c| c >= tau)).count().max(1);
                    pv.terms.truncate(keep);
                }
                (pv.terms.iter().map(|t| t.id).collect(), kde_candidates(&pv, params.candidates))
            } else {
                (Vec::new(), Vec::new())
            };
            let exact_vocab = if needs_exact {
                exact_top_n(&docs, &split.train, s, params.vocab.top_n, params.vocab.per_class.then_some(classes.len()))
            } else {
                Vec::new()
            };
            let kept = split.train.iter().map(|&i| (docs[i].class, docs[i].terms.as_slice()));
            let distinctive = Distinctive::of(kept, classes.len());
            if needs_dp {
                let mut first_s: HashMap<TermId, usize> = HashMap::new();
                split.train.iter().flat_map(|&i| docs[i].terms.iter().take(s)).for_each(|&t| *first_s.entry(t).or_default() += 1);
                diagnoses.push(distinctive.vocab(&dp_vocab, &exact_vocab, &first_s));
            }
            rounds.push(Round { seed, split, dp_vocab, dp_candidates, exact_vocab, distinctive: Some(distinctive) });
        }
        progress("splitting and drawing vocabularies", params.seeds.len(), params.seeds.len());
        let r0 = &rounds[0].split;
        let n_rounds = rounds.len() as f64;
        let summary = TaskSummary {
            classes: classes.clone(),
            class_docs,
            documents: docs.len(),
            train_docs: r0.train.len(),
            test_docs: r0.test.len(),
            unlabelled_left_out: unlabelled,
            other_left_out: other,
            test_docs_without_terms: no_terms_test as f64 / n_rounds,
            train_docs_without_terms: no_terms_train as f64 / n_rounds,
            dp_vocabulary_terms: rounds.iter().map(|r| r.dp_vocab.len()).sum::<usize>() as f64 / n_rounds,
            dp_candidates: rounds.iter().map(|r| r.dp_candidates.len()).sum::<usize>() as f64 / n_rounds,
            vocabulary_diagnosis: (!diagnoses.is_empty()).then(|| VocabDiagnosis::mean(&diagnoses)),
        };
        Ok(Evaluation { params, classes, docs, sources, summary, rounds })
    }

    pub fn summary(&self) -> &TaskSummary {
        &self.summary
    }

    pub fn params(&self) -> &EvalParams {
        &self.params
    }

    /// Indices (in the matched corpus) of the task's documents, in the order
    /// [`Evaluation::text_view`] expects their text embeddings.
    pub fn documents(&self) -> &[usize] {
        &self.sources
    }

    /// Every term whose embedding [`Evaluation::run`] reads: the task documents' first
    /// max(L, M) terms and every round's vocabularies. Embed them once.
    pub fn terms_to_embed(&self) -> Vec<TermId> {
        let take = self.params.len.max(self.params.kde_terms_per_doc);
        let mut ids: Vec<TermId> = self.docs.iter().flat_map(|d| d.terms.iter().take(take).copied()).collect();
        for r in &self.rounds {
            ids.extend_from_slice(&r.dp_vocab);
            ids.extend_from_slice(&r.exact_vocab);
        }
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Runs every arm for every seed. `rng` supplies the DP-KDE noise and the sampling draws.
    pub fn run(&self, emb: &TermEmbeddings, rng: &mut SecureRng, progress: Progress<'_>) -> Result<EvalReport, EvalError> {
        self.run_with(emb, rng, progress, &mut |_| Ok(()))
    }

    /// [`Evaluation::run`], handing each sampler arm's training sequences (one seed's, the
    /// classes that generation would keep) to `sequences` as they are drawn: the input of a
    /// benchmark that generates documents from them (`dpkps evaluate --export-sequences`).
    pub fn run_with(
        &self,
        emb: &TermEmbeddings,
        rng: &mut SecureRng,
        progress: Progress<'_>,
        sequences: &mut dyn FnMut(ArmSequences<'_>) -> Result<(), EvalError>,
    ) -> Result<EvalReport, EvalError> {
        let p = &self.params;
        // A sampler arm whose release the mechanism would refuse (public inputs only: the
        // Markov sampler's size cap, at the largest vocabulary of any round) is reported as
        // refused, and the other arms run.
        let mut arms: Vec<(String, KeyphraseSampler, bool)> = Vec::new();
        let mut refused: Vec<RefusedArm> = Vec::new();
        for &sampler in &p.samplers {
            for noiseless in [false, true] {
                if noiseless && !p.no_dp_arms {
                    continue;
                }
                let arm = format!("{}-{}", if noiseless { "nodp" } else { "dp" }, sampler.name());
                let largest = self.rounds.iter().map(|r| arm_vocab(r, sampler, noiseless).len()).max().unwrap_or(0);
                match p.summary_params(sampler, noiseless).check_release_size(largest, self.classes.len()) {
                    Ok(()) => arms.push((arm, sampler, noiseless)),
                    Err(e @ SummaryError::TooLarge { .. }) => refused.push(RefusedArm { arm, reason: e.to_string() }),
                    Err(e) => return Err(e.into()),
                }
            }
        }
        let total = (2 + arms.len()) * self.rounds.len();
        let mut done = 0;
        let mut results: Vec<((String, &'static str), RunResult)> = Vec::new();
        let mut empty: Vec<NotScored> = Vec::new();
        let kde_emb = emb;
        for round in &self.rounds {
            let seq = |i: usize| &self.docs[i].terms[..self.docs[i].terms.len().min(p.len)];
            let test: Vec<(&[TermId], usize)> =
                round.split.test.iter().filter(|&&i| !self.docs[i].terms.is_empty()).map(|&i| (seq(i), self.docs[i].class)).collect();
            if test.is_empty() {
                return Err(EvalError::NoTestDocs);
            }
            let truth: Vec<usize> = test.iter().map(|t| t.1).collect();

            progress(&format!("seed {}: majority", round.seed), done, total);
            results.push((("majority".into(), "none"), self.majority(round, &truth)));
            done += 1;

            progress(&format!("seed {}: nonprivate", round.seed), done, total);
            let train: Vec<(Vec<TermId>, usize)> = round
                .split
                .train
                .iter()
                .filter(|&&i| !self.docs[i].terms.is_empty())
                .map(|&i| (seq(i).to_vec(), self.docs[i].class))
                .collect();
            self.score(BASELINE_ARM, round.seed, &train, &test, emb, None, &mut results)?;
            done += 1;

            for (arm, sampler, noiseless) in &arms {
                let (sampler, noiseless) = (*sampler, *noiseless);
                progress(&format!("seed {}: {arm}", round.seed), done, total);
                let params = p.summary_params(sampler, noiseless);
                let sampled = self.sample_arm(round, arm_vocab(round, sampler, noiseless), &params, noiseless, kde_emb, rng)?;
                if sampled.train.is_empty() {
                    // Every class noise-dominated: generation would send nothing, so there is
                    // nothing to train on (reported, not scored).
                    empty.push(NotScored {
                        arm: arm.clone(),
                        seed: round.seed,
                        reason: "every class's release is noise-dominated: nothing would be generated".into(),
                    });
                    done += 1;
                    continue;
                }
                sequences(ArmSequences { arm, seed: round.seed, noiseless, classes: &self.classes, sequences: &sampled.train })?;
                let before = results.len();
                self.score(arm, round.seed, &sampled.train, &test, emb, Some(params.features), &mut results)?;
                for (_, r) in &mut results[before..] {
                    r.full_length_share = Some(sampled.full_length_share);
                    r.noise_dominated = sampled.noise_dominated.clone();
                    r.sequences = sampled.diagnosis.clone();
                }
                done += 1;
            }
        }
        progress("done", total, total);
        Ok(EvalReport {
            note: NOTE.into(),
            params: self.params.clone(),
            task: self.summary.clone(),
            arms: aggregate(results),
            synthetic: Vec::new(),
            refused,
            nothing_to_train: empty,
        })
    }

    /// Builds one arm's KDEs from the round's training documents and samples its sequences.
    /// An empty `train` (every class noise-dominated) is reported by the caller, not scored.
    pub(super) fn sample_arm(
        &self,
        round: &Round,
        vocab: &[TermId],
        params: &SummaryParams,
        noiseless: bool,
        emb: &TermEmbeddings,
        rng: &mut SecureRng,
    ) -> Result<Sampled, EvalError> {
        let take = params.doc_terms_read();
        let summary_docs: Vec<SummaryDoc<'_>> = round
            .split
            .train
            .iter()
            .map(|&i| {
                let d = &self.docs[i];
                SummaryDoc { class: d.class, terms: &d.terms[..d.terms.len().min(take)] }
            })
            .collect();
        let classes = ClassSet::declared(&self.classes, OtherLabels::Drop)?;
        // The spends are dropped by `run` (nothing built there is released, module docs) and
        // added up by the DP check (`super::dp_check`).
        let inputs = SummaryInputs { docs: &summary_docs, classes: &classes, emb, candidates: vocab, params };
        let (set, mut spends) = if noiseless {
            let mut seed = [0u8; 32];
            rng.fill(&mut seed);
            // The noise switch exists for this comparison only (see `kde::Noise`).
            crate::dp::summary::build_with(inputs, seed, Noise::Off)?
        } else {
            crate::dp::summary::build(inputs, rng)?
        };
        let cands = if params.needs().candidate_vectors { Candidates::new(vocab, emb)? } else { Candidates::without_vectors(vocab, emb.dim()) };
        let sizes = match self.params.class_counts_epsilon {
            None => vec![self.params.per_class; self.classes.len()],
            Some(eps) => {
                let mut counts = vec![0u64; self.classes.len()];
                round.split.train.iter().for_each(|&i| counts[self.docs[i].class] += 1);
                let noisy = if noiseless {
                    counts.iter().map(|&c| c as i64).collect()
                } else {
                    let (noisy, spend) = crate::dp::counts::noisy_class_counts(&counts, eps, rng)?;
                    spends.push(spend);
                    noisy
                };
                crate::dp::counts::apportion(self.params.per_class * self.classes.len(), &noisy, 1)
            }
        };
        // Noise-dominated classes, as the run flags them; a noiseless release has no noise to
        // be dominated by.
        let signals = if noiseless { Signals::Skip } else { Signals::Estimate };
        let Drawn { sequences: seqs, signals } = crate::sample::draw(&set, &cands, &sizes, &self.params.sampling, rng, signals)?;
        let full = seqs.iter().filter(|s| s.keyphrases.len() == params.len).count() as f64 / seqs.len().max(1) as f64;
        let flagged: Vec<String> = signals.iter().filter(|c| c.noise_dominated).map(|c| crate::input::classes::class_name(&c.label)).collect();
        let index: HashMap<&str, usize> = self.classes.iter().enumerate().map(|(c, l)| (l.as_str(), c)).collect();
        let diagnosis = round.distinctive.as_ref().map(|d| {
            d.sequences(seqs.iter().filter_map(|s| Some((*index.get(s.label.as_deref()?)?, s.keyphrases.as_slice()))))
        });
        let keep = |s: &crate::sample::Sequence| self.params.include_noise_classes || !crate::sample::signal::is_noise_dominated(&signals, &s.label);
        let train = seqs
            .into_iter()
            .filter(|s| keep(s))
            .filter_map(|s| {
                let c = *index.get(s.label.as_deref()?)?;
                Some((s.keyphrases, c))
            })
            .collect();
        Ok(Sampled { train, full_length_share: full, noise_dominated: flagged, spends, diagnosis })
    }

    /// Trains on `train` and tests on `test` in both sequence views.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn score(
        &self,
        arm: &str,
        seed: u64,
        train: &[(Vec<TermId>, usize)],
        test: &[(&[TermId], usize)],
        emb: &TermEmbeddings,
        features: Option<usize>,
        out: &mut Vec<((String, &'static str), RunResult)>,
    ) -> Result<(), EvalError> {
        let k = self.classes.len();
        let y: Vec<usize> = train.iter().map(|t| t.1).collect();
        let truth: Vec<usize> = test.iter().map(|t| t.1).collect();
        let result = |pred: Vec<usize>| RunResult {
            seed,
            accuracy: metrics::accuracy(&truth, &pred),
            macro_f1: metrics::macro_f1(&truth, &pred),
            n_train: train.len(),
            n_test: truth.len(),
            features,
            full_length_share: None,
            noise_dominated: Vec::new(),
            sequences: None,
        };

        out.push(((arm.to_string(), "embedding"), result(self.embedding_view(train, test, emb)?)));

        // Bag-of-keyphrases view: indicators of the terms seen in training.
        let mut columns: BTreeMap<TermId, u32> = BTreeMap::new();
        train.iter().flat_map(|t| t.0.iter()).for_each(|&t| {
            let next = columns.len() as u32;
            columns.entry(t).or_insert(next);
        });
        let bag = |terms: &[TermId]| {
            let mut row: Vec<(u32, f64)> = terms.iter().filter_map(|t| columns.get(t).map(|&j| (j, 1.0))).collect();
            row.sort_unstable_by_key(|e| e.0);
            row.dedup_by_key(|e| e.0);
            row
        };
        let (mut train_b, mut test_b) = (Rows::new(columns.len()), Rows::new(columns.len()));
        train.iter().for_each(|t| train_b.push_sparse(&bag(&t.0)));
        test.iter().for_each(|t| test_b.push_sparse(&bag(t.0)));
        let model = Softmax::fit(&train_b, &y, k, &self.params.classifier)?;
        out.push(((arm.to_string(), "bag"), result(model.predict(&test_b))));
        Ok(())
    }

    /// The embedding view's predictions for `test`: softmax regression trained on `train`'s
    /// standardised mean embeddings (nothing but `train` fits the model).
    pub(super) fn embedding_view(&self, train: &[(Vec<TermId>, usize)], test: &[(&[TermId], usize)], emb: &TermEmbeddings) -> Result<Vec<usize>, EvalError> {
        let y: Vec<usize> = train.iter().map(|t| t.1).collect();
        let train_x = train.iter().map(|t| mean_embedding(&t.0, emb)).collect::<Result<Vec<_>, _>>()?;
        let test_x = test.iter().map(|t| mean_embedding(t.0, emb)).collect::<Result<Vec<_>, _>>()?;
        let st = Standardiser::fit(&train_x);
        let model = Softmax::fit(&st.design(&train_x), &y, self.classes.len(), &self.params.classifier)?;
        Ok(model.predict(&st.design(&test_x)))
    }

    /// An evaluation of one round over given documents and classes, for the DP check
    /// (`super::dp_check`), which draws its own split and Ṽ; its task summary is left empty
    /// (the check shows none of it).
    pub(super) fn of_round(params: EvalParams, classes: Vec<String>, docs: Vec<Doc>, round: Round) -> Evaluation {
        let summary = TaskSummary { classes: classes.clone(), ..TaskSummary::default() };
        Evaluation { params, classes, sources: Vec::new(), docs, summary, rounds: vec![round] }
    }

    /// The floor: always predict the training part's most frequent class.
    pub(super) fn majority(&self, round: &Round, truth: &[usize]) -> RunResult {
        let mut counts = vec![0usize; self.classes.len()];
        round.split.train.iter().for_each(|&i| counts[self.docs[i].class] += 1);
        let majority = (0..counts.len()).fold(0, |best, c| if counts[c] > counts[best] { c } else { best });
        let pred = vec![majority; truth.len()];
        RunResult {
            seed: round.seed,
            accuracy: metrics::accuracy(truth, &pred),
            macro_f1: metrics::macro_f1(truth, &pred),
            n_train: round.split.train.len(),
            n_test: truth.len(),
            features: None,
            full_length_share: None,
            noise_dominated: Vec::new(),
            sequences: None,
        }
    }

    /// The text view: a classifier on sentence-model embeddings of whole texts. `doc_text[i]`
    /// embeds the text of `documents()[i]`; each synthetic set is a name and (embedding,
    /// label) pairs. Arms, each tested on every held-out document's text, for each seed's
    /// split:
    /// - per set, `synthetic` (one set) or `synthetic:NAME`, trained on its texts; and
    ///   `real-text-same-count` (one set) or `real-text-same-count:NAME`, trained on as many
    ///   real training documents per class as the set has (drawn with the seed; fewer where a
    ///   class has fewer): the paper's comparison at equal size;
    /// - `real-text`, trained on every training document's text: the reference;
    /// - `majority`.
    ///
    /// Synthetic labels must be class names; in a one-vs-rest task every label other than the
    /// positive one counts as [`REST`](super::REST).
    pub fn text_view(
        &self,
        doc_text: &[Vec<f32>],
        synthetic: &[(String, Vec<(Vec<f32>, String)>)],
        progress: Progress<'_>,
    ) -> Result<(Vec<ArmReport>, Vec<SyntheticSummary>), EvalError> {
        if doc_text.len() != self.docs.len() {
            return Err(EvalError::TextCount { expected: self.docs.len(), got: doc_text.len() });
        }
        let index: HashMap<&str, usize> = self.classes.iter().enumerate().map(|(c, l)| (l.trim(), c)).collect();
        let class_of = |label: &str| match &self.params.task {
            Task::OneVsRest { positive, .. } => Some(if label.trim() == positive.trim() { 0 } else { 1 }),
            _ => index.get(label.trim()).copied(),
        };
        let k = self.classes.len();
        let mut sets: Vec<(String, Vec<(Vec<f64>, usize)>)> = Vec::with_capacity(synthetic.len());
        let mut summaries = Vec::with_capacity(synthetic.len());
        for (name, pairs) in synthetic {
            let syn: Vec<(Vec<f64>, usize)> =
                pairs.iter().filter_map(|(v, l)| class_of(l).map(|c| (v.iter().map(|&x| x as f64).collect(), c))).collect();
            if syn.is_empty() {
                return Err(EvalError::NoSyntheticForTask { classes: self.classes.join(", ") });
            }
            let mut per_class = vec![0usize; k];
            syn.iter().for_each(|(_, c)| per_class[*c] += 1);
            summaries.push(SyntheticSummary {
                name: name.clone(),
                documents: pairs.len(),
                used: syn.len(),
                unknown_label_left_out: pairs.len() - syn.len(),
                per_class,
            });
            let suffix = if synthetic.len() == 1 { String::new() } else { format!(":{name}") };
            sets.push((suffix, syn));
        }
        let as_f64 = |i: usize| doc_text[i].iter().map(|&x| x as f64).collect::<Vec<f64>>();
        let mut results = Vec::new();
        for (r, round) in self.rounds.iter().enumerate() {
            progress("text view", r, self.rounds.len());
            let test_x: Vec<Vec<f64>> = round.split.test.iter().map(|&i| as_f64(i)).collect();
            let truth: Vec<usize> = round.split.test.iter().map(|&i| self.docs[i].class).collect();
            let real: Vec<(Vec<f64>, usize)> = round.split.train.iter().map(|&i| (as_f64(i), self.docs[i].class)).collect();
            let mut arms: Vec<(String, Vec<(Vec<f64>, usize)>)> = Vec::new();
            for ((suffix, syn), summary) in sets.iter().zip(&summaries) {
                arms.push((format!("synthetic{suffix}"), syn.clone()));
                arms.push((format!("real-text-same-count{suffix}"), same_count(&real, &summary.per_class, round.seed)));
            }
            arms.push(("real-text".into(), real));
            for (arm, train) in arms {
                let x: Vec<Vec<f64>> = train.iter().map(|t| t.0.clone()).collect();
                let y: Vec<usize> = train.iter().map(|t| t.1).collect();
                let st = Standardiser::fit(&x);
                let model = Softmax::fit(&st.design(&x), &y, k, &self.params.classifier)?;
                let pred = model.predict(&st.design(&test_x));
                results.push((
                    (arm, "text"),
                    RunResult {
                        seed: round.seed,
                        accuracy: metrics::accuracy(&truth, &pred),
                        macro_f1: metrics::macro_f1(&truth, &pred),
                        n_train: train.len(),
                        n_test: truth.len(),
                        features: None,
                        full_length_share: None,
                        noise_dominated: Vec::new(),
                        sequences: None,
                    },
                ));
            }
            results.push((("majority".into(), "text"), self.majority(round, &truth)));
        }
        progress("text view", self.rounds.len(), self.rounds.len());
        Ok((aggregate(results), summaries))
    }
}

/// Of the real training rows, as many per class as `per_class` says (all of a class that has
/// fewer), drawn without replacement with `seed`, in their order.
fn same_count(real: &[(Vec<f64>, usize)], per_class: &[usize], seed: u64) -> Vec<(Vec<f64>, usize)> {
    let mut out = Vec::new();
    for (c, &want) in per_class.iter().enumerate() {
        let rows: Vec<&(Vec<f64>, usize)> = real.iter().filter(|r| r.1 == c).collect();
        for i in super::split::subsample(rows.len(), want, seed.wrapping_add(c as u64)) {
            out.push(rows[i].clone());
        }
    }
    out
}

/// One sampler arm's training sequences for one seed, as [`Evaluation::run_with`] hands them
/// out: term ids and class indices into `classes`.
pub struct ArmSequences<'a> {
    pub arm: &'a str,
    pub seed: u64,
    /// Drawn with the noise switched off: NOT differentially private.
    pub noiseless: bool,
    pub classes: &'a [String],
    pub sequences: &'a [(Vec<TermId>, usize)],
}

/// One sampler arm's sequences (those training uses) and what the run would report of them.
pub(super) struct Sampled {
    pub(super) train: Vec<(Vec<TermId>, usize)>,
    full_length_share: f64,
    pub(super) noise_dominated: Vec<String>,
    /// The arm's DP spends (dropped by the non-DP evaluation; the DP check adds them up).
    pub(super) spends: Vec<crate::ledger::Spend>,
    diagnosis: Option<SequenceDiagnosis>,
}

/// The vocabulary a sampler arm draws from in `round`: the exact top-N (noiseless arms), or
/// [`dp_arm_vocab`].
fn arm_vocab(round: &Round, sampler: KeyphraseSampler, noiseless: bool) -> &[TermId] {
    if noiseless {
        &round.exact_vocab
    } else {
        dp_arm_vocab(round, sampler)
    }
}

/// The vocabulary a DP arm draws from: Ṽ itself for a release whose entries are Ṽ's terms
/// (the histograms: [`crate::dp::summary::Family::keeps_candidates`]), else Ṽ's terms under
/// `EvalParams::candidates` (the DP-KDEs score any candidate).
pub(super) fn dp_arm_vocab(round: &Round, sampler: KeyphraseSampler) -> &[TermId] {
    if sampler.family().keeps_candidates() {
        &round.dp_vocab
    } else {
        &round.dp_candidates
    }
}

/// The mean of the unit term embeddings of a sequence.
fn mean_embedding(terms: &[TermId], emb: &TermEmbeddings) -> Result<Vec<f64>, EvalError> {
    let mut m = vec![0.0; emb.dim()];
    for &t in terms {
        let v = emb.get(t).ok_or(SummaryError::MissingEmbedding(t))?;
        m.iter_mut().zip(v).for_each(|(a, &b)| *a += b as f64);
    }
    let n = terms.len().max(1) as f64;
    m.iter_mut().for_each(|a| *a /= n);
    Ok(m)
}
