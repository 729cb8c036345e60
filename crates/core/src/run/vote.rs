//! The DP vote over generated candidates as a run: planned, held to the budget, its ε recorded
//! before any coin or noise is drawn, then the release (`crate::dp::vote`, the mechanism and
//! its privacy map). The CLI (`dpkps select`) drives it through the same [`Host`] as a run; the
//! page would too (the front end embeds the documents: [`vote`]'s `embed`).
//!
//! **A run of its own, after generation.** It is recorded in the ledger like the DP utility
//! check: a [`Run`] under the private corpus's fingerprint (the corpus whose units vote) and the
//! account, with the privacy unit, and one spend of the stage "vote" per declared class
//! (the classes compose in parallel: the run costs ε′, `VoteParams::charged_epsilon`). Each
//! spend names what it voted on (`candidates_from`: a SHA-256 of the candidates' labels and
//! texts in order, and the run that released their keyphrase sequences when the front end
//! knows it), so a ledger reader can tie the vote to its candidates and to their run. The
//! budget rules are a run's: the account's and corpus's budgets, every overlapping corpus, the
//! check inside the commit.
//!
//! **Embedding the private documents.** `embed` gets the indices of the documents to embed and
//! must return one vector per document that is a function of that document's text alone: one
//! model call per document (`crate::cli::embedders`, the recipient's path, does so; a batch
//! laid out by document length would pad each text to its batch-mates' longest, and tract's
//! bits follow the padded shape, so one document's vector would follow the others'). Only the
//! documents of the units the coins let in are embedded (the point of subsampling a corpus too
//! large to embed whole), and only after the ε is on record. The vectors stay in memory.

use serde::{Deserialize, Serialize};

use super::stages::Recorder;
use super::{Host, RunError, RunPlan, RunSettings, Stage};
use crate::dp::vote::{self, Candidates, ClassOutcome, KeepMode, UnitVector, VoteParams};
use crate::dp::SecureRng;
use crate::input::matched::MatchedCorpus;
use crate::ledger::Run;

/// How many candidates each class keeps (public).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeepRule {
    /// k per class (fewer when a class has fewer candidates).
    PerClass(usize),
    /// One kept per c candidates of the class (⌊m/c⌋, at least 1 when there is a candidate):
    /// c is the public number of candidates generated per kept document.
    CandidatesPerKept(usize),
}

impl KeepRule {
    /// Kept of a class with `candidates` candidates (a DP output: public).
    pub fn kept_of(self, candidates: usize) -> usize {
        match self {
            KeepRule::PerClass(k) => k.min(candidates),
            KeepRule::CandidatesPerKept(c) if candidates > 0 => (candidates / c.max(1)).max(1),
            KeepRule::CandidatesPerKept(_) => 0,
        }
    }

    fn check(self) -> Result<(), String> {
        match self {
            KeepRule::PerClass(0) => Err("keep at least one candidate per class".into()),
            KeepRule::CandidatesPerKept(0) => Err("the candidates per kept document must be at least 1".into()),
            _ => Ok(()),
        }
    }
}

/// The vote's public settings.
#[derive(Debug, Clone, PartialEq)]
pub struct VoteSettings {
    pub params: VoteParams,
    pub keep: KeepRule,
    pub mode: KeepMode,
}

impl From<crate::dp::vote::VotePlan> for VoteSettings {
    /// The vote a run planned (`RunSettings::vote`): one kept per c candidates of each class.
    fn from(p: crate::dp::vote::VotePlan) -> VoteSettings {
        VoteSettings { params: p.params(), keep: KeepRule::CandidatesPerKept(p.candidates_per_kept), mode: p.keep_mode }
    }
}

/// What embeds the private documents: one vector per document index, each a function of that
/// document's text alone (module docs). A closure is one (the CLI, the tests); the page's worker
/// embeds asynchronously (helper workers, progress, Cancel).
#[allow(async_fn_in_trait)]
pub trait DocumentEmbedder {
    async fn embed_documents(&mut self, docs: &[usize]) -> Result<Vec<Vec<f32>>, RunError>;
}

