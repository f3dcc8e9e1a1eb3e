//! Step 6: each member's type, enum, pattern and range, the required-iff
//! rules, and the document-wide integer domain.

use std::collections::BTreeSet;

use hookwire::canonical::MAX_SAFE_INTEGER;
use hookwire::{InterceptionPoint, Profile};
use serde_json::{Map, Value};

use super::closed::{APPROVAL, TIMEOUTS};
use super::version::parse_version;
use crate::limits::{MAX_BINDINGS, MAX_DETAIL_CHARS, MAX_ID_CHARS, MAX_TIMEOUT_MS};
use crate::names::{is_custom_provider, is_kind, is_reference};
use crate::refusal::{Finding, Refusal, RefusalClass, pointer};
use crate::surface::{CAPABILITIES, KNOBS, consulted_knobs, knob_values};

/// Where a finding about a value inside a binding's `config` points: at
/// the `config` member itself, so no key written inside it is repeated.
pub(crate) fn outside_config(p: &str) -> String {
    let mut parts = p.splitn(5, '/');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(""), Some("bindings"), Some(i), Some("config")) => format!("/bindings/{i}/config"),
        _ => p.to_owned(),
    }
}

/// Collects step 6 findings.
struct Fields {
    found: Vec<Finding>,
}

impl Fields {
    fn bad(&mut self, at: impl Into<String>, detail: impl Into<String>) {
        self.found.push(Finding::new(at, detail));
    }

    fn string<'a>(&mut self, v: Option<&'a Value>, at: &str) -> Option<&'a str> {
        match v? {
            Value::String(s) => Some(s),
            _ => {
                self.bad(at, "must be a string");
                None
            }
        }
    }

    fn object<'a>(&mut self, v: Option<&'a Value>, at: &str) -> Option<&'a Map<String, Value>> {
        match v? {
            Value::Object(m) => Some(m),
            _ => {
                self.bad(at, "must be an object");
                None
            }
        }
    }

    fn one_of(&mut self, v: Option<&Value>, at: &str, allowed: &[&str]) {
        if let Some(s) = self.string(v, at)
            && !allowed.contains(&s)
        {
            self.bad(at, format!("must be one of {}", allowed.join(", ")));
        }
    }

    /// An integer token in `1..=max`, or `null`.
    fn integer_or_null(&mut self, v: Option<&Value>, at: &str, max: u64) {
        match v {
            None | Some(Value::Null) => {}
            Some(n) => {
                if !n.as_u64().is_some_and(|n| (1..=max).contains(&n)) {
                    self.bad(
                        at,
                        format!("must be an integer from 1 to {max} written without a fraction or exponent, or null"),
                    );
                }
            }
        }
    }

    /// A set of strings from `allowed` (any string when empty), at least
    /// `min` of them, each once.
    fn set(&mut self, v: Option<&Value>, at: &str, allowed: &[&str], min: usize, max: usize) {
        let Some(v) = v else { return };
        let Some(items) = v.as_array() else {
            self.bad(at, "must be an array");
            return;
        };
        let mut seen = BTreeSet::new();
        for (i, item) in items.iter().enumerate() {
            let here = format!("{at}/{i}");
            match item.as_str() {
                None => self.bad(here, "must be a string"),
                Some(s) if !allowed.is_empty() && !allowed.contains(&s) => {
                    self.bad(here, format!("must be one of {}", allowed.join(", ")));
                }
                Some(s) => {
                    if !seen.insert(s) {
                        self.bad(here, "listed twice; the member is a set");
                    }
                }
            }
        }
        if items.len() < min || items.len() > max {
            self.bad(at, format!("must list {min} to {max} items"));
        }
    }
}

fn point_names() -> [&'static str; 8] {
    InterceptionPoint::ALL.map(InterceptionPoint::as_str)
}

const PROFILES: [&str; 4] = [
    "sequential/first_deny",
    "sequential/run_all",
    "parallel/strictest",
    "parallel/unanimous",
];

