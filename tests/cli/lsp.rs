//! `computeguard lsp` (issue 35): the protocol over an in-memory transport, with `check`'s
//! scan as the checker, compared with `check --format json` on the same files.

use super::{computeguard, root};
use computeguard::lsp::Backend;
use computeguard_lsp::lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

const AS_OF: &str = "2026-11-22";

/// A client on one end of an in-memory connection, the server on a thread at the other.
struct Client {
    conn: Connection,
    server: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
    next: i32,
}

impl Client {
    fn start(init_options: Value) -> Client {
        Client::start_with(json!({}), init_options)
    }

    fn start_with(capabilities: Value, init_options: Value) -> Client {
        let (server, client) = Connection::memory();
        let handle = std::thread::spawn(move || {
            computeguard_lsp::run(
                server,
                Backend {
                    as_of: Some(AS_OF.into()),
                },
            )
        });
        let mut c = Client {
            conn: client,
            server: Some(handle),
            next: 0,
        };
        let init = c.request(
            "initialize",
            json!({
                "capabilities": capabilities,
                "initializationOptions": init_options,
            }),
        );
        assert!(
            init["capabilities"]["hoverProvider"]
                .as_bool()
                .unwrap_or(false),
            "{init}"
        );
        c.notify("initialized", json!({}));
        c
    }

    fn notify(&self, method: &str, params: Value) {
        self.conn
            .sender
            .send(Message::Notification(Notification::new(
                method.into(),
                params,
            )))
            .expect("send");
    }

    /// Sends a request and waits for its answer (notifications in between are dropped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = RequestId::from(self.next);
        self.conn
            .sender
            .send(Message::Request(Request::new(
                id.clone(),
                method.into(),
                params,
            )))
            .expect("send");
        loop {
            match self.recv() {
                Message::Response(r) if r.id == id => {
                    assert!(r.error.is_none(), "{:?}", r.error);
                    return r.result.unwrap_or(Value::Null);
                }
                _ => {}
            }
        }
    }

    fn recv(&self) -> Message {
        self.conn
            .receiver
            .recv_timeout(Duration::from_secs(120))
            .expect("an answer from the server within 2 minutes")
    }

    /// The next diagnostics published for `uri`.
    fn diagnostics(&self, uri: &str) -> Vec<Value> {
        loop {
            if let Message::Notification(n) = self.recv()
                && n.method == "textDocument/publishDiagnostics"
                && n.params["uri"] == uri
            {
                return n.params["diagnostics"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
            }
        }
    }

    fn open(&self, path: &Path) -> String {
        let uri = uri_of(path);
        let text = std::fs::read_to_string(path).expect("read");
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "yaml", "version": 1, "text": text}}),
        );
        uri
    }

    fn stop(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        if let Some(h) = self.server.take() {
            h.join().expect("server thread").expect("server ran");
        }
    }
}

