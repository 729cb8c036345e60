//! The replay check's tests: exact runs on hand-made cases, the rare counts, the flag, and a
//! comparison with a brute-force longest common substring on random word sequences.

use super::*;

fn doc(index: usize, text: &str, keyphrases: &[&str]) -> SyntheticDoc {
    SyntheticDoc { index, text: text.into(), keyphrases: keyphrases.iter().map(|k| k.to_string()).collect() }
}

fn params(ngram: usize, rare_docs: u32, flag_run: usize) -> ReplayParams {
    ReplayParams { ngram, rare_docs, flag_run }
}

/// Longest runs of each synthetic text against the private texts, with n = `ngram`.
fn runs(synthetic: &[&str], private: &[&str], ngram: usize) -> Vec<usize> {
    let docs = synthetic.iter().enumerate().map(|(i, t)| doc(i, t, &[])).collect();
    let check = ReplayCheck::run(docs, private.iter().copied(), params(ngram, 1, 32)).unwrap();
    check.docs.iter().map(|d| d.longest_run).collect()
}

#[test]
fn longest_runs_are_exact_on_hand_made_cases() {
    // One run inside both texts.
    assert_eq!(runs(&["a b c d e f g h"], &["x a b c d e f y"], 2), [6]);
    // Repeats and overlaps: the run "a b a b c" starts at the second "a b".
    assert_eq!(runs(&["a b a b a b c"], &["a b a b c"], 2), [5]);
    assert_eq!(runs(&["a a a a a a"], &["a a a"], 2), [3]);
    assert_eq!(runs(&["a a a"], &["a a a a a a"], 2), [3]);
    // Runs around n: exactly n words is found, n - 1 is not, n + 2 is found whole.
    assert_eq!(runs(&["p q r s t u v"], &["q r s t u"], 5), [5]);
    assert_eq!(runs(&["p q r s t u v"], &["q r s t x"], 5), [0]);
    assert_eq!(runs(&["p q r s t u v w"], &["z p q r s t u v y"], 5), [7]);
    // A run is shared with ONE private document: two halves in two documents are two runs.
    assert_eq!(runs(&["a b c d e f"], &["a b c", "d e f"], 2), [3]);
    // A run never crosses from one synthetic document into the next.
    assert_eq!(runs(&["m n x y", "z w m n"], &["x y z w"], 2), [2, 2]);
    // Case, punctuation and Unicode fold as in matching.
    assert_eq!(runs(&["Ωμέγα ΔΕΛΤΑ, Heart-Failure: 心不全!"], &["ωμέγα δελτα heart failure 心不全"], 2), [5]);
    // Empty and short documents, on either side.
    assert_eq!(runs(&["", "a b", "a b c"], &["", "a", "a b c"], 2), [0, 2, 3]);
    assert_eq!(runs(&["a b c"], &[], 2), [0]);
    assert!(runs(&[], &["a b c"], 2).is_empty());
}

#[test]
fn the_span_is_the_documents_own_text() {
    let docs = vec![doc(7, "He said: Alpha, BETA gamma-delta and more.", &[])];
    let check = ReplayCheck::run(docs, ["x alpha beta gamma delta y"], params(2, 1, 3)).unwrap();
    let d = &check.docs[0];
    assert_eq!((d.index, d.words, d.longest_run, d.run_outside_keyphrases), (7, 8, 4, 4));
    assert_eq!(d.longest_span.as_deref(), Some("Alpha, BETA gamma-delta"));
    assert!(d.flagged);
}

