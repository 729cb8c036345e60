//! The sentences and figures the page shows, built from plain values: no signals, no DOM, so
//! that the views only place them. Plain Rust: compiled on every target and tested natively
//! (the rest of `ui` is built for wasm32 only).

use dpkps_core::eval::{ArmReport, EvalReport};
use dpkps_core::llm::Job;
use dpkps_core::protocol::{AccountStatus, CorpusSummary, RunResult};
use dpkps_core::replay::{DocReplay, ReplayParams};

/// 12345 → "12,345".
pub fn group_thousands(n: impl ToString) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A file size: "12.3 kB" or "1.2 MB".
pub fn kilobytes(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{:.1} MB", n as f64 / 1e6)
    } else {
        format!("{:.1} kB", n as f64 / 1e3)
    }
}

/// The worker's idle-time pass over a user's own list, in plain words.
pub fn own_list_note(done: u64, total: u64) -> String {
    let n = group_thousands;
    if done >= total {
        format!("{} of {} terms embedded in the background, kept in this page's memory: later runs need not embed them", n(done), n(total))
    } else {
        format!("{} of {} terms embedded in the background so far (in the list's order, while the page is idle; a run goes first)", n(done), n(total))
    }
}

/// How many labels the corpus has, without their counts (a class set picked
/// by counts would depend on the private data; `dpkps ingest` prints them for the curator).
pub fn classes_line(s: &CorpusSummary) -> String {
    match s.classes.len() {
        0 => "no labels".to_string(),
        n => format!("{n} label(s), listed under “Classes (public)” below (counts not shown)"),
    }
}

/// The privacy unit, in plain words: what the guarantee protects.
pub fn unit_line(s: &CorpusSummary) -> String {
    match s.persons {
        Some(n) => format!(
            "the person: {} named by the person column; each person's documents count together as one (in the class holding most of them), so every patient is protected at the run's ε",
            group_thousands(n as u64)
        ),
        None => "the document: a patient with k documents is protected at k·ε. Choose a person column to protect each patient at ε.".into(),
    }
}

/// The summary's vocabulary line.
pub fn vocabulary_line(s: &CorpusSummary) -> String {
    format!("{} ({} terms), {} distinct terms matched", s.vocabulary, s.vocabulary_terms, s.distinct_matched)
}


/// The note by the Run button: what this corpus has spent, and what the run will add
/// (`planned`: the run's ε, with whether it reuses the last run's private vocabulary; `None`:
/// the settings are not valid yet).
pub fn ledger_note(s: &CorpusSummary, planned: Option<(f64, bool)>) -> String {
    match (s.earlier_runs, planned) {
        (0, Some((p, _))) => format!("No earlier run on this corpus in this browser. This run spends ε = {p}."),
        (n, Some((p, reuses))) => format!(
            "This corpus already had {n} run(s) in this browser, spending ε = {:.3}. Running again {}adds ε = {p:.3}: the total becomes ε = {:.3}.",
            s.spent_before,
            if reuses { "reuses the last run's private vocabulary (already paid for, no new ε_voc) and " } else { "" },
            s.spent_before + p
        ),
        (n, None) => format!("Spent on this corpus so far: ε = {:.3} over {n} run(s).", s.spent_before),
    }
}

/// What the run spent, and where its embeddings came from.
pub fn spent_line(r: &RunResult) -> String {
    format!(
        "This run spent ε = {:.3}{}; total on this corpus in this browser: ε = {:.3}. {} terms embedded by the model, {} read (bundled vectors, this session's memory, this browser's cache).",
        r.epsilon_run,
        match &r.vocabulary_from {
            Some((from, outputs)) => format!(
                " (its private vocabulary is the one run {from} released and paid for: reused, no new ε_voc; these outputs are ε = {outputs:.3})"
            ),
            None => String::new(),
        },
        r.epsilon_total,
        r.embedded_fresh,
        r.embedded_from_cache
    )
}

/// By the settings, when N covers the loaded public list: ε_voc will not be spent, and why.
pub fn whole_list_note(s: &dpkps_core::protocol::RunSettings) -> Option<String> {
    let terms = s.public_terms.filter(|_| s.whole_list())?;
    Some(format!(
        "N = {} covers the whole public list ({terms} terms): the private vocabulary will be that list, read from no \
         document, so ε_voc is not spent. Set N below {terms} to draw a noisy top N instead (it costs ε_voc).",
        s.top_n
    ))
}

