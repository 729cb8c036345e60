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


use super::stages::Recorder;
use super::{Host, RunError, RunPlan, Stage};
use crate::dp::vote::{self, Candidates, ClassOutcome, KeepMode, UnitVector, VoteParams};
pub use crate::dp::vote::{mechanism_words, KeepRule};
pub use super::report::vote::{VoteRecord, VoteReport};
use crate::dp::SecureRng;
use crate::input::matched::MatchedCorpus;
use crate::ledger::{Ledger, Run, SpendStage};

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
    /// The run whose keyphrase sequences the candidates were generated from, when the front end
    /// knows it (the page always does; `dpkps select --run`). The vote is then refused unless
    /// that run is on record for this very corpus with this corpus's privacy unit: only then do
    /// the run's ε and the vote's add up to one guarantee for the kept documents
    /// (`PrivacyReport::vote`), under one unit.
    pub from_run: Option<&'a str>,
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
    let VoteInputs { corpus, candidates, candidates_from, from_run } = inputs;
    // Refused from public inputs before anything is recorded: such a refusal costs nothing.
    let refuse = |host: &H, why: String| host.fail(None, RunError::Settings(why));
    // How the loaded documents are grouped into persons (hashed once: it reads every document).
    let persons_digest = corpus.persons_digest();
    // Whether the run named is known to have read these very units (`VoteReport::unit_verified`).
    let mut unit_verified = false;
    if let Some(id) = from_run {
        let mut book = host.ledger().await?;
        // As the commit will read it: a ledger an older version keyed differently counts too.
        book.adopt_older(&corpus.keys);
        match same_corpus_and_unit(&book.ledger(&corpus.fingerprint), id, corpus, persons_digest.as_deref()) {
            Ok(verified) => unit_verified = verified,
            Err(why) => return Err(refuse(host, why)),
        }
    }
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
    rec.run.persons_digest = persons_digest;
    rec.run.spends = vote::spends(&settings.params, &labels, &counts, &candidates_from);
    // On record (budget checked again inside the transaction) before any coin or noise.
    rec.commit(plan, corpus, Stage::Vote, host).await?;
    host.stage_started(Stage::Vote);
    // Read after the commit, so that a vote another tab recorded meanwhile is counted too.
    let on_candidates = {
        let book = host.ledger().await?;
        let mut ledgers = vec![book.ledger(&corpus.fingerprint)];
        ledgers.extend(super::stages::overlapping(&book, corpus).iter().map(|fp| book.ledger(fp)));
        votes_on(&ledgers, &candidates_from, rec.run.person_column.as_deref())
    };

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
        privacy_unit: super::report::unit_words(rec.run.person_column.as_deref()),
        mechanism: mechanism_words(&settings.params),
        classes,
        votes_on_candidates: on_candidates.votes,
        epsilon_votes_on_candidates: on_candidates.epsilon,
        votes_other_unit: on_candidates.other_unit,
        unit_verified,
    };
    Ok(VoteOutput { run: rec.run, report })
}

/// Whether run `id` is on record in `ledger` (the loaded corpus's) as a run that released
/// keyphrase sequences, with the corpus's privacy unit; in words, why not. `Ok(true)`: the
/// units are known to be the run's (per document, or per person with equal digests of the
/// grouping); `Ok(false)`: per person, but the run recorded no digest (before it was kept).
/// `digest`: the loaded corpus's `persons_digest`.
fn same_corpus_and_unit(ledger: &Ledger, id: &str, corpus: &MatchedCorpus, digest: Option<&str>) -> Result<bool, String> {
    let unit = corpus.persons.as_ref().map(|p| p.column.as_str());
    let words = |u: Option<&str>| u.map_or("the document as its privacy unit".to_string(), |c| format!("the person column “{c}”"));
    match ledger.runs.iter().find(|r| r.id == id) {
        None => Err(format!(
            "the run {id} that released these documents' keyphrases is not on record for the loaded corpus: load the corpus that \
             run read (the same documents), then vote"
        )),
        Some(r) if !r.spends.iter().any(|s| s.is(SpendStage::Summary)) => {
            Err(format!("the run {id} released no keyphrase sequences (it is not a pipeline run): name the run the documents were generated from"))
        }
        Some(r) if r.person_column.as_deref() != unit => Err(format!(
            "the run {id} read this corpus with {}, and it is loaded with {}: load it as the run read it, then vote",
            words(r.person_column.as_deref()),
            words(unit)
        )),
        // Both digests known (a run recorded before they were kept has none) and different.
        Some(r) if matches!((r.persons_digest.as_deref(), digest), (Some(then), Some(now)) if then != now) => Err(format!(
            "the run {id} read this corpus with its documents grouped into other persons (the column “{}” now groups them \
             otherwise): load the corpus as the run read it, then vote",
            unit.unwrap_or_default()
        )),
        Some(r) => Ok(unit.is_none() || (r.persons_digest.is_some() && r.persons_digest.as_deref() == digest)),
    }
}

/// The votes on record that the kept set may follow (`VoteReport::votes_on_candidates`).
struct VotesOn {
    votes: usize,
    epsilon: f64,
    other_unit: usize,
}

/// Every vote in `ledgers` (the loaded corpus's and those of corpora overlapping it) over the
/// same candidates as `from` (their SHA-256) or over any documents of the same run (`from.run`:
/// documents generated or retried since give another checksum, and the curator saw the earlier
/// vote); with neither named, every vote on those corpora.
fn votes_on(ledgers: &[Ledger], from: &serde_json::Value, unit: Option<&str>) -> VotesOn {
    let field = |v: &serde_json::Value, k: &str| v.get(k).and_then(serde_json::Value::as_str).map(str::to_string);
    let (sha, run) = (field(from, "sha256"), field(from, "run"));
    let on = |s: &crate::ledger::Spend| {
        let Some(f) = s.params.get("candidates_from").filter(|_| s.is(SpendStage::Vote)) else { return false };
        (sha.is_none() && run.is_none()) || (sha.is_some() && field(f, "sha256") == sha) || (run.is_some() && field(f, "run") == run)
    };
    let mut v = VotesOn { votes: 0, epsilon: 0.0, other_unit: 0 };
    for r in ledgers.iter().flat_map(|l| l.runs.iter()).filter(|r| r.spends.iter().any(on)) {
        v.votes += 1;
        v.epsilon += r.epsilon();
        v.other_unit += usize::from(r.person_column.as_deref() != unit);
    }
    v
}

#[cfg(test)]
mod tests;