#[test]
fn rare_counts_are_per_document_and_capped() {
    let synthetic = vec![doc(0, "one two three four five six seven", &[])];
    let mut index = ReplayIndex::new(synthetic, params(3, 2, 32)).unwrap();
    // "one two three": in five private documents, twice in each (counted once each).
    for k in 0..5 {
        index.add_private(&format!("one two three one two three z{k}"));
    }
    // A text read before, word for word (a note filed twice): read once.
    index.add_private("one two three one two three z0");
    // "three four five": in exactly two.
    index.add_private("three four five");
    index.add_private("xx three four five");
    // "five six seven": in one.
    index.add_private("five six seven");
    assert_eq!(index.docs_with_ngram_at(0, 0), Some(3), "capped at R + 1 = 3");
    assert_eq!(index.docs_with_ngram_at(0, 1), Some(0));
    assert_eq!(index.docs_with_ngram_at(0, 2), Some(2));
    assert_eq!(index.docs_with_ngram_at(0, 4), Some(1));
    assert_eq!(index.docs_with_ngram_at(0, 5), None, "fewer than n words left");
    assert_eq!((index.private_documents(), index.repeated_documents()), (9, 1));
    let d = &index.finish()[0];
    // Rare: in 1 to 2 documents: "three four five" and "five six seven".
    assert_eq!(d.rare_ngrams, 2);
    assert_eq!(d.rare_span.as_deref(), Some("three four five"));
}

/// A small private corpus: every note shares common phrasing, each has one unique span.
fn clinic_notes() -> Vec<String> {
    let conditions = ["heart failure", "chest pain", "asthma", "edema", "cough"];
    (0..20)
        .map(|i| {
            format!(
                "The patient was seen in the clinic today and was examined. History of {} and {}. Unique detail: \
                 she keeps bees{i} at her farm near lake{i} since spring. A plan was agreed with the patient.",
                conditions[i % 5],
                conditions[(i + 1) % 5]
            )
        })
        .collect()
}

#[test]
fn a_replayed_unique_span_is_flagged_common_phrases_and_keyphrases_are_not() {
    let private = clinic_notes();
    let kp = ["heart failure", "chest pain", "asthma"];
    let docs = vec![
        // Common phrasing only (every note has it), plus the keyphrases as a list.
        doc(0, "The patient was seen in the clinic today and was examined for heart failure, chest pain, asthma. A plan was agreed with the patient.", &kp),
        // The same, with eight words only note 7 has.
        doc(1, "The patient was seen in the clinic today. She keeps bees7 at her farm near lake7, we were told.", &kp),
        // A private note's own list of conditions, written as its keyphrases: "history of heart
        // failure and chest pain" is in 4 notes (not rare), and the keyphrases never count.
        doc(2, "Heart failure and chest pain: heart failure chest pain asthma heart failure chest pain.", &kp),
        // Six words only note 3 has: shorter than the default n-gram (8 words).
        doc(3, "She keeps bees3 at her farm, we were told.", &kp),
    ];
    let check = ReplayCheck::run(docs.clone(), private.iter().map(String::as_str), ReplayParams::default()).unwrap();
    let [common, replay, listed, six] = &check.docs[..] else { panic!("four results") };
    assert!(!common.flagged, "{common:?}");
    // "The patient was seen in the clinic today and was examined" (11 words) is every note's.
    assert_eq!((common.longest_run, common.rare_ngrams), (11, 0), "{common:?}");
    assert!(replay.flagged && replay.rare_ngrams == 1, "{replay:?}");
    assert_eq!(replay.rare_span.as_deref(), Some("She keeps bees7 at her farm near lake7"));
    assert!(!listed.flagged, "{listed:?}");
    assert!(!six.flagged && six.longest_run == 0, "{six:?}");
    assert_eq!(check.flagged(), BTreeSet::from([1]));
    // With n = 6, a unique six-word span is enough; the common phrasing is still not.
    let check = ReplayCheck::run(docs, private.iter().map(String::as_str), params(6, 1, 12)).unwrap();
    assert_eq!(check.flagged(), BTreeSet::from([1, 3]));
    assert_eq!(check.docs[3].rare_span.as_deref(), Some("She keeps bees3 at her farm"));
    // Keyphrases joined by "and", as one private note writes them: 14 shared words, 5 of them
    // outside the keyphrases, and no 8-gram with more than 4 words of its own.
    let kp = ["heart failure", "chest pain", "asthma", "edema", "cough"];
    let text = "x heart failure and chest pain and asthma and edema and cough and heart failure y";
    let note = "heart failure and chest pain and asthma and edema and cough and heart failure";
    let listed = ReplayCheck::run(vec![doc(0, text, &kp)], [note], ReplayParams::default()).unwrap();
    let d = &listed.docs[0];
    assert_eq!((d.longest_run, d.run_outside_keyphrases, d.rare_ngrams, d.flagged), (14, 5, 0, false), "{d:?}");
    // Without its keyphrases, the same document repeats a sentence only that note has.
    let bare = ReplayCheck::run(vec![doc(0, text, &[])], [note], ReplayParams::default()).unwrap();
    let d = &bare.docs[0];
    assert_eq!((d.run_outside_keyphrases, d.rare_ngrams, d.flagged), (14, 7, true), "{d:?}");
}

