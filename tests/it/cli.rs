//! The `dpkps` CLI's contract (README, "Command-line tool"): outputs, ledger, errors, exit codes.

use std::process::Command;

use super::common::{dpkps, stderr};

/// The permission bits of a file the CLI wrote.
#[cfg(unix)]
fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

const CORPUS: &str = "id,note,specialty\n\
1,\"Congestive heart failure with chest pain.\",Cardio\n\
2,\"Asthma and cough; chest pain at night.\",Pulmo\n\
3,\"   \",Cardio\n\
4,\"Heart failure, hypertension.\",Cardio\n";

fn corpus(dir: &std::path::Path) -> String {
    let p = dir.join("notes.csv");
    std::fs::write(&p, CORPUS).unwrap();
    p.display().to_string()
}

#[test]
fn vocab_writes_a_dp_vocabulary_and_the_ledger_adds_up() {
    let dir = tmpdir("vocab");
    let c = corpus(&dir);
    let ledger = dir.join("ledger.json").display().to_string();
    let out = dir.join("vocab.json").display().to_string();
    let args = [
        "vocab", "--corpus", &c, "--text-col", "note", "--label-col", "specialty", "--classes", "Cardio,Pulmo",
        "--vocabulary", "medical", "--eps-voc", "1.5", "--top-n", "20", "--terms-per-doc", "3", "--out", &out,
        "--ledger", &ledger,
    ];
    // A budget comes before the first run on a corpus (issue 25): refused without one.
    let o = dpkps(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("the budget account “tests” has no budget yet") && !std::path::Path::new(&out).exists(), "{}", stderr(&o));
    let mut args = args.to_vec();
    args.extend(["--budget", "10"]);
    let o = dpkps(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("3 documents, 1 empty (skipped), 2 classes"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v["terms"].as_array().unwrap().len(), 20);
    assert_eq!(v["params"]["epsilon"], 1.5);
    assert_eq!(v["public_vocabulary"], "medical");
    // The artefact carries no private counts, nor the labels (as a value: a selected MeSH term
    // such as "Cardiomegaly" may well contain the letters).
    assert!(v.get("stats").is_none() && !String::from_utf8_lossy(&std::fs::read(&out).unwrap()).contains("\"Cardio\""));

    // A second run on the same corpus adds to the ledger (held to the stored budget); a lower
    // budget stops a third.
    let stored: Vec<&str> = args[..args.len() - 2].to_vec();
    assert!(dpkps(&stored).status.success());
    let o = dpkps(&["ledger", "--ledger", &ledger]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("2 run(s), total ε = 3.0000"), "{text}");
    let mut over = stored.clone();
    over.extend(["--budget", "4"]);
    let o = dpkps(&over);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("under the budget account “tests” to 4.5000, above its budget of 4.0000"), "{}", stderr(&o));
    // A raise of the stored budget (10) needs --raise-budget, and is then recorded.
    let mut raise = stored.clone();
    raise.extend(["--budget", "20"]);
    let o = dpkps(&raise);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("has a stored budget of 10; 20 would raise it") && stderr(&o).contains("--raise-budget"), "{}", stderr(&o));
    raise.push("--raise-budget");
    let o = dpkps(&raise);
    assert!(o.status.success(), "{}", stderr(&o));
    let book: serde_json::Value = serde_json::from_slice(&std::fs::read(&ledger).unwrap()).unwrap();
    // Held by the account (every command that records a run names one: $DPKPS_ACCOUNT here).
    let l = &book["accounts"]["tests"];
    assert_eq!(l["budget"], 20.0);
    let changes: Vec<(serde_json::Value, f64)> = l["budget_changes"].as_array().unwrap().iter().map(|c| (c["old"].clone(), c["new"].as_f64().unwrap())).collect();
    assert_eq!(changes, [(serde_json::Value::Null, 10.0), (serde_json::json!(10.0), 20.0)], "{l}");
}

