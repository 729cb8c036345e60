//! The `dpkps` command-line tool: drives the same core as the browser app, for batch runs and
//! benchmarks. The contract (subcommands, files, exit codes) is written in the README.
//!
//! Exit codes: 0 success; 2 bad input or parameters (the message says which and where);
//! 1 anything else (I/O failures writing outputs, a missing random source).

mod bench;
mod evaluate;
mod ledger_file;
mod vectors;

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use serde::Serialize;

use crate::classes::{ClassSet, OtherLabels};
use crate::corpus::{CorpusError, Fields, Format};
use crate::dp::vocabulary::{PrivateVocabulary, VocabParams};
use crate::summary::{KdeParams, Sampler};
use crate::pipeline::Release;
use crate::sample::Candidates;
use crate::dp::{DpError, SecureRng};
use crate::ledger::{LedgerBook, LedgerError, Run};
use ledger_file::LedgerFile;
use crate::pipeline::{MatchedCorpus, MatchingSink};
use crate::vocab::{Bundled, Matcher, PublicVocabulary, VocabError};

#[derive(Parser)]
#[command(name = "dpkps", version, about = "Differentially private synthetic text by keyphrase prompt seeding (DP-KPS)")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Read a corpus and print its counts (private: for the curator only).
    Ingest {
        #[command(flatten)]
        corpus: CorpusArgs,
        /// Write the counts as JSON here.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Match documents against a public vocabulary; writes one JSON line per document
    /// (label and matched terms). The output is PRIVATE data: keep it on this machine.
    Match {
        #[command(flatten)]
        corpus: CorpusArgs,
        #[command(flatten)]
        vocab: VocabArgs,
        /// Keep at most this many distinct terms per document.
        #[arg(long, default_value_t = 64)]
        keep: usize,
        #[arg(long)]
        out: PathBuf,
    },
    /// Select the DP vocabulary (ε_voc-DP) and record the spend in the privacy ledger.
    Vocab {
        #[command(flatten)]
        corpus: CorpusArgs,
        #[command(flatten)]
        classes: ClassArgs,
        #[command(flatten)]
        vocab: VocabArgs,
        #[command(flatten)]
        dp: VocabDpArgs,
        #[command(flatten)]
        ledger: LedgerArgs,
        /// Where to write the private vocabulary (JSON, a DP artefact).
        #[arg(long)]
        out: PathBuf,
    },
    /// Build per-class DP-KDEs (ε_kde-DP) and sample keyphrase sequences; writes one JSON line
    /// per sequence `{"label", "keyphrases"}`, and the release (to sample more later).
    Sequences {
        #[command(flatten)]
        corpus: CorpusArgs,
        #[command(flatten)]
        classes: ClassArgs,
        #[command(flatten)]
        vocab: VocabArgs,
        /// The private vocabulary written by `dpkps vocab`.
        #[arg(long)]
        private_vocab: PathBuf,
        #[command(flatten)]
        kde: KdeArgs,
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        ledger: LedgerArgs,
        /// Sequences (JSONL).
        #[arg(long)]
        out: PathBuf,
        /// Where to save the release (DP vocabulary + DP-KDEs) for `dpkps sample`.
        #[arg(long)]
        release: Option<PathBuf>,
    },
    /// Sample more sequences from a saved release: no privacy cost (post-processing).
    Sample {
        /// A release written by `sequences --release` or `pipeline`.
        #[arg(long)]
        release: PathBuf,
        #[command(flatten)]
        vocab: VocabArgs,
        #[command(flatten)]
        model: ModelArgs,
        /// Sequences per class.
        #[arg(long, default_value_t = 100)]
        per_class: usize,
        #[arg(long)]
        out: PathBuf,
    },
    /// The whole pipeline: DP vocabulary, DP-KDEs, keyphrase sequences. Writes
    /// vocabulary.json, release.json, sequences.jsonl and run.json (the ledger entry) to a folder.
    Pipeline {
        #[command(flatten)]
        inputs: PipelineInputs,
        #[command(flatten)]
        classes: ClassArgs,
        #[command(flatten)]
        ledger: LedgerArgs,
        #[arg(long)]
        out_dir: PathBuf,
    },
    /// Show the privacy ledger (all corpora, or the one given with --corpus).
    Ledger {
        #[command(flatten)]
        ledger: LedgerArgs,
        /// Show only the ledger of this corpus (same reading options as the other commands).
        #[arg(long)]
        corpus: Vec<PathBuf>,
        #[arg(long)]
        format: Option<Format>,
        #[arg(long)]
        text_col: Option<String>,
        #[arg(long)]
        label_col: Option<String>,
    },
    /// Utility evaluation without an LLM: classifiers trained on DP keyphrase sequences (per
    /// sampler), on the real training sequences and the majority class, tested on held-out
    /// documents. The figures are NOT differentially private; nothing is recorded in the ledger.
    Evaluate(evaluate::EvaluateArgs),
    /// Precompute the bundled vectors of a bundled vocabulary (int8; `scripts/vectors.sh`
    /// runs it before every `trunk build`).
    EmbedVocab(vectors::EmbedVocabArgs),
    /// Benchmarks that print figures (not pass/fail tests).
    Bench {
        #[command(subcommand)]
        which: bench::Bench,
    },
}