#[test]
fn the_summary_states_counts_and_thresholds_and_no_text() {
    let private = clinic_notes();
    let docs = vec![doc(0, "She keeps bees3 at her farm near lake3.", &[]), doc(1, "Nothing in common.", &[])];
    let check = ReplayCheck::run(docs, private.iter().map(String::as_str), ReplayParams::default()).unwrap();
    let s = check.summary(true);
    assert_eq!((s.checked, s.flagged, s.dropped), (2, 1, 1));
    assert!(s.statement.contains("NOT differentially private") && s.statement.contains("left out"), "{}", s.statement);
    let json = serde_json::to_string(&s).unwrap();
    assert!(!json.contains("bees3") && !json.contains("lake3"), "{json}");
    assert_eq!(check.summary(false).dropped, 0);
    assert!(check.summary(false).statement.contains("kept them"));
    // What it reveals beyond the counts, and that tuned thresholds are data-dependent.
    assert!(s.statement.contains("send it to the model again") && s.statement.contains("depend on the private documents"), "{}", s.statement);
    assert_eq!(check.summary(true).with_unchecked(0), s);
    assert!(check.summary(true).with_unchecked(3).statement.ends_with("3 more documents of this synthetic corpus were generated after the check and were NOT compared with the private corpus."));
}

#[test]
fn bad_parameters_are_refused_in_plain_words() {
    let e = ReplayIndex::new(Vec::new(), params(1, 1, 12)).err().unwrap();
    assert!(e.to_string().contains("2 to 32 words"), "{e}");
    let e = ReplayIndex::new(Vec::new(), params(6, 0, 12)).err().unwrap();
    assert!(e.to_string().contains("R must be 1 to 1000"), "{e}");
    let e = ReplayIndex::new(Vec::new(), params(6, 1, 5)).err().unwrap();
    assert!(e.to_string().contains("cannot be shorter"), "{e}");
    assert!(ReplayParams::default().check().is_ok());
}

/// xorshift64*: reproducible random word sequences.
struct Rand(u64);

impl Rand {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) % bound
    }

    fn words(&mut self, max_len: u64, alphabet: u64) -> Vec<String> {
        (0..self.next(max_len + 1)).map(|_| format!("w{}", self.next(alphabet))).collect()
    }
}

/// The longest common run of `a` and `b` starting at `a[i]` and `b[j]`.
fn extend(a: &[String], b: &[String], i: usize, j: usize) -> usize {
    (0..).take_while(|&l| i + l < a.len() && j + l < b.len() && a[i + l] == b[j + l]).count()
}

