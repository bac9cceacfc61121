//! The CUDA version a workload needs, inferred from its container image reference or from
//! the environment variables its image sets. Facts come from `shared/catalog/cuda.yaml`;
//! each table cites the source ids listed under that file's `sources:`.

use crate::version::Version;

/// NGC monthly release (`YY.MM`) -> CUDA toolkit in the container.
///
/// source: cuda.yaml image_tag_patterns[nvcr.io/nvidia/pytorch].known_mappings (ngc-pytorch-rn).
/// Uncertain (cuda.yaml `uncertain: true`): a small sample taken from the per-release notes and
/// not re-verified. The table is from the PyTorch container notes; cuda.yaml notes the same
/// YY.MM scheme for nvcr.io/nvidia/tensorflow, tritonserver etc., and it is applied to those
/// images unchanged (see `NGC_REPOS`).
const NGC_RELEASES: &[(&str, &str)] = &[
    ("19.05", "10.1"), // documented as "10.1 Update 1": only major.minor is given
    ("21.04", "11.3.0"),
    ("21.05", "11.3.0"),
    ("22.05", "11.7.0"),
    ("22.11", "11.8.0"),
    ("24.05", "12.4.1"),
    ("24.06", "12.4.1"),
];

/// NGC repositories (`nvcr.io` or a mirror, not Docker Hub) whose tags start with the monthly
/// release `YY.MM`.
///
/// source: cuda.yaml image_tag_patterns[nvcr.io/nvidia/pytorch] uncertain_note (ngc-pytorch-rn).
const NGC_REPOS: &[&str] = &["nvidia/pytorch", "nvidia/tensorflow", "nvidia/tritonserver"];

/// TensorFlow 2.x GPU builds: `(first minor, last minor, CUDA)`, from the tested build
/// configurations (2.12-2.13 and 2.14 differ only in cuDNN, so they share one row).
///
/// source: cuda.yaml tensorflow.releases (cog-tf). cuda.yaml marks the section `uncertain: true`
/// (for its `[and-cuda]` note; the versions themselves come from cog-tf).
const TF_GPU_CUDA: &[(u64, u64, &str)] = &[
    (4, 4, "11.0"),
    (5, 11, "11.2"),
    (12, 14, "11.8"),
    (15, 15, "12.2"),
    (16, 17, "12.3"),
    (18, 21, "12.5"),
];

/// CUDA version required by a container image reference, inferred from its name/tag.
/// Returns the version as written (`12.4.1`, `12.1`, or just the major `12` for Azure ML
/// curated `-cuda12` names), `None` if unknown.
///
/// The registry host, `docker.io/`, `library/` and a digest or label after `@` are ignored
/// (so mirrors that keep the repository path, e.g. in Azure Container Registry, are treated
/// like the original). Recognised, in this order:
/// - `nvidia/cuda` (Docker Hub, `nvcr.io`): the leading `X.Y[.Z]` of the tag
///   (source: cuda.yaml image_tag_patterns[nvidia/cuda] (cog-cuda-images, nvidia-container-wiki)).
/// - `tensorflow/tensorflow:<tf>-gpu...`: the CUDA of that TensorFlow release (`TF_GPU_CUDA`);
///   non-GPU, `latest` and untagged references give `None`.
/// - `nvcr.io/nvidia/{pytorch,tensorflow,tritonserver}:YY.MM-...` (any host but Docker Hub):
///   [`ngc_release_cuda`].
/// - Anything else: a `cuda<version>` token (`cuda12.1`, `cuda-11.8`, `cuda11`; major-only
///   needs 1-2 digits) or a `cu<XYZ>` token (`cu121` = 12.1), each starting at a token
///   boundary and not followed by a letter or digit; searched in the tag, then in the name.
///   This covers `pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime` (source: cuda.yaml
///   image_tag_patterns[pytorch/pytorch] (pytorch-release-md; tag grammar uncertain)),
///   Azure ML base and curated images and `azureml:` environment references (source: cuda.yaml
///   image_tag_patterns[mcr.microsoft.com/azureml...] (azureml-examples)) and PyTorch wheel
///   tags (source: cuda.yaml pytorch.cuda_tag_to_version; no source id given there, the
///   pytorch section otherwise cites cog-torch).
pub fn cuda_of_image(image: &str) -> Option<String> {
    let image = image.trim().to_ascii_lowercase();
    let image = image
        .split_once('@')
        .map_or(image.as_str(), |(name, _)| name);
    let (name, tag) = match image.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => (name, tag),
        _ => (image, ""),
    };
    let (host, repo) = match name.split_once('/') {
        Some((h, r)) if h.contains(['.', ':']) || h == "localhost" => (h, r),
        _ => ("docker.io", name),
    };
    let docker_hub = matches!(host, "docker.io" | "index.docker.io");
    let repo = if docker_hub {
        repo.strip_prefix("library/").unwrap_or(repo)
    } else {
        repo
    };
    match repo {
        "nvidia/cuda" => {
            let (v, rest) = leading_version(tag);
            (v.contains('.') && (rest.is_empty() || rest.starts_with('-'))).then(|| v.to_string())
        }
        "tensorflow/tensorflow" => tf_gpu_cuda(tag).map(String::from),
        _ if !docker_hub && NGC_REPOS.contains(&repo) => tag
            .split('-')
            .next()
            .and_then(ngc_release_cuda)
            .map(String::from),
        _ => cuda_token(tag).or_else(|| cuda_token(name)),
    }
}

