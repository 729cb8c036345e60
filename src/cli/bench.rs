//! `dpkps bench …`: benchmarks that print figures. They assert nothing about speed.

use std::time::Instant;

use clap::Subcommand;

use super::{load_vocabulary, read_corpus, CliError, CorpusArgs};
use crate::vocab::Matcher;

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
    }
}

/// Peak resident set size of this process (Linux), in kB.
pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find(|l| l.starts_with("VmHWM:"))?.split_whitespace().nth(1)?.parse().ok()
}