fn uri_of(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// `check --format json FILE` run from the file's folder (where it finds the same
/// `computeguard.yaml` as the server): the (rule, line) of each finding and the lines of
/// the unresolved facts.
fn check_json(path: &Path) -> (BTreeSet<(String, u64)>, BTreeSet<u64>) {
    let out = computeguard()
        .current_dir(path.parent().expect("folder"))
        .args(["check", "--as-of", AS_OF, "--format", "json"])
        .arg(path.file_name().expect("name"))
        .output()
        .expect("run check");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json report");
    let findings = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap_or_default().to_string(),
                f["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let unresolved = report["unresolved"]
        .as_array()
        .expect("unresolved")
        .iter()
        .map(|u| u["line"].as_u64().unwrap_or(0))
        .collect();
    (findings, unresolved)
}

/// (rule, line) of every finding, and the lines of the unresolved facts.
type Shown = (BTreeSet<(String, u64)>, BTreeSet<u64>);

/// The diagnostics as check's findings: (code, 1-based line), the unresolved apart.
fn as_findings(diagnostics: &[Value]) -> Shown {
    let line = |d: &Value| d["range"]["start"]["line"].as_u64().unwrap_or(0) + 1;
    let code = |d: &Value| d["code"].as_str().unwrap_or_default().to_string();
    (
        diagnostics
            .iter()
            .filter(|d| code(d) != "unresolved")
            .map(|d| (code(d), line(d)))
            .collect(),
        diagnostics
            .iter()
            .filter(|d| code(d) == "unresolved")
            .map(line)
            .collect(),
    )
}

#[test]
fn diagnostics_on_open_equal_check_json() {
    let files = [
        "examples/azureml/cuda12-on-k80-job.yml",
        "examples/kubernetes/inference-on-infiniband.yaml",
        "tests/fixtures/kaito/workspace-tuning-phi-3-pvc-nc6s-v3.yaml",
        "tests/fixtures/terraform/folder/aml.tf",
        "tests/fixtures/terraform/modules/main.tf",
        "tests/fixtures/bicep/stableazure-aks-gpupool-nc6s-v3-eastus2.bicep",
    ];
    let client = Client::start(json!({}));
    let mut seen = 0;
    for f in files {
        let path = root().join(f);
        let uri = client.open(&path);
        let diagnostics = client.diagnostics(&uri);
        let expected = check_json(&path);
        assert_eq!(as_findings(&diagnostics), expected, "{f}: {diagnostics:#?}");
        seen += expected.0.len() + expected.1.len();
        // Every finding names its rule and links its page; severities are mapped.
        for d in diagnostics.iter().filter(|d| d["code"] != "unresolved") {
            let code = d["code"].as_str().expect("code");
            let href = d["codeDescription"]["href"].as_str().unwrap_or_default();
            assert!(href.ends_with(&format!("/docs/rules/{code}.md")), "{d}");
            assert!(
                root().join(format!("docs/rules/{code}.md")).is_file(),
                "{code}"
            );
            assert!(
                (1..=3).contains(&d["severity"].as_u64().unwrap_or(0)),
                "{d}"
            );
        }
    }
    assert!(
        seen >= 12,
        "the files hold {seen} findings and unresolved facts"
    );
    client.stop();
}

#[test]
fn the_first_manifest_has_findings_at_checks_lines() {
    let path = root().join("examples/azureml/cuda12-on-k80-job.yml");
    let client = Client::start(json!({}));
    let uri = client.open(&path);
    let (findings, _) = as_findings(&client.diagnostics(&uri));
    assert_eq!(
        findings,
        BTreeSet::from([
            ("cuda-arch-compat".to_string(), 22),
            ("sku-retired".to_string(), 24)
        ])
    );
    client.stop();
}

#[test]
fn change_is_debounced_and_rechecked() {
    let path = root().join("examples/azureml/cuda12-on-k80-job.yml");
    let client = Client::start(json!({"debounceMs": 50}));
    let uri = client.open(&path);
    assert_eq!(client.diagnostics(&uri).len(), 2);
    let text = std::fs::read_to_string(&path).expect("read");
    // Two quick changes, one check: the retired K80 size becomes a current T4 size.
    for (v, t) in [
        (2, text.replace("Standard_NC6", "Standard_NC6_typo")),
        (3, text.replace("Standard_NC6", "Standard_NC4as_T4_v3")),
    ] {
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": v}, "contentChanges": [{"text": t}]}),
        );
    }
    let after = client.diagnostics(&uri);
    assert!(
        !after
            .iter()
            .any(|d| d["code"] == "sku-retired" || d["code"] == "cuda-arch-compat"),
        "{after:#?}"
    );
    client.stop();
}

#[test]
fn suppress_action_inserts_the_inline_comment_check_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("job.yml");
    std::fs::copy(root().join("examples/azureml/cuda12-on-k80-job.yml"), &path).expect("copy");
    let mut client = Client::start(json!({}));
    let uri = client.open(&path);
    let diagnostics = client.diagnostics(&uri);
    let retired = diagnostics
        .iter()
        .find(|d| d["code"] == "sku-retired")
        .expect("sku-retired")
        .clone();
    let actions = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": retired["range"], "context": {"diagnostics": [retired]}}),
    );
    let action = actions
        .as_array()
        .expect("actions")
        .iter()
        .find(|a| {
            a["title"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Suppress sku-retired")
        })
        .expect("a suppress action")
        .clone();
    let edit = &action["edit"]["changes"][&uri][0];
    assert_eq!(edit["range"]["start"]["line"], 23);
    let inserted = edit["newText"].as_str().expect("text");
    assert_eq!(inserted, "  # computeguard:ignore sku-retired \n");
    client.stop();
    // With a reason written after it, check suppresses the finding.
    let text = std::fs::read_to_string(&path).expect("read");
    let mut lines: Vec<&str> = text.lines().collect();
    let with_reason = format!(
        "{}moving off K80 in sprint 12",
        inserted.trim_end_matches('\n')
    );
    lines.insert(23, &with_reason);
    std::fs::write(&path, lines.join("\n") + "\n").expect("write");
    let (findings, _) = check_json(&path);
    assert!(
        !findings.iter().any(|(r, _)| r == "sku-retired"),
        "{findings:?}"
    );
}

