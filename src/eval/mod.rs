//! Utility evaluation without an LLM (DP-KPS appendix C.2.2, C.2.4, Table 5; issue 7).
//!
//! Hold out part of the labelled corpus, run the DP pipeline on the rest, train a classifier
//! on the DP keyphrase sequences and test it on the held-out real documents turned into
//! keyphrase sequences. Compared with the same classifier trained on the training documents'
//! own sequences (an upper bound) and with the majority class (a floor), this says cheaply
//! how much class signal the DP sequences keep, per sampler, which is how the paper chooses
//! between the independent and the iterative samplers for a dataset.
//!
//! # Privacy: the evaluation is NOT differentially private
//! Its figures are computed from private documents (the held-out documents' labels and
//! keyphrases, the training documents' sequences, the exact class counts). They are for the
//! curator, like the ingestion counts, and must not be published as if they were DP. The
//! report says so in its `note`. Nothing here releases an artefact either: the DP vocabularies
//! and DP-KDEs built inside an evaluation are dropped when it ends, so evaluation runs are not
//! recorded in the privacy ledger (the ledger counts what was released; a curator who
//! evaluates and then runs the pipeline pays only for the pipeline run's release).
//!
//! # Arms
//! - `dp-<sampler>`: ε_voc-DP vocabulary and ε_kde-DP KDEs from the training part, then
//!   `per_class` sampled sequences per class: the classifier's training set.
//! - `nodp-<sampler>` (optional): the same samplers with the noise switched off (the exact top-N
//!   vocabulary, noiseless KDE sums): what DP noise costs, separately from what the
//!   keyphrase-sequence representation and the KDE sampling cost.
//! - `nonprivate`: the training documents' own sequences (upper bound).
//! - `majority`: always the most frequent training class (floor).
//!
//! Each sequence-trained arm is scored in two views, with the same hyper-parameters for every
//! arm: `embedding` (softmax regression on the standardised mean embedding of the sequence's
//! keyphrases) and `bag` (softmax regression on indicators of the keyphrases that occur in the
//! arm's training sequences). Everything is repeated over several seeds (a fresh split and
//! fresh DP noise each time) and reported as mean and spread.
//!
//! # Test documents
//! A held-out document becomes the sequence of its first L distinct matched public-vocabulary
//! terms: the rule the pipeline uses for the documents the DP-KDE sees
//! ([`MatchedCorpus::kde_docs`]). A held-out document with no matched term has no sequence; it
//! is left out of the sequence views' test set and counted (`test_docs_without_terms`). The
//! majority arm is scored on the same test set, so the arms stay comparable.
//!
//! # Use
//! [`Evaluation::prepare`] checks the parameters, shapes the task, draws the splits and the
//! vocabularies; the caller embeds [`Evaluation::terms_to_embed`] once (any
//! [`crate::embed::Embed`]); [`Evaluation::run`] does the rest, reusing those embeddings for
//! every arm and seed. [`Evaluation::text_view`] scores synthetic documents (e.g. LLM output)
//! by their text embeddings. No I/O, no web types: the same code can run in a Web Worker.

pub mod classifier;
pub mod diagnose;
pub mod metrics;
pub mod split;

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::classes::{ClassSet, OtherLabels};
use crate::dp::candidates::CandidateRule;
use crate::dp::vocabulary::{round_robin, select_from_documents, VocabParams};
use crate::dp::{DpError, ParamError, SecureRng};
use crate::embed::TermEmbeddings;
use crate::dp::summary::{SummaryDoc, SummaryError, SummaryParams, Noise, KeyphraseSampler};
use crate::pipeline::MatchedCorpus;
use crate::sample::Candidates;
use crate::public_vocab::{PublicVocabulary, TermId};

use classifier::{ClassifierError, Rows, Softmax, SoftmaxParams, Standardiser};
use split::Split;

/// The note every report carries.
pub const NOTE: &str = "NOT differentially private: these figures are computed on the private corpus \
(held-out documents, training sequences, exact class counts). Keep them with the curator; \
evaluation runs release nothing and are not recorded in the privacy ledger.";

/// The label of the "everything else" class of a one-vs-rest task.
pub const REST: &str = "(rest)";

