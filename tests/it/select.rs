//! `dpkps select`, the DP vote over generated candidates, through the binary: what it writes,
//! what the ledger records (stage "vote", before anything is drawn), the person unit, the
//! subsampled vote's smaller charge, and a refusal over budget that writes nothing.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use super::common::{dpkps, stderr};

const TOPICS: [(&str, &str); 3] = [
    ("Cardio", "heart failure with chest pain, an irregular heartbeat on the electrocardiogram and high blood pressure"),
    ("Pulmo", "asthma with a wheezing cough, shortness of breath and a chest x-ray showing pneumonia"),
    ("Ortho", "a fractured wrist after a fall, knee swelling and pain in the lower back on bending"),
];

/// 20 notes per class, each on its class's topic; persons of two notes, both in one class.
fn corpus(dir: &Path) -> String {
    let mut s = String::from("note,specialty,patient\n");
    for i in 0..60 {
        let (class, topic) = TOPICS[i % 3];
        s.push_str(&format!("\"Patient seen on visit {i} for {topic}.\",{class},p{}\n", (i / 6) * 3 + i % 3));
    }
    let p = dir.join("notes.csv");
    std::fs::write(&p, s).unwrap();
    p.display().to_string()
}

/// Per class, four candidates: two on the class's topic, two about something else entirely.
fn candidates(dir: &Path) -> String {
    let mut s = String::new();
    for (class, topic) in TOPICS {
        for k in 0..2 {
            s.push_str(&serde_json::json!({"text": format!("The patient came in with {topic} (case {k})."), "label": class, "keyphrases": []}).to_string());
            s.push('\n');
        }
        for off in ["A recipe for lemon cake with sugar and butter.", "The football match ended in a draw after extra time."] {
            s.push_str(&serde_json::json!({"text": off, "label": class, "keyphrases": []}).to_string());
            s.push('\n');
        }
    }
    s.push_str(&serde_json::json!({"text": "not a declared class", "label": "Derm"}).to_string());
    s.push('\n');
    let p = dir.join("synthetic.jsonl");
    std::fs::write(&p, s).unwrap();
    p.display().to_string()
}

fn select(c: &str, gen: &str, ledger: &str, out: &Path, extra: &[&str]) -> Output {
    let out = out.display().to_string();
    let mut args = vec![
        "select", "--corpus", c, "--text-col", "note", "--label-col", "specialty", "--classes", "Cardio,Pulmo,Ortho", "--generated", gen,
        "--ledger", ledger, "--out-dir", &out,
    ];
    args.extend_from_slice(extra);
    dpkps(&args)
}

fn vote_spends(ledger: &str) -> Vec<Value> {
    let book: Value = serde_json::from_slice(&std::fs::read(ledger).unwrap()).unwrap();
    let mut out = Vec::new();
    for l in book["ledgers"].as_object().unwrap().values() {
        for r in l["runs"].as_array().unwrap() {
            out.extend(r["spends"].as_array().unwrap().iter().filter(|s| s["stage"] == "vote").cloned());
        }
    }
    out
}

