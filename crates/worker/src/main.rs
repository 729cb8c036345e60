//! The browser app's Web Worker: trunk builds this binary for wasm32 with
//! `data-type="worker"` (see index.html). The UI thread starts it and talks to it with the
//! messages of `dpkps_core::protocol`.

#[cfg(target_arch = "wasm32")]
fn main() {
    dpkps_worker::start();
}

// The worker is wasm32 only (`cargo check --workspace` still builds this shell natively).
#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("dpkps-worker is the browser app's worker; build it with `trunk build --release` (see README).");
    std::process::exit(2);
}