#[test]
fn concurrent_runs_on_one_ledger_lose_no_spend() {
    // Two processes at a time on one ledger: each holds its lock from the read (budget check
    // included) to the write, so neither overwrites the other's run.
    let dir = tmpdir("concurrent");
    let c = corpus(&dir);
    let ledger = dir.join("ledger.json").display().to_string();
    const RUNS: usize = 4;
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let (c, ledger, dir) = (c.clone(), ledger.clone(), dir.to_path_buf());
            std::thread::spawn(move || {
                for i in 0..RUNS {
                    let out = dir.join(format!("vocab-{w}-{i}.json")).display().to_string();
                    let o = dpkps(&[
                        "vocab", "--corpus", &c, "--text-col", "note", "--label-col", "specialty", "--classes", "Cardio,Pulmo",
                        "--vocabulary", "medical", "--eps-voc", "0.5", "--top-n", "5", "--terms-per-doc", "3", "--out", &out,
                        "--ledger", &ledger, "--budget", "100",
                    ]);
                    assert!(o.status.success(), "{}", stderr(&o));
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let o = dpkps(&["ledger", "--ledger", &ledger]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains(&format!("{} run(s), total ε = {:.4}", 2 * RUNS, 0.5 * (2 * RUNS) as f64)), "{text}");
}

#[test]
fn bad_parameters_and_inputs_exit_2_with_plain_words() {
    let dir = tmpdir("errors");
    let c = corpus(&dir);
    let out = dir.join("v.json").display().to_string();
    let ledger = dir.join("l.json").display().to_string();
    let base = |eps: &'static str, top: &'static str, col: &'static str| {
        vec![
            "vocab".to_string(), "--corpus".into(), c.clone(), "--text-col".into(), col.into(), "--eps-voc".into(),
            eps.into(), "--top-n".into(), top.into(), "--out".into(), out.clone(), "--ledger".into(), ledger.clone(),
        ]
    };
    let cases = [
        (base("0", "10", "note"), "ε_voc must be a finite number greater than 0"),
        (base("NaN", "10", "note"), "ε_voc must be a finite number greater than 0"),
        (base("inf", "10", "note"), "ε_voc must be a finite number greater than 0"),
        (base("1", "0", "note"), "N (vocabulary size) must be at least 1"),
        (base("1", "ten", "note"), "invalid value 'ten' for '--top-n <TOP_N>'"),
        (base("1", "10", "text"), "there is no column named \"text\""),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = dpkps(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
    assert!(!std::path::Path::new(&out).exists(), "no output may be written on error");
    assert!(!std::path::Path::new(&ledger).exists(), "nothing may be spent on error");

    let ragged = dir.join("ragged.csv");
    std::fs::write(&ragged, "note,x\nok,1\nbad\n").unwrap();
    let o = dpkps(&["ingest", "--corpus", ragged.to_str().unwrap(), "--text-col", "note"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("line 3 (record 2): this row has 1 fields but the header has 2"), "{}", stderr(&o));
}

#[test]
fn txt_folders_and_jsonl_are_read() {
    let dir = tmpdir("formats");
    let cardio = dir.join("cardio");
    std::fs::create_dir_all(&cardio).unwrap();
    std::fs::write(cardio.join("a.txt"), "Heart failure.").unwrap();
    std::fs::write(cardio.join("b.txt"), "").unwrap();
    let stats = dir.join("stats.json");
    let o = dpkps(&["ingest", "--corpus", cardio.to_str().unwrap(), "--label-from-dir", "--out", stats.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!((s["documents"].as_u64(), s["empty_skipped"].as_u64()), (Some(1), Some(1)));
    assert_eq!(s["classes"]["cardio"], 1);

    let jl = dir.join("c.jsonl");
    std::fs::write(&jl, "{\"t\": \"Asthma and cough\", \"y\": \"p\"}\n").unwrap();
    let m = dir.join("m.jsonl");
    let o = dpkps(&["match", "--corpus", jl.to_str().unwrap(), "--text-col", "t", "--label-col", "y", "--out", m.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let line: serde_json::Value = serde_json::from_str(std::fs::read_to_string(&m).unwrap().trim()).unwrap();
    assert_eq!(line["terms"], serde_json::json!(["Asthma", "Cough"]));
    // Exact counts and per-document matches are private: their owner's only, whatever the umask.
    #[cfg(unix)]
    assert_eq!((mode(&stats), mode(&m)), (0o600, 0o600));
}

#[test]
fn pipeline_writes_sequences_release_and_ledger_then_sample_costs_nothing() {
    let dir = tmpdir("pipeline");
    let mut csv = String::from("note,specialty\n");
    for k in 0..60 {
        let (text, label) = if k % 2 == 0 {
            ("Congestive heart failure, hypertension and chest pain; atrial fibrillation on warfarin.", "Cardio")
        } else {
            ("Asthma with cough and pneumonia; dyspnea treated with albuterol.", "Pulmo")
        };
        csv.push_str(&format!("\"{text} Visit {k}.\",{label}\n"));
    }
    let c = dir.join("notes.csv");
    std::fs::write(&c, csv).unwrap();
    let ledger = dir.join("ledger.json").display().to_string();
    let out = dir.join("out");
    let o = dpkps(&[
        "pipeline", "--budget", "100", "--corpus", c.to_str().unwrap(), "--text-col", "note", "--label-col", "specialty",
        "--classes", "Cardio,Pulmo", "--vocabulary", "medical", "--eps-voc", "1", "--top-n", "30", "--terms-per-doc", "5",
        "--eps-kde", "5", "--sampler", "iterative-log", "--len", "4", "--per-class", "7", "--eps-counts", "off",
        "--ledger", &ledger, "--out-dir", out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let seqs = std::fs::read_to_string(out.join("sequences.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = seqs.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 14, "7 per class, 2 classes");
    let vocab: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("vocabulary.json")).unwrap()).unwrap();
    let allowed: Vec<&str> = vocab["terms"].as_array().unwrap().iter().map(|t| t["term"].as_str().unwrap()).collect();
    for l in &lines {
        let k = l["keyphrases"].as_array().unwrap();
        assert_eq!(k.len(), 4);
        assert!(k.iter().all(|t| allowed.contains(&t.as_str().unwrap())), "{l}");
        assert!(["Cardio", "Pulmo"].contains(&l["label"].as_str().unwrap()));
    }
    let o = dpkps(&["ledger", "--ledger", &ledger]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("total ε = 6.0000"), "{}", String::from_utf8_lossy(&o.stdout));
    // The ledger, its lock and the run's entry record the corpus's use: their owner's only.
    #[cfg(unix)]
    assert_eq!(
        [&ledger, &format!("{ledger}.lock")].map(|p| mode(std::path::Path::new(p))).into_iter().chain([mode(&out.join("run.json"))]).collect::<Vec<_>>(),
        [0o600; 3]
    );

    // More sequences from the saved release: no new ledger entry.
    let more = dir.join("more.jsonl");
    let o = dpkps(&["sample", "--release", out.join("release.json").to_str().unwrap(), "--per-class", "3", "--out", more.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&more).unwrap().lines().count(), 6);
    let o = dpkps(&["ledger", "--ledger", &ledger]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 run(s), total ε = 6.0000"));
}

/// A corpus of `n` notes alternating Cardio/Pulmo, plus `extra` rows.
fn two_class_corpus(dir: &std::path::Path, name: &str, n: usize, extra: &str) -> String {
    let mut csv = String::from("note,specialty\n");
    for k in 0..n {
        let (text, label) = if k % 2 == 0 {
            ("Congestive heart failure, hypertension and chest pain; atrial fibrillation on warfarin.", "Cardio")
        } else {
            ("Asthma with cough and pneumonia; dyspnea treated with albuterol.", "Pulmo")
        };
        csv.push_str(&format!("\"{text} Visit {k}.\",{label}\n"));
    }
    csv.push_str(extra);
    let c = dir.join(name);
    std::fs::write(&c, csv).unwrap();
    c.display().to_string()
}

#[test]
fn the_class_set_is_declared_and_an_undeclared_label_changes_nothing_in_the_release_shape() {
    let dir = tmpdir("classes");
    let ledger = dir.join("ledger.json").display().to_string();
    let d = two_class_corpus(&dir, "d.csv", 40, "");
    // D′ = D plus one document whose label is new and rare (a private value).
    let d2 = two_class_corpus(&dir, "d2.csv", 40, "\"Rare syndrome of the heart.\",Zebra-Clinic-17\n");

    // Without a declared class set, a labelled release is refused, with why.
    let o = dpkps(&["vocab", "--corpus", &d, "--text-col", "note", "--label-col", "specialty", "--eps-voc", "1", "--out", dir.join("v.json").to_str().unwrap(), "--ledger", &ledger]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--classes") && stderr(&o).contains("public"), "{}", stderr(&o));

    // Neuro has no document: its release is noise, and a noise-only class is read as signal
    // with probability ALPHA = 1e-3 per release (sample::signal; measured 28 and 12 in 20,000
    // on this shape). Six releases below: at most one may pass as signal (P(≥ 2) ≈ 1.5e-5),
    // so the test states the flag's guarantee, not one draw of it.
    let mut neuro_passed = Vec::new();
    for sampler in ["histogram", "markov", "independent"] {
        let mut shapes = Vec::new();
        for (k, c) in [&d, &d2].into_iter().enumerate() {
            let out = dir.join(format!("out-{sampler}-{k}"));
            let o = dpkps(&[
                "pipeline", "--budget", "1000", "--corpus", c, "--text-col", "note", "--label-col", "specialty", "--classes", "Cardio,Pulmo,Neuro",
                "--vocabulary", "medical", "--eps-voc", "1", "--top-n", "20", "--eps-kde", "5", "--sampler", sampler,
                "--len", "4", "--per-class", "5", "--features", "64", "--ledger", &ledger, "--out-dir", out.to_str().unwrap(),
                // Every draw kept: distinct sets would leave a class of few terms fewer than 5.
                "--distinct-sets", "false",
            ]);
            assert!(o.status.success(), "{}", stderr(&o));
            let rel: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("release.json")).unwrap()).unwrap();
            let classes: Vec<String> = rel["kde"]["classes"].as_array().unwrap().iter().map(|c| c["label"].as_str().unwrap().to_string()).collect();
            let widths: Vec<Vec<usize>> = rel["kde"]["classes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["sums"].as_array().unwrap().iter().map(|m| m.as_array().unwrap().len()).collect())
                .collect();
            let seqs = std::fs::read_to_string(out.join("sequences.jsonl")).unwrap();
            // The undeclared label itself: the public list holds "Zebrafish", which noise may select.
            assert!(!seqs.contains("Zebra-Clinic") && !std::fs::read_to_string(out.join("release.json")).unwrap().contains("Zebra-Clinic"));
            assert_eq!(seqs.lines().count(), 15, "5 per declared class on average, 3 classes");
            // Neuro's release is noise, flagged in the report and on its sequences (which
            // generation leaves out by default). (At ε_voc = 1 over MeSH's 28,000 terms most
            // of this small corpus's Ṽ is noise too, so Pulmo may be flagged.)
            let report: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("privacy-report.json")).unwrap()).unwrap();
            let flagged: Vec<&str> = report["noise_dominated"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
            if !flagged.contains(&"Neuro") {
                neuro_passed.push(format!("{sampler}: {}", report["class_signals"]));
            }
            for l in seqs.lines() {
                let l: serde_json::Value = serde_json::from_str(l).unwrap();
                assert_eq!(l["noise_dominated"] == true, flagged.contains(&l["label"].as_str().unwrap()), "{sampler}: {l}");
            }
            assert!(std::fs::read_to_string(out.join("privacy-report.html")).unwrap().contains("Signal per class"));
            shapes.push((classes, widths, rel["vocabulary"]["terms"].as_array().unwrap().len()));
        }
        // The declared class with no document (Neuro) is released too: noise only.
        assert_eq!(shapes[0].0, vec!["Cardio", "Pulmo", "Neuro"], "{sampler}");
        assert_eq!(shapes[0], shapes[1], "{sampler}: neighbouring corpora must give releases of the same shape");
    }
    assert!(neuro_passed.len() <= 1, "Neuro (no document) read as signal in more than one of six releases: {neuro_passed:#?}");
}

#[test]
fn pipeline_records_each_spend_before_writing_what_it_paid_for() {
    let dir = tmpdir("ordering");
    let c = two_class_corpus(&dir, "c.csv", 20, "");
    let ledger = dir.join("ledger.json").display().to_string();
    let out = dir.join("out");
    // The model fails to load after the DP vocabulary was drawn: ε_voc must be on record.
    let o = dpkps(&[
        "pipeline", "--budget", "100", "--corpus", &c, "--text-col", "note", "--label-col", "specialty", "--classes", "Cardio,Pulmo",
        "--vocabulary", "medical", "--eps-voc", "0.7", "--top-n", "20", "--eps-kde", "5",
        "--model", dir.join("missing.onnx").to_str().unwrap(), "--ledger", &ledger, "--out-dir", out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = dpkps(&["ledger", "--ledger", &ledger]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("1 run(s), total ε = 0.7000"), "{text}");
    assert!(out.join("vocabulary.json").exists() && !out.join("release.json").exists());
}

#[test]
fn reordered_rows_keep_the_key_and_an_account_budget_spans_extracts() {
    let dir = tmpdir("account");
    let ledger = dir.join("ledger.json").display().to_string();
    let write = |name: &str, rows: &[usize]| {
        let p = dir.join(name);
        let body: String = rows.iter().map(|i| format!("{i},\"Heart failure and chest pain, note {i}.\"\n")).collect();
        std::fs::write(&p, format!("id,note\n{body}")).unwrap();
        p.display().to_string()
    };
    let first = write("first.csv", &(0..30).collect::<Vec<_>>());
    // The same rows in another order: the same key, so the ledger adds up.
    let reordered = write("reordered.csv", &(0..30).rev().collect::<Vec<_>>());
    // A later extract: 25 of the same notes and 5 new ones (a new key, but the same dataset).
    let later = write("later.csv", &(5..35).collect::<Vec<_>>());
    let vocab = |c: &str, extra: &[&str]| {
        let mut a = vec![
            "vocab", "--corpus", c, "--text-col", "note", "--vocabulary", "medical", "--eps-voc", "1", "--top-n", "5",
            "--out", "/dev/null", "--ledger", &ledger,
        ];
        a.extend_from_slice(extra);
        let a: Vec<String> = a.iter().map(|s| s.to_string()).collect();
        Command::new(env!("CARGO_BIN_EXE_dpkps")).args(&a).output().unwrap()
    };
    let o = vocab(&first, &["--account", "clinic", "--budget", "2.5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // `--out /dev/null` writes into the device: an atomic rename would have replaced it with a
    // regular file holding the release (as root), which later readers of /dev/null then read.
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let null = std::fs::metadata("/dev/null").unwrap().file_type();
        assert!(null.is_char_device(), "/dev/null is no longer a device: {null:?}");
    }
    // Every command that records a run requires an account: none is refused before anything is read.
    let o = vocab(&reordered, &["--budget", "10"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--account"), "{}", stderr(&o));
    let o = vocab(&reordered, &["--account", "clinic"]);
    assert!(stderr(&o).contains("this corpus has spent ε = 1.0000 before"), "{}", stderr(&o));
    // Under the account: the overlap is flagged, and the account's budget (2.5, stored) refuses
    // a third ε = 1 although this extract's own key has spent nothing.
    let o = vocab(&later, &["--account", "clinic"]);
    let err = stderr(&o);
    assert!(err.contains("overlaps an earlier corpus of the account “clinic”"), "{err}");
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("above its budget of 2.5000"), "{err}");
    // Under another account the overlapping corpus of “clinic” still counts: its people carry
    // that ε too.
    for extra in [&["--account", "research", "--budget", "2.5"][..], &["--account", "third", "--budget", "2.5"]] {
        let o = vocab(&later, extra);
        let err = stderr(&o);
        assert!(err.contains("overlaps a corpus of the account “clinic”"), "{extra:?}: {err}");
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains("would bring the total ε") && err.contains("to 3.0000"), "{extra:?}: {err}");
    }
    // With room in its own budget it is still refused: clinic's budget covers these documents.
    let o = vocab(&later, &["--account", "fourth", "--budget", "3"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("under the budget account “clinic” to 3.0000"), "{}", stderr(&o));
    // Once clinic's budget is raised (confirmed, recorded) there is room in both: it runs.
    let o = vocab(&first, &["--account", "clinic", "--budget", "4", "--raise-budget"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = vocab(&later, &["--account", "fifth", "--budget", "5"]);
    assert!(o.status.success(), "{}", stderr(&o));

    // The corpus keys and sketches are keyed with the ledger's local secret (issue 25, item 5):
    // a 0600 key file beside the ledger, never in it or in an export.
    let key_file = format!("{ledger}.key");
    let secret = std::fs::read_to_string(&key_file).unwrap();
    assert_eq!(secret.trim().len(), 64);
    #[cfg(unix)]
    assert_eq!(mode(std::path::Path::new(&key_file)), 0o600);
    let shown = |c: &str| String::from_utf8_lossy(&dpkps(&["ledger", "--ledger", &ledger, "--corpus", c, "--text-col", "note"]).stdout).into_owned();
    assert!(shown(&first).contains("3 run(s), total ε = 3.0000"), "{}", shown(&first));
    // Without the key, the same corpus is not found: the ledger's key for it depends on the secret.
    std::fs::rename(&key_file, format!("{key_file}.aside")).unwrap();
    assert!(shown(&first).contains("0 run(s)"), "{}", shown(&first));
    // ... and a run is refused rather than given a new key (its spends would stop counting).
    let o = vocab(&first, &["--account", "clinic"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("was keyed with a key file") && !std::path::Path::new(&key_file).exists(), "{}", stderr(&o));
    std::fs::rename(format!("{key_file}.aside"), &key_file).unwrap();
    // An export: runs, ε, budgets and accounts; the sketches only when asked; never the key.
    for (with, sketched) in [(false, false), (true, true)] {
        let out = dir.join(format!("export-{with}.json"));
        let mut args = vec!["ledger", "--ledger", &ledger, "--export", out.to_str().unwrap()];
        if with {
            args.push("--with-sketches");
        }
        assert!(dpkps(&args).status.success());
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(!text.contains(secret.trim()), "the secret is never exported");
        let book: serde_json::Value = serde_json::from_str(&text).unwrap();
        let corpora = book["accounts"]["clinic"]["corpora"].as_array().unwrap();
        assert!(!corpora.is_empty() && book["ledgers"].as_object().unwrap().len() == 2, "{book}");
        assert!(corpora.iter().all(|c| c["sketch"]["values"].as_array().unwrap().is_empty() != sketched && c["key"] == ""), "{with}: {corpora:?}");
    }
}

#[test]
fn sequences_reads_a_given_vocabulary_only_where_its_epsilon_is_on_record() {
    let dir = tmpdir("given");
    let c = two_class_corpus(&dir, "c.csv", 40, "");
    let ledger = dir.join("ledger.json").display().to_string();
    let other = dir.join("other-ledger.json").display().to_string();
    let v = dir.join("v.json").display().to_string();
    let common = ["--corpus", &c, "--text-col", "note", "--label-col", "specialty", "--classes", "Cardio,Pulmo", "--vocabulary", "medical"];
    let mut vocab = vec!["vocab"];
    vocab.extend(common);
    vocab.extend(["--eps-voc", "0.7", "--top-n", "20", "--out", &v, "--ledger", &ledger, "--budget", "100"]);
    let o = dpkps(&vocab);
    assert!(o.status.success(), "{}", stderr(&o));
    let seq = |ledger: &str, out: &str| {
        let mut a = vec!["sequences"];
        a.extend(common);
        // Every draw kept (distinct sets would give a class of few terms fewer than 5).
        a.extend(["--private-vocab", &v, "--eps-kde", "2", "--per-class", "5", "--ledger", ledger, "--out", out, "--budget", "100", "--distinct-sets", "false"]);
        dpkps(&a)
    };
    // Another ledger never recorded its ε_voc: refused, nothing recorded there.
    let out1 = dir.join("s1.jsonl").display().to_string();
    let o = seq(&other, &out1);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("no run in this ledger paid ε_voc = 0.7"), "{}", stderr(&o));
    assert!(!std::path::Path::new(&out1).exists());
    let o = dpkps(&["ledger", "--ledger", &other]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("run(s)"), "{}", String::from_utf8_lossy(&o.stdout));
    // The same file edited (a term picked by hand, `released_by` removed): not the release
    // the ledger paid for, so refused although a run here paid as much ε_voc.
    let released = std::fs::read_to_string(&v).unwrap();
    let mut edited: serde_json::Value = serde_json::from_str(&released).unwrap();
    edited["terms"][0]["noisy_count"] = serde_json::json!(edited["terms"][0]["noisy_count"].as_i64().unwrap() + 50);
    edited.as_object_mut().unwrap().remove("released_by");
    std::fs::write(&v, edited.to_string()).unwrap();
    let o = seq(&ledger, &out1);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("for this private vocabulary of this corpus") && stderr(&o).contains("edited after its release"), "{}", stderr(&o));
    assert!(!std::path::Path::new(&out1).exists());
    std::fs::write(&v, released).unwrap();
    // The ledger that paid for it: the run names the paying run; the report counts its ε_voc.
    let out2 = dir.join("s2.jsonl");
    let o = seq(&ledger, out2.to_str().unwrap());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&out2).unwrap().lines().count(), 10);
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("s2.privacy-report.json")).unwrap()).unwrap();
    assert!((report["epsilon_run"].as_f64().unwrap() - 2.1).abs() < 1e-9, "{report}");
    assert!((report["epsilon_outputs"].as_f64().unwrap() - 2.8).abs() < 1e-9, "{report}");
    let book: serde_json::Value = serde_json::from_slice(&std::fs::read(&ledger).unwrap()).unwrap();
    let runs: Vec<&serde_json::Value> = book["ledgers"].as_object().unwrap().values().flat_map(|l| l["runs"].as_array().unwrap()).collect();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["vocabulary_from"], runs[0]["id"], "{book}");
    assert!(dir.join("s2.privacy-report.html").exists());
}

/// N covering the public list: `vocab` writes the list itself and records nothing, `sequences`
/// uses the list with no paying run whatever file it is given, and a file marked whole whose N
/// does not cover the list is refused.
#[test]
fn a_vocabulary_covering_the_list_is_the_list_and_costs_nothing() {
    let dir = tmpdir("whole-list");
    let c = two_class_corpus(&dir, "c.csv", 40, "");
    let ledger = dir.join("ledger.json").display().to_string();
    let list = dir.join("terms.txt");
    std::fs::write(&list, "chest pain\natrial fibrillation\nasthma\ncough\nfracture\n").unwrap();
    let list = list.display().to_string();
    let v = dir.join("v.json").display().to_string();
    let common = ["--corpus", &c, "--text-col", "note", "--label-col", "specialty", "--classes", "Cardio,Pulmo", "--vocabulary", &list];
    let mut vocab = vec!["vocab"];
    vocab.extend(common);
    vocab.extend(["--eps-voc", "0.7", "--out", &v, "--ledger", &ledger, "--budget", "100"]);
    let o = dpkps(&vocab);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("the whole list (5 terms), drawn from nothing, no ε_voc spent"), "{}", stderr(&o));
    let pv: serde_json::Value = serde_json::from_slice(&std::fs::read(&v).unwrap()).unwrap();
    assert_eq!(pv["whole_list"], true, "{pv}");
    let terms: Vec<&str> = pv["terms"].as_array().unwrap().iter().map(|t| t["term"].as_str().unwrap()).collect();
    assert_eq!(terms, ["chest pain", "atrial fibrillation", "asthma", "cough", "fracture"], "the list in its order");
    assert!(pv["terms"].as_array().unwrap().iter().all(|t| t.get("noisy_count").is_none()), "no noisy count: {pv}");
    assert!(!std::path::Path::new(&ledger).exists() || !std::fs::read_to_string(&ledger).unwrap().contains("vocabulary"), "nothing recorded");
    let seq = |out: &str| {
        let mut a = vec!["sequences"];
        a.extend(common);
        a.extend(["--private-vocab", &v, "--eps-kde", "2", "--per-class", "5", "--ledger", &ledger, "--out", out, "--budget", "100", "--distinct-sets", "false"]);
        dpkps(&a)
    };
    let out = dir.join("s.jsonl");
    let o = seq(out.to_str().unwrap());
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("s.privacy-report.json")).unwrap()).unwrap();
    assert!((report["epsilon_outputs"].as_f64().unwrap() - 2.1).abs() < 1e-9, "ε_kde + ε_counts only: {report}");
    assert!(report["guarantee"].as_str().unwrap().contains("the whole public list (5 terms"), "{report}");
    // Whatever file is given, N covering the list makes Ṽ the list: a hand-picked subset, or one
    // drawn (noisy counts, a paying run named) before this rule, is not read.
    for edit in ["subset", "drawn"] {
        let mut edited = pv.clone();
        if edit == "subset" {
            edited["terms"].as_array_mut().unwrap().truncate(2);
        } else {
            edited["whole_list"] = serde_json::json!(false);
            edited["released_by"] = serde_json::json!({ "run": "0123456789abcdef" });
            for (k, t) in edited["terms"].as_array_mut().unwrap().iter_mut().enumerate() {
                t["noisy_count"] = serde_json::json!(40 - k as i64);
            }
        }
        std::fs::write(&v, edited.to_string()).unwrap();
        let name = format!("s-{edit}.jsonl");
        let o = seq(dir.join(&name).to_str().unwrap());
        assert!(o.status.success(), "{edit}: {}", stderr(&o));
        let report: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join(format!("s-{edit}.privacy-report.json"))).unwrap()).unwrap();
        assert!((report["epsilon_outputs"].as_f64().unwrap() - 2.1).abs() < 1e-9 && report.get("vocabulary_from").is_none(), "{edit}: {report}");
    }
    // A file that says it is the whole list with an N below the list's size: refused.
    let mut edited = pv.clone();
    edited["params"]["top_n"] = serde_json::json!(2);
    std::fs::write(&v, edited.to_string()).unwrap();
    let o = seq(dir.join("s2.jsonl").to_str().unwrap());
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("says it is the whole public list, but its N (2) does not cover"), "{}", stderr(&o));
}

/// A person column: the run's report, ledger entry and the page's words say the privacy unit is
/// the person; a document without a person is refused with its line; and a private vocabulary
/// released per document is not taken as paid for by a run per person.
#[test]
fn a_person_column_makes_the_person_the_privacy_unit() {
    let dir = tmpdir("persons");
    let ledger = dir.join("ledger.json").display().to_string();
    let mut csv = String::from("note,specialty,patient\n");
    for k in 0..30 {
        let (text, label) = if k % 2 == 0 { ("Chest pain and atrial fibrillation.", "Cardio") } else { ("Asthma with cough.", "Pulmo") };
        // Seven patients, four or five notes each, in both classes.
        csv.push_str(&format!("\"{text} Visit {k}.\",{label},p{}\n", k % 7));
    }
    let c = dir.join("c.csv");
    std::fs::write(&c, &csv).unwrap();
    let c = c.display().to_string();
    let base = ["--corpus", &c, "--text-col", "note", "--label-col", "specialty", "--classes", "Cardio,Pulmo", "--ledger", &ledger, "--budget", "100"];
    let out = dir.join("out");
    let mut args = vec!["pipeline", "--person-col", "patient"];
    args.extend(base);
    args.extend(["--eps-voc", "1", "--top-n", "20", "--eps-kde", "2", "--sampler", "histogram", "--len", "3", "--per-class", "4", "--out-dir", out.to_str().unwrap()]);
    let o = dpkps(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("privacy-report.json")).unwrap()).unwrap();
    assert_eq!(report["privacy_unit"], "person (column “patient”)");
    assert!(report["neighbouring_relation"].as_str().unwrap().contains("one person's documents"), "{}", report["neighbouring_relation"]);
    assert!(std::fs::read_to_string(out.join("privacy-report.html")).unwrap().contains("(per person)."));
    let book = std::fs::read_to_string(&ledger).unwrap();
    assert!(book.contains("\"person_column\": \"patient\"") || book.contains("\"person_column\":\"patient\""), "{book}");

    // The same corpus without the column: per document, and the report says what that means.
    let out2 = dir.join("out2");
    let mut args = vec!["pipeline"];
    args.extend(base);
    args.extend(["--eps-voc", "1", "--top-n", "20", "--eps-kde", "2", "--sampler", "histogram", "--len", "3", "--per-class", "4", "--out-dir", out2.to_str().unwrap()]);
    let o = dpkps(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(out2.join("privacy-report.json")).unwrap()).unwrap();
    assert_eq!(report["privacy_unit"], "document");
    assert!(report["neighbouring_relation"].as_str().unwrap().contains("k·ε"));

    // Ṽ released per document (`vocab` without the column) is not taken as paid for by a run
    // per person, although this ledger holds a run per person that paid as much ε_voc (the
    // pipeline above): Ṽ names the run that released it, and its unit.
    let v = dir.join("v.json");
    let mut args = vec!["vocab"];
    args.extend(base);
    args.extend(["--eps-voc", "1", "--top-n", "20", "--out", v.to_str().unwrap()]);
    assert!(dpkps(&args).status.success());
    let mut args = vec!["sequences", "--person-col", "patient", "--private-vocab", v.to_str().unwrap()];
    args.extend(base);
    let s_out = dir.join("s.jsonl");
    args.extend(["--eps-kde", "2", "--sampler", "histogram", "--len", "3", "--per-class", "4", "--out", s_out.to_str().unwrap()]);
    let o = dpkps(&args);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("this private vocabulary was released per document, and this run is per person"), "{}", stderr(&o));
    let released: serde_json::Value = serde_json::from_slice(&std::fs::read(&v).unwrap()).unwrap();
    assert!(released["released_by"]["run"].as_str().is_some_and(|id| id.len() == 16), "{released}");

    // A document without a person: refused, located.
    std::fs::write(dir.join("bad.csv"), "note,specialty,patient\nChest pain.,Cardio,p1\nCough.,Pulmo,\n").unwrap();
    let bad = dir.join("bad.csv").display().to_string();
    let o = dpkps(&["vocab", "--corpus", &bad, "--text-col", "note", "--label-col", "specialty", "--person-col", "patient", "--classes", "Cardio,Pulmo", "--eps-voc", "1", "--out", dir.join("v2.json").to_str().unwrap(), "--ledger", &ledger]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("line 3: no person in \"patient\""), "{}", stderr(&o));
}

/// `dpkps check` (issue 25 item 3): held to the budget and recorded like a run; a run that says
/// its sampler was chosen by a check must name one on record that chose it, and says so.
#[test]
fn a_dp_utility_check_is_paid_for_and_a_run_chosen_by_it_says_so() {
    let dir = tmpdir("check");
    let c = two_class_corpus(&dir, "notes.csv", 80, "");
    let ledger = dir.join("ledger.json").display().to_string();
    let common = [
        "--corpus", &c, "--text-col", "note", "--label-col", "specialty", "--classes", "Cardio,Pulmo", "--vocabulary",
        "medical", "--eps-voc", "1", "--top-n", "30", "--terms-per-doc", "5", "--eps-kde", "5", "--len", "4", "--per-class",
        "7", "--eps-counts", "off", "--ledger", &ledger,
    ];
    let check = |extra: &[&str]| {
        let mut a = vec!["check", "--compare", "histogram,iterative-linear"];
        a.extend_from_slice(&common);
        a.extend_from_slice(extra);
        dpkps(&a)
    };
    let total = || String::from_utf8_lossy(&dpkps(&["ledger", "--ledger", &ledger]).stdout).into_owned();
    // 1 + 2 × 5 = 11 > 10: refused before anything is read into a release.
    let o = check(&["--budget", "10"]);
    assert!(!o.status.success() && stderr(&o).contains("budget"), "{}", stderr(&o));
    assert!(!total().contains("utility check"), "{}", total());
    // Refused from public inputs (here a Markov release of 2 × 41 × 40 counts does fit; a
    // repeated sampler does not): before anything is recorded.
    let mut a = vec!["check", "--compare", "histogram,histogram", "--budget", "30"];
    a.extend_from_slice(&common);
    let o = dpkps(&a);
    assert!(!o.status.success() && stderr(&o).contains("must not repeat a sampler"), "{}", stderr(&o));
    assert!(!total().contains("utility check"), "{}", total());

    let result = dir.join("check.json");
    let o = check(&["--budget", "30", "--out", result.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("(ε = 11.0000: training side 11.0000, scores 11.0000; 20% held out") && out.contains("  histogram") && out.contains("  iterative-linear"), "{out}");
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(&result).unwrap()).unwrap();
    let id = written["check"].as_str().unwrap().to_string();
    let chosen = written["result"]["chosen"].as_str().unwrap().to_string();
    assert!(out.contains(&format!("chosen: {chosen}; run it with --sampler {chosen} --from-check {id}")), "{out}");
    assert_eq!(written["result"]["arms"].as_array().unwrap().len(), 2);
    assert!(total().contains("utility check: ε = 11.0000") && total().contains("total ε = 11.0000"), "{}", total());

    let pipeline = |sampler: &str, from: &str, out_dir: &std::path::Path| {
        let mut a = vec!["pipeline", "--sampler", sampler, "--from-check", from, "--out-dir", out_dir.to_str().unwrap()];
        a.extend_from_slice(&common);
        dpkps(&a)
    };
    // Another sampler than the check chose, or a check the ledger does not hold: refused, nothing spent.
    let other = if chosen == "histogram" { "iterative-linear" } else { "histogram" };
    let o = pipeline(other, &id, &dir.join("no1"));
    assert!(!o.status.success() && stderr(&o).contains(&format!("chose the sampler \"{chosen}\"")), "{}", stderr(&o));
    let o = pipeline(&chosen, "0123456789abcdef", &dir.join("no2"));
    assert!(!o.status.success() && stderr(&o).contains("does not hold"), "{}", stderr(&o));
    assert!(total().contains("1 run(s), total ε = 11.0000"), "{}", total());

    let run = dir.join("run");
    let o = pipeline(&chosen, &id, &run);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(run.join("privacy-report.json")).unwrap()).unwrap();
    assert_eq!(report["settings_chosen_by"], serde_json::json!({ "check": id, "sampler": chosen, "epsilon": 11.0 }));
    let html = std::fs::read_to_string(run.join("privacy-report.html")).unwrap();
    assert!(html.contains(&format!("was chosen by the DP utility check {id}")) && html.contains("ε = 17.0000"), "{html}");
    assert!(total().contains("2 run(s), total ε = 17.0000"), "{}", total());
    // A run that takes the check's choice without naming it: its report says a check is on record.
    let quiet = dir.join("quiet");
    let mut a = vec!["pipeline", "--sampler", &chosen, "--out-dir", quiet.to_str().unwrap()];
    a.extend_from_slice(&common);
    let o = dpkps(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(quiet.join("privacy-report.json")).unwrap()).unwrap();
    assert_eq!(report["dp_checks_on_this_corpus"], 1, "{report}");
    let html = std::fs::read_to_string(quiet.join("privacy-report.html")).unwrap();
    assert!(html.contains("The run names no DP utility check, but 1 DP utility check(s) are on record for this corpus"), "{html}");
}

fn tmpdir(name: &str) -> super::common::Scratch {
    super::common::tmpdir("cli", name)
}
