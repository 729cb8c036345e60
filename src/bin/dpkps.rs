//! `dpkps`: the native command-line tool. All logic lives in `dpkps::cli`.

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    dpkps::cli::main()
}

// The CLI is native only; on wasm32 this binary is an empty shell so that
// `cargo test --target wasm32-unknown-unknown` can build every target.
#[cfg(target_arch = "wasm32")]
fn main() {}
