//! `dpkps bench …`: benchmarks that print figures. They assert nothing about speed.

use std::time::Instant;

use clap::Subcommand;

use super::args::corpus::CorpusArgs;

use super::error::CliError;

use super::io::{load_vocabulary, peak_rss_kb, read_corpus};
use dpkps_core::dp::SecureRng;
use dpkps_core::embed::TermEmbeddings;
use dpkps_core::dp::summary::{self, SummaryDoc, SummaryParams, KeyphraseSampler};
use dpkps_core::sample::{self, Candidates};
use dpkps_core::input::public_vocab::{Matcher, TermId};

#[derive(Subcommand)]
pub enum Bench {
    /// Keyphrase matching: documents per second against each vocabulary.
    Match {
        #[command(flatten)]
        corpus: CorpusArgs,
        /// Vocabularies to measure (bundled names or files).
        #[arg(long, num_args = 1.., default_values_t = ["medical".to_string(), "english".to_string()])]
        vocabulary: Vec<String>,
        /// Repetitions; the best is reported.
        #[arg(long, default_value_t = 3)]
        repeat: usize,
        /// Distinct terms kept per document.
        #[arg(long, default_value_t = 64)]
        keep: usize,
    },
    /// Sentence-embedding throughput of the bundled model (terms/s at batch 1 and 32, and in
    /// the runs' term batches).
    Embed {
        /// Terms to embed per batch size (MeSH terms, in file order).
        #[arg(long, default_value_t = 512)]
        terms: usize,
    },
    /// DP-KDE build and keyphrase-sequence generation on synthetic unit embeddings.
    Kde {
        /// Documents (one class).
        #[arg(long, default_value_t = 5000)]
        docs: usize,
        /// Keyphrases per document (M; also L for the iterative samplers).
        #[arg(long, default_value_t = 10)]
        terms: usize,
        /// Embedding dimension d.
        #[arg(long, default_value_t = 384)]
        dim: usize,
        /// Random features I.
        #[arg(long, default_value_t = 4096)]
        features: usize,
        /// Candidates N (the private vocabulary).
        #[arg(long, default_value_t = 1000)]
        candidates: usize,
        /// Sequences to generate.
        #[arg(long, default_value_t = 1000)]
        sequences: usize,
        /// Samplers to measure.
        #[arg(long, num_args = 1.., default_values_t = ["iterative-linear".to_string(), "iterative-log".to_string(), "independent".to_string()])]
        sampler: Vec<String>,
        /// Sequences scored by the naive per-candidate reference (for the speed-up figure).
        #[arg(long, default_value_t = 2)]
        naive_sequences: usize,
        /// Candidates the naive reference scores per step; its time is scaled to all N
        /// (its cost is exactly linear in the number of candidates).
        #[arg(long, default_value_t = 25)]
        naive_candidates: usize,
    },
    /// The replay check (`dpkps_core::replay`): some notes of the corpus, cut to their first words,
    /// play the synthetic documents and are checked against the others (or, with --include,
    /// against all of them). Time, memory, and how many are flagged at each threshold.
    Replay {
        #[command(flatten)]
        corpus: CorpusArgs,
        /// Notes taken as the synthetic documents (evenly spaced through the corpus).
        #[arg(long, default_value_t = 200)]
        synthetic: usize,
        /// Words kept of each (a generated note is about 150 words).
        #[arg(long, default_value_t = 150)]
        words: usize,
        /// Keep those notes in the private corpus too (every one must then be flagged).
        #[arg(long)]
        include: bool,
        /// Check these generated documents instead (JSON lines with "text" and "keyphrases",
        /// as synthetic.jsonl), against the whole corpus.
        #[arg(long)]
        synthetic_jsonl: Option<std::path::PathBuf>,
    },
    /// The recipient's classifier on a domain shift made from a labelled corpus (MTSamples):
    /// accuracy of the plain classifier and of Deep CORAL at each λ, over seeds.
    Adapt {
        #[command(flatten)]
        corpus: CorpusArgs,
        /// The largest classes kept.
        #[arg(long, default_value_t = 5)]
        classes: usize,
        /// At most this many notes per class (balanced when every class has as many).
        #[arg(long)]
        per_class: Option<usize>,
        /// Training seeds per λ.
        #[arg(long, default_value_t = 3)]
        seeds: usize,
        /// The λ values, comma-separated (0: the plain classifier; put it first).
        #[arg(long, default_value = "0,100,1000,10000", value_delimiter = ',')]
        weights: Vec<f64>,
        /// A file keeping the task's embedded notes: written on the first run, read by the next
        /// one with the same notes and model (embedding is what costs: minutes; training,
        /// seconds), so that λ and the other settings can be compared cheaply.
        #[arg(long)]
        cache: Option<std::path::PathBuf>,
        #[command(flatten)]
        params: super::train::TrainParamArgs,
        #[command(flatten)]
        model: super::args::model::ModelArgs,
    },
    /// The DP vote over generated candidates: its time at 5,000 private units × 1,000
    /// candidates (synthetic unit vectors), which candidates each keep rule keeps, and the
    /// embedding time per document (`super::bench_vote`).
    Vote(super::bench_vote::VoteBenchArgs),
    /// Documents embedded per second, one thread, and where a document's model call spends its
    /// time, on notes of 256 tokens and on 100-word documents (`super::bench_docs`).
    Docs(super::bench_docs::DocsBenchArgs),
    /// Time and memory to embed and train at a given size (the corpus's notes repeated).
    Train {
        #[command(flatten)]
        corpus: CorpusArgs,
        #[arg(long, default_value_t = 5000)]
        labelled: usize,
        #[arg(long, default_value_t = 2500)]
        unlabelled: usize,
        /// Random unit vectors instead of the corpus's embedded notes (40 classes): training's
        /// time and memory alone, without the embedding model's.
        #[arg(long)]
        random_vectors: bool,
        #[command(flatten)]
        params: super::train::TrainParamArgs,
        #[command(flatten)]
        model: super::args::model::ModelArgs,
    },
}