#[derive(Args, Clone)]
pub(crate) struct CorpusArgs {
    /// Corpus files (.csv, .tsv, .jsonl, .txt) or folders of .txt files (one document each).
    #[arg(long, required = true, num_args = 1..)]
    corpus: Vec<PathBuf>,
    /// Input format; by default guessed from each file's extension.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// Column (CSV/TSV) or field (JSONL) holding the text.
    #[arg(long)]
    text_col: Option<String>,
    /// Column or field holding the class label (optional).
    #[arg(long)]
    label_col: Option<String>,
    /// For .txt files: use the name of the folder holding each file as its label.
    #[arg(long)]
    label_from_dir: bool,
}

/// The public class set (`crate::classes`): required with a label column for every command
/// that releases something, because a class set read from the data would itself leak.
#[derive(Args, Clone)]
pub(crate) struct ClassArgs {
    /// The classes, comma-separated: label values that may appear in the outputs and prompts.
    /// They must be public (not derived from private data). Required with --label-col.
    #[arg(long, conflicts_with = "classes_file")]
    classes: Option<String>,
    /// The classes, one per line (`#` comments), instead of --classes.
    #[arg(long)]
    classes_file: Option<PathBuf>,
    /// Documents with any other label (or none): "drop" (left out of the per-class releases) or
    /// "class" (gathered into one more class, named by --other-name).
    #[arg(long, default_value = "drop")]
    other: String,
    /// The name of the extra class with --other class.
    #[arg(long, default_value = crate::classes::ClassSet::OTHER)]
    other_name: String,
}

#[derive(Args, Clone)]
pub(crate) struct VocabArgs {
    /// Public vocabulary: "medical" (MeSH 2017), "english" (GloVe 6B words), or a file with
    /// one term per line.
    #[arg(long, default_value = "medical")]
    vocabulary: String,
}

#[derive(Args, Clone)]
pub(crate) struct VocabDpArgs {
    /// ε for the DP vocabulary.
    #[arg(long)]
    eps_voc: f64,
    /// N: size of the private vocabulary. With the histogram samplers a large Ṽ costs little
    /// (terms only noise selected get no class mass), and N = 1000 kept the most utility on
    /// MTSamples; for the DP-KDE samplers 100 was best (their noise spreads over every term).
    #[arg(long, default_value_t = 1000)]
    top_n: usize,
    /// S: distinct matched terms each document contributes (noise scale S/ε_voc; 3 was best on
    /// MTSamples).
    #[arg(long, default_value_t = 3)]
    terms_per_doc: usize,
    /// "per-class": Ṽ from each class's own noisy histogram (round robin; parallel composition,
    /// still ε_voc), so small classes keep their keyphrases; "global": one histogram.
    #[arg(long, default_value = "per-class")]
    vocab_scope: String,
}

impl VocabDpArgs {
    pub(crate) fn params(&self) -> Result<VocabParams, CliError> {
        let per_class = match self.vocab_scope.trim() {
            "per-class" => true,
            "global" => false,
            other => {
                return Err(CliError::Input { path: "--vocab-scope".into(), message: format!("unknown scope {other:?}; use per-class or global") })
            }
        };
        Ok(VocabParams { epsilon: self.eps_voc, top_n: self.top_n, terms_per_doc: self.terms_per_doc, per_class })
    }
}

#[derive(Args, Clone)]
pub(crate) struct KdeArgs {
    /// ε for the DP-KDEs (each class gets it: classes are disjoint).
    #[arg(long)]
    eps_kde: f64,
    /// Sampler: histogram (a noisy keyphrase histogram over Ṽ), markov (a noisy keyphrase row
    /// plus transition histograms over Ṽ: chains start from the row and back off to it), or the
    /// paper's DP-KDEs: independent, iterative-linear, iterative-log. The default kept the most
    /// utility under DP on MTSamples (README, "evaluate"); check yours with `dpkps evaluate`.
    #[arg(long, default_value = crate::summary::KdeParams::DEFAULT_SAMPLER.name())]
    sampler: String,
    /// L: keyphrases per sequence.
    #[arg(long, default_value_t = 10)]
    len: usize,
    /// I: random features of the DP-KDE samplers (data-independent default; see src/kde.rs,
    /// "Choosing I").
    #[arg(long, default_value_t = crate::summary::KdeParams::DEFAULT_FEATURES)]
    features: usize,
    /// M: keyphrases per document in the independent sampler's KDE, and the Ṽ-keyphrases per
    /// document of the histogram samplers.
    #[arg(long, default_value_t = 10)]
    kde_terms_per_doc: usize,
    /// Sequences to sample per class.
    #[arg(long, default_value_t = 100)]
    per_class: usize,
    /// h: kernel bandwidth (exp(−‖x−y‖²/(h·ℓ)); 1 is the paper's). Chosen on MTSamples.
    #[arg(long, default_value_t = crate::summary::KdeParams::DEFAULT_BANDWIDTH)]
    bandwidth: f64,
    /// Kernel smoothing of the histogram samplers over Ṽ's embeddings (exp(−‖v−w‖²/s)); 0: off.
    #[arg(long, default_value_t = 0.0)]
    smoothing: f64,
    /// ε of the DP class counts: sequences per class in proportion to them (--per-class ×
    /// classes in all), at least one each; "off": --per-class for every class.
    #[arg(long, default_value = "0.1")]
    eps_counts: String,
}

