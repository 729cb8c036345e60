//! The browser app's Web Worker: trunk builds this binary for wasm32 with
//! `data-type="worker"` (see index.html). The UI thread starts it and talks to it with the
//! messages of `dpkps::protocol`.

#[cfg(all(target_arch = "wasm32", feature = "embed"))]
fn main() {
    dpkps::worker::start();
}

#[cfg(not(all(target_arch = "wasm32", feature = "embed")))]
fn main() {
    eprintln!("dpkps-worker is the browser app's worker; build it with `trunk build --release` (see README).");
    std::process::exit(2);
}
