//! `dpkps generate` against an in-process OpenAI-compatible server that injects faults: the
//! page's job semantics natively (lanes, retries with backoff, failures, resume after a kill
//! with every document exactly once), the key from the environment only, and the page's
//! output formats.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use dpkps_core::llm::{Job, Outcome, OutcomeRecord};
use serde_json::Value;

use super::common::stderr;

mod server;
use server::{Fault, Server, KEY};

/// The privacy report of a real run (`dpkps pipeline`), made once for all the tests.
fn real_report() -> &'static str {
    static REPORT: OnceLock<String> = OnceLock::new();
    REPORT.get_or_init(|| {
        // Kept: `the_replay_corpus_is_compared_with_the_runs_ledger_entry` reads its corpus and ledger.
        let dir = tmpdir("pipeline").keep();
        let mut csv = String::from("note,specialty\n");
        for k in 0..20 {
            let (text, label) = if k % 2 == 0 { ("Heart failure with chest pain and hypertension.", "Cardio") } else { ("Asthma with cough and pneumonia.", "Pulmo") };
            csv.push_str(&format!("\"{text} Visit {k}.\",{label}\n"));
        }
        std::fs::write(dir.join("notes.csv"), csv).unwrap();
        let o = dpkps(&[
            "pipeline", "--budget", "100", "--corpus", dir.join("notes.csv").to_str().unwrap(), "--text-col", "note", "--label-col", "specialty",
            "--classes", "Cardio,Pulmo", "--eps-voc", "1", "--top-n", "20", "--eps-kde", "5", "--len", "3", "--per-class", "2",
            "--eps-counts", "off", "--ledger", dir.join("ledger.json").to_str().unwrap(), "--out-dir", dir.join("run").to_str().unwrap(),
        ])
        .output()
        .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        std::fs::read_to_string(dir.join("run/privacy-report.json")).unwrap()
    })
}

/// A run folder with `n` sequences (document i's keyphrases hold the marker `kp{i}x`) and a
/// real run's privacy report.
fn run_folder(dir: &Path, n: usize) -> String {
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    let mut lines = String::new();
    for i in 0..n {
        let label = if i % 2 == 0 { "Cardio" } else { "Pulmo" };
        lines.push_str(&serde_json::json!({ "label": label, "keyphrases": [format!("kp{i}x"), "Heart Failure", "=Cough"] }).to_string());
        lines.push('\n');
    }
    std::fs::write(run.join("sequences.jsonl"), lines).unwrap();
    std::fs::write(run.join("privacy-report.json"), real_report()).unwrap();
    run.display().to_string()
}

fn dpkps(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dpkps"));
    c.args(args).env("DPKPS_ACCOUNT", "tests").env_remove("DPKPS_LLM_KEY").env_remove("http_proxy").env_remove("HTTP_PROXY").env_remove("ALL_PROXY").env_remove("all_proxy");
    c
}

