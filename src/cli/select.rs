//! `dpkps select`: the DP vote over generated candidates (`dpkps_core::run::vote`, mechanism and
//! proof in `dpkps_core::dp::vote`), after `dpkps generate`. The private corpus's units vote for
//! their nearest candidate of their class; the noisy votes choose the documents kept, which are
//! written with a report of what the release says (DP outputs only) and recorded in the ledger
//! as a run of its own (stage "vote") before anything is drawn.
//!
//! Candidates per kept document (c) are a public setting: generate k × c per class (`dpkps
//! pipeline --per-class K×C`, or `dpkps sample --per-class K×C` from a saved release, then
//! `dpkps generate`) and keep one per c (`--candidates-per-kept C`) or k per class (`--keep K`).
//!
//! Every text is embedded alone by the bundled model (`super::embedders`, one model call per
//! document on every core): a vector is then a function of its own text, as the vote's proof
//! needs; the private vectors stay in memory.

use std::path::{Path, PathBuf};

use clap::Args;

use super::args::corpus::{declared_classes, ClassArgs, CorpusArgs};
use super::args::ledger::LedgerArgs;
use super::args::model::ModelArgs;
use super::error::CliError;
use super::io::{inputs, load_embedders, print_stats, read_corpus, write_file, write_json, write_private_json};
use super::run::{block_on, CliHost, Model};
use dpkps_core::dp::vote::{Candidates, KeepMode, VoteParams};
use dpkps_core::dp::SecureRng;
use dpkps_core::input::corpus::{Fields, Ingest};
use dpkps_core::input::matched::MatchedCorpus;
use dpkps_core::ledger::Run;
use dpkps_core::run::vote::{KeepRule, VoteInputs, VoteSettings};
use dpkps_core::run::{RunError, RunSettings};

#[derive(Args)]
pub(crate) struct SelectArgs {
    #[command(flatten)]
    corpus: CorpusArgs,
    #[command(flatten)]
    classes: ClassArgs,
    #[command(flatten)]
    ledger: LedgerArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// The candidates: the folder `dpkps generate --out-dir` wrote from a run (its
    /// synthetic.jsonl and privacy-report.json). They must be DP outputs (documents generated
    /// from a run's DP keyphrase sequences): they are public to the vote. A folder without a run's
    /// report, or a bare JSONL file ("text" and "label" lines), only with --unrecorded-candidates.
    #[arg(long)]
    generated: PathBuf,
    /// Acknowledges candidates that are not a run's generated documents (a benchmark on a
    /// public corpus, `generate --sequences`): the vote is then ε-DP for the private corpus given
    /// those candidates, but the kept documents are only as private as the candidates were.
    #[arg(long)]
    unrecorded_candidates: bool,
    /// The run that released the candidates' keyphrase sequences (`dpkps pipeline --out-dir`):
    /// its id (run.json) is recorded with the vote, tying it to its candidates' run. The vote is
    /// then refused unless that run is in the ledger for this corpus with this privacy unit.
    #[arg(long)]
    run: Option<PathBuf>,
    /// ε of the vote's noise (discrete Laplace of scale 1/ε on every candidate's vote count).
    #[arg(long)]
    eps_select: f64,
    /// Candidates kept per class.
    #[arg(long, required_unless_present = "candidates_per_kept", conflicts_with = "candidates_per_kept")]
    keep: Option<usize>,
    /// One candidate kept per this many of its class (the candidates generated per kept document).
    #[arg(long)]
    candidates_per_kept: Option<usize>,
    /// How the kept candidates are chosen from the noisy votes: the k best, or k drawn in
    /// proportion to the clipped noisy votes.
    #[arg(long, value_parser = keep_mode, default_value = "top")]
    keep_mode: KeepMode,
    /// The share of units (documents, or persons with --person-col) that vote, each by its own
    /// coin: below 1 only they are embedded, and the ledger charges ln(1 + q(e^ε − 1)) < ε.
    #[arg(long, default_value_t = 1.0)]
    sample_rate: f64,
    /// The output folder: kept.jsonl (the kept candidates' lines as they were), vote-report.json
    /// (DP outputs and settings) and run.json (the vote's ledger entry: keep it private).
    #[arg(long)]
    out_dir: PathBuf,
}

fn keep_mode(s: &str) -> Result<KeepMode, String> {
    KeepMode::ALL.into_iter().find(|m| m.name() == s.trim()).ok_or_else(|| format!("{s:?}: use top or proportional"))
}

/// One candidate as read: its line (written back as it was if kept), class and text.
struct Candidate {
    line: String,
    class: usize,
    text: String,
}

