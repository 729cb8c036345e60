//! The releasing commands (`vocab`, `sequences`, `pipeline`) and `sample`: each builds a
//! [`RunPlan`] from its options and drives the core's run stages (`dpkps_core::run`) over
//! [`CliHost`], the native side of what differs from the browser: the model loaded from disk,
//! the ledger file locked for the whole run, progress on stderr.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use dpkps_core::dp::vocabulary::PrivateVocabulary;
use dpkps_core::dp::{DpError, SecureRng};
use dpkps_core::embed::{Embed, TermEmbeddings};
use dpkps_core::dp::summary::{DpSummary, SummaryInputs};
use dpkps_core::ledger::{LedgerBook, Spend};
use dpkps_core::input::classes::ClassSet;
use dpkps_core::input::matched::MatchedCorpus;
use dpkps_core::run::Release;
use dpkps_core::run::report::Checked;
use dpkps_core::sample::signal::ClassSignal;
use dpkps_core::run::{self, Host, Recorder, RunError, RunInputs, RunOutput, RunPlan, Stage, Vectors, Vocabulary};
use dpkps_core::sample::Sequence;
use dpkps_core::input::public_vocab::{Matcher, PublicVocabulary, TermId};

use super::args::corpus::{declared_classes, ClassArgs, CorpusArgs};

use super::args::inputs::{run_settings, vocab_settings, PipelineInputs};

use super::args::ledger::LedgerArgs;

use super::args::model::ModelArgs;

use super::args::summary::SummaryArgs;

use super::args::vocab::{VocabArgs, VocabDpArgs};
use super::io::{load_model, load_vocabulary, now_utc, print_stats, read_corpus, read_json, write_file, write_json, write_private_json};
use super::ledger_file::LedgerFile;
use super::error::CliError;

/// The native host: every call answers at once (no event loop to yield to, nothing to cancel
/// but the process).
pub(crate) struct CliHost {
    ledger: LedgerFile,
    model: Model,
    /// Where Ṽ is written as soon as its ε_voc is on record (`pipeline`: what was paid for is
    /// kept even if a later stage fails).
    vocabulary_out: Option<PathBuf>,
    stage_start: Instant,
}

/// The embedding model of a run: loaded when vectors are first needed (after ε_voc is on
/// record: a model that fails to load costs no draw of Ṽ again), or given.
pub(crate) enum Model {
    None,
    Load(ModelArgs),
    Loaded(Box<dyn Embed>, String),
}

impl CliHost {
    /// Locks and reads the ledger (held until the host is dropped, so the budget checked is
    /// the one the run's writes add to), says what the run will add, and warns when the
    /// corpus overlaps an earlier corpus of the account.
    pub(crate) fn open(ledger: &LedgerArgs, mc: &MatchedCorpus, planned: f64, model: Model, vocabulary_out: Option<PathBuf>) -> Result<CliHost, CliError> {
        let path = super::io::ledger_path(ledger);
        let mut file = LedgerFile::open(&path)?;
        // An older version's book is keyed with the ledger's secret (saved with the first
        // spend), and a ledger under the oldest, order-sensitive key moves to this one.
        let local = super::local_key::for_ledger(&path, &file.book)?;
        file.book.key_with(&local)?;
        file.book.adopt_older(&mc.keys);
        let spent = file.book.ledger(&mc.fingerprint).total_epsilon();
        eprintln!(
            "privacy ledger {}: this corpus has spent ε = {spent:.4} before; this run spends ε = {planned}, total after: {:.4}",
            file.path().display(),
            spent + planned
        );
        warn_overlap(&file.book, run::account_name(ledger.account.as_deref()).as_deref(), mc);
        Ok(CliHost { ledger: file, model, vocabulary_out, stage_start: Instant::now() })
    }
}

/// Warns about every corpus, of any account, that this one overlaps (`LedgerBook::overlapping`):
/// their runs count against this run's budget too.
fn warn_overlap(book: &LedgerBook, account: Option<&str>, mc: &MatchedCorpus) {
    for (a, _, o) in book.overlapping(&mc.keys) {
        let whose = if Some(a.as_str()) == account { "an earlier corpus of the account" } else { "a corpus of the account" };
        eprintln!(
            "warning: this corpus overlaps {whose} “{a}” by about {:.0}% of documents: it is not a fresh dataset, and \
             that corpus's runs count against this run's budget",
            100.0 * o
        );
    }
}

impl Host for CliHost {
    type Error = CliError;

    fn fail(&self, _stage: Option<Stage>, e: RunError) -> CliError {
        e.into()
    }

    fn stage_started(&mut self, _stage: Stage) {
        self.stage_start = Instant::now();
    }

