//! The stages of a run, in order, over a [`Host`]: each takes the artefacts of the ones before
//! and returns its own; every DP stage's spends are recorded ([`Recorder`]) before anything
//! computed from them goes further. [`execute`] chains them; the CLI's `vocab` and `sample`
//! commands call one stage each.

use std::rc::Rc;

use crate::dp::vocabulary::{PrivateVocabulary, ReleasedBy};
use crate::dp::SecureRng;
use crate::embed::TermEmbeddings;
use crate::dp::summary::{DpSummary, SummaryDoc, SummaryInputs, SummaryParams};
use crate::ledger::{Ledger, LedgerBook, Run, Spend};
use super::Release;
use crate::input::matched::MatchedCorpus;
use crate::sample::SequenceOut;
use crate::sample::signal::{count_sequences, is_noise_dominated, ClassSignal};
use crate::sample::{Candidates, Drawn, Sequence, Signals};
use crate::input::public_vocab::{PublicVocabulary, TermId};

use super::report::{Checked, PrivacyReport};
use super::reuse::VocabKey;
use super::{RunError, RunPlan, Stage};

/// What differs between a native process and the browser. The futures need not be `Send`
/// (the worker is one thread) and the trait is used generically only.
#[allow(async_fn_in_trait)]
pub trait Host {
    /// The front end's own error; the core's ([`RunError`]) become one through [`Host::fail`].
    type Error;
    /// The core's error `e`, which happened in `stage` (if in one), as this front end's.
    fn fail(&self, stage: Option<Stage>, e: RunError) -> Self::Error;
    /// A stage starts.
    fn stage_started(&mut self, stage: Stage);
    /// A stage is done; `note` says what came of it, in a line.
    fn stage_done(&mut self, stage: Stage, note: String);
    /// Between stages: yields to the event loop and stops if the curator cancelled.
    async fn checkpoint(&mut self) -> Result<(), Self::Error>;
    /// The privacy ledger as recorded now.
    async fn ledger(&mut self) -> Result<LedgerBook, Self::Error>;
    /// Applies `change` to the ledger as recorded now and keeps the result, atomically (a
    /// locked file; one IndexedDB transaction under a Web Lock): another process or tab may
    /// have spent meanwhile, and `change` sees it. If `change` refuses, nothing is kept.
    async fn commit(&mut self, stage: Stage, change: &mut dyn FnMut(&mut LedgerBook) -> Result<(), RunError>) -> Result<(), Self::Error>;
    /// Vectors of `ids` (terms of the public list `vocab`; `released`: Ṽ's terms, which a
    /// host may cache), and the model they belong to.
    async fn vectors(&mut self, vocab: &PublicVocabulary, ids: &[TermId], released: &[TermId]) -> Result<Vectors, Self::Error>;
    /// The DP summaries (ε_kde) of `docs`: [`crate::dp::summary::build`], which a host may share among
    /// helper workers (the exact sums of parts add up to the same integers: the same release).
    async fn summaries(&mut self, inputs: SummaryInputs<'_>, rng: &mut SecureRng) -> Result<(DpSummary, Vec<Spend>), Self::Error> {
        crate::dp::summary::build(inputs, rng).map_err(|e| self.fail(Some(Stage::Summary), e.into()))
    }
    /// Ṽ was drawn and its ε_voc is on record under run `run_id`: a host may keep it for later
    /// runs (the page does: `reuse`), even if this run fails later.
    fn vocabulary_recorded(&mut self, _pv: &Rc<PrivateVocabulary>, _run_id: &str) {}
    /// Now, as an ISO 8601 UTC time.
    fn now(&self) -> String;
}

/// Vectors for a run and the model they come from.
pub struct Vectors {
    pub emb: TermEmbeddings,
    pub model: Checked,
    /// Where they came from, in a line (the embedding stage's note).
    pub note: String,
}

/// Where the run's private vocabulary Ṽ comes from.
pub enum Vocabulary {
    /// Drawn now (ε_voc).
    Draw,
    /// Released by the earlier run `from` of this page under `key`: read again
    /// (post-processing), while that run's ε_voc stays on record (`reuse::paid`, checked inside
    /// the run's first ledger transaction).
    Reuse { pv: Rc<PrivateVocabulary>, from: String, key: VocabKey },
    /// Released by an earlier command (`dpkps vocab`): used only if a run on record in this
    /// ledger paid its ε_voc for a vocabulary on this corpus under this account (checked
    /// before and inside the run's first ledger transaction), which the run then names.
    Given(Rc<PrivateVocabulary>),
}

impl Vocabulary {
    fn draws(&self) -> bool {
        matches!(self, Vocabulary::Draw)
    }
}

