//! The agent context (AGENT-HOOKS-0.1 §4): the JSON document a host builds
//! at each interception point, validated against the §4 envelope.
//!
//! [`AgentContext`] keeps the spec's JSON object as is (so that nothing the
//! host or a transform put in it is lost or rewritten) minus the `target`
//! member: the target is by definition the point's target field (§3, §4.3),
//! so it is stored once and exposed through [`AgentContext::target`] and
//! [`AgentContext::target_mut`]. Writing to the target is the §4.3
//! write-back. [`AgentContext::to_json`] yields the full spec shape.
//!
//! Here: the envelope check and the §10.2 identity preimage. The §12.3
//! size and depth check ([`AgentContext::check_limits`]) is `bounds`'s;
//! the copies restricted to some members are `visibility`'s.

use serde_json::{Map, Value};

use crate::canonical::{CanonicalError, Canonicalizer, View, sha256_identity};
use crate::point::InterceptionPoint;

/// Largest preimage buffer a thread keeps between identities; a larger
/// context's buffer is freed after use.
const PREIMAGE_KEPT_BYTES: usize = 64 * 1024;

thread_local! {
    /// The buffer each thread writes identity preimages into.
    static PREIMAGE: std::cell::Cell<String> = const { std::cell::Cell::new(String::new()) };
}

/// The contract version hookwire emits.
pub const SPEC_VERSION: &str = "agent-hooks/0.1";

/// Why a context was refused. Every variant becomes
/// `host_error:context_invalid`; messages name the member and the rule,
/// never the value (§14).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidContext {
    /// The context is not a JSON object.
    #[error("context is not a JSON object")]
    NotAnObject,
    /// A required member is absent or has the wrong type or form.
    #[error("$.{member}: missing or not {expected} (§4)")]
    Member {
        /// Path of the member, e.g. `tool_call.args`.
        member: String,
        /// What the rule wants, e.g. `a non-empty string`.
        expected: &'static str,
    },
    /// `interception_point` is absent or not one of the eight (§3).
    #[error("$.interception_point: missing or not one of the eight interception points (§3)")]
    Point,
    /// The context carried a `target` that is not its point's target field.
    #[error("$.target: differs from the point's target field (§4.3)")]
    TargetMismatch,
    /// An `extensions` namespace does not match `^[a-z][a-z0-9_]*$` (§4.6).
    #[error("$.extensions: namespace does not match ^[a-z][a-z0-9_]*$ (§4.6)")]
    Namespace,
    /// A value cannot be carried exactly (§4.4, §10.2).
    #[error(transparent)]
    Domain(#[from] CanonicalError),
    /// The serialized context exceeds the configured bound (§12.3).
    #[error("context serializes to more than {limit} bytes (§12.3)")]
    TooLarge {
        /// The configured bound, in bytes.
        limit: usize,
    },
    /// The declared identity provider failed, panicked or returned no
    /// string (§10.1).
    #[error("the identity provider failed to compute an identity (§10.1)")]
    IdentityProvider,
    /// JSON text on the wire could not be parsed exactly.
    #[error("{member}: {problem}")]
    Json {
        /// Which member carried the text.
        member: String,
        /// What was wrong, without the value.
        problem: String,
    },
}

impl InvalidContext {
    fn member(member: impl Into<String>, expected: &'static str) -> Self {
        Self::Member {
            member: member.into(),
            expected,
        }
    }
}

/// Bounds a host enforces on every context before dispatch (§12.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextLimits {
    /// Largest serialized context, in bytes. Default 5 MiB.
    pub max_bytes: usize,
    /// Deepest nesting. Default 128.
    pub max_depth: usize,
}

impl Default for ContextLimits {
    fn default() -> Self {
        Self {
            max_bytes: 5 * 1024 * 1024,
            max_depth: crate::canonical::DEFAULT_MAX_DEPTH,
        }
    }
}

/// One interception point's context (§4), validated against the envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentContext {
    point: InterceptionPoint,
    /// The spec JSON object without `target`.
    members: Map<String, Value>,
}

