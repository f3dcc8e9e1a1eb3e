//! What a service answers ⇄ the wire: the interceptor response envelope
//! (§5.5) and the manifest `Describe` returns.
//!
//! Encoding maps every field 1:1 and never validates (see [`super::verdict`]);
//! decoding parses every JSON text exactly and then applies
//! [`InterceptorResponse::validate`], the same validation a host applies to
//! the response of an in-process interceptor.

use serde_json::Map;

use crate::manifest::Manifest;
use crate::pb;
use crate::point::InterceptionPoint;
use crate::response::InterceptorResponse;
use crate::verdict::InvalidVerdict;
use crate::wire::verdict::{decode_json, json_value, verdict_from_pb_unchecked};

impl From<&InterceptorResponse> for pb::InterceptorResponse {
    fn from(r: &InterceptorResponse) -> Self {
        Self {
            verdict: Some(pb::Verdict::from(&r.verdict)),
            extensions: r
                .extensions
                .iter()
                .map(|(k, v)| (k.clone(), json_value(v)))
                .collect(),
        }
    }
}

impl TryFrom<pb::InterceptorResponse> for InterceptorResponse {
    type Error = InvalidVerdict;
    /// Decodes every JSON text exactly, then applies the one response
    /// validation ([`InterceptorResponse::validate`]): §5 on the verdict,
    /// §5.5 on the extensions.
    fn try_from(r: pb::InterceptorResponse) -> Result<Self, Self::Error> {
        let verdict = verdict_from_pb_unchecked(r.verdict.ok_or(InvalidVerdict::Missing)?)?;
        let mut extensions = Map::new();
        for (namespace, text) in r.extensions {
            extensions.insert(namespace, decode_json("extensions", &text)?);
        }
        let response = Self {
            verdict,
            extensions,
        };
        response.validate()?;
        Ok(response)
    }
}

impl From<&Manifest> for pb::Manifest {
    fn from(m: &Manifest) -> Self {
        Self {
            name: m.name.clone(),
            version: m.version.clone(),
            spec: m.spec.clone(),
            points: m
                .points
                .iter()
                .map(|&p| pb::InterceptionPoint::from(p) as i32)
                .collect(),
            description: m.description.clone(),
            extensions: Default::default(),
            // Set by the server that serves the stream (`declare_multiplex`).
            multiplex_version: 0,
        }
    }
}

/// A manifest naming an unspecified or unknown point.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("manifest names an unknown interception point ({0})")]
pub struct InvalidManifest(pub i32);

impl TryFrom<pb::Manifest> for Manifest {
    type Error = InvalidManifest;
    fn try_from(m: pb::Manifest) -> Result<Self, Self::Error> {
        let points = m
            .points
            .iter()
            .map(|&raw| {
                pb::InterceptionPoint::try_from(raw)
                    .ok()
                    .and_then(|p| InterceptionPoint::try_from(p).ok())
                    .ok_or(InvalidManifest(raw))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            name: m.name,
            version: m.version,
            spec: m.spec,
            points,
            description: m.description,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{RESPONSE_EXTENSIONS_MAX_BYTES, Verdict};
    use serde_json::json;

    fn jv(text: &str) -> pb::JsonValue {
        pb::JsonValue { json: text.into() }
    }

    #[test]
    fn responses_check_extensions() {
        let mut resp = InterceptorResponse::from(Verdict::allow());
        resp.extensions
            .insert("acme".into(), json!({"receipt": {"id": "r-1", "n": 1.0}}));
        let wire = pb::InterceptorResponse::from(&resp);
        assert_eq!(InterceptorResponse::try_from(wire.clone()).unwrap(), resp);

        let mut missing = wire.clone();
        missing.verdict = None;
        assert_eq!(
            InterceptorResponse::try_from(missing),
            Err(InvalidVerdict::Missing)
        );

        for bad in ["Acme", "", "1acme", "ac-me", "acme.receipt"] {
            let mut w = wire.clone();
            w.extensions.insert(bad.into(), jv("1"));
            assert_eq!(
                InterceptorResponse::try_from(w),
                Err(InvalidVerdict::ExtensionNamespace),
                "{bad:?}"
            );
        }

        // {"a":"…"} is 8 bytes plus the string.
        let at_cap = "x".repeat(RESPONSE_EXTENSIONS_MAX_BYTES - 8);
        let mut w = wire.clone();
        w.extensions.clear();
        w.extensions.insert("a".into(), json_value(&json!(at_cap)));
        InterceptorResponse::try_from(w.clone()).unwrap();
        w.extensions
            .insert("a".into(), json_value(&json!(at_cap + "x")));
        assert_eq!(
            InterceptorResponse::try_from(w),
            Err(InvalidVerdict::ExtensionsTooLarge)
        );

        let mut w = wire;
        w.extensions.insert("bad_json".into(), jv("{\"a\":}"));
        assert!(matches!(
            InterceptorResponse::try_from(w),
            Err(InvalidVerdict::Json {
                member: "extensions",
                ..
            })
        ));
    }

    #[test]
    fn manifests() {
        let m = Manifest {
            name: "acme-egress-filter".into(),
            version: "1.2.0".into(),
            spec: "agent-hooks/0.1".into(),
            points: vec![InterceptionPoint::PreToolCall, InterceptionPoint::Output],
            description: "Blocks egress to unknown hosts.".into(),
        };
        let wire = pb::Manifest::from(&m);
        assert_eq!(wire.points, [5, 7]);
        assert_eq!(Manifest::try_from(wire.clone()), Ok(m));
        for raw in [0, 9, -1] {
            let mut w = wire.clone();
            w.points.push(raw);
            assert_eq!(Manifest::try_from(w), Err(InvalidManifest(raw)));
        }
    }
}
