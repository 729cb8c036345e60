//! What the test areas share: a fresh folder, the binary, its stderr.

use std::path::PathBuf;
use std::process::{Command, Output};

/// A fresh folder for test `name` of `area` (the tests of every area run at once in this one
/// binary: the area keeps two areas' same-named tests apart).
pub fn tmpdir(area: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dpkps-{area}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The binary with a budget account from the environment ($DPKPS_ACCOUNT; every command that
/// records a run requires one), unless the test gives --account.
pub fn dpkps(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dpkps")).args(args).env("DPKPS_ACCOUNT", "tests").output().unwrap()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
