//! The index of the synthetic corpus and the one pass over the private documents (see the
//! module docs of [`super`] for what is measured and why).
//!
//! Layout: every synthetic document's word ids in one array, each followed by
//! [`SEPARATOR`]; one entry per DISTINCT word n-gram (where it first occurs, how many private
//! documents have it, its positions); a hash table from n-gram hash to the first entry of a
//! chain of entries with that hash (ids are compared, so collisions never match).
//!
//! A private document is read once: every n-gram of it that the table has is counted for the
//! rare test (once per private document), and at each synthetic position where it occurs the
//! match is extended to the right, word by word, to its full length. Only matches that cannot
//! be extended to the LEFT are extended: a match that can is a suffix of one that starts
//! earlier, which is also an n-gram hit and is extended itself, so each maximal common run of
//! a (private document, synthetic document) pair is walked once per alignment.

use std::collections::{HashMap, HashSet};
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use super::tokens::{for_each_word, ngram_hash, FxBuild, Words, SEPARATOR, UNKNOWN};
use super::{DocReplay, ReplayError, ReplayParams, SyntheticDoc};

const NONE: u32 = u32::MAX;

/// One distinct n-gram of the synthetic corpus.
#[derive(Clone, Copy)]
struct Entry {
    /// Its first position in [`ReplayIndex::ids`].
    first: u32,
    /// The next entry with the same hash, or [`NONE`].
    next: u32,
    /// Private documents that contain it, counted up to the cap (R + 1).
    docs: u32,
    /// The last private document counted (each counts once).
    last: u32,
    /// Its positions: `postings[from..from + len]`.
    from: u32,
    len: u32,
}

/// The longest shared run found so far for one synthetic document.
#[derive(Clone, Copy, Default)]
struct Best {
    /// Words of the run, and where it starts in `ids`.
    len: u32,
    start: u32,
}

/// The synthetic corpus, indexed; private documents are streamed through it with
/// [`ReplayIndex::add_private`], then [`ReplayIndex::finish`] gives one result per document.
pub struct ReplayIndex {
    params: ReplayParams,
    docs: Vec<SyntheticDoc>,
    words: Words,
    /// Word ids of every document, each followed by [`SEPARATOR`].
    ids: Vec<u32>,
    /// Byte range of each word in its document's text (zero for separators).
    spans: Vec<(u32, u32)>,
    /// The document of each position ([`NONE`] for separators).
    doc_of: Vec<u32>,
    /// `covered[i]`: positions before `i` that lie inside an occurrence of one of their
    /// document's keyphrases (a prefix sum).
    covered: Vec<u32>,
    /// Where each document's words start in `ids`, and how many.
    ranges: Vec<(u32, u32)>,
    /// The entry of the n-gram starting at each position ([`NONE`] where fewer than n words
    /// of the document follow).
    entry_at: Vec<u32>,
    entries: Vec<Entry>,
    postings: Vec<u32>,
    table: HashMap<u64, u32, FxBuild>,
    /// Per document: the longest run, and the run with the most words outside its keyphrases.
    longest: Vec<Best>,
    outside: Vec<(u32, Best)>,
    private_docs: u32,
    private_words: u64,
    /// A hash of every private text read: a text repeated word for word (a note filed twice)
    /// is read once, so that a phrase only it has still counts as in ONE document.
    texts_seen: HashSet<u64, FxBuild>,
    text_hasher: RandomState,
    /// Private documents skipped as repeats.
    repeats: u32,
    /// Reused per private document.
    buf: String,
    scratch: Vec<u32>,
}

