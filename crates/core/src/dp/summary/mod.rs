//! The ε_kde release ("DP summaries"): one artefact, [`DpSummary`], per-class noisy sums that the
//! keyphrase samplers draw sequences from (`crate::sample`), whatever the sampler.
//!
//! Two families of mechanisms fill it ([`Family`]), each with its privacy map beside it:
//! the random-feature DP-KDEs of the paper ([`kde`]: independent, iterative-linear,
//! iterative-log) and the noisy keyphrase histograms over Ṽ ([`hist`]: histogram, markov).
//! Both give exact integer sums per class and ensemble member in units of 2^-[`GRID_BITS`]
//! with a stated L1 sensitivity Δ; the release loop here adds discrete Laplace noise of scale
//! Δ·members/ε_kde to every entry ([`crate::dp::laplace`]) and writes one ledger entry per
//! class and member. Members of a class compose sequentially, classes in parallel: the whole
//! release is ε_kde-DP. Every declared class gets its sums, with no documents (noise only) if
//! need be, so the release has the same shape on neighbouring corpora.
//!
//! # How to add a keyphrase sampler
//! [`KeyphraseSampler`]'s module docs say the steps: in an existing family, the sampler's
//! registry entry (`sampler.rs`), its member in the family's file and its draws under
//! `crate::sample`; a new family is a new `impl Family` (its privacy map in its module docs)
//! and a [`Member`]. The release loop, the split build (`parts`), the artefact and the
//! ledger entries are shared; the front ends ask [`SummaryParams::needs`] and never branch on
//! it.

use serde::{Deserialize, Serialize};

use crate::input::classes::ClassSet;
use crate::dp::{laplace, DpError, SecureRng};
use crate::embed::TermEmbeddings;
use crate::ledger::{Scope, Spend};
use crate::input::matched::MatchedCorpus;
use crate::input::public_vocab::TermId;

mod family;
pub mod hist;
pub mod kde;
mod params;
pub mod parts;
mod sampler;

pub use params::{SummaryParams, MAX_HIST_CELLS};
pub use parts::MIN_DOCS_IN_PARTS;
#[cfg(not(target_arch = "wasm32"))]
pub use parts::build_threaded;
pub use sampler::{Needs, KeyphraseSampler};
pub use family::{Layout, Member, SummaryDoc, SummaryError, GRID_BITS, KERNEL};
use family::Family;

use hist::{HistKind, Histograms};
use kde::{Features, RandomFeatures};

/// One class's released sums: one I-vector per ensemble member (DP-KDE samplers), or one
/// histogram over Ṽ (histogram samplers, [`hist`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassSummary {
    /// The class name (`None`: the corpus has no labels).
    pub label: Option<String>,
    /// The noisy sums exactly as released: integers in units of 2^-GRID_BITS.
    pub sums: Vec<Vec<i64>>,
}

impl ClassSummary {
    /// Member m's noisy sums S̃ in real units.
    pub fn member_sums(&self, m: usize) -> Vec<f64> {
        self.sums[m].iter().map(|&v| v as f64 / (1u64 << GRID_BITS) as f64).collect()
    }
}

/// The released DP-KDEs: a DP artefact. Sampling more sequences from it costs nothing more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DpSummary {
    pub params: SummaryParams,
    pub dim: usize,
    /// Hex seed of ω and β (data-independent).
    pub feature_seed: String,
    pub epsilon_per_member: f64,
    pub classes: Vec<ClassSummary>,
    /// The candidates the histogram samplers' entries refer to (Ṽ's term ids, in Ṽ's order);
    /// empty for the DP-KDE samplers (their sums do not depend on the candidates).
    #[serde(default)]
    pub candidates: Vec<TermId>,
    /// The version of the sums' meaning ([`KERNEL`]): the random-feature kernel they were built
    /// with, and the markov histogram's layout; 0 in releases written before the field existed.
    #[serde(default)]
    pub kernel: u32,
}

impl DpSummary {
    pub fn features(&self) -> Result<Features, SummaryError> {
        let seed = crate::base::unhex32(&self.feature_seed).ok_or(SummaryError::BadArtefact("feature_seed"))?;
        Ok(Features::generate(self.params.features, self.dim, self.params.blocks(), self.params.bandwidth, seed))
    }