#[test]
fn hover_on_a_size_shows_the_catalog() {
    let path = root().join("examples/azureml/cuda12-on-k80-job.yml");
    let mut client = Client::start(json!({}));
    let uri = client.open(&path);
    let text = std::fs::read_to_string(&path).expect("read");
    let (line, col) = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find("Standard_NC6").map(|c| (i, c + 3)))
        .expect("a size in the file");
    let hover = client.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": col}}),
    );
    let value = hover["contents"]["value"].as_str().unwrap_or_default();
    assert!(value.contains("Standard_NC6"), "{value}");
    assert!(value.contains("K80"), "{value}");
    assert!(value.contains("Kepler"), "{value}");
    assert!(value.contains("retire"), "{value}");
    // On the CUDA image: where its CUDA version runs.
    let (line, col) = text
        .lines()
        .enumerate()
        .find_map(|(i, l)| l.find("nvidia/cuda:").map(|c| (i, c + 5)))
        .expect("an image in the file");
    let hover = client.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": col}}),
    );
    let value = hover["contents"]["value"].as_str().unwrap_or_default();
    assert!(value.contains("CUDA 12.4.1"), "{value}");
    assert!(
        value.contains("not on: ") && value.contains("Kepler (3.7)"),
        "{value}"
    );
    client.stop();
}

