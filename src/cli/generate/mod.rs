//! `dpkps generate`: a run's keyphrase sequences → prompts (the page's prompt code and
//! defaults, `dpkps_core::llm::prompt`) → an OpenAI-compatible endpoint → the synthetic corpus, with the
//! page's job semantics. The sending loop is the page's own (`dpkps_core::llm::generate`: lanes,
//! attempts with backoff, the audit log written before and after each request, each outcome
//! saved before it counts); this module is its native side: an HTTP client (`http.rs`), files
//! in the output folder (`store.rs`) and progress on stderr.
//!
//! The API key is read from the environment ([`KEY_VAR`]), never from a flag (flags end up in
//! shell histories and process lists); it travels in the `authorization` header only and is
//! written nowhere. The page's checks apply: no credentials in the endpoint URL, no key over
//! plain `http://` except to this machine. (The page's allowlist is its Content-Security-Policy;
//! a command has none.)

pub(crate) mod error;
mod http;
mod store;

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Args;

use dpkps_core::dp::DpError;
use dpkps_core::llm::{AuditEntry, AuditPhase, Clock, Control, Halt, Job, JobStore, LlmError, LlmSettings, Outcome, Reply, Transport};
use dpkps_core::llm::prompt::{parse_examples, PromptSettings};
use dpkps_core::sample::SequenceOut;
use dpkps_core::replay::{ReplayCheck, ReplayParams, ReplaySummary};
use dpkps_core::run::report::PrivacyReport;

use crate::cli::args::corpus::CorpusArgs;
use crate::cli::error::CliError;
use crate::cli::sequence_file::{check_sendable, SequenceLine, Source};
use error::{GenerateError, KEY_VAR};
use http::HttpClient;
use store::{OutDir, JOB};