fn generate(run: &str, url: &str, out: &Path, extra: &[&str]) -> Command {
    let mut args = vec!["generate", "--run", run, "--endpoint", url, "--model", "test-model", "--out-dir", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    dpkps(&args)
}

/// The job as saved in the folder, with its saved outcomes (last line of a document wins).
fn saved_job(out: &Path) -> Job {
    let mut job: Job = serde_json::from_slice(&std::fs::read(out.join("job.json")).unwrap()).unwrap();
    assert!(job.outcomes.is_empty(), "job.json holds no outcome");
    job.adopt(outcome_records(out));
    job
}

/// Every line of `outcomes.jsonl`, each of which must read.
fn outcome_records(out: &Path) -> Vec<OutcomeRecord> {
    std::fs::read_to_string(out.join("outcomes.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn audit(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("audit.jsonl")).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn every_document_is_generated_with_lanes_and_retries_into_the_pages_formats() {
    let dir = tmpdir("all");
    let run = run_folder(&dir, 8);
    let server = Server::start();
    server.delay(150);
    server.fault(0, &[Fault::TooMany(1)]);
    server.fault(1, &[Fault::Status(500), Fault::Status(503)]);
    server.fault(2, &[Fault::Slow(2500)]);
    server.fault(3, &[Fault::List]);
    let out = dir.join("out");
    let o = generate(&run, &server.url, &out, &["--concurrency", "3", "--timeout", "1"]).env("DPKPS_LLM_KEY", KEY).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("document #1, attempt 1: HTTP 429") && err.contains("no reply within 1 s"), "{err}");
    assert!(err.contains("[8 of 8 done, 0 failed]"), "{err}");
    // A reply that is not a document is asked for once more, at once.
    assert!(err.contains("document #4, attempt 1: the reply is the keyphrases given back as a list: asked once more"), "{err}");
    assert!(err.contains("(8 documents: 8 prose)"), "{err}");
    // The logs hold every reply, flagged replays of private text included: owner only.
    #[cfg(unix)]
    for log in ["outcomes.jsonl", "audit.jsonl"] {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(out.join(log)).unwrap().permissions().mode() & 0o777, 0o600, "{log}");
    }

    // Three in flight at once; each document sent once, plus once per injected fault.
    assert_eq!(server.state.lock().unwrap().max_in_flight, 3);
    let counts = server.counts();
    assert_eq!(counts, (0..8).map(|i| (i, [2, 3, 2, 2].get(i).copied().unwrap_or(1))).collect());
    // The waits: the server's Retry-After (1 s, never less), then backoff 0.5 s and 1 s, each
    // within a quarter either way (jitter).
    let seen = server.seen();
    let gaps = |doc: usize| {
        let at: Vec<Instant> = seen.iter().filter(|s| s.doc == doc).map(|s| s.at).collect();
        at.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>()
    };
    assert!(gaps(0)[0] >= Duration::from_millis(1000), "{:?}", gaps(0));
    let g1 = gaps(1);
    assert!(g1[0] >= Duration::from_millis(375) && g1[1] >= Duration::from_millis(750), "{g1:?}");
    // The key, from the environment, travels in the authorization header...
    assert!(seen.iter().all(|s| s.authorization.as_deref() == Some(&format!("Bearer {KEY}"))), "{seen:?}");
    // ...and is written nowhere.
    for f in std::fs::read_dir(&out).unwrap() {
        let f = f.unwrap().path();
        assert!(!String::from_utf8_lossy(&std::fs::read(&f).unwrap()).contains(KEY), "{} holds the key", f.display());
    }

    // The outcomes: each document once, with its attempts.
    let job = saved_job(&out);
    assert_eq!(outcome_records(&out).len(), 8);
    assert!(job.is_complete() && job.keyed);
    assert!(matches!(job.outcomes[&1], Outcome::Done { attempts: 3, .. }));
    assert!(matches!(job.outcomes[&2], Outcome::Done { attempts: 2, .. }));
    assert!(matches!(&job.outcomes[&3], Outcome::Done { attempts: 2, text } if text.starts_with("A note about")));
    // The corpus as the page downloads it (the same code: llm::Job's exports).
    let jsonl = std::fs::read_to_string(out.join("synthetic.jsonl")).unwrap();
    assert_eq!(jsonl, job.corpus_jsonl());
    let rows: Vec<Value> = jsonl.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 8);
    for (i, r) in rows.iter().enumerate() {
        let mut keys: Vec<&String> = r.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["form", "keyphrases", "keyphrases_used", "label", "text"]);
        assert_eq!((&r["form"], &r["keyphrases_used"]), (&Value::from("prose"), &Value::from(3)), "{r}");
        assert!(r["text"].as_str().unwrap().contains(&format!("kp{i}x; Heart Failure; =Cough")), "{r}");
        assert_eq!(r["label"], if i % 2 == 0 { "Cardio" } else { "Pulmo" });
    }
    let csv = std::fs::read_to_string(out.join("synthetic.csv")).unwrap();
    assert_eq!(csv, job.corpus_csv());
    assert!(csv.starts_with("text,label,keyphrases,form,keyphrases_used\n") && csv.contains("kp0x; Heart Failure; =Cough,prose,3\n"), "{csv}");
    // The report: the run's, and its printable form.
    assert_eq!(std::fs::read_to_string(out.join("privacy-report.json")).unwrap(), real_report());
    assert!(std::fs::read_to_string(out.join("privacy-report.html")).unwrap().contains("Privacy report"));

    // The audit log: every attempt before it was sent and after, bodies without the key.
    let audit = audit(&out);
    let total: usize = counts.values().sum();
    assert_eq!(audit.iter().filter(|a| a["phase"] == "sending").count(), total);
    assert_eq!(audit.iter().filter(|a| a["phase"] == "response").count(), total);
    assert!(audit.iter().any(|a| a["status"] == 429) && audit.iter().any(|a| a["error"].as_str().is_some_and(|e| e.contains("no reply within"))));
    let sending = audit.iter().find(|a| a["phase"] == "sending" && a["index"] == 3).unwrap();
    assert!(sending["request"].as_str().unwrap().contains("\"model\":\"test-model\""), "{sending}");
    assert!(sending["time"].as_str().unwrap().ends_with('Z'), "{sending}");

    // Run again: nothing is left to send.
    let before = server.seen().len();
    let o = generate(&run, &server.url, &out, &["--concurrency", "3", "--timeout", "1"]).env("DPKPS_LLM_KEY", KEY).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(server.seen().len(), before);
}

