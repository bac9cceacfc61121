//! Azure knowledge: what Azure prints about VM sizes, their availability, and quota.
//!
//! The parsers read the documents exactly as `az` and the REST API print them, from a
//! [`serde_json::Value`] the caller has already parsed (this crate does no I/O):
//! - [`parse_skus`]: `az vm list-skus -o json` or a REST "Resource Skus - List" body, into
//!   [`SkuOffer`]s (virtual machine sizes only);
//! - [`parse_usage`]: `az vm list-usage --location R -o json` or a REST "Usage - List" body,
//!   into [`UsageEntry`]s (the caller knows the region);
//! - [`parse_ml_usage`] and [`parse_ml_sizes`]: Azure ML's own usage and VM size lists.
//!
//! Anything else is a [`ShapeError`] naming the JSON pointer, what was expected and what was
//! found. The indexes answer questions and say when the data cannot:
//! - [`Availability`]: is a size offered in a region and zones ([`OfferAnswer`]);
//! - [`Quota`]: free vCPUs of a family in a region ([`QuotaAnswer`]), matched through
//!   [`family_key`].

#![deny(missing_docs)]

pub mod availability;
pub mod ml;
pub mod quota;
mod shape;
pub mod skus;
pub mod usage;

pub use availability::{Availability, OfferAnswer};
pub use ml::{
    MlLimit, MlPriority, MlScope, MlUsageEntry, MlVmSize, parse_ml_sizes, parse_ml_usage,
};
pub use quota::{Quota, QuotaAnswer, REGIONAL_TOTAL_ID, family_key};
pub use shape::ShapeError;
pub use skus::{Restriction, RestrictionKind, SkuOffer, parse_skus};
pub use usage::{UsageEntry, parse_usage};

/// The `nextLink` of a REST list body: `Some` when the body is one page of a longer list
/// (the caller fetches the rest). `None` for a bare array (`az` pages for you), a `null`
/// link, or anything else.
pub fn next_link(v: &serde_json::Value) -> Option<&str> {
    v.get("nextLink")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty())
}
