//! Public vocabularies and keyphrase matching.
//!
//! A public vocabulary is a list of terms (keyphrases, possibly multi-word) that is NOT derived
//! from the private corpus: the bundled English word list (GloVe 6B) and medical glossary
//! (MeSH 2017 descriptor names), or the user's own list. Because it is public, the DP
//! vocabulary mechanism can put noise on every one of its entries (see `dp::vocabulary`).
//!
//! Matching: a term occurs in a document where its normalised words (see [`crate::input::text`])
//! appear as whole words, contiguously. Among overlapping occurrences the leftmost wins, and
//! among those starting at the same word the longest ("heart failure" over "heart").
//! Occurrences are reported in document order. The matcher is an Aho–Corasick automaton
//! (`aho-corasick`) over the normalised text with every pattern framed by spaces, so a match
//! can only start and end at word boundaries.
//!
//! What a run keeps of a document is its distinct terms **by how often it uses them**
//! ([`Matcher::most_used`]): the terms a note repeats are what it is about, where its first
//! words are often its template's ("history", "patient", "presents"). Every later stage reads a
//! document's terms in that order: its S for the vocabulary, its first M in Ṽ for the
//! summaries, its first L as its own sequence. Measured in docs/utility.md ("A document's
//! terms by use, not by position"; repeated terms first whatever their count, then first use,
//! was level with it at every size: "Repeated terms first, then first use").

use std::collections::HashMap;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::input::text::{normalize, normalize_into, push_normalized};

/// Index of a term in its [`PublicVocabulary`].
pub type TermId = u32;

/// The vocabularies bundled with the app.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bundled {
    /// English words of the GloVe 6B vocabulary (PDDL).
    English,
    /// MeSH 2017 descriptor names (U.S. National Library of Medicine).
    Medical,
}

impl Bundled {
    pub const ALL: [Bundled; 2] = [Bundled::English, Bundled::Medical];

