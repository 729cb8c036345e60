//! `dpkps evaluate`: the utility evaluation without an LLM, as DP-KPS's appendix C measures it
//! (core in [`dpkps_core::eval`]).
//!
//! Reads the corpus, shapes the task, holds out a stratified part, runs the DP pipeline on
//! the rest once per seed and sampler, and prints accuracy and macro-F1 per arm. With
//! `--synthetic`, also scores synthetic documents (e.g. LLM output) by their text embeddings.
//!
//! Nothing is released: the DP artefacts built inside the evaluation are dropped, and the
//! figures it prints are computed on private data (so they are NOT differentially private; the
//! output says so). It is tuning on private data all the same, so before the figures are shown
//! the evaluation is recorded in the privacy ledger as a non-DP check on the corpus (no ε; the
//! privacy report of every later run on the corpus counts it), as the page records its own.
//! `dpkps check` is the differentially private check, paid for in ε.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use super::args::corpus::CorpusArgs;

use super::args::inputs::PipelineInputs;

use super::error::CliError;

use super::io::{inputs, load_model, load_vocabulary, print_stats, read_corpus, write_private_json};
use dpkps_core::input::corpus::{self, Fields, Format, Ingest};
use dpkps_core::dp::candidates::CandidateRule;
use dpkps_core::dp::SecureRng;
use dpkps_core::eval::classifier::SoftmaxParams;
use dpkps_core::eval::{ArmSequences, EvalParams, EvalReport, Evaluation, Task, BASELINE_ARM};
use dpkps_core::sample::SequenceOut;
use super::sequence_file::SequenceLine;
use dpkps_core::input::public_vocab::Matcher;

/// Sequences per class for the sampler arms unless `--per-class` says otherwise. The DP arms'
/// sequences are post-processing of the release, free to draw in any number, so the figure should
/// measure the release, not the sample drawn from it: at 300, the spread between draws was mostly
/// that sample on MTSamples' two-class cells (the noiseless arm, which has no DP noise, spread
/// nearly as much), and the DP arm scored lower. 1,000 narrowed the spread there and raised the DP
/// arm on the English list at 250 and 500 notes a class; on a 5-class task, whose spread is the DP
/// noise's, it changed nothing (docs/utility.md, "The evaluation's sample").
const EVAL_PER_CLASS: &str = "1000";

#[derive(Args)]
#[command(mut_arg("sampler", |a| a
    .default_value("all")
    .help(sampler_help())))]