    /// Checks the artefact's shape (after loading a file).
    pub fn check(&self) -> Result<(), SummaryError> {
        self.params.validate().map_err(|e| SummaryError::Dp(e.into()))?;
        let m = self.params.ensemble().members();
        let family = self.params.sampler.family();
        let width = family.width(&self.params, self.candidates.len());
        let ok = self.classes.iter().all(|c| c.sums.len() == m && c.sums.iter().all(|s| s.len() == width))
            && (!family.keeps_candidates() || !self.candidates.is_empty());
        if !ok || self.classes.is_empty() || self.dim == 0 {
            return Err(SummaryError::BadArtefact("sums"));
        }
        if self.kernel > KERNEL {
            return Err(SummaryError::TooNew(self.kernel));
        }
        if self.kernel < self.params.sampler.first_kernel_read() {
            return Err(SummaryError::Outdated(self.params.sampler.name()));
        }
        Ok(())
    }
}


/// Whether the mechanism adds noise.
///
/// `Off` exists for unit tests and for the utility evaluation's noiseless comparison arms
/// (`crate::eval`), whose outputs are never released. It is `pub(crate)` on purpose: the only
/// public entry point, [`build`], always adds Laplace noise, so no caller outside this crate
/// (the CLI's release paths, the app, a user of the library) can produce a noiseless release.
pub(crate) enum Noise<'r> {
    Laplace(&'r mut SecureRng),
    Off,
}

/// Each sampler's family, here at the root that dispatches to the families, so that neither
/// the sampler list nor a family's files import the other's.
impl KeyphraseSampler {
    /// Its family of mechanisms ([`Family`]): the exact sums, Δ, the ensemble's members, the
    /// ledger's and the report's words; an existing family's member, or a new `impl Family`.
    pub(crate) fn family(self) -> &'static dyn Family {
        match self {
            KeyphraseSampler::Histogram => &Histograms(HistKind::Unigram),
            KeyphraseSampler::Markov => &Histograms(HistKind::Transitions),
            KeyphraseSampler::Independent => &RandomFeatures(Layout::One),
            KeyphraseSampler::IterativeLinear => &RandomFeatures(Layout::Linear),
            KeyphraseSampler::IterativeLog => &RandomFeatures(Layout::Log),
        }
    }

    /// Whether its family's exact sums are built in parts when there are many documents
    /// ([`parts`]).
    pub fn splits(self) -> bool {
        self.family().splits()
    }
}

/// What a DP summary is built from: the documents (by class index in `classes`), the
/// embeddings the family reads, Ṽ (`candidates`: term ids in Ṽ's order, the histogram samplers'
/// entries; the DP-KDE samplers do not read it) and the parameters. One value, so that every
/// way of building (here, in parts on threads or helper workers, noiseless for the evaluation)
/// takes the same inputs.
#[derive(Clone, Copy)]
pub struct SummaryInputs<'a> {
    pub docs: &'a [SummaryDoc<'a>],
    pub classes: &'a ClassSet,
    pub emb: &'a TermEmbeddings,
    pub candidates: &'a [TermId],
    pub params: &'a SummaryParams,
}

#[cfg(test)]
impl<'a> SummaryInputs<'a> {
    /// The inputs in the order tests write them.
    pub(crate) fn of(docs: &'a [SummaryDoc<'a>], classes: &'a ClassSet, emb: &'a TermEmbeddings, candidates: &'a [TermId], params: &'a SummaryParams) -> Self {
        SummaryInputs { docs, classes, emb, candidates, params }
    }
}

/// Builds the DP summaries of every declared class: ε_kde-DP (module docs; the families'
/// privacy maps: [`kde`], [`hist`]). Returns the release and one spend per class and member.
pub fn build(inputs: SummaryInputs<'_>, rng: &mut SecureRng) -> Result<(DpSummary, Vec<Spend>), SummaryError> {
    let seed = draw_seed(rng);
    build_with(inputs, seed, Noise::Laplace(rng))
}

/// The seed of ω and β: random, data-independent, released with the DP-KDEs.
pub fn draw_seed(rng: &mut SecureRng) -> [u8; 32] {
    let mut seed = [0u8; 32];
    rng.fill(&mut seed);
    seed
}

