//! Where the class signal is lost (issue 39): figures an evaluation adds to its report, computed
//! from the exact counts of the training part (NOT DP, like everything in the report).
//!
//! - Ṽ's noise share: the share of Ṽ's terms that no training document contributes among its
//!   S distinct terms (its first S kept, the most used; exact count 0 in the histogram the vocabulary mechanism noised):
//!   only noise selected them.
//! - Class-distinctive terms: a term is distinctive for class c when at least
//!   [`MIN_CLASS_SHARE`] of c's training documents (and at least [`MIN_DOCS`]) hold it among
//!   their kept terms (what the histogram samplers read) and its lift p(t|c)/p(t) over the
//!   training part is at least [`MIN_LIFT`]; the report counts them and how many reached Ṽ
//!   and the exact top-N vocabulary.
//! - Per sampler run, per class: how many distinct sequences (as sets) were drawn out of how
//!   many, how many distinct terms they use, and the share of keyphrase slots that are terms
//!   distinctive for the class.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::input::public_vocab::TermId;

/// A distinctive term is held by at least this share of its class's training documents…
pub const MIN_CLASS_SHARE: f64 = 0.05;
/// …and by at least this many of them…
pub const MIN_DOCS: usize = 3;
/// …and is at least this many times more frequent in the class than in the training part.
pub const MIN_LIFT: f64 = 1.5;

/// What reached Ṽ (means over the seeds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VocabDiagnosis {
    /// Terms of Ṽ.
    pub vocabulary: f64,
    /// Share of Ṽ whose exact first-S count in the training part is 0.
    pub noise_share: f64,
    /// Distinct terms distinctive for some class.
    pub distinctive: f64,
    /// Of them, in Ṽ.
    pub distinctive_in_vocab: f64,
    /// Of them, in the exact top-N vocabulary (the noiseless arms'; 0 without them).
    pub distinctive_in_exact: f64,
}

impl VocabDiagnosis {
    /// The mean of per-round figures.
    pub(super) fn mean(rounds: &[VocabDiagnosis]) -> VocabDiagnosis {
        let n = rounds.len().max(1) as f64;
        let sum = |f: fn(&VocabDiagnosis) -> f64| rounds.iter().map(f).sum::<f64>() / n;
        VocabDiagnosis {
            vocabulary: sum(|d| d.vocabulary),
            noise_share: sum(|d| d.noise_share),
            distinctive: sum(|d| d.distinctive),
            distinctive_in_vocab: sum(|d| d.distinctive_in_vocab),
            distinctive_in_exact: sum(|d| d.distinctive_in_exact),
        }
    }
}

/// Every class's distinctive terms in one round's training part (module docs).
#[derive(Debug, Clone, Default)]
pub(super) struct Distinctive {
    pub(super) by_class: Vec<HashSet<TermId>>,
}

