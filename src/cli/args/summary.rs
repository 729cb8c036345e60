//! The DP summary's options (`SummaryArgs`: ε, the sampler, its parameters) and the value parsers
//! of the sampler lists and of `--eps-counts`.

use clap::Args;

use crate::cli::error::CliError;
use dpkps_core::dp::summary::KeyphraseSampler;

#[derive(Args, Clone)]
pub(crate) struct SummaryArgs {
    /// ε for the DP-KDEs (each class gets it: classes are disjoint).
    #[arg(long)]
    pub(crate) eps_kde: f64,
    /// Sampler: histogram (a noisy keyphrase histogram over Ṽ), markov (a noisy keyphrase row
    /// plus transition histograms over Ṽ: chains start from the row and back off to it), or the
    /// paper's DP-KDEs: independent, iterative-linear, iterative-log. The default kept the most
    /// utility under DP on MTSamples (README, "evaluate"); check yours with `dpkps evaluate`.
    #[arg(long, default_value = dpkps_core::dp::summary::SummaryParams::DEFAULT_SAMPLER.name(), value_parser = samplers)]
    pub(crate) sampler: Samplers,
    /// L: keyphrases per sequence.
    #[arg(long, default_value_t = 10)]
    pub(crate) len: usize,
    /// I: random features of the DP-KDE samplers (data-independent default; see crates/core/src/dp/summary/kde/mod.rs,
    /// "Choosing I").
    #[arg(long, default_value_t = dpkps_core::dp::summary::SummaryParams::DEFAULT_FEATURES)]
    pub(crate) features: usize,
    /// M: keyphrases per document in the independent sampler's KDE, and the Ṽ-keyphrases per
    /// document of the histogram samplers (a document's most used first).
    #[arg(long, default_value_t = 10)]
    pub(crate) kde_terms_per_doc: usize,
    /// Sequences to sample per class.
    #[arg(long, default_value_t = 100)]
    pub(crate) per_class: usize,
    /// h: kernel bandwidth (exp(−‖x−y‖²/(h·ℓ)); 1 is the paper's). Chosen on MTSamples.
    #[arg(long, default_value_t = dpkps_core::dp::summary::SummaryParams::DEFAULT_BANDWIDTH)]
    pub(crate) bandwidth: f64,
    /// Kernel smoothing of the histogram samplers over Ṽ's embeddings (exp(−‖v−w‖²/s)); 0: off.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) smoothing: f64,
    #[command(flatten)]
    pub(crate) sampling: SamplingArgs,
    /// ε of the DP class counts: sequences per class in proportion to them (--per-class ×
    /// classes in all), at least one each; "off": --per-class for every class.
    #[arg(long, default_value = "0.1", value_parser = eps_counts)]
    pub(crate) eps_counts: EpsCounts,
    /// The DP utility check (`dpkps check`) that chose --sampler: the run is refused unless the
    /// ledger holds that check for this corpus and it chose this sampler; the report says so.
    #[arg(long)]
    pub(crate) from_check: Option<String>,
}

/// The histogram sampler's post-processing choices (`dpkps_core::sample::Sampling`): a run's
/// and `sample`'s.
#[derive(Args, Clone)]
pub(crate) struct SamplingArgs {
    /// γ: the histogram sampler draws a class's keyphrases ∝ p̃(t|c)·(p̃(t|c)/p̃(t))^γ from the
    /// released histograms (post-processing: crates/core/src/sample/hist.rs); 0: ∝ p̃(t|c).
    #[arg(long, default_value_t = dpkps_core::sample::Sampling::DEFAULT.distinctiveness)]
    pub(crate) distinctiveness: f64,
    /// true: the histogram sampler draws each class's sequences as distinct sets of
    /// keyphrases, so a class whose release supports few terms gets fewer sequences, not
    /// near-duplicates; false: every draw is kept.
    #[arg(long, default_value_t = dpkps_core::sample::Sampling::DEFAULT.distinct_sets, action = clap::ArgAction::Set)]
    pub(crate) distinct_sets: bool,
    /// q: the histogram sampler's threshold lets about q of a class's N noisy entries through
    /// on noise alone (τ = ln(N/(2q))/ε_kde; post-processing: crates/core/src/sample/hist.rs).
    #[arg(long, default_value_t = dpkps_core::sample::Sampling::DEFAULT.noise_survivors)]
    pub(crate) noise_survivors: f64,
}

impl SamplingArgs {
    pub(crate) fn get(&self) -> dpkps_core::sample::Sampling {
        dpkps_core::sample::Sampling { distinctiveness: self.distinctiveness, distinct_sets: self.distinct_sets, noise_survivors: self.noise_survivors }
    }
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
    names(spec)?
        .into_iter()
        .map(|s| KeyphraseSampler::parse(s).ok_or_else(|| format!("unknown sampler {s:?}; use {}", sampler_names())))
        .collect::<Result<_, _>>()
        .map(SamplerList)
}

/// The names of a comma-separated list, trimmed; an empty one ("histogram,", ",,") refused
/// rather than skipped: a list that reads as other than it was typed is a typo to show.
fn names(spec: &str) -> Result<Vec<&str>, String> {
    let names: Vec<&str> = spec.split(',').map(str::trim).collect();
    if names.iter().any(|n| n.is_empty()) {
        return Err(format!("{spec:?} has an empty name: give sampler names separated by single commas ({})", sampler_names()));
    }
    Ok(names)
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
    for name in names(spec)? {
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
    dpkps_core::dp::check_epsilon("ε for the class counts (--eps-counts)", e).map_err(|e| e.to_string())?;
    Ok(EpsCounts(Some(e)))
}

#[cfg(test)]
mod tests {
    use super::{sampler_list, samplers};

    #[test]
    fn a_list_with_an_empty_name_is_refused() {
        for bad in ["histogram,", ",histogram", "histogram,,markov", "", " , "] {
            assert!(samplers(bad).is_err(), "{bad:?}");
            assert!(sampler_list(bad).is_err(), "{bad:?}");
        }
        assert_eq!(samplers("histogram, markov").map(|s| s.0.len()), Ok(2));
        assert_eq!(sampler_list("histogram").map(|s| s.0.len()), Ok(1));
        assert!(samplers("all").is_ok());
    }
}
