//! The command line: subcommands and their options (clap), and how the options become the
//! run settings that the page sends too ([`RunSettings`]): one plan type for both front ends.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::classes::ClassSet;
use crate::corpus::Format;
use crate::dp::vocabulary::VocabParams;
use crate::dp::summary::KeyphraseSampler;
use crate::run::RunSettings;

use super::{bench, evaluate, generate, train, vectors, CliError};

#[derive(Parser)]
#[command(name = "dpkps", version, about = "Differentially private synthetic text by keyphrase prompt seeding (DP-KPS)")]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Subcommand)]
pub(super) enum Command {
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
    /// Build the per-class DP summaries (ε_kde-DP, + DP class counts) and sample keyphrase sequences; writes one JSON line
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
        /// Write a copy of the whole ledger to this file, to keep or to import in the page: runs,
        /// ε, budgets and accounts, without the overlap sketches (the key file is never copied).
        #[arg(long)]
        export: Option<PathBuf>,
        /// With --export: include the overlap sketches. Whoever holds them and this machine's key
        /// file can test whether a document was in a recorded corpus.
        #[arg(long, requires = "export")]
        with_sketches: bool,
    },
    /// Utility evaluation without an LLM: classifiers trained on DP keyphrase sequences (per
    /// sampler), on the real training sequences and the majority class, tested on held-out
    /// documents. The figures are NOT differentially private: the evaluation is recorded in the
    /// ledger as a non-DP check on the corpus (no ε; later reports count it). `check` is the DP one.
    Evaluate(evaluate::EvaluateArgs),
    /// The DP utility check: which keyphrase sampler keeps the most class signal on this
    /// corpus, answered with differential privacy and recorded in the ledger like a run (it
    /// costs ε_voc + (samplers) × ε_kde). Prints each sampler's noisy accuracy and the one chosen;
    /// `pipeline --from-check ID` then says in its report that the sampler was chosen by it.
    Check(CheckArgs),
    /// Generate the synthetic corpus: each keyphrase sequence of a run (`pipeline --out-dir`)
    /// becomes a prompt (the page's), sent to an OpenAI-compatible endpoint; writes the corpus
    /// (JSONL, CSV), the audit log and the privacy report to --out-dir. The same command again
    /// resumes the job: every document is generated once. The API key, if the endpoint needs
    /// one, is read from the environment variable DPKPS_LLM_KEY, never from a flag.
    Generate(generate::GenerateArgs),
    /// The recipient's side: train a classifier on a synthetic corpus, adapted to your own
    /// unlabelled documents with Deep CORAL; writes the model, predictions for the unlabelled
    /// documents and a report (scores on a labelled test set when one is given).
    Train(train::TrainArgs),
    /// Classify documents with a model written by `dpkps train` or the page.
    Predict(train::PredictArgs),
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
    pub(crate) corpus: Vec<PathBuf>,
    /// Input format; by default guessed from each file's extension.
    #[arg(long, value_enum)]
    pub(crate) format: Option<Format>,
    /// Column (CSV/TSV) or field (JSONL) holding the text.
    #[arg(long)]
    pub(crate) text_col: Option<String>,
    /// Column or field holding the class label (optional).
    #[arg(long)]
    pub(crate) label_col: Option<String>,
    /// For .txt files: use the name of the folder holding each file as its label.
    #[arg(long)]
    pub(crate) label_from_dir: bool,
    /// Column or field naming the person (patient) each document is about. With it the privacy
    /// unit is the person: a person's documents together count as one document in every
    /// mechanism (docs/privacy.md, "The person, not the document"). Every document needs one.
    #[arg(long)]
    pub(crate) person_col: Option<String>,
}

/// The public class set (`crate::classes`): required with a label column for every command
/// that releases something, because a class set read from the data would itself leak.
#[derive(Args, Clone)]
pub(crate) struct ClassArgs {
    /// The classes, comma-separated: label values that may appear in the outputs and prompts.
    /// They must be public (not derived from private data). Required with --label-col.
    #[arg(long, conflicts_with = "classes_file")]
    pub(crate) classes: Option<String>,
    /// The classes, one per line (`#` comments), instead of --classes.
    #[arg(long)]
    pub(crate) classes_file: Option<PathBuf>,
    /// Documents with any other label (or none): "drop" (left out of the per-class releases) or
    /// "class" (gathered into one more class, named by --other-name).
    #[arg(long, default_value = "drop")]
    pub(crate) other: String,
    /// The name of the extra class with --other class.
    #[arg(long, default_value = crate::classes::ClassSet::OTHER)]
    pub(crate) other_name: String,
}