/// The candidates of `generated` (a folder's synthetic.jsonl, or the file), with their
/// declared class (`classes`); candidates of no declared class are counted and left out.
fn read_candidates(generated: &Path, classes: &dpkps_core::input::classes::ClassSet) -> Result<(Vec<Candidate>, usize, String), CliError> {
    let file = if generated.is_dir() { generated.join("synthetic.jsonl") } else { generated.to_path_buf() };
    let bad = |message: String| CliError::Input { path: file.display().to_string(), message };
    let text = std::fs::read_to_string(&file).map_err(|e| bad(format!("cannot read: {e}")))?;
    let (mut out, mut other) = (Vec::new(), 0);
    let mut all: Vec<(Option<String>, String)> = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| bad(format!("line {}: not JSON: {e}", n + 1)))?;
        let Some(doc) = v.get("text").and_then(|t| t.as_str()).filter(|t| !t.trim().is_empty()) else {
            return Err(bad(format!("line {}: no \"text\" to vote on", n + 1)));
        };
        let label = v.get("label").and_then(|l| l.as_str());
        all.push((label.map(str::to_string), doc.to_string()));
        match classes.assign(label) {
            Some(class) => out.push(Candidate { line: line.to_string(), class, text: doc.to_string() }),
            None => other += 1,
        }
    }
    if out.is_empty() {
        return Err(bad("holds no candidate of a declared class: nothing to vote on".into()));
    }
    let sha = dpkps_core::run::vote::candidates_sha256(all.iter().map(|(l, t)| (l.as_deref(), t.as_str())));
    Ok((out, other, sha))
}

/// Where the candidates come from, for the report: a run's generated documents (the folder's
/// privacy report, with whether the non-DP replay check filtered them), or candidates the
/// curator acknowledged as not a run's (`--unrecorded-candidates`); anything else is refused.
fn candidates_provenance(generated: &Path, acknowledged: bool) -> Result<String, CliError> {
    let report = generated.join("privacy-report.json");
    let parsed = generated.is_dir().then(|| std::fs::read_to_string(&report).ok()).flatten().and_then(|t| serde_json::from_str::<dpkps_core::run::report::PrivacyReport>(&t).ok());
    match parsed {
        Some(r) => {
            let filtered = r.replay_check.is_some_and(|c| c.dropped > 0);
            Ok(if filtered {
                "a run's generated documents, the ones the non-DP replay check flagged left out (the candidate set depends on the private corpus through that check)".into()
            } else {
                "a run's generated documents".into()
            })
        }
        None if acknowledged => Ok("not a run's generated documents (--unrecorded-candidates): the kept documents are only as private as the candidates".into()),
        None => Err(CliError::Input {
            path: generated.display().to_string(),
            message: "is not a folder `dpkps generate` wrote from a run (no privacy-report.json beside synthetic.jsonl): the candidates must be \
                      DP outputs; for a public corpus or a benchmark, acknowledge them with --unrecorded-candidates"
                .into(),
        }),
    }
}

/// The run a `dpkps generate` folder's privacy report names (reports before it was kept: none).
fn report_run(generated: &Path) -> Option<String> {
    let text = std::fs::read_to_string(generated.join("privacy-report.json")).ok()?;
    let r: dpkps_core::run::report::PrivacyReport = serde_json::from_str(&text).ok()?;
    Some(r.run).filter(|r| !r.is_empty())
}

/// The corpus's texts, in the order `read_corpus` numbers its documents (a second pass over
/// the same files, as the replay check reads them again), each checked against the first
/// read's document hash: a file that changed between the reads would give a unit another
/// unit's text.
fn read_texts(corpus: &CorpusArgs, first_read: &[[u8; 32]]) -> Result<Vec<String>, CliError> {
    let expected = first_read.len();
    let fields = Fields { text: corpus.text_col.clone(), label: corpus.label_col.clone(), person: corpus.person_col.clone() };
    let mut ingest = Ingest::new(corpus.labelled());
    let mut texts = Vec::with_capacity(expected);
    for input in inputs(corpus)? {
        let name = input.path.display().to_string();
        let file = std::fs::File::open(&input.path).map_err(|e| CliError::Input { path: name.clone(), message: format!("cannot open: {e}") })?;
        dpkps_core::input::corpus::stream(std::io::BufReader::new(file), &name, input.format, &fields, input.txt_label.as_deref(), &mut ingest, &mut |d| {
            texts.push(d.text.to_string())
        })?;
    }
    let same = texts.len() == expected && texts.iter().zip(first_read).all(|(t, h)| dpkps_core::input::corpus::doc_hash(t) == *h);
    if !same {
        return Err(CliError::Input { path: "--corpus".into(), message: "the files changed while they were read: read them again".into() });
    }
    Ok(texts)
}