#[test]
fn a_broken_config_is_one_diagnostic_then_reloaded_when_fixed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("job.yml");
    std::fs::copy(root().join("examples/azureml/cuda12-on-k80-job.yml"), &path).expect("copy");
    let config = dir.path().join("computeguard.yaml");
    std::fs::write(&config, "asOf: 2026-11-22\nrules:\n  sku-retired: loud\n").expect("write");
    let client = Client::start(json!({}));
    let uri = client.open(&path);
    let config_uri = uri_of(&config);
    let mut on_config = None;
    let mut on_file = None;
    while on_config.is_none() || on_file.is_none() {
        if let Message::Notification(n) = client.recv()
            && n.method == "textDocument/publishDiagnostics"
        {
            let d = n.params["diagnostics"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if n.params["uri"] == config_uri {
                on_config = Some(d);
            } else if n.params["uri"] == uri {
                on_file = Some(d);
            }
        }
    }
    let on_config = on_config.unwrap_or_default();
    assert_eq!(on_config.len(), 1, "{on_config:#?}");
    assert_eq!(on_config[0]["range"]["start"]["line"], 2, "{on_config:#?}");
    assert!(
        on_config[0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("expected error, warning, info or off"),
        "{on_config:#?}"
    );
    assert!(
        on_file
            .unwrap_or_default()
            .iter()
            .all(|d| d["code"].is_null())
    );
    // Fixed on disk, announced as a watched file: findings again, the config's cleared.
    std::fs::write(&config, "asOf: 2026-11-22\nrules:\n  sku-retired: info\n").expect("write");
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": config_uri, "type": 2}]}),
    );
    let mut cleared = false;
    let mut findings = None;
    while !cleared || findings.is_none() {
        if let Message::Notification(n) = client.recv()
            && n.method == "textDocument/publishDiagnostics"
        {
            let d = n.params["diagnostics"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if n.params["uri"] == config_uri {
                cleared = d.is_empty();
            } else if n.params["uri"] == uri {
                findings = Some(d);
            }
        }
    }
    let findings = findings.unwrap_or_default();
    let retired = findings
        .iter()
        .find(|d| d["code"] == "sku-retired")
        .expect("sku-retired again");
    assert_eq!(retired["severity"], 3, "info as the fixed config says");
    client.stop();
}

/// Applies the single-line edits of a code action to `text`.
fn apply(text: &str, edits: &[Value]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut edits = edits.to_vec();
    edits.sort_by_key(|e| {
        let s = &e["range"]["start"];
        std::cmp::Reverse((s["line"].as_u64(), s["character"].as_u64()))
    });
    for e in edits {
        let (s, end) = (&e["range"]["start"], &e["range"]["end"]);
        let line = s["line"].as_u64().expect("line") as usize;
        assert_eq!(Some(line as u64), end["line"].as_u64(), "one line: {e}");
        let l: Vec<char> = lines[line].chars().collect();
        let a = s["character"].as_u64().expect("start") as usize;
        let b = end["character"].as_u64().expect("end") as usize;
        let new: String = l[..a]
            .iter()
            .chain(
                e["newText"]
                    .as_str()
                    .expect("text")
                    .chars()
                    .collect::<Vec<_>>()
                    .iter(),
            )
            .chain(l[b..].iter())
            .collect();
        lines[line] = new;
    }
    lines.join("\n") + "\n"
}

#[test]
fn plans_best_alternative_is_a_code_action_that_clears_the_finding() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("job.yml");
    std::fs::copy(root().join("examples/azureml/cuda12-on-k80-job.yml"), &path).expect("copy");
    let mut client = Client::start(json!({}));
    let uri = client.open(&path);
    let diagnostics = client.diagnostics(&uri);
    let retired = diagnostics
        .iter()
        .find(|d| d["code"] == "sku-retired")
        .expect("sku-retired")
        .clone();
    let actions = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": retired["range"], "context": {"diagnostics": [retired]}}),
    );
    let action = actions
        .as_array()
        .expect("actions")
        .iter()
        .find(|a| {
            a["title"]
                .as_str()
                .unwrap_or_default()
                .starts_with("Move to ")
        })
        .unwrap_or_else(|| panic!("a fix from plan: {actions:#}"))
        .clone();
    client.stop();
    let text = std::fs::read_to_string(&path).expect("read");
    let fixed = apply(
        &text,
        action["edit"]["changes"][&uri].as_array().expect("edits"),
    );
    assert_ne!(fixed, text);
    std::fs::write(&path, fixed).expect("write");
    let (findings, _) = check_json(&path);
    assert!(
        !findings.iter().any(|(r, _)| r == "sku-retired"),
        "{}: {findings:?}",
        action["title"]
    );
}

