//! Bicep and ARM files in a scan: parameter files, and local modules followed with what the
//! call passes.
//!
//! Parameter files give values to a template's parameters, lowest precedence first: the
//! template's defaults, then the files paired with it by name (`X.parameters.json` and
//! `X.bicepparam` beside `X.bicep` or `X.json`; a `.bicepparam` only when its `using` names
//! that template), then the files given with `--param-file` (or named on the command line),
//! in order. A JSON parameters file (the `deploymentParameters.json` schema) applies to every
//! root template checked, for the parameters it declares; a `.bicepparam` to the template its
//! `using` names. A Key Vault reference or a value known only at deploy time
//! (`readEnvironmentVariable(...)`) leaves the parameter unresolved.
//!
//! A module call (`module gpu './gpu.bicep' = { params: {...} }`) to a local `.bicep` or
//! `.json` file is followed: the module is checked as a document of its own file, its
//! parameters bound to what the call passes (evaluated in the caller's scope); a value the
//! caller cannot know leaves the parameter without a value, so what depends on it is
//! unresolved. A call whose `if` is false deploys nothing; a loop over a known array checks
//! the module once per item. A registry (`br:`, `br/alias:`) or template spec (`ts:`)
//! module is not read: it is an unresolved fact naming what it receives.

mod avm;
mod modules;
mod params;
mod prepass;

pub use avm::read_known_modules;
pub(in crate::scan) use avm::relocate;
pub(in crate::scan) use modules::{Origin, called_modules};
pub use params::{
    ParamFile, is_bicepparam, is_parameters_json, named_param_files, read_param_file,
};
