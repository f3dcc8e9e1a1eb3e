//! The document as written: steps 3 to 7 of the load pipeline, checked on
//! the members the document states (the version, the `spec` wire version,
//! the closed levels, each member's type and range, and the internal
//! consistency rules that need no host to check).
//!
//! Nothing here consults the host. Resolution against the host's surface
//! and registry — filling defaults, and re-running the consistency rules on
//! the filled surface — happens in [`super::resolve`].

use std::collections::BTreeSet;

use hookwire::{InterceptionPoint, Profile, SPEC_VERSION};
use serde_json::{Map, Value};

use super::refusal::{Finding, Refusal, RefusalClass, pointer};
use super::surface::{
    CAPABILITIES, FLOOR_POINTS, KNOBS, consulted_knobs, knob_values, stated_profiles,
};
use super::{
    MAX_BINDINGS, MAX_DETAIL_CHARS, MAX_ID_CHARS, MAX_KIND_CHARS, MAX_TIMEOUT_MS,
    SUPPORTED_DECLARATION_VERSIONS,
};
use hookwire::canonical::MAX_SAFE_INTEGER;

/// Step 3: `declaration` present, a string, and accepted.
pub(crate) fn check_version(doc: &Map<String, Value>) -> Result<(), Refusal> {
    let detail = match doc.get("declaration") {
        Some(Value::String(v)) if SUPPORTED_DECLARATION_VERSIONS.contains(&v.as_str()) => {
            return Ok(());
        }
        None => "the member is missing",
        Some(Value::String(_)) => "this loader does not accept that version",
        Some(_) => "must be a string",
    };
    Err(Refusal::one(
        RefusalClass::VersionUnsupported,
        "/declaration",
        format!(
            "{detail}; accepted: {}",
            SUPPORTED_DECLARATION_VERSIONS.join(", ")
        ),
    ))
}

/// `<prefix><major>.<minor>` with decimal parts of at most 9 digits.
pub(crate) fn parse_version(s: &str, prefix: &str) -> Option<(u32, u32)> {
    let (major, minor) = s.strip_prefix(prefix)?.split_once('.')?;
    let part = |p: &str| {
        (!p.is_empty() && p.len() <= 9 && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse().ok())
            .flatten()
    };
    Some((part(major)?, part(minor)?))
}

/// Step 4: `spec`, when present, has this loader's major and no higher
/// minor.
pub(crate) fn check_spec(doc: &Map<String, Value>) -> Result<(), Refusal> {
    let Some(spec) = doc.get("spec") else {
        return Ok(());
    };
    let ours = parse_version(SPEC_VERSION, "agent-hooks/").unwrap_or((0, 1));
    let detail = match spec.as_str().map(|s| parse_version(s, "agent-hooks/")) {
        Some(Some((major, minor))) if major == ours.0 && minor <= ours.1 => return Ok(()),
        Some(Some(_)) => format!("this loader implements {SPEC_VERSION}"),
        Some(None) => "must have the form agent-hooks/<major>.<minor>".to_owned(),
        None => "must be a string".to_owned(),
    };
    Err(Refusal::one(RefusalClass::SpecUnsupported, "/spec", detail))
}

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
const APPROVAL: &[&str] = &["resolver", "redactor"];
const POSTURE: &[&str] = &["tool_seam_host_error"];
const TIMEOUTS: &[&str] = &["interceptor_ms", "approval_resolver_ms"];
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

pub(crate) fn obj<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Map<String, Value>> {
    m.get(key).and_then(Value::as_object)
}

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

/// `^[a-z][a-z0-9_-]{0,63}$`: binding ids and registered names.
pub(crate) fn is_reference(s: &str) -> bool {
    let mut bytes = s.bytes();
    s.len() <= MAX_ID_CHARS
        && bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// `^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)+$`, at most 128 characters.
pub(crate) fn is_kind(s: &str) -> bool {
    s.len() <= MAX_KIND_CHARS
        && s.split('.').count() >= 2
        && s.split('.').all(|seg| {
            let mut bytes = seg.bytes();
            bytes.next().is_some_and(|b| b.is_ascii_lowercase())
                && bytes
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        })
}

/// The §10.1 custom provider name rule with the §7.7.3 length bound.
pub(crate) fn is_custom_provider(s: &str) -> bool {
    is_reference(s) && !s.starts_with("jcs")
}

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

/// The surface step 7 checks: the document's stated members, or the
/// surface filled from the host when resolving.
pub(crate) struct SurfaceView<'a> {
    pub(crate) points: Option<BTreeSet<InterceptionPoint>>,
    pub(crate) capabilities: Option<BTreeSet<String>>,
    pub(crate) buffered: bool,
    pub(crate) versions: Option<BTreeSet<String>>,
    /// Which surface members the document itself states.
    pub(crate) stated: Option<&'a Map<String, Value>>,
}

pub(crate) fn strings(v: Option<&Value>) -> Option<BTreeSet<String>> {
    Some(
        v?.as_array()?
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
    )
}

pub(crate) fn points(v: Option<&Value>) -> Option<BTreeSet<InterceptionPoint>> {
    Some(
        v?.as_array()?
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|s| s.parse().ok())
            .collect(),
    )
}