/// Files of the shared corpus of real public manifests (`../shared/corpus`, read-only,
/// found as tests/cli/corpus.rs finds it), at least one per format, each with findings or
/// unresolved facts: what Neovim shows on them is compared with `check --format json`.
const NEOVIM_CORPUS: &[&str] = &[
    "kaito/workspace-tuning-phi-3-pvc-nc6s-v3.yaml",
    "kaito-presets/workspaces/ws-phi-3.5-mini-instruct-nc6s-v3.yaml",
    "kaito/workspace-v1alpha1-llama2-70b-nc96ads-a100.yaml",
    "bicep-modules/aks-construction/bicep/main.bicep",
    "aks-bicep-arm/stableazure-aks-gpupool-nc6s-v3-eastus2.bicep",
    "terraform/aks-gpu-terraform-main-gpu-pool-autoscale.tf",
    "aml-compute/cluster-basic-ds3v2-cpu.yml",
    "aml-compute/fl-sandbox-eyeson-gpu-default-nc6.arm.json",
    "k8s-pods/kyverno-check-nvidia-gpu-pods-bad.yaml",
];

/// `catalog show SIZE`'s value of `key` (the column between the key and the source).
fn catalog_fact(size: &str, key: &str) -> String {
    let out = computeguard()
        .args(["catalog", "show", size])
        .output()
        .expect("run catalog show");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            let mut cols = l.split("  ").map(str::trim).filter(|c| !c.is_empty());
            (cols.next() == Some(key)).then(|| cols.next().unwrap_or_default().to_string())
        })
        .unwrap_or_else(|| panic!("{key} of {size} in catalog show"))
}