impl<F: FnMut(&[usize]) -> Result<Vec<Vec<f32>>, RunError>> DocumentEmbedder for F {
    async fn embed_documents(&mut self, docs: &[usize]) -> Result<Vec<Vec<f32>>, RunError> {
        self(docs)
    }
}

/// What the vote reads: the corpus (labels, persons, keys: the ledger's corpus), the public
/// candidates per declared class, and what ties them to their origin (`candidates_from`).
pub struct VoteInputs<'a> {
    pub corpus: &'a MatchedCorpus,
    pub candidates: &'a Candidates,
    pub candidates_from: serde_json::Value,
}

/// The vote's release as it is written and shown: DP outputs and public settings only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoteReport {
    /// The vote's run in the ledger.
    pub run: String,
    /// ε of the noise, and what the ledger charged (less with subsampling).
    pub epsilon: f64,
    pub epsilon_charged: f64,
    pub sample_rate: f64,
    pub noise_scale: f64,
    pub keep: KeepRule,
    pub keep_mode: KeepMode,
    /// "document", or "person (column …)".
    pub privacy_unit: String,
    pub mechanism: String,
    pub classes: Vec<ClassOutcome>,
}

/// The vote as the report of its kept documents states it: `dpkps select` writes this as
/// vote-report.json; the page adds it to the privacy report (`PrivacyReport::vote`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoteRecord {
    pub vote: VoteReport,
    /// What was voted on (`VoteInputs::candidates_from`).
    pub candidates_from: serde_json::Value,
    /// Documents kept, over every class.
    pub kept: usize,
}

/// What a vote's spends name as its candidates (`candidates_from.sha256`): a SHA-256 of every
/// candidate's label (empty when none) and text, in order; `dpkps select` over its file's lines,
/// the page over the documents it sends.
pub fn candidates_sha256<'a>(candidates: impl IntoIterator<Item = (Option<&'a str>, &'a str)>) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for (label, text) in candidates {
        hash.update(label.unwrap_or("").as_bytes());
        hash.update([0]);
        hash.update(text.as_bytes());
        hash.update([b'\n']);
    }
    crate::base::hex(&hash.finalize())
}

/// A finished vote: its ledger entry and its release.
pub struct VoteOutput {
    pub run: Run,
    pub report: VoteReport,
}

/// The plan a vote is held to: the class set (declared, public), the account and the budget;
/// the other settings stay at their defaults and are not read. `labelled`: whether the corpus
/// is read with a label column.
pub fn plan(settings: RunSettings, labelled: bool) -> Result<RunPlan, RunError> {
    let classes = settings.class_set(labelled).map_err(|e| RunError::Settings(e.message))?;
    if let Some(b) = settings.budget {
        if !(b.is_finite() && b >= 0.0) {
            return Err(RunError::Settings(format!("the budget {b} must be a number of at least 0")));
        }
    }
    let account = settings.account_name();
    Ok(RunPlan { settings, classes, account })
}

/// The vote's words in the report.
pub fn mechanism_words(params: &VoteParams) -> String {
    let sub = if params.sample_rate < 1.0 {
        format!(
            "; each unit votes by its own coin of rate q = {} (Poisson subsampling), so the ledger charges ε′ = ln(1 + q(e^ε − 1)) = {:.4}",
            params.sample_rate,
            params.charged_epsilon()
        )
    } else {
        String::new()
    };
    format!(
        "each private unit votes for its nearest generated candidate of its class (cosine of sentence embeddings); the vote histogram \
         (L1 sensitivity 1: a unit votes once, in one class) is released with discrete Laplace noise of scale 1/ε = {:.4}; \
         classes compose in parallel{sub}; what is kept is post-processing of the noisy votes",
        1.0 / params.epsilon
    )
}

