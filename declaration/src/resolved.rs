//! The resolved form (§7.7.3): a declaration with every default filled,
//! as a declared host runs it. Its canonical JSON is the equivalence
//! oracle of §7.7.7: two load paths are equivalent exactly when they
//! resolve to the same bytes.

use std::collections::BTreeSet;
use std::time::Duration;

use hookwire::canonical::to_canonical_string;
use hookwire::{Composition, InterceptionPoint, Mode};
use serde_json::{Map, Value};

use super::surface::{Posture, ResolvedSurface};

/// The §7.7.3 default of `timeouts.interceptor_ms`, written once here: a
/// host's default binding timeout (`hookwire_client::DEFAULT_TIMEOUT`) is
/// this many milliseconds, so a declared and a coded host agree.
pub const DEFAULT_INTERCEPTOR_MS: u64 = 5000;

/// The informative `host` block, verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostInfo {
    /// `host.name`.
    pub name: String,
    /// `host.version`.
    pub version: Option<String>,
}

/// One binding with `at` and `timeout_ms` filled.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedBinding {
    /// The binding id: the interceptor's name on records.
    pub id: String,
    /// The registry key.
    pub kind: String,
    /// Handed to the kind resolver unchanged (`{}` when absent).
    pub config: Value,
    /// The points it runs at.
    pub at: BTreeSet<InterceptionPoint>,
    /// Whether the document states `at` (otherwise: every surface point).
    pub at_stated: bool,
    /// Its bound in milliseconds; `None` is unbounded.
    pub timeout_ms: Option<u64>,
}

impl ResolvedBinding {
    /// The bound as a duration; `None` is unbounded.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(Duration::from_millis)
    }
}

/// A declaration resolved against a host: what a declared host runs.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedDeclaration {
    /// The document's own contract version (never a migrated one).
    pub declaration: String,
    /// The wire version (the loader's when absent).
    pub spec: String,
    /// The operator label.
    pub id: Option<String>,
    /// The informative host block.
    pub host: Option<HostInfo>,
    /// The mode.
    pub mode: Mode,
    /// The composition, knobs resolved as §7.2 resolves them.
    pub composition: Composition,
    /// `jcs-sha256`, a registered custom name, or `None` (identity-unbound).
    pub identity_provider: Option<String>,
    /// The registered approval resolver, if any.
    pub approval_resolver: Option<String>,
    /// The registered approval redactor, if any.
    pub approval_redactor: Option<String>,
    /// The tool-seam posture.
    pub posture: Posture,
    /// The default interceptor bound; `None` is unbounded.
    pub interceptor_ms: Option<u64>,
    /// The approval resolver bound; `None` is unbounded.
    pub approval_resolver_ms: Option<u64>,
    /// The in-memory record buffer bound; `None` is unbounded.
    pub max_buffered: Option<u64>,
    /// The surface.
    pub surface: ResolvedSurface,
    /// The bindings, in dispatch order.
    pub bindings: Vec<ResolvedBinding>,
    /// Kept verbatim, never read.
    pub extensions: Map<String, Value>,
}

impl ResolvedDeclaration {
    /// The resolved form as JSON: sets sorted (points in lifecycle order),
    /// bindings in document order, `$schema` dropped.
    pub fn to_json(&self) -> Value {
        let mut composition = Map::new();
        composition.insert("profile".into(), self.composition.profile.as_str().into());
        if let Some(k) = self.composition.on_approval {
            composition.insert("on_approval".into(), k.as_str().into());
        }
        if let Some(k) = self.composition.on_disagreement {
            composition.insert("on_disagreement".into(), k.as_str().into());
        }
        if let Some(k) = self.composition.on_transform_conflict {
            composition.insert("on_transform_conflict".into(), k.as_str().into());
        }
        let opt = |s: &Option<String>| s.as_deref().map_or(Value::Null, Value::from);
        let num = |n: Option<u64>| n.map_or(Value::Null, Value::from);
        let configuration = serde_json::json!({
            "mode": self.mode.as_str(),
            "composition": composition,
            "identity_provider": opt(&self.identity_provider),
            "approval": {"resolver": opt(&self.approval_resolver), "redactor": opt(&self.approval_redactor)},
            "posture": {"tool_seam_host_error": self.posture.as_str()},
            "timeouts": {"interceptor_ms": num(self.interceptor_ms), "approval_resolver_ms": num(self.approval_resolver_ms)},
            "records": {"max_buffered": num(self.max_buffered)},
        });
        let bindings: Vec<Value> = self
            .bindings
            .iter()
            .map(|b| {
                serde_json::json!({
                    "id": b.id,
                    "kind": b.kind,
                    "config": b.config,
                    "at": b.at.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
                    "timeout_ms": num(b.timeout_ms),
                })
            })
            .collect();
        let mut m = Map::new();
        m.insert("declaration".into(), self.declaration.as_str().into());
        m.insert("spec".into(), self.spec.as_str().into());
        if let Some(id) = &self.id {
            m.insert("id".into(), id.as_str().into());
        }
        if let Some(h) = &self.host {
            let mut host = Map::new();
            host.insert("name".into(), h.name.as_str().into());
            if let Some(v) = &h.version {
                host.insert("version".into(), v.as_str().into());
            }
            m.insert("host".into(), Value::Object(host));
        }
        m.insert("configuration".into(), configuration);
        m.insert("surface".into(), self.surface.to_json());
        m.insert("bindings".into(), Value::Array(bindings));
        m.insert("extensions".into(), Value::Object(self.extensions.clone()));
        Value::Object(m)
    }

    /// RFC 8785 canonical JSON of [`Self::to_json`]: the equivalence oracle
    /// (§7.7.7).
    pub fn canonical_json(&self) -> String {
        // Every integer in an accepted document is within ±(2^53 − 1) and it
        // nests at most 32 levels, so canonicalization cannot fail.
        to_canonical_string(&self.to_json()).unwrap_or_default()
    }

    /// The `jcs-sha256` digest of the resolved form: equal for every
    /// document that resolves alike (§7.7.7), so it says what a host runs,
    /// not which document it was given; for that, see
    /// [`Document::digest`](crate::Document::digest) (§7.7.8).
    pub fn digest(&self) -> String {
        hookwire::canonical::sha256_identity(self.canonical_json().as_bytes())
    }
}