/// A run's inputs: the matched corpus, the public list it was matched against, and Ṽ's source.
pub struct RunInputs<'a> {
    pub corpus: &'a MatchedCorpus,
    pub vocab: &'a PublicVocabulary,
    pub vocabulary: Vocabulary,
}

/// A finished run: DP outputs, the ledger entry and the report.
pub struct RunOutput {
    pub run: Run,
    /// Ṽ (drawn, reused or given: `run.vocabulary_from` says which).
    pub vocabulary: Rc<PrivateVocabulary>,
    /// Ṽ, the DP summaries, the model's checksum and the DP class counts: to sample again later.
    pub release: Release,
    pub sequences: Vec<Sequence>,
    /// Per class: the signal estimate of its release and its sequences ([`Sampled`]).
    pub signals: Vec<ClassSignal>,
    /// This corpus's ledger as recorded after the run (other runs included).
    pub ledger: Ledger,
    pub report: PrivacyReport,
}

/// The run's ledger entry and how it is recorded: after each DP stage, in one transaction
/// that checks the budget again against what is recorded then.
pub struct Recorder {
    pub run: Run,
    fingerprint: String,
    planned: f64,
    sketch_key: [u8; 32],
    /// A reused Ṽ's key: its paying run must still be on record when this run is.
    reused: Option<VocabKey>,
}

impl Recorder {
    /// Starts a run (its id and the account's overlap-sketch key come from `rng`) and refuses
    /// it if `planned` ε would exceed the budget.
    pub async fn start<H: Host>(plan: &RunPlan, corpus: &MatchedCorpus, planned: f64, host: &mut H, rng: &mut SecureRng) -> Result<Recorder, H::Error> {
        let mut id = [0u8; 8];
        rng.fill(&mut id);
        let mut sketch_key = [0u8; 32];
        rng.fill(&mut sketch_key);
        let mut run = Run::new(crate::base::hex(&id), host.now());
        run.account = plan.account.clone();
        run.person_column = corpus.persons.as_ref().map(|p| p.column.clone());
        let book = host.ledger().await?;
        let rec = Recorder { run, fingerprint: corpus.fingerprint.clone(), planned, sketch_key, reused: None };
        plan.check_budget(&book, &rec.fingerprint, &overlapping(&book, corpus), &rec.run.id, planned).map_err(|e| host.fail(None, e.into()))?;
        Ok(rec)
    }

    /// Records the run's spends so far (the entry is replaced in place: counted once).
    pub(super) async fn commit<H: Host>(&self, plan: &RunPlan, corpus: &MatchedCorpus, stage: Stage, host: &mut H) -> Result<(), H::Error> {
        let mut change = |b: &mut LedgerBook| -> Result<(), RunError> {
            // A ledger an older version keyed by the order-sensitive hash counts too.
            b.adopt_older(&corpus.keys);
            if let (Some(key), Some(from)) = (&self.reused, self.run.vocabulary_from.as_deref()) {
                if !super::reuse::paid(b, key, from) {
                    return Err(RunError::Refused(
                        "the run that paid for the reused private vocabulary is no longer in the ledger; run again to draw a new one".into(),
                    ));
                }
            }
            // What the run has recorded, should it ever exceed what it planned, counts in full.
            // Found again: a corpus recorded since the start (another tab) counts too.
            let budget = plan.check_budget(b, &self.fingerprint, &overlapping(b, corpus), &self.run.id, self.planned.max(self.run.epsilon()))?;
            b.extend_run(&self.fingerprint, &self.run);
            // The budget this run was held to is stored, and a change recorded (`ledger::budget`).
            b.set_budget(plan.holder(&self.fingerprint), budget, &self.run.started, &self.run.id);
            if let Some(a) = &plan.account {
                b.note_corpus(a, &corpus.keys, || self.sketch_key);
            }
            Ok(())
        };
        host.commit(stage, &mut change).await
    }
}

/// The corpora of any account that overlap `corpus` (`LedgerBook::overlapping`): their spends
/// count against the run's budget too.
pub(super) fn overlapping(book: &LedgerBook, corpus: &MatchedCorpus) -> Vec<String> {
    book.overlapping(&corpus.keys).into_iter().map(|(_, fp, _)| fp).collect()
}