#[test]
fn select_keeps_the_candidates_the_private_notes_vote_for_and_records_the_vote() {
    let dir = tmpdir("vote");
    let (c, gen) = (corpus(&dir), candidates(&dir));
    let ledger = dir.join("ledger.json").display().to_string();
    let out = dir.join("out");

    // A bare file of candidates is no run's generated documents: refused unless acknowledged.
    let o = select(&c, &gen, &ledger, &out, &["--eps-select", "4", "--keep", "2", "--budget", "20"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--unrecorded-candidates"), "{}", stderr(&o));
    assert!(!out.join("kept.jsonl").exists() && !std::path::Path::new(&ledger).exists());
    // A folder as `generate` writes it from a run: synthetic.jsonl beside a run's privacy report.
    let run = dir.join("run");
    let o = dpkps(&[
        "pipeline", "--corpus", &c, "--text-col", "note", "--label-col", "specialty", "--classes", "Cardio,Pulmo,Ortho", "--eps-voc", "1",
        "--top-n", "10", "--eps-kde", "2", "--len", "3", "--per-class", "2", "--eps-counts", "off", "--budget", "100",
        "--ledger", dir.join("run-ledger.json").to_str().unwrap(), "--out-dir", run.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let folder = dir.join("generated");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(&gen, folder.join("synthetic.jsonl")).unwrap();
    std::fs::copy(run.join("privacy-report.json"), folder.join("privacy-report.json")).unwrap();
    let (bare, gen) = (gen.clone(), folder.display().to_string());

    // Over the budget: refused before anything is drawn or written.
    let o = select(&c, &gen, &ledger, &out, &["--eps-select", "8", "--keep", "2", "--budget", "5"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!out.join("kept.jsonl").exists());

    let o = select(&c, &gen, &ledger, &out, &["--eps-select", "4", "--candidates-per-kept", "2", "--budget", "20"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("left out 1 candidate(s) of no declared class"), "{}", stderr(&o));
    let kept: Vec<Value> = std::fs::read_to_string(out.join("kept.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(kept.len(), 6, "one kept per two candidates, per class");
    // At ε = 4 the 20 notes of each class outvote the noise: the on-topic candidates are kept.
    let on_topic = kept.iter().filter(|k| k["text"].as_str().unwrap().starts_with("The patient came in")).count();
    assert!(on_topic >= 5, "{kept:?}");
    let report: Value = serde_json::from_slice(&std::fs::read(out.join("vote-report.json")).unwrap()).unwrap();
    let classes = report["vote"]["classes"].as_array().unwrap();
    assert_eq!(classes.len(), 3);
    for c in classes {
        assert_eq!(c["candidates"], 4);
        assert_eq!(c["noisy_votes"].as_array().unwrap().len(), 4);
        assert!(c["share_captured"].as_f64().unwrap() > 0.5, "{c}");
        assert!(c.get("drew_none").is_some());
    }
    assert_eq!(report["vote"]["privacy_unit"], "document");
    assert_eq!(report["candidates_from"]["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(report["candidates_from"]["provenance"], "a run's generated documents");
    let spends = vote_spends(&ledger);
    assert_eq!(spends.len(), 3, "one spend per class, in parallel");
    assert!(spends.iter().all(|s| s["epsilon"] == 4.0 && s["scope"]["kind"] == "partition"));
    let o = dpkps(&["ledger", "--ledger", &ledger]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("vote: ε = 4.0000") && text.contains("total ε = 4.0000"), "{text}");

    // Tied to its run (--run): refused unless the run is on record for this corpus, read with
    // the same unit (this ledger has no run; the run's own ledger has it, per document).
    let out3 = dir.join("out3");
    let run_dir = run.display().to_string();
    let o = select(&c, &gen, &ledger, &out3, &["--eps-select", "1", "--keep", "1", "--run", &run_dir]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is not on record for the loaded corpus"), "{}", stderr(&o));
    let run_ledger = dir.join("run-ledger.json").display().to_string();
    let o = select(&c, &gen, &run_ledger, &out3, &["--eps-select", "1", "--keep", "1", "--run", &run_dir, "--person-col", "patient"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("and it is loaded with the person column “patient”"), "{}", stderr(&o));
    // A vote's folder (its run.json is the vote's run) is not the run the documents came from.
    let o = select(&c, &gen, &run_ledger, &out3, &["--eps-select", "1", "--keep", "1", "--run", &out.display().to_string()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("were generated from the run"), "{}", stderr(&o));
    assert!(!out3.join("kept.jsonl").exists() && vote_spends(&run_ledger).is_empty(), "nothing drawn or recorded");
    for n in [1, 2] {
        let o = select(&c, &gen, &run_ledger, &out3, &["--eps-select", "1", "--keep", "1", "--run", &run_dir]);
        assert!(o.status.success(), "{}", stderr(&o));
        let r: Value = serde_json::from_slice(&std::fs::read(out3.join("vote-report.json")).unwrap()).unwrap();
        // Voting again over the same candidates: the votes add up.
        assert_eq!((r["vote"]["votes_on_candidates"].as_u64(), r["vote"]["epsilon_votes_on_candidates"].as_f64()), (Some(n), Some(n as f64)), "{r}");
    }

    // Per person, a random half voting: charged ln(1 + ½(e⁴ − 1)) ≈ 3.33, not 4.
    let out2 = dir.join("out2");
    // (The bare file, acknowledged.)
    let o = select(&c, &bare, &ledger, &out2, &["--eps-select", "4", "--keep", "1", "--keep-mode", "proportional", "--sample-rate", "0.5", "--person-col", "patient", "--unrecorded-candidates"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: Value = serde_json::from_slice(&std::fs::read(out2.join("vote-report.json")).unwrap()).unwrap();
    assert!(report["candidates_from"]["provenance"].as_str().unwrap().contains("--unrecorded-candidates"), "{report}");
    let charged = report["vote"]["epsilon_charged"].as_f64().unwrap();
    assert!((charged - (1.0 + 0.5 * (4f64.exp() - 1.0)).ln()).abs() < 1e-9, "{charged}");
    assert_eq!(report["vote"]["privacy_unit"], "person (column “patient”)");
    assert_eq!(std::fs::read_to_string(out2.join("kept.jsonl")).unwrap().lines().count(), 3);
    let run: Value = serde_json::from_slice(&std::fs::read(out2.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["person_column"], "patient");
    // No private count in what is written: no vector, no exact vote.
    let written = std::fs::read_to_string(out2.join("vote-report.json")).unwrap();
    assert!(!written.contains("exact") && !written.contains("vector"), "{written}");
}

fn tmpdir(name: &str) -> super::common::Scratch {
    super::common::tmpdir("select", name)
}
