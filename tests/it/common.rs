//! What the test areas share: a fresh folder, the binary, its stderr.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fresh folder for test `name` of `area` (the tests of every area run at once in this one
/// binary: the area keeps two areas' same-named tests apart), removed when the test passes.
pub fn tmpdir(area: &str, name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("dpkps-{area}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// A test's folder: removed when it goes out of scope, unless the test is failing (a panic is
/// unwinding), so that what a failed test wrote is there to look at. Every run of the test
/// command used to leave about 35 such folders in the temporary directory.
pub struct Scratch(PathBuf);

impl Scratch {
    /// The folder, left in place after the test (one that other tests of the run read).
    pub fn keep(self) -> PathBuf {
        let path = self.0.clone();
        std::mem::forget(self);
        path
    }
}

impl Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The binary with a budget account from the environment ($DPKPS_ACCOUNT; every command that
/// records a run requires one), unless the test gives --account.
pub fn dpkps(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dpkps")).args(args).env("DPKPS_ACCOUNT", "tests").output().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