#[test]
fn an_over_long_reply_and_a_redirect_fail_at_once_and_a_dated_retry_after_is_waited_for() {
    let dir = tmpdir("caps");
    let run = run_folder(&dir, 4);
    let server = Server::start();
    // Where the redirect points: it must never be contacted.
    let elsewhere = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let elsewhere_url = format!("http://{}/v1/chat/completions", elsewhere.local_addr().unwrap());
    elsewhere.set_nonblocking(true).unwrap();
    server.fault(0, &[Fault::Huge(2 << 20)]);
    server.fault(1, &[Fault::Redirect(elsewhere_url.clone())]);
    server.fault(2, &[Fault::TooManyUntil(2)]);
    let out = dir.join("out");
    let o = generate(&run, &server.url, &out, &["--concurrency", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "two documents failed: {}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(server.counts(), BTreeMap::from([(0, 1), (1, 1), (2, 2), (3, 1)]), "neither failure is asked for again: {err}");
    let job = saved_job(&out);
    match &job.outcomes[&0] {
        Outcome::Failed { attempts: 1, error } => assert!(error.starts_with("the reply is longer than 1 MiB, the most read of one reply here"), "{error}"),
        o => panic!("{o:?}"),
    }
    match &job.outcomes[&1] {
        Outcome::Failed { attempts: 1, error } => {
            assert!(error.starts_with(&format!("the endpoint answered with a redirect (HTTP 307 to {elsewhere_url}), which is not followed")), "{error}")
        }
        o => panic!("{o:?}"),
    }
    assert!(elsewhere.accept().is_err(), "the redirect's target was contacted");
    // Retry-After as an HTTP date two seconds ahead (whole seconds: more than one second).
    let at: Vec<Instant> = server.seen().iter().filter(|s| s.doc == 2).map(|s| s.at).collect();
    assert!(at[1] - at[0] >= Duration::from_millis(1000), "waited {:?}", at[1] - at[0]);
    assert!(matches!(job.outcomes[&2], Outcome::Done { attempts: 2, .. }));
    // Nothing of the long reply is kept: not in the outcomes, not in the audit log.
    for f in ["outcomes.jsonl", "audit.jsonl"] {
        let len = std::fs::metadata(out.join(f)).unwrap().len();
        assert!(len < 64 << 10, "{f}: {len} bytes");
    }
}

#[test]
fn the_replay_check_flags_a_reply_that_repeats_a_private_span_and_leaves_it_out() {
    let dir = tmpdir("replay");
    let run = run_folder(&dir, 4);
    // The private corpus: notes with common phrasing, each with a span of its own.
    const SPAN: &str = "the harbour pilot Quill Marrow rowed north at dawn";
    let mut csv = String::from("note,specialty\n");
    for k in 0..10 {
        let own = if k == 6 { SPAN.to_string() } else { format!("the baker number {k} walked south at noon") };
        csv.push_str(&format!("\"Seen today for heart failure. History: {own}. A plan was agreed.\",{}\n", if k % 2 == 0 { "Cardio" } else { "Pulmo" }));
    }
    let notes = dir.join("notes.csv");
    std::fs::write(&notes, csv).unwrap();
    let server = Server::start();
    server.fault(2, &[Fault::Replay(SPAN)]);
    let out = dir.join("out");
    let corpus = ["--corpus", notes.to_str().unwrap(), "--text-col", "note", "--label-col", "specialty"];
    let o = generate(&run, &server.url, &out, &corpus).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("replay check (not DP): 4 generated documents against 10 private documents") && err.contains(": 1 flagged ("), "{err}");
    assert!(err.contains("document #3 Cardio: longest shared run 9 words (9 outside its keyphrases), 2 rare 8-word sequence(s): left out"), "{err}");
    assert!(!err.contains("Quill"), "the shared words are private text: never printed\n{err}");
    // Left out of the corpus, kept in the job's record; the report counts it, without its words.
    let jsonl = std::fs::read_to_string(out.join("synthetic.jsonl")).unwrap();
    let csv = std::fs::read_to_string(out.join("synthetic.csv")).unwrap();
    assert_eq!(jsonl.lines().count(), 3);
    assert!(!jsonl.contains("Quill") && !csv.contains("Quill") && !jsonl.contains("kp2x") && jsonl.contains("kp3x"), "{jsonl}");
    assert!(outcome_records(&out).iter().any(|r| r.index == 2));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(out.join("privacy-report.json")).unwrap()).unwrap();
    let check = &report["replay_check"];
    assert_eq!((&check["checked"], &check["flagged"], &check["dropped"]), (&Value::from(4), &Value::from(1), &Value::from(1)), "{check}");
    assert!(check["statement"].as_str().unwrap().contains("NOT differentially private"), "{check}");
    assert_eq!(report["epsilon_run"], serde_json::from_str::<Value>(real_report()).unwrap()["epsilon_run"]);
    let html = std::fs::read_to_string(out.join("privacy-report.html")).unwrap();
    assert!(html.contains("Replay check (not differentially private)") && !html.contains("Quill") && !report.to_string().contains("Quill"));

    // The same folder again, keeping the flagged documents: nothing is sent, all four are written.
    let sent = server.seen().len();
    let mut keep = corpus.to_vec();
    keep.push("--keep-flagged");
    let o = generate(&run, &server.url, &out, &keep).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(server.seen().len(), sent);
    assert_eq!(std::fs::read_to_string(out.join("synthetic.jsonl")).unwrap().lines().count(), 4);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(out.join("privacy-report.json")).unwrap()).unwrap();
    assert_eq!((&report["replay_check"]["flagged"], &report["replay_check"]["dropped"]), (&Value::from(1), &Value::from(0)));

    // Without --corpus: no check, the run's report as it was; --keep-flagged alone is refused.
    let o = generate(&run, &server.url, &out, &[]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(out.join("privacy-report.json")).unwrap(), real_report());
    assert!(!stderr(&o).contains("replay check"));
    let o = generate(&run, &server.url, &out, &["--keep-flagged"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // A corpus file that is not there is refused before anything is sent.
    let o = generate(&run, &server.url, &dir.join("out2"), &["--corpus", dir.join("missing.csv").to_str().unwrap(), "--text-col", "note"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing.csv: cannot open"), "{}", stderr(&o));
    assert_eq!(server.seen().len(), sent);
    // So is a column the corpus does not have (its header is read first), in plain words.
    let o = generate(&run, &server.url, &dir.join("out3"), &["--corpus", notes.to_str().unwrap(), "--text-col", "text"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("there is no column named \"text\"; the columns are:"), "{}", stderr(&o));
    assert_eq!(server.seen().len(), sent);
    assert!(!dir.join("out3").join("job.json").exists());
}

#[test]
fn the_replay_corpus_is_compared_with_the_runs_ledger_entry() {
    real_report();
    // The real run's folder, corpus and ledger (`real_report`).
    let pipeline = std::env::temp_dir().join(format!("dpkps-generate-pipeline-{}", std::process::id()));
    let (notes, ledger) = (pipeline.join("notes.csv"), pipeline.join("ledger.json"));
    let dir = tmpdir("tie");
    // Sequences the test server answers, with the real run's entry (run.json: its id).
    let run = run_folder(&dir, 2);
    std::fs::copy(pipeline.join("run/run.json"), Path::new(&run).join("run.json")).unwrap();
    let server = Server::start();
    let check = |corpus: &Path, out: &str| {
        let args = ["--corpus", corpus.to_str().unwrap(), "--text-col", "note", "--ledger", ledger.to_str().unwrap()];
        let o = generate(&run, &server.url, &dir.join(out), &args).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stderr(&o)
    };
    let err = check(&notes, "same");
    assert!(err.contains("replay check: --corpus is the corpus run ") && !err.contains("warning"), "{err}");
    // Other documents: said plainly, and the check still runs.
    let other = dir.join("other.csv");
    std::fs::write(&other, "note\n\"Another clinic's note.\"\n").unwrap();
    let err = check(&other, "other");
    assert!(err.contains("warning: --corpus is NOT the corpus run ") && err.contains("replay check (not DP)"), "{err}");
}

#[test]
fn a_refused_document_fails_and_retry_failed_sends_only_it() {
    let dir = tmpdir("failed");
    let run = run_folder(&dir, 4);
    let server = Server::start();
    server.fault(1, &[Fault::Status(400)]);
    let out = dir.join("out");
    let o = generate(&run, &server.url, &out, &[]).env("DPKPS_LLM_KEY", KEY).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 of 4 documents failed") && stderr(&o).contains("--retry-failed"), "{}", stderr(&o));
    assert_eq!(server.counts()[&1], 1, "a 400 is not retried");
    match &saved_job(&out).outcomes[&1] {
        Outcome::Failed { error, attempts: 1 } => assert!(error.contains("HTTP 400"), "{error}"),
        o => panic!("{o:?}"),
    }
    // The corpus holds what was generated.
    assert_eq!(std::fs::read_to_string(out.join("synthetic.jsonl")).unwrap().lines().count(), 3);

    // The same command again sends nothing (failed documents wait for --retry-failed).
    let o = generate(&run, &server.url, &out, &[]).env("DPKPS_LLM_KEY", KEY).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(server.seen().len(), 4);
    // Started with a key: resuming without it is refused before anything is sent.
    let o = generate(&run, &server.url, &out, &["--retry-failed"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("set DPKPS_LLM_KEY again"), "{}", stderr(&o));
    // Another job in this folder is refused, naming what differs.
    let o = generate(&run, &server.url, &out, &["--doc-type", "discharge summary", "--temperature", "0.2"]).env("DPKPS_LLM_KEY", KEY).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("holds another job") && err.contains("--temperature") && err.contains("prompt settings"), "{err}");
    assert_eq!(server.seen().len(), 4);

    let o = generate(&run, &server.url, &out, &["--retry-failed"]).env("DPKPS_LLM_KEY", KEY).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(server.counts(), BTreeMap::from([(0, 1), (1, 2), (2, 1), (3, 1)]));
    assert!(saved_job(&out).is_complete());
    assert_eq!(outcome_records(&out).len(), 5, "the retried document's new outcome is appended");
    assert_eq!(std::fs::read_to_string(out.join("synthetic.jsonl")).unwrap().lines().count(), 4);
}

#[test]
fn a_killed_job_resumes_and_sends_each_remaining_document_exactly_once() {
    let dir = tmpdir("kill");
    let run = run_folder(&dir, 12);
    let server = Server::start();
    server.delay(250);
    let out = dir.join("out");
    let mut child = generate(&run, &server.url, &out, &["--concurrency", "2"]).stderr(Stdio::null()).spawn().unwrap();
    let t0 = Instant::now();
    while std::fs::read_to_string(out.join("outcomes.jsonl")).map_or(0, |t| t.lines().count()) < 4 {
        assert!(t0.elapsed() < Duration::from_secs(60), "no progress");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // What was saved: the complete lines.
    let text = std::fs::read_to_string(out.join("outcomes.jsonl")).unwrap();
    let complete = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    let done: BTreeSet<usize> = complete.lines().map(|l| serde_json::from_str::<OutcomeRecord>(l).unwrap().index).collect();
    // A kill in the middle of writing an outcome leaves a torn last line.
    std::fs::OpenOptions::new().append(true).open(out.join("outcomes.jsonl")).unwrap().write_all(br#"{"job":"x","index":11,"outc"#).unwrap();
    assert!(done.len() >= 4 && done.len() < 12, "{done:?}");
    // The killed run's last request may reach the server's log after the kill (its bytes were
    // sent): let it land before counting, or the resumed run would seem to send it again.
    server.settle(Duration::from_millis(500));
    let before = server.seen().len();

    let o = generate(&run, &server.url, &out, &["--concurrency", "2"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("cut short"), "{}", stderr(&o));
    let after: Vec<usize> = server.seen()[before..].iter().map(|s| s.doc).collect();
    let expected: BTreeSet<usize> = (0..12).filter(|i| !done.contains(i)).collect();
    assert_eq!(after.len(), expected.len(), "each remaining document once: {after:?}");
    assert_eq!(after.iter().copied().collect::<BTreeSet<_>>(), expected, "no saved document is sent again");
    // Every line of the outcomes reads (the torn one was cut), and each document is there once.
    let records = outcome_records(&out);
    assert_eq!(records.iter().map(|r| r.index).collect::<BTreeSet<_>>().len(), 12);
    assert_eq!(records.len(), 12);
    let job = saved_job(&out);
    assert!(job.is_complete() && !job.keyed);
    assert_eq!(std::fs::read_to_string(out.join("synthetic.jsonl")).unwrap(), job.corpus_jsonl());
    assert_eq!(job.corpus_jsonl().lines().count(), 12);
}

#[test]
fn the_key_comes_from_the_environment_only_and_the_pages_checks_apply() {
    let dir = tmpdir("key");
    let run = run_folder(&dir, 2);
    let out = dir.join("out");
    // No flag takes a key.
    let o = generate(&run, "http://127.0.0.1:9/v1", &out, &["--key", KEY]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unexpected argument '--key'"), "{}", stderr(&o));
    let help = dpkps(&["generate", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("DPKPS_LLM_KEY"));
    // The page's refusals, before anything is written or sent.
    for (endpoint, words) in [
        ("http://10.0.0.5:8000/v1", "API key would be sent unencrypted: http://10.0.0.5:8000"),
        ("https://api.example.org/v1?api_key=abc", "credential in its query (api_key="),
        ("https://user:pw@api.example.org/v1", "user name or password"),
        (&format!("https://api.example.org/{KEY}/v1"), "API key appears in the endpoint URL"),
    ] {
        let o = generate(&run, endpoint, &out, &[]).env("DPKPS_LLM_KEY", KEY).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{endpoint}");
        assert!(stderr(&o).contains(words), "{endpoint}: {}", stderr(&o));
    }
    assert!(!out.exists(), "nothing written for a refused job");
    // Few-shot examples must be declared public; the review prints what would be sent.
    std::fs::write(dir.join("ex.txt"), "keyphrases: a, b\nlabel: Cardio\nAn example.").unwrap();
    let ex = dir.join("ex.txt").display().to_string();
    let o = generate(&run, "http://127.0.0.1:9/v1", &out, &["--examples", &ex]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--examples-public"), "{}", stderr(&o));
    let o = generate(&run, "http://127.0.0.1:9/v1", &out, &["--examples", &ex, "--examples-public", "--dry-run"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let bodies: Vec<Value> = String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(bodies.len(), 2);
    let roles: Vec<&str> = bodies[0]["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
    assert!(bodies[1]["messages"][3]["content"].as_str().unwrap().contains("(Pulmo)"));
    assert!(stderr(&o).contains("nothing was sent"), "{}", stderr(&o));
    assert!(!out.exists());
    // Sequences of a noise-dominated class are left out unless asked for, as on the page.
    let noisy = dir.join("noisy");
    let run2 = run_folder(&noisy, 3);
    let text = std::fs::read_to_string(noisy.join("run/sequences.jsonl")).unwrap();
    let marked: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["label"] == "Pulmo" {
                v["noise_dominated"] = Value::Bool(true);
            }
            v.to_string()
        })
        .collect();
    std::fs::write(noisy.join("run/sequences.jsonl"), marked.join("\n") + "\n").unwrap();
    for (extra, n) in [(&[][..], 2), (&["--include-noise-classes"][..], 3)] {
        let mut args = vec!["--dry-run"];
        args.extend_from_slice(extra);
        let o = generate(&run2, "http://127.0.0.1:9/v1", &noisy.join("out"), &args).output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), n, "{extra:?}");
    }
    // Nothing answers: the document fails after its attempts, saying where it looked.
    let o = generate(&run, "http://127.0.0.1:9/v1", &out, &["--attempts", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("nothing answered at http://127.0.0.1:9/v1/chat/completions"), "{}", stderr(&o));
}

#[test]
fn sequences_that_are_no_recorded_release_go_only_acknowledged_and_only_to_this_machine() {
    let dir = tmpdir("unrecorded");
    let run = run_folder(&dir, 2);
    // A file of sequences as `dpkps evaluate --export-sequences` writes them: noiseless lines.
    let file = dir.join("nodp.jsonl");
    let line = |i: usize| serde_json::json!({ "label": "Cardio", "keyphrases": [format!("kp{i}x")], "dp": false, "epsilon_recorded": false }).to_string();
    std::fs::write(&file, format!("{}\n{}\n", line(0), line(1))).unwrap();
    let file = file.display().to_string();
    let with_file = |url: &str, out: &Path, extra: &[&str]| {
        let mut args = vec!["generate", "--sequences", &file, "--endpoint", url, "--model", "test-model", "--out-dir", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        dpkps(&args).output().unwrap()
    };
    let server = Server::start();
    let out = dir.join("out");
    // Not acknowledged: refused before anything is written or sent, even to this machine.
    let o = with_file(&server.url, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("holds 2 sequences that are not a recorded DP release") && stderr(&o).contains("--unrecorded-sequences"), "{}", stderr(&o));
    // Acknowledged, but to an endpoint elsewhere: refused.
    let o = with_file("https://api.example.org/v1", &out, &["--unrecorded-sequences"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("only to an endpoint on this machine") && stderr(&o).contains("https://api.example.org is not"), "{}", stderr(&o));
    assert!(!out.exists() && server.seen().is_empty(), "nothing written or sent for a refused job");
    // A run's folder whose lines say they are no recorded release: refused the same way.
    let seqs = std::path::Path::new(&run).join("sequences.jsonl");
    let clean = std::fs::read_to_string(&seqs).unwrap();
    std::fs::write(&seqs, format!("{clean}{}\n", line(9))).unwrap();
    let o = generate(&run, "https://api.example.org/v1", &out, &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("holds 1 sequences marked as not a recorded DP release"), "{}", stderr(&o));
    std::fs::write(&seqs, clean).unwrap();
    // Acknowledged and to this machine: sent, with a note saying what they are.
    let o = with_file(&server.url, &out, &["--unrecorded-sequences"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("as --unrecorded-sequences acknowledges"), "{}", stderr(&o));
    assert_eq!(server.counts().len(), 2);
}

#[test]
fn no_proxy_for_this_machine_no_resolver_for_localhost_names_and_no_raw_control_bytes() {
    let dir = tmpdir("proxy");
    let run = run_folder(&dir, 2);
    let server = Server::start();
    // A proxy in the environment: a keyed request to this machine over http:// must not go
    // through it (it would carry the key and the prompts off the machine in clear).
    let proxy = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
    proxy.set_nonblocking(true).unwrap();
    let out = dir.join("out");
    let mut cmd = generate(&run, &server.url, &out, &["--timeout", "5", "--attempts", "1"]);
    cmd.env("DPKPS_LLM_KEY", KEY);
    for var in ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"] {
        cmd.env(var, &proxy_url);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(proxy.accept().is_err(), "the proxy was asked");
    assert!(server.seen().iter().all(|s| s.authorization.as_deref() == Some(&format!("Bearer {KEY}")[..])));
    // `*.localhost` would be looked up by the system's resolver: refused before anything is sent.
    let o = generate(&run, "http://llm.localhost:8080/v1", &dir.join("out2"), &[]).env("DPKPS_LLM_KEY", KEY).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("resolves *.localhost names"), "{}", stderr(&o));
    // An error body with terminal escapes (retitle, clear screen, a link) is printed escaped.
    let server = Server::start();
    server.fault(0, &[Fault::Body(400, "\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{1b}]8;;http://evil.example/\u{7}".into())]);
    let o = generate(&run_folder(&dir.join("esc"), 1), &server.url, &dir.join("out3"), &["--attempts", "1"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "raw control bytes on the terminal: {err:?}");
    assert!(err.contains("\\u{1b}]0;PWNED"), "{err}");
}

fn tmpdir(name: &str) -> super::common::Scratch {
    super::common::tmpdir("generate", name)
}
