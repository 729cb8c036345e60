//! Matching on several threads (native only; the page's worker reads on one thread).
//!
//! The reading thread does what must follow the file's order: parsing, the corpus keys and
//! per-document hashes (`corpus::Ingest`), labels and person numbers. It hands the texts on in
//! batches of about [`Threads::batch_bytes`] to `threads` matching threads, and the terms come
//! back tagged with their batch's first document, so each document gets its own terms whatever
//! order the batches finish in: the matched corpus is the same as matching in line (a test
//! says so). Memory stays bounded: at most two batches a thread wait in the queue.

use std::io::Read;
use std::sync::mpsc::{channel, sync_channel};
use std::sync::{Arc, Mutex};

use super::{person_number, MatchedDoc, MatchingSink};
use crate::input::corpus::{self, CorpusError, Fields, Format};
use crate::input::public_vocab::{MatchScratch, TermId};

/// How matching is spread over threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threads {
    /// Matching threads beside the reading one.
    pub threads: usize,
    /// Text bytes handed over at a time.
    pub batch_bytes: usize,
}

impl Threads {
    /// One matching thread per core the system offers (the reader mostly waits on them).
    pub fn available() -> Threads {
        Threads { threads: std::thread::available_parallelism().map_or(1, |n| n.get()), batch_bytes: 1 << 20 }
    }
}

impl MatchingSink<'_> {
    /// [`MatchingSink::read`] with the matching on `how.threads` threads; the same result.
    pub fn read_threaded<R: Read>(
        &mut self,
        reader: R,
        file: &str,
        format: Format,
        fields: &Fields,
        txt_label: Option<&str>,
        how: Threads,
    ) -> Result<(), CorpusError> {
        let Some(matcher) = self.matcher.filter(|_| how.threads > 0) else {
            return self.read(reader, file, format, fields, txt_label);
        };
        self.check_person_column(file, fields)?;
        let MatchingSink { keep, ingest, docs, docs_without_terms, persons, .. } = self;
        let keep = *keep;
        let (jobs, queue) = sync_channel::<(usize, Vec<String>)>(2 * how.threads);
        // Shared by the matching threads alone: when they have all ended (a panic included), the
        // queue is gone and a send fails instead of waiting for ever.
        let queue = Arc::new(Mutex::new(queue));
        let (done, results) = channel::<(usize, Vec<Vec<TermId>>)>();
        std::thread::scope(|s| {
            for _ in 0..how.threads {
                let (queue, done) = (Arc::clone(&queue), done.clone());
                s.spawn(move || {
                    let mut scratch = MatchScratch::default();
                    loop {
                        // The lock is held while waiting for the next batch, not while matching.
                        let next = match queue.lock() {
                            Ok(q) => q.recv(),
                            Err(_) => break,
                        };
                        let Ok((first, texts)) = next else { break };
                        let terms = texts.iter().map(|t| matcher.most_used(t, keep, &mut scratch)).collect();
                        if done.send((first, terms)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop((done, queue));
            let fill = |docs: &mut Vec<MatchedDoc>, without: &mut u64, (first, terms): (usize, Vec<Vec<TermId>>)| {
                for (d, t) in docs[first..].iter_mut().zip(terms) {
                    *without += u64::from(t.is_empty());
                    d.terms = t;
                }
            };
            let (mut batch, mut bytes, mut first) = (Vec::new(), 0usize, docs.len());
            let mut stopped = false;
            let read = corpus::stream(reader, file, format, fields, txt_label, ingest, &mut |doc| {
                let person = doc.person.map(|p| person_number(persons, p));
                docs.push(MatchedDoc { label: doc.label.map(str::to_string), person, terms: Vec::new() });
                // Once no thread takes batches, the file is read to its end (the error comes
                // then) without keeping its texts.
                if !stopped {
                    bytes += doc.text.len();
                    batch.push(doc.text.to_string());
                }
                if bytes >= how.batch_bytes && !stopped {
                    stopped = jobs.send((first, std::mem::take(&mut batch))).is_err();
                    (bytes, first) = (0, docs.len());
                }
                while let Ok(r) = results.try_recv() {
                    fill(docs, docs_without_terms, r);
                }
            });
            if !batch.is_empty() && !stopped {
                stopped = jobs.send((first, batch)).is_err();
            }
            drop(jobs);
            for r in results.iter() {
                fill(docs, docs_without_terms, r);
            }
            // A matching thread that panicked makes the scope panic; one that stopped early
            // (it cannot without a panic) would leave documents unmatched: said, not hidden.
            if stopped {
                return Err(CorpusError::Io { file: file.to_string(), source: std::io::Error::other("a matching thread stopped") });
            }
            read
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::public_vocab::{Matcher, PublicVocabulary};

    #[test]
    fn threaded_matching_gives_the_same_matched_corpus_as_in_line() {
        let v = PublicVocabulary::parse("t", b"heart failure\nchest pain\nasthma\ncough\nfever\nrash\nnausea\n").unwrap();
        let m = Matcher::new(&v).unwrap();
        let words = ["heart failure", "chest pain", "asthma", "cough", "fever", "rash", "nausea", "and", "no", "pain"];
        let mut csv = String::from("text,label,person\n");
        for k in 0..3000usize {
            // Texts of varied length and terms; some without any term; persons repeat.
            let n = (k * 7) % 13;
            let text: Vec<&str> = (0..n).map(|j| words[(k * 31 + j * 17) % words.len()]).collect();
            csv.push_str(&format!("\"{} note {k}\",c{},p{}\n", text.join(" "), k % 3, k % 101));
        }
        let fields = Fields { text: Some("text".into()), label: Some("label".into()), person: Some("person".into()) };
        let read = |how: Option<Threads>| {
            let mut sink = MatchingSink::new(Some(&m), 4, true);
            for part in 0..2 {
                match how {
                    Some(h) => sink.read_threaded(csv.as_bytes(), &format!("f{part}"), Format::Csv, &fields, None, h).unwrap(),
                    None => sink.read(csv.as_bytes(), &format!("f{part}"), Format::Csv, &fields, None).unwrap(),
                }
            }
            sink.finish("in").unwrap()
        };
        let one = read(None);
        assert!(one.docs_without_terms > 0 && one.docs.iter().any(|d| d.terms.len() == 4));
        for how in [Threads { threads: 3, batch_bytes: 100 }, Threads { threads: 1, batch_bytes: 1 }, Threads { threads: 2, batch_bytes: 1 << 20 }] {
            let many = read(Some(how));
            assert_eq!(many.docs, one.docs, "{how:?}");
            assert_eq!((many.docs_without_terms, &many.stats, &many.fingerprint), (one.docs_without_terms, &one.stats, &one.fingerprint), "{how:?}");
            assert_eq!((many.keys.legacy, many.keys.doc_hashes), (one.keys.legacy.clone(), one.keys.doc_hashes.clone()), "{how:?}");
            assert_eq!(many.persons, one.persons);
        }
        // An error in the file is the same error, threads or not.
        let broken = "text,label,person\n\"a,c1,p1\n";
        let mut a = MatchingSink::new(Some(&m), 4, true);
        let mut b = MatchingSink::new(Some(&m), 4, true);
        let e1 = a.read(broken.as_bytes(), "b", Format::Csv, &fields, None).unwrap_err().to_string();
        let e2 = b.read_threaded(broken.as_bytes(), "b", Format::Csv, &fields, None, Threads { threads: 2, batch_bytes: 1 }).unwrap_err().to_string();
        assert_eq!(e1, e2);
    }
}
