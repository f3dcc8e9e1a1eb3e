//! The `Multiplex` stream (a hookwire extension, not part of
//! AGENT-HOOKS-0.1): how a [`PointRequest`] travels as one message of a
//! stream carrying many sessions' emissions, and how a manifest declares
//! that a service serves the stream: the typed `multiplex_version` field,
//! and for hosts that predate it the same version in the manifest's
//! `hookwire` extension (`"multiplex": 1`), which a service still writes
//! and a host still reads when the field is unset.
//!
//! The emission's request is the unary RPC's message unchanged, so both
//! modes encode and decode a context the same way; the stream adds the
//! emission's id, its timeout and its trace context around it.

use std::collections::HashMap;
use std::time::Duration;

use crate::pb;
use crate::pb::multiplex_request::Body;
use crate::wire::context::PointRequest;

/// The manifest extension namespace hookwire reads (`Manifest.extensions`).
pub const MANIFEST_NAMESPACE: &str = "hookwire";

/// Most emissions in flight on one `Multiplex` stream, the one bound both
/// sides hold: a host waits for room before it sends more, and a service
/// runs no more at once. What a host can make a service hold for it on one
/// stream is bounded, and a host never sends what its service would only
/// leave waiting.
pub const MAX_IN_FLIGHT: usize = 1024;

/// The member of the `hookwire` manifest extension that declares the
/// stream, and the protocol version its value names.
const MULTIPLEX_MEMBER: &str = "multiplex";
const MULTIPLEX_VERSION: u64 = 1;

/// Marks `manifest` as served with the `Multiplex` stream too: sets
/// `multiplex_version`, and `"multiplex": 1` in its `hookwire` extension
/// (keeping the members already there) for hosts that predate the field.
pub fn declare_multiplex(manifest: &mut pb::Manifest) {
    manifest.multiplex_version = MULTIPLEX_VERSION as u32;
    let entry = manifest
        .extensions
        .entry(MANIFEST_NAMESPACE.to_owned())
        .or_insert_with(|| pb::JsonValue { json: "{}".into() });
    let mut object = match crate::json::decode(&entry.json) {
        Ok(serde_json::Value::Object(o)) => o,
        _ => serde_json::Map::new(),
    };
    object.insert(MULTIPLEX_MEMBER.to_owned(), MULTIPLEX_VERSION.into());
    entry.json = crate::json::encode(&serde_json::Value::Object(object));
}

/// Whether `manifest` declares the `Multiplex` stream in a version this
/// build speaks: `multiplex_version` when set, else the `hookwire`
/// extension of a service that predates the field. Anything else (another
/// version, no extension, another shape) means unary calls only.
pub fn declares_multiplex(manifest: &pb::Manifest) -> bool {
    if manifest.multiplex_version != 0 {
        return u64::from(manifest.multiplex_version) == MULTIPLEX_VERSION;
    }
    manifest
        .extensions
        .get(MANIFEST_NAMESPACE)
        .and_then(|j| crate::json::decode(&j.json).ok())
        .and_then(|v| v.get(MULTIPLEX_MEMBER).and_then(serde_json::Value::as_u64))
        == Some(MULTIPLEX_VERSION)
}

/// What one stream message from a host asks of a service.
// Built once per message and matched at once: boxing the request would
// only add an allocation per emission.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum MultiplexBody {
    /// Decide this emission.
    Emission(PointRequest),
    /// Stop working on the emission with the message's id.
    Cancel,
    /// A message with no body, which a service refuses.
    Empty,
}

impl PointRequest {
    /// This request as the stream message with `id`, bounded by `timeout`
    /// (`None`: unbounded) and carrying the W3C `trace_context`.
    pub fn into_multiplex(
        self,
        id: u64,
        timeout: Option<Duration>,
        trace_context: HashMap<String, String>,
    ) -> pb::MultiplexRequest {
        let body = match self {
            Self::AgentStartup(m) => Body::AgentStartup(m),
            Self::Input(m) => Body::Input(m),
            Self::PreModelCall(m) => Body::PreModelCall(m),
            Self::PostModelCall(m) => Body::PostModelCall(m),
            Self::PreToolCall(m) => Body::PreToolCall(m),
            Self::PostToolCall(m) => Body::PostToolCall(m),
            Self::Output(m) => Body::Output(m),
            Self::AgentShutdown(m) => Body::AgentShutdown(m),
        };
        pb::MultiplexRequest {
            id,
            timeout_ms: timeout.map_or(0, |t| {
                // A bound below a millisecond still bounds: round up.
                u64::try_from(t.as_micros().div_ceil(1000)).unwrap_or(u64::MAX)
            }),
            trace_context,
            body: Some(body),
        }
    }