#[derive(Args)]
// The corpus is optional here (it is required wherever else `CorpusArgs` is used).
#[command(mut_arg("corpus", |a| a.required(false)))]
pub(crate) struct GenerateArgs {
    /// The run's folder, as `dpkps pipeline --out-dir` writes it: its sequences.jsonl (the DP
    /// keyphrase sequences) and privacy-report.json are read.
    #[arg(long, required_unless_present = "sequences", conflicts_with = "sequences")]
    run: Option<PathBuf>,
    /// Instead of --run: a file of keyphrase sequences in the form of a run's sequences.jsonl
    /// (e.g. `dpkps evaluate --export-sequences`, for the train-on-synthetic benchmark). No
    /// privacy report comes with them, and none is written: such a corpus is not a run's
    /// release. Sent only with --unrecorded-sequences, to an endpoint on this machine.
    #[arg(long, value_name = "FILE")]
    sequences: Option<PathBuf>,
    /// Acknowledges that the sequences are not a recorded run's DP release (--sequences, or
    /// lines marked "dp": false or "epsilon_recorded": false): for a public corpus or a
    /// benchmark. They are then sent only to an endpoint on this machine.
    #[arg(long)]
    unrecorded_sequences: bool,
    /// The endpoint's base URL, as the page's Endpoint field takes it, e.g.
    /// http://127.0.0.1:8000/v1 (…/chat/completions is appended). No credentials in it: the key
    /// comes from $DPKPS_LLM_KEY.
    #[arg(long)]
    endpoint: String,
    /// The model the endpoint serves.
    #[arg(long)]
    model: String,
    /// Sampling temperature (0…2).
    #[arg(long, default_value_t = LlmSettings::default().temperature)]
    temperature: f64,
    /// Tokens generated per document at most (1…32768).
    #[arg(long, default_value_t = LlmSettings::default().max_tokens)]
    max_tokens: u32,
    /// Requests in flight at once (1…64; the page's "Requests at once").
    #[arg(long, default_value_t = LlmSettings::default().concurrency)]
    concurrency: usize,
    /// Seconds before a request is abandoned and retried (1…3600).
    #[arg(long, default_value_t = LlmSettings::default().timeout_s)]
    timeout: f64,
    /// Attempts per document, the first included (1…20). Timeouts, network errors, 408, 409,
    /// 429, 5xx and malformed replies are retried (after the server's Retry-After, else 0.5 s,
    /// 1 s, 2 s, … up to 30 s); other answers are not.
    #[arg(long, default_value_t = LlmSettings::default().max_attempts)]
    attempts: u32,
    /// OpenAI's frequency_penalty (−2…2): lowers a token's odds by how often it already
    /// appears in the reply, against loops. Not sent when 0.
    #[arg(long, default_value_t = LlmSettings::default().frequency_penalty, allow_negative_numbers = true)]
    frequency_penalty: f64,
    /// Keep every reply as it comes, without the check that it is prose using its keyphrases
    /// (by default a reply that is not is asked for once more, and the better kept).
    #[arg(long)]
    no_reply_check: bool,
    /// The document type ({doc_type} in the template and the system message).
    #[arg(long, default_value_t = PromptSettings::default().doc_type)]
    doc_type: String,
    /// The prompt template: must contain {keyphrases}; may use {label} and {doc_type}.
    #[arg(long, default_value_t = PromptSettings::default().template)]
    template: String,
    /// The system message (empty: none).
    #[arg(long, default_value_t = PromptSettings::default().system)]
    system: String,
    /// Few-shot examples, in the page's format: blocks separated by a blank line, each
    /// "keyphrases: a, b", optionally "label: x", then the text. Sent with every prompt.
    #[arg(long)]
    examples: Option<PathBuf>,
    /// Confirms that the few-shot examples are public (not taken from the private corpus);
    /// required with --examples.
    #[arg(long)]
    examples_public: bool,
    /// Also generate for the classes whose release is noise-dominated (their sequences are
    /// marked "noise_dominated": true in sequences.jsonl; left out by default, as on the page).
    #[arg(long)]
    include_noise_classes: bool,
    /// Send the documents that failed again (the page's "Retry failed documents").
    #[arg(long)]
    retry_failed: bool,
    /// Print each request body exactly as it would be sent (JSON lines on stdout) and send
    /// nothing: the page's review step.
    #[arg(long)]
    dry_run: bool,
    /// The output folder: job.json, outcomes.jsonl, audit.jsonl, then synthetic.jsonl,
    /// synthetic.csv, privacy-report.json and .html. The same command on the same folder
    /// resumes the job.
    #[arg(long)]
    out_dir: PathBuf,
    /// The private corpus (read as the other commands read it): when given, the generated
    /// documents are checked against it before synthetic.* are written (the replay check,
    /// docs/privacy.md): the flagged ones are left out unless --keep-flagged. Not DP.
    #[command(flatten)]
    replay_corpus: Option<CorpusArgs>,
    #[command(flatten)]
    replay: ReplayArgs,
    /// The privacy ledger the run was recorded in [default: $DPKPS_LEDGER, else
    /// ~/.local/share/dpkps/ledger.json]: read (never written) to tell whether --corpus is the
    /// corpus the run (its run.json) was recorded on.
    #[arg(long, requires = "corpus")]
    ledger: Option<PathBuf>,
}

/// The replay check's thresholds and what becomes of the flagged documents.
///
/// The thresholds go into the privacy report. Choose them before the check, not by trying
/// values on the private corpus until its results suit: thresholds tuned on the private
/// documents' results depend on them (not DP, and not stated as such anywhere). To study them,
/// use a corpus you may look at (`dpkps bench replay` on public or tuning data).
#[derive(Args)]
pub(crate) struct ReplayArgs {
    /// Keep the documents the replay check flags in synthetic.jsonl and .csv (left out by
    /// default, as on the page); the report counts them either way.
    #[arg(long, requires = "corpus")]
    keep_flagged: bool,
    /// The replay check's n-gram length in words. Set it before the check, never tuned on the
    /// private corpus's results (it goes into the report).
    #[arg(long, default_value_t = ReplayParams::default().ngram, requires = "corpus")]
    replay_ngram: usize,
    /// A rare n-gram is one that at most this many private documents contain. Set it before the
    /// check, never tuned on the private corpus's results (it goes into the report).
    #[arg(long, default_value_t = ReplayParams::default().rare_docs, requires = "corpus")]
    replay_rare_docs: u32,
    /// A shared run of this many words outside a document's keyphrases flags it. Set it before
    /// the check, never tuned on the private corpus's results (it goes into the report).
    #[arg(long, default_value_t = ReplayParams::default().flag_run, requires = "corpus")]
    replay_run: usize,
}

impl ReplayArgs {
    fn params(&self) -> ReplayParams {
        ReplayParams { ngram: self.replay_ngram, rare_docs: self.replay_rare_docs, flag_run: self.replay_run }
    }
}

