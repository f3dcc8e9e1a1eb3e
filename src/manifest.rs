//! A service's self-description (answered by `Describe`): its name,
//! version, contract version, and the points it wants to be called at.

use crate::context::SPEC_VERSION;
use crate::point::InterceptionPoint;

/// A service's self-description, answered by `Describe`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// Service name.
    pub name: String,
    /// Service version.
    pub version: String,
    /// Contract version, `agent-hooks/0.1`.
    pub spec: String,
    /// Points the service wants; empty means all eight.
    pub points: Vec<InterceptionPoint>,
    /// One line for operators.
    pub description: String,
}

/// A manifest for an interceptor called at all eight points, speaking the
/// contract version of this crate, with no description. Narrow it with
/// struct update syntax: `Manifest { points: vec![..], ..manifest(n, v) }`.
pub fn manifest(name: impl Into<String>, version: impl Into<String>) -> Manifest {
    Manifest {
        name: name.into(),
        version: version.into(),
        spec: SPEC_VERSION.to_owned(),
        points: Vec::new(),
        description: String::new(),
    }
}
