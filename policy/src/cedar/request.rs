//! One agent context as a Cedar request: principal, action, resource, the
//! entities they need, and the context, bounded.
//!
//! - principal: `Hookwire::Agent::"<agent.id>"`, a member of
//!   `Hookwire::Tenant::"<tenant.id>"` when the context names a tenant;
//! - action: `Hookwire::Action::"<point>"`;
//! - resource: `Hookwire::Tool::"<tool_call.name>"` at the tool points,
//!   `Hookwire::Model::"<model.id>"` at the model points,
//!   `Hookwire::Session::"<session.id>"` elsewhere;
//! - context: the agent context converted along the
//!   schema's context type for the point. Members the type does not declare
//!   are left out; a declared member whose value has another type, a
//!   missing required member or a context over [`MAX_VALUES`] values or
//!   [`MAX_STRING_BYTES`] bytes of strings fails the decision (closed).

use std::collections::{BTreeMap, HashSet};

use cedar_policy::{Context, Entities, Entity, EntityId, EntityTypeName, EntityUid, Request};
use hookwire::{AgentContext, InterceptionPoint};
use serde_json::{Map, Value, json};

use super::schema::{CedarSchema, NAMESPACE, Shape};
use crate::error::Error;

/// Most values (strings, numbers, booleans, records, sets) one decision
/// converts into a Cedar context.
pub(crate) const MAX_VALUES: usize = 4096;

/// Most bytes of strings (values and entity ids) one decision converts.
pub(crate) const MAX_STRING_BYTES: usize = 256 * 1024;

/// Fractional digits of a Cedar `decimal`: longer fractions are rounded.
const DECIMAL_DIGITS: i32 = 4;

/// A request ready for the authorizer.
pub(crate) struct Built {
    /// The request, validated against the schema.
    pub(crate) request: Request,
    /// Principal, tenant and resource entities.
    pub(crate) entities: Entities,
}

/// What a conversion may still use.
struct Budget {
    values: usize,
    bytes: usize,
}

impl Budget {
    fn value(&mut self) -> Result<(), Error> {
        self.values += 1;
        if self.values > MAX_VALUES {
            return Err(Error::Evaluation(format!(
                "the Cedar context has more than {MAX_VALUES} values"
            )));
        }
        Ok(())
    }

    fn string(&mut self, s: &str) -> Result<(), Error> {
        self.value()?;
        self.bytes += s.len();
        if self.bytes > MAX_STRING_BYTES {
            return Err(Error::Evaluation(format!(
                "the Cedar context has more than {MAX_STRING_BYTES} bytes of strings"
            )));
        }
        Ok(())
    }
}