    pub fn name(self) -> &'static str {
        match self {
            Bundled::English => "english",
            Bundled::Medical => "medical",
        }
    }

    /// File name under `www/vocab/` (served at `vocab/<file>` by the app).
    pub fn file_name(self) -> &'static str {
        match self {
            Bundled::English => "english_glove6b.txt",
            Bundled::Medical => "medical_mesh2017.txt",
        }
    }

    pub fn parse_name(s: &str) -> Option<Bundled> {
        Bundled::ALL.into_iter().find(|b| b.name().eq_ignore_ascii_case(s))
    }

    /// The stop list: terms of the bundled list that name nothing about a document's class
    /// (generic words, places, time, publication types, named groups; criteria in
    /// `www/vocab/README.md`). Chosen by those public criteria, never from a corpus, so the
    /// filtered vocabulary is as public as the list. Compiled in, so that the CLI, the
    /// worker and the UI's asset check cannot disagree about it.
    pub fn stoplist(self) -> &'static str {
        match self {
            Bundled::English => include_str!("../../../../www/vocab/stoplist_english.txt"),
            Bundled::Medical => include_str!("../../../../www/vocab/stoplist_medical.txt"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VocabError {
    #[error("the vocabulary {name:?} has no terms (one term per line; lines starting with # are comments)")]
    Empty { name: String },
    #[error("the vocabulary {name:?}, line {line}: the text is not valid UTF-8")]
    InvalidUtf8 { name: String, line: u64 },
    #[error("the vocabulary {name:?} has {count} terms; at most {max} are supported")]
    TooLarge { name: String, count: usize, max: usize },
    #[error("could not build the keyphrase matcher: {0}")]
    Matcher(String),
}

/// A public vocabulary: distinct terms, in file order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PublicVocabulary {
    pub name: String,
    /// The terms as written in the list (first spelling wins among duplicates).
    pub terms: Vec<String>,
    /// SHA-256 of the list as given (hex); goes into the privacy report.
    pub checksum: String,
    /// Lines that normalised to an already-listed term and were dropped.
    pub duplicates_dropped: usize,
}

impl PublicVocabulary {
    /// Most terms supported (ids are `u32`; far above any real vocabulary).
    pub const MAX_TERMS: usize = 50_000_000;

    /// Parses a list: one term per line; blank lines and lines starting with `#` are ignored;
    /// terms whose normalised form is empty or already present are dropped.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<PublicVocabulary, VocabError> {
        let checksum = crate::base::hex(&Sha256::digest(bytes));
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let text = std::str::from_utf8(bytes).map_err(|e| VocabError::InvalidUtf8 {
            name: name.to_string(),
            line: bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() as u64 + 1,
        })?;
        let mut seen: HashMap<String, ()> = HashMap::new();
        let mut terms = Vec::new();
        let mut duplicates_dropped = 0;
        let mut key = String::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            normalize_into(line, &mut key);
            if key.is_empty() {
                continue;
            }
            if seen.insert(key.clone(), ()).is_some() {
                duplicates_dropped += 1;
                continue;
            }
            terms.push(line.to_string());
        }
        if terms.is_empty() {
            return Err(VocabError::Empty { name: name.to_string() });
        }
        if terms.len() > Self::MAX_TERMS {
            return Err(VocabError::TooLarge { name: name.to_string(), count: terms.len(), max: Self::MAX_TERMS });
        }
        Ok(PublicVocabulary { name: name.to_string(), terms, checksum, duplicates_dropped })
    }

    /// A bundled vocabulary as the app and the CLI use it: the list (`bytes`, the file
    /// `which.file_name()`) without the terms of its stop list. The checksum covers both: it
    /// is the SHA-256 of the list file followed by the stop list file
    /// (`cat medical_mesh2017.txt stoplist_medical.txt | sha256sum`), so a release made with
    /// another stop list does not pass for one made with this one.
    pub fn parse_bundled(which: Bundled, bytes: &[u8]) -> Result<PublicVocabulary, VocabError> {
        let stop = which.stoplist();
        let mut v = Self::parse(which.name(), bytes)?.without(stop);
        let mut hash = Sha256::new();
        hash.update(bytes);
        hash.update(stop.as_bytes());
        v.checksum = crate::base::hex(&hash.finalize());
        if v.terms.is_empty() {
            return Err(VocabError::Empty { name: v.name });
        }
        Ok(v)
    }

    /// The vocabulary without the terms listed in `stop` (same format as a vocabulary: one
    /// term per line, `#` comments). Terms are compared by their normalised form, as matching
    /// compares them. The checksum is left as it is: the caller says what it covers.
    pub fn without(mut self, stop: &str) -> PublicVocabulary {
        let mut key = String::new();
        let mut stopped: HashMap<String, ()> = HashMap::new();
        for line in stop.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            normalize_into(line, &mut key);
            stopped.insert(key.clone(), ());
        }
        self.terms.retain(|t| {
            normalize_into(t, &mut key);
            !stopped.contains_key(&key)
        });
        self
    }

    pub fn len(&self) -> usize {
        self.terms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn term(&self, id: TermId) -> &str {
        &self.terms[id as usize]
    }
}

/// Finds vocabulary terms in documents.
#[derive(Clone)]
pub struct Matcher {
    /// Pattern index = term id: the patterns are the terms in vocabulary order.
    automaton: AhoCorasick,
}

/// Reusable scratch space for [`Matcher`], so matching allocates nothing per document.
#[derive(Default)]
pub struct MatchScratch {
    normalized: String,
    hits: Vec<(usize, usize, TermId)>,
    /// [`Matcher::most_used`]: each distinct term's place in `uses`, and (term, uses, order of
    /// first use).
    slot: rustc_hash::FxHashMap<TermId, usize>,
    uses: Vec<(TermId, u32, usize)>,
}

