//! CUDA inference from image references and environment variables: every example of the
//! brief and of cuda.yaml `image_tag_patterns`, negative cases and never-panic properties.

use computeguard_policy_core::cuda::{cuda_of_env, cuda_of_image, ngc_release_cuda};
use proptest::prelude::*;

fn check(cases: &[(&str, Option<&str>)]) {
    for &(image, want) in cases {
        assert_eq!(
            cuda_of_image(image).as_deref(),
            want,
            "cuda_of_image({image:?})"
        );
    }
}

#[test]
fn nvidia_cuda_images() {
    // cuda.yaml image_tag_patterns[nvidia/cuda].examples, plus registry/digest variants.
    check(&[
        ("nvidia/cuda:12.4.1-runtime-ubuntu22.04", Some("12.4.1")),
        (
            "nvidia/cuda:11.8.0-cudnn8-devel-ubuntu22.04",
            Some("11.8.0"),
        ),
        ("nvidia/cuda:12.9.1-cudnn-devel-ubuntu24.04", Some("12.9.1")),
        ("nvidia/cuda:13.0.0-cudnn-devel-ubuntu22.04", Some("13.0.0")),
        (
            "nvcr.io/nvidia/cuda:11.8.0-cudnn8-devel-ubuntu22.04",
            Some("11.8.0"),
        ),
        (
            "docker.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
            Some("12.4.1"),
        ),
        (
            "index.docker.io/nvidia/cuda:12.2.2-devel-ubi8",
            Some("12.2.2"),
        ),
        (
            "myacr.azurecr.io/nvidia/cuda:12.1.0-runtime-rockylinux8",
            Some("12.1.0"),
        ),
        ("nvidia/cuda:12.4-runtime-ubuntu22.04", Some("12.4")),
        (
            "nvidia/cuda:12.4.1-runtime-ubuntu22.04@sha256:0123456789abcdef0123456789abcdef",
            Some("12.4.1"),
        ),
        ("  NVIDIA/CUDA:12.4.1-runtime-ubuntu22.04  ", Some("12.4.1")),
        ("nvidia/cuda", None),
        ("nvidia/cuda:latest", None),
        ("nvidia/cuda:12-runtime-ubuntu22.04", None),
        ("nvidia/cuda@sha256:0123456789abcdef", None),
    ]);
}

#[test]
fn pytorch_images() {
    // cuda.yaml image_tag_patterns[pytorch/pytorch].examples and notes.
    check(&[
        (
            "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
            Some("12.1"),
        ),
        (
            "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
            Some("12.4"),
        ),
        ("pytorch/pytorch:2.7.0-cuda12.8-cudnn9-devel", Some("12.8")),
        (
            "pytorch/pytorch:2.9.0-cuda12.8-cudnn9-runtime",
            Some("12.8"),
        ),
        (
            "pytorch/pytorch:1.13.1-cuda11.6-cudnn8-runtime",
            Some("11.6"),
        ),
        (
            "docker.io/pytorch/pytorch:2.2.0-cuda12.1-cudnn8-runtime",
            Some("12.1"),
        ),
        ("pytorch/pytorch:latest", None),
        ("pytorch/pytorch", None),
    ]);
}

#[test]
fn azureml_images_and_environments() {
    // cuda.yaml image_tag_patterns[mcr.microsoft.com/azureml] and [.../curated] examples.
    check(&[
        (
            "mcr.microsoft.com/azureml/openmpi4.1.0-cuda11.8-cudnn8-ubuntu22.04",
            Some("11.8"),
        ),
        (
            "mcr.microsoft.com/azureml/openmpi4.1.0-cuda11.8-cudnn8-ubuntu22.04:latest",
            Some("11.8"),
        ),
        (
            "mcr.microsoft.com/azureml/openmpi4.1.0-cuda11.8-cudnn8-ubuntu22.04:20240709.v1",
            Some("11.8"),
        ),
        (
            "mcr.microsoft.com/azureml/openmpi4.1.0-cuda11.1-cudnn8-ubuntu18.04",
            Some("11.1"),
        ),
        (
            "mcr.microsoft.com/azureml/openmpi5.0-cuda12.4-ubuntu22.04",
            Some("12.4"),
        ),
        (
            "mcr.microsoft.com/azureml/openmpi5.0-cuda12.6-ubuntu24.04",
            Some("12.6"),
        ),
        (
            "mcr.microsoft.com/azureml/curated/acpt-pytorch-2.8-cuda12.6",
            Some("12.6"),
        ),
        (
            "mcr.microsoft.com/azureml/curated/acpt-pytorch-2.8-cuda12.6:3",
            Some("12.6"),
        ),
        (
            "azureml:AzureML-acpt-pytorch-2.8-cuda12.6@latest",
            Some("12.6"),
        ),
        ("azureml:AzureML-acpt-pytorch-2.8-cuda12.6:3", Some("12.6")),
        (
            "azureml://registries/azureml/environments/acpt-pytorch-2.8-cuda12.6/versions/3",
            Some("12.6"),
        ),
        (
            "mcr.microsoft.com/azureml/curated/acpt-pytorch-1.11-py38-cuda11.3-gpu",
            Some("11.3"),
        ),
        ("AzureML-ACPT-pytorch-1.12-py39-cuda11.6-gpu", Some("11.6")),
        (
            "mcr.microsoft.com/azureml/curated/tensorflow-2.12-cuda11",
            Some("11"),
        ),
        ("azureml:AzureML-tensorflow-2.16-cuda12@latest", Some("12")),
        ("mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04", None),
        (
            "mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04:20240709.v1",
            None,
        ),
    ]);
}