impl<'a> SurfaceView<'a> {
    /// The members the document states, nothing filled.
    pub(crate) fn stated(doc: &'a Map<String, Value>) -> Self {
        let s = obj(doc, "surface");
        Self {
            points: s.and_then(|s| points(s.get("interception_points"))),
            capabilities: s.and_then(|s| strings(s.get("capabilities"))),
            buffered: s
                .and_then(|s| s.get("buffered_output"))
                .and_then(Value::as_bool)
                .unwrap_or(true),
            versions: s.and_then(|s| strings(s.get("declaration_versions"))),
            stated: s,
        }
    }

    /// The note a finding on a member the document does not state carries
    /// (§7.7.4).
    fn note(&self, member: &str) -> &'static str {
        if member.is_empty() {
            return "";
        }
        match self.stated {
            Some(s) if s.contains_key(member) => "",
            Some(_) if matches!(member, "buffered_output" | "exposure_bound") => {
                " (the document does not state this member; its default applies)"
            }
            _ => " (the document does not state this member; it was filled from the host surface)",
        }
    }
}

/// Step 7 over `surface`: the §3.2 floor and pairs, the capability
/// pairs, `incremental_output`, knobs under the profile that consults
/// them, the composition inside a stated `surface.profiles`, the own
/// version in `declaration_versions`, `at` within the surface, unique
/// binding ids.
pub(crate) fn check_consistency(
    doc: &Map<String, Value>,
    surface: &SurfaceView<'_>,
) -> Result<(), Refusal> {
    let mut found = Vec::new();
    let mut bad = |at: &str, member: &str, detail: String| {
        found.push(Finding::new(
            at,
            format!("{detail}{}", surface.note(member)),
        ));
    };
    if let Some(pts) = &surface.points {
        for p in FLOOR_POINTS {
            if !pts.contains(&p) {
                bad(
                    "/surface/interception_points",
                    "interception_points",
                    format!("the §3.2 floor requires {p}"),
                );
            }
        }
        let has = |p| pts.contains(&p);
        use InterceptionPoint as P;
        for (a, b, cap) in [
            (P::PreModelCall, P::PostModelCall, "model_calls"),
            (P::PreToolCall, P::PostToolCall, "tool_calls"),
        ] {
            if has(a) != has(b) {
                bad(
                    "/surface/interception_points",
                    "interception_points",
                    format!("{a} and {b} are omitted together or not at all (§3.2)"),
                );
            }
            if let Some(caps) = &surface.capabilities
                && caps.contains(cap) != (has(a) && has(b))
            {
                bad(
                    "/surface/capabilities",
                    "capabilities",
                    format!("{cap} is listed if and only if both {a} and {b} are (§3.2)"),
                );
            }
        }
    }
    if let Some(caps) = &surface.capabilities
        && caps.contains("incremental_output")
        && surface.buffered
    {
        bad(
            "/surface/capabilities",
            "capabilities",
            "incremental_output requires buffered_output: false (§12.1a)".into(),
        );
    }

    let composition = obj(doc, "configuration").and_then(|c| obj(c, "composition"));
    let profile = composition
        .and_then(|c| c.get("profile"))
        .and_then(Value::as_str)
        .and_then(|p| p.parse().ok())
        .unwrap_or(Profile::SequentialFirstDeny);
    for knob in KNOBS {
        if composition.is_some_and(|c| c.contains_key(knob))
            && !consulted_knobs(profile).contains(&knob)
        {
            bad(
                &pointer("/configuration/composition", knob),
                "",
                format!("{profile} does not consult {knob}; the member is refused, not cleared"),
            );
        }
    }
    if let Some(stated) = surface.stated.and_then(|s| obj(s, "profiles")) {
        let supported = stated_profiles(stated);
        match supported.get(&profile) {
            None => bad(
                "/configuration/composition/profile",
                "",
                format!("{profile} is not in surface.profiles"),
            ),
            Some(knobs) => {
                for (knob, value) in super::surface::resolved_knobs(composition, profile) {
                    if !knobs.get(knob).contains(value) {
                        bad(
                            &pointer("/configuration/composition", knob),
                            "",
                            format!(
                                "the resolved {knob} value is not in surface.profiles for {profile}"
                            ),
                        );
                    }
                }
            }
        }
    }
    if let (Some(versions), Some(own)) = (
        &surface.versions,
        doc.get("declaration").and_then(Value::as_str),
    ) && !versions.contains(own)
    {
        bad(
            "/surface/declaration_versions",
            "declaration_versions",
            "must include the document's own declaration version".into(),
        );
    }
    let mut ids = BTreeSet::new();
    let bindings = doc.get("bindings").and_then(Value::as_array);
    for (i, b) in bindings.into_iter().flatten().enumerate() {
        let Some(b) = b.as_object() else { continue };
        if let Some(id) = b.get("id").and_then(Value::as_str)
            && !ids.insert(id)
        {
            bad(
                &format!("/bindings/{i}/id"),
                "",
                format!("binding id {id:?} is used twice"),
            );
        }
        if let (Some(at), Some(pts)) = (points(b.get("at")), &surface.points) {
            for p in at.difference(pts) {
                bad(
                    &format!("/bindings/{i}/at"),
                    "interception_points",
                    format!("{p} is not in surface.interception_points"),
                );
            }
        }
    }
    Refusal::check(RefusalClass::Inconsistent, found)
}