impl GenerateArgs {
    fn llm_settings(&self) -> LlmSettings {
        LlmSettings {
            endpoint: self.endpoint.trim().to_string(),
            model: self.model.trim().to_string(),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            concurrency: self.concurrency,
            timeout_s: self.timeout,
            max_attempts: self.attempts,
            frequency_penalty: self.frequency_penalty,
            check_replies: !self.no_reply_check,
        }
    }

    /// The prompt settings, checked as the page checks them.
    fn prompt_settings(&self) -> Result<PromptSettings, CliError> {
        let few_shot = match &self.examples {
            None => Vec::new(),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| CliError::Input { path: path.display().to_string(), message: format!("cannot read: {e}") })?;
                parse_examples(&text).map_err(|e| CliError::Input { path: path.display().to_string(), message: e.to_string() })?
            }
        };
        if !few_shot.is_empty() && !self.examples_public {
            return Err(CliError::Input {
                path: "--examples".into(),
                message: "sent with every prompt: confirm with --examples-public that they are public (not taken from the private corpus)".into(),
            });
        }
        let p = PromptSettings { doc_type: self.doc_type.clone(), system: self.system.clone(), template: self.template.clone(), few_shot };
        p.check().map_err(|e| CliError::Input { path: "prompt settings".into(), message: e.to_string() })?;
        Ok(p)
    }
}

/// The API key from the environment: `None` when unset or blank.
fn api_key() -> Result<Option<String>, CliError> {
    let bad = |message: &str| CliError::Input { path: format!("${KEY_VAR}"), message: message.into() };
    match std::env::var(KEY_VAR) {
        Ok(k) if k.trim().is_empty() => Ok(None),
        Ok(k) if !k.trim().chars().all(|c| c.is_ascii_graphic()) => Err(bad("has characters an HTTP header cannot carry (spaces, non-ASCII)")),
        Ok(k) => Ok(Some(k.trim().to_string())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(bad("is not valid text")),
    }
}

/// What a generation job is built from: the keyphrase sequences, and the privacy report of the
/// run they come from (as written, and read).
struct Input {
    sequences: Vec<SequenceOut>,
    report_text: String,
    report: Option<PrivacyReport>,
    /// Where the sequences come from, and how many lines say they are no recorded release.
    source: Source,
    marked: usize,
    path: String,
}

/// The job's input: a run's folder (`--run`), or a file of sequences without a report
/// (`--sequences`; the report text is then empty).
fn read_input(args: &GenerateArgs) -> Result<Input, CliError> {
    let read = |path: PathBuf| {
        std::fs::read_to_string(&path).map(|t| (t, path.display().to_string())).map_err(|e| CliError::Input {
            path: path.display().to_string(),
            message: format!("cannot read: {e} (--run takes the folder that `dpkps pipeline --out-dir` wrote)"),
        })
    };
    let (dir, file) = match (&args.run, &args.sequences) {
        (Some(dir), _) => (Some(dir), dir.join("sequences.jsonl")),
        (None, Some(file)) => (None, file.clone()),
        (None, None) => {
            return Err(CliError::Input { path: "--run".into(), message: "give the run's folder (or --sequences FILE)".into() })
        }
    };
    let (text, path) = read(file)?;
    let (mut sequences, mut marked) = (Vec::new(), 0);
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let s: SequenceLine = serde_json::from_str(line)
            .map_err(|e| CliError::Input { path: path.clone(), message: format!("line {}: not a keyphrase sequence: {e}", n + 1) })?;
        marked += usize::from(s.is_marked_unrecorded());
        sequences.push(s.sequence);
    }
    if sequences.is_empty() {
        return Err(CliError::Input { path, message: "holds no keyphrase sequence: nothing to generate".into() });
    }
    let Some(dir) = dir else {
        return Ok(Input { sequences, report_text: String::new(), report: None, source: Source::File, marked, path });
    };
    let (report_text, report_path) = read(dir.join("privacy-report.json"))?;
    let report: PrivacyReport = serde_json::from_str(&report_text)
        .map_err(|e| CliError::Input { path: report_path, message: format!("is not a dpkps privacy report: {e}") })?;
    Ok(Input { sequences, report_text, report: Some(report), source: Source::Run, marked, path })
}

