//! `dpkps bench adapt` and `dpkps bench train`: figures for the recipient's classifier
//! (`dpkps_adapt`).
//!
//! `adapt` builds a domain-shift task from a labelled corpus (MTSamples): per class, half the
//! notes as they are (the labelled source), a quarter rewritten by `adapt::shift` (the
//! unlabelled target) and a quarter rewritten for testing; it trains the plain classifier and
//! the CORAL one for each λ and seed, and prints the test accuracy on the shifted notes (and,
//! for reference, on the same test notes unshifted).
//!
//! `train` times embedding and training at a given size (e.g. 5,000 labelled + 2,500
//! unlabelled documents, the corpus's notes repeated as needed) and prints the peak memory.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::train::{read_corpus_documents, TrainParamArgs};
use super::args::corpus::CorpusArgs;
use super::args::model::ModelArgs;
use super::error::CliError;
use super::io::{load_embedders, peak_rss_kb};
use dpkps_adapt::score::score;
use dpkps_adapt::shift_task::{Sample, ShiftTask, SETS};
use dpkps_adapt::{shift, shuffle, train, Matrix, TrainParams};
use dpkps_core::eval::metrics::spread;

/// The corpus's labelled documents grouped by label (empty texts and labels left out).
fn by_class(corpus: &CorpusArgs) -> Result<BTreeMap<String, Vec<String>>, CliError> {
    if !corpus.labelled() {
        return Err(CliError::Input { path: "--label-col".into(), message: "the task needs labels (--label-col, or --label-from-dir)".into() });
    }
    let docs = read_corpus_documents(corpus)?;
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (t, l) in docs.texts.into_iter().zip(docs.labels) {
        if let Some(l) = l.map(|l| l.trim().to_string()).filter(|l| !l.is_empty()) {
            if !t.trim().is_empty() {
                out.entry(l).or_default().push(t);
            }
        }
    }
    Ok(out)
}