#[test]
fn matches_a_brute_force_on_random_word_sequences() {
    let mut rng = Rand(0x9e37_79b9_7f4a_7c15);
    for case in 0..400 {
        let n = 2 + rng.next(2) as usize;
        let rare = 1 + rng.next(2) as u32;
        let alphabet = 2 + rng.next(3);
        let synthetic: Vec<Vec<String>> = (0..1 + rng.next(4)).map(|_| rng.words(14, alphabet)).collect();
        let mut private: Vec<Vec<String>> = (0..rng.next(6)).map(|_| rng.words(14, alphabet)).collect();
        // Keyphrases: random one- or two-word phrases of the alphabet.
        let keyphrases: Vec<Vec<String>> = synthetic.iter().map(|_| (0..rng.next(3)).map(|_| rng.words(2, alphabet).join(" ")).filter(|k| !k.is_empty()).collect()).collect();
        let docs = synthetic.iter().zip(&keyphrases).enumerate().map(|(i, (s, k))| SyntheticDoc { index: i, text: s.join(" "), keyphrases: k.clone() }).collect();
        let private_text: Vec<String> = private.iter().map(|p| p.join(" ")).collect();
        let check = ReplayCheck::run(docs, private_text.iter().map(String::as_str), params(n, rare, n)).unwrap();
        // A text given twice is one document.
        private.sort();
        private.dedup();
        for (d, s) in synthetic.iter().enumerate() {
            // Words inside an occurrence of one of the document's keyphrases.
            let mut inside = vec![false; s.len()];
            for k in &keyphrases[d] {
                let k: Vec<&str> = k.split(' ').collect();
                for i in 0..(s.len() + 1).saturating_sub(k.len()) {
                    if s[i..i + k.len()].iter().zip(&k).all(|(a, b)| a == b) {
                        inside[i..i + k.len()].iter_mut().for_each(|x| *x = true);
                    }
                }
            }
            let (mut longest, mut outside) = (0, 0);
            for p in &private {
                for i in 0..s.len() {
                    for j in 0..p.len() {
                        let l = extend(s, p, i, j);
                        if l >= n {
                            longest = longest.max(l);
                            outside = outside.max(inside[i..i + l].iter().filter(|x| !**x).count());
                        }
                    }
                }
            }
            let mut rare_grams: Vec<&[String]> = (0..(s.len() + 1).saturating_sub(n))
                .filter(|&i| 2 * inside[i..i + n].iter().filter(|x| !**x).count() > n)
                .map(|i| &s[i..i + n])
                .filter(|g| (1..=rare as usize).contains(&private.iter().filter(|p| p.windows(n).any(|w| w == *g)).count()))
                .collect();
            rare_grams.sort();
            rare_grams.dedup();
            let got = &check.docs[d];
            let want = (longest, outside, rare_grams.len());
            assert_eq!((got.longest_run, got.run_outside_keyphrases, got.rare_ngrams), want, "case {case}, document {d}: {s:?} vs {private:?}, n = {n}, R = {rare}, keyphrases {:?}", keyphrases[d]);
            assert_eq!(got.flagged, outside >= n || !rare_grams.is_empty());
        }
    }
}

/// The case `crates/core/tests/web.rs` runs in the browser, with the figures it must give there too.
#[test]
fn the_browser_case_natively() {
    let notes = [
        "The patient was seen today. Unique: she keeps bees at her farm near the lake since spring.",
        "The patient was seen today for chest pain; a plan was agreed.",
    ];
    let docs = vec![doc(0, "Ωμέγα: She keeps BEES at her farm near the lake, it said.", &[]), doc(1, "The patient was seen today for chest pain.", &["chest pain"])];
    let check = ReplayCheck::run(docs, notes, ReplayParams::default()).unwrap();
    let got: Vec<_> = check.docs.iter().map(|d| (d.longest_run, d.run_outside_keyphrases, d.rare_ngrams, d.flagged)).collect();
    // Two notes only: "the patient was seen today for chest pain" is in one of them, so it
    // is rare here.
    assert_eq!(got, [(9, 9, 2, true), (8, 6, 1, true)]);
    assert_eq!(check.docs[0].longest_span.as_deref(), Some("She keeps BEES at her farm near the lake"));
}