/// Neovim's built-in client, headless (`tests/cli/lsp/neovim.lua`), one client for all
/// buffers: on files of the shared corpus (one per format and more) and on a repository
/// example, what Neovim shows equals `check --format json` on the same file with the same
/// configuration (same rules, same lines); a hover on a corpus file's VM size says what
/// `catalog show` says; a broken `computeguard.yaml` beside a corpus manifest is exactly one
/// diagnostic; and plan's code action, applied and written by Neovim, clears the finding.
/// Skipped, saying so, where `nvim` is not installed (scripts/test.sh installs Debian's
/// `neovim`); without the corpus, only the example and a copy of it are opened.
#[test]
fn neovim_shows_checks_findings_and_applies_a_code_action() {
    if std::process::Command::new("nvim")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("skipped: `nvim` is not installed (Debian: apt-get install neovim)");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let job = dir.path().join("job.yml");
    std::fs::copy(root().join("examples/azureml/cuda12-on-k80-job.yml"), &job).expect("copy");
    let corpus = root().join("../shared/corpus");
    let corpus_files: Vec<std::path::PathBuf> = if corpus.is_dir() {
        NEOVIM_CORPUS
            .iter()
            .map(|f| corpus.join(f).canonicalize().expect(f))
            .collect()
    } else {
        println!(
            "corpus part skipped: {} not found; the example alone",
            corpus.display()
        );
        Vec::new()
    };
    // A broken configuration beside a copy of a corpus manifest (the corpus is read-only).
    let broken = dir.path().join("broken");
    std::fs::create_dir(&broken).expect("mkdir");
    let in_broken = broken.join("cluster.yml");
    std::fs::copy(
        corpus_files
            .iter()
            .find(|f| f.ends_with("aml-compute/cluster-basic-ds3v2-cpu.yml"))
            .cloned()
            .unwrap_or_else(|| job.clone()),
        &in_broken,
    )
    .expect("copy");
    let config = broken.join("computeguard.yaml");
    std::fs::write(&config, "asOf: 2026-11-22\nrules:\n  sku-retired: loud\n").expect("write");

    let mut open: Vec<std::path::PathBuf> = corpus_files.clone();
    open.push(job.clone());
    let expected: Vec<_> = open.iter().map(|f| check_json(f)).collect();
    open.push(in_broken.clone());
    let (hover_file, hover_size) = match corpus_files.first() {
        Some(f) => (f.clone(), "Standard_NC6s_v3"),
        None => (job.clone(), "Standard_NC6"),
    };
    let out = dir.path().join("nvim.json");
    let spec = dir.path().join("spec.json");
    std::fs::write(
        &spec,
        json!({
            "bin": env!("CARGO_BIN_EXE_computeguard"),
            "args": ["--as-of", AS_OF],
            "open": open,
            "config": config,
            "hover": {"file": hover_file, "word": hover_size},
            "action": {"file": job, "rule": "sku-retired", "title": "Move to "},
            "out": out,
        })
        .to_string(),
    )
    .expect("write spec");
    let run = std::process::Command::new("nvim")
        .args(["--headless", "-u", "NONE", "-i", "NONE", "-n", "-c"])
        .arg(format!(
            "luafile {}",
            root().join("tests/cli/lsp/neovim.lua").display()
        ))
        .env("CG_SPEC", &spec)
        .env(
            "COMPUTEGUARD_CACHE_DIR",
            std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cwasm-cache"),
        )
        .current_dir(dir.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run nvim");
    assert!(
        run.status.success(),
        "nvim: {:?}\n{}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let got: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("nvim.json")).expect("json");

    // Every file: what Neovim shows is check's findings and unresolved facts, no more, no
    // fewer; each file was chosen for having some, so an empty answer is a failure.
    for (f, want) in open.iter().zip(&expected) {
        let name = f.display().to_string();
        let shown = got["files"][&name].as_array().expect(&name);
        assert!(
            !want.0.is_empty() || !want.1.is_empty(),
            "{name}: check finds nothing here any more; pick another corpus file"
        );
        assert_eq!(&as_findings(shown), want, "{name}: {shown:#?}");
    }
    let rules: BTreeSet<&str> = expected
        .iter()
        .flat_map(|e| e.0.iter().map(|(r, _)| r.as_str()))
        .collect();
    if !corpus_files.is_empty() {
        assert!(rules.len() >= 5, "{rules:?}");
        assert!(expected.iter().any(|e| !e.1.is_empty()), "some unresolved");
    }

    // Hover on a size in a corpus file: what `catalog show` knows of it.
    let hover = got["hover"].as_str().unwrap_or_default();
    for key in ["gpu.model", "gpu.architecture", "retirementDate"] {
        let fact = catalog_fact(hover_size, key);
        assert!(hover.contains(&fact), "{key} {fact}: {hover}");
    }
    assert!(hover.contains(hover_size), "{hover}");

    // The broken configuration: one diagnostic on it, at the line of the bad value; the
    // manifest beside it gets no findings, only why it is not checked.
    let on_config = got["config"].as_array().expect("config diagnostics");
    assert_eq!(on_config.len(), 1, "{on_config:#?}");
    assert_eq!(on_config[0]["range"]["start"]["line"], 2, "{on_config:#?}");
    assert!(
        on_config[0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("expected error, warning, info or off"),
        "{on_config:#?}"
    );
    let beside = got["files"][in_broken.display().to_string()]
        .as_array()
        .expect("the manifest beside it");
    assert!(
        !beside.is_empty() && beside.iter().all(|d| d["code"].is_null()),
        "{beside:#?}"
    );
    // Without the broken configuration, check finds something there: not a vacuous test.
    std::fs::remove_file(&config).expect("rm");
    let (findings, _) = check_json(&in_broken);
    assert!(!findings.is_empty());

    // Neovim applied plan's edit and wrote the file: check no longer finds the retired size.
    let (after, _) = check_json(&job);
    assert!(
        !after.iter().any(|(r, _)| r == "sku-retired"),
        "{}: {after:?}",
        got["action"]
    );
}

#[test]
fn hover_on_a_kaito_preset_shows_what_it_needs() {
    let value = computeguard::lsp::hover("phi-3-mini-128k-instruct", AS_OF).expect("a preset");
    assert!(
        value.contains("KAITO preset phi-3-mini-128k-instruct"),
        "{value}"
    );
    assert!(value.contains("GPU"), "{value}");
}

#[test]
fn a_broken_context_file_is_one_diagnostic_on_that_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("job.yml");
    std::fs::copy(root().join("examples/azureml/cuda12-on-k80-job.yml"), &path).expect("copy");
    std::fs::write(
        dir.path().join("computeguard.yaml"),
        "catalog: [overlay.yaml]\n",
    )
    .expect("write");
    let overlay = dir.path().join("overlay.yaml");
    std::fs::write(&overlay, "skus:\n  - name: Standard_X\n    gpu: [1\n").expect("write");
    let client = Client::start(json!({}));
    let _ = client.open(&path);
    let on_overlay = client.diagnostics(&uri_of(&overlay));
    assert_eq!(on_overlay.len(), 1, "{on_overlay:#?}");
    assert!(
        on_overlay[0]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("invalid yaml"),
        "{on_overlay:#?}"
    );
    client.stop();
}

#[test]
fn min_nodes_zero_has_a_fix_that_sets_the_minimum_to_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("cluster.yml");
    std::fs::copy(
        root().join("tests/fixtures/azureml/gpu-cluster-idle-nc6.yml"),
        &path,
    )
    .expect("copy");
    let mut client = Client::start(json!({}));
    let uri = client.open(&path);
    let d = client
        .diagnostics(&uri)
        .into_iter()
        .find(|d| d["code"] == "min-nodes-zero")
        .expect("min-nodes-zero");
    let actions = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": d["range"], "context": {"diagnostics": [d]}}),
    );
    let action = actions
        .as_array()
        .expect("actions")
        .iter()
        .find(|a| a["title"] == "Set `min_instances` to 0 (no idle GPU nodes)")
        .unwrap_or_else(|| panic!("{actions:#}"))
        .clone();
    client.stop();
    let text = std::fs::read_to_string(&path).expect("read");
    let fixed = apply(
        &text,
        action["edit"]["changes"][&uri].as_array().expect("edits"),
    );
    assert!(fixed.contains("\nmin_instances: 0\n"), "{fixed}");
    std::fs::write(&path, fixed).expect("write");
    let (after, _) = check_json(&path);
    assert!(
        !after.iter().any(|(r, _)| r == "min-nodes-zero"),
        "{after:?}"
    );
}