/// The exact sums Σ_docs q(doc) of the DP-KDE samplers (private: never released as such), per
/// class (index in the class set, `classes` of them) and member, for the features of `seed`.
/// Exact integers: the sums of a split of the documents add up to those of all of them, bit for
/// bit, so the work can be shared ([`parts`]) and the release stays the same.
/// Private to `dp::summary`: noiseless private sums leave it only as a part of a split build
/// ([`parts`]: `PartWork::sums`, and `parts::compute_part` for a helper worker).
fn exact_sums(docs: &[SummaryDoc<'_>], classes: usize, emb: &TermEmbeddings, params: &SummaryParams, seed: [u8; 32]) -> Result<Vec<Vec<Vec<i64>>>, SummaryError> {
    params.validate().map_err(DpError::from)?;
    let family = params.sampler.family();
    if !family.splits() {
        return Err(SummaryError::BadArtefact("sampler"));
    }
    if docs.iter().any(|d| d.class >= classes) {
        return Err(SummaryError::BadArtefact("document class"));
    }
    family.check_inputs(docs, emb, &[])?;
    Ok(family.exact_sums(docs, classes, emb, &[], params, seed))
}

/// [`build`] for a family whose sums split, with the exact sums of all of `inputs.docs` already
/// computed ([`exact_sums`], in parts, added up: [`parts`]) for the features of `seed`
/// ([`draw_seed`]). Private to `dp::summary`: it attaches the ε spends to whatever sums it is
/// given (twice the exact sums would be released at half the noise they need), so only the
/// parts driver ([`parts::build_in_parts`]; `parts::build_split_for_tests`) calls it.
fn build_from_sums(inputs: SummaryInputs<'_>, seed: [u8; 32], sums: Vec<Vec<Vec<i64>>>, rng: &mut SecureRng) -> Result<(DpSummary, Vec<Spend>), SummaryError> {
    let params = inputs.params;
    let members = params.ensemble().members();
    let family = params.sampler.family();
    let width = family.width(params, inputs.candidates.len());
    if !family.splits() || sums.len() != inputs.classes.len() || sums.iter().any(|c| c.len() != members || c.iter().any(|m| m.len() != width)) {
        return Err(SummaryError::BadArtefact("sums"));
    }
    release(inputs, seed, Noise::Laplace(rng), Some(sums))
}

pub(crate) fn build_with(inputs: SummaryInputs<'_>, seed: [u8; 32], noise: Noise<'_>) -> Result<(DpSummary, Vec<Spend>), SummaryError> {
    release(inputs, seed, noise, None)
}

/// The release loop, for every family: checks, the exact sums (computed here, or `precomputed`),
/// discrete Laplace noise of scale Δ·members/ε_kde on every entry (drawn class by class, member
/// by member, entry by entry), and one spend per class and member.
fn release(inputs: SummaryInputs<'_>, seed: [u8; 32], mut noise: Noise<'_>, precomputed: Option<Vec<Vec<Vec<i64>>>>) -> Result<(DpSummary, Vec<Spend>), SummaryError> {
    let SummaryInputs { docs, classes, emb, candidates, params } = inputs;
    params.validate().map_err(DpError::from)?;
    if docs.iter().any(|d| d.class >= classes.len()) {
        return Err(SummaryError::BadArtefact("document class"));
    }
    let family = params.sampler.family();
    family.check_inputs(docs, emb, candidates)?;
    params.check_release_size(candidates.len(), classes.len())?;
    let ensemble = params.ensemble();
    let members = ensemble.members();
    let eps_m = ensemble.epsilon_per_member(params.epsilon);
    // Δ in grid units (the family's privacy map). Noise scale Δ/ε_m = Δ·members/ε_kde, computed
    // exactly.
    let delta = params.sensitivity()?;
    let scale = params.noise_scale()?;
    let grid = (1u64 << GRID_BITS) as f64;
    let (mechanism, sensitivity) = family.mechanism(delta);
    // Sums computed already (the app's helpers) are not computed again: for the DP-KDEs that
    // would draw I·blocks·d Gaussians again, a noticeable part of a second in the app's worker.
    let exact = match precomputed {
        Some(sums) => sums,
        None => family.exact_sums(docs, classes.len(), emb, candidates, params, seed),
    };
    let mut out = Vec::with_capacity(classes.len());
    let mut spends = Vec::new();
    for (c, totals) in exact.into_iter().enumerate() {
        let sums = totals
            .into_iter()
            .map(|member| match &mut noise {
                Noise::Laplace(rng) => laplace::release_counts(member, scale, rng),
                Noise::Off => member,
            })
            .collect();
        let name = classes.name(c).to_string();
        for m in 0..members {
            spends.push(
                laplace::spend(crate::ledger::SpendStage::Summary, mechanism.clone(), eps_m)
                    .param("sampler", params.sampler.name())
                    .params(family.spend_params(params, m, candidates.len()))
                    .param("l1_sensitivity", sensitivity.clone())
                    .param("noise_scale", scale.to_f64() / grid)
                    .scope(Scope::Partition { label: name.clone() }),
            );
        }
        out.push(ClassSummary { label: classes.is_labelled().then_some(name), sums });
    }
    let set = DpSummary {
        params: *params,
        dim: emb.dim(),
        feature_seed: crate::base::hex(&seed),
        epsilon_per_member: eps_m,
        classes: out,
        candidates: if family.keeps_candidates() { candidates.to_vec() } else { Vec::new() },
        kernel: KERNEL,
    };
    Ok((set, spends))
}

/// The summaries' reading of a matched corpus (an inherent impl here, beside the summaries, so
/// that the matched corpus does not import the DP layer).
impl MatchedCorpus {
    /// The documents as the DP summaries see them: class (by the public class set; dropped
    /// documents are left out) and first `len` terms.
    pub fn summary_docs(&self, len: usize, classes: &ClassSet) -> Vec<SummaryDoc<'_>> {
        self.docs
            .iter()
            .filter_map(|d| {
                let class = classes.assign(d.label.as_deref())?;
                Some(SummaryDoc { class, terms: &d.terms[..d.terms.len().min(len)] })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kde::tests::unit_vectors;

    /// Terms 0..n with synthetic unit vectors of dimension `dim` (seed 1).
    fn embeddings_of(n: usize, dim: usize) -> TermEmbeddings {
        let mut emb = TermEmbeddings::new(dim);
        for (i, v) in unit_vectors(n, dim, 1).iter().enumerate() {
            emb.insert(i as TermId, v).unwrap();
        }
        emb
    }

    #[test]
    fn noise_scale_and_spends_follow_the_privacy_map() {
        let emb = embeddings_of(5, 4);
        let a = vec![0, 1, 2];
        let b = vec![3, 4];
        let docs = [SummaryDoc { class: 0, terms: &a }, SummaryDoc { class: 1, terms: &b }];
        let classes = ClassSet::declared(&["x", "y"], crate::input::classes::OtherLabels::Drop).unwrap();
        let params = SummaryParams { epsilon: 6.0, sampler: KeyphraseSampler::IterativeLog, len: 3, features: 64, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
        let mut rng = SecureRng::seeded_for_tests(1);
        let (set, spends) = build(SummaryInputs::of(&docs, &classes, &emb, &[], &params), &mut rng).unwrap();
        assert_eq!(set.classes.len(), 2);
        assert_eq!(spends.len(), 2 * 3);
        assert!(spends.iter().all(|s| (s.epsilon - 2.0).abs() < 1e-12));
        let mut run = crate::ledger::Run::new("r".into(), "t".into());
        run.spends = spends.clone();
        assert!((run.epsilon() - 6.0).abs() < 1e-12, "classes must compose in parallel");
        // scale = I·Q/ε_m grid units = 64·1482911/2 / 2^20 ≈ 45.25 ≈ √2·64/2
        let scale = spends[0].params["noise_scale"].as_f64().unwrap();
        assert!((scale - std::f64::consts::SQRT_2 * 64.0 / 2.0).abs() < 1e-3, "{scale}");
        set.check().unwrap();
        let json = serde_json::to_string(&set).unwrap();
        let back: DpSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, set);
    }

    #[test]
    fn releases_of_an_earlier_linear_kernel_are_refused() {
        // A release file written before the `kernel` field: an iterative-linear one was built
        // with other block scales and is refused; the other samplers' kernel is unchanged.
        let emb = embeddings_of(3, 4);
        let t = vec![0, 1, 2];
        let docs = [SummaryDoc { class: 0, terms: &t }];
        let mut rng = SecureRng::seeded_for_tests(2);
        for sampler in [KeyphraseSampler::IterativeLinear, KeyphraseSampler::IterativeLog, KeyphraseSampler::Independent] {
            let params = SummaryParams { epsilon: 1.0, sampler, len: 3, features: 8, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
            let (set, _) = build(SummaryInputs::of(&docs, &ClassSet::unlabelled(), &emb, &[], &params), &mut rng).unwrap();
            assert_eq!(set.kernel, KERNEL);
            set.check().unwrap();
            let mut json = serde_json::to_value(&set).unwrap();
            json.as_object_mut().unwrap().remove("kernel");
            let old: DpSummary = serde_json::from_value(json).unwrap();
            assert_eq!(old.kernel, 0);
            assert_eq!(old.check().is_err(), sampler == KeyphraseSampler::IterativeLinear, "{sampler:?}");
            assert!(DpSummary { kernel: KERNEL + 1, ..set }.check().is_err(), "{sampler:?}: a later kernel");
        }
    }

    #[test]
    fn markov_releases_from_before_its_keyphrase_row_are_refused() {
        // Before d8ac1f6 a markov release's row 0 was a START row, and its files carry only the
        // `kernel` field (absent, or 1 both before and after the change): they are refused with
        // words that say so, a new one round-trips and samples, and the histogram sampler's
        // old files load as before.
        let emb = embeddings_of(3, 4);
        let t = vec![0, 1, 2];
        let docs = [SummaryDoc { class: 0, terms: &t }];
        let cands = crate::sample::Candidates::without_vectors(&t, 4);
        let mut rng = SecureRng::seeded_for_tests(5);
        for sampler in [KeyphraseSampler::Markov, KeyphraseSampler::Histogram] {
            let params = SummaryParams { epsilon: 1.0, sampler, len: 3, features: 8, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
            let (set, _) = build(SummaryInputs::of(&docs, &ClassSet::unlabelled(), &emb, &t, &params), &mut rng).unwrap();
            assert_eq!(set.kernel, KERNEL);
            let back: DpSummary = serde_json::from_str(&serde_json::to_string(&set).unwrap()).unwrap();
            assert_eq!(back, set);
            back.check().unwrap();
            assert_eq!(crate::sample::draw(&back, &cands, &[2], &crate::sample::Sampling::OFF, &mut rng, crate::sample::Signals::Skip).unwrap().sequences.len(), 2, "{sampler:?}");
            for old_kernel in [None, Some(1)] {
                let mut json = serde_json::to_value(&set).unwrap();
                let obj = json.as_object_mut().unwrap();
                match old_kernel {
                    None => obj.remove("kernel"),
                    Some(k) => obj.insert("kernel".into(), k.into()),
                };
                let old: DpSummary = serde_json::from_value(json).unwrap();
                match sampler {
                    KeyphraseSampler::Markov => {
                        let e = old.check().unwrap_err();
                        assert!(matches!(e, SummaryError::Outdated("markov")), "{old_kernel:?}: {e}");
                        assert!(e.to_string().contains("earlier version"), "{e}");
                        assert!(crate::sample::draw(&old, &cands, &[2], &crate::sample::Sampling::OFF, &mut rng, crate::sample::Signals::Skip).is_err(), "sampling must refuse it too");
                    }
                    _ => old.check().unwrap(),
                }
            }
            assert!(matches!(DpSummary { kernel: KERNEL + 1, ..set }.check(), Err(SummaryError::TooNew(_))), "{sampler:?}");
        }
    }

    #[test]
    fn missing_embeddings_and_bad_parameters_are_refused() {
        let emb = TermEmbeddings::new(4);
        let t = vec![7];
        let docs = [SummaryDoc { class: 0, terms: &t }];
        let cs = ClassSet::unlabelled();
        let params = SummaryParams { epsilon: 1.0, sampler: KeyphraseSampler::Independent, len: 3, features: 64, terms_per_doc: 3, bandwidth: 1.0, smoothing: 0.0 };
        let mut rng = SecureRng::seeded_for_tests(1);
        assert!(matches!(build(SummaryInputs::of(&docs, &cs, &emb, &[], &params), &mut rng), Err(SummaryError::MissingEmbedding(7))));
        let outside = [SummaryDoc { class: 1, terms: &t }];
        assert!(matches!(build(SummaryInputs::of(&outside, &cs, &emb, &[1], &SummaryParams { sampler: KeyphraseSampler::Histogram, ..params }), &mut rng), Err(SummaryError::BadArtefact(_))));
        for bad in [
            SummaryParams { epsilon: f64::NAN, ..params },
            SummaryParams { len: 0, ..params },
            SummaryParams { features: 0, ..params },
            SummaryParams { terms_per_doc: 0, ..params },
            SummaryParams { bandwidth: 0.0, ..params },
            SummaryParams { bandwidth: f64::INFINITY, ..params },
            SummaryParams { smoothing: -1.0, ..params },
            SummaryParams { smoothing: 0.001, ..params },
        ] {
            assert!(matches!(build(SummaryInputs::of(&docs, &cs, &emb, &[], &bad), &mut rng), Err(SummaryError::Dp(_))), "{bad:?}");
        }
    }
}