/// The Cedar request for `ctx` under `schema`, or `Ok(None)` when the
/// schema does not declare the point (no Cedar policy can apply there).
pub(crate) fn build(ctx: &AgentContext, schema: &CedarSchema) -> Result<Option<Built>, Error> {
    let point = ctx.point();
    let Some(shape) = schema.contexts.get(&point) else {
        return Ok(None);
    };
    let mut budget = Budget {
        values: 0,
        bytes: 0,
    };
    let agent_id = string_at(ctx, &["agent", "id"]).ok_or_else(|| missing("agent.id"))?;
    let principal = uid("Agent", agent_id, &mut budget)?;
    let mut entities = Vec::with_capacity(3);
    let mut parents = HashSet::new();
    if let Some(tenant) = string_at(ctx, &["tenant", "id"]).filter(|t| !t.is_empty()) {
        let tenant = uid("Tenant", tenant, &mut budget)?;
        entities.push(Entity::new_no_attrs(tenant.clone(), HashSet::new()));
        parents.insert(tenant);
    }
    entities.push(Entity::new_no_attrs(principal.clone(), parents));
    let resource = match point {
        InterceptionPoint::PreToolCall | InterceptionPoint::PostToolCall => {
            let name =
                string_at(ctx, &["tool_call", "name"]).ok_or_else(|| missing("tool_call.name"))?;
            uid("Tool", name, &mut budget)?
        }
        InterceptionPoint::PreModelCall | InterceptionPoint::PostModelCall => {
            let id = string_at(ctx, &["model", "id"]).ok_or_else(|| missing("model.id"))?;
            uid("Model", id, &mut budget)?
        }
        _ => uid("Session", ctx.session_id(), &mut budget)?,
    };
    entities.push(Entity::new_no_attrs(resource.clone(), HashSet::new()));
    let action = uid("Action", point.as_str(), &mut budget)?;

    let Shape::Record(attributes) = shape else {
        return Err(Error::Evaluation(format!(
            "the schema's context type for {point} is not a record"
        )));
    };
    let context = record(ctx.members(), attributes, "context", &mut budget)?;
    // The conversion above already typed every value along the schema (its
    // extension values and entity references are explicit), so the context
    // parses without the schema; `Request::new` checks it against the
    // schema once. Cedar's error may quote a value (an extension literal
    // that does not parse): only the point is named.
    let context = Context::from_json_value(context, None)
        .map_err(|_| {
            Error::Evaluation(format!(
                "the Cedar context for {point} does not fit the schema's context type (an extension value that does not parse; values not shown)"
            ))
        })?;
    let request = Request::new(principal, action, resource, context, Some(&schema.schema))
        .map_err(|e| Error::Evaluation(format!("the Cedar request for {point}: {e}")))?;
    // Attribute-free entities of the schema's own types: nothing for the
    // schema to check (the request's types are checked above), and no
    // copy of the schema's action entities per decision.
    let entities = Entities::from_entities(entities, None)
        .map_err(|e| Error::Evaluation(format!("the Cedar entities for {point}: {e}")))?;
    Ok(Some(Built { request, entities }))
}

fn missing(member: &str) -> Error {
    Error::Evaluation(format!(
        "the context has no string {member} to build the Cedar request from"
    ))
}

fn string_at<'a>(ctx: &'a AgentContext, path: &[&str]) -> Option<&'a str> {
    let (first, rest) = path.split_first()?;
    rest.iter()
        .try_fold(ctx.get(first)?, |v, k| v.get(*k))?
        .as_str()
}

/// `Hookwire::<kind>::"<id>"`.
fn uid(kind: &str, id: &str, budget: &mut Budget) -> Result<EntityUid, Error> {
    budget.string(id)?;
    let name: EntityTypeName = format!("{NAMESPACE}::{kind}")
        .parse()
        .map_err(|e| Error::Evaluation(format!("entity type {kind}: {e}")))?;
    Ok(EntityUid::from_type_name_and_id(name, EntityId::new(id)))
}

/// `value` along `shape`, in Cedar's JSON value format; `at` names the
/// member in errors (never its value).
fn convert(value: &Value, shape: &Shape, at: &str, budget: &mut Budget) -> Result<Value, Error> {
    let mismatch = |expected: &str| {
        Error::Evaluation(format!(
            "{at} is not {expected}, as the Cedar schema declares it"
        ))
    };
    match shape {
        Shape::String => {
            let s = value.as_str().ok_or_else(|| mismatch("a string"))?;
            budget.string(s)?;
            Ok(Value::String(s.to_owned()))
        }
        Shape::Bool => {
            budget.value()?;
            value
                .as_bool()
                .map(Value::Bool)
                .ok_or_else(|| mismatch("a boolean"))
        }
        Shape::Long => {
            budget.value()?;
            let n = value.as_i64().or_else(|| {
                value
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                    .map(|f| f as i64)
            });
            n.map(Value::from)
                .ok_or_else(|| mismatch("an integer (Long)"))
        }
        Shape::Extension(function) => {
            let arg = if *function == "decimal" {
                budget.value()?;
                decimal(value).ok_or_else(|| mismatch("a number within decimal's range"))?
            } else {
                let s = value.as_str().ok_or_else(|| mismatch("a string"))?;
                budget.string(s)?;
                s.to_owned()
            };
            Ok(json!({"__extn": {"fn": function, "arg": arg}}))
        }
        Shape::Entity(kind) => {
            let id = value
                .as_str()
                .ok_or_else(|| mismatch("a string (an entity id)"))?;
            budget.string(id)?;
            Ok(json!({"__entity": {"type": kind, "id": id}}))
        }
        Shape::Set(element) => {
            budget.value()?;
            let items = value.as_array().ok_or_else(|| mismatch("an array (Set)"))?;
            let mut out = Vec::with_capacity(items.len().min(MAX_VALUES));
            for (i, item) in items.iter().enumerate() {
                out.push(convert(item, element, &format!("{at}[{i}]"), budget)?);
            }
            Ok(Value::Array(out))
        }
        Shape::Record(attributes) => {
            let Value::Object(members) = value else {
                return Err(mismatch("an object (record)"));
            };
            record(members, attributes, at, budget)
        }
    }
}