    /// The stream message that cancels the emission `id`.
    pub fn multiplex_cancel(id: u64) -> pb::MultiplexRequest {
        pb::MultiplexRequest {
            id,
            timeout_ms: 0,
            trace_context: HashMap::new(),
            body: Some(Body::Cancel(pb::MultiplexCancel {})),
        }
    }

    /// `core.session.id` as the request carries it, when it does: what a
    /// service orders a stream's emissions by.
    pub fn session_id(&self) -> Option<&str> {
        let core = match self {
            Self::AgentStartup(m) => m.core.as_ref(),
            Self::Input(m) => m.core.as_ref(),
            Self::PreModelCall(m) => m.core.as_ref(),
            Self::PostModelCall(m) => m.core.as_ref(),
            Self::PreToolCall(m) => m.core.as_ref(),
            Self::PostToolCall(m) => m.core.as_ref(),
            Self::Output(m) => m.core.as_ref(),
            Self::AgentShutdown(m) => m.core.as_ref(),
        };
        Some(core?.session.as_ref()?.id.as_str())
    }
}

impl From<Option<Body>> for MultiplexBody {
    fn from(body: Option<Body>) -> Self {
        match body {
            None => Self::Empty,
            Some(Body::Cancel(_)) => Self::Cancel,
            Some(Body::AgentStartup(m)) => Self::Emission(PointRequest::AgentStartup(m)),
            Some(Body::Input(m)) => Self::Emission(PointRequest::Input(m)),
            Some(Body::PreModelCall(m)) => Self::Emission(PointRequest::PreModelCall(m)),
            Some(Body::PostModelCall(m)) => Self::Emission(PointRequest::PostModelCall(m)),
            Some(Body::PreToolCall(m)) => Self::Emission(PointRequest::PreToolCall(m)),
            Some(Body::PostToolCall(m)) => Self::Emission(PointRequest::PostToolCall(m)),
            Some(Body::Output(m)) => Self::Emission(PointRequest::Output(m)),
            Some(Body::AgentShutdown(m)) => Self::Emission(PointRequest::AgentShutdown(m)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> PointRequest {
        PointRequest::PreToolCall(pb::PreToolCallRequest {
            core: Some(pb::ContextCore {
                session: Some(pb::Session {
                    id: "s-1".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    #[test]
    fn a_request_travels_whole_with_its_id_and_bound() {
        let m = request().into_multiplex(7, Some(Duration::from_micros(1500)), HashMap::new());
        assert_eq!((m.id, m.timeout_ms), (7, 2));
        assert_eq!(
            MultiplexBody::from(m.body),
            MultiplexBody::Emission(request())
        );
        let unbounded = request().into_multiplex(8, None, HashMap::new());
        assert_eq!(unbounded.timeout_ms, 0);
        let cancel = PointRequest::multiplex_cancel(7);
        assert_eq!(
            (cancel.id, MultiplexBody::from(cancel.body)),
            (7, MultiplexBody::Cancel)
        );
        assert_eq!(MultiplexBody::from(None), MultiplexBody::Empty);
        assert_eq!(request().session_id(), Some("s-1"));
        assert_eq!(
            PointRequest::Output(pb::OutputRequest::default()).session_id(),
            None
        );
    }

    #[test]
    fn the_manifest_declares_the_stream_in_its_hookwire_extension() {
        let mut m = pb::Manifest::default();
        assert!(!declares_multiplex(&m));
        m.extensions.insert(
            MANIFEST_NAMESPACE.into(),
            pb::JsonValue {
                json: r#"{"other":true}"#.into(),
            },
        );
        declare_multiplex(&mut m);
        assert!(declares_multiplex(&m));
        let kept = crate::json::decode(&m.extensions[MANIFEST_NAMESPACE].json).unwrap();
        assert_eq!(kept["other"], true, "members already there are kept");
        // What an older service's manifest says, without the typed field.
        m.multiplex_version = 0;
        assert!(declares_multiplex(&m));
        for other in [r#"{"multiplex":2}"#, r#"{"multiplex":"1"}"#, "[1]", "{"] {
            m.extensions.insert(
                MANIFEST_NAMESPACE.into(),
                pb::JsonValue { json: other.into() },
            );
            assert!(!declares_multiplex(&m), "{other}");
        }
    }

    #[test]
    fn the_typed_version_decides_and_the_extension_serves_older_peers() {
        let mut m = pb::Manifest::default();
        declare_multiplex(&mut m);
        assert_eq!(m.multiplex_version, 1);
        // An older host reads the extension alone.
        let legacy = pb::Manifest {
            multiplex_version: 0,
            ..m.clone()
        };
        assert!(declares_multiplex(&legacy), "an older service's manifest");
        // A version this build does not speak wins over the extension.
        let newer = pb::Manifest {
            multiplex_version: 2,
            ..m.clone()
        };
        assert!(!declares_multiplex(&newer));
        // The field alone is enough.
        m.extensions.clear();
        assert!(declares_multiplex(&m));
    }
}