#[command(mut_arg("per_class", |a| a.default_value(EVAL_PER_CLASS).help("Sequences sampled per class for each sampler arm")))]
pub(crate) struct EvaluateArgs {
    #[command(flatten)]
    inputs: PipelineInputs,
    /// Fraction of every class held out for testing (stratified), strictly between 0 and 1.
    #[arg(long, default_value_t = 0.2)]
    holdout: f64,
    /// Repetitions, each with a fresh split and fresh DP noise (mean and spread are reported).
    #[arg(long, default_value_t = 3)]
    seeds: usize,
    /// Seed of the first repetition's split (repetition r uses SEED + r).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Every repetition uses SEED's split: only the DP noise and the sampling draws differ
    /// between them, as between a curator's repeated runs on one corpus (the spread between
    /// draws, without the spread between held-out sets).
    /// (Not with --export-sequences, whose files are named by seed.)
    #[arg(long, conflicts_with = "export_sequences")]
    same_split: bool,
    /// Task: this label against all the others, the others subsampled to its size.
    #[arg(long, conflicts_with = "top_classes")]
    one_vs_rest: Option<String>,
    /// With --one-vs-rest: keep every other document instead of subsampling to balance.
    #[arg(long, requires = "one_vs_rest")]
    no_balance: bool,
    /// With --top-classes: subsample every class to the size of the smallest (seeded).
    #[arg(long, requires = "top_classes")]
    balance: bool,
    /// Train the DP arms on the sequences of noise-dominated classes too (generation leaves
    /// them out by default).
    #[arg(long)]
    include_noise_classes: bool,
    /// Measured, not the pipeline's: cut Ṽ to the terms whose noisy count noise alone would
    /// reach for at most one zero-count entry in expectation (partition selection; docs/utility.md).
    #[arg(long)]
    partition_selection: bool,
    /// Task: the K most frequent labels (other documents are left out) [default: all labels].
    #[arg(long, conflicts_with = "min_class_docs")]
    top_classes: Option<usize>,
    /// Task: every label with at least this many documents (other documents are left out).
    #[arg(long, conflicts_with = "one_vs_rest")]
    min_class_docs: Option<usize>,
    /// Also run the samplers with the noise switched off (exact top-N vocabulary, noiseless
    /// KDE): the "no DP" comparison.
    #[arg(long)]
    no_dp: bool,
    /// L2 penalty of the classifier (the same for every arm).
    #[arg(long, default_value_t = SoftmaxParams::default().l2)]
    l2: f64,
    /// Synthetic documents to score (JSONL with fields "text" and "label", as `dpkps generate`
    /// writes them), as PATH or NAME=PATH; repeatable. Each set trains a classifier on its
    /// texts' embeddings, and another on as many real training documents per class; both are
    /// tested on the held-out documents' texts, beside one trained on every training text.
    #[arg(long, value_name = "[NAME=]PATH")]
    synthetic: Vec<String>,
    /// Write each sampler arm's training sequences (every seed's, the classes generation
    /// would keep) to DIR/ARM-seedS.jsonl, in the form of `dpkps pipeline`'s sequences.jsonl:
    /// the input of `dpkps generate --sequences` in the train-on-synthetic benchmark. The
    /// noiseless arms' (--no-dp) sequences are NOT differentially private: the files are
    /// written readable by their owner only.
    #[arg(long, value_name = "DIR")]
    export_sequences: Option<PathBuf>,
    /// Write the report (one object per arm and view, the parameters, the task) here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// With --no-dp: diagnose the iterative samplers (per step, the noiseless sampler's draw
    /// distribution against the exact kernel's; a classifier on exact-kernel samples).
    #[arg(long, requires = "no_dp")]
    diagnose: bool,
    /// Privacy ledger in which the evaluation is recorded as a non-DP check on the corpus
    /// [default: $DPKPS_LEDGER, else ~/.local/share/dpkps/ledger.json].
    #[arg(long)]
    ledger: Option<PathBuf>,
    /// Which of Ṽ's terms the DP-KDE arms draw from: all (the paper's and the pipeline's) or
    /// cleared (the terms a noisy count shows a class uses; `dp::candidates`, measured there).
    #[arg(long, default_value = "all", value_parser = ["all", "cleared"])]
    candidates: String,
}

/// `--sampler`'s help here: the names from [`dpkps_core::dp::summary::KeyphraseSampler::ALL`].
fn sampler_help() -> String {
    let names: Vec<&str> = dpkps_core::dp::summary::KeyphraseSampler::ALL.iter().map(|s| s.name()).collect();
    format!("Samplers to evaluate: \"all\", or a comma-separated list of {}", names.join(", "))
}

