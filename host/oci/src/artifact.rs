//! The artifact layouts computeguard pushes and pulls.
//!
//! - A policy component: the CNCF Wasm OCI artifact layout (the one the `oci-wasm` crate
//!   and wasmtime's ecosystem use): an OCI image manifest whose config has media type
//!   `application/vnd.wasm.config.v0+json` (`architecture: wasm`, `os: wasip2`,
//!   `layerDigests`, and the component's top-level `imports` and `exports`) and one layer
//!   `application/wasm` holding the component's bytes.
//! - A rule pack: its YAML source, one layer `application/vnd.computeguard.pack.v1+yaml`,
//!   under a config `application/vnd.computeguard.pack.config.v1+json`. Source, not a
//!   compiled component: the layer digest is the pack's source digest (the pin a local
//!   pack already takes), a reviewer reads what runs, and each computeguard compiles it
//!   with its own CEL runtime exactly as it compiles a local pack. Publish the output of
//!   `computeguard build` instead to fix the runtime too.
//! - A catalog overlay: its YAML or JSON, one layer
//!   `application/vnd.computeguard.catalog.overlay.v1+yaml` (or `+json`), under a config
//!   `application/vnd.computeguard.catalog.overlay.config.v1+json`.
//!
//! Each layer carries `org.opencontainers.image.title` (the file name). The config of a
//! pack or overlay is a small JSON object naming the layer's media type; its digest makes
//! every manifest unique to its content.

use crate::{Digest, Error};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Media types.
pub mod media {
    /// An OCI image manifest.
    pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
    /// A Docker v2 manifest (accepted in `Accept`, refused as an artifact).
    pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
    /// The CNCF Wasm artifact config.
    pub const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
    /// A Wasm component or module.
    pub const WASM_LAYER: &str = "application/wasm";
    /// The config of a rule pack artifact.
    pub const PACK_CONFIG: &str = "application/vnd.computeguard.pack.config.v1+json";
    /// A rule pack's YAML source.
    pub const PACK_LAYER: &str = "application/vnd.computeguard.pack.v1+yaml";
    /// The config of a catalog overlay artifact.
    pub const OVERLAY_CONFIG: &str = "application/vnd.computeguard.catalog.overlay.config.v1+json";
    /// A catalog overlay in YAML.
    pub const OVERLAY_LAYER_YAML: &str = "application/vnd.computeguard.catalog.overlay.v1+yaml";
    /// A catalog overlay in JSON.
    pub const OVERLAY_LAYER_JSON: &str = "application/vnd.computeguard.catalog.overlay.v1+json";
    /// The OCI empty descriptor's media type.
    pub const EMPTY_CONFIG: &str = "application/vnd.oci.empty.v1+json";
    /// An OCI image config (cosign's signature manifests use it).
    pub const OCI_IMAGE_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
    /// cosign's simple-signing payload.
    pub const SIMPLE_SIGNING: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
}

/// The layer annotation naming the file.
pub const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

/// A content descriptor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// The content's media type.
    pub media_type: String,
    /// `sha256:<hex>` of the content.
    pub digest: String,
    /// The content's size in bytes.
    pub size: u64,
    /// Annotations (a signature, the file's title).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Descriptor {
    /// A descriptor of `bytes`.
    pub fn of(media_type: &str, bytes: &[u8]) -> Descriptor {
        Descriptor {
            media_type: media_type.to_string(),
            digest: Digest::of(bytes).to_string(),
            size: bytes.len() as u64,
            annotations: BTreeMap::new(),
        }
    }

    /// The parsed digest.
    pub fn digest(&self) -> Result<Digest, Error> {
        Digest::parse(&self.digest)
    }
}

