//! Tests of the vote against its privacy map: the pieces (nearest candidate, unit vectors,
//! coins, the amplified ε, what is kept), and empirical privacy checks (`crate::dp::testing`)
//! over neighbouring corpora: one document added; one person with many notes in several classes
//! added (through `crate::input::units::members`, as the run forms the units); the subsampled
//! vote against its amplified ε. Each with an under-noised variant that must be caught.

use super::*;
use crate::dp::testing::{frequencies, max_log_ratio};
use crate::input::classes::{ClassSet, OtherLabels};
use crate::input::matched::{MatchedCorpus, MatchedDoc};

fn e(dim: usize, k: usize) -> Vec<f32> {
    let mut v = vec![0f32; dim];
    v[k] = 1.0;
    v
}

#[test]
fn each_unit_votes_for_its_nearest_candidate_by_cosine_ties_to_the_first() {
    // Candidates: e0, e1, and e0 again (a tie with the first), not unit length on entry.
    let c = Candidates::new(3, &[vec![vec![2.0, 0.0, 0.0], vec![0.0, 5.0, 0.0], vec![3.0, 0.0, 0.0]]]).unwrap();
    assert_eq!(c.count(0), 3);
    assert_eq!(nearest(c.of_class(0), 3, &unit_length(&[0.9, 0.1, 0.0]).unwrap()), Some(0));
    assert_eq!(nearest(c.of_class(0), 3, &unit_length(&[0.1, 0.9, 0.3]).unwrap()), Some(1));
    assert_eq!(nearest(&[], 3, &[1.0, 0.0, 0.0]), None);
    assert_eq!(nearest(c.of_class(0), 3, &[1.0, 0.0]), None, "a vector of another dimension votes for nothing");
    // A long vector (more than the lanes, with a remainder) gives the plain dot product's choice.
    let dim = 37;
    let cands: Vec<Vec<f32>> = (0..20).map(|j| (0..dim).map(|i| ((i * 7 + j * 13) % 11) as f32 - 5.0).collect()).collect();
    let c = Candidates::new(dim, &[cands.clone()]).unwrap();
    let u = unit_length(&(0..dim).map(|i| (i % 5) as f32 - 2.0).collect::<Vec<_>>()).unwrap();
    let plain = (0..20)
        .map(|j| c.of_class(0)[j * dim..(j + 1) * dim].iter().zip(&u).map(|(a, b)| f64::from(*a) * f64::from(*b)).sum::<f64>())
        .enumerate()
        .fold((0, f64::MIN), |b, (j, s)| if s > b.1 { (j, s) } else { b })
        .0;
    assert_eq!(nearest(c.of_class(0), dim, &u), Some(plain));
    // Refused: a zero candidate, a wrong dimension.
    assert_eq!(Candidates::new(2, &[vec![vec![0.0, 0.0]]]).unwrap_err(), VoteError::Degenerate { class: 0, index: 0 });
    assert!(matches!(Candidates::new(2, &[vec![vec![1.0]]]), Err(VoteError::Dimension { .. })));
}

#[test]
fn a_persons_vector_is_the_normalised_mean_of_their_documents() {
    let (a, b) = (e(2, 0), e(2, 1));
    let u = UnitVector::of_documents(1, &[&a, &b, &b]).unwrap();
    assert_eq!(u.class, 1);
    let n = (1.0f64 + 4.0).sqrt();
    assert!((f64::from(u.vector[0]) - 1.0 / n).abs() < 1e-6 && (f64::from(u.vector[1]) - 2.0 / n).abs() < 1e-6);
    let minus: Vec<f32> = a.iter().map(|x| -x).collect();
    assert_eq!(UnitVector::of_documents(0, &[&a, &minus]), None, "vectors that cancel: no vote");
    assert_eq!(UnitVector::of_documents(0, &[]), None);
}