pub(crate) fn run(args: EvaluateArgs) -> Result<(), CliError> {
    let t0 = Instant::now();
    if !args.inputs.corpus.labelled() {
        return Err(CliError::Input {
            path: "--label-col".into(),
            message: "the evaluation needs class labels: give the label column (or --label-from-dir)".into(),
        });
    }
    let task = match (&args.one_vs_rest, args.top_classes, args.min_class_docs) {
        (Some(positive), _, _) => Task::OneVsRest { positive: positive.clone(), balance: !args.no_balance },
        (None, Some(k), _) => Task::TopClasses { k, balance: args.balance },
        (None, None, Some(min)) => Task::MinClassDocs { min },
        (None, None, None) => Task::AllClasses,
    };
    let params = EvalParams {
        task,
        holdout: args.holdout,
        seeds: (0..args.seeds as u64).map(|r| if args.same_split { args.seed } else { args.seed.wrapping_add(r) }).collect(),
        vocab: args.inputs.dp.params(),
        eps_kde: args.inputs.summary.eps_kde,
        len: args.inputs.summary.len,
        features: Some(args.inputs.summary.features),
        kde_terms_per_doc: args.inputs.summary.kde_terms_per_doc,
        per_class: args.inputs.summary.per_class,
        samplers: args.inputs.summary.sampler.0.clone(),
        no_dp_arms: args.no_dp,
        bandwidth: args.inputs.summary.bandwidth,
        smoothing: args.inputs.summary.smoothing,
        class_counts_epsilon: args.inputs.summary.eps_counts.0,
        candidates: if args.candidates == "all" { CandidateRule::All } else { CandidateRule::Cleared },
        classifier: SoftmaxParams { l2: args.l2, ..SoftmaxParams::default() },
        include_noise_classes: args.include_noise_classes,
        sampling: args.inputs.summary.sampling.get(),
        partition_selection: args.partition_selection,
    };
    let public = load_vocabulary(&args.inputs.vocab.vocabulary)?;
    // Check everything that does not need the data before reading it.
    params.validate().map_err(dpkps_core::eval::EvalError::from)?;
    let matcher = Matcher::new(&public)?;
    let mc = read_corpus(&args.inputs.corpus, Some(&matcher), params.keep())?;
    print_stats(&mc);

    let mut rng = SecureRng::from_os()?;
    let mut progress = |what: &str, done: usize, total: usize| eprint!("\r\x1b[K{what}: {done}/{total}");
    let ev = Evaluation::prepare(&mc, &public, params, &mut rng, &mut progress)?;
    eprintln!();
    let s = ev.summary();
    eprintln!(
        "task: {} classes, {} documents ({} unlabelled and {} of other classes left out); {} train / {} test per seed",
        s.classes.len(),
        s.documents,
        s.unlabelled_left_out,
        s.other_left_out,
        s.train_docs,
        s.test_docs
    );

    let mut embedder = load_model(&args.inputs.model)?;
    let ids = ev.terms_to_embed();
    let t1 = Instant::now();
    let emb = dpkps_core::embed::embed_terms(&public, &ids, embedder.as_mut(), &mut |done, total| {
        eprint!("\r\x1b[Kembedding terms: {done}/{total}");
    })?;
    eprintln!(" ({:.1} s)", t1.elapsed().as_secs_f64());
    // The arms' sequences, kept here and written only once the check is in the ledger. Each
    // line says it is no recorded release (`super::sequence_file`): `generate` refuses them
    // unless acknowledged and sent to this machine.
    let mut exports: Vec<(PathBuf, String)> = Vec::new();
    let mut export = |arm: ArmSequences<'_>| -> Result<(), dpkps_core::eval::EvalError> {
        let Some(dir) = &args.export_sequences else { return Ok(()) };
        let path = dir.join(format!("{}-seed{}.jsonl", arm.arm, arm.seed));
        let mut text = String::new();
        for (terms, class) in arm.sequences {
            let keyphrases: Vec<String> = terms.iter().map(|&t| public.term(t).to_string()).collect();
            let sequence = SequenceOut { label: arm.classes.get(*class).cloned(), keyphrases, noise_dominated: false };
            let line = SequenceLine::unrecorded(sequence, arm.noiseless);
            text.push_str(&serde_json::to_string(&line).map_err(|e| dpkps_core::eval::EvalError::Export(e.to_string()))?);
            text.push('\n');
        }
        exports.push((path, text));
        Ok(())
    };
    let mut report = ev.run_with(&emb, &mut rng, &mut progress, &mut export)?;
    eprintln!();
    let diagnosis = if args.diagnose { Some(ev.diagnose(&emb, &mut rng)?) } else { None };

    if !args.synthetic.is_empty() {
        let texts = document_texts(&args.inputs.corpus, ev.documents())?;
        let t2 = Instant::now();
        let doc_emb = embed_texts(embedder.as_mut(), &texts, "embedding held-out and training texts")?;
        let mut sets = Vec::with_capacity(args.synthetic.len());
        let mut embedded = texts.len();
        for spec in &args.synthetic {
            let (name, path) = synthetic_set(spec);
            let synthetic = read_synthetic(&path)?;
            let syn_texts: Vec<String> = synthetic.iter().map(|s| s.0.clone()).collect();
            let syn_emb = embed_texts(embedder.as_mut(), &syn_texts, &format!("embedding synthetic texts ({name})"))?;
            embedded += syn_texts.len();
            sets.push((name, syn_emb.into_iter().zip(synthetic.into_iter().map(|s| s.1)).collect::<Vec<_>>()));
        }
        eprintln!("embedded {embedded} texts ({:.1} s)", t2.elapsed().as_secs_f64());
        let (arms, summaries) = ev.text_view(&doc_emb, &sets, &mut progress)?;
        eprintln!();
        report.arms.extend(arms);
        report.synthetic = summaries;
    }

    record_check(args.ledger.clone(), mc, &report)?;
    for (path, text) in &exports {
        super::io::write_private(path, text.as_bytes()).map_err(|e| dpkps_core::eval::EvalError::Export(e.to_string()))?;
    }
    if let Some(dir) = &args.export_sequences {
        eprintln!(
            "wrote {} files of sequences to {} (owner only; not a recorded release: `generate` sends them only with --unrecorded-sequences, to this machine)",
            exports.len(),
            dir.display()
        );
    }
    print_table(&report);
    if let Some(d) = &diagnosis {
        print_diagnosis(d);
    }
    let secs = t0.elapsed().as_secs_f64();
    eprintln!("evaluation took {secs:.1} s; nothing was released (the check is recorded in the privacy ledger, without ε)");
    if let Some(path) = &args.json {
        let mut value = serde_json::to_value(&report).unwrap_or_default();
        if let Some(obj) = value.as_object_mut() {
            obj.insert("public_vocabulary".into(), public.name.clone().into());
            obj.insert("model_checksum".into(), embedder.checksum().into());
            obj.insert("wall_seconds".into(), secs.into());
            if let Some(d) = &diagnosis {
                obj.insert("diagnosis".into(), serde_json::to_value(d).unwrap_or_default());
            }
        }
        write_private_json(path, &value)?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// The iterative samplers' diagnosis (`dpkps_core::eval::diagnose`) on stdout.
fn print_diagnosis(d: &dpkps_core::eval::diagnose::Diagnosis) {
    println!("\ndiagnosis (noiseless; TV: total variation; signal/error: largest exact score over the rms random-feature error):");
    println!("{:<17} {:>3} {:>10} {:>10} {:>10} {:>12} {:>9} {:>9}", "sampler", "ℓ", "TV(s,ex)", "TV(ex,U)", "TV(s,U)", "signal/err", "positive", "eff.docs");
    for s in &d.steps {
        println!(
            "{:<17} {:>3} {:>10.3} {:>10.3} {:>10.3} {:>12.3} {:>9.3} {:>9.1}",
            s.sampler, s.len, s.tv_sampler_exact, s.tv_exact_uniform, s.tv_sampler_uniform, s.signal_over_error, s.positive_share, s.effective_docs
        );
    }
    let mut arms: Vec<&str> = Vec::new();
    for a in &d.arms {
        if !arms.contains(&a.0.as_str()) {
            arms.push(&a.0);
        }
    }
    for arm in arms {
        let acc: Vec<f64> = d.arms.iter().filter(|a| a.0 == arm).map(|a| a.1.accuracy).collect();
        let f1: Vec<f64> = d.arms.iter().filter(|a| a.0 == arm).map(|a| a.1.macro_f1).collect();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
        println!("{arm:<24} embedding accuracy {:.3}, macro-F1 {:.3} ({} seeds)", mean(&acc), mean(&f1), acc.len());
    }
}

/// The table on stdout (one row per arm and view), then the privacy note.
fn print_table(r: &EvalReport) {
    let s = &r.task;
    let classes: Vec<String> = s.classes.iter().zip(&s.class_docs).map(|(c, n)| format!("{c}: {n}")).collect();
    println!("task: {} ({} documents); {} seed(s)", classes.join(", "), s.documents, r.params.seeds.len());
    println!(
        "held out {:.0}%: {} train / {} test documents; test documents without a matched term (left out of the sequence views): {:.1}",
        r.params.holdout * 100.0,
        s.train_docs,
        s.test_docs,
        s.test_docs_without_terms
    );
    println!(
        "ε_voc = {}, ε_kde = {}, N = {}, S = {}, L = {}, M = {}, sequences per class = {}",
        r.params.vocab.epsilon,
        r.params.eps_kde,
        r.params.vocab.top_n,
        r.params.vocab.terms_per_doc,
        r.params.len,
        r.params.kde_terms_per_doc,
        r.params.per_class
    );
    if s.dp_vocabulary_terms > 0.0 {
        let rule = match r.params.candidates {
            CandidateRule::Cleared => "its cleared terms",
            CandidateRule::All => "all of it",
        };
        println!("Ṽ: {:.0} terms; the DP-KDE arms draw from {rule}: {:.0} (mean over seeds)", s.dp_vocabulary_terms, s.dp_candidates);
    }
    println!(
        "{:<24} {:<10} {:>15} {:>15} {:>15} {:>7} {:>8} {:>7} {:>6}",
        "arm", "view", "accuracy", "macro-F1", "acc/np", "F1/np", "n_train", "n_test", "I"
    );
    // The ratios to the `nonprivate` arm in the same view: the share of the non-private
    // utility an arm keeps, the measure the samplers are compared by. Accuracy's is each
    // repetition's over `nonprivate`'s on the same held-out set, mean ± sd; macro-F1's is the
    // means' ratio.
    let np = |view: &str| r.arms.iter().find(|a| a.arm == BASELINE_ARM && a.view == view);
    for a in &r.arms {
        let i = a.runs.first().and_then(|x| x.features).map_or("-".to_string(), |i| i.to_string());
        let acc_r = a.accuracy_ratio.map_or("-".to_string(), |s| format!("{:.3} ± {:<5.3}", s.mean, s.std));
        let f1_r = match np(&a.view) {
            Some(n) if a.arm != BASELINE_ARM && n.macro_f1_mean > 0.0 => format!("{:.3}", a.macro_f1_mean / n.macro_f1_mean),
            _ => "-".into(),
        };
        println!(
            "{:<24} {:<10} {:>7.3} ± {:<5.3} {:>7.3} ± {:<5.3} {:>15} {:>7} {:>8} {:>7} {:>6}",
            a.arm, a.view, a.accuracy_mean, a.accuracy_std, a.macro_f1_mean, a.macro_f1_std, acc_r, f1_r, a.n_train, a.n_test, i
        );
    }
    for a in &r.refused {
        println!("{:<24} {:<10} refused: {}", a.arm, "-", a.reason);
    }
    for a in &r.nothing_to_train {
        println!("{:<24} {:<10} seed {}: not scored: {} (--include-noise-classes trains on them)", a.arm, "-", a.seed, a.reason);
    }
    // Each synthetic set against real documents of the same count (the paper's Table 2) and
    // against every real training document.
    let text_arm = |name: &str| r.arms.iter().find(|a| a.arm == name && a.view == "text");
    for set in &r.synthetic {
        let suffix = if r.synthetic.len() == 1 { String::new() } else { format!(":{}", set.name) };
        let ratio = |other: &str| match (text_arm(&format!("synthetic{suffix}")), text_arm(other)) {
            (Some(a), Some(b)) if b.accuracy_mean > 0.0 => format!("{:.3}", a.accuracy_mean / b.accuracy_mean),
            _ => "-".into(),
        };
        println!(
            "synthetic set {}: {} documents ({} used, per class {:?}); accuracy / same count of real documents {}; / every real training document {}",
            set.name,
            set.documents,
            set.used,
            set.per_class,
            ratio(&format!("real-text-same-count{suffix}")),
            ratio("real-text")
        );
    }
    // The seeds' quality, once per sampler arm (the views share the sequences).
    for a in r.arms.iter().filter(|a| a.view == "embedding") {
        if let Some(share) = a.full_length_share {
            let flagged = match a.noise_dominated.len() {
                0 => "none".to_string(),
                _ => format!("{:.1} per run: {}", a.noise_dominated_per_run, a.noise_dominated.join(", ")),
            };
            println!("{:<24} sequences with L distinct keyphrases {:.1}%; noise-dominated classes {flagged}", a.arm, 100.0 * share);
        }
    }
    println!("NOTE: {}", r.note);
}

/// A `--synthetic` value: NAME=PATH, or PATH (named after its folder, else its file).
fn synthetic_set(spec: &str) -> (String, PathBuf) {
    if let Some((name, path)) = spec.split_once('=').filter(|(n, _)| !n.is_empty() && !n.contains(['/', '\\'])) {
        return (name.to_string(), PathBuf::from(path));
    }
    let path = PathBuf::from(spec);
    let folder = path.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned());
    let name = folder.unwrap_or_else(|| path.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| spec.to_string()));
    (name, path)
}

