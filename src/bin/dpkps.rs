//! `dpkps`: the native command-line tool. All logic lives in `dpkps::cli`.

#[cfg(all(not(target_arch = "wasm32"), feature = "embed"))]
fn main() -> std::process::ExitCode {
    dpkps::cli::main()
}

// The CLI is native only and needs the embedding model; elsewhere this binary is an empty
// shell so that `cargo test --target wasm32-unknown-unknown` can build every target.
#[cfg(not(all(not(target_arch = "wasm32"), feature = "embed")))]
fn main() {}