#[test]
fn the_charged_epsilon_is_the_amplified_one_and_the_coins_follow_the_rate() {
    let p = |epsilon, sample_rate| VoteParams { epsilon, sample_rate };
    assert_eq!(p(1.0, 1.0).charged_epsilon(), 1.0);
    let q = p(2.0, 0.3).charged_epsilon();
    let want = (1.0 + 0.3 * (2f64.exp() - 1.0)).ln();
    assert!(q >= want && q - want < 1e-9, "{q} {want}");
    assert!(p(1e-3, 1e-6).charged_epsilon() > 0.0);
    for bad in [p(1.0, 0.0), p(1.0, 1.5), p(0.0, 1.0), p(1.0, f64::NAN)] {
        assert!(bad.check().is_err(), "{bad:?}");
    }
    let mut rng = SecureRng::seeded_for_tests(2);
    let c = coins(20_000, 0.25, &mut rng).unwrap();
    let share = c.iter().filter(|&&x| x).count() as f64 / c.len() as f64;
    assert!((share - 0.25).abs() < 0.015, "{share}");
    assert!(coins(5, 1.0, &mut rng).unwrap().iter().all(|&x| x));
}

#[test]
fn what_is_kept_and_what_the_release_says_follow_the_noisy_votes() {
    let mut rng = SecureRng::seeded_for_tests(3);
    let noisy = vec![5, -2, 9, 0, 9, 1];
    assert_eq!(kept(&noisy, 3, KeepMode::Top, &mut rng), vec![0, 2, 4]);
    assert_eq!(kept(&noisy, 10, KeepMode::Top, &mut rng), vec![0, 1, 2, 3, 4, 5]);
    let o = outcome("a", noisy.clone(), 2, KeepMode::Top, &mut rng);
    assert_eq!((o.kept.clone(), o.drew_none.clone()), (vec![2, 4], vec![1, 3]));
    assert!((o.share_captured.unwrap() - 18.0 / 24.0).abs() < 1e-12);
    assert_eq!(share_captured(&[-1, 0], &[0]), None);
    // Proportional: never a candidate of no positive vote while one with a vote is left;
    // frequencies follow the votes.
    let mut seen = [0usize; 6];
    for _ in 0..6_000 {
        let k = kept(&noisy, 2, KeepMode::Proportional, &mut rng);
        assert_eq!(k.len(), 2);
        assert!(!k.contains(&1) && !k.contains(&3), "{k:?}");
        k.iter().for_each(|&j| seen[j] += 1);
    }
    assert!(seen[2] > seen[0] && seen[0] > seen[5], "{seen:?}");
    // No positive vote: uniform, k distinct.
    let k = kept(&[0, -3, -1], 3, KeepMode::Proportional, &mut rng);
    assert_eq!(k, vec![0, 1, 2]);
}

#[test]
fn the_spends_are_one_per_class_at_the_charged_epsilon_on_its_partition() {
    let params = VoteParams { epsilon: 2.0, sample_rate: 0.5 };
    let link = serde_json::json!({"sha256": "x"});
    let s = spends(&params, &["a", "b"], &[4, 0], &link);
    assert_eq!(s.len(), 2);
    assert!(s.iter().all(|s| s.is(SpendStage::Vote) && s.epsilon == params.charged_epsilon()));
    assert_eq!(s[1].scope, Scope::Partition { label: "b".into() });
    let mut run = crate::ledger::Run::new("r".into(), "t".into());
    run.spends = s;
    assert!((run.epsilon() - params.charged_epsilon()).abs() < 1e-15, "classes in parallel: the run costs ε′ once");
}

/// Outcomes per corpus: enough for the 4-sd slack to catch a loss of 2ε (as `dp::counts`).
const TRIALS: usize = 40_000;

/// A noisy count, bucketed by 2 and clamped (post-processing, where the shift shows).
fn bucket(v: i64) -> i64 {
    (v.clamp(-6, 6) as f64 / 2.0).floor() as i64
}