/// Why Ṽ shows no noisy counts when it is the whole public list (N at least its size).
pub fn whole_list_line(r: &RunResult) -> Option<String> {
    r.vocabulary_whole_list.map(|n| {
        format!(
            "N covers the whole public list ({n} terms), so the private vocabulary is that list: it was drawn from no \
             document, has no noisy counts, and cost no ε_voc. The example sequences show what the classes hold."
        )
    })
}

/// The 20 top terms of Ṽ with their noisy counts and the bar's style (width against the largest).
pub fn top_terms(r: &RunResult) -> Vec<(String, i64, String)> {
    let max = r.vocabulary.iter().map(|(_, c)| *c).max().unwrap_or(1).max(1) as f64;
    r.vocabulary
        .iter()
        .take(20)
        .map(|(t, c)| (t.clone(), *c, format!("width: {:.1}%", 100.0 * (*c).max(0) as f64 / max)))
        .collect()
}

/// Up to four example sequences per class (heading, sequences as "a · b · c"), classes in the
/// order the sequences come; a noise-dominated class's heading says so, as the signal table does.
pub fn examples(r: &RunResult) -> Vec<(String, Vec<String>)> {
    let mut labels: Vec<Option<String>> = r.sequences.iter().map(|s| s.label.clone()).collect();
    labels.dedup();
    labels
        .into_iter()
        .map(|l| {
            let items = r.sequences.iter().filter(|s| s.label == l).take(4).map(|s| s.keyphrases.join(" · ")).collect();
            // Marked as the signal table marks it: such a class is not generated by default.
            let noise = r.sequences.iter().any(|s| s.label == l && s.noise_dominated);
            let heading = l.unwrap_or_else(|| "(unlabelled)".into());
            (if noise { format!("{heading} (noise-dominated: not generated by default)") } else { heading }, items)
        })
        .collect()
}

/// The per-class signal table: (class, signal, terms above the noise, sequences (and how
/// many are shorter than L), noise-dominated).
pub fn signal_rows(r: &RunResult) -> Vec<(String, String, String, String, bool)> {
    r.signals
        .iter()
        .map(|c| {
            let seqs = match c.shorter_than_l {
                0 => c.sequences.to_string(),
                k => format!("{} ({k} shorter than L)", c.sequences),
            };
            (dpkps_core::input::classes::class_name(&c.label), format!("{:.1}", c.signal), c.supported_terms.to_string(), seqs, c.noise_dominated)
        })
        .collect()
}

/// The noise-dominated classes: (how many, the prompts they would add, their names), if any.
pub fn noise_classes(r: &RunResult) -> Option<(usize, usize, String)> {
    let flagged: Vec<String> = r.signals.iter().filter(|c| c.noise_dominated).map(|c| dpkps_core::input::classes::class_name(&c.label)).collect();
    let prompts = r.sequences.iter().filter(|s| s.noise_dominated).count();
    (!flagged.is_empty()).then(|| (flagged.len(), prompts, flagged.join(", ")))
}

/// One arm of the utility check: (name, bar style, accuracy, macro-F1 and, for a sampler arm, the
/// share of `nonprivate`'s accuracy it keeps: each repetition's over `nonprivate`'s on the same
/// held-out documents, mean ± sd, [`ArmReport::accuracy_ratio`]).
pub fn arm_row(a: &ArmReport) -> (String, String, String, String) {
    let kept = a.accuracy_ratio.map_or(String::new(), |r| format!(" · keeps {:.2} ± {:.2}", r.mean, r.std));
    (
        format!("{} · {}", a.arm, a.view),
        format!("width: {:.1}%", 100.0 * a.accuracy_mean.clamp(0.0, 1.0)),
        format!("{:.2} ± {:.2}", a.accuracy_mean, a.accuracy_std),
        format!("macro-F1 {:.2}{kept}", a.macro_f1_mean),
    )
}

/// The sampler arms not scored in some repetition, once each: (name, why).
pub fn not_scored_rows(r: &EvalReport) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for n in &r.nothing_to_train {
        let runs = r.nothing_to_train.iter().filter(|m| m.arm == n.arm).count();
        let row = (format!("{} · not scored", n.arm), format!("{runs} of {} repetitions: {}", r.params.seeds.len(), n.reason));
        if !out.contains(&row) {
            out.push(row);
        }
    }
    out
}