/// A record: the declared attributes that are present (`null` counts as
/// absent), converted.
fn record(
    members: &Map<String, Value>,
    attributes: &BTreeMap<String, (Shape, bool)>,
    at: &str,
    budget: &mut Budget,
) -> Result<Value, Error> {
    budget.value()?;
    let mut out = Map::new();
    for (name, (shape, required)) in attributes {
        match members.get(name) {
            None | Some(Value::Null) if *required => {
                return Err(Error::Evaluation(format!(
                    "{at}.{name} is missing; the Cedar schema requires it"
                )));
            }
            None | Some(Value::Null) => {}
            Some(v) => {
                out.insert(
                    name.clone(),
                    convert(v, shape, &format!("{at}.{name}"), budget)?,
                );
            }
        }
    }
    Ok(Value::Object(out))
}

/// A JSON number as a `decimal` literal (four fractional digits at most,
/// rounded), within decimal's range.
fn decimal(value: &Value) -> Option<String> {
    if let Some(n) = value.as_i64() {
        return (n.unsigned_abs() < 922_337_203_685_477).then(|| format!("{n}.0"));
    }
    let f = value.as_f64()?;
    let scale = 10f64.powi(DECIMAL_DIGITS);
    let scaled = (f * scale).round();
    if !scaled.is_finite() || scaled.abs() >= 9.2e18 {
        return None;
    }
    let scaled = scaled as i64;
    let sign = if scaled < 0 { "-" } else { "" };
    let abs = scaled.unsigned_abs();
    let unit = 10u64.pow(DECIMAL_DIGITS as u32);
    Some(format!("{sign}{}.{:04}", abs / unit, abs % unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_become_decimals_with_four_digits() {
        assert_eq!(decimal(&json!(25000)).as_deref(), Some("25000.0"));
        assert_eq!(decimal(&json!(9999.5)).as_deref(), Some("9999.5000"));
        assert_eq!(decimal(&json!(-0.12345)).as_deref(), Some("-0.1235"));
        assert_eq!(decimal(&json!(1e300)), None);
        assert_eq!(decimal(&json!("12")), None);
    }

    #[test]
    fn a_mismatched_member_is_an_error_naming_it_not_its_value() {
        let mut budget = Budget {
            values: 0,
            bytes: 0,
        };
        let err = convert(
            &json!("secret-value"),
            &Shape::Long,
            "context.tool_call.args.amount",
            &mut budget,
        )
        .expect_err("a string is not a Long");
        let text = err.to_string();
        assert!(text.contains("context.tool_call.args.amount"), "{text}");
        assert!(!text.contains("secret-value"), "{text}");
    }

    #[test]
    fn the_budget_bounds_sets_and_strings() {
        let mut budget = Budget {
            values: 0,
            bytes: 0,
        };
        let many = Value::Array(vec![json!("x"); MAX_VALUES + 1]);
        let shape = Shape::Set(Box::new(Shape::String));
        assert!(convert(&many, &shape, "c", &mut budget).is_err());
        let mut budget = Budget {
            values: 0,
            bytes: 0,
        };
        let long = json!("y".repeat(MAX_STRING_BYTES + 1));
        assert!(convert(&long, &Shape::String, "c", &mut budget).is_err());
    }
}