impl ReplayIndex {
    /// Indexes `docs` (the synthetic corpus: a few thousand texts at most). Fails only on
    /// parameters out of range or a corpus too large for 32-bit positions.
    pub fn new(docs: Vec<SyntheticDoc>, params: ReplayParams) -> Result<ReplayIndex, ReplayError> {
        params.check()?;
        let n = params.ngram;
        let mut words = Words::default();
        let mut ids = Vec::new();
        let mut spans = Vec::new();
        let mut doc_of = Vec::new();
        let mut covered = vec![0u32];
        let mut ranges = Vec::with_capacity(docs.len());
        let mut buf = String::new();
        let mut kp: Vec<u32> = Vec::new();
        for (d, doc) in docs.iter().enumerate() {
            let start = ids.len();
            for_each_word(&doc.text, &mut buf, |s, e, w| {
                ids.push(words.intern(w));
                spans.push((s as u32, e as u32));
            });
            let len = ids.len() - start;
            if ids.len() >= (u32::MAX - 2) as usize || doc.text.len() >= u32::MAX as usize {
                return Err(ReplayError::TooLarge);
            }
            // Which of the document's words lie inside one of its keyphrases (every occurrence).
            let mut inside = vec![false; len];
            for phrase in &doc.keyphrases {
                kp.clear();
                for_each_word(phrase, &mut buf, |_, _, w| kp.push(words.get(w)));
                if kp.is_empty() || kp.len() > len || kp.contains(&UNKNOWN) {
                    continue;
                }
                let body = &ids[start..];
                for i in 0..=len - kp.len() {
                    if body[i..i + kp.len()] == kp[..] {
                        inside[i..i + kp.len()].iter_mut().for_each(|x| *x = true);
                    }
                }
            }
            for &x in &inside {
                covered.push(covered.last().copied().unwrap_or(0) + u32::from(x));
            }
            doc_of.extend(std::iter::repeat_n(d as u32, len));
            ids.push(SEPARATOR);
            spans.push((0, 0));
            doc_of.push(NONE);
            covered.push(covered.last().copied().unwrap_or(0));
            ranges.push((start as u32, len as u32));
        }

        // The distinct n-grams, chained by hash; then their positions, grouped per entry.
        let mut table: HashMap<u64, u32, FxBuild> = HashMap::default();
        let mut entries: Vec<Entry> = Vec::new();
        let mut entry_at = vec![NONE; ids.len()];
        for &(start, len) in &ranges {
            let (start, len) = (start as usize, len as usize);
            for p in start..(start + len + 1).saturating_sub(n) {
                let gram = &ids[p..p + n];
                let head = table.entry(ngram_hash(gram)).or_insert(NONE);
                let mut e = *head;
                let mut last = NONE;
                while e != NONE {
                    let f = entries[e as usize].first as usize;
                    if ids[f..f + n] == *gram {
                        break;
                    }
                    last = e;
                    e = entries[e as usize].next;
                }
                if e == NONE {
                    e = entries.len() as u32;
                    entries.push(Entry { first: p as u32, next: NONE, docs: 0, last: NONE, from: 0, len: 0 });
                    if last == NONE {
                        *head = e;
                    } else {
                        entries[last as usize].next = e;
                    }
                }
                entries[e as usize].len += 1;
                entry_at[p] = e;
            }
        }
        let mut from = 0u32;
        for e in &mut entries {
            e.from = from;
            from += e.len;
            e.len = 0;
        }
        let mut postings = vec![0u32; from as usize];
        for (p, &e) in entry_at.iter().enumerate() {
            if e != NONE {
                let entry = &mut entries[e as usize];
                postings[(entry.from + entry.len) as usize] = p as u32;
                entry.len += 1;
            }
        }
        let count = docs.len();
        Ok(ReplayIndex {
            params,
            docs,
            words,
            ids,
            spans,
            doc_of,
            covered,
            ranges,
            entry_at,
            entries,
            postings,
            table,
            longest: vec![Best::default(); count],
            outside: vec![(0, Best::default()); count],
            private_docs: 0,
            private_words: 0,
            texts_seen: HashSet::default(),
            text_hasher: RandomState::new(),
            repeats: 0,
            buf,
            scratch: Vec::new(),
        })
    }

    /// Private documents read so far, repeats included.
    pub fn private_documents(&self) -> u32 {
        self.private_docs + self.repeats
    }

    /// Private documents skipped because an earlier one had the same text.
    pub fn repeated_documents(&self) -> u32 {
        self.repeats
    }

    /// Reads one private document against the index. Nothing of its text is kept: only the
    /// per-n-gram document counts, per synthetic document the longest run found, and a
    /// 64-bit hash of the text (to read a repeated text once).
    pub fn add_private(&mut self, text: &str) {
        // SipHash (std's), not the tables' fast hash: two different texts that collided here
        // would leave one unread.
        if !self.texts_seen.insert(self.text_hasher.hash_one(text)) {
            self.repeats += 1;
            return;
        }
        let n = self.params.ngram;
        let cap = self.params.rare_docs + 1;
        let mut p = std::mem::take(&mut self.scratch);
        p.clear();
        {
            let words = &self.words;
            for_each_word(text, &mut self.buf, |_, _, w| p.push(words.get(w)));
        }
        self.private_docs = self.private_docs.saturating_add(1);
        self.private_words += p.len() as u64;
        let doc = self.private_docs;
        // The last UNKNOWN word seen: a window holding one cannot match.
        let mut blocked: Option<usize> = None;
        for i in 0..p.len() {
            if p[i] == UNKNOWN {
                blocked = Some(i);
            }
            if i + 1 < n {
                continue;
            }
            let s = i + 1 - n;
            if blocked.is_some_and(|b| b >= s) {
                continue;
            }
            let gram = &p[s..=i];
            let Some(&head) = self.table.get(&ngram_hash(gram)) else { continue };
            let mut e = head;
            while e != NONE {
                let f = self.entries[e as usize].first as usize;
                if self.ids[f..f + n] == *gram {
                    break;
                }
                e = self.entries[e as usize].next;
            }
            if e == NONE {
                continue;
            }
            let entry = &mut self.entries[e as usize];
            if entry.last != doc {
                entry.last = doc;
                entry.docs = (entry.docs + 1).min(cap);
            }
            let (from, len) = (entry.from as usize, entry.len as usize);
            for k in from..from + len {
                let q = self.postings[k] as usize;
                // Not left-maximal: the hit one word earlier covers it. (`ids[q - 1]` exists
                // or q is 0; a separator or an UNKNOWN never equals the other side.)
                if s > 0 && q > 0 && p[s - 1] == self.ids[q - 1] {
                    continue;
                }
                let mut l = n;
                while s + l < p.len() && self.ids[q + l] == p[s + l] {
                    l += 1;
                }
                self.record(q, l);
            }
        }
        self.scratch = p;
    }