/// Step 6: types, enums, patterns, ranges, required-iff rules, and the
/// document-wide integer domain (`unsafe_integers` from the parser).
pub(crate) fn check_fields(
    doc: &Map<String, Value>,
    unsafe_integers: &[String],
) -> Result<(), Refusal> {
    let mut f = Fields { found: Vec::new() };
    f.string(doc.get("$schema"), "/$schema");
    if let Some(id) = f.string(doc.get("id"), "/id") {
        let mut bytes = id.bytes();
        let ok = id.len() <= MAX_ID_CHARS
            && bytes
                .next()
                .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && bytes.all(|b| {
                b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
            });
        if !ok {
            f.bad("/id", "must match ^[a-z0-9][a-z0-9._-]{0,63}$");
        }
    }
    if let Some(host) = f.object(doc.get("host"), "/host") {
        match f.string(host.get("name"), "/host/name") {
            None if !host.contains_key("name") => {
                f.bad("/host/name", "required when host is present")
            }
            Some(n)
                if n.is_empty()
                    || n.len() > 64
                    || !n.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                    }) =>
            {
                f.bad("/host/name", "must match ^[a-z0-9_-]{1,64}$");
            }
            _ => {}
        }
        if let Some(v) = f.string(host.get("version"), "/host/version")
            && (v.is_empty() || v.chars().count() > 64)
        {
            f.bad("/host/version", "must be 1 to 64 characters");
        }
    }
    if let Some(cfg) = f.object(doc.get("configuration"), "/configuration") {
        configuration(&mut f, cfg);
    }
    if let Some(surface) = f.object(doc.get("surface"), "/surface") {
        surface_fields(&mut f, surface);
    }
    match doc.get("bindings") {
        None => f.bad("/bindings", "required"),
        Some(Value::Array(bindings)) => {
            if bindings.len() > MAX_BINDINGS {
                f.bad(
                    "/bindings",
                    format!("must list at most {MAX_BINDINGS} bindings"),
                );
            }
            for (i, b) in bindings.iter().enumerate() {
                binding(&mut f, b, &format!("/bindings/{i}"));
            }
        }
        Some(_) => f.bad("/bindings", "must be an array"),
    }
    if let Some(ext) = f.object(doc.get("extensions"), "/extensions") {
        for key in ext.keys() {
            let mut bytes = key.bytes();
            let ok = bytes.next().is_some_and(|b| b.is_ascii_lowercase())
                && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if !ok {
                f.bad(
                    pointer("/extensions", key),
                    "extension keys must match ^[a-z][a-z0-9_]*$",
                );
            }
        }
    }
    for at in unsafe_integers {
        let at = outside_config(at);
        if !f.found.iter().any(|x| x.pointer == at) {
            f.bad(
                at,
                "an integer token exceeds 2^53 - 1 and has no canonical form; string-encode 64-bit values (§4.4)",
            );
        }
    }
    Refusal::check(RefusalClass::InvalidField, f.found)
}

fn configuration(f: &mut Fields, cfg: &Map<String, Value>) {
    f.one_of(
        cfg.get("mode"),
        "/configuration/mode",
        &["enforce", "evaluate_only"],
    );
    if let Some(c) = f.object(cfg.get("composition"), "/configuration/composition") {
        f.one_of(
            c.get("profile"),
            "/configuration/composition/profile",
            &PROFILES,
        );
        for knob in KNOBS {
            f.one_of(
                c.get(knob),
                &pointer("/configuration/composition", knob),
                knob_values(knob),
            );
        }
    }
    match cfg.get("identity_provider") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "jcs-sha256" || is_custom_provider(s) => {}
        Some(Value::String(_)) => f.bad(
            "/configuration/identity_provider",
            "must be \"jcs-sha256\", null, or a custom name matching ^[a-z][a-z0-9_-]{0,63}$ that does not start with jcs (§10.1)",
        ),
        Some(_) => f.bad("/configuration/identity_provider", "must be a string or null"),
    }
    if let Some(a) = f.object(cfg.get("approval"), "/configuration/approval") {
        for key in APPROVAL {
            let at = pointer("/configuration/approval", key);
            match a.get(*key) {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if is_reference(s) => {}
                Some(Value::String(_)) => f.bad(at, "must match ^[a-z][a-z0-9_-]{0,63}$"),
                Some(_) => f.bad(at, "must be a string or null"),
            }
        }
    }
    if let Some(p) = f.object(cfg.get("posture"), "/configuration/posture") {
        f.one_of(
            p.get("tool_seam_host_error"),
            "/configuration/posture/tool_seam_host_error",
            &["continue", "terminate"],
        );
    }
    if let Some(t) = f.object(cfg.get("timeouts"), "/configuration/timeouts") {
        for key in TIMEOUTS {
            f.integer_or_null(
                t.get(*key),
                &pointer("/configuration/timeouts", key),
                MAX_TIMEOUT_MS,
            );
        }
    }
    if let Some(r) = f.object(cfg.get("records"), "/configuration/records") {
        f.integer_or_null(
            r.get("max_buffered"),
            "/configuration/records/max_buffered",
            MAX_SAFE_INTEGER,
        );
    }
}

