//! The Kubernetes manifests in `deploy/kubernetes`: every file parses, and the
//! properties the webhook's availability and safety depend on hold (replicas and
//! disruption budget, probes on the served port, TLS wiring through cert-manager,
//! webhook scope and timeouts against the server's own limits). The config in the
//! ConfigMap goes through the real loader, the container arguments through the real
//! command-line parser, and the webhooks' `matchConditions` through a CEL evaluator.

use crate::root;
use clap::Parser;
use computeguard::config::Config;
use computeguard_decode::{Document, decode_yaml};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

type Result<T = (), E = String> = std::result::Result<T, E>;

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

const DIR: &str = "deploy/kubernetes";
const NAMESPACE: &str = "computeguard";

/// One object of a manifest file, with where it was written.
struct Object {
    file: String,
    doc: Document,
}

impl Object {
    fn get(&self, pointer: &str) -> &Value {
        self.doc.value.pointer(pointer).unwrap_or(&Value::Null)
    }

    fn str(&self, pointer: &str) -> &str {
        self.get(pointer).as_str().unwrap_or_default()
    }

    /// `file:line` of the pointer (or of its nearest written ancestor).
    fn at(&self, pointer: &str) -> String {
        let line = self.doc.positions.locate(pointer).map_or(0, |s| s.line);
        format!("{}:{line} ({pointer})", self.file)
    }

    fn kind(&self) -> &str {
        self.str("/kind")
    }

    fn name(&self) -> &str {
        self.str("/metadata/name")
    }
}

/// Every object of every `.yaml` file in `deploy/kubernetes` but the kustomization.
struct Manifests {
    objects: Vec<Object>,
}

impl Manifests {
    fn load() -> Result<Manifests> {
        let mut objects = Vec::new();
        for file in yaml_files()? {
            if file == "kustomization.yaml" {
                continue;
            }
            let rel = format!("{DIR}/{file}");
            let text = read(&rel)?;
            let docs = decode_yaml(&text)
                .map_err(|e| format!("{rel}:{}:{}: {}", e.line, e.column, e.message))?;
            ensure!(!docs.is_empty(), "{rel}: no Kubernetes object in the file");
            for doc in docs {
                objects.push(Object {
                    file: rel.clone(),
                    doc,
                });
            }
        }
        Ok(Manifests { objects })
    }

    fn one(&self, kind: &str) -> Result<&Object> {
        let mut found = self.objects.iter().filter(|o| o.kind() == kind);
        let first = found
            .next()
            .ok_or(format!("{DIR}: no {kind} in any manifest"))?;
        ensure!(
            found.next().is_none(),
            "{DIR}: expected one {kind}, found several"
        );
        Ok(first)
    }

    fn named(&self, kind: &str, name: &str) -> Result<&Object> {
        self.objects
            .iter()
            .find(|o| o.kind() == kind && o.name() == name)
            .ok_or(format!("{DIR}: no {kind} named `{name}`"))
    }

    fn webhook_configurations(&self) -> Result<[&Object; 2]> {
        Ok([
            self.one("ValidatingWebhookConfiguration")?,
            self.one("MutatingWebhookConfiguration")?,
        ])
    }
}

fn read(rel: &str) -> Result<String> {
    std::fs::read_to_string(root().join(rel)).map_err(|e| format!("{rel}: cannot read: {e}"))
}

fn yaml_files() -> Result<BTreeSet<String>> {
    let dir = root().join(DIR);
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{DIR}: {e}"))?;
    let mut files = BTreeSet::new();
    for entry in entries {
        let name = entry
            .map_err(|e| format!("{DIR}: {e}"))?
            .file_name()
            .to_string_lossy()
            .to_string();
        if name.ends_with(".yaml") || name.ends_with(".yml") {
            files.insert(name);
        }
    }
    Ok(files)
}

/// The single container of the Deployment's pod template.
fn container(deployment: &Object) -> Result<&Value> {
    let containers = deployment
        .get("/spec/template/spec/containers")
        .as_array()
        .ok_or(format!(
            "{}: expected a list of containers",
            deployment.at("/spec/template/spec/containers")
        ))?;
    ensure!(
        containers.len() == 1,
        "{}: expected exactly one container, found {}",
        deployment.at("/spec/template/spec/containers"),
        containers.len()
    );
    containers.first().ok_or_else(|| "no container".to_string())
}

/// The container's arguments, parsed by the real `computeguard` command line.
struct ServeArgs {
    port: u16,
    /// `--probe-addr`'s port: the plain-HTTP probe and metrics port.
    probe_port: Option<u16>,
    tls_cert: PathBuf,
    tls_key: PathBuf,
    config: PathBuf,
    shutdown_timeout: u64,
}

