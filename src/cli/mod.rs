//! The `dpkps` command-line tool: drives the same core as the browser app, for batch runs and
//! benchmarks. The contract (subcommands, files, exit codes) is in docs/cli.md.
//!
//! Exit codes: 0 success; 2 bad input or parameters (the message says which and where);
//! 1 anything else (I/O failures writing outputs, a missing random source).

pub(crate) mod args;
mod bench;
mod bench_adapt;
mod bench_replay;
mod bench_vote;
mod bench_docs;
mod check;
mod embedders;
pub(crate) mod error;
mod evaluate;
mod generate;
mod io;
mod kept;
mod ledger_file;
mod local_key;
mod replay;
mod run;
mod sequence_file;
mod term;
#[cfg(test)]
mod same_release;
mod select;
mod train;
mod vectors;

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;

use dpkps_core::input::public_vocab::Matcher;

use args::{Cli, Command};
use error::CliError;
use args::corpus::CorpusArgs;
use io::{load_vocabulary, print_stats, read_corpus, write_json, write_private, write_private_json};

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", term::terminal_safe(&e.to_string()));
            ExitCode::from(e.exit_code())
        }
    }
}

fn run(command: Command) -> Result<(), CliError> {
    match command {
        Command::Ingest { corpus, out } => {
            let mc = read_corpus(&corpus, None, 0)?;
            print_stats(&mc);
            if let Some(out) = out {
                write_private_json(&out, &mc.stats)?;
            }
            Ok(())
        }
        Command::Match { corpus, vocab, keep, out } => {
            let vocab = load_vocabulary(&vocab.vocabulary)?;
            let matcher = Matcher::new(&vocab)?;
            let t0 = Instant::now();
            let mc = read_corpus(&corpus, Some(&matcher), keep)?;
            let secs = t0.elapsed().as_secs_f64();
            print_stats(&mc);
            eprintln!(
                "matched {} documents against {} ({} terms) in {:.2} s; {} documents had no term",
                mc.docs.len(),
                vocab.name,
                vocab.len(),
                secs,
                mc.docs_without_terms
            );
            let mut lines = String::new();
            for d in &mc.docs {
                let terms: Vec<&str> = d.terms.iter().map(|&t| vocab.term(t)).collect();
                lines.push_str(&serde_json::json!({"label": d.label, "terms": terms}).to_string());
                lines.push('\n');
            }
            write_private(&out, lines.as_bytes())
        }
        Command::Vocab { corpus, classes, vocab, dp, ledger, out } => {
            let vocabulary = run::vocab(&corpus, &classes, &vocab, &dp, &ledger)?;
            write_json(&out, &vocabulary)?;
            if vocabulary.whole_list {
                eprintln!(
                    "N covers the public list: the private vocabulary is the whole list ({} terms), drawn from nothing, no ε_voc spent; wrote it to {}",
                    vocabulary.terms.len(),
                    out.display()
                );
            } else {
                eprintln!("wrote the private vocabulary ({} terms) to {}", vocabulary.terms.len(), out.display());
            }
            Ok(())
        }
        Command::Sequences { corpus, classes, vocab, private_vocab, summary, model, ledger, out, release } => {
            run::sequences(&corpus, &classes, &vocab, &private_vocab, &summary, &model, &ledger, &out, release.as_deref())
        }
        Command::Sample { release, vocab, model, per_class, sampling, out } => run::sample(&release, &vocab, &model, per_class, &sampling.get(), &out),
        Command::Pipeline { inputs, classes, ledger, out_dir } => run::pipeline(&inputs, &classes, &ledger, &out_dir),
        Command::Ledger { ledger, corpus, format, text_col, label_col, export, with_sketches } => {
            let path = ledger_file::ledger_path_of(ledger);
            let mut book = ledger_file::read(&path)?;
            // Shown (and exported) keyed, as the next run will store it.
            let local = local_key::load(&path)?;
            if let Some(local) = &local {
                book.key_with(local)?;
            }
            if let Some(out) = export {
                write_private(&out, book.for_export(with_sketches).to_json().as_bytes())?;
                eprintln!(
                    "wrote the ledger to {} ({}); keep it with the data",
                    out.display(),
                    if with_sketches { "with the overlap sketches: with this machine's key file they can test membership" } else { "without the overlap sketches" }
                );
            }
            let fingerprints: Vec<String> = if corpus.is_empty() {
                book.ledgers.keys().cloned().collect()
            } else {
                let args = CorpusArgs { corpus, format, text_col, label_col, label_from_dir: false, person_col: None };
                let mut mc = read_corpus(&args, None, 0)?;
                if let Some(local) = &local {
                    mc.key_with(local);
                }
                // Shown with what an older version recorded under an older key.
                book.adopt_older(&mc.keys);
                vec![mc.fingerprint]
            };
            println!("ledger: {}", path.display());
            for fp in fingerprints {
                let l = book.ledger(&fp);
                println!("corpus {}…: {} run(s), total ε = {:.4}", fp.chars().take(12).collect::<String>(), l.runs.len(), l.total_epsilon());
                for (stage, eps) in l.epsilon_by_stage() {
                    println!("  {stage}: ε = {eps:.4}");
                }
            }
            Ok(())
        }
        Command::Evaluate(args) => evaluate::run(args),
        Command::Check(args) => check::run(args),
        Command::Generate(args) => generate::run(args),
        Command::Select(args) => select::run(args),
        Command::Train(args) => train::run(args),
        Command::Predict(args) => train::predict(args),
        Command::EmbedVocab(args) => vectors::run(args),
        Command::Bench { which } => bench::run(which),
    }
}

