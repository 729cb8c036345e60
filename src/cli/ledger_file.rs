//! The CLI's privacy ledger file, read and written under one exclusive lock.
//!
//! Why a lock: a run reads the ledger, checks its budget against what it holds, spends ε and
//! writes the ledger back (a temporary file, then a rename). Two `dpkps` processes on the same
//! ledger without a lock can both read the same state: the second write then drops the first
//! run's spend, and both may pass a budget that only one of them fits in. So a run holds an
//! exclusive lock on `<ledger>.lock` from its read of the ledger (the budget check included)
//! to its last write, and a second run waits for it (saying so). The lock is advisory: only
//! `dpkps` honours it (the browser app keeps its own ledger, in IndexedDB).
//!
//! The lock is std's [`File::lock`] (`flock` on Unix, `LockFileEx` on Windows). It belongs to
//! the open file, not to the process, so two opens in one process exclude each other just as
//! two processes do (tested below), and the system drops it when the process ends: a crash
//! leaves no stale lock. The lock file itself is never removed (a run that removed it could let
//! the next two runs lock two different files).
//!
//! The ledger records which corpora were used (their fingerprints and overlap sketches), so it,
//! its temporary file and the lock file are created readable by their owner only on Unix
//! ([`super::io::write_private`]).

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use super::args::ledger::LedgerArgs;
use super::kept::open_kept;
use super::error::CliError;
use super::io::write_private;
use dpkps_core::ledger::LedgerBook;

/// The ledger of one run, locked until it is dropped.
pub(super) struct LedgerFile {
    path: PathBuf,
    /// The ledger as read under the lock, with this run's changes.
    pub(super) book: LedgerBook,
    /// Held for the lock: closing it releases the lock.
    _lock: File,
}

impl LedgerFile {
    /// Takes the ledger's lock (waiting while another run holds it) and reads the ledger; an
    /// absent ledger is an empty one.
    pub(super) fn open(path: &Path) -> Result<LedgerFile, CliError> {
        let lock = lock(path)?;
        let book = read(path)?;
        Ok(LedgerFile { path: path.to_path_buf(), book, _lock: lock })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the ledger (atomically: a temporary file and a rename), keeping the lock.
    pub(super) fn save(&self) -> Result<(), CliError> {
        write_private(&self.path, self.book.to_json().as_bytes())
    }
}

/// Reads the ledger without the lock, to show it: every write replaces the file whole (a
/// rename), so a reader sees one version or the next, never a mix.
pub(super) fn read(path: &Path) -> Result<LedgerBook, CliError> {
    match std::fs::read_to_string(path) {
        Ok(text) => LedgerBook::from_json(&text).map_err(|e| CliError::Input { path: path.display().to_string(), message: e.to_string() }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LedgerBook::default()),
        Err(e) => Err(CliError::Input { path: path.display().to_string(), message: e.to_string() }),
    }
}

/// `ledger.json` → `ledger.json.lock`, beside it.
fn lock_path(ledger: &Path) -> PathBuf {
    let mut name = ledger.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Opens (creating it if needed) and exclusively locks the ledger's lock file.
fn lock(ledger: &Path) -> Result<File, CliError> {
    let err = |source| CliError::LedgerLock { path: ledger.display().to_string(), source };
    if let Some(dir) = ledger.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let mut options = OpenOptions::new();
    // Windows locks need read or write access; `flock` takes either.
    options.read(true).write(true).create(true).truncate(false);
    // Never through a symbolic link, 0600 when created (`open_kept`).
    let file = open_kept(&lock_path(ledger), &mut options, true).map_err(err)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            eprintln!("waiting for the privacy ledger {}: another dpkps run is using it", ledger.display());
            file.lock().map_err(err)?;
        }
        Err(TryLockError::Error(e)) => return Err(err(e)),
    }
    Ok(file)
}

/// The ledger file `given`, else where every command finds it (`--ledger`'s default).
pub(crate) fn ledger_path_of(given: Option<std::path::PathBuf>) -> std::path::PathBuf {
    super::io::ledger_path(&LedgerArgs { ledger: given, budget: None, raise_budget: false, account: None })
}

