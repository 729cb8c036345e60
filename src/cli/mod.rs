//! The `dpkps` command-line tool: drives the same core as the browser app, for batch runs and
//! benchmarks. The contract (subcommands, files, exit codes) is written in the README.
//!
//! Exit codes: 0 success; 2 bad input or parameters (the message says which and where);
//! 1 anything else (I/O failures writing outputs, a missing random source).

mod bench;

use std::fs::File;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand};
use serde::Serialize;

use crate::corpus::{CorpusError, Fields, Format};
use crate::dp::vocabulary::VocabParams;
use crate::dp::{DpError, SecureRng};
use crate::ledger::{LedgerBook, LedgerError, Run};
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
        vocab: VocabArgs,
        #[command(flatten)]
        dp: VocabDpArgs,
        #[command(flatten)]
        ledger: LedgerArgs,
        /// Where to write the private vocabulary (JSON, a DP artefact).
        #[arg(long)]
        out: PathBuf,
    },
    /// Run every stage available so far and write its artefacts and ledger to a folder.
    Pipeline {
        #[command(flatten)]
        corpus: CorpusArgs,
        #[command(flatten)]
        vocab: VocabArgs,
        #[command(flatten)]
        dp: VocabDpArgs,
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

#[derive(Args, Clone)]
struct VocabArgs {
    /// Public vocabulary: "medical" (MeSH 2017), "english" (GloVe 6B words), or a file with
    /// one term per line.
    #[arg(long, default_value = "medical")]
    vocabulary: String,
}

#[derive(Args, Clone)]
struct VocabDpArgs {
    /// ε for the DP vocabulary.
    #[arg(long)]
    eps_voc: f64,
    /// N: size of the private vocabulary.
    #[arg(long, default_value_t = 1000)]
    top_n: usize,
    /// S: distinct matched terms each document contributes.
    #[arg(long, default_value_t = 10)]
    terms_per_doc: usize,
}

#[derive(Args, Clone)]
struct LedgerArgs {
    /// Privacy ledger file [default: $DPKPS_LEDGER, else ~/.local/share/dpkps/ledger.json].
    #[arg(long)]
    ledger: Option<PathBuf>,
    /// Refuse to run if the total ε spent on this corpus would exceed this.
    #[arg(long)]
    budget: Option<f64>,
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
    #[error("{path}: {message}")]
    Input { path: String, message: String },
    #[error("could not write {path}: {source}")]
    Write { path: String, source: std::io::Error },
}

impl CliError {
    fn exit_code(&self) -> u8 {
        match self {
            CliError::Write { .. } | CliError::Dp(DpError::Rng(_)) => 1,
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
                write_json(&out, &mc.stats)?;
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
            write_file(&out, lines.as_bytes())
        }
        Command::Vocab { corpus, vocab, dp, ledger, out } => {
            let result = vocab_stage(&corpus, &vocab, &dp, &ledger)?;
            write_json(&out, &result.vocabulary)?;
            eprintln!("wrote the private vocabulary ({} terms) to {}", result.vocabulary.terms.len(), out.display());
            Ok(())
        }
        Command::Pipeline { corpus, vocab, dp, ledger, out_dir } => {
            std::fs::create_dir_all(&out_dir)
                .map_err(|e| CliError::Write { path: out_dir.display().to_string(), source: e })?;
            let result = vocab_stage(&corpus, &vocab, &dp, &ledger)?;
            write_json(&out_dir.join("vocabulary.json"), &result.vocabulary)?;
            write_json(&out_dir.join("run.json"), &result.run)?;
            eprintln!("wrote vocabulary.json and run.json to {}", out_dir.display());
            Ok(())
        }
        Command::Ledger { ledger, corpus, format, text_col, label_col } => {
            let path = ledger_path(&ledger);
            let book = read_ledger(&path)?;
            let fingerprints: Vec<String> = if corpus.is_empty() {
                book.ledgers.keys().cloned().collect()
            } else {
                let args = CorpusArgs { corpus, format, text_col, label_col, label_from_dir: false };
                vec![read_corpus(&args, None, 0)?.fingerprint]
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
        Command::Bench { which } => bench::run(which),
    }
}

/// Artefacts of the vocabulary stage.
struct VocabStage {
    vocabulary: crate::dp::vocabulary::PrivateVocabulary,
    run: Run,
}

fn vocab_stage(corpus: &CorpusArgs, vocab: &VocabArgs, dp: &VocabDpArgs, ledger: &LedgerArgs) -> Result<VocabStage, CliError> {
    let public = load_vocabulary(&vocab.vocabulary)?;
    let params = VocabParams { epsilon: dp.eps_voc, top_n: dp.top_n, terms_per_doc: dp.terms_per_doc };
    // Validate before reading anything large.
    params.validate(public.len()).map_err(DpError::from)?;
    if let Some(b) = ledger.budget {
        crate::dp::check_epsilon("the budget", b).map_err(DpError::from)?;
    }
    let matcher = Matcher::new(&public)?;
    let mc = read_corpus(corpus, Some(&matcher), dp.terms_per_doc)?;
    print_stats(&mc);

    let path = ledger_path(ledger);
    let mut book = read_ledger(&path)?;
    let spent = book.ledger(&mc.fingerprint).total_epsilon();
    eprintln!(
        "privacy ledger {}: this corpus has spent ε = {spent:.4} before; this run spends ε_voc = {}, total after: {:.4}",
        path.display(),
        params.epsilon,
        spent + params.epsilon
    );
    book.check_budget(&mc.fingerprint, params.epsilon, ledger.budget)?;

    let mut rng = SecureRng::from_os()?;
    let (vocabulary, spend) = mc.dp_vocabulary(&public, &params, &mut rng)?;
    let mut id = [0u8; 8];
    rng.fill(&mut id);
    let mut run = Run::new(crate::corpus::hex(&id), now_utc());
    run.spends.push(spend);
    book.record(&mc.fingerprint, run.clone());
    write_file(&path, book.to_json().as_bytes())?;
    Ok(VocabStage { vocabulary, run })
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
        return Ok(PublicVocabulary::parse(b.name(), bundled_bytes(b))?);
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

fn read_ledger(path: &Path) -> Result<LedgerBook, CliError> {
    match std::fs::read_to_string(path) {
        Ok(text) => LedgerBook::from_json(&text).map_err(|e| CliError::Input { path: path.display().to_string(), message: e.to_string() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LedgerBook::default()),
        Err(e) => Err(CliError::Input { path: path.display().to_string(), message: e.to_string() }),
    }
}

fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), CliError> {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    write_file(path, text.as_bytes())
}

/// Writes atomically: a temporary file next to the target, then a rename.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let err = |source| CliError::Write { path: path.display().to_string(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let tmp = path.with_extension("tmp~");
    let mut f = File::create(&tmp).map_err(err)?;
    f.write_all(bytes).map_err(err)?;
    f.sync_all().map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}
