#!/usr/bin/env python3
"""Builds what `kubectl get pods,deployments,jobs -A -o yaml` prints for a cluster that
runs real public manifests: the Pods, Deployments and Jobs of the files below (sources in
tests/fixtures/SOURCES.tsv and ../shared/corpus/SOURCES.tsv), each placed in a namespace,
with the fields the API server sets (uid, resourceVersion, creationTimestamp, generation,
status), and the Pods a Deployment's ReplicaSet and a Job create (ownerReferences,
nodeName, phase).

    scripts/make-kubectl-dump.py > tests/fixtures/audit/kubectl-get-pods-deployments-jobs-A.yaml
    scripts/make-kubectl-dump.py --objects 5000 > /tmp/dump-5000.yaml   # the benchmark's dump

Deterministic: the same arguments print the same bytes.
"""
import argparse
import copy
import hashlib
import os
import sys
import uuid

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "..", "shared", "corpus")

# (file, namespace): the manifests the cluster runs.
MANIFESTS = [
    ("tests/fixtures/kubernetes/clean-web.yaml", "web"),
    ("tests/fixtures/kubernetes/triton-on-infiniband.yaml", "serving"),
    ("tests/fixtures/kubernetes/kyverno-check-nvidia-gpu-pods-bad.yaml", "research"),
    ("corpus:k8s-pods/private-aks-gpu-pod-nvidia-smi-cuda12.3.2.yml", "gpu-smoke"),
    ("corpus:k8s-pods/aks-engine-e2e-cuda-vector-add-cuda11.1.yaml", "gpu-smoke"),
    ("corpus:k8s-pods/aks-gpu-terraform-gpu-test-job-cuda12.2.yaml", "gpu-smoke"),
    ("corpus:k8s-pods/nvidia-device-plugin-e2e-job-cuda11.7.1-nbody.yaml", "gpu-smoke"),
    ("corpus:k8s-pods/aks-rdma-shared-hca-test-pods.yaml", "hpc"),
    ("corpus:k8s-pods/aks-rdma-sriov-test-deployment.yaml", "hpc"),
    ("corpus:k8s-pods/stableazure-sdwebui-inference-deployment.yaml", "sdwebui"),
    ("corpus:k8s-pods/kyverno-check-nvidia-gpu-podcontrollers-cuda12.2.yaml", "research"),
    # The objects of real AdmissionReviews (request.object): CPU workloads.
    ("review:tests/fixtures/admission-review/kubewarden-container-resources-deployment-with-limits-request.json", "shop"),
    ("review:tests/fixtures/admission-review/kubewarden-container-resources-pod-exceeding-range-request.json", "shop"),
    ("review:tests/fixtures/admission-review/kubewarden-kwctl-unprivileged-pod-admissionreview-v1.json", "default"),
    ("review:tests/fixtures/admission-review/kubewarden-pod-runtime-class-runc-request.json", "default"),
    ("review:tests/fixtures/admission-review/kubewarden-trusted-repos-job-creation-request.json", "batch"),
    ("review:tests/fixtures/admission-review/kubewarden-policy-server-deployment-admissionreview-v1.json", "kubewarden"),
    # A GPU Pod on a retired K80 size with a CUDA 12 image (the contract test's review).
    ("review:examples/embed-cases/contract/admission-review-gpu-pod.json", "ml"),
]
KINDS = {"Pod", "Deployment", "Job"}
NODES = ["aks-system-12345678-vmss000000", "aks-system-12345678-vmss000001",
         "aks-gpunp-87654321-vmss000000", "aks-gpunp-87654321-vmss000001"]
CREATED = "2026-11-20T09:14:07Z"


def load(spec):
    if spec.startswith("review:"):
        import json
        with open(os.path.join(ROOT, spec[7:]), encoding="utf-8") as f:
            review = json.load(f)
        obj = (review.get("request") or review).get("object")
        return [obj] if isinstance(obj, dict) and obj.get("kind") in KINDS else []
    path = os.path.join(CORPUS, spec[7:]) if spec.startswith("corpus:") else os.path.join(ROOT, spec)
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if isinstance(d, dict) and d.get("kind") in KINDS]


def uid(*parts):
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(parts)))


def suffix(*parts, n=5):
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:n]


class Cluster:
    def __init__(self):
        self.version = 1000
        self.items = []

    def server_fields(self, obj, namespace):
        meta = obj.setdefault("metadata", {})
        meta["namespace"] = namespace
        meta["uid"] = uid(obj["kind"], namespace, meta["name"])
        self.version += 7
        meta["resourceVersion"] = str(self.version)
        meta["creationTimestamp"] = CREATED
        if obj["kind"] != "Pod":
            meta["generation"] = 1

    def pod_of(self, template, owner, name, namespace, phase):
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": copy.deepcopy(template.get("metadata") or {}),
               "spec": copy.deepcopy(template.get("spec") or {})}
        pod["metadata"]["name"] = name
        self.server_fields(pod, namespace)
        pod["metadata"]["ownerReferences"] = [{
            "apiVersion": owner[0], "kind": owner[1], "name": owner[2], "uid": owner[3],
            "controller": True, "blockOwnerDeletion": True}]
        pod["spec"]["nodeName"] = NODES[int(suffix(name), 16) % len(NODES)]
        pod["spec"].setdefault("restartPolicy", "Always")
        pod["status"] = {"phase": phase, "hostIP": "10.224.0.4", "podIP": "10.244.1.17",
                         "startTime": CREATED, "qosClass": "Burstable"}
        return pod

    def add(self, obj, namespace, copy_no):
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta.pop("namespace", None)
        if copy_no:
            meta["name"] = f"{meta.get('name', 'unnamed')}-{copy_no}"
        self.server_fields(obj, namespace)
        kind, name = obj["kind"], meta["name"]
        self.items.append(obj)
        template = (obj.get("spec") or {}).get("template") or {}
        if kind == "Deployment":
            replicas = (obj.get("spec") or {}).get("replicas", 1)
            obj["status"] = {"observedGeneration": 1, "replicas": replicas,
                             "updatedReplicas": replicas, "readyReplicas": replicas,
                             "availableReplicas": replicas}
            rs = f"{name}-{suffix(namespace, name, n=10)}"
            owner = ("apps/v1", "ReplicaSet", rs, uid("ReplicaSet", namespace, rs))
            for i in range(replicas):
                self.items.append(self.pod_of(template, owner, f"{rs}-{suffix(rs, str(i))}",
                                              namespace, "Running"))
        elif kind == "Job":
            obj["status"] = {"startTime": CREATED, "completionTime": CREATED, "succeeded": 1}
            owner = ("batch/v1", "Job", name, meta["uid"])
            self.items.append(self.pod_of(template, owner, f"{name}-{suffix(name)}", namespace,
                                          "Succeeded"))
        elif kind == "Pod":
            obj["status"] = {"phase": "Running", "startTime": CREATED, "qosClass": "BestEffort"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=0,
                        help="repeat the manifests (names get a numeric suffix) until the dump holds at least this many objects")
    args = parser.parse_args()
    sources = [(load(spec), ns) for spec, ns in MANIFESTS]
    cluster = Cluster()
    copy_no = 0
    while True:
        for docs, ns in sources:
            for d in docs:
                cluster.add(d, ns, copy_no)
        copy_no += 1
        if len(cluster.items) >= args.objects:
            break
    dump = {"apiVersion": "v1", "items": cluster.items, "kind": "List",
            "metadata": {"resourceVersion": ""}}
    yaml.safe_dump(dump, sys.stdout, sort_keys=True, default_flow_style=False, width=1000)


if __name__ == "__main__":
    main()