impl KdeArgs {
    pub(crate) fn class_counts_epsilon(&self) -> Result<Option<f64>, CliError> {
        if self.eps_counts.trim() == "off" {
            return Ok(None);
        }
        let e: f64 = self.eps_counts.trim().parse().map_err(|_| CliError::Input {
            path: "--eps-counts".into(),
            message: format!("{:?} is neither a number nor \"off\"", self.eps_counts),
        })?;
        crate::dp::check_epsilon("ε for the class counts (--eps-counts)", e).map_err(DpError::from)?;
        Ok(Some(e))
    }
}

/// Everything the whole pipeline reads (shared by `pipeline` and `evaluate`).
#[derive(Args, Clone)]
pub(crate) struct PipelineInputs {
    #[command(flatten)]
    pub(crate) corpus: CorpusArgs,
    #[command(flatten)]
    pub(crate) vocab: VocabArgs,
    #[command(flatten)]
    pub(crate) dp: VocabDpArgs,
    #[command(flatten)]
    pub(crate) kde: KdeArgs,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
}

#[derive(Args, Clone)]
pub(crate) struct ModelArgs {
    /// ONNX sentence-embedding model [default: the bundled all-MiniLM-L6-v2].
    #[arg(long)]
    pub(crate) model: Option<PathBuf>,
    /// Its tokenizer.json [default: the bundled one].
    #[arg(long)]
    pub(crate) tokenizer: Option<PathBuf>,
}

#[derive(Args, Clone)]
struct LedgerArgs {
    /// Privacy ledger file [default: $DPKPS_LEDGER, else ~/.local/share/dpkps/ledger.json].
    #[arg(long)]
    ledger: Option<PathBuf>,
    /// Refuse to run if the total ε spent on this corpus (with --account: under the account)
    /// would exceed this.
    #[arg(long)]
    budget: Option<f64>,
    /// Budget account (the dataset's name): runs are recorded under it, --budget caps all
    /// that is spent under it whatever extract is read, and a corpus overlapping an earlier
    /// one of the account by 20% or more is warned about (the app does the same).
    #[arg(long)]
    account: Option<String>,
}

impl LedgerArgs {
    /// Refuses a planned spend over the budget (the account's, with --account) and warns of
    /// overlap with the account's earlier corpora.
    fn check(&self, book: &LedgerBook, mc: &MatchedCorpus, planned: f64) -> Result<(), CliError> {
        match self.account.as_deref() {
            Some(a) => {
                if let Some((_, o)) = book.overlaps(a, &mc.keys).first().filter(|(_, o)| *o >= crate::overlap::WARN_OVERLAP) {
                    eprintln!(
                        "warning: this corpus overlaps an earlier corpus of the account “{a}” by about {:.0}% of documents: \
                         it is not a fresh dataset, and its ε adds to the account's total",
                        100.0 * o
                    );
                }
                book.check_account_budget(a, &mc.fingerprint, planned, self.budget)?;
            }
            None => book.check_budget(&mc.fingerprint, planned, self.budget)?,
        }
        Ok(())
    }

    /// Records the corpus (its overlap sketch) and the budget under the account, if any.
    /// The account's sketch key (used only when the account is new) comes from the OS: no
    /// random source, no run (a fixed key would make the sketch a public function of the text).
    fn note(&self, book: &mut LedgerBook, mc: &MatchedCorpus) -> Result<(), CliError> {
        if let Some(a) = self.account.as_deref() {
            let mut key = [0u8; 32];
            SecureRng::from_os()?.fill(&mut key);
            book.note_corpus(a, &mc.keys, self.budget, || key);
        }
        Ok(())
    }
}

impl clap::ValueEnum for Format {
    fn value_variants<'a>() -> &'a [Self] {
        &[Format::Csv, Format::Tsv, Format::Jsonl, Format::Txt]
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self {
            Format::Csv => "csv",
            Format::Tsv => "tsv",
            Format::Jsonl => "jsonl",
            Format::Txt => "txt",
        }))
    }
}

