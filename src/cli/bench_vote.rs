//! `dpkps bench vote`: the DP vote over generated candidates (`dpkps_core::dp::vote`), timed and
//! measured on synthetic vectors, and the embedding of a document, timed with the bundled model.
//!
//! 1. **The vote**: `units` private unit vectors × `candidates` candidates (random unit
//!    vectors of `dim`), in one class (every unit compares with every candidate: the worst case)
//!    and spread over `classes`; the time of `dp::vote::release` (nearest candidate, one unit at
//!    a time on one thread, then the noise), best of `repeat`.
//! 2. **Embedding**: `docs` notes (the corpus's first, or made-up ones of about 150 words)
//!    embedded one per model call, as `dpkps select` embeds them: seconds per document on one
//!    thread and on every core.
//! 3. **Which candidates to keep** (`KeepMode`): topics of unequal popularity; private units
//!    near them; candidates on random topics (some junk, far from every topic). Per keep rule,
//!    averaged over `repeat` draws: the share of the exact votes the kept ones hold, the share
//!    of kept candidates on a topic, and the private units' mean cosine to their nearest kept
//!    candidate (how well the kept set covers the private data), against a random subset of
//!    the same size (no vote).

use std::time::Instant;

use clap::Args;

use super::args::corpus::CorpusArgs;
use super::error::CliError;
use dpkps_core::dp::vote::{self, Candidates, KeepMode, UnitVector};
use dpkps_core::dp::SecureRng;

#[derive(Args)]
// The corpus is optional here (made-up notes without it).
#[command(mut_arg("corpus", |a| a.required(false)))]
pub(crate) struct VoteBenchArgs {
    /// Private unit vectors.
    #[arg(long, default_value_t = 5000)]
    units: usize,
    /// Candidates.
    #[arg(long, default_value_t = 1000)]
    candidates: usize,
    /// Embedding dimension (the bundled model's 384).
    #[arg(long, default_value_t = 384)]
    dim: usize,
    /// Classes for the second timing (the candidates and units spread evenly).
    #[arg(long, default_value_t = 5)]
    classes: usize,
    /// Repetitions (timings: the best; keep rules: the mean).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Documents to embed for the per-document time (0: skip the model).
    #[arg(long, default_value_t = 64)]
    docs: usize,
    /// Notes to embed (their texts, in file order) instead of made-up ones.
    #[command(flatten)]
    corpus: Option<CorpusArgs>,
    #[command(flatten)]
    model: super::args::model::ModelArgs,
}