impl AgentContext {
    /// Builds a context from its spec JSON, checking the §4 envelope. A
    /// `target` member, when present, must equal the point's target field.
    pub fn from_json(value: Value) -> Result<Self, InvalidContext> {
        let Value::Object(mut members) = value else {
            return Err(InvalidContext::NotAnObject);
        };
        let point = members
            .get("interception_point")
            .and_then(Value::as_str)
            .and_then(|s| s.parse().ok())
            .ok_or(InvalidContext::Point)?;
        let claimed_target = members.remove("target");
        let ctx = Self { point, members };
        ctx.validate()?;
        if let Some(t) = claimed_target
            && ctx.target() != Some(&t)
        {
            return Err(InvalidContext::TargetMismatch);
        }
        Ok(ctx)
    }

    /// Builds a context from members that already exclude `target`, without
    /// the envelope check; callers run [`Self::validate`] when the members
    /// come from outside.
    pub fn from_members_unchecked(point: InterceptionPoint, members: Map<String, Value>) -> Self {
        Self { point, members }
    }

    /// The interception point.
    pub fn point(&self) -> InterceptionPoint {
        self.point
    }

    /// `sequence`.
    pub fn sequence(&self) -> u64 {
        self.members
            .get("sequence")
            .and_then(Value::as_u64)
            .unwrap_or_default()
    }