/// Everything that can go wrong, in plain words.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    #[error(transparent)]
    Vocab(#[from] VocabError),
    #[error(transparent)]
    Dp(#[from] DpError),
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    #[error(transparent)]
    Kde(#[from] crate::summary::KdeError),
    #[error(transparent)]
    Embed(#[from] crate::embed::EmbedError),
    #[error(transparent)]
    Eval(#[from] crate::eval::EvalError),
    #[error("{path}: {message}")]
    Input { path: String, message: String },
    #[error("could not write {path}: {source}")]
    Write { path: String, source: std::io::Error },
    #[error("could not lock the privacy ledger {path} (its lock file, {path}.lock, keeps two runs from losing each other's spend): {source}")]
    LedgerLock { path: String, source: std::io::Error },
}

impl CliError {
    fn exit_code(&self) -> u8 {
        match self {
            CliError::Write { .. } | CliError::LedgerLock { .. } | CliError::Dp(DpError::Rng(_)) => 1,
            _ => 2,
        }
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

fn run(command: Command) -> Result<(), CliError> {
    match command {
        Command::Ingest { corpus, out } => {
            let mc = read_corpus(&corpus, None, 0)?;
            print_stats(&mc);
            if let Some(out) = out {
                write_private_json(&out, &mc.stats)?;
            }
            Ok(())
        }
        Command::Match { corpus, vocab, keep, out } => {
            let vocab = load_vocabulary(&vocab.vocabulary)?;
            let matcher = Matcher::new(&vocab)?;
            let t0 = Instant::now();
            let mc = read_corpus(&corpus, Some(&matcher), keep)?;
            let secs = t0.elapsed().as_secs_f64();
            print_stats(&mc);
            eprintln!(
                "matched {} documents against {} ({} terms) in {:.2} s; {} documents had no term",
                mc.docs.len(),
                vocab.name,
                vocab.len(),
                secs,
                mc.docs_without_terms
            );
            let mut lines = String::new();
            for d in &mc.docs {
                let terms: Vec<&str> = d.terms.iter().map(|&t| vocab.term(t)).collect();
                lines.push_str(&serde_json::json!({"label": d.label, "terms": terms}).to_string());
                lines.push('\n');
            }
            write_private(&out, lines.as_bytes())
        }
        Command::Vocab { corpus, classes, vocab, dp, ledger, out } => {
            let classes = class_set(&corpus, &classes)?;
            let vocabulary = vocab_stage(&corpus, &classes, &vocab, &dp, &ledger)?;
            write_json(&out, &vocabulary)?;
            eprintln!("wrote the private vocabulary ({} terms) to {}", vocabulary.terms.len(), out.display());
            Ok(())
        }
        Command::Sequences { corpus, classes, vocab, private_vocab, kde, model, ledger, out, release } => {
            let classes = class_set(&corpus, &classes)?;
            let public = load_vocabulary(&vocab.vocabulary)?;
            let pv: PrivateVocabulary = read_json(&private_vocab)?;
            if pv.public_vocabulary_checksum != public.checksum {
                return Err(CliError::Input {
                    path: private_vocab.display().to_string(),
                    message: format!("was selected from another public vocabulary than {:?}", public.name),
                });
            }
            let plan = Plan::new(&kde, ledger.clone())?;
            plan.params().check_release_size(pv.terms.len(), classes.len())?;
            let (mc, mut ledger, mut rng, mut run) = start_run(&plan, &public, &corpus)?;
            let mut embedder = load_model(&model)?;
            let rel = kde_stage(&mc, &classes, &public, pv, &plan, embedder.as_mut(), &mut run, &mut rng)?;
            plan.commit(&mut ledger, &mc, &run)?;
            drop(ledger); // every spend is recorded: other runs may go on
            write_sequences(&out, &rel, &public, embedder.as_mut(), plan.per_class, &mut rng)?;
            if let Some(path) = release {
                write_json(&path, &rel)?;
            }
            Ok(())
        }
        Command::Sample { release, vocab, model, per_class, out } => {
            let public = load_vocabulary(&vocab.vocabulary)?;
            let rel: Release = read_json(&release)?;
            if rel.format != Release::FORMAT || rel.vocabulary.public_vocabulary_checksum != public.checksum {
                return Err(CliError::Input {
                    path: release.display().to_string(),
                    message: "is not a dpkps release for this public vocabulary".into(),
                });
            }
            let mut rng = SecureRng::from_os()?;
            write_sequences(&out, &rel, &public, load_model(&model)?.as_mut(), per_class, &mut rng)
        }
        Command::Pipeline { inputs: PipelineInputs { corpus, vocab, dp, kde, model }, classes, ledger, out_dir } => {
            let classes = class_set(&corpus, &classes)?;
            std::fs::create_dir_all(&out_dir)
                .map_err(|e| CliError::Write { path: out_dir.display().to_string(), source: e })?;
            let public = load_vocabulary(&vocab.vocabulary)?;
            let params = dp.params()?;
            params.validate(public.len()).map_err(DpError::from)?;
            let mut plan = Plan::new(&kde, ledger.clone())?;
            plan.params().check_release_size(params.top_n, classes.len())?;
            plan.extra_epsilon = params.epsilon;
            plan.min_keep = params.terms_per_doc;
            let (mc, mut ledger, mut rng, mut run) = start_run(&plan, &public, &corpus)?;
            let (pv, spends) = mc.dp_vocabulary(&public, &params, &classes, &mut rng)?;
            run.spends.extend(spends);
            // Every spend is on record before anything computed from it is written: a failure
            // in a later stage cannot leave ε_voc spent but unrecorded.
            plan.commit(&mut ledger, &mc, &run)?;
            write_json(&out_dir.join("vocabulary.json"), &pv)?;
            let mut embedder = load_model(&model)?;
            let rel = kde_stage(&mc, &classes, &public, pv, &plan, embedder.as_mut(), &mut run, &mut rng)?;
            plan.commit(&mut ledger, &mc, &run)?;
            drop(ledger); // every spend is recorded: other runs may go on
            write_json(&out_dir.join("release.json"), &rel)?;
            // The run's ledger entry records the corpus's use: the owner's, like the ledger.
            write_private_json(&out_dir.join("run.json"), &run)?;
            write_sequences(&out_dir.join("sequences.jsonl"), &rel, &public, embedder.as_mut(), plan.per_class, &mut rng)?;
            eprintln!("wrote vocabulary.json, release.json, sequences.jsonl and run.json to {}", out_dir.display());
            Ok(())
        }
        Command::Ledger { ledger, corpus, format, text_col, label_col } => {
            let path = ledger_path(&ledger);
            let mut book = ledger_file::read(&path)?;
            let fingerprints: Vec<String> = if corpus.is_empty() {
                book.ledgers.keys().cloned().collect()
            } else {
                let args = CorpusArgs { corpus, format, text_col, label_col, label_from_dir: false };
                let mc = read_corpus(&args, None, 0)?;
                // Shown with what an older version recorded under the order-sensitive key.
                book.adopt_legacy(&mc.keys.legacy, &mc.fingerprint);
                vec![mc.fingerprint]
            };
            println!("ledger: {}", path.display());
            for fp in fingerprints {
                let l = book.ledger(&fp);
                println!("corpus {}…: {} run(s), total ε = {:.4}", &fp[..12.min(fp.len())], l.runs.len(), l.total_epsilon());
                for (stage, eps) in l.epsilon_by_stage() {
                    println!("  {stage}: ε = {eps:.4}");
                }
            }
            Ok(())
        }
        Command::Evaluate(args) => evaluate::run(args),
        Command::EmbedVocab(args) => vectors::run(args),
        Command::Bench { which } => bench::run(which),
    }
}

/// The vocabulary stage on its own: ε_voc-DP, recorded as a run in the ledger.
fn vocab_stage(
    corpus: &CorpusArgs,
    classes: &ClassSet,
    vocab: &VocabArgs,
    dp: &VocabDpArgs,
    ledger: &LedgerArgs,
) -> Result<PrivateVocabulary, CliError> {
    let public = load_vocabulary(&vocab.vocabulary)?;
    let params = dp.params()?;
    // Validate before reading anything large.
    params.validate(public.len()).map_err(DpError::from)?;
    if let Some(b) = ledger.budget {
        crate::dp::check_epsilon("the budget", b).map_err(DpError::from)?;
    }
    let matcher = Matcher::new(&public)?;
    let mc = read_corpus(corpus, Some(&matcher), dp.terms_per_doc)?;
    print_stats(&mc);

    // Locked from this read to the write below, the budget check included (`ledger_file`).
    let mut file = LedgerFile::open(&ledger_path(ledger))?;
    file.book.adopt_legacy(&mc.keys.legacy, &mc.fingerprint);
    let spent = file.book.ledger(&mc.fingerprint).total_epsilon();
    eprintln!(
        "privacy ledger {}: this corpus has spent ε = {spent:.4} before; this run spends ε_voc = {}, total after: {:.4}",
        file.path().display(),
        params.epsilon,
        spent + params.epsilon
    );
    ledger.check(&file.book, &mc, params.epsilon)?;

    let mut rng = SecureRng::from_os()?;
    let (vocabulary, spends) = mc.dp_vocabulary(&public, &params, classes, &mut rng)?;
    let mut run = new_run(&mut rng);
    run.account = ledger.account.clone();
    run.spends.extend(spends);
    file.book.record(&mc.fingerprint, run);
    ledger.note(&mut file.book, &mc)?;
    file.save()?;
    Ok(vocabulary)
}

fn new_run(rng: &mut SecureRng) -> Run {
    let mut id = [0u8; 8];
    rng.fill(&mut id);
    Run::new(crate::corpus::hex(&id), now_utc())
}

/// The KDE stage's parameters, checked before any data is read, and its ledger handling.
struct Plan {
    sampler: Sampler,
    eps_kde: f64,
    len: usize,
    features: usize,
    kde_terms_per_doc: usize,
    per_class: usize,
    bandwidth: f64,
    smoothing: f64,
    /// ε of the DP class counts (`None`: equal sequences per class).
    eps_counts: Option<f64>,
    ledger: LedgerArgs,
    /// ε spent by earlier stages of the same run (the pipeline's ε_voc).
    extra_epsilon: f64,
    /// Terms to keep per document for earlier stages (the pipeline's S).
    min_keep: usize,
}

impl Plan {
    fn new(k: &KdeArgs, ledger: LedgerArgs) -> Result<Plan, CliError> {
        let sampler = Sampler::parse(&k.sampler).ok_or_else(|| CliError::Input {
            path: "--sampler".into(),
            message: format!("unknown sampler {:?}; use histogram, markov, independent, iterative-linear or iterative-log", k.sampler),
        })?;
        let plan = Plan {
            sampler,
            eps_kde: k.eps_kde,
            len: k.len,
            features: k.features,
            kde_terms_per_doc: k.kde_terms_per_doc,
            per_class: k.per_class,
            bandwidth: k.bandwidth,
            smoothing: k.smoothing,
            eps_counts: k.class_counts_epsilon()?,
            ledger,
            extra_epsilon: 0.0,
            min_keep: 0,
        };
        plan.params().validate().map_err(DpError::from)?;
        // The exact noise scale must exist before any ε is spent.
        plan.params().noise_scale()?;
        if plan.per_class == 0 {
            return Err(DpError::from(crate::dp::ParamError::new("sequences per class", 0, "must be at least 1")).into());
        }
        if let Some(b) = plan.ledger.budget {
            crate::dp::check_epsilon("the budget", b).map_err(DpError::from)?;
        }
        Ok(plan)
    }

    fn keep(&self) -> usize {
        self.params().doc_terms_read().max(self.min_keep)
    }

    /// Every parameter is given or a data-independent default (no I from the class sizes).
    fn params(&self) -> KdeParams {
        KdeParams {
            epsilon: self.eps_kde,
            sampler: self.sampler,
            len: self.len,
            features: self.features,
            terms_per_doc: self.kde_terms_per_doc,
            bandwidth: self.bandwidth,
            smoothing: self.smoothing,
        }
    }

    /// Locks and reads the ledger, says what this run will add, refuses to exceed the budget.
    /// The lock is held until the returned ledger is dropped, so the budget checked here is
    /// still the one the run's writes ([`Plan::commit`]) add to (`ledger_file`).
    fn open_ledger(&self, mc: &MatchedCorpus) -> Result<LedgerFile, CliError> {
        let mut file = LedgerFile::open(&ledger_path(&self.ledger))?;
        // A ledger an older version keyed by the order-sensitive hash counts (and moves here on
        // the next write).
        file.book.adopt_legacy(&mc.keys.legacy, &mc.fingerprint);
        let spent = file.book.ledger(&mc.fingerprint).total_epsilon();
        let planned = self.eps_kde + self.extra_epsilon + self.eps_counts.unwrap_or(0.0);
        eprintln!(
            "privacy ledger {}: this corpus has spent ε = {spent:.4} before; this run spends ε = {planned}, total after: {:.4}",
            file.path().display(),
            spent + planned
        );
        self.ledger.check(&file.book, mc, planned)?;
        Ok(file)
    }

    /// Writes the run's spends so far to the ledger file (again after each stage: the run is
    /// updated in place, so it is counted once).
    fn commit(&self, file: &mut LedgerFile, mc: &MatchedCorpus, run: &Run) -> Result<(), CliError> {
        file.book.extend_run(&mc.fingerprint, run);
        self.ledger.note(&mut file.book, mc)?;
        file.save()
    }
}

/// Reads and matches the corpus, locks and opens its ledger (saying what the run will add,
/// refusing to exceed the budget) and starts a run.
fn start_run(
    plan: &Plan,
    public: &PublicVocabulary,
    corpus: &CorpusArgs,
) -> Result<(MatchedCorpus, LedgerFile, SecureRng, Run), CliError> {
    let matcher = Matcher::new(public)?;
    let mc = read_corpus(corpus, Some(&matcher), plan.keep())?;
    print_stats(&mc);
    let book = plan.open_ledger(&mc)?;
    let mut rng = SecureRng::from_os()?;
    let mut run = new_run(&mut rng);
    run.account = plan.ledger.account.clone();
    Ok((mc, book, rng, run))
}

/// Embeds what the KDEs need, builds them (ε_kde-DP), and bundles the release.
#[allow(clippy::too_many_arguments)]
fn kde_stage(
    mc: &MatchedCorpus,
    classes: &ClassSet,
    public: &PublicVocabulary,
    pv: PrivateVocabulary,
    plan: &Plan,
    embedder: &mut dyn crate::embed::Embed,
    run: &mut Run,
    rng: &mut SecureRng,
) -> Result<Release, CliError> {
    let params = plan.params();
    let take = params.doc_terms_read();
    // The histogram samplers read only Ṽ's embeddings (to smooth and to sample): the other
    // matched terms need none.
    let mut ids = if params.sampler.embeds_document_terms() { mc.distinct_terms(take) } else { Vec::new() };
    let candidates = pv.terms.iter().map(|t| t.id).collect::<Vec<_>>();
    if params.sampler.hist_kind().is_none() || params.smoothing > 0.0 {
        ids.extend(&candidates);
    }
    ids.sort_unstable();
    ids.dedup();
    let t0 = Instant::now();
    let emb = crate::embed::embed_terms(public, &ids, embedder, 32, &mut |done, total| {
        if done == total || done % 1024 == 0 {
            eprint!("\rembedding terms: {done}/{total}");
        }
    })?;
    eprintln!(" ({:.1} s)", t0.elapsed().as_secs_f64());
    let t1 = Instant::now();
    let (kde, spends) = crate::summary::build(&mc.kde_docs(take, classes), classes, &emb, &candidates, &params, rng)?;
    eprintln!(
        "built the {} sampler's DP release ({} part(s)) for each of {} declared class(es), ε_kde = {} ({:.1} s)",
        params.sampler.name(),
        params.ensemble().members(),
        kde.classes.len(),
        params.epsilon,
        t1.elapsed().as_secs_f64()
    );
    run.spends.extend(spends);
    let class_counts = match plan.eps_counts {
        Some(eps) => {
            let (noisy, spend) = crate::dp::counts::noisy_class_counts(&mc.class_counts(classes), eps, rng)?;
            run.spends.push(spend);
            Some(noisy)
        }
        None => None,
    };
    Ok(Release { format: Release::FORMAT.into(), vocabulary: pv, kde, model_checksum: embedder.checksum().to_string(), class_counts })
}

/// Samples `per_class` sequences per class from a release and writes them as JSONL.
fn write_sequences(
    out: &Path,
    rel: &Release,
    public: &PublicVocabulary,
    embedder: &mut dyn crate::embed::Embed,
    per_class: usize,
    rng: &mut SecureRng,
) -> Result<(), CliError> {
    if embedder.checksum() != rel.model_checksum {
        return Err(CliError::Input {
            path: "--model".into(),
            message: "the release was built with another embedding model; sample with the same model".into(),
        });
    }
    let ids = rel.candidate_ids();
    let cands = if rel.kde.params.sampler.hist_kind().is_some() && rel.kde.params.smoothing == 0.0 {
        // The histogram samplers read no embedding unless they smooth.
        Candidates::without_vectors(&ids, rel.kde.dim)
    } else {
        let emb = crate::embed::embed_terms(public, &ids, embedder, 32, &mut |_, _| {})?;
        Candidates::new(&ids, &emb)?
    };
    let seqs = crate::sample::sample_sized(&rel.kde, &cands, &rel.sizes(per_class), rng)?;
    let mut lines = String::new();
    for s in &seqs {
        let keyphrases: Vec<&str> = s.keyphrases.iter().map(|&t| public.term(t)).collect();
        lines.push_str(&serde_json::json!({"label": s.label, "keyphrases": keyphrases}).to_string());
        lines.push('\n');
    }
    write_file(out, lines.as_bytes())?;
    eprintln!("wrote {} keyphrase sequences to {}", seqs.len(), out.display());
    Ok(())
}

/// The public class set of a releasing command (module `crate::classes`).
fn class_set(corpus: &CorpusArgs, args: &ClassArgs) -> Result<ClassSet, CliError> {
    let labelled = corpus.label_col.is_some() || corpus.label_from_dir;
    let names = match (&args.classes, &args.classes_file) {
        (Some(list), _) => Some(ClassSet::parse_names(list, true)),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError::Input { path: path.display().to_string(), message: format!("cannot read: {e}") })?;
            Some(ClassSet::parse_names(&text, false))
        }
        (None, None) => None,
    };
    if !labelled {
        if names.is_some() {
            return Err(CliError::Input { path: "--classes".into(), message: "needs --label-col (or --label-from-dir): without labels there is one class".into() });
        }
        return Ok(ClassSet::unlabelled());
    }
    let Some(names) = names else {
        return Err(CliError::Input {
            path: "--label-col".into(),
            message: "needs --classes a,b,c or --classes-file FILE: the class names appear in the outputs and prompts, so they must be declared \
                      (public), not read from the private labels"
                .into(),
        });
    };
    let other = match args.other.trim() {
        "drop" => OtherLabels::Drop,
        "class" => OtherLabels::Class { name: args.other_name.clone() },
        o => return Err(CliError::Input { path: "--other".into(), message: format!("unknown choice {o:?}; use drop or class") }),
    };
    Ok(ClassSet::declared(&names, other).map_err(DpError::from)?)
}

/// The embedding model: the bundled one unless the user names another.
pub(crate) fn load_model(args: &ModelArgs) -> Result<Box<dyn crate::embed::Embed>, CliError> {
    let bundled = |f: &str| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/models")).join(f);
    let model = args.model.clone().unwrap_or_else(|| bundled(crate::embed::onnx::BUNDLED_MODEL));
    let tok = args.tokenizer.clone().unwrap_or_else(|| bundled("tokenizer.json"));
    let read = |p: &Path| std::fs::read(p).map_err(|e| CliError::Input { path: p.display().to_string(), message: format!("cannot read: {e}") });
    Ok(Box::new(crate::embed::onnx::OnnxEmbedder::from_bytes(&read(&model)?, &read(&tok)?)?))
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, CliError> {
    let bytes = std::fs::read(path).map_err(|e| CliError::Input { path: path.display().to_string(), message: format!("cannot read: {e}") })?;
    serde_json::from_slice(&bytes).map_err(|e| CliError::Input { path: path.display().to_string(), message: format!("not a valid file of this kind: {e}") })
}

fn now_utc() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    format!("unix:{secs}")
}

fn print_stats(mc: &MatchedCorpus) {
    let s = &mc.stats;
    eprintln!(
        "read {} records: {} documents, {} empty (skipped), {} classes{}",
        s.records,
        s.documents,
        s.empty_skipped,
        s.classes.len(),
        if s.unlabelled > 0 { format!(", {} without a label", s.unlabelled) } else { String::new() }
    );
}

/// Loads a bundled vocabulary by name, or a user's list from a file.
pub fn load_vocabulary(spec: &str) -> Result<PublicVocabulary, CliError> {
    if let Some(b) = Bundled::parse_name(spec) {
        return Ok(PublicVocabulary::parse_bundled(b, bundled_bytes(b))?);
    }
    let bytes = std::fs::read(spec).map_err(|e| CliError::Input {
        path: spec.to_string(),
        message: format!("not a bundled vocabulary (english, medical) and not a readable file: {e}"),
    })?;
    let name = Path::new(spec).file_name().map_or(spec.to_string(), |n| n.to_string_lossy().into_owned());
    Ok(PublicVocabulary::parse(&name, &bytes)?)
}

fn bundled_bytes(b: Bundled) -> &'static [u8] {
    match b {
        Bundled::English => include_bytes!("../../www/vocab/english_glove6b.txt"),
        Bundled::Medical => include_bytes!("../../www/vocab/medical_mesh2017.txt"),
    }
}

/// One input file and how to read it.
struct Input {
    path: PathBuf,
    format: Format,
    txt_label: Option<String>,
}

fn inputs(args: &CorpusArgs) -> Result<Vec<Input>, CliError> {
    let mut out = Vec::new();
    for p in &args.corpus {
        let meta = std::fs::metadata(p)
            .map_err(|e| CliError::Input { path: p.display().to_string(), message: format!("cannot open: {e}") })?;
        if meta.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| CliError::Input { path: p.display().to_string(), message: e.to_string() })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && Format::from_path(&f.to_string_lossy()) == Some(Format::Txt))
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(CliError::Input { path: p.display().to_string(), message: "the folder has no .txt files".into() });
            }
            for f in files {
                let label = args.label_from_dir.then(|| dir_label(&f)).flatten();
                out.push(Input { path: f, format: Format::Txt, txt_label: label });
            }
        } else {
            let format = match args.format {
                Some(f) => f,
                None => Format::from_path(&p.to_string_lossy()).ok_or_else(|| CliError::Input {
                    path: p.display().to_string(),
                    message: "unknown file type; use .csv, .tsv, .jsonl or .txt, or pass --format".into(),
                })?,
            };
            let label = (format == Format::Txt && args.label_from_dir).then(|| dir_label(p)).flatten();
            out.push(Input { path: p.clone(), format, txt_label: label });
        }
    }
    Ok(out)
}