/// Stage 1: Ṽ (ε_voc when drawn), recorded before it is used.
pub async fn vocabulary<H: Host>(
    plan: &RunPlan,
    corpus: &MatchedCorpus,
    vocab: &PublicVocabulary,
    source: Vocabulary,
    rec: &mut Recorder,
    host: &mut H,
    rng: &mut SecureRng,
) -> Result<Rc<PrivateVocabulary>, H::Error> {
    host.stage_started(Stage::Vocabulary);
    let unit = corpus.persons.as_ref().map(|p| p.column.as_str());
    let draws = source.draws();
    let given = matches!(source, Vocabulary::Given(_));
    // The plan and the mechanism judge N against the same list (`RunPlan::new`).
    if plan.settings.whole_list() != plan.vocab_params().covers(vocab.len()) {
        let e = RunError::Refused("the plan was made for another public list than the one matched".into());
        return Err(host.fail(Some(Stage::Vocabulary), e));
    }
    let pv = match source {
        // N at least the list's size: Ṽ is the list, built here from public inputs alone
        // (`dp::vocabulary`, "N at least the list's size"), whatever the source: a given file (one
        // drawn before this rule, or edited) is not read, so nothing in it reaches the outputs.
        _ if plan.settings.whole_list() => Rc::new(PrivateVocabulary::whole_list(vocab, &plan.vocab_params())),
        Vocabulary::Given(pv) if pv.whole_list => {
            let e = RunError::Refused(format!(
                "this private vocabulary says it is the whole public list, but its N ({}) does not cover “{}” ({} terms): select one with `dpkps vocab` on this list",
                pv.params.top_n,
                vocab.name,
                vocab.len()
            ));
            return Err(host.fail(Some(Stage::Vocabulary), e));
        }
        Vocabulary::Draw => {
            let (mut pv, spends) = corpus
                .dp_vocabulary(vocab, &plan.vocab_params(), &plan.classes, rng)
                .map_err(|e| host.fail(Some(Stage::Vocabulary), e.into()))?;
            rec.run.spends.extend(spends);
            // Bound to this run and unit: a later run given this Ṽ must find this run's spend.
            pv.released_by = Some(ReleasedBy { run: rec.run.id.clone(), person_column: unit.map(str::to_string) });
            Rc::new(pv)
        }
        Vocabulary::Reuse { pv, from, key } => {
            rec.run.vocabulary_from = Some(from);
            rec.reused = Some(key);
            pv
        }
        Vocabulary::Given(pv) => {
            let book = host.ledger().await?;
            let (eps, account) = (pv.params.epsilon, plan.account.as_deref());
            // What the file holds must be what the paying run released (its digest is on record).
            let digest = pv.released_digest();
            let unit_of = |column: Option<&str>| column.map_or("per document".to_string(), |c| format!("per person (column “{c}”)"));
            // The run that released it, when the file says (it must be on record, with this
            // unit); an older file names none: any run that paid enough, per document only.
            let named = match &pv.released_by {
                Some(by) if by.person_column.as_deref() != unit => {
                    let e = RunError::Refused(format!(
                        "this private vocabulary was released {}, and this run is {}: its guarantee would not hold per the run's unit; draw one with `dpkps vocab` and the same person column",
                        unit_of(by.person_column.as_deref()),
                        unit_of(unit)
                    ));
                    return Err(host.fail(Some(Stage::Vocabulary), e));
                }
                Some(by) => Some(by.run.as_str()),
                None if unit.is_some() => {
                    let e = RunError::Refused(
                        "this private vocabulary names no run that released it (an older file): a run per person needs one released per person; draw one with `dpkps vocab` and the same person column".into(),
                    );
                    return Err(host.fail(Some(Stage::Vocabulary), e));
                }
                None => None,
            };
            let paying = book
                .ledger(&corpus.fingerprint)
                .runs
                .iter()
                .rev()
                .find(|r| named.is_none_or(|id| r.id == id) && r.paid_for_vocabulary(eps, account, unit) && r.released_vocabulary(&digest))
                .map(|r| r.id.clone());
            let Some(from) = paying else {
                let e = RunError::Refused(format!(
                    "no run in this ledger paid ε_voc = {eps} for this private vocabulary of this corpus{} (a file edited after its release is not the release): select it with `dpkps vocab` on the same corpus, ledger and account (else its ε_voc would go uncounted)",
                    account.map(|a| format!(" under the account “{a}”")).unwrap_or_default()
                ));
                return Err(host.fail(Some(Stage::Vocabulary), e));
            };
            rec.run.vocabulary_from = Some(from);
            rec.reused = Some(VocabKey::new(corpus, vocab, &pv.params, &plan.classes, account));
            pv
        }
    };
    // Recorded before Ṽ is used: its spend, or (reused, given) the run that paid for it. The
    // whole list is no release: nothing to record, nothing to keep for reuse.
    let drawn = draws && !pv.whole_list;
    if drawn || rec.reused.is_some() {
        rec.commit(plan, corpus, Stage::Vocabulary, host).await?;
    }
    if drawn {
        host.vocabulary_recorded(&pv, &rec.run.id);
    }
    let note = match &rec.run.vocabulary_from {
        _ if pv.whole_list => format!("the whole public list, {} terms (N = {} covers it): drawn from nothing, no ε_voc spent", pv.terms.len(), plan.settings.top_n),
        Some(from) => format!(
            "{} terms, {} {from}{} (ε_voc = {} was spent then, not again)",
            pv.terms.len(),
            if given { "given, released by run" } else { "reused from run" },
            if given { "" } else { " of this page" },
            plan.settings.eps_voc
        ),
        None => format!("{} terms selected", pv.terms.len()),
    };
    host.stage_done(Stage::Vocabulary, note);
    Ok(pv)
}

