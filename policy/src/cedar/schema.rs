//! The Cedar schema a directory's policies are validated against, and the
//! context type it declares for each point.
//!
//! The service publishes one schema ([`PUBLISHED`], the file
//! `policy/schema/hookwire.cedarschema`, printed by `hookwire policy
//! schema`). A directory may ship its own `*.cedarschema` (Cedar's schema
//! format) or `*.cedarschema.json` (its JSON format) instead, usually the
//! published one with the tool arguments its policies read declared. Its
//! actions must be interception points (`Hookwire::Action::"pre_tool_call"`).
//!
//! [`Shape`] is an action's context type as far as conversion needs it:
//! the context is converted member by member along it (undeclared members
//! are not converted), see `request`.

use std::collections::BTreeMap;
use std::path::Path;

use cedar_policy::{Schema, SchemaFragment};
use hookwire::InterceptionPoint;
use serde_json::{Map, Value};

use crate::error::Error;

/// The schema the service publishes (Cedar's schema format).
pub const PUBLISHED: &str = include_str!("../../schema/hookwire.cedarschema");

/// The namespace of hookwire's entity types and actions.
pub(crate) const NAMESPACE: &str = "Hookwire";

/// Nesting beyond which a context type is refused (Cedar forbids recursive
/// common types; this only bounds the walk).
const MAX_TYPE_DEPTH: usize = 32;

/// A context type, as the conversion reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `String`.
    String,
    /// `Long`.
    Long,
    /// `Bool`.
    Bool,
    /// An extension type constructed from a string (`decimal`, `ipaddr`,
    /// `datetime`, `duration`): the name of its constructor.
    Extension(&'static str),
    /// `Set<T>`.
    Set(Box<Shape>),
    /// A record: each attribute, its type and whether it is required.
    Record(BTreeMap<String, (Shape, bool)>),
    /// An entity reference of this type, given as the entity's id.
    Entity(String),
}

/// A loaded schema with the context type of each point it declares.
#[derive(Debug, Clone)]
pub(crate) struct CedarSchema {
    /// The validator's schema.
    pub(crate) schema: Schema,
    /// Where it came from (`None`: the published one).
    pub(crate) file: Option<String>,
    /// Each declared point's context type.
    pub(crate) contexts: BTreeMap<InterceptionPoint, Shape>,
}

impl CedarSchema {
    /// The directory's schema `text` (from `path`, JSON when the name ends
    /// in `.json`), or the published one.
    pub(crate) fn load(given: Option<(&Path, &str, String)>) -> Result<Self, Error> {
        let (path, text, label) = match &given {
            Some((path, text, label)) => (Some(*path), *text, Some(label.clone())),
            None => (None, PUBLISHED, None),
        };
        let refuse = |message: String| Error::Cedar {
            path: path.map_or_else(|| "<published schema>".into(), Path::to_path_buf),
            message,
        };
        let json = path.is_some_and(|p| p.to_string_lossy().ends_with(".json"));
        let fragment = if json {
            SchemaFragment::from_json_str(text).map_err(|e| refuse(format!("{e}")))?
        } else {
            SchemaFragment::from_cedarschema_str(text)
                .map(|(fragment, _warnings)| fragment)
                .map_err(|e| refuse(format!("{e}")))?
        };
        let document = fragment
            .clone()
            .to_json_value()
            .map_err(|e| refuse(format!("{e}")))?;
        let schema: Schema = fragment.try_into().map_err(|e| refuse(format!("{e}")))?;
        for action in schema.actions() {
            let is_point = action.type_name().to_string() == format!("{NAMESPACE}::Action")
                && action.id().unescaped().parse::<InterceptionPoint>().is_ok();
            if !is_point {
                return Err(refuse(format!(
                    "action {action} is not an interception point: actions are {NAMESPACE}::Action::\"<point>\", e.g. {NAMESPACE}::Action::\"pre_tool_call\""
                )));
            }
        }
        let contexts = context_shapes(&document).map_err(refuse)?;
        Ok(Self {
            schema,
            file: label,
            contexts,
        })
    }
}

/// The context type of each action of a JSON-format schema document.
fn context_shapes(document: &Value) -> Result<BTreeMap<InterceptionPoint, Shape>, String> {
    let namespaces = document.as_object().ok_or("the schema is not an object")?;
    let mut out = BTreeMap::new();
    let Some(namespace) = namespaces.get(NAMESPACE) else {
        return Ok(out);
    };
    let common = namespace
        .get("commonTypes")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let resolver = Resolver {
        namespaces,
        common: &common,
    };
    let actions = namespace
        .get("actions")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (name, action) in actions {
        let Ok(point) = name.parse::<InterceptionPoint>() else {
            continue;
        };
        let shape = match action.get("appliesTo").and_then(|a| a.get("context")) {
            Some(context) => resolver.shape(context, 0)?,
            None => Shape::Record(BTreeMap::new()),
        };
        out.insert(point, shape);
    }
    Ok(out)
}