/// The privacy ledger as read without its lock, to look at (not to spend): the file `given`,
/// else where every command finds it (`--ledger`'s default).
pub(crate) fn read_ledger(given: Option<&std::path::Path>) -> (std::path::PathBuf, Result<dpkps_core::ledger::LedgerBook, CliError>) {
    let path = ledger_path_of(given.map(std::path::Path::to_path_buf));
    let book = read(&path);
    (path, book)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpkps_core::ledger::Run;

    /// A fresh folder, removed by the test that passes (a failing one leaves it to look at).
    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("dpkps-ledger-file-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn two_opens_in_one_process_exclude_each_other() {
        // What the concurrent test relies on: the lock belongs to the open file, so a second
        // open of the lock file (another thread, as another process) cannot take it.
        let path = temp_dir("exclude").join("ledger.json");
        let held = LedgerFile::open(&path).unwrap();
        let other = File::options().read(true).write(true).open(lock_path(&path)).unwrap();
        assert!(matches!(other.try_lock(), Err(TryLockError::WouldBlock)));
        drop(held);
        other.try_lock().expect("dropping the ledger releases the lock");
        drop(other);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_lock_that_cannot_be_taken_is_a_plain_error() {
        let path = temp_dir("unlockable").join("ledger.json");
        std::fs::create_dir_all(lock_path(&path)).unwrap(); // not a file: it cannot be opened
        let e = LedgerFile::open(&path).err().expect("no lock, no ledger");
        assert!(matches!(e, CliError::LedgerLock { .. }), "{e}");
        assert!(e.to_string().starts_with(&format!("could not lock the privacy ledger {}", path.display())), "{e}");
        assert!(!path.exists(), "nothing written");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_lock_file_planted_as_a_link_is_refused() {
        let dir = temp_dir("planted-lock");
        let victim = dir.join("victim.txt");
        std::fs::write(&victim, "v").unwrap();
        let path = dir.join("ledger.json");
        std::os::unix::fs::symlink(&victim, lock_path(&path)).unwrap();
        let e = LedgerFile::open(&path).err().expect("a planted lock file is not followed");
        assert!(matches!(e, CliError::LedgerLock { .. }) && e.to_string().contains("symbolic link"), "{e}");
        use std::os::unix::fs::PermissionsExt;
        assert_ne!(std::fs::metadata(&victim).unwrap().permissions().mode() & 0o777, 0o600, "the victim keeps its mode");
        assert!(!path.exists(), "nothing written");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn concurrent_runs_lose_no_spend() {
        // Two writers, each recording N runs through open → record → save. Without the lock,
        // one writer's read-then-write overwrites runs the other saved in between (and the two
        // share the temporary file, so a rename can find it gone).
        const N: usize = 40;
        let path = temp_dir("concurrent").join("ledger.json");
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let mut failed_saves = 0;
                    for i in 0..N {
                        let mut ledger = LedgerFile::open(&path).unwrap();
                        ledger.book.record("corpus", Run::new(format!("{w}-{i}"), "t".into()));
                        // Some work between the read and the write, as a real run has.
                        std::thread::sleep(std::time::Duration::from_millis(1));
                        failed_saves += usize::from(ledger.save().is_err());
                    }
                    failed_saves
                })
            })
            .collect();
        let failed_saves: usize = writers.into_iter().map(|w| w.join().unwrap()).sum();
        let runs = read(&path).unwrap().ledger("corpus").runs.len();
        assert_eq!((failed_saves, runs), (0, 2 * N), "(failed saves, runs recorded) of {} runs", 2 * N);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn the_ledger_and_its_lock_are_private_files() {
        use std::os::unix::fs::PermissionsExt;
        let dir = temp_dir("mode");
        let path = dir.join("ledger.json");
        // An older version's ledger, readable by anyone, and its stale temporary file (older
        // versions used that one fixed name; temporary files now have random names).
        std::fs::write(&path, LedgerBook::default().to_json()).unwrap();
        std::fs::write(path.with_extension("tmp~"), b"").unwrap();
        for p in [&path, &path.with_extension("tmp~")] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let mut ledger = LedgerFile::open(&path).unwrap();
        ledger.book.record("corpus", Run::new("r".into(), "t".into()));
        ledger.save().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600, "the ledger");
        assert_eq!(mode(&lock_path(&path)), 0o600, "its lock file");
        let temporary: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("ledger.json.") && n.ends_with(".tmp~"))
            .collect();
        assert!(temporary.is_empty(), "the temporary file was renamed onto the ledger: {temporary:?}");
        drop(ledger);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
