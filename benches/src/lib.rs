//! Shared inputs of the computeguard benchmarks (`benches/evaluation.rs`,
//! `benches/check.rs`). Results and how to reproduce them: `docs/benchmarks.md`.

use std::path::PathBuf;

/// The evaluation date every benchmark uses, so results do not drift with the calendar.
pub const AS_OF: &str = "2026-11-22";

/// The built-in pack source, as the compiler sees it.
pub const BUILTIN_PACK_PATH: &str = "policies/builtin.yaml";
pub const BUILTIN_PACK: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../policies/builtin.yaml"
));

/// One benchmark document.
#[derive(Clone, Copy, Debug)]
pub struct Document {
    /// Benchmark id (`native/<id>`, `component/<id>`).
    pub id: &'static str,
    /// JSON text, as the host hands it to the policy.
    pub json: &'static str,
}

/// The three representative documents.
pub const DOCUMENTS: &[Document] = &[
    // Retired K80 size, idle nodes kept: several findings.
    Document {
        id: "aml_nc6_cluster",
        json: r#"{
  "$schema": "https://azuremlschemas.azureedge.net/latest/amlCompute.schema.json",
  "type": "amlcompute",
  "name": "gpu-cluster",
  "size": "Standard_NC6",
  "location": "eastus",
  "min_instances": 2,
  "max_instances": 4,
  "idle_time_before_scale_down": 120,
  "tier": "dedicated"
}"#,
    },
    // Inference on an InfiniBand H100 size with a CUDA image.
    Document {
        id: "k8s_h100_inference",
        json: r#"{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {
    "name": "llm-serving",
    "namespace": "serving",
    "labels": {"app": "llm", "computeguard.io/workload": "inference"}
  },
  "spec": {
    "replicas": 2,
    "selector": {"matchLabels": {"app": "llm"}},
    "template": {
      "metadata": {"labels": {"app": "llm"}},
      "spec": {
        "nodeSelector": {"node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5"},
        "tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
        "containers": [{
          "name": "server",
          "image": "nvidia/cuda:12.4.1-runtime-ubuntu22.04",
          "ports": [{"containerPort": 8000}],
          "resources": {"limits": {"nvidia.com/gpu": 8, "memory": "512Gi"}}
        }]
      }
    }
  }
}"#,
    },
    // No GPU, nothing to report.
    Document {
        id: "nginx_no_gpu",
        json: r#"{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
  "spec": {
    "replicas": 3,
    "selector": {"matchLabels": {"app": "web"}},
    "template": {
      "metadata": {"labels": {"app": "web"}},
      "spec": {
        "containers": [{
          "name": "nginx",
          "image": "nginx:1.27",
          "ports": [{"containerPort": 80}],
          "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}
        }]
      }
    }
  }
}"#,
    },
];

/// A document the policy recognises as nothing: the component call is then
/// instantiate + pack decode + JSON parse of `{}` + an empty result.
pub const EMPTY_DOCUMENT: &str = "{}";

/// The workspace root (`benches/..`).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The folder `check` benchmarks scan: `$COMPUTEGUARD_BENCH_DIR` if set, else the
/// first of `examples/`, `tests/fixtures/`, `../shared/corpus/` that exists and holds
/// at least one file.
pub fn check_corpus() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("COMPUTEGUARD_BENCH_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        return has_file(&dir).then(|| dir.canonicalize().unwrap_or(dir));
    }
    let root = workspace_root();
    [
        root.join("examples"),
        root.join("tests/fixtures"),
        root.join("../shared/corpus"),
    ]
    .into_iter()
    .find(|d| has_file(d))
    .map(|d| d.canonicalize().unwrap_or(d))
}

fn has_file(dir: &std::path::Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            has_file(&p)
        } else {
            p.is_file()
        }
    })
}

/// `<workspace>/target/release/computeguard`, when it has been built.
pub fn release_binary() -> Option<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    let bin = target.join("release/computeguard");
    bin.is_file().then(|| bin.canonicalize().unwrap_or(bin))
}

/// A fresh, empty directory under the system temp dir, for an artifact cache.
pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "computeguard-bench-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}
