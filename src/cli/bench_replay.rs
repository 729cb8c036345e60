//! `dpkps bench replay`: the replay check's cost and its flag rates on a real corpus.
//!
//! Real notes stand in for generated ones: `synthetic` of them, evenly spaced, cut to their
//! first `words` words, are checked against the rest of the corpus (every word-for-word copy
//! of them left out too). They are other patients' notes from the same source, so what flags
//! them is what genuinely different notes share (templates, a doctor's phrasing): an upper
//! bound on what an LLM writing notes from scratch would share. With `include` they stay in
//! the corpus and every one must be flagged. Or `generated`: a synthetic.jsonl checked against
//! the whole corpus. The timed pass streams the files as `dpkps generate --corpus` does (its
//! peak memory is printed before anything else is held); then the corpus is read into memory
//! for the grid of thresholds. It prints counts only, never a span.

use std::collections::HashSet;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::time::Instant;

use dpkps_core::input::corpus::{self, doc_hash, Fields, Ingest};
use dpkps_core::replay::{ReplayCheck, ReplayIndex, ReplayParams, SyntheticDoc};

use super::args::corpus::CorpusArgs;

use super::error::CliError;

use super::io::{inputs, peak_rss_kb};

/// Generated documents from a synthetic.jsonl.
fn read_generated(path: &Path) -> Result<Vec<SyntheticDoc>, CliError> {
    let bad = |message: String| CliError::Input { path: path.display().to_string(), message };
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read: {e}")))?;
    let mut docs = Vec::new();
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| bad(format!("line {}: {e}", i + 1)))?;
        let keyphrases = v["keyphrases"].as_array().map(|a| a.iter().filter_map(|k| k.as_str().map(str::to_string)).collect()).unwrap_or_default();
        docs.push(SyntheticDoc { index: i, text: v["text"].as_str().unwrap_or_default().to_string(), keyphrases });
    }
    Ok(docs)
}

/// Streams every document of the corpus to `f` (its position and text), one at a time.
fn stream(args: &CorpusArgs, f: &mut dyn FnMut(usize, &str)) -> Result<(), CliError> {
    let fields = Fields { text: args.text_col.clone(), label: args.label_col.clone(), person: None };
    let mut ingest = Ingest::new(false);
    let mut at = 0;
    for input in inputs(args)? {
        let name = input.path.display().to_string();
        let file = File::open(&input.path).map_err(|e| CliError::Input { path: name.clone(), message: format!("cannot open: {e}") })?;
        corpus::stream(BufReader::with_capacity(1 << 20, file), &name, input.format, &fields, input.txt_label.as_deref(), &mut ingest, &mut |d| {
            f(at, d.text);
            at += 1;
        })?;
    }
    Ok(())
}

