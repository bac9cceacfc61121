//! Issue 14: GPUs declared in the shapes real users write are found, on the line that causes
//! the finding: `kind: List` items, every replica type of a training job, KServe framework
//! predictors and their transformer / explainer / workerSpec, Knative Services, LeaderWorkerSet /
//! Ray groups, and Azure ML pipeline steps (sweep among them). Each fixture is a
//! real public file (tests/fixtures/SOURCES.tsv); an edit, where one was needed to declare a
//! GPU, is described at the top of the fixture.

use crate::*;

/// (rule, file, line, display) of every finding.
fn named(report: &serde_json::Value) -> Vec<(String, String, u64, String)> {
    findings(report)
        .into_iter()
        .zip(report["findings"].as_array().expect("findings"))
        .map(|((rule, file, line), f)| {
            let message = f["message"].as_str().unwrap_or_default();
            // Messages start with the resource's display name.
            let display = [" requests ", " uses ", " needs "]
                .iter()
                .filter_map(|verb| message.find(verb))
                .min()
                .map_or(message, |end| &message[..end])
                .to_string();
            (rule, file, line, display)
        })
        .collect()
}

fn quads(list: &[(&str, &str, u64, &str)]) -> Vec<(String, String, u64, String)> {
    list.iter()
        .map(|(r, f, l, d)| (r.to_string(), f.to_string(), *l, d.to_string()))
        .collect()
}

