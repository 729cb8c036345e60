//! Words as the replay check sees them, and the hashing its tables use.
//!
//! A word is a maximal run of alphanumeric characters, lower-cased: the words of
//! [`crate::input::text::normalize`], so that "Heart-Failure," and "heart failure" are the same two
//! words here as in matching. Words are interned by the synthetic corpus only ([`Words`]): a
//! private word that no synthetic document uses gets [`UNKNOWN`] and can never match, so the
//! table stays the size of the synthetic corpus whatever the private one holds.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The id of a private word that no synthetic document has.
pub(super) const UNKNOWN: u32 = u32::MAX;
/// Between two synthetic documents (and after the last): equal to no word, so a match never
/// runs from one document into the next.
pub(super) const SEPARATOR: u32 = u32::MAX - 1;

/// Calls `f(start, end, word)` for every word of `text` (byte offsets into `text`), the word
/// lower-cased into a reused buffer.
pub(super) fn for_each_word(text: &str, buf: &mut String, mut f: impl FnMut(usize, usize, &str)) {
    let mut start = None;
    buf.clear();
    for (i, ch) in text.char_indices() {
        if ch.is_alphanumeric() {
            if start.is_none() {
                start = Some(i);
                buf.clear();
            }
            if ch.is_ascii() {
                buf.push(ch.to_ascii_lowercase());
            } else {
                buf.extend(ch.to_lowercase());
            }
        } else if let Some(s) = start.take() {
            f(s, i, buf);
        }
    }
    if let Some(s) = start {
        f(s, text.len(), buf);
    }
}

/// A fast, non-keyed hasher (the FxHash mixing step) for the tables' keys: they are words and
/// n-gram hashes of the curator's own data, so there is no adversary to resist and speed is
/// what counts (the private corpus is hashed word by word).
#[derive(Default, Clone, Copy)]
pub(super) struct Fx(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Fx {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

pub(super) type FxBuild = BuildHasherDefault<Fx>;

/// The hash of the n word ids of one n-gram. Equal n-grams hash equally; the tables verify
/// the ids themselves, so a collision never makes two different n-grams match.
#[inline]
pub(super) fn ngram_hash(ids: &[u32]) -> u64 {
    let mut h = Fx::default();
    for &id in ids {
        h.add(u64::from(id));
    }
    // A final avalanche, so that the table's buckets (low bits) depend on every word.
    let mut x = h.0;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^ (x >> 33)
}

/// The words of the synthetic corpus, each with an id.
#[derive(Default)]
pub(super) struct Words {
    ids: HashMap<Box<str>, u32, FxBuild>,
}

impl Words {
    /// The id of `word`, added if new.
    pub(super) fn intern(&mut self, word: &str) -> u32 {
        if let Some(&id) = self.ids.get(word) {
            return id;
        }
        let id = self.ids.len() as u32;
        self.ids.insert(word.into(), id);
        id
    }

    /// The id of `word`, or [`UNKNOWN`] when no synthetic document has it.
    pub(super) fn get(&self, word: &str) -> u32 {
        self.ids.get(word).copied().unwrap_or(UNKNOWN)
    }

    /// Bytes held, roughly (keys, and the table's slots).
    pub(super) fn heap_bytes(&self) -> usize {
        self.ids.keys().map(|k| k.len()).sum::<usize>() + self.ids.capacity() * (std::mem::size_of::<(Box<str>, u32)>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<(usize, usize, String)> {
        let mut out = Vec::new();
        for_each_word(text, &mut String::new(), |s, e, w| out.push((s, e, w.to_string())));
        out
    }

    #[test]
    fn words_are_normalised_runs_of_letters_and_digits() {
        let w = words("Heart-Failure, COVID-19 Ωμέγα");
        let plain: Vec<&str> = w.iter().map(|(_, _, w)| w.as_str()).collect();
        assert_eq!(plain, ["heart", "failure", "covid", "19", "ωμέγα"]);
        // Offsets are the original text's: the span shown is the document's own.
        assert_eq!(&"Heart-Failure, COVID-19 Ωμέγα"[w[4].0..w[4].1], "Ωμέγα");
        // The same words as the matcher's normalisation.
        let text = "  Crohn's Disease;\tHEART\u{0}failure 心不全 ";
        let joined: Vec<String> = words(text).into_iter().map(|(_, _, w)| w).collect();
        assert_eq!(joined.join(" "), crate::input::text::normalize(text));
        assert!(words("").is_empty() && words(" ,;- ").is_empty());
    }
}