/// What a new run would cost, from this run's DP outputs: its ε again, less ε_voc when the
/// private vocabulary is reused.
pub fn rerun_cost(r: &RunResult) -> String {
    let eps_voc = serde_json::from_str::<dpkps_core::run::report::PrivacyReport>(&r.report).ok().filter(|p| p.vocabulary_from.is_none()).map(|p| p.epsilon_vocabulary);
    match eps_voc {
        Some(v) if v > 0.0 => format!("ε = {:.3}, or {:.3} with the private vocabulary reused", r.epsilon_run, r.epsilon_run - v),
        _ => format!("ε = {:.3}", r.epsilon_run),
    }
}

/// How the utility figures were computed (`n_test`: held-out documents).
pub fn utility_hint(n_test: usize) -> String {
    format!(
        "Accuracy on {} held-out documents (20%, 3 repetitions) of a classifier trained on each kind of sequence.                              dp-…: DP keyphrase sequences of each sampler; nonprivate: the documents' own sequences (upper bound);                              majority: always the largest class (floor). keeps: the share of nonprivate's accuracy a sampler keeps on the same held-out documents, mean ± sd over the repetitions. Pick the sampler that keeps the most.",
        n_test
    )
}

/// What the DP utility check on the corpus will cost, by its button: `epsilon` (None: the
/// settings cannot be planned yet) and why it cannot run now, if it cannot.
pub fn dp_check_cost(epsilon: Option<f64>, refused: Option<&str>) -> String {
    let cost = match epsilon {
        Some(e) => format!(
            "This check costs ε = {e:.3}, charged to the ledger: it compares every sampler whose release fits these \
             settings (ε_voc unless N covers the public list, + ε_kde per sampler), and its figures are differentially private."
        ),
        None => "The check compares every sampler whose release fits the settings, for ε_voc (unless N covers the public list) + ε_kde per sampler, charged to the ledger.".into(),
    };
    match refused {
        Some(why) => format!("{cost} Not now: {why}."),
        None => cost,
    }
}

/// One arm of the DP check: (sampler, bar width, noisy accuracy).
pub fn dp_arm_row(a: &dpkps_core::eval::dp_check::CheckArm) -> (String, String, String) {
    (a.sampler.clone(), format!("width: {:.1}%", 100.0 * a.noisy_accuracy.clamp(0.0, 1.0)), format!("{:.3}", a.noisy_accuracy))
}

/// What the DP check's figures are.
pub fn dp_check_note(id: &str, r: &dpkps_core::eval::dp_check::CheckResult) -> String {
    format!(
        "Differentially private: these accuracies are noisy (discrete Laplace of scale {:.3} on each count), and the check \
         is recorded in the ledger as run {id} with ε = {:.3} (training side {:.3}, scores {:.3}). Classifiers were trained \
         on each sampler's DP sequences from about {:.0}% of the documents (each held out by its own coin) and tested \
         on the others (noisy number tested: {}).",
        r.noise_scale,
        r.epsilon,
        r.epsilon_train,
        r.epsilon_select,
        100.0 * (1.0 - r.holdout),
        r.noisy_tested
    )
}

