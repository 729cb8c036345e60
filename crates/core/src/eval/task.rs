//! How an evaluation picks its task's documents ([`shape_task`]) and the noiseless arms'
//! exact vocabulary ([`exact_top_n`]): parts of [`super::evaluation::Evaluation::prepare`].

use std::collections::{BTreeMap, HashMap};

use super::evaluation::Doc;
use super::params::{Task, REST};
use super::{split, EvalError};
use crate::dp::vocabulary::round_robin;
use crate::input::matched::MatchedCorpus;
use crate::input::public_vocab::TermId;

/// The exact top-N terms by document frequency among the first S kept terms of the training
/// documents (ties: lower id), terms with a zero count left out; with `per_class` (the number
/// of classes), the round robin over the classes' own exact rankings, as the DP rule does.
/// NOT private: only for the noiseless comparison arms.
pub(super) fn exact_top_n(docs: &[Doc], train: &[usize], s: usize, n: usize, per_class: Option<usize>) -> Vec<TermId> {
    let groups = per_class.unwrap_or(1);
    let mut counts: Vec<HashMap<TermId, u64>> = vec![HashMap::new(); groups];
    for &i in train {
        let g = if per_class.is_some() { docs[i].class } else { 0 };
        // Matched terms are already distinct per document.
        docs[i].terms.iter().take(s).for_each(|&t| *counts[g].entry(t).or_insert(0) += 1);
    }
    let ranked: Vec<Vec<TermId>> = counts
        .into_iter()
        .map(|c| {
            let mut all: Vec<(TermId, u64)> = c.into_iter().collect();
            all.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            all.into_iter().map(|(t, _)| t).collect()
        })
        .collect();
    round_robin(&ranked, n)
}

/// The task's classes, its documents as (index in the corpus, class), and how many documents
/// were left out: unlabelled, and of other labels or dropped by balancing.
pub(super) type Shaped = (Vec<String>, Vec<(usize, usize)>, usize, usize);

/// Picks the task's documents (see [`Shaped`]).
pub(super) fn shape_task(corpus: &MatchedCorpus, task: &Task, seed: u64) -> Result<Shaped, EvalError> {
    let labelled: Vec<(usize, &str)> =
        corpus.docs.iter().enumerate().filter_map(|(i, d)| d.label.as_deref().map(|l| (i, l))).collect();
    let unlabelled = corpus.docs.len() - labelled.len();
    if labelled.is_empty() {
        return Err(EvalError::NoLabels);
    }
    let mut by_label: BTreeMap<&str, usize> = BTreeMap::new();
    labelled.iter().for_each(|&(_, l)| *by_label.entry(l).or_insert(0) += 1);
    let available = || {
        let mut s: Vec<String> = by_label.keys().take(50).map(|l| format!("{l:?}")).collect();
        if by_label.len() > 50 {
            s.push(format!("… ({} in all)", by_label.len()));
        }
        s.join(", ")
    };
    let (classes, chosen): (Vec<String>, Vec<(usize, usize)>) = match task {
        Task::AllClasses => {
            let classes: Vec<String> = by_label.keys().map(|l| l.to_string()).collect();
            let index: HashMap<&str, usize> = by_label.keys().enumerate().map(|(c, &l)| (l, c)).collect();
            (classes, labelled.iter().map(|&(i, l)| (i, index[l])).collect())
        }
        Task::TopClasses { .. } | Task::MinClassDocs { .. } => {
            let mut ranked: Vec<(&str, usize)> = by_label.iter().map(|(&l, &n)| (l, n)).collect();
            ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let k = match task {
                Task::TopClasses { k, .. } => *k,
                Task::MinClassDocs { min } => ranked.iter().filter(|r| r.1 >= *min).count(),
                _ => unreachable!("matched above"),
            };
            if k > ranked.len() || k < 2 {
                return Err(EvalError::TooFewClasses { classes: k.min(ranked.len()), available: available() });
            }
            ranked.truncate(k);
            let index: HashMap<&str, usize> = ranked.iter().enumerate().map(|(c, &(l, _))| (l, c)).collect();
            let mut chosen: Vec<(usize, usize)> = labelled.iter().filter_map(|&(i, l)| index.get(l).map(|&c| (i, c))).collect();
            if let Task::TopClasses { balance: true, .. } = task {
                // Every class subsampled to the smallest's size (seeded, per class).
                let smallest = ranked.iter().map(|r| r.1).min().unwrap_or(0);
                let mut kept = Vec::new();
                for c in 0..k {
                    let of: Vec<(usize, usize)> = chosen.iter().copied().filter(|x| x.1 == c).collect();
                    kept.extend(split::subsample(of.len(), smallest, seed.wrapping_add(c as u64)).into_iter().map(|j| of[j]));
                }
                kept.sort_unstable();
                chosen = kept;
            }
            (ranked.iter().map(|(l, _)| l.to_string()).collect(), chosen)
        }
        Task::OneVsRest { positive, balance } => {
            let Some(&name) = by_label.keys().find(|l| l.trim() == positive.trim()) else {
                return Err(EvalError::UnknownLabel { label: positive.clone(), available: available() });
            };
            let pos: Vec<usize> = labelled.iter().filter(|&&(_, l)| l == name).map(|&(i, _)| i).collect();
            let mut rest: Vec<usize> = labelled.iter().filter(|&&(_, l)| l != name).map(|&(i, _)| i).collect();
            if *balance && rest.len() > pos.len() {
                rest = split::subsample(rest.len(), pos.len(), seed).into_iter().map(|j| rest[j]).collect();
            }
            let mut chosen: Vec<(usize, usize)> = pos.iter().map(|&i| (i, 0)).chain(rest.iter().map(|&i| (i, 1))).collect();
            chosen.sort_unstable();
            (vec![name.to_string(), REST.to_string()], chosen)
        }
    };
    if classes.len() < 2 {
        return Err(EvalError::TooFewClasses { classes: classes.len(), available: available() });
    }
    let other = labelled.len() - chosen.len();
    Ok((classes, chosen, unlabelled, other))
}
