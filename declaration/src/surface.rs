//! The host's code surface (§7.7.4, §13.1): what this host's code can
//! honour, which a declaration may select from but never widen; and the
//! composition knob vocabulary the surface and the configuration share.

use std::collections::{BTreeMap, BTreeSet};

use hookwire::{InterceptionPoint, Profile};
use serde_json::{Map, Value};

use super::limits::{MAX_DETAIL_CHARS, SUPPORTED_DECLARATION_VERSIONS};
use super::members::{points, strings};
use crate::refusal::{Finding, Refusal, RefusalClass, pointer};

/// The §3.2 lifecycle floor every surface includes.
pub const FLOOR_POINTS: [InterceptionPoint; 4] = [
    InterceptionPoint::AgentStartup,
    InterceptionPoint::Input,
    InterceptionPoint::Output,
    InterceptionPoint::AgentShutdown,
];

/// The closed capability vocabulary a surface may name.
pub const CAPABILITIES: &[&str] = &[
    "model_calls",
    "tool_calls",
    "parallel_tool_calls",
    "streaming",
    "multi_turn",
    "int64_json",
    "bigint_json",
    "incremental_output",
    "host_declaration",
];

/// The composition knobs, in §7.2 order.
pub(crate) const KNOBS: [&str; 3] = ["on_approval", "on_disagreement", "on_transform_conflict"];

/// The knobs `profile` consults (§7.2).
pub(crate) fn consulted_knobs(profile: Profile) -> &'static [&'static str] {
    match profile {
        Profile::SequentialFirstDeny => &["on_approval"],
        Profile::SequentialRunAll => &[],
        Profile::ParallelStrictest => &["on_transform_conflict"],
        Profile::ParallelUnanimous => &["on_disagreement"],
    }
}

/// The values of a knob, its default first.
pub(crate) fn knob_values(knob: &str) -> &'static [&'static str] {
    if knob == "on_approval" {
        &["stop", "resume"]
    } else {
        &["deny", "approval"]
    }
}

/// The resolved value of each knob `profile` consults: the stated value
/// or its §7.2 default.
pub(crate) fn resolved_knobs(
    composition: Option<&Map<String, Value>>,
    profile: Profile,
) -> Vec<(&'static str, &'static str)> {
    consulted_knobs(profile)
        .iter()
        .map(|knob| {
            let values = knob_values(knob);
            let stated = composition
                .and_then(|c| c.get(*knob))
                .and_then(Value::as_str)
                .and_then(|s| values.iter().find(|v| **v == s));
            (*knob, *stated.unwrap_or(&values[0]))
        })
        .collect()
}

/// The knob values supported under one profile. Only the knobs the
/// profile consults are meaningful; a knob with no entry supports its
/// default only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnobSupport(BTreeMap<&'static str, BTreeSet<&'static str>>);

impl KnobSupport {
    /// Every value of every knob `profile` consults.
    pub fn all(profile: Profile) -> Self {
        Self(
            consulted_knobs(profile)
                .iter()
                .map(|k| (*k, knob_values(k).iter().copied().collect()))
                .collect(),
        )
    }

    /// The §7.2 default of every knob `profile` consults.
    pub fn defaults(profile: Profile) -> Self {
        Self(
            consulted_knobs(profile)
                .iter()
                .map(|k| (*k, [knob_values(k)[0]].into_iter().collect()))
                .collect(),
        )
    }

    /// Replaces the values supported for `knob` with those of `values`
    /// that belong to its §7.2 vocabulary. A knob this support does not
    /// hold (one its profile does not consult) is left out.
    pub fn with_values<'a>(
        mut self,
        knob: &str,
        values: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        if let Some(name) = KNOBS
            .iter()
            .find(|k| **k == knob && self.0.contains_key(knob))
        {
            let vocabulary = knob_values(name);
            let listed: Vec<&str> = values.into_iter().collect();
            let kept = vocabulary
                .iter()
                .copied()
                .filter(|v| listed.contains(v))
                .collect();
            self.0.insert(name, kept);
        }
        self
    }

    /// The values supported for `knob` (empty for a knob not consulted).
    pub fn get(&self, knob: &str) -> BTreeSet<&'static str> {
        self.0.get(knob).cloned().unwrap_or_default()
    }

    /// Whether every value listed here is listed in `other`.
    fn within(&self, other: &Self) -> bool {
        self.0
            .iter()
            .all(|(k, vs)| other.0.get(k).is_some_and(|o| vs.is_subset(o)))
    }

    /// The knobs as a document's `surface.profiles` entry writes them
    /// (what a declaration built in code states).
    pub fn to_json(&self) -> Value {
        Value::Object(
            self.0
                .iter()
                .map(|(k, vs)| {
                    (
                        (*k).to_owned(),
                        vs.iter().map(|v| Value::from(*v)).collect(),
                    )
                })
                .collect(),
        )
    }
}