impl Matcher {
    pub fn new(vocab: &PublicVocabulary) -> Result<Matcher, VocabError> {
        let patterns: Vec<String> = vocab.terms.iter().map(|term| format!(" {} ", normalize(term))).collect();
        // Overlapping search needs the standard match kind; the leftmost-longest choice is
        // made afterwards in `find`, among whole-word occurrences only. A contiguous NFA keeps
        // memory proportional to the vocabulary (a DFA over 340k patterns would not fit).
        let automaton = AhoCorasickBuilder::new()
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(&patterns)
            .map_err(|e| VocabError::Matcher(e.to_string()))?;
        Ok(Matcher { automaton })
    }

    /// Calls `each` with every term occurrence of `text`, in document order (leftmost-longest,
    /// non-overlapping). Stops early when `each` returns `false`.
    pub fn for_each(&self, text: &str, scratch: &mut MatchScratch, mut each: impl FnMut(TermId) -> bool) {
        let MatchScratch { normalized, hits, .. } = scratch;
        normalized.clear();
        normalized.push(' ');
        push_normalized(text, normalized);
        normalized.push(' ');
        hits.clear();
        for m in self.automaton.find_overlapping_iter(normalized.as_str()) {
            hits.push((m.start(), m.end(), m.pattern().as_u32()));
        }
        // Leftmost first; at the same start, longest first.
        hits.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        // Consecutive occurrences share the space between them, so the next one may start at
        // the previous end minus one.
        let mut next_start = 0usize;
        for &(start, end, id) in hits.iter() {
            if start < next_start {
                continue;
            }
            next_start = end - 1;
            if !each(id) {
                break;
            }
        }
    }

    /// All term occurrences of `text`, in document order.
    pub fn find_all(&self, text: &str, scratch: &mut MatchScratch) -> Vec<TermId> {
        let mut out = Vec::new();
        self.for_each(text, scratch, |id| {
            out.push(id);
            true
        });
        out
    }