    fn stage_done(&mut self, stage: Stage, note: String) {
        eprintln!("{}: {note} ({:.1} s)", stage.title(), self.stage_start.elapsed().as_secs_f64());
    }

    async fn checkpoint(&mut self) -> Result<(), CliError> {
        Ok(())
    }

    async fn ledger(&mut self) -> Result<LedgerBook, CliError> {
        Ok(self.ledger.book.clone())
    }

    async fn commit(&mut self, _stage: Stage, change: &mut dyn FnMut(&mut LedgerBook) -> Result<(), RunError>) -> Result<(), CliError> {
        let mut book = self.ledger.book.clone();
        change(&mut book).map_err(CliError::Run)?;
        self.ledger.book = book;
        self.ledger.save()
    }

    async fn vectors(&mut self, vocab: &PublicVocabulary, ids: &[TermId], _released: &[TermId]) -> Result<Vectors, CliError> {
        if let Model::Load(args) = &self.model {
            self.model = Model::Loaded(load_model(args)?, model_name(args));
        }
        let Model::Loaded(model, name) = &mut self.model else {
            return Err(CliError::Input { path: "--model".into(), message: "this command loads no embedding model".into() });
        };
        // In term batches whose every row is a function of its own term (`embed::rows`).
        let emb = dpkps_core::embed::embed_terms(vocab, ids, model.as_mut(), &mut |done, total| {
            eprint!("\rembedding terms: {done}/{total}");
        })?;
        if !ids.is_empty() {
            eprintln!();
        }
        Ok(Vectors { emb, model: Checked { name: name.clone(), sha256: model.checksum().to_string() }, note: format!("{} terms embedded", ids.len()) })
    }

    async fn summaries(&mut self, inputs: SummaryInputs<'_>, rng: &mut SecureRng) -> Result<(DpSummary, Vec<Spend>), CliError> {
        // The DP-KDE sums on every core: the same release (`build_threaded`).
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        dpkps_core::dp::summary::build_threaded(inputs, rng, threads).await.map_err(|e| self.fail(Some(Stage::Summary), e.into()))
    }

    fn vocabulary_recorded(&mut self, pv: &Rc<PrivateVocabulary>, _run_id: &str) {
        if let Some(path) = &self.vocabulary_out {
            // Ṽ is paid for: written now, so that a later failure does not lose it. A failed
            // write is said, and the run goes on (the same file is written again at the end).
            if let Err(e) = write_json(path, &**pv) {
                eprintln!("warning: {e}");
            }
        }
    }

    fn now(&self) -> String {
        now_utc()
    }
}

/// Runs a future of the core over [`CliHost`], whose calls never wait: it is ready at the first
/// poll, so no executor is needed (one that returned `Pending` would be a bug, said so).
pub(crate) fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!("the CLI's host never waits"),
    }
}

/// The model's name for the report: the file's name, or the bundled model's.
pub(crate) fn model_name(args: &ModelArgs) -> String {
    match &args.model {
        Some(p) => p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned()),
        None => dpkps_embed::onnx::BUNDLED_MODEL_NAME.to_string(),
    }
}

/// Reads and matches the corpus, keeping what the plan's stages read, its keys keyed with the
/// secret of the ledger it will be recorded in (`super::local_key`); with a person column,
/// says what the privacy unit does to it under `classes` (`dpkps_core::input::units`).
pub(crate) fn read_matched(corpus: &CorpusArgs, public: &PublicVocabulary, keep: usize, classes: &ClassSet, ledger: &LedgerArgs) -> Result<MatchedCorpus, CliError> {
    let started = std::time::Instant::now();
    let matcher = Matcher::new(public)?;
    let mut mc = read_corpus(corpus, Some(&matcher), keep)?;
    let path = super::io::ledger_path(ledger);
    mc.key_with(&super::local_key::for_ledger(&path, &super::ledger_file::read(&path)?)?);
    print_stats(&mc);
    eprintln!("read and matched in {:.1} s", started.elapsed().as_secs_f64());
    if let Some(u) = dpkps_core::input::units::unit_stats(&mc, classes) {
        eprintln!(
            "privacy unit: the person; {} persons (at most {} documents each), {} with documents in several classes: {} document(s) of their other classes are not read",
            u.persons, u.most_documents, u.in_several_classes, u.documents_left_out
        );
    }
    Ok(mc)
}

