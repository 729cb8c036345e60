//! The recipient's classifier on a real domain shift (issue 24): notes of four MTSamples
//! specialties (tests/fixtures/mtsamples_shift.csv, written by scripts/adapt_fixture.py) as they
//! are for training, and the same specialties' other notes rewritten by `adapt::shift` (sections
//! reversed, abbreviations expanded, upper case, a long boilerplate header and footer) as the
//! unlabelled target and the test set. The shift must cost the plain classifier accuracy and
//! the CORAL term must pull the domains' feature covariances together; the accuracy of both
//! classifiers on the shifted notes, averaged over four random splits, is printed (at this size
//! CORAL does not reliably win accuracy back: see docs/recipient.md).
//!
//! Then `dpkps train` and `dpkps predict` on a few of the same notes: the files they write.
#![cfg(all(not(target_arch = "wasm32"), feature = "embed"))]

use std::path::PathBuf;
use std::process::Command;

use dpkps::adapt::score::score;
use dpkps::adapt::task::embed_texts;
use dpkps::adapt::{shift, train, Classifier, Matrix, TrainParams};
use dpkps::embed::onnx::OnnxEmbedder;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn fixture() -> Vec<(String, String)> {
    let mut r = csv::Reader::from_path(format!("{ROOT}/tests/fixtures/mtsamples_shift.csv")).unwrap();
    r.records().map(|rec| rec.unwrap()).map(|rec| (rec[0].to_string(), rec[1].to_string())).collect()
}

fn model() -> OnnxEmbedder {
    let m = std::fs::read(format!("{ROOT}/models/all-MiniLM-L6-v2.int8w.onnx")).unwrap();
    let t = std::fs::read(format!("{ROOT}/models/tokenizer.json")).unwrap();
    OnnxEmbedder::from_bytes(&m, &t).unwrap()
}

#[test]
fn a_real_shift_costs_accuracy_and_coral_aligns_the_domains_features() {
    let notes = fixture();
    let mut names: Vec<String> = notes.iter().map(|n| n.1.clone()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 4);
    // Every note embedded as it is and rewritten, once.
    let mut m = model();
    let plain_text: Vec<String> = notes.iter().map(|d| d.0.clone()).collect();
    let shifted_text: Vec<String> = notes.iter().map(|d| shift::rewrite(&d.0)).collect();
    let as_is = embed_texts(&mut m, &plain_text, 32, &mut |_, _| true).unwrap();
    let shifted = embed_texts(&mut m, &shifted_text, 32, &mut |_, _| true).unwrap();
    let label: Vec<usize> = notes.iter().map(|d| names.iter().position(|n| *n == d.1).unwrap()).collect();
    let rows = |mat: &Matrix, idx: &[usize]| Matrix { rows: idx.len(), cols: mat.cols, data: idx.iter().flat_map(|&k| mat.row(k).iter().copied()).collect() };
    // Four random splits, each per class: half the notes as they are (labelled), a quarter
    // rewritten (unlabelled), a quarter rewritten (test); one training seed per split. 48 test
    // notes make one split's accuracy noisy (±0.04 between splits), so the mean over the four
    // is compared.
    let (mut plain, mut coral) = (Vec::new(), Vec::new());
    for split in 0..4u64 {
        let (mut src, mut tgt, mut test) = (Vec::new(), Vec::new(), Vec::new());
        let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ (split + 1);
        for c in 0..names.len() {
            let mut members: Vec<usize> = (0..notes.len()).filter(|&k| label[k] == c).collect();
            for i in (1..members.len()).rev() {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                members.swap(i, (state % (i as u64 + 1)) as usize);
            }
            let (a, b) = (members.len() / 2, members.len() * 3 / 4);
            src.extend_from_slice(&members[..a]);
            tgt.extend_from_slice(&members[a..b]);
            test.extend_from_slice(&members[b..]);
        }
        let (x, u, t) = (rows(&as_is, &src), rows(&shifted, &tgt), rows(&shifted, &test));
        let y: Vec<usize> = src.iter().map(|&k| label[k]).collect();
        let truth: Vec<usize> = test.iter().map(|&k| label[k]).collect();
        let same = rows(&as_is, &test);
        // (accuracy on the rewritten test notes, on the same notes as they are, the last
        // epoch's CORAL distance between the domains' features)
        let fit = |w: f64| {
            let p = TrainParams { coral_weight: w, seed: split + 1, ..TrainParams::default() };
            let (model, logs) = train(&x, &y, &names, Some(&u), &p, &mut |_| true).unwrap();
            let acc = |m: &Matrix| {
                let pred: Vec<usize> = model.predict(m).unwrap().iter().map(|p| p.class).collect();
                score(&truth, &pred, names.len()).accuracy
            };
            (acc(&t), acc(&same), logs.last().unwrap().coral_loss)
        };
        let (p, c) = (fit(0.0), fit(TrainParams::default().coral_weight));
        println!("split {split}: plain {:.3} (unshifted {:.3}, CORAL distance {:.2e}), Deep CORAL {:.3} (distance {:.2e})", p.0, p.1, p.2, c.0, c.2);
        // The adaptation does what it is for: the domains' feature covariances end far closer.
        assert!(c.2 * 4.0 < p.2, "split {split}: CORAL distance {:.2e} with adaptation, {:.2e} without", c.2, p.2);
        plain.push(p);
        coral.push(c);
    }
    let mean = |v: &[(f64, f64, f64)], f: fn(&(f64, f64, f64)) -> f64| v.iter().map(f).sum::<f64>() / v.len() as f64;
    let (p, c, unshifted) = (mean(&plain, |r| r.0), mean(&coral, |r| r.0), mean(&plain, |r| r.1));
    println!(
        "shifted test notes (4 splits of 48): plain {p:.3} (the same notes unshifted {unshifted:.3}), Deep CORAL {c:.3} (λ = {}), margin {:+.3}",
        TrainParams::default().coral_weight,
        c - p
    );
    // The shift is real: it costs the plain classifier accuracy.
    assert!(unshifted > p + 0.03, "unshifted {unshifted:.3}, shifted {p:.3}");
    // Whether CORAL also wins accuracy back is measured, not asserted, at this size: on these
    // 96 labelled notes it does not reliably (docs/recipient.md: −0.010 over these four splits;
    // +0.053 with 300 labelled notes in `dpkps bench adapt`).
}

