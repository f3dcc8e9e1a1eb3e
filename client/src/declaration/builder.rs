//! The code path (§7.7.7): a declaration built one member at a time. The
//! builder only writes JSON; [`DeclarationBuilder::build`] hands the value
//! to the same checks a file meets, so a document built in code is refused
//! with the same classes as the same document read from disk.

use hookwire::{Composition, InterceptionPoint, Mode, Profile};
use serde_json::{Map, Value};

use hookwire_declaration::{DECLARATION_VERSION, KnobSupport, Posture};

use super::load::Declaration;
use crate::error::Error;

impl Declaration {
    /// A document built one member at a time; [`DeclarationBuilder::build`]
    /// takes the value path.
    pub fn builder() -> DeclarationBuilder {
        DeclarationBuilder::new()
    }
}

/// One binding for [`DeclarationBuilder::bind`].
#[derive(Debug, Clone)]
pub struct DeclaredBinding(Map<String, Value>);

impl DeclaredBinding {
    /// A binding `id` of `kind` with no config, at every surface point,
    /// with the default timeout.
    pub fn new(id: &str, kind: &str) -> Self {
        let mut m = Map::new();
        m.insert("id".into(), id.into());
        m.insert("kind".into(), kind.into());
        Self(m)
    }

    /// The kind-specific configuration.
    pub fn config(mut self, config: Value) -> Self {
        self.0.insert("config".into(), config);
        self
    }

    /// The points it runs at.
    pub fn at(mut self, points: impl IntoIterator<Item = InterceptionPoint>) -> Self {
        let points = points
            .into_iter()
            .map(|p| Value::from(p.as_str()))
            .collect();
        self.0.insert("at".into(), Value::Array(points));
        self
    }

    /// Its bound in milliseconds; `None` writes `null` (unbounded).
    pub fn timeout_ms(mut self, ms: Option<u64>) -> Self {
        self.0
            .insert("timeout_ms".into(), ms.map_or(Value::Null, Value::from));
        self
    }
}

/// Builds a declaration document in code, one setter per member.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until build() is called"]
pub struct DeclarationBuilder {
    doc: Map<String, Value>,
}

impl Default for DeclarationBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl DeclarationBuilder {
    /// `{"declaration": "agent-hooks-declaration/1.0", "bindings": []}`.
    pub fn new() -> Self {
        let mut doc = Map::new();
        doc.insert("declaration".into(), DECLARATION_VERSION.into());
        doc.insert("bindings".into(), Value::Array(Vec::new()));
        Self { doc }
    }

    fn section(&mut self, path: &[&str]) -> &mut Map<String, Value> {
        let mut m = &mut self.doc;
        for key in path {
            let entry = m.entry(*key).or_insert_with(|| Value::Object(Map::new()));
            if !entry.is_object() {
                *entry = Value::Object(Map::new());
            }
            m = entry.as_object_mut().expect("just made an object");
        }
        m
    }

    fn set(mut self, path: &[&str], key: &str, value: Value) -> Self {
        self.section(path).insert(key.into(), value);
        self
    }

    /// `declaration` (to write another contract version than the default).
    pub fn version(self, version: &str) -> Self {
        self.set(&[], "declaration", version.into())
    }

    /// `spec`.
    pub fn spec(self, spec: &str) -> Self {
        self.set(&[], "spec", spec.into())
    }

    /// `id`.
    pub fn id(self, id: &str) -> Self {
        self.set(&[], "id", id.into())
    }

    /// `host`.
    pub fn host(self, name: &str, version: Option<&str>) -> Self {
        let mut h = Map::new();
        h.insert("name".into(), name.into());
        if let Some(v) = version {
            h.insert("version".into(), v.into());
        }
        self.set(&[], "host", Value::Object(h))
    }

    /// `configuration.mode`.
    pub fn mode(self, mode: Mode) -> Self {
        self.set(&["configuration"], "mode", mode.as_str().into())
    }

    /// `configuration.composition`: the profile and the knobs set on
    /// `composition` (unset knobs are left out, to take their default).
    pub fn composition(mut self, composition: Composition) -> Self {
        let c = self.section(&["configuration", "composition"]);
        c.clear();
        c.insert("profile".into(), composition.profile.as_str().into());
        if let Some(k) = composition.on_approval {
            c.insert("on_approval".into(), k.as_str().into());
        }
        if let Some(k) = composition.on_disagreement {
            c.insert("on_disagreement".into(), k.as_str().into());
        }
        if let Some(k) = composition.on_transform_conflict {
            c.insert("on_transform_conflict".into(), k.as_str().into());
        }
        self
    }