/// The corpus with its keys keyed by the ledger's secret (no matching: the vote reads texts).
fn read_keyed(corpus: &CorpusArgs, ledger: &LedgerArgs, classes: &dpkps_core::input::classes::ClassSet) -> Result<MatchedCorpus, CliError> {
    let mut mc = read_corpus(corpus, None, 0)?;
    let path = super::io::ledger_path(ledger);
    mc.key_with(&super::local_key::for_ledger(&path, &super::ledger_file::read(&path)?)?);
    print_stats(&mc);
    if let Some(u) = dpkps_core::input::units::unit_stats(&mc, classes) {
        eprintln!("privacy unit: the person; {} persons, {} document(s) of their other classes are not read", u.persons, u.documents_left_out);
    }
    Ok(mc)
}

pub(crate) fn run(args: SelectArgs) -> Result<(), CliError> {
    args.ledger.check_account()?;
    let (classes, other_class) = declared_classes(&args.corpus, &args.classes)?;
    let settings = RunSettings {
        classes,
        other_class,
        account: args.ledger.account.clone(),
        budget: args.ledger.budget,
        raise_budget: args.ledger.raise_budget,
        classes_ticked: Vec::new(),
        ..RunSettings::default()
    };
    let plan = dpkps_core::run::RunPlan::for_vote(settings, args.corpus.labelled())?;
    let params = VoteParams { epsilon: args.eps_select, sample_rate: args.sample_rate };
    params.check().map_err(|e| CliError::Input { path: "--eps-select, --sample-rate".into(), message: e.to_string() })?;
    let keep = match (args.keep, args.candidates_per_kept) {
        (Some(k), _) => KeepRule::PerClass(k),
        (None, Some(c)) => KeepRule::CandidatesPerKept(c),
        (None, None) => return Err(CliError::Input { path: "--keep".into(), message: "give --keep K or --candidates-per-kept C".into() }),
    };
    let vote_settings = VoteSettings { params, keep, mode: args.keep_mode };
    let provenance = candidates_provenance(&args.generated, args.unrecorded_candidates)?;
    let (candidates, other, sha) = read_candidates(&args.generated, &plan.classes)?;
    if other > 0 {
        eprintln!("left out {other} candidate(s) of no declared class");
    }
    let from_run = match &args.run {
        Some(dir) => Some(super::io::read_json::<Run>(&dir.join("run.json"))?.id),
        None => None,
    };
    // The generated folder's report names the run its documents came from: --run must be it.
    if let Some(id) = &from_run {
        let message = match report_run(&args.generated) {
            Some(named) if named == *id => None,
            Some(named) => Some(format!("names the run {id}, but the documents in {} were generated from the run {named}", args.generated.display())),
            None => Some(format!(
                "names the run {id}, but {} is not a folder whose privacy report names its run (`dpkps generate` from a run of this version): the vote cannot be tied to it",
                args.generated.display()
            )),
        };
        if let Some(message) = message {
            return Err(CliError::Input { path: "--run".into(), message });
        }
    }
    std::fs::create_dir_all(&args.out_dir).map_err(|e| CliError::Write { path: args.out_dir.display().to_string(), source: e })?;
    let mc = read_keyed(&args.corpus, &args.ledger, &plan.classes)?;
    let texts = read_texts(&args.corpus, &mc.keys.doc_hashes)?;
    let mut embedders = load_embedders(&args.model)?;
    let cand_texts: Vec<String> = candidates.iter().map(|c| c.text.clone()).collect();
    let cand_vectors = embedders.embed("candidates", &cand_texts)?;
    let mut per_class: Vec<Vec<Vec<f32>>> = vec![Vec::new(); plan.classes.len()];
    // Index within its class → position in the file, for writing the kept ones.
    let mut position: Vec<Vec<usize>> = vec![Vec::new(); plan.classes.len()];
    for (i, c) in candidates.iter().enumerate() {
        per_class[c.class].push(cand_vectors.data[i * cand_vectors.cols..(i + 1) * cand_vectors.cols].to_vec());
        position[c.class].push(i);
    }
    let cands = Candidates::new(cand_vectors.cols, &per_class).map_err(|e| CliError::Input { path: args.generated.display().to_string(), message: e.to_string() })?;
    let candidates_from = serde_json::json!({ "sha256": sha, "run": from_run, "model": embedders.checksum(), "provenance": provenance });
    let mut host = CliHost::open(&args.ledger, &mc, params.charged_epsilon(), Model::None, None)?;
    let mut rng = SecureRng::from_os()?;
    let mut embed = |docs: &[usize]| -> Result<Vec<Vec<f32>>, RunError> {
        let mine: Vec<String> = docs.iter().map(|&i| texts[i].clone()).collect();
        let m = embedders.embed("private documents", &mine).map_err(|e| RunError::Refused(e.to_string()))?;
        Ok(m.data.chunks_exact(m.cols.max(1)).map(<[f32]>::to_vec).collect())
    };
    let inputs = VoteInputs { corpus: &mc, candidates: &cands, candidates_from: candidates_from.clone(), from_run: from_run.as_deref() };
    let out = block_on(dpkps_core::run::vote::vote(&plan, inputs, &vote_settings, &mut embed, &mut host, &mut rng))?;
    drop(host);
    write_outputs(&args.out_dir, &out, &candidates, &position, candidates_from)
}

