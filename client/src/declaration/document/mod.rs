//! The document as written: steps 3 to 7 of the load pipeline, checked on
//! the members the document states (the version, the `spec` wire version,
//! the closed levels, each member's type and range, and the internal
//! consistency rules that need no host to check), one step per module.
//!
//! Nothing here consults the host. Resolution against the host's surface
//! and registry — filling defaults, and re-running the consistency rules on
//! the filled surface — happens in `resolve`.

mod closed;
mod consistency;
mod fields;
mod version;

pub(crate) use closed::check_closed;
pub(crate) use consistency::{SurfaceView, check_consistency};
pub(crate) use fields::check_fields;
pub(crate) use version::{check_spec, check_version};