/// One document added: D has two documents (one voting for each candidate), D′ one more for
/// candidate 0. The two candidates' noisy counts together are the outcome.
#[test]
fn empirical_privacy_loss_of_one_document_stays_within_epsilon() {
    let cands = Candidates::new(2, &[vec![e(2, 0), e(2, 1)]]).unwrap();
    let d = vec![UnitVector { class: 0, vector: e(2, 0) }, UnitVector { class: 0, vector: e(2, 1) }];
    let mut d1 = d.clone();
    d1.push(UnitVector { class: 0, vector: unit_length(&[0.8, 0.6]).unwrap() });
    let mut rng = SecureRng::seeded_for_tests(11);
    let mut loss = |noise_eps: f64, repeat: usize| {
        let mut f = |units: &[UnitVector]| {
            frequencies(TRIALS, || {
                // `repeat`: the added unit's vote counted that many times (an under-counted Δ).
                let extra: Vec<UnitVector> = units.iter().skip(2).flat_map(|u| std::iter::repeat_n(u.clone(), repeat)).collect();
                let all: Vec<UnitVector> = units.iter().take(2).cloned().chain(extra).collect();
                let v = release(&cands, &all, noise_eps, &mut rng).unwrap().votes;
                (bucket(v[0][0] - 1), bucket(v[0][1] - 1))
            })
        };
        let (f0, f1) = (f(&d), f(&d1));
        max_log_ratio(&f0, &f1, TRIALS)
    };
    let eps = 0.5;
    let ok = loss(eps, 1);
    let under_noised = loss(2.0 * eps, 1);
    let counted_twice = loss(eps, 2);
    println!("vote, one document: loss {ok:.3}; noise of 2ε {under_noised:.3}; counted twice {counted_twice:.3} (ε = {eps})");
    assert!(ok <= eps, "estimated privacy loss {ok} exceeds ε = {eps}");
    assert!(under_noised > eps, "an under-noised vote went undetected ({under_noised})");
    assert!(counted_twice > eps, "a vote counted twice went undetected ({counted_twice})");
}

/// The corpus of the person test: persons 0 and 1 with a note each in a and b; person 9 (in D′
/// only) with six notes: three in a, two in b, one in c. Note vectors: class a's notes near
/// candidate a0, b's near b0, c's near c0; person 9's are near a1 / b1 / c1.
fn person_corpus(with_p: bool) -> (MatchedCorpus, Vec<Vec<f32>>) {
    let mut docs = vec![("a", 0, e(4, 0)), ("b", 1, e(4, 1))];
    if with_p {
        for (label, k) in [("a", 2), ("b", 3), ("a", 2), ("c", 3), ("a", 2), ("b", 3)] {
            docs.push((label, 9, e(4, k)));
        }
    }
    let vectors = docs.iter().map(|d| d.2.clone()).collect();
    let docs = docs.into_iter().map(|(l, p, _)| MatchedDoc { label: Some(l.into()), person: Some(p), terms: vec![] }).collect();
    (MatchedCorpus::for_tests(docs, "f"), vectors)
}

/// One person with six notes in three classes added. The outcome: the noisy counts of the
/// candidates person 9 would vote for in class a and in class b (the coordinates of two of
/// their classes). Within ε as the run forms the units (one class per person); caught, as it
/// must be, when the person votes in every class they have notes in (≈ 2ε here) or when each
/// note votes (≈ 3ε).
#[test]
fn empirical_privacy_loss_of_one_person_with_many_notes_stays_within_epsilon() {
    let classes = ClassSet::declared(&["a", "b", "c"], OtherLabels::Drop).unwrap();
    // Per class: candidate 0 near the others' notes, candidate 1 near person 9's.
    let cands = Candidates::new(4, &[vec![e(4, 0), e(4, 2)], vec![e(4, 1), e(4, 3)], vec![e(4, 0), e(4, 3)]]).unwrap();
    #[derive(Clone, Copy)]
    enum Units {
        /// As `crate::run::vote` forms them: `members`, one class per person.
        AsTheRun,
        /// Wrong: a person votes in each class they have notes in.
        EveryClass,
        /// Wrong: each note votes.
        EveryNote,
    }
    let units_of = |with_p: bool, how: Units| -> Vec<UnitVector> {
        let (corpus, vectors) = person_corpus(with_p);
        let class = |i: usize| classes.assign(corpus.docs[i].label.as_deref());
        match how {
            Units::AsTheRun => crate::input::units::members(&corpus, &classes)
                .iter()
                .filter_map(|m| UnitVector::of_documents(m.class?, &m.docs.iter().map(|&i| vectors[i].as_slice()).collect::<Vec<_>>()))
                .collect(),
            Units::EveryClass => {
                let persons: std::collections::BTreeSet<u32> = corpus.docs.iter().filter_map(|d| d.person).collect();
                persons
                    .iter()
                    .flat_map(|&p| {
                        let corpus = &corpus;
                        let vectors = &vectors;
                        (0..3).filter_map(move |c| {
                            let mine: Vec<&[f32]> =
                                (0..corpus.docs.len()).filter(|&i| corpus.docs[i].person == Some(p) && class(i) == Some(c)).map(|i| vectors[i].as_slice()).collect();
                            UnitVector::of_documents(c, &mine)
                        })
                    })
                    .collect()
            }
            Units::EveryNote => (0..corpus.docs.len()).filter_map(|i| UnitVector::of_documents(class(i)?, &[vectors[i].as_slice()])).collect(),
        }
    };
    let mut rng = SecureRng::seeded_for_tests(23);
    let mut loss = |how: Units| {
        let (u0, u1) = (units_of(false, how), units_of(true, how));
        let mut f = |units: &[UnitVector]| {
            frequencies(TRIALS, || {
                let v = release(&cands, units, 1.0, &mut rng).unwrap().votes;
                (v[0][1] >= 1, v[1][1] >= 1)
            })
        };
        let (f0, f1) = (f(&u0), f(&u1));
        max_log_ratio(&f0, &f1, TRIALS)
    };
    let eps = 1.0;
    let ok = loss(Units::AsTheRun);
    let every_class = loss(Units::EveryClass);
    let every_note = loss(Units::EveryNote);
    println!("vote, one person with six notes in three classes: loss {ok:.3}; voting in every class {every_class:.3}; every note voting {every_note:.3} (ε = {eps})");
    assert!(ok <= eps, "estimated privacy loss {ok} exceeds ε = {eps} per person");
    assert!(every_class > eps, "a person voting in each of their classes went undetected ({every_class})");
    assert!(every_note > eps, "notes voting one by one went undetected ({every_note})");
}

