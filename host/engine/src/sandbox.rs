//! The per-store sandbox: an empty WASI context with frozen clocks, captured and
//! capped stdio, and the resource limiter that remembers why memory ran out.

use crate::EngineConfig;
use bytes::Bytes;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Bytes of a policy's stdout/stderr kept for error messages; the rest is discarded.
pub const STDIO_CAPTURE_BYTES: usize = 2048;

/// Per-store state: an empty WASI context and the limits.
pub(crate) struct Ctx {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: Limiter,
    output: Capture,
}

impl Ctx {
    /// An empty sandbox: no preopens, environment or arguments, frozen clocks, stdio
    /// captured into a small buffer, and the configured memory cap.
    pub(crate) fn new(config: &EngineConfig) -> Self {
        let output = Capture::default();
        Ctx {
            wasi: WasiCtxBuilder::new()
                .wall_clock(FrozenClock)
                .monotonic_clock(FrozenClock)
                .stdout(output.clone())
                .stderr(output.clone())
                .build(),
            table: ResourceTable::new(),
            limiter: Limiter {
                inner: StoreLimitsBuilder::new()
                    .memory_size(config.memory_limit)
                    .instances(64)
                    .tables(64)
                    .memories(16)
                    .build(),
                memory_denied: false,
                grown: 0,
            },
            output,
        }
    }

    pub(crate) fn limiter(&mut self) -> &mut Limiter {
        &mut self.limiter
    }

    /// Times a memory grew after instantiation (each costs page-protection changes in
    /// the host; see the CEL runtime's `HEAP_RESERVE`).
    #[cfg(test)]
    pub(crate) fn memory_grown(&self) -> usize {
        self.limiter.grown
    }

    /// Whether the policy asked for more memory than the cap allows.
    pub(crate) fn memory_denied(&self) -> bool {
        self.limiter.memory_denied
    }

    /// What the policy printed (first [`STDIO_CAPTURE_BYTES`]), control characters
    /// escaped, or `None` when it printed nothing.
    pub(crate) fn printed(&self) -> Option<String> {
        let bytes = self.output.0.lock().ok()?;
        if bytes.is_empty() {
            return None;
        }
        let text = String::from_utf8_lossy(&bytes);
        Some(crate::text::escape_control(text.trim()))
    }
}

impl WasiView for Ctx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// [`StoreLimits`] that also records a refused memory growth, so a trap that follows
/// can be named for what it is: the sandbox's memory cap.
pub(crate) struct Limiter {
    inner: StoreLimits,
    memory_denied: bool,
    /// Times a memory grew after it was created (`memory.grow`, not instantiation).
    grown: usize,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let ok = self.inner.memory_growing(current, desired, maximum)?;
        if !ok {
            self.memory_denied = true;
        } else if current > 0 {
            self.grown += 1;
        }
        Ok(ok)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.memory_denied = true;
        self.inner.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.inner.table_growing(current, desired, maximum)
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }

    fn tables(&self) -> usize {
        self.inner.tables()
    }

    fn memories(&self) -> usize {
        self.inner.memories()
    }
}

/// A policy's stdout and stderr: the first [`STDIO_CAPTURE_BYTES`] are kept, the rest
/// is accepted and dropped. Writes never block, never fail and never touch the
/// host's own stdio, so a policy that prints (a panic message, an allocation
/// failure) cannot stall or crash the host.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Capture {
    fn keep(&self, bytes: &[u8]) {
        if let Ok(mut buf) = self.0.lock() {
            let room = STDIO_CAPTURE_BYTES.saturating_sub(buf.len());
            buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
    }
}

impl IsTerminal for Capture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Capture {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for Capture {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.keep(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 * 1024)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Capture {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for Capture {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.keep(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// A clock stuck at the Unix epoch: policies have no wall clock.
struct FrozenClock;

impl wasmtime_wasi::HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl wasmtime_wasi::HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}
