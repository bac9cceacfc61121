//! What one keystroke costs in `computeguard lsp` (issue 35; docs/benchmarks.md): a
//! 500-line manifest (Kubernetes Jobs on GPU sizes, built from
//! `examples/kubernetes/inference-on-infiniband.yaml`) is opened, then changed 200 times; each change
//! is timed from `didChange` to its `publishDiagnostics` (debounce 0, so the time is the
//! re-check: configuration, policies from the warm artifact cache, scan, diagnostics).
//!
//! ```sh
//! cargo run --release -p computeguard --example lsp_keystroke
//! ```
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use computeguard::lsp::Backend;
use computeguard_lsp::lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn main() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let job =
        std::fs::read_to_string(root.join("examples/kubernetes/inference-on-infiniband.yaml"))
            .expect("example");
    let mut text = String::new();
    let mut i = 0;
    while text.lines().count() < 500 {
        text.push_str(&format!("# job {i}\n---\n"));
        text.push_str(&job.replace("name: ", &format!("name: j{i}-")));
        i += 1;
    }
    let lines = text.lines().count();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jobs.yaml");
    std::fs::write(&path, &text).expect("write");
    let uri = format!("file://{}", path.display());

    let (server, client) = Connection::memory();
    let handle = std::thread::spawn(move || {
        computeguard_lsp::run(
            server,
            Backend {
                as_of: Some("2026-11-22".into()),
            },
        )
    });
    let send = |m: Message| client.sender.send(m).expect("send");
    let recv = || {
        client
            .receiver
            .recv_timeout(Duration::from_secs(60))
            .expect("answer")
    };
    send(Message::Request(Request::new(
        RequestId::from(1),
        "initialize".into(),
        json!({"capabilities": {}, "initializationOptions": {"debounceMs": 0}}),
    )));
    let _ = recv();
    send(Message::Notification(Notification::new(
        "initialized".into(),
        json!({}),
    )));
    let diagnostics = || loop {
        if let Message::Notification(n) = recv()
            && n.method == "textDocument/publishDiagnostics"
        {
            return n.params["diagnostics"].as_array().map_or(0, Vec::len);
        }
    };
    let start = Instant::now();
    send(Message::Notification(Notification::new(
        "textDocument/didOpen".into(),
        json!({"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}}),
    )));
    let found = diagnostics();
    let first = start.elapsed();
    let mut times = Vec::new();
    for v in 0..200 {
        // A keystroke: one character more in the comment of the first job.
        let changed = text.replacen("# job 0", &format!("# job 0 {}", "x".repeat(v)), 1);
        let t = Instant::now();
        send(Message::Notification(Notification::new(
            "textDocument/didChange".into(),
            json!({"textDocument": {"uri": uri, "version": v + 2}, "contentChanges": [{"text": changed}]}),
        )));
        let n = diagnostics();
        times.push(t.elapsed());
        assert_eq!(n, found, "the same findings after each change");
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let pct = |p: usize| ms(times[(times.len() * p / 100).min(times.len() - 1)]);
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |k: &str| {
        status
            .lines()
            .find(|l| l.starts_with(k))
            .map_or("?".to_string(), |l| l[k.len()..].trim().to_string())
    };
    println!("manifest: {lines} lines, {i} documents, {found} diagnostics");
    println!(
        "didOpen -> publishDiagnostics (cold policies): {:.1} ms",
        ms(first)
    );
    println!(
        "didChange -> publishDiagnostics over {} changes: median {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        times.len(),
        pct(50),
        pct(95),
        pct(100)
    );
    println!("RSS now {}, peak {}", field("VmRSS:"), field("VmHWM:"));
    send(Message::Request(Request::new(
        RequestId::from(2),
        "shutdown".into(),
        Value::Null,
    )));
    send(Message::Notification(Notification::new(
        "exit".into(),
        Value::Null,
    )));
    drop(client);
    handle.join().expect("server").expect("ran");
}
