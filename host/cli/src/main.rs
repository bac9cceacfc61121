//! The `computeguard` binary: parses arguments and hands over to the library.

fn main() -> std::process::ExitCode {
    computeguard::run()
}
