//! One corpus, one set of settings, one seeded RNG, through the CLI's path (its flags parsed by
//! clap, its reader, its host with a locked ledger file, its writers) and through the page's
//! (the settings as the page sends them, the worker's reader, a host that commits to an
//! in-memory ledger in transactions and, like the worker's helpers, computes the DP-KDE sums in
//! parts and adds them up): the releases and the sequences must be equal byte for byte.

use clap::Parser;

use dpkps_core::input::corpus::{Fields, Format};
use dpkps_core::dp::SecureRng;
use dpkps_core::dp::vocabulary::PrivateVocabulary;
use dpkps_core::embed::{Embed, EmbedError};
use dpkps_core::dp::summary::{DpSummary, SummaryInputs};
use dpkps_core::ledger::{LedgerBook, Spend};
use dpkps_core::input::matched::{MatchedCorpus, MatchingSink};
use dpkps_core::run::report::Checked;
use dpkps_core::run::{self, Host, RunError, RunInputs, RunOutput, RunPlan, RunSettings, Stage, Vectors, Vocabulary};
use dpkps_core::input::public_vocab::{Matcher, PublicVocabulary, TermId};

use super::args::{Cli, Command};
use super::run::{pipeline_plan, read_matched, run_whole, write_pipeline, Model};

/// A stand-in for the sentence model: a fixed unit vector per text (from its SHA-256).
struct HashModel;

impl Embed for HashModel {
    fn dim(&self) -> usize {
        8
    }
    fn checksum(&self) -> &str {
        "hash-model"
    }
    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        use sha2::Digest;
        Ok(texts
            .iter()
            .map(|t| {
                let h = sha2::Sha256::digest(t.as_bytes());
                let v: Vec<f32> = h[..8].iter().map(|&b| b as f32 - 127.5).collect();
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.iter().map(|x| x / n).collect()
            })
            .collect())
    }
}

const TERMS: [&str; 12] = [
    "heart failure", "chest pain", "atrial fibrillation", "blood pressure", "asthma", "cough",
    "pulmonary embolism", "knee pain", "fracture", "skin rash", "diabetes mellitus", "renal failure",
];

/// 360 notes in three classes, each leaning on its own terms.
fn corpus_csv() -> String {
    let mut s = String::from("note,specialty\n");
    for i in 0..360usize {
        let class = ["Cardio", "Pulmo", "Ortho"][i % 3];
        let base = (i % 3) * 4;
        let words: Vec<&str> = (0..5).map(|k| TERMS[(base + (i * 7 + k * 3) % 6) % TERMS.len()]).collect();
        s.push_str(&format!("\"Seen for {} and then {}; also {}, {} and {}.\",{class}\n", words[0], words[1], words[2], words[3], words[4]));
    }
    s
}

/// The page's host, natively: an in-memory ledger committed in transactions, the DP-KDE sums
/// computed in three parts and added (as `worker::kde_share` does with its helpers).
struct PageHost {
    book: LedgerBook,
    model: HashModel,
    /// Fail every request for vectors (a model that does not load, a cancel).
    fail_vectors: bool,
}