/// CUDA version from a container environment variable: `CUDA_VERSION=12.4.1` -> `12.4.1`;
/// `NVIDIA_REQUIRE_CUDA="cuda>=12.2 brand=tesla,driver>=470,driver<471"` -> `12.2`.
/// Surrounding quotes are ignored. Other names, or values without a version, give `None`.
///
/// source: cuda.yaml image_tag_patterns[image environment variables] (nvidia-cuda-dockerfile).
pub fn cuda_of_env(name: &str, value: &str) -> Option<String> {
    let value = value.trim().trim_matches(['"', '\'']);
    let v = match name.trim() {
        "CUDA_VERSION" => value,
        "NVIDIA_REQUIRE_CUDA" => value
            .split_whitespace()
            .find_map(|t| t.strip_prefix("cuda>="))?,
        _ => return None,
    };
    Version::parse(v).map(|v| v.to_string())
}

/// NGC `YY.MM` release (e.g. `"24.05"`) -> CUDA version of the nvcr.io/nvidia/{pytorch,
/// tensorflow,tritonserver} containers of that release, from the documented table
/// (`NGC_RELEASES`, a small sample marked uncertain in cuda.yaml); `None` if the release is
/// not in the table (never guessed).
pub fn ngc_release_cuda(yy_mm: &str) -> Option<&'static str> {
    let yy_mm = yy_mm.trim();
    NGC_RELEASES
        .iter()
        .find(|(r, _)| *r == yy_mm)
        .map(|&(_, cuda)| cuda)
}

/// CUDA of a `tensorflow/tensorflow` tag such as `2.15.0-gpu` or `2.15.0rc1-gpu-jupyter`:
/// `None` unless the tag starts with a known 2.x version and has a `gpu` component.
fn tf_gpu_cuda(tag: &str) -> Option<&'static str> {
    let (v, rest) = leading_version(tag);
    let v = Version::parse(v)?;
    if v.major() != 2 || !rest.split('-').any(|t| t == "gpu") {
        return None;
    }
    let minor = v.minor();
    TF_GPU_CUDA
        .iter()
        .find(|(lo, hi, _)| (*lo..=*hi).contains(&minor))
        .map(|&(_, _, cuda)| cuda)
}

/// The first `cuda<version>` or `cu<XYZ>` token of `s` (see [`cuda_of_image`]).
fn cuda_token(s: &str) -> Option<String> {
    let ends_token = |rest: &str| !rest.starts_with(|c: char| c.is_ascii_alphanumeric());
    s.match_indices("cu").find_map(|(i, _)| {
        let (before, rest) = s.split_at(i);
        if before.ends_with(|c: char| c.is_ascii_alphanumeric()) {
            return None;
        }
        let rest = rest.get(2..)?;
        if let Some(v) = rest.strip_prefix("da") {
            let v = v.strip_prefix(['-', '_']).unwrap_or(v);
            let (num, after) = leading_version(v);
            let plausible = num.contains('.') || (1..=2).contains(&num.len());
            (plausible && ends_token(after)).then(|| num.to_string())
        } else {
            // `cuXYZ`: two major digits and one minor digit (cu121 = 12.1, cu130 = 13.0).
            let digits = rest.get(..3)?;
            let ok = digits.bytes().all(|b| b.is_ascii_digit())
                && !digits.starts_with('0')
                && ends_token(rest.get(3..)?);
            let (major, minor) = digits.split_at_checked(2)?;
            ok.then(|| format!("{major}.{minor}"))
        }
    })
}

/// Splits `s` into its leading `\d+(\.\d+)*` (possibly empty) and the rest.
fn leading_version(s: &str) -> (&str, &str) {
    let b = s.as_bytes();
    let digits = |from: usize| {
        b.iter()
            .skip(from)
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let mut end = digits(0);
    while end > 0 && b.get(end) == Some(&b'.') {
        match digits(end + 1) {
            0 => break,
            n => end += 1 + n,
        }
    }
    s.split_at(end)
}
