//! Resolution (§7.7.3 "Resolved form"): a validated document against the
//! host's surface and the names it registered — every default filled, the
//! consistency rules re-run on the filled surface (step 7), the surface and
//! the configuration checked against the code (step 8), and every name
//! looked up (steps 9 and 10).
//!
//! What the host registered is seen through [`Catalog`], so that this
//! crate needs nothing of the host: `hookwire-client`'s `Registry`
//! implements it. The result is a [`ResolvedDeclaration`] (see
//! `resolved`); running the kind resolvers (step 11) is the host's.

use hookwire::{Composition, Mode, OnApproval, Profile, SPEC_VERSION, Synthesis};
use serde_json::{Map, Value};

use super::members::{obj, points};
use super::names::JCS_SHA256;
use super::resolved::{DEFAULT_INTERCEPTOR_MS, HostInfo, ResolvedBinding, ResolvedDeclaration};
use super::surface::{HostSurface, Posture, ResolvedSurface, resolved_knobs};
use crate::consistency::{SurfaceView, check_consistency};
use crate::refusal::{Finding, Refusal, RefusalClass};

/// What a host registered in code, as resolution sees it (§7.7.5): its
/// code surface and whether a name is registered. Implemented by the
/// host's registry, which also holds what the names stand for.
pub trait Catalog {
    /// The code surface documents are resolved against.
    fn surface(&self) -> &HostSurface;
    /// Whether a custom identity provider `name` is registered
    /// ([`JCS_SHA256`] is built in and never asked for).
    fn has_identity_provider(&self, name: &str) -> bool;
    /// Whether an approval resolver `name` is registered.
    fn has_approval_resolver(&self, name: &str) -> bool;
    /// Whether an approval redactor `name` is registered.
    fn has_approval_redactor(&self, name: &str) -> bool;
    /// Whether a kind resolver is registered for `kind`.
    fn has_kind(&self, kind: &str) -> bool;
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
    catalog: &(impl Catalog + ?Sized),
) -> Result<ResolvedDeclaration, Refusal> {
    let code = catalog.surface();
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
    check_names(&resolved, catalog)?;
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

/// Steps 9 and 10: every name the resolved document uses is registered.
fn check_names(
    resolved: &ResolvedDeclaration,
    catalog: &(impl Catalog + ?Sized),
) -> Result<(), Refusal> {
    let mut found = Vec::new();
    if let Some(p) = resolved.identity_provider.as_deref()
        && p != JCS_SHA256
        && !catalog.has_identity_provider(p)
    {
        found.push(Finding::new(
            "/configuration/identity_provider",
            format!("no identity provider named {p:?} is registered"),
        ));
    }
    if let Some(r) = &resolved.approval_resolver
        && !catalog.has_approval_resolver(r)
    {
        found.push(Finding::new(
            "/configuration/approval/resolver",
            format!("no approval resolver named {r:?} is registered"),
        ));
    }
    if let Some(r) = &resolved.approval_redactor
        && !catalog.has_approval_redactor(r)
    {
        found.push(Finding::new(
            "/configuration/approval/redactor",
            format!("no approval redactor named {r:?} is registered"),
        ));
    }
    Refusal::check(RefusalClass::ReferenceUnresolved, found)?;
    let unknown = resolved
        .bindings
        .iter()
        .enumerate()
        .filter(|(_, b)| !catalog.has_kind(&b.kind))
        .map(|(i, b)| {
            Finding::new(
                format!("/bindings/{i}/kind"),
                format!(
                    "no resolver is registered for kind {:?} (binding {:?})",
                    b.kind, b.id
                ),
            )
        })
        .collect();
    Refusal::check(RefusalClass::KindUnknown, unknown)
}