fn serve_args(deployment: &Object) -> Result<ServeArgs> {
    let c = container(deployment)?;
    let mut argv = vec!["computeguard".to_string()];
    for a in c["args"].as_array().into_iter().flatten() {
        argv.push(a.as_str().ok_or("an argument is not a string")?.to_string());
    }
    let at = deployment.at("/spec/template/spec/containers/0/args");
    let cli = computeguard::Cli::try_parse_from(&argv)
        .map_err(|e| format!("{at}: `computeguard` rejects the arguments: {e}"))?;
    let computeguard::Command::Serve(args) = cli.command else {
        return Err(format!("{at}: expected the `serve` command"));
    };
    Ok(ServeArgs {
        port: args.addr.port(),
        probe_port: args.probe_addr.map(|a| a.port()),
        tls_cert: args.tls_cert,
        tls_key: args.tls_key,
        config: args
            .config
            .ok_or(format!("{at}: expected --config (the ConfigMap's file)"))?,
        shutdown_timeout: args.shutdown_timeout,
    })
}

/// The port number a probe's or Service's `port` names: a number, or the name of
/// one of the container's ports.
fn resolve_port(container: &Value, port: &Value) -> Option<u64> {
    match port {
        Value::Number(n) => n.as_u64(),
        Value::String(name) => container["ports"]
            .as_array()?
            .iter()
            .find(|p| p["name"] == name.as_str())
            .and_then(|p| p["containerPort"].as_u64()),
        _ => None,
    }
}

/// The volume mounted at the longest mount path that contains `file`.
fn volume_for<'a>(pod: &'a Value, container: &Value, file: &Path) -> Option<&'a Value> {
    let mount = container["volumeMounts"]
        .as_array()?
        .iter()
        .filter(|m| m["mountPath"].as_str().is_some_and(|p| file.starts_with(p)))
        .max_by_key(|m| m["mountPath"].as_str().map_or(0, str::len))?;
    if mount.get("subPath").is_some() {
        return None; // a subPath mount never sees ConfigMap or Secret updates
    }
    pod["volumes"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == mount["name"])
}

/// A CPU quantity in millicores or a memory quantity in bytes.
fn quantity(v: &Value) -> Option<f64> {
    let s = match v {
        Value::String(s) => s.as_str(),
        Value::Number(n) => return n.as_f64(),
        _ => return None,
    };
    let suffixes: [(&str, f64); 7] = [
        ("m", 1e-3),
        ("Ki", 1024.0),
        ("Mi", 1024.0 * 1024.0),
        ("Gi", 1024.0 * 1024.0 * 1024.0),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
    ];
    for (suffix, factor) in suffixes {
        if let Some(n) = s.strip_suffix(suffix) {
            return n.parse::<f64>().ok().map(|n| n * factor);
        }
    }
    s.parse().ok()
}

/// The ConfigMap's `computeguard.yaml`, through the loader `computeguard serve` uses.
fn shipped_config(m: &Manifests, config_file: &Path) -> Result<Config> {
    let cm = m.one("ConfigMap")?;
    let key = config_file
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let text = cm.get(&format!("/data/{key}")).as_str().ok_or(format!(
        "{}: --config names `{key}`, which the ConfigMap does not hold",
        cm.at("/data")
    ))?;
    // A config error names this path and the line within the embedded file.
    let path = PathBuf::from(format!("{}#{key}", cm.file));
    Config::parse(&path, text).map_err(|e| format!("{e:#}"))
}

