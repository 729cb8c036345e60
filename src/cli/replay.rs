//! The replay check on the command line (`dpkps_core::replay`): the private corpus files streamed
//! once through the index of the synthetic documents, as the page's worker streams the files
//! it was given. Used by `dpkps generate --corpus` and `dpkps bench replay`.
//!
//! Privacy: the texts are read one document at a time and not kept; what comes back is
//! per synthetic document (see `dpkps_core::replay`). Its spans are private text: callers print
//! counts only.

use std::cell::Cell;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use dpkps_core::input::corpus::{self, Fields, Format, Ingest};
use dpkps_core::ledger::Run;
use dpkps_core::replay::{ReplayCheck, ReplayIndex, ReplayParams, SyntheticDoc};

use super::args::corpus::CorpusArgs;

use super::error::CliError;

use super::io::inputs;

/// What the pass read: for the curator's terminal only (exact counts, not DP), and the corpus
/// keys (`dpkps_core::input::corpus::CorpusKeys`), to compare with the run's ledger entry.
pub(crate) struct PassFigures {
    pub(crate) documents: u64,
    pub(crate) fingerprint: String,
    pub(crate) legacy: String,
}

/// Checks `synthetic` against the corpus that `args` names (read with its columns).
pub(crate) fn check_corpus(args: &CorpusArgs, synthetic: Vec<SyntheticDoc>, params: ReplayParams) -> Result<(ReplayCheck, PassFigures), CliError> {
    let mut index = ReplayIndex::new(synthetic, params).map_err(|e| CliError::Input { path: "--replay-*".into(), message: e.to_string() })?;
    let fields = Fields { text: args.text_col.clone(), label: args.label_col.clone(), person: None };
    let mut ingest = Ingest::new(args.labelled());
    for input in inputs(args)? {
        let name = input.path.display().to_string();
        let file = File::open(&input.path).map_err(|e| CliError::Input { path: name.clone(), message: format!("cannot open: {e}") })?;
        corpus::stream(BufReader::with_capacity(1 << 20, file), &name, input.format, &fields, input.txt_label.as_deref(), &mut ingest, &mut |doc| {
            index.add_private(doc.text)
        })?;
    }
    let (_, keys) = ingest.finish_keyed("the corpus (--corpus)")?;
    let figures = PassFigures { documents: u64::from(index.private_documents()), fingerprint: keys.fingerprint, legacy: keys.legacy };
    Ok((ReplayCheck { params, docs: index.finish() }, figures))
}

/// Reads the header and the first document of each file of the corpus that `args` names (a
/// .txt file is one document and names no column: not read), so that a wrong --text-col,
/// --label-col or --format is refused before anything is sent; the check itself reads the
/// whole corpus after generation.
pub(crate) fn probe_corpus(args: &CorpusArgs) -> Result<(), CliError> {
    let fields = Fields { text: args.text_col.clone(), label: args.label_col.clone(), person: None };
    for input in inputs(args)? {
        if input.format == Format::Txt {
            continue;
        }
        let name = input.path.display().to_string();
        let file = File::open(&input.path).map_err(|e| CliError::Input { path: name.clone(), message: format!("cannot open: {e}") })?;
        let seen = Cell::new(false);
        let reader = UntilFirst { inner: BufReader::new(file), seen: &seen };
        let mut ingest = Ingest::new(args.labelled());
        let read = corpus::stream(reader, &name, input.format, &fields, None, &mut ingest, &mut |_| seen.set(true));
        // Once a document is read, what follows is cut short on purpose: errors past it do not
        // count. (A file without documents is the whole read's to refuse, as the other commands do.)
        if let Err(e) = read {
            if !seen.get() {
                return Err(e.into());
            }
        }
    }
    Ok(())
}

/// A reader that ends (reads nothing more) once `seen` is set: the first document is read.
struct UntilFirst<'a, R> {
    inner: R,
    seen: &'a Cell<bool>,
}

impl<R: Read> Read for UntilFirst<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.seen.get() {
            return Ok(0);
        }
        self.inner.read(buf)
    }
}

/// Whether the corpus the check read (`figures`) is the one the run of `run_dir` was
/// recorded on: its run.json names the run, and the ledger (`ledger`, else the default one)
/// the corpus (by fingerprint) each run was recorded under. Said on stderr; a corpus that is not the run's
/// is a warning, not an error (the check is still a check of the documents against it).
pub(crate) fn tell_corpus_of_run(run_dir: &Path, ledger: Option<&Path>, figures: &PassFigures) {
    let run_json = run_dir.join("run.json");
    let run: Run = match std::fs::read_to_string(&run_json).map(|t| serde_json::from_str(&t)) {
        Ok(Ok(run)) => run,
        _ => {
            eprintln!(
                "note: {} is missing or unreadable: whether --corpus is the run's corpus was not checked",
                run_json.display()
            );
            return;
        }
    };
    let (ledger, book) = super::ledger_file::read_ledger(ledger);
    let ledger = ledger.as_path();
    let book = match book {
        Ok(book) => book,
        Err(e) => {
            eprintln!("note: whether --corpus is the run's corpus was not checked: {e}");
            return;
        }
    };
    // The ledger names corpora by the key its local secret gives (`dpkps_core::ledger::local_key`).
    let keyed = super::local_key::load(ledger).ok().flatten().map(|k| dpkps_core::ledger::local_key::keyed_fingerprint(&k, &figures.fingerprint));
    match book.ledgers.values().find(|l| l.runs.iter().any(|r| r.id == run.id)) {
        None => eprintln!(
            "note: run {} is not in the ledger {} (give the ledger the run was recorded in with --ledger): whether \
             --corpus is the run's corpus was not checked",
            run.id,
            ledger.display()
        ),
        Some(l) if l.fingerprint == figures.fingerprint || l.fingerprint == figures.legacy || Some(&l.fingerprint) == keyed.as_ref() => {
            eprintln!("replay check: --corpus is the corpus run {} was recorded on (ledger {})", run.id, ledger.display())
        }
        Some(_) => eprintln!(
            "warning: --corpus is NOT the corpus run {} was recorded on (ledger {}): other documents, or read with other \
             options. The replay check compared the generated documents with these documents, not the run's: check \
             --corpus, --text-col and --format, and run the command again (nothing is sent again)",
            run.id,
            ledger.display()
        ),
    }
}