/// (text, label) of every synthetic document; documents without a label are kept with an
/// empty label (the evaluation counts them as having an unknown label).
fn read_synthetic(path: &PathBuf) -> Result<Vec<(String, String)>, CliError> {
    let name = path.display().to_string();
    let format = Format::from_path(&name).unwrap_or(Format::Jsonl);
    let fields = Fields { text: Some("text".into()), label: Some("label".into()), person: None };
    let file = File::open(path).map_err(|e| CliError::Input { path: name.clone(), message: format!("cannot open: {e}") })?;
    let mut ingest = Ingest::new(true);
    let mut out = Vec::new();
    corpus::stream(BufReader::new(file), &name, format, &fields, None, &mut ingest, &mut |d| {
        out.push((d.text.to_string(), d.label.unwrap_or("").to_string()));
    })?;
    ingest.finish(&name)?;
    Ok(out)
}

/// The texts of the corpus documents at `indices` (document order as in the matched corpus:
/// the same readers, so the same documents in the same order), in the order of `indices`.
fn document_texts(args: &CorpusArgs, indices: &[usize]) -> Result<Vec<String>, CliError> {
    let want: HashMap<usize, usize> = indices.iter().enumerate().map(|(k, &i)| (i, k)).collect();
    let mut out = vec![String::new(); indices.len()];
    let fields = Fields { text: args.text_col.clone(), label: args.label_col.clone(), person: None };
    let mut ingest = Ingest::new(args.labelled());
    let mut next = 0usize;
    for input in inputs(args)? {
        let name = input.path.display().to_string();
        let file = File::open(&input.path).map_err(|e| CliError::Input { path: name.clone(), message: format!("cannot open: {e}") })?;
        corpus::stream(BufReader::with_capacity(1 << 20, file), &name, input.format, &fields, input.txt_label.as_deref(), &mut ingest, &mut |d| {
            if let Some(&k) = want.get(&next) {
                out[k] = d.text.to_string();
            }
            next += 1;
        })?;
    }
    Ok(out)
}

