//! Opening the files a command keeps at fixed names (lock files, logs, the key file): never
//! through a symbolic link. A leaf module, so that every part of the CLI can use it.

use std::fs::{File, OpenOptions};
use std::path::Path;

/// Opens a file the command keeps open (a lock file, an append-only log) with `options`,
/// creating it if they say so (0600 when `private`), never through a symbolic link
/// (`O_NOFOLLOW`): such files sit at fixed names, in folders others may write to, and a link
/// planted there would send the lock, the appended lines or the permissions to its target.
/// Only a regular file is accepted.
pub(crate) fn open_kept(path: &Path, options: &mut OpenOptions, private: bool) -> std::io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
        if private {
            options.mode(0o600);
        }
    }
    #[cfg(not(unix))]
    let _ = private;
    let refused = |what: &str| {
        std::io::Error::other(format!(
            "{} is {what}, not a regular file: refused (a file dpkps keeps must not lead elsewhere; remove it and try again)",
            path.display()
        ))
    };
    let file = match options.open(path) {
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(refused("a symbolic link")),
        other => other?,
    };
    if !file.metadata()?.is_file() {
        return Err(refused("something else"));
    }
    Ok(file)
}