/// kept.jsonl, vote-report.json and run.json, and a line per class on stderr.
fn write_outputs(dir: &Path, out: &dpkps_core::run::vote::VoteOutput, candidates: &[Candidate], position: &[Vec<usize>], from: serde_json::Value) -> Result<(), CliError> {
    let mut kept: Vec<usize> = out.report.classes.iter().enumerate().flat_map(|(c, o)| o.kept.iter().map(move |&j| position[c][j])).collect();
    kept.sort_unstable();
    let mut lines = String::new();
    for i in &kept {
        lines.push_str(&candidates[*i].line);
        lines.push('\n');
    }
    write_file(&dir.join("kept.jsonl"), lines.as_bytes())?;
    // The same record the page adds to its privacy report (`PrivacyReport::vote`).
    let record = dpkps_core::run::vote::VoteRecord { vote: out.report.clone(), candidates_from: from, kept: kept.len() };
    write_json(&dir.join("vote-report.json"), &record)?;
    write_private_json(&dir.join("run.json"), &out.run)?;
    println!("DP vote {} (ε = {}, charged ε′ = {:.4}; noise scale {:.3} on each count):", out.report.run, out.report.epsilon, out.report.epsilon_charged, out.report.noise_scale);
    if out.report.votes_on_candidates > 1 {
        println!(
            "  vote {n} on these candidates or this run's documents in this ledger: the kept set follows every vote seen before it, \
             ε = {:.4} in votes; a kept set an earlier vote wrote, published after seeing this one, carries that sum too",
            out.report.epsilon_votes_on_candidates,
            n = out.report.votes_on_candidates
        );
    }
    for c in &out.report.classes {
        println!(
            "  {:<24} {} candidates, {} kept, capturing {} of the noisy votes; {} drew none",
            c.label,
            c.candidates,
            c.kept.len(),
            c.share_captured.map_or("none".to_string(), |s| format!("{:.0}%", 100.0 * s)),
            c.drew_none.len()
        );
    }
    eprintln!("wrote kept.jsonl ({} documents), vote-report.json and run.json to {}", kept.len(), dir.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use dpkps_embed::onnx::OnnxEmbedder;
    use dpkps_core::embed::Embed;

    fn bundled(f: &str) -> Vec<u8> {
        std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models").join(f)).expect("bundled model")
    }

    /// What the vote's proof needs of the private vectors: `dpkps select` embeds each document
    /// alone (`super::super::embedders`), so its vector is the same bits whatever the other
    /// documents are. A batch laid out by length (`dpkps_core::embed::sort_for_batching`, as
    /// `dpkps_adapt::task::batches` does for a batch size above 1) pads a text to its longest
    /// batch-mate: the test prints how far that moves its vector (it did move, in the low bits,
    /// on the machine this was written on), which is why the vote never batches documents.
    #[test]
    fn a_document_embedded_alone_has_the_same_vector_whatever_the_others() {
        let (model, tok) = (bundled(dpkps_embed::onnx::BUNDLED_MODEL), bundled("tokenizer.json"));
        let mut m = OnnxEmbedder::from_bytes(&model, &tok).unwrap();
        let a = "Chest pain on exertion, relieved by rest.";
        let long = "The patient reports intermittent chest pain radiating to the left arm, with sweating and shortness of breath, for three weeks.";
        let short = "Knee pain after a fall.";
        let alone = m.embed(&[a]).unwrap().remove(0);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
        for (name, mate) in [("a longer", long), ("a shorter", short)] {
            let batched = m.embed(&[a, mate]).unwrap().remove(0);
            let diff = alone.iter().zip(&batched).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
            println!("in a batch with {name} document: {} (largest change {diff:e})", if bits(&batched) == bits(&alone) { "the same bits" } else { "other bits" });
        }
        let texts: Vec<String> = [long, a, short].iter().map(|s| s.to_string()).collect();
        let mut e = super::super::embedders::Embedders::new(model, tok, 2).unwrap();
        let got = e.embed("documents", &texts).unwrap();
        assert_eq!(bits(&got.data[got.cols..2 * got.cols]), bits(&alone), "a document embedded alone, whatever else is embedded");
    }
}
