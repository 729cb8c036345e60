//! `dpkps evaluate` (README, "evaluate"): the report's shape, the floor and ceiling arms on an
//! easy corpus, the text view, and the errors for bad inputs. Uses the bundled model.

use std::path::Path;
use std::process::{Command, Output};

use super::common::{stderr};

/// Runs the CLI with a private ledger path, which an evaluation must never create.
fn dpkps(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dpkps")).args(args).env("DPKPS_LEDGER", dir.join("ledger.json")).output().unwrap()
}

const TERMS: [(&str, [&str; 6]); 3] = [
    ("Cardio", ["Heart Failure", "Hypertension", "Chest Pain", "Myocardial Infarction", "Atrial Fibrillation", "Angina Pectoris"]),
    ("Pulmo", ["Asthma", "Cough", "Pneumonia", "Dyspnea", "Bronchitis", "Emphysema"]),
    ("Derm", ["Psoriasis", "Eczema", "Acne Vulgaris", "Dermatitis", "Pruritus", "Melanoma"]),
];

/// An easy corpus: `sizes[c]` notes of class c, each naming three of its class's six terms.
fn corpus(dir: &Path, sizes: [usize; 3]) -> String {
    let mut csv = String::from("id,note,specialty\n");
    let mut id = 0;
    for ((label, terms), n) in TERMS.iter().zip(sizes) {
        for k in 0..n {
            id += 1;
            let pick: Vec<&str> = (0..3).map(|j| terms[(k + 2 * j) % 6]).collect();
            csv.push_str(&format!("{id},\"Patient seen for {}, with {} and {}.\",{label}\n", pick[0], pick[1], pick[2]));
        }
    }
    let p = dir.join("notes.csv");
    std::fs::write(&p, csv).unwrap();
    p.display().to_string()
}

fn base(c: &str) -> Vec<&str> {
    vec![
        "evaluate", "--corpus", c, "--text-col", "note", "--label-col", "specialty", "--vocabulary", "medical",
        "--eps-voc", "5", "--eps-kde", "10", "--top-n", "30", "--terms-per-doc", "3", "--len", "3",
        "--kde-terms-per-doc", "3", "--per-class", "20", "--holdout", "0.25", "--seeds", "2", "--features", "256",
    ]
}