#[test]
fn kustomization_lists_every_manifest_and_every_object_is_well_formed() -> Result {
    let text = read(&format!("{DIR}/kustomization.yaml"))?;
    let docs = decode_yaml(&text).map_err(|e| format!("kustomization.yaml: {}", e.message))?;
    let k = docs.first().ok_or("kustomization.yaml is empty")?;
    let listed: BTreeSet<String> = k.value["resources"]
        .as_array()
        .ok_or("kustomization.yaml: expected a `resources` list")?
        .iter()
        .filter_map(|r| r.as_str().map(str::to_string))
        .collect();
    let mut files = yaml_files()?;
    files.remove("kustomization.yaml");
    assert_eq!(
        listed, files,
        "kustomization.yaml `resources` vs the manifests in {DIR}: a file missing from the list is never applied"
    );

    let m = Manifests::load()?;
    let mut seen = BTreeSet::new();
    let cluster_scoped = [
        "Namespace",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ];
    for o in &m.objects {
        ensure!(
            !o.str("/apiVersion").is_empty() && !o.kind().is_empty() && !o.name().is_empty(),
            "{}: expected apiVersion, kind and metadata.name",
            o.at("")
        );
        ensure!(
            seen.insert((o.kind().to_string(), o.name().to_string())),
            "{}: a second {} named `{}`",
            o.at(""),
            o.kind(),
            o.name()
        );
        let ns = o.get("/metadata/namespace");
        if cluster_scoped.contains(&o.kind()) {
            ensure!(
                ns.is_null(),
                "{}: a cluster-scoped object has no namespace",
                o.at("/metadata/namespace")
            );
        } else {
            ensure!(
                *ns == NAMESPACE,
                "{}: expected namespace `{NAMESPACE}`, found {ns}",
                o.at("/metadata/namespace")
            );
        }
    }
    let ns = m.one("Namespace")?;
    assert_eq!(ns.name(), NAMESPACE, "{}", ns.at("/metadata/name"));
    assert_eq!(
        ns.str("/metadata/labels/pod-security.kubernetes.io~1enforce"),
        "restricted",
        "{}",
        ns.at("/metadata/labels")
    );
    Ok(())
}