/// An OCI image manifest (what every computeguard artifact and cosign signature is).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always 2.
    pub schema_version: u32,
    /// [`media::OCI_MANIFEST`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The config blob.
    pub config: Descriptor,
    /// The layers.
    pub layers: Vec<Descriptor>,
    /// Manifest annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl Manifest {
    /// A manifest of `config` and `layers`.
    pub fn new(config: Descriptor, layers: Vec<Descriptor>) -> Manifest {
        Manifest {
            schema_version: 2,
            media_type: Some(media::OCI_MANIFEST.to_string()),
            config,
            layers,
            annotations: BTreeMap::new(),
        }
    }

    /// The JSON bytes pushed (and hashed into the manifest digest).
    pub fn to_bytes(&self) -> Result<Vec<u8>, Error> {
        serde_json::to_vec(self).map_err(|e| Error::Format {
            what: "manifest".into(),
            reason: e.to_string(),
        })
    }

    /// Parses a manifest's bytes; `what` names it in errors.
    pub fn parse(bytes: &[u8], what: &str) -> Result<Manifest, Error> {
        let m: Manifest = serde_json::from_slice(bytes).map_err(|e| Error::Format {
            what: what.to_string(),
            reason: format!("not an OCI image manifest: {e}"),
        })?;
        if m.schema_version != 2 {
            return Err(Error::Format {
                what: what.to_string(),
                reason: format!("schemaVersion {}, expected 2", m.schema_version),
            });
        }
        if let Some(mt) = &m.media_type
            && mt != media::OCI_MANIFEST
        {
            return Err(Error::Format {
                what: what.to_string(),
                reason: format!("media type {mt}, expected {}", media::OCI_MANIFEST),
            });
        }
        Ok(m)
    }
}

/// What an artifact holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A policy component (`.wasm`).
    Component,
    /// A rule pack's source (`.yaml`).
    Pack,
    /// A catalog overlay (`.yaml`, or `.json` when `json`).
    Overlay {
        /// The overlay is JSON.
        json: bool,
    },
}

impl Kind {
    /// The layer media type.
    pub fn layer_media_type(self) -> &'static str {
        match self {
            Kind::Component => media::WASM_LAYER,
            Kind::Pack => media::PACK_LAYER,
            Kind::Overlay { json: false } => media::OVERLAY_LAYER_YAML,
            Kind::Overlay { json: true } => media::OVERLAY_LAYER_JSON,
        }
    }

    /// The config media type.
    pub fn config_media_type(self) -> &'static str {
        match self {
            Kind::Component => media::WASM_CONFIG,
            Kind::Pack => media::PACK_CONFIG,
            Kind::Overlay { .. } => media::OVERLAY_CONFIG,
        }
    }

    /// The extension of the file the cache materialises (what the loaders dispatch on).
    pub fn extension(self) -> &'static str {
        match self {
            Kind::Component => "wasm",
            Kind::Pack | Kind::Overlay { json: false } => "yaml",
            Kind::Overlay { json: true } => "json",
        }
    }

    /// The kind a layer media type holds.
    pub fn of_layer(media_type: &str) -> Option<Kind> {
        Some(match media_type {
            media::WASM_LAYER => Kind::Component,
            media::PACK_LAYER => Kind::Pack,
            media::OVERLAY_LAYER_YAML => Kind::Overlay { json: false },
            media::OVERLAY_LAYER_JSON => Kind::Overlay { json: true },
            _ => return None,
        })
    }

    /// A word for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Component => "policy component",
            Kind::Pack => "rule pack",
            Kind::Overlay { .. } => "catalog overlay",
        }
    }
}

/// An artifact ready to push: the manifest and the blobs it names.
#[derive(Clone, Debug)]
pub struct Artifact {
    /// The manifest.
    pub manifest: Manifest,
    /// The config blob's bytes.
    pub config: Vec<u8>,
    /// The single layer's bytes.
    pub layer: Vec<u8>,
}

/// The CNCF Wasm config.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmConfig {
    /// RFC 3339 creation time (`SOURCE_DATE_EPOCH` when set, for reproducible pushes).
    pub created: String,
    /// The author, when known.
    pub author: Option<String>,
    /// Always `wasm`.
    pub architecture: String,
    /// `wasip2` for a component.
    pub os: String,
    /// The digests of the manifest's layers, in order.
    pub layer_digests: Vec<String>,
    /// The component's top-level imports and exports.
    pub component: Option<ComponentInfo>,
}

/// A component's world as the Wasm config lists it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ComponentInfo {
    /// Exported interface names.
    pub exports: Vec<String>,
    /// Imported interface names.
    pub imports: Vec<String>,
    /// The world the component targets, when known.
    pub target: Option<String>,
}

/// The config of a pack or overlay artifact.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileConfig {
    media_type: String,
}

