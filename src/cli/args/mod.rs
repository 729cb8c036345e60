//! The command line: the subcommands (clap). Their shared option groups are the files here,
//! each a leaf that the commands' own modules import: the corpus, the vocabulary, the
//! summary, the model, the ledger, and the inputs of a whole run, which become the run
//! settings that the page sends too (`inputs::run_settings`): one plan type for both front ends.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use dpkps_core::input::corpus::Format;

use super::{bench, evaluate, generate, select, train, vectors};

pub(crate) mod corpus;
pub(crate) mod inputs;
pub(crate) mod ledger;
pub(crate) mod model;
pub(crate) mod summary;
pub(crate) mod vocab;

use corpus::{ClassArgs, CorpusArgs};
use inputs::{CheckArgs, PipelineInputs};
use ledger::LedgerArgs;
use model::ModelArgs;
use summary::SummaryArgs;
use vocab::{VocabArgs, VocabDpArgs};

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
        /// Keep at most this many distinct terms per document, its most used.
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
        summary: SummaryArgs,
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
        #[command(flatten)]
        sampling: summary::SamplingArgs,
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
        /// Privacy ledger file [default: $DPKPS_LEDGER, else ~/.local/share/dpkps/ledger.json].
        #[arg(long)]
        ledger: Option<PathBuf>,
        /// Show only the ledger of this corpus (same reading options as the other commands).
        #[arg(long)]
        corpus: Vec<PathBuf>,
        #[arg(long, value_parser = corpus::format_parser())]
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
    /// The DP vote over generated candidates (ε_select): each private unit (document, or person
    /// with --person-col) votes for its nearest candidate of its class; the noisy votes choose
    /// the documents kept. Writes kept.jsonl, vote-report.json and run.json to --out-dir, and
    /// records the vote in the ledger (stage "vote") before anything is drawn.
    Select(select::SelectArgs),
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

#[cfg(test)]
mod tests {
    use super::summary::{eps_counts, sampler_list, samplers, EpsCounts, Samplers};
    use super::Cli;
    use dpkps_core::dp::summary::KeyphraseSampler;

    #[test]
    fn the_flags_parse_with_clap_and_name_every_sampler_from_the_list() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
        let every = KeyphraseSampler::ALL.to_vec();
        assert_eq!(samplers(" all ").map(|s| s.0), Ok(every.clone()));
        assert_eq!(samplers("markov, histogram,markov").map(|s| s.0), Ok(vec![KeyphraseSampler::Markov, KeyphraseSampler::Histogram]));
        // --compare keeps a repeat: the check refuses it in its own words.
        assert_eq!(sampler_list("histogram, histogram").map(|s| s.0), Ok(vec![KeyphraseSampler::Histogram; 2]));
        for err in [samplers("nope").unwrap_err(), sampler_list("nope").unwrap_err()] {
            assert!(every.iter().all(|s| err.contains(s.name())), "{err}");
        }
        assert!(Samplers(every).one().is_err());
        assert_eq!((eps_counts("off"), eps_counts(" 0.5 ")), (Ok(EpsCounts(None)), Ok(EpsCounts(Some(0.5)))));
        assert!(eps_counts("-1").is_err() && eps_counts("x").unwrap_err().contains("neither a number nor"));
    }
}