/// The profiles a stated `surface.profiles` names, each knob an absent
/// member leaves at its default only.
pub(crate) fn stated_profiles(profiles: &Map<String, Value>) -> BTreeMap<Profile, KnobSupport> {
    let mut out = BTreeMap::new();
    for (name, knobs) in profiles {
        let Ok(profile) = name.parse::<Profile>() else {
            continue;
        };
        let mut support = KnobSupport::defaults(profile);
        for knob in consulted_knobs(profile) {
            let listed = knobs.get(*knob).and_then(Value::as_array);
            if let Some(listed) = listed {
                let values = knob_values(knob)
                    .iter()
                    .copied()
                    .filter(|v| listed.iter().any(|l| l.as_str() == Some(v)))
                    .collect();
                support.0.insert(knob, values);
            }
        }
        out.insert(profile, support);
    }
    out
}

/// What the host does with a run after a `host_error:*` deny at the tool
/// seam (§6.2, §13.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Posture {
    /// The denial is surfaced to the model as a tool error and the loop
    /// goes on (what the reference loop, `hookwire_agent::Agent`, does).
    #[default]
    Continue,
    /// The host's own semantics end the turn.
    Terminate,
}

impl Posture {
    /// The document's spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Continue => "continue",
            Self::Terminate => "terminate",
        }
    }
}

/// What the host's code can honour (§7.7.4). A declaration selects from
/// it and never widens it; a document without `surface` resolves to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSurface {
    /// The points the host emits; always includes the §3.2 floor.
    pub interception_points: BTreeSet<InterceptionPoint>,
    /// Capabilities from [`CAPABILITIES`].
    pub capabilities: BTreeSet<String>,
    /// The profiles and knob values the host supports.
    pub profiles: BTreeMap<Profile, KnobSupport>,
    /// The tool-seam posture the code implements.
    pub tool_seam_host_error: Posture,
    /// Whether the host can release output incrementally (§12.1a).
    pub streams_unbuffered: bool,
    /// The exposure bound an incremental host enforces.
    pub exposure_bound: Option<String>,
    /// The declaration versions the host accepts.
    pub declaration_versions: BTreeSet<String>,
}

impl Default for HostSurface {
    fn default() -> Self {
        Self::hookwire()
    }
}

impl HostSurface {
    /// hookwire's own surface: the eight points, the four profiles with
    /// every knob value, the `continue` posture of the reference loop (`hookwire-agent`),
    /// buffered output, concurrent tool calls and multi-turn sessions,
    /// exact 64-bit integers on the wire, and declarations 1.0.
    pub fn hookwire() -> Self {
        Self {
            interception_points: InterceptionPoint::ALL.into_iter().collect(),
            capabilities: [
                "model_calls",
                "tool_calls",
                "parallel_tool_calls",
                "multi_turn",
                "int64_json",
                "host_declaration",
            ]
            .into_iter()
            .map(str::to_owned)
            .collect(),
            profiles: [
                Profile::SequentialFirstDeny,
                Profile::SequentialRunAll,
                Profile::ParallelStrictest,
                Profile::ParallelUnanimous,
            ]
            .into_iter()
            .map(|p| (p, KnobSupport::all(p)))
            .collect(),
            tool_seam_host_error: Posture::Continue,
            streams_unbuffered: false,
            exposure_bound: None,
            declaration_versions: SUPPORTED_DECLARATION_VERSIONS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
        }
    }

    /// Checks the surface itself against the closed vocabularies and the
    /// §3.2 rules. A host surface that fails is a programming error; every
    /// document is refused against it (`surface_unsupported`).
    pub(crate) fn check(&self) -> Result<(), Refusal> {
        let mut found = Vec::new();
        let mut bad =
            |at: &str, d: &str| found.push(Finding::new(at, format!("host surface: {d}")));
        let has = |p| self.interception_points.contains(&p);
        if !FLOOR_POINTS.into_iter().all(has) {
            bad("/surface/interception_points", "lacks a §3.2 floor point");
        }
        use InterceptionPoint as P;
        for (a, b, cap) in [
            (P::PreModelCall, P::PostModelCall, "model_calls"),
            (P::PreToolCall, P::PostToolCall, "tool_calls"),
        ] {
            if has(a) != has(b) || self.capabilities.contains(cap) != (has(a) && has(b)) {
                bad(
                    "/surface/interception_points",
                    "breaks a §3.2 omission pair",
                );
            }
        }
        if !self
            .capabilities
            .iter()
            .all(|c| CAPABILITIES.contains(&c.as_str()))
        {
            bad(
                "/surface/capabilities",
                "names a capability outside the closed list",
            );
        }
        if self.capabilities.contains("incremental_output")
            && (!self.streams_unbuffered
                || self
                    .exposure_bound
                    .as_ref()
                    .is_none_or(|b| b.is_empty() || b.chars().count() > MAX_DETAIL_CHARS))
        {
            bad(
                "/surface/exposure_bound",
                "incremental_output needs an exposure bound of 1 to 512 characters",
            );
        }
        if !self
            .declaration_versions
            .iter()
            .all(|v| SUPPORTED_DECLARATION_VERSIONS.contains(&v.as_str()))
        {
            bad(
                "/surface/declaration_versions",
                "names a version this loader does not accept",
            );
        }
        if !self.profiles.iter().all(|(p, k)| {
            k.within(&KnobSupport::all(*p))
                && consulted_knobs(*p).iter().all(|n| !k.get(n).is_empty())
        }) {
            bad(
                "/surface/profiles",
                "names a knob or value outside §7.2, or none for a consulted knob",
            );
        }
        Refusal::check(RefusalClass::SurfaceUnsupported, found)
    }
}

