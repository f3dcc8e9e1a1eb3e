//! Step 5: no unknown member at a closed level. Every object of the
//! document is closed except `bindings[].config` and the values under
//! `extensions`; the knobs under `surface.profiles` are closed to the ones
//! their profile consults.

use hookwire::Profile;
use serde_json::{Map, Value};

use crate::members::obj;
use crate::refusal::{Finding, Refusal, RefusalClass, pointer};
use crate::surface::consulted_knobs;

/// The members of each closed level.
const ROOT: &[&str] = &[
    "$schema",
    "declaration",
    "spec",
    "id",
    "host",
    "configuration",
    "surface",
    "bindings",
    "extensions",
];
const HOST: &[&str] = &["name", "version"];
const CONFIGURATION: &[&str] = &[
    "mode",
    "composition",
    "identity_provider",
    "approval",
    "posture",
    "timeouts",
    "records",
];
const COMPOSITION: &[&str] = &[
    "profile",
    "on_approval",
    "on_disagreement",
    "on_transform_conflict",
];
pub(super) const APPROVAL: &[&str] = &["resolver", "redactor"];
const POSTURE: &[&str] = &["tool_seam_host_error"];
pub(super) const TIMEOUTS: &[&str] = &["interceptor_ms", "approval_resolver_ms"];
const RECORDS: &[&str] = &["max_buffered"];
const SURFACE: &[&str] = &[
    "interception_points",
    "capabilities",
    "profiles",
    "buffered_output",
    "exposure_bound",
    "declaration_versions",
];
const BINDING: &[&str] = &["id", "kind", "config", "at", "timeout_ms"];

/// Step 5: no unknown member at a closed level (every object except
/// `bindings[].config` and the values under `extensions`).
pub(crate) fn check_closed(doc: &Map<String, Value>) -> Result<(), Refusal> {
    let mut found = Vec::new();
    let closed = |found: &mut Vec<Finding>, m: &Map<String, Value>, allowed: &[&str], at: &str| {
        for key in m.keys().filter(|k| !allowed.contains(&k.as_str())) {
            found.push(Finding::new(pointer(at, key), "unknown member"));
        }
    };
    closed(&mut found, doc, ROOT, "");
    if let Some(host) = obj(doc, "host") {
        closed(&mut found, host, HOST, "/host");
    }
    if let Some(cfg) = obj(doc, "configuration") {
        closed(&mut found, cfg, CONFIGURATION, "/configuration");
        for (key, allowed) in [
            ("composition", COMPOSITION),
            ("approval", APPROVAL),
            ("posture", POSTURE),
            ("timeouts", TIMEOUTS),
            ("records", RECORDS),
        ] {
            if let Some(m) = obj(cfg, key) {
                closed(&mut found, m, allowed, &pointer("/configuration", key));
            }
        }
    }
    if let Some(surface) = obj(doc, "surface") {
        closed(&mut found, surface, SURFACE, "/surface");
        if let Some(profiles) = obj(surface, "profiles") {
            for (name, knobs) in profiles {
                let at = pointer("/surface/profiles", name);
                match name.parse::<Profile>() {
                    Err(_) => found.push(Finding::new(at, "unknown member: not a §7.2 profile")),
                    Ok(profile) => {
                        if let Some(knobs) = knobs.as_object() {
                            closed(&mut found, knobs, consulted_knobs(profile), &at);
                        }
                    }
                }
            }
        }
    }
    if let Some(bindings) = doc.get("bindings").and_then(Value::as_array) {
        for (i, b) in bindings.iter().enumerate() {
            if let Some(b) = b.as_object() {
                closed(&mut found, b, BINDING, &format!("/bindings/{i}"));
            }
        }
    }
    Refusal::check(RefusalClass::UnknownField, found)
}