impl Host for PageHost {
    type Error = RunError;
    fn fail(&self, _: Option<Stage>, e: RunError) -> RunError {
        e
    }
    fn stage_started(&mut self, _: Stage) {}
    fn stage_done(&mut self, _: Stage, _: String) {}
    async fn checkpoint(&mut self) -> Result<(), RunError> {
        Ok(())
    }
    async fn ledger(&mut self) -> Result<LedgerBook, RunError> {
        Ok(self.book.clone())
    }
    async fn commit(&mut self, _: Stage, change: &mut dyn FnMut(&mut LedgerBook) -> Result<(), RunError>) -> Result<(), RunError> {
        let mut b = self.book.clone();
        change(&mut b)?;
        self.book = b;
        Ok(())
    }
    async fn vectors(&mut self, vocab: &PublicVocabulary, ids: &[TermId], _: &[TermId]) -> Result<Vectors, RunError> {
        if self.fail_vectors {
            return Err(RunError::Settings("the model did not load".into()));
        }
        let emb = dpkps_core::embed::embed_terms(vocab, ids, &mut self.model, &mut |_, _| {}).map_err(|e| RunError::Settings(e.to_string()))?;
        Ok(Vectors { emb, model: Checked { name: "hash".into(), sha256: "hash-model".into() }, note: String::new() })
    }
    async fn summaries(&mut self, inputs: SummaryInputs<'_>, rng: &mut SecureRng) -> Result<(DpSummary, Vec<Spend>), RunError> {
        if !inputs.params.sampler.splits() {
            return Ok(dpkps_core::dp::summary::build(inputs, rng)?);
        }
        let seed = dpkps_core::dp::summary::draw_seed(rng);
        Ok(dpkps_core::dp::summary::parts::build_split_for_tests(inputs, seed, 3, rng)?)
    }
    fn now(&self) -> String {
        "now".into()
    }
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("dpkps-same-release-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// The CLI's path: flags → plan → reader → run over the ledger file → the written files.
fn cli_path(dir: &std::path::Path, flags: &[&str], seed: u64) -> (String, String) {
    let corpus = dir.join("notes.csv");
    std::fs::write(&corpus, corpus_csv()).expect("corpus");
    std::fs::write(dir.join("terms.txt"), TERMS.join("\n")).expect("list");
    let mut args = vec!["dpkps".to_string(), "pipeline".into(), "--corpus".into(), corpus.display().to_string()];
    args.extend(["--text-col", "note", "--label-col", "specialty", "--classes", "Cardio,Pulmo,Ortho", "--budget", "100", "--account", "clinic"].map(String::from));
    args.extend(["--vocabulary".to_string(), dir.join("terms.txt").display().to_string()]);
    args.extend(["--ledger".to_string(), dir.join("ledger.json").display().to_string(), "--out-dir".into(), dir.join("out").display().to_string()]);
    args.extend(flags.iter().map(|s| s.to_string()));
    let Command::Pipeline { inputs, classes, ledger, out_dir } = Cli::try_parse_from(&args).expect("flags").command else {
        panic!("not the pipeline command")
    };
    let (plan, public) = pipeline_plan(&inputs, &classes, &ledger).expect("plan");
    let mc = read_matched(&inputs.corpus, &public, plan.keep(), &plan.classes, &ledger).expect("corpus");
    let mut rng = SecureRng::seeded_for_tests(seed);
    let model = Model::Loaded(Box::new(HashModel), "hash".into());
    let out = run_whole(&plan, &mc, &public, &ledger, Vocabulary::Draw, model, None, &mut rng).expect("run");
    std::fs::create_dir_all(&out_dir).expect("out dir");
    write_pipeline(&out_dir, &out, &public).expect("write");
    let read = |f: &str| std::fs::read_to_string(out_dir.join(f)).expect(f);
    (read("release.json"), read("sequences.jsonl"))
}

/// The settings as the page sends them (JSON), planned; the public list; the corpus as the
/// worker's reader matches it.
fn page_inputs(settings_json: &str) -> (RunPlan, PublicVocabulary, MatchedCorpus) {
    let settings: RunSettings = serde_json::from_str(settings_json).expect("settings");
    let public = PublicVocabulary::parse("terms.txt", TERMS.join("\n").as_bytes()).expect("list");
    let plan = RunPlan::new(settings, true, public.len()).expect("plan");
    let matcher = Matcher::new(&public).expect("matcher");
    let mut sink = MatchingSink::new(Some(&matcher), 64, true);
    let fields = Fields { text: Some("note".into()), label: Some("specialty".into()), person: None };
    sink.read(corpus_csv().as_bytes(), "notes.csv", Format::Csv, &fields, None).expect("read");
    let mc: MatchedCorpus = sink.finish("notes.csv").expect("corpus");
    (plan, public, mc)
}

/// The page's path: the settings as the page sends them (JSON), the worker's reader, its host.
fn page_path(settings_json: &str, seed: u64) -> (String, String) {
    let (plan, public, mc) = page_inputs(settings_json);
    let mut host = PageHost { book: LedgerBook::default(), model: HashModel, fail_vectors: false };
    let mut rng = SecureRng::seeded_for_tests(seed);
    let out: RunOutput =
        super::run::block_on(run::execute(&plan, RunInputs { corpus: &mc, vocab: &public, vocabulary: Vocabulary::Draw }, &mut host, &mut rng)).expect("run");
    assert_eq!(host.book.ledger(&mc.fingerprint).runs.len(), 1, "the run is on record once");
    // As the worker sends them to the page (`run::sequences_out`), one JSON line each.
    let seqs: String = run::sequences_out(&out.sequences, &out.signals, &public).iter().map(|s| serde_json::to_string(s).unwrap() + "\n").collect();
    (super::io::json_text(&out.release), seqs)
}

#[test]
fn the_cli_and_the_page_release_the_same_bytes() {
    // The page's defaults but N = 8 (the list has 12 terms); the CLI given the same values.
    let page = r#"{"eps_voc":2.0,"eps_kde":4.0,"terms_per_doc":3,"top_n":8,"len":10,"features":2048,"per_class":20,
        "sampler":"SAMPLER","bandwidth":0.3,"classes":["Cardio","Pulmo","Ortho"],"eps_counts":0.1,"vocab_per_class":false,"budget":100.0,"account":"clinic",
        "sampling":{"distinctiveness":1.0,"distinct_sets":false,"noise_survivors":5.0}}"#;
    for (sampler, features) in [("histogram", "2048"), ("independent", "256"), ("iterative-linear", "128")] {
        // Every draw kept (distinct sets would leave fewer than 20 a class on 12 terms).
        let flags = ["--eps-voc", "2", "--eps-kde", "4", "--top-n", "8", "--per-class", "20", "--sampler", sampler, "--features", features, "--distinct-sets", "false"];
        let dir = tmpdir(sampler);
        let (cli_release, cli_seqs) = cli_path(&dir, &flags, 7);
        let json = page.replace("SAMPLER", sampler).replace("\"features\":2048", &format!("\"features\":{features}"));
        let (page_release, page_seqs) = page_path(&json, 7);
        assert!(cli_release == page_release, "{sampler}: the releases differ");
        assert_eq!(cli_seqs, page_seqs, "{sampler}: the sequences differ");
        assert_eq!(cli_seqs.lines().count(), 60, "{sampler}: 20 per class on average");
        // The summaries are stored under "kde", the name every saved release has: renaming the
        // field in the code must not rename it in the file.
        let stored: serde_json::Value = serde_json::from_str(&page_release).expect("the release is JSON");
        assert!(stored.get("kde").is_some() && stored.get("summary").is_none(), "{sampler}: the summaries' stored name");
        // Another seed gives another release: the comparison is not vacuous.
        let (other, _) = page_path(&json, 8);
        assert!(other != page_release, "{sampler}: the seed must matter");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn with_n_covering_the_list_nothing_is_drawn_or_spent_for_the_vocabulary() {
    // The default N (50,000) on the 12-term list: Ṽ is the list, and ε_voc is not spent.
    let page = r#"{"eps_voc":2.0,"eps_kde":4.0,"terms_per_doc":3,"top_n":50000,"len":10,"features":2048,"per_class":20,
        "sampler":"histogram","bandwidth":0.3,"classes":["Cardio","Pulmo","Ortho"],"eps_counts":0.1,"vocab_per_class":false,"budget":100.0,"account":"clinic",
        "sampling":{"distinctiveness":1.0,"distinct_sets":false,"noise_survivors":5.0}}"#;
    let (plan, public, mc) = page_inputs(page);
    assert!(plan.settings.whole_list() && (plan.planned_epsilon(true) - 4.1).abs() < 1e-12, "ε_kde + ε_counts planned");
    let mut host = PageHost { book: LedgerBook::default(), model: HashModel, fail_vectors: false };
    let mut rng = SecureRng::seeded_for_tests(7);
    let out: RunOutput =
        super::run::block_on(run::execute(&plan, RunInputs { corpus: &mc, vocab: &public, vocabulary: Vocabulary::Draw }, &mut host, &mut rng)).expect("run");
    assert_eq!(*out.vocabulary, PrivateVocabulary::whole_list(&public, &plan.vocab_params()), "the list, in its order");
    assert!(out.run.spends.iter().all(|s| s.stage != "vocabulary") && (out.run.epsilon() - 4.1).abs() < 1e-12, "{:?}", out.run.spends);
    let recorded = &host.book.ledger(&mc.fingerprint).runs;
    assert!(recorded.len() == 1 && (recorded[0].epsilon() - 4.1).abs() < 1e-12, "on record: ε_kde + ε_counts");
    let r = &out.report;
    assert!(r.guarantee.contains("(4.1000)-differentially private") && !r.guarantee.contains("ε_voc = 2"), "{}", r.guarantee);
    assert!(r.guarantee.contains("the whole public list (12 terms, N = 50000)") && r.epsilon_vocabulary == 0.0, "{}", r.guarantee);
    let html = r.to_html();
    assert!(html.contains("not spent (set: 2): Ṽ is the whole public list") && html.contains("50000: the whole public list, 12 terms (drawn from nothing: no ε_voc)"), "{html}");
    assert_eq!(out.sequences.len(), 60, "the run samples as before");
    // One term short of the list: drawn and paid for.
    let (short, _, _) = page_inputs(&page.replace("50000", "11"));
    assert!(!short.settings.whole_list() && (short.planned_epsilon(true) - 6.1).abs() < 1e-12);
    // The CLI's path releases the same bytes, and its `vocab` command writes the list, spending nothing.
    let dir = tmpdir("whole-list");
    let flags = ["--eps-voc", "2", "--eps-kde", "4", "--per-class", "20", "--distinct-sets", "false"];
    let (cli_release, cli_seqs) = cli_path(&dir, &flags, 7);
    let (page_release, page_seqs) = page_path(page, 7);
    assert!(cli_release == page_release && cli_seqs == page_seqs, "the CLI and the page differ");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_cli_writes_the_privacy_report_the_page_writes() {
    let dir = tmpdir("report");
    let _ = cli_path(&dir, &["--eps-voc", "1", "--eps-kde", "3", "--top-n", "8"], 3);
    let text = std::fs::read_to_string(dir.join("out/privacy-report.json")).expect("report");
    let report: dpkps_core::run::report::PrivacyReport = serde_json::from_str(&text).expect("a privacy report");
    assert!((report.epsilon_run - 4.1).abs() < 1e-12, "{}", report.epsilon_run);
    assert_eq!(report.classes, vec!["Cardio", "Pulmo", "Ortho"]);
    assert_eq!(report.spends.iter().map(|s| s.stage.as_str()).collect::<std::collections::BTreeSet<_>>().len(), 3);
    let html = std::fs::read_to_string(dir.join("out/privacy-report.html")).expect("html");
    assert!(html.contains("This run: ε = 4.1000"), "{html}");
    // The budget it was held to, and its history (the first run set it).
    assert_eq!(report.budget, Some(100.0));
    assert!(html.contains("<h2>Budget</h2><p>This run was held to the budget of the budget account “clinic”: ε = 100") && html.contains("Its history: set to 100 at "), "{html}");
    // What counts against that budget, this run included (the account's runs, overlaps too).
    assert_eq!(report.epsilon_budget_total, Some(report.epsilon_run));
    assert!(html.contains("Spent against it, this run included: ε = 4.1000."), "{html}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The DP utility check is paid for before it draws anything (Ṽ is drawn, its vectors asked for
/// and cached before the scores exist): one that fails after the start stays on record with its
/// whole ε and chooses nothing; one that ends replaces that entry in place (counted once).
#[test]
fn a_dp_check_is_recorded_before_it_draws_and_once_when_it_ends() {
    use dpkps_core::eval::dp_check::CheckParams;
    let json = r#"{"eps_voc":2.0,"eps_kde":4.0,"terms_per_doc":3,"top_n":8,"len":4,"features":2048,"per_class":20,
        "sampler":"histogram","bandwidth":0.3,"classes":["Cardio","Pulmo","Ortho"],"eps_counts":null,"vocab_per_class":false,"budget":100.0}"#;
    let (plan, public, mc) = page_inputs(json);
    let params = || CheckParams { samplers: vec![dpkps_core::dp::summary::KeyphraseSampler::Histogram, dpkps_core::dp::summary::KeyphraseSampler::Markov], holdout: 0.2, eps_select: None };
    let mut rng = SecureRng::seeded_for_tests(4);
    let mut host = PageHost { book: LedgerBook::default(), model: HashModel, fail_vectors: true };
    let failed = super::run::block_on(run::check::check(&plan, &mc, &public, params(), &mut host, &mut rng));
    assert!(failed.is_err());
    let runs = host.book.ledger(&mc.fingerprint).runs;
    assert_eq!(runs.len(), 1, "the failed check is on record");
    assert_eq!((runs[0].epsilon(), &runs[0].spends[0].params["chosen"]), (10.0, &serde_json::Value::Null), "2 + 2 × 4, nothing chosen");
    host.fail_vectors = false;
    let done = super::run::block_on(run::check::check(&plan, &mc, &public, params(), &mut host, &mut rng)).expect("check");
    let runs = host.book.ledger(&mc.fingerprint).runs;
    assert_eq!(runs.len(), 2);
    assert_eq!((runs[1].id.as_str(), runs[1].spends.len(), runs[1].epsilon()), (done.run.id.as_str(), 1, 10.0), "replaced in place");
    assert_eq!(runs[1].spends[0].params["chosen"].as_str(), done.result.chosen.as_deref());
    assert_eq!(host.book.ledger(&mc.fingerprint).total_epsilon(), 20.0);
    // Refused from public inputs (a Markov release too large for N = 8 and three classes would
    // not be, so: a repeated sampler), before anything is recorded: no cost.
    let mut bad = params();
    bad.samplers.push(dpkps_core::dp::summary::KeyphraseSampler::Histogram);
    let refused = super::run::block_on(run::check::check(&plan, &mc, &public, bad, &mut host, &mut rng));
    assert!(refused.is_err_and(|e| e.to_string().contains("must not repeat a sampler")));
    assert_eq!(host.book.ledger(&mc.fingerprint).runs.len(), 2, "nothing recorded for a refused check");
}

/// `SecureRng::seeded_for_tests` and `build_split_for_tests` exist outside the core's unit
/// tests only with the core's feature `seeded-rng-for-tests`, for this file: no other code of
/// the workspace outside the core names them, and only a dev-dependency enables the feature.
#[test]
fn seeded_rng_stays_in_tests() {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).expect("a source folder").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "tests", "crates"] {
        walk(&root.join(dir), &mut files);
    }
    let core = root.join("crates/core/src");
    let this = root.join(file!());
    let names: Vec<_> = files
        .iter()
        .filter(|f| !f.starts_with(&core) && **f != this)
        .filter(|f| std::fs::read_to_string(f).is_ok_and(|t| t.contains("seeded_for_tests") || t.contains("build_split_for_tests")))
        .collect();
    assert!(files.len() > 100, "the sources were not found: {}", root.display());
    assert!(names.is_empty(), "a seeded generator outside the core's tests: {names:?}");
    // The feature that exposes it: only in a dev-dependency table (never in a binary anyone runs).
    let manifests: Vec<_> = files
        .iter()
        .filter_map(|f| f.parent())
        .map(|d| d.join("Cargo.toml"))
        .chain([root.join("Cargo.toml")])
        .chain(std::fs::read_dir(root.join("crates")).expect("crates").flatten().map(|e| e.path().join("Cargo.toml")))
        .filter(|m| m.is_file())
        .collect();
    for m in manifests {
        let text = std::fs::read_to_string(&m).expect("a manifest");
        let mut table = String::new();
        for line in text.lines() {
            if line.trim_start().starts_with('[') {
                table = line.trim().to_string();
            } else if line.contains("\"seeded-rng-for-tests\"") && !line.trim_start().starts_with('#') {
                assert!(table.ends_with("dev-dependencies]"), "{}: the seeded generator enabled in {table}", m.display());
            }
        }
    }
}