#[derive(Args, Clone)]
pub(crate) struct VocabArgs {
    /// Public vocabulary: "medical" (MeSH 2017), "english" (GloVe 6B words), or a file with
    /// one term per line.
    #[arg(long, default_value = "medical")]
    pub(crate) vocabulary: String,
}

#[derive(Args, Clone)]
pub(crate) struct VocabDpArgs {
    /// ε for the DP vocabulary.
    #[arg(long)]
    pub(crate) eps_voc: f64,
    /// N: size of the private vocabulary. With the histogram samplers a large Ṽ costs little
    /// (terms only noise selected get no class mass), and N = 1000 kept the most utility on
    /// MTSamples; for the DP-KDE samplers 100 was best (their noise spreads over every term).
    #[arg(long, default_value_t = 1000)]
    pub(crate) top_n: usize,
    /// S: distinct matched terms each document contributes (noise scale S/ε_voc; 3 was best on
    /// MTSamples).
    #[arg(long, default_value_t = 3)]
    pub(crate) terms_per_doc: usize,
    /// "global": one noisy histogram over all documents (the default: it kept the most utility
    /// on every corpus measured, docs/utility.md); "per-class": Ṽ from each class's own noisy
    /// histogram (round robin; parallel composition, still ε_voc).
    #[arg(long, value_enum, default_value_t = VocabScope::Global)]
    pub(crate) vocab_scope: VocabScope,
}

/// `--vocab-scope`: which histograms Ṽ is drawn from (`crate::dp::vocabulary`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum VocabScope {
    /// One noisy histogram over all documents.
    Global,
    /// Each class's own noisy histogram, round robin.
    PerClass,
}

/// The sampler names a CLI error lists: [`KeyphraseSampler::ALL`]'s, so that a new sampler
/// needs no edit here.
fn sampler_names() -> String {
    KeyphraseSampler::ALL.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
}

/// A comma-separated list of samplers (`--compare`), in the order given, repeats kept (the
/// check refuses them in its own words), blanks skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SamplerList(pub(crate) Vec<KeyphraseSampler>);

/// The value parser of [`SamplerList`]: every name one of [`KeyphraseSampler::ALL`].
pub(crate) fn sampler_list(spec: &str) -> Result<SamplerList, String> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| KeyphraseSampler::parse(s).ok_or_else(|| format!("unknown sampler {s:?}; use {}", sampler_names())))
        .collect::<Result<_, _>>()
        .map(SamplerList)
}

/// `--sampler`'s value: one sampler for a run; `evaluate` reads the same flag as "all" or a
/// list (its arms), so the flag parses as a list and a run asks for exactly one ([`Self::one`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Samplers(pub(crate) Vec<KeyphraseSampler>);

impl Samplers {
    /// The one sampler a run uses; refused for "all" or a list.
    pub(crate) fn one(&self) -> Result<KeyphraseSampler, CliError> {
        match self.0.as_slice() {
            [s] => Ok(*s),
            _ => Err(CliError::Input { path: "--sampler".into(), message: format!("give one sampler: {}", sampler_names()) }),
        }
    }
}

/// The value parser of [`Samplers`]: "all" (every sampler, `evaluate`'s default), or a
/// comma-separated list of [`KeyphraseSampler::ALL`]'s names, each kept once.
pub(crate) fn samplers(spec: &str) -> Result<Samplers, String> {
    if spec.trim() == "all" {
        return Ok(Samplers(KeyphraseSampler::ALL.to_vec()));
    }
    let mut out = Vec::new();
    for name in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let s = KeyphraseSampler::parse(name).ok_or_else(|| format!("unknown sampler {name:?}; use all, or a list of {}", sampler_names()))?;
        if !out.contains(&s) {
            out.push(s);
        }
    }
    Ok(Samplers(out))
}

/// `--eps-counts`: ε of the DP class counts, or `None` ("off").
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct EpsCounts(pub(crate) Option<f64>);

/// The value parser of [`EpsCounts`]: "off", or an ε the class counts accept (checked here,
/// before anything is read).
pub(crate) fn eps_counts(spec: &str) -> Result<EpsCounts, String> {
    if spec.trim() == "off" {
        return Ok(EpsCounts(None));
    }
    let e: f64 = spec.trim().parse().map_err(|_| format!("{spec:?} is neither a number nor \"off\""))?;
    crate::dp::check_epsilon("ε for the class counts (--eps-counts)", e).map_err(|e| e.to_string())?;
    Ok(EpsCounts(Some(e)))
}