/// A Terraform GPU pool whose size comes from `var.gpu_size`, and the `terraform.tfvars`
/// beside it that sets the retired Standard_NC6: (folder, main.tf, terraform.tfvars).
fn gpu_pool_and_tfvars() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let main = dir.path().join("main.tf");
    std::fs::write(
        &main,
        "variable \"gpu_size\" {\n  type = string\n}\n\n\
         resource \"azurerm_kubernetes_cluster_node_pool\" \"gpu\" {\n\
         \x20 name                  = \"gpu\"\n\
         \x20 kubernetes_cluster_id = \"cluster\"\n\
         \x20 vm_size               = var.gpu_size\n\
         \x20 node_count            = 1\n}\n",
    )
    .expect("write");
    let vars = dir.path().join("terraform.tfvars");
    std::fs::write(&vars, "gpu_size = \"Standard_NC6\"\n").expect("write");
    (dir, main, vars)
}

/// A `terraform.tfvars` that sets a current size.
const CURRENT_SIZE: &str = "gpu_size = \"Standard_NC4as_T4_v3\"\n";

/// Opens `main` (its retired size found) and then `vars`: (main's uri, vars' uri, main's
/// first findings).
fn open_pool_then_tfvars(client: &Client, main: &Path, vars: &Path) -> (String, String, Shown) {
    let main_uri = client.open(main);
    let before = as_findings(&client.diagnostics(&main_uri));
    assert!(
        before.0.iter().any(|(r, _)| r == "sku-retired"),
        "{before:?}"
    );
    let vars_uri = client.open(vars);
    let _ = client.diagnostics(&vars_uri);
    (main_uri, vars_uri, before)
}