fn created() -> String {
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok());
    let at = secs
        .and_then(|s| chrono::DateTime::from_timestamp(s, 0))
        .unwrap_or_else(chrono::Utc::now);
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The top-level imports and exports of a component; an error for bytes that are not a
/// component.
pub fn component_info(bytes: &[u8]) -> Result<ComponentInfo, Error> {
    use wasmparser::{Encoding, Parser, Payload};
    let bad = |reason: String| Error::Format {
        what: "policy component".into(),
        reason,
    };
    let mut info = ComponentInfo::default();
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(|e| bad(format!("not a Wasm component: {e}")))? {
            Payload::Version { encoding, .. } => {
                if depth == 0 && encoding != Encoding::Component {
                    return Err(bad(
                        "a core Wasm module, not a component (policies are components)".into(),
                    ));
                }
                depth += 1;
            }
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(s) if depth == 1 => {
                for i in s {
                    let i = i.map_err(|e| bad(e.to_string()))?;
                    info.imports.push(i.name.name.to_string());
                }
            }
            Payload::ComponentExportSection(s) if depth == 1 => {
                for e in s {
                    let e = e.map_err(|e| bad(e.to_string()))?;
                    info.exports.push(e.name.name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok(info)
}

impl Artifact {
    /// Builds the artifact of `kind` holding `bytes`, titled `title` (the file name).
    pub fn new(kind: Kind, bytes: Vec<u8>, title: &str) -> Result<Artifact, Error> {
        let mut layer = Descriptor::of(kind.layer_media_type(), &bytes);
        layer
            .annotations
            .insert(TITLE_ANNOTATION.into(), title.to_string());
        let config = match kind {
            Kind::Component => serde_json::to_vec(&WasmConfig {
                created: created(),
                author: None,
                architecture: "wasm".into(),
                os: "wasip2".into(),
                layer_digests: vec![layer.digest.clone()],
                component: Some(component_info(&bytes)?),
            }),
            Kind::Pack | Kind::Overlay { .. } => serde_json::to_vec(&FileConfig {
                media_type: kind.layer_media_type().into(),
            }),
        }
        .map_err(|e| Error::Format {
            what: "config".into(),
            reason: e.to_string(),
        })?;
        let config_desc = Descriptor::of(kind.config_media_type(), &config);
        Ok(Artifact {
            manifest: Manifest::new(config_desc, vec![layer]),
            config,
            layer: bytes,
        })
    }
}

/// The one layer of a computeguard artifact and what it holds; an error naming `what`
/// for any other manifest (a container image, several layers, a layer type computeguard
/// does not read, a config that does not match the layer).
pub fn artifact_layer(manifest: &Manifest, what: &str) -> Result<(Kind, Descriptor), Error> {
    let bad = |reason: String| Error::Format {
        what: what.to_string(),
        reason,
    };
    let [layer] = manifest.layers.as_slice() else {
        return Err(bad(format!(
            "has {} layers; a computeguard artifact has exactly one",
            manifest.layers.len()
        )));
    };
    let kind = Kind::of_layer(&layer.media_type).ok_or_else(|| {
        bad(format!(
            "layer media type {} is not a policy component, rule pack or catalog overlay",
            layer.media_type
        ))
    })?;
    if manifest.config.media_type != kind.config_media_type() {
        return Err(bad(format!(
            "config media type {} does not go with a {} layer (expected {})",
            manifest.config.media_type,
            layer.media_type,
            kind.config_media_type()
        )));
    }
    Ok((kind, layer.clone()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pack_artifact_has_one_titled_layer_and_a_matching_config() {
        let a = Artifact::new(Kind::Pack, b"name: x\n".to_vec(), "x.yaml").unwrap();
        let (kind, layer) = artifact_layer(&a.manifest, "m").unwrap();
        assert_eq!(kind, Kind::Pack);
        assert_eq!(layer.digest, Digest::of(b"name: x\n").to_string());
        assert_eq!(layer.annotations[TITLE_ANNOTATION], "x.yaml");
        let bytes = a.manifest.to_bytes().unwrap();
        assert_eq!(Manifest::parse(&bytes, "m").unwrap(), a.manifest);
        // A core module is not a policy.
        assert!(Artifact::new(Kind::Component, b"\0asm\x01\0\0\0".to_vec(), "m.wasm").is_err());
    }
}