impl CorpusArgs {
    /// Whether the corpus is read with labels (a label column, or one folder per class): what
    /// decides whether the run has declared classes or the one class of an unlabelled corpus.
    pub(crate) fn labelled(&self) -> bool {
        self.label_col.is_some() || self.label_from_dir
    }
}

impl LedgerArgs {
    /// The account's name as given: the page trims it, so a name with spaces around it (or a
    /// blank one) would not be the account the ledger holds under that name: refused.
    pub(crate) fn check_account(&self) -> Result<(), CliError> {
        match &self.account {
            Some(a) if a.trim().is_empty() || a.trim() != a => {
                Err(CliError::Input { path: "--account".into(), message: format!("{a:?}: give the account's name without leading or trailing spaces") })
            }
            _ => Ok(()),
        }
    }
}

impl VocabDpArgs {
    pub(crate) fn params(&self) -> VocabParams {
        let per_class = self.vocab_scope == VocabScope::PerClass;
        VocabParams { epsilon: self.eps_voc, top_n: self.top_n, terms_per_doc: self.terms_per_doc, per_class }
    }
}

#[derive(Args, Clone)]
pub(crate) struct KdeArgs {
    /// ε for the DP-KDEs (each class gets it: classes are disjoint).
    #[arg(long)]
    pub(crate) eps_kde: f64,
    /// Sampler: histogram (a noisy keyphrase histogram over Ṽ), markov (a noisy keyphrase row
    /// plus transition histograms over Ṽ: chains start from the row and back off to it), or the
    /// paper's DP-KDEs: independent, iterative-linear, iterative-log. The default kept the most
    /// utility under DP on MTSamples (README, "evaluate"); check yours with `dpkps evaluate`.
    #[arg(long, default_value = crate::dp::summary::SummaryParams::DEFAULT_SAMPLER.name(), value_parser = samplers)]
    pub(crate) sampler: Samplers,
    /// L: keyphrases per sequence.
    #[arg(long, default_value_t = 10)]
    pub(crate) len: usize,
    /// I: random features of the DP-KDE samplers (data-independent default; see src/dp/summary/kde/mod.rs,
    /// "Choosing I").
    #[arg(long, default_value_t = crate::dp::summary::SummaryParams::DEFAULT_FEATURES)]
    pub(crate) features: usize,
    /// M: keyphrases per document in the independent sampler's KDE, and the Ṽ-keyphrases per
    /// document of the histogram samplers.
    #[arg(long, default_value_t = 10)]
    pub(crate) kde_terms_per_doc: usize,
    /// Sequences to sample per class.
    #[arg(long, default_value_t = 100)]
    pub(crate) per_class: usize,
    /// h: kernel bandwidth (exp(−‖x−y‖²/(h·ℓ)); 1 is the paper's). Chosen on MTSamples.
    #[arg(long, default_value_t = crate::dp::summary::SummaryParams::DEFAULT_BANDWIDTH)]
    pub(crate) bandwidth: f64,
    /// Kernel smoothing of the histogram samplers over Ṽ's embeddings (exp(−‖v−w‖²/s)); 0: off.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) smoothing: f64,
    /// ε of the DP class counts: sequences per class in proportion to them (--per-class ×
    /// classes in all), at least one each; "off": --per-class for every class.
    #[arg(long, default_value = "0.1", value_parser = eps_counts)]
    pub(crate) eps_counts: EpsCounts,
    /// The DP utility check (`dpkps check`) that chose --sampler: the run is refused unless the
    /// ledger holds that check for this corpus and it chose this sampler; the report says so.
    #[arg(long)]
    pub(crate) from_check: Option<String>,
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
pub(crate) struct LedgerArgs {
    /// Privacy ledger file [default: $DPKPS_LEDGER, else ~/.local/share/dpkps/ledger.json].
    #[arg(long)]
    pub(crate) ledger: Option<PathBuf>,
    /// The most ε ever spent on this corpus (with --account: under the account), stored in
    /// the ledger: a run that would exceed it is refused. Required before the first run; later
    /// runs use the stored one, a lower value replaces it, a higher one needs --raise-budget.
    #[arg(long)]
    pub(crate) budget: Option<f64>,
    /// Confirms that --budget raises the stored budget (the raise is recorded in the ledger
    /// and shown in the privacy report).
    #[arg(long, requires = "budget")]
    pub(crate) raise_budget: bool,
    /// Budget account (the dataset's name): runs are recorded under it, --budget caps all
    /// that is spent under it whatever extract is read, and a corpus overlapping an earlier
    /// one of the account by 20% or more is warned about (the app does the same).
    #[arg(long)]
    pub(crate) account: Option<String>,
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


/// The declared classes of a releasing command and the name of the class gathering other
/// labels, if any (module `crate::classes`; the class set itself is built by the run plan).
pub(crate) fn declared_classes(corpus: &CorpusArgs, args: &ClassArgs) -> Result<(Vec<String>, Option<String>), CliError> {
    let labelled = corpus.labelled();
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
        return Ok((Vec::new(), None));
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
        "drop" => None,
        "class" => Some(args.other_name.clone()),
        o => return Err(CliError::Input { path: "--other".into(), message: format!("unknown choice {o:?}; use drop or class") }),
    };
    Ok((names, other))
}


/// The run settings of a releasing command: the vocabulary's parameters (the options', or those
/// a given Ṽ was released with), the summary and sampling options, the classes and the ledger's.
pub(crate) fn run_settings(
    vp: VocabParams,
    kde: &KdeArgs,
    classes: (Vec<String>, Option<String>),
    ledger: &LedgerArgs,
) -> Result<RunSettings, CliError> {
    let sampler = kde.sampler.one()?;
    ledger.check_account()?;
    let (classes, other_class) = classes;
    Ok(RunSettings {
        eps_voc: vp.epsilon,
        eps_kde: kde.eps_kde,
        terms_per_doc: vp.terms_per_doc,
        top_n: vp.top_n,
        len: kde.len,
        features: kde.features,
        per_class: kde.per_class,
        sampler,
        bandwidth: kde.bandwidth,
        classes,
        other_class,
        vocab_per_class: vp.per_class,
        reuse_vocabulary: false,
        smoothing: kde.smoothing,
        eps_counts: kde.eps_counts.0,
        account: ledger.account.clone(),
        budget: ledger.budget,
        raise_budget: ledger.raise_budget,
        // The CLI's classes are typed (--classes, --classes-file), never ticked from the data.
        classes_ticked: Vec::new(),
        kde_terms_per_doc: Some(kde.kde_terms_per_doc),
        chosen_by_check: kde.from_check.clone(),
    })
}

/// `dpkps check` (`super::check`).
#[derive(Args, Clone)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub(crate) inputs: PipelineInputs,
    #[command(flatten)]
    pub(crate) classes: ClassArgs,
    #[command(flatten)]
    pub(crate) ledger: LedgerArgs,
    /// The samplers to compare, comma-separated [default: every sampler whose release fits
    /// the settings]. Each costs ε_kde: the check costs ε_voc + (samplers) × ε_kde.
    #[arg(long, value_parser = sampler_list)]
    pub(crate) compare: Option<SamplerList>,
    /// Share of documents (persons, with --person-col) held out to score the samplers, each by
    /// an independent coin.
    #[arg(long, default_value_t = crate::eval::dp_check::DEFAULT_HOLDOUT)]
    pub(crate) holdout: f64,
    /// ε of the scores [default: the training side's ε, which costs nothing more: the check
    /// costs the larger of the two].
    #[arg(long)]
    pub(crate) eps_select: Option<f64>,
    /// Also write the result (DP outputs only) to this JSON file.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_parse_with_clap_and_name_every_sampler_from_the_list() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let every = KeyphraseSampler::ALL.to_vec();
        assert_eq!(samplers(" all ").map(|s| s.0), Ok(every.clone()));
        assert_eq!(samplers("markov, histogram,markov").map(|s| s.0), Ok(vec![KeyphraseSampler::Markov, KeyphraseSampler::Histogram]));
        // --compare keeps a repeat: the check refuses it in its own words.
        assert_eq!(sampler_list("histogram,,histogram").map(|s| s.0), Ok(vec![KeyphraseSampler::Histogram; 2]));
        for err in [samplers("nope").unwrap_err(), sampler_list("nope").unwrap_err()] {
            assert!(every.iter().all(|s| err.contains(s.name())), "{err}");
        }
        assert!(Samplers(every).one().is_err());
        assert_eq!((eps_counts("off"), eps_counts(" 0.5 ")), (Ok(EpsCounts(None)), Ok(EpsCounts(Some(0.5)))));
        assert!(eps_counts("-1").is_err() && eps_counts("x").unwrap_err().contains("neither a number nor"));
    }
}