/// Subsampling: at q = 0.3 and ε = 2 the vote (coins, then the release, as the run does it)
/// must stay within the charged ε′ = ln(1 + q(e^ε − 1)) ≈ 1.07; the same vote with every unit
/// in (q = 1) charged at ε′ must be caught.
#[test]
fn empirical_privacy_loss_of_the_subsampled_vote_stays_within_the_amplified_epsilon() {
    let cands = Candidates::new(2, &[vec![e(2, 0), e(2, 1)]]).unwrap();
    let x = UnitVector { class: 0, vector: e(2, 0) };
    let d: Vec<UnitVector> = vec![UnitVector { class: 0, vector: e(2, 1) }];
    let mut d1 = d.clone();
    d1.push(x);
    let params = VoteParams { epsilon: 2.0, sample_rate: 0.3 };
    let charged = params.charged_epsilon();
    let mut rng = SecureRng::seeded_for_tests(31);
    let mut loss = |rate: f64| {
        let mut f = |units: &[UnitVector]| {
            frequencies(TRIALS, || {
                let c = coins(units.len(), rate, &mut rng).unwrap();
                let voting: Vec<UnitVector> = units.iter().zip(&c).filter(|(_, &k)| k).map(|(u, _)| u.clone()).collect();
                let v = release(&cands, &voting, params.epsilon, &mut rng).unwrap().votes;
                v[0][0].clamp(-1, 3)
            })
        };
        let (f0, f1) = (f(&d), f(&d1));
        max_log_ratio(&f0, &f1, TRIALS)
    };
    let ok = loss(params.sample_rate);
    let all_in = loss(1.0);
    println!("vote subsampled at q = 0.3, ε = 2: loss {ok:.3} (charged {charged:.3}); every unit in: {all_in:.3}");
    assert!(ok <= charged, "estimated privacy loss {ok} exceeds the charged ε′ = {charged}");
    assert!(all_in > charged, "a vote without its coins, charged the amplified ε′, went undetected ({all_in})");
}

#[test]
fn a_rate_too_small_to_draw_is_refused_before_anything_is_spent() {
    let ok = VoteParams { epsilon: 1.0, sample_rate: 0.3 };
    assert!(ok.check().is_ok());
    // A full 53-bit mantissa far below 1: no exact fraction of the coins' width.
    let tiny = VoteParams { epsilon: 1.0, sample_rate: f64::from_bits(0x3c0f_ffff_ffff_ffff) };
    let err = tiny.check().expect_err("refused");
    assert!(err.to_string().contains("too small to draw exactly"), "{err}");
    assert!(coins(3, tiny.sample_rate, &mut SecureRng::from_os().unwrap()).is_err(), "the coins would fail after the commit");
}