fn now_iso() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// A new job's id: 8 hex digits, as the page makes them.
fn new_job_id() -> Result<String, CliError> {
    let mut b = [0u8; 4];
    getrandom::fill(&mut b).map_err(|e| CliError::Dp(DpError::Rng(e.to_string())))?;
    Ok(format!("{:08x}", u32::from_be_bytes(b)))
}

/// What makes `saved` another job than `fresh`: what it sends differs. (How it sends —
/// requests at once, timeout, attempts — may change between runs of the command.)
fn differences(saved: &Job, fresh: &Job) -> Vec<&'static str> {
    let (a, b) = (&saved.llm, &fresh.llm);
    let mut what = Vec::new();
    let sequences = |j: &Job| j.items.iter().map(|i| (i.label.clone(), i.keyphrases.clone())).collect::<Vec<_>>();
    if sequences(saved) != sequences(fresh) {
        what.push("the run's sequences (--run, --include-noise-classes)");
    }
    if saved.report != fresh.report {
        what.push("the run's privacy report (--run)");
    }
    for (differs, name) in [
        (a.endpoint != b.endpoint, "--endpoint"),
        (a.model != b.model, "--model"),
        (a.temperature != b.temperature, "--temperature"),
        (a.max_tokens != b.max_tokens, "--max-tokens"),
        (a.frequency_penalty != b.frequency_penalty, "--frequency-penalty"),
        (a.check_replies != b.check_replies, "--no-reply-check"),
    ] {
        if differs {
            what.push(name);
        }
    }
    if saved.prompts != fresh.prompts || (what.is_empty() && saved.items != fresh.items) {
        what.push("the prompt settings (--doc-type, --template, --system, --examples)");
    }
    what
}

/// The job of the folder: the saved one (resumed, with this command's way of sending) if it
/// is the same job, else `fresh`; with the outcomes saved so far. Saved before anything is sent.
fn start(dir: &OutDir, fresh: Job) -> Result<Job, CliError> {
    let keyed = fresh.keyed;
    let (mut job, resumed) = match dir.saved_job()? {
        None => (fresh, false),
        Some(saved) => {
            let what = differences(&saved, &fresh);
            if !what.is_empty() {
                return Err(GenerateError::OtherJob { path: dir.path(JOB).display().to_string(), what: what.join(", ") }.into());
            }
            if saved.keyed && !keyed {
                return Err(GenerateError::KeyNeeded.into());
            }
            let llm = LlmSettings { concurrency: fresh.llm.concurrency, timeout_s: fresh.llm.timeout_s, max_attempts: fresh.llm.max_attempts, ..saved.llm.clone() };
            (Job { llm, keyed: saved.keyed || keyed, ..saved }, true)
        }
    };
    let saved = dir.saved_outcomes()?;
    if saved.torn {
        eprintln!("note: the last line of {} was cut short (the command was stopped while writing it): that document is sent again", store::OUTCOMES);
    }
    if let Some(r) = saved.records.iter().find(|r| r.job.as_deref() != Some(job.id.as_str())) {
        let whose = if resumed { format!("job {:?}, not this folder's job {}", r.job, job.id) } else { "a job whose job.json is missing".into() };
        return Err(CliError::Input {
            path: dir.path(store::OUTCOMES).display().to_string(),
            message: format!("holds outcomes of {whose}: give another --out-dir"),
        });
    }
    job.outcomes.clear();
    job.adopt(saved.records);
    dir.save_job(&job)?;
    Ok(job)
}