    /// The DISTINCT terms of `text`, most used first (ties: the one used first comes first), at
    /// most `s`. This is what a run keeps of a document (module docs), and so what it
    /// contributes to every release: its first S to the vocabulary histogram (each once), its
    /// first M in Ṽ to the summaries. A function of the one document alone, like the
    /// first-used order it replaced, so no sensitivity changes (`dp::vocabulary`).
    pub fn most_used(&self, text: &str, s: usize, scratch: &mut MatchScratch) -> Vec<TermId> {
        if s == 0 {
            return Vec::new();
        }
        let mut slot = std::mem::take(&mut scratch.slot);
        let mut uses = std::mem::take(&mut scratch.uses);
        slot.clear();
        uses.clear();
        self.for_each(text, scratch, |id| {
            let next = uses.len();
            let i = *slot.entry(id).or_insert(next);
            if i == next {
                uses.push((id, 0, next));
            }
            uses[i].1 += 1;
            true
        });
        // The order of first use breaks ties: an unstable sort on (count, first use) is the
        // stable order by count, without a buffer per document.
        uses.sort_unstable_by_key(|&(_, n, first)| (std::cmp::Reverse(n), first));
        let out = uses.iter().take(s).map(|&(id, ..)| id).collect();
        scratch.slot = slot;
        scratch.uses = uses;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab(terms: &[&str]) -> PublicVocabulary {
        PublicVocabulary::parse("t", terms.join("\n").as_bytes()).unwrap()
    }

    fn words(v: &PublicVocabulary, ids: &[TermId]) -> Vec<String> {
        ids.iter().map(|&i| v.term(i).to_string()).collect()
    }

    #[test]
    fn longest_match_first_in_document_order() {
        let v = vocab(&["heart", "Heart Failure", "failure", "chest pain", "pain"]);
        let m = Matcher::new(&v).unwrap();
        let mut s = MatchScratch::default();
        let got = m.find_all("Chest pain; congestive HEART-failure, then heart failure again; pain", &mut s);
        assert_eq!(words(&v, &got), ["chest pain", "Heart Failure", "Heart Failure", "pain"]);
    }

    #[test]
    fn only_whole_words_match() {
        let v = vocab(&["art", "heart", "ear"]);
        let m = Matcher::new(&v).unwrap();
        let mut s = MatchScratch::default();
        assert_eq!(words(&v, &m.find_all("hearts, heartbeat, the art, early", &mut s)), ["art"]);
    }

    #[test]
    fn longer_candidate_ending_mid_word_falls_back_to_shorter_one() {
        // "heart fail" ends inside "failure"; "heart" must still be found.
        let v = vocab(&["heart", "heart fail"]);
        let m = Matcher::new(&v).unwrap();
        let mut s = MatchScratch::default();
        assert_eq!(words(&v, &m.find_all("heart failure", &mut s)), ["heart"]);
    }

    #[test]
    fn adjacent_occurrences_share_the_separator() {
        let v = vocab(&["pain"]);
        let m = Matcher::new(&v).unwrap();
        let mut s = MatchScratch::default();
        assert_eq!(m.find_all("pain pain,pain", &mut s).len(), 3);
    }

    #[test]
    fn most_used_first_then_first_used_and_stops_at_s() {
        let v = vocab(&["a b", "c", "d", "e"]);
        let m = Matcher::new(&v).unwrap();
        let mut s = MatchScratch::default();
        // c 3 times; e twice; d and "a b" once each, d used before "a b".
        let got = m.most_used("d A-B c e c c e", 4, &mut s);
        assert_eq!(words(&v, &got), ["c", "e", "d", "a b"]);
        let got = m.most_used("d A-B c e c c e", 3, &mut s);
        assert_eq!(words(&v, &got), ["c", "e", "d"]);
        // By count, not by first use among repeated terms: c (4 times) before e (twice, used
        // first).
        let got = m.most_used("d e c c a-b c e c", 4, &mut s);
        assert_eq!(words(&v, &got), ["c", "e", "d", "a b"]);
        // Each term once: the order of first use.
        assert_eq!(words(&v, &m.most_used("e d c a b", 9, &mut s)), ["e", "d", "c", "a b"]);
        assert!(m.most_used("c d", 0, &mut s).is_empty());
        assert!(m.most_used("nothing here", 3, &mut s).is_empty());
    }

    #[test]
    fn a_term_repeated_late_is_kept_over_earlier_ones_used_once() {
        // 70 distinct words, then "late" three times and "w3" once more: "late" is the 71st
        // distinct term, past what first use kept at s = 64, and now comes first.
        let words_: Vec<String> = (0..70).map(|i| format!("w{i}")).chain(["late".to_string()]).collect();
        let refs: Vec<&str> = words_.iter().map(String::as_str).collect();
        let v = vocab(&refs);
        let m = Matcher::new(&v).unwrap();
        let mut s = MatchScratch::default();
        let text = format!("{} late w3 late", words_.join(" "));
        let got = words(&v, &m.most_used(&text, 64, &mut s));
        assert_eq!(got.len(), 64);
        assert_eq!(&got[..3], ["late", "w3", "w0"]);
        assert_eq!(got[63], "w62", "the rest in order of first use");
        // Any s keeps a prefix of the longer list.
        for k in [1, 2, 3, 10, 63] {
            assert_eq!(words(&v, &m.most_used(&text, k, &mut s)), got[..k]);
        }
    }

    #[test]
    fn nothing_of_one_document_stays_in_the_scratch_for_the_next() {
        let v = vocab(&["a", "b", "c", "d"]);
        let m = Matcher::new(&v).unwrap();
        let mut used = MatchScratch::default();
        assert_eq!(words(&v, &m.most_used("a a a a b b c", 4, &mut used)), ["a", "b", "c"]);
        for text in ["d c", "c d d", "b", "", "a d"] {
            let fresh = m.most_used(text, 4, &mut MatchScratch::default());
            assert_eq!(m.most_used(text, 4, &mut used), fresh, "{text}");
        }
    }

    #[test]
    fn nasty_inputs_do_not_panic() {
        let v = vocab(&["x", "ωμέγα", "心不全"]);
        let m = Matcher::new(&v).unwrap();
        let mut s = MatchScratch::default();
        assert!(m.find_all("", &mut s).is_empty());
        assert!(m.find_all("\u{0}\u{1}\u{feff}   ", &mut s).is_empty());
        assert_eq!(m.find_all("ΩΜΈΓΑ 心不全 x", &mut s).len(), 3);
        let long = "x ".repeat(100_000);
        assert_eq!(m.find_all(&long, &mut s).len(), 100_000);
    }

    #[test]
    fn without_drops_stop_listed_terms_by_normalised_form() {
        let v = vocab(&["Time", "Heart Failure", "History", "Nose"]).without("# generic\n time \nHISTORY\n\nabsent\n");
        assert_eq!(v.terms, ["Heart Failure", "Nose"]);
    }

    #[test]
    fn bundled_medical_vocabulary_is_filtered_and_in_natural_order() {
        let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../www/vocab/medical_mesh2017.txt")).unwrap();
        let plain = PublicVocabulary::parse("medical", &bytes).unwrap();
        let v = PublicVocabulary::parse_bundled(Bundled::Medical, &bytes).unwrap();
        assert_ne!(v.checksum, plain.checksum);
        assert!(v.len() < plain.len());
        let has = |t: &str| v.terms.iter().any(|x| x == t);
        for generic in ["Time", "Work", "Family", "Review", "History", "Attention", "Patients", "Texas"] {
            assert!(plain.terms.iter().any(|x| x == generic), "{generic} is in MeSH");
            assert!(!has(generic), "{generic} is stop-listed");
        }
        for clinical in ["Nose", "Diet", "Heart", "Pain", "Anxiety", "General Anesthesia", "Rheumatoid Arthritis", "1,2-Dimethylhydrazine", "Amino Acids, Peptides, and Proteins"] {
            assert!(has(clinical), "{clinical} stays");
        }
        assert!(!has("Anesthesia, General"));
        // Every stop-list entry names a term of the list (no typos that silently keep one).
        let keys: HashMap<String, ()> = plain.terms.iter().map(|t| (normalize(t), ())).collect();
        for line in Bundled::Medical.stoplist().lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')) {
            assert!(keys.contains_key(&normalize(line)), "{line:?} is not in the medical list");
        }
    }