#[test]
fn deployment_is_highly_available_and_locked_down() -> Result {
    let m = Manifests::load()?;
    let d = m.one("Deployment")?;
    let pod = d.get("/spec/template/spec");
    let replicas = d.get("/spec/replicas").as_u64().unwrap_or(1);
    ensure!(
        replicas >= 2,
        "{}: expected 2 or more replicas, found {replicas}",
        d.at("/spec/replicas")
    );
    ensure!(
        d.get("/spec/strategy/rollingUpdate/maxUnavailable") == 0,
        "{}: a rollout must not take a replica away before its successor is ready",
        d.at("/spec/strategy")
    );

    // Replicas land on different nodes.
    let spread = pod["topologySpreadConstraints"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| {
            t["topologyKey"] == "kubernetes.io/hostname"
                && t["whenUnsatisfiable"] == "DoNotSchedule"
                && t["maxSkew"] == 1
        });
    let anti = pod
        .pointer("/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|t| t["topologyKey"] == "kubernetes.io/hostname");
    ensure!(
        spread || anti,
        "{}: expected a hostname topology spread (DoNotSchedule, maxSkew 1) or a required pod anti-affinity",
        d.at("/spec/template/spec")
    );

    // The budget covers these pods and leaves one running.
    let pdb = m.one("PodDisruptionBudget")?;
    let labels = &pod_labels(d)?;
    for (k, v) in pdb
        .get("/spec/selector/matchLabels")
        .as_object()
        .into_iter()
        .flatten()
    {
        ensure!(
            labels.get(k) == Some(v),
            "{}: selector `{k}: {v}` does not select the Deployment's pods",
            pdb.at("/spec/selector")
        );
    }
    let min = pdb.get("/spec/minAvailable").as_u64().unwrap_or(0);
    ensure!(
        min >= 1 && min < replicas,
        "{}: expected minAvailable between 1 and replicas - 1 ({}), found {min}",
        pdb.at("/spec/minAvailable"),
        replicas - 1
    );

    // Least privilege.
    let sa = m.one("ServiceAccount")?;
    assert_eq!(
        pod["serviceAccountName"],
        sa.name(),
        "{}",
        d.at("/spec/template/spec/serviceAccountName")
    );
    for (o, ptr) in [
        (sa, "/automountServiceAccountToken"),
        (d, "/spec/template/spec/automountServiceAccountToken"),
    ] {
        ensure!(
            o.get(ptr) == false,
            "{}: the server never calls the API server; expected false",
            o.at(ptr)
        );
    }
    let c = container(d)?;
    let base = "/spec/template/spec/containers/0/securityContext";
    let sc = &c["securityContext"];
    for (field, want) in [
        ("/runAsNonRoot", json!(true)),
        ("/readOnlyRootFilesystem", json!(true)),
        ("/allowPrivilegeEscalation", json!(false)),
        ("/capabilities/drop", json!(["ALL"])),
        ("/seccompProfile/type", json!("RuntimeDefault")),
    ] {
        let got = sc.pointer(field).unwrap_or(&Value::Null);
        ensure!(
            *got == want,
            "{}: expected {want}, found {got}",
            d.at(&format!("{base}{field}"))
        );
    }
    ensure!(
        pod["securityContext"]["runAsNonRoot"] == true,
        "{}: expected runAsNonRoot at the pod level too",
        d.at("/spec/template/spec/securityContext")
    );

    // Requests and limits, requests within limits.
    for resource in ["cpu", "memory"] {
        let req = quantity(&c["resources"]["requests"][resource]);
        let lim = quantity(&c["resources"]["limits"][resource]);
        let at = d.at("/spec/template/spec/containers/0/resources");
        let (Some(req), Some(lim)) = (req, lim) else {
            return Err(format!("{at}: expected a {resource} request and limit"));
        };
        ensure!(
            req > 0.0 && req <= lim,
            "{at}: {resource} request {req} must be positive and within the limit {lim}"
        );
    }
    ensure!(
        c["image"]
            .as_str()
            .is_some_and(|i| i.contains(':') && !i.ends_with(":latest")),
        "{}: expected a pinned image tag",
        d.at("/spec/template/spec/containers/0/image")
    );
    Ok(())
}

fn pod_labels(d: &Object) -> Result<&serde_json::Map<String, Value>> {
    d.get("/spec/template/metadata/labels")
        .as_object()
        .ok_or(format!(
            "{}: expected pod labels",
            d.at("/spec/template/metadata")
        ))
}

#[test]
fn probes_mounts_and_shutdown_fit_the_server() -> Result {
    let m = Manifests::load()?;
    let d = m.one("Deployment")?;
    let pod = d.get("/spec/template/spec");
    let c = container(d)?;
    let args = serve_args(d)?;
    let base = "/spec/template/spec/containers/0";

    // The container ports are the server's two: the webhook port (--addr) and the
    // plain-HTTP probe port (--probe-addr), which the probes use, so that connections
    // held on the webhook port cannot make them fail (issue 23).
    let probe_port = args.probe_port.ok_or(format!(
        "{}: expected --probe-addr: probes on the webhook port fail while it is held",
        d.at(&format!("{base}/args"))
    ))?;
    let ports: Vec<u64> = c["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["containerPort"].as_u64())
        .collect();
    ensure!(
        ports == [u64::from(args.port), u64::from(probe_port)],
        "{}: expected the container ports {} (--addr) and {probe_port} (--probe-addr), found {ports:?}",
        d.at(&format!("{base}/ports")),
        args.port
    );
    for (probe, path) in [
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
        ("startupProbe", "/healthz"),
    ] {
        let p = &c[probe]["httpGet"];
        let at = d.at(&format!("{base}/{probe}"));
        ensure!(
            p["path"] == path,
            "{at}: expected path {path}, found {}",
            p["path"]
        );
        ensure!(
            p["scheme"] == "HTTP",
            "{at}: the probe port speaks plain HTTP; expected scheme HTTP"
        );
        ensure!(
            resolve_port(c, &p["port"]) == Some(u64::from(probe_port)),
            "{at}: port {} is not the server's probe port {probe_port}",
            p["port"],
        );
    }

    // TLS files come from the cert-manager Certificate's secret, the config from the ConfigMap.
    for file in [&args.tls_cert, &args.tls_key] {
        let v = volume_for(pod, c, file).ok_or(format!(
            "{}: no volume (without subPath) is mounted at {}",
            d.at(&format!("{base}/volumeMounts")),
            file.display()
        ))?;
        let serving = m
            .objects
            .iter()
            .filter(|o| o.kind() == "Certificate" && o.get("/spec/isCA") != true)
            .map(|o| o.str("/spec/secretName"))
            .collect::<Vec<_>>();
        ensure!(
            serving.contains(&v["secret"]["secretName"].as_str().unwrap_or_default()),
            "{}: {} comes from {}, not from the serving Certificate's secret {serving:?}",
            d.at("/spec/template/spec/volumes"),
            file.display(),
            v
        );
    }
    let cm = m.one("ConfigMap")?;
    let v = volume_for(pod, c, &args.config).ok_or(format!(
        "{}: no volume (without subPath: it would never see updates) at {}",
        d.at(&format!("{base}/volumeMounts")),
        args.config.display()
    ))?;
    ensure!(
        v["configMap"]["name"] == cm.name(),
        "{}: --config {} is not on the ConfigMap `{}`",
        d.at("/spec/template/spec/volumes"),
        args.config.display(),
        cm.name()
    );

    // A writable artifact cache on a read-only root filesystem.
    let cache = c["env"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["name"] == "COMPUTEGUARD_CACHE_DIR")
        .and_then(|e| e["value"].as_str())
        .ok_or(format!(
            "{}: expected COMPUTEGUARD_CACHE_DIR",
            d.at(&format!("{base}/env"))
        ))?;
    let v = volume_for(pod, c, Path::new(cache)).ok_or(format!(
        "{}: nothing mounted at {cache}",
        d.at(&format!("{base}/volumeMounts"))
    ))?;
    ensure!(
        v.get("emptyDir").is_some(),
        "{}: the cache at {cache} must be an emptyDir",
        d.at("/spec/template/spec/volumes")
    );

    // Drain: endpoints go first (preStop), then SIGTERM gives in-flight requests
    // --shutdown-timeout, all before the kubelet's SIGKILL.
    let sleep = c
        .pointer("/lifecycle/preStop/sleep/seconds")
        .and_then(Value::as_u64)
        .ok_or(format!(
            "{}: expected a preStop sleep so endpoints drain before SIGTERM",
            d.at(&format!("{base}/lifecycle"))
        ))?;
    let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap_or(30);
    ensure!(
        grace > sleep + args.shutdown_timeout,
        "{}: terminationGracePeriodSeconds {grace} must exceed the preStop sleep {sleep} + --shutdown-timeout {}",
        d.at("/spec/template/spec/terminationGracePeriodSeconds"),
        args.shutdown_timeout
    );
    Ok(())
}

#[test]
fn service_and_certificate_match_what_the_webhooks_call() -> Result {
    let m = Manifests::load()?;
    let d = m.one("Deployment")?;
    let c = container(d)?;
    let args = serve_args(d)?;
    let svc = m.one("Service")?;
    let labels = pod_labels(d)?;
    for (k, v) in svc.get("/spec/selector").as_object().into_iter().flatten() {
        ensure!(
            labels.get(k) == Some(v),
            "{}: `{k}: {v}` does not select the webhook pods",
            svc.at("/spec/selector")
        );
    }

    for hooks in m.webhook_configurations()? {
        // cainjector: `namespace/certificate`, and that Certificate names the Service.
        let inject = hooks.str("/metadata/annotations/cert-manager.io~1inject-ca-from");
        let (ns, cert_name) = inject.split_once('/').ok_or(format!(
            "{}: expected cert-manager.io/inject-ca-from: NAMESPACE/CERTIFICATE",
            hooks.at("/metadata/annotations")
        ))?;
        let cert = m.named("Certificate", cert_name)?;
        assert_eq!(
            ns,
            cert.str("/metadata/namespace"),
            "{}",
            hooks.at("/metadata/annotations")
        );

        for (i, w) in hooks
            .get("/webhooks")
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            let at = hooks.at(&format!("/webhooks/{i}/clientConfig/service"));
            let s = &w["clientConfig"]["service"];
            ensure!(
                s["name"] == svc.name() && s["namespace"] == svc.str("/metadata/namespace"),
                "{at}: not the Service {}",
                svc.name()
            );
            let host = format!("{}.{}.svc", svc.name(), svc.str("/metadata/namespace"));
            ensure!(
                cert.get("/spec/dnsNames")
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|n| n.as_str() == Some(host.as_str())),
                "{}: the certificate must name {host}, which the API server calls",
                cert.at("/spec/dnsNames")
            );
            let port = s["port"].as_u64().unwrap_or(443);
            let sp = svc
                .get("/spec/ports")
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["port"] == port)
                .ok_or(format!("{at}: the Service has no port {port}"))?;
            ensure!(
                resolve_port(c, &sp["targetPort"]) == Some(u64::from(args.port)),
                "{}: targetPort {} is not the container port {}",
                svc.at("/spec/ports"),
                sp["targetPort"],
                args.port
            );
        }
    }
    Ok(())
}