/// The editor's buffer of `uri` becomes `text` (version 2), not saved.
fn edit(client: &Client, uri: &str, text: &str) {
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": text}]}),
    );
}

/// A `.tfvars` open beside the Terraform file that reads it: when it is saved, the open
/// `.tf` is checked again with the saved values (what `check` then finds), though its own
/// text did not change.
#[test]
fn saving_a_tfvars_rechecks_the_open_terraform_file() {
    let (_dir, main, vars) = gpu_pool_and_tfvars();
    let client = Client::start(json!({"debounceMs": 20}));
    let (main_uri, vars_uri, before) = open_pool_then_tfvars(&client, &main, &vars);
    assert_eq!(before, check_json(&main));
    // Edited in the editor, then saved: a current size.
    let text = CURRENT_SIZE;
    edit(&client, &vars_uri, text);
    std::fs::write(&vars, text).expect("write");
    client.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": vars_uri}}),
    );
    let after = as_findings(&client.diagnostics(&main_uri));
    let expected = check_json(&main);
    assert_eq!(after, expected);
    assert_ne!(after, before);
    assert!(
        !after.0.iter().any(|(r, _)| r == "sku-retired"),
        "{after:?}"
    );
    client.stop();
}

#[test]
fn an_unsaved_tfvars_counts_for_the_open_terraform_file() {
    // The open main.tf reads terraform.tfvars; edited in the editor and not saved, the
    // buffer is what the author sees, so it is what the check of main.tf reads. Before,
    // main.tf kept the size on disk until the tfvars was saved.
    let (_dir, main, vars) = gpu_pool_and_tfvars();
    let client = Client::start(json!({"debounceMs": 20}));
    let (main_uri, vars_uri, before) = open_pool_then_tfvars(&client, &main, &vars);
    let text = CURRENT_SIZE;
    edit(&client, &vars_uri, text);
    let after = as_findings(&client.diagnostics(&main_uri));
    assert!(
        !after.0.iter().any(|(r, _)| r == "sku-retired"),
        "the unsaved size was not read: {after:?}"
    );
    // The disk still holds the old size; once it holds the buffer's, `check` agrees.
    assert!(
        std::fs::read_to_string(&vars)
            .expect("read")
            .contains("Standard_NC6\"")
    );
    std::fs::write(&vars, text).expect("write");
    assert_eq!(after, check_json(&main));
    // Closed without saving: the disk's text counts again.
    std::fs::write(&vars, "gpu_size = \"Standard_NC6\"\n").expect("write");
    client.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": vars_uri}}),
    );
    let _ = client.diagnostics(&vars_uri);
    edit(
        &client,
        &main_uri,
        &std::fs::read_to_string(&main).expect("read"),
    );
    let closed = as_findings(&client.diagnostics(&main_uri));
    assert_eq!(closed, before);
    client.stop();
}

#[test]
fn a_client_that_registers_watchers_is_asked_to_watch_the_configuration() {
    let client = Client::start_with(
        json!({"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": true}}}),
        json!({}),
    );
    let registration = loop {
        if let Message::Request(r) = client.recv() {
            break r;
        }
    };
    assert_eq!(registration.method, "client/registerCapability");
    let r = &registration.params["registrations"][0];
    assert_eq!(r["method"], "workspace/didChangeWatchedFiles");
    let globs: Vec<&str> = r["registerOptions"]["watchers"]
        .as_array()
        .expect("watchers")
        .iter()
        .filter_map(|w| w["globPattern"].as_str())
        .collect();
    assert!(globs.contains(&"**/computeguard.yaml"), "{globs:?}");
    assert!(globs.contains(&"**/*.tfvars"), "{globs:?}");
    assert!(globs.contains(&"**/*.bicepparam"), "{globs:?}");
    client.stop();
}