/// I for the noiseless arms when none is given: the largest value the DP rule picks. Without
/// noise, more features only reduce the random-feature error.
pub const NODP_FEATURES: usize = 4096;

/// Which classification task to evaluate on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Task {
    /// Every label of the corpus is a class.
    AllClasses,
    /// One label against all the others (relabelled [`REST`]); with `balance`, the rest is
    /// subsampled (seeded) to the size of the positive class.
    OneVsRest { positive: String, balance: bool },
    /// The `k` most frequent labels (ties by name); other documents are left out.
    TopClasses { k: usize },
    /// Every label with at least `min` documents; other documents are left out.
    MinClassDocs { min: usize },
}

/// Everything an evaluation needs besides the data. Serialised into the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalParams {
    pub task: Task,
    /// Fraction of each class held out for testing, in (0, 1).
    pub holdout: f64,
    /// One repetition per seed: the seed fixes the split (and the balancing of the first seed
    /// fixes the task's documents). DP noise is fresh every time (OS randomness).
    pub seeds: Vec<u64>,
    /// ε_voc, N, S.
    pub vocab: VocabParams,
    pub eps_kde: f64,
    /// L.
    pub len: usize,
    /// I; `None`: the pipeline's data-independent default for the DP arms, [`NODP_FEATURES`]
    /// for the noiseless ones.
    pub features: Option<usize>,
    /// M (the independent sampler's keyphrases per document).
    pub kde_terms_per_doc: usize,
    /// Sequences sampled per class for each sampler arm.
    pub per_class: usize,
    pub samplers: Vec<KeyphraseSampler>,
    /// Also run the samplers with the noise switched off (`nodp-*` arms).
    pub no_dp_arms: bool,
    /// Kernel bandwidth h of the KDEs and samplers (`SummaryParams::bandwidth`).
    #[serde(default = "one")]
    pub bandwidth: f64,
    /// Smoothing of the histogram samplers (`SummaryParams::smoothing`; 0: off).
    #[serde(default)]
    pub smoothing: f64,
    /// ε of the DP class counts (`dp::counts`): sequences per class in proportion to them
    /// (the noiseless arms use the exact counts); `None`: `per_class` for every class.
    #[serde(default)]
    pub class_counts_epsilon: Option<f64>,
    /// Which of Ṽ's terms the DP-KDE arms draw from (`dp::candidates`); the noiseless arms'
    /// exact vocabulary has no noise words and is read whole.
    #[serde(default)]
    pub candidates: CandidateRule,
    pub classifier: SoftmaxParams,
}

fn one() -> f64 {
    1.0
}

impl EvalParams {
    pub const MAX_SEEDS: usize = 100;
    pub const MAX_PER_CLASS: usize = 100_000;

    /// Checks everything that does not need the data.
    pub fn validate(&self, public_len: usize) -> Result<(), ParamError> {
        if !(self.holdout > 0.0 && self.holdout < 1.0) {
            return Err(ParamError::new("the held-out fraction", self.holdout, "must be strictly between 0 and 1"));
        }
        if self.seeds.is_empty() || self.seeds.len() > Self::MAX_SEEDS {
            return Err(ParamError::new("the number of seeds", self.seeds.len(), "must be between 1 and 100"));
        }
        if self.per_class == 0 || self.per_class > Self::MAX_PER_CLASS {
            return Err(ParamError::new("sequences per class", self.per_class, "must be between 1 and 100000"));
        }
        match &self.task {
            Task::TopClasses { k } if *k < 2 => {
                return Err(ParamError::new("the number of top classes", k, "must be at least 2"));
            }
            Task::OneVsRest { positive, .. } if positive.trim().is_empty() => {
                return Err(ParamError::new("the positive class", "\"\"", "must be a label of the corpus"));
            }
            _ => {}
        }
        if let Some(e) = self.class_counts_epsilon {
            crate::dp::check_epsilon("ε for the class counts", e)?;
        }
        if !(self.classifier.l2.is_finite() && self.classifier.l2 >= 0.0) {
            return Err(ParamError::new("the L2 penalty", self.classifier.l2, "must be a finite number ≥ 0"));
        }
        self.vocab.validate(public_len)?;
        // The KDE parameters (ε_kde, L, I, M, bandwidth h) are judged by the pipeline's own check.
        for &sampler in &self.samplers {
            self.kde_params(sampler, false).validate()?;
        }
        Ok(())
    }