#[test]
fn report_has_every_arm_the_floor_and_the_ceiling() {
    let dir = tmpdir("report");
    let c = corpus(&dir, [16, 12, 8]);
    let json = dir.join("out.json").display().to_string();
    let mut args = base(&c);
    // 8–16 documents a class are far under the DP-KDE's noise: every class is noise-dominated
    // and, by default, not trained on; this test is about the report's shape, so it includes them.
    args.extend(["--sampler", "independent,iterative-log", "--no-dp", "--include-noise-classes", "--json", &json]);
    let o = dpkps(&dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("NOT differentially private") && table.contains("dp-iterative-log"), "{table}");
    // Tuning on private data: recorded as a non-DP check on the corpus (no run, no ε), before
    // the figures were printed (issue 25 item 3).
    let book: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("ledger.json")).unwrap()).unwrap();
    let ledgers = book["ledgers"].as_object().unwrap();
    assert_eq!(ledgers.len(), 1, "{book}");
    let l = ledgers.values().next().unwrap();
    assert!(l["runs"].as_array().is_none_or(|r| r.is_empty()), "{book}");
    assert_eq!(l["utility_checks"][0]["settings_compared"], 6, "majority, nonprivate and two samplers with and without noise: {book}");
    assert!(stderr(&o).contains("as a non-DP check on this corpus (6 settings compared; no ε)"), "{}", stderr(&o));

    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert!(v["note"].as_str().unwrap().contains("NOT differentially private"));
    assert_eq!(v["params"]["holdout"], 0.25);
    assert_eq!(v["params"]["vocab"]["epsilon"], 5.0);
    assert_eq!(v["params"]["eps_kde"], 10.0);
    assert_eq!(v["task"]["classes"], serde_json::json!(["Cardio", "Derm", "Pulmo"]));
    let arms = v["arms"].as_array().unwrap();
    let names: Vec<String> = arms.iter().map(|a| format!("{}/{}", a["arm"].as_str().unwrap(), a["view"].as_str().unwrap())).collect();
    for want in ["majority/none", "nonprivate/embedding", "nonprivate/bag", "dp-independent/embedding", "dp-iterative-log/bag", "nodp-independent/embedding", "nodp-iterative-log/bag"] {
        assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
    }
    assert_eq!(arms.len(), 1 + 2 * 5, "{names:?}");
    for a in arms {
        for key in ["arm", "view", "accuracy_mean", "accuracy_std", "macro_f1_mean", "macro_f1_std", "n_train", "n_test", "runs"] {
            assert!(a.get(key).is_some(), "{key} missing in {a}");
        }
        assert_eq!(a["runs"].as_array().unwrap().len(), 2);
    }
    let arm = |n: &str, view: &str| arms.iter().find(|a| a["arm"] == n && a["view"] == view).unwrap();
    // Test part: 4 Cardio, 2 Derm, 3 Pulmo; the training majority is Cardio: accuracy 4/9.
    let maj = arm("majority", "none");
    assert_eq!((maj["n_train"].as_u64(), maj["n_test"].as_u64()), (Some(27), Some(9)));
    for run in maj["runs"].as_array().unwrap() {
        assert!((run["accuracy"].as_f64().unwrap() - 4.0 / 9.0).abs() < 1e-12, "{run}");
    }
    assert_eq!(arm("dp-independent", "embedding")["n_train"], 3 * 20);
    // Each arm's accuracy over `nonprivate`'s, paired by repetition (held-out set), in the
    // report and in the table's `acc/np` column; none for `nonprivate` and the majority class.
    for (name, view) in [("dp-independent", "embedding"), ("nodp-iterative-log", "bag")] {
        let a = arm(name, view);
        let np = arm("nonprivate", view)["runs"].as_array().unwrap().iter().map(|r| r["accuracy"].as_f64().unwrap()).collect::<Vec<_>>();
        let ratios: Vec<f64> = a["runs"].as_array().unwrap().iter().zip(&np).map(|(r, b)| r["accuracy"].as_f64().unwrap() / b).collect();
        let mean = ratios.iter().sum::<f64>() / 2.0;
        assert!((a["accuracy_ratio"]["mean"].as_f64().unwrap() - mean).abs() < 1e-12, "{a}");
        assert!((a["accuracy_ratio"]["std"].as_f64().unwrap() - (ratios[0] - ratios[1]).abs() / 2f64.sqrt()).abs() < 1e-12, "{a}");
        let row: Vec<&str> = table.lines().find(|l| l.starts_with(name) && l.contains(view)).unwrap().split_whitespace().collect();
        // arm, view, accuracy ± sd, macro-F1 ± sd, then acc/np ± sd.
        assert_eq!(row[8..10], [format!("{mean:.3}").as_str(), "±"], "{row:?}");
    }
    assert!(arm("nonprivate", "embedding").get("accuracy_ratio").is_none() && maj.get("accuracy_ratio").is_none());
    let non = arm("nonprivate", "embedding")["accuracy_mean"].as_f64().unwrap();
    assert!(non >= maj["accuracy_mean"].as_f64().unwrap() + 0.3, "nonprivate {non} should beat the majority class clearly");
}