/// Stage 3: the DP summaries of every declared class (ε_kde) over `docs` (the class set's
/// documents as the sampler reads them, [`MatchedCorpus::summary_docs`]) and the DP class counts
/// (ε_counts), both recorded before they are returned, bundled with Ṽ as a [`Release`].
#[allow(clippy::too_many_arguments)]
pub async fn summaries<H: Host>(
    plan: &RunPlan,
    corpus: &MatchedCorpus,
    docs: &[SummaryDoc<'_>],
    pv: &PrivateVocabulary,
    vectors: &Vectors,
    rec: &mut Recorder,
    host: &mut H,
    rng: &mut SecureRng,
) -> Result<Release, H::Error> {
    host.stage_started(Stage::Summary);
    host.checkpoint().await?;
    let params: SummaryParams = plan.summary_params();
    let released: Vec<TermId> = pv.terms.iter().map(|t| t.id).collect();
    let inputs = SummaryInputs { docs, classes: &plan.classes, emb: &vectors.emb, candidates: &released, params: &params };
    let (summary, spends) = host.summaries(inputs, rng).await?;
    rec.run.spends.extend(spends);
    // DP class counts: sequences per class in proportion, on record with the summaries.
    let class_counts = match plan.settings.counts_epsilon() {
        Some(eps) => {
            let (noisy, spend) = crate::dp::counts::noisy_class_counts(&corpus.class_counts(&plan.classes), eps, rng)
                .map_err(|e| host.fail(Some(Stage::Summary), e.into()))?;
            rec.run.spends.push(spend);
            Some(noisy)
        }
        None => None,
    };
    rec.commit(plan, corpus, Stage::Summary, host).await?;
    let mut note = format!("{} class(es), {} sampler", summary.classes.len(), params.sampler.name());
    if let Some(own) = params.sampler.family().note(&params) {
        note = format!("{note}, {own}");
    }
    host.stage_done(Stage::Summary, note);
    host.checkpoint().await?;
    Ok(Release {
        format: Release::FORMAT.into(),
        vocabulary: pv.clone(),
        summary,
        model_checksum: vectors.model.sha256.clone(),
        class_counts,
    })
}

/// Stage 4: keyphrase sequences from a release (post-processing: no ε), `per_class` per class
/// on average (in proportion to the DP class counts when the release has them). `emb` must
/// hold Ṽ's vectors when the sampler reads them (the DP-KDE samplers; smoothing).
/// Every class gets its sequences, noise-dominated or not (sampling costs nothing); each
/// class's signal estimate ([`crate::sample::signal`]) goes with them, and the front ends leave
/// the noise-dominated classes out of generation unless the curator includes them.
pub fn sample(release: &Release, emb: &TermEmbeddings, per_class: usize, sampling: &crate::sample::Sampling, rng: &mut SecureRng) -> Result<Sampled, RunError> {
    let ids = release.candidate_ids();
    let p = &release.summary.params;
    let cands = if p.needs().candidate_vectors { Candidates::new(&ids, emb)? } else { Candidates::without_vectors(&ids, release.summary.dim) };
    let Drawn { sequences, mut signals } = crate::sample::draw(&release.summary, &cands, &release.sizes(per_class), sampling, rng, Signals::Estimate)?;
    count_sequences(&mut signals, &sequences, p.len);
    Ok(Sampled { sequences, signals })
}

/// The sequences as the page shows and downloads them and the CLI writes them: Ṽ's terms by
/// name, and the noise-dominated classes' sequences marked.
pub fn sequences_out(sequences: &[Sequence], signals: &[ClassSignal], vocab: &PublicVocabulary) -> Vec<SequenceOut> {
    sequences
        .iter()
        .map(|s| SequenceOut {
            label: s.label.clone(),
            keyphrases: s.keyphrases.iter().map(|&id| vocab.term(id).to_string()).collect(),
            noise_dominated: is_noise_dominated(signals, &s.label),
        })
        .collect()
}

/// Stage 4's output: the sequences and, per class, its signal estimate and sequence counts.
pub struct Sampled {
    pub sequences: Vec<Sequence>,
    pub signals: Vec<ClassSignal>,
}

impl Sampled {
    /// One line for the stage's note: the sequences, the classes flagged, the short ones.
    pub fn note(&self) -> String {
        let flagged = self.signals.iter().filter(|s| s.noise_dominated).count();
        let short: usize = self.signals.iter().map(|s| s.shorter_than_l).sum();
        let mut note = format!("{} sequences", self.sequences.len());
        if flagged > 0 {
            note.push_str(&format!("; {flagged} noise-dominated class(es), not generated by default"));
        }
        if short > 0 {
            note.push_str(&format!("; {short} shorter than L (too few distinct terms in the release)"));
        }
        note
    }
}

/// The whole run: Ṽ → vectors → DP summaries and class counts → sequences → report.
pub async fn execute<H: Host>(plan: &RunPlan, inputs: RunInputs<'_>, host: &mut H, rng: &mut SecureRng) -> Result<RunOutput, H::Error> {
    let RunInputs { corpus, vocab, vocabulary: source } = inputs;
    // The privacy unit (`crate::input::units`): with a person column, one unit per person, which every
    // stage below reads as a document; else the corpus itself.
    let units = crate::input::units::units(corpus, &plan.classes);
    // Of the loaded documents: the units' corpus has one document per person.
    let persons_digest = corpus.persons_digest();
    let corpus: &MatchedCorpus = &units;
    let draws = source.draws();
    let mut rec = Recorder::start(plan, corpus, plan.planned_epsilon(draws), host, rng).await?;
    rec.run.persons_digest = persons_digest;
    // Settings said to be chosen by a DP utility check: that check must be on record and have
    // chosen this sampler (the report says so).
    let chosen_by = super::chosen::chosen_by(&host.ledger().await?.ledger(&corpus.fingerprint), &plan.settings, plan.account.as_deref(), rec.run.person_column.as_deref())
        .map_err(|e| host.fail(None, e))?;
    let pv = vocabulary(plan, corpus, vocab, source, &mut rec, host, rng).await?;
    host.checkpoint().await?;

    // Vectors: what the summary mechanism reads of the documents, and Ṽ's if sampling does.
    let released: Vec<TermId> = pv.terms.iter().map(|t| t.id).collect();
    let docs = corpus.summary_docs(plan.summary_params().doc_terms_read(), &plan.classes);
    let ids = plan.vector_ids(&docs, &released);
    host.stage_started(Stage::Embed);
    let vectors = host.vectors(vocab, &ids, &released).await?;
    host.stage_done(Stage::Embed, vectors.note.clone());

    let release = summaries(plan, corpus, &docs, &pv, &vectors, &mut rec, host, rng).await?;

    host.stage_started(Stage::Sample);
    let sampled = sample(&release, &vectors.emb, plan.settings.sequences_per_class(), &plan.settings.sampling, rng).map_err(|e| host.fail(Some(Stage::Sample), e))?;
    host.stage_done(Stage::Sample, sampled.note());
    let Sampled { sequences, signals } = sampled;

    // What is recorded now (other runs on this corpus included).
    let book = host.ledger().await?;
    let ledger = book.ledger(&corpus.fingerprint);
    let mut report = PrivacyReport::new(
        host.now(),
        &plan.settings,
        &rec.run,
        &ledger,
        Checked { name: vocab.name.clone(), sha256: vocab.checksum.clone() },
        vectors.model.clone(),
        &plan.classes,
        sequences.len(),
        &signals,
    );
    // The non-DP checks on this corpus, and on any file that overlaps it (a tuning file that
    // shares its documents or persons: `dpkps evaluate` records its check on both).
    let over = overlapping(&book, corpus);
    let with_tuning: Vec<String> = over.iter().cloned().chain(book.tuning_overlapping(&corpus.keys)).collect();
    let (checks, from_overlapping) = book.checks_touching(&corpus.fingerprint, &with_tuning);
    report.count_checks(&checks, from_overlapping);
    let holder = plan.holder(&corpus.fingerprint);
    report.budget = book.stored_budget(holder);
    report.epsilon_budget_total = Some(book.spent_for(holder, &corpus.fingerprint, &over));
    report.budget_changes = book.budget_changes(holder).to_vec();
    report.settings_chosen_by = chosen_by;
    Ok(RunOutput { run: rec.run, vocabulary: pv, release, sequences, signals, ledger, report })
}
