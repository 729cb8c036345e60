//! The output folder of `dpkps generate`: the job and what became of each document, kept so
//! that a command killed at any point resumes with every document generated exactly once.
//!
//! - `job.json`: the job (the prompts, built from the run's DP sequences, and the settings; no
//!   API key, no outcomes), written when the job starts and again at each resume;
//! - `outcomes.jsonl`: one line per document's outcome (`{"job", "index", "outcome"}`, as the
//!   page stores it), appended and flushed to the disk (`fsync`) before the document counts. A
//!   later line for the same document (`--retry-failed`) replaces an earlier one. A kill in
//!   the middle of a write leaves a torn last line: it is cut off when the job resumes, and
//!   that document is sent again;
//! - `audit.jsonl`: every request, written (and flushed) before it is sent (`"phase":"sending"`),
//!   and its answer after (`"response"`); bodies over 64 KiB cut as the page cuts them. One job
//!   per folder, so nothing is pruned;
//! - at the end: the synthetic corpus (`synthetic.jsonl`, `synthetic.csv`: the page's downloads,
//!   [`Job::corpus_jsonl`], [`Job::corpus_csv`]; with `--corpus`, without the documents the
//!   replay check flagged, which stay in `outcomes.jsonl`, the job's record) and the run's
//!   privacy report (`privacy-report.json`, `privacy-report.html`; with the check's counts).
//!
//! `job.lock` is held (std's [`File::try_lock`], released when the process ends) while a command
//! works on the folder: a second one on the same folder is refused, as a second tab is on
//! the page. The lock and the two logs are never opened through a symbolic link
//! (`crate::cli::io::open_kept`). Everything here is a DP output or public (prompts, settings, generated text), so
//! files follow the umask.

use std::cell::RefCell;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use dpkps_core::llm::{AuditEntry, Job, Outcome, OutcomeRecord};

use crate::cli::io::{json_text, open_kept, write_file};
use crate::cli::error::CliError;
use super::error::GenerateError;

pub(super) const JOB: &str = "job.json";
pub(super) const OUTCOMES: &str = "outcomes.jsonl";
pub(super) const AUDIT: &str = "audit.jsonl";
const LOCK: &str = "job.lock";

/// The output folder, locked, with its two logs open for appending.
pub(super) struct OutDir {
    dir: PathBuf,
    outcomes: RefCell<File>,
    audit: RefCell<File>,
    /// Held for the lock: closing it releases the lock.
    _lock: File,
}

/// What the saved outcomes were found to be.
pub(super) struct Saved {
    pub(super) records: Vec<OutcomeRecord>,
    /// A torn last line was cut off (a kill while it was written).
    pub(super) torn: bool,
}