#[test]
fn webhooks_are_scoped_timed_and_fail_safely() -> Result {
    let m = Manifests::load()?;
    let d = m.one("Deployment")?;
    let args = serve_args(d)?;
    let config = shipped_config(&m, &args.config)?;
    let [validating, mutating] = m.webhook_configurations()?;
    let own_ns = d.str("/metadata/namespace");

    let mut shapes = Vec::new();
    for (hooks, path, failure) in [
        (validating, "/validate", "Fail"),
        (mutating, "/mutate", "Ignore"),
    ] {
        let list = hooks
            .get("/webhooks")
            .as_array()
            .ok_or(format!("{}: expected webhooks", hooks.at("")))?;
        ensure!(!list.is_empty(), "{}: no webhook", hooks.at("/webhooks"));
        for (i, w) in list.iter().enumerate() {
            let at = |f: &str| hooks.at(&format!("/webhooks/{i}{f}"));
            ensure!(
                w["admissionReviewVersions"] == json!(["v1"]),
                "{}: the server speaks admission.k8s.io/v1 only",
                at("/admissionReviewVersions")
            );
            ensure!(
                w["sideEffects"] == "None",
                "{}: expected sideEffects None",
                at("/sideEffects")
            );
            ensure!(
                w["clientConfig"]["service"]["path"] == path,
                "{}: expected {path}",
                at("/clientConfig/service/path")
            );
            ensure!(
                w["failurePolicy"] == failure,
                "{}: expected failurePolicy {failure} (see the comment at the top of the file)",
                at("/failurePolicy")
            );

            // The server answers before the API server gives up: a whole request,
            // queueing and every policy included, is answered within one evaluation
            // budget plus a 100 ms hand-over grace.
            let timeout = w["timeoutSeconds"]
                .as_u64()
                .ok_or(format!("{}: expected timeoutSeconds", at("")))?;
            let budget = config.webhook.limits.evaluation_timeout.as_millis() as u64;
            ensure!(
                (1..=10).contains(&timeout) && timeout * 1000 > budget + 100,
                "{}: timeoutSeconds {timeout} must be at most 10 and above the server's worst case of {budget} ms + 100 ms",
                at("/timeoutSeconds")
            );

            // Never the webhook's own namespace or kube-system.
            let excluded: BTreeSet<&str> = w["namespaceSelector"]["matchExpressions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| e["key"] == "kubernetes.io/metadata.name" && e["operator"] == "NotIn")
                .flat_map(|e| {
                    e["values"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                })
                .collect();
            for ns in ["kube-system", own_ns] {
                ensure!(
                    excluded.contains(ns),
                    "{}: namespaceSelector must exclude `{ns}` by kubernetes.io/metadata.name",
                    at("/namespaceSelector")
                );
                ensure!(
                    config.webhook.exclude_namespaces.iter().any(|n| n == ns),
                    "the ConfigMap's webhook.exclude.namespaces lacks `{ns}`"
                );
            }

            // CREATE and UPDATE of every group the normaliser reads.
            let rules = w["rules"]
                .as_array()
                .ok_or(format!("{}: expected rules", at("/rules")))?;
            for (group, resource) in [
                ("", "pods"),
                ("apps", "deployments"),
                ("apps", "statefulsets"),
                ("batch", "jobs"),
                ("batch", "cronjobs"),
                ("kubeflow.org", "pytorchjobs"),
                ("serving.kserve.io", "inferenceservices"),
                ("kaito.sh", "workspaces"),
                ("containerservice.azure.com", "managedclustersagentpools"),
                ("machinelearningservices.azure.com", "workspacescomputes"),
            ] {
                let covered = |op: &str| {
                    rules.iter().any(|r| {
                        let has = |f: &str, v: &str| {
                            r[f].as_array()
                                .into_iter()
                                .flatten()
                                .any(|x| x.as_str() == Some(v) || x.as_str() == Some("*"))
                        };
                        has("apiGroups", group)
                            && has("resources", resource)
                            && has("operations", op)
                    })
                };
                ensure!(
                    covered("CREATE") && covered("UPDATE"),
                    "{}: no rule sends CREATE and UPDATE of `{resource}` in group `{group}`",
                    at("/rules")
                );
            }
            ensure!(
                !rules.iter().any(|r| r["operations"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|o| o.as_str() == Some("DELETE") || o.as_str() == Some("*"))),
                "{}: DELETE carries no object to check",
                at("/rules")
            );
            if path == "/mutate" {
                ensure!(
                    w["reinvocationPolicy"] == "IfNeeded",
                    "{}: expected IfNeeded",
                    at("/reinvocationPolicy")
                );
            }
            let conditions = w["matchConditions"].as_array().map_or(0, Vec::len);
            ensure!(
                (1..=64).contains(&conditions),
                "{}: expected 1 to 64 matchConditions",
                at("/matchConditions")
            );
            shapes.push((
                w["rules"].clone(),
                w["namespaceSelector"].clone(),
                w["matchConditions"].clone(),
            ));
        }
    }
    ensure!(
        shapes.windows(2).all(|p| p[0] == p[1]),
        "{DIR}/webhooks.yaml: the validating and mutating webhooks must send the same requests (rules, namespaceSelector, matchConditions)"
    );

    // A first install reports instead of denying (docs/deploy.md, "Roll out").
    ensure!(
        config.webhook.dry_run,
        "the shipped computeguard.yaml should start with webhook.dryRun: true"
    );
    Ok(())
}

/// An admission request as the API server presents it to `matchConditions`.
fn request(user: &str, operation: &str, object: Value) -> Value {
    json!({
        "request": {
            "uid": "1", "operation": operation, "namespace": "ml",
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "userInfo": {"username": user, "groups": ["system:authenticated"]},
        },
        "object": object,
    })
}

/// Whether the API server would call the webhook: every condition true.
fn calls(conditions: &[(String, cel_interpreter::Program)], input: &Value) -> Result<bool> {
    let mut all = true;
    for (name, program) in conditions {
        let mut ctx = cel_interpreter::Context::default();
        for var in ["request", "object"] {
            ctx.add_variable(var, input[var].clone())
                .map_err(|e| format!("{var}: {e}"))?;
        }
        match program.execute(&ctx) {
            Ok(cel_interpreter::Value::Bool(b)) => all &= b,
            other => {
                return Err(format!(
                    "matchCondition `{name}` gave {other:?} for {input}"
                ));
            }
        }
    }
    Ok(all)
}

#[test]
fn match_conditions_skip_kubelets_controllers_and_deletions() -> Result {
    let m = Manifests::load()?;
    let validating = m.one("ValidatingWebhookConfiguration")?;
    let mut conditions = Vec::new();
    for (i, c) in validating
        .get("/webhooks/0/matchConditions")
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = c["name"].as_str().unwrap_or_default().to_string();
        let expr = c["expression"].as_str().unwrap_or_default();
        let program = cel_interpreter::Program::compile(expr).map_err(|e| {
            format!(
                "{}: `{name}` is not valid CEL: {e}",
                validating.at(&format!("/webhooks/0/matchConditions/{i}/expression"))
            )
        })?;
        conditions.push((name, program));
    }

    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "train", "namespace": "ml"}});
    let terminating = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "train", "deletionTimestamp": "2026-11-22T20:00:00Z", "finalizers": []}});
    for (user, op, object, expected, why) in [
        (
            "alice@contoso.com",
            "CREATE",
            &pod,
            true,
            "a user's pod is checked",
        ),
        (
            "alice@contoso.com",
            "UPDATE",
            &pod,
            true,
            "a user's update is checked",
        ),
        (
            "system:serviceaccount:ml:trainer",
            "CREATE",
            &pod,
            true,
            "a workload's own service account is checked",
        ),
        (
            "system:serviceaccount:kubeflow:training-operator",
            "CREATE",
            &pod,
            true,
            "operators outside kube-system are checked",
        ),
        (
            "system:node:aks-nodepool1-12345678-vmss000000",
            "CREATE",
            &pod,
            false,
            "mirror pods are not",
        ),
        (
            "system:serviceaccount:kube-system:replicaset-controller",
            "CREATE",
            &pod,
            false,
            "pods of a checked Deployment are not",
        ),
        (
            "system:kube-controller-manager",
            "CREATE",
            &pod,
            false,
            "the controller manager's own identity is not",
        ),
        (
            "alice@contoso.com",
            "UPDATE",
            &terminating,
            false,
            "removing finalizers of an object being deleted is never blocked",
        ),
        (
            "alice@contoso.com",
            "CREATE",
            &terminating,
            true,
            "deletionTimestamp only matters on UPDATE",
        ),
    ] {
        let got = calls(&conditions, &request(user, op, object.clone()))?;
        ensure!(
            got == expected,
            "{} {op} by {user}: webhook called = {got}, expected {expected}: {why}",
            validating.at("/webhooks/0/matchConditions")
        );
    }
    Ok(())
}

