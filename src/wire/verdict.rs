//! [`Verdict`] and the interceptor response envelope (§5.5) ⇄ the wire, plus
//! the service manifest.

use serde_json::{Map, Value};

use crate::pb;
use crate::point::InterceptionPoint;
use crate::verdict::{InvalidVerdict, Verdict};

/// Largest canonical size of a response's `extensions`, in bytes (§5.5).
pub const RESPONSE_EXTENSIONS_MAX_BYTES: usize = 65_536;

/// What an interceptor returns (§5.5): a verdict plus opaque namespaced
/// transport metadata that never changes enforcement.
#[derive(Debug, Clone, PartialEq)]
pub struct InterceptorResponse {
    /// The verdict.
    pub verdict: Verdict,
    /// `<namespace>` -> JSON, e.g. receipts.
    pub extensions: Map<String, Value>,
}

impl From<Verdict> for InterceptorResponse {
    fn from(verdict: Verdict) -> Self {
        Self {
            verdict,
            extensions: Map::new(),
        }
    }
}

impl From<&InterceptorResponse> for pb::InterceptorResponse {
    fn from(r: &InterceptorResponse) -> Self {
        todo!("wire helper")
    }
}

impl TryFrom<pb::InterceptorResponse> for InterceptorResponse {
    type Error = InvalidVerdict;
    /// Decodes and applies §5 validation plus the §5.5 extension rules.
    fn try_from(r: pb::InterceptorResponse) -> Result<Self, Self::Error> {
        todo!("wire helper")
    }
}

impl From<&Verdict> for pb::Verdict {
    fn from(v: &Verdict) -> Self {
        todo!("wire helper")
    }
}

impl TryFrom<pb::Verdict> for Verdict {
    type Error = InvalidVerdict;
    /// Decodes and applies §5 validation.
    fn try_from(v: pb::Verdict) -> Result<Self, Self::Error> {
        todo!("wire helper")
    }
}

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

impl From<&Manifest> for pb::Manifest {
    fn from(m: &Manifest) -> Self {
        todo!("wire helper")
    }
}

/// A manifest naming an unspecified or unknown point.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("manifest names an unknown interception point ({0})")]
pub struct InvalidManifest(pub i32);

impl TryFrom<pb::Manifest> for Manifest {
    type Error = InvalidManifest;
    fn try_from(m: pb::Manifest) -> Result<Self, Self::Error> {
        todo!("wire helper")
    }
}

impl From<InterceptionPoint> for pb::InterceptionPoint {
    fn from(p: InterceptionPoint) -> Self {
        todo!("wire helper")
    }
}