    /// Terms per document the matched corpus must have kept.
    pub fn keep(&self) -> usize {
        let read = self.samplers.iter().map(|&s| self.kde_params(s, false).doc_terms_read()).max().unwrap_or(0);
        self.len.max(self.kde_terms_per_doc).max(self.vocab.terms_per_doc).max(read)
    }

    /// The KDE parameters of one arm: I as given, else the pipeline's data-independent
    /// default (DP arms) or [`NODP_FEATURES`] (noiseless arms).
    fn kde_params(&self, sampler: KeyphraseSampler, noiseless: bool) -> SummaryParams {
        let features = self.features.unwrap_or(if noiseless { NODP_FEATURES } else { SummaryParams::DEFAULT_FEATURES });
        SummaryParams {
            epsilon: self.eps_kde,
            sampler,
            len: self.len,
            features,
            terms_per_doc: self.kde_terms_per_doc,
            bandwidth: self.bandwidth,
            smoothing: self.smoothing,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    Param(#[from] ParamError),
    #[error("the evaluation needs labelled documents, and no document has a label (give the label column)")]
    NoLabels,
    #[error("no document has the label {label:?}; the labels are: {available}")]
    UnknownLabel { label: String, available: String },
    #[error("the task has {classes} class(es) but needs at least 2 (labels of the corpus: {available})")]
    TooFewClasses { classes: usize, available: String },
    #[error("the class {label:?} has only {docs} document(s); each class needs at least {min} (so that it has documents on both sides of the split); choose fewer classes (top classes, one-vs-rest) or a larger corpus")]
    ClassTooSmall { label: String, docs: usize, min: usize },
    #[error("the documents were matched keeping {kept} terms each, but the evaluation needs {needed}")]
    Keep { kept: usize, needed: usize },
    #[error("the test part has no document with a matched vocabulary term, so there is nothing to test on")]
    NoTestDocs,
    #[error("{got} text embeddings were given for {expected} documents")]
    TextCount { expected: usize, got: usize },
    #[error("no synthetic document has the label of a class of this task ({classes})")]
    NoSyntheticForTask { classes: String },
    #[error(transparent)]
    Dp(#[from] DpError),
    #[error(transparent)]
    Kde(#[from] SummaryError),
    #[error("the classifier could not be trained: {0}")]
    Classifier(#[from] ClassifierError),
}

/// What the task came to (exact counts: private, like everything in the report).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSummary {
    pub classes: Vec<String>,
    /// Documents per class, in the order of `classes`.
    pub class_docs: Vec<usize>,
    pub documents: usize,
    pub train_docs: usize,
    pub test_docs: usize,
    /// Documents of the corpus without a label: left out.
    pub unlabelled_left_out: usize,
    /// Documents of labels outside the task (top classes) or dropped by balancing: left out.
    pub other_left_out: usize,
    /// Held-out documents without any matched term, mean over seeds (module docs).
    pub test_docs_without_terms: f64,
    /// Training documents without any matched term (no sequence for `nonprivate`), mean.
    pub train_docs_without_terms: f64,
    /// Terms of Ṽ and of them the DP-KDE arms' candidates (`EvalParams::candidates`), mean
    /// over seeds (0 without DP arms).
    #[serde(default)]
    pub dp_vocabulary_terms: f64,
    #[serde(default)]
    pub dp_candidates: f64,
}

/// One repetition of one arm in one view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub seed: u64,
    pub accuracy: f64,
    pub macro_f1: f64,
    pub n_train: usize,
    pub n_test: usize,
    /// I used by the KDE (sampler arms only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub features: Option<usize>,
}

/// One arm in one view, over all seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmReport {
    pub arm: String,
    /// `embedding`, `bag`, `text`, or `none` (the majority class).
    pub view: String,
    pub accuracy_mean: f64,
    pub accuracy_std: f64,
    pub macro_f1_mean: f64,
    pub macro_f1_std: f64,
    /// Training examples and test documents (means over seeds, rounded).
    pub n_train: usize,
    pub n_test: usize,
    pub runs: Vec<RunResult>,
}

/// The evaluation's result (serialisable; the CLI writes it as JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    pub note: String,
    pub params: EvalParams,
    pub task: TaskSummary,
    pub arms: Vec<ArmReport>,
    /// Synthetic documents read for the text view, and those left out (unknown label).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<SyntheticSummary>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyntheticSummary {
    pub documents: usize,
    pub used: usize,
    pub unknown_label_left_out: usize,
}

/// A document of the task: its class and first matched terms.
struct Doc {
    class: usize,
    terms: Vec<TermId>,
}

/// One repetition: its split and the vocabularies drawn from its training part.
struct Round {
    seed: u64,
    split: Split,
    /// Ṽ (ε_voc-DP), when there are DP sampler arms.
    dp_vocab: Vec<TermId>,
    /// What the DP-KDE arms draw from: Ṽ's terms under `EvalParams::candidates`.
    dp_candidates: Vec<TermId>,
    /// The exact top-N vocabulary, when there are noiseless arms.
    exact_vocab: Vec<TermId>,
}

/// A prepared evaluation (module docs, "Use").
pub struct Evaluation {
    params: EvalParams,
    classes: Vec<String>,
    docs: Vec<Doc>,
    /// Index in the matched corpus of every task document (to find its text).
    sources: Vec<usize>,
    summary: TaskSummary,
    rounds: Vec<Round>,
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
        params.validate(public.len())?;
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
        let needs_exact = needs_dp && params.no_dp_arms;
        let mut rounds = Vec::with_capacity(params.seeds.len());
        let (mut no_terms_test, mut no_terms_train) = (0usize, 0usize);
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
                let (pv, _spends) = select_from_documents(train, &names, public, &params.vocab, rng)?;
                (pv.terms.iter().map(|t| t.id).collect(), pv.kde_candidates(params.candidates))
            } else {
                (Vec::new(), Vec::new())
            };
            let exact_vocab = if needs_exact {
                exact_top_n(&docs, &split.train, s, params.vocab.top_n, params.vocab.per_class.then_some(classes.len()))
            } else {
                Vec::new()
            };
            rounds.push(Round { seed, split, dp_vocab, dp_candidates, exact_vocab });
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
        let p = &self.params;
        let arms_per_round = 2 + p.samplers.len() * (1 + usize::from(p.no_dp_arms));
        let total = arms_per_round * self.rounds.len();
        let mut done = 0;
        let mut results: Vec<((String, &'static str), RunResult)> = Vec::new();
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
            self.score("nonprivate", round.seed, &train, &test, emb, None, &mut results)?;
            done += 1;

            for &sampler in &p.samplers {
                for noiseless in [false, true] {
                    if noiseless && !p.no_dp_arms {
                        continue;
                    }
                    let arm = format!("{}-{}", if noiseless { "nodp" } else { "dp" }, sampler.name());
                    progress(&format!("seed {}: {arm}", round.seed), done, total);
                    let params = p.kde_params(sampler, noiseless);
                    let vocab = match (noiseless, sampler.hist_kind()) {
                        (true, _) => &round.exact_vocab,
                        (false, Some(_)) => &round.dp_vocab,
                        (false, None) => &round.dp_candidates,
                    };
                    let seqs = self.sample_arm(round, vocab, &params, noiseless, kde_emb, rng)?;
                    self.score(&arm, round.seed, &seqs, &test, emb, Some(params.features), &mut results)?;
                    done += 1;
                }
            }
        }
        progress("done", total, total);
        Ok(EvalReport {
            note: NOTE.into(),
            params: self.params.clone(),
            task: self.summary.clone(),
            arms: aggregate(results),
            synthetic: None,
        })
    }

    /// Builds one arm's KDEs from the round's training documents and samples its sequences.
    fn sample_arm(
        &self,
        round: &Round,
        vocab: &[TermId],
        params: &SummaryParams,
        noiseless: bool,
        emb: &TermEmbeddings,
        rng: &mut SecureRng,
    ) -> Result<Vec<(Vec<TermId>, usize)>, EvalError> {
        let take = params.doc_terms_read();
        let kde_docs: Vec<SummaryDoc<'_>> = round
            .split
            .train
            .iter()
            .map(|&i| {
                let d = &self.docs[i];
                SummaryDoc { class: d.class, terms: &d.terms[..d.terms.len().min(take)] }
            })
            .collect();
        let classes = ClassSet::declared(&self.classes, OtherLabels::Drop)?;
        // The spends are dropped: nothing built here is released (module docs).
        let (set, _spends) = if noiseless {
            let mut seed = [0u8; 32];
            rng.fill(&mut seed);
            // The noise switch exists for this comparison only (see `kde::Noise`).
            crate::dp::summary::build_with(&kde_docs, &classes, emb, vocab, params, seed, Noise::Off)?
        } else {
            crate::dp::summary::build(&kde_docs, &classes, emb, vocab, params, rng)?
        };
        let cands = Candidates::new(vocab, emb)?;
        let sizes = match self.params.class_counts_epsilon {
            None => vec![self.params.per_class; self.classes.len()],
            Some(eps) => {
                let mut counts = vec![0u64; self.classes.len()];
                round.split.train.iter().for_each(|&i| counts[self.docs[i].class] += 1);
                let noisy = if noiseless {
                    counts.iter().map(|&c| c as i64).collect()
                } else {
                    crate::dp::counts::noisy_class_counts(&counts, eps, rng)?.0
                };
                crate::dp::counts::apportion(self.params.per_class * self.classes.len(), &noisy, 1)
            }
        };
        let seqs = crate::sample::sample_sized(&set, &cands, &sizes, rng)?;
        let index: HashMap<&str, usize> = self.classes.iter().enumerate().map(|(c, l)| (l.as_str(), c)).collect();
        Ok(seqs
            .into_iter()
            .filter_map(|s| {
                let c = *index.get(s.label.as_deref()?)?;
                Some((s.keyphrases, c))
            })
            .collect())
    }

    /// Trains on `train` and tests on `test` in both sequence views.
    #[allow(clippy::too_many_arguments)]
    fn score(
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
        };

        // Embedding view: standardised mean embeddings.
        let train_x = train.iter().map(|t| mean_embedding(&t.0, emb)).collect::<Result<Vec<_>, _>>()?;
        let test_x = test.iter().map(|t| mean_embedding(t.0, emb)).collect::<Result<Vec<_>, _>>()?;
        let st = Standardiser::fit(&train_x);
        let model = Softmax::fit(&st.design(&train_x), &y, k, &self.params.classifier)?;
        out.push(((arm.to_string(), "embedding"), result(model.predict(&st.design(&test_x)))));

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

    /// The floor: always predict the training part's most frequent class.
    fn majority(&self, round: &Round, truth: &[usize]) -> RunResult {
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
        }
    }