impl Distinctive {
    /// From the training documents as (class, kept terms).
    pub(super) fn of<'a>(docs: impl Iterator<Item = (usize, &'a [TermId])>, classes: usize) -> Distinctive {
        let mut df: Vec<HashMap<TermId, usize>> = vec![HashMap::new(); classes];
        let mut all: HashMap<TermId, usize> = HashMap::new();
        let mut sizes = vec![0usize; classes];
        for (c, terms) in docs {
            sizes[c] += 1;
            let mut seen: Vec<TermId> = terms.to_vec();
            seen.sort_unstable();
            seen.dedup();
            for t in seen {
                *df[c].entry(t).or_default() += 1;
                *all.entry(t).or_default() += 1;
            }
        }
        let n: usize = sizes.iter().sum();
        let by_class = df
            .iter()
            .zip(&sizes)
            .map(|(class_df, &nc)| {
                class_df
                    .iter()
                    .filter(|&(t, &k)| {
                        let (pc, p) = (k as f64 / nc.max(1) as f64, all[t] as f64 / n.max(1) as f64);
                        k >= MIN_DOCS && pc >= MIN_CLASS_SHARE && pc >= MIN_LIFT * p
                    })
                    .map(|(&t, _)| t)
                    .collect()
            })
            .collect();
        Distinctive { by_class }
    }

    /// The round's [`VocabDiagnosis`]: `first_s_counts` the exact first-S histogram of the
    /// training part (term → documents).
    pub(super) fn vocab(&self, dp_vocab: &[TermId], exact_vocab: &[TermId], first_s_counts: &HashMap<TermId, usize>) -> VocabDiagnosis {
        let any: HashSet<TermId> = self.by_class.iter().flatten().copied().collect();
        let dp: HashSet<TermId> = dp_vocab.iter().copied().collect();
        let exact: HashSet<TermId> = exact_vocab.iter().copied().collect();
        let noise = dp_vocab.iter().filter(|t| !first_s_counts.contains_key(t)).count();
        VocabDiagnosis {
            vocabulary: dp_vocab.len() as f64,
            noise_share: noise as f64 / dp_vocab.len().max(1) as f64,
            distinctive: any.len() as f64,
            distinctive_in_vocab: any.intersection(&dp).count() as f64,
            distinctive_in_exact: any.intersection(&exact).count() as f64,
        }
    }

    /// One sampler run's [`SequenceDiagnosis`] from its sequences as (class, keyphrases).
    pub(super) fn sequences<'a>(&self, seqs: impl Iterator<Item = (usize, &'a [TermId])>) -> SequenceDiagnosis {
        let classes = self.by_class.len();
        let mut sets: Vec<HashSet<Vec<TermId>>> = vec![HashSet::new(); classes];
        let mut terms: Vec<HashSet<TermId>> = vec![HashSet::new(); classes];
        let (mut count, mut slots, mut distinctive) = (vec![0usize; classes], vec![0usize; classes], vec![0usize; classes]);
        for (c, keys) in seqs {
            let mut set = keys.to_vec();
            set.sort_unstable();
            sets[c].insert(set);
            terms[c].extend(keys.iter().copied());
            count[c] += 1;
            slots[c] += keys.len();
            distinctive[c] += keys.iter().filter(|t| self.by_class[c].contains(t)).count();
        }
        let per_class: Vec<ClassSequences> = (0..classes)
            .map(|c| ClassSequences {
                sequences: count[c],
                distinct_sets: sets[c].len(),
                distinct_terms: terms[c].len(),
                distinctive_share: distinctive[c] as f64 / slots[c].max(1) as f64,
            })
            .collect();
        SequenceDiagnosis { per_class }
    }
}

/// One class's sequences in one sampler run (module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassSequences {
    pub sequences: usize,
    /// Distinct sequences as sets of keyphrases.
    pub distinct_sets: usize,
    pub distinct_terms: usize,
    /// Share of the keyphrase slots holding a term distinctive for the class.
    pub distinctive_share: f64,
}

/// One sampler run's sequences, per class in the task's order (module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SequenceDiagnosis {
    pub per_class: Vec<ClassSequences>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinctive_terms_and_sequence_figures() {
        // Class 0: 10 documents holding 1 and 9; class 1: 10 holding 2 and 9. Term 9 is in
        // every document (lift 1), terms 1 and 2 are their classes' own (lift 2).
        let docs: Vec<(usize, Vec<TermId>)> = (0..20).map(|i| (i % 2, vec![9, 1 + (i % 2) as TermId])).collect();
        let d = Distinctive::of(docs.iter().map(|(c, t)| (*c, t.as_slice())), 2);
        assert_eq!(d.by_class[0], HashSet::from([1]));
        assert_eq!(d.by_class[1], HashSet::from([2]));
        let counts = HashMap::from([(9, 20), (1, 10)]);
        let v = d.vocab(&[9, 1, 500, 501], &[9, 1, 2], &counts);
        assert_eq!((v.noise_share, v.distinctive, v.distinctive_in_vocab, v.distinctive_in_exact), (0.5, 2.0, 1.0, 2.0));
        let seqs: Vec<(usize, Vec<TermId>)> = vec![(0, vec![1, 9]), (0, vec![9, 1]), (0, vec![9]), (1, vec![9])];
        let s = d.sequences(seqs.iter().map(|(c, t)| (*c, t.as_slice())));
        assert_eq!((s.per_class[0].sequences, s.per_class[0].distinct_sets, s.per_class[0].distinct_terms), (3, 2, 2));
        assert!((s.per_class[0].distinctive_share - 0.4).abs() < 1e-12);
        assert_eq!(s.per_class[1].distinctive_share, 0.0);
    }
}