fn dpkps() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dpkps"))
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dpkps-adapt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn train_writes_the_model_predictions_and_report_and_predict_reads_the_model() {
    let dir = tmpdir("cli");
    let notes = fixture();
    // 16 labelled (the synthetic corpus's columns), 8 unlabelled, 8 test notes.
    let write = |name: &str, rows: &[(String, String)], label: bool| {
        let mut w = csv::Writer::from_path(dir.join(name)).unwrap();
        w.write_record(if label { vec!["text", "label"] } else { vec!["note"] }).unwrap();
        for (t, l) in rows {
            let t = t.chars().take(300).collect::<String>();
            if label { w.write_record([t.as_str(), l.as_str()]).unwrap() } else { w.write_record([t.as_str()]).unwrap() }
        }
        w.flush().unwrap();
    };
    write("synthetic.csv", &notes[..16], true);
    write("ours.csv", &notes[16..24], false);
    write("test.csv", &notes[24..32], true);
    let out = dir.join("out");
    let o = dpkps()
        .args(["train", "--synthetic"])
        .arg(dir.join("synthetic.csv"))
        .arg("--unlabeled")
        .arg(dir.join("ours.csv"))
        .args(["--unlabeled-text-col", "note", "--test"])
        .arg(dir.join("test.csv"))
        .args(["--epochs", "3", "--compare", "--out-dir"])
        .arg(&out)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.contains("trained on 16 labelled documents (4 classes); 8 unlabelled, 8 test documents"), "{stdout}");
    assert!(stdout.contains("coral (λ = 1000): accuracy") && stdout.contains("plain (λ = 0): accuracy"), "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["models"].as_array().unwrap().len(), 2);
    assert_eq!(report["models"][0]["epochs"].as_array().unwrap().len(), 3);
    assert_eq!(report["models"][0]["test"]["confusion"].as_array().unwrap().len(), 4);
    let preds = std::fs::read_to_string(out.join("predictions.jsonl")).unwrap();
    assert_eq!(preds.lines().count(), 8);
    let first: serde_json::Value = serde_json::from_str(preds.lines().next().unwrap()).unwrap();
    assert!(first["label"].as_str().is_some_and(|l| l.len() > 3) && first["probability"].as_f64().is_some());
    assert_eq!(std::fs::read_to_string(out.join("predictions.csv")).unwrap().lines().next(), Some("text,label,probability"));
    // The model file reads back with its classes; predict gives the same labels.
    let bytes = std::fs::read(out.join("model.safetensors")).unwrap();
    let model = Classifier::from_bytes(&bytes).unwrap();
    assert_eq!(model.labels().len(), 4);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for f in ["model.safetensors", "predictions.csv", "predictions.jsonl", "report.json"] {
            assert_eq!(std::fs::metadata(out.join(f)).unwrap().permissions().mode() & 0o077, 0, "{f} is private");
        }
    }
    let again = dir.join("again.jsonl");
    let o = dpkps().args(["predict", "--classifier"]).arg(out.join("model.safetensors")).arg("--corpus").arg(dir.join("ours.csv")).args(["--text-col", "note", "--out"]).arg(&again).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let labels = |s: &str| s.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["label"].clone()).collect::<Vec<_>>();
    assert_eq!(labels(&std::fs::read_to_string(&again).unwrap()), labels(&preds));
    // Refused in words: a file that is not a model; a synthetic corpus without its label column.
    let o = dpkps().args(["predict", "--classifier"]).arg(dir.join("ours.csv")).arg("--corpus").arg(dir.join("ours.csv")).args(["--text-col", "note", "--out"]).arg(&again).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the model file cannot be read"), "{}", String::from_utf8_lossy(&o.stderr));
    let o = dpkps().args(["train", "--synthetic"]).arg(dir.join("ours.csv")).args(["--text-col", "note", "--out-dir"]).arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
}
