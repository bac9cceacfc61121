//! The compute model as the rest of the workspace uses it: the model type ([`crate::compute`])
//! and the readers' entry points ([`crate::read`]), under one stable path.
//!
//! This module only re-exports; the type lives in `compute.rs` and the readers in `read/`.

pub use crate::compute::*;
pub use crate::read::{escape, normalize, pod_specs, rename};
