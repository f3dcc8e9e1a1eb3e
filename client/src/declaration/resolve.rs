//! Resolution (§7.7.3 "Resolved form"): a validated document against the
//! host's surface and registry — every default filled, the consistency
//! rules re-run on the filled surface (step 7), the surface and the
//! configuration checked against the code (step 8), and every name looked
//! up in the registry (steps 9 and 10).
//!
//! The resolved form's canonical JSON is the equivalence oracle of §7.7.7:
//! two load paths are equivalent exactly when they resolve to the same
//! bytes.

use std::collections::BTreeSet;
use std::time::Duration;

use hookwire::canonical::to_canonical_string;
use hookwire::{
    Composition, InterceptionPoint, Mode, OnApproval, Profile, SPEC_VERSION, Synthesis,
};
use serde_json::{Map, Value};

use super::document::{SurfaceView, check_consistency, obj, points};
use super::refusal::{Finding, Refusal, RefusalClass};
use super::registry::Registry;
use super::surface::{HostSurface, Posture, ResolvedSurface, resolved_knobs};
use crate::identity::JCS_SHA256;

/// The §7.7.3 default of `timeouts.interceptor_ms`.
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

    /// The `jcs-sha256` digest of the resolved form: what an operator logs
    /// at load to match a running host to a pushed document (§7.7.8).
    pub fn digest(&self) -> String {
        hookwire::canonical::sha256_identity(self.canonical_json().as_bytes())
    }
}

fn int_or_null(m: Option<&Map<String, Value>>, key: &str) -> Option<Option<u64>> {
    match m?.get(key)? {
        Value::Null => Some(None),
        v => Some(v.as_u64()),
    }
}

/// Steps 7 (filled) to 10.
pub(crate) fn resolve(
    doc: &Map<String, Value>,
    registry: &Registry,
) -> Result<ResolvedDeclaration, Refusal> {
    let code = registry.surface();
    code.check()?;
    let stated_surface = obj(doc, "surface");
    let surface = ResolvedSurface::fill(stated_surface, code);
    check_consistency(
        doc,
        &SurfaceView {
            points: Some(surface.interception_points.clone()),
            capabilities: Some(surface.capabilities.clone()),
            buffered: surface.buffered_output,
            versions: Some(surface.declaration_versions.clone()),
            stated: stated_surface,
        },
    )?;
    let resolved = fill(doc, surface);
    let posture_stated = obj(doc, "configuration")
        .and_then(|c| obj(c, "posture"))
        .is_some_and(|p| p.contains_key("tool_seam_host_error"));
    check_supported(&resolved, code, posture_stated)?;
    registry.check_names(&resolved)?;
    Ok(resolved)
}

fn fill(doc: &Map<String, Value>, surface: ResolvedSurface) -> ResolvedDeclaration {
    let cfg = obj(doc, "configuration");
    let sub = |key: &str| cfg.and_then(|c| obj(c, key));
    let str_of = |m: Option<&Map<String, Value>>, key: &str| {
        m.and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let composition_doc = sub("composition");
    let profile = composition_doc
        .and_then(|c| c.get("profile"))
        .and_then(Value::as_str)
        .and_then(|p| p.parse().ok())
        .unwrap_or(Profile::SequentialFirstDeny);
    let mut composition = Composition::new(profile);
    for (knob, value) in resolved_knobs(composition_doc, profile) {
        let synthesis = if value == "approval" {
            Synthesis::Approval
        } else {
            Synthesis::Deny
        };
        match knob {
            "on_approval" => {
                composition.on_approval = Some(if value == "resume" {
                    OnApproval::Resume
                } else {
                    OnApproval::Stop
                });
            }
            "on_disagreement" => composition.on_disagreement = Some(synthesis),
            _ => composition.on_transform_conflict = Some(synthesis),
        }
    }
    let interceptor_ms =
        int_or_null(sub("timeouts"), "interceptor_ms").unwrap_or(Some(DEFAULT_INTERCEPTOR_MS));
    let bindings = doc
        .get("bindings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(|b| {
            let at = points(b.get("at"));
            ResolvedBinding {
                id: str_of(Some(b), "id").unwrap_or_default(),
                kind: str_of(Some(b), "kind").unwrap_or_default(),
                config: b
                    .get("config")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new())),
                at_stated: at.is_some(),
                at: at.unwrap_or_else(|| surface.interception_points.clone()),
                timeout_ms: int_or_null(Some(b), "timeout_ms").unwrap_or(interceptor_ms),
            }
        })
        .collect();
    ResolvedDeclaration {
        declaration: str_of(Some(doc), "declaration").unwrap_or_default(),
        spec: str_of(Some(doc), "spec").unwrap_or_else(|| SPEC_VERSION.to_owned()),
        id: str_of(Some(doc), "id"),
        host: obj(doc, "host").map(|h| HostInfo {
            name: str_of(Some(h), "name").unwrap_or_default(),
            version: str_of(Some(h), "version"),
        }),
        mode: match str_of(cfg, "mode").as_deref() {
            Some("evaluate_only") => Mode::EvaluateOnly,
            _ => Mode::Enforce,
        },
        composition,
        identity_provider: match cfg.and_then(|c| c.get("identity_provider")) {
            None => Some(JCS_SHA256.to_owned()),
            Some(v) => v.as_str().map(str::to_owned),
        },
        approval_resolver: str_of(sub("approval"), "resolver"),
        approval_redactor: str_of(sub("approval"), "redactor"),
        posture: match str_of(sub("posture"), "tool_seam_host_error").as_deref() {
            Some("terminate") => Posture::Terminate,
            _ => Posture::Continue,
        },
        interceptor_ms,
        approval_resolver_ms: int_or_null(sub("timeouts"), "approval_resolver_ms")
            .unwrap_or(interceptor_ms),
        max_buffered: int_or_null(sub("records"), "max_buffered").flatten(),
        surface,
        bindings,
        extensions: obj(doc, "extensions").cloned().unwrap_or_default(),
    }
}

/// Step 8: everything the resolved surface and configuration name is
/// honoured by the host's code, the filled defaults included.
fn check_supported(
    resolved: &ResolvedDeclaration,
    code: &HostSurface,
    posture_stated: bool,
) -> Result<(), Refusal> {
    let mut found = Vec::new();
    resolved.surface.unsupported(code, &mut found);
    let c = resolved.composition;
    match code.profiles.get(&c.profile) {
        None => found.push(Finding::new(
            "/configuration/composition/profile",
            format!("the host does not support {}", c.profile),
        )),
        Some(knobs) => {
            let values = [
                ("on_approval", c.on_approval.map(OnApproval::as_str)),
                ("on_disagreement", c.on_disagreement.map(Synthesis::as_str)),
                (
                    "on_transform_conflict",
                    c.on_transform_conflict.map(Synthesis::as_str),
                ),
            ];
            for (knob, value) in values {
                if let Some(v) = value
                    && !knobs.get(knob).contains(v)
                {
                    found.push(Finding::new(
                        format!("/configuration/composition/{knob}"),
                        format!(
                            "the host does not support this {knob} value under {}",
                            c.profile
                        ),
                    ));
                }
            }
        }
    }
    if resolved.posture != code.tool_seam_host_error {
        found.push(Finding::new(
            "/configuration/posture/tool_seam_host_error",
            format!(
                "the host implements the {} posture{}",
                code.tool_seam_host_error.as_str(),
                if posture_stated {
                    ""
                } else {
                    " (the document does not state it; continue is the default)"
                }
            ),
        ));
    }
    Refusal::check(RefusalClass::SurfaceUnsupported, found)
}