#[test]
fn configmap_config_loads_with_the_real_loader() -> Result {
    let m = Manifests::load()?;
    let args = serve_args(m.one("Deployment")?)?;
    let config = shipped_config(&m, &args.config)?;
    let w = &config.webhook;
    assert_eq!(
        w.failure_mode("computeguard-builtin"),
        computeguard_server::FailureMode::Fail
    );
    assert!(
        w.exclude_labels.is_empty(),
        "a label opt-out is a self-service bypass; off by default"
    );
    assert_eq!(
        w.mutations,
        computeguard_server::config::Mutations::default(),
        "mutations are opt-in"
    );
    assert_eq!(w.limits.max_request_bytes, 3 << 20);

    // The loader really reads this text: a broken variant is refused with its line.
    let cm = m.one("ConfigMap")?;
    let key = args
        .config
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let text = cm
        .str(&format!("/data/{key}"))
        .replace("failurePolicy: Fail", "failurePolicy: Deny");
    let err = Config::parse(Path::new("cm.yaml"), &text)
        .err()
        .ok_or("a bad failurePolicy was accepted")?;
    let line = text
        .lines()
        .position(|l| l.contains("failurePolicy: Deny"))
        .map_or(0, |i| i + 1);
    let msg = format!("{err:#}");
    ensure!(
        msg.contains(&format!("cm.yaml:{line}:")) && msg.contains("Fail or Ignore"),
        "unexpected error: {msg}"
    );
    Ok(())
}