#[test]
fn kubernetes_workload_shapes_are_read_to_the_causing_line() {
    let (code, report) = check_json(&["tests/fixtures/workloads"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        named(&report),
        quads(&[
            // Argo Workflow: each template with a container is a resource.
            (
                "gpu-workload-scheduling",
                "workloads/argo-hello-world-gpu.yaml",
                16,
                "Workflow hello-world- (whalesay)"
            ),
            // JobSet: each replicated job's pod template.
            (
                "gpu-workload-scheduling",
                "workloads/jobset-pytorch-resnet-gpu.yaml",
                25,
                "JobSet pytorch (workers)"
            ),
            // Knative Service: the serving container of two (the sidecar asks for no GPU).
            (
                "gpu-workload-scheduling",
                "workloads/knative-multi-container-gpu.yaml",
                32,
                "Service default/multi-container"
            ),
            // KServe explainer component: explainer.containers[].resources.
            (
                "gpu-workload-scheduling",
                "workloads/kserve-aix-explainer-gpu.yaml",
                40,
                "InferenceService default/aix-explainer (explainer)"
            ),
            // KServe multi-node predictor: predictor.workerSpec.containers[].resources.
            (
                "gpu-workload-scheduling",
                "workloads/kserve-huggingface-llama3-multinode-workerspec-gpu.yaml",
                25,
                "InferenceService huggingface-llama3 (predictor worker)"
            ),
            // KServe predictor in framework form: predictor.pytorch.resources.
            (
                "gpu-workload-scheduling",
                "workloads/kserve-torchserve-gpu-pytorch-predictor.yaml",
                12,
                "InferenceService torchserve-gpu (predictor)"
            ),
            // KServe transformer component: transformer.containers[].resources.
            (
                "gpu-workload-scheduling",
                "workloads/kserve-torchserve-image-transformer-gpu.yaml",
                19,
                "InferenceService torchserve-transformer (transformer)"
            ),
            // `kind: List`: the Deployment is item 1; the finding is inside the list.
            (
                "gpu-workload-scheduling",
                "workloads/kubectl-list-deployment-gpu.yaml",
                38,
                "Deployment list-deployment-test"
            ),
            // LeaderWorkerSet: leader and worker templates are both resources.
            (
                "gpu-workload-scheduling",
                "workloads/lws-vllm-gpu-leader-worker.yaml",
                34,
                "LeaderWorkerSet vllm (leader)"
            ),
            (
                "gpu-workload-scheduling",
                "workloads/lws-vllm-gpu-leader-worker.yaml",
                66,
                "LeaderWorkerSet vllm (worker)"
            ),
            // MPIJob: the Worker replica type (the Launcher asks for no GPU).
            (
                "gpu-workload-scheduling",
                "workloads/mpijob-tensorflow-benchmarks-gpu-workers.yaml",
                52,
                "MPIJob tensorflow-benchmarks (Worker)"
            ),
            // A kind with no table entry: the generic walk finds its pod template.
            (
                "gpu-workload-scheduling",
                "workloads/notebook-v1-gpu-unknown-kind.yaml",
                16,
                "Notebook notebook-sample-v1"
            ),
            // PyTorchJob: Master and Worker replicas are both resources.
            (
                "gpu-workload-scheduling",
                "workloads/pytorchjob-mnist-nccl-master-worker.yaml",
                21,
                "PyTorchJob pytorch-dist-mnist-nccl (Master)"
            ),
            (
                "gpu-workload-scheduling",
                "workloads/pytorchjob-mnist-nccl-master-worker.yaml",
                36,
                "PyTorchJob pytorch-dist-mnist-nccl (Worker)"
            ),
            // RayJob: the GPU worker group (it tolerates the GPU taint) selects a retired size.
            (
                "sku-retired",
                "workloads/rayjob-pytorch-image-classifier-gpu-workers-nc6s-v3.yaml",
                83,
                "RayJob pytorch-image-classifier- (gpu-group)"
            ),
            // Volcano Job: the worker task (limits win over requests).
            (
                "gpu-workload-scheduling",
                "workloads/volcano-tf-benchmark-gpu-workers.yaml",
                83,
                "Job tensorflow-benchmark-gpu (worker)"
            ),
        ])
    );
    let list = &report["findings"][7];
    assert_eq!(
        list["path"],
        "/items/1/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu"
    );
}

#[test]
fn azure_ml_pipeline_steps_are_read_to_the_causing_line() {
    let (code, report) = check_json(&["tests/fixtures/azureml-pipeline"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        named(&report),
        quads(&[
            // A sweep step (`type: sweep` with a `trial`): its own instance_type.
            (
                "sku-retired",
                "azureml-pipeline/hyperparameter-sweep-step-nc6.yml",
                38,
                "Azure ML sweep job pipeline_with_hyperparameter_sweep/sweep_step"
            ),
            // A parallel step: its own instance_type, and the image of its task's environment.
            (
                "sku-retired",
                "azureml-pipeline/iris-parallel-step-cuda12-on-nc6.yml",
                47,
                "Azure ML parallel job simplePipelineJobWithInlineParallelTabularJobe2e/batch_prediction"
            ),
            (
                "cuda-arch-compat",
                "azureml-pipeline/iris-parallel-step-cuda12-on-nc6.yml",
                59,
                "Azure ML parallel job simplePipelineJobWithInlineParallelTabularJobe2e/batch_prediction"
            ),
            // A command step with its own compute and instance_type; the pipeline is named by
            // its experiment_name.
            (
                "sku-retired",
                "azureml-pipeline/tensorflow-unet-pets-train-step-nc6s-v3.yml",
                45,
                "Azure ML command job tensorflow_unet_pets/train"
            ),
        ])
    );
    assert_eq!(
        report["findings"][0]["path"],
        "/jobs/sweep_step/resources/instance_type"
    );
    assert_eq!(
        report["findings"][2]["path"],
        "/jobs/batch_prediction/task/environment/image"
    );
    assert_eq!(
        report["findings"][3]["path"],
        "/jobs/train/resources/instance_type"
    );
}

/// Knative Service and the KServe components other than the predictor's containers, each file
/// checked alone: the finding points at the GPU request of the component that makes it.
#[test]
fn knative_and_kserve_components_point_at_their_gpu_request() {
    for (file, line, display, path) in [
        (
            "workloads/knative-multi-container-gpu.yaml",
            32,
            "Service default/multi-container",
            "/spec/template/spec/containers/0/resources/limits/nvidia.com~1gpu",
        ),
        (
            "workloads/kserve-torchserve-image-transformer-gpu.yaml",
            19,
            "InferenceService torchserve-transformer (transformer)",
            "/spec/transformer/containers/0/resources/limits/nvidia.com~1gpu",
        ),
        (
            "workloads/kserve-aix-explainer-gpu.yaml",
            40,
            "InferenceService default/aix-explainer (explainer)",
            "/spec/explainer/containers/0/resources/limits/nvidia.com~1gpu",
        ),
        (
            "workloads/kserve-huggingface-llama3-multinode-workerspec-gpu.yaml",
            25,
            "InferenceService huggingface-llama3 (predictor worker)",
            "/spec/predictor/workerSpec/containers/0/resources/requests/nvidia.com~1gpu",
        ),
    ] {
        let (code, report) = check_json(&[&format!("tests/fixtures/{file}")]);
        // The finding is a warning: on its own it does not fail the check.
        assert_eq!(code, 0, "{file}: {report:#}");
        assert_eq!(
            named(&report),
            quads(&[("gpu-workload-scheduling", file, line, display)]),
            "{file}"
        );
        assert_eq!(report["findings"][0]["path"], path, "{file}");
    }
}

/// An Azure ML sweep step in a pipeline, checked alone: the step is its own resource, on the
/// line of its `resources.instance_type`, whatever its `trial` refers to.
#[test]
fn azure_ml_sweep_step_points_at_its_instance_type() {
    let (code, report) =
        check_json(&["tests/fixtures/azureml-pipeline/hyperparameter-sweep-step-nc6.yml"]);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(
        named(&report),
        quads(&[(
            "sku-retired",
            "azureml-pipeline/hyperparameter-sweep-step-nc6.yml",
            38,
            "Azure ML sweep job pipeline_with_hyperparameter_sweep/sweep_step"
        )])
    );
    assert_eq!(
        report["findings"][0]["path"],
        "/jobs/sweep_step/resources/instance_type"
    );
}