#[test]
fn generic_cuda_tokens() {
    check(&[
        ("myorg/trainer:2.1.0-cu121", Some("12.1")),
        ("myorg/trainer:2.0.1-cu118", Some("11.8")),
        ("ghcr.io/org/vllm:torch2.4-cu124-py3.11", Some("12.4")),
        ("myorg/x:cu126", Some("12.6")),
        ("myorg/x:2.7.0_cu128", Some("12.8")),
        ("myorg/x:2.9.0+cu130", Some("13.0")),
        ("myorg/x:cu102", Some("10.2")),
        ("myorg/base_cuda11.8:1.0", Some("11.8")),
        ("myorg/train:v3-cuda12.4.1-ubuntu22.04", Some("12.4.1")),
        ("myorg/train:cuda-12.2", Some("12.2")),
        ("myorg/cuda12.1-base:cuda12.4-py3", Some("12.4")), // the tag wins
        ("myorg/x:cuda12.1.", Some("12.1")),
        ("myorg/x:cu1241", None),
        ("myorg/x:cu12", None),
        ("myorg/x:cu021", None),
        ("myorg/x:abcu121", None),
        ("myorg/x:cu121abc", None),
        ("myorg/x:cuda118", None),
        ("myorg/x:cuda12x", None),
        ("myorg/xcuda12.1:1", None),
        ("cucumber:1.0", None),
        ("myorg/cuda-toolkit:latest", None),
        ("myorg/cuda:latest", None),
        ("myorg/cudnn8:9", None),
    ]);
}

#[test]
fn tensorflow_images() {
    // cuda.yaml tensorflow.releases (tested build configurations).
    check(&[
        ("tensorflow/tensorflow:2.15.0-gpu", Some("12.2")),
        (
            "docker.io/tensorflow/tensorflow:2.15.0-gpu-jupyter",
            Some("12.2"),
        ),
        ("tensorflow/tensorflow:2.15.0rc1-gpu", Some("12.2")),
        ("tensorflow/tensorflow:2.4.0-gpu", Some("11.0")),
        ("tensorflow/tensorflow:2.5.0-gpu", Some("11.2")),
        ("tensorflow/tensorflow:2.11.1-gpu", Some("11.2")),
        ("tensorflow/tensorflow:2.12.0-gpu", Some("11.8")),
        ("tensorflow/tensorflow:2.14.0-gpu", Some("11.8")),
        ("tensorflow/tensorflow:2.16.1-gpu", Some("12.3")),
        ("tensorflow/tensorflow:2.17.0-gpu", Some("12.3")),
        ("tensorflow/tensorflow:2.18.0-gpu", Some("12.5")),
        ("tensorflow/tensorflow:2.21.0-gpu", Some("12.5")),
        ("tensorflow/tensorflow:2.15.0", None),
        ("tensorflow/tensorflow:2.15.0-jupyter", None),
        ("tensorflow/tensorflow:latest-gpu", None),
        ("tensorflow/tensorflow:latest", None),
        ("tensorflow/tensorflow", None),
        ("tensorflow/tensorflow:1.15.5-gpu", None),
        ("tensorflow/tensorflow:2.3.0-gpu", None),
        ("tensorflow/tensorflow:2.22.0-gpu", None),
    ]);
}