/// Sentence embeddings of whole texts (the model truncates long ones), 16 at a time.
fn embed_texts(model: &mut dyn dpkps_core::embed::Embed, texts: &[String], what: &str) -> Result<Vec<Vec<f32>>, CliError> {
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(16) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        out.extend(model.embed(&refs)?);
        eprint!("\r\x1b[K{what}: {}/{}", out.len(), texts.len());
    }
    eprintln!();
    Ok(out)
}

/// Records the evaluation in the ledger as a non-DP check on `mc` (keyed with the ledger's local
/// secret, as a run's corpus is), under the ledger's lock.
fn record_check(ledger: Option<PathBuf>, mut mc: dpkps_core::input::matched::MatchedCorpus, report: &EvalReport) -> Result<(), CliError> {
    let path = super::ledger_file::ledger_path_of(ledger);
    let mut file = super::ledger_file::LedgerFile::open(&path)?;
    let local = super::local_key::for_ledger(&path, &file.book)?;
    file.book.key_with(&local)?;
    mc.key_with(&local);
    file.book.adopt_older(&mc.keys);
    let mut arms: Vec<&str> = report.arms.iter().map(|a| a.arm.as_str()).chain(report.nothing_to_train.iter().map(|a| a.arm.as_str())).collect();
    arms.sort_unstable();
    arms.dedup();
    let mut id = [0u8; 8];
    SecureRng::from_os()?.fill(&mut id);
    let check = dpkps_core::ledger::UtilityCheck { id: dpkps_core::base::hex(&id), when: super::io::now_utc(), settings_compared: arms.len() };
    file.book.record_check(&mc.fingerprint, check.clone());
    // Tuning on a file that shares documents or persons with a recorded corpus (last month's
    // extract, the corpus itself under another name) is tuning on that corpus too: the check
    // is recorded there as well, and the reports of runs on it, or on any corpus overlapping
    // this file, count it (`LedgerBook::checks_touching`).
    let overlapping = file.book.overlapping(&mc.keys);
    file.book.record_tuning_check(&mc.keys, None, &check);
    file.save()?;
    eprintln!("recorded in the privacy ledger {} as a non-DP check on this corpus ({} settings compared; no ε)", path.display(), arms.len());
    for (account, _, overlap) in &overlapping {
        eprintln!(
            "this file overlaps a corpus of the account “{account}” by about {:.0}%: the check is recorded on that corpus too, and its runs' reports will say so \
             (tune on public data, or on data that shares no patient with the corpus)",
            overlap * 100.0
        );
    }
    Ok(())
}
