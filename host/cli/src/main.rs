//! The `computeguard` binary: parses arguments and hands over to the library.

/// mimalloc instead of glibc's allocator: the webhook's request path (TLS, HTTP, JSON)
/// is allocation-heavy, and a third of a plain Pod's CPU was glibc `malloc`/`free`
/// (docs/benchmarks.md, sections 9.A and 10). Its one drawback measured here, the
/// compiler's memory kept after a cold start, went away when `serve` began restarting
/// itself from the warm cache.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    computeguard::run()
}
