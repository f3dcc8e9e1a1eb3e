//! Step 7: the document does not contradict itself. Run twice: on the
//! members the document states (as written), and on the surface filled
//! from the host (when resolving).

use std::collections::BTreeSet;

use hookwire::{InterceptionPoint, Profile};
use serde_json::{Map, Value};

use crate::members::{obj, points, strings};
use crate::refusal::{Finding, Refusal, RefusalClass, pointer};
use crate::surface::{FLOOR_POINTS, KNOBS, consulted_knobs, resolved_knobs, stated_profiles};

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
                for (knob, value) in resolved_knobs(composition, profile) {
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