#[test]
fn ngc_images() {
    // cuda.yaml image_tag_patterns[nvcr.io/nvidia/pytorch].known_mappings.
    check(&[
        ("nvcr.io/nvidia/pytorch:19.05-py3", Some("10.1")),
        ("nvcr.io/nvidia/pytorch:21.04-py3", Some("11.3.0")),
        ("nvcr.io/nvidia/pytorch:21.05-py3", Some("11.3.0")),
        ("nvcr.io/nvidia/pytorch:22.05-py3", Some("11.7.0")),
        ("nvcr.io/nvidia/pytorch:22.11-py3", Some("11.8.0")),
        ("nvcr.io/nvidia/pytorch:24.05-py3", Some("12.4.1")),
        ("nvcr.io/nvidia/pytorch:24.06-py3", Some("12.4.1")),
        ("nvcr.io/nvidia/pytorch:24.05-py3-igpu", Some("12.4.1")),
        ("nvcr.io/nvidia/tensorflow:22.11-tf2-py3", Some("11.8.0")),
        ("nvcr.io/nvidia/tritonserver:24.05-py3", Some("12.4.1")),
        ("nvcr.io/nvidia/pytorch:24.07-py3", None),
        ("nvcr.io/nvidia/pytorch:latest", None),
        ("nvcr.io/nvidia/pytorch", None),
        ("nvidia/pytorch:24.05-py3", None), // not NGC: Docker Hub
    ]);
    assert_eq!(ngc_release_cuda("24.05"), Some("12.4.1"));
    assert_eq!(ngc_release_cuda(" 22.11 "), Some("11.8.0"));
    assert_eq!(ngc_release_cuda("19.05"), Some("10.1"));
    for unknown in ["24.07", "23.10", "24.5", "24.05-py3", "", "latest"] {
        assert_eq!(ngc_release_cuda(unknown), None, "{unknown:?}");
    }
}

#[test]
fn images_without_cuda() {
    check(&[
        ("busybox", None),
        ("ubuntu:22.04", None),
        ("docker.io/library/ubuntu:22.04", None),
        ("nginx:1.25", None),
        ("myrepo/app:v12.4", None),
        ("myrepo/app:12.4.1", None),
        ("localhost:5000/app:12.4.1", None),
        ("mcr.microsoft.com/azureml/curated/sklearn-1.5:3", None),
        ("", None),
        ("   ", None),
        (":", None),
        ("@", None),
        ("cu", None),
        ("cuda", None),
    ]);
}

#[test]
fn env_variables() {
    for (name, value, want) in [
        ("CUDA_VERSION", "12.4.1", Some("12.4.1")),
        ("CUDA_VERSION", " \"11.8.0\" ", Some("11.8.0")),
        ("CUDA_VERSION", "12.4", Some("12.4")),
        (
            "NVIDIA_REQUIRE_CUDA",
            "cuda>=12.2 brand=tesla,driver>=470,driver<471",
            Some("12.2"),
        ),
        (
            "NVIDIA_REQUIRE_CUDA",
            "\"cuda>=12.2 brand=tesla,driver>=470,driver<471\"",
            Some("12.2"),
        ),
        (
            "NVIDIA_REQUIRE_CUDA",
            "cuda>=12.4 brand=tesla,driver>=470,driver<471 brand=unknown,driver>=470,driver<471",
            Some("12.4"),
        ),
        ("NVIDIA_REQUIRE_CUDA", "cuda>=11.8", Some("11.8")),
        ("NVIDIA_REQUIRE_CUDA", "brand=tesla,driver>=470", None),
        ("NVIDIA_REQUIRE_CUDA", "", None),
        ("CUDA_VERSION", "", None),
        ("CUDA_VERSION", "latest", None),
        ("cuda_version", "12.4.1", None),
        ("NV_CUDA_LIB_VERSION", "12.4.1-1", None),
        ("PATH", "/usr/local/cuda/bin", None),
    ] {
        assert_eq!(
            cuda_of_env(name, value).as_deref(),
            want,
            "cuda_of_env({name:?}, {value:?})"
        );
    }
}

proptest! {
    #[test]
    fn never_panics(s in any::<String>()) {
        let _ = cuda_of_image(&s);
        let _ = cuda_of_env("CUDA_VERSION", &s);
        let _ = cuda_of_env("NVIDIA_REQUIRE_CUDA", &s);
        let _ = ngc_release_cuda(&s);
    }

    #[test]
    fn never_panics_on_image_like_text(s in "[a-zA-Z0-9./:@_+ -]{0,12}(cu|cuda)?[0-9.é_-]{0,8}[a-z:/@-]{0,8}") {
        if let Some(v) = cuda_of_image(&s) {
            prop_assert!(computeguard_policy_core::version::Version::parse(&v).is_some(), "{v:?}");
        }
    }

    #[test]
    fn nvidia_cuda_tag_gives_full_version(x in any::<u64>(), y in any::<u64>(), z in any::<u64>()) {
        let image = format!("nvidia/cuda:{x}.{y}.{z}-runtime-ubuntu22.04");
        prop_assert_eq!(cuda_of_image(&image), Some(format!("{x}.{y}.{z}")));
    }

    #[test]
    fn pytorch_tag_gives_cuda_major_minor(
        a in 0u32..100, b in 0u32..100, c in 0u32..100,
        x in 1u64..1000, y in any::<u64>(), n in 0u32..100,
    ) {
        let image = format!("pytorch/pytorch:{a}.{b}.{c}-cuda{x}.{y}-cudnn{n}-runtime");
        prop_assert_eq!(cuda_of_image(&image), Some(format!("{x}.{y}")));
    }
}
