//! The browser app's entry point: trunk builds this binary for wasm32 (see index.html).

#[cfg(all(target_arch = "wasm32", feature = "ui", not(feature = "embed")))]
fn main() {
    dpkps::ui::mount();
}

// Natively, or without `ui` or with `embed` (the worker's build), this binary is an empty shell.
#[cfg(not(all(target_arch = "wasm32", feature = "ui", not(feature = "embed"))))]
fn main() {
    eprintln!("dpkps-web is the browser app; build it with `trunk build --release` (see README).");
    std::process::exit(2);
}