/// `dpkps generate`.
pub(crate) fn run(args: GenerateArgs) -> Result<(), CliError> {
    let key = api_key()?;
    let llm = args.llm_settings();
    llm.check()?;
    llm.check_key(key.as_deref().unwrap_or(""))?;
    // The page counts `*.localhost` as this machine (browsers pin it to loopback); this command
    // would ask the system's resolver, which may answer with any address: the key and the
    // prompts would then leave in clear over `http://`. Only localhost, 127/8 and [::1] here.
    let url = llm.endpoint_url()?;
    if url.host.ends_with(".localhost") {
        return Err(CliError::Input {
            path: "--endpoint".into(),
            message: format!(
                "{}: the command resolves *.localhost names through the system's resolver, which may send them off this machine; \
                 use localhost, 127.0.0.1 or [::1]",
                url.origin()
            ),
        });
    }
    let prompts = args.prompt_settings()?;
    if let Some(corpus) = &args.replay_corpus {
        if corpus.corpus.is_empty() {
            return Err(CliError::Input {
                path: "--text-col, --label-col, --format, --label-from-dir".into(),
                message: "they say how to read the corpus of the replay check: give it with --corpus".into(),
            });
        }
        // Refused before anything is sent: the thresholds, the files that must be there, and
        // their columns (the header and first document of each file).
        args.replay.params().check().map_err(|e| CliError::Input { path: "--replay-*".into(), message: e.to_string() })?;
        crate::cli::replay::probe_corpus(corpus)?;
    }
    let Input { sequences: all, report_text, report, source, marked, path } = read_input(&args)?;
    // Sequences that are no recorded release get no privacy report, even from a run's folder:
    // `select` then takes what they make only with --unrecorded-candidates.
    let (report_text, report) = if marked > 0 { (String::new(), None) } else { (report_text, report) };
    // Refused before anything is sent (a dry run sends nothing).
    if !args.dry_run {
        check_sendable(source, marked, args.unrecorded_sequences, &llm, &path)?;
    }
    let sequences = SequenceOut::to_generate(&all, args.include_noise_classes);
    if sequences.len() < all.len() {
        eprintln!(
            "left out {} sequences of noise-dominated classes (--include-noise-classes includes them)",
            all.len() - sequences.len()
        );
    }
    if sequences.is_empty() {
        return Err(CliError::Input {
            path: args.run.as_ref().map_or_else(|| args.sequences.clone().unwrap_or_default(), |r| r.join("sequences.jsonl")).display().to_string(),
            message: "every sequence is of a noise-dominated class: nothing to generate unless --include-noise-classes".into(),
        });
    }
    let mut fresh = Job::new(new_job_id()?, now_iso(), llm, prompts, &sequences, report_text);
    fresh.keyed = key.is_some();
    if args.dry_run {
        for item in &fresh.items {
            println!("{}", fresh.llm.body(&item.messages));
        }
        eprintln!(
            "{} requests to {}, about {} prompt tokens in all; nothing was sent (--dry-run)",
            fresh.items.len(),
            fresh.llm.completions_url(),
            fresh.estimated_tokens()
        );
        return Ok(());
    }
    let dir = OutDir::open(&args.out_dir)?;
    let job = start(&dir, fresh)?;
    let pending = job.pending(args.retry_failed);
    eprintln!(
        "job {}: {} documents, {} done and {} failed before; sending {} to {} ({} at a time)",
        job.id,
        job.items.len(),
        job.done(),
        job.failed(),
        pending.len(),
        job.llm.completions_url(),
        job.llm.concurrency.min(pending.len().max(1))
    );
    let session = Session {
        dir: &dir,
        client: HttpClient::new(key, job.llm.timeout_s, job.llm.reply_cap(), job.llm.endpoint_url()?.is_loopback()),
        job: RefCell::new(job.clone()),
        stop: Arc::new(AtomicBool::new(false)),
        halted: RefCell::new(None),
    };
    futures::executor::block_on(dpkps_core::llm::generate(&session, &job, pending));
    let (job, halted) = (session.job.into_inner(), session.halted.into_inner());
    let (written, replay) = match &args.replay_corpus {
        None => (job.clone(), None),
        Some(corpus) => replay_check(&job, corpus, &args)?,
    };
    // The run's report as read, or with the replay check's counts (none with --sequences).
    let report = report.map(|r| match replay {
        Some(summary) => {
            let r = PrivacyReport { replay_check: Some(summary), ..r };
            (crate::cli::io::json_text(&r), r.to_html())
        }
        None => (job.report.clone(), r.to_html()),
    });
    dir.write_results(&written, report.as_ref().map(|(json, html)| (json.as_str(), html.as_str())))?;
    let forms: Vec<String> = written.forms().iter().map(|(f, n)| format!("{n} {}", f.as_str())).collect();
    eprintln!(
        "wrote synthetic.jsonl and synthetic.csv ({} documents: {}){} to {} (the requests: audit.jsonl)",
        written.done(),
        if forms.is_empty() { "none".to_string() } else { forms.join(", ") },
        if report.is_some() { ", privacy-report.json and .html" } else { " (no privacy report: --sequences are not a run's release)" },
        args.out_dir.display()
    );
    if let Some(h) = halted {
        return Err(GenerateError::Halted(h).into());
    }
    match job.failed() {
        0 => Ok(()),
        failed => Err(GenerateError::Failed { failed, total: job.items.len() }.into()),
    }
}