#[test]
fn deploy_doc_covers_every_webhook_key_and_the_manifests() -> Result {
    let doc = read("docs/deploy.md")?;
    for key in computeguard_server::WebhookConfig::KEYS {
        ensure!(
            doc.contains(&format!("`{key}`")),
            "docs/deploy.md does not document `webhook.{key}`"
        );
    }
    for word in [
        "kubectl apply -k deploy/kubernetes",
        "cert-manager",
        "dryRun: true",
        "failurePolicy",
        "/metrics",
    ] {
        ensure!(
            doc.contains(word),
            "docs/deploy.md does not mention `{word}`"
        );
    }
    Ok(())
}

/// docs/deploy.md shows the webhook's answers for the two example pods; the CLI runs the
/// same policies, so each finding's message must stand in the doc word for word.
#[test]
fn deploy_doc_shows_the_real_findings_of_its_example_pods() -> Result {
    let doc = read("docs/deploy.md")?;
    let (_, report) = crate::check_json(&["docs/examples/deploy"]);
    let mut rules = Vec::new();
    for f in report["findings"].as_array().into_iter().flatten() {
        let (rule, message) = (
            f["rule"].as_str().unwrap_or_default(),
            f["message"].as_str().unwrap_or_default(),
        );
        ensure!(
            doc.contains(&format!("[{rule}] {message}")),
            "docs/deploy.md does not show `[{rule}] {message}` ({}:{})",
            f["file"],
            f["line"]
        );
        rules.push(rule.to_string());
    }
    rules.sort();
    assert_eq!(
        rules,
        ["cuda-arch-compat", "gpu-workload-scheduling", "sku-retired"],
        "{report:#}"
    );
    Ok(())
}

