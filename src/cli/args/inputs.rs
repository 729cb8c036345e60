//! The option groups of a whole run (`PipelineInputs`) and of `dpkps check` (`CheckArgs`), and
//! how the options become the run settings that the page sends too ([`RunSettings`]).

use std::path::PathBuf;

use clap::Args;

use super::corpus::{ClassArgs, CorpusArgs};
use super::ledger::LedgerArgs;
use super::model::ModelArgs;
use super::summary::{sampler_list, SummaryArgs, SamplerList};
use super::vocab::{VocabArgs, VocabDpArgs};
use crate::cli::error::CliError;
use dpkps_core::dp::vocabulary::VocabParams;
use dpkps_core::run::RunSettings;

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
    pub(crate) summary: SummaryArgs,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
}

/// The run settings every command that records a run reads from its flags: the vocabulary's
/// parameters (the options', or those a given Ṽ was released with), the classes and the
/// ledger's; the rest the defaults. `dpkps vocab` runs on these alone; [`run_settings`] adds
/// the summary and sampling options. The caller checks the account (`LedgerArgs::check_account`).
pub(crate) fn vocab_settings(vp: VocabParams, classes: (Vec<String>, Option<String>), ledger: &LedgerArgs) -> RunSettings {
    let (classes, other_class) = classes;
    RunSettings {
        eps_voc: vp.epsilon,
        terms_per_doc: vp.terms_per_doc,
        top_n: vp.top_n,
        vocab_per_class: vp.per_class,
        classes,
        other_class,
        account: ledger.account.clone(),
        budget: ledger.budget,
        raise_budget: ledger.raise_budget,
        // The CLI's classes are typed (--classes, --classes-file), never ticked from the data.
        classes_ticked: Vec::new(),
        ..RunSettings::default()
    }
}

/// The run settings of a releasing command: [`vocab_settings`], the summary and sampling
/// options, and a vocabulary released by this run (never one reused from the ledger).
pub(crate) fn run_settings(
    vp: VocabParams,
    summary: &SummaryArgs,
    classes: (Vec<String>, Option<String>),
    ledger: &LedgerArgs,
) -> Result<RunSettings, CliError> {
    let sampler = summary.sampler.one()?;
    ledger.check_account()?;
    Ok(RunSettings {
        eps_kde: summary.eps_kde,
        len: summary.len,
        features: summary.features,
        per_class: summary.per_class,
        sampler,
        bandwidth: summary.bandwidth,
        reuse_vocabulary: false,
        smoothing: summary.smoothing,
        sampling: summary.sampling.get(),
        eps_counts: summary.eps_counts.0,
        kde_terms_per_doc: Some(summary.kde_terms_per_doc),
        chosen_by_check: summary.from_check.clone(),
        ..vocab_settings(vp, classes, ledger)
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
    #[arg(long, default_value_t = dpkps_core::eval::dp_check::DEFAULT_HOLDOUT)]
    pub(crate) holdout: f64,
    /// ε of the scores [default: the training side's ε, which costs nothing more: the check
    /// costs the larger of the two].
    #[arg(long)]
    pub(crate) eps_select: Option<f64>,
    /// Also write the result (DP outputs only) to this JSON file.
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}