/// The replay check of the generated documents against the private corpus (`dpkps_core::replay`,
/// `crate::cli::replay`): the job as it is written (flagged documents left out unless kept)
/// and what the report says of the check. Prints counts per flagged document, never its
/// shared words (private text).
fn replay_check(job: &Job, corpus: &CorpusArgs, generate: &GenerateArgs) -> Result<(Job, Option<ReplaySummary>), CliError> {
    let args = &generate.replay;
    let t0 = std::time::Instant::now();
    let (check, figures): (ReplayCheck, _) = crate::cli::replay::check_corpus(corpus, job.synthetic_docs(), args.params())?;
    // Nothing else ties --corpus to the run: the run's ledger entry does, when it can be found.
    if let Some(run) = &generate.run {
        crate::cli::replay::tell_corpus_of_run(run, generate.ledger.as_deref(), &figures);
    }
    let flagged = check.flagged();
    eprintln!(
        "replay check (not DP): {} generated documents against {} private documents in {:.1} s: {} flagged ({})",
        check.docs.len(),
        figures.documents,
        t0.elapsed().as_secs_f64(),
        flagged.len(),
        check.params.describe()
    );
    for d in check.docs.iter().filter(|d| d.flagged) {
        let label = job.items.get(d.index).and_then(|i| i.label.as_deref()).unwrap_or("");
        eprintln!(
            "  document #{} {label}: longest shared run {} words ({} outside its keyphrases), {} rare {}-word sequence(s){}",
            d.index + 1,
            d.longest_run,
            d.run_outside_keyphrases,
            d.rare_ngrams,
            check.params.ngram,
            if args.keep_flagged { "" } else { ": left out" }
        );
    }
    let dropped = !args.keep_flagged;
    let written = if dropped { job.without(&flagged) } else { job.clone() };
    Ok((written, Some(check.summary(dropped))))
}

/// The command's side of the shared sending loop: the HTTP client, the output folder, the
/// job in memory (counted as outcomes are saved), and the halt.
struct Session<'a> {
    dir: &'a OutDir,
    client: HttpClient,
    job: RefCell<Job>,
    /// Set on a halt: no new request, and retry waits end.
    stop: Arc<AtomicBool>,
    halted: RefCell<Option<Halt>>,
}

impl Transport for Session<'_> {
    async fn post(&self, url: &str, body: &str, timeout_s: f64) -> Result<Reply, LlmError> {
        self.client.post(url, body, timeout_s).await
    }
}

impl JobStore for Session<'_> {
    type Error = std::io::Error;

    async fn audit(&self, entry: &AuditEntry) -> Result<(), std::io::Error> {
        if let (AuditPhase::Response, Some(e)) = (entry.phase, &entry.error) {
            eprintln!("document #{}, attempt {}: {}", entry.index + 1, entry.attempt, crate::cli::term::terminal_safe(e));
        }
        self.dir.append_audit(entry)
    }

    async fn save_outcome(&self, job: &str, index: usize, outcome: &Outcome) -> Result<(), std::io::Error> {
        self.dir.append_outcome(job, index, outcome)
    }

    fn counted(&self, index: usize, outcome: Outcome) {
        let mut job = self.job.borrow_mut();
        let what = match &outcome {
            Outcome::Done { attempts, .. } => format!("done ({attempts} attempt{})", if *attempts == 1 { "" } else { "s" }),
            Outcome::Failed { error, attempts } => format!("FAILED after {attempts} attempt(s): {error}"),
        };
        let id = job.id.clone();
        job.record(&id, index, outcome);
        let what = crate::cli::term::terminal_safe(&what);
        eprintln!("document #{}: {what} [{} of {} done, {} failed]", index + 1, job.done(), job.items.len(), job.failed());
    }
}

impl Clock for Session<'_> {
    fn now(&self) -> String {
        now_iso()
    }

    async fn sleep(&self, ms: f64) {
        http::sleep(ms, self.stop.clone()).await;
    }
}

impl Control for Session<'_> {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn halt(&self, why: Halt) {
        self.stop.store(true, Ordering::Relaxed);
        self.halted.borrow_mut().get_or_insert(why);
    }
}