/// Resolves type references of one schema document.
struct Resolver<'a> {
    namespaces: &'a Map<String, Value>,
    common: &'a Map<String, Value>,
}

impl Resolver<'_> {
    fn shape(&self, ty: &Value, depth: usize) -> Result<Shape, String> {
        if depth > MAX_TYPE_DEPTH {
            return Err("a context type nests too deeply".into());
        }
        let kind = ty
            .get("type")
            .and_then(Value::as_str)
            .ok_or("a type without `type`")?;
        let name = ty.get("name").and_then(Value::as_str);
        match kind {
            "String" => Ok(Shape::String),
            "Long" => Ok(Shape::Long),
            "Boolean" | "Bool" => Ok(Shape::Bool),
            "Set" => {
                let element = ty.get("element").ok_or("a Set without `element`")?;
                Ok(Shape::Set(Box::new(self.shape(element, depth + 1)?)))
            }
            "Record" => {
                let mut attributes = BTreeMap::new();
                if let Some(attrs) = ty.get("attributes").and_then(Value::as_object) {
                    for (name, attr) in attrs {
                        let required = attr.get("required").and_then(Value::as_bool) != Some(false);
                        attributes.insert(name.clone(), (self.shape(attr, depth + 1)?, required));
                    }
                }
                Ok(Shape::Record(attributes))
            }
            "Extension" => extension(name.unwrap_or_default())
                .ok_or_else(|| format!("unknown extension type {name:?}")),
            "Entity" => Ok(Shape::Entity(name.unwrap_or_default().to_owned())),
            "EntityOrCommon" => self.named(name.unwrap_or_default(), depth),
            other => self.named(other, depth),
        }
    }

    /// A type by name: a common type, a built-in, or else an entity type.
    fn named(&self, name: &str, depth: usize) -> Result<Shape, String> {
        let (namespace, base) = match name.rsplit_once("::") {
            Some((ns, base)) => (Some(ns), base),
            None => (None, name),
        };
        let common = match namespace {
            None => self.common.get(base),
            Some("__cedar") => None,
            Some(ns) => self
                .namespaces
                .get(ns)
                .and_then(|n| n.get("commonTypes"))
                .and_then(|c| c.get(base)),
        };
        if let Some(ty) = common {
            return self.shape(ty, depth + 1);
        }
        if matches!(namespace, None | Some("__cedar")) {
            match base {
                "String" => return Ok(Shape::String),
                "Long" => return Ok(Shape::Long),
                "Bool" | "Boolean" => return Ok(Shape::Bool),
                _ => {}
            }
            if let Some(shape) = extension(base) {
                return Ok(shape);
            }
        }
        let qualified = match namespace {
            Some(_) => name.to_owned(),
            None => format!("{NAMESPACE}::{base}"),
        };
        Ok(Shape::Entity(qualified))
    }
}

/// The extension type named `name`, by its constructor.
fn extension(name: &str) -> Option<Shape> {
    match name {
        "decimal" => Some(Shape::Extension("decimal")),
        "ipaddr" => Some(Shape::Extension("ip")),
        "datetime" => Some(Shape::Extension("datetime")),
        "duration" => Some(Shape::Extension("duration")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_schema_declares_every_point() {
        let schema = CedarSchema::load(None).expect("the published schema loads");
        assert_eq!(
            schema.contexts.keys().copied().collect::<Vec<_>>(),
            InterceptionPoint::ALL.to_vec()
        );
        let Some(Shape::Record(pre)) = schema.contexts.get(&InterceptionPoint::PreToolCall) else {
            panic!("a record");
        };
        let Some((Shape::Record(call), true)) = pre.get("tool_call") else {
            panic!("tool_call: {pre:?}");
        };
        assert_eq!(call.get("name"), Some(&(Shape::String, true)));
        assert_eq!(
            call.get("args"),
            Some(&(Shape::Record(BTreeMap::new()), true))
        );
        let Some((Shape::Record(budgets), false)) = pre.get("budgets") else {
            panic!("budgets");
        };
        assert_eq!(
            budgets.get("cost_usd"),
            Some(&(Shape::Extension("decimal"), false))
        );
    }

    #[test]
    fn an_action_that_is_not_a_point_is_refused() {
        let text = "namespace Hookwire { entity Agent; action delete appliesTo { principal: Agent, resource: Agent }; }";
        let err = CedarSchema::load(Some((Path::new("s.cedarschema"), text, "s".into())))
            .expect_err("refused");
        assert!(
            err.to_string().contains("not an interception point"),
            "{err}"
        );
    }
}