    #[test]
    fn bundled_english_vocabulary_is_filtered() {
        let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../www/vocab/english_glove6b.txt")).unwrap();
        let v = PublicVocabulary::parse_bundled(Bundled::English, &bytes).unwrap();
        let has = |t: &str| v.terms.iter().any(|x| x == t);
        for generic in ["year", "time", "patient", "history", "monday", "percent"] {
            assert!(!has(generic), "{generic} is stop-listed");
        }
        for kept in ["heart", "nose", "diet", "fever"] {
            assert!(has(kept), "{kept} stays");
        }
        let stop = Bundled::English.stoplist().lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).count();
        let plain = PublicVocabulary::parse("english", &bytes).unwrap();
        assert_eq!(plain.len() - v.len(), stop, "every stop-list word is in the list");
    }

    #[test]
    fn parse_dedupes_by_normalised_form_and_skips_comments() {
        let v = PublicVocabulary::parse("t", b"# comment\nHeart Failure\nheart-failure\n\n  --  \nCough\n").unwrap();
        assert_eq!(v.terms, ["Heart Failure", "Cough"]);
        assert_eq!(v.duplicates_dropped, 1);
        assert!(matches!(PublicVocabulary::parse("t", b"# only\n\n"), Err(VocabError::Empty { .. })));
        assert!(matches!(PublicVocabulary::parse("t", b"ok\n\xff\n"), Err(VocabError::InvalidUtf8 { line: 2, .. })));
    }
}
