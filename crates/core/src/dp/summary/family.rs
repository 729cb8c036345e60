//! What the release loop (`super`) and every family of samplers share: the [`Family`] trait
//! and its [`Member`]s, the documents as a family reads them, the fixed-point grid, the
//! release version and the errors. A leaf of `super`: the families (`super::hist`,
//! `super::kde`) import it, and it imports neither, so that no import runs both ways between
//! the root and a family's folder.

use crate::dp::DpError;
use crate::embed::TermEmbeddings;
use crate::input::public_vocab::TermId;

use super::hist::HistKind;
use super::params::SummaryParams;

/// Grid of the fixed-point sums: 2^-GRID_BITS.
pub const GRID_BITS: i32 = 20;

/// The version of what a release's sums mean, so that a file saved by an earlier version is
/// refused ([`super::DpSummary::check`]) rather than read with a meaning it was not built with:
/// - 0 (releases without the field): the paper's block scales ([`super::kde::Ensemble::scales`]), 1/√ℓ
///   for every block, which the independent and logarithmic samplers still use;
/// - 1: the iterative-linear kernel with λ on the prefix (an iterative-linear release below 1
///   is refused);
/// - 2: the markov histogram's row 0 is the class's keyphrase histogram ([`super::hist`], since
///   d8ac1f6); before, it was a START row of first transitions. Markov releases below 2 are
///   refused: those of version 1 were saved both before and after that change, so the number
///   cannot tell them apart. The histogram and DP-KDE samplers read every version as before.
pub const KERNEL: u32 = 2;

#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error(transparent)]
    Dp(#[from] DpError),
    #[error("the term with id {0} has no embedding")]
    MissingEmbedding(TermId),
    #[error("the release would hold {cells} noisy counts (the Markov sampler keeps (N+1)·N per class), more than {max}: choose a smaller N, fewer classes, or the histogram sampler")]
    TooLarge { cells: usize, max: usize },
    #[error("the DP-KDE file is damaged or from another version ({0})")]
    BadArtefact(&'static str),
    /// A release whose sums this version would read with another meaning ([`KERNEL`]).
    #[error("this {0} release was saved by an earlier version of dpkps, whose {0} sampler built it differently; this version would misread it: build the release again")]
    Outdated(&'static str),
    #[error("this release was saved by a later version of dpkps (release version {0}; this one reads up to {KERNEL}): use that version to sample from it")]
    TooNew(u32),
}

/// One document as a summary sees it: its class (index in the [`crate::input::classes::ClassSet`]) and its keyphrases
/// in order. Documents that the class set drops are not passed at all.
#[derive(Debug, Clone, Copy)]
pub struct SummaryDoc<'a> {
    pub class: usize,
    pub terms: &'a [TermId],
}

/// How a sampler's ensemble members cover prefix lengths: its family states it
/// (`Family::layout` in `crate::dp::summary`), so that the ensemble never names a sampler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One member over single keyphrases (the independent DP-KDE, the histograms).
    One,
    /// One member per prefix length ℓ = 1..L (iterative-linear).
    Linear,
    /// Member j over prefixes of length (2^(j-1), 2^j], ⌈log₂L⌉+1 of them (iterative-log).
    Log,
}

impl Layout {
    /// Whether its members score prefixes (one block per position, sequences drawn keyphrase by
    /// keyphrase), not single keyphrases drawn independently.
    pub fn over_prefixes(self) -> bool {
        match self {
            Layout::One => false,
            Layout::Linear | Layout::Log => true,
        }
    }
}

/// A family of ε_kde mechanisms: what the release loop ([`super::build`]) needs to know of the
/// samplers it serves. Each implementation states its privacy map in its module docs: the
/// exact sums, and why one document changes one member's sums of one class by at most Δ in L1.
pub(crate) trait Family: Sync {
    /// Refuses inputs the family cannot read (checked before anything is computed or spent).
    fn check_inputs(&self, docs: &[SummaryDoc<'_>], emb: &TermEmbeddings, candidates: &[TermId]) -> Result<(), SummaryError>;
    /// The exact sums (private: never released as such) per class (index in the class set,
    /// `classes` of them) and ensemble member, in grid units, each [`Family::width`] long.
    fn exact_sums(&self, docs: &[SummaryDoc<'_>], classes: usize, emb: &TermEmbeddings, candidates: &[TermId], params: &SummaryParams, seed: [u8; 32]) -> Vec<Vec<Vec<i64>>>;
    /// Δ: the L1 sensitivity of one member's sums, in grid units.
    fn sensitivity(&self, params: &SummaryParams) -> Result<u64, DpError>;
    /// Entries of one member's sums, for `candidates` terms in Ṽ.
    fn width(&self, params: &SummaryParams, candidates: usize) -> usize;
    /// The ledger's words: the mechanism, and Δ in real units (Δ = `delta` grid units).
    fn mechanism(&self, delta: u64) -> (String, String);
    /// Member `member`'s own spend parameters (listed after the sampler's name and before Δ
    /// and the noise scale).
    fn spend_params(&self, params: &SummaryParams, member: usize, candidates: usize) -> Vec<(&'static str, serde_json::Value)>;
    /// Whether the release carries Ṽ (its entries refer to the candidates).
    fn keeps_candidates(&self) -> bool;
    /// Its member for this sampler ([`Member`]): which code samples from the release.
    fn member(&self) -> Member;
    /// How the sampler's ensemble members cover prefix lengths (how many summaries per class).
    fn layout(&self) -> Layout;
    /// Entries of one class's release when they grow with Ṽ (checked against
    /// [`super::MAX_HIST_CELLS`] before ε is spent: [`SummaryParams::check_release_size`]); `None` when
    /// the parameters bound them.
    fn release_cells(&self, params: &SummaryParams, candidates: usize) -> Option<usize>;
    /// The privacy report's words for the release (what is summarised, the noise's scale).
    fn report_words(&self) -> String;
    /// Parameters of its own the run's stage note names (after the classes and the sampler).
    fn note(&self, params: &SummaryParams) -> Option<String>;
    /// Whether its exact sums are built in parts when there are many documents ([`super::parts`]):
    /// sums that grow with documents × features (the DP-KDEs) and read only the documents'
    /// terms, not Ṽ. The histograms are one pass over the documents: not worth a part's copies.
    fn splits(&self) -> bool;
}

/// A family's member, for the code that reads its release (`crate::sample`, one file per
/// family): the compiler points at what a new family must be sampled with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Member {
    /// A noisy histogram over Ṽ ([`super::hist`]).
    Histogram(HistKind),
    /// Random-feature DP-KDEs ([`super::kde`]), their members laid out so.
    RandomFeatures(Layout),
}

/// The documents of each class (index in the class set), in order.
pub(crate) fn by_class<'a, 'd>(docs: &'a [SummaryDoc<'d>], classes: usize) -> Vec<Vec<&'a SummaryDoc<'d>>> {
    let mut out: Vec<Vec<&SummaryDoc<'_>>> = vec![Vec::new(); classes];
    for d in docs {
        out[d.class].push(d);
    }
    out
}
