//! The keyphrase samplers: THE place to add one.
//!
//! # How to add a keyphrase sampler
//! In an existing family, three files:
//! 1. Here: a variant of [`KeyphraseSampler`] with its `name`, `describe`,
//!    [`KeyphraseSampler::needs`] (what the front ends must embed and read for it), an entry in
//!    [`KeyphraseSampler::ALL`], its family member in [`KeyphraseSampler::family`] and, in
//!    [`KeyphraseSampler::first_kernel_read`], from which release version on its files are read.
//! 2. The family's file: the member's exact sums (a [`HistKind`] in `super::hist`; a
//!    [`Layout`] of the random-feature DP-KDEs in `super::kde::ensemble`).
//! 3. The family's file in `crate::sample` (`hist.rs`, `kde.rs`): its draws.
//!
//! A new family is a new `impl Family` beside `super::hist` and `super::kde`: the exact sums,
//! their sensitivity Δ, its members' layout, whether its sums are built in parts, the ledger's,
//! the report's and the stage note's words, with the privacy map in its module docs. It adds a
//! [`Member`] variant, and the compiler points at the code that reads its releases: the
//! sampling dispatch (`crate::sample`, plus one new file there) and the signal estimate
//! (`crate::sample::signal`). The release loop (`super::release`), the split build
//! (`super::parts`), the run, the report, the evaluation and the worker are shared.
//!
//! Front ends never branch on the sampler: they ask [`KeyphraseSampler::needs`] (through
//! [`super::SummaryParams::needs`]) what to embed and how many terms per document to read.

use serde::{Deserialize, Serialize};

use super::family::Member;
use super::hist::HistKind;

/// The most keyphrases per sequence (L) and per document (M); the histogram samplers read this
/// many of a document's kept terms (most used first).
pub const MAX_LEN: usize = 64;

/// The keyphrase samplers of DP-KPS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyphraseSampler {
    /// One DP-KDE over single keyphrases; L i.i.d. draws.
    Independent,
    /// L DP-KDEs, member ℓ over length-ℓ prefixes; the scored (last) block at bandwidth h, the
    /// prefix weighted by λ (module docs, "The iterative-linear kernel").
    IterativeLinear,
    /// ⌈log₂L⌉+1 DP-KDEs, as in the paper: member j is built on ONE prefix per document, of
    /// length min(2^j, the document's length), zero-padded to 2^j blocks at bandwidth 2^-j; it
    /// scores queries of length (2^(j-1), 2^j], zero-padded the same way. The paper's estimator
    /// is kept: pooling every prefix of those lengths at bandwidth 1/ℓ instead was within noise
    /// of it on MTSamples, noiseless (0.86 ± 0.05 vs 0.90 ± 0.02 of the non-private accuracy).
    IterativeLog,
    /// A noisy histogram of the documents' keyphrases over Ṽ (L1 sensitivity 1, `super::hist`);
    /// L i.i.d. draws.
    Histogram,
    /// A noisy histogram over Ṽ of the keyphrases (row 0) and their transitions (`super::hist`);
    /// Markov chains.
    Markov,
}

impl KeyphraseSampler {
    /// Every sampler, in the order the CLI and the page list them.
    pub const ALL: [KeyphraseSampler; 5] =
        [KeyphraseSampler::Histogram, KeyphraseSampler::Markov, KeyphraseSampler::Independent, KeyphraseSampler::IterativeLinear, KeyphraseSampler::IterativeLog];

    pub fn name(self) -> &'static str {
        match self {
            KeyphraseSampler::Independent => "independent",
            KeyphraseSampler::IterativeLinear => "iterative-linear",
            KeyphraseSampler::IterativeLog => "iterative-log",
            KeyphraseSampler::Histogram => "histogram",
            KeyphraseSampler::Markov => "markov",
        }
    }

    pub fn parse(s: &str) -> Option<KeyphraseSampler> {
        KeyphraseSampler::ALL.into_iter().find(|x| x.name() == s.trim())
    }

    /// The first release version (`super::KERNEL`) whose files of this sampler mean what this
    /// version reads (`super::DpSummary::check` refuses earlier ones).
    pub(crate) fn first_kernel_read(self) -> u32 {
        match self {
            KeyphraseSampler::IterativeLinear => 1,
            KeyphraseSampler::Markov => 2,
            KeyphraseSampler::Histogram | KeyphraseSampler::Independent | KeyphraseSampler::IterativeLog => 0,
        }
    }

    /// The histogram samplers' kind (`None`: another family's sampler).
    pub fn hist_kind(self) -> Option<HistKind> {
        match self.family().member() {
            Member::Histogram(kind) => Some(kind),
            Member::RandomFeatures(_) => None,
        }
    }

    /// What the sampler reads, for a release of sequences of `len` keyphrases, `terms_per_doc`
    /// (M) keyphrases per document for the independent KDE and histogram smoothing
    /// `smoothing` (0: off): front ends embed and read exactly this ([`Needs`]).
    pub fn needs(self, len: usize, terms_per_doc: usize, smoothing: f64) -> Needs {
        match self {
            KeyphraseSampler::Independent => Needs { document_term_vectors: true, candidate_vectors: true, terms_read_per_doc: terms_per_doc },
            KeyphraseSampler::IterativeLinear | KeyphraseSampler::IterativeLog => Needs { document_term_vectors: true, candidate_vectors: true, terms_read_per_doc: len },
            // Every kept term: the histograms look for a document's first M kept terms that are in Ṽ.
            KeyphraseSampler::Histogram | KeyphraseSampler::Markov => Needs { document_term_vectors: false, candidate_vectors: smoothing > 0.0, terms_read_per_doc: MAX_LEN },
        }
    }

    /// One sentence on what the sampler keeps (CLI help, the page).
    pub fn describe(self) -> &'static str {
        match self {
            KeyphraseSampler::Histogram => "each class's keyphrase frequencies over Ṽ, with little noise (sensitivity 1); keyphrases drawn independently",
            KeyphraseSampler::Markov => "each class's keyphrase frequencies and which keyphrase comes next in a document's terms, most used first (one noisy histogram over Ṽ: a keyphrase row and transition counts); sequences drawn as Markov chains",
            KeyphraseSampler::Independent => "the paper's DP-KDE over single keyphrases (random Fourier features, sensitivity √2·I); drawn independently",
            KeyphraseSampler::IterativeLinear => "DP-KDEs over keyphrase prefixes, one per length (ε split L ways): the paper's, with the scored keyphrase compared sharply and its prefix loosely",
            KeyphraseSampler::IterativeLog => "the paper's DP-KDEs over keyphrase prefixes, one per power-of-two length (ε split ⌈log₂L⌉+1 ways)",
        }
    }
}

/// What a sampler reads ([`KeyphraseSampler::needs`]): which embeddings a front end must compute and
/// how many of a document's kept terms (most used first) it must keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// The embeddings of the documents' terms (the mechanism reads them: the DP-KDEs).
    pub document_term_vectors: bool,
    /// The embeddings of Ṽ's terms (sampling reads them: the DP-KDEs always, the histograms
    /// only to smooth). Without them, `crate::sample::Candidates::without_vectors` suffices.
    pub candidate_vectors: bool,
    /// How many of a document's kept terms (most used first) the mechanism reads.
    pub terms_read_per_doc: usize,
}