/// The arms whose release is noise-dominated in some class (a DP output): such classes are left
/// out of the arm's training, as generation would leave them out; in every class, the arm has
/// nothing to train on and scores 0. `None` when no arm has one.
pub fn dp_check_flags(r: &dpkps_core::eval::dp_check::CheckResult) -> Option<String> {
    let every: Vec<&str> = r.arms.iter().filter(|a| r.classes > 0 && a.noise_dominated.len() >= r.classes).map(|a| a.sampler.as_str()).collect();
    let some: Vec<String> = r
        .arms
        .iter()
        .filter(|a| !a.noise_dominated.is_empty() && a.noise_dominated.len() < r.classes)
        .map(|a| format!("{} ({} of {})", a.sampler, a.noise_dominated.len(), r.classes))
        .collect();
    let mut parts = Vec::new();
    if !every.is_empty() {
        parts.push(format!("Noise-dominated in every class, so nothing would be generated (scored 0): {}.", every.join(", ")));
    }
    if !some.is_empty() {
        parts.push(format!("Noise-dominated in some classes, left out of training as generation would leave them out: {}.", some.join(", ")));
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// On the results, when a DP utility check chose the run's sampler: what the run's report says
/// of it (`report_json`: the run's privacy report). `None` otherwise.
pub fn chosen_by_line(report_json: &str) -> Option<String> {
    let report: dpkps_core::run::report::PrivacyReport = serde_json::from_str(report_json).ok()?;
    report.settings_chosen_by.is_some().then(|| report.chosen_text())
}

/// By the sampler, when it was taken from a DP check.
pub fn chosen_by_note(id: &str) -> String {
    format!("Chosen by the DP utility check {id}: the run's privacy report will say so. Choosing another sampler clears this.")
}

/// The account's line: what it spent, of which budget, and this corpus's share.
pub fn account_status(s: &AccountStatus) -> String {
    let budget = match s.budget {
        Some(b) => format!(" of a budget of ε = {b}"),
        None => " (no budget yet: set one before the first run)".into(),
    };
    format!(
        "Account “{}”: ε = {:.3} spent{budget}. This corpus: ε = {:.3} over {} run(s).",
        s.name, s.spent, s.corpus_spent, s.corpus_runs
    )
}

/// The warning when the corpus overlaps an earlier corpus of the account (None: no overlap
/// worth saying).
pub fn overlap_warning(s: &AccountStatus) -> Option<String> {
    let own = s.overlaps.first().copied().filter(|&o| o >= dpkps_core::ledger::overlap::WARN_OVERLAP).map(|worst| {
        format!(
            "This corpus overlaps an earlier corpus of the account “{}” by about {:.0}% of documents. It is not a fresh \
             dataset: its ε adds to the account's total, and the budget covers both.",
            s.name,
            100.0 * worst
        )
    });
    let others = s.other_accounts.first().map(|(a, o)| {
        format!(
            "This corpus overlaps a corpus of the account “{a}” by about {:.0}% of documents: the people in both carry \
             both accounts' ε, so that corpus's runs count against this account's budget too.",
            100.0 * o
        )
    });
    let both: Vec<String> = own.into_iter().chain(others).collect();
    (!both.is_empty()).then(|| both.join(" "))
}

/// How many non-DP checks were run on this corpus.
pub fn checks_note(s: &AccountStatus) -> String {
    match s.non_dp_checks {
        0 => "No non-DP utility check has been run on this corpus.".to_string(),
        n => format!(
            "A non-DP utility check has been run on this corpus {n} time(s), comparing {} setting(s). \
             The privacy report states this: settings chosen from those figures are tuned on the private data.",
            s.settings_compared
        ),
    }
}

/// The first three prompts of `job`, exactly as they will be sent (role-tagged messages).
pub fn prompt_sample(job: &Job) -> String {
    let first: Vec<String> = job
        .items
        .iter()
        .take(3)
        .map(|i| i.messages.iter().map(|m| format!("[{}] {}", m.role, m.content)).collect::<Vec<_>>().join("\n"))
        .collect();
    first.join("\n\n")
}

/// Every prompt of `job`, numbered (the last message of each).
pub fn all_prompts(job: &Job) -> String {
    job.items
        .iter()
        .map(|i| format!("#{} {}", i.index + 1, i.messages.last().map(|m| m.content.as_str()).unwrap_or("")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// What leaves this browser, in two parts (the view shows them in a row): exactly what each
/// request carries, as `job` builds it (`dpkps_core::llm::prompt::PromptSettings::messages`,
/// `dpkps_core::llm::LlmSettings::body`). The class name and the document type are named only when
/// the template or the system message uses them; the API key only when there is one.
pub fn leaves_summary(job: &Job) -> (String, String) {
    let (n, tokens, url) = (job.items.len(), job.estimated_tokens(), job.llm.completions_url());
    let p = &job.prompts;
    let uses = |placeholder: &str| p.template.contains(placeholder) || p.system.contains(placeholder);
    let mut filled = vec!["one sequence's DP keyphrases"];
    if uses("{label}") && job.items.iter().any(|i| i.label.is_some()) {
        filled.push("its class name (declared by you)");
    }
    // `{label}` of an unlabelled document is the document type (`PromptSettings::fill`).
    if uses("{doc_type}") || (uses("{label}") && job.items.iter().any(|i| i.label.is_none())) {
        filled.push("the document type");
    }
    let mut parts = vec![format!("your template filled with {}", join_and(&filled))];
    if !p.system.trim().is_empty() {
        parts.insert(0, "your system message".to_string());
    }
    if !p.few_shot.is_empty() {
        parts.push(format!("your {} public example(s), each with its keyphrases, label and text", p.few_shot.len()));
    }
    let mut settings = vec!["model", "temperature", "max tokens"];
    if job.llm.frequency_penalty != 0.0 {
        settings.push("frequency penalty");
    }
    (
        format!("{n} requests to {url}, about {tokens} prompt tokens in all. Each holds {}", parts.join(", ")),
        format!(
            ", and the model settings ({}); nothing else{}.",
            settings.join(", "),
            if job.keyed { " but your API key, in the authorization header" } else { "" }
        ),
    )
}

/// "a", "a and b", "a, b and c".
fn join_and(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Beside "Remember it in this browser" on a page opened from a file (where it is not offered).
pub const REMEMBER_FROM_FILE: &str = "Not offered on a page opened from a file: every page opened from a file in this browser \
     shares one storage, so any other HTML file opened from disk could read a remembered key. Type it for each session.";

/// The page's promise, at its top: what leaves it, exactly.
pub const ASSURANCE: &str = "Your documents never leave this page. Only the LLM step sends anything, and only to the endpoint \
     you choose: prompts made of differentially private keyphrases with the public text you control (your declared class names, \
     the document type, your template, system message and public examples), the model settings, and your API key if you give one. \
     You see every prompt before it is sent.";

/// Asked before "Discard this job".
pub const DISCARD_JOB: &str = "Discard this job? Its generated documents and its audit log entries (every request and answer) \
     are deleted from this browser; download what you want to keep first.";

/// What the replay check's status line says (`crate::state::replay`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayFacts {
    /// A document has been generated.
    pub generated: bool,
    /// A corpus is loaded.
    pub corpus: bool,
    /// Running: (bytes read, of).
    pub running: Option<(u64, u64)>,
    /// Checked, current: (documents checked, flagged).
    pub checked: Option<(usize, usize)>,
    /// Not current, but an earlier check of this job applies: (documents it checked, flagged,
    /// documents generated since).
    pub earlier: Option<(usize, usize, usize)>,
    /// Answers of the audit log beyond the documents that the last check flagged.
    pub answers_flagged: usize,
    /// The flagged documents are left out of the corpus downloads.
    pub drop: bool,
}

/// Where the replay check stands, in a few sentences.
pub fn replay_line(f: &ReplayFacts) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut line = match (f.generated, f.running, f.checked, f.earlier) {
        (false, ..) => return "Nothing generated yet to check.".into(),
        (_, Some((done, total)), ..) if total > 0 => format!("Checking for replay… {}% of the corpus read.", (100 * done / total).min(100)),
        (_, Some(_), ..) => "Checking for replay…".into(),
        (_, None, Some((n, 0)), _) => format!("Checked for replay: none of the {n} generated documents repeats private text beyond the thresholds."),
        (_, None, Some((n, f_)), _) if f.drop => format!("Checked for replay: {f_} of {n} generated documents flagged; they are left out of the corpus downloads."),
        (_, None, Some((n, f_)), _) => format!("Checked for replay: {f_} of {n} generated documents flagged; you chose to keep them in the downloads."),
        (_, None, None, Some(_)) if !f.corpus => "Not checked again since the last check: load the private corpus (step 1) to check again.".into(),
        (_, None, None, Some((_, _, 0))) => "Not checked for replay against the corpus loaded since.".into(),
        (_, None, None, Some(_)) => "Not checked for replay since more documents were generated.".into(),
        (_, None, None, None) if !f.corpus => "Not checked for replay: load the private corpus (step 1) to compare the generated documents \
            with it before downloading them."
            .into(),
        (_, None, None, None) => "Not checked for replay yet: the downloads hold every generated document.".into(),
    };
    if f.checked.is_none() {
        if let Some((n, flagged, since)) = f.earlier {
            line.push_str(&match (flagged, f.drop) {
                (0, _) => format!(" None of the {n} document{} checked before was flagged.", plural(n)),
                (1, true) => format!(" The document flagged by the check before (1 of {n}) stays left out of the corpus downloads."),
                (k, true) => format!(" The {k} documents flagged by the check before (of {n}) stay left out of the corpus downloads."),
                (k, false) => format!(" The check before flagged {k} of {n} documents; you chose to keep them in the downloads."),
            });
            if since > 0 {
                line.push_str(&if since == 1 {
                    " The document generated since is not checked: the downloads hold it.".to_string()
                } else {
                    format!(" The {since} documents generated since are not checked: the downloads hold them.")
                });
            }
        }
    }
    if f.answers_flagged > 0 {
        line.push_str(&format!(
            " {} other answer{} in the audit log (a reply asked for once more, or one that did not read) repeat{} private text: withheld from the audit log download.",
            f.answers_flagged,
            plural(f.answers_flagged),
            if f.answers_flagged == 1 { "s" } else { "" }
        ));
    }
    if f.running.is_some() {
        line.push_str(" The corpus and audit log downloads are disabled until it ends.");
    }
    line
}

/// What the check looks for, and that it is not DP (under the replay heading).
pub fn replay_hint() -> String {
    format!(
        "Each generated document is compared with the loaded private corpus, in this page: it is flagged for {}. \
         The keyphrases it was given never count. The result is not differentially private: it is for your eyes \
         (the shared words below are private text and go into no download), and the privacy report states only the counts.",
        ReplayParams::default().describe()
    )
}

/// One row of the flagged table: number, label, longest run, words outside keyphrases,
/// rare n-grams, the shared words (private text, shown here only).
pub fn replay_row(d: &DocReplay, job: &Job) -> [String; 6] {
    let label = job.items.get(d.index).and_then(|i| i.label.clone()).unwrap_or_default();
    // The words that flagged it: the long run, else the first rare sequence.
    let by_run = d.run_outside_keyphrases >= ReplayParams::default().flag_run;
    let span = if by_run { d.longest_span.clone() } else { d.rare_span.clone().or_else(|| d.longest_span.clone()) };
    [format!("#{}", d.index + 1), label, d.longest_run.to_string(), d.run_outside_keyphrases.to_string(), d.rare_ngrams.to_string(), span.unwrap_or_default()]
}

// ---- the recipient's mode (`super::state::recipient`) ----

/// What the recipient's mode is, and what it does with the documents.
pub const RECIPIENT_NOTE: &str = "Train a classifier on a released synthetic corpus and adapt it to your own unlabelled \
documents (Deep CORAL). Your documents are read and embedded inside this page's worker: they are never uploaded or \
stored, and nothing here spends privacy budget (the synthetic corpus is already a DP release).";

/// A model's name as the page shows it.
pub fn model_title(name: &str, coral_weight: f64) -> String {
    if name == "coral" {
        format!("Adapted (CORAL term, λ = {coral_weight})")
    } else {
        "Plain (no CORAL term)".to_string()
    }
}

/// A model's name in the loss curve's legend.
pub fn model_short(name: &str) -> &'static str {
    if name == "coral" {
        "adapted (CORAL term)"
    } else {
        "plain"
    }
}

/// The figures of a training: documents, classes, time.
pub fn trained_line(r: &dpkps_core::protocol::TrainResult) -> String {
    let c = &r.counts;
    let mut s = format!(
        "Trained on {} synthetic documents in {} classes; {} of your unlabelled documents; {} test documents scored.",
        c.labelled,
        r.classes.len(),
        c.unlabelled,
        c.test
    );
    if c.labelled_without_label > 0 {
        s.push_str(&format!(" {} synthetic documents without a label were left out.", c.labelled_without_label));
    }
    if c.test_unknown_label > 0 {
        s.push_str(&format!(" {} test documents have a label that is none of the classes: left out of the scores.", c.test_unknown_label));
    }
    if c.unlabelled < 2 {
        s.push_str(" Without at least two unlabelled documents there is nothing to adapt to: the plain classifier was trained.");
    }
    let per = if r.embedded > 0 { r.embed_seconds / r.embedded as f64 } else { 0.0 };
    let helpers = match r.helpers {
        0 => "this worker alone".to_string(),
        n => format!("{} of them by {n} helper worker{}", r.by_helpers, if n == 1 { "" } else { "s" }),
    };
    s.push_str(&format!(
        " Embedding {} documents took {:.1} s ({per:.2} s a document; {helpers}){}, training {:.1} s.",
        r.embedded,
        r.embed_seconds,
        if r.reused > 0 { format!("; {} more were embedded by an earlier training in this page", r.reused) } else { String::new() },
        r.train_seconds
    ));
    s
}

/// A score to three places.
pub fn fixed3(x: f64) -> String {
    format!("{x:.3}")
}

pub mod vote;

#[cfg(test)]
mod tests;