#[test]
fn synthetic_texts_are_scored_next_to_real_texts() {
    let dir = tmpdir("synthetic");
    let c = corpus(&dir, [8, 8, 8]);
    let syn = dir.join("synthetic.jsonl");
    let mut lines = String::new();
    for (label, terms) in TERMS {
        for t in terms {
            lines.push_str(&serde_json::json!({"text": format!("A note about {t}."), "label": label}).to_string());
            lines.push('\n');
        }
    }
    lines.push_str("{\"text\": \"unrelated\", \"label\": \"Other\"}\n");
    std::fs::write(&syn, lines).unwrap();
    let json = dir.join("out.json").display().to_string();
    let mut args = base(&c);
    let syn = syn.display().to_string();
    let named = format!("llm={syn}");
    let export = dir.join("sequences");
    let export_arg = export.display().to_string();
    // So small a corpus is noise-dominated at this ε: its sequences are exported all the same.
    args.extend(["--sampler", "independent", "--include-noise-classes", "--synthetic", &named, "--export-sequences", &export_arg, "--json", &json]);
    let o = dpkps(&dir, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("synthetic set llm: 19 documents (18 used, per class [6, 6, 6]); accuracy / same count of real documents "), "{out}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(
        v["synthetic"],
        serde_json::json!([{"name": "llm", "documents": 19, "used": 18, "unknown_label_left_out": 1, "per_class": [6, 6, 6]}])
    );
    let arms = v["arms"].as_array().unwrap();
    let text = |n: &str| arms.iter().find(|a| a["arm"] == n && a["view"] == "text").unwrap_or_else(|| panic!("{n}/text missing"));
    assert_eq!(text("synthetic")["n_train"], 18);
    assert_eq!(text("real-text")["n_test"], 6);
    // As many real training documents per class as the set has: 6 of each class's 6.
    assert_eq!(text("real-text-same-count")["n_train"], 18);
    assert!(text("synthetic")["accuracy_mean"].as_f64().unwrap() > text("majority")["accuracy_mean"].as_f64().unwrap());
    // The sampler arm's training sequences, per seed, in the form `generate --sequences` reads.
    for seed in [0, 1] {
        let path = export.join(format!("dp-independent-seed{seed}.jsonl"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let seqs: Vec<dpkps_core::sample::SequenceOut> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        // Each line says it is no recorded release: DP, its ε in no ledger (`generate` refuses
        // it unless acknowledged, and then sends it only to this machine).
        for l in text.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!((&v["dp"], &v["epsilon_recorded"]), (&serde_json::json!(true), &serde_json::json!(false)), "{l}");
        }
        // 20 per class on average, apportioned by the DP class counts; noise-dominated classes left out.
        assert!(!seqs.is_empty() && seqs.len() <= 3 * 20, "{}: {}", path.display(), seqs.len());
        assert!(seqs.iter().all(|s| !s.keyphrases.is_empty() && ["Cardio", "Derm", "Pulmo"].contains(&s.label.as_deref().unwrap_or(""))));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600, "not DP: owner only");
        }
    }
}

#[test]
fn bad_inputs_get_clear_errors() {
    let dir = tmpdir("errors");
    let c = corpus(&dir, [16, 12, 8]);
    let check = |extra: &[&str], replace_label: Option<&str>, want: &str| {
        let mut args = base(&c);
        if let Some(l) = replace_label {
            let k = args.iter().position(|a| *a == "--label-col").unwrap();
            if l.is_empty() {
                args.drain(k..k + 2);
            } else {
                args[k + 1] = l;
            }
        }
        // An option given in `extra` replaces the base's.
        if let Some(k) = extra.first().and_then(|o| args.iter().position(|a| a == o)) {
            args.drain(k..k + 2);
        }
        args.extend_from_slice(extra);
        let o = dpkps(&dir, &args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{extra:?}: expected {want:?} in {}", stderr(&o));
    };
    check(&["--holdout", "1.5"], None, "held-out fraction must be strictly between 0 and 1");
    check(&["--holdout", "0"], None, "held-out fraction");
    check(&[], Some("nope"), "no column named \"nope\"");
    check(&[], Some(""), "needs class labels");
    check(&["--one-vs-rest", "Neuro"], None, "no document has the label \"Neuro\"");
    check(&["--sampler", "fastest"], None, "unknown sampler");
    let small = corpus(&dir, [16, 12, 3]);
    let mut args = base(&small);
    args.extend(["--sampler", "independent"]);
    let o = dpkps(&dir, &args);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("the class \"Derm\" has only 3 document(s)"), "{}", stderr(&o));
}

