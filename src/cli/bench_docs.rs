//! `dpkps bench docs`: documents embedded per second natively, on the same documents the page's
//! benchmark embeds (`tests/e2e/bench_docs.mjs` reads the file `--write` leaves), and where a
//! document's model call spends its time (`dpkps_embed::profile`). Two sets from the corpus's
//! notes, in file order: notes of at least 256 tokens (the model reads the first 256) and the
//! first 100 words of notes (about a generated document). One thread: per-core figures.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use super::args::corpus::CorpusArgs;
use super::error::CliError;
use dpkps_core::embed::Embed;
use dpkps_embed::onnx::{OnnxEmbedder, MAX_TOKENS};

#[derive(Args)]
pub(crate) struct DocsBenchArgs {
    #[command(flatten)]
    corpus: CorpusArgs,
    /// Documents in each set.
    #[arg(long, default_value_t = 100)]
    docs: usize,
    /// Documents of each set profiled node by node (0: none).
    #[arg(long, default_value_t = 20)]
    profile: usize,
    /// Also write the two sets here as JSON ({"notes": [...], "short": [...]}) for the page's
    /// benchmark.
    #[arg(long)]
    write: Option<PathBuf>,
    /// Also time plans with fixed shapes (experiments: batch and padded length).
    #[arg(long)]
    plans: bool,
    #[command(flatten)]
    model: super::args::model::ModelArgs,
}

/// The two sets: (name, documents).
#[derive(serde::Serialize)]
struct Sets {
    notes: Vec<String>,
    short: Vec<String>,
}

fn read_sets(args: &DocsBenchArgs, e: &OnnxEmbedder) -> Result<Sets, CliError> {
    let c = &args.corpus;
    let fields = dpkps_core::input::corpus::Fields { text: c.text_col.clone(), label: c.label_col.clone(), person: None };
    let mut ingest = dpkps_core::input::corpus::Ingest::new(c.labelled());
    let mut all = Vec::new();
    for input in super::io::inputs(c)? {
        let name = input.path.display().to_string();
        let file = std::fs::File::open(&input.path).map_err(|e| CliError::Input { path: name.clone(), message: format!("cannot open: {e}") })?;
        dpkps_core::input::corpus::stream(std::io::BufReader::new(file), &name, input.format, &fields, input.txt_label.as_deref(), &mut ingest, &mut |d| all.push(d.text.to_string()))?;
    }
    let notes = all.iter().filter(|t| e.batch_key(t) >= MAX_TOKENS).take(args.docs).cloned().collect();
    let short = all.iter().filter(|t| t.split_whitespace().count() >= 100).take(args.docs).map(|t| t.split_whitespace().take(100).collect::<Vec<_>>().join(" ")).collect();
    Ok(Sets { notes, short })
}

pub(crate) fn run(args: DocsBenchArgs) -> Result<(), CliError> {
    let (model, tok) = super::io::model_bytes(&args.model)?;
    let t0 = Instant::now();
    let mut e = OnnxEmbedder::from_bytes(&model, &tok)?;
    println!("benchmark: documents embedded natively, one thread, one document per model call (model loaded in {:.2} s)", t0.elapsed().as_secs_f64());
    let sets = read_sets(&args, &e)?;
    if let Some(path) = &args.write {
        let json = serde_json::to_vec(&sets).map_err(|e| CliError::Input { path: path.display().to_string(), message: e.to_string() })?;
        std::fs::write(path, json).map_err(|e| CliError::Input { path: path.display().to_string(), message: format!("cannot write: {e}") })?;
    }
    for (name, texts) in [("256-token notes", &sets.notes), ("100-word documents", &sets.short)] {
        let tokens = texts.iter().map(|t| e.batch_key(t)).sum::<usize>() as f64 / texts.len().max(1) as f64;
        let t = Instant::now();
        for text in texts {
            std::hint::black_box(e.embed(&[text.as_str()])?);
        }
        let s = t.elapsed().as_secs_f64();
        println!("  {name}: {} documents, {tokens:.0} tokens each: {:.1} documents/s ({:.1} ms a document)", texts.len(), texts.len() as f64 / s, s * 1e3 / texts.len().max(1) as f64);
        if args.profile > 0 {
            let start = Instant::now();
            let refs: Vec<&str> = texts.iter().take(args.profile).map(String::as_str).collect();
            let p = dpkps_embed::profile::profile(&e, &refs, &|| start.elapsed().as_secs_f64() * 1e3)?;
            print!("{}", p.table());
        }
        if args.plans {
            let start = Instant::now();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let shapes: &[(usize, Option<usize>)] = if name.starts_with("256") { &[(1, None), (1, Some(256)), (4, Some(256))] } else { &[(1, None), (1, Some(256))] };
            for (what, ms, same, build) in dpkps_embed::profile::compare_plans(&model, &e, &refs, shapes, &|| start.elapsed().as_secs_f64() * 1e3)? {
                println!("    plan {what}: {ms:.1} ms a document; same bits as alone: {same}; built in {build:.0} ms");
            }
        }
    }
    Ok(())
}
