//! `dpkps embed-vocab`: the bundled vectors of a bundled vocabulary (see `embed::bundle`),
//! computed natively with the app's model and code. Run by `scripts/vectors.sh`, which caches
//! the result in `target/vectors/` by a hash of its inputs and copies it into the app.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use sha2::{Digest, Sha256};

use super::error::CliError;
use dpkps_core::embed::bundle;
use dpkps_embed::onnx::{OnnxEmbedder, BUNDLED_MODEL};
use dpkps_core::embed::Embed;
use dpkps_core::input::public_vocab::Bundled;

#[derive(Args)]
pub struct EmbedVocabArgs {
    /// The bundled vocabulary: medical or english.
    #[arg(long)]
    vocabulary: String,
    /// Only the first N terms (the English list is ordered by frequency) [default: all].
    #[arg(long)]
    head: Option<usize>,
    /// Threads, one model each [default: the machine's cores].
    #[arg(long)]
    threads: Option<usize>,
    /// Where to write the vectors (written to a temporary file, then renamed).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: EmbedVocabArgs) -> Result<(), CliError> {
    let which = Bundled::parse_name(&args.vocabulary).ok_or_else(|| CliError::Input {
        path: args.vocabulary.clone(),
        message: "not a bundled vocabulary (english, medical): only those have shipped vectors".into(),
    })?;
    let vocab = super::io::load_vocabulary(which.name())?;
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/models"));
    let read = |f: &str| std::fs::read(dir.join(f)).map_err(|e| CliError::Input { path: dir.join(f).display().to_string(), message: format!("cannot read: {e}") });
    let (model, tok) = (read(BUNDLED_MODEL)?, read("tokenizer.json")?);
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    let mut models: Vec<Box<dyn Embed + Send>> = Vec::new();
    for _ in 0..threads {
        models.push(Box::new(OnnxEmbedder::from_bytes(&model, &tok)?));
    }
    let head = args.head.unwrap_or(vocab.len()).min(vocab.len());
    let t0 = Instant::now();
    let vectors = bundle::embed_head(&vocab, head, &mut models, 32, &|done, total| {
        if done % 2048 < 32 || done == total {
            eprint!("\r{}: {done}/{total} terms embedded", vocab.name);
        }
    })?;
    let secs = t0.elapsed().as_secs_f64();
    eprintln!();
    let (bytes, worst) = bundle::encode(&dpkps_core::base::hex(&Sha256::digest(&model)), &vocab, &vectors)?;
    super::io::write_atomic(&args.out, &bytes, false)?;
    println!(
        "{}: {head} of {} terms in {secs:.1} s ({:.0} terms/s, {threads} thread(s)); {:.1} MB; lowest cosine after int8: {worst:.5}",
        args.out.display(),
        vocab.len(),
        head as f64 / secs,
        bytes.len() as f64 / 1e6
    );
    Ok(())
}