    /// The text view: a classifier on sentence-model embeddings of whole texts. `doc_text[i]`
    /// embeds the text of `documents()[i]`; `synthetic` are (embedding, label) pairs. Arms:
    /// `synthetic` (trained on the synthetic texts), `real-text` (trained on the training
    /// documents' texts: the reference), `majority`; all tested on every held-out document's
    /// text, for each seed's split. Synthetic labels must be class names; in a one-vs-rest
    /// task every label other than the positive one counts as [`REST`].
    pub fn text_view(
        &self,
        doc_text: &[Vec<f32>],
        synthetic: &[(Vec<f32>, String)],
        progress: Progress<'_>,
    ) -> Result<(Vec<ArmReport>, SyntheticSummary), EvalError> {
        if doc_text.len() != self.docs.len() {
            return Err(EvalError::TextCount { expected: self.docs.len(), got: doc_text.len() });
        }
        let index: HashMap<&str, usize> = self.classes.iter().enumerate().map(|(c, l)| (l.trim(), c)).collect();
        let class_of = |label: &str| match &self.params.task {
            Task::OneVsRest { positive, .. } => Some(if label.trim() == positive.trim() { 0 } else { 1 }),
            _ => index.get(label.trim()).copied(),
        };
        let syn: Vec<(Vec<f64>, usize)> = synthetic
            .iter()
            .filter_map(|(v, l)| class_of(l).map(|c| (v.iter().map(|&x| x as f64).collect(), c)))
            .collect();
        let summary =
            SyntheticSummary { documents: synthetic.len(), used: syn.len(), unknown_label_left_out: synthetic.len() - syn.len() };
        if syn.is_empty() {
            return Err(EvalError::NoSyntheticForTask { classes: self.classes.join(", ") });
        }
        let k = self.classes.len();
        let as_f64 = |i: usize| doc_text[i].iter().map(|&x| x as f64).collect::<Vec<f64>>();
        let mut results = Vec::new();
        for (r, round) in self.rounds.iter().enumerate() {
            progress("text view", r, self.rounds.len());
            let test_x: Vec<Vec<f64>> = round.split.test.iter().map(|&i| as_f64(i)).collect();
            let truth: Vec<usize> = round.split.test.iter().map(|&i| self.docs[i].class).collect();
            let real: Vec<(Vec<f64>, usize)> = round.split.train.iter().map(|&i| (as_f64(i), self.docs[i].class)).collect();
            for (arm, train) in [("synthetic", &syn), ("real-text", &real)] {
                let x: Vec<Vec<f64>> = train.iter().map(|t| t.0.clone()).collect();
                let y: Vec<usize> = train.iter().map(|t| t.1).collect();
                let st = Standardiser::fit(&x);
                let model = Softmax::fit(&st.design(&x), &y, k, &self.params.classifier)?;
                let pred = model.predict(&st.design(&test_x));
                results.push((
                    (arm.to_string(), "text"),
                    RunResult {
                        seed: round.seed,
                        accuracy: metrics::accuracy(&truth, &pred),
                        macro_f1: metrics::macro_f1(&truth, &pred),
                        n_train: train.len(),
                        n_test: truth.len(),
                        features: None,
                    },
                ));
            }
            results.push((("majority".into(), "text"), self.majority(round, &truth)));
        }
        progress("text view", self.rounds.len(), self.rounds.len());
        Ok((aggregate(results), summary))
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

/// The exact top-N terms by document frequency among the first S terms of the training
/// documents (ties: lower id), terms with a zero count left out; with `per_class` (the number
/// of classes), the round robin over the classes' own exact rankings, as the DP rule does.
/// NOT private: only for the noiseless comparison arms.
fn exact_top_n(docs: &[Doc], train: &[usize], s: usize, n: usize, per_class: Option<usize>) -> Vec<TermId> {
    let groups = per_class.unwrap_or(1);
    let mut counts: Vec<HashMap<TermId, u64>> = vec![HashMap::new(); groups];
    for &i in train {
        let g = if per_class.is_some() { docs[i].class } else { 0 };
        // Matched terms are already distinct per document.
        docs[i].terms.iter().take(s).for_each(|&t| *counts[g].entry(t).or_insert(0) += 1);
    }
    let ranked: Vec<Vec<TermId>> = counts
        .into_iter()
        .map(|c| {
            let mut all: Vec<(TermId, u64)> = c.into_iter().collect();
            all.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            all.into_iter().map(|(t, _)| t).collect()
        })
        .collect();
    round_robin(&ranked, n)
}

/// The task's classes, its documents as (index in the corpus, class), and how many documents
/// were left out: unlabelled, and of other labels or dropped by balancing.
type Shaped = (Vec<String>, Vec<(usize, usize)>, usize, usize);

/// Picks the task's documents (see [`Shaped`]).
fn shape_task(corpus: &MatchedCorpus, task: &Task, seed: u64) -> Result<Shaped, EvalError> {
    let labelled: Vec<(usize, &str)> =
        corpus.docs.iter().enumerate().filter_map(|(i, d)| d.label.as_deref().map(|l| (i, l))).collect();
    let unlabelled = corpus.docs.len() - labelled.len();
    if labelled.is_empty() {
        return Err(EvalError::NoLabels);
    }
    let mut by_label: BTreeMap<&str, usize> = BTreeMap::new();
    labelled.iter().for_each(|&(_, l)| *by_label.entry(l).or_insert(0) += 1);
    let available = || {
        let mut s: Vec<String> = by_label.keys().take(50).map(|l| format!("{l:?}")).collect();
        if by_label.len() > 50 {
            s.push(format!("… ({} in all)", by_label.len()));
        }
        s.join(", ")
    };
    let (classes, chosen): (Vec<String>, Vec<(usize, usize)>) = match task {
        Task::AllClasses => {
            let classes: Vec<String> = by_label.keys().map(|l| l.to_string()).collect();
            let index: HashMap<&str, usize> = by_label.keys().enumerate().map(|(c, &l)| (l, c)).collect();
            (classes, labelled.iter().map(|&(i, l)| (i, index[l])).collect())
        }
        Task::TopClasses { .. } | Task::MinClassDocs { .. } => {
            let mut ranked: Vec<(&str, usize)> = by_label.iter().map(|(&l, &n)| (l, n)).collect();
            ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let k = match task {
                Task::TopClasses { k } => *k,
                Task::MinClassDocs { min } => ranked.iter().filter(|r| r.1 >= *min).count(),
                _ => unreachable!("matched above"),
            };
            if k > ranked.len() || k < 2 {
                return Err(EvalError::TooFewClasses { classes: k.min(ranked.len()), available: available() });
            }
            ranked.truncate(k);
            let index: HashMap<&str, usize> = ranked.iter().enumerate().map(|(c, &(l, _))| (l, c)).collect();
            let chosen = labelled.iter().filter_map(|&(i, l)| index.get(l).map(|&c| (i, c))).collect();
            (ranked.iter().map(|(l, _)| l.to_string()).collect(), chosen)
        }
        Task::OneVsRest { positive, balance } => {
            let Some(&name) = by_label.keys().find(|l| l.trim() == positive.trim()) else {
                return Err(EvalError::UnknownLabel { label: positive.clone(), available: available() });
            };
            let pos: Vec<usize> = labelled.iter().filter(|&&(_, l)| l == name).map(|&(i, _)| i).collect();
            let mut rest: Vec<usize> = labelled.iter().filter(|&&(_, l)| l != name).map(|&(i, _)| i).collect();
            if *balance && rest.len() > pos.len() {
                rest = split::subsample(rest.len(), pos.len(), seed).into_iter().map(|j| rest[j]).collect();
            }
            let mut chosen: Vec<(usize, usize)> = pos.iter().map(|&i| (i, 0)).chain(rest.iter().map(|&i| (i, 1))).collect();
            chosen.sort_unstable();
            (vec![name.to_string(), REST.to_string()], chosen)
        }
    };
    if classes.len() < 2 {
        return Err(EvalError::TooFewClasses { classes: classes.len(), available: available() });
    }
    let other = labelled.len() - chosen.len();
    Ok((classes, chosen, unlabelled, other))
}

/// Groups run results by (arm, view), keeping the order of first appearance.
fn aggregate(results: Vec<((String, &'static str), RunResult)>) -> Vec<ArmReport> {
    let mut order: Vec<(String, &'static str)> = Vec::new();
    let mut groups: HashMap<(String, &'static str), Vec<RunResult>> = HashMap::new();
    for (key, r) in results {
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(r);
    }
    order
        .into_iter()
        .map(|key| {
            let runs = groups.remove(&key).unwrap_or_default();
            let acc = metrics::spread(&runs.iter().map(|r| r.accuracy).collect::<Vec<_>>());
            let f1 = metrics::spread(&runs.iter().map(|r| r.macro_f1).collect::<Vec<_>>());
            let mean_of = |f: fn(&RunResult) -> usize| {
                (runs.iter().map(|r| f(r) as f64).sum::<f64>() / runs.len().max(1) as f64).round() as usize
            };
            ArmReport {
                arm: key.0,
                view: key.1.to_string(),
                accuracy_mean: acc.mean,
                accuracy_std: acc.std,
                macro_f1_mean: f1.mean,
                macro_f1_std: f1.std,
                n_train: mean_of(|r| r.n_train),
                n_test: mean_of(|r| r.n_test),
                runs,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