/// Runs the vote of `inputs.corpus`'s units over the candidates and records its ε; the release
/// is returned only once recorded. `embed(docs)`: one vector per document index, each a
/// function of that document alone (module docs).
pub async fn vote<H: Host>(
    plan: &RunPlan,
    inputs: VoteInputs<'_>,
    settings: &VoteSettings,
    embed: &mut impl DocumentEmbedder,
    host: &mut H,
    rng: &mut SecureRng,
) -> Result<VoteOutput, H::Error> {
    let VoteInputs { corpus, candidates, candidates_from } = inputs;
    // Refused from public inputs before anything is recorded: such a refusal costs nothing.
    let refuse = |host: &H, why: String| host.fail(None, RunError::Settings(why));
    if let Err(e) = settings.params.check() {
        return Err(refuse(host, e.to_string()));
    }
    if let Err(e) = settings.keep.check() {
        return Err(refuse(host, e));
    }
    if candidates.classes() != plan.classes.len() {
        return Err(refuse(host, format!("candidates are given for {} classes, the class set has {}", candidates.classes(), plan.classes.len())));
    }
    let labels: Vec<&str> = (0..plan.classes.len()).map(|c| plan.classes.name(c)).collect();
    let counts: Vec<usize> = (0..plan.classes.len()).map(|c| candidates.count(c)).collect();
    let charged = settings.params.charged_epsilon();
    let mut rec = Recorder::start(plan, corpus, charged, host, rng).await?;
    rec.run.spends = vote::spends(&settings.params, &labels, &counts, &candidates_from);
    // On record (budget checked again inside the transaction) before any coin or noise.
    rec.commit(plan, corpus, Stage::Vote, host).await?;
    host.stage_started(Stage::Vote);

    // The units that can vote: in a declared class that has candidates (public per class).
    let voters: Vec<crate::input::units::Member> = crate::input::units::members(corpus, &plan.classes)
        .into_iter()
        .filter(|m| m.class.is_some_and(|c| candidates.count(c) > 0) && !m.docs.is_empty())
        .collect();
    let coins = vote::coins(voters.len(), settings.params.sample_rate, rng).map_err(|e| host.fail(Some(Stage::Vote), e.into()))?;
    let voting: Vec<&crate::input::units::Member> = voters.iter().zip(&coins).filter(|(_, &c)| c).map(|(m, _)| m).collect();
    let docs: Vec<usize> = voting.iter().flat_map(|m| m.docs.iter().copied()).collect();
    let vectors = embed.embed_documents(&docs).await.map_err(|e| host.fail(Some(Stage::Vote), e))?;
    if vectors.len() != docs.len() {
        return Err(host.fail(Some(Stage::Vote), RunError::Refused(format!("{} vectors for {} documents", vectors.len(), docs.len()))));
    }
    host.checkpoint().await?;
    let mut at = 0;
    let mut units = Vec::with_capacity(voting.len());
    for m in &voting {
        let mine: Vec<&[f32]> = vectors[at..at + m.docs.len()].iter().map(Vec::as_slice).collect();
        at += m.docs.len();
        if let Some(u) = m.class.and_then(|c| UnitVector::of_documents(c, &mine)) {
            units.push(u);
        }
    }
    drop(vectors);
    let noisy = vote::release(candidates, &units, settings.params.epsilon, rng)
        .map_err(|e| host.fail(Some(Stage::Vote), RunError::Refused(e.to_string())))?;
    drop(units);
    let classes: Vec<ClassOutcome> = noisy
        .votes
        .into_iter()
        .enumerate()
        .map(|(c, v)| vote::outcome(labels[c], v, settings.keep.kept_of(counts[c]), settings.mode, rng))
        .collect();
    let kept: usize = classes.iter().map(|c| c.kept.len()).sum();
    host.stage_done(Stage::Vote, format!("ε′ = {charged:.4} recorded; {kept} of {} candidates kept", counts.iter().sum::<usize>()));
    let report = VoteReport {
        run: rec.run.id.clone(),
        epsilon: settings.params.epsilon,
        epsilon_charged: charged,
        sample_rate: settings.params.sample_rate,
        noise_scale: noisy.noise_scale,
        keep: settings.keep,
        keep_mode: settings.mode,
        privacy_unit: match &corpus.persons {
            Some(p) => format!("person (column “{}”)", p.column),
            None => "document".into(),
        },
        mechanism: mechanism_words(&settings.params),
        classes,
    };
    Ok(VoteOutput { run: rec.run, report })
}

#[cfg(test)]
mod tests;
