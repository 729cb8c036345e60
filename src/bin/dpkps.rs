//! `dpkps`: the native command-line tool. All logic lives in `dpkps::cli`.

fn main() -> std::process::ExitCode {
    dpkps::cli::main()
}