/// Tuning on a file that shares documents with a recorded corpus is tuning on that corpus: the
/// check is recorded on it too, and a later run on an extract overlapping it says so.
#[test]
fn a_tuning_file_that_overlaps_a_recorded_corpus_is_counted_there() {
    let dir = tmpdir("tuning");
    let c = corpus(&dir, [16, 12, 8]);
    let ledger = dir.join("ledger.json").display().to_string();
    let text = std::fs::read_to_string(&c).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let write = |name: &str, rows: &[&str]| {
        let p = dir.join(name);
        std::fs::write(&p, format!("{}\n{}\n", lines[0], rows.join("\n"))).unwrap();
        p.display().to_string()
    };
    // Last month's extract, recorded under an account (and so sketched); this month's shares
    // 30 of its 36 notes.
    let last = write("last.csv", &lines[1..]);
    let this = write("this.csv", &[&lines[7..37], &["37,\"Patient seen for Cough.\",Pulmo"][..]].concat());
    let vocab = ["vocab", "--text-col", "note", "--label-col", "specialty", "--classes", "Cardio,Pulmo,Derm", "--vocabulary", "medical", "--eps-voc", "1", "--top-n", "10"];
    let mut a = vec!["vocab", "--corpus", &last];
    a.extend_from_slice(&vocab[1..]);
    a.extend(["--account", "clinic", "--budget", "50", "--out", "/dev/null", "--ledger", &ledger]);
    let o = dpkps(&dir, &a);
    assert!(o.status.success(), "{}", stderr(&o));
    // Tuning on this month's extract (not DP): recorded on it and on last month's.
    let mut a = base(&this);
    a.extend(["--sampler", "independent", "--include-noise-classes"]);
    let o = dpkps(&dir, &a);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("this file overlaps a corpus of the account “clinic” by about"), "{}", stderr(&o));
    let book: serde_json::Value = serde_json::from_slice(&std::fs::read(&ledger).unwrap()).unwrap();
    let with_checks = book["ledgers"].as_object().unwrap().values().filter(|l| l["utility_checks"].as_array().is_some_and(|c| c.len() == 1)).count();
    assert_eq!(with_checks, 2, "the check is on both corpora: {book}");
    // A run on last month's extract counts it.
    let out = dir.join("run");
    let mut a = vec!["pipeline", "--corpus", &last];
    a.extend_from_slice(&vocab[1..]);
    a.extend(["--account", "clinic", "--eps-kde", "2", "--features", "256", "--len", "3", "--per-class", "2"]);
    a.extend(["--ledger", &ledger, "--out-dir", out.to_str().unwrap()]);
    let o = dpkps(&dir, &a);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("privacy-report.json")).unwrap()).unwrap();
    assert_eq!(report["non_dp_checks_on_this_corpus"], 1, "{report}");

    // The usual order: tuned first on this month's file (nothing recorded yet), then a run on
    // last month's. The file was sketched when it was checked, so the run finds its check.
    let ledger2 = dir.join("ledger2.json").display().to_string();
    let o = Command::new(env!("CARGO_BIN_EXE_dpkps")).args(&a_eval(&this)).env("DPKPS_LEDGER", &ledger2).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out2 = dir.join("run2");
    let mut a = vec!["pipeline", "--corpus", &last];
    a.extend_from_slice(&vocab[1..]);
    a.extend(["--account", "clinic", "--budget", "50", "--eps-kde", "2", "--features", "256", "--len", "3", "--per-class", "2"]);
    a.extend(["--ledger", &ledger2, "--out-dir", out2.to_str().unwrap()]);
    let o = dpkps(&dir, &a);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(out2.join("privacy-report.json")).unwrap()).unwrap();
    assert_eq!(report["non_dp_checks_on_this_corpus"], 1, "{report}");
    assert!(report["non_dp_checks"].as_str().unwrap().contains("1 of them on a file that shares documents or persons with it"), "{report}");
}

/// `evaluate`'s arguments for the tuning test: the base options on `c`, one sampler.
fn a_eval(c: &str) -> Vec<String> {
    let mut a: Vec<String> = base(c).into_iter().map(String::from).collect();
    a.extend(["--sampler", "independent", "--include-noise-classes"].map(String::from));
    a
}

fn tmpdir(name: &str) -> super::common::Scratch {
    super::common::tmpdir("eval", name)
}