/// `dpkps vocab`: the vocabulary stage alone (ε_voc), recorded as a run.
pub(crate) fn vocab(corpus: &CorpusArgs, classes: &ClassArgs, vocab: &VocabArgs, dp: &VocabDpArgs, ledger: &LedgerArgs) -> Result<PrivateVocabulary, CliError> {
    ledger.check_account()?;
    let public = load_vocabulary(&vocab.vocabulary)?;
    let vp = dp.params();
    let settings = vocab_settings(vp, declared_classes(corpus, classes)?, ledger);
    // Validated before reading anything large.
    let plan = RunPlan::new(settings, corpus.labelled(), public.len())?;
    let mc = read_matched(corpus, &public, vp.terms_per_doc, &plan.classes, ledger)?;
    // The privacy unit, as in every run (`dpkps_core::input::units`).
    let mc = dpkps_core::input::units::units(&mc, &plan.classes).into_owned();
    // Nothing is planned when N covers the list: Ṽ is then the list, drawn from nothing.
    let planned = if plan.settings.whole_list() { 0.0 } else { vp.epsilon };
    let mut host = CliHost::open(ledger, &mc, planned, Model::None, None)?;
    let mut rng = SecureRng::from_os()?;
    block_on(async {
        let mut rec = Recorder::start(&plan, &mc, planned, &mut host, &mut rng).await?;
        let pv = run::vocabulary(&plan, &mc, &public, Vocabulary::Draw, &mut rec, &mut host, &mut rng).await?;
        Ok(Rc::unwrap_or_clone(pv))
    })
}

/// `dpkps sequences`: the rest of a run from a private vocabulary `dpkps vocab` released.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sequences(
    corpus: &CorpusArgs,
    classes: &ClassArgs,
    vocab: &VocabArgs,
    private_vocab: &Path,
    summary: &SummaryArgs,
    model: &ModelArgs,
    ledger: &LedgerArgs,
    out: &Path,
    release: Option<&Path>,
) -> Result<(), CliError> {
    let public = load_vocabulary(&vocab.vocabulary)?;
    let pv: PrivateVocabulary = read_json(private_vocab)?;
    if pv.public_vocabulary_checksum != public.checksum {
        return Err(CliError::Input {
            path: private_vocab.display().to_string(),
            message: format!("was selected from another public vocabulary than {:?}", public.name),
        });
    }
    let settings = run_settings(pv.params, summary, declared_classes(corpus, classes)?, ledger)?;
    let plan = RunPlan::new(settings, corpus.labelled(), public.len())?;
    let mc = read_matched(corpus, &public, plan.keep(), &plan.classes, ledger)?;
    let mut rng = SecureRng::from_os()?;
    let output = run_whole(&plan, &mc, &public, ledger, Vocabulary::Given(Rc::new(pv)), Model::Load(model.clone()), None, &mut rng)?;
    write_sequences(out, &output.sequences, &output.signals, &public)?;
    if let Some(path) = release {
        write_json(path, &output.release)?;
    }
    let report = out.with_extension("privacy-report.json");
    write_report(&report, &output)?;
    eprintln!("wrote the privacy report to {} (and .html)", report.display());
    Ok(())
}

/// `dpkps pipeline`: the whole run into a folder.
pub(crate) fn pipeline(inputs: &PipelineInputs, classes: &ClassArgs, ledger: &LedgerArgs, out_dir: &Path) -> Result<(), CliError> {
    let (plan, public) = pipeline_plan(inputs, classes, ledger)?;
    std::fs::create_dir_all(out_dir).map_err(|e| CliError::Write { path: out_dir.display().to_string(), source: e })?;
    let mc = read_matched(&inputs.corpus, &public, plan.keep(), &plan.classes, ledger)?;
    let mut rng = SecureRng::from_os()?;
    let vocabulary_out = Some(out_dir.join("vocabulary.json"));
    let output = run_whole(&plan, &mc, &public, ledger, Vocabulary::Draw, Model::Load(inputs.model.clone()), vocabulary_out, &mut rng)?;
    write_pipeline(out_dir, &output, &public)
}

/// The plan of `dpkps pipeline` and its public list, checked before anything is read.
pub(crate) fn pipeline_plan(inputs: &PipelineInputs, classes: &ClassArgs, ledger: &LedgerArgs) -> Result<(RunPlan, PublicVocabulary), CliError> {
    let declared = declared_classes(&inputs.corpus, classes)?;
    let public = load_vocabulary(&inputs.vocab.vocabulary)?;
    let settings = run_settings(inputs.dp.params(), &inputs.summary, declared, ledger)?;
    Ok((RunPlan::new(settings, inputs.corpus.labelled(), public.len())?, public))
}