    /// A run of `l` words at synthetic position `q`, shared with the current private document.
    fn record(&mut self, q: usize, l: usize) {
        let d = self.doc_of[q] as usize;
        let run = Best { len: l as u32, start: q as u32 };
        if run.len > self.longest[d].len {
            self.longest[d] = run;
        }
        let outside = l as u32 - (self.covered[q + l] - self.covered[q]);
        if outside > self.outside[d].0 {
            self.outside[d] = (outside, run);
        }
    }

    /// The text of `len` words of document `d` from position `start`, as written there.
    fn span(&self, d: usize, start: u32, len: u32) -> Option<String> {
        if len == 0 {
            return None;
        }
        let (a, b) = (self.spans[start as usize].0, self.spans[(start + len - 1) as usize].1);
        self.docs[d].text.get(a as usize..b as usize).map(str::to_string)
    }

    /// The private documents that contain the n-gram at synthetic position `q` (capped at
    /// R + 1), for the tests.
    #[cfg(test)]
    pub(super) fn docs_with_ngram_at(&self, doc: usize, word: usize) -> Option<u32> {
        let q = self.ranges[doc].0 as usize + word;
        let e = *self.entry_at.get(q)?;
        (e != NONE).then(|| self.entries[e as usize].docs)
    }

    /// One result per synthetic document, in the order given.
    pub fn finish(self) -> Vec<DocReplay> {
        let n = self.params.ngram as u32;
        let mut out = Vec::with_capacity(self.docs.len());
        let mut seen: Vec<u32> = Vec::new();
        for (d, doc) in self.docs.iter().enumerate() {
            let (start, len) = self.ranges[d];
            seen.clear();
            let mut first_rare = None;
            for q in start..(start + len + 1).saturating_sub(n) {
                let e = self.entry_at[q as usize];
                let docs = self.entries[e as usize].docs;
                // Most of its words must be the model's own, not the keyphrases it was given.
                let own = n - (self.covered[(q + n) as usize] - self.covered[q as usize]);
                if (1..=self.params.rare_docs).contains(&docs) && 2 * own > n {
                    seen.push(e);
                    first_rare.get_or_insert(q);
                }
            }
            seen.sort_unstable();
            seen.dedup();
            let longest = self.longest[d];
            let (outside, best) = self.outside[d];
            let rare_ngrams = seen.len();
            out.push(DocReplay {
                index: doc.index,
                words: len as usize,
                longest_run: longest.len as usize,
                run_outside_keyphrases: outside as usize,
                rare_ngrams,
                flagged: outside as usize >= self.params.flag_run || rare_ngrams > 0,
                // The run that counts for the flag; where every shared run is keyphrases, the longest.
                longest_span: if outside > 0 { self.span(d, best.start, best.len) } else { self.span(d, longest.start, longest.len) },
                rare_span: first_rare.and_then(|q| self.span(d, q, n)),
            });
        }
        out
    }

    /// Words of the private documents read so far.
    pub fn private_words(&self) -> u64 {
        self.private_words
    }

    /// Bytes the index holds, roughly: what the check costs in memory beyond one private
    /// document (its words' ids) at a time.
    pub fn heap_bytes(&self) -> usize {
        let v32 = |v: &Vec<u32>| v.capacity() * 4;
        self.words.heap_bytes()
            + v32(&self.ids)
            + self.spans.capacity() * 8
            + v32(&self.doc_of)
            + v32(&self.covered)
            + self.ranges.capacity() * 8
            + v32(&self.entry_at)
            + self.entries.capacity() * std::mem::size_of::<Entry>()
            + v32(&self.postings)
            + self.table.capacity() * (std::mem::size_of::<(u64, u32)>() + 1)
            + self.docs.iter().map(|d| d.text.capacity() + d.keyphrases.iter().map(String::capacity).sum::<usize>()).sum::<usize>()
            + v32(&self.scratch)
            + self.texts_seen.capacity() * 9
    }
}
