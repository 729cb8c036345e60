//! Precomputed embeddings of a bundled vocabulary ("bundled vectors"), shipped with the app.
//!
//! Why they may be shipped and read freely: the bundled vocabularies and the bundled model are
//! public and fixed, so the embedding of every bundled term is a function of public inputs
//! only. Reading the vector of any term reveals nothing about any corpus, so the worker can
//! download the whole table and look up whatever it needs instead of running the model (the
//! slowest stage in the page). What stays private is *which* terms a corpus matched: that set
//! lives only in the worker's memory (see `worker/sources.rs`).
//!
//! The table is built natively with the same model and code as the app
//! (`dpkps embed-vocab`, run by `scripts/vectors.sh` before every `trunk build`) and checked
//! against the live model in the tests (native and in the browser).
//!
//! Format (little-endian): the magic `DPKPSV01`; `dim`, `count`, `header_len` (u32 each); a
//! JSON [`Header`] of `header_len` bytes; `count` f32 scales; `count × dim` i8 components.
//! Row `i` is the vector of term id `i` of the vocabulary (the first `count` terms: the English
//! list is ordered by frequency, so a head covers most matches). A vector is stored as
//! `round(x / s)` with `s = max|x| / 127` per vector: 388 bytes for 384 floats instead of 1,536,
//! cosine to the float vector above 0.9999 (measured by the generator over every term).

use serde::{Deserialize, Serialize};

use super::{EmbedError, TermEmbeddings};
use crate::input::public_vocab::{PublicVocabulary, TermId};

const MAGIC: &[u8; 8] = b"DPKPSV01";
const QUANTIZATION: &str = "int8, one f32 scale per vector (max |x| / 127)";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// SHA-256 of the model file the vectors were computed with.
    pub model_sha256: String,
    /// The vocabulary's name and checksum ([`PublicVocabulary::checksum`]: list + stop list),
    /// which fix its term ids.
    pub vocabulary: String,
    pub vocabulary_sha256: String,
    /// Terms in the whole vocabulary; the file holds the first `count` of them.
    pub vocabulary_terms: usize,
    pub quantization: String,
}

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("not a bundled-vectors file (no DPKPSV01 header)")]
    Magic,
    #[error("the bundled-vectors file is cut short or malformed: {0}")]
    Malformed(String),
}

/// A parsed bundled-vectors file (the bytes are kept; vectors are decoded on lookup).
pub struct VectorFile {
    bytes: Vec<u8>,
    header: Header,
    dim: usize,
    count: usize,
    scales_at: usize,
    data_at: usize,
}

fn u32_at(b: &[u8], at: usize) -> Result<usize, BundleError> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize)
        .ok_or_else(|| BundleError::Malformed("header cut short".into()))
}

impl VectorFile {
    pub fn parse(bytes: Vec<u8>) -> Result<VectorFile, BundleError> {
        if bytes.get(..8) != Some(&MAGIC[..]) {
            return Err(BundleError::Magic);
        }
        let (dim, count, header_len) = (u32_at(&bytes, 8)?, u32_at(&bytes, 12)?, u32_at(&bytes, 16)?);
        let header_end = 20usize.checked_add(header_len).ok_or_else(|| BundleError::Malformed("header length".into()))?;
        let header: Header = serde_json::from_slice(bytes.get(20..header_end).ok_or_else(|| BundleError::Malformed("header cut short".into()))?)
            .map_err(|e| BundleError::Malformed(format!("header: {e}")))?;
        let scales_at = header_end;
        let data_at = count.checked_mul(4).and_then(|n| n.checked_add(scales_at)).ok_or_else(|| BundleError::Malformed("size".into()))?;
        let end = count.checked_mul(dim).and_then(|n| n.checked_add(data_at)).ok_or_else(|| BundleError::Malformed("size".into()))?;
        if dim == 0 || bytes.len() != end {
            return Err(BundleError::Malformed(format!("{} bytes for {count} vectors of {dim} dimensions (expected {end})", bytes.len())));
        }
        Ok(VectorFile { bytes, header, dim, count, scales_at, data_at })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// How many terms (the first ids of the vocabulary) have a vector here.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether these vectors were made for this model and exactly this vocabulary (same ids).
    pub fn fits(&self, model_sha256: &str, vocab: &PublicVocabulary) -> bool {
        self.header.model_sha256 == model_sha256 && self.header.vocabulary_sha256 == vocab.checksum && self.header.vocabulary_terms == vocab.len()
    }

    /// The decoded vector of term `id` (unit length), if the file holds it.
    pub fn get(&self, id: TermId) -> Option<Vec<f32>> {
        let i = id as usize;
        if i >= self.count {
            return None;
        }
        let s = &self.bytes[self.scales_at + 4 * i..][..4];
        let scale = f32::from_le_bytes([s[0], s[1], s[2], s[3]]);
        let q: Vec<i8> = self.bytes[self.data_at + i * self.dim..][..self.dim].iter().map(|&b| b as i8).collect();
        Some(dequantize(scale, &q))
    }

    /// Puts the vectors of those `ids` that the file holds into `out`; returns how many.
    pub fn fill(&self, ids: &[TermId], out: &mut TermEmbeddings) -> Result<usize, EmbedError> {
        let mut n = 0;
        for &id in ids {
            if let Some(v) = self.get(id) {
                out.insert(id, &v)?;
                n += 1;
            }
        }
        Ok(n)
    }
}

/// One vector as int8 components and its scale (`max |x| / 127`; 0 for the zero vector).
pub fn quantize(v: &[f32]) -> (f32, Vec<i8>) {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if !(max > 0.0 && max.is_finite()) {
        return (0.0, vec![0; v.len()]);
    }
    let scale = max / 127.0;
    (scale, v.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8).collect())
}