    /// `session.id`.
    pub fn session_id(&self) -> &str {
        self.members
            .get("session")
            .and_then(|s| s.get("id"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// `timestamp`, when present.
    pub fn timestamp(&self) -> Option<&str> {
        self.members.get("timestamp").and_then(Value::as_str)
    }

    /// A top-level member, e.g. `tool_call` or `extensions`. `target` is not
    /// a member: use [`Self::target`].
    pub fn get(&self, member: &str) -> Option<&Value> {
        self.members.get(member)
    }

    /// All members except `target`.
    pub fn members(&self) -> &Map<String, Value> {
        &self.members
    }

    /// Mutable access to the members, for hosts assembling contexts.
    pub fn members_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.members
    }

    /// The target (§4.3): the point's target field.
    pub fn target(&self) -> Option<&Value> {
        let mut loc = self.point.target_location().iter();
        let first = self.members.get(*loc.next()?)?;
        loc.try_fold(first, |v, k| v.get(*k))
    }

    /// Mutable target; writing through it is the §4.3 write-back.
    pub fn target_mut(&mut self) -> Option<&mut Value> {
        let mut loc = self.point.target_location().iter();
        let first = self.members.get_mut(*loc.next()?)?;
        loc.try_fold(first, |v, k| v.get_mut(*k))
    }

    /// `tool_call.name` at the tool points.
    pub fn tool_name(&self) -> Option<&str> {
        self.members
            .get("tool_call")
            .and_then(|t| t.get("name"))
            .and_then(Value::as_str)
    }

    /// The full spec JSON, `target` included.
    pub fn to_json(&self) -> Value {
        let mut m = self.members.clone();
        if let Some(t) = self.target() {
            m.insert("target".into(), t.clone());
        }
        Value::Object(m)
    }

    /// The §4 envelope check: required core (§4.1), the point's conditional
    /// members (§4.2) and extension namespaces (§4.6).
    pub fn validate(&self) -> Result<(), InvalidContext> {
        let m = &self.members;
        let spec_ok = m
            .get("spec")
            .and_then(Value::as_str)
            .and_then(|s| s.strip_prefix("agent-hooks/"))
            .and_then(|v| v.split_once('.'))
            .is_some_and(|(maj, min)| is_digits(maj) && is_digits(min));
        if !spec_ok {
            return Err(InvalidContext::member(
                "spec",
                "a string matching ^agent-hooks/\\d+\\.\\d+$",
            ));
        }
        if m.get("interception_point").and_then(Value::as_str) != Some(self.point.as_str()) {
            return Err(InvalidContext::Point);
        }
        if m.get("timestamp").and_then(Value::as_str).is_none() {
            return Err(InvalidContext::member("timestamp", "an RFC 3339 string"));
        }
        if m.get("sequence").and_then(Value::as_u64).is_none() {
            return Err(InvalidContext::member("sequence", "an integer >= 0"));
        }
        let agent = object(m, "agent")?;
        non_empty_str(agent, "agent", "id")?;
        let framework_ok = agent
            .get("framework")
            .and_then(Value::as_str)
            .is_some_and(|f| {
                !f.is_empty()
                    && f.bytes().all(|b| {
                        b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                    })
            });
        if !framework_ok {
            return Err(InvalidContext::member(
                "agent.framework",
                "a string matching ^[a-z0-9_-]+$",
            ));
        }
        let session = object(m, "session")?;
        non_empty_str(session, "session", "id")?;
        for (member, required) in conditional_members(self.point) {
            let value = m
                .get(*member)
                .ok_or_else(|| InvalidContext::member(*member, "present at this point"))?;
            if let Some(required) = required {
                let obj = value
                    .as_object()
                    .ok_or_else(|| InvalidContext::member(*member, "an object"))?;
                for sub in *required {
                    if !obj.contains_key(*sub) {
                        return Err(InvalidContext::member(format!("{member}.{sub}"), "present"));
                    }
                }
            }
        }
        self.validate_point_types()?;
        if let Some(ext) = m.get("extensions") {
            let ext = ext
                .as_object()
                .ok_or_else(|| InvalidContext::member("extensions", "an object"))?;
            if !ext.keys().all(|k| is_namespace(k)) {
                return Err(InvalidContext::Namespace);
            }
        }
        Ok(())
    }

    fn validate_point_types(&self) -> Result<(), InvalidContext> {
        let m = &self.members;
        match self.point {
            InterceptionPoint::AgentStartup => {
                let tools = m["agent_init"]["tools_registered"].as_array();
                if !tools.is_some_and(|t| t.iter().all(Value::is_string)) {
                    return Err(InvalidContext::member(
                        "agent_init.tools_registered",
                        "an array of strings",
                    ));
                }
            }
            InterceptionPoint::Input => {
                let role = m["input"]["role"].as_str();
                if !matches!(role, Some("user" | "system" | "external")) {
                    return Err(InvalidContext::member(
                        "input.role",
                        "one of user, system, external",
                    ));
                }
            }
            InterceptionPoint::PreModelCall | InterceptionPoint::PostModelCall => {
                if !m["model"]["id"].is_string() {
                    return Err(InvalidContext::member("model.id", "a string"));
                }
                if self.point == InterceptionPoint::PreModelCall && !m["messages"].is_array() {
                    return Err(InvalidContext::member("messages", "an array"));
                }
                if self.point == InterceptionPoint::PostModelCall
                    && !m["response"]["tool_calls"].is_array()
                {
                    return Err(InvalidContext::member("response.tool_calls", "an array"));
                }
            }
            InterceptionPoint::PreToolCall | InterceptionPoint::PostToolCall => {
                let call = m["tool_call"].as_object().expect("checked as object");
                non_empty_str(call, "tool_call", "id")?;
                non_empty_str(call, "tool_call", "name")?;
                if !call["args"].is_object() {
                    return Err(InvalidContext::member("tool_call.args", "an object"));
                }
                if self.point == InterceptionPoint::PostToolCall
                    && !m["tool_result"]["is_error"].is_boolean()
                {
                    return Err(InvalidContext::member("tool_result.is_error", "a boolean"));
                }
            }
            InterceptionPoint::Output => {}
            InterceptionPoint::AgentShutdown => {
                let reason = m["summary"]["reason"].as_str();
                if !matches!(reason, Some("completed" | "error" | "cancelled")) {
                    return Err(InvalidContext::member(
                        "summary.reason",
                        "one of completed, error, cancelled",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The `jcs-sha256` identity (§10.2) of this context: SHA-256 over the
    /// canonical form of its closed required+conditional projection.
    pub fn jcs_sha256_identity(&self, limits: &ContextLimits) -> Result<String, InvalidContext> {
        PREIMAGE.with(|kept| {
            // The thread's buffer, grown once to the size of the contexts
            // it sees rather than from nothing on every emission (a 1 KiB
            // context's preimage took five allocations and copies).
            let mut buf = kept.take();
            buf.clear();
            let identity = self
                .write_identity_preimage(limits, &mut buf)
                .map(|()| sha256_identity(buf.as_bytes()));
            if buf.capacity() <= PREIMAGE_KEPT_BYTES {
                kept.set(buf);
            }
            identity
        })
    }

    /// Writes the canonical §10.2 preimage into `out`.
    pub fn write_identity_preimage(
        &self,
        limits: &ContextLimits,
        out: &mut String,
    ) -> Result<(), InvalidContext> {
        const NULL: Value = Value::Null;
        let m = &self.members;
        let get = |k: &str| m.get(k).unwrap_or(&NULL);
        let target = self.target().unwrap_or(&NULL);
        let mut entries: Vec<(&str, View<'_>)> = vec![
            ("spec", View::Whole(get("spec"))),
            ("interception_point", View::Whole(get("interception_point"))),
            ("timestamp", View::Whole(get("timestamp"))),
            ("sequence", View::Whole(get("sequence"))),
            ("agent", View::Only(get("agent"), &["id", "framework"])),
            ("session", View::Only(get("session"), &["id"])),
            ("target", View::Whole(target)),
        ];
        for (member, keep) in conditional_members(self.point) {
            if let Some(v) = m.get(*member) {
                entries.push((
                    member,
                    match keep {
                        Some(keep) => View::Only(v, keep),
                        None => View::Whole(v),
                    },
                ));
            }
        }
        let canonicalizer = Canonicalizer::with_max_depth(limits.max_depth);
        // The target is in the preimage twice (as itself and inside its
        // field): canonicalize it once.
        match self.target() {
            Some(t) => canonicalizer.write_repeating(View::Object(&entries), t, out)?,
            None => canonicalizer.write(View::Object(&entries), out)?,
        }
        Ok(())
    }
}

/// The conditional members of each point (§4.2), with the required
/// sub-members that also form the §10.2 identity whitelist (`None`: the
/// whole value).
pub(crate) fn conditional_members(
    point: InterceptionPoint,
) -> &'static [(&'static str, Option<&'static [&'static str]>)] {
    use InterceptionPoint::*;
    match point {
        AgentStartup => &[("agent_init", Some(&["tools_registered"]))],
        Input => &[("input", Some(&["content", "role"]))],
        PreModelCall => &[("model", Some(&["id"])), ("messages", None)],
        PostModelCall => &[
            ("model", Some(&["id"])),
            (
                "response",
                Some(&["content", "tool_calls", "finish_reason"]),
            ),
        ],
        PreToolCall => &[("tool_call", Some(&["id", "name", "args"]))],
        PostToolCall => &[
            ("tool_call", Some(&["id", "name", "args"])),
            ("tool_result", Some(&["value", "is_error"])),
        ],
        Output => &[("output", Some(&["content"]))],
        AgentShutdown => &[("summary", Some(&["reason"]))],
    }
}

fn object<'a>(
    m: &'a Map<String, Value>,
    key: &'static str,
) -> Result<&'a Map<String, Value>, InvalidContext> {
    m.get(key)
        .and_then(Value::as_object)
        .ok_or_else(|| InvalidContext::member(key, "an object"))
}

fn non_empty_str(m: &Map<String, Value>, parent: &str, key: &str) -> Result<(), InvalidContext> {
    if m.get(key)
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
    {
        Ok(())
    } else {
        Err(InvalidContext::member(
            format!("{parent}.{key}"),
            "a non-empty string",
        ))
    }
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `s` is a valid extension namespace, `^[a-z][a-z0-9_]*$` (§4.6).
pub fn is_namespace(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_lowercase())
        && bytes.all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

mod bounds;
mod visibility;

#[cfg(test)]
mod tests;
