//! The per-class selection's post-processing ([`super`], "Per class"): Ṽ read from the
//! classes' noisy histograms by round robin.

use crate::dp::rng::SecureRng;
use crate::input::public_vocab::TermId;

use super::noise::NoisyHistogram;

/// Round robin over rankings (best first): each list's next term not yet taken, in turn,
/// until `n` terms or the lists run out.
pub(crate) fn round_robin(ranked: &[Vec<TermId>], n: usize) -> Vec<TermId> {
    let mut taken: Vec<TermId> = Vec::with_capacity(n);
    let mut seen = std::collections::HashSet::with_capacity(n);
    let longest = ranked.iter().map(Vec::len).max().unwrap_or(0);
    for r in 0..longest {
        for list in ranked {
            if taken.len() == n {
                return taken;
            }
            if let Some(&id) = list.get(r) {
                if seen.insert(id) {
                    taken.push(id);
                }
            }
        }
    }
    taken
}

/// Ṽ from the classes' noisy histograms (module docs, "Per class"): round robin over each
/// class's top `n`, each term's count summed over the classes in class order, with the largest
/// of its counts; largest sum first, ties to the lower id.
pub(super) fn summed_round_robin(mut noisy: Vec<NoisyHistogram<'_>>, n: usize, rng: &mut SecureRng) -> Vec<(TermId, i64, i64)> {
    let ranked: Vec<Vec<TermId>> = noisy.iter().map(|h| h.top(n).into_iter().map(|(id, _)| id).collect()).collect();
    let mut terms: Vec<(TermId, i64, i64)> = round_robin(&ranked, n)
        .into_iter()
        .map(|id| {
            let values: Vec<i64> = noisy.iter_mut().map(|h| h.value(id, rng)).collect();
            let sum = values.iter().fold(0i64, |s, &v| s.saturating_add(v));
            (id, sum, values.into_iter().max().unwrap_or(i64::MIN))
        })
        .collect();
    terms.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    terms
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::dp::noise::Ratio;
    use crate::dp::vocabulary::noise::tests::{assert_same_frequencies, full_draw, ks_two_sample, set_of};
    use crate::dp::vocabulary::noise::top_of;

    #[test]
    fn per_class_sums_match_full_draws() {
        // Two classes, each drawn with its own T (a term one class selects is often undrawn in
        // the other, and its value there is drawn late, given Z < T): Ṽ's ids and its summed
        // noisy counts have the distribution of drawing every entry of every class. Ids: set
        // frequencies; counts: two-sample KS of the count at each rank and of their total, at
        // α = 1e-6 (limit 2.69·sqrt(2/trials) = 0.038).
        let mut a = vec![0u64; 10];
        a[0] = 4;
        a[1] = 3;
        let mut b = vec![0u64; 10];
        b[7] = 2;
        b[8] = 1;
        let (n, trials) = (3, 10_000);
        let scale = Ratio::from_f64(1.0).unwrap();
        let limit = 2.69 * (2.0 / trials as f64).sqrt();
        let mut rng = SecureRng::seeded_for_tests(43);
        // (id, summed count, largest count) per selected term, largest sum first.
        let full = |rng: &mut SecureRng| -> Vec<(TermId, i64, i64)> {
            let all: Vec<Vec<(TermId, i64)>> = [&a, &b].iter().map(|c| full_draw(c, scale, rng)).collect();
            let ranked: Vec<Vec<TermId>> = all.iter().map(|v| top_of(v.clone(), n).into_iter().map(|p| p.0).collect()).collect();
            let mut terms: Vec<(TermId, i64, i64)> = round_robin(&ranked, n)
                .into_iter()
                .map(|id| {
                    let values = all.iter().map(|v| v[id as usize].1);
                    (id, values.clone().sum(), values.max().unwrap())
                })
                .collect();
            terms.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
            terms
        };
        for (ta, tb) in [(None, None), (Some(1), Some(1)), (Some(6), Some(6)), (None, Some(1)), (Some(6), Some(1))] {
            let lazy: Vec<Vec<(TermId, i64, i64)>> = (0..trials)
                .map(|_| {
                    let noisy = vec![NoisyHistogram::draw_with(&a, n, scale, ta, &mut rng), NoisyHistogram::draw_with(&b, n, scale, tb, &mut rng)];
                    summed_round_robin(noisy, n, &mut rng)
                })
                .collect();
            let full: Vec<Vec<(TermId, i64, i64)>> = (0..trials).map(|_| full(&mut rng)).collect();
            let what = format!("T {ta:?}, {tb:?}");
            let ids = |runs: &[Vec<(TermId, i64, i64)>]| {
                let mut f: HashMap<Vec<TermId>, usize> = HashMap::new();
                runs.iter().for_each(|r| {
                    let pairs: Vec<(TermId, i64)> = r.iter().map(|p| (p.0, p.1)).collect();
                    *f.entry(set_of(&pairs)).or_default() += 1
                });
                f
            };
            assert_same_frequencies(&ids(&lazy), &ids(&full), &what);
            for rank in 0..=n {
                // rank n: the total of the n counts. The largest per-class count of the term at
                // each rank (what `dp::candidates` reads) too.
                let pick = |runs: &[Vec<(TermId, i64, i64)>]| -> Vec<i64> {
                    runs.iter().map(|r| if rank < n { r[rank].1 } else { r.iter().map(|p| p.1).sum() }).collect()
                };
                let d = ks_two_sample(pick(&lazy), pick(&full));
                assert!(d < limit, "{what}, rank {rank}: two-sample KS distance {d}");
                if rank < n {
                    let best = |runs: &[Vec<(TermId, i64, i64)>]| -> Vec<i64> { runs.iter().map(|r| r[rank].2).collect() };
                    let d = ks_two_sample(best(&lazy), best(&full));
                    assert!(d < limit, "{what}, rank {rank}: largest count, two-sample KS distance {d}");
                }
            }
        }
    }
}