pub(super) fn run(args: &CorpusArgs, synthetic: usize, words: usize, include: bool, generated: Option<&Path>) -> Result<(), CliError> {
    let mut total = 0;
    stream(args, &mut |_, _| total += 1)?;
    let docs = match generated {
        Some(path) => read_generated(path)?,
        None => {
            let count = synthetic.min(total / 2).max(1);
            let picked: HashSet<usize> = (0..count).map(|i| i * total / count).collect();
            let mut docs = Vec::new();
            stream(args, &mut |i, t| {
                if picked.contains(&i) {
                    docs.push(SyntheticDoc { index: i, text: t.to_string(), keyphrases: Vec::new() });
                }
            })?;
            docs
        }
    };
    // MTSamples files most notes twice (under their specialty and a general one): every copy
    // of a checked note is left out too, else a copy would flag it (a true replay, but not
    // what this measures). With --include or generated documents, nothing is left out.
    let leave_out: HashSet<[u8; 32]> = if include || generated.is_some() { HashSet::new() } else { docs.iter().map(|d| doc_hash(&d.text)).collect() };
    let docs: Vec<SyntheticDoc> = docs
        .into_iter()
        .map(|d| SyntheticDoc { text: d.text.split_whitespace().take(words).collect::<Vec<_>>().join(" "), ..d })
        .collect();

    // The default thresholds, streamed from the files as `dpkps generate --corpus` reads them.
    let t = Instant::now();
    let mut index = ReplayIndex::new(docs.clone(), ReplayParams::default()).map_err(|e| CliError::Input { path: "bench".into(), message: e.to_string() })?;
    let (mut left_out, mut bytes) = (0usize, 0usize);
    stream(args, &mut |_, text| {
        if !leave_out.is_empty() && leave_out.contains(&doc_hash(text)) {
            left_out += 1;
        } else {
            bytes += text.len();
            index.add_private(text);
        }
    })?;
    let secs = t.elapsed().as_secs_f64();
    let (read, repeats, words_read, index_bytes) = (index.private_documents(), index.repeated_documents(), index.private_words(), index.heap_bytes());
    let check = ReplayCheck { params: ReplayParams::default(), docs: index.finish() };
    println!(
        "benchmark: replay check, {} documents of ≤ {words} words against {read} private documents ({:.1} MB; {} word for word again, read once; {}), one thread",
        docs.len(),
        bytes as f64 / 1e6,
        repeats,
        if generated.is_some() {
            "generated documents".to_string()
        } else if include {
            "the checked notes included".to_string()
        } else {
            format!("the checked notes and their copies left out: {left_out}")
        },
    );
    println!(
        "  streamed from the files (CSV parsing included), defaults ({}): {secs:.2} s, {:.0} documents/s, {:.1} M words read; index {:.1} MB; flagged {} of {}",
        ReplayParams::default().describe(),
        read as f64 / secs,
        words_read as f64 / 1e6,
        index_bytes as f64 / 1e6,
        check.flagged().len(),
        check.docs.len()
    );
    if let Some(kb) = peak_rss_kb() {
        println!("  peak resident memory so far: {:.1} MB", kb as f64 / 1024.0);
    }

    // The grid, in memory.
    let mut texts: Vec<String> = Vec::new();
    stream(args, &mut |_, t| {
        if leave_out.is_empty() || !leave_out.contains(&doc_hash(t)) {
            texts.push(t.to_string())
        }
    })?;
    println!("  flag rates (in memory; n-gram length n, rare = in 1..R private texts; run = shared words):");
    for ngram in [6, 8, 10] {
        for rare_docs in [1, 2] {
            let params = ReplayParams { ngram, rare_docs, flag_run: ngram.max(8) };
            let t = Instant::now();
            let check = ReplayCheck::run(docs.clone(), texts.iter().map(String::as_str), params).map_err(|e| CliError::Input { path: "bench".into(), message: e.to_string() })?;
            let secs = t.elapsed().as_secs_f64();
            let share = |f: &dyn Fn(&dpkps_core::replay::DocReplay) -> bool| 100.0 * check.docs.iter().filter(|d| f(d)).count() as f64 / check.docs.len().max(1) as f64;
            let rare = share(&|d| d.rare_ngrams > 0);
            let runs: Vec<String> = [8usize, 12, 16, 24]
                .iter()
                .filter(|&&r| r >= ngram)
                .map(|&r| format!("run ≥ {r}: {:.0}% ({:.0}% with rare)", share(&|d| d.longest_run >= r), share(&|d| d.longest_run >= r || d.rare_ngrams > 0)))
                .collect();
            let mut longest: Vec<usize> = check.docs.iter().map(|d| d.longest_run).collect();
            longest.sort_unstable();
            let q = |p: usize| longest.get(longest.len().saturating_sub(1) * p / 100).copied().unwrap_or(0);
            println!(
                "  n = {ngram}, R = {rare_docs} ({secs:.2} s): longest run median {}, 90th percentile {}, max {} | rare n-gram {rare:.0}% | {}",
                q(50),
                q(90),
                q(100),
                runs.join(" | ")
            );
        }
    }
    Ok(())
}
