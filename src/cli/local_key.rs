//! The CLI's local secret: `<ledger>.key`, beside the ledger file (`dpkps_core::ledger::local_key` says what
//! it keys, and why).
//!
//! 32 random bytes from the operating system, written once as hex, readable and writable by
//! its owner only (0600), never through a symbolic link, and never copied into the ledger or
//! any output. It is created atomically (a private temporary file hard-linked to the name,
//! which fails if another process made it first: then that one is read), so two runs starting
//! at once agree on one secret. A key file that others can read is refused: whoever reads it
//! can test guesses against the ledger's keys and sketches.
//!
//! Losing the file loses nothing already spent, but the ledger's entries can no longer be found
//! by corpus (a new key names the same corpus differently): keep it with the ledger.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::kept::open_kept;
use super::error::CliError;
use dpkps_core::base::{hex, unhex32};
use dpkps_core::ledger::local_key::LocalKeys;

/// `ledger.json` → `ledger.json.key`.
pub(crate) fn key_path(ledger: &Path) -> PathBuf {
    let mut name = ledger.as_os_str().to_owned();
    name.push(".key");
    PathBuf::from(name)
}

/// The local keys of the ledger at `ledger`, whose book (as read) is `book`: its key file's,
/// which must be the one that keyed the book; made on first use only while the book is keyed
/// by none (a new ledger, or an older version's). A missing or other key file for a keyed book
/// is refused: a new key would name every corpus anew, and their spends would stop counting.
pub(crate) fn for_ledger(ledger: &Path, book: &dpkps_core::ledger::LedgerBook) -> Result<LocalKeys, CliError> {
    let path = key_path(ledger);
    let refused = |message: String| CliError::Input { path: path.display().to_string(), message };
    match (load(ledger)?, &book.key_check) {
        (Some(k), Some(c)) if k.check != *c => Err(refused(format!(
            "this key file is not the one the ledger {} was keyed with (key check {c}, this file's {}): restore the ledger's own key file; \
             with another, its corpora could not be recognised and their spends would stop counting",
            ledger.display(),
            k.check
        ))),
        (Some(k), _) => Ok(k),
        (None, Some(c)) => Err(refused(format!(
            "missing: the ledger {} was keyed with a key file (key check {c}) that is not beside it. Restore it from where the \
             ledger came from; a new key would name every corpus anew and their spends would stop counting",
            ledger.display()
        ))),
        (None, None) => load_or_create(ledger),
    }
}

/// The local keys of the ledger at `ledger`, creating its key file on first use.
pub(crate) fn load_or_create(ledger: &Path) -> Result<LocalKeys, CliError> {
    if let Some(keys) = load(ledger)? {
        return Ok(keys);
    }
    let path = key_path(ledger);
    let err = |source| CliError::Write { path: path.display().to_string(), source };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    let mut secret = [0u8; 32];
    let mut tag = [0u8; 8];
    getrandom::fill(&mut secret).and_then(|()| getrandom::fill(&mut tag)).map_err(|e| err(std::io::Error::other(e.to_string())))?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", hex(&tag)));
    let tmp = PathBuf::from(tmp);
    let written = (|| {
        let mut f = open_kept(&tmp, OpenOptions::new().write(true).create_new(true), true)?;
        f.write_all(format!("{}\n", hex(&secret)).as_bytes())?;
        f.sync_all()?;
        match std::fs::hard_link(&tmp, &path) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
            _ => Ok(()),
        }
    })();
    let _ = std::fs::remove_file(&tmp);
    written.map_err(err)?;
    load(ledger)?.ok_or_else(|| CliError::Input { path: path.display().to_string(), message: "the key file was not created".into() })
}

/// The local keys of the ledger at `ledger`, if its key file exists.
pub(crate) fn load(ledger: &Path) -> Result<Option<LocalKeys>, CliError> {
    let path = key_path(ledger);
    let bad = |message: String| CliError::Input { path: path.display().to_string(), message };
    let mut options = OpenOptions::new();
    let file = match open_kept(&path, options.read(true), true) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(bad(format!("the ledger's key file cannot be read: {e}"))),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file.metadata().map_err(|e| bad(e.to_string()))?.permissions().mode();
        if mode & 0o077 != 0 {
            return Err(bad(format!(
                "the ledger's key file is readable by others (mode {:o}): whoever reads it can test guesses against the \
                 ledger's corpus keys and sketches. Make it private (chmod 600) and check who has read it",
                mode & 0o777
            )));
        }
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(file, 200), &mut text).map_err(|e| bad(e.to_string()))?;
    let secret = unhex32(text.trim()).ok_or_else(|| bad("not a dpkps key file (64 hexadecimal digits expected)".into()))?;
    Ok(Some(LocalKeys::from_secret(&secret)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_file_is_made_once_private_and_read_back() {
        let dir = std::env::temp_dir().join(format!("dpkps-local-key-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let ledger = dir.join("ledger.json");
        assert!(load(&ledger).unwrap().is_none());
        let a = load_or_create(&ledger).unwrap();
        let b = load_or_create(&ledger).unwrap();
        assert_eq!(a, b, "the same file, the same keys");
        let text = std::fs::read_to_string(key_path(&ledger)).unwrap();
        assert_eq!(text.trim().len(), 64);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file left");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let path = key_path(&ledger);
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let err = load(&ledger).unwrap_err().to_string();
            assert!(err.contains("readable by others"), "{err}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