fn uniform(rng: &mut SecureRng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

fn gaussian(rng: &mut SecureRng) -> f64 {
    let (u, v) = (uniform(rng).max(1e-300), uniform(rng));
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// A random direction, or `centre` plus noise of `sd` per coordinate, scaled to unit length.
fn vector(rng: &mut SecureRng, dim: usize, centre: Option<&[f32]>, sd: f64) -> Vec<f32> {
    let v: Vec<f32> = (0..dim).map(|i| (centre.map_or(0.0, |c| f64::from(c[i])) + sd * gaussian(rng)) as f32).collect();
    vote::unit_length(&v).unwrap_or_else(|| vec![1.0; dim])
}

pub(crate) fn run(args: VoteBenchArgs) -> Result<(), CliError> {
    let mut rng = SecureRng::from_os()?;
    timing(&args, &mut rng)?;
    keep_rules(&args, &mut rng)?;
    if args.docs > 0 {
        embedding(&args)?;
    }
    Ok(())
}

fn timing(args: &VoteBenchArgs, rng: &mut SecureRng) -> Result<(), CliError> {
    let (n, m, d) = (args.units, args.candidates, args.dim);
    println!("benchmark: the DP vote, {n} private units × {m} candidates, dimension {d} (synthetic unit vectors; one thread)");
    let cands: Vec<Vec<f32>> = (0..m).map(|_| vector(rng, d, None, 1.0)).collect();
    let units: Vec<Vec<f32>> = (0..n).map(|_| vector(rng, d, None, 1.0)).collect();
    for classes in [1, args.classes.max(1)] {
        let per: Vec<Vec<Vec<f32>>> = (0..classes).map(|c| cands.iter().skip(c).step_by(classes).cloned().collect()).collect();
        let cs = Candidates::new(d, &per).map_err(|e| CliError::Input { path: "bench".into(), message: e.to_string() })?;
        let us: Vec<UnitVector> = units.iter().enumerate().map(|(i, v)| UnitVector { class: i % classes, vector: v.clone() }).collect();
        let mut best = f64::INFINITY;
        for _ in 0..args.repeat.max(1) {
            let t = Instant::now();
            let out = vote::release(&cs, &us, 1.0, rng).map_err(|e| CliError::Input { path: "bench".into(), message: e.to_string() })?;
            best = best.min(t.elapsed().as_secs_f64());
            std::hint::black_box(out);
        }
        let pairs = (n as f64) * (m as f64) / classes as f64;
        println!(
            "  {classes} class(es): {best:.3} s ({:.0} million unit-candidate cosines/s; {:.1} µs per unit)",
            pairs / best / 1e6,
            best / n as f64 * 1e6
        );
    }
    Ok(())
}

/// Mean over draws of (share of exact votes kept, share of kept on a topic, mean best cosine).
fn keep_rules(args: &VoteBenchArgs, rng: &mut SecureRng) -> Result<(), CliError> {
    let (dim, topics, per_kept) = (64, 30, 2);
    println!(
        "benchmark: which candidates to keep ({topics} topics of Zipf popularity, dimension {dim}, candidates: 60% on a random topic, 40% junk; \
         {per_kept} candidates per kept; mean of {} draws)",
        args.repeat.max(1)
    );
    println!("  {:>6} {:>6} {:>5} | {:<13} {:>12} {:>10} {:>14}", "units", "cands", "ε", "kept by", "votes held", "on topic", "mean best cos");
    for (units, cands, eps) in [(2000, 400, 1.0), (300, 400, 1.0), (300, 400, 0.25)] {
        let mut sums = [[0f64; 3]; 3];
        for _ in 0..args.repeat.max(1) {
            let centres: Vec<Vec<f32>> = (0..topics).map(|_| vector(rng, dim, None, 1.0)).collect();
            let zipf: Vec<f64> = (0..topics).map(|t| 1.0 / (t + 1) as f64).collect();
            let total: f64 = zipf.iter().sum();
            let pick = |rng: &mut SecureRng| {
                let mut r = uniform(rng) * total;
                zipf.iter().position(|&w| {
                    r -= w;
                    r < 0.0
                }).unwrap_or(topics - 1)
            };
            let private: Vec<Vec<f32>> = (0..units).map(|_| {
                let t = pick(rng);
                vector(rng, dim, Some(&centres[t]), 0.08)
            }).collect();
            let mut on = Vec::with_capacity(cands);
            let generated: Vec<Vec<f32>> = (0..cands)
                .map(|_| {
                    let topical = uniform(rng) < 0.6;
                    on.push(topical);
                    if topical {
                        let t = (uniform(rng) * topics as f64) as usize % topics;
                        vector(rng, dim, Some(&centres[t]), 0.1)
                    } else {
                        vector(rng, dim, None, 1.0)
                    }
                })
                .collect();
            let cs = Candidates::new(dim, &[generated.clone()]).map_err(|e| CliError::Input { path: "bench".into(), message: e.to_string() })?;
            let flat = cs.of_class(0);
            let mut exact = vec![0u64; cands];
            for p in &private {
                if let Some(j) = vote::nearest(flat, dim, p) {
                    exact[j] += 1;
                }
            }
            let us: Vec<UnitVector> = private.iter().map(|v| UnitVector { class: 0, vector: v.clone() }).collect();
            let noisy = vote::release(&cs, &us, eps, rng).map_err(|e| CliError::Input { path: "bench".into(), message: e.to_string() })?;
            let k = cands / per_kept;
            let random = {
                let fake: Vec<i64> = (0..cands).map(|_| (rng.next_u64() >> 1) as i64).collect();
                vote::kept(&fake, k, KeepMode::Top, rng)
            };
            let arms = [random, vote::kept(&noisy.votes[0], k, KeepMode::Top, rng), vote::kept(&noisy.votes[0], k, KeepMode::Proportional, rng)];
            for (a, kept) in arms.iter().enumerate() {
                let held = kept.iter().map(|&j| exact[j]).sum::<u64>() as f64 / units.max(1) as f64;
                let topical = kept.iter().filter(|&&j| on[j]).count() as f64 / kept.len().max(1) as f64;
                let best: f64 = private
                    .iter()
                    .map(|p| kept.iter().map(|&j| generated[j].iter().zip(p).map(|(a, b)| f64::from(*a) * f64::from(*b)).sum::<f64>()).fold(f64::MIN, f64::max))
                    .sum::<f64>()
                    / units.max(1) as f64;
                for (s, v) in sums[a].iter_mut().zip([held, topical, best]) {
                    *s += v;
                }
            }
        }
        let r = args.repeat.max(1) as f64;
        for (a, name) in ["no vote (random)", "top", "proportional"].iter().enumerate() {
            println!("  {units:>6} {cands:>6} {eps:>5} | {name:<13} {:>12.3} {:>10.3} {:>14.4}", sums[a][0] / r, sums[a][1] / r, sums[a][2] / r);
        }
    }
    Ok(())
}

/// Seconds per document, one per model call, on one thread and on every core.
fn embedding(args: &VoteBenchArgs) -> Result<(), CliError> {
    let texts: Vec<String> = match &args.corpus {
        Some(c) if !c.corpus.is_empty() => {
            let fields = dpkps_core::input::corpus::Fields { text: c.text_col.clone(), label: c.label_col.clone(), person: None };
            let mut ingest = dpkps_core::input::corpus::Ingest::new(c.labelled());
            let mut out = Vec::new();
            for input in super::io::inputs(c)? {
                let name = input.path.display().to_string();
                let file = std::fs::File::open(&input.path).map_err(|e| CliError::Input { path: name.clone(), message: format!("cannot open: {e}") })?;
                dpkps_core::input::corpus::stream(std::io::BufReader::new(file), &name, input.format, &fields, input.txt_label.as_deref(), &mut ingest, &mut |d| {
                    if out.len() < args.docs {
                        out.push(d.text.to_string())
                    }
                })?;
            }
            out
        }
        _ => (0..args.docs)
            .map(|i| format!("Visit {i}. {}", "The patient reports intermittent chest pain radiating to the left arm, worse on exertion, with shortness of breath and sweating; blood pressure was raised and an electrocardiogram was ordered. ".repeat(5)))
            .collect(),
    };
    let words = texts.iter().map(|t| t.split_whitespace().count()).sum::<usize>() as f64 / texts.len().max(1) as f64;
    println!("benchmark: embedding a document (bundled model unless --model; one document per call; {} documents of {words:.0} words on average)", texts.len());
    let (model, tok) = super::io::model_bytes(&args.model)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()).min(16);
    for threads in [1, cores] {
        let mut e = super::embedders::Embedders::new(model.clone(), tok.clone(), threads)?;
        let t = Instant::now();
        std::hint::black_box(e.embed("documents", &texts)?);
        let s = t.elapsed().as_secs_f64();
        println!("  {threads} thread(s): {:.1} ms per document ({:.1} documents/s)", s / texts.len().max(1) as f64 * 1e3, texts.len() as f64 / s);
        if cores == 1 {
            break;
        }
    }
    Ok(())
}
