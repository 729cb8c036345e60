//! The browser app's entry point: trunk builds this binary for wasm32 (see index.html).

#[cfg(target_arch = "wasm32")]
fn main() {
    dpkps_web::mount();
}

// Natively only the UI's plain parts build (for their tests); this binary is an empty shell.
#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("dpkps-web is the browser app; build it with `trunk build --release` (see README).");
    std::process::exit(2);
}