fn surface_fields(f: &mut Fields, surface: &Map<String, Value>) {
    f.set(
        surface.get("interception_points"),
        "/surface/interception_points",
        &point_names(),
        4,
        8,
    );
    f.set(
        surface.get("capabilities"),
        "/surface/capabilities",
        CAPABILITIES,
        0,
        CAPABILITIES.len(),
    );
    if let Some(profiles) = f.object(surface.get("profiles"), "/surface/profiles") {
        for (name, knobs) in profiles {
            let at = pointer("/surface/profiles", name);
            let Ok(profile) = name.parse::<Profile>() else {
                continue;
            };
            if let Some(knobs) = f.object(Some(knobs), &at) {
                for knob in consulted_knobs(profile) {
                    f.set(
                        knobs.get(*knob),
                        &pointer(&at, knob),
                        knob_values(knob),
                        1,
                        2,
                    );
                }
            }
        }
    }
    let buffered = match surface.get("buffered_output") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            f.bad("/surface/buffered_output", "must be a boolean");
            true
        }
    };
    if let Some(bound) = f.string(surface.get("exposure_bound"), "/surface/exposure_bound")
        && (bound.is_empty() || bound.chars().count() > MAX_DETAIL_CHARS)
    {
        f.bad(
            "/surface/exposure_bound",
            format!("must be 1 to {MAX_DETAIL_CHARS} characters"),
        );
    }
    match (buffered, surface.contains_key("exposure_bound")) {
        (true, true) => f.bad(
            "/surface/exposure_bound",
            "allowed only with buffered_output: false",
        ),
        (false, false) => f.bad(
            "/surface/exposure_bound",
            "required with buffered_output: false (§12.1a)",
        ),
        _ => {}
    }
    if let Some(v) = surface.get("declaration_versions") {
        f.set(Some(v), "/surface/declaration_versions", &[], 1, usize::MAX);
        for (i, item) in v.as_array().into_iter().flatten().enumerate() {
            if let Some(s) = item.as_str()
                && parse_version(s, "agent-hooks-declaration/").is_none()
            {
                f.bad(
                    format!("/surface/declaration_versions/{i}"),
                    "must match ^agent-hooks-declaration/[0-9]+\\.[0-9]+$",
                );
            }
        }
    }
}

fn binding(f: &mut Fields, b: &Value, at: &str) {
    let Some(b) = f.object(Some(b), at) else {
        return;
    };
    match f.string(b.get("id"), &pointer(at, "id")) {
        None if !b.contains_key("id") => f.bad(pointer(at, "id"), "required"),
        Some(id) if !is_reference(id) => {
            f.bad(pointer(at, "id"), "must match ^[a-z][a-z0-9_-]{0,63}$")
        }
        _ => {}
    }
    match f.string(b.get("kind"), &pointer(at, "kind")) {
        None if !b.contains_key("kind") => f.bad(pointer(at, "kind"), "required"),
        Some(kind) if !is_kind(kind) => f.bad(
            pointer(at, "kind"),
            "must match ^[a-z][a-z0-9_-]*(\\.[a-z][a-z0-9_-]*)+$ with at most 128 characters",
        ),
        _ => {}
    }
    f.set(b.get("at"), &pointer(at, "at"), &point_names(), 1, 8);
    f.integer_or_null(
        b.get("timeout_ms"),
        &pointer(at, "timeout_ms"),
        MAX_TIMEOUT_MS,
    );
}