impl OutDir {
    /// Creates the folder if needed and takes its lock (refused while another command holds it).
    pub(super) fn open(dir: &Path) -> Result<OutDir, CliError> {
        let werr = |p: &Path| {
            let path = p.display().to_string();
            move |source| CliError::Write { path, source }
        };
        std::fs::create_dir_all(dir).map_err(werr(dir))?;
        let lock_path = dir.join(LOCK);
        // Never through a symbolic link (`open_kept`): the folder may be one others can write to.
        let lock = open_kept(&lock_path, OpenOptions::new().read(true).write(true).create(true).truncate(false), false)
            .map_err(werr(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(GenerateError::Busy { dir: dir.display().to_string() }.into()),
            Err(TryLockError::Error(e)) => return Err(werr(&lock_path)(e)),
        }
        let append = |name: &str| {
            let p = dir.join(name);
            // 0600: replies the replay check flags (private text repeated) stay in both logs.
            open_kept(&p, OpenOptions::new().read(true).append(true).create(true), true).map_err(werr(&p))
        };
        Ok(OutDir { dir: dir.to_path_buf(), outcomes: RefCell::new(append(OUTCOMES)?), audit: RefCell::new(append(AUDIT)?), _lock: lock })
    }

    pub(super) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The job saved here, if any.
    pub(super) fn saved_job(&self) -> Result<Option<Job>, CliError> {
        let path = self.path(JOB);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| CliError::Input {
                path: path.display().to_string(),
                message: format!("is not a job written by dpkps generate: {e}"),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(CliError::Input { path: path.display().to_string(), message: format!("cannot read: {e}") }),
        }
    }

    /// Writes the job (without its outcomes: they are in `outcomes.jsonl`), atomically.
    pub(super) fn save_job(&self, job: &Job) -> Result<(), CliError> {
        let bare = Job { outcomes: Default::default(), ..job.clone() };
        write_file(&self.path(JOB), json_text(&bare).as_bytes())
    }

    /// The outcomes saved so far, oldest first. A torn last line (no newline: the process was
    /// killed while writing it) is cut off the file, so that the next line starts clean; any
    /// other unreadable line is an error (the file was changed by hand).
    pub(super) fn saved_outcomes(&self) -> Result<Saved, CliError> {
        let path = self.path(OUTCOMES);
        let rerr = |message: String| CliError::Input { path: path.display().to_string(), message };
        let mut file = self.outcomes.borrow_mut();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|e| rerr(format!("cannot read: {e}")))?;
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let torn = complete < bytes.len();
        if torn {
            file.set_len(complete as u64).map_err(|source| CliError::Write { path: path.display().to_string(), source })?;
            file.sync_data().map_err(|source| CliError::Write { path: path.display().to_string(), source })?;
        }
        let mut records = Vec::new();
        for (n, line) in bytes[..complete].split(|&b| b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let rec: OutcomeRecord =
                serde_json::from_slice(line).map_err(|e| rerr(format!("line {} is not an outcome written by dpkps generate: {e}", n + 1)))?;
            records.push(rec);
        }
        Ok(Saved { records, torn })
    }

    /// Appends one outcome and flushes it to the disk: when this returns `Ok`, the document is
    /// on record and is never sent again.
    pub(super) fn append_outcome(&self, job: &str, index: usize, outcome: &Outcome) -> std::io::Result<()> {
        let rec = OutcomeRecord { job: Some(job.to_string()), index, outcome: outcome.clone() };
        append_line(&mut self.outcomes.borrow_mut(), &rec)
    }

    /// Appends one audit entry (bodies capped as the page caps them), flushed to the disk.
    pub(super) fn append_audit(&self, entry: &AuditEntry) -> std::io::Result<()> {
        append_line(&mut self.audit.borrow_mut(), &entry.clone().capped())
    }

    /// The synthetic corpus as the page downloads it, and the privacy report when there is
    /// one (`--run`; not with `--sequences`): (JSON, printable HTML), the JSON the run's as
    /// read, or with the replay check's counts.
    pub(super) fn write_results(&self, job: &Job, report: Option<(&str, &str)>) -> Result<(), CliError> {
        write_file(&self.path("synthetic.jsonl"), job.corpus_jsonl().as_bytes())?;
        write_file(&self.path("synthetic.csv"), job.corpus_csv().as_bytes())?;
        if let Some((json, html)) = report {
            write_file(&self.path("privacy-report.json"), json.as_bytes())?;
            write_file(&self.path("privacy-report.html"), html.as_bytes())?;
        }
        Ok(())
    }
}

/// One JSON line, written whole and synced before returning.
fn append_line<T: serde::Serialize>(file: &mut File, value: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    line.push(b'\n');
    file.write_all(&line)?;
    file.sync_data()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn links_planted_in_the_folder_are_not_followed() {
        let dir = std::env::temp_dir().join(format!("dpkps-outdir-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim.txt");
        std::fs::write(&victim, "v").unwrap();
        for name in [LOCK, OUTCOMES, AUDIT] {
            let link = dir.join(name);
            std::os::unix::fs::symlink(&victim, &link).unwrap();
            let e = OutDir::open(&dir).err().expect("refused");
            assert!(e.to_string().contains("symbolic link"), "{name}: {e}");
            std::fs::remove_file(&link).unwrap();
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "v");
        let out = OutDir::open(&dir).unwrap();
        out.append_audit(&AuditEntry {
            phase: Default::default(), time: "t".into(), job: "j".into(), index: 0, attempt: 1,
            url: "u".into(), request: "r".into(), status: None, response: String::new(), error: None,
        })
        .unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "v");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