fn dir_label(file: &Path) -> Option<String> {
    file.parent().and_then(|d| d.file_name()).map(|n| n.to_string_lossy().into_owned())
}

/// Streams every input through the matcher.
pub(crate) fn read_corpus(args: &CorpusArgs, matcher: Option<&Matcher>, keep: usize) -> Result<MatchedCorpus, CliError> {
    let fields = Fields { text: args.text_col.clone(), label: args.label_col.clone() };
    let inputs = inputs(args)?;
    let has_labels = args.label_col.is_some() || args.label_from_dir;
    let mut sink = MatchingSink::new(matcher, keep, has_labels);
    for input in &inputs {
        let name = input.path.display().to_string();
        let file = File::open(&input.path).map_err(|e| CliError::Input { path: name.clone(), message: format!("cannot open: {e}") })?;
        sink.read(BufReader::with_capacity(1 << 20, file), &name, input.format, &fields, input.txt_label.as_deref())?;
    }
    let name = if inputs.len() == 1 { inputs[0].path.display().to_string() } else { format!("{} files", inputs.len()) };
    Ok(sink.finish(&name)?)
}

fn ledger_path(args: &LedgerArgs) -> PathBuf {
    if let Some(p) = &args.ledger {
        return p.clone();
    }
    if let Some(p) = std::env::var_os("DPKPS_LEDGER") {
        return PathBuf::from(p);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    home.join(".local/share/dpkps/ledger.json")
}

fn json_text<T: Serialize>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// Writes a DP output (or other public data) as JSON: see [`write_file`].
fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), CliError> {
    write_file(path, json_text(value).as_bytes())
}

/// Writes private data as JSON: see [`write_private`].
fn write_private_json<T: Serialize>(path: &Path, value: &T) -> Result<(), CliError> {
    write_private(path, json_text(value).as_bytes())
}

/// Writes a DP output (or other public data), with the permissions the user's umask gives.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    write_atomic(path, bytes, false)
}

/// Writes a file derived from private data that is not a DP release, or that records its use
/// (the ledger, a run's entry, matches, exact counts, evaluation figures): on Unix it is
/// readable and writable by its owner only (0600), whatever the umask, its temporary file
/// included, so it is never readable by others even for a moment.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    write_atomic(path, bytes, true)
}

/// Writes atomically: a temporary file next to the target, then a rename.
fn write_atomic(path: &Path, bytes: &[u8], private: bool) -> Result<(), CliError> {
    let err = |source| CliError::Write { path: path.display().to_string(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let tmp = path.with_extension("tmp~");
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    }
    let mut f = options.open(&tmp).map_err(err)?;
    #[cfg(unix)]
    if private {
        // `mode` applies only to a file it creates: a stale temporary file keeps its own.
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(err)?;
    }
    #[cfg(not(unix))]
    let _ = private;
    f.write_all(bytes).map_err(err)?;
    f.sync_all().map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}