    /// `configuration.identity_provider`: `jcs-sha256`, a registered name,
    /// or `None` for `null`.
    pub fn identity_provider(self, name: Option<&str>) -> Self {
        self.set(&["configuration"], "identity_provider", opt(name))
    }

    /// `configuration.approval.resolver`.
    pub fn approval_resolver(self, name: Option<&str>) -> Self {
        self.set(&["configuration", "approval"], "resolver", opt(name))
    }

    /// `configuration.approval.redactor`.
    pub fn approval_redactor(self, name: Option<&str>) -> Self {
        self.set(&["configuration", "approval"], "redactor", opt(name))
    }

    /// `configuration.posture.tool_seam_host_error`.
    pub fn tool_seam_host_error(self, posture: Posture) -> Self {
        self.set(
            &["configuration", "posture"],
            "tool_seam_host_error",
            posture.as_str().into(),
        )
    }

    /// `configuration.timeouts.interceptor_ms` (`None` writes `null`).
    pub fn interceptor_timeout_ms(self, ms: Option<u64>) -> Self {
        self.set(&["configuration", "timeouts"], "interceptor_ms", num(ms))
    }

    /// `configuration.timeouts.approval_resolver_ms` (`None` writes `null`).
    pub fn approval_resolver_timeout_ms(self, ms: Option<u64>) -> Self {
        self.set(
            &["configuration", "timeouts"],
            "approval_resolver_ms",
            num(ms),
        )
    }

    /// `configuration.records.max_buffered` (`None` writes `null`).
    pub fn max_buffered_records(self, n: Option<u64>) -> Self {
        self.set(&["configuration", "records"], "max_buffered", num(n))
    }

    /// `surface.interception_points`.
    pub fn surface_points(self, points: impl IntoIterator<Item = InterceptionPoint>) -> Self {
        let v = points
            .into_iter()
            .map(|p| Value::from(p.as_str()))
            .collect();
        self.set(&["surface"], "interception_points", Value::Array(v))
    }

    /// `surface.capabilities`.
    pub fn surface_capabilities<S: AsRef<str>>(self, caps: impl IntoIterator<Item = S>) -> Self {
        let v = caps.into_iter().map(|c| Value::from(c.as_ref())).collect();
        self.set(&["surface"], "capabilities", Value::Array(v))
    }

    /// One entry of `surface.profiles`.
    pub fn surface_profile(self, profile: Profile, knobs: &KnobSupport) -> Self {
        self.set(&["surface", "profiles"], profile.as_str(), knobs.to_json())
    }

    /// `surface.buffered_output`, and `exposure_bound` when unbuffered.
    pub fn buffered_output(mut self, buffered: bool, exposure_bound: Option<&str>) -> Self {
        let s = self.section(&["surface"]);
        s.insert("buffered_output".into(), buffered.into());
        match exposure_bound {
            Some(b) => s.insert("exposure_bound".into(), b.into()),
            None => s.remove("exposure_bound"),
        };
        self
    }

    /// `surface.declaration_versions`.
    pub fn surface_declaration_versions<S: AsRef<str>>(
        self,
        versions: impl IntoIterator<Item = S>,
    ) -> Self {
        let v = versions
            .into_iter()
            .map(|s| Value::from(s.as_ref()))
            .collect();
        self.set(&["surface"], "declaration_versions", Value::Array(v))
    }

    /// Appends one binding to `bindings` (array order is dispatch order).
    pub fn bind(mut self, binding: DeclaredBinding) -> Self {
        if let Some(Value::Array(b)) = self.doc.get_mut("bindings") {
            b.push(Value::Object(binding.0));
        }
        self
    }

    /// One entry of `extensions`.
    pub fn extension(self, key: &str, value: Value) -> Self {
        self.set(&["extensions"], key, value)
    }

    /// The document as built so far.
    pub fn to_value(&self) -> Value {
        Value::Object(self.doc.clone())
    }

    /// Validates the document through the value path
    /// ([`Declaration::from_value`]).
    pub fn build(self) -> Result<Declaration, Error> {
        Declaration::from_value(&Value::Object(self.doc))
    }
}

fn opt(s: Option<&str>) -> Value {
    s.map_or(Value::Null, Value::from)
}

fn num(n: Option<u64>) -> Value {
    n.map_or(Value::Null, Value::from)
}
