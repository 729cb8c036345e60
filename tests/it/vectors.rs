//! The bundled vectors the app ships (`scripts/vectors.sh` → `target/vectors/<hash>/`, copied
//! into `dist/vectors/` by trunk) against the live model: a random sample of each list's terms,
//! embedded now, must point the same way (cosine ≥ 0.995). The same check runs in the browser
//! through the worker (tests/e2e/app.mjs, "Check the bundled model").
//!
//! The first run generates the vectors (a few minutes; then cached by a hash of the inputs).

use std::path::PathBuf;
use std::process::Command;

use dpkps_core::embed::bundle::{cosine, VectorFile};
use dpkps_embed::onnx::OnnxEmbedder;
use dpkps_core::embed::Embed;
use dpkps_core::input::public_vocab::{Bundled, PublicVocabulary};
use sha2::{Digest, Sha256};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The folder of the current generation (made by the script if missing or stale).
fn vectors_dir() -> PathBuf {
    let out = Command::new("bash")
        .arg(format!("{ROOT}/scripts/vectors.sh"))
        .env("DPKPS_BIN", env!("CARGO_BIN_EXE_dpkps"))
        .env_remove("TRUNK_STAGING_DIR")
        .output()
        .expect("bash runs scripts/vectors.sh");
    assert!(out.status.success(), "scripts/vectors.sh failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(stdout.lines().last().expect("the script prints the folder").trim())
}

/// A seed that differs from run to run (printed, so that a failure can be replayed with
/// DPKPS_VECTORS_SEED).
fn seed() -> u64 {
    std::env::var("DPKPS_VECTORS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1
    })
}

fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

#[test]
fn bundled_vectors_match_the_live_model_on_a_random_sample() {
    let dir = vectors_dir();
    let model_bytes = std::fs::read(format!("{ROOT}/models/all-MiniLM-L6-v2.int8w.onnx")).unwrap();
    let tok = std::fs::read(format!("{ROOT}/models/tokenizer.json")).unwrap();
    let model_sha = Sha256::digest(&model_bytes).iter().map(|b| format!("{b:02x}")).collect::<String>();
    let mut model = OnnxEmbedder::from_bytes(&model_bytes, &tok).unwrap();
    let mut x = seed();
    println!("sample seed (DPKPS_VECTORS_SEED): {x}");
    for which in Bundled::ALL {
        let list = std::fs::read(format!("{ROOT}/www/vocab/{}", which.file_name())).unwrap();
        let vocab = PublicVocabulary::parse_bundled(which, &list).unwrap();
        let path = dir.join(which.file_name().replace(".txt", ".vec"));
        let file = VectorFile::parse(std::fs::read(&path).unwrap()).unwrap();
        assert!(file.fits(&model_sha, &vocab), "{}: made for another model or list: {:?}", path.display(), file.header());
        assert_eq!(file.dim(), model.dim());
        match which {
            // The whole glossary; the English list's frequency-ordered head.
            Bundled::Medical => assert_eq!(file.len(), vocab.len()),
            Bundled::English => assert!(file.len() >= 20_000 && file.len() < vocab.len(), "{}", file.len()),
        }
        // 96 random terms, plus the first and the last the file holds; embedded 8 at a time in
        // random order (other batches and padding than the generator's).
        let mut ids: Vec<u32> = (0..96).map(|_| (next(&mut x) % file.len() as u64) as u32).collect();
        ids.extend([0, file.len() as u32 - 1]);
        let mut worst = (1.0f64, String::new());
        for chunk in ids.chunks(8) {
            let texts: Vec<&str> = chunk.iter().map(|&id| vocab.term(id)).collect();
            for ((&id, term), live) in chunk.iter().zip(&texts).zip(model.embed(&texts).unwrap()) {
                let c = cosine(&file.get(id).unwrap(), &live);
                if c < worst.0 {
                    worst = (c, term.to_string());
                }
            }
        }
        println!("{}: {} of {} terms, {} sampled, lowest cosine {:.5} ({:?})", which.name(), file.len(), vocab.len(), ids.len(), worst.0, worst.1);
        assert!(worst.0 >= 0.995, "{}: {:?} has cosine {} to the live model", which.name(), worst.1, worst.0);
        // Beyond the head there is nothing (those terms are embedded live).
        assert!(file.get(file.len() as u32).is_none());
    }
}