/// What the cache's matrices were embedded from: the model and every set's texts, in order
/// (SHA-256, hex).
fn cache_key(model: &str, sets: &[(&str, &[String])]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(model.as_bytes());
    for (_, texts) in sets {
        h.update((texts.len() as u64).to_le_bytes());
        for t in texts.iter() {
            h.update((t.len() as u64).to_le_bytes());
            h.update(t.as_bytes());
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The cached task when the file holds one for `key` (anything else: embed again).
fn read_cache(path: &Path, key: &str) -> Option<ShiftTask> {
    ShiftTask::from_bytes(&std::fs::read(path).ok()?).ok().filter(|t| t.key == key)
}

fn ids(names: &[String], labels: &[String]) -> Vec<usize> {
    labels.iter().map(|l| names.iter().position(|n| n == l).unwrap_or(0)).collect()
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn adapt(
    corpus: &CorpusArgs,
    classes: usize,
    per_class: Option<usize>,
    seeds: usize,
    weights: &[f64],
    cache: Option<&Path>,
    params: &TrainParamArgs,
    model: &ModelArgs,
) -> Result<(), CliError> {
    let base = params.params()?;
    let mut groups: Vec<(String, Vec<String>)> = by_class(corpus)?.into_iter().collect();
    groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    groups.truncate(classes.max(2));
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let (mut src, mut tgt, mut test) = (Vec::new(), Vec::new(), Vec::new());
    for (label, docs) in &mut groups {
        shuffle(docs, &mut rng);
        if let Some(n) = per_class {
            docs.truncate(n);
        }
        let (a, b) = (docs.len() / 2, docs.len() * 3 / 4);
        src.extend(docs[..a].iter().map(|t| (t.clone(), label.clone())));
        tgt.extend(docs[a..b].iter().map(|t| shift::rewrite(t)));
        test.extend(docs[b..].iter().map(|t| (t.clone(), label.clone())));
    }
    let names: Vec<String> = {
        let mut n: Vec<String> = groups.iter().map(|g| g.0.clone()).collect();
        n.sort();
        n
    };
    println!(
        "benchmark: Deep CORAL on a domain shift ({} classes: {}); {} labelled notes as they are, {} unlabelled and {} test notes rewritten (adapt::shift)",
        names.len(),
        names.join(", "),
        src.len(),
        tgt.len(),
        test.len()
    );
    let mut emb = load_embedders(model)?;
    let t0 = Instant::now();
    let (src_text, src_labels): (Vec<String>, Vec<String>) = src.into_iter().unzip();
    let (test_text, test_labels): (Vec<String>, Vec<String>) = test.into_iter().unzip();
    let test_shifted: Vec<String> = test_text.iter().map(|t| shift::rewrite(t)).collect();
    let sets: [(&str, &[String]); 4] =
        [("labelled notes", &src_text), ("unlabelled rewritten notes", &tgt), ("rewritten test notes", &test_shifted), ("test notes as they are", &test_text)];
    let key = cache_key(emb.checksum(), &sets);
    let task = match cache.and_then(|c| read_cache(c, &key)) {
        Some(t) => {
            println!("  embedded notes read from {}", cache.map_or(String::new(), |c| c.display().to_string()));
            t
        }
        None => {
            let mut m = Vec::with_capacity(4);
            let mut samples = Vec::new();
            for ((what, texts), name) in sets.iter().zip(SETS) {
                m.push(emb.embed(what, texts)?);
                samples.extend(texts.iter().take(2).enumerate().map(|(row, t)| Sample { set: name.into(), row, text: t.clone() }));
            }
            let [labelled, unlabelled, test_shifted, test_as_is]: [Matrix; 4] =
                m.try_into().map_err(|_| CliError::Input { path: "benchmark".into(), message: "internal: four sets".into() })?;
            println!("  embedding {} notes: {:.1} s", labelled.rows + unlabelled.rows + 2 * test_shifted.rows, t0.elapsed().as_secs_f64());
            let t = ShiftTask {
                labelled_class: ids(&names, &src_labels),
                test_class: ids(&names, &test_labels),
                classes: names.clone(),
                labelled,
                unlabelled,
                test_shifted,
                test_as_is,
                model: emb.checksum().to_string(),
                key,
                samples,
            };
            if let Some(c) = cache {
                std::fs::write(c, t.to_bytes()).map_err(|e| CliError::Input { path: c.display().to_string(), message: format!("cannot write the cache: {e}") })?;
            }
            t
        }
    };
    let (x, u, ts, tp) = (&task.labelled, &task.unlabelled, &task.test_shifted, &task.test_as_is);
    let (y, truth) = (&task.labelled_class, &task.test_class);
    let accuracy_on = |m: &dpkps_adapt::Classifier, t: &Matrix| -> Result<(f64, f64), CliError> {
        let pred: Vec<usize> = m.predict(t).map_err(adapt_err)?.iter().map(|p| p.class).collect();
        let s = score(truth, &pred, names.len());
        Ok((s.accuracy, s.macro_f1))
    };
    let mut plain_acc = Vec::new();
    for &w in weights {
        let (mut acc, mut f1, mut same, mut secs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for s in 0..seeds.max(1) {
            let p = TrainParams { coral_weight: w, seed: base.seed + s as u64, ..base.clone() };
            let t1 = Instant::now();
            let (m, _) = train(x, y, &names, Some(u), &p, &mut |_| true).map_err(adapt_err)?;
            secs.push(t1.elapsed().as_secs_f64());
            let (a, f) = accuracy_on(&m, ts)?;
            acc.push(a);
            f1.push(f);
            same.push(accuracy_on(&m, tp)?.0);
        }
        let (a, f, sm, t) = (spread(&acc), spread(&f1), spread(&same), spread(&secs));
        if w == 0.0 {
            plain_acc = acc.clone();
        }
        let margin = if w > 0.0 && !plain_acc.is_empty() {
            format!(", {:+.3} over plain", a.mean - spread(&plain_acc).mean)
        } else {
            String::new()
        };
        println!(
            "  λ = {w:<6} shifted test: accuracy {:.3} ± {:.3}, macro-F1 {:.3} ± {:.3}{margin} | unshifted test: accuracy {:.3} | {:.1} s per model ({} seeds)",
            a.mean, a.std, f.mean, f.std, sm.mean, t.mean, acc.len()
        );
    }
    if let Some(kb) = peak_rss_kb() {
        println!("  peak resident memory: {:.0} MB", kb as f64 / 1024.0);
    }
    Ok(())
}

pub(crate) fn scale(corpus: &CorpusArgs, labelled: usize, unlabelled: usize, random: bool, params: &TrainParamArgs, model: &ModelArgs) -> Result<(), CliError> {
    let p = params.params()?;
    let (x, u, y, names, embed_s) = if random {
        // Unit vectors around 40 random class centres: what training costs, whatever the text.
        let names: Vec<String> = (0..40).map(|c| format!("class {c}")).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut gauss = move || {
            let (a, b) = ((rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32, (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32);
            (-2.0 * (a.max(1e-7)).ln()).sqrt() * (std::f32::consts::TAU * b).cos()
        };
        let centres: Vec<Vec<f32>> = (0..40).map(|_| (0..384).map(|_| gauss()).collect()).collect();
        let mut rows = |n: usize, shift: f32| -> (Matrix, Vec<usize>) {
            let mut data = Vec::with_capacity(n * 384);
            let mut y = Vec::with_capacity(n);
            for k in 0..n {
                let c = k % 40;
                let v: Vec<f32> = centres[c].iter().map(|m| m + 2.0 * gauss() + shift).collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                data.extend(v.iter().map(|x| x / norm));
                y.push(c);
            }
            (Matrix { rows: n, cols: 384, data }, y)
        };
        let (x, y) = rows(labelled, 0.0);
        let (u, _) = rows(unlabelled, 0.5);
        (x, u, y, names, None)
    } else {
        let groups = by_class(corpus)?;
        let all: Vec<(String, String)> = groups.iter().flat_map(|(l, d)| d.iter().map(move |t| (t.clone(), l.clone()))).collect();
        if all.is_empty() {
            return Err(CliError::Input { path: "--corpus".into(), message: "no labelled documents".into() });
        }
        let names: Vec<String> = groups.keys().cloned().collect();
        // The notes in a seeded random order, repeated as needed; the unlabelled ones from the
        // other end of that order.
        let mut order: Vec<usize> = (0..all.len()).collect();
        shuffle(&mut order, &mut ChaCha8Rng::seed_from_u64(11));
        let pick = |n: usize, from_end: bool| {
            (0..n).map(|k| all[order[if from_end { order.len() - 1 - k % order.len() } else { k % order.len() }]].clone()).collect::<Vec<_>>()
        };
        let (src_text, src_labels): (Vec<String>, Vec<String>) = pick(labelled, false).into_iter().unzip();
        let tgt: Vec<String> = pick(unlabelled, true).into_iter().map(|(t, _)| shift::rewrite(&t)).collect();
        let mut emb = load_embedders(model)?;
        let t0 = Instant::now();
        let x = emb.embed("labelled", &src_text)?;
        let u = emb.embed("unlabelled", &tgt)?;
        let y = ids(&names, &src_labels);
        (x, u, y, names, Some(t0.elapsed().as_secs_f64()))
    };
    println!(
        "benchmark: the recipient's classifier at {labelled} labelled + {unlabelled} unlabelled documents ({} classes{}), native",
        names.len(),
        if random { ", random unit vectors" } else { "" }
    );
    if let Some(s) = embed_s {
        println!("  embedding {} documents: {s:.1} s ({:.1} ms each, every core)", x.rows + u.rows, s * 1000.0 / (x.rows + u.rows).max(1) as f64);
    }
    let t1 = Instant::now();
    let (_, logs) = train(&x, &y, &names, Some(&u), &p, &mut |_| true).map_err(adapt_err)?;
    let train_s = t1.elapsed().as_secs_f64();
    println!("  training {} epochs with CORAL (λ = {}): {train_s:.1} s ({:.2} s per epoch)", logs.len(), p.coral_weight, train_s / logs.len().max(1) as f64);
    if let Some(kb) = peak_rss_kb() {
        println!("  peak resident memory: {:.0} MB", kb as f64 / 1024.0);
    }
    Ok(())
}

fn adapt_err(e: dpkps_adapt::AdaptError) -> CliError {
    CliError::Input { path: "training".into(), message: e.to_string() }
}
