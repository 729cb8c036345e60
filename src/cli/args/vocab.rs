//! The vocabulary options: the public list (`VocabArgs`) and the DP vocabulary Ṽ's
//! parameters (`VocabDpArgs`).

use clap::{Args, ValueEnum};

use dpkps_core::dp::vocabulary::VocabParams;

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
    /// N: size of the private vocabulary (above the list's size: the whole list). With the
    /// histogram sampler a large Ṽ costs little (terms only noise selected get no class mass)
    /// and lets real terms in at smaller counts: 50,000 kept the most utility at a few hundred
    /// documents a class on the English list (docs/utility.md); the medical list is kept whole.
    /// The markov sampler needs N ≤ ~2,800 (its release is (N+1)·N a class); for the DP-KDE
    /// samplers 100 was best (their noise spreads over every term, each one embedded).
    #[arg(long, default_value_t = dpkps_core::run::RunSettings::DEFAULT_TOP_N)]
    pub(crate) top_n: usize,
    /// S: distinct matched terms each document contributes, its most used (noise scale S/ε_voc;
    /// 3 was best on MTSamples).
    #[arg(long, default_value_t = 3)]
    pub(crate) terms_per_doc: usize,
    /// "global": one noisy histogram over all documents (the default: it kept the most utility
    /// on every corpus measured, docs/utility.md); "per-class": Ṽ from each class's own noisy
    /// histogram (round robin; parallel composition, still ε_voc).
    #[arg(long, value_enum, default_value_t = VocabScope::Global)]
    pub(crate) vocab_scope: VocabScope,
}

/// `--vocab-scope`: which histograms Ṽ is drawn from (`dpkps_core::dp::vocabulary`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum VocabScope {
    /// One noisy histogram over all documents.
    Global,
    /// Each class's own noisy histogram, round robin.
    PerClass,
}

impl VocabDpArgs {
    pub(crate) fn params(&self) -> VocabParams {
        let per_class = self.vocab_scope == VocabScope::PerClass;
        VocabParams { epsilon: self.eps_voc, top_n: self.top_n, terms_per_doc: self.terms_per_doc, per_class }
    }
}