pub fn run(which: Bench) -> Result<(), CliError> {
    match which {
        Bench::Match { corpus, vocabulary, repeat, keep } => {
            println!("benchmark: keyphrase matching (single thread, includes CSV parsing)");
            for spec in &vocabulary {
                let t0 = Instant::now();
                let vocab = load_vocabulary(spec)?;
                let matcher = Matcher::new(&vocab)?;
                let build = t0.elapsed().as_secs_f64();
                let mut best = f64::INFINITY;
                let mut docs = 0;
                let mut bytes = 0;
                let mut hits = 0usize;
                for _ in 0..repeat.max(1) {
                    let t = Instant::now();
                    let mc = read_corpus(&corpus, Some(&matcher), keep)?;
                    best = best.min(t.elapsed().as_secs_f64());
                    docs = mc.docs.len();
                    bytes = mc.stats.text_bytes;
                    hits = mc.docs.iter().map(|d| d.terms.len()).sum();
                }
                println!(
                    "  {:<8} {:>7} terms | build {:>6.2} s | {} docs, {:.1} MB text in {:.3} s: {:>8.0} docs/s, {:>6.1} MB/s | {:.1} distinct terms/doc",
                    vocab.name,
                    vocab.len(),
                    build,
                    docs,
                    bytes as f64 / 1e6,
                    best,
                    docs as f64 / best,
                    bytes as f64 / 1e6 / best,
                    hits as f64 / docs.max(1) as f64
                );
            }
            if let Some(kb) = peak_rss_kb() {
                println!("  peak resident memory: {:.1} MB", kb as f64 / 1024.0);
            }
            Ok(())
        }
        Bench::Embed { terms } => {
            let t0 = Instant::now();
            let mut model = super::io::load_model(&super::args::model::ModelArgs { model: None, tokenizer: None })?;
            let load = t0.elapsed().as_secs_f64();
            let vocab = load_vocabulary("medical")?;
            let mut texts: Vec<&str> = vocab.terms.iter().take(terms).map(String::as_str).collect();
            // Batched as the pipeline batches them: similar lengths together (less padding).
            dpkps_core::embed::sort_for_batching(model.as_ref(), &mut texts, |t| *t);
            println!(
                "benchmark: sentence embeddings, bundled all-MiniLM-L6-v2 (tract, one thread), {} MeSH terms, sorted by token count",
                texts.len()
            );
            println!("  model load + optimise: {load:.2} s");
            let tokens: usize = texts.iter().map(|t| model.batch_key(t)).sum();
            println!("  tokens per term: {:.1} on average (with [CLS] and [SEP])", tokens as f64 / texts.len().max(1) as f64);
            for batch in [1usize, 32] {
                let t = Instant::now();
                for chunk in texts.chunks(batch) {
                    model.embed(chunk)?;
                }
                let secs = t.elapsed().as_secs_f64();
                println!("  batch {batch:>2}: {:>6.1} terms/s ({:.2} s)", texts.len() as f64 / secs, secs);
            }
            // The path runs take (`embed::embed_terms`): term batches, each term at its home row.
            let ids: Vec<dpkps_core::input::public_vocab::TermId> = (0..texts.len() as dpkps_core::input::public_vocab::TermId).collect();
            let t = Instant::now();
            dpkps_core::embed::embed_terms(&vocab, &ids, model.as_mut(), &mut |_, _| {})?;
            let secs = t.elapsed().as_secs_f64();
            println!("  term batches of {} (the runs' path): {:>6.1} terms/s ({:.2} s)", model.term_width(), ids.len() as f64 / secs, secs);
            if let Some(kb) = peak_rss_kb() {
                println!("  peak resident memory: {:.1} MB", kb as f64 / 1024.0);
            }
            Ok(())
        }
        Bench::Kde { docs, terms, dim, features, candidates, sequences, sampler, naive_sequences, naive_candidates } => {
            bench_kde(docs, terms, dim, features, candidates, sequences, &sampler, naive_sequences, naive_candidates)
        }
        Bench::Adapt { corpus, classes, per_class, seeds, weights, cache, params, model } => {
            super::bench_adapt::adapt(&corpus, classes, per_class, seeds, &weights, cache.as_deref(), &params, &model)
        }
        Bench::Train { corpus, labelled, unlabelled, random_vectors, params, model } => {
            super::bench_adapt::scale(&corpus, labelled, unlabelled, random_vectors, &params, &model)
        }
        Bench::Vote(args) => super::bench_vote::run(args),
        Bench::Docs(args) => super::bench_docs::run(args),
        Bench::Replay { corpus, synthetic, words, include, synthetic_jsonl } => {
            super::bench_replay::run(&corpus, synthetic, words, include, synthetic_jsonl.as_deref())
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn bench_kde(
    n_docs: usize,
    m: usize,
    dim: usize,
    features: usize,
    n_cands: usize,
    n_seqs: usize,
    samplers: &[String],
    naive_seqs: usize,
    naive_cands: usize,
) -> Result<(), CliError> {
    let mut rng = SecureRng::from_os()?;
    // Synthetic vocabulary of unit vectors; documents draw M distinct terms from it.
    let vocab = (4 * n_cands).max(2000);
    let mut emb = TermEmbeddings::new(dim);
    for (t, e) in dpkps_core::dp::summary::kde::Features::synthetic_unit_vectors(vocab, dim, 7).iter().enumerate() {
        emb.insert(t as TermId, e).map_err(|e| CliError::Input { path: "synthetic".into(), message: e.to_string() })?;
    }
    let doc_terms: Vec<Vec<TermId>> = (0..n_docs)
        .map(|_| {
            let mut v: Vec<TermId> = Vec::with_capacity(m);
            while v.len() < m {
                let t = (rng.next_u64() % vocab as u64) as TermId;
                if !v.contains(&t) {
                    v.push(t);
                }
            }
            v
        })
        .collect();
    let kdocs: Vec<SummaryDoc<'_>> = doc_terms.iter().map(|t| SummaryDoc { class: 0, terms: t }).collect();
    let classes = dpkps_core::input::classes::ClassSet::unlabelled();
    let cand_ids: Vec<TermId> = (0..n_cands as TermId).collect();
    let cands = Candidates::new(&cand_ids, &emb).map_err(|e| CliError::Input { path: "synthetic".into(), message: e.to_string() })?;
    println!(
        "benchmark: DP-KDE + sampling, n = {n_docs} documents x M = {m} terms, d = {dim}, I = {features}, N = {n_cands}, L = {m}, {n_seqs} sequences (one thread)"
    );
    for name in samplers {
        let Some(sampler) = KeyphraseSampler::parse(name) else {
            return Err(CliError::Input { path: name.clone(), message: "unknown sampler (histogram, markov, independent, iterative-linear, iterative-log)".into() });
        };
        let params = SummaryParams { epsilon: 10.0, sampler, len: m, features, terms_per_doc: m, bandwidth: 1.0, smoothing: 0.0 };
        let t0 = Instant::now();
        let (set, _) = summary::build(summary::SummaryInputs { docs: &kdocs, classes: &classes, emb: &emb, candidates: &cand_ids, params: &params }, &mut rng).map_err(summary_err)?;
        let build = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let seqs = sample::draw(&set, &cands, &vec![n_seqs; set.classes.len()], &sample::Sampling::OFF, &mut rng, sample::Signals::Skip).map_err(summary_err)?.sequences;
        let gen_s = t1.elapsed().as_secs_f64();
        assert_eq!(seqs.len(), n_seqs);
        // The signal estimate a run adds to its report (`sample::signal`), timed apart.
        let t_sig = Instant::now();
        std::hint::black_box(dpkps_core::sample::signal::class_signals(&set, &cands).map_err(summary_err)?);
        let signal_s = t_sig.elapsed().as_secs_f64();
        println!(
            "  {:<17} KDE build {:>6.2} s ({} member(s)) | generate {:>6.2} s = {:>7.2} ms/sequence | signal {:>5.2} s",
            sampler.name(),
            build,
            params.ensemble().members(),
            gen_s,
            gen_s * 1000.0 / n_seqs as f64,
            signal_s
        );
        if naive_seqs > 0 && matches!(sampler, KeyphraseSampler::IterativeLinear | KeyphraseSampler::IterativeLog) {
            // The paper's per-candidate scorer on the same features, for a few sequences and
            // a subset of candidates; scaled to all N candidates.
            let f = set.features().map_err(summary_err)?;
            let sub_ids: Vec<TermId> = cand_ids.iter().copied().take(naive_cands).collect();
            let sub = Candidates::new(&sub_ids, &emb).map_err(summary_err)?;
            let t2 = Instant::now();
            for s in seqs.iter().take(naive_seqs) {
                for len in 1..=m {
                    let scores = sample::naive_scores(&set, &f, &sub, 0, &s.keyphrases[..len - 1], &emb);
                    std::hint::black_box(scores);
                }
            }
            let naive = t2.elapsed().as_secs_f64() / naive_seqs.min(seqs.len()) as f64 * (n_cands as f64 / sub.len() as f64);
            let batched = gen_s / n_seqs as f64;
            println!(
                "  {:<17} naive reference: {:>8.2} s/sequence (measured on {} sequences x {} candidates, scaled to {}) -> speed-up {:.0}x",
                "",
                naive,
                naive_seqs.min(seqs.len()),
                sub.len(),
                n_cands,
                naive / batched
            );
        }
    }
    if let Some(kb) = peak_rss_kb() {
        println!("  peak resident memory: {:.1} MB", kb as f64 / 1024.0);
    }
    Ok(())
}

fn summary_err(e: summary::SummaryError) -> CliError {
    CliError::Input { path: "benchmark".into(), message: e.to_string() }
}