/// The NetworkPolicy selects the webhook pods, names only their two ports, and admits
/// each from a list of sources: no rule without `from` (which would admit everyone),
/// the webhook port from the API server's konnectivity agents, the probe port from the
/// nodes and the monitoring namespace.
#[test]
fn network_policy_admits_each_port_only_from_named_sources() -> Result {
    let m = Manifests::load()?;
    let d = m.one("Deployment")?;
    let c = container(d)?;
    let np = m.one("NetworkPolicy")?;
    ensure!(
        np.str("/metadata/namespace") == NAMESPACE,
        "{}: expected namespace {NAMESPACE}",
        np.at("/metadata/namespace")
    );
    let labels = pod_labels(d)?;
    for (k, v) in np
        .get("/spec/podSelector/matchLabels")
        .as_object()
        .into_iter()
        .flatten()
    {
        ensure!(
            labels.get(k) == Some(v),
            "{}: `{k}: {v}` does not select the webhook pods",
            np.at("/spec/podSelector")
        );
    }
    ensure!(
        np.get("/spec/policyTypes") == &json!(["Ingress"]),
        "{}: expected policyTypes [Ingress]",
        np.at("/spec/policyTypes")
    );
    let args = serve_args(d)?;
    let mut sources = std::collections::BTreeMap::new();
    for (i, rule) in np
        .get("/spec/ingress")
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = np.at(&format!("/spec/ingress/{i}"));
        let from = rule["from"]
            .as_array()
            .filter(|f| !f.is_empty())
            .ok_or(format!("{at}: a rule without `from` admits every source"))?;
        for port in rule["ports"].as_array().into_iter().flatten() {
            let n = resolve_port(c, &port["port"]).ok_or(format!(
                "{at}: port {} is not a container port",
                port["port"]
            ))?;
            sources.insert(n, from.clone());
        }
    }
    let webhook = sources.get(&u64::from(args.port)).ok_or(format!(
        "{}: no rule for the webhook port",
        np.at("/spec/ingress")
    ))?;
    ensure!(
        webhook.iter().any(
            |f| f["podSelector"]["matchLabels"]["app"] == "konnectivity-agent"
                && f["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
                    == "kube-system"
        ),
        "{}: the webhook port must admit AKS's konnectivity agents (kube-system)",
        np.at("/spec/ingress")
    );
    let probes = sources
        .get(&u64::from(args.probe_port.unwrap_or_default()))
        .ok_or(format!(
            "{}: no rule for the probe port",
            np.at("/spec/ingress")
        ))?;
    ensure!(
        probes.iter().any(|f| f["ipBlock"]["cidr"].is_string())
            && probes.iter().any(
                |f| f["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
                    == "monitoring"
            ),
        "{}: the probe port must admit the nodes (ipBlock) and the monitoring namespace",
        np.at("/spec/ingress")
    );
    ensure!(
        sources.len() == 2,
        "{}: expected rules for exactly the two ports, found {:?}",
        np.at("/spec/ingress"),
        sources.keys()
    );
    Ok(())
}