/// The resolved surface (§7.7.4): the document's, each absent member
/// filled from the host's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedSurface {
    /// The points in effect.
    pub interception_points: BTreeSet<InterceptionPoint>,
    /// The capabilities claimed.
    pub capabilities: BTreeSet<String>,
    /// The profiles and knob values claimed.
    pub profiles: BTreeMap<Profile, KnobSupport>,
    /// Whether caller-bound output is buffered until `output` permits it.
    pub buffered_output: bool,
    /// The exposure bound (unbuffered only).
    pub exposure_bound: Option<String>,
    /// The declaration versions claimed.
    pub declaration_versions: BTreeSet<String>,
}

impl ResolvedSurface {
    /// Fills the document's `surface` (when stated) from the host's.
    pub(crate) fn fill(stated: Option<&Map<String, Value>>, code: &HostSurface) -> Self {
        let Some(s) = stated else {
            let incremental = code.capabilities.contains("incremental_output");
            return Self {
                interception_points: code.interception_points.clone(),
                capabilities: code.capabilities.clone(),
                profiles: code.profiles.clone(),
                buffered_output: !incremental,
                exposure_bound: code.exposure_bound.clone().filter(|_| incremental),
                declaration_versions: code.declaration_versions.clone(),
            };
        };
        // `buffered_output` defaults to true and `false` is declared only
        // explicitly (§13.1): a document that leaves it out declares a
        // buffering host, so the capabilities filled from the host's leave
        // out `incremental_output`, whose companion is `false`, rather than
        // resolve to a contradiction the document never wrote.
        let buffered = s
            .get("buffered_output")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        Self {
            interception_points: points(s.get("interception_points"))
                .unwrap_or_else(|| code.interception_points.clone()),
            capabilities: strings(s.get("capabilities")).unwrap_or_else(|| {
                let mut filled = code.capabilities.clone();
                if buffered {
                    filled.remove("incremental_output");
                }
                filled
            }),
            profiles: s
                .get("profiles")
                .and_then(Value::as_object)
                .map_or_else(|| code.profiles.clone(), stated_profiles),
            buffered_output: buffered,
            exposure_bound: s
                .get("exposure_bound")
                .and_then(Value::as_str)
                .map(str::to_owned),
            declaration_versions: strings(s.get("declaration_versions"))
                .unwrap_or_else(|| code.declaration_versions.clone()),
        }
    }

    /// Step 8 for the surface: every claimed member within the code's.
    pub(crate) fn unsupported(&self, code: &HostSurface, found: &mut Vec<Finding>) {
        for p in self
            .interception_points
            .difference(&code.interception_points)
        {
            found.push(Finding::new(
                "/surface/interception_points",
                format!("the host does not emit {p}"),
            ));
        }
        for c in self.capabilities.difference(&code.capabilities) {
            found.push(Finding::new(
                "/surface/capabilities",
                format!("the host does not have the capability {c}"),
            ));
        }
        for (profile, knobs) in &self.profiles {
            let at = pointer("/surface/profiles", profile.as_str());
            match code.profiles.get(profile) {
                None => found.push(Finding::new(at, "the host does not support this profile")),
                Some(code_knobs) if !knobs.within(code_knobs) => {
                    found.push(Finding::new(
                        at,
                        "the host does not support every listed knob value",
                    ));
                }
                Some(_) => {}
            }
        }
        for v in self
            .declaration_versions
            .difference(&code.declaration_versions)
        {
            found.push(Finding::new(
                "/surface/declaration_versions",
                format!("the host does not accept {v}"),
            ));
        }
        if !self.buffered_output && !code.streams_unbuffered {
            found.push(Finding::new(
                "/surface/buffered_output",
                "the host buffers caller-bound output and cannot declare false",
            ));
        }
    }

    pub(crate) fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "interception_points".into(),
            self.interception_points
                .iter()
                .map(|p| Value::from(p.as_str()))
                .collect(),
        );
        m.insert(
            "capabilities".into(),
            self.capabilities
                .iter()
                .map(|c| Value::from(c.as_str()))
                .collect(),
        );
        m.insert(
            "profiles".into(),
            Value::Object(
                self.profiles
                    .iter()
                    .map(|(p, k)| (p.as_str().to_owned(), k.to_json()))
                    .collect(),
            ),
        );
        m.insert("buffered_output".into(), self.buffered_output.into());
        if let Some(b) = &self.exposure_bound {
            m.insert("exposure_bound".into(), b.as_str().into());
        }
        m.insert(
            "declaration_versions".into(),
            self.declaration_versions
                .iter()
                .map(|v| Value::from(v.as_str()))
                .collect(),
        );
        Value::Object(m)
    }
}
