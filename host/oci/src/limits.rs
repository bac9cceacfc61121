//! Every size read from a registry or the cache is bounded: a manifest by
//! [`MAX_MANIFEST_BYTES`], a blob by the limit of its media type ([`blob_limit`]).

/// A manifest (or a registry's token or error answer): 4 MiB, the limit the distribution
/// registry itself applies.
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;
/// A policy component (`application/wasm`): 8 MiB, the engine's own limit on a component.
pub const MAX_COMPONENT_BYTES: u64 = 8 << 20;
/// A rule pack's source: 4 MiB.
pub const MAX_PACK_BYTES: u64 = 4 << 20;
/// A catalog overlay: 64 MiB (an overlay imported from a full SKU list is large).
pub const MAX_OVERLAY_BYTES: u64 = 64 << 20;
/// A config blob (Wasm config, the empty config): 1 MiB.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// A cosign simple-signing payload: 64 KiB.
pub const MAX_SIGNATURE_PAYLOAD_BYTES: u64 = 64 << 10;
/// An answer the client reads only for its message (errors, token answers): 64 KiB.
pub const MAX_SMALL_ANSWER_BYTES: u64 = 64 << 10;

/// The largest blob of `media_type` computeguard reads; `None` for a media type it does
/// not read at all.
pub fn blob_limit(media_type: &str) -> Option<u64> {
    use crate::artifact::media;
    match media_type {
        media::WASM_LAYER => Some(MAX_COMPONENT_BYTES),
        media::PACK_LAYER => Some(MAX_PACK_BYTES),
        media::OVERLAY_LAYER_YAML | media::OVERLAY_LAYER_JSON => Some(MAX_OVERLAY_BYTES),
        media::WASM_CONFIG
        | media::PACK_CONFIG
        | media::OVERLAY_CONFIG
        | media::EMPTY_CONFIG
        | media::OCI_IMAGE_CONFIG => Some(MAX_CONFIG_BYTES),
        media::SIMPLE_SIGNING => Some(MAX_SIGNATURE_PAYLOAD_BYTES),
        _ => None,
    }
}