/// The vector back, rescaled to unit length as the model's outputs are (the zero vector stays).
pub fn dequantize(scale: f32, q: &[i8]) -> Vec<f32> {
    let mut v: Vec<f32> = q.iter().map(|&x| f32::from(x) * scale).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// The cosine similarity of two vectors (0 if either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// Writes a bundled-vectors file for the first `vectors.len()` terms of `vocab`
/// (`vectors[i]`: the embedding of term id `i`, all of one dimension). Returns the bytes and
/// the lowest cosine between a vector and its stored form.
pub fn encode(model_sha256: &str, vocab: &PublicVocabulary, vectors: &[Vec<f32>]) -> Result<(Vec<u8>, f64), EmbedError> {
    let dim = vectors.first().map_or(0, Vec::len);
    let header = Header {
        model_sha256: model_sha256.to_string(),
        vocabulary: vocab.name.clone(),
        vocabulary_sha256: vocab.checksum.clone(),
        vocabulary_terms: vocab.len(),
        quantization: QUANTIZATION.to_string(),
    };
    let header = serde_json::to_vec(&header).map_err(|e| EmbedError::Model(e.to_string()))?;
    let mut out = Vec::with_capacity(20 + header.len() + vectors.len() * (4 + dim));
    out.extend_from_slice(MAGIC);
    for n in [dim, vectors.len(), header.len()] {
        out.extend_from_slice(&(n as u32).to_le_bytes());
    }
    out.extend_from_slice(&header);
    let mut data = Vec::with_capacity(vectors.len() * dim);
    let mut worst = 1.0f64;
    for v in vectors {
        if v.len() != dim {
            return Err(EmbedError::Dimension { expected: dim, got: v.len() });
        }
        if v.iter().any(|x| !x.is_finite()) {
            return Err(EmbedError::NotFinite);
        }
        let (scale, q) = quantize(v);
        worst = worst.min(cosine(v, &dequantize(scale, &q)));
        out.extend_from_slice(&scale.to_le_bytes());
        data.extend(q.iter().map(|&x| x as u8));
    }
    out.extend_from_slice(&data);
    Ok((out, worst))
}

/// Embeds the first `head` terms of `vocab` with one model per thread (each thread takes the
/// next batch of `batch` terms of similar token count), calling `progress(done, total)`.
/// Returns `vectors[i]` for term id `i`. Native only: the generator of `dpkps embed-vocab`.
#[cfg(not(target_arch = "wasm32"))]
pub fn embed_head(
    vocab: &PublicVocabulary,
    head: usize,
    models: &mut [Box<dyn super::Embed + Send>],
    batch: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<Vec<f32>>, EmbedError> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let first = models.first().ok_or_else(|| EmbedError::Model("no model".into()))?;
    let mut ids: Vec<TermId> = (0..head.min(vocab.len()) as TermId).collect();
    super::sort_for_batching(first.as_ref(), &mut ids, |&id| vocab.term(id));
    let chunks: Vec<&[TermId]> = ids.chunks(batch.max(1)).collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let out: Mutex<Vec<Vec<f32>>> = Mutex::new(vec![Vec::new(); ids.len()]);
    std::thread::scope(|s| {
        let workers: Vec<_> = models
            .iter_mut()
            .map(|model| {
                let (chunks, next, done, out) = (&chunks, &next, &done, &out);
                s.spawn(move || -> Result<(), EmbedError> {
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(chunk) = chunks.get(k) else { return Ok(()) };
                        let texts: Vec<&str> = chunk.iter().map(|&id| vocab.term(id)).collect();
                        let vecs = model.embed(&texts)?;
                        if vecs.len() != chunk.len() {
                            return Err(EmbedError::Model(format!("{} vectors for {} texts", vecs.len(), chunk.len())));
                        }
                        let mut out = out.lock().map_err(|_| EmbedError::Model("a generator thread failed".into()))?;
                        for (&id, v) in chunk.iter().zip(vecs) {
                            out[id as usize] = v;
                        }
                        drop(out);
                        progress(done.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len(), chunks.iter().map(|c| c.len()).sum());
                    }
                })
            })
            .collect();
        workers.into_iter().try_for_each(|w| w.join().unwrap_or_else(|_| Err(EmbedError::Model("a generator thread panicked".into()))))
    })?;
    out.into_inner().map_err(|_| EmbedError::Model("a generator thread failed".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> PublicVocabulary {
        PublicVocabulary::parse("t", b"alpha\nbeta\ngamma\ndelta\n").unwrap()
    }

    /// Deterministic pseudo-random unit vectors with a few large components, as sentence
    /// models produce.
    fn vectors(n: usize, dim: usize) -> Vec<Vec<f32>> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|k| {
                let mut v: Vec<f32> = (0..dim)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                    })
                    .collect();
                v[k % dim] += 0.8;
                let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
                v.iter_mut().for_each(|a| *a /= n);
                v
            })
            .collect()
    }

    #[test]
    fn a_file_round_trips_within_the_stated_precision() {
        let vs = vectors(3, 384);
        let (bytes, worst) = encode("m", &vocab(), &vs).unwrap();
        let header_len = u32::from_le_bytes([bytes[16], bytes[17], bytes[18], bytes[19]]) as usize;
        assert_eq!(bytes.len(), 20 + header_len + 3 * (4 + 384), "388 bytes per vector");
        assert!(worst > 0.9995, "worst {worst}");
        let f = VectorFile::parse(bytes).unwrap();
        assert_eq!((f.len(), f.dim()), (3, 384));
        assert!(f.fits("m", &vocab()));
        assert!(!f.fits("other model", &vocab()));
        assert!(!f.fits("m", &PublicVocabulary::parse("t", b"alpha\nbeta\ngamma\nepsilon\n").unwrap()));
        for (i, v) in vs.iter().enumerate() {
            let got = f.get(i as TermId).unwrap();
            assert!(cosine(v, &got) > 0.9995);
            assert!((got.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
        }
        // Term 3 ("delta") is beyond the head: not in the file.
        assert!(f.get(3).is_none());
        let mut out = TermEmbeddings::new(384);
        assert_eq!(f.fill(&[3, 1, 0], &mut out).unwrap(), 2);
        assert!(out.contains(0) && out.contains(1) && !out.contains(3));
    }

    #[test]
    fn bad_files_are_refused_not_misread() {
        let (bytes, _) = encode("m", &vocab(), &vectors(2, 8)).unwrap();
        assert!(matches!(VectorFile::parse(b"PK\x03\x04zip".to_vec()), Err(BundleError::Magic)));
        assert!(matches!(VectorFile::parse(bytes[..bytes.len() - 1].to_vec()), Err(BundleError::Malformed(_))));
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(VectorFile::parse(longer), Err(BundleError::Malformed(_))));
        let mut huge = bytes;
        huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(VectorFile::parse(huge), Err(BundleError::Malformed(_))));
        assert!(encode("m", &vocab(), &[vec![0.5; 8], vec![0.5; 7]]).is_err());
        assert!(encode("m", &vocab(), &[vec![f32::NAN; 8]]).is_err());
    }

    #[test]
    fn quantization_keeps_the_direction_and_the_zero_vector() {
        for v in vectors(50, 384) {
            let (s, q) = quantize(&v);
            assert!(cosine(&v, &dequantize(s, &q)) > 0.9995);
            assert!(q.iter().any(|&x| x.unsigned_abs() == 127), "the largest component uses the full range");
        }
        let (s, q) = quantize(&[0.0; 4]);
        assert_eq!(dequantize(s, &q), vec![0.0; 4]);
    }
}