/// Opens the ledger and runs every stage; every spend is on record (and the ledger's lock
/// released) when it returns.
pub(crate) fn run_whole(
    plan: &RunPlan,
    mc: &MatchedCorpus,
    public: &PublicVocabulary,
    ledger: &LedgerArgs,
    source: Vocabulary,
    model: Model,
    vocabulary_out: Option<PathBuf>,
    rng: &mut SecureRng,
) -> Result<RunOutput, CliError> {
    let draws = matches!(source, Vocabulary::Draw);
    let mut host = CliHost::open(ledger, mc, plan.planned_epsilon(draws), model, vocabulary_out)?;
    block_on(run::execute(plan, RunInputs { corpus: mc, vocab: public, vocabulary: source }, &mut host, rng))
}

/// What `dpkps pipeline` writes into its folder.
pub(crate) fn write_pipeline(out_dir: &Path, output: &RunOutput, public: &PublicVocabulary) -> Result<(), CliError> {
    write_json(&out_dir.join("vocabulary.json"), &*output.vocabulary)?;
    write_json(&out_dir.join("release.json"), &output.release)?;
    // The run's ledger entry records the corpus's use: the owner's, like the ledger.
    write_private_json(&out_dir.join("run.json"), &output.run)?;
    write_sequences(&out_dir.join("sequences.jsonl"), &output.sequences, &output.signals, public)?;
    write_report(&out_dir.join("privacy-report.json"), output)?;
    eprintln!(
        "wrote vocabulary.json, release.json, sequences.jsonl, run.json and privacy-report.json/.html to {}",
        out_dir.display()
    );
    Ok(())
}

/// `dpkps sample`: more sequences from a saved release (post-processing: no ε).
pub(crate) fn sample(release: &Path, vocab: &VocabArgs, model: &ModelArgs, per_class: usize, sampling: &dpkps_core::sample::Sampling, out: &Path) -> Result<(), CliError> {
    sampling.validate().map_err(|e| CliError::Input { path: "--distinctiveness".into(), message: e.to_string() })?;
    let public = load_vocabulary(&vocab.vocabulary)?;
    let rel: Release = read_json(release)?;
    if rel.format != Release::FORMAT || rel.vocabulary.public_vocabulary_checksum != public.checksum {
        return Err(CliError::Input { path: release.display().to_string(), message: "is not a dpkps release for this public vocabulary".into() });
    }
    rel.summary.check()?;
    let mut embedder = load_model(model)?;
    if embedder.checksum() != rel.model_checksum {
        return Err(CliError::Input {
            path: "--model".into(),
            message: "the release was built with another embedding model; sample with the same model".into(),
        });
    }
    let p = &rel.summary.params;
    let emb = if p.needs().candidate_vectors {
        dpkps_core::embed::embed_terms(&public, &rel.candidate_ids(), embedder.as_mut(), &mut |_, _| {})?
    } else {
        TermEmbeddings::new(embedder.dim())
    };
    let mut rng = SecureRng::from_os()?;
    let sampled = run::sample(&rel, &emb, per_class, sampling, &mut rng)?;
    eprintln!("{}", sampled.note());
    write_sequences(out, &sampled.sequences, &sampled.signals, &public)
}

/// The sequences as JSONL, one [`dpkps_core::sample::SequenceOut`] per line (`label`,
/// `keyphrases`, and `"noise_dominated": true` on those of a class whose release is
/// noise-dominated, `dpkps_core::sample::signal`, which generation leaves out unless asked).
fn write_sequences(out: &Path, seqs: &[Sequence], signals: &[ClassSignal], public: &PublicVocabulary) -> Result<(), CliError> {
    write_file(out, sequences_jsonl(seqs, signals, public).as_bytes())?;
    eprintln!("wrote {} keyphrase sequences to {}", seqs.len(), out.display());
    Ok(())
}

/// The text of a sequences file (the page's download has the same lines).
pub(crate) fn sequences_jsonl(seqs: &[Sequence], signals: &[ClassSignal], public: &PublicVocabulary) -> String {
    let mut lines = String::new();
    for s in run::sequences_out(seqs, signals, public) {
        lines.push_str(&serde_json::to_string(&s).unwrap_or_default());
        lines.push('\n');
    }
    lines
}

/// The privacy report, as JSON at `path` and as the page's printable HTML beside it.
fn write_report(path: &Path, output: &RunOutput) -> Result<(), CliError> {
    write_json(path, &output.report)?;
    write_file(&path.with_extension("html"), output.report.to_html().as_bytes())
}

impl From<RunError> for CliError {
    fn from(e: RunError) -> CliError {
        match e {
            RunError::Dp(DpError::Rng(r)) => CliError::Dp(DpError::Rng(r)),
            e => CliError::Run(e),
        }
    }
}
